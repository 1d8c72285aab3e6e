//! `finishline run --agent …`: a real external agent (OpenCode over ACP, from npm, offline against
//! the fake provider) does the work, and the CLI's completion engine catches its false "Done!".

mod support {
    pub mod cli;
}

use std::path::Path;
use std::process::{Command, Stdio};

use fake_llm::{FakeServer, Protocol};
use serde_json::json;
use support::cli::*;

fn opencode_bin() -> std::path::PathBuf {
    let bin = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/agents/node_modules/.bin/opencode");
    assert!(bin.exists(), "OpenCode is not installed at {}: run `bash scripts/setup`", bin.display());
    bin
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opencodes_false_done_is_caught_and_continued_until_the_work_is_there() {
    let verdict = |done: bool| {
        let v = json!({"done": done, "summary": if done { "report.txt is written" } else { "nothing was written" }, "remaining": if done { json!([]) } else { json!(["write report.txt"]) },
            "continuation_prompt": if done { "" } else { "Write report.txt now; nothing was written yet." }, "is_stuck": false, "stuck_reason": ""});
        json!({"text": v.to_string()})
    };
    let scenario: fake_llm::Scenario = serde_json::from_value(json!({"rules": [
        {"when": {"kind": "compaction"}, "reply": {"text": "Report"}},
        {"when": {"kind": "evaluator"}, "reply": verdict(false), "times": 1},
        {"when": {"kind": "evaluator"}, "reply": verdict(true)},
        {"when": {"kind": "agent", "last_message_contains": "nothing was written yet"}, "reply": {"tool_calls": [{"name": "write", "arguments": {"filePath": "report.txt", "content": "all good\n"}}]}},
        {"when": {"kind": "agent", "last_message_contains": "Wrote file successfully"}, "reply": {"text": "Done! The report is written."}, "times": 1},
        {"when": {"kind": "agent", "last_message_contains": "Wrote file successfully"}, "reply": {"text": "Written, and checked: report.txt says all good."}},
        {"when": {"kind": "agent"}, "reply": {"tool_calls": [{"name": "write", "arguments": {"filePath": "draft.txt", "content": "draft\n"}}]}}
    ]}))
    .unwrap();
    let (out, e) = run_opencode(scenario, "Write report.txt saying all good").await;
    let text = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "the task ends approved once the work is really there:\n{text}\n{err}");
    assert!(text.contains("with opencode"), "the terminal says which agent works on it:\n{text}");
    assert!(text.contains("↻ Finishline continues the agent (evaluator"), "OpenCode's \"Done!\" with nothing written is caught and continued:\n{text}");
    assert_eq!(std::fs::read_to_string(e.ws.join("report.txt")).ok().as_deref(), Some("all good\n"), "the continuation got the work done");
    let bad = finishline(
        &["run", "x", "--workspace", e.ws.to_str().unwrap(), "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--agent", "no-such-agent-here --acp"],
        &e.data,
    );
    let said = String::from_utf8_lossy(&bad.stdout).to_string() + &String::from_utf8_lossy(&bad.stderr);
    assert_ne!(bad.status.code(), Some(0));
    assert!(said.contains("not installed here") && said.contains("no-such-agent-here"), "a missing agent says so, by name: {said}");
}

/// `finishline run --agent "<opencode> acp" --review approve` on `task`, in a fresh workspace
/// whose opencode.json points OpenCode at the fake provider playing `scenario`.
async fn run_opencode(scenario: fake_llm::Scenario, task: &str) -> (std::process::Output, Env) {
    let server = FakeServer::start(scenario).await.unwrap();
    let e = env();
    let url = server.base_url(Protocol::Openai);
    std::fs::write(
        e.ws.join("opencode.json"),
        json!({"provider": {"fake": {"npm": "@ai-sdk/openai-compatible", "name": "Fake", "options": {"baseURL": url, "apiKey": "x"}, "models": {"fake-model": {"name": "Fake"}}}},
               "model": "fake/fake-model", "small_model": "fake/fake-model", "autoupdate": false, "share": "disabled"})
        .to_string(),
    )
    .unwrap();
    let home = e.data.join("agent-home");
    std::fs::create_dir_all(&home).unwrap();
    let agent = format!("{} acp", opencode_bin().display());
    let (data, ws, task) = (e.data.clone(), e.ws.clone(), task.to_string());
    let out = tokio::task::spawn_blocking(move || {
        Command::new(bin())
            .args(["run", &task, "--workspace"])
            .arg(&ws)
            .args(["--base-url", &url, "--model", "fake-model", "--agent", &agent, "--review", "approve", "--data-dir"])
            .arg(&data)
            .env_remove("OPENAI_API_KEY")
            .env("HOME", &home)
            .env("XDG_DATA_HOME", data.join("xdg"))
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("XDG_CACHE_HOME", home.join(".cache"))
            .stdin(Stdio::null())
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    (out, e)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opencodes_complete_task_reaches_the_cli_through_its_own_pipe_process() {
    let claim = json!({"status": "partial", "original_request_summary": "Write the report and run the tests", "summary": "report.txt is written", "remaining_work": "the tests were not run"});
    let scenario: fake_llm::Scenario = serde_json::from_value(json!({"rules": [
        {"when": {"kind": "compaction"}, "reply": {"text": "Report"}},
        {"when": {"kind": "agent", "last_message_contains": "Finishline checks the work"}, "reply": {"text": "The report is written; the tests are left."}},
        {"when": {"kind": "agent", "last_message_contains": "Wrote file successfully"}, "reply": {"tool_calls": [{"name": "finishline_complete_task", "arguments": claim}]}, "times": 1},
        {"when": {"kind": "agent"}, "reply": {"tool_calls": [{"name": "write", "arguments": {"filePath": "report.txt", "content": "r\n"}}]}, "times": 1},
        {"when": {"kind": "agent"}, "reply": {"text": "Stopping here."}}
    ]}))
    .unwrap();
    let (out, _e) = run_opencode(scenario, "Write the report and run the tests").await;
    let text = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        text.contains("⚑ review: claim partial"),
        "OpenCode's own claim, made through the MCP server the CLI runs as its pipe (`finishline mcp-pipe`), reaches the review:\n{text}\n{err}"
    );
}
