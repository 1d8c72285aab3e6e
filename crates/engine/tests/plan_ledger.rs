//! Plan mode's progress ledger, row by row (docs/completion.md, "Plan mode").

use finishline_engine::domain::EndReason;
use finishline_engine::plan::ledger::{task_end, PlanLedger, PlanMove, MAX_REPLANS, MAX_STALLS};

#[test]
fn p1_progress_keeps_the_step_going_and_takes_a_stall_away() {
    let mut l = PlanLedger { stalls: 2, replans: 0 };
    assert_eq!(l.after_evaluation(true), PlanMove::ContinueStep);
    assert_eq!(l.stalls, 1, "progress takes one stall away");
    l.stalls = 0;
    l.after_evaluation(true);
    assert_eq!(l.stalls, 0, "never below zero");
}

#[test]
fn p2_p3_three_evaluations_without_progress_stop_the_step_for_a_replan() {
    let mut l = PlanLedger::default();
    for _ in 1..MAX_STALLS {
        assert_eq!(l.after_evaluation(false), PlanMove::ContinueStep, "a stall or two is not yet a reason to replan");
    }
    assert_eq!(l.after_evaluation(false), PlanMove::Replan, "the third stall calls the manager");
    assert_eq!((l.stalls, l.replans), (0, 1), "a new plan starts with no stalls and one replan spent");
}

#[test]
fn p4_p5_a_done_step_moves_on_and_the_last_one_gets_a_final_check() {
    let mut l = PlanLedger { stalls: 1, replans: 0 };
    assert_eq!(l.after_step(EndReason::VerifiedDone, false), PlanMove::NextStep);
    assert_eq!(l.stalls, 0);
    assert_eq!(l.after_step(EndReason::VerifiedDone, true), PlanMove::FinalCheck, "after the last step the whole request is checked once more");
    assert_eq!(l.after_step(EndReason::Unverified, false), PlanMove::NextStep, "an unverifiable step moves on, but marks the task");
}

#[test]
fn p6_a_step_that_was_not_done_is_replanned_never_reported_as_done() {
    for end in [
        EndReason::Stuck,
        EndReason::CyclesExhausted,
        EndReason::TruncationExhausted,
        EndReason::StepLimit,
        EndReason::AgentTurnLimit,
        EndReason::ClaimedBlocked,
        EndReason::ClaimedPartial,
        EndReason::Conversation,
        EndReason::ConversationUnchecked,
    ] {
        let mut l = PlanLedger::default();
        assert_eq!(l.after_step(end, true), PlanMove::Replan, "{end:?} is not done: even as the last step it must not reach the final check");
    }
}

#[test]
fn p7_past_two_replans_the_task_goes_to_review_as_plan_failed() {
    let mut l = PlanLedger { stalls: 0, replans: MAX_REPLANS };
    assert_eq!(l.after_step(EndReason::Stuck, false), PlanMove::Review(EndReason::PlanFailed));
    let mut l = PlanLedger { stalls: MAX_STALLS - 1, replans: MAX_REPLANS };
    assert_eq!(l.after_evaluation(false), PlanMove::Review(EndReason::PlanFailed), "stalls past the replan budget fail the plan too");
}

#[test]
fn p8_what_the_person_or_the_provider_ended_is_not_the_plans_to_fix() {
    for end in [EndReason::PermissionDenied, EndReason::QuestionDeclined, EndReason::Cancelled, EndReason::Failed] {
        let mut l = PlanLedger::default();
        assert_eq!(l.after_step(end, false), PlanMove::Review(end), "{end:?} ends the task as it is; no replan spends the person's time");
        assert_eq!(l.replans, 0);
    }
}

#[test]
fn p9_the_task_is_never_verified_done_when_a_step_was_not_verified() {
    assert_eq!(task_end(&[EndReason::VerifiedDone, EndReason::Unverified], EndReason::VerifiedDone), EndReason::Unverified);
    assert_eq!(task_end(&[EndReason::VerifiedDone, EndReason::VerifiedDone], EndReason::VerifiedDone), EndReason::VerifiedDone);
    assert_eq!(task_end(&[EndReason::VerifiedDone], EndReason::Stuck), EndReason::Stuck, "the final check's own finding stands");
}
