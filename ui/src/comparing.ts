// The evaluator's comparisons of attempt groups under way in this window. They outlive the
// screen that asked (the person may look elsewhere meanwhile), and every screen that offers a
// choice of attempt knows of them: choosing while the evaluator is being asked would throw its
// answer away.
import { useSyncExternalStore } from "react";
import type { Compared } from "./ipc";

const asking = new Map<string, Promise<Compared>>();
const listeners = new Set<() => void>();
const changed = () => listeners.forEach((l) => l());

/** The comparison of `group` under way, if any. */
export function comparisonOf(group: string): Promise<Compared> | undefined {
  return asking.get(group);
}

/** Starts `ask` for `group` unless one is under way; either way, the one to wait for. */
export function compareOnce(group: string, ask: () => Promise<Compared>): Promise<Compared> {
  const under = asking.get(group);
  if (under) return under;
  const pending = ask();
  asking.set(group, pending);
  const forget = () => {
    asking.delete(group);
    changed();
  };
  pending.then(forget, forget);
  changed();
  return pending;
}

const subscribe = (l: () => void) => {
  listeners.add(l);
  return () => void listeners.delete(l);
};

/** Whether the evaluator is comparing `group`'s attempts now; follows changes. */
export function useComparing(group: string | undefined): boolean {
  return useSyncExternalStore(subscribe, () => (group ? asking.has(group) : false));
}
