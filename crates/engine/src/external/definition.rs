//! The agents Finishline knows how to start, and the custom entry for any other ACP agent.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

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
    /// Older names of the command, tried in order when `command` is not installed (the package
    /// was renamed, and people still have the old one).
    #[serde(skip)]
    pub older_commands: &'static [&'static str],
    /// The arguments for versions that lack `args` (Gemini CLI before `--acp`), tried when the
    /// agent refuses `args` at start.
    #[serde(skip)]
    pub older_args: Option<&'static [&'static str]>,
}

pub const PRESETS: &[Preset] = &[
    Preset { name: "opencode", label: "OpenCode", command: "opencode", args: &["acp"], install: "npm i -g opencode-ai", older_commands: &[], older_args: None },
    Preset {
        name: "gemini",
        label: "Gemini CLI",
        command: "gemini",
        args: &["--acp"],
        install: "npm i -g @google/gemini-cli",
        older_commands: &[],
        older_args: Some(&["--experimental-acp"]),
    },
    Preset {
        name: "claude-code",
        label: "Claude Code",
        command: "claude-agent-acp",
        args: &[],
        install: "npm i -g @agentclientprotocol/claude-agent-acp",
        older_commands: &["claude-code-acp"],
        older_args: None,
    },
    Preset {
        name: "codex",
        label: "Codex",
        command: "codex-acp",
        args: &[],
        install: "npm i -g @agentclientprotocol/codex-acp",
        older_commands: &[],
        older_args: None,
    },
    Preset {
        name: "goose",
        label: "goose",
        command: "goose",
        args: &["acp"],
        install: "see https://block.github.io/goose/docs/getting-started/installation",
        older_commands: &[],
        older_args: None,
    },
];

impl ExternalAgent {
    /// The preset named `name`, as an agent to start.
    pub fn preset(name: &str) -> Option<ExternalAgent> {
        PRESETS.iter().find(|p| p.name == name).map(|p| ExternalAgent {
            name: p.name.into(),
            command: p.command.into(),
            args: p.args.iter().map(|a| a.to_string()).collect(),
            env: BTreeMap::new(),
        })
    }

    fn as_preset(&self) -> Option<&'static Preset> {
        PRESETS.iter().find(|p| p.name == self.name)
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
        // Words as a shell takes them (`"/opt/My Agent/agent" --acp`); an unclosed quote, which
        // shlex refuses, is read word by word.
        let words = shlex::split(choice).unwrap_or_else(|| choice.split_whitespace().map(String::from).collect());
        let mut words = words.into_iter();
        let command = words.next()?;
        let name = std::path::Path::new(&command).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| command.clone());
        Some(ExternalAgent { name, command, args: words.collect(), env: BTreeMap::new() })
    }

    /// The person's name for it: the preset's label, else its own name.
    pub fn label(&self) -> String {
        self.as_preset().map(|p| p.label.to_string()).unwrap_or_else(|| self.name.clone())
    }

    /// How to install it, when it is a preset.
    pub fn install_hint(&self) -> Option<&'static str> {
        self.as_preset().map(|p| p.install)
    }

    /// The arguments to try when the agent refuses its own at start (an older version).
    pub fn older_args(&self) -> Option<Vec<String>> {
        let p = self.as_preset()?;
        // Only for the preset's own arguments: a person's own choice is theirs.
        (self.args.iter().map(String::as_str).eq(p.args.iter().copied())).then(|| p.older_args.map(|a| a.iter().map(|s| s.to_string()).collect())).flatten()
    }

    /// Whether the agent may read through the client's file system (`fs/read_text_file`).
    /// Gemini CLI (0.61) cannot: its ACP client rejects a failed request with the bare JSON-RPC
    /// error object, which its write tool never takes for "not found", so creating a new file
    /// fails with "Error checking existing file". Without the offer it reads the disk itself
    /// (and still writes through Finishline).
    pub fn reads_through_client(&self) -> bool {
        self.program_name().as_deref() != Some("gemini")
    }

    fn program_name(&self) -> Option<String> {
        Path::new(&self.command).file_name().map(|n| n.to_string_lossy().into_owned())
    }

    /// Where its command is: a path as given, else the first match on PATH or in the places
    /// npm, bun and nvm install to (an app started from the desktop menu often has a PATH
    /// without them); for a preset, its older command names too.
    pub fn locate(&self) -> Option<PathBuf> {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let env = |k: &str| std::env::var(k).ok();
        let dirs = search_dirs(std::env::var_os("PATH").as_deref(), home.as_deref(), &env);
        self.locate_in(&dirs)
    }

    /// Where its command is, or why it cannot run here, in words for the person with how to
    /// install it.
    pub fn installed(&self) -> Result<PathBuf, String> {
        self.locate().ok_or_else(|| {
            let install = self.install_hint().map(|i| format!(" Install it with: {i}")).or_else(|| self.known_names()).unwrap_or_default();
            format!("{} is not installed here: `{}` is neither on PATH nor where npm, bun or nvm install programs.{install}", self.label(), self.command)
        })
    }

    /// For a name that is no preset and no path: the names Finishline knows, since a typo of
    /// one (`opencod`) otherwise reads only as a program missing.
    fn known_names(&self) -> Option<String> {
        // A command line given whole (a path, or arguments) is already what is asked for.
        if self.as_preset().is_some() || Path::new(&self.command).components().count() > 1 || !self.args.is_empty() {
            return None;
        }
        let names: Vec<&str> = std::iter::once("builtin").chain(PRESETS.iter().map(|p| p.name)).collect();
        Some(format!(" By name Finishline knows {}; any other ACP agent is given as its command line.", crate::and_list::and_list(&names)))
    }

    /// [`ExternalAgent::locate`] over the given folders.
    pub fn locate_in(&self, dirs: &[PathBuf]) -> Option<PathBuf> {
        let cmd = Path::new(&self.command);
        if cmd.components().count() > 1 {
            return is_program(cmd).then(|| cmd.to_path_buf());
        }
        let mut names = vec![self.command.clone()];
        if let Some(p) = self.as_preset().filter(|p| p.command == self.command) {
            names.extend(p.older_commands.iter().map(|c| c.to_string()));
        }
        names.iter().find_map(|name| dirs.iter().map(|d| d.join(name)).find(|p| is_program(p)))
    }
}

fn is_program(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The folders a command is looked for in: PATH first, then where people's agents usually are:
/// npm's global prefix (`NPM_CONFIG_PREFIX`, or `prefix=` in `~/.npmrc`), `~/.npm-global/bin`,
/// `~/.local/bin`, `~/.bun/bin`, the active nvm version's `bin`, `~/.volta/bin` and
/// `/usr/local/bin`.
pub fn search_dirs(path: Option<&std::ffi::OsStr>, home: Option<&Path>, env: &dyn Fn(&str) -> Option<String>) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = path.map(|p| std::env::split_paths(p).collect()).unwrap_or_default();
    let npmrc_prefix = home.and_then(|h| std::fs::read_to_string(h.join(".npmrc")).ok()).and_then(|t| {
        t.lines()
            .filter_map(|l| l.trim().strip_prefix("prefix"))
            .filter_map(|rest| rest.trim_start().strip_prefix('='))
            .map(|v| v.trim().trim_matches('"').to_string())
            .next_back()
    });
    for prefix in [env("NPM_CONFIG_PREFIX").or_else(|| env("npm_config_prefix")), npmrc_prefix].into_iter().flatten() {
        let prefix = match (prefix.strip_prefix("~/"), home) {
            (Some(rest), Some(h)) => h.join(rest),
            _ => PathBuf::from(&prefix),
        };
        dirs.push(prefix.join("bin"));
    }
    if let Some(h) = home {
        dirs.extend([h.join(".npm-global/bin"), h.join(".local/bin"), h.join(".bun/bin")]);
        let nvm = env("NVM_DIR").map(PathBuf::from).unwrap_or_else(|| h.join(".nvm"));
        if let Some(bin) = env("NVM_BIN").map(PathBuf::from).or_else(|| nvm_active_bin(&nvm)) {
            dirs.push(bin);
        }
        dirs.push(h.join(".volta/bin"));
    }
    dirs.push(PathBuf::from("/usr/local/bin"));
    let mut seen = std::collections::HashSet::new();
    dirs.retain(|d| seen.insert(d.clone()));
    dirs
}

/// nvm's default version's `bin`: `alias/default` names a version or a prefix of one (`20`,
/// `v20.11.1`, `lts/iron`); the newest installed version it matches.
fn nvm_active_bin(nvm: &Path) -> Option<PathBuf> {
    let versions = nvm.join("versions/node");
    let mut alias = std::fs::read_to_string(nvm.join("alias/default")).ok()?.trim().to_string();
    // An alias may name another alias (lts/iron -> v20.x), one level is enough in practice.
    if let Ok(target) = std::fs::read_to_string(nvm.join("alias").join(&alias)) {
        alias = target.trim().to_string();
    }
    let wanted = alias.trim_start_matches('v').to_string();
    let mut found: Vec<(Vec<u64>, PathBuf)> = std::fs::read_dir(&versions)
        .ok()?
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let bare = name.trim_start_matches('v');
            let matches = bare == wanted || bare.starts_with(&format!("{wanted}."));
            let key: Vec<u64> = bare.split('.').filter_map(|n| n.parse().ok()).collect();
            matches.then(|| (key, e.path().join("bin")))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, bin)| bin)
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
    fn the_presets_name_the_current_packages_and_commands() {
        let claude = ExternalAgent::preset("claude-code").unwrap();
        assert_eq!(claude.command, "claude-agent-acp");
        assert_eq!(claude.install_hint(), Some("npm i -g @agentclientprotocol/claude-agent-acp"));
        assert_eq!(ExternalAgent::preset("codex").unwrap().install_hint(), Some("npm i -g @agentclientprotocol/codex-acp"));
        let gemini = ExternalAgent::preset("gemini").unwrap();
        assert_eq!(gemini.args, vec!["--acp"], "`--experimental-acp` is deprecated");
        assert_eq!(gemini.older_args(), Some(vec!["--experimental-acp".to_string()]), "versions before --acp are still started");
        assert!(!gemini.reads_through_client() && claude.reads_through_client());
    }

    #[test]
    fn a_name_that_is_no_preset_and_no_program_names_the_agents_known_by_name() {
        // `opencod` for `opencode` read as "not installed", and the right names were nowhere.
        let typo = ExternalAgent::from_choice("opencod").unwrap();
        let said = typo.installed().unwrap_err();
        assert!(said.contains("opencod is not installed here"), "{said}");
        assert!(said.contains("By name Finishline knows builtin, opencode, gemini, claude-code, codex and goose"), "{said}");
        // A preset whose program is not there (named so that no machine has it).
        let mut goose = ExternalAgent::preset("goose").unwrap();
        goose.command = "finishline-test-no-such-goose".into();
        let missing = goose.installed().unwrap_err();
        assert!(!missing.contains("By name"), "a preset's own name needs no list, only how to install it: {missing}");
        let custom = ExternalAgent::from_choice("my-agent-not-here --acp").unwrap().installed().unwrap_err();
        assert!(!custom.contains("By name"), "a command line given whole is what was asked for: {custom}");
    }

    #[test]
    fn any_other_command_line_is_a_custom_agent_named_after_its_program() {
        let a = ExternalAgent::from_choice("/opt/agents/my-agent --acp --fast").unwrap();
        assert_eq!(a.name, "my-agent");
        assert_eq!(a.args, vec!["--acp", "--fast"]);
        assert!(ExternalAgent::from_choice("builtin").is_none(), "builtin is Finishline's own agent");
        assert!(ExternalAgent::from_choice("  ").is_none());
        assert_eq!(a.older_args(), None);
        // Quoted as a shell takes it, as the window's Settings do.
        let spaced = ExternalAgent::from_choice(r#""/opt/My Agent/bin/agent" --acp --name 'two words'"#).unwrap();
        assert_eq!((spaced.name.as_str(), spaced.command.as_str()), ("agent", "/opt/My Agent/bin/agent"));
        assert_eq!(spaced.args, vec!["--acp", "--name", "two words"]);
    }

    fn program(dir: &Path, name: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        std::fs::create_dir_all(dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    }

    #[test]
    fn agents_are_found_where_npm_bun_and_nvm_install_them_without_being_on_path() {
        let home = tempfile::tempdir().unwrap();
        let h = home.path();
        std::fs::write(h.join(".npmrc"), "registry=https://registry.npmjs.org/\nprefix=~/.npm-packages\n").unwrap();
        std::fs::create_dir_all(h.join(".nvm/alias")).unwrap();
        std::fs::write(h.join(".nvm/alias/default"), "20\n").unwrap();
        std::fs::create_dir_all(h.join(".nvm/versions/node/v18.20.0/bin")).unwrap();
        let nvm_codex = program(&h.join(".nvm/versions/node/v20.11.1/bin"), "codex-acp");
        let npm_gemini = program(&h.join(".npm-packages/bin"), "gemini");
        let bun_opencode = program(&h.join(".bun/bin"), "opencode");
        let old_claude = program(&h.join(".local/bin"), "claude-code-acp");
        let no_env = |_: &str| None;
        let dirs = search_dirs(Some(std::ffi::OsStr::new("/nonexistent-bin")), Some(h), &no_env);
        assert_eq!(dirs[0], PathBuf::from("/nonexistent-bin"), "PATH comes first");
        let find = |name: &str| ExternalAgent::preset(name).unwrap().locate_in(&dirs);
        assert_eq!(find("codex"), Some(nvm_codex), "the newest installed version nvm's default names");
        assert_eq!(find("gemini"), Some(npm_gemini), "npm's global prefix from ~/.npmrc");
        assert_eq!(find("opencode"), Some(bun_opencode));
        assert_eq!(find("claude-code"), Some(old_claude), "the adapter's older name is found when only it is installed");
        let newer = program(&h.join(".npm-global/bin"), "claude-agent-acp");
        assert_eq!(find("claude-code"), Some(newer), "the current name wins when both are installed");
        std::fs::write(h.join(".bun/bin/not-executable"), "").unwrap();
        let custom = ExternalAgent::from_choice("not-executable").unwrap();
        assert_eq!(custom.locate_in(&dirs), None, "a file that cannot run is not the agent");
    }
}
