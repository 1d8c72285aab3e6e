import { useEffect, type KeyboardEvent, type ReactNode, type RefObject } from "react";
import { createPortal } from "react-dom";

/** A question the person must answer before going on, over everything: Esc takes `onEscape`
 * (always the safe choice). The quit and leave-Settings questions share it; closed, it gives the
 * focus back to what had it. It is drawn at the top of the page, wherever it is asked from: inside
 * the review's sticky dock the timeline painted over half of it. */
export function AlertDialog({
  title,
  testid,
  onEscape,
  describedBy,
  returnTo,
  children,
}: {
  title: string;
  testid: string;
  onEscape: () => void;
  describedBy?: string;
  /** Where the focus goes when what had it is gone (the palette the question was asked from). */
  returnTo?: RefObject<HTMLElement | null>;
  children: ReactNode;
}) {
  // Closed, the focus goes back where it was (the button that opened it), not to the page.
  useEffect(() => {
    const [before, fallback] = [document.activeElement, returnTo?.current];
    return () => {
      // Put somewhere on purpose meanwhile (a Save that failed focuses the field it refused): left there.
      const now = document.activeElement;
      if (now instanceof HTMLElement && now !== document.body && now.isConnected && !now.closest(".modal")) return;
      if (before instanceof HTMLElement && before !== document.body && before.isConnected) before.focus();
      else if (fallback?.isConnected) fallback.focus();
    };
    // Where it was when it opened: read once.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, []);
  return createPortal(
    // A click beside the question leaves the focus in it: Esc and Tab still answer to it.
    <div className="modal-backdrop" onMouseDown={(e) => e.target === e.currentTarget && e.preventDefault()}>
      <div
        className="panel modal"
        role="alertdialog"
        aria-modal="true"
        aria-labelledby={`${testid}-title`}
        aria-describedby={describedBy}
        data-testid={testid}
        onKeyDown={dialogKeys(onEscape)}
      >
        <h2 id={`${testid}-title`}>{title}</h2>
        {children}
      </div>
    </div>,
    document.body,
  );
}

/** A dialog's keys, wherever its focus is: Esc takes `onEscape` (and goes no further: behind it, Esc
 * would cancel a running task), Tab stays inside. */
export const dialogKeys = (onEscape: () => void) => (e: KeyboardEvent<HTMLElement>) => {
  if (e.key === "Escape") {
    e.preventDefault();
    e.stopPropagation();
    onEscape();
  } else keepTabInside(e);
};

/** Tab and Shift+Tab go round a dialog's own controls, never to the page behind it: given the
 * dialog's keydown. */
function keepTabInside(e: KeyboardEvent<HTMLElement>) {
  if (e.key !== "Tab") return;
  const all = [...e.currentTarget.querySelectorAll<HTMLElement>("button:not([disabled]), input:not([disabled]), textarea, select, [tabindex]:not([tabindex='-1'])")];
  const [first, last] = [all[0], all[all.length - 1]];
  if (first && e.shiftKey && document.activeElement === first) {
    e.preventDefault();
    last.focus();
  } else if (last && !e.shiftKey && document.activeElement === last) {
    e.preventDefault();
    first.focus();
  }
}
