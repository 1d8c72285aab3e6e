//! The `finishline` binary as the tests run it: a private data folder, no key, no terminal; its
//! JSON lines parsed; a fresh workspace.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_finishline")
}

/// `finishline ARGS --data-dir DATA`, with no key from the environment and no stdin, found on
/// PATH as an installed one is (the commands it suggests then read `finishline …`).
pub fn command(args: &[&str], data: &Path) -> Command {
    let mut c = Command::new(bin());
    with_ctrl_c(&mut c);
    let dir = Path::new(bin()).parent().unwrap().to_path_buf();
    let path = std::env::join_paths(std::iter::once(dir).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()))).unwrap();
    c.args(args).arg("--data-dir").arg(data).env_remove("OPENAI_API_KEY").env("XDG_DATA_HOME", data.join("xdg")).env("PATH", path).stdin(Stdio::null());
    c
}

/// Ctrl-C as a terminal delivers it: a test run started in the background of a script (`cmd &`)
/// inherits SIGINT ignored, and finishline keeps a signal it was started ignoring ignored, as
/// `nohup` asks; a test that presses Ctrl-C means a person's terminal.
pub fn with_ctrl_c(cmd: &mut Command) -> &mut Command {
    use std::os::unix::process::CommandExt;
    // SAFETY: signal() is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            Ok(())
        });
    }
    cmd
}

pub fn finishline(args: &[&str], data: &Path) -> Output {
    command(args, data).output().unwrap()
}

/// `finishline` started as [`finishline`] starts it, not waited for, its output piped: for a test
/// that stops it (a signal, a closed pipe) while it works.
pub fn spawn_finishline(args: &[&str], data: &Path) -> std::process::Child {
    command(args, data).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()
}

/// `finishline` started as a person starts it in a terminal: its input a terminal (through
/// `script`, from util-linux, which Debian always has), so it asks its questions there. What it
/// prints, the terminal's echo and all, comes out of the child's stdout; what the test writes to
/// its stdin is typed.
pub fn in_a_terminal(args: &[&str], data: &Path) -> std::process::Child {
    terminal(args, data, None).spawn().unwrap()
}

/// [`in_a_terminal`], not started yet; given `within` seconds, finishline is stopped then and the
/// terminal ends with 124, as `timeout` ends (kept in the foreground, so it still reads the
/// terminal).
pub fn terminal(args: &[&str], data: &Path, within: Option<u64>) -> Command {
    let quote = |a: &str| format!("'{}'", a.replace('\'', "'\\''"));
    let inner = command(args, data);
    let limit = within.map(|s| vec!["timeout".to_string(), "--foreground".to_string(), s.to_string()]).unwrap_or_default();
    let line: Vec<String> = limit
        .into_iter()
        .chain(std::iter::once(bin().to_string()))
        .chain(inner.get_args().map(|a| a.to_string_lossy().into_owned()))
        .map(|a| quote(&a))
        .collect();
    let mut c = Command::new("script");
    with_ctrl_c(&mut c);
    for (k, v) in inner.get_envs() {
        match v {
            Some(v) => c.env(k, v),
            None => c.env_remove(k),
        };
    }
    c.args(["-qfec", &line.join(" "), "/dev/null"]).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    c
}

/// The child's exit, if it comes within `secs`; otherwise it is killed and `None` returned.
pub fn exits_within(child: &mut std::process::Child, secs: u64) -> Option<std::process::ExitStatus> {
    let end = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    loop {
        match child.try_wait().unwrap() {
            Some(status) => return Some(status),
            None if std::time::Instant::now() > end => {
                let _ = child.kill();
                return None;
            }
            None => std::thread::sleep(std::time::Duration::from_millis(100)),
        }
    }
}

/// Collects what a child prints into a buffer a test can look at while it runs.
pub fn collect(from: impl std::io::Read + Send + 'static) -> std::sync::Arc<std::sync::Mutex<String>> {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let into = seen.clone();
    std::thread::spawn(move || {
        let mut from = from;
        let mut buf = [0u8; 4096];
        while let Ok(n) = std::io::Read::read(&mut from, &mut buf) {
            if n == 0 {
                break;
            }
            into.lock().unwrap().push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    seen
}

/// Waits (at most `secs`) until `what` holds of the text collected so far.
pub fn until_seen(seen: &std::sync::Mutex<String>, secs: u64, what: impl Fn(&str) -> bool) -> bool {
    let end = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while std::time::Instant::now() < end {
        if what(&seen.lock().unwrap()) {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    what(&seen.lock().unwrap())
}

pub fn lines(o: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

pub struct Env {
    pub _dir: tempfile::TempDir,
    pub data: PathBuf,
    pub ws: PathBuf,
}

pub fn env() -> Env {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    Env { _dir: dir, data, ws }
}

/// Runs git in `dir`, failing the test with git's own words when it fails; its output trimmed.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git").arg("-C").arg(dir).args(args).output().unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A repository on `main` whose one commit holds a README and `files`, with the person's own
/// uncommitted edit to the README: what every run must leave as it found it.
pub fn person_repo(dir: &Path, files: &[(&str, &str)]) -> PathBuf {
    let r = dir.join("repo");
    std::fs::create_dir_all(&r).unwrap();
    git(&r, &["init", "-q", "-b", "main"]);
    git(&r, &["config", "user.name", "Person"]);
    git(&r, &["config", "user.email", "person@example.com"]);
    std::fs::write(r.join("README.md"), "hello\n").unwrap();
    for (path, content) in files {
        std::fs::write(r.join(path), content).unwrap();
    }
    git(&r, &["add", "."]);
    git(&r, &["commit", "-q", "-m", "init"]);
    std::fs::write(r.join("README.md"), "hello\nmy own edit, not committed\n").unwrap();
    r
}
