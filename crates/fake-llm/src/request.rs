//! What the fake server learns from a request: its protocol and kind, and the text of its
//! messages, so that rules can match and tests can assert what was sent.

use serde::Serialize;
use serde_json::{json, Value};

use crate::scenario::{Protocol, RequestKind};

#[derive(Debug, Clone, Serialize)]
pub struct SeenRequest {
    pub protocol: Protocol,
    pub kind: RequestKind,
    pub path: String,
    pub model: String,
    /// Lower-cased header names; the values of secret-bearing headers are kept so tests can
    /// check that the key was sent, and that nothing else carries it.
    pub headers: Vec<(String, String)>,
    pub body: Value,
    pub system: String,
    /// The text of the last message (user text, tool result or continuation).
    pub last_message: String,
    /// The text of every message, joined.
    pub all_text: String,
    /// Anthropic's forced tool, when structured output is asked for that way.
    pub forced_tool: Option<String>,
}

fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(items) => items.iter().map(text_of).filter(|s| !s.is_empty()).collect::<Vec<_>>().join("\n"),
        Value::Object(o) => {
            for key in ["text", "content", "thinking", "parts"] {
                if let Some(x) = o.get(key) {
                    return text_of(x);
                }
            }
            if let Some(fr) = o.get("functionResponse") {
                return fr.get("response").map(|r| text_of(r).to_string()).filter(|s| !s.is_empty()).unwrap_or_else(|| fr.to_string());
            }
            if let Some(fc) = o.get("functionCall") {
                return fc.to_string();
            }
            if o.contains_key("error") {
                return text_of(&o["error"]);
            }
            String::new()
        }
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

impl SeenRequest {
    pub fn parse(protocol: Protocol, path: &str, model_from_path: Option<String>, headers: Vec<(String, String)>, body: Value) -> SeenRequest {
        let (system, messages, has_tools, structured, forced_tool, model) = match protocol {
            Protocol::Openai => {
                let msgs = body["messages"].as_array().cloned().unwrap_or_default();
                let system =
                    msgs.iter().filter(|m| m["role"] == "system" || m["role"] == "developer").map(|m| text_of(&m["content"])).collect::<Vec<_>>().join("\n");
                let rest: Vec<String> = msgs.iter().filter(|m| m["role"] != "system" && m["role"] != "developer").map(|m| text_of(&m["content"])).collect();
                let has_tools = body["tools"].as_array().is_some_and(|t| !t.is_empty());
                (system, rest, has_tools, body.get("response_format").is_some(), None, body["model"].as_str().unwrap_or_default().to_string())
            }
            Protocol::Anthropic => {
                let msgs = body["messages"].as_array().cloned().unwrap_or_default();
                // Claude Code sends its environment as a `system` message among the others:
                // it belongs to the system prompt, not to what was said last.
                let (sys_msgs, msgs): (Vec<Value>, Vec<Value>) = msgs.into_iter().partition(|m| m["role"] == "system");
                let mut system = text_of(&body["system"]);
                for m in &sys_msgs {
                    system.push('\n');
                    system.push_str(&text_of(&m["content"]));
                }
                let rest: Vec<String> = msgs
                    .iter()
                    .map(|m| match &m["content"] {
                        // The last block is what was said last (a tool result, then a reminder).
                        Value::Array(blocks) => blocks.last().map(text_of).unwrap_or_default(),
                        other => text_of(other),
                    })
                    .collect();
                let forced = (body["tool_choice"]["type"] == "tool").then(|| body["tool_choice"]["name"].as_str().unwrap_or_default().to_string());
                let tools = body["tools"]
                    .as_array()
                    .map(|t| t.iter().filter(|t| Some(t["name"].as_str().unwrap_or_default()) != forced.as_deref()).count())
                    .unwrap_or(0);
                (system, rest, tools > 0, forced.is_some(), forced, body["model"].as_str().unwrap_or_default().to_string())
            }
            Protocol::Responses => {
                // `input` is a string or a list of items: messages, function calls and their
                // outputs, reasoning. The last item's text is what was said last.
                let items = match &body["input"] {
                    Value::String(s) => vec![json!({"type": "message", "role": "user", "content": s})],
                    Value::Array(a) => a.clone(),
                    _ => vec![],
                };
                let is_system = |i: &Value| i["role"] == "system" || i["role"] == "developer";
                let mut system: Vec<String> = body["instructions"].as_str().map(String::from).into_iter().collect();
                system.extend(items.iter().filter(|i| is_system(i)).map(|i| text_of(&i["content"])));
                let rest: Vec<String> = items
                    .iter()
                    .filter(|i| !is_system(i))
                    .map(|i| match i["type"].as_str() {
                        Some("function_call_output") | Some("custom_tool_call_output") => text_of(&i["output"]),
                        Some("function_call") => format!("{}({})", i["name"].as_str().unwrap_or_default(), i["arguments"].as_str().unwrap_or_default()),
                        Some("custom_tool_call") => format!("{}({})", i["name"].as_str().unwrap_or_default(), i["input"].as_str().unwrap_or_default()),
                        Some("reasoning") => String::new(),
                        _ => text_of(&i["content"]),
                    })
                    .filter(|t| !t.is_empty())
                    .collect();
                let has_tools = body["tools"].as_array().is_some_and(|t| !t.is_empty());
                let structured = body.pointer("/text/format/type").and_then(Value::as_str) == Some("json_schema");
                (system.join("\n"), rest, has_tools, structured, None, body["model"].as_str().unwrap_or_default().to_string())
            }
            Protocol::Gemini => {
                let contents = body["contents"].as_array().cloned().unwrap_or_default();
                let rest: Vec<String> = contents.iter().map(|c| c["parts"].as_array().and_then(|p| p.last()).map(text_of).unwrap_or_default()).collect();
                let has_tools = body["tools"].as_array().is_some_and(|t| !t.is_empty());
                let structured = body.pointer("/generationConfig/responseJsonSchema").is_some() || body.pointer("/generationConfig/responseSchema").is_some();
                (text_of(&body["systemInstruction"]), rest, has_tools, structured, None, model_from_path.unwrap_or_default())
            }
        };
        // Structured output asked for by instruction only still makes an evaluator call.
        let instructed = system.contains("Answer with one JSON object");
        let kind = if system.starts_with("You are the manager") {
            RequestKind::Manager
        } else if structured || instructed {
            RequestKind::Evaluator
        } else if !has_tools {
            RequestKind::Compaction
        } else {
            RequestKind::Agent
        };
        SeenRequest {
            protocol,
            kind,
            path: path.to_string(),
            model,
            headers,
            last_message: messages.last().cloned().unwrap_or_default(),
            all_text: messages.join("\n"),
            system,
            body,
            forced_tool,
        }
    }
}
