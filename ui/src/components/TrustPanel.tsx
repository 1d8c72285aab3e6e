import { useCallback, useEffect, useState, type ReactNode } from "react";
import { AppError, ipc } from "../ipc";
import { useHistoryChanges } from "../historyChanges";

const pct = (r: number | null) => (r === null ? "—" : `${Math.round(r * 100)}%`);

/** A task's title short enough to sit in a row of links: cut at a word, said whole on hover. */
function short(title: string): string {
  if (title.length <= 40) return title;
  const cut = title.slice(0, 40);
  return `${cut.includes(" ") ? cut.slice(0, cut.lastIndexOf(" ")) : cut}…`;
}

/** Session links behind a number, named by their tasks (`titles`; one not found, by its id's
 * end): the person checks the evidence, not just the figure. */
function Sessions({ ids, titles, onOpen }: { ids: string[]; titles: Map<string, string>; onOpen: (id: string) => void }) {
  if (ids.length === 0) return null;
  return (
    <span className="trust-links">
      {ids.map((id) => {
        const title = titles.get(id);
        return (
          <button key={id} className="link" onClick={() => onOpen(id)} data-testid="trust-session" title={title ? `Open “${title}”` : `Open ${id}`}>
            {title ? short(title) : `session ${id.slice(-6)}`}
          </button>
        );
      })}
    </span>
  );
}

/** The titles of the sessions the figures name, asked for once per answer of the figures. */
function useTitles(ids: string[]): Map<string, string> {
  const [titles, setTitles] = useState<Map<string, string>>(new Map());
  const key = ids.join(" ");
  useEffect(() => {
    if (!key) return;
    let live = true;
    const wanted = key.split(" ");
    // As many as a search asks for: the answer holds the other attempts of a named one's group.
    ipc.listSessions({ ids: wanted, limit: 1000 }).then(
      // An attempt by its agent too: a group's attempts share their task.
      (rows) => live && setTitles(new Map((rows ?? []).map((r) => [r.id, `${r.title || r.task}${r.attempt ? ` (${r.attempt.label})` : ""}`]))),
      // Without titles the links still open their sessions, named by their ids.
      () => {},
    );
    return () => {
      live = false;
    };
  }, [key]);
  return titles;
}

/** Figures read from the whole history: read again whenever it changes (a session deleted, a
 * review decided), and a load that failed says why with a way to try again. */
function useHistoryFigures<T>(read: () => Promise<T[]>): { rows: T[] | null; failed: ReactNode } {
  const [rows, setRows] = useState<T[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const load = useCallback(() => {
    read().then(
      (r) => {
        setError(null);
        setRows(r ?? []);
      },
      (e: AppError) => setError(e.message ?? String(e)),
    );
  }, [read]);
  useHistoryChanges(load);
  const failed = error && (
    <p className="field-error row" role="alert">
      <span className="grow">{error}</span>
      <button type="button" className="btn small" onClick={load}>
        Try again
      </button>
    </p>
  );
  return { rows, failed };
}

/** How far to trust each evaluator model, from the reviews the person decided. */
export function TrustPanel({ onOpen }: { onOpen: (id: string) => void }) {
  const { rows, failed } = useHistoryFigures(ipc.evaluatorTrust);
  const titles = useTitles([...new Set((rows ?? []).flatMap((t) => [...t.false_done, ...t.sent_back_then_approved]))]);
  return (
    <details className="panel storage" data-testid="trust-view">
      <summary>How far to trust the evaluator</summary>
      <p className="muted hint">
        For every review you decided: how often the evaluator's <em>done</em> was then rejected or sent back by you (its false-done rate), and how often a run it sent back was then approved as delivered.
      </p>
      {failed}
      {rows && rows.length === 0 && <p className="muted">No reviews yet. The figures appear once you have approved, sent back or rejected work the evaluator judged.</p>}
      {rows && rows.length > 0 && (
        <table className="trust-table">
          <thead>
            <tr>
              <th>Evaluator model</th>
              <th>Reviews</th>
              <th>False done</th>
              <th>Sent back, then approved</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((t) => (
              <tr key={t.model} data-testid="trust-row" data-model={t.model}>
                <td>
                  <code>{t.model}</code>
                </td>
                <td data-testid="trust-reviews">{t.reviews}</td>
                <td>
                  <span data-testid="trust-false-done">
                    {pct(t.false_done_rate)} ({t.false_done_reviews} of {t.done_verdicts})
                  </span>{" "}
                  <Sessions ids={t.false_done} titles={titles} onOpen={onOpen} />
                </td>
                <td>
                  <span data-testid="trust-sent-back">
                    {t.sent_back_then_approved.length} of {t.sent_back}
                  </span>{" "}
                  <Sessions ids={t.sent_back_then_approved} titles={titles} onOpen={onOpen} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </details>
  );
}

const share = (part: number, of: number) => (of === 0 ? "—" : `${part} of ${of} (${Math.round((part * 100) / of)}%)`);

/** Which agent to send which task to, from the person's own history. */
export function AgentTrustPanel() {
  const { rows, failed } = useHistoryFigures(ipc.agentTrust);
  return (
    <details className="panel storage" data-testid="agent-trust-view">
      <summary>How each agent has done</summary>
      <p className="muted hint">Per agent and model, across your history: how often its tasks ended verified done, how often you chose its attempt over the others, how often you approved its work, and how often it claimed done without being done.</p>
      {failed}
      {rows && rows.length === 0 && <p className="muted">No tasks yet.</p>}
      {rows && rows.length > 0 && (
        <table className="trust-table">
          <thead>
            <tr>
              <th>Agent</th>
              <th>Verified done</th>
              <th>Chosen among attempts</th>
              <th>Approved</th>
              <th>Claimed done, was not</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((t) => (
              <tr key={`${t.agent}/${t.model}`} data-testid="agent-trust-row" data-agent={t.agent} data-model={t.model}>
                <td>
                  {t.agent}
                  {t.model && (
                    <>
                      {" "}
                      <code>{t.model}</code>
                    </>
                  )}
                </td>
                <td>{share(t.verified_done, t.tasks)}</td>
                <td data-testid="agent-trust-chosen">{share(t.chosen, t.attempts_decided)}</td>
                <td>{share(t.approved, t.reviews_decided)}</td>
                <td data-testid="agent-trust-false-claims">{share(t.false_claims, t.tasks)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </details>
  );
}
