//! `finishline-bench`: runs the four benchmarks side by side and writes their tables, with the
//! command that reproduces them, to docs/benchmarks.md (or `--out`). `--smoke` runs each at a
//! tiny scale to check that it works; the CI test command does that, not the speed.

mod acp;
mod acp_agents;
mod attempts;
mod audit;
mod checkpoints;
mod completion_sim;
mod disk;
mod engine_config;
mod footprint;
mod history;
mod plan_sim;
mod report;
mod stream;
mod streaming_log;
mod worktrees;

use std::path::PathBuf;

use report::Table;

struct Args {
    smoke: bool,
    out: PathBuf,
    only: Option<String>,
}

/// The sections `--only` can name.
const SECTIONS: &[&str] = &["stream", "log", "history", "completion", "checkpoints", "audit", "worktrees", "attempts", "acp", "footprint"];

fn args() -> Args {
    let mut a = Args { smoke: false, out: PathBuf::from("docs/benchmarks.md"), only: None };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--smoke" => a.smoke = true,
            "--out" => a.out = it.next().expect("--out needs a path").into(),
            "--only" => match it.next() {
                Some(section) if SECTIONS.contains(&section.as_str()) => a.only = Some(section),
                // An unknown name would run nothing and write an empty report.
                _ => {
                    eprintln!("--only needs one of: {}", SECTIONS.join(", "));
                    std::process::exit(2);
                }
            },
            other => {
                eprintln!("unknown argument {other}; use --smoke, --out PATH, --only SECTION");
                std::process::exit(2);
            }
        }
    }
    a
}

fn main() {
    // The ACP section's agent starts Finishline's MCP server through this executable, as it
    // does through the CLI or the app.
    if let Some(code) = finishline_engine::external::claims_pipe::run_if_asked() {
        std::process::exit(code);
    }
    let a = args();
    let wanted = |s: &str| a.only.as_deref().is_none_or(|o| o == s);
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    let mut sections: Vec<(String, Table)> = Vec::new();
    if wanted("stream") {
        eprintln!("== stream overhead");
        let chunks = if a.smoke { 2_000 } else { 100_000 };
        let paced = if a.smoke { 200 } else { 5_000 };
        sections.push(("1. Stream overhead".into(), rt.block_on(stream::run(chunks, paced))));
    }
    if wanted("log") {
        eprintln!("== the history's log while sessions stream");
        sections.push(("1b. The history's log while sessions stream".into(), streaming_log::run(a.smoke)));
    }
    if wanted("history") {
        eprintln!("== history at scale");
        let scale = if a.smoke {
            history::Scale { sessions: 300, parts_per_session: 20, big_session_parts: 500 }
        } else {
            history::Scale { sessions: 100_000, parts_per_session: 20, big_session_parts: 5_000 }
        };
        sections.push(("2. History at scale".into(), history::run(&scale, if a.smoke { 1 } else { 5 })));
    }
    if wanted("completion") {
        eprintln!("== completion efficiency");
        let (policies, flat) = completion_sim::run(a.smoke);
        sections.push(("3. Completion efficiency".into(), policies));
        sections.push(("3b. The evaluator's input as the transcript grows".into(), flat));
        sections.push(("3c. Plan mode on long tasks".into(), plan_sim::run()));
    }
    if wanted("checkpoints") {
        eprintln!("== checkpoints at scale");
        sections.push(("5. Checkpoints at scale".into(), rt.block_on(checkpoints::run(a.smoke))));
    }
    if wanted("audit") {
        eprintln!("== the audit of the diff");
        sections.push(("9. The audit of the diff".into(), audit::run()));
    }
    if wanted("worktrees") {
        eprintln!("== tasks in their own worktrees");
        sections.push(("8. Tasks in their own worktrees".into(), rt.block_on(worktrees::run(a.smoke))));
    }
    if wanted("attempts") {
        eprintln!("== attempts side by side");
        sections.push(("10. Attempts side by side".into(), rt.block_on(attempts::run(a.smoke))));
    }
    if wanted("acp") {
        eprintln!("== external agents over ACP");
        match rt.block_on(acp::run(a.smoke)) {
            Ok(t) => sections.push(("7. External agents over ACP".into(), t)),
            Err(e) => {
                eprintln!("the ACP benchmark could not run: {e}");
                std::process::exit(1);
            }
        }
    }
    if wanted("footprint") {
        eprintln!("== app footprint");
        match footprint::run(a.smoke) {
            Ok(t) => sections.push(("4. App footprint".into(), t)),
            Err(e) => {
                eprintln!("the footprint benchmark could not run: {e}");
                std::process::exit(1);
            }
        }
    }
    let command = format!("bash scripts/bench{}", if a.smoke { " --smoke" } else { "" });
    let mut md = format!(
        "# Benchmarks\n\nWritten by `{command}` on {} ({}). Every table below comes from one run of that command on the same machine; ratios compare things measured side by side in that run.\n\n",
        chrono_like_now(),
        machine()
    );
    let mut missed = Vec::new();
    for (title, t) in &sections {
        md.push_str(&format!("## {title}\n\n{}\n\n{}\n", t.title, t.markdown()));
        if t.missed() {
            missed.push(title.clone());
        }
    }
    if !a.smoke {
        // Measured by scripts/bench-package (it installs the .deb), kept here so a rerun of
        // this command does not drop it.
        md.push_str(&format!("\n{}", include_str!("package.md")));
        // Measured by the real-model tests (`--nocapture`), kept the same way.
        md.push_str(&format!("\n{}", include_str!("local_models.md")));
        md.push_str(&format!("\n{}", include_str!("findings.md")));
    }
    if let Some(dir) = a.out.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    std::fs::write(&a.out, md).expect("write the report");
    eprintln!("wrote {}", a.out.display());
    if !missed.is_empty() && !a.smoke {
        eprintln!("goals missed in: {}", missed.join(", "));
    }
}

fn chrono_like_now() -> String {
    let out = std::process::Command::new("date").arg("-u").arg("+%Y-%m-%d %H:%M UTC").output();
    out.map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string()).unwrap_or_default()
}

fn machine() -> String {
    let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0);
    let mem = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| m.lines().next().and_then(|l| l.split_whitespace().nth(1)).and_then(|k| k.parse::<u64>().ok()))
        .map(|kb| format!("{:.0} GiB", kb as f64 / 1024.0 / 1024.0))
        .unwrap_or_default();
    format!("{cpus} cores, {mem}, release build")
}
