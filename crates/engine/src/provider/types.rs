//! The provider-neutral request and stream vocabulary.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Why the model stopped, normalised across protocols. Never a string: the completion engine
/// branches on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// A natural end: OpenAI `stop`, Anthropic `end_turn`/`stop_sequence`, Gemini `STOP`.
    EndTurn,
    /// The model wants tools run. Also a `stop` that carried tool calls.
    ToolCalls,
    /// Cut off by the output limit: `length`, `max_tokens`, `MAX_TOKENS`.
    Length,
    /// A provider safety stop: `content_filter`, `refusal`, Gemini's safety family.
    ContentFilter,
    /// Anthropic `model_context_window_exceeded`.
    ContextWindowExceeded,
    /// Anthropic `pause_turn`: a long server-side turn paused; continue it.
    PauseTurn,
    /// The model tried to call a tool and the provider could not read the call (Gemini
    /// `MALFORMED_FUNCTION_CALL`, Anthropic `tool_use` with no call): the model is told and tries again.
    MalformedCall,
    /// A finish reason this build does not know. It is not a completion: the run stops with a
    /// protocol error that names it, so the person sees it instead of a silent "done".
    Unknown,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    #[serde(default)]
    pub reasoning_tokens: u64,
    #[serde(default)]
    pub cached_input_tokens: u64,
    /// Counted by us (about 4 characters a token) because the provider sent no usage: a stream
    /// that was cut off never reaches its usage chunk.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub estimated: bool,
}

/// A complete tool call. `input` is the parsed arguments, or the raw text with the parse error
/// when the model wrote invalid JSON: that goes back to the model as a tool error, not a failure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub input: ToolInput,
    /// Gemini's `thoughtSignature`, echoed back in the history as the API requires.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ToolInput {
    Parsed { value: Value },
    Invalid { raw: String, error: String },
}

impl ToolInput {
    pub fn parse(raw: &str) -> ToolInput {
        let trimmed = raw.trim();
        // Models often send "" for a tool without arguments.
        if trimmed.is_empty() {
            return ToolInput::Parsed { value: Value::Object(Default::default()) };
        }
        match serde_json::from_str::<Value>(trimmed) {
            Ok(value) => ToolInput::Parsed { value },
            Err(e) => ToolInput::Invalid { raw: raw.to_string(), error: e.to_string() },
        }
    }

    pub fn value(&self) -> Option<&Value> {
        match self {
            ToolInput::Parsed { value } => Some(value),
            ToolInput::Invalid { .. } => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum CompletionEvent {
    TextDelta {
        text: String,
    },
    ReasoningDelta {
        text: String,
    },
    /// Emitted once the call is complete (arguments accumulated and parsed).
    ToolCall {
        call: ToolCall,
    },
    /// This step's own usage, emitted once, near the end.
    Usage {
        usage: Usage,
    },
    Stop {
        reason: StopReason,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum ChatMessage {
    User {
        content: String,
    },
    Assistant {
        #[serde(default)]
        text: String,
        #[serde(default)]
        tool_calls: Vec<ToolCall>,
    },
    /// The result of one tool call, sent back in the next request.
    Tool {
        call_id: String,
        name: String,
        content: String,
        #[serde(default)]
        is_error: bool,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments object.
    pub input_schema: Value,
}

/// Ask for a JSON answer matching a schema (the evaluator's verdict).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StructuredOutput {
    pub name: String,
    pub schema: Value,
    /// How to ask: natively (json_schema, forced tool, responseJsonSchema) or by instruction only,
    /// for servers that reject the native form.
    pub mode: StructuredMode,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StructuredMode {
    Native,
    Instruction,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CompletionRequest {
    pub model: String,
    pub system: String,
    pub messages: Vec<ChatMessage>,
    #[serde(default)]
    pub tools: Vec<ToolSpec>,
    pub max_tokens: Option<u32>,
    pub structured: Option<StructuredOutput>,
    pub temperature: Option<f32>,
}

impl CompletionRequest {
    /// The system prompt, plus the schema instruction when structured output is asked for by
    /// instruction. Every mapper sends this.
    pub fn system_text(&self) -> String {
        match &self.structured {
            Some(s) if s.mode == StructuredMode::Instruction => {
                format!("{}\n\nAnswer with one JSON object and nothing else. It must match this JSON Schema:\n{}", self.system, s.schema)
            }
            _ => self.system.clone(),
        }
    }
}

/// Role markers of the common chat templates. A model that writes them is not being talked to
/// through the template it was trained on.
pub const TEMPLATE_MARKERS: &[&str] = &[
    "<|im_start|>",
    "<|im_end|>",
    "<start_of_turn>",
    "<end_of_turn>",
    "[INST]",
    "[/INST]",
    "<|eot_id|>",
    "<|start_header_id|>",
    "<|end_header_id|>",
    "<|endoftext|>",
    "<|assistant|>",
    "<|user|>",
];
