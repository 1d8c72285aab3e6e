//! Deleting a task from History: its worktree goes with it, but never while it runs, and never
//! a branch the person chose to keep.

use std::process::Command;

use finishline_engine::agent::decision::delete_task;
use finishline_engine::domain::{Isolation, SessionStatus};
use finishline_engine::error::ErrorCode;
use finishline_engine::event::EngineEvent;
use finishline_engine::store::{NewSession, Store};
use finishline_engine::workspace::worktree;

fn git(dir: &std::path::Path, args: &[&str]) -> String {
    let out = Command::new("git").arg("-C").arg(dir).args(args).output().unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A task recorded with its worktree (made, on its own branch) in a repository with one commit.
fn task_with_worktree(dir: &std::path::Path, store: &Store) -> (finishline_engine::domain::SessionId, worktree::TaskWorktree) {
    let repo = dir.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("a.txt"), "a\n").unwrap();
    git(&repo, &["add", "."]);
    git(&repo, &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one"]);
    let r = worktree::repo_of(&repo, &dir.join("worktrees")).unwrap();
    let (sid, _) = store
        .create_session(&NewSession {
            task: "t".into(),
            workspace: repo.to_string_lossy().into_owned(),
            provider: "openai".into(),
            model: "m".into(),
            base_url: None,
        })
        .unwrap();
    let wt = worktree::plan(&r, &dir.join("worktrees"), sid.as_str(), "t", None, 0).unwrap();
    worktree::add_empty(&wt, sid.as_str()).unwrap();
    store
        .append(
            &sid,
            None,
            EngineEvent::TaskWorkspace { isolation: Isolation::Worktree, folder: wt.work_dir().to_string_lossy().into_owned(), worktree: Some(wt.clone()) },
        )
        .unwrap();
    (sid, wt)
}

/// The person worked in the task's worktree and committed there: a commit Finishline did not make.
fn persons_commit_in(wt: &worktree::TaskWorktree) {
    let folder = std::path::Path::new(&wt.folder);
    std::fs::write(folder.join("mine.txt"), "my own work\n").unwrap();
    git(folder, &["add", "mine.txt"]);
    git(folder, &["-c", "user.name=p", "-c", "user.email=p@p", "commit", "-qm", "my own work"]);
}

fn status(store: &Store, sid: &finishline_engine::domain::SessionId, status: SessionStatus) {
    store.append(sid, None, EngineEvent::StatusChanged { status, attempt: None, max_retries: None, next_retry_at: None, message: None }).unwrap();
}

#[test]
fn deleting_a_running_task_is_refused_before_its_worktree_or_branch_is_touched() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("history.db"), std::sync::Arc::new(finishline_engine::clock::SystemClock)).unwrap();
    let (sid, wt) = task_with_worktree(dir.path(), &store);
    status(&store, &sid, SessionStatus::Busy);
    let err = delete_task(&store, &dir.path().join("data"), &sid).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidInput, "{err}");
    assert!(std::path::Path::new(&wt.folder).join(".git").exists(), "the running task's worktree is kept");
    assert_eq!(git(std::path::Path::new(&wt.repo), &["branch", "--list", &wt.branch]).trim_start_matches(['*', '+', ' ']), wt.branch, "and its branch");
    assert!(store.session(&sid).is_ok(), "and its history");

    status(&store, &sid, SessionStatus::Cancelled);
    delete_task(&store, &dir.path().join("data"), &sid).unwrap();
    assert!(!std::path::Path::new(&wt.folder).exists(), "once cancelled, its worktree goes with it");
    assert_eq!(git(std::path::Path::new(&wt.repo), &["branch", "--list", &wt.branch]), "", "and its branch");
    assert!(store.session(&sid).is_err(), "and its history");
}

#[test]
fn deleting_a_task_whose_branch_the_person_kept_keeps_the_branch() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("history.db"), std::sync::Arc::new(finishline_engine::clock::SystemClock)).unwrap();
    let (sid, wt) = task_with_worktree(dir.path(), &store);
    // Rejected keeping its branch, and the worktree's removal never happened (a crash).
    store
        .append(
            &sid,
            None,
            EngineEvent::BranchKept { branch: wt.branch.clone(), files: vec![], why: finishline_engine::domain::BranchKeptWhy::ChangedAfterReview },
        )
        .unwrap();
    status(&store, &sid, SessionStatus::Rejected);
    delete_task(&store, &dir.path().join("data"), &sid).unwrap();
    assert!(!std::path::Path::new(&wt.folder).exists(), "the worktree goes");
    assert_eq!(git(std::path::Path::new(&wt.repo), &["branch", "--list", &wt.branch]).trim_start_matches(['*', '+', ' ']), wt.branch, "the kept branch stays");
}

#[test]
fn deleting_a_task_a_decision_is_acting_on_is_refused_and_touches_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("history.db"), std::sync::Arc::new(finishline_engine::clock::SystemClock)).unwrap();
    let (sid, wt) = task_with_worktree(dir.path(), &store);
    status(&store, &sid, SessionStatus::AwaitingReview);
    // A decision (a landing verifying again) holds the session's lock, in another thread as a
    // process would.
    let lock = dir.path().join("data").join("locks").join(format!("{sid}.lock"));
    let (held, release) = (std::sync::mpsc::channel::<()>(), std::sync::mpsc::channel::<()>());
    let holder = std::thread::spawn(move || {
        let _l = finishline_engine::workspace::lock::FolderLock::acquire(&lock).unwrap();
        held.0.send(()).unwrap();
        let _ = release.1.recv();
    });
    held.1.recv().unwrap();
    let err = delete_task(&store, &dir.path().join("data"), &sid).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidInput, "{err}");
    assert!(std::path::Path::new(&wt.folder).join(".git").exists(), "the worktree is kept");
    assert!(store.session(&sid).is_ok(), "and its history");
    release.0.send(()).unwrap();
    holder.join().unwrap();
    delete_task(&store, &dir.path().join("data"), &sid).unwrap();
    assert!(!std::path::Path::new(&wt.folder).exists(), "once the decision is done, it can be deleted");
}

/// A process another thread was starting when a decision let go holds a copy of its lock until
/// it runs its program: on a loaded machine, long enough that a delete right after the decision
/// was refused (a CI run). Here a process that keeps the copy for 300 ms stands for it.
#[test]
fn deleting_a_task_just_after_its_decision_let_go_waits_out_a_process_still_holding_a_copy_of_the_lock() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("history.db"), std::sync::Arc::new(finishline_engine::clock::SystemClock)).unwrap();
    let (sid, wt) = task_with_worktree(dir.path(), &store);
    status(&store, &sid, SessionStatus::AwaitingReview);
    let lock = dir.path().join("data").join("locks").join(format!("{sid}.lock"));
    let held = finishline_engine::workspace::lock::FolderLock::acquire(&lock).unwrap();
    let mut starting = Command::new("sleep");
    starting.arg("0.3");
    finishline_engine::workspace::lock::inherit_held(&mut starting, &lock);
    let mut starting = starting.spawn().unwrap();
    drop(held);
    delete_task(&store, &dir.path().join("data"), &sid).unwrap();
    assert!(!std::path::Path::new(&wt.folder).exists(), "the worktree goes");
    assert!(store.session(&sid).is_err(), "and its history");
    starting.wait().unwrap();
}

#[test]
fn deleting_a_task_whose_branch_holds_a_commit_of_the_persons_keeps_the_branch() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("history.db"), std::sync::Arc::new(finishline_engine::clock::SystemClock)).unwrap();
    let (sid, wt) = task_with_worktree(dir.path(), &store);
    persons_commit_in(&wt);
    status(&store, &sid, SessionStatus::Cancelled);
    delete_task(&store, &dir.path().join("data"), &sid).unwrap();
    assert!(!std::path::Path::new(&wt.folder).exists(), "the worktree goes");
    let repo = std::path::Path::new(&wt.repo);
    assert_eq!(git(repo, &["branch", "--list", &wt.branch]).trim_start_matches(['*', '+', ' ']), wt.branch, "the branch with their commit stays");
    assert_eq!(git(repo, &["show", &format!("{}:mine.txt", wt.branch)]), "my own work");
}

/// A decision that lets go of the task having started it running again (Request changes): a
/// delete that waited for it reads the task afresh and is refused, touching nothing.
#[test]
fn a_delete_that_waited_for_a_decision_which_started_the_task_again_is_refused_and_touches_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = std::sync::Arc::new(Store::open(&dir.path().join("history.db"), std::sync::Arc::new(finishline_engine::clock::SystemClock)).unwrap());
    let (sid, wt) = task_with_worktree(dir.path(), &store);
    status(&store, &sid, SessionStatus::AwaitingReview);
    let lock = dir.path().join("data").join("locks").join(format!("{sid}.lock"));
    let (held, go) = (std::sync::mpsc::channel::<()>(), std::sync::mpsc::channel::<()>());
    let (deciding, session) = (store.clone(), sid.clone());
    let decision = std::thread::spawn(move || {
        let _l = finishline_engine::workspace::lock::FolderLock::acquire(&lock).unwrap();
        held.0.send(()).unwrap();
        go.1.recv().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(200));
        status(&deciding, &session, SessionStatus::Busy);
    });
    held.1.recv().unwrap();
    go.0.send(()).unwrap();
    let err = delete_task(&store, &dir.path().join("data"), &sid).unwrap_err();
    decision.join().unwrap();
    assert_eq!(err.code(), ErrorCode::InvalidInput, "{err}");
    assert!(std::path::Path::new(&wt.folder).join(".git").exists(), "the running task's worktree is kept");
    assert_eq!(git(std::path::Path::new(&wt.repo), &["branch", "--list", &wt.branch]).trim_start_matches(['*', '+', ' ']), wt.branch, "and its branch");
    assert!(store.session(&sid).is_ok(), "and its history");
}

/// The person moved the repository away, then deleted the task: its history and worktree folder
/// go, and what git keeps for it in the moved repository (the worktree's entry, its branch) is
/// said with the commands that remove it there, which do.
#[test]
fn deleting_a_task_whose_repository_moved_says_what_stays_there_and_how_to_remove_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("history.db"), std::sync::Arc::new(finishline_engine::clock::SystemClock)).unwrap();
    let (sid, wt) = task_with_worktree(dir.path(), &store);
    status(&store, &sid, SessionStatus::Cancelled);
    let moved = dir.path().join("repo-moved");
    std::fs::rename(&wt.repo, &moved).unwrap();
    let deleted = delete_task(&store, &dir.path().join("data"), &sid).unwrap();
    assert!(store.session(&sid).is_err(), "its history goes");
    let left = deleted.left_in_moved_repository.expect("what stays in the moved repository is said");
    assert!(left.contains(&format!("no longer at {}", wt.repo)) && left.contains(&wt.branch), "{left}");
    let commands: Vec<&str> = left.split('`').skip(1).step_by(2).collect();
    assert_eq!(commands.len(), 2, "{left}");
    for c in commands {
        let ran = Command::new("sh").arg("-c").arg(c).current_dir(&moved).output().unwrap();
        assert!(ran.status.success(), "{c}: {}", String::from_utf8_lossy(&ran.stderr));
    }
    assert_eq!(git(&moved, &["branch", "--list", &wt.branch]), "", "the commands remove its branch");
    assert!(!git(&moved, &["worktree", "list"]).contains(&wt.folder), "and git's entry for its worktree");
}

#[test]
fn deleting_a_task_whose_repository_moved_and_whose_branch_was_kept_leaves_the_branch_unmentioned_for_removal() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("history.db"), std::sync::Arc::new(finishline_engine::clock::SystemClock)).unwrap();
    let (sid, wt) = task_with_worktree(dir.path(), &store);
    store
        .append(&sid, None, EngineEvent::BranchKept { branch: wt.branch.clone(), files: vec![], why: finishline_engine::domain::BranchKeptWhy::Asked })
        .unwrap();
    status(&store, &sid, SessionStatus::Rejected);
    std::fs::rename(&wt.repo, dir.path().join("repo-moved")).unwrap();
    let left = delete_task(&store, &dir.path().join("data"), &sid).unwrap().left_in_moved_repository.expect("said");
    assert!(!left.contains("branch -D"), "the branch the person kept is not theirs to be told to delete: {left}");
    assert!(left.contains("git worktree remove -f -f"), "{left}");
}

/// The person committed in the task's worktree, then moved the repository away and deleted the
/// task: Finishline cannot look at the branch there, so the command it gives for the branch
/// removes it only while it is where the task left it. Run where the repository is now, it
/// leaves the person's commit on its branch (and says why), and still forgets the worktree.
#[test]
fn deleting_a_task_whose_repository_moved_never_gives_a_command_that_deletes_a_commit_of_the_persons() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("history.db"), std::sync::Arc::new(finishline_engine::clock::SystemClock)).unwrap();
    let (sid, wt) = task_with_worktree(dir.path(), &store);
    persons_commit_in(&wt);
    status(&store, &sid, SessionStatus::Cancelled);
    let moved = dir.path().join("repo-moved");
    std::fs::rename(&wt.repo, &moved).unwrap();
    let left = delete_task(&store, &dir.path().join("data"), &sid).unwrap().left_in_moved_repository.expect("said");
    assert!(!left.contains("branch -D"), "an unconditional delete of a branch Finishline cannot see: {left}");
    for c in left.split('`').skip(1).step_by(2) {
        let _ = Command::new("sh").arg("-c").arg(c).current_dir(&moved).output().unwrap();
    }
    assert_eq!(git(&moved, &["show", &format!("{}:mine.txt", wt.branch)]), "my own work", "the person's commit stays on its branch: {left}");
    assert!(!git(&moved, &["worktree", "list"]).contains(&wt.folder), "git's entry for the worktree goes");
}
