//! The one event vocabulary shared by the UI, the CLI's `--json` and exports. Every event is
//! written to the store before anyone receives it, with a gap-free per-session `seq`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::domain::*;
use crate::provider::{StopReason, Usage};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
// Events are few per second and most are small; boxing the large ones would change every
// place that makes or matches one for memory nobody misses.
#[allow(clippy::large_enum_variant)]
pub enum EngineEvent {
    SessionCreated {
        task: String,
        workspace: String,
        provider: String,
        model: String,
        /// The built-in agent's server, so a later command on the session (the CLI's resume or
        /// review) can reach it again without being told.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        base_url: Option<String>,
    },
    RunStarted {
        trigger: RunTrigger,
    },
    /// An external agent answered and opened its session for this run: who it is, and its own
    /// session id, which a later run reopens (`session/load`) when the agent can.
    AgentConnected {
        agent: String,
        name: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        version: Option<String>,
        acp_session: String,
        /// It reopened the session an earlier run had, with its memory of it.
        loaded: bool,
        /// It took Finishline's MCP server with `complete_task`.
        claims: bool,
    },
    /// The external agent needs a login before it can work: what to do, in its own words, and
    /// the ways it offers (the window shows "Log in to <label>" with a button for each).
    AgentLoginNeeded {
        /// The agent's name (as sessions record it) and the person's name for it.
        agent: String,
        label: String,
        message: String,
        methods: Vec<crate::external::login::LoginMethod>,
    },
    /// The workspace's instructions file the agent and the evaluator follow in this run.
    ProjectInstructions {
        file: String,
        chars: u64,
        truncated: bool,
    },
    RunFinished {
        status: SessionStatus,
        claim: Claim,
        verdict: Option<Verdict>,
        end_reason: EndReason,
        /// With end reason `stuck`: the pattern that fired and what repeated.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stuck: Option<Stuck>,
    },
    StatusChanged {
        status: SessionStatus,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        attempt: Option<u32>,
        /// How many retries a wait may come to, so the banner reads "attempt 3 of 5"; absent
        /// in events from before it was recorded.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_retries: Option<u32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        next_retry_at: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    StepStarted {
        step: u32,
        /// Continuations this run has used of its budget, so "Cycle n/max" shows from the
        /// first step; absent in events from before it was recorded.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cycle: Option<CycleCount>,
    },
    StepFinished {
        step: u32,
        stop_reason: Option<StopReason>,
        /// This step's own tokens, never cumulative.
        usage: Usage,
    },
    Activity {
        phase: ActivityPhase,
        #[serde(default)]
        detail: String,
    },
    MessageCreated {
        message_id: MessageId,
        role: MessageRole,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        source: Option<ContinuationSource>,
        /// The whole text of messages that do not stream (user, continuation, summary).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text: Option<String>,
    },
    TextDelta {
        message_id: MessageId,
        text: String,
    },
    ReasoningDelta {
        message_id: MessageId,
        text: String,
    },
    ToolCall {
        call_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message_id: Option<MessageId>,
        tool: String,
        /// An external agent's kind for the tool (`edit`, `execute`), as ACP names it: what
        /// `--allow` and "Allow for this session" also know the tool by when its title names a
        /// file. `None` for Finishline's own tools, whose name is their kind.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        kind: Option<String>,
        input: Value,
        state: ToolState,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output: Option<String>,
    },
    TodosUpdated {
        todos: Vec<Todo>,
    },
    PermissionRequested {
        request_id: RequestId,
        tool: String,
        input: Value,
        reason: String,
        /// The agent's tool call this asks about; `None` for a verification command, which is
        /// Finishline's own and never the agent's call.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        call_id: Option<String>,
    },
    PermissionResolved {
        request_id: RequestId,
        decision: PermissionDecision,
    },
    QuestionAsked {
        request_id: RequestId,
        question: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        call_id: Option<String>,
    },
    /// A permission or question nobody will answer any more: the run was cancelled. Its buttons
    /// go dead; it is not recorded as a denial or a declined answer.
    RequestCancelled {
        request_id: RequestId,
    },
    QuestionAnswered {
        request_id: RequestId,
        answer: Option<String>,
        declined: bool,
    },
    Verification {
        command: String,
        exit_code: Option<i32>,
        output_tail: String,
        skipped: bool,
        /// Its place among the cycle's verify commands ("Verification 1 of 2"); 0 in events
        /// stored before commands were numbered.
        #[serde(default)]
        nth: u32,
        #[serde(default)]
        of: u32,
        /// A command from Settings or the CLI (runs without asking), not one the agent named.
        #[serde(default)]
        persons_own: bool,
        /// A plan step's check ("`cmd` passes" among its criteria): the plan named it, not the
        /// agent.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        plans: bool,
    },
    /// Tokens spent outside an agent step and an evaluation: the manager's plan or revision
    /// (counted with the evaluator, whose provider it uses) and compacting the conversation. An
    /// event, so that the window's running total and History's agree.
    TokensSpent {
        source: UsageSource,
        usage: Usage,
        /// Calls beyond the first that this spend took: a repair of an unusable answer, or the
        /// retry asking by instruction where a server refused a schema. A plan's budget counts them.
        #[serde(default, skip_serializing_if = "is_zero")]
        repairs: u32,
    },
    Evaluation {
        cycle: u32,
        verdict: Verdict,
        summary: String,
        remaining: Vec<String>,
        stuck_reason: Option<String>,
        model: String,
        parse_ok: bool,
        usage: Usage,
        /// What the evaluator was asked: whether the task is done, or (for a conversation turn)
        /// only whether the agent left undone what it announced or was asked to do.
        #[serde(default)]
        question: crate::judge::completion::EvaluationQuestion,
        /// Calls beyond the first the verdict took (a repair, a retry by instruction).
        #[serde(default, skip_serializing_if = "is_zero")]
        repairs: u32,
    },
    Continuation {
        source: ContinuationSource,
        attempt: u32,
        max: u32,
        remaining: Vec<String>,
        text: String,
        /// Set when the continuation answers a `complete_task` call inside its tool result
        /// instead of being sent as its own message.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        answers_call: Option<String>,
        /// The agent had claimed the task done (with `complete_task`, or in its reply: "Done!"),
        /// and the evidence sent it back: a false claim, counted in the trust figures per agent.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        refused_claim: bool,
    },
    ReviewRequested {
        review_id: RequestId,
        claim: Claim,
        verdict: Option<Verdict>,
        end_reason: EndReason,
        remaining: Vec<String>,
        files_changed: Vec<Value>,
        verification: Vec<Value>,
        /// Tokens so far in the session, by agent, evaluator and compaction.
        #[serde(default)]
        tokens: crate::domain::Tokens,
        /// In US dollars, when the person set prices for the models used.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost_usd: Option<f64>,
        /// What this round cost (the usage since the review before, at the same prices), for a
        /// review after an earlier one: the difference of two whole-session costs was not, with
        /// prices changed between them.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        round_cost_usd: Option<f64>,
        /// The agent's claim in its own words (`complete_task`'s summary and remaining work).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        claim_words: Option<ClaimWords>,
        /// The evaluator's summary of the last verdict, beside the claim.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        verdict_summary: Option<String>,
        /// The verdict was on this plan step ("Step 2: Write b.txt"), not on the whole task: a
        /// plan that stopped short of its steps.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        verdict_on_step: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stuck: Option<Stuck>,
        /// Files left out of checkpoints (over the size limit): Reject cannot restore them.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        not_covered: Vec<String>,
        /// The run worked while its folder could not be recorded (checkpoints off or failed):
        /// what it changed is in no diff, and no revert can tell it from the person's work.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        unrecorded: bool,
        /// In a worktree, what the run wrote that the repository's ignore rules hide: it is in
        /// no diff, never lands, and goes with the worktree.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        not_landed: Vec<String>,
        /// In a worktree, what the run changed inside a submodule (paths from the repository's
        /// top): the task's branch records only which commit a submodule is at, so none of it
        /// lands, and it goes with the worktree.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        in_submodules: Vec<String>,
        /// What the audit of the changes found (gamed checks), less what the person dismissed.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        audit: Vec<crate::judge::audit::Finding>,
        /// Whether auto-approve took this review, and why (not).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        auto_approve: Option<AutoApproval>,
        /// The person's comments from the last review, as this run's work was found against them.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        criteria: Vec<crate::judge::criteria::CriterionResult>,
    },
    ReviewResolved {
        review_id: RequestId,
        decision: Decision,
        by: DecidedBy,
        feedback: Option<String>,
        reverted: bool,
        /// A decision that came about other than by the person's own review (letting the agent
        /// resolve a landing, choosing another attempt), so the story tells it as what it was.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        occasion: Option<crate::domain::DecisionOccasion>,
    },
    /// The manager split the task into these steps (only for plans of two or more).
    PlanCreated {
        steps: Vec<crate::domain::PlanStep>,
        mode: PlanMode,
        /// The model calls the whole plan may make (agent, evaluator and manager): 1.5× what a
        /// single run of the task may spend.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        budget_calls: Option<u32>,
        /// The plan waits for the person: they may edit it, then run or cancel it.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        awaiting_review: bool,
    },
    /// The person's answer to a plan that waited: run these steps (as edited), or not at all.
    PlanReviewed {
        approved: bool,
        edited: bool,
        steps: Vec<crate::domain::PlanStep>,
    },
    /// A step stalled or failed and the manager revised the plan: the steps from `first` on
    /// are replaced by `steps` (the old ones stay in the log, shown as replaced, with the cause).
    PlanRevised {
        first: usize,
        cause: String,
        steps: Vec<crate::domain::PlanStep>,
        /// Revised for the person's request-changes feedback, not because a step failed: it
        /// does not count against the replans a task may make.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        for_feedback: bool,
    },
    /// `index` counts every step the plan ever had; `number` of `of` is what the person reads
    /// ("Step 2/3"), counting only the steps of the current plan.
    PlanStepStarted {
        index: usize,
        number: usize,
        of: usize,
        title: String,
    },
    PlanStepFinished {
        index: usize,
        end_reason: EndReason,
        summary: String,
        /// What decided it, in the person's words: the checks that passed (a file, a command),
        /// or the evaluator's verdict.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        decided_by: Option<String>,
        /// What later steps need from this one (names, paths, values, decisions), as the
        /// evaluator read it from the step's work; their briefs carry it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output_data: Option<String>,
    },
    /// A comment the person left on lines of a review's diff, kept with the session (written
    /// again, with the same id, when edited).
    ReviewComment {
        review_id: RequestId,
        comment: crate::judge::criteria::Comment,
    },
    ReviewCommentRemoved {
        review_id: RequestId,
        comment_id: String,
    },
    /// Comments a review found not met that the person let go with their Request changes: they
    /// are not sent again nor checked again (`comments`: each as its criterion, where and what).
    CommentsLetGo {
        review_id: RequestId,
        comments: Vec<String>,
    },
    /// The comments sent back with Request changes: the next run is judged on each one.
    CriteriaSet {
        criteria: Vec<crate::judge::criteria::Comment>,
    },
    /// How the judge found each criterion at this check.
    CriteriaChecked {
        results: Vec<crate::judge::criteria::CriterionResult>,
    },
    /// The person dismissed an audit finding for this session: it no longer blocks auto-approve
    /// nor goes to the evaluator.
    AuditDismissed {
        rule: crate::judge::audit::AuditRule,
        path: String,
        #[serde(default)]
        excerpt: String,
    },
    /// The person took back a dismissal: the finding counts again (blocks auto-approve, goes to
    /// the evaluator).
    AuditRestored {
        rule: crate::judge::audit::AuditRule,
        path: String,
        #[serde(default)]
        excerpt: String,
    },
    /// Reject's revert is under way (recorded with the decision): the files someone changed
    /// after the run that the person chose to overwrite all the same.
    RevertStarted {
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        overwrite: Vec<String>,
    },
    /// What Reject's revert did to the workspace: the run's files put back as the run found
    /// them. Written once the files are back, never before.
    Reverted {
        restored: Vec<String>,
        deleted: Vec<String>,
        /// The run's files someone changed after the run did: left as they are.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        kept: Vec<String>,
        /// Files someone changed after the run that the person said to overwrite: where their
        /// version is kept.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        copies: Vec<crate::workspace::checkpoint::OverwrittenCopy>,
        /// Of `kept`, the files the person said to overwrite whose copy could not be made, and why.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        not_copied: Vec<crate::workspace::checkpoint::NotCopied>,
    },
    /// Where the task works: its own worktree and branch in the person's repository, or the
    /// folder itself. Recorded before anything touches a file.
    TaskWorkspace {
        isolation: Isolation,
        /// The folder the agent, its commands and its tools work in.
        folder: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        worktree: Option<crate::workspace::worktree::TaskWorktree>,
    },
    /// The session is one attempt of a task several agents (or several tries) do side by side,
    /// each in its own worktree from the same commit; the attempts form a group that is ranked
    /// and reviewed together.
    AttemptStarted {
        group: GroupId,
        number: u32,
        of: u32,
        /// Who does it, as the person reads it: `Claude Code`, `Finishline's agent (m) #2`.
        label: String,
        /// The model the evaluator asked when no evaluator of its own was set: the run's model
        /// then, not this attempt's own (`builtin:m3`). Every later round of the attempt is
        /// judged by it too, as the rest of its group was.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        evaluator: Option<String>,
        /// The provider that model was asked of (an external agent's session records `acp`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        evaluator_provider: Option<String>,
    },
    /// The person chose this attempt of its group to land; the others were rejected.
    AttemptChosen {
        group: GroupId,
        /// Why it ranked where it did, in the rule's words, when it was first.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        /// The ranking the person chose from, as it stood then (`Vec<Ranked>`; recorded once every
        /// attempt had ended or was stopped by the choice): the group's record, which rounds of its attempts after the
        /// choice do not change. Kept as JSON and read leniently: a view's shape that changes
        /// later must not make the session unreadable.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ranking: Option<Value>,
    },
    /// The evaluator compared two attempts of this session's group, when the person asked: which
    /// better does the task and why. Recorded on both attempts.
    /// Its tokens are not the attempt's, so that asking cannot change the ranking's cost.
    AttemptsCompared {
        first: SessionId,
        second: SessionId,
        /// The attempt it prefers; `None` when it finds them equally good.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        prefers: Option<SessionId>,
        reason: String,
        /// Asked both ways round, its answers disagreed, so it prefers neither.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        disagreed: bool,
        model: String,
        tokens: u64,
        /// The reviews it judged, each attempt's then: a later review of either makes it stale.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        first_review: Option<RequestId>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        second_review: Option<RequestId>,
    },
    /// The evaluator gave no usable comparison of two attempts (unreachable, or answers it could
    /// not read): what it cost, counted with the comparisons'. Recorded on the first attempt.
    ComparisonFailed {
        first: SessionId,
        second: SessionId,
        model: String,
        tokens: u64,
        error: String,
    },
    /// Verify commands the task was started with beyond the workspace's own in the settings
    /// (the CLI's `--verify`): every later run of the task (a follow-up, a resume) runs them too.
    TaskVerify {
        commands: Vec<String>,
    },
    /// Tools the person allowed without asking when starting the task (the CLI's `--allow`;
    /// `all` for every tool that would ask): its later runs (a follow-up, a resume) keep them.
    TaskAllowed {
        tools: Vec<String>,
    },
    /// The task's worktree exists, with the untracked files it was given (`.env`, local config).
    WorktreeReady {
        copied: Vec<String>,
    },
    /// The run's changes are a commit on the task's branch.
    TaskCommitted {
        commit: String,
        branch: String,
        /// The files the branch changes since the task started, which landing it changes: the
        /// landing starts from them instead of asking git again.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        files_since_start: Option<Vec<String>>,
    },
    /// Approve is landing the task: recorded before the person's branch moves, so a landing
    /// cut short is finished or reported at the next start.
    LandingStarted {
        review_id: RequestId,
        mode: LandingMode,
        target_branch: String,
        old_tip: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        new_commit: Option<String>,
        /// The task's commit whose changes are written into the person's checkout (uncommitted
        /// changes): a landing cut short is told apart from one that wrote them all by it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        task_tip: Option<String>,
        /// Who approved it, for the approval recorded when a landing cut short is finished at
        /// the next start (older histories: the person).
        #[serde(default = "person")]
        by: DecidedBy,
    },
    /// The task landed: its commit on the branch it started from, or its changes in the
    /// person's working tree, or its branch kept.
    Landed {
        mode: LandingMode,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        target_branch: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        commit: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        branch_kept: Option<String>,
        files: Vec<String>,
        /// The landing's branch was not checked out: the person's files did not change.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        checkout_elsewhere: Option<crate::domain::CheckoutElsewhere>,
    },
    /// Approve could not land the task; nothing was overwritten and the review stays open.
    LandingBlocked {
        reason: LandingBlock,
        files: Vec<String>,
        detail: String,
    },
    /// At the person's word, what the task wrote that `.gitignore` hides (it never lands) was
    /// copied from its worktree into their checkout; a file already there was left as it was.
    IgnoredCopied {
        copied: Vec<String>,
        left: Vec<String>,
        /// Not copied, each `path: why` (a link out of the repository, a socket, an error).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        failed: Vec<String>,
    },
    /// The task's branch was moved onto the branch it lands on, which had moved on.
    Rebased {
        onto: String,
        /// The branch's tip the rebase made: the task's own commits, moved (a reject deletes a
        /// branch still there as it deletes one the rebase did not touch).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tip: Option<String>,
    },
    /// A rejected or put-away task's branch is kept, not deleted with its worktree: `why` says
    /// whether the worktree changed after the review or after the task, or the person asked.
    /// `files`: what the kept branch holds beyond the last commit Finishline recorded (asked: beyond
    /// its base).
    BranchKept {
        branch: String,
        files: Vec<String>,
        #[serde(default, deserialize_with = "crate::domain::branch_kept_why")]
        why: BranchKeptWhy,
    },
    /// The person named another model for the built-in agent to go on with (the session's own
    /// was wrong, or gone from the server): the session works with it from this run on.
    ModelSwitched {
        from: String,
        to: String,
    },
    /// The task's worktree is gone (and its branch, unless kept).
    WorktreeRemoved {
        folder: String,
        why: WorktreeEnd,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        branch_deleted: Option<String>,
    },
    Error {
        code: crate::error::ErrorCode,
        message: String,
    },
    /// A stored event this build cannot read: written by a newer Finishline (a type or a value it
    /// does not know), read back after going back to an older one. Never written; it stands in
    /// its place so the rest of the session still reads, in order and without a gap.
    Unreadable {
        /// The type the event was stored as.
        was: String,
    },
}

impl EngineEvent {
    /// The model usage the event records, and whose: what a session's cost is priced from (the
    /// history's usage table holds the same).
    pub fn usage(&self) -> Option<(UsageSource, &Usage)> {
        match self {
            EngineEvent::StepFinished { usage, .. } => Some((UsageSource::Agent, usage)),
            EngineEvent::Evaluation { usage, .. } => Some((UsageSource::Evaluator, usage)),
            EngineEvent::TokensSpent { source, usage, .. } => Some((*source, usage)),
            _ => None,
        }
    }
}

impl EngineEvent {
    /// A decision that something acts on once it is stored: the person's branch or files change
    /// (a landing, a revert), or a worktree and its branch go. Its commit is synced to disk, so
    /// that not even a power loss leaves the act without its record.
    pub fn acts_once_stored(&self) -> bool {
        matches!(
            self,
            EngineEvent::LandingStarted { .. }
                | EngineEvent::RevertStarted { .. }
                | EngineEvent::ReviewResolved { .. }
                | EngineEvent::WorktreeRemoved { .. }
                | EngineEvent::StatusChanged { status: crate::domain::SessionStatus::Rejected, .. }
        )
    }

    pub fn type_name(&self) -> &'static str {
        match self {
            EngineEvent::SessionCreated { .. } => "session_created",
            EngineEvent::RunStarted { .. } => "run_started",
            EngineEvent::ModelSwitched { .. } => "model_switched",
            EngineEvent::RunFinished { .. } => "run_finished",
            EngineEvent::StatusChanged { .. } => "status_changed",
            EngineEvent::StepStarted { .. } => "step_started",
            EngineEvent::StepFinished { .. } => "step_finished",
            EngineEvent::Activity { .. } => "activity",
            EngineEvent::MessageCreated { .. } => "message_created",
            EngineEvent::TextDelta { .. } => "text_delta",
            EngineEvent::ReasoningDelta { .. } => "reasoning_delta",
            EngineEvent::ToolCall { .. } => "tool_call",
            EngineEvent::TodosUpdated { .. } => "todos_updated",
            EngineEvent::PermissionRequested { .. } => "permission_requested",
            EngineEvent::PermissionResolved { .. } => "permission_resolved",
            EngineEvent::QuestionAsked { .. } => "question_asked",
            EngineEvent::QuestionAnswered { .. } => "question_answered",
            EngineEvent::RequestCancelled { .. } => "request_cancelled",
            EngineEvent::Verification { .. } => "verification",
            EngineEvent::Evaluation { .. } => "evaluation",
            EngineEvent::TokensSpent { .. } => "tokens_spent",
            EngineEvent::Continuation { .. } => "continuation",
            EngineEvent::ReviewRequested { .. } => "review_requested",
            EngineEvent::ReviewResolved { .. } => "review_resolved",
            EngineEvent::Reverted { .. } => "reverted",
            EngineEvent::RevertStarted { .. } => "revert_started",
            EngineEvent::AuditDismissed { .. } => "audit_dismissed",
            EngineEvent::AuditRestored { .. } => "audit_restored",
            EngineEvent::ReviewComment { .. } => "review_comment",
            EngineEvent::ReviewCommentRemoved { .. } => "review_comment_removed",
            EngineEvent::CommentsLetGo { .. } => "comments_let_go",
            EngineEvent::CriteriaSet { .. } => "criteria_set",
            EngineEvent::CriteriaChecked { .. } => "criteria_checked",
            EngineEvent::TaskWorkspace { .. } => "task_workspace",
            EngineEvent::AttemptStarted { .. } => "attempt_started",
            EngineEvent::AttemptChosen { .. } => "attempt_chosen",
            EngineEvent::AttemptsCompared { .. } => "attempts_compared",
            EngineEvent::ComparisonFailed { .. } => "comparison_failed",
            EngineEvent::TaskVerify { .. } => "task_verify",
            EngineEvent::TaskAllowed { .. } => "task_allowed",
            EngineEvent::WorktreeReady { .. } => "worktree_ready",
            EngineEvent::TaskCommitted { .. } => "task_committed",
            EngineEvent::LandingStarted { .. } => "landing_started",
            EngineEvent::Landed { .. } => "landed",
            EngineEvent::LandingBlocked { .. } => "landing_blocked",
            EngineEvent::IgnoredCopied { .. } => "ignored_copied",
            EngineEvent::Rebased { .. } => "rebased",
            EngineEvent::BranchKept { .. } => "branch_kept",
            EngineEvent::WorktreeRemoved { .. } => "worktree_removed",
            EngineEvent::PlanCreated { .. } => "plan_created",
            EngineEvent::PlanRevised { .. } => "plan_revised",
            EngineEvent::PlanReviewed { .. } => "plan_reviewed",
            EngineEvent::PlanStepStarted { .. } => "plan_step_started",
            EngineEvent::PlanStepFinished { .. } => "plan_step_finished",
            EngineEvent::ProjectInstructions { .. } => "project_instructions",
            EngineEvent::AgentConnected { .. } => "agent_connected",
            EngineEvent::AgentLoginNeeded { .. } => "agent_login_needed",
            EngineEvent::Error { .. } => "error",
            EngineEvent::Unreadable { .. } => "unreadable",
        }
    }
}

/// Auto-approve's answer at a review: whether it approved, and why (not), in the person's words.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AutoApproval {
    pub approved: bool,
    pub reason: String,
    /// An attempt that auto-approve would take were it a task alone: only the group's choice
    /// holds it (`run --attempts --review approve` lands it unasked when it ranks first).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub group_decides: bool,
}

/// An event as stored and delivered: the event plus where and when it belongs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Envelope {
    pub seq: u64,
    pub session_id: SessionId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<RunId>,
    /// RFC 3339, UTC, milliseconds.
    pub at: String,
    #[serde(flatten)]
    pub event: EngineEvent,
}

fn person() -> DecidedBy {
    DecidedBy::Person
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

#[cfg(test)]
mod branch_kept_tests {
    use super::EngineEvent;
    use crate::domain::BranchKeptWhy;

    #[test]
    fn a_decision_stored_with_an_occasion_from_a_later_version_still_reads_and_is_not_told_as_the_persons_own() {
        let stored =
            r#"{"type":"review_resolved","review_id":"r","decision":"reject","by":"person","feedback":null,"reverted":false,"occasion":"from_the_future"}"#;
        let e: EngineEvent = serde_json::from_str(stored).expect("the session still opens");
        let EngineEvent::ReviewResolved { occasion, decision, .. } = e else { panic!() };
        assert_eq!(occasion, Some(crate::domain::DecisionOccasion::Other));
        assert_ne!(decision.told(occasion), "reject", "not read as the person's own reject");
    }

    #[test]
    fn a_kept_branch_stored_without_a_reason_or_with_one_from_a_later_version_still_reads() {
        for stored in [r#"{"type":"branch_kept","branch":"b","files":[]}"#, r#"{"type":"branch_kept","branch":"b","files":[],"why":"from_the_future"}"#] {
            let e: EngineEvent = serde_json::from_str(stored).unwrap();
            assert!(matches!(e, EngineEvent::BranchKept { why: BranchKeptWhy::ChangedAfterReview, .. }), "{stored}");
        }
        let e: EngineEvent = serde_json::from_str(r#"{"type":"branch_kept","branch":"b","files":[],"why":"asked"}"#).unwrap();
        assert!(matches!(e, EngineEvent::BranchKept { why: BranchKeptWhy::Asked, .. }));
    }
}
