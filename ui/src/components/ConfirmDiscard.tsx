import { useEffect, useRef } from "react";
import { AlertDialog } from "./AlertDialog";

/** Asked before a task that ended without a review is put away: what it wrote goes with its
 * worktree. Keeping it is the default (Enter and Esc both keep it). */
export function ConfirmDiscard({ branch, onKeep, onDiscard }: { branch: string; onKeep: () => void; onDiscard: () => void }) {
  const keep = useRef<HTMLButtonElement>(null);
  useEffect(() => keep.current?.focus(), []);
  return (
    <AlertDialog title="Discard this task's work?" testid="confirm-discard" onEscape={onKeep} describedBy="confirm-discard-body">
      <p id="confirm-discard-body">
        Its worktree and the branch <code>{branch}</code> are removed, with whatever the agent wrote there. Your checkout is not touched, and History keeps the session.
      </p>
      <div className="actions">
        <button ref={keep} className="btn primary" onClick={onKeep} data-testid="confirm-discard-keep">
          Keep it
        </button>
        <button className="btn danger" onClick={onDiscard} data-testid="confirm-discard-go">
          Discard the work
        </button>
      </div>
    </AlertDialog>
  );
}
