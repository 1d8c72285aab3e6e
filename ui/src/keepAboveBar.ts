/**
 * Scrolls a field the focus reached (Tab, a click, "take the focus there") out from under a bar
 * pinned to the window's foot (Save in Settings, Run in New Task): the browser only brings it to
 * the window's edge, behind the bar. Looked at again a moment later: WebKit may bring the field
 * into view after the focus event, undoing a scroll made before.
 */
export function keepAboveBar(target: EventTarget, bar: HTMLElement | null) {
  if (!bar || !(target instanceof HTMLElement) || bar.contains(target)) return;
  const lift = () => {
    if (document.activeElement !== target) return;
    const hidden = target.getBoundingClientRect().bottom - bar.getBoundingClientRect().top + 12;
    const scroller = target.closest("main");
    if (hidden > 0 && scroller) scroller.scrollTop += hidden;
  };
  // Timers, not animation frames: WebKit holds frames back while its window is hidden.
  setTimeout(lift, 0);
  setTimeout(lift, 150);
}
