//! The person's settings: providers (never their secrets), limits, theme. The desktop app keeps
//! them in tauri-plugin-store's `settings.json`; the CLI reads the same file. Every field has a
//! default so that a file written by an older version still loads.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The key under which the settings object lives inside the store file.
pub const STORE_KEY: &str = "settings";
/// A settings file is a few kilobytes; one over this is not one (and is not read whole).
const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

pub use crate::provider::settings::{ProviderKind, ProviderSettings};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Limits {
    pub max_steps: u32,
    pub continuation_budget: u32,
    pub max_retries: u32,
    /// Truncation continuations in a row before the run goes to review.
    pub truncation_cap: u32,
    /// A normal stop with at most this many output tokens while work is open is a truncation.
    pub short_stop_tokens: u32,
    /// The most tokens one model reply may have.
    pub max_output_tokens: u32,
    /// The context window of models not listed in `Settings::context_windows`, in tokens.
    pub context_window: u32,
    /// The longest one model step may take, in seconds, before it is stopped.
    pub step_timeout_secs: u32,
    /// A line or block repeated this many times in a row inside one answer stops it as stuck.
    pub repeat_threshold: u32,
    /// Files larger than this many megabytes are left out of checkpoints (revert cannot
    /// restore them; the review lists them).
    pub checkpoint_max_file_mb: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_steps: 60,
            continuation_budget: 5,
            max_retries: 5,
            truncation_cap: 3,
            short_stop_tokens: 10,
            max_output_tokens: 4096,
            context_window: 32_000,
            step_timeout_secs: 600,
            repeat_threshold: 8,
            checkpoint_max_file_mb: 10,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Theme {
    #[default]
    System,
    Light,
    Dark,
}

/// How the completion engine reads a stop; see docs/completion.md.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct CompletionSettings {
    /// A marker that counts as a success claim when the agent writes it; empty means off.
    pub marker: String,
    pub require_complete_task: bool,
    /// After a denied permission, tell the agent and go on instead of stopping the run.
    pub continue_after_denial: bool,
}

/// Per-tool permission defaults for the tools that ask (`run_command`, `fetch_url`, MCP tools).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PermissionDefault {
    #[default]
    Ask,
    Allow,
    Deny,
}

/// What a model costs, in US dollars per million tokens.
impl From<PermissionDefault> for crate::tool::Permission {
    fn from(p: PermissionDefault) -> Self {
        match p {
            PermissionDefault::Ask => crate::tool::Permission::Ask,
            PermissionDefault::Allow => crate::tool::Permission::Allow,
            PermissionDefault::Deny => crate::tool::Permission::Deny,
        }
    }
}

/// One mistake in the settings: the field, as the settings file names it, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SettingProblem {
    pub field: &'static str,
    pub problem: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Price {
    pub input_per_mtok: f64,
    pub output_per_mtok: f64,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    pub provider: ProviderSettings,
    /// The evaluator's model; `None` means the agent's provider and model judge too.
    pub evaluator_model: Option<String>,
    /// The evaluator's own provider (often a cheaper one); `None` means the agent's. Its model
    /// is `evaluator_model`, else the provider's own `model`.
    pub evaluator_provider: Option<ProviderSettings>,
    /// Plan mode's manager model, on the evaluator's provider; `None`: the evaluator's model.
    pub manager_model: Option<String>,
    pub limits: Limits,
    /// Model name → its context window in tokens; compaction starts at 80 % of it.
    pub context_windows: std::collections::BTreeMap<String, u32>,
    /// Approve verified completions without asking: only end reason `verified_done` with a
    /// success claim or none. Everything else keeps waiting for a person.
    pub auto_approve: bool,
    pub completion: CompletionSettings,
    /// Tool name → default; tools not named keep their built-in default.
    pub permissions: std::collections::BTreeMap<String, PermissionDefault>,
    /// Workspace folder → commands that verify work done in it.
    pub verify_commands: std::collections::BTreeMap<String, Vec<String>>,
    /// Model name → price; the review shows the cost of models that have one.
    pub prices: std::collections::BTreeMap<String, Price>,
    pub theme: Theme,
    /// MCP servers whose tools join the agent's, namespaced by server name.
    pub mcp_servers: Vec<McpServerSettings>,
    /// New Task's plan choice until the person picks another: Auto lets the manager decide.
    pub plan_mode: crate::domain::PlanMode,
    /// Run a plan as soon as the manager makes it. Off (the default), the window shows the
    /// plan first, to edit, run or cancel.
    pub run_plans_without_review: bool,
    /// An external ACP agent that does the work instead of Finishline's own; `None`: built-in.
    pub agent: Option<crate::external::ExternalAgent>,
    /// Agent name → the variables whose values (keys the person gave when the agent asked to
    /// log in) the OS keychain keeps for that agent only. Names, never values.
    pub agent_keys: std::collections::BTreeMap<String, Vec<String>>,
    /// Where tasks work and how approved ones land.
    pub tasks: TaskSettings,
}

/// Where tasks work, how many at once, and how an approved task lands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct TaskSettings {
    /// In a git repository, each task in its own worktree (the default), or in the folder itself.
    pub isolation: crate::domain::Isolation,
    /// Where task worktrees live; empty: `worktrees/` in the data folder.
    pub worktree_dir: String,
    /// Untracked files every task's worktree gets from the person's checkout (gitignore
    /// syntax), beside the repository's own `.worktreeinclude`.
    pub worktree_include: Vec<String>,
    /// How many tasks run at once; more wait in a queue.
    pub parallel_limit: u32,
    pub landing: crate::domain::LandingMode,
    /// The most attempts one task may have side by side, in all.
    pub max_attempts: u32,
}

impl Default for TaskSettings {
    fn default() -> Self {
        TaskSettings {
            isolation: Default::default(),
            worktree_dir: String::new(),
            worktree_include: crate::workspace::worktree::DEFAULT_INCLUDES.iter().map(|s| s.to_string()).collect(),
            parallel_limit: 4,
            landing: Default::default(),
            max_attempts: 4,
        }
    }
}

/// A stdio MCP server: a command Finishline starts when a run first needs tools.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct McpServerSettings {
    /// Short name; the server's tools are called `<name>__<tool>`.
    pub name: String,
    pub command: String,
    pub args: Vec<String>,
    /// Extra environment for the server. A value written `${VAR}` is read from Finishline's own
    /// environment when the server starts; any other value is a secret kept in the OS keychain,
    /// and this file holds only [`IN_KEYCHAIN`] in its place.
    pub env: std::collections::BTreeMap<String, String>,
    pub enabled: bool,
}

/// Stands in the settings file for an MCP server's environment value kept in the keychain.
pub use crate::domain::IN_KEYCHAIN;

impl McpServerSettings {
    /// Values typed into the server's environment (not `${VAR}`, not yet in the keychain).
    pub fn literal_env(&self) -> impl Iterator<Item = (&String, &String)> {
        // An empty value (an export's, to be filled in) is no secret to keep.
        self.env.iter().filter(|(_, v)| !v.is_empty() && !is_env_reference(v) && v.as_str() != IN_KEYCHAIN)
    }

    /// The keychain account of one of this server's environment values.
    pub fn env_account(&self, var: &str) -> String {
        format!("mcp-env:{}:{var}", self.name)
    }
}

/// `${VAR}`: a value passed on from Finishline's own environment.
pub fn is_env_reference(value: &str) -> bool {
    value.starts_with("${") && value.ends_with('}') && value.len() > 3
}

impl Default for McpServerSettings {
    fn default() -> Self {
        McpServerSettings { name: String::new(), command: String::new(), args: Vec::new(), env: Default::default(), enabled: true }
    }
}

/// The settings file's name in the app's data folder; the window and the CLI read the same one.
pub const STORE_FILE: &str = "settings.json";

impl Settings {
    /// Reads the settings file at `path`; a missing file is a fresh install. A file that cannot
    /// be read, is not JSON, or is not what the app writes is an error naming the file: none of
    /// it is read, and nothing may be written over it (the window's store would read such a
    /// file as empty, and its next save would replace everything the person had in it).
    pub fn read_file(path: &std::path::Path) -> Result<Settings> {
        Settings::read_file_noting_unknown(path).map(|(s, _)| s)
    }

    /// [`Settings::read_file`], and the keys in the file no setting takes (a typo made by hand, a
    /// setting of a newer version), as `limits.max_step` or `mcp_servers[0].commnd`: they do
    /// nothing, and the person should hear so.
    pub fn read_file_noting_unknown(path: &std::path::Path) -> Result<(Settings, Vec<String>)> {
        let (settings, unknown, _) = Settings::read_with_unknown(path)?;
        Ok((settings, unknown.iter().map(|k| dotted(k)).collect()))
    }

    /// The settings, the keys no setting takes, and the file's whole JSON (null when there is
    /// no file), read once.
    fn read_with_unknown(path: &std::path::Path) -> Result<(Settings, Vec<Vec<Step>>, serde_json::Value)> {
        // Looked at before it is opened: a named pipe would hold the app's start until a writer
        // came, and a file of gigabytes would be read whole.
        match std::fs::metadata(path) {
            Ok(m) if !m.is_file() && !m.is_dir() => {
                return Err(Error::SettingsUnreadable(format!(
                    "{} is not a regular file (a named pipe, a socket or a device): put a settings file there, or remove it to start from the defaults",
                    path.display()
                )))
            }
            Ok(m) if m.len() > MAX_FILE_BYTES => {
                return Err(Error::SettingsUnreadable(format!("{} is over 4 MB; a settings file is a few kilobytes", path.display())))
            }
            _ => {}
        }
        let text = match std::fs::read_to_string(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((Settings::default(), Vec::new(), serde_json::Value::Null)),
            Err(e) => return Err(Error::SettingsUnreadable(format!("{}: {e}", path.display()))),
            Ok(text) => text,
        };
        let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| Error::SettingsUnreadable(format!("{} is not valid JSON: {e}", path.display())))?;
        let Some(file) = v.as_object() else {
            return Err(Error::SettingsUnreadable(format!("{} is not a settings object: the app writes {{\"{STORE_KEY}\": {{…}}}}", path.display())));
        };
        // Settings written by hand at the top level would be read as none at all.
        if !file.contains_key(STORE_KEY) && !file.is_empty() {
            return Err(Error::SettingsUnreadable(format!(
                "{} holds no \"{STORE_KEY}\" object, so none of it is read: put what it holds inside {{\"{STORE_KEY}\": {{…}}}}, as the app writes it",
                path.display()
            )));
        }
        let (settings, unknown) = match v.get(STORE_KEY).cloned() {
            None | Some(serde_json::Value::Null) => (Settings::default(), Vec::new()),
            Some(v) => from_json_noting_unknown(v).map_err(|why| Error::SettingsUnreadable(format!("{why} ({})", path.display())))?,
        };
        Ok((settings, unknown, v))
    }

    /// Writes the settings file at `path` as the app always has (`{"settings": {…}}`), never
    /// over a file that cannot be read (the person fixes or moves it first), and whole or not at
    /// all: a crash mid-write leaves the old file, not half a new one.
    /// Keys no setting takes are kept as the person wrote them, where what holds them is still
    /// there (not under a setting now removed; in a list, under the item of the same name).
    pub fn write_file(&self, path: &std::path::Path) -> Result<()> {
        let (_, unknown, old) = Settings::read_with_unknown(path)?;
        // Kept elsewhere through a link (with the person's dotfiles): written where it is kept,
        // the link left as it is. Renamed over, the link became a file and the kept one went stale.
        let linked = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
        let kept = if linked { std::fs::canonicalize(path)? } else { path.to_path_buf() };
        let path = kept.as_path();
        let dir = path.parent().ok_or_else(|| Error::Internal(format!("{} has no folder", path.display())))?;
        std::fs::create_dir_all(dir)?;
        let mut value = serde_json::json!({ STORE_KEY: self });
        for key in &unknown {
            carry_over(&old[STORE_KEY], &mut value[STORE_KEY], key);
        }
        // And whatever the file holds beside the settings.
        if let (Some(old), Some(new)) = (old.as_object(), value.as_object_mut()) {
            for (k, v) in old {
                new.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
        let body = serde_json::to_vec_pretty(&value).map_err(|e| Error::Internal(e.to_string()))?;
        let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
        std::io::Write::write_all(&mut tmp, &body)?;
        tmp.as_file().sync_all()?;
        tmp.persist(path).map_err(|e| Error::Io(e.error))?;
        Ok(())
    }

    /// Moves a settings file that cannot be read aside, whole, to `settings.json.unreadable-<time>`
    /// beside it (never over another), so the app starts from the defaults and the person can
    /// still copy what they need out of it. Returns where it is kept. A file that reads fine is
    /// refused: only an unreadable one may be set aside.
    pub fn set_aside(path: &std::path::Path) -> Result<std::path::PathBuf> {
        if Settings::read_file(path).is_ok() {
            return Err(Error::InvalidInput(format!("{} can be read: there is nothing to set aside", path.display())));
        }
        let stamp = chrono::Utc::now().format("%Y%m%d-%H%M%S");
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| STORE_FILE.into());
        for n in 0..1000 {
            let suffix = if n == 0 { String::new() } else { format!("-{n}") };
            let kept = path.with_file_name(format!("{name}.unreadable-{stamp}{suffix}"));
            if kept.symlink_metadata().is_ok() {
                continue;
            }
            // One rename: the file (or a link, itself) moves whole, whoever owns it, and what
            // sits at the path at that moment is what is kept, a fix saved just then included.
            return match std::fs::rename(path, &kept) {
                Ok(()) => Ok(kept),
                Err(e) => Err(Error::SettingsUnreadable(format!("{} could not be set aside: {e}", path.display()))),
            };
        }
        Err(Error::SettingsUnreadable(format!("{} could not be set aside: too many kept already", path.display())))
    }

    /// Reads settings from the JSON the store holds. A missing value is a fresh install; a value
    /// of the wrong shape is reported, never silently replaced, so nothing the person typed is lost.
    pub fn from_store_value(value: Option<serde_json::Value>) -> Result<Settings> {
        match value {
            None | Some(serde_json::Value::Null) => Ok(Settings::default()),
            Some(v) => from_json(v).map_err(Error::SettingsUnreadable),
        }
    }

    /// Checks what a person could get wrong in the form and says which field and why (the
    /// first of them: [`Settings::problems`] names every one).
    pub fn validate(&self) -> Result<()> {
        match self.problems().into_iter().next() {
            Some(SettingProblem { field, problem }) => Err(Error::InvalidSettings { field, problem }),
            None => Ok(()),
        }
    }

    /// Every mistake in the settings, each by its field: a form with several is told them all at
    /// one Save, not one Save for each (the window orders them as it shows the fields).
    pub fn problems(&self) -> Vec<SettingProblem> {
        let mut out = Vec::new();
        self.provider_problems(&mut out);
        self.list_problems(&mut out);
        self.mcp_server_problems(&mut out);
        self.task_problems(&mut out);
        self.limit_problems(&mut out);
        // Two empty include patterns are one thing to fix.
        out.dedup();
        out
    }

    /// The provider's URL, preset, model and key variable, and the evaluator's own provider.
    fn provider_problems(&self, out: &mut Vec<SettingProblem>) {
        let url = self.provider.base_url.trim();
        if !url.is_empty() {
            match url::Url::parse(url) {
                Err(e) => out.push(SettingProblem {
                    field: "provider.base_url",
                    problem: match e {
                        // The parser's "relative URL without a base": what it means to a person.
                        url::ParseError::RelativeUrlWithoutBase => {
                            format!("“{url}” is not a URL: it does not start with http:// or https://; it should look like http://127.0.0.1:8080/v1")
                        }
                        e => format!("“{url}” is not a URL ({e}); it should look like http://127.0.0.1:8080/v1"),
                    },
                }),
                Ok(parsed) if !matches!(parsed.scheme(), "http" | "https") => out.push(SettingProblem {
                    field: "provider.base_url",
                    problem: format!("the URL must start with http:// or https://, not {}://", parsed.scheme()),
                }),
                Ok(_) => {}
            }
        }
        if self.provider.base_url.trim().is_empty() && self.provider.preset.as_deref().is_some_and(|p| crate::config::preset::preset(p).is_none()) {
            out.push(SettingProblem { field: "provider.preset", problem: "unknown provider preset; pick one from the list".into() });
        }
        if self.provider.model.len() > 200 {
            out.push(SettingProblem { field: "provider.model", problem: "a model name is at most 200 characters".into() });
        }
        if let Some(var) = &self.provider.api_key_env {
            if !var.is_empty() && !var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                out.push(SettingProblem {
                    field: "provider.api_key_env",
                    problem: format!("“{var}” is not an environment variable name (letters, digits and _ only)"),
                });
            }
        }
        if let Some(p) = &self.evaluator_provider {
            let url = p.base_url.trim();
            if url::Url::parse(url).map(|u| !matches!(u.scheme(), "http" | "https")).unwrap_or(true) {
                out.push(SettingProblem {
                    field: "evaluator_provider.base_url",
                    problem: format!("“{url}” is not an http(s) URL; it should look like https://api.openai.com/v1"),
                });
            }
            if self.evaluator_model.as_deref().map(str::trim).unwrap_or_default().is_empty() && p.model.trim().is_empty() {
                out.push(SettingProblem { field: "evaluator_model", problem: "name the evaluator's model for its provider".into() });
            }
        }
    }

    /// The marker, the verify commands and the prices.
    fn list_problems(&self, out: &mut Vec<SettingProblem>) {
        if self.completion.marker.len() > 200 {
            out.push(SettingProblem { field: "completion.marker", problem: "a marker is at most 200 characters".into() });
        }
        for (ws, cmds) in &self.verify_commands {
            if cmds.iter().any(|c| c.contains('\0')) || ws.trim().is_empty() {
                out.push(SettingProblem { field: "verify_commands", problem: format!("the verify commands for “{ws}” are not valid") });
            }
        }
        for (model, p) in &self.prices {
            if !(p.input_per_mtok.is_finite() && p.output_per_mtok.is_finite()) || p.input_per_mtok < 0.0 || p.output_per_mtok < 0.0 {
                out.push(SettingProblem {
                    field: "prices",
                    problem: format!("the price of “{model}” must be a positive number of dollars per million tokens"),
                });
            }
        }
    }

    fn mcp_server_problems(&self, out: &mut Vec<SettingProblem>) {
        let mut names = std::collections::HashSet::new();
        for m in &self.mcp_servers {
            let name_ok =
                !m.name.is_empty() && m.name.len() <= 32 && m.name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') && !m.name.contains("__");
            if !name_ok {
                out.push(SettingProblem {
                    field: "mcp_servers",
                    problem: format!("“{}” is not a server name: use 1 to 32 letters, digits, - or _ (it prefixes the tools' names)", m.name),
                });
            }
            if !names.insert(m.name.as_str()) {
                out.push(SettingProblem { field: "mcp_servers", problem: format!("two MCP servers are called “{}”; names must differ", m.name) });
            }
            if m.command.trim().is_empty() || m.command.contains('\0') || m.args.iter().any(|a| a.contains('\0')) {
                out.push(SettingProblem { field: "mcp_servers", problem: format!("the MCP server “{}” needs a command to start it", m.name) });
            }
            if m.env.keys().any(|k| k.is_empty() || !k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')) {
                out.push(SettingProblem {
                    field: "mcp_servers",
                    problem: format!("an environment variable name of “{}” is not valid (letters, digits and _ only)", m.name),
                });
            }
        }
    }

    /// Attempts, the parallel limit and where worktrees go.
    fn task_problems(&self, out: &mut Vec<SettingProblem>) {
        if !(1..=16).contains(&self.tasks.max_attempts) {
            out.push(SettingProblem {
                field: "tasks.max_attempts",
                problem: format!("{} attempts of one task is out of range: use 1 to 16", self.tasks.max_attempts),
            });
        }
        if !(1..=32).contains(&self.tasks.parallel_limit) {
            out.push(SettingProblem {
                field: "tasks.parallel_limit",
                problem: format!("{} tasks at once is out of range: use 1 to 32", self.tasks.parallel_limit),
            });
        }
        let dir = self.tasks.worktree_dir.trim();
        if !dir.is_empty() && !std::path::Path::new(dir).is_absolute() {
            out.push(SettingProblem {
                field: "tasks.worktree_dir",
                problem: format!("“{dir}” is not a full path: worktrees need a folder such as /home/you/worktrees"),
            });
        }
        for p in &self.tasks.worktree_include {
            if p.contains('\0') || p.trim().is_empty() {
                out.push(SettingProblem {
                    field: "tasks.worktree_include",
                    problem: "an include pattern is empty; remove it or write one such as .env".into(),
                });
            }
        }
    }

    /// Every limit within its range, and the context windows named per model.
    fn limit_problems(&self, out: &mut Vec<SettingProblem>) {
        let l = &self.limits;
        for (field, value, min, max) in [
            ("limits.max_steps", l.max_steps, 1, 10_000),
            ("limits.continuation_budget", l.continuation_budget, 1, 100),
            ("limits.max_retries", l.max_retries, 1, 50),
            ("limits.truncation_cap", l.truncation_cap, 1, 20),
            ("limits.short_stop_tokens", l.short_stop_tokens, 0, 1000),
            ("limits.max_output_tokens", l.max_output_tokens, 16, 1_000_000),
            ("limits.context_window", l.context_window, 1024, 10_000_000),
            ("limits.step_timeout_secs", l.step_timeout_secs, 10, 86_400),
            ("limits.repeat_threshold", l.repeat_threshold, 3, 1000),
            ("limits.checkpoint_max_file_mb", l.checkpoint_max_file_mb, 1, 100_000),
        ] {
            if value < min || value > max {
                out.push(SettingProblem { field, problem: format!("must be between {min} and {max}, not {value}") });
            }
        }
        for (model, window) in &self.context_windows {
            if model.trim().is_empty() || !(1024..=10_000_000).contains(window) {
                out.push(SettingProblem {
                    field: "context_windows",
                    problem: format!("the context window of “{model}” must be between 1024 and 10000000 tokens, not {window}"),
                });
            }
        }
    }

    /// A provider is ready to run tasks when it has somewhere to send them and a model to ask.
    /// Keys are not required here: a loopback server needs none, and a missing key is reported
    /// by the provider with a message that says which variable to set.
    /// The verify commands configured for a workspace folder.
    pub fn verify_commands_for(&self, workspace: &str) -> Vec<String> {
        let key = workspace.trim_end_matches('/');
        self.verify_commands
            .iter()
            .filter(|(w, _)| w.trim_end_matches('/') == key)
            .flat_map(|(_, c)| c.iter().filter(|c| !c.trim().is_empty()).cloned())
            .collect()
    }

    /// The context window of a model: the one set for it, else the default.
    pub fn context_window_for(&self, model: &str) -> u32 {
        self.context_windows.get(model.trim()).copied().unwrap_or(self.limits.context_window)
    }

    pub fn provider_ready(&self) -> bool {
        !self.provider.base_url.trim().is_empty() && !self.provider.model.trim().is_empty() && self.validate().is_ok()
    }

    /// The settings for one task started with `model` (New Task's Model field): a server set up
    /// without a model gets that one, so the task runs; a model set here stays, and the task's
    /// own replaces it where the task's endpoints are made.
    pub fn with_task_model(&self, model: Option<&str>) -> Settings {
        let mut settings = self.clone();
        if let Some(m) = model.map(str::trim).filter(|m| !m.is_empty()) {
            if settings.provider.model.trim().is_empty() {
                settings.provider.model = m.to_string();
            }
        }
        settings
    }
}

/// Settings from JSON, a wrong value named by where it is (`limits.max_steps: invalid type: …`):
/// serde alone says only what it expected.
fn from_json(value: serde_json::Value) -> std::result::Result<Settings, String> {
    from_json_noting_unknown(value).map(|(s, _)| s)
}

/// One step on the way to a key in the settings' JSON.
#[derive(Debug, Clone)]
enum Step {
    Key(String),
    Item(usize),
}

/// [`from_json`], and where the value holds keys no setting takes.
fn from_json_noting_unknown(value: serde_json::Value) -> std::result::Result<(Settings, Vec<Vec<Step>>), String> {
    fn steps(path: &serde_ignored::Path<'_>) -> Vec<Step> {
        use serde_ignored::Path;
        match path {
            Path::Root => Vec::new(),
            Path::Seq { parent, index } => [steps(parent), vec![Step::Item(*index)]].concat(),
            Path::Map { parent, key } => [steps(parent), vec![Step::Key(key.clone())]].concat(),
            Path::Some { parent } | Path::NewtypeStruct { parent } | Path::NewtypeVariant { parent } => steps(parent),
        }
    }
    let mut unknown = Vec::new();
    let mut note = |path: serde_ignored::Path<'_>| unknown.push(steps(&path));
    let settings = serde_path_to_error::deserialize(serde_ignored::Deserializer::new(value, &mut note)).map_err(|e| {
        let path = e.path().to_string();
        let why = in_words(&e.inner().to_string());
        if path == "." {
            why
        } else {
            format!("{path}: {why}")
        }
    })?;
    Ok((settings, unknown))
}

/// serde's words for what belongs in a place, put as the settings file's reader knows them:
/// "expected struct ProviderSettings" is an object there, "expected u32" a whole number.
fn in_words(serde: &str) -> String {
    let Some((before, expected)) = serde.rsplit_once("expected ") else { return serde.to_string() };
    let words = match expected {
        e if e.starts_with("struct ") || e == "a map" => "an object",
        "u8" | "u16" | "u32" | "u64" | "usize" => "a whole number (0 or more)",
        "i8" | "i16" | "i32" | "i64" | "isize" => "a whole number",
        "f32" | "f64" => "a number",
        _ => return serde.to_string(),
    };
    format!("{before}expected {words}")
}

/// `limits.max_step`, `mcp_servers[0].commnd`.
fn dotted(key: &[Step]) -> String {
    let mut out = String::new();
    for step in key {
        match step {
            Step::Key(k) if out.is_empty() => out.push_str(k),
            Step::Key(k) => {
                out.push('.');
                out.push_str(k);
            }
            Step::Item(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}

/// Copies the value at `key` in `old` into `new`, if every object on its way is still in `new`.
/// An item of a list is found by its `name` (an MCP server's), since items move and go: one
/// without a name, or whose name is gone, takes nothing.
fn carry_over(old: &serde_json::Value, new: &mut serde_json::Value, key: &[Step]) {
    let Some((Step::Key(last), way)) = key.split_last() else { return };
    let (mut from, mut to) = (old, new);
    for step in way {
        let (f, t) = match step {
            Step::Key(k) => (from.get(k), to.get_mut(k)),
            Step::Item(i) => {
                let f = from.get(i);
                let name = f.and_then(|f| f.get("name")).and_then(serde_json::Value::as_str);
                let t = name.and_then(|n| to.as_array_mut()?.iter_mut().find(|t| t.get("name").and_then(serde_json::Value::as_str) == Some(n)));
                (f, t)
            }
        };
        let (Some(f), Some(t)) = (f, t) else { return };
        (from, to) = (f, t);
    }
    if let (Some(value), Some(object)) = (from.get(last), to.as_object_mut()) {
        object.entry(last.clone()).or_insert_with(|| value.clone());
    }
}

/// What front ends show: the settings and whether they are enough to run a task. The readiness
/// rule lives here so that the UI and the CLI cannot disagree about it.
#[derive(Debug, Clone, Serialize)]
pub struct SettingsView {
    pub settings: Settings,
    pub provider_ready: bool,
    /// Folders checkpoints always leave out (besides the workspace's own ignore files).
    pub checkpoint_excludes: &'static [&'static str],
    /// Keys in the settings file no setting takes ([`Settings::read_file_noting_unknown`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unknown_keys: Vec<String>,
}

impl From<Settings> for SettingsView {
    fn from(settings: Settings) -> Self {
        let provider_ready = settings.provider_ready();
        SettingsView { settings, provider_ready, checkpoint_excludes: crate::workspace::checkpoint::DEFAULT_EXCLUDES, unknown_keys: Vec::new() }
    }
}

/// What an imported settings file would let run or send that the current settings do not
/// ([`Settings::import_risks`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ImportRisks {
    /// Enabled MCP servers that are new or run another command.
    pub servers: Vec<McpServerSettings>,
    /// The external agent's command line, when it is another program.
    pub agent: Option<String>,
    /// Tools that would run without asking.
    pub allowed: Vec<String>,
    /// Verify commands new for a folder, as “folder: command” (they run without asking).
    pub verify: Vec<String>,
    /// Addresses the provider's or the evaluator's requests (and saved key) would go to.
    pub addresses: Vec<String>,
    /// Reviews approved with nobody looking.
    pub auto_approve: bool,
}

impl ImportRisks {
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty() && self.agent.is_none() && self.allowed.is_empty() && self.verify.is_empty() && self.addresses.is_empty() && !self.auto_approve
    }
}

/// The version tag of an exported settings file.
const EXPORT_FORMAT: u32 = 1;

impl Settings {
    /// Settings as a JSON file to share or keep. It never holds a secret: keys are not in the
    /// settings at all, an MCP server's environment values are dropped unless they are `${VAR}`
    /// references, since a token is what people put there, and so are the external agent's keys.
    pub fn export_json(&self) -> String {
        let mut clean = self.clone();
        for server in &mut clean.mcp_servers {
            for value in server.env.values_mut() {
                if !is_env_reference(value) {
                    value.clear();
                }
            }
        }
        // The agent's environment holds settings too (`CODEX_HOME=…`): only its keys are dropped.
        if let Some(agent) = &mut clean.agent {
            for (var, value) in agent.env.iter_mut() {
                if crate::tool::command::is_secret_var(var) && !is_env_reference(value) {
                    value.clear();
                }
            }
        }
        let doc = serde_json::json!({ "finishline_settings": EXPORT_FORMAT, "settings": clean });
        serde_json::to_string_pretty(&doc).unwrap_or_default()
    }

    /// An export leaves each secret value empty. Imported where `current` keeps that value in the
    /// keychain (the same server or agent: its name, and the same program with the same
    /// arguments, so a shared file's other program never gets the person's key), the empty value
    /// points there again, so that importing one's own export loses no key; elsewhere it stays
    /// empty, to be filled in.
    pub fn keep_secrets_of(&mut self, current: &Settings) {
        for server in &mut self.mcp_servers {
            let same = |c: &&McpServerSettings| c.name == server.name && c.command.trim() == server.command.trim() && c.args == server.args;
            let Some(had) = current.mcp_servers.iter().find(same) else { continue };
            for (var, value) in server.env.iter_mut().filter(|(_, v)| v.is_empty()) {
                if had.env.get(var).is_some_and(|v| v == IN_KEYCHAIN) {
                    *value = IN_KEYCHAIN.to_string();
                }
            }
        }
        let (Some(agent), Some(had)) = (self.agent.as_mut(), current.agent.as_ref()) else { return };
        if agent.name == had.name && agent.command.trim() == had.command.trim() && agent.args == had.args {
            for (var, value) in agent.env.iter_mut().filter(|(_, v)| v.is_empty()) {
                if had.env.get(var).is_some_and(|v| v == IN_KEYCHAIN) {
                    *value = IN_KEYCHAIN.to_string();
                }
            }
        }
    }

    /// The enabled MCP servers in `incoming` that would run a command these settings do not: new
    /// servers, and ones whose command, arguments or environment names differ. An import that
    /// brings any shows them to the person first, since each is a program that will run.
    pub fn mcp_changes(&self, incoming: &Settings) -> Vec<McpServerSettings> {
        let runs_the_same =
            |a: &McpServerSettings, b: &McpServerSettings| a.command.trim() == b.command.trim() && a.args == b.args && a.env.keys().eq(b.env.keys());
        incoming
            .mcp_servers
            .iter()
            .filter(|new| new.enabled)
            .filter(|new| !self.mcp_servers.iter().any(|old| old.enabled && old.name == new.name && runs_the_same(old, new)))
            .cloned()
            .collect()
    }

    /// What importing `incoming` would let run, or send, that these settings do not: a settings
    /// file comes from someone else, and each of these acts without asking once saved. An import
    /// that brings any shows them to the person first.
    pub fn import_risks(&self, incoming: &Settings) -> ImportRisks {
        // The agent's program, with what its environment sets (`NODE_OPTIONS`, `LD_PRELOAD` load
        // other code); keys kept in the keychain and `${VAR}` references are no setting of the file.
        let runs = |a: &crate::external::ExternalAgent| {
            let line = std::iter::once(a.command.as_str()).chain(a.args.iter().map(String::as_str)).collect::<Vec<_>>().join(" ");
            let set: Vec<String> = a.env.iter().filter(|(_, v)| !is_env_reference(v) && v.as_str() != IN_KEYCHAIN).map(|(k, v)| format!("{k}={v}")).collect();
            if set.is_empty() {
                line
            } else {
                format!("{line} (environment: {})", set.join(", "))
            }
        };
        let agent = incoming.agent.as_ref().filter(|new| self.agent.as_ref().is_none_or(|old| runs(old) != runs(new))).map(runs);
        let allowed = incoming
            .permissions
            .iter()
            .filter(|(tool, p)| **p == PermissionDefault::Allow && self.permissions.get(*tool) != Some(&PermissionDefault::Allow))
            .map(|(tool, _)| tool.clone())
            .collect();
        let verify = incoming
            .verify_commands
            .iter()
            .flat_map(|(folder, commands)| {
                let known = self.verify_commands.get(folder);
                commands.iter().filter(move |c| known.is_none_or(|k| !k.contains(c))).map(move |c| format!("{folder}: {c}"))
            })
            .collect();
        // A saved key goes with its preset (or the evaluator's), wherever the address points.
        let url = |p: Option<&ProviderSettings>| p.map(|p| p.base_url.trim().trim_end_matches('/').to_string()).filter(|u| !u.is_empty());
        let mut addresses: Vec<String> = Vec::new();
        for (old, new) in
            [(url(Some(&self.provider)), url(Some(&incoming.provider))), (url(self.evaluator_provider.as_ref()), url(incoming.evaluator_provider.as_ref()))]
        {
            if let Some(new) = new.filter(|n| old.as_ref() != Some(n) && !addresses.contains(n)) {
                addresses.push(new);
            }
        }
        ImportRisks { servers: self.mcp_changes(incoming), agent, allowed, verify, addresses, auto_approve: incoming.auto_approve && !self.auto_approve }
    }

    /// Reads an exported settings file (or a bare settings object) and checks it like the form
    /// does, so a broken file is refused whole and the current settings stay.
    pub fn import_json(text: &str) -> Result<Settings> {
        if text.len() as u64 > MAX_FILE_BYTES {
            return Err(Error::InvalidInput("that file is over 4 MB; a settings file is a few kilobytes".into()));
        }
        let v: serde_json::Value = serde_json::from_str(text).map_err(|e| Error::InvalidInput(format!("the file is not JSON ({e})")))?;
        if let Some(f) = v.get("finishline_settings").and_then(|f| f.as_u64()) {
            if f > EXPORT_FORMAT as u64 {
                return Err(Error::InvalidInput(format!("the file was written by a newer Finishline (format {f}); update to import it")));
            }
        }
        let body = v.get("settings").cloned().unwrap_or(v);
        if !body.is_object() {
            return Err(Error::InvalidInput("the file holds no settings object".into()));
        }
        let settings: Settings = from_json(body).map_err(|e| Error::InvalidInput(format!("the settings in the file are not valid: {e}")))?;
        settings.validate()?;
        Ok(settings)
    }
}
