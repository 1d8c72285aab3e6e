import { useEffect, useRef } from "react";
import { AlertDialog } from "./AlertDialog";

/** Asked when Esc would cancel a running task: a key pressed to close something else must not
 * throw away the run. Keeping it is the default (Enter and Esc both keep it). The Cancel button
 * itself cancels at once: it says what it does. */
export function ConfirmCancel({ onKeep, onCancel }: { onKeep: () => void; onCancel: () => void }) {
  const keep = useRef<HTMLButtonElement>(null);
  useEffect(() => keep.current?.focus(), []);
  return (
    <AlertDialog title="Cancel the running task?" testid="confirm-cancel" onEscape={onKeep} describedBy="confirm-cancel-body">
      <p id="confirm-cancel-body">The agent stops where it is. Everything it did so far is kept, and the session can be continued later.</p>
      <div className="actions">
        <button ref={keep} className="btn primary" onClick={onKeep} data-testid="confirm-cancel-keep">
          Keep working
        </button>
        <button className="btn danger" onClick={onCancel} data-testid="confirm-cancel-stop">
          Cancel the task
        </button>
      </div>
    </AlertDialog>
  );
}
