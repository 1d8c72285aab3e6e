//! A task's branch leaves the repository's submodules as its base has them, whatever the agent
//! did in its worktree: driven through `commit_all`, the commit every run of a task makes, in
//! real repositories.

use std::path::{Path, PathBuf};
use std::process::Command;

use finishline_engine::workspace::worktree::{commit_all, TaskWorktree};

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=P", "-c", "user.email=p@example.com", "-c", "protocol.file.allow=always"])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The person's repository on `main` with a submodule at `at` (two commits in it, the first
/// linked) and `files` beside it; and a task's worktree of it.
fn repo(dir: &Path, at: &str, files: &[(&str, &str)], gitmodules_extra: &str) -> (PathBuf, TaskWorktree) {
    let lib = dir.join("lib-origin");
    std::fs::create_dir_all(&lib).unwrap();
    git(&lib, &["init", "-q", "-b", "main"]);
    std::fs::write(lib.join("api.txt"), "v1\n").unwrap();
    git(&lib, &["add", "."]);
    git(&lib, &["commit", "-q", "-m", "v1"]);
    std::fs::write(lib.join("api.txt"), "v2\n").unwrap();
    git(&lib, &["commit", "-q", "-am", "v2"]);
    let r = dir.join("repo");
    std::fs::create_dir_all(&r).unwrap();
    git(&r, &["init", "-q", "-b", "main"]);
    git(&r, &["submodule", "add", "-q", lib.to_str().unwrap(), at]);
    git(&r.join(at), &["checkout", "-q", "HEAD~1"]);
    for (path, content) in files {
        std::fs::write(r.join(path), content).unwrap();
    }
    std::fs::write(r.join("README.md"), "hello\n").unwrap();
    if !gitmodules_extra.is_empty() {
        let text = std::fs::read_to_string(r.join(".gitmodules")).unwrap() + gitmodules_extra;
        std::fs::write(r.join(".gitmodules"), text).unwrap();
    }
    git(&r, &["add", "-A"]);
    git(&r, &["commit", "-q", "-m", "init"]);
    let base = git(&r, &["rev-parse", "HEAD"]);
    let folder = dir.join("wt");
    git(&r, &["worktree", "add", "-q", "-b", "task", folder.to_str().unwrap(), &base]);
    git(&folder, &["submodule", "update", "-q", "--init"]);
    let wt = TaskWorktree {
        repo: r.to_string_lossy().into(),
        folder: folder.to_string_lossy().into(),
        subdir: String::new(),
        branch: "task".into(),
        base_branch: Some("main".into()),
        base_commit: base,
    };
    (r, wt)
}

fn sh(dir: &str, script: &str) {
    let out = Command::new("sh")
        .arg("-c")
        .arg(script)
        .current_dir(dir)
        .env("GIT_CONFIG_COUNT", "1")
        .env("GIT_CONFIG_KEY_0", "protocol.file.allow")
        .env("GIT_CONFIG_VALUE_0", "always")
        .output()
        .unwrap();
    assert!(out.status.success(), "{script}: {}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn a_submodule_whose_path_looks_like_a_pattern_is_put_back_without_taking_the_files_it_matches() {
    let dir = tempfile::tempdir().unwrap();
    let (r, wt) = repo(dir.path(), "v[12]", &[("v1", "one\n"), ("v2", "two\n")], "");
    let linked = git(&r, &["rev-parse", "HEAD:v[12]"]);
    sh(&wt.folder, "git rm -q --cached 'v[12]' && rm -rf 'v[12]' && echo x > 'v[12]' && git add -- 'v[12]' && echo n > notes.txt");
    let commit = commit_all(&wt, "task", &[]).unwrap().expect("a commit");
    let tree = git(&r, &["ls-tree", "-r", "--name-only", &commit]);
    assert!(tree.lines().any(|l| l == "v1") && tree.lines().any(|l| l == "v2"), "the files beside it stay: {tree}");
    assert_eq!(git(&r, &["rev-parse", &format!("{commit}:v[12]")]), linked, "the link is as the base had it");
    assert_eq!(git(&r, &["show", &format!("{commit}:notes.txt")]), "n");
}

#[test]
fn a_moved_link_is_put_back_even_when_gitmodules_says_to_ignore_the_submodule() {
    let dir = tempfile::tempdir().unwrap();
    let (r, wt) = repo(dir.path(), "lib", &[], "\tignore = all\n");
    let linked = git(&r, &["rev-parse", "HEAD:lib"]);
    sh(&wt.folder, "git -C lib checkout -q origin/main && git add lib && git -c user.name=A -c user.email=a@example.com commit -qm bump && echo n > notes.txt");
    let commit = commit_all(&wt, "task", &[]).unwrap().expect("a commit");
    assert_eq!(git(&r, &["rev-parse", &format!("{commit}:lib")]), linked);
}

#[test]
fn after_a_rebase_onto_the_persons_moved_branch_their_own_move_of_a_submodule_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let (r, wt) = repo(dir.path(), "lib", &[], "");
    sh(&wt.folder, "echo first > first.txt");
    commit_all(&wt, "task", &[]).unwrap().expect("a commit");
    // The person moves the submodule on main meanwhile; the task is rebased onto it.
    git(&r.join("lib"), &["checkout", "-q", "main"]);
    git(&r, &["commit", "-q", "-am", "the person's bump"]);
    let bumped = git(&r, &["rev-parse", "main:lib"]);
    let main = git(&r, &["rev-parse", "main"]);
    git(Path::new(&wt.folder), &["rebase", "-q", "--onto", &main, &wt.base_commit]);
    sh(&wt.folder, "echo second > second.txt");
    let commit = commit_all(&wt, "task, round 2", &[]).unwrap().expect("a commit");
    assert_eq!(git(&r, &["rev-parse", &format!("{commit}:lib")]), bumped, "the person's bump stays on the task's branch");
    assert_eq!(git(&r, &["diff", "--name-only", &main, &commit]), "first.txt\nsecond.txt", "which changes only the task's files");
}
