import { useState } from "react";
import { KeyRound, LogIn, SquareTerminal } from "lucide-react";
import { ipc, type LoginMethod } from "../ipc";
import { useOneAction } from "../oneAction";

interface Props {
  sessionId: string;
  login: { label: string; message: string; methods: LoginMethod[] };
  /** Runs the task again once the agent is logged in. */
  onLoggedIn: () => Promise<void> | void;
}

/**
 * "Log in to <agent>": shown when a session's external agent needs a login. Each way is the
 * agent's own: its login command in a terminal (Finishline opens one and goes on when it
 * succeeds), a key (kept in the OS keychain, given to this agent only), or the agent's own login
 * (`authenticate`). After it, the task runs again by itself.
 */
export function AgentLogin({ sessionId, login, onLoggedIn }: Props) {
  const [error, setError] = useState<string | null>(null);
  const [keys, setKeys] = useState<Record<string, string>>({});
  const one = useOneAction(setError);
  const busy = one.busy;

  const use = (m: LoginMethod) =>
    one.run(m.id, async () => {
      await ipc.agentLogin(sessionId, m.id, m.type === "key" ? keys[m.id] : undefined);
      await onLoggedIn();
    });

  // Logged in some other way (the agent's own command in a terminal): the task runs again.
  const retry = () => one.run("retry", async () => onLoggedIn());

  return (
    <div className="notice login" role="alert" data-testid="agent-login">
      <h3>Log in to {login.label}</h3>
      <p className="small">{login.message}</p>
      {login.methods.length === 0 && <p className="small muted">{login.label} offers no way to log in from here: log in with its own command in a terminal, then click Retry.</p>}
      <ul className="login-methods">
        {login.methods.map((m) => (
          <li key={m.id} data-testid={`login-${m.id}`}>
            {m.type === "terminal" && (
              <>
                <button className="btn primary" onClick={() => void use(m)} disabled={busy !== null} aria-busy={busy === m.id} data-testid={`login-run-${m.id}`}>
                  <SquareTerminal size={14} aria-hidden /> {busy === m.id ? "Waiting for the terminal…" : m.name}
                </button>
                <span className="small muted">
                  {" "}
                  opens a terminal running <code>{[m.command, ...m.args].join(" ")}</code>
                </span>
              </>
            )}
            {m.type === "key" && (
              <div className="row">
                <label className="field grow">
                  <span>
                    {m.name}: {m.vars.join(" and ")}
                    {m.link ? (
                      <>
                        {" "}
                        (get one at <code>{m.link}</code>)
                      </>
                    ) : null}
                  </span>
                  <input
                    type="password"
                    autoComplete="off"
                    value={keys[m.id] ?? ""}
                    onChange={(e) => setKeys({ ...keys, [m.id]: e.target.value })}
                    onKeyDown={(e) => {
                      if (e.key === "Enter" && !e.nativeEvent.isComposing && (keys[m.id] ?? "").trim()) {
                        e.preventDefault();
                        void use(m);
                      }
                    }}
                    data-testid={`login-key-${m.id}`}
                    placeholder="Kept in the OS keychain, for this agent only"
                  />
                </label>
                <button className="btn primary" onClick={() => void use(m)} disabled={busy !== null || !(keys[m.id] ?? "").trim()} aria-busy={busy === m.id} data-testid={`login-save-${m.id}`}>
                  <KeyRound size={14} aria-hidden /> Save and log in
                </button>
              </div>
            )}
            {m.type === "agent" && (
              <>
                <button className="btn primary" onClick={() => void use(m)} disabled={busy !== null} aria-busy={busy === m.id} data-testid={`login-agent-${m.id}`}>
                  <LogIn size={14} aria-hidden /> {busy === m.id ? "Logging in…" : m.name}
                </button>
                {m.description && <span className="small muted"> {m.description}</span>}
              </>
            )}
          </li>
        ))}
      </ul>
      <p className="small">
        {login.methods.length > 0 && <span className="muted">Logged in another way? </span>}
        <button className="btn" onClick={() => void retry()} disabled={busy !== null} aria-busy={busy === "retry"} data-testid="login-retry">
          {busy === "retry" ? "Retrying…" : "Retry"}
        </button>
      </p>
      {error && (
        <p className="field-error" data-testid="agent-login-error">
          {error}
        </p>
      )}
    </div>
  );
}
