//! Approve lands a task on the branch it started from, in three moves the engine records
//! between: [`catch_up`] rebases the task's branch when the person's branch moved on (the engine
//! then verifies again), [`compose`] makes the commit without touching the person's repository,
//! and [`apply`] updates their checkout and moves their branch. Their uncommitted edits are
//! kept: git refuses to bring their checkout along over an edit of theirs, and that refusal
//! comes before anything moves.

use std::path::{Path, PathBuf};

use super::worktree::{git, git_in, git_ok, git_with_input, identity_args, TaskWorktree};
use crate::beside::beside;
use crate::domain::{CheckoutElsewhere, LandingBlock, LandingMode};
use crate::error::{Error, Result};
use crate::store::sessions::title_of;

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

    /// The person stopped the landing (its checks on the moved branch) before anything moved.
    pub fn stopped() -> Blocked {
        Blocked::new(
            LandingBlock::Stopped,
            vec![],
            "you stopped the landing before anything moved; nothing landed: approve again to land it (the checks run again), or keep the task's branch",
        )
    }

    /// The person stopped an approve that waited behind another decision on the task (a
    /// terminal's approve, another window's): only this one stopped; the other goes on, and its
    /// outcome is the task's.
    pub fn stopped_behind_another() -> Blocked {
        Blocked::new(
            LandingBlock::StoppedBehindAnother,
            vec![],
            "you stopped this approve while another decision on this task (from a terminal or another window) was under way; that decision goes on, and the task shows its outcome when it ends",
        )
    }

    /// [`conflict_markers_in`] found these files.
    pub fn conflict_markers(files: Vec<String>) -> Blocked {
        Blocked::new(
            LandingBlock::ConflictMarkers,
            files,
            "the task's changes still hold conflict markers (<<<<<<< … >>>>>>>) from a merge left unresolved: let the agent resolve them, or keep the task's branch",
        )
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

pub(crate) fn tip(wt: &TaskWorktree) -> Result<String> {
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
    /// `tip`: the task's branch after the rebase, still only the task's own commits.
    Rebased { onto: String, tip: Option<String> },
}

/// The person's branch is where the task started, or between there and the task's commits (a
/// rebase put them on top of it). A branch the person rewound below where the task started is
/// below the task's commits too, but landing the task's tree there would bring back what they
/// took off: it is caught up with like a branch that moved on.
fn up_to_date(wt: &TaskWorktree, tips: &Tips) -> bool {
    let repo = Path::new(&wt.repo);
    tips.target == wt.base_commit
        || (git_ok(repo, &["merge-base", "--is-ancestor", &wt.base_commit, &tips.target])
            && git_ok(repo, &["merge-base", "--is-ancestor", &tips.target, &tips.task]))
}

/// Where the run left the task's branch: its last commit, and the files it changes since the
/// task started (`None` when not recorded: git lists them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Left {
    pub commit: String,
    pub files: Option<Vec<String>>,
}

/// The landing composed straight from the branches as they are, when the person's branch did
/// not move (`None` when it did: [`catch_up`] first). Reads and makes a commit object only, so
/// it can run beside the look for changes left in the worktree. It is composed from where the
/// run `left` the task (the person's branch where the task started) while one git reads where
/// the branches really are, and kept when they are there: a landing is a handful of short git
/// processes, each costing more to start than its work in a small repository, so reading the
/// tips first would put one more on its way.
pub fn prepare(wt: &TaskWorktree, mode: LandingMode, message: &str, left: &Left) -> Result<Option<std::result::Result<Composed, Blocked>>> {
    let assumed = wt.base_branch.clone().map(|branch| Tips { branch, target: wt.base_commit.clone(), task: left.commit.clone(), on_target: true });
    let (guess, tips) = beside(|| assumed.as_ref().map(|a| compose_from(wt, a, left.files.clone(), mode, message)), || read_tips(wt));
    let tips = match tips? {
        Ok(t) => t,
        Err(b) => return Ok(Some(Err(b))),
    };
    if let (Some(assumed), Some(Ok(guess))) = (&assumed, guess) {
        let same_branches = (&tips.branch, &tips.target, &tips.task) == (&assumed.branch, &assumed.target, &assumed.task);
        match guess {
            // Composed as if the person's checkout were on the branch: it is, or the landing
            // leaves it alone.
            Ok(mut composed) if same_branches => {
                composed.on_target = tips.on_target;
                return Ok(Some(Ok(composed)));
            }
            // Their edits stand in the way only of a checkout that the landing changes.
            Err(blocked) if same_branches && (tips.on_target || mode == LandingMode::Uncommitted) => return Ok(Some(Err(blocked))),
            _ => {}
        }
    }
    if !up_to_date(wt, &tips) {
        return Ok(None);
    }
    compose(wt, &tips, mode, message).map(Some)
}

/// Rebases the task's branch, in its worktree, onto the person's branch when that moved on
/// since the task started. A conflict leaves the task's branch as it was.
pub fn catch_up(wt: &TaskWorktree) -> Result<std::result::Result<CatchUp, Blocked>> {
    // A rebase moves whatever the worktree has checked out: switched to another branch of the
    // person's (by them, or by a process the agent left running), that branch would be rebased.
    // Its own catch-up cut short by a crash left it mid-rebase: undone first, and done again.
    super::worktree::abort_own_rebase(wt);
    super::worktree::on_own_branch(wt)?;
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
        // Files as committed, as the worktree was filled (`worktree::checkout`).
        // The task's branch named, so that a switch since the check above rebases it or nothing.
        .args(["-c", "core.autocrlf=false", "rebase", "--no-autostash", "--onto", &target_tip, &wt.base_commit, &wt.branch])
        .output()
        .map_err(|e| Error::Worktree(format!("git could not run: {e}")))?;
    if out.status.success() {
        let tip = git(folder, &["rev-parse", "-q", "--verify", "HEAD^{commit}"]).ok().map(|t| t.trim().to_string()).filter(|t| !t.is_empty());
        return Ok(Ok(CatchUp::Rebased { onto: target_tip, tip }));
    }
    let files: Vec<String> = git(folder, &["diff", "--name-only", "--diff-filter=U"]).unwrap_or_default().lines().map(str::to_string).collect();
    let _ = git_ok(folder, &["rebase", "--abort"]);
    Ok(Err(Blocked::new(
        LandingBlock::Conflict,
        files,
        format!("“{branch}” moved on since the task started, and the task's changes conflict with what landed there"),
    )))
}

/// Moves `target_ref` from `old` to `new` (only if it is still at `old`); what git said when it
/// would not, its first line of complaint.
fn move_branch(repo: &Path, target_ref: &str, new: &str, old: &str) -> Option<String> {
    let out = git_in(repo).args(["update-ref", "-m", "finishline: land task", target_ref, new, old]).output();
    match out {
        Ok(o) if o.status.success() => None,
        Ok(o) => {
            let said = String::from_utf8_lossy(&o.stderr);
            let line = said.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("it refused");
            Some(line.trim_start_matches("fatal: ").trim_start_matches("error: ").trim_end_matches('.').to_string())
        }
        Err(e) => Some(format!("git could not run: {e}")),
    }
}

/// The tips after a rebase (the branch may have moved again meanwhile: then landing stops).
pub fn tips(wt: &TaskWorktree) -> Result<std::result::Result<Tips, Blocked>> {
    let tips = match read_tips(wt)? {
        Ok(t) => t,
        Err(b) => return Ok(Err(b)),
    };
    if !git_ok(Path::new(&wt.repo), &["merge-base", "--is-ancestor", &tips.target, &tips.task]) {
        let branch = &tips.branch;
        return Ok(Err(Blocked::new(LandingBlock::BranchMoved, vec![], format!("“{branch}” moved on again while the task was being landed: approve again"))));
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
    /// The task's commit whose changes are written into the checkout (uncommitted changes).
    pub task_tip: Option<String>,
    /// The person's checkout is on the target branch: it moves along.
    pub on_target: bool,
}

/// Past this many files, the person's checkout is checked whole rather than file by file.
const PATHSPEC_LIMIT: usize = 2000;

/// The commit message: the task's title (for a follow-up after an earlier landing, the title of
/// what the person asked then, and which task it follows), what they asked for at review on the
/// way, the evaluator's summary, and who did it. `task` and `follow_up` are the person's whole
/// words: a title cut short for the subject line has them whole in the body.
pub fn message(task: &str, follow_up: Option<&str>, asked_at_review: &[&str], summary: Option<&str>, agent: &str, session: &str) -> String {
    let title = title_of(task);
    let titled = |words: &str| {
        let (words, subject) = (words.trim(), title_of(words));
        if subject == words {
            subject
        } else {
            format!("{subject}\n\n{}", within_body(words))
        }
    };
    let mut m = match follow_up {
        Some(asked) => format!("{}\n\nFollow-up to “{title}”.", titled(asked)),
        None => titled(task),
    };
    if !asked_at_review.is_empty() {
        m.push_str("\n\nAsked at review:");
        for asked in asked_at_review {
            m.push_str(&format!("\n- {}", asked.split_whitespace().collect::<Vec<_>>().join(" ")));
        }
    }
    if let Some(s) = summary.map(str::trim).filter(|s| !s.is_empty()) {
        m.push_str("\n\n");
        m.push_str(s);
    }
    m.push_str(&format!("\n\nLanded-by: Finishline ({agent})\nFinishline-Session: {session}\n"));
    m
}

/// A commit body holds the person's words up to this many characters: past it, the session
/// (named in the message) holds the rest.
const BODY_WORDS_LIMIT: usize = 4000;

fn within_body(words: &str) -> String {
    if words.chars().count() <= BODY_WORDS_LIMIT {
        return words.to_string();
    }
    format!("{}…", words.chars().take(BODY_WORDS_LIMIT).collect::<String>())
}

/// Makes the landing's commit (squash or merge) and checks the person's checkout, touching
/// neither their branch nor their files.
pub fn compose(wt: &TaskWorktree, tips: &Tips, mode: LandingMode, message: &str) -> Result<std::result::Result<Composed, Blocked>> {
    compose_from(wt, tips, None, mode, message)
}

/// [`compose`], with the files the landing changes when they are known.
fn compose_from(
    wt: &TaskWorktree,
    tips: &Tips,
    files: Option<Vec<String>>,
    mode: LandingMode,
    message: &str,
) -> Result<std::result::Result<Composed, Blocked>> {
    let repo = Path::new(&wt.repo);
    let Tips { branch, target: old_tip, task: task_tip, on_target } = tips.clone();
    let files = match files {
        Some(files) => files,
        None => super::worktree::changed_between(wt, &old_tip, &task_tip)?,
    };
    // Written into the working tree as uncommitted changes, the task's files must not meet an
    // edit of the person's. Moving their checkout along a branch, git's own check refuses the
    // same (see [`apply`]) except over a file their `.gitignore` hides, which git overwrites: a
    // task that un-ignores a local file and adds its own would replace the person's.
    let check_edits = mode == LandingMode::Uncommitted && !files.is_empty();
    // Uncommitted changes are written straight into the checkout: such a file stops them too.
    if check_edits || (on_target && matches!(mode, LandingMode::Squash | LandingMode::Merge)) {
        let hidden = ignored_among(repo, &files)?;
        if !hidden.is_empty() {
            return Ok(Err(Blocked::new(
                LandingBlock::YourIgnoredFiles,
                hidden,
                "the task would replace files your .gitignore hides, which are not in git and could not be brought back: move or rename them, then approve again, or keep the task's branch",
            )));
        }
    }
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
        let outside = outside_sparse_checkout(repo, &files)?;
        if !outside.is_empty() {
            return Ok(Err(Blocked::new(
                LandingBlock::OutsideSparseCheckout,
                outside,
                "your checkout is sparse and the task changed files outside it, which uncommitted changes cannot hold: land the task as a commit (those files stay out of your folder) or keep its branch",
            )));
        }
        let clash = your_edits(repo, &files)?;
        if !clash.is_empty() {
            return Ok(Err(your_edits_block(clash)));
        }
        let kept = kept_in_folders(repo, &files);
        if !kept.is_empty() {
            return Ok(Err(Blocked::new(
                LandingBlock::YourEdits,
                kept,
                "the task puts a file where your checkout has a folder holding files git does not track, which would be lost: move them, then approve again, or land the task as a commit, or keep its branch",
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
    let task_tip = (mode == LandingMode::Uncommitted).then_some(task_tip);
    Ok(Ok(Composed { mode, target_branch: branch, old_tip, new_commit, files, task_tip, on_target }))
}

/// Files in the person's checkout under a folder standing where the landing changes a path (the
/// task made a file of a folder) that the landing does not itself change: files git does not
/// track, or ignores, which writing the task's file there would fail over, halfway. The first
/// few are enough to name.
fn kept_in_folders(repo: &Path, files: &[String]) -> Vec<String> {
    const ENOUGH: usize = 20;
    let changed: std::collections::HashSet<&str> = files.iter().map(String::as_str).collect();
    let mut kept = Vec::new();
    let mut folders: Vec<String> = files.iter().filter(|f| repo.join(f).symlink_metadata().is_ok_and(|m| m.is_dir())).cloned().collect();
    while let Some(folder) = folders.pop().filter(|_| kept.len() < ENOUGH) {
        let Ok(entries) = std::fs::read_dir(repo.join(&folder)) else { continue };
        for entry in entries.flatten() {
            let path = format!("{folder}/{}", entry.file_name().to_string_lossy());
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                folders.push(path);
            } else if !changed.contains(path.as_str()) && kept.len() < ENOUGH {
                kept.push(path);
            }
        }
    }
    kept.sort();
    kept
}

/// What the person's own commits get that a landing's commit does not: Finishline commits with
/// the repository's hooks off and unsigned, since it runs none of the repository's code. The
/// hooks a commit would have run, and whether signing is on, read as git reads them for the
/// person (`core.hooksPath` and `commit.gpgsign` as their configuration sets them).
pub fn not_applied(repo: &Path) -> (Vec<String>, bool) {
    let theirs = |args: &[&str]| {
        let out = std::process::Command::new("git").arg("-C").arg(repo).args(args).env_remove("GIT_DIR").stdin(std::process::Stdio::null()).output().ok()?;
        out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    let hooks = theirs(&["rev-parse", "--git-path", "hooks"]).map(|h| repo.join(h)).map_or_else(Vec::new, |dir| {
        ["pre-commit", "prepare-commit-msg", "commit-msg", "post-commit"]
            .into_iter()
            .filter(|h| std::fs::metadata(dir.join(h)).is_ok_and(|m| m.is_file() && std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o111 != 0))
            .map(String::from)
            .collect()
    });
    let signing = theirs(&["config", "--bool", "commit.gpgsign"]).is_some_and(|v| v == "true");
    (hooks, signing)
}

fn your_edits_block(files: Vec<String>) -> Blocked {
    Blocked::new(
        LandingBlock::YourEdits,
        files,
        "you have uncommitted edits in files the task changed: commit or stash them, then approve again, or keep the task's branch",
    )
}

/// The files in which the task's changes from `from` to `to` add both ends of a conflict (a
/// line starting `<<<<<<<`, a `=======` alone and one starting `>>>>>>>`, each as long as the
/// others: a file's `conflict-marker-size` makes them longer): a merge left unresolved.
/// Markers the file already had (a test's fixture) are not added, and a lone `=======` is a
/// heading's rule.
/// `-G` keeps git's output to the files whose change has such a line; renames are found, so a
/// fixture moved whole adds nothing. Plumbing, so neither the person's diff settings (prefixes)
/// nor the repository's textconv drivers reach it.
pub fn conflict_markers_in(repo: &Path, from: &str, to: &str) -> Result<Vec<String>> {
    // A carriage return ends a Windows file's marker that has no label.
    let regex = "-G^(<{7,}|>{7,})( |\r|$)";
    let out = git(
        repo,
        &["-c", "core.quotePath=false", "diff-tree", "-r", "-p", "-U0", "-M", "--no-textconv", "--no-color", "--no-ext-diff", regex, from, to, "--"],
    )?;
    let mut marked = Vec::new();
    let (mut file, mut in_hunk) = (String::new(), false);
    // The lengths of the markers added: opening, separating (`=======` alone) and closing.
    let (mut opens, mut seps, mut closes) = (Vec::new(), Vec::new(), Vec::new());
    for l in out.lines().chain(std::iter::once("diff (end)")) {
        if l.starts_with("diff ") {
            if opens.iter().any(|n| seps.contains(n) && closes.contains(n)) {
                marked.push(std::mem::take(&mut file));
            }
            (in_hunk, opens, seps, closes) = (false, Vec::new(), Vec::new(), Vec::new());
        } else if !in_hunk {
            if let Some(path) = l.strip_prefix("+++ ") {
                // git ends a name that has a space with a tab, so a patch tool reads it whole.
                let path = path.strip_suffix('\t').unwrap_or(path);
                file = path.strip_prefix("b/").unwrap_or(path).to_string();
            }
            in_hunk = l.starts_with("@@");
        } else if let Some(added) = l.strip_prefix('+') {
            let marker = |c: char, labelled: bool| {
                let rest = added.trim_start_matches(c);
                let n = added.len() - rest.len();
                (n >= 7 && (rest.is_empty() || rest == "\r" || (labelled && rest.starts_with(' ')))).then_some(n)
            };
            opens.extend(marker('<', true));
            seps.extend(marker('=', false));
            closes.extend(marker('>', true));
        }
    }
    Ok(marked)
}

/// The paths of the person's checkout, hidden by their `.gitignore`, that landing `files` would
/// replace: a file at one of those paths, a folder there (its contents go), or a file or link
/// where one of them needs a folder. Only paths on disk are in anybody's way, so git is asked
/// only about those.
fn ignored_among(repo: &Path, files: &[String]) -> Result<Vec<String>> {
    let mut in_the_way: Vec<String> = Vec::new();
    for f in files {
        let path = Path::new(f);
        let parents = path.ancestors().skip(1).filter(|p| !p.as_os_str().is_empty());
        for p in parents.filter(|p| repo.join(p).symlink_metadata().is_ok_and(|m| !m.is_dir())) {
            in_the_way.push(p.to_string_lossy().into_owned());
        }
        if repo.join(path).symlink_metadata().is_ok() {
            in_the_way.push(f.clone());
        }
    }
    in_the_way.sort();
    in_the_way.dedup();
    if in_the_way.is_empty() {
        return Ok(vec![]);
    }
    let mut listed = Vec::new();
    // `ls-files` takes no pathspec file: the paths go in batches that fit a command line.
    for batch in in_the_way.chunks(PATHSPEC_LIMIT) {
        let out = git_in(repo)
            .env("GIT_LITERAL_PATHSPECS", "1")
            .args(["ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--"])
            .args(batch)
            .output()?;
        if !out.status.success() {
            return Err(Error::Worktree(format!("git could not list your ignored files: {}", String::from_utf8_lossy(&out.stderr).trim())));
        }
        listed.extend(String::from_utf8_lossy(&out.stdout).split('\0').filter(|f| !f.is_empty()).map(str::to_string));
    }
    // A folder's ignored files are listed one by one, under it.
    Ok(in_the_way.into_iter().filter(|p| listed.iter().any(|l| l == p || l.strip_prefix(p.as_str()).is_some_and(|rest| rest.starts_with('/')))).collect())
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

/// The person's repository is not where the task started (moved, renamed or deleted): nothing
/// can land there, and git run in the task's worktree fails, as its link points to the old
/// place. Said with both ways on: put it back, or take the work by hand where it is now.
pub fn repository_gone(wt: &TaskWorktree) -> Option<RepositoryGone<'_>> {
    (!git_ok(Path::new(&wt.repo), &["rev-parse", "--git-dir"])).then_some(RepositoryGone(wt))
}

/// A task's repository that is not where the task started.
pub struct RepositoryGone<'a>(&'a TaskWorktree);

impl RepositoryGone<'_> {
    pub fn where_it_was(&self) -> String {
        format!("the repository the task started from is no longer at {} (moved, renamed or deleted)", self.0.repo)
    }

    /// What an approve says: both ways on.
    pub fn blocked(&self) -> Blocked {
        let wt = self.0;
        Blocked::new(
            LandingBlock::RepositoryGone,
            vec![],
            format!(
                "{}: put it back there and approve again; or, in the repository where it is now, `git worktree repair {}` then `git merge {}` takes the task's work by hand",
                self.where_it_was(),
                wt.folder,
                wt.branch
            ),
        )
    }
}

/// Which of `files` the index holds and the person's working tree does not: deleted, and the
/// deletion not committed or staged. Only those paths are looked at (past the command line's
/// room, every deleted file, filtered here).
fn deleted_among(repo: &Path, files: &[String]) -> Vec<String> {
    let mut cmd = git_in(repo);
    cmd.env("GIT_LITERAL_PATHSPECS", "1").args(["ls-files", "-z", "--deleted", "--"]);
    if files.len() <= PATHSPEC_LIMIT {
        cmd.args(files);
    }
    let Ok(out) = cmd.output() else { return vec![] };
    let listed = String::from_utf8_lossy(&out.stdout).into_owned();
    let deleted: std::collections::HashSet<&str> = listed.split('\0').filter(|p| !p.is_empty()).collect();
    files.iter().filter(|f| deleted.contains(f.as_str())).cloned().collect()
}

/// Which of `files` the person's sparse checkout leaves out (none when it is whole). A git that
/// cannot say (`check-rules` came with 2.43) has every file counted out: nothing is written
/// on a guess.
fn outside_sparse_checkout(repo: &Path, files: &[String]) -> Result<Vec<String>> {
    if !git(repo, &["config", "--bool", "core.sparseCheckout"]).is_ok_and(|v| v.trim() == "true") {
        return Ok(vec![]);
    }
    let mut cmd = git_in(repo);
    cmd.args(["sparse-checkout", "check-rules", "-z"]);
    let out = git_with_input(cmd, files.join("\0").as_bytes())?;
    if !out.status.success() {
        return Ok(files.to_vec());
    }
    let listed = String::from_utf8_lossy(&out.stdout);
    let inside: std::collections::HashSet<&str> = listed.split('\0').collect();
    Ok(files.iter().filter(|f| !inside.contains(f.as_str())).cloned().collect())
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

/// The lock landings in `wt`'s repository take turns with, in its git directory beside git's own
/// (every Finishline process, and every task of the repository, sees the same one): between
/// composing a landing from the person's branch and moving that branch, another landing moving
/// it would have this one refused ("moved while the task was being landed"). `None` where the
/// repository's git directory cannot be found; the landing then goes on alone, as it did.
pub fn turn_file(wt: &TaskWorktree) -> Option<PathBuf> {
    crate::workspace::worktree::common_dir(Path::new(&wt.repo)).map(|dir| dir.join("finishline-landing.lock"))
}

/// Moves the person's branch to the landing's commit (only if it is still where it was) and
/// updates their checkout when it is on that branch; or writes the changes into their working
/// tree for `uncommitted`. On a refusal nothing is left half done.
pub fn apply(wt: &TaskWorktree, c: &Composed) -> Result<std::result::Result<(), Blocked>> {
    let repo = Path::new(&wt.repo);
    let target_ref = format!("refs/heads/{}", c.target_branch);
    if c.mode != LandingMode::Branch {
        if let Some(b) = in_use(repo, &c.target_branch, c.mode == LandingMode::Uncommitted) {
            return Ok(Err(b));
        }
    }
    match (c.mode, &c.new_commit) {
        (LandingMode::Squash | LandingMode::Merge, Some(new)) => {
            // The person's checkout first, when it is on the branch: git refuses to overwrite an
            // edit of theirs (staged, unstaged, or a file of theirs where the task adds one), and
            // then nothing has moved. Which files is asked only then.
            if c.on_target {
                // A file the person deleted without committing that: git's update brings it back
                // with the task's content without a word (a missing file is no edit to it).
                let deleted = deleted_among(repo, &c.files);
                if !deleted.is_empty() {
                    return Ok(Err(your_edits_block(deleted)));
                }
                if let Err(why) = update_checkout(repo, &c.old_tip, new) {
                    let clash = your_edits(repo, &c.files)?;
                    return Ok(Err(if clash.is_empty() { Blocked::new(LandingBlock::Git, c.files.clone(), why) } else { your_edits_block(clash) }));
                }
                crate::fault::pause_at("landing-after-checkout");
            }
            if let Some(refused) = move_branch(repo, &target_ref, new, &c.old_tip) {
                // Moved by someone else meanwhile, or refused by git with the branch where it was
                // (a lock a git of the person's holds, or one a crashed git left): "approve
                // again" would only meet the same lock.
                let moved = git(repo, &["rev-parse", "-q", "--verify", &target_ref]).map_or(true, |t| t.trim() != c.old_tip);
                let what = if moved {
                    format!("“{}” moved while the task was being landed", c.target_branch)
                } else {
                    format!("git could not move “{}”: {refused}", c.target_branch)
                };
                // Back to where it was, so the branch and the checkout agree; if git will not,
                // the person is told what their checkout holds.
                if c.on_target {
                    if let Err(why) = update_checkout(repo, new, &c.old_tip) {
                        return Ok(Err(Blocked::new(
                            LandingBlock::Git,
                            c.files.clone(),
                            format!(
                                "{what}, and your checkout, already brought along, could not be put back: it holds the task's changes as uncommitted edits ({why}). Check `git status`, then approve again or discard them"
                            ),
                        )));
                    }
                }
                return Ok(Err(if moved {
                    Blocked::new(LandingBlock::BranchMoved, vec![], format!("{what}: approve again"))
                } else {
                    Blocked::new(
                        LandingBlock::Git,
                        vec![],
                        format!("{what}. Let the git command that holds it finish (a lock left by one that crashed can be deleted), then approve again, or keep the task's branch"),
                    )
                }));
            }
            Ok(Ok(()))
        }
        (LandingMode::Uncommitted, _) => {
            let patch = match landing_patch(wt, c)? {
                Ok(p) => p,
                Err(b) => return Ok(Err(b)),
            };
            // A task that changed nothing has nothing to write, which `git apply` calls an error.
            if patch.is_empty() {
                return Ok(Ok(()));
            }
            let check = pipe(repo, &["apply", "--check", "--whitespace=nowarn"], &patch)?;
            if let Err(why) = check {
                return Ok(Err(Blocked::new(LandingBlock::Conflict, c.files.clone(), format!("the task's changes do not apply to your working tree: {why}"))));
            }
            if let Err(why) = pipe(repo, &["apply", "--whitespace=nowarn"], &patch)? {
                return Ok(Err(Blocked::new(LandingBlock::Git, c.files.clone(), why)));
            }
            Ok(Ok(()))
        }
        _ => Ok(Ok(())),
    }
}

/// The patch a landing as uncommitted changes writes: from the person's branch as it was to the
/// task's commit, recorded when the landing started (before that was recorded, the task's branch,
/// which such a landing does not move).
fn landing_patch(wt: &TaskWorktree, c: &Composed) -> Result<std::result::Result<Vec<u8>, Blocked>> {
    let task_tip = match &c.task_tip {
        Some(t) => t.clone(),
        None => tip(wt)?,
    };
    Ok(task_patch(Path::new(&wt.repo), &c.old_tip, &task_tip)?.map_err(|why| Blocked::new(LandingBlock::Git, c.files.clone(), why)))
}

/// The task's changes from `old_tip` to `task_tip` as a patch `git apply` writes into the
/// person's checkout; `Err` says why git could not read them. Plumbing, with every option that
/// shapes a patch spelled out: the person's git config (`diff.noprefix`, `color.ui=always`,
/// `diff.external`, `diff.relative`) would otherwise make a patch that writes another file or
/// none.
fn task_patch(repo: &Path, old_tip: &str, task_tip: &str) -> Result<std::result::Result<Vec<u8>, String>> {
    let patch = git_in(repo)
        .args(["diff-tree", "-p", "--binary", "--full-index", "--no-renames", "--no-color", "--no-ext-diff", "--no-textconv"])
        .args(["--src-prefix=a/", "--dst-prefix=b/", old_tip, task_tip])
        .output()?;
    if !patch.status.success() {
        return Ok(Err(format!("the task's changes could not be read from its branch: {}", String::from_utf8_lossy(&patch.stderr).trim())));
    }
    Ok(Ok(patch.stdout))
}

/// Whether `branch` is the person's to move right now, as git itself judges before moving a
/// branch: checked out in another worktree, or being rebased or bisected in any (their own
/// checkout included, whose HEAD a rebase detaches). With `into_checkout` (changes written into
/// their working tree), also a merge, cherry-pick or revert under way there, which would take
/// the task's changes into its own commit.
fn in_use(repo: &Path, branch: &str, into_checkout: bool) -> Option<Blocked> {
    let dirs = git(repo, &["rev-parse", "--git-dir", "--git-common-dir"]).ok()?;
    let mut dirs = dirs.lines().map(|d| repo.join(d.trim()));
    let (own, common) = (dirs.next()?, dirs.next()?);
    let canonical = |p: PathBuf| p.canonicalize().unwrap_or(p);
    let (own, common) = (canonical(own), canonical(common));
    let read = |dir: &Path, file: &str| std::fs::read_to_string(dir.join(file)).map(|s| s.trim().to_string()).unwrap_or_default();
    let keep = "or keep the task's branch";
    if into_checkout {
        // Changes written into the checkout move no branch: only what is under way there counts.
        let under_way = [
            ("MERGE_HEAD", "merge"),
            ("CHERRY_PICK_HEAD", "cherry-pick"),
            ("REVERT_HEAD", "revert"),
            ("rebase-merge", "rebase"),
            ("rebase-apply", "rebase or `git am`"),
        ];
        return under_way.iter().find(|(file, _)| own.join(file).exists()).map(|(_, what)| {
            Blocked::new(
                LandingBlock::BranchInUse,
                vec![],
                format!("your checkout is in the middle of a {what}, which would take the task's changes into its commit: finish or abort it, then approve again, {keep}"),
            )
        });
    }
    let full = format!("refs/heads/{branch}");
    // Each worktree's git folder and its checkout. The main one is the common folder's, unless the
    // repository is bare (its HEAD names a branch nobody has checked out).
    let mut gitdirs: Vec<(PathBuf, Option<PathBuf>)> = Vec::new();
    let main = common.parent().map(Path::to_path_buf).filter(|m| canonical(m.join(".git")) == common);
    gitdirs.push((common.clone(), main));
    if let Ok(linked) = std::fs::read_dir(common.join("worktrees")) {
        for dir in linked.flatten().map(|e| canonical(e.path())) {
            // `gitdir` names the checkout's `.git` file, relative to this folder with
            // `worktree.useRelativePaths`.
            let checkout = Some(dir.join(read(&dir, "gitdir"))).and_then(|g| g.parent().map(Path::to_path_buf));
            gitdirs.push((dir, checkout));
        }
    }
    for (dir, checkout) in gitdirs {
        let where_ = if dir == own { "in your checkout".to_string() } else { format!("in your worktree at {}", checkout.as_deref().unwrap_or(&dir).display()) };
        let why = if read(&dir, "rebase-merge/head-name") == full || read(&dir, "rebase-apply/head-name") == full {
            Some(format!("“{branch}” is being rebased {where_}: finish or abort the rebase, then approve again, {keep}"))
        } else if read(&dir, "BISECT_START") == branch || read(&dir, "BISECT_START") == full {
            Some(format!("“{branch}” is being bisected {where_}: end it with `git bisect reset`, then approve again, {keep}"))
        } else if dir != own && read(&dir, "HEAD") == format!("ref: {full}") && checkout.is_some_and(|c| c.exists()) {
            Some(format!(
                "“{branch}” is checked out {where_}, which would be left behind its branch: switch that checkout to another branch, then approve again, {keep}"
            ))
        } else {
            None
        };
        if let Some(why) = why {
            return Some(Blocked::new(LandingBlock::BranchInUse, vec![], why));
        }
    }
    None
}

/// Where the person's checkout is, read after a landing on a branch it was not on.
pub fn checkout_at(repo: &Path) -> Option<CheckoutElsewhere> {
    Some(match git(repo, &["symbolic-ref", "-q", "--short", "HEAD"]) {
        Ok(branch) if !branch.trim().is_empty() => CheckoutElsewhere::Branch(branch.trim().to_string()),
        Ok(_) => return None,
        Err(_) => CheckoutElsewhere::NoBranch,
    })
}

/// Brings the person's checkout (on the landing's branch) from `old` to `new`, index and files,
/// keeping their other edits: git refuses to overwrite any.
fn update_checkout(repo: &Path, old: &str, new: &str) -> std::result::Result<(), String> {
    // A file touched but not changed (saved unchanged, a build's `touch`) looks edited to the
    // index until its times are read again: git refused it as "not uptodate". What this cannot
    // refresh (a real edit, a lock held) is left to the merge below, which says so.
    let _ = git_in(repo).args(["update-index", "-q", "--refresh"]).output();
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
    let on_target = git(repo, &["symbolic-ref", "-q", "--short", "HEAD"]).map(|b| b.trim() == c.target_branch).unwrap_or(false);
    // The person's index holds the landing's files as `commit` has them (paths literal, as git
    // lists them with `-z`; past the command line's room, the whole index).
    let index_at = |commit: &str| {
        let mut cmd = git_in(repo);
        cmd.env("GIT_LITERAL_PATHSPECS", "1").args(["diff-index", "--cached", "--quiet", commit, "--"]);
        if c.files.len() <= PATHSPEC_LIMIT {
            cmd.args(&c.files);
        }
        cmd.output().is_ok_and(|o| o.status.success())
    };
    match &c.new_commit {
        Some(new) if &now == new => {
            if on_target && !index_at(new) {
                if let Err(why) = update_checkout(repo, &c.old_tip, new) {
                    return Ok(Err(Blocked::new(LandingBlock::Git, c.files.clone(), why)));
                }
            }
            Ok(Ok(()))
        }
        // The checkout was brought along and the branch not yet moved: it moves now.
        Some(new) if now == c.old_tip && on_target && !c.files.is_empty() && index_at(new) => {
            if git_ok(repo, &["update-ref", "-m", "finishline: land task", &format!("refs/heads/{}", c.target_branch), new, &c.old_tip]) {
                Ok(Ok(()))
            } else {
                Ok(Err(interrupted(false)))
            }
        }
        // Written into the checkout (uncommitted changes), which the index does not show: the
        // patch itself says whether all of it is there, none, or part.
        None if c.mode == LandingMode::Uncommitted => {
            let patch = match landing_patch(wt, c)? {
                Ok(p) => p,
                Err(b) => return Ok(Err(b)),
            };
            if patch.is_empty() || pipe(repo, &["apply", "--reverse", "--check", "--whitespace=nowarn"], &patch)?.is_ok() {
                return Ok(Ok(()));
            }
            let untouched = pipe(repo, &["apply", "--check", "--whitespace=nowarn"], &patch)?.is_ok();
            Ok(Err(interrupted_uncommitted(!untouched)))
        }
        // Their checkout may hold part of the landing when it is not where the branch is.
        _ => Ok(Err(interrupted(on_target && !c.files.is_empty() && !index_at(&c.old_tip)))),
    }
}

/// A landing as uncommitted changes cut short: none of them written, or some.
fn interrupted_uncommitted(some_written: bool) -> Blocked {
    if some_written {
        Blocked::new(
            LandingBlock::Interrupted,
            vec![],
            "Finishline stopped while writing this task's changes into your checkout, and the checkout does not hold them as the task left them (some may be there): check `git status` (the task's branch holds all of them), then keep the branch, or undo those edits and approve again",
        )
    } else {
        interrupted(false)
    }
}

fn interrupted(checkout_changed: bool) -> Blocked {
    Blocked::new(
        LandingBlock::Interrupted,
        vec![],
        if checkout_changed {
            "Finishline stopped while landing this task; its commit did not land, but your checkout holds some of its changes as uncommitted edits: check `git status`, then approve again"
        } else {
            "Finishline stopped while landing this task; nothing landed: approve again"
        },
    )
}

/// Runs git with `input` on stdin; `Err(stderr)` when it refuses.
fn pipe(repo: &Path, args: &[&str], input: &[u8]) -> Result<std::result::Result<(), String>> {
    let mut cmd = git_in(repo);
    cmd.args(args);
    let out = git_with_input(cmd, input)?;
    Ok(if out.status.success() { Ok(()) } else { Err(String::from_utf8_lossy(&out.stderr).trim().to_string()) })
}

#[cfg(test)]
mod tests {
    use super::{conflict_markers_in, message};

    #[test]
    fn only_a_conflict_the_change_adds_both_ends_of_counts_as_left_unresolved() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path();
        let git = |args: &[&str]| assert!(std::process::Command::new("git").current_dir(repo).args(args).output().unwrap().status.success(), "git {args:?}");
        git(&["init", "-q", "-b", "main"]);
        std::fs::write(repo.join("fixture.txt"), "<<<<<<< ours\na\n=======\nb\n>>>>>>> theirs\n").unwrap();
        git(&["add", "."]);
        git(&["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "base"]);
        // A heading's rule, a fixture that keeps its markers and gains a line, and a merge left as it was.
        std::fs::write(repo.join("README.md"), "Title\n=======\n").unwrap();
        std::fs::write(repo.join("fixture.txt"), "<<<<<<< ours\na\n=======\nb\n>>>>>>> theirs\nmore\n").unwrap();
        std::fs::write(repo.join("notes ü.md"), "<<<<<<< HEAD\nmine\n=======\ntheirs\n>>>>>>> main\n").unwrap();
        git(&["add", "."]);
        git(&["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "task"]);
        assert_eq!(conflict_markers_in(repo, "HEAD~1", "HEAD").unwrap(), vec!["notes ü.md".to_string()]);
        // A fixture moved whole adds no marker: renames are found.
        std::fs::create_dir(repo.join("fixtures")).unwrap();
        git(&["mv", "fixture.txt", "fixtures/merge.txt"]);
        git(&["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "move"]);
        assert_eq!(conflict_markers_in(repo, "HEAD~1", "HEAD").unwrap(), Vec::<String>::new());
    }

    #[test]
    fn markers_in_a_crlf_file_or_of_a_longer_marker_size_count_too() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path();
        let git = |args: &[&str]| assert!(std::process::Command::new("git").current_dir(repo).args(args).output().unwrap().status.success(), "git {args:?}");
        git(&["init", "-q", "-b", "main"]);
        std::fs::write(repo.join("base.txt"), "base\n").unwrap();
        git(&["add", "."]);
        git(&["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "base"]);
        // A Windows file's markers with no label end in a carriage return; a file whose
        // `conflict-marker-size` is 10 gets ten of each. Rules of `<` and `>` with no `=` between are text.
        std::fs::write(repo.join("win.txt"), "<<<<<<<\r\nmine\r\n=======\r\ntheirs\r\n>>>>>>>\r\n").unwrap();
        std::fs::write(repo.join("long.md"), "<<<<<<<<<< HEAD\nmine\n==========\ntheirs\n>>>>>>>>>> main\n").unwrap();
        std::fs::write(repo.join("art.txt"), "<<<<<<<<<<<<<<<<\nart\n>>>>>>>\n").unwrap();
        std::fs::write(repo.join("rules.md"), "<<<<<<<<\nbetween two rules\n>>>>>>>>\n").unwrap();
        git(&["add", "."]);
        git(&["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "task"]);
        assert_eq!(conflict_markers_in(repo, "HEAD~1", "HEAD").unwrap(), vec!["long.md".to_string(), "win.txt".to_string()]);
    }

    #[test]
    fn a_follow_ups_commit_is_named_by_what_was_asked_and_says_which_task_it_follows() {
        let m = message("write the parser", Some("rename the parser's functions"), &[], Some("renamed"), "Finishline", "ses_1");
        assert_eq!(
            m,
            "rename the parser's functions\n\nFollow-up to “write the parser”.\n\nrenamed\n\nLanded-by: Finishline (Finishline)\nFinishline-Session: ses_1\n"
        );
        assert!(message("write the parser", None, &[], None, "a", "s").starts_with("write the parser\n\nLanded-by"), "a first landing is named by the task");
    }

    #[test]
    fn words_too_long_for_the_subject_line_are_whole_in_the_body_of_a_task_and_of_a_follow_up() {
        let long = "write the parser for the configuration files, with errors that name the line and the column, and tests";
        let m = message(long, None, &[], None, "a", "s");
        let (subject, body) = m.split_once("\n\n").unwrap();
        assert!(subject.ends_with('…') && subject.chars().count() <= 81, "{subject}");
        assert!(body.starts_with(long), "{body}");
        let m = message("write the parser", Some(long), &[], None, "a", "s");
        assert!(m.contains(&format!("…\n\n{long}\n\nFollow-up to “write the parser”.")), "{m}");
        let huge = "x ".repeat(5000);
        assert!(message(&huge, None, &[], None, "a", "s").len() < 4200, "a huge task is cut in the body too");
    }
}
