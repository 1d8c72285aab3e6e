//! The permission gate's policy: per-tool defaults from the toolbox, overridden by settings and
//! by the CLI's `--allow`, plus what the person allowed for this session.

use std::collections::{HashMap, HashSet};

use crate::tool::{Permission, Toolbox};

#[derive(Debug, Clone, Default)]
pub struct PermissionPolicy {
    pub overrides: HashMap<String, Permission>,
    /// `--allow all`: every tool that would ask is allowed.
    pub allow_all: bool,
    /// With nobody to ask (a CLI without a terminal), what would ask is denied.
    pub nobody_to_ask: bool,
    /// A denial tells the agent and goes on, instead of stopping the run.
    pub continue_after_denial: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gate {
    Run,
    Ask,
    Refuse,
}

/// Among the tools allowed for a session, every one: a task started with `--allow all`. No tool
/// is named so (an external agent names its calls as it likes, and "all" could be one of them):
/// only [`grant_started_with`] puts it there.
pub const ALL_TOOLS: &str = "\u{0}every tool";

/// Whether the tools allowed for the session cover `tool`: by name, or all of them.
fn allows(allowed_for_session: &HashSet<String>, tool: &str) -> bool {
    (!tool.starts_with('\u{0}') && allowed_for_session.contains(tool)) || allowed_for_session.contains(ALL_TOOLS)
}

/// Marks a tool the task was started naming: it runs even where the settings deny it (the
/// person named it for this task), in the first run and every later one alike.
const NAMED_BY_TASK: &str = "\u{0}named ";

fn named_by_task(allowed_for_session: &HashSet<String>, tool: &str) -> bool {
    allowed_for_session.contains(&format!("{NAMED_BY_TASK}{tool}"))
}

/// Allows `tool` for the rest of the session (the person's "always"): by its name only, never
/// as every tool or as named by the task, whatever the agent named its call.
pub fn grant(allowed_for_session: &mut HashSet<String>, tool: &str) {
    if !tool.starts_with('\u{0}') {
        allowed_for_session.insert(tool.to_string());
    }
}

/// What "Allow for this session" grants on a prompt with no call of the agent's behind it (a plan
/// step's check, the agent's verify command, an external agent's terminal): that command only.
/// Granted as `run_command`, the prompt about one check let the agent run any command unasked
/// for the rest of the session. No tool is named so: only Finishline puts it there.
pub fn command_grant(command: &str) -> String {
    format!("\u{0}command:{command}")
}

/// Allows what the task was started allowing (`--allow`, where `all` is every tool that would
/// ask, and a tool named is allowed even where the settings deny it).
pub fn grant_started_with(allowed_for_session: &mut HashSet<String>, tools: &[String]) {
    for t in tools.iter().filter(|t| !t.starts_with('\u{0}')) {
        if t == "all" {
            allowed_for_session.insert(ALL_TOOLS.to_string());
        } else {
            grant(allowed_for_session, t);
            allowed_for_session.insert(format!("{NAMED_BY_TASK}{t}"));
        }
    }
}

impl PermissionPolicy {
    pub fn gate(&self, toolbox: &Toolbox, tool: &str, allowed_for_session: &HashSet<String>) -> Gate {
        match self.setting(toolbox, tool, allowed_for_session) {
            Permission::Allow => Gate::Run,
            Permission::Deny => Gate::Refuse,
            Permission::Ask if self.allow_all || allows(allowed_for_session, tool) => Gate::Run,
            Permission::Ask if self.nobody_to_ask => Gate::Refuse,
            Permission::Ask => Gate::Ask,
        }
    }

    /// A prompt about one command, with no call of the agent's behind it (a plan step's check,
    /// the agent's verify command, an external agent's terminal): as [`Self::gate`], and the
    /// command the person allowed for the session runs, in a later run with nobody to ask too,
    /// unless the settings deny the tool.
    pub fn gate_command(&self, toolbox: &Toolbox, tool: &str, command: &str, allowed_for_session: &HashSet<String>) -> Gate {
        match self.gate(toolbox, tool, allowed_for_session) {
            Gate::Run => Gate::Run,
            Gate::Refuse if self.setting(toolbox, tool, allowed_for_session) == Permission::Deny => Gate::Refuse,
            _ if allowed_for_session.contains(&command_grant(command)) => Gate::Run,
            gate => gate,
        }
    }

    /// Whether `tool` is refused only because it would ask and nobody can be asked: not the
    /// person's denial, and said so.
    pub fn refused_unasked(&self, toolbox: &Toolbox, tool: &str, allowed_for_session: &HashSet<String>) -> bool {
        self.nobody_to_ask && self.setting(toolbox, tool, allowed_for_session) == Permission::Ask && !self.allow_all && !allows(allowed_for_session, tool)
    }

    /// An external agent's tool that `gate_external` refuses only because nobody could be asked:
    /// the history says so, not that the person denied a call they were never shown.
    pub fn external_refused_unasked(&self, tool: &str, kind: Option<&str>, allowed_for_session: &HashSet<String>) -> bool {
        self.nobody_to_ask
            && self.external_setting(tool, kind, allowed_for_session) != Some(Permission::Deny)
            && self.gate_external(tool, kind, allowed_for_session) == Gate::Refuse
    }

    /// An external agent's tool: the agent asked, so unless the settings or the person already
    /// decided for this tool, the person is asked. The tool is known by its name and by the
    /// agent's kind for it (`edit`, `execute`): Gemini CLI names each call by its file ("Writing
    /// to a.txt"), so `--allow edit` (or allowing it for the session) is what covers the next.
    /// A setting for the name comes before one for the kind.
    pub fn gate_external(&self, tool: &str, kind: Option<&str>, allowed_for_session: &HashSet<String>) -> Gate {
        let allowed = allows(allowed_for_session, tool) || kind.is_some_and(|k| allowed_for_session.contains(k));
        match self.external_setting(tool, kind, allowed_for_session).unwrap_or(Permission::Ask) {
            Permission::Allow => Gate::Run,
            Permission::Deny => Gate::Refuse,
            Permission::Ask if self.allow_all || allowed => Gate::Run,
            Permission::Ask if self.nobody_to_ask => Gate::Refuse,
            Permission::Ask => Gate::Ask,
        }
    }

    /// A built-in tool's permission: named by the task, by the settings, else its default.
    fn setting(&self, toolbox: &Toolbox, tool: &str, allowed_for_session: &HashSet<String>) -> Permission {
        if named_by_task(allowed_for_session, tool) {
            return Permission::Allow;
        }
        self.overrides.get(tool).copied().unwrap_or_else(|| toolbox.default_permission(tool))
    }

    /// An external tool's permission by its name, then by its kind; at each, the task's naming
    /// before the settings (as `--allow` put it in the first run's settings). A call with a
    /// kind is the task's by its kind only: its name is the agent's title, which could name a
    /// tool the task allowed ("edit") for a call of a kind the settings deny ("execute").
    fn external_setting(&self, tool: &str, kind: Option<&str>, allowed_for_session: &HashSet<String>) -> Option<Permission> {
        let by = |key: &str, task_may_name: bool| {
            if task_may_name && named_by_task(allowed_for_session, key) {
                Some(Permission::Allow)
            } else {
                self.overrides.get(key).copied()
            }
        };
        by(tool, kind.is_none()).or_else(|| kind.and_then(|k| by(k, true)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Gemini CLI titles each call by its file: `--allow edit`, or allowing one call's kind for
    /// the session, covers the next file's call, which its title alone never would.
    #[test]
    fn an_agents_tool_is_allowed_by_its_name_or_its_kind() {
        let edit_allowed = PermissionPolicy { overrides: HashMap::from([("edit".to_string(), Permission::Allow)]), nobody_to_ask: true, ..Default::default() };
        assert_eq!(edit_allowed.gate_external("Writing to b.txt", Some("edit"), &HashSet::new()), Gate::Run);
        assert_eq!(edit_allowed.gate_external("Running ls", Some("execute"), &HashSet::new()), Gate::Refuse);
        let asks = PermissionPolicy { nobody_to_ask: false, ..Default::default() };
        let for_session = HashSet::from(["edit".to_string()]);
        assert_eq!(asks.gate_external("Writing to c.txt", Some("edit"), &for_session), Gate::Run);
        assert_eq!(asks.gate_external("Writing to c.txt", None, &for_session), Gate::Ask);
        let name_denied = PermissionPolicy {
            overrides: HashMap::from([("edit".to_string(), Permission::Allow), ("Writing to .env".to_string(), Permission::Deny)]),
            ..Default::default()
        };
        assert_eq!(name_denied.gate_external("Writing to .env", Some("edit"), &HashSet::new()), Gate::Refuse, "a setting for the name comes first");
    }

    /// A task started with `--allow all` keeps it in its later runs as a session grant: every
    /// tool that would ask runs, one the settings deny stays refused.
    #[test]
    fn a_task_started_allowing_all_runs_what_would_ask_and_not_what_is_denied() {
        let mut all = HashSet::new();
        grant_started_with(&mut all, &["all".to_string()]);
        let nobody = PermissionPolicy { overrides: HashMap::from([("Deleting x".to_string(), Permission::Deny)]), nobody_to_ask: true, ..Default::default() };
        assert_eq!(nobody.gate_external("Running ls", Some("execute"), &all), Gate::Run);
        assert_eq!(nobody.gate_external("Deleting x", Some("delete"), &all), Gate::Refuse);
        assert!(!nobody.external_refused_unasked("Running ls", Some("execute"), &all));
        // An agent's call named "all", allowed always, is that call alone.
        let mut named_all = HashSet::new();
        grant(&mut named_all, "all");
        assert_eq!(nobody.gate_external("Running ls", Some("execute"), &named_all), Gate::Refuse);
        grant(&mut named_all, ALL_TOOLS);
        assert_eq!(nobody.gate_external("Running ls", Some("execute"), &named_all), Gate::Refuse, "nor can it name every tool");
    }

    /// A tool the task was started naming (`--allow run_command`) runs though the settings deny
    /// it, in every run of the task, as it did in the first; `all` covers only what would ask.
    /// A person's "always" for a tool never lifts a denial.
    #[test]
    fn a_tool_the_task_was_started_naming_runs_though_the_settings_deny_it() {
        let denies = PermissionPolicy {
            overrides: HashMap::from([
                ("run_command".to_string(), Permission::Deny),
                ("fetch_url".to_string(), Permission::Deny),
                ("edit".to_string(), Permission::Deny),
            ]),
            nobody_to_ask: true,
            ..Default::default()
        };
        let toolbox = Toolbox::standard();
        let mut started = HashSet::new();
        grant_started_with(&mut started, &["run_command".to_string(), "all".to_string(), "edit".to_string()]);
        assert_eq!(denies.gate(&toolbox, "run_command", &started), Gate::Run);
        assert_eq!(denies.gate(&toolbox, "fetch_url", &started), Gate::Refuse, "all does not lift a denial");
        assert_eq!(denies.gate_external("Writing to a.txt", Some("edit"), &started), Gate::Run, "named by its kind");
        let mut always = HashSet::new();
        grant(&mut always, "run_command");
        assert_eq!(denies.gate(&toolbox, "run_command", &always), Gate::Refuse);
        let name_denied = PermissionPolicy { overrides: HashMap::from([("Writing to .env".to_string(), Permission::Deny)]), ..Default::default() };
        assert_eq!(name_denied.gate_external("Writing to .env", Some("edit"), &started), Gate::Refuse, "a setting for the name comes before the task's kind");
        let mut edit_only = HashSet::new();
        grant_started_with(&mut edit_only, &["edit".to_string()]);
        let execute_denied = PermissionPolicy { overrides: HashMap::from([("execute".to_string(), Permission::Deny)]), ..Default::default() };
        assert_eq!(execute_denied.gate_external("edit", Some("execute"), &edit_only), Gate::Refuse, "a call titled as an allowed tool is judged by its kind");
    }

    /// A command the person allowed for the session (a step's check) runs in every later run of
    /// the session, one started from a script with nobody to ask too; another command does not,
    /// and a denial in the settings still stands.
    #[test]
    fn a_command_allowed_for_the_session_runs_later_though_nobody_can_be_asked() {
        let toolbox = Toolbox::standard();
        let granted = HashSet::from([command_grant("cargo test")]);
        let asks = PermissionPolicy::default();
        assert_eq!(asks.gate_command(&toolbox, "run_command", "cargo test", &granted), Gate::Run);
        assert_eq!(asks.gate_command(&toolbox, "run_command", "cargo test; rm -rf ~", &granted), Gate::Ask);
        let nobody = PermissionPolicy { nobody_to_ask: true, ..Default::default() };
        assert_eq!(nobody.gate_command(&toolbox, "run_command", "cargo test", &granted), Gate::Run, "the person's grant holds with nobody to ask");
        assert_eq!(nobody.gate_command(&toolbox, "run_command", "cargo build", &granted), Gate::Refuse);
        let denies = PermissionPolicy { overrides: HashMap::from([("run_command".to_string(), Permission::Deny)]), nobody_to_ask: true, ..Default::default() };
        assert_eq!(denies.gate_command(&toolbox, "run_command", "cargo test", &granted), Gate::Refuse, "a denial in the settings stands");
    }
}
