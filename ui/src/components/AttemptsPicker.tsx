// New Task's "Attempts": the same task by several agents (or several tries of one), side by side
// in their own worktrees, ranked by the judge when they end. Off by default; only offered where
// tasks get worktrees (a git repository with a commit).
import { useState } from "react";
import type { AgentPreset, ExternalAgent } from "../ipc";

export interface AttemptChoice {
  /** What the engine takes: `builtin`, a preset's name, the Settings agent's name. */
  agent: string;
  label: string;
  count: number;
  /** On Finishline's agent's row: a model added by hand that is the one it runs on now, whose
   * attempts this row counts for as long as it is. */
  absorbed?: AttemptChoice;
}

/** The agent chosen in Settings, by name, when it is not an installed preset (listed with those):
 * a preset that is not installed here says so before Run fails on it. */
export function settingsAgentLabel(settingsAgent: ExternalAgent | null, presets: AgentPreset[]): string | null {
  if (!settingsAgent) return null;
  const preset = presets.find((p) => p.name === settingsAgent.name);
  if (preset?.found) return null;
  return preset ? `${preset.label} (from Settings, not installed here)` : `${settingsAgent.name} (from Settings)`;
}

/** The agents one could send the task to: the built-in one, the one from Settings, installed presets. */
export function attemptChoices(model: string, settingsAgent: ExternalAgent | null, presets: AgentPreset[]): AttemptChoice[] {
  const out: AttemptChoice[] = [{ agent: "builtin", label: `Finishline's agent${model ? ` (${model})` : ""}`, count: 0 }];
  const fromSettings = settingsAgentLabel(settingsAgent, presets);
  if (settingsAgent && fromSettings) out.push({ agent: settingsAgent.name, label: fromSettings, count: 0 });
  for (const p of presets.filter((p) => p.found)) out.push({ agent: p.name, label: p.label, count: 0 });
  return out;
}

/** The choices with Finishline's agent on another model of the same provider added (one attempt),
 * as the CLI's `builtin:MODEL`; a model already listed gets one attempt more instead. */
export function withModel(choices: AttemptChoice[], model: string, current: string): AttemptChoice[] {
  const m = model.trim();
  if (!m) return choices;
  const agent = m === current ? "builtin" : `builtin:${m}`;
  const known = choices.find((c) => c.agent === agent);
  if (known) return choices.map((c) => (c === known ? { ...c, count: c.count + 1 } : c));
  return [...choices, { agent, label: `Finishline's agent (${m})`, count: 1 }];
}

/**
 * The choices again for agents or a model that changed (`fresh`, from [`attemptChoices`]), with
 * the counts the person gave: Finishline's agent starts at two, models they added stay, and an
 * added model that is now the one the agent runs on joins its row rather than showing twice. It
 * is held there (`absorbed`), not dropped: the Model field changes with every key, and a model
 * typed on past ("gpt-4o" on the way to "gpt-4o-mini") gives it back its own row.
 */
export function refreshedChoices(old: AttemptChoice[], fresh: AttemptChoice[], model: string): AttemptChoice[] {
  const current = `builtin:${model.trim()}`;
  const held = old.find((o) => o.agent === "builtin")?.absorbed;
  const released = held && held.agent !== current ? held : undefined;
  const added = [...old.filter((o) => o.agent.startsWith("builtin:")), ...(released ? [released] : [])];
  const joining = added.find((o) => o.agent === current);
  const absorbed = joining ?? (held && !released ? held : undefined);
  return [
    ...fresh.map((c) => {
      const count = old.find((o) => o.agent === c.agent)?.count ?? (c.agent === "builtin" ? 2 : 0);
      if (c.agent !== "builtin") return { ...c, count };
      return { ...c, count: Math.max(0, count - (released?.count ?? 0)) + (joining?.count ?? 0), absorbed };
    }),
    ...added.filter((o) => o !== joining),
  ];
}

/** One entry per attempt, in order: `["builtin", "builtin", "codex"]`. */
export function attemptList(choices: AttemptChoice[]): string[] {
  return choices.flatMap((c) => Array.from({ length: c.count }, () => c.agent));
}

/** The ranking rule in words, as `judge/ranking.rs` applies it; New Task and the group's screen
 * say it the same way. */
export const RANKING_RULE =
  "verified done first; then having work to review (changed files); no audit findings; more verification commands passing; fewer items the evaluator found left; a smaller diff; a lower cost to reach its first review (fewer tokens when a model has no price)";

/** Why these attempts cannot start, or null. */
export function attemptsProblem(choices: AttemptChoice[], limit: number): string | null {
  const n = choices.reduce((a, c) => a + c.count, 0);
  if (n < 2) return "Choose at least two attempts (one agent twice is fine)";
  if (n > limit) return `At most ${limit} attempts in all (Settings → Tasks)`;
  return null;
}

interface Props {
  on: boolean;
  onToggle: (on: boolean) => void;
  choices: AttemptChoice[];
  onChange: (choices: AttemptChoice[]) => void;
  limit: number;
  /** The folder gives each task a worktree; attempts need one each. */
  available: boolean;
  /** The model Finishline's agent uses unless another is added here. */
  model?: string;
}

export function AttemptsPicker({ on, onToggle, choices, onChange, limit, available, model = "" }: Props) {
  const [another, setAnother] = useState("");
  const addModel = () => {
    onChange(withModel(choices, another, model));
    setAnother("");
  };
  const total = choices.reduce((a, c) => a + c.count, 0);
  // Not clamped to the limit: a count over it stays as typed and the problem below says why Run
  // waits (a number that silently changes is a surprise).
  const set = (i: number, count: number) => onChange(choices.map((c, j) => (j === i ? { ...c, count: Math.max(0, Math.min(99, Math.trunc(count))) } : c)));
  const off = limit < 2;
  return (
    <fieldset className="field attempts-choice" data-testid="attempts-choice">
      <legend>Attempts</legend>
      <label className="check">
        <input type="checkbox" checked={on && !off} disabled={(!available && !on) || off} onChange={(e) => onToggle(e.target.checked)} data-testid="attempts-toggle" />
        Run it with several agents side by side, and let the evaluator rank them
      </label>
      {!available && <span className="muted small">Attempts each get their own worktree: choose a folder in a git repository with a commit.</span>}
      {available && off && (
        <span className="muted small" data-testid="attempts-off">
          Off: Settings → Tasks allows at most {limit} attempt{limit === 1 ? "" : "s"} of a task. Raise it to 2 or more to run attempts side by side.
        </span>
      )}
      {on && available && !off && (
        <>
          <div className="attempts-grid" role="group" aria-label="Attempts per agent">
            {choices.map((c, i) => (
              <label key={c.agent} className="attempt-count">
                <input
                  type="number"
                  min={0}
                  max={limit}
                  aria-invalid={c.count > limit || undefined}
                  // None is an empty box, not "0": emptied to type a new count, a 0 left in
                  // it made "9" into "09" (the window keeps the text of an equal number).
                  value={c.count === 0 ? "" : c.count}
                  placeholder="0"
                  onChange={(e) => set(i, Number(e.target.value) || 0)}
                  data-testid={`attempts-${c.agent}`}
                  aria-label={`Attempts by ${c.label}`}
                />
                <span>{c.label}</span>
              </label>
            ))}
          </div>
          <div className="row" role="group" aria-label="Another model for Finishline's agent">
            <input
              value={another}
              onChange={(e) => setAnother(e.target.value)}
              onKeyDown={(e) => {
                if (e.key === "Enter") {
                  // Enter adds the model; it must not start the run.
                  e.preventDefault();
                  addModel();
                }
              }}
              className="grow"
              placeholder="Another model for Finishline's agent, e.g. gpt-4.1-mini"
              aria-label="Another model for Finishline's agent"
              data-testid="attempts-model"
            />
            <button type="button" className="btn" disabled={!another.trim()} onClick={addModel} data-testid="attempts-add-model">
              Add
            </button>
          </div>
          <span className="muted small" data-testid="attempts-total">
            {total} of at most {limit} attempts. Each works in its own worktree from the same commit, is judged the same way, and the group is ranked: {RANKING_RULE}. You land one; the others are put away.
          </span>
        </>
      )}
    </fieldset>
  );
}
