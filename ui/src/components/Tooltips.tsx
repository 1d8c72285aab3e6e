import { useEffect, useLayoutEffect, useRef, useState } from "react";

/** How long the pointer rests on a control before its tooltip shows. */
const DELAY_MS = 500;

interface Tip {
  text: string;
  x: number;
  y: number;
  below: boolean;
  /** Moved sideways once measured, so that the whole label is inside the window (a sidebar
   * badge's long title, centred on the badge, ran off the window's left edge). */
  placed?: boolean;
}

/** The gap kept between a tooltip and the window's edge. */
const EDGE = 8;

/**
 * The app's tooltips: every `title` shows as a small label the page draws, instead of the native
 * one. WebKitGTK's native tooltip stays on screen when its control goes away under the pointer
 * ("Run the plan (Ctrl+Enter)" after the plan started); this one closes when its control is
 * removed, disabled, clicked or left, and on any key or scroll. The title is held aside only
 * while the tooltip is up, so the control keeps its accessible name.
 */
export function Tooltips() {
  const [tip, setTip] = useState<Tip | null>(null);
  const box = useRef<HTMLDivElement>(null);
  useLayoutEffect(() => {
    if (!tip || tip.placed || !box.current) return;
    const r = box.current.getBoundingClientRect();
    const shift = r.left < EDGE ? EDGE - r.left : r.right > window.innerWidth - EDGE ? window.innerWidth - EDGE - r.right : 0;
    setTip({ ...tip, x: tip.x + shift, placed: true });
  }, [tip]);
  useEffect(() => {
    let target: HTMLElement | null = null;
    let title = "";
    let timer = 0;
    let watch: MutationObserver | null = null;
    const hide = () => {
      window.clearTimeout(timer);
      watch?.disconnect();
      watch = null;
      if (target && title && target.isConnected && !target.hasAttribute("title")) target.setAttribute("title", title);
      target = null;
      title = "";
      setTip(null);
    };
    const gone = () => !target || !target.isConnected || (target as HTMLButtonElement).disabled || (typeof target.checkVisibility === "function" && !target.checkVisibility());
    const over = (e: PointerEvent) => {
      const el = (e.target as Element | null)?.closest?.("[title]") as HTMLElement | null;
      if (!el || el === target) return;
      hide();
      const text = el.getAttribute("title") ?? "";
      if (!text.trim()) return;
      target = el;
      title = text;
      // Held aside so the native tooltip never shows.
      el.removeAttribute("title");
      timer = window.setTimeout(() => {
        if (gone()) return hide();
        const r = el.getBoundingClientRect();
        const below = r.bottom + 40 < window.innerHeight;
        setTip({ text, x: r.left + r.width / 2, y: below ? r.bottom + 6 : r.top - 6, below });
        // The control can go away without the pointer moving: a click that starts a plan
        // replaces the screen under it.
        watch = new MutationObserver(() => gone() && hide());
        watch.observe(document.body, { childList: true, subtree: true, attributes: true, attributeFilter: ["disabled", "hidden", "class", "style"] });
      }, DELAY_MS);
    };
    const out = (e: PointerEvent) => {
      if (!target) return;
      const to = e.relatedTarget as Node | null;
      if (to && target.contains(to)) return;
      hide();
    };
    document.addEventListener("pointerover", over, true);
    document.addEventListener("pointerout", out, true);
    document.addEventListener("pointerdown", hide, true);
    document.addEventListener("keydown", hide, true);
    document.addEventListener("scroll", hide, true);
    window.addEventListener("blur", hide);
    return () => {
      hide();
      document.removeEventListener("pointerover", over, true);
      document.removeEventListener("pointerout", out, true);
      document.removeEventListener("pointerdown", hide, true);
      document.removeEventListener("keydown", hide, true);
      document.removeEventListener("scroll", hide, true);
      window.removeEventListener("blur", hide);
    };
  }, []);
  if (!tip) return null;
  return (
    <div ref={box} role="tooltip" className={tip.below ? "tooltip below" : "tooltip above"} style={{ left: tip.x, top: tip.y, visibility: tip.placed ? undefined : "hidden" }} data-testid="tooltip">
      {tip.text}
    </div>
  );
}
