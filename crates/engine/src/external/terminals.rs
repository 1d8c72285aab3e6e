//! The client's terminal, offered to an external agent (`terminal/*`): a command the agent runs
//! this way goes through Finishline's permission gate first (as `run_command` does), runs in the
//! workspace without secrets in its environment, and keeps only the newest output up to the
//! agent's limit. Every terminal still running when the agent's connection ends is killed.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use tokio::io::AsyncReadExt;
use tokio::sync::watch;

use crate::process_groups::{OwnedGroup, ProcessGroups};

/// How a terminal's command ended: its exit code, or the signal that ended it.
pub type ExitStatus = (Option<u32>, Option<String>);

/// The most output kept when the agent sets no limit.
const DEFAULT_LIMIT: usize = 1024 * 1024;

/// How long the output pipes are read after the command exits before its end is reported: what
/// is left in them then is read in a moment, unless something else still writes there.
const DRAIN: std::time::Duration = std::time::Duration::from_millis(250);

struct Term {
    output: Mutex<(String, bool)>,
    limit: usize,
    exit: watch::Receiver<Option<ExitStatus>>,
    group: Option<OwnedGroup>,
    /// The output readers: a process that left the group (`setsid`) may hold the pipes open
    /// for good, so they are stopped when the terminal is released.
    readers: Mutex<Vec<tokio::task::AbortHandle>>,
}

pub struct Terminals {
    root: PathBuf,
    hidden: Vec<String>,
    terms: Mutex<HashMap<String, Arc<Term>>>,
    processes: Arc<ProcessGroups>,
}

impl Drop for Terminals {
    fn drop(&mut self) {
        // Each command's output readers hold its terminal until its pipes close, which they do
        // only once its group is ended: end them here rather than wait for the last holder.
        self.end_all();
    }
}

fn kill_group(t: &Term) {
    if let Some(g) = &t.group {
        g.end();
    }
}

/// Adds what a read brought to `carry` (the end of a character cut by the read before), and
/// keeps the output with the characters it completes: a character cut between two reads would
/// otherwise show as two replacement marks.
fn push_output(t: &Term, carry: &mut Vec<u8>, chunk: &[u8]) {
    carry.extend_from_slice(chunk);
    let whole = match std::str::from_utf8(carry) {
        Ok(_) => carry.len(),
        // Cut at the end: the rest of it comes with the next read.
        Err(e) if e.error_len().is_none() => e.valid_up_to(),
        Err(_) => carry.len(),
    };
    let text = String::from_utf8_lossy(&carry[..whole]).into_owned();
    carry.drain(..whole);
    keep(t, &text);
}

/// Adds `text` to the output, keeping the newest within the limit.
fn keep(t: &Term, text: &str) {
    let mut o = t.output.lock().unwrap();
    o.0.push_str(text);
    if o.0.len() > t.limit {
        // Keep the newest output, cut at a character boundary, as ACP asks.
        let cut = o.0.len() - t.limit;
        let cut = (cut..o.0.len()).find(|i| o.0.is_char_boundary(*i)).unwrap_or(o.0.len());
        o.0.drain(..cut);
        o.1 = true;
    }
}

impl Terminals {
    /// Terminals for an agent working in `root`; `hidden`: variables never passed on (beside
    /// every secret-looking name).
    pub fn new(root: &Path, hidden: &[String], processes: Arc<ProcessGroups>) -> Terminals {
        Terminals { root: root.to_path_buf(), hidden: hidden.to_vec(), terms: Mutex::new(HashMap::new()), processes }
    }

    /// Ends every command still running (the agent is going).
    pub fn end_all(&self) {
        for t in self.terms.lock().unwrap_or_else(|p| p.into_inner()).values() {
            kill_group(t);
        }
    }

    /// The folder a command runs in: the workspace, or a folder inside it.
    fn cwd(&self, cwd: Option<&Path>) -> Result<PathBuf, String> {
        let Some(c) = cwd else { return Ok(self.root.clone()) };
        let joined = if c.is_absolute() { c.to_path_buf() } else { self.root.join(c) };
        let real = joined.canonicalize().map_err(|e| format!("{}: {e}", c.display()))?;
        let root = self.root.canonicalize().map_err(|e| e.to_string())?;
        if !real.starts_with(&root) {
            return Err(format!("{} is outside the workspace; commands run inside it", c.display()));
        }
        Ok(real)
    }

    /// Of the variables an agent asks a command to get, those it is given: never a secret's.
    pub fn passed_env(&self, env: &[(String, String)]) -> Vec<(String, String)> {
        env.iter().filter(|(k, _)| !crate::tool::command::is_secret_var(k) && !self.hidden.contains(k)).cloned().collect()
    }

    /// Starts `command args` and returns the terminal's id.
    pub fn create(&self, command: &str, args: &[String], env: &[(String, String)], cwd: Option<&Path>, limit: Option<u64>) -> Result<String, String> {
        let dir = self.cwd(cwd)?;
        let mut cmd = tokio::process::Command::new(command);
        cmd.args(args).current_dir(&dir).env("PWD", &dir).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
        crate::tool::command::remove_secrets(&mut cmd, &self.hidden);
        cmd.envs(self.passed_env(env));
        #[cfg(unix)]
        cmd.process_group(0);
        let mark = crate::process_groups::mark(&mut cmd);
        let mut child = cmd.spawn().map_err(|e| format!("{command} could not be started: {e}"))?;
        let (tx, rx) = watch::channel(None);
        let term = Arc::new(Term {
            output: Mutex::new((String::new(), false)),
            limit: limit.map(|l| l as usize).unwrap_or(DEFAULT_LIMIT),
            exit: rx,
            group: child.id().map(|pid| self.processes.own(pid, &format!("terminal command {command}"), &mark)),
            readers: Mutex::new(vec![]),
        });
        let id = format!("term-{}", uuid::Uuid::new_v4().simple());
        let readers: Vec<_> = [
            child.stdout.take().map(|s| Box::new(s) as Box<dyn tokio::io::AsyncRead + Send + Unpin>),
            child.stderr.take().map(|s| Box::new(s) as Box<dyn tokio::io::AsyncRead + Send + Unpin>),
        ]
        .into_iter()
        .flatten()
        .map(|mut r| {
            let t = term.clone();
            tokio::spawn(async move {
                let mut buf = [0u8; 8192];
                let mut carry = Vec::new();
                while let Ok(n) = r.read(&mut buf).await {
                    if n == 0 {
                        break;
                    }
                    push_output(&t, &mut carry, &buf[..n]);
                }
                // A character left cut at the end stays cut: shown as what it is.
                if !carry.is_empty() {
                    keep(&t, &String::from_utf8_lossy(&carry));
                }
            })
        })
        .collect();
        *term.readers.lock().unwrap() = readers.iter().map(|r| r.abort_handle()).collect();
        tokio::spawn(async move {
            let status = child.wait().await;
            // What it wrote before it exited is read first. A process it left running in the
            // background (`server &`) holds the pipes open for as long as it lives: the command
            // has still ended, and the readers go on keeping what that process writes later.
            let drained = tokio::time::Instant::now() + DRAIN;
            for r in readers {
                let _ = tokio::time::timeout_at(drained, r).await;
            }
            let exit = match status {
                Ok(s) => {
                    use std::os::unix::process::ExitStatusExt;
                    (s.code().map(|c| c as u32), s.signal().map(signal_name))
                }
                Err(e) => (None, Some(format!("unknown ({e})"))),
            };
            let _ = tx.send(Some(exit));
        });
        self.terms.lock().unwrap().insert(id.clone(), term);
        Ok(id)
    }

    fn term(&self, id: &str) -> Result<Arc<Term>, String> {
        self.terms.lock().unwrap().get(id).cloned().ok_or_else(|| format!("no terminal {id}"))
    }

    /// The output so far, whether older output was dropped, and how it ended if it has.
    pub fn output(&self, id: &str) -> Result<(String, bool, Option<ExitStatus>), String> {
        let t = self.term(id)?;
        let (out, truncated) = t.output.lock().unwrap().clone();
        let exit = t.exit.borrow().clone();
        Ok((out, truncated, exit))
    }

    pub async fn wait(&self, id: &str) -> Result<ExitStatus, String> {
        let mut rx = self.term(id)?.exit.clone();
        let status = rx.wait_for(|e| e.is_some()).await.map_err(|_| "the terminal is gone".to_string())?.clone();
        Ok(status.unwrap_or((None, None)))
    }

    pub fn kill(&self, id: &str) -> Result<(), String> {
        kill_group(&*self.term(id)?);
        Ok(())
    }

    /// Kills the command if it still runs and forgets the terminal.
    pub fn release(&self, id: &str) -> Result<(), String> {
        let t = self.terms.lock().unwrap().remove(id).ok_or_else(|| format!("no terminal {id}"))?;
        kill_group(&t);
        for r in t.readers.lock().unwrap_or_else(|p| p.into_inner()).iter() {
            r.abort();
        }
        Ok(())
    }
}

fn signal_name(sig: i32) -> String {
    match sig {
        libc::SIGKILL => "SIGKILL".into(),
        libc::SIGTERM => "SIGTERM".into(),
        libc::SIGINT => "SIGINT".into(),
        other => format!("signal {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_command_runs_in_the_workspace_without_secrets_and_keeps_its_newest_output() {
        let dir = tempfile::tempdir().unwrap();
        std::env::set_var("FINISHLINE_TERM_TEST_API_KEY", "sk-secret");
        let terms = Terminals::new(dir.path(), &[], ProcessGroups::unrecorded());
        let id = terms
            .create(
                "sh",
                &["-c".into(), "pwd; echo key=${FINISHLINE_TERM_TEST_API_KEY:-none}; echo $GREETING".into()],
                &[("GREETING".into(), "hello".into())],
                None,
                None,
            )
            .unwrap();
        assert_eq!(terms.wait(&id).await.unwrap(), (Some(0), None));
        let (out, truncated, exit) = terms.output(&id).unwrap();
        assert!(
            out.contains(&dir.path().canonicalize().unwrap().display().to_string()) || out.contains(&dir.path().display().to_string()),
            "it runs in the workspace: {out}"
        );
        assert!(out.contains("key=none"), "a secret-looking variable never reaches the command: {out}");
        assert!(out.contains("hello"), "the agent's own variables do: {out}");
        assert!(!truncated && exit == Some((Some(0), None)));

        let id = terms.create("sh", &["-c".into(), "for i in $(seq 1 200); do echo line$i; done".into()], &[], None, Some(20)).unwrap();
        terms.wait(&id).await.unwrap();
        let (out, truncated, _) = terms.output(&id).unwrap();
        assert!(truncated && out.len() <= 20 && out.ends_with("line200\n"), "only the newest output within the limit is kept: {out:?}");
    }

    #[tokio::test]
    async fn a_command_outside_the_workspace_is_refused_and_kill_stops_a_long_one() {
        let dir = tempfile::tempdir().unwrap();
        let terms = Terminals::new(dir.path(), &[], ProcessGroups::unrecorded());
        assert!(terms.create("true", &[], &[], Some(Path::new("/")), None).unwrap_err().contains("outside the workspace"));
        let id = terms.create("sleep", &["30".into()], &[], None, None).unwrap();
        terms.kill(&id).unwrap();
        let status = tokio::time::timeout(std::time::Duration::from_secs(5), terms.wait(&id)).await.expect("kill ends it").unwrap();
        assert_eq!(status, (None, Some("SIGKILL".into())));
        terms.release(&id).unwrap();
        assert!(terms.output(&id).is_err(), "a released terminal is gone");
    }

    /// A command that starts a server in the background and exits (`server & echo started`):
    /// the background process still holds the output pipes, yet the agent learns at once that
    /// the command ended, with what it wrote, and output written later is still kept.
    #[tokio::test]
    async fn a_command_that_leaves_a_background_process_is_reported_ended_when_it_exits() {
        let dir = tempfile::tempdir().unwrap();
        let terms = Terminals::new(dir.path(), &[], ProcessGroups::unrecorded());
        let id = terms.create("sh", &["-c".into(), "(sleep 1; echo later; sleep 30) & echo started".into()], &[], None, None).unwrap();
        let status = tokio::time::timeout(std::time::Duration::from_secs(5), terms.wait(&id))
            .await
            .expect("its exit is reported while the background process runs")
            .unwrap();
        assert_eq!(status, (Some(0), None));
        let (out, _, exit) = terms.output(&id).unwrap();
        assert_eq!((out.as_str(), exit), ("started\n", Some((Some(0), None))), "what it wrote before it exited is there");
        tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
        assert_eq!(terms.output(&id).unwrap().0, "started\nlater\n", "what the background process writes afterwards is kept too");
        terms.release(&id).unwrap();
    }

    /// A character cut between two reads of the pipe is kept whole, not as two replacement marks.
    #[test]
    fn a_character_cut_between_two_reads_is_kept_whole() {
        let (_, rx) = watch::channel(None);
        let t = Term { output: Mutex::new((String::new(), false)), limit: DEFAULT_LIMIT, exit: rx, group: None, readers: Mutex::new(vec![]) };
        let mut carry = Vec::new();
        let bytes = "héllo ✓".as_bytes();
        for chunk in bytes.chunks(1) {
            push_output(&t, &mut carry, chunk);
        }
        assert_eq!(t.output.lock().unwrap().0, "héllo ✓");
        assert!(carry.is_empty());
    }
}
