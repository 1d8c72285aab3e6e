//! The real OpenCode over ACP, judged by Finishline's engine against the fake provider: the
//! issue's scenarios with a real external agent, not a stand-in.

mod support {
    pub mod harness;
    pub mod opencode;
}

use finishline_engine::domain::*;
use finishline_engine::event::EngineEvent;
use serde_json::json;
use support::harness::*;
use support::opencode::{opencode, write_config};

/// OpenCode's title request has no tools, so the fake server calls it a compaction.
fn title() -> serde_json::Value {
    json!({"when": {"kind": "compaction"}, "reply": {"text": "A task"}})
}

/// What happened, for a failing assertion: each event's type, with errors and statuses spelled out.
fn story(o: &Outcome) -> String {
    o.events
        .iter()
        .map(|e| match &e.event {
            EngineEvent::Error { message, .. } => format!("error({message})"),
            EngineEvent::StatusChanged { status, message, .. } => format!("status({status:?} {message:?})"),
            EngineEvent::Continuation { source, .. } => format!("continuation({source:?})"),
            EngineEvent::ToolCall { tool, state, .. } => format!("tool({tool} {state:?})"),
            other => other.type_name().to_string(),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

async fn harness(rules_: serde_json::Value, home: &std::path::Path) -> Harness {
    let h = Harness::new(rules(rules_), Setup { external: Some(opencode(home)), ..Setup::default() }).await;
    write_config(&h);
    h
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opencode_writes_the_file_and_the_task_goes_to_review_then_approval() {
    let home = tempfile::tempdir().unwrap();
    let h = harness(
        json!([
            title(),
            evaluator(done_verdict()),
            agent(json!({"last_message_contains": "Wrote file successfully"}), json!({"text": DONE})),
            agent(json!({}), json!({"tool_calls": [{"name": "write", "arguments": {"filePath": "hello.txt", "content": "hello from opencode\n"}}]})),
        ]),
        home.path(),
    )
    .await;
    let o = h.run("Write hello.txt saying hello").await;
    let requests: Vec<_> = o.requests.iter().map(|r| (r.kind, r.last_message.chars().take(80).collect::<String>())).collect();
    assert_eq!(o.status, SessionStatus::AwaitingReview, "a finished, checked task waits for the person: {:?}\n{requests:?}", story(&o));
    assert_eq!(h.read("hello.txt").as_deref(), Some("hello from opencode\n"), "OpenCode's own write tool changed the workspace");
    assert!(o.has(|e| matches!(e, EngineEvent::ToolCall { tool, state: ToolState::Done, .. } if tool == "write")), "OpenCode's tool call is shown as a finished tool card: {}", story(&o));
    assert!(o.has(|e| matches!(e, EngineEvent::TextDelta { text, .. } if text.contains("Done"))), "OpenCode's text streams into the session");
    h.engine.submit_review(&o.review_id(), Decision::Approve, None, false, false, DecidedBy::Person).unwrap();
    assert_eq!(h.outcome(&o.session).status, SessionStatus::Completed);
}
