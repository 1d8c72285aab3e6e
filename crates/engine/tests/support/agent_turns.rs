//! The scenarios every real agent must pass (acp_claude.rs, acp_gemini.rs, acp_codex.rs): a
//! task that writes a new file, judged not done, continued, finished and approved; a cancel in
//! the middle of its turn; not installed; no key.

#![allow(dead_code)]

use std::time::{Duration, Instant};

use finishline_engine::domain::*;
use finishline_engine::event::EngineEvent;
use serde_json::json;

use super::agents::*;
use super::harness::*;

/// What happened, for a failing assertion.
pub fn story(o: &Outcome) -> String {
    o.events
        .iter()
        .map(|e| match &e.event {
            EngineEvent::Error { code, message } => format!("error({code}: {message})"),
            EngineEvent::StatusChanged { status, message, .. } => format!("status({status:?} {message:?})"),
            EngineEvent::Continuation { source, .. } => format!("continuation({source:?})"),
            EngineEvent::ToolCall { tool, state, output, .. } => {
                format!("tool({tool} {state:?} {:?})", output.as_deref().map(|o| o.chars().take(120).collect::<String>()))
            }
            EngineEvent::TextDelta { text, .. } => format!("text({})", text.chars().take(80).collect::<String>()),
            other => other.type_name().to_string(),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

pub fn requests(o: &Outcome) -> String {
    o.requests.iter().map(|r| format!("{:?}/{:?} {:.100}", r.protocol, r.kind, r.last_message)).collect::<Vec<_>>().join("\n")
}

/// The harness with `real` doing the work, its HOME in `home`; the scenario is set after.
pub async fn harness(real: Real, home: &std::path::Path, key: Option<&'static str>) -> Harness {
    let home = home.to_path_buf();
    // Finishline's gate asks the person (who allows once, see `allow_once_as_asked`).
    Harness::new(
        rules(json!([])),
        Setup { agent_for: Some(Box::new(move |server| real.agent(server, &home, key))), permissions: Default::default(), ..Setup::default() },
    )
    .await
}

/// A person who allows each call once, as the agent asks (Gemini CLI asks before it writes).
pub fn allow_once_as_asked(h: &Harness, sid: &SessionId) -> tokio::task::JoinHandle<()> {
    let (store, engine, sid) = (h.store.clone(), h.engine.clone(), sid.clone());
    tokio::spawn(async move {
        let mut sub = Box::pin(store.subscribe(sid, 0));
        while let Some(Ok(e)) = futures_util::StreamExt::next(&mut sub).await {
            if let EngineEvent::PermissionRequested { request_id, .. } = e.event {
                let _ = engine.respond_permission(&request_id, PermissionDecision::AllowOnce);
            }
        }
    })
}

fn with_times(mut rule: serde_json::Value, times: u32) -> serde_json::Value {
    rule["times"] = json!(times);
    rule
}

pub async fn a_new_file_judged_not_done_is_continued_then_finished_and_approved(real: Real) {
    let home = tempfile::tempdir().unwrap();
    let h = harness(real, home.path(), Some("fake-key")).await;
    let ws = h.ws().canonicalize().unwrap();
    let mut r = real.side_calls();
    r.extend([
        finishline_evaluator(not_done_verdict(&["hello.txt must say hello world"], "Add the world: hello.txt must say hello world."), Some(1)),
        finishline_evaluator(done_verdict(), None),
        finishline_side_calls(),
        with_times(
            real.turn(json!({"last_message_contains": "must say hello world"}), json!({"tool_calls": [real.write(&ws, "hello.txt", "hello world\n")]})),
            1,
        ),
        real.turn(json!({"last_message_contains": real.wrote()}), json!({"text": DONE})),
        with_times(real.turn(json!({}), json!({"tool_calls": [real.write(&ws, "hello.txt", "hello\n")]})), 1),
        real.turn(json!({}), json!({"text": DONE})),
    ]);
    h.server.set_scenario(rules(json!(r)));
    let (sid, handle) = h.engine.start_session("Write hello.txt saying hello world", &h.ws()).unwrap();
    let person = allow_once_as_asked(&h, &sid);
    if tokio::time::timeout(Duration::from_secs(60), handle).await.is_err() {
        let o = h.outcome(&sid);
        panic!("the run did not end in time: {}\n{}", story(&o), requests(&o));
    }
    let o = h.outcome(&sid);
    assert_eq!(o.status, SessionStatus::AwaitingReview, "the finished, checked task waits for the person: {}\n{}", story(&o), requests(&o));
    assert_eq!(o.continuations(), vec![ContinuationSource::Evaluator], "judged not done once, then continued as a new turn: {}", story(&o));
    assert_eq!(
        h.read("hello.txt").as_deref(),
        Some("hello world\n"),
        "the agent's own write tool created the file, then the continuation finished it: {}",
        story(&o)
    );
    assert!(o.has(|e| matches!(e, EngineEvent::ToolCall { state: ToolState::Done, .. })), "its tool calls are shown as finished tool cards: {}", story(&o));
    assert!(o.has(|e| matches!(e, EngineEvent::TextDelta { text, .. } if text.contains("Done"))), "its text streams into the session");
    h.engine.submit_review(&o.review_id(), Decision::Approve, None, false, false, DecidedBy::Person).unwrap();
    assert_eq!(h.outcome(&sid).status, SessionStatus::Completed);
    person.abort();
}

pub async fn cancel_mid_turn_ends_its_whole_process_group_and_records_the_session_cancelled(real: Real) {
    let home = tempfile::tempdir().unwrap();
    let h = harness(real, home.path(), Some("fake-key")).await;
    let mut r = real.side_calls();
    r.extend([
        finishline_evaluator(done_verdict(), None),
        finishline_side_calls(),
        real.turn(json!({}), json!({"text": "Thinking it over slowly, one word after another, for a long while yet", "chunk_delay_ms": 1000})),
    ]);
    h.server.set_scenario(rules(json!(r)));
    let (sid, handle) = h.engine.start_session("Think slowly", &h.ws()).unwrap();
    let until = Instant::now() + Duration::from_secs(60);
    // Mid-turn: the agent's model call is streaming.
    while !h.server.requests().iter().any(|r| r.kind == fake_llm::RequestKind::Agent && r.protocol == real.protocol()) {
        assert!(Instant::now() < until, "the agent never asked its model: {}", story(&h.outcome(&sid)));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Its first words are in: the turn has something of its own to be resumed from.
    while !h.outcome(&sid).events.iter().any(|e| matches!(e.event, EngineEvent::TextDelta { .. })) {
        assert!(Instant::now() < until, "the agent never said anything: {}", story(&h.outcome(&sid)));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let groups = recorded_groups(h.data.path());
    assert!(!groups.is_empty(), "the agent runs in a recorded process group");
    let asked = Instant::now();
    assert_eq!(h.engine.cancel(&sid), finishline_engine::agent::Stop::Stopped);
    tokio::time::timeout(Duration::from_secs(30), handle).await.expect("cancel ends the run").unwrap();
    assert_eq!(h.outcome(&sid).status, SessionStatus::Cancelled, "{}", story(&h.outcome(&sid)));
    while groups.iter().any(|g| finishline_engine::process_groups::group_alive(*g)) {
        assert!(asked.elapsed() < Duration::from_secs(15), "every process of the agent is gone within 15 s of the cancel");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Resume, with no words of the person's: the agent is told to go on with the task. It was
    // sent an empty prompt, and answered it as if asked nothing.
    let mut r = real.side_calls();
    r.extend([finishline_evaluator(done_verdict(), None), finishline_side_calls(), real.turn(json!({}), json!({"text": DONE}))]);
    h.server.set_scenario(rules(json!(r)));
    let before = h.server.requests().len();
    let resumed = h.engine.send_message(&sid, "").unwrap();
    tokio::time::timeout(Duration::from_secs(90), resumed).await.expect("the resumed run ends").unwrap();
    let o = h.outcome(&sid);
    let asked = o.requests[before..]
        .iter()
        .find(|r| r.kind == fake_llm::RequestKind::Agent && r.protocol == real.protocol())
        .unwrap_or_else(|| panic!("{}", story(&o)));
    assert!(
        asked.last_message.contains("stopped before it ended") && asked.last_message.contains("go on"),
        "the agent's model is asked to go on: {:?}\n{}",
        asked.last_message,
        o.requests[before..].iter().map(|r| format!("{:?}/{:?} {:.300}", r.protocol, r.kind, r.last_message)).collect::<Vec<_>>().join("\n")
    );
}

/// An agent that is not installed: the task is refused before a session or a worktree is made,
/// saying the exact install command.
pub async fn not_installed_says_the_exact_install_command(real: Real) {
    let mut agent = finishline_engine::external::ExternalAgent::preset(real.preset()).unwrap();
    let install = agent.install_hint().unwrap();
    agent.command = format!("{}-not-installed-here", agent.command);
    let h = Harness::new(rules(json!([finishline_evaluator(done_verdict(), None)])), Setup { external: Some(agent.clone()), ..Setup::default() }).await;
    let refused = h.engine.start_session("Do the thing", &h.ws()).expect_err("a task whose agent is not installed does not start");
    let message = refused.to_string();
    assert!(message.contains(&format!("{} is not installed here", agent.label())) && message.contains(&format!("Install it with: {install}")), "{message}");
    assert!(h.store.list_sessions(&Default::default()).unwrap().is_empty(), "no session (and so no worktree) is left behind");
}

/// Without a key or a login, the run fails with what to do, taken from the agent's own auth
/// methods and error, and the window's "Log in to <agent>" gets the methods; `expect`: words the
/// message must hold (the agent's own).
pub async fn without_a_key_says_how_to_log_in_in_the_agents_own_words(real: Real, expect: &[&str]) {
    let home = tempfile::tempdir().unwrap();
    let h = harness(real, home.path(), None).await;
    let mut r = real.side_calls();
    r.extend([finishline_evaluator(done_verdict(), None), finishline_side_calls(), real.turn(json!({}), json!({"text": DONE}))]);
    h.server.set_scenario(rules(json!(r)));
    let o = h.run("Write hello.txt").await;
    assert_eq!(o.status, SessionStatus::Failed, "{}", story(&o));
    let (code, message) =
        o.events.iter().rev().find_map(|e| if let EngineEvent::Error { code, message } = &e.event { Some((*code, message.clone())) } else { None }).unwrap();
    assert_eq!(code, finishline_engine::ErrorCode::ExternalAgentAuth, "{message}");
    let label = finishline_engine::external::ExternalAgent::preset(real.preset()).unwrap().label();
    assert!(message.contains(&format!("{label} needs you to log in")), "{message}");
    for words in expect {
        assert!(message.contains(words), "the message says what to do in {label}'s own words ({words:?}): {message}");
    }
    let methods = o.events.iter().find_map(|e| {
        if let EngineEvent::AgentLoginNeeded { methods, label: l, .. } = &e.event {
            assert_eq!(l, &label);
            Some(methods.clone())
        } else {
            None
        }
    });
    assert!(methods.is_some_and(|m| !m.is_empty()), "the window gets the agent's ways to log in, for its Log in button: {}", story(&o));
}

/// Check (Settings → Agent) without a key or login: installed, its version, not logged in.
pub async fn check_without_a_key_says_it_is_not_logged_in(real: Real) {
    let home = tempfile::tempdir().unwrap();
    let server = fake_llm::FakeServer::start(rules(json!([]))).await.unwrap();
    let agent = real.agent(&server, home.path(), None);
    let s = finishline_engine::external::agent_status::status(&agent, home.path(), Duration::from_secs(60), &Default::default()).await;
    assert!(s.found.is_some() && s.version.is_some(), "installed, with its version: {s:?}");
    assert_eq!(s.logged_in, Some(false), "{s:?}");
}
