//! Where a run works and what it changes there. A task in a git repository works in its own
//! worktree, made beside the first model request (tools wait for it); elsewhere in the folder
//! itself. Either way the run records a window around everything that can change files (a step's
//! tools, an external agent's turn, verification), and owns only what its windows saw change:
//! the review, the evaluator's evidence and revert cover that and nothing else.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;

use super::run::Run;
use super::Engine;
use crate::domain::*;
use crate::event::{EngineEvent, Envelope};
use crate::workspace::checkpoint::FileChange;
use crate::workspace::landing::Left;
use crate::workspace::ownership::Ownership;
use crate::workspace::worktree::{self, TaskWorktree};

/// Where this run works.
#[derive(Debug, Clone)]
pub struct TaskFolder {
    /// The folder the person chose.
    pub person_folder: PathBuf,
    /// The task's worktree, in a repository.
    pub worktree: Option<TaskWorktree>,
    /// The worktree exists but is not filled yet: the run's preparation checks it out.
    pub checkout_pending: bool,
    /// This run added the worktree, at its `base_commit`, which its checkout so holds (a worktree
    /// left unfilled by an earlier run may have had its branch moved since).
    pub made_now: bool,
    /// The checkout, under way since the worktree was added.
    pub filling: Filling,
    /// Made after the task's last worktree was decided: what became of that one. The agent is
    /// told, since its conversation still shows what it wrote there.
    pub earlier: Option<crate::judge::prompt::EarlierWork>,
}

/// A worktree's checkout, started the moment the run knows it needs one, so that it goes on
/// beside the rest of the run's start (reading the session, opening the checkpoint store, the
/// first model request); the run's preparation waits for it. Its result: the files copied in.
#[derive(Debug, Clone, Default)]
pub struct Filling(Arc<std::sync::Mutex<Option<std::thread::JoinHandle<crate::Result<Vec<String>>>>>>);

impl Filling {
    fn start(wt: &TaskWorktree, includes: &[String]) -> Filling {
        let (wt, includes) = (wt.clone(), includes.to_vec());
        let handle = std::thread::Builder::new().name("worktree-fill".into()).spawn(move || worktree::fill(&wt, &includes));
        Filling(Arc::new(std::sync::Mutex::new(handle.ok())))
    }

    /// Waits for the checkout (or, if none was started, does it now).
    fn wait(&self, wt: &TaskWorktree, includes: &[String]) -> crate::Result<Vec<String>> {
        let started = self.0.lock().unwrap_or_else(|p| p.into_inner()).take();
        match started {
            Some(h) => h.join().unwrap_or_else(|_| Err(crate::Error::Worktree("filling the task's worktree stopped unexpectedly".into()))),
            None => worktree::fill(wt, includes),
        }
    }
}

impl TaskFolder {
    /// The folder the agent, its tools and commands work in.
    pub fn work_dir(&self) -> PathBuf {
        self.worktree.as_ref().map(|w| w.work_dir()).unwrap_or_else(|| self.person_folder.clone())
    }

    /// The folder the checkpoints record: the whole worktree, or the person's folder.
    pub fn recorded(&self) -> PathBuf {
        self.worktree.as_ref().map(|w| PathBuf::from(&w.folder)).unwrap_or_else(|| self.person_folder.clone())
    }

    /// Where to read the project's instructions and listing before the worktree is filled: the
    /// person's own folder holds the same files.
    pub fn readable(&self) -> PathBuf {
        if self.checkout_pending {
            self.person_folder.clone()
        } else {
            self.work_dir()
        }
    }
}

/// Where the events of the task's current worktree begin: its latest `task_workspace` record.
pub(super) fn worktree_start(events: &[Envelope]) -> Option<usize> {
    events.iter().rposition(|e| matches!(e.event, EngineEvent::TaskWorkspace { .. }))
}

/// The task's current worktree was made after the person decided on it once: a task continued
/// after it landed or was rejected, an attempt continued after its group was decided (whether
/// its review was rejected or, without one, its worktree removed).
pub(super) fn continued_after_decision(events: &[Envelope]) -> bool {
    let decided = events.iter().position(|e| {
        matches!(e.event, EngineEvent::StatusChanged { status: SessionStatus::Rejected | SessionStatus::Completed, .. })
            || matches!(&e.event, EngineEvent::WorktreeRemoved { why, .. } if *why != WorktreeEnd::Unused)
    });
    matches!((decided, worktree_start(events)), (Some(d), Some(made)) if made > d)
}

/// Whether the worktree at `folder` was removed because the task stopped before changing
/// anything in it: no earlier work to speak of.
fn removed_unused(events: &[Envelope], folder: &str) -> bool {
    events.iter().any(|e| matches!(&e.event, EngineEvent::WorktreeRemoved { folder: f, why: WorktreeEnd::Unused, .. } if f == folder))
}

/// Whether the task had a worktree before its current one that held work (landed, rejected or
/// kept): a worktree put away unused does not count, its task is still at its first work.
fn worked_before(events: &[Envelope], current: usize) -> bool {
    events[..current].iter().any(|e| match &e.event {
        EngineEvent::TaskWorkspace { worktree: Some(wt), .. } => !removed_unused(events, &wt.folder),
        EngineEvent::TaskWorkspace { .. } => true,
        _ => false,
    })
}

/// The events since the task's current worktree was made (all of them before it had one).
pub(super) fn since_worktree(events: &[Envelope]) -> &[Envelope] {
    &events[worktree_start(events).unwrap_or(0)..]
}

/// The task's latest `task_workspace` record, and whether its worktree was removed since.
fn latest_workspace(events: &[Envelope]) -> Option<(Isolation, String, Option<TaskWorktree>, bool, bool)> {
    let at = worktree_start(events)?;
    let EngineEvent::TaskWorkspace { isolation, folder, worktree } = &events[at].event else { return None };
    let later = &events[at + 1..];
    // Its own removal: an older worktree's removal, done late, may be recorded after this one.
    let own = worktree.as_ref().map(|w| w.folder.as_str());
    let removed = later.iter().any(|e| matches!(&e.event, EngineEvent::WorktreeRemoved { folder: f, .. } if Some(f.as_str()) == own));
    let ready = later.iter().any(|e| matches!(e.event, EngineEvent::WorktreeReady { .. }));
    Some((*isolation, folder.clone(), worktree.clone(), removed, ready))
}

/// The folder a session's next run cannot go on without: in a worktree, the person's repository
/// (a worktree deleted is made again from it, as a new one after a decision is); in the folder
/// itself, that folder. A subfolder of the repository the person chose may come and go with
/// their branch: the worktree holds its own copy.
pub fn folder_a_run_needs(events: &[Envelope], person_folder: &str) -> PathBuf {
    match latest_workspace(events) {
        Some((Isolation::Worktree, _, Some(wt), _, _)) => PathBuf::from(wt.repo),
        Some((_, folder, _, _, _)) => PathBuf::from(folder),
        None => PathBuf::from(person_folder),
    }
}

/// Whether the task's current worktree was decided (landed or rejected) since it was made: its
/// removal follows the decision.
fn decided_since(events: &[Envelope]) -> bool {
    let Some(at) = worktree_start(events) else { return false };
    events[at + 1..].iter().any(|e| matches!(e.event, EngineEvent::StatusChanged { status: SessionStatus::Completed | SessionStatus::Rejected, .. }))
}

/// Whether the person's last decision sent the task back to resolve a merge of their branch:
/// a `LandingConflict` continuation since that decision (in `events`, the current worktree's).
fn resolving_a_merge(events: &[Envelope]) -> bool {
    let decided = events.iter().rposition(|e| matches!(e.event, EngineEvent::ReviewResolved { .. })).unwrap_or(0);
    events[decided..].iter().any(|e| matches!(e.event, EngineEvent::Continuation { source: ContinuationSource::LandingConflict, .. }))
}

/// The untracked files copied into the task's current worktree.
pub(super) fn copied_files(events: &[Envelope]) -> Vec<String> {
    since_worktree(events)
        .iter()
        .rev()
        .find_map(|e| if let EngineEvent::WorktreeReady { copied } = &e.event { Some(copied.clone()) } else { None })
        .unwrap_or_default()
}

/// What the work of the task's current worktree was asked as, when it follows an earlier
/// worktree's (landed, or rejected: a new worktree holds only what was asked since): the
/// person's message whose run made the worktree's first commit (a question before it changes
/// nothing). `None` for the task's first worktree: the task's title names that work.
pub(super) fn follow_up_asked(events: &[Envelope]) -> Option<&str> {
    let ws = worktree_start(events)?;
    if !worked_before(events, ws) {
        return None;
    }
    let upto = events[ws..].iter().position(|e| matches!(e.event, EngineEvent::TaskCommitted { .. })).map_or(events.len(), |i| ws + i);
    events[..upto].iter().rev().find_map(|e| match &e.event {
        EngineEvent::MessageCreated { role: MessageRole::User, text: Some(t), .. } if !t.trim().is_empty() => Some(t.as_str()),
        _ => None,
    })
}

/// What the person asked for with Request changes in the task's current worktree, in order: the
/// words they wrote and each line comment (`more.txt:1: write extra.txt`). The work a landing
/// carries answers each.
pub(super) fn asked_at_review(events: &[Envelope]) -> Vec<String> {
    let mut out = Vec::new();
    for e in since_worktree(events) {
        match &e.event {
            EngineEvent::ReviewResolved { decision: Decision::RequestChanges, feedback: Some(f), .. } if !f.trim().is_empty() => out.push(f.trim().to_string()),
            // A comment not met is carried into the next round's set: asked once.
            EngineEvent::CriteriaSet { criteria } => {
                for c in criteria.iter().map(|c| c.criterion()) {
                    if !out.contains(&c) {
                        out.push(c);
                    }
                }
            }
            // One the person let go is no longer asked: the work does not answer it.
            EngineEvent::CommentsLetGo { comments, .. } => out.retain(|c| !comments.contains(c)),
            _ => {}
        }
    }
    out
}

/// What the person asked with the Request changes this run answers, when the last decision was
/// that: their words, else their line comments (the round a merge conflict started asks nothing).
fn answers_request(events: &[Envelope]) -> Option<String> {
    let events = since_worktree(events);
    let at = events.iter().rposition(|e| matches!(e.event, EngineEvent::ReviewResolved { .. }))?;
    let EngineEvent::ReviewResolved { decision: Decision::RequestChanges, feedback, .. } = &events[at].event else { return None };
    if let Some(f) = feedback.as_deref().map(str::trim).filter(|f| !f.is_empty()) {
        return Some(f.to_string());
    }
    let comments: Vec<String> = events[at..]
        .iter()
        .find_map(|e| if let EngineEvent::CriteriaSet { criteria } = &e.event { Some(criteria.iter().map(|c| c.criterion()).collect()) } else { None })
        .unwrap_or_default();
    (!comments.is_empty()).then(|| comments.join("\n"))
}

/// Whether the task's worktree holds nothing to decide, as far as its history and git can
/// tell: filled, no commit of the task's, HEAD and the branch where they started, and nothing
/// beyond the files copied in at the start, still as given (see [`Run::put_away_if_unused`],
/// which also asks the window).
pub(super) fn unused(events: &[Envelope], wt: &TaskWorktree) -> bool {
    let here = since_worktree(events);
    let filled = here.iter().any(|e| matches!(e.event, EngineEvent::WorktreeReady { .. }));
    let committed = here.iter().any(|e| matches!(e.event, EngineEvent::TaskCommitted { .. }));
    if !filled || committed {
        return false;
    }
    let copied = copied_files(events);
    let folder = Path::new(&wt.folder);
    let at_base = |rev: &str| worktree::git(folder, &["rev-parse", "--verify", "-q", rev]).is_ok_and(|h| h.trim() == wt.base_commit);
    // The agent may have committed on the branch, and checked out another commit since.
    at_base("HEAD")
        && at_base(&format!("refs/heads/{}", wt.branch))
        // What git lists beyond the branch is the copies, exactly: a folder it lists whole may
        // hold a file the agent added beside one.
        && worktree::changed_paths(wt).is_ok_and(|c| c.iter().all(|p| copied.contains(p)))
        && worktree::ignored_written(wt, &[]).is_ok_and(|i| i.iter().all(|p| copied.contains(p)))
        && copies_as_given(wt, &copied)
        && crate::workspace::submodules::changed(wt).is_empty()
        && worktree::git_ok(folder, &["diff", "--quiet", "--ignore-submodules=none", "HEAD"])
}

/// The record of an unused worktree's removal, written before anything goes: a removal cut
/// short is finished by the next start's sweep.
pub(super) fn unused_removed(wt: &TaskWorktree) -> EngineEvent {
    EngineEvent::WorktreeRemoved { folder: wt.folder.clone(), why: WorktreeEnd::Unused, branch_deleted: Some(wt.branch.clone()) }
}

/// Whether the files copied into the worktree at its start are still exactly the person's: the
/// agent's shell or the person may have edited one. A folder copied whole, many files or a large
/// one count as changed: telling would take too long, and keeping the worktree is safe.
fn copies_as_given(wt: &TaskWorktree, copied: &[String]) -> bool {
    const MAX_FILES: usize = 100;
    const MAX_BYTES: u64 = 4 << 20;
    copied.len() <= MAX_FILES
        && copied.iter().all(|rel| {
            let (theirs, ours) = (Path::new(&wt.repo).join(rel), Path::new(&wt.folder).join(rel));
            let small_file = |p: &Path| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_file() && m.len() <= MAX_BYTES);
            // The person's may be a named pipe now (a secrets manager serving it): not what was
            // copied, and reading it would wait for its writer.
            !rel.ends_with('/')
                && small_file(&ours)
                && small_file(&theirs)
                && matches!((std::fs::read(&theirs), std::fs::read(&ours)), (Ok(a), Ok(b)) if a == b)
        })
}

/// Where the task's branch was left in its current worktree, as recorded: its last commit and
/// the files it changes since the task started; its start when it committed nothing.
pub(super) fn left_at(events: &[Envelope], wt: &TaskWorktree) -> Left {
    since_worktree(events)
        .iter()
        .rev()
        .find_map(|e| match &e.event {
            EngineEvent::TaskCommitted { commit, files_since_start, .. } => Some(Left { commit: commit.clone(), files: files_since_start.clone() }),
            _ => None,
        })
        .unwrap_or_else(|| Left { commit: wt.base_commit.clone(), files: Some(vec![]) })
}

/// The task's worktree as last recorded, while it still has one.
pub fn current_worktree(events: &[Envelope]) -> Option<TaskWorktree> {
    match latest_workspace(events) {
        Some((Isolation::Worktree, _, Some(wt), false, _)) => Some(wt),
        _ => None,
    }
}

impl Engine {
    /// Where a run of `session` works. A task whose worktree is gone (it landed, or was rejected)
    /// and that the person continues gets a new worktree from its branch as it is now. A
    /// worktree not made yet is added here, empty (milliseconds); the run's preparation fills it.
    pub(super) fn task_folder(&self, session: &SessionId, person_folder: &str, events: &[Envelope]) -> crate::Result<TaskFolder> {
        let person = PathBuf::from(person_folder);
        let Some((isolation, folder, wt, removed, ready)) = latest_workspace(events) else {
            // Sessions from before tasks had worktrees worked in place.
            return Ok(TaskFolder {
                person_folder: person,
                worktree: None,
                checkout_pending: false,
                made_now: false,
                filling: Filling::default(),
                earlier: None,
            });
        };
        let Some(mut wt) = wt.filter(|_| isolation == Isolation::Worktree) else {
            return Ok(TaskFolder {
                person_folder: PathBuf::from(folder),
                worktree: None,
                checkout_pending: false,
                made_now: false,
                filling: Filling::default(),
                earlier: None,
            });
        };
        // Decided (landed or rejected), its removal may still be under way, here or in another
        // process: the task goes on in a new worktree, never in the one being removed.
        if removed || decided_since(events) {
            let unused = removed_unused(events, &wt.folder);
            let repo = worktree::repo_of(Path::new(&wt.repo), &self.config.tasks.worktrees).ok_or_else(|| {
                crate::Error::Worktree(format!("{} is no longer a git repository with a commit, so the task cannot continue in a worktree of it", wt.repo))
            })?;
            let attempt = events.iter().filter(|e| matches!(e.event, EngineEvent::TaskWorkspace { .. })).count() as u32 + 1;
            let task = self.store.session(session)?.task;
            let base = wt.base_branch.clone().filter(|b| worktree::git_ok(Path::new(&wt.repo), &["rev-parse", "-q", "--verify", &format!("refs/heads/{b}")]));
            let mut next = worktree::plan(&repo, &self.config.tasks.worktrees, session.as_str(), &task, base.as_deref(), attempt)?;
            next.subdir = wt.subdir.clone();
            self.store.append(
                session,
                None,
                EngineEvent::TaskWorkspace {
                    isolation: Isolation::Worktree,
                    folder: next.work_dir().to_string_lossy().into_owned(),
                    worktree: Some(next.clone()),
                },
            )?;
            wt = next;
            worktree::add_empty(&wt, session.as_str())?;
            let filling = Filling::start(&wt, &self.config.tasks.includes);
            use crate::judge::prompt::EarlierWork;
            let earlier = if unused {
                EarlierWork::Unused
            } else {
                since_worktree(events)
                    .iter()
                    .rev()
                    .find_map(|e| match &e.event {
                        EngineEvent::Landed { branch_kept: Some(b), .. } => Some(EarlierWork::Kept(b.clone())),
                        EngineEvent::Landed { .. } => Some(EarlierWork::Landed),
                        _ => None,
                    })
                    .unwrap_or(EarlierWork::Rejected { landed_before: events.iter().any(|e| matches!(e.event, EngineEvent::Landed { branch_kept: None, .. })) })
            };
            return Ok(TaskFolder { person_folder: person, worktree: Some(wt), checkout_pending: true, made_now: true, filling, earlier: Some(earlier) });
        }
        if !Path::new(&wt.folder).join(".git").exists() {
            worktree::add_empty(&wt, session.as_str())?;
            let filling = Filling::start(&wt, &self.config.tasks.includes);
            return Ok(TaskFolder { person_folder: person, worktree: Some(wt), checkout_pending: true, made_now: true, filling, earlier: None });
        }
        let filling = if ready { Filling::default() } else { Filling::start(&wt, &self.config.tasks.includes) };
        Ok(TaskFolder { person_folder: person, worktree: Some(wt), checkout_pending: !ready, made_now: false, filling, earlier: None })
    }
}

/// Waits for a task's worktree to be filled (checkout, then the untracked files it is given).
fn fill_worktree(engine: &Engine, session: &SessionId, run: &RunId, wt: &TaskWorktree, filling: &Filling) -> crate::Result<Vec<String>> {
    let copied = filling.wait(wt, &engine.config.tasks.includes)?;
    engine.store.append(session, Some(run), EngineEvent::WorktreeReady { copied: copied.clone() })?;
    Ok(copied)
}

impl Run {
    /// Starts what must happen before the first change: filling the task's worktree, then the
    /// first snapshot. It runs while the model thinks; tools wait for it
    /// ([`Run::checkpoint_ready`]).
    pub(super) fn start_preparing(&mut self) {
        let cp = self.checkpoints.clone();
        let pending = self.folder.checkout_pending.then(|| self.folder.worktree.clone()).flatten();
        let (made_now, filling) = (self.folder.made_now, self.folder.filling.clone());
        if cp.is_none() && pending.is_none() {
            return;
        }
        let files: Arc<AtomicUsize> = self.first_snapshot_files.clone();
        let engine = self.engine.clone();
        let (session, run) = (self.session.clone(), self.run.clone());
        self.first_snapshot = Some(tokio::task::spawn_blocking(move || {
            let objects = pending.as_ref().and_then(|wt| worktree::objects_dir(Path::new(&wt.folder)));
            // A new worktree's first checkpoint is its commit, which needs none of its files: it
            // is made while git fills the worktree. Should that fail, the snapshot below reads
            // the files instead, and says why if it fails too.
            let early = match (&cp, &pending, &objects) {
                (Some(cp), Some(wt), Some(objects)) if made_now => cp.start_at_commit(objects, &wt.base_commit, "run start").ok().flatten(),
                _ => None,
            };
            let copied = match &pending {
                Some(wt) => Some(fill_worktree(&engine, &session, &run, wt, &filling)?),
                None => None,
            };
            let Some(cp) = cp else { return Ok(None) };
            let snap = (|| {
                let index = pending.as_ref().and_then(|wt| worktree::index_file(Path::new(&wt.folder)));
                let paths: Vec<&str> = copied.iter().flatten().map(String::as_str).collect();
                let snap = match (&early, &index, &objects, &copied) {
                    (Some(first), _, _, _) => {
                        cp.adopt_index(index.as_deref(), first)?;
                        if paths.is_empty() {
                            first.clone()
                        } else {
                            // The files copied in are the person's, not the task's: the run
                            // starts after them.
                            let snap = cp.snapshot_known("run start", &paths)?;
                            cp.mark("base", &snap)?;
                            snap
                        }
                    }
                    // A new worktree for a store from before (a continued session's own): its
                    // index is not this worktree's, so the files are read.
                    (None, _, _, Some(_)) if made_now => cp.snapshot_counted("run start", &files)?,
                    (None, Some(index), Some(objects), Some(_)) => {
                        // A worktree's store borrows the repository's objects and starts from
                        // the worktree's own index: it is the branch's commit plus the files
                        // copied in, so its first snapshot walks nothing.
                        cp.borrow_objects(objects, index)?;
                        cp.snapshot_known("run start", &paths)?
                    }
                    _ => cp.snapshot_counted("run start", &files)?,
                };
                if cp.marked("base").is_none() {
                    cp.mark("base", &snap)?;
                }
                Ok(snap)
            })();
            Ok(Some(snap))
        }));
    }

    /// Opens a window: what changes from now until [`Run::close_window`] is this run's.
    /// `writes`: the paths the agent's own file tools will write in it, when nothing else runs in
    /// it (see [`crate::workspace::ownership::OwnedChange::unattributed`]).
    pub(super) async fn open_window(&mut self, writes: Option<Vec<String>>) -> Result<(), super::run::Halt> {
        self.checkpoint_ready().await?;
        // This run's tools start a window of their own.
        self.close_window_left_open().await?;
        if self.evidence.window_open.is_some() {
            // Still open (tools that ended with an error): nothing in it is surely the agent's own
            // any more. Its tools take turns with other tasks' and reverts as any window's do.
            self.evidence.open_writes = None;
            if self.folder.worktree.is_none() && self.window_lock.is_none() && self.checkpoints.is_some() {
                self.window_lock = Some(self.wait_for_the_folder().await?);
            }
            self.emit_saving(vec![])?;
            return Ok(());
        }
        let Some(cp) = self.checkpoints.clone() else {
            self.emit_saving(vec![])?;
            return Ok(());
        };
        if self.folder.worktree.is_none() {
            self.window_lock = Some(self.wait_for_the_folder().await?);
        }
        // In the task's own worktree nothing else writes: the window starts where the run's
        // last snapshot left it, with no walk of its own.
        let snap = match (&self.folder.worktree, self.last_snapshot()) {
            (Some(_), Some(last)) => last,
            _ => tokio::task::block_in_place(|| cp.snapshot("before"))?,
        };
        self.heartbeat = Some(crate::workspace::last_seen::Heartbeat::start(&self.engine.config.data_dir, self.session.as_str()));
        self.evidence.window_open = Some(snap);
        self.evidence.open_writes = writes;
        // Kept before its tools run: a run killed while they do is resumed with the window
        // still open, so what they changed is the run's (its start too: the first window of a
        // run comes before any other save of its evidence).
        self.emit_saving(vec![])?;
        Ok(())
    }

    /// Windows of tasks that share a folder (a plain folder, "run anyway") take turns, across
    /// processes: a file another task writes while this one's window is open would be counted
    /// as this one's, shown in its review and deleted by its revert. Waits while another task's
    /// tools run, saying so, and gives up when the run is cancelled.
    async fn wait_for_the_folder(&mut self) -> Result<crate::workspace::lock::WindowLock, super::run::Halt> {
        let mut told = false;
        loop {
            if let Some(lock) = crate::workspace::lock::WindowLock::try_take(&self.engine.config.data_dir, self.workspace.root())? {
                return Ok(lock);
            }
            if self.cancel.is_cancelled() {
                return Err(super::run::Halt::Cancelled);
            }
            if !told {
                told = true;
                let detail = "another task's tools in this folder, or one around or inside it: changes are counted one task at a time".to_string();
                self.emit(EngineEvent::Activity { phase: ActivityPhase::Waiting, detail })?;
            }
            tokio::time::sleep(std::time::Duration::from_millis(25)).await;
        }
    }

    /// Closes a window a kill left open (this process opened none: it spans the time the app was
    /// closed), taking the folder's turn first as a window's tools do, so another task's writes
    /// in a shared folder meanwhile are not this one's.
    pub(super) async fn close_window_left_open(&mut self) -> Result<(), super::run::Halt> {
        if self.evidence.window_open.is_none() || self.heartbeat.is_some() {
            return Ok(());
        }
        if self.folder.worktree.is_none() && self.window_lock.is_none() && self.checkpoints.is_some() {
            self.window_lock = Some(self.wait_for_the_folder().await?);
        }
        self.close_window()?;
        Ok(())
    }

    /// In the task's worktree, what changed after its last window (the person's hand there once
    /// it ended) is shown with its work, marked as someone's edit: a reject keeps the branch that
    /// holds it. Recorded as a window of its own.
    pub(super) fn take_in_changes_after_the_task(&mut self) -> crate::Result<()> {
        let (Some(cp), Some(last)) = (self.checkpoints.clone(), self.last_snapshot()) else { return Ok(()) };
        let now = tokio::task::block_in_place(|| cp.snapshot("review"))?;
        let changed = tokio::task::block_in_place(|| cp.window_changes(&last, &now))?;
        if changed.is_empty() {
            return Ok(());
        }
        let at = self.evidence.windows.len();
        self.evidence.window_unseen.insert(at, changed.into_iter().map(|c| c.path).collect());
        self.evidence.window_writes.resize(at, None);
        self.evidence.windows.push((last, now));
        self.evidence.window_writes.push(None);
        self.emit_saving(vec![])
    }

    /// The run's latest snapshot: the end of its last window, else its start.
    fn last_snapshot(&self) -> Option<String> {
        self.evidence.windows.last().map(|(_, after)| after.clone()).or_else(|| self.evidence.base_snapshot.clone())
    }

    /// Closes the open window, if any, and keeps it with the run's evidence.
    pub(super) fn close_window(&mut self) -> crate::Result<()> {
        let Some(before) = self.evidence.window_open.take() else { return Ok(()) };
        let Some(cp) = self.checkpoints.clone() else { return Ok(()) };
        let after = match tokio::task::block_in_place(|| cp.snapshot("after")) {
            Ok(after) => after,
            Err(e) => {
                self.window_lock = None;
                return Err(e);
            }
        };
        let marked = cp.mark("agent", &after);
        let left_by_a_kill = self.heartbeat.is_none();
        if left_by_a_kill {
            let unseen = self.changed_while_unseen(&cp, &before, &after);
            if !unseen.is_empty() {
                self.evidence.window_unseen.insert(self.evidence.windows.len(), unseen);
            }
        }
        // Evidence from before writes were kept has none beside its earlier windows.
        let writes = self.evidence.open_writes.take();
        self.evidence.window_writes.resize(self.evidence.windows.len(), None);
        self.evidence.windows.push((before, after));
        self.evidence.window_writes.push(writes);
        // Saved while the folder is still this run's: a revert that takes it next reads this
        // window among the run's changes. Closing the file lets the next window open.
        let saved = self.emit_saving(vec![]);
        self.window_lock = None;
        self.heartbeat = None;
        if saved.is_ok() {
            crate::workspace::last_seen::forget(&self.engine.config.data_dir, self.session.as_str());
        }
        marked?;
        saved
    }

    /// What a window left open (by a kill, or a process that ended while a question waited)
    /// changed after the run was last seen alive: it may be the person's edit made meanwhile.
    fn changed_while_unseen(&self, cp: &crate::workspace::checkpoint::Checkpoints, before: &str, after: &str) -> Vec<String> {
        let seen = crate::workspace::last_seen::last_beat(&self.engine.config.data_dir, self.session.as_str());
        let Ok(changes) = tokio::task::block_in_place(|| cp.window_changes(before, after)) else { return vec![] };
        crate::workspace::last_seen::changed_after(cp.work_tree(), changes.into_iter().map(|c| c.path), seen)
    }

    /// This run's own changes so far.
    pub(super) fn own(&mut self) -> Ownership {
        let Some(cp) = self.checkpoints.clone() else { return Ownership::default() };
        while self.owned_folded < self.evidence.windows.len() {
            let (b, a) = &self.evidence.windows[self.owned_folded];
            if let Ok(w) = tokio::task::block_in_place(|| cp.window_changes(b, a)) {
                self.owned.add_window(w, self.evidence.writes_of(self.owned_folded), self.evidence.unseen_in(self.owned_folded));
            }
            self.owned_folded += 1;
        }
        self.owned.clone()
    }

    /// Whether this run changed files: a follow-up "thanks!" after finished work changes none,
    /// so it is judged as the conversation turn it is.
    pub(super) fn run_changed_files(&mut self) -> bool {
        !self.own().is_empty()
    }

    /// The changes the person decides on (`whole`): this run's, with those of the session's
    /// earlier runs since the person last decided (a plan's steps, a run cut short and resumed);
    /// else this run's alone (a plan step is judged on its own). An attempt of a group is decided
    /// on whole, against the others: all its runs since its worktree began, which is what
    /// choosing it lands.
    fn scoped(&mut self, whole: bool) -> Ownership {
        if !whole {
            return self.own();
        }
        let since = if self.is_attempt() { Since::Worktree } else { Since::Decision };
        self.since(since)
    }

    /// Whether the person has changes to decide on (see [`Run::changes`]).
    pub(super) fn has_changes_to_review(&mut self) -> bool {
        !self.scoped(true).is_empty()
    }

    /// This run's changes with those of the session's earlier runs since `since`.
    fn since(&mut self, since: Since) -> Ownership {
        let Some(cp) = self.checkpoints.clone() else { return Ownership::default() };
        let mut all = Ownership::default();
        // A resumed run goes on from the windows of the run it resumes: each is folded once, or
        // its second fold would read as an edit someone made between the run's own.
        let mut folded = std::collections::HashSet::new();
        for w in self.earlier_windows(since).into_iter().chain(self.evidence.windows_with_writes()) {
            if !folded.insert((w.before.clone(), w.after.clone())) {
                continue;
            }
            if let Ok(changes) = tokio::task::block_in_place(|| cp.window_changes(&w.before, &w.after)) {
                all.add_window(changes, w.writes.as_deref(), &w.unseen);
            }
        }
        all
    }

    /// The changes the person decides on, with diffs.
    pub(super) fn changes(&mut self) -> Vec<FileChange> {
        let Some(cp) = self.checkpoints.clone() else { return vec![] };
        if let Some(landing) = self.merged_changes(&cp) {
            return landing;
        }
        let all = self.scoped(true);
        tokio::task::block_in_place(|| cp.owned_diffs(&all.changes())).unwrap_or_default()
    }

    /// After the person's branch was merged into the task's for the agent to resolve (their
    /// last decision was "let the agent resolve it"), the round's own edits are of files full of
    /// conflict markers, which says nothing about what Approve would land. The person decides on
    /// the task's branch against their branch as merged: exactly what lands. `None` otherwise, or
    /// while the merge is still open (the next landing meets the conflict again).
    fn merged_changes(&self, cp: &crate::workspace::checkpoint::Checkpoints) -> Option<Vec<FileChange>> {
        let wt = self.folder.worktree.as_ref()?;
        let events = self.engine.store.events(&self.session, 0).ok()?;
        if !resolving_a_merge(since_worktree(&events)) {
            return None;
        }
        let folder = Path::new(&wt.folder);
        if worktree::git_ok(folder, &["rev-parse", "-q", "--verify", "MERGE_HEAD"]) {
            return None;
        }
        let head = worktree::git(folder, &["rev-parse", "HEAD"]).ok()?.trim().to_string();
        // The person's branch as it was merged: the second parent of the task's latest merge
        // (only a resolve merges into a task's branch). Not their branch's tip, nor the two's
        // merge-base: a branch they amended or rebased since would no longer hold that commit.
        let since_base = format!("{}..HEAD", wt.base_commit);
        let merge = worktree::git(folder, &["rev-list", "--first-parent", "--merges", "-n", "1", &since_base]).ok()?.trim().to_string();
        if merge.is_empty() {
            return None;
        }
        let theirs = worktree::git(folder, &["rev-parse", "-q", "--verify", &format!("{merge}^2")]).ok()?.trim().to_string();
        // The store reads the repository's objects, so it can tell the two commits apart.
        let changes = tokio::task::block_in_place(|| cp.window_changes(&theirs, &head)).ok()?;
        let landing: Vec<_> = changes
            .into_iter()
            .map(|c| crate::workspace::ownership::OwnedChange { path: c.path, before: c.before, after: c.after, unattributed: false, edited_between: false })
            .collect();
        tokio::task::block_in_place(|| cp.owned_diffs(&landing)).ok()
    }

    /// This run's changes alone, with diffs (a plan step is judged on its own).
    pub(super) fn own_changes(&mut self) -> Vec<FileChange> {
        let Some(cp) = self.checkpoints.clone() else { return vec![] };
        let own = self.own();
        tokio::task::block_in_place(|| cp.owned_diffs(&own.changes())).unwrap_or_default()
    }

    /// The audit of what Approve would accept (`whole`), else of this run's changes: gamed checks, less what the
    /// person dismissed for this session.
    pub(super) fn audit(&mut self, whole: bool) -> Vec<crate::judge::audit::Finding> {
        let Some(cp) = self.checkpoints.clone() else { return vec![] };
        // Of the whole task, what Approve would accept: a round sent back with Request changes
        // is not accepted, and its gamed test lands with the next round's fix.
        let changes = if whole { self.since(Since::Accepted) } else { self.own() }.changes();
        let Ok(texts) = tokio::task::block_in_place(|| cp.owned_texts(&changes)) else { return vec![] };
        let files: Vec<crate::judge::audit::AuditFile> =
            texts.iter().map(|(p, b, a)| crate::judge::audit::AuditFile { path: p, before: b.as_deref(), after: a.as_deref() }).collect();
        let events = self.engine.store.events(&self.session, 0).unwrap_or_default();
        // What verified the task, the agent's own claims' commands too: rewriting the script one
        // runs makes it pass.
        let mut claimed: Vec<String> = Vec::new();
        for e in &events {
            if let EngineEvent::Verification { command, skipped: false, persons_own: false, .. } = &e.event {
                if !claimed.contains(command) && !self.verify_commands.contains(command) {
                    claimed.push(command.clone());
                }
            }
        }
        let found = crate::judge::audit::audit_with_claims(&files, &self.verify_commands, &claimed);
        standing_findings(found, &events)
    }

    /// The review comments this run plainly has not addressed: their files are untouched since
    /// the review. Found without a model; the evaluator judges the rest.
    pub(super) fn open_criteria(&mut self) -> Vec<String> {
        if self.criteria.is_empty() || !self.judges_whole() {
            return vec![];
        }
        // A comment is addressed by the runs since it was made, even in an attempt.
        let changed: Vec<String> = self.since(Since::Decision).changes().into_iter().map(|c| c.path).collect();
        let found = crate::judge::criteria::check_without_model(&self.criteria, &changed);
        found.into_iter().flatten().map(|r| r.text).collect()
    }

    /// Files of the merge Finishline started for the agent to resolve that still hold conflict
    /// markers (row 13a); none outside such a run: a merge the agent started itself is its own.
    pub(super) fn markers_left(&self) -> Vec<String> {
        let Some(wt) = self.folder.worktree.as_ref().filter(|wt| worktree::merging(wt)) else { return vec![] };
        let Ok(events) = self.engine.store.events(&self.session, 0) else { return vec![] };
        if !resolving_a_merge(since_worktree(&events)) {
            return vec![];
        }
        tokio::task::block_in_place(|| worktree::unresolved_conflicts(wt))
    }

    /// Whether this run's judgement is of the whole task: not a plan step before the last, which
    /// is judged on its own work. The person's review comments are the whole task's criteria.
    pub(super) fn judges_whole(&self) -> bool {
        self.plan_step.as_ref().is_none_or(|s| s.last) || self.judge_whole
    }

    /// Judges the criteria after an evaluation (or without one) and records the result.
    pub(super) fn check_criteria(
        &mut self,
        verdict_done: Option<bool>,
        remaining: &[String],
        answers: &[crate::judge::criteria::CommentAnswer],
    ) -> crate::Result<()> {
        if self.criteria.is_empty() {
            return Ok(());
        }
        let changed: Vec<String> = self.since(Since::Decision).changes().into_iter().map(|c| c.path).collect();
        let found = crate::judge::criteria::check_without_model(&self.criteria, &changed);
        let results = crate::judge::criteria::settle(&self.criteria, found, verdict_done, remaining, answers);
        self.criteria_results = results.clone();
        self.criteria_checked_at = Some(self.evidence.windows.len());
        self.emit(EngineEvent::CriteriaChecked { results })
    }

    /// The paths this run changed after its first `at` windows. Its own windows: in a plain
    /// folder one where a command or an external agent ran may hold an edit the person made
    /// meanwhile. Nothing without checkpoints, which record the windows.
    pub(super) fn changed_after_window(&self, at: usize) -> Vec<String> {
        self.changed_in_windows(at, self.evidence.windows.len())
    }

    /// The paths changed in windows `from..to`.
    pub(super) fn changed_in_windows(&self, from: usize, to: usize) -> Vec<String> {
        let Some(cp) = self.checkpoints.as_ref() else { return vec![] };
        let windows = self.evidence.windows.get(from..to.max(from)).unwrap_or_default();
        windows.iter().flat_map(|(b, a)| tokio::task::block_in_place(|| cp.window_changes(b, a)).unwrap_or_default()).map(|c| c.path).collect()
    }

    /// Whether the last verdict was on files the agent changed since (it went on after "not
    /// done", and the run ended on a failing check before the evaluator was asked again).
    pub(super) fn verdict_outdated(&self) -> bool {
        self.evidence.verdict_at_window.is_some_and(|at| !self.changed_after_window(at).is_empty())
    }

    /// The checklist as the files stand at the review. A run can end without asking the
    /// evaluator again (a comment's file back as it was sends the agent back with no model
    /// call, until the budget runs out), so a comment's earlier tick may be of files since
    /// changed: checked again without a model (unmet when its file is back as it was at the
    /// comment), else left to the person, since the evaluator's word was on other contents.
    pub(super) fn criteria_at_review(&mut self) -> crate::Result<()> {
        use crate::judge::criteria::{CriterionResult, CriterionState};
        if self.criteria.is_empty() {
            return Ok(());
        }
        if self.criteria_results.len() != self.criteria.len() {
            // Reviewed without an evaluation (a claim of partial work, stuck): what needs no model.
            return self.check_criteria(None, &[], &[]);
        }
        let Some(at) = self.criteria_checked_at else { return Ok(()) };
        let moved = self.changed_after_window(at);
        if moved.is_empty() {
            return Ok(());
        }
        let changed: Vec<String> = self.since(Since::Decision).changes().into_iter().map(|c| c.path).collect();
        let found = crate::judge::criteria::check_without_model(&self.criteria, &changed);
        let results: Vec<CriterionResult> = self
            .criteria
            .iter()
            .zip(found)
            .zip(self.criteria_results.clone())
            .map(|((c, found), before)| match found {
                Some(unmet) => unmet,
                None if moved.contains(&c.path) && before.state != CriterionState::Unverifiable => {
                    CriterionResult { state: CriterionState::Unverifiable, evidence: format!("{} changed after the evaluator's word on it", c.path), ..before }
                }
                None => before,
            })
            .collect();
        self.criteria_checked_at = Some(self.evidence.windows.len());
        if results == self.criteria_results {
            return Ok(());
        }
        self.criteria_results = results.clone();
        self.emit(EngineEvent::CriteriaChecked { results })
    }

    /// A task that stopped (cancelled, failed, or answered in words) without changing anything
    /// in its worktree leaves the person nothing to decide: the worktree and its branch go, so
    /// the task does not wait for them, and a message to go on makes a new one. The removal is
    /// recorded before anything goes (a stop cut short, or a resume meanwhile, never works in a
    /// half-deleted folder; the next start's sweep finishes it), and done in the background, so
    /// the stop is not held up by deleting a large checkout. Returns whether it was put away.
    ///
    /// Anything that may be the task's or the person's keeps it: a commit (on the branch or
    /// where HEAD is), a change a window saw (one a stop cut short is closed first) or git sees,
    /// a file the ignore rules hide, a change inside a submodule, a file copied in at the start
    /// that is no longer as the person's (the agent's shell or the person may have edited it). So do a checkout still being filled and an
    /// attempt's worktree, which goes with its group's decision. Left: a file someone saves into
    /// the worktree in the moment between this look and the removal.
    pub(super) fn put_away_if_unused(&mut self) -> bool {
        let Some(wt) = self.folder.worktree.clone() else { return false };
        if self.first_snapshot.as_ref().is_some_and(|h| !h.is_finished()) || self.is_attempt() || self.close_window().is_err() {
            return false;
        }
        let Ok(events) = self.engine.store.events(&self.session, 0) else { return false };
        if !self.since(Since::Worktree).changes().is_empty() || !tokio::task::block_in_place(|| unused(&events, &wt)) {
            return false;
        }
        if self.emit(unused_removed(&wt)).is_err() {
            return false;
        }
        self.folder.worktree = None;
        self.engine.remove_in_background(&self.session, &wt, true, None);
        true
    }

    /// How the person decided the task before, if they did: completed once any of its work
    /// landed, else rejected (as `sessions discard` records it).
    pub(super) fn decided_before(&self) -> Option<SessionStatus> {
        let events = self.engine.store.events(&self.session, 0).ok()?;
        if events.iter().any(|e| matches!(e.event, EngineEvent::Landed { .. })) {
            return Some(SessionStatus::Completed);
        }
        events.iter().any(|e| matches!(e.event, EngineEvent::StatusChanged { status: SessionStatus::Rejected, .. })).then_some(SessionStatus::Rejected)
    }

    /// Whether this session is one attempt of a group.
    fn is_attempt(&self) -> bool {
        self.engine.store.session(&self.session).is_ok_and(|s| s.attempt.is_some())
    }

    /// Windows of the session's earlier runs since `since`, each with what the agent's file tools
    /// wrote in it.
    fn earlier_windows(&self, since: Since) -> Vec<super::evidence::Window> {
        let Ok(events) = self.engine.store.events(&self.session, 0) else { return vec![] };
        let from = events
            .iter()
            .rposition(|e| match e.event {
                EngineEvent::TaskWorkspace { .. } => true,
                EngineEvent::ReviewResolved { decision, .. } => since == Since::Decision || (since == Since::Accepted && decision != Decision::RequestChanges),
                _ => false,
            })
            .map(|i| i + 1)
            .unwrap_or(0);
        let runs: Vec<RunId> = events[from..]
            .iter()
            .filter(|e| matches!(e.event, EngineEvent::RunStarted { .. }))
            .filter_map(|e| e.run_id.clone())
            .filter(|r| *r != self.run)
            .collect();
        let mut out = Vec::new();
        for r in runs {
            if let Ok(Some(ev)) = self.engine.store.run_evidence(&r) {
                if let Some(ev) = super::evidence::RunEvidence::from_json(ev) {
                    out.extend(ev.windows_with_writes());
                }
            }
        }
        out
    }

    /// While a task in a worktree waits for its review, its checkpoint store gives up its index:
    /// the worktree's own index, just written by the commit, stands in for it. Only disk is at
    /// stake, so a failure is left for the next snapshot to mend.
    pub(super) fn lend_index(&self) {
        let (Some(cp), Some(wt)) = (&self.checkpoints, &self.folder.worktree) else { return };
        if let Some(index) = worktree::index_file(Path::new(&wt.folder)) {
            let _ = tokio::task::block_in_place(|| cp.lend_index(&index));
        }
    }

    /// In a worktree, the task's changes so far become a commit on its branch, which is what
    /// approve lands; the files copied in at the start stay out.
    /// Returns what the branch leaves out.
    pub(super) fn commit_to_branch(&mut self) -> crate::Result<LeftOut> {
        let Some(wt) = self.folder.worktree.clone() else { return Ok(LeftOut::default()) };
        let events = self.engine.store.events(&self.session, 0)?;
        let copied = copied_files(&events);
        // Named, and its rounds counted, after the work of this worktree: a follow-up's own.
        let runs = since_worktree(&events).iter().filter(|e| matches!(e.event, EngineEvent::TaskCommitted { .. })).count();
        let title = crate::store::sessions::title_of(follow_up_asked(&events).unwrap_or(&self.task));
        let message = match (runs, answers_request(&events)) {
            (0, _) => title,
            (_, Some(asked)) => format!("{title} (round {}: {})\n\nAsked at review: {asked}", runs + 1, crate::store::sessions::title_of(&asked)),
            (_, None) => format!("{title} (changes, round {})", runs + 1),
        };
        let message = format!("{message}\n\nFinishline-Session: {}\n", self.session);
        if let Some(commit) = tokio::task::block_in_place(|| worktree::commit_all(&wt, &message, &copied))? {
            // Beside listing what the branch changes, one look at the worktree leaves its index
            // settled after the commit (git writes its untracked cache back), so the look at
            // landing, on the way of the person's approve, reads and writes nothing more.
            // Counted from where the task started (landing composes from that list while the
            // person's branch is still there), unless the person's branch was merged in for the
            // agent to resolve: what it brought is not the task's.
            let merged =
                since_worktree(&events).iter().any(|e| matches!(e.event, EngineEvent::Continuation { source: ContinuationSource::LandingConflict, .. }));
            let from = if merged { worktree::lands_from(&wt, &commit) } else { wt.base_commit.clone() };
            let (_, files_since_start) =
                tokio::task::block_in_place(|| crate::beside::beside(|| worktree::changed_paths(&wt), || worktree::changed_between(&wt, &from, &commit)));
            let files_since_start = files_since_start.ok();
            self.emit(EngineEvent::TaskCommitted { commit, branch: wt.branch.clone(), files_since_start })?;
        }
        // Only named: a failure to list them must not keep the review from the person.
        Ok(tokio::task::block_in_place(|| LeftOut {
            ignored: worktree::ignored_written(&wt, &copied).unwrap_or_default(),
            in_submodules: crate::workspace::submodules::changed(&wt),
            submodules: crate::workspace::submodules::base_paths(&wt),
        }))
    }
}

/// What a task's branch leaves out of the worktree, so never lands.
#[derive(Debug, Default)]
pub(super) struct LeftOut {
    /// Files the run wrote that the ignore rules hide.
    pub ignored: Vec<String>,
    /// Files the run changed inside a submodule.
    pub in_submodules: Vec<String>,
    /// The repository's submodules: their links stay as they were, whatever the run did.
    pub submodules: Vec<String>,
}

/// Where the changes a review covers start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Since {
    /// The person's last decision (or the worktree's start).
    Decision,
    /// The worktree's start: everything the task's branch would land.
    Worktree,
    /// The person's last approve or reject (or the worktree's start): what Approve would accept,
    /// the rounds sent back with Request changes included.
    Accepted,
}

/// The findings the person dismissed for the session and did not take back, in the order
/// dismissed: (rule, path, excerpt).
pub fn dismissed_findings(events: &[Envelope]) -> Vec<(crate::judge::audit::AuditRule, String, String)> {
    let mut out: Vec<(crate::judge::audit::AuditRule, String, String)> = Vec::new();
    for e in events {
        match &e.event {
            EngineEvent::AuditDismissed { rule, path, excerpt } => out.push((*rule, path.clone(), excerpt.clone())),
            EngineEvent::AuditRestored { rule, path, excerpt } => out.retain(|(r, p, x)| !(r == rule && p == path && x == excerpt)),
            _ => {}
        }
    }
    out
}

/// The audit's findings as the review `review` recorded them, dismissed ones among them.
pub fn review_audit(events: &[Envelope], review: &RequestId) -> Vec<crate::judge::audit::Finding> {
    let audit = events.iter().find_map(|e| match &e.event {
        EngineEvent::ReviewRequested { review_id, audit, .. } if review_id == review => Some(audit.clone()),
        _ => None,
    });
    audit.unwrap_or_default()
}

/// Of `found`, the findings that still stand: those the person dismissed for the session (and did
/// not take back) no longer count against it.
pub fn standing_findings(found: Vec<crate::judge::audit::Finding>, events: &[Envelope]) -> Vec<crate::judge::audit::Finding> {
    let dismissed = dismissed_findings(events);
    found.into_iter().filter(|f| !dismissed.iter().any(|(r, p, x)| *r == f.rule && *p == f.path && *x == f.excerpt)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::audit::AuditRule;

    fn at(event: EngineEvent) -> Envelope {
        Envelope { seq: 0, session_id: SessionId("s".into()), run_id: None, at: String::new(), event }
    }

    #[test]
    fn a_finding_dismissed_then_taken_back_counts_again_and_dismissed_again_does_not() {
        let f = |rule| (rule, "tests/t.py".to_string(), "assert x == 1".to_string());
        let dismissed = |(rule, path, excerpt): (AuditRule, String, String)| at(EngineEvent::AuditDismissed { rule, path, excerpt });
        let restored = |(rule, path, excerpt): (AuditRule, String, String)| at(EngineEvent::AuditRestored { rule, path, excerpt });
        let events = [dismissed(f(AuditRule::AssertionRemoved)), dismissed(f(AuditRule::SkipAdded)), restored(f(AuditRule::AssertionRemoved))];
        assert_eq!(dismissed_findings(&events), vec![f(AuditRule::SkipAdded)], "taken back, it counts again");
        let again = [events.to_vec(), vec![dismissed(f(AuditRule::AssertionRemoved))]].concat();
        assert_eq!(dismissed_findings(&again), vec![f(AuditRule::SkipAdded), f(AuditRule::AssertionRemoved)]);
    }

    /// What a landing's commit says was asked at review leaves out a comment the person let go:
    /// the work does not answer it.
    #[test]
    fn a_comment_let_go_is_not_named_among_what_was_asked_at_review() {
        let comment = |text: &str| crate::judge::criteria::Comment {
            id: text.into(),
            path: "notes.md".into(),
            start_line: 1,
            end_line: 1,
            side: Default::default(),
            quote: String::new(),
            text: text.into(),
        };
        let events = [
            at(EngineEvent::CriteriaSet { criteria: vec![comment("say pear"), comment("sort them")] }),
            at(EngineEvent::CommentsLetGo { review_id: RequestId("r".into()), comments: vec!["notes.md:1: say pear".into()] }),
            at(EngineEvent::CriteriaSet { criteria: vec![comment("sort them")] }),
        ];
        assert_eq!(asked_at_review(&events), vec!["notes.md:1: sort them".to_string()]);
    }

    /// A follow-up needs the repository of a task in a worktree, not the subfolder the person
    /// chose (their branch may not have it now), and the folder itself of a task there.
    #[test]
    fn a_run_needs_the_repository_of_a_worktree_and_the_folder_of_a_task_in_place() {
        let wt = crate::workspace::worktree::TaskWorktree {
            repo: "/home/me/repo".into(),
            folder: "/data/worktrees/repo-1".into(),
            subdir: "web".into(),
            branch: "finishline/1".into(),
            base_branch: Some("main".into()),
            base_commit: "abc".into(),
        };
        let in_worktree = [at(EngineEvent::TaskWorkspace { isolation: Isolation::Worktree, folder: "/data/worktrees/repo-1/web".into(), worktree: Some(wt) })];
        assert_eq!(folder_a_run_needs(&in_worktree, "/home/me/repo/web"), PathBuf::from("/home/me/repo"));
        let in_place = [at(EngineEvent::TaskWorkspace { isolation: Isolation::InPlace, folder: "/home/me/notes".into(), worktree: None })];
        assert_eq!(folder_a_run_needs(&in_place, "/elsewhere"), PathBuf::from("/home/me/notes"));
        assert_eq!(folder_a_run_needs(&[], "/home/me/old"), PathBuf::from("/home/me/old"), "a session from before worktrees");
    }
}
