import { useState } from "react";
import { AppError, ipc, type ProviderKind, type ProviderSettings, type Settings } from "../ipc";

const PROTOCOLS: { kind: ProviderKind; label: string; keyEnv: string }[] = [
  { kind: "openai", label: "OpenAI-compatible (Chat Completions)", keyEnv: "OPENAI_API_KEY" },
  { kind: "openai_responses", label: "OpenAI Responses", keyEnv: "OPENAI_API_KEY" },
  { kind: "anthropic", label: "Anthropic Messages", keyEnv: "ANTHROPIC_API_KEY" },
  { kind: "gemini", label: "Gemini", keyEnv: "GEMINI_API_KEY" },
];

/** Settings → Evaluator's own server: where the judge is asked when it is not the agent's
 * provider (a cheaper or a local model), in which protocol, with which key, and a test that
 * asks it before a task depends on it. */
export function EvaluatorServer({ draft, onChange }: { draft: Settings; onChange: (evaluator: ProviderSettings | null) => void }) {
  const ev = draft.evaluator_provider ?? null;
  const [testing, setTesting] = useState(false);
  const [report, setReport] = useState<{ ok: boolean; text: string } | null>(null);
  const set = (patch: Partial<ProviderSettings>) => {
    setReport(null);
    onChange({ ...(ev ?? { preset: null, kind: "openai", base_url: "", model: "", api_key_env: null }), ...patch });
  };
  // Its own server needs the evaluator's model named (the agent's may not be served there).
  const model = draft.evaluator_model?.trim() || ev?.model.trim() || "";
  const test = async () => {
    if (!ev) return;
    setTesting(true);
    setReport(null);
    try {
      const r = await ipc.testConnection({ ...draft, provider: { ...ev, model } });
      const listed = r.model_listed === false ? ` It does not list ${model}: check the evaluator's model name.` : "";
      setReport({ ok: r.model_listed !== false, text: `Reached: ${r.models.length} model${r.models.length === 1 ? "" : "s"} listed.${listed}` });
    } catch (e) {
      setReport({ ok: false, text: (e as AppError).message });
    } finally {
      setTesting(false);
    }
  };
  const protocol = PROTOCOLS.find((p) => p.kind === ev?.kind) ?? PROTOCOLS[0];
  return (
    <>
      <label className="field">
        <span>Evaluator server (base URL; empty: the agent's provider)</span>
        <input
          data-testid="evaluator-base-url"
          data-setting="evaluator_provider.base_url"
          value={ev?.base_url ?? ""}
          onChange={(e) => {
            const url = e.target.value.trim();
            setReport(null);
            onChange(url ? { ...(ev ?? { preset: null, kind: "openai", model: "", api_key_env: null }), base_url: url } : null);
          }}
          placeholder="e.g. http://127.0.0.1:8931/v1 for a cheaper local judge"
          spellCheck={false}
        />
      </label>
      {ev && (
        <div className="grid2">
          <label className="field">
            <span>Its protocol</span>
            <select data-testid="evaluator-kind" value={ev.kind} onChange={(e) => set({ kind: e.target.value as ProviderKind })}>
              {PROTOCOLS.map((p) => (
                <option key={p.kind} value={p.kind}>
                  {p.label}
                </option>
              ))}
            </select>
          </label>
          <label className="field">
            <span>Its key, from this environment variable</span>
            <input
              data-testid="evaluator-key-env"
              value={ev.api_key_env ?? ""}
              onChange={(e) => set({ api_key_env: e.target.value.trim() || null })}
              placeholder={protocol.keyEnv}
              spellCheck={false}
            />
          </label>
        </div>
      )}
      {ev && (
        <div className="row">
          <button
            type="button"
            className="btn"
            onClick={() => void test()}
            disabled={testing || !model}
            aria-busy={testing}
            title={model ? undefined : "Name the evaluator's model above first"}
            data-testid="evaluator-test"
          >
            {testing ? "Testing…" : "Test the evaluator's server"}
          </button>
          <span className="muted small">
            Its key: the one saved above for a provider of this protocol without a preset, else the variable here (or {protocol.keyEnv}); a server on this machine needs none.
          </span>
        </div>
      )}
      {report && (
        <p className={report.ok ? "muted" : "field-error"} role={report.ok ? "status" : "alert"} data-testid="evaluator-test-result">
          {report.text}
        </p>
      )}
    </>
  );
}
