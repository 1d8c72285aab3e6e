//! The agents Finishline knows how to start, and the custom entry for any other ACP agent.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// How to start one ACP agent: a command speaking ACP over its stdio.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ExternalAgent {
    /// The name sessions record and `--agent` takes: `opencode`, `gemini`, ... or a custom one.
    pub name: String,
    pub command: String,
    #[serde(default)]
    pub args: Vec<String>,
    /// Extra environment for the agent's process (never a provider key of Finishline's own).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

/// A preset: an agent people already use, with the command that installs it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Preset {
    pub name: &'static str,
    pub label: &'static str,
    pub command: &'static str,
    pub args: &'static [&'static str],
    pub install: &'static str,
}

pub const PRESETS: &[Preset] = &[
    Preset { name: "opencode", label: "OpenCode", command: "opencode", args: &["acp"], install: "npm i -g opencode-ai" },
    Preset { name: "gemini", label: "Gemini CLI", command: "gemini", args: &["--experimental-acp"], install: "npm i -g @google/gemini-cli" },
    Preset { name: "claude-code", label: "Claude Code", command: "claude-code-acp", args: &[], install: "npm i -g @zed-industries/claude-code-acp" },
    Preset { name: "codex", label: "Codex", command: "codex-acp", args: &[], install: "npm i -g @zed-industries/codex-acp" },
    Preset { name: "goose", label: "goose", command: "goose", args: &["acp"], install: "see https://block.github.io/goose/docs/getting-started/installation" },
];

impl ExternalAgent {
    /// The preset named `name`, as an agent to start.
    pub fn preset(name: &str) -> Option<ExternalAgent> {
        PRESETS.iter().find(|p| p.name == name).map(|p| ExternalAgent { name: p.name.into(), command: p.command.into(), args: p.args.iter().map(|a| a.to_string()).collect(), env: BTreeMap::new() })
    }

    /// What `--agent` takes: a preset's name, or a command line for any other ACP agent
    /// (`--agent "my-agent --acp"`), named after its program.
    pub fn from_choice(choice: &str) -> Option<ExternalAgent> {
        let choice = choice.trim();
        if choice.is_empty() || choice == "builtin" {
            return None;
        }
        if let Some(p) = Self::preset(choice) {
            return Some(p);
        }
        let mut words = choice.split_whitespace().map(String::from);
        let command = words.next()?;
        let name = std::path::Path::new(&command).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| command.clone());
        Some(ExternalAgent { name, command, args: words.collect(), env: BTreeMap::new() })
    }

    /// The person's name for it: the preset's label, else its own name.
    pub fn label(&self) -> String {
        PRESETS.iter().find(|p| p.name == self.name).map(|p| p.label.to_string()).unwrap_or_else(|| self.name.clone())
    }

    /// How to install it, when it is a preset.
    pub fn install_hint(&self) -> Option<&'static str> {
        PRESETS.iter().find(|p| p.name == self.name).map(|p| p.install)
    }

    /// Where its command is: a path as given, else the first match on PATH.
    pub fn locate(&self) -> Option<PathBuf> {
        let cmd = std::path::Path::new(&self.command);
        if cmd.components().count() > 1 {
            return cmd.is_file().then(|| cmd.to_path_buf());
        }
        std::env::split_paths(&std::env::var_os("PATH")?).map(|d| d.join(cmd)).find(|p| p.is_file())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_preset_name_starts_the_agent_with_its_acp_arguments() {
        let a = ExternalAgent::from_choice("opencode").unwrap();
        assert_eq!((a.command.as_str(), a.args.clone()), ("opencode", vec!["acp".to_string()]), "OpenCode speaks ACP only with `acp`");
        assert_eq!(a.label(), "OpenCode");
        assert!(a.install_hint().unwrap().contains("opencode-ai"), "a missing preset must say how to install it");
    }

    #[test]
    fn any_other_command_line_is_a_custom_agent_named_after_its_program() {
        let a = ExternalAgent::from_choice("/opt/agents/my-agent --acp --fast").unwrap();
        assert_eq!(a.name, "my-agent");
        assert_eq!(a.args, vec!["--acp", "--fast"]);
        assert!(ExternalAgent::from_choice("builtin").is_none(), "builtin is Finishline's own agent");
        assert!(ExternalAgent::from_choice("  ").is_none());
    }
}
