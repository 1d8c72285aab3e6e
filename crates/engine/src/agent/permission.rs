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

impl PermissionPolicy {
    pub fn gate(&self, toolbox: &Toolbox, tool: &str, allowed_for_session: &HashSet<String>) -> Gate {
        let base = self.overrides.get(tool).copied().unwrap_or_else(|| toolbox.default_permission(tool));
        match base {
            Permission::Allow => Gate::Run,
            Permission::Deny => Gate::Refuse,
            Permission::Ask if self.allow_all || allowed_for_session.contains(tool) => Gate::Run,
            Permission::Ask if self.nobody_to_ask => Gate::Refuse,
            Permission::Ask => Gate::Ask,
        }
    }

    /// Whether `tool` is refused only because it would ask and nobody can be asked: not the
    /// person's denial, and said so.
    pub fn refused_unasked(&self, toolbox: &Toolbox, tool: &str, allowed_for_session: &HashSet<String>) -> bool {
        self.nobody_to_ask
            && self.overrides.get(tool).copied().unwrap_or_else(|| toolbox.default_permission(tool)) == Permission::Ask
            && !self.allow_all
            && !allowed_for_session.contains(tool)
    }

    /// An external agent's tool that `gate_external` refuses only because nobody could be asked:
    /// the history says so, not that the person denied a call they were never shown.
    pub fn external_refused_unasked(&self, tool: &str, allowed_for_session: &HashSet<String>) -> bool {
        self.nobody_to_ask && self.overrides.get(tool) != Some(&Permission::Deny) && self.gate_external(tool, allowed_for_session) == Gate::Refuse
    }

    /// An external agent's tool: the agent asked, so unless the settings or the person already
    /// decided for this tool, the person is asked.
    pub fn gate_external(&self, tool: &str, allowed_for_session: &HashSet<String>) -> Gate {
        match self.overrides.get(tool).copied().unwrap_or(Permission::Ask) {
            Permission::Allow => Gate::Run,
            Permission::Deny => Gate::Refuse,
            Permission::Ask if self.allow_all || allowed_for_session.contains(tool) => Gate::Run,
            Permission::Ask if self.nobody_to_ask => Gate::Refuse,
            Permission::Ask => Gate::Ask,
        }
    }
}
