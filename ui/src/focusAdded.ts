import { useEffect, useRef } from "react";

/**
 * Focus for a list the person adds to: the added item's field takes the focus once the list has
 * grown to hold it, since adding one is the start of typing it. `select` selects a suggested value
 * so typing replaces it. After a removal, the item that took the removed one's place has it.
 */
export function useFocusAdded(count: number, select = false) {
  const pending = useRef<number | null>(null);
  const fields = useRef<(HTMLInputElement | null)[]>([]);
  // Where the focus goes when a removal leaves no item.
  const none = useRef<HTMLElement | null>(null);
  const selecting = useRef(select);
  const wasAdded = useRef(false);
  useEffect(() => {
    if (pending.current === null) return;
    const field = pending.current < 0 ? none.current : fields.current[pending.current];
    field?.focus();
    if (selecting.current && field instanceof HTMLInputElement) field.select();
    // Focus brings only the field into view: an added item's other boxes stayed below the
    // edge of a short window, its field's focus ring cut off there.
    if (wasAdded.current) field?.closest("li")?.scrollIntoView?.({ block: "nearest" });
    pending.current = null;
    wasAdded.current = false;
    selecting.current = select;
  }, [count, select]);
  return {
    /** Call as the item is added, before the list grows. */
    adding: () => {
      pending.current = count;
      wasAdded.current = true;
    },
    /** Call as item i is removed: the focus goes to the item that takes its place (the one
     * before it when it was the last), or to `otherwise` when none is left; it would fall to the
     * page with the removed item's button. */
    removing: (i: number, otherwise: HTMLElement | null) => {
      pending.current = count > 1 ? Math.min(i, count - 2) : -1;
      wasAdded.current = false;
      none.current = otherwise;
      selecting.current = false;
    },
    /** The ref of item i's field. */
    field: (i: number) => (el: HTMLInputElement | null) => {
      fields.current[i] = el;
    },
  };
}
