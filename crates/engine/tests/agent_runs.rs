//! Runs of the real engine against the fake provider server: reviews, reverts, faults, cancel,
//! compaction and resume. Each asserts the events, the stored rows and the files.

mod support {
    pub mod harness;
}

use std::sync::Arc;
use std::time::Duration;

use fake_llm::Protocol;
use finishline_engine::agent::{Engine, ReviewOutcome};
use finishline_engine::domain::*;
use finishline_engine::event::EngineEvent;
use finishline_engine::store::{export, Store};
use finishline_engine::tool::Permission;
use finishline_engine::ErrorCode;
use futures_util::StreamExt;
use serde_json::json;
use support::harness::*;

fn allow_shell(s: &mut Setup) {
    s.permissions.overrides.insert("run_command".into(), Permission::Allow);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_changes_starts_a_second_run_with_a_fresh_budget_then_approve_completes() {
    let h = Harness::new(
        rules(json!([
            evaluator(done_verdict()),
            agent(
                json!({"last_message_contains": "also add grapes"}),
                json!({"tool_calls": [{"name": "edit_file", "arguments": {"path": "notes.md", "old_text": "- cherry", "new_text": "- cherry\n- grapes"}}]})
            ),
            agent(json!({"last_message_contains": "Replaced"}), json!({"text": DONE})),
            agent(json!({"last_message_contains": "Created notes.md"}), json!({"text": DONE})),
            agent(json!({}), json!({"tool_calls": [{"name": "write_file", "arguments": {"path": "notes.md", "content": "- apple\n- banana\n- cherry"}}]})),
        ])),
        Setup::default(),
    )
    .await;
    let o = h.run("create notes.md listing three fruits").await;
    assert_eq!(o.status, SessionStatus::AwaitingReview);
    let review = o.review_id();
    let outcome = h.engine.submit_review(&review, Decision::RequestChanges, Some("also add grapes".into()), false, false, DecidedBy::Person).unwrap();
    assert!(matches!(outcome, ReviewOutcome::Decided { status: SessionStatus::Busy, .. }));
    let o2 = h.wait_idle(&o.session).await;
    assert_eq!(o2.status, SessionStatus::AwaitingReview, "the feedback run reaches the review gate again");
    assert_eq!(h.read("notes.md").unwrap(), "- apple\n- banana\n- cherry\n- grapes");
    let feedback_is_user =
        o2.events.iter().any(|e| matches!(&e.event, EngineEvent::MessageCreated { role: MessageRole::User, text: Some(t), .. } if t == "also add grapes"));
    assert!(feedback_is_user, "feedback at the review gate is a real user message");
    let runs = o2.events.iter().filter(|e| matches!(e.event, EngineEvent::RunStarted { .. })).count();
    assert_eq!(runs, 2);
    let again = h.engine.submit_review(&review, Decision::Approve, None, false, false, DecidedBy::Person).unwrap_err();
    assert_eq!(again.code(), ErrorCode::AlreadyDecided, "the old review cannot be decided twice");
    h.engine.submit_review(&o2.review_id(), Decision::Approve, None, false, false, DecidedBy::Person).unwrap();
    assert_eq!(h.store.session(&o.session).unwrap().status, SessionStatus::Completed);
    assert_eq!(h.store.session(&o.session).unwrap().decision, Some(Decision::Approve));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reject_with_revert_restores_every_file_including_ones_the_shell_created_and_deleted() {
    let mut setup = Setup::default();
    allow_shell(&mut setup);
    let h = Harness::new(
        rules(json!([
            evaluator(done_verdict()),
            agent(json!({"last_message_contains": "exit code: 0"}), json!({"text": DONE})),
            agent(
                json!({"last_message_contains": "Wrote keep.txt"}),
                json!({"tool_calls": [{"name": "run_command", "arguments": {"command": "echo shell > made-by-shell.txt && rm old.txt"}}]})
            ),
            agent(json!({}), json!({"tool_calls": [{"name": "write_file", "arguments": {"path": "keep.txt", "content": "changed by the agent"}}]})),
        ])),
        setup,
    )
    .await;
    h.write("keep.txt", "original");
    h.write("old.txt", "precious");
    let o = h.run("tidy the folder").await;
    assert_eq!(o.status, SessionStatus::AwaitingReview);
    let files = o
        .events
        .iter()
        .find_map(|e| if let EngineEvent::ReviewRequested { files_changed, .. } = &e.event { Some(files_changed.clone()) } else { None })
        .unwrap();
    let kinds: Vec<(String, String)> = files.iter().map(|f| (f["path"].as_str().unwrap().to_string(), f["kind"].as_str().unwrap().to_string())).collect();
    assert!(kinds.contains(&("made-by-shell.txt".into(), "created".into())), "a file the shell made shows in the review: {kinds:?}");
    assert!(kinds.contains(&("old.txt".into(), "deleted".into())), "a file the shell deleted shows too: {kinds:?}");
    assert!(kinds.contains(&("keep.txt".into(), "modified".into())));
    let keep_diff = files.iter().find(|f| f["path"] == "keep.txt").unwrap()["diff"].as_str().unwrap().to_string();
    assert!(keep_diff.contains("-original") && keep_diff.contains("+changed by the agent"), "the diff shows exactly what changed:\n{keep_diff}");
    let outcome = h.engine.submit_review(&o.review_id(), Decision::Reject, None, true, false, DecidedBy::Person).unwrap();
    match outcome {
        ReviewOutcome::Decided { status: SessionStatus::Rejected, revert: Some(r), .. } => assert!(r.applied),
        other => panic!("expected a rejected, reverted session: {other:?}"),
    }
    assert_eq!(h.read("keep.txt").as_deref(), Some("original"), "the modified file is restored");
    assert_eq!(h.read("old.txt").as_deref(), Some("precious"), "the file the shell deleted is back");
    assert!(h.read("made-by-shell.txt").is_none(), "the file the shell created is gone");
    let events = h.store.events(&o.session, 0).unwrap();
    let reverted =
        events
            .iter()
            .find_map(|e| if let EngineEvent::Reverted { restored, deleted, .. } = &e.event { Some((restored.clone(), deleted.clone())) } else { None });
    let (mut restored, deleted) =
        reverted.expect("what the revert did is kept in the session, so the window says it where the person looks and a replay shows it");
    restored.sort();
    assert_eq!(restored, vec!["keep.txt", "old.txt"]);
    assert_eq!(deleted, vec!["made-by-shell.txt"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revert_keeps_a_private_files_permissions_puts_back_an_executable_bit_and_no_set_id_bit() {
    use std::os::unix::fs::PermissionsExt;
    let mut setup = Setup::default();
    allow_shell(&mut setup);
    let h = Harness::new(
        rules(json!([
            evaluator(done_verdict()),
            agent(json!({"last_message_contains": "exit code: 0"}), json!({"text": DONE})),
            agent(
                json!({"last_message_contains": "Wrote secret.txt"}),
                json!({"tool_calls": [{"name": "run_command", "arguments": {"command": "chmod a-x,u+s run.sh"}}]})
            ),
            agent(json!({}), json!({"tool_calls": [{"name": "write_file", "arguments": {"path": "secret.txt", "content": "changed by the agent"}}]})),
        ])),
        setup,
    )
    .await;
    let mode = |rel: &str| std::fs::metadata(h.workspace.path().join(rel)).unwrap().permissions().mode() & 0o7777;
    h.write("secret.txt", "only mine");
    h.write("run.sh", "#!/bin/sh\n");
    std::fs::set_permissions(h.workspace.path().join("secret.txt"), std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::set_permissions(h.workspace.path().join("run.sh"), std::fs::Permissions::from_mode(0o750)).unwrap();
    let o = h.run("change the secret").await;
    assert_eq!(o.status, SessionStatus::AwaitingReview);
    assert_eq!(mode("run.sh"), 0o4640, "the agent took the executable bit away, and set the set-user-id bit");
    h.engine.submit_review(&o.review_id(), Decision::Reject, None, true, false, DecidedBy::Person).unwrap();
    assert_eq!(h.read("secret.txt").as_deref(), Some("only mine"));
    assert_eq!(mode("secret.txt"), 0o600, "a file only the person could read is not made readable by everyone");
    assert_eq!(mode("run.sh"), 0o750, "the executable bit is back, for those who could read it, and no set-user-id bit");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revert_asks_before_touching_a_file_the_person_edited_after_the_agent() {
    let h = Harness::new(
        rules(json!([
            evaluator(done_verdict()),
            agent(json!({"last_message_contains": "Wrote"}), json!({"text": DONE})),
            agent(json!({}), json!({"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "agent"}}]})),
        ])),
        Setup::default(),
    )
    .await;
    h.write("a.txt", "before");
    let o = h.run("change a.txt").await;
    h.write("a.txt", "the person's own edit");
    let r = h.engine.submit_review(&o.review_id(), Decision::Reject, None, true, false, DecidedBy::Person).unwrap();
    match r {
        ReviewOutcome::NeedsConfirmation { conflicts, .. } => assert_eq!(conflicts, vec!["a.txt".to_string()]),
        other => panic!("the revert must ask first: {other:?}"),
    }
    assert_eq!(h.read("a.txt").as_deref(), Some("the person's own edit"), "nothing is touched before the person confirms");
    assert_eq!(h.store.session(&o.session).unwrap().status, SessionStatus::AwaitingReview, "the decision waits for the confirmation");
    h.engine.submit_review(&o.review_id(), Decision::Reject, None, true, true, DecidedBy::Person).unwrap();
    assert_eq!(h.read("a.txt").as_deref(), Some("before"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revert_asks_before_going_past_an_edit_the_person_saved_between_two_of_the_agents_edits_of_the_file() {
    let h = Harness::new(
        rules(json!([
            evaluator(done_verdict()),
            agent(json!({"last_message_contains": "Replaced"}), json!({"text": DONE})),
            // The second edit comes a moment later: the person saves theirs in between.
            agent(
                json!({"last_message_contains": "Wrote"}),
                json!({"first_frame_delay_ms": 1500, "tool_calls": [{"name": "edit_file", "arguments": {"path": "notes.md", "old_text": "agent one", "new_text": "agent two"}}]})
            ),
            agent(json!({}), json!({"tool_calls": [{"name": "write_file", "arguments": {"path": "notes.md", "content": "agent one\n"}}]})),
        ])),
        Setup::default(),
    )
    .await;
    h.write("notes.md", "mine\n");
    let (sid, _handle) = h.engine.start_session("edit notes.md twice", &h.ws()).unwrap();
    let waited = std::time::Instant::now();
    // The first edit's window has closed once the agent is asked for its next step.
    while h.read("notes.md").as_deref() != Some("agent one\n") || h.server.requests().iter().filter(|r| r.kind == fake_llm::RequestKind::Agent).count() < 2 {
        assert!(waited.elapsed() < std::time::Duration::from_secs(20), "the agent's first edit never came");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    h.write("notes.md", "agent one\nthe person's line\n");
    let o = h.wait_idle(&sid).await;
    assert_eq!(o.status, SessionStatus::AwaitingReview);
    assert_eq!(h.read("notes.md").as_deref(), Some("agent two\nthe person's line\n"), "the agent's second edit went on top of the person's");
    let diff = o.events.iter().rev().find_map(|e| match &e.event {
        EngineEvent::ReviewRequested { files_changed, .. } => Some(serde_json::to_string(files_changed).unwrap()),
        _ => None,
    });
    assert!(diff.unwrap().contains("-mine"), "the review shows all the agent did to the file, its first edit too");
    let r = h.engine.submit_review(&o.review_id(), Decision::Reject, None, true, false, DecidedBy::Person).unwrap();
    match r {
        ReviewOutcome::NeedsConfirmation { conflicts, .. } => assert_eq!(conflicts, vec!["notes.md".to_string()]),
        other => panic!("the revert must ask before going past the person's edit: {other:?}"),
    }
    assert_eq!(h.read("notes.md").as_deref(), Some("agent two\nthe person's line\n"), "nothing is touched before the person says");
    h.engine.submit_review(&o.review_id(), Decision::Reject, None, true, true, DecidedBy::Person).unwrap();
    assert_eq!(h.read("notes.md").as_deref(), Some("mine\n"), "told to, it goes back to before the task");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revert_asks_before_deleting_a_file_of_the_persons_that_the_tasks_gitignore_edit_brought_into_view() {
    let h = Harness::new(
        rules(json!([
            evaluator(done_verdict()),
            agent(json!({"last_message_contains": "Wrote"}), json!({"text": DONE})),
            agent(json!({}), json!({"tool_calls": [{"name": "write_file", "arguments": {"path": ".gitignore", "content": "target/\n"}}]})),
        ])),
        Setup::default(),
    )
    .await;
    // The person's local data, hidden by their ignore rules; the task drops that rule.
    h.write(".gitignore", "target/\ndata/\n");
    h.write("data/keep.csv", "the person's rows\n");
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    let o = h.run("stop ignoring data").await;
    assert_eq!(o.status, SessionStatus::AwaitingReview);
    let r = h.engine.submit_review(&o.review_id(), Decision::Reject, None, true, false, DecidedBy::Person).unwrap();
    match r {
        ReviewOutcome::NeedsConfirmation { conflicts, .. } => {
            assert_eq!(conflicts, vec!["data/keep.csv".to_string()], "it is older than the task: it is asked about")
        }
        other => panic!("the revert must ask before deleting a file older than the task: {other:?}"),
    }
    assert_eq!(h.read("data/keep.csv").as_deref(), Some("the person's rows\n"), "nothing is touched before the person says");
}

/// A file of the person's that the task's `.gitignore` edit brought into view is asked about even
/// when its content is that of a file the task removed: the same words are not a rename, and the
/// revert would have deleted the person's file taken for the task's moved one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revert_asks_about_an_uncovered_file_of_the_persons_even_when_a_removed_file_held_the_same() {
    let mut setup = Setup::default();
    allow_shell(&mut setup);
    let h = Harness::new(
        rules(json!([
            evaluator(done_verdict()),
            agent(json!({"last_message_contains": "removed it"}), json!({"text": DONE})),
            agent(
                json!({}),
                json!({"tool_calls": [
                    {"name": "write_file", "arguments": {"path": ".gitignore", "content": "target/\n"}},
                    {"name": "run_command", "arguments": {"command": "rm export.csv && echo removed it"}}
                ]})
            ),
        ])),
        setup,
    )
    .await;
    h.write(".gitignore", "target/\ndata/\n");
    h.write("data/keep.csv", "the person's rows\n");
    h.write("export.csv", "the person's rows\n");
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    let o = h.run("stop ignoring data and remove the export").await;
    assert_eq!(o.status, SessionStatus::AwaitingReview);
    let r = h.engine.submit_review(&o.review_id(), Decision::Reject, None, true, false, DecidedBy::Person).unwrap();
    match r {
        ReviewOutcome::NeedsConfirmation { conflicts, .. } => assert_eq!(conflicts, vec!["data/keep.csv".to_string()], "older than the task, untouched by it"),
        other => panic!("the revert must ask before deleting the person's file: {other:?}"),
    }
    assert_eq!(h.read("data/keep.csv").as_deref(), Some("the person's rows\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_429_with_retry_after_shows_retry_then_succeeds() {
    let h = Harness::new(
        rules(json!([
            evaluator(done_verdict()),
            {"when": {"kind": "agent"}, "reply": {"fault": {"type": "status", "status": 429, "headers": [["retry-after", "1"]]}}, "times": 1},
            agent(json!({}), json!({"text": "Hello! I am here and ready to help with your task."})),
        ])),
        Setup::default(),
    )
    .await;
    let o = h.run("hi").await;
    let retry = o.events.iter().find_map(|e| match &e.event {
        EngineEvent::StatusChanged { status: SessionStatus::Retry, attempt, max_retries, next_retry_at, message } => {
            Some(((*attempt, *max_retries), next_retry_at.clone(), message.clone()))
        }
        _ => None,
    });
    let (attempt, at, msg) = retry.expect("the session showed `retry` while it waited");
    assert_eq!(attempt, (Some(1), Some(3)), "the first retry of at most three (the harness policy), so the banner reads \"attempt 1 of 3\"");
    assert!(at.is_some(), "the next retry time is shown for a countdown");
    assert!(msg.unwrap().contains("429"));
    assert_eq!(o.status, SessionStatus::Idle, "after the wait the answer arrived");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reset_mid_stream_keeps_the_partial_text_once_and_takes_the_truncation_path() {
    let h = Harness::new(
        rules(json!([
            evaluator(done_verdict()),
            {"when": {"kind": "agent"}, "reply": {"text": "alpha beta gamma delta epsilon zeta", "chunk_delay_ms": 20, "fault": {"type": "reset_after", "frames": 5}}, "times": 1},
            agent(json!({"last_message_contains": "cut off"}), json!({"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "A"}}]})),
            agent(json!({}), json!({"text": DONE})),
        ])),
        Setup::default(),
    )
    .await;
    let o = h.run("write a.txt").await;
    assert_eq!(o.continuations(), vec![ContinuationSource::Truncation], "a connection lost after output is a truncation, not a retry");
    let t = h.store.timeline(&o.session).unwrap();
    let md = export::to_markdown(&t);
    assert_eq!(md.matches("alpha beta").count(), 1, "the partial text is kept exactly once:\n{md}");
    assert_eq!(o.end_reason, Some(EndReason::VerifiedDone));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stall_after_output_is_a_truncation() {
    let h = Harness::new(
        rules(json!([
            evaluator(done_verdict()),
            {"when": {"kind": "agent"}, "reply": {"text": "one two three four five", "chunk_delay_ms": 10, "fault": {"type": "stall_after", "frames": 4, "ms": 5000}}, "times": 1},
            agent(json!({"last_message_contains": "cut off"}), json!({"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "A"}}]})),
            agent(json!({}), json!({"text": DONE})),
        ])),
        Setup { idle_ms: 400, ..Default::default() },
    )
    .await;
    let o = h.run("write a.txt").await;
    assert_eq!(o.continuations(), vec![ContinuationSource::Truncation]);
    assert_eq!(h.read("a.txt").as_deref(), Some("A"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_chunk_before_output_fails_with_a_clear_message() {
    let h = Harness::new(rules(json!([agent(json!({}), json!({"text": "hello", "fault": {"type": "invalid_json", "frames": 0}}))])), Setup::default()).await;
    let o = h.run("hi").await;
    assert_eq!(o.status, SessionStatus::Failed);
    let msg = o.events.iter().find_map(|e| if let EngineEvent::Error { message, .. } = &e.event { Some(message.clone()) } else { None }).unwrap();
    assert!(msg.contains("not JSON"), "the person learns what went wrong: {msg}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_key_fails_at_once_and_says_so() {
    let h = Harness::new(
        rules(json!([agent(json!({}), json!({"fault": {"type": "status", "status": 401, "body": "{\"error\": {\"message\": \"invalid x-api-key\"}}"}}))])),
        Setup { protocol: Protocol::Anthropic, ..Default::default() },
    )
    .await;
    let o = h.run("hi").await;
    assert_eq!(o.status, SessionStatus::Failed);
    assert_eq!(o.model_calls(), 1, "a wrong key is never retried");
    assert!(o.has(|e| matches!(e, EngineEvent::Error { message, .. } if message.contains("key"))));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_while_streaming_ends_cancelled_and_nothing_follows() {
    let h = Harness::new(rules(json!([agent(json!({}), json!({"text": "word ".repeat(200), "chunk_delay_ms": 20}))])), Setup::default()).await;
    let (sid, handle) = h.engine.start_session("write a long essay", &h.ws()).unwrap();
    let mut sub = Box::pin(h.store.subscribe(sid.clone(), 0));
    while let Some(e) = sub.next().await {
        if matches!(e.unwrap().event, EngineEvent::TextDelta { .. }) {
            break;
        }
    }
    assert!(h.engine.is_running(&sid), "a streaming run is running: closing the window must ask first");
    assert_eq!(h.engine.cancel(&sid), finishline_engine::agent::Stop::Stopped);
    tokio::time::timeout(Duration::from_secs(5), handle).await.expect("cancel stops the run quickly").unwrap();
    assert!(!h.engine.is_running(&sid), "a cancelled run is over: the window may close without asking");
    let events = h.store.events(&sid, 0).unwrap();
    let pos = events.iter().position(|e| matches!(e.event, EngineEvent::StatusChanged { status: SessionStatus::Cancelled, .. })).expect("a cancelled status");
    assert_eq!(pos, events.len() - 1, "nothing arrives after `cancelled`");
    assert_eq!(h.store.session(&sid).unwrap().end_reason, Some(EndReason::Cancelled));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_cancelled_while_streaming_counts_the_tokens_it_was_shown_as_an_estimate() {
    let h = Harness::new(
        rules(json!([agent(json!({}), json!({"text": (0..200).map(|i| format!("essay{i} ")).collect::<String>(), "chunk_delay_ms": 20}))])),
        Setup::default(),
    )
    .await;
    let (sid, handle) = h.engine.start_session("write a long essay", &h.ws()).unwrap();
    let mut sub = Box::pin(h.store.subscribe(sid.clone(), 0));
    while let Some(e) = sub.next().await {
        if matches!(e.unwrap().event, EngineEvent::TextDelta { .. }) {
            break;
        }
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(h.engine.cancel(&sid), finishline_engine::agent::Stop::Stopped);
    tokio::time::timeout(Duration::from_secs(5), handle).await.expect("cancel stops the run quickly").unwrap();
    let events = h.store.events(&sid, 0).unwrap();
    let usage = events
        .iter()
        .find_map(|e| if let EngineEvent::StepFinished { usage, .. } = &e.event { Some(*usage) } else { None })
        .expect("the cut step is finished with what it cost");
    assert!(usage.estimated, "the server sent no count: it is an estimate, and says so");
    assert!(usage.output_tokens > 0 && usage.input_tokens > 0, "{usage:?}");
    let summary = h.store.session(&sid).unwrap();
    assert!(summary.tokens.agent > 0, "History shows what the cancelled task spent, not 0");
    assert_eq!(summary.end_reason, Some(EndReason::Cancelled));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_while_a_command_runs_kills_its_whole_process_group() {
    let mut setup = Setup::default();
    allow_shell(&mut setup);
    let h = Harness::new(
        rules(json!([agent(
            json!({}),
            json!({"tool_calls": [{"name": "run_command", "arguments": {"command": "(sleep 2; touch child-survived.txt) & sleep 30; touch after.txt"}}]})
        )])),
        setup,
    )
    .await;
    let (sid, handle) = h.engine.start_session("run the slow thing", &h.ws()).unwrap();
    let mut sub = Box::pin(h.store.subscribe(sid.clone(), 0));
    while let Some(e) = sub.next().await {
        if matches!(e.unwrap().event, EngineEvent::ToolCall { state: ToolState::Running, .. }) {
            break;
        }
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    h.engine.cancel(&sid);
    tokio::time::timeout(Duration::from_secs(5), handle).await.expect("cancel reaches the running command").unwrap();
    assert_eq!(h.store.session(&sid).unwrap().status, SessionStatus::Cancelled);
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert!(h.read("after.txt").is_none(), "the command itself was stopped");
    assert!(h.read("child-survived.txt").is_none(), "and so was the background child it started");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permission_prompt_allowed_once_runs_the_tool() {
    let h = Harness::new(
        rules(json!([
            evaluator(done_verdict()),
            agent(json!({"last_message_contains": "exit code: 0"}), json!({"text": DONE})),
            agent(json!({}), json!({"tool_calls": [{"name": "run_command", "arguments": {"command": "echo allowed > shell.txt"}}]})),
        ])),
        Setup { permissions: Default::default(), ..Default::default() },
    )
    .await;
    let (sid, handle) = h.engine.start_session("write shell.txt with the shell", &h.ws()).unwrap();
    let mut sub = Box::pin(h.store.subscribe(sid.clone(), 0));
    let request = loop {
        if let EngineEvent::PermissionRequested { request_id, tool, input, .. } = sub.next().await.unwrap().unwrap().event {
            assert_eq!(tool, "run_command");
            assert_eq!(input["command"], "echo allowed > shell.txt", "the prompt shows exactly what will run");
            break request_id;
        }
    };
    assert_eq!(h.store.session(&sid).unwrap().status, SessionStatus::AwaitingApproval);
    h.engine.respond_permission(&request, PermissionDecision::AllowOnce).unwrap();
    assert_eq!(
        h.engine.respond_permission(&request, PermissionDecision::Deny).unwrap_err().code(),
        ErrorCode::AlreadyDecided,
        "a second answer changes nothing"
    );
    handle.await.unwrap();
    assert_eq!(h.read("shell.txt").as_deref(), Some("allowed\n"));
    assert_eq!(h.store.session(&sid).unwrap().status, SessionStatus::AwaitingReview);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permission_prompt_denied_stops_the_run_as_idle() {
    let h = Harness::new(
        rules(json!([agent(json!({}), json!({"tool_calls": [{"name": "fetch_url", "arguments": {"url": "http://127.0.0.1:9/"}}]}))])),
        Setup { permissions: Default::default(), ..Default::default() },
    )
    .await;
    let (sid, handle) = h.engine.start_session("fetch it", &h.ws()).unwrap();
    let mut sub = Box::pin(h.store.subscribe(sid.clone(), 0));
    let request = loop {
        if let EngineEvent::PermissionRequested { request_id, .. } = sub.next().await.unwrap().unwrap().event {
            break request_id;
        }
    };
    h.engine.respond_permission(&request, PermissionDecision::Deny).unwrap();
    handle.await.unwrap();
    let s = h.store.session(&sid).unwrap();
    assert_eq!((s.status, s.end_reason), (SessionStatus::Idle, Some(EndReason::PermissionDenied)));
    assert_eq!(h.store.tool_calls(&sid).unwrap()[0].state, ToolState::Denied);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_conversation_is_compacted_into_a_summary_and_goes_on() {
    let h = Harness::new(
        rules(json!([
            {"when": {"kind": "compaction"}, "reply": {"text": "Summary: the agent read big.txt twice."}},
            evaluator(done_verdict()),
            agent(json!({"any_message_contains": "summarised"}), json!({"text": DONE})),
            agent(json!({}), json!({"tool_calls": [{"name": "read_file", "arguments": {"path": "big.txt"}}]})),
        ])),
        Setup { context_window: 8_000, ..Default::default() },
    )
    .await;
    h.write("big.txt", &"lorem ipsum dolor sit amet ".repeat(800));
    let o = h.run("read big.txt and tell me about it").await;
    assert_eq!(o.calls_of(fake_llm::RequestKind::Compaction), 1, "the prompt neared the window, so it was compacted once");
    assert!(o.has(|e| matches!(e, EngineEvent::MessageCreated { role: MessageRole::Summary, .. })), "the summary is kept and shown as a marker");
    assert!(o.has(|e| matches!(e, EngineEvent::Activity { phase: ActivityPhase::Compacting, .. })));
    assert_eq!(o.end_reason, Some(EndReason::VerifiedDone));
    assert!(h.store.session(&o.session).unwrap().tokens.compaction > 0, "compaction tokens are counted apart");
}

/// One read of a big file is cut, in what the model is sent, to half its context window, with
/// how to read the rest: 256 KB went whole to a model of a 32k window, a request twice its size
/// that no compaction could shrink (the newest turns are kept whole).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_output_longer_than_half_the_window_is_cut_in_what_the_model_is_sent() {
    let h = Harness::new(
        rules(json!([
            evaluator(done_verdict()),
            agent(json!({"any_message_contains": "cut here"}), json!({"text": DONE})),
            agent(json!({}), json!({"tool_calls": [{"name": "read_file", "arguments": {"path": "big.txt"}}]})),
        ])),
        Setup { context_window: 32_000, ..Default::default() },
    )
    .await;
    h.write("big.txt", &"lorem ipsum dolor sit amet ".repeat(4_000));
    let o = h.run("read big.txt and tell me about it").await;
    assert_eq!(o.end_reason, Some(EndReason::VerifiedDone));
    let second = o.requests.iter().filter(|r| r.kind == fake_llm::RequestKind::Agent).nth(1).expect("the model was asked after the read");
    let body = second.body.to_string();
    assert!(body.contains("cut here: the output has 108000 characters"), "the note says how much there was");
    assert!(body.len() < 64_000 + 20_000, "the request holds half the window of it, not all of it: {} bytes", body.len());
    let whole = o.has(|e| matches!(e, EngineEvent::ToolCall { output: Some(out), .. } if out.len() >= 108_000));
    assert!(whole, "the history keeps the whole output");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_session_resumes_without_rerunning_the_tool_call_that_was_running() {
    let mut setup = Setup::default();
    allow_shell(&mut setup);
    let h = Harness::new(
        rules(json!([
            evaluator(done_verdict()),
            agent(
                json!({"any_message_contains": "outcome of this call is unknown"}),
                json!({"text": "The command's outcome is unknown; ran.txt is not there, so I stop here and report it."})
            ),
            agent(json!({}), json!({"tool_calls": [{"name": "run_command", "arguments": {"command": "sleep 20; touch ran.txt"}}]})),
        ])),
        setup,
    )
    .await;
    let (sid, handle) = h.engine.start_session("run the long job", &h.ws()).unwrap();
    let mut sub = Box::pin(h.store.subscribe(sid.clone(), 0));
    while let Some(e) = sub.next().await {
        if matches!(e.unwrap().event, EngineEvent::ToolCall { state: ToolState::Running, .. }) {
            break;
        }
    }
    // The process "dies": the run stops where it is, with no goodbye.
    handle.abort();
    let _ = handle.await;
    // A new process opens the same data folder.
    let mut store2 = Store::open(&h.data.path().join("history.db"), Arc::new(finishline_engine::clock::SystemClock)).unwrap();
    store2.set_lease_ttl_ms(0);
    let store2 = Arc::new(store2);
    assert_eq!(store2.recover().unwrap(), vec![sid.clone()]);
    assert_eq!(store2.session(&sid).unwrap().status, SessionStatus::Interrupted);
    let engine2 = Engine::new(store2.clone(), h.engine.config.clone());
    let run = engine2.send_message(&sid, "").unwrap();
    tokio::time::timeout(Duration::from_secs(30), run).await.unwrap().unwrap();
    let s = store2.session(&sid).unwrap();
    assert_eq!(s.status, SessionStatus::AwaitingReview, "the resumed run reached a decision");
    let events = store2.events(&sid, 0).unwrap();
    assert!(events.iter().any(|e| matches!(e.event, EngineEvent::RunStarted { trigger: RunTrigger::Resume })));
    let runs_of_command = h.server.requests().iter().filter(|r| r.kind == fake_llm::RequestKind::Agent).count();
    assert_eq!(runs_of_command, 2, "one step before the crash, one after; the command was not asked for again");
    assert!(h.read("ran.txt").is_none(), "the unknown call was not run again");
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>(), "resume continues the same gap-free log");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_approve_approves_only_a_verified_completion() {
    let h = Harness::new(
        rules(json!([
            evaluator(done_verdict()),
            agent(json!({"last_message_contains": "Created"}), json!({"text": DONE})),
            agent(json!({}), json!({"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "A"}}]}))
        ])),
        Setup { auto_approve: true, ..Default::default() },
    )
    .await;
    let o = h.run("write a.txt").await;
    assert_eq!(o.status, SessionStatus::Completed);
    assert!(o.has(|e| matches!(e, EngineEvent::ReviewResolved { by: DecidedBy::Auto, decision: Decision::Approve, .. })), "the approval is recorded as auto");

    let h = Harness::new(
        rules(json!([
            evaluator(json!({"text": "garbage"})),
            agent(json!({"last_message_contains": "Created"}), json!({"text": DONE})),
            agent(json!({}), json!({"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "A"}}]}))
        ])),
        Setup { auto_approve: true, ..Default::default() },
    )
    .await;
    let o = h.run("write a.txt").await;
    assert_eq!((o.status, o.end_reason), (SessionStatus::AwaitingReview, Some(EndReason::Unverified)), "an unverified completion keeps waiting for a person");
}

/// A run that waits for review (its verdict unusable), a comment on a.txt line 1 ("say pear
/// instead") and Request changes, with auto-approve on; the follow-up's evaluator answers
/// `follow_up_verdict`. How the follow-up ended.
async fn comment_then_follow_up(follow_up_verdict: serde_json::Value) -> (Harness, Outcome) {
    let h = Harness::new(
        rules(json!([
            {"when": {"kind": "evaluator", "any_message_contains": "say pear instead"}, "reply": follow_up_verdict},
            // The first run's: unusable, so it waits for the person rather than landing.
            evaluator(json!({"text": "garbage"})),
            agent(json!({"last_message_contains": "say pear instead"}), json!({"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "pear\n"}}]})),
            agent(json!({"last_message_contains": "Created"}), json!({"text": DONE})),
            agent(json!({"last_message_contains": "Wrote"}), json!({"text": DONE})),
            agent(json!({}), json!({"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "apple\n"}}]}))
        ])),
        Setup { auto_approve: true, ..Default::default() },
    )
    .await;
    let o = h.run("write a.txt").await;
    assert_eq!((o.status, o.end_reason), (SessionStatus::AwaitingReview, Some(EndReason::Unverified)));
    let review = o.review_id();
    let comment = finishline_engine::judge::criteria::Comment {
        id: String::new(),
        path: "a.txt".into(),
        start_line: 1,
        end_line: 1,
        side: Default::default(),
        quote: String::new(),
        text: "say pear instead".into(),
    };
    h.engine.comment(&review, comment).unwrap();
    h.engine.submit_review(&review, Decision::RequestChanges, None, false, false, DecidedBy::Person).unwrap();
    let o = h.wait_idle(&o.session).await;
    assert_eq!(h.read("a.txt").as_deref(), Some("pear\n"), "the follow-up did the work");
    (h, o)
}

/// The person's comments are criteria the judge checks: a follow-up the evaluator called done
/// without a word on a comment waits for the person, however auto-approve is set.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_approve_leaves_a_follow_up_to_the_person_when_a_comment_of_theirs_was_not_confirmed_met() {
    let (_h, o) = comment_then_follow_up(done_verdict()).await;
    assert_eq!((o.status, o.end_reason), (SessionStatus::AwaitingReview, Some(EndReason::VerifiedDone)), "verified done, yet not landed");
    let why = o
        .events
        .iter()
        .rev()
        .find_map(|e| if let EngineEvent::ReviewRequested { auto_approve: Some(a), .. } = &e.event { Some(a.clone()) } else { None })
        .expect("the review says what auto-approve did");
    assert!(!why.approved, "{why:?}");
    assert_eq!(why.reason, "1 of your comments was not confirmed met: check it yourself");
}

/// …and one the evaluator confirmed met is no reason to wait: auto-approve lands it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_approve_lands_a_follow_up_whose_comments_the_evaluator_confirmed_met() {
    let met = serde_json::json!({"done": true, "summary": "a.txt says pear", "remaining": [], "continuation_prompt": "", "is_stuck": false, "stuck_reason": "",
        "comments": [{"n": 1, "addressed": true, "evidence": "a.txt reads pear"}]});
    let (_h, o) = comment_then_follow_up(json!({"text": met.to_string()})).await;
    assert_eq!(o.status, SessionStatus::Completed, "every comment met: approved as before");
    assert!(o.has(|e| matches!(e, EngineEvent::ReviewResolved { by: DecidedBy::Auto, decision: Decision::Approve, .. })));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compacting_again_with_nothing_between_is_stuck() {
    let h = Harness::new(
        rules(json!([
            {"when": {"kind": "compaction"}, "reply": {"text": "Summary: the agent keeps reading big.txt."}},
            {"when": {"kind": "agent"}, "reply": {"fault": {"type": "status", "status": 400, "body": "{\"error\": {\"message\": \"This model's maximum context length is 8000 tokens\"}}"}}, "times": 1},
            agent(json!({}), json!({"tool_calls": [{"name": "read_file", "arguments": {"path": "big.txt"}}]})),
        ])),
        Setup { context_window: 6_000, ..Default::default() },
    )
    .await;
    h.write("big.txt", &"lorem ipsum dolor sit amet ".repeat(900));
    let o = h.run("read big.txt again and again").await;
    assert_eq!(o.end_reason, Some(EndReason::Stuck), "a compaction right after a compaction means the context cannot be made to fit");
    assert!(o.calls_of(fake_llm::RequestKind::Compaction) >= 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_during_verification_stops_the_verify_command() {
    let mut setup = Setup { verify_commands: vec!["sleep 30; touch verified.txt".into()], ..Default::default() };
    allow_shell(&mut setup);
    let h = Harness::new(
        rules(json!([
            evaluator(done_verdict()),
            agent(json!({"last_message_contains": "Created"}), json!({"text": DONE})),
            agent(json!({}), json!({"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "A"}}]})),
        ])),
        setup,
    )
    .await;
    let (sid, handle) = h.engine.start_session("write a.txt", &h.ws()).unwrap();
    let mut sub = Box::pin(h.store.subscribe(sid.clone(), 0));
    while let Some(e) = sub.next().await {
        if matches!(e.unwrap().event, EngineEvent::Activity { phase: ActivityPhase::Verifying, .. }) {
            break;
        }
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    h.engine.cancel(&sid);
    tokio::time::timeout(Duration::from_secs(5), handle).await.expect("cancel reaches verification").unwrap();
    let events = h.store.events(&sid, 0).unwrap();
    assert!(matches!(events.last().unwrap().event, EngineEvent::StatusChanged { status: SessionStatus::Cancelled, .. }));
    assert!(!events.iter().any(|e| matches!(e.event, EngineEvent::Evaluation { .. })), "nothing is evaluated after cancel");
    assert!(h.read("verified.txt").is_none(), "the verify command was stopped");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_review_shows_the_cost_when_prices_are_set() {
    let mut prices = std::collections::BTreeMap::new();
    prices.insert("fake-model".to_string(), finishline_engine::config::settings::Price { input_per_mtok: 2.0, output_per_mtok: 10.0 });
    let h = Harness::new(
        rules(json!([
            {"when": {"kind": "evaluator"}, "reply": {"text": "{\"done\": true, \"summary\": \"ok\", \"remaining\": [], \"continuation_prompt\": \"\", \"is_stuck\": false, \"stuck_reason\": \"\"}", "usage": {"input": 100000, "output": 1000}}},
            agent(json!({"last_message_contains": "Created"}), json!({"text": DONE, "usage": {"input": 200000, "output": 5000}})),
            agent(json!({}), json!({"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "A"}}], "usage": {"input": 100000, "output": 5000}})),
        ])),
        Setup { prices, ..Default::default() },
    )
    .await;
    let o = h.run("write a.txt").await;
    let cost = o
        .events
        .iter()
        .find_map(|e| if let EngineEvent::ReviewRequested { cost_usd, .. } = &e.event { *cost_usd } else { None })
        .expect("a cost with prices set");
    // agent: 300k in × $2 + 10k out × $10 = 0.6 + 0.1; evaluator: 100k × $2 + 1k × $10 = 0.2 + 0.01
    assert!((cost - 0.91).abs() < 1e-9, "cost is priced per source from stored usage: {cost}");
}

/// A later round's cost is that round's usage, priced: the window took the difference of two
/// whole-session prices, each at the prices of its day, and a price raised between the rounds
/// was charged to the second round for the first round's tokens too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_later_rounds_cost_is_its_own_usage_priced_even_when_prices_changed_between_rounds() {
    let price = |input: f64| {
        let mut prices = std::collections::BTreeMap::new();
        prices.insert("fake-model".to_string(), finishline_engine::config::settings::Price { input_per_mtok: input, output_per_mtok: 0.0 });
        prices
    };
    let h = Harness::new(
        rules(json!([
            {"when": {"kind": "evaluator"}, "reply": {"text": "{\"done\": true, \"summary\": \"ok\", \"remaining\": [], \"continuation_prompt\": \"\", \"is_stuck\": false, \"stuck_reason\": \"\"}", "usage": {"input": 0, "output": 0}}},
            agent(json!({"last_message_contains": "also add grapes"}), json!({"tool_calls": [{"name": "write_file", "arguments": {"path": "b.txt", "content": "B"}}], "usage": {"input": 1000, "output": 0}})),
            agent(json!({"last_message_contains": "Created b.txt"}), json!({"text": DONE, "usage": {"input": 1000, "output": 0}})),
            agent(json!({"last_message_contains": "Created a.txt"}), json!({"text": DONE, "usage": {"input": 4000, "output": 0}})),
            agent(json!({}), json!({"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "A"}}], "usage": {"input": 5000, "output": 0}})),
        ])),
        Setup { prices: price(1.0), ..Default::default() },
    )
    .await;
    let o = h.run("write a.txt").await;
    let first = o.events.iter().find_map(|e| if let EngineEvent::ReviewRequested { cost_usd, .. } = &e.event { *cost_usd } else { None }).unwrap();
    assert!((first - 0.009).abs() < 1e-9, "round 1: 9,000 tokens at $1 a million: {first}");
    // The person raises the price; the next round runs on an engine built with it, as the app
    // builds each run's engine from the settings of the moment.
    let raised =
        finishline_engine::agent::Engine::on(h.engine.runtime(), finishline_engine::agent::EngineConfig { prices: price(10.0), ..h.engine.config.clone() });
    raised.submit_review(&o.review_id(), Decision::RequestChanges, Some("also add grapes".into()), false, false, DecidedBy::Person).unwrap();
    let o2 = h.wait_idle(&o.session).await;
    let (round, session) = o2
        .events
        .iter()
        .rev()
        .find_map(|e| if let EngineEvent::ReviewRequested { round_cost_usd, cost_usd, .. } = &e.event { Some((*round_cost_usd, *cost_usd)) } else { None })
        .unwrap();
    let round = round.expect("a later round's cost, with prices set");
    assert!((round - 0.02).abs() < 1e-9, "round 2: its own 2,000 tokens at $10 a million, not the difference of the two totals (0.11 - 0.009): {round}");
    assert!((session.unwrap() - 0.11).abs() < 1e-9, "the session's cost is all of it at today's prices");
    let first_review =
        o2.events.iter().find_map(|e| if let EngineEvent::ReviewRequested { round_cost_usd, .. } = &e.event { Some(*round_cost_usd) } else { None });
    assert_eq!(first_review, Some(None), "the first review is the whole session: no round of its own");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_step_says_how_many_continuations_the_run_has_used_of_its_budget() {
    // The window shows "Cycle n/max" from the first step, not only after the first continuation.
    let h = Harness::new(
        rules(json!([
            {"when": {"kind": "evaluator"}, "reply": not_done_verdict(&["write b.txt"], "b.txt is missing"), "times": 1},
            evaluator(done_verdict()),
            agent(json!({"last_message_contains": "b.txt is missing"}), json!({"tool_calls": [{"name": "write_file", "arguments": {"path": "b.txt", "content": "B"}}]})),
            agent(json!({"last_message_contains": "Created"}), json!({"text": DONE})),
            agent(json!({}), json!({"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "A"}}]})),
        ])),
        Setup::default(),
    )
    .await;
    let o = h.run("write a.txt and b.txt").await;
    let cycles: Vec<Option<CycleCount>> =
        o.events.iter().filter_map(|e| if let EngineEvent::StepStarted { cycle, .. } = &e.event { Some(*cycle) } else { None }).collect();
    assert!(cycles.len() >= 2, "a step, then the steps after the evaluator sent it back: {cycles:?} {:?} {:?}", o.status, o.continuations());
    let first = cycles[0].expect("the first step already carries the budget");
    assert_eq!(first.used, 0, "nothing used before the first continuation");
    assert!(first.max > 0, "the budget is known from the start");
    assert_eq!(cycles.last().unwrap().map(|c| c.used), Some(1), "after the evaluator's continuation, one of the budget is used");
}

/// A request the provider refused before any model read it cost nothing: the session counts no
/// tokens for it. An estimate stands only for a step whose answer began and was cut.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_refused_before_any_model_read_it_counts_no_tokens() {
    let h = Harness::new(
        rules(json!([{"when": {"kind": "agent"}, "reply": {"fault": {"type": "status", "status": 400, "body": "{\"error\": {\"message\": \"unknown field\"}}"}}}])),
        Setup::default(),
    )
    .await;
    let o = h.run("write a.txt").await;
    assert_eq!(o.status, SessionStatus::Failed);
    let tokens = h.store.session(&o.session).unwrap().tokens;
    assert_eq!(tokens.agent, 0, "the refused request is not counted as if a model had read it: {tokens:?}");
}

/// An agent that writes notes.md, then says it is done; the evaluator agrees.
fn writes_notes() -> fake_llm::Scenario {
    rules(json!([
        evaluator(done_verdict()),
        agent(json!({"last_message_contains": "Created notes.md"}), json!({"text": DONE})),
        agent(json!({}), json!({"tool_calls": [{"name": "write_file", "arguments": {"path": "notes.md", "content": "- apple"}}]})),
    ]))
}

/// A follow-up message or feedback over the task's own limit is refused with the limit and the
/// way on, before anything is recorded; the session stays as it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follow_up_or_feedback_over_a_megabyte_is_refused_and_nothing_changes() {
    let h = Harness::new(writes_notes(), Setup::default()).await;
    let o = h.run("create notes.md").await;
    assert_eq!(o.status, SessionStatus::AwaitingReview);
    let huge = "x".repeat(2_000_000);
    let before = h.store.events(&o.session, 0).unwrap().len();
    let e = h.engine.submit_review(&o.review_id(), Decision::RequestChanges, Some(huge.clone()), false, false, DecidedBy::Person).unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidInput);
    assert!(e.to_string().contains("1 MB") && e.to_string().contains("file in the workspace"), "{e}");
    h.engine.submit_review(&o.review_id(), Decision::Approve, None, false, false, DecidedBy::Person).unwrap();
    let before_message = h.store.events(&o.session, 0).unwrap().len();
    assert!(before_message > before);
    let e = h.engine.send_message(&o.session, &huge).unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidInput);
    assert!(e.to_string().contains("1 MB"), "{e}");
    assert_eq!(h.store.events(&o.session, 0).unwrap().len(), before_message, "nothing was recorded");
    assert_eq!(h.store.session(&o.session).unwrap().status, SessionStatus::Completed);
}

/// Comments given together (the CLI's repeated --comment) are recorded together or not at all:
/// one that cannot be taken leaves none of the others on the review to be sent later unseen.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn comments_given_together_are_recorded_together_or_not_at_all() {
    use finishline_engine::judge::criteria::parse_cli_comment;
    let h = Harness::new(writes_notes(), Setup::default()).await;
    let o = h.run("create notes.md").await;
    let review = o.review_id();
    let good = parse_cli_comment("notes.md:1=say pear", "cli1".into()).unwrap();
    let elsewhere = parse_cli_comment("other.md:1=and this", "cli2".into()).unwrap();
    let e = h.engine.comments(&review, vec![good.clone(), elsewhere]).unwrap_err();
    assert!(e.to_string().contains("other.md"), "{e}");
    let comments = |h: &Harness| h.store.events(&o.session, 0).unwrap().iter().filter(|e| matches!(e.event, EngineEvent::ReviewComment { .. })).count();
    assert_eq!(comments(&h), 0, "the good one was not kept either");
    h.engine.comments(&review, vec![good]).unwrap();
    assert_eq!(comments(&h), 1);
}

/// A stop the front end held before its approve began (Ctrl-C a moment before the landing
/// existed) stops the landing as Stop does: nothing is checked, nothing lands.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_given_before_the_approve_began_stops_its_landing() {
    let setup = Setup { verify_commands: vec!["if [ -f moved.txt ]; then sleep 60; fi; test -f notes.md".into()], ..Default::default() };
    let h = Harness::new(writes_notes(), setup).await;
    let git = |args: &[&str]| git_in(&h.ws(), args);
    let o = waiting_while_the_branch_moved(&h).await;
    let stop = finishline_engine::CancellationToken::new();
    stop.cancel();
    let choice =
        finishline_engine::agent::ReviewChoice { stop: Some(stop), ..finishline_engine::agent::ReviewChoice::new(Decision::Approve, DecidedBy::Person) };
    let (engine, review) = (h.engine.clone(), o.review_id());
    let outcome = tokio::time::timeout(Duration::from_secs(15), tokio::task::spawn_blocking(move || engine.decide(&review, choice)))
        .await
        .expect("stopped at once")
        .unwrap()
        .unwrap();
    assert!(matches!(outcome, ReviewOutcome::LandingBlocked { reason: LandingBlock::Stopped, .. }), "{outcome:?}");
    assert_eq!(git(&["log", "-1", "--format=%s", "main"]), "moved", "nothing landed");
    assert!(!h.engine.stop_landing(&o.session), "and nothing is left registered");
}

/// An approve waiting behind another decision on the same session (a terminal's approve, itself
/// waiting its landing's turn) is stopped by Stop: the window's Stop did nothing until the other
/// ended, and quitting waited for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_reaches_an_approve_waiting_behind_another_decision_on_the_session() {
    let h = Harness::new(writes_notes(), Setup::default()).await;
    let git = |args: &[&str]| git_in(&h.ws(), args);
    git(&["init", "-q", "-b", "main"]);
    git(&["commit", "-q", "--allow-empty", "-m", "init"]);
    let o = h.run("create notes.md").await;
    assert_eq!(o.status, SessionStatus::AwaitingReview);
    // Another process's decision holds the session.
    let lock = h.data.path().join("locks").join(format!("{}.lock", o.session));
    let (held_tx, held_rx) = std::sync::mpsc::channel();
    let (free_tx, free_rx) = std::sync::mpsc::channel::<()>();
    let holder = std::thread::spawn(move || {
        let _held = finishline_engine::workspace::lock::FolderLock::acquire(&lock).unwrap();
        held_tx.send(()).unwrap();
        let _ = free_rx.recv();
    });
    held_rx.recv().unwrap();
    let stop = finishline_engine::CancellationToken::new();
    let choice = finishline_engine::agent::ReviewChoice {
        stop: Some(stop.clone()),
        ..finishline_engine::agent::ReviewChoice::new(Decision::Approve, DecidedBy::Person)
    };
    let (engine, review) = (h.engine.clone(), o.review_id());
    let approving = tokio::task::spawn_blocking(move || engine.decide(&review, choice));
    tokio::time::sleep(Duration::from_millis(500)).await;
    stop.cancel();
    let outcome = tokio::time::timeout(Duration::from_secs(5), approving).await.expect("Stop ends the wait").unwrap().unwrap();
    assert!(matches!(outcome, ReviewOutcome::LandingBlocked { reason: LandingBlock::StoppedBehindAnother, .. }), "{outcome:?}");
    free_tx.send(()).unwrap();
    holder.join().unwrap();
    assert_eq!(h.store.session(&o.session).unwrap().status, SessionStatus::AwaitingReview, "the review still waits");
    assert_eq!(git(&["log", "-1", "--format=%s", "main"]), "init", "nothing landed");
}

/// A comment on lines the file does not have (a typo in `--comment notes.md:99=…`) is refused
/// with how many lines the file has: it would reach the agent as a criterion quoting nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_comment_past_the_end_of_its_file_is_refused_with_the_files_length() {
    use finishline_engine::judge::criteria::parse_cli_comment;
    let h = Harness::new(writes_notes(), Setup::default()).await;
    let o = h.run("create notes.md").await;
    let past = parse_cli_comment("notes.md:99=say pear", "cli1".into()).unwrap();
    let e = h.engine.comments(&o.review_id(), vec![past]).unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidInput);
    assert!(e.to_string().contains("notes.md has 1 line") && e.to_string().contains("99"), "{e}");
    let ending_past = parse_cli_comment("notes.md:1-3=say pear", "cli2".into()).unwrap();
    assert!(h.engine.comments(&o.review_id(), vec![ending_past]).is_err(), "a range that runs past the end too");
    let on_it = parse_cli_comment("notes.md:1=say pear", "cli3".into()).unwrap();
    assert_eq!(h.engine.comments(&o.review_id(), vec![on_it]).unwrap()[0].quote, "- apple");
}

/// git in `dir` as the person, its output trimmed; the test fails with git's words.
fn git_in(dir: &std::path::Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git").arg("-C").arg(dir).args(["-c", "user.name=P", "-c", "user.email=p@p"]).args(args).output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// "create notes.md" run in a repository on `main`, waiting for review, and then the person's
/// `main` moved on (a commit of moved.txt): an approve rebases the task and checks it again.
async fn waiting_while_the_branch_moved(h: &Harness) -> Outcome {
    let git = |args: &[&str]| git_in(&h.ws(), args);
    git(&["init", "-q", "-b", "main"]);
    h.write("README.md", "hello\n");
    git(&["add", "."]);
    git(&["commit", "-qm", "init"]);
    let o = h.run("create notes.md").await;
    h.write("moved.txt", "moved\n");
    git(&["add", "moved.txt"]);
    git(&["commit", "-qm", "moved"]);
    o
}

/// The checks an approve runs again on a branch that moved can take minutes: the person can
/// stop them (the window's Stop, as for a run), and then nothing lands and the review waits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_the_checks_of_a_landing_lands_nothing_and_the_review_waits() {
    let setup = Setup { verify_commands: vec!["if [ -f moved.txt ]; then sleep 60; fi; test -f notes.md".into()], ..Default::default() };
    let h = Harness::new(writes_notes(), setup).await;
    let git = |args: &[&str]| git_in(&h.ws(), args);
    // The person's branch moves meanwhile, so the approve checks again, slowly.
    let o = waiting_while_the_branch_moved(&h).await;
    assert_eq!(o.status, SessionStatus::AwaitingReview);
    let (engine, review) = (h.engine.clone(), o.review_id());
    let approving = tokio::task::spawn_blocking(move || engine.submit_review(&review, Decision::Approve, None, false, false, DecidedBy::Person));
    let t = std::time::Instant::now();
    while !h.store.events(&o.session, 0).unwrap().iter().any(|e| matches!(&e.event, EngineEvent::Activity { detail, .. } if detail.starts_with("after moving")))
    {
        assert!(t.elapsed() < Duration::from_secs(30), "the checks started");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(h.engine.cancel(&o.session), finishline_engine::agent::Stop::Stopped, "there was something to stop");
    let outcome = tokio::time::timeout(Duration::from_secs(15), approving).await.expect("stopped at once").unwrap().unwrap();
    assert!(matches!(outcome, ReviewOutcome::LandingBlocked { reason: LandingBlock::Stopped, .. }), "{outcome:?}");
    assert_eq!(git(&["log", "-1", "--format=%s", "main"]), "moved", "nothing landed");
    assert_eq!(h.store.session(&o.session).unwrap().status, SessionStatus::AwaitingReview, "the review waits");
}

/// A landing whose checks on the moved branch failed, or were stopped, leaves the task rebased:
/// approving again runs the checks again, never lands what was not checked there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approving_again_after_the_checks_on_a_moved_branch_failed_or_stopped_runs_them_again() {
    let marks = tempfile::tempdir().unwrap();
    let (fail, slow) = (marks.path().join("fail"), marks.path().join("slow"));
    std::fs::write(&fail, "").unwrap();
    let check = format!("if [ -f moved.txt ] && [ -f {s} ]; then sleep 60; fi; ! [ -f moved.txt ] || ! [ -f {f} ]", s = slow.display(), f = fail.display());
    let h = Harness::new(writes_notes(), Setup { verify_commands: vec![check], ..Default::default() }).await;
    let git = |args: &[&str]| git_in(&h.ws(), args);
    let o = waiting_while_the_branch_moved(&h).await;
    let approve = |h: &Harness| h.engine.submit_review(&o.review_id(), Decision::Approve, None, false, false, DecidedBy::Person).unwrap();
    let checks = |h: &Harness| {
        h.store
            .events(&o.session, 0)
            .unwrap()
            .iter()
            .filter(|e| matches!(&e.event, EngineEvent::Activity { detail, .. } if detail.starts_with("after moving")))
            .count()
    };
    let outcome = approve(&h);
    assert!(matches!(outcome, ReviewOutcome::LandingBlocked { reason: LandingBlock::VerificationFailed, .. }), "{outcome:?}");
    let outcome = approve(&h);
    assert!(
        matches!(outcome, ReviewOutcome::LandingBlocked { reason: LandingBlock::VerificationFailed, .. }),
        "the checks ran again and failed again: {outcome:?}"
    );
    assert_eq!(checks(&h), 2);
    assert_eq!(git(&["log", "-1", "--format=%s", "main"]), "moved", "nothing landed");
    // Now slow (and passing): stopped, then approved again, the checks run a third time.
    std::fs::remove_file(&fail).unwrap();
    std::fs::write(&slow, "").unwrap();
    let (engine, review) = (h.engine.clone(), o.review_id());
    let approving = tokio::task::spawn_blocking(move || engine.submit_review(&review, Decision::Approve, None, false, false, DecidedBy::Person));
    let t = std::time::Instant::now();
    while checks(&h) < 3 {
        assert!(t.elapsed() < Duration::from_secs(30), "the checks started again");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(h.engine.cancel(&o.session), finishline_engine::agent::Stop::Stopped);
    let outcome = tokio::time::timeout(Duration::from_secs(15), approving).await.expect("stopped at once").unwrap().unwrap();
    assert!(matches!(outcome, ReviewOutcome::LandingBlocked { reason: LandingBlock::Stopped, .. }), "{outcome:?}");
    std::fs::remove_file(&slow).unwrap();
    let outcome = approve(&h);
    assert!(matches!(outcome, ReviewOutcome::Decided { .. }), "{outcome:?}");
    assert_eq!(checks(&h), 4, "the stopped checks ran again before it landed");
    assert_eq!(git(&["log", "-1", "--format=%s", "main"]).lines().count(), 1);
    assert!(h.ws().join("notes.md").exists(), "landed");
}

/// Stop in the window while auto-approve lands the run's task stops the landing's checks on the
/// moved branch too, not only the run: nothing lands, and the review waits for the person.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_while_auto_approve_lands_stops_the_landing_too() {
    let setup = Setup { auto_approve: true, verify_commands: vec!["if [ -f moved.txt ]; then sleep 60; fi; test -f notes.md".into()], ..Default::default() };
    let h = Harness::new(
        rules(json!([
            evaluator(done_verdict()),
            agent(json!({"last_message_contains": "Created notes.md"}), json!({"text": DONE, "chunks": 10, "chunk_delay_ms": 150})),
            agent(json!({}), json!({"tool_calls": [{"name": "write_file", "arguments": {"path": "notes.md", "content": "- apple"}}]})),
        ])),
        setup,
    )
    .await;
    let git = |args: &[&str]| git_in(&h.ws(), args);
    git(&["init", "-q", "-b", "main"]);
    h.write("README.md", "hello\n");
    git(&["add", "."]);
    git(&["commit", "-qm", "init"]);
    let (sid, _run) = h.engine.start_session("create notes.md", &h.ws()).unwrap();
    let seen = |what: &dyn Fn(&EngineEvent) -> bool| h.store.events(&sid, 0).unwrap().iter().any(|e| what(&e.event));
    let t = std::time::Instant::now();
    while !seen(&|e| matches!(e, EngineEvent::ToolCall { state: ToolState::Done, .. })) {
        assert!(t.elapsed() < Duration::from_secs(30), "the agent wrote its file");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The person's branch moves while the agent finishes: auto-approve rebases and checks again.
    h.write("moved.txt", "moved\n");
    git(&["add", "moved.txt"]);
    git(&["commit", "-qm", "moved"]);
    while !seen(&|e| matches!(e, EngineEvent::Activity { detail, .. } if detail.starts_with("after moving"))) {
        assert!(t.elapsed() < Duration::from_secs(30), "auto-approve's checks started");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(h.engine.cancel(&sid), finishline_engine::agent::Stop::Stopped);
    let asked = std::time::Instant::now();
    while !seen(&|e| matches!(e, EngineEvent::LandingBlocked { reason: LandingBlock::Stopped, .. })) {
        assert!(asked.elapsed() < Duration::from_secs(20), "the landing stopped at once");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(git(&["log", "-1", "--format=%s", "main"]), "moved", "nothing landed");
    let o = h.wait_idle(&sid).await;
    assert_eq!(o.status, SessionStatus::AwaitingReview, "the review waits for the person");
}

/// A stop asked the moment an approve starts (Ctrl-C at the terminal, Stop in the window), while
/// it waits its turn behind another decision on the same session, stops its landing too: the
/// checks on the moved branch never run and nothing lands.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_asked_while_an_approve_waits_its_turn_stops_the_landing_before_its_checks() {
    let setup = Setup { verify_commands: vec!["if [ -f moved.txt ]; then sleep 60; fi; test -f notes.md".into()], ..Default::default() };
    let h = Harness::new(writes_notes(), setup).await;
    let git = |args: &[&str]| git_in(&h.ws(), args);
    let o = waiting_while_the_branch_moved(&h).await;
    // Another decision on this session holds its turn (another process, or a click just before).
    let (held, approving) = approve_stopped_behind_another_decision(&h, &o).await;
    drop(held);
    let outcome = tokio::time::timeout(Duration::from_secs(15), approving).await.expect("stopped at once").unwrap().unwrap();
    // Stopped while it waited, or as its landing began once the other let go.
    let stopped = matches!(outcome, ReviewOutcome::LandingBlocked { reason: LandingBlock::Stopped | LandingBlock::StoppedBehindAnother, .. });
    assert!(stopped, "{outcome:?}");
    assert_eq!(git(&["log", "-1", "--format=%s", "main"]), "moved", "nothing landed");
    assert_eq!(h.store.session(&o.session).unwrap().status, SessionStatus::AwaitingReview, "the review waits");
    let checked =
        h.store.events(&o.session, 0).unwrap().iter().any(|e| matches!(&e.event, EngineEvent::Activity { detail, .. } if detail.starts_with("after moving")));
    assert!(!checked, "the checks on the moved branch did not start");
}

/// Stopped while another decision on the task still holds it (a terminal's approve, landing):
/// only this approve stops, and it says so. "Nothing landed" read as the task's outcome, and the
/// other decision then landed it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approve_stopped_behind_another_decision_says_that_decision_goes_on() {
    let h = Harness::new(writes_notes(), Setup::default()).await;
    let o = waiting_while_the_branch_moved(&h).await;
    let (held, approving) = approve_stopped_behind_another_decision(&h, &o).await;
    let outcome = tokio::time::timeout(Duration::from_secs(15), approving).await.expect("stopped at once").unwrap().unwrap();
    drop(held);
    let ReviewOutcome::LandingBlocked { reason: LandingBlock::StoppedBehindAnother, detail, .. } = outcome else { panic!("{outcome:?}") };
    assert!(detail.contains("another decision on this task") && detail.contains("goes on"), "the other decision is not said stopped: {detail}");
    assert!(!detail.contains("nothing landed"), "nor is its outcome foretold: {detail}");
}

/// Another decision on the session holds its turn (the lock returned); the person's approve
/// starts behind it and is stopped as soon as it has begun (it registers its landing first thing).
async fn approve_stopped_behind_another_decision(
    h: &Harness,
    o: &Outcome,
) -> (finishline_engine::workspace::lock::FolderLock, tokio::task::JoinHandle<finishline_engine::Result<ReviewOutcome>>) {
    let turn = h.data.path().join("locks").join(format!("{}.lock", o.session));
    let held = finishline_engine::workspace::lock::FolderLock::acquire(&turn).unwrap();
    let (engine, review) = (h.engine.clone(), o.review_id());
    let approving = tokio::task::spawn_blocking(move || engine.submit_review(&review, Decision::Approve, None, false, false, DecidedBy::Person));
    let t = std::time::Instant::now();
    while !h.engine.stop_landing(&o.session) {
        assert!(t.elapsed() < Duration::from_secs(10), "the approve under way had a landing to stop");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    (held, approving)
}

/// Two approves of one task at once in one process (two front ends' clicks, or a click and an
/// auto-approve): each is stopped by its own front end's stop, never by the other's. Here the
/// second one's stop comes while both wait their turn; the first lands nothing for its own
/// reason (its checks fail on the moved branch) and the second ends stopped, before its checks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_approves_of_one_task_at_once_are_each_stopped_only_by_their_own_stop() {
    let setup = Setup { verify_commands: vec!["test ! -f moved.txt".into()], ..Default::default() };
    let h = Harness::new(writes_notes(), setup).await;
    let o = waiting_while_the_branch_moved(&h).await;
    let turn = h.data.path().join("locks").join(format!("{}.lock", o.session));
    let held = finishline_engine::workspace::lock::FolderLock::acquire(&turn).unwrap();
    let approve = |stop: &finishline_engine::CancellationToken| {
        let choice = finishline_engine::agent::ReviewChoice {
            stop: Some(stop.clone()),
            ..finishline_engine::agent::ReviewChoice::new(Decision::Approve, DecidedBy::Person)
        };
        let (engine, review) = (h.engine.clone(), o.review_id());
        tokio::task::spawn_blocking(move || engine.decide(&review, choice))
    };
    let (first_stop, second_stop) = (finishline_engine::CancellationToken::new(), finishline_engine::CancellationToken::new());
    let first = approve(&first_stop);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let second = approve(&second_stop);
    tokio::time::sleep(Duration::from_millis(300)).await;
    second_stop.cancel();
    drop(held);
    let first = tokio::time::timeout(Duration::from_secs(30), first).await.expect("the first ended").unwrap().unwrap();
    let second = tokio::time::timeout(Duration::from_secs(30), second).await.expect("the second ended").unwrap().unwrap();
    assert!(
        matches!(second, ReviewOutcome::LandingBlocked { reason: LandingBlock::Stopped | LandingBlock::StoppedBehindAnother, .. }),
        "the second was stopped by its own stop: {second:?}"
    );
    assert!(
        matches!(first, ReviewOutcome::LandingBlocked { reason: LandingBlock::VerificationFailed, .. }),
        "the first was not stopped by the second's stop; its checks ran and failed: {first:?}"
    );
    assert!(!h.engine.stop_landing(&o.session), "nothing is left registered");
}

/// A comment on removed lines (`--comment notes.md:-1=…`) quotes the file as the run found it
/// and is checked against that; one on a side the file has no lines on (before a created file,
/// after a deleted one) is refused with the way to the other side.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_comment_on_removed_lines_quotes_the_file_as_it_was() {
    use finishline_engine::judge::criteria::parse_cli_comment;
    let scenario = rules(json!([
        evaluator(done_verdict()),
        agent(json!({"last_message_contains": "new.md"}), json!({"text": DONE})),
        agent(
            json!({}),
            json!({"tool_calls": [{"name": "write_file", "arguments": {"path": "notes.md", "content": "- apple\n"}}, {"name": "write_file", "arguments": {"path": "new.md", "content": "new\n"}}]})
        ),
    ]));
    let h = Harness::new(scenario, Setup::default()).await;
    h.write("notes.md", "- cherry\n- plum\n");
    let o = h.run("rewrite notes.md").await;
    let review = o.review_id();
    let on_removed = parse_cli_comment("notes.md:-2=keep the plum", String::new()).unwrap();
    assert_eq!(h.engine.comments(&review, vec![on_removed]).unwrap()[0].quote, "- plum");
    let past = parse_cli_comment("notes.md:-3=and this", String::new()).unwrap();
    let e = h.engine.comments(&review, vec![past]).unwrap_err();
    assert!(e.to_string().contains("notes.md has 2 lines (as the run found it)"), "{e}");
    let before_created = parse_cli_comment("new.md:-1=why", String::new()).unwrap();
    let e = h.engine.comments(&review, vec![before_created]).unwrap_err();
    assert!(e.to_string().contains("new.md is new") && e.to_string().contains("new.md:1"), "{e}");
}

/// The person need not sit out a provider's retry-after: Retry now asks the model again at
/// once, and the run goes on from there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_now_cuts_the_wait_before_the_next_try_short() {
    let h = Harness::new(
        rules(json!([
            evaluator(done_verdict()),
            {"when": {"kind": "agent"}, "reply": {"fault": {"type": "status", "status": 429, "headers": [["retry-after", "3"]]}}, "times": 1},
            agent(json!({}), json!({"text": "Hello! I am here and ready to help with your task."})),
        ])),
        Setup::default(),
    )
    .await;
    let (sid, handle) = h.engine.start_session("hi", &h.ws()).unwrap();
    let t = std::time::Instant::now();
    while h.store.session(&sid).unwrap().status != SessionStatus::Retry {
        assert!(t.elapsed() < std::time::Duration::from_secs(20), "the run waits to retry");
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let asked = std::time::Instant::now();
    assert!(h.engine.retry_now(&sid), "a run of this engine waited");
    tokio::time::timeout(std::time::Duration::from_secs(60), handle).await.unwrap().unwrap();
    assert!(asked.elapsed() < std::time::Duration::from_secs(2), "not the 3 s the provider asked for: {:?}", asked.elapsed());
    assert_eq!(h.outcome(&sid).status, SessionStatus::Idle, "the answer came");
    assert!(!h.engine.retry_now(&sid), "nothing waits now");
}
