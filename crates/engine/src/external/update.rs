//! ACP's reports in Finishline's terms. Pure: the connection hands every `session/update` here
//! and the run turns the result into events, so the mapping is tested without a process.

use agent_client_protocol::v1::schema::{ContentBlock, PlanEntryStatus, SessionUpdate, StopReason as AcpStop, ToolCallContent, ToolCallStatus};
use serde_json::Value;

use crate::domain::{Todo, TodoStatus, ToolState};
use crate::error::ErrorCode;
use crate::judge::completion::StepEnd;
use crate::provider::StopReason;

/// One report from the agent during a turn.
#[derive(Debug, Clone, PartialEq)]
pub enum TurnItem {
    /// Text of the agent's answer, with the message it belongs to when the agent names it.
    Text {
        text: String,
        message: Option<String>,
    },
    Thought(String),
    /// A tool call the agent runs itself: first seen, or an update of what is known of it. Every
    /// field but the id is what changed.
    Tool(ToolReport),
    /// The agent's plan: its todo list, which the todo gate then holds it to.
    Todos(Vec<Todo>),
    /// Something with no place in a session (commands available, a mode change).
    Other,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolReport {
    pub id: String,
    pub title: Option<String>,
    /// What kind of tool the agent says it is (`edit`, `execute`, `read`, …), when not `other`:
    /// a name that stays the same from call to call where a title ("Writing to a.txt") does not.
    pub kind: Option<String>,
    pub input: Option<Value>,
    pub state: Option<ToolState>,
    pub output: Option<String>,
}

fn block_text(b: &ContentBlock) -> Option<String> {
    match b {
        ContentBlock::Text(t) => Some(t.text.clone()),
        _ => None,
    }
}

fn state(s: ToolCallStatus) -> ToolState {
    match s {
        ToolCallStatus::Pending => ToolState::Pending,
        ToolCallStatus::InProgress => ToolState::Running,
        ToolCallStatus::Completed => ToolState::Done,
        ToolCallStatus::Failed => ToolState::Error,
        _ => ToolState::Running,
    }
}

/// A tool's output as the person reads it: its text, a diff's new text under its path.
fn output(content: &[ToolCallContent], raw: Option<&Value>) -> Option<String> {
    let mut parts = Vec::new();
    for c in content {
        match c {
            ToolCallContent::Content(c) => parts.extend(block_text(&c.content)),
            ToolCallContent::Diff(d) => parts.push(format!("{}:\n{}", d.path.display(), d.new_text)),
            ToolCallContent::Terminal(t) => parts.push(format!("(terminal {})", t.terminal_id.0)),
            _ => {}
        }
    }
    // Kept to its start and end: each update carries the whole output so far, and every one is
    // stored and shown.
    if parts.is_empty() {
        return raw
            .map(|v| match v {
                Value::String(s) => s.clone(),
                Value::Object(o) if o.get("output").and_then(Value::as_str).is_some() => o["output"].as_str().unwrap_or_default().to_string(),
                other => other.to_string(),
            })
            .map(crate::tool::start_and_end);
    }
    Some(crate::tool::start_and_end(parts.join("\n")))
}

/// The report a `session/update` makes.
pub fn map_update(u: &SessionUpdate) -> TurnItem {
    match u {
        SessionUpdate::AgentMessageChunk(c) => {
            block_text(&c.content).map(|text| TurnItem::Text { text, message: c.message_id.as_ref().map(|m| m.0.to_string()) }).unwrap_or(TurnItem::Other)
        }
        SessionUpdate::AgentThoughtChunk(c) => block_text(&c.content).map(TurnItem::Thought).unwrap_or(TurnItem::Other),
        SessionUpdate::ToolCall(t) => TurnItem::Tool(ToolReport {
            id: t.tool_call_id.0.to_string(),
            title: Some(t.title.clone()),
            kind: kind_name(t.kind),
            input: t.raw_input.clone().filter(|v| !is_empty_object(v)).or_else(|| where_it_works(&t.locations)),
            state: Some(state(t.status)),
            output: output(&t.content, t.raw_output.as_ref()),
        }),
        SessionUpdate::ToolCallUpdate(t) => TurnItem::Tool(ToolReport {
            id: t.tool_call_id.0.to_string(),
            title: t.fields.title.clone(),
            kind: t.fields.kind.and_then(kind_name),
            input: t.fields.raw_input.clone().filter(|v| !is_empty_object(v)).or_else(|| t.fields.locations.as_deref().and_then(where_it_works)),
            state: t.fields.status.map(state),
            output: match (&t.fields.content, &t.fields.raw_output) {
                (None, None) => None,
                (c, r) => output(c.as_deref().unwrap_or_default(), r.as_ref()),
            },
        }),
        SessionUpdate::Plan(p) => TurnItem::Todos(
            p.entries
                .iter()
                .enumerate()
                .map(|(i, e)| Todo {
                    id: format!("plan-{}", i + 1),
                    content: e.content.clone(),
                    status: match e.status {
                        PlanEntryStatus::Pending => TodoStatus::Pending,
                        PlanEntryStatus::InProgress => TodoStatus::InProgress,
                        PlanEntryStatus::Completed => TodoStatus::Completed,
                        _ => TodoStatus::Pending,
                    },
                })
                .collect(),
        ),
        _ => TurnItem::Other,
    }
}

/// The todo list an agent's own todo tool wrote, from the call's input. ACP's `plan` update is
/// the standard way, but agents that keep their list in a tool (OpenCode's `todowrite`, Claude
/// Code's `TodoWrite`) do not all send it; the todo gate must hold them to their list either way.
pub fn todos_from_tool(name: &str, input: &Value) -> Option<Vec<Todo>> {
    let normalised: String = name.chars().filter(|c| c.is_ascii_alphanumeric()).collect::<String>().to_ascii_lowercase();
    if normalised != "todowrite" {
        return None;
    }
    let items = input.get("todos")?.as_array()?;
    Some(
        items
            .iter()
            .enumerate()
            .filter_map(|(i, t)| {
                let content = t.get("content").and_then(Value::as_str)?.to_string();
                let status = match t.get("status").and_then(Value::as_str).unwrap_or("pending") {
                    "in_progress" => TodoStatus::InProgress,
                    "completed" => TodoStatus::Completed,
                    "cancelled" => TodoStatus::Cancelled,
                    _ => TodoStatus::Pending,
                };
                let id = t.get("id").and_then(Value::as_str).map(String::from).unwrap_or_else(|| format!("todo-{}", i + 1));
                Some(Todo { id, content, status })
            })
            .collect(),
    )
}

/// For an agent that sends no input of its call (Gemini CLI), the files it works on, which the
/// card and the permission question show in its place (they showed `{}`).
pub fn where_it_works(locations: &[agent_client_protocol::v1::schema::ToolCallLocation]) -> Option<Value> {
    let paths: Vec<String> = locations.iter().map(|l| l.path.to_string_lossy().into_owned()).collect();
    match paths.as_slice() {
        [] => None,
        [one] => Some(serde_json::json!({ "path": one })),
        _ => Some(serde_json::json!({ "paths": paths })),
    }
}

/// A tool kind as the protocol spells it (`edit`), or `None` for `other`, which names nothing.
pub fn kind_name(kind: agent_client_protocol::v1::schema::ToolKind) -> Option<String> {
    let name = serde_json::to_value(kind).ok()?.as_str()?.to_string();
    (name != "other").then_some(name)
}

fn is_empty_object(v: &Value) -> bool {
    matches!(v, Value::Object(o) if o.is_empty()) || v.is_null()
}

/// How a turn's stop reason ends the step, for a turn nobody here stopped (the run's own cancel
/// is handled before: its `cancelled` answer never comes this way). `agent`: its name.
pub fn step_end(stop: AcpStop, agent: &str) -> StepEnd {
    match stop {
        AcpStop::EndTurn => StepEnd::Stopped(StopReason::EndTurn),
        AcpStop::MaxTokens => StepEnd::Stopped(StopReason::Length),
        AcpStop::MaxTurnRequests => StepEnd::TurnLimit,
        AcpStop::Refusal => StepEnd::Stopped(StopReason::ContentFilter),
        // Its own doing (a request of its own aborted, a loop it broke off): not the person's
        // cancel, and no sign it finished either.
        AcpStop::Cancelled => StepEnd::Failed {
            code: ErrorCode::ExternalAgent,
            message: format!("{agent} ended its turn as cancelled, though nobody here cancelled it, so Finishline cannot tell whether it finished. What it did is kept; Resume to let it go on."),
        },
        _ => StepEnd::Failed {
            code: ErrorCode::ExternalAgent,
            message: "The agent ended its turn for a reason Finishline does not know, so it cannot tell whether the agent finished. Resume to try again."
                .into(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn update(v: Value) -> SessionUpdate {
        serde_json::from_value(v).expect("a valid session/update")
    }

    /// A tool's output of megabytes (a big diff, a command's log) is kept to its start and end:
    /// each update carries all of it so far, and each is stored.
    #[test]
    fn a_huge_tool_output_is_kept_to_its_start_and_end() {
        let text = format!("start {} end", "y".repeat(3_000_000));
        for v in [
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "t", "status": "completed", "content": [{"type": "content", "content": {"type": "text", "text": text}}]}),
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "t", "status": "completed", "rawOutput": {"output": text}}),
        ] {
            let TurnItem::Tool(ToolReport { output: Some(out), .. }) = map_update(&update(v)) else { panic!("a tool report") };
            assert!(out.len() < 120_000 && out.starts_with("start ") && out.ends_with(" end") && out.contains("bytes omitted"), "{}", out.len());
        }
    }

    #[test]
    fn message_and_thought_chunks_become_text_and_reasoning() {
        assert_eq!(
            map_update(&update(json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Hel"}}))),
            TurnItem::Text { text: "Hel".into(), message: None }
        );
        assert_eq!(
            map_update(&update(json!({"sessionUpdate": "agent_message_chunk", "messageId": "m1", "content": {"type": "text", "text": "Hel"}}))),
            TurnItem::Text { text: "Hel".into(), message: Some("m1".into()) },
            "the message a chunk belongs to, when the agent names it"
        );
        assert_eq!(
            map_update(&update(json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "hmm"}}))),
            TurnItem::Thought("hmm".into())
        );
    }

    #[test]
    fn a_tool_call_and_its_updates_carry_title_input_state_and_output() {
        // As OpenCode 1.18 sends them: an empty input first, the full input with in_progress.
        let first = map_update(&update(
            json!({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "write", "kind": "edit", "status": "pending", "rawInput": {}}),
        ));
        assert_eq!(
            first,
            TurnItem::Tool(ToolReport {
                id: "t1".into(),
                title: Some("write".into()),
                kind: Some("edit".into()),
                input: None,
                state: Some(ToolState::Pending),
                output: None
            }),
            "an empty input is not shown as the call's input"
        );
        let running = map_update(&update(
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "in_progress", "rawInput": {"filePath": "a.txt", "content": "x"}}),
        ));
        assert_eq!(
            running,
            TurnItem::Tool(ToolReport {
                id: "t1".into(),
                title: None,
                kind: None,
                input: Some(json!({"filePath": "a.txt", "content": "x"})),
                state: Some(ToolState::Running),
                output: None
            })
        );
        let done = map_update(&update(
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed", "content": [{"type": "content", "content": {"type": "text", "text": "Wrote file successfully."}}], "rawOutput": {"output": "ignored when content says it"}}),
        ));
        assert_eq!(
            done,
            TurnItem::Tool(ToolReport {
                id: "t1".into(),
                title: None,
                kind: None,
                input: None,
                state: Some(ToolState::Done),
                output: Some("Wrote file successfully.".into())
            })
        );
        let failed =
            map_update(&update(json!({"sessionUpdate": "tool_call_update", "toolCallId": "t2", "status": "failed", "rawOutput": {"output": "no such file"}})));
        assert_eq!(
            failed,
            TurnItem::Tool(ToolReport { id: "t2".into(), state: Some(ToolState::Error), output: Some("no such file".into()), ..Default::default() }),
            "a failed call's output is its raw output when it sent no content"
        );
    }

    /// As Gemini CLI sends a call: titled by its file, with no input but where it works.
    #[test]
    fn a_call_with_no_input_shows_the_files_it_works_on_and_keeps_its_kind() {
        let call = map_update(&update(json!({"sessionUpdate": "tool_call", "toolCallId": "w1", "title": "Writing to hello.txt", "kind": "edit",
            "status": "pending", "locations": [{"path": "/ws/hello.txt"}]})));
        let TurnItem::Tool(report) = call else { panic!("a tool report") };
        assert_eq!((report.kind.as_deref(), report.input), (Some("edit"), Some(json!({"path": "/ws/hello.txt"}))));
        let other = map_update(&update(json!({"sessionUpdate": "tool_call", "toolCallId": "o1", "title": "Thinking", "kind": "other", "status": "pending"})));
        let TurnItem::Tool(report) = other else { panic!("a tool report") };
        assert_eq!((report.kind, report.input), (None, None), "`other` names no kind");
    }

    #[test]
    fn the_agents_plan_becomes_the_todo_list_the_gate_checks() {
        let item = map_update(&update(json!({"sessionUpdate": "plan", "entries": [
            {"content": "Write a.txt", "priority": "high", "status": "completed"},
            {"content": "Write b.txt", "priority": "medium", "status": "in_progress"},
            {"content": "Test", "priority": "low", "status": "pending"}]})));
        let TurnItem::Todos(todos) = item else { panic!("a plan is a todo list") };
        let statuses: Vec<_> = todos.iter().map(|t| t.status).collect();
        assert_eq!(statuses, vec![TodoStatus::Completed, TodoStatus::InProgress, TodoStatus::Pending], "open plan entries must stay open for the todo gate");
        assert_eq!(todos[1].content, "Write b.txt");
    }

    #[test]
    fn each_stop_reason_ends_the_step_as_the_completion_engine_expects() {
        assert_eq!(step_end(AcpStop::EndTurn, "OpenCode"), StepEnd::Stopped(StopReason::EndTurn));
        assert_eq!(step_end(AcpStop::MaxTokens, "OpenCode"), StepEnd::Stopped(StopReason::Length), "max_tokens is a truncation, continued as one");
        assert_eq!(step_end(AcpStop::MaxTurnRequests, "OpenCode"), StepEnd::TurnLimit);
        assert_eq!(step_end(AcpStop::Refusal, "OpenCode"), StepEnd::Stopped(StopReason::ContentFilter));
        assert!(
            matches!(step_end(AcpStop::Cancelled, "OpenCode"), StepEnd::Failed { code: ErrorCode::ExternalAgent, message } if message.starts_with("OpenCode ended its turn as cancelled")),
            "a turn the agent cancelled itself is not the person's cancel"
        );
    }

    #[test]
    fn an_agents_own_todo_tool_is_read_as_its_todo_list() {
        let input = json!({"todos": [{"id": "1", "content": "a", "status": "completed", "priority": "high"}, {"content": "b", "status": "in_progress"}, {"status": "pending"}]});
        let todos = todos_from_tool("todowrite", &input).expect("OpenCode's todo tool");
        assert_eq!(
            todos.iter().map(|t| (t.content.as_str(), t.status)).collect::<Vec<_>>(),
            vec![("a", TodoStatus::Completed), ("b", TodoStatus::InProgress)],
            "an item without text is dropped, the others keep their status"
        );
        assert!(todos_from_tool("TodoWrite", &input).is_some(), "Claude Code's name for it");
        assert!(todos_from_tool("write", &input).is_none(), "only the todo tool sets the list");
    }

    #[test]
    fn updates_with_no_place_in_a_session_are_ignored() {
        assert_eq!(map_update(&update(json!({"sessionUpdate": "available_commands_update", "availableCommands": []}))), TurnItem::Other);
    }
}
