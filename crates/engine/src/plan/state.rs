//! A session's plan as its events tell it: the steps (replaced ones included, with the cause),
//! each step's state and outcome, and which step runs. Pure: the run resumes from it, the CLI
//! prints it and the exports show it; the window shows it as `PlanFollower` hands it over.

use serde::Serialize;

use crate::domain::{EndReason, PlanMode, StepState};
use crate::event::{EngineEvent, Envelope};
use crate::plan::edits::PlanEdits;
use crate::plan::PlanStep;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepView {
    pub step: PlanStep,
    pub state: StepState,
    pub end_reason: Option<EndReason>,
    /// The evaluator's summary of what the step produced (or why it did not).
    pub summary: Option<String>,
    /// What later steps need from it, as the evaluator read it.
    pub output_data: Option<String>,
    /// Why a replan took this step's place.
    pub replaced_because: Option<String>,
    /// What decided the step: its checks, or the evaluator.
    pub decided_by: Option<String>,
    /// A failed step the manager's revision took over (the steps it added follow): not a step
    /// left undone.
    pub superseded: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlanState {
    pub mode: PlanMode,
    pub steps: Vec<StepView>,
    /// The causes the manager named, one per revision.
    pub revisions: Vec<String>,
    /// Revisions made because a step failed (not for the person's feedback): at most two.
    pub replans: u32,
    /// The step that started last, and its "Step `number` of `of`" as it was announced.
    pub current: Option<usize>,
    pub number: Option<usize>,
    pub of: Option<usize>,
    /// The plan went to review: later runs (feedback, messages) are ordinary runs.
    pub concluded: bool,
    /// The plan waits for the person to run (maybe edit) or cancel it.
    pub awaiting_review: bool,
    /// The person cancelled it at its go-ahead: none of it ran. A Resume brings it back.
    pub declined: bool,
    /// The model calls the plan may make in all, and what it has made so far.
    pub budget_calls: Option<u32>,
    pub spent: PlanSpend,
    /// Rounds the person's feedback started since the plan was made: each spends a budget of
    /// its own, so `spent` counts the latest round's calls.
    pub rounds: u32,
    /// What the person changed in the plan at its go-ahead: their later word on the task.
    pub person_edits: Option<PlanEdits>,
}

/// The model calls a plan has made, by who made them (every kind of revision counts).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct PlanSpend {
    pub agent: u32,
    pub evaluator: u32,
    pub manager: u32,
}

impl PlanSpend {
    pub fn total(&self) -> u32 {
        self.agent + self.evaluator + self.manager
    }
}

impl PlanState {
    /// The latest plan of a session, if it has one.
    pub fn from_events(events: &[Envelope]) -> Option<PlanState> {
        let mut follower = PlanFollower::default();
        for e in events {
            follower.fold(&e.event);
        }
        follower.state
    }

    pub fn new(steps: &[PlanStep], mode: PlanMode) -> PlanState {
        PlanState {
            mode,
            steps: steps.iter().map(pending).collect(),
            revisions: vec![],
            replans: 0,
            current: None,
            number: None,
            of: None,
            concluded: false,
            awaiting_review: false,
            declined: false,
            budget_calls: None,
            spent: PlanSpend::default(),
            rounds: 0,
            person_edits: None,
        }
    }

    /// One more event of the session; whether it is one the plan follows (it may still have
    /// left the plan as it was).
    pub fn apply(&mut self, event: &EngineEvent) -> bool {
        match event {
            EngineEvent::PlanReviewed { approved, steps, .. } => {
                self.awaiting_review = false;
                self.declined = !*approved;
                if *approved {
                    let before: Vec<PlanStep> = self.steps.iter().filter(|s| s.state != StepState::Replaced).map(|s| s.step.clone()).collect();
                    self.person_edits = PlanEdits::between(&before, steps);
                    self.steps = steps.iter().map(pending).collect();
                } else {
                    self.concluded = true;
                    for s in self.steps.iter_mut() {
                        s.state = StepState::Skipped;
                    }
                }
            }
            EngineEvent::PlanRevised { first, cause, steps, for_feedback } => {
                if *for_feedback {
                    // The person's feedback starts a new round with a fresh budget, as it gives a
                    // single run one: counted from the revision's own call.
                    self.spent = PlanSpend { manager: 1, ..PlanSpend::default() };
                    self.rounds += 1;
                } else {
                    self.replans += 1;
                    self.spent.manager += 1;
                    if let Some(failed) = first.checked_sub(1).and_then(|i| self.steps.get_mut(i)).filter(|s| s.state == StepState::Failed) {
                        failed.superseded = true;
                    }
                }
                // New steps for the person's feedback reopen a plan that went to review.
                self.concluded = false;
                for s in self.steps.iter_mut().skip(*first) {
                    if matches!(s.state, StepState::Pending | StepState::Running) {
                        s.state = StepState::Replaced;
                        s.replaced_because = Some(cause.clone());
                    }
                }
                self.revisions.push(cause.clone());
                self.steps.extend(steps.iter().map(pending));
            }
            EngineEvent::PlanStepStarted { index, number, of, .. } => {
                if let Some(s) = self.steps.get_mut(*index) {
                    s.state = StepState::Running;
                }
                self.current = Some(*index);
                (self.number, self.of) = (Some(*number), Some(*of));
            }
            EngineEvent::StepStarted { .. } if !self.concluded => self.spent.agent += 1,
            // The task ran without the plan after it was cancelled (the person sent words): the
            // plan is history, no longer waiting to be brought back.
            EngineEvent::StepStarted { .. } if self.declined => self.declined = false,
            EngineEvent::Evaluation { repairs, .. } if !self.concluded => self.spent.evaluator += 1 + repairs,
            // The manager's repairs (its plan's, its revisions'); counted with the evaluator's,
            // whose provider it uses.
            EngineEvent::TokensSpent { repairs, .. } if !self.concluded && *repairs > 0 => self.spent.evaluator += repairs,
            EngineEvent::PlanStepFinished { index, end_reason, summary, output_data, decided_by } => {
                if let Some(s) = self.steps.get_mut(*index) {
                    s.state = if step_done(*end_reason) { StepState::Done } else { StepState::Failed };
                    s.end_reason = Some(*end_reason);
                    s.decided_by = decided_by.clone();
                    s.summary = Some(summary.clone()).filter(|s| !s.trim().is_empty());
                    s.output_data = output_data.clone().filter(|d| !d.trim().is_empty());
                }
            }
            EngineEvent::ReviewRequested { .. } if !self.concluded => {
                self.concluded = true;
                // Steps the plan never reached (it failed first) are skipped, not silently pending.
                for s in self.steps.iter_mut().filter(|s| s.state == StepState::Pending) {
                    s.state = StepState::Skipped;
                }
            }
            _ => return false,
        }
        true
    }

    /// The step to run after the finished ones, in order.
    pub fn next_pending(&self) -> Option<usize> {
        self.steps.iter().position(|s| s.state == StepState::Pending)
    }

    /// "Step `number` of `of`": counted over the steps of the current plan (replaced ones left
    /// out), 1-based.
    pub fn number_of(&self, index: usize) -> (usize, usize) {
        let live: Vec<usize> = (0..self.steps.len()).filter(|&i| self.steps[i].state != StepState::Replaced).collect();
        let number = live.iter().position(|&i| i == index).map(|p| p + 1).unwrap_or(live.len());
        (number, live.len())
    }

    pub fn replans(&self) -> u32 {
        self.replans
    }

    /// The running step of a plan that has not gone to review yet: where a resumed or
    /// continued run picks up.
    pub fn running_step(&self) -> Option<usize> {
        if self.concluded {
            return None;
        }
        self.current.filter(|&i| self.steps.get(i).is_some_and(|s| s.state == StepState::Running))
    }

    /// The step a plan that has not gone to review stopped after, when it stopped between its
    /// steps: that step ended, and the move that follows it (the next step, a revision, the
    /// final check) was not made.
    pub fn stopped_after(&self) -> Option<usize> {
        if self.concluded || self.awaiting_review {
            return None;
        }
        self.current.filter(|&i| self.steps.get(i).is_some_and(|s| matches!(s.state, StepState::Done | StepState::Failed)))
    }

    /// The plan's steps as counted in "n of m steps done": neither replaced nor a failed step a
    /// revision took over.
    pub fn counted(&self) -> impl Iterator<Item = &StepView> {
        self.steps.iter().filter(|s| s.state != StepState::Replaced && !s.superseded)
    }

    /// The end reasons of the steps that finished, in order.
    pub fn step_ends(&self) -> Vec<EndReason> {
        self.steps.iter().filter_map(|s| s.end_reason.filter(|_| s.state != StepState::Replaced)).collect()
    }
}

/// Follows a session's events and says when its plan changed: what the window shows of the plan
/// is this fold's result, sent with the event that changed it, so the plan is folded in one place.
#[derive(Debug, Default)]
pub struct PlanFollower {
    state: Option<PlanState>,
    /// The plan as last handed over, so an event that leaves it as it was hands nothing.
    sent: Option<PlanState>,
    /// Repairs of the manager's answer before its plan was made.
    repairs_before: u32,
}

/// The types of the events a plan folds (`PlanFollower::fold` and `PlanState::apply`): a run
/// reads only these to know its plan's budget at each agent step, not the session's whole log.
pub const FOLDED_TYPES: &[&str] = &[
    "plan_created",
    "plan_reviewed",
    "plan_revised",
    "plan_step_started",
    "step_started",
    "evaluation",
    "tokens_spent",
    "plan_step_finished",
    "review_requested",
];

impl PlanFollower {
    /// The plan as the events so far left it.
    pub fn state(&self) -> Option<&PlanState> {
        self.state.as_ref()
    }

    /// The plan after `event`, when the event changed it.
    pub fn see(&mut self, event: &EngineEvent) -> Option<PlanState> {
        if !self.fold(event) || self.state == self.sent {
            return None;
        }
        self.sent = self.state.clone();
        self.sent.clone()
    }

    /// Whether the event is one the plan follows.
    fn fold(&mut self, event: &EngineEvent) -> bool {
        match event {
            EngineEvent::PlanCreated { steps, mode, awaiting_review, budget_calls } => {
                let mut s = PlanState::new(steps, *mode);
                s.awaiting_review = *awaiting_review;
                s.budget_calls = *budget_calls;
                // The manager's call that made the plan, and its repairs, spent before there was
                // a plan to count them.
                s.spent.manager = 1;
                s.spent.evaluator = std::mem::take(&mut self.repairs_before);
                self.state = Some(s);
                true
            }
            EngineEvent::TokensSpent { repairs, .. } if self.state.is_none() => {
                self.repairs_before += repairs;
                false
            }
            other => self.state.as_mut().is_some_and(|s| s.apply(other)),
        }
    }
}

fn pending(step: &PlanStep) -> StepView {
    StepView {
        step: step.clone(),
        state: StepState::Pending,
        end_reason: None,
        summary: None,
        output_data: None,
        replaced_because: None,
        decided_by: None,
        superseded: false,
    }
}

/// A step is done when it was verified, or done but the evaluator was unavailable: the task's
/// end reason then carries the "unverified" upward.
pub fn step_done(end: EndReason) -> bool {
    matches!(end, EndReason::VerifiedDone | EndReason::Unverified)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::MessageId;

    fn step(title: &str) -> PlanStep {
        PlanStep { title: title.into(), instructions: format!("{title}."), criteria: vec![], depends_on: vec![], verify: vec![] }
    }

    #[test]
    fn the_plan_goes_out_only_with_the_events_that_change_it() {
        let mut f = PlanFollower::default();
        assert_eq!(f.see(&EngineEvent::StepStarted { step: 1, cycle: None }), None, "no plan yet");
        let created = f.see(&EngineEvent::PlanCreated { steps: vec![step("a"), step("b")], mode: PlanMode::On, budget_calls: Some(9), awaiting_review: false });
        assert_eq!(created.map(|p| (p.steps.len(), p.spent.total(), p.budget_calls)), Some((2, 1, Some(9))), "the manager's call is counted");
        assert_eq!(f.see(&EngineEvent::TextDelta { message_id: MessageId::new(), text: "hi".into() }), None, "text changes no plan");
        let started = f.see(&EngineEvent::PlanStepStarted { index: 1, number: 2, of: 2, title: "b".into() }).expect("a step started");
        assert_eq!((started.current, started.number, started.of, started.steps[1].state), (Some(1), Some(2), Some(2), StepState::Running));
        assert_eq!(f.see(&EngineEvent::PlanStepStarted { index: 1, number: 2, of: 2, title: "b".into() }), None, "the same again changes nothing");
        assert_eq!(f.see(&EngineEvent::StepStarted { step: 1, cycle: None }).map(|p| p.spent.agent), Some(1), "an agent call is spent");
    }

    #[test]
    fn the_persons_feedback_starts_a_round_with_its_own_count_and_says_so() {
        let mut f = PlanFollower::default();
        f.see(&EngineEvent::PlanCreated { steps: vec![step("a")], mode: PlanMode::On, budget_calls: Some(9), awaiting_review: false });
        f.see(&EngineEvent::StepStarted { step: 1, cycle: None });
        let replanned = f.see(&EngineEvent::PlanRevised { first: 1, cause: "a failed".into(), steps: vec![step("b")], for_feedback: false }).unwrap();
        assert_eq!((replanned.spent.total(), replanned.rounds), (3, 0), "a replan spends from the same round");
        let asked = f.see(&EngineEvent::PlanRevised { first: 2, cause: "the person wants c".into(), steps: vec![step("c")], for_feedback: true }).unwrap();
        assert_eq!((asked.spent.total(), asked.rounds), (1, 1), "counted from the revision's own call, in a round of its own");
    }
}
