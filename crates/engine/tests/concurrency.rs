//! Safety under concurrency: one run per session however many starts race, from one engine,
//! several engines or several processes on one data folder; a review decision is applied once,
//! and a revert happens only for the decision that won.

mod support {
    pub mod harness;
}

use std::sync::{Arc, Barrier};

use finishline_engine::agent::{Engine, ReviewOutcome};
use finishline_engine::domain::*;
use finishline_engine::event::EngineEvent;
use finishline_engine::store::{NewSession, Store};
use finishline_engine::ErrorCode;
use serde_json::json;
use support::harness::*;

fn runs_started(store: &Store, sid: &SessionId) -> usize {
    store.events(sid, 0).unwrap().iter().filter(|e| matches!(e.event, EngineEvent::RunStarted { .. })).count()
}

fn idle_session(store: &Store, ws: &std::path::Path) -> SessionId {
    let (sid, _) = store
        .create_session(&NewSession {
            task: "say hello".into(),
            workspace: ws.to_string_lossy().into_owned(),
            provider: "openai".into(),
            model: "fake-model".into(),
            base_url: None,
        })
        .unwrap();
    sid
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn twenty_concurrent_sends_from_two_engines_and_a_second_process_start_exactly_one_run() {
    let h = Harness::new(rules(json!([agent(json!({}), json!({"text": "Hello! Nice to meet you, what shall we work on today?"}))])), Setup::default()).await;
    // A second engine in this process (each IPC call of the app builds one) and a third over its
    // own connection, as a CLI process on the same data folder would be.
    let same_process = Engine::new(h.store.clone(), h.engine.config.clone());
    let other_store = Arc::new(Store::open(&h.data.path().join("history.db"), Arc::new(finishline_engine::clock::SystemClock)).unwrap());
    let other_process = Engine::new(other_store, h.engine.config.clone());
    let engines = [h.engine.clone(), same_process, other_process];
    for round in 0..3 {
        let sid = idle_session(&h.store, &h.ws());
        let barrier = Arc::new(Barrier::new(20));
        let mut sends = Vec::new();
        for i in 0..20 {
            let engine = engines[i % engines.len()].clone();
            let (sid, barrier) = (sid.clone(), barrier.clone());
            sends.push(tokio::task::spawn_blocking(move || {
                barrier.wait();
                engine.send_message(&sid, &format!("hello {i}")).map(|_| ())
            }));
        }
        let mut started = 0;
        for s in sends {
            match s.await.unwrap() {
                Ok(()) => started += 1,
                Err(e) => assert!(
                    matches!(e.code(), ErrorCode::InvalidInput | ErrorCode::LeaseHeld),
                    "round {round}: a losing send is told the session is running, not a storage fault: {e}"
                ),
            }
        }
        assert_eq!(started, 1, "round {round}: of 20 racing sends exactly one starts a run");
        let o = h.wait_idle(&sid).await;
        assert_eq!(runs_started(&h.store, &sid), 1, "round {round}: the log holds one run, not one per send");
        let user_messages = o.events.iter().filter(|e| matches!(&e.event, EngineEvent::MessageCreated { role: MessageRole::User, .. })).count();
        assert_eq!(user_messages, 1, "round {round}: only the winning send's words reach the conversation");
        h.engine.send_message(&sid, "and again").expect("a settled session starts its next run at once");
        h.wait_idle(&sid).await;
        assert_eq!(runs_started(&h.store, &sid), 2);
    }
}

#[test]
fn a_run_that_ends_frees_only_its_own_lease_never_a_newer_runs() {
    let store = Store::open_in_memory().unwrap();
    let sid = idle_session(&store, std::path::Path::new("/tmp"));
    let (first, second) = (RunId::new(), RunId::new());
    store.begin_run(&sid, &first, |_| Ok(RunTrigger::Message)).unwrap();
    let again = store.begin_run(&sid, &RunId::new(), |_| Ok(RunTrigger::Message)).unwrap_err();
    assert_eq!(again.code(), ErrorCode::LeaseHeld, "a running session refuses a second run even from the same process: {again}");
    // The first run settles: its lease goes with its last status, before its task has cleaned up.
    store
        .append(
            &sid,
            Some(&first),
            EngineEvent::StatusChanged { status: SessionStatus::Idle, attempt: None, max_retries: None, next_retry_at: None, message: None },
        )
        .unwrap();
    store.begin_run(&sid, &second, |_| Ok(RunTrigger::Message)).expect("a settled session is free at once");
    // Now the first run's late cleanup runs: it must not free the second run's session.
    store.release_lease(&sid, &first).unwrap();
    let third = store.begin_run(&sid, &RunId::new(), |_| Ok(RunTrigger::Message)).unwrap_err();
    assert_eq!(third.code(), ErrorCode::LeaseHeld, "the newer run still holds the session after the older run's cleanup");
}

#[test]
fn a_run_waiting_for_a_person_keeps_its_session() {
    let store = Store::open_in_memory().unwrap();
    let sid = idle_session(&store, std::path::Path::new("/tmp"));
    let run = RunId::new();
    store.begin_run(&sid, &run, |_| Ok(RunTrigger::Message)).unwrap();
    store
        .append(
            &sid,
            Some(&run),
            EngineEvent::StatusChanged { status: SessionStatus::AwaitingApproval, attempt: None, max_retries: None, next_retry_at: None, message: None },
        )
        .unwrap();
    let err = store.begin_run(&sid, &RunId::new(), |_| Ok(RunTrigger::Message)).unwrap_err();
    assert_eq!(err.code(), ErrorCode::LeaseHeld, "a run waiting for a permission still owns its session: {err}");
}

/// The agent changes a.txt and asks for review.
async fn reviewed_change() -> (Harness, SessionId, RequestId) {
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
    assert_eq!(o.status, SessionStatus::AwaitingReview);
    let review = o.review_id();
    (h, o.session, review)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_approve_and_reject_with_revert_apply_one_decision_and_revert_only_when_reject_won() {
    let mut outcomes = Vec::new();
    for round in 0..8u64 {
        let (h, sid, review) = reviewed_change().await;
        let barrier = Arc::new(Barrier::new(2));
        let reject = {
            let (engine, review, barrier) = (h.engine.clone(), review.clone(), barrier.clone());
            tokio::task::spawn_blocking(move || {
                barrier.wait();
                engine.submit_review(&review, Decision::Reject, None, true, false, DecidedBy::Person)
            })
        };
        let approve = {
            // The approval comes from another process, as `finishline` in a terminal would.
            let store = Arc::new(Store::open(&h.data.path().join("history.db"), Arc::new(finishline_engine::clock::SystemClock)).unwrap());
            let engine = Engine::new(store, h.engine.config.clone());
            let (review, barrier) = (review.clone(), barrier.clone());
            tokio::task::spawn_blocking(move || {
                barrier.wait();
                // Stagger the approval so some rounds land while the reject is reading the files.
                std::thread::sleep(std::time::Duration::from_millis(round * 15));
                engine.submit_review(&review, Decision::Approve, None, false, false, DecidedBy::Person)
            })
        };
        let (r, a) = (reject.await.unwrap(), approve.await.unwrap());
        assert!(r.is_ok() != a.is_ok(), "round {round}: exactly one decision applies (reject: {r:?}, approve: {a:?})");
        let loser = if r.is_ok() { a.as_ref().err() } else { r.as_ref().err() }.unwrap();
        assert_eq!(loser.code(), ErrorCode::AlreadyDecided, "round {round}: the second decision is told it came too late: {loser}");
        let status = h.store.session(&sid).unwrap().status;
        let file = h.read("a.txt");
        if a.is_ok() {
            assert_eq!(status, SessionStatus::Completed);
            assert_eq!(file.as_deref(), Some("agent"), "round {round}: an approved change is never reverted by a reject that lost");
        } else {
            assert!(matches!(r, Ok(ReviewOutcome::Decided { status: SessionStatus::Rejected, .. })));
            assert_eq!(status, SessionStatus::Rejected);
            assert_eq!(file.as_deref(), Some("before"), "round {round}: the winning reject reverts");
        }
        outcomes.push(if a.is_ok() { "approve" } else { "reject" });
    }
    println!("winners: {outcomes:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn tasks_beyond_the_limit_wait_visibly_queued_and_start_as_places_free() {
    let slow = json!({"text": "Working on it, slowly.", "chunks": 10, "chunk_delay_ms": 300, "tool_calls": [{"name": "write_file", "arguments": {"path": "out.txt", "content": "x"}}]});
    let scn =
        rules(json!([evaluator(done_verdict()), agent(json!({"last_message_contains": "Created out.txt"}), json!({"text": DONE})), agent(json!({}), slow),]));
    let h = Harness::new(scn, Setup { parallel: Some(2), ..Default::default() }).await;
    let folders: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let mut started = Vec::new();
    for f in &folders {
        started.push(h.engine.start_session("write out.txt", f.path()).unwrap());
    }
    // The task that waits records so as it begins to wait: looked at until it has (the first two
    // stream for 3 s).
    let t = std::time::Instant::now();
    loop {
        let statuses: Vec<SessionStatus> = started.iter().map(|(sid, _)| h.store.session(sid).unwrap().status).collect();
        if statuses.iter().filter(|s| **s == SessionStatus::Queued).count() == 1 {
            break;
        }
        assert!(t.elapsed() < std::time::Duration::from_secs(10), "with a limit of 2, the third task waits: {statuses:?}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let queued = started.iter().find(|(sid, _)| h.store.session(sid).unwrap().status == SessionStatus::Queued).unwrap().0.clone();
    let said =
        h.store.events(&queued, 0).unwrap().iter().any(|e| matches!(&e.event, EngineEvent::Activity { detail, .. } if detail.contains("2 tasks are running")));
    assert!(said, "it says why it waits");
    for (_, handle) in started {
        tokio::time::timeout(std::time::Duration::from_secs(30), handle).await.expect("every task ends").unwrap();
    }
    let o = h.outcome(&queued);
    assert_eq!(o.status, SessionStatus::AwaitingReview, "the queued task ran once a place was free");
    for f in &folders {
        assert!(f.path().join("out.txt").exists());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_given_through_another_engine_of_the_app_reaches_the_run_that_waits_for_it() {
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
        if let EngineEvent::PermissionRequested { request_id, .. } = futures_util::StreamExt::next(&mut sub).await.unwrap().unwrap().event {
            break request_id;
        }
    };
    // The app builds an engine for each answer, from the settings of the moment, on the runtime
    // every engine of the app shares.
    let mut later_settings = h.engine.config.clone();
    later_settings.verify_commands = vec!["false".into()];
    let answering = Engine::on(h.engine.runtime(), later_settings);
    assert!(answering.is_running(&sid), "the run started by the first engine is live for the second");
    assert_eq!(answering.runtime().running(), vec![sid.clone()]);
    answering.respond_permission(&request, PermissionDecision::AllowOnce).unwrap();
    handle.await.unwrap();
    assert_eq!(h.read("shell.txt").as_deref(), Some("allowed\n"), "the waiting run carried out the call");
    assert_eq!(runs_started(&h.store, &sid), 1, "the answer went to the waiting run, not to a second one");
    let s = h.store.session(&sid).unwrap();
    assert_eq!(s.status, SessionStatus::AwaitingReview, "the run kept the settings it started with (no failing check)");
    assert!(!answering.is_running(&sid));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_runtime_stops_a_live_run_without_any_settings() {
    let h = Harness::new(
        rules(json!([agent(json!({}), json!({"tool_calls": [{"name": "run_command", "arguments": {"command": "echo allowed > shell.txt"}}]}))])),
        Setup { permissions: Default::default(), ..Default::default() },
    )
    .await;
    let (sid, handle) = h.engine.start_session("write shell.txt with the shell", &h.ws()).unwrap();
    let mut sub = Box::pin(h.store.subscribe(sid.clone(), 0));
    while !matches!(futures_util::StreamExt::next(&mut sub).await.unwrap().unwrap().event, EngineEvent::PermissionRequested { .. }) {}
    let runtime = h.engine.runtime().clone();
    assert_eq!(runtime.cancel(&h.engine.config.data_dir, &sid), finishline_engine::agent::Stop::Stopped);
    handle.await.unwrap();
    assert_eq!(h.store.session(&sid).unwrap().status, SessionStatus::Cancelled);
    assert!(runtime.running().is_empty());
    assert_eq!(h.read("shell.txt"), None, "nothing ran");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_no_provider_that_works_a_review_is_still_decided_and_a_follow_up_fails_saying_what_to_set_up() {
    let h = Harness::new(
        rules(json!([
            evaluator(done_verdict()),
            agent(json!({"last_message_contains": "Created"}), json!({"text": DONE})),
            agent(json!({}), json!({"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "agent"}}]})),
        ])),
        Setup::default(),
    )
    .await;
    let (first, handle) = h.engine.start_session("write a.txt", &h.ws()).unwrap();
    handle.await.unwrap();
    let (second, handle) = h.engine.start_session("write a.txt again", &h.ws()).unwrap();
    handle.await.unwrap();
    let review_of = |sid: &SessionId| {
        h.store
            .events(sid, 0)
            .unwrap()
            .iter()
            .rev()
            .find_map(|e| if let EngineEvent::ReviewRequested { review_id, .. } = &e.event { Some(review_id.clone()) } else { None })
            .unwrap()
    };
    // The person broke the provider settings after the tasks ran: the app builds the engine for
    // their decisions with a provider that names the problem.
    let mut broken = h.engine.config.clone();
    broken.agent = finishline_engine::agent::ModelEndpoint::unconfigured("set up a provider (base URL and model) in Settings first");
    broken.evaluator = None;
    broken.manager = None;
    let deciding = Engine::on(h.engine.runtime(), broken);
    let outcome = deciding.decide(&review_of(&first), finishline_engine::agent::ReviewChoice::new(Decision::Approve, DecidedBy::Person)).unwrap();
    assert!(matches!(outcome, ReviewOutcome::Decided { status: SessionStatus::Completed, .. }), "approving needs no model: {outcome:?}");
    let requests = h.server.requests().len();
    let mut changes = finishline_engine::agent::ReviewChoice::new(Decision::RequestChanges, DecidedBy::Person);
    changes.feedback = Some("say more".into());
    deciding.decide(&review_of(&second), changes).unwrap();
    while deciding.is_running(&second) {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let s = h.store.session(&second).unwrap();
    assert_eq!(s.status, SessionStatus::Failed);
    let said = h
        .store
        .events(&second, 0)
        .unwrap()
        .iter()
        .rev()
        .find_map(|e| if let EngineEvent::Error { message, .. } = &e.event { Some(message.clone()) } else { None })
        .unwrap();
    assert!(said.contains("set up a provider") && said.contains("Settings"), "the failure says what to set up: {said}");
    assert_eq!(h.server.requests().len(), requests, "nothing was sent to any server");
    assert!(
        h.store.events(&second, 0).unwrap().iter().any(|e| matches!(&e.event, EngineEvent::MessageCreated { text: Some(t), .. } if t.contains("say more"))),
        "the person's feedback is kept"
    );
}
