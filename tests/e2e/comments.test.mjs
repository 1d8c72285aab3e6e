// Review that talks back, in the real window: comments on two lines of the diff go back with
// Request changes as Finishline's continuation (with the file, the lines and the quoted code), and
// the next review shows them as a checklist the judge filled in.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { clickAway, resizeWindow, shot, typeInto, waitForScreen } from "./app.mjs";
import { appWindow } from "./window.mjs";

const win = appWindow({ scenario: "e2e-comments.json", port: 4620, name: "comments" });
const { testid } = win;

async function commentOn(line, text, count) {
  const gutter = await win.app.$(`//td[contains(@class,"diff-gutter-insert") and normalize-space(.)="${line}"]`);
  await gutter.waitForExist({ timeout: 10_000 });
  await gutter.click();
  const box = await testid("comment-input");
  await box.waitForDisplayed({ timeout: 5_000 });
  await typeInto(win.app, box, text);
  await clickAway(await testid("save-comment"));
  await win.app.waitUntil(async () => (await win.app.$$('[data-testid="diff-comment"]')).length >= count && (await (await testid("diff-view")).getText()).includes(text), { timeout: 10_000, timeoutMsg: `the comment "${text}" never showed` });
}

/** Starts `task` in a new folder from New Task. */
async function startTask(task) {
  const ws = mkdtempSync(path.join(tmpdir(), "finishline-ws-"));
  await clickAway(await testid("nav-new"));
  await waitForScreen(win.app, "new-task-form");
  await typeInto(win.app, await testid("workspace-path"), ws);
  // What New Task says about the folder shows first; the Run button moves with it.
  await (await testid("workspace-isolation")).waitForDisplayed({ timeout: 10_000 });
  await typeInto(win.app, await testid("task-input"), task);
  await clickAway(await testid("run"));
}

test("comments on two lines go back as a continuation and come back as a checklist", async () => {
  await startTask("write notes.md with two fruits");
  await (await testid("session-view")).waitForDisplayed({ timeout: 10_000 });
  await (await testid("review-panel")).waitForDisplayed({ timeout: 30_000 });
  await (await testid("diff-view")).waitForDisplayed({ timeout: 10_000 });
  await commentOn(1, "say pear instead", 1);
  await commentOn(2, "say plum instead", 2);
  assert.equal((await win.app.$$('[data-testid="diff-comment"]')).length, 2, "both comments are on the diff");
  await shot(win.app, "comments-on-diff");
  assert.match(await (await testid("request-changes")).getText(), /2 comments/);
  // In a 1000 px window the three ways stay on the row beside the option (its words wrap), so
  // the diff keeps its height: on a second row they took a third of what the diff had.
  const restore = await resizeWindow(win.app, 1000, 650);
  try {
    const rows = await win.app.execute(() => {
      const top = (s) => document.querySelector(s).getBoundingClientRect().top;
      const option = document.querySelector('[data-testid="revert-checkbox"]').closest("label").getBoundingClientRect();
      const approve = document.querySelector('[data-testid="approve"]').getBoundingClientRect();
      return { option: [option.top, option.bottom], approve: [approve.top, approve.bottom], reject: top('[data-testid="reject"]') };
    });
    assert.ok(rows.approve[0] < rows.option[1] && rows.option[0] < rows.approve[1], `Approve is on the option's row (${JSON.stringify(rows)})`);
    await shot(win.app, "comments-1000px");
  } finally {
    await restore();
  }
  await clickAway(await testid("request-changes"));
  await clickAway(await testid("send-feedback"));
  const card = await win.app.$('[data-testid="continuation-card"][data-source="review_comments"]');
  await card.waitForExist({ timeout: 20_000 });
  const text = await card.getText();
  assert.match(text, /notes\.md:1/, "the continuation names the file and line");
  assert.match(text, /say pear instead/);
  assert.match(text, /say plum instead/);
  await win.app.waitUntil(async () => (await win.app.$$('[data-testid="criterion"]')).length === 2, { timeout: 30_000, timeoutMsg: "the next review never showed the checklist" });
  const items = await win.app.$$('[data-testid="criterion"]');
  for (const item of items) assert.match(await item.getText(), /✓ met/, "each comment is checked at the next review");
  assert.match(await items[0].getText(), /line 1 reads pear/, "with the evaluator's word on it");
  await shot(win.app, "comments-checklist");
});

test("a comment found not met can be let go: the request goes without it, and the record says so", async () => {
  await startTask("write kiwi.md with a fruit");
  await (await testid("review-panel")).waitForDisplayed({ timeout: 30_000 });
  await (await testid("diff-view")).waitForDisplayed({ timeout: 10_000 });
  await commentOn(1, "say lime instead", 1);
  await clickAway(await testid("request-changes"));
  await clickAway(await testid("send-feedback"));
  // The agent leaves line 1 as it was: the next review finds the comment not met.
  const open = await win.app.$('[data-testid="criterion"][data-state="unmet"]');
  await open.waitForExist({ timeout: 60_000, timeoutMsg: "the next review never showed the comment not met" });
  await clickAway(await open.$('[data-testid="criterion-let-go"]'));
  assert.match(await open.getText(), /let go: not sent with your request/);
  await clickAway(await testid("request-changes"));
  assert.equal(await (await win.app.$('[data-testid="feedback-carried"]')).isExisting(), false, "nothing says it goes with the request");
  assert.match(await (await testid("feedback-let-go")).getText(), /The comment you let go is not sent/);
  await typeInto(win.app, await testid("feedback-input"), "add a fig");
  await shot(win.app, "comments-let-go");
  // From the second review the undo option says "…, from every round of this task": in a 1000 px
  // window its words wrap beside the buttons instead of running on under Reject.
  const restore = await resizeWindow(win.app, 1000, 650);
  try {
    const row = await win.app.execute(() => {
      const label = document.querySelector('[data-testid="revert-checkbox"]').closest("label");
      const words = document.createRange();
      words.selectNodeContents(label);
      const text = words.getBoundingClientRect();
      const reject = document.querySelector('[data-testid="reject"]').getBoundingClientRect();
      return { said: label.textContent.trim(), right: text.right, top: text.top, bottom: text.bottom, rejectLeft: reject.left, rejectTop: reject.top, rejectBottom: reject.bottom };
    });
    assert.match(row.said, /from every round of this task/);
    const sameRow = row.top < row.rejectBottom && row.rejectTop < row.bottom;
    assert.ok(!sameRow || row.right <= row.rejectLeft, `the option's words end before Reject (${JSON.stringify(row)})`);
    await shot(win.app, "comments-let-go-1000px");
  } finally {
    await restore();
  }
  await clickAway(await testid("send-feedback"));
  const record = await win.app.$('[data-testid="let-go-record"]');
  await record.waitForExist({ timeout: 20_000, timeoutMsg: "the decision's record never said what was let go" });
  assert.match(await record.getText(), /Let go, not asked again: kiwi\.md:1: say lime instead/);
  await win.app.waitUntil(async () => (await (await testid("review-end-reason")).getText().catch(() => "")).includes("Verified done") && (await win.app.$$('[data-testid="let-go-record"]')).length === 1, {
    timeout: 30_000,
    timeoutMsg: "the round with the fig never came back for review",
  });
  assert.equal((await win.app.$$('[data-testid="criterion"]')).length, 0, "the comment let go is not judged again");
});

test("a long path in a narrow window wraps beside its badge and keeps Viewed on one line", async () => {
  await startTask("write the exchange rate adapter");
  await (await testid("review-panel")).waitForDisplayed({ timeout: 30_000 });
  await (await testid("diff-view")).waitForDisplayed({ timeout: 10_000 });
  const restore = await resizeWindow(win.app, 900, 700);
  try {
    const head = await win.app.execute(() => {
      const file = document.querySelector('[data-testid="file-change"][data-path*="ExchangeRateAdapter"]');
      const viewed = file.querySelector('[data-testid="file-viewed"]').closest("label");
      const toggle = file.querySelector('[data-testid="file-toggle"]');
      const badge = toggle.querySelector(".kind").getBoundingClientRect();
      const lineHeight = parseFloat(getComputedStyle(viewed).lineHeight) || 20;
      return { viewed: viewed.getBoundingClientRect().height, lineHeight, toggleLeft: toggle.getBoundingClientRect().left, badgeLeft: badge.left, text: viewed.textContent.trim() };
    });
    assert.equal(head.text, "Viewed");
    assert.ok(head.viewed <= head.lineHeight * 1.5, `"Viewed" reads on one line, not a letter or two a line (${JSON.stringify(head)})`);
    assert.ok(head.badgeLeft - head.toggleLeft < 4, `the path starts at the left with its badge, not centred (${JSON.stringify(head)})`);
    await shot(win.app, "comments-long-path-900px");
  } finally {
    await restore();
  }
});
