import { useCallback, useEffect, useRef, useState } from "react";
import { Inbox, Search } from "lucide-react";
import { AppError, ipc, sentence, type EndReason, type ListFilter, type SearchHit, type SessionStatus, type SessionSummary, type Shown } from "../ipc";
import { AlertDialog } from "../components/AlertDialog";
import { ErrorLine } from "../components/ErrorLine";
import { Ticks } from "../components/Ticks";
import { StatusBadge } from "../components/StatusBadge";
import { AgentTrustPanel, TrustPanel } from "../components/TrustPanel";
import { StoragePanel } from "../components/StoragePanel";
import { APPROVED_BEFORE_TITLE, END_LABEL, formatTokens, shownLabel, wasDiscarded } from "../session/model";
import { foundWordsOf } from "../session/reveal";

/** The status filter's choices, in the badges' words: a filter lists the rows whose badge it names. */
const FILTERS: (Shown | "all")[] = ["all", "awaiting_review", "awaiting_approval", "busy", "queued", "retry", "completed", "branch_kept", "rejected", "discarded", "not_chosen", "failed", "interrupted", "cancelled", "idle", "not_checked"];

/** Seconds at the least, so the column reads in one unit ("950 ms" beside "12 s" did not). */
function duration(ms: number) {
  if (ms < 1000) return ms <= 0 ? "0 s" : "< 1 s";
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s} s`;
  const min = Math.floor(s / 60);
  return min < 60 ? `${min} min ${s % 60} s` : `${Math.floor(min / 60)} h ${min % 60} min`;
}

/** When a session started, as short as the person reads it: today's by the time alone, this
 * year's without the year. The whole date and time is the cell's tooltip. */
export function started(ms: number, now: Date): string {
  const d = new Date(ms);
  const time = d.toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit" });
  if (d.toDateString() === now.toDateString()) return time;
  if (d.getFullYear() === now.getFullYear()) return `${d.toLocaleDateString(undefined, { month: "short", day: "numeric" })}, ${time}`;
  return d.toLocaleDateString(undefined, { year: "numeric", month: "short", day: "numeric" });
}

/** Attempts of one task side by side are one entry: the first of them met, with its group's size.
 * A group's attempts come from `all` (every session listed): a search that met one attempt
 * still shows the whole group, counted and decided as it is. */
export function collapseGroups(rows: SessionSummary[], all: SessionSummary[] = rows): { row: SessionSummary; attempts: SessionSummary[] }[] {
  const seen = new Set<string>();
  const out: { row: SessionSummary; attempts: SessionSummary[] }[] = [];
  for (const r of rows) {
    const g = r.attempt?.group;
    if (!g) {
      out.push({ row: r, attempts: [] });
    } else if (!seen.has(g)) {
      seen.add(g);
      const found = all.filter((x) => x.attempt?.group === g);
      // Never none: the row met is one of its group's attempts, wherever `all` came from.
      const attempts = found.length > 0 ? found : [r];
      out.push({ row: groupRow(attempts), attempts });
    }
  }
  return out;
}

/** A session that stopped short goes on from its row, as from its own view: the same words. */
const GOES_ON: Partial<Record<SessionStatus, { label: string; title: string }>> = {
  interrupted: { label: "Resume", title: "Continue where it stopped, and open it" },
  cancelled: { label: "Resume", title: "Continue where it was cancelled, and open it" },
  failed: { label: "Retry", title: "Try again from where it stopped, and open it" },
};

/** How many sessions the list asks for at a time. */
const PAGE = 200;

/** How many rows a search shows, counted as the list shows them (a group of attempts is one). */
function matchCount(rows: number, sessions: number, query: string): string {
  if (rows === sessions) return `${sessions} session${sessions === 1 ? " matches" : "s match"} "${query}"`;
  return `${rows} task${rows === 1 ? " matches" : "s match"} "${query}" (${sessions} sessions: a group's attempts are one row)`;
}

const RUNNING: SessionStatus[] = ["busy", "retry", "queued", "awaiting_approval"];

/** Stopped attempts, the one to go on from first: a group with one that answered did not fail. */
const STOPPED_BEST: SessionStatus[] = ["idle", "interrupted", "cancelled", "failed"];

/** A group's row: the chosen attempt's outcome (else the most urgent state of any attempt, and of
 * stopped ones the best), with the tokens of every attempt and the time of the longest. */
function groupRow(attempts: SessionSummary[]): SessionSummary {
  const chosen = attempts.find((a) => a.attempt?.chosen);
  const first = chosen ?? attempts[0];
  const shown =
    chosen ??
    attempts.find((a) => RUNNING.includes(a.status)) ??
    attempts.find((a) => a.status === "awaiting_review") ??
    STOPPED_BEST.map((s) => attempts.find((a) => a.status === s)).find((a) => a !== undefined) ??
    first;
  const sum = (k: keyof SessionSummary["tokens"]) => attempts.reduce((n, a) => n + a.tokens[k], 0);
  return {
    ...first,
    status: shown.status,
    // A stopped attempt's end says more than its status ("Answered, not checked", as the
    // sidebar's badge says, not "Idle").
    end_reason: chosen ? chosen.end_reason : STOPPED_BEST.includes(shown.status) ? shown.end_reason : null,
    created_ms: Math.min(...attempts.map((a) => a.created_ms)),
    duration_ms: Math.max(...attempts.map((a) => a.duration_ms)),
    tokens: { agent: sum("agent"), evaluator: sum("evaluator"), compaction: sum("compaction") },
  };
}

/** What the person last searched and filtered History by, kept by the app while it runs: opening
 * a session from the list and coming back finds the list as they left it. */
export interface HistoryLook {
  query: string;
  filter: Shown | "all";
  outcome: EndReason | "all";
  since: "all" | "day" | "week" | "month";
  /** The row the person last opened from here: back, the keys are on it again. */
  opened?: string;
}

export const freshLook = (): HistoryLook => ({ query: "", filter: "all", outcome: "all", since: "all" });

export function History({
  onNewTask,
  onOpen,
  onOpenGroup,
  onOpenSettings,
  look = freshLook(),
}: {
  onNewTask: () => void;
  /** Opens a session; from a search hit, at the message its passage is in. */
  onOpen: (id: string, message?: string, words?: string[]) => void;
  onOpenGroup?: (group: string) => void;
  onOpenSettings?: () => void;
  look?: HistoryLook;
}) {
  const [rows, setRows] = useState<SessionSummary[] | null>(null);
  const [hits, setHits] = useState<{ query: string; byId: Map<string, { hit: SearchHit; rank: number }> } | null>(null);
  const [query, setQuery] = useState(look.query);
  const [filter, setFilter] = useState<Shown | "all">(look.filter);
  const [outcome, setOutcome] = useState<EndReason | "all">(look.outcome);
  const [since, setSince] = useState<HistoryLook["since"]>(look.since);
  useEffect(() => {
    Object.assign(look, { query, filter, outcome, since });
  }, [look, query, filter, outcome, since]);
  const [error, setError] = useState<string | AppError | null>(null);
  const [loadError, setLoadError] = useState<string | null>(null);
  const [confirm, setConfirm] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  // A task deleted after its repository moved: what git keeps for it there, and how to remove it.
  // What a deletion left in a repository that moved away: one note per deleted session.
  const [left, setLeft] = useState<string[]>([]);
  // `attempts`: a group of that many attempts exported whole, where `id` is the group's id.
  const [exported, setExported] = useState<{ id: string; attempts?: number; title: string; format: "md" | "json"; text: string } | null>(null);

  const filters = useCallback((): ListFilter => {
    const days = { all: 0, day: 1, week: 7, month: 30 }[since];
    return {
      shown: filter === "all" ? undefined : [filter],
      end_reasons: outcome === "all" ? undefined : [outcome],
      since_ms: days ? Date.now() - days * 86_400_000 : undefined,
    };
  }, [filter, outcome, since]);
  // The newest 200 first; "Show older sessions" asks for 200 more at a time, until the filters
  // change.
  const [limit, setLimit] = useState(PAGE);
  useEffect(() => setLimit(PAGE), [filter, outcome, since]);
  const loadList = useCallback(() => {
    ipc.listSessions({ limit, ...filters() }).then(
      (r) => {
        setLoadError(null);
        setRows(r ?? []);
      },
      (e: AppError) => setLoadError(e.message),
    );
  }, [filters, limit]);
  // A search's matches are asked for by id, within the filters: the list holds only the newest
  // sessions asked for, and a match may be far older.
  // Kept with the search and the filters they answer: another's are never shown, not even for
  // the frame before they are replaced (until the right ones are in, the list's rows stand in).
  const [hitAnswer, setHitAnswer] = useState<{ hits: typeof hits; filters: typeof filters; rows: SessionSummary[] } | null>(null);
  const hitRows = hitAnswer && hitAnswer.hits === hits && hitAnswer.filters === filters ? hitAnswer.rows : null;
  // Only the answer to the latest search counts: an earlier one may come back after it.
  const hitsAsked = useRef(0);
  const loadHits = useCallback(() => {
    const asked = ++hitsAsked.current;
    if (!hits || hits.byId.size === 0) return setHitAnswer(null);
    const ids = [...hits.byId.keys()];
    // With the other attempts of a matched attempt's group, counted in its row.
    ipc.listSessions({ ...filters(), ids, limit: 1000 }).then(
      (r) => asked === hitsAsked.current && setHitAnswer({ hits, filters, rows: r ?? [] }),
      (e: AppError) => asked === hitsAsked.current && setError(`The matches could not be listed: ${e.message}`),
    );
  }, [filters, hits]);
  // A filter names the state of single sessions, and the list shows a group of attempts as one
  // row: an attempt that matched brings its group's others, whatever their state, so the row says
  // how the whole group stands (a landed group, not its one rejected attempt).
  const filtered = filter !== "all" || outcome !== "all" || since !== "all";
  const [mates, setMates] = useState<SessionSummary[]>([]);
  const matesAsked = useRef(0);
  const matched = [...(rows ?? []), ...(hitRows ?? [])].filter((r) => r.attempt).map((r) => r.id);
  const matchedKey = filtered ? [...new Set(matched)].join(" ") : "";
  const loadMates = useCallback(() => {
    const asked = ++matesAsked.current;
    if (!matchedKey) return setMates([]);
    ipc.listSessions({ ids: matchedKey.split(" "), limit: 1000 }).then(
      (r) => asked === matesAsked.current && setMates(r ?? []),
      // Without them, a group's row counts the attempts that matched.
      () => asked === matesAsked.current && setMates([]),
    );
  }, [matchedKey]);
  useEffect(loadMates, [loadMates]);
  const load = useCallback(() => {
    loadList();
    loadHits();
    loadMates();
  }, [loadList, loadHits, loadMates]);
  useEffect(loadList, [loadList]);
  useEffect(loadHits, [loadHits]);
  // A deleted row took the focus with it: once the list is back, it goes to the search box.
  const searchBox = useRef<HTMLInputElement>(null);
  const refocus = useRef(false);
  useEffect(() => {
    if (!refocus.current) return;
    refocus.current = false;
    searchBox.current?.focus();
  }, [rows]);
  useEffect(() => {
    const un = ipc.onHistoryChanged(load);
    return () => {
      un.then((f) => f()).catch(() => undefined);
    };
  }, [load]);

  // Search as the person types (after a short pause) or at Enter; the list itself narrows.
  // Only the latest search's answer counts: one answered after a newer search, or after the box
  // was cleared, would filter the list by words no longer in it.
  const searchAsked = useRef(0);
  const search = useCallback(async (text: string) => {
    const asked = ++searchAsked.current;
    setError(null);
    if (!text.trim()) return setHits(null);
    try {
      const found = await ipc.searchSessions(text);
      if (asked !== searchAsked.current) return;
      setHits({ query: text.trim(), byId: new Map(found.map((h, i) => [h.session_id, { hit: h, rank: i }])) });
    } catch (e) {
      if (asked === searchAsked.current) setError((e as AppError).message);
    }
  }, []);
  useEffect(() => {
    const timer = setTimeout(() => void search(query), 250);
    return () => clearTimeout(timer);
  }, [query, search]);
  const clearSearch = () => {
    searchAsked.current++;
    setQuery("");
    setHits(null);
  };
  // While searching, the list holds only the matches, best first, within the other filters.
  // (Until the matches by id are in, those among the list's rows stand in.)
  // Where a matched attempt's group is looked up: the list, and the matches asked for by id.
  const found = hitRows ? [...(rows ?? []), ...hitRows.filter((h) => !rows?.some((r) => r.id === h.id))] : (rows ?? []);
  const listed = mates.length > 0 ? [...found, ...mates.filter((m) => !found.some((r) => r.id === m.id))] : found;
  // Back from a session opened here, the focus (left on the page by the screen that went) goes
  // to its row, so that Tab goes on from where the person was, not from the sidebar's top.
  const table = useRef<HTMLTableElement>(null);
  const refocused = useRef(false);
  useEffect(() => {
    if (refocused.current || !rows || !look.opened) return;
    refocused.current = true;
    // Once: a later visit (from the sidebar, after another screen) is not back from that session.
    const opened = look.opened;
    look.opened = undefined;
    const at = document.activeElement;
    if (at && at !== document.body && !at.matches("main.content")) return;
    const row = [...(table.current?.querySelectorAll<HTMLElement>('[data-testid="history-row"]') ?? [])].find((r) => r.getAttribute("data-session") === opened);
    const button = row?.querySelector<HTMLButtonElement>("button.link");
    button?.scrollIntoView?.({ block: "nearest" });
    button?.focus({ preventScroll: true });
  }, [rows, look]);
  const shown = rows && hits ? (hitRows ?? rows).filter((r) => hits.byId.has(r.id)).sort((a, b) => hits.byId.get(a.id)!.rank - hits.byId.get(b.id)!.rank) : rows;

  // The export, and what an action says, show above the list: from a row far down they would be
  // out of sight, so they come into view (the export with the focus, for its buttons).
  const inView = useCallback((el: HTMLElement | null) => el?.scrollIntoView?.({ block: "nearest" }), []);
  const exportPanel = useRef<HTMLElement>(null);
  // The button that opened the export: closing it (Close or Esc) puts the focus back there, so
  // the keyboard carries on from the row it was on.
  const exportOpener = useRef<HTMLElement | null>(null);
  const closeExport = () => {
    setExported(null);
    const opener = exportOpener.current;
    exportOpener.current = null;
    if (opener?.isConnected) opener.focus();
  };
  useEffect(() => {
    if (!exported) return;
    exportPanel.current?.scrollIntoView?.({ block: "nearest" });
    exportPanel.current?.focus({ preventScroll: true });
  }, [exported]);
  /** Resume goes on where the session stopped, then shows it: the button says what it does. A
   * refusal (another task in its folder) is said at the top of History. One at a time: a second
   * click while the first is on its way does nothing. */
  const [resuming, setResuming] = useState<string | null>(null);
  const resume = async (id: string) => {
    if (resuming) return;
    setResuming(id);
    setError(null);
    try {
      await ipc.sendMessage(id, "");
      onOpen(id);
    } catch (e) {
      // Kept whole: a provider not set up is fixed in Settings, and the line offers the way there.
      setError(e as AppError);
    } finally {
      setResuming(null);
    }
  };
  const exportAs = async (id: string, title: string, format: "md" | "json", attempts?: number) => {
    setError(null);
    setNotice(null);
    if (document.activeElement instanceof HTMLElement && !exportPanel.current?.contains(document.activeElement)) exportOpener.current = document.activeElement;
    try {
      setExported({ id, attempts, title, format, text: await (attempts ? ipc.exportGroup(id, format) : ipc.exportSession(id, format)) });
    } catch (e) {
      setError((e as AppError).message);
    }
  };

  const saveExport = async () => {
    if (!exported) return;
    setError(null);
    setNotice(null);
    try {
      const path = await (exported.attempts ? ipc.saveGroupExport(exported.id, exported.format) : ipc.saveSessionExport(exported.id, exported.format));
      if (!path) return;
      setNotice(`Saved to ${path}`);
    } catch (e) {
      setError((e as AppError).message);
    }
  };

  const copyExport = async () => {
    setError(null);
    setNotice(null);
    try {
      await navigator.clipboard.writeText(exported?.text ?? "");
      setNotice("Copied to the clipboard.");
    } catch {
      setError("The clipboard is not available here; use Save as… instead.");
    }
  };

  const remove = async (id: string) => {
    setLeft([]);
    try {
      const stays = await ipc.deleteSession(id);
      setLeft(stays ? [stays] : []);
      refocus.current = true;
      load();
    } catch (e) {
      setError((e as AppError).message);
    } finally {
      setConfirm(null);
    }
  };

  return (
    <section className="screen wide" data-testid="history">
      <header className="screen-head">
        <h1>History</h1>
        <p className="muted">Every session is kept here: search it, replay it, resume it.</p>
      </header>
      <div className="row wrap">
        <form
          className="row grow"
          onSubmit={(e) => {
            e.preventDefault();
            void search(query);
          }}
        >
          <input
            ref={searchBox}
            data-testid="history-search"
            value={query}
            onChange={(e) => setQuery(e.target.value)}
            onKeyDown={(e) => e.key === "Escape" && query && (e.stopPropagation(), clearSearch())}
            placeholder="Search every session"
            title="Search the tasks, what was said in them and what the evaluator found"
            aria-label="Search"
          />
          <button className="btn" type="submit">
            <Search size={14} aria-hidden /> Search
          </button>
        </form>
        <select value={filter} onChange={(e) => setFilter(e.target.value as Shown | "all")} aria-label="Status" data-testid="history-filter">
          {FILTERS.map((f) => (
            <option key={f} value={f}>
              {f === "all" ? "All statuses" : shownLabel(f)}
            </option>
          ))}
        </select>
        <select value={outcome} onChange={(e) => setOutcome(e.target.value as EndReason | "all")} aria-label="Outcome" data-testid="history-outcome">
          <option value="all">All outcomes</option>
          {(Object.keys(END_LABEL) as EndReason[]).map((r) => (
            <option key={r} value={r}>
              {END_LABEL[r]}
            </option>
          ))}
        </select>
        <select value={since} onChange={(e) => setSince(e.target.value as typeof since)} aria-label="Date" data-testid="history-date">
          <option value="all">Any time</option>
          <option value="day">Last 24 hours</option>
          <option value="week">Last 7 days</option>
          <option value="month">Last 30 days</option>
        </select>
      </div>
      {error && (
        <div ref={inView}>
          <ErrorLine error={error} onOpenSettings={onOpenSettings} />
        </div>
      )}
      {notice && (
        <p className="notice" role="status" ref={inView}>
          {notice}
        </p>
      )}
      {left.map((stays, i) => (
        <p key={i} className="notice" role="status" data-testid="deleted-left">
          Deleted. <Ticks text={sentence(stays)} />.
        </p>
      ))}
      {exported && (
        <section
          className="panel"
          data-testid="export-panel"
          aria-label={`Export of ${exported.attempts ? "the attempts at " : ""}${exported.title}`}
          tabIndex={-1}
          ref={exportPanel}
          onKeyDown={(e) => {
            if (e.key !== "Escape" || e.defaultPrevented) return;
            e.preventDefault();
            e.stopPropagation();
            closeExport();
          }}
        >
          <div className="row">
            <h3 className="grow">
              {exported.format === "md" ? "Markdown" : "JSON"} export of {exported.attempts ? `the ${exported.attempts} attempts at ` : ""}“{exported.title}” · {exported.text.length.toLocaleString()} characters
            </h3>
            <button className="btn small" onClick={saveExport}>
              Save as…
            </button>
            <button className="btn small" onClick={copyExport}>
              Copy
            </button>
            <button className="btn small" onClick={closeExport} title="Close the export (Esc)">
              Close
            </button>
          </div>
          {/* Focusable, so the keys scroll it: it is thousands of lines in a box of a few. */}
          <pre className="output" data-testid="export-text" tabIndex={0} role="region" aria-label="The exported text">
            {exported.text.slice(0, 20_000)}
            {exported.text.length > 20_000 ? "\n[… shortened here; Save as… writes it all]" : ""}
          </pre>
        </section>
      )}
      {/* With no match, the empty state below says so and offers the one Clear search. */}
      {hits && shown && shown.length > 0 && (
        <p className="row search-summary" role="status" data-testid="search-summary">
          <span className="grow">
            {matchCount(collapseGroups(shown, listed).length, shown.length, hits.query)}
          </span>
          <button className="btn small" onClick={clearSearch} data-testid="clear-search">
            Clear search
          </button>
        </p>
      )}
      {loadError && rows === null ? (
        <div className="panel error-panel" role="alert" data-testid="history-error">
          <p>The history could not be read: {loadError}</p>
          <button className="btn" onClick={load}>
            Try again
          </button>
        </div>
      ) : rows === null ? (
        <p className="muted" aria-busy="true" data-testid="history-loading">
          Loading…
        </p>
      ) : shown!.length === 0 ? (
        <div className="empty" data-testid="history-empty">
          <Inbox size={28} aria-hidden />
          <p>{hits ? `No sessions match "${hits.query}"${filter === "all" && outcome === "all" && since === "all" ? "" : " with these filters"}.` : filter === "all" && outcome === "all" && since === "all" ? "No sessions yet." : "No sessions match these filters."}</p>
          {hits ? (
            <button className="btn" onClick={clearSearch}>
              Clear search
            </button>
          ) : (
            <button className="btn" onClick={onNewTask}>
              Start a task
            </button>
          )}
        </div>
      ) : (
        <div className="table-scroll">
        <table className="sessions" data-testid="history-list" ref={table}>
          <thead>
            <tr>
              <th>Task</th>
              <th>Status</th>
              {/* A rejected task beside "Verified done" under "Outcome" read as a contradiction: this is the run's end, the status is the person's decision. */}
              <th title="How the agent's last run ended, as Finishline judged it, before your decision: the status beside it is what you decided">Run ended</th>
              <th className="optional">Started</th>
              <th className="optional" title="Time the agent worked: not its wait in the queue, nor for your answers and reviews">
                Active
              </th>
              <th className="optional">Tokens</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {collapseGroups(shown!, listed).map(({ row: r, attempts }) => (
              <tr key={r.id} data-testid="history-row" data-status={r.status} data-session={r.id} data-group={r.attempt?.group}>
                <td>
                  <button className="link" onClick={() => {
                      look.opened = r.id;
                      if (r.attempt && onOpenGroup) onOpenGroup(r.attempt.group);
                      else onOpen(r.id, hits?.byId.get(r.id)?.hit.message_id, foundWordsOf(hits?.byId.get(r.id)?.hit.snippet));
                    }} title={r.workspace}>
                    {hits?.byId.get(r.id) && passageOfTitle(hits.byId.get(r.id)!.hit.snippet, r.title) ? <MarkedTitle title={r.title} parts={hits.byId.get(r.id)!.hit.snippet} /> : r.title}
                  </button>
                  <div className="muted small clamp">{r.workspace}</div>
                  {r.attempt && (
                    // Words, not a tag: in a bordered box the long line read as a field to type in.
                    <div className="muted small" data-testid="history-attempts" title="One task by several agents side by side">
                      {attempts.length} attempts
                      {attempts.find((a) => a.attempt?.chosen) ? ` · chose ${attempts.find((a) => a.attempt?.chosen)!.attempt!.label}` : ""}
                    </div>
                  )}
                  {/* Not a tag: a branch's name is long and unbroken, and a tag never wraps. */}
                  {r.branch && !r.work_dir && (
                    <div className="muted small branch-kept" data-testid="history-branch" title="The task's work waits on this branch in your repository: merge it when you like, or delete it with git.">
                      Branch kept: <code>{r.branch}</code>
                    </div>
                  )}
                  {r.plan_steps > 0 && (
                    <span className="tag small" data-testid="history-plan" title="This task ran as a plan of checked steps">
                      Plan: {r.plan_done}/{r.plan_steps} steps
                    </span>
                  )}
                  {hits?.byId.get(r.id) && !passageOfTitle(hits.byId.get(r.id)!.hit.snippet, r.title) && <Snippet parts={hits.byId.get(r.id)!.hit.snippet} />}
                </td>
                <td>
                  {/* As in the sidebar; an attempt set aside is neither (its group says so). */}
                  <StatusBadge
                    status={r.status}
                    endReason={r.end_reason ?? undefined}
                    keptBranch={r.branch && !r.work_dir ? r.branch : undefined}
                    discarded={!r.attempt && wasDiscarded(r.status, r.decision)}
                  />
                  {/* Beside the status it answers, not among the row's actions: one row's extra
                      button widened that column for every row, and squeezed the titles. */}
                  {GOES_ON[r.status] && !r.attempt && (
                    <div>
                      <button className="btn small" data-testid="history-resume" onClick={() => void resume(r.id)} disabled={resuming !== null} title={GOES_ON[r.status]!.title}>
                        {GOES_ON[r.status]!.label}
                      </button>
                    </div>
                  )}
                  {r.approvals > 0 && r.status !== "completed" && (
                    <div className="muted small" data-testid="history-approved-before" title={r.status === "rejected" ? APPROVED_BEFORE_TITLE : "You approved an earlier round of this task; that work stays where it landed."}>
                      earlier work approved
                    </div>
                  )}
                </td>
                {/* Wraps: a long outcome ("Agent stopped at its own limit") on one line pushed the row's buttons out of a 1180 px window. */}
                <td className="outcome">
                  {r.end_reason ? END_LABEL[r.end_reason] : "—"}
                  {r.status === "failed" && r.failure && (
                    <div className="muted small clamp" data-testid="history-failure" title={r.failure}>
                      {r.failure}
                    </div>
                  )}
                  {/* "Verified done" beside checks the agent weakened is not a clean result. */}
                  {!!r.audit_findings && (
                    <div className="small audit-mark" data-testid="history-audit" title="The audit found changes that weaken or bypass the checks (skipped or deleted tests, loosened assertions). Open the session to read them.">
                      ⚠ audit: {r.audit_findings} weakened check{r.audit_findings === 1 ? "" : "s"}
                    </div>
                  )}
                </td>
                <td className="small optional" title={new Date(r.created_ms).toLocaleString()}>
                  {started(r.created_ms, new Date())}
                </td>
                <td className="small optional" data-testid="history-active">
                  {duration(r.duration_ms)}
                </td>
                {/* As the session's header counts them; the exact figures on hover. */}
                <td
                  className="small optional"
                  data-testid="history-tokens"
                  title={`${(r.tokens.agent + r.tokens.evaluator + r.tokens.compaction).toLocaleString()} tokens: agent ${r.tokens.agent.toLocaleString()} · evaluator ${r.tokens.evaluator.toLocaleString()} · compaction ${r.tokens.compaction.toLocaleString()}`}
                >
                  {formatTokens(r.tokens.agent + r.tokens.evaluator + r.tokens.compaction)}
                </td>
                {attempts.length > 0 ? (
                  <td>
                    <div className="row-actions group-actions">
                    <GroupActions
                      attempts={attempts}
                      onOpenGroup={onOpenGroup}
                      onExport={exportAs}
                      confirming={confirm === r.id}
                      onConfirm={(yes) => setConfirm(yes ? r.id : null)}
                      onDeleting={() => setLeft([])}
                      onDeleted={(stays) => {
                        setLeft(stays);
                        // The row (and the focus on its Delete) goes: the focus waits in the search box.
                        refocus.current = true;
                        load();
                      }}
                      onError={setError}
                    />
                    </div>
                  </td>
                ) : (
                  <td>
                    <div className="row-actions">
                    <button className="btn small" onClick={() => exportAs(r.id, r.title, "md")} data-testid="export-md" title="Export the session as Markdown">
                      Markdown
                    </button>
                    <button className="btn small" onClick={() => exportAs(r.id, r.title, "json")} title="Export the session as JSON">
                      JSON
                    </button>
                    {["busy", "retry", "queued", "awaiting_approval"].includes(r.status) ? (
                      <span className="muted small" data-testid="delete-running" title="A running session cannot be deleted">
                        Cancel it to delete
                      </span>
                    ) : (
                      <>
                        <button className="btn small danger" onClick={() => setConfirm(r.id)} data-testid="delete">
                          Delete
                        </button>
                        {confirm === r.id && <ConfirmDelete title={r.title} attempts={0} onKeep={() => setConfirm(null)} onDelete={() => remove(r.id)} />}
                      </>
                    )}
                    </div>
                  </td>
                )}
              </tr>
            ))}
          </tbody>
        </table>
        {!hits && rows && rows.length >= limit && (
          <div className="row">
            <button type="button" className="btn" onClick={() => setLimit((l) => l + PAGE)} data-testid="history-more">
              Show older sessions
            </button>
            <span className="muted small">The newest {rows.length} are shown; a search looks through all of them.</span>
          </div>
        )}
        </div>
      )}
      <TrustPanel onOpen={onOpen} />
      <AgentTrustPanel />
      <StoragePanel />
    </section>
  );
}

/** A group's row: its attempts are compared on the group's screen; once one is chosen, its
 * session is the group's export; Delete deletes every attempt, once none is running. */
function GroupActions({
  attempts,
  onOpenGroup,
  onExport,
  confirming,
  onConfirm,
  onDeleting,
  onDeleted,
  onError,
}: {
  attempts: SessionSummary[];
  onOpenGroup?: (group: string) => void;
  /** `attempts`: `id` is the group's, exported whole, with that many attempts. */
  onExport: (id: string, title: string, format: "md" | "json", attempts?: number) => void;
  confirming: boolean;
  onConfirm: (yes: boolean) => void;
  onDeleting: () => void;
  /** `stays`: what each deletion left in a repository that moved away. */
  onDeleted: (stays: string[]) => void;
  onError: (message: string) => void;
}) {
  const group = attempts[0].attempt!.group;
  const chosen = attempts.find((a) => a.attempt?.chosen);
  const removeAll = async () => {
    onDeleting();
    const stays: string[] = [];
    try {
      for (const a of attempts) {
        const left = await ipc.deleteSession(a.id);
        if (left) stays.push(left);
      }
    } catch (e) {
      onError((e as AppError).message);
    }
    onConfirm(false);
    onDeleted(stays);
  };
  return (
    <>
      {onOpenGroup && (
        // "Compare" while one is still to choose; once decided there is nothing to compare.
        <button className="btn small" onClick={() => onOpenGroup(group)} data-testid="open-group">
          {chosen || attempts.every((a) => a.status === "rejected") ? "Open" : "Compare"}
        </button>
      )}
      {/* The chosen attempt's session tells the story; with none chosen, the group does, whole. */}
      {(["md", "json"] as const).map((f) => (
        <button
          key={f}
          className="btn small"
          onClick={() => (chosen ? onExport(chosen.id, chosen.title, f) : onExport(group, attempts[0].title, f, attempts.length))}
          title={chosen ? `The chosen attempt's session: ${chosen.attempt!.label}` : "Every attempt's session, with how they were ranked and what you chose"}
        >
          {f === "md" ? "Markdown" : "JSON"}
        </button>
      ))}
      {attempts.some((a) => RUNNING.includes(a.status)) ? (
        <span className="muted small" data-testid="delete-running" title="A running attempt cannot be deleted">
          Cancel them to delete
        </span>
      ) : (
        <>
          <button className="btn small danger" onClick={() => onConfirm(true)} data-testid="delete">
            Delete
          </button>
          {confirming && <ConfirmDelete title={attempts[0].title} attempts={attempts.length} onKeep={() => onConfirm(false)} onDelete={removeAll} />}
        </>
      )}
    </>
  );
}

/** Asked before a session, or every attempt of a group, leaves History: it cannot be undone.
 * Keeping it is the default (Enter and Esc both keep it); closed, the focus is back on Delete. */
function ConfirmDelete({ title, attempts, onKeep, onDelete }: { title: string; attempts: number; onKeep: () => void; onDelete: () => Promise<void> }) {
  const keep = useRef<HTMLButtonElement>(null);
  useEffect(() => keep.current?.focus(), []);
  // Removing a worktree and its checkpoints takes a while: said, and done once.
  const [deleting, setDeleting] = useState(false);
  const remove = async () => {
    if (deleting) return;
    setDeleting(true);
    try {
      await onDelete();
    } finally {
      setDeleting(false);
    }
  };
  return (
    <AlertDialog title={attempts ? `Delete all ${attempts} attempts for good?` : "Delete this session for good?"} testid="confirm-delete-dialog" onEscape={onKeep} describedBy="confirm-delete-body">
      <p id="confirm-delete-body">
        {attempts ? "Every attempt at " : ""}“{title}” and everything recorded of it are removed from History, with its worktree and its branch if they are left (work not landed there goes too; a branch you chose to keep, or one holding a commit of yours, stays). This cannot be undone; your own checkout is not touched.
      </p>
      <div className="actions">
        <button ref={keep} className="btn primary" onClick={onKeep} disabled={deleting}>
          Keep
        </button>
        <button className="btn danger" onClick={() => void remove()} disabled={deleting} aria-busy={deleting} data-testid="confirm-delete">
          {deleting ? "Deleting…" : attempts ? `Delete all ${attempts} for good` : "Delete for good"}
        </button>
      </div>
    </AlertDialog>
  );
}

/** Whether a search passage is the title, or a piece of it: said once, in the title (the same
 * words twice, the second time highlighted, read as two things found). */
function passageOfTitle(parts: SearchHit["snippet"], title: string): boolean {
  const flat = (t: string) => t.replace(/…/g, "").replace(/\s+/g, " ").trim().toLowerCase();
  const passage = flat(parts.map((p) => p.text).join(""));
  return passage.length > 0 && flat(title).includes(passage);
}

/** The title with the searched words marked, as the passage marks them; plain text throughout. */
function MarkedTitle({ title, parts }: { title: string; parts: SearchHit["snippet"] }) {
  // Longest first: with "note" and "notes" both matched, "notes" is marked whole.
  const words = [...new Set(parts.filter((p) => p.matched && p.text.trim()).map((p) => p.text.toLowerCase()))].sort((a, b) => b.length - a.length);
  if (words.length === 0) return <>{title}</>;
  const pattern = new RegExp(`(${words.map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("|")})`, "gi");
  // Split with a capture group: the matches are at the odd places.
  return <>{title.split(pattern).map((t, i) => (i % 2 === 1 ? <mark key={i}>{t}</mark> : t))}</>;
}

/** A search passage with the matched words highlighted; every part is plain text. */
function Snippet({ parts }: { parts: SearchHit["snippet"] }) {
  return (
    <div className="small snippet" data-testid="search-snippet">
      {parts.map((p, i) => (p.matched ? <mark key={i}>{p.text}</mark> : <span key={i}>{p.text}</span>))}
    </div>
  );
}
