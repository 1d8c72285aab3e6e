// The one place the UI talks to the Rust side. Components import these functions and types;
// they never call `invoke` themselves, so every command name and payload shape lives here.
import { Channel, invoke } from "@tauri-apps/api/core";
import { listen, type UnlistenFn } from "@tauri-apps/api/event";
import { open } from "@tauri-apps/plugin-dialog";

/** Why a put-away task's branch is kept: the worktree changed after the review or after the
 * task ended (or holds commits Finishline did not make), or the person asked. A history from
 * before this was recorded reads as the first. */
export type BranchKeptWhy = "changed_after_review" | "changed_after_task" | "asked" | "edited_during_task";

export type ProviderKind = "openai" | "openai_responses" | "anthropic" | "gemini";
export type Theme = "system" | "light" | "dark";

export interface ProviderSettings {
  /** The preset this was filled from; it names the key's keychain entry. */
  preset?: string | null;
  kind: ProviderKind;
  base_url: string;
  model: string;
  api_key_env: string | null;
}

export interface Limits {
  max_steps: number;
  continuation_budget: number;
  max_retries: number;
  truncation_cap?: number;
  short_stop_tokens?: number;
  max_output_tokens?: number;
  /** For models without their own entry in `context_windows`. */
  context_window?: number;
  /** The longest one model step may take, in seconds. */
  step_timeout_secs?: number;
  /** A line or block repeated this many times in one answer stops it as stuck. */
  repeat_threshold?: number;
  /** Files over this many MB are left out of checkpoints. */
  checkpoint_max_file_mb?: number;
}

export type PermissionDefault = "ask" | "allow" | "deny";

export interface CompletionSettings {
  marker: string;
  require_complete_task: boolean;
  continue_after_denial: boolean;
}

export interface Settings {
  provider: ProviderSettings;
  evaluator_model: string | null;
  /** The evaluator's own provider; null means the agent's. */
  evaluator_provider?: ProviderSettings | null;
  /** Plan mode's manager model (on the evaluator's provider); null: the evaluator's model. */
  manager_model?: string | null;
  limits: Limits;
  /** Model → context window in tokens. */
  context_windows?: Record<string, number>;
  auto_approve?: boolean;
  completion: CompletionSettings;
  permissions: Record<string, PermissionDefault>;
  /** Workspace folder → commands that verify work done in it. */
  verify_commands: Record<string, string[]>;
  /** Model → US dollars per million tokens. */
  prices: Record<string, { input_per_mtok: number; output_per_mtok: number }>;
  theme: Theme;
  mcp_servers?: McpServerSettings[];
  /** New Task's plan choice until the person picks another. */
  plan_mode?: PlanMode;
  /** Run plans at once instead of showing them first. */
  run_plans_without_review?: boolean;
  /** An external ACP agent that does the work; null: Finishline's built-in agent. */
  agent?: ExternalAgent | null;
  /** Where tasks work, how many at once, and how approved ones land. */
  tasks?: TaskSettings;
}

export type Isolation = "worktree" | "in_place";
export type LandingMode = "squash" | "merge" | "uncommitted" | "branch";

export interface TaskSettings {
  isolation: Isolation;
  /** Where task worktrees live; empty: the data folder's worktrees/. */
  worktree_dir: string;
  /** Untracked files each worktree gets from your checkout (gitignore syntax). */
  worktree_include: string[];
  parallel_limit: number;
  landing: LandingMode;
  /** The most attempts one task may have side by side. */
  max_attempts?: number;
}

/** A task's own worktree in the person's repository. */
export interface TaskWorktree {
  repo: string;
  folder: string;
  subdir?: string;
  branch: string;
  base_branch?: string | null;
  base_commit: string;
}

/** What New Task tells the person about a folder. */
export interface WorkspaceInfo {
  /** Tasks here get their own worktree. */
  worktrees: boolean;
  repository: string | null;
  branch: string | null;
  /** On no branch: what detached it, "a rebase of main" or "a bisect", if anything. */
  under_way?: string | null;
  /** The branch a rebase in the checkout is rebasing: no place to land until it is over. */
  rebasing?: string | null;
  branches: string[];
  unborn_repository: boolean;
  /** Tasks working in the folder itself right now. */
  busy: { session_id: string; title: string }[];
  /** Tasks that worked in the folder itself (or one inside or around it) and wait for review. */
  waiting?: { session_id: string; title: string }[];
}

export type WhenBusy = "ask" | "queue" | "run";

export type LandingBlock = "your_edits" | "your_ignored_files" | "outside_sparse_checkout" | "branch_in_use" | "branch_moved" | "conflict" | "conflict_markers" | "verification_failed" | "no_branch" | "interrupted" | "stopped" | "stopped_behind_another" | "repository_gone" | "git";

export interface WorktreeUsage {
  session_id: string;
  title: string;
  status: SessionStatus;
  folder: string;
  branch: string | null;
  /** Which attempt of its task it is, when one of several. */
  attempt?: string | null;
  bytes: number;
  /** Its task is decided: clean-up removes it. */
  leftover: boolean;
}

/** An agent speaking the Agent Client Protocol over its stdio. */
export interface ExternalAgent {
  /** What sessions record: a preset's name (`opencode`) or the custom program's. */
  name: string;
  command: string;
  args: string[];
  env: Record<string, string>;
}

export interface AgentPreset {
  name: string;
  label: string;
  command: string;
  args: string[];
  install: string;
  /** Where its command is on PATH; null: not installed here. */
  found: string | null;
}

/** One way an external agent offers to log in (from its own `authMethods`). */
export type LoginMethod =
  | { type: "terminal"; id: string; name: string; description?: string | null; command: string; args: string[]; env: Record<string, string> }
  | { type: "key"; id: string; name: string; description?: string | null; vars: string[]; link?: string | null; authenticate: boolean }
  | { type: "agent"; id: string; name: string; description?: string | null };

export interface AgentCheck {
  name: string;
  version: string | null;
  load_session: boolean;
  /** Whether it is logged in (it opened a session and did not say nobody is); null: not known. */
  logged_in?: boolean | null;
  /** What to do to log in, in the agent's words. */
  problem?: string | null;
}

/** One agent as Check found it: installed (where), its version, logged in. */
export interface AgentStatus {
  agent: string;
  label: string;
  found: string | null;
  install: string | null;
  name: string | null;
  version: string | null;
  load_session: boolean;
  logged_in: boolean | null;
  problem: string | null;
  login: LoginMethod[];
}

export interface McpServerSettings {
  name: string;
  command: string;
  args: string[];
  /** A value written ${VAR} is read from Finishline's environment when the server starts. */
  env: Record<string, string>;
  enabled: boolean;
}

export interface McpToolInfo {
  name: string;
  description: string;
  input_schema: unknown;
}

export type McpServerStatus = { name: string } & (
  | { state: "idle" }
  | { state: "running"; pid: number | null; tools: McpToolInfo[] }
  | { state: "failed"; message: string }
  | { state: "disabled" }
);

export interface ProviderPreset {
  id: string;
  label: string;
  kind: ProviderKind;
  base_url: string;
  models: string[];
  key_env: string | null;
  local: boolean;
  hint: string;
}

export type KeychainStatus = { state: "available" } | { state: "unavailable"; reason: string };
export type KeySource = { kind: "session" } | { kind: "keychain" } | { kind: "env"; var: string } | { kind: "missing"; var: string };
export interface KeyStatus {
  source: KeySource;
  keychain: KeychainStatus;
  env_var: string;
}
export type KeyPlace = "keychain" | "session";

export type ToolSupport = { state: "supported" } | { state: "unsupported"; message: string } | { state: "unknown"; message: string };

export type CheckKind = "streams" | "follows_instruction" | "calls_tools" | "clean_template";

/** One behaviour of the model, graded by Test connection. */
export interface ModelCheck {
  kind: CheckKind;
  passed: boolean;
  detail: string;
}

export interface ConnectionReport {
  models: string[];
  model_listed: boolean | null;
  tools: ToolSupport;
  checks?: ModelCheck[];
  /** The context window the server reports for the model. */
  context_window?: number | null;
}

export interface StoreUsage {
  id: string;
  workspace: string;
  bytes: number;
  sessions: number;
}

export interface WorkspaceSurvey {
  files: number;
  capped: boolean;
  too_broad: boolean;
  /** The folder's AGENTS.md (or CLAUDE.md, .clinerules) the agent and the evaluator follow. */
  instructions?: string | null;
}

/** Settings read from a file: saved, or waiting for the person to confirm its MCP servers. */
export type ImportOutcome =
  | { outcome: "cancelled" }
  | { outcome: "imported"; settings: SettingsView; path: string }
  | ({ outcome: "confirm" } & ImportRisks);

/** What an imported settings file would let run or send that the current settings do not. */
export interface ImportRisks {
  path: string;
  /** MCP servers, new or running another command (environment names only). */
  servers: { name: string; command: string; args: string[]; env: string[] }[];
  /** The external agent's command line, when it is another program. */
  agent: string | null;
  /** Tools that would run without asking. */
  allowed: string[];
  /** New verify commands, as “folder: command”. */
  verify: string[];
  /** Where the provider's or the evaluator's requests, and a saved key, would go. */
  addresses: string[];
  auto_approve: boolean;
}

export interface SettingsView {
  settings: Settings;
  /** Decided by the engine: a provider with somewhere to send tasks and a model to ask. */
  provider_ready: boolean;
  /** Folders checkpoints always leave out. */
  checkpoint_excludes?: string[];
  /** Keys in the settings file no setting takes (a typo made by hand, a newer version's): kept, unused. */
  unknown_keys?: string[];
}

/** What started a run: the task, Request changes, a follow-up, a resume, a plan's step. */
export type RunTrigger = "task" | "feedback" | "message" | "resume" | "plan_step" | "review";

export type SessionStatus =
  | "idle"
  | "queued"
  | "busy"
  | "retry"
  | "awaiting_approval"
  | "awaiting_review"
  | "completed"
  | "rejected"
  | "failed"
  | "cancelled"
  | "interrupted";
export type Claim = "success" | "partial" | "blocked" | "none";
export type Verdict = "done" | "not_done" | "stuck" | "unavailable";
export type EndReason =
  | "verified_done"
  | "unverified"
  | "claimed_blocked"
  | "claimed_partial"
  | "stuck"
  | "cycles_exhausted"
  | "truncation_exhausted"
  | "step_limit"
  | "agent_turn_limit"
  | "permission_denied"
  | "question_declined"
  | "conversation"
  | "conversation_unchecked"
  | "cancelled"
  | "failed"
  | "plan_failed"
  | "plan_budget_spent";
export type Decision = "approve" | "request_changes" | "reject";
/** How a decision came about when it was not the person's own verdict on this work alone:
 * `every_attempt_rejected` rejected the whole group of attempts at once. */
/** "other": one a later version recorded. */
export type DecisionOccasion = "resolve_landing" | "another_attempt_chosen" | "every_attempt_rejected" | "other";
export type ContinuationSource = "truncation" | "todo_gate" | "missing_completion" | "missing_action" | "verification" | "evaluator" | "step_checks" | "resume" | "plan_step" | "landing_conflict" | "review_comments" | "new_worktree" | "conflict_markers";
export type PlanMode = "off" | "on" | "auto";
export type StepState = "pending" | "running" | "done" | "failed" | "skipped" | "replaced";
export interface PlanStep {
  title: string;
  instructions: string;
  criteria: string[];
  depends_on: number[];
}

/** Which stuck pattern fired, and what repeated. */
export interface Stuck {
  pattern: string;
  repeated: string;
}

/** The agent's claim in its own words, from complete_task. */
export interface ClaimWords {
  summary?: string;
  original_request_summary?: string;
  remaining_work?: string;
}
export type ToolState = "pending" | "awaiting_permission" | "running" | "done" | "error" | "denied" | "unknown";
export type Phase = "thinking" | "tool" | "verifying" | "evaluating" | "compacting" | "waiting" | "checkpointing" | "landing";
export type PermissionDecision = "allow_once" | "allow_session" | "deny";

export interface Todo {
  id: string;
  content: string;
  status: "pending" | "in_progress" | "completed" | "cancelled";
}

export interface Usage {
  input_tokens: number;
  output_tokens: number;
}

export interface FileChange {
  path: string;
  kind: "created" | "modified" | "deleted";
  diff: string;
  /** It changed while a command or an external agent was at work: the person's edit may be in it. */
  unattributed?: boolean;
}

/** One mistake in the settings: the field as the settings file names it, and what is wrong. */
export interface SettingProblem {
  field: string;
  problem: string;
}

export type DiffSide = "new" | "old";

/** A comment on lines of a review's diff; it goes back with Request changes. */
export interface ReviewComment {
  /** Empty for a new comment: the engine gives it one. */
  id: string;
  path: string;
  start_line: number;
  end_line: number;
  side: DiffSide;
  quote: string;
  text: string;
}

export type AuditRule = "assertion_removed" | "assertion_weakened" | "skip_added" | "test_deleted" | "check_config_changed" | "failure_masked" | "special_cased_test";

/** What the audit of the diff found: a change that weakens or bypasses the checks. */
export interface AuditFinding {
  rule: AuditRule;
  path: string;
  line?: number | null;
  detail: string;
  excerpt?: string;
}

export interface CriterionResult {
  id: string;
  text: string;
  state: "met" | "unmet" | "unverifiable";
  evidence: string;
}

export interface AutoApproval {
  approved: boolean;
  reason: string;
}

/** The engine's events, as stored and delivered (section 10 of the spec). */
/** A file a revert replaced after keeping a copy, and where the copy is: the person's version they said to overwrite, or (unattributed) a file that changed while a command ran, when their edit would look like the agent's. */
export interface OverwrittenCopy {
  path: string;
  copy: string;
  unattributed?: boolean;
}

/** A file the person said a revert may overwrite, left because no copy of their version could be kept first. */
export interface NotCopied {
  path: string;
  reason: string;
}

export type EngineEvent =
  | { type: "session_created"; task: string; workspace: string; provider: string; model: string; base_url?: string }
  | { type: "run_started"; trigger: RunTrigger }
  | { type: "model_switched"; from: string; to: string }
  | { type: "run_finished"; status: SessionStatus; claim: Claim; verdict: Verdict | null; end_reason: EndReason; stuck?: Stuck }
  | { type: "status_changed"; status: SessionStatus; attempt?: number; max_retries?: number; next_retry_at?: string; message?: string }
  | { type: "step_started"; step: number; cycle?: { used: number; max: number } }
  | { type: "step_finished"; step: number; stop_reason: string | null; usage: Usage }
  | { type: "activity"; phase: Phase; detail: string }
  | { type: "message_created"; message_id: string; role: "user" | "assistant" | "continuation" | "summary"; source?: ContinuationSource; text?: string }
  | { type: "text_delta"; message_id: string; text: string }
  | { type: "reasoning_delta"; message_id: string; text: string }
  | { type: "tool_call"; call_id: string; tool: string; kind?: string; input: unknown; state: ToolState; output?: string }
  | { type: "todos_updated"; todos: Todo[] }
  | { type: "permission_requested"; request_id: string; tool: string; input: unknown; reason: string; call_id?: string }
  | { type: "permission_resolved"; request_id: string; decision: PermissionDecision }
  | { type: "question_asked"; request_id: string; question: string; call_id?: string }
  | { type: "request_cancelled"; request_id: string }
  | { type: "question_answered"; request_id: string; answer: string | null; declined: boolean }
  | { type: "verification"; command: string; exit_code: number | null; output_tail: string; skipped: boolean; nth?: number; of?: number; persons_own?: boolean; plans?: boolean }
  /** Tokens spent outside a step and an evaluation: the manager's plan (source evaluator), compacting. */
  | { type: "tokens_spent"; source: "agent" | "evaluator" | "compaction"; usage: Usage; repairs?: number }
  | { type: "evaluation"; cycle: number; verdict: Verdict; summary: string; remaining: string[]; stuck_reason: string | null; model: string; parse_ok: boolean; usage: Usage; question?: "done" | "announced_action"; repairs?: number }
  | { type: "continuation"; source: ContinuationSource; attempt: number; max: number; remaining: string[]; text: string; answers_call?: string }
  | { type: "review_requested"; review_id: string; claim: Claim; verdict: Verdict | null; end_reason: EndReason; remaining: string[]; files_changed: FileChange[]; verification: string[]; tokens?: Tokens; cost_usd?: number; round_cost_usd?: number; claim_words?: ClaimWords; verdict_summary?: string; verdict_on_step?: string; stuck?: Stuck; not_covered?: string[]; unrecorded?: boolean; not_landed?: string[]; in_submodules?: string[]; audit?: AuditFinding[]; auto_approve?: AutoApproval | null; criteria?: CriterionResult[] }
  | { type: "review_comment"; review_id: string; comment: ReviewComment }
  | { type: "review_comment_removed"; review_id: string; comment_id: string }
  | { type: "comments_let_go"; review_id: string; comments: string[] }
  | { type: "criteria_set"; criteria: ReviewComment[] }
  | { type: "criteria_checked"; results: CriterionResult[] }
  | { type: "audit_dismissed"; rule: AuditRule; path: string; excerpt?: string }
  | { type: "audit_restored"; rule: AuditRule; path: string; excerpt?: string }
  | { type: "review_resolved"; review_id: string; decision: Decision; by: "person" | "auto"; feedback: string | null; reverted: boolean; occasion?: DecisionOccasion }
  | { type: "reverted"; restored: string[]; deleted: string[]; kept?: string[]; copies?: OverwrittenCopy[]; not_copied?: NotCopied[] }
  | { type: "revert_started"; overwrite?: string[] }
  | { type: "task_workspace"; isolation: Isolation; folder: string; worktree?: TaskWorktree | null }
  | { type: "attempt_started"; group: string; number: number; of: number; label: string; evaluator?: string; evaluator_provider?: string }
  | { type: "attempt_chosen"; group: string; reason?: string | null; ranking?: RankedAttempt[] }
  | { type: "task_verify"; commands: string[] }
  | { type: "task_allowed"; tools: string[] }
  | { type: "comparison_failed"; first: string; second: string; model: string; tokens: number; error: string }
  | { type: "attempts_compared"; first: string; second: string; prefers?: string | null; reason: string; disagreed?: boolean; model: string; tokens: number }
  | { type: "worktree_ready"; copied: string[] }
  | { type: "task_committed"; commit: string; branch: string; files_since_start?: string[] }
  | { type: "landing_started"; review_id: string; mode: LandingMode; target_branch: string; old_tip: string; new_commit?: string | null; task_tip?: string | null; by?: "person" | "auto" }
  | { type: "landed"; mode: LandingMode; target_branch?: string | null; commit?: string | null; branch_kept?: string | null; files: string[]; checkout_elsewhere?: CheckoutElsewhere }
  | { type: "landing_blocked"; reason: LandingBlock; files: string[]; detail: string }
  | { type: "ignored_copied"; copied: string[]; left: string[]; failed?: string[] }
  | { type: "rebased"; onto: string; tip?: string }
  | { type: "branch_kept"; branch: string; files: string[]; why?: BranchKeptWhy }
  | { type: "worktree_removed"; folder: string; why: string; branch_deleted?: string | null }
  | { type: "project_instructions"; file: string; chars: number; truncated: boolean }
  | { type: "agent_connected"; agent: string; name: string; version?: string | null; acp_session: string; loaded: boolean; claims: boolean }
  | { type: "agent_login_needed"; agent: string; label: string; message: string; methods: LoginMethod[] }
  | { type: "plan_created"; steps: PlanStep[]; mode: PlanMode; awaiting_review?: boolean; budget_calls?: number | null }
  | { type: "plan_reviewed"; approved: boolean; edited: boolean; steps: PlanStep[] }
  | { type: "plan_revised"; first: number; cause: string; steps: PlanStep[]; for_feedback?: boolean }
  | { type: "plan_step_started"; index: number; number: number; of: number; title: string }
  | { type: "plan_step_finished"; index: number; end_reason: EndReason; summary: string; output_data?: string; decided_by?: string | null }
  | { type: "error"; code: ErrorCode; message: string }
  /** A stored event this version cannot read (a newer Finishline wrote it): left out of the view. */
  | { type: "unreadable"; was: string };

/** The session's plan as the engine folds it (`plan::state::PlanState`); the window never folds it. */
export interface PlanProjection {
  mode: PlanMode;
  steps: {
    step: PlanStep;
    state: StepState;
    end_reason: EndReason | null;
    summary: string | null;
    output_data: string | null;
    replaced_because: string | null;
    decided_by: string | null;
    /** A failed step the manager's revision took over: not a step left undone. */
    superseded?: boolean;
  }[];
  revisions: string[];
  replans: number;
  current: number | null;
  number: number | null;
  of: number | null;
  concluded: boolean;
  awaiting_review: boolean;
  /** The person cancelled it at its go-ahead: none of it ran. A Resume brings it back. */
  declined?: boolean;
  budget_calls: number | null;
  spent: { agent: number; evaluator: number; manager: number };
  /** Rounds the person's feedback started; `spent` counts the latest one's calls. */
  rounds?: number;
  /** What the person changed in the plan at its go-ahead (the models are told, too). */
  person_edits?: { removed: string[]; added: string[]; changed: string[] } | null;
}

/** `plan`: the plan after this event, sent with the events that change it. */
export type Envelope = EngineEvent & { seq: number; session_id: string; run_id?: string; at: string; plan?: PlanProjection };

export interface Tokens {
  agent: number;
  evaluator: number;
  compaction: number;
}

export interface SessionSummary {
  id: string;
  title: string;
  task: string;
  workspace: string;
  provider: string;
  model: string;
  status: SessionStatus;
  claim: Claim | null;
  verdict: Verdict | null;
  end_reason: EndReason | null;
  decision: Decision | null;
  /** How that decision came about: `another_attempt_chosen` set it aside, nobody refused it. */
  occasion?: DecisionOccasion | null;
  created_at: string;
  created_ms: number;
  duration_ms: number;
  /** When its last event was recorded: for a session waiting for the person, since when. */
  updated_ms: number;
  tokens: Tokens;
  last_seq: number;
  /** The steps of its plan as it stands (0 without a plan), and how many are done. */
  plan_steps: number;
  plan_done: number;
  isolation?: Isolation | null;
  /** The task's own worktree, while it has one. */
  work_dir?: string | null;
  /** The task's branch while it exists; with no worktree, a branch kept where its work waits. */
  branch?: string | null;
  /** Which attempt of a group it is, when several agents do the task side by side. */
  attempt?: AttemptOf | null;
  /** How many of its reviews the person approved: a task rejected now may have landed before. */
  approvals: number;
  /** The latest review's audit findings the person has not dismissed: checks the agent weakened. */
  audit_findings?: number;
  /** Why it failed, while it stands failed. */
  failure?: string | null;
}

export interface AttemptOf {
  group: string;
  number: number;
  of: number;
  label: string;
  chosen: boolean;
  /** One of its group (this or another) was chosen to land. */
  group_chosen?: boolean;
}

/** What one attempt ended with (judge/ranking.rs). */
export interface AttemptEvidence {
  session: string;
  label: string;
  ended: boolean;
  end_reason: EndReason | null;
  /** The review waiting for the person's decision. */
  review: string | null;
  reviewed: boolean;
  findings: number;
  checks_passed: number;
  checks_run: number;
  /** The evaluator judged it; without that, `remaining` is no judgement. */
  evaluated?: boolean;
  remaining: number;
  diff_lines: number;
  files: number;
  cost_usd: number | null;
  tokens: number;
  wall_ms: number;
  /** Why it ended without a review, in its last error's words. */
  error?: string | null;
  /** The person rejected it in its own review: out of the choice, with no place (rank 0). */
  refused?: boolean;
}

export interface RankedAttempt {
  /** 0 while it still runs. */
  rank: number;
  evidence: AttemptEvidence;
  /** Why it is above the next one, in the rule's words. */
  above_next: string | null;
  /** The evaluator's word on it and the next, once the person asked for a comparison. */
  evaluator?: EvaluatorWord | null;
}

/** Its sentence calls the attempts "the first" and "the second", as they were shown to it. */
export interface EvaluatorWord {
  first: string;
  second: string;
  /** The attempt it prefers; null: equally good, or its answers disagreed. */
  prefers: string | null;
  reason: string;
  /** Asked both ways round, its answers disagreed, so it prefers neither. */
  disagreed?: boolean;
  /** The evaluator model that answered: another model, asked, gives its own. */
  model?: string;
}

export interface GroupRanking {
  group: string;
  task: string;
  ranking: RankedAttempt[];
  all_ended: boolean;
  chosen: string | null;
  /** None chosen, and none left to choose: the person rejected them all. */
  put_away?: boolean;
  /** What asking the evaluator to compare them has cost so far, not the attempts' own. */
  comparison_tokens?: number;
  /** The branch the attempts started from, which choosing one lands on. */
  base_branch?: string | null;
  /** Each attempt's place in the ranking's order, as the engine words it for every front end:
   * "1", "=2" (level with another: the rule finds them equal), "–" (no place yet, or none). */
  places: string[];
  /** The model a comparison asks now, where the engine knows the settings (the CLI, a
   * comparison's answer); the window asks `attemptJudge`. */
  judge?: string | null;
}

/** What asking the evaluator came to: the ranking, and how many pairs it was asked about this
 * time (none when each already had this model's answer). */
export interface Compared extends GroupRanking {
  asked: number;
  model: string;
}

export interface FileDifference {
  path: string;
  /** Every attempt left it the same. */
  same: boolean;
  versions: { session: string; label: string; kind: FileChange["kind"] | null; diff: string }[];
}

/** How one agent has done across the person's history (store/trust.rs). */
export interface AgentTrust {
  agent: string;
  model: string;
  tasks: number;
  verified_done: number;
  attempts_decided: number;
  chosen: number;
  reviews_decided: number;
  approved: number;
  false_claims: number;
}

export interface Timeline {
  session: SessionSummary;
  todos: Todo[];
  events: Envelope[];
}

export interface SearchHit {
  session_id: string;
  title: string;
  status: SessionStatus;
  created_at: string;
  /** The matching passage in parts; `matched` parts are the searched words. */
  snippet: { text: string; matched: boolean }[];
  /** The message the passage is in, where the session opens; none for the task's own words. */
  message_id?: string;
}

/** What the history list shows a session as: its status, or what its badge says where the stored
 * status alone would mislead (the engine's `Shown`). */
export type Shown = SessionStatus | "discarded" | "branch_kept" | "not_checked" | "not_chosen";

export interface ListFilter {
  statuses?: SessionStatus[];
  /** As the badges name them (any of these). */
  shown?: Shown[];
  end_reasons?: EndReason[];
  since_ms?: number;
  until_ms?: number;
  limit?: number;
  /** Only the attempts of this group. */
  group?: string;
  /** Only sessions whose worktree is still there, attempts left out (a group's are decided with it). */
  kept_work?: boolean;
  /** Only these sessions (a search's matches), however far back. */
  ids?: string[];
}

/** Where the person's checkout was when a task landed on a branch it was not on. */
export type CheckoutElsewhere = { branch: string } | "no_branch";

export interface Landed {
  mode: LandingMode;
  target_branch: string | null;
  commit: string | null;
  branch_kept: string | null;
  files: string[];
  checkout_elsewhere?: CheckoutElsewhere;
  /** The branch had moved on: the task was rebased onto it first, and this many checks passed again. */
  rebased?: { checks_run: number };
}

/** A file of a task's that another task in the same folder changed too. */
export type OtherTasksFile = { path: string; session: string; title: string };

/** A review's file not as its run left it; `by`: the other tasks that changed it (none: the person, or a command). */
export type ChangedSinceRun = { path: string; by?: OtherTasksFile[] };

export type ReviewOutcome =
  | { outcome: "decided"; status: SessionStatus; revert: { restored: string[]; deleted: string[]; conflicts: string[]; copies?: OverwrittenCopy[]; not_copied?: NotCopied[]; applied: boolean } | null; landed?: Landed; kept?: { branch: string; files: string[] } }
  /** `no_file`: those of `conflicts` where a pipe or a socket is now and the run left no file;
   * `other_tasks`: those another task in the same folder changed too, with that task. */
  | { outcome: "needs_confirmation"; conflicts: string[]; no_file?: string[]; other_tasks?: OtherTasksFile[] }
  | { outcome: "landing_blocked"; reason: LandingBlock; files: string[]; detail: string };

export type StartupAction = { kind: "open_session"; session_id: string } | { kind: "run_task"; task: string; workspace: string };

/** The engine's error codes (crates/engine/src/error.rs, `ErrorCode`), and "ipc" when the call
 * itself failed. The UI branches on these, never on a message's words. */
export type ErrorCode =
  | "invalid_settings"
  | "settings_unreadable"
  | "io"
  | "storage"
  | "disk_full"
  | "read_only"
  | "not_found"
  | "already_decided"
  | "lease_held"
  | "invalid_input"
  | "auth"
  | "provider_unreachable"
  | "provider_not_found"
  | "provider"
  | "provider_protocol"
  | "context_too_long"
  | "keychain_unavailable"
  | "mcp"
  | "chat_template"
  | "step_timeout"
  | "external_agent"
  | "external_agent_auth"
  | "workspace_busy"
  | "workspace_undecided"
  | "worktree"
  | "repository_gone"
  | "checkpoints"
  | "plan"
  | "internal"
  | "ipc";

/** Every failure the UI shows: a code to branch on, a message written for the person. */
export class AppError extends Error {
  constructor(
    public code: ErrorCode,
    message: string,
  ) {
    super(message);
  }
}

/**
 * A message as a sentence: the engine writes its errors to be composed into others ("finishline:
 * the disk is full…" in a terminal), the window shows them on their own. Only a plain first
 * word is capitalised: a path, a setting's name or `code` stays as it was written.
 */
export function sentence(text: string): string {
  return /^[a-z][a-z']*(?![\w./`:-])/.test(text) ? text.charAt(0).toUpperCase() + text.slice(1) : text;
}

function toAppError(e: unknown): AppError {
  if (e && typeof e === "object" && "code" in e && "message" in e) {
    const { code, message } = e as { code: ErrorCode; message: string };
    return new AppError(code, sentence(String(message)));
  }
  return new AppError("ipc", sentence(e instanceof Error ? e.message : String(e)));
}

async function call<T>(cmd: string, args?: Record<string, unknown>): Promise<T> {
  try {
    return await invoke<T>(cmd, args);
  } catch (e) {
    throw toAppError(e);
  }
}

export const ipc = {
  getSettings: () => call<SettingsView>("get_settings"),
  /** Moves a settings file that cannot be read aside and returns the defaults, and where it is. */
  setAsideSettings: () => call<{ view: SettingsView; kept_as: string }>("set_aside_settings"),
  saveSettings: (settings: Settings) => call<SettingsView>("save_settings", { settings }),
  /** Every mistake the engine finds in these settings, each by its field; nothing is saved. */
  checkSettings: (settings: Settings) => call<SettingProblem[]>("check_settings", { settings }),
  /** Opens the system folder picker; resolves to null when the person cancels. */
  pickWorkspace: async (): Promise<string | null> => {
    try {
      const picked = await open({ directory: true, multiple: false, title: "Choose the workspace folder" });
      return typeof picked === "string" ? picked : null;
    } catch (e) {
      throw toAppError(e);
    }
  },
  startSession: (task: string, workspace: string, model?: string, plan?: PlanMode, agent?: string, place?: { base?: string | null; whenBusy?: WhenBusy; isolation?: Isolation }) =>
    call<string>("start_session", {
      task,
      workspace,
      model: model ?? null,
      plan: plan ?? null,
      agent: agent ?? null,
      isolation: place?.isolation ?? null,
      base: place?.base ?? null,
      whenBusy: place?.whenBusy ?? null,
    }),
  /** Whether tasks in this folder get their own worktree, on which branch, and who works there now. */
  workspaceInfo: (folder: string) => call<WorkspaceInfo>("workspace_info", { folder }),
  /** The first few uncommitted changes in the checkout, which a task's worktree starts without,
   * and how many there are: asked apart, since git's status of a huge checkout takes a while. */
  workspaceUncommitted: (folder: string) => call<{ names: string[]; count: number }>("workspace_uncommitted", { folder }),
  /** `git init` and a first commit of the folder as it is, so tasks can work side by side. */
  makeRepository: (folder: string) => call<void>("make_repository", { folder }),
  /** Opens the session's worktree in the file manager. */
  /** The task's worktree, or with "checkout" the person's own folder it lands in. */
  openWorktree: (sessionId: string, which: "worktree" | "checkout" = "worktree") => call<void>("open_worktree", { sessionId, which }),
  /** Puts away a task that ended without a review: recorded as rejected, its worktree and branch
   * removed; with `keepBranch` the branch stays, its work committed on it. */
  discardSession: (sessionId: string, keepBranch = false) => call<void>("discard_session", { sessionId, keepBranch }),
  /** Merges the moved branch into the task's worktree and sends the agent back to resolve it. */
  resolveConflict: (reviewId: string) => call<void>("resolve_conflict", { reviewId }),
  /** Adds (empty id) or edits a comment on lines of a waiting review's diff. */
  commentOnReview: (reviewId: string, comment: ReviewComment) => call<ReviewComment>("comment_review", { reviewId, comment }),
  removeReviewComment: (reviewId: string, commentId: string) => call<void>("remove_review_comment", { reviewId, commentId }),
  /** The waiting review's files (in a plain folder) that are not as its run left them. */
  changedSinceRun: (reviewId: string) => call<ChangedSinceRun[]>("changed_since_run", { reviewId }),
  /** Copies into the person's checkout entries the waiting review names as never landing; nothing there is overwritten. */
  copyIgnored: (reviewId: string, entries: string[]) => call<{ copied: string[]; left: string[]; failed: string[] }>("copy_ignored", { reviewId, entries }),
  /** A reviewed file's whole text, as the run left it ("new") or found it ("old"); null when not text. */
  reviewFile: (reviewId: string, path: string, side: DiffSide) => call<string | null>("review_file", { reviewId, path, side }),
  /** Dismisses an audit finding for this session (recorded). */
  dismissFinding: (sessionId: string, finding: AuditFinding) => call<void>("dismiss_finding", { sessionId, finding }),
  restoreFinding: (sessionId: string, finding: AuditFinding) => call<void>("restore_finding", { sessionId, finding }),
  /** Each task's worktree and its size. */
  worktreeUsage: () => call<WorktreeUsage[]>("worktree_usage"),
  /** Removes decided tasks' worktrees; the bytes freed. */
  cleanUpWorktrees: () => call<number>("clean_up_worktrees"),
  agentPresets: () => call<AgentPreset[]>("agent_presets"),
  /** Starts the agent, introduces Finishline, and says who answered. */
  checkAgent: (agent: ExternalAgent, workspace?: string) => call<AgentCheck>("check_agent", { agent, workspace: workspace ?? null }),
  /** Logs the session's agent in the way it offered (a terminal, a key, `authenticate`); resolves once it is logged in. */
  agentLogin: (sessionId: string, methodId: string, key?: string) => call<void>("agent_login", { sessionId, methodId, key: key ?? null }),
  /** Check for every agent Settings offers: installed, version, logged in. */
  checkAgents: (workspace?: string) => call<AgentStatus[]>("check_agents", { workspace: workspace ?? null }),
  /** Opens the system file picker for an agent's program; null when the person cancels. */
  pickProgram: async (): Promise<string | null> => {
    try {
      const picked = await open({ directory: false, multiple: false, title: "Choose the agent's program" });
      return typeof picked === "string" ? picked : null;
    } catch (e) {
      throw toAppError(e);
    }
  },
  testConnection: (settings: Settings) => call<ConnectionReport>("test_connection", { settings }),
  providerPresets: () => call<ProviderPreset[]>("provider_presets"),
  keyStatus: (provider: ProviderSettings) => call<KeyStatus>("key_status", { provider }),
  saveKey: (provider: ProviderSettings, key: string, place: KeyPlace) => call<KeyStatus>("save_key", { provider, key, place }),
  forgetKey: (provider: ProviderSettings) => call<KeyStatus>("forget_key", { provider }),
  /** Starts the configured MCP servers if needed and lists their tools or failures. */
  mcpStatus: (settings: Settings) => call<McpServerStatus[]>("mcp_status", { settings }),
  /** Asks where in a save dialog the shell shows, and writes there; null when the person cancels. */
  exportSettings: () => call<string | null>("export_settings"),
  /** Asks which file in an open dialog the shell shows; an import that would run new MCP
   * commands waits for confirmImport. */
  importSettings: () => call<ImportOutcome>("import_settings"),
  confirmImport: (accept: boolean) => call<SettingsView | null>("confirm_import", { accept }),
  /** The checkpoint storage of each workspace. */
  checkpointUsage: () => call<StoreUsage[]>("checkpoint_usage"),
  /** Frees what no remaining session of that workspace needs; the bytes freed. */
  freeCheckpoints: (id: string) => call<number>("free_checkpoints", { id }),
  /** How many files the folder holds (up to a limit), and whether it is a home folder or `/`. */
  surveyWorkspace: (path: string) => call<WorkspaceSurvey>("survey_workspace", { path }),
  /** Opens an http(s) link in the system browser, never in the app. */
  openLink: (url: string) => call<void>("open_link", { url }),
  /** Replays the session's events after `afterSeq`, then follows live ones; resolves to the
   * subscription's id, for unsubscribeSession. */
  subscribeSession: (sessionId: string, afterSeq: number, onEvent: (e: Envelope) => void) => {
    // The shell sends events in batches (a replay is a few messages, not thousands).
    const channel = new Channel<Envelope[] | Envelope>();
    channel.onmessage = (m) => (Array.isArray(m) ? m.forEach(onEvent) : onEvent(m));
    return call<number>("subscribe_session", { sessionId, afterSeq, channel });
  },
  /** Ends what subscribeSession started; the view calls it when it closes. */
  unsubscribeSession: (subscription: number) => call<boolean>("unsubscribe_session", { subscription }),
  cancelRun: (sessionId: string) => call<boolean>("cancel_run", { sessionId }),
  /** Runs a plan that waits for the person: as edited, or as made (`null`). */
  runPlan: (sessionId: string, steps: PlanStep[] | null) => call<void>("run_plan", { sessionId, steps }),
  respondPermission: (requestId: string, decision: PermissionDecision) => call<void>("respond_permission", { requestId, decision }),
  answerQuestion: (requestId: string, answer: string | null) => call<void>("answer_question", { requestId, answer }),
  /** `let_go`: with Request changes, the ids of comments found not met that are not sent again. */
  submitReview: (input: { review_id: string; decision: Decision; feedback?: string; revert?: boolean; force?: boolean; overwrite?: string[]; landing?: LandingMode; let_go?: string[] }) =>
    call<ReviewOutcome>("submit_review", { input }),
  /** Undoes, later, what a task rejected in place without a revert changed. */
  /** Undoes a rejected task's changes; `overwrite` is the answer to the files changed since (none: not asked yet). */
  revertRejected: (sessionId: string, overwrite?: string[]) => call<ReviewOutcome>("revert_rejected", { sessionId, overwrite: overwrite ?? null }),
  /** Opens the review of a task that ended without one, as it is (no model is asked). */
  reviewEnded: (sessionId: string) => call<void>("review_ended", { sessionId }),
  sendMessage: (sessionId: string, message: string) => call<void>("send_message", { sessionId, message }),
  listSessions: (filter?: ListFilter) => call<SessionSummary[]>("list_sessions", { filter: filter ?? null }),
  searchSessions: (text: string) => call<SearchHit[]>("search_sessions", { text }),
  /** Per evaluator model: reviews, false-done rate and the sessions behind each number. */
  evaluatorTrust: () => call<EvaluatorTrust[]>("evaluator_trust"),
  agentTrust: () => call<AgentTrust[]>("agent_trust"),
  /** The task once per agent named (`builtin`, `builtin:MODEL`, a preset), side by side; the group and its sessions.
   * `model`: New Task's, when not Settings' own (it judges them when Settings name no evaluator). */
  startAttempts: (task: string, workspace: string, agents: string[], plan?: PlanMode, base?: string | null, model?: string) =>
    call<[string, string[]]>("start_attempts", { task, workspace, agents, plan: plan ?? null, base: base ?? null, model: model ?? null }),
  attemptGroup: (group: string) => call<GroupRanking>("attempt_group", { group }),
  /** The model a comparison of the group asks now: the evaluator in Settings, else the model that
   * judged the attempts when they started; null with no provider set up. */
  attemptJudge: (group: string) => call<string | null>("attempt_judge", { group }),
  attemptDifferences: (group: string) => call<FileDifference[]>("attempt_differences", { group }),
  /** Lands this attempt and rejects the others (their worktrees removed). */
  chooseAttempt: (group: string, sessionId: string, landing?: LandingMode) => call<ReviewOutcome>("choose_attempt", { group, sessionId, landing: landing ?? null }),
  cancelAttempts: (group: string) => call<number>("cancel_attempts", { group }),
  /** Choose none: every attempt rejected and its worktree removed, once none is running. */
  rejectAttempts: (group: string) => call<number>("reject_attempts", { group }),
  /** Asks the evaluator model to compare each attempt with the next; the ranking with its word. */
  compareAttempts: (group: string) => call<Compared>("compare_attempts", { group }),
  /** Stops the comparison under way; the pairs answered are kept. Whether one was under way. */
  stopComparing: (group: string) => call<boolean>("stop_comparing", { group }),
  getSession: (sessionId: string) => call<Timeline>("get_session", { sessionId }),
  exportSession: (sessionId: string, format: "md" | "json") => call<string>("export_session", { sessionId, format }),
  /** Asks where in a save dialog the shell shows, and writes the export there; null when cancelled. */
  saveSessionExport: (sessionId: string, format: "md" | "json") => call<string | null>("save_session_export", { sessionId, format }),
  /** A group of attempts whole: its ranking and choice, then every attempt's session. */
  exportGroup: (group: string, format: "md" | "json") => call<string>("export_group", { group, format }),
  saveGroupExport: (group: string, format: "md" | "json") => call<string | null>("save_group_export", { group, format }),
  /** What stays in the task's repository when it moved away (a clause, with the commands that remove it). */
  deleteSession: (sessionId: string) => call<string | null>("delete_session", { sessionId }),

  perfEnabled: () => call<boolean>("perf_enabled"),
  perfReport: (name: string, value: number) => call<void>("perf_report", { name, value }),
  /** What the app was asked to do at launch (`--open-session ID`, or `--task T --workspace W`). */
  startupAction: () => call<StartupAction | null>("startup_action"),
  /** Where this start kept a history file that was no database, having begun a new one. */
  historySetAside: () => call<string | null>("history_set_aside"),
  /** Asks the model again now, where the session's run waits to retry; whether one waited here. */
  retryNow: (sessionId: string) => call<boolean>("retry_now", { sessionId }),
  /** The sessions this start found cut short (Finishline closed while they ran), still so. */
  interruptedAtStart: () => call<{ id: string; title: string }[]>("interrupted_at_start"),
  onHistoryChanged: (f: () => void): Promise<UnlistenFn> => listen("history-changed", () => f()),
  /** A second launch handed its `--task` / `--open-session` to this window: take it with startupAction. */
  onStartupAction: (f: () => void): Promise<UnlistenFn> => listen("startup-action", () => f()),
  /** The window's close button was pressed while tasks run; the payload is how many. */
  onCloseRequested: (f: (running: number) => void): Promise<UnlistenFn> => listen<number>("close-requested", (e) => f(e.payload)),
  /** A folder (or file) dropped on the window: its path. Resolves to the unlisten function. */
  onPathDropped: async (f: (path: string) => void): Promise<UnlistenFn> => {
    const { getCurrentWebview } = await import("@tauri-apps/api/webview");
    return getCurrentWebview().onDragDropEvent((e) => {
      if (e.payload.type === "drop" && e.payload.paths.length > 0) f(e.payload.paths[0]);
    });
  },
  /** The version and where the data lives. */
  about: () => call<About>("about"),
  /** Quits. With tasks running and `stopRunning` false nothing happens and their count comes
   * back, so the window can ask; with it true they are cancelled first. */
  quit: (stopRunning: boolean) => call<number>("quit", { stopRunning }),
};

export interface EvaluatorTrust {
  model: string;
  reviews: number;
  done_verdicts: number;
  false_done_reviews: number;
  false_done: string[];
  false_done_rate: number | null;
  sent_back: number;
  sent_back_then_approved: string[];
}

/** Reviews a model needs before the review panel shows its false-done rate (store/trust.rs). */
export const TRUST_SHOWN_FROM = 10;

export type About = { version: string; data_dir: string; database: string; settings_file: string; checkpoints_dir: string };

/** The window's own theme: GTK draws dropdown menus and scrollbars itself, so a theme pinned in
 * Settings must reach it too (`null`: the system's). Outside the app it does nothing. */
export async function setWindowTheme(theme: "light" | "dark" | null): Promise<void> {
  const { getCurrentWindow } = await import("@tauri-apps/api/window");
  await getCurrentWindow().setTheme(theme);
}
