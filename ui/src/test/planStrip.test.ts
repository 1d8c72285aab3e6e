import { describe, expect, it } from "vitest";
import type { StepState } from "../ipc";
import type { PlanView } from "../session/model";
import { planStrip } from "../session/planStrip";

const step = (title: string, state: StepState, more: Partial<PlanView["steps"][number]> = {}) => ({
  step: { title, instructions: `${title}.`, criteria: [], depends_on: [] },
  state,
  ...more,
});
const plan = (steps: PlanView["steps"], current: number | undefined, more: Partial<PlanView> = {}): PlanView => ({
  mode: "on",
  steps,
  revisions: [],
  current,
  number: current === undefined ? undefined : 1,
  of: steps.length,
  concluded: false,
  spent: 0,
  rounds: 0,
  ...more,
});

describe("the plan's words in the progress strip", () => {
  it("a running step is named with its number over the current plan", () => {
    const p = plan([step("Write a", "done"), step("Old b", "replaced"), step("Write b", "running"), step("Write c", "pending")], 2);
    expect(planStrip(p, true)).toEqual({ text: "Step 2/3: Write b", resume: undefined });
    expect(planStrip(p, false)?.resume, "stopped in a step, Resume goes on in it").toBe("Resume goes on with step 2/3: Write b.");
  });

  it("a plan stopped between its steps says after which, and what Resume does next: it read 'Step 2/3 · Cancelled'", () => {
    const afterDone = plan([step("Write a", "done"), step("Write b", "done"), step("Write c", "pending")], 1);
    expect(planStrip(afterDone, false)).toEqual({ text: "Stopped after step 2/3", resume: "Resume goes on with step 3/3: Write c." });
    expect(planStrip(afterDone, true)?.text, "while the plan moves on").toBe("Step 2/3 done · starting step 3/3: Write c");
    const afterFailed = plan([step("Write a", "done"), step("Write b", "failed")], 1);
    expect(planStrip(afterFailed, false)?.text).toBe("Stopped after step 2/2 failed");
    expect(planStrip(afterFailed, false)?.resume).toMatch(/^Resume has the plan revised after the failed step/);
    expect(planStrip(afterFailed, true)?.text).toBe("Step 2/2 failed · the plan is being revised");
  });

  it("after its last step the plan's final check is named, not 'Step 3/3 · Evaluating'", () => {
    const last = plan([step("Write a", "done"), step("Write b", "done")], 1);
    expect(planStrip(last, true)?.text).toBe("Step 2/2 done · final check of the whole task");
    expect(planStrip(last, false)).toEqual({ text: "Stopped after step 2/2, the last", resume: "Resume makes the plan's final check of the whole task, then brings it to your review." });
  });

  it("a concluded plan counts its steps done, leaving out replaced steps and failed ones a revision took over", () => {
    const p = plan([step("Write a", "done"), step("Write b", "failed", { superseded: true }), step("Fetch b", "done"), step("Old c", "replaced")], 2, { concluded: true });
    // The panel lists three steps, one failed: the strip says why it counts two.
    expect(planStrip(p, false)).toEqual({ text: "Plan: 2/2 steps done · revised after step 2 failed" });
    const twice = plan([step("A", "failed", { superseded: true }), step("B", "done"), step("C", "failed", { superseded: true }), step("D", "done")], 3, { concluded: true });
    expect(planStrip(twice, false)?.text).toBe("Plan: 2/2 steps done · revised after steps 1 and 3 failed");
    const plain = plan([step("Write a", "done"), step("Old b", "replaced"), step("Write b", "done")], 2, { concluded: true });
    expect(planStrip(plain, false)?.text, "a replaced step is not listed as a step at all").toBe("Plan: 2/2 steps done");
  });

  it("a plan cancelled at its go-ahead says so, and that Resume brings it back", () => {
    const p = plan([step("Write a", "skipped"), step("Write b", "skipped")], undefined, { concluded: true, declined: true });
    expect(planStrip(p, false)?.text).toBe("Plan cancelled before it ran");
    expect(planStrip(p, false)?.resume).toMatch(/^Resume brings the plan back for your go-ahead/);
    expect(planStrip(plan([step("Write a", "pending")], undefined, { awaitingReview: true }), false), "a plan waiting for its go-ahead has its own panel").toBeNull();
  });
});
