// Folds a session's events into what the session view shows. Pure, so it is tested without a
// window and replays and live updates go through the same code.
import type { AuditFinding, AutoApproval, BranchKeptWhy, CheckoutElsewhere, CriterionResult, Decision, DecisionOccasion, ReviewComment, Claim, ClaimWords, LoginMethod, ContinuationSource, NotCopied, OverwrittenCopy, Stuck, Envelope, EndReason, FileChange, Landed, LandingBlock, Phase, PermissionDecision, PlanMode, PlanProjection, PlanStep, RunTrigger, SessionStatus, SessionSummary, Shown, StepState, TaskWorktree, Todo, ToolState, Verdict } from "../ipc";
import { sentence } from "../ipc";

export interface PlanStepView {
  step: PlanStep;
  state: StepState;
  endReason?: EndReason;
  summary?: string;
  /** What later steps need from this one, as the evaluator read it (their briefs carry it). */
  outputData?: string;
  /** Why a replan took this step's place. */
  replacedBecause?: string;
  /** What decided it: its checks (a file, a command) or the evaluator's verdict. */
  decidedBy?: string;
  /** A failed step the manager's revision took over: not a step left undone. */
  superseded?: boolean;
}

/** The session's plan as the engine folded it (see `planView`). */
export interface PlanView {
  mode: PlanMode;
  steps: PlanStepView[];
  revisions: string[];
  current?: number;
  /** "Step n/m" of the running step, counted over the current plan. */
  number?: number;
  of?: number;
  concluded: boolean;
  /** The plan waits for the person to edit, run or cancel it. */
  awaitingReview?: boolean;
  /** The person cancelled it at its go-ahead: none of it ran. */
  declined?: boolean;
  /** The model calls the plan may make, and has made (agent, evaluator, manager). */
  budget?: number;
  spent: number;
  /** Rounds the person's feedback started: each has a budget of its own, and `spent` is the latest's. */
  rounds: number;
  /** What the person changed at its go-ahead: "removed “Write c.txt”; added “Write e.txt”". */
  personEdits?: string;
}

/** The plan's steps as "n of m steps done" counts them (as the engine's `PlanState::counted`):
 * neither replaced, nor a failed step a revision took over. */
export function countedSteps(steps: PlanStepView[]): PlanStepView[] {
  return steps.filter((s) => s.state !== "replaced" && !s.superseded);
}

/** "2 of 3": the counted steps done, of all counted. */
export function stepsDone(steps: PlanStepView[]): string {
  const counted = countedSteps(steps);
  return `${counted.filter((s) => s.state === "done").length} of ${counted.length}`;
}

/** The engine's plan, in the view's terms. */
export function planView(p: PlanProjection): PlanView {
  return {
    mode: p.mode,
    steps: p.steps.map((s) => ({
      step: s.step,
      state: s.state,
      endReason: s.end_reason ?? undefined,
      summary: s.summary ?? undefined,
      outputData: s.output_data ?? undefined,
      replacedBecause: s.replaced_because ?? undefined,
      decidedBy: s.decided_by ?? undefined,
      superseded: s.superseded || undefined,
    })),
    revisions: p.revisions,
    current: p.current ?? undefined,
    number: p.number ?? undefined,
    of: p.of ?? undefined,
    concluded: p.concluded,
    awaitingReview: p.awaiting_review,
    declined: p.declined || undefined,
    budget: p.budget_calls ?? undefined,
    spent: p.spent.agent + p.spent.evaluator + p.spent.manager,
    rounds: p.rounds ?? 0,
    personEdits: p.person_edits ? editsText(p.person_edits) : undefined,
  };
}

function editsText(e: { removed: string[]; added: string[]; changed: string[] }): string | undefined {
  const quoted = (titles: string[]) => titles.map((t) => `“${t}”`).join(", ");
  const said = (
    [
      ["removed", e.removed],
      ["added", e.added],
      ["changed", e.changed],
    ] as const
  )
    .filter(([, titles]) => titles.length > 0)
    .map(([what, titles]) => `${what} ${quoted(titles)}`);
  return said.length > 0 ? said.join("; ") : undefined;
}

export type Item =
  | { kind: "run"; key: string; trigger: string; at: string; said?: boolean; resolving?: boolean; afterCancel?: boolean }
  | { kind: "user"; key: string; text: string }
  | { kind: "assistant"; key: string; text: string; reasoning: string }
  | { kind: "summary"; key: string; text: string }
  | { kind: "tool"; key: string; tool: string; input: unknown; state: ToolState; output?: string; startedAt?: number; endedAt?: number }
  | { kind: "continuation"; key: string; source: ContinuationSource; attempt: number; max: number; remaining: string[]; text: string; messageId?: string }
  | { kind: "evaluation"; key: string; cycle: number; verdict: Verdict; summary: string; remaining: string[]; parseOk: boolean; stuckReason: string | null; question: "done" | "announced_action"; model?: string; judged?: Judged }
  | { kind: "verification"; key: string; command: string; exitCode: number | null; outputTail: string; skipped: boolean; nth: number; of: number; personsOwn: boolean; plans: boolean }
  | { kind: "permission"; key: string; requestId: string; tool: string; input: unknown; reason: string; decision?: PermissionDecision; cancelled?: boolean; verification?: boolean }
  | { kind: "question"; key: string; requestId: string; question: string; answer?: string | null; declined?: boolean; answered: boolean; cancelled?: boolean }
  | { kind: "run_end"; key: string; status: SessionStatus; endReason: EndReason; stuck?: Stuck; why?: string; asItEnded?: boolean }
  | { kind: "plan_step"; key: string; number: number; of: number; title: string }
  | { kind: "plan_revised"; key: string; cause: string; titles: string[] }
  | { kind: "landing"; key: string; text: string; tone: "ok" | "warn"; times?: number }
  /** A run cut short: Finishline closed (or was killed) while it ran. */
  | { kind: "stopped"; key: string }
  /** A review decided, kept in the timeline: the review panel gives way to the next run's. */
  | {
      kind: "decision";
      key: string;
      decision: string;
      by: string;
      occasion?: DecisionOccasion;
      reverted?: Reverted;
      copied?: string[];
      /** What the decided review showed, and the person's comments on it: the record keeps them. */
      reviewId?: string;
      files?: FileChange[];
      comments?: ReviewComment[];
      /** The review showed what changed since an earlier one: its diff is a round's, not the task's. */
      round?: boolean;
      /** Comments found not met that the person let go with their Request changes. */
      letGo?: string[];
    }
  /** The evaluator compared this attempt with another of its group: which it prefers, and why.
   * `shownFirst`: this attempt was "the first" in its sentence. */
  | { kind: "compared"; key: string; other: string; shownFirst: boolean; prefers: "this" | "other" | "neither" | "disagreed"; reason: string; model: string }
  | { kind: "error"; key: string; message: string };

/** What a Reject with revert undid, and what it left because it changed after the agent. */
export interface Reverted {
  restored: string[];
  deleted: string[];
  kept: string[];
  /** The person's version of each file they said to overwrite, and where it is kept. */
  copies: OverwrittenCopy[];
  /** Of `kept`, the files the person said to overwrite whose copy could not be made, and why. */
  notCopied: NotCopied[];
}

export interface Review {
  reviewId: string;
  claim: Claim;
  verdict: Verdict | null;
  endReason: EndReason;
  remaining: string[];
  files: FileChange[];
  verification: string[];
  tokens?: { agent: number; evaluator: number; compaction: number };
  /** What the runs since the session's review before this one used: a later round's own. */
  roundTokens?: { agent: number; evaluator: number; compaction: number };
  costUsd?: number;
  /** `costUsd` of the same round as `roundTokens`. */
  roundCostUsd?: number;
  claimWords?: ClaimWords;
  verdictSummary?: string;
  /** The plan step the verdict was on, when a plan stopped short: not the whole task's. */
  verdictOnStep?: string;
  stuck?: Stuck;
  /** Files left out of checkpoints for their size: revert cannot restore them. */
  notCovered?: string[];
  /** The run worked while its folder could not be recorded: no diff shows its changes, and no revert can undo them. */
  unrecorded?: boolean;
  /** In a worktree, what the run wrote that the repository's ignore rules hide: it never lands. */
  notLanded?: string[];
  /** Changed inside a submodule: the task's branch cannot carry it. */
  inSubmodules?: string[];
  /** Of those, the files the person had copied into their checkout, and those left as they were there. */
  ignoredCopied?: { copied: string[]; left: string[]; failed: string[] };
  /** No claim was made, yet the agent's last words say the work is done ("Done!"). */
  saidDone?: boolean;
  /** `landedKey`: the timeline's note of that landing, not repeated while this panel says it. */
  decided?: { decision: string; by: string; occasion?: DecisionOccasion; reverted?: Reverted; landed?: Landed; landedKey?: string; letGo?: string[] };
  /** Approve could not land the task: why, and the files concerned. The review stays open. */
  blocked?: { reason: LandingBlock; files: string[]; detail: string };
  /** What the audit of the diff found (gamed checks), less what the person dismissed. */
  audit: AuditFinding[];
  /** What the person dismissed for the task: shown apart, and Undo brings it back. */
  dismissed: AuditFinding[];
  /** The last review's comments, as this run's work was found against them. */
  criteria: CriterionResult[];
  autoApprove?: AutoApproval | null;
  /** The person's comments on this review's diff, as they stand. */
  comments: ReviewComment[];
  /** The words the person wrote with Request changes at the review before, which this run answers. */
  asked?: string;
}

/** Where the task works: its own worktree and branch, or the folder itself. */
export interface Place {
  folder: string;
  worktree?: TaskWorktree;
  /** The worktree is gone (landed, rejected, cleaned up). */
  removed?: boolean;
  /** The task's branch, deleted with it (not kept). */
  branchDeleted?: string | null;
  /** Every file the task's branch changes since the worktree started: what Approve lands, also
   * the earlier rounds' files a follow-up's review does not show again. */
  lands?: string[];
  /** In a plain folder: the files the reviews answered with Request changes showed, since the
   * last approval or rejection: a follow-up's review does not show them again. */
  earlier?: string[];
  /** One of those rounds' changes were not recorded: Reject cannot undo them. */
  earlierUnrecorded?: boolean;
  /** A review in this worktree was answered with Request changes: the next one shows only what
   * changed since, and the earlier rounds' files were reviewed then. */
  reviewedBefore?: boolean;
  /** A review in this worktree was approved or rejected: its removal then is that decision's, said
   * with it; one without is a discard, said on its own. */
  decided?: boolean;
  /** The last decision let the agent resolve a landing: the next review's diff is the task's
   * branch against the person's as merged, exactly what lands, not what changed since. */
  resolvingLanding?: boolean;
}

export interface SessionModel {
  lastSeq: number;
  task: string;
  workspace: string;
  model: string;
  /** The workspace's instructions file the run follows (AGENTS.md, …). */
  instructions?: { file: string; truncated: boolean };
  /** The external agent doing the work (ACP), as it introduced itself. */
  agent?: { name: string; version: string | null };
  place?: Place;
  /** Commands the task was started with to check its work, beyond the workspace's own (`--verify`). */
  extraVerify?: string[];
  /** Tools the task was started allowing without asking (`--allow`; `all` for every one). */
  allowed?: string[];
  /** One attempt of a group doing the task side by side. */
  attempt?: { group: string; number: number; of: number; label: string; chosen: boolean };
  /** The person approved an earlier round: that work stays where it landed, whatever this one's
   * status says. */
  approvedBefore?: boolean;
  /** The words of the last Request changes, until the review that answers them. */
  askedAtReview?: string;
  status: SessionStatus;
  statusMessage?: string;
  retry?: { attempt: number; of?: number; nextRetryAt: string; message: string };
  step: number;
  activity?: { phase: Phase; detail: string };
  cycle: { n: number; max: number };
  /** This run began with "Let the agent resolve it": sent back once already, outside the budget. */
  runResolving?: boolean;
  /** The plan step this run is in ("Step n/m"), and whether it ended: an evaluation at the last
   * step judges the whole task with it, and one after a step ended is the final check. */
  planStep?: { number: number; of: number; ended: boolean };
  /** Its worktree was put away with no review deciding it (Discard the work). */
  discarded?: boolean;
  todos: Todo[];
  items: Item[];
  review?: Review;
  endReason?: EndReason;
  tokens: { agent: number; evaluator: number };
  /** The session's totals at its last review: the next review's round is counted from them. */
  reviewedTokens?: { agent: number; evaluator: number; compaction: number };
  /** The manager was asked (for a plan, or whether the task needs one): its tokens are in the
   * evaluator's count. */
  managerAsked?: boolean;
  /** What started the current (or last) run: a plan's step, the task, a follow-up. */
  runTrigger?: RunTrigger;
  /** The current (or last) run started after the session's plan had gone to review: a
   * follow-up, no part of the plan. */
  runAfterPlan?: boolean;
  /** The current (or last) step's timing: when it started, output so far, and when it ended. */
  stepClock?: StepClock;
  /** The run's own clock: from its start (a plan's first step) to its end, whatever the steps. */
  runClock?: { startedAt: number; finishedAt?: number };
  /** When the session last did anything (not what the next start found of a run cut short):
   * where a run's clock stops when Finishline closed while it ran. */
  lastWorkAt?: string;
  /** The timeline item an assistant message's next text goes to: a new one once a tool card or
   * anything else came after it, so the transcript reads in the order the agent worked. */
  segments?: Record<string, string>;
  /** The code of the last error the run reported (`provider_unreachable`, `auth`, …). */
  lastErrorCode?: string;
  plan?: PlanView;
  /** The agent needs a login: what it said and the ways it offers ("Log in to <label>"). */
  login?: { agent: string; label: string; message: string; methods: LoginMethod[] };
}

export interface StepClock {
  startedAt: number;
  lastAt: number;
  /** When the first words came: the wait before them is the model reading its prompt, not
   * writing (a local model reading a long prompt for a minute read as writing 0.5 tok/s). */
  firstAt?: number;
  /** Characters streamed; a token is about four. */
  chars: number;
  /** Output tokens from the provider's usage, once the step finished. */
  outputTokens?: number;
  finishedAt?: number;
}

/** Fewer tokens than this are no measure of a speed: a step that only called a tool. */
const FEW_TOKENS = 8;

/** Tokens per second of a step, from its first words: from usage once it finished, estimated
 * from text while it streams. */
export function tokensPerSecond(c: StepClock): number | null {
  const end = c.finishedAt ?? c.lastAt;
  const secs = (end - (c.firstAt ?? c.startedAt)) / 1000;
  if (secs < 0.5) return null;
  const tokens = c.outputTokens ?? c.chars / 4;
  return tokens >= FEW_TOKENS ? tokens / secs : null;
}

export const emptyModel = (): SessionModel => ({
  lastSeq: 0,
  task: "",
  workspace: "",
  model: "",
  status: "idle",
  step: 0,
  cycle: { n: 0, max: 0 },
  todos: [],
  items: [],
  tokens: { agent: 0, evaluator: 0 },
});

const RUNNING: SessionStatus[] = ["busy", "retry", "queued"];

export function isRunning(m: SessionModel) {
  return RUNNING.includes(m.status) || m.status === "awaiting_approval";
}

/** Applies one event; events at or below `lastSeq` are ignored, so replay and live can overlap. */
export function apply(m: SessionModel, e: Envelope): SessionModel {
  return applyAll(m, [e]);
}

/**
 * Applies a batch of events. The item list is copied once per batch and items are found by key
 * through an index, so replaying a 5k-part session is linear, not quadratic.
 */
export function applyAll(m: SessionModel, batch: Envelope[]): SessionModel {
  if (!batch.some((e) => e.seq > m.lastSeq)) return m;
  const next: SessionModel = { ...m, items: [...m.items] };
  let index: Map<string, number> | null = null;
  const at = (key: string) => {
    if (!index) {
      index = new Map();
      next.items.forEach((it, i) => index!.has(it.key) || index!.set(it.key, i));
    }
    return index.get(key) ?? -1;
  };
  const push = (it: Item) => {
    if (index && !index.has(it.key)) index.set(it.key, next.items.length);
    next.items.push(it);
  };
  // Rare (a note moved to the end): the index is rebuilt when next asked.
  const remove = (i: number) => {
    next.items.splice(i, 1);
    index = null;
  };
  for (const e of batch) {
    if (e.seq <= next.lastSeq) continue;
    next.lastSeq = e.seq;
    step(next, e, at, push, remove);
    if (!foundAtStart(e)) next.lastWorkAt = e.at;
  }
  return next;
}

/** What the next start records of a run cut short (Finishline closed while it ran): dated then,
 * not when the run stopped. */
const foundAtStart = (e: Envelope) => (e.type === "status_changed" && e.status === "interrupted") || (e.type === "tool_call" && e.state === "unknown");

/** One event into a model this batch owns. */
function step(next: SessionModel, e: Envelope, at: (key: string) => number, push: (it: Item) => void, remove: (i: number) => void) {
  const items = () => next.items;
  const find = (key: string, kinds: Item["kind"][]) => {
    const i = at(key);
    return i >= 0 && kinds.includes(next.items[i].kind) ? i : -1;
  };
  const findMsg = (id: string) => find(id, ["assistant", "user"]);
  // The plan is the engine's fold, sent with each event that changes it.
  if (e.plan) next.plan = planView(e.plan);
  switch (e.type) {
    case "plan_revised":
      if (next.plan) push({ kind: "plan_revised", key: `pr-${e.seq}`, cause: e.cause, titles: e.steps.map((s) => s.title) });
      break;
    case "plan_step_finished":
      if (next.planStep) next.planStep = { ...next.planStep, ended: true };
      break;
    case "plan_step_started":
      next.planStep = { number: e.number, of: e.of, ended: false };
      push({ kind: "plan_step", key: `ps-${e.seq}`, number: e.number, of: e.of, title: e.title });
      break;
    case "project_instructions":
      next.instructions = { file: e.file, truncated: e.truncated };
      break;
    case "agent_connected":
      next.agent = { name: e.name, version: e.version ?? null };
      next.login = undefined;
      break;
    case "agent_login_needed":
      next.login = { agent: e.agent, label: e.label, message: e.message, methods: e.methods };
      break;
    case "session_created":
      next.task = e.task;
      next.workspace = e.workspace;
      next.model = e.model;
      break;
    case "model_switched":
      // Asked for in a terminal (`sessions resume --model`): the session works with it from here.
      next.model = e.to;
      push({ kind: "landing", key: `ms-${e.seq}`, text: `Goes on with the model ${e.to} (it was ${e.from}).`, tone: "ok" });
      break;
    case "run_started":
      // "Let the agent resolve it" is answered as a request for changes, in Finishline's words.
      next.runResolving = e.trigger === "feedback" && next.review?.decided?.occasion === "resolve_landing";
      // A resumed run goes on in the step (or the final check) it stopped in.
      if (e.trigger !== "resume") next.planStep = undefined;
      next.discarded = false;
      // The Resume button of a cancelled session starts a run with no words, as Retry after a
      // failure does: it resumes, it does not try again.
      push({ kind: "run", key: `run-${e.seq}`, trigger: e.trigger, at: e.at, resolving: next.runResolving, afterCancel: next.status === "cancelled" || undefined });
      next.runTrigger = e.trigger;
      next.runAfterPlan = !!next.plan?.concluded && !next.plan.declined;
      // After an approval or a rejection the rounds before are settled: a follow-up in the same
      // folder is reviewed afresh, and its undo covers only what it changes.
      if (next.place?.decided) next.place = { ...next.place, decided: false, reviewedBefore: false, earlier: undefined, earlierUnrecorded: undefined };
      // A review opened as the task ended is no new work: the last run's clock, step and failure
      // (with its Retry) stay.
      if (e.trigger === "review") break;
      // Each run counts its own steps from its first: the last run's count is no news.
      next.step = 0;
      // A plan's next step is a new run inside the same stretch of work: the clock goes on.
      if (!next.runClock || next.runClock.finishedAt !== undefined) next.runClock = { startedAt: Date.parse(e.at) };
      next.cycle = { n: 0, max: next.cycle.max };
      next.review = undefined;
      next.endReason = undefined;
      next.lastErrorCode = undefined;
      break;
    case "status_changed": {
      next.status = e.status;
      next.statusMessage = e.message;
      // A run cancelled from elsewhere (a terminal asked the process running it) says so on its
      // end; a failure's words have their own card.
      const last = next.items.length - 1;
      const end = next.items[last];
      // A review asked for that had nothing to show says why the task is as it was.
      if ((e.status === "cancelled" || next.runTrigger === "review") && e.message && end?.kind === "run_end") next.items[last] = { ...end, why: e.message };
      // Cut short with no end of its own: its clock stops at its last work, not at the next
      // start (a resumed run's clock would go on from the old start), and the timeline says so.
      if (e.status === "interrupted") {
        const stoppedAt = Date.parse(next.lastWorkAt ?? e.at);
        if (next.runClock && next.runClock.finishedAt === undefined) next.runClock = { ...next.runClock, finishedAt: Math.max(next.runClock.startedAt, stoppedAt) };
        if (next.stepClock && next.stepClock.finishedAt === undefined) next.stepClock = { ...next.stepClock, finishedAt: Math.max(next.stepClock.startedAt, stoppedAt) };
        push({ kind: "stopped", key: `stop-${e.seq}` });
      }
      next.retry = e.status === "retry" ? { attempt: e.attempt ?? 0, of: e.max_retries, nextRetryAt: e.next_retry_at ?? "", message: e.message ?? "" } : undefined;
      if (!RUNNING.includes(e.status)) next.activity = e.status === "awaiting_approval" || e.status === "awaiting_review" ? { phase: "waiting", detail: "you" } : undefined;
      break;
    }
    case "step_started": {
      next.step = e.step;
      // "Cycle n/max" from the first step: the run's budget comes with every step.
      if (e.cycle) next.cycle = { n: e.cycle.used, max: e.cycle.max };
      const at = Date.parse(e.at);
      next.stepClock = { startedAt: at, lastAt: at, chars: 0 };
      break;
    }
    case "step_finished":
      next.tokens = { ...next.tokens, agent: next.tokens.agent + e.usage.input_tokens + e.usage.output_tokens };
      if (next.stepClock) next.stepClock = { ...next.stepClock, outputTokens: e.usage.output_tokens, finishedAt: Date.parse(e.at) };
      break;
    case "activity":
      next.activity = { phase: e.phase, detail: e.detail };
      break;
    case "message_created":
      if (e.role === "assistant") push({ kind: "assistant", key: e.message_id, text: "", reasoning: "" });
      else if (e.role === "user") {
        // The run this message started is the person's new message, not a Retry's try again
        // (a new worktree's note may come between them).
        let run = next.items.length - 1;
        while (run >= 0 && next.items[run].kind !== "run") run--;
        const last = next.items[run];
        if (last?.kind === "run") next.items[run] = { ...last, said: true };
        push({ kind: "user", key: e.message_id, text: e.text ?? "" });
      }
      else if (e.role === "summary") push({ kind: "summary", key: e.message_id, text: e.text ?? "" });
      // Continuations are shown from their own `continuation` event, as cards; the message that
      // follows it is the one a search hit names, so the card is found by it.
      else if (e.role === "continuation") {
        let at = next.items.length - 1;
        while (at >= 0 && next.items[at].kind !== "continuation") at--;
        const card = next.items[at];
        if (card?.kind === "continuation" && !card.messageId) next.items[at] = { ...card, messageId: e.message_id };
      }
      break;
    case "text_delta":
    case "reasoning_delta": {
      if (next.stepClock && next.stepClock.finishedAt === undefined) {
        const at = Date.parse(e.at);
        next.stepClock = { ...next.stepClock, firstAt: next.stepClock.firstAt ?? at, chars: next.stepClock.chars + e.text.length, lastAt: at };
      }
      let i = findMsg(next.segments?.[e.message_id] ?? e.message_id);
      if (i >= 0 && i < next.items.length - 1) {
        // A tool card (or anything) came after this message's text: what the agent says now
        // follows it, as it happened ("Done!" after the write, not above it).
        const key = `${e.message_id}~${e.seq}`;
        push({ kind: "assistant", key, text: "", reasoning: "" });
        next.segments = { ...next.segments, [e.message_id]: key };
        i = next.items.length - 1;
      }
      if (i >= 0) {
        const it = items()[i] as Extract<Item, { kind: "assistant" }>;
        items()[i] = e.type === "text_delta" ? { ...it, text: it.text + e.text } : { ...it, reasoning: it.reasoning + e.text };
      }
      break;
    }
    case "tool_call": {
      const i = find(e.call_id, ["tool"]);
      if (i >= 0) {
        const it = next.items[i] as Extract<Item, { kind: "tool" }>;
        const at = Date.parse(e.at);
        // The clock starts when the tool starts running (not while it waits for permission).
        const startedAt = e.state === "running" && it.state !== "running" ? at : it.startedAt;
        const endedAt = ["done", "error", "denied"].includes(e.state) ? at : it.endedAt;
        items()[i] = { ...it, state: e.state, output: e.output ?? it.output, input: e.input ?? it.input, startedAt, endedAt };
      } else if (e.tool !== "complete_task" || e.input !== null) {
        push({ kind: "tool", key: e.call_id, tool: e.tool, input: e.input, state: e.state, output: e.output, startedAt: Date.parse(e.at) });
      }
      break;
    }
    case "todos_updated":
      next.todos = e.todos;
      break;
    case "permission_requested":
      push({ kind: "permission", key: e.request_id, requestId: e.request_id, tool: e.tool, input: e.input, reason: e.reason, verification: !e.call_id && e.tool === "run_command" && /verify|check/.test(e.reason) });
      break;
    case "request_cancelled": {
      const i = find(e.request_id, ["permission", "question"]);
      if (i >= 0) items()[i] = { ...next.items[i], cancelled: true } as Item;
      break;
    }
    case "permission_resolved": {
      const i = find(e.request_id, ["permission"]);
      if (i >= 0) items()[i] = { ...(next.items[i] as Extract<Item, { kind: "permission" }>), decision: e.decision };
      break;
    }
    case "question_asked":
      push({ kind: "question", key: e.request_id, requestId: e.request_id, question: e.question, answered: false });
      break;
    case "question_answered": {
      const i = find(e.request_id, ["question"]);
      if (i >= 0) items()[i] = { ...(next.items[i] as Extract<Item, { kind: "question" }>), answer: e.answer, declined: e.declined, answered: true };
      break;
    }
    case "verification":
      push({ kind: "verification", key: `v-${e.seq}`, command: e.command, exitCode: e.exit_code, outputTail: e.output_tail, skipped: e.skipped, nth: e.nth ?? 0, of: e.of ?? 0, personsOwn: e.persons_own ?? false, plans: e.plans ?? false });
      break;
    case "tokens_spent": {
      // Compacting keeps the agent's conversation in its window: counted with the agent's. The
      // manager plans on the evaluator's provider: counted with the evaluator's, as History does.
      const n = e.usage.input_tokens + e.usage.output_tokens;
      next.tokens = e.source === "evaluator" ? { ...next.tokens, evaluator: next.tokens.evaluator + n } : { ...next.tokens, agent: next.tokens.agent + n };
      // Only the manager's calls are spent as the evaluator's outside an evaluation.
      if (e.source === "evaluator") next.managerAsked = true;
      break;
    }
    case "evaluation":
      next.tokens = { ...next.tokens, evaluator: next.tokens.evaluator + e.usage.input_tokens + e.usage.output_tokens };
      push({ kind: "evaluation", key: `e-${e.seq}`, cycle: e.cycle, verdict: e.verdict, summary: e.summary, remaining: e.remaining, parseOk: e.parse_ok, stuckReason: e.stuck_reason, question: e.question ?? "done", model: e.model, judged: judgedOf(next.planStep) });
      break;
    case "continuation":
      if (e.source !== "truncation" && e.source !== "resume" && e.source !== "plan_step") next.cycle = { n: e.attempt, max: e.max };
      push({ kind: "continuation", key: `c-${e.seq}`, source: e.source, attempt: e.attempt, max: e.max, remaining: e.remaining, text: e.text });
      break;
    case "review_requested": {
      const before = next.reviewedTokens;
      const roundTokens = before && e.tokens ? { agent: e.tokens.agent - before.agent, evaluator: e.tokens.evaluator - before.evaluator, compaction: e.tokens.compaction - before.compaction } : undefined;
      if (e.tokens) next.reviewedTokens = e.tokens;
      // The engine's own figure for the round: each review prices the whole session at the
      // prices of its day, so the difference of two was not the round's cost.
      const roundCostUsd = roundTokens ? e.round_cost_usd : undefined;
      next.review = {
        reviewId: e.review_id,
        claim: e.claim,
        verdict: e.verdict,
        endReason: e.end_reason,
        remaining: e.remaining,
        files: e.files_changed,
        verification: e.verification,
        tokens: e.tokens,
        roundTokens,
        costUsd: e.cost_usd,
        roundCostUsd,
        claimWords: e.claim_words,
        verdictSummary: e.verdict_summary,
        verdictOnStep: e.verdict_on_step,
        stuck: e.stuck,
        notCovered: e.not_covered,
        unrecorded: e.unrecorded,
        notLanded: e.not_landed,
        inSubmodules: e.in_submodules,
        audit: e.audit ?? [],
        // Dismissed for the task, not for one round: the next review leaves them out too.
        dismissed: next.review?.dismissed ?? [],
        criteria: e.criteria ?? [],
        asked: next.askedAtReview,
        autoApprove: e.auto_approve,
        comments: [],
        saidDone: e.claim === "none" && saysDone(lastWords(next.items)),
      };
      break;
    }
    case "review_resolved":
      if (e.decision === "approve") next.approvedBefore = true;
      // A plain request answered by the next review; a decision after it has nothing to show.
      next.askedAtReview = e.decision === "request_changes" ? e.feedback?.trim() || undefined : undefined;
      if (next.review && next.review.reviewId === e.review_id) next.review = { ...next.review, blocked: undefined, decided: { decision: e.decision, by: e.by, occasion: e.occasion } };
      // What was copied out of the worktree before the decision stays on its record.
      {
        const reviewed = next.review?.reviewId === e.review_id ? next.review : undefined;
        push({
          kind: "decision",
          key: `dec-${e.review_id}`,
          decision: e.decision,
          by: e.by,
          occasion: e.occasion,
          copied: reviewed?.ignoredCopied?.copied,
          reviewId: e.review_id,
          files: reviewed?.files,
          comments: reviewed?.comments,
          // After "Let the agent resolve it" the review showed the whole landing, not a round.
          round: !!next.place?.reviewedBefore && !next.place.resolvingLanding,
        });
      }
      // The next review in this worktree shows only what changed since: the rest was reviewed.
      // Not an attempt's: it is weighed whole against the others, so its review shows every round.
      if (e.decision === "request_changes" && next.place) {
        const shown = (next.review?.reviewId === e.review_id ? next.review.files : []).map((f) => f.path);
        const earlier = [...new Set([...(next.place.earlier ?? []), ...shown])];
        const earlierUnrecorded = !!next.place.earlierUnrecorded || (next.review?.reviewId === e.review_id && !!next.review.unrecorded);
        next.place = { ...next.place, reviewedBefore: !next.attempt, resolvingLanding: e.occasion === "resolve_landing", earlier, earlierUnrecorded };
      }
      else if (next.place) next.place = { ...next.place, decided: true };
      break;
    case "reverted": {
      const reverted = { restored: e.restored, deleted: e.deleted, kept: e.kept ?? [], copies: e.copies ?? [], notCopied: e.not_copied ?? [] };
      if (next.review?.decided) {
        next.review = { ...next.review, decided: { ...next.review.decided, reverted } };
        const i = find(`dec-${next.review.reviewId}`, ["decision"]);
        if (i >= 0) items()[i] = { ...(next.items[i] as Extract<Item, { kind: "decision" }>), reverted };
      }
      break;
    }
    case "comments_let_go": {
      if (next.review?.reviewId === e.review_id && next.review.decided) next.review = { ...next.review, decided: { ...next.review.decided, letGo: e.comments } };
      const i = find(`dec-${e.review_id}`, ["decision"]);
      if (i >= 0) items()[i] = { ...(next.items[i] as Extract<Item, { kind: "decision" }>), letGo: e.comments };
      break;
    }
    case "review_comment":
      if (next.review?.reviewId === e.review_id) {
        const others = next.review.comments.filter((c) => c.id !== e.comment.id);
        const at = next.review.comments.findIndex((c) => c.id === e.comment.id);
        const comments = at >= 0 ? next.review.comments.map((c) => (c.id === e.comment.id ? e.comment : c)) : [...others, e.comment];
        next.review = { ...next.review, comments };
      }
      break;
    case "review_comment_removed":
      if (next.review?.reviewId === e.review_id) next.review = { ...next.review, comments: next.review.comments.filter((c) => c.id !== e.comment_id) };
      break;
    case "audit_dismissed":
    case "audit_restored": {
      if (!next.review) break;
      const same = (f: AuditFinding) => f.rule === e.rule && f.path === e.path && (f.excerpt ?? "") === (e.excerpt ?? "");
      const [from, to] = e.type === "audit_dismissed" ? [next.review.audit, next.review.dismissed] : [next.review.dismissed, next.review.audit];
      const moved = [...to, ...from.filter(same)];
      const left = from.filter((f) => !same(f));
      next.review = e.type === "audit_dismissed" ? { ...next.review, audit: left, dismissed: moved } : { ...next.review, audit: moved, dismissed: left };
      break;
    }
    case "attempt_started":
      next.attempt = { group: e.group, number: e.number, of: e.of, label: e.label, chosen: false };
      break;
    case "attempt_chosen":
      if (next.attempt) next.attempt = { ...next.attempt, chosen: true };
      break;
    case "task_verify":
      if (e.commands.length > 0) next.extraVerify = e.commands;
      break;
    case "task_allowed":
      if (e.tools.length > 0) next.allowed = e.tools;
      break;
    case "attempts_compared": {
      const shownFirst = e.first === e.session_id;
      const prefers = e.disagreed ? "disagreed" : !e.prefers ? "neither" : e.prefers === e.session_id ? "this" : "other";
      push({ kind: "compared", key: `cmp-${e.seq}`, other: shownFirst ? e.second : e.first, shownFirst, prefers, reason: e.reason, model: e.model });
      break;
    }
    case "task_workspace":
      next.place = { folder: e.folder, worktree: e.worktree ?? undefined };
      break;
    case "task_committed":
      if (e.files_since_start && next.place) next.place = { ...next.place, lands: e.files_since_start };
      break;
    case "worktree_removed":
      // Only the current one: an older worktree's removal can be recorded after a follow-up made a new one.
      if (next.place && next.place.worktree?.folder === e.folder) {
        // Discarded (a task that ended without a review, put away): nothing else says the
        // worktree the header named is gone.
        if (e.why === "rejected" && !next.place.decided) {
          next.discarded = true;
          // An attempt goes with its group (rejected whole, or another chosen), or on its own
          // once the group is decided: "put away" is true of both.
          const how = e.branch_deleted && !next.attempt ? "Discarded" : "Put away";
          const what = e.branch_deleted ? `${how}: its worktree and the branch ${e.branch_deleted} were removed (History keeps what it did)` : `${how}: its worktree was removed`;
          push({ kind: "landing", key: `wd-${e.seq}`, text: `${what}; a message to go on starts a new worktree.`, tone: "ok" });
        }
        next.place = { ...next.place, removed: true, branchDeleted: e.branch_deleted ?? null };
      }
      // Put away when the task stopped having changed nothing: said, since the worktree the
      // header named is gone without a decision.
      if (e.why === "unused") push({ kind: "landing", key: `wu-${e.seq}`, text: `Nothing was changed, so its worktree${e.branch_deleted ? " and branch were" : " was"} removed: a message to go on starts a new one.`, tone: "ok" });
      break;
    case "branch_kept":
      push({
        kind: "landing",
        key: `bk-${e.seq}`,
        text: branchKeptText(e.branch, e.files, e.why ?? "changed_after_review"),
        tone: "ok",
      });
      break;
    case "ignored_copied":
      if (next.review && !next.review.decided) {
        const was = next.review.ignoredCopied ?? { copied: [], left: [], failed: [] };
        next.review = { ...next.review, ignoredCopied: { copied: [...was.copied, ...e.copied], left: [...was.left, ...e.left], failed: [...was.failed, ...(e.failed ?? [])] } };
      }
      break;
    case "landing_blocked":
      if (next.review && !next.review.decided) next.review = { ...next.review, blocked: { reason: e.reason, files: e.files, detail: e.detail } };
      // The review waits for the person again: the landing's last words (a wait for another
      // landing, its checks) would greet the next Approve until that one says its own.
      next.activity = { phase: "waiting", detail: "you" };
      {
        // Tried again and blocked the same way: one note that counts, not a pile of the same,
        // also with what a try adds between (the checks' output, another landing note); it moves
        // after that, where the latest try ended. Anything else between (a run) starts anew.
        const text = `Not landed: ${e.detail}`;
        let i = next.items.length - 1;
        while (i >= 0 && (next.items[i].kind === "verification" || next.items[i].kind === "landing") && !(next.items[i].kind === "landing" && (next.items[i] as { text: string }).text === text)) i--;
        const same = i >= 0 ? next.items[i] : undefined;
        if (same?.kind === "landing" && same.text === text) {
          remove(i);
          push({ ...same, times: (same.times ?? 1) + 1 });
        } else push({ kind: "landing", key: `lb-${e.seq}`, text, tone: "warn" });
      }
      break;
    case "rebased":
      {
        // Named: "the branch" reads as the task's own.
        const on = next.place?.worktree?.base_branch;
        push({ kind: "landing", key: `rb-${e.seq}`, text: `${on ? `“${on}”` : "Your branch"} moved on while the task ran: the task's commits were moved on top of it (rebased), to land there.`, tone: "ok" });
      }
      break;
    case "landed": {
      // Landed after a rebase with nothing run again on the result: said, as "rebased and
      // checked again" is what a person expects of a moved branch.
      let rebased = next.items.length - 1;
      while (rebased >= 0 && !(next.items[rebased].kind === "landing" && next.items[rebased].key.startsWith("rb-"))) rebased--;
      // (Only this landing's rebase: one an earlier round landed after is said already.)
      if (rebased >= 0 && !next.items.slice(rebased).some((it) => it.kind === "verification" || (it.kind === "landing" && it.key.startsWith("ld-")))) {
        const note = next.items[rebased] as Extract<Item, { kind: "landing" }>;
        next.items[rebased] = { ...note, text: `${note.text} ${capitalised(NOTHING_RAN_AGAIN)}.` };
      }
      const landed: Landed = { mode: e.mode, target_branch: e.target_branch ?? null, commit: e.commit ?? null, branch_kept: e.branch_kept ?? null, files: e.files, checkout_elsewhere: e.checkout_elsewhere };
      if (next.review?.decided) next.review = { ...next.review, decided: { ...next.review.decided, landed, landedKey: `ld-${e.seq}` } };
      push({ kind: "landing", key: `ld-${e.seq}`, text: landedText(landed, next.review?.files.length ?? 0), tone: "ok" });
      break;
    }
    case "run_finished":
      // A plan step's run ends with the session still busy: the plan goes on.
      if (e.status !== "busy") next.endReason = e.end_reason;
      if (e.status !== "busy" && next.runClock && next.runClock.finishedAt === undefined) next.runClock = { ...next.runClock, finishedAt: Date.parse(e.at) };
      push({ kind: "run_end", key: `end-${e.seq}`, status: e.status, endReason: e.end_reason, stuck: e.stuck, asItEnded: next.runTrigger === "review" || undefined });
      break;
    case "error":
      next.lastErrorCode = e.code;
      push({ kind: "error", key: `err-${e.seq}`, message: sentence(e.message) });
      break;
  }
}

/** The agent's last words in the current run: the text of its latest message that has any. */
function lastWords(items: Item[]): string {
  for (let i = items.length - 1; i >= 0; i--) {
    const it = items[i];
    if (it.kind === "run") break;
    if (it.kind === "assistant" && it.text.trim()) return it.text;
  }
  return "";
}

const DONE_SENTENCE = [
  // "Done!", "All done.", "Finished", "Task complete."
  /^(all |everything('s| is) )?(done|finished|complete|completed)$/,
  /^(the |this |your )?(task|work|job|change|changes)( is| has been| was| are| have been)? (now )?(done|complete|completed|finished)$/,
  // "The task is done.", "It's finished now", "Everything is complete"
  /^(it|that|everything|all|the (task|work|job|file|files|change|changes))( is|'s| has been| was| are| have been) (now )?(all )?(done|complete|completed|finished)( now)?$/,
  // "I have completed the task", "I've finished everything"
  /^i( have|'ve)? (now )?(finished|completed|done)( (the|this|your) (task|work|job|request)| everything| it| all of it)?( now)?$/,
];

/** Whether words read as the agent saying it finished ("Done!", "The task is complete."),
 * judged on its last few sentences, and never when they are negated ("not done yet"). The same
 * rule as the engine's `judge::said_done`, which counts such a claim refused as a false one. */
export function saysDone(text: string): boolean {
  const sentences = text
    .toLowerCase()
    .replace(/[*_`#>]/g, "")
    .split(/(?<=[.!?])\s+|\n+/)
    .map((s) => s.trim().replace(/[.!?:;,\s]+$/, "").replace(/^[-•\s]+/, ""))
    .filter((s) => s.length > 0)
    .slice(-3);
  return sentences.some((s) => !/\bnot\b|n't|\bnever\b|\balmost\b|\bnearly\b|\byet\b/.test(s) && DONE_SENTENCE.some((re) => re.test(s.replace(/^(great|ok|okay|alright|perfect|there)[,!]?\s+/, ""))));
}

/** "Landed on main as 1a2b3c4 (2 files)": what approve did, in the words the window uses.
 * `reviewed`: how many files the review showed changed; none landing then means the branch
 * already held them (it moved on with the same change), not that the task changed nothing. */
/** Why the person's folder shows none of a landed task's work (the engine's `CheckoutElsewhere::words`). */
function elsewhereText(at: CheckoutElsewhere, target: string): string {
  return `Your checkout is on ${at === "no_branch" ? "no branch" : at.branch}, so its files did not change: \`git switch ${target}\` shows the task's work.`;
}

/** Said of a rebase when the workspace names no check to run again on it. */
const NOTHING_RAN_AGAIN = "no check command is set for this workspace, so nothing was run again on the result";
const capitalised = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

/** A landing that rebased the task onto its moved branch first (the CLI says it as it happens:
 * the rebase, then each check run again). */
function rebasedText(checks: number, target: string): string {
  const ran = checks === 0 ? NOTHING_RAN_AGAIN : checks === 1 ? "the workspace's check passed again on the result" : `the workspace's ${checks} checks passed again on the result`;
  return `${target} had moved on since the task started: the task was rebased onto it first, and ${ran}.`;
}

export function landedText(l: Landed, reviewed = 0): string {
  const files = `${l.files.length} file${l.files.length === 1 ? "" : "s"}`;
  if (l.files.length === 0 && !l.branch_kept && reviewed > 0) return `Nothing to land: ${l.target_branch ?? "the branch"} already holds everything the task changed.`;
  if (l.files.length === 0 && !l.branch_kept) return "Nothing to land: the task left every file git tracks as it was.";
  if (l.commit && l.target_branch)
    return `Landed on ${l.target_branch} as ${l.commit.slice(0, 7)} (${files}).${l.rebased ? ` ${rebasedText(l.rebased.checks_run, l.target_branch)}` : ""}${l.checkout_elsewhere ? ` ${elsewhereText(l.checkout_elsewhere, l.target_branch)}` : ""}`;
  if (l.target_branch) return `The changes are in your working tree on ${l.target_branch}, not committed (${files}).`;
  if (l.branch_kept) return `Kept the task's branch ${l.branch_kept} for later: \`git merge ${l.branch_kept}\` on the branch you want it on takes it.`;
  return "Nothing to land.";
}

export const SOURCE_LABEL: Record<ContinuationSource, string> = {
  truncation: "The answer was cut off",
  todo_gate: "Open todo items",
  missing_completion: "No completion claim",
  missing_action: "Left undone: announced or asked for",
  verification: "Verification failed",
  evaluator: "Evaluator",
  step_checks: "The step's checks, without a model",
  resume: "Told to go on",
  plan_step: "The step's brief",
  landing_conflict: "Resolve the conflict with the moved branch",
  review_comments: "Your comments on the diff",
  new_worktree: "A new worktree",
  conflict_markers: "Conflict markers left in the merge",
};

/** A step's summary, unless it only repeats how the step ended ("ended: conversation"). */
export function stepSummary(summary: string | undefined, endReason: EndReason | undefined): string | undefined {
  return summary && endReason && summary === `ended: ${endReason}` ? undefined : summary;
}

/** A plan step's state as its badge says it, in the plan panel and in the review's list alike.
 * A skipped step was never run: the plan stopped first (failed, its budget spent, refused). */
export const STEP_STATE_LABEL: Record<StepState, string> = { pending: "Pending", running: "Running", done: "Done", failed: "Failed", skipped: "Not run", replaced: "Replaced" };

/** A step's summary beside how it ended, unless its decided-by line says it already ("a.txt
 * exists" beside "Checked without a model: a.txt exists ✓" said the criterion a third time). */
export function stepSummaryBeside(summary: string | undefined, endReason: EndReason | undefined, decidedBy: string | undefined): string | undefined {
  const s = stepSummary(summary, endReason);
  // Equal, the decided-by line is the one left out (the panel shows one of them).
  return s && decidedBy && decidedBy.trim() !== s.trim() && decidedBy.includes(s.trim()) ? undefined : s;
}

/** What decided a step, as a sentence: its own checks, or how its run ended, or the evaluator. */
export function decidedByText(d: string): string {
  // The tick or cross stays with the word before it: alone on a line it read as a stray mark.
  if (d.startsWith("checked without a model")) return `Checked without a model${d.slice("checked without a model".length)}`.replace(/ ([✓✗])/g, "\u00a0$1");
  const ended = /^the run ended (.+)$/.exec(d);
  const reason = ended?.[1].replace(/ /g, "_") as EndReason | undefined;
  if (reason && END_LABEL[reason]) return `Decided by how its run ended: ${END_LABEL[reason]}`;
  return `Decided by ${d}`;
}

/** Stuck patterns in plain words. */
export const STUCK_LABEL: Record<string, string> = {
  same_action_same_observation: "the same action with the same result 4 times",
  same_action_error: "the same action failing 3 times",
  identical_messages: "the same message 3 times in a row",
  alternation: "alternating between two actions",
  repeated_compaction: "compacting again with nothing in between",
  empty_responses: "3 empty responses in a row",
  same_verification_failure: "the same verification failure twice",
  remaining_unchanged: "the same things found left twice in a row",
  evaluator_stuck: "the evaluator judged the agent stuck",
  repeating_output: "one answer repeating itself over and over",
};

/** An attempt rejected because the person landed another of its group. */
export const NOT_CHOSEN = "Not chosen";

/** An answer the evaluator could not check (it gave nothing usable): not a plain idle one. */
export const answerUnchecked = (status: SessionStatus, endReason: EndReason | null | undefined) => status === "idle" && endReason === "conversation_unchecked";

/** A task decided with its work left on its branch (kept at approve, or on a reject or a put-away
 * that asked to keep it): its badge says "Branch kept", in the sidebar and the session alike. */
export function keptBranchTitle(status: SessionStatus, branch: string, discarded = false): string {
  if (status === "completed") return `Approved; its work waits on ${branch}, not landed: merge it when you like`;
  // Put away with no review (Keep only its branch): nobody refused it.
  return `${discarded ? "Put away without a review" : "Rejected"}; its work waits on ${branch}: merge it when you like, or delete it`;
}

/** A task put away with no review (Discard the work): stored rejected, but nobody refused it. */
export const DISCARDED_TITLE = "Put away without a review: its worktree and branch were removed; History keeps what it did";

/** A listed task stored rejected with no review refusing it: discarded, not rejected. */
export function wasDiscarded(status: SessionStatus, decision: Decision | null | undefined): boolean {
  return status === "rejected" && decision !== "reject";
}

/** What a listed session's badge says, with its hover text and its colour: the sidebar's and the
 * command palette's, so the two never name one task's state differently. `notChosen`: an attempt
 * set aside for the one the person chose; `groupChosen`: its group has a chosen attempt. */
export function listedState(s: SessionSummary, notChosen = false, groupChosen = false): { word: string; title?: string; className: string } {
  // An attempt is put away with its group (rejected), until one is chosen: after that it is a
  // task like any other, which the person may send on and discard.
  // Set aside for the chosen one is "Not chosen", whatever else holds (as History's filter).
  const discarded = !notChosen && (!s.attempt || groupChosen) && wasDiscarded(s.status, s.decision);
  // Its work waits on a branch for a merge by hand: not done as one that landed.
  if (s.branch && !s.work_dir && (s.status === "completed" || s.status === "rejected") && !notChosen) {
    return { word: SHOWN_LABEL.branch_kept, title: keptBranchTitle(s.status, s.branch, discarded), className: "badge-kept" };
  }
  if (discarded) return { word: SHOWN_LABEL.discarded, title: DISCARDED_TITLE, className: "badge-cancelled" };
  if (notChosen) return { word: NOT_CHOSEN, className: "badge-not-chosen" };
  if (answerUnchecked(s.status, s.end_reason)) return { word: SHOWN_LABEL.not_checked, title: UNCHECKED_TITLE, className: "badge-unchecked" };
  if (reviewInDoubt(s.status, s.end_reason)) return { word: END_LABEL[s.end_reason], title: doubtTitle(s.status, s.end_reason), className: `badge-${s.status} badge-doubt` };
  // "Rejected" alone reads as if the work that landed before had been thrown away too.
  if (s.status === "rejected" && s.approvals > 0) return { word: "Follow-up rejected", title: APPROVED_BEFORE_TITLE, className: "badge-rejected" };
  return { word: STATUS_LABEL[s.status], className: `badge-${s.status}` };
}

export const APPROVED_BEFORE_TITLE = "You approved an earlier round of this task; that work stays where it landed. Only the last round was rejected.";

/** The branch a decided task's work waits on: its worktree removed and its branch not. */
export function keptBranch(m: Pick<SessionModel, "status" | "place">): string | undefined {
  const p = m.place;
  if (!p?.worktree || !p.removed || p.branchDeleted) return undefined;
  return m.status === "completed" || m.status === "rejected" ? p.worktree.branch : undefined;
}

/** What a "Not checked" badge says on hover. */
export const UNCHECKED_TITLE = "Answered, not checked: the evaluator gave no usable answer";

/**
 * A review of work not verified done (stuck, out of budget, said blocked): its badge says how
 * the run ended, so it never reads like one of verified work.
 */
export function reviewInDoubt(status: SessionStatus, endReason: EndReason | null | undefined): endReason is EndReason {
  return status === "awaiting_review" && !!endReason && endReason !== "verified_done";
}

/** 950, 12.3k, 1.2M: a glance, not an invoice. */
export function formatTokens(n: number): string {
  if (n < 1000) return String(n);
  if (n < 1_000_000) return `${(n / 1000).toFixed(n < 10_000 ? 1 : 0)}k`;
  return `${(n / 1_000_000).toFixed(1)}M`;
}

/** What a badge says in place of the stored status where that alone would mislead. */
export const SHOWN_LABEL: Record<Exclude<Shown, SessionStatus>, string> = { discarded: "Discarded", branch_kept: "Branch kept", not_checked: "Not checked", not_chosen: NOT_CHOSEN };

/** A session's state as its badge names it (History's filter lists them so). */
export const shownLabel = (f: Shown): string => (f in SHOWN_LABEL ? SHOWN_LABEL[f as keyof typeof SHOWN_LABEL] : STATUS_LABEL[f as SessionStatus]);

export const STATUS_LABEL: Record<SessionStatus, string> = {
  idle: "Idle",
  queued: "Queued",
  busy: "Working",
  retry: "Retrying",
  awaiting_approval: "Waiting for you",
  awaiting_review: "Ready for review",
  completed: "Completed",
  rejected: "Rejected",
  failed: "Failed",
  cancelled: "Cancelled",
  interrupted: "Interrupted",
};

/** What a badge of a review in doubt says on hover. */
export function doubtTitle(status: SessionStatus, endReason: EndReason): string {
  return `${STATUS_LABEL[status]}: ${END_LABEL[endReason]}, not verified done`;
}

/** What a plan's evaluation judged, beyond its step: the last step is judged with the whole task,
 * and after it the final check judges the whole task alone. */
export type Judged = "last_step_and_whole" | "whole";

function judgedOf(step: SessionModel["planStep"]): Judged | undefined {
  if (!step) return undefined;
  if (step.ended) return "whole";
  return step.number === step.of ? "last_step_and_whole" : undefined;
}

/** The divider a run starts with in the timeline. */
export function runLabel(run: Extract<Item, { kind: "run" }>): string {
  switch (run.trigger) {
    case "task":
      return "Task";
    case "feedback":
      return run.resolving ? "Resolving the landing" : "Your feedback";
    case "resume":
      return "Resumed";
    case "review":
      return "Review of the task as it ended";
    default:
      // Retry after a failure starts a run with no words of the person's; so does Resume after
      // a cancel.
      return run.said ? "New message" : run.afterCancel ? "Resumed" : "Tried again";
  }
}

export const END_LABEL: Record<EndReason, string> = {
  verified_done: "Verified done",
  unverified: "Not verified",
  claimed_blocked: "Agent says blocked",
  claimed_partial: "Agent says partly done",
  stuck: "Stuck",
  // Short enough for a badge, in words, not the setting's name (the continuation budget).
  cycles_exhausted: "Out of tries",
  truncation_exhausted: "Kept getting cut off",
  step_limit: "Step limit reached",
  agent_turn_limit: "Agent stopped at its own limit",
  permission_denied: "Permission denied",
  question_declined: "Question declined",
  conversation: "Answered",
  conversation_unchecked: "Answered, not checked",
  cancelled: "Cancelled",
  failed: "Failed",
  plan_failed: "Plan failed",
  plan_budget_spent: "Plan budget spent",
};

/** The note a kept branch leaves in the transcript: why it stayed, and how its work is taken. */
export function branchKeptText(branch: string, files: string[], why: BranchKeptWhy): string {
  const which = files.length > 0 ? ` (${files.join(", ")})` : "";
  if (why === "asked") return `Kept the branch ${branch} with the task's work${which}, as you asked: \`git merge ${branch}\` on the branch you want it on takes it.`;
  if (why === "edited_during_task") return `Kept the branch ${branch}: it holds files someone changed while the task worked or while Finishline was closed, perhaps you${which}.`;
  if (why === "changed_after_task") return `Kept the branch ${branch}: it holds work Finishline did not make, such as commits of yours or the agent's own, or what changed in the worktree after the task ended${which}.`;
  return `Kept the branch ${branch}: it holds what changed in the worktree after the review${which}.`;
}
