import { useEffect, useRef, useState, type KeyboardEvent } from "react";
import { useFocusAdded } from "../focusAdded";
import { ListChecks, Plus, Trash2 } from "lucide-react";
import { AppError, ipc, type PlanStep } from "../ipc";
import { ConfirmCancel } from "./ConfirmCancel";
import { andList } from "../session/planStrip";

/** The most steps a plan may have; the engine refuses more. */
export const MAX_STEPS = 7;

interface Draft {
  title: string;
  instructions: string;
  /** One criterion per line, as the person types them. */
  criteria: string;
  depends_on: number[];
}

const toDraft = (s: PlanStep): Draft => ({ title: s.title, instructions: s.instructions, criteria: s.criteria.join("\n"), depends_on: s.depends_on });
const toStep = (d: Draft): PlanStep => ({ title: d.title, instructions: d.instructions, criteria: d.criteria.split("\n"), depends_on: d.depends_on });

/** The edits kept for this session's plan, if they were made to the same plan. */
function keptDrafts(key: string, planned: string): Draft[] | null {
  try {
    const kept = JSON.parse(sessionStorage.getItem(key) ?? "null") as { planned: string; drafts: Draft[] } | null;
    return kept && kept.planned === planned ? kept.drafts : null;
  } catch {
    return null;
  }
}

const draftKey = (sessionId: string) => `finishline.planDraft.${sessionId}`;

/** Whether the person has edits to this plan, kept while it waits: cancelling would lose them. */
export function planEdited(sessionId: string, steps: PlanStep[]): boolean {
  const drafts = keptDrafts(draftKey(sessionId), JSON.stringify(steps));
  return !!drafts && differs(drafts, steps);
}

/** Whether the drafts say anything other than the manager's steps. */
function differs(drafts: Draft[], steps: PlanStep[]): boolean {
  return JSON.stringify(drafts) !== JSON.stringify(steps.map(toDraft));
}

function keepDrafts(key: string, planned: string, drafts: Draft[]) {
  try {
    sessionStorage.setItem(key, JSON.stringify({ planned, drafts }));
  } catch {
    // Storage full or refused: the edits live as long as the view.
  }
}

function forgetDrafts(key: string) {
  try {
    sessionStorage.removeItem(key);
  } catch {
    // Nothing kept.
  }
}

/**
 * The manager's plan before it runs: each step's text and success criteria can be edited, steps
 * removed or added; Run sends the plan as it stands, Cancel ends the task with nothing run.
 */
export function PlanReview({ sessionId, steps, budget, spent = 0, task }: { sessionId: string; steps: PlanStep[]; budget?: number; spent?: number; task?: string }) {
  // The person's edits outlive the view (they may look at the transcript and come back), for
  // this plan as the manager wrote it: a revised plan starts from its own steps.
  const key = draftKey(sessionId);
  const planned = JSON.stringify(steps);
  const [drafts, setDrafts] = useState<Draft[]>(() => keptDrafts(key, planned) ?? steps.map(toDraft));
  useEffect(() => keepDrafts(key, planned, drafts), [key, planned, drafts]);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const edit = (i: number, patch: Partial<Draft>) => setDrafts((ds) => ds.map((d, j) => (j === i ? { ...d, ...patch } : d)));
  const titles = useFocusAdded(drafts.length);
  const addButton = useRef<HTMLButtonElement>(null);
  const remove = (i: number) => {
    // The focus would fall to the page with the removed step's button.
    titles.removing(i, addButton.current);
    // Later steps' dependencies shift with the removed step; one on it is dropped.
    setDrafts((ds) => ds.filter((_, j) => j !== i).map((d) => ({ ...d, depends_on: d.depends_on.filter((x) => x !== i).map((x) => (x > i ? x - 1 : x)) })));
  };
  const add = () => {
    titles.adding();
    setDrafts((ds) => [...ds, { title: "", instructions: "", criteria: "", depends_on: [] }]);
  };
  // Cancel says what it does; it asks first only when it would throw away the person's edits.
  const edited = differs(drafts, steps);
  const [confirmCancel, setConfirmCancel] = useState(false);
  const empty = drafts.findIndex((d) => !d.title.trim() && !d.instructions.trim());
  const blocker = drafts.length === 0 ? "Add a step, or cancel the task" : empty >= 0 ? `Step ${empty + 1} is empty: give it a title, or remove it` : null;

  // Its own flag: a plan whose start is on its way (or hangs) can still be cancelled, as the
  // header's Cancel, not shown beside this one, could.
  const [cancelling, setCancelling] = useState(false);
  const run = async () => {
    if (blocker || busy || cancelling) return;
    setBusy(true);
    setError(null);
    try {
      await ipc.runPlan(sessionId, drafts.map(toStep));
      forgetDrafts(key);
    } catch (e) {
      // Nothing typed is lost: the editor stays as it was.
      setError((e as AppError).message);
      setBusy(false);
    }
  };
  const cancel = async () => {
    setConfirmCancel(false);
    setCancelling(true);
    try {
      await ipc.cancelRun(sessionId);
      forgetDrafts(key);
    } catch (e) {
      setError((e as AppError).message);
      setCancelling(false);
    }
  };
  const onKeyDown = (e: KeyboardEvent) => {
    // The dialog asking about Cancel is drawn elsewhere, but its keys still bubble up here.
    if (confirmCancel) return;
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      run();
    }
  };

  return (
    <section className="panel plan-review" data-testid="plan-review" aria-label="Review the plan" onKeyDown={onKeyDown}>
      <h2>
        <ListChecks size={16} aria-hidden /> The plan, before it runs
      </h2>
      <p className="muted small" title={budget !== undefined ? "Model calls of the whole plan: the agent's, the evaluator's and the manager's" : undefined}>
        {/* Making the plan spent some of its calls already: what is left is what the steps have. */}
        Each step runs on its own and is checked against its criteria{budget !== undefined && `; ${Math.max(0, budget - spent)} of the plan's ${budget} model calls are left`}. Edit, remove or
        add steps, then run it.
      </p>
      {/* The editor fills most of the window, and the transcript above it had room for none of
          the task: the steps are read against it, so it is here too (plain text, its first lines). */}
      {task && (
        // Focusable: its whole text shows while focused, for a keyboard as for a hover.
        <p className="plan-task small" data-testid="plan-task" title={task} tabIndex={0}>
          <span className="muted">Your task: </span>
          {task}
        </p>
      )}
      <ol className="plan-edit">
        {drafts.map((d, i) => (
          <li key={i} data-testid="plan-edit-step">
            <div className="row">
              {/* The list's own numbers are not drawn (its items are flex boxes); errors name steps by number. */}
              <span className="step-number muted" aria-hidden>
                {i + 1}.
              </span>
              <input
                ref={titles.field(i)}
                className="grow"
                aria-label={`Step ${i + 1} title`} data-testid="plan-edit-title" value={d.title} placeholder="What this step does (empty: its instructions' first line)" onChange={(e) => edit(i, { title: e.target.value })} />
              <button type="button" className="btn icon" onClick={() => remove(i)} title="Remove this step" aria-label={`Remove step ${i + 1}`} data-testid="plan-edit-remove" disabled={busy}>
                <Trash2 size={14} aria-hidden />
              </button>
            </div>
            {/* The manager's order, seen: a step removed drops the waits on it, as this shows. */}
            {d.depends_on.length > 0 && (
              <p className="muted small plan-edit-after" data-testid="plan-edit-after">
                Starts after {d.depends_on.length === 1 ? "step" : "steps"} {andList(d.depends_on.map((x) => String(x + 1)))}
              </p>
            )}
            {/* Filled in, a box's placeholder is gone: a visible word says which box is which. */}
            <label className="plan-edit-field">
              <span className="muted small">Instructions</span>
              <textarea aria-label={`Step ${i + 1} instructions`} data-testid="plan-edit-instructions" rows={2} value={d.instructions} placeholder="Instructions for the agent" onChange={(e) => edit(i, { instructions: e.target.value })} />
            </label>
            <label className="plan-edit-field">
              <span className="muted small">Done when (one per line)</span>
              <textarea className="criteria-box" aria-label={`Step ${i + 1} success criteria`} data-testid="plan-edit-criteria" rows={2} value={d.criteria} placeholder="Done when… (one per line)" onChange={(e) => edit(i, { criteria: e.target.value })} />
            </label>
          </li>
        ))}
      </ol>
      {error && (
        <p className="field-error" role="alert">
          {error}
        </p>
      )}
      <div className="row">
        <button type="button" className="btn" ref={addButton} onClick={add} disabled={busy || drafts.length >= MAX_STEPS} title={drafts.length >= MAX_STEPS ? `At most ${MAX_STEPS} steps` : "Add a step"} data-testid="plan-edit-add">
          <Plus size={14} aria-hidden /> Add step
        </button>
        <span className="grow muted small">{blocker ?? "Ctrl+Enter runs"}</span>
        <button type="button" className="btn" onClick={() => (edited ? setConfirmCancel(true) : cancel())} disabled={cancelling} data-testid="plan-cancel">
          Cancel task
        </button>
        <button type="button" className="btn primary" onClick={run} disabled={!!blocker || busy || cancelling} title={blocker ?? "Run the plan (Ctrl+Enter)"} data-testid="plan-run">
          Run plan
        </button>
      </div>
      {confirmCancel && <ConfirmCancel planWaiting planEdited onKeep={() => setConfirmCancel(false)} onCancel={cancel} />}
    </section>
  );
}
