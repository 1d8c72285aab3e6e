// Replaying a session's timeline as it happened: the events again, in order, at the pace they
// came (faster if asked), with the long waits (a model thinking, the person away) cut short.
import type { Envelope } from "../ipc";
import { applyAll, emptyModel, type SessionModel } from "./model";

/** A wait longer than this between two events is played as this long. */
export const LONGEST_PAUSE_MS = 800;
export const SPEEDS = [1, 4, 16] as const;
export type Speed = (typeof SPEEDS)[number];

export interface Replay {
  /** How many of the log's events are shown. */
  at: number;
  playing: boolean;
  speed: Speed;
  /** Played time not yet spent on the wait before the next event, in the log's milliseconds. */
  owed: number;
  /** The session as it stood after `at` events. */
  model: SessionModel;
}

export const startReplay = (): Replay => ({ at: 0, playing: true, speed: 4, owed: 0, model: emptyModel() });

/** The wait before event `i`, as it is played. */
const waitBefore = (log: Envelope[], i: number) => (i === 0 ? 0 : Math.min(LONGEST_PAUSE_MS, Math.max(0, Date.parse(log[i].at) - Date.parse(log[i - 1].at))));

/** Where the replay stands after `elapsedMs` more of playing: every event whose time has come. */
export function advance(r: Replay, log: Envelope[], elapsedMs: number): Replay {
  if (r.at >= log.length) return { ...r, playing: false };
  let budget = r.owed + elapsedMs * r.speed;
  let to = r.at;
  while (to < log.length && waitBefore(log, to) <= budget) {
    budget -= waitBefore(log, to);
    to++;
  }
  return { ...stepTo(r, log, to), owed: to < log.length ? budget : 0 };
}

/** The replay with the events up to `to` shown; it stops at the end. */
export function stepTo(r: Replay, log: Envelope[], to: number): Replay {
  const at = Math.min(log.length, Math.max(r.at, to));
  return { ...r, at, owed: 0, model: applyAll(r.model, log.slice(r.at, at)), playing: r.playing && at < log.length };
}

/** Where Step goes from `from`: past the next thing that shows (a message with all its words, a
 * tool call with its result, a verdict, a run's start or end), to just before the one after it. */
export function nextMark(log: Envelope[], from: number): number {
  const seenCalls = new Set<string>();
  const isMark = (i: number) => {
    const e = log[i];
    if (e.type !== "tool_call") return MARKS.has(e.type);
    // A call's later states (running, done) are the same card.
    const first = !seenCalls.has(e.call_id);
    seenCalls.add(e.call_id);
    return first;
  };
  let first = -1;
  for (let i = 0; i < log.length; i++) {
    const mark = isMark(i);
    if (i < from) continue;
    if (first < 0) {
      if (mark) first = i;
    } else if (mark) return i;
  }
  return log.length;
}

const MARKS = new Set(["message_created", "evaluation", "continuation", "run_started", "run_finished", "review_requested", "review_resolved", "verification", "landed", "plan_created"]);
