//! External agents: the real OpenCode (tests/agents, from npm) against the same fake provider,
//! once on its own (`opencode run`, which stops when the model says stop) and once under
//! Finishline over ACP. Two questions: what the ACP path costs per turn, and whether Finishline
//! catches every false completion OpenCode makes on its own.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fake_llm::{FakeServer, Protocol, Scenario};
use finishline_engine::agent::{Engine, ModelEndpoint};
use finishline_engine::domain::{ContinuationSource, SessionId, SessionStatus};
use finishline_engine::event::EngineEvent;
use finishline_engine::external::ExternalAgent;
use finishline_engine::provider::ProviderConfig;
use finishline_engine::store::Store;
use finishline_engine::ProviderKind;
use serde_json::{json, Value};

use crate::report::{median, Table};

fn opencode_bin() -> Result<PathBuf, String> {
    let bin = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/agents/node_modules/.bin/opencode");
    if bin.exists() {
        Ok(bin)
    } else {
        Err(format!("OpenCode is not installed at {}: run `bash scripts/setup`", bin.display()))
    }
}

pub(crate) fn verdict(done: bool, missing: &str) -> Value {
    let v = json!({"done": done, "summary": if done { "everything is written" } else { "a file is missing" }, "remaining": if done { json!([]) } else { json!([format!("write {missing}")]) },
        "continuation_prompt": if done { String::new() } else { format!("{missing} is missing: write it.") }, "is_stuck": false, "stuck_reason": ""});
    json!({"text": v.to_string()})
}

fn write(path: &str) -> Value {
    json!({"tool_calls": [{"name": "write", "arguments": {"filePath": path, "content": format!("{path}\n")}}]})
}

/// A case: the task, the files it asks for, and the fake provider's script for it.
struct Case {
    name: &'static str,
    task: &'static str,
    files: &'static [&'static str],
    rules: Value,
}

fn cases() -> Vec<Case> {
    let title = json!({"when": {"kind": "compaction"}, "reply": {"text": "Task"}});
    vec![
        Case {
            name: "early stop: \"Done!\" with one of two files written",
            task: "Write a.txt and b.txt",
            files: &["a.txt", "b.txt"],
            rules: json!([
                title,
                {"when": {"kind": "evaluator"}, "reply": verdict(false, "b.txt"), "times": 1},
                {"when": {"kind": "evaluator"}, "reply": verdict(true, "")},
                {"when": {"kind": "agent", "last_message_contains": "b.txt is missing"}, "reply": write("b.txt")},
                {"when": {"kind": "agent", "last_message_contains": "Wrote file successfully"}, "reply": {"text": "Done! Both files are written."}},
                {"when": {"kind": "agent"}, "reply": write("a.txt")}
            ]),
        },
        Case {
            name: "truncation: cut off at 2 tokens after the first file",
            task: "Write notes.txt and summary.txt",
            files: &["notes.txt", "summary.txt"],
            rules: json!([
                title,
                {"when": {"kind": "evaluator"}, "reply": verdict(true, "")},
                {"when": {"kind": "agent", "last_message_contains": "cut off"}, "reply": write("summary.txt")},
                {"when": {"kind": "agent", "last_message_contains": "Wrote file successfully"}, "reply": {"text": "I will now", "finish": "length", "usage": {"input": 50, "output": 2}}, "times": 1},
                {"when": {"kind": "agent", "last_message_contains": "Wrote file successfully"}, "reply": {"text": "Both files are written and checked."}},
                {"when": {"kind": "agent"}, "reply": write("notes.txt")}
            ]),
        },
    ]
}

fn one_turn_rules() -> Value {
    json!([
        {"when": {"kind": "compaction"}, "reply": {"text": "Task"}},
        {"when": {"kind": "evaluator"}, "reply": verdict(true, "")},
        {"when": {"kind": "agent", "last_message_contains": "Wrote file successfully"}, "reply": {"text": "hello.txt is written and checked."}},
        {"when": {"kind": "agent"}, "reply": write("hello.txt")}
    ])
}

/// The message of a later turn, the same on both paths: Finishline's continuation, and what the
/// person types to `opencode run --continue`.
const LATER: &str = "world.txt is missing: write it.";

/// Two turns: hello.txt, then world.txt when told it is missing. Under Finishline the evaluator
/// says so once, which starts the second turn.
fn two_turn_rules() -> Value {
    json!([
        {"when": {"kind": "compaction"}, "reply": {"text": "Task"}},
        {"when": {"kind": "evaluator"}, "reply": verdict(false, "world.txt"), "times": 1},
        {"when": {"kind": "evaluator"}, "reply": verdict(true, "")},
        {"when": {"kind": "agent", "last_message_contains": "Wrote file successfully"}, "reply": {"text": "The file is written and checked."}},
        {"when": {"kind": "agent", "last_message_contains": LATER}, "reply": write("world.txt")},
        {"when": {"kind": "agent"}, "reply": write("hello.txt")}
    ])
}

async fn server(rules: &Value) -> FakeServer {
    let scenario: Scenario = serde_json::from_value(json!({ "rules": rules })).expect("scenario");
    FakeServer::start(scenario).await.expect("fake server")
}

/// A workspace whose opencode.json points OpenCode at `server`, and a HOME of its own.
fn workspace(server: &FakeServer) -> (tempfile::TempDir, tempfile::TempDir) {
    let ws = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let config = json!({
        "provider": {"fake": {"npm": "@ai-sdk/openai-compatible", "name": "Fake", "options": {"baseURL": server.base_url(Protocol::Openai), "apiKey": "x"}, "models": {"fake-model": {"name": "Fake"}}}},
        "model": "fake/fake-model", "small_model": "fake/fake-model", "autoupdate": false, "share": "disabled"
    });
    std::fs::write(ws.path().join("opencode.json"), config.to_string()).unwrap();
    (ws, home)
}

fn home_env(home: &Path) -> Vec<(String, String)> {
    [
        ("HOME", home.to_path_buf()),
        ("XDG_CONFIG_HOME", home.join(".config")),
        ("XDG_DATA_HOME", home.join(".local/share")),
        ("XDG_CACHE_HOME", home.join(".cache")),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string_lossy().into_owned()))
    .collect()
}

/// `opencode run ARGS` in `ws` to its exit: its wall time.
async fn opencode_run(bin: &Path, ws: &Path, home: &Path, args: &[&str]) -> Result<Duration, String> {
    let started = Instant::now();
    let mut cmd = tokio::process::Command::new(bin);
    // PWD too: OpenCode finds its project from $PWD, which a changed working directory leaves
    // pointing at ours.
    cmd.arg("run")
        .args(args)
        .current_dir(ws)
        .env("PWD", ws)
        .envs(home_env(home))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    let out = tokio::time::timeout(Duration::from_secs(120), cmd.output())
        .await
        .map_err(|_| "opencode run did not end in 120 s".to_string())?
        .map_err(|e| e.to_string())?;
    let took = started.elapsed();
    if !out.status.success() {
        return Err(format!(
            "opencode run failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).chars().rev().take(800).collect::<String>().chars().rev().collect::<String>()
        ));
    }
    Ok(took)
}

/// `opencode run TASK` to its exit: the wall time, and how many files the task asks for are missing.
async fn opencode_alone(bin: &Path, rules: &Value, task: &str, files: &[&str]) -> Result<(Duration, usize), String> {
    let server = server(rules).await;
    let (ws, home) = workspace(&server);
    let took = opencode_run(bin, ws.path(), home.path(), &[task]).await?;
    Ok((took, files.iter().filter(|f| !ws.path().join(f).exists()).count()))
}

/// A later turn on its own: `opencode run TASK`, then `opencode run --continue LATER` (what a
/// person types to send it back), timing the second.
async fn opencode_alone_later_turn(bin: &Path) -> Result<Duration, String> {
    let server = server(&two_turn_rules()).await;
    let (ws, home) = workspace(&server);
    opencode_run(bin, ws.path(), home.path(), &["Write hello.txt"]).await?;
    let took = opencode_run(bin, ws.path(), home.path(), &["--continue", LATER]).await?;
    if !ws.path().join("world.txt").exists() {
        return Err("opencode run --continue did not write world.txt".into());
    }
    Ok(took)
}

struct UnderFinishline {
    /// From the start of the session to the end of the agent's first turn.
    first_turn: Duration,
    /// From the first continuation to the end of the turn it starts.
    later_turn: Option<Duration>,
    all_files: bool,
    status: SessionStatus,
    continuations: Vec<ContinuationSource>,
}

/// When the first turn ended after the session started, and when the turn a first continuation
/// started ended after that continuation.
pub(crate) struct TurnTimes {
    pub first: Option<Duration>,
    pub later: Option<Duration>,
}

/// Starts `task` in `ws` and follows it on the store to the end of its run, timing its turns.
pub(crate) async fn run_and_time(engine: &Arc<Engine>, store: &Store, task: &str, ws: &Path) -> Result<(SessionId, TurnTimes), String> {
    let mut live = store.follow_all();
    let started = Instant::now();
    let (sid, handle) = engine.start_session(task, ws).map_err(|e| e.to_string())?;
    let (mut first, mut continued, mut later) = (None, None, None);
    let watch = async {
        while let Ok(env) = live.recv().await {
            if env.session_id != sid {
                continue;
            }
            match env.event {
                EngineEvent::StepFinished { .. } if first.is_none() => first = Some(started.elapsed()),
                EngineEvent::StepFinished { .. } if later.is_none() => later = continued.map(|c: Instant| c.elapsed()),
                EngineEvent::Continuation { .. } if continued.is_none() => continued = Some(Instant::now()),
                _ => {}
            }
        }
    };
    tokio::select! {
        _ = watch => {}
        r = tokio::time::timeout(Duration::from_secs(180), handle) => { r.map_err(|_| "the session did not end in 180 s".to_string())?.map_err(|e| e.to_string())?; }
    }
    Ok((sid, TurnTimes { first, later }))
}

async fn under_finishline(bin: &Path, rules: &Value, task: &str, files: &[&str]) -> Result<UnderFinishline, String> {
    let server = server(rules).await;
    let (ws, home) = workspace(&server);
    let data = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open(&data.path().join("history.db"), Arc::new(finishline_engine::clock::SystemClock)).map_err(|e| e.to_string())?);
    let endpoint =
        ModelEndpoint::http(ProviderConfig::new(ProviderKind::Openai, server.base_url(Protocol::Openai), None), "fake-model").map_err(|e| e.to_string())?;
    let mut config = crate::engine_config::defaults(data.path(), endpoint);
    config.external = Some(ExternalAgent {
        name: "opencode".into(),
        command: bin.to_string_lossy().into_owned(),
        args: vec!["acp".into()],
        env: home_env(home.path()).into_iter().collect(),
    });
    config.claims_pipe = finishline_engine::external::claims_pipe::PipeCommand::this_executable();
    let engine = Engine::new(store.clone(), config);
    let (sid, times) = run_and_time(&engine, &store, task, ws.path()).await?;
    let s = store.session(&sid).map_err(|e| e.to_string())?;
    let continuations = store
        .events(&sid, 0)
        .map_err(|e| e.to_string())?
        .into_iter()
        .filter_map(|e| match e.event {
            EngineEvent::Continuation { source, .. } => Some(source),
            _ => None,
        })
        .collect();
    Ok(UnderFinishline {
        first_turn: times.first.ok_or("no turn ended")?,
        later_turn: times.later,
        all_files: files.iter().all(|f| ws.path().join(f).exists()),
        status: s.status,
        continuations,
    })
}

/// The same one-turn task done by Finishline's built-in agent (its `write_file`, then the answer):
/// from the session's start to the end of the step that answers.
async fn builtin_turn() -> Result<Duration, String> {
    let rules = json!([
        {"when": {"kind": "evaluator"}, "reply": verdict(true, "")},
        {"when": {"kind": "agent", "last_message_contains": "Created"}, "reply": {"text": "hello.txt is written and checked."}},
        {"when": {"kind": "agent"}, "reply": {"tool_calls": [{"name": "write_file", "arguments": {"path": "hello.txt", "content": "hello.txt\n"}}]}}
    ]);
    let server = server(&rules).await;
    let ws = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open(&data.path().join("history.db"), Arc::new(finishline_engine::clock::SystemClock)).map_err(|e| e.to_string())?);
    let endpoint =
        ModelEndpoint::http(ProviderConfig::new(ProviderKind::Openai, server.base_url(Protocol::Openai), None), "fake-model").map_err(|e| e.to_string())?;
    let engine = Engine::new(store.clone(), crate::engine_config::defaults(data.path(), endpoint));
    let mut live = store.follow_all();
    let started = Instant::now();
    let (sid, handle) = engine.start_session("Write hello.txt", ws.path()).map_err(|e| e.to_string())?;
    let mut steps = 0;
    let mut answered = None;
    let watch = async {
        while let Ok(env) = live.recv().await {
            if env.session_id == sid && matches!(env.event, EngineEvent::StepFinished { .. }) {
                steps += 1;
                if steps == 2 && answered.is_none() {
                    answered = Some(started.elapsed());
                }
            }
        }
    };
    tokio::select! {
        _ = watch => {}
        r = tokio::time::timeout(Duration::from_secs(60), handle) => { r.map_err(|_| "the built-in run did not end in 60 s".to_string())?.map_err(|e| e.to_string())?; }
    }
    answered.ok_or_else(|| "the built-in agent never answered".into())
}

/// A row comparing one turn's median wall time alone and under Finishline, against the goal
/// that the ACP path adds at most 10 %.
fn overhead_row(measure: &str, (alone, alone_how): (Duration, &str), (under, under_how): (Duration, &str)) -> Vec<String> {
    let overhead = under.as_secs_f64() / alone.as_secs_f64() - 1.0;
    vec![
        measure.into(),
        format!("{} ms ({alone_how})", alone.as_millis()),
        format!("{} ms ({under_how})", under.as_millis()),
        "the ACP path adds ≤ 10 % per turn".into(),
        format!("{} ({:+.0} %)", if overhead <= 0.10 { "yes" } else { "NO" }, overhead * 100.0),
    ]
}

pub async fn run(smoke: bool) -> Result<Table, String> {
    let bin = opencode_bin()?;
    let mut t = Table::new(
        "The real agents against the fake provider: OpenCode 1.18.33 (npm `opencode-ai`) on its own with `opencode run`, Claude Code, Gemini CLI and Codex in their own headless modes, and each under Finishline over ACP",
        &["Measure", "The agent alone", "Under Finishline", "Goal", "Met"],
    );
    // Nine, interleaved: single runs of either path spread by ±10 % on this machine.
    let runs = if smoke { 1 } else { 9 };
    let (mut alone, mut under, mut builtin) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..runs {
        eprintln!("   acp: one-turn task, run {}", i + 1);
        builtin.push(builtin_turn().await?);
        alone.push(opencode_alone(&bin, &one_turn_rules(), "Write hello.txt", &["hello.txt"]).await?.0);
        under.push(under_finishline(&bin, &one_turn_rules(), "Write hello.txt", &["hello.txt"]).await?.first_turn);
    }
    t.row(overhead_row(
        "OpenCode: first turn (start the agent, a tool call, the answer), median wall time",
        (median(&mut alone), "`opencode run` to its exit"),
        (median(&mut under), "session start to the end of the turn, over ACP"),
    ));
    let (mut later_alone, mut later_under) = (Vec::new(), Vec::new());
    for i in 0..runs {
        eprintln!("   acp: a later turn, run {}", i + 1);
        later_alone.push(opencode_alone_later_turn(&bin).await?);
        let f = under_finishline(&bin, &two_turn_rules(), "Write hello.txt", &["hello.txt", "world.txt"]).await?;
        later_under.push(f.later_turn.ok_or("under Finishline the second turn never came")?);
    }
    t.row(overhead_row(
        "OpenCode: a later turn (sent back: \"world.txt is missing\", a tool call, the answer), median wall time",
        (median(&mut later_alone), "`opencode run --continue` to its exit"),
        (median(&mut later_under), "the continuation to the end of its turn; the agent is already running"),
    ));
    t.row(vec![
        "The same task by Finishline's built-in agent (its `write_file`, then the answer), median".into(),
        "—".into(),
        format!("{} ms (no agent process to start)", median(&mut builtin).as_millis()),
        "—".into(),
        "—".into(),
    ]);
    let (mut false_alone, mut caught) = (0, 0);
    for case in cases() {
        eprintln!("   acp: {}", case.name);
        let (_, missing_alone) = opencode_alone(&bin, &case.rules, case.task, case.files).await?;
        let complete_alone = missing_alone == 0;
        let f = under_finishline(&bin, &case.rules, case.task, case.files).await?;
        if !complete_alone {
            false_alone += 1;
            if f.all_files && f.status == SessionStatus::AwaitingReview && !f.continuations.is_empty() {
                caught += 1;
            }
        }
        let sources: Vec<&str> = f.continuations.iter().map(|s| s.as_str()).collect();
        t.row(vec![
            case.name.into(),
            if complete_alone { "stopped with everything written".into() } else { format!("exit 0, {missing_alone} of {} files missing", case.files.len()) },
            format!(
                "{}; continued by {}; status {}",
                if f.all_files { "every file written" } else { "files missing" },
                if sources.is_empty() { "nothing".into() } else { sources.join(", ") },
                f.status.as_str()
            ),
            "caught".into(),
            if !complete_alone && f.all_files && !f.continuations.is_empty() {
                "yes".into()
            } else if complete_alone {
                "—".into()
            } else {
                "NO".into()
            },
        ]);
    }
    t.row(vec![
        "False completions".into(),
        format!("{false_alone} of {} cases", cases().len()),
        format!("{caught} caught"),
        "every false completion of OpenCode alone is caught".into(),
        if caught == false_alone { "yes".into() } else { "NO".into() },
    ]);
    crate::acp_agents::run(smoke, &mut t).await?;
    t.note(format!(
        "Medians of {runs} runs each for OpenCode. Both paths start OpenCode's process (Node, its config, the model list it cannot fetch offline), ask the same fake provider for the title and the answer, and run OpenCode's own `write` tool. Under Finishline the agent starts once the workspace is recorded (for the review's diffs and revert: an agent may write files as it starts); OpenCode also starts Finishline's MCP server (for `complete_task`) while it opens the session: a stdio process, the benchmark's own executable as the pipe to the server, as the CLI and the app are. A later turn is one `session/prompt` to the running agent under Finishline, and a new `opencode run --continue` process alone. Finishline's evaluator call after a turn is its judgement, not part of the turn, and is not counted. Reproduce with `bash scripts/bench` (section 7), after `bash scripts/setup` installed OpenCode in tests/agents. Claude Code (claude-agent-acp; alone, the `claude` executable its SDK runs), Gemini CLI (`gemini --acp`) and Codex (codex-acp; alone, the Codex CLI): medians of 5 runs, each agent with a HOME of its own and the tests' recipe (crates/engine/tests/support/agents.rs), asking the fake provider in its vendor's protocol. Alone, each approves its own tools (`--dangerously-skip-permissions`, `--yolo`, `approval_policy=never`); under Finishline every request is allowed (`allow_all`). A later turn alone is a second process in the same conversation; under Finishline, a continuation to the running agent. Where an adapter's bare start is as long as the agent's whole headless turn, no ACP client can meet the first turn's goal: claude-agent-acp is a Node program that then starts Claude Code's own executable through its SDK (two program starts where `claude -p` makes one). Peak memory is the resident memory of every process in the agent's process group, sampled every 50 ms, the larger of the two headless runs."
    ));
    Ok(t)
}
