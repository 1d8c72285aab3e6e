import { useEffect } from "react";
import { ipc } from "./ipc";

/** Reads with `load` now, and again whenever the history changes (a session started, decided or
 * deleted, in this window or another process): figures and lists shown from it stay true. */
export function useHistoryChanges(load: () => void) {
  useEffect(() => {
    load();
    const off = ipc.onHistoryChanged(load);
    return () => void off.then((f) => f()).catch(() => undefined);
  }, [load]);
}
