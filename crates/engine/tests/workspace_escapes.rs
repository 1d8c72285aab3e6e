//! Every file tool against a corpus of escape attempts. None may read, list, write or edit
//! anything outside the workspace.

use std::os::unix::fs::FileTypeExt;
use std::path::Path;

use finishline_engine::tool::{ToolContext, Toolbox, Workspace};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

struct World {
    _root: tempfile::TempDir,
    ws: std::path::PathBuf,
    outside: std::path::PathBuf,
}

const SECRET: &str = "TOP-SECRET-OUTSIDE";

fn world() -> World {
    let root = tempfile::tempdir().unwrap();
    let ws = root.path().join("ws");
    let outside = root.path().join("outside");
    std::fs::create_dir_all(ws.join("sub")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.txt"), SECRET).unwrap();
    std::fs::write(ws.join("inside.txt"), "inside").unwrap();
    std::os::unix::fs::symlink(outside.join("secret.txt"), ws.join("link.txt")).unwrap();
    std::os::unix::fs::symlink(&outside, ws.join("linkdir")).unwrap();
    std::fs::hard_link(outside.join("secret.txt"), ws.join("hard.txt")).unwrap();
    std::os::unix::fs::symlink(ws.join("inside.txt"), ws.join("inner-link.txt")).unwrap();
    World { _root: root, ws, outside }
}

async fn call(w: &World, tool: &str, input: Value) -> (String, bool) {
    let tb = Toolbox::standard();
    let ctx = ToolContext::new(Workspace::new(&w.ws).unwrap(), CancellationToken::new());
    let out = tb.get(tool).unwrap().call(&ctx, input).await;
    (out.content, out.is_error)
}

fn attacks(w: &World) -> Vec<(&'static str, String)> {
    vec![
        ("parent", "../outside/secret.txt".into()),
        ("deep parent", "sub/../../outside/secret.txt".into()),
        ("many parents", "../../../../../../etc/passwd".into()),
        ("absolute outside", w.outside.join("secret.txt").to_string_lossy().into_owned()),
        ("absolute system", "/etc/passwd".into()),
        ("home tilde", "~/.bashrc".into()),
        ("tilde alone", "~".into()),
        ("windows drive", "C:\\Windows\\win.ini".into()),
        ("windows parent", "..\\outside\\secret.txt".into()),
        ("unc path", "\\\\server\\share\\x".into()),
        ("nul byte", "inside.txt\0../../outside/secret.txt".into()),
        ("symlink to outside file", "link.txt".into()),
        ("through symlinked folder", "linkdir/secret.txt".into()),
        ("hard link to outside file", "hard.txt".into()),
        ("dot-dot after symlink", "linkdir/../../outside/secret.txt".into()),
    ]
}

fn secret_intact(w: &World) {
    assert_eq!(std::fs::read_to_string(w.outside.join("secret.txt")).unwrap(), SECRET, "the outside file must never change");
    assert!(!w.outside.join("new.txt").exists(), "nothing may be created outside");
}

#[tokio::test]
async fn read_file_refuses_every_escape() {
    let w = world();
    let mut n = 0;
    for (name, path) in attacks(&w) {
        let (out, err) = call(&w, "read_file", json!({"path": path})).await;
        assert!(err, "read_file `{name}` must fail, got: {out}");
        assert!(!out.contains(SECRET), "read_file `{name}` leaked the secret");
        n += 1;
    }
    let (out, err) = call(&w, "read_file", json!({"path": "inner-link.txt"})).await;
    assert!(!err && out == "inside", "a symlink that stays inside still works: {out}");
    println!("read_file: {n} escape attempts refused");
}

#[tokio::test]
async fn write_file_refuses_every_escape() {
    let w = world();
    for (name, path) in attacks(&w) {
        let (out, err) = call(&w, "write_file", json!({"path": path, "content": "pwned"})).await;
        assert!(err, "write_file `{name}` must fail, got: {out}");
        secret_intact(&w);
    }
    let (out, err) = call(&w, "write_file", json!({"path": "../outside/new.txt", "content": "x"})).await;
    assert!(err, "{out}");
    secret_intact(&w);
    let (_, err) = call(&w, "write_file", json!({"path": "sub/deeper/ok.txt", "content": "fine"})).await;
    assert!(!err, "writing inside, creating folders, works");
    assert_eq!(std::fs::read_to_string(w.ws.join("sub/deeper/ok.txt")).unwrap(), "fine");
}

#[tokio::test]
async fn edit_file_refuses_every_escape() {
    let w = world();
    for (name, path) in attacks(&w) {
        let (out, err) = call(&w, "edit_file", json!({"path": path, "old_text": "TOP", "new_text": "pwned"})).await;
        assert!(err, "edit_file `{name}` must fail, got: {out}");
        secret_intact(&w);
    }
}

#[tokio::test]
async fn list_dir_refuses_every_escape() {
    let w = world();
    for (name, path) in [
        ("parent", "..".to_string()),
        ("absolute", "/".to_string()),
        ("symlinked folder", "linkdir".to_string()),
        ("tilde", "~".to_string()),
        ("outside abs", w.outside.to_string_lossy().into_owned()),
    ] {
        let (out, err) = call(&w, "list_dir", json!({"path": path})).await;
        assert!(err, "list_dir `{name}` must fail, got: {out}");
        assert!(!out.contains("secret.txt"), "list_dir `{name}` listed the outside folder");
    }
}

#[tokio::test]
async fn glob_and_grep_never_leave_the_workspace() {
    let w = world();
    let (out, err) = call(&w, "glob", json!({"pattern": "../**/*.txt"})).await;
    assert!(err, "{out}");
    let (out, _) = call(&w, "glob", json!({"pattern": "**/*.txt"})).await;
    assert!(!out.contains("secret.txt"), "glob must not follow a symlinked folder out: {out}");
    let (out, _) = call(&w, "grep", json!({"pattern": "TOP-SECRET"})).await;
    assert!(!out.contains("linkdir"), "grep must not search through a symlink out: {out}");
}

#[tokio::test]
async fn a_symlink_swapped_between_check_and_use_is_caught() {
    let w = world();
    let target = w.ws.join("swap.txt");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let swapper = {
        let (target, outside, stop) = (target.clone(), w.outside.join("secret.txt"), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let _ = std::fs::remove_file(&target);
                let _ = std::fs::write(&target, "harmless");
                let _ = std::fs::remove_file(&target);
                let _ = std::os::unix::fs::symlink(&outside, &target);
            }
        })
    };
    let mut leaks = 0;
    let mut writes_out = 0;
    for i in 0..400 {
        let (out, _) = call(&w, "read_file", json!({"path": "swap.txt"})).await;
        if out.contains(SECRET) {
            leaks += 1;
        }
        let _ = call(&w, "write_file", json!({"path": "swap.txt", "content": format!("write {i}")})).await;
        if std::fs::read_to_string(w.outside.join("secret.txt")).unwrap() != SECRET {
            writes_out += 1;
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    swapper.join().unwrap();
    assert_eq!(leaks, 0, "a swapped link must never let a read out");
    assert_eq!(writes_out, 0, "a swapped link must never let a write out");
}

/// Everything under `dir`, as paths relative to it.
fn entries(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        out.push(p.strip_prefix(dir).unwrap().to_string_lossy().into_owned());
        if p.is_dir() && !p.symlink_metadata().unwrap().file_type().is_symlink() {
            out.extend(entries(&p).into_iter().map(|c| format!("{}/{c}", e.file_name().to_string_lossy())));
        }
    }
    out
}

#[tokio::test]
async fn a_folder_swapped_for_a_link_while_files_are_created_never_creates_anything_outside() {
    let w = world();
    let dir = w.ws.join("swapdir");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let swapper = {
        let (dir, outside, stop) = (dir.clone(), w.outside.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut swaps = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let _ = std::fs::remove_dir_all(&dir);
                let _ = std::fs::create_dir(&dir);
                let _ = std::fs::remove_dir_all(&dir).or_else(|_| std::fs::remove_file(&dir));
                let _ = std::os::unix::fs::symlink(&outside, &dir);
                std::thread::yield_now();
                let _ = std::fs::remove_file(&dir);
                swaps += 1;
            }
            swaps
        })
    };
    let rounds = 500;
    let mut written = 0;
    for i in 0..rounds {
        let (_, err) = call(&w, "write_file", json!({"path": format!("swapdir/deeper/new-{i}.txt"), "content": "x"})).await;
        written += (!err) as usize;
        let (_, _) = call(&w, "write_file", json!({"path": format!("swapdir/new-{i}.txt"), "content": "x"})).await;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    let outside = entries(&w.outside);
    println!("{rounds} rounds, {swaps} swaps, {written} nested writes went in");
    assert_eq!(
        outside,
        vec!["secret.txt".to_string()],
        "no file or folder may be created outside, whatever the timing ({rounds} rounds, {swaps} swaps, {written} writes went in)"
    );
    secret_intact(&w);
}

#[tokio::test]
async fn binary_and_non_utf8_files_are_reported_clearly() {
    let w = world();
    std::fs::write(w.ws.join("bin.dat"), [0u8, 1, 2, 3, 255, 0, 7]).unwrap();
    let (out, err) = call(&w, "read_file", json!({"path": "bin.dat"})).await;
    assert!(err && out.contains("binary"), "{out}");
    std::fs::write(w.ws.join("latin1.txt"), b"caf\xe9 cr\xe8me").unwrap();
    let (out, err) = call(&w, "read_file", json!({"path": "latin1.txt"})).await;
    assert!(!err && out.contains("not valid UTF-8") && out.contains("caf"), "{out}");
    let big = "x".repeat(400 * 1024);
    std::fs::write(w.ws.join("big.txt"), &big).unwrap();
    let (out, err) = call(&w, "read_file", json!({"path": "big.txt"})).await;
    assert!(!err && out.contains("only the first") && out.len() < 300 * 1024, "a big file is capped and says so");
}

#[tokio::test]
async fn run_command_keeps_secrets_out_of_the_child_environment() {
    let w = world();
    std::env::set_var("OPENAI_API_KEY", "sk-should-not-leak");
    std::env::set_var("SOME_SERVICE_TOKEN", "tok-should-not-leak");
    let ctx = ToolContext::new(Workspace::new(&w.ws).unwrap(), CancellationToken::new());
    let out = Toolbox::standard().get("run_command").unwrap().call(&ctx, json!({"command": "env"})).await;
    assert!(!out.is_error, "{}", out.content);
    assert!(out.content.contains("PATH="), "the command runs with an environment");
    assert!(!out.content.contains("sk-should-not-leak") && !out.content.contains("tok-should-not-leak"), "no key reaches a child process");
    assert_eq!(Toolbox::standard().default_permission("run_command"), finishline_engine::tool::Permission::Ask, "the shell is not sandboxed, so it asks first");
}

#[tokio::test]
async fn run_command_caps_output_and_times_out() {
    let w = world();
    let ctx = ToolContext::new(Workspace::new(&w.ws).unwrap(), CancellationToken::new());
    let rc = Toolbox::standard();
    let out = rc.get("run_command").unwrap().call(&ctx, json!({"command": "head -c 3000000 /dev/zero | tr '\\0' 'y'"})).await;
    assert!(out.content.len() < 100_000 && out.content.contains("omitted"), "megabytes of output are capped: {} bytes", out.content.len());
    let out = rc.get("run_command").unwrap().call(&ctx, json!({"command": "sleep 5", "timeout_secs": 1})).await;
    assert!(out.is_error && out.content.contains("did not finish"), "{}", out.content);
    let out = rc.get("run_command").unwrap().call(&ctx, json!({"command": 42})).await;
    assert!(out.is_error && out.content.contains("Invalid arguments"), "wrong argument types go back to the model: {}", out.content);
    let _ = Path::new("");
}

#[tokio::test]
async fn links_that_stay_inside_still_work_for_reads_writes_and_new_files() {
    let w = world();
    std::os::unix::fs::symlink("sub", w.ws.join("rel-sub")).unwrap();
    std::os::unix::fs::symlink(w.ws.join("sub"), w.ws.join("abs-sub")).unwrap();
    let (_, err) = call(&w, "write_file", json!({"path": "inner-link.txt", "content": "through an absolute link inside"})).await;
    assert!(!err, "a link with an absolute target inside the workspace is followed");
    assert_eq!(std::fs::read_to_string(w.ws.join("inside.txt")).unwrap(), "through an absolute link inside");
    let (out, err) = call(&w, "write_file", json!({"path": "rel-sub/a/b.txt", "content": "x"})).await;
    assert!(!err, "new folders under a relative link to an inside folder: {out}");
    assert!(w.ws.join("sub/a/b.txt").exists());
    let (out, err) = call(&w, "write_file", json!({"path": "abs-sub/c.txt", "content": "y"})).await;
    assert!(!err, "a new file under an absolute link to an inside folder: {out}");
    assert!(w.ws.join("sub/c.txt").exists());
    secret_intact(&w);
}

/// Git runs what its own folder says (`core.fsmonitor`, hooks) the next time Finishline asks it
/// anything, so a file tool that could write there would run the agent's commands without the
/// command permission. Files beside it (`.gitignore`, `.github/`) are the project's, and stay
/// writable.
#[tokio::test]
async fn the_file_tools_never_write_into_gits_own_folder() {
    let w = world();
    let git = |args: &[&str]| assert!(std::process::Command::new("git").arg("-C").arg(&w.ws).args(args).output().unwrap().status.success());
    git(&["init", "-q"]);
    std::fs::create_dir_all(w.ws.join("vendor/lib/.git")).unwrap();
    // Links a repository may hold, to its own folder and into it.
    std::os::unix::fs::symlink(".git", w.ws.join("gitlink")).unwrap();
    std::os::unix::fs::symlink(".git/config", w.ws.join("cfg")).unwrap();
    let config = std::fs::read(w.ws.join(".git/config")).unwrap();
    let planted = "[core]\n\tfsmonitor = \"touch ran\"\n";
    for path in [
        ".git/config",
        ".git/hooks/pre-commit",
        "./.git/config",
        "sub/../.git/config",
        ".GIT/config",
        "vendor/lib/.git/config",
        ".git",
        "gitlink/config",
        "gitlink/hooks/pre-commit",
        "cfg",
    ] {
        let (out, err) = call(&w, "write_file", json!({"path": path, "content": planted})).await;
        assert!(err && out.contains("git's own folder"), "write_file `{path}` must be refused, saying why: {out}");
    }
    let (out, err) = call(&w, "edit_file", json!({"path": ".git/config", "old_text": "[core]", "new_text": planted})).await;
    assert!(err && out.contains("git's own folder"), "edit_file into .git must be refused: {out}");
    assert_eq!(std::fs::read(w.ws.join(".git/config")).unwrap(), config, "git's config is as it was");
    assert!(!w.ws.join(".git/hooks/pre-commit").exists(), "no hook was planted");
    assert!(!w.ws.join("vendor/lib/.git/config").exists(), "nor in a nested repository's folder");
    git(&["status", "--short"]);
    assert!(!w.ws.join("ran").exists(), "git ran nothing of the agent's");
    for path in [".gitignore", ".github/workflows/ci.yml", "docs/.gitkeep"] {
        let (out, err) = call(&w, "write_file", json!({"path": path, "content": "x\n"})).await;
        assert!(!err, "the project's own `{path}` is writable: {out}");
    }
}

/// Copying what a task wrote that `.gitignore` hides into the person's checkout, at their word:
/// nothing there is overwritten, nothing outside it is written, and what is not copied is named.
#[test]
fn copying_what_gitignore_hides_writes_nothing_outside_the_checkout_and_overwrites_nothing() {
    use finishline_engine::workspace::worktree::{copy_ignored_out, TaskWorktree};
    let root = tempfile::tempdir().unwrap();
    let (wt_dir, repo, outside) = (root.path().join("wt"), root.path().join("repo"), root.path().join("outside"));
    for d in [wt_dir.join("build"), wt_dir.join("cfg"), wt_dir.join("dist"), repo.join("build"), outside.clone()] {
        std::fs::create_dir_all(d).unwrap();
    }
    // What the task wrote in its worktree.
    std::fs::write(wt_dir.join(".env"), "TOKEN=task").unwrap();
    std::fs::write(wt_dir.join("build/out.txt"), "built").unwrap();
    std::fs::write(wt_dir.join("build/keep.txt"), "the task's").unwrap();
    std::os::unix::fs::symlink("out.txt", wt_dir.join("build/ok-link")).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", wt_dir.join("build/abs-link")).unwrap();
    std::os::unix::fs::symlink("../../outside", wt_dir.join("build/up-link")).unwrap();
    assert!(std::process::Command::new("mkfifo").arg(wt_dir.join("build/pipe")).status().unwrap().success());
    let _socket = std::os::unix::net::UnixListener::bind(wt_dir.join("build/sock")).unwrap();
    std::fs::write(wt_dir.join("cfg/local.env"), "the task's").unwrap();
    std::fs::write(wt_dir.join("dist/app.js"), "bundle").unwrap();
    // The person's checkout: their own file, a folder that is a link out, a file where a folder goes.
    std::fs::write(repo.join("build/keep.txt"), "the person's").unwrap();
    std::os::unix::fs::symlink(&outside, repo.join("cfg")).unwrap();
    std::fs::write(repo.join("dist"), "the person's").unwrap();
    let wt = TaskWorktree {
        repo: repo.to_string_lossy().into_owned(),
        folder: wt_dir.to_string_lossy().into_owned(),
        subdir: String::new(),
        branch: "finishline/t".into(),
        base_branch: None,
        base_commit: "0".repeat(40),
    };
    let entries = [".env", "build/", "cfg/local.env", "dist/"].map(String::from);
    let done = copy_ignored_out(&wt, &entries).unwrap();
    assert_eq!(done.copied, vec![".env", "build/ok-link", "build/out.txt"]);
    assert_eq!(done.left, vec!["build/keep.txt", "dist/"], "what is there already stays");
    let failed: Vec<&str> = done.failed.iter().map(|f| f.split(": ").next().unwrap()).collect();
    assert_eq!(failed, vec!["build/abs-link", "build/pipe", "build/sock", "build/up-link", "cfg/local.env"], "{:?}", done.failed);
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0, "nothing written through the link in the checkout");
    assert_eq!(std::fs::read_to_string(repo.join("build/keep.txt")).unwrap(), "the person's");
    assert_eq!(std::fs::read_to_string(repo.join("dist")).unwrap(), "the person's");
    assert_eq!(std::fs::read_to_string(repo.join("build/ok-link")).unwrap(), "built", "a link inside the repository is kept as a link");
    assert!(!repo.join("build/pipe").exists() && !repo.join("build/sock").exists(), "no empty file stands in for what was not copied");
    for bad in ["../x", "/etc/passwd", "./.env"] {
        assert!(copy_ignored_out(&wt, &[bad.to_string()]).is_err(), "{bad} is refused");
    }
}

/// A named pipe in the workspace (a dev server's, a `mkfifo` of the agent's): opening one waits
/// for the other end, which may never come, and would hold the run for ever. Every file tool
/// answers at once, saying what is there, and the pipe stays.
#[test]
fn the_file_tools_answer_at_once_about_a_named_pipe_and_never_wait_on_it() {
    let w = std::sync::Arc::new(world());
    let made = std::process::Command::new("mkfifo").arg(w.ws.join("pipe")).status().unwrap();
    assert!(made.success());
    let asks = [
        ("read_file", json!({"path": "pipe"})),
        ("write_file", json!({"path": "pipe", "content": "x"})),
        ("edit_file", json!({"path": "pipe", "old_text": "a", "new_text": "b"})),
        ("grep", json!({"pattern": "anything"})),
    ];
    for (tool, input) in asks {
        // On a thread of its own: a tool stuck in the kernel would never let a timer fire.
        let (tx, rx) = std::sync::mpsc::channel();
        let world = w.clone();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            let _ = tx.send(rt.block_on(call(&world, tool, input)));
        });
        let Ok((out, err)) = rx.recv_timeout(std::time::Duration::from_secs(5)) else { panic!("{tool} waited on the pipe") };
        if tool != "grep" {
            assert!(err && out.contains("`pipe` is not a regular file"), "{tool}: {out}");
        }
    }
    assert!(std::fs::symlink_metadata(w.ws.join("pipe")).unwrap().file_type().is_fifo(), "the pipe is left as it was");
}

/// A person's program held in opening a named pipe (the kernel's "waiting for the other end");
/// killed if the test fails before it is let go.
struct Waiting(std::process::Child);

impl Waiting {
    fn spawn(script: &str) -> Waiting {
        let null = std::process::Stdio::null;
        let child = std::process::Command::new("sh").arg("-c").arg(script).stdout(null()).stderr(null()).spawn().unwrap();
        let wchan = format!("/proc/{}/wchan", child.id());
        let waiting = Waiting(child);
        for _ in 0..500 {
            // The kernel's name for that wait: `wait_for_partner` since 5.9, `pipe_wait` before.
            if std::fs::read_to_string(&wchan).is_ok_and(|w| ["wait_for_partner", "pipe_wait", "fifo_open"].iter().any(|n| w.contains(n))) {
                return waiting;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        panic!("the process never came to wait on the pipe");
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn refusing_a_named_pipe_never_opens_it_so_a_program_waiting_at_its_other_end_goes_on_waiting() {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let w = std::sync::Arc::new(world());
    for name in ["to-read", "to-write"] {
        assert!(std::process::Command::new("mkfifo").arg(w.ws.join(name)).status().unwrap().success());
    }
    // The person's programs: one waits to read what comes through `to-read`, one waits to hand
    // "the person's words" to whoever reads `to-write`.
    let out = w.ws.join("reader-got.txt");
    let mut reader = Waiting::spawn(&format!("exec cat '{}' > '{}'", w.ws.join("to-read").display(), out.display()));
    let mut writer = Waiting::spawn(&format!("printf \"the person's words\" > '{}'", w.ws.join("to-write").display()));
    for (tool, input) in [
        ("read_file", json!({"path": "to-write"})),
        ("write_file", json!({"path": "to-read", "content": "the agent's words"})),
        ("edit_file", json!({"path": "to-read", "old_text": "a", "new_text": "b"})),
        ("read_file", json!({"path": "to-read"})),
        ("write_file", json!({"path": "to-write", "content": "the agent's words"})),
    ] {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let (answer, err) = rt.block_on(call(&w, tool, input));
        assert!(err && answer.contains("is not a regular file"), "{tool}: {answer}");
    }
    // Had a tool opened `to-read`, its reader would have met the end of the stream and left; had
    // one opened `to-write`, the writer's words would have gone with the tool's closing.
    let mut to_read = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(w.ws.join("to-read"))
        .expect("the reader is still waiting at the other end");
    std::io::Write::write_all(&mut to_read, b"the person's own words").unwrap();
    drop(to_read);
    assert!(reader.0.wait().unwrap().success());
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "the person's own words");
    // Opened without waiting, then read as usual: with no writer left it reads nothing at once.
    let mut to_write = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(w.ws.join("to-write")).unwrap();
    let flags = rustix::fs::fcntl_getfl(&to_write).unwrap();
    rustix::fs::fcntl_setfl(&to_write, flags - rustix::fs::OFlags::NONBLOCK).unwrap();
    let mut got = String::new();
    to_write.read_to_string(&mut got).unwrap();
    assert!(writer.0.wait().unwrap().success());
    assert_eq!(got, "the person's words", "the writer's words reach the person's reader");
}
