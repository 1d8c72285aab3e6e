import { useEffect, useRef, useState } from "react";
import { ipc, type Envelope } from "./ipc";
import { summarizeTool } from "./session/cardSummary";
import { activityText } from "./session/activity";

/** What a running attempt is doing, as its card says it: its step and its latest tool or phase. */
export interface AttemptProgress {
  step?: number;
  doing?: string;
}

/** The progress an event of the attempt's session brings, on top of what was known. */
export function progressAfter(known: AttemptProgress, e: Envelope): AttemptProgress {
  switch (e.type) {
    case "step_started":
      return { ...known, step: e.step };
    case "tool_call":
      return { ...known, doing: summarizeTool(e.tool, e.input, e.state, e.output).text };
    case "activity":
      // A tool's own card says more than "Running write_file": kept while that tool runs.
      return e.phase === "tool" ? known : { ...known, doing: activityText(e) };
    default:
      return known;
  }
}

/**
 * Follows the sessions of the attempts still running (`ids`), for as long as the screen shows
 * them: one card per attempt said only "working for 3 s", and the person had to open each to see
 * whether it was getting anywhere.
 */
export function useAttemptProgress(ids: string[]): Record<string, AttemptProgress> {
  const [progress, setProgress] = useState<Record<string, AttemptProgress>>({});
  // One subscription per running attempt for as long as it runs: when one ends, the others'
  // go on (subscribed afresh, each would replay its whole session).
  const following = useRef(new Map<string, { closed: boolean; sub?: number }>());
  const key = [...ids].sort().join(" ");
  useEffect(() => {
    const wanted = new Set(key ? key.split(" ") : []);
    const map = following.current;
    for (const [id, f] of map) {
      if (wanted.has(id)) continue;
      f.closed = true;
      if (f.sub !== undefined) void ipc.unsubscribeSession(f.sub).catch(() => {});
      map.delete(id);
    }
    for (const id of wanted) {
      if (map.has(id)) continue;
      const f: { closed: boolean; sub?: number } = { closed: false };
      map.set(id, f);
      ipc
        .subscribeSession(id, 0, (e) => {
          // The streamed text, most of a session's events, says nothing here.
          if (!f.closed && (e.type === "step_started" || e.type === "tool_call" || e.type === "activity")) setProgress((p) => ({ ...p, [id]: progressAfter(p[id] ?? {}, e) }));
        })
        .then(
          (sub) => (f.closed ? void ipc.unsubscribeSession(sub).catch(() => {}) : (f.sub = sub)),
          // Without it the card says what it said before: how long, and the tokens.
          () => undefined,
        );
    }
  }, [key]);
  // Every subscription ends with the screen.
  useEffect(() => {
    const map = following.current;
    return () => {
      for (const f of map.values()) {
        f.closed = true;
        if (f.sub !== undefined) void ipc.unsubscribeSession(f.sub).catch(() => {});
      }
      map.clear();
    };
  }, []);
  return progress;
}
