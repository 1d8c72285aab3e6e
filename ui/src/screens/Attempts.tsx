// One task done by several agents side by side: each attempt with its evidence, ranked by the
// judge's rule with the reason it is above the next; a view of the files the attempts left
// differently; land the one the person chooses (the others are put away), or open one to send
// it back. Updates live as attempts end.
import { lazy, Suspense, useCallback, useEffect, useRef, useState } from "react";
import { isTextField } from "../keys";
import { useAttemptProgress } from "../attemptProgress";
import { ExternalLink, GitMerge, Scale, Square, Trash2 } from "lucide-react";
import { AlertDialog } from "../components/AlertDialog";
import { RANKING_RULE } from "../components/AttemptsPicker";
import { compareOnce, comparisonOf } from "../comparing";
import { AppError, ipc, type EndReason, type FileDifference, type GroupRanking, type LandingMode, type RankedAttempt, type SessionSummary } from "../ipc";
import { Ticks } from "../components/Ticks";
import { END_LABEL, landedText, listedState, STATUS_LABEL } from "../session/model";
import { setAside } from "../sidebar";
import { useHistoryChanges } from "../historyChanges";
import { useKeptState } from "../keptState";

const DiffView = lazy(() => import("../components/DiffView"));

function seconds(ms: number) {
  const s = Math.round(ms / 1000);
  return s < 60 ? `${s} s` : `${Math.floor(s / 60)} min ${s % 60} s`;
}

/** The evidence of one attempt, as the ranking reads it. */
/** "1st", "2nd": a rank that cannot be read as the "#2" of an attempt's label beside it. */
export function ordinal(n: number): string {
  const tens = n % 100;
  const suffix = tens >= 11 && tens <= 13 ? "th" : (["th", "st", "nd", "rd"][n % 10] ?? "th");
  return `${n}${suffix}`;
}

function Evidence({ a }: { a: RankedAttempt }) {
  const e = a.evidence;
  // Tokens always, beside the price where every model has one: a card with a price and one
  // without can still be set side by side.
  // One unit: "3,523" and "tokens" are not split across lines.
  const tokens = `${e.tokens.toLocaleString()}\u00a0tokens`;
  const cost = e.cost_usd !== null ? `$${e.cost_usd.toFixed(4)} · ${tokens}` : tokens;
  return (
    <dl className="attempt-evidence" data-testid="attempt-evidence">
      <div>
        <dt>Verification</dt>
        <dd data-testid="attempt-checks" title={e.checks_run === 0 ? "No verification command was set for this workspace or named by the agent" : undefined}>
          {e.checks_run === 0 ? "no command" : `${e.checks_passed}/${e.checks_run} pass`}
        </dd>
      </div>
      <div>
        <dt>Audit</dt>
        <dd className={e.findings > 0 ? "bad" : undefined}>{e.findings === 0 ? "nothing found" : `${e.findings} finding${e.findings === 1 ? "" : "s"}`}</dd>
      </div>
      <div>
        <dt>Left to do</dt>
        <dd title={e.evaluated === false ? "The evaluator was not asked: the run reached review without it (a failed check, a claim of partial work, a stuck run)" : undefined}>
          {e.evaluated === false ? "not judged" : e.remaining === 0 ? "nothing" : `${e.remaining} item${e.remaining === 1 ? "" : "s"}`}
        </dd>
      </div>
      <div>
        <dt>Diff</dt>
        <dd>
          {e.diff_lines} line{e.diff_lines === 1 ? "" : "s"} in {e.files} file{e.files === 1 ? "" : "s"}
        </dd>
      </div>
      <div>
        <dt>Cost</dt>
        <dd title={e.reviewed ? "What it spent to reach its first review: rounds you asked for after that are not counted against it" : undefined} data-testid="attempt-cost">
          {cost}
        </dd>
      </div>
      <div>
        <dt>Time</dt>
        <dd title={e.reviewed ? "How long it was at work to reach its first review, as its cost" : undefined}>{seconds(e.wall_ms)}</dd>
      </div>
    </dl>
  );
}

/**
 * Each attempt's place as the engine places it (the CLI prints the same): a rank only once every
 * attempt has ended, none for one with nothing to land, and one place shared by attempts the rule
 * finds equal. `level`: it shares its place with the next.
 */
export function placesOf(ranking: GroupRanking): { rank: number; level: boolean; tied: boolean }[] {
  const read = ranking.ranking.map((_, i) => {
    const place = ranking.places[i] ?? "–";
    return { rank: Number(place.replace(/^=/, "")) || 0, tied: place.startsWith("=") };
  });
  return read.map((p, i) => ({ ...p, level: p.tied && read[i + 1]?.tied === true && read[i + 1].rank === p.rank }));
}

export function AttemptsView({ group, onOpenSession, onOpenHistory }: { group: string; onOpenSession: (id: string) => void; onOpenHistory?: () => void }) {
  const [ranking, setRanking] = useState<GroupRanking | null>(null);
  const [sessions, setSessions] = useState<SessionSummary[]>([]);
  const [diffs, setDiffs] = useState<FileDifference[] | null>(null);
  const [tab, setTab] = useState<"ranking" | "differences">("ranking");
  // The attempt whose diff is open, kept for the window's life: a visit to Settings or to one
  // attempt's session closed it.
  const [shown, setShown] = useKeptState(`finishline.attempts.shown.${group}`);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  // What an action said takes the focus when the button that started it went with it (Land,
  // Cancel, Compare, Reject every attempt): otherwise the focus falls to the page, and the next
  // Tab starts again from the sidebar.
  const said = useRef<HTMLParagraphElement>(null);
  const saidError = useRef<HTMLParagraphElement>(null);
  const refocus = useRef(false);
  useEffect(() => {
    if (!refocus.current) return;
    const lost = !document.activeElement || document.activeElement === document.body;
    const to = saidError.current ?? said.current;
    if (lost && to) {
      refocus.current = false;
      // Brought into view only as far as it must be: a plain focus() scrolled the page to put
      // it at the top, taking the group's title and buttons out of sight when it was in view.
      to.focus({ preventScroll: true });
      to.scrollIntoView?.({ block: "nearest" });
    }
  });
  // The person's next click or key is theirs: a later refresh does not move the focus.
  useEffect(() => {
    const mine = () => (refocus.current = false);
    document.addEventListener("pointerdown", mine, true);
    document.addEventListener("keydown", mine, true);
    return () => {
      document.removeEventListener("pointerdown", mine, true);
      document.removeEventListener("keydown", mine, true);
    };
  }, []);
  // What the evaluator's comparison came to, kept: it may end while the person is elsewhere, and
  // it stays true of the ranking it ordered. A decision's own words are not kept: the ranking
  // shows what was chosen or put away.
  const [compared, setCompared] = useKeptState(`finishline.attempts.compared.${group}`);
  const [compareError, setCompareError] = useKeptState(`finishline.attempts.compareError.${group}`);
  // An attempt that changed since (sent back, continued) loses the evaluator's word on its pair:
  // the sentence that it compared them would no longer be true of what is shown.
  const answeredBefore = useRef<number | null>(null);
  useEffect(() => {
    if (!ranking) return;
    const now = ranking.ranking.filter((a) => a.evaluator).length;
    if (answeredBefore.current !== null && now < answeredBefore.current && compared)
      setCompared("An attempt changed since the evaluator compared them, so its word on that pair is gone: ask again to compare them as they are now.");
    answeredBefore.current = now;
  }, [ranking, compared, setCompared]);
  // Cancel the running attempts: asked first, as a session's cancel is; sent once, however
  // often pressed meanwhile.
  // How many were running when asked: the question keeps its words while they end.
  const [confirmCancel, setConfirmCancel] = useState<number | null>(null);
  const [cancelling, setCancelling] = useState(false);
  const [confirmReject, setConfirmReject] = useState(false);
  /** The attempt the person chose to land, while they confirm that the others go. */
  const [confirmLand, setConfirmLand] = useState<RankedAttempt | null>(null);
  const [comparing, setComparing] = useState(false);
  const [stopping, setStopping] = useState(false);
  // How choosing one lands, as Settings → Tasks says: the engine lands it so.
  const [landing, setLanding] = useState<LandingMode>("squash");
  useEffect(() => {
    ipc.getSettings().then(
      (v) => {
        if (v?.settings?.tasks?.landing) setLanding(v.settings.tasks.landing);
      },
      () => undefined,
    );
  }, []);
  // The model asking would ask now, as the engine picks it (the evaluator in Settings, else the
  // model that judged the attempts when they started), to tell its answers from another's.
  const [judge, setJudge] = useState<string | null>(null);
  useEffect(() => {
    ipc.attemptJudge(group).then(
      (j) => setJudge(j ?? null),
      () => undefined,
    );
  }, [group]);
  // Started on no branch (a detached HEAD), nothing can land: choosing keeps the branch.
  const landingNow: LandingMode = ranking?.base_branch === null ? "branch" : landing;
  const stopped = useRef(false);
  const mounted = useRef(true);
  useEffect(() => {
    mounted.current = true;
    return () => void (mounted.current = false);
  }, []);

  const load = useCallback(() => {
    ipc.attemptGroup(group).then(setRanking, (e: AppError) => setError(e.message));
    ipc.listSessions({ group, limit: 64 }).then((l) => setSessions(l ?? []), () => undefined);
  }, [group]);
  useHistoryChanges(load);
  /** Asks the evaluator (`start`), or follows the comparison of this group already under way,
   * and shows what it came to. */
  const follow = useCallback(
    async (start: boolean) => {
      if (!comparisonOf(group) && !start) return;
      setError(null);
      setNotice(null);
      setCompared(null);
      setCompareError(null);
      setComparing(true);
      stopped.current = false;
      const pending = compareOnce(group, () => ipc.compareAttempts(group));
      try {
        const c = await pending;
        // Said even when the person has gone to another screen: they read it when they are back.
        setCompared(
          stopped.current
            ? c.asked === 0
              ? "Stopped before the evaluator answered. Asking again asks about every pair."
              : `Stopped. The ${c.asked === 1 ? "pair" : `${c.asked} pairs`} it answered before ${c.asked === 1 ? "is" : "are"} kept; asking again asks about the rest.`
            : c.asked === 0
            ? `Each pair already has ${c.model}'s answer, and asked again it would answer the same. Another evaluator model (Settings → Evaluator) gives its own.`
            : `The evaluator (${c.model}) compared ${c.asked === 1 ? "one pair" : `${c.asked} pairs`} of neighbours. Its word orders only attempts the rule finds equal.`,
        );
        if (!mounted.current) return;
        setRanking(c);
        if (c.model) setJudge(c.model);
      } catch (e) {
        setCompareError(`The attempts were not compared: ${(e as AppError).message}`);
        if (!mounted.current) return;
        // A pair answered before the failure is kept: show it.
        load();
      } finally {
        if (mounted.current) {
          setComparing(false);
          setStopping(false);
        }
      }
    },
    [group, load, setCompared, setCompareError],
  );
  useEffect(() => void follow(false), [follow]);
  useEffect(() => {
    if (tab === "differences") ipc.attemptDifferences(group).then(setDiffs, (e: AppError) => setError(e.message));
  }, [tab, group, ranking]);

  // While any attempt runs, its card counts the time it has taken (once a second), and says what
  // it is doing.
  const runningCount = ranking?.ranking.filter((a) => !a.evidence.ended).length ?? 0;
  const anyRunning = runningCount > 0;
  const live = useAttemptProgress(ranking?.ranking.filter((a) => !a.evidence.ended).map((a) => a.evidence.session) ?? []);
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    if (!anyRunning) return;
    const t = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(t);
  }, [anyRunning]);

  // Esc that nothing else took (no text field, no dialog) asks whether to cancel the running
  // attempts, as it does of a single running task.
  useEffect(() => {
    if (runningCount === 0) return;
    const onKey = (e: KeyboardEvent) => {
      if (e.key === "Escape" && !e.defaultPrevented && !isTextField(e.target) && !document.querySelector('[role="alertdialog"], [role="dialog"]')) {
        e.preventDefault();
        setConfirmCancel(runningCount);
      }
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [runningCount]);

  if (!ranking) {
    if (!error) return <p className="muted">Loading…</p>;
    return (
      <div className="panel error-panel" role="alert" data-testid="attempts-error">
        <p>These attempts could not be opened: {error}</p>
        <div className="row">
          <button
            className="btn"
            onClick={() => {
              setError(null);
              load();
            }}
          >
            Try again
          </button>
          {onOpenHistory && (
            <button className="btn" onClick={onOpenHistory}>
              Back to History
            </button>
          )}
        </div>
      </div>
    );
  }
  const statusOf = (id: string) => sessions.find((s) => s.id === id)?.status;
  const progressOf = (id: string) => {
    const s = sessions.find((x) => x.id === id);
    const { step, doing } = live[id] ?? {};
    const what = [step !== undefined ? `Step ${step}` : null, doing ?? null].filter(Boolean).join(" · ");
    if (!s) return what || "working…";
    // Not started: its time is nobody's work yet.
    if (s.status === "queued") return what || "Waiting for a free place";
    const tokens = s.tokens.agent + s.tokens.evaluator + s.tokens.compaction;
    return `${what ? `${what} · ` : ""}working for ${seconds(Math.max(0, now - s.created_ms))}${tokens > 0 ? ` · ${tokens.toLocaleString()} tokens so far` : ""}`;
  };
  const running = ranking.ranking.filter((a) => !a.evidence.ended);
  // Past the parallel limit (Settings → Tasks), an attempt waits to start.
  const queued = running.filter((a) => statusOf(a.evidence.session) === "queued").length;
  const places = placesOf(ranking);
  // The attempt whose diff is open below the cards, while it is still in the ranking.
  const shownAttempt = ranking.ranking.find((a) => a.evidence.session === shown) ?? null;
  const putAway = ranking.put_away === true;
  const decided = ranking.chosen !== null || putAway;
  const landable = ranking.ranking.filter((a) => a.evidence.review !== null);
  const chosenLabel = ranking.ranking.find((a) => a.evidence.session === ranking.chosen)?.evidence.label;
  const state = putAway
    ? "put away: none landed"
    : ranking.chosen !== null
      ? `decided: ${chosenLabel ?? "one"} landed`
      : running.length === ranking.ranking.length
        ? queued > 0
          ? `none has ended: ${running.length - queued} running, ${queued} waiting for a free place; they are ranked once they end`
          : "all still running; they are ranked once they end"
        : running.length > 0
          ? `${running.length} still running; those that ended are ranked once every one has`
          : landable.length > 0
            ? "all ended: choose one to land"
            : `all ended, and none has work to land: ${nothingToLand(ranking.ranking.map((a) => a.evidence.end_reason))}`;
  // The attempts besides `a` that choosing it would set aside: not those already rejected.
  const openOthers = (a: RankedAttempt) => (ranking?.ranking ?? []).filter((o) => o.evidence.session !== a.evidence.session && statusOf(o.evidence.session) !== "rejected").length;
  const choose = async (a: RankedAttempt) => {
    refocus.current = true;
    setBusy(true);
    setError(null);
    setNotice(null);
    setCompared(null);
    setCompareError(null);
    try {
      // Landed as the dialog said it would be: the way shown is the way asked for.
      const out = await ipc.chooseAttempt(group, a.evidence.session, landingNow);
      if (out.outcome === "landing_blocked") setError(`${a.evidence.label} could not land: ${out.detail} Open it to resolve this, or keep its branch.`);
      else {
        // Only those this choice set aside: one the person rejected before was not.
        const others = openOthers(a);
        const rest = others === 0 ? "" : others === 1 ? " The other attempt was rejected and its worktree removed." : " The other attempts were rejected and their worktrees removed.";
        setNotice(`${a.evidence.label} ${out.outcome === "decided" && out.landed ? `chosen. ${landedText(out.landed)}` : "landed."}${rest}`);
      }
      load();
    } catch (e) {
      setError((e as AppError).message);
    } finally {
      setBusy(false);
    }
  };
  const rejectAll = async () => {
    refocus.current = true;
    setConfirmReject(false);
    setBusy(true);
    setError(null);
    setNotice(null);
    setCompared(null);
    setCompareError(null);
    try {
      const n = await ipc.rejectAttempts(group);
      setNotice(`${n === 1 ? "1 attempt was rejected and its worktree" : `${n} attempts were rejected and their worktrees`} removed. Nothing landed.`);
      load();
    } catch (e) {
      setError((e as AppError).message);
    } finally {
      setBusy(false);
    }
  };
  // Neighbours both waiting to land, and whether the evaluator's word on them holds.
  // The evaluator is asked about neighbours among the attempts with work waiting (one put away on
  // its own between them is skipped); its word sits on the upper one of each pair. A pair it has
  // answered is not asked again, unless the evaluator in Settings is another model.
  const pairs = landable.slice(0, -1);
  const evaluatorModel = judge;
  const answered = (a: RankedAttempt) => a.evaluator && (!evaluatorModel || a.evaluator.model === evaluatorModel);
  const unanswered = pairs.filter((a) => !answered(a)).length;
  const compareLabel =
    pairs.every((a) => !a.evaluator) ? "Ask the evaluator to compare" : pairs.every((a) => a.evaluator) && evaluatorModel ? `Ask ${evaluatorModel} too` : "Ask the evaluator about the rest";
  const compare = () => {
    refocus.current = true;
    void follow(true);
  };
  const stopComparing = async () => {
    setStopping(true);
    stopped.current = true;
    try {
      await ipc.stopComparing(group);
    } catch (e) {
      setError((e as AppError).message);
      setStopping(false);
    }
  };
  const cancelRunning = async () => {
    refocus.current = true;
    setConfirmCancel(null);
    if (cancelling) return;
    setCancelling(true);
    setError(null);
    try {
      const n = await ipc.cancelAttempts(group);
      setNotice(n === 0 ? "No attempt was running here." : `${n} attempt${n === 1 ? " was" : "s were"} cancelled.`);
      load();
    } catch (e) {
      setError((e as AppError).message);
    } finally {
      setCancelling(false);
    }
  };

  return (
    <section className="screen wide attempts-screen" data-testid="attempts-view" data-group={group}>
      <header className="screen-head">
        <h1 className="clamp">{ranking.task}</h1>
        <p className="muted" data-testid="attempts-state">
          {ranking.ranking.length} attempts side by side · {state}
        </p>
        <div className="actions left">
          {running.length > 0 && (
            <button className="btn" onClick={() => setConfirmCancel(running.length)} disabled={cancelling} aria-busy={cancelling} data-testid="attempts-cancel">
              <Square size={14} aria-hidden /> Cancel the running attempts
            </button>
          )}
          {!decided && running.length === 0 && landable.length >= 2 && (unanswered > 0 || comparing) && (
            <button
              className="btn"
              disabled={busy || comparing}
              aria-busy={comparing}
              onClick={compare}
              data-testid="attempts-compare"
              title="Ask the evaluator model, for each attempt and the one ranked below it, which does the task better and why. It never overrides the rule; where the rule finds two equal, its preference orders them."
            >
              <Scale size={14} aria-hidden /> {comparing ? "Comparing…" : compareLabel}
            </button>
          )}
          {comparing && (
            <button className="btn" disabled={stopping} onClick={stopComparing} data-testid="attempts-stop-comparing" title="Stop asking the evaluator; the answers it gave are kept">
              <Square size={14} aria-hidden /> {stopping ? "Stopping…" : "Stop comparing"}
            </button>
          )}
          {!decided && running.length === 0 && (
            <button className="btn" disabled={busy || comparing} onClick={() => setConfirmReject(true)} data-testid="attempts-reject-all" title="Choose none: reject every attempt still in the choice and remove its worktree">
              <Trash2 size={14} aria-hidden /> {rejectRestWords(ranking.ranking).action}
            </button>
          )}
        </div>
      </header>
      {confirmLand && (
        <ConfirmLand
          attempt={confirmLand}
          below={belowFirst(ranking, places, confirmLand)}
          lands={landsAs(landingNow, ranking.base_branch ?? null)}
          keepsBranch={landingNow === "branch"}
          others={openOthers(confirmLand)}
          running={running.length}
          onKeep={() => setConfirmLand(null)}
          onLand={() => {
            const a = confirmLand;
            setConfirmLand(null);
            void choose(a);
          }}
        />
      )}
      {confirmCancel !== null && <ConfirmCancelAttempts count={confirmCancel} onKeep={() => setConfirmCancel(null)} onCancel={() => void cancelRunning()} />}
      {confirmReject && <ConfirmRejectAll words={rejectRestWords(ranking.ranking)} onKeep={() => setConfirmReject(false)} onReject={rejectAll} />}
      <p className="muted small" data-testid="ranking-rule">
        Ranked by: {RANKING_RULE}.
        {pairs.length > 0 && unanswered === 0 && !comparing && " The evaluator has compared each attempt with the next."}
        {(ranking.comparison_tokens ?? 0) > 0 && ` Asking the evaluator to compare them took ${ranking.comparison_tokens?.toLocaleString()} tokens${decided ? "" : " so far"}, not counted as the attempts' own.`}
      </p>
      {/* The first is where the person's eye and the filled Land button go: the evaluator's
          word against it is said here, not only in the small words on its card. */}
      {(() => {
        const [first] = ranking.ranking;
        const w = first?.evaluator;
        if (!first || first.rank !== 1 || !w?.prefers || w.prefers === first.evidence.label || !first.above_next || decided) return null;
        return (
          <p className="notice" data-testid="ranking-overruled">
            The rule ranks {first.evidence.label} first, on {first.above_next}; the evaluator prefers <strong>{w.prefers}</strong>. Read both before you land one.
          </p>
        );
      })()}
      {(notice ?? compared) && (
        <p className="notice" role="status" data-testid="attempts-notice" ref={said} tabIndex={-1}>
          {notice ?? compared}
        </p>
      )}
      {(error ?? compareError) && (
        <p className="field-error" role="alert" ref={saidError} tabIndex={-1}>
          {error ?? compareError}
        </p>
      )}
      <div
        className="segmented"
        role="tablist"
        aria-label="View"
        onKeyDown={(ev) => {
          // Tabs as a person expects them: the arrow keys (and Home, End) move between them.
          const to = { ArrowLeft: "ranking", Home: "ranking", ArrowRight: "differences", End: "differences" }[ev.key] as typeof tab | undefined;
          if (!to) return;
          ev.preventDefault();
          setTab(to);
          ev.currentTarget.querySelector<HTMLButtonElement>(`[data-testid="tab-${to}"]`)?.focus();
        }}
      >
        <button role="tab" aria-selected={tab === "ranking"} tabIndex={tab === "ranking" ? 0 : -1} className={tab === "ranking" ? "selected" : ""} onClick={() => setTab("ranking")} data-testid="tab-ranking">
          Ranking
        </button>
        <button
          role="tab"
          aria-selected={tab === "differences"}
          tabIndex={tab === "differences" ? 0 : -1}
          className={tab === "differences" ? "selected" : ""}
          onClick={() => setTab("differences")}
          data-testid="tab-differences"
        >
          Differences between attempts
        </button>
      </div>
      {tab === "ranking" ? (
        <>
        {/* The cards stay where they are when a diff opens (the button just pressed with them):
            the diff shows below them, across the width, under its attempt's name. */}
        <ol className="attempt-list" data-testid="attempt-list">
          {ranking.ranking.map((a, i) => {
            const e = a.evidence;
            const { rank, level, tied } = places[i];
            const chosen = ranking.chosen === e.session;
            const status = statusOf(e.session);
            // Set aside for the one landed: not refused by the person (one they rejected in its
            // own review before was).
            const summary = sessions.find((s) => s.id === e.session);
            const notChosen = !!summary && setAside(summary);
            // Named as the sidebar and History name it (put away without a review: Discarded).
            const shownState = summary ? listedState(summary, notChosen, decided && !putAway) : null;
            const statusLabel = shownState?.word ?? (status ? STATUS_LABEL[status] : "");
            const end = e.ended ? (e.end_reason ? END_LABEL[e.end_reason] : "ended") : progressOf(e.session);
            return (
              <li key={e.session} className={`panel attempt${chosen ? " chosen" : ""}${shown === e.session ? " showing-diff" : ""}`} data-testid="attempt" data-session={e.session} data-rank={rank}>
                <div className="attempt-head">
                  <span
                    className="rank"
                    data-testid="attempt-rank"
                    aria-label={rank ? `Ranked ${ordinal(rank)}${tied ? ", level with another" : ""}` : e.refused ? "Rejected by you: out of the choice" : e.ended ? "Ranked once every attempt has ended" : "Still running"}
                    title={e.refused ? "Rejected by you in its own review: out of the choice, so out of the ranking" : undefined}
                  >
                    {rank ? `${tied ? "=" : ""}${ordinal(rank)}` : e.ended ? "–" : "…"}
                  </span>
                  <strong data-testid="attempt-label">{e.label}</strong>
                  <span className={`badge ${shownState?.className ?? `badge-${status ?? "idle"}`}`} title={shownState?.title} data-testid="attempt-status">
                    {statusLabel}
                  </span>
                  {end !== statusLabel && (
                    <span className="muted" data-testid="attempt-end">
                      {end}
                    </span>
                  )}
                  {chosen && <span className="tag">chosen</span>}
                </div>
                {e.ended && e.reviewed && <Evidence a={a} />}
                {e.ended && !e.reviewed && (
                  <p className="small" data-testid="attempt-no-review">
                    Ended before a review{e.error ? ": " : "."}
                    {e.error && (
                      <span className="field-error">
                        <Ticks text={e.error} />
                      </span>
                    )}
                    {/* Until the group is decided: choosing one, or rejecting them all, removes the others' worktrees. */}
                    {!decided && " Its worktree stays as it left it: open the attempt to go on."}
                  </p>
                )}
                {rank > 0 && (a.above_next || a.evaluator || level) && (
                  <div className="attempt-reasons small">
                    {level && !a.evaluator && (
                      <p data-testid="attempt-level">Level with the next on every rule (costs within a tenth of each other count as equal): only the evaluator's comparison can order them.</p>
                    )}
                    {a.above_next && (
                      <p data-testid="attempt-reason">
                        Above the next: <strong>{a.above_next}</strong>
                      </p>
                    )}
                    {a.evaluator && (
                      <p data-testid="attempt-evaluator">
                        The evaluator, shown {a.evaluator.first} first and {a.evaluator.second} second,{" "}
                        {a.evaluator.prefers ? (
                          <>
                            prefers <strong>{a.evaluator.prefers}</strong>
                          </>
                        ) : a.evaluator.disagreed ? (
                          "gave two answers that disagree"
                        ) : (
                          "finds them equally good"
                        )}
                        {/* Answers that disagree are told in Finishline's words, not quoted as the evaluator's. */}
                        : {a.evaluator.disagreed ? a.evaluator.reason : <q>{a.evaluator.reason}</q>}
                        {/* A full stop of Finishline's where the words have none: "…” The rule decides" ran on. */}
                        {/[.!?…]$/.test(a.evaluator.reason.trim()) ? "" : "."}
                        {a.evaluator.prefers && a.evaluator.prefers !== e.label && a.above_next && (
                          <span className="muted" data-testid="attempt-evaluator-overruled">
                            {" "}
                            The rule decides here, on {a.above_next}: the evaluator's word orders only attempts the rule finds equal.
                          </span>
                        )}
                      </p>
                    )}
                  </div>
                )}
                <div className="actions left">
                  {!decided && e.review && (
                    <button
                      className={`btn${rank === 1 && !tied ? " primary" : ""}`}
                      disabled={busy || comparing}
                      // The others' work goes with the choice: asked first, as Reject every attempt is.
                      onClick={() => (landable.length > 1 || running.length > 0 ? setConfirmLand(a) : void choose(a))}
                      data-testid="attempt-land"
                      title={
                        (e.files === 0 ? "It changed no file: choosing it lands nothing and puts the others away" : "Lands it on the branch; the others are rejected") +
                        (running.length > 0 ? `, and the ${running.length} still running cancelled` : "")
                      }
                    >
                      <GitMerge size={14} aria-hidden /> {e.files === 0 ? "Choose this one (no changes)" : "Land this one"}
                    </button>
                  )}
                  {e.files > 0 && (
                    <button className="btn" onClick={() => setShown(shown === e.session ? null : e.session)} aria-expanded={shown === e.session} data-testid="attempt-diff-toggle">
                      {shown === e.session ? "Hide its diff" : "Show its diff"}
                    </button>
                  )}
                  <button className="btn" onClick={() => onOpenSession(e.session)} data-testid="attempt-open" title="The whole session: its transcript, its review, Request changes">
                    <ExternalLink size={14} aria-hidden /> Open
                  </button>
                </div>
              </li>
            );
          })}
        </ol>
        {shownAttempt && (
          <section className="panel attempt-diff-panel" aria-label={`${shownAttempt.evidence.label}: its diff`} data-testid="attempt-diff-panel">
            <div className="attempt-head">
              <h3>{shownAttempt.evidence.label}: its diff</h3>
              <button
                className="btn small"
                onClick={() => {
                  // The button goes with the panel: the focus goes to the card's own toggle.
                  const session = shownAttempt.evidence.session;
                  setShown(null);
                  setTimeout(() => document.querySelector<HTMLButtonElement>(`[data-testid="attempt"][data-session="${session}"] [data-testid="attempt-diff-toggle"]`)?.focus(), 0);
                }}
                data-testid="attempt-diff-hide"
              >
                Hide
              </button>
            </div>
            {/* Read from its session, which keeps the diff after the group is decided. */}
            <AttemptDiff key={shownAttempt.evidence.session} session={shownAttempt.evidence.session} review={shownAttempt.evidence.review ?? shownAttempt.evidence.session} />
          </section>
        )}
        </>
      ) : (
        <>
        {/* Read here, chosen here: the way to land is not only back on the other tab. */}
        {!decided && landable.length > 0 && (
          <div className="actions left" data-testid="differences-land">
            {landable.map((a) => (
              <button
                key={a.evidence.session}
                className="btn"
                disabled={busy || comparing}
                onClick={() => (landable.length > 1 || running.length > 0 ? setConfirmLand(a) : void choose(a))}
                data-testid="differences-land-one"
                title={
                  (a.evidence.files === 0 ? "It changed no file: choosing it lands nothing and puts the others away" : "Lands it on the branch; the others are rejected") +
                  (running.length > 0 ? `, and the ${running.length} still running cancelled` : "")
                }
              >
                <GitMerge size={14} aria-hidden /> {a.evidence.files === 0 ? `Choose ${a.evidence.label} (no changes)` : `Land ${a.evidence.label}`}
              </button>
            ))}
          </div>
        )}
        <Differences diffs={diffs} leftOut={ranking.ranking.filter((a) => !a.evidence.reviewed).map((a) => `${a.evidence.label} (${a.evidence.ended ? "ended with no work to review" : "still running"})`)} />
        </>
      )}
    </section>
  );
}

/** Asked before the running attempts are stopped: what they wrote so far stays for review. */
function ConfirmCancelAttempts({ count, onKeep, onCancel }: { count: number; onKeep: () => void; onCancel: () => void }) {
  const keep = useRef<HTMLButtonElement>(null);
  useEffect(() => keep.current?.focus(), []);
  return (
    <AlertDialog title={`Cancel ${count === 1 ? "the running attempt" : `the ${count} running attempts`}?`} testid="attempts-cancel-dialog" onEscape={onKeep} describedBy="cancel-attempts-body">
      <p id="cancel-attempts-body">
        {count === 1 ? "1 attempt stops" : `${count} attempts stop`} where {count === 1 ? "it is" : "they are"}. What {count === 1 ? "it" : "they"} wrote so far stays in {count === 1 ? "its worktree" : "their worktrees"}, to compare and choose from or to
        reject; a cancelled session can be resumed from History.
      </p>
      <div className="actions">
        <button ref={keep} className="btn primary" onClick={onKeep}>
          Keep them running
        </button>
        <button className="btn danger" onClick={onCancel} data-testid="attempts-cancel-confirm">
          Cancel them
        </button>
      </div>
    </AlertDialog>
  );
}

/** "A", "A and B", "A, B and C". */
const inWords = (names: string[]) => (names.length < 2 ? names.join("") : `${names.slice(0, -1).join(", ")} and ${names.at(-1)}`);

/** Choosing none, in words that name what it puts away: with an attempt the person rejected in its
 * own review already, "every attempt" was not what it did. */
export function rejectRestWords(entries: RankedAttempt[]): { action: string; body: string; confirm: string } {
  const refused = entries.filter((e) => e.evidence.refused).map((e) => e.evidence.label);
  const open = entries.filter((e) => !e.evidence.refused).map((e) => e.evidence.label);
  const gone = `${open.length === 1 ? "Its worktree is" : "Their worktrees are"} removed, with whatever ${open.length === 1 ? "it" : "they"} wrote there; your own branch and folder are not touched. Each session stays in History.`;
  if (refused.length === 0) return { action: "Reject every attempt", body: `None of the ${open.length} attempts lands. ${gone}`, confirm: "Reject every attempt" };
  const already = `you rejected ${inWords(refused)} already.`;
  if (open.length === 1) return { action: "Reject the other attempt", body: `${open[0]} does not land either; ${already} ${gone}`, confirm: "Reject it" };
  return { action: `Reject the other ${open.length} attempts`, body: `None of ${inWords(open)} lands either; ${already} ${gone}`, confirm: "Reject them" };
}

/** Asked before the whole group is put away: the worktrees go, with whatever the attempts wrote. */
function ConfirmRejectAll({ words, onKeep, onReject }: { words: ReturnType<typeof rejectRestWords>; onKeep: () => void; onReject: () => void }) {
  const keep = useRef<HTMLButtonElement>(null);
  useEffect(() => keep.current?.focus(), []);
  return (
    <AlertDialog title={`${words.action}?`} testid="attempts-reject-all-dialog" onEscape={onKeep} describedBy="reject-all-body">
      <p id="reject-all-body">{words.body}</p>
      <div className="actions">
        <button ref={keep} className="btn primary" onClick={onKeep}>
          Keep them
        </button>
        <button className="btn danger" onClick={onReject} data-testid="attempts-reject-all-confirm">
          {words.confirm}
        </button>
      </div>
    </AlertDialog>
  );
}

/** Where and how choosing an attempt lands it, in the dialog's words. */
export function landsAs(mode: LandingMode, branch: string | null): string {
  const on = branch ?? "your branch";
  switch (mode) {
    case "squash":
      return `It lands on ${on} as one commit.`;
    case "merge":
      return `It lands on ${on} with its commits (a merge).`;
    case "uncommitted":
      return `It lands in your checkout of ${on} as uncommitted changes.`;
    case "branch":
      return "Nothing lands yet: its branch is kept for later.";
  }
}

/** "It is ranked 2nd: Codex is ranked first.": said before landing one the rule placed lower,
 * with the ones it is level with, as its card's "=2nd" says. */
export function belowFirst(ranking: GroupRanking, places: ReturnType<typeof placesOf>, a: RankedAttempt): string | null {
  const i = ranking.ranking.findIndex((r) => r.evidence.session === a.evidence.session);
  const rank = places[i]?.rank ?? 0;
  const first = ranking.ranking[0];
  if (rank <= 1 || !first || places[0]?.rank !== 1) return null;
  const level = ranking.ranking.filter((_, j) => j !== i && places[j]?.rank === rank).map((r) => r.evidence.label);
  const beside = places[i]?.tied && level.length > 0 ? `, level with ${level.join(" and ")}` : "";
  return `It is ranked ${ordinal(rank)}${beside}: ${first.evidence.label} is ranked first.`;
}

function ConfirmLand({
  attempt,
  below,
  lands,
  keepsBranch,
  others,
  running,
  onKeep,
  onLand,
}: {
  attempt: RankedAttempt;
  below: string | null;
  lands: string;
  keepsBranch: boolean;
  others: number;
  running: number;
  onKeep: () => void;
  onLand: () => void;
}) {
  // Landing one rejects the others and removes their worktrees: Enter keeps them, as Esc does.
  const keep = useRef<HTMLButtonElement>(null);
  useEffect(() => keep.current?.focus(), []);
  const nothing = attempt.evidence.files === 0;
  // Nothing lands when it changed nothing, or when the landing keeps its branch only.
  const choosing = nothing || keepsBranch;
  return (
    <AlertDialog title={choosing ? `Choose ${attempt.evidence.label}?` : `Land ${attempt.evidence.label}?`} testid="attempt-land-dialog" onEscape={onKeep} describedBy="land-body">
      <p id="land-body">
        {below && `${below} `}
        {nothing ? "It changed no file, so nothing lands. " : `${lands} `}
        {others > 0 && (
          <>
            The other {others === 1 ? "attempt is" : `${others} attempts are`} rejected{running > 0 ? ` (${running} still running cancelled first)` : ""} and
            {others === 1 ? " its worktree removed, with whatever it wrote there" : " their worktrees removed, with whatever they wrote there"}.{" "}
          </>
        )}
        Each session stays in History with its diff.
      </p>
      <div className="actions">
        <button ref={keep} className="btn" onClick={onKeep} data-testid="attempt-land-keep">
          Not yet
        </button>
        <button className="btn primary" onClick={onLand} data-testid="attempt-land-confirm">
          {choosing ? "Choose it" : "Land it"}
        </button>
      </div>
    </AlertDialog>
  );
}

/** One attempt's diff, from its review as the session holds it. */
function AttemptDiff({ session, review }: { session: string; review: string }) {
  const [files, setFiles] = useState<import("../ipc").FileChange[] | null>(null);
  // Unread, the diff is not an empty one: saying "no changes" would misjudge the attempt.
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    ipc.getSession(session).then(
      (t) => {
        const last = [...t.events].reverse().find((e) => e.type === "review_requested") as { files_changed?: import("../ipc").FileChange[] } | undefined;
        setFiles(last?.files_changed ?? []);
      },
      (e: AppError) => setError(e.message),
    );
  }, [session]);
  // Opened below the last card, it would be out of sight: it comes into view.
  const at = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (files) at.current?.scrollIntoView?.({ block: "nearest" });
  }, [files]);
  if (error)
    return (
      <p className="field-error" role="alert" data-testid="attempt-diff-error">
        The diff could not be read: {error.replace(/[.\s]*$/, "")}. Open the attempt's session to see its changes.
      </p>
    );
  if (!files) return <p className="muted small">Loading the diff…</p>;
  return (
    <div ref={at}>
      <Suspense fallback={<p className="muted small">Loading the diff…</p>}>
        <DiffView files={files} reviewId={review} comments={[]} editable={false} />
      </Suspense>
    </div>
  );
}

/** A diff's hunks, each line marked added or removed; git's header lines (the same in every
 * column) left out so that the narrow columns show the content. Plain text only. */
export function DiffLines({ diff }: { diff: string }) {
  const lines = diff.replace(/\n+$/, "").split("\n");
  const first = lines.findIndex((l) => l.startsWith("@@"));
  const body = first < 0 ? lines : lines.slice(first);
  return (
    <pre className="diff-text" data-testid="difference-diff">
      {body.map((l, i) => (
        <span key={i} className={l.startsWith("@@") ? "hunk" : l.startsWith("+") ? "add" : l.startsWith("-") ? "del" : undefined}>
          {l || " "}
        </span>
      ))}
    </pre>
  );
}

/** The files the attempts changed, those they left differently first, each attempt's diff beside
 * the others. Only attempts with work to review are compared: `leftOut` names the others, each
 * with why, so that none is silently missing. */
function Differences({ diffs, leftOut }: { diffs: FileDifference[] | null; leftOut: string[] }) {
  if (!diffs) return <p className="muted">Comparing…</p>;
  const notAmong =
    leftOut.length > 0 ? (
      <p className="muted small" data-testid="differences-left-out">
        Not among them: {leftOut.join(", ")}.
      </p>
    ) : null;
  if (diffs.length === 0)
    return (
      <>
        <p className="muted" data-testid="differences-none">
          No attempt with work to review changed a file.
        </p>
        {notAmong}
      </>
    );
  const differ = diffs.filter((d) => !d.same).length;
  return (
    <div className="differences" data-testid="differences">
      <p className="muted small">
        {differ === 0 ? "Every attempt made the same changes: choosing between them changes nothing in the files." : `${differ} of ${diffs.length} file${diffs.length === 1 ? "" : "s"} ${differ === 1 ? "differs" : "differ"} between the attempts.`}
      </p>
      {notAmong}
      {diffs.map((d) => (
        <details key={d.path} className="panel difference" open={!d.same} data-testid="difference" data-path={d.path} data-same={d.same ? "yes" : "no"}>
          <summary>
            <code>{d.path}</code> {d.same ? <span className="muted">changed the same way by every attempt</span> : <span className="tag">differs</span>}
          </summary>
          <div className="difference-columns" style={{ gridTemplateColumns: `repeat(${d.versions.length}, minmax(0, 1fr))` }}>
            {d.versions.map((v, i) => {
              // Two attempts that wrote the same thing read as one choice: said, not left to spot.
              const twin = v.kind ? d.versions.slice(0, i).find((w) => w.kind === v.kind && w.diff === v.diff) : undefined;
              return (
                <div key={v.session} className="difference-column" data-testid="difference-version">
                  <div className="small">
                    <strong>{v.label}</strong> {v.kind ? <span className="muted">{v.kind}</span> : <span className="muted">left it alone</span>}
                    {twin && <span className="muted"> · the same as {twin.label}</span>}
                  </div>
                  {v.kind && <DiffLines diff={v.diff} />}
                </div>
              );
            })}
          </div>
        </details>
      ))}
    </div>
  );
}

/** Why a group whose attempts all ended has nothing to land, in their own terms: one that only
 * answered (changed no file) did not fail. */
function nothingToLand(ends: (EndReason | null)[]): string {
  const stopped = ends.filter((e) => e === "failed" || e === "cancelled" || e === "plan_failed").length;
  if (stopped === ends.length) return "each one failed or was cancelled";
  if (stopped === 0) return "none of them changed a file";
  return "each one failed, was cancelled or changed no file";
}
