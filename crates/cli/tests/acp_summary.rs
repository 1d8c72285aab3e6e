//! `finishline run --json`'s summary counts what the window shows: each tool call of an external
//! agent once, by its final state, however many updates it sent (Claude Code reports a call as
//! pending twice; Codex and Gemini CLI never report one pending).

mod support {
    pub mod cli;
}

use std::path::Path;

use fake_llm::{FakeServer, Protocol};
use serde_json::json;
use support::cli::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_summary_counts_each_agent_tool_call_once_by_its_final_state() {
    let call = |id: &str, status: &str| json!({"sessionUpdate": if status == "pending" { "tool_call" } else { "tool_call_update" }, "toolCallId": id, "title": "Write", "status": status});
    let script = json!({"turns": [{"updates": [
        call("twice-pending", "pending"), call("twice-pending", "pending"), call("twice-pending", "completed"),
        {"sessionUpdate": "tool_call", "toolCallId": "never-pending", "title": "exec", "status": "in_progress"}, call("never-pending", "completed"),
        call("failed", "pending"), call("failed", "failed"),
        {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Wrote done.txt and checked it."}}
    ], "write": {"path": "done.txt", "content": "done\n"}}]});
    let e = env();
    let file = e.data.join("script.json");
    std::fs::create_dir_all(&e.data).unwrap();
    std::fs::write(&file, script.to_string()).unwrap();
    let js = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/agents/scripted-acp.mjs").canonicalize().unwrap();
    let server = FakeServer::start(serde_json::from_value(json!({"rules": [
        {"when": {"kind": "evaluator"}, "reply": {"text": "{\"done\": true, \"summary\": \"done\", \"remaining\": [], \"continuation_prompt\": \"\", \"is_stuck\": false, \"stuck_reason\": \"\"}"}},
        {"reply": {"text": "{\"announced_action_not_taken\": false, \"action\": \"\"}"}}
    ]})).unwrap()).await.unwrap();
    let (url, data, ws) = (server.base_url(Protocol::Openai), e.data.clone(), e.ws.to_string_lossy().into_owned());
    let agent = format!("node {} {}", js.display(), file.display());
    let logs = e.data.clone();
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(bin())
            .args([
                "run",
                "Write done.txt",
                "--workspace",
                &ws,
                "--base-url",
                &url,
                "--model",
                "fake-model",
                "--agent",
                &agent,
                "--review",
                "approve",
                "--json",
                "--data-dir",
            ])
            .arg(&data)
            .env_remove("OPENAI_API_KEY")
            .env("XDG_DATA_HOME", data.join("xdg"))
            .env("SCRIPTED_ACP_LOGS", &logs)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let events = lines(&out);
    let summary = events.last().unwrap();
    assert_eq!(summary["type"], "summary", "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(summary["counts"]["tool_calls"], 3, "three calls, each counted once, whatever updates it sent: {summary}");
}
