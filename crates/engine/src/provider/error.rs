//! Typed provider errors. Each kind says whether a retry can help and carries what the person
//! must be told.

use std::time::{Duration, SystemTime};

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProviderErrorKind {
    /// 401/403: the key is wrong or missing.
    Auth,
    /// 429.
    RateLimit,
    /// 529, or an `overloaded_error` event.
    Overloaded,
    /// 408, 500, 502, 503, 504.
    Server,
    /// The prompt does not fit the model's window.
    ContextTooLong,
    /// 400 and other 4xx: something in the request must change.
    BadRequest,
    /// 404 on the endpoint or model.
    NotFound,
    /// Could not connect, or the connection broke.
    Network,
    /// No bytes arrived for the idle timeout.
    Stall,
    /// The stream ended without a finish reason.
    TruncatedStream,
    /// Bytes that are not the protocol: broken SSE, invalid JSON, an unexpected shape.
    MalformedStream,
    /// An `error` object or event after HTTP 200 that fits no other kind.
    Api,
}

#[derive(Debug, Clone, PartialEq, Serialize, thiserror::Error)]
#[error("{message}")]
pub struct ProviderError {
    pub kind: ProviderErrorKind,
    pub status: Option<u16>,
    pub message: String,
    /// From `retry-after-ms` or `retry-after` (seconds or an HTTP date).
    #[serde(skip)]
    pub retry_after: Option<Duration>,
    /// Refused before any model read the request: an HTTP error status, or no connection. Such
    /// a request cost nothing; one that failed after the server took it may have.
    #[serde(skip)]
    pub refused: bool,
    /// The most retries this error is worth, when fewer than the settings allow: a server on
    /// this machine that refuses the connection is not running, and waiting a minute for it only
    /// delays saying so.
    #[serde(skip)]
    pub retries_worth: Option<u32>,
}

impl ProviderError {
    pub fn new(kind: ProviderErrorKind, message: impl Into<String>) -> Self {
        ProviderError { kind, status: None, message: message.into(), retry_after: None, refused: false, retries_worth: None }
    }

    pub fn malformed(message: impl Into<String>) -> Self {
        Self::new(ProviderErrorKind::MalformedStream, message)
    }

    /// Whether waiting and asking again can help. Only true before any output was shown; the
    /// retry wrapper enforces that part.
    pub fn is_retryable(&self) -> bool {
        use ProviderErrorKind::*;
        matches!(self.kind, RateLimit | Overloaded | Server | Network | Stall)
    }

    /// Classifies an HTTP error response. `body` is the response text, used for the message and
    /// to spot context-length errors that providers report as 400. `key_sent`: whether the
    /// request carried a key, so a 401 says "wrong key" only when there was one.
    pub fn from_status(status: u16, headers: &reqwest::header::HeaderMap, body: &str, key_sent: bool) -> Self {
        use ProviderErrorKind::*;
        // Put inside sentences of ours: its own full stop would make two.
        let detail = error_detail(body).trim_end_matches('.').to_string();
        let lower = detail.to_ascii_lowercase();
        let (kind, message) = match status {
            401 | 403 if key_sent => (Auth, format!("The provider refused the API key ({status}): {detail}. Check the key, or the environment variable it comes from.")),
            // A local server started with a key of its own (llama-server --api-key), and none set here.
            401 | 403 => (
                Auth,
                format!("The provider asks for an API key ({status}: {detail}), and none is set for it. Add the server's key in Settings, or put it in the environment variable the settings name (a terminal can name another with --api-key-env)."),
            ),
            429 => (RateLimit, format!("Rate limited by the provider (429): {detail}")),
            529 => (Overloaded, format!("The provider is overloaded (529): {detail}")),
            408 | 500 | 502 | 503 | 504 => (Server, format!("The provider had a server error ({status}): {detail}")),
            404 => (NotFound, format!("Not found (404): {detail}. Check the base URL and the model name.")),
            // A web server that is not the API (`python -m http.server` answers POST so): the same
            // answer on every try.
            501 => (
                BadRequest,
                format!(
                    "The server does not implement this request (501): {}. Check the base URL: it should be the provider's API, most often ending in /v1.",
                    detail.trim_end_matches('.')
                ),
            ),
            413 => (ContextTooLong, format!("The request is too large for the model (413): {detail}")),
            _ if is_context_message(&lower) => (ContextTooLong, format!("The conversation no longer fits the model's context window: {detail}")),
            400..=499 => (BadRequest, format!("The provider rejected the request ({status}): {detail}")),
            _ => (Server, format!("Unexpected HTTP status {status}: {detail}")),
        };
        ProviderError { kind, status: Some(status), message, retry_after: retry_after(headers, SystemTime::now()), refused: true, retries_worth: None }
    }

    /// Classifies an error object that arrived inside a 200 stream (OpenAI `{"error":…}`,
    /// Anthropic `event: error`, Gemini `{"error":…}`).
    pub fn from_stream_error(error_type: &str, message: &str, code: Option<u16>) -> Self {
        use ProviderErrorKind::*;
        let t = error_type.to_ascii_lowercase();
        let m = message.to_ascii_lowercase();
        let kind = if t.contains("overloaded") || code == Some(529) {
            Overloaded
        } else if t.contains("rate_limit") || t.contains("resource_exhausted") || code == Some(429) {
            RateLimit
        } else if t.contains("authentication") || t.contains("permission") || t.contains("unauthenticated") || matches!(code, Some(401 | 403)) {
            Auth
        } else if is_context_message(&m) {
            ContextTooLong
        } else if t.contains("api_error")
            || t.contains("server_error")
            || t.contains("internal")
            || t.contains("unavailable")
            || matches!(code, Some(500..=504))
        {
            Server
        } else if t.contains("invalid_request") || matches!(code, Some(400)) {
            BadRequest
        } else {
            Api
        };
        let label = if error_type.is_empty() { "error".to_string() } else { error_type.to_string() };
        ProviderError {
            kind,
            status: code,
            message: format!("The provider reported an error mid-stream ({label}): {message}"),
            retry_after: None,
            refused: false,
            retries_worth: None,
        }
    }
}

/// What a context-overflow error says of the server: its context size and the size of the
/// request it refused, in the server's own tokens, where the message gives them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ContextOverflow {
    pub limit: Option<u64>,
    pub requested: Option<u64>,
}

impl ContextOverflow {
    /// Reads the numbers out of the servers' wordings:
    /// - llama.cpp: "request (4217 tokens) exceeds the available context size (4096 tokens)";
    /// - OpenAI and vLLM: "maximum context length is 8192 tokens. However, your messages resulted
    ///   in 9000 tokens" (or "you requested 9000 tokens");
    /// - Anthropic: "prompt is too long: 210000 tokens > 200000 maximum".
    pub fn parse(message: &str) -> ContextOverflow {
        use std::sync::OnceLock;
        static PATTERNS: OnceLock<[(regex::Regex, bool); 5]> = OnceLock::new();
        // (pattern, whether its number is the limit rather than the request)
        let patterns = PATTERNS.get_or_init(|| {
            let r = |p: &str| regex::Regex::new(p).expect("a valid pattern");
            [
                (r(r"(?i)context size \((\d+) tokens?\)"), true),
                (r(r"(?i)(?:maximum context length|maximum model length|context window|context length) (?:is|of) (\d+)"), true),
                (r(r"(?i)(\d+) tokens? > (\d+) maximum"), false),
                (r(r"(?i)request \((\d+) tokens?\)"), false),
                (r(r"(?i)(?:resulted in|you requested|requested) (\d+) tokens?"), false),
            ]
        });
        let mut out = ContextOverflow::default();
        for (re, is_limit) in patterns {
            let Some(c) = re.captures(message) else { continue };
            let n = |i: usize| c.get(i).and_then(|m| m.as_str().parse::<u64>().ok());
            if *is_limit {
                out.limit = out.limit.or(n(1));
            } else {
                out.requested = out.requested.or(n(1));
                if c.len() > 2 {
                    out.limit = out.limit.or(n(2));
                }
            }
        }
        out
    }

    /// What the person is told when the conversation cannot be made to fit: the server's context
    /// in numbers where they are known, and how to give it more.
    pub fn explain(&self, server_message: &str) -> String {
        let fit = match (self.limit, self.requested) {
            (Some(l), Some(r)) => {
                format!("The conversation no longer fits the model server's context of {l} tokens, even after compacting it (the request needed {r}).")
            }
            (Some(l), None) => format!("The conversation no longer fits the model server's context of {l} tokens, even after compacting it."),
            _ => format!("The conversation no longer fits the model's context window, even after compacting it ({server_message})."),
        };
        format!(
            "{fit} Give the server a larger context: for llama.cpp, start llama-server with a larger -c (for example -c 16384; with --parallel N each request gets 1/N of it); for Ollama, raise num_ctx. Or choose a model with a larger window."
        )
    }
}

fn is_context_message(lower: &str) -> bool {
    lower.contains("context length")
        || lower.contains("context_length")
        || lower.contains("context window")
        || lower.contains("maximum context")
        || lower.contains("prompt is too long")
        || lower.contains("too many tokens")
        || lower.contains("exceeds the context")
        // llama.cpp: "request (4151 tokens) exceeds the available context size (4096 tokens)",
        // type `exceed_context_size_error`.
        || lower.contains("context size")
        || lower.contains("exceed_context_size")
        // Ollama and vLLM.
        || lower.contains("input length exceeds")
        || lower.contains("maximum model length")
}

/// Pulls the human part out of an error body: `{"error":{"message":…}}` in all three protocols,
/// or the raw text, shortened.
fn error_detail(body: &str) -> String {
    if let Ok(v) = serde_json::from_str::<serde_json::Value>(body) {
        let msg = v.pointer("/error/message").or_else(|| v.get("message")).or_else(|| v.get("error")).and_then(|m| m.as_str());
        if let Some(m) = msg {
            return m.to_string();
        }
    }
    if let Some(text) = page_text(body) {
        return text;
    }
    let t = body.trim();
    if t.is_empty() {
        return "no details".into();
    }
    let mut s: String = t.chars().take(300).collect();
    if t.chars().count() > 300 {
        s.push('…');
    }
    s
}

/// `retry-after-ms` wins; then `retry-after` as seconds or as an HTTP date.
pub fn retry_after(headers: &reqwest::header::HeaderMap, now: SystemTime) -> Option<Duration> {
    let get = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim);
    if let Some(ms) = get("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        if ms.is_finite() && ms >= 0.0 {
            return Some(Duration::from_millis(ms as u64));
        }
    }
    let value = get("retry-after")?;
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_millis((secs * 1000.0) as u64));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// The words of a web page (a proxy's or a plain web server's error page), without its markup:
/// `None` when `body` is not one.
pub(super) fn page_text(body: &str) -> Option<String> {
    let head: String = body.trim_start().chars().take(200).collect::<String>().to_ascii_lowercase();
    if !(head.starts_with("<!doctype html") || head.starts_with("<html") || head.contains("<head") || head.contains("<body")) {
        return None;
    }
    // The words that matter are at the top, and a proxy's page can be megabytes: one pass over
    // its first 16 KB.
    let end = body.char_indices().nth(16 * 1024).map_or(body.len(), |(i, _)| i);
    let lower = body[..end].to_ascii_lowercase();
    // Scripts and styles are not words; everything else between tags is. (ASCII lowercasing
    // keeps every byte where it was, so positions in `lower` are positions in `body`.)
    let mut words = String::new();
    let mut at = 0;
    while let Some(open) = lower[at..].find('<').map(|i| at + i) {
        words.push_str(&body[at..open]);
        words.push(' ');
        let mut next = open;
        if let Some(t) = ["script", "style"].iter().find(|t| lower[open + 1..].starts_with(*t)) {
            next = lower[open..].find(&format!("</{t}")).map_or(end, |i| open + i);
        }
        at = lower[next..].find('>').map_or(end, |i| next + i + 1);
    }
    words.push_str(&body[at..end]);
    let words = words
        .replace("&nbsp;", " ")
        .replace("&amp;", "&")
        .replace("&lt;", "‹")
        .replace("&gt;", "›")
        .replace("&quot;", "\"")
        .replace("&#x27;", "'")
        .replace("&#39;", "'");
    let mut text = words.split_whitespace().collect::<Vec<_>>().join(" ");
    if text.chars().count() > 300 {
        text = text.chars().take(300).collect::<String>() + "…";
    }
    Some(if text.is_empty() { "an empty web page".into() } else { text })
}

/// What a 200 answer held when no event could be read from it: a web page, one JSON document,
/// nothing, or other text, said so with what to check.
pub fn not_a_stream(head: &[u8]) -> ProviderError {
    let text = String::from_utf8_lossy(head);
    if text.trim().is_empty() {
        // A proxy that closed the answer at once: asked again, it may answer.
        return ProviderError::new(
            ProviderErrorKind::Network,
            "The provider answered with no events at all, only an empty answer. Check the base URL (it should be the provider's API, most often ending in /v1) and that the server is well.",
        );
    }
    let what = if let Some(words) = page_text(&text) {
        format!("a web page (“{words}”)")
    } else if text.trim_start().starts_with('{') || text.trim_start().starts_with('[') {
        format!("one JSON document (“{}”), which is how a server answers a request that asked for no stream or went to another endpoint", error_detail(&text))
    } else {
        format!("text that is not a stream of events (“{}”)", text.trim().chars().take(120).collect::<String>())
    };
    ProviderError::malformed(format!(
        "The provider answered with {what}, not a stream of model events. Check the base URL: it should be the provider's API, most often ending in /v1."
    ))
}

#[cfg(test)]
mod tests {
    use super::{page_text, ContextOverflow};

    #[test]
    fn the_servers_context_size_and_the_refused_request_are_read_from_each_wording() {
        let cases = [
            ("request (4217 tokens) exceeds the available context size (4096 tokens), try increasing it", Some(4096), Some(4217)),
            ("This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.", Some(8192), Some(9000)),
            (
                "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion).",
                Some(4096),
                Some(5000),
            ),
            ("prompt is too long: 210000 tokens > 200000 maximum", Some(200000), Some(210000)),
            ("the input length exceeds the context length", None, None),
        ];
        for (message, limit, requested) in cases {
            assert_eq!(ContextOverflow::parse(message), ContextOverflow { limit, requested }, "{message}");
        }
    }

    #[test]
    fn a_providers_own_full_stop_does_not_make_two_in_our_sentence() {
        let body = r#"{"error": {"message": "Incorrect API key provided: sk-wr***ng."}}"#;
        let e = super::ProviderError::from_status(401, &reqwest::header::HeaderMap::new(), body, true);
        assert!(e.message.contains("Incorrect API key provided: sk-wr***ng. Check the key"), "{}", e.message);
    }

    #[test]
    fn the_explanation_names_the_servers_context_and_how_to_raise_it() {
        let m = ContextOverflow { limit: Some(4096), requested: Some(4217) }.explain("raw");
        assert!(m.contains("context of 4096 tokens") && m.contains("4217") && m.contains("-c ") && m.contains("llama"), "{m}");
        let unknown = ContextOverflow::default().explain("the input length exceeds the context length");
        assert!(unknown.contains("the input length exceeds the context length") && unknown.contains("-c "), "{unknown}");
    }

    #[test]
    fn a_web_page_is_summed_up_in_its_words_without_scripts_and_a_huge_one_is_read_only_at_its_top() {
        let page = "<!DOCTYPE html><html><head><title>Bad Gateway</title><script>var x = '<b>';</script><style>p{}</style></head><body><h1>502 Bad Gateway</h1><p>nginx &amp; friends</p></body></html>";
        assert_eq!(page_text(page).as_deref(), Some("Bad Gateway 502 Bad Gateway nginx & friends"));
        assert_eq!(page_text("{\"error\": \"x\"}"), None, "JSON is not a page");
        // Megabytes of markup and words in many scripts: no slicing inside a character (a pass
        // over the whole page per tag would not end in a test's lifetime).
        let huge = format!("<html><body><p>Über ünd çà</p>{}</body></html>", "<div>é漢字</div>".repeat(200_000));
        let words = page_text(&huge).unwrap();
        assert!(words.starts_with("Über ünd çà é漢字"), "{words}");
    }
}
