//! The store across processes: a writer killed with SIGKILL mid-stream, and two processes
//! sharing one data folder. Each test re-runs this test binary as the child process, selected by
//! an environment variable, so the child is real code of the real store.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use finishline_engine::clock::SystemClock;
use finishline_engine::domain::*;
use finishline_engine::event::EngineEvent;
use finishline_engine::store::{NewSession, Store};
use finishline_engine::ErrorCode;
use futures_util::StreamExt;

const CHILD: &str = "FINISHLINE_STORE_CHILD";

fn spawn_child(test: &str, db: &Path) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env(CHILD, db)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap()
}

/// The value after `tag` in a line of the child's output. libtest may print its own text on the
/// same line before ours, so the tag is searched, not expected at the start.
fn after<'a>(line: &'a str, tag: &str) -> Option<&'a str> {
    line.find(tag).map(|i| line[i + tag.len()..].trim())
}

fn open(db: &Path) -> Store {
    Store::open(db, Arc::new(SystemClock)).unwrap()
}

fn sigkill(child: &mut Child) {
    // SIGKILL: no destructor, no flush, no goodbye.
    unsafe { libc_kill(child.id() as i32, 9) };
    let _ = child.wait();
}

extern "C" {
    #[link_name = "kill"]
    fn libc_kill(pid: i32, sig: i32) -> i32;
}

/// Child: streams events as fast as it can and prints every seq a subscriber received.
async fn writer_child(db: PathBuf) {
    let store = Arc::new(open(&db));
    let (sid, _) = store
        .create_session(&NewSession {
            task: "stream until killed".into(),
            workspace: "/tmp".into(),
            provider: "openai".into(),
            model: "m".into(),
            base_url: None,
        })
        .unwrap();
    store.acquire_lease(&sid, &RunId::new()).unwrap();
    let run = RunId::new();
    let m = MessageId::new();
    store
        .append_all(
            &sid,
            Some(&run),
            vec![
                EngineEvent::RunStarted { trigger: RunTrigger::Task },
                EngineEvent::StatusChanged { status: SessionStatus::Busy, attempt: None, max_retries: None, next_retry_at: None, message: None },
                EngineEvent::ToolCall {
                    call_id: "call_1".into(),
                    message_id: None,
                    tool: "run_command".into(),
                    kind: None,
                    input: serde_json::json!({"command": "sleep 100"}),
                    state: ToolState::Running,
                    output: None,
                },
                EngineEvent::MessageCreated { message_id: m.clone(), role: MessageRole::Assistant, source: None, text: None },
            ],
        )
        .unwrap();
    println!("session {sid}");
    let sub = {
        let store = store.clone();
        let sid = sid.clone();
        tokio::spawn(async move {
            let mut s = Box::pin(store.subscribe(sid, 0));
            while let Some(e) = s.next().await {
                println!("delivered {}", e.unwrap().seq);
            }
        })
    };
    let mut i = 0u64;
    loop {
        store.append(&sid, Some(&run), EngineEvent::TextDelta { message_id: m.clone(), text: format!("word{i} ") }).unwrap();
        i += 1;
        if i.is_multiple_of(64) {
            tokio::task::yield_now().await;
        }
        if sub.is_finished() {
            panic!("the subscriber stopped");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_mid_stream_leaves_an_intact_database_with_every_delivered_event() {
    if let Ok(db) = std::env::var(CHILD) {
        return writer_child(db.into()).await;
    }
    for round in 0..3 {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("history.db");
        let mut child = spawn_child("sigkill_mid_stream_leaves_an_intact_database_with_every_delivered_event", &db);
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut session = None;
        let mut delivered = Vec::new();
        let target = 300 + round * 700;
        while let Some(Ok(line)) = lines.next() {
            if let Some(id) = after(&line, "session ") {
                session = Some(SessionId(id.to_string()));
            } else if let Some(seq) = after(&line, "delivered ") {
                delivered.push(seq.parse::<u64>().unwrap());
                if delivered.len() >= target {
                    sigkill(&mut child);
                    break;
                }
            }
        }
        // Reaped whichever way the stream ended (waiting again after sigkill only reads its status).
        let _ = child.wait();
        // Lines the child printed before dying are delivered events too.
        for line in lines.map_while(Result::ok) {
            if let Some(seq) = after(&line, "delivered ") {
                delivered.push(seq.parse().unwrap());
            }
        }
        let sid = session.expect("the child announced its session");
        let store = open(&db);
        assert_eq!(store.integrity_check().unwrap(), "ok", "round {round}: SIGKILL must never corrupt the database");
        let stored: Vec<u64> = store.events(&sid, 0).unwrap().iter().map(|e| e.seq).collect();
        assert_eq!(stored, (1..=stored.len() as u64).collect::<Vec<_>>(), "round {round}: stored seqs are gap-free");
        let max_delivered = *delivered.iter().max().unwrap();
        assert!(max_delivered <= stored.len() as u64, "round {round}: event {max_delivered} was delivered but is not in the database");
        assert_eq!(store.session(&sid).unwrap().status, SessionStatus::Busy, "before recovery the session still looks busy");
        let recovered = store.recover().unwrap();
        assert_eq!(recovered, vec![sid.clone()], "round {round}: a dead writer's session is recovered at next start");
        assert_eq!(store.session(&sid).unwrap().status, SessionStatus::Interrupted, "it is interrupted and resumable");
        let calls = store.tool_calls(&sid).unwrap();
        assert_eq!(calls[0].state, ToolState::Unknown, "a tool call that was running has an unknown outcome, so it is never re-run blindly");
        // Events 1-5 set the session up; delta n carries word{n - 6}.
        let last_word = format!("word{}", max_delivered - 6);
        assert_eq!(
            store.search(&last_word, 5).unwrap().len(),
            1,
            "round {round}: the last text a subscriber saw before the crash is searchable after recovery"
        );
        println!("round {round}: killed after {} delivered events; {} stored; recovered", delivered.len(), stored.len());
    }
}

/// Child: holds a session's lease with a live heartbeat until killed.
async fn holder_child(db: PathBuf) {
    let store = open(&db);
    let (sid, _) = store
        .create_session(&NewSession { task: "held elsewhere".into(), workspace: "/tmp".into(), provider: "openai".into(), model: "m".into(), base_url: None })
        .unwrap();
    store.acquire_lease(&sid, &RunId::new()).unwrap();
    store
        .append(&sid, None, EngineEvent::StatusChanged { status: SessionStatus::Busy, attempt: None, max_retries: None, next_retry_at: None, message: None })
        .unwrap();
    println!("holding {sid}");
    loop {
        store.heartbeat().unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn two_processes_on_one_data_folder_do_not_steal_each_others_sessions() {
    if let Ok(db) = std::env::var(CHILD) {
        return holder_child(db.into()).await;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("history.db");
    let mut child = spawn_child("two_processes_on_one_data_folder_do_not_steal_each_others_sessions", &db);
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let sid = loop {
        let line = lines.next().expect("child output").unwrap();
        if let Some(id) = after(&line, "holding ") {
            break SessionId(id.to_string());
        }
    };
    let mut store = open(&db);
    store.set_lease_ttl_ms(2_000);
    assert!(store.recover().unwrap().is_empty(), "a session with a live owner is not 'recovered' by another process");
    assert_eq!(store.session(&sid).unwrap().status, SessionStatus::Busy);
    let err = store.acquire_lease(&sid, &RunId::new()).unwrap_err();
    assert_eq!(err.code(), ErrorCode::LeaseHeld, "a second process must not take a running session: {err}");
    sigkill(&mut child);
    assert_eq!(store.recover().unwrap(), vec![sid.clone()], "once the owner is dead its session is recovered");
    assert_eq!(store.session(&sid).unwrap().status, SessionStatus::Interrupted);
    store.acquire_lease(&sid, &RunId::new()).expect("and can be taken over to resume it");
}

#[tokio::test]
async fn waiting_sessions_keep_waiting_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("history.db");
    let sid = {
        let store = open(&db);
        let (sid, _) = store
            .create_session(&NewSession { task: "review me".into(), workspace: "/tmp".into(), provider: "openai".into(), model: "m".into(), base_url: None })
            .unwrap();
        store
            .append(
                &sid,
                None,
                EngineEvent::StatusChanged { status: SessionStatus::AwaitingReview, attempt: None, max_retries: None, next_retry_at: None, message: None },
            )
            .unwrap();
        sid
    };
    let store = open(&db);
    assert!(store.recover().unwrap().is_empty());
    assert_eq!(store.session(&sid).unwrap().status, SessionStatus::AwaitingReview, "a session waiting for a person keeps waiting across restarts");
}

#[test]
fn the_app_and_the_cli_opening_a_new_data_folder_at_once_both_get_a_working_history() {
    // Found in CI: a CLI and a second reader opening a fresh folder together raced on the
    // migrations ("duplicate column name"), and the CLI refused to start.
    for round in 0..20 {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("history.db");
        let barrier = Arc::new(std::sync::Barrier::new(4));
        let opens: Vec<_> = (0..4)
            .map(|_| {
                let (db, barrier) = (db.clone(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    Store::open(&db, Arc::new(SystemClock)).map(|_| ()).map_err(|e| e.to_string())
                })
            })
            .collect();
        for o in opens {
            let r = o.join().unwrap();
            assert!(r.is_ok(), "round {round}: every front end opening a new data folder gets a migrated history: {r:?}");
        }
        let store = Store::open(&db, Arc::new(SystemClock)).unwrap();
        assert_eq!(store.integrity_check().unwrap(), "ok");
    }
}
