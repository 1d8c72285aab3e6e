//! Each task owns its changes. In a git repository a task works in its own worktree and lands on
//! the person's branch when approved; in a plain folder it works in place and its review and
//! revert cover only what it changed. Driven through the `finishline` binary as a person's
//! script would, against the fake provider, in real git repositories.

mod support {
    pub mod cli;
}

use std::io::Write;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use fake_llm::{FakeServer, Protocol};
use serde_json::{json, Value};
use support::cli::*;

const VERDICT_DONE: &str =
    "{\"done\": true, \"summary\": \"the file is written\", \"remaining\": [], \"continuation_prompt\": \"\", \"is_stuck\": false, \"stuck_reason\": \"\"}";

/// An agent that writes `file` when the task names it (slowly when `delay_ms` > 0), then says done.
fn writes(file: &str, content: &str, delay_ms: u64) -> Vec<Value> {
    vec![
        json!({"when": {"kind": "agent", "last_message_contains": format!("Created {file}")}, "reply": {"text": format!("Done! {file} is written exactly as asked.")}}),
        json!({"when": {"kind": "agent", "last_message_contains": format!("Updated {file}")}, "reply": {"text": format!("Done! {file} is written exactly as asked.")}}),
        json!({"when": {"kind": "agent", "last_message_contains": format!("write {file}")}, "reply": {"text": format!("Writing {file}."), "chunks": 10, "chunk_delay_ms": delay_ms / 10,
            "tool_calls": [{"name": "write_file", "arguments": {"path": file, "content": content}}]}}),
    ]
}

/// Rules for a task asked with `asked` that makes all of `calls` in one answer, and says it is
/// done once a tool's output contains `done_after`.
fn calls_then_done(asked: &str, calls: Vec<Value>, done_after: &str) -> Vec<Value> {
    vec![
        json!({"when": {"kind": "agent", "last_message_contains": done_after}, "reply": {"text": "Done! Every file is written."}}),
        json!({"when": {"kind": "agent", "last_message_contains": asked}, "reply": {"text": "Writing.", "tool_calls": calls}}),
    ]
}

fn write_call(path: &str, content: &str) -> Value {
    json!({"name": "write_file", "arguments": {"path": path, "content": content}})
}

/// Rules for a task asked to "write notes.md" whose agent, sent back to resolve a conflict in it,
/// answers with `reply`.
fn notes_then_resolve(reply: Value) -> Vec<Value> {
    let mut rules = writes("notes.md", "the task's notes\n", 0);
    rules.insert(0, json!({"when": {"kind": "agent", "last_message_contains": "conflicts in: notes.md"}, "reply": reply}));
    rules
}

/// Meanwhile the person commits their own notes.md on main: the task's conflicts with it.
fn person_commits_notes(r: &Path) {
    std::fs::write(r.join("notes.md"), "the person's notes\n").unwrap();
    git(r, &["add", "notes.md"]);
    git(r, &["commit", "-q", "-m", "the person's notes"]);
}

fn scenario(rules: Vec<Vec<Value>>) -> fake_llm::Scenario {
    let mut all: Vec<Value> = vec![
        // Asked of a reply with no work in it: an answer, nothing left undone.
        json!({"when": {"kind": "evaluator", "system_contains": "leave undone what it was to do"}, "reply": {"text": "{\"left_undone\": false, \"action\": \"\"}"}}),
        json!({"when": {"kind": "evaluator"}, "reply": {"text": VERDICT_DONE}}),
    ];
    for r in rules {
        all.extend(r);
    }
    all.push(json!({"when": {"kind": "agent"}, "reply": {"text": "Done! Nothing else was asked of me here."}}));
    serde_json::from_value(json!({ "rules": all })).unwrap()
}

/// A repository on `main` with one commit, and the person's own uncommitted edit in it.
fn repo(dir: &Path) -> PathBuf {
    person_repo(dir, &[(".gitignore", ".env\n")])
}

struct Cli {
    url: String,
    data: PathBuf,
}

impl Cli {
    fn cmd(&self, args: &[&str]) -> Command {
        command(args, &self.data)
    }

    /// `finishline run TASK` in `ws` with the given flags, JSON out, not started yet.
    fn run_cmd(&self, task: &str, ws: &Path, extra: &[&str]) -> Command {
        let mut args = vec!["run", task, "--workspace", ws.to_str().unwrap(), "--base-url", &self.url, "--model", "m", "--json"];
        args.extend_from_slice(extra);
        self.cmd(&args)
    }

    fn run(&self, task: &str, ws: &Path, extra: &[&str]) -> Output {
        self.run_cmd(task, ws, extra).output().unwrap()
    }

    fn spawn(&self, task: &str, ws: &Path, extra: &[&str]) -> std::process::Child {
        self.run_cmd(task, ws, extra).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()
    }

    fn review(&self, id: &str, extra: &[&str]) -> Output {
        let mut args = vec!["sessions", "review", id, "--base-url", &self.url, "--model", "m"];
        args.extend_from_slice(extra);
        self.cmd(&args).output().unwrap()
    }
}

/// The session's events as stored.
fn stored(data: &Path, id: &str) -> Vec<finishline_engine::event::EngineEvent> {
    let store = finishline_engine::store::Store::open(&data.join("history.db"), std::sync::Arc::new(finishline_engine::clock::SystemClock)).unwrap();
    store.events(&finishline_engine::domain::SessionId(id.to_string()), 0).unwrap().into_iter().map(|e| e.event).collect()
}

fn summary(o: &Output) -> Value {
    lines(o).into_iter().rev().find(|e| e["type"] == "summary").unwrap_or_else(|| panic!("a summary; stderr: {}", String::from_utf8_lossy(&o.stderr)))
}

fn session_of(o: &Output) -> String {
    summary(o)["session_id"].as_str().unwrap().to_string()
}

/// The code of the `--json` error line a refused command printed.
fn error_code(o: &Output) -> String {
    let error = lines(o).into_iter().find(|e| e["type"] == "error").unwrap_or_else(|| panic!("an error line: {}", String::from_utf8_lossy(&o.stdout)));
    error["code"].as_str().unwrap().to_string()
}

/// The files the session's last review listed, by path.
fn reviewed(o: &Output) -> Vec<String> {
    let review = lines(o).into_iter().rev().find(|e| e["type"] == "review_requested").expect("a review");
    review["files_changed"].as_array().unwrap().iter().map(|f| f["path"].as_str().unwrap().to_string()).collect()
}

/// Waits until `task`'s command has written `flag` (it is at work), or says why it never did.
fn until_started(task: &mut std::process::Child, flag: &Path) {
    let began = Instant::now();
    while !flag.exists() {
        if began.elapsed() > Duration::from_secs(30) {
            use std::io::Read;
            task.kill().unwrap();
            let _ = task.wait();
            let mut said = String::new();
            let _ = task.stderr.take().map(|mut e| e.read_to_string(&mut said));
            panic!("the command never started: {said}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `cmd`'s output, or a failure naming `what` when it has not ended within a minute (a regression
/// that waits on a named pipe would otherwise hold the whole suite).
fn within_a_minute(mut cmd: Command, what: &str) -> Output {
    let mut task = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let began = Instant::now();
    while task.try_wait().unwrap().is_none() {
        if began.elapsed() > Duration::from_secs(60) {
            task.kill().unwrap();
            let _ = task.wait();
            panic!("{what} waited on the pipe");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    task.wait_with_output().unwrap()
}

async fn server(rules: Vec<Vec<Value>>) -> (FakeServer, tempfile::TempDir, Cli) {
    let server = FakeServer::start(scenario(rules)).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cli = Cli { url: server.base_url(Protocol::Openai), data: dir.path().join("data") };
    (server, dir, cli)
}

/// Returns once the agent was asked something containing `asked`: the task asking it is running
/// (a fixed wait was not always enough on a loaded machine).
fn wait_until_asked(server: &FakeServer, asked: &str) {
    let t = Instant::now();
    while !server.requests().iter().any(|q| q.last_message.contains(asked)) {
        assert!(t.elapsed() < Duration::from_secs(60), "the agent was asked to {asked}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_tasks_at_once_in_a_repository_one_rejected_one_approved_leave_one_commit_and_the_persons_edit() {
    let (_s, dir, cli) = server(vec![writes("slow.txt", "slow\n", 1500), writes("fast.txt", "fast\n", 0)]).await;
    let r = repo(dir.path());
    let before = git(&r, &["rev-parse", "HEAD"]);
    let slow = cli.spawn("write slow.txt", &r, &[]);
    std::thread::sleep(Duration::from_millis(300));
    let fast = cli.run("write fast.txt", &r, &["--review", "approve"]);
    assert_eq!(fast.status.code(), Some(0), "the fast task is approved and lands: {}", String::from_utf8_lossy(&fast.stderr));
    assert_eq!(reviewed(&fast), vec!["fast.txt"], "its review shows its own file, never the other task's");
    let slow = slow.wait_with_output().unwrap();
    assert_eq!(slow.status.code(), Some(6), "the slow task waits for its review (nobody at a terminal)");
    assert_eq!(reviewed(&slow), vec!["slow.txt"], "the slow task's review lists only slow.txt, although fast.txt landed meanwhile");
    let rejected = cli.review(&session_of(&slow), &["--reject", "--revert"]);
    assert_eq!(rejected.status.code(), Some(3), "rejected: {}", String::from_utf8_lossy(&rejected.stderr));

    let log: Vec<String> = git(&r, &["log", "--format=%s", &format!("{before}..main")]).lines().map(String::from).collect();
    assert_eq!(log, vec!["write fast.txt"], "exactly one new commit on the person's branch: the approved task's");
    assert_eq!(std::fs::read_to_string(r.join("fast.txt")).unwrap(), "fast\n", "the approved task's file is in the person's checkout");
    assert!(!r.join("slow.txt").exists(), "the rejected task left nothing in the person's checkout");
    assert_eq!(std::fs::read_to_string(r.join("README.md")).unwrap(), "hello\nmy own edit, not committed\n", "the person's uncommitted edit is kept");
    assert_eq!(
        git(&r, &["worktree", "list", "--porcelain"]).matches("worktree ").count(),
        1,
        "no Finishline worktree is left: {}",
        git(&r, &["worktree", "list"])
    );
    assert_eq!(git(&r, &["branch", "--list", "finishline/*"]), "", "neither task's branch is left");
}

/// Two tasks approved at the same moment (two windows, a window and a terminal, two
/// auto-approving runs ending together): the second waited for nothing and moved the branch
/// under the first, which was then refused with "moved while the task was being landed: approve
/// again". Landings in one repository take turns, and each lands.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_tasks_approved_at_the_same_moment_both_land_one_after_the_other() {
    let (_s, dir, cli) = server(vec![writes("one.txt", "1\n", 0), writes("two.txt", "2\n", 0)]).await;
    let r = repo(dir.path());
    let (one, two) = (session_of(&cli.run("write one.txt", &r, &[])), session_of(&cli.run("write two.txt", &r, &[])));
    let marker = dir.path().join("paused");
    // The first has composed its landing and is about to move the branch.
    let first = approve_paused_at(&cli, &one, "landing-started", &marker);
    let second = cli
        .cmd(&["sessions", "review", &two, "--approve", "--base-url", &cli.url, "--model", "m"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    std::fs::remove_file(&marker).unwrap();
    let (first, second) = (first.wait_with_output().unwrap(), second.wait_with_output().unwrap());
    assert_eq!(first.status.code(), Some(0), "the first lands: {}", String::from_utf8_lossy(&first.stderr));
    assert_eq!(second.status.code(), Some(0), "the second lands too: {}", String::from_utf8_lossy(&second.stderr));
    assert_eq!(git(&r, &["log", "--format=%s", "-2", "main"]), "write two.txt\nwrite one.txt", "one after the other, the second caught up with the first");
    assert_eq!(std::fs::read_to_string(r.join("one.txt")).unwrap(), "1\n");
    assert_eq!(std::fs::read_to_string(r.join("two.txt")).unwrap(), "2\n");
    assert_eq!(std::fs::read_to_string(r.join("README.md")).unwrap(), "hello\nmy own edit, not committed\n", "the person's uncommitted edit is kept");
}

/// Ctrl+C on an approve waiting behind another decision on the same task (a window's, another
/// terminal's) stops only the wait: it says the other decision goes on, and offers no other way
/// to land it, which would wait behind the same decision again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_on_an_approve_waiting_behind_another_decision_says_that_one_goes_on_and_offers_nothing_else() {
    let (_s, dir, cli) = server(vec![writes("one.txt", "1\n", 0)]).await;
    let r = repo(dir.path());
    let id = session_of(&cli.run("write one.txt", &r, &[]));
    let marker = dir.path().join("paused");
    let first = approve_paused_at(&cli, &id, "landing-started", &marker);
    let waiting = dir.path().join("waiting");
    let second = approve_paused_at(&cli, &id, "decision-behind-another", &waiting);
    assert!(Command::new("kill").args(["-INT", &second.id().to_string()]).status().unwrap().success());
    std::fs::remove_file(&waiting).unwrap();
    let out = second.wait_with_output().unwrap();
    std::fs::remove_file(&marker).unwrap();
    let first = first.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(said.contains("that decision goes on") && said.contains(&format!("sessions show {id}")), "it says where to see how it ends: {said}");
    assert!(!said.contains("--land branch") && !said.contains("Not landed"), "nothing is offered that would wait behind it again: {said}");
    assert_eq!(first.status.code(), Some(0), "the first lands: {}", String::from_utf8_lossy(&first.stderr));
    assert_eq!(git(&r, &["log", "-1", "--format=%s", "main"]), "write one.txt");
}

/// A lock git left on the branch (a git of the person's still running, or one that crashed)
/// makes git refuse to move it: said as git's refusal, with what to do, not as a branch that
/// moved ("approve again" would meet the same lock). The checkout is put back; with the lock
/// gone, the same approve lands.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_branch_git_holds_locked_is_said_locked_not_moved_and_lands_once_the_lock_is_gone() {
    let (_s, dir, cli) = server(vec![writes("one.txt", "1\n", 0)]).await;
    let r = repo(dir.path());
    let id = session_of(&cli.run("write one.txt", &r, &[]));
    let lock = r.join(".git/refs/heads/main.lock");
    std::fs::write(&lock, "").unwrap();
    let refused = cli.cmd(&["sessions", "review", &id, "--approve", "--base-url", &cli.url, "--model", "m"]).output().unwrap();
    let said = String::from_utf8_lossy(&refused.stderr).to_string();
    assert_ne!(refused.status.code(), Some(0), "{said}");
    assert!(said.contains("main.lock") && !said.contains("moved"), "git's refusal is named, not a move: {said}");
    assert_eq!(git(&r, &["log", "-1", "--format=%s", "main"]), "init", "the branch did not move");
    assert!(!r.join("one.txt").exists(), "the checkout was put back");
    std::fs::remove_file(&lock).unwrap();
    let landed = cli.cmd(&["sessions", "review", &id, "--approve", "--base-url", &cli.url, "--model", "m"]).output().unwrap();
    assert_eq!(landed.status.code(), Some(0), "{}", String::from_utf8_lossy(&landed.stderr));
    assert_eq!(std::fs::read_to_string(r.join("one.txt")).unwrap(), "1\n");
}

/// A file of the checkout touched (saved unchanged, its mode set back, a build's `touch`) is
/// no edit of the person's: approve lands the task's change to it. Git's index still held the
/// old time, and "Entry 'f.txt' not uptodate. Cannot merge." refused the landing until the
/// person ran `git status`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_touched_but_not_changed_in_the_checkout_does_not_stop_the_landing() {
    let (_s, dir, cli) = server(vec![writes("f.txt", "the task's\n", 0)]).await;
    let r = person_repo(dir.path(), &[("f.txt", "hello\n")]);
    let id = session_of(&cli.run("write f.txt", &r, &[]));
    std::thread::sleep(std::time::Duration::from_millis(1100));
    std::fs::write(r.join("f.txt"), "hello\n").unwrap();
    let landed = cli.review(&id, &["--approve"]);
    assert_eq!(landed.status.code(), Some(0), "{}{}", String::from_utf8_lossy(&landed.stdout), String::from_utf8_lossy(&landed.stderr));
    assert_eq!(std::fs::read_to_string(r.join("f.txt")).unwrap(), "the task's\n");
    assert_eq!(std::fs::read_to_string(r.join("README.md")).unwrap(), "hello\nmy own edit, not committed\n", "the person's edit stays");
}

/// A landing waiting its turn while the person moves their repository away: it made the old
/// place's `.git` again (an empty folder, to lock in) and went on there. It says the repository
/// is gone, and makes nothing where it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repository_moved_while_its_landing_waits_its_turn_is_said_gone_and_nothing_is_made_where_it_was() {
    let (_s, dir, cli) = server(vec![writes("one.txt", "1\n", 0)]).await;
    let r = repo(dir.path());
    let id = session_of(&cli.run("write one.txt", &r, &[]));
    // Another landing in the repository holds the turn.
    let turn = finishline_engine::workspace::lock::FolderLock::acquire(&r.join(".git/finishline-landing.lock")).unwrap();
    let approving = cli.cmd(&["sessions", "review", &id, "--approve"]).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let t = Instant::now();
    while !stored(&cli.data, &id)
        .iter()
        .any(|e| matches!(e, finishline_engine::event::EngineEvent::Activity { detail, .. } if detail.contains("waiting for another task's landing")))
    {
        assert!(t.elapsed() < Duration::from_secs(60), "the approve waits its turn");
        std::thread::sleep(Duration::from_millis(50));
    }
    let moved = dir.path().join("moved");
    std::fs::rename(&r, &moved).unwrap();
    let out = approving.wait_with_output().unwrap();
    drop(turn);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "nothing landed: {err}");
    assert!(err.contains("no longer at"), "the repository is said gone: {err}");
    assert!(!r.exists(), "nothing was made where the repository was");
    assert_eq!(git(&moved, &["log", "-1", "--format=%s", "main"]), "init", "its branch did not move");
}

/// The same, moved in the instant before the landing first tries for its turn (nobody else
/// holding it): that first try made the old place's `.git` again too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repository_moved_just_before_its_landing_takes_its_turn_is_said_gone_and_nothing_is_made_where_it_was() {
    let (_s, dir, cli) = server(vec![writes("one.txt", "1\n", 0)]).await;
    let r = repo(dir.path());
    let id = session_of(&cli.run("write one.txt", &r, &[]));
    let marker = dir.path().join("paused");
    let approving = approve_paused_at(&cli, &id, "landing-before-turn", &marker);
    let moved = dir.path().join("moved");
    std::fs::rename(&r, &moved).unwrap();
    std::fs::remove_file(&marker).unwrap();
    let out = approving.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout);
    assert_ne!(out.status.code(), Some(0), "nothing landed: {said}");
    assert!(said.contains("no longer at"), "the repository is said gone: {said}");
    assert!(!r.exists(), "nothing was made where the repository was");
    assert_eq!(git(&moved, &["log", "-1", "--format=%s", "main"]), "init", "its branch did not move");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn asking_for_a_worktree_where_there_can_be_none_is_refused_before_the_agent_touches_the_folder() {
    let (_s, dir, cli) = server(vec![writes("a.txt", "a\n", 0)]).await;
    let plain = dir.path().join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    let fresh = dir.path().join("fresh");
    std::fs::create_dir_all(&fresh).unwrap();
    git(&fresh, &["init", "-q", "-b", "main"]);
    std::fs::write(fresh.join("mine.txt"), "mine\n").unwrap();
    for (ws, why) in [(&plain, "not a git repository"), (&fresh, "no commit yet")] {
        let out = cli.run("write a.txt", ws, &["--isolation", "worktree"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "--isolation worktree in a folder with {why} is refused as bad input: {err}");
        assert!(err.contains("worktree") && err.contains("--isolation in-place") && err.contains("commit"), "the error says why and both ways forward: {err}");
        assert!(!ws.join("a.txt").exists(), "the agent never wrote into the person's folder ({why})");
    }
    assert_eq!(std::fs::read_to_string(fresh.join("mine.txt")).unwrap(), "mine\n");
    let list = cli.cmd(&["sessions", "list", "--json"]).output().unwrap();
    assert!(lines(&list).is_empty(), "a refused task leaves no session behind");
}

/// A file the checkpoints never copy (too big) is named at the review in the terminal, as in the
/// window: the JSON said it, the words did not, and a Reject that could not put it back said
/// "0 restored" of a file the agent had deleted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_review_in_the_terminal_names_the_files_no_revert_can_put_back() {
    let (_s, dir, cli) = server(vec![writes("a.txt", "a\n", 0)]).await;
    let ws = dir.path().join("plain");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::File::create(ws.join("big.bin")).unwrap().set_len(11 * 1024 * 1024).unwrap();
    let out = cli.cmd(&["run", "write a.txt", "--workspace", ws.to_str().unwrap(), "--base-url", &cli.url, "--model", "m"]).output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(6), "{said}");
    assert!(said.contains("not covered by revert (too big to copy, unreadable, or a name that is not UTF-8)") && said.contains("big.bin"), "{said}");
    let id = String::from_utf8_lossy(&cli.cmd(&["sessions", "list"]).output().unwrap().stdout).split_whitespace().next().unwrap().to_string();
    let shown = cli.cmd(&["sessions", "review", &id]).output().unwrap();
    let shown = String::from_utf8_lossy(&shown.stdout).to_string() + &String::from_utf8_lossy(&shown.stderr);
    assert!(shown.contains("not covered by revert") && shown.contains("big.bin"), "the waiting review says it too: {shown}");
}

/// Files the agent renamed ("rename the photos by date") are its own to undo: a rename keeps a
/// file's making time, older than the task, which the revert read as a file of the person's the
/// task had only uncovered, and refused ("someone changed 2024-01-01.jpg after the agent").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reject_with_revert_undoes_the_agents_renames_in_a_plain_folder() {
    let rename = json!({"name": "run_command", "arguments": {"command": "mv photo1.jpg 2024-01-01.jpg && mv photo2.jpg 2024-01-02.jpg && echo renamed both"}});
    let (_s, dir, cli) = server(vec![calls_then_done("rename the photos", vec![rename], "renamed both")]).await;
    let ws = dir.path().join("photos");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("photo1.jpg"), "first photo\n").unwrap();
    std::fs::write(ws.join("photo2.jpg"), "second photo\n").unwrap();
    let ran = cli.run("rename the photos by date", &ws, &["--allow", "run_command"]);
    assert_eq!(ran.status.code(), Some(6), "{}", String::from_utf8_lossy(&ran.stderr));
    assert!(ws.join("2024-01-01.jpg").exists());
    let rejected = cli.review(&session_of(&ran), &["--reject", "--revert"]);
    let said = String::from_utf8_lossy(&rejected.stderr).to_string() + &String::from_utf8_lossy(&rejected.stdout);
    assert_eq!(rejected.status.code(), Some(3), "{said}");
    assert_eq!(std::fs::read_to_string(ws.join("photo1.jpg")).unwrap(), "first photo\n", "{said}");
    assert_eq!(std::fs::read_to_string(ws.join("photo2.jpg")).unwrap(), "second photo\n", "{said}");
    assert!(!ws.join("2024-01-01.jpg").exists() && !ws.join("2024-01-02.jpg").exists(), "the renamed files go back to their names: {said}");
}

/// Reject with revert after Request changes undoes every round the person never approved, not
/// only the last: the first round's file goes too. A file the person edited between the rounds
/// comes back as they left it, not as it was before the task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reject_with_revert_after_requested_changes_undoes_every_round_not_approved() {
    let (_s, dir, cli) = server(vec![
        calls_then_done(
            "first round",
            vec![write_call("a.txt", "a\n"), write_call("keep.txt", "the agent's\n"), write_call("notes.md", "the agent's notes\n")],
            "notes.md",
        ),
        calls_then_done(
            "second round",
            vec![write_call("c.txt", "c\n"), write_call("keep.txt", "the agent's again\n"), write_call("notes.md", "the agent's again\n")],
            "notes.md",
        ),
    ])
    .await;
    let ws = dir.path().join("plain");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("keep.txt"), "the person's start\n").unwrap();
    std::fs::write(ws.join("notes.md"), "my notes\n").unwrap();
    let first = cli.run("first round", &ws, &[]);
    assert_eq!(first.status.code(), Some(6), "{}", String::from_utf8_lossy(&first.stderr));
    let id = session_of(&first);
    // Between the rounds the person edits notes.md, which the agent changed.
    std::fs::write(ws.join("notes.md"), "my notes, edited between the rounds\n").unwrap();
    let round = cli.review(&id, &["--request-changes", "second round"]);
    assert_eq!(round.status.code(), Some(6), "{}", String::from_utf8_lossy(&round.stderr));
    let rejected = cli.review(&id, &["--reject", "--revert"]);
    let said = String::from_utf8_lossy(&rejected.stderr).to_string() + &String::from_utf8_lossy(&rejected.stdout);
    assert_eq!(rejected.status.code(), Some(3), "{said}");
    assert!(!ws.join("a.txt").exists(), "the first round's file is undone too: {said}");
    assert!(!ws.join("c.txt").exists(), "and the last round's: {said}");
    assert_eq!(std::fs::read_to_string(ws.join("keep.txt")).unwrap(), "the person's start\n", "{said}");
    assert_eq!(
        std::fs::read_to_string(ws.join("notes.md")).unwrap(),
        "my notes, edited between the rounds\n",
        "the person's edit between the rounds stays: {said}"
    );
}

/// Between a task's rounds another task in the folder wrote, and the person approved, a file the
/// first round had written, to the same words: the reject's revert of every round keeps it and
/// names it (content alone would take it for the rejected task's own and delete approved work).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reject_with_revert_of_every_round_keeps_another_tasks_approved_file_written_between_rounds() {
    let (_s, dir, cli) = server(vec![
        calls_then_done("first round", vec![write_call("notes.txt", "hello\n")], "notes.txt"),
        calls_then_done("second round", vec![write_call("other.txt", "other\n")], "other.txt"),
        calls_then_done("another task", vec![write_call("notes.txt", "hello\n")], "notes.txt"),
    ])
    .await;
    let ws = dir.path().join("plain");
    std::fs::create_dir_all(&ws).unwrap();
    let first = cli.run("first round", &ws, &[]);
    assert_eq!(first.status.code(), Some(6), "{}", String::from_utf8_lossy(&first.stderr));
    let id = session_of(&first);
    // The person removes the file; another task writes it again, to the same words, and lands.
    std::fs::remove_file(ws.join("notes.txt")).unwrap();
    let other = cli.run("another task", &ws, &["--review", "approve"]);
    assert_eq!(other.status.code(), Some(0), "{}", String::from_utf8_lossy(&other.stderr));
    let round = cli.review(&id, &["--request-changes", "second round"]);
    assert_eq!(round.status.code(), Some(6), "{}", String::from_utf8_lossy(&round.stderr));
    let rejected = cli.review(&id, &["--reject", "--revert"]);
    let said = String::from_utf8_lossy(&rejected.stderr).to_string() + &String::from_utf8_lossy(&rejected.stdout);
    assert_eq!(std::fs::read_to_string(ws.join("notes.txt")).unwrap(), "hello\n", "the other task's approved file stays: {said}");
    assert!(said.contains("notes.txt"), "and is named: {said}");
}

/// Another task that worked in a subfolder of this task's folder showed, and the person approved,
/// a file this task had written there, to the same words: the reject's revert keeps it (its path
/// is read from the other task's folder, not compared as text).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reject_with_revert_keeps_a_file_a_task_in_a_subfolder_showed_for_review_since() {
    let (_s, dir, cli) = server(vec![
        calls_then_done("first round", vec![write_call("sub/notes.txt", "hello\n")], "notes.txt"),
        calls_then_done("another task", vec![write_call("notes.txt", "hello\n")], "notes.txt"),
    ])
    .await;
    let ws = dir.path().join("plain");
    std::fs::create_dir_all(ws.join("sub")).unwrap();
    let first = cli.run("first round", &ws, &[]);
    assert_eq!(first.status.code(), Some(6), "{}", String::from_utf8_lossy(&first.stderr));
    let id = session_of(&first);
    std::fs::remove_file(ws.join("sub/notes.txt")).unwrap();
    let other = cli.run("another task", &ws.join("sub"), &["--review", "approve"]);
    assert_eq!(other.status.code(), Some(0), "{}", String::from_utf8_lossy(&other.stderr));
    let rejected = cli.review(&id, &["--reject", "--revert"]);
    let said = String::from_utf8_lossy(&rejected.stderr).to_string() + &String::from_utf8_lossy(&rejected.stdout);
    assert_eq!(std::fs::read_to_string(ws.join("sub/notes.txt")).unwrap(), "hello\n", "the other task's approved file stays: {said}");
    assert!(said.contains("sub/notes.txt"), "and is named: {said}");
}

/// Another task in the same folder wrote a file this task had written, to the same words, and
/// never reached a review (its model went away): the reject's revert keeps that file, and names
/// it, rather than take it for this task's and delete the other's work.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reject_with_revert_keeps_a_file_another_task_wrote_since_even_when_it_never_reached_a_review() {
    let (_s, dir, cli) = server(vec![
        vec![
            json!({"when": {"kind": "agent", "last_message_contains": "Created notes.txt", "any_message_contains": "another task"}, "reply": {"fault": {"type": "status", "status": 400, "body": "{\"error\": {\"message\": \"the model went away\"}}"}}}),
            json!({"when": {"kind": "agent", "last_message_contains": "another task"}, "reply": {"text": "Writing.", "tool_calls": [write_call("notes.txt", "hello\n")]}}),
        ],
        calls_then_done("first round", vec![write_call("notes.txt", "hello\n")], "notes.txt"),
    ])
    .await;
    let ws = dir.path().join("plain");
    std::fs::create_dir_all(&ws).unwrap();
    let first = cli.run("first round", &ws, &[]);
    assert_eq!(first.status.code(), Some(6), "{}", String::from_utf8_lossy(&first.stderr));
    let id = session_of(&first);
    std::fs::remove_file(ws.join("notes.txt")).unwrap();
    let other = cli.run("another task", &ws, &[]);
    assert_eq!(other.status.code(), Some(4), "the other task failed after writing: {}", String::from_utf8_lossy(&other.stderr));
    assert!(lines(&other).iter().all(|e| e["type"] != "review_requested"), "and never reached a review");
    let rejected = cli.review(&id, &["--reject", "--revert"]);
    let said = String::from_utf8_lossy(&rejected.stderr).to_string() + &String::from_utf8_lossy(&rejected.stdout);
    assert_eq!(std::fs::read_to_string(ws.join("notes.txt")).unwrap(), "hello\n", "the other task's file stays: {said}");
    assert!(said.contains("notes.txt"), "and is named: {said}");
}

/// A reject's revert never runs while another task's tools are changing the same folder: that
/// task would count the files the revert removes as its own changes, show them in its review, and
/// bring the rejected file back if it were rejected in turn. The revert waits for those tools.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revert_waits_for_another_tasks_tools_in_the_folder_and_is_never_counted_as_that_tasks_change() {
    let command = json!({"name": "run_command", "arguments": {"command": "touch started.flag; sleep 3; echo slept"}});
    let (_s, dir, cli) = server(vec![calls_then_done("take a while", vec![command], "slept"), writes("notes.txt", "hello\n", 0)]).await;
    let ws = dir.path().join("plain");
    std::fs::create_dir_all(&ws).unwrap();
    let first = cli.run("write notes.txt", &ws, &[]);
    assert_eq!(first.status.code(), Some(6), "{}", String::from_utf8_lossy(&first.stderr));
    let mut other = cli.spawn("take a while", &ws, &["--when-busy", "run", "--allow", "run_command"]);
    until_started(&mut other, &ws.join("started.flag"));
    let rejected = cli.review(&session_of(&first), &["--reject", "--revert"]);
    assert_eq!(rejected.status.code(), Some(3), "{}", String::from_utf8_lossy(&rejected.stderr));
    assert!(!ws.join("notes.txt").exists(), "the rejected task's file is undone");
    let other = other.wait_with_output().unwrap();
    assert_eq!(reviewed(&other), vec!["started.flag"], "the other task's review holds only what its command did: {}", String::from_utf8_lossy(&other.stderr));
}

/// Folders inside one another are one place for a revert: another task's tools at work in the
/// folder around this task's would count what the revert removes in the inner folder as their
/// own change. The revert waits for them as it does in the same folder.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revert_waits_for_another_tasks_tools_in_the_folder_around_its_own() {
    let command = json!({"name": "run_command", "arguments": {"command": "touch started.flag; sleep 3; echo slept"}});
    let (_s, dir, cli) = server(vec![calls_then_done("take a while", vec![command], "slept"), writes("notes.txt", "hello\n", 0)]).await;
    let ws = dir.path().join("plain");
    let inner = ws.join("sub");
    std::fs::create_dir_all(&inner).unwrap();
    let first = cli.run("write notes.txt", &inner, &[]);
    assert_eq!(first.status.code(), Some(6), "{}", String::from_utf8_lossy(&first.stderr));
    let mut other = cli.spawn("take a while", &ws, &["--when-busy", "run", "--allow", "run_command"]);
    until_started(&mut other, &ws.join("started.flag"));
    let rejected = cli.review(&session_of(&first), &["--reject", "--revert"]);
    assert_eq!(rejected.status.code(), Some(3), "{}", String::from_utf8_lossy(&rejected.stderr));
    assert!(!inner.join("notes.txt").exists(), "the rejected task's file is undone");
    let other = other.wait_with_output().unwrap();
    assert_eq!(reviewed(&other), vec!["started.flag"], "the other task's review holds only what its command did: {}", String::from_utf8_lossy(&other.stderr));
}

/// While the agent's command runs, an edit the person saves looks exactly like the command's
/// own: it is counted as the task's. A revert that puts such a file back keeps a copy of the
/// version it replaced first, and says where; a file the agent's own file tool wrote needs none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revert_keeps_a_copy_of_a_file_changed_while_a_command_ran_since_the_persons_edit_may_be_in_it() {
    let command = json!({"name": "run_command", "arguments": {"command": "touch started.flag; sleep 2; echo slept"}});
    let (_s, dir, cli) = server(vec![
        calls_then_done("Created notes.txt", vec![command], "slept"),
        calls_then_done("take a while", vec![write_call("notes.txt", "the agent's notes\n")], "never said"),
    ])
    .await;
    let ws = dir.path().join("plain");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("README.md"), "hello\n").unwrap();
    let mut task = cli.spawn("take a while", &ws, &["--allow", "run_command"]);
    until_started(&mut task, &ws.join("started.flag"));
    // The person saves an edit while the command runs.
    std::fs::write(ws.join("README.md"), "hello\nmy edit, saved while the command ran\n").unwrap();
    let task = task.wait_with_output().unwrap();
    assert_eq!(task.status.code(), Some(6), "{}", String::from_utf8_lossy(&task.stderr));
    assert_eq!(reviewed(&task), vec!["README.md", "notes.txt", "started.flag"], "nothing tells the edit from the command's");
    let id = session_of(&task);
    // Said at the review, before the person decides, not only once the revert is done.
    const BEFORE: &str = "changed while a command or an external agent was at work: README.md, started.flag (an edit of yours saved then looks like the agent's: a revert keeps a copy of each before putting it back)";
    let shown = cli.review(&id, &[]);
    let shown = String::from_utf8_lossy(&shown.stdout).to_string() + &String::from_utf8_lossy(&shown.stderr);
    assert!(shown.contains(BEFORE), "the review names the files: {shown}");
    let rejected = cli.review(&id, &["--reject", "--revert"]);
    assert_eq!(rejected.status.code(), Some(3), "{}", String::from_utf8_lossy(&rejected.stderr));
    let said = String::from_utf8_lossy(&rejected.stderr).to_string() + &String::from_utf8_lossy(&rejected.stdout);
    assert_eq!(std::fs::read_to_string(ws.join("README.md")).unwrap(), "hello\n", "put back as the task found it: {said}");
    let copy = cli.data.join("overwritten").join(&id).join("README.md");
    assert_eq!(std::fs::read_to_string(&copy).unwrap_or_default(), "hello\nmy edit, saved while the command ran\n", "the replaced version is kept: {said}");
    assert!(said.contains(&copy.display().to_string()), "and the reject says where: {said}");
    assert!(
        said.contains("README.md changed while a command or an external agent was at work, so an edit of yours then would look like the agent's"),
        "and why: {said}"
    );
    assert!(!ws.join("notes.txt").exists() && !ws.join("started.flag").exists(), "the rest is undone: {said}");
    assert!(!cli.data.join("overwritten").join(&id).join("notes.txt").exists(), "what the agent's own file tool wrote needs no copy: {said}");
}

/// A command that made many files (a build, an install) is reverted with a copy of each, as any
/// command's files are; what the reject says names them once, with where the copies are, rather
/// than a sentence for each of them. The folders it made go with them; a folder the person had,
/// even empty, stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revert_of_many_files_a_command_made_says_where_their_copies_are_in_one_sentence() {
    let made = "mkdir -p gen/deep && for i in $(seq 40); do echo $i > gen/f$i.txt; done; echo x > gen/deep/x.txt; echo x > mine/x.txt; echo made";
    let command = json!({"name": "run_command", "arguments": {"command": made}});
    let (_s, dir, cli) = server(vec![calls_then_done("generate", vec![command], "made")]).await;
    let ws = dir.path().join("plain");
    std::fs::create_dir_all(ws.join("mine")).unwrap();
    let task = cli.run("generate", &ws, &["--allow", "run_command"]);
    assert_eq!(task.status.code(), Some(6), "{}", String::from_utf8_lossy(&task.stderr));
    let id = session_of(&task);
    let rejected = cli.review(&id, &["--reject", "--revert"]);
    assert_eq!(rejected.status.code(), Some(3), "{}", String::from_utf8_lossy(&rejected.stderr));
    let said = String::from_utf8_lossy(&rejected.stderr).to_string();
    assert!(!ws.join("gen").join("f40.txt").exists(), "the files are removed: {said}");
    let copies = cli.data.join("overwritten").join(&id).join("gen");
    assert_eq!(std::fs::read_dir(&copies).map(|d| d.count()).unwrap_or(0), 41, "each has its copy: {said}");
    assert!(said.lines().count() < 10, "a few lines, not one a file: {said}");
    assert!(
        said.contains("42 files (gen/deep/x.txt, gen/f1.txt, gen/f10.txt and 39 more) changed while a command or an external agent was at work"),
        "it says how many and why: {said}"
    );
    assert!(said.contains(&cli.data.join("overwritten").join(&id).display().to_string()), "and where their copies are: {said}");
    // Where the disk keeps when a folder was made (ext4 and most others do).
    if std::fs::metadata(&ws).unwrap().created().is_ok() {
        assert!(!ws.join("gen").exists(), "the folders it made are gone: {said}");
    }
    assert!(ws.join("mine").is_dir() && !ws.join("mine").join("x.txt").exists(), "the person's own folder stays, empty as it was: {said}");
}

/// A command that puts a named pipe where the person's file was (a dev server's socket, a
/// `mkfifo`): git records only files and links, so the pipe is the file gone. The run goes on to
/// its review, which shows the file as deleted. Whose a pipe is, no snapshot can say (one made
/// after the run is the person's), so the revert leaves it and names it; told to overwrite, it
/// puts the person's file back, never hanging on reading the pipe. A pipe at a path nobody
/// recorded is left where it is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_named_pipe_a_command_left_where_the_persons_file_was_is_reviewed_as_the_file_gone_and_reverted_when_told_to() {
    let made = "echo new > new.txt && mkfifo newpipe && rm notes.txt && mkfifo notes.txt && echo made";
    let command = json!({"name": "run_command", "arguments": {"command": made}});
    let (_s, dir, cli) = server(vec![calls_then_done("make pipes", vec![command], "made")]).await;
    let ws = dir.path().join("plain");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("notes.txt"), "the person's notes\n").unwrap();
    let task = within_a_minute(cli.run_cmd("make pipes", &ws, &["--allow", "run_command"]), "the run");
    assert_eq!(task.status.code(), Some(6), "the run ends for review: {}", String::from_utf8_lossy(&task.stderr));
    assert_eq!(reviewed(&task), vec!["new.txt", "notes.txt"], "the file the pipe replaced is in the review");
    let review = lines(&task).into_iter().rev().find(|e| e["type"] == "review_requested").unwrap();
    assert_eq!(review["files_changed"][1]["kind"], "deleted", "shown as gone: {review}");
    let id = session_of(&task);
    let rejected = within_a_minute(cli.cmd(&["sessions", "review", &id, "--reject", "--revert"]), "the revert");
    let said = String::from_utf8_lossy(&rejected.stderr).to_string();
    assert_eq!(rejected.status.code(), Some(6), "asked first, not rejected: {said}");
    assert!(
        said.contains("Not reverted: ") && said.contains(": notes.txt") && said.contains("--force-revert"),
        "the pipe is named, with the way to overwrite it: {said}"
    );
    assert!(said.contains("a pipe or a socket is there now") && !said.contains("changed after the agent"), "said as what it is, not as someone's edit: {said}");
    let json = within_a_minute(cli.cmd(&["sessions", "review", &id, "--reject", "--revert", "--json"]), "the question as JSON");
    let asked: serde_json::Value = serde_json::from_slice(json.stdout.split(|b| *b == b'\n').find(|l| !l.is_empty()).unwrap()).unwrap();
    assert_eq!(asked["no_file"], json!(["notes.txt"]), "a front end can tell it apart: {asked}");
    assert!(std::fs::symlink_metadata(ws.join("notes.txt")).is_ok_and(|m| m.file_type().is_fifo()), "{said}");
    assert!(ws.join("new.txt").exists(), "nothing is touched before the answer: {said}");
    let forced = within_a_minute(cli.cmd(&["sessions", "review", &id, "--reject", "--revert", "--force-revert"]), "the forced revert");
    let said = String::from_utf8_lossy(&forced.stderr).to_string();
    assert_eq!(forced.status.code(), Some(3), "{said}");
    // Read only once it is a file: reading the pipe would wait for ever.
    assert!(std::fs::symlink_metadata(ws.join("notes.txt")).is_ok_and(|m| m.is_file()), "a file again, not the pipe: {said}");
    assert_eq!(std::fs::read_to_string(ws.join("notes.txt")).unwrap(), "the person's notes\n", "the person's file is back: {said}");
    assert!(!ws.join("new.txt").exists(), "the task's file is undone: {said}");
    assert!(std::fs::symlink_metadata(ws.join("newpipe")).is_ok(), "the pipe no snapshot recorded is left: {said}");
}

/// In a repository the task's worktree holds the pipe: approving lands the file's deletion the
/// review showed, and the worktree is removed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_that_left_a_named_pipe_in_its_worktree_lands_as_its_review_showed() {
    let made = "echo new > new.txt && mkfifo newpipe && rm notes.txt && mkfifo notes.txt && echo made";
    let command = json!({"name": "run_command", "arguments": {"command": made}});
    let (_s, dir, cli) = server(vec![calls_then_done("make pipes", vec![command], "made")]).await;
    let r = person_repo(dir.path(), &[("notes.txt", "the person's notes\n")]);
    let task = within_a_minute(cli.run_cmd("make pipes", &r, &["--allow", "run_command", "--review", "approve"]), "the task");
    assert_eq!(task.status.code(), Some(0), "approved and landed: {}", String::from_utf8_lossy(&task.stderr));
    assert_eq!(reviewed(&task), vec!["new.txt", "notes.txt"]);
    assert_eq!(git(&r, &["show", "--name-status", "--format=", "main"]), "A\tnew.txt\nD\tnotes.txt", "one commit, as reviewed");
    assert!(!r.join("notes.txt").exists() && r.join("new.txt").exists(), "the person's checkout has it");
    assert_eq!(git(&r, &["worktree", "list", "--porcelain"]).matches("worktree ").count(), 1, "no worktree is left");
}

/// A task whose folder could not be recorded (here the checkpoint store cannot be made) changed
/// files nobody can tell from the person's: a revert is refused, saying why and what to do,
/// rather than report "nothing needed undoing" and leave its changes in place unsaid.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revert_of_work_done_while_the_folder_could_not_be_recorded_is_refused_and_says_why() {
    let (_s, dir, cli) = server(vec![writes("a.txt", "a\n", 0)]).await;
    let ws = dir.path().join("plain");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(&cli.data).unwrap();
    std::fs::write(cli.data.join("checkpoints"), "not a folder").unwrap();
    let task = cli.run("write a.txt", &ws, &[]);
    assert_eq!(task.status.code(), Some(6), "{}", String::from_utf8_lossy(&task.stderr));
    let id = session_of(&task);
    let rejected = cli.review(&id, &["--reject", "--revert"]);
    let said = String::from_utf8_lossy(&rejected.stderr).to_string();
    assert_ne!(rejected.status.code(), Some(3), "not rejected: {said}");
    assert!(said.contains("could not be recorded"), "it says why: {said}");
    assert!(said.contains("reject without undoing"), "and what can be done: {said}");
    assert_eq!(std::fs::read_to_string(ws.join("a.txt")).unwrap(), "a\n", "nothing was touched");
    // The store can be made now (the disk was freed): the task's work is still not known.
    std::fs::remove_file(cli.data.join("checkpoints")).unwrap();
    let again = cli.review(&id, &["--reject", "--revert"]);
    let said = String::from_utf8_lossy(&again.stderr).to_string();
    assert!(said.contains("could not be recorded") && again.status.code() != Some(3), "never \"nothing needed undoing\": {said}");
    assert_eq!(std::fs::read_to_string(ws.join("a.txt")).unwrap(), "a\n");
    let plain = cli.review(&id, &["--reject"]);
    assert_eq!(plain.status.code(), Some(3), "a reject without undoing still works: {}", String::from_utf8_lossy(&plain.stderr));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follow_up_in_a_plain_folder_reviews_and_reverts_only_its_own_changes() {
    let (_s, dir, cli) = server(vec![writes("a.txt", "a\n", 0), writes("c.txt", "c\n", 0)]).await;
    let ws = dir.path().join("plain");
    std::fs::create_dir_all(&ws).unwrap();
    let first = cli.run("write a.txt", &ws, &["--review", "approve"]);
    assert_eq!(first.status.code(), Some(0));
    let id = session_of(&first);
    let follow = cli.cmd(&["sessions", "resume", &id, "now write c.txt", "--base-url", &cli.url, "--model", "m", "--json"]).output().unwrap();
    assert_eq!(follow.status.code(), Some(6), "the follow-up waits for review: {}", String::from_utf8_lossy(&follow.stderr));
    assert_eq!(reviewed(&follow), vec!["c.txt"], "the follow-up's review lists only what it changed, not a.txt again");
    let rejected = cli.review(&id, &["--reject", "--revert"]);
    assert_eq!(rejected.status.code(), Some(3));
    assert!(!ws.join("c.txt").exists(), "the follow-up's file is undone");
    assert_eq!(std::fs::read_to_string(ws.join("a.txt")).unwrap(), "a\n", "the approved first run's file is untouched");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_tasks_side_by_side_in_a_plain_folder_reject_one_and_the_others_approved_file_stays() {
    let (_s, dir, cli) = server(vec![writes("slow.txt", "slow\n", 4000), writes("fast.txt", "fast\n", 0)]).await;
    let ws = dir.path().join("plain");
    std::fs::create_dir_all(&ws).unwrap();
    let slow = cli.spawn("write slow.txt", &ws, &[]);
    wait_until_asked(&_s, "write slow.txt");
    let refused = cli.run("write fast.txt", &ws, &["--when-busy", "fail"]);
    assert_eq!(refused.status.code(), Some(4), "with --when-busy fail a busy folder is refused");
    assert_eq!(error_code(&refused), "workspace_busy", "a script tells a busy folder it may retry from a failure");
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(said.contains("write slow.txt"), "the message names the task working there: {said}");
    assert!(
        said.contains("--when-busy run") && said.contains("--when-busy queue") && !said.contains("or cancel"),
        "and the flags that answer, not the window's buttons: {said}"
    );
    let fast = cli.run("write fast.txt", &ws, &["--when-busy", "run", "--review", "approve"]);
    assert_eq!(fast.status.code(), Some(0));
    assert_eq!(reviewed(&fast), vec!["fast.txt"]);
    let slow = slow.wait_with_output().unwrap();
    assert_eq!(reviewed(&slow), vec!["slow.txt"], "the slow task's review does not claim the fast task's file");
    let rejected = cli.review(&session_of(&slow), &["--reject", "--revert"]);
    assert_eq!(rejected.status.code(), Some(3));
    assert!(!ws.join("slow.txt").exists());
    assert_eq!(std::fs::read_to_string(ws.join("fast.txt")).unwrap(), "fast\n", "rejecting one task never deletes another task's approved file");
}

/// `--land` for a task in a plain folder had nothing to do and said nothing: the person waited
/// for a landing that never comes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn land_for_a_task_in_a_plain_folder_says_there_is_nothing_to_land() {
    let (_s, dir, cli) = server(vec![writes("a.txt", "a\n", 0)]).await;
    let ws = dir.path().join("plain");
    std::fs::create_dir_all(&ws).unwrap();
    let out = cli.run("write a.txt", &ws, &["--land", "squash", "--review", "approve"]);
    let said = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(said.contains("--land has nothing to land here") && said.contains("not a git repository"), "{said}");
    assert_eq!(std::fs::read_to_string(ws.join("a.txt")).unwrap(), "a\n");
}

/// A task at work in a folder and one started in a folder inside it write the same files by
/// other paths: the second asks first, as in the same folder, and run all the same, rejecting
/// the outer one never deletes the inner one's approved file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_in_a_subfolder_of_one_at_work_asks_first_and_keeps_its_approved_file_when_the_outer_one_is_rejected() {
    let (_s, dir, cli) = server(vec![writes("slow.txt", "slow\n", 4000), writes("fast.txt", "fast\n", 0)]).await;
    let ws = dir.path().join("plain");
    std::fs::create_dir_all(ws.join("sub")).unwrap();
    let slow = cli.spawn("write slow.txt", &ws, &[]);
    wait_until_asked(&_s, "write slow.txt");
    let refused = cli.run("write fast.txt", &ws.join("sub"), &["--when-busy", "fail"]);
    let said = String::from_utf8_lossy(&refused.stderr).to_string();
    assert_eq!(error_code(&refused), "workspace_busy", "a folder inside one at work is busy too: {said}");
    assert!(said.contains(&format!("is working in {} right now", ws.canonicalize().unwrap().display())), "naming the folder it works in: {said}");
    let fast = cli.run("write fast.txt", &ws.join("sub"), &["--when-busy", "run", "--review", "approve"]);
    assert_eq!(fast.status.code(), Some(0), "{}", String::from_utf8_lossy(&fast.stderr));
    let slow = slow.wait_with_output().unwrap();
    assert_eq!(reviewed(&slow), vec!["slow.txt"], "the outer task's review does not claim the inner task's file");
    let rejected = cli.review(&session_of(&slow), &["--reject", "--revert"]);
    assert_eq!(rejected.status.code(), Some(3), "{}", String::from_utf8_lossy(&rejected.stderr));
    assert!(!ws.join("slow.txt").exists());
    assert_eq!(std::fs::read_to_string(ws.join("sub/fast.txt")).unwrap(), "fast\n", "rejecting one task never deletes another task's approved file");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_tasks_run_at_once_in_a_plain_folder_each_own_only_their_file_even_when_they_write_at_the_same_moment() {
    let (_s, dir, cli) = server(vec![writes("u.txt", "u\n", 400), writes("v.txt", "v\n", 400)]).await;
    let ws = dir.path().join("plain");
    std::fs::create_dir_all(&ws).unwrap();
    for round in 0..3 {
        let _ = std::fs::remove_file(ws.join("u.txt"));
        let _ = std::fs::remove_file(ws.join("v.txt"));
        let u = cli.spawn("write u.txt", &ws, &["--when-busy", "run"]);
        let v = cli.spawn("write v.txt", &ws, &["--when-busy", "run"]);
        let (u, v) = (u.wait_with_output().unwrap(), v.wait_with_output().unwrap());
        assert_eq!(reviewed(&u), vec!["u.txt"], "round {round}: {}", String::from_utf8_lossy(&u.stderr));
        assert_eq!(reviewed(&v), vec!["v.txt"], "round {round}: the other task's file is not this one's");
        assert_eq!(cli.review(&session_of(&v), &["--reject", "--revert"]).status.code(), Some(3));
        assert!(!ws.join("v.txt").exists());
        assert_eq!(std::fs::read_to_string(ws.join("u.txt")).unwrap(), "u\n", "round {round}: rejecting one never deletes the other's file");
        assert_eq!(cli.review(&session_of(&u), &["--approve"]).status.code(), Some(0));
    }
}

/// In a plain folder holding the person's shared.txt, "alpha task" wrote a.txt and shared.txt,
/// then "beta task" wrote b.txt and shared.txt; both wait for review. The folder and their ids.
async fn alpha_then_beta_wrote_shared_txt() -> (FakeServer, tempfile::TempDir, Cli, PathBuf, String, String) {
    let (s, dir, cli) = server(vec![
        calls_then_done("alpha task", vec![write_call("a.txt", "a\n"), write_call("shared.txt", "shared by alpha\n")], "shared.txt"),
        calls_then_done("beta task", vec![write_call("b.txt", "b\n"), write_call("shared.txt", "shared by beta\n")], "shared.txt"),
    ])
    .await;
    let ws = dir.path().join("plain");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("shared.txt"), "the person's\n").unwrap();
    let alpha = cli.run("alpha task", &ws, &[]);
    assert_eq!(alpha.status.code(), Some(6), "{}", String::from_utf8_lossy(&alpha.stderr));
    let beta = cli.run("beta task", &ws, &[]);
    assert_eq!(beta.status.code(), Some(6), "{}", String::from_utf8_lossy(&beta.stderr));
    let (alpha, beta) = (session_of(&alpha), session_of(&beta));
    (s, dir, cli, ws, alpha, beta)
}

/// Two tasks in one plain folder both changed shared.txt, one after the other. Rejecting the first
/// with revert asks before undoing a file the second changed too, naming that task (not
/// "someone", not "your version"), and `--keep-changed` reverts the rest while keeping it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revert_stopped_by_another_tasks_change_names_that_task_and_can_keep_its_file() {
    let (_s, _dir, cli, ws, alpha, beta) = alpha_then_beta_wrote_shared_txt().await;
    let asked = cli.review(&alpha, &["--reject", "--revert"]);
    let said = String::from_utf8_lossy(&asked.stderr).to_string();
    assert_eq!(asked.status.code(), Some(6), "{said}");
    assert!(said.contains("shared.txt") && said.contains("“beta task”") && said.contains(&beta[..12]), "the other task is named, with its id: {said}");
    assert!(!said.contains("someone (you") && !said.contains("your version"), "not told as the person's own edit: {said}");
    assert!(said.contains("--keep-changed"), "the way to revert the rest is offered: {said}");
    assert_eq!(std::fs::read_to_string(ws.join("shared.txt")).unwrap(), "shared by beta\n", "nothing is undone yet");
    let kept = cli.review(&alpha, &["--reject", "--revert", "--keep-changed"]);
    let said = String::from_utf8_lossy(&kept.stderr).to_string();
    assert_eq!(kept.status.code(), Some(3), "{said}");
    assert!(!ws.join("a.txt").exists(), "the rejected task's own file is undone: {said}");
    assert_eq!(std::fs::read_to_string(ws.join("shared.txt")).unwrap(), "shared by beta\n", "the other task's work stays: {said}");
    assert_eq!(std::fs::read_to_string(ws.join("b.txt")).unwrap(), "b\n");
}

/// A review an older version recorded (its files without the contents runs own them by) reverts
/// between the run's snapshots: `--keep-changed` there too puts back the rest and keeps the file
/// edited since, instead of asking the same question again and again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_older_versions_review_can_revert_the_rest_and_keep_a_file_edited_since() {
    let calls = vec![write_call("a.txt", "task a\n"), write_call("b.txt", "task b\n")];
    let (_s, dir, cli) = server(vec![calls_then_done("write both files", calls, "b.txt")]).await;
    let ws = dir.path().join("plain");
    std::fs::create_dir_all(&ws).unwrap();
    let waiting = cli.run("write both files", &ws, &[]);
    assert_eq!(waiting.status.code(), Some(6), "{}", String::from_utf8_lossy(&waiting.stderr));
    let id = session_of(&waiting);
    recorded_by_an_older_version(&cli.data, &id);
    std::fs::write(ws.join("a.txt"), "the person's a\n").unwrap();
    let asked = cli.review(&id, &["--reject", "--revert"]);
    let said = String::from_utf8_lossy(&asked.stderr).to_string();
    assert_eq!(asked.status.code(), Some(6), "{said}");
    assert!(said.contains("a.txt") && said.contains("--keep-changed"), "{said}");
    let kept = cli.review(&id, &["--reject", "--revert", "--keep-changed"]);
    let said = String::from_utf8_lossy(&kept.stderr).to_string();
    assert_eq!(kept.status.code(), Some(3), "rejected, not asked again: {said}");
    assert!(!ws.join("b.txt").exists(), "the rest is put back: {said}");
    assert_eq!(std::fs::read_to_string(ws.join("a.txt")).unwrap(), "the person's a\n", "the file edited since is kept: {said}");
}

/// Told to overwrite, an older version's revert keeps a copy of the person's version first, and
/// does not name the file it overwrote as one left as it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_older_versions_review_overwritten_at_the_persons_word_keeps_a_copy_first() {
    let calls = vec![write_call("a.txt", "task a\n"), write_call("b.txt", "task b\n")];
    let (_s, dir, cli) = server(vec![calls_then_done("write both files", calls, "b.txt")]).await;
    let ws = dir.path().join("plain");
    std::fs::create_dir_all(&ws).unwrap();
    let waiting = cli.run("write both files", &ws, &[]);
    let id = session_of(&waiting);
    recorded_by_an_older_version(&cli.data, &id);
    std::fs::write(ws.join("a.txt"), "the person's a\n").unwrap();
    let forced = cli.review(&id, &["--reject", "--revert", "--force-revert"]);
    let said = String::from_utf8_lossy(&forced.stderr).to_string();
    assert_eq!(forced.status.code(), Some(3), "{said}");
    assert!(!ws.join("a.txt").exists() && !ws.join("b.txt").exists(), "both put back (the task made them): {said}");
    assert_eq!(std::fs::read_to_string(cli.data.join("overwritten").join(&id).join("a.txt")).unwrap(), "the person's a\n", "their version is kept");
    let shown = cli.cmd(&["sessions", "show", &id]).output().unwrap();
    let history = String::from_utf8_lossy(&shown.stdout).to_string();
    assert!(!history.contains("a.txt was not overwritten") && !history.to_lowercase().contains("left as"), "not told as kept: {history}");
}

/// Strips the session's reviewed files of what runs own them by, as reviews were recorded before.
fn recorded_by_an_older_version(data: &Path, id: &str) {
    let db = rusqlite::Connection::open(data.join("history.db")).unwrap();
    let rows: Vec<(i64, String)> = db
        .prepare("SELECT seq, body FROM events WHERE session_id = ?1 AND type = 'review_requested'")
        .unwrap()
        .query_map([id], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert!(!rows.is_empty(), "a review to rewrite");
    for (seq, body) in rows {
        let mut v: Value = serde_json::from_str(&body).unwrap();
        for f in v["files_changed"].as_array_mut().expect("files").iter_mut() {
            let f = f.as_object_mut().unwrap();
            assert!(f.remove("before").is_some() && f.remove("after").is_some(), "a file as runs own it: {f:?}");
        }
        db.execute("UPDATE events SET body = ?1 WHERE session_id = ?2 AND seq = ?3", rusqlite::params![v.to_string(), id, seq]).unwrap();
    }
}

/// Approving a task in a plain folder whose files are no longer as it left them (another task
/// wrote one since, the person edited another) says so with the approval: the person approved a
/// diff that is not what the folder holds, and nothing else would tell them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approving_a_task_whose_files_changed_since_in_a_plain_folder_says_which_and_by_whom() {
    let (_s, _dir, cli, ws, alpha, beta) = alpha_then_beta_wrote_shared_txt().await;
    std::fs::write(ws.join("a.txt"), "my own a\n").unwrap();
    let approved = cli.review(&alpha, &["--approve"]);
    let said = String::from_utf8_lossy(&approved.stderr).to_string();
    assert_eq!(approved.status.code(), Some(0), "{said}");
    assert!(said.contains("Approved."), "{said}");
    assert!(said.contains("shared.txt (changed by “beta task”"), "another task's change is named with its task: {said}");
    assert!(said.contains("a.txt (changed by you, or a command)"), "and the person's own: {said}");
    assert_eq!(std::fs::read_to_string(ws.join("shared.txt")).unwrap(), "shared by beta\n", "an approval changes no file");
    let unchanged = cli.review(&beta, &["--approve"]);
    let said = String::from_utf8_lossy(&unchanged.stderr).to_string();
    assert!(!said.contains("not as the task left"), "a task whose files are as it left them is approved with no such word: {said}");
}

/// A second task in a plain folder where another task's changes wait for review asks first (the
/// window's question; `--when-busy fail` here), and started all the same it says it shares the
/// folder with that task, so a later overlap in a file comes as no surprise.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_task_where_another_waits_for_review_in_a_plain_folder_asks_first_and_says_so_when_started() {
    let (_s, dir, cli) = server(vec![writes("a.txt", "a\n", 0), writes("b.txt", "b\n", 0)]).await;
    let ws = dir.path().join("plain");
    std::fs::create_dir_all(&ws).unwrap();
    let first = cli.run("write a.txt", &ws, &[]);
    assert_eq!(first.status.code(), Some(6), "{}", String::from_utf8_lossy(&first.stderr));
    let waiting = session_of(&first);
    let refused = cli.run("write b.txt", &ws, &["--when-busy", "fail"]);
    let said = String::from_utf8_lossy(&refused.stderr).to_string();
    assert_eq!(refused.status.code(), Some(4), "{said}");
    assert_eq!(error_code(&refused), "workspace_undecided", "the JSON line carries the window's code");
    assert!(said.contains("“write a.txt”") && said.contains(&waiting) && said.contains("waits for your review"), "the waiting task is named: {said}");
    assert!(said.contains("--when-busy run") && said.contains(&format!("sessions review {waiting}")), "with the ways on: {said}");
    assert!(!ws.join("b.txt").exists(), "nothing ran");
    let mut started = cli.run_cmd("write b.txt", &ws, &[]);
    let started = started.args(["--review", "reject"]).output().unwrap();
    let said = String::from_utf8_lossy(&started.stderr).to_string();
    assert!(said.contains("shares this folder with “write a.txt”") && said.contains(&waiting), "started, it says whom it shares the folder with: {said}");
    assert_eq!(reviewed(&started), vec!["b.txt"], "and its review is its own");
}

/// A task waiting for review in a folder inside this one writes the same files by other paths:
/// a second task around it asks first too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_waiting_for_review_in_a_subfolder_is_asked_about_too() {
    let (_s, dir, cli) = server(vec![writes("a.txt", "a\n", 0), writes("b.txt", "b\n", 0)]).await;
    let ws = dir.path().join("plain");
    std::fs::create_dir_all(ws.join("sub")).unwrap();
    let first = cli.run("write a.txt", &ws.join("sub"), &[]);
    assert_eq!(first.status.code(), Some(6), "{}", String::from_utf8_lossy(&first.stderr));
    let refused = cli.run("write b.txt", &ws, &["--when-busy", "fail"]);
    let said = String::from_utf8_lossy(&refused.stderr).to_string();
    assert_eq!(refused.status.code(), Some(4), "{said}");
    assert!(said.contains("“write a.txt”") && said.contains(&session_of(&first)), "{said}");
}

/// A task that waits its turn in a plain folder says why once, with its status.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_waiting_its_turn_says_why_once() {
    let (_s, dir, cli) = server(vec![writes("slow.txt", "slow\n", 3000), writes("fast.txt", "fast\n", 0)]).await;
    let ws = dir.path().join("plain");
    std::fs::create_dir_all(&ws).unwrap();
    let slow = cli.spawn("write slow.txt", &ws, &["--review", "approve"]);
    wait_until_asked(&_s, "write slow.txt");
    let w = ws.to_string_lossy().to_string();
    let fast = cli.cmd(&["run", "write fast.txt", "--workspace", &w, "--base-url", &cli.url, "--model", "m", "--review", "approve"]).output().unwrap();
    slow.wait_with_output().unwrap();
    let shown = String::from_utf8_lossy(&fast.stdout).to_string();
    assert_eq!(fast.status.code(), Some(0), "{shown}");
    assert_eq!(shown.matches("its turn in this folder").count(), 1, "{shown}");
    assert!(shown.contains("● queued: its turn in this folder: “write slow.txt” is working in it"), "{shown}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_task_in_a_busy_plain_folder_queues_by_default_and_starts_when_the_first_ends() {
    let (_s, dir, cli) = server(vec![writes("slow.txt", "slow\n", 4000), writes("fast.txt", "fast\n", 0)]).await;
    let ws = dir.path().join("plain");
    std::fs::create_dir_all(&ws).unwrap();
    let slow = cli.spawn("write slow.txt", &ws, &["--review", "approve"]);
    wait_until_asked(&_s, "write slow.txt");
    let fast = cli.run("write fast.txt", &ws, &["--review", "approve"]);
    let slow = slow.wait_with_output().unwrap();
    assert_eq!(fast.status.code(), Some(0));
    let statuses: Vec<String> = lines(&fast).iter().filter(|e| e["type"] == "status_changed").map(|e| e["status"].as_str().unwrap().to_string()).collect();
    assert_eq!(statuses.first().map(String::as_str), Some("busy"));
    assert!(statuses.iter().any(|s| s == "queued"), "the second task waited, visibly queued: {statuses:?}");
    let slow_done = lines(&slow).iter().find(|e| e["type"] == "run_finished").map(|e| e["at"].as_str().unwrap().to_string()).unwrap();
    let fast_first_tool = lines(&fast).iter().find(|e| e["type"] == "tool_call").map(|e| e["at"].as_str().unwrap().to_string()).unwrap();
    assert!(fast_first_tool >= slow_done, "the queued task touched nothing before the first ended ({fast_first_tool} vs {slow_done})");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn landing_stops_without_overwriting_when_the_person_edits_a_file_the_task_changed() {
    let (_s, dir, cli) = server(vec![writes("README.md", "the task's readme\n", 0)]).await;
    let r = repo(dir.path());
    let run = cli.run("write README.md", &r, &["--review", "approve"]);
    assert_eq!(run.status.code(), Some(6), "approved, but it cannot land over the person's edit: it waits for them");
    let blocked = lines(&run).into_iter().find(|e| e["type"] == "landing_blocked").expect("the landing says why it stopped");
    assert_eq!(blocked["reason"], "your_edits");
    assert_eq!(blocked["files"], json!(["README.md"]));
    assert_eq!(std::fs::read_to_string(r.join("README.md")).unwrap(), "hello\nmy own edit, not committed\n", "nothing of the person's is overwritten");
    assert_eq!(git(&r, &["rev-list", "--count", "main"]), "1", "nothing landed");
    let id = session_of(&run);
    let keep = format!("`finishline sessions review {id} --approve --data-dir {} --land branch`", cli.data.display());
    assert!(String::from_utf8_lossy(&run.stderr).contains(&keep), "it says how to keep the branch instead: {}", String::from_utf8_lossy(&run.stderr));
    let again = cli.review(&id, &["--approve"]);
    assert_eq!(again.status.code(), Some(6), "approved again over the same edit, it still waits: {}", String::from_utf8_lossy(&again.stderr));
    assert!(String::from_utf8_lossy(&again.stderr).contains(&keep), "and says so again: {}", String::from_utf8_lossy(&again.stderr));
    // The person keeps the task's branch for later instead, as the message says.
    let kept = cli.review(&id, &["--approve", "--land", "branch"]);
    assert_eq!(kept.status.code(), Some(0), "{}", String::from_utf8_lossy(&kept.stderr));
    let branch = git(&r, &["branch", "--list", "finishline/*", "--format=%(refname:short)"]);
    assert!(branch.starts_with("finishline/"), "the task's branch is kept");
    assert_eq!(git(&r, &["show", &format!("{branch}:README.md")]), "the task's readme");
    assert_eq!(git(&r, &["worktree", "list", "--porcelain"]).matches("worktree ").count(), 1, "its worktree is gone");
    assert!(String::from_utf8_lossy(&kept.stderr).contains("its worktree is removed"), "{}", String::from_utf8_lossy(&kept.stderr));
    let md = String::from_utf8_lossy(&cli.cmd(&["sessions", "show", &id]).output().unwrap().stdout).to_string();
    assert!(md.contains(&format!("**Branch kept:** {branch}, for later; nothing landed")), "its story says where its work is: {md}");
}

/// A file the person deleted and has not committed the deletion of is an edit of theirs too: the
/// task's change to it does not bring it back behind their back (git's own checkout update would).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn landing_stops_without_bringing_back_a_file_the_person_deleted_and_the_task_changed() {
    let (_s, dir, cli) = server(vec![writes("README.md", "the task's readme\n", 0)]).await;
    let r = repo(dir.path());
    std::fs::remove_file(r.join("README.md")).unwrap();
    let run = cli.run("write README.md", &r, &["--review", "approve"]);
    assert_eq!(run.status.code(), Some(6), "approved, but it cannot land over the person's deletion: {}", String::from_utf8_lossy(&run.stderr));
    let blocked = lines(&run).into_iter().find(|e| e["type"] == "landing_blocked").expect("the landing says why it stopped");
    assert_eq!(blocked["reason"], "your_edits");
    assert_eq!(blocked["files"], json!(["README.md"]));
    assert!(!r.join("README.md").exists(), "the person's deletion stands");
    assert_eq!(git(&r, &["rev-list", "--count", "main"]), "1", "nothing landed");
}

/// Approve rebased the task onto the person's moved branch, then stopped at their uncommitted
/// edit; rejected then, the branch goes as promised: the rebase moved only the task's own
/// commits, nothing changed after the review (it was kept, "holding what changed after the
/// review", with nothing in the app pointing to it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rejected_after_a_blocked_landing_rebased_it_the_tasks_branch_is_deleted_as_promised() {
    let (_s, dir, cli) = server(vec![writes("README.md", "the task's readme\n", 0)]).await;
    let r = repo(dir.path());
    let run = cli.run("write README.md", &r, &[]);
    assert_eq!(run.status.code(), Some(6), "it waits for review");
    let id = session_of(&run);
    std::fs::write(r.join("moved.txt"), "moved\n").unwrap();
    git(&r, &["add", "moved.txt"]);
    git(&r, &["commit", "-q", "-m", "the person's own commit"]);
    let approved = cli.review(&id, &["--approve"]);
    assert_eq!(approved.status.code(), Some(6), "blocked by the person's edit: {}", String::from_utf8_lossy(&approved.stderr));
    assert!(stored(&cli.data, &id).iter().any(|e| matches!(e, finishline_engine::event::EngineEvent::Rebased { .. })), "the landing rebased it first");
    let rejected = cli.review(&id, &["--reject"]);
    let said = String::from_utf8_lossy(&rejected.stderr).to_string();
    assert_eq!(rejected.status.code(), Some(3), "rejected: {said}");
    assert!(!said.contains("kept the branch"), "{said}");
    assert_eq!(git(&r, &["branch", "--list", "finishline/*"]), "", "its branch is deleted: {said}");
    assert_eq!(git(&r, &["worktree", "list", "--porcelain"]).matches("worktree ").count(), 1, "its worktree is gone");
    assert_eq!(std::fs::read_to_string(r.join("README.md")).unwrap(), "hello\nmy own edit, not committed\n", "the person's edit is as it was");
}

/// A repository whose `.gitignore` hides the person's `local.json`, and a task ("track the
/// config") that un-ignores it and writes its own.
async fn unignoring_task() -> (FakeServer, tempfile::TempDir, Cli, PathBuf) {
    let rules = vec![
        json!({"when": {"kind": "agent", "last_message_contains": "Created local.json"}, "reply": {"text": "Done! The config is tracked now."}}),
        json!({"when": {"kind": "agent", "last_message_contains": "track the config"}, "reply": {"text": "Tracking it.", "tool_calls": [
            {"name": "write_file", "arguments": {"path": ".gitignore", "content": ".env\n"}},
            {"name": "write_file", "arguments": {"path": "local.json", "content": "{\"from\": \"the task\"}\n"}}
        ]}}),
    ];
    let (server, dir, cli) = server(vec![rules]).await;
    let r = repo(dir.path());
    std::fs::write(r.join(".gitignore"), ".env\nlocal.json\n").unwrap();
    git(&r, &["commit", "-q", "-m", "ignore the local config", "--", ".gitignore"]);
    std::fs::write(r.join("local.json"), "{\"token\": \"the person's own\"}\n").unwrap();
    (server, dir, cli, r)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_that_unignores_a_local_file_and_adds_its_own_never_lands_over_the_persons() {
    let (_s, _dir, cli, r) = unignoring_task().await;
    let run = cli.run("track the config", &r, &["--review", "approve"]);
    assert_eq!(
        run.status.code(),
        Some(6),
        "approved, but it cannot land over the person's file: it waits for them: {}",
        String::from_utf8_lossy(&run.stdout).lines().filter(|l| !l.contains("text_delta")).collect::<Vec<_>>().join("\n")
    );
    let blocked = lines(&run).into_iter().find(|e| e["type"] == "landing_blocked").expect("the landing says why it stopped");
    assert_eq!((blocked["reason"].as_str(), &blocked["files"]), (Some("your_ignored_files"), &json!(["local.json"])));
    assert!(blocked["detail"].as_str().unwrap().contains("your .gitignore hides"), "it says which of their files is in the way: {blocked}");
    assert_eq!(std::fs::read_to_string(r.join("local.json")).unwrap(), "{\"token\": \"the person's own\"}\n", "their ignored file is untouched");
    assert_eq!(git(&r, &["log", "-1", "--format=%s", "main"]), "ignore the local config", "nothing landed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_lands_on_its_branch_while_the_person_works_on_another_and_their_checkout_is_left_alone() {
    let (_s, dir, cli) = server(vec![writes("README.md", "the task's readme\n", 0)]).await;
    let r = repo(dir.path());
    let run = cli.run("write README.md", &r, &[]);
    assert_eq!(run.status.code(), Some(6), "it waits for review");
    // Meanwhile the person moved to a branch of their own, their uncommitted edit with them.
    git(&r, &["switch", "-q", "-c", "feature"]);
    let approved = cli.review(&session_of(&run), &["--approve"]);
    assert_eq!(approved.status.code(), Some(0), "their edit is not in the way of a branch they are not on: {}", String::from_utf8_lossy(&approved.stderr));
    assert_eq!(git(&r, &["show", "main:README.md"]), "the task's readme", "the task landed on main");
    assert_eq!(git(&r, &["rev-list", "--count", "main"]), "2");
    assert_eq!(git(&r, &["branch", "--show-current"]), "feature", "the person is where they were");
    assert_eq!(std::fs::read_to_string(r.join("README.md")).unwrap(), "hello\nmy own edit, not committed\n", "with their edit as it was");
    // Looking at their folder they see no change: they are told why, and how to see it.
    let said = String::from_utf8_lossy(&approved.stderr);
    assert!(said.contains("Your checkout is on feature, so its files did not change: `git switch main` shows the task's work."), "{said}");
    let shown = cli.cmd(&["sessions", "show", &session_of(&run), "--json"]).output().unwrap();
    let shown: Value = serde_json::from_slice(&shown.stdout).unwrap();
    let landed = shown["transcript"].as_array().unwrap().iter().find(|e| e["kind"] == "landed").cloned().expect("the landing is in the history");
    assert_eq!(landed["checkout_elsewhere"], json!({"branch": "feature"}), "{landed}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_branch_that_moved_during_the_task_is_rebased_onto_and_verified_again_before_landing() {
    let (_s, dir, cli) = server(vec![writes("notes.md", "notes\n", 3000)]).await;
    let r = repo(dir.path());
    let task = cli.spawn("write notes.md", &r, &["--review", "approve", "--verify", "test -f notes.md"]);
    // Once the task works in its worktree (made from main as it was), the person commits on main.
    wait_until_asked(&_s, "write notes.md");
    std::fs::write(r.join("moved.txt"), "moved\n").unwrap();
    git(&r, &["add", "moved.txt"]);
    git(&r, &["commit", "-q", "-m", "the person's own commit"]);
    let out = task.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "it lands: {}", String::from_utf8_lossy(&out.stderr));
    let events = lines(&out);
    assert!(events.iter().any(|e| e["type"] == "rebased"), "the task's commits were moved onto the moved branch");
    let rebased_at = events.iter().position(|e| e["type"] == "rebased").unwrap();
    assert!(events[rebased_at..].iter().any(|e| e["type"] == "verification"), "and verified again before landing");
    let log: Vec<String> = git(&r, &["log", "--format=%s", "main"]).lines().map(String::from).collect();
    assert_eq!(log, vec!["write notes.md", "the person's own commit", "init"], "the task lands on top of the person's commit");
    assert!(r.join("notes.md").exists() && r.join("moved.txt").exists());
}

/// Approved later from a terminal, a landing onto a branch that moved is not silence: the rebase
/// and each check run again are said as they happen, before the landing's own line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approving_from_a_terminal_says_the_rebase_and_the_checks_it_runs_again() {
    let (_s, dir, cli) = server(vec![writes("notes.md", "notes\n", 0)]).await;
    let r = repo(dir.path());
    let waiting = cli.run("write notes.md", &r, &["--verify", "test -f notes.md"]);
    let id = session_of(&waiting);
    std::fs::write(r.join("moved.txt"), "moved\n").unwrap();
    git(&r, &["add", "moved.txt"]);
    git(&r, &["commit", "-q", "-m", "the person's own commit"]);
    // Both streams into one file, in the order they were written.
    let both = dir.path().join("said.txt");
    let file = std::fs::File::create(&both).unwrap();
    let approved = cli.cmd(&["sessions", "review", &id, "--approve"]).stdout(file.try_clone().unwrap()).stderr(file).status().unwrap();
    let said = std::fs::read_to_string(&both).unwrap();
    assert_eq!(approved.code(), Some(0), "{said}");
    let rebased = said.find("the branch moved on: the task's commits now sit on").unwrap_or_else(|| panic!("the rebase is said: {said}"));
    let checked = said.find("✓ verify `test -f notes.md`: exit 0").unwrap_or_else(|| panic!("and the check run again: {said}"));
    let landed = said.find("Landed on main").unwrap_or_else(|| panic!("{said}"));
    assert!(rebased < checked && checked < landed, "in the order they happened: {said}");
}

/// A check that fails once the task sits on the moved branch keeps it from landing, and the way
/// forward says one verb for one command: the agent fixes it (`--resolve`), or the branch is kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_check_failing_on_the_moved_branch_names_the_command_that_lets_the_agent_fix_it() {
    let (_s, dir, cli) = server(vec![writes("notes.md", "notes\n", 0)]).await;
    let r = repo(dir.path());
    let id = session_of(&cli.run("write notes.md", &r, &["--verify", "! test -f broken.txt"]));
    std::fs::write(r.join("broken.txt"), "broken\n").unwrap();
    git(&r, &["add", "broken.txt"]);
    git(&r, &["commit", "-q", "-m", "the person's commit that breaks the check"]);
    let approved = cli.cmd(&["sessions", "review", &id, "--approve"]).output().unwrap();
    let said = String::from_utf8_lossy(&approved.stdout).to_string() + &String::from_utf8_lossy(&approved.stderr);
    assert_eq!(approved.status.code(), Some(6), "{said}");
    assert!(said.contains("fails (exit 1): let the agent fix it, or keep the branch"), "{said}");
    assert!(!said.contains("Request changes"), "no verb the terminal has no command for: {said}");
    assert_eq!(git(&r, &["log", "-1", "--format=%s", "main"]), "the person's commit that breaks the check", "nothing landed");
    assert!(said.contains("to let the agent fix it: `finishline sessions review"), "{said}");
    let folder = stored(&cli.data, &id)
        .iter()
        .find_map(|e| if let finishline_engine::event::EngineEvent::TaskWorkspace { worktree: Some(wt), .. } = e { Some(wt.work_dir()) } else { None })
        .unwrap();
    assert!(said.contains(&format!("Or mend it by hand in the task's worktree, {}, and approve again.", folder.display())), "{said}");
    // Mended there by hand (the check passes again), approve lands it.
    git(&folder, &["rm", "-q", "broken.txt"]);
    let landed = cli.cmd(&["sessions", "review", &id, "--approve"]).output().unwrap();
    assert_eq!(landed.status.code(), Some(0), "{}", String::from_utf8_lossy(&landed.stderr));
}

/// The task's worktree folder was removed by hand while its review waited: the work is on its
/// branch as the review showed it, so approve still lands it (the worktree made again from the
/// branch where landing needs one), rather than stop at a raw git error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worktree_removed_by_hand_while_its_review_waits_still_lands_from_its_branch() {
    let (_s, dir, cli) = server(vec![writes("notes.md", "notes\n", 0)]).await;
    let r = repo(dir.path());
    let waiting = cli.run("write notes.md", &r, &[]);
    let id = session_of(&waiting);
    let wt = lines(&waiting).into_iter().find(|e| e["type"] == "task_workspace").unwrap()["worktree"].clone();
    std::fs::remove_dir_all(wt["folder"].as_str().unwrap()).unwrap();
    // A worktree of the person's own on a drive that is not mounted now: git's entry for it stays.
    let theirs = dir.path().join("on-a-usb-drive");
    git(&r, &["worktree", "add", "-q", "-b", "theirs", theirs.to_str().unwrap()]);
    std::fs::remove_dir_all(&theirs).unwrap();
    // The person's branch moved meanwhile too: landing rebases, which needs a worktree.
    std::fs::write(r.join("moved.txt"), "moved\n").unwrap();
    git(&r, &["add", "moved.txt"]);
    git(&r, &["commit", "-q", "-m", "the person's own commit"]);
    let approved = cli.cmd(&["sessions", "review", &id, "--approve"]).output().unwrap();
    let said = String::from_utf8_lossy(&approved.stdout).to_string() + &String::from_utf8_lossy(&approved.stderr);
    assert_eq!(approved.status.code(), Some(0), "{said}");
    assert_eq!(git(&r, &["show", "main:notes.md"]), "notes", "{said}");
    let listed = git(&r, &["worktree", "list", "--porcelain"]);
    assert_eq!(listed.matches("worktree ").count(), 2, "no worktree of the task's is left behind: {listed}");
    assert!(listed.contains("on-a-usb-drive"), "and the person's own entry is not pruned: {listed}");
    assert!(git(&r, &["branch", "--list", "finishline/*"]).is_empty(), "nor the branch");
}

/// The person's repository was moved (or renamed) while a task's review waited: approve says so
/// and how to go on, instead of a raw git error, and lands nothing; the review still waits, and
/// once the repository is back where the task started, approve lands it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repository_moved_while_its_review_waits_is_said_with_the_way_back_and_lands_once_back() {
    let (_s, dir, cli) = server(vec![writes("notes.md", "notes\n", 0)]).await;
    let r = repo(dir.path());
    let waiting = cli.run("write notes.md", &r, &[]);
    let id = session_of(&waiting);
    let wt = lines(&waiting).into_iter().find(|e| e["type"] == "task_workspace").unwrap()["worktree"].clone();
    let (folder, branch) = (wt["folder"].as_str().unwrap().to_string(), wt["branch"].as_str().unwrap().to_string());
    let moved = dir.path().join("repo-renamed");
    std::fs::rename(&r, &moved).unwrap();
    let approved = cli.cmd(&["sessions", "review", &id, "--approve"]).output().unwrap();
    let said = String::from_utf8_lossy(&approved.stdout).to_string() + &String::from_utf8_lossy(&approved.stderr);
    assert_eq!(approved.status.code(), Some(6), "not landed, the review waits: {said}");
    assert!(said.contains(&format!("is no longer at {}", r.display())), "{said}");
    assert!(said.contains(&format!("git worktree repair {folder}")) && said.contains(&format!("git merge {branch}")), "the way to take it by hand: {said}");
    assert!(!said.contains("--land branch"), "keeping the branch cannot go through either: {said}");
    assert!(Path::new(&folder).join("notes.md").exists(), "the task's worktree is untouched");
    assert!(!moved.join("notes.md").exists(), "nothing landed");
    let rejected = cli.cmd(&["sessions", "review", &id, "--reject"]).output().unwrap();
    let said = String::from_utf8_lossy(&rejected.stderr);
    assert_ne!(rejected.status.code(), Some(0), "{said}");
    assert!(said.contains(&format!("is no longer at {}", r.display())) && said.contains("put it back there and reject again"), "{said}");
    assert!(Path::new(&folder).join("notes.md").exists(), "the task's worktree is untouched");
    std::fs::rename(&moved, &r).unwrap();
    let approved = cli.cmd(&["sessions", "review", &id, "--approve"]).output().unwrap();
    assert_eq!(approved.status.code(), Some(0), "{}", String::from_utf8_lossy(&approved.stderr));
    assert_eq!(git(&r, &["show", "main:notes.md"]), "notes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worktreeinclude_files_reach_the_task_but_never_its_commit() {
    let (_s, dir, cli) = server(vec![writes("app.txt", "uses the env\n", 0)]).await;
    let r = repo(dir.path());
    std::fs::write(r.join(".env"), "TOKEN=local\n").unwrap();
    std::fs::write(r.join("local.json"), "{\"port\": 1}\n").unwrap();
    std::fs::write(r.join(".worktreeinclude"), "local.json\n").unwrap();
    let task = cli.spawn("write app.txt", &r, &["--review", "approve", "--verify", "test -f .env && test -f local.json"]);
    let out = task.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "verification in the worktree found the copied files: {}", String::from_utf8_lossy(&out.stderr));
    let ready = lines(&out).into_iter().find(|e| e["type"] == "worktree_ready").unwrap();
    assert_eq!(ready["copied"], json!([".env", "local.json"]), "the default .env and the repository's .worktreeinclude");
    assert_eq!(reviewed(&out), vec!["app.txt".to_string()], "the copied files are the person's, not the task's changes");
    let review = lines(&out).into_iter().find(|e| e["type"] == "review_requested").unwrap();
    assert_eq!(review["not_landed"], Value::Null, "nor are they named as the task's own left behind");
    let files = git(&r, &["show", "--name-only", "--format=", "main"]);
    assert_eq!(files, "app.txt", "the copied files stay out of the landed commit");
}

/// The person's `.env` is a named pipe (a secrets manager serves it so, to keep the secrets off
/// the disk): copying it would wait for ever on the pipe, or write the secrets to disk. It is left
/// out, and the task starts and ends as any other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_named_pipe_the_worktree_would_copy_is_left_out_and_the_task_never_waits_on_it() {
    let (_s, dir, cli) = server(vec![writes("app.txt", "app\n", 0)]).await;
    let r = repo(dir.path());
    std::fs::create_dir_all(r.join("config")).unwrap();
    assert!(Command::new("mkfifo").arg(r.join("config/.env")).status().unwrap().success());
    std::fs::write(r.join("config/local.json"), "{\"port\": 1}\n").unwrap();
    std::fs::write(r.join(".gitignore"), ".env\nconfig/\n").unwrap();
    std::fs::write(r.join(".worktreeinclude"), "config/\n").unwrap();
    let verify = "test -f config/local.json && ! test -e config/.env";
    let out = within_a_minute(cli.run_cmd("write app.txt", &r, &["--review", "approve", "--verify", verify]), "the task");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let ready = lines(&out).into_iter().find(|e| e["type"] == "worktree_ready").unwrap();
    assert_eq!(ready["copied"], json!(["config"]), "the folder is copied (its verification found the file and no pipe)");
    assert_eq!(git(&r, &["show", "--name-only", "--format=", "main"]), "app.txt");
}

/// While a task that changes nothing runs, the person's copied `.env` becomes a named pipe (their
/// secrets manager starts serving it), and the task then fails: telling whether its worktree is
/// unused, and can go, would wait on the pipe for ever to compare the copy with it. A pipe is not
/// what was copied: the task ends, and its worktree is kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copied_file_the_person_made_a_named_pipe_meanwhile_never_holds_the_tasks_end() {
    let dir = tempfile::tempdir().unwrap();
    let r = repo(dir.path());
    std::fs::write(r.join(".env"), "TOKEN=local\n").unwrap();
    let env = r.join(".env").display().to_string();
    let command = json!({"name": "run_command", "arguments": {"command": format!("rm '{env}' && mkfifo '{env}' && echo served")}});
    // No rule answers after the command: the provider refuses, and the task fails.
    let rules = json!({"rules": [{"when": {"kind": "agent", "last_message_contains": "look around"}, "reply": {"text": "Looking.", "tool_calls": [command]}}]});
    let server = FakeServer::start(serde_json::from_value(rules).unwrap()).await.unwrap();
    let cli = Cli { url: server.base_url(Protocol::Openai), data: dir.path().join("data") };
    let out = within_a_minute(cli.run_cmd("look around", &r, &["--allow", "run_command"]), "the task");
    assert_eq!(out.status.code(), Some(4), "it fails, and ends: {}", String::from_utf8_lossy(&out.stderr));
    assert!(lines(&out).iter().any(|e| e["type"] == "worktree_ready"), "it had a worktree");
    assert!(!lines(&out).iter().any(|e| e["type"] == "worktree_removed"), "kept: the copy is no longer the person's file");
    assert!(std::fs::symlink_metadata(r.join(".env")).unwrap().file_type().is_fifo(), "the person's pipe is left");
}

/// The person's `.env` sits in a folder that, on the branch the task starts from, is a link
/// leading out of the repository: the copy into the worktree never follows it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copying_untracked_files_into_a_worktree_never_writes_through_a_link_the_branch_holds() {
    let (_s, dir, cli) = server(vec![writes("app.txt", "app\n", 0)]).await;
    let r = repo(dir.path());
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join(".env"), "the person's file elsewhere\n").unwrap();
    // On `other`, cfg is a link leading outside; on main (checked out) it is a folder with the
    // person's untracked cfg/.env.
    git(&r, &["switch", "-q", "-c", "other"]);
    std::os::unix::fs::symlink(&outside, r.join("cfg")).unwrap();
    git(&r, &["add", "cfg"]);
    git(&r, &["commit", "-q", "-m", "cfg is a link here"]);
    git(&r, &["switch", "-q", "main"]);
    std::fs::create_dir_all(r.join("cfg")).unwrap();
    std::fs::write(r.join("cfg/.env"), "TOKEN=main checkout\n").unwrap();
    let waiting = cli.run("write app.txt", &r, &["--base", "other"]);
    assert_eq!(waiting.status.code(), Some(6), "{}", String::from_utf8_lossy(&waiting.stderr));
    assert_eq!(std::fs::read_to_string(outside.join(".env")).unwrap(), "the person's file elsewhere\n", "the file the link leads to is untouched");
    let ready = lines(&waiting).into_iter().find(|e| e["type"] == "worktree_ready").unwrap();
    assert_eq!(ready["copied"], json!([]), "and nothing is said copied that was not");
}

/// A branch to start from that is not there is refused before anything is made: it left an
/// empty session in the history, with nothing in it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_base_branch_that_is_not_there_leaves_no_session_behind() {
    let (_s, dir, cli) = server(vec![writes("app.txt", "app\n", 0)]).await;
    let r = repo(dir.path());
    let refused = cli.run("write app.txt", &r, &["--base", "nosuch"]);
    assert_eq!(refused.status.code(), Some(2), "{}", String::from_utf8_lossy(&refused.stderr));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("there is no branch “nosuch”"), "{}", String::from_utf8_lossy(&refused.stderr));
    let listed = cli.cmd(&["sessions", "list", "--json"]).output().unwrap();
    assert!(lines(&listed).is_empty(), "no session was made: {}", String::from_utf8_lossy(&listed.stdout));
    assert_eq!(git(&r, &["worktree", "list"]).lines().count(), 1, "nor a worktree");
}

/// An agent that switches its worktree to a branch of the person's: Finishline commits nothing
/// there, and says how to put the worktree back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worktree_switched_to_the_persons_branch_gets_no_commit_of_the_task() {
    let rules = vec![
        json!({"when": {"kind": "agent", "last_message_contains": "Created x.txt"}, "reply": {"text": "Done! x.txt is written."}}),
        json!({"when": {"kind": "agent", "last_message_contains": "switch and write"}, "reply": {"text": "Switching.", "tool_calls": [
            {"name": "run_command", "arguments": {"command": "git switch -q release"}}]}}),
        json!({"when": {"kind": "agent", "last_message_contains": "exit"}, "reply": {"text": "Writing.", "tool_calls": [write_call("x.txt", "x\n")]}}),
    ];
    let (_s, dir, cli) = server(vec![rules]).await;
    let r = repo(dir.path());
    git(&r, &["branch", "release"]);
    let before = git(&r, &["rev-parse", "release"]);
    let out = cli.run("switch and write x.txt", &r, &["--allow", "all"]);
    assert_eq!(git(&r, &["rev-parse", "release"]), before, "the person's branch has no commit of the task");
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("git switch"), "the way back is named: {text}");
}

/// A task's worktree switched to another branch of the person's after the review (by the
/// person, or by a process the agent left running): approving while the person's branch moved
/// on rebases nothing of theirs, and says how to put the worktree back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approving_a_worktree_switched_to_another_branch_rebases_nothing_of_the_persons() {
    let (_s, dir, cli) = server(vec![writes("x.txt", "x\n", 0)]).await;
    let r = repo(dir.path());
    git(&r, &["branch", "feature"]);
    let feature = git(&r, &["rev-parse", "feature"]);
    let waiting = cli.run("write x.txt", &r, &[]);
    assert_eq!(waiting.status.code(), Some(6), "{}", String::from_utf8_lossy(&waiting.stderr));
    let id = session_of(&waiting);
    let folder = PathBuf::from(lines(&waiting).into_iter().find(|e| e["type"] == "task_workspace").unwrap()["worktree"]["folder"].as_str().unwrap());
    git(&folder, &["switch", "-q", "feature"]);
    // The person's branch moves on, so the landing catches the task up first.
    std::fs::write(r.join("later.txt"), "later\n").unwrap();
    git(&r, &["add", "later.txt"]);
    git(&r, &["-c", "user.name=P", "-c", "user.email=p@p", "commit", "-q", "-m", "later"]);
    let main = git(&r, &["rev-parse", "main"]);

    let approved = cli.cmd(&["sessions", "review", &id, "--approve"]).output().unwrap();
    let said = String::from_utf8_lossy(&approved.stdout).to_string() + &String::from_utf8_lossy(&approved.stderr);
    assert_ne!(approved.status.code(), Some(0), "nothing landed: {said}");
    assert_eq!(git(&r, &["rev-parse", "feature"]), feature, "the person's other branch is as it was");
    assert_eq!(git(&r, &["rev-parse", "main"]), main, "and so is the branch it lands on");
    assert!(said.contains("git switch"), "the way back is named: {said}");
}

/// Finishline's own catch-up of the task's branch, cut short mid-rebase by a crash, is undone at
/// the next approve and done again: the task lands, and the person is not told to finish a rebase
/// they never started.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_catch_up_rebase_left_under_way_is_undone_and_the_task_lands_at_the_next_approve() {
    let (_s, dir, cli) = server(vec![writes("x.txt", "x\n", 0)]).await;
    let r = repo(dir.path());
    let waiting = cli.run("write x.txt", &r, &[]);
    assert_eq!(waiting.status.code(), Some(6), "{}", String::from_utf8_lossy(&waiting.stderr));
    let id = session_of(&waiting);
    let folder = PathBuf::from(lines(&waiting).into_iter().find(|e| e["type"] == "task_workspace").unwrap()["worktree"]["folder"].as_str().unwrap());
    std::fs::write(r.join("later.txt"), "later\n").unwrap();
    git(&r, &["add", "later.txt"]);
    git(&r, &["-c", "user.name=P", "-c", "user.email=p@p", "commit", "-q", "-m", "later"]);
    // Where a crash in the catch-up leaves the worktree: a rebase of the task's branch onto the
    // moved branch, stopped before its first pick.
    let stopped = Command::new("git")
        .current_dir(&folder)
        .env("GIT_SEQUENCE_EDITOR", "sed -i 1ibreak")
        .args(["-c", "user.name=F", "-c", "user.email=f@f", "rebase", "-q", "-i", "main"])
        .output()
        .unwrap();
    assert!(stopped.status.success(), "{}", String::from_utf8_lossy(&stopped.stderr));
    assert!(git(&folder, &["status"]).contains("rebase"), "the worktree is mid-rebase");

    let approved = cli.cmd(&["sessions", "review", &id, "--approve"]).output().unwrap();
    assert_eq!(approved.status.code(), Some(0), "it lands: {}", String::from_utf8_lossy(&approved.stderr));
    assert_eq!(std::fs::read_to_string(r.join("x.txt")).unwrap(), "x\n");
    assert_eq!(std::fs::read_to_string(r.join("later.txt")).unwrap(), "later\n", "on top of what the person committed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worktree_this_history_does_not_know_is_never_removed_at_start() {
    let (_s, dir, cli) = server(vec![writes("kept.txt", "kept\n", 0)]).await;
    let r = repo(dir.path());
    // An undecided task: it waits for review with its worktree.
    let waiting = cli.run("write kept.txt", &r, &[]);
    assert_eq!(waiting.status.code(), Some(6));
    let folder = lines(&waiting).into_iter().find(|e| e["type"] == "task_workspace").unwrap()["worktree"]["folder"].as_str().unwrap().to_string();
    // The person's own worktree, in the folder they chose for Finishline's too, with work in it.
    let own = cli.data.join("worktrees").join("repo-mine");
    git(&r, &["worktree", "add", "-q", "-b", "mine", own.to_str().unwrap()]);
    std::fs::write(own.join("draft.txt"), "the person's draft\n").unwrap();
    // The history becomes unreadable: the next start sets it aside and begins a new one, which
    // knows none of the tasks above.
    std::fs::write(cli.data.join("history.db"), "not a database at all").unwrap();
    for ext in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(cli.data.join(format!("history.db{ext}")));
    }
    // Any run starts with the sweep.
    let _ = cli.run("hello", &dir.path().join("repo"), &["--isolation", "in-place"]);
    assert!(own.join("draft.txt").exists(), "the person's own worktree and draft are kept");
    assert!(git(&r, &["worktree", "list"]).contains("repo-mine"), "and git still knows it");
    assert!(Path::new(&folder).join("kept.txt").exists(), "the set-aside history's undecided work is kept in its worktree");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_in_the_middle_of_a_landing_the_next_start_finishes_it() {
    let (_s, dir, cli) = server(vec![writes("land.txt", "land\n", 0)]).await;
    let r = repo(dir.path());
    let waiting = cli.run("write land.txt", &r, &[]);
    let id = session_of(&waiting);
    let mut child = approve_paused_at(&cli, &id, "landing-after-checkout", &dir.path().join("paused"));
    child.kill().unwrap();
    let _ = child.wait();
    assert!(r.join("land.txt").exists(), "killed after the person's checkout was updated");
    assert_eq!(git(&r, &["log", "-1", "--format=%s", "main"]), "init", "and before the branch moved");
    let list = lines(&cli.cmd(&["sessions", "list", "--json"]).output().unwrap());
    let _ = list;
    // The next start (any command that opens the engine) finishes it.
    let _ = cli.run("hello", &dir.path().join("repo"), &["--isolation", "in-place"]);
    assert_eq!(git(&r, &["log", "-1", "--format=%s", "main"]), "write land.txt", "the branch moved to the landing's commit");
    assert_eq!(std::fs::read_to_string(r.join("land.txt")).unwrap(), "land\n");
    assert_eq!(git(&r, &["status", "--porcelain", "--", "land.txt"]), "", "the person's index and files agree with the branch");
    let events = stored(&cli.data, &id);
    assert!(events.iter().any(|e| matches!(e, finishline_engine::event::EngineEvent::Landed { .. })), "history records the landing");
    assert_eq!(git(&r, &["worktree", "list", "--porcelain"]).matches("worktree ").count(), 1, "and the worktree is gone");
}

/// Ctrl+C while an approve checks the task again on the person's moved branch stops the checks:
/// nothing lands, the review waits, and the terminal says how to go on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_during_the_checks_of_a_landing_lands_nothing() {
    let (_s, dir, cli) = server(vec![writes("notes.md", "notes\n", 0)]).await;
    let r = repo(dir.path());
    let waiting = cli.run("write notes.md", &r, &["--verify", "if [ -f moved.txt ]; then sleep 60; fi; test -f notes.md"]);
    let id = session_of(&waiting);
    std::fs::write(r.join("moved.txt"), "moved\n").unwrap();
    git(&r, &["add", "moved.txt"]);
    git(&r, &["commit", "-q", "-m", "moved meanwhile"]);
    let child = cli
        .cmd(&["sessions", "review", &id, "--approve", "--base-url", &cli.url, "--model", "m"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t = Instant::now();
    while !stored(&cli.data, &id)
        .iter()
        .any(|e| matches!(e, finishline_engine::event::EngineEvent::Activity { detail, .. } if detail.starts_with("after moving")))
    {
        assert!(t.elapsed() < Duration::from_secs(30), "the checks started");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    let out = child.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(t.elapsed() < Duration::from_secs(30), "stopped at once: {said}");
    assert_eq!(out.status.code(), Some(6), "the review waits: {said}");
    assert!(said.contains("you stopped the landing"), "{said}");
    assert_eq!(git(&r, &["log", "-1", "--format=%s", "main"]), "moved meanwhile", "nothing landed");
}

/// An auto-approval whose landing a crash cut short is finished at the next start as what it
/// was: auto's, not the person's (the trust figures count only the person's).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_auto_approval_finished_after_a_crash_stays_auto() {
    let (_s, dir, cli) = server(vec![writes("land.txt", "land\n", 0)]).await;
    let r = repo(dir.path());
    let mut child = paused_at(cli.run_cmd("write land.txt", &r, &["--review", "approve"]), "landing-after-checkout", &dir.path().join("paused"), "it landed");
    child.kill().unwrap();
    let _ = child.wait();
    let _ = cli.run("hello", &r, &["--isolation", "in-place"]);
    assert_eq!(git(&r, &["log", "-1", "--format=%s", "main"]), "write land.txt", "the next start finished the landing");
    let id = lines(&cli.cmd(&["sessions", "list", "--json"]).output().unwrap()).into_iter().find(|s| s["task"] == "write land.txt").unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let by: Vec<_> = stored(&cli.data, &id)
        .into_iter()
        .filter_map(|e| match e {
            finishline_engine::event::EngineEvent::ReviewResolved { by, .. } => Some(by),
            _ => None,
        })
        .collect();
    assert_eq!(by, vec![finishline_engine::domain::DecidedBy::Auto]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_start_elsewhere_leaves_alone_a_landing_another_process_is_still_doing() {
    let (_s, dir, cli) = server(vec![writes("land.txt", "land\n", 0)]).await;
    let r = repo(dir.path());
    let waiting = cli.run("write land.txt", &r, &[]);
    let id = session_of(&waiting);
    let marker = dir.path().join("paused");
    let child = approve_paused_at(&cli, &id, "landing-after-checkout", &marker);
    // Meanwhile another command starts: the landing is not its to finish.
    let _ = cli.run("hello", &r, &["--isolation", "in-place"]);
    assert_eq!(git(&r, &["log", "-1", "--format=%s", "main"]), "init", "the other start did not move the branch under the live landing");
    std::fs::remove_file(&marker).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "the landing finished where it began: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(git(&r, &["log", "-1", "--format=%s", "main"]), "write land.txt");
    assert_eq!(git(&r, &["status", "--porcelain", "--", "land.txt"]), "", "the person's index and files agree with the branch");
    let events = stored(&cli.data, &id);
    assert!(!events.iter().any(|e| matches!(e, finishline_engine::event::EngineEvent::LandingBlocked { .. })), "and history never says it did not land");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_start_elsewhere_never_removes_the_worktree_of_a_task_continued_since_it_looked() {
    let (_s, dir, cli) = server(vec![writes("land.txt", "land\n", 0), writes("more.txt", "more\n", 0)]).await;
    let r = repo(dir.path());
    let waiting = cli.run("write land.txt", &r, &[]);
    let id = session_of(&waiting);
    assert_eq!(cli.review(&id, &["--approve"]).status.code(), Some(0));
    // Another start has read the list (the task landed) when the person continues the task.
    let marker = dir.path().join("paused");
    let mut other = cli.cmd(&["run", "hello", "--workspace", r.to_str().unwrap(), "--base-url", &cli.url, "--model", "m", "--isolation", "in-place"]);
    other.stdin(Stdio::null());
    let other = paused_at(other, "sweep-listed", &marker, "the other start listed the sessions");
    let resumed = cli.cmd(&["sessions", "resume", &id, "write more.txt", "--base-url", &cli.url, "--model", "m", "--json"]).output().unwrap();
    assert_eq!(resumed.status.code(), Some(6), "the follow-up waits for review: {}", String::from_utf8_lossy(&resumed.stderr));
    let folder = lines(&resumed).into_iter().rev().find(|e| e["type"] == "task_workspace").unwrap()["worktree"]["folder"].as_str().unwrap().to_string();
    std::fs::remove_file(&marker).unwrap();
    let _ = other.wait_with_output().unwrap();
    assert!(Path::new(&folder).join("more.txt").exists(), "the follow-up's worktree and work are kept");
    let events = stored(&cli.data, &id);
    assert!(
        !events.iter().any(|e| matches!(e, finishline_engine::event::EngineEvent::WorktreeRemoved { folder: f, .. } if *f == folder)),
        "and history never says it was removed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cli_whose_task_is_approved_for_it_exits_only_once_the_tasks_worktree_is_gone() {
    let (_s, dir, cli) = server(vec![writes("land.txt", "land\n", 0)]).await;
    let r = repo(dir.path());
    let marker = dir.path().join("paused");
    let running =
        cli.cmd(&["run", "write land.txt", "--workspace", r.to_str().unwrap(), "--base-url", &cli.url, "--model", "m", "--json", "--review", "approve"]);
    let child = paused_at(running, "before-worktree-removal", &marker, "the task landed and its worktree is about to go");
    // The landing is recorded: time enough for the CLI to see the task completed, and to exit
    // were it not waiting for the decision to finish.
    std::thread::sleep(Duration::from_millis(500));
    std::fs::remove_file(&marker).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "it landed: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(std::fs::read_to_string(r.join("land.txt")).unwrap(), "land\n");
    assert_eq!(git(&r, &["worktree", "list", "--porcelain"]).matches("worktree ").count(), 1, "the task's worktree is gone when the CLI has exited");
    assert!(!git(&r, &["branch", "--list", "finishline/*"]).contains("finishline/"), "and so is its branch");
}

/// The person's branch moved by a commit of theirs (touching no file, so their checkout stays as
/// it is), as in the instant of a landing; its id.
fn move_main_meanwhile(r: &Path) -> String {
    let other = git(r, &["commit-tree", "HEAD^{tree}", "-p", "HEAD", "-m", "moved meanwhile"]);
    git(r, &["update-ref", "refs/heads/main", &other]);
    other
}

/// Why the first landing that stopped did: its reason and its words.
fn landing_blocked(events: &[finishline_engine::event::EngineEvent]) -> Option<(finishline_engine::domain::LandingBlock, String)> {
    events.iter().find_map(|e| {
        if let finishline_engine::event::EngineEvent::LandingBlocked { reason, detail, .. } = e {
            Some((*reason, detail.clone()))
        } else {
            None
        }
    })
}

/// `sessions review ID --approve` paused at the fault point `point`: the child, and the marker
/// it writes there (remove it and the landing goes on).
fn approve_paused_at(cli: &Cli, id: &str, point: &str, marker: &Path) -> std::process::Child {
    let approving = cli.cmd(&["sessions", "review", id, "--approve", "--base-url", &cli.url, "--model", "m"]);
    paused_at(approving, point, marker, &format!("the landing reached {point}"))
}

/// A task that wrote one.txt and two.txt in a plain folder, waiting for review: the server, the
/// test's folder, the CLI, the folder and the session.
async fn two_files_waiting_in_a_plain_folder() -> (FakeServer, tempfile::TempDir, Cli, PathBuf, String) {
    let rules = calls_then_done("write two files", vec![write_call("one.txt", "1\n"), write_call("two.txt", "2\n")], "Created two.txt");
    let (s, dir, cli) = server(vec![rules]).await;
    let ws = dir.path().join("plain");
    std::fs::create_dir_all(&ws).unwrap();
    let waiting = cli.run("write two files", &ws, &[]);
    assert_eq!(waiting.status.code(), Some(6), "{}", String::from_utf8_lossy(&waiting.stderr));
    let id = session_of(&waiting);
    (s, dir, cli, ws, id)
}

/// `sessions review ID --reject --revert` (with `extra`), killed once the revert put back its
/// first file: a revert a crash cut short.
fn reject_killed_after_first_file(cli: &Cli, id: &str, marker: &Path, extra: &[&str]) {
    let mut args = vec!["sessions", "review", id, "--reject", "--revert", "--base-url", &cli.url, "--model", "m"];
    args.extend_from_slice(extra);
    let mut child = paused_at(cli.cmd(&args), "revert-after-first-file", marker, "the revert put back its first file");
    child.kill().unwrap();
    let _ = child.wait();
}

/// `cmd` started with the fault point `point` set, once it got there (`reached` says what that
/// means): the child, waiting until the test removes `marker`.
fn paused_at(mut cmd: Command, point: &str, marker: &Path, reached: &str) -> std::process::Child {
    cmd.env("FINISHLINE_FAULT_PAUSE", point).env("FINISHLINE_FAULT_MARKER", marker).stdout(Stdio::piped()).stderr(Stdio::piped());
    let child = cmd.spawn().unwrap();
    let t = Instant::now();
    while !marker.exists() && t.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(marker.exists(), "{reached}");
    child
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_after_the_landing_is_recorded_and_before_anything_moved_nothing_lands_and_approve_works_again() {
    // A name git quotes unless told not to.
    let (_s, dir, cli) = server(vec![writes("Übersicht.md", "overview\n", 0)]).await;
    let r = repo(dir.path());
    let waiting = cli.run("write Übersicht.md", &r, &[]);
    let id = session_of(&waiting);
    let mut child = approve_paused_at(&cli, &id, "landing-started", &dir.path().join("paused"));
    child.kill().unwrap();
    let _ = child.wait();
    let _ = cli.run("hello", &r, &["--isolation", "in-place"]);
    assert_eq!(git(&r, &["log", "-1", "--format=%s", "main"]), "init", "the branch did not move at the next start either");
    assert!(!r.join("Übersicht.md").exists(), "nor did the person's checkout");
    let events = stored(&cli.data, &id);
    assert!(
        events
            .iter()
            .any(|e| matches!(e, finishline_engine::event::EngineEvent::LandingBlocked { reason: finishline_engine::domain::LandingBlock::Interrupted, .. })),
        "history says the landing was cut short and nothing landed"
    );
    let again = cli.review(&id, &["--approve"]);
    assert_eq!(again.status.code(), Some(0), "approve again lands it: {}", String::from_utf8_lossy(&again.stderr));
    assert_eq!(git(&r, &["-c", "core.quotePath=false", "show", "--name-only", "--format=", "main"]), "Übersicht.md");
    assert_eq!(std::fs::read_to_string(r.join("Übersicht.md")).unwrap(), "overview\n");
}

/// A landing as uncommitted changes, killed after it wrote the task's changes into the person's
/// checkout and before it recorded that: the next start finds them there, whole, and records the
/// task landed; the task's files are not called the person's edits, nor left without a record.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_uncommitted_landing_killed_after_writing_is_recorded_landed_at_the_next_start() {
    let (_s, dir, cli) = server(vec![writes("notes.md", "the task's notes\n", 0)]).await;
    let r = repo(dir.path());
    let waiting = cli.run("write notes.md", &r, &[]);
    let id = session_of(&waiting);
    let branch = lines(&waiting).into_iter().find(|e| e["type"] == "task_workspace").unwrap()["worktree"]["branch"].as_str().unwrap().to_string();
    let approving = cli.cmd(&["sessions", "review", &id, "--approve", "--land", "uncommitted", "--base-url", &cli.url, "--model", "m"]);
    let mut child = paused_at(approving, "landing-started", &dir.path().join("paused"), "the landing was recorded");
    // What the landing does next, done before the kill: the task's changes written in.
    let patch = Command::new("git").current_dir(&r).args(["diff-tree", "-p", "--binary", "main", &branch]).output().unwrap().stdout;
    let mut apply = Command::new("git").current_dir(&r).args(["apply"]).stdin(Stdio::piped()).spawn().unwrap();
    std::io::Write::write_all(&mut apply.stdin.take().unwrap(), &patch).unwrap();
    assert!(apply.wait().unwrap().success());
    child.kill().unwrap();
    let _ = child.wait();

    let _ = cli.run("hello", &r, &["--isolation", "in-place"]);
    let events = stored(&cli.data, &id);
    let landed = events.iter().find_map(|e| match e {
        finishline_engine::event::EngineEvent::Landed { files, .. } => Some(files.clone()),
        _ => None,
    });
    assert_eq!(landed, Some(vec!["notes.md".to_string()]), "the landing is recorded, with its file: {events:?}");
    assert!(!events.iter().any(|e| matches!(e, finishline_engine::event::EngineEvent::LandingBlocked { .. })), "nothing says it did not land: {events:?}");
    let listed = lines(&cli.cmd(&["sessions", "list", "--json"]).output().unwrap()).into_iter().find(|s| s["id"] == id.as_str()).unwrap();
    assert_eq!(listed["status"], "completed", "{listed}");
    assert_eq!(std::fs::read_to_string(r.join("notes.md")).unwrap(), "the task's notes\n");
}

/// The same cut short half way through writing: the next start says only some of the changes
/// are there, and how to go on; it records no landing and removes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_uncommitted_landing_killed_half_way_says_only_some_changes_are_in_the_checkout() {
    let rules = calls_then_done("write two files", vec![write_call("one.txt", "1\n"), write_call("two.txt", "2\n")], "Created two.txt");
    let (_s, dir, cli) = server(vec![rules]).await;
    let r = repo(dir.path());
    let id = session_of(&cli.run("write two files", &r, &[]));
    let approving = cli.cmd(&["sessions", "review", &id, "--approve", "--land", "uncommitted", "--base-url", &cli.url, "--model", "m"]);
    let mut child = paused_at(approving, "landing-started", &dir.path().join("paused"), "the landing was recorded");
    std::fs::write(r.join("one.txt"), "1\n").unwrap();
    child.kill().unwrap();
    let _ = child.wait();
    let _ = cli.run("hello", &r, &["--isolation", "in-place"]);
    let events = stored(&cli.data, &id);
    let said = events.iter().find_map(|e| match e {
        finishline_engine::event::EngineEvent::LandingBlocked { reason: finishline_engine::domain::LandingBlock::Interrupted, detail, .. } => {
            Some(detail.clone())
        }
        _ => None,
    });
    let said = said.unwrap_or_else(|| panic!("the cut-short landing is said: {events:?}"));
    assert!(said.contains("does not hold them as the task left them") && said.contains("git status"), "{said}");
    assert!(!events.iter().any(|e| matches!(e, finishline_engine::event::EngineEvent::Landed { .. })), "no landing is recorded");
    assert_eq!(std::fs::read_to_string(r.join("one.txt")).unwrap(), "1\n", "what was written stays for the person to look at");
}

/// The same cut short before anything was written: nothing landed, and approving again lands
/// it as uncommitted changes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_uncommitted_landing_killed_before_writing_lands_nothing_and_approve_works_again() {
    let (_s, dir, cli) = server(vec![writes("notes.md", "the task's notes\n", 0)]).await;
    let r = repo(dir.path());
    let id = session_of(&cli.run("write notes.md", &r, &[]));
    let approving = cli.cmd(&["sessions", "review", &id, "--approve", "--land", "uncommitted", "--base-url", &cli.url, "--model", "m"]);
    let mut child = paused_at(approving, "landing-started", &dir.path().join("paused"), "the landing was recorded");
    child.kill().unwrap();
    let _ = child.wait();
    let _ = cli.run("hello", &r, &["--isolation", "in-place"]);
    assert!(!r.join("notes.md").exists(), "nothing was written");
    let again = cli.cmd(&["sessions", "review", &id, "--approve", "--land", "uncommitted"]).output().unwrap();
    assert_eq!(again.status.code(), Some(0), "approve again lands it: {}", String::from_utf8_lossy(&again.stderr));
    assert_eq!(std::fs::read_to_string(r.join("notes.md")).unwrap(), "the task's notes\n");
    assert_eq!(git(&r, &["log", "-1", "--format=%s", "main"]), "init", "as uncommitted changes");
}

/// Ctrl-C in the terminal once the landing is past the point where it can be stopped (the
/// person's branch is about to move): the landing finishes, whole, and says so; the CLI does not
/// die half way, nor do the landing's own gits with it (Ctrl-C reaches the terminal's whole
/// process group).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_once_the_landing_can_no_longer_stop_lets_it_finish_whole() {
    use std::os::unix::process::CommandExt;
    let (_s, dir, cli) = server(vec![writes("land.txt", "land\n", 0)]).await;
    let r = repo(dir.path());
    let id = session_of(&cli.run("write land.txt", &r, &[]));
    let marker = dir.path().join("paused");
    let mut approving = cli.cmd(&["sessions", "review", &id, "--approve", "--base-url", &cli.url, "--model", "m"]);
    // Its own process group, as a terminal's foreground job is: Ctrl-C goes to the whole group.
    approving.process_group(0);
    let child = paused_at(approving, "landing-started", &marker, "the landing was recorded");
    assert!(Command::new("kill").args(["-INT", "--", &format!("-{}", child.id())]).status().unwrap().success());
    std::thread::sleep(Duration::from_millis(300));
    std::fs::remove_file(&marker).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "landed: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(git(&r, &["log", "-1", "--format=%s", "main"]), "write land.txt", "the branch moved");
    assert_eq!(std::fs::read_to_string(r.join("land.txt")).unwrap(), "land\n", "and the checkout with it");
    assert_eq!(git(&r, &["status", "--porcelain", "--", "land.txt"]), "", "as committed, nothing half written");
}

/// The same for auto-approve's landing, at the end of `run --review approve`: Ctrl-C stops the
/// run, and a landing past its stop point finishes whole however long it takes, not cut off
/// after the few seconds a stopped run is given.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_once_auto_approves_landing_can_no_longer_stop_lets_it_finish_whole() {
    use std::os::unix::process::CommandExt;
    let (_s, dir, cli) = server(vec![writes("land.txt", "land\n", 0)]).await;
    let r = repo(dir.path());
    let marker = dir.path().join("paused");
    let mut running = cli.run_cmd("write land.txt", &r, &["--review", "approve"]);
    running.process_group(0);
    let child = paused_at(running, "landing-started", &marker, "auto-approve's landing was recorded");
    assert!(Command::new("kill").args(["-INT", "--", &format!("-{}", child.id())]).status().unwrap().success());
    // Longer than a stopped run is given to end.
    std::thread::sleep(Duration::from_secs(6));
    std::fs::remove_file(&marker).unwrap();
    let out = child.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(git(&r, &["log", "-1", "--format=%s", "main"]), "write land.txt", "the branch moved: {said}");
    assert_eq!(std::fs::read_to_string(r.join("land.txt")).unwrap(), "land\n", "and the checkout with it");
    assert_eq!(git(&r, &["status", "--porcelain", "--", "land.txt"]), "", "as committed, nothing half written");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_branch_that_moves_under_a_landing_whose_checkout_cannot_be_put_back_says_what_the_checkout_holds() {
    let (_s, dir, cli) = server(vec![writes("land.txt", "land\n", 0)]).await;
    let r = repo(dir.path());
    let waiting = cli.run("write land.txt", &r, &[]);
    let id = session_of(&waiting);
    let marker = dir.path().join("paused");
    let child = approve_paused_at(&cli, &id, "landing-after-checkout", &marker);
    // The checkout is brought along; now the branch moves, and a git of the person's holds the index.
    let other = move_main_meanwhile(&r);
    std::fs::write(r.join(".git/index.lock"), "").unwrap();
    std::fs::remove_file(&marker).unwrap();
    let out = child.wait_with_output().unwrap();
    std::fs::remove_file(r.join(".git/index.lock")).unwrap();
    assert_eq!(out.status.code(), Some(6), "not landed: {}", String::from_utf8_lossy(&out.stderr));
    let events = stored(&cli.data, &id);
    let (_, detail) = landing_blocked(&events).expect("the landing says why it stopped");
    assert!(detail.contains("could not be put back") && detail.contains("git status"), "{detail}");
    assert_eq!(git(&r, &["rev-parse", "main"]), other, "the branch is where the person moved it");
    assert_eq!(std::fs::read_to_string(r.join("land.txt")).unwrap(), "land\n", "the checkout holds the task's file, as the message says");
}

/// The person commits in the very instant a landing moves their branch: nothing conflicts, so
/// the terminal must not offer the agent a conflict to resolve; approving again lands it on top.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_branch_moved_in_the_instant_of_landing_is_no_conflict_and_approving_again_lands_it() {
    let (_s, dir, cli) = server(vec![writes("land.txt", "land\n", 0)]).await;
    let r = repo(dir.path());
    let waiting = cli.run("write land.txt", &r, &[]);
    let id = session_of(&waiting);
    let marker = dir.path().join("paused");
    let child = approve_paused_at(&cli, &id, "landing-after-checkout", &marker);
    move_main_meanwhile(&r);
    std::fs::remove_file(&marker).unwrap();
    let out = child.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(6), "not landed: {said}");
    let events = stored(&cli.data, &id);
    let (reason, _) = landing_blocked(&events).expect("the landing says why it stopped");
    assert_eq!(reason, finishline_engine::domain::LandingBlock::BranchMoved, "{said}");
    assert!(!said.contains("resolve"), "no conflict is offered to the agent: {said}");
    assert!(said.contains("approve again"), "the way forward is named: {said}");
    assert_eq!(cli.review(&id, &["--approve"]).status.code(), Some(0), "approving again lands it");
    assert_eq!(git(&r, &["log", "--format=%s", "-2", "main"]), "write land.txt\nmoved meanwhile", "on top of the person's commit");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_never_lands_a_file_over_an_ignored_folder_or_a_folder_over_an_ignored_file() {
    let rules = calls_then_done(
        "write out and cfg",
        vec![write_call(".gitignore", ".env\n"), write_call("cfg/a", "task\n"), write_call("out", "task\n")],
        "Created out",
    );
    let (_s, dir, cli) = server(vec![rules]).await;
    let r = repo(dir.path());
    std::fs::write(r.join(".gitignore"), ".env\nout/\ncfg\n").unwrap();
    git(&r, &["commit", "-q", "-m", "ignore build output and local config", "--", ".gitignore"]);
    std::fs::create_dir_all(r.join("out")).unwrap();
    std::fs::write(r.join("out/build.bin"), "the person's build").unwrap();
    std::fs::write(r.join("cfg"), "the person's config").unwrap();
    let run = cli.run("write out and cfg", &r, &["--review", "approve"]);
    assert_eq!(run.status.code(), Some(6), "it waits for the person");
    let blocked = lines(&run).into_iter().find(|e| e["type"] == "landing_blocked").expect("the landing says why it stopped");
    assert_eq!((blocked["reason"].as_str(), &blocked["files"]), (Some("your_ignored_files"), &json!(["cfg", "out"])));
    assert_eq!(std::fs::read_to_string(r.join("out/build.bin")).unwrap(), "the person's build");
    assert_eq!(std::fs::read_to_string(r.join("cfg")).unwrap(), "the person's config");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_in_the_middle_of_a_revert_the_next_start_puts_back_the_rest_and_history_says_which() {
    let rules = calls_then_done(
        "write three files",
        vec![
            write_call("one.txt", "1\n"),
            json!({"name": "edit_file", "arguments": {"path": "keep.txt", "old_text": "old", "new_text": "new"}}),
            write_call("three.txt", "3\n"),
        ],
        "Created three.txt",
    );
    let (_s, dir, cli) = server(vec![rules]).await;
    let ws = dir.path().join("plain");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("keep.txt"), "old\n").unwrap();
    let waiting = cli.run("write three files", &ws, &[]);
    assert_eq!(waiting.status.code(), Some(6), "{}", String::from_utf8_lossy(&waiting.stderr));
    let id = session_of(&waiting);
    reject_killed_after_first_file(&cli, &id, &dir.path().join("paused"), &[]);
    let _ = cli.run("hello", &ws, &["--when-busy", "run"]);
    assert!(!ws.join("one.txt").exists() && !ws.join("three.txt").exists(), "every created file is gone");
    assert_eq!(std::fs::read_to_string(ws.join("keep.txt")).unwrap(), "old\n", "the edited file is back");
    let reverted: Vec<(Vec<String>, Vec<String>)> = stored(&cli.data, &id)
        .into_iter()
        .filter_map(|e| if let finishline_engine::event::EngineEvent::Reverted { restored, deleted, .. } = e { Some((restored, deleted)) } else { None })
        .collect();
    assert_eq!(reverted.len(), 1, "history records the revert once, when the files are back");
    assert_eq!(reverted[0].0, vec!["keep.txt"]);
    assert_eq!(reverted[0].1, vec!["one.txt", "three.txt"]);
}

/// The same reject with revert asked again after it was cut short: the command's start finishes
/// the revert, and the command says so. It said "cannot be reverted now: its changes were
/// already reverted", and failed, for the revert it had just finished.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn asking_again_for_a_revert_cut_short_finishes_it_and_says_so() {
    let (_s, dir, cli, ws, id) = two_files_waiting_in_a_plain_folder().await;
    reject_killed_after_first_file(&cli, &id, &dir.path().join("paused"), &[]);
    let again = cli.review(&id, &["--reject", "--revert"]);
    let said = String::from_utf8_lossy(&again.stdout).to_string() + &String::from_utf8_lossy(&again.stderr);
    assert_eq!(again.status.code(), Some(3), "{said}");
    assert!(said.contains("The revert cut short before is finished") && said.contains("2 removed"), "{said}");
    assert!(!said.contains("already reverted"), "{said}");
    assert!(!ws.join("one.txt").exists() && !ws.join("two.txt").exists());
}

/// A revert cut short that the next starts cannot finish (the task's copy of a file is gone from
/// its store) says so once, not again at every start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revert_cut_short_that_cannot_be_finished_says_why_once_not_at_every_start() {
    let rules = calls_then_done(
        "write a and edit z",
        vec![write_call("a.txt", "1\n"), json!({"name": "edit_file", "arguments": {"path": "z.txt", "old_text": "old", "new_text": "new"}})],
        "Edited z.txt",
    );
    let (_s, dir, cli) = server(vec![rules]).await;
    let ws = dir.path().join("plain");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("z.txt"), "old\n").unwrap();
    let id = session_of(&cli.run("write a and edit z", &ws, &[]));
    reject_killed_after_first_file(&cli, &id, &dir.path().join("paused"), &[]);
    // What z.txt held before the task is lost from the checkpoint store.
    for store in std::fs::read_dir(cli.data.join("checkpoints")).unwrap().flatten() {
        for object in std::fs::read_dir(store.path().join("objects")).unwrap().flatten() {
            if object.file_name().len() == 2 || object.file_name() == "pack" {
                std::fs::remove_dir_all(object.path()).unwrap();
            }
        }
    }
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let _ = cli.run("hello", &elsewhere, &[]);
    let _ = cli.run("hello", &elsewhere, &[]);
    let said: Vec<String> = stored(&cli.data, &id)
        .into_iter()
        .filter_map(|e| if let finishline_engine::event::EngineEvent::Error { message, .. } = e { Some(message) } else { None })
        .filter(|m| m.contains("could not be finished"))
        .collect();
    assert_eq!(said.len(), 1, "said once: {said:?}");
    assert_eq!(std::fs::read_to_string(ws.join("z.txt")).unwrap(), "new\n", "the file it could not put back is as the task left it");
}

/// A revert cut short whose folder another task is at work in at the next start waits for it
/// (the files it would put back may be that task's): it says so once, and a later start with
/// the folder free finishes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revert_cut_short_whose_folder_is_busy_at_the_next_start_says_it_waits_and_finishes_later() {
    let (_s, dir, cli, ws, id) = two_files_waiting_in_a_plain_folder().await;
    reject_killed_after_first_file(&cli, &id, &dir.path().join("paused"), &[]);
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let busy = finishline_engine::workspace::lock::WindowLock::try_take(&cli.data, &ws).unwrap().expect("free");
    let _ = cli.run("hello", &elsewhere, &[]);
    let _ = cli.run("hello", &elsewhere, &[]);
    let said: Vec<String> = stored(&cli.data, &id)
        .into_iter()
        .filter_map(|e| if let finishline_engine::event::EngineEvent::Error { message, .. } = e { Some(message) } else { None })
        .collect();
    assert_eq!(said.len(), 1, "said once: {said:?}");
    assert!(said[0].contains("another task is at work") && said[0].contains("next start"), "{}", said[0]);
    assert!(ws.join("two.txt").exists(), "nothing more was put back while the folder was busy");
    drop(busy);
    let _ = cli.run("hello", &elsewhere, &[]);
    assert!(!ws.join("one.txt").exists() && !ws.join("two.txt").exists(), "finished once the folder was free");
}

/// Flags of another decision than the one given are refused before anything is decided: an
/// approve with --revert approved and dropped the revert unsaid, a reject took --land.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn review_flags_of_another_decision_are_refused_and_nothing_is_decided() {
    let (_s, _dir, cli, ws, id) = two_files_waiting_in_a_plain_folder().await;
    for (flags, says) in [
        (&["--approve", "--revert"][..], "--revert"),
        (&["--approve", "--reject", "--revert", "--keep-changed"][..], ""),
        (&["--approve", "--force-revert"][..], "--force-revert"),
        (&["--reject", "--land", "merge"][..], "--land"),
        (&["--reject", "--force-revert"][..], "--force-revert"),
        (&["--request-changes", "more", "--revert"][..], "--revert"),
    ] {
        let out = cli.review(&id, flags);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flags:?} is a usage error: {err}");
        assert!(err.contains(says), "{flags:?}: the message names the flag: {err}");
    }
    let listed = cli.cmd(&["sessions", "list", "--json"]).output().unwrap();
    assert!(String::from_utf8_lossy(&listed.stdout).contains("awaiting_review"), "still waiting for a decision");
    assert!(ws.join("one.txt").exists() && ws.join("two.txt").exists(), "nothing was put back");
}

/// A revert the person allowed to overwrite their edit, cut short by a kill, and an edit they
/// made since: the next start finishes the revert without overwriting what it never agreed to.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revert_cut_short_never_overwrites_an_edit_made_after_the_kill() {
    let (_s, dir, cli, ws, id) = two_files_waiting_in_a_plain_folder().await;
    std::fs::write(ws.join("two.txt"), "2 and the person's first line\n").unwrap();
    reject_killed_after_first_file(&cli, &id, &dir.path().join("paused"), &["--force-revert"]);
    std::fs::write(ws.join("two.txt"), "the person's rewrite after the crash\n").unwrap();
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let _ = cli.run("hello", &elsewhere, &[]);
    assert_eq!(std::fs::read_to_string(ws.join("two.txt")).unwrap(), "the person's rewrite after the crash\n", "the later edit is kept");
    assert!(!ws.join("one.txt").exists(), "what the revert had reached stays reverted");
    let kept: Vec<Vec<String>> = stored(&cli.data, &id)
        .into_iter()
        .filter_map(|e| if let finishline_engine::event::EngineEvent::Reverted { kept, .. } = e { Some(kept) } else { None })
        .collect();
    assert_eq!(kept, vec![vec!["two.txt".to_string()]], "history names the file the revert left");
}

/// A revert told to overwrite the person's edit, killed just after it copied and overwrote that
/// file: the start that finishes it says where the copy is, so it is never kept unnamed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revert_cut_short_after_overwriting_names_the_copy_it_kept_when_it_is_finished() {
    let (_s, dir, cli, ws, id) = two_files_waiting_in_a_plain_folder().await;
    std::fs::write(ws.join("one.txt"), "1 and the person's line\n").unwrap();
    reject_killed_after_first_file(&cli, &id, &dir.path().join("paused"), &["--force-revert"]);
    assert!(!ws.join("one.txt").exists(), "the first file was overwritten (the task created it) before the kill");
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let _ = cli.run("hello", &elsewhere, &[]);
    let events = stored(&cli.data, &id);
    let copies: Vec<_> = events
        .iter()
        .filter_map(|e| if let finishline_engine::event::EngineEvent::Reverted { copies, .. } = e { Some(copies.clone()) } else { None })
        .collect();
    assert_eq!(copies.len(), 1, "the revert is finished once: {:?}", &events[events.len().saturating_sub(4)..]);
    assert_eq!(copies[0].iter().map(|c| c.path.as_str()).collect::<Vec<_>>(), vec!["one.txt"], "and names the copy: {copies:?}");
    assert_eq!(std::fs::read_to_string(&copies[0][0].copy).unwrap(), "1 and the person's line\n");
}

/// Each file is looked at again just before the revert touches it: an edit the person saves
/// while the revert is under way, to the same length, is kept and named, never replaced by what
/// the revert saw of the file when it began.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_saved_while_a_revert_is_under_way_is_kept() {
    let (_s, dir, cli, ws, id) = two_files_waiting_in_a_plain_folder().await;
    // Old enough that how the file looks (its size and times) can stand for what it holds.
    std::thread::sleep(Duration::from_millis(1500));
    let marker = dir.path().join("paused");
    let args = ["sessions", "review", &id, "--reject", "--revert", "--base-url", &cli.url, "--model", "m"];
    let child = paused_at(cli.cmd(&args), "revert-after-first-file", &marker, "the revert put back its first file");
    std::fs::write(ws.join("two.txt"), "X\n").unwrap();
    std::fs::remove_file(&marker).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!ws.join("one.txt").exists(), "the file it reached first is undone");
    assert_eq!(std::fs::read_to_string(ws.join("two.txt")).unwrap(), "X\n", "the edit saved meanwhile is kept");
    assert!(String::from_utf8_lossy(&out.stderr).contains("two.txt"), "and named: {}", String::from_utf8_lossy(&out.stderr));
}

/// A revert told to overwrite the person's edit copies it first; an edit saved once more between
/// that copy and the overwrite has no copy, so the file is left as it now is, and named.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_saved_after_the_revert_copied_the_file_and_before_it_overwrote_it_is_kept() {
    let (_s, dir, cli, ws, id) = two_files_waiting_in_a_plain_folder().await;
    std::fs::write(ws.join("two.txt"), "2 and the person's line\n").unwrap();
    let marker = dir.path().join("paused");
    let args = ["sessions", "review", &id, "--reject", "--revert", "--force-revert", "--base-url", &cli.url, "--model", "m"];
    let child = paused_at(cli.cmd(&args), "revert-after-copy", &marker, "the revert copied the person's edit");
    std::fs::write(ws.join("two.txt"), "the person's newer edit\n").unwrap();
    std::fs::remove_file(&marker).unwrap();
    let out = child.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(3), "{said}");
    assert_eq!(std::fs::read_to_string(ws.join("two.txt")).unwrap(), "the person's newer edit\n", "the edit with no copy is kept: {said}");
    assert!(!ws.join("one.txt").exists(), "the rest is undone: {said}");
    assert!(said.contains("two.txt"), "and it is named: {said}");
    assert!(!said.contains("is kept at"), "no copy is said kept of a file that was not overwritten: {said}");
}

/// A revert told to overwrite the person's edit, killed once it had copied the edit and before it
/// overwrote it: the start that finishes it does as the person said, since the file still holds
/// exactly what was copied, and the copy it names is of a version that was overwritten.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revert_cut_short_between_copying_and_overwriting_finishes_as_the_person_said() {
    let (_s, dir, cli, ws, id) = two_files_waiting_in_a_plain_folder().await;
    std::fs::write(ws.join("two.txt"), "2 and the person's line\n").unwrap();
    let marker = dir.path().join("paused");
    let args = ["sessions", "review", &id, "--reject", "--revert", "--force-revert", "--base-url", &cli.url, "--model", "m"];
    let mut child = paused_at(cli.cmd(&args), "revert-after-copy", &marker, "the revert copied the person's edit");
    child.kill().unwrap();
    let _ = child.wait();
    assert_eq!(std::fs::read_to_string(ws.join("two.txt")).unwrap(), "2 and the person's line\n", "killed before it was overwritten");
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let _ = cli.run("hello", &elsewhere, &[]);
    assert!(!ws.join("two.txt").exists() && !ws.join("one.txt").exists(), "the next start finished the revert as the person said");
    let reverted: Vec<(Vec<String>, Vec<String>)> = stored(&cli.data, &id)
        .into_iter()
        .filter_map(|e| {
            if let finishline_engine::event::EngineEvent::Reverted { kept, copies, .. } = e {
                Some((kept, copies.into_iter().map(|c| c.path).collect()))
            } else {
                None
            }
        })
        .collect();
    assert_eq!(reverted, vec![(vec![], vec!["two.txt".to_string()])], "nothing is named kept, and the copy of the overwritten version is");
    let copy = cli.data.join("overwritten").join(&id).join("two.txt");
    assert_eq!(std::fs::read_to_string(copy).unwrap(), "2 and the person's line\n", "which holds their version");
}

/// The same revert, and while the start that finishes it is at work, the person saves the file
/// once more: that edit has no copy, so it is kept and named, never overwritten.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_saved_while_a_cut_short_revert_is_finished_is_kept() {
    let (_s, dir, cli, ws, id) = two_files_waiting_in_a_plain_folder().await;
    std::fs::write(ws.join("two.txt"), "2 and the person's line\n").unwrap();
    let marker = dir.path().join("paused");
    let args = ["sessions", "review", &id, "--reject", "--revert", "--force-revert", "--base-url", &cli.url, "--model", "m"];
    let mut child = paused_at(cli.cmd(&args), "revert-after-copy", &marker, "the revert copied the person's edit");
    child.kill().unwrap();
    let _ = child.wait();
    std::fs::remove_file(&marker).unwrap();
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let next = cli.cmd(&["run", "hello", "--workspace", elsewhere.to_str().unwrap(), "--base-url", &cli.url, "--model", "m"]);
    let next = paused_at(next, "revert-after-first-file", &marker, "the next start is finishing the revert");
    std::fs::write(ws.join("two.txt"), "the person's newer edit\n").unwrap();
    std::fs::remove_file(&marker).unwrap();
    let _ = next.wait_with_output().unwrap();
    assert_eq!(std::fs::read_to_string(ws.join("two.txt")).unwrap(), "the person's newer edit\n", "the edit with no copy is kept");
    let kept: Vec<Vec<String>> = stored(&cli.data, &id)
        .into_iter()
        .filter_map(|e| if let finishline_engine::event::EngineEvent::Reverted { kept, .. } = e { Some(kept) } else { None })
        .collect();
    assert_eq!(kept, vec![vec!["two.txt".to_string()]], "and named");
}

/// A revert a kill cut short, whose folder is gone at the next start (moved, a drive not
/// mounted), is left to finish later: nothing is recorded reverted that it never reached.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revert_cut_short_whose_folder_is_gone_at_the_next_start_waits_for_it_and_finishes_when_it_is_back() {
    let (_s, dir, cli, ws, id) = two_files_waiting_in_a_plain_folder().await;
    reject_killed_after_first_file(&cli, &id, &dir.path().join("paused"), &[]);
    let away = dir.path().join("away");
    std::fs::rename(&ws, &away).unwrap();
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let _ = cli.run("hello", &elsewhere, &[]);
    let reverted = |events: Vec<finishline_engine::event::EngineEvent>| {
        events.into_iter().filter(|e| matches!(e, finishline_engine::event::EngineEvent::Reverted { .. })).count()
    };
    assert_eq!(reverted(stored(&cli.data, &id)), 0, "nothing is recorded reverted while its folder is gone");
    assert_eq!(std::fs::read_to_string(away.join("two.txt")).unwrap(), "2\n", "and nothing was touched where it went");

    std::fs::rename(&away, &ws).unwrap();
    let _ = cli.run("hello", &elsewhere, &[]);
    assert!(!ws.join("one.txt").exists() && !ws.join("two.txt").exists(), "back, the revert is finished");
    assert_eq!(reverted(stored(&cli.data, &id)), 1, "and recorded once");
}

/// Told to overwrite the person's edit where no copy of it can be kept (the copies' folder is a
/// file), the revert leaves it and says why, in the reply and in the session's history, not
/// that it "changed after the agent".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_the_person_said_to_overwrite_left_for_want_of_a_copy_is_named_with_that_reason() {
    let (_s, _dir, cli, ws, id) = two_files_waiting_in_a_plain_folder().await;
    std::fs::write(ws.join("one.txt"), "1 and the person's line\n").unwrap();
    std::fs::create_dir_all(cli.data.join("overwritten")).unwrap();
    std::fs::write(cli.data.join("overwritten").join(&id), "in the way").unwrap();
    let out = cli.review(&id, &["--reject", "--revert", "--force-revert"]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(std::fs::read_to_string(ws.join("one.txt")).unwrap(), "1 and the person's line\n", "not overwritten without a copy: {said}");
    assert!(!ws.join("two.txt").exists(), "the task's other file is reverted: {said}");
    assert!(said.contains("one.txt was not overwritten: no copy of your version could be kept first ("), "{said}");
    assert!(!said.contains("changed after the agent"), "not the other reason: {said}");
    let shown = cli.cmd(&["sessions", "show", &id]).output().unwrap();
    let history = String::from_utf8_lossy(&shown.stdout);
    assert!(history.contains("one.txt was not overwritten: no copy") && !history.contains("changed after the agent"), "{history}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reject_never_overwrites_a_file_someone_changed_after_the_task_unless_asked() {
    let (_s, dir, cli) = server(vec![writes("notes.md", "the task's notes\n", 0)]).await;
    let ws = dir.path().join("plain");
    std::fs::create_dir_all(&ws).unwrap();
    let waiting = cli.run("write notes.md", &ws, &[]);
    let id = session_of(&waiting);
    std::fs::write(ws.join("notes.md"), "the person's notes\n").unwrap();
    let refused = cli.review(&id, &["--reject", "--revert"]);
    assert_eq!(refused.status.code(), Some(6), "the revert stops and asks: {}", String::from_utf8_lossy(&refused.stderr));
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(said.contains("notes.md"), "naming the file: {said}");
    assert!(
        said.contains(&format!("`finishline sessions review {id} --reject --revert --force-revert --data-dir {}`", cli.data.display())),
        "and how to overwrite it all the same: {said}"
    );
    assert!(said.contains("a copy of what is there now is kept"), "and that overwriting keeps their version: {said}");
    assert!(
        said.contains(&format!("`finishline sessions review {id} --reject --revert --keep-changed --data-dir {}`", cli.data.display())),
        "and how to put back the rest, keeping it: {said}"
    );
    assert_eq!(std::fs::read_to_string(ws.join("notes.md")).unwrap(), "the person's notes\n", "nothing is overwritten");
    let forced = cli.review(&id, &["--reject", "--revert", "--force-revert"]);
    assert_eq!(forced.status.code(), Some(3));
    assert!(!ws.join("notes.md").exists(), "forced, the task's file goes");
    // The person's version it overwrote is not lost: a copy is kept, and its place is said.
    let said = String::from_utf8_lossy(&forced.stderr);
    let copy = cli.data.join("overwritten").join(&id).join("notes.md");
    assert_eq!(std::fs::read_to_string(&copy).unwrap_or_default(), "the person's notes\n", "the copy holds their words: {said}");
    assert!(said.contains(&copy.display().to_string()), "and the reject says where it is: {said}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reject_in_place_without_revert_says_the_tasks_changes_stay_in_the_folder() {
    let reads = vec![
        json!({"when": {"kind": "agent", "last_message_contains": "the task's notes"}, "reply": {"text": "Done! The notes say what the task wrote."}}),
        json!({"when": {"kind": "agent", "last_message_contains": "look at the notes"}, "reply": {"tool_calls": [{"name": "read_file", "arguments": {"path": "notes.md"}}]}}),
    ];
    let (_s, dir, cli) = server(vec![writes("notes.md", "the task's notes\n", 0), reads]).await;
    let ws = dir.path().join("plain");
    std::fs::create_dir_all(&ws).unwrap();
    let id = session_of(&cli.run("write notes.md", &ws, &[]));
    let rejected = cli.review(&id, &["--reject"]);
    assert_eq!(rejected.status.code(), Some(3));
    let said = String::from_utf8_lossy(&rejected.stderr);
    assert!(
        said.contains("stays in your folder") && said.contains(&format!("sessions review {id} --reject --revert")),
        "nobody is left thinking it was undone: {said}"
    );
    assert_eq!(std::fs::read_to_string(ws.join("notes.md")).unwrap(), "the task's notes\n");
    // A task that changed nothing has nothing that stays, nor anything to put back.
    let looked = cli.run("look at the notes", &ws, &[]);
    assert_eq!(looked.status.code(), Some(6), "it used a tool, so it waits for review: {}", String::from_utf8_lossy(&looked.stderr));
    let rejected = cli.review(&session_of(&looked), &["--reject"]);
    assert_eq!(rejected.status.code(), Some(3));
    let said = String::from_utf8_lossy(&rejected.stderr);
    assert!(!said.contains("stays in your folder"), "no advice about changes it never made: {said}");
}

/// A later task in the same folder that wrote the same file, to the very same words, and was
/// approved: the late revert of the earlier, rejected one leaves that file alone (it reads as
/// the rejected task's own by its content) and names it, unless told to overwrite it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_revert_keeps_a_file_a_later_task_wrote_the_same_and_had_approved() {
    let same = |asked: &str| calls_then_done(asked, vec![write_call("a.txt", "A1\n")], "a.txt (");
    let (_s, dir, cli) = server(vec![same("first write a.txt"), same("again write a.txt")]).await;
    let ws = dir.path().join("plain");
    std::fs::create_dir_all(&ws).unwrap();
    let first = session_of(&cli.run("first write a.txt", &ws, &[]));
    assert_eq!(cli.review(&first, &["--reject"]).status.code(), Some(3));
    std::fs::remove_file(ws.join("a.txt")).unwrap();
    let second = session_of(&cli.run("again write a.txt", &ws, &[]));
    assert_eq!(cli.review(&second, &["--approve"]).status.code(), Some(0));
    let late = cli.review(&first, &["--reject", "--revert"]);
    let said = String::from_utf8_lossy(&late.stderr);
    assert_eq!(std::fs::read_to_string(ws.join("a.txt")).unwrap_or_default(), "A1\n", "the approved file stays: {said}");
    assert!(said.contains("a.txt"), "and is named: {said}");
}

/// The command a reject without revert names does what it says, later: the task's changes go,
/// the person's files stay, a file they edited since is kept unless they say otherwise, and a
/// second time there is nothing left to revert.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_rejected_in_place_without_revert_is_reverted_later_by_the_command_it_names() {
    let rules = vec![
        writes("notes.md", "the task's notes\n", 0),
        calls_then_done("rewrite mine.txt", vec![write_call("mine.txt", "the agent's words\n")], "Updated mine.txt"),
    ];
    let (_s, dir, cli) = server(rules).await;
    let ws = dir.path().join("plain");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("keep.txt"), "the person's own file\n").unwrap();
    std::fs::write(ws.join("mine.txt"), "my precious content\n").unwrap();
    let id = session_of(&cli.run("write notes.md", &ws, &[]));
    assert_eq!(cli.review(&id, &["--reject"]).status.code(), Some(3));
    let later = cli.review(&id, &["--reject", "--revert"]);
    let said = String::from_utf8_lossy(&later.stderr);
    assert_eq!(later.status.code(), Some(3), "{said}");
    assert!(said.contains("Reverted: 0 restored, 1 removed"), "{said}");
    assert!(!ws.join("notes.md").exists(), "the task's file is gone");
    assert_eq!(std::fs::read_to_string(ws.join("keep.txt")).unwrap(), "the person's own file\n", "the person's file stays");
    let again = cli.review(&id, &["--reject", "--revert"]);
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("already reverted"), "{}", String::from_utf8_lossy(&again.stderr));

    // An overwrite of the person's file, edited again by them after the reject: kept unless forced.
    let id = session_of(&cli.run("rewrite mine.txt", &ws, &[]));
    let rejected = cli.review(&id, &["--reject"]);
    assert_eq!(rejected.status.code(), Some(3), "{}", String::from_utf8_lossy(&rejected.stderr));
    std::fs::write(ws.join("mine.txt"), "the agent's words\nand mine after\n").unwrap();
    let kept = cli.review(&id, &["--reject", "--revert"]);
    assert_eq!(std::fs::read_to_string(ws.join("mine.txt")).unwrap(), "the agent's words\nand mine after\n", "{}", String::from_utf8_lossy(&kept.stderr));
    let forced = cli.review(&id, &["--reject", "--revert", "--force-revert"]);
    assert_eq!(forced.status.code(), Some(3), "{}", String::from_utf8_lossy(&forced.stderr));
    assert_eq!(std::fs::read_to_string(ws.join("mine.txt")).unwrap(), "my precious content\n", "put back as it was before the task");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relative_data_folder_keeps_a_waiting_tasks_worktree_through_the_next_command() {
    let (_s, dir, cli) = server(vec![writes("notes.txt", "notes\n", 0)]).await;
    let r = repo(dir.path());
    // The person runs the CLI from the folder above, naming the data folder relatively.
    let relative = |args: &[&str]| {
        let mut c = Command::new(bin());
        c.args(args)
            .args(["--data-dir", "data"])
            .current_dir(dir.path())
            .env_remove("OPENAI_API_KEY")
            .env("XDG_DATA_HOME", dir.path().join("xdg"))
            .stdin(Stdio::null());
        c.output().unwrap()
    };
    let first = relative(&["run", "write notes.txt", "--workspace", "repo", "--base-url", &cli.url, "--model", "m", "--json"]);
    assert_eq!(first.status.code(), Some(6), "waits for review: {}", String::from_utf8_lossy(&first.stderr));
    let id = session_of(&first);
    let approved = relative(&["sessions", "review", &id, "--approve", "--base-url", &cli.url, "--model", "m"]);
    assert_eq!(approved.status.code(), Some(0), "the waiting task's worktree is still there to land: {}", String::from_utf8_lossy(&approved.stderr));
    assert_eq!(std::fs::read_to_string(r.join("notes.txt")).unwrap(), "notes\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_waiting_for_review_keeps_no_second_index_and_its_next_round_sees_only_its_own_changes() {
    let (_s, dir, cli) = server(vec![writes("more.txt", "more\n", 0), writes("app.txt", "uses the env\n", 0)]).await;
    let r = repo(dir.path());
    std::fs::write(r.join(".env"), "TOKEN=local\n").unwrap();
    let first = cli.run("write app.txt", &r, &[]);
    assert_eq!(first.status.code(), Some(6), "waits for review: {}", String::from_utf8_lossy(&first.stderr));
    // The task's checkpoint store lends its index back to the worktree while it waits: the
    // worktree's own index already says what the files are, so a copy would only take disk.
    let stores: Vec<PathBuf> =
        std::fs::read_dir(cli.data.join("checkpoints")).unwrap().map(|e| e.unwrap().path()).filter(|p| p.join("HEAD").exists()).collect();
    assert_eq!(stores.len(), 1, "one checkpoint store, the task's");
    assert!(!stores[0].join("index").exists(), "no second index of the checkout while the task waits");

    let id = session_of(&first);
    let second = cli.review(&id, &["--request-changes", "also write more.txt", "--json"]);
    assert_eq!(second.status.code(), Some(6), "the next round ends at its review: {}", String::from_utf8_lossy(&second.stderr));
    let files = reviewed(&second);
    assert!(files.contains(&"more.txt".to_string()), "the next round's file is reviewed: {files:?}");
    assert!(!files.iter().any(|f| f == ".env" || f == "README.md"), "never the copied .env or a file the task did not touch: {files:?}");
    let approved = cli.review(&id, &["--approve", "--json"]);
    assert_eq!(approved.status.code(), Some(0), "approved and landed: {}", String::from_utf8_lossy(&approved.stderr));
    let landed: Vec<String> = git(&r, &["diff", "--name-only", "HEAD~1", "HEAD"]).lines().map(String::from).collect();
    assert_eq!(landed, vec!["app.txt", "more.txt"], "both rounds land, and nothing else");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_that_only_talks_back_to_requested_changes_leaves_the_work_waiting_for_a_decision_not_idle() {
    let talks = vec![json!({"when": {"kind": "agent", "last_message_contains": "make it louder"}, "reply": {"text": "I think it is fine as it is."}})];
    let (_s, dir, cli) = server(vec![talks, writes("app.txt", "app\n", 0)]).await;
    let r = repo(dir.path());
    let first = cli.run("write app.txt", &r, &[]);
    assert_eq!(first.status.code(), Some(6), "waits for review: {}", String::from_utf8_lossy(&first.stderr));
    let id = session_of(&first);
    let second = cli.review(&id, &["--request-changes", "make it louder", "--json"]);
    let end = summary(&second);
    assert_eq!(
        second.status.code(),
        Some(6),
        "the round that changed nothing still ends at a review of the undecided work, not idle with nothing to approve or reject: {end}"
    );
    assert_eq!(end["status"], "awaiting_review", "{end}");
    assert_ne!(end["end_reason"], "conversation", "{end}");
    assert!(reviewed(&second).is_empty(), "the round's review shows what the round changed: nothing");
    let approved = cli.review(&id, &["--approve"]);
    assert_eq!(approved.status.code(), Some(0), "and the work can be approved: {}", String::from_utf8_lossy(&approved.stderr));
    assert_eq!(std::fs::read_to_string(r.join("app.txt")).unwrap(), "app\n", "the first round's work landed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_that_stops_with_work_in_its_worktree_and_no_review_says_how_to_go_on_or_put_it_away() {
    let command = vec![
        json!({"when": {"kind": "agent", "last_message_contains": "run the build"}, "reply": {"text": "Building.", "tool_calls": [{"name": "run_command", "arguments": {"command": "echo built"}}]}}),
    ];
    let (_s, dir, cli) = server(vec![command]).await;
    let r = repo(dir.path());
    // Nobody at a terminal to allow the command: it is denied and the task stops, idle.
    let out = cli.cmd(&["run", "run the build", "--workspace", r.to_str().unwrap(), "--base-url", &cli.url, "--model", "m"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("status idle"), "{text}");
    assert!(
        text.contains("worktree")
            && text.contains("is kept")
            && text.contains("finishline sessions resume ses_")
            && text.contains("finishline sessions discard ses_"),
        "it says the worktree stays, and both ways on: {text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approving_and_rejecting_need_no_model_and_each_says_what_it_did() {
    let (_s, dir, cli) = server(vec![writes("kept.txt", "kept\n", 0), writes("dropped.txt", "dropped\n", 0)]).await;
    let r = repo(dir.path());
    let kept = session_of(&cli.run("write kept.txt", &r, &[]));
    let dropped = session_of(&cli.run("write dropped.txt", &r, &[]));
    // No --base-url, no --model and no settings file: a decision asks no model.
    let approved = cli.cmd(&["sessions", "review", &kept, "--approve"]).output().unwrap();
    assert_eq!(approved.status.code(), Some(0), "approve: {}", String::from_utf8_lossy(&approved.stderr));
    assert!(String::from_utf8_lossy(&approved.stderr).contains("Landed on main"), "{}", String::from_utf8_lossy(&approved.stderr));
    let rejected = cli.cmd(&["sessions", "review", &dropped, "--reject"]).output().unwrap();
    assert_eq!(rejected.status.code(), Some(3), "a rejected session exits 3: {}", String::from_utf8_lossy(&rejected.stderr));
    assert!(String::from_utf8_lossy(&rejected.stderr).contains("Rejected."), "a reject says so: {}", String::from_utf8_lossy(&rejected.stderr));
    assert_eq!(std::fs::read_to_string(r.join("kept.txt")).unwrap(), "kept\n");
    assert!(!r.join("dropped.txt").exists());
    assert_eq!(std::fs::read_to_string(r.join("README.md")).unwrap(), "hello\nmy own edit, not committed\n", "the person's edit is untouched");
    // Asking for changes starts work for a model: with none named, the server and model the
    // task was started with; a provider named without a model is refused up front.
    let third = session_of(&cli.run("write kept.txt", &r, &[]));
    let half = cli.cmd(&["sessions", "review", &third, "--request-changes", "more", "--provider", "anthropic"]).output().unwrap();
    assert_eq!(half.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&half.stderr).contains("--model"), "it says what to pass: {}", String::from_utf8_lossy(&half.stderr));
    let asked = cli.cmd(&["sessions", "review", &third, "--request-changes", "more"]).output().unwrap();
    assert_eq!(asked.status.code(), Some(6), "the task's own model worked on it, and it waits for review again: {}", String::from_utf8_lossy(&asked.stderr));
}

/// The person's branch moved on with the very change the task made: approving lands nothing,
/// and says why in those words, not as a task that changed nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approving_a_change_the_moved_branch_already_holds_says_so() {
    let (_s, dir, cli) = server(vec![writes("same.txt", "same\n", 0)]).await;
    let r = repo(dir.path());
    let id = session_of(&cli.run("write same.txt", &r, &[]));
    std::fs::write(r.join("same.txt"), "same\n").unwrap();
    git(&r, &["add", "same.txt"]);
    git(&r, &["commit", "-q", "-m", "the same change, made by hand"]);
    let approved = cli.cmd(&["sessions", "review", &id, "--approve"]).output().unwrap();
    let said = String::from_utf8_lossy(&approved.stderr);
    assert_eq!(approved.status.code(), Some(0), "{said}");
    assert!(said.contains("Nothing to land: main already holds everything the task changed."), "{said}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_the_person_took_off_their_branch_during_the_task_never_comes_back_with_its_landing() {
    let (_s, dir, cli) = server(vec![writes("app.txt", "app\n", 0)]).await;
    let r = repo(dir.path());
    std::fs::write(r.join("secret.txt"), "a key, committed by mistake\n").unwrap();
    git(&r, &["add", "secret.txt"]);
    git(&r, &["commit", "-q", "-m", "oops"]);
    let id = session_of(&cli.run("write app.txt", &r, &[]));
    // While the task waits for review, the person takes that commit off their branch.
    git(&r, &["reset", "-q", "--keep", "HEAD~1"]);
    let approved = cli.cmd(&["sessions", "review", &id, "--approve"]).output().unwrap();
    assert_eq!(approved.status.code(), Some(0), "{}", String::from_utf8_lossy(&approved.stderr));
    let tree = git(&r, &["ls-tree", "-r", "--name-only", "HEAD"]);
    assert!(tree.lines().any(|f| f == "app.txt"), "the task's file lands: {tree}");
    assert!(!tree.lines().any(|f| f == "secret.txt") && !r.join("secret.txt").exists(), "and nothing the person took off comes back: {tree}");
    assert_eq!(std::fs::read_to_string(r.join("README.md")).unwrap(), "hello\nmy own edit, not committed\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_the_person_took_off_after_a_landing_rebased_onto_it_never_comes_back() {
    let (_s, dir, cli) = server(vec![writes("README.md", "the task's readme\n", 0)]).await;
    let r = repo(dir.path());
    let id = session_of(&cli.run("write README.md", &r, &[]));
    // The person's branch moves on while the task waits; the first Approve rebases the task onto
    // it, and is then stopped by the person's own uncommitted edit of README.md.
    std::fs::write(r.join("secret.txt"), "a key, committed by mistake\n").unwrap();
    git(&r, &["add", "secret.txt"]);
    git(&r, &["commit", "-q", "-m", "oops"]);
    let blocked = cli.review(&id, &["--approve"]);
    assert_ne!(blocked.status.code(), Some(0), "{}", String::from_utf8_lossy(&blocked.stderr));
    // They take that commit off again, put their edit away, and approve once more.
    git(&r, &["reset", "-q", "--keep", "HEAD~1"]);
    git(&r, &["checkout", "-q", "--", "README.md"]);
    let approved = cli.review(&id, &["--approve"]);
    assert_eq!(approved.status.code(), Some(0), "{}", String::from_utf8_lossy(&approved.stderr));
    let tree = git(&r, &["ls-tree", "-r", "--name-only", "HEAD"]);
    assert!(!tree.lines().any(|f| f == "secret.txt") && !r.join("secret.txt").exists(), "the commit they took off stays off: {tree}");
    assert_eq!(std::fs::read_to_string(r.join("README.md")).unwrap(), "the task's readme\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approving_a_task_that_changed_nothing_leaves_no_empty_commit() {
    let (_s, dir, cli) = server(vec![writes("README.md", "hello\n", 0)]).await;
    let r = repo(dir.path());
    let before = git(&r, &["rev-parse", "HEAD"]);
    // The agent writes the file exactly as it is committed: the task changes nothing.
    let id = session_of(&cli.run("write README.md", &r, &[]));
    let approved = cli.cmd(&["sessions", "review", &id, "--approve"]).output().unwrap();
    assert_eq!(approved.status.code(), Some(0), "{}", String::from_utf8_lossy(&approved.stderr));
    assert!(String::from_utf8_lossy(&approved.stderr).contains("Nothing to land"), "{}", String::from_utf8_lossy(&approved.stderr));
    assert_eq!(git(&r, &["rev-parse", "HEAD"]), before, "no commit was added to the person's branch");
    assert_eq!(std::fs::read_to_string(r.join("README.md")).unwrap(), "hello\nmy own edit, not committed\n");
}

/// The same, landed into the person's working tree: an empty patch is nothing to land, not a
/// conflict to resolve (`git apply` refused it, and the message offered `--resolve`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approving_a_task_that_changed_nothing_into_the_working_tree_lands_nothing_and_says_so() {
    let (_s, dir, cli) = server(vec![writes("README.md", "hello\n", 0)]).await;
    let r = repo(dir.path());
    let before = git(&r, &["rev-parse", "HEAD"]);
    let id = session_of(&cli.run("write README.md", &r, &[]));
    let approved = cli.cmd(&["sessions", "review", &id, "--approve", "--land", "uncommitted"]).output().unwrap();
    let said = String::from_utf8_lossy(&approved.stderr);
    assert_eq!(approved.status.code(), Some(0), "{said}");
    assert!(said.contains("Nothing to land"), "{said}");
    assert!(!said.contains("--resolve"), "no conflict to resolve: {said}");
    assert_eq!(git(&r, &["rev-parse", "HEAD"]), before);
    assert_eq!(std::fs::read_to_string(r.join("README.md")).unwrap(), "hello\nmy own edit, not committed\n", "the person's edit untouched");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_the_person_changed_in_the_worktree_after_the_review_lands_with_the_task() {
    let (_s, dir, cli) = server(vec![writes("app.txt", "from the agent\n", 0)]).await;
    let r = repo(dir.path());
    let waiting = cli.run("write app.txt", &r, &[]);
    assert_eq!(waiting.status.code(), Some(6), "{}", String::from_utf8_lossy(&waiting.stderr));
    let folder = PathBuf::from(lines(&waiting).into_iter().find(|e| e["type"] == "task_workspace").unwrap()["worktree"]["folder"].as_str().unwrap());
    // The person opens the task's worktree while it waits: touches up the task's file, adds one.
    std::fs::write(folder.join("app.txt"), "from the agent, touched up\n").unwrap();
    std::fs::create_dir_all(folder.join("notes")).unwrap();
    std::fs::write(folder.join("notes/why.md"), "because\n").unwrap();
    let approved = cli.review(&session_of(&waiting), &["--approve", "--json"]);
    assert_eq!(approved.status.code(), Some(0), "{}", String::from_utf8_lossy(&approved.stderr));
    assert_eq!(std::fs::read_to_string(r.join("app.txt")).unwrap(), "from the agent, touched up\n");
    assert_eq!(std::fs::read_to_string(r.join("notes/why.md")).unwrap(), "because\n");
    let landed: Vec<String> = git(&r, &["diff", "--name-only", "HEAD~1", "HEAD"]).lines().map(String::from).collect();
    assert_eq!(landed, vec!["app.txt", "notes/why.md"], "one commit with both");
    assert_eq!(git(&r, &["log", "-1", "--format=%an <%ae>"]), "Person <person@example.com>", "as the person configured");
    assert_eq!(std::fs::read_to_string(r.join("README.md")).unwrap(), "hello\nmy own edit, not committed\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repository_that_names_nobody_gets_commits_by_finishline_not_a_guessed_name() {
    let (_s, dir, cli) = server(vec![writes("app.txt", "app\n", 0)]).await;
    let r = repo(dir.path());
    git(&r, &["config", "--unset", "user.name"]);
    git(&r, &["config", "--unset", "user.email"]);
    // No global identity either: git would otherwise guess one from the machine.
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let run = |args: &[&str]| cli.cmd(args).env("HOME", &home).env("GIT_CONFIG_NOSYSTEM", "1").output().unwrap();
    let waiting = run(&["run", "write app.txt", "--workspace", r.to_str().unwrap(), "--base-url", &cli.url, "--model", "m", "--json"]);
    assert_eq!(waiting.status.code(), Some(6), "{}", String::from_utf8_lossy(&waiting.stderr));
    let approved = run(&["sessions", "review", &session_of(&waiting), "--approve"]);
    assert_eq!(approved.status.code(), Some(0), "{}", String::from_utf8_lossy(&approved.stderr));
    assert_eq!(std::fs::read_to_string(r.join("app.txt")).unwrap(), "app\n");
    assert_eq!(git(&r, &["log", "-1", "--format=%an <%ae>|%cn <%ce>"]), "Finishline <finishline@localhost>|Finishline <finishline@localhost>");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_in_a_sparse_checkout_commits_what_it_wrote_outside_it_and_lands_without_writing_that_into_the_persons_folder() {
    let rules = calls_then_done(
        "write both",
        vec![
            write_call("src/lib.rs", "pub fn task() {}\n"),
            write_call("docs/guide.md", "the task's guide\n"),
            write_call("docs/old.md", "rewritten by the task\n"),
        ],
        "Created docs/guide.md",
    );
    let (_s, dir, cli) = server(vec![rules]).await;
    // The person works on src only.
    let r = sparse_repo(dir.path());
    assert!(!r.join("docs").exists());
    let run = cli.run("write both", &r, &["--review", "approve"]);
    assert_eq!(
        run.status.code(),
        Some(0),
        "it lands: {}\n{}",
        String::from_utf8_lossy(&run.stderr),
        String::from_utf8_lossy(&run.stdout).lines().filter(|l| l.contains("\"type\":\"error\"")).collect::<Vec<_>>().join("\n")
    );
    assert_eq!(git(&r, &["show", "main:docs/guide.md"]), "the task's guide", "the file outside the sparse set landed on the branch");
    assert_eq!(git(&r, &["show", "main:docs/old.md"]), "rewritten by the task", "and so did its change of a file outside it");
    assert_eq!(std::fs::read_to_string(r.join("src/lib.rs")).unwrap(), "pub fn task() {}\n", "the file inside it reached the folder");
    assert!(!r.join("docs").exists(), "nothing outside the person's sparse set was written into their folder");
    assert_eq!(git(&r, &["status", "--porcelain"]), "", "and git sees the checkout as clean");
    assert_eq!(git(&r, &["worktree", "list", "--porcelain"]).matches("worktree ").count(), 1, "its worktree is gone");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_the_person_made_in_the_tasks_worktree_after_its_run_lands_with_it() {
    let (_s, dir, cli) = server(vec![writes("task.txt", "the task's\n", 0)]).await;
    let r = repo(dir.path());
    let waiting = cli.run("write task.txt", &r, &[]);
    assert_eq!(waiting.status.code(), Some(6), "it waits for review");
    let folder = PathBuf::from(lines(&waiting).into_iter().find(|e| e["type"] == "task_workspace").unwrap()["worktree"]["folder"].as_str().unwrap());
    // The person opens the worktree and commits a fix of their own on the task's branch.
    std::fs::write(folder.join("task.txt"), "the task's, fixed by the person\n").unwrap();
    std::fs::write(folder.join("theirs.txt"), "added in review\n").unwrap();
    git(&folder, &["add", "."]);
    git(&folder, &["commit", "-q", "-m", "the person's fix"]);
    let approved = cli.review(&session_of(&waiting), &["--approve"]);
    assert_eq!(approved.status.code(), Some(0), "it lands: {}", String::from_utf8_lossy(&approved.stderr));
    assert_eq!(git(&r, &["show", "main:task.txt"]), "the task's, fixed by the person", "what lands is the branch as it is, not as the run left it");
    assert_eq!(git(&r, &["show", "main:theirs.txt"]), "added in review");
    assert_eq!(std::fs::read_to_string(r.join("theirs.txt")).unwrap(), "added in review\n", "and it reached the person's folder");
    assert_eq!(git(&r, &["rev-list", "--count", "main"]), "2", "as one commit");
}

/// A task too long for a commit's subject line lands with its subject cut at a word, and the
/// whole task in the message's body: the commit never ends mid-sentence with nothing after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_task_lands_with_a_short_subject_and_the_whole_task_in_the_commit_body() {
    let (_s, dir, cli) = server(vec![writes("one.txt", "1\n", 0)]).await;
    let r = repo(dir.path());
    let task = "write one.txt with the number one on its own line, then check that the file ends with a newline and nothing else";
    let done = cli.run(task, &r, &["--review", "approve"]);
    assert_eq!(done.status.code(), Some(0), "{}", String::from_utf8_lossy(&done.stderr));
    let subject = git(&r, &["log", "-1", "--format=%s", "main"]);
    assert!(subject.chars().count() <= 81 && subject.ends_with('…'), "a subject line, cut at a word: {subject}");
    let body = git(&r, &["log", "-1", "--format=%b", "main"]);
    assert!(body.starts_with(task), "the whole task opens the body: {body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follow_up_after_a_landing_lands_as_a_second_commit_named_after_what_was_asked() {
    let (_s, dir, cli) = server(vec![writes("first.txt", "first\n", 0), writes("second.txt", "second\n", 0)]).await;
    let r = repo(dir.path());
    let first = cli.run("write first.txt", &r, &["--review", "approve"]);
    assert_eq!(first.status.code(), Some(0), "{}", String::from_utf8_lossy(&first.stderr));
    let id = session_of(&first);
    let follow = cli.cmd(&["sessions", "resume", &id, "now write second.txt", "--base-url", &cli.url, "--model", "m", "--json"]).output().unwrap();
    assert_eq!(follow.status.code(), Some(6), "the follow-up waits for review: {}", String::from_utf8_lossy(&follow.stderr));
    assert_eq!(reviewed(&follow), vec!["second.txt"], "its review lists only what it changed");
    let approved = cli.review(&id, &["--approve"]);
    assert_eq!(approved.status.code(), Some(0), "{}", String::from_utf8_lossy(&approved.stderr));
    let log: Vec<String> = git(&r, &["log", "--format=%s", "main"]).lines().map(String::from).collect();
    assert_eq!(log, vec!["now write second.txt", "write first.txt", "init"], "each landing is a commit named after what was asked for it");
    assert!(git(&r, &["log", "-1", "--format=%b", "main"]).contains("Follow-up to “write first.txt”"), "and the second says what it follows");
    assert_eq!(git(&r, &["show", "main:second.txt"]), "second");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follow_up_sent_while_a_rejected_tasks_worktree_is_still_being_removed_works_in_a_new_one_and_lands() {
    let (_s, dir, cli) = server(vec![writes("first.txt", "first\n", 0), writes("second.txt", "second\n", 0)]).await;
    let r = repo(dir.path());
    let id = session_of(&cli.run("write first.txt", &r, &[]));
    // The reject is recorded; the removal of its worktree has not started (the window removes it
    // off the decision's path, so a message can come first).
    let marker = dir.path().join("paused");
    let rejecting = paused_at(
        cli.cmd(&["sessions", "review", &id, "--reject"]),
        "before-worktree-removal",
        &marker,
        "the reject is recorded and its worktree is about to go",
    );
    let follow = cli.cmd(&["sessions", "resume", &id, "then write second.txt", "--base-url", &cli.url, "--model", "m", "--json"]).output().unwrap();
    assert_eq!(follow.status.code(), Some(6), "the follow-up waits for review: {}", String::from_utf8_lossy(&follow.stderr));
    std::fs::remove_file(&marker).unwrap();
    let out = rejecting.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(3), "rejected: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(reviewed(&follow), vec!["second.txt"], "the follow-up's review lists only what it changed");
    // The agent's conversation still holds "Created first.txt": it is told that work is gone,
    // in Finishline's words, never the person's.
    let note = lines(&follow).into_iter().find(|e| e["type"] == "continuation").expect("a note from Finishline");
    assert_eq!(note["source"], "new_worktree");
    assert!(note["text"].as_str().unwrap().contains("were rejected"), "{note}");
    let approved = cli.review(&id, &["--approve"]);
    assert_eq!(approved.status.code(), Some(0), "the follow-up's work outlived the old worktree's removal: {}", String::from_utf8_lossy(&approved.stderr));
    assert_eq!(git(&r, &["show", "main:second.txt"]), "second");
    assert_eq!(git(&r, &["log", "-1", "--format=%s", "main"]), "then write second.txt", "the commit is named after what it holds, not the rejected task");
    assert!(git(&r, &["log", "-1", "--format=%b", "main"]).contains("Follow-up to “write first.txt”"), "and says what it follows");
    assert!(!r.join("first.txt").exists(), "the rejected work never landed");
    assert_eq!(git(&r, &["worktree", "list", "--porcelain"]).matches("worktree ").count(), 1, "no worktree is left");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_that_landed_and_whose_follow_up_was_rejected_is_listed_as_rejected_with_its_earlier_work_approved() {
    let (_s, dir, cli) = server(vec![writes("first.txt", "first\n", 0), writes("second.txt", "second\n", 0)]).await;
    let r = repo(dir.path());
    let id = session_of(&cli.run("write first.txt", &r, &["--review", "approve"]));
    let follow =
        cli.cmd(&["sessions", "resume", &id, "now write second.txt", "--base-url", &cli.url, "--model", "m", "--json", "--review", "reject"]).output().unwrap();
    assert_eq!(follow.status.code(), Some(3), "the follow-up is rejected: {}", String::from_utf8_lossy(&follow.stderr));
    let listed = String::from_utf8_lossy(&cli.cmd(&["sessions", "list"]).output().unwrap().stdout).into_owned();
    let row = listed.lines().find(|l| l.starts_with(&id)).unwrap_or_else(|| panic!("{listed}"));
    assert!(row.contains("rejected") && row.contains("[earlier work approved]"), "{row}");
    assert_eq!(git(&r, &["show", "main:first.txt"]), "first", "what was approved stays landed");
    let json = lines(&cli.cmd(&["sessions", "list", "--json"]).output().unwrap());
    assert_eq!(json.iter().find(|s| s["id"] == id.as_str()).unwrap()["approvals"], 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_review_names_what_the_task_wrote_that_gitignore_hides_since_it_never_lands() {
    let calls = vec![write_call(".env", "TOKEN=made-by-the-task\n"), write_call("build/out.txt", "built\n"), write_call("notes.txt", "notes\n")];
    let (_s, dir, cli) = server(vec![calls_then_done("write the notes", calls, "Created notes.txt")]).await;
    let r = person_repo(dir.path(), &[(".gitignore", ".env\nbuild/\n")]);
    let waiting = cli.run("write the notes", &r, &[]);
    assert_eq!(reviewed(&waiting), vec!["notes.txt"], "{}", String::from_utf8_lossy(&waiting.stderr));
    let review = lines(&waiting).into_iter().rev().find(|e| e["type"] == "review_requested").unwrap();
    assert_eq!(review["not_landed"], json!([".env", "build/"]), "what never lands is named, a wholly ignored folder once");
    // And in words, where a person reads the run.
    let said = cli.cmd(&["run", "write the notes", "--workspace", r.to_str().unwrap(), "--base-url", &cli.url, "--model", "m"]).output().unwrap();
    let said = String::from_utf8_lossy(&said.stdout);
    assert!(
        said.contains("never landed (.gitignore hides them, or they were copied in from your checkout; they go with the worktree): .env, build/"),
        "{said}"
    );
    assert!(said.contains("to keep one in your checkout, decide with `--copy-ignored PATH`"), "and how to keep them: {said}");
    // Read again later, the waiting review says it too; approved without keeping them, what went
    // with the worktree is named.
    let id = session_of(&waiting);
    let later = cli.cmd(&["sessions", "review", &id]).output().unwrap();
    let later = String::from_utf8_lossy(&later.stdout);
    assert!(
        later.contains("never landed (.gitignore hides them, or they were copied in from your checkout; they go with the worktree): .env, build/"),
        "{later}"
    );
    assert!(later.contains("--copy-ignored PATH"), "{later}");
    let approved = cli.review(&id, &["--approve"]);
    let said = String::from_utf8_lossy(&approved.stderr);
    assert_eq!(approved.status.code(), Some(0), "{said}");
    assert!(said.contains("Not copied, so gone with the worktree (.gitignore hides them): .env, build/."), "{said}");
}

/// The task changed a file copied in from the person's checkout at its start (`.env`): copied
/// files never land, so the review names it as never landing, and approve says it went with the
/// worktree, rather than show it as a change and drop it without a word.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copied_in_file_the_task_changed_is_named_as_never_landing() {
    let calls = vec![write_call(".env", "TOKEN=changed-by-the-task\n"), write_call("notes.txt", "notes\n")];
    let (_s, dir, cli) = server(vec![calls_then_done("write the notes", calls, "Created notes.txt")]).await;
    let r = repo(dir.path());
    std::fs::write(r.join(".env"), "TOKEN=the-persons\n").unwrap();
    let waiting = cli.run("write the notes", &r, &[]);
    let review = lines(&waiting).into_iter().rev().find(|e| e["type"] == "review_requested").unwrap();
    assert_eq!(review["not_landed"], json!([".env"]), "{}", String::from_utf8_lossy(&waiting.stderr));
    let id = session_of(&waiting);
    let approved = cli.review(&id, &["--approve"]);
    let said = String::from_utf8_lossy(&approved.stderr);
    assert_eq!(approved.status.code(), Some(0), "{said}");
    assert!(said.contains("Not copied, so gone with the worktree (.gitignore hides them): .env."), "{said}");
    assert_eq!(std::fs::read_to_string(r.join(".env")).unwrap(), "TOKEN=the-persons\n", "the person's own stays as it was");
    assert_eq!(std::fs::read_to_string(r.join("notes.txt")).unwrap(), "notes\n", "and the task landed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_approve_waits_for_the_person_when_the_agent_wrote_a_file_gitignore_hides_and_not_for_what_its_commands_left() {
    let calls = vec![write_call(".env", "TOKEN=made-by-the-task\n"), write_call("notes.txt", "notes\n")];
    let built = json!({"name": "run_command", "arguments": {"command": "mkdir -p build && echo built > build/out.txt"}});
    let (_s, dir, cli) = server(vec![
        calls_then_done("write the notes", calls, "Created notes.txt"),
        calls_then_done("build it", vec![built, write_call("made.txt", "made\n")], "Created made.txt"),
    ])
    .await;
    let r = person_repo(dir.path(), &[(".gitignore", ".env\nbuild/\n")]);

    let waiting = cli.run("write the notes", &r, &["--review", "approve"]);
    assert_eq!(waiting.status.code(), Some(6), "the task's own .env would go with its worktree: {}", String::from_utf8_lossy(&waiting.stderr));
    let review = lines(&waiting).into_iter().rev().find(|e| e["type"] == "review_requested").unwrap();
    let why = review["auto_approve"]["reason"].as_str().unwrap();
    assert!(why.contains("the agent wrote .env, which .gitignore hides"), "{why}");
    assert!(!r.join("notes.txt").exists(), "nothing landed behind the person's back");
    let id = session_of(&waiting);
    let approved = cli.review(&id, &["--approve", "--copy-ignored", ".env"]);
    assert_eq!(approved.status.code(), Some(0), "{}", String::from_utf8_lossy(&approved.stderr));
    assert_eq!(std::fs::read_to_string(r.join(".env")).unwrap(), "TOKEN=made-by-the-task\n", "the person kept it");

    // What a command left behind (a build folder, node_modules) is no reason to wait.
    let built = cli.run("build it", &r, &["--review", "approve", "--allow", "all"]);
    assert_eq!(built.status.code(), Some(0), "{}", String::from_utf8_lossy(&built.stderr));
    assert_eq!(std::fs::read_to_string(r.join("made.txt")).unwrap(), "made\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_gitignore_hides_is_copied_into_the_checkout_when_the_person_asks_and_nothing_of_theirs_is_overwritten() {
    let calls = vec![
        write_call(".env", "TOKEN=made-by-the-task\n"),
        write_call("build/out.txt", "built\n"),
        write_call("build/keep.txt", "the task's\n"),
        write_call("notes.txt", "notes\n"),
    ];
    let (_s, dir, cli) = server(vec![calls_then_done("write the notes", calls, "Created notes.txt")]).await;
    let r = person_repo(dir.path(), &[(".gitignore", ".env\nbuild/\n")]);
    std::fs::create_dir_all(r.join("build")).unwrap();
    std::fs::write(r.join("build/keep.txt"), "the person's own\n").unwrap();
    let waiting = cli.run("write the notes", &r, &[]);
    assert_eq!(waiting.status.code(), Some(6), "{}", String::from_utf8_lossy(&waiting.stderr));
    let id = session_of(&waiting);

    let named_nowhere = cli.review(&id, &["--approve", "--copy-ignored", "notes.txt"]);
    assert_eq!(named_nowhere.status.code(), Some(2), "only what the review named as not landing can be copied");
    assert!(String::from_utf8_lossy(&named_nowhere.stderr).contains("the review names: .env, build/"), "{}", String::from_utf8_lossy(&named_nowhere.stderr));
    assert!(!r.join("notes.txt").exists() && !r.join(".env").exists(), "and nothing was done");

    let approved = cli.review(&id, &["--approve", "--copy-ignored", ".env", "--copy-ignored", "build/"]);
    assert_eq!(approved.status.code(), Some(0), "{}", String::from_utf8_lossy(&approved.stderr));
    assert_eq!(std::fs::read_to_string(r.join(".env")).unwrap(), "TOKEN=made-by-the-task\n", "the task's hidden file is kept");
    assert_eq!(std::fs::read_to_string(r.join("build/out.txt")).unwrap(), "built\n");
    assert_eq!(std::fs::read_to_string(r.join("build/keep.txt")).unwrap(), "the person's own\n", "a file of the person's is never overwritten");
    assert_eq!(std::fs::read_to_string(r.join("notes.txt")).unwrap(), "notes\n", "and the task landed");
    let said = String::from_utf8_lossy(&approved.stderr);
    assert!(said.contains("Copied into your checkout: .env, build/out.txt."), "{said}");
    assert!(said.contains("Left as it was, already in your checkout: build/keep.txt."), "{said}");
    assert!(
        stored(&cli.data, &id).iter().any(|e| matches!(e, finishline_engine::event::EngineEvent::IgnoredCopied { copied, left, .. }
            if copied == &[".env".to_string(), "build/out.txt".to_string()] && left == &["build/keep.txt".to_string()])),
        "the session keeps what was copied"
    );
}

/// A copy the person asked for that could not be made stops the decision: rejecting (or landing)
/// would remove the worktree, which holds the only copy of what `.gitignore` hides.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decision_whose_copy_of_a_hidden_file_failed_waits_and_the_file_is_kept_in_the_worktree() {
    let calls = vec![write_call("conf/.env", "TOKEN=made-by-the-task\n"), write_call("notes.txt", "notes\n")];
    let (_s, dir, cli) = server(vec![calls_then_done("write the notes", calls, "Created notes.txt")]).await;
    let r = person_repo(dir.path(), &[(".gitignore", ".env\n")]);
    let waiting = cli.run("write the notes", &r, &[]);
    assert_eq!(waiting.status.code(), Some(6), "{}", String::from_utf8_lossy(&waiting.stderr));
    let id = session_of(&waiting);
    // In the person's checkout `conf` is a file of theirs: the copy has no folder to go in.
    std::fs::write(r.join("conf"), "the person's own\n").unwrap();

    // Asked for with no decision, the copy is not silently skipped.
    let alone = cli.review(&id, &["--copy-ignored", "conf/.env"]);
    assert_eq!(alone.status.code(), Some(2), "{}", String::from_utf8_lossy(&alone.stderr));
    assert!(String::from_utf8_lossy(&alone.stderr).contains("--copy-ignored goes with a decision"), "{}", String::from_utf8_lossy(&alone.stderr));

    let rejected = cli.review(&id, &["--reject", "--copy-ignored", "conf/.env"]);
    let said = String::from_utf8_lossy(&rejected.stderr);
    assert_eq!(rejected.status.code(), Some(4), "{said}");
    assert!(said.contains("Not copied: conf/.env") && said.contains("nothing was decided"), "{said}");
    let listed = lines(&cli.cmd(&["sessions", "list", "--json"]).output().unwrap());
    assert_eq!(listed.iter().find(|s| s["id"] == id.as_str()).unwrap()["status"], "awaiting_review", "the review waits");
    let kept = stored(&cli.data, &id)
        .iter()
        .rev()
        .find_map(|e| if let finishline_engine::event::EngineEvent::TaskWorkspace { folder, .. } = e { Some(folder.clone()) } else { None })
        .expect("the task had a worktree");
    assert_eq!(std::fs::read_to_string(Path::new(&kept).join("conf/.env")).unwrap(), "TOKEN=made-by-the-task\n", "the only copy is still there");
    assert_eq!(std::fs::read_to_string(r.join("conf")).unwrap(), "the person's own\n");
}

/// A repository whose checkout holds `src/` only (a sparse checkout), with `docs/old.md` outside.
fn sparse_repo(dir: &Path) -> PathBuf {
    let r = repo(dir);
    git(&r, &["checkout", "-q", "--", "README.md"]);
    for f in ["src/lib.rs", "docs/old.md"] {
        std::fs::create_dir_all(r.join(f).parent().unwrap()).unwrap();
        std::fs::write(r.join(f), "old\n").unwrap();
    }
    git(&r, &["add", "."]);
    git(&r, &["commit", "-q", "-m", "src and docs"]);
    git(&r, &["sparse-checkout", "set", "src"]);
    r
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn landed_as_uncommitted_changes_into_a_sparse_checkout_a_task_that_wrote_outside_it_is_refused_and_nothing_is_written() {
    let rules = calls_then_done(
        "write both",
        vec![write_call("src/lib.rs", "pub fn task() {}\n"), write_call("docs/guide.md", "the task's guide\n")],
        "Created docs/guide.md",
    );
    let (_s, dir, cli) = server(vec![rules]).await;
    let r = sparse_repo(dir.path());
    let run = cli.run("write both", &r, &["--review", "approve", "--land", "uncommitted"]);
    assert_eq!(run.status.code(), Some(6), "it waits for the person: {}", String::from_utf8_lossy(&run.stderr));
    let blocked = lines(&run).into_iter().find(|e| e["type"] == "landing_blocked").expect("the landing says why it stopped");
    assert_eq!((blocked["reason"].as_str(), &blocked["files"]), (Some("outside_sparse_checkout"), &json!(["docs/guide.md"])));
    assert!(!r.join("docs").exists(), "nothing was written outside the person's sparse set");
    assert_eq!(std::fs::read_to_string(r.join("src/lib.rs")).unwrap(), "old\n", "nor inside it: the landing is all or nothing");
    let id = session_of(&run);
    let said = String::from_utf8_lossy(&run.stderr);
    for way in ["--land squash", "--land branch"] {
        assert!(
            said.contains(&format!("`finishline sessions review {id} --approve --data-dir {} {way}`", cli.data.display())),
            "it names the ways that can land it ({way}): {said}"
        );
    }
    let squash = cli.review(&id, &["--approve", "--land", "squash"]);
    assert_eq!(squash.status.code(), Some(0), "as a commit it lands: {}", String::from_utf8_lossy(&squash.stderr));
    assert_eq!(git(&r, &["show", "main:docs/guide.md"]), "the task's guide");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn landed_as_uncommitted_changes_a_task_never_writes_over_a_file_the_persons_gitignore_hides() {
    let (_s, _dir, cli, r) = unignoring_task().await;
    let run = cli.run("track the config", &r, &["--review", "approve", "--land", "uncommitted"]);
    assert_eq!(run.status.code(), Some(6), "it waits for the person");
    let blocked = lines(&run).into_iter().find(|e| e["type"] == "landing_blocked").expect("the landing says why it stopped");
    assert_eq!((blocked["reason"].as_str(), &blocked["files"]), (Some("your_ignored_files"), &json!(["local.json"])));
    assert_eq!(std::fs::read_to_string(r.join("local.json")).unwrap(), "{\"token\": \"the person's own\"}\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn landed_as_uncommitted_changes_the_task_writes_its_own_files_whatever_the_persons_diff_settings() {
    let calls = vec![write_call("sub/conf.txt", "the task's\n"), write_call("sub/new.txt", "new\n")];
    let (_s, dir, cli) = server(vec![calls_then_done("edit the sub config", calls, "Created sub/new.txt")]).await;
    let r = person_repo(dir.path(), &[("conf.txt", "the person's top config\n")]);
    std::fs::create_dir_all(r.join("sub")).unwrap();
    std::fs::write(r.join("sub/conf.txt"), "old\n").unwrap();
    git(&r, &["add", "sub/conf.txt"]);
    git(&r, &["commit", "-q", "-m", "sub"]);
    // Settings people keep in their git config, which shape what `git diff` prints.
    for (key, value) in [("diff.noprefix", "true"), ("color.ui", "always"), ("diff.external", "false"), ("diff.relative", "true")] {
        git(&r, &["config", key, value]);
    }
    let run = cli.run("edit the sub config", &r, &["--review", "approve", "--land", "uncommitted"]);
    assert_eq!(run.status.code(), Some(0), "{}", String::from_utf8_lossy(&run.stderr));
    assert_eq!(std::fs::read_to_string(r.join("sub/conf.txt")).unwrap(), "the task's\n", "the task's file has its change");
    assert_eq!(std::fs::read_to_string(r.join("sub/new.txt")).unwrap(), "new\n");
    assert_eq!(std::fs::read_to_string(r.join("conf.txt")).unwrap(), "the person's top config\n", "a file of the same name elsewhere is left alone");
    assert_eq!(std::fs::read_to_string(r.join("README.md")).unwrap(), "hello\nmy own edit, not committed\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn landed_as_uncommitted_changes_a_file_where_the_person_keeps_files_in_a_folder_is_refused_before_anything_is_written() {
    let flatten = json!({"name": "run_command", "arguments": {"command": "rm -rf pkg && echo now-a-file > pkg && echo done > made.txt"}});
    let (_s, dir, cli) = server(vec![calls_then_done("flatten pkg", vec![flatten], "exit code 0")]).await;
    let r = person_repo(dir.path(), &[]);
    std::fs::create_dir_all(r.join("pkg")).unwrap();
    std::fs::write(r.join("pkg/p.txt"), "tracked\n").unwrap();
    git(&r, &["add", "pkg"]);
    git(&r, &["commit", "-q", "-m", "pkg"]);
    std::fs::write(r.join("pkg/mine.txt"), "the person's, not in git\n").unwrap();
    let run = cli.run("flatten pkg", &r, &["--review", "approve", "--land", "uncommitted", "--allow", "all"]);
    assert_eq!(run.status.code(), Some(6), "{}", String::from_utf8_lossy(&run.stderr));
    let blocked = lines(&run).into_iter().find(|e| e["type"] == "landing_blocked").expect("the landing says why it stopped");
    assert_eq!(blocked["files"], json!(["pkg/mine.txt"]), "{blocked}");
    assert_eq!(std::fs::read_to_string(r.join("pkg/p.txt")).unwrap(), "tracked\n", "nothing was half done");
    assert_eq!(std::fs::read_to_string(r.join("pkg/mine.txt")).unwrap(), "the person's, not in git\n");
    assert!(!r.join("made.txt").exists());
    assert_eq!(git(&r, &["status", "--porcelain"]), "M README.md\n?? pkg/mine.txt", "the person's checkout is as it was");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reject_keeps_on_the_tasks_branch_what_changed_in_its_worktree_after_the_review() {
    let (_s, dir, cli) = server(vec![writes("a.txt", "the task's\n", 0)]).await;
    let r = repo(dir.path());
    let waiting = cli.run("write a.txt", &r, &[]);
    assert_eq!(waiting.status.code(), Some(6), "{}", String::from_utf8_lossy(&waiting.stderr));
    let place = lines(&waiting).into_iter().find(|e| e["type"] == "task_workspace").unwrap();
    let (folder, branch) = (PathBuf::from(place["folder"].as_str().unwrap()), place["worktree"]["branch"].as_str().unwrap().to_string());
    // The person works in the task's worktree after reading the review.
    std::fs::write(folder.join("person_notes.txt"), "mine, written after the review\n").unwrap();
    let rejected = cli.review(&session_of(&waiting), &["--reject"]);
    assert_eq!(rejected.status.code(), Some(3), "{}", String::from_utf8_lossy(&rejected.stderr));
    let said = String::from_utf8_lossy(&rejected.stderr);
    assert!(said.contains(&format!("kept the branch {branch}: it holds what changed in the worktree after the review (person_notes.txt)")), "{said}");
    assert!(!folder.exists(), "the worktree itself goes");
    assert_eq!(git(&r, &["show", &format!("{branch}:person_notes.txt")]), "mine, written after the review", "nothing of theirs is lost");

    // Killed after the reject is recorded and before the worktree goes: the next start's sweep
    // keeps the branch too.
    let waiting = cli.run("write a.txt", &r, &[]);
    let place = lines(&waiting).into_iter().find(|e| e["type"] == "task_workspace").unwrap();
    let (folder, branch) = (PathBuf::from(place["folder"].as_str().unwrap()), place["worktree"]["branch"].as_str().unwrap().to_string());
    std::fs::write(
        folder.join("more_notes.txt"),
        "mine too
",
    )
    .unwrap();
    let rejecting = cli.cmd(&["sessions", "review", &session_of(&waiting), "--reject"]);
    let mut child = paused_at(rejecting, "before-worktree-removal", &dir.path().join("paused"), "the reject was recorded");
    child.kill().unwrap();
    let _ = child.wait();
    let _ = cli.run("hello", &r, &["--isolation", "in-place"]);
    assert!(!folder.exists(), "the next start removed the worktree");
    assert_eq!(git(&r, &["show", &format!("{branch}:more_notes.txt")]), "mine too", "and kept the branch with what was written after the review");

    // An approve that committed such an edit, then could not land (the person has their own
    // a.txt), and a reject after it: the edit stays too.
    let waiting = cli.run("write a.txt", &r, &[]);
    let place = lines(&waiting).into_iter().find(|e| e["type"] == "task_workspace").unwrap();
    let (folder, branch) = (PathBuf::from(place["folder"].as_str().unwrap()), place["worktree"]["branch"].as_str().unwrap().to_string());
    std::fs::write(folder.join("after.txt"), "mine, then approved\n").unwrap();
    std::fs::write(r.join("a.txt"), "the person's own a\n").unwrap();
    let id = session_of(&waiting);
    assert_eq!(cli.review(&id, &["--approve"]).status.code(), Some(6), "the landing stops at the person's a.txt");
    assert_eq!(cli.review(&id, &["--reject"]).status.code(), Some(3));
    assert_eq!(git(&r, &["show", &format!("{branch}:after.txt")]), "mine, then approved");
    std::fs::remove_file(r.join("a.txt")).unwrap();

    // Without such a change, both go.
    let waiting = cli.run("write a.txt", &r, &[]);
    let place = lines(&waiting).into_iter().find(|e| e["type"] == "task_workspace").unwrap();
    let branch = place["worktree"]["branch"].as_str().unwrap().to_string();
    assert_eq!(cli.review(&session_of(&waiting), &["--reject"]).status.code(), Some(3));
    assert!(git(&r, &["branch", "--list", &branch]).is_empty(), "an untouched rejected task leaves no branch");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_branch_the_person_is_rebasing_or_has_checked_out_in_another_worktree_is_never_moved_under_them() {
    let (_s, dir, cli) = server(vec![writes("notes.txt", "notes\n", 0), writes("dev.txt", "dev\n", 0)]).await;
    let r = person_repo(dir.path(), &[("c.txt", "base\n")]);
    git(&r, &["checkout", "-q", "--", "README.md"]);
    git(&r, &["branch", "upstream"]);
    git(&r, &["checkout", "-q", "upstream"]);
    std::fs::write(r.join("c.txt"), "upstream\n").unwrap();
    git(&r, &["commit", "-qam", "upstream"]);
    git(&r, &["checkout", "-q", "main"]);
    std::fs::write(r.join("c.txt"), "mine\n").unwrap();
    git(&r, &["commit", "-qam", "mine"]);
    let main_before = git(&r, &["rev-parse", "main"]);

    let waiting = cli.run("write notes.txt", &r, &[]);
    assert_eq!(waiting.status.code(), Some(6), "{}", String::from_utf8_lossy(&waiting.stderr));
    let id = session_of(&waiting);
    // The person rebases main and stops at a conflict: main is theirs until they finish.
    let rebase = Command::new("git").args(["-C", r.to_str().unwrap(), "rebase", "upstream"]).output().unwrap();
    assert!(!rebase.status.success(), "the rebase stops at the conflict");
    let blocked = cli.review(&id, &["--approve"]);
    assert_eq!(blocked.status.code(), Some(6), "{}", String::from_utf8_lossy(&blocked.stderr));
    let said = String::from_utf8_lossy(&blocked.stderr);
    assert!(said.contains("“main” is being rebased in your checkout"), "{said}");
    assert_eq!(git(&r, &["rev-parse", "main"]), main_before, "main did not move under the rebase");
    git(&r, &["rebase", "--abort"]);
    let landed = cli.review(&id, &["--approve"]);
    assert_eq!(landed.status.code(), Some(0), "once the rebase is over it lands: {}", String::from_utf8_lossy(&landed.stderr));
    assert_eq!(git(&r, &["show", "main:notes.txt"]), "notes");

    // A branch checked out in another worktree of the person's: moving it would leave that
    // checkout behind its branch, and its next commit would undo the task.
    let dev = dir.path().join("dev-checkout");
    git(&r, &["worktree", "add", "-q", "-b", "dev", dev.to_str().unwrap()]);
    let waiting = cli.run("write dev.txt", &r, &["--base", "dev"]);
    assert_eq!(waiting.status.code(), Some(6), "{}", String::from_utf8_lossy(&waiting.stderr));
    let dev_before = git(&r, &["rev-parse", "dev"]);
    let blocked = cli.review(&session_of(&waiting), &["--approve"]);
    assert_eq!(blocked.status.code(), Some(6), "{}", String::from_utf8_lossy(&blocked.stderr));
    let said = String::from_utf8_lossy(&blocked.stderr);
    assert!(said.contains(&format!("“dev” is checked out in your worktree at {}", dev.display())), "{said}");
    assert_eq!(git(&r, &["rev-parse", "dev"]), dev_before);
    assert!(!dev.join("dev.txt").exists() && git(&dev, &["status", "--porcelain"]).is_empty(), "that checkout is as it was");

    // A bare repository's HEAD names a branch nobody has checked out: a worktree of it lands.
    let bare = dir.path().join("bare.git");
    git(dir.path(), &["clone", "-q", "--bare", r.to_str().unwrap(), bare.to_str().unwrap()]);
    let checkout = dir.path().join("from-bare");
    git(&bare, &["worktree", "add", "-q", checkout.to_str().unwrap(), "main"]);
    let landed = cli.run("write dev.txt", &checkout, &["--review", "approve"]);
    assert_eq!(landed.status.code(), Some(0), "{}", String::from_utf8_lossy(&landed.stderr));
    assert_eq!(git(&bare, &["show", "main:dev.txt"]), "dev");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follow_up_is_named_after_the_request_whose_work_lands_not_a_question_or_a_rejected_one_before_it() {
    let (_s, dir, cli) = server(vec![writes("first.txt", "first\n", 0), writes("second.txt", "second\n", 0), writes("third.txt", "third\n", 0)]).await;
    let r = repo(dir.path());
    let first = cli.run("write first.txt", &r, &["--review", "approve"]);
    assert_eq!(first.status.code(), Some(0), "{}", String::from_utf8_lossy(&first.stderr));
    let id = session_of(&first);
    let resume = |text: &str| cli.cmd(&["sessions", "resume", &id, text, "--base-url", &cli.url, "--model", "m", "--json"]).output().unwrap();
    let question = resume("why that name?");
    assert_eq!(summary(&question)["end_reason"], "conversation", "a question changes nothing");
    assert_eq!(resume("now write second.txt").status.code(), Some(6));
    assert_eq!(cli.review(&id, &["--reject"]).status.code(), Some(3), "the second is rejected");
    assert_eq!(resume("now write third.txt").status.code(), Some(6));
    let approved = cli.review(&id, &["--approve", "--land", "merge"]);
    assert_eq!(approved.status.code(), Some(0), "{}", String::from_utf8_lossy(&approved.stderr));
    assert_eq!(git(&r, &["log", "-1", "--format=%s", "main"]), "now write third.txt", "the landing is named after the work it carries");
    assert_eq!(git(&r, &["log", "-1", "--format=%s", "main^2"]), "now write third.txt", "and so is the task's own commit under the merge");
    assert!(git(&r, &["show", "main^2:third.txt"]) == "third" && git(&r, &["ls-tree", "main", "second.txt"]).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_git_older_than_add_sparse_a_task_still_commits_and_lands() {
    let (_s, dir, cli) = server(vec![writes("old.txt", "old git\n", 0)]).await;
    let r = repo(dir.path());
    // git before 2.34 knows no `add --sparse`: a git on PATH that refuses it as such a git does.
    let bin_dir = dir.path().join("old-git");
    std::fs::create_dir_all(&bin_dir).unwrap();
    let real = String::from_utf8(Command::new("sh").args(["-c", "command -v git"]).output().unwrap().stdout).unwrap();
    let script = format!(
        "#!/bin/sh\nfor a in \"$@\"; do [ \"$a\" = --sparse ] && {{ echo \"error: unknown option \\`sparse'\" >&2; exit 129; }}; done\nexec {} \"$@\"\n",
        real.trim()
    );
    std::fs::write(bin_dir.join("git"), script).unwrap();
    Command::new("chmod").arg("+x").arg(bin_dir.join("git")).status().unwrap();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap());
    let args = ["run", "write old.txt", "--workspace", r.to_str().unwrap(), "--base-url", &cli.url, "--model", "m", "--json", "--review", "approve"];
    let run = cli.cmd(&args).env("PATH", path).output().unwrap();
    assert_eq!(
        run.status.code(),
        Some(0),
        "it lands: {}",
        String::from_utf8_lossy(&run.stdout).lines().filter(|l| l.contains("\"error\"")).collect::<Vec<_>>().join("\n")
    );
    assert_eq!(git(&r, &["show", "main:old.txt"]), "old git");
}

/// A task whose model went away after it wrote `broken.txt`: it failed with its work waiting in
/// its worktree. `more` are further tasks the same fake provider answers.
/// Rules for "write broken.txt": the file is written, then the model goes away (a 400).
fn fails_after_writing_broken() -> Vec<Value> {
    vec![
        json!({"when": {"kind": "agent", "last_message_contains": "Created broken.txt"}, "reply": {"fault": {"type": "status", "status": 400, "body": "{\"error\": {\"message\": \"the model went away\"}}"}}}),
        json!({"when": {"kind": "agent", "last_message_contains": "write broken.txt"}, "reply": {"text": "Writing.", "tool_calls": [write_call("broken.txt", "half\n")]}}),
    ]
}

/// `sessions discard` killed once it recorded its decision, then the next start's sweep (a run in
/// another folder): a discard cut short.
fn discard_cut_short_then_swept(cli: &Cli, dir: &Path, id: &str) {
    let mut child = paused_at(cli.cmd(&["sessions", "discard", id]), "discard-decided", &dir.join("paused"), "the discard recorded its decision");
    child.kill().unwrap();
    let _ = child.wait();
    let elsewhere = dir.join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let _ = cli.run("hello", &elsewhere, &[]);
}

async fn a_task_that_failed_after_writing(more: Vec<Vec<Value>>) -> (FakeServer, tempfile::TempDir, Cli, PathBuf, FailedTask) {
    let failing = fails_after_writing_broken();
    let (s, dir, cli) = server(std::iter::once(failing).chain(more).collect()).await;
    let r = repo(dir.path());
    let failed = cli.run("write broken.txt", &r, &[]);
    assert_eq!(failed.status.code(), Some(4), "it failed: {}", String::from_utf8_lossy(&failed.stderr));
    let ws = lines(&failed).into_iter().find(|e| e["type"] == "task_workspace").unwrap()["worktree"].clone();
    let task =
        FailedTask { id: session_of(&failed), folder: PathBuf::from(ws["folder"].as_str().unwrap()), branch: ws["branch"].as_str().unwrap().to_string() };
    (s, dir, cli, r, task)
}

struct FailedTask {
    id: String,
    folder: PathBuf,
    branch: String,
}

/// The person commits a file of their own in a task's worktree: a commit Finishline did not make.
fn persons_commit_in(folder: &Path) {
    std::fs::write(folder.join("mine.txt"), "the person's work\n").unwrap();
    git(folder, &["add", "mine.txt"]);
    git(folder, &["-c", "user.name=P", "-c", "user.email=p@p", "commit", "-q", "-m", "my own commit here"]);
}

/// A task that failed after writing keeps its worktree (its work is undecided, so the start-up
/// sweep keeps it too): `sessions discard` puts it away as a reject would, recorded first; a
/// task that waits for its review is rejected there instead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_that_failed_is_discarded_with_its_worktree_and_branch_and_the_persons_edit_stays() {
    let (_s, _dir, cli, r, failed) = a_task_that_failed_after_writing(vec![writes("kept.txt", "kept\n", 0)]).await;
    let id = failed.id;
    let folder = failed.folder.to_str().unwrap().to_string();
    assert!(Path::new(&folder).join("broken.txt").exists(), "what it wrote waits in its worktree");
    let branches = || git(&r, &["branch", "--list", "finishline/*"]);
    assert!(!branches().is_empty());

    let waiting = cli.run("write kept.txt", &r, &[]);
    let refused = cli.cmd(&["sessions", "discard", &session_of(&waiting)]).output().unwrap();
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains(&format!(
            "waits for your review, where its work is decided: reject it there (Reject in the window, `finishline sessions review {} --reject --data-dir {}` in a terminal)",
            session_of(&waiting),
            cli.data.display()
        )),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );

    let discarded = cli.cmd(&["sessions", "discard", &id]).output().unwrap();
    assert_eq!(discarded.status.code(), Some(0), "{}", String::from_utf8_lossy(&discarded.stderr));
    assert!(String::from_utf8_lossy(&discarded.stdout).contains("Discarded"), "{}", String::from_utf8_lossy(&discarded.stdout));
    assert!(!Path::new(&folder).exists(), "its worktree is gone");
    assert!(!git(&r, &["worktree", "list"]).contains(&folder), "and git no longer lists it");
    let events = stored(&cli.data, &id);
    let rejected = events
        .iter()
        .position(|e| matches!(e, finishline_engine::event::EngineEvent::StatusChanged { status: finishline_engine::domain::SessionStatus::Rejected, .. }));
    let removed = events.iter().position(|e| matches!(e, finishline_engine::event::EngineEvent::WorktreeRemoved { .. }));
    assert!(rejected.is_some() && rejected < removed, "recorded rejected before anything was removed: {events:?}");
    assert!(!r.join("broken.txt").exists(), "nothing of it reached the person's checkout");
    assert_eq!(std::fs::read_to_string(r.join("README.md")).unwrap(), "hello\nmy own edit, not committed\n", "the person's edit stays");
    assert!(!branches().contains(&failed.branch), "its branch goes with it: nothing there is anyone's but the task's: {}", branches());
    let again = cli.cmd(&["sessions", "discard", &id]).output().unwrap();
    assert_eq!(again.status.code(), Some(2), "a second discard is refused: {}", String::from_utf8_lossy(&again.stderr));
    // Both are stored rejected; only the one refused in its review was rejected by anyone.
    let refused = cli.cmd(&["sessions", "review", &session_of(&waiting), "--reject"]).output().unwrap();
    assert_eq!(refused.status.code(), Some(3), "a rejected session exits 3: {}", String::from_utf8_lossy(&refused.stderr));
    let listed = String::from_utf8_lossy(&cli.cmd(&["sessions", "list"]).output().unwrap().stdout).to_string();
    let row = |id: &str| listed.lines().find(|l| l.starts_with(id)).unwrap_or_else(|| panic!("{id} is listed: {listed}")).to_string();
    assert!(row(&id).contains("rejected") && row(&id).contains("[put away without a review]"), "{listed}");
    assert!(!row(&session_of(&waiting)).contains("without a review"), "{listed}");
    // Asked for as the window's filter names it: the one put away, not the one refused.
    let put_away = String::from_utf8_lossy(&cli.cmd(&["sessions", "list", "--status", "discarded"]).output().unwrap().stdout).to_string();
    assert_eq!(put_away.lines().filter(|l| l.starts_with("ses_")).count(), 1, "{put_away}");
    assert!(put_away.starts_with(id.as_str()), "{put_away}");
}

/// Work left uncommitted in a failed task's worktree after the task ended (the person's hand work
/// there, a file the task never wrote, or an edit of one it did) is not the task's to throw away:
/// `sessions discard` commits it on the task's branch and keeps the branch, and says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discarding_a_task_keeps_its_branch_with_what_changed_in_its_worktree_after_the_task() {
    let (_s, _dir, cli, r, FailedTask { id, folder, branch }) = a_task_that_failed_after_writing(vec![]).await;
    std::fs::write(folder.join("handwork.txt"), "the person's hand work\n").unwrap();
    std::fs::write(folder.join("broken.txt"), "mended by hand\n").unwrap();
    let discarded = cli.cmd(&["sessions", "discard", &id]).output().unwrap();
    assert_eq!(discarded.status.code(), Some(0), "{}", String::from_utf8_lossy(&discarded.stderr));
    let said = String::from_utf8_lossy(&discarded.stdout);
    assert!(said.contains(&format!("its branch {branch} is kept: it holds work Finishline did not make")), "{said}");
    assert!(said.contains("after the task ended. Its history stays."), "said as the history says it: {said}");
    assert!(!folder.exists(), "the worktree goes");
    assert_eq!(git(&r, &["show", &format!("{branch}:handwork.txt")]), "the person's hand work", "the hand work stays on the branch");
    assert_eq!(git(&r, &["show", &format!("{branch}:broken.txt")]), "mended by hand", "and the hand edit of the task's file");
    let why = stored(&cli.data, &id).into_iter().find_map(|e| match e {
        finishline_engine::event::EngineEvent::BranchKept { why, .. } => Some(why),
        _ => None,
    });
    assert_eq!(
        why,
        Some(finishline_engine::domain::BranchKeptWhy::ChangedAfterTask),
        "the history says the branch holds work from after the task, not after a review"
    );
    let shown = cli.cmd(&["sessions", "show", &id]).output().unwrap();
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(
        shown.contains(&format!("**Branch kept:** {branch}: it holds work Finishline did not make, such as commits of yours or the agent's own, or what changed in the worktree after the task ended")),
        "{shown}"
    );
}

/// A failed task's half-done work can be kept without running the agent again: `sessions
/// discard --keep-branch` puts the worktree away with everything in it committed on the task's
/// branch, which stays for the person to merge or pick from.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_tasks_work_is_kept_on_its_branch_when_discarded_with_keep_branch() {
    let (_s, _dir, cli, r, FailedTask { id, folder, branch }) = a_task_that_failed_after_writing(vec![]).await;
    let discarded = cli.cmd(&["sessions", "discard", &id, "--keep-branch"]).output().unwrap();
    let said = String::from_utf8_lossy(&discarded.stdout);
    assert_eq!(discarded.status.code(), Some(0), "{}", String::from_utf8_lossy(&discarded.stderr));
    assert!(said.contains(&format!("its branch {branch} is kept")), "{said}");
    assert!(!folder.exists(), "the worktree goes");
    assert_eq!(git(&r, &["show", &format!("{branch}:broken.txt")]), "half", "the task's work is on its branch");
    assert!(!r.join("broken.txt").exists(), "and not in the person's checkout");
    let why = stored(&cli.data, &id).into_iter().find_map(|e| match e {
        finishline_engine::event::EngineEvent::BranchKept { why, .. } => Some(why),
        _ => None,
    });
    assert_eq!(why, Some(finishline_engine::domain::BranchKeptWhy::Asked), "the history says the person asked for the branch");
    // The session's record says so too, where the person reads it later.
    let shown = cli.cmd(&["sessions", "show", &id]).output().unwrap();
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.contains(&format!("**Branch kept:** {branch}, as you asked, with the task's work (broken.txt)")), "{shown}");
}

/// The person removed a failed task's worktree and deleted its branch by hand: keeping the
/// branch says there is none to keep and how to put the task away, not git's own words; plain
/// discard then puts it away.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keeping_the_branch_of_a_task_whose_branch_the_person_deleted_says_so_and_discard_still_works() {
    let (_s, _dir, cli, r, FailedTask { id, folder, branch }) = a_task_that_failed_after_writing(vec![]).await;
    git(&r, &["worktree", "remove", "-f", "-f", &folder.to_string_lossy()]);
    git(&r, &["branch", "-D", &branch]);
    let kept = cli.cmd(&["sessions", "discard", &id, "--keep-branch"]).output().unwrap();
    let said = String::from_utf8_lossy(&kept.stderr);
    assert_ne!(kept.status.code(), Some(0), "{said}");
    assert!(said.contains(&format!("The task's branch {branch} is no longer in {}", r.display())), "{said}");
    assert!(said.contains("there is no branch to keep") && said.contains("discard it without --keep-branch"), "{said}");
    assert!(!said.contains("rev-parse"), "not git's words: {said}");
    assert!(!stored(&cli.data, &id).iter().any(|e| matches!(e, finishline_engine::event::EngineEvent::BranchKept { .. })), "nothing recorded kept");
    let discarded = cli.cmd(&["sessions", "discard", &id]).output().unwrap();
    assert_eq!(discarded.status.code(), Some(0), "{}", String::from_utf8_lossy(&discarded.stderr));
}

/// The person switched a failed task's worktree off its branch and deleted the branch, with
/// their own work uncommitted there: keeping the branch commits nothing (no commit lands where
/// no branch holds it), says how to make the branch again, and once made, keeps it with the work.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keeping_the_branch_after_the_person_deleted_it_from_a_worktree_still_there_commits_nothing_and_says_how_to_make_it_again() {
    let (_s, _dir, cli, r, FailedTask { id, folder, branch }) = a_task_that_failed_after_writing(vec![]).await;
    git(&folder, &["switch", "-q", "--detach"]);
    git(&r, &["branch", "-D", &branch]);
    std::fs::write(folder.join("mine.txt"), "my own work\n").unwrap();
    let head = git(&folder, &["rev-parse", "HEAD"]);
    let kept = cli.cmd(&["sessions", "discard", &id, "--keep-branch"]).output().unwrap();
    let said = String::from_utf8_lossy(&kept.stderr);
    assert_ne!(kept.status.code(), Some(0), "{said}");
    assert_eq!(git(&folder, &["rev-parse", "HEAD"]), head, "nothing was committed: {said}");
    assert!(git(&folder, &["status", "--porcelain"]).contains("?? mine.txt"), "the person's work is as they left it");
    assert!(!said.contains("without --keep-branch"), "a plain discard would remove the worktree, and the work with it: {said}");
    let make = said.split('`').skip(1).step_by(2).find(|c| c.contains("switch -c")).unwrap_or_else(|| panic!("a command that makes the branch again: {said}"));
    let ran = std::process::Command::new("sh").arg("-c").arg(make).current_dir(&r).output().unwrap();
    assert!(ran.status.success(), "{make}: {}", String::from_utf8_lossy(&ran.stderr));
    let kept = cli.cmd(&["sessions", "discard", &id, "--keep-branch"]).output().unwrap();
    assert_eq!(kept.status.code(), Some(0), "{}", String::from_utf8_lossy(&kept.stderr));
    assert_eq!(git(&r, &["show", &format!("{branch}:mine.txt")]), "my own work", "the branch holds the work");
    assert!(!folder.exists(), "the worktree is put away");
}

/// `--json` is one object per line everywhere: discard and delete say what they did as JSON
/// too (a script reads the worktree and branch from it), not as a sentence.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discard_and_delete_say_what_they_did_as_json_with_json() {
    let (_s, _dir, cli, _r, FailedTask { id, folder, branch }) = a_task_that_failed_after_writing(vec![]).await;
    let discarded = cli.cmd(&["sessions", "discard", &id, "--json"]).output().unwrap();
    assert_eq!(discarded.status.code(), Some(0), "{}", String::from_utf8_lossy(&discarded.stderr));
    let said: Value = serde_json::from_slice(&discarded.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&discarded.stdout)));
    assert_eq!(said["type"], "discarded", "{said}");
    assert_eq!(said["session_id"], id.as_str());
    assert_eq!(said["status"], "rejected");
    assert_eq!(said["worktree"], folder.to_string_lossy().as_ref());
    assert_eq!(said["branch"], branch.as_str());
    assert_eq!(said["branch_kept"], false);
    let deleted = cli.cmd(&["sessions", "delete", &id, "--json"]).output().unwrap();
    assert_eq!(deleted.status.code(), Some(0), "{}", String::from_utf8_lossy(&deleted.stderr));
    let said: Value = serde_json::from_slice(&deleted.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&deleted.stdout)));
    assert_eq!(said["type"], "deleted", "{said}");
    assert_eq!(said["session_id"], id.as_str());
    assert_eq!(said["left_in_moved_repository"], Value::Null);
}

/// Discarding a task that already landed (or was rejected) says what became of it: "it has no
/// worktree of its own" read as though it had worked in the person's folder.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discarding_a_task_that_landed_or_was_rejected_says_so_and_changes_nothing() {
    let (_s, dir, cli) = server(vec![writes("one.txt", "1\n", 0), writes("two.txt", "2\n", 0)]).await;
    let r = repo(dir.path());
    let landed = session_of(&cli.run("write one.txt", &r, &[]));
    assert_eq!(cli.review(&landed, &["--approve"]).status.code(), Some(0));
    let head = git(&r, &["rev-parse", "HEAD"]);
    let refused = cli.cmd(&["sessions", "discard", &landed]).output().unwrap();
    let said = String::from_utf8_lossy(&refused.stderr).to_string();
    assert_eq!(refused.status.code(), Some(2), "{said}");
    assert!(said.contains("landed on main as ") && said.contains("nothing to discard"), "{said}");
    assert!(!said.contains("no worktree of its own"), "{said}");
    assert_eq!(git(&r, &["rev-parse", "HEAD"]), head, "nothing moved");
    let rejected = session_of(&cli.run("write two.txt", &r, &[]));
    assert_eq!(cli.review(&rejected, &["--reject"]).status.code(), Some(3));
    let refused = cli.cmd(&["sessions", "discard", &rejected]).output().unwrap();
    let said = String::from_utf8_lossy(&refused.stderr).to_string();
    assert_eq!(refused.status.code(), Some(2), "{said}");
    assert!(said.contains("was rejected") && said.contains("nothing to discard"), "{said}");
}

/// A failed task deleted after its repository moved away: its history goes, and what git keeps
/// for it in the moved repository is said, with the commands that remove it there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_task_whose_repository_moved_says_what_stays_in_it() {
    let (_s, dir, cli, r, FailedTask { id, branch, .. }) = a_task_that_failed_after_writing(vec![]).await;
    let moved = dir.path().join("repo-renamed");
    std::fs::rename(&r, &moved).unwrap();
    let deleted = cli.cmd(&["sessions", "delete", &id, "--yes"]).output().unwrap();
    let said = String::from_utf8_lossy(&deleted.stdout);
    assert_eq!(deleted.status.code(), Some(0), "{}", String::from_utf8_lossy(&deleted.stderr));
    assert!(said.contains(&format!("The repository the task started from is no longer at {}", r.display())), "{said}");
    assert!(said.contains(&format!("`git update-ref -d refs/heads/{branch} ")) && said.contains("`git worktree remove -f -f "), "{said}");
}

/// A failed task's repository moved away: discard says so and touches nothing (its worktree
/// could not be removed from git's list, nor its branch found); once it is back, discard works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discarding_a_task_whose_repository_moved_away_says_so_and_touches_nothing() {
    let (_s, dir, cli, r, FailedTask { id, folder, branch }) = a_task_that_failed_after_writing(vec![]).await;
    let moved = dir.path().join("repo-renamed");
    std::fs::rename(&r, &moved).unwrap();
    let discarded = cli.cmd(&["sessions", "discard", &id]).output().unwrap();
    let said = String::from_utf8_lossy(&discarded.stderr);
    assert_ne!(discarded.status.code(), Some(0), "{said}");
    assert!(said.contains(&format!("is no longer at {}", r.display())) && said.contains("put it back there and discard again"), "{said}");
    assert!(folder.join("broken.txt").exists(), "the worktree is untouched");
    std::fs::rename(&moved, &r).unwrap();
    let discarded = cli.cmd(&["sessions", "discard", &id]).output().unwrap();
    assert_eq!(discarded.status.code(), Some(0), "{}", String::from_utf8_lossy(&discarded.stderr));
    assert!(!folder.exists() && !git(&r, &["branch", "--list"]).contains(&branch), "put away once back");
}

/// `sessions delete`: the window's Delete, in a terminal. A task with work waiting for a decision
/// is deleted only when the person says so (`--yes`, or yes at the prompt): its worktree and
/// branch go with its history; a landed task's files stay in the person's checkout, and so does
/// their own edit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_task_takes_its_worktree_and_history_and_asks_first_when_work_waits() {
    let (_s, _dir, cli, r, failed) = a_task_that_failed_after_writing(vec![writes("kept.txt", "kept\n", 0), writes("landed.txt", "landed\n", 0)]).await;
    let landed = cli.run("write landed.txt", &r, &["--review", "approve"]);
    let landed = session_of(&landed);
    let waiting = session_of(&cli.run("write kept.txt", &r, &[]));
    let folder = |id: &str| {
        stored(&cli.data, id).iter().find_map(|e| match e {
            finishline_engine::event::EngineEvent::TaskWorkspace { worktree: Some(_), folder, .. } => Some(PathBuf::from(folder)),
            _ => None,
        })
    };
    let waits_in = folder(&waiting).expect("the waiting task's worktree");
    let listed = |id: &str| String::from_utf8_lossy(&cli.cmd(&["sessions", "list"]).output().unwrap().stdout).contains(id);

    let unasked = cli.cmd(&["sessions", "delete", &waiting]).stdin(Stdio::null()).output().unwrap();
    let said = String::from_utf8_lossy(&unasked.stderr);
    assert_eq!(unasked.status.code(), Some(2), "{said}");
    assert!(said.contains("waits for your review") && said.contains("--yes"), "it says what would be lost and how to go on: {said}");
    assert!(waits_in.join("kept.txt").exists() && listed(&waiting), "nothing went");

    let deleted = cli.cmd(&["sessions", "delete", &waiting, "--yes"]).output().unwrap();
    assert_eq!(deleted.status.code(), Some(0), "{}", String::from_utf8_lossy(&deleted.stderr));
    assert!(String::from_utf8_lossy(&deleted.stdout).contains("Deleted"), "{}", String::from_utf8_lossy(&deleted.stdout));
    assert!(!waits_in.exists() && !listed(&waiting), "its worktree and its history are gone");
    assert!(git(&r, &["branch", "--list", "finishline/*"]).lines().count() == 1, "its branch too; the failed task's stays: {}", git(&r, &["branch", "--list"]));

    // Nothing waits on a landed task: deleted without asking, and what landed stays.
    let gone = cli.cmd(&["sessions", "delete", &landed]).stdin(Stdio::null()).output().unwrap();
    assert_eq!(gone.status.code(), Some(0), "{}", String::from_utf8_lossy(&gone.stderr));
    assert_eq!(std::fs::read_to_string(r.join("landed.txt")).unwrap(), "landed\n", "what landed is the person's");
    assert_eq!(std::fs::read_to_string(r.join("README.md")).unwrap(), "hello\nmy own edit, not committed\n", "the person's edit stays");
    let again = cli.cmd(&["sessions", "delete", &landed]).output().unwrap();
    assert_eq!(again.status.code(), Some(2), "a second delete finds nothing: {}", String::from_utf8_lossy(&again.stderr));
    assert!(failed.folder.exists(), "another task's worktree is left alone");
}

/// A commit made in a failed task's worktree (the person's, or the agent's own `git commit`) is
/// not Finishline's to throw away: `sessions discard` keeps the branch that holds it, and says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discarding_a_task_keeps_its_branch_when_it_holds_a_commit_finishline_did_not_make() {
    let (_s, _dir, cli, r, FailedTask { id, folder, branch }) = a_task_that_failed_after_writing(vec![]).await;
    persons_commit_in(&folder);
    let discarded = cli.cmd(&["sessions", "discard", &id]).output().unwrap();
    assert_eq!(discarded.status.code(), Some(0), "{}", String::from_utf8_lossy(&discarded.stderr));
    let said = String::from_utf8_lossy(&discarded.stdout);
    assert!(said.contains(&format!("its branch {branch} is kept")), "{said}");
    assert!(!folder.exists(), "the worktree goes");
    assert_eq!(git(&r, &["show", &format!("{branch}:mine.txt")]), "the person's work", "the commit stays on its branch");
}

/// A discard killed after it recorded the task rejected, before it said to keep the branch:
/// the next start's sweep removes the worktree and still keeps the branch with the commit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_discard_cut_short_keeps_the_branch_with_a_commit_finishline_did_not_make() {
    let (_s, dir, cli, r, FailedTask { id, folder, branch }) = a_task_that_failed_after_writing(vec![]).await;
    persons_commit_in(&folder);
    discard_cut_short_then_swept(&cli, dir.path(), &id);
    assert!(!folder.exists(), "the sweep removed the decided task's worktree");
    assert_eq!(git(&r, &["show", &format!("{branch}:mine.txt")]), "the person's work", "and kept the branch with the commit");
}

/// A task that stopped before it changed anything has nothing to decide: its worktree and branch
/// go at once, it waits for nobody, and a message to go on starts a new worktree as its first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_that_failed_before_changing_anything_leaves_no_worktree_and_goes_on_as_new() {
    let fails_once = json!({"when": {"kind": "agent", "last_message_contains": "write notes.md"}, "times": 1,
        "reply": {"fault": {"type": "status", "status": 400, "body": "{\"error\": {\"message\": \"the model went away\"}}"}}});
    let (_s, dir, cli) = server(vec![vec![fails_once], writes("notes.md", "the task's notes\n", 0)]).await;
    let r = repo(dir.path());
    let failed = cli.run("write notes.md", &r, &[]);
    assert_eq!(failed.status.code(), Some(4), "it failed: {}", String::from_utf8_lossy(&failed.stderr));
    let id = session_of(&failed);
    let folder = lines(&failed).into_iter().find(|e| e["type"] == "task_workspace").unwrap()["worktree"]["folder"].as_str().unwrap().to_string();
    assert!(!Path::new(&folder).exists(), "its empty worktree is gone");
    assert_eq!(git(&r, &["branch", "--list", "finishline/*"]), "", "and its branch");
    let events = stored(&cli.data, &id);
    let removed = events
        .iter()
        .position(|e| matches!(e, finishline_engine::event::EngineEvent::WorktreeRemoved { why: finishline_engine::domain::WorktreeEnd::Unused, .. }));
    let failed_at = events
        .iter()
        .position(|e| matches!(e, finishline_engine::event::EngineEvent::StatusChanged { status: finishline_engine::domain::SessionStatus::Failed, .. }));
    assert!(removed.is_some() && removed < failed_at, "removed, as unused, before the task is said to have failed: {events:?}");
    let listed = lines(&cli.cmd(&["sessions", "list", "--json"]).output().unwrap()).into_iter().find(|s| s["id"] == id.as_str()).unwrap();
    assert!(listed["work_dir"].is_null() && listed["branch"].is_null(), "no work waits for the person: {listed}");
    let shown = String::from_utf8_lossy(&cli.cmd(&["sessions", "show", &id]).output().unwrap().stdout).to_string();
    assert!(!shown.contains("is kept"), "{shown}");

    let again = cli.cmd(&["sessions", "resume", &id, "please try again: write notes.md", "--base-url", &cli.url, "--model", "m", "--json"]).output().unwrap();
    assert_eq!(again.status.code(), Some(6), "it goes on to a review: {}", String::from_utf8_lossy(&again.stderr));
    let note = lines(&again).into_iter().find(|e| e["type"] == "continuation" && e["source"] == "new_worktree").expect("the agent is told its folder changed");
    let note = note["text"].as_str().unwrap().to_string();
    assert!(note.contains("held no changes") && note.contains("Work only in the current folder"), "{note}");
    assert!(!note.contains("rejected") && !note.contains("landed"), "nothing was decided: {note}");
    assert_eq!(reviewed(&again), vec!["notes.md"]);
    let approved = cli.review(&id, &["--approve"]);
    assert_eq!(approved.status.code(), Some(0), "{}", String::from_utf8_lossy(&approved.stderr));
    assert_eq!(git(&r, &["show", "main:notes.md"]), "the task's notes");
    let subject = git(&r, &["log", "-1", "--format=%s", "main"]);
    assert!(subject.contains("notes.md") && !subject.contains("try again"), "named after the task, its first work: {subject}");
    assert_eq!(std::fs::read_to_string(r.join("README.md")).unwrap(), "hello\nmy own edit, not committed\n", "the person's edit stays");
}

/// An agent that committed on its branch and then checked out where it started has changed
/// nothing in the worktree's files, but its commit is work: cancelled then, the worktree and the
/// branch stay.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_cancelled_after_its_agent_committed_and_looked_back_keeps_its_branch() {
    use std::io::BufRead;
    let command =
        "echo agent > made.txt && git add made.txt && git -c user.name=a -c user.email=a@a commit -qm agent && git checkout -q HEAD~1 && echo looked-back";
    let rules = vec![
        json!({"when": {"kind": "agent", "last_message_contains": "looked-back"}, "reply": {"text": "Thinking it over at length before anything else.", "chunks": 60, "chunk_delay_ms": 100}}),
        json!({"when": {"kind": "agent", "last_message_contains": "commit and look back"}, "reply": {"text": "Committing.", "tool_calls": [{"name": "run_command", "arguments": {"command": command}}]}}),
    ];
    let (_s, dir, cli) = server(vec![rules]).await;
    let r = repo(dir.path());
    let mut child = cli
        .cmd(&["run", "commit and look back", "--workspace", r.to_str().unwrap(), "--base-url", &cli.url, "--model", "m", "--json", "--allow", "run_command"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    // The command's output, not its call (whose input names the same words).
    while out.read_line(&mut line).unwrap() > 0 && !(line.contains("\"tool_call\"") && line.contains("\"state\":\"done\"") && line.contains("looked-back")) {
        line.clear();
    }
    assert!(line.contains("looked-back"), "the command ran");
    assert!(Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap().success());
    let status = tokio::task::spawn_blocking(move || child.wait().unwrap()).await.unwrap();
    assert_eq!(status.code(), Some(5), "cancelled");
    let branch = git(&r, &["branch", "--list", "finishline/*", "--format=%(refname:short)"]);
    assert!(!branch.is_empty(), "the branch with the agent's commit stays");
    assert_eq!(git(&r, &["log", "-1", "--format=%s", &branch]), "agent", "and holds its commit: {}", git(&r, &["log", "--all", "--oneline", "--decorate"]));
    assert_eq!(git(&r, &["worktree", "list", "--porcelain"]).lines().filter(|l| l.starts_with("worktree ")).count(), 2, "so does its worktree");
}

/// Files copied into the worktree at the start (`.env`) are the person's: one still as theirs
/// does not keep a worktree that holds nothing else, one edited there (here by the person, while
/// the agent answers) does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copied_env_file_keeps_the_worktree_only_once_edited_there() {
    let answer = json!({"when": {"kind": "agent", "last_message_contains": "what does README.md say"}, "reply": {"text": "It says hello.", "chunks": 30, "chunk_delay_ms": 100}});
    let (_s, dir, cli) = server(vec![vec![answer]]).await;
    let r = repo(dir.path());
    std::fs::write(r.join(".env"), "TOKEN=mine\n").unwrap();
    let asked = cli.run("what does README.md say?", &r, &[]);
    let folder = lines(&asked).into_iter().find(|e| e["type"] == "task_workspace").unwrap()["worktree"]["folder"].as_str().unwrap().to_string();
    assert!(!Path::new(&folder).exists(), "the copy as given kept nothing");

    let child = cli.spawn("what does README.md say?", &r, &[]);
    let worktrees = cli.data.join("worktrees");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let copy = loop {
        // Copied whole: a file made and not yet written is the copy still on its way.
        let found = std::fs::read_dir(&worktrees)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path().join(".env"))
            .find(|p| std::fs::read_to_string(p).is_ok_and(|t| t == "TOKEN=mine\n"));
        if let Some(p) = found {
            break p;
        }
        assert!(std::time::Instant::now() < deadline, "the worktree was never filled");
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    std::fs::write(&copy, "TOKEN=edited in the worktree\n").unwrap();
    let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap()).await.unwrap();
    assert_eq!(summary(&out)["status"], "idle", "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(std::fs::read_to_string(&copy).unwrap(), "TOKEN=edited in the worktree\n", "the edited copy stays, with its worktree");
    assert_eq!(std::fs::read_to_string(r.join(".env")).unwrap(), "TOKEN=mine\n", "the person's own is untouched");
}

/// A question answered with nothing changed leaves no worktree waiting either.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_answered_without_changing_anything_leaves_no_worktree_waiting() {
    let answer = json!({"when": {"kind": "agent", "last_message_contains": "what does README.md say"}, "reply": {"text": "It says hello."}});
    let (_s, dir, cli) = server(vec![vec![answer]]).await;
    let r = repo(dir.path());
    let asked = cli.run("what does README.md say?", &r, &[]);
    let id = session_of(&asked);
    assert_eq!(summary(&asked)["status"], "idle", "{}", String::from_utf8_lossy(&asked.stderr));
    let folder = lines(&asked).into_iter().find(|e| e["type"] == "task_workspace").unwrap()["worktree"]["folder"].as_str().unwrap().to_string();
    assert!(!Path::new(&folder).exists(), "its worktree is gone");
    assert_eq!(git(&r, &["branch", "--list", "finishline/*"]), "", "and its branch");
    let listed = lines(&cli.cmd(&["sessions", "list", "--json"]).output().unwrap()).into_iter().find(|s| s["id"] == id.as_str()).unwrap();
    assert!(listed["work_dir"].is_null(), "{listed}");
}

/// At the terminal's review question, an answer it does not know asks again, and the input
/// closing (Ctrl+D) leaves the review open with the command that decides it: the run never waits
/// on nothing. Run under `script`, which gives it a terminal and passes on the answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_answer_at_the_terminals_review_asks_again_and_closed_input_leaves_it_open() {
    let (_s, dir, cli) = server(vec![writes("hello.txt", "hello\n", 0)]).await;
    let r = repo(dir.path());
    let (said, code) = review_typed_at_a_terminal(&cli, &r, b"x\n");
    assert!(said.contains("Type a to approve"), "an unknown answer asks again: {said}");
    assert!(said.contains("sessions review") && said.contains("--approve"), "it says how to decide later: {said}");
    assert_eq!(code, Some(6), "the review waits: {said}");
    assert_eq!(status_named_in(&cli, &said), "awaiting_review");
}

/// `c` and then only Enter sends the agent nothing: it says so and asks for the decision again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn asking_for_changes_at_the_terminal_without_saying_which_sends_nothing_and_asks_again() {
    let (_s, dir, cli) = server(vec![writes("hello.txt", "hello\n", 0)]).await;
    let r = repo(dir.path());
    let (said, code) = review_typed_at_a_terminal(&cli, &r, b"c\n   \n");
    assert!(said.contains("Nothing was sent"), "an empty request is not sent: {said}");
    assert_eq!(said.matches("Review: [a]pprove").count(), 2, "and the decision is asked again: {said}");
    assert_eq!(code, Some(6), "the review still waits: {said}");
    assert_eq!(status_named_in(&cli, &said), "awaiting_review");
}

/// Runs a task in a pseudo-terminal and types `input` at its review; what it said and its exit.
fn review_typed_at_a_terminal(cli: &Cli, r: &Path, input: &[u8]) -> (String, Option<i32>) {
    let mut child = hello_in_a_terminal(cli, r).spawn().unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    let out = child.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout).to_string();
    assert_ne!(out.status.code(), Some(124), "it waited on nothing after the answer: {said}");
    (said, out.status.code())
}

/// `finishline run "write hello.txt"` in `r`, in a pseudo-terminal (`script`), its input and
/// output piped; given a minute at most.
fn hello_in_a_terminal(cli: &Cli, r: &Path) -> Command {
    task_in_a_terminal(cli, "write hello.txt", r)
}

/// `finishline run TASK` in `r`, in a pseudo-terminal, as [`in_a_terminal`].
fn task_in_a_terminal(cli: &Cli, task: &str, r: &Path) -> Command {
    terminal(&["run", task, "--workspace", r.to_str().unwrap(), "--base-url", &cli.url, "--model", "m"], &cli.data, Some(60))
}

/// A task that wrote one.txt and two.txt in a plain folder, run in a terminal and waiting at its
/// review prompt: the server, the test's folder, the CLI, the folder, the terminal and its input.
async fn two_files_at_a_terminal_review() -> (FakeServer, tempfile::TempDir, Cli, PathBuf, std::process::Child, std::process::ChildStdin) {
    let rules = calls_then_done("write two files", vec![write_call("one.txt", "1\n"), write_call("two.txt", "2\n")], "Created two.txt");
    let (s, dir, cli) = server(vec![rules]).await;
    let ws = dir.path().join("plain");
    std::fs::create_dir_all(&ws).unwrap();
    let (child, input, _) = at_the_review_prompt_of(&cli, task_in_a_terminal(&cli, "write two files", &ws));
    (s, dir, cli, ws, child, input)
}

/// At the terminal, "overwrite those changes too?" is about the files it named: one the person
/// edits while the question waits is left as they made it, and named, not overwritten.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overwrite_at_the_terminal_covers_the_files_it_named_not_one_edited_while_it_asked() {
    let (_s, _dir, _cli, ws, mut child, mut input) = two_files_at_a_terminal_review().await;
    std::fs::write(ws.join("one.txt"), "my edit of one\n").unwrap();
    let (shown, reading) = read_along(&mut child);
    // Reject, and revert: the revert asks about one.txt.
    input.write_all(b"r\ny\n").unwrap();
    let t = Instant::now();
    while !shown.lock().unwrap().contains("Someone (you, or a command) changed one.txt") {
        assert!(t.elapsed() < Duration::from_secs(30), "the revert asked about one.txt: {}", shown.lock().unwrap());
        std::thread::sleep(Duration::from_millis(20));
    }
    std::fs::write(ws.join("two.txt"), "my edit of two, while it asked\n").unwrap();
    input.write_all(b"y\n").unwrap();
    child.wait().unwrap();
    reading.join().unwrap();
    let said = shown.lock().unwrap().clone();
    assert!(said.contains("Someone (you, or a command) changed one.txt after the agent"), "{said}");
    assert!(!ws.join("one.txt").exists(), "the file it named is reverted, as the person said: {said}");
    assert_eq!(std::fs::read_to_string(ws.join("two.txt")).unwrap(), "my edit of two, while it asked\n", "the one edited while it asked is left: {said}");
    let after_asking = &said[said.find("Someone (you, or a command) changed one.txt").unwrap()..];
    assert!(after_asking.contains("two.txt"), "and named after the question, not only in the review before it: {said}");
}

/// Rejected with a revert at the terminal, the revert is told once, by its line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revert_at_the_terminal_is_told_once() {
    let (_s, _dir, _cli, ws, mut child, mut input) = two_files_at_a_terminal_review().await;
    let (shown, reading) = read_along(&mut child);
    input.write_all(b"r\ny\n").unwrap();
    child.wait().unwrap();
    reading.join().unwrap();
    let said = shown.lock().unwrap().clone();
    assert!(!ws.join("one.txt").exists() && !ws.join("two.txt").exists(), "{said}");
    assert!(said.contains("reverted: 2 files deleted"), "{said}");
    assert!(!said.contains("Reverted:"), "not told again as the outcome: {said}");
}

/// A decision at the terminal that fails (here a revert of a folder that is gone) says why and
/// leaves the review open, exit 6: the terminal is not left waiting for a decision never made.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decision_that_fails_at_the_terminal_says_so_and_ends_waiting() {
    let (_s, _dir, cli, ws, child, mut input) = two_files_at_a_terminal_review().await;
    std::fs::remove_dir_all(&ws).unwrap();
    // Reject, and revert: there is no folder to revert.
    input.write_all(b"r\ny\n").unwrap();
    let out = child.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(out.status.code(), Some(6), "the review stays open, and the terminal is told: {said}");
    assert_eq!(status_named_in(&cli, &said), "awaiting_review", "{said}");
}

/// The status of the session a terminal's output names.
fn status_named_in(cli: &Cli, said: &str) -> String {
    let id = said
        .split_whitespace()
        .find(|w| w.starts_with("ses_"))
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric() && c != '_'))
        .expect("the session is named");
    let row = lines(&cli.cmd(&["sessions", "list", "--json"]).output().unwrap()).into_iter().find(|s| s["id"] == id).unwrap();
    row["status"].as_str().unwrap().to_string()
}

/// A reject that reverts, in place, in a folder that is gone says so and decides nothing: it
/// never reports files "deleted" that it could not reach. Put back, the same reject reverts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reject_that_reverts_in_a_folder_that_is_gone_refuses_and_decides_nothing() {
    let (_s, dir, cli) = server(vec![writes("notes.md", "the task's notes\n", 0)]).await;
    let r = repo(dir.path());
    let waiting = cli.run("write notes.md", &r, &["--isolation", "in-place"]);
    let id = session_of(&waiting);
    assert_eq!(std::fs::read_to_string(r.join("notes.md")).unwrap(), "the task's notes\n");
    let moved = dir.path().join("moved");
    std::fs::rename(&r, &moved).unwrap();
    let refused = cli.review(&id, &["--reject", "--revert"]);
    let said = String::from_utf8_lossy(&refused.stderr).to_string();
    assert_ne!(refused.status.code(), Some(3), "not rejected: {said}");
    assert!(said.contains("is gone") && said.contains(r.to_str().unwrap()), "it names the folder: {said}");
    assert!(!String::from_utf8_lossy(&refused.stdout).contains("deleted"), "{}", String::from_utf8_lossy(&refused.stdout));
    let row = lines(&cli.cmd(&["sessions", "list", "--json"]).output().unwrap()).into_iter().find(|s| s["id"] == id.as_str()).unwrap();
    assert_eq!(row["status"], "awaiting_review", "the review still waits: {row}");
    assert_eq!(std::fs::read_to_string(moved.join("notes.md")).unwrap(), "the task's notes\n", "nothing was touched where it went");

    std::fs::rename(&moved, &r).unwrap();
    let rejected = cli.review(&id, &["--reject", "--revert"]);
    assert_eq!(rejected.status.code(), Some(3), "{}", String::from_utf8_lossy(&rejected.stderr));
    assert!(!r.join("notes.md").exists(), "put back, the revert undoes the task's file");
}

/// A landed task the person then thanked (a reply that changes nothing, in a new worktree)
/// leaves no worktree behind to discard, and what landed stays approved.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_landed_tasks_thank_you_leaves_no_worktree_behind_and_what_landed_stays() {
    let thanks = vec![json!({"when": {"kind": "agent", "last_message_contains": "thanks a lot"}, "reply": {"text": "You're welcome!"}})];
    let (_s, dir, cli) = server(vec![thanks, writes("done.txt", "done\n", 0)]).await;
    let r = repo(dir.path());
    let first = cli.run("write done.txt", &r, &[]);
    let id = session_of(&first);
    let landed = cli.review(&id, &["--approve"]);
    assert_eq!(landed.status.code(), Some(0), "{}", String::from_utf8_lossy(&landed.stderr));
    let wordless = cli.cmd(&["sessions", "resume", &id, "--base-url", &cli.url, "--model", "m"]).output().unwrap();
    assert_eq!(wordless.status.code(), Some(2), "a finished task goes on only with words: {}", String::from_utf8_lossy(&wordless.stdout));
    assert!(String::from_utf8_lossy(&wordless.stderr).contains("say what to do next"), "{}", String::from_utf8_lossy(&wordless.stderr));
    let thanked = cli.cmd(&["sessions", "resume", &id, "thanks a lot", "--base-url", &cli.url, "--model", "m"]).output().unwrap();
    assert!(String::from_utf8_lossy(&thanked.stdout).contains("You're welcome!"), "{}", String::from_utf8_lossy(&thanked.stderr));
    assert_eq!(git(&r, &["worktree", "list", "--porcelain"]).lines().filter(|l| l.starts_with("worktree ")).count(), 1, "the reply's worktree is gone");
    assert_eq!(git(&r, &["branch", "--list", "finishline/*"]), "", "and its branch");
    let discarded = cli.cmd(&["sessions", "discard", &id]).output().unwrap();
    assert_eq!(discarded.status.code(), Some(2), "nothing to discard: {}", String::from_utf8_lossy(&discarded.stdout));
    assert!(String::from_utf8_lossy(&discarded.stderr).contains("nothing to discard"), "{}", String::from_utf8_lossy(&discarded.stderr));
    let shown = String::from_utf8_lossy(&cli.cmd(&["sessions", "list", "--json"]).output().unwrap().stdout).to_string();
    let row: Value = shown.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()).find(|v| v["id"] == id.as_str()).unwrap_or_else(|| panic!("{shown}"));
    assert!(row["work_dir"].is_null() && row["approvals"] == 1, "its landed work is counted approved: {row}");
    assert_eq!(row["status"], "completed", "as it was decided, not idle: {row}");
    assert_eq!(git(&r, &["show", "main:done.txt"]), "done", "what landed stays");
}

/// A person's repository with a submodule `lib` (its `api.txt` says "v1 of the library"),
/// checked out in their folder as `git clone --recurse-submodules` leaves it.
fn repo_with_submodule(dir: &Path) -> PathBuf {
    let lib = dir.join("lib-origin");
    std::fs::create_dir_all(&lib).unwrap();
    git(&lib, &["init", "-q", "-b", "main"]);
    std::fs::write(lib.join("api.txt"), "v1 of the library\n").unwrap();
    git(&lib, &["add", "."]);
    git(&lib, &["-c", "user.name=L", "-c", "user.email=l@example.com", "commit", "-q", "-m", "lib"]);
    let r = person_repo(dir, &[]);
    git(&r, &["-c", "protocol.file.allow=always", "submodule", "add", "-q", lib.to_str().unwrap(), "lib"]);
    git(&r, &["commit", "-q", "-m", "the library as a submodule"]);
    r
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_submodule_the_person_checked_out_is_in_the_tasks_worktree_and_what_the_task_changes_inside_it_is_named_as_never_landing() {
    let calls = vec![
        json!({"name": "read_file", "arguments": {"path": "lib/api.txt"}}),
        write_call("lib/api.txt", "v2 by the task\n"),
        write_call("lib/extra.txt", "more\n"),
        write_call("notes.txt", "notes\n"),
    ];
    let (_s, dir, cli) = server(vec![calls_then_done("use the library", calls, "Created notes.txt")]).await;
    let r = repo_with_submodule(dir.path());
    std::fs::remove_dir_all(dir.path().join("lib-origin")).unwrap();

    let waiting = cli.run("use the library", &r, &["--review", "approve"]);
    assert_eq!(waiting.status.code(), Some(6), "changes that would go with the worktree wait for the person: {}", String::from_utf8_lossy(&waiting.stderr));
    let id = session_of(&waiting);
    let read = stored(&cli.data, &id).into_iter().find_map(|e| match e {
        finishline_engine::event::EngineEvent::ToolCall { tool, output: Some(output), .. } if tool == "read_file" => Some(output),
        _ => None,
    });
    assert!(
        read.as_deref().is_some_and(|o| o.contains("v1 of the library")),
        "the agent read the submodule's file, filled offline from the person's checkout: {read:?}"
    );
    assert_eq!(reviewed(&waiting), vec!["notes.txt"]);
    let review = lines(&waiting).into_iter().rev().find(|e| e["type"] == "review_requested").unwrap();
    assert_eq!(review["in_submodules"], json!(["lib/api.txt", "lib/extra.txt"]), "what changed inside the submodule is named");
    let why = review["auto_approve"]["reason"].as_str().unwrap();
    assert!(why.contains("the agent changed lib/api.txt, lib/extra.txt inside a submodule"), "{why}");
    // And in words, where a person reads the run (a second task, side by side).
    let said = cli.cmd(&["run", "use the library", "--workspace", r.to_str().unwrap(), "--base-url", &cli.url, "--model", "m"]).output().unwrap();
    let said = String::from_utf8_lossy(&said.stdout);
    assert!(said.contains("changed inside a submodule, which the task's branch cannot carry"), "{said}");

    let approved = cli.review(&id, &["--approve"]);
    assert_eq!(approved.status.code(), Some(0), "{}", String::from_utf8_lossy(&approved.stderr));
    assert_eq!(std::fs::read_to_string(r.join("notes.txt")).unwrap(), "notes\n");
    assert_eq!(std::fs::read_to_string(r.join("lib/api.txt")).unwrap(), "v1 of the library\n", "the person's submodule is left alone");
    assert_eq!(git(&r, &["status", "--porcelain", "--", "lib"]), "", "and its link in the repository too");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_the_person_asked_at_review_is_named_in_the_tasks_round_commit_and_in_what_lands() {
    let (_s, dir, cli) = server(vec![writes("more.txt", "more\n", 0), writes("app.txt", "app\n", 0), writes("extra.txt", "extra\n", 0)]).await;
    let r = repo(dir.path());
    let first = cli.run("write app.txt", &r, &[]);
    assert_eq!(first.status.code(), Some(6), "{}", String::from_utf8_lossy(&first.stderr));
    let id = session_of(&first);
    let second = cli.review(&id, &["--request-changes", "also write more.txt\nand keep it short", "--json"]);
    assert_eq!(second.status.code(), Some(6), "{}", String::from_utf8_lossy(&second.stderr));
    let branch = summary(&second)["branch"].as_str().unwrap().to_string();
    let rounds: Vec<String> = git(&r, &["log", "--format=%s", &format!("main..{branch}")]).lines().map(String::from).collect();
    assert_eq!(rounds, vec!["write app.txt (round 2: also write more.txt)", "write app.txt"], "the round's commit says what it answers");
    assert!(git(&r, &["log", "-1", "--format=%b", &branch]).contains("Asked at review: also write more.txt\nand keep it short"));

    // A round asked with comments alone is named after them, not after the request before it.
    let third = cli.review(&id, &["--request-changes", "--comment", "more.txt:1=now write extra.txt", "--json"]);
    assert_eq!(third.status.code(), Some(6), "{}", String::from_utf8_lossy(&third.stderr));
    assert_eq!(
        git(&r, &["log", "-1", "--format=%s", &branch]),
        "write app.txt (round 3: more.txt:1: now write extra.txt)",
        "a round asked by a comment alone is named after it"
    );

    let approved = cli.review(&id, &["--approve"]);
    assert_eq!(approved.status.code(), Some(0), "{}", String::from_utf8_lossy(&approved.stderr));
    assert_eq!(git(&r, &["log", "-1", "--format=%s", "main"]), "write app.txt");
    let body = git(&r, &["log", "-1", "--format=%b", "main"]);
    assert!(
        body.contains("Asked at review:\n- also write more.txt and keep it short\n- more.txt:1: now write extra.txt"),
        "what lands says what the person asked for on the way, comments too: {body}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_autocrlf_set_the_review_lists_only_what_the_task_changed_and_line_endings_land_as_the_person_keeps_them() {
    let (_s, dir, cli) = server(vec![writes("notes.txt", "notes\n", 0)]).await;
    let r = person_repo(dir.path(), &[("a.txt", "one\ntwo\n"), ("b.md", "# b\n")]);
    // The person's own git configuration, as a Windows-minded one keeps it.
    let global = dir.path().join("gitconfig");
    std::fs::write(&global, "[core]\n\tautocrlf = true\n").unwrap();
    let run = cli
        .cmd(&["run", "write notes.txt", "--workspace", r.to_str().unwrap(), "--base-url", &cli.url, "--model", "m", "--json"])
        .env("GIT_CONFIG_GLOBAL", &global)
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(6), "{}", String::from_utf8_lossy(&run.stderr));
    assert_eq!(reviewed(&run), vec!["notes.txt"], "a file the task did not touch is not in its review");
    let id = session_of(&run);
    let approved =
        cli.cmd(&["sessions", "review", &id, "--approve", "--base-url", &cli.url, "--model", "m"]).env("GIT_CONFIG_GLOBAL", &global).output().unwrap();
    assert_eq!(approved.status.code(), Some(0), "{}", String::from_utf8_lossy(&approved.stderr));
    let landed: Vec<String> = git(&r, &["diff", "--name-only", "HEAD~1", "HEAD"]).lines().map(String::from).collect();
    assert_eq!(landed, vec!["notes.txt"], "only the task's file lands");
    assert_eq!(std::fs::read_to_string(r.join("a.txt")).unwrap(), "one\ntwo\n", "the person's files are as they were");
    assert_eq!(std::fs::read_to_string(r.join("notes.txt")).unwrap(), "notes\r\n", "the task's file reaches their checkout with their line endings");
    assert_eq!(git(&r, &["show", "HEAD:notes.txt"]), "notes", "and the commit holds it as git keeps text");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_autocrlf_set_a_task_that_edits_a_file_lands_both_as_a_commit_and_as_uncommitted_changes() {
    let (_s, dir, cli) = server(vec![writes("a.txt", "one\nTWO\n", 0)]).await;
    let r = person_repo(dir.path(), &[("a.txt", "one\ntwo\n")]);
    let global = dir.path().join("gitconfig");
    std::fs::write(&global, "[core]\n\tautocrlf = true\n").unwrap();
    // Their checkout as autocrlf makes it: CRLF in every text file.
    let with_config = |args: &[&str]| Command::new("git").arg("-C").arg(&r).args(args).env("GIT_CONFIG_GLOBAL", &global).output().unwrap();
    std::fs::remove_file(r.join("a.txt")).unwrap();
    assert!(with_config(&["checkout", "--", "a.txt"]).status.success());
    assert_eq!(std::fs::read_to_string(r.join("a.txt")).unwrap(), "one\r\ntwo\r\n");
    for land in ["uncommitted", "squash"] {
        let run = cli
            .cmd(&[
                "run",
                "write a.txt",
                "--workspace",
                r.to_str().unwrap(),
                "--base-url",
                &cli.url,
                "--model",
                "m",
                "--json",
                "--review",
                "approve",
                "--land",
                land,
            ])
            .env("GIT_CONFIG_GLOBAL", &global)
            .output()
            .unwrap();
        assert_eq!(run.status.code(), Some(0), "{land}: {}", String::from_utf8_lossy(&run.stderr));
        assert_eq!(reviewed(&run), vec!["a.txt"], "{land}");
        assert_eq!(std::fs::read_to_string(r.join("a.txt")).unwrap().replace('\r', ""), "one\nTWO\n", "{land}: the task's edit is in their checkout");
        if land == "uncommitted" {
            // Put back as it was, for the second way.
            assert!(with_config(&["checkout", "--", "a.txt"]).status.success());
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_the_agent_makes_inside_a_submodule_never_lands_as_a_link_to_nothing_nor_reaches_the_persons_copy() {
    let commit =
        "cd lib && git -c user.name=A -c user.email=a@example.com commit -qam 'by the agent' && (git push -q origin HEAD:refs/heads/agent 2>&1 || true)";
    let calls = vec![
        write_call("lib/api.txt", "v2 by the task\n"),
        json!({"name": "run_command", "arguments": {"command": commit}}),
        write_call("notes.txt", "notes\n"),
    ];
    let (_s, dir, cli) = server(vec![calls_then_done("use the library", calls, "Created notes.txt")]).await;
    let r = repo_with_submodule(dir.path());
    let linked = git(&r, &["rev-parse", "HEAD:lib"]);

    let waiting = cli.run("use the library", &r, &["--review", "approve", "--allow", "all"]);
    assert_eq!(waiting.status.code(), Some(6), "{}", String::from_utf8_lossy(&waiting.stderr));
    let review = lines(&waiting).into_iter().rev().find(|e| e["type"] == "review_requested").unwrap();
    let named = review["in_submodules"].as_array().unwrap();
    assert_eq!(named.len(), 1, "the commit is named, not its files twice: {named:?}");
    assert!(named[0].as_str().unwrap().starts_with("lib/ (at another commit, "), "{named:?}");
    assert_eq!(reviewed(&waiting), vec!["notes.txt"], "the submodule's link is not among what lands");
    let approved = cli.review(&session_of(&waiting), &["--approve"]);
    assert_eq!(approved.status.code(), Some(0), "{}", String::from_utf8_lossy(&approved.stderr));
    assert_eq!(git(&r, &["rev-parse", "HEAD:lib"]), linked, "the person's branch still links a commit their submodule has");
    assert_eq!(git(&r.join("lib"), &["branch", "--list", "agent"]), "", "a push from the task's copy had nowhere to go");
    assert_eq!(std::fs::read_to_string(r.join("lib/api.txt")).unwrap(), "v1 of the library\n");
}

/// A task in a repository with a submodule whose agent runs `command`, auto-approve on; the
/// person has an uncommitted edit inside their submodule.
async fn submodule_task(command: &str, land: &str) -> (tempfile::TempDir, PathBuf, String, Output) {
    let calls = vec![json!({"name": "run_command", "arguments": {"command": command}}), write_call("notes.txt", "notes\n")];
    let (s, dir, cli) = server(vec![calls_then_done("change the library", calls, "Created notes.txt")]).await;
    let r = repo_with_submodule(dir.path());
    std::fs::write(r.join("lib/api.txt"), "v1 of the library\nmy own edit in the submodule\n").unwrap();
    let linked = git(&r, &["rev-parse", "HEAD:lib"]);
    let out = cli.run("change the library", &r, &["--review", "approve", "--allow", "all", "--land", land]);
    drop(s);
    (dir, r, linked, out)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_never_removes_replaces_or_moves_a_submodule_on_the_persons_branch_and_waits_for_them() {
    let commit_lib = "cd lib && echo more >> api.txt && git -c user.name=A -c user.email=a@example.com commit -qam 'by the agent'";
    let cases = [
        ("rm -rf lib && echo hi > lib", "squash", "lib (removed or replaced by the task"),
        (
            "rm -rf lib && echo hi > lib && git add -A && git -c user.name=A -c user.email=a@example.com commit -qm gone",
            "merge",
            "lib (removed or replaced by the task",
        ),
        (
            &*format!("{commit_lib} && cd .. && git add lib && git -c user.name=A -c user.email=a@example.com commit -qm bump"),
            "squash",
            "lib/ (at another commit",
        ),
        ("cd lib && git -c user.name=A -c user.email=a@example.com commit -q --allow-empty -m moved", "squash", "lib/ (at another commit"),
        ("git rm -q lib", "uncommitted", "lib (removed or replaced by the task"),
    ];
    for (command, land, named) in cases {
        let (_dir, r, linked, out) = submodule_task(command, land).await;
        assert_eq!(out.status.code(), Some(6), "{command}: waits for the person: {}", String::from_utf8_lossy(&out.stderr));
        let review = lines(&out).into_iter().rev().find(|e| e["type"] == "review_requested").unwrap();
        let named_all = review["in_submodules"].to_string();
        assert!(named_all.contains(named), "{command}: {named_all}");
        assert_eq!(reviewed(&out), vec!["notes.txt"], "{command}: the submodule is not among what lands");
        let cli = Cli { url: String::new(), data: _dir.path().join("data") };
        let approved = cli.cmd(&["sessions", "review", &session_of(&out), "--approve"]).output().unwrap();
        assert_eq!(approved.status.code(), Some(0), "{command}: {}", String::from_utf8_lossy(&approved.stderr));
        assert_eq!(git(&r, &["rev-parse", "HEAD:lib"]), linked, "{command}: the person's branch links what it linked");
        assert_eq!(
            std::fs::read_to_string(r.join("lib/api.txt")).unwrap(),
            "v1 of the library\nmy own edit in the submodule\n",
            "{command}: their submodule and their edit in it are untouched"
        );
        assert_eq!(std::fs::read_to_string(r.join("notes.txt")).unwrap(), "notes\n", "{command}: the rest lands");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_folder_a_stale_gitmodules_still_names_is_an_ordinary_folder_whose_changes_are_reviewed_and_land() {
    let (_s, dir, cli) = server(vec![writes("vendor/x/f.txt", "changed by the task\n", 0)]).await;
    let r = person_repo(dir.path(), &[(".gitmodules", "[submodule \"x\"]\n\tpath = vendor/x\n\turl = https://example.invalid/x.git\n")]);
    std::fs::create_dir_all(r.join("vendor/x")).unwrap();
    std::fs::write(r.join("vendor/x/f.txt"), "ordinary file\n").unwrap();
    git(&r, &["add", "vendor"]);
    git(&r, &["commit", "-q", "-m", "vendor x is a folder now"]);
    let out = cli.run("write vendor/x/f.txt", &r, &["--review", "approve"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(reviewed(&out), vec!["vendor/x/f.txt"]);
    assert_eq!(std::fs::read_to_string(r.join("vendor/x/f.txt")).unwrap(), "changed by the task\n", "it landed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_whose_branch_is_kept_names_it_and_one_that_landed_names_no_branch_that_is_gone() {
    let (_s, dir, cli) = server(vec![writes("landed.txt", "landed\n", 0), writes("kept.txt", "kept\n", 0)]).await;
    let r = repo(dir.path());
    let landed = session_of(&cli.run("write landed.txt", &r, &[]));
    let kept = session_of(&cli.run("write kept.txt", &r, &[]));
    let approved = cli.review(&landed, &["--approve", "--json"]);
    assert_eq!(approved.status.code(), Some(0), "{}", String::from_utf8_lossy(&approved.stderr));
    let put_aside = cli.review(&kept, &["--approve", "--land", "branch", "--json"]);
    assert_eq!(put_aside.status.code(), Some(0), "{}", String::from_utf8_lossy(&put_aside.stderr));
    let branch = git(&r, &["branch", "--list", "finishline/*", "--format=%(refname:short)"]);
    assert!(branch.starts_with("finishline/"), "the branch is kept: {branch:?}");

    let rows = lines(&cli.cmd(&["sessions", "list", "--json"]).output().unwrap());
    let row = |id: &str| rows.iter().find(|r| r["id"] == id).unwrap().clone();
    assert_eq!(row(&landed)["branch"], Value::Null, "the landed task's branch is deleted, so none is named");
    assert_eq!(row(&kept)["branch"], branch.as_str(), "the kept one is named where the work waits");
    let text = String::from_utf8_lossy(&cli.cmd(&["sessions", "list"]).output().unwrap().stdout).to_string();
    let line = |id: &str| text.lines().find(|l| l.starts_with(id)).unwrap().to_string();
    assert!(line(&kept).contains(&format!("[branch kept: {branch}]")), "the list says where the kept work is: {text}");
    assert!(!line(&landed).contains("branch kept"), "{text}");
}

/// Killed after "let the agent resolve it" merged the person's branch into the worktree (markers
/// and all) and before the decision was recorded: the next Approve must not commit that merge
/// and land its markers on the person's branch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_after_the_merge_for_the_agent_and_before_it_was_recorded_the_markers_never_land() {
    let rules = notes_then_resolve(json!({"text": "Merging both.", "tool_calls": [write_call("notes.md", "the person's notes\nthe task's notes\n")]}));
    let (_s, dir, cli) = server(vec![rules]).await;
    let r = repo(dir.path());
    let id = session_of(&cli.run("write notes.md", &r, &[]));
    person_commits_notes(&r);
    assert_eq!(cli.review(&id, &["--approve"]).status.code(), Some(6), "the landing conflicts");
    let resolving = cli.cmd(&["sessions", "review", &id, "--resolve", "--base-url", &cli.url, "--model", "m"]);
    let mut child = paused_at(resolving, "resolve-after-merge", &dir.path().join("paused"), "the merge for the agent was made");
    child.kill().unwrap();
    let _ = child.wait();
    let approved = cli.review(&id, &["--approve"]);
    let said = String::from_utf8_lossy(&approved.stderr).to_string();
    assert_ne!(approved.status.code(), Some(0), "nothing lands: {said}");
    let notes = std::fs::read_to_string(r.join("notes.md")).unwrap();
    assert!(!notes.contains("<<<<<<<"), "no conflict marker reached the person's checkout: {notes}");
    assert!(!git(&r, &["show", "HEAD:notes.md"]).contains("<<<<<<<"), "nor their branch");
    assert!(said.contains("notes.md"), "the file is named: {said}");
    // Asked again, with that merge committed by now: still nothing lands.
    let again = cli.review(&id, &["--approve"]);
    assert_ne!(again.status.code(), Some(0), "{}", String::from_utf8_lossy(&again.stderr));
    assert!(!std::fs::read_to_string(r.join("notes.md")).unwrap().contains("<<<<<<<"), "not at the second Approve either");
    assert!(!git(&r, &["show", "HEAD:notes.md"]).contains("<<<<<<<"));
}

/// After the agent resolved a conflict (the person's branch merged into the task's), what
/// Approve lands is the task's own files, not every file the person's branch gained meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_resolved_conflict_the_files_approve_lands_are_the_tasks_own() {
    let rules = notes_then_resolve(json!({"text": "Merging both.", "tool_calls": [write_call("notes.md", "the person's notes\nthe task's notes\n")]}));
    let (_s, dir, cli) = server(vec![rules]).await;
    let r = repo(dir.path());
    let first = cli.run("write notes.md", &r, &[]);
    let id = session_of(&first);
    std::fs::write(r.join("theirs.md"), "another task's work, landed\n").unwrap();
    git(&r, &["add", "theirs.md"]);
    git(&r, &["commit", "-q", "-m", "another task landed"]);
    person_commits_notes(&r);
    assert_eq!(cli.review(&id, &["--approve"]).status.code(), Some(6), "the landing conflicts");
    let resolved = cli.review(&id, &["--resolve", "--json"]);
    assert_eq!(resolved.status.code(), Some(6), "{}", String::from_utf8_lossy(&resolved.stderr));
    let lands = stored(&cli.data, &id)
        .into_iter()
        .rev()
        .find_map(|e| if let finishline_engine::event::EngineEvent::TaskCommitted { files_since_start: Some(f), .. } = e { Some(f) } else { None })
        .unwrap();
    assert_eq!(lands, vec!["notes.md".to_string()], "theirs.md came with the person's branch and is not the task's to land");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_landing_that_conflicts_can_go_back_to_the_agent_from_a_script_and_then_lands() {
    let rules = notes_then_resolve(json!({"text": "Merging both.", "tool_calls": [write_call("notes.md", "the person's notes\nthe task's notes\n")]}));
    let (_s, dir, cli) = server(vec![rules]).await;
    let r = repo(dir.path());
    let first = cli.run("write notes.md", &r, &[]);
    assert_eq!(first.status.code(), Some(6), "{}", String::from_utf8_lossy(&first.stderr));
    let id = session_of(&first);
    let early = cli.review(&id, &["--resolve"]);
    assert_eq!(early.status.code(), Some(2), "nothing to resolve before a landing was refused: {}", String::from_utf8_lossy(&early.stderr));
    assert_eq!(git(&r, &["branch", "--list", "finishline/*"]).lines().count(), 1, "and nothing was merged or sent");
    person_commits_notes(&r);
    let blocked = cli.review(&id, &["--approve"]);
    assert_eq!(blocked.status.code(), Some(6), "{}", String::from_utf8_lossy(&blocked.stderr));
    let said = String::from_utf8_lossy(&blocked.stderr).to_string();
    // Pasted as it is, it finds this history: the folder the person named is in it.
    let resolve = format!("`finishline sessions review {id} --resolve --data-dir {}`", cli.data.display());
    assert!(said.contains(&resolve), "it names the way to let the agent resolve it, as the window does: {said}");

    // Pasted as printed, with nothing added: the session's own model and server answer it.
    let pasted: Vec<&str> = resolve.trim_matches('`').split_whitespace().skip(1).collect();
    let resolved = Command::new(bin())
        .args(&pasted)
        .arg("--json")
        .env_remove("OPENAI_API_KEY")
        .env("XDG_DATA_HOME", cli.data.join("xdg"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(resolved.status.code(), Some(6), "the agent's resolution waits for review: {}", String::from_utf8_lossy(&resolved.stderr));
    // A script reads what its decision did first, as after `--request-changes --json`.
    let first: Value = serde_json::from_str(String::from_utf8_lossy(&resolved.stdout).lines().next().unwrap_or_default()).unwrap_or_default();
    assert_eq!(first["outcome"], "decided", "{first}");
    assert!(matches!(first["status"].as_str(), Some("busy" | "queued")), "sent back to the agent, working: {first}");
    // The review shows what Approve lands on the person's branch as it is now, not the round's
    // edit of a file full of conflict markers.
    let review = String::from_utf8_lossy(&resolved.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .rfind(|e| e["type"] == "review_requested")
        .expect("a review was asked for");
    let files = review["files_changed"].as_array().unwrap();
    assert_eq!(files.iter().map(|f| f["path"].as_str().unwrap()).collect::<Vec<_>>(), vec!["notes.md"], "{review}");
    let diff = files[0]["diff"].as_str().unwrap();
    let changed: Vec<&str> = diff.lines().filter(|l| (l.starts_with('+') || l.starts_with('-')) && !l.starts_with("+++") && !l.starts_with("---")).collect();
    assert_eq!(changed, vec!["+the task's notes"], "the task's line on top of the person's notes: {diff}");
    let landed = cli.review(&id, &["--approve"]);
    assert_eq!(landed.status.code(), Some(0), "{}", String::from_utf8_lossy(&landed.stderr));
    assert_eq!(git(&r, &["show", "main:notes.md"]), "the person's notes\nthe task's notes");
    assert_eq!(std::fs::read_to_string(r.join("README.md")).unwrap(), "hello\nmy own edit, not committed\n", "the person's edit is untouched");
    // The session's story tells the refused landing, the resolve and where it landed.
    let md = String::from_utf8_lossy(&cli.cmd(&["sessions", "show", &id]).output().unwrap().stdout).to_string();
    assert!(md.contains("**Not landed** (conflict)") && md.contains("notes.md"), "{md}");
    assert!(
        md.contains("**↻ Continuation from Finishline** (resolve the conflict with the moved branch; not written by you)") && !md.contains("0/0"),
        "a continuation from no budget has no count: {md}"
    );
    assert!(
        md.contains("**Review decision:** let the agent resolve the landing (by you)"),
        "the person sent it back to resolve, wrote no change request: {md}"
    );
    assert!(!md.contains("request_changes"), "{md}");
    let commit = git(&r, &["rev-parse", "--short=10", "main"]);
    assert!(md.contains(&format!("**Landed** on main as {commit}")), "{md}");
    let json = String::from_utf8_lossy(&cli.cmd(&["sessions", "show", &id, "--json"]).output().unwrap().stdout).to_string();
    assert_eq!(json.lines().count(), 1, "--json is one object per line, here one");
    assert_eq!(serde_json::from_str::<Value>(&json).unwrap()["format"], "finishline-session");

    let not_waiting = cli.review(&id, &["--resolve"]);
    assert_eq!(not_waiting.status.code(), Some(2), "nothing to resolve once decided: {}", String::from_utf8_lossy(&not_waiting.stderr));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conflict_markers_an_agent_left_behind_never_land_on_the_persons_branch() {
    // Asked to resolve the conflict, this agent says it did and touches nothing.
    let (_s, dir, cli) = server(vec![notes_then_resolve(json!({"text": "Done! Resolved."}))]).await;
    let r = repo(dir.path());
    let id = session_of(&cli.run("write notes.md", &r, &[]));
    person_commits_notes(&r);
    assert_eq!(cli.review(&id, &["--approve"]).status.code(), Some(6), "the branch moved and the changes conflict");
    let resolved = cli.review(&id, &["--resolve"]);
    assert_eq!(resolved.status.code(), Some(6), "{}", String::from_utf8_lossy(&resolved.stderr));
    // The judge sees the markers still there: the agent is sent back to them, and the review
    // never calls the work verified done.
    use finishline_engine::event::EngineEvent;
    let events = stored(&cli.data, &id);
    let back = events.iter().filter(|e| matches!(e, EngineEvent::Continuation { source: finishline_engine::domain::ContinuationSource::ConflictMarkers, remaining, .. } if *remaining == vec!["notes.md".to_string()])).count();
    assert!(back >= 1, "sent back to the markers in notes.md: {events:?}");
    let ended = events.iter().rev().find_map(|e| if let EngineEvent::ReviewRequested { end_reason, .. } = e { Some(*end_reason) } else { None });
    assert_ne!(ended, Some(finishline_engine::domain::EndReason::VerifiedDone), "markers left are not verified done");

    let approved = cli.review(&id, &["--approve", "--json"]);
    assert_eq!(approved.status.code(), Some(6), "not landed: {}", String::from_utf8_lossy(&approved.stdout));
    let outcome: Value = serde_json::from_slice(&approved.stdout).unwrap();
    assert_eq!((outcome["reason"].as_str(), outcome["files"].clone()), (Some("conflict_markers"), json!(["notes.md"])), "{outcome}");
    assert_eq!(git(&r, &["show", "main:notes.md"]), "the person's notes", "the person's branch never gets the markers");
    assert_eq!(std::fs::read_to_string(r.join("notes.md")).unwrap(), "the person's notes\n", "nor their checkout");
    // What the task has stays on its branch, for the agent (or the person) to resolve.
    let resolve_again = cli.review(&id, &["--resolve"]);
    assert_eq!(resolve_again.status.code(), Some(6), "{}", String::from_utf8_lossy(&resolve_again.stderr));
}

/// Sent back to resolve a conflict, the agent's shell puts a named pipe where the conflicted
/// file was: looking for markers left in it would wait on the pipe for ever. A pipe holds no
/// markers, and the round ends for its review.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conflicted_file_the_agent_made_a_named_pipe_never_holds_the_look_for_markers() {
    let pipe = json!({"name": "run_command", "arguments": {"command": "rm notes.md && mkfifo notes.md && echo piped"}});
    let (_s, dir, cli) = server(vec![notes_then_resolve(json!({"text": "Piping.", "tool_calls": [pipe]}))]).await;
    let r = repo(dir.path());
    let id = session_of(&cli.run("write notes.md", &r, &[]));
    person_commits_notes(&r);
    assert_eq!(cli.review(&id, &["--approve"]).status.code(), Some(6), "the branch moved and the changes conflict");
    let resolved =
        within_a_minute(cli.cmd(&["sessions", "review", &id, "--resolve", "--allow", "run_command", "--base-url", &cli.url, "--model", "m"]), "the round");
    assert_eq!(resolved.status.code(), Some(6), "the round waits for its review: {}", String::from_utf8_lossy(&resolved.stderr));
    assert_eq!(std::fs::read_to_string(r.join("notes.md")).unwrap(), "the person's notes\n", "the person's checkout is untouched");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_review_asked_of_a_session_with_none_says_what_it_is_and_what_can_be_done_instead() {
    let denied = vec![
        json!({"when": {"kind": "agent", "last_message_contains": "list the files"}, "reply": {"text": "Listing.", "tool_calls": [{"name": "run_command", "arguments": {"command": "ls"}}]}}),
    ];
    let (_s, dir, cli) = server(vec![denied, writes("done.txt", "done\n", 0)]).await;
    let r = repo(dir.path());
    // Nobody at a terminal to allow the command: denied, the session idle with its worktree.
    let idle = session_of(&cli.run("list the files", &r, &[]));
    let said = |o: &Output| String::from_utf8_lossy(&o.stderr).to_string();
    let asked = cli.review(&idle, &["--approve"]);
    assert_eq!(asked.status.code(), Some(2));
    assert!(said(&asked).contains(&format!("`finishline sessions resume {idle} ")), "the way on: {}", said(&asked));
    assert!(
        said(&asked).contains(&format!("`finishline sessions discard {idle} --data-dir {}`", cli.data.display())),
        "and the way to put it away: {}",
        said(&asked)
    );

    let done = session_of(&cli.run("write done.txt", &r, &[]));
    assert_eq!(cli.review(&done, &["--approve"]).status.code(), Some(0));
    let again = cli.review(&done, &["--reject"]);
    assert_eq!(again.status.code(), Some(2));
    assert!(said(&again).contains("already decided"), "{}", said(&again));

    let unknown = cli.review("ses_nothing_like_it", &["--approve"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(said(&unknown).contains("no session ses_nothing_like_it") && said(&unknown).contains("sessions list"), "{}", said(&unknown));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conflict_the_agent_resolves_by_keeping_its_own_version_lands_once_approved() {
    // Asked to resolve, the agent keeps what it wrote: the file as its branch already has it.
    let (_s, dir, cli) = server(vec![notes_then_resolve(json!({"text": "Keeping mine.", "tool_calls": [write_call("notes.md", "the task's notes\n")]}))]).await;
    let r = repo(dir.path());
    let id = session_of(&cli.run("write notes.md", &r, &[]));
    person_commits_notes(&r);
    assert_eq!(cli.review(&id, &["--approve"]).status.code(), Some(6), "the branch moved and the changes conflict");
    let resolved = cli.review(&id, &["--resolve"]);
    assert_eq!(resolved.status.code(), Some(6), "{}", String::from_utf8_lossy(&resolved.stderr));
    let landed = cli.review(&id, &["--approve"]);
    assert_eq!(landed.status.code(), Some(0), "the merge the agent finished lands, not the same conflict again: {}", String::from_utf8_lossy(&landed.stderr));
    assert_eq!(git(&r, &["show", "main:notes.md"]), "the task's notes");
    assert_eq!(git(&r, &["log", "--format=%s", "-2", "main"]).lines().nth(1), Some("the person's notes"), "on top of the person's commit");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resolution_that_undoes_the_persons_other_changes_never_lands() {
    // Asked to resolve, the agent keeps its notes and also puts the person's other file back.
    let reply = json!({"text": "Keeping mine.", "tool_calls": [write_call("notes.md", "the task's notes\n"), write_call("other.txt", "v1\n")]});
    let (_s, dir, cli) = server(vec![notes_then_resolve(reply)]).await;
    let r = repo(dir.path());
    // A folder named as the branch: git must never read `main` as a path.
    std::fs::create_dir(r.join("main")).unwrap();
    std::fs::write(r.join("main/readme.txt"), "a folder named main\n").unwrap();
    std::fs::write(r.join("other.txt"), "v1\n").unwrap();
    git(&r, &["add", "main", "other.txt"]);
    git(&r, &["commit", "-q", "-m", "other v1"]);
    let id = session_of(&cli.run("write notes.md", &r, &[]));
    std::fs::write(r.join("notes.md"), "the person's notes\n").unwrap();
    std::fs::write(r.join("other.txt"), "v2, the person's\n").unwrap();
    git(&r, &["add", "notes.md", "other.txt"]);
    git(&r, &["commit", "-q", "-m", "the person's notes and other v2"]);
    assert_eq!(cli.review(&id, &["--approve"]).status.code(), Some(6));
    let resolved = cli.review(&id, &["--resolve"]);
    assert_eq!(resolved.status.code(), Some(6), "{}", String::from_utf8_lossy(&resolved.stderr));
    let approved = cli.review(&id, &["--approve"]);
    assert_eq!(approved.status.code(), Some(6), "not landed: {}", String::from_utf8_lossy(&approved.stderr));
    assert_eq!(git(&r, &["show", "main:other.txt"]), "v2, the person's", "the person's change is never undone on their branch");
    assert_eq!(std::fs::read_to_string(r.join("other.txt")).unwrap(), "v2, the person's\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_started_on_no_branch_keeps_its_branch_when_approved_and_leaves_the_checkout_alone() {
    let (_s, dir, cli) = server(vec![writes("notes.md", "the task's notes\n", 0)]).await;
    let r = repo(dir.path());
    // The person is between branches (a rebase or bisect detaches HEAD the same way).
    git(&r, &["checkout", "-q", "--detach"]);
    let head = git(&r, &["rev-parse", "HEAD"]);
    let run = cli.run("write notes.md", &r, &[]);
    assert_eq!(run.status.code(), Some(6), "{}", String::from_utf8_lossy(&run.stderr));
    let id = session_of(&run);
    let approved = cli.review(&id, &["--approve"]);
    assert_eq!(approved.status.code(), Some(0), "the one landing there is, keeping the branch, goes through: {}", String::from_utf8_lossy(&approved.stderr));
    let branch = git(&r, &["branch", "--list", "finishline/*", "--format=%(refname:short)"]);
    assert!(branch.starts_with("finishline/"), "the task's branch is kept: {branch:?}");
    assert_eq!(git(&r, &["show", &format!("{branch}:notes.md")]), "the task's notes");
    assert_eq!(git(&r, &["rev-parse", "HEAD"]), head, "the person's checkout did not move");
    assert!(!r.join("notes.md").exists(), "nor got the task's file");
    assert_eq!(std::fs::read_to_string(r.join("README.md")).unwrap(), "hello\nmy own edit, not committed\n");
    let said = String::from_utf8_lossy(&approved.stderr).to_string();
    assert!(said.contains(&branch), "it names the branch where the work waits: {said}");
    // A follow-up works in a new worktree from the checkout as it is: the agent is told its
    // earlier work is on the kept branch, not that it landed here.
    let follow = cli.cmd(&["sessions", "resume", &id, "then write more.md", "--base-url", &cli.url, "--model", "m", "--json"]).output().unwrap();
    let note = lines(&follow).into_iter().find(|e| e["type"] == "continuation").expect("a note from Finishline");
    assert_eq!(note["source"], "new_worktree");
    let text = note["text"].as_str().unwrap();
    assert!(text.contains(&format!("kept on the branch `{branch}`")) && text.contains("not in this worktree") && !text.contains("landed"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_approve_on_no_branch_leaves_the_choice_to_the_person() {
    // A script's checkout (CI's is often detached) expects approved work to land: keeping a branch
    // instead is the person's call, not auto-approve's.
    let (_s, dir, cli) = server(vec![writes("notes.md", "the task's notes\n", 0)]).await;
    let r = repo(dir.path());
    git(&r, &["checkout", "-q", "--detach"]);
    let run = cli.run("write notes.md", &r, &["--review", "approve"]);
    assert_eq!(run.status.code(), Some(6), "it waits for the person: {}", String::from_utf8_lossy(&run.stderr));
    let review = lines(&run).into_iter().rfind(|e| e["type"] == "review_requested").expect("a review");
    assert_eq!(review["auto_approve"]["approved"], false, "{review}");
    assert!(review["auto_approve"]["reason"].as_str().unwrap().contains("no branch"), "{review}");
    let id = session_of(&run);
    assert_eq!(cli.review(&id, &["--approve"]).status.code(), Some(0), "the person's approve keeps the branch");
}

/// A plan left waiting for its go-ahead and then cancelled from another terminal ran nothing in
/// its worktree: the worktree and its branch go with the cancel, and nothing waits for the sweep
/// or a discard.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_plan_that_waits_for_its_go_ahead_removes_its_unused_worktree_and_branch() {
    let plan = json!({"steps": [
        {"title": "Write a.txt", "instructions": "Write a.txt.", "criteria": ["a.txt exists"], "depends_on": []},
        {"title": "Write b.txt", "instructions": "Write b.txt.", "criteria": ["b.txt exists"], "depends_on": [0]}
    ]});
    let (_s, dir, cli) = server(vec![vec![json!({"when": {"kind": "manager"}, "reply": {"text": plan.to_string()}})]]).await;
    let r = repo(dir.path());
    let waiting = cli.run("write a.txt and b.txt", &r, &["--plan", "on", "--plan-review", "prompt"]);
    assert_eq!(waiting.status.code(), Some(6), "the plan waits: {}\n{}", String::from_utf8_lossy(&waiting.stderr), String::from_utf8_lossy(&waiting.stdout));
    let id = session_of(&waiting);
    let ws = lines(&waiting).into_iter().find(|e| e["type"] == "task_workspace").expect("the task has a worktree")["worktree"].clone();
    let (folder, branch) = (PathBuf::from(ws["folder"].as_str().unwrap()), ws["branch"].as_str().unwrap().to_string());
    assert!(folder.exists());

    let cancelled = cli.cmd(&["sessions", "cancel", &id]).output().unwrap();
    assert_eq!(cancelled.status.code(), Some(0), "{}", String::from_utf8_lossy(&cancelled.stderr));
    assert!(!folder.exists(), "the unused worktree is gone");
    assert!(!git(&r, &["worktree", "list"]).contains(folder.to_str().unwrap()), "git no longer lists it");
    assert!(git(&r, &["branch", "--list", &branch]).is_empty(), "its branch is gone");
    assert_eq!(std::fs::read_to_string(r.join("README.md")).unwrap(), "hello\nmy own edit, not committed\n", "the person's edit stays");
    let row = lines(&cli.cmd(&["sessions", "list", "--json"]).output().unwrap()).into_iter().find(|s| s["id"] == id.as_str()).unwrap();
    assert_eq!(row["status"], "cancelled", "{row}");
}

/// `sessions cancel` of a task whose review waits says how to decide it instead of calling it
/// "not waiting for you".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_task_whose_review_waits_names_the_review_command_instead() {
    let (_s, dir, cli) = server(vec![writes("notes.md", "the task's notes\n", 0)]).await;
    let r = repo(dir.path());
    let id = session_of(&cli.run("write notes.md", &r, &[]));
    let out = cli.cmd(&["sessions", "cancel", &id]).output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(said.contains("waits for your review") && said.contains(&format!("sessions review {id} --approve")), "{said}");
    assert!(!said.contains("not waiting for you"), "{said}");
}

/// A task run in a pseudo-terminal, its input kept open, waiting at its review prompt: the
/// terminal's process, the input, and the session.
fn at_the_review_prompt(cli: &Cli, r: &Path) -> (std::process::Child, std::process::ChildStdin, String) {
    at_the_review_prompt_of(cli, hello_in_a_terminal(cli, r))
}

/// What the terminal shows, as it shows it, read on a thread of its own until the child's output
/// ends (join the thread to have all of it).
fn read_along(child: &mut std::process::Child) -> (std::sync::Arc<std::sync::Mutex<String>>, std::thread::JoinHandle<()>) {
    use std::io::Read;
    let shown = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let (mut out, into) = (child.stdout.take().unwrap(), shown.clone());
    let reading = std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n @ 1..) = out.read(&mut buf) {
            into.lock().unwrap().push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    (shown, reading)
}

/// [`at_the_review_prompt`] for the task `terminal` runs.
fn at_the_review_prompt_of(cli: &Cli, mut terminal: Command) -> (std::process::Child, std::process::ChildStdin, String) {
    let mut child = terminal.spawn().unwrap();
    let input = child.stdin.take().unwrap();
    let t = Instant::now();
    let mut rows = Vec::new();
    while t.elapsed() < Duration::from_secs(30) {
        rows = lines(&cli.cmd(&["sessions", "list", "--json"]).output().unwrap());
        if let Some(s) = rows.iter().find(|s| s["status"] == "awaiting_review") {
            // The prompt is printed right after the review is recorded.
            std::thread::sleep(Duration::from_millis(500));
            return (child, input, s["id"].as_str().unwrap().to_string());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("the task reached its review: {rows:?}");
}

/// The review decided from another terminal while the first waits at its prompt: the first
/// says so and ends as the decision ended the task, instead of asking on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_review_decided_in_another_terminal_ends_the_question_in_the_first() {
    let (_s, dir, cli) = server(vec![writes("hello.txt", "hello\n", 0)]).await;
    let r = repo(dir.path());
    let (child, input, id) = at_the_review_prompt(&cli, &r);
    let approved = cli.review(&id, &["--approve"]);
    assert_eq!(approved.status.code(), Some(0), "{}", String::from_utf8_lossy(&approved.stderr));
    let out = child.wait_with_output().unwrap();
    drop(input);
    let said = String::from_utf8_lossy(&out.stdout).to_string();
    assert_ne!(out.status.code(), Some(124), "it kept asking: {said}");
    assert!(said.contains("Decided elsewhere"), "{said}");
    assert_eq!(out.status.code(), Some(0), "it ends as the task did, approved: {said}");
}

/// At the terminal what happened is said in its order, and once: the run's end before the
/// review's question, then the landing's line, not repeated by the decision's outcome.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_at_the_terminal_is_told_in_the_order_it_happened_and_once() {
    let (_s, dir, cli) = server(vec![writes("hello.txt", "hello\n", 0)]).await;
    let r = repo(dir.path());
    let (mut child, mut input, _) = at_the_review_prompt(&cli, &r);
    let (shown, reading) = read_along(&mut child);
    input.write_all(b"a\n").unwrap();
    child.wait().unwrap();
    reading.join().unwrap();
    let said = shown.lock().unwrap().clone();
    let at = |what: &str| said.find(what).unwrap_or_else(|| panic!("{what}: {said}"));
    assert!(at("● awaiting_review") < at("Review: [a]pprove"), "the run's end, then the question: {said}");
    assert!(at("● awaiting_review") < at("✓ landed on main as"), "{said}");
    assert!(!said.contains("Landed on main as"), "the landing is told once, by its line: {said}");
}

/// A follow-up of a task in a worktree needs the person's repository, not the subfolder they
/// chose: moved away, the repository refuses the follow-up before a run starts, and the task
/// stays as it ended; the subfolder gone from their checkout does not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follow_up_needs_the_repository_not_the_subfolder_the_task_was_started_in() {
    let (_s, dir, cli) = server(vec![writes("a.txt", "a\n", 0), writes("b.txt", "b\n", 0)]).await;
    let r = repo(dir.path());
    std::fs::create_dir_all(r.join("web")).unwrap();
    std::fs::write(r.join("web/index.html"), "hi\n").unwrap();
    git(&r, &["add", "web"]);
    git(&r, &["commit", "-q", "-m", "web"]);
    let id = session_of(&cli.run("write a.txt", &r.join("web"), &[]));
    assert_eq!(cli.review(&id, &["--approve"]).status.code(), Some(0));
    // The subfolder leaves the person's checkout (another branch has none): the follow-up goes on.
    std::fs::rename(r.join("web"), dir.path().join("web-aside")).unwrap();
    let on = cli.cmd(&["sessions", "resume", &id, "write b.txt", "--base-url", &cli.url, "--model", "m"]).output().unwrap();
    assert_eq!(on.status.code(), Some(6), "it went on to a review: {}", String::from_utf8_lossy(&on.stderr));
    assert_eq!(cli.review(&id, &["--reject"]).status.code(), Some(3));
    std::fs::rename(&r, dir.path().join("moved")).unwrap();
    let refused = cli.cmd(&["sessions", "resume", &id, "write b.txt", "--base-url", &cli.url, "--model", "m"]).output().unwrap();
    let said = String::from_utf8_lossy(&refused.stderr).to_string();
    assert_eq!(refused.status.code(), Some(2), "{said}");
    assert!(said.contains(&format!("the folder this session works in, {}, is gone", r.display())), "{said}");
    let listed = String::from_utf8_lossy(&cli.cmd(&["sessions", "list"]).output().unwrap().stdout).to_string();
    assert!(listed.contains("rejected"), "{listed}");
}

/// A request for changes at the terminal is told before the run it starts: the words that sent
/// the agent back, then the agent's new round.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_for_changes_at_the_terminal_is_told_before_the_run_it_starts() {
    let (_s, dir, cli) = server(vec![writes("hello.txt", "hello\n", 0)]).await;
    let r = repo(dir.path());
    let (mut child, mut input, _) = at_the_review_prompt(&cli, &r);
    let (shown, reading) = read_along(&mut child);
    input.write_all(b"c\nsay more\n").unwrap();
    drop(input);
    child.wait().unwrap();
    reading.join().unwrap();
    let said = shown.lock().unwrap().clone();
    let at = |what: &str| said.find(what).unwrap_or_else(|| panic!("{what}: {said}"));
    assert!(at("Sent back to the agent.") < at("── run (feedback) ──"), "{said}");
}

/// Ctrl+C (SIGINT) at the review prompt stops the terminal at once and leaves the review open,
/// saying how to decide it: nothing was running to cancel.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signal_at_the_review_prompt_leaves_the_review_open_and_says_how_to_decide_it() {
    let (_s, dir, cli) = server(vec![writes("hello.txt", "hello\n", 0)]).await;
    let r = repo(dir.path());
    let (child, input, id) = at_the_review_prompt(&cli, &r);
    let pids = Command::new("pgrep").args(["-f", r.to_str().unwrap()]).output().unwrap();
    let ours: Vec<String> = String::from_utf8_lossy(&pids.stdout)
        .lines()
        .filter(|p| std::fs::read_link(format!("/proc/{p}/exe")).is_ok_and(|e| e.file_name().is_some_and(|n| n == "finishline")))
        .map(str::to_string)
        .collect();
    assert_eq!(ours.len(), 1, "one finishline process: {ours:?}");
    assert!(Command::new("kill").args(["-INT", &ours[0]]).status().unwrap().success());
    let out = child.wait_with_output().unwrap();
    drop(input);
    let said = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(out.status.code(), Some(6), "stopped, the review waits: {said}");
    assert!(said.contains("the review waits for you") && said.contains(&format!("sessions review {id} --approve")), "{said}");
    assert_eq!(status_named_in(&cli, &said), "awaiting_review");
}

/// With no terminal to ask, a tool that needs permission is denied and the run says so on
/// stderr, with the command that goes on with it allowed; that command works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permission_nobody_can_be_asked_is_denied_with_the_command_that_allows_it() {
    let shell = json!({"name": "run_command", "arguments": {"command": "echo hi > c.txt"}});
    let (_s, dir, cli) = server(vec![calls_then_done("make c.txt", vec![shell.clone()], "hi"), calls_then_done("go on", vec![shell], "exit code 0")]).await;
    let r = repo(dir.path());
    let denied = cli.run("make c.txt", &r, &[]);
    let said = String::from_utf8_lossy(&denied.stderr).to_string();
    let id = session_of(&denied);
    assert!(said.contains("run_command needs your permission and there is no terminal to ask, so it was not run"), "{said}");
    let again = format!("sessions resume {id} \"go on\" --allow run_command");
    assert!(said.contains(&again), "{said}");
    let allowed = cli.cmd(&["sessions", "resume", &id, "go on", "--allow", "run_command", "--base-url", &cli.url, "--model", "m", "--json"]).output().unwrap();
    assert!(
        lines(&allowed).iter().any(|e| e["type"] == "tool_finished" && e["tool"] == "run_command" && e["ok"] == true)
            || String::from_utf8_lossy(&allowed.stdout).contains("\"run_command\""),
        "the command ran this time: {}",
        String::from_utf8_lossy(&allowed.stderr)
    );
    assert!(!String::from_utf8_lossy(&allowed.stderr).contains("needs your permission"), "{}", String::from_utf8_lossy(&allowed.stderr));
}

/// After a request for changes, the terminal's review names what earlier rounds changed too:
/// Approve lands the whole branch, not only the round the review shows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_review_after_requested_changes_names_the_earlier_rounds_files_that_approve_lands_too() {
    let (_s, dir, cli) = server(vec![writes("a.txt", "a\n", 0), writes("notes.md", "the task's notes\n", 0)]).await;
    let r = repo(dir.path());
    let id = session_of(&cli.run("write notes.md", &r, &[]));
    let round = cli.review(&id, &["--request-changes", "also write a.txt"]);
    let said = String::from_utf8_lossy(&round.stdout).to_string() + &String::from_utf8_lossy(&round.stderr);
    assert_eq!(round.status.code(), Some(6), "{said}");
    assert!(said.contains("created  a.txt"), "this round's file: {said}");
    assert!(said.contains("and from earlier rounds, which Approve lands too: notes.md"), "{said}");
    assert!(
        said.contains("decision yours, waiting") && !said.contains("decision request_changes"),
        "the earlier round's decision is not this review's: {said}"
    );
    // Read again later, the review says the same.
    let read = String::from_utf8_lossy(&cli.cmd(&["sessions", "review", &id]).output().unwrap().stdout).to_string();
    assert!(read.contains("1 file(s) changed since your last review"), "{read}");
    assert!(read.contains("and from earlier rounds, which Approve lands too: notes.md"), "{read}");
}

/// `sessions review ID` with no decision, from a second terminal, shows what the review decides
/// on (each file and its diff) and how to decide, and decides nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_review_asked_with_no_decision_shows_each_files_diff_and_decides_nothing() {
    let (_s, dir, cli) = server(vec![writes("notes.md", "the task's notes\n", 0)]).await;
    let r = repo(dir.path());
    let id = session_of(&cli.run("write notes.md", &r, &[]));
    let shown = cli.cmd(&["sessions", "review", &id]).output().unwrap();
    let out = String::from_utf8_lossy(&shown.stdout);
    let err = String::from_utf8_lossy(&shown.stderr);
    assert_eq!(shown.status.code(), Some(6), "{err}");
    assert!(out.contains("created  notes.md (+1 −0)") && out.contains("+the task's notes"), "{out}");
    assert!(err.contains("--approve"), "{err}");
    let row = lines(&cli.cmd(&["sessions", "list", "--json"]).output().unwrap()).into_iter().find(|s| s["id"] == id.as_str()).unwrap();
    assert_eq!(row["status"], "awaiting_review");
}

/// Resuming an id this history does not have says so first, whatever else is missing; a known
/// session resumed on another server keeps the model it ran with.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resuming_an_unknown_session_says_so_and_a_new_server_keeps_the_sessions_model() {
    let (_s, dir, cli) = server(vec![writes("notes.md", "the task's notes\n", 0)]).await;
    let ws = dir.path().join("plain");
    std::fs::create_dir_all(&ws).unwrap();
    let out = cli.run("hello", &ws, &[]);
    let id = session_of(&out);
    let bogus = cli.cmd(&["sessions", "resume", "ses_bogus", "go on"]).output().unwrap();
    let said = String::from_utf8_lossy(&bogus.stderr);
    assert_eq!(bogus.status.code(), Some(2), "{said}");
    assert!(said.contains("there is no session ses_bogus in this history"), "{said}");
    let resumed = cli.cmd(&["sessions", "resume", &id, "hello again", "--base-url", &cli.url, "--json"]).output().unwrap();
    assert_eq!(resumed.status.code(), Some(0), "no --model needed: {}", String::from_utf8_lossy(&resumed.stderr));
}

/// Where the task works is said with what it means for the person: their uncommitted changes are
/// not in its worktree (it starts from the last commit); a repository with no commit yet gives it
/// none, and why; on no branch, Approve keeps the branch rather than land it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_run_says_what_its_worktree_leaves_out_and_why_it_has_none() {
    let (_s, dir, cli) = server(vec![writes("a.txt", "a\n", 0), writes("b.txt", "b\n", 0)]).await;
    let human = |ws: &Path| {
        let out = cli
            .cmd(&["run", "write a.txt", "--workspace", ws.to_str().unwrap(), "--base-url", &cli.url, "--model", "m", "--review", "reject"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr)
    };
    let r = repo(dir.path());
    let said = human(&r);
    assert!(
        said.contains("1 uncommitted change in your checkout (README.md) is not in the task's worktree: it starts from the last commit; commit it first if the task needs it"),
        "{said}"
    );

    let fresh = dir.path().join("fresh");
    std::fs::create_dir_all(&fresh).unwrap();
    git(&fresh, &["init", "-q", "-b", "main"]);
    std::fs::write(fresh.join("mine.txt"), "mine\n").unwrap();
    let said = human(&fresh);
    assert!(said.contains("works in the folder itself"), "{said}");
    assert!(said.contains("a git repository with no commit yet, so the task has no worktree of its own: make a first commit to give tasks one"), "{said}");
    // Asked to work in the folder itself, the task has no worktree because it was told so.
    let out = cli
        .cmd(&[
            "run",
            "write a.txt",
            "--workspace",
            fresh.to_str().unwrap(),
            "--base-url",
            &cli.url,
            "--model",
            "m",
            "--review",
            "reject",
            "--isolation",
            "in-place",
        ])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("works in the folder itself") && !said.contains("no commit yet"), "--isolation in-place wanted no worktree: {said}");

    git(&r, &["stash", "-q"]);
    git(&r, &["checkout", "-q", "--detach"]);
    let said = human(&r);
    assert!(said.contains("your checkout is on no branch (a detached HEAD): Approve keeps the task's branch for you to merge rather than land it"), "{said}");

    // Its branch kept, a follow-up starts from the person's commit: said, with the kept branch.
    let id = session_of(&cli.run("write a.txt", &r, &[]));
    let kept = cli.review(&id, &["--approve"]);
    assert_eq!(kept.status.code(), Some(0), "{}", String::from_utf8_lossy(&kept.stderr));
    let branch = git(&r, &["branch", "--list", "finishline/*", "--format=%(refname:short)"]);
    let more = cli.cmd(&["sessions", "resume", &id, "now write b.txt", "--base-url", &cli.url, "--model", "m", "--review", "reject"]).output().unwrap();
    let said = String::from_utf8_lossy(&more.stdout);
    assert!(
        said.contains(&format!("it starts from the commit your checkout is on, not from the kept branch {branch}, which holds the earlier work")),
        "{said}"
    );
}

/// A message to a task whose review waits is what a request for changes does: refused as a
/// mistake (not exit 0), with the command that sends it on with those words, pasteable; and a
/// waiting review read without a decision names its commands as they are typed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_to_a_waiting_review_names_the_request_for_changes_that_sends_it_on() {
    let (_s, dir, cli) = server(vec![writes("a.txt", "a\n", 0)]).await;
    let r = repo(dir.path());
    let id = session_of(&cli.run("write a.txt", &r, &[]));
    let more = cli.cmd(&["sessions", "resume", &id, "now write beta.txt", "--base-url", &cli.url, "--model", "m"]).output().unwrap();
    let said = String::from_utf8_lossy(&more.stderr);
    assert_eq!(more.status.code(), Some(2), "{said}");
    assert!(said.contains(&format!("sessions review {id} --request-changes 'now write beta.txt'")), "{said}");
    let read = cli.cmd(&["sessions", "review", &id]).output().unwrap();
    let said = String::from_utf8_lossy(&read.stderr);
    assert!(said.contains(&format!("sessions review {id} --approve")), "a command as typed: {said}");
    assert!(!said.contains("--resolve"), "nothing to resolve, so not offered: {said}");
}

/// Finishline commits a landing without the repository's hooks or signing (it runs none of the
/// repository's code): a person whose repository has a pre-commit hook or signs its commits is
/// told so when it lands, rather than find unchecked, unsigned commits on their branch later.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_landing_says_which_of_the_persons_hooks_and_signing_it_did_not_apply() {
    let (_s, dir, cli) = server(vec![writes("a.txt", "a\n", 0), writes("b.txt", "b\n", 0)]).await;
    let r = repo(dir.path());
    let plain = cli.review(&session_of(&cli.run("write a.txt", &r, &[])), &["--approve"]);
    assert_eq!(plain.status.code(), Some(0), "{}", String::from_utf8_lossy(&plain.stderr));
    assert!(!String::from_utf8_lossy(&plain.stderr).contains("did not run"), "nothing to say without hooks: {}", String::from_utf8_lossy(&plain.stderr));

    let hook = r.join(".git/hooks/pre-commit");
    std::fs::write(&hook, "#!/bin/sh\nexit 1\n").unwrap();
    std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    git(&r, &["config", "commit.gpgsign", "true"]);
    let landed = cli.review(&session_of(&cli.run("write b.txt", &r, &[])), &["--approve"]);
    let said = String::from_utf8_lossy(&landed.stderr);
    assert_eq!(landed.status.code(), Some(0), "{said}");
    assert!(said.contains("Landed on main"), "{said}");
    assert!(said.contains("Your git hooks did not run for it (pre-commit), and it is not signed (commit.gpgsign is on)"), "{said}");
}

/// Approved at a terminal, blocked from landing by the person's uncommitted edit: the terminal
/// offers its ways out (keep the branch, leave the review open). Decided meanwhile from another
/// terminal or the window, it stops asking and ends as that decision did, instead of waiting for
/// a key that would land on a decided review. Why it did not land is told once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocked_landings_ways_out_asked_at_a_terminal_end_when_the_review_is_decided_elsewhere() {
    let (_s, dir, cli) = server(vec![writes("README.md", "the task's readme\n", 0)]).await;
    let r = repo(dir.path());
    let ws = r.to_string_lossy().into_owned();
    let mut terminal = in_a_terminal(&["run", "write README.md", "--workspace", &ws, "--base-url", &cli.url, "--model", "m"], &cli.data);
    let seen = collect(terminal.stdout.take().unwrap());
    let mut keys = terminal.stdin.take().unwrap();
    let review = tokio::task::block_in_place(|| until_seen(&seen, 60, |s| s.contains("Review: [a]pprove")));
    assert!(review, "the review is asked: {}", seen.lock().unwrap());
    keys.write_all(b"a\n").unwrap();
    let ways = tokio::task::block_in_place(|| until_seen(&seen, 60, |s| s.contains("[k]eep the task's branch")));
    assert!(ways, "the landing is blocked by the person's edit, and the ways out are asked: {}", seen.lock().unwrap());
    let told = seen.lock().unwrap().to_lowercase().matches("not landed").count();
    assert_eq!(told, 1, "why it did not land is told once: {}", seen.lock().unwrap());
    let id = String::from_utf8_lossy(&cli.cmd(&["sessions", "list"]).output().unwrap().stdout).split_whitespace().next().unwrap().to_string();
    let rejected = cli.review(&id, &["--reject"]);
    assert_eq!(rejected.status.code(), Some(3), "rejected from another terminal: {}", String::from_utf8_lossy(&rejected.stderr));
    let status = tokio::task::block_in_place(|| exits_within(&mut terminal, 15));
    let said = seen.lock().unwrap().clone();
    assert_eq!(status.and_then(|s| s.code()), Some(3), "the terminal stops asking and ends rejected: {said}");
    assert!(said.contains("Decided elsewhere (another terminal or the window): rejected."), "it says so: {said}");
    assert_eq!(std::fs::read_to_string(r.join("README.md")).unwrap(), "hello\nmy own edit, not committed\n", "the person's edit is as it was");
}

/// A follow-up of a task that landed works in a new worktree and branch; a commit the person
/// makes there is theirs, and a discard cut short before it kept the branch must still keep it:
/// the earlier landing says nothing about this branch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_discard_cut_short_keeps_a_follow_ups_branch_with_the_persons_commit_though_the_task_landed_before() {
    let failing = fails_after_writing_broken();
    let (_s, dir, cli) = server(vec![failing, writes("notes.md", "the task's notes\n", 0)]).await;
    let r = repo(dir.path());
    let landed = cli.run("write notes.md", &r, &["--review", "approve"]);
    assert_eq!(landed.status.code(), Some(0), "it landed: {}", String::from_utf8_lossy(&landed.stderr));
    let id = session_of(&landed);
    let follow_up = cli.cmd(&["sessions", "resume", &id, "now write broken.txt", "--base-url", &cli.url, "--model", "m", "--json"]).output().unwrap();
    assert_eq!(follow_up.status.code(), Some(4), "the follow-up failed: {}", String::from_utf8_lossy(&follow_up.stderr));
    let ws = lines(&follow_up).into_iter().find(|e| e["type"] == "task_workspace").unwrap()["worktree"].clone();
    let (folder, branch) = (PathBuf::from(ws["folder"].as_str().unwrap()), ws["branch"].as_str().unwrap().to_string());
    persons_commit_in(&folder);

    discard_cut_short_then_swept(&cli, dir.path(), &id);
    assert!(!folder.exists(), "the sweep removed the follow-up's worktree");
    assert_eq!(git(&r, &["show", &format!("{branch}:mine.txt")]), "the person's work", "and kept its branch with the person's commit");
    assert_eq!(std::fs::read_to_string(r.join("notes.md")).unwrap(), "the task's notes\n", "what landed before stays");
}

/// Landed, then a follow-up rejected, then another follow-up: its agent was told "your earlier
/// changes in this task were rejected and are gone", though the first round is on main and in
/// its new worktree. Only the last round was rejected, and the note says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_rejected_follow_up_the_agent_is_told_what_landed_before_is_still_there() {
    let (_s, dir, cli) = server(vec![writes("first.txt", "first\n", 0), writes("second.txt", "second\n", 0), writes("third.txt", "third\n", 0)]).await;
    let r = repo(dir.path());
    let id = session_of(&cli.run("write first.txt", &r, &["--review", "approve"]));
    let second = cli.cmd(&["sessions", "resume", &id, "now write second.txt", "--base-url", &cli.url, "--model", "m", "--json"]).output().unwrap();
    assert_eq!(second.status.code(), Some(6), "{}", String::from_utf8_lossy(&second.stderr));
    assert_eq!(cli.review(&id, &["--reject"]).status.code(), Some(3));
    let third = cli.cmd(&["sessions", "resume", &id, "then write third.txt", "--base-url", &cli.url, "--model", "m", "--json"]).output().unwrap();
    assert_eq!(third.status.code(), Some(6), "{}", String::from_utf8_lossy(&third.stderr));
    let note = lines(&third).into_iter().find(|e| e["type"] == "continuation" && e["source"] == "new_worktree").expect("the agent is told its folder changed");
    let text = note["text"].as_str().unwrap();
    assert!(!text.contains("Your earlier changes in this task were rejected"), "{text}");
    assert!(text.contains("Your last changes in this task were rejected and are gone"), "{text}");
    assert!(text.contains("what was approved before landed on `main` and is here"), "{text}");
}

/// A task that failed after writing part of its work is reviewed as it ended, with no model
/// asked (the model is what went away): its diff is shown, and approving lands what it did. It
/// could only be resumed (which runs the model again) or discarded whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_task_is_reviewed_as_it_ended_and_what_it_did_lands() {
    let (server, _dir, cli, r, task) = a_task_that_failed_after_writing(vec![]).await;
    let asked = server.requests().len();
    let shown = cli.review(&task.id, &[]);
    let said = format!("{}{}", String::from_utf8_lossy(&shown.stdout), String::from_utf8_lossy(&shown.stderr));
    assert_eq!(shown.status.code(), Some(6), "it waits for the person: {said}");
    assert!(said.contains("ended failed without a review") && said.contains("waits for your review"), "{said}");
    assert!(said.contains("broken.txt") && said.contains("+half"), "its diff: {said}");
    assert_eq!(server.requests().len(), asked, "no model was asked");
    let approved = cli.review(&task.id, &["--approve"]);
    assert_eq!(approved.status.code(), Some(0), "{}", String::from_utf8_lossy(&approved.stderr));
    assert_eq!(git(&r, &["show", "main:broken.txt"]), "half");
    assert_eq!(server.requests().len(), asked, "still none");
}

/// A task that failed before it changed anything has nothing to review: said, and it stays as it
/// ended, to resume.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_that_changed_nothing_has_no_review_to_open() {
    let rules = vec![
        json!({"when": {"kind": "agent", "last_message_contains": "fail at once"}, "reply": {"fault": {"type": "status", "status": 400, "body": "{\"error\": {\"message\": \"no\"}}"}}}),
    ];
    let (_s, dir, cli) = server(vec![rules]).await;
    let ws = dir.path().join("plain");
    std::fs::create_dir_all(&ws).unwrap();
    let failed = cli.run("fail at once", &ws, &[]);
    assert_eq!(failed.status.code(), Some(4));
    let id = session_of(&failed);
    let shown = cli.review(&id, &["--reject", "--revert"]);
    let said = String::from_utf8_lossy(&shown.stderr);
    assert_eq!(shown.status.code(), Some(2), "{said}");
    assert!(said.contains("changed no files: there is nothing to review"), "{said}");
    let list = lines(&cli.cmd(&["sessions", "list", "--json"]).output().unwrap());
    assert_eq!(list[0]["status"], "failed", "it stays as it ended: {list:?}");
}

/// A failed task whose worktree the person then worked in by hand: reviewed as it ended, their
/// file is shown with the task's work, and a reject keeps the branch that holds it (it deleted
/// the branch, and their file with it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_reviewed_as_it_ended_keeps_its_branch_on_reject_for_the_persons_edit_in_its_worktree() {
    let (_server, _dir, cli, r, task) = a_task_that_failed_after_writing(vec![]).await;
    std::fs::write(task.folder.join("mine.txt"), "the person's work\n").unwrap();
    let rejected = cli.review(&task.id, &["--reject"]);
    let said = String::from_utf8_lossy(&rejected.stderr).to_string();
    assert_eq!(rejected.status.code(), Some(3), "{said}");
    assert!(said.contains(&format!("kept the branch {}", task.branch)) && said.contains("someone changed") && said.contains("mine.txt"), "{said}");
    assert_eq!(git(&r, &["show", &format!("{}:mine.txt", task.branch)]), "the person's work");
}
