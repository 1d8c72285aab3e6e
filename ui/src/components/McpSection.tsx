import { useRef, useState } from "react";
import { useFocusAdded } from "../focusAdded";
import { AppError, ipc, type McpServerSettings, type McpServerStatus, type Settings } from "../ipc";

/** "KEY=value" lines ⇄ the env map. */
export function envToText(env: Record<string, string>): string {
  return Object.entries(env)
    .map(([k, v]) => `${k}=${v}`)
    .join("\n");
}

export function textToEnv(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split("\n")) {
    const i = line.indexOf("=");
    if (i <= 0) continue;
    out[line.slice(0, i).trim()] = line.slice(i + 1).trim();
  }
  return out;
}

/** One argument per line, so arguments with spaces need no quoting. */
const argsToText = (args: string[]) => args.join("\n");
const textToArgs = (text: string) => text.split("\n").map((a) => a.trim()).filter(Boolean);

interface Props {
  draft: Settings;
  setServers: (servers: McpServerSettings[]) => void;
}

export function McpSection({ draft, setServers }: Props) {
  const servers = draft.mcp_servers ?? [];
  const [status, setStatus] = useState<McpServerStatus[] | null>(null);
  const [checking, setChecking] = useState(false);
  const [error, setError] = useState<string | null>(null);

  const update = (i: number, patch: Partial<McpServerSettings>) => setServers(servers.map((s, j) => (j === i ? { ...s, ...patch } : s)));
  // An added server's name takes the focus, its suggested name selected: typing replaces it.
  const names = useFocusAdded(servers.length, true);
  const add = () => {
    names.adding();
    setServers([...servers, { name: `server${servers.length + 1}`, command: "", args: [], env: {}, enabled: true }]);
  };
  // A check's results are of the servers as they were: a removed one must leave no failure
  // standing, and a check still on its way when one is removed is not shown at all.
  const checks = useRef(0);
  const addButton = useRef<HTMLButtonElement>(null);
  const remove = (i: number) => {
    names.removing(i, addButton.current);
    checks.current++;
    setServers(servers.filter((_, j) => j !== i));
    setStatus(null);
    setChecking(false);
  };

  const check = async () => {
    const mine = ++checks.current;
    setChecking(true);
    setError(null);
    setStatus(null);
    try {
      const st = await ipc.mcpStatus(draft);
      if (mine === checks.current) setStatus(st);
    } catch (e) {
      if (mine === checks.current) setError((e as AppError).message);
    } finally {
      if (mine === checks.current) setChecking(false);
    }
  };

  return (
    <fieldset className="panel" data-testid="mcp-section">
      <legend>MCP servers</legend>
      <p className="muted hint">
        Tools of these servers join the agent's, named <code>server__tool</code>, and ask before each use. Servers start when a task first needs them.
      </p>
      {servers.map((s, i) => (
        <ServerRow
          key={`${i}/${servers.length}`}
          i={i}
          server={s}
          update={(patch) => update(i, patch)}
          remove={() => remove(i)}
          nameRef={names.field(i)}
        />
      ))}
      <div className="row">
        <button ref={addButton} type="button" className="btn" onClick={add} data-testid="mcp-add">
          Add server
        </button>
        <button type="button" className="btn" onClick={check} disabled={checking || servers.length === 0} data-testid="mcp-check">
          {checking ? "Starting…" : "Check servers"}
        </button>
      </div>
      {error && (
        <p className="field-error" role="alert" data-testid="mcp-error">
          {error}
        </p>
      )}
      {status && (
        <ul className="mcp-status" data-testid="mcp-status">
          {status.map((st) => (
            <li key={st.name} data-state={st.state}>
              <strong>{st.name}</strong>: {st.state === "running" && `${st.tools.length} tools`}
              {st.state === "failed" && <span className="field-error">{st.message}</span>}
              {st.state === "disabled" && "disabled"}
              {st.state === "idle" && "not started"}
              {st.state === "running" && (
                <ul className="mcp-tools">
                  {st.tools.map((t) => (
                    <li key={t.name} data-testid="mcp-tool">
                      <code>
                        {st.name}__{t.name}
                      </code>{" "}
                      <span className="muted">{t.description}</span>
                    </li>
                  ))}
                </ul>
              )}
            </li>
          ))}
        </ul>
      )}
    </fieldset>
  );
}

/** One server's fields. Arguments and environment keep the raw text being typed (a trailing
 * newline, a line without "=" yet) and hand the parsed values up. */
function ServerRow({ i, server: s, update, remove, nameRef }: { i: number; server: McpServerSettings; update: (p: Partial<McpServerSettings>) => void; remove: () => void; nameRef: (el: HTMLInputElement | null) => void }) {
  const [argsText, setArgsText] = useState(() => argsToText(s.args));
  const [envText, setEnvText] = useState(() => envToText(s.env));
  return (
    <div className="mcp-server" data-testid={`mcp-server-${i}`}>
      <div className="grid3">
        <label className="field">
          <span>Name</span>
          <input ref={nameRef} value={s.name} onChange={(e) => update({ name: e.target.value })} spellCheck={false} data-testid={`mcp-name-${i}`} />
        </label>
        <label className="field span2">
          <span>Command</span>
          <input value={s.command} onChange={(e) => update({ command: e.target.value })} placeholder="npx" spellCheck={false} data-testid={`mcp-command-${i}`} />
        </label>
      </div>
      <div className="grid2">
        <label className="field">
          <span>Arguments, one per line</span>
          <textarea
            rows={2}
            value={argsText}
            onChange={(e) => {
              setArgsText(e.target.value);
              update({ args: textToArgs(e.target.value) });
            }}
            placeholder={"-y\n@modelcontextprotocol/server-everything"}
            spellCheck={false}
            data-testid={`mcp-args-${i}`}
          />
        </label>
        <label className="field">
          <span title="A value typed here is a secret: Save keeps it in the OS keychain and the settings file holds only @keychain.">
            Environment, KEY=value per line (${"{VAR}"} reads yours; typed values go to the keychain)
          </span>
          <textarea
            rows={2}
            value={envText}
            onChange={(e) => {
              setEnvText(e.target.value);
              update({ env: textToEnv(e.target.value) });
            }}
            placeholder="GITHUB_TOKEN=${GITHUB_TOKEN}"
            spellCheck={false}
            data-testid={`mcp-env-${i}`}
          />
        </label>
      </div>
      <div className="row">
        <label className="check">
          <input type="checkbox" checked={s.enabled} onChange={(e) => update({ enabled: e.target.checked })} /> Enabled
        </label>
        <button type="button" className="btn" onClick={remove} data-testid={`mcp-remove-${i}`}>
          Remove
        </button>
      </div>
    </div>
  );
}
