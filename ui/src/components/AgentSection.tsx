import { useEffect, useState } from "react";
import { AppError, ipc, type AgentCheck, type AgentPreset, type AgentStatus, type ExternalAgent } from "../ipc";

interface Props {
  agent: ExternalAgent | null;
  onChange: (agent: ExternalAgent | null) => void;
}

const BUILTIN = "builtin";
const CUSTOM = "custom";

/** A command line's words as a shell reads them: spaces part them, except inside '…' or "…"
 * or after a backslash (`"/opt/My Agent/agent" --acp` is two words). An unclosed quote runs to
 * the end. Nothing is expanded: no variables, no globs. */
export function commandWords(line: string): string[] {
  const words: string[] = [];
  let word: string | null = null;
  let quote: "'" | '"' | null = null;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (quote === "'") {
      if (c === "'") quote = null;
      else word += c;
    } else if (quote === '"') {
      if (c === '"') quote = null;
      else if (c === "\\" && (line[i + 1] === '"' || line[i + 1] === "\\")) word += line[++i];
      else word += c;
    } else if (/\s/.test(c)) {
      if (word !== null) words.push(word);
      word = null;
    } else if (c === "'" || c === '"') {
      quote = c;
      word ??= "";
    } else if (c === "\\" && i + 1 < line.length) {
      word = (word ?? "") + line[++i];
    } else {
      word = (word ?? "") + c;
    }
  }
  if (word !== null) words.push(word);
  return words;
}

/** A word as a shell would read it back: quoted when it holds a space, a quote or a backslash. */
const shellWord = (w: string) => (w === "" ? "''" : /[\s"'\\]/.test(w) ? `'${w.replace(/'/g, `'\\''`)}'` : w);

/** "my-agent --acp" as an agent named after its program. */
export function customAgent(line: string, env: Record<string, string> = {}): ExternalAgent | null {
  const words = commandWords(line);
  if (words.length === 0 || !words[0]) return null;
  const name = words[0].split("/").pop() || words[0];
  return { name, command: words[0], args: words.slice(1), env };
}

export const commandLine = (a: ExternalAgent) => [a.command, ...a.args].map(shellWord).join(" ");

/** `NAME=value` lines as an environment; lines without `=` are dropped. */
export function parseEnv(text: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const line of text.split("\n")) {
    const i = line.indexOf("=");
    const name = line.slice(0, i).trim();
    if (i > 0 && name) env[name] = line.slice(i + 1).trim();
  }
  return env;
}

export const envText = (env: Record<string, string>) =>
  Object.entries(env)
    .map(([k, v]) => `${k}=${v}`)
    .join("\n");

/**
 * Settings → Agent: Finishline's built-in agent, or an external one over the Agent Client
 * Protocol (OpenCode, Gemini CLI, Claude Code, Codex, goose, or any ACP command). Either way
 * Finishline's completion engine judges the work, and the review shows what changed.
 */
export function AgentSection({ agent, onChange }: Props) {
  const [presets, setPresets] = useState<AgentPreset[]>([]);
  const [checking, setChecking] = useState(false);
  const [check, setCheck] = useState<AgentCheck | null>(null);
  const [checkError, setCheckError] = useState<AppError | null>(null);
  const [customLine, setCustomLine] = useState(agent ? commandLine(agent) : "");
  const [envDraft, setEnvDraft] = useState(agent ? envText(agent.env) : "");
  // The box keeps what is being typed; settings replaced from elsewhere (a Save that put a key in
  // the keychain, an import) show as theirs.
  const sameEnv = (a: Record<string, string>, b: Record<string, string>) => JSON.stringify(Object.entries(a).sort()) === JSON.stringify(Object.entries(b).sort());
  const envShown = agent && !sameEnv(parseEnv(envDraft), agent.env) ? envText(agent.env) : envDraft;
  useEffect(() => {
    ipc.agentPresets().then((ps) => setPresets(ps ?? []), () => setPresets([]));
  }, []);
  // A preset stays itself with a program the person picked (another install of it).
  const preset = agent ? presets.find((p) => p.name === agent.name) : undefined;
  const [all, setAll] = useState<AgentStatus[] | null>(null);
  const [checkingAll, setCheckingAll] = useState(false);
  // Said beside its own button: the one agent's check error shows only with an agent chosen.
  const [checkAllError, setCheckAllError] = useState<string | null>(null);
  const checkAll = async () => {
    setCheckingAll(true);
    setCheckAllError(null);
    try {
      setAll(await ipc.checkAgents());
    } catch (e) {
      setCheckAllError((e as AppError).message);
    } finally {
      setCheckingAll(false);
    }
  };
  // The system's file chooser may be missing (no portal on a bare Linux desktop): said beside
  // Choose…, with the way on.
  const [pickError, setPickError] = useState<string | null>(null);
  const pickProgram = async () => {
    if (!agent) return;
    setPickError(null);
    try {
      const picked = await ipc.pickProgram();
      if (picked) {
        setCheck(null);
        onChange({ ...agent, command: picked });
      }
    } catch (e) {
      setPickError((e as AppError).message);
    }
  };
  const choice = agent === null ? BUILTIN : preset ? preset.name : CUSTOM;
  const [customPicked, setCustomPicked] = useState(false);
  const shown = customPicked && agent === null ? CUSTOM : choice;

  const pick = (value: string) => {
    setCheck(null);
    setCheckError(null);
    setCustomPicked(value === CUSTOM);
    if (value === BUILTIN) return onChange(null);
    if (value === CUSTOM) return onChange(customAgent(customLine, agent?.env ?? {}));
    const p = presets.find((x) => x.name === value);
    if (p) {
      setEnvDraft("");
      onChange({ name: p.name, command: p.command, args: [...p.args], env: {} });
    }
  };

  const runCheck = async () => {
    if (!agent) return;
    setChecking(true);
    setCheck(null);
    setCheckError(null);
    try {
      setCheck(await ipc.checkAgent(agent));
    } catch (e) {
      setCheckError(e as AppError);
    } finally {
      setChecking(false);
    }
  };

  return (
    <fieldset className="panel" data-testid="agent-section">
      <legend>Agent</legend>
      <label className="field">
        <span>Who does the work</span>
        <select data-testid="agent-select" value={shown} onChange={(e) => pick(e.target.value)}>
          <option value={BUILTIN}>Finishline's built-in agent (the provider above)</option>
          {presets.map((p) => (
            <option key={p.name} value={p.name}>
              {p.label} over ACP{p.found ? "" : " (not installed)"}
            </option>
          ))}
          <option value={CUSTOM}>Another ACP agent (a command)</option>
        </select>
      </label>
      {shown === BUILTIN && <p className="muted small">Finishline's own agent works with the provider and model above.</p>}
      {shown === CUSTOM && (
        <label className="field">
          <span>Command that speaks ACP over stdio</span>
          <input
            data-testid="agent-command"
            value={customLine}
            onChange={(e) => {
              setCustomLine(e.target.value);
              setCheck(null);
              onChange(customAgent(e.target.value, agent?.env ?? {}));
            }}
            placeholder="e.g. my-agent --acp"
            // Without one there is no agent: Save says so rather than keep the built-in one.
            required
            spellCheck={false}
          />
        </label>
      )}
      {preset && agent && (
        <div className="row">
          <label className="field grow">
            <span>Program (the one found, or another install of it)</span>
            <input
              data-testid="agent-program"
              value={agent.command}
              onChange={(e) => {
                setCheck(null);
                onChange({ ...agent, command: e.target.value });
              }}
              spellCheck={false}
            />
          </label>
          <button type="button" className="btn" onClick={() => void pickProgram()} data-testid="agent-pick-program">
            Choose…
          </button>
        </div>
      )}
      {preset && agent && pickError && (
        <p className="field-error" role="alert" data-testid="agent-pick-error">
          The file chooser could not open ({pickError}): type the program&apos;s path above instead.
        </p>
      )}
      {preset && (
        <p className="muted small" data-testid="agent-found">
          Runs <code>{commandLine(agent!)}</code>
          {agent!.command !== preset.command ? (
            <>, the program you chose.</>
          ) : preset.found ? (
            <> from {preset.found}.</>
          ) : (
            <>
              . It is not on PATH here; install it with <code>{preset.install}</code>.
            </>
          )}
        </p>
      )}
      {agent && (
        <>
          <p className="muted small">
            {preset?.label ?? agent.name} uses its own model and settings. Finishline judges when its work is really done (the todo gate, your verify commands and the evaluator, which uses the
            provider above), sends it back when it is not, and shows you every change to approve or revert.
          </p>
          <label className="field">
            <span title="A key (a name such as *_KEY, *_TOKEN, *_SECRET) typed here is kept in the OS keychain, for this agent only; the settings file holds only @keychain.">
              Environment for {preset?.label ?? agent.name} (NAME=value, one per line; keys go to the keychain, {"${VAR}"} passes yours from Finishline's environment)
            </span>
            <textarea
              data-testid="agent-env"
              rows={2}
              value={envShown}
              onChange={(e) => {
                setEnvDraft(e.target.value);
                onChange({ ...agent, env: parseEnv(e.target.value) });
              }}
              placeholder="e.g. GEMINI_API_KEY=${GEMINI_API_KEY}"
              spellCheck={false}
            />
          </label>
          <div className="row">
            <button type="button" className="btn" onClick={runCheck} disabled={checking} data-testid="agent-check">
              {checking ? "Checking…" : "Check"}
            </button>
            {check && (
              <span role="status" data-testid="agent-check-result">
                Answered: {check.name}
                {check.version ? ` ${check.version}` : ""}
                {check.load_session ? " (can reopen earlier sessions)" : ""}
                {check.logged_in === true && " · logged in"}
                {check.logged_in === false && " · not logged in"}
              </span>
            )}
          </div>
          {check?.logged_in === false && check.problem && (
            <p className="notice small" data-testid="agent-check-login">
              {check.problem}
            </p>
          )}
          {checkError && (
            <p className="field-error" role="alert" data-testid="agent-check-error">
              {checkError.message}
            </p>
          )}
        </>
      )}
      <div className="row">
        <button type="button" className="btn" onClick={() => void checkAll()} disabled={checkingAll} data-testid="agents-check-all">
          {checkingAll ? "Checking every agent…" : "Check every agent"}
        </button>
      </div>
      {checkAllError && (
        <p className="field-error" role="alert" data-testid="agents-check-all-error">
          {checkAllError}
        </p>
      )}
      {all && (
        <table className="agents-status small" data-testid="agents-status">
          <thead>
            <tr>
              <th>Agent</th>
              <th>Installed</th>
              <th>Version</th>
              <th>Logged in</th>
            </tr>
          </thead>
          <tbody>
            {all.map((a) => (
              <tr key={a.agent} data-testid={`agent-status-${a.agent}`} data-logged-in={a.logged_in === null ? "unknown" : String(a.logged_in)}>
                <td>{a.label}</td>
                <td>{a.found ? <code>{a.found}</code> : <>no: <code>{a.install ?? "—"}</code></>}</td>
                <td>{a.version ?? "—"}</td>
                <td title={a.problem ?? undefined}>{a.logged_in === true ? "yes" : a.logged_in === false ? "no: log in from a session, or with its own command" : a.found ? (a.problem ?? "—") : "—"}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </fieldset>
  );
}
