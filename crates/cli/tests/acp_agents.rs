//! `finishline run --agent …` with the real Claude Code, Gemini CLI and Codex (npm, pinned in
//! tests/agents), offline against the fake provider: Ctrl-C and SIGTERM in the middle of the
//! agent's turn cancel the run, record it as cancelled, and leave no process of the agent behind.

mod support {
    pub mod cli;
}
#[path = "../../engine/tests/support/agents.rs"]
mod agents;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use agents::{finishline_evaluator, finishline_side_calls, recorded_groups, Real};
use fake_llm::{FakeServer, Protocol};
use finishline_engine::process_groups::group_alive;
use serde_json::json;
use support::cli::*;

async fn a_signal_mid_turn_cancels_and_ends_the_agent(real: Real, sig: &'static str) {
    let mut r = real.side_calls();
    r.extend([
        finishline_evaluator(json!({"text": "{\"done\": true}"}), None),
        finishline_side_calls(),
        real.turn(json!({}), json!({"text": "Thinking it over slowly, one word after another, for a long while yet", "chunk_delay_ms": 1000})),
    ]);
    let server = FakeServer::start(serde_json::from_value(json!({"rules": r})).unwrap()).await.unwrap();
    let home = tempfile::tempdir().unwrap();
    let agent = real.agent(&server, home.path(), Some("fake-key"));
    let line = std::iter::once(agent.command.clone()).chain(agent.args.iter().cloned()).collect::<Vec<_>>().join(" ");
    let e = env();
    let url = server.base_url(Protocol::Openai);
    let mut cli = with_ctrl_c(&mut Command::new(bin()))
        .args(["run", "Think slowly", "--workspace"])
        .arg(&e.ws)
        .args(["--base-url", &url, "--model", "fake-model", "--agent", &line, "--review", "approve", "--data-dir"])
        .arg(&e.data)
        .env_remove("OPENAI_API_KEY")
        .env("XDG_DATA_HOME", e.data.join("xdg"))
        // The agent gets the person's environment: its own settings come this way.
        .envs(&agent.env)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let until = Instant::now() + Duration::from_secs(60);
    while !server.requests().iter().any(|q| q.kind == fake_llm::RequestKind::Agent && q.protocol == real.protocol()) {
        assert!(Instant::now() < until && cli.try_wait().unwrap().is_none(), "the agent never asked its model");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let groups = recorded_groups(&e.data);
    assert!(!groups.is_empty(), "the agent runs in a recorded process group");
    let sent = Instant::now();
    assert!(Command::new("kill").args([&format!("-{sig}"), &cli.id().to_string()]).status().unwrap().success());
    let code = loop {
        if let Some(s) = cli.try_wait().unwrap() {
            break s.code();
        }
        assert!(sent.elapsed() < Duration::from_secs(10), "finishline did not exit after SIG{sig}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    while groups.iter().any(|g| group_alive(*g)) {
        assert!(sent.elapsed() < Duration::from_secs(15), "every process of {real:?} is gone within 15 s of SIG{sig}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut err = String::new();
    std::io::Read::read_to_string(cli.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert_eq!(code, Some(5), "SIG{sig} ends the run as cancelled (exit 5): {err}");
    let rows = lines(&finishline(&["sessions", "list", "--json"], &e.data));
    assert_eq!(rows[0]["status"], "cancelled", "the session is recorded as cancelled");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_in_the_middle_of_claude_codes_turn_cancels_and_leaves_nothing_running() {
    a_signal_mid_turn_cancels_and_ends_the_agent(Real::Claude, "TERM").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_in_the_middle_of_claude_codes_turn_cancels_and_leaves_nothing_running() {
    a_signal_mid_turn_cancels_and_ends_the_agent(Real::Claude, "INT").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_in_the_middle_of_gemini_clis_turn_cancels_and_leaves_nothing_running() {
    a_signal_mid_turn_cancels_and_ends_the_agent(Real::Gemini, "TERM").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_in_the_middle_of_gemini_clis_turn_cancels_and_leaves_nothing_running() {
    a_signal_mid_turn_cancels_and_ends_the_agent(Real::Gemini, "INT").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_in_the_middle_of_codexs_turn_cancels_and_leaves_nothing_running() {
    a_signal_mid_turn_cancels_and_ends_the_agent(Real::Codex, "TERM").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_in_the_middle_of_codexs_turn_cancels_and_leaves_nothing_running() {
    a_signal_mid_turn_cancels_and_ends_the_agent(Real::Codex, "INT").await;
}
