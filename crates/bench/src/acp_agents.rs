//! The other agents of section 7: Claude Code, Gemini CLI and Codex, each against the fake
//! provider in its vendor's own protocol, once in its own headless mode (`claude -p`,
//! `gemini -p`, `codex exec`) and once under Finishline over ACP. A first turn (the agent's
//! process starting included), a later turn, and the memory of the agent's own processes.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fake_llm::{FakeServer, Protocol, Scenario};
use finishline_engine::agent::{Engine, ModelEndpoint};
use finishline_engine::provider::ProviderConfig;
use finishline_engine::store::Store;
use finishline_engine::ProviderKind;
use serde_json::{json, Value};

// The tests' recipe for each agent (its HOME, its vendor's protocol, its write tool), so the
// benchmark runs the agents exactly as the tests prove them.
#[path = "../../engine/tests/support/agents.rs"]
mod agents;
use agents::Real;

use crate::acp::verdict;
use crate::report::{median, Table};

/// What the person says to send the agent back, the same on both paths.
const LATER: &str = "world.txt is missing: write it.";

fn with_times(mut rule: Value, times: u32) -> Value {
    rule["times"] = json!(times);
    rule
}

/// The agent's model: hello.txt first, world.txt when told it is missing, then a short answer.
/// Finishline's evaluator (OpenAI protocol) says "not done" once when `two_turns`.
fn rules(real: Real, ws: &Path, two_turns: bool) -> Value {
    let mut r = real.side_calls();
    if two_turns {
        r.push(agents::finishline_evaluator(verdict(false, "world.txt"), Some(1)));
    }
    r.push(agents::finishline_evaluator(verdict(true, ""), None));
    r.push(agents::finishline_side_calls());
    r.push(with_times(real.turn(json!({"last_message_contains": LATER}), json!({"tool_calls": [real.write(ws, "world.txt", "world\n")]})), 1));
    r.push(with_times(real.turn(json!({"last_message_contains": "Write hello.txt"}), json!({"tool_calls": [real.write(ws, "hello.txt", "hello\n")]})), 1));
    r.push(real.turn(json!({}), json!({"text": "The file is written."})));
    json!(r)
}

async fn server(real: Real, ws: &Path, two_turns: bool) -> FakeServer {
    let scenario: Scenario = serde_json::from_value(json!({ "rules": rules(real, ws, two_turns) })).expect("scenario");
    FakeServer::start(scenario).await.expect("fake server")
}

fn name(real: Real) -> &'static str {
    match real {
        Real::Claude => "Claude Code",
        Real::Gemini => "Gemini CLI",
        Real::Codex => "Codex",
    }
}

fn agents_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/agents/node_modules")
}

/// The headless command of each agent, from the same install: Claude Code's own executable (the
/// one claude-agent-acp runs through its SDK), Gemini CLI, and the Codex CLI.
fn headless_bin(real: Real) -> PathBuf {
    match real {
        Real::Claude => agents_dir().join("@anthropic-ai/claude-agent-sdk-linux-x64/claude"),
        Real::Gemini => agents_dir().join(".bin/gemini"),
        Real::Codex => agents_dir().join(".bin/codex"),
    }
}

/// The headless command's arguments for the first turn, or for a later one in the same
/// conversation. Each approves its own tools, as Finishline's `allow_all` does on the other path.
fn headless_args(real: Real, later: bool) -> Vec<&'static str> {
    match (real, later) {
        (Real::Claude, false) => vec!["-p", "Write hello.txt", "--dangerously-skip-permissions"],
        (Real::Claude, true) => vec!["-p", "--continue", LATER, "--dangerously-skip-permissions"],
        (Real::Gemini, false) => vec!["-p", "Write hello.txt", "--yolo"],
        (Real::Gemini, true) => vec!["--resume", "latest", "-p", LATER, "--yolo"],
        (Real::Codex, false) => vec!["exec", "--skip-git-repo-check", "-c", "approval_policy=\"never\"", "Write hello.txt"],
        (Real::Codex, true) => vec!["exec", "--skip-git-repo-check", "-c", "approval_policy=\"never\"", "resume", "--last", LATER],
    }
}

/// Gemini CLI run headless asks which login to use and distrusts a new folder; under ACP the
/// client settles both. Written for both paths, so they read the same settings.
fn prepare_home(real: Real, home: &Path) {
    if real == Real::Gemini {
        let dir = home.join(".gemini");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("settings.json"), r#"{"security":{"auth":{"selectedType":"gemini-api-key"},"folderTrust":{"enabled":false}}}"#).unwrap();
    }
}

/// A workspace (and its canonical path, which the agents' write tools are given), a HOME of
/// the agent's own, and the fake provider scripted for it.
async fn setting(real: Real, two_turns: bool) -> (tempfile::TempDir, tempfile::TempDir, PathBuf, FakeServer) {
    let ws = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    prepare_home(real, home.path());
    let wsp = ws.path().canonicalize().unwrap();
    let server = server(real, &wsp, two_turns).await;
    (ws, home, wsp, server)
}

/// The resident memory of every live process in group `pgid`.
fn group_rss(pgid: u32) -> u64 {
    let Ok(dir) = std::fs::read_dir("/proc") else { return 0 };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()))
        .filter(|pid| finishline_engine::process_groups::proc_stat(*pid).is_some_and(|s| s.pgrp == pgid))
        .filter_map(|pid| std::fs::read_to_string(format!("/proc/{pid}/status")).ok())
        .filter_map(|s| s.lines().find(|l| l.starts_with("VmRSS:")).and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok()))
        .sum::<u64>()
        * 1024
}

/// Samples the peak memory of the groups `groups()` names every 50 ms until dropped.
struct PeakSampler {
    peak: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

impl PeakSampler {
    fn start(groups: impl Fn() -> Vec<u32> + Send + 'static) -> Self {
        let peak = Arc::new(AtomicU64::new(0));
        let p = peak.clone();
        let task = tokio::spawn(async move {
            loop {
                p.fetch_max(groups().into_iter().map(group_rss).sum(), Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        });
        PeakSampler { peak, task }
    }

    fn peak(self) -> u64 {
        self.task.abort();
        self.peak.load(Ordering::Relaxed)
    }
}

/// One headless run to its exit, in a process group of its own: wall time and peak memory.
async fn headless_run(real: Real, server: &FakeServer, ws: &Path, home: &Path, later: bool) -> Result<(Duration, u64), String> {
    let agent = real.agent(server, home, Some("fake-key"));
    let mut cmd = tokio::process::Command::new(headless_bin(real));
    cmd.args(headless_args(real, later))
        .current_dir(ws)
        .env("PWD", ws)
        .envs(&agent.env)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let started = Instant::now();
    let child = cmd.spawn().map_err(|e| format!("{} could not start: {e}", name(real)))?;
    let pgid = child.id().unwrap_or(0);
    let sampler = PeakSampler::start(move || vec![pgid]);
    let out = tokio::time::timeout(Duration::from_secs(120), child.wait_with_output())
        .await
        .map_err(|_| format!("{} headless did not end in 120 s", name(real)))?
        .map_err(|e| e.to_string())?;
    let took = started.elapsed();
    let peak = sampler.peak();
    // Whatever it left running in its group goes with it.
    unsafe { libc::killpg(pgid as i32, libc::SIGKILL) };
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(format!(
            "{} headless failed ({}): {}",
            name(real),
            out.status,
            err.chars().rev().take(800).collect::<String>().chars().rev().collect::<String>()
        ));
    }
    Ok((took, peak))
}

/// The ACP adapter on its own, with no Finishline around it: its process started, `initialize`
/// and `session/new` answered (no MCP server, no prompt), as a bare client sends them. What any
/// ACP client pays before the first prompt.
async fn adapter_start(real: Real) -> Result<Duration, String> {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let (_ws, home, wsp, server) = setting(real, false).await;
    let agent = real.agent(&server, home.path(), Some("fake-key"));
    let started = Instant::now();
    let mut child = tokio::process::Command::new(&agent.command)
        .args(&agent.args)
        .current_dir(&wsp)
        .envs(&agent.env)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("{} could not start: {e}", name(real)))?;
    let pgid = child.id().unwrap_or(0);
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let requests = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": wsp, "mcpServers": []}}),
    ];
    let answered = async {
        for (i, r) in requests.iter().enumerate() {
            stdin.write_all(format!("{r}\n").as_bytes()).await.map_err(|e| e.to_string())?;
            loop {
                let line = lines.next_line().await.map_err(|e| e.to_string())?.ok_or("the adapter closed its output")?;
                if serde_json::from_str::<Value>(&line).is_ok_and(|v| v["id"] == json!(i + 1)) {
                    break;
                }
            }
        }
        Ok::<_, String>(started.elapsed())
    };
    let took = tokio::time::timeout(Duration::from_secs(60), answered).await.map_err(|_| format!("{} did not open a session in 60 s", name(real)))?;
    unsafe { libc::killpg(pgid as i32, libc::SIGKILL) };
    took
}

/// Two turns of one agent, on one path: their times, and the peak memory of its processes.
struct Turns {
    first: Duration,
    later: Duration,
    peak: u64,
}

/// The headless mode: the first turn, then the person sending it back in the same conversation.
async fn alone(real: Real) -> Result<Turns, String> {
    let (_ws, home, wsp, server) = setting(real, true).await;
    let (first, peak1) = headless_run(real, &server, &wsp, home.path(), false).await?;
    if !wsp.join("hello.txt").exists() {
        return Err(format!("{} headless did not write hello.txt", name(real)));
    }
    let (later, peak2) = headless_run(real, &server, &wsp, home.path(), true).await?;
    if !wsp.join("world.txt").exists() {
        return Err(format!("{} headless, sent back, did not write world.txt", name(real)));
    }
    Ok(Turns { first, later, peak: peak1.max(peak2) })
}

/// The same two turns under Finishline: the evaluator says world.txt is missing once.
async fn under_finishline(real: Real) -> Result<Turns, String> {
    let (_ws, home, wsp, server) = setting(real, true).await;
    let data = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open(&data.path().join("history.db"), Arc::new(finishline_engine::clock::SystemClock)).map_err(|e| e.to_string())?);
    let endpoint =
        ModelEndpoint::http(ProviderConfig::new(ProviderKind::Openai, server.base_url(Protocol::Openai), None), "fake-model").map_err(|e| e.to_string())?;
    let mut config = crate::engine_config::defaults(data.path(), endpoint);
    config.external = Some(real.agent(&server, home.path(), Some("fake-key")));
    config.claims_pipe = finishline_engine::external::claims_pipe::PipeCommand::this_executable();
    config.permissions.allow_all = true;
    let engine = Engine::new(store.clone(), config);
    let processes = data.path().join("processes");
    let sampler = PeakSampler::start(move || {
        std::fs::read_dir(&processes)
            .map(|d| d.flatten().filter_map(|e| e.path().file_stem().and_then(|s| s.to_str()).and_then(|s| s.parse().ok())).collect())
            .unwrap_or_default()
    });
    let timed = crate::acp::run_and_time(&engine, &store, "Write hello.txt", &wsp).await;
    let peak = sampler.peak();
    let (_, times) = timed.map_err(|e| format!("{} under Finishline: {e}", name(real)))?;
    if !wsp.join("world.txt").exists() {
        return Err(format!("{} under Finishline did not write world.txt", name(real)));
    }
    Ok(Turns {
        first: times.first.ok_or_else(|| format!("{}: no turn ended", name(real)))?,
        later: times.later.ok_or_else(|| format!("{}: the second turn never came", name(real)))?,
        peak,
    })
}

fn mb(bytes: u64) -> String {
    format!("{:.0} MB", bytes as f64 / 1_048_576.0)
}

pub async fn run(smoke: bool, table: &mut Table) -> Result<(), String> {
    let runs = if smoke { 1 } else { 5 };
    for real in [Real::Claude, Real::Gemini, Real::Codex] {
        let (mut a_first, mut a_later, mut u_first, mut u_later) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let (mut a_peak, mut u_peak) = (0, 0);
        let mut bare = Vec::new();
        for i in 0..runs {
            eprintln!("   acp: {} alone and under Finishline, run {}", name(real), i + 1);
            let a = alone(real).await?;
            let u = under_finishline(real).await?;
            bare.push(adapter_start(real).await?);
            a_first.push(a.first);
            a_later.push(a.later);
            u_first.push(u.first);
            u_later.push(u.later);
            a_peak = a_peak.max(a.peak);
            u_peak = u_peak.max(u.peak);
        }
        let how = match real {
            Real::Claude => ("`claude -p` to its exit", "`claude -p --continue`"),
            Real::Gemini => ("`gemini -p` to its exit", "`gemini --resume latest -p`"),
            Real::Codex => ("`codex exec` to its exit", "`codex exec resume --last`"),
        };
        let row = |measure: String, alone: Duration, alone_how: &str, under: Duration, under_how: &str, goal: f64| {
            let ratio = under.as_secs_f64() / alone.as_secs_f64();
            vec![
                measure,
                format!("{} ms ({alone_how})", alone.as_millis()),
                format!("{} ms ({under_how})", under.as_millis()),
                format!("at most {goal:.1}×"),
                format!("{} ({ratio:.2}×)", if ratio <= goal { "yes" } else { "NO" }),
            ]
        };
        let (first_under, bare_start, later_under) = (median(&mut u_first), median(&mut bare), median(&mut u_later));
        table.row(row(
            format!("{}: first turn, median", name(real)),
            median(&mut a_first),
            how.0,
            first_under,
            "session start to the end of the turn, over ACP",
            1.1,
        ));
        table.row(vec![
            format!("{}: its ACP adapter's own start (process, `initialize`, `session/new`; no Finishline, no prompt), median", name(real)),
            format!("{} ms (any ACP client pays it before the first prompt)", bare_start.as_millis()),
            format!(
                "Finishline's own share of the first turn: about {} ms (the first turn less the adapter's start and a later turn)",
                first_under.saturating_sub(bare_start).saturating_sub(later_under).as_millis()
            ),
            "—".into(),
            "—".into(),
        ]);
        table.row(row(
            format!("{}: a later turn, median", name(real)),
            median(&mut a_later),
            how.1,
            later_under,
            "the continuation to the end of its turn",
            1.0,
        ));
        table.row(vec![format!("{}: the agent's own processes, peak memory", name(real)), mb(a_peak), mb(u_peak), "reported".into(), "—".into()]);
    }
    Ok(())
}
