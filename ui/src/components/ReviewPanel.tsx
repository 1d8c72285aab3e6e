import { lazy, Suspense, useEffect, useRef, useState, type ReactNode, type RefObject } from "react";
import { AppError, ipc, sentence, TRUST_SHOWN_FROM, type Phase, type AuditFinding, type FileChange, type ReviewComment, type DecisionOccasion, type EvaluatorTrust, type LandingBlock, type LandingMode, type NotCopied, type OverwrittenCopy, type OtherTasksFile, type ChangedSinceRun } from "../ipc";
import { repeatedInWords } from "../session/cardSummary";
import { failedAndTakenOver } from "../session/planStrip";
import { END_LABEL, landedText, STEP_STATE_LABEL, stepSummary, stepsDone, STUCK_LABEL, type Place, type PlanView, type Review, type Reverted } from "../session/model";
import { REVIEW_EVENT, type ReviewAction } from "./CommandPalette";
import { useComparing } from "../comparing";
import { AlertDialog } from "./AlertDialog";
import { ConfirmDiscard } from "./ConfirmDiscard";
import { unaddedComments } from "./commentDrafts";
import { Ticks } from "./Ticks";
import { useWindowDraft } from "../windowDraft";
import { ErrorLine } from "./ErrorLine";

/** Stuck patterns whose "repeated" is tool calls, said in words; the others quote text as it was. */
const ACTION_PATTERNS: string[] = ["same_action_error", "same_action_same_observation", "alternation"];

/** Landings stopped by something in the person's checkout, which is where to look. */
const IN_CHECKOUT: LandingBlock[] = ["your_edits", "your_ignored_files", "outside_sparse_checkout", "branch_in_use"];

/** Why an attempt's decisions wait: deciding would change what the evaluator is comparing. */
const WHILE_COMPARING = "The evaluator is comparing the attempts: wait for its answer, or stop it on the attempts' screen";

// The diff (with its highlighter) loads when a review first opens, not with the first screen.
const DiffView = lazy(() => import("./DiffView"));

const AUDIT_LABEL: Record<string, string> = {
  assertion_removed: "Assertion removed",
  assertion_weakened: "Assertion weakened",
  skip_added: "Test skipped",
  test_deleted: "Test deleted",
  check_config_changed: "Check configuration changed",
  failure_masked: "Failure masked",
  special_cased_test: "Code special-cases the test",
};

interface Props {
  review: Review;
  tokens: { agent: number; evaluator: number };
  /** The manager was asked, also when it ran the task as one step (no plan to show). */
  managerAsked?: boolean;
  onDecided: () => void;
  /** The model whose verdict this is, for its track record. */
  evaluatorModel?: string;
  /** With plan mode: each step's outcome, shown with the evidence. */
  plan?: PlanView;
  /** Where the task works: in its own worktree, approve lands it and reject removes it. */
  place?: Place;
  sessionId?: string;
  /** The settings' landing choice, the default of the menu. */
  defaultLanding?: LandingMode;
  /** One attempt of a group: approving it chooses it, and the others are rejected. */
  attempt?: { group: string; number: number; of: number } | null;
  /** Where a decision refused for want of a provider (or a refused key) is fixed. */
  onOpenSettings?: () => void;
  /** What the session does now, as the engine says: a landing's steps while Approve lands. */
  activity?: { phase: Phase; detail: string };
  /** An earlier round was approved: rejecting this one leaves that work where it landed. */
  approvedBefore?: boolean;
}

/** What a landing under way does now: its own step when the engine said one, else the whole
 * of it, with why it may take a while. */
export function landingWords(on: string, activity?: { phase: Phase; detail: string }): string {
  if (activity?.phase === "landing") return `Landing on ${on}: ${activity.detail}…`;
  if (activity?.phase === "verifying") return `Landing on ${on}: checking again ${activity.detail}…`;
  return `Landing the task on ${on}… If the branch moved since the task began, the task is rebased and checked again first.`;
}

const AGENT_RESOLVES: readonly LandingBlock[] = ["conflict", "conflict_markers", "verification_failed"];

const LANDING_LABEL: Record<LandingMode, string> = {
  squash: "as one commit",
  merge: "with its commits (merge)",
  uncommitted: "as uncommitted changes",
  branch: "keep its branch only",
};

const BLOCK_TITLE: Record<LandingBlock, string> = {
  your_edits: "Not landed: you are editing the same files",
  your_ignored_files: "Not landed: it would replace files your .gitignore hides",
  outside_sparse_checkout: "Not landed as uncommitted changes: the task changed files outside your sparse checkout",
  branch_in_use: "Not landed: the branch is in use (a rebase, a bisect or another worktree)",
  // The engine's detail names the branch and what conflicts (or that it moved in that very
  // instant, and to approve again): a title would say it twice.
  conflict: "Not landed",
  branch_moved: "Not landed",
  conflict_markers: "Not landed",
  verification_failed: "Not landed: verification fails on top of the moved branch",
  no_branch: "Not landed: there is no branch to land on",
  interrupted: "Not landed: Finishline stopped while landing",
  stopped: "Not landed: you stopped it",
  stopped_behind_another: "Stopped: another decision on this task goes on",
  // The detail says where it was and that it is no longer there.
  repository_gone: "Not landed",
  git: "Not landed: git refused",
};

/** A follow-up's review shows what changed since the last decision; Approve lands the whole
 * branch, earlier rounds too: said, so that "Landed (5 files)" after a review of one is no surprise.
 * In a plain folder nothing lands, but Reject's undo reaches every round: said too, as approving
 * or undoing files the review never showed was. */
function EarlierRounds({ shown, lands, plain, unrecorded }: { shown: { path: string }[]; lands?: string[]; plain?: boolean; unrecorded?: boolean }) {
  const here = new Set(shown.map((f) => f.path));
  const earlier = (lands ?? []).filter((f) => !here.has(f));
  if (earlier.length === 0) return null;
  const names = earlier.length <= 5 ? earlier.join(", ") : `${earlier.slice(0, 5).join(", ")} and ${earlier.length - 5} more`;
  const files = `${earlier.length} more file${earlier.length === 1 ? "" : "s"}`;
  return (
    <p className="muted small" data-testid="earlier-rounds">
      {plain
        ? `Earlier rounds of this task changed ${files}, reviewed before: ${names}. ${earlier.length === 1 ? "It stays as it is" : "They stay as they are"} when you approve; ${
            // A round not recorded cannot be undone, and the engine then undoes none of them.
            unrecorded ? "Reject cannot undo the rounds' changes: not all of them were recorded." : `Reject with “Also undo” undoes ${earlier.length === 1 ? "it" : "them"} too.`
          }`
        : `Approve lands ${files} from earlier rounds of this task, reviewed before: ${names}.`}
    </p>
  );
}

/** "judge-a has called 3 of its last 40 `done` verdicts wrongly": once there are enough reviews. */
function TrackRecord({ model }: { model: string }) {
  const [trust, setTrust] = useState<EvaluatorTrust | null>(null);
  useEffect(() => {
    ipc.evaluatorTrust().then((all) => setTrust((all ?? []).find((t) => t.model === model) ?? null), () => {});
  }, [model]);
  if (!trust || trust.reviews < TRUST_SHOWN_FROM || trust.false_done_rate === null) return null;
  const pct = Math.round(trust.false_done_rate * 100);
  return (
    <span className="muted track-record" data-testid="false-done-rate" title="How often this evaluator's 'done' was then rejected or sent back by you (History → How far to trust the evaluator)">
      {" "}
      · {model}: {pct}% false done over {trust.reviews} reviews
    </span>
  );
}

/** Brings what a decision just opened (a question, a notice, the feedback box) to the middle of
 * the window: the review panel is long, and what appears at its foot would otherwise sit below
 * the window or behind the sticky buttons, so the buttons look dead. A question takes the focus. */
function reveal(el: HTMLElement | null) {
  if (!el) return;
  el.scrollIntoView?.({ block: "center" });
  if (el.tabIndex >= 0 || el.getAttribute("tabindex") !== null) el.focus({ preventScroll: true });
  // A draft kept from before goes on where it ends: typing landed in front of it.
  if (el instanceof HTMLTextAreaElement) el.setSelectionRange(el.value.length, el.value.length);
}

/** A comment as the judge's checklist names it (the engine's `Comment::criterion`):
 * `src/a.rs:12-14: rename x`, with " (as it was)" after the place of removed lines. */
export function criterionOf(c: ReviewComment): string {
  const at = c.start_line === c.end_line ? `${c.path}:${c.start_line}` : `${c.path}:${c.start_line}-${c.end_line}`;
  return `${at}${c.side === "old" ? " (as it was)" : ""}: ${c.text.trim()}`;
}

/** Send says what goes: the words typed, the comments added, or both; with neither, the comments
 * found not met, which go on with any request (the engine's `criteria::still_open`). */
export function sendLabel(feedback: string, comments: number, carried = 0): string {
  const open = carried === 1 ? "the open comment" : `the ${carried} open comments`;
  if (comments === 0 && !feedback.trim() && carried > 0) return `Send ${open} again`;
  const parts = [feedback.trim() || comments === 0 ? "feedback" : "", comments > 0 ? `${comments} comment${comments === 1 ? "" : "s"}` : "", carried > 0 ? open : ""].filter(Boolean);
  return `Send ${parts.length > 1 ? `${parts.slice(0, -1).join(", ")} and ${parts[parts.length - 1]}` : parts[0]}`;
}

export function ReviewPanel({ review, tokens, managerAsked, onDecided, evaluatorModel, plan, place, sessionId, defaultLanding, attempt, onOpenSettings, activity, approvedBefore = false }: Props) {
  // A plan that failed or spent its budget: the evaluator's last verdict was on a step.
  const planUnfinished = review.endReason === "plan_failed" || review.endReason === "plan_budget_spent";
  // The person's comments from the last review that the judge could not confirm met.
  const unmet = review.criteria.filter((c) => c.state !== "met").length;
  const stillOpen = review.remaining.filter((r) => !review.criteria.some((c) => c.text === r));
  // Those found not met go on with a request for changes (the engine's `criteria::still_open`);
  // one nobody could check is the person's to look at.
  // The person may let one go instead (they judge it fine, or no longer want it).
  // Kept as the typed words are: a visit elsewhere and back must not send what was let go.
  const [letGoKept, setLetGoKept] = useWindowDraft(`finishline.letGo.${review.reviewId}`);
  const letGo = letGoKept ? letGoKept.split("\n") : [];
  const toggleLetGo = (id: string) => setLetGoKept((letGo.includes(id) ? letGo.filter((x) => x !== id) : [...letGo, id]).join("\n"));
  // One a comment on this review asks again is asked by that comment (the engine's `still_open`).
  const repeated = (c: { text: string }) => review.comments.some((n) => criterionOf(n) === c.text);
  const carried = review.criteria.filter((c) => c.state === "unmet" && !letGo.includes(c.id) && !repeated(c)).length;
  // Let go, a comment not met is one the person has already accepted: Approve does not ask about
  // it again, and the outcome counts it apart.
  const letGoUnmet = review.criteria.filter((c) => c.state === "unmet" && letGo.includes(c.id)).length;
  const unmetAsked = unmet - letGoUnmet;
  const comparing = useComparing(attempt?.group);
  // A later round's review shows what that round used; the first shows the session's.
  const round = review.roundTokens;
  const shownTokens = round ?? review.tokens ?? { ...tokens, compaction: 0 };
  const worktree = place?.worktree && !place.removed ? place.worktree : undefined;
  // Started on a detached HEAD (a rebase or bisect under way), there is no branch to land on:
  // Approve keeps the task's branch, the one landing that can go through.
  const noBranch = worktree !== undefined && !worktree.base_branch;
  const [chosenLanding, setLanding] = useState<LandingMode>(defaultLanding ?? "squash");
  const landing: LandingMode = noBranch ? "branch" : chosenLanding;
  // The menu starts at the settings' choice.
  const inWorktree = worktree !== undefined;
  useEffect(() => {
    if (!inWorktree || defaultLanding) return;
    ipc.getSettings().then((v) => v?.settings?.tasks?.landing && setLanding(v.settings.tasks.landing), () => undefined);
  }, [inWorktree, defaultLanding]);
  // Per file someone changed after the run: overwrite it anyway (unticked: keep it).
  const [overwrite, setOverwrite] = useState<Record<string, boolean>>({});
  const [feedback, setFeedback] = useWindowDraft(`finishline.feedbackDraft.${review.reviewId}`);
  // Feedback typed before a visit elsewhere opens its box again.
  const [asking, setAsking] = useState(() => feedback.trim() !== "");
  // Approve / Request changes / Reject from the command palette.
  const [paletteAction, setPaletteAction] = useState<ReviewAction | null>(null);
  useEffect(() => {
    const on = (e: Event) => setPaletteAction((e as CustomEvent<ReviewAction>).detail);
    window.addEventListener(REVIEW_EVENT, on);
    return () => window.removeEventListener(REVIEW_EVENT, on);
  }, []);
  const [revert, setRevert] = useState(false); // a reject keeps the files unless the person asks for the revert
  const [conflicts, setConflicts] = useState<string[] | null>(null);
  // Those of them where a pipe or a socket is now: no one's edit, never copied.
  const [noFile, setNoFile] = useState<string[]>([]);
  const [otherTasks, setOtherTasks] = useState<OtherTasksFile[]>([]);
  // In a plain folder, the review's files not as the agent left them (another task's or the
  // person's change since): looked at when the review opens and when the window comes back.
  const drifted = useChangedSinceRun(review.reviewId, !review.decided && !worktree);
  const requestChangesButton = useRef<HTMLButtonElement>(null);
  const rejectButton = useRef<HTMLButtonElement>(null);
  // The question goes with the focus in it: back to Reject, which asked it.
  const backFromConflicts = () => {
    setConflicts(null);
    setTimeout(() => rejectButton.current?.focus(), 0);
  };
  const [error, setError] = useState<string | AppError | null>(null);
  const [busy, setBusy] = useState(false);
  // A reject with revert under way: it may wait for another task's tools in the folder.
  const [undoing, setUndoing] = useState(false);
  // The branch an approve is landing on while it does (a rebase and the checks again may take minutes).
  const [landingOn, setLandingOn] = useState<string | null>(null);
  // The feedback box closes with what was typed kept for when it opens again.
  const closeAsking = () => {
    setAsking(false);
    // The box goes with the focus in it: back to the button that opened it, not the page.
    setTimeout(() => requestChangesButton.current?.focus(), 0);
  };
  // Esc closes the innermost box the review opened (the overwrite question, then the feedback box).
  useEffect(() => {
    if (!asking && !conflicts) return;
    const onKey = (e: KeyboardEvent) => {
      if (e.key !== "Escape" || e.defaultPrevented) return;
      e.preventDefault();
      if (conflicts) backFromConflicts();
      else closeAsking();
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [asking, conflicts]);

  // No file changed in this round nor in an earlier one that waits to land: Approve lands nothing.
  const nothingToLand = review.files.length === 0 && (place?.lands?.length ?? 0) === 0;
  // A landing stopped by what the agent can mend in its worktree: a conflict with the moved
  // branch, markers left in, or the checks failing on the combined code.
  const agentResolves = !!review.blocked && AGENT_RESOLVES.includes(review.blocked.reason);
  // When the person last tried landing again and it was blocked again.
  const [triedAgain, setTriedAgain] = useState<{ at: string; reason: LandingBlock } | null>(null);
  // Another decision refused while the box already says the repository moved: said in the box,
  // not as a second copy of its long message below it.
  const [goneToo, setGoneToo] = useState<{ at: string; decision: "request_changes" | "reject" } | null>(null);
  const decide = async (decision: "approve" | "request_changes" | "reject", confirmed = false, landAs?: LandingMode) => {
    setBusy(true);
    setError(null);
    setGoneToo(null);
    const reverting = decision === "reject" && revert && !worktree && !review.unrecorded;
    setUndoing(reverting);
    const mode = landAs ?? landing;
    setLandingOn(decision === "approve" && worktree?.base_branch && mode !== "branch" && !nothingToLand ? worktree.base_branch : null);
    try {
      const out = await ipc.submitReview({
        review_id: review.reviewId,
        decision,
        feedback: decision === "request_changes" ? feedback : undefined,
        revert: reverting,
        overwrite: confirmed ? Object.keys(overwrite).filter((f) => overwrite[f]) : undefined,
        landing: decision === "approve" && worktree ? (landAs ?? landing) : undefined,
        let_go: decision === "request_changes" && letGo.length > 0 ? letGo : undefined,
      });
      if (out.outcome === "needs_confirmation") {
        setConflicts(out.conflicts);
        setNoFile(out.no_file ?? []);
        setOtherTasks(out.other_tasks ?? []);
      }
      else if (out.outcome === "landing_blocked") {
        // The blocked landing arrives as an event and shows below; tried again and blocked
        // again, the box would look as before: it says when it tried.
        if (review.blocked) setTriedAgain({ at: new Date().toLocaleTimeString(), reason: review.blocked.reason });
      } else {
        setFeedback("");
        setLetGoKept("");
        onDecided();
      }
    } catch (e) {
      if ((e as AppError).code === "repository_gone" && review.blocked?.reason === "repository_gone" && decision !== "approve") setGoneToo({ at: new Date().toLocaleTimeString(), decision });
      else setError(e as AppError);
    } finally {
      setBusy(false);
      setUndoing(false);
      setLandingOn(null);
    }
  };

  // In a worktree, Reject removes what the agent wrote: asked first, keeping it the default.
  const [confirmReject, setConfirmReject] = useState(false);
  const rejectNow = () => (worktree ? setConfirmReject(true) : void decide("reject"));
  // Feedback typed and not sent (the box may be closed, the words kept) goes nowhere with an
  // approve or a reject: either asks first.
  const typedFeedback = feedback.trim();
  const [confirmFeedbackReject, setConfirmFeedbackReject] = useState(false);
  // In a worktree Reject asks anyway: one question says both what goes with it and the words.
  const reject = () => (typedFeedback && !worktree ? setConfirmFeedbackReject(true) : rejectNow());
  // Comments on the diff go to the agent only with Request changes: approving would leave them
  // unsent without a word, so it asks first. So does approving what the audit found weakened, or
  // past a comment of the person's not confirmed met: the button not being highlighted was the
  // only word of it before one click accepted them.
  // A comment typed but not added (its Comment button not pressed) goes nowhere: approving or
  // sending feedback past it asks too, naming its files.
  const [confirmApprove, setConfirmApprove] = useState(false);
  const [unadded, setUnadded] = useState<string[]>([]);
  const approve = () => {
    const typed = unaddedComments(review.reviewId);
    setUnadded(typed);
    if (review.comments.length > 0 || typed.length > 0 || typedFeedback || review.audit.length > 0 || unmetAsked > 0) setConfirmApprove(true);
    else void decide("approve");
  };
  const approveButton = useRef<HTMLButtonElement>(null);
  const [confirmUnsent, setConfirmUnsent] = useState(false);
  const sendFeedback = () => {
    const typed = unaddedComments(review.reviewId);
    setUnadded(typed);
    if (typed.length > 0) setConfirmUnsent(true);
    else void decide("request_changes");
  };
  const sendButton = useRef<HTMLButtonElement>(null);
  // "Go back to it" goes to the comment's box, brought into view, once the question is gone
  // (which gives the focus back to the button that asked first).
  // "Go back to it" for feedback typed and not sent: its box, focused once the question is gone.
  const backToFeedback = () => {
    setAsking(true);
    setTimeout(() => document.querySelector<HTMLTextAreaElement>('[data-testid="feedback-input"]')?.focus(), 0);
  };
  const backToUnadded = () => {
    const file = unadded[0];
    setTimeout(() => {
      const box = [...document.querySelectorAll<HTMLElement>('[data-testid="file-change"]')]
        .find((f) => f.dataset.path === file)
        ?.querySelector<HTMLTextAreaElement>('[data-testid="comment-input"]');
      if (!box) return;
      box.focus();
      box.scrollIntoView?.({ block: "center" });
    }, 0);
  };

  useEffect(() => {
    if (!paletteAction || review.decided) return;
    setPaletteAction(null);
    // A decision already on its way (a landing can take minutes) is not joined by another.
    if (busy) return;
    if (paletteAction === "request_changes" && !comparing) setAsking(true); // the feedback box opens, focused
    else if (comparing) setError(`${WHILE_COMPARING}, then decide.`);
    else if (paletteAction === "reject") reject();
    else if (paletteAction === "approve") approve();
    else void decide(paletteAction);
    // decide reads the current revert choice; the action runs once per palette pick
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [paletteAction]);

  // The button pressed is gone once the review is decided: the focus goes to what was decided
  // (read out, and Tab goes on to the message box) unless the person had moved it elsewhere.
  const decidedPanel = useRef<HTMLElement>(null);
  const isDecided = review.decided !== undefined;
  const wasDecided = useRef(isDecided);
  useEffect(() => {
    const lost = document.activeElement === null || document.activeElement === document.body;
    if (isDecided && !wasDecided.current && lost) decidedPanel.current?.focus();
    wasDecided.current = isDecided;
  }, [isDecided]);

  if (review.decided) {
    return (
      <section className="panel review" data-testid="review-panel" ref={decidedPanel} tabIndex={-1} aria-label="What was decided">
        <h2>{decisionWord(review.decided.decision, review.decided.occasion)}</h2>
        <p className="muted">
          Decided by {decider(review.decided.decision, review.decided.by)}
          {review.decided.occasion === "every_attempt_rejected" ? ", with every other attempt of this task." : "."}
        </p>
        {review.decided.decision === "reject" && place?.worktree && place.removed && (
          <p className="muted small" data-testid="worktree-gone">
            The task's worktree was removed{place.branchDeleted ? ` and its branch ${place.branchDeleted} deleted` : ""}; History keeps its diff.
          </p>
        )}
        {review.decided.landed && (
          <p className="notice" role="status" data-testid="landed-summary">
            <Ticks text={landedText(review.decided.landed, review.files.length)} />
          </p>
        )}
        {uncopied(review).length > 0 && (
          <p className="muted small" data-testid="not-kept">
            Not kept: {uncopied(review).join(", ")} (your .gitignore hides {uncopied(review).length === 1 ? "it; it" : "them; they"} went with the task's worktree).
          </p>
        )}
        {review.decided.reverted && review.decided.reverted.notCopied.length > 0 && (
          <ul className="notice warn" role="status" data-testid="revert-not-copied">
            {review.decided.reverted.notCopied.map((n) => (
              <li key={n.path}>{notCopiedText(n)}</li>
            ))}
          </ul>
        )}
        {review.decided.reverted && changedSince(review.decided.reverted).length > 0 && (
          <p className="notice warn" role="status" data-testid="revert-kept">
            Left as they are, because they changed after the agent: {changedSince(review.decided.reverted).join(", ")}.
          </p>
        )}
        <Checklist criteria={review.criteria} decided letGoWords={review.decided.letGo} />
        {/* After Request changes, earlier rounds' files are the task's to undo too. */}
        {review.decided.decision === "reject" && !review.decided.reverted && !place?.worktree && (review.files.length > 0 || place?.reviewedBefore) && sessionId && (
          <UndoLater sessionId={sessionId} files={review.files.length} earlierRounds={!!place?.reviewedBefore} />
        )}
        {review.decided.reverted && (
          <p className="notice" role="status" data-testid="revert-summary">
            {undoneText(review.decided.reverted)}
            {[...review.decided.reverted.restored, ...review.decided.reverted.deleted].length > 0 && (
              <span className="muted small"> ({few([...review.decided.reverted.restored, ...review.decided.reverted.deleted], 5)})</span>
            )}
          </p>
        )}
        {review.decided.reverted && review.decided.reverted.copies.length > 0 && (
          <ul className="notice" data-testid="revert-copies">
            {copyGroups(review.decided.reverted.copies).map((g) => (
              <li key={g.where}>
                {g.text} <code>{g.where}</code>.
              </li>
            ))}
          </ul>
        )}
        <DecidedDiff reviewId={review.reviewId} files={review.files} comments={review.comments} round={!!place?.reviewedBefore && !place.resolvingLanding} />
      </section>
    );
  }
  return (
    <section className="panel review" data-testid="review-panel" aria-label="Review the result">
      <h2>Review the result</h2>
      <dl className="facts">
        <dt>Agent's claim</dt>
        <dd data-testid="review-claim">
          {/* A plan's claim is its last step's: "Done!" said in an earlier step is not it. */}
          {review.claim === "none" ? (review.saidDone ? "said it was done in its reply" : plan ? "no explicit claim in its last step" : "no explicit claim") : review.claim}
          {review.claimWords?.summary && <span className="claim-words" data-testid="review-claim-words">: “{review.claimWords.summary}”</span>}
          {review.claimWords?.remaining_work && <span className="muted" data-testid="review-claim-remaining"> Remaining, in its words: “{review.claimWords.remaining_work}”</span>}
        </dd>
        <dt>Outcome</dt>
        <dd data-testid="review-end-reason">
          {END_LABEL[review.endReason]}
          {/* Why it stuck goes with "Stuck", before what else the review found. */}
          {review.stuck && (
            <span data-testid="review-stuck">
              {" "}
              ({STUCK_LABEL[review.stuck.pattern] ?? review.stuck.pattern}
              {review.stuck.repeated ? (
                <>
                  : {ACTION_PATTERNS.includes(review.stuck.pattern) ? <span title={review.stuck.repeated}>{repeatedInWords(review.stuck.repeated)}</span> : <code>{review.stuck.repeated}</code>}
                </>
              ) : null}
              )
            </span>
          )}
          {review.audit.length > 0 && (
            <>
              {/* "But" only against a success: "Stuck, but the audit found…" read as a contrast
                  that is not there. */}
              {review.endReason === "verified_done" ? ", but " : ", and "}
              <strong className="audit-note" data-testid="review-outcome-audit">
                the audit found {review.audit.length === 1 ? "1 change that weakens" : `${review.audit.length} changes that weaken`} the checks (below)
              </strong>
            </>
          )}
          {/* Beside the outcome, not only in the checklist far below: the evaluator's "done" is
           * not the person's comment met. */}
          {unmet > 0 && (
            <>
              {review.audit.length > 0 || review.endReason !== "verified_done" ? ", and " : ", but "}
              <strong className="audit-note" data-testid="review-outcome-unmet">
                {unmetAsked === 0
                  ? `you let go of ${letGoUnmet === 1 ? "1 comment" : `${letGoUnmet} comments`} not met (below)`
                  : `${unmetAsked === 1 ? "1 of your comments is" : `${unmetAsked} of your comments are`} not confirmed met${letGoUnmet > 0 ? `, and you let ${letGoUnmet} go` : ""} (below)`}
              </strong>
            </>
          )}
        </dd>
        {plan && (
          <>
            <dt>Steps</dt>
            <dd data-testid="review-steps">
              {stepsDone(plan.steps)} done
              {plan.revisions.length > 0 ? `, plan revised ${plan.revisions.length}×` : ""}
              {/* The list below still numbers the failed step the count leaves out. */}
              {failedAndTakenOver(plan) ? ` after ${failedAndTakenOver(plan)} failed` : ""}
              <ol className="review-steps">
                {plan.steps
                  .filter((s) => s.state !== "replaced")
                  .map((s, i) => (
                    <li key={i} data-state={s.state}>
                      {/* The badge as the plan panel's ("Failed" there, "Stuck" here read as two
                          outcomes); how it ended follows when it says more. */}
                      <span className={`tag step-state state-${s.state}`}>{STEP_STATE_LABEL[s.state]}</span> {s.step.title}
                      {s.endReason && s.endReason !== "verified_done" && <span className="muted"> ({END_LABEL[s.endReason].toLowerCase()})</span>}
                      {stepSummary(s.summary, s.endReason) && <span className="muted">: {s.summary}</span>}
                    </li>
                  ))}
              </ol>
            </dd>
          </>
        )}
        <dt>Evaluator</dt>
        <dd data-testid="review-verdict">
          {/* A run that ended before its last check (stuck, a failed verification) may have asked it earlier. */}
          {review.verdict
            ? review.verdict.replace("_", " ")
            : // A later round that spent nothing on it never asked it: "earlier answers" were another round's.
              round && round.evaluator === 0
              ? "not asked in this round"
              : evaluatorModel
                ? "not asked at the end; its earlier answers are in the timeline"
                : "not asked"}
          {review.verdict && review.verdictOnStep ? ` (its word on ${review.verdictOnStep}, not on the whole task)` : ""}
          {review.verdictSummary && <span className="muted">: {review.verdictSummary}</span>}
          {review.verdict && evaluatorModel && <TrackRecord model={evaluatorModel} />}
        </dd>
        {/* One row for both: every row above the diff pushes the diff out of a short window. */}
        <dt>Used</dt>
        <dd>
          {/* A later round's review says that round's own, and the session's beside it: a
              follow-up's review read the session's total as its own. */}
          <span
            data-testid="review-tokens"
            title={
              round
                ? "This round: the runs since the review before this one. Session: every run of it so far (the task, each round of changes, each follow-up), this one included"
                : "The whole session's so far: every run of it (the task, each round of changes, each follow-up), this one included"
            }
          >
            {/* A plan's manager is counted with the evaluator: said, or "not asked" above reads as a contradiction. */}
            agent {shownTokens.agent.toLocaleString()} · {plan || managerAsked ? "evaluator and manager" : "evaluator"} {shownTokens.evaluator.toLocaleString()}
            {shownTokens.compaction > 0 ? ` · compaction ${shownTokens.compaction.toLocaleString()}` : ""} tokens
            {round && review.tokens ? ` this round (session: ${(review.tokens.agent + review.tokens.evaluator + review.tokens.compaction).toLocaleString()})` : ""}
          </span>
          {" · "}
          <span data-testid="review-cost" className={review.costUsd === undefined ? "muted" : undefined}>
            {review.costUsd === undefined
              ? "cost: set prices in Settings to see it"
              : review.roundCostUsd !== undefined
                ? `$${review.roundCostUsd.toFixed(4)} this round (session: $${review.costUsd.toFixed(4)})`
                : `$${review.costUsd.toFixed(4)}${round ? " (session)" : ""}`}
          </span>
        </dd>
      </dl>
      {/* A comment of the person's left open is the evaluator's remaining item word for word: the
          checklist below shows it with the reason, so it is not listed twice. */}
      {stillOpen.length > 0 && (
        <>
          <h3>Still open</h3>
          <ul data-testid="review-remaining">
            {stillOpen.map((r, i) => (
              <li key={i}>{r}</li>
            ))}
          </ul>
        </>
      )}
      {review.verification.length > 0 && (
        <>
          <h3>Verification</h3>
          {review.verification.map((v, i) => (
            <div key={i} data-testid="review-verification">
              {review.verification.length > 1 && (
                <p className="muted small">
                  Verification {i + 1} of {review.verification.length}
                </p>
              )}
              <pre className="output">{v}</pre>
            </div>
          ))}
        </>
      )}
      <AskedBefore words={review.asked} judged={!!review.verdict && review.verdict !== "unavailable"} />
      <Checklist criteria={review.criteria} letGo={letGo} onLetGo={toggleLetGo} asked={repeated} />
      {review.audit.length > 0 && (
        <div className="callout panel audit" role="note" data-testid="review-audit">
          <h3>The audit of what Approve accepts found changes that weaken the checks</h3>
          <ul>
            {review.audit.map((f: AuditFinding, i) => (
              <li key={i} data-testid="audit-finding">
                <strong>{AUDIT_LABEL[f.rule] ?? f.rule}</strong>: <code>{f.path}{f.line ? `:${f.line}` : ""}</code>
                {/* The audit covers what Approve accepts, earlier rounds sent back included. */}
                {!review.files.some((c) => c.path === f.path) && (
                  <span className="muted small" data-testid="audit-earlier">
                    {" "}
                    (from an earlier round; Approve accepts it too)
                  </span>
                )}{" "}
                — {f.detail}
                {f.excerpt && <pre className="output small">{f.excerpt}</pre>}
                {sessionId && (
                  <button className="link-btn small" onClick={() => void ipc.dismissFinding(sessionId, f).catch((e) => setError((e as AppError).message))} data-testid="dismiss-finding">
                    Dismiss for this task
                  </button>
                )}
              </li>
            ))}
          </ul>
        </div>
      )}
      {review.dismissed.length > 0 && (
        <ul className="muted small audit-dismissed" data-testid="audit-dismissed">
          {review.dismissed.map((f: AuditFinding, i) => (
            <li key={i}>
              Dismissed by you for this task: {(AUDIT_LABEL[f.rule] ?? f.rule).toLowerCase()}{" "}
              <code>
                {f.path}
                {f.line ? `:${f.line}` : ""}
              </code>
              {sessionId && (
                <>
                  {" "}
                  <button className="link-btn small" onClick={() => void ipc.restoreFinding(sessionId, f).catch((e) => setError((e as AppError).message))} data-testid="restore-finding">
                    Undo
                  </button>
                </>
              )}
            </li>
          ))}
        </ul>
      )}
      {review.autoApprove && !review.autoApprove.approved && (
        <p className="muted small" data-testid="auto-approve-note">
          Not approved automatically: {review.autoApprove.reason}.
        </p>
      )}
      {drifted.length > 0 && (
        <div className="panel callout small" role="status" data-testid="changed-since-run">
          <p>
            Not as the agent left {drifted.length === 1 ? "it" : "them"}, changed since: approving keeps {drifted.length === 1 ? "it" : "them"} as{" "}
            {drifted.length === 1 ? "it is" : "they are"} now, and the diff below shows what the agent wrote, not what the folder holds.
          </p>
          <ul>
            {drifted.map((d) => (
              <li key={d.path}>
                <code>{d.path}</code> <span className="muted">(changed by {d.by && d.by.length > 0 ? d.by.map((t) => `“${t.title}”`).join(" and ") : "you, or a command"})</span>
              </li>
            ))}
          </ul>
        </div>
      )}
      {/* A follow-up's diff is what changed since the person's last review, not the whole task. */}
      <h3 data-testid="review-files-heading">
        {review.decided || !place?.reviewedBefore
          ? "Files changed"
          : place.resolvingLanding
            ? `What lands on ${worktree?.base_branch ?? "your branch"}, merged with its changes`
            : "Files changed since your last review"}{" "}
        ({review.files.length})
      </h3>
      {worktree ? (
        <EarlierRounds shown={review.files} lands={!review.decided && place?.reviewedBefore && !place.resolvingLanding ? place.lands : undefined} />
      ) : (
        <EarlierRounds shown={review.files} lands={!review.decided && place?.reviewedBefore ? place.earlier : undefined} plain unrecorded={!!review.unrecorded || !!place?.earlierUnrecorded} />
      )}
      {/* Beside the count, where it is read: these files exist but are in no diff and never land. */}
      {(review.notLanded?.length ?? 0) > 0 && <NotLanded review={review} busy={busy} onBusy={setBusy} />}
      {(review.inSubmodules?.length ?? 0) > 0 && (
        <div className="panel callout small" data-testid="review-in-submodules">
          <p>
            Also changed, inside a submodule: the task&apos;s branch records only which commit a submodule is at, so these never land and go with the
            task&apos;s worktree. Make them in the submodule&apos;s own repository: {few(review.inSubmodules!)}
          </p>
        </div>
      )}
      {review.files.length === 0 ? (
        <p className="muted">No files changed.</p>
      ) : (
        <Suspense fallback={<p className="muted">Loading the diff…</p>}>
          <DiffView files={review.files} reviewId={review.reviewId} comments={review.comments} editable={!review.decided} inPlace={!place?.worktree} />
        </Suspense>
      )}
      {review.comments.length > 0 && (
        <p className="muted small" data-testid="comment-count">
          {review.comments.length} comment{review.comments.length === 1 ? "" : "s"} on the diff: Request changes sends {review.comments.length === 1 ? "it" : "them"} to the agent, and the next review checks each one.
        </p>
      )}
      {review.unrecorded && !worktree && (
        <p className="notice warn" role="status" data-testid="review-unrecorded">
          {UNRECORDED}
        </p>
      )}
      {(review.notCovered?.length ?? 0) > 0 && (
        <p className="muted small" data-testid="review-not-covered">
          Not covered by revert (too big to copy, unreadable, or a name that is not UTF-8, so never copied): {review.notCovered!.join(", ")}
        </p>
      )}
      {conflicts && (
        <div className="callout panel" role="alertdialog" aria-label="Files changed after the agent" tabIndex={-1} ref={reveal} data-testid="revert-conflicts">
          <p>These files changed after the agent or while it worked (your edits, or another task's). Reverting is safe for everything else; tick a file only to put back the agent's starting point over those changes (a copy of the version it replaces is kept, and the result says where):</p>
          <ul className="overwrite-list">
            {conflicts.map((c) => (
              <li key={c}>
                <label className="check" data-testid="overwrite-label">
                  <input type="checkbox" checked={overwrite[c] ?? false} onChange={(e) => setOverwrite({ ...overwrite, [c]: e.target.checked })} disabled={busy} data-testid="overwrite-file" />{" "}
                  {/* The agent's starting point of a file it made is no file: ticked, it is deleted. */}
                  {noFile.includes(c) ? (
                    <>
                      Replace <code>{c}</code> <span className="muted small">(a pipe or a socket is there now, where the agent left no file: perhaps yours, and it cannot be copied)</span>
                    </>
                  ) : review.files.find((f) => f.path === c)?.kind === "created" ? (
                    <>
                      Delete <code>{c}</code> <span className="muted small">(the agent created it: your changes in it go too)</span>
                      <TheirWork path={c} others={otherTasks} />
                    </>
                  ) : (
                    <>
                      Overwrite <code>{c}</code>
                      <TheirWork path={c} others={otherTasks} />
                    </>
                  )}
                </label>
              </li>
            ))}
          </ul>
          <div className="actions">
            {/* Under way (it may wait for another task's tools), the choice sent stands. */}
            <button className="btn" onClick={backFromConflicts} disabled={busy}>
              Back
            </button>
            <button className="btn danger" onClick={() => decide("reject", true)} disabled={busy} data-testid="revert-anyway">
              {Object.values(overwrite).some(Boolean) ? "Reject and revert, overwriting the ticked files" : "Reject and revert the rest, keeping these"}
            </button>
          </div>
        </div>
      )}
      {review.blocked && (
        <div className="callout panel" role="alert" tabIndex={-1} ref={reveal} data-testid="landing-blocked" data-reason={review.blocked.reason}>
          <p>
            {/* The engine's detail is a clause: after the title's full stop it starts a sentence. */}
            <strong>{BLOCK_TITLE[review.blocked.reason] ?? "Not landed"}.</strong> <Ticks text={sentence(review.blocked.detail)} />. Nothing was
            overwritten.
            {/* Only for the same block: a new reason reads anew. */}
            {triedAgain?.reason === review.blocked.reason && <span data-testid="tried-again"> Tried again at {triedAgain.at}: still not landed.</span>}
            {goneToo && review.blocked.reason === "repository_gone" && (
              <span data-testid="gone-too">
                {" "}
                {goneToo.decision === "reject" ? "Reject" : "Request changes"}, tried at {goneToo.at}, waits for it too: put it back there and {goneToo.decision === "reject" ? "reject" : "request changes"} again.
              </span>
            )}
          </p>
          {review.blocked.files.length > 0 && (
            <ul>
              {review.blocked.files.map((f) => (
                <li key={f}>
                  <code>{f}</code>
                </li>
              ))}
            </ul>
          )}
          <div className="actions">
            {agentResolves && (
              <button
                className="btn primary"
                disabled={busy}
                data-testid="resolve-with-agent"
                onClick={() => {
                  setBusy(true);
                  ipc.resolveConflict(review.reviewId).then(onDecided, (e) => setError((e as AppError).message)).finally(() => setBusy(false));
                }}
              >
                Let the agent resolve it
              </button>
            )}
            {/* Where what stops the landing is: the person's checkout (their edits, their
                ignored files, their branch), or the task's worktree (its changes). */}
            {sessionId && worktree && (IN_CHECKOUT.includes(review.blocked.reason) ? (
              <button className="btn" onClick={() => void ipc.openWorktree(sessionId, "checkout").catch((e) => setError((e as AppError).message))} data-testid="blocked-open-checkout">
                Open your checkout
              </button>
            ) : (
              <button className="btn" onClick={() => void ipc.openWorktree(sessionId).catch((e) => setError((e as AppError).message))} data-testid="blocked-open-worktree">
                Open the worktree
              </button>
            ))}
            {/* Gone with the repository, the branch is out of reach: keeping it would stop the same way. */}
            {review.blocked.reason !== "repository_gone" && (
              <button className="btn" disabled={busy} onClick={() => decide("approve", false, "branch")} data-testid="keep-branch">
                Keep the branch for later
              </button>
            )}
          </div>
        </div>
      )}
      {asking && (
        // The hint and its Close beside the box, not in its label: they are not the box's name.
        <div className="feedback-field">
        <label className="field">
          <span>{review.comments.length > 0 ? "Anything else? (optional: your comments on the diff go with it)" : "What should change?"}</span>
          <textarea
            ref={reveal}
            data-testid="feedback-input"
            value={feedback}
            onChange={(e) => setFeedback(e.target.value)}
            onKeyDown={(e) => {
              // Enter sends, Shift+Enter is a new line: as in every chat box.
              if (e.key === "Enter" && !e.shiftKey && !e.nativeEvent.isComposing) {
                e.preventDefault();
                // Not with the box empty: an Enter out of habit must not start a run (the button
                // sends the open comments alone).
                if ((feedback.trim() || review.comments.length > 0) && !busy && !comparing) sendFeedback();
              }
            }}
            rows={3}
            autoFocus
            aria-describedby="feedback-hint"
          />
        </label>
        <span className="muted hint" id="feedback-hint">
          {/* The engine carries them on (criteria::still_open): said, so none goes unseen. */}
          {carried > 0 && (
            <span data-testid="feedback-carried">
              {carried === 1 ? "Your comment not met goes with it, checked again" : `Your ${carried} comments not met go with it, checked again`} ·{" "}
            </span>
          )}
          {/* Said where the request is written: the checklist that let it go may be scrolled away. */}
          {letGo.length > 0 && (
            <span data-testid="feedback-let-go">{letGo.length === 1 ? "The comment you let go is not sent" : `The ${letGo.length} comments you let go are not sent`} · </span>
          )}
          Enter sends · Shift+Enter for a new line ·{" "}
          {/* Esc alone closed it: nothing on the screen did, for a person with the pointer. */}
          <button type="button" className="link-btn" onClick={closeAsking} data-testid="feedback-close">
            Close (Esc)
          </button>
        </span>
        </div>
      )}
      {undoing && (
        <p className="muted small" role="status" data-testid="deciding">
          Undoing the task's changes… If another task's tools are at work in this folder, this waits for them (up to 10 s).
        </p>
      )}
      <ErrorLine error={error} onOpenSettings={onOpenSettings} />
      {worktree && (
        <p className="muted small" data-testid="review-where">
          The task worked in its own worktree on <code>{worktree.branch}</code>; your checkout is untouched. {attempt ? "Choosing this attempt" : "Approve"}{" "}
          {nothingToLand ? (
            "lands nothing, as no file changed"
          ) : noBranch ? (
            "keeps its branch for you to merge: your checkout was on no branch when the task started"
          ) : (
            <>
              lands it on <code>{worktree.base_branch ?? "a branch"}</code>
            </>
          )}
          {attempt ? " and rejects the other attempts" : ""}; Reject removes the worktree and the branch (History keeps the diff).
        </p>
      )}
      <div className="actions review-actions">
        {/* In the bar with the buttons it greys out: below the fold of the dock it went unseen. */}
        {landingOn ? (
          <span className="muted small grow" role="status" data-testid="deciding">
            {landingWords(landingOn, activity)}{" "}
            {sessionId && (
              // The checks again may take minutes; stopped before the branch moves, nothing lands.
              <button className="btn small" onClick={() => void ipc.cancelRun(sessionId).catch((e) => setError(e as AppError))} title="Nothing lands; the review waits for you">
                Stop landing
              </button>
            )}
          </span>
        ) : noBranch || (worktree && nothingToLand) ? null : worktree ? (
          <label className="field inline" title="How the approved task lands on your branch">
            <span className="muted small">Land</span>
            <select value={landing} onChange={(e) => setLanding(e.target.value as LandingMode)} data-testid="landing-mode">
              {(Object.keys(LANDING_LABEL) as LandingMode[]).map((m) => (
                <option key={m} value={m}>
                  {LANDING_LABEL[m]}
                </option>
              ))}
            </select>
          </label>
        ) : (
          <label className="check">
            <input
              type="checkbox"
              checked={revert && !review.unrecorded}
              disabled={review.unrecorded}
              title={review.unrecorded ? UNRECORDED : undefined}
              onChange={(e) => setRevert(e.target.checked)}
              data-testid="revert-checkbox"
            />{" "}
            Also undo the agent's changes to my files
            {/* After Request changes the diff is the last round's; the undo is the whole task's. */}
            {place?.reviewedBefore && ", from every round of this task"}
          </label>
        )}
        {/* The three ways stay together: on a narrow window they wrap as one row below the option. */}
        <span className="decide">
          <button className="btn danger" disabled={busy || comparing} onClick={reject} ref={rejectButton} data-testid="reject" title={comparing ? WHILE_COMPARING : worktree ? "Removes the task's worktree and branch" : undefined}>
            {/* The tick is Reject's alone: the button says so, beside an Approve it leaves as it is. */}
            {!noBranch && !worktree && revert && !review.unrecorded ? "Reject and undo its changes" : "Reject"}
          </button>
          {asking ? (
            <button
              className="btn"
              disabled={busy || comparing || (!feedback.trim() && review.comments.length === 0 && carried === 0)}
              onClick={sendFeedback}
              ref={sendButton}
              data-testid="send-feedback"
              title={comparing ? WHILE_COMPARING : undefined}
            >
              {sendLabel(feedback, review.comments.length, carried)}
            </button>
          ) : (
            <button className="btn" disabled={busy || comparing} onClick={() => setAsking(true)} ref={requestChangesButton} data-testid="request-changes" title={comparing ? WHILE_COMPARING : undefined}>
              {review.comments.length > 0 ? `Request changes (${review.comments.length} comment${review.comments.length === 1 ? "" : "s"})` : "Request changes"}
            </button>
          )}
          <button
            // Not the highlighted way when the audit found the checks weakened, the plan stopped
            // short of its steps, or a comment of the person's is not confirmed met.
            // Nor after a landing the agent can resolve: tried again unchanged, it meets the same
            // conflict (or the same failing check), and "Let the agent resolve it" is the way on.
            className={review.audit.length > 0 || planUnfinished || unmetAsked > 0 || (agentResolves && landing !== "branch") ? "btn" : "btn primary"}
            disabled={busy || comparing}
            onClick={approve}
            ref={approveButton}
            data-testid="approve"
            title={
              comparing
                ? WHILE_COMPARING
                : attempt
                  ? `Chooses attempt ${attempt.number} of ${attempt.of}: the other attempts are rejected and their worktrees removed`
                  : undefined
            }
          >
            {/* After a blocked landing this is the way to try again (the person may have moved the files): one button, not a second beside it. */}
            {review.blocked && landing !== "branch"
              ? `Try landing${worktree?.base_branch ? ` on ${worktree.base_branch}` : ""} again`
              : `${attempt ? "Choose this attempt" : "Approve"}${worktree && worktree.base_branch && landing !== "branch" && !nothingToLand ? ` and land on ${worktree.base_branch}` : ""}`}
          </button>
        </span>
      </div>
      {confirmApprove && (
        <KeepOrGo
          title={approveQuestion(attempt ? "Choose this attempt" : "Approve", review.comments.length + unadded.length, typedFeedback !== "", review.audit.length, unmetAsked)}
          testid="confirm-approve"
          returnTo={approveButton}
          keep={unadded.length > 0 || typedFeedback ? "Go back to it" : "Keep reviewing"}
          onKeep={() => {
            setConfirmApprove(false);
            if (unadded.length > 0) backToUnadded();
            else if (typedFeedback) backToFeedback();
          }}
          go={attempt ? "Choose it anyway" : "Approve anyway"}
          onGo={() => {
            setConfirmApprove(false);
            void decide("approve");
          }}
        >
          {review.comments.length > 0 && (
            <>
              You wrote {review.comments.length} comment{review.comments.length === 1 ? "" : "s"} on the diff. Only Request changes sends {review.comments.length === 1 ? "it" : "them"} to the
              agent; approving leaves {review.comments.length === 1 ? "it" : "them"} unsent.{" "}
            </>
          )}
          {unadded.length > 0 && <Unadded files={unadded} />}
          {typedFeedback && <TypedFeedback text={typedFeedback} decision="approving" />}
          <Unconfirmed audit={review.audit} criteria={review.criteria.filter((c) => !letGo.includes(c.id))} />
        </KeepOrGo>
      )}
      {confirmFeedbackReject && (
        <KeepOrGo
          title="Reject without sending your feedback?"
          testid="confirm-feedback-reject"
          returnTo={rejectButton}
          keep="Go back to it"
          onKeep={() => {
            setConfirmFeedbackReject(false);
            backToFeedback();
          }}
          go="Reject anyway"
          onGo={() => {
            setConfirmFeedbackReject(false);
            rejectNow();
          }}
        >
          <TypedFeedback text={typedFeedback} decision="rejecting" />
        </KeepOrGo>
      )}
      {confirmUnsent && (
        <KeepOrGo
          title="Send without the comment you typed?"
          testid="confirm-unsaved"
          returnTo={sendButton}
          keep="Go back to it"
          onKeep={() => {
            setConfirmUnsent(false);
            backToUnadded();
          }}
          go="Send without it"
          onGo={() => {
            setConfirmUnsent(false);
            void decide("request_changes");
          }}
        >
          <Unadded files={unadded} /> Press Comment under it to send it with your feedback.
        </KeepOrGo>
      )}
      {confirmReject && worktree && (
        <ConfirmDiscard
          rejecting
          approvedBefore={approvedBefore}
          branch={worktree.branch}
          dropped={typedFeedback ? <TypedFeedback text={typedFeedback} decision="rejecting" /> : undefined}
          onKeep={() => {
            setConfirmReject(false);
            if (typedFeedback) backToFeedback();
          }}
          onDiscard={() => {
            setConfirmReject(false);
            void decide("reject");
          }}
        />
      )}
    </section>
  );
}

/**
 * A question before a decision that would leave something of the person's behind: the safe
 * answer first and focused (Esc gives it too), the decision second.
 */
function KeepOrGo(props: {
  title: string;
  testid: string;
  returnTo: RefObject<HTMLButtonElement | null>;
  keep: string;
  onKeep: () => void;
  go: string;
  onGo: () => void;
  children: ReactNode;
}) {
  const body = `${props.testid}-body`;
  return (
    <AlertDialog title={props.title} testid={props.testid} onEscape={props.onKeep} describedBy={body} returnTo={props.returnTo}>
      <p id={body}>{props.children}</p>
      <div className="actions">
        <button autoFocus className="btn primary" onClick={props.onKeep} data-testid={`${props.testid}-keep`}>
          {props.keep}
        </button>
        <button className="btn" onClick={props.onGo} data-testid={`${props.testid}-go`}>
          {props.go}
        </button>
      </div>
    </AlertDialog>
  );
}

/** The question before approving: what would go unsent first, then what would be accepted unchecked. */
export function approveQuestion(verb: string, unsent: number, feedback: boolean, audit: number, unmet: number): string {
  // Both dropped: the title said only the comments, and the feedback typed went with them.
  if (unsent > 0) return `${verb} without sending your comment${unsent === 1 ? "" : "s"}${feedback ? " and feedback" : ""}?`;
  if (feedback) return `${verb} without sending your feedback?`;
  if (audit > 0) return `${verb} with ${audit === 1 ? "1 change that weakens" : `${audit} changes that weaken`} the checks?`;
  return `${verb} with ${unmet} of your comments not confirmed met?`;
}

/** The audit's findings and the comments not confirmed met that approving accepts, named (a few). */
function Unconfirmed({ audit, criteria }: { audit: AuditFinding[]; criteria: Review["criteria"] }) {
  const few = (items: string[]) => (items.length > 3 ? `${items.slice(0, 3).join("; ")}; and ${items.length - 3} more` : items.join("; "));
  const unmet = criteria.filter((c) => c.state !== "met");
  return (
    <>
      {audit.length > 0 && (
        <>
          {" "}
          The audit found: {few(audit.map((f) => `${(AUDIT_LABEL[f.rule] ?? f.rule).toLowerCase()} at ${f.path}${f.line ? `:${f.line}` : ""}`))}. Approving accepts{" "}
          {audit.length === 1 ? "it" : "them"} as {audit.length === 1 ? "it is" : "they are"}.
        </>
      )}
      {unmet.length > 0 && <> Not confirmed met: {few(unmet.map((c) => c.text))}.</>}
    </>
  );
}

/** What a comment typed but not added is, and where. */
function Unadded({ files }: { files: string[] }) {
  return (
    <>
      You typed a comment on {files.length === 1 ? <code>{files[0]}</code> : `${files.length} files (${files.join(", ")})`} but did not add it: it is not sent, and
      goes nowhere if you decide now.
    </>
  );
}

/** Feedback typed and not sent, quoted (cut short) so the person knows which words would go. */
function TypedFeedback({ text, decision }: { text: string; decision: "approving" | "rejecting" }) {
  const shown = text.length > 200 ? `${text.slice(0, 200)}…` : text;
  return (
    <>
      You typed feedback that only Request changes sends: “{shown}”. {decision === "approving" ? "Approving" : "Rejecting"} drops it.
    </>
  );
}

/** Paths for a sentence: the first ten, then how many more (a copied node_modules/ is thousands). */
function few(list: string[], named = 10): string {
  return list.length <= named ? list.join(", ") : `${list.slice(0, named).join(", ")} and ${list.length - named} more`;
}

/** The entries .gitignore hides that no copy has handled yet (a folder once any file of it was). */
function uncopied(review: Review): string[] {
  const done = review.ignoredCopied ?? { copied: [], left: [], failed: [] };
  const handled = (entry: string) => [...done.copied, ...done.left].some((f) => f === entry || (entry.endsWith("/") && f.startsWith(entry)));
  return (review.notLanded ?? []).filter((entry) => !handled(entry));
}

/** What the task wrote that .gitignore hides: named (it never lands), and each entry can be
 * copied into the person's checkout before the worktree goes; nothing there is overwritten. */
function NotLanded({ review, busy, onBusy }: { review: Review; busy: boolean; onBusy: (busy: boolean) => void }) {
  const [copying, setCopying] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const box = useRef<HTMLDivElement>(null);
  const done = review.ignoredCopied ?? { copied: [], left: [], failed: [] };
  const open = review.decided ? [] : uncopied(review);
  const copy = async (entry: string) => {
    setCopying(entry);
    onBusy(true); // no decision removes the worktree while it is copied from
    setError(null);
    try {
      await ipc.copyIgnored(review.reviewId, [entry]);
      // The pressed button goes with its entry: the focus stays in the box, unless the person
      // took it elsewhere meanwhile.
      const at = document.activeElement;
      if (at === null || at === document.body || box.current?.contains(at)) box.current?.focus();
    } catch (e) {
      setError((e as AppError).message);
    } finally {
      setCopying(null);
      onBusy(false);
    }
  };
  return (
    <div className="panel callout small" data-testid="review-not-landed" ref={box} tabIndex={-1}>
      {open.length > 0 ? (
        <>
          <p>Also written: your .gitignore hides these, or they were copied in from your checkout at the start, so they never land and go with the task's worktree unless you copy them.</p>
          <ul className="not-landed">
            {open.map((entry) => (
              <li key={entry}>
                <code>{entry}</code>
                <button className="btn small" onClick={() => void copy(entry)} disabled={copying !== null || busy} aria-label={`Copy ${entry} into your checkout`} title="A file of yours already there is left as it is">
                  {copying === entry ? "Copying…" : "Copy into your checkout"}
                </button>
              </li>
            ))}
          </ul>
        </>
      ) : (
        <p>Also written, and never landed (your .gitignore hides them, or they were copied in from your checkout): {review.notLanded!.join(", ")}</p>
      )}
      {(done.copied.length > 0 || done.left.length > 0 || done.failed.length > 0) && (
        <p role="status" data-testid="ignored-copied">
          {[
            done.copied.length > 0 && `Copied into your checkout: ${few(done.copied)}.`,
            done.left.length > 0 && `Left as it was, already in your checkout: ${few(done.left)}.`,
            done.failed.length > 0 && `Not copied: ${few(done.failed)}.`,
          ]
            .filter(Boolean)
            .join(" ")}
        </p>
      )}
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
    </div>
  );
}

/** The waiting review's files not as its run left them, while `looking`: asked when the review
 * opens and each time the window comes back (the person may have edited one meanwhile). */
function useChangedSinceRun(reviewId: string, looking: boolean): ChangedSinceRun[] {
  const [drifted, setDrifted] = useState<ChangedSinceRun[]>([]);
  useEffect(() => {
    if (!looking) {
      setDrifted([]);
      return;
    }
    let live = true;
    const look = () =>
      ipc.changedSinceRun(reviewId).then(
        (d) => live && setDrifted(d ?? []),
        () => {},
      );
    void look();
    window.addEventListener("focus", look);
    return () => {
      live = false;
      window.removeEventListener("focus", look);
    };
  }, [reviewId, looking]);
  return drifted;
}

/** Whose work a revert would undo in `path`, when another task in the folder changed it too:
 * not the person's edit, as the question's general words would have it. */
function TheirWork({ path, others, named = false }: { path: string; others: OtherTasksFile[]; named?: boolean }) {
  const titles = others.filter((o) => o.path === path).map((o) => `“${o.title}”`);
  if (titles.length === 0) return null;
  return (
    <span className="muted small" data-testid="other-task-file">
      {" "}
      ({named ? `${path}: ` : ""}
      {titles.length === 1 ? "another task changed it too" : "other tasks changed it too"}: {titles.join(", ")}; it may hold {titles.length === 1 ? "that task's" : "their"} work, which would go)
    </span>
  );
}

/** A task rejected in the person's folder without undoing its changes: they stay, said so, and
 * can be undone from here later, with the same care as Reject's revert (a file changed since
 * the agent is kept unless the person says to overwrite it too). */
function UndoLater({ sessionId, files, earlierRounds }: { sessionId: string; files: number; earlierRounds: boolean }) {
  const [conflicts, setConflicts] = useState<string[] | null>(null);
  const [otherTasks, setOtherTasks] = useState<OtherTasksFile[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const undo = async (overwrite?: string[]) => {
    setBusy(true);
    setError(null);
    try {
      const out = await ipc.revertRejected(sessionId, overwrite);
      // Done, the summary arrives as an event and replaces this box.
      setConflicts(out.outcome === "needs_confirmation" ? out.conflicts : null);
      setOtherTasks(out.outcome === "needs_confirmation" ? (out.other_tasks ?? []) : []);
    } catch (e) {
      setError((e as AppError).message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <div className="notice" role="status" data-testid="undo-later">
      <p>
        {earlierRounds
          ? "What the task changed in its rounds since your last approval stays in your folder."
          : `What the task changed stays in your folder (${files} ${files === 1 ? "file" : "files"}).`}{" "}
        <button className="btn" disabled={busy} onClick={() => void undo()} data-testid="undo-later-button">
          Undo its changes
        </button>
      </p>
      {conflicts && (
        <p data-testid="undo-later-conflicts">
          {/* Asked before anything is undone: nothing is, yet. */}
          Nothing is undone yet: {conflicts.join(", ")} changed after the agent (your edits, or another task's).
          {conflicts.map((c) => (
            <TheirWork key={c} path={c} others={otherTasks} named />
          ))}{" "}
          <button className="btn" disabled={busy} onClick={() => void undo([])} data-testid="undo-later-keep">
            Undo the rest, keeping {conflicts.length === 1 ? "it" : "them"}
          </button>{" "}
          <button className="btn danger" disabled={busy} onClick={() => void undo(conflicts)} data-testid="undo-later-overwrite">
            Overwrite {conflicts.length === 1 ? "it" : "them"} too
          </button>
        </p>
      )}
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
    </div>
  );
}

/** What the person wrote with Request changes at the review before: this round answers it, and
 * the evaluator's word above judged the run with it. As written, line breaks kept; only text. */
function AskedBefore({ words, judged }: { words?: string; judged: boolean }) {
  if (!words) return null;
  return (
    <>
      <h3>What you asked at your last review</h3>
      <blockquote className="person-words asked-before" data-testid="review-asked">
        {words}
      </blockquote>
      {/* Beside comments that each get a mark, words with none read as checked by one. */}
      <p className="muted small" data-testid="review-asked-judged">
        {judged ? "No mark of its own: the evaluator judged this round with it (its word is above)." : "No mark of its own, and the evaluator gave no word at the end: see in the diff whether it was done."}
      </p>
    </>
  );
}

/** The person's comments from the last review as criteria, with the judge's word on each: kept
 * once the review is decided, as the record of what became of them (then one nobody could check
 * no longer asks the person to check it). */
function Checklist({
  criteria,
  decided = false,
  letGo = [],
  onLetGo,
  asked = () => false,
  letGoWords = [],
}: {
  criteria: Review["criteria"];
  decided?: boolean;
  letGo?: string[];
  onLetGo?: (id: string) => void;
  /** Asked again by a comment on this review: nothing to let go. */
  asked?: (c: { text: string }) => boolean;
  /** Decided: the comments the person let go with it, as the record names them. */
  letGoWords?: string[];
}) {
  if (criteria.length === 0) return null;
  return (
    <>
      {/* Not "from the last review": one not met goes on from the review it was made in. */}
      <h3>Your comments on the diff</h3>
      <ul className="criteria" data-testid="review-criteria">
        {criteria.map((c) => (
          <li key={c.id} data-state={c.state} data-testid="criterion">
            <span className={`tag criterion-${c.state}`}>{c.state === "met" ? "✓ met" : c.state === "unmet" ? "✗ not met" : "? not verifiable"}</span>{" "}
            {/* One block beside the tag, so a long comment wraps under its own words, not under the tag. */}
            <span>
              {c.text}
              <span className="muted small">
                {" "}
                — {c.evidence}
                {c.state === "unverifiable" && !decided ? ": check it yourself" : ""}
              </span>
              {decided && letGoWords.includes(c.text) && <span className="let-go-note"> — you let it go</span>}
              {/* One found not met goes on with Request changes, unless the person lets it go. */}
              {c.state === "unmet" && onLetGo && !asked(c) && (
                <>
                  {letGo.includes(c.id) && <span className="let-go-note"> — let go: not sent with your request, nor checked again</span>}{" "}
                  <button
                    type="button"
                    className="link-btn"
                    onClick={() => onLetGo(c.id)}
                    aria-label={letGo.includes(c.id) ? `Keep asking: ${c.text}` : `Let it go: ${c.text}`}
                    data-testid="criterion-let-go"
                  >
                    {letGo.includes(c.id) ? "Keep asking" : "Let it go"}
                  </button>
                </>
              )}
            </span>
          </li>
        ))}
      </ul>
    </>
  );
}

/** The diff a decided review showed, folded in its record in the timeline: History keeps what
 * was rejected or landed readable after its worktree and branch are gone. Read only. */
export function DecidedDiff({ reviewId, files, comments = [], round = false }: { reviewId: string; files: FileChange[]; comments?: ReviewComment[]; round?: boolean }) {
  const [open, setOpen] = useState(false);
  if (files.length === 0) return null;
  return (
    <details
      className="decided-diff"
      onToggle={(e) => {
        const el = e.currentTarget;
        setOpen(el.open);
        // Opened low in the timeline it would unfold under the pinned panel: its top comes up.
        if (el.open) requestAnimationFrame(() => el.scrollIntoView?.({ block: "start" }));
      }}
      data-testid="decided-diff"
    >
      <summary className="muted small">
        {/* After Request changes the review showed one round: what landed may be more. */}
        {round ? "This round's diff" : "Its diff"} ({files.length} file{files.length === 1 ? "" : "s"}
        {comments.length > 0 ? `, ${comments.length} comment${comments.length === 1 ? "" : "s"}` : ""})
      </summary>
      {open && (
        <Suspense fallback={<p className="muted">Loading the diff…</p>}>
          <DiffView files={files} reviewId={reviewId} comments={comments} editable={false} />
        </Suspense>
      )}
    </details>
  );
}

/** A decided review as the timeline keeps it: who decided, and what a revert undid and left. */
/** The decision's headline. "Let the agent resolve it" is answered as request changes, but the
 * words sent were Finishline's, not the person's; an attempt not chosen was set aside, not refused. */
export function decisionWord(decision: string, occasion?: DecisionOccasion): string {
  if (occasion === "resolve_landing") return "Sent back to resolve the landing";
  if (occasion === "another_attempt_chosen") return "Not chosen";
  return { approve: "Approved", reject: "Rejected" }[decision] ?? "Changes requested";
}

/** Who decided: the person, or with nobody looking auto-approve (of a verified completion) or a
 * dry run's reject (the CLI's `--review reject`). */
function decider(decision: string, by: string): string {
  if (by !== "auto") return "you";
  return decision === "approve" ? "auto-approve" : "a dry run (--review reject), with nobody looking";
}

export function decisionText({ decision, by, occasion, reverted, copied }: { decision: string; by: string; occasion?: DecisionOccasion; reverted?: Reverted; copied?: string[] }): string {
  let text =
    occasion === "resolve_landing"
      ? "You let the agent resolve the landing."
      : occasion === "another_attempt_chosen"
        ? "Not chosen: you landed another attempt of this task."
        : occasion === "every_attempt_rejected"
          ? `${decisionWord(decision)} by ${decider(decision, by)}, with every other attempt of this task.`
          : occasion === "other"
            ? `${decisionWord(decision)}, on an occasion a later version of Finishline recorded.`
            : `${decisionWord(decision)} by ${decider(decision, by)}.`;
  if (copied && copied.length > 0) text += ` Copied into your checkout: ${few(copied)}.`;
  if (reverted) {
    const files = [...reverted.restored, ...reverted.deleted];
    text += files.length > 0 ? ` The agent's changes were undone: ${revertSummary(reverted)} (${files.join(", ")}).` : ` ${undoneText(reverted)}`;
    if (changedSince(reverted).length > 0) text += ` Left as they were, because they changed after the agent: ${changedSince(reverted).join(", ")}.`;
    for (const n of reverted.notCopied) text += ` ${notCopiedText(n)}`;
    for (const c of reverted.copies) text += ` ${copyText(c)} ${c.copy}.`;
  }
  return text;
}

/** Why a task's changes cannot be shown or undone: its folder was not recorded while it worked. */
const UNRECORDED =
  "The task worked while its folder could not be recorded (checkpoints were off or failed), so what it changed is not shown here and cannot be told from your own work: Reject cannot undo it. Look at the folder yourself.";

/** Why a revert kept a copy of what it replaced, up to where the copy is. */
function copyText(c: OverwrittenCopy): string {
  return c.unattributed
    ? `${c.path} changed while a command or an external agent was at work, so an edit of yours then would look like the agent's: a copy of it as it was before the revert is kept at`
    : `Your version of ${c.path}, which the revert replaced or removed as you said, is kept at`;
}

/** More copies than this of files changed while a command ran are said in one sentence (the engine's `COPIES_NAMED`). */
const COPIES_NAMED = 3;

/**
 * What to say of each copy a revert kept, and where it is; copies of files changed while a command
 * ran (a build or an install may make thousands) in one sentence naming a few and the folder that
 * holds them all, as the engine's `copies_words` does.
 */
function copyGroups(copies: OverwrittenCopy[]): { text: string; where: string }[] {
  const each = (c: OverwrittenCopy) => ({ text: copyText(c), where: c.copy });
  const unattributed = copies.filter((c) => c.unattributed);
  const named = copies.filter((c) => !c.unattributed).map(each);
  if (unattributed.length <= COPIES_NAMED) return [...named, ...unattributed.map(each)];
  const some = unattributed
    .slice(0, COPIES_NAMED)
    .map((c) => c.path)
    .join(", ");
  const text = `${unattributed.length} files (${some} and ${unattributed.length - COPIES_NAMED} more) changed while a command or an external agent was at work, so an edit of yours then would look like the agent's: copies of them as they were before the revert are kept in`;
  return [...named, { text, where: holdingFolder(unattributed.map((c) => c.copy)) }];
}

/** The innermost folder that holds every one of `files`. */
function holdingFolder(files: string[]): string {
  let common = files[0].split("/").slice(0, -1);
  for (const f of files.slice(1)) {
    const parts = f.split("/");
    let i = 0;
    while (i < common.length && i < parts.length - 1 && common[i] === parts[i]) i++;
    common = common.slice(0, i);
  }
  return common.join("/") || "/";
}

/** The files a revert left because they changed after the agent, and were not ones it was told to overwrite. */
function changedSince(reverted: Reverted): string[] {
  return reverted.kept.filter((k) => !reverted.notCopied.some((n) => n.path === k));
}

/** Why a file the person said to overwrite was left (the engine's `not_copied_words`). */
function notCopiedText(n: NotCopied): string {
  return `${n.path} was not overwritten: no copy of your version could be kept first (${n.reason}).`;
}

/** What a revert did, in one sentence; the panel and the timeline's record say it alike. */
export function undoneText(reverted: Reverted): string {
  if (reverted.restored.length + reverted.deleted.length > 0) return `The agent's changes were undone: ${revertSummary(reverted)}.`;
  return reverted.kept.length > 0 ? "Nothing was undone." : "Nothing needed undoing: the files were already as the task found them.";
}

/** "2 files restored, 1 deleted", as the CLI and the export say it. */
export function revertSummary({ restored, deleted }: { restored: string[]; deleted: string[] }): string {
  const files = (n: number) => (n === 1 ? "1 file" : `${n} files`);
  if (!restored.length && !deleted.length) return "no file needed restoring";
  if (!deleted.length) return `${files(restored.length)} restored`;
  if (!restored.length) return `${files(deleted.length)} deleted`;
  return `${files(restored.length)} restored, ${deleted.length} deleted`;
}
