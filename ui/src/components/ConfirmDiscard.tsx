import { useEffect, useRef, type ReactNode } from "react";
import { AlertDialog } from "./AlertDialog";

/** Asked before a task's worktree goes: a task that ended without a review put away, or a
 * review rejected. What the agent wrote there goes with it. Keeping it is the default (Enter and
 * Esc both keep it). */
export function ConfirmDiscard({
  branch,
  onKeep,
  onDiscard,
  rejecting = false,
  onKeepBranch,
  dropped,
  approvedBefore = false,
}: {
  branch: string;
  onKeep: () => void;
  onDiscard: () => void;
  /** Offered for a discard: the worktree goes, the branch stays with the task's work on it. */
  onKeepBranch?: () => void;
  /** Asked for Reject rather than Discard. */
  rejecting?: boolean;
  /** What else the decision drops (feedback typed and not sent): said in the same question,
   * not in a second one before it. */
  dropped?: ReactNode;
  /** An earlier round of the task was approved: its work landed and stays, which the person
   * rejecting a follow-up may fear goes too. */
  approvedBefore?: boolean;
}) {
  const keep = useRef<HTMLButtonElement>(null);
  useEffect(() => keep.current?.focus(), []);
  const id = rejecting ? "confirm-reject" : "confirm-discard";
  return (
    <AlertDialog title={rejecting ? "Reject this task's work?" : "Discard this task's work?"} testid={id} onEscape={onKeep} describedBy={`${id}-body`}>
      <p id={`${id}-body`}>
        Its worktree and the branch <code>{branch}</code> are removed, with whatever the agent wrote there.
        {/* The engine keeps the branch when the worktree changed after the review (keep_after_review)
            or after the task ended (commit_changed_after_task). */}
        {rejecting ? " If anything changed in the worktree after this review, the branch is kept with it instead." : " If anything changed in the worktree after the task ended (your own edits there), the branch is kept with it instead."} Your checkout is not touched, and History keeps the
        session{rejecting ? " and its diff" : ""}.
        {approvedBefore && " The work you approved in an earlier round stays where it landed: only this round's is removed."}
        {onKeepBranch && !rejecting && <> To keep its work without the worktree, keep only its branch: what the agent wrote is committed on it for a later <code>git merge</code>.</>}
      </p>
      {dropped && <p data-testid={`${id}-dropped`}>{dropped}</p>}
      <div className="actions">
        <button ref={keep} className="btn primary" onClick={onKeep} data-testid={`${id}-keep`}>
          Keep it
        </button>
        {onKeepBranch && !rejecting && (
          <button className="btn" onClick={onKeepBranch} data-testid={`${id}-keep-branch`} title={`Its work is committed on ${branch}, which stays; the worktree is removed`}>
            Keep only its branch
          </button>
        )}
        <button className="btn danger" onClick={onDiscard} data-testid={`${id}-go`}>
          {rejecting ? "Reject and remove it" : "Discard the work"}
        </button>
      </div>
    </AlertDialog>
  );
}
