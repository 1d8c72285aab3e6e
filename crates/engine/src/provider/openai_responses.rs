//! OpenAI's Responses API (`POST /responses`), beside Chat Completions: OpenAI's own models, and
//! servers that speak only this (Codex's providers do). The stream is typed events: output items
//! are added, filled by deltas (`response.output_text.delta`, `response.function_call_arguments.delta`)
//! and closed (`response.output_item.done`, whose item is authoritative); the response ends with
//! `response.completed`, `response.incomplete` (the output limit, a content filter) or
//! `response.failed`. Tool calls are released only at the end, so a cut stream never yields half a call.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::error::{ProviderError, ProviderErrorKind};
use super::openai::{arguments_text, clip};
use super::sse::SseEvent;
use super::types::*;
use super::WireMapper;

pub fn request_body(req: &CompletionRequest) -> Value {
    let mut input: Vec<Value> = Vec::new();
    for m in &req.messages {
        match m {
            ChatMessage::User { content } => input.push(json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": content}]})),
            ChatMessage::Assistant { text, tool_calls } => {
                if !text.is_empty() {
                    input.push(json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}));
                }
                for c in tool_calls {
                    input.push(json!({"type": "function_call", "call_id": c.id, "name": c.name, "arguments": arguments_text(&c.input)}));
                }
            }
            ChatMessage::Tool { call_id, content, .. } => input.push(json!({"type": "function_call_output", "call_id": call_id, "output": content})),
        }
    }
    let mut body = json!({
        "model": req.model,
        "instructions": req.system_text(),
        "input": input,
        "stream": true,
        // Finishline keeps the conversation itself; nothing is left on the provider's side.
        "store": false,
    });
    if !req.tools.is_empty() {
        body["tools"] = req
            .tools
            .iter()
            .map(|t| json!({"type": "function", "name": t.name, "description": t.description, "parameters": t.input_schema, "strict": false}))
            .collect();
    }
    if let Some(max) = req.max_tokens {
        body["max_output_tokens"] = json!(max);
    }
    if let Some(t) = req.temperature {
        body["temperature"] = json!(t);
    }
    if let Some(s) = req.structured.as_ref().filter(|s| s.mode == StructuredMode::Native) {
        body["text"] = json!({"format": {"type": "json_schema", "name": s.name, "schema": s.schema, "strict": true}});
    }
    body
}

#[derive(Default)]
struct PartialCall {
    call_id: String,
    name: String,
    arguments: String,
    /// `output_item.done` carried the whole arguments: later deltas change nothing.
    closed: bool,
}

/// How the response ended, as its last event said.
enum End {
    Completed,
    Incomplete(String),
}

#[derive(Default)]
pub struct ResponsesMapper {
    /// By output index, so calls come out in the order the model made them.
    calls: BTreeMap<u64, PartialCall>,
    /// Item id to output index (deltas name the item).
    items: BTreeMap<String, u64>,
    usage: Option<Usage>,
    end: Option<End>,
}

impl ResponsesMapper {
    pub fn new() -> Self {
        Self::default()
    }

    fn call_for(&mut self, v: &Value) -> Option<&mut PartialCall> {
        let index =
            v.get("output_index").and_then(Value::as_u64).or_else(|| v.get("item_id").and_then(Value::as_str).and_then(|id| self.items.get(id).copied()))?;
        self.calls.get_mut(&index)
    }

    fn read_usage(&mut self, response: &Value) {
        if let Some(u) = response.get("usage").filter(|u| u.is_object()) {
            self.usage = Some(Usage {
                input_tokens: u.get("input_tokens").and_then(Value::as_u64).unwrap_or(0),
                output_tokens: u.get("output_tokens").and_then(Value::as_u64).unwrap_or(0),
                reasoning_tokens: u.pointer("/output_tokens_details/reasoning_tokens").and_then(Value::as_u64).unwrap_or(0),
                cached_input_tokens: u.pointer("/input_tokens_details/cached_tokens").and_then(Value::as_u64).unwrap_or(0),
                estimated: false,
            });
        }
    }
}

impl WireMapper for ResponsesMapper {
    fn ended(&self) -> bool {
        self.end.is_some()
    }

    fn on_event(&mut self, ev: &SseEvent) -> Result<Vec<CompletionEvent>, ProviderError> {
        let data = ev.data.trim();
        if data.is_empty() || data == "[DONE]" || self.end.is_some() {
            return Ok(vec![]);
        }
        let v: Value =
            serde_json::from_str(data).map_err(|e| ProviderError::malformed(format!("The provider sent an event that is not JSON ({e}): {}", clip(data))))?;
        let kind = v.get("type").and_then(Value::as_str).unwrap_or(ev.event.as_str()).to_string();
        let mut out = Vec::new();
        match kind.as_str() {
            "response.output_text.delta" | "response.refusal.delta" => {
                if let Some(t) = v.get("delta").and_then(Value::as_str).filter(|t| !t.is_empty()) {
                    out.push(CompletionEvent::TextDelta { text: t.to_string() });
                }
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                if let Some(t) = v.get("delta").and_then(Value::as_str).filter(|t| !t.is_empty()) {
                    out.push(CompletionEvent::ReasoningDelta { text: t.to_string() });
                }
            }
            "response.output_item.added" | "response.output_item.done" => {
                let item = v.get("item").cloned().unwrap_or(Value::Null);
                if item.get("type").and_then(Value::as_str) == Some("function_call") {
                    let index = v.get("output_index").and_then(Value::as_u64).unwrap_or(self.calls.len() as u64);
                    if let Some(id) = item.get("id").and_then(Value::as_str) {
                        self.items.insert(id.to_string(), index);
                    }
                    let call = self.calls.entry(index).or_default();
                    if let Some(c) = item.get("call_id").and_then(Value::as_str).filter(|c| !c.is_empty()) {
                        call.call_id = c.to_string();
                    }
                    if let Some(n) = item.get("name").and_then(Value::as_str).filter(|n| !n.is_empty()) {
                        call.name = n.to_string();
                    }
                    if kind == "response.output_item.done" {
                        if let Some(a) = item.get("arguments").and_then(Value::as_str) {
                            call.arguments = a.to_string();
                        }
                        call.closed = true;
                    }
                }
            }
            "response.function_call_arguments.delta" => {
                let delta = v.get("delta").and_then(Value::as_str).unwrap_or_default().to_string();
                match self.call_for(&v) {
                    Some(c) if !c.closed => c.arguments.push_str(&delta),
                    Some(_) => {}
                    None => return Err(ProviderError::malformed("The provider sent arguments for a function call it never started.")),
                }
            }
            "response.function_call_arguments.done" => {
                if let (Some(a), Some(c)) = (v.get("arguments").and_then(Value::as_str).map(String::from), self.call_for(&v)) {
                    c.arguments = a;
                }
            }
            "response.completed" => {
                self.read_usage(&v["response"]);
                self.end = Some(End::Completed);
            }
            "response.incomplete" => {
                self.read_usage(&v["response"]);
                let reason = v.pointer("/response/incomplete_details/reason").and_then(Value::as_str).unwrap_or("unknown").to_string();
                self.end = Some(End::Incomplete(reason));
            }
            "response.failed" => {
                let code = v.pointer("/response/error/code").and_then(Value::as_str).unwrap_or("server_error");
                let message = v.pointer("/response/error/message").and_then(Value::as_str).unwrap_or("the response failed");
                return Err(ProviderError::from_stream_error(code, message, None));
            }
            "error" => {
                let code = v.get("code").and_then(Value::as_str).or_else(|| v.pointer("/error/type").and_then(Value::as_str)).unwrap_or("server_error");
                let message =
                    v.get("message").and_then(Value::as_str).or_else(|| v.pointer("/error/message").and_then(Value::as_str)).unwrap_or("unknown error");
                return Err(ProviderError::from_stream_error(code, message, None));
            }
            _ => {} // created, in_progress, content parts, annotations: nothing to say yet
        }
        Ok(out)
    }

    fn finish(&mut self) -> Result<Vec<CompletionEvent>, ProviderError> {
        let Some(end) = self.end.take() else {
            return Err(ProviderError::new(
                ProviderErrorKind::TruncatedStream,
                "The provider's stream ended before response.completed; the answer was cut off.",
            ));
        };
        let mut out = Vec::new();
        let calls = std::mem::take(&mut self.calls);
        let had_calls = !calls.is_empty();
        for (index, c) in calls {
            let id = if c.call_id.is_empty() { format!("call_{index}") } else { c.call_id };
            out.push(CompletionEvent::ToolCall { call: ToolCall { id, name: c.name, input: ToolInput::parse(&c.arguments), signature: None } });
        }
        if let Some(usage) = self.usage.take() {
            out.push(CompletionEvent::Usage { usage });
        }
        let reason = match end {
            End::Completed if had_calls => StopReason::ToolCalls,
            End::Completed => StopReason::EndTurn,
            End::Incomplete(r) if r == "max_output_tokens" => StopReason::Length,
            End::Incomplete(r) if r == "content_filter" => StopReason::ContentFilter,
            End::Incomplete(_) => StopReason::Unknown,
        };
        out.push(CompletionEvent::Stop { reason });
        Ok(out)
    }
}
