//! The review of a task that ended without one: cancelled, failed, cut off by a crash, or stopped
//! at a refused permission. Its changes wait in its worktree or in the person's folder; going on
//! would run the agent again, and a reject needs a review. The person asks for the review as the
//! task left it: a run that calls no model gathers the changes and opens the review, decided as
//! any is (approve lands it, reject reverts what it changed in place, request changes sends it on).

use std::sync::Arc;

use super::changes::current_worktree;
use super::run::{Run, RunStart};
use super::Engine;
use crate::domain::*;
use crate::error::{Error, Result};
use crate::event::EngineEvent;

/// The statuses of a task that ended without a review.
pub const ENDED_UNREVIEWED: [SessionStatus; 4] = [SessionStatus::Cancelled, SessionStatus::Failed, SessionStatus::Interrupted, SessionStatus::Idle];

impl Engine {
    /// Opens the review of a task that ended without one, as it is now: no model is asked. What it
    /// changed is gathered by the run this starts; one that changed nothing ends as it was, saying
    /// so ([`NOTHING_TO_REVIEW`]).
    pub fn review_ended(self: &Arc<Self>, session: &SessionId) -> Result<tokio::task::JoinHandle<()>> {
        let summary = self.store.session(session)?;
        let events = self.store.events(session, 0)?;
        if let Some(group) = super::discard::competing_group(&self.store, session)? {
            return Err(Error::InvalidInput(format!("{session} is an attempt of group {group}: attempts are reviewed together, in the group's review")));
        }
        // Its worktree went with nothing in it: a run now would make a new, empty one.
        if summary.isolation == Some(Isolation::Worktree) && current_worktree(&events).is_none() {
            return Err(Error::InvalidInput(format!("{session} {NOTHING_TO_REVIEW} (its worktree went, empty)")));
        }
        // Deleted by hand: what it held uncommitted is gone, and its branch holds the rest.
        if let Some(wt) = current_worktree(&events).filter(|wt| !std::path::Path::new(&wt.folder).join(".git").exists()) {
            return Err(Error::InvalidInput(format!(
                "{session}'s worktree {} is gone (deleted by hand?): what it held that was not committed is lost; its branch {} keeps the rest, to merge or delete with git",
                wt.folder, wt.branch
            )));
        }
        let folder = super::changes::folder_a_run_needs(&events, &summary.workspace);
        if let Err(e) = std::fs::metadata(&folder) {
            return Err(crate::workspace::unusable_now(&folder, &e));
        }
        let run = RunId::new();
        self.store.begin_run_then(
            session,
            &run,
            |status| match status {
                s if ENDED_UNREVIEWED.contains(&s) => Ok(RunTrigger::Review),
                SessionStatus::AwaitingReview => Err(Error::InvalidInput(format!("{session} already waits for your review"))),
                s if s.at_work() => {
                    Err(Error::InvalidInput(format!("{session} is {}: its review comes when it ends (or cancel it, then review what it changed)", s.as_str())))
                }
                s => Err(Error::AlreadyDecided(format!("{session} is {}: its work was decided", s.as_str()))),
            },
            vec![],
        )?;
        Ok(self.spawn_begun(
            session.clone(),
            run,
            RunStart { trigger: RunTrigger::Review, user_message: None, answer: None, plan: PlanMode::Off, continuation: None },
        ))
    }
}

/// Said when a task asked to be reviewed changed no files.
pub const NOTHING_TO_REVIEW: &str = "changed no files: there is nothing to review";

impl Run {
    /// The run of [`Engine::review_ended`]: a window a kill left open is closed (what changed in
    /// it after the run was last seen is asked about as someone's edit), and the changes go to
    /// review with how the task ended. Nothing changed, or the review could not be gathered: the
    /// task ends as it was (an interrupted one stays resumable), saying why.
    pub(super) async fn review_as_it_is(&mut self) -> crate::Result<()> {
        let (status, end_reason) = self.how_it_ended()?;
        match self.gather_and_review(end_reason).await {
            Ok(true) => Ok(()),
            Ok(false) => self.finish(status, end_reason, Some(format!("It {NOTHING_TO_REVIEW}."))),
            Err(e) => {
                let message = format!("Its review could not be opened: {e}");
                self.emit(EngineEvent::Error { code: e.code(), message: message.clone() })?;
                self.finish(status, end_reason, Some(message))
            }
        }
    }

    /// Opens the review; `false` when there is nothing in it.
    async fn gather_and_review(&mut self, end_reason: EndReason) -> crate::Result<bool> {
        self.checkpoint_ready().await?;
        if self.evidence.window_open.is_some() {
            self.close_window_left_open().await.map_err(|h| match h {
                super::run::Halt::Store(e) => e,
                _ => Error::InvalidInput("cancelled while another task's tools were at work in the folder".into()),
            })?;
        } else if self.folder.worktree.is_some() {
            self.take_in_changes_after_the_task()?;
        }
        // Nothing recorded (checkpoints off): a worktree with work in it is still reviewed, as
        // the review of a run without checkpoints is, from git.
        let unrecorded_work = self.checkpoints.is_none()
            && self.folder.worktree.as_ref().is_some_and(|wt| !super::changes::unused(&self.engine.store.events(&self.session, 0).unwrap_or_default(), wt));
        if !self.has_changes_to_review() && !unrecorded_work {
            return Ok(false);
        }
        let remaining = self.evidence.previous_remaining.clone().unwrap_or_default();
        self.review(super::review::ReviewInput { claim: Claim::None, claim_words: None, end_reason, remaining, stuck: None })?;
        Ok(true)
    }

    /// How the task ended before the review was asked for: its status then (interrupted, when a
    /// crash cut it off), and its last run's end (a run a crash cut off has none: cancelled).
    fn how_it_ended(&self) -> crate::Result<(SessionStatus, EndReason)> {
        let events = self.engine.store.events_of_types(&self.session, &["status_changed", "run_finished"])?;
        let earlier = || events.iter().rev().filter(|e| e.run_id.as_ref() != Some(&self.run));
        let status = earlier().find_map(|e| match e.event {
            EngineEvent::StatusChanged { status, .. } if ENDED_UNREVIEWED.contains(&status) => Some(status),
            _ => None,
        });
        let end = earlier().find_map(|e| match e.event {
            EngineEvent::RunFinished { end_reason, .. } => Some(end_reason),
            _ => None,
        });
        let end = if status == Some(SessionStatus::Interrupted) { None } else { end };
        Ok((status.unwrap_or(SessionStatus::Cancelled), end.unwrap_or(EndReason::Cancelled)))
    }
}
