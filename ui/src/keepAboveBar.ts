/**
 * Scrolls a field the focus reached (Tab, a click, "take the focus there") out from under a bar
 * pinned to the window's foot (Save in Settings, Run in New Task): the browser only brings it to
 * the window's edge, behind the bar. Only a field, and never so far that its top leaves the
 * window: a section the index focused is brought to the top on purpose.
 */
export function keepAboveBar(target: EventTarget, bar: HTMLElement | null, from?: EventTarget | null) {
  if (!bar || !(target instanceof HTMLElement) || bar.contains(target) || !target.matches("input, select, textarea")) return;
  // Focus handed on by something that scrolls the page itself (the Settings index, smoothly):
  // a lift now would cut its scroll short.
  if (from instanceof Element && from.closest("[data-scrolls-itself]")) return;
  // A timer, not an animation frame: WebKit holds frames back while its window is hidden, and
  // its own bringing of the field into view comes after the focus event.
  setTimeout(() => {
    if (document.activeElement !== target) return;
    const box = target.getBoundingClientRect();
    const hidden = Math.min(box.bottom - bar.getBoundingClientRect().top + 12, box.top - 8);
    const scroller = target.closest("main");
    if (hidden > 0 && scroller) scroller.scrollTop += hidden;
  }, 0);
}
