//! Crash safety: the CLI is killed with SIGKILL at random points of runs streaming from the fake
//! server, 50 times on one data folder. After every kill the database is intact and holds every
//! event the CLI had printed, gap-free; at the next start the killed sessions are interrupted;
//! resuming one continues without duplicating what was stored.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fake_llm::{FakeServer, Protocol};
use finishline_engine::clock::SystemClock;
use finishline_engine::domain::{SessionId, SessionStatus};
use finishline_engine::event::EngineEvent;
use finishline_engine::store::Store;
use serde_json::{json, Value};

fn scenario() -> fake_llm::Scenario {
    serde_json::from_value(json!({"rules": [
        {"when": {"kind": "evaluator"}, "reply": {"text": "{\"done\": true, \"summary\": \"ok\", \"remaining\": [], \"continuation_prompt\": \"\", \"is_stuck\": false, \"stuck_reason\": \"\"}"}},
        {"when": {"kind": "agent", "last_message_contains": "Created"}, "reply": {"text": "Done! The notes are written exactly as the task asked, nothing else changed.", "chunks": 20, "chunk_delay_ms": 10}},
        {"when": {"kind": "agent"}, "reply": {"text": "Let me write the notes file with the three fruits now, carefully and completely.", "chunks": 40, "chunk_delay_ms": 10,
            "tool_calls": [{"name": "write_file", "arguments": {"path": "notes.md", "content": "- apple\n- banana\n- cherry\n"}}]}}
    ]}))
    .unwrap()
}

extern "C" {
    fn kill(pid: i32, sig: i32) -> i32;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_sigkills_leave_an_intact_database_and_resumable_sessions() {
    let server = FakeServer::start(scenario()).await.unwrap();
    let url = server.base_url(Protocol::Openai);
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut rng = fastrand::Rng::with_seed(7);
    let mut printed: HashMap<String, Vec<u64>> = HashMap::new();
    let (mut killed_mid_run, mut finished) = (0, 0);
    for round in 0..50 {
        let ws = dir.path().join(format!("ws{round}"));
        std::fs::create_dir_all(&ws).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_finishline"))
            .args(["run", "write notes.md listing three fruits", "--workspace"])
            .arg(&ws)
            .args(["--base-url", &url, "--model", "m", "--json", "--data-dir"])
            .arg(&data)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        let kill_after = Duration::from_millis(rng.u64(30..900));
        let stdout = child.stdout.take().unwrap();
        // Read what the CLI printed on another thread while the clock runs.
        let reader = std::thread::spawn(move || BufReader::new(stdout).lines().map_while(Result::ok).collect::<Vec<String>>());
        let t = Instant::now();
        let mut exited = false;
        while t.elapsed() < kill_after {
            if child.try_wait().unwrap().is_some() {
                exited = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        if !exited {
            unsafe { kill(pid, 9) };
            killed_mid_run += 1;
        } else {
            finished += 1;
        }
        let _ = child.wait();
        for line in reader.join().unwrap() {
            let v: Value = serde_json::from_str(&line).unwrap();
            if let (Some(sid), Some(seq)) = (v["session_id"].as_str(), v["seq"].as_u64()) {
                printed.entry(sid.to_string()).or_default().push(seq);
            }
        }
        let store = Store::open(&data.join("history.db"), Arc::new(SystemClock)).unwrap();
        assert_eq!(store.integrity_check().unwrap(), "ok", "round {round}: the database is intact after SIGKILL");
        for (sid, seqs) in &printed {
            let stored: Vec<u64> = store.events(&SessionId(sid.clone()), 0).unwrap().iter().map(|e| e.seq).collect();
            assert_eq!(stored, (1..=stored.len() as u64).collect::<Vec<_>>(), "round {round}: {sid} is gap-free");
            let max = seqs.iter().max().copied().unwrap_or(0);
            assert!(max <= stored.len() as u64, "round {round}: {sid} printed event {max} but stored only {}", stored.len());
        }
    }
    println!("crash: 50 runs, {killed_mid_run} killed mid-run, {finished} ended before the kill");
    assert!(killed_mid_run >= 25, "most runs were really killed mid-run ({killed_mid_run})");

    // `sessions list` is a front end too: it recovers dead runs before it shows them, so no
    // killed run is listed as running.
    let listed = Command::new(env!("CARGO_BIN_EXE_finishline"))
        .args(["sessions", "list", "--json", "--limit", "100", "--data-dir"])
        .arg(&data)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let statuses: Vec<String> = String::from_utf8_lossy(&listed.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|v| v["status"].as_str().unwrap_or_default().to_string())
        .collect();
    assert!(statuses.iter().any(|s| s == "interrupted"), "killed runs are listed as interrupted: {statuses:?}");
    assert!(!statuses.iter().any(|s| s == "busy" || s == "retry"), "no killed run is listed as running: {statuses:?}");

    // The next start: killed sessions are interrupted, none is left busy.
    let store = Arc::new(Store::open(&data.join("history.db"), Arc::new(SystemClock)).unwrap());
    store.recover().unwrap();
    let interrupted: Vec<SessionId> =
        store.list_sessions(&Default::default()).unwrap().into_iter().filter(|s| s.status == SessionStatus::Interrupted).map(|s| s.id).collect();
    assert!(!interrupted.is_empty(), "killed runs are recovered as interrupted");
    for s in store.list_sessions(&Default::default()).unwrap() {
        assert!(!s.status.is_running(), "{} is left {:?}", s.id, s.status);
    }
    // Resuming one continues it without duplicating what was stored.
    let sid = interrupted[0].clone();
    let before = store.events(&sid, 0).unwrap();
    let before_len = before.len();
    drop(store);
    let out = Command::new(env!("CARGO_BIN_EXE_finishline"))
        .args(["sessions", "resume", sid.as_str(), "please continue", "--base-url", &url, "--model", "m", "--json", "--review", "approve", "--data-dir"])
        .arg(&data)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let store = Store::open(&data.join("history.db"), Arc::new(SystemClock)).unwrap();
    let after = store.events(&sid, 0).unwrap();
    assert_eq!(&after[..before_len], &before[..], "what was stored before the crash is unchanged");
    assert!(after.iter().any(|e| matches!(e.event, EngineEvent::RunStarted { trigger: finishline_engine::domain::RunTrigger::Resume })));
    let status = store.session(&sid).unwrap().status;
    assert!(
        matches!(status, SessionStatus::Completed | SessionStatus::AwaitingReview),
        "the resumed run reached a decision: {status:?} (exit {:?})",
        out.status.code()
    );
    let printed_resume: Vec<u64> =
        String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()).filter_map(|v| v["seq"].as_u64()).collect();
    assert!(printed_resume.iter().all(|s| *s as usize > before_len), "resume prints only the new events, never the old ones again");
}

/// A permission the CLI was asking for in a terminal when it was killed is answered by the next
/// `finishline sessions resume`, and the run goes on from that answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permission_left_waiting_by_a_killed_cli_is_answered_on_resume_and_the_run_goes_on() {
    let scn = serde_json::from_value(json!({"rules": [
        {"when": {"kind": "evaluator"}, "reply": {"text": "{\"done\": true, \"summary\": \"ok\", \"remaining\": [], \"continuation_prompt\": \"\", \"is_stuck\": false, \"stuck_reason\": \"\"}"}},
        {"when": {"kind": "agent", "last_message_contains": "exit code: 0"}, "reply": {"text": "Done! The shell wrote ran.txt, which is everything the task asked for."}},
        {"when": {"kind": "agent"}, "reply": {"text": "Running it.", "tool_calls": [{"name": "run_command", "arguments": {"command": "echo yes > ran.txt"}}]}}
    ]}))
    .unwrap();
    let server = FakeServer::start(scn).await.unwrap();
    let url = server.base_url(Protocol::Openai);
    let dir = tempfile::tempdir().unwrap();
    let (data, ws) = (dir.path().join("data"), dir.path().join("ws"));
    std::fs::create_dir_all(&ws).unwrap();
    // A terminal (script(1) gives the CLI a pty), so the CLI asks and waits for the answer.
    let cli = format!(
        "{} run 'write ran.txt with the shell' --workspace {} --base-url {url} --model m --data-dir {}",
        env!("CARGO_BIN_EXE_finishline"),
        ws.display(),
        data.display()
    );
    let mut asker = {
        use std::os::unix::process::CommandExt;
        Command::new("script")
            .args(["-qec", &cli, "/dev/null"])
            .stdin(Stdio::piped())
            .stdout(Stdio::from(std::fs::File::create(dir.path().join("pty.log")).unwrap()))
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap()
    };
    let db = data.join("history.db");
    let t = Instant::now();
    let sid = loop {
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "the CLI in a terminal asks for the permission; it printed:\n{}",
            std::fs::read_to_string(dir.path().join("pty.log")).unwrap_or_default()
        );
        if let Ok(store) = Store::open(&db, Arc::new(SystemClock)) {
            if let Some(s) = store.list_sessions(&Default::default()).ok().and_then(|l| l.into_iter().next()) {
                if s.status == SessionStatus::AwaitingApproval {
                    break s.id;
                }
            }
        }
        // Never block a runtime worker here: the fake server runs on this runtime.
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    // Killed while asking: the request is left with no process to answer it. The CLI itself is
    // killed first: script(1) runs it in a session of its own, and the pty closing would send it
    // SIGHUP, which it answers as a closed terminal (the run cancelled and recorded), not a crash.
    let needle = data.to_string_lossy().to_string();
    for pid in std::fs::read_dir("/proc").unwrap().filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok()) {
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let args: Vec<String> = cmdline.split(|b| *b == 0).map(|a| String::from_utf8_lossy(a).to_string()).collect();
        if args.first().is_some_and(|a| a.ends_with("/finishline")) && args.iter().any(|a| a == &needle) {
            unsafe { kill(pid, 9) };
        }
    }
    unsafe { kill(-(asker.id() as i32), 9) };
    let _ = tokio::task::spawn_blocking(move || asker.wait()).await;
    assert!(!ws.join("ran.txt").exists());

    // Another model named while the run waits for its answer is refused, not ignored unsaid:
    // the run that asked goes on with its own.
    let other = Command::new(env!("CARGO_BIN_EXE_finishline"))
        .args(["sessions", "resume", sid.as_str(), "--base-url", &url, "--model", "another", "--data-dir"])
        .arg(&data)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(other.status.code(), Some(2), "{}", String::from_utf8_lossy(&other.stderr));
    assert!(String::from_utf8_lossy(&other.stderr).contains("answer it first"), "{}", String::from_utf8_lossy(&other.stderr));
    assert!(!ws.join("ran.txt").exists(), "nothing was answered");

    let (sid_arg, url_arg, data_arg) = (sid.as_str().to_string(), url.clone(), data.clone());
    let out = tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_finishline"))
            .args([
                "sessions",
                "resume",
                &sid_arg,
                "--allow",
                "run_command",
                "--base-url",
                &url_arg,
                "--model",
                "m",
                "--review",
                "approve",
                "--json",
                "--data-dir",
            ])
            .arg(&data_arg)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "the answered run goes on to completion; stderr: {stderr}");
    assert_eq!(std::fs::read_to_string(ws.join("ran.txt")).unwrap(), "yes\n", "the command the killed CLI was asking about ran once, after the answer");
    let store = Store::open(&db, Arc::new(SystemClock)).unwrap();
    let events = store.events(&sid, 0).unwrap();
    assert!(events.iter().any(|e| matches!(e.event, EngineEvent::PermissionResolved { .. })), "the answer is recorded");
    assert_eq!(store.session(&sid).unwrap().status, SessionStatus::Completed);
}

/// A run that writes a.txt and is judged done.
fn writes_a_txt() -> fake_llm::Scenario {
    serde_json::from_value(json!({"rules": [
        {"when": {"kind": "evaluator"}, "reply": {"text": "{\"done\": true, \"summary\": \"ok\", \"remaining\": [], \"continuation_prompt\": \"\", \"is_stuck\": false, \"stuck_reason\": \"\"}"}},
        {"when": {"kind": "agent", "last_message_contains": "Created"}, "reply": {"text": "Done! a.txt is written, which is everything the task asked for."}},
        {"when": {"kind": "agent"}, "reply": {"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "A"}}]}}
    ]}))
    .unwrap()
}

/// Run as an ordinary user (root reads every file): a file the user cannot read is reported once,
/// left out of the checkpoints, and the run goes on with everything else recorded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreadable_file_is_reported_once_and_the_run_goes_on() {
    use std::os::unix::fs::PermissionsExt;
    let server = FakeServer::start(writes_a_txt()).await.unwrap();
    let url = server.base_url(Protocol::Openai);
    let dir = tempfile::tempdir().unwrap();
    let (data, ws) = (dir.path().join("data"), dir.path().join("ws"));
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("readable.txt"), "hello").unwrap();
    std::fs::write(ws.join("locked.txt"), "private").unwrap();
    for p in [dir.path(), ws.as_path()] {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    std::fs::set_permissions(ws.join("readable.txt"), std::fs::Permissions::from_mode(0o666)).unwrap();
    std::fs::set_permissions(ws.join("locked.txt"), std::fs::Permissions::from_mode(0o000)).unwrap();
    let cli = env!("CARGO_BIN_EXE_finishline").to_string();
    let (d, w) = (data.clone(), ws.clone());
    let out = tokio::task::spawn_blocking(move || {
        Command::new("setpriv")
            .args([
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "env",
                &format!("HOME={}", d.parent().unwrap().display()),
                &cli,
                "run",
                "write a.txt",
                "--workspace",
            ])
            .arg(&w)
            .args(["--base-url", &url, "--model", "m", "--review", "approve", "--json", "--data-dir"])
            .arg(&d)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "the run completes: {}\n{stdout}", String::from_utf8_lossy(&out.stderr));
    let events: Vec<Value> = stdout.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let reports: Vec<&Value> = events.iter().filter(|e| e["type"] == "error" && e["code"] == "checkpoints").collect();
    assert_eq!(reports.len(), 1, "reported once: {reports:?}");
    assert!(reports[0]["message"].as_str().unwrap().contains("locked.txt"));
    let review = events.iter().find(|e| e["type"] == "review_requested").expect("a review");
    let files: Vec<&str> = review["files_changed"].as_array().unwrap().iter().map(|f| f["path"].as_str().unwrap()).collect();
    assert_eq!(files, vec!["a.txt"], "everything else is still recorded and diffed");
    assert_eq!(review["not_covered"], json!(["locked.txt"]), "the review says revert cannot restore it");
}

/// Without git on the PATH there can be no checkpoints: the person is told at the start of the
/// run, in the run's own events, instead of meeting a review with no diffs and a Reject that
/// cannot revert; the run itself goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_machine_without_git_is_told_at_the_start_that_checkpoints_are_off() {
    let server = FakeServer::start(writes_a_txt()).await.unwrap();
    let url = server.base_url(Protocol::Openai);
    let dir = tempfile::tempdir().unwrap();
    let (data, ws, no_git) = (dir.path().join("data"), dir.path().join("ws"), dir.path().join("bin"));
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(&no_git).unwrap();
    let cli = env!("CARGO_BIN_EXE_finishline").to_string();
    let out = tokio::task::spawn_blocking(move || {
        Command::new(cli)
            .args(["run", "write a.txt", "--workspace"])
            .arg(&ws)
            .args(["--base-url", &url, "--model", "m", "--review", "approve", "--json", "--data-dir"])
            .arg(&data)
            .env("PATH", &no_git)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    // It runs on to its review, which waits for the person: with nothing recorded, the audit had
    // nothing to look at, so auto-approve does not take it.
    assert_eq!(out.status.code(), Some(6), "the run still reaches its review: {}\n{stdout}", String::from_utf8_lossy(&out.stderr));
    let events: Vec<Value> = stdout.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let review = events.iter().find(|e| e["type"] == "review_requested").expect("a review");
    assert!(review["auto_approve"]["reason"].as_str().unwrap().contains("not recorded"), "{review}");
    let first_run_event = events.iter().position(|e| e["type"] == "step_started").expect("a step");
    let report = events.iter().position(|e| e["type"] == "error" && e["code"] == "checkpoints").expect("the missing git is reported");
    assert!(report < first_run_event, "said before the first step, not discovered at review");
    let message = events[report]["message"].as_str().unwrap();
    assert!(message.contains("git is needed") && message.contains("Reject cannot revert"), "the message says why and what it costs: {message}");
}

/// Killed while the agent's next answer streams, after its write was recorded, then resumed: the
/// resumed run goes on from the killed one's windows. A reject then reverts what the task wrote
/// without asking about it as if someone had edited it (each window was counted twice, and the
/// second looked like an edit made between the agent's).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_killed_and_resumed_is_reverted_without_asking_about_its_own_files() {
    let scn = serde_json::from_value(json!({"rules": [
        {"when": {"kind": "evaluator"}, "reply": {"text": "{\"done\": true, \"summary\": \"ok\", \"remaining\": [], \"continuation_prompt\": \"\", \"is_stuck\": false, \"stuck_reason\": \"\"}"}},
        {"when": {"kind": "agent", "last_message_contains": "Created"}, "reply": {"text": "Done! a.txt is written, which is everything the task asked for.", "chunks": 30, "chunk_delay_ms": 100}},
        {"when": {"kind": "agent"}, "reply": {"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "A"}}]}}
    ]}))
    .unwrap();
    let server = FakeServer::start(scn).await.unwrap();
    let url = server.base_url(Protocol::Openai);
    let dir = tempfile::tempdir().unwrap();
    let (data, ws) = (dir.path().join("data"), dir.path().join("ws"));
    std::fs::create_dir_all(&ws).unwrap();
    let cli = |args: &[&str]| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_finishline"));
        c.args(args).arg("--data-dir").arg(&data).stdin(Stdio::null());
        c
    };
    let mut run = cli(&["run", "write a.txt", "--workspace", ws.to_str().unwrap(), "--base-url", &url, "--model", "m"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t = Instant::now();
    while !ws.join("a.txt").exists() {
        assert!(t.elapsed() < Duration::from_secs(30), "the agent wrote a.txt");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Its window closes (the next request is sent only after), and the next answer streams for
    // 3 s: killed in the middle of it.
    while server.requests().iter().filter(|q| q.kind == fake_llm::RequestKind::Agent).count() < 2 {
        assert!(t.elapsed() < Duration::from_secs(30), "the agent was asked again after its write");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    run.kill().unwrap();
    let _ = run.wait();
    let store = Store::open(&data.join("history.db"), Arc::new(SystemClock)).unwrap();
    let id = store.list_sessions(&Default::default()).unwrap()[0].id.clone();
    drop(store);
    let resumed = tokio::task::spawn_blocking({
        let mut c = cli(&["sessions", "resume", id.as_str(), "", "--base-url", &url, "--model", "m"]);
        move || c.output().unwrap()
    })
    .await
    .unwrap();
    assert_eq!(resumed.status.code(), Some(6), "it waits for review: {}", String::from_utf8_lossy(&resumed.stderr));
    let rejected = cli(&["sessions", "review", id.as_str(), "--reject", "--revert"]).output().unwrap();
    let said = String::from_utf8_lossy(&rejected.stderr).to_string();
    assert!(!said.contains("Not reverted"), "nobody but the agent touched a.txt: {said}");
    assert!(!ws.join("a.txt").exists(), "what the task wrote is reverted: {said}");
}

/// A task whose first step runs a command that writes marker.txt and then waits: the CLI is killed
/// while it waits. Returns the session's id, a way to run the CLI on its data folder, and the
/// workspace (holding README.md, the person's).
async fn killed_while_its_command_runs(dir: &Path, url: &str) -> (String, impl Fn(&[&str]) -> Command, PathBuf) {
    let (data, ws) = (dir.join("data"), dir.join("ws"));
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("README.md"), "mine\n").unwrap();
    let cli = move |args: &[&str]| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_finishline"));
        c.args(args).arg("--data-dir").arg(&data).stdin(Stdio::null());
        c
    };
    let mut run = cli(&["run", "write the marker", "--workspace", ws.to_str().unwrap(), "--base-url", url, "--model", "m", "--allow", "all"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t = Instant::now();
    while !ws.join("marker.txt").exists() {
        assert!(t.elapsed() < Duration::from_secs(30), "the command wrote marker.txt");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Long enough for the run to be seen alive well after the command's write.
    tokio::time::sleep(Duration::from_millis(3000)).await;
    run.kill().unwrap();
    let _ = run.wait();
    let store = Store::open(&dir.join("data").join("history.db"), Arc::new(SystemClock)).unwrap();
    let id = store.list_sessions(&Default::default()).unwrap()[0].id.to_string();
    (id, cli, ws)
}

fn marker_scenario() -> fake_llm::Scenario {
    serde_json::from_value(json!({"rules": [
        {"when": {"kind": "evaluator"}, "reply": {"text": "{\"done\": true, \"summary\": \"ok\", \"remaining\": [], \"continuation_prompt\": \"\", \"is_stuck\": false, \"stuck_reason\": \"\"}"}},
        {"when": {"kind": "agent", "any_message_contains": "check the marker"}, "reply": {"text": "The marker is there, which is everything the task asked for."}},
        {"when": {"kind": "agent"}, "reply": {"tool_calls": [{"name": "run_command", "arguments": {"command": "echo start > marker.txt; sleep 300"}}]}}
    ]}))
    .unwrap()
}

async fn resumed_to_its_review(cli: &impl Fn(&[&str]) -> Command, id: &str, url: &str) {
    let mut c = cli(&["sessions", "resume", id, "check the marker", "--base-url", url, "--model", "m", "--allow", "all", "--json"]);
    let resumed = tokio::task::spawn_blocking(move || c.output().unwrap()).await.unwrap();
    assert_eq!(resumed.status.code(), Some(6), "it waits for review: {}", String::from_utf8_lossy(&resumed.stderr));
}

/// Killed in the first step, while a command the agent ran was still running, then resumed: what
/// the command wrote is the task's, in its review and its revert. The workspace as it was before
/// the task was kept only at the step's end, so the resumed run recorded it anew, with the
/// command's file in it, and the file was nobody's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_killed_in_its_first_step_keeps_what_it_changed_before_the_kill() {
    let server = FakeServer::start(marker_scenario()).await.unwrap();
    let url = server.base_url(Protocol::Openai);
    let dir = tempfile::tempdir().unwrap();
    let (id, cli, ws) = killed_while_its_command_runs(dir.path(), &url).await;
    resumed_to_its_review(&cli, &id, &url).await;
    let mut c = cli(&["sessions", "review", &id]);
    let review = tokio::task::spawn_blocking(move || c.output().unwrap()).await.unwrap();
    let shown = format!("{}{}", String::from_utf8_lossy(&review.stdout), String::from_utf8_lossy(&review.stderr));
    assert!(shown.contains("marker.txt"), "the review shows what the command wrote: {shown}");
    assert!(!shown.contains("README.md"), "the person's file is not the task's: {shown}");
    let rejected = cli(&["sessions", "review", &id, "--reject", "--revert"]).output().unwrap();
    let said = String::from_utf8_lossy(&rejected.stderr).to_string();
    assert!(!said.contains("Not reverted"), "nobody but the task touched marker.txt: {said}");
    assert!(!ws.join("marker.txt").exists(), "what the task made is reverted: {said}");
    assert_eq!(std::fs::read_to_string(ws.join("README.md")).unwrap(), "mine\n");
}

/// Killed while its command ran; while Finishline was closed the person edited README.md and
/// saved a new file. The window the kill left open spans that time, so those changes looked like
/// the task's: a reject deleted the person's new file and put README.md back (keeping copies).
/// What changed after the run was last seen alive is now put back only when the person says so;
/// what the command wrote before the kill is still reverted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_the_person_changes_while_a_killed_task_is_closed_is_not_reverted_without_asking() {
    let server = FakeServer::start(marker_scenario()).await.unwrap();
    let url = server.base_url(Protocol::Openai);
    let dir = tempfile::tempdir().unwrap();
    let (id, cli, ws) = killed_while_its_command_runs(dir.path(), &url).await;
    std::fs::write(ws.join("README.md"), "mine, edited while Finishline was closed\n").unwrap();
    std::fs::write(ws.join("notes.txt"), "my notes\n").unwrap();
    resumed_to_its_review(&cli, &id, &url).await;
    let asked = cli(&["sessions", "review", &id, "--reject", "--revert"]).output().unwrap();
    let said = String::from_utf8_lossy(&asked.stderr).to_string();
    assert!(said.contains("Not reverted") && said.contains("README.md, notes.txt"), "the person is asked about their files: {said}");
    assert!(!said.contains("marker.txt"), "not about what the command wrote before the kill: {said}");
    let rejected = cli(&["sessions", "review", &id, "--reject", "--revert", "--keep-changed"]).output().unwrap();
    let said = String::from_utf8_lossy(&rejected.stderr).to_string();
    assert!(!ws.join("marker.txt").exists(), "what the command wrote before the kill is reverted: {said}");
    assert_eq!(std::fs::read_to_string(ws.join("README.md")).unwrap(), "mine, edited while Finishline was closed\n", "{said}");
    assert_eq!(std::fs::read_to_string(ws.join("notes.txt")).unwrap(), "my notes\n", "{said}");
}

/// Killed while its command ran, in the person's folder: rejected as it ended, with no resume
/// (which would run the model again), what the command wrote is put back. The reject said the
/// task was interrupted, not waiting for a review, and discard that it had no worktree.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_killed_in_the_persons_folder_is_rejected_as_it_ended_and_reverted() {
    let server = FakeServer::start(marker_scenario()).await.unwrap();
    let url = server.base_url(Protocol::Openai);
    let dir = tempfile::tempdir().unwrap();
    let (id, cli, ws) = killed_while_its_command_runs(dir.path(), &url).await;
    let asked = server.requests().len();
    let discard = cli(&["sessions", "discard", &id]).output().unwrap();
    let said = String::from_utf8_lossy(&discard.stderr).to_string();
    assert!(said.contains(&format!("sessions review {id} --reject --revert")), "discard names the way to undo it: {said}");
    let rejected = cli(&["sessions", "review", &id, "--reject", "--revert"]).output().unwrap();
    let said = String::from_utf8_lossy(&rejected.stderr).to_string();
    assert_eq!(rejected.status.code(), Some(3), "{said}");
    assert!(said.contains("ended interrupted without a review"), "{said}");
    assert!(!ws.join("marker.txt").exists(), "what the command wrote is put back: {said}");
    assert_eq!(std::fs::read_to_string(ws.join("README.md")).unwrap(), "mine\n", "the person's file is untouched");
    assert_eq!(server.requests().len(), asked, "no model was asked");
}

/// Killed while its command ran; the person then deleted what the command made. Asked for its
/// review as it ended, it has nothing to show: it says so and stays interrupted, to resume as a
/// resume (its budget and its place kept), not turned into a cancelled task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_task_with_nothing_left_to_review_stays_interrupted() {
    let server = FakeServer::start(marker_scenario()).await.unwrap();
    let url = server.base_url(Protocol::Openai);
    let dir = tempfile::tempdir().unwrap();
    let (id, cli, ws) = killed_while_its_command_runs(dir.path(), &url).await;
    std::fs::remove_file(ws.join("marker.txt")).unwrap();
    let shown = cli(&["sessions", "review", &id]).output().unwrap();
    let said = String::from_utf8_lossy(&shown.stderr).to_string();
    assert_eq!(shown.status.code(), Some(2), "{said}");
    assert!(said.contains("changed no files: there is nothing to review") && said.contains("sessions resume"), "and the way on: {said}");
    let list = cli(&["sessions", "list", "--json"]).output().unwrap();
    let row: Value = serde_json::from_str(String::from_utf8_lossy(&list.stdout).lines().next().unwrap()).unwrap();
    assert_eq!(row["status"], "interrupted", "{row}");
}
