//! Reverting, after the fact, a task the person rejected in their own folder without undoing
//! what it changed: the reject said its changes stay and named the command that puts them back.
//! The same guarantees as a revert chosen with the reject: only the task's own changes go, a file
//! someone changed since is kept unless the person says otherwise, and the intent is recorded
//! before any file is touched (a crash is finished by the next start, overwriting nothing).

use std::sync::Arc;

use super::decision::{
    busy_folder, changed_since, copies_folder, hold_the_folder, in_place_folder, made_before, other_tasks_touches, paths_of, remove_made_folders, revert_owned,
    reverted_event, session_lock, unapproved_changes, unrecorded_work, Overwrite, ReviewOutcome, Unapproved, FOLDER_WAIT,
};
use super::Engine;
use crate::domain::*;
use crate::error::{Error, Result};
use crate::event::{EngineEvent, Envelope};
use crate::workspace::lock::FolderLock;

/// The review a reject without revert decided, and when, when nothing was undone or run since.
fn rejected_unreverted(events: &[Envelope]) -> std::result::Result<(RequestId, String), String> {
    let at = events.iter().rposition(|e| matches!(e.event, EngineEvent::ReviewResolved { .. })).ok_or("it has no decided review")?;
    let EngineEvent::ReviewResolved { review_id, decision: Decision::Reject, .. } = &events[at].event else {
        return Err("its last review was not rejected".into());
    };
    let after = &events[at + 1..];
    if let Some(kept) = after.iter().find_map(|e| match &e.event {
        EngineEvent::Reverted { kept, .. } => Some(kept),
        _ => None,
    }) {
        return Err(already_reverted(kept));
    }
    if after.iter().any(|e| matches!(e.event, EngineEvent::RevertStarted { .. })) {
        // Every command that acts (this one too) finishes such a revert first, when it can: this
        // one could not, so its folder is missing or busy, or another process is deciding on it.
        return Err("a revert of it was cut short and could not be finished yet (its folder is not there, another task is at work in it, or another Finishline is deciding on it); the next `finishline run`, `sessions review` or start of the app that finds the folder finishes it".into());
    }
    if after.iter().any(|e| matches!(e.event, EngineEvent::RunStarted { .. })) {
        return Err("it ran again after the reject".into());
    }
    Ok((review_id.clone(), events[at].at.clone()))
}

/// Why a second revert does nothing, naming what the first one kept: the person asking again is
/// often looking for exactly those files.
fn already_reverted(kept: &[String]) -> String {
    const NAMED: usize = 5;
    if kept.is_empty() {
        return "its changes were already reverted".into();
    }
    let mut names = kept.iter().take(NAMED).cloned().collect::<Vec<_>>().join(", ");
    if kept.len() > NAMED {
        names.push_str(&format!(" and {} more", kept.len() - NAMED));
    }
    format!(
        "its changes were already reverted; that revert kept {names} as changed after the task, so change {} yourself if it should go",
        if kept.len() == 1 { "it" } else { "them" }
    )
}

impl Engine {
    /// Undoes what a task rejected in place without a revert changed, as the reject's revert
    /// would have. A task that worked in a worktree never touched the person's folder: nothing
    /// to undo there.
    pub fn revert_rejected(self: &Arc<Self>, session: &SessionId, overwrite: Overwrite) -> Result<ReviewOutcome> {
        let _deciding = self.runtime.deciding();
        // One decision at a time per session, across processes.
        let _lock = FolderLock::acquire(&session_lock(&self.config.data_dir, session))?;
        let summary = self.store.session(session)?;
        let events = self.store.events(session, 0)?;
        let refuse = |why: &str| Err(Error::InvalidInput(format!("{session} cannot be reverted now: {why}")));
        if summary.status != SessionStatus::Rejected {
            return refuse(&format!("it is {}, and only a rejected task's changes are undone so", summary.status.as_str()));
        }
        if summary.isolation == Some(Isolation::Worktree) {
            return refuse("it worked in its own worktree, so your folder never had its changes");
        }
        let (review, rejected_at) = match rejected_unreverted(&events) {
            Ok(r) => r,
            Err(why) => return refuse(&why),
        };
        let folder = in_place_folder(&summary, &events);
        if !folder.is_dir() {
            return refuse(&format!("its folder {} is gone", folder.display()));
        }
        let Some(Unapproved { owned, since, unrecorded }) = unapproved_changes(&events, &review) else {
            return refuse("it was recorded before tasks kept what each file was, so which changes are its own is not known");
        };
        if unrecorded {
            return Err(unrecorded_work("it cannot be reverted"));
        }
        let _folder = hold_the_folder(&self.config.data_dir, &folder, FOLDER_WAIT)?.ok_or_else(|| busy_folder(&folder, "revert again"))?;
        let cp = self.checkpoints(session, &folder)?;
        // Since its first round: another task may have written one of its files between rounds.
        let touches =
            other_tasks_touches(&self.store, &self.config.data_dir.join("checkpoints"), session, &summary.workspace, since.as_str().min(rejected_at.as_str()))?;
        let mut later = paths_of(&touches);
        later.extend(made_before(&cp, &owned, &since));
        let changed_since = changed_since(&cp, &owned, &later)?;
        if !changed_since.is_empty() && overwrite == Overwrite::Nothing {
            return Ok(ReviewOutcome::needs_confirmation(&cp, changed_since, &touches));
        }
        let overwrite: Vec<String> = changed_since.into_iter().filter(|p| overwrite.allows(p)).collect();
        // The intent first; the files follow.
        self.store.append(session, None, EngineEvent::RevertStarted { overwrite: overwrite.clone() })?;
        let report = revert_owned(&cp, &owned, &overwrite, &later, &copies_folder(&self.config.data_dir, session))?;
        remove_made_folders(&cp, &report.deleted, &events, &since);
        self.store.append(session, None, reverted_event(&report))?;
        Ok(ReviewOutcome::Decided { status: SessionStatus::Rejected, revert: Some(report), landed: None, kept: None })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(event: EngineEvent) -> Envelope {
        Envelope { seq: 0, session_id: SessionId("s".into()), run_id: None, at: String::new(), event }
    }

    fn rejected_then(revert: EngineEvent) -> Vec<Envelope> {
        let reject = EngineEvent::ReviewResolved {
            review_id: RequestId("r".into()),
            decision: Decision::Reject,
            by: DecidedBy::Person,
            feedback: None,
            reverted: false,
            occasion: None,
        };
        vec![at(reject), at(EngineEvent::RevertStarted { overwrite: vec![] }), at(revert)]
    }

    #[test]
    fn asked_again_a_late_revert_names_the_files_the_first_one_kept() {
        let kept = |k: &[&str]| EngineEvent::Reverted {
            restored: vec![],
            deleted: vec!["notes.md".into()],
            kept: k.iter().map(|s| s.to_string()).collect(),
            copies: vec![],
            not_copied: vec![],
        };
        assert_eq!(rejected_unreverted(&rejected_then(kept(&[]))).unwrap_err(), "its changes were already reverted");
        let why = rejected_unreverted(&rejected_then(kept(&["a.txt"]))).unwrap_err();
        assert!(why.contains("already reverted") && why.contains("kept a.txt") && why.contains("change it yourself"), "{why}");
        let many: Vec<String> = (1..=7).map(|i| format!("f{i}.txt")).collect();
        let why = rejected_unreverted(&rejected_then(kept(&many.iter().map(String::as_str).collect::<Vec<_>>()))).unwrap_err();
        assert!(why.contains("f5.txt and 2 more") && !why.contains("f6.txt"), "{why}");
    }
}
