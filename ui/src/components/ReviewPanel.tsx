import { useEffect, useState } from "react";
import { AppError, ipc, TRUST_SHOWN_FROM, type EvaluatorTrust, type FileChange } from "../ipc";
import { END_LABEL, STUCK_LABEL, type PlanView, type Review } from "../session/model";
import { REVIEW_EVENT, type ReviewAction } from "./CommandPalette";

function Diff({ file }: { file: FileChange }) {
  const [open, setOpen] = useState(false);
  return (
    <div className="file-change" data-testid="file-change">
      <button className="file-head" onClick={() => setOpen(!open)} aria-expanded={open}>
        <span className={`kind kind-${file.kind}`}>{file.kind}</span> <code>{file.path}</code>
      </button>
      {open && (
        <pre className="diff">
          {file.diff.split("\n").map((l, i) => (
            <span key={i} className={l.startsWith("+") && !l.startsWith("+++") ? "add" : l.startsWith("-") && !l.startsWith("---") ? "del" : undefined}>
              {l}
              {"\n"}
            </span>
          ))}
        </pre>
      )}
    </div>
  );
}

interface Props {
  review: Review;
  tokens: { agent: number; evaluator: number };
  onDecided: () => void;
  /** The model whose verdict this is, for its track record. */
  evaluatorModel?: string;
  /** With plan mode: each step's outcome, shown with the evidence. */
  plan?: PlanView;
}

/** "judge-a has called 3 of its last 40 `done` verdicts wrongly": once there are enough reviews. */
function TrackRecord({ model }: { model: string }) {
  const [trust, setTrust] = useState<EvaluatorTrust | null>(null);
  useEffect(() => {
    ipc.evaluatorTrust().then((all) => setTrust((all ?? []).find((t) => t.model === model) ?? null), () => {});
  }, [model]);
  if (!trust || trust.reviews < TRUST_SHOWN_FROM || trust.false_done_rate === null) return null;
  const pct = Math.round(trust.false_done_rate * 100);
  return (
    <span className="muted track-record" data-testid="false-done-rate" title="How often this evaluator's 'done' was then rejected or sent back by you (History → How far to trust the evaluator)">
      {" "}
      · {model}: {pct}% false done over {trust.reviews} reviews
    </span>
  );
}

export function ReviewPanel({ review, tokens, onDecided, evaluatorModel, plan }: Props) {
  const [feedback, setFeedback] = useState("");
  const [asking, setAsking] = useState(false);
  // Approve / Request changes / Reject from the command palette.
  const [paletteAction, setPaletteAction] = useState<ReviewAction | null>(null);
  useEffect(() => {
    const on = (e: Event) => setPaletteAction((e as CustomEvent<ReviewAction>).detail);
    window.addEventListener(REVIEW_EVENT, on);
    return () => window.removeEventListener(REVIEW_EVENT, on);
  }, []);
  const [revert, setRevert] = useState(false); // a reject keeps the files unless the person asks for the revert
  const [conflicts, setConflicts] = useState<string[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const decide = async (decision: "approve" | "request_changes" | "reject", force = false) => {
    setBusy(true);
    setError(null);
    try {
      const out = await ipc.submitReview({ review_id: review.reviewId, decision, feedback: decision === "request_changes" ? feedback : undefined, revert: decision === "reject" && revert, force });
      if (out.outcome === "needs_confirmation") setConflicts(out.conflicts);
      else onDecided();
    } catch (e) {
      setError((e as AppError).message);
    } finally {
      setBusy(false);
    }
  };

  useEffect(() => {
    if (!paletteAction || review.decided) return;
    setPaletteAction(null);
    if (paletteAction === "request_changes") setAsking(true); // the feedback box opens, focused
    else void decide(paletteAction);
    // decide reads the current revert choice; the action runs once per palette pick
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [paletteAction]);

  if (review.decided) {
    return (
      <section className="panel review" data-testid="review-panel">
        <h2>{{ approve: "Approved", reject: "Rejected" }[review.decided.decision] ?? "Changes requested"}</h2>
        <p className="muted">Decided by {review.decided.by === "auto" ? "auto-approve" : "you"}.</p>
        {review.decided.reverted && (
          <p className="notice" role="status" data-testid="revert-summary">
            The agent's changes were undone: {revertSummary(review.decided.reverted)}.
            {[...review.decided.reverted.restored, ...review.decided.reverted.deleted].length > 0 && (
              <span className="muted small"> ({[...review.decided.reverted.restored, ...review.decided.reverted.deleted].join(", ")})</span>
            )}
          </p>
        )}
      </section>
    );
  }
  return (
    <section className="panel review" data-testid="review-panel" aria-label="Review the result">
      <h2>Review the result</h2>
      <dl className="facts">
        <dt>Agent's claim</dt>
        <dd data-testid="review-claim">
          {review.claim === "none" ? "no explicit claim" : review.claim}
          {review.claimWords?.summary && <span className="claim-words" data-testid="review-claim-words">: “{review.claimWords.summary}”</span>}
          {review.claimWords?.remaining_work && <span className="muted" data-testid="review-claim-remaining"> Remaining, in its words: “{review.claimWords.remaining_work}”</span>}
        </dd>
        <dt>Outcome</dt>
        <dd data-testid="review-end-reason">
          {END_LABEL[review.endReason]}
          {review.stuck && (
            <span data-testid="review-stuck">
              {" "}
              ({STUCK_LABEL[review.stuck.pattern] ?? review.stuck.pattern}
              {review.stuck.repeated ? <>: <code>{review.stuck.repeated}</code></> : null})
            </span>
          )}
        </dd>
        {plan && (
          <>
            <dt>Steps</dt>
            <dd data-testid="review-steps">
              {plan.steps.filter((s) => s.state === "done").length} of {plan.steps.filter((s) => s.state !== "replaced").length} done
              {plan.revisions.length > 0 ? `, plan revised ${plan.revisions.length}×` : ""}
              <ol className="review-steps">
                {plan.steps
                  .filter((s) => s.state !== "replaced")
                  .map((s, i) => (
                    <li key={i} data-state={s.state}>
                      <span className={`tag step-state state-${s.state}`}>{s.endReason ? END_LABEL[s.endReason] : s.state}</span> {s.step.title}
                      {s.summary && <span className="muted">: {s.summary}</span>}
                    </li>
                  ))}
              </ol>
            </dd>
          </>
        )}
        <dt>Evaluator</dt>
        <dd data-testid="review-verdict">
          {review.verdict ? review.verdict.replace("_", " ") : "not asked"}
          {review.verdictSummary && <span className="muted">: {review.verdictSummary}</span>}
          {review.verdict && evaluatorModel && <TrackRecord model={evaluatorModel} />}
        </dd>
        <dt>Tokens</dt>
        <dd data-testid="review-tokens">
          agent {(review.tokens?.agent ?? tokens.agent).toLocaleString()} · evaluator {(review.tokens?.evaluator ?? tokens.evaluator).toLocaleString()}
          {review.tokens && review.tokens.compaction > 0 ? ` · compaction ${review.tokens.compaction.toLocaleString()}` : ""}
        </dd>
        <dt>Cost</dt>
        <dd data-testid="review-cost">{review.costUsd === undefined ? "set prices in Settings to see it" : `$${review.costUsd.toFixed(4)}`}</dd>
      </dl>
      {review.remaining.length > 0 && (
        <>
          <h3>Still open</h3>
          <ul>
            {review.remaining.map((r, i) => (
              <li key={i}>{r}</li>
            ))}
          </ul>
        </>
      )}
      {review.verification.length > 0 && (
        <>
          <h3>Verification</h3>
          {review.verification.map((v, i) => (
            <div key={i} data-testid="review-verification">
              {review.verification.length > 1 && (
                <p className="muted small">
                  Verification {i + 1} of {review.verification.length}
                </p>
              )}
              <pre className="output">{v}</pre>
            </div>
          ))}
        </>
      )}
      <h3>Files changed ({review.files.length})</h3>
      {review.files.length === 0 ? <p className="muted">No files changed.</p> : review.files.map((f) => <Diff key={f.path} file={f} />)}
      {(review.notCovered?.length ?? 0) > 0 && (
        <p className="muted small" data-testid="review-not-covered">
          Not covered by revert (over the checkpoint size limit, so never copied): {review.notCovered!.join(", ")}
        </p>
      )}
      {conflicts && (
        <div className="callout panel" role="alertdialog" data-testid="revert-conflicts">
          <p>You edited these files after the agent. Reverting will overwrite your edits:</p>
          <ul>
            {conflicts.map((c) => (
              <li key={c}>
                <code>{c}</code>
              </li>
            ))}
          </ul>
          <div className="actions">
            <button className="btn" onClick={() => setConflicts(null)}>
              Keep my edits
            </button>
            <button className="btn danger" onClick={() => decide("reject", true)} data-testid="revert-anyway">
              Revert anyway
            </button>
          </div>
        </div>
      )}
      {asking && (
        <label className="field">
          <span>What should change?</span>
          <textarea
            data-testid="feedback-input"
            value={feedback}
            onChange={(e) => setFeedback(e.target.value)}
            onKeyDown={(e) => {
              // Enter sends, Shift+Enter is a new line: as in every chat box.
              if (e.key === "Enter" && !e.shiftKey && !e.nativeEvent.isComposing) {
                e.preventDefault();
                if (feedback.trim() && !busy) decide("request_changes");
              }
            }}
            rows={3}
            autoFocus
          />
          <span className="muted hint">Enter sends · Shift+Enter for a new line</span>
        </label>
      )}
      {error && (
        <p className="field-error" role="alert">
          {error}
        </p>
      )}
      <div className="actions review-actions">
        <label className="check">
          <input type="checkbox" checked={revert} onChange={(e) => setRevert(e.target.checked)} data-testid="revert-checkbox" /> Also undo the agent's changes to my files
        </label>
        <button className="btn danger" disabled={busy} onClick={() => decide("reject")} data-testid="reject">
          Reject
        </button>
        {asking ? (
          <button className="btn" disabled={busy || !feedback.trim()} onClick={() => decide("request_changes")} data-testid="send-feedback">
            Send feedback
          </button>
        ) : (
          <button className="btn" disabled={busy} onClick={() => setAsking(true)} data-testid="request-changes">
            Request changes
          </button>
        )}
        <button className="btn primary" disabled={busy} onClick={() => decide("approve")} data-testid="approve">
          Approve
        </button>
      </div>
    </section>
  );
}

/** "2 files restored, 1 deleted", as the CLI and the export say it. */
export function revertSummary({ restored, deleted }: { restored: string[]; deleted: string[] }): string {
  const files = (n: number) => (n === 1 ? "1 file" : `${n} files`);
  if (!restored.length && !deleted.length) return "no file needed restoring";
  if (!deleted.length) return `${files(restored.length)} restored`;
  if (!restored.length) return `${files(deleted.length)} deleted`;
  return `${files(restored.length)} restored, ${deleted.length} deleted`;
}
