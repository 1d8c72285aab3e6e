//! The completion engine's decisions: one pure function from the run's evidence and counters to
//! the next action. No I/O happens here; the loop gathers evidence (runs tools, verification and
//! the evaluator when asked to) and calls [`decide`] again until the action is not a request for
//! more evidence.
//!
//! # Transition table
//!
//! Rows are checked in order; the first that matches decides. "Budget" is the run's shared
//! continuation budget (every source but truncation); truncation has its own cap of 3 in a row.
//!
//! | #  | situation                                                             | action |
//! |----|-----------------------------------------------------------------------|--------|
//! | 1  | the step failed with a non-retryable error                            | fail |
//! | 2  | the provider stopped for a content filter                             | fail |
//! | 2a | the context window overflowed again after the compaction it triggered | fail, `context_too_long` |
//! | 2b | a finish reason this build does not know                              | fail, `provider_protocol` |
//! | 3  | a stuck pattern fired after this step                                 | review, `stuck`, naming the pattern and what repeated |
//! | 4  | cut off (`length`, no finish reason, lost after output, or a stop of ≤ N output tokens while work is open), fewer than 3 truncations in a row | continue, `truncation` |
//! | 5  | cut off, the truncation cap is reached                                | review, `truncation_exhausted` |
//! | 6  | the step called tools (other than `complete_task`) or paused, under the step limit | next step |
//! | 7  | the step limit is reached                                             | review, `step_limit` |
//! | 8  | conversation turn (no tools, todos, file changes or claim in the run, and not a run answering Request changes: that work still awaits a decision), not yet asked | evaluate: left undone (announced, or asked for)? |
//! | 9  | conversation turn, the evaluator says something announced or asked for was left undone, budget left | continue, `missing_action` |
//! | 10 | conversation turn, otherwise                                          | idle, `conversation` (with no usable verdict, `conversation_unchecked`) |
//! | 11 | claim `blocked`                                                       | review, `claimed_blocked` |
//! | 12 | claim `partial`                                                       | review, `claimed_partial` |
//! | 13 | open todos, budget left                                               | continue, `todo_gate` |
//! | 13a | a merge Finishline started for the agent to resolve still has conflict markers in its files, budget left | continue, `conflict_markers` |
//! | 13b | a comment from the last review is on a file the run never touched, the run did more than talk, budget left | continue, `review_comments` |
//! | 14 | "require complete_task" is on, no claim, budget left                   | continue, `missing_completion` |
//! | 15 | verify commands exist, files changed, a command was given or success is claimed, not yet run this cycle | verify |
//! | 16 | verification failed exactly as in the previous cycle                   | review, `stuck` |
//! | 17 | verification failed, budget left (with no file changed, only a command given for this task or with the claim counts; another failure goes to the evaluator) | continue, `verification` |
//! | 18 | not yet evaluated this cycle                                          | evaluate: is it done? |
//! | 19 | verdict stuck (or done and stuck)                                      | review, `stuck` |
//! | 20 | verdict done (one that answers a review comment "not addressed" is read as not done where it comes in: `criteria::cautious`) | review, `verified_done` |
//! | 21 | verdict unavailable                                                   | review, `unverified` |
//! | 22 | not done, the remaining list is the same as the previous cycle's      | review, `stuck` |
//! | 23 | not done with nothing remaining and no prompt                         | review, `unverified` |
//! | 24 | not done, budget left                                                 | continue, `evaluator` |
//! | 25 | a continuation is due (rows 13, 13a, 13b, 14, 17, 24) but the budget is spent | review, `cycles_exhausted` |

use serde::Serialize;

use crate::domain::{Claim, ContinuationSource, EndReason, Stuck, StuckPattern, Verdict};
use crate::error::ErrorCode;
use crate::provider::StopReason;

#[derive(Debug, Clone, PartialEq)]
pub struct CompletionConfig {
    /// A marker that counts as a success claim when it appears in the agent's last text.
    pub marker: Option<String>,
    pub require_complete_task: bool,
    /// A normal stop with at most this many output tokens while work is open is a truncation.
    pub min_output_tokens: u64,
    pub continuation_budget: u32,
    pub truncation_cap: u32,
    pub max_steps: u32,
}

impl Default for CompletionConfig {
    fn default() -> Self {
        CompletionConfig { marker: None, require_complete_task: false, min_output_tokens: 10, continuation_budget: 5, truncation_cap: 3, max_steps: 60 }
    }
}

/// How the step's stream ended.
#[derive(Debug, Clone, PartialEq)]
pub enum StepEnd {
    Stopped(StopReason),
    /// The stream ended without a finish reason, or the connection was lost after output.
    Cut,
    Failed {
        code: ErrorCode,
        message: String,
    },
    /// An external agent ended its turn at its own limit of model requests (ACP
    /// `max_turn_requests`, which Gemini CLI also sends when it detects a loop): to review, as
    /// at Finishline's step limit, but named as the agent's.
    TurnLimit,
}

/// An explicit claim from `complete_task` (or the marker).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClaimEvidence {
    pub claim: Claim,
    pub remaining_work: Option<String>,
    pub verify_command: Option<String>,
    /// The agent's own words, shown at the review gate beside the evaluator's verdict.
    pub summary: Option<String>,
    pub original_request_summary: Option<String>,
}

impl ClaimEvidence {
    pub fn new(claim: Claim) -> Self {
        ClaimEvidence { claim, remaining_work: None, verify_command: None, summary: None, original_request_summary: None }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, serde::Deserialize)]
pub struct Counters {
    pub steps: u32,
    pub continuations_used: u32,
    pub truncations_in_row: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct VerificationFailure {
    pub command: String,
    pub exit_code: Option<i32>,
    pub output_tail: String,
}

/// The verification of this cycle, once run.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct VerificationOutcome {
    /// Every command that failed, in the order run; empty when every command passed or was declined.
    pub failures: Vec<VerificationFailure>,
    /// The commands the person declined (or nobody could be asked about): never run, so they
    /// neither passed nor failed.
    pub skipped: Vec<String>,
}

impl VerificationOutcome {
    /// Of `commands`, those that ran and passed.
    pub fn passed(&self, commands: &[String]) -> Vec<String> {
        commands.iter().filter(|c| !self.skipped.contains(c) && !self.failures.iter().any(|f| &f.command == *c)).cloned().collect()
    }

    pub fn failure(&self) -> Option<&VerificationFailure> {
        self.failures.first()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvaluationOutcome {
    pub verdict: Verdict,
    pub summary: String,
    pub remaining: Vec<String>,
    pub continuation_prompt: String,
    pub stuck_reason: Option<String>,
    /// A plan step's: what later steps need from its work.
    pub output_data: Option<String>,
    /// Its word on each of the person's review comments, when it was asked about them.
    pub comments: Vec<crate::judge::criteria::CommentAnswer>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Evidence {
    pub step_end: StepEnd,
    pub output_tokens: u64,
    /// The text parts of the agent's last message, joined with newlines (no reasoning).
    pub last_text: String,
    pub step_called_tools: bool,
    pub prev_step_called_tools: bool,
    pub claim: Option<ClaimEvidence>,
    pub open_todos: Vec<String>,
    /// Whether anything in this run used tools, wrote todos, changed files.
    pub run_used_tools: bool,
    pub run_wrote_todos: bool,
    pub files_changed: bool,
    pub counters: Counters,
    pub stuck_pattern: Option<Stuck>,
    pub verify_commands: Vec<String>,
    /// Those of `verify_commands` given for this task (the CLI's `--verify`, a plan step's own),
    /// not the workspace's from Settings.
    pub task_commands: Vec<String>,
    pub verification: Option<VerificationOutcome>,
    pub previous_verification_failure: Option<VerificationFailure>,
    pub evaluation: Option<EvaluationOutcome>,
    pub previous_remaining: Option<Vec<String>>,
    /// The person's review comments this run plainly has not addressed (found without a model).
    pub open_criteria: Vec<String>,
    /// Files of a merge Finishline started for the agent to resolve (a landing's conflict) that
    /// still hold conflict markers.
    pub conflict_markers: Vec<String>,
    /// This run answers the person's Request changes (or a landing conflict): the work they
    /// asked to change still awaits their decision, so a run that only talks is not a
    /// conversation turn (idle, with nothing left to approve or reject) but judged as work.
    pub answers_review: bool,
}

impl Evidence {
    /// Evidence of a step with nothing remarkable in it; tests and the loop fill in the rest.
    pub fn new(step_end: StepEnd) -> Self {
        Evidence {
            step_end,
            output_tokens: 100,
            last_text: String::new(),
            step_called_tools: false,
            prev_step_called_tools: false,
            claim: None,
            open_todos: vec![],
            run_used_tools: false,
            run_wrote_todos: false,
            files_changed: false,
            counters: Counters::default(),
            stuck_pattern: None,
            verify_commands: vec![],
            task_commands: vec![],
            verification: None,
            previous_verification_failure: None,
            evaluation: None,
            previous_remaining: None,
            open_criteria: vec![],
            conflict_markers: vec![],
            answers_review: false,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EvaluationQuestion {
    /// Conversation turns: did the agent leave undone an action it announced, or work the
    /// person asked for (a reply that only says an error it met is no answer to "write X")?
    /// Named for its first form, as the events spell it.
    AnnouncedAction,
    /// Work turns: is the task done?
    #[default]
    Done,
}

impl EvaluationQuestion {
    /// A conversation turn's question in words, as the window, the CLI and exports say it.
    pub const ANNOUNCED_ACTION_ASKED: &'static str = "asked whether the agent left undone what it announced or was asked to do";

    /// The verdict as the answer to this question: "no" (nothing left undone) is a conversation
    /// turn's `done`.
    pub fn answer(self, verdict: crate::domain::Verdict) -> &'static str {
        use crate::domain::Verdict;
        match (self, verdict) {
            (EvaluationQuestion::AnnouncedAction, Verdict::Done) => "no",
            (EvaluationQuestion::AnnouncedAction, Verdict::NotDone) => "yes",
            (_, v) => v.words(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum Action {
    NextStep,
    Continue {
        source: ContinuationSource,
        text: String,
        remaining: Vec<String>,
    },
    Verify {
        commands: Vec<String>,
    },
    Evaluate {
        question: EvaluationQuestion,
    },
    Review {
        end_reason: EndReason,
        claim: Claim,
        /// Set when the end reason is `stuck`: which pattern fired and what repeated.
        #[serde(skip_serializing_if = "Option::is_none")]
        stuck: Option<Stuck>,
    },
    Idle {
        end_reason: EndReason,
    },
    Fail {
        code: ErrorCode,
        message: String,
    },
}

/// The verification failure the agent is sent back for. A run that changed files answers for
/// every command. One that changed nothing cannot have broken the workspace's suite, and a
/// question answered is no order to fix it: only the commands given for this task, or named with
/// the claim, send it back; another failure is evidence the evaluator reads.
pub fn deciding_failure(e: &Evidence) -> Option<&VerificationFailure> {
    let failures = &e.verification.as_ref()?.failures;
    if e.files_changed {
        return failures.first();
    }
    let claimed = e.claim.as_ref().and_then(|c| c.verify_command.as_deref()).map(str::trim);
    failures.iter().find(|f| e.task_commands.contains(&f.command) || claimed == Some(f.command.trim()))
}

/// The claim this evidence makes: `complete_task`, else the marker, else none.
pub fn claim_of(e: &Evidence, cfg: &CompletionConfig) -> Claim {
    if let Some(c) = &e.claim {
        return c.claim;
    }
    match &cfg.marker {
        Some(m) if !m.trim().is_empty() && e.last_text.contains(m.trim()) => Claim::Success,
        _ => Claim::None,
    }
}

fn work_open(e: &Evidence) -> bool {
    !e.open_todos.is_empty() || e.prev_step_called_tools
}

fn is_truncated(e: &Evidence, cfg: &CompletionConfig) -> bool {
    match &e.step_end {
        StepEnd::Cut => true,
        StepEnd::Stopped(StopReason::Length) => true,
        StepEnd::Stopped(StopReason::EndTurn) => {
            short_stop_is_cut(&e.last_text, e.output_tokens, cfg) && !e.step_called_tools && e.claim.is_none() && work_open(e)
        }
        _ => false,
    }
}

/// A normal stop of a few tokens is a cut-off when it is empty or ends mid-sentence ("I'll",
/// "Next, the"). A short answer that ends like a sentence ("Done!") is a terse claim, judged as
/// one (the todo gate, the evaluator), not told to continue where it stopped.
pub fn short_stop_is_cut(text: &str, output_tokens: u64, cfg: &CompletionConfig) -> bool {
    if output_tokens > cfg.min_output_tokens {
        return false;
    }
    match text.trim_end().chars().last() {
        None => true,
        Some(c) => !matches!(c, '.' | '!' | '?' | '…' | ')' | '"' | '\'' | '`' | '*' | ']' | '。' | '！' | '？'),
    }
}

/// The next action. A run that would go on (another step or a continuation) at the step limit
/// goes to review instead (row 7).
pub fn decide(e: &Evidence, cfg: &CompletionConfig) -> Action {
    let action = decide_unlimited(e, cfg);
    match action {
        Action::NextStep | Action::Continue { .. } if e.counters.steps >= cfg.max_steps => {
            Action::Review { end_reason: EndReason::StepLimit, claim: claim_of(e, cfg), stuck: None }
        }
        a => a,
    }
}

fn decide_unlimited(e: &Evidence, cfg: &CompletionConfig) -> Action {
    let claim = claim_of(e, cfg);
    let review = |end_reason| Action::Review { end_reason, claim, stuck: None };
    let stuck = |pattern, repeated: String| Action::Review { end_reason: EndReason::Stuck, claim, stuck: Some(Stuck { pattern, repeated }) };
    let budget_left = e.counters.continuations_used < cfg.continuation_budget;
    let continue_or_exhaust = |source, text: String, remaining: Vec<String>| {
        if budget_left {
            Action::Continue { source, text, remaining }
        } else {
            Action::Review { end_reason: EndReason::CyclesExhausted, claim, stuck: None }
        }
    };

    // Rows 1-2.
    match &e.step_end {
        StepEnd::Failed { code, message } => return Action::Fail { code: *code, message: message.clone() },
        StepEnd::TurnLimit => return review(EndReason::AgentTurnLimit),
        StepEnd::Stopped(StopReason::ContentFilter) => return Action::Fail { code: ErrorCode::Provider, message: "The provider stopped the answer for its content policy.".into() },
        // Row 2a: the loop compacts and retries once on an overflow; reaching here means it did.
        StepEnd::Stopped(StopReason::ContextWindowExceeded) => {
            return Action::Fail {
                code: ErrorCode::ContextTooLong,
                message: "The conversation no longer fits the model's context window, even after compacting it. Set the model's context window in Settings, or start a new task with less material.".into(),
            }
        }
        // Row 2b.
        StepEnd::Stopped(StopReason::Unknown) => {
            return Action::Fail { code: ErrorCode::ProviderProtocol, message: "The provider ended the answer with a finish reason Finishline does not know, so it cannot tell whether the agent finished. Resume to try again.".into() }
        }
        _ => {}
    }
    // Row 3.
    if let Some(s) = &e.stuck_pattern {
        return Action::Review { end_reason: EndReason::Stuck, claim, stuck: Some(s.clone()) };
    }
    // Rows 4-5.
    if is_truncated(e, cfg) {
        return if e.counters.truncations_in_row < cfg.truncation_cap {
            Action::Continue { source: ContinuationSource::Truncation, text: crate::judge::prompt::truncation(), remaining: vec![] }
        } else {
            review(EndReason::TruncationExhausted)
        };
    }
    // Rows 6-7.
    let paused = matches!(e.step_end, StepEnd::Stopped(StopReason::PauseTurn));
    let tools_only = (e.step_called_tools || paused) && e.claim.is_none();
    if tools_only {
        return Action::NextStep;
    }
    // Rows 8-10: conversation turns.
    let talk_only = !e.run_used_tools && !e.run_wrote_todos && !e.files_changed && claim == Claim::None;
    let conversation = talk_only && !e.answers_review;
    if conversation {
        return match &e.evaluation {
            None => Action::Evaluate { question: EvaluationQuestion::AnnouncedAction },
            Some(ev) if ev.verdict == Verdict::NotDone && budget_left => Action::Continue {
                source: ContinuationSource::MissingAction,
                text: crate::judge::prompt::missing_action(&ev.continuation_prompt),
                remaining: ev.remaining.clone(),
            },
            Some(ev) if ev.verdict == Verdict::Unavailable => Action::Idle { end_reason: EndReason::ConversationUnchecked },
            Some(_) => Action::Idle { end_reason: EndReason::Conversation },
        };
    }
    // Rows 11-12.
    match claim {
        Claim::Blocked => return review(EndReason::ClaimedBlocked),
        Claim::Partial => return review(EndReason::ClaimedPartial),
        _ => {}
    }
    // Row 13.
    if !e.open_todos.is_empty() {
        return continue_or_exhaust(ContinuationSource::TodoGate, crate::judge::prompt::todo_gate(&e.open_todos), e.open_todos.clone());
    }
    // Row 13a. Markers of the merge it was asked to resolve are still there: plain to see, so
    // not for the evaluator, and a reply in words does not resolve them.
    if !e.conflict_markers.is_empty() {
        return continue_or_exhaust(
            ContinuationSource::ConflictMarkers,
            crate::judge::prompt::conflict_markers(&e.conflict_markers),
            e.conflict_markers.clone(),
        );
    }
    // Row 13b. A reply that only talks goes to the evaluator instead: a comment may be a
    // question, answered in words, and the evaluator answers for each comment.
    if !e.open_criteria.is_empty() && !talk_only {
        return continue_or_exhaust(ContinuationSource::ReviewComments, crate::judge::prompt::open_criteria(&e.open_criteria), e.open_criteria.clone());
    }
    // Row 14.
    if cfg.require_complete_task && claim == Claim::None {
        return continue_or_exhaust(ContinuationSource::MissingCompletion, crate::judge::prompt::missing_completion(), vec![]);
    }
    // Rows 15-17.
    let claimed_command = e.claim.as_ref().and_then(|c| c.verify_command.clone()).filter(|c| !c.trim().is_empty());
    let mut commands = e.verify_commands.clone();
    if let Some(c) = &claimed_command {
        if !commands.contains(c) {
            commands.push(c.clone());
        }
    }
    // A claim of success is checked even when no file changed ("make the tests pass", said of
    // a suite that still fails): only a run that neither changed nor claimed anything, a look
    // around, has nothing to verify.
    let should_verify = !commands.is_empty() && (e.files_changed || claimed_command.is_some() || claim == Claim::Success);
    if e.verification.is_none() && should_verify {
        return Action::Verify { commands };
    }
    if let Some(f) = deciding_failure(e) {
        if e.previous_verification_failure.as_ref() == Some(f) {
            return stuck(StuckPattern::SameVerificationFailure, f.command.clone());
        }
        return continue_or_exhaust(ContinuationSource::Verification, crate::judge::prompt::verification(f), vec![format!("make `{}` pass", f.command)]);
    }
    // Rows 18-24.
    let Some(ev) = &e.evaluation else {
        return Action::Evaluate { question: EvaluationQuestion::Done };
    };
    match ev.verdict {
        Verdict::Stuck => stuck(StuckPattern::EvaluatorStuck, ev.stuck_reason.clone().unwrap_or_default()),
        Verdict::Done => review(EndReason::VerifiedDone),
        Verdict::Unavailable => review(EndReason::Unverified),
        Verdict::NotDone => {
            if e.previous_remaining.as_ref().is_some_and(|p| !p.is_empty() && *p == ev.remaining) {
                return stuck(StuckPattern::RemainingUnchanged, ev.remaining.join("; "));
            }
            if ev.remaining.is_empty() && ev.continuation_prompt.trim().is_empty() {
                return review(EndReason::Unverified);
            }
            continue_or_exhaust(ContinuationSource::Evaluator, crate::judge::prompt::evaluator(&ev.continuation_prompt, &ev.remaining), ev.remaining.clone())
        }
    }
}
