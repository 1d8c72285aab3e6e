//! A stdio MCP server through rmcp, the official SDK. The only file that knows rmcp's types;
//! results are read through their JSON form, which the MCP spec fixes, so SDK upgrades touch
//! little here.

use std::process::Stdio;
use std::sync::{Arc, Mutex as StdMutex};

use rmcp::model::{CallToolRequestParams, CallToolResponse};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::Value;
use tokio::io::AsyncReadExt;
use tokio::sync::Mutex;

use super::{McpCallOutput, McpConnection, McpToolInfo, ServerEnv};
use crate::config::settings::{is_env_reference, McpServerSettings, IN_KEYCHAIN};
use crate::tool::command::remove_secrets;

/// The last bytes the server wrote to stderr, to say why it failed.
const STDERR_KEEP: usize = 2048;

pub struct StdioConnection {
    service: Mutex<Option<RunningService<RoleClient, ()>>>,
    peer: rmcp::Peer<RoleClient>,
    pid: Option<u32>,
    stderr: Arc<StdMutex<Vec<u8>>>,
    /// The server and whatever it started (`npx` runs the server as its child) end together.
    group: Option<crate::process_groups::OwnedGroup>,
}

/// `${VAR}` reads Finishline's own environment, [`IN_KEYCHAIN`] the keychain; anything else
/// (a settings file written by hand) is taken as written.
fn expand(config: &McpServerSettings, var: &str, value: &str, env: &ServerEnv) -> Result<String, String> {
    if value == IN_KEYCHAIN {
        return env.stored.get(&(config.name.clone(), var.to_string())).cloned().ok_or_else(|| {
            format!("the value of {var} is kept in the keychain but is not there (was the server renamed, or the keychain locked?); enter it again in Settings")
        });
    }
    if is_env_reference(value) {
        return Ok(std::env::var(&value[2..value.len() - 1]).unwrap_or_default());
    }
    Ok(value.to_string())
}

impl StdioConnection {
    pub async fn start(config: &McpServerSettings, env: &ServerEnv) -> Result<StdioConnection, String> {
        let mut cmd = tokio::process::Command::new(config.command.trim());
        cmd.args(&config.args).kill_on_drop(true);
        #[cfg(unix)]
        cmd.process_group(0);
        // Provider keys and other secrets stay out of the server, unless its settings pass one
        // on by name.
        remove_secrets(&mut cmd, &env.hidden);
        for (k, v) in &config.env {
            cmd.env(k, expand(config, k, v, env)?);
        }
        let mark = crate::process_groups::mark(&mut cmd);
        let (transport, stderr) = TokioChildProcess::builder(cmd)
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("could not run `{}` ({e}); check the command and that it is installed", config.command))?;
        let pid = transport.id();
        let processes = env.processes.clone().unwrap_or_else(crate::process_groups::ProcessGroups::unrecorded);
        let group = pid.map(|p| processes.own(p, &format!("MCP server {}", config.name), &mark));
        let tail = Arc::new(StdMutex::new(Vec::new()));
        if let Some(mut err) = stderr {
            let tail = tail.clone();
            tokio::spawn(async move {
                let mut buf = [0u8; 1024];
                while let Ok(n) = err.read(&mut buf).await {
                    if n == 0 {
                        break;
                    }
                    let mut t = tail.lock().unwrap_or_else(|p| p.into_inner());
                    t.extend_from_slice(&buf[..n]);
                    let excess = t.len().saturating_sub(STDERR_KEEP);
                    t.drain(..excess);
                }
            });
        }
        let service = match ().serve(transport).await {
            Ok(s) => s,
            Err(e) => {
                // Give the stderr reader a moment to catch the server's last words.
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                return Err(with_stderr(format!("the MCP handshake failed ({e})"), &tail));
            }
        };
        let peer = service.peer().clone();
        Ok(StdioConnection { service: Mutex::new(Some(service)), peer, pid, stderr: tail, group })
    }
}

fn with_stderr(message: String, tail: &StdMutex<Vec<u8>>) -> String {
    let t = tail.lock().unwrap_or_else(|p| p.into_inner());
    let text = String::from_utf8_lossy(&t);
    let text = text.trim();
    if text.is_empty() {
        message
    } else {
        format!("{message}; it said: {text}")
    }
}

#[async_trait::async_trait]
impl McpConnection for StdioConnection {
    async fn list_tools(&self) -> Result<Vec<McpToolInfo>, String> {
        let tools = self.peer.list_all_tools().await.map_err(|e| with_stderr(e.to_string(), &self.stderr))?;
        Ok(tools
            .into_iter()
            .map(|t| McpToolInfo {
                name: t.name.to_string(),
                description: t.description.map(|d| d.to_string()).unwrap_or_default(),
                input_schema: Value::Object((*t.input_schema).clone()),
            })
            .collect())
    }

    async fn call_tool(&self, name: &str, arguments: Value) -> Result<McpCallOutput, String> {
        let mut params = CallToolRequestParams::new(name.to_string());
        match arguments {
            Value::Object(map) => params = params.with_arguments(map),
            Value::Null => {}
            other => return Err(format!("the arguments must be a JSON object, not {other}")),
        }
        match self.peer.call_tool_once(params).await.map_err(|e| with_stderr(e.to_string(), &self.stderr))? {
            CallToolResponse::Complete(result) => {
                let v = serde_json::to_value(&result).map_err(|e| e.to_string())?;
                Ok(McpCallOutput { text: result_text(&v), is_error: v.get("isError").and_then(Value::as_bool).unwrap_or(false) })
            }
            _ => Err("the tool asked for more input, which Finishline does not support yet".into()),
        }
    }

    fn is_closed(&self) -> bool {
        self.peer.is_transport_closed()
    }

    fn pid(&self) -> Option<u32> {
        self.pid
    }

    async fn stop(&self) {
        if let Some(s) = self.service.lock().await.take() {
            let _ = tokio::time::timeout(std::time::Duration::from_secs(5), s.cancel()).await;
        }
        if let Some(g) = &self.group {
            g.end();
        }
    }
}

/// The text of a tool result: its text blocks, a note for each other block, and the structured
/// content when there is no text.
fn result_text(v: &Value) -> String {
    let mut parts: Vec<String> = Vec::new();
    for block in v.get("content").and_then(Value::as_array).into_iter().flatten() {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => parts.push(block.get("text").and_then(Value::as_str).unwrap_or_default().to_string()),
            Some(other) => parts.push(format!("[{other} content]")),
            None => {}
        }
    }
    if parts.is_empty() {
        if let Some(s) = v.get("structuredContent") {
            parts.push(s.to_string());
        }
    }
    parts.join("\n")
}
