import { AboutPanel } from "../components/AboutPanel";
import { AgentSection } from "../components/AgentSection";
import { TasksSection } from "../components/TasksSection";
import { useCallback, useEffect, useRef, useState, type FormEvent, type MutableRefObject } from "react";
import { NumberInput } from "../components/NumberInput";
import { SettingsIndex } from "../components/SettingsIndex";
import { showTheme } from "../theme";
import { McpSection } from "../components/McpSection";
import { EvaluatorServer } from "../components/EvaluatorServer";
import { ProviderSection } from "../components/ProviderSection";
import { AppError, ipc, type ImportRisks, type PermissionDefault, type PlanMode, type Settings, type SettingsView, type Theme } from "../ipc";
import { badBaseUrl, settingOf, settingsErrorInWords } from "../settingsWords";

/** "folder: command" lines ⇄ the settings' map, so the person edits plain text. */
export function verifyToText(map: Record<string, string[]>): string {
  return Object.entries(map)
    .flatMap(([ws, cmds]) => cmds.map((c) => `${ws}: ${c}`))
    .join("\n");
}

export function textToVerify(text: string): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const line of text.split("\n")) {
    const i = line.indexOf(": ");
    if (i <= 0) continue;
    const ws = line.slice(0, i).trim();
    const cmd = line.slice(i + 2).trim();
    if (ws && cmd) (out[ws] ??= []).push(cmd);
  }
  return out;
}

/** The lines of the verify box that would never run, each with why: not “folder: command”, or a
 * folder that is no full path (a task's folder is matched by its full path, so `~/p` or `p`
 * would never apply). Saving waits until there are none. */
export function badVerifyLines(text: string): string[] {
  return text
    .split("\n")
    .filter((l) => l.trim())
    .flatMap((line) => {
      const i = line.indexOf(": ");
      const folder = i > 0 ? line.slice(0, i).trim() : "";
      if (!folder || !line.slice(i + 2).trim()) return [`“${line.trim()}” is not “folder: command”`];
      if (!folder.startsWith("/") && !/^[A-Za-z]:[\\/]/.test(folder)) return [`“${folder}” is no full path (write the folder as it is on disk, e.g. /home/me/project)`];
      return [];
    });
}

const ASKING_TOOLS = ["run_command", "fetch_url"];

/** "model: input output" lines (dollars per million tokens) ⇄ the settings' prices. */
export function pricesToText(p: Settings["prices"]): string {
  return Object.entries(p)
    .map(([m, v]) => `${m}: ${v.input_per_mtok} ${v.output_per_mtok}`)
    .join("\n");
}

/** The lines of the prices box that are not "model: input output"; saving waits until they are. */
export function badPriceLines(text: string): string[] {
  return text
    .split("\n")
    .filter((l) => l.trim())
    .filter((line) => {
      const i = line.lastIndexOf(": ");
      if (i <= 0 || !line.slice(0, i).trim()) return true;
      const parts = line.slice(i + 2).trim().split(/\s+/);
      return parts.length !== 2 || parts.some((p) => !Number.isFinite(Number(p)) || Number(p) < 0);
    });
}

export function textToPrices(text: string): Settings["prices"] {
  const out: Settings["prices"] = {};
  for (const line of text.split("\n")) {
    const i = line.lastIndexOf(": ");
    if (i <= 0) continue;
    const [a, b] = line.slice(i + 2).trim().split(/\s+/).map(Number);
    if (Number.isFinite(a) && Number.isFinite(b)) out[line.slice(0, i).trim()] = { input_per_mtok: a, output_per_mtok: b };
  }
  return out;
}

interface Props {
  view: SettingsView;
  onSaved: (view: SettingsView) => void;
  /** Where the screen says whether it holds unsaved changes and how to save them. */
  guard?: MutableRefObject<SettingsGuard>;
  /** The field to take the focus on opening, when the screen was opened to fill it in. */
  focusField?: SettingsField;
}

export interface SettingsGuard {
  dirty: boolean;
  /** Saves the form as it is; false when it could not (the screen shows why), or when the form
   *  changed while it saved (what changed is still unsaved). */
  save: () => Promise<boolean>;
  /** The save under way (Save pressed a moment ago), if any: leaving waits for it, not asks. */
  saving?: Promise<boolean> | null;
}

/** A field Settings can open on (its element's id): the one a failure or a warning names. */
export type SettingsField = "provider-model" | "provider-base-url" | "key-input";

export function SettingsScreen({ view, onSaved, guard, focusField }: Props) {
  useEffect(() => {
    if (!focusField) return;
    const field = document.getElementById(focusField);
    field?.focus();
    field?.scrollIntoView?.({ block: "center" });
  }, [focusField]);
  const [draft, setDraft] = useState<Settings>(view.settings);
  // The settings as last saved: what "unsaved changes" are measured against.
  const [baseline, setBaseline] = useState<Settings>(view.settings);
  const [saving, setSaving] = useState(false);
  const [error, setError] = useState<AppError | null>(null);
  // The fields the last Save found wrong, when more than one: listed, each a way to its field.
  const [problems, setProblems] = useState<Found[]>([]);
  // Why the last Save was refused is about the values then: an edit since makes it stale.
  useEffect(() => setError((e) => (e?.code === "invalid_settings" ? null : e)), [draft]);
  useEffect(() => {
    if (error?.code !== "invalid_settings") setProblems([]);
  }, [error]);
  const [saved, setSaved] = useState(false);
  const [verifyText, setVerifyText] = useState(() => verifyToText(view.settings.verify_commands ?? {}));
  const [pricesText, setPricesText] = useState(() => pricesToText(view.settings.prices ?? {}));
  const [transfer, setTransfer] = useState<string | null>(null);

  const [pendingImport, setPendingImport] = useState<ImportRisks | null>(null);
  // Each import draws the number boxes afresh (Limits and Tasks hold them): one emptied or holding
  // a letter (no change to the draft, so the import was not refused) would otherwise keep that
  // text over an equal number.
  const [imports, setImports] = useState(0);
  const applyImported = (next: SettingsView, path: string) => {
    setImports((n) => n + 1);
    setDraft(next.settings);
    setBaseline(next.settings);
    setVerifyText(verifyToText(next.settings.verify_commands ?? {}));
    setPricesText(pricesToText(next.settings.prices ?? {}));
    onSaved(next);
    setTransfer(`Imported and saved from ${path}.`);
  };
  const exportSettings = async () => {
    setTransfer(null);
    try {
      const path = await ipc.exportSettings();
      if (path) setTransfer(`Exported to ${path} (without keys).`);
    } catch (e) {
      setTransfer((e as AppError).message);
    }
  };
  const importSettings = async () => {
    setTransfer(null);
    // An import replaces the whole form and saves it: what was typed here would be lost.
    if (dirty) {
      setTransfer("Save or discard your changes first: an import replaces every setting on this page.");
      return;
    }
    try {
      const out = await ipc.importSettings();
      if (out.outcome === "imported") applyImported(out.settings, out.path);
      if (out.outcome === "confirm") setPendingImport(out);
    } catch (e) {
      setTransfer((e as AppError).message);
    }
  };
  const confirmImport = async (accept: boolean) => {
    const pending = pendingImport;
    setPendingImport(null);
    try {
      const next = await ipc.confirmImport(accept);
      if (next && pending) applyImported(next, pending.path);
      else setTransfer("Import cancelled; your settings are unchanged.");
    } catch (e) {
      setTransfer((e as AppError).message);
    }
  };
  const setCompletion = (patch: Partial<Settings["completion"]>) => {
    setSaved(false);
    setDraft((d) => ({ ...d, completion: { ...d.completion, ...patch } }));
  };
  const setPermission = (tool: string, p: PermissionDefault) => {
    setSaved(false);
    setDraft((d) => ({ ...d, permissions: { ...d.permissions, [tool]: p } }));
  };

  const setProvider = (patch: Partial<Settings["provider"]>) => {
    setSaved(false);
    setDraft((d) => ({ ...d, provider: { ...d.provider, ...patch } }));
  };
  const setLimit = (key: keyof Settings["limits"], value: number) => {
    setSaved(false);
    setDraft((d) => ({ ...d, limits: { ...d.limits, [key]: value } }));
  };

  const form = useRef<HTMLFormElement>(null);
  const [pendingKey, setPendingKey] = useState<(() => Promise<boolean>) | null>(null);
  const keyPending = useCallback((save: (() => Promise<boolean>) | null) => setPendingKey(() => save), []);
  // The form as last rendered: a save on its way compares it with what it sent, since the fields
  // stay open while it saves.
  const latest = useRef({ draft, verifyText, pricesText });
  latest.current = { draft, verifyText, pricesText };
  const saveNow = async (): Promise<boolean> => {
    setError(null);
    // The form as it is now is what is checked and saved: what is typed meanwhile stays, unsaved.
    const sent = latest.current;
    const { draft, verifyText, pricesText } = sent;
    setSaving(true);
    try {
      // The window shows no bubble of its own for a number out of range: name the field, say what
      // it takes, and take the focus there (Save, Ctrl+S and "Save your changes?" alike).
      // Every mistake the form can tell at once is named: one at a time would take a Save for each.
      // Never drop what the person typed: say which field or line and how it should look.
      const invalid = Array.from(form.current?.querySelectorAll<HTMLInputElement>("input") ?? []).filter((i) => !i.validity.valid);
      const badVerify = badVerifyLines(verifyText);
      const badPrices = badPriceLines(pricesText);
      const badUrl = badBaseUrl(draft.provider.base_url);
      const field = (setting: string) => form.current?.querySelector<HTMLElement>(`[data-setting="${setting}"]`) ?? null;
      const found: Found[] = [
        ...invalid.map((i) => ({ at: i, text: whyInvalid(i) })),
        ...(badVerify.length > 0 ? [{ at: field("verify_commands"), text: `Verify commands: ${badVerify.join(", ")}; each line is “folder: command”, as in “/home/me/project: cargo test”` }] : []),
        ...(badPrices.length > 0
          ? [{ at: field("prices"), text: `Prices: ${badPrices.map((l) => `“${l}”`).join(", ")} ${badPrices.length === 1 ? "is" : "are"} not “model: input output” in US dollars per million tokens (for example “gpt-4.1-mini: 0.4 1.6”)` }]
          : []),
        ...(badUrl ? [{ at: field("provider.base_url"), text: badUrl, mark: "provider.base_url" }] : []),
      ];
      const settings = { ...draft, verify_commands: textToVerify(verifyText), prices: textToPrices(pricesText) };
      // What only the engine tells (the evaluator's server, the worktree folder) is named at the
      // same Save; a field named above already is not named twice. A number the form refuses
      // (-3, 60.5) is none the engine could read: it is asked with the saved one there instead.
      const named = new Set(found.map((f) => f.at?.dataset.setting));
      const checkable = invalid.reduce((s, i) => (i.dataset.setting ? withSettingOf(s, baseline, i.dataset.setting) : s), settings);
      // Not asked (an engine that cannot be reached): Save asks it again, and says what it refuses.
      const told = (await ipc.checkSettings(checkable).catch(() => null)) ?? [];
      for (const p of told.filter((p) => !named.has(p.field))) found.push({ at: field(p.field), text: settingsErrorInWords(`${p.field}: ${p.problem}`), mark: p.field });
      if (found.length > 0) {
        // As the form reads, top to bottom: the focus goes to the first.
        found.sort((a, b) => (a.at === b.at ? 0 : !a.at ? 1 : !b.at ? -1 : a.at.compareDocumentPosition(b.at) & Node.DOCUMENT_POSITION_FOLLOWING ? -1 : 1));
        setError(new AppError("invalid_settings", `${found.map((f) => f.text).join("; ")}. Nothing was saved.`));
        setProblems(found.length > 1 ? found : []);
        for (const f of found) if (f.mark) markRefused(form.current, f.mark, false);
        const first = found[0].at;
        first?.focus();
        first?.scrollIntoView?.({ block: "center" });
        return false;
      }
      const next = await ipc.saveSettings(settings);
      const now = latest.current;
      // Typed while it saved: kept, and unsaved (the form differs from what was saved).
      const changedSince = now.draft !== sent.draft || now.verifyText !== sent.verifyText || now.pricesText !== sent.pricesText;
      setBaseline(next.settings);
      if (!changedSince) {
        setDraft(next.settings);
        setVerifyText(verifyToText(next.settings.verify_commands ?? {}));
        setPricesText(pricesToText(next.settings.prices ?? {}));
      }
      onSaved(next);
      // A key typed but not saved goes where Enter would put it, after the provider it is for.
      if (pendingKey && !(await pendingKey())) return false;
      setSaved(!changedSince);
      return !changedSince;
    } catch (err) {
      const refused = err as AppError;
      const field = refused.code === "invalid_settings" ? settingOf(refused.message) : null;
      setError(field === null ? refused : new AppError(refused.code, `${refused.message.replace(/\.$/, "")}. Nothing was saved.`));
      if (field) markRefused(form.current, field);
      return false;
    } finally {
      setSaving(false);
    }
  };
  const inFlight = useRef<Promise<boolean> | null>(null);
  const save = (e: FormEvent) => {
    e.preventDefault();
    const p = saveNow();
    inFlight.current = p;
    // Set before the next render, for a click that leaves at once.
    if (guard) guard.current = { ...guard.current, saving: p };
    void p.finally(() => {
      if (inFlight.current === p) inFlight.current = null;
    });
  };
  // Unsaved: the form differs from the settings last saved, or holds a key not yet handed over.
  const dirty =
    pendingKey !== null ||
    JSON.stringify(draft) !== JSON.stringify(baseline) ||
    verifyText !== verifyToText(baseline.verify_commands ?? {}) ||
    pricesText !== pricesToText(baseline.prices ?? {});
  useEffect(() => {
    if (guard) guard.current = { dirty, save: saveNow, saving: inFlight.current };
  });
  useEffect(
    () => () => {
      if (guard) guard.current = { dirty: false, save: async () => true };
    },
    [guard],
  );
  // Ctrl+S also when the focus is on the page around the form (after a click on blank space):
  // what the form's own handler took is not taken twice.
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.defaultPrevented || e.isComposing || !(e.ctrlKey || e.metaKey) || e.altKey || e.key.toLowerCase() !== "s") return;
      if (document.querySelector('[role="alertdialog"], [role="dialog"]')) return;
      e.preventDefault();
      form.current?.requestSubmit();
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, []);
  // The theme shows as soon as it is picked; leaving without saving puts the saved one back.
  const savedTheme = useRef(baseline.theme);
  savedTheme.current = baseline.theme;
  useEffect(() => showTheme(draft.theme), [draft.theme]);
  useEffect(() => () => showTheme(savedTheme.current), []);

  const unknownKeys = view.unknown_keys ?? [];
  return (
    <form
      ref={form}
      className="screen settings-screen"
      noValidate
      onSubmit={save}
      // Ctrl+S saves, as in every editor, from any field.
      onKeyDown={(e) => {
        if ((e.ctrlKey || e.metaKey) && !e.altKey && e.key.toLowerCase() === "s") {
          e.preventDefault();
          e.currentTarget.requestSubmit();
        }
      }}
      data-testid="settings-form"
    >
      <header className="screen-head">
        <h1>Settings</h1>
        <p className="muted">Keys are never written to the settings file: they live in the OS keychain, an environment variable, or this session only.</p>
        <div className="row">
          <button type="button" className="btn" onClick={importSettings} data-testid="import-settings">
            Import…
          </button>
          <button type="button" className="btn" onClick={exportSettings} data-testid="export-settings">
            Export…
          </button>
          {transfer && (
            <span className="muted" role="status" data-testid="transfer-status">
              {transfer}
            </span>
          )}
        </div>
        {pendingImport && <ImportConfirm risks={pendingImport} onAnswer={(accept) => void confirmImport(accept)} />}
      </header>

      {unknownKeys.length > 0 && (
        <p className="notice warn" role="note" data-testid="settings-unknown-keys">
          The settings file holds {unknownKeys.length === 1 ? "a key" : "keys"} no setting takes: {unknownKeys.join(", ")}.{" "}
          {unknownKeys.length === 1 ? "It changes" : "They change"} nothing, and {unknownKeys.length === 1 ? "it is" : "they are"} kept in the file as written: check the spelling, or remove{" "}
          {unknownKeys.length === 1 ? "it" : "them"} from the file.
        </p>
      )}

      <SettingsIndex />

      <ProviderSection draft={draft} setProvider={setProvider} onKeyPending={keyPending} />

      <AgentSection
        agent={draft.agent ?? null}
        onChange={(agent) => {
          setSaved(false);
          setDraft((d) => ({ ...d, agent }));
        }}
      />

      <fieldset className="panel">
        <legend>Evaluator</legend>
        <label className="field">
          <span>Evaluator model</span>
          <input
            data-testid="evaluator-model"
            data-setting="evaluator_model"
            value={draft.evaluator_model ?? ""}
            onChange={(e) => {
              setSaved(false);
              setDraft((d) => ({ ...d, evaluator_model: e.target.value || null }));
            }}
            placeholder="Same as the agent's model"
            spellCheck={false}
          />
        </label>
        <label className="field">
          <span>Manager model (plan mode)</span>
          <input
            data-testid="manager-model"
            value={draft.manager_model ?? ""}
            onChange={(e) => {
              setSaved(false);
              setDraft((d) => ({ ...d, manager_model: e.target.value || null }));
            }}
            placeholder="Same as the evaluator's model"
            spellCheck={false}
          />
        </label>
        <EvaluatorServer
          draft={draft}
          onChange={(evaluator_provider) => {
            setSaved(false);
            setDraft((d) => ({ ...d, evaluator_provider }));
          }}
        />
      </fieldset>

      <fieldset className="panel" key={`limits-${imports}`}>
        <legend>Limits</legend>
        {/* Each box's range is the engine's (limit_problems in config/settings.rs): a number past
            it is marked as it is typed, not only named at Save. */}
        <div className="grid3">
          <label className="field" title="Model calls of Finishline's own agent in one run. An external agent's whole turn is one step (its own tool calls are not counted): the step timeout, on its silence, and Cancel bound it.">
            <span>Max steps per run</span>
            <NumberInput min={1} max={10_000} data-setting="limits.max_steps" value={draft.limits.max_steps} onChange={(n) => setLimit("max_steps", n)} />
          </label>
          <label className="field">
            <span>Continuation budget</span>
            <NumberInput min={1} max={100} data-setting="limits.continuation_budget" value={draft.limits.continuation_budget} onChange={(n) => setLimit("continuation_budget", n)} />
          </label>
          <label className="field">
            <span>Max retries</span>
            <NumberInput min={1} max={50} data-setting="limits.max_retries" data-testid="max-retries" value={draft.limits.max_retries} onChange={(n) => setLimit("max_retries", n)} />
          </label>
          <label className="field">
            <span>Truncations in a row</span>
            <NumberInput min={1} max={20} data-setting="limits.truncation_cap" data-testid="truncation-cap" value={draft.limits.truncation_cap ?? 3} onChange={(n) => setLimit("truncation_cap", n)} />
          </label>
          <label className="field">
            <span>Short stop (output tokens)</span>
            <NumberInput min={0} max={1000} data-setting="limits.short_stop_tokens" value={draft.limits.short_stop_tokens ?? 10} onChange={(n) => setLimit("short_stop_tokens", n)} />
          </label>
          <label className="field">
            <span>Max output tokens</span>
            <NumberInput min={16} max={1_000_000} data-setting="limits.max_output_tokens" value={draft.limits.max_output_tokens ?? 4096} onChange={(n) => setLimit("max_output_tokens", n)} />
          </label>
          <label className="field">
            <span>Step time limit (seconds)</span>
            <NumberInput min={10} max={86_400} data-setting="limits.step_timeout_secs" data-testid="step-timeout" value={draft.limits.step_timeout_secs ?? 600} onChange={(n) => setLimit("step_timeout_secs", n)} />
          </label>
          <label className="field">
            <span>Repeats that stop an answer</span>
            <NumberInput min={3} max={1000} data-setting="limits.repeat_threshold" data-testid="repeat-threshold" value={draft.limits.repeat_threshold ?? 8} onChange={(n) => setLimit("repeat_threshold", n)} />
          </label>
          <label className="field">
            <span>Checkpoint file size limit (MB)</span>
            <NumberInput min={1} max={100_000} data-setting="limits.checkpoint_max_file_mb" data-testid="checkpoint-max-file" value={draft.limits.checkpoint_max_file_mb ?? 10} onChange={(n) => setLimit("checkpoint_max_file_mb", n)} />
          </label>
          <label className="field">
            <span>Context window of {draft.provider.model || "the model"} (tokens)</span>
            <NumberInput
              min={1024}
              max={10_000_000}
              data-setting={draft.provider.model ? "context_windows" : "limits.context_window"}
              data-testid="context-window"
              value={draft.context_windows?.[draft.provider.model] ?? draft.limits.context_window ?? 32000}
              onChange={(v) => {
                setSaved(false);
                setDraft((d) => (d.provider.model ? { ...d, context_windows: { ...(d.context_windows ?? {}), [d.provider.model]: v } } : { ...d, limits: { ...d.limits, context_window: v } }));
              }}
            />
          </label>
        </div>
        <p className="muted small" data-testid="checkpoint-excludes">
          Checkpoints (for the review's diffs and Reject's revert) leave out larger files, what the workspace's own ignore files name, and always: {(view.checkpoint_excludes ?? []).join(" ")}
        </p>
        <label className="check">
          <input type="checkbox" data-testid="auto-approve" checked={draft.auto_approve ?? false} onChange={(e) => { setSaved(false); setDraft((d) => ({ ...d, auto_approve: e.target.checked })); }} />
          Approve verified completions without asking (only “verified done”; everything else waits for you)
        </label>
      </fieldset>

      <fieldset className="panel">
        <legend>Completion checks</legend>
        <label className="field">
          <span>Plan for new tasks</span>
          <select
            data-testid="plan-mode-select"
            value={draft.plan_mode ?? "auto"}
            onChange={(e) => {
              setSaved(false);
              setDraft((d) => ({ ...d, plan_mode: e.target.value as PlanMode }));
            }}
          >
            <option value="auto">Auto: a manager splits long tasks into checked steps</option>
            <option value="on">On: always split into checked steps</option>
            <option value="off">Off: one run, judged at the end</option>
          </select>
        </label>
        <label className="check">
          <input
            type="checkbox"
            data-testid="review-plan"
            checked={!(draft.run_plans_without_review ?? false)}
            onChange={(e) => {
              setSaved(false);
              setDraft((d) => ({ ...d, run_plans_without_review: !e.target.checked }));
            }}
          />
          Review the plan before it runs (edit, remove or add steps)
        </label>
        <label className="field">
          <span>Completion marker (empty: off)</span>
          <input data-setting="completion.marker" value={draft.completion.marker} onChange={(e) => setCompletion({ marker: e.target.value })} placeholder="e.g. TASK_COMPLETE" spellCheck={false} />
        </label>
        <label className="check">
          <input type="checkbox" checked={draft.completion.require_complete_task} onChange={(e) => setCompletion({ require_complete_task: e.target.checked })} /> Require the agent to call complete_task
        </label>
        <label className="check">
          <input type="checkbox" checked={draft.completion.continue_after_denial} onChange={(e) => setCompletion({ continue_after_denial: e.target.checked })} /> After I deny a permission, tell the agent and let it go on
        </label>
        <label className="field">
          <span>Verify commands, one per line as “folder: command”</span>
          <textarea
            rows={3}
            value={verifyText}
            onChange={(e) => {
              setSaved(false);
              setVerifyText(e.target.value);
            }}
            placeholder="/home/me/project: cargo test"
            spellCheck={false}
            data-testid="verify-commands"
            data-setting="verify_commands"
            aria-invalid={badVerifyLines(verifyText).length > 0 || undefined}
          />
          {badVerifyLines(verifyText).length > 0 && (
            <span className="field-error" data-testid="verify-error">
              Would never run: {badVerifyLines(verifyText).join("; ")}
            </span>
          )}
        </label>
      </fieldset>

      <fieldset className="panel">
        <legend>Permissions</legend>
        {ASKING_TOOLS.map((t) => (
          <label className="field" key={t}>
            <span>
              <code>{t}</code>
            </span>
            <select value={draft.permissions[t] ?? "ask"} onChange={(e) => setPermission(t, e.target.value as PermissionDefault)}>
              <option value="ask">Ask me each time</option>
              <option value="allow">Always allow</option>
              <option value="deny">Never allow</option>
            </select>
          </label>
        ))}
      </fieldset>

      <McpSection
        draft={draft}
        setServers={(mcp_servers) => {
          setSaved(false);
          setDraft((d) => ({ ...d, mcp_servers }));
        }}
      />

      <fieldset className="panel">
        <legend>Prices</legend>
        <label className="field">
          <span>One model per line: “model: input output” in US dollars per million tokens</span>
          <textarea
            rows={2}
            value={pricesText}
            onChange={(e) => {
              setSaved(false);
              setPricesText(e.target.value);
            }}
            placeholder="gpt-4.1-mini: 0.4 1.6"
            spellCheck={false}
            data-testid="prices"
            data-setting="prices"
            aria-invalid={badPriceLines(pricesText).length > 0 || undefined}
          />
          {badPriceLines(pricesText).length > 0 && (
            <span className="field-error" data-testid="prices-error">
              Not a price line: {badPriceLines(pricesText).join("; ")}
            </span>
          )}
        </label>
      </fieldset>

      <TasksSection
        key={`tasks-${imports}`}
        draft={draft}
        onChange={(tasks) => {
          setSaved(false);
          setDraft((d) => ({ ...d, tasks }));
        }}
      />

      <fieldset className="panel">
        <legend>Appearance</legend>
        <label className="field">
          <span>Theme</span>
          <select
            data-testid="theme-select"
            value={draft.theme}
            onChange={(e) => {
              setSaved(false);
              setDraft((d) => ({ ...d, theme: e.target.value as Theme }));
            }}
          >
            <option value="system">Follow the system</option>
            <option value="light">Light</option>
            <option value="dark">Dark</option>
          </select>
        </label>
      </fieldset>

      <AboutPanel />
      {/* Pinned to the bottom of the window, so Save is in view however long the page is, and
          why it did not save with it: the page's end may be far below the field at fault. It
          comes last, so it covers nothing when the page is scrolled to its end. */}
      <div className="actions settings-actions" data-pinned="bottom">
        {error && problems.length > 1 ? (
          // Several at once read as a list, each taking the person to its field: run together in
          // one sentence they were hard to tell apart, and the fields below the fold hard to find.
          <div className="field-error settings-problems" role="alert" data-testid="settings-error">
            <ul>
              {problems.map((f) => (
                <li key={f.text}>
                  {f.at ? (
                    <button
                      type="button"
                      className="link"
                      onClick={() => {
                        f.at?.focus();
                        f.at?.scrollIntoView?.({ block: "center" });
                      }}
                      data-testid="settings-problem"
                    >
                      {f.text}
                    </button>
                  ) : (
                    f.text
                  )}
                </li>
              ))}
            </ul>
            Nothing was saved.
          </div>
        ) : (
          error && (
            <p className="field-error" role="alert" data-testid="settings-error">
              {settingsErrorInWords(error.message)}
            </p>
          )
        )}
        <span className={dirty ? "hint warn-text" : "muted hint"} role="status" data-testid="settings-status">
          {dirty ? "Unsaved changes" : saved ? "Saved" : ""}
        </span>
        <button type="submit" className="btn primary" disabled={saving} data-testid="save-settings">
          {saving ? "Saving…" : "Save"}
        </button>
      </div>
    </form>
  );
}

/** `settings` with the setting at `path` ("limits.max_retries", "context_windows") as `saved` has it. */
function withSettingOf(settings: Settings, saved: Settings, path: string): Settings {
  const keys = path.split(".");
  const copy = structuredClone(settings) as unknown as Record<string, unknown>;
  let into = copy;
  let from = saved as unknown as Record<string, unknown> | undefined;
  for (const k of keys.slice(0, -1)) {
    into[k] = { ...(into[k] as Record<string, unknown>) };
    into = into[k] as Record<string, unknown>;
    from = from?.[k] as Record<string, unknown> | undefined;
  }
  into[keys[keys.length - 1]] = from?.[keys[keys.length - 1]];
  return copy as unknown as Settings;
}

/** A mistake Save found: the field it is in (none when the form shows no field for it), what to
 * say, and the setting to mark when the field marks nothing itself. */
interface Found {
  at: HTMLElement | null;
  text: string;
  mark?: string;
}

/** A number field the window refused, named as its label says, with what it takes. */
function whyInvalid(input: HTMLInputElement): string {
  const name = input.closest("label")?.querySelector("span")?.textContent?.trim() || "A field";
  const v = input.validity;
  const bound = (n: string) => Number(n).toLocaleString("en-US");
  const why = v.rangeUnderflow
    ? `takes ${bound(input.min)} or more`
    : v.rangeOverflow
      ? `takes ${bound(input.max)} or less`
      : v.valueMissing && input.type !== "number"
        ? "is empty"
        : v.badInput || v.valueMissing
        ? "needs a number"
        : v.stepMismatch
          ? "takes a whole number"
          : `is not valid (${input.validationMessage})`;
  return `“${name}” ${why}${input.value === "" ? "" : ` (it is ${input.value})`}`;
}

/** The field of a setting the engine refused: the focus goes there, as it does for a number
 * the form itself refuses, and it is marked until it is edited. */
function markRefused(form: HTMLFormElement | null, setting: string, focus = true) {
  const input = form?.querySelector<HTMLElement>(`[data-setting="${setting}"]`);
  if (!input) return;
  input.setAttribute("aria-invalid", "true");
  input.addEventListener("input", () => input.removeAttribute("aria-invalid"), { once: true });
  if (!focus) return;
  input.focus();
  input.scrollIntoView?.({ block: "center" });
}


/** An import that would let something act that the current settings do not: each named, and
 * nothing saved until the person allows it. */
function ImportConfirm({ risks, onAnswer }: { risks: ImportRisks; onAnswer: (accept: boolean) => void }) {
  return (
    <div className="callout panel" role="alertdialog" aria-labelledby="import-confirm-title" data-testid="import-confirm">
      <p id="import-confirm-title">
        <strong>{risks.path}</strong> would let these act on this computer, or send your requests elsewhere, without asking again:
      </p>
      <ul>
        {risks.servers.map((srv) => (
          <li key={srv.name} data-testid="import-server">
            MCP server <strong>{srv.name}</strong>, a program run at each task: <code>{[srv.command, ...srv.args].join(" ")}</code>
            {srv.env.length > 0 && <span className="muted"> (environment: {srv.env.join(", ")})</span>}
          </li>
        ))}
        {risks.agent && (
          <li data-testid="import-agent">
            The agent that does the tasks, a program run at the next task: <code>{risks.agent}</code>
          </li>
        )}
        {risks.allowed.length > 0 && (
          <li data-testid="import-allowed">
            Run without asking: <code>{risks.allowed.join(", ")}</code>
          </li>
        )}
        {risks.verify.map((v) => (
          <li key={v} data-testid="import-verify">
            A verify command, run without asking after each task there: <code>{v}</code>
          </li>
        ))}
        {risks.addresses.map((a) => (
          <li key={a} data-testid="import-address">
            Requests to the model (with the key saved for it) go to <code>{a}</code>
          </li>
        ))}
        {risks.auto_approve && <li data-testid="import-auto-approve">Finished tasks are approved with nobody looking (auto-approve)</li>}
      </ul>
      <div className="row">
        <button type="button" className="btn primary" onClick={() => onAnswer(true)} data-testid="import-accept">
          Import and allow these
        </button>
        <button type="button" className="btn" onClick={() => onAnswer(false)} data-testid="import-reject" autoFocus>
          Cancel
        </button>
      </div>
    </div>
  );
}
