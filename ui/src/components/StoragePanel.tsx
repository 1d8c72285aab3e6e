import { useCallback, useEffect, useState } from "react";
import { AppError, ipc, type StoreUsage, type WorktreeUsage } from "../ipc";
import { STATUS_LABEL } from "../session/model";
import { useHistoryChanges } from "../historyChanges";

const mb = (b: number) => (b < 1_000_000 ? `${Math.max(1, Math.round(b / 1000))} KB` : `${(b / 1_000_000).toFixed(1)} MB`);

/** A figure that could not be read: said, with a way to try again, where it would have shown. */
function Unread({ what, why, testid, retry }: { what: string; why: string; testid: string; retry: () => void }) {
  return (
    <p className="field-error row" role="alert" data-testid={testid}>
      <span className="grow">
        {what} could not be read: {why}
      </span>
      <button type="button" className="btn small" onClick={retry}>
        Try again
      </button>
    </p>
  );
}

/** Disk the checkpoints take per workspace, and a way to give back what deleted sessions used. */
export function CheckpointStorage() {
  const [stores, setStores] = useState<StoreUsage[] | null>(null);
  const [note, setNote] = useState<string | null>(null);
  const [busy, setBusy] = useState<string | null>(null);
  const load = useCallback(() => {
    ipc.checkpointUsage().then(setStores, (e) => setNote((e as AppError).message));
  }, []);
  useEffect(load, [load]);
  if (!stores && note) return <Unread what="Checkpoints' disk use" why={note} testid="checkpoint-usage-error" retry={() => { setNote(null); load(); }} />;
  if (!stores || stores.length === 0) return null;
  const free = async (s: StoreUsage) => {
    setBusy(s.id);
    setNote(null);
    try {
      const freed = await ipc.freeCheckpoints(s.id);
      const left =
        s.sessions === 0
          ? " No session uses it any more; what is left is the store's own set-up, used again by the next task in that folder."
          : freed > 0
          ? ""
          : " Every byte belongs to a session you kept.";
      setNote(`${freed > 0 ? `Freed ${mb(freed)}` : "Nothing to free"} in ${s.workspace}.${left}`);
      load();
    } catch (e) {
      setNote((e as AppError).message);
    } finally {
      setBusy(null);
    }
  };
  return (
    <details className="panel storage" data-testid="checkpoint-storage">
      <summary>Checkpoint storage: {mb(stores.reduce((n, s) => n + s.bytes, 0))} for {stores.length} workspace{stores.length === 1 ? "" : "s"}</summary>
      <p className="muted small">Checkpoints record each workspace once, for the review's diffs and Reject's revert. Deleting a session keeps its files' history until you free it here; sessions you keep are not affected.</p>
      <ul>
        {stores.map((s) => (
          <li key={s.id} className="row" data-testid="storage-row">
            <code className="grow">{s.workspace}</code>
            <span>{mb(s.bytes)}</span>
            <span className="muted">
              {s.sessions} session{s.sessions === 1 ? "" : "s"}
            </span>
            <button className="btn small" disabled={busy === s.id} onClick={() => free(s)} data-testid="free-storage">
              {busy === s.id ? "Freeing…" : "Free unused space"}
            </button>
          </li>
        ))}
      </ul>
      {note && (
        <p className="muted" role="status" data-testid="storage-note">
          {note}
        </p>
      )}
    </details>
  );
}


/** Each task's worktree on disk; decided tasks' leftovers can be cleaned up. */
export function WorktreeStorage() {
  const [rows, setRows] = useState<WorktreeUsage[] | null>(null);
  const [note, setNote] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const load = useCallback(() => {
    ipc.worktreeUsage().then((r) => setRows(r ?? []), (e) => setNote((e as AppError).message));
  }, []);
    // A worktree goes a while after its task's decision, or with its deleted session.
  useHistoryChanges(load);
  if (!rows && note) return <Unread what="Worktrees' disk use" why={note} testid="worktree-usage-error" retry={() => { setNote(null); load(); }} />;
  if (!rows) return null;
  const leftovers = rows.filter((r) => r.leftover);
  const clean = async () => {
    setBusy(true);
    setNote(null);
    try {
      const freed = await ipc.cleanUpWorktrees();
      setNote(`Removed ${leftovers.length} worktree${leftovers.length === 1 ? "" : "s"} of decided tasks, ${mb(freed)} freed.`);
      load();
    } catch (e) {
      setNote((e as AppError).message);
    } finally {
      setBusy(false);
    }
  };
  return (
    // Folded like the panels beside it when there is nothing in it; open while worktrees wait,
    // and while it says what a clean-up did (which may have emptied it).
    <details className="panel storage" data-testid="worktree-storage" open={rows.length > 0 || note !== null}>
      <summary>
        Task worktrees: {rows.length === 0 ? "none" : `${mb(rows.reduce((n, r) => n + r.bytes, 0))} for ${rows.length}`}
      </summary>
      <p className="muted small">
        Each task in a git repository works in its own worktree. Approving or rejecting it removes the worktree; one waits here while its task is undecided (waiting for review, cancelled, or interrupted).
      </p>
      {rows.length > 0 && (
        <ul>
          {rows.map((r) => (
            <li key={r.session_id} className="row" data-testid="worktree-row">
              <span className="grow clamp" title={r.folder}>
                {r.title}
                {r.attempt ? ` · ${r.attempt}` : ""} <span className="muted small">{r.branch}</span>
              </span>
              <span>{mb(r.bytes)}</span>
              <span className="muted">{r.leftover ? "decided, left behind" : STATUS_LABEL[r.status]}</span>
            </li>
          ))}
        </ul>
      )}
      {leftovers.length > 0 && (
        <button type="button" className="btn small" disabled={busy} onClick={clean} data-testid="clean-up-worktrees">
          {busy ? "Cleaning up…" : `Remove ${leftovers.length} left behind`}
        </button>
      )}
      {note && (
        <p className="muted" role="status" data-testid="worktree-note">
          {note}
        </p>
      )}
    </details>
  );
}

/** Settings → Storage and History: what tasks and their checkpoints take on disk. */
export function StoragePanel() {
  return (
    <>
      <WorktreeStorage />
      <CheckpointStorage />
    </>
  );
}
