//! Carrying out a login the agent offered ([`super::login`]): its own login command in a terminal
//! window, or `authenticate`. The front end calls these when the person clicks "Log in", then
//! runs the task again.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::connection::{self, AgentFault, Launch};
use super::login::LoginMethod;
use super::ExternalAgent;

/// The longest a login in a terminal may take (a browser, a code typed by hand).
const TERMINAL_LOGIN_LIMIT: Duration = Duration::from_secs(15 * 60);

/// Terminal programs tried in order, each with how it is told to run a command.
const TERMINALS: &[&[&str]] = &[
    &["x-terminal-emulator", "-e"],
    &["gnome-terminal", "--wait", "--"],
    &["konsole", "-e"],
    &["xfce4-terminal", "-x"],
    &["kitty"],
    &["alacritty", "-e"],
    &["foot"],
    &["wezterm", "start", "--"],
    &["xterm", "-e"],
];

/// How to open a terminal that runs a command: `FINISHLINE_TERMINAL` (a command line the command
/// is appended to, for a person's own terminal or a test), else the first terminal installed.
pub fn terminal_program() -> Option<Vec<String>> {
    if let Some(t) = std::env::var("FINISHLINE_TERMINAL").ok().filter(|t| !t.trim().is_empty()) {
        return Some(t.split_whitespace().map(String::from).collect());
    }
    let path = std::env::var_os("PATH")?;
    TERMINALS.iter().find(|t| std::env::split_paths(&path).any(|d| d.join(t[0]).is_file())).map(|t| t.iter().map(|s| s.to_string()).collect())
}

fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// The script the terminal runs: the agent's environment (never a keychain value: a `${VAR}`
/// stays a reference the shell reads from its own environment), the login command, and its exit
/// status written to `status` for Finishline to read.
pub fn login_script(method: &LoginMethod, agent_env: &BTreeMap<String, String>, status: &Path) -> Option<String> {
    let LoginMethod::Terminal { command, args, env, name, .. } = method else { return None };
    let mut s = String::from("#!/bin/sh\n");
    for (k, v) in agent_env.iter().chain(env.iter()) {
        if !k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') || v == crate::domain::IN_KEYCHAIN {
            continue;
        }
        match v.strip_prefix("${").and_then(|r| r.strip_suffix('}')) {
            Some(var) if var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') => s.push_str(&format!("export {k}=\"${{{var}}}\"\n")),
            _ => s.push_str(&format!("export {k}={}\n", sh_quote(v))),
        }
    }
    s.push_str(&format!("printf '%s\\n\\n' {}\n", sh_quote(&format!("Finishline: {name}"))));
    s.push_str(&std::iter::once(command).chain(args.iter()).map(|a| sh_quote(a)).collect::<Vec<_>>().join(" "));
    s.push_str(&format!("\ncode=$?\necho \"$code\" > {}\n", sh_quote(&status.to_string_lossy())));
    s.push_str("if [ \"$code\" -ne 0 ]; then printf '\\nThe login ended with code %s. Press Enter to close this window. ' \"$code\"; read _; fi\n");
    Some(s)
}

/// Runs a terminal method's command in a terminal window and waits for it: `Ok(true)` when it
/// exited 0. `work`: a private folder for the script and its status (removed after).
pub async fn run_in_terminal(terminal: &[String], method: &LoginMethod, agent_env: &BTreeMap<String, String>, work: &Path) -> Result<bool, String> {
    let dir = work.join(format!("login-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let _cleanup = RemoveOnDrop(dir.clone());
    #[cfg(unix)]
    std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o700)).map_err(|e| e.to_string())?;
    let status = dir.join("status");
    let script = dir.join("login.sh");
    let text = login_script(method, agent_env, &status).ok_or("this way of logging in is not a terminal command")?;
    std::fs::write(&script, text).map_err(|e| e.to_string())?;
    let (program, pre) = terminal.split_first().ok_or("no terminal program")?;
    let mut child = tokio::process::Command::new(program)
        .args(pre)
        .args(["sh", &script.to_string_lossy()])
        .stdin(std::process::Stdio::null())
        .kill_on_drop(false)
        .spawn()
        .map_err(|e| format!("the terminal `{program}` could not be opened: {e}"))?;
    let started = tokio::time::Instant::now();
    loop {
        if let Ok(code) = std::fs::read_to_string(&status) {
            if let Ok(code) = code.trim().parse::<i32>() {
                return Ok(code == 0);
            }
        }
        // A terminal that ran the script itself and is gone without a status never ran it.
        if let Ok(Some(exit)) = child.try_wait() {
            if !status.exists() && started.elapsed() > Duration::from_secs(2) && !exit.success() {
                return Err(format!("the terminal `{program}` closed without running the login ({exit})"));
            }
        }
        if started.elapsed() > TERMINAL_LOGIN_LIMIT {
            return Err("the login did not finish within 15 minutes".into());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Logs in with an agent method: starts the agent, calls `authenticate` with the method, and
/// opens a session to see that the login took. `secrets`: the keychain's values for the agent
/// (a key the method reads from its environment).
pub async fn authenticate(agent: &ExternalAgent, cwd: &Path, method: &str, secrets: &BTreeMap<String, String>, timeout: Duration) -> Result<(), AgentFault> {
    connection::connect(Launch::bare(agent, cwd, timeout, secrets, Some(method.to_string()))).await.map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_login_script_runs_the_agents_command_with_its_environment_and_never_a_keychain_value() {
        let method = LoginMethod::Terminal {
            id: "console".into(),
            name: "Anthropic Console".into(),
            description: None,
            command: "/opt/claude-agent-acp".into(),
            args: vec!["--cli".into(), "auth".into(), "login".into()],
            env: BTreeMap::new(),
        };
        let env = BTreeMap::from([
            ("HOME".to_string(), "/home/a b".to_string()),
            ("KEY".to_string(), "${ANTHROPIC_API_KEY}".to_string()),
            ("SECRET".to_string(), crate::domain::IN_KEYCHAIN.to_string()),
        ]);
        let s = login_script(&method, &env, Path::new("/tmp/x/status")).unwrap();
        assert!(s.contains("export HOME='/home/a b'\n"), "{s}");
        assert!(s.contains("export KEY=\"${ANTHROPIC_API_KEY}\"\n"), "a reference stays a reference: {s}");
        assert!(!s.contains("SECRET"), "a keychain value never lands in the script: {s}");
        assert!(s.contains("'/opt/claude-agent-acp' '--cli' 'auth' 'login'\ncode=$?\necho \"$code\" > '/tmp/x/status'"), "{s}");
    }
}
