//! Plan mode's progress ledger, the outer loop MagenticOne uses: after each step's run the plan
//! moves on, is revised, or fails. Pure, like `completion`: the rows are in docs/completion.md
//! ("Plan mode") and each has a test.
//!
//! A step is a whole run under the completion engine, so it ends with the same end reasons as a
//! run. Within a step every evaluation updates a stall count: no progress adds one, progress
//! takes one away (never below zero). Three stalls, or a step that ends without being done,
//! call the manager to replan, at most twice per task.

use serde::{Deserialize, Serialize};

use crate::domain::EndReason;

/// Stalls within a step that stop it and call for a replan.
pub const MAX_STALLS: u32 = 3;

/// Replans per task before it goes to review as `plan_failed`.
pub const MAX_REPLANS: u32 = 2;

/// What the plan has spent, persisted with it so a resumed task goes on with the same counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanLedger {
    pub stalls: u32,
    pub replans: u32,
}

/// What the plan does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanMove {
    /// Start the next step.
    NextStep,
    /// The last step is done: one final evaluation of the whole request, then the review.
    FinalCheck,
    /// Keep working on this step (a continuation, as in a single run).
    ContinueStep,
    /// Stop this step; the manager revises the remaining steps.
    Replan,
    /// The task goes to review with this end reason.
    Review(EndReason),
}

impl PlanLedger {
    /// After one evaluation inside a step: progress (the remaining list shrank or changed, files
    /// changed) or not. Row P1–P3.
    pub fn after_evaluation(&mut self, progress: bool) -> PlanMove {
        if progress {
            self.stalls = self.stalls.saturating_sub(1);
            PlanMove::ContinueStep
        } else {
            self.stalls += 1;
            if self.stalls >= MAX_STALLS {
                self.stop_step()
            } else {
                PlanMove::ContinueStep
            }
        }
    }

    /// When a step's run ended with `end`. Rows P4–P9.
    pub fn after_step(&mut self, end: EndReason, last_step: bool) -> PlanMove {
        match end {
            // Done, or done but not verifiable (the evaluator was unavailable): move on; the
            // task's own end reason can then be no better than the weakest step's.
            EndReason::VerifiedDone | EndReason::Unverified => {
                self.stalls = 0;
                if last_step {
                    PlanMove::FinalCheck
                } else {
                    PlanMove::NextStep
                }
            }
            // The person said no, or stopped it, or the provider failed, or the plan as a whole
            // already ended (failed, its budget spent): not a step's to fix by replanning.
            EndReason::PermissionDenied
            | EndReason::QuestionDeclined
            | EndReason::Cancelled
            | EndReason::Failed
            | EndReason::PlanFailed
            | EndReason::PlanBudgetSpent => PlanMove::Review(end),
            // The step was not done: cut off, stuck, out of budget or steps, or the agent says
            // it cannot. A step cut off mid-work is never reported upward as completed.
            EndReason::ClaimedBlocked
            | EndReason::ClaimedPartial
            | EndReason::Stuck
            | EndReason::CyclesExhausted
            | EndReason::TruncationExhausted
            | EndReason::StepLimit
            | EndReason::AgentTurnLimit
            | EndReason::Conversation
            | EndReason::ConversationUnchecked => self.stop_step(),
        }
    }

    fn stop_step(&mut self) -> PlanMove {
        self.stalls = 0;
        if self.replans < MAX_REPLANS {
            self.replans += 1;
            PlanMove::Replan
        } else {
            PlanMove::Review(EndReason::PlanFailed)
        }
    }
}

/// The task's end reason from its steps' end reasons, when every step got through: it is never
/// "verified done" when a step was not verified.
pub fn task_end(steps: &[EndReason], final_check: EndReason) -> EndReason {
    if steps.contains(&EndReason::Unverified) && final_check == EndReason::VerifiedDone {
        EndReason::Unverified
    } else {
        final_check
    }
}
