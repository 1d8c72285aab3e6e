import { useRef, useState } from "react";
import type { AppError } from "./ipc";

/**
 * One action at a time: while one is on its way, a second click (or Enter) does nothing. A
 * permission answered twice, a comment saved twice or a login run twice would each reach the
 * engine twice. The guard is a ref, not the state: two events can come before the state has
 * rendered the buttons disabled.
 *
 * `busy` names the action on its way (null when none is); `run(name, action)` runs it unless one
 * is on its way. `say` is told null as an action starts (what the last one said no longer holds)
 * and what it threw when it fails, with its name, so the message is shown where it was asked for.
 */
export function useOneAction(say: (message: string | null, name: string) => void) {
  const [busy, setBusy] = useState<string | null>(null);
  const inFlight = useRef(false);
  const run = async (name: string, action: () => Promise<unknown>) => {
    if (inFlight.current) return;
    inFlight.current = true;
    setBusy(name);
    say(null, name);
    try {
      await action();
    } catch (e) {
      say((e as AppError).message, name);
    } finally {
      inFlight.current = false;
      setBusy(null);
    }
  };
  return { busy, run };
}
