//! Worktrees added while others are removed, in one repository, as when one task is decided
//! while the next starts.

use finishline_engine::workspace::worktree;
use std::process::Command;

fn git(dir: &std::path::Path, args: &[&str]) {
    let out = Command::new("git").arg("-C").arg(dir).args(args).output().unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// A repository with one commit, and the folder it is in (worktrees go beside it).
fn repository() -> (tempfile::TempDir, std::path::PathBuf, worktree::Repo) {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("a.txt"), "a\n").unwrap();
    git(&repo, &["add", "."]);
    git(&repo, &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one"]);
    let r = worktree::repo_of(&repo, &dir.path().join("worktrees")).unwrap();
    (dir, repo, r)
}

#[test]
fn a_worktree_removed_while_another_is_added_fails_neither() {
    // Three times over: once, the race was lost in about three runs of four without the lock.
    for _ in 0..3 {
        add_while_removing();
    }
}

fn add_while_removing() {
    let (dir, repo, r) = repository();
    let worktrees = dir.path().join("worktrees");
    let rounds = 100;
    let made: Vec<worktree::TaskWorktree> =
        (0..rounds).map(|i| worktree::plan(&r, &worktrees, &format!("ses_{i:06}"), &format!("task {i}"), None, 0).unwrap()).collect();
    // Half exist first; then the other half is added while the first half goes.
    for wt in &made[..rounds / 2] {
        worktree::add_empty(wt, "s").unwrap();
    }
    std::thread::scope(|s| {
        let adds = s.spawn(|| made[rounds / 2..].iter().map(|wt| worktree::add_empty(wt, "s").map_err(|e| e.to_string())).collect::<Vec<_>>());
        let removes = s.spawn(|| made[..rounds / 2].iter().map(|wt| worktree::remove(wt, true).map(|_| ()).map_err(|e| e.to_string())).collect::<Vec<_>>());
        let (adds, removes) = (adds.join().unwrap(), removes.join().unwrap());
        let failed: Vec<&String> = adds.iter().chain(removes.iter()).filter_map(|r| r.as_ref().err()).collect();
        assert!(failed.is_empty(), "every add and removal went through: {failed:?}");
    });
    let out = Command::new("git").arg("-C").arg(&repo).args(["worktree", "list", "--porcelain"]).output().unwrap();
    let listed = String::from_utf8_lossy(&out.stdout).into_owned();
    let out = Command::new("git").arg("-C").arg(&repo).args(["branch", "--format=%(refname:short)"]).output().unwrap();
    let branches = String::from_utf8_lossy(&out.stdout).into_owned();
    for wt in &made[..rounds / 2] {
        assert!(!listed.contains(&wt.folder) && !std::path::Path::new(&wt.folder).exists(), "{} is gone: {listed}", wt.folder);
        assert!(!branches.lines().any(|b| b == wt.branch), "and its branch {}: {branches}", wt.branch);
    }
    for wt in &made[rounds / 2..] {
        assert!(listed.contains(&wt.folder), "{} is a worktree of the repository: {listed}", wt.folder);
        assert!(branches.lines().any(|b| b == wt.branch), "on its branch {}: {branches}", wt.branch);
    }
}

/// Takes the immutable flag off again however the test ends, so its folder can go.
struct Immutable(std::path::PathBuf);

impl Drop for Immutable {
    fn drop(&mut self) {
        let _ = Command::new("chattr").arg("-i").arg(&self.0).status();
    }
}

#[test]
fn a_worktree_whose_files_cannot_all_be_deleted_is_unlocked_so_git_can_forget_it() {
    let (dir, repo, r) = repository();
    let worktrees = dir.path().join("worktrees");
    let wt = worktree::plan(&r, &worktrees, "ses_000001", "task", None, 0).unwrap();
    worktree::add_empty(&wt, "s").unwrap();
    // A file nothing may delete (what a file held open elsewhere, or a folder a tool locked, is).
    let stuck = std::path::Path::new(&wt.folder).join("sub").join("held");
    std::fs::create_dir_all(stuck.parent().unwrap()).unwrap();
    std::fs::write(&stuck, "x").unwrap();
    let flagged = Command::new("chattr").arg("+i").arg(&stuck).output().unwrap();
    assert!(flagged.status.success(), "this test needs chattr +i (root, ext4): {}", String::from_utf8_lossy(&flagged.stderr));
    let _unflag = Immutable(stuck.clone());
    assert!(worktree::remove(&wt, true).is_err(), "the failure is told");
    let out = Command::new("git").arg("-C").arg(&repo).args(["worktree", "list", "--porcelain"]).output().unwrap();
    let listed = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(!listed.contains("locked"), "what is left is no longer a locked worktree of the person's repository: {listed}");
    drop(_unflag);
    // Once it can go, a prune forgets it (as the next start's sweep, or the person's own, does).
    std::fs::remove_dir_all(&wt.folder).unwrap();
    git(&repo, &["worktree", "prune"]);
    let out = Command::new("git").arg("-C").arg(&repo).args(["worktree", "list", "--porcelain"]).output().unwrap();
    assert!(!String::from_utf8_lossy(&out.stdout).contains(&wt.folder), "then it is gone from the list");
}

#[test]
fn a_branch_the_person_already_deleted_counts_as_gone_when_its_task_is_removed() {
    let (dir, repo, r) = repository();
    let wt = worktree::plan(&r, &dir.path().join("worktrees"), "ses_000001", "task", None, 0).unwrap();
    worktree::add_empty(&wt, "s").unwrap();
    // The person cleaned up by hand: the worktree forgotten, its branch deleted.
    git(&repo, &["worktree", "remove", "--force", "--force", &wt.folder]);
    git(&repo, &["branch", "-D", &wt.branch]);
    assert!(worktree::remove(&wt, true).unwrap(), "the branch is gone, so History must not name it as kept");
    // Kept on purpose, it is not gone.
    let kept = worktree::plan(&r, &dir.path().join("worktrees"), "ses_000002", "task", None, 0).unwrap();
    worktree::add_empty(&kept, "s").unwrap();
    assert!(!worktree::remove(&kept, false).unwrap());
}

#[test]
fn removing_a_tasks_worktree_never_makes_git_forget_one_of_the_persons_own() {
    let (dir, repo, r) = repository();
    // The person's own worktree, with a staged file, on a drive that is not mounted now (moved
    // without `git worktree move`, or on a removable disk): its folder is not where git expects.
    let theirs = dir.path().join("mine");
    git(&repo, &["worktree", "add", "-q", "-b", "mine", theirs.to_str().unwrap()]);
    std::fs::write(theirs.join("staged.txt"), "staged\n").unwrap();
    git(&theirs, &["add", "staged.txt"]);
    let away = dir.path().join("unmounted");
    std::fs::rename(&theirs, &away).unwrap();
    let wt = worktree::plan(&r, &dir.path().join("worktrees"), "ses_000001", "task", None, 0).unwrap();
    worktree::add_empty(&wt, "s").unwrap();
    worktree::remove(&wt, true).unwrap();
    std::fs::rename(&away, &theirs).unwrap();
    let out = Command::new("git").arg("-C").arg(&theirs).args(["diff", "--cached", "--name-only"]).output().unwrap();
    assert!(out.status.success(), "the person's worktree is still one: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "staged.txt", "with what they staged");
}
