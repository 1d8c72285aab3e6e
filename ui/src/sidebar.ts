// What the sidebar lists: sessions working now, sessions waiting for the person (with a count),
// and today's others. Pure, so the grouping is unit-tested; the data comes from list_sessions.
import type { SessionStatus, SessionSummary } from "./ipc";

export const WORKING: SessionStatus[] = ["busy", "retry", "queued"];
export const WAITING: SessionStatus[] = ["awaiting_review", "awaiting_approval"];
/** Ended without a decision: with its worktree kept, the task's work waits to be resumed or put away. */
export const STOPPED: SessionStatus[] = ["cancelled", "failed", "interrupted", "idle"];

/** Whether the session waits for the person: a review or an answer, or work kept in a worktree
 * with nothing decided. An attempt's kept work waits with its group (landing one, or rejecting
 * them all, decides it): a group whose attempts all stopped is still the person's to decide. */
export function waitsForPerson(s: SessionSummary): boolean {
  return WAITING.includes(s.status) || (STOPPED.includes(s.status) && !!s.work_dir);
}

export interface SidebarGroups {
  working: SessionSummary[];
  waiting: SessionSummary[];
  today: SessionSummary[];
  /** Today's list was cut at its limit: the rest are in History. */
  moreToday: boolean;
}

/** Local midnight of the day `now` falls in: "today" is the person's day, not UTC's. */
export function startOfToday(now: Date): number {
  const d = new Date(now);
  d.setHours(0, 0, 0, 0);
  return d.getTime();
}

/**
 * Groups sessions for the sidebar. Every session appears once: working first, then waiting for
 * the person, then the rest of today's (newest first, at most `recentLimit` rows). A waiting session
 * from an earlier day is still listed: it still needs the person, as a stopped task's kept work
 * does.
 */
export function sidebarGroups(sessions: SessionSummary[], now: Date, recentLimit = 6): SidebarGroups {
  const seen = new Set<string>();
  const unique = [...sessions].sort((a, b) => b.created_ms - a.created_ms).filter((s) => !seen.has(s.id) && seen.add(s.id));
  const since = startOfToday(now);
  const working = unique.filter((s) => WORKING.includes(s.status));
  const waiting = unique.filter(waitsForPerson);
  // The limit is on rows: a group of attempts is one, listed whole, and one already placed above
  // (an attempt still working or waiting) takes its other attempts along without a row of its own.
  const groupsIn = new Set([...working, ...waiting].flatMap((s) => (s.attempt ? [s.attempt.group] : [])));
  const today: SessionSummary[] = [];
  let rows = 0;
  let moreToday = false;
  for (const s of unique.filter((s) => !WORKING.includes(s.status) && !waitsForPerson(s) && s.created_ms >= since)) {
    const group = s.attempt?.group;
    if (group && groupsIn.has(group)) {
      today.push(s);
    } else if (rows >= recentLimit) {
      moreToday = true;
    } else {
      rows += 1;
      if (group) groupsIn.add(group);
      today.push(s);
    }
  }
  return { working, waiting, today, moreToday };
}

/** A row of a sidebar section: a session, or the attempts of one task side by side. */
export type SidebarEntry = { kind: "session"; session: SessionSummary } | { kind: "group"; group: string; task: string; attempts: SessionSummary[] };

/**
 * Each section's rows, with the attempts of one group as one entry. A group sits in the first
 * section any of its attempts is in (working before waiting before today) and lists them all.
 */
export function sidebarEntries(g: SidebarGroups): { working: SidebarEntry[]; waiting: SidebarEntry[]; today: SidebarEntry[] } {
  const all = [...g.working, ...g.waiting, ...g.today];
  const placed = new Set<string>();
  const rows = (list: SessionSummary[]): SidebarEntry[] => {
    const out: SidebarEntry[] = [];
    for (const s of list) {
      const group = s.attempt?.group;
      if (!group) {
        out.push({ kind: "session", session: s });
        continue;
      }
      if (placed.has(group)) continue;
      placed.add(group);
      const attempts = all.filter((x) => x.attempt?.group === group).sort((a, b) => (a.attempt?.number ?? 0) - (b.attempt?.number ?? 0));
      out.push({ kind: "group", group, task: s.title || s.task, attempts });
    }
    return out;
  };
  return { working: rows(g.working), waiting: rows(g.waiting), today: rows(g.today) };
}

/** An attempt rejected because the person landed another of its group (`attempts`), not refused. */
export function setAside(s: SessionSummary): boolean {
  // Rejected because the person chose another attempt; one they rejected in its own review
  // before that was refused, and says so.
  return s.status === "rejected" && !!s.attempt && !s.attempt.chosen && s.occasion === "another_attempt_chosen";
}

/** An attempt's name in a narrow list: its number first, so that cutting the end off still tells
 * attempts of the same agent apart ("2. Finishline's agent (m)", not "Finishline's agent (m) #2"). */
export function attemptLabel(s: SessionSummary): string {
  if (!s.attempt) return s.title || s.task;
  const label = s.attempt.label.replace(/ #\d+$/, "");
  // The model tells the built-in agent's attempts apart: first, where a narrow sidebar cuts last.
  const builtin = /^Finishline's agent \((.+)\)$/.exec(label);
  return `${s.attempt.number}. ${builtin ? `${builtin[1]} · built-in` : label}`;
}

/** How many decisions wait for the person: a group's attempts are one decision. */
export function waitingCount(entries: SidebarEntry[]): number {
  return entries.length;
}

/**
 * How long something has waited for the person, short enough for the sidebar ("now", "5 min",
 * "3 h", "2 d"), and the moment in full for its tooltip: a task left waiting since yesterday
 * should not read like one that just stopped.
 */
export function waitingFor(sinceMs: number, now: Date): { short: string; full: string } {
  const minutes = Math.max(0, Math.floor((now.getTime() - sinceMs) / 60_000));
  const short = minutes < 1 ? "now" : minutes < 60 ? `${minutes} min` : minutes < 24 * 60 ? `${Math.floor(minutes / 60)} h` : `${Math.floor(minutes / (24 * 60))} d`;
  const d = new Date(sinceMs);
  const day = d.toLocaleDateString(undefined, { weekday: "short", day: "numeric", month: "short" });
  return { short, full: `Waiting since ${day}, ${clock(sinceMs)}` };
}

/** The last part of a folder's path: what the person calls the project. */
const folderName = (path: string) => path.replace(/[\\/]+$/, "").split(/[\\/]/).pop() || path;
const clock = (ms: number) => {
  const d = new Date(ms);
  return `${String(d.getHours()).padStart(2, "0")}:${String(d.getMinutes()).padStart(2, "0")}`;
};

/**
 * Each session's label in the sidebar: its title, and where two listed sessions share one, what
 * tells them apart: their folder when the folders differ, the time they started when it does not.
 */
/** About the characters of a title a sidebar row shows before it cuts it short. */
const ROW_CHARS = 24;

/** How many characters two texts share from their start. */
function commonStart(a: string, b: string): number {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return i;
}

export function sidebarTitles(sessions: SessionSummary[]): Map<string, string> {
  const title = (s: SessionSummary) => s.title || s.task;
  const byTitle = new Map<string, SessionSummary[]>();
  for (const s of sessions) byTitle.set(title(s), [...(byTitle.get(title(s)) ?? []).filter((o) => o.id !== s.id), s]);
  const out = new Map<string, string>();
  for (const [t, same] of byTitle) {
    const folders = new Set(same.map((s) => folderName(s.workspace)));
    for (const s of same) {
      if (same.length === 1) {
        out.set(s.id, t);
        continue;
      }
      const folder = folderName(s.workspace);
      const folderTells = folders.size > 1 && same.filter((o) => folderName(o.workspace) === folder).length === 1;
      const parts = [...(folders.size > 1 ? [folder] : []), ...(folderTells ? [] : [clock(s.created_ms)])];
      out.set(s.id, `${t} · ${parts.join(", ")}`);
    }
  }
  // Titles that differ only past what a sidebar row shows read alike there: each gets the words
  // where it parts from the other as its tell.
  const shown = [...byTitle.keys()];
  for (const [t, same] of byTitle) {
    if (same.length > 1) continue;
    const parted = Math.max(0, ...shown.filter((o) => o !== t).map((o) => commonStart(t, o)));
    if (parted < ROW_CHARS) continue;
    const from = t.lastIndexOf(" ", parted) + 1;
    out.set(same[0].id, `${t} · …${t.slice(from, from + ROW_CHARS).trim()}`);
  }
  // Still the same (folders of one name, started in one minute): numbered in the order they started.
  const labels = [...out.values()];
  const byStart = [...sessions].sort((a, b) => a.created_ms - b.created_ms || a.id.localeCompare(b.id));
  const nth = new Map<string, number>();
  for (const s of byStart) {
    const label = out.get(s.id)!;
    if (labels.filter((l) => l === label).length < 2) continue;
    nth.set(label, (nth.get(label) ?? 0) + 1);
    out.set(s.id, `${label} #${nth.get(label)}`);
  }
  return out;
}
