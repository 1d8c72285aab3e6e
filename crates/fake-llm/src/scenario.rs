//! Scenario files: an ordered list of rules. For each request the first rule whose `when`
//! matches and whose `times` is not used up gives the reply. Matching on what the last message
//! says lets a scenario survive a change in the number of calls, and model an agent that reacts
//! to a targeted continuation but not to a generic one.

use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Scenario {
    #[serde(default)]
    pub rules: Vec<Rule>,
    /// When set, every request (the model list too) must carry this key in the protocol's own
    /// header, or gets the 401 a real provider sends for a wrong key.
    #[serde(default)]
    pub api_key: Option<String>,
    /// The models `/models` lists; `fake-model` when empty.
    #[serde(default)]
    pub models: Vec<String>,
    /// When set, `/props` reports this context window, as llama.cpp's server does.
    #[serde(default)]
    pub context_window: Option<u64>,
    /// How many bytes of request bodies the server keeps before it refuses further requests
    /// (until the record is cleared); `DEFAULT_RECORD_LIMIT_BYTES` when absent. A rule without
    /// `times` answering an agent that loops would otherwise keep every growing conversation.
    #[serde(default)]
    pub record_limit_bytes: Option<u64>,
    /// When set, a request whose prompt is longer than this is refused with llama.cpp's own
    /// error ("request (N tokens) exceeds the available context size (W tokens)…").
    #[serde(default)]
    pub context_limit: Option<ContextLimit>,
}

/// A model server's context size, counted the way a tokenizer counts text that is not prose.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct ContextLimit {
    pub tokens: u64,
    /// Characters of the prompt (system, messages, tool definitions) per token; 4 is prose,
    /// symbols and code take fewer.
    #[serde(default = "default_chars_per_token")]
    pub chars_per_token: f64,
}

fn default_chars_per_token() -> f64 {
    4.0
}

impl ContextLimit {
    /// The prompt's size in this server's tokens.
    pub fn count(&self, seen: &crate::request::SeenRequest) -> u64 {
        let tools = seen.body.get("tools").map(|t| t.to_string().len()).unwrap_or(0);
        let chars = seen.system.chars().count() + seen.all_text.chars().count() + tools;
        (chars as f64 / self.chars_per_token.max(0.1)).ceil() as u64
    }
}

/// 1 GiB: a hundred times what the longest test or benchmark here records.
pub const DEFAULT_RECORD_LIMIT_BYTES: u64 = 1 << 30;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Rule {
    #[serde(default)]
    pub when: Matcher,
    pub reply: Reply,
    /// How many requests this rule may answer; absent means any number.
    #[serde(default)]
    pub times: Option<u32>,
}

/// What kind of call a request is, recognised from its shape (see `RequestKind::of`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RequestKind {
    Agent,
    Evaluator,
    Compaction,
    /// Plan mode's manager: a plan or a revision of one.
    Manager,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Protocol {
    Openai,
    Anthropic,
    Gemini,
    /// OpenAI's Responses API (`POST /v1/responses`), which Codex speaks.
    Responses,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Matcher {
    pub kind: Option<RequestKind>,
    pub protocol: Option<Protocol>,
    pub last_message_contains: Option<String>,
    pub last_message_not_contains: Option<String>,
    pub any_message_contains: Option<String>,
    pub system_contains: Option<String>,
    /// The model the request asks for: attempts of one task with different models.
    pub model: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reply {
    #[serde(default)]
    pub text: String,
    #[serde(default)]
    pub reasoning: String,
    #[serde(default)]
    pub tool_calls: Vec<FakeToolCall>,
    /// The finish reason in neutral words; absent means `tool_calls` when there are calls and
    /// `stop` otherwise.
    pub finish: Option<Finish>,
    pub usage: Option<FakeUsage>,
    /// Split the text into this many chunks (default: one chunk per word).
    pub chunks: Option<usize>,
    #[serde(default)]
    pub chunk_delay_ms: u64,
    /// Pace frames at this many per second on average (finer than `chunk_delay_ms`, whose
    /// millisecond sleeps round up); overrides it.
    #[serde(default)]
    pub frames_per_second: Option<f64>,
    /// Wait this long before the first frame (after the response headers).
    #[serde(default)]
    pub first_frame_delay_ms: u64,
    /// Re-cut the response body into pieces of this many bytes, so that chunk boundaries fall
    /// in the middle of lines and of UTF-8 characters.
    pub byte_split: Option<usize>,
    pub fault: Option<Fault>,
    /// Replace each [`STAMP`] in a frame, as it is sent, with the send time in microseconds
    /// since the Unix epoch (16 digits): the latency benchmark reads it back on delivery.
    #[serde(default)]
    pub stamp: bool,
}

/// The placeholder a stamped reply's text carries; exactly as long as the stamp that replaces it.
pub const STAMP: &str = "@@@@@@@@@@@@@@@@";

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FakeToolCall {
    pub id: Option<String>,
    pub name: String,
    /// An object is sent as JSON; a string is sent as is (to model invalid JSON arguments).
    #[serde(default)]
    pub arguments: Value,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Finish {
    Stop,
    ToolCalls,
    Length,
    ContentFilter,
    PauseTurn,
    ContextWindow,
    MalformedFunctionCall,
    /// A value no client knows.
    Unknown,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct FakeUsage {
    pub input: u64,
    pub output: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Fault {
    /// Answer with this HTTP status, headers and body instead of a stream.
    Status {
        status: u16,
        #[serde(default)]
        headers: Vec<(String, String)>,
        #[serde(default)]
        body: Option<String>,
    },
    /// Drop the connection before any response header.
    ResetBeforeHeaders,
    /// Send this many frames, then drop the connection.
    ResetAfter { frames: usize },
    /// Send this many frames, then go silent for `ms` (and then end the body).
    StallAfter { frames: usize, ms: u64 },
    /// Bytes that are not UTF-8 after this many frames.
    MalformedSse { frames: usize },
    /// A chunk whose JSON is cut off, after this many frames.
    InvalidJson { frames: usize },
    /// Tool-call arguments cut in half (the finish reason still arrives).
    TruncatedToolArgs,
    /// An error object or event inside the 200 stream, after this many frames.
    ErrorAfter200 {
        frames: usize,
        #[serde(default = "default_error_kind")]
        kind: String,
        #[serde(default = "default_error_message")]
        message: String,
    },
    /// Everything but the finish reason and the end markers.
    NoFinish,
}

fn default_error_kind() -> String {
    "server_error".into()
}
fn default_error_message() -> String {
    "Internal error from the fake provider".into()
}

impl Matcher {
    pub fn matches(&self, req: &crate::request::SeenRequest) -> bool {
        self.kind.is_none_or(|k| k == req.kind)
            && self.protocol.is_none_or(|p| p == req.protocol)
            && self.last_message_contains.as_ref().is_none_or(|s| req.last_message.contains(s.as_str()))
            && self.last_message_not_contains.as_ref().is_none_or(|s| !req.last_message.contains(s.as_str()))
            && self.any_message_contains.as_ref().is_none_or(|s| req.all_text.contains(s.as_str()))
            && self.system_contains.as_ref().is_none_or(|s| req.system.contains(s.as_str()))
            && self.model.as_ref().is_none_or(|m| req.model == *m)
    }
}
