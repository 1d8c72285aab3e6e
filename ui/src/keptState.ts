import { useCallback, useState } from "react";

/**
 * A screen's state kept for the window's life (sessionStorage), by `key`: a visit to another
 * screen unmounts the one the person was on, and what it showed should be there when they come
 * back. Setting it after the screen is gone still keeps it, for work that ends while they are away.
 */
export function useKeptState(key: string): [string | null, (value: string | null) => void] {
  const [value, setValue] = useState<string | null>(() => sessionStorage.getItem(key));
  const set = useCallback(
    (next: string | null) => {
      setValue(next);
      if (next === null) sessionStorage.removeItem(key);
      else sessionStorage.setItem(key, next);
    },
    [key],
  );
  return [value, set];
}
