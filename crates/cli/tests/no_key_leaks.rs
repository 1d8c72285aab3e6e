//! After a real run with a key set, the key is nowhere Finishline writes: not in the history
//! database (and its WAL), the settings file, the checkpoints, the exports, or anything printed.
//! In that run the agent calls `run_command` with `env`, and the command's output holds no key.

use std::path::Path;
use std::process::{Command, Stdio};

use fake_llm::{FakeServer, Protocol};
use serde_json::json;

const KEY: &str = "sk-finishline-leak-canary-7f3a9c";
const CUSTOM: &str = "custom-var-canary-51d0e2";
const BUILT_IN: &str = "sk-built-in-var-canary-c40d17";

fn finishline(args: &[&str], data: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_finishline"))
        .args(args)
        .arg("--data-dir")
        .arg(data)
        // The key lives in a variable whose name looks like nothing secret, named by --api-key-env.
        .env("LLM_ACCESS", KEY)
        .env("OPENAI_API_KEY", BUILT_IN)
        .env("MY_PROVIDER_TOKEN", CUSTOM)
        .env("XDG_DATA_HOME", data.join("xdg"))
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// Every file under `dir`, read as bytes, searched for `needle`.
fn files_holding(dir: &Path, needle: &str) -> Vec<String> {
    let mut hits = Vec::new();
    for entry in walk(dir) {
        let bytes = std::fs::read(&entry).unwrap_or_default();
        if bytes.windows(needle.len()).any(|w| w == needle.as_bytes()) {
            hits.push(entry.display().to_string());
        }
    }
    hits
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_with_a_key_leaves_the_key_nowhere_it_writes() {
    let scn = serde_json::from_value(json!({"api_key": KEY, "rules": [
        {"when": {"kind": "evaluator"}, "reply": {"text": "{\"done\": true, \"summary\": \"printed the environment\", \"remaining\": [], \"continuation_prompt\": \"\", \"is_stuck\": false, \"stuck_reason\": \"\"}"}},
        {"when": {"kind": "agent", "last_message_contains": "PATH="}, "reply": {"text": "Done! I printed the environment with env, which is everything the task asked for."}},
        {"when": {"kind": "agent"}, "reply": {"text": "Printing the environment.", "tool_calls": [{"name": "run_command", "arguments": {"command": "env; echo \"key=[$LLM_ACCESS]\""}}]}}
    ]}))
    .unwrap();
    let server = FakeServer::start(scn).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(&data).unwrap();
    // The app's settings file, naming a custom key variable too.
    std::fs::write(
        data.join("settings.json"),
        json!({"settings": {"provider": {"kind": "openai", "base_url": server.base_url(Protocol::Openai), "model": "fake-model"}}}).to_string(),
    )
    .unwrap();

    let url = server.base_url(Protocol::Openai);
    let (d, w) = (data.clone(), ws.to_string_lossy().into_owned());
    let run = tokio::task::spawn_blocking(move || {
        finishline(
            &[
                "run",
                "print the environment with env",
                "--workspace",
                &w,
                "--base-url",
                &url,
                "--model",
                "fake-model",
                "--api-key-env",
                "LLM_ACCESS",
                "--allow",
                "run_command",
                "--review",
                "approve",
                "--json",
            ],
            &d,
        )
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
    assert_eq!(run.status.code(), Some(0), "the run completes; stderr: {stderr}");

    // The key was really in play: the provider got it, and the command really printed env.
    let auth = server.requests().iter().filter_map(|r| r.headers.iter().find(|(k, _)| k == "authorization").map(|(_, v)| v.clone())).next();
    assert_eq!(auth.as_deref(), Some(format!("Bearer {KEY}").as_str()), "the key must reach the provider, or this test proves nothing");
    assert!(stdout.contains("PATH="), "run_command's env output is in the run's events");
    assert!(stdout.contains("key=[]"), "the command saw no LLM_ACCESS: a custom key variable is hidden like the built-in ones");

    let sid = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find_map(|v| v["session_id"].as_str().map(String::from))
        .expect("a session id");
    let (d1, d2, s1, s2) = (data.clone(), data.clone(), sid.clone(), sid.clone());
    let md = tokio::task::spawn_blocking(move || finishline(&["sessions", "export", &s1, "--format", "md"], &d1)).await.unwrap();
    let js = tokio::task::spawn_blocking(move || finishline(&["sessions", "export", &s2, "--format", "json"], &d2)).await.unwrap();
    assert!(md.status.success() && js.status.success(), "exports work");
    assert!(String::from_utf8_lossy(&md.stdout).contains("PATH="), "the export holds the command output, so it was searched for real");

    for secret in [KEY, CUSTOM, BUILT_IN] {
        assert!(!stdout.contains(secret), "the printed events hold no key");
        assert!(!stderr.contains(secret), "the log on stderr holds no key");
        assert!(!String::from_utf8_lossy(&md.stdout).contains(secret), "the Markdown export holds no key");
        assert!(!String::from_utf8_lossy(&js.stdout).contains(secret), "the JSON export holds no key");
        let hits = files_holding(&data, secret);
        assert!(hits.is_empty(), "no file Finishline wrote (database, WAL, settings, checkpoints) holds a key: {hits:?}");
        assert!(files_holding(&ws, secret).is_empty(), "the workspace holds no key");
    }
    let files = walk(&data);
    assert!(files.iter().any(|f| f.ends_with("history.db")), "the database was among the files searched: {files:?}");
}
