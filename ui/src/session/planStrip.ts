// What the progress strip says of a plan, and what Resume does with a plan that stopped: pure,
// from the engine's folded plan, so the words follow the engine's moves (see the engine's
// `Run::go_on_after_step`: after a step that ended, the next step, a revision or the final check).
import type { PlanView } from "./model";

export interface PlanStrip {
  /** The strip's words. */
  text: string;
  /** What Resume does now, when the plan stopped and a Resume would go on with it. */
  resume?: string;
}

/** "n/m" of step `index`, counted over the current plan as the engine counts it (replaced steps
 * left out). */
function numberOf(plan: PlanView, index: number): string {
  const live = plan.steps.map((s, i) => (s.state === "replaced" ? -1 : i)).filter((i) => i >= 0);
  return `${live.indexOf(index) + 1}/${live.length}`;
}

/** "1", "1 and 3", "1, 3 and 4". */
export const andList = (items: string[]) => (items.length < 2 ? items.join("") : `${items.slice(0, -1).join(", ")} and ${items[items.length - 1]}`);

/** "step 2" or "steps 2 and 4": the failed steps a revision took over, which the count of steps
 * done leaves out while the lists still number them; empty when there are none. */
export function failedAndTakenOver(plan: PlanView): string {
  const numbers = plan.steps.flatMap((s, i) => (s.superseded ? [numberOf(plan, i).split("/")[0]] : []));
  return numbers.length === 0 ? "" : `${numbers.length === 1 ? "step" : "steps"} ${andList(numbers)}`;
}

/** The strip's words for `plan`; `running`: a run of the session is at work now. */
export function planStrip(plan: PlanView, running: boolean): PlanStrip | null {
  // Its review panel says it all.
  if (plan.awaitingReview) return null;
  if (plan.declined) {
    return {
      text: "Plan cancelled before it ran",
      resume: "Resume brings the plan back for your go-ahead. A note instead runs the task as one run, without the plan.",
    };
  }
  if (plan.number === undefined || plan.current === undefined) return null;
  const counted = plan.steps.filter((s) => s.state !== "replaced" && !s.superseded);
  if (plan.concluded) {
    // The panel lists a failed step a revision took over; the count leaves it out, and says why.
    const failed = failedAndTakenOver(plan);
    const why = failed ? ` · revised after ${failed} failed` : "";
    return { text: `Plan: ${counted.filter((s) => s.state === "done").length}/${counted.length} steps done${why}` };
  }
  const at = plan.steps[plan.current];
  if (!at) return null;
  const here = `Step ${numberOf(plan, plan.current)}`;
  if (at.state === "running" || at.state === "pending") {
    return { text: `${here}: ${at.step.title}`, resume: running ? undefined : `Resume goes on with step ${numberOf(plan, plan.current)}: ${at.step.title}.` };
  }
  // The step ended and the plan's next move was not made yet (or is being made now).
  const next = plan.steps.findIndex((s, i) => i > plan.current! && s.state === "pending");
  if (at.state === "failed") {
    return running
      ? { text: `${here} failed · the plan is being revised` }
      : { text: `Stopped after ${here.toLowerCase()} failed`, resume: "Resume has the plan revised after the failed step (or, if it may not be revised again, brings it to your review)." };
  }
  if (next >= 0) {
    const then = `step ${numberOf(plan, next)}: ${plan.steps[next].step.title}`;
    return running ? { text: `${here} done · starting ${then}` } : { text: `Stopped after ${here.toLowerCase()}`, resume: `Resume goes on with ${then}.` };
  }
  return running
    ? { text: `${here} done · final check of the whole task` }
    : { text: `Stopped after ${here.toLowerCase()}, the last`, resume: "Resume makes the plan's final check of the whole task, then brings it to your review." };
}
