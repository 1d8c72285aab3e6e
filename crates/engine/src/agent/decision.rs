//! The person's review decision, applied once, and what it does to files. Each decision is
//! recorded before it acts, so a crash in the middle is finished (or reported exactly) at the
//! next start ([`finish_interrupted`]):
//! - approve in a worktree lands the task on the branch it started from (rebased and verified
//!   again when that branch moved), then removes the worktree;
//! - reject in a worktree removes the worktree and its branch; the person's checkout was never
//!   touched;
//! - reject in place with revert puts back the run's own files, one by one, leaving (unless the
//!   person says otherwise, file by file) any that someone changed after the run did;
//! - request changes keeps the worktree and starts the next run in it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;

use super::changes::{copied_files, current_worktree, follow_up_asked, left_at};
use super::{run, Engine, LandingStop};
use crate::beside::beside;
use crate::domain::*;
use crate::error::{Error, ErrorCode, Result};
use crate::event::{EngineEvent, Envelope};
use crate::store::decisions::RequestKind;
use crate::store::Store;
use crate::workspace::checkpoint::{ChangeKind, Checkpoints, FileChange, NotCopied, OverwrittenCopy, RevertReport};
use crate::workspace::landing::{self, Blocked, CatchUp, Composed};
use crate::workspace::lock::{FolderLock, WindowLock};
use crate::workspace::ownership::{revert_step, FileState, OwnedChange, RevertStep};
use crate::workspace::worktree::{self, TaskWorktree};
use tokio_util::sync::CancellationToken;

/// Which files someone changed after the run that a revert may overwrite all the same.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Overwrite {
    /// Not asked yet: a revert that finds such files stops and lists them.
    #[default]
    Nothing,
    /// The person has seen the list: these are overwritten, the others kept as they are.
    Files(Vec<String>),
    All,
}

impl Overwrite {
    pub(super) fn allows(&self, path: &str) -> bool {
        match self {
            Overwrite::Nothing => false,
            Overwrite::Files(f) => f.iter().any(|p| p == path),
            Overwrite::All => true,
        }
    }
}

/// A review decision with everything it may carry.
#[derive(Debug, Clone)]
pub struct ReviewChoice {
    pub decision: Decision,
    pub feedback: Option<String>,
    /// Reject in place: also put the run's files back.
    pub revert: bool,
    pub overwrite: Overwrite,
    /// Approve in a worktree: how it lands (the settings' choice when `None`).
    pub landing: Option<LandingMode>,
    pub by: DecidedBy,
    /// How the decision came about when it is not the person's own verdict on this work.
    pub occasion: Option<DecisionOccasion>,
    /// A stop the front end held before the decision began (its Ctrl-C may come at any moment,
    /// also before the landing exists): cancelled, it stops the landing as Stop does.
    pub stop: Option<CancellationToken>,
    /// Request changes: the comments the review found not met that the person lets go (their
    /// ids), so they are not carried on (see [`carried_on`]).
    pub let_go: Vec<String>,
}

impl ReviewChoice {
    pub fn new(decision: Decision, by: DecidedBy) -> ReviewChoice {
        ReviewChoice {
            decision,
            feedback: None,
            revert: false,
            overwrite: Overwrite::Nothing,
            landing: None,
            by,
            occasion: None,
            stop: None,
            let_go: Vec::new(),
        }
    }
}

/// Where an approved task landed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LandedSummary {
    pub mode: LandingMode,
    pub target_branch: Option<String>,
    pub commit: Option<String>,
    pub branch_kept: Option<String>,
    pub files: Vec<String>,
    /// Nothing landed though the review showed changes: the branch moved on with them already.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub already_held: bool,
    /// The person's commit hooks that did not run for the landing's commit, and whether their
    /// signing was left out (see [`landing::not_applied`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hooks_not_run: Vec<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unsigned: bool,
    /// Where the person's checkout was, when not on the branch the task landed on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkout_elsewhere: Option<crate::domain::CheckoutElsewhere>,
    /// The branch had moved on since the task started: the task was rebased onto it first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rebased: Option<Rebased>,
}

/// A landing that first moved the task onto its branch's newer commits (§14: rebased and
/// verified again), and how many of the workspace's checks ran again on the result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Rebased {
    pub checks_run: u32,
}

/// This review's landing rebased the task (by this approve or one before it that was blocked),
/// and the checks run on the result since: a landing follows only checks that passed. A rebase
/// in an earlier round (whose conflict the agent then resolved) is not said: the review after it
/// showed the task on the moved branch already.
fn rebased_since(events: &[Envelope], review: &RequestId) -> Option<Rebased> {
    let asked = events.iter().rposition(|e| matches!(&e.event, EngineEvent::ReviewRequested { review_id, .. } if review_id == review))?;
    let at = asked + events[asked..].iter().rposition(|e| matches!(e.event, EngineEvent::Rebased { .. }))?;
    // The last round of them (one that failed was run again, and this one led to the landing).
    let checks_run = events[at..].iter().fold(0, |run, e| match e.event {
        EngineEvent::Verification { persons_own: true, nth, .. } => {
            if nth <= 1 {
                1
            } else {
                run + 1
            }
        }
        _ => run,
    });
    Some(Rebased { checks_run })
}

// One value per decision, returned and shown once: its size costs nothing, and boxing its
// parts would only make every place that builds or reads one longer.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum ReviewOutcome {
    Decided {
        status: SessionStatus,
        revert: Option<RevertReport>,
        #[serde(skip_serializing_if = "Option::is_none")]
        landed: Option<LandedSummary>,
        /// A rejected task's branch, kept since its worktree changed after the review.
        #[serde(skip_serializing_if = "Option::is_none")]
        kept: Option<KeptBranch>,
    },
    /// Reject with revert found files someone changed after the run: ask before touching them.
    NeedsConfirmation {
        conflicts: Vec<String>,
        /// Those of them where a pipe, a socket or a device is now and the run left no file: no
        /// edit of anyone's, yet perhaps the person's (a server's socket), and never copied.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        no_file: Vec<String>,
        /// Those of them another task in the folder changed too (or showed for review), by task:
        /// its work, not the person's, is what a revert would undo there.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        other_tasks: Vec<OtherTasksFile>,
    },
    /// Approve could not land the task; nothing was overwritten and the review is still open.
    LandingBlocked { reason: LandingBlock, files: Vec<String>, detail: String },
}

impl ReviewOutcome {
    /// The question before a revert touches `conflicts`, each said as what it is.
    pub(super) fn needs_confirmation(cp: &Checkpoints, conflicts: Vec<String>, touches: &[OtherTasksFile]) -> Self {
        let no_file = conflicts.iter().filter(|p| cp.holds_no_file_at(p)).cloned().collect();
        let other_tasks = touches.iter().filter(|t| conflicts.contains(&t.path)).cloned().collect();
        ReviewOutcome::NeedsConfirmation { conflicts, no_file, other_tasks }
    }
}

/// A file of this task's that another task in the same folder changed in a run, or showed for
/// review, since this task first worked there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OtherTasksFile {
    pub path: String,
    pub session: SessionId,
    pub title: String,
}

/// The commit the task's last review showed: the run's last commit before it (in this worktree),
/// else where the worktree started.
fn reviewed_commit(events: &[Envelope], wt: &TaskWorktree) -> String {
    let start = super::changes::worktree_start(events).unwrap_or(0);
    let review = events.iter().rposition(|e| matches!(e.event, EngineEvent::ReviewRequested { .. })).unwrap_or(events.len());
    events[start..review.max(start)]
        .iter()
        .rev()
        .find_map(|e| match &e.event {
            EngineEvent::TaskCommitted { commit, .. } => Some(commit.clone()),
            _ => None,
        })
        .unwrap_or_else(|| wt.base_commit.clone())
}

/// The tip a landing's rebase gave the task's branch, when nothing was committed to it since:
/// the reviewed commits moved onto the person's branch, Finishline's own still.
pub(super) fn rebased_to(events: &[Envelope]) -> Option<&str> {
    let start = super::changes::worktree_start(events).unwrap_or(0);
    events[start..].iter().rev().find_map(|e| match &e.event {
        EngineEvent::Rebased { tip, .. } => Some(tip.as_deref()),
        EngineEvent::TaskCommitted { .. } => Some(None),
        _ => None,
    })?
}

/// Whether the task's last rebase onto the moved branch (since its worktree started) never led
/// to a landing: its checks failed, were stopped, a crash cut them short, or something blocked
/// the landing after them. Its worktree then starts where the branch is, so the landing would
/// find it up to date and skip the checks: they run again instead (once more than needed at
/// worst). Only a landing started says they passed.
pub(super) fn rebase_unchecked(events: &[Envelope]) -> bool {
    let start = super::changes::worktree_start(events).unwrap_or(0);
    let Some(at) = events[start..].iter().rposition(|e| matches!(e.event, EngineEvent::Rebased { .. })) else { return false };
    !events[start + at..].iter().any(|e| matches!(e.event, EngineEvent::LandingStarted { .. }))
}

/// The task's worktree as a landing sees it: it starts where a landing's rebase last put its
/// commits (on the person's branch as it was then), so a branch rewound below that since is caught
/// up with, not taken as up to date, and a catch-up replays only the task's own commits.
fn as_rebased(events: &[Envelope], wt: &TaskWorktree) -> TaskWorktree {
    let start = super::changes::worktree_start(events).unwrap_or(0);
    let onto = events[start..].iter().rev().find_map(|e| match &e.event {
        EngineEvent::Rebased { onto, .. } => Some(onto.clone()),
        _ => None,
    });
    TaskWorktree { base_commit: onto.unwrap_or_else(|| wt.base_commit.clone()), ..wt.clone() }
}

/// What changed in a rejected task's worktree after its review (an edit the person made there,
/// a late write), committed to the task's branch, which is kept rather than deleted with it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KeptBranch {
    pub branch: String,
    pub files: Vec<String>,
    pub why: BranchKeptWhy,
}

/// The comments on a review as they stand (edits replace, removals remove), in the order made.
pub fn comments_on(events: &[Envelope], review: &RequestId) -> Vec<crate::judge::criteria::Comment> {
    let mut out: Vec<crate::judge::criteria::Comment> = Vec::new();
    for e in events {
        match &e.event {
            EngineEvent::ReviewComment { review_id, comment } if review_id == review => match out.iter_mut().find(|c| c.id == comment.id) {
                Some(c) => *c = comment.clone(),
                None => out.push(comment.clone()),
            },
            EngineEvent::ReviewCommentRemoved { review_id, comment_id } if review_id == review => out.retain(|c| c.id != *comment_id),
            _ => {}
        }
    }
    out
}

/// The comments the runs since the last decision are judged on: those its Request changes sent
/// back (none after any other decision).
pub(super) fn judged_on(events: &[Envelope]) -> Vec<crate::judge::criteria::Comment> {
    let from = events.iter().rposition(|e| matches!(e.event, EngineEvent::ReviewResolved { .. })).unwrap_or(0);
    events[from..]
        .iter()
        .rev()
        .find_map(|e| if let EngineEvent::CriteriaSet { criteria } = &e.event { Some(criteria.clone()) } else { None })
        .unwrap_or_default()
}

/// The comments of `review`'s round that a Request changes now carries on besides the comments
/// made on it ([`crate::judge::criteria::still_open`]): what the window and the terminal say goes
/// with it is what goes.
pub fn carried_on(events: &[Envelope], review: &RequestId) -> Vec<crate::judge::criteria::Comment> {
    crate::judge::criteria::still_open(&judged_on(events), &checklist_of(events, review), &comments_on(events, review))
}

/// Takes the comments the person lets go out of those `carried` on, and gives them as their
/// criteria (recorded with the decision). Only a request for changes carries comments on, and
/// only those left open can be let go: any other id is a mistake said, not ignored.
fn let_go_of(carried: &mut Vec<crate::judge::criteria::Comment>, choice: &ReviewChoice, events: &[Envelope], review: &RequestId) -> Result<Vec<String>> {
    if choice.let_go.is_empty() {
        return Ok(Vec::new());
    }
    if choice.decision != Decision::RequestChanges {
        return Err(Error::InvalidInput("letting go of a comment goes with Request changes: approve and reject end the review's comments anyway".into()));
    }
    if let Some(id) = choice.let_go.iter().find(|id| !carried.iter().any(|c| &c.id == *id)) {
        // Named by where it is and what it says: the id is nobody's word for it.
        let open = crate::judge::criteria::still_open(&judged_on(events), &checklist_of(events, review), &[]);
        return Err(Error::InvalidInput(match open.iter().find(|c| &c.id == id) {
            Some(c) => format!("“{}” is asked again by a comment on this review: let it go or ask it again, not both", c.criterion()),
            None => "a comment let go is not one this review left open: only those found not met go on, and can be let go".to_string(),
        }));
    }
    let (gone, kept): (Vec<_>, Vec<_>) = std::mem::take(carried).into_iter().partition(|c| choice.let_go.contains(&c.id));
    *carried = kept;
    Ok(gone.iter().map(crate::judge::criteria::Comment::criterion).collect())
}

/// A review's checklist: the judge's word on each comment its run was judged on.
fn checklist_of(events: &[Envelope], review: &RequestId) -> Vec<crate::judge::criteria::CriterionResult> {
    events
        .iter()
        .find_map(|e| match &e.event {
            EngineEvent::ReviewRequested { review_id, criteria, .. } if review_id == review => Some(criteria.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

/// The files a review showed, as recorded in it.
pub(super) fn reviewed_files(events: &[Envelope], review: &RequestId) -> Vec<FileChange> {
    events
        .iter()
        .find_map(|e| match &e.event {
            EngineEvent::ReviewRequested { review_id, files_changed, .. } if review_id == review => {
                Some(files_changed.iter().filter_map(|f| serde_json::from_value::<FileChange>(f.clone()).ok()).collect())
            }
            _ => None,
        })
        .unwrap_or_default()
}

/// What a reject's revert undoes in the person's folder, up to `review`: every round since the
/// task's last approve or reject, since Request changes approves nothing. A file changed in
/// several rounds goes back to how the earliest of them found it, unless it changed between
/// rounds (the person's edit): then to how the round after that found it. A file the rounds
/// left as they found it is not named. `None` when a round was recorded before tasks kept
/// what each file was.
pub(super) fn unapproved_changes(events: &[Envelope], review: &RequestId) -> Option<Unapproved> {
    let mut rounds: Vec<&RequestId> = Vec::new();
    let (mut run_started, mut since) = (None, None);
    for e in events {
        match &e.event {
            // The first run since the last decision: a plan's steps, a resume, are runs of the
            // same round, and the earliest made files too.
            EngineEvent::RunStarted { .. } if run_started.is_none() => run_started = Some(e.at.clone()),
            EngineEvent::ReviewRequested { review_id, .. } => {
                if rounds.is_empty() {
                    since = run_started.clone().or_else(|| Some(e.at.clone()));
                }
                rounds.push(review_id);
                if review_id == review {
                    break;
                }
            }
            EngineEvent::ReviewResolved { decision: Decision::Approve | Decision::Reject, .. } => {
                rounds.clear();
                run_started = None;
            }
            _ => {}
        }
    }
    let mut owned: Vec<OwnedChange> = Vec::new();
    for round in &rounds {
        for f in reviewed_files(events, round) {
            let (before, after) = (f.before?, f.after?);
            match owned.iter_mut().find(|c| c.path == f.path) {
                Some(c) if c.after == before => {
                    c.after = after;
                    c.unattributed |= f.unattributed;
                    c.edited_between |= f.edited_between;
                }
                Some(c) => *c = OwnedChange { path: f.path, before, after, unattributed: f.unattributed, edited_between: f.edited_between },
                None => owned.push(OwnedChange { path: f.path, before, after, unattributed: f.unattributed, edited_between: f.edited_between }),
            }
        }
    }
    owned.retain(|c| c.before != c.after);
    let unrecorded = events.iter().any(|e| matches!(&e.event, EngineEvent::ReviewRequested { review_id, unrecorded: true, .. } if rounds.contains(&review_id)));
    Some(Unapproved { owned, since: since.unwrap_or_default(), unrecorded })
}

/// Why a revert of work done while the folder could not be recorded is refused.
pub(super) fn unrecorded_work(what: &str) -> Error {
    Error::InvalidInput(format!(
        "the task worked while its folder could not be recorded (checkpoints were off or failed), so what it changed cannot be told from your own work: {what}, and undo its changes yourself"
    ))
}

/// The task's files someone changed since the task did, or another task showed for review: a
/// revert overwrites them only when the person names them.
pub(super) fn changed_since(cp: &Checkpoints, owned: &[OwnedChange], others: &[String]) -> Result<Vec<String>> {
    let paths: Vec<&str> = owned.iter().map(|c| c.path.as_str()).collect();
    let now = cp.file_states(&paths)?;
    Ok(owned
        .iter()
        .zip(&now)
        .filter(|(c, n)| revert_step_here(cp, c, n, others) == RevertStep::ChangedSince || others.contains(&c.path))
        .map(|(c, _)| c.path.clone())
        .collect())
}

/// What a revert does with the file `c` when it is `now`, beyond what the run's records say:
/// another task showed it for review since (`others`: it may hold that task's work, even to the
/// same words), or a pipe or a socket is where the run left no file (it reads as none, but may
/// be the person's). Either counts as changed since unless the person names it.
fn revert_step_here(cp: &Checkpoints, c: &OwnedChange, now: &FileState, others: &[String]) -> RevertStep {
    match revert_step(c, now) {
        RevertStep::Restore if others.contains(&c.path) || cp.holds_no_file_at(&c.path) => RevertStep::ChangedSince,
        step => step,
    }
}

/// The files the task counts as made by it that are older than its first round (`since`, an
/// RFC 3339 time): a file the ignore rules hid until the task changed them (a `.gitignore` line
/// it dropped) looks new to the snapshots, yet it is the person's. A revert treats them as
/// changed since, asking before it deletes one. A disk that keeps no making time says nothing.
/// A file the task moved keeps its making time too ("rename the photos by date"): one is taken
/// as moved by the task, and its own, only when all of these hold: its content is what a file
/// the task removed held (each removed file accounts for one, never an empty file, whose
/// content any file may share), that file's name is free now (the revert puts it back there),
/// and its inode changed during the task (a rename does that; a file the ignore rules uncovered
/// was not touched).
pub(super) fn made_before(cp: &Checkpoints, owned: &[OwnedChange], since: &str) -> Vec<String> {
    use std::os::unix::fs::MetadataExt;
    const EMPTY: [&str; 2] = ["e69de29bb2d1d6434b8b29ae775ad8c2e48c5391", "473a0f4c3be8a93681a267e3b1e9a7dcda1185436fe141f7749120a303721813"];
    let Ok(since) = chrono::DateTime::parse_from_rfc3339(since).map(std::time::SystemTime::from) else { return Vec::new() };
    let at = |path: &str| std::fs::symlink_metadata(cp.work_tree().join(path));
    let mut moved_away: Vec<&str> = owned
        .iter()
        .filter(|c| c.after == FileState::Absent && at(&c.path).is_err())
        .filter_map(|c| match &c.before {
            FileState::Blob { oid, .. } if !EMPTY.contains(&oid.as_str()) => Some(oid.as_str()),
            _ => None,
        })
        .collect();
    let mut older = Vec::new();
    for c in owned.iter().filter(|c| c.before == FileState::Absent) {
        let Ok(m) = at(&c.path) else { continue };
        if !m.created().is_ok_and(|made| made < since) {
            continue;
        }
        let touched = std::time::UNIX_EPOCH + std::time::Duration::new(m.ctime().max(0) as u64, m.ctime_nsec().clamp(0, 999_999_999) as u32);
        let moved = match &c.after {
            FileState::Blob { oid, .. } if touched >= since => moved_away.iter().position(|o| *o == oid.as_str()),
            _ => None,
        };
        match moved {
            Some(i) => {
                moved_away.remove(i);
            }
            None => older.push(c.path.clone()),
        }
    }
    older
}

/// The changes a reject's revert undoes, and when the first of their rounds started.
pub(super) struct Unapproved {
    pub owned: Vec<OwnedChange>,
    pub since: String,
    /// A round worked while the folder could not be recorded: its changes are not in `owned`.
    pub unrecorded: bool,
}

/// The files other tasks in the same folder showed for review, or changed in their runs, after
/// `since` (an RFC 3339 time): they may hold that work, even to the same words as this task's,
/// which a check of content alone would take for this task's own and undo. A task that never
/// reached a review (its model went away, it is still at work) counts by what its runs' windows
/// changed.
/// A task in a folder inside this one, or around it, names the same files by other paths: read
/// from its folder, they are paths of this one.
pub(super) fn touched_by_other_tasks(store: &Store, stores: &Path, session: &SessionId, workspace: &str, since: &str) -> Result<Vec<String>> {
    Ok(paths_of(&other_tasks_touches(store, stores, session, workspace, since)?))
}

/// The paths among `touches`, each once.
pub(super) fn paths_of(touches: &[OtherTasksFile]) -> Vec<String> {
    let mut paths: Vec<String> = touches.iter().map(|t| t.path.clone()).collect();
    paths.sort();
    paths.dedup();
    paths
}

/// [`touched_by_other_tasks`], each path with the task that touched it (a path two tasks touched
/// is there twice), sorted by path.
pub(super) fn other_tasks_touches(store: &Store, stores: &Path, session: &SessionId, workspace: &str, since: &str) -> Result<Vec<OtherTasksFile>> {
    let all = store.list_sessions(&crate::store::ListQuery { limit: 100_000, ..Default::default() })?;
    let here = Path::new(workspace);
    let mut paths = Vec::new();
    for other in all.iter().filter(|o| o.id != *session && o.isolation != Some(Isolation::Worktree)) {
        let there = Path::new(&other.workspace);
        let (inside, around) = (there.strip_prefix(here).ok(), here.strip_prefix(there).ok());
        if inside.is_none() && around.is_none() {
            continue;
        }
        let events = store.events(&other.id, 0)?;
        let mut theirs: Vec<String> = Vec::new();
        for e in events.iter().filter(|e| e.at.as_str() > since) {
            if let EngineEvent::ReviewRequested { files_changed, .. } = &e.event {
                theirs.extend(files_changed.iter().filter_map(|f| f.get("path").and_then(|p| p.as_str())).map(str::to_string));
            }
        }
        theirs.extend(changed_in_runs_since(store, stores, other, &events, since));
        for path in theirs {
            let mine = match (inside, around) {
                (Some(sub), _) => Some(sub.join(path)),
                (None, Some(sub)) => Path::new(&path).strip_prefix(sub).ok().map(Path::to_path_buf),
                (None, None) => None,
            };
            paths.extend(mine.map(|p| OtherTasksFile { path: p.to_string_lossy().into_owned(), session: other.id.clone(), title: other.title.clone() }));
        }
    }
    paths.sort_by(|a, b| (&a.path, &a.session.0).cmp(&(&b.path, &b.session.0)));
    paths.dedup();
    Ok(paths)
}

/// What another in-place task's runs at work after `since` changed in their windows, as paths of
/// its folder. A store it never had, or one that cannot be read, says nothing.
fn changed_in_runs_since(store: &Store, stores: &Path, other: &crate::store::SessionSummary, events: &[Envelope], since: &str) -> Vec<String> {
    let folder = in_place_folder(other, events);
    if !stores.join(crate::workspace::checkpoint::store_name(&folder)).join("HEAD").exists() {
        return Vec::new();
    }
    // A run is at work from its start to its last event; one whose last event is after `since`
    // may have changed files after it.
    let mut last: Vec<(&RunId, &str)> = Vec::new();
    for e in events {
        let Some(run) = &e.run_id else { continue };
        match last.iter_mut().find(|(r, _)| *r == run) {
            Some(entry) => entry.1 = e.at.as_str(),
            None => last.push((run, e.at.as_str())),
        }
    }
    let windows: Vec<(String, String)> = last
        .into_iter()
        .filter(|(_, at)| *at > since)
        .filter_map(|(run, _)| store.run_evidence(run).ok().flatten())
        .filter_map(super::evidence::RunEvidence::from_json)
        .flat_map(|ev| ev.windows)
        .collect();
    if windows.is_empty() {
        return Vec::new();
    }
    let Ok(cp) = Checkpoints::open_shared(stores, &folder, other.id.as_str()) else { return Vec::new() };
    windows.iter().filter_map(|(before, after)| cp.window_changes(before, after).ok()).flatten().map(|c| c.path).collect()
}

/// How long a revert waits for another task's tools in its folder before it says so: a tool
/// call is seconds; an external agent's turn can be minutes, which nobody should sit through.
pub(super) const FOLDER_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// The folder to itself for a revert, waiting up to `wait`; `None` when another task's tools
/// still run there. While they run, a file the revert put back or removed would be counted as
/// that task's change: shown in its review, and undone by its own revert.
pub(super) fn hold_the_folder(data_dir: &Path, folder: &Path, wait: std::time::Duration) -> Result<Option<WindowLock>> {
    WindowLock::try_take_within(data_dir, folder, wait)
}

/// Why a revert did not start: another task's tools are at work in the folder.
pub(super) fn busy_folder(folder: &Path, again: &str) -> Error {
    Error::WorkspaceBusy(format!(
        "another task is at work in {} or a folder around or inside it (its tools or its agent are running, or it waits for your answer to one of its questions), and what a revert did meanwhile would be counted as that task's: {again} once that is done; nothing was done yet",
        folder.display()
    ))
}

pub(super) fn status_event(status: SessionStatus) -> EngineEvent {
    EngineEvent::StatusChanged { status, attempt: None, max_retries: None, next_retry_at: None, message: None }
}

impl Engine {
    /// The person's review decision, applied once. See [`ReviewChoice`] and the module's notes.
    /// Approving an attempt of a group, wherever the person does it, is choosing it for the group
    /// ([`Engine::choose_attempt_with`]): the group is decided once and the others put away.
    /// An attempt the person continued after that (the chosen one's follow-up, or one passed
    /// over and sent on) competes no more: its approve is any task's.
    pub fn decide(self: &Arc<Self>, review: &RequestId, choice: ReviewChoice) -> Result<ReviewOutcome> {
        if choice.decision == Decision::Approve {
            let summary = self.pending_review_session(review)?;
            if let Some(group) = super::discard::competing_group(&self.store, &summary.id)? {
                return self.choose_attempt_with(&group, &summary.id, choice);
            }
        }
        self.decide_one(review, choice)
    }

    /// One session's review decision, whether or not it is an attempt of a group.
    pub(super) fn decide_one(self: &Arc<Self>, review: &RequestId, choice: ReviewChoice) -> Result<ReviewOutcome> {
        let _deciding = self.runtime.deciding();
        let summary = self.pending_review_session(review)?;
        let feedback = choice.feedback.as_ref().map(|f| f.trim().to_string()).filter(|f| !f.is_empty());
        if let Some(f) = &feedback {
            crate::store::within_message_limit(f, "the feedback")?;
        }
        // Stop reaches an approve from its start, also while it waits its turn below (behind a
        // decision in another process): its landing then ends before anything is checked.
        let stop = (choice.decision == Decision::Approve).then(|| self.runtime.landing_stop(&summary.id, choice.stop.as_ref()));
        // One decision at a time per session, across processes; the loser finds it decided.
        let lock = session_lock(&self.config.data_dir, &summary.id);
        let _lock = match &stop {
            // Behind another process's decision, itself maybe waiting its landing's turn for
            // minutes: Stop ends the wait, with nothing done (nothing is recorded either: the
            // session is the other decision's until it lets go).
            Some(stop) => loop {
                if let Some(taken) = FolderLock::try_acquire_within(&lock, std::time::Duration::from_millis(200))? {
                    break taken;
                }
                crate::fault::pause_at("decision-behind-another");
                if stop.token.is_cancelled() {
                    let b = Blocked::stopped_behind_another();
                    return Ok(ReviewOutcome::LandingBlocked { reason: b.reason, files: b.files, detail: b.detail });
                }
            },
            None => FolderLock::acquire(&lock)?,
        };
        let summary = self.pending_review_session(review)?;
        let events = self.store.events(&summary.id, 0)?;
        let comments = comments_on(&events, review);
        // The comments this review found not met go on with a request for changes (the person
        // never let them go), and are enough of one by themselves: sent again, checked again.
        let mut carried = carried_on(&events, review);
        let let_go = let_go_of(&mut carried, &choice, &events, review)?;
        if choice.decision == Decision::RequestChanges && feedback.is_none() && comments.is_empty() && carried.is_empty() {
            let why = if let_go.is_empty() {
                "there are no comments on the diff"
            } else {
                "you let go of every open comment (approve, if nothing else should change)"
            };
            return Err(Error::InvalidInput(format!("say what should change: the feedback is empty and {why}")));
        }
        let wt = current_worktree(&events);
        // Moved away, the repository is out of reach of every decision but approve's, which says
        // so as a landing that waits (below); the review waits for it to come back.
        if let Some(gone) = wt.as_ref().filter(|_| choice.decision != Decision::Approve).and_then(landing::repository_gone) {
            let verb = if choice.decision == Decision::Reject { "reject" } else { "request changes" };
            return Err(Error::RepositoryGone(format!("{}: put it back there and {verb} again", gone.where_it_was())));
        }
        match (choice.decision, wt) {
            (Decision::RequestChanges, _) => {
                let run = RunId::new();
                let mut decided = vec![EngineEvent::ReviewResolved {
                    review_id: review.clone(),
                    decision: Decision::RequestChanges,
                    by: choice.by,
                    feedback: feedback.clone(),
                    reverted: false,
                    occasion: None,
                }];
                // The comments go with the decision: the next run is judged on each one, and on
                // each earlier one this review found not met.
                let continuation = (!comments.is_empty() || !carried.is_empty())
                    .then(|| (ContinuationSource::ReviewComments, crate::judge::criteria::continuation(&comments, &carried)));
                if !let_go.is_empty() {
                    decided.push(EngineEvent::CommentsLetGo { review_id: review.clone(), comments: let_go });
                }
                if !comments.is_empty() || !carried.is_empty() {
                    decided.push(EngineEvent::CriteriaSet { criteria: comments.into_iter().chain(carried).collect() });
                }
                let session = self.store.resolve_and_begin(review, RequestKind::Review, SessionStatus::AwaitingReview, decided, &run, RunTrigger::Feedback)?;
                self.spawn_begun(
                    session,
                    run,
                    run::RunStart { trigger: RunTrigger::Feedback, user_message: feedback, answer: None, plan: PlanMode::Off, continuation },
                );
                Ok(ReviewOutcome::Decided { status: SessionStatus::Busy, revert: None, landed: None, kept: None })
            }
            (Decision::Approve, Some(wt)) => {
                let stop = stop.unwrap_or_else(|| self.runtime.landing_stop(&summary.id, choice.stop.as_ref()));
                self.land(&summary.id, review, &wt, &choice, &events, stop)
            }
            (Decision::Approve, None) => {
                let resolved = EngineEvent::ReviewResolved {
                    review_id: review.clone(),
                    decision: Decision::Approve,
                    by: choice.by,
                    feedback,
                    reverted: false,
                    occasion: None,
                };
                self.store.resolve_request(
                    review,
                    RequestKind::Review,
                    SessionStatus::AwaitingReview,
                    None,
                    vec![resolved, status_event(SessionStatus::Completed)],
                )?;
                Ok(ReviewOutcome::Decided { status: SessionStatus::Completed, revert: None, landed: None, kept: None })
            }
            (Decision::Reject, Some(wt)) => {
                // Kept first: committing to the task's branch is harmless if the decision never
                // gets recorded (an approve lands such changes anyway).
                // A file someone else changed while the task worked is in its branch too.
                let kept = self.keep_after_review(&summary.id, &wt, &events)?.or_else(|| {
                    let theirs: Vec<String> = reviewed_files(&events, review).into_iter().filter(|f| f.edited_between).map(|f| f.path).collect();
                    (!theirs.is_empty()).then(|| KeptBranch { branch: wt.branch.clone(), files: theirs, why: BranchKeptWhy::EditedDuringTask })
                });
                let resolved = EngineEvent::ReviewResolved {
                    review_id: review.clone(),
                    decision: Decision::Reject,
                    by: choice.by,
                    occasion: choice.occasion,
                    feedback,
                    reverted: false,
                };
                // Kept is part of the decision, recorded with it: a removal cut short is finished
                // at the next start by what was recorded, not by guessing again.
                let mut decided = vec![resolved];
                decided.extend(kept.as_ref().map(|k| EngineEvent::BranchKept { branch: k.branch.clone(), files: k.files.clone(), why: k.why }));
                decided.push(status_event(SessionStatus::Rejected));
                self.store.resolve_request(review, RequestKind::Review, SessionStatus::AwaitingReview, None, decided)?;
                self.remove_worktree_soon(&summary.id, &wt, WorktreeEnd::Rejected, kept.is_none());
                Ok(ReviewOutcome::Decided { status: SessionStatus::Rejected, revert: None, landed: None, kept })
            }
            (Decision::Reject, None) => self.reject_in_place(&summary, review, &choice, feedback, &events),
        }
    }

    /// Reject, in the person's folder: the decision, then (when asked) the run's files put back.
    fn reject_in_place(
        self: &Arc<Self>,
        summary: &crate::store::SessionSummary,
        review: &RequestId,
        choice: &ReviewChoice,
        feedback: Option<String>,
        events: &[Envelope],
    ) -> Result<ReviewOutcome> {
        let resolved = EngineEvent::ReviewResolved {
            review_id: review.clone(),
            decision: Decision::Reject,
            by: choice.by,
            occasion: choice.occasion,
            feedback,
            reverted: choice.revert,
        };
        if !choice.revert {
            self.store.resolve_request(
                review,
                RequestKind::Review,
                SessionStatus::AwaitingReview,
                None,
                vec![resolved, status_event(SessionStatus::Rejected)],
            )?;
            return Ok(ReviewOutcome::Decided { status: SessionStatus::Rejected, revert: None, landed: None, kept: None });
        }
        let folder = in_place_folder(summary, events);
        // Every file would read as already back (absent) in a folder that is not there: say so
        // before anything is decided, rather than report files "removed" that it never reached.
        if !folder.is_dir() {
            return Err(Error::InvalidInput(format!(
                "the task's folder {} is gone, so nothing can be reverted there: put it back and reject again, or reject without undoing",
                folder.display()
            )));
        }
        let unapproved = unapproved_changes(events, review);
        if unapproved.as_ref().is_some_and(|u| u.unrecorded) {
            return Err(unrecorded_work("reject without undoing"));
        }
        let _folder = hold_the_folder(&self.config.data_dir, &folder, FOLDER_WAIT)?.ok_or_else(|| busy_folder(&folder, "reject again"))?;
        let cp = self.checkpoints(&summary.id, &folder)?;
        let Some(Unapproved { owned, since, .. }) = unapproved else {
            return self.reject_legacy(summary, review, choice, resolved, &cp);
        };
        let touches = other_tasks_touches(&self.store, &self.config.data_dir.join("checkpoints"), &summary.id, &summary.workspace, &since)?;
        let mut others = paths_of(&touches);
        others.extend(made_before(&cp, &owned, &since));
        let changed_since = changed_since(&cp, &owned, &others)?;
        if !changed_since.is_empty() && choice.overwrite == Overwrite::Nothing {
            return Ok(ReviewOutcome::needs_confirmation(&cp, changed_since, &touches));
        }
        let overwrite: Vec<String> = changed_since.into_iter().filter(|p| choice.overwrite.allows(p)).collect();
        // The decision and the intent in one step; the files follow.
        self.store.resolve_request(
            review,
            RequestKind::Review,
            SessionStatus::AwaitingReview,
            None,
            vec![resolved, EngineEvent::RevertStarted { overwrite: overwrite.clone() }, status_event(SessionStatus::Rejected)],
        )?;
        let report = revert_owned(&cp, &owned, &overwrite, &others, &copies_folder(&self.config.data_dir, &summary.id))?;
        remove_made_folders(&cp, &report.deleted, events, &since);
        self.store.append(&summary.id, None, reverted_event(&report))?;
        Ok(ReviewOutcome::Decided { status: SessionStatus::Rejected, revert: Some(report), landed: None, kept: None })
    }

    /// A review recorded before runs owned their changes: revert between the session's marks.
    fn reject_legacy(
        &self,
        summary: &crate::store::SessionSummary,
        review: &RequestId,
        choice: &ReviewChoice,
        resolved: EngineEvent,
        cp: &Checkpoints,
    ) -> Result<ReviewOutcome> {
        let marks = (cp.marked("base"), cp.marked("agent"));
        let (mut copies, mut not_copied, mut overwrite) = (Vec::new(), Vec::new(), Vec::new());
        if let (Some(base), Some(agent)) = &marks {
            let conflicts = cp.revert_conflicts(base, agent)?;
            if !conflicts.is_empty() && choice.overwrite == Overwrite::Nothing {
                return Ok(ReviewOutcome::needs_confirmation(cp, conflicts, &[]));
            }
            // The person's versions first, as for any revert told to overwrite: a file whose
            // copy could not be kept is kept as it is instead.
            for c in conflicts.into_iter().filter(|c| choice.overwrite.allows(c)) {
                match keep_copy(cp, &c, &copies_folder(&self.config.data_dir, &summary.id)) {
                    Ok(copy) => {
                        copies.extend(copy);
                        overwrite.push(c);
                    }
                    Err(e) => not_copied.push(NotCopied { path: c, reason: e.to_string() }),
                }
            }
        }
        self.store.resolve_request(
            review,
            RequestKind::Review,
            SessionStatus::AwaitingReview,
            None,
            vec![resolved, EngineEvent::RevertStarted { overwrite: overwrite.clone() }, status_event(SessionStatus::Rejected)],
        )?;
        let (Some(base), Some(agent)) = marks else {
            self.store.append(&summary.id, None, reverted_event(&RevertReport::default()))?;
            return Ok(ReviewOutcome::Decided { status: SessionStatus::Rejected, revert: None, landed: None, kept: None });
        };
        // The last look: the file still holds what its copy keeps (or is still gone, when
        // nothing was there to copy); an edit saved since is kept, and named.
        let last_look = |p: &str| {
            overwrite.iter().any(|o| o == p)
                && match copies.iter().find(|k: &&OverwrittenCopy| k.path == p) {
                    Some(k) => same_as_copy(&cp.work_tree().join(p), Path::new(&k.copy)),
                    None => cp.work_tree().join(p).symlink_metadata().is_err(),
                }
        };
        match cp.revert_except(&base, &agent, &last_look) {
            Ok(mut r) => {
                // A copy of a file the last look kept is no copy of anything overwritten.
                let (kept, overwritten): (Vec<_>, Vec<_>) = copies.into_iter().partition(|k| r.conflicts.contains(&k.path));
                for k in kept {
                    let _ = std::fs::remove_file(&k.copy);
                }
                r.copies = overwritten;
                r.not_copied = not_copied;
                self.store.append(&summary.id, None, reverted_event(&r))?;
                Ok(ReviewOutcome::Decided { status: SessionStatus::Rejected, revert: Some(r), landed: None, kept: None })
            }
            Err(e) => {
                self.store.append(&summary.id, None, EngineEvent::Error { code: e.code(), message: format!("Rejected, but the revert failed: {e}") })?;
                Err(e)
            }
        }
    }

    /// Approve in a worktree: the task lands on the branch it started from.
    fn land(
        self: &Arc<Self>,
        session: &SessionId,
        review: &RequestId,
        wt: &TaskWorktree,
        choice: &ReviewChoice,
        events: &[Envelope],
        stop: LandingStop,
    ) -> Result<ReviewOutcome> {
        // Started on a detached HEAD there is no branch to land on: unless they asked for another
        // way, the person's approve keeps the task's branch, the one landing that can go through
        // (never auto-approve's: keeping is not landing).
        let keep = wt.base_branch.is_none() && choice.by == DecidedBy::Person;
        let mode = choice.landing.unwrap_or(if keep { LandingMode::Branch } else { self.config.tasks.landing });
        if let Some(gone) = landing::repository_gone(wt).map(|g| g.blocked()) {
            self.store.append(session, None, EngineEvent::LandingBlocked { reason: gone.reason, files: vec![], detail: gone.detail.clone() })?;
            return Ok(ReviewOutcome::LandingBlocked { reason: gone.reason, files: gone.files, detail: gone.detail });
        }
        // Its folder removed by hand: the work is on the branch, and the landing works from a
        // worktree made again from it.
        worktree::restore(wt, session.as_str(), &self.config.tasks.includes)?;
        let summary = self.store.session(session)?;
        let verdict_summary = events.iter().rev().find_map(|e| {
            if let EngineEvent::ReviewRequested { review_id, verdict_summary, .. } = &e.event {
                (review_id == review).then(|| verdict_summary.clone()).flatten()
            } else {
                None
            }
        });
        let follow_up = follow_up_asked(events);
        let asked = super::changes::asked_at_review(events);
        let asked: Vec<&str> = asked.iter().map(String::as_str).collect();
        let message = landing::message(&summary.task, follow_up, &asked, verdict_summary.as_deref(), &agent_name(&summary), session.as_str());
        let blocked = |b: Blocked| -> Result<ReviewOutcome> {
            self.store.append(session, None, EngineEvent::LandingBlocked { reason: b.reason, files: b.files.clone(), detail: b.detail.clone() })?;
            Ok(ReviewOutcome::LandingBlocked { reason: b.reason, files: b.files, detail: b.detail })
        };
        let resolved = EngineEvent::ReviewResolved {
            review_id: review.clone(),
            decision: Decision::Approve,
            by: choice.by,
            feedback: None,
            reverted: false,
            occasion: None,
        };
        // Until the person's branch moves, Stop (the window's, as for a run) stops the landing.
        // Held to the end: the next landing in the repository composes from where this one put
        // the branch.
        let _turn = match self.landing_turn(session, wt, mode, &stop.token)? {
            Ok(turn) => turn,
            Err(b) => return blocked(b),
        };
        // Whatever is in the worktree lands, also what changed there after the review. Looking
        // for such changes (a status of the whole checkout, in a small repository the slowest
        // step) runs beside composing the landing from the branches as the run left them; when
        // something did change, it is committed first and the landing composed again.
        let left = left_at(events, wt);
        // A merge for the agent that a crash cut short before it was recorded: committed below
        // with whatever markers it left, which must not land.
        let merging = worktree::merging(wt);
        let rebased = as_rebased(events, wt);
        let unchecked = rebase_unchecked(events);
        let (untouched, early) =
            beside(|| worktree::untouched(wt), || (mode != LandingMode::Branch && !unchecked).then(|| landing::prepare(&rebased, mode, &message, &left)));
        let early = if untouched? {
            early.transpose()?.flatten()
        } else {
            if let Some(commit) = worktree::commit_all(
                wt,
                &format!("{} (after review)\n\nFinishline-Session: {session}\n", crate::store::sessions::title_of(follow_up.unwrap_or(&summary.task))),
                &copied_files(events),
            )? {
                self.store.append(session, None, EngineEvent::TaskCommitted { commit, branch: wt.branch.clone(), files_since_start: None })?;
            }
            None
        };
        if mode == LandingMode::Branch {
            let landed = LandedSummary {
                mode,
                target_branch: None,
                commit: None,
                branch_kept: Some(wt.branch.clone()),
                files: vec![],
                already_held: false,
                hooks_not_run: vec![],
                unsigned: false,
                checkout_elsewhere: None,
                rebased: None,
            };
            return self.landed(session, review, wt, resolved, landed);
        }
        let composed = match early {
            Some(composed) => composed,
            None => self.catch_up_and_compose(session, &rebased, mode, &message, &stop.token, unchecked)?,
        };
        let composed = match composed {
            Ok(c) => c,
            Err(b) => return blocked(b),
        };
        // A merge Finishline started for the agent to resolve may have been committed with its
        // markers: they never land. Only then: a fixture or a document may hold them on purpose.
        // Once found, such markers are looked for at every Approve after: the merge is committed
        // by then, and no `MERGE_HEAD` tells of it.
        let since_start = &events[super::changes::worktree_start(events).unwrap_or(0)..];
        let merged_for_the_agent = merging
            || since_start.iter().any(|e| {
                matches!(
                    e.event,
                    EngineEvent::Continuation { source: ContinuationSource::LandingConflict, .. }
                        | EngineEvent::LandingBlocked { reason: LandingBlock::ConflictMarkers, .. }
                )
            });
        if merged_for_the_agent {
            let marked = landing::conflict_markers_in(Path::new(&wt.repo), &composed.old_tip, &format!("refs/heads/{}", wt.branch))?;
            if !marked.is_empty() {
                return blocked(Blocked::conflict_markers(marked));
            }
        }
        if stop.token.is_cancelled() {
            return blocked(Blocked::stopped());
        }
        // From here the person's branch moves: too late to stop, so Stop no longer says it can.
        drop(stop);
        self.store.append(session, None, started_event(review, &composed, choice.by))?;
        crate::fault::pause_at("landing-started");
        if let Err(b) = landing::apply(wt, &composed)? {
            return blocked(b);
        }
        let landed = LandedSummary {
            mode,
            target_branch: Some(composed.target_branch.clone()),
            commit: composed.new_commit.clone(),
            branch_kept: None,
            files: composed.files.clone(),
            already_held: composed.files.is_empty() && !reviewed_files(events, review).is_empty(),
            hooks_not_run: vec![],
            unsigned: false,
            checkout_elsewhere: if composed.on_target || composed.files.is_empty() { None } else { landing::checkout_at(Path::new(&wt.repo)) },
            rebased: None,
        };
        // Said only of a commit Finishline made on the person's branch.
        let landed = match &composed.new_commit {
            Some(_) => {
                let (hooks_not_run, unsigned) = landing::not_applied(Path::new(&wt.repo));
                LandedSummary { hooks_not_run, unsigned, ..landed }
            }
            None => landed,
        };
        self.landed(session, review, wt, resolved, landed)
    }

    /// A landing that moves the person's branch (not one that keeps the task's) waits for the
    /// repository's other landings to finish (see [`landing::turn_file`]), saying so when it
    /// must; Stop ends the wait, with nothing landed.
    fn landing_turn(
        &self,
        session: &SessionId,
        wt: &TaskWorktree,
        mode: LandingMode,
        stop: &CancellationToken,
    ) -> Result<std::result::Result<Option<FolderLock>, Blocked>> {
        if mode == LandingMode::Branch {
            return Ok(Ok(None));
        }
        let mut turn = None;
        if let Some(file) = landing::turn_file(wt) {
            crate::fault::pause_at("landing-before-turn");
            // In place, as below. A lock that cannot be taken at all (a file system without
            // locks, a git directory nobody may write in) leaves the landing to go on alone, as
            // before turns; a repository gone since it was looked at stops it.
            let held_elsewhere = match FolderLock::try_acquire_in_place_within(&file, std::time::Duration::ZERO) {
                Ok(taken) => {
                    turn = taken;
                    turn.is_none()
                }
                Err(_) => {
                    if let Some(gone) = landing::repository_gone(wt) {
                        return Ok(Err(gone.blocked()));
                    }
                    false
                }
            };
            if held_elsewhere {
                let detail = "waiting for another task's landing in this repository to finish".to_string();
                self.store.append(session, None, EngineEvent::Activity { phase: ActivityPhase::Landing, detail })?;
                while turn.is_none() && !stop.is_cancelled() {
                    // In place: the repository moved or deleted meanwhile would have its git
                    // directory made again, empty, where it was, to lock in.
                    match FolderLock::try_acquire_in_place_within(&file, std::time::Duration::from_millis(200)) {
                        Ok(taken) => turn = taken,
                        Err(e) => match landing::repository_gone(wt) {
                            Some(gone) => return Ok(Err(gone.blocked())),
                            // Another landing holds the turn: going on alone now would race it.
                            None => return Err(e),
                        },
                    }
                }
            }
        }
        if stop.is_cancelled() {
            return Ok(Err(Blocked::stopped()));
        }
        self.store.append(session, None, EngineEvent::Activity { phase: ActivityPhase::Landing, detail: "checking where the task lands".into() })?;
        Ok(Ok(turn))
    }

    /// Records the approval and where the task landed, then removes its worktree; its branch
    /// goes too unless the person keeps it as what landed.
    fn landed(&self, session: &SessionId, review: &RequestId, wt: &TaskWorktree, resolved: EngineEvent, landed: LandedSummary) -> Result<ReviewOutcome> {
        // Told with the outcome (the attempts' notice): the session's own events say it already.
        let landed = LandedSummary { rebased: rebased_since(&self.store.events(session, 0)?, review), ..landed };
        self.store.resolve_request(
            review,
            RequestKind::Review,
            SessionStatus::AwaitingReview,
            None,
            vec![resolved, landed_event(&landed), status_event(SessionStatus::Completed)],
        )?;
        self.remove_worktree_soon(session, wt, WorktreeEnd::Landed, landed.branch_kept.is_none());
        Ok(ReviewOutcome::Decided { status: SessionStatus::Completed, revert: None, landed: Some(landed), kept: None })
    }

    /// Composes the landing when it could not be straight away: the person's branch moved on
    /// (the task is rebased onto it and verified again), the worktree had changes to commit, or
    /// an earlier rebase was not checked through (`unchecked`: verified now).
    fn catch_up_and_compose(
        &self,
        session: &SessionId,
        wt: &TaskWorktree,
        mode: LandingMode,
        message: &str,
        stop: &CancellationToken,
        unchecked: bool,
    ) -> Result<std::result::Result<Composed, Blocked>> {
        let tips = match landing::catch_up(wt)? {
            Err(b) => return Ok(Err(b)),
            Ok(CatchUp::UpToDate(_)) if unchecked => {
                if let Some(b) = self.verify_again(session, wt, stop)? {
                    return Ok(Err(b));
                }
                // The checks may take minutes: the branches as they are now.
                match landing::tips(wt)? {
                    Ok(t) => t,
                    Err(b) => return Ok(Err(b)),
                }
            }
            Ok(CatchUp::UpToDate(tips)) => tips,
            Ok(CatchUp::Rebased { onto, tip }) => {
                self.store.append(session, None, EngineEvent::Rebased { onto, tip })?;
                if let Some(b) = self.verify_again(session, wt, stop)? {
                    return Ok(Err(b));
                }
                match landing::tips(wt)? {
                    Ok(t) => t,
                    Err(b) => return Ok(Err(b)),
                }
            }
        };
        landing::compose(wt, &tips, mode, message)
    }

    /// Commits what changed in the worktree after the review, so that a reject keeps it on the
    /// task's branch: `Some` when the branch is no longer the commit the review showed (that
    /// commit, an edit or commit of the person's there, an approve that committed such an edit
    /// and was then blocked, its rebase). A worktree or branch already gone keeps nothing.
    fn keep_after_review(&self, session: &SessionId, wt: &TaskWorktree, events: &[Envelope]) -> Result<Option<KeptBranch>> {
        if Path::new(&wt.folder).is_dir() {
            let message = format!("Changed in the worktree after the review\n\nFinishline-Session: {session}\n");
            if let Some(commit) = worktree::commit_all(wt, &message, &copied_files(events))? {
                self.store.append(session, None, EngineEvent::TaskCommitted { commit, branch: wt.branch.clone(), files_since_start: None })?;
            }
        }
        let repo = Path::new(&wt.repo);
        let Ok(tip) = worktree::git(repo, &["rev-parse", "-q", "--verify", &format!("refs/heads/{}^{{commit}}", wt.branch)]) else { return Ok(None) };
        let (tip, reviewed) = (tip.trim(), reviewed_commit(events, wt));
        if tip == reviewed || rebased_to(events).is_some_and(|moved| moved == tip) {
            return Ok(None);
        }
        // Rebased since: what it gained from the person's branch is not "changed after the review".
        let below = worktree::git_ok(repo, &["merge-base", "--is-ancestor", &reviewed, tip]);
        let files = if below { worktree::changed_between(wt, &reviewed, tip)? } else { vec![] };
        Ok(Some(KeptBranch { branch: wt.branch.clone(), files, why: BranchKeptWhy::ChangedAfterReview }))
    }

    /// Removes a decided task's worktree off the decision's path: deleting a large checkout takes
    /// longer than the landing itself, and the decision is already recorded (a crash before the
    /// removal is swept at the next start). [`Engine::settle`] waits for it.
    pub(super) fn remove_worktree_soon(&self, session: &SessionId, wt: &TaskWorktree, why: WorktreeEnd, delete_branch: bool) {
        crate::fault::pause_at("before-worktree-removal");
        self.remove_in_background(session, wt, delete_branch, Some(why));
    }

    /// Removes a task's worktree off the caller's path. `record`: why, appended as
    /// `worktree_removed` once it is done; `None` when that was recorded before it started.
    pub(super) fn remove_in_background(&self, session: &SessionId, wt: &TaskWorktree, delete_branch: bool, record: Option<WorktreeEnd>) {
        let (store, data_dir, session, wt) = (self.store.clone(), self.config.data_dir.clone(), session.clone(), wt.clone());
        let job = std::thread::spawn(move || match record {
            Some(why) => {
                if let Err(e) = remove_worktree(&store, &data_dir, &session, &wt, why, delete_branch) {
                    not_removed(&store, &session, &wt, &e);
                }
            }
            None => remove_recorded(&store, &data_dir, &session, &wt, delete_branch),
        });
        self.keep_background(job);
    }

    /// Work that goes on after a decision; [`Engine::settle`] waits for it.
    pub(super) fn keep_background(&self, job: std::thread::JoinHandle<()>) {
        self.runtime.background.lock().unwrap_or_else(|p| p.into_inner()).push(job);
    }

    /// Waits for work the engine does after a decision (removing worktrees); a front end that is
    /// about to exit calls it.
    pub fn settle(&self) {
        // A job may start another (an attempt not chosen is rejected once its run has stopped),
        // and a decision under way (an auto-approval in a run) may be about to leave one.
        loop {
            self.runtime.decisions_done();
            let jobs: Vec<_> = std::mem::take(&mut *self.runtime.background.lock().unwrap_or_else(|p| p.into_inner()));
            if jobs.is_empty() {
                break;
            }
            for j in jobs {
                let _ = j.join();
            }
        }
    }

    /// After a rebase, the workspace's verification commands run again in the worktree; a
    /// failure keeps the task from landing.
    fn verify_again(&self, session: &SessionId, wt: &TaskWorktree, stop: &CancellationToken) -> Result<Option<Blocked>> {
        let commands = self.verify_commands_of(&self.store.events(session, 0)?);
        let dir = wt.work_dir();
        let of = commands.len() as u32;
        for (nth, command) in (1..).zip(&commands) {
            self.store.append(
                session,
                None,
                EngineEvent::Activity { phase: ActivityPhase::Verifying, detail: format!("after moving the task onto the branch: {command}") },
            )?;
            let (cmd, dir2, secrets, processes, stop2) =
                (command.clone(), dir.clone(), self.config.secret_env.clone(), self.config.processes.clone(), stop.clone());
            let result = std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
                rt.block_on(crate::tool::command::run_shell(&cmd, &dir2, crate::tool::command::DEFAULT_TIMEOUT, &stop2, &secrets, Some(&processes)))
            })
            .join()
            .map_err(|_| Error::Internal("the verification thread failed".into()))?;
            if stop.is_cancelled() {
                return Ok(Some(Blocked::stopped()));
            }
            let (code, output) = match result {
                Ok(r) => (r.exit_code, r.output),
                Err(e) => (None, format!("could not start: {e}")),
            };
            let tail: String = output.lines().rev().take(40).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>().join("\n");
            self.store.append(
                session,
                None,
                EngineEvent::Verification {
                    command: command.clone(),
                    exit_code: code,
                    output_tail: tail.clone(),
                    skipped: false,
                    nth,
                    of,
                    persons_own: true,
                    plans: false,
                },
            )?;
            if code != Some(0) {
                return Ok(Some(Blocked {
                    reason: LandingBlock::VerificationFailed,
                    files: vec![],
                    detail: format!(
                        "on top of the moved branch, `{command}` fails (exit {}): let the agent fix it, or keep the branch",
                        code.map(|c| c.to_string()).unwrap_or_else(|| "none".into())
                    ),
                }));
            }
        }
        Ok(None)
    }

    /// Adds or edits a comment on lines of a waiting review's diff; kept with the session.
    pub fn comment(&self, review: &RequestId, comment: crate::judge::criteria::Comment) -> Result<crate::judge::criteria::Comment> {
        let mut kept = self.comments(review, vec![comment])?;
        kept.pop().ok_or_else(|| Error::Internal("the comment was not kept".into()))
    }

    /// Adds comments given together (the CLI's repeated `--comment`): all of them, or, when one
    /// cannot be taken, none, so that none is sent later without the person having seen it kept.
    pub fn comments(&self, review: &RequestId, comments: Vec<crate::judge::criteria::Comment>) -> Result<Vec<crate::judge::criteria::Comment>> {
        let summary = self.pending_review_session(review)?;
        let kept = self.checked_comments(review, comments)?;
        let recorded = kept.iter().map(|c| EngineEvent::ReviewComment { review_id: review.clone(), comment: c.clone() }).collect();
        self.store.append_all(&summary.id, None, recorded)?;
        Ok(kept)
    }

    /// Comments checked against a waiting review's files and quoted, as [`Self::comments`] would
    /// keep them, without keeping them: a command that does more than comment checks everything
    /// it was given before any of it is recorded.
    pub fn checked_comments(&self, review: &RequestId, comments: Vec<crate::judge::criteria::Comment>) -> Result<Vec<crate::judge::criteria::Comment>> {
        let summary = self.pending_review_session(review)?;
        let events = self.store.events(&summary.id, 0)?;
        let files = reviewed_files(&events, review);
        comments.into_iter().map(|c| self.quoted(review, &summary, &events, &files, c)).collect()
    }

    /// A comment checked against the review's files, with the lines it is on quoted.
    fn quoted(
        &self,
        review: &RequestId,
        summary: &crate::store::SessionSummary,
        events: &[Envelope],
        files: &[FileChange],
        mut comment: crate::judge::criteria::Comment,
    ) -> Result<crate::judge::criteria::Comment> {
        comment.check().map_err(Error::InvalidInput)?;
        if comment.id.trim().is_empty() {
            comment.id = format!("cmt_{}", uuid::Uuid::now_v7().simple());
        }
        let text = match files.iter().find(|f| f.path == comment.path) {
            Some(file) => {
                on_a_side_it_has(file.kind, &comment)?;
                self.review_file(review, &comment.path, comment.side).ok().flatten()
            }
            // A file an earlier round changed that a finding of this review names: Approve lands
            // it, so the person can comment on it, as the task left it.
            None if named_by_a_finding(events, review, &comment.path) => {
                let path = &comment.path;
                if comment.side == crate::judge::criteria::DiffSide::Old {
                    return Err(Error::InvalidInput(format!(
                        "{path} changed in an earlier round, so this review does not show it as it was: comment on its lines as the task left it, or say what to do about it in your request for changes"
                    )));
                }
                let folder = current_worktree(events).map(|wt| PathBuf::from(wt.folder)).unwrap_or_else(|| in_place_folder(summary, events));
                Some(earlier_rounds_file(&folder, path)?)
            }
            None => return Err(Error::InvalidInput(format!("{} is not among the files this review shows", comment.path))),
        };
        // Lines the file does not have (a typo in the CLI's `path:line`) would reach the agent
        // as a criterion quoting nothing.
        if let Some(text) = &text {
            let count = text.lines().count();
            if comment.end_line as usize > count {
                let side = match comment.side {
                    crate::judge::criteria::DiffSide::New => "as the run left it",
                    crate::judge::criteria::DiffSide::Old => "as the run found it",
                };
                let lines = if comment.start_line == comment.end_line {
                    format!("line {} is", comment.start_line)
                } else {
                    format!("lines {}-{} are", comment.start_line, comment.end_line)
                };
                return Err(Error::InvalidInput(format!("{} has {count} line{} ({side}): {lines} not in it", comment.path, if count == 1 { "" } else { "s" })));
            }
        }
        if comment.quote.is_empty() {
            // From the whole file (a comment may be on lines the run did not change), else the diff.
            comment.quote = text
                .map(|text| {
                    text.lines().skip(comment.start_line as usize - 1).take((comment.end_line - comment.start_line + 1) as usize).collect::<Vec<_>>().join("\n")
                })
                .unwrap_or_else(|| quote_lines(files, &comment));
        }
        Ok(comment)
    }

    /// A reviewed file's whole text, as the run left it (`New`) or found it (`Old`): the review
    /// shows lines around the changes from it, to comment on. `None`: absent or not text.
    pub fn review_file(&self, review: &RequestId, path: &str, side: crate::judge::criteria::DiffSide) -> Result<Option<String>> {
        let (session, _, _) = self.store.request_state(review)?.ok_or_else(|| Error::NotFound(format!("review {review}")))?;
        let summary = self.store.session(&session)?;
        let events = self.store.events(&session, 0)?;
        let Some(f) = reviewed_files(&events, review).into_iter().find(|f| f.path == path) else {
            return Err(Error::NotFound(format!("{path} in this review")));
        };
        let (Some(before), Some(after)) = (f.before, f.after) else { return Ok(None) };
        let folder = match current_worktree(&events) {
            Some(wt) => std::path::PathBuf::from(wt.folder),
            None => in_place_folder(&summary, &events),
        };
        let cp = self.checkpoints(&session, &folder)?;
        let change = OwnedChange { path: path.to_string(), before, after, unattributed: false, edited_between: false };
        let texts = cp.owned_texts(std::slice::from_ref(&change))?;
        Ok(texts.into_iter().next().and_then(|(_, b, a)| match side {
            crate::judge::criteria::DiffSide::New => a,
            crate::judge::criteria::DiffSide::Old => b,
        }))
    }

    /// Copies into the person's checkout what a waiting review names as never landing (what the
    /// task wrote that `.gitignore` hides), before its worktree goes: only entries the review
    /// names, nothing there overwritten, nothing outside it written. Under the session's lock, as
    /// a decision is, so no decision removes the worktree meanwhile; what was done is recorded
    /// with the session, failures too.
    pub fn copy_ignored(&self, review: &RequestId, entries: &[String]) -> Result<worktree::CopiedOut> {
        let summary = self.pending_review_session(review)?;
        let _lock = FolderLock::acquire(&session_lock(&self.config.data_dir, &summary.id))?;
        self.pending_review_session(review)?;
        let events = self.store.events(&summary.id, 0)?;
        let named = events
            .iter()
            .rev()
            .find_map(|e| match &e.event {
                EngineEvent::ReviewRequested { review_id, not_landed, .. } if review_id == review => Some(not_landed.clone()),
                _ => None,
            })
            .unwrap_or_default();
        let wt = current_worktree(&events)
            .ok_or_else(|| Error::InvalidInput("this task works in the folder itself: everything it wrote is there already".into()))?;
        if !Path::new(&wt.folder).is_dir() {
            return Err(Error::NotFound(format!("the task's worktree {} is gone, and what it held with it", wt.folder)));
        }
        let mut wanted: Vec<String> = Vec::new();
        for entry in entries {
            let Some(found) = named.iter().find(|n| n.trim_end_matches('/') == entry.trim_end_matches('/')) else {
                let names = if named.is_empty() { "nothing".to_string() } else { named.join(", ") };
                return Err(Error::InvalidInput(format!("{entry} is not among what this review names as never landing; the review names: {names}")));
            };
            if !wanted.contains(found) {
                wanted.push(found.clone());
            }
        }
        let done = worktree::copy_ignored_out(&wt, &wanted)?;
        self.store.append(
            &summary.id,
            None,
            EngineEvent::IgnoredCopied { copied: done.copied.clone(), left: done.left.clone(), failed: done.failed.clone() },
        )?;
        Ok(done)
    }

    /// Removes a comment from a waiting review.
    pub fn remove_comment(&self, review: &RequestId, comment_id: &str) -> Result<()> {
        let summary = self.pending_review_session(review)?;
        self.store.append(&summary.id, None, EngineEvent::ReviewCommentRemoved { review_id: review.clone(), comment_id: comment_id.to_string() })?;
        Ok(())
    }

    /// Dismisses an audit finding for this session: it no longer blocks auto-approve, and the
    /// dismissal is recorded.
    pub fn dismiss_finding(&self, session: &SessionId, finding: &crate::judge::audit::Finding) -> Result<()> {
        self.store.session(session)?;
        self.store.append(session, None, EngineEvent::AuditDismissed { rule: finding.rule, path: finding.path.clone(), excerpt: finding.excerpt.clone() })?;
        Ok(())
    }

    /// Takes back a dismissal: the finding counts again from the next audit on (and the review
    /// shows it again).
    pub fn restore_finding(&self, session: &SessionId, finding: &crate::judge::audit::Finding) -> Result<()> {
        self.store.session(session)?;
        let events = self.store.events(session, 0)?;
        let dismissed = super::changes::dismissed_findings(&events);
        if !dismissed.iter().any(|(r, p, x)| *r == finding.rule && *p == finding.path && *x == finding.excerpt) {
            return Err(Error::InvalidInput(format!("{}: {} was not dismissed for this task", finding.path, finding.rule.label())));
        }
        self.store.append(session, None, EngineEvent::AuditRestored { rule: finding.rule, path: finding.path.clone(), excerpt: finding.excerpt.clone() })?;
        Ok(())
    }

    /// "Let the agent resolve it": the moved branch is merged into the task's worktree, conflict
    /// markers and all, and the agent gets a continuation (Finishline's words, not the person's)
    /// to resolve them. The review is answered as request changes.
    pub fn resolve_conflict(self: &Arc<Self>, review: &RequestId) -> Result<()> {
        let summary = self.pending_review_session(review)?;
        let _lock = FolderLock::acquire(&session_lock(&self.config.data_dir, &summary.id))?;
        let events = self.store.events(&summary.id, 0)?;
        // Only after Approve could not land for a reason that is the agent's to resolve.
        let asked = events.iter().rposition(|e| matches!(&e.event, EngineEvent::ReviewRequested { review_id, .. } if review_id == review)).unwrap_or(0);
        let blocked = events[asked..].iter().rev().find_map(|e| if let EngineEvent::LandingBlocked { reason, .. } = &e.event { Some(*reason) } else { None });
        if !blocked.is_some_and(LandingBlock::agent_can_resolve) {
            return Err(Error::InvalidInput(
                "there is no landing for the agent to resolve: approve first; only a branch that moved on (a conflict, conflict markers, or verification failing on top of it) is sent back".into(),
            ));
        }
        let wt = current_worktree(&events).ok_or_else(|| Error::InvalidInput("this task has no worktree: there is no branch to merge".into()))?;
        let target = wt.base_branch.clone().ok_or_else(|| Error::InvalidInput("the task started on a detached HEAD: there is no branch to merge".into()))?;
        if let Some(commit) = worktree::commit_all(&wt, &format!("{} (before merging {target})", summary.title), &copied_files(&events))? {
            self.store.append(&summary.id, None, EngineEvent::TaskCommitted { commit, branch: wt.branch.clone(), files_since_start: None })?;
        }
        let folder = Path::new(&wt.folder);
        let merged = worktree::git_in(folder)
            .args(worktree::identity_args(folder))
            .args(["-c", "core.autocrlf=false", "merge", "--no-ff", "--no-commit", &target])
            .output()?;
        crate::fault::pause_at("resolve-after-merge");
        let mut conflicted: Vec<String> =
            worktree::git(folder, &["diff", "--name-only", "--diff-filter=U"]).unwrap_or_default().lines().map(str::to_string).collect();
        if conflicted.is_empty() {
            // Merged before, and the markers of that merge were committed unresolved.
            conflicted = crate::workspace::landing::conflict_markers_in(folder, &format!("refs/heads/{target}"), "HEAD").unwrap_or_default();
        }
        let text = if conflicted.is_empty() {
            let _ = merged;
            format!("The branch `{target}` moved on while you worked. It is now merged into your work. Check that everything still works together, run the project's checks, and finish.")
        } else {
            format!(
                "The branch `{target}` moved on while you worked, and merging it into your work conflicts in: {}. Resolve every conflict (the files contain <<<<<<< / ======= / >>>>>>> markers): keep what both sides meant, remove the markers, make sure it builds and the checks pass, then finish.",
                conflicted.join(", ")
            )
        };
        let run = RunId::new();
        let resolved = EngineEvent::ReviewResolved {
            review_id: review.clone(),
            decision: Decision::RequestChanges,
            by: DecidedBy::Person,
            feedback: None,
            reverted: false,
            occasion: Some(crate::domain::DecisionOccasion::ResolveLanding),
        };
        let session = self.store.resolve_and_begin(review, RequestKind::Review, SessionStatus::AwaitingReview, vec![resolved], &run, RunTrigger::Feedback)?;
        self.spawn_begun(
            session,
            run,
            run::RunStart {
                trigger: RunTrigger::Feedback,
                user_message: None,
                answer: None,
                plan: PlanMode::Off,
                continuation: Some((ContinuationSource::LandingConflict, text)),
            },
        );
        Ok(())
    }
}

/// The lines a comment names, from the reviewed file's diff (the new side's lines, or the old).
fn quote_lines(files: &[FileChange], c: &crate::judge::criteria::Comment) -> String {
    let Some(f) = files.iter().find(|f| f.path == c.path) else { return String::new() };
    let (mut old, mut new) = (0u32, 0u32);
    let mut out = Vec::new();
    for l in f.diff.lines() {
        if let Some(h) = l.strip_prefix("@@ -") {
            // @@ -a,b +c,d @@
            let mut parts = h.split(' ');
            old = parts.next().and_then(|p| p.split(',').next()).and_then(|n| n.parse().ok()).unwrap_or(1);
            new = parts.next().and_then(|p| p.trim_start_matches('+').split(',').next()).and_then(|n| n.parse().ok()).unwrap_or(1);
            continue;
        }
        if l.starts_with("---")
            || l.starts_with("+++")
            || l.starts_with("diff ")
            || l.starts_with("new file")
            || l.starts_with("deleted file")
            || l.starts_with("old mode")
            || l.starts_with("new mode")
        {
            continue;
        }
        let (in_old, in_new) = match l.chars().next() {
            Some('+') => (false, true),
            Some('-') => (true, false),
            _ => (true, true),
        };
        let line = &l[l.len().min(1)..];
        let here = match c.side {
            crate::judge::criteria::DiffSide::New if in_new => Some(new),
            crate::judge::criteria::DiffSide::Old if in_old => Some(old),
            _ => None,
        };
        if here.is_some_and(|n| n >= c.start_line && n <= c.end_line) {
            out.push(line.to_string());
        }
        if in_old {
            old += 1;
        }
        if in_new {
            new += 1;
        }
    }
    out.join("\n")
}

fn agent_name(summary: &crate::store::SessionSummary) -> String {
    if summary.provider == crate::external::ACP_PROVIDER {
        crate::external::ExternalAgent::preset(&summary.model).map(|a| a.label()).unwrap_or_else(|| summary.model.clone())
    } else {
        format!("{} with {}", "Finishline's agent", summary.model)
    }
}

fn landed_event(l: &LandedSummary) -> EngineEvent {
    EngineEvent::Landed {
        mode: l.mode,
        target_branch: l.target_branch.clone(),
        commit: l.commit.clone(),
        branch_kept: l.branch_kept.clone(),
        files: l.files.clone(),
        checkout_elsewhere: l.checkout_elsewhere.clone(),
    }
}

fn started_event(review: &RequestId, c: &Composed, by: DecidedBy) -> EngineEvent {
    EngineEvent::LandingStarted {
        review_id: review.clone(),
        mode: c.mode,
        target_branch: c.target_branch.clone(),
        old_tip: c.old_tip.clone(),
        new_commit: c.new_commit.clone(),
        task_tip: c.task_tip.clone(),
        by,
    }
}

/// A side the file has lines on: one it has none on (before a created file, after a deleted one)
/// would quote nothing, and the other side is what the person means.
fn on_a_side_it_has(kind: ChangeKind, comment: &crate::judge::criteria::Comment) -> Result<()> {
    use crate::judge::criteria::DiffSide;
    let (path, line) = (&comment.path, comment.start_line);
    match (kind, comment.side) {
        (ChangeKind::Created, DiffSide::Old) => {
            Err(Error::InvalidInput(format!("{path} is new: it had no lines before the run; comment on its lines as the run left it ({path}:{line})")))
        }
        (ChangeKind::Deleted, DiffSide::New) => Err(Error::InvalidInput(format!("the run deleted {path}: comment on its removed lines ({path}:-{line})"))),
        _ => Ok(()),
    }
}

/// A file an earlier round left, read where the task works, as a comment on it quotes it: a
/// regular file of text, not through a link (the agent could have made it one to a secret), and
/// not past the size a file tool reads.
fn earlier_rounds_file(folder: &Path, path: &str) -> Result<String> {
    const MOST: u64 = 1024 * 1024;
    let at = folder.join(path);
    let why = match std::fs::symlink_metadata(&at) {
        Err(_) => "is gone since an earlier round of the task".to_string(),
        Ok(m) if !m.is_file() => "is not a regular file now".to_string(),
        Ok(m) if m.len() > MOST => "is over 1 MB".to_string(),
        Ok(_) => match std::fs::read_to_string(&at) {
            Ok(text) => return Ok(text),
            Err(_) => "is not text".to_string(),
        },
    };
    Err(Error::InvalidInput(format!("{path} {why}: its lines cannot be quoted; say what to do about it in your request for changes")))
}

/// Whether a standing finding of the review names `path`.
fn named_by_a_finding(events: &[Envelope], review: &RequestId, path: &str) -> bool {
    super::changes::standing_findings(super::changes::review_audit(events, review), events).iter().any(|f| f.path == path)
}

/// The folder an in-place task works in.
pub(super) fn in_place_folder(summary: &crate::store::SessionSummary, events: &[Envelope]) -> std::path::PathBuf {
    events
        .iter()
        .rev()
        .find_map(|e| if let EngineEvent::TaskWorkspace { folder, worktree: None, .. } = &e.event { Some(std::path::PathBuf::from(folder)) } else { None })
        .unwrap_or_else(|| std::path::PathBuf::from(&summary.workspace))
}

/// What a revert did, as history records it.
pub(super) fn reverted_event(r: &RevertReport) -> EngineEvent {
    EngineEvent::Reverted {
        restored: r.restored.clone(),
        deleted: r.deleted.clone(),
        kept: r.conflicts.clone(),
        copies: r.copies.clone(),
        not_copied: r.not_copied.clone(),
    }
}

/// Where the person's version of the files a revert of `session` overwrites is kept.
pub(super) fn copies_folder(data_dir: &Path, session: &SessionId) -> PathBuf {
    data_dir.join("overwritten").join(session.as_str())
}

/// Copies the person's version of `path` into `folder` before a revert overwrites it, under a
/// name no earlier copy there has, on disk before this returns (the overwrite follows at once).
/// A link is copied as a link. None when nothing is there; an error for anything that cannot be
/// copied (a folder), so that it is not overwritten either.
fn keep_copy(cp: &Checkpoints, path: &str, folder: &Path) -> Result<Option<OverwrittenCopy>> {
    let from = cp.work_tree().join(path);
    let kind = match std::fs::symlink_metadata(&from) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.into()),
        // A pipe, a socket or a device holds nothing to copy (reading a pipe would wait for a
        // writer): it is replaced as a file that is gone is.
        Ok(m) if crate::workspace::ownership::holds_no_file(&m) => return Ok(None),
        Ok(m) => m.file_type(),
    };
    let mut to = folder.join(path);
    let mut n = 1;
    while to.symlink_metadata().is_ok() {
        n += 1;
        to = folder.join(format!("{path}.{n}"));
    }
    let dir = to.parent().unwrap_or(folder);
    std::fs::create_dir_all(dir)?;
    let copied = if kind.is_file() {
        std::fs::copy(&from, &to).and_then(|_| std::fs::File::open(&to)?.sync_all())
    } else if kind.is_symlink() {
        std::fs::read_link(&from).and_then(|target| std::os::unix::fs::symlink(target, &to))
    } else {
        Err(std::io::Error::other(if kind.is_dir() {
            "it is a folder now, and a folder is not copied"
        } else {
            "it is not a file now: nothing of it can be copied"
        }))
    };
    if let Err(e) = copied {
        // Half a copy is no copy: it goes, and the file stays as the person left it.
        let _ = std::fs::remove_file(&to);
        return Err(e.into());
    }
    // The copy's name in its folder is on disk too before the original is replaced.
    std::fs::File::open(dir).and_then(|d| d.sync_all())?;
    Ok(Some(OverwrittenCopy { path: path.to_string(), copy: to.display().to_string(), unattributed: false }))
}

/// Whether `file` is what `copy` keeps of it: a link to the same place, or a file of the same
/// bytes and kind (runnable or not).
fn same_as_copy(file: &Path, copy: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let (Ok(a), Ok(b)) = (std::fs::symlink_metadata(file), std::fs::symlink_metadata(copy)) else { return false };
    if a.file_type().is_symlink() || b.file_type().is_symlink() {
        return a.file_type().is_symlink() && b.file_type().is_symlink() && std::fs::read_link(file).ok() == std::fs::read_link(copy).ok();
    }
    let runnable = |m: &std::fs::Metadata| m.permissions().mode() & 0o111 != 0;
    a.is_file()
        && b.is_file()
        && a.len() == b.len()
        && runnable(&a) == runnable(&b)
        && std::fs::read(file).ok().is_some_and(|x| std::fs::read(copy).ok() == Some(x))
}

/// Copies in `folder` that no `Reverted` event of `events` names: made by a revert a crash cut
/// short after the copy, so the one that finishes it says where they are.
fn unrecorded_copies(folder: &Path, events: &[Envelope]) -> Vec<OverwrittenCopy> {
    let recorded: std::collections::HashSet<String> = events
        .iter()
        .filter_map(|e| if let EngineEvent::Reverted { copies, .. } = &e.event { Some(copies.iter().map(|c| c.copy.clone())) } else { None })
        .flatten()
        .collect();
    let mut found: Vec<OverwrittenCopy> = ignore::WalkBuilder::new(folder)
        .standard_filters(false)
        .build()
        .filter_map(|entry| entry.ok())
        .filter(|entry| entry.file_type().is_some_and(|t| !t.is_dir()))
        .filter_map(|entry| {
            let copy = entry.path().display().to_string();
            let path = entry.path().strip_prefix(folder).ok()?.to_string_lossy().into_owned();
            (!recorded.contains(&copy)).then_some(OverwrittenCopy { path, copy, unattributed: false })
        })
        .collect();
    found.sort_by(|a, b| a.copy.cmp(&b.copy));
    found
}

/// Puts the run's files back as the run found them, one by one. A file is left as it is when
/// someone changed it after the run (unless it is in `overwrite`); each file is looked at again
/// just before it is touched, so an edit made a moment ago is never lost. The person's
/// version of a file in `overwrite` is copied into `copies_in` first; without a copy it stays.
pub fn revert_owned(cp: &Checkpoints, owned: &[OwnedChange], overwrite: &[String], others: &[String], copies_in: &Path) -> Result<RevertReport> {
    revert_owned_after(cp, owned, overwrite, others, copies_in, &[])
}

/// [`revert_owned`] finishing a revert cut short: the files in `copied` have their copy already
/// (each holding what the file held when the revert was taken up again).
fn revert_owned_after(
    cp: &Checkpoints,
    owned: &[OwnedChange],
    overwrite: &[String],
    others: &[String],
    copies_in: &Path,
    copied: &[OverwrittenCopy],
) -> Result<RevertReport> {
    let mut report = RevertReport { applied: true, ..Default::default() };
    // One git process for every file (a command may have made thousands), each read just
    // before it is touched.
    let mut reader = cp.reader();
    for (i, c) in owned.iter().enumerate() {
        let now = reader.state(&c.path).map_err(|e| stopped_at(e, &report, &owned[i..]))?;
        let step = revert_step_here(cp, c, &now, others);
        let go = match step {
            RevertStep::AlreadyBack => false,
            RevertStep::Restore => true,
            RevertStep::ChangedSince => overwrite.contains(&c.path),
        };
        // Behind a folder that became a link since, it is left and named, as a file changed
        // since is: putting it back would write wherever the link leads.
        if (step == RevertStep::ChangedSince && !go) || (go && cp.through_link(&c.path)) {
            report.conflicts.push(c.path.clone());
            continue;
        }
        // Their version first; without a copy, nothing of theirs is overwritten. A file changed
        // while a command ran may hold their edit made meanwhile: it is copied too.
        let copy = copied.iter().find(|k| k.path == c.path);
        let mut made = None;
        if go && (step == RevertStep::ChangedSince || c.unattributed) && copy.is_none() {
            match keep_copy(cp, &c.path, copies_in) {
                Ok(copy) => {
                    made = copy.map(|k| OverwrittenCopy { unattributed: step != RevertStep::ChangedSince, ..k });
                    crate::fault::pause_at("revert-after-copy");
                }
                Err(e) => {
                    report.conflicts.push(c.path.clone());
                    report.not_copied.push(NotCopied { path: c.path.clone(), reason: e.to_string() });
                    continue;
                }
            }
        }
        if go {
            // The last look, once what goes in its place is ready: the file still holds what its
            // copy keeps (made now, or before a crash), or else what was read of it above. An
            // edit saved meanwhile has no copy: the file is left, and named.
            let full = cp.work_tree().join(&c.path);
            let against = made.as_ref().or(copy).map(|k| PathBuf::from(&k.copy));
            let still = || match &against {
                Some(k) => same_as_copy(&full, k),
                None => reader.state(&c.path).is_ok_and(|s| s == now),
            };
            if !cp.restore_file_if(&c.path, &c.before, still).map_err(|e| stopped_at(e, &report, &owned[i..]))? {
                if let Some(k) = made.take() {
                    let _ = std::fs::remove_file(&k.copy);
                }
                report.conflicts.push(c.path.clone());
                continue;
            }
        }
        report.copies.extend(made);
        if matches!(c.before, FileState::Absent) {
            report.deleted.push(c.path.clone());
        } else {
            report.restored.push(c.path.clone());
        }
        if i == 0 {
            crate::fault::pause_at("revert-after-first-file");
        }
    }
    Ok(report)
}

/// A revert stopped by a file it could not read or put back: the error, with what is back and
/// what it had not reached yet (the folder is half reverted), and what finishes it (the revert
/// was recorded as started, so every start takes it up again).
fn stopped_at(e: Error, done: &RevertReport, left: &[OwnedChange]) -> Error {
    const NAMED: usize = 5;
    let names = |all: Vec<&str>| {
        let mut said = all.iter().take(NAMED).copied().collect::<Vec<_>>().join(", ");
        if all.len() > NAMED {
            said.push_str(&format!(" and {} more", all.len() - NAMED));
        }
        said
    };
    let back: Vec<&str> = done.restored.iter().chain(&done.deleted).map(String::as_str).collect();
    let back = if back.is_empty() { "nothing is put back yet".to_string() } else { format!("put back so far: {}", names(back)) };
    let tail = format!(
        ". The revert stopped there; {back}; not yet: {} (as the task left them). Once the cause is fixed, the next start of Finishline (the app, or any `finishline` command) finishes it",
        names(left.iter().map(|c| c.path.as_str()).collect())
    );
    match e {
        // Its own words: a full disk is said around them once, with the way on.
        Error::Io(io) => Error::Io(std::io::Error::new(io.kind(), format!("{io}{tail}"))),
        Error::Internal(said) => Error::Internal(format!("{said}{tail}")),
        other => other,
    }
}

/// Removes the folders a revert emptied that were made while one of the task's runs since
/// `since` (an RFC 3339 time: when the first of its rounds started) was at work, deepest first:
/// an install the task ran, reverted, would otherwise leave its thousands of folders. A folder
/// made before or between its runs, even empty, is the person's and stays; so does one that
/// holds anything, and one whose making time the disk does not keep (or keeps in the future).
pub(super) fn remove_made_folders(cp: &Checkpoints, deleted: &[String], events: &[Envelope], since: &str) {
    let time = |at: &str| chrono::DateTime::parse_from_rfc3339(at).ok().map(std::time::SystemTime::from);
    // Each run's span, from its first event to its last (a second more: the disk's clock ticks).
    let mut spans: Vec<(&RunId, std::time::SystemTime, std::time::SystemTime)> = Vec::new();
    for e in events.iter().filter(|e| e.at.as_str() >= since) {
        let (Some(run), Some(at)) = (&e.run_id, time(&e.at)) else { continue };
        match spans.iter_mut().find(|(r, ..)| *r == run) {
            Some(span) => span.2 = at + std::time::Duration::from_secs(1),
            None => spans.push((run, at, at + std::time::Duration::from_secs(1))),
        }
    }
    let now = std::time::SystemTime::now();
    let made_by_a_run = |at: std::time::SystemTime| at <= now && spans.iter().any(|(_, from, to)| (*from..=*to).contains(&at));
    let mut folders: Vec<&Path> = deleted.iter().flat_map(|p| Path::new(p).ancestors().skip(1)).filter(|a| !a.as_os_str().is_empty()).collect();
    folders.retain(|f| f.components().all(|c| matches!(c, std::path::Component::Normal(_))));
    folders.sort_by(|a, b| b.components().count().cmp(&a.components().count()).then(a.cmp(b)));
    folders.dedup();
    for folder in folders {
        if cp.through_link(&folder.join("x").to_string_lossy()) {
            continue;
        }
        let full = cp.work_tree().join(folder);
        if std::fs::symlink_metadata(&full).is_ok_and(|m| m.is_dir() && m.created().is_ok_and(made_by_a_run)) {
            // Fails, and leaves it, when anything is in it.
            let _ = std::fs::remove_dir(&full);
        }
    }
}

/// Removes a task's worktree (its branch too, when asked) and its checkpoint store, and records
/// it.
pub fn remove_worktree(store: &Store, data_dir: &Path, session: &SessionId, wt: &TaskWorktree, why: WorktreeEnd, delete_branch: bool) -> Result<()> {
    let deleted = remove_worktree_files(data_dir, wt, delete_branch)?;
    store.append(session, None, EngineEvent::WorktreeRemoved { folder: wt.folder.clone(), why, branch_deleted: deleted.then(|| wt.branch.clone()) })?;
    Ok(())
}

/// Removes a worktree whose removal was recorded before it started; what stops it is said in
/// the session's history (the next start's sweep tries again).
pub(super) fn remove_recorded(store: &Store, data_dir: &Path, session: &SessionId, wt: &TaskWorktree, delete_branch: bool) {
    if let Err(e) = remove_worktree_files(data_dir, wt, delete_branch) {
        not_removed(store, session, wt, &e);
    }
}

fn not_removed(store: &Store, session: &SessionId, wt: &TaskWorktree, e: &Error) {
    let message = format!("The task's worktree {} could not be removed ({e}); Settings → Tasks → Storage removes what is left", wt.folder);
    let _ = store.append(session, None, EngineEvent::Error { code: ErrorCode::Worktree, message });
}

/// Removes a task's worktree (its branch too, when asked) and its checkpoint store, recording
/// nothing: for a removal recorded before it starts. Returns whether the branch was deleted.
fn remove_worktree_files(data_dir: &Path, wt: &TaskWorktree, delete_branch: bool) -> Result<bool> {
    let deleted = worktree::remove(wt, delete_branch)?;
    let shadow = data_dir.join("checkpoints").join(crate::workspace::checkpoint::store_name(Path::new(&wt.folder)));
    if shadow.join("HEAD").exists() {
        let _ = std::fs::remove_dir_all(&shadow);
    }
    Ok(deleted)
}

/// At start: finishes what a crash cut short. A revert under way is completed (files already
/// back count as back; a file changed since is left and named); a landing under way is finished
/// when the branch had moved, or reported as not landed; worktrees of decided tasks are removed,
/// never one that holds undecided work nor a folder no task of this history owns. Only what a
/// dead process left: a live one holds the session's lock. Returns the sessions it touched.
pub fn finish_interrupted(store: &Store, data_dir: &Path) -> Vec<SessionId> {
    let mut touched = Vec::new();
    let Ok(sessions) = store.list_sessions(&crate::store::ListQuery { limit: 100_000, ..Default::default() }) else { return touched };
    for s in &sessions {
        let Ok(events) = store.events(&s.id, 0) else { continue };
        if !cut_short(&events) {
            continue;
        }
        // A decision still under way in another process holds the session's lock: it is that
        // process's to finish. Only a dead one's is finished here.
        let Ok(Some(_lock)) = FolderLock::try_acquire(&session_lock(data_dir, &s.id)) else { continue };
        let Ok(events) = store.events(&s.id, 0) else { continue };
        if finish_revert(store, data_dir, s, &events) || finish_landing(store, data_dir, s, &events) {
            touched.push(s.id.clone());
        }
    }
    sweep_worktrees(store, data_dir, &sessions, &mut touched);
    touched
}

/// The lock a decision on the session holds, in every process, for as long as it acts.
pub(super) fn session_lock(data_dir: &Path, session: &SessionId) -> std::path::PathBuf {
    data_dir.join("locks").join(format!("{session}.lock"))
}

/// Whether a revert or a landing started and has no recorded end.
fn cut_short(events: &[Envelope]) -> bool {
    let started = |done: fn(&EngineEvent) -> bool, start: fn(&EngineEvent) -> bool| {
        events.iter().rposition(|e| start(&e.event)).is_some_and(|at| !events[at..].iter().any(|e| done(&e.event)))
    };
    started(|e| matches!(e, EngineEvent::Reverted { .. }), |e| matches!(e, EngineEvent::RevertStarted { .. }))
        || started(|e| matches!(e, EngineEvent::Landed { .. } | EngineEvent::LandingBlocked { .. }), |e| matches!(e, EngineEvent::LandingStarted { .. }))
}

fn finish_revert(store: &Store, data_dir: &Path, s: &crate::store::SessionSummary, events: &[Envelope]) -> bool {
    let Some(at) = events.iter().rposition(|e| matches!(e.event, EngineEvent::RevertStarted { .. })) else { return false };
    if events[at..].iter().any(|e| matches!(e.event, EngineEvent::Reverted { .. })) {
        return false;
    }
    if !matches!(events[at].event, EngineEvent::RevertStarted { .. }) {
        return false;
    }
    let Some(review) =
        events[..at].iter().rev().find_map(|e| if let EngineEvent::ReviewResolved { review_id, .. } = &e.event { Some(review_id.clone()) } else { None })
    else {
        return false;
    };
    let Some(Unapproved { owned, since, .. }) = unapproved_changes(events, &review) else { return false };
    let folder = in_place_folder(s, events);
    // Gone for now (moved, a drive not mounted): every file would read as already back. The
    // revert waits for a start that finds the folder.
    if !folder.is_dir() {
        return false;
    }
    // Another task's tools at work there: what the revert would put back may be that task's
    // now. The next start tries again; that it waits is said once.
    let _folder = match hold_the_folder(data_dir, &folder, std::time::Duration::ZERO) {
        Ok(Some(lock)) => lock,
        Ok(None) => {
            const WAITS: &str = "The revert cut short by a restart waits";
            let said = events[at..].iter().any(|e| matches!(&e.event, EngineEvent::Error { message: m, .. } if m.starts_with(WAITS)));
            let message = format!(
                "{WAITS}: another task is at work in {} (its tools may be changing the files it would put back); the next start of the app or `finishline run` that finds the folder free finishes it",
                folder.display()
            );
            return !said && store.append(&s.id, None, EngineEvent::Error { code: ErrorCode::WorkspaceBusy, message }).is_ok();
        }
        Err(_) => return false,
    };
    let cp = match Checkpoints::open_shared(&data_dir.join("checkpoints"), &folder, s.id.as_str()) {
        Ok(c) => c,
        Err(_) => return false,
    };
    // What the person allowed to be overwritten was a file as it was at their decision; it may
    // have changed again since the crash, so a file that is not the task's any more is kept and
    // named, never overwritten, unless it is still what the revert copied (below).
    let Ok(mut others) = touched_by_other_tasks(store, &data_dir.join("checkpoints"), &s.id, &s.workspace, &since) else { return false };
    others.extend(made_before(&cp, &owned, &since));
    let copies = copies_folder(data_dir, &s.id);
    // What the cut-short revert copied before the crash is said here, or never, and not copied
    // again. A copy of a file the person did not name was kept because a command changed it.
    let named = match &events[at].event {
        EngineEvent::RevertStarted { overwrite } => overwrite.clone(),
        _ => Vec::new(),
    };
    let earlier: Vec<OverwrittenCopy> = unrecorded_copies(&copies, events)
        .into_iter()
        .map(|k| {
            // `notes.md`, or `notes.md.2` beside an older copy.
            let numbered = |c: &&OwnedChange| k.path.strip_prefix(c.path.as_str()).and_then(|n| n.strip_prefix('.')).is_some_and(|n| n.parse::<u32>().is_ok());
            let original = owned.iter().find(|c| c.path == k.path).or_else(|| owned.iter().find(numbered));
            let unattributed = original.is_some_and(|c| c.unattributed && !named.contains(&c.path));
            OverwrittenCopy { path: original.map_or(k.path.clone(), |c| c.path.clone()), unattributed, ..k }
        })
        .collect();
    // A copy counts only while it holds what its file holds: one a kill cut short is half a
    // copy, and a file changed since needs a new one.
    let copied: Vec<OverwrittenCopy> = earlier.iter().filter(|k| same_as_copy(&folder.join(&k.path), Path::new(&k.copy))).cloned().collect();
    // A file the person named, copied before the crash and holding exactly that still: their
    // decision was about what it holds, and their version is kept.
    let still_as_copied: Vec<String> = copied.iter().filter(|k| named.contains(&k.path)).map(|k| k.path.clone()).collect();
    match revert_owned_after(&cp, &owned, &still_as_copied, &others, &copies, &copied) {
        Ok(mut r) => {
            remove_made_folders(&cp, &r.deleted, events, &since);
            r.copies = earlier.into_iter().chain(r.copies).collect();
            store.append(&s.id, None, reverted_event(&r)).is_ok()
        }
        Err(e) => {
            // Every start tries again; that it cannot is said once, not at each of them.
            const CANNOT: &str = "The revert cut short by a restart could not be finished";
            let message = format!("{CANNOT}: {e}");
            let said = events[at..].iter().any(|e| matches!(&e.event, EngineEvent::Error { message: m, .. } if m.starts_with(CANNOT)));
            !said && store.append(&s.id, None, EngineEvent::Error { code: ErrorCode::Io, message }).is_ok()
        }
    }
}

fn finish_landing(store: &Store, data_dir: &Path, s: &crate::store::SessionSummary, events: &[Envelope]) -> bool {
    let Some(at) = events.iter().rposition(|e| matches!(e.event, EngineEvent::LandingStarted { .. })) else { return false };
    if events[at..].iter().any(|e| matches!(e.event, EngineEvent::Landed { .. } | EngineEvent::LandingBlocked { .. })) {
        return false;
    }
    let EngineEvent::LandingStarted { review_id, mode, target_branch, old_tip, new_commit, task_tip, by } = &events[at].event else { return false };
    let Some(wt) = current_worktree(events) else { return false };
    // Histories from before the task's commit was recorded: its branch, which a landing as
    // uncommitted changes does not move.
    let task_tip = task_tip.clone().or_else(|| (*mode == LandingMode::Uncommitted).then(|| landing::tip(&wt).ok()).flatten());
    let c = Composed {
        mode: *mode,
        target_branch: target_branch.clone(),
        old_tip: old_tip.clone(),
        new_commit: new_commit.clone(),
        files: vec![],
        task_tip: task_tip.clone(),
        on_target: false,
    };
    // Its turn, as a landing's: a landing under way in another process composed from the branch
    // as it is, and would be refused if this one moved it now. Taken up at the next start then.
    let turn = match landing::turn_file(&wt) {
        Some(file) => match FolderLock::try_acquire(&file) {
            Ok(Some(turn)) => Some(turn),
            Ok(None) => return false,
            Err(_) => None,
        },
        None => None,
    };
    let files: Vec<String> = new_commit.as_ref().or(task_tip.as_ref()).and_then(|n| worktree::changed_between(&wt, old_tip, n).ok()).unwrap_or_default();
    let c = Composed { files, ..c };
    let finished = landing::finish_interrupted(&wt, &c);
    drop(turn);
    match finished {
        Ok(Ok(())) => {
            let landed = LandedSummary {
                mode: *mode,
                target_branch: Some(target_branch.clone()),
                commit: new_commit.clone(),
                branch_kept: None,
                files: c.files.clone(),
                already_held: c.files.is_empty() && !reviewed_files(events, review_id).is_empty(),
                hooks_not_run: vec![],
                unsigned: false,
                checkout_elsewhere: None,
                rebased: None,
            };
            let resolved = EngineEvent::ReviewResolved {
                review_id: review_id.clone(),
                decision: Decision::Approve,
                by: *by,
                feedback: None,
                reverted: false,
                occasion: None,
            };
            if store
                .resolve_request(
                    review_id,
                    RequestKind::Review,
                    SessionStatus::AwaitingReview,
                    None,
                    vec![resolved, landed_event(&landed), status_event(SessionStatus::Completed)],
                )
                .is_ok()
            {
                let _ = remove_worktree(store, data_dir, &s.id, &wt, WorktreeEnd::Landed, true);
            }
            true
        }
        Ok(Err(b)) => store.append(&s.id, None, EngineEvent::LandingBlocked { reason: b.reason, files: b.files, detail: b.detail }).is_ok(),
        Err(_) => false,
    }
}

/// Worktrees nobody needs any more: a decided task's (a crash between the decision and the
/// removal).
fn sweep_worktrees(store: &Store, data_dir: &Path, sessions: &[crate::store::SessionSummary], touched: &mut Vec<SessionId>) {
    crate::fault::pause_at("sweep-listed");
    for s in sessions {
        // An attempt its group passed over, that had no review to reject (it failed or was
        // cancelled): its worktree goes as a rejected one's does.
        let passed_over =
            s.attempt.as_ref().is_some_and(|a| !a.chosen && sessions.iter().any(|o| o.attempt.as_ref().is_some_and(|b| b.group == a.group && b.chosen)))
                && matches!(s.status, SessionStatus::Cancelled | SessionStatus::Failed | SessionStatus::Interrupted | SessionStatus::Idle);
        if !passed_over && !matches!(s.status, SessionStatus::Completed | SessionStatus::Rejected) {
            continue;
        }
        // Most decided tasks' worktrees are gone already.
        if store.events(&s.id, 0).ok().and_then(|e| current_worktree(&e)).is_none() {
            continue;
        }
        // Not while a decision on it is under way in another process, nor once it was continued
        // since the list was read: the status read after its events says the events are of a
        // decided task (a continuation records its new worktree only once it is running).
        let Ok(Some(_lock)) = FolderLock::try_acquire(&session_lock(data_dir, &s.id)) else { continue };
        let Ok(events) = store.events(&s.id, 0) else { continue };
        if store.session(&s.id).map(|now| now.status != s.status).unwrap_or(true) {
            continue;
        }
        // Continued since its group passed it over: the new worktree holds the person's
        // conversation with it, undecided.
        if passed_over && super::changes::continued_after_decision(&events) {
            continue;
        }
        let Some(wt) = current_worktree(&events) else { continue };
        // A landed or rejected task's branch goes unless the person kept it (when landing, or a
        // rejection that kept what changed in its worktree after the review).
        // This worktree's own landing: a follow-up after an earlier one works on a new branch,
        // which that landing says nothing about.
        let landed = super::changes::since_worktree(&events).iter().any(|e| matches!(e.event, EngineEvent::Landed { .. }));
        // A put-away cut short between its decision and its `BranchKept` (a crash, or this
        // sweep in another process meanwhile) is caught here: a commit Finishline did not make
        // keeps the branch of a task that did not land.
        let delete_branch = (passed_over || s.status == SessionStatus::Rejected || landed)
            && !branch_kept(&events, &wt)
            && (landed || super::discard::foreign_tip(&events, &wt).is_none());
        // Recorded before anything goes, and only if nothing happened since the events were
        // read: a run that starts after this (the person sending it on) sees the worktree gone
        // and works in a new one; one that started before keeps it.
        let seen = events.last().map_or(0, |e| e.seq);
        crate::fault::pause_at("sweep-decided");
        let removed =
            EngineEvent::WorktreeRemoved { folder: wt.folder.clone(), why: WorktreeEnd::Orphaned, branch_deleted: delete_branch.then(|| wt.branch.clone()) };
        if matches!(store.append_if_unchanged(&s.id, seen, vec![removed]), Ok(true)) {
            remove_recorded(store, data_dir, &s.id, &wt, delete_branch);
            touched.push(s.id.clone());
        }
    }
    // A folder in the worktrees folder that no task of this history owns is left alone: it may be
    // the person's own worktree (the folder is theirs to choose), a task of another history
    // sharing the folder, or undecided work of a history set aside as unreadable. A deleted
    // task's worktree went before its history did (`delete_task`).
}

/// What deleting a task left behind.
#[derive(Debug, Default)]
pub struct Deleted {
    /// Its repository moved away: what git keeps for the task in it (the worktree's entry, the
    /// branch unless kept), said with the commands that remove it where the repository is now.
    pub left_in_moved_repository: Option<String>,
}

/// Deletes a task from History: its worktree goes first, and its branch too unless the person
/// kept it (when landing or rejecting: that branch is theirs now), then its history and its
/// checkpoint refs. A task that runs or waits on a permission is refused before anything goes,
/// here or in another process: its worktree is in use.
pub fn delete_task(store: &Store, data_dir: &Path, session: &SessionId) -> Result<Deleted> {
    let s = store.session(session)?;
    crate::store::refuse_deleting(s.status)?;
    // Not while a decision acts on it (a landing verifying again can take minutes), here or in
    // another process.
    let Some(_lock) = FolderLock::try_acquire_within(&session_lock(data_dir, session), std::time::Duration::from_secs(1))? else {
        return Err(Error::InvalidInput("a decision on this task is under way (landing or reverting): wait for it, then delete the task".into()));
    };
    // Read again now that no decision acts on it: the one waited for may have sent it on
    // (Request changes), and its worktree is in use again.
    let s = store.session(session)?;
    crate::store::refuse_deleting(s.status)?;
    let events = store.events(session, 0)?;
    let mut deleted = Deleted::default();
    if let Some(wt) = current_worktree(&events) {
        // A branch the person chose to keep stays, and so does one holding a commit Finishline
        // did not make (theirs, made in the worktree), as a discard keeps it.
        let keep = branch_kept(&events, &wt) || super::discard::foreign_tip(&events, &wt).is_some();
        // Moved away, the repository cannot be reached to forget the worktree or delete the
        // branch; the history still goes (the repository may be deleted for good), and what stays
        // in it is said, with the commands that remove it there.
        // Where the task left its branch: the command given for the branch removes it only
        // there, since a commit of the person's on it cannot be seen from here.
        let tip = rebased_to(&events).map_or_else(|| super::changes::left_at(&events, &wt).commit, str::to_string);
        deleted.left_in_moved_repository = landing::repository_gone(&wt).map(|gone| left_in_moved(&gone.where_it_was(), &wt, (!keep).then_some(&tip)));
        remove_worktree(store, data_dir, session, &wt, WorktreeEnd::Deleted, !keep)?;
    }
    store.delete_session(session)?;
    // The history is gone either way; leftover checkpoint refs only cost space.
    let _ = crate::workspace::checkpoint::forget_session(&data_dir.join("checkpoints"), Path::new(&s.workspace), session.as_str());
    Ok(deleted)
}

/// What a deleted task leaves in its moved repository, and the commands that remove it there.
/// `branch_at`: the commit the task left its branch at, when the branch is not kept; the
/// command for it deletes the branch only while it is still there, so a commit the person made
/// on it since keeps it.
fn left_in_moved(where_it_was: &str, wt: &TaskWorktree, branch_at: Option<&str>) -> String {
    let quote = crate::workspace::worktree::shell_word;
    let forget = format!("`git worktree remove -f -f {}`", quote(&wt.folder));
    match branch_at {
        None => format!(
            "{where_it_was}, so git's entry for the task's worktree stays in it (and its branch {}, as kept): where it is now, {forget} removes the entry",
            wt.branch
        ),
        Some(tip) => format!(
            "{where_it_was}, so git's entry for the task's worktree and its branch {} stay in it: where it is now, {forget} removes the entry, and `git update-ref -d {} {tip}` the branch if it is still where the task left it (a commit of yours on it keeps it)",
            wt.branch,
            quote(&format!("refs/heads/{}", wt.branch))
        ),
    }
}

/// Whether the person chose to keep the worktree's branch: when landing, or by a decision that
/// kept what changed after the review.
fn branch_kept(events: &[Envelope], wt: &TaskWorktree) -> bool {
    events.iter().any(|e| match &e.event {
        EngineEvent::Landed { branch_kept: Some(branch), .. } | EngineEvent::BranchKept { branch, .. } => *branch == wt.branch,
        _ => false,
    })
}

/// One task's worktree, as Settings → Storage shows it.
#[derive(Debug, Clone, Serialize)]
pub struct WorktreeUsage {
    pub session_id: SessionId,
    pub title: String,
    pub status: SessionStatus,
    pub folder: String,
    pub branch: Option<String>,
    /// Which attempt of its task it is (`Codex`, `Finishline's agent (m) #2`), when one of several.
    pub attempt: Option<String>,
    pub bytes: u64,
    /// Its task is decided: clean-up removes it.
    pub leftover: bool,
}

/// Every task's worktree that is still on disk, largest first.
pub fn worktree_usage(store: &Store) -> Result<Vec<WorktreeUsage>> {
    let sessions = store.list_sessions(&crate::store::ListQuery { limit: 100_000, ..Default::default() })?;
    let mut out: Vec<WorktreeUsage> = sessions
        .into_iter()
        .filter_map(|s| {
            let folder = s.work_dir.clone()?;
            let events = store.events(&s.id, 0).ok()?;
            let wt = current_worktree(&events)?;
            Some(WorktreeUsage {
                leftover: matches!(s.status, SessionStatus::Completed | SessionStatus::Rejected),
                bytes: crate::workspace::checkpoint::dir_size(Path::new(&wt.folder)),
                session_id: s.id,
                title: s.title,
                status: s.status,
                folder,
                branch: s.branch,
                attempt: s.attempt.map(|a| a.label),
            })
        })
        .collect();
    out.sort_by_key(|w| std::cmp::Reverse(w.bytes));
    Ok(out)
}

/// Frees a checkpoint store, but only while no task works in its folder: a running task's
/// snapshots must stay.
pub fn free_checkpoints(store: &Store, stores: &Path, id: &str) -> Result<u64> {
    let workspace = std::fs::read_to_string(stores.join(id).join("workspace")).unwrap_or_default();
    if !workspace.is_empty() {
        let running = store.list_sessions(&crate::store::ListQuery {
            statuses: vec![SessionStatus::Busy, SessionStatus::Retry, SessionStatus::Queued, SessionStatus::AwaitingApproval],
            limit: 10_000,
            ..Default::default()
        })?;
        if let Some(s) = running.iter().find(|s| s.workspace == workspace || s.work_dir.as_deref().is_some_and(|w| w.starts_with(&workspace))) {
            return Err(Error::InvalidInput(format!("“{}” is working in {workspace}; free this space once it has finished", s.title)));
        }
    }
    crate::workspace::checkpoint::prune_store(stores, id)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A comment on a file an earlier round left quotes it from where the task works: never
    /// through a link the agent could have put there, never a file that is gone, with the way on.
    #[test]
    fn an_earlier_rounds_file_is_quoted_only_as_a_regular_file_of_text() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("t.py"), "assert x\n").unwrap();
        std::fs::write(dir.path().join("secret"), "key\n").unwrap();
        std::os::unix::fs::symlink(dir.path().join("secret"), dir.path().join("link.py")).unwrap();
        assert_eq!(earlier_rounds_file(dir.path(), "t.py").unwrap(), "assert x\n");
        let linked = earlier_rounds_file(dir.path(), "link.py").unwrap_err().to_string();
        assert!(linked.contains("link.py is not a regular file now") && linked.contains("request for changes"), "{linked}");
        assert!(earlier_rounds_file(dir.path(), "gone.py").unwrap_err().to_string().contains("gone since an earlier round"));
    }

    #[test]
    fn a_rejects_changes_count_from_the_first_run_of_its_rounds_a_plans_first_step_not_its_last() {
        let at = |t: &str, event: serde_json::Value| Envelope {
            seq: 0,
            session_id: SessionId("s".into()),
            run_id: Some(RunId("r".into())),
            at: t.into(),
            event: serde_json::from_value(event).unwrap(),
        };
        let review = |id: &str| serde_json::json!({"type": "review_requested", "review_id": id, "claim": "success", "verdict": "done", "end_reason": "verified_done", "remaining": [], "files_changed": [], "verification": []});
        let run = |trigger: &str| serde_json::json!({"type": "run_started", "trigger": trigger});
        let mut events =
            vec![at("2026-01-01T00:00:00.000Z", run("task")), at("2026-01-01T00:01:00.000Z", run("plan_step")), at("2026-01-01T00:02:00.000Z", review("r1"))];
        let since = |events: &[Envelope], review: &str| unapproved_changes(events, &RequestId(review.into())).unwrap().since;
        assert_eq!(since(&events, "r1"), "2026-01-01T00:00:00.000Z", "the plan's first step made files too");
        // Approved; a follow-up's rounds count from its own first run.
        events.push(at(
            "2026-01-01T00:03:00.000Z",
            serde_json::json!({"type": "review_resolved", "review_id": "r1", "decision": "approve", "by": "person", "feedback": null, "reverted": false}),
        ));
        events.push(at("2026-01-01T00:04:00.000Z", run("message")));
        events.push(at("2026-01-01T00:05:00.000Z", run("resume")));
        events.push(at("2026-01-01T00:06:00.000Z", review("r2")));
        assert_eq!(since(&events, "r2"), "2026-01-01T00:04:00.000Z");
    }

    /// The checks said to have passed after a rebase are the last round of them: one that failed
    /// was run again, and only the round that led to the landing counts. A rebase before this
    /// review (a round the person reviewed on the moved branch already) is not this landing's.
    #[test]
    fn a_landings_rebase_counts_the_last_round_of_checks_after_it() {
        let at = |event: serde_json::Value| Envelope {
            seq: 0,
            session_id: SessionId("s".into()),
            run_id: None,
            at: String::new(),
            event: serde_json::from_value(event).unwrap(),
        };
        let review = |id: &str| {
            at(
                serde_json::json!({"type": "review_requested", "review_id": id, "claim": "success", "verdict": "done", "end_reason": "verified_done", "remaining": [], "files_changed": [], "verification": []}),
            )
        };
        let rebased = || at(serde_json::json!({"type": "rebased", "onto": "abc"}));
        let check = |nth: u32, code: i32| {
            at(
                serde_json::json!({"type": "verification", "command": "make test", "exit_code": code, "output_tail": "", "skipped": false, "nth": nth, "of": 2, "persons_own": true, "plans": false}),
            )
        };
        let r1 = RequestId("r1".into());
        let mut events = vec![rebased(), review("r1")];
        assert_eq!(rebased_since(&events, &r1), None, "rebased before the review: the review showed it");
        events.extend([rebased(), check(1, 0), check(2, 1)]);
        // Blocked by the failing check; approved again, both pass.
        events.extend([check(1, 0), check(2, 0)]);
        assert_eq!(rebased_since(&events, &r1), Some(Rebased { checks_run: 2 }));
        events.push(rebased());
        assert_eq!(rebased_since(&events, &r1), Some(Rebased { checks_run: 0 }), "the last rebase, with no check after it yet");
    }

    #[test]
    fn a_revert_has_the_folder_only_once_another_tasks_tools_there_are_done() {
        let data = tempfile::tempdir().unwrap();
        let folder = tempfile::tempdir().unwrap();
        // Another task's window, as a run holds it.
        let window = WindowLock::try_take(data.path(), folder.path()).unwrap().unwrap();
        assert!(hold_the_folder(data.path(), folder.path(), std::time::Duration::from_millis(100)).unwrap().is_none(), "busy while the window is open");
        let message = busy_folder(folder.path(), "reject again").to_string();
        assert!(message.contains("reject again once that is done"), "{message}");
        drop(window);
        // Given a moment: a process another test starts meanwhile holds a copy of the lock's
        // file until it has started (flock goes with the open file, which a fork shares).
        assert!(hold_the_folder(data.path(), folder.path(), std::time::Duration::from_secs(5)).unwrap().is_some(), "free once it closed");
    }
}
