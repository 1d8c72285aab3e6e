import { useState, type FormEvent } from "react";
import { AppError, ipc, type ConnectionReport, type PermissionDefault, type ProviderKind, type Settings, type SettingsView, type Theme } from "../ipc";

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

const ASKING_TOOLS = ["run_command", "fetch_url"];

/** "model: input output" lines (dollars per million tokens) ⇄ the settings' prices. */
export function pricesToText(p: Settings["prices"]): string {
  return Object.entries(p)
    .map(([m, v]) => `${m}: ${v.input_per_mtok} ${v.output_per_mtok}`)
    .join("\n");
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

const KINDS: { id: ProviderKind; label: string }[] = [
  { id: "openai", label: "OpenAI-compatible (OpenAI, Ollama, llama.cpp, LM Studio, vLLM, OpenRouter, Groq, xAI)" },
  { id: "anthropic", label: "Anthropic" },
  { id: "gemini", label: "Google Gemini" },
];

interface Props {
  view: SettingsView;
  onSaved: (view: SettingsView) => void;
}

export function SettingsScreen({ view, onSaved }: Props) {
  const [draft, setDraft] = useState<Settings>(view.settings);
  const [saving, setSaving] = useState(false);
  const [error, setError] = useState<AppError | null>(null);
  const [saved, setSaved] = useState(false);
  const [verifyText, setVerifyText] = useState(() => verifyToText(view.settings.verify_commands ?? {}));
  const [pricesText, setPricesText] = useState(() => pricesToText(view.settings.prices ?? {}));
  const [testing, setTesting] = useState(false);
  const [report, setReport] = useState<{ ok: true; r: ConnectionReport } | { ok: false; message: string } | null>(null);

  const test = async () => {
    setTesting(true);
    setReport(null);
    try {
      setReport({ ok: true, r: await ipc.testConnection(draft) });
    } catch (e) {
      setReport({ ok: false, message: (e as AppError).message });
    } finally {
      setTesting(false);
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
  const setLimit = (key: keyof Settings["limits"], value: string) => {
    setSaved(false);
    setDraft((d) => ({ ...d, limits: { ...d.limits, [key]: Number(value) } }));
  };

  const save = async (e: FormEvent) => {
    e.preventDefault();
    setSaving(true);
    setError(null);
    try {
      const next = await ipc.saveSettings({ ...draft, verify_commands: textToVerify(verifyText), prices: textToPrices(pricesText) });
      setDraft(next.settings);
      onSaved(next);
      setSaved(true);
    } catch (err) {
      setError(err as AppError);
    } finally {
      setSaving(false);
    }
  };

  return (
    <form className="screen" onSubmit={save} data-testid="settings-form">
      <header className="screen-head">
        <h1>Settings</h1>
        <p className="muted">Keys are never saved here: set them in your environment (for example OPENAI_API_KEY).</p>
      </header>

      <fieldset className="panel">
        <legend>Provider</legend>
        <label className="field">
          <span>Protocol</span>
          <select data-testid="provider-kind" value={draft.provider.kind} onChange={(e) => setProvider({ kind: e.target.value as ProviderKind })}>
            {KINDS.map((k) => (
              <option key={k.id} value={k.id}>
                {k.label}
              </option>
            ))}
          </select>
        </label>
        <label className="field">
          <span>Base URL</span>
          <input
            data-testid="provider-base-url"
            value={draft.provider.base_url}
            onChange={(e) => setProvider({ base_url: e.target.value })}
            placeholder="http://127.0.0.1:8080/v1"
            spellCheck={false}
          />
        </label>
        <label className="field">
          <span>Model</span>
          <input data-testid="provider-model" value={draft.provider.model} onChange={(e) => setProvider({ model: e.target.value })} placeholder="gpt-4.1-mini, qwen2.5:7b, …" spellCheck={false} />
        </label>
        <label className="field">
          <span>API key environment variable</span>
          <input
            data-testid="provider-key-env"
            value={draft.provider.api_key_env ?? ""}
            onChange={(e) => setProvider({ api_key_env: e.target.value || null })}
            placeholder="OPENAI_API_KEY (not needed for a local server)"
            spellCheck={false}
          />
        </label>
        <div className="row">
          <button type="button" className="btn" onClick={test} disabled={testing || !draft.provider.base_url.trim()} data-testid="test-connection">
            {testing ? "Testing…" : "Test connection"}
          </button>
          {report && (
            <span className={report.ok ? "ok-text" : "field-error"} role="status" data-testid="connection-report">
              {report.ok
                ? `Connected: ${report.r.models.length} model${report.r.models.length === 1 ? "" : "s"}${report.r.model_listed === false ? `; “${draft.provider.model}” is not among them` : ""}.`
                : report.message}
            </span>
          )}
        </div>
      </fieldset>

      <fieldset className="panel">
        <legend>Evaluator</legend>
        <label className="field">
          <span>Evaluator model</span>
          <input
            data-testid="evaluator-model"
            value={draft.evaluator_model ?? ""}
            onChange={(e) => {
              setSaved(false);
              setDraft((d) => ({ ...d, evaluator_model: e.target.value || null }));
            }}
            placeholder="Same as the agent's model"
            spellCheck={false}
          />
        </label>
      </fieldset>

      <fieldset className="panel">
        <legend>Limits</legend>
        <div className="grid3">
          <label className="field">
            <span>Max steps per run</span>
            <input type="number" min={1} value={draft.limits.max_steps} onChange={(e) => setLimit("max_steps", e.target.value)} />
          </label>
          <label className="field">
            <span>Continuation budget</span>
            <input type="number" min={1} value={draft.limits.continuation_budget} onChange={(e) => setLimit("continuation_budget", e.target.value)} />
          </label>
          <label className="field">
            <span>Max retries</span>
            <input type="number" min={1} value={draft.limits.max_retries} onChange={(e) => setLimit("max_retries", e.target.value)} />
          </label>
        </div>
      </fieldset>

      <fieldset className="panel">
        <legend>Completion checks</legend>
        <label className="field">
          <span>Completion marker (empty: off)</span>
          <input value={draft.completion.marker} onChange={(e) => setCompletion({ marker: e.target.value })} placeholder="e.g. TASK_COMPLETE" spellCheck={false} />
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
          />
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
          />
        </label>
      </fieldset>

      <fieldset className="panel">
        <legend>Appearance</legend>
        <label className="field">
          <span>Theme</span>
          <select
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

      {error && (
        <p className="field-error" role="alert" data-testid="settings-error">
          {error.message}
        </p>
      )}
      <div className="actions">
        <span className="muted hint" role="status" data-testid="settings-status">
          {saved ? "Saved" : ""}
        </span>
        <button type="submit" className="btn primary" disabled={saving} data-testid="save-settings">
          {saving ? "Saving…" : "Save"}
        </button>
      </div>
    </form>
  );
}
