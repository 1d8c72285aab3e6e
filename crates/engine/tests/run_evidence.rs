//! The evidence a run gathers is right in every run and survives restarts. Each test drives the
//! whole loop through the fake provider and names the behaviour a person would notice.

mod support {
    pub mod harness;
}

use std::sync::Arc;
use std::time::Duration;

use fake_llm::{FakeServer, Protocol, RequestKind};
use finishline_engine::agent::{Engine, ModelEndpoint};
use finishline_engine::domain::*;
use finishline_engine::event::EngineEvent;
use finishline_engine::provider::ProviderConfig;
use finishline_engine::store::Store;
use finishline_engine::tool::Permission;
use finishline_engine::{ErrorCode, ProviderKind};
use futures_util::StreamExt;
use serde_json::{json, Value};
use support::harness::*;

fn ask_for_shell(s: &mut Setup) {
    s.permissions.nobody_to_ask = false;
    s.permissions.overrides.insert("run_command".into(), Permission::Ask);
}

/// A second process on the same data folder, after the first "died" (its lease is stale at once).
fn restart(h: &Harness) -> (Arc<Store>, Arc<Engine>) {
    let mut store = Store::open(&h.data.path().join("history.db"), Arc::new(finishline_engine::clock::SystemClock)).unwrap();
    store.set_lease_ttl_ms(0);
    let store = Arc::new(store);
    store.recover().unwrap();
    let engine = Engine::new(store.clone(), h.engine.config.clone());
    (store, engine)
}

async fn wait_for(store: &Arc<Store>, sid: &SessionId, pred: impl Fn(&EngineEvent) -> bool) -> EngineEvent {
    let mut sub = Box::pin(store.subscribe(sid.clone(), 0));
    loop {
        let e = tokio::time::timeout(Duration::from_secs(30), sub.next()).await.expect("the event comes").unwrap().unwrap();
        if pred(&e.event) {
            return e.event;
        }
    }
}

async fn settle(store: &Store, sid: &SessionId) -> SessionStatus {
    for _ in 0..600 {
        let s = store.session(sid).unwrap().status;
        if !s.is_running() {
            tokio::time::sleep(Duration::from_millis(50)).await;
            let s2 = store.session(sid).unwrap().status;
            if !s2.is_running() {
                return s2;
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the session did not settle");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follow_up_thanks_after_finished_work_ends_idle_as_a_conversation_without_a_review() {
    let h = Harness::new(
        rules(json!([
            {"when": {"kind": "evaluator", "system_contains": "announce"}, "reply": no_announcement()},
            evaluator(done_verdict()),
            agent(json!({"last_message_contains": "thanks!"}), json!({"text": "You're welcome!"})),
            agent(json!({"last_message_contains": "Created"}), json!({"text": DONE})),
            agent(json!({}), json!({"tool_calls": [{"name": "write_file", "arguments": {"path": "notes.md", "content": "- apple"}}]})),
        ])),
        Setup::default(),
    )
    .await;
    let o = h.run("create notes.md").await;
    h.engine.submit_review(&o.review_id(), Decision::Approve, None, false, false, DecidedBy::Person).unwrap();
    let run = h.engine.send_message(&o.session, "thanks!").unwrap();
    tokio::time::timeout(Duration::from_secs(30), run).await.unwrap().unwrap();
    let o2 = h.outcome(&o.session);
    assert_eq!(o2.status, SessionStatus::Idle, "a thank-you changes no files and uses no tools in its run: it is a conversation turn");
    assert_eq!(o2.end_reason, Some(EndReason::Conversation));
    let reviews = o2.events.iter().filter(|e| matches!(e.event, EngineEvent::ReviewRequested { .. })).count();
    assert_eq!(reviews, 1, "the thank-you must not land at the review gate again");
    let last_question = o2.events.iter().rev().find_map(|e| if let EngineEvent::Evaluation { question, .. } = &e.event { Some(*question) } else { None });
    assert_eq!(
        last_question,
        Some(finishline_engine::judge::completion::EvaluationQuestion::AnnouncedAction),
        "only the narrow conversation question is asked"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_and_resume_continue_the_budget_instead_of_resetting_it() {
    let h = Harness::new(
        rules(json!([
            evaluator(done_verdict()),
            agent(
                json!({"last_message_contains": "attempt=\"1/5\""}),
                json!({"text": "Working on the list now, this is the first pass over every item in it."})
            ),
            agent(json!({"last_message_contains": "attempt=\"2/5\""}), json!({"text": "Still on it: this is the second pass over every item in the list."})),
            agent(json!({"last_message_contains": "attempt=\"3/5\""}), json!({"text": "x", "fault": {"type": "stall_after", "frames": 0, "ms": 20000}})),
            agent(
                json!({"last_message_contains": "Finishline was restarted"}),
                json!({"text": "Back again after the restart: the third pass over every item in the list."})
            ),
            agent(json!({"last_message_contains": "attempt=\"4/5\""}), json!({"text": "The fourth pass at the list, going over every item in it once more."})),
            agent(
                json!({"last_message_contains": "attempt=\"5/5\""}),
                json!({"text": "The fifth pass at the list, going over every single item in it again."})
            ),
            agent(json!({"last_message_contains": "Todo list saved"}), json!({"text": "Starting on the list now, one item at a time, in the order written."})),
            agent(
                json!({}),
                json!({"tool_calls": [{"name": "todo_write", "arguments": {"todos": [{"id": "1", "content": "write the report", "status": "pending"}]}}]})
            ),
        ])),
        Setup::default(),
    )
    .await;
    let (sid, handle) = h.engine.start_session("write the report", &h.ws()).unwrap();
    wait_for(&h.store, &sid, |e| matches!(e, EngineEvent::Continuation { attempt: 3, .. })).await;
    wait_for(&h.store, &sid, |e| matches!(e, EngineEvent::StepStarted { step: 5, .. })).await;
    handle.abort(); // the process dies mid-step, with 3 of the 5 continuations spent
    let _ = handle.await;
    let (store2, engine2) = restart(&h);
    assert_eq!(store2.session(&sid).unwrap().status, SessionStatus::Interrupted);
    let run = engine2.send_message(&sid, "").unwrap();
    tokio::time::timeout(Duration::from_secs(30), run).await.unwrap().unwrap();
    let events = store2.events(&sid, 0).unwrap();
    let attempts: Vec<u32> = events
        .iter()
        .filter_map(|e| match &e.event {
            EngineEvent::Continuation { source: ContinuationSource::TodoGate, attempt, .. } => Some(*attempt),
            _ => None,
        })
        .collect();
    assert_eq!(attempts, vec![1, 2, 3, 4, 5], "budget 5 with 3 spent before the crash leaves 2 after it, never a fresh 5");
    let s = store2.session(&sid).unwrap();
    assert_eq!((s.status, s.end_reason), (SessionStatus::AwaitingReview, Some(EndReason::CyclesExhausted)));
    let steps: Vec<u32> = events.iter().filter_map(|e| if let EngineEvent::StepStarted { step, .. } = e.event { Some(step) } else { None }).collect();
    assert_eq!(steps.last(), Some(&8), "the step count continues too: {steps:?}");
    let note_is_user =
        events.iter().any(|e| matches!(&e.event, EngineEvent::MessageCreated { role: MessageRole::User, text: Some(t), .. } if t.contains("restarted")));
    assert!(!note_is_user, "the resume note is Finishline's text, never stored as the person's message");
    assert!(
        events.iter().any(|e| matches!(e.event, EngineEvent::Continuation { source: ContinuationSource::Resume, .. })),
        "it is stored as Finishline's resume note"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permission_left_waiting_by_a_dead_process_can_be_answered_and_the_run_goes_on() {
    let mut setup = Setup::default();
    ask_for_shell(&mut setup);
    let h = Harness::new(
        rules(json!([
            evaluator(done_verdict()),
            agent(json!({"last_message_contains": "exit code: 0"}), json!({"text": DONE})),
            agent(json!({}), json!({"tool_calls": [{"name": "run_command", "arguments": {"command": "touch ran.txt"}}]})),
        ])),
        setup,
    )
    .await;
    let (sid, handle) = h.engine.start_session("make ran.txt", &h.ws()).unwrap();
    let EngineEvent::PermissionRequested { request_id, call_id, .. } = wait_for(&h.store, &sid, |e| matches!(e, EngineEvent::PermissionRequested { .. })).await
    else {
        unreachable!()
    };
    assert!(call_id.is_some(), "the request names the agent's call it is about");
    handle.abort(); // the app quits while the question is on screen
    let _ = handle.await;
    let (store2, engine2) = restart(&h);
    assert_eq!(store2.session(&sid).unwrap().status, SessionStatus::AwaitingApproval, "a session waiting for a person keeps waiting across a restart");
    engine2.respond_permission(&request_id, PermissionDecision::AllowOnce).expect("the person can still answer after a restart");
    assert_eq!(settle(&store2, &sid).await, SessionStatus::AwaitingReview, "the run resumed from the answer and reached a decision");
    assert!(h.read("ran.txt").is_some(), "the allowed command ran");
    let calls = store2.tool_calls(&sid).unwrap();
    assert!(calls.iter().any(|c| c.tool == "run_command" && c.state == ToolState::Done), "the call's card shows it done");
    assert_eq!(engine2.respond_permission(&request_id, PermissionDecision::Deny).unwrap_err().code(), ErrorCode::AlreadyDecided);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_session_left_waiting_after_a_restart_cancels_its_request() {
    let mut setup = Setup::default();
    ask_for_shell(&mut setup);
    let h = Harness::new(rules(json!([agent(json!({}), json!({"tool_calls": [{"name": "run_command", "arguments": {"command": "touch ran.txt"}}]}))])), setup)
        .await;
    let (sid, handle) = h.engine.start_session("make ran.txt", &h.ws()).unwrap();
    let EngineEvent::PermissionRequested { request_id, .. } = wait_for(&h.store, &sid, |e| matches!(e, EngineEvent::PermissionRequested { .. })).await else {
        unreachable!()
    };
    handle.abort();
    let _ = handle.await;
    let (store2, engine2) = restart(&h);
    assert_eq!(engine2.cancel(&sid), finishline_engine::agent::Stop::Stopped, "cancel finds the stranded session");
    assert_eq!(store2.session(&sid).unwrap().status, SessionStatus::Cancelled);
    assert_eq!(store2.request_state(&request_id).unwrap().unwrap().2.as_deref(), Some("cancelled"), "its request is resolved as cancelled, not denied");
    assert!(h.read("ran.txt").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_during_a_question_is_recorded_as_cancelled_not_declined() {
    let h = Harness::new(
        rules(json!([agent(json!({}), json!({"tool_calls": [{"name": "ask_user", "arguments": {"question": "Which folder?"}}]}))])),
        Setup::default(),
    )
    .await;
    let (sid, handle) = h.engine.start_session("sort my photos", &h.ws()).unwrap();
    let EngineEvent::QuestionAsked { request_id, .. } = wait_for(&h.store, &sid, |e| matches!(e, EngineEvent::QuestionAsked { .. })).await else {
        unreachable!()
    };
    assert_eq!(h.engine.cancel(&sid), finishline_engine::agent::Stop::Stopped);
    tokio::time::timeout(Duration::from_secs(10), handle).await.unwrap().unwrap();
    let o = h.outcome(&sid);
    assert_eq!(o.status, SessionStatus::Cancelled);
    assert!(!o.has(|e| matches!(e, EngineEvent::QuestionAnswered { .. })), "nobody declined: the run was cancelled");
    assert!(
        o.has(|e| matches!(e, EngineEvent::RequestCancelled { request_id: r } if *r == request_id)),
        "the question is resolved as cancelled, so its buttons go dead"
    );
    assert_eq!(
        h.engine.answer_question(&request_id, Some("Pictures".into())).unwrap_err().code(),
        ErrorCode::AlreadyDecided,
        "a cancelled question cannot be answered any more"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verification_has_its_own_events_and_is_never_replayed_to_the_model_as_the_agents_call() {
    let mut setup = Setup { verify_commands: vec!["test -f notes.md".into()], ..Default::default() };
    ask_for_shell(&mut setup);
    let h = Harness::new(
        rules(json!([
            evaluator(done_verdict()),
            agent(json!({"last_message_contains": "also add a title"}), json!({"text": DONE})),
            agent(json!({"last_message_contains": "Created"}), json!({"text": DONE})),
            agent(json!({}), json!({"tool_calls": [{"name": "write_file", "arguments": {"path": "notes.md", "content": "- apple"}}]})),
        ])),
        setup,
    )
    .await;
    let o = h.run("create notes.md").await;
    assert_eq!(o.end_reason, Some(EndReason::VerifiedDone));
    assert!(o.has(|e| matches!(e, EngineEvent::Verification { exit_code: Some(0), skipped: false, .. })), "the person's verify command ran");
    assert!(!o.has(|e| matches!(e, EngineEvent::PermissionRequested { .. })), "the person's own verify command does not ask as if the agent did");
    assert!(!o.has(|e| matches!(e, EngineEvent::ToolCall { tool, .. } if tool == "run_command")), "verification leaves no run_command card of the agent's");
    h.engine.submit_review(&o.review_id(), Decision::RequestChanges, Some("also add a title".into()), false, false, DecidedBy::Person).unwrap();
    wait_for(&h.store, &o.session, |e| matches!(e, EngineEvent::RunStarted { trigger: RunTrigger::Feedback })).await;
    h.wait_idle(&o.session).await;
    let last = h.server.requests().into_iter().rfind(|r| r.kind == RequestKind::Agent).unwrap();
    assert!(!last.all_text.contains("outcome of this call is unknown"), "the model is never told about a command it did not make");
    assert!(!last.all_text.contains("test -f notes.md"), "verification is not replayed to the model as its own call");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_verify_command_the_agent_names_asks_without_a_phantom_tool_call() {
    let mut setup = Setup::default();
    ask_for_shell(&mut setup);
    let h = Harness::new(
        rules(json!([
            evaluator(done_verdict()),
            agent(json!({"last_message_contains": "Created"}), json!({"tool_calls": [{"name": "complete_task", "arguments": {"status": "success", "summary": "wrote it", "verify_command": "test -f notes.md"}}]})),
            agent(json!({}), json!({"tool_calls": [{"name": "write_file", "arguments": {"path": "notes.md", "content": "- apple"}}]})),
        ])),
        setup,
    )
    .await;
    let (sid, handle) = h.engine.start_session("create notes.md", &h.ws()).unwrap();
    let EngineEvent::PermissionRequested { request_id, call_id, tool, .. } =
        wait_for(&h.store, &sid, |e| matches!(e, EngineEvent::PermissionRequested { .. })).await
    else {
        unreachable!()
    };
    assert_eq!((tool.as_str(), call_id), ("run_command", None), "a verification request is not tied to any call of the agent's");
    h.engine.respond_permission(&request_id, PermissionDecision::AllowOnce).unwrap();
    tokio::time::timeout(Duration::from_secs(30), handle).await.unwrap().unwrap();
    let o = h.outcome(&sid);
    assert_eq!(o.end_reason, Some(EndReason::VerifiedDone));
    assert!(!o.has(|e| matches!(e, EngineEvent::ToolCall { tool, .. } if tool == "run_command")), "no phantom run_command call is left awaiting permission");
}

/// The messages of an OpenAI-protocol request body, without the system prompt.
fn messages(body: &Value) -> Vec<Value> {
    body["messages"].as_array().unwrap().iter().filter(|m| m["role"] != "system").cloned().collect()
}

async fn rebuilt_matches_live(mut h: Harness) {
    h.write("big.txt", &"lorem ipsum dolor sit amet ".repeat(800));
    let o = h.run("read big.txt and tell me about it").await;
    assert!(o.has(|e| matches!(e, EngineEvent::MessageCreated { role: MessageRole::Summary, .. })), "the run compacted");
    let live_last = o.requests.iter().rfind(|r| r.kind == RequestKind::Agent).unwrap().body.clone();
    // The next run gets a window that needs no new compaction, so its first request shows the
    // rebuilt conversation as it is.
    let mut config = h.engine.config.clone();
    config.context_window = 1_000_000;
    h.engine = Engine::new(h.store.clone(), config);
    h.engine.submit_review(&o.review_id(), Decision::RequestChanges, Some("one more thing".into()), false, false, DecidedBy::Person).unwrap();
    // The feedback run has started once its run_started is stored; then wait for it to end.
    wait_for(&h.store, &o.session, |e| matches!(e, EngineEvent::RunStarted { trigger: RunTrigger::Feedback })).await;
    h.wait_idle(&o.session).await;
    let agent_requests: Vec<_> = h.server.requests().into_iter().filter(|r| r.kind == RequestKind::Agent).collect();
    let rebuilt = agent_requests.iter().find(|r| r.last_message.contains("one more thing")).expect("the feedback run asked the model").body.clone();
    let (live, mut rebuilt) = (messages(&live_last), messages(&rebuilt));
    // A tool's long output goes cut to the window of the run that sends it (`fit_tool_results`),
    // and this run has a larger one: the same output, more of it shown.
    let live: Vec<Value> = live
        .iter()
        .map(|m| match m["content"].as_str().and_then(|c| c.find("\n[cut here:").map(|i| c[..i].to_string())) {
            Some(kept) if m["role"] == "tool" => {
                let mut m = m.clone();
                m["content"] = json!(kept);
                m
            }
            _ => m.clone(),
        })
        .collect();
    for (l, r) in live.iter().zip(rebuilt.iter_mut()) {
        if let (Some(lc), Some(rc)) = (l["content"].as_str(), r["content"].as_str()) {
            if l["role"] == "tool" && rc.len() > lc.len() && rc.starts_with(lc) {
                r["content"] = json!(lc);
            }
        }
    }
    assert!(rebuilt.len() > live.len(), "the rebuilt conversation holds the live one and more");
    assert_eq!(&rebuilt[..live.len()], &live[..], "the rebuilt conversation is exactly what the live run had, summary and verbatim tail");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_compaction_the_rebuilt_conversation_keeps_the_verbatim_tail_the_live_run_had() {
    let h = Harness::new(
        rules(json!([
            {"when": {"kind": "compaction"}, "reply": {"text": "Summary: the agent read big.txt twice."}},
            evaluator(done_verdict()),
            agent(json!({"last_message_contains": "one more thing"}), json!({"text": DONE})),
            agent(json!({"any_message_contains": "summarised"}), json!({"text": DONE})),
            agent(json!({}), json!({"tool_calls": [{"name": "read_file", "arguments": {"path": "big.txt"}}]})),
        ])),
        Setup { context_window: 8_000, ..Default::default() },
    )
    .await;
    rebuilt_matches_live(h).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_an_overflow_mid_step_the_rebuilt_conversation_keeps_that_step() {
    let h = Harness::new(
        rules(json!([
            {"when": {"kind": "compaction"}, "reply": {"text": "Summary: the agent read big.txt."}},
            evaluator(done_verdict()),
            agent(json!({"last_message_contains": "one more thing"}), json!({"text": DONE})),
            {"when": {"kind": "agent", "last_message_contains": "lorem"}, "reply": {"fault": {"type": "status", "status": 400, "body": "{\"error\": {\"message\": \"This model's maximum context length is 8000 tokens\"}}"}}, "times": 1},
            agent(json!({"last_message_contains": "lorem"}), json!({"text": "The file repeats lorem ipsum; that is all it holds."})),
            agent(json!({}), json!({"tool_calls": [{"name": "read_file", "arguments": {"path": "big.txt"}}]})),
        ])),
        Setup::default(),
    )
    .await;
    rebuilt_matches_live(h).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stuck_names_its_pattern_and_the_repeated_action_in_the_review_and_run_finished() {
    let h =
        Harness::new(rules(json!([agent(json!({}), json!({"tool_calls": [{"name": "read_file", "arguments": {"path": "missing.txt"}}]}))])), Setup::default())
            .await;
    let o = h.run("read missing.txt").await;
    assert_eq!(o.end_reason, Some(EndReason::Stuck));
    let stuck = o
        .events
        .iter()
        .find_map(|e| if let EngineEvent::ReviewRequested { stuck, .. } = &e.event { stuck.clone() } else { None })
        .expect("the review names why it is stuck");
    assert_eq!(stuck.pattern, StuckPattern::SameActionError);
    assert!(stuck.repeated.contains("read_file") && stuck.repeated.contains("missing.txt"), "the repeated action is quoted: {}", stuck.repeated);
    assert!(o.has(|e| matches!(e, EngineEvent::RunFinished { stuck: Some(s), .. } if s.pattern == StuckPattern::SameActionError)), "run_finished names it too");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn complete_task_words_reach_the_review_and_partial_without_remaining_work_is_sent_back() {
    let h = Harness::new(
        rules(json!([
            evaluator(done_verdict()),
            agent(json!({"last_message_contains": "needs remaining_work"}), json!({"tool_calls": [{"name": "complete_task", "arguments": {"status": "partial", "summary": "Wrote a.txt", "original_request_summary": "write a.txt and b.txt", "remaining_work": "b.txt: I lack its contents"}}]})),
            agent(json!({"last_message_contains": "Created"}), json!({"tool_calls": [{"name": "complete_task", "arguments": {"status": "partial", "summary": "Wrote a.txt"}}]})),
            agent(json!({}), json!({"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "A"}}]})),
        ])),
        Setup::default(),
    )
    .await;
    let o = h.run("write a.txt and b.txt").await;
    assert!(o.has(|e| matches!(e, EngineEvent::ToolCall { tool, state: ToolState::Error, output: Some(out), .. } if tool == "complete_task" && out.contains("remaining_work"))), "partial without remaining_work goes back as a tool error asking for it");
    assert_eq!(o.end_reason, Some(EndReason::ClaimedPartial));
    let words = o
        .events
        .iter()
        .find_map(|e| if let EngineEvent::ReviewRequested { claim_words, .. } = &e.event { claim_words.clone() } else { None })
        .expect("the claim in the agent's words");
    assert_eq!(words.summary.as_deref(), Some("Wrote a.txt"));
    assert_eq!(words.remaining_work.as_deref(), Some("b.txt: I lack its contents"));
    assert_eq!(words.original_request_summary.as_deref(), Some("write a.txt and b.txt"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_key_reaches_the_person_as_auth_with_what_to_fix() {
    let h = Harness::new(
        rules(json!([agent(
            json!({}),
            json!({"fault": {"type": "status", "status": 401, "body": "{\"error\": {\"message\": \"Incorrect API key provided\"}}"}})
        )])),
        Setup::default(),
    )
    .await;
    let o = h.run("hello there, do the thing").await;
    assert_eq!(o.status, SessionStatus::Failed);
    let (code, message) =
        o.events.iter().find_map(|e| if let EngineEvent::Error { code, message } = &e.event { Some((*code, message.clone())) } else { None }).unwrap();
    assert_eq!(code, finishline_engine::ErrorCode::ProviderAuth, "a wrong key must say so, not a generic provider error");
    assert!(message.contains("key"), "and say what to fix: {message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_finish_reason_fails_with_a_protocol_error_instead_of_a_completion() {
    let h = Harness::new(
        rules(json!([evaluator(done_verdict()), agent(json!({}), json!({"text": "Here is half an ans", "finish": "unknown"}))])),
        Setup::default(),
    )
    .await;
    let o = h.run("write the report").await;
    assert_eq!(o.status, SessionStatus::Failed, "an unknown stop is not judged as a completion");
    assert_eq!(o.calls_of(RequestKind::Evaluator), 0);
    assert!(o.has(|e| matches!(e, EngineEvent::Error { code, .. } if *code == finishline_engine::ErrorCode::ProviderProtocol)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_context_window_stop_compacts_and_goes_on_instead_of_being_judged_done() {
    let h = Harness::new(
        rules(json!([
            {"when": {"kind": "compaction"}, "reply": {"text": "Summary: the agent started the report."}},
            evaluator(done_verdict()),
            agent(json!({"last_message_contains": "cut off"}), json!({"tool_calls": [{"name": "write_file", "arguments": {"path": "report.md", "content": "# Report"}}]})),
            agent(json!({"last_message_contains": "Created"}), json!({"text": DONE})),
            agent(json!({}), json!({"text": "Writing the report, part one of", "finish": "context_window"})),
        ])),
        Setup { protocol: Protocol::Anthropic, ..Default::default() },
    )
    .await;
    let o = h.run("write the report").await;
    assert_eq!(o.calls_of(RequestKind::Compaction), 1, "the overflow compacted the conversation once");
    assert_eq!(o.continuations().first(), Some(&ContinuationSource::Truncation), "and the step continued as cut off, not as a completion");
    assert_eq!(o.end_reason, Some(EndReason::VerifiedDone));
    assert_eq!(h.read("report.md").as_deref(), Some("# Report"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_greeting_shows_what_the_evaluator_was_asked_not_a_done_verdict() {
    let h = Harness::new(rules(json!([evaluator(no_announcement()), agent(json!({}), json!({"text": "Hello! How can I help?"}))])), Setup::default()).await;
    let o = h.run("hey").await;
    assert_eq!(o.end_reason, Some(EndReason::Conversation));
    assert!(
        o.has(|e| matches!(e, EngineEvent::Evaluation { question: finishline_engine::judge::completion::EvaluationQuestion::AnnouncedAction, .. })),
        "the narrow question is stored as what it was"
    );
    assert_eq!(o.verdict, None, "a greeting is never recorded as \"Evaluator: done\"");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_separate_evaluator_server_and_model_judge_the_work() {
    let judge = FakeServer::start(rules(json!([evaluator(done_verdict())]))).await.unwrap();
    let mut h = Harness::new(
        rules(json!([
            agent(json!({"last_message_contains": "Created"}), json!({"text": DONE})),
            agent(json!({}), json!({"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "A"}}]}))
        ])),
        Setup::default(),
    )
    .await;
    let mut config = h.engine.config.clone();
    config.evaluator = Some(ModelEndpoint::http(ProviderConfig::new(ProviderKind::Openai, judge.base_url(Protocol::Openai), None), "cheap-judge").unwrap());
    h.engine = Engine::new(h.store.clone(), config);
    let o = h.run("write a.txt").await;
    assert_eq!(o.end_reason, Some(EndReason::VerifiedDone));
    assert_eq!(o.calls_of(RequestKind::Evaluator), 0, "the agent's server is not asked to judge");
    let judged: Vec<_> = judge.requests().into_iter().filter(|r| r.kind == RequestKind::Evaluator).collect();
    assert_eq!(judged.len(), 1);
    assert_eq!(judged[0].model, "cheap-judge");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_evaluator_server_that_rejects_json_schema_falls_back_to_instruction_mode() {
    let h = Harness::new(
        rules(json!([
            {"when": {"kind": "evaluator"}, "reply": {"fault": {"type": "status", "status": 400, "body": "{\"error\": {\"message\": \"response_format json_schema is not supported\"}}"}}, "times": 1},
            evaluator(done_verdict()),
            agent(json!({"last_message_contains": "Created"}), json!({"text": DONE})),
            agent(json!({}), json!({"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "A"}}]})),
        ])),
        Setup::default(),
    )
    .await;
    let o = h.run("write a.txt").await;
    assert_eq!(o.evaluations(), vec![(Verdict::Done, true)], "a 400 to json_schema is not `unavailable`: the evaluator is asked by instruction");
    assert_eq!(o.end_reason, Some(EndReason::VerifiedDone));
    let evals: Vec<_> = o.requests.iter().filter(|r| r.kind == RequestKind::Evaluator).collect();
    assert_eq!(evals.len(), 2);
    assert!(evals[0].body.get("response_format").is_some() && evals[1].body.get("response_format").is_none(), "the second request asks by instruction");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_small_local_server_window_is_learned_so_the_run_compacts_instead_of_overflowing() {
    // llama.cpp started with a 4096-token context, and nobody set the model's window.
    let scn: fake_llm::Scenario = serde_json::from_value(json!({"context_window": 4096, "rules": [
        {"when": {"kind": "compaction"}, "reply": {"text": "Summary: the notes were read."}},
        evaluator(done_verdict()),
        agent(json!({"last_message_contains": "Summary"}), json!({"text": DONE})),
        agent(json!({"last_message_contains": "note 299"}), json!({"tool_calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]})),
        agent(json!({}), json!({"tool_calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]})),
    ]}))
    .unwrap();
    let h = Harness::new(scn, Setup { context_window: 32_000, learn_context_window: true, ..Default::default() }).await;
    h.write("notes.txt", &(0..300).map(|i| format!("note {i}: some words to fill the context\n")).collect::<String>());
    let o = h.run("summarise notes.txt").await;
    let compacted = o.events.iter().any(|e| matches!(e.event, EngineEvent::Activity { phase: ActivityPhase::Compacting, .. }));
    assert!(compacted, "about 3,000 tokens of notes twice is past 80 % of the server's 4096, though far below the 32k default: the run compacts");
    assert_ne!(o.status, SessionStatus::Failed, "no request the server would refuse as too long");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_after_a_provider_failure_sends_the_same_conversation_again_and_goes_on() {
    let scn: fake_llm::Scenario = serde_json::from_value(json!({"rules": [
        {"when": {"kind": "agent"}, "reply": {"fault": {"type": "status", "status": 400, "body": "{\"error\":{\"message\":\"model is loading\"}}"}}, "times": 1},
        evaluator(done_verdict()),
        agent(json!({"last_message_contains": "Created"}), json!({"text": DONE})),
        agent(json!({}), json!({"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "A"}}]})),
    ]}))
    .unwrap();
    let h = Harness::new(scn, Setup::default()).await;
    let o = h.run("write a.txt").await;
    assert_eq!(o.status, SessionStatus::Failed, "the first request is refused");
    // What Retry in the window sends: no words from the person.
    h.engine.send_message(&o.session, "").unwrap();
    let o2 = h.wait_idle(&o.session).await;
    assert_eq!(o2.status, SessionStatus::AwaitingReview, "the retried run goes on to the review gate");
    assert_eq!(h.read("a.txt").as_deref(), Some("A"));
    let user_messages = o2.events.iter().filter(|e| matches!(&e.event, EngineEvent::MessageCreated { role: MessageRole::User, .. })).count();
    assert_eq!(user_messages, 1, "a retry adds no message of the person's");
    let retried = &o2.requests[1];
    assert!(retried.last_message.contains("write a.txt"), "the same conversation is sent again: {}", retried.last_message);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_verify_command_is_numbered_within_its_cycle_marked_as_the_persons_own_and_the_review_shows_the_last_round() {
    let setup = Setup { verify_commands: vec!["test -f a.txt".into(), "test -f b.txt".into()], ..Default::default() };
    let h = Harness::new(
        rules(json!([
            evaluator(done_verdict()),
            agent(
                json!({"last_message_contains": "test -f b.txt"}),
                json!({"tool_calls": [{"name": "write_file", "arguments": {"path": "b.txt", "content": "b"}}]})
            ),
            agent(json!({"last_message_contains": "Created"}), json!({"text": DONE})),
            agent(json!({}), json!({"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "a"}}]})),
        ])),
        setup,
    )
    .await;
    let o = h.run("create a.txt and b.txt").await;
    assert_eq!(o.end_reason, Some(EndReason::VerifiedDone));
    let rounds: Vec<(String, Option<i32>, u32, u32, bool)> = o
        .events
        .iter()
        .filter_map(|e| {
            if let EngineEvent::Verification { command, exit_code, nth, of, persons_own, .. } = &e.event {
                Some((command.clone(), *exit_code, *nth, *of, *persons_own))
            } else {
                None
            }
        })
        .collect();
    assert_eq!(
        rounds,
        vec![
            ("test -f a.txt".into(), Some(0), 1, 2, true),
            ("test -f b.txt".into(), Some(1), 2, 2, true),
            ("test -f a.txt".into(), Some(0), 1, 2, true),
            ("test -f b.txt".into(), Some(0), 2, 2, true),
        ],
        "each card says 'Verification 1 of 2' within its cycle and that the command is the person's own"
    );
    let review =
        o.events.iter().find_map(|e| if let EngineEvent::ReviewRequested { verification, .. } = &e.event { Some(verification.clone()) } else { None }).unwrap();
    assert_eq!(review.len(), 2, "the review shows the last round of verification, one entry per command, not every cycle's: {review:?}");
    assert!(review.iter().all(|v| v.as_str().unwrap().contains("exit 0")), "and that round passed: {review:?}");
}

/// A task far larger than the model's whole window cannot be sent, and a summary of it would lose
/// what the person wrote: the run fails saying so and how to go on. It was summarised to a few
/// hundred characters, and that summary judged done.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_larger_than_the_models_window_fails_clearly_instead_of_being_summarised_away() {
    let h = Harness::new(
        rules(json!([
            {"when": {"kind": "compaction"}, "reply": {"text": "Summary: summarise some lorem ipsum."}},
            evaluator(done_verdict()),
            {"when": {"kind": "agent", "last_message_contains": "lorem"}, "reply": {"fault": {"type": "status", "status": 400, "body": "{\"error\": {\"message\": \"This model's maximum context length is 8000 tokens\"}}"}}},
            agent(json!({}), json!({"text": DONE})),
        ])),
        Setup::default(),
    )
    .await;
    // About 27,000 tokens for a window of 8,000.
    let task = format!("Summarise this text:\n{}", "lorem ipsum dolor sit amet ".repeat(4_000));
    let o = h.run(&task).await;
    assert_eq!(o.status, SessionStatus::Failed, "{:?}", o.end_reason);
    assert_eq!(o.calls_of(RequestKind::Compaction), 0, "the person's task is not summarised away");
    let message = o
        .events
        .iter()
        .rev()
        .find_map(|e| match &e.event {
            EngineEvent::Error { code, message } if *code == finishline_engine::ErrorCode::ContextTooLong => Some(message.clone()),
            _ => None,
        })
        .expect("a context_too_long error");
    assert!(message.contains("The task itself") && message.contains("Put the long material in a file"), "{message}");
}
