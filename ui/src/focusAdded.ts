import { useEffect, useRef } from "react";

/**
 * Focus for a list the person adds to: the added item's field takes the focus once the list has
 * grown to hold it, since adding one is the start of typing it. `select` selects a suggested value
 * so typing replaces it.
 */
export function useFocusAdded(count: number, select = false) {
  const pending = useRef<number | null>(null);
  const fields = useRef<(HTMLInputElement | null)[]>([]);
  useEffect(() => {
    if (pending.current === null) return;
    const field = fields.current[pending.current];
    field?.focus();
    if (select) field?.select();
    pending.current = null;
  }, [count, select]);
  return {
    /** Call as the item is added, before the list grows. */
    adding: () => {
      pending.current = count;
    },
    /** The ref of item i's field. */
    field: (i: number) => (el: HTMLInputElement | null) => {
      fields.current[i] = el;
    },
  };
}
