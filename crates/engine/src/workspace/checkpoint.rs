//! Checkpoints of the workspace in a shadow git repository kept in the app's data folder (the
//! idea Cline uses). Every change is captured, whichever tool made it, the shell and MCP servers
//! included, because snapshots read the files themselves. The workspace's ignore files are
//! respected. The review's diffs and Reject's revert come from here.
//!
//! One shadow repository per workspace holds the objects of every session in it, so a tenth task
//! in a repository adds only the files that changed, not another copy of the repository. Its one
//! index is shared too: an index only caches the workspace as it is now, so whichever session
//! wrote it last, `git add --all` re-reads only files whose size or time changed. Each session
//! has its own refs, `refs/finishline/<session>/…`, and commits are made with plumbing, so
//! sessions running side by side never move each other's refs. The workspace's own `.git`
//! (index, hooks, config) is never touched.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde::Serialize;

use crate::error::{Error, Result};
use crate::workspace::ownership::{holds_no_file, FileState, OwnedChange, RawChange};

#[derive(Debug, Clone)]
pub struct Checkpoints {
    git_dir: PathBuf,
    work_tree: PathBuf,
    /// Files larger than this are not copied into checkpoints (and so not restored by revert).
    max_file: u64,
    /// Whether this is a workspace's shared store (`false`: a store of one session, as sessions
    /// made before stores were shared have).
    shared: bool,
    /// Where this session's refs live: `refs/finishline/<session>/` (or `refs/finishline/`).
    refs: String,
    /// Finishline's own data folder, relative to the work tree, when it is inside it: never
    /// shown, judged or undone as a task's change (see [`Checkpoints::leave_out_own_data`]).
    own_data: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    Created,
    Modified,
    Deleted,
}

/// Lines added and removed in a unified diff (a file's, or several files'): only the hunks'
/// lines count, so a removed line reading `-- a comment` is a line, not a file header.
pub fn line_counts(diff: &str) -> (usize, usize) {
    let (mut added, mut removed, mut in_hunk) = (0, 0, false);
    for l in diff.lines() {
        if l.starts_with("@@") {
            in_hunk = true;
        } else if l.starts_with("diff ") {
            in_hunk = false;
        } else if in_hunk && l.starts_with('+') {
            added += 1;
        } else if in_hunk && l.starts_with('-') {
            removed += 1;
        }
    }
    (added, removed)
}

#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct FileChange {
    pub path: String,
    pub kind: ChangeKind,
    /// A unified diff, capped in size; binary files say so.
    pub diff: String,
    /// The file as the run found it and as it left it, which revert compares with the file now.
    /// Absent in reviews recorded before runs owned their changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<FileState>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<FileState>,
    /// See [`OwnedChange::unattributed`]: a revert keeps a copy of what it replaces.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unattributed: bool,
    /// See [`OwnedChange::edited_between`]: a revert asks first.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub edited_between: bool,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct RevertReport {
    pub restored: Vec<String>,
    pub deleted: Vec<String>,
    /// Files the person edited after the agent's last change, kept as they are: all of them
    /// when the revert stopped to ask (`applied` false), else those not overwritten.
    pub conflicts: Vec<String>,
    /// The person's version of each file they allowed to be overwritten, kept.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub copies: Vec<OverwrittenCopy>,
    /// Files the person said to overwrite that were left (they are in `conflicts` too), because
    /// their version could not be copied first; the reason says what stopped the copy.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_copied: Vec<NotCopied>,
    pub applied: bool,
}

/// A file the person said a revert may overwrite, left as it is because no copy of their version
/// could be kept first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct NotCopied {
    pub path: String,
    /// What stopped the copy (a folder there now, a full disk).
    pub reason: String,
}

/// A file of the person's that a revert overwrote because they said so, and where their version
/// is kept: a "yes" to overwrite is not a "yes" to lose it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct OverwrittenCopy {
    pub path: String,
    /// Where the copy is, in the app's data folder.
    pub copy: String,
    /// Kept because the file changed while a command or an external agent ran (the person's
    /// edit may be in it), not because the person said to overwrite their version.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unattributed: bool,
}

const MAX_DIFF: usize = 64 * 1024;
/// How long one file's line diff may look for the smallest answer.
const DIFF_DEADLINE: std::time::Duration = std::time::Duration::from_secs(1);

/// Settings of the person's own (global) git config that would make the store look away from
/// files: `core.ignoreStat` marks every added entry assume-unchanged, and an fsmonitor answers
/// for the person's repository, not for the store.
const STORE_CONFIG: &[&str] = &["-c", "core.ignoreStat=false", "-c", "core.fsmonitor=false"];

/// `path` quoted as git reads a path given one per line (`--stdin-paths`, `--index-info`): a
/// line that starts with `"` is unquoted, so a name that itself starts with one (`"q.txt"`) was
/// read as another file (`q.txt`), and a name with a line break as two. Quoting every name
/// leaves nothing to guess.
fn c_quoted(path: &str) -> String {
    let mut out = String::with_capacity(path.len() + 2);
    out.push('"');
    for c in path.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The note a store leaves while its index is lent back: the lender's index file.
const LENT_INDEX: &str = "finishline-lent-index";

/// Present while the store's index is a copy of a worktree's whose "do not look" marks are not
/// cleared yet ([`Checkpoints::adopt_index`]); the next snapshot clears them.
const UNCHECKED_INDEX: &str = "finishline-unchecked-index";

/// Present while the store's index keeps skip-worktree marks on files that are not on disk (a
/// sparse checkout's files outside its set): each snapshot looks whether the task wrote them.
const SPARSE_INDEX: &str = "finishline-sparse-index";

/// How `git add` reports a repository nested in the workspace that has no commit yet.
const NO_COMMIT_YET: &str = "' does not have a commit checked out";

/// Folders no one wants copied into checkpoints: dependencies and build output, which the
/// project's own tools recreate. The workspace's ignore files add to these.
pub const DEFAULT_EXCLUDES: &[&str] =
    &["node_modules/", "target/", ".venv/", "venv/", "__pycache__/", ".gradle/", ".next/", ".nuxt/", ".cache/", ".tox/", ".mypy_cache/", ".pytest_cache/"];

/// Files over this size are left out of checkpoints unless Settings say otherwise (as Cline does):
/// media and data files would double the disk a workspace takes for little use.
pub const DEFAULT_MAX_FILE: u64 = 10 * 1024 * 1024;

/// A stable name for a workspace's store: its folder name (readable) and an FNV-1a hash of its
/// full path (unique, and the same in every build).
pub fn store_name(workspace: &Path) -> String {
    let path = workspace.to_string_lossy();
    let hash = crate::stable_hash::fnv1a(path.as_bytes());
    let leaf: String = workspace
        .file_name()
        .map(|n| n.to_string_lossy().chars().filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_').take(40).collect())
        .unwrap_or_default();
    format!("{}-{hash:016x}", if leaf.is_empty() { "root" } else { &leaf })
}

/// Removes a deleted session's checkpoints: its refs and index in the workspace's shared store
/// (the objects stay for the workspace's other sessions), or its own store if it has one.
pub fn forget_session(stores: &Path, workspace: &Path, session: &str) -> Result<()> {
    let own = stores.join(session);
    if own.join("HEAD").exists() {
        return Checkpoints::open(&own, workspace)?.forget();
    }
    if stores.join(store_name(workspace)).join("HEAD").exists() {
        return Checkpoints::open_shared(stores, workspace, session)?.forget();
    }
    Ok(())
}

impl Checkpoints {
    /// The folder whose files this store checkpoints.
    pub fn work_tree(&self) -> &Path {
        &self.work_tree
    }

    /// The session's checkpoints in the workspace's shared store under `stores`.
    pub fn open_shared(stores: &Path, work_tree: &Path, session: &str) -> Result<Checkpoints> {
        let git_dir = stores.join(store_name(work_tree));
        let mut cp = Checkpoints {
            shared: true,
            refs: format!("refs/finishline/{session}/"),
            git_dir,
            work_tree: work_tree.to_path_buf(),
            max_file: DEFAULT_MAX_FILE,
            own_data: None,
        };
        cp.init()?;
        cp.own_data = cp.leave_out_own_data(stores)?;
        // Stores made before the index was tuned get the setting once.
        if !std::fs::read_to_string(cp.git_dir.join("config")).unwrap_or_default().to_ascii_lowercase().contains("showuntrackedfiles") {
            cp.tune_index()?;
        }
        Ok(cp)
    }

    /// A store of one session, as sessions made before shared stores have.
    pub fn open(dir: &Path, work_tree: &Path) -> Result<Checkpoints> {
        let cp = Checkpoints {
            git_dir: dir.to_path_buf(),
            work_tree: work_tree.to_path_buf(),
            shared: false,
            refs: "refs/finishline/".into(),
            max_file: DEFAULT_MAX_FILE,
            own_data: None,
        };
        cp.init()?;
        Ok(cp)
    }

    fn init(&self) -> Result<()> {
        std::fs::create_dir_all(&self.git_dir)?;
        if !self.git_dir.join("HEAD").exists() {
            let _lock = self.lock()?;
            if self.git_dir.join("HEAD").exists() {
                return Ok(());
            }
            // Two sessions starting at once may both get here: `git init` again is harmless.
            self.git(&["init", "--quiet"])?;
            // Written in one go rather than by six `git config` runs, which cost a new task's
            // first tool about 30 ms. The shadow repository never takes the workspace's own
            // settings (line endings, quoting, gc); git's cache of which folders hold untracked
            // files lets a step's walk skip the rest; the last two are `tune_index`'s.
            let mut config = std::fs::OpenOptions::new().append(true).open(self.git_dir.join("config"))?;
            std::io::Write::write_all(
                &mut config,
                b"[core]\n\tautocrlf = false\n\tquotePath = false\n\tuntrackedCache = true\n[gc]\n\tauto = 0\n[status]\n\tshowUntrackedFiles = all\n[index]\n\tskipHash = true\n",
            )?;
            let info = self.git_dir.join("info");
            std::fs::create_dir_all(&info)?;
            std::fs::write(info.join("exclude"), DEFAULT_EXCLUDES.join("\n") + "\n")?;
            if self.shared {
                // Which folder this store records, for the storage list in History.
                std::fs::write(self.git_dir.join("workspace"), self.work_tree.to_string_lossy().as_bytes())?;
            }
        }
        Ok(())
    }

    /// Finishline's own data folder, when it is inside the workspace (the CLI run from the home
    /// folder, which holds it): its history and these checkpoints change while the task runs,
    /// and are not the task's work to show, judge or undo. Left out of every snapshot from now
    /// on; a store made before, which recorded it, is rid of it in its index, and its older
    /// snapshots' copies are never named as a change (see [`Checkpoints::outside_own_data`]).
    /// Returns the folder, relative to the work tree.
    fn leave_out_own_data(&self, stores: &Path) -> Result<Option<String>> {
        let (Ok(work), Ok(stores)) = (self.work_tree.canonicalize(), stores.canonicalize()) else { return Ok(None) };
        // The data folder, or only the stores when the data folder is the workspace itself.
        let own = stores.parent().filter(|d| *d != work && d.starts_with(&work)).unwrap_or(&stores);
        let Ok(rel) = own.strip_prefix(&work) else { return Ok(None) };
        let Some(rel) = rel.to_str().filter(|r| !r.is_empty()).map(str::to_string) else { return Ok(None) };
        let line = format!("/{}/", gitignore_literal(&rel));
        let file = self.git_dir.join("info").join("exclude");
        if std::fs::read_to_string(&file).unwrap_or_default().lines().any(|l| l == line) {
            return Ok(Some(rel));
        }
        // The excludes file has one writer at a time (a snapshot rewrites it under the lock).
        let _lock = self.lock()?;
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        if !text.lines().any(|l| l == line) {
            std::fs::create_dir_all(self.git_dir.join("info"))?;
            let sep = if text.is_empty() || text.ends_with('\n') { "" } else { "\n" };
            std::fs::write(&file, format!("{text}{sep}{line}\n"))?;
            self.git(&["--literal-pathspecs", "rm", "-r", "--cached", "--quiet", "--ignore-unmatch", "--", &rel])?;
        }
        Ok(Some(rel))
    }

    /// Whether `path` is outside Finishline's own data folder (always, when that is not in the
    /// work tree).
    fn outside_own_data(&self, path: &str) -> bool {
        self.own_data.as_deref().is_none_or(|own| !(path == own || path.strip_prefix(own).is_some_and(|rest| rest.starts_with('/'))))
    }

    /// Settings that make a step's walk cost about one `git status` (git 2.41 and later; older
    /// git ignores them and is slower):
    /// - git uses its untracked cache with `--untracked-files=all` only when that is also the
    ///   configured mode; otherwise every step reads every folder again (80 ms at 100k files).
    /// - every process of a step reads the index and most write it (9 MB at 100k files), and
    ///   checksumming it each time costs more than the step's own work. The index here is a
    ///   cache of the workspace (a lost one is rebuilt by the next walk), so it goes unchecked.
    fn tune_index(&self) -> Result<()> {
        self.git(&["config", "status.showUntrackedFiles", "all"])?;
        self.git(&["config", "index.skipHash", "true"])?;
        Ok(())
    }

    fn git(&self, args: &[&str]) -> Result<String> {
        self.git_full(args, None).map(|(out, _)| out)
    }

    /// git on this store and its work tree, its output piped.
    fn git_command(&self, args: &[&str]) -> Command {
        let mut cmd = self.reading_git_command(args);
        // The store's lock goes with git: held as long as the process lives.
        crate::workspace::lock::inherit_held(&mut cmd, &self.lock_file());
        cmd
    }

    /// A git that writes nothing: it takes no lock with it, so one that outlives its Finishline
    /// (a reader noticing its closed input a moment late) keeps no decision from being finished.
    fn reading_git_command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new("git");
        cmd.arg("--git-dir")
            .arg(&self.git_dir)
            .arg("--work-tree")
            .arg(&self.work_tree)
            .args(STORE_CONFIG)
            .args(["-c", "user.name=Finishline", "-c", "user.email=checkpoints@finishline.local", "-c", "commit.gpgsign=false"])
            .args(args)
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .env_remove("GIT_INDEX_FILE")
            .current_dir(&self.work_tree)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        crate::workspace::worktree::in_background(&mut cmd);
        cmd
    }

    /// Runs git with `input` on its stdin; returns stdout and stderr.
    fn git_full(&self, args: &[&str], input: Option<&str>) -> Result<(String, String)> {
        let mut tries = 0;
        loop {
            let mut cmd = self.git_command(args);
            cmd.stdin(if input.is_some() { std::process::Stdio::piped() } else { std::process::Stdio::null() });
            let mut child = cmd.spawn().map_err(|e| Error::Internal(format!("git is needed for checkpoints and could not run: {e}")))?;
            if let (Some(text), Some(mut stdin)) = (input, child.stdin.take()) {
                use std::io::Write;
                // A thread, so a large input and a large output cannot block each other.
                let text = text.to_string();
                std::thread::spawn(move || stdin.write_all(text.as_bytes()));
            }
            let out = child.wait_with_output()?;
            let err = String::from_utf8_lossy(&out.stderr);
            // `add --ignore-errors` adds what it can read and exits 1 naming what it could not.
            // So does a repository nested in the workspace that has no commit yet; its files are
            // recorded from the report.
            let only_unreadable = args.contains(&"--ignore-errors")
                && out.status.code() == Some(1)
                && err.lines().filter(|l| l.starts_with("error: ")).all(|l| l.starts_with("error: unable to index file") || l.ends_with(NO_COMMIT_YET));
            if out.status.success() || only_unreadable {
                return Ok((String::from_utf8_lossy(&out.stdout).into_owned(), err.into_owned()));
            }
            if err.contains("index.lock") && tries < 50 {
                tries += 1;
                // Every process that writes this store holds its lock, and the git processes it
                // starts inherit it. So while this thread holds it, an `index.lock` can only be
                // left over from a git that died: it goes. Without the lock (a reader), wait.
                if crate::workspace::lock::FolderLock::held_on(&self.lock_file()).is_some() {
                    let _ = std::fs::remove_file(self.git_dir.join("index.lock"));
                }
                std::thread::sleep(std::time::Duration::from_millis(20 * tries));
                continue;
            }
            return Err(Error::Internal(format!("checkpoint git {} failed: {}", args.first().unwrap_or(&""), err.trim())));
        }
    }

    /// Holds the store's lock: every process that writes to it takes turns.
    fn lock(&self) -> Result<crate::workspace::lock::FolderLock> {
        std::fs::create_dir_all(&self.git_dir)?;
        crate::workspace::lock::FolderLock::acquire(&self.lock_file())
    }

    fn lock_file(&self) -> PathBuf {
        self.git_dir.join("finishline.lock")
    }

    /// Records the workspace as it is now; returns the checkpoint id.
    pub fn snapshot(&self, label: &str) -> Result<String> {
        self.snapshot_counted(label, &AtomicUsize::new(0))
    }

    /// [`Checkpoints::snapshot`], telling `recording` how many files it is copying once the walk
    /// has found them, so a long first snapshot can say what it is doing.
    pub fn snapshot_counted(&self, label: &str, recording: &AtomicUsize) -> Result<String> {
        // The whole snapshot under the lock: a prune never runs between `commit-tree` and the
        // `update-ref` that makes the commit reachable, and the excludes file has one writer.
        let _lock = self.lock()?;
        self.take_back_index()?;
        self.walked(label, recording)
    }

    /// A snapshot by one walk of the work tree (the caller holds the lock).
    fn walked(&self, label: &str, recording: &AtomicUsize) -> Result<String> {
        if !self.shared {
            // A pipe where a tracked file was would stop the whole `add`: recorded as gone first.
            let tracked = self.git(&["diff", "--name-only", "--no-renames", "-z"])?;
            self.record_gone(&mut tracked.split('\0').filter(|p| !p.is_empty()).collect())?;
            self.git(&["add", "--all"])?;
            self.git(&["commit", "--quiet", "--allow-empty", "--no-verify", "-m", label])?;
            return Ok(self.git(&["rev-parse", "HEAD"])?.trim().to_string());
        }
        // One walk of the workspace: what changed since the index (new, modified, deleted).
        // `status` walks with git's untracked cache; HEAD is kept at the latest snapshot so its
        // index-to-HEAD half costs nothing.
        let listed = self.git(&["status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames", "--ignore-submodules=none"])?;
        let mut changed: Vec<&str> = listed.split('\0').filter(|e| e.len() > 3 && e.as_bytes()[1] != b' ').map(|e| &e[3..]).collect();
        changed.dedup();
        self.leave_out_odd_names(&mut changed)?;
        self.leave_out_big_files(&mut changed)?;
        self.record_gone(&mut changed)?;
        recording.store(changed.len(), Ordering::Relaxed);
        if changed.len() > 5_000 {
            // Very many paths (the first snapshot) go faster as one `add --all`.
            let (_, warnings) = self.git_full(&["add", "--all", "--ignore-errors"], None)?;
            self.note_unreadable(&warnings)?;
            self.expand_nested_repos(&warnings)?;
        } else if !changed.is_empty() {
            self.record_paths(&changed)?;
        }
        self.commit_index(label)
    }

    /// A snapshot when the caller knows what changed since the index: only `changed` is read
    /// (a new worktree is its branch's commit plus the files copied into it, so its first
    /// snapshot walks nothing).
    pub fn snapshot_known(&self, label: &str, changed: &[&str]) -> Result<String> {
        let _lock = self.lock()?;
        self.take_back_index()?;
        if !self.git_dir.join("index").exists() {
            // The borrowed index could not be read here (a split index): without it the walk
            // must read every file, or the checkout's own files would count as the task's.
            return self.walked(label, &AtomicUsize::new(0));
        }
        let mut changed = changed.to_vec();
        self.leave_out_odd_names(&mut changed)?;
        self.record_gone(&mut changed)?;
        if !changed.is_empty() {
            self.record_paths(&changed)?;
        }
        self.commit_index(label)
    }

    /// The index as the session's next snapshot: its tree, committed after the last one.
    fn commit_index(&self, label: &str) -> Result<String> {
        let tree = self.git(&["write-tree"])?.trim().to_string();
        let last = self.marked("last");
        let mut args = vec!["commit-tree", tree.as_str(), "-m", label];
        if let Some(parent) = &last {
            args.extend(["-p", parent.as_str()]);
        }
        let commit = self.git(&args)?.trim().to_string();
        // The session's ref and the store's HEAD in one git process.
        let moves = format!("update {}last {commit}\noption no-deref\nupdate HEAD {commit}\n", self.refs);
        self.git_full(&["update-ref", "--stdin"], Some(&moves))?;
        Ok(commit)
    }

    /// Takes out of `changed` each path that holds a pipe, a socket or a device now, and records
    /// it as gone: git cannot add one (a whole `add` stops at it), and no file is there.
    fn record_gone(&self, changed: &mut Vec<&str>) -> Result<()> {
        let gone: Vec<&str> = changed.iter().copied().filter(|p| std::fs::symlink_metadata(self.work_tree.join(p)).is_ok_and(|m| holds_no_file(&m))).collect();
        if gone.is_empty() {
            return Ok(());
        }
        changed.retain(|p| !gone.contains(p));
        self.git_full(&["update-index", "--force-remove", "-z", "--stdin"], Some(&(gone.join("\0") + "\0")))?;
        Ok(())
    }

    /// Puts the paths a step's walk found changed into the index. `update-index` reads only
    /// those files (`add` with a pathspec walks folders again); it stops at a file it cannot
    /// read, so unreadable files are found first and reported, and a folder is a repository
    /// nested in the workspace, whose files are recorded instead of a link to it.
    fn record_paths(&self, changed: &[&str]) -> Result<()> {
        let mut files = Vec::with_capacity(changed.len());
        let mut unreadable = Vec::new();
        let mut nested = Vec::new();
        for path in changed {
            if let Some(dir) = path.strip_suffix('/') {
                nested.push(dir);
                continue;
            }
            let full = self.work_tree.join(path);
            match std::fs::symlink_metadata(&full) {
                Ok(m) if m.is_file() && std::fs::File::open(&full).is_err() => unreadable.push(*path),
                _ => files.push(*path),
            }
        }
        if !files.is_empty() {
            let list = files.join("\0") + "\0";
            if self.git_full(&["update-index", "--add", "--remove", "-z", "--stdin"], Some(&list)).is_err() {
                // Whatever update-index could not take (a file that vanished or changed kind
                // mid-step), `add` takes with its own error handling.
                let (_, warnings) = self.git_full(
                    &["--literal-pathspecs", "add", "--all", "--ignore-errors", "--pathspec-from-file=-", "--pathspec-file-nul"],
                    Some(&files.join("\0")),
                )?;
                self.note_unreadable(&warnings)?;
            }
        }
        if !unreadable.is_empty() {
            let errors: String = unreadable.iter().map(|p| format!("error: unable to index file '{p}'\n")).collect();
            self.note_unreadable(&errors)?;
        }
        self.record_nested_repos(&nested)?;
        Ok(())
    }

    /// Sets the size over which files are left out.
    pub fn with_max_file(mut self, bytes: u64) -> Checkpoints {
        self.max_file = bytes;
        self
    }

    /// Takes out of `changed` each path whose name is not UTF-8 text: it reached here with its
    /// odd bytes replaced, so git would be given a name no file has and record nothing. Listed
    /// as not covered, the review says revert cannot restore it, instead of silently missing it.
    fn leave_out_odd_names(&self, changed: &mut Vec<&str>) -> Result<()> {
        let odd: Vec<&str> = changed.iter().copied().filter(|p| p.contains(char::REPLACEMENT_CHARACTER)).collect();
        if odd.is_empty() {
            return Ok(());
        }
        changed.retain(|p| !odd.contains(p));
        let mut known = self.listed("odd-names");
        for p in odd {
            if !known.iter().any(|k| k == p) {
                known.push(p.to_string());
            }
        }
        std::fs::write(self.git_dir.join("info").join("odd-names"), known.join("\n"))?;
        Ok(())
    }

    /// New or changed files over the size limit join the store's excludes before `git add`, so
    /// they are never copied; the review lists them as not covered by revert.
    fn leave_out_big_files(&self, changed: &mut Vec<&str>) -> Result<()> {
        let big: Vec<String> = changed
            .iter()
            .filter(|p| std::fs::symlink_metadata(self.work_tree.join(p)).is_ok_and(|m| m.is_file() && m.len() > self.max_file))
            .map(|p| p.to_string())
            .collect();
        if big.is_empty() {
            return Ok(());
        }
        changed.retain(|p| !big.iter().any(|b| b == p));
        let mut known = self.listed("too-big");
        let exclude = self.git_dir.join("info").join("exclude");
        let mut text = std::fs::read_to_string(&exclude).unwrap_or_default();
        for p in &big {
            if !known.iter().any(|k| k == p) {
                // Anchored and escaped, so the pattern names this one file.
                text.push_str(&format!("/{}\n", gitignore_literal(p)));
                known.push(p.to_string());
            }
        }
        std::fs::write(&exclude, text)?;
        std::fs::write(self.git_dir.join("info").join("too-big"), known.join("\n"))?;
        // A file that was small once is in the index: take it out so the exclude applies.
        // Names, not patterns: `data[1].bin` must not take `data1.bin` out too.
        let mut args = vec!["--literal-pathspecs", "rm", "--cached", "--quiet", "--ignore-unmatch", "--"];
        args.extend(big.iter().map(String::as_str));
        self.git(&args)?;
        Ok(())
    }

    /// git records a repository inside the workspace (a nested clone, a submodule) as a single
    /// link, which would leave its files out of the review and the revert. Each one `git add`
    /// reports is replaced by its files; once they are in the index, later `add --all` keeps them
    /// current like any other file.
    fn expand_nested_repos(&self, add_warnings: &str) -> Result<()> {
        let linked = add_warnings.lines().filter_map(|l| l.strip_prefix("warning: adding embedded git repository: ")).map(str::trim);
        let unborn = add_warnings.lines().filter_map(|l| l.strip_prefix("error: '")?.strip_suffix(NO_COMMIT_YET)).map(|d| d.trim_end_matches('/'));
        self.record_nested_repos(&linked.chain(unborn).collect::<Vec<_>>())
    }

    /// Records the files of each repository folder in `dirs` one by one, in place of a link.
    fn record_nested_repos(&self, dirs: &[&str]) -> Result<()> {
        for &dir in dirs {
            self.git(&["--literal-pathspecs", "rm", "--cached", "-q", "-f", "--ignore-unmatch", "-r", "--", dir])?;
            let files: Vec<String> = ignore::WalkBuilder::new(self.work_tree.join(dir))
                .hidden(false)
                .git_ignore(true)
                .require_git(false)
                .filter_entry(|e| e.file_name() != ".git")
                .build()
                .flatten()
                .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
                .filter(|e| e.metadata().is_ok_and(|m| m.len() <= self.max_file))
                .filter_map(|e| e.path().strip_prefix(&self.work_tree).ok().map(|p| p.to_string_lossy().into_owned()))
                .collect();
            if files.is_empty() {
                continue;
            }
            let listed: String = files.iter().map(|f| c_quoted(f) + "\n").collect();
            let (hashes, _) = self.git_full(&["hash-object", "-w", "--stdin-paths"], Some(&listed))?;
            let mut info = String::new();
            for (path, sha) in files.iter().zip(hashes.lines()) {
                let exec = std::fs::metadata(self.work_tree.join(path)).is_ok_and(|m| {
                    use std::os::unix::fs::PermissionsExt;
                    m.permissions().mode() & 0o111 != 0
                });
                info.push_str(&format!("{} {sha} 0\t{}\n", if exec { "100755" } else { "100644" }, c_quoted(path)));
            }
            self.git_full(&["update-index", "--index-info"], Some(&info))?;
        }
        Ok(())
    }

    /// Files left out of checkpoints for their size: revert cannot restore them.
    pub fn not_covered(&self) -> Vec<String> {
        let mut out = self.listed("too-big");
        out.extend(self.unreadable());
        out.extend(self.listed("odd-names"));
        out
    }

    /// Files git could not read (no permission): left out, reported once, the run goes on.
    pub fn unreadable(&self) -> Vec<String> {
        self.listed("unreadable")
    }

    fn listed(&self, name: &str) -> Vec<String> {
        std::fs::read_to_string(self.git_dir.join("info").join(name))
            .map(|t| t.lines().filter(|l| !l.is_empty()).map(String::from).collect())
            .unwrap_or_default()
    }

    fn note_unreadable(&self, add_errors: &str) -> Result<()> {
        let mut known = self.unreadable();
        let before = known.len();
        for path in add_errors.lines().filter_map(|l| l.strip_prefix("error: unable to index file '")).filter_map(|l| l.strip_suffix('\'')) {
            if !known.iter().any(|k| k == path) {
                known.push(path.to_string());
            }
        }
        if known.len() > before {
            std::fs::write(self.git_dir.join("info").join("unreadable"), known.join("\n"))?;
        }
        Ok(())
    }

    /// Points a name (`base`, `agent`) at a checkpoint.
    pub fn mark(&self, name: &str, commit: &str) -> Result<()> {
        let _lock = self.lock()?;
        self.git(&["update-ref", &format!("{}{name}", self.refs), commit])?;
        Ok(())
    }

    /// The checkpoint a name points at, if set.
    pub fn marked(&self, name: &str) -> Option<String> {
        // A loose ref is one line naming the commit: read it without starting git. After a
        // `gc` refs are packed, and git reads them.
        if let Ok(text) = std::fs::read_to_string(self.git_dir.join(format!("{}{name}", self.refs))) {
            let id = text.trim();
            if id.len() >= 40 && id.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Some(id.to_string());
            }
        }
        self.git(&["rev-parse", "--verify", "--quiet", &format!("{}{name}", self.refs)]).ok().map(|s| s.trim().to_string()).filter(|s| !s.is_empty())
    }

    /// Removes this session's refs; the objects stay for the other sessions.
    pub fn forget(&self) -> Result<()> {
        let _lock = self.lock()?;
        if !self.shared {
            return Ok(std::fs::remove_dir_all(&self.git_dir)?);
        }
        for name in ["base", "agent", "last"] {
            let _ = self.git(&["update-ref", "-d", &format!("{}{name}", self.refs)]);
        }
        Ok(())
    }

    /// Whether any file differs between two checkpoints (cheap: no diffs are computed).
    pub fn differs(&self, from: &str, to: &str) -> Result<bool> {
        Ok(self.git(&["diff", "--name-only", "--no-renames", "-z", from, to])?.split('\0').any(|p| !p.is_empty() && self.outside_own_data(p)))
    }

    /// Files that differ between two checkpoints, with diffs.
    pub fn changes(&self, from: &str, to: &str) -> Result<Vec<FileChange>> {
        let names = self.git(&["diff", "--name-status", "--no-renames", "-z", from, to])?;
        let mut parts = names.split('\0').filter(|s| !s.is_empty());
        let mut out = Vec::new();
        while let (Some(status), Some(path)) = (parts.next(), parts.next()) {
            if !self.outside_own_data(path) {
                continue;
            }
            let kind = match status.chars().next() {
                Some('A') => ChangeKind::Created,
                Some('D') => ChangeKind::Deleted,
                _ => ChangeKind::Modified,
            };
            let mut diff = self.git(&["--literal-pathspecs", "diff", "--no-color", "--no-renames", from, to, "--", path])?;
            if diff.len() > MAX_DIFF {
                let mut cut = MAX_DIFF;
                while !diff.is_char_boundary(cut) {
                    cut -= 1;
                }
                diff.truncate(cut);
                diff.push_str("\n[… diff truncated …]\n");
            }
            out.push(FileChange { path: path.to_string(), kind, diff, before: None, after: None, unattributed: false, edited_between: false });
        }
        Ok(out)
    }

    /// Puts the files the agent changed between `base` and `agent_last` back as they were at
    /// `base`: restores changed and deleted files, deletes created ones. Files the person edited
    /// after `agent_last` are conflicts: nothing is touched unless `force` is set.
    pub fn revert(&self, base: &str, agent_last: &str, force: bool) -> Result<RevertReport> {
        // `git checkout` writes the store's index, which other sessions' snapshots write too.
        let _store = self.lock()?;
        let (agent_changes, conflicts) = self.revert_plan(base, agent_last)?;
        if !conflicts.is_empty() && !force {
            return Ok(RevertReport { conflicts, ..Default::default() });
        }
        self.put_back(base, &agent_changes, &conflicts, &|_| true)
    }

    /// As [`Checkpoints::revert`], for a person who has seen the files edited after the agent:
    /// of those, each one `overwrite` allows, asked as it is reached (its last look, so an edit
    /// saved since the person's answer is kept), is put back with the rest; the others are kept
    /// as they are and named in `conflicts`.
    pub fn revert_except(&self, base: &str, agent_last: &str, overwrite: &dyn Fn(&str) -> bool) -> Result<RevertReport> {
        let _store = self.lock()?;
        let (agent_changes, conflicts) = self.revert_plan(base, agent_last)?;
        self.put_back(base, &agent_changes, &conflicts, overwrite)
    }

    fn put_back(&self, base: &str, agent_changes: &[FileChange], conflicts: &[String], overwrite: &dyn Fn(&str) -> bool) -> Result<RevertReport> {
        let mut report = RevertReport::default();
        for c in agent_changes {
            if conflicts.contains(&c.path) && !overwrite(&c.path) {
                report.conflicts.push(c.path.clone());
                continue;
            }
            // Behind a folder that became a link: left, and named as kept.
            if self.through_link(&c.path) {
                report.conflicts.push(c.path.clone());
                continue;
            }
            match c.kind {
                ChangeKind::Created => {
                    let p = self.work_tree.join(&c.path);
                    if p.exists() || p.symlink_metadata().is_ok() {
                        std::fs::remove_file(&p)?;
                    }
                    report.deleted.push(c.path.clone());
                }
                ChangeKind::Modified | ChangeKind::Deleted => {
                    // The path is a name, not a pattern: `file[1].txt` would also match (and
                    // overwrite) the person's `file1.txt`.
                    self.git(&["--literal-pathspecs", "checkout", base, "--", &c.path])?;
                    report.restored.push(c.path.clone());
                }
            }
        }
        report.applied = true;
        self.snapshot("after revert")?;
        Ok(report)
    }

    /// Files a revert would overwrite that the person edited after the agent; touches nothing.
    pub fn revert_conflicts(&self, base: &str, agent_last: &str) -> Result<Vec<String>> {
        Ok(self.revert_plan(base, agent_last)?.1)
    }

    fn revert_plan(&self, base: &str, agent_last: &str) -> Result<(Vec<FileChange>, Vec<String>)> {
        let now = self.snapshot("before revert")?;
        let agent_changes = self.changes(base, agent_last)?;
        let person_changes: Vec<String> = self.changes(agent_last, &now)?.into_iter().map(|c| c.path).collect();
        let conflicts: Vec<String> =
            agent_changes.iter().filter(|c| person_changes.contains(&c.path) || self.holds_no_file_at(&c.path)).map(|c| c.path.clone()).collect();
        Ok((agent_changes, conflicts))
    }

    /// Whether a pipe, a socket or a device is at `path`. Snapshots record one as no file, as if
    /// nothing were there, so they cannot say whose it is: the run's, or made since (a server's
    /// socket, a secrets manager's `.env`). A revert asks before it replaces one.
    pub fn holds_no_file_at(&self, path: &str) -> bool {
        std::fs::symlink_metadata(self.work_tree.join(path)).is_ok_and(|m| holds_no_file(&m))
    }

    /// Lets a new store read the objects of the repository its work tree belongs to, and start
    /// from the work tree's own index (whose stat data make the first `status` read no file).
    /// Only for a store with no snapshot yet.
    pub fn borrow_objects(&self, objects: &Path, index: &Path) -> Result<()> {
        let _lock = self.lock()?;
        if self.marked("last").is_some() || self.git_dir.join("index").exists() {
            return Ok(());
        }
        let info = self.git_dir.join("objects").join("info");
        std::fs::create_dir_all(&info)?;
        std::fs::write(info.join("alternates"), format!("{}\n", objects.display()))?;
        if index.is_file() && copy_keeping_time(index, &self.git_dir.join("index")).is_ok() && self.clear_index_flags().is_err() {
            // Unreadable here (a split index, say): the first snapshot walks the files instead.
            std::fs::remove_file(self.git_dir.join("index"))?;
        }
        Ok(())
    }

    /// The first snapshot of a new store for a work tree that git is filling from `commit` (a
    /// task's new worktree): its tree is that commit's, so it needs none of the files, and it is
    /// made while git writes them, off the way to the task's first tool. Two git processes (the
    /// commit; the session's `last` and `base` and the store's HEAD in one `update-ref`), with
    /// the repository's `objects` borrowed. Once the work tree is filled,
    /// [`Checkpoints::adopt_index`] gives the store its index. `None`: the store already has a
    /// snapshot or an index (a run starting again), and nothing was done.
    pub fn start_at_commit(&self, objects: &Path, commit: &str, label: &str) -> Result<Option<String>> {
        let _lock = self.lock()?;
        if self.marked("last").is_some() || self.git_dir.join("index").exists() {
            return Ok(None);
        }
        let info = self.git_dir.join("objects").join("info");
        std::fs::create_dir_all(&info)?;
        std::fs::write(info.join("alternates"), format!("{}\n", objects.display()))?;
        let tree = format!("{commit}^{{tree}}");
        let snap = self.git(&["commit-tree", &tree, "-m", label])?.trim().to_string();
        let refs = format!("update {r}last {snap}\nupdate {r}base {snap}\noption no-deref\nupdate HEAD {snap}\n", r = self.refs);
        self.git_full(&["update-ref", "--stdin"], Some(&refs))?;
        Ok(Some(snap))
    }

    /// After [`Checkpoints::start_at_commit`], once git has filled the work tree: the store takes
    /// a copy of the work tree's `index`, which holds the same files as the first snapshot and
    /// whose stat data make the next `status` read no file (its "do not look" marks are cleared
    /// by the next snapshot). Without one it reads the snapshot's tree (`first`), and the next
    /// snapshot reads the files once. Does nothing when the store has an index.
    pub fn adopt_index(&self, index: Option<&Path>, first: &str) -> Result<()> {
        let _lock = self.lock()?;
        if self.git_dir.join("index").exists() {
            return Ok(());
        }
        match index {
            Some(index) if index.is_file() && copy_keeping_time(index, &self.git_dir.join("index")).is_ok() => {
                std::fs::write(self.git_dir.join(UNCHECKED_INDEX), "")?;
            }
            _ => {
                self.git(&["read-tree", first])?;
            }
        }
        Ok(())
    }

    /// Gives the store's index up while its task waits for a person, when the work tree has an
    /// index of its own (`lender`, a worktree's): that one describes the same files, so a copy
    /// is only disk, about 100 bytes a file. The next snapshot takes it back
    /// ([`Checkpoints::take_back_index`]). Whether it was given up.
    pub fn lend_index(&self, lender: &Path) -> Result<bool> {
        let _lock = self.lock()?;
        let index = self.git_dir.join("index");
        if !self.shared || !lender.is_file() || !index.is_file() || self.marked("last").is_none() {
            return Ok(false);
        }
        // The note first: a crash between the two leaves an index that the next snapshot
        // checks against the last one, which costs nothing when they agree.
        std::fs::write(self.git_dir.join(LENT_INDEX), lender.to_string_lossy().as_bytes())?;
        std::fs::remove_file(&index)?;
        Ok(true)
    }

    /// Before the store reads its index (the caller holds the lock): an index given up by
    /// [`Checkpoints::lend_index`] comes back as a copy of the lender's, whose stat data spare
    /// reading the files again, made to hold exactly the last snapshot's entries where the two
    /// differ (files copied into a worktree but kept out of its commits, files checkpoints
    /// leave out). Without the lender, or when its index cannot be read here, it is rebuilt
    /// from the last snapshot, and the next walk reads the files once. An index copied at
    /// [`Checkpoints::adopt_index`] has its "do not look" marks cleared here.
    fn take_back_index(&self) -> Result<()> {
        self.take_back_lent_index()?;
        let unchecked = self.git_dir.join(UNCHECKED_INDEX);
        if unchecked.exists() {
            if self.clear_index_flags().is_err() {
                // Unreadable here (a split index, say): rebuilt from the last snapshot, whose
                // files the next `status` then reads once.
                let _ = std::fs::remove_file(self.git_dir.join("index"));
                if let Some(last) = self.marked("last") {
                    self.git(&["read-tree", &last])?;
                }
            }
            std::fs::remove_file(&unchecked)?;
        } else if self.git_dir.join(SPARSE_INDEX).exists() {
            self.clear_index_flags()?;
        }
        Ok(())
    }

    fn take_back_lent_index(&self) -> Result<()> {
        let note = self.git_dir.join(LENT_INDEX);
        let Ok(lender) = std::fs::read_to_string(&note) else { return Ok(()) };
        let Some(last) = self.marked("last") else {
            std::fs::remove_file(&note)?;
            return Ok(());
        };
        let index = self.git_dir.join("index");
        let borrowed = index.is_file() || copy_keeping_time(Path::new(&lender), &index).is_ok();
        if !borrowed || self.index_as_at(&last).and_then(|_| self.clear_index_flags()).is_err() {
            let _ = std::fs::remove_file(&index);
            self.git(&["read-tree", &last])?;
        }
        std::fs::remove_file(&note)?;
        Ok(())
    }

    /// Sets the index entries that differ from `commit`'s tree to that tree's, touching no file.
    /// Paths are bytes throughout: a name that is not UTF-8 must reach the index as it is.
    fn index_as_at(&self, commit: &str) -> Result<()> {
        // Raw records `:<tree mode> <index mode> <tree oid> <index oid> <status>`, then the path.
        let raw = self.git_bytes(&["diff-index", "--cached", "--raw", "-z", "--no-renames", commit], &[])?;
        let mut fields = raw.split(|b| *b == 0);
        let mut info = Vec::new();
        while let (Some(head), Some(path)) = (fields.next(), fields.next()) {
            let head = String::from_utf8_lossy(head);
            let parts: Vec<&str> = head.trim_start_matches(':').split(' ').collect();
            let [mode, _, oid, ..] = parts[..] else { continue };
            // Absent from the tree: mode 0 takes the path out of the index.
            let mode = if mode.bytes().all(|b| b == b'0') { "0" } else { mode };
            index_info(&mut info, mode, oid, path);
        }
        if !info.is_empty() {
            self.git_bytes(&["update-index", "-z", "--index-info"], &info)?;
        }
        Ok(())
    }

    /// Clears what a borrowed index may say about its work tree that would blind the store: an
    /// entry marked assume-unchanged (the person's `update-index`, or `core.ignoreStat`) or
    /// skip-worktree (sparse checkout) is never looked at by `status`, so an edit to it would be
    /// missing from every later snapshot. Such an entry is put back plain, to be hashed again;
    /// except a skip-worktree entry whose file is not on disk, which a sparse checkout left out
    /// (a worktree inherits the person's sparse checkout): cleared, it would count as deleted.
    fn clear_index_flags(&self) -> Result<()> {
        use std::os::unix::ffi::OsStrExt;
        // `<tag> <mode> <oid> <stage>\t<path>`: a lowercase tag is assume-unchanged, `S` (or `s`)
        // skip-worktree.
        let listed = self.git_bytes(&["ls-files", "-v", "-s", "-z"], &[])?;
        let mut info = Vec::new();
        let mut outside = false;
        for rec in listed.split(|b| *b == 0).filter(|r| r.len() > 2) {
            let skip = rec[0].eq_ignore_ascii_case(&b'S');
            if !(rec[0].is_ascii_lowercase() || skip) {
                continue;
            }
            let Some(tab) = rec.iter().position(|b| *b == b'\t') else { continue };
            let path = &rec[tab + 1..];
            // Skip-worktree and not on disk: outside a sparse checkout, not deleted. Its mark
            // stays until the task writes the file, which the next snapshots look for.
            if skip && self.work_tree.join(std::ffi::OsStr::from_bytes(path)).symlink_metadata().is_err() {
                outside = true;
                continue;
            }
            let head = String::from_utf8_lossy(&rec[2..tab]);
            let [mode, oid, "0"] = head.split(' ').collect::<Vec<_>>()[..] else { continue };
            index_info(&mut info, mode, oid, path);
        }
        if !info.is_empty() {
            self.git_bytes(&["update-index", "-z", "--index-info"], &info)?;
        }
        let note = self.git_dir.join(SPARSE_INDEX);
        if outside {
            std::fs::write(note, "")?;
        } else if note.exists() {
            std::fs::remove_file(note)?;
        }
        Ok(())
    }

    /// What one window of a run changed: the files that differ between the snapshots taken
    /// before and after it.
    pub fn window_changes(&self, before: &str, after: &str) -> Result<Vec<RawChange>> {
        if before == after {
            return Ok(vec![]);
        }
        let out = self.git(&["diff-tree", "-r", "-z", "--raw", "--no-renames", "--no-commit-id", before, after])?;
        Ok(crate::workspace::ownership::parse_raw(&out).into_iter().filter(|c| self.outside_own_data(&c.path)).collect())
    }

    /// The run's changes with their diffs, for the review and the evaluator.
    pub fn owned_diffs(&self, changes: &[OwnedChange]) -> Result<Vec<FileChange>> {
        let oids: Vec<&str> = changes.iter().flat_map(|c| [c.before.oid(), c.after.oid()]).flatten().collect();
        let blobs = self.blobs(&oids)?;
        let empty = Vec::new();
        let mut out = Vec::with_capacity(changes.len());
        for c in changes {
            let kind = match (&c.before, &c.after) {
                (FileState::Absent, _) => ChangeKind::Created,
                (_, FileState::Absent) => ChangeKind::Deleted,
                _ => ChangeKind::Modified,
            };
            let old = c.before.oid().and_then(|o| blobs.get(o)).unwrap_or(&empty);
            let new = c.after.oid().and_then(|o| blobs.get(o)).unwrap_or(&empty);
            out.push(FileChange {
                path: c.path.clone(),
                kind,
                diff: unified_diff(&c.path, &c.before, &c.after, old, new),
                before: Some(c.before.clone()),
                after: Some(c.after.clone()),
                unattributed: c.unattributed,
                edited_between: c.edited_between,
            });
        }
        Ok(out)
    }

    /// The run's changed files as text before and after (`None`: absent, binary, or over 1 MB),
    /// for the audit.
    pub fn owned_texts(&self, changes: &[OwnedChange]) -> Result<Vec<(String, Option<String>, Option<String>)>> {
        let oids: Vec<&str> = changes.iter().flat_map(|c| [c.before.oid(), c.after.oid()]).flatten().collect();
        let blobs = self.blobs(&oids)?;
        let text = |s: &FileState| -> Option<String> {
            let b = blobs.get(s.oid()?)?;
            (b.len() <= 1024 * 1024 && !b.iter().take(8000).any(|c| *c == 0)).then(|| String::from_utf8_lossy(b).into_owned())
        };
        Ok(changes.iter().map(|c| (c.path.clone(), text(&c.before), text(&c.after))).collect())
    }

    /// The contents of blobs, read in one `git cat-file --batch`.
    fn blobs(&self, oids: &[&str]) -> Result<std::collections::HashMap<String, Vec<u8>>> {
        let mut map = std::collections::HashMap::new();
        if oids.is_empty() {
            return Ok(map);
        }
        let input = oids.join("\n") + "\n";
        let out = self.git_bytes(&["cat-file", "--batch"], input.as_bytes())?;
        let mut rest = &out[..];
        for oid in oids {
            let Some(nl) = rest.iter().position(|b| *b == b'\n') else { break };
            let header = String::from_utf8_lossy(&rest[..nl]).into_owned();
            rest = &rest[nl + 1..];
            let size: usize = match header.split(' ').nth(2).and_then(|s| s.parse().ok()) {
                Some(n) => n,
                None => continue, // "<oid> missing"
            };
            let body = &rest[..size.min(rest.len())];
            map.insert(oid.to_string(), body.to_vec());
            rest = &rest[(size + 1).min(rest.len())..];
        }
        Ok(map)
    }

    /// A blob as `git checkout` writes it at `path`: a snapshot holds a file as git commits it,
    /// after the folder's `.gitattributes` had their say (line endings, an encoding, Git LFS's
    /// clean filter), so a file is put back through the same smudge, or a revert wrote an LF file
    /// where a CRLF one was and an LFS pointer where an image was. A link's target is as stored,
    /// and so is a file whose filter fails now (its program gone, an LFS object not there): a
    /// revert stopped by it would stop again at every start.
    fn checked_out(&self, path: &str, oid: &str, mode: &str) -> Result<Vec<u8>> {
        if mode != "120000" {
            if let Ok(bytes) = self.git_bytes(&["cat-file", "--filters", &format!("--path={path}"), oid], b"") {
                return Ok(bytes);
            }
        }
        self.blobs(&[oid])?.remove(oid).ok_or_else(|| Error::Internal(format!("the checkpoint of {path} is missing")))
    }

    /// git's stdout as bytes (file contents are not always text).
    fn git_bytes(&self, args: &[&str], input: &[u8]) -> Result<Vec<u8>> {
        let mut cmd = Command::new("git");
        cmd.arg("--git-dir")
            .arg(&self.git_dir)
            .arg("--work-tree")
            .arg(&self.work_tree)
            .args(STORE_CONFIG)
            .args(args)
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .env_remove("GIT_INDEX_FILE")
            .current_dir(&self.work_tree);
        cmd.stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
        crate::workspace::lock::inherit_held(&mut cmd, &self.lock_file());
        let mut child = cmd.spawn().map_err(|e| Error::Internal(format!("git is needed for checkpoints and could not run: {e}")))?;
        if let Some(mut stdin) = child.stdin.take() {
            use std::io::Write;
            let data = input.to_vec();
            std::thread::spawn(move || stdin.write_all(&data));
        }
        let out = child.wait_with_output()?;
        if !out.status.success() {
            return Err(Error::Internal(format!("checkpoint git {} failed: {}", args.first().unwrap_or(&""), String::from_utf8_lossy(&out.stderr).trim())));
        }
        Ok(out.stdout)
    }

    /// Each path's state in the workspace now, hashed as the snapshots hash it.
    pub fn file_states(&self, paths: &[&str]) -> Result<Vec<FileState>> {
        let mut states = Vec::with_capacity(paths.len());
        let mut hashed = Vec::new();
        for (i, p) in paths.iter().enumerate() {
            let state = self.look(p)?;
            if unhashed_file(&state) {
                hashed.push(i);
            }
            states.push(state);
        }
        if hashed.is_empty() {
            return Ok(states);
        }
        let list: String = hashed.iter().map(|i| c_quoted(paths[*i]) + "\n").collect();
        match self.git_full(&["hash-object", "--stdin-paths"], Some(&list)) {
            Ok((out, _)) => {
                for (i, oid) in hashed.iter().zip(out.lines()) {
                    if let FileState::Blob { oid: o, .. } = &mut states[*i] {
                        *o = oid.trim().to_string();
                    }
                }
            }
            // A file went away (or became a folder) between the look and git's read: git stops
            // there, and the rest are read again one by one, so one file going (a build removing
            // its output as the person rejects) does not fail the look at all of them.
            Err(_) => {
                for i in hashed {
                    states[i] = self.state_alone(paths[i])?;
                }
            }
        }
        Ok(states)
    }

    /// What is at `path` now, without the content's id for a file (`oid` empty) unless it is a
    /// link, whose id is its target's.
    fn look(&self, path: &str) -> Result<FileState> {
        let full = self.work_tree.join(path);
        let Ok(meta) = std::fs::symlink_metadata(&full) else { return Ok(FileState::Absent) };
        Ok(if meta.file_type().is_symlink() {
            let Ok(target) = std::fs::read_link(&full) else { return Ok(FileState::Absent) };
            let oid = self.git_full(&["hash-object", "--stdin"], Some(&target.to_string_lossy()))?.0.trim().to_string();
            FileState::Blob { oid, mode: "120000".into() }
        } else if meta.is_file() {
            use std::os::unix::fs::PermissionsExt;
            let mode = if meta.permissions().mode() & 0o111 != 0 { "100755" } else { "100644" };
            FileState::Blob { oid: String::new(), mode: mode.into() }
        } else if meta.is_dir() {
            // A folder where the run left a file: not what anyone recorded.
            FileState::Blob { oid: String::new(), mode: "040000".into() }
        } else {
            // A pipe, a socket or a device holds no file, as the snapshots record it: absent.
            FileState::Absent
        })
    }

    /// One path's state, read alone: when git cannot read a file, it is looked at again, and a
    /// file still there that git cannot read is an error.
    fn state_alone(&self, path: &str) -> Result<FileState> {
        let mut tries = 0;
        loop {
            let mode = match self.look(path)? {
                FileState::Blob { oid, mode } if oid.is_empty() && mode != "040000" => mode,
                state => return Ok(state),
            };
            match self.git_full(&["hash-object", "--stdin-paths"], Some(&(c_quoted(path) + "\n"))) {
                Ok((out, _)) => return Ok(FileState::Blob { oid: out.trim().to_string(), mode }),
                Err(e) if tries >= 2 || std::fs::symlink_metadata(self.work_tree.join(path)).is_ok_and(|m| m.is_file()) => return Err(e),
                Err(_) => tries += 1,
            }
        }
    }

    /// Reads files' states one at a time, each just before it is needed, through one git process
    /// (see [`FileReader`]).
    pub fn reader(&self) -> FileReader<'_> {
        FileReader { cp: self, git: None }
    }

    /// Whether a folder on the way to `path` in the workspace is a link (or a file) now: a
    /// restore there would write or delete wherever it leads.
    pub fn through_link(&self, path: &str) -> bool {
        let mut at = self.work_tree.clone();
        let parts: Vec<_> = Path::new(path).components().collect();
        parts.iter().take(parts.len().saturating_sub(1)).any(|part| {
            at.push(part);
            std::fs::symlink_metadata(&at).is_ok_and(|m| !m.is_dir())
        })
    }

    /// Puts one file back in the state `to`: written whole (a temporary file renamed over it, so
    /// a crash leaves the old or the new file, never half of one) or deleted.
    pub fn restore_file(&self, path: &str, to: &FileState) -> Result<()> {
        self.restore_file_if(path, to, || true).map(|_| ())
    }

    /// [`Checkpoints::restore_file`], once `still` says the file is as it was looked at: asked at
    /// the last moment (the old content fetched and written beside it first), so an edit saved
    /// meanwhile is not replaced. Whether it was restored.
    pub fn restore_file_if(&self, path: &str, to: &FileState, still: impl FnOnce() -> bool) -> Result<bool> {
        if self.through_link(path) {
            return Err(Error::InvalidInput(format!(
                "{path} is reached through a link or a file now, so it is not put back: that could change a file outside the workspace"
            )));
        }
        let full = self.work_tree.join(path);
        // The file is named: "Permission denied" alone left the person to guess which of a
        // revert's files stopped it.
        let named = |e: std::io::Error| Error::Io(std::io::Error::new(e.kind(), format!("{path} could not be put back: {e}")));
        let named_any = |e: Error| match e {
            Error::Io(io) => named(io),
            other => other,
        };
        match to {
            FileState::Absent => match std::fs::symlink_metadata(&full) {
                Ok(m) if !m.is_dir() => {
                    if !still() {
                        return Ok(false);
                    }
                    std::fs::remove_file(&full).map_err(named)?;
                    Ok(true)
                }
                _ => Ok(true),
            },
            FileState::Blob { oid, mode } => {
                let content = self.checked_out(path, oid, mode)?;
                if let Some(dir) = full.parent() {
                    std::fs::create_dir_all(dir).map_err(named)?;
                }
                let tmp = written_beside(&full, &content, mode).map_err(named_any)?;
                if !still() {
                    let _ = std::fs::remove_file(&tmp);
                    return Ok(false);
                }
                if let Err(e) = std::fs::rename(&tmp, &full) {
                    let _ = std::fs::remove_file(&tmp);
                    return Err(named(e));
                }
                Ok(true)
            }
        }
    }
}

/// Reads a file's state just before it is needed, as [`Checkpoints::file_states`] does, through
/// one `git hash-object --stdin-paths` kept running: git answers each path with a line as soon
/// as it has read the file, so a revert of a command's thousands of files looks at each one at
/// the moment it touches it for the cost of a line through a pipe, not a git process a file.
pub struct FileReader<'a> {
    cp: &'a Checkpoints,
    git: Option<(std::process::Child, std::process::ChildStdin, std::io::BufReader<std::process::ChildStdout>)>,
}

impl FileReader<'_> {
    /// The state of `path` now.
    pub fn state(&mut self, path: &str) -> Result<FileState> {
        use std::os::unix::fs::PermissionsExt;
        if let Some(m) = std::fs::symlink_metadata(self.cp.work_tree.join(path)).ok().filter(|m| m.is_file()) {
            let mode = if m.permissions().mode() & 0o111 != 0 { "100755" } else { "100644" };
            if let Some(oid) = self.ask(path) {
                return Ok(FileState::Blob { oid, mode: mode.into() });
            }
        }
        // Absent, a link, a folder (no git needed, or rare), or one git could not read just now
        // (gone or changed meanwhile): read alone.
        Ok(self.cp.file_states(&[path])?.remove(0))
    }

    /// git's blob id of the file at `path`; `None` when git could not read it (it then exits, and
    /// the next question starts another).
    fn ask(&mut self, path: &str) -> Option<String> {
        use std::io::{BufRead, Write};
        if self.git.is_none() {
            let mut cmd = self.cp.reading_git_command(&["hash-object", "--stdin-paths"]);
            // Each answer flushed as it is written, whatever the person's environment says.
            cmd.env("GIT_FLUSH", "1");
            let mut child = cmd.stdin(std::process::Stdio::piped()).stderr(std::process::Stdio::null()).spawn().ok()?;
            let (stdin, stdout) = (child.stdin.take()?, child.stdout.take()?);
            self.git = Some((child, stdin, std::io::BufReader::new(stdout)));
        }
        let (_, stdin, stdout) = self.git.as_mut()?;
        let mut line = String::new();
        let answered = writeln!(stdin, "{}", c_quoted(path)).and_then(|_| stdin.flush()).and_then(|_| stdout.read_line(&mut line));
        let oid = line.trim();
        if matches!(answered, Ok(n) if n > 0) && (oid.len() == 40 || oid.len() == 64) && oid.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Some(oid.to_string());
        }
        self.stop();
        None
    }

    fn stop(&mut self) {
        if let Some((mut child, stdin, _)) = self.git.take() {
            drop(stdin);
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for FileReader<'_> {
    fn drop(&mut self) {
        self.stop();
    }
}

/// `path` as a gitignore pattern that matches that path only: its pattern characters escaped
/// (`!` and `#` mean something only at a line's start, which is the anchoring `/`; escaped
/// anyway).
fn gitignore_literal(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for c in path.chars() {
        if matches!(c, '\\' | '*' | '?' | '[' | '!' | '#') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// A file looked at and not yet hashed (not a link, whose id comes with the look, nor a folder).
fn unhashed_file(state: &FileState) -> bool {
    matches!(state, FileState::Blob { oid, mode } if oid.is_empty() && mode != "040000")
}

/// Writes `content` as a new file beside `full`, under a name nothing there has (a file of the
/// person's with that name is never replaced), with the permissions `full` will have; returns its
/// path. A crash before the rename leaves that hidden file behind, never a half-written `full`.
fn written_beside(full: &Path, content: &[u8], mode: &str) -> Result<PathBuf> {
    use std::io::Write;
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let name = full.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    // A name near the 255-byte limit still leaves room for the suffix.
    let name: String = name.chars().scan(0, |len, c| (*len + c.len_utf8() <= 200).then(|| *len += c.len_utf8()).map(|()| c)).collect();
    // Git keeps only the executable bit. The file's own permissions stay: a private file (0600)
    // must not come back readable by everyone. Never a set-id or sticky bit, whoever set it.
    let now = std::fs::symlink_metadata(full).ok().filter(|m| m.is_file()).map(|m| m.permissions().mode() & 0o777);
    let bits = match (now, mode == "100755") {
        (Some(now), true) => now | ((now & 0o444) >> 2),
        (Some(now), false) => now & !0o111,
        // A file that is gone is made as any new file is: the person's umask applies.
        (None, true) => 0o777,
        (None, false) => 0o666,
    };
    let mut tries = 0;
    loop {
        let tmp = full.with_file_name(format!(".{name}.{}.finishline-restore", &uuid::Uuid::new_v4().simple().to_string()[..12]));
        let made = if mode == "120000" {
            std::os::unix::fs::symlink(String::from_utf8_lossy(content).as_ref(), &tmp)
        } else {
            // Made with its permissions, so its content is never readable by more people than
            // it will be, even for a moment.
            std::fs::OpenOptions::new().write(true).create_new(true).mode(bits).open(&tmp).and_then(|mut file| {
                let written = file.write_all(content).and_then(|()| match now {
                    // Exactly as it was, beyond what the umask lets a new file have.
                    Some(_) => std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(bits)),
                    None => Ok(()),
                });
                if written.is_err() {
                    let _ = std::fs::remove_file(&tmp);
                }
                written
            })
        };
        match made {
            Ok(()) => return Ok(tmp),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && tries < 8 => tries += 1,
            Err(e) => return Err(e.into()),
        }
    }
}

/// One `update-index -z --index-info` record.
fn index_info(out: &mut Vec<u8>, mode: &str, oid: &str, path: &[u8]) {
    out.extend_from_slice(format!("{mode} {oid}\t").as_bytes());
    out.extend_from_slice(path);
    out.push(0);
}

/// A copy of an index that keeps its modification time: git trusts an entry's stat data only
/// when the file is older than the index, so a fresh time would hide a racy edit.
fn copy_keeping_time(from: &Path, to: &Path) -> std::io::Result<()> {
    let modified = std::fs::metadata(from)?.modified()?;
    let part = to.with_extension("part");
    std::fs::copy(from, &part)?;
    std::fs::File::options().write(true).open(&part)?.set_modified(modified)?;
    std::fs::rename(&part, to)
}

/// A git-style unified diff of one file, capped in size; binary files say so.
fn unified_diff(path: &str, before: &FileState, after: &FileState, old: &[u8], new: &[u8]) -> String {
    let binary = |b: &[u8]| b.iter().take(8000).any(|c| *c == 0);
    let (a, b) = (
        if matches!(before, FileState::Absent) { "/dev/null".to_string() } else { format!("a/{path}") },
        if matches!(after, FileState::Absent) { "/dev/null".to_string() } else { format!("b/{path}") },
    );
    let mut diff = format!("diff --git a/{path} b/{path}\n");
    match (before, after) {
        (FileState::Absent, FileState::Blob { mode, .. }) => diff.push_str(&format!("new file mode {mode}\n")),
        (FileState::Blob { mode, .. }, FileState::Absent) => diff.push_str(&format!("deleted file mode {mode}\n")),
        (FileState::Blob { mode: m1, .. }, FileState::Blob { mode: m2, .. }) if m1 != m2 => diff.push_str(&format!("old mode {m1}\nnew mode {m2}\n")),
        _ => {}
    }
    if binary(old) || binary(new) {
        diff.push_str(&format!("Binary files {a} and {b} differ\n"));
        return diff;
    }
    let (old, new) = (String::from_utf8_lossy(old), String::from_utf8_lossy(new));
    // Past the deadline the diff is coarser, never missing: a file rewritten whole made the
    // finest line diff take minutes, and the review waited for it.
    let lines = similar::TextDiff::configure().timeout(DIFF_DEADLINE).diff_lines(old.as_ref(), new.as_ref());
    diff.push_str(&lines.unified_diff().context_radius(3).header(&a, &b).to_string());
    if diff.len() > MAX_DIFF {
        let mut cut = MAX_DIFF;
        while !diff.is_char_boundary(cut) {
            cut -= 1;
        }
        diff.truncate(cut);
        diff.push_str("\n[… diff truncated …]\n");
    }
    diff
}

/// What New Task tells the person about a chosen folder before the run: a home folder or `/` is
/// rarely what they mean, and a huge folder costs one long first snapshot.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WorkspaceSurvey {
    /// Files the checkpoints would record (ignore files and the default excludes honoured).
    pub files: u64,
    /// Counting stopped at the limit: there are at least this many.
    pub capped: bool,
    /// The person's home folder, or the file system's root.
    pub too_broad: bool,
    /// The instructions file the agent and the evaluator will follow (AGENTS.md, …), if any.
    pub instructions: Option<String>,
}

/// The most files a survey counts before it stops.
pub const SURVEY_LIMIT: u64 = 200_000;

/// Counts the files of `workspace` the checkpoints would record, up to [`SURVEY_LIMIT`].
pub fn survey(workspace: &Path) -> Result<WorkspaceSurvey> {
    let root = workspace.canonicalize().map_err(|e| crate::workspace::unusable(workspace, &e))?;
    if !root.is_dir() {
        return Err(crate::workspace::not_a_folder(workspace));
    }
    let home = std::env::var_os("HOME").and_then(|h| PathBuf::from(h).canonicalize().ok());
    let too_broad = root.parent().is_none() || home.as_deref() == Some(root.as_path());
    let walker = walk(&root)?;
    let mut files = 0;
    for entry in walker.flatten() {
        if entry.file_type().is_some_and(|t| t.is_file()) {
            files += 1;
            if files >= SURVEY_LIMIT {
                return Ok(WorkspaceSurvey { files, capped: true, too_broad, instructions: crate::workspace::instructions::find(workspace).map(|i| i.file) });
            }
        }
    }
    Ok(WorkspaceSurvey { files, capped: false, too_broad, instructions: crate::workspace::instructions::find(workspace).map(|i| i.file) })
}

/// The workspace's files as the checkpoints see them (ignore files and default excludes honoured).
fn walk(root: &Path) -> Result<ignore::Walk> {
    let mut overrides = ignore::overrides::OverrideBuilder::new(root);
    for d in DEFAULT_EXCLUDES {
        overrides.add(&format!("!{}", d.trim_end_matches('/'))).map_err(|e| Error::Internal(e.to_string()))?;
    }
    Ok(ignore::WalkBuilder::new(root)
        .hidden(false)
        .require_git(false)
        .overrides(overrides.build().map_err(|e| Error::Internal(e.to_string()))?)
        .filter_entry(|e| e.file_name() != ".git")
        .build())
}

/// Up to `limit` of the workspace's file paths, relative and sorted, for the plan's manager.
pub fn listing(workspace: &Path, limit: usize) -> Vec<String> {
    let Ok(root) = workspace.canonicalize() else { return vec![] };
    let Ok(walker) = walk(&root) else { return vec![] };
    let mut out: Vec<String> = walker
        .flatten()
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
        .filter_map(|e| e.path().strip_prefix(&root).ok().map(|p| p.to_string_lossy().into_owned()))
        .take(limit)
        .collect();
    out.sort();
    out
}

/// One workspace's checkpoint store, as History shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StoreUsage {
    /// The store's folder name under `checkpoints/`, which names it in [`prune_store`].
    pub id: String,
    pub workspace: String,
    pub bytes: u64,
    /// Sessions whose checkpoints it holds.
    pub sessions: usize,
}

/// Bytes under `dir`, every file counted.
pub fn dir_size(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_size(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

/// The shared stores under `stores`, largest first.
pub fn usage(stores: &Path) -> Vec<StoreUsage> {
    let mut out: Vec<StoreUsage> = std::fs::read_dir(stores)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().join("workspace").exists())
        .map(|e| {
            let dir = e.path();
            let sessions = std::fs::read_dir(dir.join("refs/finishline")).map(|d| d.flatten().filter(|s| s.path().is_dir()).count()).unwrap_or(0)
                + count_packed_sessions(&dir);
            StoreUsage {
                id: e.file_name().to_string_lossy().into_owned(),
                workspace: std::fs::read_to_string(dir.join("workspace")).unwrap_or_default(),
                bytes: dir_size(&dir),
                sessions,
            }
        })
        .collect();
    out.sort_by_key(|w| std::cmp::Reverse(w.bytes));
    out
}

/// Sessions whose refs git has packed (they no longer have a folder of their own).
fn count_packed_sessions(dir: &Path) -> usize {
    let loose: Vec<String> =
        std::fs::read_dir(dir.join("refs/finishline")).map(|d| d.flatten().map(|s| s.file_name().to_string_lossy().into_owned()).collect()).unwrap_or_default();
    let packed = std::fs::read_to_string(dir.join("packed-refs")).unwrap_or_default();
    let mut names: Vec<&str> = packed
        .lines()
        .filter_map(|l| l.split_once(" refs/finishline/"))
        .filter_map(|(_, r)| r.split('/').next())
        .filter(|n| !loose.iter().any(|l| l == n))
        .collect();
    names.sort();
    names.dedup();
    names.len()
}

/// Frees what no session needs any more: objects only deleted sessions used. Every remaining
/// session keeps its diffs and revert.
pub fn prune_store(stores: &Path, id: &str) -> Result<u64> {
    if id.is_empty() || id.contains('/') || id.contains("..") {
        return Err(Error::InvalidInput(format!("“{id}” is not a checkpoint store")));
    }
    let dir = stores.join(id);
    let workspace = std::fs::read_to_string(dir.join("workspace")).map_err(|_| Error::NotFound(format!("checkpoint store {id}")))?;
    let cp = Checkpoints {
        git_dir: dir.clone(),
        work_tree: PathBuf::from(workspace),
        max_file: DEFAULT_MAX_FILE,
        shared: true,
        refs: String::new(),
        own_data: None,
    };
    // Under the store's lock: no snapshot is between writing its objects and naming them.
    let _lock = cp.lock()?;
    let before = dir_size(&dir);
    // HEAD only marks the latest snapshot for `status`; it must not keep a deleted session's
    // objects alive, so it goes and comes back with the next snapshot.
    cp.git(&["symbolic-ref", "HEAD", "refs/heads/unborn"])?;
    cp.git(&["reflog", "expire", "--expire=now", "--all"])?;
    cp.git(&["gc", "--prune=now", "--quiet"])?;
    Ok(before.saturating_sub(dir_size(&dir)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A large file rewritten whole (a lockfile, a data export) is no reason for the review to
    /// hang: the line diff gives up on the finest answer after a deadline and still shows one.
    #[test]
    fn a_large_file_rewritten_whole_still_gets_its_diff() {
        let old: String = (0..200_000).map(|i| format!("old line {i}\n")).collect();
        let new: String = (0..200_000).map(|i| format!("new line {}\n", i * 7)).collect();
        let blob = |mode: &str| FileState::Blob { oid: String::new(), mode: mode.into() };
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(unified_diff("data.csv", &blob("100644"), &blob("100644"), old.as_bytes(), new.as_bytes()));
        });
        let diff = rx.recv_timeout(std::time::Duration::from_secs(60)).expect("the diff of a large rewritten file came back");
        assert!(diff.contains("-old line 0") && diff.ends_with("[… diff truncated …]\n"), "{}", &diff[..200]);
    }

    /// A file put back runs the person's smudge filter (git-lfs, git-crypt), which may leave a
    /// process of its own behind: it must not take the lock of the decision doing the revert with
    /// it, or a start after a kill would find that decision still under way and pass it by.
    /// Only the store's own lock goes with its git.
    #[test]
    fn a_file_put_back_leaves_no_process_holding_the_deciders_lock() {
        let data = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        std::fs::write(ws.path().join(".gitattributes"), "a.txt filter=bg\n").unwrap();
        std::fs::write(ws.path().join("a.txt"), "before\n").unwrap();
        let cp = Checkpoints::open_shared(&data.path().join("checkpoints"), ws.path(), "s1").unwrap();
        cp.git(&["config", "filter.bg.smudge", "sh -c '(sleep 5 </dev/null >/dev/null 2>&1 &); cat'"]).unwrap();
        let before = cp.file_states(&["a.txt"]).unwrap().remove(0);
        cp.snapshot("start").unwrap();
        std::fs::write(ws.path().join("a.txt"), "after\n").unwrap();
        let lock_file = data.path().join("locks").join("s1.lock");
        let held = crate::workspace::lock::FolderLock::acquire(&lock_file).unwrap();
        cp.restore_file("a.txt", &before).unwrap();
        assert_eq!(std::fs::read_to_string(ws.path().join("a.txt")).unwrap(), "before\n");
        drop(held);
        let again = crate::workspace::lock::FolderLock::try_acquire_within(&lock_file, std::time::Duration::from_secs(1)).unwrap();
        assert!(again.is_some(), "the filter's process does not hold the decision's lock");
    }

    /// The git a revert keeps running to read files writes nothing, so it never holds the lock
    /// of the decision that started it: a Finishline killed mid-revert leaves that git to notice
    /// its closed input a moment later, and the next start must find the decision free to finish.
    #[test]
    fn the_git_that_reads_files_for_a_revert_never_holds_the_deciders_lock() {
        let data = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        std::fs::write(ws.path().join("a.txt"), "a\n").unwrap();
        let cp = Checkpoints::open_shared(&data.path().join("checkpoints"), ws.path(), "s1").unwrap();
        let lock_file = data.path().join("locks").join("s1.lock");
        let held = crate::workspace::lock::FolderLock::acquire(&lock_file).unwrap();
        let mut reader = cp.reader();
        assert!(matches!(reader.state("a.txt").unwrap(), FileState::Blob { .. }), "the reader's git is running");
        drop(held);
        let again = crate::workspace::lock::FolderLock::try_acquire_within(&lock_file, std::time::Duration::from_secs(1)).unwrap();
        assert!(again.is_some(), "the decision's lock is free once its holder lets go, while the reader's git still runs");
    }
}
