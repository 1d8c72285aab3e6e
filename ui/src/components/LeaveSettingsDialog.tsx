import { useEffect, useRef, useState } from "react";
import { AlertDialog } from "./AlertDialog";

/** Asked when the person leaves Settings with changes not saved: typed input is never dropped
 * silently. Save is the default (Enter); Esc stays. */
export function LeaveSettingsDialog({ onSave, onDiscard, onStay }: { onSave: () => Promise<boolean>; onDiscard: () => void; onStay: () => void }) {
  const save = useRef<HTMLButtonElement>(null);
  const [busy, setBusy] = useState(false);
  useEffect(() => save.current?.focus(), []);
  const trySave = async () => {
    setBusy(true);
    const ok = await onSave();
    setBusy(false);
    // A save that failed shows its error in Settings: stay there so the person can fix it.
    if (!ok) onStay();
  };
  return (
    <AlertDialog title="Save your changes to Settings?" testid="leave-settings" onEscape={onStay}>
      <p>You changed settings without saving them. Tasks use the saved settings.</p>
      <div className="actions">
        <button className="btn" onClick={onStay} disabled={busy} data-testid="leave-stay">
          Keep editing
        </button>
        <button className="btn danger" onClick={onDiscard} disabled={busy} data-testid="leave-discard">
          Discard changes
        </button>
        <button ref={save} className="btn primary" onClick={() => void trySave()} disabled={busy} data-testid="leave-save">
          {busy ? "Saving…" : "Save"}
        </button>
      </div>
    </AlertDialog>
  );
}
