import { useCallback, useEffect, useRef, useState } from "react";
import { ipc, type SessionSummary } from "../ipc";
import { attemptLabel, setAside, sidebarEntries, sidebarGroups, sidebarTitles, startOfToday, STOPPED, waitingCount, waitingFor, WAITING, WORKING, type SidebarEntry } from "../sidebar";
import { listedState } from "../session/model";

import { Inbox, LoaderCircle } from "lucide-react";
import { useHistoryChanges } from "../historyChanges";

/** Sessions one click away: working, waiting for you (counted), and today's. Updates live. */
export function SidebarSessions({
  current,
  currentGroup = null,
  onOpen,
  onOpenGroup,
  onOpenHistory,
}: {
  current: string | null;
  currentGroup?: string | null;
  onOpen: (id: string) => void;
  onOpenGroup?: (group: string) => void;
  onOpenHistory?: () => void;
}) {
  const [sessions, setSessions] = useState<SessionSummary[]>([]);
  const load = useCallback(() => {
    const active = ipc.listSessions({ statuses: [...WORKING, ...WAITING], limit: 50 });
    // Enough for the rows shown when some are groups of attempts (each up to Settings' limit).
    const today = ipc.listSessions({ since_ms: startOfToday(new Date()), limit: 100 });
    // Work kept in a worktree that nobody decided on, from any day.
    const kept = ipc.listSessions({ statuses: STOPPED, kept_work: true, limit: 50 });
    Promise.all([active, today, kept]).then(
      ([a, t, k]) => setSessions([...(a ?? []), ...(t ?? []), ...(k ?? [])]),
      () => {}, // History shows the error and a retry; the sidebar keeps what it had.
    );
  }, []);
  useHistoryChanges(load);

  const groups = sidebarGroups(sessions, new Date());
  const entries = sidebarEntries(groups);
  const titles = sidebarTitles([...groups.working, ...groups.waiting, ...groups.today].filter((s) => !s.attempt));
  // The ages move on while the window stays open: once a minute is their grain.
  const [, setMinute] = useState(0);
  useEffect(() => {
    const timer = setInterval(() => setMinute((n) => n + 1), 60_000);
    return () => clearInterval(timer);
  }, []);
  // What is open is brought into view once, when it opens (a group with its attempts): a list
  // long enough to scroll left it below the fold. Later refreshes leave the person's scroll alone.
  const list = useRef<HTMLDivElement>(null);
  const shownOpen = useRef<string | null>(null);
  const openKey = current ?? currentGroup ?? null;
  useEffect(() => {
    if (!openKey) shownOpen.current = null;
    if (!openKey || shownOpen.current === openKey) return;
    const at = list.current?.querySelector<HTMLElement>('[aria-current="page"]');
    if (!at) return;
    shownOpen.current = openKey;
    (at.closest<HTMLElement>(".side-attempts") ?? at).scrollIntoView?.({ block: "nearest" });
  });
  const now = new Date();
  // Since when an entry has waited for the person: its last event (a group: its last attempt's).
  const age = (sinceMs: number) => {
    const w = waitingFor(sinceMs, now);
    return (
      <span className="side-age" data-testid="side-age" title={w.full}>
        {w.short}
      </span>
    );
  };
  const one = (s: SessionSummary, label?: string, notChosen = false, waits = false, groupChosen = false) => (
    <button
      key={s.id}
      className={`side-session${label ? " side-attempt" : ""}`}
      aria-current={current === s.id ? "page" : undefined}
      data-testid="side-session"
      data-session={s.id}
      data-status={s.status}
      onClick={() => onOpen(s.id)}
      title={s.attempt ? `${s.attempt.label}: attempt ${s.attempt.number} of ${s.attempt.of} at ${s.task}` : s.task}
    >
      {label ? <span className="side-session-title">{label}</span> : <SideTitle title={s.title || s.task} label={titles.get(s.id)} />}
      {/* Not StatusBadge: its test id belongs to the open session's header. */}
      <span className="side-meta">
      <ListedBadge state={listedState(s, notChosen, groupChosen)} />
      {waits && age(s.updated_ms)}
      </span>
    </button>
  );
  const row = (waits: boolean) => (e: SidebarEntry) =>
    e.kind === "session" ? (
      one(e.session, undefined, false, waits)
    ) : (
      <div key={e.group} className="side-attempts" data-testid="side-group" data-group={e.group}>
        <button className="side-session side-group-head" aria-current={currentGroup === e.group ? "page" : undefined} onClick={() => onOpenGroup?.(e.group)} title={`${e.task}: compare the ${groupSize(e.attempts)} attempts`} data-testid="side-group-open">
          <span className="side-session-title">{e.task}</span>
          <span className="side-meta">
            <span className="badge side-badge">
              {groupSize(e.attempts)} attempt{groupSize(e.attempts) === 1 ? "" : "s"}
            </span>
            {waits && age(Math.max(...e.attempts.map((a) => a.updated_ms)))}
          </span>
        </button>
        {e.attempts.map((s) => one(s, attemptLabel(s), setAside(s), false, e.attempts.some((a) => a.attempt?.chosen)))}
      </div>
    );
  const section = (title: string, list: SidebarEntry[], testid: string, count?: number) =>
    list.length > 0 && (
      <div className="side-group" data-testid={testid}>
        <div className="side-title">
          {title}
          {count !== undefined && (
            <span className="count-badge" data-testid="waiting-count" aria-label={`${count} waiting`}>
              {count}
            </span>
          )}
        </div>
        {list.map(row(testid === "side-waiting"))}
      </div>
    );
  // Folded to icons (a narrow window), the lists give way to two buttons: how many wait for
  // the person and how many work, each opening the first of them.
  const open = (e: SidebarEntry) => (e.kind === "session" ? onOpen(e.session.id) : onOpenGroup?.(e.group));
  const folded = (list: SidebarEntry[], count: number, what: string, testid: string, Icon: typeof Inbox) =>
    list.length > 0 && (
      <button className="nav-item side-folded" data-testid={testid} onClick={() => open(list[0])} title={`${what}: open the first`} aria-label={what}>
        <Icon size={16} aria-hidden />
        <span className="count-badge">{count}</span>
      </button>
    );
  const waiting = waitingCount(entries.waiting);
  const working = entries.working.length;
  return (
    <>
      <div className="side-sessions" aria-label="Sessions" ref={list}>
        {section("Working", entries.working, "side-working")}
        {section("Waiting for you", entries.waiting, "side-waiting", waiting)}
        {section("Today", entries.today, "side-today")}
        {/* Today's list is a handful: the rest are not gone, and this says where they are. */}
        {groups.moreToday && onOpenHistory && (
          <button className="link-btn side-more" onClick={onOpenHistory} data-testid="side-more">
            More from today: in History
          </button>
        )}
      </div>
      <div className="side-compact" aria-label="Sessions">
        {folded(entries.waiting, waiting, `${waiting} waiting for you`, "side-compact-waiting", Inbox)}
        {folded(entries.working, working, `${working} working`, "side-compact-working", LoaderCircle)}
      </div>
    </>
  );
}

function ListedBadge({ state }: { state: ReturnType<typeof listedState> }) {
  return (
    <span className={`badge side-badge ${state.className}`} title={state.title}>
      {state.word}
    </span>
  );
}

/** A session's title; what tells it from another of the same title (its folder, its start)
 * stays in view when the title is cut to the sidebar's width. */
function SideTitle({ title, label }: { title: string; label?: string }) {
  if (label && label !== title && !label.startsWith(`${title} · `)) return <span className="side-session-title">{label}</span>;
  const tell = label?.startsWith(`${title} · `) ? label.slice(title.length) : null;
  // "· folder, 17:44 #2": a long folder name is cut, not the time after it, which is what tells
  // apart two tasks of one folder. Only a time is held apart: a comma in a folder's name (or in
  // the words that tell two long titles apart) is no place to split.
  const cut = tell?.search(/, \d\d:\d\d( #\d+)?$/) ?? -1;
  return (
    <span className="side-session-title split">
      <span className="side-title-text">{title}</span>
      {tell && (
        <span className="side-tell">
          <span className="side-tell-lead">{cut > 0 ? tell.slice(0, cut) : tell}</span>
          {cut > 0 && <span className="side-tell-end">{tell.slice(cut)}</span>}
        </span>
      )}
    </span>
  );
}

/** How many attempts a group has, as they were started: a list cut short still counts them all. */
function groupSize(attempts: SessionSummary[]): number {
  return Math.max(attempts.length, ...attempts.map((a) => a.attempt?.of ?? 0));
}
