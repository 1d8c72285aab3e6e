//! MCP servers as tools. Each configured stdio server is started the first time a run asks for
//! tools, its tools join the agent's as `<server>__<tool>` and go through the same permission gate
//! (they ask by default), and the whole set is stopped with the app. A server that fails to start
//! or dies is reported once, and its tools simply stop being offered: the run goes on.

pub mod stdio;

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;
use tokio::sync::Mutex;

use crate::config::settings::McpServerSettings;
use crate::tool::{Permission, Tool, ToolContext, ToolOutput};

/// A tool as an MCP server describes it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct McpToolInfo {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
}

#[derive(Debug, Clone, PartialEq)]
pub struct McpCallOutput {
    pub text: String,
    pub is_error: bool,
}

/// A live connection to one server. Our own trait, so the SDK (rmcp) stays in one file.
#[async_trait::async_trait]
pub trait McpConnection: Send + Sync {
    async fn list_tools(&self) -> Result<Vec<McpToolInfo>, String>;
    async fn call_tool(&self, name: &str, arguments: Value) -> Result<McpCallOutput, String>;
    /// The server's process has gone.
    fn is_closed(&self) -> bool;
    fn pid(&self) -> Option<u32>;
    async fn stop(&self);
}

/// What Settings shows for each server.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum McpServerState {
    /// Not started yet: servers start when a run first needs tools.
    Idle,
    Running {
        pid: Option<u32>,
        tools: Vec<McpToolInfo>,
    },
    Failed {
        message: String,
    },
    Disabled,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct McpServerStatus {
    pub name: String,
    #[serde(flatten)]
    pub state: McpServerState,
}

enum Slot {
    Running {
        conn: Arc<dyn McpConnection>,
        tools: Vec<McpToolInfo>,
    },
    /// `reported` turns true once a run has told the person.
    Failed {
        message: String,
        reported: bool,
    },
}

/// What a server's environment gets besides its settings: the configured key variables to keep
/// out (the secret-looking names always are), and the values kept in the keychain.
#[derive(Debug, Clone, Default)]
pub struct ServerEnv {
    pub hidden: Vec<String>,
    /// By (server, variable).
    pub stored: BTreeMap<(String, String), String>,
    /// Who owns the servers' process groups (recorded, so a crash does not leave them running);
    /// `None`: ended with their connection only.
    pub processes: Option<Arc<crate::process_groups::ProcessGroups>>,
}

/// The configured servers and their connections, shared by every run of the app.
pub struct McpServers {
    configs: Vec<McpServerSettings>,
    env: ServerEnv,
    slots: Mutex<BTreeMap<String, Slot>>,
    /// The servers whose start is under way, for a run that waits on them to name them.
    starting: std::sync::Mutex<Vec<String>>,
}

/// How long a server may take to answer its handshake, and then to list its tools.
pub const START_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// The separator between server and tool in a namespaced tool name.
pub const SEPARATOR: &str = "__";

impl McpServers {
    pub fn new(configs: Vec<McpServerSettings>, env: ServerEnv) -> Arc<McpServers> {
        Arc::new(McpServers { configs, env, slots: Mutex::new(BTreeMap::new()), starting: std::sync::Mutex::new(Vec::new()) })
    }

    pub fn configs(&self) -> &[McpServerSettings] {
        &self.configs
    }

    /// What a run waiting on the servers' start waits for, as the person reads it: "the MCP
    /// server “docs” to start (at most 60 s)"; `None` when no start is under way.
    pub fn starting(&self) -> Option<String> {
        let names = self.starting.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let most = (START_WAIT * 2).as_secs();
        match names.as_slice() {
            [] => None,
            [one] => Some(format!("the MCP server “{one}” to start (at most {most} s)")),
            many => Some(format!("the MCP servers {} to start (at most {most} s)", many.iter().map(|n| format!("“{n}”")).collect::<Vec<_>>().join(", "))),
        }
    }

    /// Starts what has not been started, notices servers that died, and returns the tools of the
    /// live ones with the failures not reported before (each is reported once).
    pub async fn tools(self: &Arc<Self>) -> (Vec<Arc<dyn Tool>>, Vec<String>) {
        let mut slots = self.slots.lock().await;
        let pending: Vec<&McpServerSettings> = self.configs.iter().filter(|c| c.enabled && !slots.contains_key(&c.name)).collect();
        *self.starting.lock().unwrap_or_else(|p| p.into_inner()) = pending.iter().map(|c| c.name.clone()).collect();
        let started = futures_util::future::join_all(pending.iter().map(|c| start(c, &self.env))).await;
        self.starting.lock().unwrap_or_else(|p| p.into_inner()).clear();
        for (c, slot) in pending.iter().zip(started) {
            slots.insert(c.name.clone(), slot);
        }
        for (name, slot) in slots.iter_mut() {
            if let Slot::Running { conn, .. } = slot {
                if conn.is_closed() {
                    *slot = Slot::Failed { message: format!("The MCP server “{name}” stopped; its tools are no longer offered."), reported: false };
                }
            }
        }
        let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
        let mut failures = Vec::new();
        for (server, slot) in slots.iter_mut() {
            match slot {
                Slot::Running { tools: list, .. } => {
                    for t in list.iter() {
                        tools.push(Arc::new(McpTool {
                            servers: self.clone(),
                            server: server.clone(),
                            full_name: namespaced(server, &t.name),
                            info: t.clone(),
                        }));
                    }
                }
                Slot::Failed { message, reported } if !*reported => {
                    *reported = true;
                    failures.push(message.clone());
                }
                Slot::Failed { .. } => {}
            }
        }
        (tools, failures)
    }

    /// Starts every enabled server (Settings' "Check" button) and says how each is.
    pub async fn status(self: &Arc<Self>) -> Vec<McpServerStatus> {
        let _ = self.tools().await;
        let slots = self.slots.lock().await;
        self.configs
            .iter()
            .map(|c| McpServerStatus {
                name: c.name.clone(),
                state: match slots.get(&c.name) {
                    _ if !c.enabled => McpServerState::Disabled,
                    None => McpServerState::Idle,
                    Some(Slot::Running { conn, tools }) => McpServerState::Running { pid: conn.pid(), tools: tools.clone() },
                    Some(Slot::Failed { message, .. }) => McpServerState::Failed { message: message.clone() },
                },
            })
            .collect()
    }

    async fn call(&self, server: &str, tool: &str, arguments: Value) -> ToolOutput {
        let conn = match self.slots.lock().await.get(server) {
            Some(Slot::Running { conn, .. }) => conn.clone(),
            _ => return ToolOutput::error(format!("The MCP server “{server}” is not running, so `{tool}` cannot be called.")),
        };
        match conn.call_tool(tool, arguments).await {
            Ok(out) => ToolOutput { content: crate::tool::start_and_end(out.text), is_error: out.is_error },
            Err(e) if conn.is_closed() => {
                let message = format!("The MCP server “{server}” stopped while running `{tool}` ({e}); its tools are no longer offered.");
                self.slots.lock().await.insert(server.to_string(), Slot::Failed { message: message.clone(), reported: false });
                ToolOutput::error(message)
            }
            Err(e) => ToolOutput::error(format!("The MCP tool `{tool}` of “{server}” failed: {e}")),
        }
    }

    /// Stops every server; the app calls this when it quits.
    pub async fn stop_all(&self) {
        let mut slots = self.slots.lock().await;
        for (_, slot) in std::mem::take(&mut *slots) {
            if let Slot::Running { conn, .. } = slot {
                conn.stop().await;
            }
        }
    }
}

async fn start(config: &McpServerSettings, env: &ServerEnv) -> Slot {
    let failed = |why: String| Slot::Failed { message: format!("The MCP server “{}” could not start: {why}", config.name), reported: false };
    let conn = match tokio::time::timeout(START_WAIT, stdio::StdioConnection::start(config, env)).await {
        Ok(Ok(c)) => c,
        Ok(Err(e)) => return failed(e),
        Err(_) => return failed(format!("it did not answer within {} s", START_WAIT.as_secs())),
    };
    match tokio::time::timeout(START_WAIT, conn.list_tools()).await {
        Ok(Ok(tools)) => Slot::Running { conn: Arc::new(conn), tools },
        Ok(Err(e)) => {
            conn.stop().await;
            failed(format!("listing its tools failed: {e}"))
        }
        Err(_) => {
            conn.stop().await;
            failed(format!("listing its tools took over {} s", START_WAIT.as_secs()))
        }
    }
}

/// `<server>__<tool>`, in the characters every provider accepts in a tool name, at most 64.
pub fn namespaced(server: &str, tool: &str) -> String {
    let clean: String = format!("{server}{SEPARATOR}{tool}").chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect();
    clean.chars().take(64).collect()
}

struct McpTool {
    servers: Arc<McpServers>,
    server: String,
    full_name: String,
    info: McpToolInfo,
}

#[async_trait::async_trait]
impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.full_name
    }
    fn description(&self) -> &str {
        &self.info.description
    }
    fn input_schema(&self) -> Value {
        self.info.input_schema.clone()
    }
    /// Another program's tool: the person decides, as for `run_command`.
    fn default_permission(&self) -> Permission {
        Permission::Ask
    }
    async fn call(&self, ctx: &ToolContext, input: Value) -> ToolOutput {
        tokio::select! {
            out = self.servers.call(&self.server, &self.info.name, input) => out,
            _ = ctx.cancel.cancelled() => ToolOutput::error("Cancelled."),
        }
    }
}
