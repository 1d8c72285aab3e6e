//! run_command: a shell in the workspace. It is not a sandbox, which is why it asks first. It
//! runs in its own process group (so cancel and timeout end everything it started), with a
//! timeout, capped output, and no provider keys or other secrets in its environment.

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use tokio::io::AsyncReadExt;
use tokio_util::sync::CancellationToken;

use super::{parse_input, schema_of, Permission, Tool, ToolContext, ToolOutput};

pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
pub const MAX_TIMEOUT: Duration = Duration::from_secs(1800);
/// Output kept: the head and the tail, each this long.
const KEEP: usize = 24 * 1024;

/// Names that carry secrets: never passed to a child process. Matched by the words of the name,
/// so `AWS_SECRET_ACCESS_KEY`, `GITHUB_TOKEN`, `PGPASSWORD`, `OPENAI_API_KEY` and
/// `AWS_ACCESS_KEY_ID` are all caught, and `KEYBOARD_LAYOUT` or `TOKENIZERS_PARALLELISM` are not.
pub fn is_secret_var(name: &str) -> bool {
    let n = name.to_ascii_uppercase();
    if n.starts_with("FINISHLINE_KEY") || ["PASSWORD", "PASSWD", "SECRET"].iter().any(|w| n.contains(w)) {
        return true;
    }
    n.split(['_', '-', '.']).any(|word| {
        matches!(word, "KEY" | "APIKEY" | "SECRET" | "SECRETS" | "TOKEN" | "TOKENS" | "PASSWORD" | "PASSWD" | "PASSPHRASE" | "CREDENTIAL" | "CREDENTIALS")
    })
}

/// Takes every secret-looking variable (and the `extra` names) out of a child's environment:
/// the one rule for every process Finishline starts (commands, MCP servers).
pub fn remove_secrets(cmd: &mut tokio::process::Command, extra: &[String]) {
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy();
        if is_secret_var(&k) || extra.iter().any(|s| s == k.as_ref()) {
            cmd.env_remove(k.as_ref());
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct CommandResult {
    pub exit_code: Option<i32>,
    pub output: String,
    pub timed_out: bool,
    pub cancelled: bool,
}

/// Runs `command` with `sh -c` in `dir`. Extra secret names (a custom key variable) are removed
/// too. Returns when the shell exits, even if it left something running in the background (that
/// is killed with the rest of its process group, and so is what left the group with `setsid`,
/// found by its mark); on a timeout or cancel the output so far is kept. With `processes`, the
/// command's group is recorded while it runs, so a crash of Finishline does not leave it running
/// for good: the next start ends it.
pub async fn run_shell(
    command: &str,
    dir: &std::path::Path,
    timeout: Duration,
    cancel: &CancellationToken,
    extra_secrets: &[String],
    processes: Option<&std::sync::Arc<crate::process_groups::ProcessGroups>>,
) -> std::io::Result<CommandResult> {
    let mut cmd = tokio::process::Command::new("sh");
    cmd.arg("-c").arg(command).current_dir(dir).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0).kill_on_drop(true);
    remove_secrets(&mut cmd, extra_secrets);
    let mark = crate::process_groups::mark(&mut cmd);
    let mut child = cmd.spawn()?;
    let pgid = child.id().map(|p| p as i32);
    let what: String = format!("command {}", command.chars().take(60).collect::<String>());
    let owned = processes.zip(child.id()).map(|(groups, pid)| groups.own(pid, &what, &mark));
    let (out, err) = (Arc::new(Mutex::new(Vec::new())), Arc::new(Mutex::new(Vec::new())));
    let readers = [
        tokio::spawn(read_capped(child.stdout.take().expect("piped"), out.clone())),
        tokio::spawn(read_capped(child.stderr.take().expect("piped"), err.clone())),
    ];
    let kill_group = || {
        if let Some(p) = pgid {
            // The whole group: a shell's children die with it.
            unsafe { libc::kill(-p, libc::SIGKILL) };
        }
    };
    let (mut timed_out, mut cancelled) = (false, false);
    let status = tokio::select! {
        s = child.wait() => Some(s?),
        _ = tokio::time::sleep(timeout) => { timed_out = true; None }
        _ = cancel.cancelled() => { cancelled = true; None }
    };
    if status.is_some() {
        // What the shell wrote just before it exited may still be in the pipes.
        settle(&readers).await;
    }
    // Anything left running (a backgrounded child still holding the pipes) ends here, and
    // anything that left the group: nothing the command started may write into the workspace
    // after the tool has returned, unseen by the agent and, at the end, by the review.
    kill_group();
    // Ending the owned group also ends what carries its mark, and forgets its record.
    let _ = tokio::task::spawn_blocking(move || match owned {
        Some(group) => drop(group),
        None => {
            crate::process_groups::end_marked(&mark);
        }
    })
    .await;
    if status.is_none() {
        let _ = child.wait().await;
    }
    settle(&readers).await;
    readers.iter().for_each(|r| r.abort());
    let output = join_output(&out.lock().unwrap_or_else(|p| p.into_inner()), &err.lock().unwrap_or_else(|p| p.into_inner()));
    Ok(CommandResult { exit_code: status.and_then(|s| s.code()), output, timed_out, cancelled })
}

/// Gives the pipe readers a moment to reach the end of what was written.
async fn settle(readers: &[tokio::task::JoinHandle<()>]) {
    for _ in 0..30 {
        if readers.iter().all(|r| r.is_finished()) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Keeps the first and last KEEP bytes, counting what was dropped. Publishes into `out` after
/// every read, so whatever arrived is there even if the reader is abandoned.
async fn read_capped<R: tokio::io::AsyncRead + Unpin>(mut r: R, out: Arc<Mutex<Vec<u8>>>) {
    let mut head = Vec::new();
    let mut tail: std::collections::VecDeque<u8> = std::collections::VecDeque::new();
    let mut dropped = 0usize;
    let mut buf = [0u8; 8192];
    loop {
        let n = match r.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        for &b in &buf[..n] {
            if head.len() < KEEP {
                head.push(b);
            } else {
                tail.push_back(b);
                if tail.len() > KEEP {
                    tail.pop_front();
                    dropped += 1;
                }
            }
        }
        let mut shown = head.clone();
        if dropped > 0 {
            shown.extend_from_slice(format!("\n[… {dropped} bytes of output omitted …]\n").as_bytes());
        }
        shown.extend(tail.iter());
        *out.lock().unwrap_or_else(|p| p.into_inner()) = shown;
    }
}

fn join_output(stdout: &[u8], stderr: &[u8]) -> String {
    let mut s = String::from_utf8_lossy(stdout).into_owned();
    if !stderr.is_empty() {
        if !s.is_empty() && !s.ends_with('\n') {
            s.push('\n');
        }
        s.push_str(&String::from_utf8_lossy(stderr));
    }
    s
}

#[derive(Deserialize, JsonSchema)]
pub struct RunCommandInput {
    /// A shell command, run with `sh -c` in the workspace.
    pub command: String,
    /// Seconds before it is stopped (default 120).
    #[serde(default)]
    pub timeout_secs: Option<u64>,
}

pub struct RunCommand;

#[async_trait::async_trait]
impl Tool for RunCommand {
    fn name(&self) -> &str {
        "run_command"
    }
    fn description(&self) -> &str {
        "Run a shell command in the workspace and get its exit code and output. Not sandboxed: the person approves it first."
    }
    fn input_schema(&self) -> Value {
        schema_of::<RunCommandInput>()
    }
    fn default_permission(&self) -> Permission {
        Permission::Ask
    }
    async fn call(&self, ctx: &ToolContext, input: Value) -> ToolOutput {
        let input: RunCommandInput = match parse_input(self.name(), input) {
            Ok(i) => i,
            Err(e) => return e,
        };
        if input.command.trim().is_empty() {
            return ToolOutput::error("The command is empty.");
        }
        let timeout = input.timeout_secs.map(Duration::from_secs).unwrap_or(DEFAULT_TIMEOUT).min(MAX_TIMEOUT);
        match run_shell(&input.command, ctx.workspace.root(), timeout, &ctx.cancel, &ctx.hidden_env, ctx.processes.as_ref()).await {
            Err(e) => ToolOutput::error(format!("Could not start the command: {e}")),
            Ok(r) if r.cancelled => ToolOutput::error("The command was cancelled."),
            Ok(r) if r.timed_out => {
                let so_far = if r.output.trim().is_empty() { "(no output)".to_string() } else { r.output };
                ToolOutput::error(format!("The command did not finish within {} s and was stopped. Its output so far:\n{so_far}", timeout.as_secs()))
            }
            Ok(r) => {
                let code = r.exit_code.map(|c| c.to_string()).unwrap_or_else(|| "killed by a signal".into());
                let body = if r.output.trim().is_empty() { "(no output)".to_string() } else { r.output };
                let out = format!("exit code: {code}\n{body}");
                if r.exit_code == Some(0) {
                    ToolOutput::ok(out)
                } else {
                    ToolOutput::error(out)
                }
            }
        }
    }
}
