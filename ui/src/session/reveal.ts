// A session opened from a search hit opens at the message the hit's passage is in, not at its
// end: once the replay has drawn that message, it is brought into view, marked and focused (so a
// screen reader reads it), and the view stops going on to the end.
import { createContext, useEffect, useRef, useState, type RefObject } from "react";
import type { Shown } from "./fold";

/** The message to open at, which asking this is (the same message asked twice is shown twice),
 * and when it was found. */
export type RevealTarget = { key: string; n: number; at: number };

/** The timeline's item that holds `message`'s words: a message split around tool calls is keyed
 * `id~seq` per part, and its first part may be empty (it began with a call). */
export function revealIndex(shown: Shown[], message: string): number {
  return shown.findIndex((it) => {
    if (it.kind === "continuation") return it.messageId === message;
    if (it.kind !== "assistant" && it.kind !== "user" && it.kind !== "summary") return false;
    if (it.key !== message && !it.key.startsWith(`${message}~`)) return false;
    return it.kind !== "assistant" || it.text.trim() !== "";
  });
}

/** The key of the message a search hit opened the session at: its card is marked (drawn so, as
 * the timeline may draw it anew, when it grows long enough to draw only what is on screen). */
export const FoundKey = createContext<string | null>(null);

/** The words the search found in that message (its passage's marked parts), marked in it too. */
export const FoundWords = createContext<string[]>([]);

/** The words a search hit's passage found: what is marked in it. */
export function foundWordsOf(snippet: { text: string; matched: boolean }[] | undefined): string[] {
  return [...new Set((snippet ?? []).filter((p) => p.matched).map((p) => p.text.trim()).filter(Boolean))];
}

/** `text` cut at each of `words` (whole, ignoring case): the pieces, each saying whether it is one.
 * Whole as the search reads words (runs of letters and digits, any script): "log" found is not
 * marked inside "catalog". */
export function cutAtWords(text: string, words: string[]): { text: string; found: boolean }[] {
  const wanted = words.map((w) => w.trim()).filter(Boolean);
  if (wanted.length === 0) return [{ text, found: false }];
  const escaped = wanted.map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("|");
  const pattern = new RegExp(`(?<![\\p{L}\\p{N}\\p{M}])(?:${escaped})(?![\\p{L}\\p{N}\\p{M}])`, "giu");
  const pieces: { text: string; found: boolean }[] = [];
  let from = 0;
  for (const m of text.matchAll(pattern)) {
    if (m.index > from) pieces.push({ text: text.slice(from, m.index), found: false });
    pieces.push({ text: m[0], found: true });
    from = m.index + m[0].length;
  }
  if (from < text.length || pieces.length === 0) pieces.push({ text: text.slice(from), found: false });
  return pieces;
}

/** How long to wait for a row of a long (virtual) timeline to be drawn once scrolled to. */
const TRIES = 20;

/** How long after opening the timeline turning virtual brings the message back into view: later,
 * a running session that grows past the limit must not pull the person away from what they read. */
const SETTLING_MS = 5000;

/**
 * `reveal`: the hit's message, a new object each time the person asks. `onFound` stops the view
 * following the end once the message is in the replay; `onLost` gives it back when the message
 * could not be shown after all. `virtual`: whether the timeline draws only what is on screen; when
 * that changes, the message is brought into view again. Returns what the virtual timeline
 * scrolls to.
 */
export function useReveal(
  shown: Shown[],
  reveal: { message: string } | null,
  section: RefObject<HTMLElement | null>,
  virtual: boolean,
  onFound: () => void,
  onLost: () => void,
): RevealTarget | null {
  const [target, setTarget] = useState<RevealTarget | null>(null);
  const handled = useRef<{ message: string } | null>(null);
  const asked = useRef(0);
  useEffect(() => {
    if (!reveal || handled.current === reveal) return;
    const at = revealIndex(shown, reveal.message);
    if (at < 0) return;
    handled.current = reveal;
    onFound();
    setTarget({ key: shown[at].key, n: ++asked.current, at: performance.now() });
    // Only what the replay shows decides; the callbacks are the session's own.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [shown, reveal]);
  useEffect(() => {
    if (!target || performance.now() - target.at > SETTLING_MS) return;
    let tries = 0;
    let timer: ReturnType<typeof setTimeout>;
    const mark = () => {
      const el = [...(section.current?.querySelectorAll("[data-key]") ?? [])].find((e) => e.getAttribute("data-key") === target.key) as HTMLElement | undefined;
      if (!el) {
        if (++tries < TRIES) timer = setTimeout(mark, 100);
        else onLost();
        return;
      }
      el.scrollIntoView?.({ block: "center" });
      el.focus({ preventScroll: true });
    };
    // A moment for the rest of the replay to be drawn above it.
    timer = setTimeout(mark, 150);
    return () => clearTimeout(timer);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [target, virtual]);
  return target;
}
