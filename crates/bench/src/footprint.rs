//! App footprint: the real app against the smallest Tauri window (crates/bench-minimal-app),
//! both built in the same run and started under the same X display (Xvfb from scripts/bench).
//! Each app says on stderr when it is ready (the real one once its UI has drawn its first screen
//! with the settings; the minimal one once its page's first frame is painted), and the real app's UI reports how long
//! a long session took to show and how frames were paced while a run streamed
//! (FINISHLINE_PERF=1; see ui/src/perf.ts).

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use finishline_engine::store::{NewSession, Store};
use serde_json::json;

use crate::report::Table;

struct Running {
    child: Child,
    lines: mpsc::Receiver<String>,
    started: Instant,
    _home: tempfile::TempDir,
}

impl Running {
    /// Waits for `finishline-perf NAME VALUE` and returns the value and when it came.
    fn wait_for(&self, name: &str, timeout: Duration) -> Result<(f64, Duration), String> {
        let deadline = Instant::now() + timeout;
        let prefix = format!("finishline-perf {name} ");
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    if let Some(v) = line.strip_prefix(&prefix) {
                        return Ok((v.trim().parse().unwrap_or(f64::NAN), self.started.elapsed()));
                    }
                }
                Err(_) => return Err(format!("no `{name}` from the app within {} s", timeout.as_secs())),
            }
        }
    }

    fn stop(mut self) {
        let tree = descendants(self.child.id());
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        for _ in 0..50 {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        for pid in tree {
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        }
    }
}

/// The app's data folder inside a throwaway home, as the app resolves it.
fn data_dir(home: &Path) -> PathBuf {
    home.join("data").join("dev.finishline.app")
}

fn launch(bin: &Path, home: tempfile::TempDir, args: &[&str]) -> Result<Running, String> {
    let mut child = Command::new(bin)
        .args(args)
        .env("XDG_DATA_HOME", home.path().join("data"))
        .env("XDG_CONFIG_HOME", home.path().join("config"))
        .env("XDG_CACHE_HOME", home.path().join("cache"))
        .env("FINISHLINE_PERF", "1")
        .env("FINISHLINE_READY_PROBE", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("could not start {}: {e}", bin.display()))?;
    let started = Instant::now();
    let (tx, lines) = mpsc::channel();
    let stderr = child.stderr.take().expect("piped");
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    Ok(Running { child, lines, started, _home: home })
}

/// Every process below `root`, from /proc.
fn descendants(root: u32) -> Vec<u32> {
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else { continue };
        // The command name is in parentheses and may hold spaces; fields follow the last ')'.
        let Some(after) = stat.rsplit_once(')').map(|(_, a)| a) else { continue };
        if let Some(ppid) = after.split_whitespace().nth(1).and_then(|p| p.parse::<u32>().ok()) {
            children.entry(ppid).or_default().push(pid);
        }
    }
    let mut out = Vec::new();
    let mut stack = vec![root];
    while let Some(p) = stack.pop() {
        for c in children.get(&p).into_iter().flatten() {
            out.push(*c);
            stack.push(*c);
        }
    }
    out
}

/// The tree's memory by process name, for finding where it goes.
fn tree_breakdown(root: u32) -> String {
    let mut parts: Vec<(String, f64)> = Vec::new();
    for pid in std::iter::once(root).chain(descendants(root)) {
        if let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) {
            let name = status.lines().find_map(|l| l.strip_prefix("Name:")).unwrap_or("?").trim().to_string();
            let kib: f64 =
                status.lines().find(|l| l.starts_with("VmRSS:")).and_then(|l| l.split_whitespace().nth(1)).and_then(|v| v.parse().ok()).unwrap_or(0.0);
            if kib > 0.0 {
                parts.push((name, kib / 1024.0));
            }
        }
    }
    parts.iter().map(|(n, m)| format!("{n} {m:.0} MiB")).collect::<Vec<_>>().join(", ")
}

/// Resident memory of the process and everything it started (WebKit's web and network
/// processes), in MiB.
fn tree_rss_mib(root: u32) -> f64 {
    let mut kib = 0u64;
    for pid in std::iter::once(root).chain(descendants(root)) {
        if let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) {
            kib += status.lines().find(|l| l.starts_with("VmRSS:")).and_then(|l| l.split_whitespace().nth(1)).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        }
    }
    kib as f64 / 1024.0
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    crate::report::quantile(&v, 0.5)
}

/// Cold start to ready, and idle memory once settled.
fn start_and_idle(bin: &Path, runs: usize, settle: Duration) -> Result<(f64, f64, String), String> {
    let (mut starts, mut rss) = (Vec::new(), Vec::new());
    let mut breakdown = String::new();
    for _ in 0..runs {
        let app = launch(bin, tempfile::tempdir().unwrap(), &[])?;
        let (_, at) = app.wait_for("ready", Duration::from_secs(60))?;
        starts.push(at.as_secs_f64() * 1000.0);
        std::thread::sleep(settle);
        rss.push(tree_rss_mib(app.child.id()));
        breakdown = tree_breakdown(app.child.id());
        app.stop();
    }
    Ok((median(starts), median(rss), breakdown))
}

pub fn run(smoke: bool) -> Result<Table, String> {
    if std::env::var_os("DISPLAY").is_none() {
        return Err("the footprint benchmark needs an X display; scripts/bench runs it under xvfb-run".into());
    }
    let bins = PathBuf::from(std::env::var("FINISHLINE_BENCH_BIN_DIR").unwrap_or_else(|_| if smoke { "target/debug" } else { "target/release" }.into()));
    let app = bins.join("finishline-app");
    let minimal = bins.join("bench-minimal-app");
    for b in [&app, &minimal] {
        if !b.exists() {
            return Err(format!("{} is not built; scripts/bench builds it", b.display()));
        }
    }
    let runs = if smoke { 1 } else { 3 };
    let settle = Duration::from_secs(if smoke { 1 } else { 3 });
    let (app_start, app_idle, app_breakdown) = start_and_idle(&app, runs, settle)?;
    let (min_start, min_idle, min_breakdown) = start_and_idle(&minimal, runs, settle)?;

    // A long session, opened at launch.
    let parts = if smoke { 500 } else { 5_000 };
    let home = tempfile::tempdir().unwrap();
    let sid = {
        let store = Store::open(&data_dir(home.path()).join("history.db"), Arc::new(finishline_engine::clock::SystemClock)).map_err(|e| e.to_string())?;
        let new = NewSession {
            task: "A long session for the footprint benchmark".into(),
            workspace: "/tmp".into(),
            provider: "openai".into(),
            model: "fake-model".into(),
            base_url: None,
        };
        let (sid, _) = store.create_session(&new).map_err(|e| e.to_string())?;
        store.append_all(&sid, None, crate::history::session_events(7, parts)).map_err(|e| e.to_string())?;
        sid
    };
    let running = launch(&app, home, &["--open-session", sid.as_str()])?;
    let (shown_ms, _) = running.wait_for("session_shown_ms", Duration::from_secs(120))?;
    std::thread::sleep(Duration::from_secs(1));
    let session_rss = tree_rss_mib(running.child.id());
    let session_breakdown = tree_breakdown(running.child.id());
    running.stop();

    // A run streaming about 200 tokens a second into the open session. The app starts on the
    // task; the stream begins 2 s later, once the window has settled, as when a person clicks Run
    // in an app that is already open.
    let chunks = if smoke { 100 } else { 1_000 };
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let text: String = (0..chunks).map(|i| format!("token{} ", i % 50)).collect();
    let scenario = serde_json::from_value(json!({"rules": [
        {"when": {"kind": "evaluator"}, "reply": {"text": "{\"done\": true, \"summary\": \"answered\", \"remaining\": [], \"continuation_prompt\": \"\", \"is_stuck\": false, \"stuck_reason\": \"\"}"}},
        {"reply": {"text": text, "chunks": chunks, "frames_per_second": 200.0, "first_frame_delay_ms": 2000}}
    ]}))
    .unwrap();
    let server = rt.block_on(fake_llm::FakeServer::start(scenario)).map_err(|e| e.to_string())?;
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(data_dir(home.path())).unwrap();
    let settings = json!({"settings": {"provider": {"kind": "openai", "base_url": server.base_url(fake_llm::Protocol::Openai), "model": "fake-model"}}});
    std::fs::write(data_dir(home.path()).join("settings.json"), settings.to_string()).unwrap();
    let ws = tempfile::tempdir().unwrap();
    let running = launch(&app, home, &["--task", "Write a long answer", "--workspace", &ws.path().to_string_lossy()])?;
    let (frames, _) = running.wait_for("stream_frames", Duration::from_secs(120))?;
    let (long, _) = running.wait_for("stream_long_frames", Duration::from_secs(5))?;
    let (worst, _) = running.wait_for("stream_worst_frame_ms", Duration::from_secs(5))?;
    running.stop();
    drop(server);

    let mut t = Table::new(
        "App footprint under Xvfb: the real app against a minimal Tauri window built in the same run",
        &["Measure", "Finishline", "Minimal Tauri window", "Ratio", "Goal", "Met"],
    );
    let met = |ok: bool| if ok { "yes" } else { "NO" }.to_string();
    t.row(vec![
        "Cold start to ready".into(),
        format!("{app_start:.0} ms"),
        format!("{min_start:.0} ms"),
        format!("{:.2}×", app_start / min_start),
        "< 1 s".into(),
        met(app_start < 1000.0),
    ]);
    t.row(vec![
        "RSS of the process tree, idle".into(),
        format!("{app_idle:.0} MiB"),
        format!("{min_idle:.0} MiB"),
        format!("{:.2}×", app_idle / min_idle),
        "≤ 1.3×".into(),
        met(app_idle <= 1.3 * min_idle),
    ]);
    t.row(vec![
        format!("RSS with a {parts}-part session open"),
        format!("{session_rss:.0} MiB"),
        format!("{min_idle:.0} MiB"),
        format!("{:.2}×", session_rss / min_idle),
        "≤ 1.3×".into(),
        met(session_rss <= 1.3 * min_idle),
    ]);
    t.row(vec![format!("Time to show the {parts}-part session"), format!("{shown_ms:.0} ms"), "".into(), "".into(), "< 300 ms".into(), met(shown_ms < 300.0)]);
    t.row(vec![
        format!("Frames while streaming {chunks} chunks at ~200/s"),
        format!("{frames:.0} frames, {long:.0} over 50 ms, worst {worst:.0} ms"),
        "".into(),
        "".into(),
        "no long frames".into(),
        met(long == 0.0),
    ]);
    t.note(format!("Where the memory is: idle Finishline: {app_breakdown}; minimal window: {min_breakdown}; with the long session open: {session_breakdown}."));
    t.note(format!(
        "Binaries from {}; medians of {runs} launches each, each with a fresh data folder. Memory is VmRSS summed over the app and every process it started (WebKit's web and network processes). Ready is the same moment for both: the first frame of the first screen painted, reported by the page over IPC (the minimal window's page-load event comes before its paint, so it is not used). Both apps make the same renderer choice (no WebKit GL compositing when the machine has no GPU render node, as here), so the ratios measure Finishline's own cost. Xvfb renders in software, so frame times are an upper bound of what a desktop with a GPU shows.",
        bins.display()
    ));
    Ok(t)
}
