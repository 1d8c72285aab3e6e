import { useEffect, useRef, useState } from "react";
import { rememberGrade } from "../modelGrades";
import { Ticks } from "./Ticks";
import { badBaseUrl, settingsErrorInWords } from "../settingsWords";
import { AppError, ipc, type CheckKind, type ConnectionReport, type KeyPlace, type KeyStatus, type ProviderKind, type ProviderPreset, type Settings } from "../ipc";

const KINDS: { id: ProviderKind; label: string }[] = [
  { id: "openai", label: "OpenAI-compatible (OpenAI, Ollama, llama.cpp, LM Studio, vLLM, OpenRouter, Groq, xAI)" },
  { id: "openai_responses", label: "OpenAI Responses API" },
  { id: "anthropic", label: "Anthropic" },
  { id: "gemini", label: "Google Gemini" },
];

/** What each failure means in a word, before the engine's message says what to do. */
const HEADLINES: Record<string, string> = {
  auth: "Wrong or missing key.",
  provider_unreachable: "Nothing answered at this URL.",
  // Either no API answers there, or the API has no such model.
  provider_not_found: "Not found at this URL.",
  invalid_settings: "Check the form.",
};

/** OpenAI-compatible servers serve their API under /v1; a URL without it is the usual mistake. */
export function suggestV1(kind: string, url: string): string | null {
  if (kind !== "openai" && kind !== "openai_responses") return null;
  const trimmed = url.trim().replace(/\/+$/, "");
  if (!/^https?:\/\/[^/]+(\/.*)?$/.test(trimmed) || /\/v\d+$/.test(trimmed)) return null;
  return `${trimmed}/v1`;
}

type Report = { ok: true; r: ConnectionReport } | { ok: false; code: string; message: string };

/** What an environment variable's name may be. */
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

function keyText(k: KeyStatus): string {
  switch (k.source.kind) {
    case "session":
      return "Using the key you entered for this session (forgotten when Finishline quits).";
    case "keychain":
      return "Using the key saved in the OS keychain.";
    case "env":
      return `Using the key from the environment variable ${k.source.var}.`;
    case "missing":
      // A name the environment cannot hold ("my key") is no variable to set: said as such.
      return ENV_NAME.test(k.source.var)
        ? `No key yet. Set ${k.source.var}, or enter one below. A local server needs none.`
        : "No key yet. Enter one below, or name the environment variable that holds it (letters, digits and _, not starting with a digit). A local server needs none.";
  }
}

interface Props {
  draft: Settings;
  setProvider: (patch: Partial<Settings["provider"]>) => void;
  /** Told how to save a key typed but not yet saved (null when there is none), so that leaving
   * the screen asks first and Save keeps it too. */
  onKeyPending?: (save: (() => Promise<boolean>) | null) => void;
}

/** Where a failed Test connection sends the eye: the server's address when nothing answers
 * there (or nothing is served at it), the key when the provider refused it. */
const FIELD_TO_CHECK: Record<string, string> = { provider_unreachable: "provider-base-url", provider_not_found: "provider-base-url", auth: "key-input" };
const MARKED_BY_TEST = ["provider-base-url", "key-input"];

export function ProviderSection({ draft, setProvider, onKeyPending }: Props) {
  const [presets, setPresets] = useState<ProviderPreset[]>([]);
  const [keys, setKeys] = useState<KeyStatus | null>(null);
  const [keyInput, setKeyInput] = useState("");
  const [keyError, setKeyError] = useState<string | null>(null);
  const [testing, setTesting] = useState(false);
  const [report, setReport] = useState<Report | null>(null);
  // The model Test connection filled in (the only one the server serves), to say so.
  const [filled, setFilled] = useState<string | null>(null);
  const p = draft.provider;
  const current = presets.find((x) => x.id === p.preset);

  useEffect(() => {
    ipc.providerPresets().then(
      (list) => setPresets(Array.isArray(list) ? list : []),
      () => setPresets([]),
    );
  }, []);
  useEffect(() => {
    let live = true;
    ipc.keyStatus(p).then(
      (k) => live && setKeys(k?.source ? k : null),
      () => live && setKeys(null),
    );
    return () => {
      live = false;
    };
    // The key's place depends on these four; the model does not matter.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [p.preset, p.kind, p.base_url, p.api_key_env]);

  // A report is about the address and key it tested: another one makes it stale. (Not the
  // model: Test connection itself fills that in.)
  useEffect(() => setReport(null), [p.base_url, p.kind, p.api_key_env]);

  const applyPreset = (x: ProviderPreset) => {
    setReport(null);
    setProvider({
      preset: x.id,
      kind: x.kind,
      base_url: x.base_url || p.base_url,
      // Another provider's model name means nothing here: a preset without suggestions (a local
      // server) starts empty and Test connection fills in what the server serves. Clicking the
      // preset already chosen keeps the model the person set.
      model: x.models[0] ?? (x.id === p.preset ? p.model : ""),
      api_key_env: x.key_env,
    });
  };

  const testButton = useRef<HTMLButtonElement>(null);
  const section = useRef<HTMLFieldSetElement>(null);
  /** The field a failed test points at, marked until it is edited or the next test. */
  const markFor = (code: string | null) => {
    const at = (id: string) => section.current?.querySelector<HTMLElement>(`[data-testid="${id}"]`);
    for (const id of MARKED_BY_TEST) at(id)?.removeAttribute("aria-invalid");
    const id = code === null ? null : FIELD_TO_CHECK[code];
    const input = id ? at(id) : null;
    if (!input) return;
    input.setAttribute("aria-invalid", "true");
    input.addEventListener("input", () => input.removeAttribute("aria-invalid"), { once: true });
  };
  const test = async () => {
    setReport(null);
    setFilled(null);
    markFor(null);
    // What Save would refuse is said the same way, without a round trip.
    const badUrl = badBaseUrl(p.base_url);
    if (badUrl) {
      setReport({ ok: false, code: "invalid_settings", message: badUrl });
      return;
    }
    setTesting(true);
    try {
      const r = await ipc.testConnection(draft);
      setReport({ ok: true, r });
      // One listed model and nothing typed: that is the one to use (a llama.cpp server).
      if (!p.model.trim() && r.models.length === 1) {
        setProvider({ model: r.models[0] });
        // Said, or the "Unsaved changes" that follows a Save looks like a fault.
        setFilled(r.models[0]);
      }
      rememberGrade(p.model.trim() || (r.models.length === 1 ? r.models[0] : ""), r.checks ?? []);
    } catch (e) {
      const err = e as AppError;
      setReport({ ok: false, code: err.code, message: err.code === "invalid_settings" ? settingsErrorInWords(err.message) : err.message });
      markFor(err.code);
    } finally {
      setTesting(false);
    }
  };

  const saveKey = async (place: KeyPlace): Promise<boolean> => {
    setKeyError(null);
    try {
      const k = await ipc.saveKey(p, keyInput, place);
      setKeys(k?.source ? k : null);
      setKeyInput("");
      return true;
    } catch (e) {
      setKeyError((e as AppError).message);
      return false;
    }
  };
  const forgetKey = async () => {
    setKeyError(null);
    try {
      const k = await ipc.forgetKey(p);
      setKeys(k?.source ? k : null);
    } catch (e) {
      setKeyError((e as AppError).message);
    }
  };

  const noKeychain = keys?.keychain.state === "unavailable" ? keys.keychain.reason : null;
  // Where Enter (or Save) puts a typed key: the keychain, or this session where there is none.
  const keyPlace: KeyPlace = noKeychain ? "session" : "keychain";
  const typed = keyInput.trim() !== "";
  const savePending = useRef<() => Promise<boolean>>(async () => true);
  savePending.current = () => saveKey(keyPlace);
  useEffect(() => onKeyPending?.(typed ? () => savePending.current() : null), [typed, onKeyPending]);

  return (
    <fieldset className="panel" ref={section}>
      <legend>Provider</legend>
      <div className="presets" role="group" aria-label="Provider presets" data-testid="presets">
        {presets.map((x) => (
          <button
            type="button"
            key={x.id}
            className={`chip${p.preset === x.id ? " active" : ""}`}
            aria-pressed={p.preset === x.id}
            onClick={() => applyPreset(x)}
            data-testid={`preset-${x.id}`}
            title={x.hint}
          >
            {x.label}
            {x.local && <span className="chip-note"> local</span>}
          </button>
        ))}
      </div>
      {current && (
        <p className="muted hint">
          <Ticks text={current.hint} />
        </p>
      )}
      <label className="field">
        <span>Protocol</span>
        <select data-testid="provider-kind" value={p.kind} onChange={(e) => setProvider({ kind: e.target.value as ProviderKind })}>
          {KINDS.map((k) => (
            <option key={k.id} value={k.id}>
              {k.label}
            </option>
          ))}
        </select>
      </label>
      <label className="field">
        <span>Base URL</span>
        <input id="provider-base-url" data-testid="provider-base-url" data-setting="provider.base_url" value={p.base_url} onChange={(e) => setProvider({ base_url: e.target.value })} placeholder="http://127.0.0.1:8080/v1" spellCheck={false} />
      </label>
      <label className="field">
        <span>Model</span>
        <input
          id="provider-model"
          data-testid="provider-model"
          data-setting="provider.model"
          value={p.model}
          onChange={(e) => setProvider({ model: e.target.value })}
          placeholder="gpt-4.1-mini, qwen2.5:7b, …"
          spellCheck={false}
          list="model-hints"
        />
        <datalist id="model-hints">
          {[...(report?.ok ? report.r.models : []), ...(current?.models ?? [])].map((m) => (
            <option key={m} value={m} />
          ))}
        </datalist>
        {p.base_url.trim() && !p.model.trim() && (
          <span className="field-error" role="status" data-testid="model-missing">
            No model: tasks cannot run until you name one. Test connection lists the models the server has.
          </span>
        )}
      </label>
      {report?.ok && report.r.models.length > 0 && (
        <label className="field">
          <span>Models the server lists</span>
          <select data-testid="model-list" value={report.r.models.includes(p.model) ? p.model : ""} onChange={(e) => e.target.value && setProvider({ model: e.target.value })}>
            <option value="">Choose one of {report.r.models.length}…</option>
            {report.r.models.map((m) => (
              <option key={m} value={m}>
                {m}
              </option>
            ))}
          </select>
        </label>
      )}
      <label className="field">
        <span>API key environment variable</span>
        <input
          data-testid="provider-key-env"
          data-setting="provider.api_key_env"
          value={p.api_key_env ?? ""}
          onChange={(e) => setProvider({ api_key_env: e.target.value || null })}
          placeholder={keys?.env_var ?? "OPENAI_API_KEY"}
          spellCheck={false}
        />
      </label>

      <div className="key-box" data-testid="key-section">
        {keys && (
          <p className="hint" data-testid="key-source">
            {keyText(keys)}
          </p>
        )}
        {noKeychain && (
          <p className="warn-text" role="note" data-testid="no-keychain">
            No OS keychain is available on this system, so a key cannot be saved. {keys?.env_var && ENV_NAME.test(keys.env_var) ? `Use the environment variable ${keys.env_var}` : "Use an environment variable"}, or enter a key for this session only.
          </p>
        )}
        <div className="row">
          <input
            type="password"
            autoComplete="off"
            aria-label="API key"
            id="key-input"
            data-testid="key-input"
            value={keyInput}
            onChange={(e) => setKeyInput(e.target.value)}
            // Enter hands the key over, as its button would; it must not submit the settings form
            // around it, which would say "Saved" and leave the key unsaved in the box.
            onKeyDown={(e) => {
              if (e.key === "Enter" && !e.nativeEvent.isComposing) {
                e.preventDefault();
                if (typed) void saveKey(keyPlace);
              }
            }}
            placeholder="Paste an API key"
            spellCheck={false}
          />
          {/* With no keychain the line above says so; a button that can never work is not shown. */}
          {!noKeychain && (
            <button type="button" className="btn" disabled={!keyInput.trim()} onClick={() => saveKey("keychain")} data-testid="save-key-keychain">
              Save in keychain
            </button>
          )}
          <button type="button" className="btn" disabled={!keyInput.trim()} onClick={() => saveKey("session")} data-testid="save-key-session">
            Use for this session
          </button>
          {(keys?.source.kind === "keychain" || keys?.source.kind === "session") && (
            <button type="button" className="btn" onClick={forgetKey} data-testid="forget-key">
              Forget key
            </button>
          )}
        </div>
        {keyError && (
          <p className="field-error" role="alert" data-testid="key-error">
            {keyError}
          </p>
        )}
      </div>

      <div className="row connection-row">
        <button type="button" className="btn" ref={testButton} onClick={test} disabled={testing || !p.base_url.trim()} data-testid="test-connection">
          {testing ? "Testing…" : "Test connection"}
        </button>
        {report && <ConnectionResult report={report} model={p.model} />}
        {report && !report.ok && report.code === "provider_not_found" && suggestV1(p.kind, p.base_url) && (
          <button
            type="button"
            className="link"
            data-testid="use-v1"
            onClick={() => {
              setReport(null);
              setProvider({ ...p, base_url: suggestV1(p.kind, p.base_url)! });
              // The link goes with the report: the focus to what comes next, testing the new URL.
              testButton.current?.focus();
            }}
          >
            Did you mean {suggestV1(p.kind, p.base_url)}?
          </button>
        )}
      </div>
      {report?.ok && filled && filled === p.model && (
        <p className="muted small" role="status" data-testid="model-filled">
          Model set to “{filled}”, the one the server serves: Save keeps it.
        </p>
      )}
    </fieldset>
  );
}

const CHECK_LABEL: Record<CheckKind, string> = {
  streams: "Streams",
  follows_instruction: "Follows an instruction",
  calls_tools: "Calls tools",
  clean_template: "Chat template",
};

function ConnectionResult({ report, model }: { report: Report; model: string }) {
  if (!report.ok) {
    return (
      <span className="field-error" role="status" data-testid="connection-report" data-code={report.code}>
        {HEADLINES[report.code] ? <strong>{HEADLINES[report.code]} </strong> : null}
        {report.message}
      </span>
    );
  }
  const { models, model_listed, tools } = report.r;
  const listed = models.length ? `${models.length} model${models.length === 1 ? "" : "s"} listed` : "no model list offered";
  return (
    <span
      // A model the server does not list is a warning, never green.
      className={tools.state === "unsupported" ? "field-error" : model_listed === false && model.trim() ? "warn-text" : "ok-text"}
      role="status"
      data-testid="connection-report"
      data-tools={tools.state}
    >
      Connected: {listed}
      {model_listed === false && model.trim() ? `; “${model}” is not among them` : ""}.{" "}
      {tools.state === "supported" && "The model accepts tools."}
      {tools.state !== "supported" && tools.message}
      {report.r.context_window ? (
        <span data-testid="server-context-window">
          {" "}
          The server's context window is {report.r.context_window.toLocaleString()} tokens; runs use it unless you set one below.
        </span>
      ) : null}
      {(report.r.checks ?? []).length > 0 && (
        <ul className="model-checks" data-testid="model-checks">
          {(report.r.checks ?? []).map((c) => (
            <li key={c.kind} data-kind={c.kind} data-passed={c.passed} className={c.passed ? "ok-text" : "field-error"}>
              {c.passed ? "✓" : "✗"} {CHECK_LABEL[c.kind]}: {c.detail}
            </li>
          ))}
        </ul>
      )}
    </span>
  );
}
