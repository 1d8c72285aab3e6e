// Whether the person last used the keys or the pointer, on the page's root as `data-keys`. WebKit
// does not count a radio reached with an arrow key as :focus-visible, so New Task's Plan switch
// lost its ring as the choice moved; its ring is drawn from this instead (styles.css).

/** Starts following; returns how to stop. */
export function followLastInput(root: HTMLElement = document.documentElement): () => void {
  const keys = (e: KeyboardEvent) => {
    // A modifier alone (Ctrl held for a click) is no move of the focus.
    if (!["Control", "Shift", "Alt", "Meta"].includes(e.key)) root.dataset.keys = "";
  };
  const pointer = () => delete root.dataset.keys;
  window.addEventListener("keydown", keys, true);
  window.addEventListener("pointerdown", pointer, true);
  return () => {
    window.removeEventListener("keydown", keys, true);
    window.removeEventListener("pointerdown", pointer, true);
  };
}
