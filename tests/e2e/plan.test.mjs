// Plan mode in the real window: the Plan choice in New Task, the plan shown before it runs and
// edited there, the plan panel with each step's state, "Step 2/3" in the progress strip while
// step 2 runs, and the review with each step's outcome.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { clickAway, resizeWindow, shot, typeInto, waitForScreen, statusNow as statusIn, waitStatus as waitStatusIn } from "./app.mjs";
import { appWindow } from "./window.mjs";

// The window's own default (Auto) is what a new user gets; this test picks On itself.
const win = appWindow({ scenario: "e2e-plan.json", port: 4590, name: "plan", settings: { plan_mode: "auto" } });

const { testid } = win;
const text = (id) => win.app.execute((id) => document.querySelector(`[data-testid="${id}"]`)?.textContent ?? null, id);
const stepStates = () => win.app.execute(() => [...document.querySelectorAll('[data-testid="plan-step"]')].map((e) => e.getAttribute("data-state")));

test("a task run with Plan On: the plan is edited before it runs, shows Step 2/3 while step 2 runs, and each step's outcome at review", async () => {
  await waitForScreen(win.app, "new-task-form");
  assert.equal(await (await testid("plan-auto")).isSelected(), true, "Auto is the window's default plan choice");
  const ws = mkdtempSync(path.join(tmpdir(), "finishline-ws-plan-"));
  await typeInto(win.app, await testid("workspace-path"), ws);
  await typeInto(win.app, await testid("task-input"), "write a.txt, b.txt and c.txt");
  await (await testid("plan-label-on")).click();
  assert.equal(await (await testid("plan-on")).isSelected(), true, "clicking On picks it");
  assert.match(await text("plan-choice"), /Always split the task into checked steps/);
  await clickAway(await testid("run"));
  await (await testid("session-view")).waitForDisplayed({ timeout: 10_000 });

  // The plan waits for the person (the window's default): one criterion is added to step 3.
  await (await testid("plan-review")).waitForDisplayed({ timeout: 15_000 });
  assert.equal((await win.app.$$('[data-testid="plan-edit-step"]')).length, 3, "the manager's three steps are shown to edit");
  assert.equal(await statusIn(win.app), "awaiting_approval", "nothing runs before the go-ahead");
  await shot(win.app, "plan-review-before-run");
  // In a short window the plan's buttons stay in view, and only its list of steps scrolls: not a
  // scroll area inside a scroll area.
  const restore = await resizeWindow(win.app, 1000, 620);
  try {
    const short = await win.app.execute(() => {
      const bar = document.querySelector('[data-testid="bottom-bar"]');
      const scrollers = [bar, ...bar.querySelectorAll("*")].filter((e) => /(auto|scroll)/.test(getComputedStyle(e).overflowY) && e.scrollHeight > e.clientHeight + 1);
      const inView = (id) => {
        const r = document.querySelector(`[data-testid="${id}"]`).getBoundingClientRect();
        return r.top >= 0 && r.bottom <= window.innerHeight;
      };
      const list = document.querySelector(".plan-edit");
      const title = document.querySelector('[data-testid="plan-edit-title"]').getBoundingClientRect();
      return {
        scrollers: scrollers.map((e) => e.className),
        run: inView("plan-run"),
        cancel: inView("plan-cancel"),
        add: inView("plan-edit-add"),
        firstStep: document.querySelector('[data-testid="plan-edit-step"]').getBoundingClientRect().bottom - list.getBoundingClientRect().bottom,
        // The focus ring is drawn 4 px around a field: the list's edge must not cut it.
        ringRoom: list.scrollTop === 0 ? title.top - 4 - list.getBoundingClientRect().top : null,
      };
    });
    await shot(win.app, "plan-review-short-window");
    assert.deepEqual(short.scrollers, ["plan-edit"], "only the list of steps scrolls");
    assert.ok(short.firstStep <= 0, `a whole step shows, its title, instructions and criteria (${short.firstStep} px cut): the transcript above has little to say yet`);
    assert.ok(short.ringRoom >= 0, `the first step's title shows its whole focus ring (${short.ringRoom} px)`);
    assert.deepEqual([short.run, short.cancel, short.add], [true, true, true], "Run plan, Cancel task and Add step are in view");
  } finally {
    await restore();
  }
  const criteria = (await win.app.$$('[data-testid="plan-edit-criteria"]'))[2];
  await criteria.click();
  await win.app.keys(["End"]);
  await win.app.keys(["Enter"]);
  await criteria.addValue("c.txt is not empty");
  await (await testid("plan-run")).click();

  // Step 2's model answer is held back for a moment: the strip says where the plan is.
  await win.app.waitUntil(async () => /Step 2\/3: Write b\.txt/.test((await text("plan-progress")) ?? ""), { timeout: 20_000, timeoutMsg: "the progress strip never showed Step 2/3" });
  assert.deepEqual(await stepStates(), ["done", "running", "pending"], "the plan panel shows step 1 done and step 2 running");
  await shot(win.app, "plan-step-2");

  await waitStatusIn(win.app, "awaiting_review");
  assert.deepEqual(await stepStates(), ["done", "done", "done"]);
  // The budget's meter and its words stand apart ("3 of 107 model calls" ran into the bar), and a
  // step's tick stays on its line's end, not on a line of its own.
  const look = await win.app.execute(() => {
    const meter = document.querySelector('[data-testid="plan-budget"] meter').getBoundingClientRect();
    const words = document.querySelector('[data-testid="plan-budget"] span').getBoundingClientRect();
    const decided = document.querySelector('[data-testid="step-decided-by"]');
    return { gap: words.left - meter.right, decided: decided.textContent };
  });
  assert.ok(look.gap >= 6, `a gap between the meter and its words (${look.gap} px)`);
  assert.match(look.decided, /exists\u00a0✓$/, "the tick is bound to the word before it");
  const panel = await text("plan-panel");
  assert.match(panel, /a\.txt exists/, "each step shows its success criteria");
  assert.match(panel, /c\.txt is not empty/, "the step runs with the criterion the person added");
  assert.match(panel, /Verified done: the file is written/, "each step shows its outcome");
  await (await testid("review-panel")).waitForDisplayed({ timeout: 5_000 });
  assert.match(await text("review-steps"), /3 of 3 done/, "the review shows the plan with each step's outcome");
  assert.match(await text("plan-progress"), /Plan: 3\/3 steps done/, "after the last step the strip sums the plan up");
  await shot(win.app, "plan-review");
  for (const f of ["a.txt", "b.txt", "c.txt"]) assert.ok(existsSync(path.join(ws, f)), `${f} was written by its step`);
  const manager = (await win.fake.requests()).filter((r) => r.kind === "manager").length;
  assert.equal(manager, 1, "one manager call made the plan");
});
