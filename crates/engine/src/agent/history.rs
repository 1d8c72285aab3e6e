//! Rebuilds the model's conversation from the event log, so that feedback, new messages and
//! resume after a crash continue from exactly what was stored. A tool call whose outcome was
//! lost in a crash is answered with "outcome unknown", never run again.

use serde_json::Value;

use super::worker::builtin::compaction;
use crate::domain::{MessageRole, ToolState};
use crate::event::{EngineEvent, Envelope};
use crate::judge::prompt;
use crate::provider::{ChatMessage, ToolCall, ToolInput};

pub const UNKNOWN_OUTCOME: &str =
    "The outcome of this call is unknown: Finishline stopped while it ran. Check the workspace before relying on it, and do not assume it succeeded.";

#[derive(Default)]
struct OpenAssistant {
    text: String,
    calls: Vec<ToolCall>,
    results: std::collections::HashMap<String, (String, bool, ToolState)>,
}

fn flush(open: &mut Option<OpenAssistant>, out: &mut Vec<ChatMessage>) {
    let Some(a) = open.take() else { return };
    if a.text.is_empty() && a.calls.is_empty() {
        return;
    }
    out.push(ChatMessage::Assistant { text: a.text, tool_calls: a.calls.clone() });
    for c in a.calls {
        let (content, is_error) = match a.results.get(&c.id) {
            Some((_, _, ToolState::Unknown)) | None => (UNKNOWN_OUTCOME.to_string(), true),
            Some((o, err, _)) => (o.clone(), *err),
        };
        out.push(ChatMessage::Tool { call_id: c.id.clone(), name: c.name.clone(), content, is_error });
    }
}

/// The conversation the model should see next, from a session's events.
pub fn rebuild(events: &[Envelope]) -> Vec<ChatMessage> {
    let mut out: Vec<ChatMessage> = Vec::new();
    let mut open: Option<OpenAssistant> = None;
    for env in events {
        match &env.event {
            EngineEvent::MessageCreated { role: MessageRole::Assistant, .. } => {
                flush(&mut open, &mut out);
                open = Some(OpenAssistant::default());
            }
            EngineEvent::MessageCreated { role: MessageRole::User, text, .. } => {
                flush(&mut open, &mut out);
                out.push(ChatMessage::User { content: text.clone().unwrap_or_default() });
            }
            EngineEvent::MessageCreated { role: MessageRole::Summary, text, .. } => {
                // A compaction inside a step (the window overflowed) comes after the step's message
                // was opened: that message stays open and continues after the summary, as live.
                let step_in_progress = open.as_ref().is_some_and(|a| a.text.is_empty() && a.calls.is_empty());
                flush(&mut open, &mut out);
                if step_in_progress {
                    // Before the step said anything: the server refused the request as too long,
                    // and the whole conversation was summarised.
                    compaction::apply_all(&mut out, text.as_deref().unwrap_or_default());
                } else {
                    compaction::apply(&mut out, text.as_deref().unwrap_or_default());
                }
                if step_in_progress {
                    open = Some(OpenAssistant::default());
                }
            }
            EngineEvent::Continuation { source, attempt, max, text, answers_call: None, .. } => {
                flush(&mut open, &mut out);
                out.push(ChatMessage::User { content: prompt::tagged(*source, *attempt, *max, text) });
            }
            EngineEvent::TextDelta { text, .. } => {
                if let Some(a) = open.as_mut() {
                    a.text.push_str(text);
                }
            }
            EngineEvent::ToolCall { call_id, tool, input, state, output, .. } => {
                if let Some(a) = open.as_mut() {
                    if !a.calls.iter().any(|c| c.id == *call_id) && !input.is_null() {
                        let input = match input.get("_invalid_json").and_then(Value::as_str) {
                            Some(raw) => ToolInput::Invalid { raw: raw.to_string(), error: "invalid JSON".into() },
                            None => ToolInput::Parsed { value: input.clone() },
                        };
                        a.calls.push(ToolCall { id: call_id.clone(), name: tool.clone(), input, signature: None });
                    }
                    if let Some(o) = output {
                        let err = matches!(state, ToolState::Error | ToolState::Denied | ToolState::Unknown);
                        a.results.insert(call_id.clone(), (o.clone(), err, *state));
                    } else if *state == ToolState::Unknown {
                        a.results.insert(call_id.clone(), (UNKNOWN_OUTCOME.into(), true, *state));
                    }
                }
            }
            _ => {}
        }
    }
    flush(&mut open, &mut out);
    out
}
