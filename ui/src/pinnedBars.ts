// What gets the focus is kept out from under the bars pinned to the scrolling area's edges (a
// session's header and bottom bar, Settings' and New Task's Save and Run): a card tabbed to from
// the other end of a long timeline is shown whole, not behind the status or the review (WCAG
// 2.4.11, focus not obscured); a field with its label; a field clicked at the window's foot comes
// out from under Save or Run. WebKit scrolls a focused element only as far as the area's edge,
// under the bar, and its scrollIntoView misplaces one under scroll padding, so the scroll is
// measured here. A bar says where it is pinned with `data-pinned="top"` or "bottom".

/** Starts keeping focus in `area` clear of its pinned bars; returns how to stop. */
export function keepFocusClearOfPinnedBars(area: HTMLElement): () => void {
  // Whether a pointer is pressed: what it is on must not move before it is let go.
  let pressing = false;
  const press = () => (pressing = true);
  const release = () => (pressing = false);
  const reveal = (e: FocusEvent) => {
    const el = e.target;
    if (!(el instanceof HTMLElement) || el === area) return;
    // `data-keys`: the keys were used last (lastInput.ts). Else only a field comes out, and only
    // from under the bottom bar; while a pointer is pressed, only one whose click does not matter
    // once it has the focus: a button, a checkbox or a radio moved between the press and the
    // release would lose its click.
    const byKeys = document.documentElement.dataset.keys !== undefined;
    const field = el.matches("input, select, textarea");
    if (!byKeys && !(field && (!pressing || !el.matches("[type=checkbox], [type=radio], [type=range]")))) return;
    // Focus handed on by something that scrolls the page itself (the Settings index, smoothly):
    // a scroll now would cut its own short.
    if (e.relatedTarget instanceof Element && e.relatedTarget.closest("[data-scrolls-itself]")) return;
    // A timer, not an animation frame: WebKit holds frames back while its window is hidden, and
    // its own bringing of the element into view comes after the focus event.
    setTimeout(() => clear(el, byKeys), 0);
  };
  /** Scrolls `el`, if it still has the focus, out from under the bars (up too, `byKeys`). */
  const clear = (el: HTMLElement, byKeys: boolean) => {
    if (document.activeElement !== el) return;
    const view = area.getBoundingClientRect();
    let [clearBelow, clearAbove] = [view.top, view.bottom];
    for (const bar of area.querySelectorAll<HTMLElement>("[data-pinned]")) {
      if (bar.contains(el)) return; // a bar is always in view
      const r = bar.getBoundingClientRect();
      if (bar.dataset.pinned === "top") clearBelow = Math.max(clearBelow, r.bottom);
      else clearAbove = Math.min(clearAbove, r.top);
    }
    // A field with its label (Shift+Tab brought a box in only to the top edge, its label above),
    // when the two fit between the bars; else the control alone, which must not go under one.
    const group = byKeys ? el.closest<HTMLElement>("label, .field")?.getBoundingClientRect() : undefined;
    const shown = group && group.bottom - group.top <= clearAbove - clearBelow ? group : el.getBoundingClientRect();
    const by = scrollToClear(shown, clearBelow, clearAbove);
    if (by > 0 || (by < 0 && byKeys)) area.scrollTop += by;
  };
  // A window made shorter keeps the area's scroll where it was: the field being typed in went
  // under the bottom bar. Once the size settles it comes out again.
  let resized = 0;
  const onResize = () => {
    clearTimeout(resized);
    resized = window.setTimeout(() => {
      const el = document.activeElement;
      if (el instanceof HTMLElement && area.contains(el) && el.matches("input, select, textarea")) clear(el, false);
    }, 100);
  };
  area.addEventListener("focusin", reveal);
  window.addEventListener("resize", onResize);
  area.addEventListener("pointerdown", press, true);
  window.addEventListener("pointerup", release, true);
  window.addEventListener("pointercancel", release, true);
  return () => {
    clearTimeout(resized);
    window.removeEventListener("resize", onResize);
    area.removeEventListener("focusin", reveal);
    area.removeEventListener("pointerdown", press, true);
    window.removeEventListener("pointerup", release, true);
    window.removeEventListener("pointercancel", release, true);
  };
}

/** How far to scroll so `r` shows between `clearBelow` and `clearAbove`, with a little air (one
 * taller than the gap shows its top); negative scrolls up, 0 when it already shows. */
export function scrollToClear(r: { top: number; bottom: number }, clearBelow: number, clearAbove: number, air = 8): number {
  if (r.top < clearBelow) return r.top - clearBelow - air;
  if (r.bottom > clearAbove) return Math.min(r.bottom - clearAbove + air, r.top - clearBelow - air);
  return 0;
}
