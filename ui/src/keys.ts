/** Whether a key event comes from a place where the person types: there, keys belong to the
 * field (Esc, ?, Enter), not to the window's shortcuts. */
export function isTextField(target: EventTarget | null): boolean {
  if (!(target instanceof HTMLElement)) return false;
  if (target.isContentEditable || target instanceof HTMLTextAreaElement || target instanceof HTMLSelectElement) return true;
  return target instanceof HTMLInputElement && !["checkbox", "radio", "button", "submit", "reset"].includes(target.type);
}

/** Whether a modal dialog asks something now: the window's shortcuts wait for its answer, or
 * what they open would land under it and take the keyboard from it. */
export function dialogAsks(): boolean {
  return document.querySelector('[aria-modal="true"]') !== null;
}
