//! Putting away a task that ended without a review (it failed, was cancelled, or its process
//! died): its work sits undecided in its worktree, which the start-up sweep rightly keeps, so the
//! person says what a reject would: record it rejected, then remove the worktree and its branch.

use std::path::Path;
use std::sync::Arc;

use super::changes::current_worktree;
use super::decision::{remove_worktree, status_event};
use super::Engine;
use crate::domain::*;
use crate::error::{Error, Result};
use crate::event::EngineEvent;
use crate::store::Store;
use crate::workspace::worktree::{self, TaskWorktree};

/// Records the task rejected (completed, when its work landed before) and returns its worktree,
/// still to be removed. What changed there after the task is committed on its branch first, and
/// `keep_all` (the person keeps the branch) commits everything and records the branch kept with
/// the decision, in one write: a crash before the removal leaves a decided session, whose
/// worktree the start-up sweep removes, keeping a branch recorded kept or holding such commits.
/// The caller holds the session's lock, which the sweep waits for.
fn put_away(store: &Store, data_dir: &Path, session: &SessionId, keep_all: bool) -> Result<(TaskWorktree, SessionStatus)> {
    if let Some(group) = competing_group(store, session)? {
        return Err(Error::InvalidInput(format!("{session} is an attempt of group {group}: attempts are put away with their group, by rejecting it")));
    }
    let events = store.events(session, 0)?;
    let wt = current_worktree(&events).ok_or_else(|| Error::InvalidInput(nothing_to_discard(session, &events)))?;
    // Moved away, the repository holds the branch and git's entry for the worktree: neither can
    // be removed, nor what changed after the task committed, until it is back.
    if let Some(gone) = crate::workspace::landing::repository_gone(&wt) {
        return Err(Error::RepositoryGone(format!("{}: put it back there and discard again", gone.where_it_was())));
    }
    // A task whose work landed before, continued since (a question after it landed), stays
    // completed: only the new worktree is put away, and its landed work is not called rejected.
    // Kept before the decision is recorded: a crash after it leaves the worktree to the start-up
    // sweep, which keeps only what a commit holds. A status that may not be discarded is
    // refused below, where it is read again, and nothing is committed for it.
    if matches!(store.session(session)?.status, SessionStatus::Idle | SessionStatus::Failed | SessionStatus::Cancelled | SessionStatus::Interrupted) {
        commit_changed_after_task(store, data_dir, session, &wt, keep_all)?;
    }
    let after =
        if events.iter().any(|e| matches!(e.event, crate::event::EngineEvent::Landed { .. })) { SessionStatus::Completed } else { SessionStatus::Rejected };
    let mut decided = vec![status_event(after)];
    if keep_all {
        decided.push(whole_branch_kept(&wt)?);
    }
    // The status is read again where the decision is written: a run started meanwhile, here or
    // in another process, wins, and nothing is removed under it.
    store.append_all_if(session, decided, |status| {
        if matches!(status, SessionStatus::Idle | SessionStatus::Failed | SessionStatus::Cancelled | SessionStatus::Interrupted) {
            return Ok(());
        }
        let what = match status {
            SessionStatus::AwaitingReview => {
                return Err(Error::InvalidInput(format!(
                    "{session} waits for your review, where its work is decided: reject it there (Reject in the window, `finishline sessions review {session} --reject` in a terminal)"
                )))
            }
            // Waiting for an answer it never ends by itself, and `sessions cancel` ends it.
            SessionStatus::AwaitingApproval => {
                "it waits for your answer (a plan's go-ahead, a permission or a question): answer it, or cancel it (`sessions cancel`, or Cancel in the window)"
            }
            st if st.is_running() || st == SessionStatus::Queued => {
                "it is still running: wait for it to end, or cancel it (Cancel in the window, `sessions cancel` in a terminal)"
            }
            _ => "only a task that ended without a review (failed, cancelled, interrupted or idle) is discarded so",
        };
        Err(Error::InvalidInput(format!("{session} is {}: {what}", status.as_str())))
    })?;
    Ok((wt, after))
}

/// The group of an attempt still competing in it: approving it chooses it for the group, and it
/// is put away with its group, not alone. Once one attempt of the group is chosen, none competes
/// any more: one continued after that (the chosen one's follow-up, one set aside and sent on) is
/// approved, rejected or discarded as any task. Until then every attempt competes, also one the
/// person rejected on its own and sent on, or the group could land two.
pub fn competing_group(store: &Store, session: &SessionId) -> Result<Option<GroupId>> {
    let Some(a) = store.session(session)?.attempt else { return Ok(None) };
    let chosen = super::attempts::group_attempts(store, &a.group)?.iter().any(|s| s.attempt.as_ref().is_some_and(|x| x.chosen));
    Ok((!chosen).then_some(a.group))
}

/// A discarded task's branch is kept when it holds a commit Finishline did not make (the
/// person's, made in the worktree, or the agent's own `git commit`): that work is not the run's
/// to throw away. Recorded before the removal; `None` when the branch goes.
pub(super) fn keep_foreign_commits(store: &Store, session: &SessionId, wt: &TaskWorktree) -> Result<Option<String>> {
    let events = store.events(session, 0)?;
    let Some(kept) = branch_kept(&events, wt) else { return Ok(None) };
    store.append(session, None, kept)?;
    Ok(Some(wt.branch.clone()))
}

/// What changed in a put-away task's worktree after the task's last record (the person's hand
/// work there, or a write of the agent's that its end cut off before it was recorded) is not the
/// task's to throw away: it is committed on the branch, which [`keep_foreign_commits`] then keeps
/// as holding a commit Finishline did not make. Without a record of where the task left it (its
/// checkpoints off or unreadable), anything uncommitted there counts as such work.
/// `all`: the person keeps the branch, so everything uncommitted there is committed on it.
fn commit_changed_after_task(store: &Store, data_dir: &Path, session: &SessionId, wt: &TaskWorktree, all: bool) -> Result<()> {
    let folder = Path::new(&wt.folder);
    if !folder.is_dir() || worktree::untouched(wt)? {
        return Ok(());
    }
    if all {
        let message = format!("Kept when the task was put away\n\nFinishline-Session: {session}\n");
        worktree::commit_all(wt, &message, &super::changes::copied_files(&store.events(session, 0)?))?;
        return Ok(());
    }
    let stores = data_dir.join("checkpoints");
    let left = crate::workspace::checkpoint::Checkpoints::open_shared(&stores, folder, session.as_str()).ok().and_then(|cp| {
        let last = cp.marked("agent").or_else(|| cp.marked("base"))?;
        let now = cp.snapshot("discard").ok()?;
        cp.differs(&last, &now).ok()
    });
    if left == Some(false) {
        return Ok(());
    }
    let events = store.events(session, 0)?;
    let message = format!("Changed in the worktree after the task\n\nFinishline-Session: {session}\n");
    worktree::commit_all(wt, &message, &super::changes::copied_files(&events))?;
    Ok(())
}

/// The branch a put-away keeps because the person asked, with what it changes since the task
/// started: recorded with the decision.
fn whole_branch_kept(wt: &TaskWorktree) -> Result<EngineEvent> {
    // Deleted by the person (with the worktree removed first, as git asks): git's own words
    // ("rev-parse … failed") would not say that nothing is lost by putting the task away.
    let tip = worktree::git(Path::new(&wt.repo), &["rev-parse", "-q", "--verify", &format!("refs/heads/{}^{{commit}}", wt.branch)]).map_err(|_| {
        Error::InvalidInput(format!(
            "The task's branch {} is no longer in {}, so there is no branch to keep: discard it without --keep-branch (Discard the work, in the window) to put the task away; its history stays",
            wt.branch, wt.repo
        ))
    })?;
    let files = worktree::changed_between(wt, &wt.base_commit, tip.trim()).unwrap_or_default();
    Ok(EngineEvent::BranchKept { branch: wt.branch.clone(), files, why: BranchKeptWhy::Asked })
}

/// The `branch_kept` a put-away records when the branch holds a commit Finishline did not make.
pub(super) fn branch_kept(events: &[crate::event::Envelope], wt: &TaskWorktree) -> Option<EngineEvent> {
    let (recorded, tip) = foreign_tip(events, wt)?;
    let files = worktree::changed_between(wt, &recorded, &tip).unwrap_or_default();
    Some(EngineEvent::BranchKept { branch: wt.branch.clone(), files, why: BranchKeptWhy::ChangedAfterTask })
}

/// The task branch's tip and the last commit Finishline recorded on it, when they differ: a
/// commit Finishline did not make is on the branch. A landing's rebase that moved the task's
/// own commits is Finishline's too.
pub(super) fn foreign_tip(events: &[crate::event::Envelope], wt: &TaskWorktree) -> Option<(String, String)> {
    let recorded = super::changes::left_at(events, wt).commit;
    let tip = worktree::git(Path::new(&wt.repo), &["rev-parse", "-q", "--verify", &format!("refs/heads/{}^{{commit}}", wt.branch)]).ok()?;
    let tip = tip.trim().to_string();
    let rebased = super::decision::rebased_to(events) == Some(tip.as_str());
    (!tip.is_empty() && tip != recorded && !rebased).then_some((recorded, tip))
}

/// What a discard did: the worktree removed, the status recorded (completed for a task whose
/// work landed before), and the branch kept for commits Finishline did not make.
pub struct Discarded {
    pub worktree: TaskWorktree,
    pub status: SessionStatus,
    pub branch_kept: Option<String>,
}

/// Discards an ended task's worktree and branch; the CLI's way, which waits for the removal.
/// `keep_branch`: the work stays, committed on the task's branch, which is kept.
pub fn discard(store: &Store, data_dir: &Path, session: &SessionId, keep_branch: bool) -> Result<Discarded> {
    let _lock = crate::workspace::lock::FolderLock::acquire(&super::decision::session_lock(data_dir, session))?;
    let (wt, after) = put_away(store, data_dir, session, keep_branch)?;
    crate::fault::pause_at("discard-decided");
    let kept = if keep_branch { Some(wt.branch.clone()) } else { keep_foreign_commits(store, session, &wt)? };
    remove_worktree(store, data_dir, session, &wt, WorktreeEnd::Rejected, kept.is_none())?;
    Ok(Discarded { worktree: wt, status: after, branch_kept: kept })
}

impl Engine {
    /// [`discard`] with the removal off the caller's path, as a reject's is. `keep_branch`: the
    /// work stays, committed on the task's branch, which is kept.
    pub fn discard(self: &Arc<Self>, session: &SessionId, keep_branch: bool) -> Result<()> {
        if self.is_running(session) {
            return Err(Error::InvalidInput(format!("{session} is still running: cancel it first")));
        }
        let (wt, _) = {
            let _lock = crate::workspace::lock::FolderLock::acquire(&super::decision::session_lock(&self.config.data_dir, session))?;
            put_away(&self.store, &self.config.data_dir, session, keep_branch)?
        };
        let kept = if keep_branch { Some(wt.branch.clone()) } else { keep_foreign_commits(&self.store, session, &wt)? };
        self.remove_worktree_soon(session, &wt, WorktreeEnd::Rejected, kept.is_none());
        Ok(())
    }
}

/// Why a task without a worktree has nothing to discard, from what became of it: one that landed
/// or was rejected had a worktree, which went with that decision.
/// A task in the person's folder that ended without a review: its changes wait there undecided.
fn in_place_undecided(events: &[crate::event::Envelope]) -> bool {
    let worked_in_place = events.iter().any(|e| matches!(e.event, EngineEvent::TaskWorkspace { worktree: None, .. }));
    let status = events.iter().rev().find_map(|e| match e.event {
        EngineEvent::StatusChanged { status, .. } => Some(status),
        _ => None,
    });
    worked_in_place && status.is_some_and(|s| super::ended_review::ENDED_UNREVIEWED.contains(&s))
}

fn nothing_to_discard(session: &SessionId, events: &[crate::event::Envelope]) -> String {
    let ended = events.iter().rev().find_map(|e| match &e.event {
        EngineEvent::WorktreeRemoved { why, .. } => Some(*why),
        _ => None,
    });
    let landed = events.iter().rev().find_map(|e| match &e.event {
        EngineEvent::Landed { target_branch, commit, branch_kept, .. } => Some((target_branch.clone(), commit.clone(), branch_kept.clone())),
        _ => None,
    });
    match (ended, landed) {
        (Some(WorktreeEnd::Landed), Some((target, commit, kept))) => {
            let whither = match (target, commit, kept) {
                (Some(target), Some(commit), _) => format!("landed on {target} as {}", &commit[..commit.len().min(10)]),
                (_, _, Some(branch)) => format!("landed: its work is kept on its branch {branch}"),
                (Some(target), None, None) => format!("landed in your working tree of {target}"),
                (None, None, None) => "landed".to_string(),
                (None, Some(commit), None) => format!("landed as {}", &commit[..commit.len().min(10)]),
            };
            format!("{session} {whither}, and its worktree went with the landing: there is nothing to discard (its history stays)")
        }
        (Some(WorktreeEnd::Rejected), _) => format!("{session} was rejected, and its worktree went with that: there is nothing to discard (its history stays)"),
        (Some(_), _) => format!("{session}'s worktree is already removed: there is nothing to discard (its history stays)"),
        (None, _) if in_place_undecided(events) => format!(
            "{session} works in your folder, not in a worktree of its own, so there is nothing to discard: to put back what it changed there, review it as it ended and reject it (Review its changes in the window, `finishline sessions review {session} --reject --revert` in a terminal)"
        ),
        (None, _) => format!("{session} has no worktree of its own: there is nothing to discard (its history stays)"),
    }
}
