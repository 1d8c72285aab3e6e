//! The domain's vocabulary as types. Statuses, reasons, sources and decisions are enums; ids are
//! newtypes. They serialise to the snake_case words of the product spec.

use serde::{Deserialize, Serialize};

macro_rules! id_type {
    ($($name:ident => $prefix:literal),* $(,)?) => {$(
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub String);

        impl $name {
            /// A new, time-ordered id (UUID v7) with a readable prefix.
            pub fn new() -> Self {
                $name(format!(concat!($prefix, "_{}"), uuid::Uuid::now_v7().simple()))
            }
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Self::new()
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl From<&str> for $name {
            fn from(s: &str) -> Self {
                $name(s.to_string())
            }
        }
    )*};
}

id_type! {
    SessionId => "ses",
    RunId => "run",
    MessageId => "msg",
    RequestId => "req",
    GroupId => "grp",
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionStatus {
    Idle,
    /// A run waits for its turn: the limit of tasks at once is reached, or another task works
    /// in the same plain folder and the person chose to queue after it.
    Queued,
    Busy,
    Retry,
    AwaitingApproval,
    AwaitingReview,
    Completed,
    Rejected,
    Failed,
    Cancelled,
    Interrupted,
}

impl SessionStatus {
    /// A process owns the session while it is in one of these; if that process dies, the
    /// session becomes `interrupted`.
    pub fn is_running(self) -> bool {
        matches!(self, SessionStatus::Busy | SessionStatus::Retry | SessionStatus::Queued)
    }

    /// A run is at work on it: running, or waiting on a permission mid-run (its process holds
    /// it, and only that process can stop it).
    pub fn at_work(self) -> bool {
        self.is_running() || self == SessionStatus::AwaitingApproval
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Claim {
    Success,
    Partial,
    Blocked,
    None,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Done,
    NotDone,
    Stuck,
    Unavailable,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EndReason {
    VerifiedDone,
    Unverified,
    ClaimedBlocked,
    ClaimedPartial,
    Stuck,
    CyclesExhausted,
    TruncationExhausted,
    StepLimit,
    /// An external agent ended its turn at its own limit (ACP `max_turn_requests`): its cap on
    /// model requests, or Gemini CLI's loop detection. Not Finishline's step limit, which
    /// raising would not change.
    AgentTurnLimit,
    PermissionDenied,
    QuestionDeclined,
    Conversation,
    /// A conversation turn whose check for work left undone (announced, or asked for) got no
    /// usable answer from the evaluator: it ends as an answer, but is not called one unchecked.
    ConversationUnchecked,
    Cancelled,
    Failed,
    /// Plan mode: a step could not be done and the replans are spent.
    PlanFailed,
    /// Plan mode: the plan's budget of model calls is spent, whatever its steps had left.
    PlanBudgetSpent,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Approve,
    RequestChanges,
    Reject,
}

/// How a review's decision came about when it was not the person's own verdict on the work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DecisionOccasion {
    /// "Let the agent resolve it" after a landing was refused: answered as request changes.
    ResolveLanding,
    /// The person chose another attempt of the group: rejected, its worktree removed.
    AnotherAttemptChosen,
    /// The person rejected the whole group at once (choosing none): told apart from an attempt
    /// they rejected in its own review before, which was refused on its own evidence.
    EveryAttemptRejected,
    /// One a later build recorded: the session still reads, and its decision is not told as the
    /// person's own verdict on the work, which it was not.
    #[serde(other)]
    Other,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DecidedBy {
    Person,
    Auto,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunTrigger {
    Task,
    Feedback,
    Message,
    Resume,
    /// The next step of a plan, handed over from the run of the step before.
    PlanStep,
    /// The person asked to review what a task that ended without a review changed, as it is: no
    /// model is called.
    Review,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageRole {
    User,
    Assistant,
    /// The engine's own nudge back to work; never the person's words.
    Continuation,
    Summary,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ContinuationSource {
    Truncation,
    TodoGate,
    MissingCompletion,
    MissingAction,
    Verification,
    Evaluator,
    /// A plan step's own checks (its criteria's files and commands, looked at without a model)
    /// found criteria unmet: no evaluator was asked.
    StepChecks,
    /// The note a resumed run starts with ("Finishline was restarted…"): engine text, never the
    /// person's, and it does not spend the continuation budget.
    Resume,
    /// The brief a plan step starts its fresh conversation with: the task, the plan, what the
    /// earlier steps produced. Engine text; it spends no budget.
    PlanStep,
    /// The person asked the agent to resolve a conflict that kept the task from landing: the
    /// moved branch is merged into the task's worktree. Engine text; it starts a new run.
    LandingConflict,
    /// The person's comments on lines of the diff, sent with Request changes; and again while
    /// one of them is plainly not addressed.
    ReviewComments,
    /// The judge's: files of the merge the agent was asked to resolve still hold conflict
    /// markers. Unlike the resolve request that started the run, it spends the budget.
    ConflictMarkers,
    /// A follow-up works in a new worktree, made after the last one was landed or rejected: the
    /// agent's conversation still shows the files it wrote there. Engine text; no budget spent.
    NewWorktree,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolState {
    Pending,
    AwaitingPermission,
    Running,
    Done,
    Error,
    Denied,
    /// It was running when the process died; its outcome cannot be known.
    Unknown,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActivityPhase {
    Thinking,
    Tool,
    Verifying,
    Evaluating,
    Compacting,
    Waiting,
    /// Recording the workspace before the first change, for the review's diffs and revert.
    Checkpointing,
    /// Landing an approved task on the person's branch.
    Landing,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    Pending,
    InProgress,
    Completed,
    Cancelled,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PermissionDecision {
    AllowOnce,
    AllowSession,
    Deny,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UsageSource {
    Agent,
    Evaluator,
    Compaction,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Todo {
    pub id: String,
    pub content: String,
    pub status: TodoStatus,
}

impl SessionStatus {
    /// How the window's badge names it.
    pub fn words(self) -> &'static str {
        match self {
            SessionStatus::Idle => "Idle",
            SessionStatus::Queued => "Queued",
            SessionStatus::Busy => "Working",
            SessionStatus::Retry => "Retrying",
            SessionStatus::AwaitingApproval => "Waiting for you",
            SessionStatus::AwaitingReview => "Ready for review",
            SessionStatus::Completed => "Completed",
            SessionStatus::Rejected => "Rejected",
            SessionStatus::Failed => "Failed",
            SessionStatus::Cancelled => "Cancelled",
            SessionStatus::Interrupted => "Interrupted",
        }
    }
    /// The spec's word for this value, as stored in SQL and shown in the CLI.
    pub fn as_str(self) -> &'static str {
        match self {
            SessionStatus::Idle => "idle",
            SessionStatus::Queued => "queued",
            SessionStatus::Busy => "busy",
            SessionStatus::Retry => "retry",
            SessionStatus::AwaitingApproval => "awaiting_approval",
            SessionStatus::AwaitingReview => "awaiting_review",
            SessionStatus::Completed => "completed",
            SessionStatus::Rejected => "rejected",
            SessionStatus::Failed => "failed",
            SessionStatus::Cancelled => "cancelled",
            SessionStatus::Interrupted => "interrupted",
        }
    }
    /// Every status, in the order a session meets them.
    pub const ALL: [SessionStatus; 11] = [
        SessionStatus::Idle,
        SessionStatus::Queued,
        SessionStatus::Busy,
        SessionStatus::Retry,
        SessionStatus::AwaitingApproval,
        SessionStatus::AwaitingReview,
        SessionStatus::Completed,
        SessionStatus::Rejected,
        SessionStatus::Failed,
        SessionStatus::Cancelled,
        SessionStatus::Interrupted,
    ];

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|st| st.as_str() == s)
    }
}

impl Claim {
    /// What the agent claimed, as a clause: "the agent made no explicit claim".
    pub fn words(self) -> &'static str {
        match self {
            Claim::Success => "the agent claimed success",
            Claim::Partial => "the agent said it is partly done",
            Claim::Blocked => "the agent said it is blocked",
            Claim::None => "the agent made no explicit claim",
        }
    }
    /// The spec's word for this value, as stored in SQL and shown in the CLI.
    pub fn as_str(self) -> &'static str {
        match self {
            Claim::Success => "success",
            Claim::Partial => "partial",
            Claim::Blocked => "blocked",
            Claim::None => "none",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "success" => Claim::Success,
            "partial" => Claim::Partial,
            "blocked" => Claim::Blocked,
            "none" => Claim::None,
            _ => return None,
        })
    }
}

impl Verdict {
    /// The evaluator's verdict in words.
    pub fn words(self) -> &'static str {
        match self {
            Verdict::Done => "done",
            Verdict::NotDone => "not done",
            Verdict::Stuck => "stuck",
            Verdict::Unavailable => "no usable answer",
        }
    }
    /// The spec's word for this value, as stored in SQL and shown in the CLI.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Done => "done",
            Verdict::NotDone => "not_done",
            Verdict::Stuck => "stuck",
            Verdict::Unavailable => "unavailable",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "done" => Verdict::Done,
            "not_done" => Verdict::NotDone,
            "stuck" => Verdict::Stuck,
            "unavailable" => Verdict::Unavailable,
            _ => return None,
        })
    }
}

impl EndReason {
    /// How the window names it (its review's outcome, a badge's hover): for what people read,
    /// such as a session's Markdown.
    pub fn words(self) -> &'static str {
        match self {
            EndReason::VerifiedDone => "Verified done",
            EndReason::Unverified => "Not verified",
            EndReason::ClaimedBlocked => "Agent says blocked",
            EndReason::ClaimedPartial => "Agent says partly done",
            EndReason::Stuck => "Stuck",
            EndReason::CyclesExhausted => "Out of tries",
            EndReason::TruncationExhausted => "Kept getting cut off",
            EndReason::StepLimit => "Step limit reached",
            EndReason::AgentTurnLimit => "Agent stopped at its own limit",
            EndReason::PermissionDenied => "Permission denied",
            EndReason::QuestionDeclined => "Question declined",
            EndReason::Conversation => "Answered",
            EndReason::ConversationUnchecked => "Answered, not checked",
            EndReason::Cancelled => "Cancelled",
            EndReason::Failed => "Failed",
            EndReason::PlanFailed => "Plan failed",
            EndReason::PlanBudgetSpent => "Plan budget spent",
        }
    }
    /// The spec's word for this value, as stored in SQL and shown in the CLI.
    pub fn as_str(self) -> &'static str {
        match self {
            EndReason::VerifiedDone => "verified_done",
            EndReason::Unverified => "unverified",
            EndReason::ClaimedBlocked => "claimed_blocked",
            EndReason::ClaimedPartial => "claimed_partial",
            EndReason::Stuck => "stuck",
            EndReason::CyclesExhausted => "cycles_exhausted",
            EndReason::TruncationExhausted => "truncation_exhausted",
            EndReason::StepLimit => "step_limit",
            EndReason::AgentTurnLimit => "agent_turn_limit",
            EndReason::PermissionDenied => "permission_denied",
            EndReason::QuestionDeclined => "question_declined",
            EndReason::Conversation => "conversation",
            EndReason::ConversationUnchecked => "conversation_unchecked",
            EndReason::Cancelled => "cancelled",
            EndReason::Failed => "failed",
            EndReason::PlanFailed => "plan_failed",
            EndReason::PlanBudgetSpent => "plan_budget_spent",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "verified_done" => EndReason::VerifiedDone,
            "unverified" => EndReason::Unverified,
            "claimed_blocked" => EndReason::ClaimedBlocked,
            "claimed_partial" => EndReason::ClaimedPartial,
            "stuck" => EndReason::Stuck,
            "cycles_exhausted" => EndReason::CyclesExhausted,
            "truncation_exhausted" => EndReason::TruncationExhausted,
            "step_limit" => EndReason::StepLimit,
            "agent_turn_limit" => EndReason::AgentTurnLimit,
            "permission_denied" => EndReason::PermissionDenied,
            "question_declined" => EndReason::QuestionDeclined,
            "conversation" => EndReason::Conversation,
            "conversation_unchecked" => EndReason::ConversationUnchecked,
            "cancelled" => EndReason::Cancelled,
            "failed" => EndReason::Failed,
            "plan_failed" => EndReason::PlanFailed,
            "plan_budget_spent" => EndReason::PlanBudgetSpent,
            _ => return None,
        })
    }
}

impl Decision {
    /// The spec's word for this value, as stored in SQL and shown in the CLI.
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Approve => "approve",
            Decision::RequestChanges => "request_changes",
            Decision::Reject => "reject",
        }
    }
    /// How a session's story tells the decision: "let the agent resolve it" is stored as request
    /// changes (the review is answered and the agent goes on) but is not the person's request;
    /// an attempt set aside for another is stored as a reject but was not refused.
    pub fn told(self, occasion: Option<DecisionOccasion>) -> &'static str {
        Self::told_as(occasion, self.as_str())
    }
    /// [`Decision::told`] for people to read: "changes requested", not the stored name.
    pub fn told_in_words(self, occasion: Option<DecisionOccasion>) -> &'static str {
        let words = match self {
            Decision::Approve => "approved",
            Decision::RequestChanges => "changes requested",
            Decision::Reject => "rejected",
        };
        Self::told_as(occasion, words)
    }
    fn told_as(occasion: Option<DecisionOccasion>, plain: &'static str) -> &'static str {
        match occasion {
            Some(DecisionOccasion::ResolveLanding) => "let the agent resolve the landing",
            Some(DecisionOccasion::AnotherAttemptChosen) => "not chosen: another attempt was landed",
            Some(DecisionOccasion::EveryAttemptRejected) => "rejected with the other attempts",
            Some(DecisionOccasion::Other) => "decided on an occasion this version does not know",
            None => plain,
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "approve" => Decision::Approve,
            "request_changes" => Decision::RequestChanges,
            "reject" => Decision::Reject,
            _ => return None,
        })
    }
}

impl DecidedBy {
    /// The spec's word for this value, as stored in SQL and shown in the CLI.
    pub fn as_str(self) -> &'static str {
        match self {
            DecidedBy::Person => "person",
            DecidedBy::Auto => "auto",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "person" => DecidedBy::Person,
            "auto" => DecidedBy::Auto,
            _ => return None,
        })
    }
}

impl RunTrigger {
    /// The spec's word for this value, as stored in SQL and shown in the CLI.
    pub fn as_str(self) -> &'static str {
        match self {
            RunTrigger::Task => "task",
            RunTrigger::Feedback => "feedback",
            RunTrigger::Message => "message",
            RunTrigger::Resume => "resume",
            RunTrigger::PlanStep => "plan_step",
            RunTrigger::Review => "review",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "task" => RunTrigger::Task,
            "feedback" => RunTrigger::Feedback,
            "message" => RunTrigger::Message,
            "review" => RunTrigger::Review,
            "resume" => RunTrigger::Resume,
            "plan_step" => RunTrigger::PlanStep,
            _ => return None,
        })
    }
}

impl MessageRole {
    /// The spec's word for this value, as stored in SQL and shown in the CLI.
    pub fn as_str(self) -> &'static str {
        match self {
            MessageRole::User => "user",
            MessageRole::Assistant => "assistant",
            MessageRole::Continuation => "continuation",
            MessageRole::Summary => "summary",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "user" => MessageRole::User,
            "assistant" => MessageRole::Assistant,
            "continuation" => MessageRole::Continuation,
            "summary" => MessageRole::Summary,
            _ => return None,
        })
    }
}

impl ContinuationSource {
    /// The spec's word for this value, as stored in SQL and shown in the CLI.
    pub fn as_str(self) -> &'static str {
        match self {
            ContinuationSource::Truncation => "truncation",
            ContinuationSource::TodoGate => "todo_gate",
            ContinuationSource::MissingCompletion => "missing_completion",
            ContinuationSource::MissingAction => "missing_action",
            ContinuationSource::Verification => "verification",
            ContinuationSource::Evaluator => "evaluator",
            ContinuationSource::StepChecks => "step_checks",
            ContinuationSource::Resume => "resume",
            ContinuationSource::PlanStep => "plan_step",
            ContinuationSource::LandingConflict => "landing_conflict",
            ContinuationSource::NewWorktree => "new_worktree",
            ContinuationSource::ReviewComments => "review_comments",
            ContinuationSource::ConflictMarkers => "conflict_markers",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "truncation" => ContinuationSource::Truncation,
            "todo_gate" => ContinuationSource::TodoGate,
            "missing_completion" => ContinuationSource::MissingCompletion,
            "missing_action" => ContinuationSource::MissingAction,
            "verification" => ContinuationSource::Verification,
            "evaluator" => ContinuationSource::Evaluator,
            "step_checks" => ContinuationSource::StepChecks,
            "resume" => ContinuationSource::Resume,
            "plan_step" => ContinuationSource::PlanStep,
            "landing_conflict" => ContinuationSource::LandingConflict,
            "new_worktree" => ContinuationSource::NewWorktree,
            "review_comments" => ContinuationSource::ReviewComments,
            "conflict_markers" => ContinuationSource::ConflictMarkers,
            _ => return None,
        })
    }
}

impl ToolState {
    /// The spec's word for this value, as stored in SQL and shown in the CLI.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolState::Pending => "pending",
            ToolState::AwaitingPermission => "awaiting_permission",
            ToolState::Running => "running",
            ToolState::Done => "done",
            ToolState::Error => "error",
            ToolState::Denied => "denied",
            ToolState::Unknown => "unknown",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "pending" => ToolState::Pending,
            "awaiting_permission" => ToolState::AwaitingPermission,
            "running" => ToolState::Running,
            "done" => ToolState::Done,
            "error" => ToolState::Error,
            "denied" => ToolState::Denied,
            "unknown" => ToolState::Unknown,
            _ => return None,
        })
    }
}

impl ActivityPhase {
    /// The spec's word for this value, as stored in SQL and shown in the CLI.
    pub fn as_str(self) -> &'static str {
        match self {
            ActivityPhase::Thinking => "thinking",
            ActivityPhase::Tool => "tool",
            ActivityPhase::Verifying => "verifying",
            ActivityPhase::Evaluating => "evaluating",
            ActivityPhase::Compacting => "compacting",
            ActivityPhase::Waiting => "waiting",
            ActivityPhase::Checkpointing => "checkpointing",
            ActivityPhase::Landing => "landing",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "thinking" => ActivityPhase::Thinking,
            "checkpointing" => ActivityPhase::Checkpointing,
            "landing" => ActivityPhase::Landing,
            "tool" => ActivityPhase::Tool,
            "verifying" => ActivityPhase::Verifying,
            "evaluating" => ActivityPhase::Evaluating,
            "compacting" => ActivityPhase::Compacting,
            "waiting" => ActivityPhase::Waiting,
            _ => return None,
        })
    }
}

impl TodoStatus {
    /// The spec's word for this value, as stored in SQL and shown in the CLI.
    pub fn as_str(self) -> &'static str {
        match self {
            TodoStatus::Pending => "pending",
            TodoStatus::InProgress => "in_progress",
            TodoStatus::Completed => "completed",
            TodoStatus::Cancelled => "cancelled",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "pending" => TodoStatus::Pending,
            "in_progress" => TodoStatus::InProgress,
            "completed" => TodoStatus::Completed,
            "cancelled" => TodoStatus::Cancelled,
            _ => return None,
        })
    }
}

impl PermissionDecision {
    /// The spec's word for this value, as stored in SQL and shown in the CLI.
    pub fn as_str(self) -> &'static str {
        match self {
            PermissionDecision::AllowOnce => "allow_once",
            PermissionDecision::AllowSession => "allow_session",
            PermissionDecision::Deny => "deny",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "allow_once" => PermissionDecision::AllowOnce,
            "allow_session" => PermissionDecision::AllowSession,
            "deny" => PermissionDecision::Deny,
            _ => return None,
        })
    }
}

impl UsageSource {
    /// The spec's word for this value, as stored in SQL and shown in the CLI.
    pub fn as_str(self) -> &'static str {
        match self {
            UsageSource::Agent => "agent",
            UsageSource::Evaluator => "evaluator",
            UsageSource::Compaction => "compaction",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "agent" => UsageSource::Agent,
            "evaluator" => UsageSource::Evaluator,
            "compaction" => UsageSource::Compaction,
            _ => return None,
        })
    }
}

impl ContinuationSource {
    /// Whether a continuation from this source spends the run's shared budget. Truncation has its
    /// own cap, and the resume note is not a continuation of the agent's work.
    pub fn spends_budget(self) -> bool {
        !matches!(
            self,
            ContinuationSource::Truncation
                | ContinuationSource::Resume
                | ContinuationSource::PlanStep
                | ContinuationSource::LandingConflict
                | ContinuationSource::NewWorktree
        )
    }
}

/// Which stuck pattern fired: the review and `run_finished` name it, so the person sees why.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StuckPattern {
    SameActionSameObservation,
    SameActionError,
    IdenticalMessages,
    Alternation,
    RepeatedCompaction,
    EmptyResponses,
    /// The same verification failure twice: same command, same output.
    SameVerificationFailure,
    /// The evaluator's remaining list unchanged over 2 cycles.
    RemainingUnchanged,
    /// The evaluator judged the agent stuck.
    EvaluatorStuck,
    /// One answer repeating the same line or block over and over.
    RepeatingOutput,
}

impl StuckPattern {
    pub fn as_str(self) -> &'static str {
        match self {
            StuckPattern::SameActionSameObservation => "same_action_same_observation",
            StuckPattern::SameActionError => "same_action_error",
            StuckPattern::IdenticalMessages => "identical_messages",
            StuckPattern::Alternation => "alternation",
            StuckPattern::RepeatedCompaction => "repeated_compaction",
            StuckPattern::EmptyResponses => "empty_responses",
            StuckPattern::SameVerificationFailure => "same_verification_failure",
            StuckPattern::RemainingUnchanged => "remaining_unchanged",
            StuckPattern::EvaluatorStuck => "evaluator_stuck",
            StuckPattern::RepeatingOutput => "repeating_output",
        }
    }

    /// In plain words, for the review and the CLI.
    pub fn describe(self) -> &'static str {
        match self {
            StuckPattern::SameActionSameObservation => "the same action with the same result 4 times",
            StuckPattern::SameActionError => "the same action failing 3 times",
            StuckPattern::IdenticalMessages => "the same message 3 times in a row",
            StuckPattern::Alternation => "alternating between two actions for 6 steps",
            StuckPattern::RepeatedCompaction => "compacting again with nothing in between",
            StuckPattern::EmptyResponses => "3 empty responses in a row",
            StuckPattern::SameVerificationFailure => "the same verification failure twice",
            StuckPattern::RemainingUnchanged => "the same things found left twice in a row",
            StuckPattern::EvaluatorStuck => "the evaluator judged the agent stuck",
            StuckPattern::RepeatingOutput => "one answer repeating itself over and over",
        }
    }
}

/// Continuations a run has used, and its budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CycleCount {
    pub used: u32,
    pub max: u32,
}

/// A stuck verdict with what repeated: the action, the failing command, or the remaining items.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stuck {
    pub pattern: StuckPattern,
    #[serde(default)]
    pub repeated: String,
}

/// The agent's claim in its own words, from `complete_task`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ClaimWords {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub original_request_summary: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remaining_work: Option<String>,
}

/// Whether a task is split into checked steps by the manager first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanMode {
    /// One run, as always.
    Off,
    /// Always ask the manager for steps.
    On,
    /// The manager decides: a one-step plan is an ordinary run, so a small task pays one call.
    #[default]
    Auto,
}

impl PlanMode {
    pub fn as_str(self) -> &'static str {
        match self {
            PlanMode::Off => "off",
            PlanMode::On => "on",
            PlanMode::Auto => "auto",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "off" => PlanMode::Off,
            "on" => PlanMode::On,
            "auto" => PlanMode::Auto,
            _ => return None,
        })
    }
}

/// Where a plan step stands, as the plan panel shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepState {
    Pending,
    Running,
    Done,
    Failed,
    Skipped,
    /// A replan took its place; it stays visible with the cause.
    Replaced,
}

/// Where a task works.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Isolation {
    /// In a git repository, its own worktree and branch; elsewhere, the folder itself.
    #[default]
    Worktree,
    /// The folder itself, even in a git repository.
    InPlace,
}

/// Where the person's checkout was when a task landed on a branch it was not on: their files did
/// not change, and a person looking at their folder for the task's work is told why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CheckoutElsewhere {
    /// On another branch of theirs.
    Branch(String),
    /// On no branch (a detached HEAD: a rebase, a bisect).
    NoBranch,
}

impl CheckoutElsewhere {
    /// Said after "Landed on {target} as …".
    pub fn words(&self, target: &str) -> String {
        let on = match self {
            CheckoutElsewhere::Branch(b) => b.as_str(),
            CheckoutElsewhere::NoBranch => "no branch",
        };
        format!("Your checkout is on {on}, so its files did not change: `git switch {target}` shows the task's work.")
    }
}

/// How an approved task lands on the branch it started from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LandingMode {
    /// One commit: the task's title and the evaluator's summary.
    #[default]
    Squash,
    /// The task's own commits, joined with a merge commit.
    Merge,
    /// The changes in the person's working tree, not committed.
    Uncommitted,
    /// Nothing lands: the task's branch is kept for later.
    Branch,
}

impl LandingMode {
    pub fn as_str(self) -> &'static str {
        match self {
            LandingMode::Squash => "squash",
            LandingMode::Merge => "merge",
            LandingMode::Uncommitted => "uncommitted",
            LandingMode::Branch => "branch",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "squash" => LandingMode::Squash,
            "merge" => LandingMode::Merge,
            "uncommitted" => LandingMode::Uncommitted,
            "branch" => LandingMode::Branch,
            _ => return None,
        })
    }
}

/// Why an approved task did not land; nothing was overwritten, and the review stays open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LandingBlock {
    /// The person has uncommitted edits in files the task changed.
    YourEdits,
    /// Files of the person's that their `.gitignore` hides (local config, build output) are
    /// where the task's files would go: git would replace them without asking.
    YourIgnoredFiles,
    /// Landed as uncommitted changes, the task's files outside the person's sparse checkout
    /// would have nowhere to go: their checkout holds only its sparse set.
    OutsideSparseCheckout,
    /// The branch moved and the task's commits do not apply on it cleanly.
    Conflict,
    /// The branch moved in the instant the task was being landed (the person committed then):
    /// nothing conflicts and nothing landed; approving again lands the task on top.
    BranchMoved,
    /// The task's changes hold conflict markers (`<<<<<<<` … `>>>>>>>`) it added: a merge left
    /// unresolved, which would land as text in the person's files.
    ConflictMarkers,
    /// Rebased onto the moved branch, the verification commands fail.
    VerificationFailed,
    /// The branch the task started from is gone, or the task started on a detached HEAD.
    NoBranch,
    /// The branch is the person's to move right now: checked out in another worktree, or in the
    /// middle of a rebase or bisect (or their checkout is in the middle of a merge, cherry-pick
    /// or revert, for changes written into it). Git itself refuses to move such a branch.
    BranchInUse,
    /// A landing was cut short (the process died); nothing landed.
    Interrupted,
    /// The person stopped the landing (its checks on a moved branch) before anything moved.
    Stopped,
    /// The person stopped an approve that waited behind another decision on the task (a
    /// terminal's, another window's): that decision goes on, and nothing of this one was done.
    StoppedBehindAnother,
    /// The person's repository is no longer where the task started (moved, renamed or
    /// deleted): the task's branch went with it, and its worktree no longer finds it.
    RepositoryGone,
    /// git refused for another reason, named in the detail.
    Git,
}

impl LandingBlock {
    /// Its name, as the events spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            LandingBlock::YourEdits => "your_edits",
            LandingBlock::YourIgnoredFiles => "your_ignored_files",
            LandingBlock::OutsideSparseCheckout => "outside_sparse_checkout",
            LandingBlock::Conflict => "conflict",
            LandingBlock::BranchMoved => "branch_moved",
            LandingBlock::ConflictMarkers => "conflict_markers",
            LandingBlock::VerificationFailed => "verification_failed",
            LandingBlock::NoBranch => "no_branch",
            LandingBlock::BranchInUse => "branch_in_use",
            LandingBlock::Interrupted => "interrupted",
            LandingBlock::Stopped => "stopped",
            LandingBlock::StoppedBehindAnother => "stopped_behind_another",
            LandingBlock::RepositoryGone => "repository_gone",
            LandingBlock::Git => "git",
        }
    }

    /// The branch moved and the task's changes do not hold on it: merging it into the task's
    /// worktree and sending the task back is the agent's to do. The others are the person's.
    pub fn agent_can_resolve(self) -> bool {
        matches!(self, LandingBlock::Conflict | LandingBlock::ConflictMarkers | LandingBlock::VerificationFailed)
    }
}

/// How a task's worktree and branch came to be gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorktreeEnd {
    Landed,
    Rejected,
    /// Nothing in it was the task's own: it is made again when the session continues.
    Unused,
    /// Removed at start: its task was decided or deleted (a crash in between).
    Orphaned,
    Deleted,
}

/// Why a put-away task's branch is kept rather than deleted with its worktree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BranchKeptWhy {
    /// The worktree changed after the review (the person's edit there, a late write, a
    /// landing's rebase). What a history from before this field was recorded is read as (some
    /// of those were put-aways: the words then say a little less than happened).
    #[default]
    ChangedAfterReview,
    /// A task that ended without a review was put away with work in its worktree that came after
    /// it ended (the person's hand work there), or with a commit Finishline did not make (theirs,
    /// or the agent's own `git commit`).
    ChangedAfterTask,
    /// The person asked to keep the branch when putting the task away.
    Asked,
    /// A rejected task's review held files someone changed while it worked or while Finishline
    /// was closed (see [`crate::workspace::ownership::OwnedChange::edited_between`]): deleting the
    /// branch would delete their edits.
    EditedDuringTask,
}

impl BranchKeptWhy {
    /// Why, as words after the branch's name: "finishline/x: it holds …", "finishline/x, as you
    /// asked, …".
    pub fn words(self) -> &'static str {
        match self {
            BranchKeptWhy::ChangedAfterReview => ": it holds what changed in the worktree after the review",
            BranchKeptWhy::ChangedAfterTask => {
                ": it holds work Finishline did not make, such as commits of yours or the agent's own, or what changed in the worktree after the task ended"
            }
            BranchKeptWhy::Asked => ", as you asked, with the task's work",
            BranchKeptWhy::EditedDuringTask => ": it holds files someone changed while the task worked or while Finishline was closed, perhaps you",
        }
    }
}

/// Reads a kept branch's reason; one a later version wrote and this one does not know reads as
/// the default, so going back a version never makes a session's history unreadable.
pub(crate) fn branch_kept_why<'de, D: serde::Deserializer<'de>>(d: D) -> Result<BranchKeptWhy, D::Error> {
    let raw = String::deserialize(d)?;
    Ok(serde_json::from_value(serde_json::Value::String(raw)).unwrap_or_default())
}

/// What the settings file holds in place of a value kept in the OS keychain (an MCP server's or
/// an agent's environment value): the value itself never reaches the file.
pub const IN_KEYCHAIN: &str = "@keychain";

/// Tokens used in a session, by who used them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Tokens {
    pub agent: u64,
    pub evaluator: u64,
    pub compaction: u64,
}

/// One step of plan mode's plan (plan.rs makes and revises them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanStep {
    pub title: String,
    pub instructions: String,
    /// What must be true for the step to be done: the evaluator judges the step against these.
    pub criteria: Vec<String>,
    /// Earlier steps (0-based) whose results this one needs.
    pub depends_on: Vec<usize>,
    /// Commands that verify this step (the manager's); the task's own verification commands run
    /// at a step only when its criteria name them, and always at the end.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub verify: Vec<String>,
}
