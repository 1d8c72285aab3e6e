import { useEffect, type ReactNode } from "react";

/** A question the person must answer before going on, over everything: Esc takes `onEscape`
 * (always the safe choice). The quit and leave-Settings questions share it; closed, it gives the
 * focus back to what had it. */
export function AlertDialog({ title, testid, onEscape, describedBy, children }: { title: string; testid: string; onEscape: () => void; describedBy?: string; children: ReactNode }) {
  // Closed, the focus goes back where it was (the button that opened it), not to the page.
  useEffect(() => {
    const before = document.activeElement;
    return () => {
      if (before instanceof HTMLElement && before.isConnected) before.focus();
    };
  }, []);
  return (
    <div className="modal-backdrop">
      <div
        className="panel modal"
        role="alertdialog"
        aria-modal="true"
        aria-labelledby={`${testid}-title`}
        aria-describedby={describedBy}
        data-testid={testid}
        onKeyDown={(e) => {
          if (e.key === "Escape") {
            e.stopPropagation();
            onEscape();
          }
        }}
      >
        <h2 id={`${testid}-title`}>{title}</h2>
        {children}
      </div>
    </div>
  );
}
