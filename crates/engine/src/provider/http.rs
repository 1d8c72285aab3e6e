//! The HTTP side of every protocol: URL, headers, status handling, SSE, and the mapper.

use std::fmt;
use std::time::Duration;

use futures_util::StreamExt;
use serde_json::Value;

use super::error::{ProviderError, ProviderErrorKind};
use super::settings::ProviderKind;
use super::sse::sse_events;
use super::types::CompletionRequest;
use super::{anthropic, gemini, openai, openai_responses, EventStream, Provider, WireMapper};

/// An API key. Its `Debug` never shows it, so it cannot leak into logs by accident.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    pub fn new(key: impl Into<String>) -> Option<ApiKey> {
        let k = key.into().trim().to_string();
        (!k.is_empty()).then_some(ApiKey(k))
    }
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(***)")
    }
}

#[derive(Debug, Clone)]
pub struct ProviderConfig {
    pub kind: ProviderKind,
    /// Including the version segment: `https://api.openai.com/v1`, `https://api.anthropic.com/v1`,
    /// `https://generativelanguage.googleapis.com/v1beta`.
    pub base_url: String,
    pub api_key: Option<ApiKey>,
    /// No byte for this long means the stream stalled.
    pub idle_timeout: Duration,
    pub connect_timeout: Duration,
}

impl ProviderConfig {
    pub fn new(kind: ProviderKind, base_url: impl Into<String>, api_key: Option<ApiKey>) -> Self {
        ProviderConfig { kind, base_url: base_url.into(), api_key, idle_timeout: Duration::from_secs(90), connect_timeout: Duration::from_secs(15) }
    }
}

pub struct HttpProvider {
    config: ProviderConfig,
    client: reqwest::Client,
}

impl HttpProvider {
    /// The base URL as configured, version segment included.
    pub fn base_url(&self) -> &str {
        &self.config.base_url
    }

    pub fn kind(&self) -> ProviderKind {
        self.config.kind
    }

    pub fn new(config: ProviderConfig) -> Result<Self, ProviderError> {
        let client = reqwest::Client::builder()
            .connect_timeout(config.connect_timeout)
            .build()
            .map_err(|e| ProviderError::new(ProviderErrorKind::Network, format!("Could not set up the HTTP client: {e}")))?;
        Ok(HttpProvider { config, client })
    }

    /// Lists the models the provider offers: the "Test connection" check. A wrong key, a wrong
    /// URL and an unreachable server each come back as the provider error that says so.
    pub async fn list_models(&self) -> Result<Vec<String>, ProviderError> {
        if let Some(e) = self.unusable_key() {
            return Err(e);
        }
        let base = self.config.base_url.trim().trim_end_matches('/');
        let r = self.authorize(self.client.get(format!("{base}/models")));
        let resp = tokio::time::timeout(self.config.connect_timeout, r.send())
            .await
            .map_err(|_| ProviderError::new(ProviderErrorKind::Network, format!("The provider at {base} did not answer in time.")))?
            .map_err(|e| network_error(base, &e))?;
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let late = || ProviderError::new(ProviderErrorKind::Network, format!("The provider at {base} did not answer in time."));
        let body = if (200..300).contains(&status) {
            // A public model list runs to a few megabytes (OpenRouter's).
            body_within(resp, MODEL_LIST_BYTES, self.config.connect_timeout.max(LIST_WAIT)).await.ok_or_else(late)?
        } else {
            body_within(resp, ERROR_PAGE_BYTES, self.config.connect_timeout).await.unwrap_or_default()
        };
        if !(200..300).contains(&status) {
            return Err(missing_v1(ProviderError::from_status(status, &headers, &body, self.config.api_key.is_some()), self.config.kind, base));
        }
        let v: Value = serde_json::from_str(&body)
            .map_err(|e| ProviderError::malformed(format!("The model list at {base}/models is not JSON ({e}); is this the right base URL?")))?;
        let list = v.get("data").or_else(|| v.get("models")).and_then(Value::as_array).cloned().unwrap_or_default();
        Ok(list
            .iter()
            .filter_map(|m| m.get("id").or_else(|| m.get("name")).and_then(Value::as_str))
            .map(|s| s.trim_start_matches("models/").to_string())
            .collect())
    }

    fn endpoint(&self, req: &CompletionRequest) -> String {
        let base = self.config.base_url.trim().trim_end_matches('/');
        match self.config.kind {
            ProviderKind::Openai => format!("{base}/chat/completions"),
            ProviderKind::OpenaiResponses => format!("{base}/responses"),
            ProviderKind::Anthropic => format!("{base}/messages"),
            ProviderKind::Gemini => format!("{base}/models/{}:streamGenerateContent?alt=sse", req.model),
        }
    }

    fn body(&self, req: &CompletionRequest) -> Value {
        match self.config.kind {
            ProviderKind::Openai => openai::request_body(req),
            ProviderKind::OpenaiResponses => openai_responses::request_body(req),
            ProviderKind::Anthropic => anthropic::request_body(req),
            ProviderKind::Gemini => gemini::request_body(req),
        }
    }

    fn mapper(&self, req: &CompletionRequest) -> Box<dyn WireMapper> {
        match self.config.kind {
            ProviderKind::Openai => Box::new(openai::OpenAiMapper::new()),
            ProviderKind::OpenaiResponses => Box::new(openai_responses::ResponsesMapper::new()),
            ProviderKind::Anthropic => {
                Box::new(anthropic::AnthropicMapper::new(req.structured.as_ref().filter(|s| s.mode == super::StructuredMode::Native).map(|s| s.name.clone())))
            }
            ProviderKind::Gemini => Box::new(gemini::GeminiMapper::new()),
        }
    }

    /// A key no request header can carry (a line break pasted with it): said as what it is, at
    /// once. Sent, it failed as a network fault, retried five times with advice about the server.
    fn unusable_key(&self) -> Option<ProviderError> {
        let key = self.config.api_key.as_ref()?;
        key.expose().chars().any(|c| c.is_control() || !(c.is_ascii_graphic() || c == ' ')).then(|| {
            ProviderError::new(
                ProviderErrorKind::Auth,
                "The API key holds a line break or another character a request header cannot carry. Copy the key again, on its own.",
            )
        })
    }

    /// The key in the protocol's own header, and Anthropic's version header.
    fn authorize(&self, mut r: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        if let Some(key) = &self.config.api_key {
            r = match self.config.kind {
                ProviderKind::Openai | ProviderKind::OpenaiResponses => r.bearer_auth(key.expose()),
                ProviderKind::Anthropic => r.header("x-api-key", key.expose()),
                ProviderKind::Gemini => r.header("x-goog-api-key", key.expose()),
            };
        }
        if self.config.kind == ProviderKind::Anthropic {
            r = r.header("anthropic-version", "2023-06-01");
        }
        r
    }

    fn request(&self, req: &CompletionRequest) -> reqwest::RequestBuilder {
        let r = self.authorize(self.client.post(self.endpoint(req)).header("content-type", "application/json").header("accept", "text/event-stream"));
        r.body(self.body(req).to_string())
    }
}

impl HttpProvider {
    async fn get_json(&self, url: String) -> Option<Value> {
        let resp = tokio::time::timeout(self.config.connect_timeout, self.authorize(self.client.get(url)).send()).await.ok()?.ok()?;
        if !resp.status().is_success() {
            return None;
        }
        // Within the connection's own wait: a run's start waits on it.
        serde_json::from_str(&body_within(resp, MODEL_LIST_BYTES, self.config.connect_timeout).await?).ok()
    }
}

/// What of an error page is read: enough for any message a provider sends, not a page that never
/// ends (memory grew by a hundred megabytes a few seconds while it streamed).
const ERROR_PAGE_BYTES: usize = 64 * 1024;
/// A model list or a server's settings, the largest answers read whole.
const MODEL_LIST_BYTES: usize = 16 * 1024 * 1024;
/// How long a model list may take to arrive once its headers did.
const LIST_WAIT: Duration = Duration::from_secs(15);

/// A response's body as text: at most `cap` bytes (more is cut), and `None` when it does not
/// arrive within `wait`. The headers' arrival says nothing of the body: a server may send them
/// and then nothing, which held a run before its first step for good.
async fn body_within(mut resp: reqwest::Response, cap: usize, wait: Duration) -> Option<String> {
    let read = async {
        let mut body = Vec::new();
        while let Ok(Some(chunk)) = resp.chunk().await {
            body.extend_from_slice(&chunk[..chunk.len().min(cap - body.len())]);
            if body.len() >= cap {
                break;
            }
        }
        String::from_utf8_lossy(&body).into_owned()
    };
    tokio::time::timeout(wait, read).await.ok()
}

#[async_trait::async_trait]
impl Provider for HttpProvider {
    async fn context_window(&self, model: &str) -> Option<u64> {
        if self.config.kind != ProviderKind::Openai {
            return None;
        }
        let base = self.config.base_url.trim().trim_end_matches('/');
        // llama.cpp serves its settings beside the API: `<server>/props`.
        let server = base.strip_suffix("/v1").unwrap_or(base);
        if let Some(props) = self.get_json(format!("{server}/props")).await {
            let n = props.pointer("/default_generation_settings/n_ctx").or_else(|| props.get("n_ctx")).and_then(Value::as_u64);
            if let Some(n) = n.filter(|n| *n > 0) {
                return Some(n);
            }
        }
        // OpenRouter, LM Studio and others put it in the model list.
        let list = self.get_json(format!("{base}/models")).await?;
        let entry = list.get("data")?.as_array()?.iter().find(|m| m.get("id").and_then(Value::as_str) == Some(model))?.clone();
        ["context_length", "max_context_length", "context_window"].iter().find_map(|k| entry.get(*k).and_then(Value::as_u64)).filter(|n| *n > 0)
    }

    fn stream(&self, req: &CompletionRequest) -> EventStream {
        let request = self.request(req);
        let mapper = self.mapper(req);
        let idle = self.config.idle_timeout;
        let base = self.config.base_url.clone();
        let kind = self.config.kind;
        let key_sent = self.config.api_key.is_some();
        let unusable_key = self.unusable_key();
        Box::pin(async_stream::stream! {
            if let Some(e) = unusable_key {
                yield Err(e);
                return;
            }
            let response = match tokio::time::timeout(idle, request.send()).await {
                Err(_) => {
                    let within = if idle.as_secs() > 0 { format!("{} s", idle.as_secs()) } else { format!("{} ms", idle.as_millis()) };
                    let mut error = ProviderError::new(
                        ProviderErrorKind::Stall,
                        format!("The provider at {base} took the connection but sent nothing within {within}. Check that the server is not stuck, or busy with another request."),
                    );
                    // One retry covers a server that was still loading its model; five retries of
                    // the same wait kept a run silent for ten minutes.
                    error.retries_worth = Some(1);
                    yield Err(error);
                    return;
                }
                Ok(Err(e)) => {
                    yield Err(network_error(&base, &e));
                    return;
                }
                Ok(Ok(r)) => r,
            };
            let status = response.status().as_u16();
            if !(200..300).contains(&status) {
                let headers = response.headers().clone();
                let body = body_within(response, ERROR_PAGE_BYTES, idle).await.unwrap_or_default();
                yield Err(missing_v1(ProviderError::from_status(status, &headers, &body, key_sent), kind, &base));
                return;
            }
            let mut events = map_stream(response.bytes_stream(), idle, mapper);
            while let Some(item) = events.next().await {
                yield item;
            }
        })
    }
}

const BYTE_ORDER_MARK: [u8; 3] = [0xEF, 0xBB, 0xBF];

/// Drops the byte-order marks a stream begins with, held back while the bytes so far could still
/// be one (an empty chunk passes through the parser as nothing).
#[derive(Default)]
struct LeadingMarks {
    held: Vec<u8>,
    past: bool,
}

impl LeadingMarks {
    fn strip(&mut self, b: bytes::Bytes) -> bytes::Bytes {
        if self.past {
            return b;
        }
        self.held.extend_from_slice(&b);
        let mut start = 0;
        while self.held[start..].starts_with(&BYTE_ORDER_MARK) {
            start += BYTE_ORDER_MARK.len();
        }
        let rest = &self.held[start..];
        if rest.len() < BYTE_ORDER_MARK.len() && BYTE_ORDER_MARK.starts_with(rest) {
            // Still (part of) a mark, or nothing yet.
            self.held.drain(..start);
            return bytes::Bytes::new();
        }
        self.past = true;
        bytes::Bytes::from(std::mem::take(&mut self.held).split_off(start))
    }
}

/// How much of an answer's start is kept for [`super::error::not_a_stream`].
const HEAD_KEPT: usize = 2048;

/// Bytes of one response in, common events out: SSE parsing, the protocol's mapper, and the
/// end-of-stream check. The first error ends the stream.
pub fn map_stream<S, E>(bytes: S, idle: Duration, mut mapper: Box<dyn WireMapper>) -> EventStream
where
    S: futures_util::Stream<Item = Result<bytes::Bytes, E>> + Send + Unpin + 'static,
    E: std::fmt::Display + Send + 'static,
{
    // The first bytes, kept to say what came instead of events when none could be read (a web
    // page or one JSON document, from a wrong base URL): until then nothing has been shown.
    let head = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    // Byte-order marks before the first event: eventsource-stream slices inside one (a panic),
    // so they go before parsing, however the network cut them.
    let mut marks = LeadingMarks::default();
    let bytes = bytes.map(move |item| item.map(|b: bytes::Bytes| marks.strip(b)));
    let bytes = {
        let head = head.clone();
        bytes.inspect(move |item| {
            if let Ok(b) = item {
                let mut h = head.lock().unwrap_or_else(|e| e.into_inner());
                if h.len() < HEAD_KEPT {
                    let room = HEAD_KEPT - h.len();
                    h.extend_from_slice(&b[..b.len().min(room)]);
                }
            }
        })
    };
    Box::pin(async_stream::stream! {
        let mut events = Box::pin(sse_events(bytes, idle));
        let mut read_any = false;
        while let Some(item) = events.next().await {
            read_any |= item.is_ok();
            match item.and_then(|ev| mapper.on_event(&ev)) {
                Ok(out) => for e in out { yield Ok(e) },
                Err(e) => { yield Err(e); return; }
            }
            // The protocol's last event: the answer is whole, whether or not the server closes
            // the connection (one that kept it open had a finished answer wait out the stall
            // limit, then taken for a cut one).
            if mapper.ended() {
                break;
            }
        }
        if !read_any {
            let head = head.lock().unwrap_or_else(|e| e.into_inner()).clone();
            // Only keep-alive comments, then the end: a stream that was cut, as below.
            let sse = [":", "data:", "event:", "id:", "retry:"].iter().any(|f| String::from_utf8_lossy(&head).trim_start().starts_with(f));
            if !sse {
                yield Err(super::error::not_a_stream(&head));
                return;
            }
        }
        match mapper.finish() {
            Ok(out) => for e in out { yield Ok(e) },
            Err(e) => yield Err(e),
        }
    })
}

/// The advice `missing_v1` adds, which the connection check finds so as not to say it twice.
pub(super) const NO_PATH: &str = "The base URL has no path; OpenAI-compatible servers serve under /v1";

/// A 404 from an OpenAI-compatible server given without any path (`http://localhost:8080`, as
/// servers print their address): they serve the API under `/v1`, which is then what to try.
fn missing_v1(mut e: ProviderError, kind: ProviderKind, base: &str) -> ProviderError {
    let base = base.trim().trim_end_matches('/');
    let bare = base.split_once("://").is_some_and(|(_, rest)| !rest.contains('/'));
    if e.kind == ProviderErrorKind::NotFound && kind == ProviderKind::Openai && bare {
        e.message = format!("{} {NO_PATH}: try {base}/v1.", e.message);
    }
    e
}

fn network_error(base: &str, e: &reqwest::Error) -> ProviderError {
    let detail = network_cause(e);
    // A name the resolver says does not exist is most often a typo in the URL: one retry, where
    // five kept the person waiting half a minute for the same answer. A lookup that could not be
    // made (no network yet, "temporary failure") keeps every retry.
    if e.is_connect() && ["Name or service not known", "nodename nor servname", "No such host is known"].iter().any(|w| detail.contains(w)) {
        let host = reqwest::Url::parse(base.trim()).ok().and_then(|u| u.host_str().map(str::to_string)).unwrap_or_else(|| base.to_string());
        let mut error = ProviderError::new(
            ProviderErrorKind::Network,
            format!("Could not connect to the provider at {base}: the host {host} was not found ({detail}). Check the base URL."),
        );
        error.refused = true;
        error.retries_worth = Some(1);
        return error;
    }
    let what = if e.is_connect() { "Could not connect to the provider" } else { "The request to the provider failed" };
    let mut error = ProviderError::new(ProviderErrorKind::Network, format!("{what} at {base} ({detail}). Check the base URL and that the server is running."));
    error.refused = e.is_connect();
    // Nothing listens on that port of this machine: a local server not started, or a wrong
    // port. One retry covers a server that was restarting; five would keep the person waiting
    // half a minute for an answer that is already known.
    // (`localhost` on a machine without IPv6 can end at `::1` with "address not available".)
    let nothing_there = |k| matches!(k, std::io::ErrorKind::ConnectionRefused | std::io::ErrorKind::AddrNotAvailable);
    if io_error(e).is_some_and(|io| nothing_there(io.kind())) && super::is_loopback_url(base) {
        error.retries_worth = Some(1);
    }
    error
}

/// The system's own error under the HTTP library's layers, if there is one.
fn io_error(e: &reqwest::Error) -> Option<&std::io::Error> {
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            return Some(io);
        }
        source = s.source();
    }
    None
}

/// What went wrong under the HTTP library's layers ("error sending request for url (…): client
/// error (Connect): tcp connect error: Connection refused (os error 111)"), in a person's words:
/// the system's own error at the bottom ("connection refused"), else the innermost message.
fn network_cause(e: &reqwest::Error) -> String {
    if let Some(io) = io_error(e) {
        return match io.kind() {
            std::io::ErrorKind::ConnectionRefused => "connection refused".to_string(),
            std::io::ErrorKind::ConnectionReset => "the connection was reset".to_string(),
            std::io::ErrorKind::ConnectionAborted => "the connection was aborted".to_string(),
            std::io::ErrorKind::TimedOut => "timed out".to_string(),
            std::io::ErrorKind::HostUnreachable | std::io::ErrorKind::NetworkUnreachable => "no route to the server".to_string(),
            // The system's message without its number: "(os error 111)" says nothing more.
            _ => io.to_string().split(" (os error").next().unwrap_or_default().to_string(),
        };
    }
    let mut innermost: &dyn std::error::Error = e;
    while let Some(s) = innermost.source() {
        innermost = s;
    }
    innermost.to_string()
}
