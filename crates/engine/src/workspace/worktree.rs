//! A task's own git worktree: a branch made from where the person is (or a base they pick), a
//! checkout of it in Finishline's data folder, the untracked files the task needs copied in, and
//! its removal once the task is decided. The person's checkout is never touched here; landing
//! ([`super::landing`]) is the one place that writes to it.
//!
//! Every git call here runs with the person's hooks off: a task's worktree and commits are
//! Finishline's bookkeeping, and a hook that formats, signs or pushes would surprise them.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Where a task works inside the person's repository.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskWorktree {
    /// The person's checkout (the repository's top folder).
    pub repo: String,
    /// The task's worktree (its top folder), in Finishline's data folder.
    pub folder: String,
    /// The folder the person chose, relative to the repository's top ("" for the top).
    #[serde(default)]
    pub subdir: String,
    /// The task's branch, `finishline/<id>-<words of the task>`.
    pub branch: String,
    /// The branch approve lands on; `None` when the person's HEAD was detached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_branch: Option<String>,
    /// The commit the task's branch starts from.
    pub base_commit: String,
}

impl TaskWorktree {
    /// The folder the agent works in: the worktree's copy of the folder the person chose.
    pub fn work_dir(&self) -> PathBuf {
        let top = PathBuf::from(&self.folder);
        if self.subdir.is_empty() {
            top
        } else {
            top.join(&self.subdir)
        }
    }
}

/// The repository a folder is in, as git sees it from there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repo {
    pub top: PathBuf,
    /// The folder chosen, relative to `top`.
    pub subdir: String,
    pub branch: Option<String>,
    pub head: String,
}

/// The untracked files every task gets by default: a project's local environment.
pub const DEFAULT_INCLUDES: &[&str] = &[".env", ".env.*", "!.env.example"];

/// The file at a repository's top listing more untracked files to copy (gitignore syntax).
pub const INCLUDE_FILE: &str = ".worktreeinclude";

/// A `git` for the person's repository (or a worktree of it), with their hooks and any
/// `core.fsmonitor` command off: git runs neither for Finishline, whatever a config says.
pub(crate) fn git_in(dir: &Path) -> Command {
    let mut c = Command::new("git");
    c.arg("-C").arg(dir).args([
        "-c",
        "core.hooksPath=/dev/null",
        "-c",
        "core.fsmonitor=false",
        "-c",
        "commit.gpgsign=false",
        "-c",
        "advice.detachedHead=false",
    ]);
    c.env_remove("GIT_DIR").env_remove("GIT_WORK_TREE").env_remove("GIT_INDEX_FILE").env_remove("GIT_OBJECT_DIRECTORY").stdin(std::process::Stdio::null());
    // In a session of its own, with no terminal: a Ctrl-C there is Finishline's to act on (stop
    // a landing before the branch moves, or let it finish), never a git's to die of half way
    // through writing the person's checkout. Nor may it ask at the terminal (an LFS filter's
    // login, an ssh passphrase or host key): from a background group it would stop there unseen.
    // Without one it fails and says why, whatever the ssh version (`SSH_ASKPASS_REQUIRE` needs
    // OpenSSH 8.4), and the person's own ssh command (`core.sshCommand`) is still the one used.
    // SAFETY: setsid is async-signal-safe and touches no memory of ours.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut c, || if libc::setsid() == -1 { Err(std::io::Error::last_os_error()) } else { Ok(()) });
    }
    c.env("GIT_TERMINAL_PROMPT", "0").env("SSH_ASKPASS", "false").env("SSH_ASKPASS_REQUIRE", "force");
    c
}

/// Runs `cmd` (a [`git_in`]) with `input` on its stdin, and its stdout and stderr kept. The input
/// is written from a thread of its own, so a git that writes much before reading all of it cannot
/// block on us; a git that exits before reading it all says why in its exit status, not in a
/// broken pipe here.
pub(crate) fn git_with_input(mut cmd: Command, input: &[u8]) -> std::io::Result<std::process::Output> {
    use std::process::Stdio;
    let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn()?;
    let writer = child.stdin.take().map(|mut stdin| {
        let data = input.to_vec();
        std::thread::spawn(move || {
            use std::io::Write;
            let _ = stdin.write_all(&data);
        })
    });
    let out = child.wait_with_output();
    if let Some(w) = writer {
        let _ = w.join();
    }
    out
}

/// Runs git in `dir`; its stdout, or an error with what git said.
pub(crate) fn git(dir: &Path, args: &[&str]) -> Result<String> {
    let out = git_in(dir).args(args).output().map_err(|e| Error::Worktree(format!("git could not run: {e}")))?;
    if !out.status.success() {
        return Err(Error::Worktree(format!("git {} failed: {}", args.first().unwrap_or(&""), String::from_utf8_lossy(&out.stderr).trim())));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// What the task (or a command it ran) wrote in its worktree that the repository's ignore rules
/// hide: no commit holds it, so it never lands and goes with the worktree. Files copied in at the
/// start are left out; a folder ignored as a whole is one entry (`target/`).
pub fn ignored_written(wt: &TaskWorktree, copied: &[String]) -> Result<Vec<String>> {
    let out = git(Path::new(&wt.folder), &["-c", "core.quotePath=false", "ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory"])?;
    Ok(out.split('\0').filter(|p| !p.is_empty() && !copied.iter().any(|c| c == p || (p.ends_with('/') && c.starts_with(p)))).map(String::from).collect())
}

/// What a copy out of the worktree did, path by path (folders end in `/`).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct CopiedOut {
    /// Files (and links) now in the person's checkout.
    pub copied: Vec<String>,
    /// Already there: left as they are.
    pub left: Vec<String>,
    /// Not copied, each with why: `path: reason`.
    pub failed: Vec<String>,
}

/// Copies entries of [`ignored_written`] (a file, or a folder ignored whole) from the task's
/// worktree into the person's checkout, at the same place. Nothing there is overwritten (a file,
/// link or folder already there is left as it is) and nothing is written outside it: an entry
/// whose way in the checkout passes a link is not copied, nor a link that points out of the
/// repository, nor what is not a file (a socket, a pipe). A failure is named and the rest goes on.
pub fn copy_ignored_out(wt: &TaskWorktree, entries: &[String]) -> Result<CopiedOut> {
    let mut out = CopiedOut::default();
    let (from_top, to_top) = (Path::new(&wt.folder), Path::new(&wt.repo));
    for entry in entries {
        let rel = Path::new(entry.trim_end_matches('/'));
        if rel.as_os_str().is_empty() || rel.components().any(|c| !matches!(c, std::path::Component::Normal(_))) {
            return Err(Error::InvalidInput(format!("“{entry}” is not a path inside the repository")));
        }
        // Each folder on the way must be a real folder of the checkout (or not there yet).
        let mut way = to_top.to_path_buf();
        let mut through_link = false;
        for part in rel.parent().into_iter().flat_map(Path::components) {
            way.push(part);
            through_link |= std::fs::symlink_metadata(&way).is_ok_and(|m| !m.is_dir());
        }
        if through_link {
            out.failed.push(format!("{entry}: a folder on its way in your checkout is a link or a file"));
            continue;
        }
        if let Err(e) = std::fs::create_dir_all(&way) {
            out.failed.push(format!("{entry}: {e}"));
            continue;
        }
        copy_new(from_top, to_top, rel, &mut out);
    }
    Ok(out)
}

/// [`copy_ignored_out`] of one path, relative to both tops.
fn copy_new(from_top: &Path, to_top: &Path, rel: &Path, out: &mut CopiedOut) {
    let (from, to) = (from_top.join(rel), to_top.join(rel));
    let name = rel.to_string_lossy().into_owned();
    let meta = match std::fs::symlink_metadata(&from) {
        Ok(m) => m,
        Err(e) => return out.failed.push(format!("{name}: {e}")),
    };
    if meta.is_dir() {
        let made = match std::fs::symlink_metadata(&to) {
            Ok(m) if !m.is_dir() => return out.left.push(format!("{name}/")),
            Ok(_) => false,
            Err(_) => match std::fs::create_dir(&to) {
                Ok(()) => true,
                Err(e) => return out.failed.push(format!("{name}/: {e}")),
            },
        };
        let mut children: Vec<_> = match std::fs::read_dir(&from) {
            Ok(d) => d.flatten().map(|e| e.file_name()).collect(),
            Err(e) => return out.failed.push(format!("{name}/: {e}")),
        };
        if children.is_empty() && made {
            out.copied.push(format!("{name}/"));
        }
        children.sort();
        for child in children {
            copy_new(from_top, to_top, &rel.join(child), out);
        }
        return;
    }
    let made = if meta.file_type().is_symlink() {
        match std::fs::read_link(&from) {
            Ok(target) if stays_inside(rel, &target) => std::os::unix::fs::symlink(target, &to),
            Ok(_) => return out.failed.push(format!("{name}: a link that points out of the repository")),
            Err(e) => Err(e),
        }
    } else if meta.is_file() {
        copy_file(&from, &to, &meta)
    } else {
        return out.failed.push(format!("{name}: not a file (a socket or a pipe)"));
    };
    match made {
        Ok(()) => out.copied.push(name),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => out.left.push(name),
        Err(e) => out.failed.push(format!("{name}: {e}")),
    }
}

/// Copies a regular file to where nothing is: created in one step (a file that appears meanwhile
/// is kept), after the source opened; a copy that fails takes back the file it made.
fn copy_file(from: &Path, to: &Path, meta: &std::fs::Metadata) -> std::io::Result<()> {
    let mut source = std::fs::File::open(from)?;
    let mut made = std::fs::OpenOptions::new().write(true).create_new(true).open(to)?;
    let copied = std::io::copy(&mut source, &mut made).and_then(|_| made.set_permissions(meta.permissions()));
    if copied.is_err() {
        drop(made);
        let _ = std::fs::remove_file(to);
    }
    copied
}

/// Whether a link at `rel` pointing at `target` stays inside the repository: relative, and never
/// climbing above the top.
fn stays_inside(rel: &Path, target: &Path) -> bool {
    let mut depth = rel.components().count() as i64 - 1;
    for c in target.components() {
        match c {
            std::path::Component::Normal(_) => depth += 1,
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                depth -= 1;
                if depth < 0 {
                    return false;
                }
            }
            std::path::Component::RootDir | std::path::Component::Prefix(_) => return false,
        }
    }
    true
}

/// Runs git and says only whether it succeeded.
pub(crate) fn git_ok(dir: &Path, args: &[&str]) -> bool {
    git_in(dir).args(args).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null()).status().is_ok_and(|s| s.success())
}

/// An author for commits when the repository names none: git refuses to commit without one.
pub(crate) fn identity_args(dir: &Path) -> Vec<String> {
    let set = git(dir, &["config", "--get-regexp", r"^user\.(name|email)$"]).unwrap_or_default();
    let mut args = Vec::new();
    if !set.lines().any(|l| l.starts_with("user.name ")) {
        args.extend(["-c".to_string(), "user.name=Finishline".to_string()]);
    }
    if !set.lines().any(|l| l.starts_with("user.email ")) {
        args.extend(["-c".to_string(), "user.email=finishline@localhost".to_string()]);
    }
    args
}

/// Lowers the priority of a git process doing Finishline's bookkeeping (filling a worktree,
/// recording a snapshot), so the streams the person watches keep the processor.
pub(crate) fn in_background(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: setpriority is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            libc::setpriority(libc::PRIO_PROCESS, 0, 10);
            Ok(())
        });
    }
}

/// The repository `folder` is in, when it has a commit to start from; `None` for a plain
/// folder, a repository with no commit yet, or a folder inside Finishline's own worktrees.
pub fn repo_of(folder: &Path, worktrees: &Path) -> Option<Repo> {
    if worktrees.canonicalize().is_ok_and(|w| folder.canonicalize().is_ok_and(|f| f.starts_with(&w))) {
        return None;
    }
    // One git for the top, the commit and the branch (it runs before the worktree is added, on
    // the way to the task's first tool); it fails in a repository without a commit.
    let out = git(folder, &["rev-parse", "--show-toplevel", "HEAD^{commit}", "--symbolic-full-name", "HEAD"]).ok()?;
    let mut lines = out.lines().map(str::trim);
    let (top, head, symbolic) = (lines.next()?, lines.next()?.to_string(), lines.next()?);
    if top.is_empty() || head.is_empty() {
        return None;
    }
    let top = PathBuf::from(top).canonicalize().ok()?;
    // Detached, git names HEAD itself.
    let branch = symbolic.strip_prefix("refs/heads/").filter(|b| !b.is_empty()).map(str::to_string);
    let subdir = folder.canonicalize().ok()?.strip_prefix(&top).ok()?.to_string_lossy().into_owned();
    Some(Repo { top, subdir, branch, head })
}

/// `folder` is in a git repository that has no commit yet: a task there has no worktree of its
/// own (there is nothing to start one from), which the person is told.
pub fn no_commit_yet(folder: &Path) -> bool {
    git(folder, &["rev-parse", "--is-inside-work-tree"]).is_ok_and(|o| o.trim() == "true") && !git_ok(folder, &["rev-parse", "-q", "--verify", "HEAD^{commit}"])
}

/// The branches of the person's repository, newest commit first (New Task's base choice).
pub fn branches(repo: &Path) -> Vec<String> {
    git(repo, &["for-each-ref", "--sort=-committerdate", "--format=%(refname:short)", "refs/heads/"])
        .map(|o| o.lines().map(str::to_string).filter(|b| !b.starts_with("finishline/")).collect())
        .unwrap_or_default()
}

/// `finishline/<short id>-<first words of the task>`: readable in `git branch`, unique per task.
pub fn branch_name(session: &str, task: &str) -> String {
    let short: String = session.trim_start_matches("ses_").chars().rev().take(6).collect::<Vec<_>>().into_iter().rev().collect();
    let mut slug = String::new();
    for word in task.split(|c: char| !c.is_ascii_alphanumeric()).filter(|w| !w.is_empty()).take(5) {
        if slug.len() + word.len() > 40 {
            break;
        }
        if !slug.is_empty() {
            slug.push('-');
        }
        slug.push_str(&word.to_ascii_lowercase());
    }
    if slug.is_empty() {
        format!("finishline/{short}")
    } else {
        format!("finishline/{short}-{slug}")
    }
}

/// The branch a task starts from and its commit: `base` (a branch the person picked, refused
/// when it is not there) or where the person is now.
pub fn base_of(repo: &Repo, base: Option<&str>) -> Result<(Option<String>, String)> {
    match base {
        Some(b) => {
            let commit = git(&repo.top, &["rev-parse", "-q", "--verify", &format!("refs/heads/{b}^{{commit}}")])
                .map_err(|_| Error::InvalidInput(format!("there is no branch “{b}” in {}", repo.top.display())))?;
            Ok((Some(b.to_string()), commit.trim().to_string()))
        }
        None => Ok((repo.branch.clone(), repo.head.clone())),
    }
}

/// Plans a task's worktree: its branch and folder, from `base` (a branch the person picked) or
/// where the person is now.
pub fn plan(repo: &Repo, worktrees: &Path, session: &str, task: &str, base: Option<&str>, attempt: u32) -> Result<TaskWorktree> {
    let (base_branch, base_commit) = base_of(repo, base)?;
    let mut branch = branch_name(session, task);
    if attempt > 1 {
        branch.push_str(&format!("-{attempt}"));
    }
    let leaf = repo
        .top
        .file_name()
        .map(|n| n.to_string_lossy().chars().filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_').take(40).collect::<String>())
        .unwrap_or_default();
    let name = format!("{}-{}", if leaf.is_empty() { "repo" } else { &leaf }, branch.trim_start_matches("finishline/"));
    Ok(TaskWorktree {
        repo: repo.top.to_string_lossy().into_owned(),
        folder: worktrees.join(name).to_string_lossy().into_owned(),
        subdir: repo.subdir.clone(),
        branch,
        base_branch,
        base_commit,
    })
}

/// Adds the worktree and its branch without filling it (git writes no file, so this is quick
/// however large the repository): the run goes on at once and [`fill`] checks it out meanwhile.
pub fn add_empty(wt: &TaskWorktree, session: &str) -> Result<()> {
    let repo = Path::new(&wt.repo);
    let folder = Path::new(&wt.folder);
    if let Some(parent) = folder.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let reason = format!("Finishline task {session}");
    // One at a time in a repository: `git worktree add` reads every other worktree's folder in
    // the repository's git directory, and fails on one that another `worktree add` is still
    // writing ("failed to read .git/worktrees/…/commondir"), as when tasks start at once.
    let _one_at_a_time = match common_dir(repo) {
        Some(dir) => Some(crate::workspace::lock::FolderLock::acquire(&dir.join("finishline-worktree-add.lock"))?),
        None => None,
    };
    // Locked, so the person's `git worktree prune` leaves it alone while the task lives.
    let out = git_in(repo)
        .args(["worktree", "add", "--no-checkout", "--no-track", "--lock", "--reason", &reason, "-b", &wt.branch])
        .arg(folder)
        .arg(&wt.base_commit)
        .output()
        .map_err(|e| Error::Worktree(format!("git could not run: {e}")))?;
    if !out.status.success() {
        return Err(Error::Worktree(format!("the task's worktree could not be made in {}: {}", folder.display(), String::from_utf8_lossy(&out.stderr).trim())));
    }
    std::fs::create_dir_all(wt.work_dir())?;
    Ok(())
}

/// The task's worktree folder was removed by hand (not through git) while its work waited: the
/// branch still holds what the task committed, so the worktree is made again from it and filled
/// as a new one is (the files copied in at the start copied again). git's entry for the gone
/// folder (locked, as [`add_empty`] leaves it) is taken over by naming `--force` twice; no other
/// worktree's entry is touched (a prune would drop those of folders on a drive not mounted now).
pub fn restore(wt: &TaskWorktree, session: &str, includes: &[String]) -> Result<()> {
    let repo = Path::new(&wt.repo);
    let folder = Path::new(&wt.folder);
    if folder.exists() {
        return Ok(());
    }
    if let Some(parent) = folder.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let reason = format!("Finishline task {session}");
    let out = git_in(repo)
        .args(["worktree", "add", "--force", "--force", "--no-checkout", "--lock", "--reason", &reason])
        .arg(folder)
        .arg(&wt.branch)
        .output()
        .map_err(|e| Error::Worktree(format!("git could not run: {e}")))?;
    if !out.status.success() {
        return Err(Error::Worktree(format!(
            "the task's worktree {} is gone and could not be made again from its branch {}: {}",
            folder.display(),
            wt.branch,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    fill(wt, includes)?;
    Ok(())
}

/// Checks the task's branch out into its worktree and copies in the untracked files that match
/// the repository's `.worktreeinclude` and `includes`. Returns what it copied.
pub fn fill(wt: &TaskWorktree, includes: &[String]) -> Result<Vec<String>> {
    let (repo, folder) = (Path::new(&wt.repo), Path::new(&wt.folder));
    // One fill of a worktree at a time: a run whose start failed may leave its fill going while
    // the next run of the task starts another.
    let _one_at_a_time = match admin_dir(folder) {
        Some(dir) => Some(crate::workspace::lock::FolderLock::acquire(&dir.join("finishline-fill.lock"))?),
        None => None,
    };
    // Which files to copy is found in the person's checkout (a walk of it) while git fills the
    // worktree, off the way to the task's first tool.
    let (wanted, filled) = crate::beside::beside(|| includes_to_copy(repo, includes), || checkout(folder));
    let wanted = filled.and(wanted)?;
    super::submodules::fill(repo, folder);
    let mut copied = Vec::with_capacity(wanted.len());
    for rel in wanted {
        if copy_into(repo, folder, &rel)? {
            copied.push(rel);
        }
    }
    Ok(copied)
}

/// Copies `rel` from the person's checkout into the worktree, never through a link the
/// worktree holds: the branch the task starts from may have a link where the person's checkout
/// has a folder, and it can lead anywhere. Such a path is not copied (false).
fn copy_into(repo: &Path, folder: &Path, rel: &str) -> Result<bool> {
    let mut at = folder.to_path_buf();
    let parts: Vec<_> = Path::new(rel).components().collect();
    for part in parts.iter().take(parts.len().saturating_sub(1)) {
        at.push(part);
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => return Ok(false),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => std::fs::create_dir(&at)?,
            Err(e) => return Err(e.into()),
        }
    }
    copy_path(&repo.join(rel), &folder.join(rel))
}

/// Where what the task's branch at `commit` lands is counted from: the point where it last
/// took in the branch it lands on (merged in to resolve a conflict, the files that branch gained
/// meanwhile are not the task's), else where the task started.
pub fn lands_from(wt: &TaskWorktree, commit: &str) -> String {
    let repo = Path::new(&wt.repo);
    wt.base_branch
        .as_ref()
        .and_then(|b| git(repo, &["merge-base", &format!("refs/heads/{b}"), commit]).ok())
        .map(|m| m.trim().to_string())
        .filter(|m| !m.is_empty())
        .unwrap_or_else(|| wt.base_commit.clone())
}

/// In a worktree in the middle of a merge (one Finishline started for the agent to resolve), the
/// files git still counts as conflicted whose content holds a whole set of conflict markers.
/// Nothing is read, and no git runs, when no merge is under way.
pub fn unresolved_conflicts(wt: &TaskWorktree) -> Vec<String> {
    let folder = Path::new(&wt.folder);
    if !merging(wt) {
        return vec![];
    }
    let Ok(out) = git(folder, &["diff", "--name-only", "--diff-filter=U", "-z"]) else { return vec![] };
    out.split('\0').filter(|p| !p.is_empty() && holds_markers(&folder.join(p))).map(String::from).collect()
}

/// Whether a merge is under way in the worktree: a look at one file, no git.
pub fn merging(wt: &TaskWorktree) -> bool {
    admin_dir(Path::new(&wt.folder)).is_some_and(|d| d.join("MERGE_HEAD").exists())
}

/// Whether a file holds an opening, a separating and a closing conflict marker, each at the
/// start of a line (a large file is read only so far).
fn holds_markers(path: &Path) -> bool {
    use std::io::Read;
    let mut text = Vec::new();
    // Only a regular file holds markers: a named pipe would hold the read until a writer came.
    if !std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file()) {
        return false;
    }
    let Ok(f) = std::fs::File::open(path) else { return false };
    if f.take(16 << 20).read_to_end(&mut text).is_err() {
        return false;
    }
    let lines: Vec<&[u8]> = text.split(|b| *b == b'\n').map(|l| l.strip_suffix(b"\r").unwrap_or(l)).collect();
    let has = |prefix: &[u8], alone: bool| lines.iter().any(|l| l.starts_with(prefix) && (!alone || l.len() == prefix.len()));
    has(b"<<<<<<<", false) && has(b"=======", true) && has(b">>>>>>>", false)
}

/// A path or a branch as one word of a command the person is told to run (quoted only when it
/// needs to be).
pub(crate) fn shell_word(s: &str) -> String {
    shlex::try_quote(s).map(|q| q.into_owned()).unwrap_or_else(|_| s.to_string())
}

/// Refuses when the worktree is not on the task's branch: an agent (or the person) switched it,
/// and a commit there would land on another branch, perhaps the person's.
pub(crate) fn on_own_branch(wt: &TaskWorktree) -> Result<()> {
    let folder = Path::new(&wt.folder);
    let head = git(folder, &["symbolic-ref", "-q", "HEAD"]).map(|h| h.trim().to_string()).unwrap_or_default();
    if head == format!("refs/heads/{}", wt.branch) {
        return Ok(());
    }
    let on = head.strip_prefix("refs/heads/").map(|b| format!("the branch {b}")).unwrap_or_else(|| "a detached HEAD".into());
    // In the middle of a rebase git refuses a switch: finishing or aborting it is the way back.
    let rebasing = admin_dir(folder).is_some_and(|d| d.join("rebase-merge").exists() || d.join("rebase-apply").exists());
    let way_back = if rebasing {
        "a rebase is under way there: `git rebase --continue` or `git rebase --abort` in it puts it back".to_string()
    } else if git_ok(folder, &["rev-parse", "-q", "--verify", &format!("refs/heads/{}", wt.branch)]) {
        format!("`git switch {}` there puts it back", wt.branch)
    } else {
        // The person deleted the branch too: switching to it would fail; making it again where
        // the worktree is keeps whatever it holds.
        format!(
            "the branch no longer exists, and `git -C {} switch -c {}` makes it again where the worktree is",
            shell_word(&wt.folder),
            shell_word(&wt.branch)
        )
    };
    Err(Error::Worktree(format!(
        "the task's worktree {} is on {on} instead of the task's branch {}, so nothing of the task was committed: {way_back}",
        wt.folder, wt.branch
    )))
}

/// The repository's own git directory (the one its worktrees share), read from the files git
/// keeps rather than asked of git.
pub(crate) fn common_dir(repo: &Path) -> Option<PathBuf> {
    let dot_git = repo.join(".git");
    if dot_git.is_dir() {
        return Some(dot_git);
    }
    objects_dir(repo)?.parent().map(Path::to_path_buf)
}

/// The worktree's own folder in the repository's git directory (`.git/worktrees/<name>`), which
/// the `.git` file at its top names; it goes when the worktree does.
/// A rebase of the task's own branch left under way in its worktree (Finishline's catch-up cut
/// short by a crash) is undone: the branch goes back to where it was, and the landing starts over.
/// Any other rebase there is the person's, and left for them.
pub(crate) fn abort_own_rebase(wt: &TaskWorktree) {
    let folder = Path::new(&wt.folder);
    let Some(admin) = admin_dir(folder) else { return };
    let own = format!("refs/heads/{}", wt.branch);
    let rebasing_own = ["rebase-merge", "rebase-apply"].iter().any(|d| std::fs::read_to_string(admin.join(d).join("head-name")).is_ok_and(|h| h.trim() == own));
    if rebasing_own {
        let _ = git_ok(folder, &["rebase", "--abort"]);
    }
}

fn admin_dir(folder: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(folder.join(".git")).ok()?;
    let dir = PathBuf::from(text.strip_prefix("gitdir:")?.trim());
    Some(if dir.is_relative() { folder.join(dir) } else { dir })
}

/// Fills an empty worktree with its branch's files.
fn checkout(folder: &Path) -> Result<()> {
    let mut cmd = git_in(folder);
    // Parallel checkout, a worker per core (git 2.32 and later; older ones ignore the setting):
    // creating 30,000 files from one process took 18-20 s here, nearly all of it in the kernel's
    // file creation, against under a second from two workers (docs/benchmarks.md, section 10).
    // The branch's bytes as committed, whatever the person's `core.autocrlf`: the task's
    // checkpoints start from this worktree's index and compare bytes, so files converted to CRLF
    // on checkout all looked changed by the task. Their own checkout gets their line endings
    // when the task lands.
    cmd.args(["-c", "checkout.workers=0", "-c", "core.autocrlf=false", "reset", "--hard", "--quiet"]);
    in_background(&mut cmd);
    let out = cmd.output().map_err(|e| Error::Worktree(format!("git could not run: {e}")))?;
    if !out.status.success() {
        return Err(Error::Worktree(format!(
            "the task's worktree could not be filled in {}: {}",
            folder.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(())
}

/// The untracked files of the person's checkout that the include patterns name (a folder whole
/// when it matches), sorted.
fn includes_to_copy(repo: &Path, includes: &[String]) -> Result<Vec<String>> {
    let mut patterns: Vec<String> = includes.to_vec();
    if let Ok(text) = std::fs::read_to_string(repo.join(INCLUDE_FILE)) {
        patterns.extend(text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).map(String::from));
    }
    if patterns.iter().all(|p| p.starts_with('!')) {
        return Ok(vec![]);
    }
    let mut builder = ignore::gitignore::GitignoreBuilder::new(repo);
    for p in &patterns {
        builder.add_line(None, p).map_err(|e| Error::InvalidInput(format!("“{p}” in the worktree includes is not a gitignore pattern: {e}")))?;
    }
    let matcher = builder.build().map_err(|e| Error::Worktree(e.to_string()))?;
    // Untracked files, ignored or not (no exclude rules given), in one walk; whole untracked
    // folders come as one entry.
    let listed = git(repo, &["ls-files", "-z", "--others", "--directory"])?;
    let mut wanted = Vec::new();
    for entry in listed.split('\0').filter(|e| !e.is_empty()) {
        let is_dir = entry.ends_with('/');
        let rel = entry.trim_end_matches('/');
        if matcher.matched_path_or_any_parents(rel, is_dir).is_ignore() {
            wanted.push(rel.to_string());
        } else if is_dir
            && !crate::workspace::checkpoint::DEFAULT_EXCLUDES
                .iter()
                .any(|d| Path::new(rel).file_name().is_some_and(|n| n.to_string_lossy() == d.trim_end_matches('/')))
        {
            // A folder git lists whole may hold a match deeper down (`config/local.json`).
            for e in ignore::WalkBuilder::new(repo.join(rel)).hidden(false).git_ignore(false).git_exclude(false).ignore(false).parents(false).build().flatten()
            {
                let Ok(inner) = e.path().strip_prefix(repo) else { continue };
                let inner = inner.to_string_lossy().into_owned();
                if e.file_type().is_some_and(|t| !t.is_dir()) && matcher.matched_path_or_any_parents(&inner, false).is_ignore() {
                    wanted.push(inner);
                }
            }
        }
    }
    wanted.sort();
    wanted.dedup();
    Ok(wanted)
}

/// Copies a file, a link (as a link) or a folder, keeping modes, into a folder whose parents
/// are real folders ([`copy_into`]). A link already at `to` is not written through: it is left,
/// and the copy says so (false; a folder is copied when it is made or was there).
fn copy_path(from: &Path, to: &Path) -> Result<bool> {
    let meta = std::fs::symlink_metadata(from)?;
    // A named pipe (a secrets manager's `.env`), a socket or a device is not copied: reading a
    // pipe waits for its writer, perhaps for ever, and would put what it serves on the disk.
    if super::ownership::holds_no_file(&meta) {
        return Ok(false);
    }
    let there = std::fs::symlink_metadata(to).ok();
    if there.as_ref().is_some_and(|t| t.file_type().is_symlink()) {
        return Ok(false);
    }
    if meta.file_type().is_symlink() {
        let target = std::fs::read_link(from)?;
        if there.is_some() {
            return Ok(false);
        }
        std::os::unix::fs::symlink(target, to)?;
    } else if meta.is_dir() {
        if there.as_ref().is_some_and(|t| !t.is_dir()) {
            return Ok(false);
        }
        if there.is_none() {
            std::fs::create_dir(to)?;
        }
        // Listed as copied even when a link inside was left: what it holds is the person's.
        for e in std::fs::read_dir(from)?.flatten() {
            copy_path(&e.path(), &to.join(e.file_name()))?;
        }
    } else {
        if there.as_ref().is_some_and(|t| t.is_dir()) {
            return Ok(false);
        }
        std::fs::copy(from, to)?;
    }
    Ok(true)
}

/// What in the worktree differs from the task's last commit: staged, changed, deleted or new
/// (ignored files aside; a new folder as `dir/`). One git: untracked folders are listed whole
/// (`normal`), the mode git's untracked cache serves, and the status keeps that cache in the
/// worktree's index, so the next look (at landing) reads no folder of the checkout again.
pub fn changed_paths(wt: &TaskWorktree) -> Result<Vec<String>> {
    // A submodule whose files changed is not listed (the branch cannot carry that, and git would
    // read every file of it on each look); one now at another commit is.
    status_paths(Path::new(&wt.folder), true)
}

/// `git status` in `dir`, each entry's path. `cache`: git keeps its untracked cache in the
/// index, which a worktree of ours may have and the person's own checkout should not get.
fn status_paths(dir: &Path, cache: bool) -> Result<Vec<String>> {
    // In the person's checkout git writes nothing (`--no-optional-locks`): a status that
    // refreshed their index would hold its lock, and their own `git commit` at that moment fail.
    let mut args = if cache { vec!["-c", "core.untrackedCache=true"] } else { vec!["--no-optional-locks"] };
    args.extend(["status", "--porcelain=v1", "-z", "--untracked-files=normal", "--no-renames", "--ignore-submodules=dirty"]);
    let out = git(dir, &args)?;
    Ok(out.split('\0').filter(|e| e.len() > 3).map(|e| e[3..].to_string()).collect())
}

/// What in the person's checkout is not in its last commit (edited, staged, deleted or new;
/// ignored files aside; a new folder as `dir/`): a task's new worktree starts from the commit,
/// so New Task says it will not see these.
pub fn uncommitted(top: &Path) -> Result<Vec<String>> {
    status_paths(top, false)
}

/// What git is in the middle of that detached the checkout's HEAD ("a rebase of main", "a
/// bisect"): New Task says so beside "on no branch", where a task's approve keeps its branch.
pub fn under_way(top: &Path) -> Option<String> {
    let dir = top.join(git(top, &["rev-parse", "--git-dir"]).ok()?.trim());
    if let Some(head) = rebase_head(&dir) {
        return Some(head.strip_prefix("refs/heads/").map_or_else(|| "a rebase".to_string(), |b| format!("a rebase of {b}")));
    }
    dir.join("BISECT_START").exists().then(|| "a bisect".to_string())
}

/// The branch a rebase in the checkout is rebasing: New Task does not offer it to land on until
/// the rebase is over (a landing there is refused, `landing::in_use`).
pub fn rebasing(top: &Path) -> Option<String> {
    let dir = top.join(git(top, &["rev-parse", "--git-dir"]).ok()?.trim());
    rebase_head(&dir)?.strip_prefix("refs/heads/").map(str::to_string)
}

/// What a rebase under way in a checkout's git folder started from (`refs/heads/main`).
fn rebase_head(git_dir: &Path) -> Option<String> {
    let read = |file: &str| std::fs::read_to_string(git_dir.join(file)).ok().map(|s| s.trim().to_string());
    read("rebase-merge/head-name").or_else(|| read("rebase-apply/head-name"))
}

/// The files that differ between two commits of the repository.
pub fn changed_between(wt: &TaskWorktree, from: &str, to: &str) -> Result<Vec<String>> {
    let out = git(Path::new(&wt.repo), &["diff", "--name-only", "--no-renames", "-z", from, to])?;
    Ok(out.split('\0').filter(|f| !f.is_empty()).map(str::to_string).collect())
}

/// Nothing in the worktree differs from the task's last commit.
pub fn untouched(wt: &TaskWorktree) -> Result<bool> {
    Ok(changed_paths(wt)?.is_empty())
}

/// Stages exactly `paths` (as [`changed_paths`] lists them), or everything when git will not
/// take the list (a path gone meanwhile).
///
/// `--sparse`: a worktree of a sparse checkout is sparse too (git copies the person's patterns),
/// and without it git refuses a file the task wrote outside them. A git before 2.34 knows no
/// `--sparse` (nor copies sparse patterns to a worktree): the last try goes without it.
fn add_paths(folder: &Path, paths: &[String]) -> Result<()> {
    // A pipe, a socket or a device where a file was: git cannot add one (the whole `add` stops at
    // it), and the review showed the file gone, so its removal is what is staged.
    let (gone, paths): (Vec<String>, Vec<String>) =
        paths.iter().cloned().partition(|p| std::fs::symlink_metadata(folder.join(p)).is_ok_and(|m| super::ownership::holds_no_file(&m)));
    if !gone.is_empty() {
        let mut cmd = git_in(folder);
        cmd.args(["update-index", "--force-remove", "-z", "--stdin"]);
        let out = git_with_input(cmd, (gone.join("\0") + "\0").as_bytes()).map_err(|e| Error::Worktree(format!("git could not run: {e}")))?;
        if !out.status.success() {
            return Err(Error::Worktree(format!("git could not record {} as gone: {}", gone.join(", "), String::from_utf8_lossy(&out.stderr).trim())));
        }
    }
    if paths.is_empty() {
        return Ok(());
    }
    let mut cmd = git_in(folder);
    cmd.env("GIT_LITERAL_PATHSPECS", "1").args(["add", "--all", "--sparse", "--pathspec-from-file=-", "--pathspec-file-nul"]);
    let out = git_with_input(cmd, paths.join("\0").as_bytes()).map_err(|e| Error::Worktree(format!("git could not run: {e}")))?;
    if !out.status.success() && !git_ok(folder, &["add", "--all", "--sparse"]) {
        git(folder, &["add", "--all"])?;
    }
    Ok(())
}

/// Commits everything in the worktree to the task's branch, except the files copied in at
/// its start (local configuration and secrets stay out of the person's history). `None` when
/// nothing changed since the last commit.
pub fn commit_all(wt: &TaskWorktree, message: &str, copied: &[String]) -> Result<Option<String>> {
    let folder = Path::new(&wt.folder);
    on_own_branch(wt)?;
    // One status says what changed and only that is added: no second walk of the checkout.
    let mut changed = changed_paths(wt)?;
    // A branch leaves submodules as they are (`submodules::keep_links`): nothing in or of one is
    // staged.
    let submodules = super::submodules::base_paths(wt);
    changed.retain(|p| !super::submodules::within(p, &submodules));
    if !changed.is_empty() {
        add_paths(folder, &changed)?;
    }
    // Also what the agent staged or committed itself.
    let links_put_back = super::submodules::keep_links(wt, &submodules)?;
    // A merge (`resolve_conflict`'s) is concluded even when its result is the task's own tree:
    // an agent that resolves by keeping its version changes nothing, and left uncommitted the
    // merge would be lost and the same conflict met again at the next landing.
    let merging = git_ok(folder, &["rev-parse", "-q", "--verify", "MERGE_HEAD"]);
    if changed.is_empty() && !links_put_back && !merging {
        return Ok(None);
    }
    if !copied.is_empty() {
        // Back out of the index as they are in the branch (for files new to it: not there).
        // Names, not patterns: `config[1].json` would also unstage the task's `config1.json`.
        let mut args: Vec<&str> = vec!["--literal-pathspecs", "reset", "--quiet", "--"];
        args.extend(copied.iter().map(String::as_str));
        git(folder, &args)?;
    }
    if !merging && git_ok(folder, &["diff", "--cached", "--quiet"]) {
        return Ok(None);
    }
    if merging && !keeps_their_side(folder) {
        // Concluded, the merge would record the person's branch as taken in while undoing some
        // of it, and landing would carry that undoing onto their branch: it stays open, and the
        // next landing meets the conflict again rather than reverting their work.
        return Ok(None);
    }
    let mut cmd = git_in(folder);
    cmd.args(identity_args(folder)).args(["commit", "--quiet", "--no-verify", "-F", "-"]);
    let out = git_with_input(cmd, message.as_bytes()).map_err(|e| Error::Worktree(format!("git could not run: {e}")))?;
    if !out.status.success() {
        return Err(Error::Worktree(format!("the task's changes could not be committed: {}", String::from_utf8_lossy(&out.stderr).trim())));
    }
    Ok(Some(git(folder, &["rev-parse", "HEAD"])?.trim().to_string()))
}

/// The merge in progress keeps every file only the merged branch changed as that branch has it
/// (a file both sides changed is the resolution's to choose).
fn keeps_their_side(folder: &Path) -> bool {
    let names = |args: &[&str]| -> Option<std::collections::HashSet<String>> {
        git(folder, args).ok().map(|o| o.split('\0').filter(|p| !p.is_empty()).map(str::to_string).collect())
    };
    let Some(base) = git(folder, &["merge-base", "HEAD", "MERGE_HEAD"]).ok().map(|b| b.trim().to_string()) else { return false };
    let theirs = names(&["diff", "--name-only", "--no-renames", "-z", &base, "MERGE_HEAD", "--"]);
    let ours = names(&["diff", "--name-only", "--no-renames", "-z", &base, "HEAD", "--"]);
    // What the merge would record differs from their branch in these files.
    let differ = names(&["diff", "--cached", "--name-only", "--no-renames", "-z", "MERGE_HEAD", "--"]);
    let (Some(theirs), Some(ours), Some(differ)) = (theirs, ours, differ) else { return false };
    !differ.iter().any(|p| theirs.contains(p) && !ours.contains(p))
}

/// Removes the worktree (and the branch, when `delete_branch`). A worktree whose repository is
/// gone is removed as a folder. Returns whether the branch is gone (deleted, or already gone).
pub fn remove(wt: &TaskWorktree, delete_branch: bool) -> Result<bool> {
    let repo = Path::new(&wt.repo);
    let folder = Path::new(&wt.folder);
    if repo.join(".git").exists() {
        // The checkout goes first, outside the lock below: deleting a large one takes long, and
        // a task starting in the repository waits for that lock. The worktree's own git folder
        // stays whole meanwhile, as an add reading it expects.
        let deleted = if folder.exists() { std::fs::remove_dir_all(folder) } else { Ok(()) };
        // Under the lock `add_empty` takes: the prune removed the git folder of a worktree
        // another task was adding that moment ("could not open .git/worktrees/…/gitdir"), and
        // that task failed to start.
        let _one_at_a_time = match common_dir(repo) {
            Some(dir) => Some(crate::workspace::lock::FolderLock::acquire(&dir.join("finishline-worktree-add.lock"))?),
            None => None,
        };
        // Twice forced: the worktree is locked. Git forgets it, and deletes what a failed delete
        // above left where it can.
        // Never `git worktree prune`: it forgets every worktree whose folder is not there, the
        // person's own on a drive not mounted now among them (with what they staged there).
        let forgotten = git_ok(repo, &["worktree", "remove", "--force", "--force", &wt.folder]);
        if !forgotten {
            // Something in it cannot be deleted: unlocked, so a removal tried again (Settings →
            // Tasks → Storage, a sweep that retries) or the person's own prune forgets it once it
            // is gone, instead of the person's repository keeping a locked worktree for good.
            let _ = git_ok(repo, &["worktree", "unlock", &wt.folder]);
        }
        if let Err(e) = deleted {
            if folder.exists() {
                return Err(e.into());
            }
        }
        if !delete_branch {
            return Ok(false);
        }
        // A branch the person deleted themselves is gone as well: History must not name it kept.
        let exists = git_ok(repo, &["rev-parse", "-q", "--verify", &format!("refs/heads/{}", wt.branch)]);
        return Ok(!exists || git_ok(repo, &["branch", "-D", &wt.branch]));
    }
    if folder.exists() {
        std::fs::remove_dir_all(folder)?;
    }
    // The repository is gone, and its branches with it.
    Ok(delete_branch)
}

/// Makes `folder` a git repository with one commit of everything in it (its ignore files
/// honoured), so tasks can work side by side in worktrees of it. A folder that is already in a
/// repository with a commit is left as it is.
pub fn make_repository(folder: &Path) -> Result<()> {
    if !folder.is_dir() {
        return Err(Error::InvalidInput(format!("{} is not a folder", folder.display())));
    }
    if git_ok(folder, &["rev-parse", "-q", "--verify", "HEAD^{commit}"]) {
        return Ok(());
    }
    if !folder.join(".git").exists() {
        git(folder, &["init", "--quiet"])?;
    }
    git(folder, &["add", "--all"])?;
    let mut cmd = git_in(folder);
    cmd.args(identity_args(folder)).args([
        "commit",
        "--quiet",
        "--allow-empty",
        "--no-verify",
        "-m",
        "Start of the project (made by Finishline so tasks can work side by side)",
    ]);
    let out = cmd.output().map_err(|e| Error::Worktree(format!("git could not run: {e}")))?;
    if !out.status.success() {
        return Err(Error::Worktree(format!("the first commit could not be made: {}", String::from_utf8_lossy(&out.stderr).trim())));
    }
    Ok(())
}

/// The index of a task's worktree: in the worktree's own git folder, read from the `.git` file
/// git writes at its top (no git process on the way to the task's first tool); git is asked
/// when that is not there.
pub fn index_file(folder: &Path) -> Option<PathBuf> {
    if let Some(dir) = admin_dir(folder).filter(|d| d.is_dir()) {
        return Some(dir.join("index"));
    }
    let p = git(folder, &["rev-parse", "--path-format=absolute", "--git-path", "index"]).ok()?;
    Some(PathBuf::from(p.trim()))
}

/// The object folder of the repository `folder` (a task's worktree) belongs to, which its
/// checkpoint store borrows: from the `commondir` file in the worktree's own git folder, else as
/// git says.
pub fn objects_dir(folder: &Path) -> Option<PathBuf> {
    let common = admin_dir(folder).and_then(|dir| {
        let named = std::fs::read_to_string(dir.join("commondir")).ok()?;
        std::fs::canonicalize(dir.join(named.trim())).ok()
    });
    let common = match common {
        Some(c) => c,
        None => PathBuf::from(git(folder, &["rev-parse", "--path-format=absolute", "--git-common-dir"]).ok()?.trim()),
    };
    Some(common.join("objects"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Finishline's git has no terminal to stop at (a prompt from a background process group
    /// stops the process unseen): it runs in a session of its own.
    #[test]
    fn finishlines_git_runs_in_a_session_of_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let out = git_in(dir.path()).args(["-c", "alias.sid=!cut -d' ' -f6 /proc/$$/stat", "sid"]).output().unwrap();
        let sid: i32 = String::from_utf8_lossy(&out.stdout).trim().parse().expect("git printed its session");
        // SAFETY: getsid(0) only reads.
        assert_ne!(sid, unsafe { libc::getsid(0) }, "not the session of the process that started it");
    }

    /// The person's own way to reach a remote over ssh (a key for work, a proxy) is the one git
    /// uses for Finishline too: an LFS fetch as a worktree fills goes through it.
    #[test]
    fn the_persons_ssh_command_is_the_one_finishlines_git_uses() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path();
        git(f, &["init", "-q", "-b", "main"]).unwrap();
        let marker = f.join("their-ssh-ran");
        git(f, &["config", "core.sshCommand", &format!("touch {} && false", marker.display())]).unwrap();
        let _ =
            git_in(f).args(["ls-remote", "ssh://example.invalid/repo.git"]).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null()).status();
        assert!(marker.exists(), "git ran the person's core.sshCommand");
    }

    #[test]
    fn committing_takes_every_kind_of_change_and_only_those() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path();
        git(f, &["init", "-q", "-b", "main"]).unwrap();
        std::fs::write(f.join(".gitignore"), "secret.env\n").unwrap();
        std::fs::write(f.join("gone.txt"), "bye\n").unwrap();
        std::fs::write(f.join("kept.txt"), "same\n").unwrap();
        std::fs::write(f.join("edited.txt"), "before\n").unwrap();
        make_repository(f).unwrap();
        let wt = TaskWorktree {
            repo: f.display().to_string(),
            folder: f.display().to_string(),
            subdir: String::new(),
            branch: "main".into(),
            base_branch: Some("main".into()),
            base_commit: git(f, &["rev-parse", "HEAD"]).unwrap().trim().into(),
        };
        assert!(untouched(&wt).unwrap());
        assert_eq!(commit_all(&wt, "nothing", &[]).unwrap(), None, "no empty commit");
        std::fs::remove_file(f.join("gone.txt")).unwrap();
        std::fs::write(f.join("edited.txt"), "after\n").unwrap();
        std::fs::create_dir_all(f.join("new folder/deeper")).unwrap();
        std::fs::write(f.join("new folder/deeper/ünï côde.txt"), "new\n").unwrap();
        std::fs::write(f.join("secret.env"), "TOKEN=1\n").unwrap();
        assert!(!untouched(&wt).unwrap());
        assert!(commit_all(&wt, "all of it", &[]).unwrap().is_some());
        let changed = git(f, &["-c", "core.quotePath=false", "show", "--name-status", "--format=", "HEAD"]).unwrap();
        assert_eq!(changed.lines().collect::<Vec<_>>(), vec!["M\tedited.txt", "D\tgone.txt", "A\tnew folder/deeper/ünï côde.txt"]);
        assert!(untouched(&wt).unwrap(), "the ignored file stays out and counts as nothing");
    }

    #[test]
    fn a_repository_is_found_from_a_subfolder_with_its_branch_and_not_before_its_first_commit() {
        let dir = tempfile::tempdir().unwrap();
        let (repo, worktrees) = (dir.path().join("repo"), dir.path().join("data/worktrees"));
        std::fs::create_dir_all(repo.join("sub")).unwrap();
        git(&repo, &["init", "-q", "-b", "main"]).unwrap();
        // A file named like the revision asked for.
        std::fs::write(repo.join("HEAD"), "not a revision\n").unwrap();
        assert!(repo_of(&repo.join("sub"), &worktrees).is_none(), "no commit yet: nothing to branch from");
        make_repository(&repo).unwrap();
        let head = git(&repo, &["rev-parse", "HEAD"]).unwrap().trim().to_string();
        let found = repo_of(&repo.join("sub"), &worktrees).expect("a repository");
        assert_eq!(
            (found.top, found.subdir.as_str(), found.branch.as_deref(), found.head.as_str()),
            (repo.canonicalize().unwrap(), "sub", Some("main"), head.as_str())
        );
        git(&repo, &["checkout", "-q", "--detach"]).unwrap();
        assert_eq!(repo_of(&repo, &worktrees).unwrap().branch, None, "a detached HEAD is on no branch");
    }

    #[test]
    fn a_rebase_or_bisect_that_detached_the_checkout_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path();
        git(f, &["init", "-q", "-b", "main"]).unwrap();
        std::fs::write(f.join("a.txt"), "one\n").unwrap();
        make_repository(f).unwrap();
        assert_eq!(under_way(f), None, "on a branch, nothing under way");
        let commit = |text: &str| {
            std::fs::write(f.join("a.txt"), text).unwrap();
            git(f, &["-c", "user.name=p", "-c", "user.email=p@x", "commit", "-qam", text]).unwrap();
        };
        git(f, &["checkout", "-q", "-b", "side"]).unwrap();
        commit("side\n");
        git(f, &["checkout", "-q", "main"]).unwrap();
        commit("main\n");
        // Stops at the conflict with HEAD detached, as the person would meet it.
        assert!(git(f, &["-c", "user.name=p", "-c", "user.email=p@x", "rebase", "side"]).is_err());
        assert_eq!(repo_of(f, &f.join("none")).unwrap().branch, None);
        assert_eq!(under_way(f).as_deref(), Some("a rebase of main"));
        assert_eq!(rebasing(f).as_deref(), Some("main"));
        git(f, &["rebase", "--abort"]).unwrap();
        assert_eq!((under_way(f), rebasing(f)), (None, None));
        git(f, &["bisect", "start"]).unwrap();
        assert_eq!(under_way(f).as_deref(), Some("a bisect"));
    }

    #[test]
    fn the_persons_uncommitted_edits_are_named_since_a_new_worktree_starts_without_them() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path();
        git(f, &["init", "-q", "-b", "main"]).unwrap();
        std::fs::write(f.join(".gitignore"), "local.env\n").unwrap();
        std::fs::write(f.join("app.py"), "v1\n").unwrap();
        make_repository(f).unwrap();
        assert_eq!(uncommitted(f).unwrap(), Vec::<String>::new(), "a clean checkout has none");
        std::fs::write(f.join("app.py"), "v2\n").unwrap();
        std::fs::create_dir_all(f.join("notes")).unwrap();
        std::fs::write(f.join("notes/todo é.md"), "x\n").unwrap();
        std::fs::write(f.join("local.env"), "KEY=1\n").unwrap();
        assert_eq!(uncommitted(f).unwrap(), vec!["app.py".to_string(), "notes/".to_string()], "edited and new, not what git ignores");
        // Looking writes nothing of the person's: a file rewritten with the same text would have
        // a plain `git status` refresh (and lock) their index.
        git(f, &["add", "-A"]).unwrap();
        git(f, &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "more"]).unwrap();
        let index = f.join(".git/index");
        let before = std::fs::metadata(&index).unwrap().modified().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(1100));
        std::fs::write(f.join("app.py"), "v2\n").unwrap();
        assert_eq!(uncommitted(f).unwrap(), Vec::<String>::new());
        assert_eq!(std::fs::metadata(&index).unwrap().modified().unwrap(), before, "the index is left as it was");
    }

    /// A repository of `files` (path, text) in a temporary folder, and a task's worktree of it,
    /// added but not filled.
    fn empty_worktree(files: &[(String, String)], task: &str) -> (tempfile::TempDir, TaskWorktree) {
        let dir = tempfile::tempdir().unwrap();
        let (repo, data) = (dir.path().join("repo"), dir.path().join("data"));
        std::fs::create_dir_all(&repo).unwrap();
        git(&repo, &["init", "-q", "-b", "main"]).unwrap();
        for (path, text) in files {
            std::fs::create_dir_all(repo.join(path).parent().unwrap()).unwrap();
            std::fs::write(repo.join(path), text).unwrap();
        }
        make_repository(&repo).unwrap();
        let found = repo_of(&repo, &data.join("worktrees")).unwrap();
        let wt = plan(&found, &data.join("worktrees"), "ses_0192abcdef123456", task, None, 1).unwrap();
        add_empty(&wt, "ses_0192abcdef123456").unwrap();
        (dir, wt)
    }

    #[test]
    fn tasks_started_at_once_in_one_repository_each_get_their_worktree() {
        let (dir, first) = empty_worktree(&[("a.txt".into(), "a\n".into())], "first");
        let found = repo_of(Path::new(&first.repo), &dir.path().join("data/worktrees")).unwrap();
        for round in 0..24 {
            let plans: Vec<TaskWorktree> = (0..8)
                .map(|i| {
                    plan(&found, &dir.path().join("data/worktrees"), &format!("ses_{round}{i:02}0000000000000"), &format!("task {round} {i}"), None, 1).unwrap()
                })
                .collect();
            let added: Vec<Result<()>> = std::thread::scope(|s| {
                let handles: Vec<_> = plans.iter().map(|wt| s.spawn(move || add_empty(wt, "s"))).collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect()
            });
            for (wt, r) in plans.iter().zip(added) {
                assert!(r.is_ok(), "round {round}, {}: {r:?}", wt.branch);
            }
        }
    }

    #[test]
    fn two_fills_of_one_worktree_at_once_take_turns_and_both_succeed() {
        let mut files: Vec<(String, String)> = (0..2_000).map(|i| (format!("src/f{i}.txt"), format!("{i}\n"))).collect();
        files.extend([(".env".into(), "TOKEN=1\n".into()), (".gitignore".into(), ".env\n".into())]);
        let (_dir, wt) = empty_worktree(&files, "fill twice");
        // A run whose start failed left its fill going while the task's next run starts one.
        let includes = vec![".env".to_string()];
        let (a, b) = std::thread::scope(|s| {
            let a = s.spawn(|| fill(&wt, &includes));
            let b = s.spawn(|| fill(&wt, &includes));
            (a.join().unwrap(), b.join().unwrap())
        });
        assert_eq!((a.unwrap(), b.unwrap()), (vec![".env".to_string()], vec![".env".to_string()]));
        assert_eq!(std::fs::read_to_string(Path::new(&wt.folder).join("src/f1999.txt")).unwrap(), "1999\n");
        assert!(untouched(&wt).unwrap(), "the worktree is its branch, the copied file aside");
    }

    #[test]
    fn a_worktrees_index_and_objects_are_where_git_says_they_are() {
        let (_dir, wt) = empty_worktree(&[("a.txt".into(), "a\n".into())], "where");
        let folder = Path::new(&wt.folder);
        let asked = |args: &[&str]| PathBuf::from(git(folder, args).unwrap().trim()).canonicalize().unwrap();
        fill(&wt, &[]).unwrap();
        assert_eq!(index_file(folder).unwrap().canonicalize().unwrap(), asked(&["rev-parse", "--path-format=absolute", "--git-path", "index"]));
        assert_eq!(objects_dir(folder).unwrap(), asked(&["rev-parse", "--path-format=absolute", "--git-common-dir"]).join("objects"));
    }

    #[test]
    fn a_list_naming_a_path_gone_meanwhile_stages_everything_instead() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path();
        git(f, &["init", "-q", "-b", "main"]).unwrap();
        std::fs::write(f.join("new.txt"), "new\n").unwrap();
        add_paths(f, &["vanished.txt".into()]).unwrap();
        assert_eq!(git(f, &["diff", "--cached", "--name-only"]).unwrap(), "new.txt\n", "git refused the list, and everything was added");
    }

    #[test]
    fn a_branch_name_is_readable_and_names_the_task() {
        assert_eq!(branch_name("ses_0192abcdef123456", "Fix the failing test in parser.rs!"), "finishline/123456-fix-the-failing-test-in");
        assert_eq!(branch_name("ses_0192abcdef123456", "¿¡!"), "finishline/123456");
    }
}
