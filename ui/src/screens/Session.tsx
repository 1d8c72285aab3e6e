import type { SettingsField } from "./Settings";
import { isTextField } from "../keys";
import { AgentLogin } from "../components/AgentLogin";
import { editDiff, outputTail, summarizeTool } from "../session/cardSummary";
import { watchFrames, report } from "../perf";
import { createContext, memo, useCallback, useContext, useEffect, useMemo, useReducer, useRef, useState } from "react";
import { ReplayBar } from "../components/ReplayBar";
import { advance, startReplay, type Replay } from "../session/replay";
import { useVirtualizer } from "@tanstack/react-virtual";
import { ArrowDown, Bot, ChevronRight, CircleCheck, CircleSlash, CircleX, ListChecks, MessageSquare, Play, RefreshCw, Scale, ShieldQuestion, SquareTerminal, User, Wrench } from "lucide-react";
import { AppError, ipc, type ContinuationSource, type Envelope } from "../ipc";
import { activityText } from "../session/activity";
import { Markdown } from "../components/Markdown";
import { planEdited, PlanReview } from "../components/PlanReview";
import { DecidedDiff, decisionText, ReviewPanel } from "../components/ReviewPanel";
import { StatusBadge } from "../components/StatusBadge";
import { applyAll, decidedByText, emptyModel, END_LABEL, formatTokens, isRunning, keptBranch, runLabel, SOURCE_LABEL, STEP_STATE_LABEL, stepSummaryBeside, STUCK_LABEL, tokensPerSecond, type Item, type PlanView, type SessionModel, type StepClock } from "../session/model";
import { planStrip } from "../session/planStrip";
import { foldRepeats, type Shown, type ToolRun } from "../session/fold";
import { cutAtWords, FoundKey, FoundWords, useReveal, type RevealTarget } from "../session/reveal";
import { ConfirmCancel } from "../components/ConfirmCancel";
import { ConfirmDiscard } from "../components/ConfirmDiscard";
import { Ticks } from "../components/Ticks";
import { useOneAction } from "../oneAction";
import { useWindowDraft } from "../windowDraft";
import { ErrorLine } from "../components/ErrorLine";

/** How often a replay moves on. */
const REPLAY_TICK_MS = 50;

function reducer(m: SessionModel, batch: Envelope[]): SessionModel {
  return applyAll(m, batch);
}


function pretty(v: unknown) {
  try {
    return JSON.stringify(v, null, 2);
  } catch {
    return String(v);
  }
}

/** Notes that go with a run the person started (a follow-up in a new worktree, a restart, a
 * conflict they asked to resolve): Finishline told the agent something; it did not send it back. */
const TOLD_ONLY: ReadonlySet<ContinuationSource> = new Set(["new_worktree", "resume", "landing_conflict"]);

function ToolCard({ item }: { item: Extract<Item, { kind: "tool" }> }) {
  const [open, setOpen] = useState(false);
  const secs = item.startedAt !== undefined && item.endedAt !== undefined && !Number.isNaN(item.startedAt) && !Number.isNaN(item.endedAt) ? Math.max(0, (item.endedAt - item.startedAt) / 1000) : undefined;
  const summary = summarizeTool(item.tool, item.input, item.state, item.output, secs);
  const diff = item.state === "done" ? editDiff(item.tool, item.input) : undefined;
  return (
    <div className={`card tool tool-${item.state} tone-${summary.tone}`} data-testid="tool-card" data-tool={item.tool} data-state={item.state}>
      <button className="card-head" onClick={() => setOpen(!open)} aria-expanded={open} title={item.tool}>
        <ChevronRight size={14} className={open ? "rot" : undefined} aria-hidden />
        {item.tool === "run_command" ? <SquareTerminal size={14} aria-hidden /> : <Wrench size={14} aria-hidden />}
        <span className="tool-summary" data-testid="tool-summary">
          {summary.text}
        </span>
        {summary.reason && <span className="tool-reason">{summary.reason}</span>}
      </button>
      {open && (
        <div className="card-body">
          {diff !== undefined ? (
            <pre className="output diff" data-testid="tool-diff">
              {diff.split("\n").map((l, n) => (
                <span key={n} className={l.startsWith("+") ? "add" : l.startsWith("-") ? "del" : undefined}>
                  {l}
                </span>
              ))}
            </pre>
          ) : (
            <pre className="output">{pretty(item.input)}</pre>
          )}
          {item.output !== undefined && <pre className="output">{item.tool === "run_command" ? outputTail(item.output) : item.output}</pre>}
        </div>
      )}
    </div>
  );
}

/** The same call made again and again, as one card: "Listed the workspace ×40". */
function ToolRunCard({ run }: { run: ToolRun }) {
  const [open, setOpen] = useState(false);
  const first = run.items[0];
  const summary = summarizeTool(first.tool, first.input, first.state, first.output);
  return (
    <div className={`card tool tool-run tool-${first.state} tone-${summary.tone}`} data-testid="tool-run" data-tool={first.tool} data-count={run.items.length}>
      <button className="card-head" onClick={() => setOpen(!open)} aria-expanded={open} title={`${first.tool}, the same call ${run.items.length} times in a row`}>
        <ChevronRight size={14} className={open ? "rot" : undefined} aria-hidden />
        {first.tool === "run_command" ? <SquareTerminal size={14} aria-hidden /> : <Wrench size={14} aria-hidden />}
        <span className="tool-summary" data-testid="tool-summary">
          {summary.text}
        </span>
        <span className="tag repeat-count" data-testid="repeat-count">
          ×{run.items.length}
        </span>
      </button>
      {open && (
        <div className="card-body">
          {run.items.map((it) => (
            <ToolCard key={it.key} item={it} />
          ))}
        </div>
      )}
    </div>
  );
}

/** An item of the timeline, or a run of identical tool calls folded into one card. */
function ShownItem({ shown }: { shown: Shown }) {
  return shown.kind === "tool_run" ? <ToolRunCard run={shown} /> : <TimelineItem item={shown} />;
}

/** A prompt the run waits on takes the keys when it appears, unless the person is at something
 * else (a field, a button): after the last answer the focus fell to the page with its card. */
function useTakesFocus<T extends HTMLElement>() {
  const first = useRef<T>(null);
  useEffect(() => {
    const at = document.activeElement;
    if (!at || at === document.body || at.matches("main.content")) first.current?.focus();
  }, []);
  return first;
}

function Permission({ item }: { item: Extract<Item, { kind: "permission" }> }) {
  const [error, setError] = useState<string | null>(null);
  const one = useOneAction(setError);
  const sending = one.busy !== null;
  const answer = (d: "allow_once" | "allow_session" | "deny") => void one.run(d, () => ipc.respondPermission(item.requestId, d));
  // The card, not "Allow once", takes the focus: a Space or Enter meant for scrolling the
  // timeline must not run a command. Tab reaches the answers.
  const card = useTakesFocus<HTMLDivElement>();
  const waiting = !item.cancelled && !item.decision;
  return (
    <div
      ref={waiting ? card : undefined}
      tabIndex={waiting ? -1 : undefined}
      role="group"
      aria-label={`${item.verification ? "Run this check command with" : "Allow"} ${item.tool}?`}
      className="card permission"
      data-testid="permission-prompt"
    >
      <div className="card-head static">
        {/* One flex item: the head's gap would set the question mark apart. */}
        <ShieldQuestion size={14} aria-hidden />{" "}
        <span>
          {/* Who named it (the agent, or the plan as a step's check) is the reason's first words. */}
          {item.verification ? "Run this check command with" : "Allow"} <code>{item.tool}</code>?
        </span>
      </div>
      <div className="card-body">
        <pre className="output">{pretty(item.input)}</pre>
        <p className="muted">{item.reason}</p>
        {item.cancelled ? (
          <p className="muted" data-testid="permission-decision">Cancelled: the run stopped before you answered.</p>
        ) : item.decision ? (
          <p data-testid="permission-decision">{item.decision === "deny" ? "Denied" : item.decision === "allow_session" ? "Allowed for this session" : "Allowed once"}</p>
        ) : (
          <div className="actions start">
            <button className="btn primary" onClick={() => answer("allow_once")} disabled={sending} data-testid="allow-once">
              Allow once
            </button>
            <button
              className="btn"
              onClick={() => answer("allow_session")}
              disabled={sending}
              data-testid="allow-session"
              title={`${item.input && typeof item.input === "object" && "command" in item.input ? "This command, as written," : "This tool"} is allowed without asking again in this session's later runs too: its follow-ups, and a resume from a script, where nobody watches`}
            >
              Allow for this session
            </button>
            <button className="btn danger" onClick={() => answer("deny")} disabled={sending} data-testid="deny">
              Deny
            </button>
          </div>
        )}
        {error && <p className="field-error">{error}</p>}
      </div>
    </div>
  );
}

function Question({ item }: { item: Extract<Item, { kind: "question" }> }) {
  const [text, setText] = useWindowDraft(`finishline.answerDraft.${item.requestId}`);
  const [error, setError] = useState<string | null>(null);
  const one = useOneAction(setError);
  const sending = one.busy !== null;
  const send = (a: string | null) =>
    void one.run("answer", async () => {
      await ipc.answerQuestion(item.requestId, a);
      setText("");
    });
  const first = useTakesFocus<HTMLInputElement>();
  return (
    <div className="card question" data-testid="question">
      <div className="card-head static">
        <ShieldQuestion size={14} aria-hidden /> The agent asks
      </div>
      <div className="card-body">
        <p>{item.question}</p>
        {item.cancelled ? (
          <p className="muted" data-testid="question-cancelled">Cancelled: the run stopped before you answered.</p>
        ) : item.answered ? (
          <p className="muted">{item.declined ? "You declined to answer." : `You answered: ${item.answer}`}</p>
        ) : (
          <div className="row">
            <input
              ref={first}
              value={text}
              onChange={(e) => setText(e.target.value)}
              onKeyDown={(e) => {
                if (e.key === "Enter" && !e.shiftKey && !e.nativeEvent.isComposing && text.trim()) {
                  e.preventDefault();
                  send(text);
                }
              }}
              placeholder="Your answer"
              aria-label="Your answer"
            />
            <button className="btn primary" disabled={!text.trim() || sending} onClick={() => send(text)}>
              Answer
            </button>
            <button className="btn" disabled={sending} onClick={() => send(null)}>
              Decline
            </button>
          </div>
        )}
        {error && <p className="field-error">{error}</p>}
      </div>
    </div>
  );
}

// Items keep their identity until an event changes them, so memo skips re-rendering (and
// re-parsing the Markdown of) everything but the item that is streaming.
/** The names of the attempts of this session's group, by session: the evaluator's comparison
 * names the other attempt. */
/** Past this, the person's words (a pasted log, a long spec) are folded to their start. */
const FOLD_LINES = 40;
const FOLD_CHARS = 6000;

/** The person's own words as they wrote them, line breaks kept (never Markdown: they are shown,
 * not interpreted); a long paste is folded until asked for. */
function PersonWords({ text, marks }: { text: string; marks?: string[] }) {
  const [all, setAll] = useState(false);
  const lines = text.split("\n");
  const long = lines.length > FOLD_LINES || text.length > FOLD_CHARS;
  const shown = long && !all ? lines.slice(0, 30).join("\n").slice(0, 4000) : text;
  const top = useRef<HTMLDivElement>(null);
  const folded = useRef(false);
  const toggle = () => {
    folded.current = all;
    setAll((a) => !a);
  };
  // Folded from the foot of a long text, the view would be left far below it: its start is
  // brought into view once it is short again.
  useEffect(() => {
    if (!all && folded.current) top.current?.scrollIntoView?.({ block: "nearest" });
    folded.current = false;
  }, [all]);
  const button = (
    <button type="button" className="link-btn small" onClick={toggle} aria-expanded={all}>
      {all ? "Show less" : lines.length > FOLD_LINES ? `Show all ${lines.length.toLocaleString("en")} lines` : `Show all ${text.length.toLocaleString("en")} characters`}
    </button>
  );
  return (
    <div ref={top}>
      {/* Unfolded, the way back is at the top too, not only 300 lines down. */}
      {long && all && button}
      <div className="person-words">
        {marks ? cutAtWords(shown, marks).map((part, i) => (part.found ? <mark key={i}>{part.text}</mark> : part.text)) : shown}
        {long && !all ? "…" : ""}
      </div>
      {long && button}
    </div>
  );
}

const AttemptNames = createContext<Record<string, string>>({});

/** The mark and the focus a search hit's message gets (see session/reveal.ts). */
function foundMark(found: string | null, key: string) {
  return found === key ? { "data-found": "", tabIndex: -1 } : {};
}

const TimelineItem = memo(function TimelineItem({ item }: { item: Item }) {
  const names = useContext(AttemptNames);
  const found = useContext(FoundKey);
  const words = useContext(FoundWords);
  const marks = found === item.key ? words : undefined;
  switch (item.kind) {
    case "run":
      // A plan step's run is introduced by its own "Step n/m" divider.
      if (item.trigger === "plan_step") return null;
      return <div className="divider">{runLabel(item)}</div>;
    case "user":
      return (
        <div className="bubble user" data-role="user" data-testid="user-bubble" data-key={item.key} {...foundMark(found, item.key)}>
          <User size={14} aria-hidden />
          <PersonWords text={item.text} marks={marks} />
        </div>
      );
    case "assistant":
      if (!item.text && !item.reasoning) return null;
      return (
        <div className="bubble agent" data-role="assistant" data-testid="agent-text" data-key={item.key} {...foundMark(found, item.key)}>
          <Bot size={14} aria-hidden />
          <div>
            {item.reasoning && (
              <details className="reasoning">
                <summary>Reasoning</summary>
                <p>{item.reasoning}</p>
              </details>
            )}
            <Markdown text={item.text} marks={marks} />
          </div>
        </div>
      );
    case "summary":
      return (
        <details className="divider summary" data-role="summary" data-key={item.key} {...foundMark(found, item.key)}>
          <summary>Earlier turns were summarised to fit the model's window</summary>
          <p>{item.text}</p>
        </details>
      );
    case "tool":
      return <ToolCard item={item} />;
    case "continuation": {
      // Sent with Request changes the comments open the run (no budget spent); sent again, it is
      // Finishline's own check finding one not addressed, not the person writing again.
      const commentsAgain = item.source === "review_comments" && item.attempt > 0;
      return (
        <div className="card continuation" data-role="continuation" data-source={item.source} data-testid="continuation-card" data-key={item.key} {...foundMark(found, item.key)}>
          <div className="card-head static">
            <RefreshCw size={14} aria-hidden />
            <strong>{commentsAgain ? "Your comments, not yet addressed" : SOURCE_LABEL[item.source]}</strong>
            {item.max > 0 && (
              <span className="muted">
                {item.remaining.length > 0 ? `${item.remaining.length} item${item.remaining.length > 1 ? "s" : ""} remaining, ` : ""}continuing ({item.attempt}/{item.max})
              </span>
            )}
          </div>
          <div className="card-body">
            {item.source === "plan_step" ? (
              // Long and the same shape every step: folded, one click away.
              <details className="brief">
                <summary className="muted small">Finishline briefed the agent for this step — not your words</summary>
                <div className="continuation-text">
                  <Markdown text={item.text} />
                </div>
              </details>
            ) : (
              <>
                <p className="muted small">
                  {commentsAgain
                    ? "Finishline found a comment of yours not addressed yet and sent the agent back to it — not your words:"
                    : item.source === "review_comments"
                      ? "Finishline sent your comments on the diff to the agent, with the lines they are on:"
                      : TOLD_ONLY.has(item.source)
                        ? "Finishline told the agent — not your words:"
                        : "Finishline sent the agent back to work — not your words:"}
                </p>
                <div className="continuation-text">
                  <Markdown text={item.text} />
                </div>
              </>
            )}
          </div>
        </div>
      );
    }
    case "evaluation":
      return (
        <div className={`card evaluation verdict-${item.verdict}`} data-testid="verdict-card" data-verdict={item.verdict}>
          <div className="card-head static">
            <Scale size={14} aria-hidden />{" "}
            {item.question === "announced_action" ? (
              <span data-testid="verdict-question">
                Evaluator, asked whether the agent left undone what it announced or was asked to do:{" "}
                <strong>{item.verdict === "not_done" ? "yes" : item.verdict === "done" ? "no" : item.verdict.replace("_", " ")}</strong>
              </span>
            ) : (
              <span>
                {/* Under a plan's last step, or after it: the whole request is judged, not only the step. */}
                {item.judged === "whole" ? "Evaluator, on the whole task" : item.judged === "last_step_and_whole" ? "Evaluator, on the last step and the whole task" : "Evaluator"}:{" "}
                <strong>{item.verdict.replace("_", " ")}</strong>
              </span>
            )}
            {!item.parseOk && <span className="muted">(no usable answer)</span>}
          </div>
          <div className="card-body">
            {item.summary && <p>{item.summary}</p>}
            {item.remaining.length > 0 && (
              <ul>
                {item.remaining.map((r, i) => (
                  <li key={i}>{r}</li>
                ))}
              </ul>
            )}
            {item.stuckReason && <p className="muted">Stuck: {item.stuckReason}</p>}
          </div>
        </div>
      );
    case "compared":
      return (
        <div className="card evaluation compared" data-testid="compared-card" data-prefers={item.prefers}>
          <div className="card-head static">
            <Scale size={14} aria-hidden />
            {/* One box: loose words and a <strong> were two columns of the head's flex row. */}
            <span data-testid="compared-words">
              Evaluator{item.model ? ` (${item.model})` : ""}, comparing this attempt with {names[item.other] ?? "another of the task"}:{" "}
              <strong>{{ this: "prefers this one", other: "prefers the other", neither: "finds them equally good", disagreed: "gave two answers that disagree" }[item.prefers]}</strong>
            </span>
          </div>
          <div className="card-body">
            <p>{item.reason}</p>
            <p className="muted small">
              It was shown this attempt {item.shownFirst ? "first" : "second"}. Its word breaks a tie of the ranking rule only, never a difference the rule sees.
            </p>
          </div>
        </div>
      );
    case "verification":
      return (
        <div className="card verification" data-testid="verification-card">
          <div className="card-head static">
            <SquareTerminal size={14} aria-hidden />
            <span>
              {item.of > 1 ? `Verification ${item.nth} of ${item.of}` : "Verification"}: <code>{item.command}</code> {item.skipped ? "skipped" : `exit ${item.exitCode ?? "?"}`}
            </span>
            {item.nth > 0 && <span className="muted small tag">{item.personsOwn ? "your verify command" : item.plans ? "the plan's check" : "named by the agent"}</span>}
          </div>
          {!item.skipped && item.outputTail && <pre className="output">{item.outputTail}</pre>}
        </div>
      );
    case "permission":
    case "question":
      // A request still waiting is answered in the bottom bar, always in view; its place in
      // the timeline says so.
      return awaitsAnswer(item) ? (
        <p className="muted small pending-here" data-testid="pending-here">
          {item.kind === "permission" ? "Asked for permission: answer below." : "The agent asked a question: answer below."}
        </p>
      ) : item.kind === "permission" ? (
        <Permission item={item} />
      ) : (
        <Question item={item} />
      );
    case "plan_step":
      return (
        <div className="divider plan-divider" data-testid="plan-step-divider">
          Step {item.number}/{item.of}: {item.title}
        </div>
      );
    case "landing":
      return (
        <p className={item.tone === "warn" ? "notice warn landing-note" : "notice landing-note"} role="status" data-testid="landing-note">
          <Ticks text={item.text} />
          {item.times && item.times > 1 ? ` (${item.times} tries)` : ""}
        </p>
      );
    case "decision":
      return (
        // A record of the review, set apart from the person's messages: an icon and a rule, no bubble.
        <div className="decision-record">
          <p className={`decision-note decision-${item.decision}`} data-testid="decision-note">
            {item.decision === "approve" ? <CircleCheck size={14} aria-hidden /> : item.decision === "reject" ? <CircleX size={14} aria-hidden /> : <MessageSquare size={14} aria-hidden />}
            <span>{decisionText(item)}</span>
          </p>
          {item.letGo && item.letGo.length > 0 && (
            <ul className="muted small let-go-record" data-testid="let-go-record">
              {item.letGo.map((c) => (
                <li key={c}>Let go, not asked again: {c}</li>
              ))}
            </ul>
          )}
          {item.reviewId && item.files && <DecidedDiff reviewId={item.reviewId} files={item.files} comments={item.comments} round={item.round} />}
        </div>
      );
    case "plan_revised":
      return (
        <div className="card plan-revised" data-testid="plan-revised">
          <div className="card-head static">
            <ListChecks size={14} aria-hidden /> The plan was revised
          </div>
          <div className="card-body">
            <p>{item.cause}</p>
            <p className="muted small">New steps: {item.titles.join(" · ")}</p>
          </div>
        </div>
      );
    case "run_end":
      return (
        <>
          <div className="divider">
            {item.asItEnded && item.status === "awaiting_review" ? "Review opened as the task ended" : item.status === "busy" ? "Plan step ended" : "Run ended"}: {END_LABEL[item.endReason]}
            {item.stuck ? ` (${STUCK_LABEL[item.stuck.pattern] ?? item.stuck.pattern})` : ""}
            {item.why ? ` — ${item.why}` : ""}
          </div>
          {item.endReason === "conversation_unchecked" && (
            <p className="muted small" data-testid="unchecked-note">
              The evaluator gave no usable answer, so whether the agent only talked where it should have acted (or claimed work it did not do) was not checked. Read its reply, and send it back if there is work to do.
            </p>
          )}
        </>
      );
    case "stopped":
      return (
        <div className="divider" data-testid="run-stopped">
          Run stopped: Finishline closed while it ran
        </div>
      );
    case "error":
      return (
        <div className="card error" role="alert">
          <div className="card-head static">
            {/* One span: in the row, each of the words and a `name` in them would be its own column. */}
            <CircleSlash size={14} aria-hidden />{" "}
            <span>
              <Ticks text={item.message} />
            </span>
          </div>
        </div>
      );
  }
});

/** Step `i`'s number among the steps not replaced, 1-based. */
const livePosition = (steps: PlanView["steps"], i: number) => steps.slice(0, i + 1).filter((s) => s.state !== "replaced").length;

/** A running step of a run that is no longer running: the person cancelled it, or it failed. */
const STOPPED_TITLE = "The run stopped in this step; a resume goes on with this step.";

/** The plan: every step with its criteria, its state and outcome; replaced steps stay, with why. */
function PlanPanel({ plan, running }: { plan: PlanView; running: boolean }) {
  return (
    <aside className="plan panel" data-testid="plan-panel" aria-label="Plan">
      <h3>
        Plan{plan.revisions.length > 0 ? ` (revised ${plan.revisions.length}×)` : ""}
      </h3>
      {plan.budget !== undefined && (
        <div
          className="budget"
          data-testid="plan-budget"
          title={
            plan.rounds > 0
              ? "Model calls of this round: your feedback started a new round with a budget of its own, as it gives a task without a plan. The agent's, the evaluator's and the manager's calls count; near the end the manager is asked to finish, and spent, the task comes to you with what is done."
              : "Model calls of the whole plan: the agent's, the evaluator's and the manager's. Near the end the manager is asked to finish; spent, the task comes to you with what is done."
          }
        >
          <meter min={0} max={plan.budget} low={plan.budget * 0.6} high={plan.budget * 0.8} optimum={0} value={Math.min(plan.spent, plan.budget)} />
          <span className="muted small">
            {plan.spent} of {plan.budget} model calls{plan.rounds > 0 ? " this round" : ""}
          </span>
        </div>
      )}
      {plan.personEdits && (
        <p className="muted small" data-testid="plan-edits" title="The agent, the evaluator and the manager are told: a step you removed is not missing work">
          You edited this plan before it ran: {plan.personEdits}.
        </p>
      )}
      <ol>
        {plan.steps.map((s, i) => (
          // Numbered as the progress strip counts ("Step 2/3"): replaced steps are not counted.
          <li key={i} className={`plan-step step-${s.state}`} data-testid="plan-step" data-state={s.state} value={s.state === "replaced" ? undefined : livePosition(plan.steps, i)}>
            <div className="row">
              <strong className="grow">{s.step.title}</strong>
              {s.state === "running" && !running ? (
                <span className="tag step-state state-stopped" title={STOPPED_TITLE}>
                  Stopped
                </span>
              ) : (
                <span className={`tag step-state state-${s.state}`}>{STEP_STATE_LABEL[s.state]}</span>
              )}
            </div>
            {s.step.criteria.length > 0 && (
              <ul className="criteria muted small">
                {s.step.criteria.map((c, j) => (
                  <li key={j}>{c}</li>
                ))}
              </ul>
            )}
            {s.endReason && (
              <p className="small">
                {END_LABEL[s.endReason]}
                {stepSummaryBeside(s.summary, s.endReason, s.decidedBy) ? `: ${s.summary}` : ""}
              </p>
            )}
            {/* Not twice: a step its checks ended has their words as its summary already. */}
            {s.decidedBy && s.summary?.trim() !== s.decidedBy.trim() && (
              <p className="muted small" data-testid="step-decided-by">
                {decidedByText(s.decidedBy)}
              </p>
            )}
            {s.outputData && <p className="muted small">For later steps: {s.outputData}</p>}
            {s.replacedBecause && <p className="muted small">Replaced: {s.replacedBecause}</p>}
            {s.superseded && (
              <p className="muted small" data-testid="step-superseded">
                The plan was revised after it failed: the steps after it took over, and it is not counted in the steps done.
              </p>
            )}
          </li>
        ))}
      </ol>
    </aside>
  );
}

/** Above this many items the timeline renders only what is on screen, so long sessions stay smooth. */
export const VIRTUALIZE_ABOVE = 200;

function VirtualTimeline({ items, scrollRef, follow, reveal }: { items: Shown[]; scrollRef: React.RefObject<HTMLElement | null>; follow: boolean; reveal: RevealTarget | null }) {
  const list = useRef<HTMLDivElement>(null);
  // The timeline starts below the header inside the scrolling area.
  const v = useVirtualizer({ count: items.length, getScrollElement: () => scrollRef.current, estimateSize: () => 64, overscan: 12, scrollMargin: list.current?.offsetTop ?? 0 });
  const last = useRef(0);
  useEffect(() => {
    // Follow the stream only while the person is at the bottom.
    if (items.length > last.current && follow) v.scrollToIndex(items.length - 1, { align: "end" });
    last.current = items.length;
  }, [items.length, v, follow]);
  // A search hit's message: drawn only once scrolled to, where it is then marked. Its index is
  // read when asked: the list it was found in may have grown since.
  useEffect(() => {
    const at = reveal ? items.findIndex((it) => it.key === reveal.key) : -1;
    if (at >= 0) v.scrollToIndex(at, { align: "center" });
    // Once per asking, not as the list grows.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [reveal?.n, v]);
  return (
    <div ref={list} style={{ height: v.getTotalSize(), position: "relative" }}>
      {v.getVirtualItems().map((row) => (
        <div key={items[row.index].key} data-index={row.index} ref={v.measureElement} style={{ position: "absolute", top: 0, left: 0, width: "100%", transform: `translateY(${row.start - v.options.scrollMargin}px)`, paddingBottom: 10 }}>
          <ShownItem shown={items[row.index]} />
        </div>
      ))}
    </div>
  );
}

/** Failures a person fixes in Settings or by trying again: the run offers both. */
const PROVIDER_FAILURES: Record<string, string> = {
  provider_unreachable: "The provider could not be reached.",
  auth: "The provider's key is missing or wrong.",
  provider_not_found: "The provider's address or the model name is wrong.",
  provider: "The provider failed.",
  provider_protocol: "The provider answered in a way Finishline could not read.",
  chat_template: "This model answers with raw chat-template tokens.",
  step_timeout: "The model took longer than the step limit.",
};

/** The Settings field a provider failure is fixed in: Open Settings goes there. A model the
 * provider does not know is the session's own, so its address is what Settings can mend. */
const FAILURE_FIELD: Record<string, SettingsField | undefined> = { provider_unreachable: "provider-base-url", provider_not_found: "provider-base-url", auth: "key-input" };

/** A todo's state in words, for screen readers (the checkbox shows only done or not). */
const STATUS_WORDS: Record<string, string> = { pending: "not started", in_progress: "in progress", completed: "done", cancelled: "dropped" };

/** The model behind the latest verdict. */
function lastEvaluatorModel(items: Item[]): string | undefined {
  for (let i = items.length - 1; i >= 0; i--) {
    const it = items[i];
    if (it.kind === "evaluation") return it.model;
  }
  return undefined;
}

const REVIEW_SIZE_KEY = "finishline.reviewSize";

/** The review's size the person chose last: enlarged, or sharing the window (the default). */
function preferredReviewSize(): "shared" | "tall" {
  try {
    return localStorage.getItem(REVIEW_SIZE_KEY) === "tall" ? "tall" : "shared";
  } catch {
    return "shared";
  }
}

export function SessionView({
  sessionId,
  onOpenHistory,
  onOpenSettings,
  onOpenGroup,
  onStartAgain,
  reveal = null,
}: {
  sessionId: string;
  onOpenHistory: () => void;
  /** Opens Settings, on the field to fix when one is named. */
  onOpenSettings?: (field?: SettingsField) => void;
  onOpenGroup?: (group: string) => void;
  /** Opens New Task, where the task's words and folder were put to start it again. */
  onStartAgain?: () => void;
  /** A search hit's message to open at (a new object each time it is asked), and the words the
   * search found in it, marked there. */
  reveal?: { message: string; words?: string[] } | null;
}) {
  const [model, dispatch] = useReducer(reducer, undefined, emptyModel);
  // Every event of the session, in order: what a replay plays again.
  const log = useRef<Envelope[]>([]);
  const [replay, setReplay] = useState<Replay | null>(null);
  // The group's attempts by name, once the evaluator's comparison is in the timeline.
  const [names, setNames] = useState<Record<string, string>>({});
  const group = model.attempt?.group;
  const compared = model.items.some((it) => it.kind === "compared");
  useEffect(() => {
    if (!group || !compared) return;
    ipc.listSessions({ group, limit: 64 }).then(
      (list) => setNames(Object.fromEntries((list ?? []).map((s) => [s.id, s.attempt?.label ?? s.title]))),
      () => undefined, // the card says "another of the task" without them
    );
  }, [group, compared]);
  const [error, setError] = useState<string | AppError | null>(null);
  const [exportedTo, setExportedTo] = useState<string | null>(null);
  const exportSession = async () => {
    setError(null);
    try {
      const path = await ipc.saveSessionExport(sessionId, "md");
      if (path) setExportedTo(path);
    } catch (e) {
      setError(e as AppError);
    }
  };
  const [openError, setOpenError] = useState<string | null>(null);
  const [attempt, setAttempt] = useState(0);
  const [message, setMessage] = useWindowDraft(`finishline.messageDraft.${sessionId}`);
  // The app's scrolling area, for the virtual timeline.
  const scroller = useRef<HTMLElement | null>(null);
  // Whether the view follows new output: only while the person is at the bottom. Scrolled up to
  // read, the view stays put and offers "Jump to latest" instead.
  const [following, setFollowing] = useState(true);
  const followingRef = useRef(true);
  useEffect(() => {
    const el = document.querySelector<HTMLElement>("main.content");
    scroller.current = el;
    if (!el) return;
    const onScroll = () => {
      const atBottom = el.scrollHeight - el.scrollTop - el.clientHeight < 48;
      followingRef.current = atBottom;
      setFollowing(atBottom);
    };
    el.addEventListener("scroll", onScroll, { passive: true });
    return () => el.removeEventListener("scroll", onScroll);
  }, []);
  // The very end of the scrolling area: the timeline's last words just above the bottom bar.
  // (Bringing the timeline's foot into view instead put it at the window's foot, under the bar.)
  const toEnd = useCallback(() => {
    const el = scroller.current;
    if (el) el.scrollTop = el.scrollHeight;
  }, []);
  // Until when what grows is followed to the end: a moment after the session opens or a
  // decision is made (the timeline replaying, the bar's panel changing), and while a run streams;
  // not when the person opens a card or a diff to read it.
  const settleUntil = useRef(0);
  const runningRef = useRef(false);
  const jumpToLatest = () => {
    followingRef.current = true;
    setFollowing(true);
    settleUntil.current = performance.now() + 1500;
    toEnd();
  };
  const sectionRef = useRef<HTMLElement | null>(null);
  /** After a decision the review panel is gone, and the focus with it: it goes to the message
   * box (or, while the agent works again, the page) once that is shown, unless the person put
   * it somewhere meanwhile. */
  const decided = () => {
    jumpToLatest();
    // The review panel holds the focus for a moment (the button pressed, then what was decided:
    // an approve's stays, a request's goes as the next run starts): the focus lands only once it
    // is on the page, and never takes it from where the person put it.
    landFocus('[data-testid="review-panel"]', true);
  };
  /** Puts a focus that was lost (its element gone) on what comes next: the message box, or while
   * the agent works, the page the session is on; not its Cancel, which acts at once, so an Enter
   * pressed twice would stop the run just asked for. `holder`: a part of the screen about to go
   * whose focus counts as lost too. `waitForNext`: nothing is shown yet to land on, so try a
   * moment later. Timers, not frames: a hidden window holds frames back. */
  const landFocus = (holder: string | null, waitForNext: boolean) => {
    clearTimeout(landing.current);
    let tries = 0;
    const land = () => {
      const now = document.activeElement;
      const lost = !now || now === document.body || !now.isConnected;
      if (!lost && !(holder && now.closest(holder))) return;
      const section = sectionRef.current;
      const box = section?.querySelector<HTMLElement>('[data-testid="message-input"]');
      const target = !lost ? null : (box ?? (!waitForNext || section?.querySelector('[data-testid="cancel"]') ? scroller.current : null));
      if (target) target.focus({ preventScroll: true });
      else if (++tries < 20) landing.current = setTimeout(land, 100);
    };
    landing.current = setTimeout(land, 0);
  };
  const landing = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  useEffect(() => () => clearTimeout(landing.current), []);
  useEffect(() => {
    settleUntil.current = performance.now() + 3000;
    const el = sectionRef.current;
    if (!el || typeof ResizeObserver === "undefined") return;
    const seen = new ResizeObserver(() => {
      if (followingRef.current && (runningRef.current || performance.now() < settleUntil.current)) toEnd();
    });
    seen.observe(el);
    // The person's own click or key ends the settling: what they open stays where it is.
    const mine = () => (settleUntil.current = 0);
    el.addEventListener("pointerdown", mine);
    el.addEventListener("keydown", mine);
    return () => {
      seen.disconnect();
      el.removeEventListener("pointerdown", mine);
      el.removeEventListener("keydown", mine);
    };
  }, [toEnd, sessionId]);

  // Timing for the footprint benchmark (off unless FINISHLINE_PERF=1): when the replayed
  // timeline was last drawn after opening, and frame pacing while a run streams.
  const opened = useRef(performance.now());
  const drawn = useRef(0);
  useEffect(() => {
    drawn.current = performance.now();
  }, [model]);
  useEffect(() => {
    let quiet = 0;
    const check = window.setInterval(() => {
      if (drawn.current && performance.now() - drawn.current > 300 && quiet === 0) {
        quiet = 1;
        report("session_shown_ms", drawn.current - opened.current);
        report("session_items", model.items.length);
        window.clearInterval(check);
      }
    }, 100);
    return () => window.clearInterval(check);
    // Measured once per opened session.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, []);

  useEffect(() => {
    let pending: Envelope[] = [];
    let frame = 0;
    // Events are applied once per animation frame, so fast streams stay smooth.
    const flush = () => {
      frame = 0;
      const batch = pending;
      pending = [];
      dispatch(batch);
    };
    let closed = false;
    let subscription: number | null = null;
    log.current = [];
    setReplay(null);
    ipc
      .subscribeSession(sessionId, 0, (e) => {
        if (closed) return;
        if (e.seq > (log.current.at(-1)?.seq ?? 0)) log.current.push(e);
        pending.push(e);
        if (!frame) frame = requestAnimationFrame(flush);
      })
      .then(
        (id) => {
          subscription = id;
          // Closed before the subscription was made: end it now.
          if (closed) ipc.unsubscribeSession(id).catch(() => {});
          else setOpenError(null);
        },
        (e: AppError) => !closed && setOpenError(e.message),
      );
    return () => {
      closed = true;
      if (frame) cancelAnimationFrame(frame);
      if (subscription !== null) ipc.unsubscribeSession(subscription).catch(() => {});
    };
  }, [sessionId, attempt]);

  // A replay plays on while it is shown, a tick at a time.
  const replaying = !!replay?.playing;
  useEffect(() => {
    if (!replaying) return;
    const tick = window.setInterval(() => setReplay((r) => (r?.playing ? advance(r, log.current, REPLAY_TICK_MS) : r)), REPLAY_TICK_MS);
    return () => window.clearInterval(tick);
  }, [replaying]);
  // The timeline shows the replay while there is one, else the session as it is.
  const viewed = replay ? replay.model : model;

  // New items and streamed text keep the bottom in view, unless the person scrolled up.
  const lastText = viewed.items.at(-1)?.kind === "assistant" ? (viewed.items.at(-1) as { text: string }).text.length : 0;
  useEffect(() => {
    if (viewed.items.length <= VIRTUALIZE_ABOVE && followingRef.current) toEnd();
  }, [viewed.items.length, lastText, toEnd]);

  // The review's panel takes the foot of the window. When it arrives while the person follows
  // the run, the window goes to the very end, where the panel sits after the timeline: the
  // agent's last words and the verdict stay above it (the foot of the timeline alone, brought
  // into view, lay under the panel).
  const reviewShown = model.review && model.status === "awaiting_review" ? model.review.reviewId : null;
  useEffect(() => {
    if (!reviewShown || !followingRef.current) return;
    toEnd();
    // Once more after the panel's diff has drawn, unless the view stopped following meanwhile
    // (a search hit's message found in the same replay).
    const frame = requestAnimationFrame(() => followingRef.current && toEnd());
    return () => cancelAnimationFrame(frame);
  }, [reviewShown, toEnd]);

  // Whether an attempt of this session's group was chosen. Until one is, approving this attempt
  // chooses it for the group and it is put away with the group; after, it is any task's (the
  // engine's rule: `discard::competing_group`).
  const [groupChosen, setGroupChosen] = useState(false);
  useEffect(() => {
    if (!group) return;
    let live = true;
    ipc.attemptGroup(group).then(
      (r) => live && setGroupChosen(!!r?.chosen),
      () => undefined,
    );
    return () => void (live = false);
  }, [group, model.status]);

  const running = isRunning(model);
  // A run starting (from a terminal, say) ends the replay: the session as it is comes first.
  useEffect(() => {
    if (running) setReplay(null);
  }, [running]);
  runningRef.current = running;
  // A run starting takes the message box away (and a Resume or Try again button), a run ending
  // takes Cancel: the focus they had is put where the person goes on from.
  const wasRunning = useRef(running);
  useEffect(() => {
    if (wasRunning.current === running) return;
    wasRunning.current = running;
    landFocus(null, false);
  }, [running]);
  const ask = pendingAsk(model.items);
  // Frame pacing is measured while text streams in (FINISHLINE_PERF=1 only).
  const streaming = running && model.items.some((i) => i.kind === "assistant" && i.text.length > 0);
  useEffect(() => (streaming ? watchFrames() : undefined), [streaming]);
  // An action's error is its own try's: tried again, the words of the try before go, whether it
  // works this time or says something new.
  const act = useCallback((action: Promise<unknown>) => {
    setError(null);
    action.catch((e: AppError) => setError(e.message));
  }, []);
  const cancel = useCallback(() => act(ipc.cancelRun(sessionId)), [sessionId, act]);
  // Opening a folder shows nothing in this window, and a copy nothing at all: each says it worked,
  // or why not, beside its link; a failure stays until the next try.
  // `copied`: the path went to the clipboard, and is shown with the words that say so.
  const [worktreeSaid, setWorktreeSaid] = useState<{ text: string; failed: boolean; copied?: boolean } | null>(null);
  useEffect(() => {
    if (!worktreeSaid) return;
    // A failure stays longer, to be read, but not for the rounds after: the path is beside it.
    const t = setTimeout(() => setWorktreeSaid(null), worktreeSaid.failed ? 10_000 : 4000);
    return () => clearTimeout(t);
  }, [worktreeSaid]);
  const worktreeAct = useCallback(
    (action: Promise<unknown>, done: string, failed?: string, copied = false) => {
      setWorktreeSaid(null);
      action.then(
        () => setWorktreeSaid({ text: done, failed: false, copied }),
        (e: AppError) => setWorktreeSaid({ text: failed ?? e.message, failed: true }),
      );
    },
    [],
  );

  // Esc asks before it cancels: it is also the key that closes things, and a run is minutes of work.
  // The button says what it does and cancels at once, unless that would throw away the person's
  // edits to a plan waiting for its go-ahead.
  const [confirmCancel, setConfirmCancel] = useState(false);
  const planWaiting = !!model.plan?.awaitingReview && model.status === "awaiting_approval";
  const planEditsAtStake = () => !!model.plan?.awaitingReview && planEdited(sessionId, model.plan.steps.map((s) => s.step));
  const [confirmDiscard, setConfirmDiscard] = useState(false);
  useEffect(() => {
    if (!running) setConfirmCancel(false);
  }, [running]);
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      // Esc in a text field (an answer, feedback, a message) belongs to that field, and a box or
      // dialog that handled it has closed: only an Esc nothing else took asks about the run. A
      // link's address left open in the timeline is no dialog that holds the keys.
      if (e.key === "Escape" && running && !e.defaultPrevented && !isTextField(e.target) && !document.querySelector('[role="alertdialog"], [role="dialog"]:not(.link-confirm)')) {
        e.preventDefault();
        setConfirmCancel(true);
      }
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [running]);
  // A decided review stays in the bottom bar until the next run (a request for changes starts one
  // at once); meanwhile its decision, and where it landed, are not said twice in the timeline.
  const decidedInPanel = !!model.review?.decided && model.review.decided.decision !== "request_changes" && !running;
  const panelDecision = decidedInPanel && model.review ? `dec-${model.review.reviewId}` : undefined;
  const panelLanding = decidedInPanel ? model.review?.decided?.landedKey : undefined;
  const shown = useMemo(
    () => foldRepeats(panelDecision && !replay ? viewed.items.filter((it) => it.key !== panelDecision && it.key !== panelLanding) : viewed.items),
    [viewed.items, panelDecision, panelLanding, replay],
  );
  // Opened from a search hit: the message the passage is in, once replayed, is brought into view
  // and marked, and the view no longer goes to the end (as if the person had scrolled there).
  const found = useReveal(
    shown,
    reveal,
    sectionRef,
    shown.length > VIRTUALIZE_ABOVE,
    () => {
      settleUntil.current = 0;
      followingRef.current = false;
      setFollowing(false);
    },
    jumpToLatest,
  );
  const foundWords = useMemo(() => reveal?.words ?? [], [reveal]);
  // How much of the height the review takes beside the transcript. Enlarged (or shrunk) once, the
  // next review opens so: a person who wants the diff's room wants it every time.
  const [reviewSize, setReviewSize] = useState<"shared" | "folded" | "tall">(preferredReviewSize);
  // A decided review folded by the person; the next decision shows whole.
  const [decidedFolded, setDecidedFolded] = useState(false);
  const decidedReview = model.review?.decided ? model.review.reviewId : null;
  useEffect(() => setDecidedFolded(false), [decidedReview]);
  const sizeReview = (size: "shared" | "tall") => {
    try {
      localStorage.setItem(REVIEW_SIZE_KEY, size);
    } catch {
      // Not remembered, still applied.
    }
    setReviewSize(size);
  };

  // One start at a time: a second click (or Enter) while the first is on its way does nothing.
  const [sending, setSending] = useState(false);
  // After a provider failure: the same conversation again, with no new words from the person.
  // New Task reads its drafts when it opens: the task's words and folder go there, unless the
  // person has words of their own in it, which are never replaced.
  const startAgain = () => {
    try {
      if (!sessionStorage.getItem("finishline.taskDraft")) {
        sessionStorage.setItem("finishline.taskDraft", model.task);
        sessionStorage.setItem("finishline.workspaceDraft", model.workspace);
      }
    } catch {
      /* storage unavailable: New Task opens empty */
    }
    onStartAgain?.();
  };
  const retry = async () => {
    if (sending) return;
    setSending(true);
    setError(null);
    try {
      await ipc.sendMessage(sessionId, "");
      jumpToLatest();
    } catch (e) {
      setError(e as AppError);
    } finally {
      setSending(false);
    }
  };
  const send = async () => {
    if (sending) return;
    setSending(true);
    setError(null);
    try {
      await ipc.sendMessage(sessionId, message);
      setMessage("");
      // What the person just sent, and what it starts, is what they look at next.
      jumpToLatest();
    } catch (e) {
      setError(e as AppError);
    } finally {
      setSending(false);
    }
  };

  const openTodos = model.todos.filter((t) => t.status === "pending" || t.status === "in_progress").length;
  // A run stopped short (the process died, or the person cancelled it) goes on where it stopped
  // with one click, a note optional: the CLI's `sessions resume ID` needs no message either.
  const resumable = model.status === "interrupted" || model.status === "cancelled";
  // It may have written something: its review as it ended is offered (not after an answer that
  // the engine found changed nothing).
  const usedTools =
    model.items.some((it) => it.kind === "tool" && !READ_ONLY_TOOLS.includes(it.tool)) &&
    !(model.status === "idle" && (model.endReason === "conversation" || model.endReason === "conversation_unchecked"));
  // Its last run was that review, and found nothing (or could not gather it): said there, not offered again.
  const reviewedAsItEnded = model.runTrigger === "review";
  const strip = model.plan ? planStrip(model.plan, running) : null;
  // Where a note goes: a plan cancelled at its go-ahead runs the task without it; a plan that
  // stopped after a failed step hands it to the plan's revision.
  const atFailedStep = !!model.plan && model.plan.current !== undefined && !model.plan.concluded && model.plan.steps[model.plan.current]?.state === "failed";
  const notePlaceholder = !resumable
    ? "Send a message to continue"
    : model.plan?.declined
      ? "Or a note, to run the task as one run without the plan"
      : atFailedStep
        ? "Optional note for the plan's revision"
        : "Optional note for the agent";
  // The running step ended: the plan is between its steps.
  const planTurnsOver = !!model.plan && model.plan.current !== undefined && !model.plan.concluded && ["done", "failed"].includes(model.plan.steps[model.plan.current]?.state ?? "");
  return (
    <section ref={sectionRef} className="screen session" data-testid="session-view" data-session={sessionId}>
      {/* Pinned: the task, its status, Cancel and the progress stay in view while the timeline scrolls. */}
      <div className="session-top" data-pinned="top">
      <header className="session-head">
        <div className="session-title">
          {/* Cut to one line: the whole of that line on hover (the rest is the first message). */}
          <h1 className="clamp" title={model.task.split("\n")[0] || undefined} data-testid="session-task-title">
            {model.task.split("\n")[0] || "Session"}
          </h1>
          <p className="muted small clamp" title={`${model.workspace} · ${model.model}`} data-testid="session-where">
            <code>{model.workspace}</code> ·{" "}
            {model.agent ? (
              <span data-testid="session-agent" title="An external agent over ACP; Finishline judges its work">
                {model.agent.name}
                {model.agent.version ? ` ${model.agent.version}` : ""} (ACP)
              </span>
            ) : (
              model.model
            )}
            {model.instructions && (
              <span data-testid="session-instructions" title={model.instructions.truncated ? "Long: only its first part is sent" : "The agent and the evaluator follow it"}>
                {" "}
                · following {model.instructions.file}
              </span>
            )}
            {model.extraVerify && (
              <span data-testid="session-verify" title={`Started with these commands to check its work, beside the workspace's own: ${model.extraVerify.join(", ")}`}>
                {" "}
                · also checked by <code>{model.extraVerify[0]}</code>
                {model.extraVerify.length > 1 ? ` and ${model.extraVerify.length - 1} more` : ""}
              </span>
            )}
            {model.allowed && (
              <span data-testid="session-allowed" title={`Started allowing these without asking; its follow-ups keep them: ${model.allowed.join(", ")}`}>
                {" "}
                · {model.allowed.includes("all") ? "every tool allowed" : <>allowed <code>{model.allowed.join(", ")}</code></>} without asking
              </span>
            )}
            {model.tokens.agent + model.tokens.evaluator > 0 && (
              <span data-testid="session-tokens">
                {" "}
                · {formatTokens(model.tokens.agent + model.tokens.evaluator)} tokens
                {model.review?.costUsd !== undefined && model.review?.costUsd !== null ? ` · $${model.review.costUsd.toFixed(model.review.costUsd < 1 ? 3 : 2)}` : ""}
              </span>
            )}
          </p>
          {model.attempt && (
            <p className="muted small" data-testid="session-attempt">
              Attempt {model.attempt.number} of {model.attempt.of}: {model.attempt.label}
              {model.attempt.chosen ? " · chosen" : ""} ·{" "}
              <button className="link-btn" onClick={() => onOpenGroup?.(model.attempt!.group)} data-testid="open-attempts">
                compare the attempts
              </button>{" "}
            </p>
          )}
          {model.place?.worktree && !model.place.removed && (
            <p className="muted small" data-testid="session-worktree" title="Its own worktree: your checkout is untouched until you approve.">
              Works on{" "}
              <code className="branch-name">
                {model.place.worktree.branch}
              </code>
              {model.place.worktree.base_branch ? ` from ${model.place.worktree.base_branch}` : ""}, in its own worktree ·{" "}
              <button className="link-btn" onClick={() => worktreeAct(ipc.openWorktree(sessionId), "Opened in your file manager")} data-testid="open-worktree">
                open its folder
              </button>{" "}
              ·{" "}
              {/* The path is what a terminal or an editor wants: it is what the button's hover
                  shows, and what "Path copied" shows with it. Not a line of its own in the header,
                  whose every line is a line less of the review's diff in a short window. */}
              <button
                className="link-btn"
                title={model.place.worktree.folder}
                onClick={() => worktreeAct(Promise.resolve(model.place!.worktree!.folder).then((path) => navigator.clipboard.writeText(path)), "Path copied", "The clipboard is not available here: the folder is " + model.place!.worktree!.folder, true)}
                data-testid="copy-worktree-path"
              >
                copy its path
              </button>
              {worktreeSaid && (
                <span role={worktreeSaid.failed ? "alert" : "status"} className={worktreeSaid.failed ? "field-error" : undefined} data-testid="worktree-said">
                  {" "}
                  · {worktreeSaid.text}
                  {worktreeSaid.copied && (
                    // On one line, a long one cut at its start, where the data folder's part is
                    // the same for every task.
                    <code className="worktree-path" data-testid="worktree-path" title={model.place.worktree.folder}>
                      <bdi>{model.place.worktree.folder}</bdi>
                    </code>
                  )}
                </span>
              )}
            </p>
          )}
        </div>
        <div className="row">
          {model.lastSeq === 0 ? (
            <span className="badge" data-testid="status-badge" data-status="loading" aria-busy="true">
              Loading…
            </span>
          ) : (
            // An attempt is put away with its group (rejected, or not chosen, as the sidebar says)
            // until one is chosen; after, it is a task like any other, discarded as one.
            <StatusBadge status={model.status} nextRetryAt={model.retry?.nextRetryAt} endReason={model.endReason} keptBranch={keptBranch(model)} discarded={model.discarded && (!model.attempt || groupChosen)} notChosen={model.status === "rejected" && model.review?.decided?.occasion === "another_attempt_chosen"} />
          )}
          {model.approvedBefore && model.status !== "completed" && (
            <span className="muted small" data-testid="approved-before" title="You approved an earlier round of this task; that work stays where it landed.">
              earlier work approved
            </span>
          )}
          {model.lastSeq > 0 && !running && !replay && (
            <button className="btn small" onClick={() => setReplay(startReplay())} data-testid="session-replay" title="Play the timeline again as it happened, long waits cut short">
              <Play size={14} aria-hidden /> Replay
            </button>
          )}
          {/* Saved from here too, not only from History (which exports a group by its chosen
              attempt: any other attempt is saved here). */}
          {model.lastSeq > 0 && (
            <button className="btn small" onClick={() => void exportSession()} data-testid="session-export" title="Save this session, with its evidence and review, as a Markdown file">
              Save as Markdown
            </button>
          )}
          {exportedTo && (
            <span className="muted small" role="status">
              Saved to {exportedTo}
            </span>
          )}
          {/* A plan waiting for review has its own Cancel task beside Run plan: one is enough. The
              button says what it does and does it; Esc, which may be pressed to close something
              else, asks first. */}
          {running && !planWaiting && (
            <button className="btn" onClick={cancel} data-testid="cancel" title="Cancel the task now (Esc asks first)">
              Cancel
            </button>
          )}
        </div>
      </header>
      <div className="progress" data-testid="progress-strip" aria-live="polite">
        {strip && (
          <span className="plan-progress" data-testid="plan-progress">
            {strip.text}
          </span>
        )}
        {/* Agent steps are "turns" beside a plan's steps; none is counted before the first, nor
            once the plan is over (its last step's "Turn 1" beside "Plan: 3/3 steps done"), nor
            between its steps (a step ended: its last turn is no news). A run after the plan
            says so ("Plan: 3/3 steps done · Step 2" read as the plan's step 2). */}
        {model.step > 0 && !(model.plan?.concluded && !model.runAfterPlan) && !planTurnsOver && (
          <span
            className="whole"
            data-testid="step-count"
            title={`The agent's ${model.plan ? "turns" : "steps"} in this run. Each run (the task, a round after Request changes, a follow-up) counts from 1, within its step limit (Settings → Limits)`}
          >
            {model.plan && !model.plan.concluded ? "Turn" : model.runAfterPlan ? "After the plan: step" : "Step"} {model.step}
          </span>
        )}
        {model.runClock && <RunTiming run={model.runClock} step={model.stepClock} live={running && model.runClock.finishedAt === undefined} />}
        <span data-testid="activity">{running && model.activity ? activityText(model.activity, model.stepClock) : model.endReason ? END_LABEL[model.endReason] : ""}</span>
        {/* The run's budget of continuations: "Cycle 0/5" read as nothing having happened. */}
        {/* Ended without being sent back, there is nothing to count: "0 times (up to 5)" stayed
            on a completed task like a score. */}
        {/* A review opened as the task ended sends nothing back. */}
        {model.cycle.max > 0 && (running || model.cycle.n > 0 || model.runResolving) && model.runTrigger !== "review" && (
          <span data-testid="cycle-count" title="How many times Finishline sent the agent back in this run, of the run's budget (Settings → Limits → Continuation budget)">
            {/* "Sent back 0 of 5" read like a score at review. */}
            {/* Finishline's own sending back, not the person's Request changes. A run that resolves
                a landing began with one, outside the budget: "0 times" read as none. */}
            {model.runResolving ? "Sent back to resolve the landing; " : ""}
            {/* One phrasing whatever the count: "1 of 5 times" beside "0 times (up to 5)" read as two measures. */}
            {/* Right after the person's Request changes, "sent it back 0 times" read as if theirs
                had not counted: before Finishline's first, say what it may do. */}
            {model.cycle.n === 0
              ? `Finishline may send it back up to ${model.cycle.max}${model.runResolving ? " more" : ""} times`
              : `${model.runResolving ? "then " : ""}Finishline sent it back ${model.cycle.n} time${model.cycle.n === 1 ? "" : "s"} (up to ${model.cycle.max})`}
          </span>
        )}
        {model.todos.length > 0 && (
          <span>
            Todos {model.todos.length - openTodos}/{model.todos.length}
          </span>
        )}
      </div>
      </div>
      {model.retry && (
        <p className="notice" role="status">
          {/* "Retry", not "attempt": beside the strip's "sent back up to 5 times", "attempt 3 of 5" read as the same count. */}
          The request to the model failed; trying it again (retry {model.retry.attempt}
          {model.retry.of ? ` of ${model.retry.of}` : ""}): {model.retry.message}{" "}
          <button className="btn small" onClick={() => act(ipc.retryNow(sessionId))} data-testid="retry-now" title="Ask the model again now, without waiting out the pause">
            Try now
          </button>
        </p>
      )}
      {openError && model.lastSeq === 0 && (
        <div className="panel error-panel" role="alert" data-testid="session-error">
          <p>This session could not be opened: {openError}</p>
          <div className="row">
            <button className="btn" onClick={() => setAttempt((n) => n + 1)}>
              Try again
            </button>
            <button className="btn" onClick={onOpenHistory}>
              Back to History
            </button>
          </div>
        </div>
      )}
      <div className="session-body">
        <div className="timeline" data-testid="timeline">
          <AttemptNames.Provider value={names}>
            <FoundKey.Provider value={found?.key ?? null}>
            <FoundWords.Provider value={foundWords}>
            {shown.length > VIRTUALIZE_ABOVE ? (
              <VirtualTimeline items={shown} scrollRef={scroller} follow={following} reveal={found} />
            ) : (
              shown.map((it) => <ShownItem key={it.key} shown={it} />)
            )}
            </FoundWords.Provider>
            </FoundKey.Provider>
          </AttemptNames.Provider>
          {/* A question waiting below says itself that the run waits for the person. */}
          {/* Queued before its first message: the task the person typed, under TASK; what it
              waits for is said once, in the strip above. */}
          {model.status === "queued" && model.task && !model.items.some((i) => i.kind === "user") && (
            <div className="bubble user" data-role="user" data-testid="user-bubble">
              <User size={14} aria-hidden />
              <PersonWords text={model.task} />
            </div>
          )}
          {running && model.status !== "queued" && model.activity && !(model.activity.phase === "waiting" && (ask || planWaiting)) && <div className="typing muted" data-testid="typing">{activityText(model.activity, model.stepClock)}…</div>}
          {/* Not while the agent waits for the person: what is latest is then the question at
              the window's foot, and the button would lie over its buttons. */}
          {!following && running && !ask && !planWaiting && (
            <button className="btn jump-latest" onClick={jumpToLatest} data-testid="jump-latest">
              <ArrowDown size={14} aria-hidden /> Jump to latest
            </button>
          )}
        </div>
        {/* A plan waiting for the person is shown once, in its editor below. */}
        {((viewed.plan && !planWaiting) || viewed.todos.length > 0) && (
          <div className="side-panels">
        {/* A replay's, as they stood then. */}
        {viewed.plan && !planWaiting && <PlanPanel plan={viewed.plan} running={running && !replay} />}
        {viewed.todos.length > 0 && (
          <aside className="todos panel" data-testid="todos">
            <h3>Todos</h3>
            <ul>
              {viewed.todos.map((t) => (
                <li key={t.id} className={`todo todo-${t.status}`}>
                  <label className="check">
                    <input type="checkbox" readOnly checked={t.status === "completed"} aria-describedby={`todo-state-${t.id}`} /> {t.content}
                    <span id={`todo-state-${t.id}`} className="sr-only">{STATUS_WORDS[t.status] ?? t.status}</span>
                  </label>
                </li>
              ))}
            </ul>
          </aside>
        )}
          </div>
        )}
      </div>
      {/* Pinned to the bottom: whatever waits for the person (a permission, a question, the review,
          the message box), so it is in view however long the timeline grows. */}
      <div className="session-bottom" data-testid="bottom-bar" data-pinned="bottom">
      {/* What failed (a message not sent, a cancel refused) shows here, beside the buttons just
          used: above the timeline it would be out of sight. */}
      {replay ? (
        <ReplayBar replay={replay} log={log.current} onChange={setReplay} onEnd={() => setReplay(null)} />
      ) : (
      <>
      <ErrorLine error={error} onOpenSettings={onOpenSettings && (() => onOpenSettings())} />
      {/* Keyed by the request: the next question is a new box, not the last one's answer. */}
      {ask && (ask.kind === "permission" ? <Permission key={ask.requestId} item={ask} /> : <Question key={ask.requestId} item={ask} />)}
      {planWaiting && model.plan && <PlanReview sessionId={sessionId} steps={model.plan.steps.map((s) => s.step)} budget={model.plan.budget} spent={model.plan.spent} task={model.task} />}
      {/* After Approve or Reject the panel stays, saying what was decided (and what a revert undid). */}
      {model.review && (model.status === "awaiting_review" || decidedInPanel) && (
        // The review shares the height with the transcript: at most part of the window, its
        // buttons always in view; folded, only its title and buttons stay.
        // Given the window, it has most of the height for a long diff; the transcript keeps a strip.
        <div className={model.review.decided ? `review-dock decided${decidedFolded ? " folded" : ""}` : `review-dock ${reviewSize}`} data-testid="review-dock">
          {/* Decided, it stays until the next run, read or not: in a short window it folds to
              its decision, and the transcript has the height. */}
          {model.review.decided && (
            <span className="review-fold">
              <button className="link-btn" onClick={() => setDecidedFolded((f) => !f)} aria-expanded={!decidedFolded} data-testid="review-fold">
                {decidedFolded ? "Unfold the decision" : "Fold to read the transcript"}
              </button>
            </span>
          )}
          {!model.review.decided && (
            <span className="review-fold">
              {reviewSize !== "folded" && (
                <button className="link-btn" onClick={() => sizeReview(reviewSize === "tall" ? "shared" : "tall")} data-testid="review-tall">
                  {reviewSize === "tall" ? "Shrink the review" : "Enlarge the review"}
                </button>
              )}
              <button className="link-btn" onClick={() => setReviewSize(reviewSize === "folded" ? preferredReviewSize() : "folded")} aria-expanded={reviewSize !== "folded"} data-testid="review-fold">
                {reviewSize === "folded" ? "Unfold the review" : "Fold the review to read the transcript"}
              </button>
            </span>
          )}
          <ReviewPanel review={model.review} tokens={model.tokens} managerAsked={model.managerAsked} onDecided={decided} evaluatorModel={lastEvaluatorModel(model.items)} plan={model.runAfterPlan ? undefined : model.plan} place={model.place} sessionId={sessionId} attempt={groupChosen ? null : model.attempt} onOpenSettings={onOpenSettings && (() => onOpenSettings())} activity={model.activity} approvedBefore={model.approvedBefore} />
        </div>
      )}
      {!running && model.status !== "awaiting_review" && model.lastSeq > 0 && (
        <div className="composer">
          {model.status === "interrupted" && <p className="notice">This session was interrupted. Resume it to continue where it stopped.</p>}
          {resumable && strip?.resume && (
            <p className="muted small" data-testid="plan-resume">
              {strip.resume}
            </p>
          )}
          {model.status === "failed" && model.lastErrorCode === "external_agent_auth" && model.login && <AgentLogin sessionId={sessionId} login={model.login} onLoggedIn={retry} />}
          {model.status === "failed" && model.lastErrorCode && PROVIDER_FAILURES[model.lastErrorCode] && (
            <div className="notice row" role="alert" data-testid="failure-actions">
              <span className="grow">
                {PROVIDER_FAILURES[model.lastErrorCode]}{" "}
                {/* A session keeps the model it started with: Settings' model is for new tasks. */}
                {model.lastErrorCode === "provider_not_found" && model.model ? (
                  <>
                    This session keeps the model it started with, <code>{model.model}</code>: if that name is wrong, start the task again with the right one{model.attempt ? " (new attempts)" : ""}; the
                    provider&apos;s address is in Settings. Retry goes on from where it stopped.
                  </>
                ) : (
                  // Its worktree went with nothing in it: the conversation goes on, in a new one.
                  `Fix it in Settings, or try again: the run goes on from where it stopped${model.place?.worktree && model.place.removed ? ", in a new worktree" : ""}.`
                )}
              </span>
              <button className="btn primary" onClick={() => void retry()} disabled={sending} data-testid="retry-run">
                <RefreshCw size={14} aria-hidden /> Retry
              </button>
              {onOpenSettings && (
                <button className="btn" onClick={() => onOpenSettings(FAILURE_FIELD[model.lastErrorCode!])} data-testid="open-settings">
                  Open Settings
                </button>
              )}
              {/* The way the words above name: the task as a new one, with the right model. */}
              {model.lastErrorCode === "provider_not_found" && onStartAgain && !model.attempt && (
                <button className="btn" onClick={startAgain} data-testid="start-again" title="Opens New Task with this task's words and folder, to run it with another model (words you typed there are kept instead)">
                  Start it again…
                </button>
              )}
            </div>
          )}
          {model.status === "completed" && (
            <p className="muted">
              Completed. <button className="link" onClick={onOpenHistory}>Open History</button>
            </p>
          )}
          {/* Ended without a review, its work waits undecided in its worktree: continue it, or put
              it away as a reject would. An attempt is put away with its group, until the group is
              decided and it was continued since. */}
          {ENDED_UNREVIEWED.includes(model.status) && model.place?.worktree && !model.place.removed && (!model.attempt || groupChosen) && (
            <div className="notice row" data-testid="discard-offer">
              <span className="grow">
                Its worktree on <code>{model.place.worktree.branch}</code> stays until you {resumable ? "resume it (a note for the agent is optional)" : "send a message to go on"}, review what the agent wrote there as it is, or discard it.
              </span>
              {!reviewedAsItEnded && <ReviewEndedButton sessionId={sessionId} onError={setError} />}
              <button className="btn danger" onClick={() => setConfirmDiscard(true)} data-testid="discard-work">
                Discard its work
              </button>
            </div>
          )}
          {/* In the person's folder, its changes are there undecided: reviewed as it ended, a
              reject puts them back. Offered once the agent used a tool (it may have written). */}
          {ENDED_UNREVIEWED.includes(model.status) && model.place && !model.place.worktree && !model.attempt && usedTools && !reviewedAsItEnded && (
            <div className="notice row" data-testid="review-ended-offer">
              <span className="grow">What it changed stays in your folder undecided until you {resumable ? "resume it" : "send a message to go on"}, or review it as it is: keep it, or reject it and put it back.</span>
              <ReviewEndedButton sessionId={sessionId} onError={setError} />
            </div>
          )}
          <div className="row">
            <input value={message} onChange={(e) => setMessage(e.target.value)} placeholder={notePlaceholder} aria-label="Message" data-testid="message-input" onKeyDown={(e) => {
                // Only with a note: the focus comes here after a Cancel, and an Enter meant for
                // something else must not start the run again. Resume alone is its button.
                if (e.key === "Enter" && !e.shiftKey && !e.nativeEvent.isComposing && message.trim()) {
                  e.preventDefault();
                  void send();
                }
              }} />
            <button className="btn primary" onClick={send} data-testid="send-message" disabled={sending || (!resumable && !message.trim())} aria-busy={sending}>
              {resumable ? "Resume" : "Send"}
            </button>
          </div>
        </div>
      )}
      </>
      )}
      </div>
      {confirmDiscard && model.place?.worktree && (
        <ConfirmDiscard
          branch={model.place.worktree.branch}
          onKeep={() => setConfirmDiscard(false)}
          onDiscard={() => {
            setConfirmDiscard(false);
            act(ipc.discardSession(sessionId));
          }}
          onKeepBranch={() => {
            setConfirmDiscard(false);
            act(ipc.discardSession(sessionId, true));
          }}
        />
      )}
      {confirmCancel && (
        <ConfirmCancel
          planWaiting={planWaiting}
          planEdited={planEditsAtStake()}
          onKeep={() => setConfirmCancel(false)}
          onCancel={() => {
            setConfirmCancel(false);
            cancel();
          }}
        />
      )}
    </section>
  );
}

/** Statuses in which a task ended without a review, its work (if any) undecided. */
const ENDED_UNREVIEWED: string[] = ["failed", "cancelled", "interrupted", "idle"];

/** The built-in agent's tools that change no file (the engine's `tool::READ_ONLY`). */
const READ_ONLY_TOOLS = ["read_file", "list_dir", "glob", "grep", "fetch_url", "todo_write", "ask_user", "complete_task", "session_log"];

/** Opens the review of a task that ended without one, as it is: no model is asked. */
function ReviewEndedButton({ sessionId, onError }: { sessionId: string; onError: (e: AppError | null) => void }) {
  const [busy, setBusy] = useState(false);
  const open = async () => {
    setBusy(true);
    onError(null);
    try {
      await ipc.reviewEnded(sessionId);
    } catch (e) {
      onError(e as AppError);
    } finally {
      setBusy(false);
    }
  };
  return (
    <button className="btn" onClick={() => void open()} disabled={busy} aria-busy={busy} data-testid="review-ended" title="Shows what it changed, as it is now, to approve or reject; no model is asked">
      Review its changes
    </button>
  );
}

type Ask = Extract<Item, { kind: "permission" } | { kind: "question" }>;

function awaitsAnswer(item: Ask): boolean {
  return item.kind === "permission" ? !item.decision && !item.cancelled : !item.answered && !item.cancelled;
}

/** The request the person must answer now, if any (the latest one still open). */
function pendingAsk(items: Item[]): Ask | null {
  for (let i = items.length - 1; i >= 0; i--) {
    const it = items[i];
    if ((it.kind === "permission" || it.kind === "question") && awaitsAnswer(it)) return it;
  }
  return null;
}

/** m:ss, or h:mm:ss past an hour. */
export function clockText(ms: number): string {
  const secs = Math.max(0, Math.round(ms / 1000));
  const h = Math.floor(secs / 3600);
  const m = Math.floor((secs % 3600) / 60);
  const s = String(secs % 60).padStart(2, "0");
  return h > 0 ? `${h}:${String(m).padStart(2, "0")}:${s}` : `${m}:${s}`;
}

/** How long the run has taken (all its steps, evaluation and waiting included) and how fast the
 * model writes in the current step: a slow local model shows as slow. */
function RunTiming({ run, step, live }: { run: { startedAt: number; finishedAt?: number }; step?: StepClock; live: boolean }) {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    if (!live) return;
    setNow(Date.now());
    const t = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(t);
  }, [live]);
  const end = run.finishedAt ?? (live ? Math.max(now, step?.lastAt ?? run.startedAt) : (step?.finishedAt ?? step?.lastAt ?? run.startedAt));
  const rate = step ? tokensPerSecond(step) : null;
  return (
    <span data-testid="run-timing" className="muted whole" title="The run's time so far, and the model's speed in this step">
      {/* A run over in less than a second read "0:00", as if it had not run at all. */}
      {!live && end - run.startedAt < 1000 ? "under 1 s" : clockText(end - run.startedAt)}
      {rate !== null && ` · ${rate < 10 ? rate.toFixed(1) : Math.round(rate)} tok/s`}
    </span>
  );
}
