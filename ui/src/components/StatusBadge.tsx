import { useEffect, useState } from "react";
import type { EndReason, SessionStatus } from "../ipc";
import { answerUnchecked, DISCARDED_TITLE, doubtTitle, END_LABEL, keptBranchTitle, NOT_CHOSEN, reviewInDoubt, SHOWN_LABEL, STATUS_LABEL, UNCHECKED_TITLE } from "../session/model";

/**
 * The session's one status; for `retry`, a countdown to the next attempt. An attempt set aside
 * because the person landed another (`notChosen`) is stored rejected but was never refused. A
 * review of work not verified done says how the run ended (`endReason`), as the sidebar does; one
 * decided with its work left on a branch (`keptBranch`) says so, and one put away with no review
 * (`discarded`) is not called rejected.
 */
export function StatusBadge({
  status,
  nextRetryAt,
  notChosen = false,
  endReason,
  keptBranch,
  discarded = false,
}: {
  status: SessionStatus;
  nextRetryAt?: string;
  notChosen?: boolean;
  endReason?: EndReason;
  keptBranch?: string;
  discarded?: boolean;
}) {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    if (status !== "retry") return;
    const t = setInterval(() => setNow(Date.now()), 250);
    return () => clearInterval(t);
  }, [status]);
  let label = notChosen ? NOT_CHOSEN : STATUS_LABEL[status];
  if (status === "retry" && nextRetryAt) {
    const secs = Math.max(0, Math.ceil((Date.parse(nextRetryAt) - now) / 1000));
    label = `Retrying in ${secs} s`;
  }
  if (keptBranch && !notChosen && (status === "completed" || status === "rejected")) {
    return (
      <span className="badge badge-kept" data-testid="status-badge" data-status={status} title={keptBranchTitle(status, keptBranch, discarded)}>
        {SHOWN_LABEL.branch_kept}
      </span>
    );
  }
  if (discarded && !notChosen && status === "rejected") {
    return (
      <span className="badge badge-cancelled" data-testid="status-badge" data-status={status} title={DISCARDED_TITLE}>
        {SHOWN_LABEL.discarded}
      </span>
    );
  }
  if (answerUnchecked(status, endReason) && !notChosen) {
    // Here as in the sidebar.
    return (
      <span className="badge badge-unchecked" data-testid="status-badge" data-status={status} title={UNCHECKED_TITLE}>
        {SHOWN_LABEL.not_checked}
      </span>
    );
  }
  if (reviewInDoubt(status, endReason)) {
    return (
      <span className={`badge badge-${status} badge-doubt`} data-testid="status-badge" data-status={status} title={doubtTitle(status, endReason)}>
        {/* Said, not only shown on hover: a decision waits. */}
        <span className="sr-only">{STATUS_LABEL[status]}: </span>
        {END_LABEL[endReason]}
      </span>
    );
  }
  return (
    <span className={`badge ${notChosen ? "badge-not-chosen" : `badge-${status}`}`} data-testid="status-badge" data-status={status}>
      {label}
    </span>
  );
}
