//! OpenAI-compatible Chat Completions: OpenAI, xAI, Ollama, LM Studio, llama.cpp, vLLM,
//! OpenRouter, Groq. Tool-call arguments arrive as string deltas keyed by `index`; they are
//! accumulated per index and parsed only once the stream has finished.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::error::ProviderError;
use super::sse::SseEvent;
use super::types::*;
use super::WireMapper;

pub fn request_body(req: &CompletionRequest) -> Value {
    let mut messages = vec![json!({"role": "system", "content": req.system_text()})];
    for m in &req.messages {
        messages.push(match m {
            ChatMessage::User { content } => json!({"role": "user", "content": content}),
            ChatMessage::Assistant { text, tool_calls } => {
                let mut msg = json!({"role": "assistant", "content": if text.is_empty() && !tool_calls.is_empty() { Value::Null } else { json!(text) }});
                if !tool_calls.is_empty() {
                    msg["tool_calls"] = tool_calls
                        .iter()
                        .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": arguments_text(&c.input)}}))
                        .collect();
                }
                msg
            }
            ChatMessage::Tool { call_id, content, .. } => json!({"role": "tool", "tool_call_id": call_id, "content": content}),
        });
    }
    let mut body = json!({
        "model": req.model,
        "messages": messages,
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    if !req.tools.is_empty() {
        body["tools"] = req
            .tools
            .iter()
            .map(|t| json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.input_schema}}))
            .collect();
    }
    if let Some(max) = req.max_tokens {
        body["max_tokens"] = json!(max);
    }
    if let Some(t) = req.temperature {
        body["temperature"] = json!(t);
    }
    if let Some(s) = req.structured.as_ref().filter(|s| s.mode == StructuredMode::Native) {
        // The nested form; llama.cpp's server honours it too.
        body["response_format"] = json!({"type": "json_schema", "json_schema": {"name": s.name, "schema": s.schema, "strict": true}});
    }
    body
}

pub(crate) fn arguments_text(input: &ToolInput) -> String {
    match input {
        ToolInput::Parsed { value } => value.to_string(),
        ToolInput::Invalid { raw, .. } => raw.clone(),
    }
}

#[derive(Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

#[derive(Default)]
pub struct OpenAiMapper {
    calls: BTreeMap<u64, PartialCall>,
    finish: Option<String>,
    usage: Option<Usage>,
    done: bool,
}

impl OpenAiMapper {
    pub fn new() -> Self {
        Self::default()
    }
}

impl WireMapper for OpenAiMapper {
    fn ended(&self) -> bool {
        self.done
    }

    fn on_event(&mut self, ev: &SseEvent) -> Result<Vec<CompletionEvent>, ProviderError> {
        let data = ev.data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(vec![]);
        }
        if data.is_empty() || self.done {
            return Ok(vec![]);
        }
        let chunk: Value =
            serde_json::from_str(data).map_err(|e| ProviderError::malformed(format!("The provider sent a chunk that is not JSON ({e}): {}", clip(data))))?;
        if let Some(err) = chunk.get("error") {
            let message = err.get("message").and_then(Value::as_str).unwrap_or("unknown error");
            let kind = err.get("type").or_else(|| err.get("code")).and_then(Value::as_str).unwrap_or("");
            let code = err.get("code").and_then(Value::as_u64).map(|c| c as u16);
            return Err(ProviderError::from_stream_error(kind, message, code));
        }
        let mut out = Vec::new();
        if let Some(u) = chunk.get("usage").filter(|u| !u.is_null()) {
            self.usage = Some(Usage {
                input_tokens: u.get("prompt_tokens").and_then(Value::as_u64).unwrap_or(0),
                output_tokens: u.get("completion_tokens").and_then(Value::as_u64).unwrap_or(0),
                reasoning_tokens: u.pointer("/completion_tokens_details/reasoning_tokens").and_then(Value::as_u64).unwrap_or(0),
                cached_input_tokens: u.pointer("/prompt_tokens_details/cached_tokens").and_then(Value::as_u64).unwrap_or(0),
                estimated: false,
            });
        }
        let Some(choice) = chunk.get("choices").and_then(Value::as_array).and_then(|c| c.first()) else {
            return Ok(out);
        };
        if let Some(delta) = choice.get("delta") {
            for key in ["reasoning_content", "reasoning"] {
                if let Some(t) = delta.get(key).and_then(Value::as_str).filter(|t| !t.is_empty()) {
                    out.push(CompletionEvent::ReasoningDelta { text: t.to_string() });
                }
            }
            if let Some(t) = delta.get("content").and_then(Value::as_str).filter(|t| !t.is_empty()) {
                out.push(CompletionEvent::TextDelta { text: t.to_string() });
            }
            if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
                for (pos, c) in calls.iter().enumerate() {
                    // Some servers omit `index` when they send whole calls; fall back to position.
                    let index = c.get("index").and_then(Value::as_u64).unwrap_or_else(|| self.calls.len() as u64 + pos as u64);
                    let entry = self.calls.entry(index).or_default();
                    if let Some(id) = c.get("id").and_then(Value::as_str).filter(|s| !s.is_empty()) {
                        entry.id = id.to_string();
                    }
                    if let Some(f) = c.get("function") {
                        if let Some(n) = f.get("name").and_then(Value::as_str) {
                            entry.name.push_str(n);
                        }
                        match f.get("arguments") {
                            Some(Value::String(a)) => entry.arguments.push_str(a),
                            // A few servers send the arguments as an object.
                            Some(v @ Value::Object(_)) => entry.arguments.push_str(&v.to_string()),
                            _ => {}
                        }
                    }
                }
            }
        }
        if let Some(f) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish = Some(f.to_string());
        }
        Ok(out)
    }

    fn finish(&mut self) -> Result<Vec<CompletionEvent>, ProviderError> {
        let Some(finish) = self.finish.take() else {
            return Err(ProviderError::new(
                super::ProviderErrorKind::TruncatedStream,
                "The provider's stream ended without a finish reason; the answer was cut off.",
            ));
        };
        let mut out = Vec::new();
        let calls = std::mem::take(&mut self.calls);
        let had_calls = !calls.is_empty();
        for (index, c) in calls {
            let id = if c.id.is_empty() { format!("call_{index}") } else { c.id };
            out.push(CompletionEvent::ToolCall { call: ToolCall { id, name: c.name, input: ToolInput::parse(&c.arguments), signature: None } });
        }
        if let Some(usage) = self.usage.take() {
            out.push(CompletionEvent::Usage { usage });
        }
        let reason = match finish.as_str() {
            "stop" | "end_turn" if had_calls => StopReason::ToolCalls,
            "stop" | "end_turn" | "eos" => StopReason::EndTurn,
            "tool_calls" | "function_call" => StopReason::ToolCalls,
            "length" | "max_tokens" => StopReason::Length,
            "content_filter" => StopReason::ContentFilter,
            _ => StopReason::Unknown,
        };
        out.push(CompletionEvent::Stop { reason });
        Ok(out)
    }
}

pub(crate) fn clip(s: &str) -> String {
    let mut c: String = s.chars().take(200).collect();
    if s.chars().count() > 200 {
        c.push('…');
    }
    c
}
