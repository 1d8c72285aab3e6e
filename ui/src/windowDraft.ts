import { useCallback, useState } from "react";

function read(key: string): string {
  try {
    return sessionStorage.getItem(key) ?? "";
  } catch {
    return "";
  }
}

/** Words being typed in a box (a task, a message, review feedback, an answer), kept in this
 * window's storage under `key`: a visit to Settings, History or another session and back finds
 * them as left, and nothing outlives the window. Setting "" forgets them (once sent). */
export function useWindowDraft(key: string): [string, (v: string) => void] {
  const [kept, setKept] = useState(() => ({ key, value: read(key) }));
  // Another key (the next review round) shows what is kept under it.
  const value = kept.key === key ? kept.value : read(key);
  const set = useCallback(
    (v: string) => {
      setKept({ key, value: v });
      try {
        if (v) sessionStorage.setItem(key, v);
        else sessionStorage.removeItem(key);
      } catch {
        /* storage full: the words live as long as the box */
      }
    },
    [key],
  );
  return [value, set];
}
