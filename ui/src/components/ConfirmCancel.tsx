import { useEffect, useRef } from "react";
import { AlertDialog } from "./AlertDialog";

/** Asked when Esc would cancel a running task: a key pressed to close something else must not
 * throw away the run. Keeping it is the default (Enter and Esc both keep it). The Cancel button
 * itself cancels at once: it says what it does, unless it would also throw away the person's
 * edits to a plan (`planEdited`). */
export function ConfirmCancel({ onKeep, onCancel, planWaiting = false, planEdited = false }: { onKeep: () => void; onCancel: () => void; planWaiting?: boolean; planEdited?: boolean }) {
  const keep = useRef<HTMLButtonElement>(null);
  useEffect(() => keep.current?.focus(), []);
  return (
    <AlertDialog title={planWaiting ? "Cancel the task?" : "Cancel the running task?"} testid="confirm-cancel" onEscape={onKeep} describedBy="confirm-cancel-body">
      <p id="confirm-cancel-body">
        {planWaiting
          ? `Its plan has not run, so nothing was changed. Cancelled, the task ends with its plan unrun${planEdited ? "; your edits to the plan are lost with it" : ""}; the session stays in History.`
          : "The agent stops where it is. Everything it did so far is kept, and the session can be continued later."}
      </p>
      <div className="actions">
        <button ref={keep} className="btn primary" onClick={onKeep} data-testid="confirm-cancel-keep">
          {planWaiting ? "Keep the plan" : "Keep working"}
        </button>
        <button className="btn danger" onClick={onCancel} data-testid="confirm-cancel-stop">
          Cancel the task
        </button>
      </div>
    </AlertDialog>
  );
}
