import { useEffect, useRef, useState } from "react";
import { AppError, ipc } from "../ipc";
import { AlertDialog } from "./AlertDialog";

/** Asks before quitting over running tasks: the close button and Ctrl+Q both land here. Keeping
 * the window is the default (Enter and Esc both keep it), since quitting stops work. */
export function QuitDialog({ running, onKeep }: { running: number; onKeep: () => void }) {
  const keep = useRef<HTMLButtonElement>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => keep.current?.focus(), []);
  const quit = async () => {
    setBusy(true);
    try {
      await ipc.quit(true);
    } catch (e) {
      setError((e as AppError).message);
      setBusy(false);
    }
  };
  const tasks = running === 1 ? "A task is" : `${running} tasks are`;
  return (
    <AlertDialog title={`${tasks} still running`} testid="quit-dialog" onEscape={onKeep} describedBy="quit-body">
      <p id="quit-body">
        {running === 1
          ? "Quitting stops it. It is kept in History as cancelled, with everything it did so far, and can be continued from there."
          : "Quitting stops them. Each is kept in History as cancelled, with everything it did so far, and can be continued from there."}
      </p>
      {error && (
        <p className="field-error" role="alert">
          {error}
        </p>
      )}
      <div className="actions">
        <button ref={keep} className="btn primary" onClick={onKeep} disabled={busy} data-testid="quit-keep">
          Keep working
        </button>
        <button className="btn danger" onClick={quit} disabled={busy} data-testid="quit-stop">
          {busy ? "Stopping…" : running === 1 ? "Stop it and quit" : "Stop them and quit"}
        </button>
      </div>
    </AlertDialog>
  );
}
