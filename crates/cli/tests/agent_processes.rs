//! `finishline run --agent …` owns the agent's process group: Ctrl-C, SIGTERM (a `timeout`, CI)
//! and SIGHUP (a closed terminal) cancel the run, record it as cancelled, and leave nothing of the
//! agent running; after a crash (SIGKILL), the next start ends what was left. The agent is the
//! scripted one (tests/agents/scripted-acp.mjs), which can ignore `session/cancel` and start a
//! child of its own, as the real agents start the CLIs they drive.

mod support {
    pub mod cli;
}

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fake_llm::{FakeServer, Protocol};
use finishline_engine::process_groups::{group_alive, proc_stat};
use serde_json::{json, Value};
use support::cli::*;

struct Agent {
    logs: tempfile::TempDir,
    command: String,
}

fn scripted(script: Value) -> Agent {
    let logs = tempfile::tempdir().unwrap();
    let file = logs.path().join("script.json");
    std::fs::write(&file, script.to_string()).unwrap();
    let js = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/agents/scripted-acp.mjs").canonicalize().unwrap();
    Agent { command: format!("node {} {}", js.display(), file.display()), logs }
}

impl Agent {
    fn log(&self, name: &str) -> String {
        std::fs::read_to_string(self.logs.path().join(name)).unwrap_or_default()
    }
    /// The agent's, its child's and its escaped child's pids (see [`deaf`]) once its turn has
    /// begun.
    fn started(&self) -> (u32, u32, u32) {
        let until = Instant::now() + Duration::from_secs(30);
        while Instant::now() < until {
            if let (Some(line), true) = (self.log("pids.log").lines().next().map(String::from), !self.log("prompts.log").is_empty()) {
                let v: Value = serde_json::from_str(&line).unwrap();
                return (v["agent"].as_u64().unwrap() as u32, v["child"].as_u64().unwrap() as u32, v["escaped"].as_u64().unwrap_or(0) as u32);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("the agent did not start its turn");
    }
}

/// A deaf agent: it starts a child, and another in a session of its own (outside its process
/// group, as `setsid` and daemons do), begins its turn, and ignores `session/cancel`.
fn deaf() -> Agent {
    scripted(
        json!({"children": true, "escaped_child": true, "turns": [{"updates": [{"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Editing"}}], "end": "deaf"}]}),
    )
}

fn start(agent: &Agent, url: &str, e: &Env) -> Child {
    run_with(agent, url, e).spawn().unwrap()
}

/// `finishline run "Edit forever" --agent <agent>`, not started yet.
fn run_with(agent: &Agent, url: &str, e: &Env) -> Command {
    let mut cmd = Command::new(bin());
    with_ctrl_c(&mut cmd);
    cmd.args(["run", "Edit forever", "--workspace"])
        .arg(&e.ws)
        .args(["--base-url", url, "--model", "fake-model", "--agent", &agent.command, "--review", "approve", "--data-dir"])
        .arg(&e.data)
        .env_remove("OPENAI_API_KEY")
        .env("XDG_DATA_HOME", e.data.join("xdg"))
        .env("SCRIPTED_ACP_LOGS", agent.logs.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

fn signal(pid: u32, sig: &str) {
    assert!(Command::new("kill").args([&format!("-{sig}"), &pid.to_string()]).status().unwrap().success());
}

fn wait_exit(child: &mut Child, within: Duration) -> Option<i32> {
    let until = Instant::now() + within;
    while Instant::now() < until {
        if let Some(s) = child.try_wait().unwrap() {
            return s.code();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

fn gone_within(pgid: u32, until: Instant) -> bool {
    loop {
        if !group_alive(pgid) {
            return true;
        }
        if Instant::now() > until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A fake provider whose evaluator says every task is done, with `rules` for the agent after it.
async fn evaluator_says_done(rules: Vec<Value>) -> FakeServer {
    let verdict = json!({"done": true, "summary": "ok", "remaining": [], "continuation_prompt": "", "is_stuck": false, "stuck_reason": ""}).to_string();
    let mut all = vec![json!({"when": {"kind": "evaluator"}, "reply": {"text": verdict}})];
    all.extend(rules);
    FakeServer::start(serde_json::from_value(json!({ "rules": all })).unwrap()).await.unwrap()
}

fn last_status(data: &std::path::Path) -> String {
    let out = finishline(&["sessions", "list", "--json"], data);
    let rows = lines(&out);
    rows.first().and_then(|r| r["status"].as_str()).unwrap_or_default().to_string()
}

async fn a_stop_signal_cancels_and_leaves_nothing_running(sig: &'static str) {
    let server = FakeServer::start(serde_json::from_value(json!({"rules": []})).unwrap()).await.unwrap();
    let url = server.base_url(Protocol::Openai);
    let agent = deaf();
    let e = env();
    let out = tokio::task::spawn_blocking(move || {
        let mut cli = start(&agent, &url, &e);
        let (pgid, child, escaped) = agent.started();
        assert!(escaped > 0 && proc_stat(escaped).is_some_and(|s| s.pgrp == escaped), "the escaped child leads a group of its own");
        let sent = Instant::now();
        signal(cli.id(), sig);
        let code = wait_exit(&mut cli, Duration::from_secs(10));
        // Generous: the run's grace for a deaf agent is 3 s, and the machine may be loaded.
        let gone = gone_within(pgid, sent + Duration::from_secs(15));
        let child_alive = proc_stat(child).is_some();
        let escaped_alive = !gone_within(escaped, sent + Duration::from_secs(15));
        let status = last_status(&e.data);
        let stderr = cli.stderr.take().map(|mut s| {
            let mut t = String::new();
            std::io::Read::read_to_string(&mut s, &mut t).unwrap();
            t
        });
        (code, gone, child_alive, escaped_alive, status, stderr, sent.elapsed())
    })
    .await
    .unwrap();
    let (code, gone, child_alive, escaped_alive, status, stderr, _) = out;
    assert_eq!(code, Some(5), "SIG{sig} ends `finishline run` as cancelled (exit 5): {stderr:?}");
    assert!(gone, "the agent's whole process group is gone within 15 s of SIG{sig}, though it ignored session/cancel");
    assert!(!child_alive, "the child the agent started went with it");
    assert!(!escaped_alive, "the child that left the agent's process group (setsid) went with it too");
    assert_eq!(status, "cancelled", "the session is recorded as cancelled, not left running");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_mid_turn_cancels_the_run_and_ends_the_agents_process_group() {
    a_stop_signal_cancels_and_leaves_nothing_running("TERM").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_mid_turn_cancels_the_run_and_ends_the_agents_process_group() {
    a_stop_signal_cancels_and_leaves_nothing_running("HUP").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_mid_turn_cancels_the_run_and_ends_the_agents_process_group() {
    a_stop_signal_cancels_and_leaves_nothing_running("INT").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_next_start_after_a_crash_ends_the_agent_the_crashed_run_left_running() {
    let server = evaluator_says_done(vec![]).await;
    let url = server.base_url(Protocol::Openai);
    let agent = deaf();
    let quick = scripted(
        json!({"turns": [{"updates": [{"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Nothing to change here, all checked."}}]}]}),
    );
    let e = env();
    let (left_running, ended) = tokio::task::spawn_blocking(move || {
        let mut cli = start(&agent, &url, &e);
        let (pgid, _, escaped) = agent.started();
        signal(cli.id(), "KILL");
        let _ = wait_exit(&mut cli, Duration::from_secs(5));
        std::thread::sleep(Duration::from_millis(300));
        let left_running = group_alive(pgid) && group_alive(escaped);
        let mut next = start(&quick, &url, &e);
        let until = Instant::now() + Duration::from_secs(10);
        let ended = gone_within(pgid, until) && gone_within(escaped, until);
        let _ = wait_exit(&mut next, Duration::from_secs(30));
        (left_running, ended)
    })
    .await
    .unwrap();
    assert!(left_running, "a crash (SIGKILL) cannot end anything itself: the agent and its escaped child were still running");
    assert!(ended, "the next `finishline run` found the crashed run's record and ended the agent's group and the child that had left it");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_next_start_after_a_crash_ends_a_command_the_built_in_agent_left_running() {
    let pids = tempfile::tempdir().unwrap();
    let pid_file = pids.path().join("command.pid");
    // The built-in agent runs a command that would go on for ten minutes (a dev server, a watcher).
    let command = format!("echo $$ > {}; exec sleep 600", pid_file.display());
    let server = evaluator_says_done(vec![
        json!({"when": {"kind": "agent", "last_message_contains": "serve the site"}, "reply": {"text": "Starting it.", "tool_calls": [{"name": "run_command", "arguments": {"command": command}}]}}),
        json!({"when": {"kind": "agent"}, "reply": {"text": "Done! Nothing else to do."}}),
    ])
    .await;
    let url = server.base_url(Protocol::Openai);
    let e = env();
    let run = move |task: &str| {
        Command::new(bin())
            .args(["run", task, "--workspace"])
            .arg(&e.ws)
            .args(["--base-url", &url, "--model", "m", "--allow", "all", "--review", "approve", "--data-dir"])
            .arg(&e.data)
            .env_remove("OPENAI_API_KEY")
            .env("XDG_DATA_HOME", e.data.join("xdg"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    };
    let (left_running, ended) = tokio::task::spawn_blocking(move || {
        let mut cli = run("serve the site");
        let until = Instant::now() + Duration::from_secs(30);
        let pgid = loop {
            if let Some(p) = std::fs::read_to_string(&pid_file).ok().and_then(|s| s.trim().parse::<u32>().ok()) {
                break p;
            }
            assert!(Instant::now() < until, "the command did not start");
            std::thread::sleep(Duration::from_millis(50));
        };
        signal(cli.id(), "KILL");
        let _ = wait_exit(&mut cli, Duration::from_secs(5));
        std::thread::sleep(Duration::from_millis(300));
        let left_running = group_alive(pgid);
        let mut next = run("say hello");
        let ended = gone_within(pgid, Instant::now() + Duration::from_secs(10));
        let _ = wait_exit(&mut next, Duration::from_secs(30));
        if !ended {
            // Not left behind by the test either.
            let _ = Command::new("kill").args(["-KILL", "--", &format!("-{pgid}")]).status();
        }
        (left_running, ended)
    })
    .await
    .unwrap();
    assert!(left_running, "a crash (SIGKILL) cannot end anything itself: the command was still running");
    assert!(ended, "the next `finishline run` found the crashed run's record of the command and ended it");
}

/// `nohup finishline run …`: started with SIGHUP ignored, a closed terminal does not stop the
/// run (as `nohup` promises); SIGTERM still does, and ends the agent's group.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_started_under_nohup_goes_on_when_the_terminal_closes() {
    let server = FakeServer::start(serde_json::from_value(json!({"rules": []})).unwrap()).await.unwrap();
    let url = server.base_url(Protocol::Openai);
    let agent = deaf();
    let e = env();
    let (survived, code, gone) = tokio::task::spawn_blocking(move || {
        use std::os::unix::process::CommandExt;
        let mut cmd = run_with(&agent, &url, &e);
        cmd.stdout(Stdio::null()).stderr(Stdio::null());
        // What `nohup` does before it starts the command.
        // SAFETY: signal() is async-signal-safe.
        unsafe {
            cmd.pre_exec(|| {
                libc::signal(libc::SIGHUP, libc::SIG_IGN);
                Ok(())
            });
        }
        let mut cli = cmd.spawn().unwrap();
        let (pgid, _, _) = agent.started();
        signal(cli.id(), "HUP");
        // Longer than a stop's grace (4 s), after which a stopped run has exited.
        std::thread::sleep(Duration::from_millis(5500));
        let survived = cli.try_wait().unwrap().is_none() && group_alive(pgid);
        signal(cli.id(), "TERM");
        let code = wait_exit(&mut cli, Duration::from_secs(10));
        let gone = gone_within(pgid, Instant::now() + Duration::from_secs(15));
        (survived, code, gone)
    })
    .await
    .unwrap();
    assert!(survived, "SIGHUP, ignored at the start, did not stop the run");
    assert_eq!(code, Some(5), "SIGTERM still stops it as cancelled");
    assert!(gone, "and the agent's group with it");
}

/// The resume an external agent's run suggests works pasted as printed: its session records the
/// agent, not the server its evaluator asked, so the command carries the flags that named it
/// (pasted without them it said "no model").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_resume_an_agents_run_suggests_names_the_server_it_needs() {
    let server = FakeServer::start(serde_json::from_value(json!({"rules": []})).unwrap()).await.unwrap();
    let url = server.base_url(Protocol::Openai);
    let agent =
        scripted(json!({"turns": [{"updates": [{"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Starting"}}], "end": "exit"}]}));
    let e = env();
    let (said, e, agent) = tokio::task::spawn_blocking(move || {
        let out = run_with(&agent, &url, &e).output().unwrap();
        (String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr), e, agent)
    })
    .await
    .unwrap();
    let resume = said.lines().find_map(|l| l.split('`').nth(1).filter(|c| c.contains("sessions resume"))).unwrap_or_else(|| panic!("a resume: {said}"));
    let url = server.base_url(Protocol::Openai);
    assert!(resume.contains(&format!("--base-url {url} --model fake-model --agent '")), "{resume}");
    assert!(resume.ends_with(&format!("--data-dir {}", e.data.display())), "{resume}");
    let again = Command::new("sh")
        .args(["-c", resume])
        .env_remove("OPENAI_API_KEY")
        .env("XDG_DATA_HOME", e.data.join("xdg"))
        .env("SCRIPTED_ACP_LOGS", agent.logs.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let again = String::from_utf8_lossy(&again.stdout).to_string() + &String::from_utf8_lossy(&again.stderr);
    assert!(again.contains("── run (message) ──") && again.contains("Starting"), "pasted as printed, the agent works again: {again}");
}

/// An agent's tool refused with no terminal to ask is named in the hint by what `--allow` takes:
/// Gemini CLI titles each call by its file ("Writing to a.txt"), and `--allow Writing to a.txt`
/// allowed nothing (the shell split it, and the next file has another title). The agent's kind
/// for the tool (`edit`) allows the next write, pasted as printed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agents_write_refused_unasked_is_allowed_again_by_the_kind_the_hint_names() {
    let server = evaluator_says_done(vec![]).await;
    let url = server.base_url(Protocol::Openai);
    let turn = |id: &str, file: &str| {
        json!({"updates": [{"sessionUpdate": "tool_call", "toolCallId": id, "title": format!("Writing to {file}"), "kind": "edit", "status": "pending", "locations": [{"path": file}]}],
        "permission": {"toolCallId": id, "title": format!("Writing to {file}")},
        "after": [{"sessionUpdate": "tool_call_update", "toolCallId": id, "status": "completed"}, {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": format!("Wrote {file}.")}}]})
    };
    let agent = scripted(json!({"turns": [turn("c1", "a.txt"), turn("c2", "b.txt")]}));
    let e = env();
    let (said, e, agent) = tokio::task::spawn_blocking(move || {
        let out = run_with(&agent, &url, &e).output().unwrap();
        (String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr), e, agent)
    })
    .await
    .unwrap();
    assert_eq!(agent.log("permissions.log").trim(), "no", "refused unasked: {said}");
    let again = said
        .lines()
        .filter(|l| l.contains("needs your permission"))
        .find_map(|l| l.split('`').nth(1).filter(|c| c.contains("sessions resume")))
        .unwrap_or_else(|| panic!("a resume with it allowed: {said}"));
    assert!(again.contains("--allow edit"), "the kind, which the next file's write is known by too: {again}");
    assert!(!again.contains("Writing to"), "{again}");
    let pasted = Command::new("sh")
        .args(["-c", again])
        .env_remove("OPENAI_API_KEY")
        .env("XDG_DATA_HOME", e.data.join("xdg"))
        .env("SCRIPTED_ACP_LOGS", agent.logs.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let pasted = String::from_utf8_lossy(&pasted.stdout).to_string() + &String::from_utf8_lossy(&pasted.stderr);
    assert_eq!(agent.log("permissions.log").lines().collect::<Vec<_>>(), vec!["no", "yes"], "the next file's write is allowed: {pasted}");
}

/// An agent slow to start (a first `npx` download, a cold cache) is not silence: once the start
/// takes a few seconds the run says what it waits for and how long it will wait at most.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_slow_to_start_is_said_to_be_awaited_with_how_long_at_most() {
    let server = FakeServer::start(serde_json::from_value(json!({"rules": []})).unwrap()).await.unwrap();
    let url = server.base_url(Protocol::Openai);
    let agent = scripted(
        json!({"initialize_delay_ms": 4000, "turns": [{"updates": [{"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Started at last"}}], "end": "exit"}]}),
    );
    let e = env();
    let said = tokio::task::spawn_blocking(move || {
        let out = run_with(&agent, &url, &e).output().unwrap();
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr)
    })
    .await
    .unwrap();
    let waiting = said.lines().position(|l| l.contains("waiting for") && l.contains("to start") && l.contains("at most 120 s"));
    let started = said.lines().position(|l| l.contains("Started at last"));
    assert!(waiting.is_some() && waiting < started, "the wait is said before the agent's first words: {said}");
}

/// An agent that wants a key, met in a terminal: the CLI says how to give it there (the variable,
/// set where finishline runs, which the agent inherits), says it once, and the resume it prints,
/// pasted with the key set, goes on to the review.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_that_wants_a_key_is_told_how_to_get_it_in_a_terminal_and_the_printed_resume_goes_on() {
    let server = evaluator_says_done(vec![]).await;
    let url = server.base_url(Protocol::Openai);
    let agent = scripted(
        json!({"auth": "key", "turns": [{"updates": [{"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Wrote done.txt."}}], "write": {"path": "done.txt", "content": "done\n"}}]}),
    );
    let e = env();
    let (out, e, agent) = tokio::task::spawn_blocking(move || (run_with(&agent, &url, &e).output().unwrap(), e, agent)).await.unwrap();
    let said = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{said}");
    assert!(said.contains("SCRIPTED_KEY=… finishline"), "how to give the key in a terminal: {said}");
    assert!(!said.contains("give node SCRIPTED_KEY"), "not the window's words, which a terminal cannot act on: {said}");
    assert_eq!(said.matches("needs you to log in").count(), 1, "said once, not three times: {said}");
    assert!(!said.contains("It offers") && !said.contains("keychain for node only"), "the window's long form is not repeated: {said}");
    let again = said
        .lines()
        .find_map(|l| l.split('`').nth(1).filter(|c| c.contains("sessions resume")))
        .unwrap_or_else(|| panic!("a resume once the cause is fixed: {said}"));
    let pasted = Command::new("sh")
        .args(["-c", &format!("{again} --review approve")])
        .env_remove("OPENAI_API_KEY")
        .env("SCRIPTED_KEY", "sk-scripted")
        .env("XDG_DATA_HOME", e.data.join("xdg"))
        .env("SCRIPTED_ACP_LOGS", agent.logs.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let pasted = String::from_utf8_lossy(&pasted.stdout).to_string() + &String::from_utf8_lossy(&pasted.stderr);
    assert!(pasted.contains("created  done.txt"), "with the key set the agent works and its file is reviewed: {pasted}");
    assert_eq!(std::fs::read_to_string(e.ws.join("done.txt")).ok().as_deref(), Some("done\n"), "and approved, it lands: {pasted}");
}
