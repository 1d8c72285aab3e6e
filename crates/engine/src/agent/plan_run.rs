//! Plan mode inside the run loop: the manager's plan, each step as a run of its own with a fresh
//! conversation, the hand-over from step to step, replanning, and the final check of the whole
//! request before the review. The decisions are [`crate::plan::ledger`]'s; this file carries them
//! out and records them.

use super::review::ReviewInput;
use super::run::{Halt, Run, RunStart};
use crate::domain::*;
use crate::event::EngineEvent;
use crate::judge::completion::EvaluationQuestion;
use crate::judge::ladder::Unusable;
use crate::plan::edits::settled;
use crate::plan::ledger::{self, PlanLedger, PlanMove};
use crate::plan::state::PlanState;
use crate::plan::{self, Plan, PlanStep, PlannerInput, ReplanInput};
use crate::provider::Usage;

/// How many workspace paths the manager is shown.
const LISTING: usize = 400;

/// The step a run works on.
#[derive(Debug, Clone)]
pub struct StepRun {
    pub index: usize,
    pub step: PlanStep,
    pub number: usize,
    pub of: usize,
    /// No step comes after it: its evaluation also judges the whole request (the final check
    /// folded in).
    pub last: bool,
}

impl StepRun {
    /// "Step 2: Write b.txt", as the review names the step a verdict was on.
    pub fn label(&self) -> String {
        format!("Step {}: {}", self.number, self.step.title)
    }
}

/// How a step's run ended, as the plan needs it.
pub(super) struct StepEnding {
    pub end_reason: EndReason,
    pub claim: Claim,
    pub claim_words: Option<ClaimWords>,
    pub remaining: Vec<String>,
    pub stuck: Option<Stuck>,
}

impl Run {
    /// Asks the manager for a plan. `Ok(None)`: run the task as one run (Auto chose one step,
    /// or the manager's answer was unusable, which is said).
    pub(super) async fn make_plan(&mut self, mode: PlanMode) -> Result<Option<Plan>, Halt> {
        self.emit(EngineEvent::Activity { phase: ActivityPhase::Thinking, detail: "planning the steps".into() })?;
        let endpoint = self.manager_endpoint();
        // A worktree still being filled lists as the person's folder, which holds the same files.
        let root = self.folder.readable();
        let listing = tokio::task::spawn_blocking(move || crate::workspace::checkpoint::listing(&root, LISTING)).await.unwrap_or_default();
        let input = PlannerInput {
            task: self.task.clone(),
            listing,
            instructions: self.instructions.as_ref().map(|i| (i.file.clone(), i.text.clone())),
            may_skip: mode == PlanMode::Auto,
        };
        let asked =
            plan::make_plan(endpoint.provider.clone(), &endpoint.model, &input, self.engine.config.retry, self.said_again("planning the steps"), &self.cancel);
        let limit = self.engine.config.step_limit;
        let over = || plan::PlanResult { plan: Err(Unusable::OverLimit(limit.as_secs())), usage: Usage::default(), calls: 1 };
        let Some(result) = tokio::time::timeout(limit, asked).await.unwrap_or_else(|_| Some(over())) else {
            return Err(Halt::Cancelled);
        };
        self.emit(EngineEvent::TokensSpent { source: UsageSource::Evaluator, usage: result.usage, repairs: result.calls.saturating_sub(1) })?;
        match result.plan {
            Ok(p) if p.is_single() => {
                self.emit(EngineEvent::Activity { phase: ActivityPhase::Thinking, detail: "one step is enough: running the task as one run".into() })?;
                Ok(None)
            }
            Ok(p) => Ok(Some(p)),
            Err(why) => {
                self.emit(EngineEvent::Error {
                    code: crate::error::ErrorCode::Plan,
                    message: format!("The plan could not be made: {}. The task runs as one run instead.", why.describe().trim_end_matches('.')),
                })?;
                Ok(None)
            }
        }
    }

    /// Records the plan and hands over to its first step; or, when the person reviews plans
    /// first, leaves it waiting for them (the run ends; [`super::Engine::run_plan`] starts it).
    pub(super) fn start_plan(&mut self, plan: Plan, mode: PlanMode) -> crate::Result<()> {
        if self.engine.config.review_plan {
            return self.emit_saving(vec![
                EngineEvent::PlanCreated { steps: plan.steps, mode, awaiting_review: true, budget_calls: Some(self.plan_budget()) },
                EngineEvent::Activity { phase: ActivityPhase::Waiting, detail: "your go-ahead on the plan".into() },
                Self::status(SessionStatus::AwaitingApproval),
            ]);
        }
        let created = EngineEvent::PlanCreated { steps: plan.steps.clone(), mode, awaiting_review: false, budget_calls: Some(self.plan_budget()) };
        let mut state = PlanState::new(&plan.steps, mode);
        state.apply(&created);
        self.hand_over(&state, 0, vec![created])
    }

    /// A plan the person cancelled at its go-ahead, resumed: it waits for the go-ahead again, as
    /// it was made (none of it ran).
    pub(super) fn reopen_plan(&mut self, declined: &PlanState) -> crate::Result<()> {
        let steps = declined.steps.iter().filter(|s| s.state != StepState::Replaced).map(|s| s.step.clone()).collect();
        self.emit_saving(vec![
            EngineEvent::PlanCreated { steps, mode: declined.mode, awaiting_review: true, budget_calls: Some(self.plan_budget()) },
            EngineEvent::Activity { phase: ActivityPhase::Waiting, detail: "your go-ahead on the plan".into() },
            Self::status(SessionStatus::AwaitingApproval),
        ])
    }

    /// Ends this run and starts the run of step `index`, in one store step.
    fn hand_over(&mut self, state: &PlanState, index: usize, before: Vec<EngineEvent>) -> crate::Result<()> {
        let files: Vec<String> = self.changes().into_iter().map(|c| c.path).collect();
        let after = step_start(&settled(&self.task, state.person_edits.as_ref()), state, index, &files);
        let next = RunId::new();
        self.engine.store.hand_over(&self.session, &self.run, &next, RunTrigger::PlanStep, before, after)?;
        self.next = Some((next, RunStart { trigger: RunTrigger::PlanStep, user_message: None, answer: None, plan: PlanMode::Off, continuation: None }));
        Ok(())
    }

    /// The model calls a plan may make in all: 1.5× what a single run of the task may spend
    /// (its steps and its continuations, each with an evaluation).
    pub(super) fn plan_budget(&self) -> u32 {
        let single = self.cfg().max_steps + 2 * self.cfg().continuation_budget + 1;
        (single as f64 * 1.5).ceil() as u32
    }

    /// The manager's model: its own when set in Settings, else the evaluator's.
    pub(super) fn manager_endpoint(&self) -> super::ModelEndpoint {
        self.engine.config.manager.clone().unwrap_or_else(|| self.evaluator.clone())
    }

    /// What the evaluator judges: this step against its criteria, or the whole request at the
    /// final check (and at the last step, which the final check is folded into).
    pub(super) fn judged_task(&self) -> String {
        let task = settled(&self.task, self.plan_edits.as_ref());
        if let Some(s) = self.plan_step.as_ref().filter(|s| s.last && !self.judge_whole) {
            let criteria = done_when(&s.step.criteria);
            return format!(
                "The last step of a plan, and the whole task with it: it is done only when this step is done AND the whole task below is done.\nThis step: {}\n{}\nIt is done when:{criteria}\n\nThe whole task:\n{}",
                s.step.title, s.step.instructions, task
            );
        }
        match (&self.plan_step, self.judge_whole) {
            (Some(s), false) => {
                let criteria = done_when(&s.step.criteria);
                format!(
                    "Step {} of {} of a larger task; judge only this step, not the later ones.\nThis step: {}\n{}\nIt is done when:{criteria}\n\nThe whole task, for context:\n{}",
                    s.number, s.of, s.step.title, s.step.instructions, task
                )
            }
            // The final check, and a run after the plan: the request as the person settled it.
            _ => task,
        }
    }

    /// A step's run ended: record it and move the plan on, replan, or go to review.
    pub(super) async fn end_step(&mut self, ending: StepEnding) -> Result<(), Halt> {
        let Some(current) = self.plan_step.clone() else { return Ok(()) };
        let summary = self
            .evidence
            .last_verdict_summary
            .clone()
            .or_else(|| ending.claim_words.as_ref().and_then(|c| c.summary.clone()))
            // Judged by its checks alone: what held is what the step did.
            .or_else(|| (ending.end_reason == EndReason::VerifiedDone && !current.step.criteria.is_empty()).then(|| current.step.criteria.join("; ")))
            .unwrap_or_else(|| format!("ended: {}", ending.end_reason.as_str()));
        let output_data = self.evidence.last_verdict_output_data.clone();
        let decided_by = self.evidence.decided_by.clone().or_else(|| match ending.end_reason {
            EndReason::VerifiedDone | EndReason::Unverified => {
                self.evidence.last_verdict.map(|v| format!("the evaluator ({}): {}", self.evaluator_model(), v.as_str().replace('_', " ")))
            }
            other => Some(format!("the run ended {}", other.as_str().replace('_', " "))),
        });
        let finished = EngineEvent::PlanStepFinished { index: current.index, end_reason: ending.end_reason, summary, output_data, decided_by };
        let run_finished = EngineEvent::RunFinished {
            status: SessionStatus::Busy,
            claim: ending.claim,
            verdict: self.evidence.last_verdict,
            end_reason: ending.end_reason,
            stuck: ending.stuck.clone(),
        };
        let mut state = self.plan_state()?;
        state.apply(&finished);
        self.move_on(state, current, ending, Some((run_finished, finished)), None).await
    }

    /// What follows a finished step: the next step, the final check, a revision or the review.
    /// `end`: the step's end (its run's and the plan's), stored with the move; `None` when it was
    /// stored before, by a run stopped before it made the move.
    /// `note`: the person's words for a revision, sent while the plan was stopped.
    async fn move_on(
        &mut self,
        state: PlanState,
        current: StepRun,
        ending: StepEnding,
        end: Option<(EngineEvent, EngineEvent)>,
        note: Option<String>,
    ) -> Result<(), Halt> {
        let (run_finished, finished): (Vec<EngineEvent>, Vec<EngineEvent>) = end.into_iter().unzip();
        let mut ledger = PlanLedger { stalls: 0, replans: state.replans() };
        let last = state.next_pending().is_none();
        // The plan's budget: every call counts, whoever made it. Spent, the task goes to the
        // person with what is done.
        if let Some(budget) = state.budget_calls.filter(|b| state.spent.total() >= *b) {
            self.emit_all(finished)?;
            // The plan's meter shows the calls made against the budget; the step's own stall is
            // not why the task stopped.
            let mut ending = StepEnding { stuck: None, ..ending };
            if state.next_pending().is_none() && !state.counted().any(|s| s.state == StepState::Failed) {
                // Every step done, but the whole request was never checked: that is what is left.
                ending.remaining.push(format!(
                    "the final check of the whole request was not made: the plan's budget of {budget} model calls is spent ({} made)",
                    state.spent.total()
                ));
            }
            return Ok(self.plan_review(&state, EndReason::PlanBudgetSpent, ending)?);
        }
        match ledger.after_step(ending.end_reason, last) {
            PlanMove::NextStep => {
                let next = state.next_pending().expect("a next step");
                self.hand_over(&state, next, run_finished.into_iter().chain(finished).collect())?;
            }
            PlanMove::FinalCheck => {
                self.emit_all(finished)?;
                self.final_check(state, ending).await?;
            }
            PlanMove::Replan => self.replan(state, current, ending, run_finished.into_iter().chain(finished).collect(), note).await?,
            PlanMove::Review(end_reason) => {
                self.emit_all(finished)?;
                self.plan_review(&state, end_reason, ending)?;
            }
            PlanMove::ContinueStep => unreachable!("a finished step does not continue"),
        }
        Ok(())
    }

    /// A plan stopped between its steps (cancelled, or cut short, after a step ended and before
    /// the move that follows was made) goes on with that move, made again from the step's stored
    /// end: the revision, the final check or the review. Never an ordinary run over the whole
    /// session, which would leave the plan's later steps unrun.
    /// `note`: the person's words sent there, for the revision of a failed step.
    pub(super) async fn go_on_after_step(&mut self, note: Option<String>) -> Result<(), Halt> {
        let Some(current) = self.plan_step.clone() else { return Ok(()) };
        let state = self.plan_state()?;
        let end_reason = state.steps[current.index].end_reason.unwrap_or(EndReason::Failed);
        let events = self.engine.store.events(&self.session, 0)?;
        let from = events.iter().rposition(|e| matches!(e.event, EngineEvent::PlanStepStarted { index, .. } if index == current.index)).unwrap_or(0);
        let span = &events[from..];
        let (claim, stuck) = span
            .iter()
            .rev()
            .find_map(|e| match &e.event {
                EngineEvent::RunFinished { claim, stuck, .. } => Some((*claim, stuck.clone())),
                _ => None,
            })
            .unwrap_or((Claim::None, None));
        let remaining = span
            .iter()
            .rev()
            .find_map(|e| match &e.event {
                EngineEvent::Evaluation { remaining, .. } => Some(remaining.clone()),
                _ => None,
            })
            .unwrap_or_default();
        self.emit(EngineEvent::Activity { phase: ActivityPhase::Thinking, detail: format!("going on with the plan after step {}", current.number) })?;
        self.move_on(state, current, StepEnding { end_reason, claim, claim_words: None, remaining, stuck }, None, note).await
    }

    /// After the last step: one evaluation of the whole request, then the review. Work the
    /// final check finds missing is a replan like any failed step.
    async fn final_check(&mut self, state: PlanState, ending: StepEnding) -> Result<(), Halt> {
        self.judge_whole = true;
        // The task's own verification commands, now that every step is done.
        let commands = self.verify_commands.clone();
        if !commands.is_empty() {
            let v = self.verify(&commands, false).await?;
            if let Some(f) = v.failure() {
                let mut ledger = PlanLedger { stalls: 0, replans: state.replans() };
                let current = self.plan_step.clone().expect("a plan step");
                let failing = StepEnding { end_reason: EndReason::ClaimedPartial, remaining: vec![format!("make `{}` pass", f.command)], ..ending };
                return match ledger.after_step(EndReason::ClaimedPartial, true) {
                    PlanMove::Replan => self.replan(state, current, failing, vec![], None).await,
                    _ => Ok(self.plan_review(&state, EndReason::PlanFailed, failing)?),
                };
            }
        }
        // The last step's evaluation already judged the whole request: no second call.
        if self.evidence.whole_judged {
            let end = ledger::task_end(&state.step_ends(), EndReason::VerifiedDone);
            return Ok(self.plan_review(&state, end, StepEnding { end_reason: end, remaining: vec![], ..ending })?);
        }
        let outcome = self.evaluate(EvaluationQuestion::Done).await?;
        match outcome.verdict {
            Verdict::Done => {
                let end = ledger::task_end(&state.step_ends(), EndReason::VerifiedDone);
                self.plan_review(&state, end, StepEnding { end_reason: end, remaining: vec![], ..ending })?;
            }
            Verdict::Unavailable => self.plan_review(&state, EndReason::Unverified, StepEnding { end_reason: EndReason::Unverified, ..ending })?,
            Verdict::NotDone | Verdict::Stuck => {
                let mut ledger = PlanLedger { stalls: 0, replans: state.replans() };
                let current = self.plan_step.clone().expect("a plan step");
                let failing = StepEnding { end_reason: EndReason::ClaimedPartial, remaining: outcome.remaining.clone(), ..ending };
                match ledger.after_step(EndReason::ClaimedPartial, true) {
                    PlanMove::Replan => self.replan(state, current, failing, vec![], None).await?,
                    _ => self.plan_review(&state, EndReason::PlanFailed, failing)?,
                }
            }
        }
        Ok(())
    }

    /// The manager names the cause and revises the steps from the failed one on; the run of
    /// the first new step follows.
    async fn replan(
        &mut self,
        mut state: PlanState,
        failed: StepRun,
        ending: StepEnding,
        mut before: Vec<EngineEvent>,
        note: Option<String>,
    ) -> Result<(), Halt> {
        if !before.is_empty() {
            // The step's end is recorded before the manager is asked, so it shows while it thinks.
            self.emit_all(std::mem::take(&mut before))?;
        }
        self.emit(EngineEvent::Activity { phase: ActivityPhase::Thinking, detail: format!("revising the plan after step {}", failed.number) })?;
        let input = ReplanInput {
            task: settled(&self.task, state.person_edits.as_ref()),
            done: done_steps(&state),
            failed: Some(failed.step.clone()),
            failure: match &ending.stuck {
                Some(s) => format!("{} ({}): {}", ending.end_reason.as_str(), s.pattern.as_str(), s.repeated),
                None => ending.end_reason.as_str().to_string(),
            },
            remaining: ending.remaining.clone(),
            later: state.steps.iter().skip(failed.index + 1).filter(|s| s.state == StepState::Pending).map(|s| s.step.clone()).collect(),
            instructions: self.instructions.as_ref().map(|i| (i.file.clone(), i.text.clone())),
            feedback: None,
            note,
            calls_left: self.calls_left(&state),
        };
        let revision = match self.ask_for_revision(&input).await? {
            Ok(r) => r,
            Err(why) => {
                self.emit(EngineEvent::Error {
                    code: crate::error::ErrorCode::Plan,
                    message: format!("The manager could not revise the plan ({}).", why.describe()),
                })?;
                return Ok(self.plan_review(&state, EndReason::PlanFailed, ending)?);
            }
        };
        let first_new = state.steps.len();
        let revised = EngineEvent::PlanRevised { first: failed.index + 1, cause: revision.cause, steps: revision.plan.steps, for_feedback: false };
        state.apply(&revised);
        self.hand_over(&state, first_new, vec![revised])?;
        Ok(())
    }

    /// A plan step stops where the plan's budget is spent, before the model call that would go
    /// past it: the budget is a cap, not a figure checked when a step ends (a step started with
    /// one call left made up to its whole step limit more). The agent's `complete_task` waiting
    /// for its answer is answered, and its claim kept for the review. `Ok(true)`: the step ended.
    pub(super) async fn stop_at_plan_budget(
        &mut self,
        evidence: &crate::judge::completion::Evidence,
        answers_call: Option<&str>,
        remaining: Vec<String>,
    ) -> Result<bool, Halt> {
        if !self.plan_budget_spent()? {
            return Ok(false);
        }
        if let Some(id) = answers_call {
            self.answer_complete_task(id, "The plan's budget of model calls is spent: stop here. Your work goes to the person for review.")?;
        }
        let claim = evidence.claim.as_ref().map_or(Claim::None, |c| c.claim);
        let claim_words = evidence.claim.as_ref().map(|c| ClaimWords {
            summary: c.summary.clone(),
            original_request_summary: c.original_request_summary.clone(),
            remaining_work: c.remaining_work.clone(),
        });
        self.end_step(StepEnding { end_reason: EndReason::PlanBudgetSpent, claim, claim_words, remaining, stuck: None }).await?;
        Ok(true)
    }

    /// Whether this run is a plan's step and the plan's budget of model calls is spent.
    pub(super) fn plan_budget_spent(&self) -> crate::Result<bool> {
        if self.plan_step.is_none() {
            return Ok(false);
        }
        let state = self.plan_state()?;
        Ok(state.budget_calls.is_some_and(|b| state.spent.total() >= b))
    }

    /// Whether the plan stopped after a failed step that the manager will revise: the person's
    /// words sent there go to that revision, not to the failed step's agent again.
    pub(super) fn revision_pending(&self) -> crate::Result<bool> {
        let Some(step) = &self.plan_step else { return Ok(false) };
        let state = self.plan_state()?;
        let failed = state.steps.get(step.index).is_some_and(|s| s.state == StepState::Failed);
        let budget_left = state.budget_calls.is_none_or(|b| state.spent.total() < b);
        Ok(failed && budget_left && state.replans() < crate::plan::ledger::MAX_REPLANS)
    }

    /// The calls left of the plan's budget when a fifth or less is left: the manager is told to
    /// finish.
    fn calls_left(&self, state: &PlanState) -> Option<u32> {
        let budget = state.budget_calls?;
        let left = budget.saturating_sub(state.spent.total());
        (left * 5 <= budget).then_some(left)
    }

    fn evaluator_model(&self) -> String {
        self.evaluator.model.clone()
    }

    /// The manager's retries, said while they happen as the evaluator's are: "planning the steps"
    /// alone for minutes read as hung. Its answer is bounded by the step limit, as theirs is.
    fn said_again(&self, doing: &'static str) -> crate::provider::OnRetry {
        let (store, session, run) = (self.engine.store.clone(), self.session.clone(), self.run.clone());
        std::sync::Arc::new(move |w: &crate::provider::RetryWait| {
            let detail = format!("{doing} again ({} of {}): {}", w.attempt, w.max_retries, w.error.message);
            let _ = store.append(&session, Some(&run), EngineEvent::Activity { phase: ActivityPhase::Thinking, detail });
        })
    }

    /// One revision call to the manager (its own model, else the evaluator's), its tokens counted
    /// as the evaluator's.
    async fn ask_for_revision(&mut self, input: &ReplanInput) -> Result<Result<plan::Revision, crate::judge::ladder::Unusable>, Halt> {
        let endpoint = self.manager_endpoint();
        let asked =
            plan::revise_plan(endpoint.provider.clone(), &endpoint.model, input, self.engine.config.retry, self.said_again("revising the plan"), &self.cancel);
        let limit = self.engine.config.step_limit;
        let over = || plan::RevisionResult { revision: Err(Unusable::OverLimit(limit.as_secs())), usage: Usage::default(), calls: 1 };
        let Some(result) = tokio::time::timeout(limit, asked).await.unwrap_or_else(|_| Some(over())) else {
            return Err(Halt::Cancelled);
        };
        self.emit(EngineEvent::TokensSpent { source: UsageSource::Evaluator, usage: result.usage, repairs: result.calls.saturating_sub(1) })?;
        Ok(result.revision)
    }

    /// Request changes after a plan: the manager adds or redoes steps for the feedback, and the
    /// first of them runs. `false` when the session has no finished plan, or the manager gave no
    /// usable revision (then the feedback goes to the agent as an ordinary run, as said).
    pub(super) async fn revise_for_feedback(&mut self, feedback: &str) -> Result<bool, Halt> {
        let events = self.engine.store.events(&self.session, 0)?;
        let Some(mut state) = PlanState::from_events(&events).filter(|p| p.concluded) else { return Ok(false) };
        self.emit(EngineEvent::Activity { phase: ActivityPhase::Thinking, detail: "revising the plan for your feedback".into() })?;
        let input = ReplanInput {
            task: settled(&self.task, state.person_edits.as_ref()),
            done: done_steps(&state),
            instructions: self.instructions.as_ref().map(|i| (i.file.clone(), i.text.clone())),
            feedback: Some(feedback.to_string()),
            // The feedback's round has the plan's budget anew (`PlanRevised` for feedback starts
            // its count over): what the last round left is not this one's to finish within.
            calls_left: None,
            ..Default::default()
        };
        let revision = match self.ask_for_revision(&input).await? {
            Ok(r) => r,
            Err(why) => {
                self.emit(EngineEvent::Error {
                    code: crate::error::ErrorCode::Plan,
                    message: format!("The manager could not plan your changes ({}); the agent works on them in one run instead.", why.describe()),
                })?;
                return Ok(false);
            }
        };
        let first = state.steps.len();
        let revised = EngineEvent::PlanRevised { first, cause: revision.cause, steps: revision.plan.steps, for_feedback: true };
        state.apply(&revised);
        self.checkpoint_ready().await?;
        self.hand_over(&state, first, vec![revised])?;
        Ok(true)
    }

    /// The plan's review: the last step's claim, the task's end reason, what is left.
    fn plan_review(&mut self, state: &PlanState, end_reason: EndReason, ending: StepEnding) -> crate::Result<()> {
        let mut remaining = ending.remaining;
        if matches!(end_reason, EndReason::PlanFailed | EndReason::PlanBudgetSpent) {
            for s in state.counted().filter(|s| matches!(s.state, StepState::Pending | StepState::Failed)) {
                // A step the manager planned again under the same title is one thing not done.
                let line = format!("Step not done: {}", s.step.title);
                if !remaining.contains(&line) {
                    remaining.push(line);
                }
            }
        }
        let stuck = ending.stuck;
        self.review(ReviewInput { claim: ending.claim, claim_words: ending.claim_words, end_reason, remaining, stuck })
    }

    /// `session_log`: an earlier step's conversation, as the evaluator reads transcripts
    /// (labelled lines, bounded), so a step can recover what a summary left out.
    pub(super) fn session_log(&self, value: serde_json::Value) -> crate::Result<crate::tool::ToolOutput> {
        use crate::tool::{parse_input, SessionLogInput, ToolOutput, SESSION_LOG};
        let input = match parse_input::<SessionLogInput>(SESSION_LOG, value) {
            Ok(i) => i,
            Err(e) => return Ok(e),
        };
        let events = self.engine.store.events(&self.session, 0)?;
        let Some(state) = PlanState::from_events(&events) else { return Ok(ToolOutput::error("This session has no plan.")) };
        let current = self.plan_step.as_ref().map(|s| s.number).unwrap_or(0);
        let live: Vec<usize> = (0..state.steps.len()).filter(|&i| state.steps[i].state != StepState::Replaced).collect();
        let index = match live.iter().copied().find(|&i| state.number_of(i).0 == input.step as usize && state.steps[i].end_reason.is_some()) {
            Some(i) if (input.step as usize) < current => i,
            _ => {
                return Ok(ToolOutput::error(format!(
                    "Step {} is not an earlier, finished step; you are on step {current}. Ask for a step before it.",
                    input.step
                )))
            }
        };
        let start = events.iter().position(|e| matches!(e.event, EngineEvent::PlanStepStarted { index: i, .. } if i == index));
        let end = events.iter().position(|e| matches!(e.event, EngineEvent::PlanStepFinished { index: i, .. } if i == index));
        let (Some(start), Some(end)) = (start, end) else { return Ok(ToolOutput::error(format!("Step {} has no log.", input.step))) };
        let lines = super::evaluation::transcript_lines(&super::history::rebuild(&events[start..end]));
        Ok(ToolOutput::ok(format!("Step {} ({}):\n{}", input.step, state.steps[index].step.title, crate::judge::evaluator::digest(&lines))))
    }

    /// The session's plan as stored.
    pub(super) fn plan_state(&self) -> crate::Result<PlanState> {
        let events = self.engine.store.events_of_types(&self.session, crate::plan::state::FOLDED_TYPES)?;
        PlanState::from_events(&events).ok_or_else(|| crate::Error::Internal("a plan step without a plan".into()))
    }

    /// Within a step, one evaluation that did not finish it: progress or a stall. `true` when
    /// the step has stalled too often and must end.
    pub(super) fn step_stalled(&mut self, progress: bool) -> bool {
        if self.plan_step.is_none() {
            return false;
        }
        let mut ledger = PlanLedger { stalls: self.evidence.plan_stalls, replans: 0 };
        let stalled = ledger.after_evaluation(progress) != PlanMove::ContinueStep;
        self.evidence.plan_stalls = ledger.stalls;
        stalled
    }
}

/// The events that start step `index`: "Step n/m" and the brief of its fresh conversation.
pub(super) fn step_start(task: &str, state: &PlanState, index: usize, files: &[String]) -> Vec<EngineEvent> {
    let step = &state.steps[index].step;
    let (number, of) = state.number_of(index);
    let brief = brief(task, state, index, number, of, files);
    vec![
        EngineEvent::PlanStepStarted { index, number, of, title: step.title.clone() },
        // A step starts with a todo list of its own: an earlier step's open items are not its.
        EngineEvent::TodosUpdated { todos: vec![] },
        EngineEvent::Continuation {
            source: ContinuationSource::PlanStep,
            attempt: 0,
            max: 0,
            remaining: vec![],
            text: brief.clone(),
            answers_call: None,
            refused_claim: false,
        },
        EngineEvent::MessageCreated {
            message_id: MessageId::new(),
            role: MessageRole::Continuation,
            source: Some(ContinuationSource::PlanStep),
            text: Some(brief),
        },
    ]
}

/// A step's criteria after "It is done when:", one to a line. A step the person added without
/// any is decided by its instructions, said so: "done when:" and nothing read as done at once.
fn done_when(criteria: &[String]) -> String {
    if criteria.is_empty() {
        return " its instructions above are carried out".to_string();
    }
    criteria.iter().map(|c| format!("\n- {c}")).collect()
}

/// The finished steps for the manager: each title, with what the evaluator said it produced.
fn done_steps(state: &PlanState) -> Vec<(String, String)> {
    state
        .steps
        .iter()
        .filter(|s| s.state == StepState::Done)
        .map(|s| {
            let summary = s.summary.clone().unwrap_or_default();
            let produced = match &s.output_data {
                Some(data) => format!("{summary} (produced: {data})"),
                None => summary,
            };
            (s.step.title.clone(), produced)
        })
        .collect()
}

/// What a step's fresh conversation starts with: the task, the plan with what each finished
/// step produced, this step with its criteria, and the files changed so far.
fn brief(task: &str, state: &PlanState, index: usize, number: usize, of: usize, files: &[String]) -> String {
    let step = &state.steps[index].step;
    let mut plan_lines = String::new();
    for (i, s) in state.steps.iter().enumerate().filter(|(_, s)| s.state != StepState::Replaced) {
        let mark = if i == index {
            "this step"
        } else {
            match s.state {
                StepState::Done => "done",
                StepState::Failed => "failed",
                _ => "later",
            }
        };
        plan_lines.push_str(&format!("\n- [{mark}] {}", s.step.title));
        if let Some(summary) = s.summary.as_ref().filter(|_| s.state == StepState::Done) {
            plan_lines.push_str(&format!(": {summary}"));
        }
        if let Some(data) = s.output_data.as_ref().filter(|_| s.state == StepState::Done) {
            plan_lines.push_str(&format!("\n  What it produced for later steps: {data}"));
        }
    }
    let criteria = done_when(&step.criteria);
    let files = if files.is_empty() { "none yet".to_string() } else { files.iter().take(50).cloned().collect::<Vec<_>>().join(", ") };
    format!(
        "You are on step {number} of {of} of a plan for the person's task. Do this step only, then call complete_task. \
         Later steps are done in later runs.\n\nThe person's task:\n{task}\n\nThe plan:{plan_lines}\n\nThis step: {title}\n{instructions}\n\nIt is done when:{criteria}\n\nFiles changed so far: {files}",
        title = step.title,
        instructions = step.instructions,
    )
}
