//! Tools the agent can call. Inputs are typed and their JSON Schemas derived with schemars;
//! failures go back to the model as tool results marked as errors, never as Rust errors that
//! would end the run.

mod beneath;
pub mod command;
pub mod fetch;
pub mod files;
pub mod search;
pub mod workspace;

use std::collections::BTreeMap;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::provider::ToolSpec;
pub use workspace::Workspace;

/// What happens when the agent calls a tool, before the person says otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Permission {
    Allow,
    Ask,
    Deny,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    pub content: String,
    pub is_error: bool,
}

/// How much of another program's tool answer (an MCP server's, an external agent's) is kept:
/// what a command's output keeps, about.
pub const MAX_SHOWN_BYTES: usize = 100 * 1024;

/// `text` as shown, stored and sent to the model: whole when short, else its start and end with
/// what was left out counted, as a command's output is.
pub fn start_and_end(text: String) -> String {
    if text.len() <= MAX_SHOWN_BYTES {
        return text;
    }
    let half = MAX_SHOWN_BYTES / 2;
    let mut head = half;
    while !text.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = text.len() - half;
    while !text.is_char_boundary(tail) {
        tail += 1;
    }
    format!("{}\n[… {} bytes omitted …]\n{}", &text[..head], tail - head, &text[tail..])
}

impl ToolOutput {
    pub fn ok(content: impl Into<String>) -> Self {
        ToolOutput { content: content.into(), is_error: false }
    }
    pub fn error(content: impl Into<String>) -> Self {
        ToolOutput { content: content.into(), is_error: true }
    }
}

pub struct ToolContext {
    pub workspace: Workspace,
    pub cancel: CancellationToken,
    /// Variable names to keep out of child processes besides the secret-looking ones: the
    /// configured key variables (`--api-key-env`, a provider's custom variable).
    pub hidden_env: Vec<String>,
    /// Where a command's process group is recorded, so the next start ends it after a crash.
    pub processes: Option<std::sync::Arc<crate::process_groups::ProcessGroups>>,
}

impl ToolContext {
    pub fn new(workspace: Workspace, cancel: CancellationToken) -> ToolContext {
        ToolContext { workspace, cancel, hidden_env: Vec::new(), processes: None }
    }
}

/// One tool, with its input type erased for dispatch.
#[async_trait::async_trait]
pub trait Tool: Send + Sync {
    fn name(&self) -> &str;
    fn description(&self) -> &str;
    fn input_schema(&self) -> Value;
    fn default_permission(&self) -> Permission;
    async fn call(&self, ctx: &ToolContext, input: Value) -> ToolOutput;
}

/// The JSON Schema of a typed input, inlined (no `$ref`s) so every provider accepts it.
pub fn schema_of<T: JsonSchema>() -> Value {
    let settings = schemars::generate::SchemaSettings::draft07().with(|s| {
        s.inline_subschemas = true;
    });
    let mut v = serde_json::to_value(settings.into_generator().into_root_schema_for::<T>()).unwrap_or_default();
    if let Some(o) = v.as_object_mut() {
        o.remove("$schema");
        o.remove("title");
        o.remove("definitions");
        o.remove("$defs");
    }
    v
}

/// Parses a tool's input, with a message the model can act on.
pub fn parse_input<T: DeserializeOwned>(tool: &str, input: Value) -> Result<T, ToolOutput> {
    serde_json::from_value(input).map_err(|e| ToolOutput::error(format!("Invalid arguments for {tool}: {e}. Check the tool's schema and call it again.")))
}

/// Tools the loop itself answers, because they change the session rather than the workspace.
pub const TODO_WRITE: &str = "todo_write";
pub const ASK_USER: &str = "ask_user";
/// The built-in shell tool; an external agent's terminal commands are gated by its setting.
pub const RUN_COMMAND: &str = "run_command";
pub const COMPLETE_TASK: &str = "complete_task";
/// Plan mode only: an earlier step's transcript, when its summary in the brief is not enough.
pub const SESSION_LOG: &str = "session_log";

/// The built-in tools that write exactly the file they name, in a moment: what changed in a
/// window of only these, at the paths they named, is the agent's. A command (or an MCP tool, an
/// external agent's turn) may write anything while it runs, and so may the person meanwhile.
pub const FILE_WRITERS: &[&str] = &["write_file", "edit_file"];

/// Tools that never change a file: a step that calls only these needs no window around it
/// (see `agent::changes`). Anything else, MCP tools included, may write.
pub const READ_ONLY: &[&str] = &["read_file", "list_dir", "glob", "grep", "fetch_url", TODO_WRITE, ASK_USER, COMPLETE_TASK, SESSION_LOG];

#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct SessionLogInput {
    /// The number of an earlier step of the plan, as in "Step 2/3".
    pub step: u32,
}

/// The spec of [`SESSION_LOG`], offered only to a plan's steps.
pub fn session_log_spec() -> ToolSpec {
    ToolSpec {
        name: SESSION_LOG.into(),
        description: "Read what an earlier step of the plan did (its messages, tool calls and results), when the brief's summary of it is not enough.".into(),
        input_schema: schema_of::<SessionLogInput>(),
    }
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct TodoWriteInput {
    /// The whole todo list, replacing the previous one.
    pub todos: Vec<TodoInput>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct TodoInput {
    pub id: String,
    pub content: String,
    pub status: crate::domain::TodoStatus,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct AskUserInput {
    /// The question for the person, answerable in a sentence.
    pub question: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CompletionStatus {
    Success,
    Partial,
    Blocked,
}

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
pub struct CompleteTaskInput {
    /// success: everything asked is done. partial: some is done. blocked: something outside your reach stops you.
    pub status: CompletionStatus,
    /// The person's request, in one sentence.
    #[serde(default)]
    pub original_request_summary: String,
    /// What you did.
    #[serde(default)]
    pub summary: String,
    /// What is left, and why (required for partial and blocked).
    #[serde(default)]
    pub remaining_work: Option<String>,
    /// A shell command that checks the work, such as a test command.
    #[serde(default)]
    pub verify_command: Option<String>,
}

/// Every tool the agent sees, by name.
#[derive(Clone)]
pub struct Toolbox {
    tools: BTreeMap<String, Arc<dyn Tool>>,
}

impl Default for Toolbox {
    fn default() -> Self {
        Self::standard()
    }
}

impl Toolbox {
    pub fn standard() -> Toolbox {
        let list: Vec<Arc<dyn Tool>> = vec![
            Arc::new(files::ReadFile),
            Arc::new(files::ListDir),
            Arc::new(files::WriteFile),
            Arc::new(files::EditFile),
            Arc::new(search::Glob),
            Arc::new(search::Grep),
            Arc::new(command::RunCommand),
            Arc::new(fetch::FetchUrl),
        ];
        Toolbox { tools: list.into_iter().map(|t| (t.name().to_string(), t)).collect() }
    }

    /// This toolbox plus more tools (an MCP server's); a built-in name is never replaced.
    pub fn with(mut self, extra: Vec<Arc<dyn Tool>>) -> Toolbox {
        for t in extra {
            self.tools.entry(t.name().to_string()).or_insert(t);
        }
        self
    }

    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.get(name)
    }

    /// The tools' names (not the loop's own: `todo_write`, `ask_user`, `complete_task`).
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tools.keys().map(String::as_str)
    }

    /// The default permission of a tool; the loop's own tools are allowed, `ask_user` asks the
    /// person by its nature, unknown tools are refused.
    pub fn default_permission(&self, name: &str) -> Permission {
        match name {
            TODO_WRITE | COMPLETE_TASK | ASK_USER | SESSION_LOG => Permission::Allow,
            _ => self.tools.get(name).map(|t| t.default_permission()).unwrap_or(Permission::Deny),
        }
    }

    pub fn specs(&self) -> Vec<ToolSpec> {
        let mut specs: Vec<ToolSpec> =
            self.tools.values().map(|t| ToolSpec { name: t.name().into(), description: t.description().into(), input_schema: t.input_schema() }).collect();
        specs.push(ToolSpec {
            name: TODO_WRITE.into(),
            description: "Write your todo list for this task (the whole list each time). Mark items completed as you finish them.".into(),
            input_schema: schema_of::<TodoWriteInput>(),
        });
        specs.push(ToolSpec {
            name: ASK_USER.into(),
            description: "Ask the person a question when you cannot go on without their answer.".into(),
            input_schema: schema_of::<AskUserInput>(),
        });
        specs.push(ToolSpec {
            name: COMPLETE_TASK.into(),
            description: "Call when you have finished, or cannot finish. Say honestly whether the task succeeded, is partial, or is blocked.".into(),
            input_schema: schema_of::<CompleteTaskInput>(),
        });
        specs
    }
}
