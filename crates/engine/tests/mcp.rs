//! MCP servers as tools, with a real server from npm (`@modelcontextprotocol/server-everything`,
//! installed by scripts/setup into tests/mcp) started over stdio, and runs against the fake
//! provider server.

mod support {
    pub mod harness;
}

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;

use finishline_engine::agent::PermissionPolicy;
use finishline_engine::config::settings::McpServerSettings;
use finishline_engine::domain::SessionStatus;
use finishline_engine::event::EngineEvent;
use finishline_engine::mcp::{McpServerState, McpServers, ServerEnv};
use finishline_engine::tool::Permission;
use serde_json::json;
use support::harness::{scenario, Harness, Setup};

fn everything() -> McpServerSettings {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/mcp/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(script.exists(), "the MCP test server is not installed at {}; run scripts/setup", script.display());
    McpServerSettings {
        name: "everything".into(),
        command: "node".into(),
        args: vec![script.to_string_lossy().into_owned(), "stdio".into()],
        env: BTreeMap::from([("FINISHLINE_MCP_MARK".to_string(), "configured-value".to_string())]),
        enabled: true,
    }
}

fn done_rules() -> serde_json::Value {
    json!({"when": {"kind": "agent", "last_message_contains": "Echo:"}, "reply": {"text": "The echo tool answered, so the task is done; nothing else was asked of me here.", "tool_calls": [{"name": "complete_task", "arguments": {"status": "success", "summary": "echoed"}}]}})
}

fn tool_names(req: &fake_llm::request::SeenRequest) -> Vec<String> {
    let tools = req.body.get("tools").and_then(|t| t.as_array()).cloned().unwrap_or_default();
    tools.iter().filter_map(|t| t.pointer("/function/name").and_then(|n| n.as_str()).map(String::from)).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_real_mcp_server_starts_lazily_and_lists_its_tools() {
    let servers = McpServers::new(vec![everything()], ServerEnv::default());
    let before = servers.configs().len();
    assert_eq!(before, 1);
    let status = servers.status().await;
    match &status[0].state {
        McpServerState::Running { pid, tools } => {
            assert!(pid.is_some(), "a stdio server is a child process");
            let names: Vec<_> = tools.iter().map(|t| t.name.as_str()).collect();
            assert!(names.contains(&"echo") && names.contains(&"get-sum"), "server-everything offers echo and get-sum: {names:?}");
            assert!(tools.iter().all(|t| t.input_schema.get("type").is_some()), "each tool comes with its JSON Schema");
        }
        other => panic!("the server should be running, got {other:?}"),
    }
    let (tools, failures) = servers.tools().await;
    assert!(failures.is_empty());
    assert!(tools.iter().any(|t| t.name() == "everything__echo"), "tools are namespaced by server");
    assert!(tools.iter().all(|t| t.default_permission() == Permission::Ask), "another program's tools ask first, like run_command");
    servers.stop_all().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_calls_an_mcp_tool_through_the_permission_gate() {
    let servers = McpServers::new(vec![everything()], ServerEnv::default());
    let scn = scenario(json!({"rules": [
        done_rules(),
        {"when": {"kind": "agent"}, "reply": {"text": "Calling the echo tool.", "tool_calls": [{"name": "everything__echo", "arguments": {"message": "hello from the agent"}}]}}
    ]}));
    let permissions =
        PermissionPolicy { overrides: HashMap::from([("everything__echo".to_string(), Permission::Allow)]), nobody_to_ask: true, ..Default::default() };
    let h = Harness::new(scn, Setup { permissions, mcp: Some(servers.clone()), ..Default::default() }).await;
    let out = h.run("Echo a greeting with the MCP tool").await;
    assert_eq!(out.status, SessionStatus::AwaitingReview, "the run finished normally: {:?}", out.end_reason);
    assert!(tool_names(&out.requests[0]).contains(&"everything__echo".to_string()), "the model was offered the MCP tool");
    let output = out.events.iter().find_map(|e| match &e.event {
        EngineEvent::ToolCall { tool, output: Some(o), .. } if tool == "everything__echo" => Some(o.clone()),
        _ => None,
    });
    assert_eq!(output.as_deref(), Some("Echo: hello from the agent"), "the real server's answer is the tool result the agent sees");
    servers.stop_all().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_mcp_tool_that_asks_is_denied_when_nobody_can_answer() {
    let servers = McpServers::new(vec![everything()], ServerEnv::default());
    let scn = scenario(json!({"rules": [
        {"when": {"kind": "agent"}, "reply": {"text": "Calling the echo tool.", "tool_calls": [{"name": "everything__echo", "arguments": {"message": "x"}}]}}
    ]}));
    let h = Harness::new(scn, Setup { mcp: Some(servers.clone()), ..Default::default() }).await;
    let out = h.run("Echo").await;
    assert!(
        out.events
            .iter()
            .any(|e| matches!(&e.event, EngineEvent::ToolCall { tool, state: finishline_engine::domain::ToolState::Denied, .. } if tool == "everything__echo")),
        "an MCP tool goes through the same gate as the built-in tools"
    );
    servers.stop_all().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_crashed_server_is_reported_and_its_tools_disappear_without_breaking_the_run() {
    let servers = McpServers::new(vec![everything()], ServerEnv::default());
    let pid = match &servers.status().await[0].state {
        McpServerState::Running { pid: Some(p), .. } => *p,
        other => panic!("not running: {other:?}"),
    };
    // The server dies between runs, as a crashing extension would.
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let scn = scenario(json!({"rules": [
        {"when": {"kind": "agent"}, "reply": {"text": "I listed the folder and it holds nothing, which is all the task asked me to find out.", "tool_calls": [{"name": "complete_task", "arguments": {"status": "success", "summary": "done"}}]}}
    ]}));
    let h = Harness::new(scn, Setup { mcp: Some(servers.clone()), ..Default::default() }).await;
    let out = h.run("Look at the folder").await;
    assert_eq!(out.status, SessionStatus::AwaitingReview, "the run goes on without the server: {:?}", out.end_reason);
    let reported = out
        .events
        .iter()
        .filter(|e| matches!(&e.event, EngineEvent::Error { code, message } if *code == finishline_engine::ErrorCode::Mcp && message.contains("everything")))
        .count();
    assert_eq!(reported, 1, "the person is told once which server stopped");
    assert!(out.requests.iter().all(|r| !tool_names(r).iter().any(|n| n.starts_with("everything__"))), "the dead server's tools are no longer offered");
    assert!(tool_names(&out.requests[0]).contains(&"read_file".to_string()), "the built-in tools stay");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_cannot_start_is_reported_with_the_reason() {
    let broken = McpServerSettings { name: "broken".into(), command: "/nonexistent/mcp-server".into(), ..Default::default() };
    let exits = McpServerSettings {
        name: "exits".into(),
        command: "sh".into(),
        args: vec!["-c".into(), "echo 'config file missing' >&2; exit 3".into()],
        ..Default::default()
    };
    let servers = McpServers::new(vec![broken, exits, everything()], ServerEnv::default());
    let status = servers.status().await;
    let msg = |i: usize| match &status[i].state {
        McpServerState::Failed { message } => message.clone(),
        other => panic!("server {i} should have failed, got {other:?}"),
    };
    assert!(msg(0).contains("/nonexistent/mcp-server") && msg(0).contains("installed"), "a missing command says which: {}", msg(0));
    assert!(msg(1).contains("config file missing"), "what the server wrote to stderr explains its failure: {}", msg(1));
    assert!(matches!(status[2].state, McpServerState::Running { .. }), "one broken server does not stop the others");
    servers.stop_all().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn provider_keys_stay_out_of_mcp_servers_but_configured_env_reaches_them() {
    std::env::set_var("OPENAI_API_KEY", "sk-must-not-reach-the-mcp-server");
    let servers = McpServers::new(vec![everything()], ServerEnv::default());
    let (tools, _) = servers.tools().await;
    let get_env = tools.iter().find(|t| t.name() == "everything__get-env").expect("server-everything has get-env");
    let ws = tempfile::tempdir().unwrap();
    let ctx = finishline_engine::tool::ToolContext::new(finishline_engine::tool::Workspace::new(ws.path()).unwrap(), Default::default());
    let out = get_env.call(&ctx, json!({})).await;
    assert!(!out.is_error, "{}", out.content);
    assert!(!out.content.contains("sk-must-not-reach"), "a provider key must never be in an MCP server's environment");
    assert!(out.content.contains("configured-value"), "the env written in the server's settings is passed: {:.300}", out.content);
    servers.stop_all().await;
    std::env::remove_var("OPENAI_API_KEY");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_custom_key_variable_and_a_typed_env_secret_stay_out_of_the_settings_file_and_other_children() {
    use finishline_engine::config::secret::{Keys, MemorySecrets};
    // A key variable with no secret-looking name, named as the provider's key in the settings.
    std::env::set_var("LLM_ACCESS_CANARY_VAR", "custom-key-canary-0b7e");
    let mut settings = finishline_engine::Settings::default();
    settings.provider.api_key_env = Some("LLM_ACCESS_CANARY_VAR".into());
    let mut server = everything();
    server.env.insert("SERVICE_PASSPHRASE_FOR_TEST".into(), "typed-mcp-secret-canary-93c1".into());
    settings.mcp_servers = vec![server];
    let keys = Keys::new(Arc::new(MemorySecrets::default()));
    keys.keep_mcp_secrets(&mut settings).unwrap();
    let file = serde_json::to_string(&settings).unwrap();
    assert!(!file.contains("typed-mcp-secret-canary"), "a value typed into an MCP server's env never reaches the settings file: {file}");
    assert!(!file.contains("configured-value") && file.contains("@keychain"), "every typed value is kept as a secret, the file says where: {file}");
    let servers = finishline_engine::agent::config::mcp_servers(&settings, &keys).expect("one server is enabled");
    let (tools, _) = servers.tools().await;
    let get_env = tools.iter().find(|t| t.name() == "everything__get-env").expect("server-everything has get-env");
    let ws = tempfile::tempdir().unwrap();
    let ctx = finishline_engine::tool::ToolContext::new(finishline_engine::tool::Workspace::new(ws.path()).unwrap(), Default::default());
    let out = get_env.call(&ctx, json!({})).await;
    assert!(out.content.contains("typed-mcp-secret-canary-93c1"), "the server itself gets the value from the keychain: {:.300}", out.content);
    assert!(!out.content.contains("custom-key-canary"), "the provider's custom key variable is kept out of the server");
    servers.stop_all().await;

    // The same policy for run_command: the custom key variable is gone from its environment.
    let mut ctx = finishline_engine::tool::ToolContext::new(finishline_engine::tool::Workspace::new(ws.path()).unwrap(), Default::default());
    ctx.hidden_env = finishline_engine::agent::config::hidden_env(&settings);
    let shell = finishline_engine::tool::command::RunCommand;
    use finishline_engine::tool::Tool;
    let out = shell.call(&ctx, json!({"command": "env"})).await;
    assert!(out.content.contains("PATH="), "the command really printed its environment");
    assert!(!out.content.contains("custom-key-canary"), "run_command never sees the custom key variable");
    std::env::remove_var("LLM_ACCESS_CANARY_VAR");
}

#[tokio::test(flavor = "multi_thread")]
async fn cancel_ends_a_run_while_an_mcp_server_is_still_starting() {
    // A server that never answers the handshake: the run would wait 30 s for it.
    let silent = McpServerSettings { name: "silent".into(), command: "sleep".into(), args: vec!["60".into()], ..Default::default() };
    let servers = McpServers::new(vec![silent], ServerEnv::default());
    let scn = scenario(json!({"rules": [{"when": {"kind": "agent"}, "reply": {"text": "hello"}}]}));
    let h = Harness::new(scn, Setup { mcp: Some(servers.clone()), ..Default::default() }).await;
    let (sid, handle) = h.engine.start_session("anything", &h.ws()).unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let asked = std::time::Instant::now();
    assert_eq!(h.engine.cancel(&sid), finishline_engine::agent::Stop::Stopped);
    tokio::time::timeout(std::time::Duration::from_secs(5), handle).await.expect("cancel does not wait for the server's start-up").unwrap();
    assert!(asked.elapsed() < std::time::Duration::from_secs(5));
    assert_eq!(h.store.session(&sid).unwrap().status, SessionStatus::Cancelled);
    assert!(h.server.requests().is_empty(), "no model call was made after the cancel");
    // The abandoned start goes on in the background and gives up on its own.
}

/// A server slow to start is not silence: after a moment the run says it waits for it, by
/// name, and how long it waits at most.
#[tokio::test(flavor = "multi_thread")]
async fn a_run_waiting_for_a_slow_mcp_server_says_which_and_how_long_at_most() {
    let silent = McpServerSettings { name: "silent".into(), command: "sleep".into(), args: vec!["60".into()], ..Default::default() };
    let servers = McpServers::new(vec![silent], ServerEnv::default());
    let scn = scenario(json!({"rules": [{"when": {"kind": "agent"}, "reply": {"text": "hello"}}]}));
    let h = Harness::new(scn, Setup { mcp: Some(servers.clone()), ..Default::default() }).await;
    let (sid, handle) = h.engine.start_session("anything", &h.ws()).unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(3500)).await;
    assert_eq!(h.engine.cancel(&sid), finishline_engine::agent::Stop::Stopped);
    tokio::time::timeout(std::time::Duration::from_secs(5), handle).await.unwrap().unwrap();
    let waits: Vec<String> = h
        .store
        .events(&sid, 0)
        .unwrap()
        .into_iter()
        .filter_map(|e| match e.event {
            EngineEvent::Activity { phase: finishline_engine::domain::ActivityPhase::Waiting, detail } => Some(detail),
            _ => None,
        })
        .collect();
    assert_eq!(waits, vec!["the MCP server “silent” to start (at most 60 s)".to_string()], "said once, by name");
}

#[test]
fn mcp_server_settings_are_checked() {
    let mut s = finishline_engine::Settings {
        mcp_servers: vec![McpServerSettings { name: "a b".into(), command: "x".into(), ..Default::default() }],
        ..Default::default()
    };
    assert!(s.validate().is_err(), "a name with a space cannot prefix tool names");
    s.mcp_servers = vec![
        McpServerSettings { name: "a".into(), command: "x".into(), ..Default::default() },
        McpServerSettings { name: "a".into(), command: "y".into(), ..Default::default() },
    ];
    assert!(s.validate().is_err(), "two servers with one name would mix their tools");
    s.mcp_servers = vec![McpServerSettings { name: "a".into(), command: " ".into(), ..Default::default() }];
    assert!(s.validate().is_err(), "a server needs a command");
    s.mcp_servers = vec![everything()];
    assert!(s.validate().is_ok());
    let _ = Arc::new(());
}

#[tokio::test(flavor = "multi_thread")]
async fn an_mcp_server_runs_in_its_own_recorded_process_group_that_its_owner_ends() {
    use finishline_engine::process_groups::{group_alive, proc_stat, ProcessGroups};
    let data = tempfile::tempdir().unwrap();
    let processes = ProcessGroups::in_data_dir(data.path());
    let servers = McpServers::new(vec![everything()], ServerEnv { processes: Some(processes.clone()), ..ServerEnv::default() });
    let pid = match &servers.status().await[0].state {
        McpServerState::Running { pid, .. } => pid.expect("a stdio server is a child process"),
        other => panic!("the server should be running, got {other:?}"),
    };
    assert_eq!(proc_stat(pid).map(|s| s.pgrp), Some(pid), "the server leads a group of its own, so what it starts ends with it");
    assert_eq!(std::fs::read_dir(data.path().join("processes")).unwrap().count(), 1, "the group is recorded, so a crash cannot leave it running");
    assert_eq!(processes.end_all(), 1, "SIGTERM of the CLI or the app quitting ends it");
    let until = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while group_alive(pid) && std::time::Instant::now() < until {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(!group_alive(pid), "the server's group is gone");
    assert_eq!(std::fs::read_dir(data.path().join("processes")).unwrap().count(), 0, "and its record with it");
}

/// An MCP tool that answers with megabytes is shown, stored and sent to the model as its start
/// and end with what was left out counted, as a command's output is: whole, it would fill the
/// history and the model's context with one answer.
#[tokio::test(flavor = "multi_thread")]
async fn a_huge_mcp_answer_is_kept_to_its_start_and_end() {
    let servers = McpServers::new(vec![everything()], ServerEnv::default());
    let (tools, _) = servers.tools().await;
    let echo = tools.iter().find(|t| t.name() == "everything__echo").expect("the echo tool");
    let ws = tempfile::tempdir().unwrap();
    let ctx = finishline_engine::tool::ToolContext::new(finishline_engine::tool::Workspace::new(ws.path()).unwrap(), Default::default());
    let message = format!("first words {} last words", "x".repeat(2_000_000));
    let out = echo.call(&ctx, json!({"message": message})).await;
    assert!(!out.is_error, "{}", &out.content[..200.min(out.content.len())]);
    assert!(out.content.len() < 120_000, "{} bytes kept", out.content.len());
    assert!(out.content.contains("first words") && out.content.ends_with("last words"), "its start and end are kept");
    assert!(out.content.contains("bytes omitted"), "and what was left out is said");
    servers.stop_all().await;
}
