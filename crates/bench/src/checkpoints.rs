//! Checkpoints at the scale of real workspaces. Generated workspaces of small source files plus a
//! few large binaries; two sessions run through the real engine against the fake provider (the
//! agent writes one file), then steps are snapshotted directly. Every time is set beside the floor
//! measured in the same run: `git status` of the same tree with a warm index.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use fake_llm::{FakeServer, Protocol};
use finishline_engine::agent::{Engine, ModelEndpoint};
use finishline_engine::event::EngineEvent;
use finishline_engine::provider::ProviderConfig;
use finishline_engine::store::Store;
use finishline_engine::workspace::checkpoint::{dir_size, Checkpoints};
use finishline_engine::ProviderKind;
use serde_json::json;

use crate::report::{median, Table};

const VERDICT: &str = r#"{"done": true, "summary": "written", "remaining": [], "continuation_prompt": "", "is_stuck": false, "stuck_reason": ""}"#;

/// `files` source files of about 1.5 KB in 100 folders, three 12 MB binaries (over the 10 MB
/// limit) and two of 2 MB.
pub(crate) fn generate(ws: &Path, files: usize) {
    let mut rng = fastrand::Rng::with_seed(files as u64);
    for i in 0..files {
        let p = ws.join(format!("src/pkg{}/mod{}/file{i}.rs", i % 100, i % 7));
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        let body: String = (0..24).map(|l| format!("fn f{i}_{l}() -> u64 {{ {} }}\n", rng.u64(..))).collect();
        std::fs::write(p, body).unwrap();
    }
    std::fs::create_dir_all(ws.join("assets")).unwrap();
    for (i, mb) in [12, 12, 12, 2, 2].iter().enumerate() {
        let data: Vec<u8> = (0..mb * 1024 * 1024).map(|_| rng.u8(..)).collect();
        std::fs::write(ws.join(format!("assets/blob{i}.bin")), data).unwrap();
    }
}

fn touch_files(ws: &Path, n: usize, round: usize) -> u64 {
    let mut bytes = 0;
    for i in 0..n {
        let p = ws.join(format!("src/pkg{}/mod{}/file{i}.rs", i % 100, i % 7));
        let text = format!("// edited in round {round}\nfn changed_{i}_{round}() {{}}\n");
        bytes += text.len() as u64;
        std::fs::write(p, text).unwrap();
    }
    bytes
}

/// `git status` of the same tree with a warm index, in a separate repository: the floor.
fn git_status_floor(ws: &Path) -> Duration {
    let dir = tempfile::tempdir().unwrap();
    let git = |args: &[&str]| {
        let out = Command::new("git").arg("--git-dir").arg(dir.path()).arg("--work-tree").arg(ws).args(args).current_dir(ws).output().unwrap();
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    };
    git(&["init", "-q"]);
    git(&["config", "core.untrackedCache", "true"]);
    git(&["add", "-A"]);
    git(&["status", "--porcelain"]);
    let mut times: Vec<Duration> = (0..3)
        .map(|_| {
            let t = Instant::now();
            git(&["status", "--porcelain"]);
            t.elapsed()
        })
        .collect();
    median(&mut times)
}

struct SessionTimes {
    first_request: Duration,
    first_tool: Duration,
    growth: u64,
}

/// One task through the engine: how long until the model is asked, and until the first tool runs.
async fn session(engine: &Arc<Engine>, store: &Arc<Store>, ws: &Path, data: &Path, server: &FakeServer) -> SessionTimes {
    let before = dir_size(&data.join("checkpoints"));
    let asked_before = server.requests().len();
    let mut live = store.follow_all();
    let started = Instant::now();
    let (sid, handle) = engine.start_session("write done.txt", ws).expect("start");
    let mut first_request = None;
    let mut first_tool = None;
    let watch = async {
        while let Ok(env) = live.recv().await {
            if env.session_id != sid {
                continue;
            }
            if first_tool.is_none() && matches!(env.event, EngineEvent::ToolCall { state: finishline_engine::domain::ToolState::Running, .. }) {
                first_tool = Some(started.elapsed());
            }
            if matches!(env.event, EngineEvent::RunFinished { .. }) {
                break;
            }
        }
    };
    let poll = async {
        while server.requests().len() == asked_before {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        first_request = Some(started.elapsed());
    };
    tokio::join!(watch, poll);
    handle.await.expect("run");
    SessionTimes {
        first_request: first_request.unwrap_or_default(),
        first_tool: first_tool.unwrap_or_default(),
        growth: dir_size(&data.join("checkpoints")) - before,
    }
}

/// The largest object any store under `stores` holds.
fn largest_object(stores: &Path) -> u64 {
    std::fs::read_dir(stores)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            Command::new("git").arg("--git-dir").arg(e.path()).args(["cat-file", "--batch-all-objects", "--batch-check=%(objectsize)"]).output().ok()
        })
        .flat_map(|o| String::from_utf8_lossy(&o.stdout).lines().filter_map(|l| l.trim().parse::<u64>().ok()).collect::<Vec<_>>())
        .max()
        .unwrap_or(0)
}

fn ms(d: Duration) -> String {
    format!("{:.0} ms", d.as_secs_f64() * 1000.0)
}

fn mb(b: u64) -> String {
    format!("{:.2} MB", b as f64 / 1_000_000.0)
}

fn met(ok: bool) -> String {
    if ok { "yes" } else { "NO" }.into()
}

pub async fn run(smoke: bool) -> Table {
    let sizes: &[usize] = if smoke { &[300] } else { &[1_000, 30_000, 100_000] };
    let mut t = Table::new(
        "Checkpoints: generated workspaces (small source files, three 12 MB and two 2 MB binaries), two sessions through the engine, then steps",
        &[
            "Files",
            "`git status` floor",
            "First session: model asked after",
            "First session: first tool after",
            "First session: data added",
            "Later session: model asked after",
            "Later session: first tool after",
            "Later session: data added",
            "Per-step snapshot (10 files changed)",
            "Goals met",
        ],
    );
    let server = FakeServer::start(
        serde_json::from_value(json!({"rules": [
            {"when": {"kind": "evaluator"}, "reply": {"text": VERDICT}},
            {"when": {"kind": "agent", "last_message_contains": "Created"}, "reply": {"text": "Done! done.txt is written, which is everything the task asked for."}},
            {"when": {"kind": "agent"}, "reply": {"tool_calls": [{"name": "write_file", "arguments": {"path": "done.txt", "content": "done"}}]}}
        ]}))
        .expect("scenario"),
    )
    .await
    .expect("fake server");
    for &files in sizes {
        eprintln!("   checkpoints: {files} files");
        let ws_dir = tempfile::tempdir().unwrap();
        let ws = ws_dir.path().canonicalize().unwrap();
        generate(&ws, files);
        let floor = git_status_floor(&ws);
        let data = tempfile::tempdir().unwrap();
        let store = Arc::new(Store::open(&data.path().join("history.db"), Arc::new(finishline_engine::clock::SystemClock)).unwrap());
        let agent = ModelEndpoint::http(ProviderConfig::new(ProviderKind::Openai, server.base_url(Protocol::Openai), None), "fake-model").unwrap();
        let engine = Engine::new(store.clone(), crate::engine_config::defaults(data.path(), agent));
        let first = session(&engine, &store, &ws, data.path(), &server).await;
        let changed = touch_files(&ws, 10, 0);
        let later = session(&engine, &store, &ws, data.path(), &server).await;
        let cp = Checkpoints::open_shared(&data.path().join("checkpoints"), &ws, "bench-steps").unwrap();
        cp.snapshot("warm").unwrap();
        let mut steps: Vec<Duration> = (1..=3)
            .map(|round| {
                touch_files(&ws, 10, round);
                let s = Instant::now();
                cp.snapshot("step").unwrap();
                s.elapsed()
            })
            .collect();
        let step = median(&mut steps);
        let floor_s = floor.as_secs_f64();
        let goals = [
            ("model asked at once", first.first_request.as_secs_f64() < 0.5 && later.first_request.as_secs_f64() < 0.5),
            ("later first tool ≤ 1.5× floor", later.first_tool.as_secs_f64() <= 1.5 * floor_s + 0.15),
            ("step ≤ 1.5× floor", step.as_secs_f64() <= 1.5 * floor_s + 0.05),
            ("later growth ≤ changed + 1 MB", later.growth <= changed + 1_000_000),
            ("big files never copied", largest_object(&data.path().join("checkpoints")) <= 10 * 1024 * 1024),
        ];
        let missed: Vec<&str> = goals.iter().filter(|(_, ok)| !ok).map(|(name, _)| *name).collect();
        t.row(vec![
            files.to_string(),
            ms(floor),
            ms(first.first_request),
            ms(first.first_tool),
            mb(first.growth),
            ms(later.first_request),
            ms(later.first_tool),
            mb(later.growth),
            ms(step),
            met(missed.is_empty()),
        ]);
        if !missed.is_empty() {
            t.note(format!("{files} files: missed {}.", missed.join(", ")));
        }
    }
    t.note("Goals: the model is asked at once (under 0.5 s, the snapshot runs beside it); a later session's first tool waits ≤ 1.5× the `git status` floor (+150 ms for the run's own start); a per-step snapshot ≤ 1.5× the floor (+50 ms); a later session adds at most the changed files plus 1 MB; no object in the store is larger than the 10 MB limit (the three 12 MB files are never copied). The first session's first tool waits for the whole workspace to be recorded once: that is the one copy a workspace ever costs.".into());
    t
}
