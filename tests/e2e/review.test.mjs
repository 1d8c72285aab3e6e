// The review gate and History in the real window: request changes then approve, reject with
// revert, permission prompts allowed and denied, search, replay and export.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { clickAway, shot, typeInto, waitForScreen, waitStatus as waitStatusIn } from "./app.mjs";
import { appWindow } from "./window.mjs";

const win = appWindow({ scenario: "e2e-review.json", port: 4480, name: "review" });

const { testid } = win;

async function startTask(task, files = {}) {
  const ws = mkdtempSync(path.join(tmpdir(), "finishline-ws-"));
  for (const [name, content] of Object.entries(files)) writeFileSync(path.join(ws, name), content);
  await clickAway(await testid("nav-new"));
  await waitForScreen(win.app, "new-task-form");
  await typeInto(win.app, await testid("workspace-path"), ws);
  await typeInto(win.app, await testid("task-input"), task);
  await clickAway(await testid("run"));
  await (await testid("session-view")).waitForDisplayed({ timeout: 10_000 });
  return ws;
}

const waitStatus = (status) => waitStatusIn(win.app, status, 20_000);

test("request changes starts a second run, then approve completes", async () => {
  const ws = await startTask("write keep.txt");
  await (await testid("review-panel")).waitForDisplayed({ timeout: 20_000 });
  // The review's buttons stay put whether what is above them fits the dock or overflows it (as
  // the diff arriving makes it): they moved 28 px, and a click aimed as the review first showed
  // landed where they had been.
  await (await testid("file-change")).waitForDisplayed({ timeout: 10_000 });
  const at = await win.app.execute(() => {
    // A timeline longer than the window, read to its end, as a session's is by the time it asks.
    const spacer = document.createElement("div");
    spacer.style.height = "2000px";
    document.querySelector('[data-testid="timeline"]').append(spacer);
    const main = document.querySelector("main");
    main.scrollTop = main.scrollHeight;
    const panel = document.querySelector('[data-testid="review-panel"]');
    const button = () => document.querySelector('[data-testid="request-changes"]').getBoundingClientRect().top;
    const dock = document.querySelector('[data-testid="bottom-bar"]');
    const hide = document.createElement("style");
    hide.textContent = '[data-testid="review-panel"] > :not(h2, .review-actions) { display: none !important; }';
    document.head.append(hide);
    const fits = { top: button(), overflows: dock.scrollHeight > dock.clientHeight };
    hide.remove();
    const tall = document.createElement("div");
    tall.style.height = "900px";
    panel.prepend(tall);
    const over = { top: button(), overflows: dock.scrollHeight > dock.clientHeight };
    tall.remove();
    spacer.remove();
    return { fits, over };
  });
  assert.ok(!at.fits.overflows && at.over.overflows, `the two states were made: ${JSON.stringify(at)}`);
  assert.ok(Math.abs(at.fits.top - at.over.top) <= 1, `Request changes stays where it was: ${JSON.stringify(at)}`);
  // Clicked until its box opens: a click as the review first shows can land while its diff is
  // still filling the dock (one full CI run lost it so).
  await win.app.waitUntil(
    async () => {
      if (await (await testid("feedback-input")).isDisplayed()) return true;
      await clickAway(await testid("request-changes"));
      return (await testid("feedback-input")).isDisplayed();
    },
    { timeout: 10_000, interval: 500, timeoutMsg: "Request changes never opened its box" },
  );
  await typeInto(win.app, await testid("feedback-input"), "also write c.txt");
  await clickAway(await testid("send-feedback"));
  await win.app.waitUntil(async () => (await win.app.$$('[data-testid="user-bubble"]')).length === 2, { timeout: 20_000, timeoutMsg: "the feedback never showed as the person's message" });
  const bubbles = await win.app.$$('[data-testid="user-bubble"]');
  assert.match(await bubbles[1].getText(), /also write c\.txt/, "feedback is the person's own message");
  await (await testid("review-panel")).waitForDisplayed({ timeout: 20_000 });
  await waitStatus("awaiting_review");
  assert.equal(readFileSync(path.join(ws, "c.txt"), "utf8"), "C");
  const asked = await testid("review-asked");
  await asked.waitForDisplayed({ timeout: 10_000 });
  assert.match(await asked.getText(), /also write c\.txt/, "the review answering the request shows what was asked");
  await clickAway(await testid("approve"));
  await waitStatus("completed");
});

test("reject with revert restores the workspace", async () => {
  const ws = await startTask("write keep.txt", { "keep.txt": "original" });
  await (await testid("review-panel")).waitForDisplayed({ timeout: 20_000 });
  assert.equal(readFileSync(path.join(ws, "keep.txt"), "utf8"), "changed by the agent");
  assert.equal(await (await testid("revert-checkbox")).isSelected(), false, "a reject keeps the files unless the person ticks the revert");
  await clickAway(await testid("revert-checkbox"));
  assert.equal(await (await testid("revert-checkbox")).isSelected(), true);
  await clickAway(await testid("reject"));
  await waitStatus("rejected");
  // The decision is recorded before the files are put back (so a crash in between finishes the
  // revert at the next start); the window says what was undone once it is done.
  const summary = await testid("revert-summary");
  await summary.waitForDisplayed({ timeout: 10_000 });
  assert.match(await summary.getText(), /1 file restored/, "the window says what the revert did, where the buttons were");
  assert.equal(readFileSync(path.join(ws, "keep.txt"), "utf8"), "original", "the agent's change is undone");
});

test("a task cancelled after it wrote is reviewed as it ended, and its reject puts the file back", async () => {
  const ws = await startTask("write slow.txt and ponder", { "slow.txt": "original" });
  const file = path.join(ws, "slow.txt");
  await win.app.waitUntil(async () => readFileSync(file, "utf8") === "by the agent", { timeout: 20_000, timeoutMsg: "the agent wrote slow.txt" });
  await clickAway(await testid("cancel"));
  await waitStatus("cancelled");
  // Its change waits in the person's folder: reviewed as it is, with no model asked.
  const offer = await testid("review-ended-offer");
  await offer.waitForDisplayed({ timeout: 10_000 });
  assert.match(await offer.getText(), /What it changed stays in your folder undecided/);
  await clickAway(await testid("review-ended"));
  await (await testid("review-panel")).waitForDisplayed({ timeout: 20_000 });
  await (await testid("file-change")).waitForDisplayed({ timeout: 10_000 });
  assert.match(await (await testid("review-panel")).getText(), /slow\.txt/);
  await shot(win.app, "review-as-it-ended");
  await clickAway(await testid("revert-checkbox"));
  await clickAway(await testid("reject"));
  await waitStatus("rejected");
  await (await testid("revert-summary")).waitForDisplayed({ timeout: 10_000 });
  assert.equal(readFileSync(file, "utf8"), "original", "the agent's change is undone");
});

test("a permission prompt allowed runs the command; denied stops the run", async () => {
  const ws = await startTask("use the shell to write shell.txt");
  await (await testid("permission-prompt")).waitForDisplayed({ timeout: 20_000 });
  await waitStatus("awaiting_approval");
  await shot(win.app, "permission");
  await clickAway(await testid("allow-once"));
  await (await testid("review-panel")).waitForDisplayed({ timeout: 20_000 });
  assert.equal(readFileSync(path.join(ws, "shell.txt"), "utf8"), "from-shell\n");
  await clickAway(await testid("approve"));
  await waitStatus("completed");

  const ws2 = await startTask("use the shell to write shell.txt again");
  await (await testid("permission-prompt")).waitForDisplayed({ timeout: 20_000 });
  await clickAway(await testid("deny"));
  await waitStatus("idle");
  assert.match(await (await testid("progress-strip")).getText(), /Permission denied/);
  assert.equal(existsSync(path.join(ws2, "shell.txt")), false, "the denied command did not run");
});

test("History searches, opens a read-only replay, and exports", async () => {
  await clickAway(await testid("nav-history"));
  await (await testid("history-list")).waitForDisplayed({ timeout: 10_000 });
  const all = (await win.app.$$('[data-testid="history-row"]')).length;
  assert.ok(all >= 4, "every session is listed");
  await typeInto(win.app, await testid("history-search"), "shell");
  await (await win.app.$('[data-testid="history"] form button')).click();
  await (await testid("search-summary")).waitForDisplayed({ timeout: 10_000 });
  const rows = await win.app.$$('[data-testid="history-row"]');
  assert.ok(rows.length >= 1 && rows.length < all, `the list narrows to the sessions that mention the shell (${rows.length} of ${all})`);
  assert.ok(await rows[0].$("mark").isExisting(), "its matching passage is shown with the word highlighted");
  await clickAway(await rows[0].$("button.link"));
  const view = await testid("session-view");
  await view.waitForDisplayed({ timeout: 10_000 });
  await (await testid("tool-card")).waitForExist({ timeout: 10_000 });
  assert.equal((await win.app.$$('[data-testid="cancel"]')).length, 0, "a finished session replays without run controls");
  await clickAway(await testid("nav-history"));
  await (await testid("history-list")).waitForDisplayed({ timeout: 10_000 });
  await (await win.app.$('[data-testid="export-md"]')).click();
  const exported = await testid("export-text");
  await exported.waitForDisplayed({ timeout: 5_000 });
  assert.match(await exported.getProperty("textContent"), /^# .*\n\n- \*\*Status:\*\*/, "the Markdown export of the session is shown, ready to save or copy");
  await shot(win.app, "history-export");
});
