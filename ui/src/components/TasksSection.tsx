import { useState } from "react";
import type { Isolation, LandingMode, Settings, TaskSettings } from "../ipc";
import { NumberInput } from "./NumberInput";
import { StoragePanel } from "./StoragePanel";

const DEFAULTS: TaskSettings = { isolation: "worktree", worktree_dir: "", worktree_include: [".env", ".env.*", "!.env.example"], parallel_limit: 4, landing: "squash", max_attempts: 4 };

/** The patterns of the untracked-files box: one per line, blank lines left out. */
const patterns = (text: string) =>
  text
    .split("\n")
    .map((l) => l.trim())
    .filter(Boolean);

/** Settings → Tasks: where tasks work, how many at once, how approved ones land; and the disk
 * their worktrees and checkpoints take. */
export function TasksSection({ draft, onChange }: { draft: Settings; onChange: (tasks: TaskSettings) => void }) {
  const t = { ...DEFAULTS, ...(draft.tasks ?? {}) };
  const set = (patch: Partial<TaskSettings>) => onChange({ ...t, ...patch });
  // The patterns box keeps what is being typed (a new line, a trailing space); the settings get
  // the patterns. Settings replaced from elsewhere (an import) show as theirs.
  const [includeText, setIncludeText] = useState(() => t.worktree_include.join("\n"));
  const includeShown = patterns(includeText).join("\n") === t.worktree_include.join("\n") ? includeText : t.worktree_include.join("\n");
  return (
    <fieldset className="panel" data-testid="tasks-section" id="settings-tasks">
      <legend>Tasks</legend>
      <label className="field">
        <span>Where tasks work</span>
        <select data-testid="isolation" value={t.isolation} onChange={(e) => set({ isolation: e.target.value as Isolation })}>
          <option value="worktree">In a git repository, each in its own worktree (side by side; approve lands it)</option>
          <option value="in_place">In the folder itself</option>
        </select>
        <span className="muted small">Outside a git repository a task always works in the folder itself; its review and revert cover only what it changed.</span>
      </label>
      <label className="field">
        <span>Tasks at once</span>
        <NumberInput min={1} max={32} data-setting="tasks.parallel_limit" data-testid="parallel-limit" value={t.parallel_limit} onChange={(n) => set({ parallel_limit: n })} />
        <span className="muted small">More wait, visibly queued, until one ends.</span>
      </label>
      <label className="field">
        <span>Attempts side by side, at most</span>
        <NumberInput min={1} max={16} data-setting="tasks.max_attempts" data-testid="max-attempts" value={t.max_attempts ?? 4} onChange={(n) => set({ max_attempts: n })} />
        <span className="muted small">New Task can run one task by several agents at once, each in its own worktree, and rank them; this is the most attempts one task may have in all (1 turns attempts off).</span>
      </label>
      <label className="field">
        <span>Approve lands the task</span>
        <select data-testid="landing-default" value={t.landing} onChange={(e) => set({ landing: e.target.value as LandingMode })}>
          <option value="squash">As one commit on your branch (title and the evaluator's summary)</option>
          <option value="merge">With the task's commits and a merge commit</option>
          <option value="uncommitted">As uncommitted changes in your working tree</option>
          <option value="branch">Keep its branch only</option>
        </select>
      </label>
      <label className="field">
        <span>Untracked files each worktree gets from your checkout</span>
        <textarea
          rows={3}
          data-testid="worktree-include"
          data-setting="tasks.worktree_include"
          value={includeShown}
          onChange={(e) => {
            setIncludeText(e.target.value);
            set({ worktree_include: patterns(e.target.value) });
          }}
          spellCheck={false}
        />
        <span className="muted small">
          One pattern per line, gitignore syntax; a repository's own <code>.worktreeinclude</code> adds to these. They are never committed.
        </span>
      </label>
      <label className="field">
        <span>Worktree folder</span>
        <input data-setting="tasks.worktree_dir" data-testid="worktree-dir" value={t.worktree_dir} placeholder="worktrees/ in Finishline's data folder" onChange={(e) => set({ worktree_dir: e.target.value })} spellCheck={false} />
      </label>
      <h3 id="settings-storage">Storage</h3>
      <StoragePanel />
    </fieldset>
  );
}

