//! The provider layer: one streaming trait over four wire protocols (OpenAI Chat Completions and
//! Responses, Anthropic Messages, Gemini). Each protocol has a
//! stateful, I/O-free mapper from wire chunks to [`CompletionEvent`]s, so that finish reasons,
//! tool-call deltas and usage are read exactly and can be tested chunk by chunk.

pub mod anthropic;
pub mod check;
pub mod error;
pub mod gemini;
pub mod http;
pub mod openai;
pub mod openai_responses;
pub mod retry;
pub mod settings;
pub mod sse;
pub mod types;

pub use check::{check_connection, CheckKind, ConnectionReport, ModelCheck, ToolSupport};
pub use error::{ContextOverflow, ProviderError, ProviderErrorKind};
pub use http::{map_stream, ApiKey, HttpProvider, ProviderConfig};
pub use retry::{stream_with_retry, stream_with_retry_woken, OnRetry, RetryPolicy, RetryWait};
pub use types::*;

use std::pin::Pin;

use futures_util::Stream;

/// The common event stream. The first item may already be an error (connection refused, 401);
/// errors after output belong to the agent loop, which treats a lost stream as a truncation.
pub type EventStream = Pin<Box<dyn Stream<Item = Result<CompletionEvent, ProviderError>> + Send>>;

/// Whether a base URL points at this machine (`localhost`, `127.x.x.x`, `::1`): a local server,
/// which needs no key.
pub fn is_loopback_url(url: &str) -> bool {
    match url::Url::parse(url).ok().and_then(|u| u.host().map(|h| h.to_owned())) {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// Whether a base URL points at this machine or the local network, where servers (llama.cpp,
/// LM Studio, Ollama) answer in milliseconds and say what they run.
pub fn is_local_url(url: &str) -> bool {
    if is_loopback_url(url) {
        return true;
    }
    let host = url::Url::parse(url).ok().and_then(|u| u.host_str().map(String::from)).unwrap_or_default();
    match host.parse::<std::net::Ipv4Addr>() {
        Ok(ip) => ip.is_private() || ip.is_link_local(),
        Err(_) => host.ends_with(".local") || host.ends_with(".lan"),
    }
}

/// One method: stream a completion. Dropping the stream cancels the request.
#[async_trait::async_trait]
pub trait Provider: Send + Sync {
    fn stream(&self, request: &CompletionRequest) -> EventStream;
    /// The model's context window as the server reports it, where it does (llama.cpp's
    /// `/props`, a `context_length` in the model list); `None` when it does not say.
    async fn context_window(&self, _model: &str) -> Option<u64> {
        None
    }
}

/// The provider of settings that name none that works (no base URL, no model, a value that does
/// not validate): an engine can still record a person's decisions and answers, and a run that
/// would ask a model fails at once with the problem and the way to fix it, instead of the
/// decision being refused.
pub struct Unconfigured {
    pub problem: String,
}

#[async_trait::async_trait]
impl Provider for Unconfigured {
    fn stream(&self, _request: &CompletionRequest) -> EventStream {
        let error = ProviderError::new(ProviderErrorKind::BadRequest, format!("no provider to ask: {}; then resume the task", self.problem));
        Box::pin(futures_util::stream::once(async move { Err(error) }))
    }
}

/// A wire mapper turns one protocol's stream payloads into common events. `finish` runs at the
/// end of the byte stream and says whether the stream ended properly.
pub trait WireMapper: Send {
    fn on_event(&mut self, event: &sse::SseEvent) -> Result<Vec<CompletionEvent>, ProviderError>;
    fn finish(&mut self) -> Result<Vec<CompletionEvent>, ProviderError>;
    /// The protocol's last event was read: nothing follows it (`[DONE]`, `message_stop`,
    /// `response.completed`). A protocol without one ends with its connection.
    fn ended(&self) -> bool {
        false
    }
}
