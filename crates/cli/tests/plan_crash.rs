//! Plan mode across a crash: the CLI is killed with SIGKILL while step 2 of a plan waits for the
//! model; `sessions resume` picks up step 2 in its own conversation, never redoes step 1, and the
//! plan finishes. Killed between steps (while the manager revises the plan), the resume asks for
//! the revision again and the plan goes on from it.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;

use fake_llm::{FakeServer, Protocol, RequestKind};
use finishline_engine::clock::SystemClock;
use finishline_engine::domain::{RunTrigger, SessionId, SessionStatus};
use finishline_engine::event::EngineEvent;
use finishline_engine::plan::state::PlanState;
use finishline_engine::store::Store;
use serde_json::{json, Value};

extern "C" {
    fn kill(pid: i32, sig: i32) -> i32;
}

/// `finishline run TASK --plan on --json`, its events read from its stdout.
fn plan_run(task: &str, ws: &std::path::Path, url: &str, data: &std::path::Path) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_finishline"))
        .args(["run", task, "--plan", "on", "--workspace"])
        .arg(ws)
        .args(["--base-url", url, "--model", "m", "--json", "--data-dir"])
        .arg(data)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// `finishline sessions resume ID --review approve`, to its end.
fn resume_approving(sid: &SessionId, url: &str, data: &std::path::Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_finishline"))
        .args(["sessions", "resume", sid.as_str(), "--base-url", url, "--model", "m", "--review", "approve", "--json", "--data-dir"])
        .arg(data)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn scenario() -> fake_llm::Scenario {
    let steps: Vec<Value> = ["a", "b", "c"].iter().map(|f| json!({"title": format!("Write {f}.txt"), "instructions": format!("Write {f}.txt."), "criteria": [format!("{f}.txt exists")], "depends_on": []})).collect();
    let write = |f: &str| json!({"tool_calls": [{"name": "write_file", "arguments": {"path": format!("{f}.txt"), "content": f}}]});
    serde_json::from_value(json!({"rules": [
        {"when": {"kind": "manager"}, "reply": {"text": json!({"steps": steps}).to_string()}},
        {"when": {"kind": "evaluator"}, "reply": {"text": "{\"done\": true, \"summary\": \"written\", \"remaining\": [], \"continuation_prompt\": \"\", \"is_stuck\": false, \"stuck_reason\": \"\"}"}},
        {"when": {"kind": "agent", "last_message_contains": "Created"}, "reply": {"text": "Done! The file this step asked for is written."}},
        {"when": {"kind": "agent", "last_message_contains": "This step: Write a.txt"}, "reply": write("a")},
        // The first answer for step 2 never comes in time: the CLI is killed while it waits.
        {"when": {"kind": "agent", "any_message_contains": "This step: Write b.txt", "last_message_contains": "This step: Write b.txt"}, "times": 1, "reply": {"text": "slow", "first_frame_delay_ms": 30000}},
        {"when": {"kind": "agent", "any_message_contains": "This step: Write b.txt"}, "reply": write("b")},
        {"when": {"kind": "agent", "last_message_contains": "This step: Write c.txt"}, "reply": write("c")}
    ]}))
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_killed_in_step_two_resumes_at_step_two_and_finishes() {
    let server = FakeServer::start(scenario()).await.unwrap();
    let url = server.base_url(Protocol::Openai);
    let dir = tempfile::tempdir().unwrap();
    let (data, ws) = (dir.path().join("data"), dir.path().join("ws"));
    std::fs::create_dir_all(&ws).unwrap();
    let mut child = plan_run("write a.txt, b.txt and c.txt", &ws, &url, &data);
    let pid = child.id() as i32;
    let mut sid = None;
    // Read events until step 2 has started and its model request is out, then kill.
    let lines = BufReader::new(child.stdout.take().unwrap()).lines().map_while(Result::ok);
    for line in lines {
        let v: Value = serde_json::from_str(&line).unwrap();
        sid = sid.or_else(|| v["session_id"].as_str().map(String::from));
        if v["type"] == "step_started" && server.requests().iter().any(|r| r.kind == RequestKind::Agent && r.last_message.contains("This step: Write b.txt")) {
            break;
        }
        if v["type"] == "plan_step_started" && v["index"] == 1 {
            // Wait for the request to reach the server.
            let t = std::time::Instant::now();
            while !server.requests().iter().any(|r| r.last_message.contains("This step: Write b.txt")) {
                assert!(t.elapsed() < std::time::Duration::from_secs(30), "step 2 asked its model");
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            break;
        }
    }
    unsafe { kill(pid, 9) };
    let _ = child.wait();
    let sid = SessionId(sid.expect("the CLI printed the session"));
    assert!(std::fs::metadata(ws.join("a.txt")).is_ok(), "step 1 finished before the kill");

    let out = resume_approving(&sid, &url, &data);
    assert_eq!(out.status.code(), Some(0), "the resumed plan finishes and is approved: {}", String::from_utf8_lossy(&out.stderr));
    let store = Store::open(&data.join("history.db"), Arc::new(SystemClock)).unwrap();
    assert_eq!(store.session(&sid).unwrap().status, SessionStatus::Completed);
    let events = store.events(&sid, 0).unwrap();
    assert!(events.iter().any(|e| matches!(e.event, EngineEvent::RunStarted { trigger: RunTrigger::Resume })), "the crash was resumed, not started over");
    let step_one = server.requests().iter().filter(|r| r.kind == RequestKind::Agent && r.last_message.contains("This step: Write a.txt")).count();
    assert_eq!(step_one, 1, "step 1 is not redone after the crash");
    let plan = PlanState::from_events(&events).unwrap();
    assert_eq!(plan.steps.iter().map(|s| s.state).collect::<Vec<_>>(), vec![finishline_engine::domain::StepState::Done; 3]);
    let step_two_starts = events.iter().filter(|e| matches!(e.event, EngineEvent::PlanStepStarted { index: 1, .. })).count();
    assert_eq!(step_two_starts, 1, "resume continues step 2; it does not start it again");
    for f in ["b.txt", "c.txt"] {
        assert!(std::fs::metadata(ws.join(f)).is_ok(), "{f} was written after the resume");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_killed_while_the_manager_revises_it_resumes_with_the_revision() {
    let steps: Vec<Value> = ["a", "b"].iter().map(|f| json!({"title": format!("Write {f}.txt"), "instructions": format!("Write {f}.txt."), "criteria": [format!("{f}.txt exists")], "depends_on": []})).collect();
    let revision = json!({"cause": "b.txt is locked", "steps": [{"title": "Write B.txt instead", "instructions": "Write B.txt.", "criteria": ["B.txt exists"], "depends_on": []}]});
    let write = |f: &str| json!({"tool_calls": [{"name": "write_file", "arguments": {"path": format!("{f}.txt"), "content": f}}]});
    let blocked = json!({"tool_calls": [{"name": "complete_task", "arguments": {"status": "blocked", "summary": "b.txt is locked", "original_request_summary": "write files", "remaining_work": "b.txt"}}]});
    let scenario: fake_llm::Scenario = serde_json::from_value(json!({"rules": [
        // The first revision never comes in time: the CLI is killed while it waits.
        {"when": {"kind": "manager", "any_message_contains": "<failed"}, "times": 1, "reply": {"text": revision.to_string(), "first_frame_delay_ms": 30000}},
        {"when": {"kind": "manager", "any_message_contains": "<failed"}, "reply": {"text": revision.to_string()}},
        {"when": {"kind": "manager"}, "reply": {"text": json!({"steps": steps}).to_string()}},
        {"when": {"kind": "evaluator"}, "reply": {"text": "{\"done\": true, \"summary\": \"written\", \"remaining\": [], \"continuation_prompt\": \"\", \"is_stuck\": false, \"stuck_reason\": \"\"}"}},
        {"when": {"kind": "agent", "last_message_contains": "This step: Write a.txt"}, "reply": write("a")},
        {"when": {"kind": "agent", "last_message_contains": "This step: Write b.txt"}, "reply": blocked},
        {"when": {"kind": "agent", "last_message_contains": "This step: Write B.txt instead"}, "reply": write("B")}
    ]}))
    .unwrap();
    let server = FakeServer::start(scenario).await.unwrap();
    let url = server.base_url(Protocol::Openai);
    let dir = tempfile::tempdir().unwrap();
    let (data, ws) = (dir.path().join("data"), dir.path().join("ws"));
    std::fs::create_dir_all(&ws).unwrap();
    let mut child = plan_run("write a.txt and b.txt", &ws, &url, &data);
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines().map_while(Result::ok);
    let sid = lines.find_map(|l| serde_json::from_str::<Value>(&l).ok()?["session_id"].as_str().map(String::from)).expect("the CLI printed the session");
    let t = std::time::Instant::now();
    while !server.requests().iter().any(|r| r.kind == RequestKind::Manager && r.all_text.contains("<failed")) {
        assert!(t.elapsed() < std::time::Duration::from_secs(30), "the manager is asked to revise the plan");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    unsafe { kill(child.id() as i32, 9) };
    let _ = child.wait();
    let sid = SessionId(sid);

    let out = resume_approving(&sid, &url, &data);
    assert_eq!(out.status.code(), Some(0), "the resumed plan finishes and is approved: {}", String::from_utf8_lossy(&out.stderr));
    let store = Store::open(&data.join("history.db"), Arc::new(SystemClock)).unwrap();
    assert_eq!(store.session(&sid).unwrap().status, SessionStatus::Completed);
    let events = store.events(&sid, 0).unwrap();
    let plan = PlanState::from_events(&events).unwrap();
    let states: Vec<(String, finishline_engine::domain::StepState)> = plan.steps.iter().map(|s| (s.step.title.clone(), s.state)).collect();
    use finishline_engine::domain::StepState::*;
    assert_eq!(
        states,
        vec![("Write a.txt".into(), Done), ("Write b.txt".into(), Failed), ("Write B.txt instead".into(), Done)],
        "the revision asked for again ran"
    );
    assert!(std::fs::metadata(ws.join("B.txt")).is_ok(), "the revised step's work is there");
}
