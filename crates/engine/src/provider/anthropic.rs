//! Anthropic Messages. Tool inputs arrive as `input_json_delta` fragments per content block;
//! thinking is reasoning; usage in `message_delta` is cumulative, so the last value wins. Tool
//! calls are released only at `message_stop`, so a cut stream never yields a half call.
//!
//! Structured output is a forced tool call; the mapper turns that call back into text so that
//! callers see the same JSON text from every protocol.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::error::{ProviderError, ProviderErrorKind};
use super::openai::clip;
use super::sse::SseEvent;
use super::types::*;
use super::WireMapper;

/// Anthropic requires `max_tokens`; this is used when the request sets none.
pub const DEFAULT_MAX_TOKENS: u32 = 8192;

pub fn request_body(req: &CompletionRequest) -> Value {
    let mut messages: Vec<Value> = Vec::new();
    // Tool results and user text travel as blocks of one user turn; consecutive user-side items
    // are merged so that the roles alternate as the API expects.
    let mut push = |role: &str, block: Value| {
        if let Some(last) = messages.last_mut() {
            if last["role"] == role {
                last["content"].as_array_mut().expect("content is an array").push(block);
                return;
            }
        }
        messages.push(json!({"role": role, "content": [block]}));
    };
    for m in &req.messages {
        match m {
            ChatMessage::User { content } => push("user", json!({"type": "text", "text": content})),
            ChatMessage::Assistant { text, tool_calls } => {
                if !text.is_empty() {
                    push("assistant", json!({"type": "text", "text": text}));
                }
                for c in tool_calls {
                    let input = match &c.input {
                        ToolInput::Parsed { value } if value.is_object() => value.clone(),
                        ToolInput::Parsed { value } => json!({"value": value}),
                        ToolInput::Invalid { raw, .. } => json!({"raw_arguments": raw}),
                    };
                    push("assistant", json!({"type": "tool_use", "id": c.id, "name": c.name, "input": input}));
                }
                if text.is_empty() && tool_calls.is_empty() {
                    push("assistant", json!({"type": "text", "text": "(no output)"}));
                }
            }
            ChatMessage::Tool { call_id, content, is_error, .. } => {
                push("user", json!({"type": "tool_result", "tool_use_id": call_id, "content": content, "is_error": is_error}))
            }
        }
    }
    let mut body = json!({
        "model": req.model,
        "max_tokens": req.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
        "system": req.system_text(),
        "messages": messages,
        "stream": true,
    });
    let mut tools: Vec<Value> = req.tools.iter().map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.input_schema})).collect();
    if let Some(s) = req.structured.as_ref().filter(|s| s.mode == StructuredMode::Native) {
        tools.push(json!({"name": s.name, "description": "Record your answer.", "input_schema": s.schema}));
        body["tool_choice"] = json!({"type": "tool", "name": s.name});
    }
    if !tools.is_empty() {
        body["tools"] = Value::Array(tools);
    }
    if let Some(t) = req.temperature {
        body["temperature"] = json!(t);
    }
    body
}

enum Block {
    Text,
    Thinking,
    Tool { id: String, name: String, json: String },
    Other,
}

#[derive(Default)]
pub struct AnthropicMapper {
    /// The forced tool that carries structured output, if any.
    structured_tool: Option<String>,
    blocks: BTreeMap<u64, Block>,
    ready: Vec<ToolCall>,
    usage: Usage,
    stop: Option<String>,
    stopped: bool,
}

impl AnthropicMapper {
    pub fn new(structured_tool: Option<String>) -> Self {
        AnthropicMapper { structured_tool, ..Default::default() }
    }
}

impl WireMapper for AnthropicMapper {
    fn ended(&self) -> bool {
        self.stopped
    }

    fn on_event(&mut self, ev: &SseEvent) -> Result<Vec<CompletionEvent>, ProviderError> {
        if ev.data.trim().is_empty() {
            return Ok(vec![]);
        }
        let v: Value = serde_json::from_str(&ev.data)
            .map_err(|e| ProviderError::malformed(format!("The provider sent an event that is not JSON ({e}): {}", clip(&ev.data))))?;
        let kind = v.get("type").and_then(Value::as_str).unwrap_or(ev.event.as_str());
        let mut out = Vec::new();
        match kind {
            "message_start" => {
                if let Some(u) = v.pointer("/message/usage") {
                    let read = u.get("cache_read_input_tokens").and_then(Value::as_u64).unwrap_or(0);
                    let created = u.get("cache_creation_input_tokens").and_then(Value::as_u64).unwrap_or(0);
                    self.usage.input_tokens = u.get("input_tokens").and_then(Value::as_u64).unwrap_or(0) + read + created;
                    self.usage.cached_input_tokens = read;
                    self.usage.output_tokens = u.get("output_tokens").and_then(Value::as_u64).unwrap_or(0);
                }
            }
            "content_block_start" => {
                let index = v.get("index").and_then(Value::as_u64).unwrap_or(0);
                let block = v.get("content_block").cloned().unwrap_or(Value::Null);
                let b = match block.get("type").and_then(Value::as_str) {
                    Some("text") => {
                        if let Some(t) = block.get("text").and_then(Value::as_str).filter(|t| !t.is_empty()) {
                            out.push(CompletionEvent::TextDelta { text: t.into() });
                        }
                        Block::Text
                    }
                    Some("thinking") => Block::Thinking,
                    Some("tool_use") => Block::Tool {
                        id: block.get("id").and_then(Value::as_str).unwrap_or_default().into(),
                        name: block.get("name").and_then(Value::as_str).unwrap_or_default().into(),
                        json: String::new(),
                    },
                    _ => Block::Other,
                };
                self.blocks.insert(index, b);
            }
            "content_block_delta" => {
                let index = v.get("index").and_then(Value::as_u64).unwrap_or(0);
                let delta = v.get("delta").cloned().unwrap_or(Value::Null);
                match (delta.get("type").and_then(Value::as_str), self.blocks.get_mut(&index)) {
                    (Some("text_delta"), _) => {
                        if let Some(t) = delta.get("text").and_then(Value::as_str).filter(|t| !t.is_empty()) {
                            out.push(CompletionEvent::TextDelta { text: t.into() });
                        }
                    }
                    (Some("thinking_delta"), _) => {
                        if let Some(t) = delta.get("thinking").and_then(Value::as_str).filter(|t| !t.is_empty()) {
                            out.push(CompletionEvent::ReasoningDelta { text: t.into() });
                        }
                    }
                    (Some("input_json_delta"), Some(Block::Tool { json, .. })) => {
                        json.push_str(delta.get("partial_json").and_then(Value::as_str).unwrap_or_default());
                    }
                    (Some("input_json_delta"), _) => return Err(ProviderError::malformed("The provider sent tool input for a block that is not a tool call.")),
                    _ => {} // signature_delta, citations and future delta types
                }
            }
            "content_block_stop" => {
                let index = v.get("index").and_then(Value::as_u64).unwrap_or(0);
                if let Some(Block::Tool { id, name, json }) = self.blocks.remove(&index) {
                    if self.structured_tool.as_deref() == Some(name.as_str()) {
                        // The forced answer tool: its input is the structured answer.
                        out.push(CompletionEvent::TextDelta { text: if json.trim().is_empty() { "{}".into() } else { json } });
                    } else {
                        self.ready.push(ToolCall { id, name, input: ToolInput::parse(&json), signature: None });
                    }
                }
            }
            "message_delta" => {
                if let Some(r) = v.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop = Some(r.to_string());
                }
                if let Some(u) = v.get("usage") {
                    // Cumulative: the latest value replaces, never adds.
                    if let Some(o) = u.get("output_tokens").and_then(Value::as_u64) {
                        self.usage.output_tokens = o;
                    }
                    if let Some(i) = u.get("input_tokens").and_then(Value::as_u64).filter(|i| *i > 0) {
                        self.usage.input_tokens = i + self.usage.cached_input_tokens;
                    }
                }
            }
            "message_stop" => self.stopped = true,
            "ping" => {}
            "error" => {
                let t = v.pointer("/error/type").and_then(Value::as_str).unwrap_or("error");
                let m = v.pointer("/error/message").and_then(Value::as_str).unwrap_or("unknown error");
                return Err(ProviderError::from_stream_error(t, m, None));
            }
            _ => {} // unknown events are ignored, as the API's versioning policy asks
        }
        Ok(out)
    }

    fn finish(&mut self) -> Result<Vec<CompletionEvent>, ProviderError> {
        if !self.stopped {
            return Err(ProviderError::new(ProviderErrorKind::TruncatedStream, "The provider's stream ended before message_stop; the answer was cut off."));
        }
        let mut out: Vec<CompletionEvent> = std::mem::take(&mut self.ready).into_iter().map(|call| CompletionEvent::ToolCall { call }).collect();
        let had_calls = !out.is_empty();
        out.push(CompletionEvent::Usage { usage: self.usage });
        let reason = match self.stop.as_deref() {
            Some("end_turn") | Some("stop_sequence") => StopReason::EndTurn,
            Some("tool_use") if had_calls => StopReason::ToolCalls,
            // The forced answer tool was turned into text: for the caller this is a normal end.
            Some("tool_use") if self.structured_tool.is_some() => StopReason::EndTurn,
            Some("tool_use") => StopReason::MalformedCall,
            Some("max_tokens") => StopReason::Length,
            Some("model_context_window_exceeded") => StopReason::ContextWindowExceeded,
            Some("refusal") => StopReason::ContentFilter,
            Some("pause_turn") => StopReason::PauseTurn,
            None if had_calls => StopReason::ToolCalls,
            _ => StopReason::Unknown,
        };
        out.push(CompletionEvent::Stop { reason });
        Ok(out)
    }
}
