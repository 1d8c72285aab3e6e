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

/** Whether the window's own shortcut modifier is held: Ctrl, and on a Mac Cmd, where Ctrl in a
 * text field is the field's own (Ctrl+N the next line, Ctrl+K cut to the end of it). */
export function shortcutModifier(e: KeyboardEvent): boolean {
  if (e.altKey) return false;
  const mac = /^Mac/.test(navigator.platform);
  if (mac && e.metaKey) return true;
  return e.ctrlKey && !(mac && isTextField(e.target));
}

/** How the shortcut list writes that modifier. */
export const SHORTCUT_MODIFIER = typeof navigator !== "undefined" && /^Mac/.test(navigator.platform) ? "⌘" : "Ctrl+";
