//! Approve lands a task on the branch it started from, in three moves the engine records
//! between: [`catch_up`] rebases the task's branch when the person's branch moved on (the engine
//! then verifies again), [`compose`] makes the commit without touching the person's repository,
//! and [`apply`] moves their branch and updates their checkout. Their uncommitted edits are
//! kept: a landing that would touch a file they are editing stops before anything moves, and
//! git's own checks stand behind ours.

use std::path::Path;

use super::worktree::{git, git_in, git_ok, git_with_input, identity_args, TaskWorktree};
use crate::domain::{LandingBlock, LandingMode};
use crate::error::{Error, Result};

/// Why landing stopped, with the files concerned; nothing was overwritten.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blocked {
    pub reason: LandingBlock,
    pub files: Vec<String>,
    pub detail: String,
}

impl Blocked {
    fn new(reason: LandingBlock, files: Vec<String>, detail: impl Into<String>) -> Blocked {
        Blocked { reason, files, detail: detail.into() }
    }
}

/// The branch the task lands on, and where it is now.
fn target(wt: &TaskWorktree) -> std::result::Result<(String, String), Blocked> {
    let Some(branch) = wt.base_branch.clone() else {
        return Err(no_base_branch());
    };
    match git(Path::new(&wt.repo), &["rev-parse", "-q", "--verify", &format!("refs/heads/{branch}^{{commit}}")]) {
        Ok(tip) => Ok((branch, tip.trim().to_string())),
        Err(_) => {
            Err(Blocked::new(LandingBlock::NoBranch, vec![], format!("the branch “{branch}” the task started from is gone: keep the task's branch instead")))
        }
    }
}

fn no_base_branch() -> Blocked {
    Blocked::new(LandingBlock::NoBranch, vec![], "the task started on a detached HEAD, so there is no branch to land on: keep its branch instead")
}

fn tip(wt: &TaskWorktree) -> Result<String> {
    Ok(git(Path::new(&wt.repo), &["rev-parse", &format!("refs/heads/{}", wt.branch)])?.trim().to_string())
}

/// Where things stand before landing: the branch the task lands on, its tip, and the task's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tips {
    pub branch: String,
    pub target: String,
    pub task: String,
    /// The person's checkout is on that branch, so landing brings it along.
    pub on_target: bool,
}

/// Reads both tips and the branch the person's checkout is on with one git (a landing is a
/// handful of short git processes, and starting each costs more than its work in a small
/// repository). When a branch is gone, says which.
fn read_tips(wt: &TaskWorktree) -> Result<std::result::Result<Tips, Blocked>> {
    let Some(branch) = wt.base_branch.clone() else {
        return Ok(Err(no_base_branch()));
    };
    let (landing_ref, task_ref) = (format!("refs/heads/{branch}^{{commit}}"), format!("refs/heads/{}^{{commit}}", wt.branch));
    let read = git(Path::new(&wt.repo), &["rev-parse", &landing_ref, &task_ref, "--symbolic-full-name", "HEAD"]);
    let read = read.ok().and_then(|out| {
        let mut lines = out.lines().map(str::trim);
        Some((lines.next()?.to_string(), lines.next()?.to_string(), lines.next()?.to_string()))
    });
    let Some((target_tip, task, head)) = read else {
        // One of the branches is gone: the slower reads say which.
        if let Err(b) = target(wt) {
            return Ok(Err(b));
        }
        tip(wt)?;
        return Err(Error::Worktree("git could not read the branches the task lands between".into()));
    };
    let on_target = head == format!("refs/heads/{branch}");
    Ok(Ok(Tips { branch, target: target_tip, task, on_target }))
}

/// What [`catch_up`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CatchUp {
    /// The person's branch is where the task started (or already below the task's commits).
    UpToDate(Tips),
    /// It moved on; the task's commits now sit on top of it (verify again before landing).
    Rebased { onto: String },
}

/// The person's branch is where the task started, or below the task's commits.
fn up_to_date(wt: &TaskWorktree, tips: &Tips) -> bool {
    tips.target == wt.base_commit || git_ok(Path::new(&wt.repo), &["merge-base", "--is-ancestor", &tips.target, &tips.task])
}

/// The landing composed straight from the branches as they are, when the person's branch did
/// not move (`None` when it did: [`catch_up`] first). Reads and makes a commit object only, so
/// it can run beside the look for changes left in the worktree.
pub fn prepare(wt: &TaskWorktree, mode: LandingMode, message: &str) -> Result<Option<std::result::Result<Composed, Blocked>>> {
    let tips = match read_tips(wt)? {
        Ok(t) => t,
        Err(b) => return Ok(Some(Err(b))),
    };
    if !up_to_date(wt, &tips) {
        return Ok(None);
    }
    compose(wt, &tips, mode, message).map(Some)
}

/// Rebases the task's branch, in its worktree, onto the person's branch when that moved on
/// since the task started. A conflict leaves the task's branch as it was.
pub fn catch_up(wt: &TaskWorktree) -> Result<std::result::Result<CatchUp, Blocked>> {
    let tips = match read_tips(wt)? {
        Ok(t) => t,
        Err(b) => return Ok(Err(b)),
    };
    if up_to_date(wt, &tips) {
        return Ok(Ok(CatchUp::UpToDate(tips)));
    }
    let (branch, target_tip) = (tips.branch.clone(), tips.target.clone());
    let folder = Path::new(&wt.folder);
    let out = git_in(folder)
        .args(identity_args(folder))
        .args(["rebase", "--no-autostash", "--onto", &target_tip, &wt.base_commit])
        .output()
        .map_err(|e| Error::Worktree(format!("git could not run: {e}")))?;
    if out.status.success() {
        return Ok(Ok(CatchUp::Rebased { onto: target_tip }));
    }
    let files: Vec<String> = git(folder, &["diff", "--name-only", "--diff-filter=U"]).unwrap_or_default().lines().map(str::to_string).collect();
    let _ = git_ok(folder, &["rebase", "--abort"]);
    Ok(Err(Blocked::new(
        LandingBlock::Conflict,
        files,
        format!("“{branch}” moved on since the task started, and the task's changes conflict with what landed there"),
    )))
}

/// The tips after a rebase (the branch may have moved again meanwhile: then landing stops).
pub fn tips(wt: &TaskWorktree) -> Result<std::result::Result<Tips, Blocked>> {
    let tips = match read_tips(wt)? {
        Ok(t) => t,
        Err(b) => return Ok(Err(b)),
    };
    if !git_ok(Path::new(&wt.repo), &["merge-base", "--is-ancestor", &tips.target, &tips.task]) {
        let branch = &tips.branch;
        return Ok(Err(Blocked::new(LandingBlock::Conflict, vec![], format!("“{branch}” moved on again while the task was being landed: approve again"))));
    }
    Ok(Ok(tips))
}

/// A landing ready to apply: recorded before anything moves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Composed {
    pub mode: LandingMode,
    pub target_branch: String,
    pub old_tip: String,
    /// The commit the branch moves to (squash and merge).
    pub new_commit: Option<String>,
    /// The files the landing changes on the person's side.
    pub files: Vec<String>,
    /// The person's checkout is on the target branch: it moves along.
    pub on_target: bool,
}

/// Past this many files, the person's checkout is checked whole rather than file by file.
const PATHSPEC_LIMIT: usize = 2000;

/// The commit message: the task's title, the evaluator's summary, and who did it.
pub fn message(title: &str, summary: Option<&str>, agent: &str, session: &str) -> String {
    let mut m = title.trim().to_string();
    if let Some(s) = summary.map(str::trim).filter(|s| !s.is_empty()) {
        m.push_str("\n\n");
        m.push_str(s);
    }
    m.push_str(&format!("\n\nLanded-by: Finishline ({agent})\nFinishline-Session: {session}\n"));
    m
}

/// Makes the landing's commit (squash or merge) and checks the person's checkout, touching
/// neither their branch nor their files.
pub fn compose(wt: &TaskWorktree, tips: &Tips, mode: LandingMode, message: &str) -> Result<std::result::Result<Composed, Blocked>> {
    let repo = Path::new(&wt.repo);
    let Tips { branch, target: old_tip, task: task_tip, on_target } = tips.clone();
    let files: Vec<String> =
        git(repo, &["diff", "--name-only", "--no-renames", "-z", &old_tip, &task_tip])?.split('\0').filter(|f| !f.is_empty()).map(str::to_string).collect();
    let check_edits = (on_target || mode == LandingMode::Uncommitted) && !files.is_empty();
    let commit_args: Option<Vec<String>> = match mode {
        // A task that changed nothing lands nothing: no empty commit on the person's branch.
        _ if files.is_empty() => None,
        LandingMode::Squash | LandingMode::Merge => {
            let mut args: Vec<String> = vec!["commit-tree".into(), format!("{task_tip}^{{tree}}"), "-p".into(), old_tip.clone()];
            if mode == LandingMode::Merge {
                args.extend(["-p".into(), task_tip.clone()]);
            }
            args.extend(["-F".into(), "-".into()]);
            Some(args)
        }
        LandingMode::Uncommitted | LandingMode::Branch => None,
    };
    if check_edits {
        let clash = your_edits(repo, &files)?;
        if !clash.is_empty() {
            return Ok(Err(Blocked::new(
                LandingBlock::YourEdits,
                clash,
                "you have uncommitted edits in files the task changed: commit or stash them, then approve again, or keep the task's branch",
            )));
        }
    }
    let new_commit = match commit_args {
        None => None,
        Some(args) => match commit_tree(repo, &args, message)? {
            Ok(commit) => Some(commit),
            Err(why) => return Ok(Err(Blocked::new(LandingBlock::Git, vec![], format!("git could not make the commit: {why}")))),
        },
    };
    Ok(Ok(Composed { mode, target_branch: branch, old_tip, new_commit, files, on_target }))
}

/// Among `files`, those the person has uncommitted edits in (staged or not) or that are
/// untracked in their checkout: only those files are looked at, however large the checkout.
fn your_edits(repo: &Path, files: &[String]) -> Result<Vec<String>> {
    let mut args = vec!["status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames"];
    if files.len() <= PATHSPEC_LIMIT {
        args.push("--");
        args.extend(files.iter().map(|f| f.as_str()));
    }
    let out = git_in(repo).env("GIT_LITERAL_PATHSPECS", "1").args(&args).output()?;
    let status = String::from_utf8_lossy(&out.stdout).into_owned();
    let dirty: Vec<&str> = status.split('\0').filter(|e| e.len() > 3).map(|e| &e[3..]).collect();
    Ok(files.iter().filter(|f| dirty.contains(&f.as_str())).cloned().collect())
}

/// Runs `git commit-tree` with the message on stdin: as the person when their configuration
/// names them (only it, git guessing no name), else as Finishline. The fallback is looked up
/// only when needed, which saves a git process on every landing.
fn commit_tree(repo: &Path, args: &[String], message: &str) -> Result<std::result::Result<String, String>> {
    let run = |identity: &[String]| -> Result<std::process::Output> {
        let mut cmd = git_in(repo);
        cmd.args(identity).args(args);
        Ok(git_with_input(cmd, message.as_bytes())?)
    };
    let mut out = run(&["-c".into(), "user.useConfigOnly=true".into()])?;
    if !out.status.success() {
        let fallback = identity_args(repo);
        if !fallback.is_empty() {
            out = run(&fallback)?;
        }
    }
    Ok(if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
    })
}

/// Moves the person's branch to the landing's commit (only if it is still where it was) and
/// updates their checkout when it is on that branch; or writes the changes into their working
/// tree for `uncommitted`. On a refusal nothing is left half done.
pub fn apply(wt: &TaskWorktree, c: &Composed) -> Result<std::result::Result<(), Blocked>> {
    let repo = Path::new(&wt.repo);
    let target_ref = format!("refs/heads/{}", c.target_branch);
    match (c.mode, &c.new_commit) {
        (LandingMode::Squash | LandingMode::Merge, Some(new)) => {
            if !git_ok(repo, &["update-ref", "-m", "finishline: land task", &target_ref, new, &c.old_tip]) {
                return Ok(Err(Blocked::new(
                    LandingBlock::Conflict,
                    vec![],
                    format!("“{}” moved while the task was being landed: approve again", c.target_branch),
                )));
            }
            crate::fault::pause_at("landing-after-ref");
            if let Err(why) = update_checkout(repo, c.on_target, &c.old_tip, new) {
                // Back to where it was, so the branch and the checkout agree.
                let _ = git_ok(repo, &["update-ref", &target_ref, &c.old_tip, new]);
                return Ok(Err(Blocked::new(LandingBlock::Git, c.files.clone(), why)));
            }
            Ok(Ok(()))
        }
        (LandingMode::Uncommitted, _) => {
            let task_tip = tip(wt)?;
            let patch = git_in(repo).args(["diff", "--binary", "--no-renames", &c.old_tip, &task_tip]).output()?;
            let check = pipe(repo, &["apply", "--check"], &patch.stdout)?;
            if let Err(why) = check {
                return Ok(Err(Blocked::new(LandingBlock::Conflict, c.files.clone(), format!("the task's changes do not apply to your working tree: {why}"))));
            }
            if let Err(why) = pipe(repo, &["apply"], &patch.stdout)? {
                return Ok(Err(Blocked::new(LandingBlock::Git, c.files.clone(), why)));
            }
            Ok(Ok(()))
        }
        _ => Ok(Ok(())),
    }
}

/// When the person's checkout is on the branch that moved from `old` to `new`: brings its index
/// and files along, keeping their other edits (git refuses to overwrite any).
fn update_checkout(repo: &Path, on_target: bool, old: &str, new: &str) -> std::result::Result<(), String> {
    if !on_target {
        return Ok(());
    }
    let out = git_in(repo).args(["read-tree", "-m", "-u", old, new]).output().map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("git would not update your checkout: {}", String::from_utf8_lossy(&out.stderr).trim()))
    }
}

/// Finishes a landing that a crash cut short, from what was recorded before it began: the
/// branch moved, so the checkout catches up; or it did not, and nothing landed.
pub fn finish_interrupted(wt: &TaskWorktree, c: &Composed) -> Result<std::result::Result<(), Blocked>> {
    let repo = Path::new(&wt.repo);
    let now = git(repo, &["rev-parse", "-q", "--verify", &format!("refs/heads/{}^{{commit}}", c.target_branch)]).unwrap_or_default().trim().to_string();
    match &c.new_commit {
        Some(new) if &now == new => {
            let mut check: Vec<&str> = vec!["diff-index", "--cached", "--quiet", new, "--"];
            check.extend(c.files.iter().map(String::as_str));
            let on_target = git(repo, &["symbolic-ref", "-q", "--short", "HEAD"]).map(|b| b.trim() == c.target_branch).unwrap_or(false);
            if on_target && !git_ok(repo, &check) {
                if let Err(why) = update_checkout(repo, true, &c.old_tip, new) {
                    return Ok(Err(Blocked::new(LandingBlock::Git, c.files.clone(), why)));
                }
            }
            Ok(Ok(()))
        }
        _ => Ok(Err(Blocked::new(LandingBlock::Interrupted, vec![], "Finishline stopped while landing this task; nothing landed: approve again"))),
    }
}

/// Runs git with `input` on stdin; `Err(stderr)` when it refuses.
fn pipe(repo: &Path, args: &[&str], input: &[u8]) -> Result<std::result::Result<(), String>> {
    let mut cmd = git_in(repo);
    cmd.args(args);
    let out = git_with_input(cmd, input)?;
    Ok(if out.status.success() { Ok(()) } else { Err(String::from_utf8_lossy(&out.stderr).trim().to_string()) })
}
