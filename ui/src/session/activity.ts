import { sentence } from "../ipc";

// The session view's status line and an attempt's card (attemptProgress.ts) say it alike.
const PHASE: Record<string, string> = {
  thinking: "Thinking",
  tool: "Running",
  verifying: "Verifying",
  evaluating: "Evaluating",
  compacting: "Compacting",
  checkpointing: "Recording the workspace",
  waiting: "Waiting for you",
};

/** What the run is doing, in words. "Thinking" splits in two: nothing has come back from the
 * model yet (the server is working, or slow), or its answer is streaming in. */
export function activityText(activity: { phase: string; detail: string }, clock?: { chars: number; finishedAt?: number }): string {
  if (activity.phase === "thinking" && clock && clock.finishedAt === undefined) return clock.chars > 0 ? "Writing" : "Waiting for the model";
  // The engine says what is waited for ("a free place: 4 tasks are running", "your review"): a
  // queued task waits for its turn, not for the person.
  // ("a question for you" is how sessions recorded before said "your answer to its question").
  if (activity.phase === "waiting") return activity.detail && activity.detail !== "you" && activity.detail !== "a question for you" ? `Waiting for ${activity.detail}` : PHASE.waiting;
  // The plan's own moves between steps ("revising the plan after step 2"): said, not "Thinking".
  if (activity.detail && activity.phase === "thinking") return sentence(activity.detail);
  const label = PHASE[activity.phase] ?? activity.phase;
  // The evaluator asked again after its server failed: "again (2 of 5): why".
  // (Its words end without a stop: the status line adds "…".)
  if (activity.detail && (activity.phase === "tool" || activity.phase === "evaluating")) return `${label} ${activity.detail.replace(/\.$/, "")}`;
  // The engine's detail is a whole phrase saying how many files are being recorded.
  if (activity.detail && activity.phase === "checkpointing") return sentence(activity.detail);
  return label;
}
