//! A fake LLM provider that speaks the real wire protocols: OpenAI Chat Completions, OpenAI
//! Responses, Anthropic Messages (and its `count_tokens`) and Gemini `streamGenerateContent?alt=sse`
//! (and the unary `generateContent` Gemini CLI's classifier uses). Replies come from a [`Scenario`] and are
//! chosen by the kind of request (agent step, evaluator, compaction) and what it says. Faults can
//! be placed anywhere in a reply. Every request is recorded.
//!
//! Request kinds are recognised by shape: structured output (OpenAI `response_format`, an
//! Anthropic forced tool, Gemini `responseJsonSchema`, or a system prompt asking for one JSON
//! object) is the evaluator; a request with no tools is a compaction; anything else is an agent
//! step.
//!
//! Base URLs: OpenAI and Anthropic at `{url}/v1`, Gemini at `{url}/v1beta`.

pub mod render;
pub mod request;
pub mod scenario;
pub mod server;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

pub use request::SeenRequest;
pub use scenario::*;

/// A running fake server, in this process. Dropping it stops the server.
pub struct FakeServer {
    addr: SocketAddr,
    state: server::AppState,
    _shutdown: tokio::sync::oneshot::Sender<()>,
}

impl FakeServer {
    /// Starts on 127.0.0.1 on a free port. Needs a Tokio runtime.
    pub async fn start(scenario: Scenario) -> std::io::Result<FakeServer> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        Self::serve(listener, scenario)
    }

    pub fn serve(listener: tokio::net::TcpListener, scenario: Scenario) -> std::io::Result<FakeServer> {
        let addr = listener.local_addr()?;
        let state = Arc::new(Mutex::new(server::Shared::new(scenario)));
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let app = server::router(state.clone());
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = rx.await;
                })
                .await;
        });
        Ok(FakeServer { addr, state, _shutdown: tx })
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The base URL a client of `protocol` is configured with.
    pub fn base_url(&self, protocol: Protocol) -> String {
        match protocol {
            Protocol::Openai | Protocol::Anthropic | Protocol::Responses => format!("{}/v1", self.url()),
            Protocol::Gemini => format!("{}/v1beta", self.url()),
        }
    }

    pub fn requests(&self) -> Vec<SeenRequest> {
        self.state.lock().unwrap().requests.clone()
    }

    /// Forgets the recorded requests (a long test's memory is then its own).
    pub fn clear_requests(&self) {
        self.state.lock().unwrap().clear_requests();
    }

    pub fn set_scenario(&self, scenario: Scenario) {
        *self.state.lock().unwrap() = server::Shared::new(scenario);
    }
}

/// Parses a scenario from JSON text, with a message that says where it is wrong.
pub fn parse_scenario(text: &str) -> Result<Scenario, String> {
    serde_json::from_str(text).map_err(|e| format!("invalid scenario: {e}"))
}
