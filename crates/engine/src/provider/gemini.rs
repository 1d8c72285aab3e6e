//! Google Gemini `streamGenerateContent?alt=sse`. Function calls arrive whole; `STOP` with
//! function calls means tools; the safety family is a content filter; `thoughtSignature` is kept
//! on the call so the history can echo it; the last `usageMetadata` wins.

use serde_json::{json, Value};

use super::error::{ProviderError, ProviderErrorKind};
use super::openai::clip;
use super::sse::SseEvent;
use super::types::*;
use super::WireMapper;

pub fn request_body(req: &CompletionRequest) -> Value {
    let mut contents: Vec<Value> = Vec::new();
    let mut push = |role: &str, part: Value| {
        if let Some(last) = contents.last_mut() {
            if last["role"] == role {
                last["parts"].as_array_mut().expect("parts is an array").push(part);
                return;
            }
        }
        contents.push(json!({"role": role, "parts": [part]}));
    };
    for m in &req.messages {
        match m {
            ChatMessage::User { content } => push("user", json!({"text": content})),
            ChatMessage::Assistant { text, tool_calls } => {
                if !text.is_empty() {
                    push("model", json!({"text": text}));
                }
                for c in tool_calls {
                    let args = match &c.input {
                        ToolInput::Parsed { value } if value.is_object() => value.clone(),
                        ToolInput::Parsed { value } => json!({"value": value}),
                        ToolInput::Invalid { raw, .. } => json!({"raw_arguments": raw}),
                    };
                    let mut part = json!({"functionCall": {"name": c.name, "args": args}});
                    if let Some(sig) = &c.signature {
                        part["thoughtSignature"] = json!(sig);
                    }
                    push("model", part);
                }
            }
            ChatMessage::Tool { name, content, is_error, .. } => {
                let response = if *is_error { json!({"error": content}) } else { json!({"content": content}) };
                push("user", json!({"functionResponse": {"name": name, "response": response}}))
            }
        }
    }
    let mut body = json!({
        "systemInstruction": {"parts": [{"text": req.system_text()}]},
        "contents": contents,
    });
    if !req.tools.is_empty() {
        body["tools"] = json!([{"functionDeclarations": req.tools.iter().map(|t| json!({
            "name": t.name, "description": t.description, "parametersJsonSchema": t.input_schema
        })).collect::<Vec<_>>()}]);
    }
    let mut config = serde_json::Map::new();
    if let Some(max) = req.max_tokens {
        config.insert("maxOutputTokens".into(), json!(max));
    }
    if let Some(t) = req.temperature {
        config.insert("temperature".into(), json!(t));
    }
    if let Some(s) = req.structured.as_ref().filter(|s| s.mode == StructuredMode::Native) {
        config.insert("responseMimeType".into(), json!("application/json"));
        config.insert("responseJsonSchema".into(), s.schema.clone());
    }
    if !config.is_empty() {
        body["generationConfig"] = Value::Object(config);
    }
    body
}

#[derive(Default)]
pub struct GeminiMapper {
    calls: Vec<ToolCall>,
    finish: Option<String>,
    usage: Option<Usage>,
}

impl GeminiMapper {
    pub fn new() -> Self {
        Self::default()
    }
}

const SAFETY_FAMILY: &[&str] =
    &["SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY", "IMAGE_PROHIBITED_CONTENT", "IMAGE_RECITATION"];

impl WireMapper for GeminiMapper {
    fn on_event(&mut self, ev: &SseEvent) -> Result<Vec<CompletionEvent>, ProviderError> {
        if ev.data.trim().is_empty() {
            return Ok(vec![]);
        }
        let v: Value = serde_json::from_str(&ev.data)
            .map_err(|e| ProviderError::malformed(format!("The provider sent a chunk that is not JSON ({e}): {}", clip(&ev.data))))?;
        if let Some(err) = v.get("error") {
            let status = err.get("status").and_then(Value::as_str).unwrap_or("");
            let message = err.get("message").and_then(Value::as_str).unwrap_or("unknown error");
            let code = err.get("code").and_then(Value::as_u64).map(|c| c as u16);
            return Err(ProviderError::from_stream_error(status, message, code));
        }
        if let Some(u) = v.get("usageMetadata") {
            let thoughts = u.get("thoughtsTokenCount").and_then(Value::as_u64).unwrap_or(0);
            self.usage = Some(Usage {
                input_tokens: u.get("promptTokenCount").and_then(Value::as_u64).unwrap_or(0),
                output_tokens: u.get("candidatesTokenCount").and_then(Value::as_u64).unwrap_or(0) + thoughts,
                reasoning_tokens: thoughts,
                cached_input_tokens: u.get("cachedContentTokenCount").and_then(Value::as_u64).unwrap_or(0),
                estimated: false,
            });
        }
        if let Some(reason) = v.pointer("/promptFeedback/blockReason").and_then(Value::as_str) {
            // The prompt itself was blocked: no candidates will come.
            self.finish = Some(format!("PROMPT_{reason}"));
        }
        let mut out = Vec::new();
        let Some(cand) = v.get("candidates").and_then(Value::as_array).and_then(|c| c.first()) else {
            return Ok(out);
        };
        if let Some(parts) = cand.pointer("/content/parts").and_then(Value::as_array) {
            for p in parts {
                if let Some(fc) = p.get("functionCall") {
                    let id = fc.get("id").and_then(Value::as_str).map(String::from).unwrap_or_else(|| format!("call_{}", self.calls.len()));
                    self.calls.push(ToolCall {
                        id,
                        name: fc.get("name").and_then(Value::as_str).unwrap_or_default().into(),
                        input: ToolInput::Parsed { value: fc.get("args").cloned().unwrap_or_else(|| json!({})) },
                        signature: p.get("thoughtSignature").and_then(Value::as_str).map(String::from),
                    });
                } else if let Some(t) = p.get("text").and_then(Value::as_str).filter(|t| !t.is_empty()) {
                    if p.get("thought").and_then(Value::as_bool) == Some(true) {
                        out.push(CompletionEvent::ReasoningDelta { text: t.into() });
                    } else {
                        out.push(CompletionEvent::TextDelta { text: t.into() });
                    }
                }
            }
        }
        if let Some(f) = cand.get("finishReason").and_then(Value::as_str) {
            self.finish = Some(f.to_string());
        }
        Ok(out)
    }

    fn finish(&mut self) -> Result<Vec<CompletionEvent>, ProviderError> {
        let Some(finish) = self.finish.take() else {
            return Err(ProviderError::new(ProviderErrorKind::TruncatedStream, "The provider's stream ended without a finish reason; the answer was cut off."));
        };
        let mut out: Vec<CompletionEvent> = std::mem::take(&mut self.calls).into_iter().map(|call| CompletionEvent::ToolCall { call }).collect();
        let had_calls = !out.is_empty();
        if let Some(usage) = self.usage.take() {
            out.push(CompletionEvent::Usage { usage });
        }
        let reason = match finish.as_str() {
            "STOP" if had_calls => StopReason::ToolCalls,
            "STOP" => StopReason::EndTurn,
            "MAX_TOKENS" => StopReason::Length,
            f if SAFETY_FAMILY.contains(&f) || f.starts_with("PROMPT_") => StopReason::ContentFilter,
            "MALFORMED_FUNCTION_CALL" | "UNEXPECTED_TOOL_CALL" => StopReason::MalformedCall,
            _ => StopReason::Unknown, // OTHER and values not yet known
        };
        out.push(CompletionEvent::Stop { reason });
        Ok(out)
    }
}
