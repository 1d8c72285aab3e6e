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

/// OpenCode writes one file with its `write` tool, then says it is done; the evaluator agrees.
fn one_write(path: &str, content: &str) -> serde_json::Value {
    json!([
        title(),
        evaluator(done_verdict()),
        agent(json!({"last_message_contains": "Wrote file successfully"}), json!({"text": DONE})),
        agent(json!({}), json!({"tool_calls": [{"name": "write", "arguments": {"filePath": path, "content": content}}]})),
    ])
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
            EngineEvent::StepFinished { usage, stop_reason, .. } => {
                format!("step_finished({stop_reason:?} out={} est={})", usage.output_tokens, usage.estimated)
            }
            other => other.type_name().to_string(),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

async fn harness(rules_: serde_json::Value, home: &std::path::Path) -> Harness {
    harness_with_pipe(rules_, home, true).await
}

async fn harness_with_pipe(rules_: serde_json::Value, home: &std::path::Path, pipe: bool) -> Harness {
    let setup = Setup { external: Some(opencode(home)), ..Setup::default() };
    let setup = if pipe { setup } else { Setup { claims_pipe: None, ..setup } };
    let h = Harness::new(rules(rules_), setup).await;
    write_config(&h);
    h
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opencode_writes_the_file_and_the_task_goes_to_review_then_approval() {
    let home = tempfile::tempdir().unwrap();
    let h = harness(one_write("hello.txt", "hello from opencode\n"), home.path()).await;
    let o = h.run("Write hello.txt saying hello").await;
    let requests: Vec<_> = o.requests.iter().map(|r| (r.kind, r.last_message.chars().take(80).collect::<String>())).collect();
    assert_eq!(o.status, SessionStatus::AwaitingReview, "a finished, checked task waits for the person: {:?}\n{requests:?}", story(&o));
    assert_eq!(h.read("hello.txt").as_deref(), Some("hello from opencode\n"), "OpenCode's own write tool changed the workspace");
    assert!(
        o.has(|e| matches!(e, EngineEvent::ToolCall { tool, state: ToolState::Done, .. } if tool == "write")),
        "OpenCode's tool call is shown as a finished tool card: {}",
        story(&o)
    );
    assert!(o.has(|e| matches!(e, EngineEvent::TextDelta { text, .. } if text.contains("Done"))), "OpenCode's text streams into the session");
    h.engine.submit_review(&o.review_id(), Decision::Approve, None, false, false, DecidedBy::Person).unwrap();
    assert_eq!(h.outcome(&o.session).status, SessionStatus::Completed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opencode_stopping_with_its_plan_half_done_is_sent_back_by_the_todo_gate_until_done() {
    let home = tempfile::tempdir().unwrap();
    let todos = |second: &str| {
        json!({"name": "todowrite", "arguments": {"todos": [
        {"id": "1", "content": "Create the first file", "status": "completed", "priority": "high"},
        {"id": "2", "content": "Create the second file", "status": second, "priority": "high"}]}})
    };
    let h = harness(
        json!([
            title(),
            evaluator(done_verdict()),
            {"when": {"kind": "agent", "last_message_contains": "Create the second file"}, "times": 1,
             "reply": {"tool_calls": [{"name": "write", "arguments": {"filePath": "b.txt", "content": "b\n"}}, todos("completed")]}},
            {"when": {"kind": "agent", "last_message_contains": "Write a.txt and b.txt"}, "times": 1,
             "reply": {"tool_calls": [todos("pending"), {"name": "write", "arguments": {"filePath": "a.txt", "content": "a\n"}}]}},
            agent(json!({}), json!({"text": DONE})),
        ]),
        home.path(),
    )
    .await;
    let o = h.run("Write a.txt and b.txt").await;
    assert_eq!(
        o.continuations(),
        vec![ContinuationSource::TodoGate],
        "OpenCode claimed done with its plan half open: the todo gate sends it back once: {}",
        story(&o)
    );
    assert_eq!(o.status, SessionStatus::AwaitingReview, "{}", story(&o));
    assert_eq!((h.read("a.txt").as_deref(), h.read("b.txt").as_deref()), (Some("a\n"), Some("b\n")), "the continuation got the second file written");
    let continued = o.requests.iter().filter(|r| r.kind == fake_llm::RequestKind::Agent).any(|r| r.last_message.contains("- [ ] Create the second file"));
    assert!(continued, "OpenCode's next turn carried Finishline's continuation naming the open item");
    let shown_as_person =
        o.has(|e| matches!(e, EngineEvent::MessageCreated { role: MessageRole::User, text: Some(t), .. } if t.contains("Create the second file")));
    assert!(!shown_as_person, "the continuation is Finishline's, never shown as the person's message");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opencode_cut_off_by_the_output_limit_is_continued_as_a_truncation() {
    let home = tempfile::tempdir().unwrap();
    let h = harness(
        json!([
            title(),
            evaluator(done_verdict()),
            {"when": {"kind": "agent", "last_message_contains": "cut off"}, "reply": {"text": DONE}},
            {"when": {"kind": "agent", "last_message_contains": "Wrote file successfully"}, "reply": {"text": "I will now", "finish": "length", "usage": {"input": 50, "output": 2}}, "times": 1},
            {"when": {"kind": "agent"}, "reply": {"tool_calls": [{"name": "write", "arguments": {"filePath": "notes.txt", "content": "n\n"}}]}, "times": 1},
        ]),
        home.path(),
    )
    .await;
    let o = h.run("Write notes.txt").await;
    // OpenCode ends every turn with `end_turn`, even when the model hit its output limit: the cut
    // shows in the turn's last answer (2 tokens, mid-sentence) after the tool work.
    assert_eq!(
        o.continuations().first(),
        Some(&ContinuationSource::Truncation),
        "a turn cut off at 2 output tokens mid-task is continued as a truncation, not judged: {}",
        story(&o)
    );
    assert_eq!(o.status, SessionStatus::AwaitingReview, "{}", story(&o));
    assert_eq!(h.read("notes.txt").as_deref(), Some("n\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opencodes_permission_request_waits_for_the_person_and_an_allow_lets_the_write_happen() {
    let home = tempfile::tempdir().unwrap();
    let h = Harness::new(
        rules(one_write("asked.txt", "ok\n")),
        Setup { external: Some(opencode(home.path())), permissions: Default::default(), ..Setup::default() },
    )
    .await;
    support::opencode::write_config_with(&h, json!({"permission": {"edit": "ask"}}));
    let (sid, handle) = h.engine.start_session("Write asked.txt", &h.ws()).unwrap();
    let request = wait_for_permission(&h, &sid).await;
    assert_eq!(h.store.session(&sid).unwrap().status, SessionStatus::AwaitingApproval, "the session shows it waits for the person");
    assert!(h.read("asked.txt").is_none(), "nothing is written before the person answers");
    h.engine.respond_permission(&request, PermissionDecision::AllowOnce).unwrap();
    tokio::time::timeout(std::time::Duration::from_secs(60), handle).await.unwrap().unwrap();
    let o = h.outcome(&sid);
    assert_eq!(h.read("asked.txt").as_deref(), Some("ok\n"), "allowed, OpenCode wrote the file: {}", story(&o));
    assert_eq!(o.status, SessionStatus::AwaitingReview);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opencodes_permission_request_denied_stops_the_run_and_nothing_is_written() {
    let home = tempfile::tempdir().unwrap();
    let h = Harness::new(
        rules(json!([
            title(),
            evaluator(done_verdict()),
            agent(json!({}), json!({"tool_calls": [{"name": "write", "arguments": {"filePath": "denied.txt", "content": "no\n"}}]}))
        ])),
        Setup { external: Some(opencode(home.path())), permissions: Default::default(), ..Setup::default() },
    )
    .await;
    support::opencode::write_config_with(&h, json!({"permission": {"edit": "ask"}}));
    let (sid, handle) = h.engine.start_session("Write denied.txt", &h.ws()).unwrap();
    let request = wait_for_permission(&h, &sid).await;
    h.engine.respond_permission(&request, PermissionDecision::Deny).unwrap();
    tokio::time::timeout(std::time::Duration::from_secs(60), handle).await.unwrap().unwrap();
    let o = h.outcome(&sid);
    assert_eq!((o.status, o.end_reason), (SessionStatus::Idle, Some(EndReason::PermissionDenied)), "{}", story(&o));
    assert!(h.read("denied.txt").is_none(), "a denied write never happens");
    assert!(o.has(|e| matches!(e, EngineEvent::ToolCall { state: ToolState::Denied, .. })), "the card shows the denial");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_in_the_middle_of_opencodes_turn_ends_the_session_cancelled_at_once() {
    let home = tempfile::tempdir().unwrap();
    let h = harness(
        json!([
            title(),
            evaluator(done_verdict()),
            agent(json!({}), json!({"text": "Thinking about it for a long time, one word after another until the end", "chunk_delay_ms": 1500}))
        ]),
        home.path(),
    )
    .await;
    let (sid, handle) = h.engine.start_session("Think slowly", &h.ws()).unwrap();
    let mut sub = Box::pin(h.store.subscribe(sid.clone(), 0));
    loop {
        if let EngineEvent::TextDelta { .. } = futures_util::StreamExt::next(&mut sub).await.unwrap().unwrap().event {
            break;
        }
    }
    let asked = std::time::Instant::now();
    assert_eq!(h.engine.cancel(&sid), finishline_engine::agent::Stop::Stopped);
    tokio::time::timeout(std::time::Duration::from_secs(30), handle).await.expect("cancel ends the run").unwrap();
    let o = h.outcome(&sid);
    assert_eq!(o.status, SessionStatus::Cancelled, "{}", story(&o));
    assert!(asked.elapsed() < std::time::Duration::from_secs(12), "cancel must not wait for the slow answer to finish: {:?}", asked.elapsed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rejecting_opencodes_work_reverts_its_changes_and_the_session_is_kept_and_exported() {
    let home = tempfile::tempdir().unwrap();
    let h = harness(one_write("keep.txt", "changed by opencode\n"), home.path()).await;
    h.write("keep.txt", "original\n");
    let o = h.run("Change keep.txt").await;
    assert_eq!(h.read("keep.txt").as_deref(), Some("changed by opencode\n"), "{}", story(&o));
    h.engine.submit_review(&o.review_id(), Decision::Reject, None, true, false, DecidedBy::Person).unwrap();
    assert_eq!(h.read("keep.txt").as_deref(), Some("original\n"), "Reject with revert restores what OpenCode changed, from Finishline's checkpoint");
    let listed = h.store.list_sessions(&Default::default()).unwrap();
    let s = listed.iter().find(|s| s.id == o.session).expect("the session is in History");
    assert_eq!((s.provider.as_str(), s.model.as_str()), ("acp", "opencode"), "History says which agent worked on it");
    let md = finishline_engine::store::export::to_markdown(&h.store.timeline(&o.session).unwrap());
    assert!(md.contains("write") && md.contains("keep.txt"), "the export shows OpenCode's tool call: {md}");
}

async fn wait_for_permission(h: &Harness, sid: &SessionId) -> RequestId {
    let mut sub = Box::pin(h.store.subscribe(sid.clone(), 0));
    let wait = async {
        loop {
            if let EngineEvent::PermissionRequested { request_id, .. } = futures_util::StreamExt::next(&mut sub).await.unwrap().unwrap().event {
                return request_id;
            }
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(60), wait).await.expect("OpenCode asks for permission")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opencode_claims_through_finishlines_complete_task_and_a_partial_claim_goes_to_review_as_partial() {
    a_partial_claim_goes_to_review(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_pipe_process_opencode_reaches_complete_task_over_http() {
    a_partial_claim_goes_to_review(false).await;
}

/// `pipe`: the agent starts Finishline's MCP server as a stdio process, as the CLI and the app
/// offer it; else it connects to it over HTTP.
async fn a_partial_claim_goes_to_review(pipe: bool) {
    let home = tempfile::tempdir().unwrap();
    let claim = json!({"status": "partial", "original_request_summary": "Write the report and run the tests", "summary": "report.txt is written", "remaining_work": "the tests were not run: there is no test command"});
    let h = harness_with_pipe(
        json!([
            title(),
            evaluator(done_verdict()),
            {"when": {"kind": "agent", "last_message_contains": "Finishline checks the work"}, "reply": {"text": "I wrote the report; the tests are left, as I said."}, "times": 1},
            {"when": {"kind": "agent", "last_message_contains": "Wrote file successfully"}, "reply": {"tool_calls": [{"name": "finishline_complete_task", "arguments": claim}]}, "times": 1},
            {"when": {"kind": "agent"}, "reply": {"tool_calls": [{"name": "write", "arguments": {"filePath": "report.txt", "content": "r\n"}}]}, "times": 1},
            agent(json!({}), json!({"text": "Stopping here."})),
        ]),
        home.path(),
        pipe,
    )
    .await;
    let o = h.run("Write the report and run the tests").await;
    let tools: Vec<String> = o
        .requests
        .iter()
        .filter(|r| r.kind == fake_llm::RequestKind::Agent)
        .flat_map(|r| r.body["tools"].as_array().cloned().unwrap_or_default())
        .filter_map(|t| t.pointer("/function/name").and_then(|n| n.as_str()).map(String::from))
        .collect();
    assert!(
        tools.iter().any(|t| t.contains("complete_task")),
        "OpenCode offers its model Finishline's complete_task (from the MCP server given in session/new): {tools:?}"
    );
    assert_eq!(o.claim, Some(Claim::Partial), "the agent's own claim reaches the completion engine: {}", story(&o));
    assert_eq!(o.status, SessionStatus::AwaitingReview);
    let words = o.events.iter().find_map(|e| match &e.event {
        EngineEvent::ReviewRequested { claim_words: Some(w), .. } => w.remaining_work.clone(),
        _ => None,
    });
    assert_eq!(words.as_deref(), Some("the tests were not run: there is no test command"), "the review shows what the agent says is left");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_changes_reopens_opencodes_own_session_so_it_remembers_the_work() {
    let home = tempfile::tempdir().unwrap();
    let h = harness(
        json!([
            title(),
            evaluator(done_verdict()),
            {"when": {"kind": "agent", "last_message_contains": "also write b.txt"}, "reply": {"tool_calls": [{"name": "write", "arguments": {"filePath": "b.txt", "content": "b\n"}}]}, "times": 1},
            agent(json!({"last_message_contains": "Wrote file successfully"}), json!({"text": DONE})),
            agent(json!({}), json!({"tool_calls": [{"name": "write", "arguments": {"filePath": "a.txt", "content": "a\n"}}]})),
        ]),
        home.path(),
    )
    .await;
    let o = h.run("Write a.txt").await;
    assert_eq!(o.status, SessionStatus::AwaitingReview, "{}", story(&o));
    h.server.clear_requests();
    h.engine.submit_review(&o.review_id(), Decision::RequestChanges, Some("also write b.txt".into()), false, false, DecidedBy::Person).unwrap();
    let o2 = h.wait_idle(&o.session).await;
    assert_eq!(o2.status, SessionStatus::AwaitingReview, "{}", story(&o2));
    assert_eq!(h.read("b.txt").as_deref(), Some("b\n"));
    let connected: Vec<bool> = o2
        .events
        .iter()
        .filter_map(|e| match &e.event {
            EngineEvent::AgentConnected { loaded, .. } => Some(*loaded),
            _ => None,
        })
        .collect();
    assert_eq!(connected, vec![false, true], "the first run opened OpenCode's session; the feedback run reopened it with session/load");
    let turn = o2
        .requests
        .iter()
        .find(|r| r.kind == fake_llm::RequestKind::Agent && r.last_message.contains("also write b.txt"))
        .expect("OpenCode asked its model about the feedback");
    assert!(
        turn.all_text.contains("Write a.txt") && turn.all_text.contains("Wrote file successfully"),
        "OpenCode remembers the first run's conversation itself"
    );
    assert!(!turn.all_text.contains("you are continuing it in a new session"), "a reopened session needs no digest of what happened");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_mode_gives_opencode_one_checked_step_per_turn_and_the_whole_task_is_checked_at_the_end() {
    let home = tempfile::tempdir().unwrap();
    let plan = json!({"steps": [
        {"title": "Write a.txt", "instructions": "Write a.txt.", "criteria": ["a.txt exists"], "depends_on": []},
        {"title": "Write b.txt", "instructions": "Write b.txt.", "criteria": ["b.txt exists"], "depends_on": [0]}
    ]});
    let h = harness(
        json!([
            title(),
            {"when": {"kind": "manager"}, "reply": {"text": plan.to_string()}},
            evaluator(done_verdict()),
            agent(json!({"last_message_contains": "Wrote file successfully"}), json!({"text": DONE})),
            agent(json!({"last_message_contains": "This step: Write a.txt"}), json!({"tool_calls": [{"name": "write", "arguments": {"filePath": "a.txt", "content": "a\n"}}]})),
            agent(json!({"last_message_contains": "This step: Write b.txt"}), json!({"tool_calls": [{"name": "write", "arguments": {"filePath": "b.txt", "content": "b\n"}}]})),
        ]),
        home.path(),
    )
    .await;
    let (sid, handle) = h.engine.start_task("Write a.txt and then b.txt", &h.ws(), PlanMode::On).unwrap();
    tokio::time::timeout(std::time::Duration::from_secs(120), handle).await.unwrap().unwrap();
    let o = h.wait_idle(&sid).await;
    assert_eq!((o.status, o.end_reason), (SessionStatus::AwaitingReview, Some(EndReason::VerifiedDone)), "{}", story(&o));
    assert_eq!((h.read("a.txt").as_deref(), h.read("b.txt").as_deref()), (Some("a\n"), Some("b\n")), "each step's turn did its step");
    let steps: Vec<(usize, EndReason)> = o
        .events
        .iter()
        .filter_map(|e| if let EngineEvent::PlanStepFinished { index, end_reason, .. } = &e.event { Some((*index, *end_reason)) } else { None })
        .collect();
    assert_eq!(steps, vec![(0, EndReason::VerifiedDone), (1, EndReason::VerifiedDone)], "each step is judged on its own criteria");
    let reopened = o.events.iter().filter(|e| matches!(e.event, EngineEvent::AgentConnected { loaded: true, .. })).count();
    assert!(reopened >= 1, "later steps continue in OpenCode's own session: {}", story(&o));
}
