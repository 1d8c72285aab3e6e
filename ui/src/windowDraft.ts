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

function readChoice<T>(key: string, fallback: T): T {
  try {
    const kept = sessionStorage.getItem(key);
    return kept === null ? fallback : (JSON.parse(kept) as T);
  } catch {
    return fallback;
  }
}

/** A choice made in a form (a model, a plan mode, an agent, how many attempts), kept in this
 * window's storage under `key` as `useWindowDraft` keeps words: a visit elsewhere and back finds
 * the form as it was left. Until the person chooses other than `fallback` (the Settings default),
 * the default holds, so a default changed meanwhile is what the form shows. `forget` goes back
 * to the default (once the task is sent). */
export function useWindowChoice<T>(key: string, fallback: T): [T, (v: T | ((old: T) => T)) => void, () => void] {
  const [kept, setKept] = useState<{ chosen: boolean; value: T }>(() => {
    const has = (() => {
      try {
        return sessionStorage.getItem(key) !== null;
      } catch {
        return false;
      }
    })();
    return { chosen: has, value: readChoice(key, fallback) };
  });
  const value = kept.chosen ? kept.value : fallback;
  const set = useCallback(
    (v: T | ((old: T) => T)) => {
      setKept((old) => {
        const now = typeof v === "function" ? (v as (o: T) => T)(old.chosen ? old.value : fallback) : v;
        // The default picked is no choice: a default changed later in Settings then shows.
        const chosen = JSON.stringify(now) !== JSON.stringify(fallback);
        try {
          if (chosen) sessionStorage.setItem(key, JSON.stringify(now));
          else sessionStorage.removeItem(key);
        } catch {
          /* storage full: the choice lives as long as the form */
        }
        return { chosen, value: now };
      });
    },
    [key, fallback],
  );
  const forget = useCallback(() => {
    setKept({ chosen: false, value: fallback });
    try {
      sessionStorage.removeItem(key);
    } catch {
      /* nothing kept */
    }
  }, [key, fallback]);
  return [value, set, forget];
}
