// A person runs a task in the real window against the fake provider: streamed steps, a tool
// card, a continuation card that is visibly not theirs, the review gate, approval, History.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { appDataDir, repoRoot, shot, typeInto, waitForScreen, clickAway, waitStatus as waitStatusIn } from "./app.mjs";
import { appWindow } from "./window.mjs";

const win = appWindow({ scenario: "e2e-flow.json", port: 4450, name: "run" });

const $ = (sel) => win.app.$(sel);
const { testid } = win;

test("run a task, follow it, see the continuation card, approve, find it in History", async () => {
  const ws = mkdtempSync(path.join(tmpdir(), "finishline-ws-"));
  await waitForScreen(win.app, "new-task-form");
  await typeInto(win.app, await testid("workspace-path"), ws);
  await typeInto(win.app, await testid("task-input"), "write the two letter files a.txt and b.txt");
  assert.equal(await (await testid("run")).isEnabled(), true, "with a task and a folder, Run is enabled");
  await clickAway(await testid("run"));

  const view = await testid("session-view");
  await view.waitForDisplayed({ timeout: 10_000 });
  const tool = await testid("tool-card");
  await tool.waitForExist({ timeout: 15_000 });
  await shot(win.app, "session-running");

  const card = await $('[data-role="continuation"]');
  await card.waitForExist({ timeout: 20_000 });
  assert.equal(await card.getAttribute("data-source"), "evaluator", "the card names its source");
  const cardText = await card.getText();
  assert.match(cardText, /b\.txt is missing/);
  assert.match(cardText, /continuing \(1\/5\)/);
  for (const bubble of await win.app.$$('[data-role="user"]')) {
    assert.doesNotMatch(await bubble.getText(), /b\.txt is missing/, "no user bubble holds the continuation's text");
  }

  const review = await testid("review-panel");
  await review.waitForDisplayed({ timeout: 20_000 });
  assert.match(await (await testid("review-end-reason")).getText(), /Verified done/);
  // The diff view is loaded with the first review: its files show a moment after the panel.
  await win.app.waitUntil(async () => (await win.app.$$('[data-testid="file-change"]')).length >= 2, { timeout: 10_000 }).catch(() => undefined);
  assert.equal((await win.app.$$('[data-testid="file-change"]')).length, 2, "both created files are listed");
  await review.scrollIntoView();
  await shot(win.app, "review");
  await (await testid("approve")).click();
  await waitStatusIn(win.app, "completed", 10_000);

  assert.equal(readFileSync(path.join(ws, "a.txt"), "utf8"), "A");
  assert.equal(readFileSync(path.join(ws, "b.txt"), "utf8"), "B");

  await (await testid("nav-history")).click();
  const row = await testid("history-row");
  await row.waitForDisplayed({ timeout: 10_000 });
  assert.equal(await row.getAttribute("data-status"), "completed", "History shows the session completed");
  await shot(win.app, "history");

  // Opened from History, it replays: the timeline again from its start, to its end, then the
  // session as it is.
  await (await row.$("button.link")).click();
  await (await testid("session-replay")).click();
  const position = await testid("replay-position");
  await position.waitForDisplayed({ timeout: 5_000 });
  await win.app.waitUntil(async () => (await position.getText()).includes("the end"), { timeout: 30_000, timeoutMsg: "the replay played to its end" });
  const cards = await win.app.$$('[data-testid="continuation-card"]');
  assert.ok(cards.length >= 1, "the replay shows the continuation card again");
  await shot(win.app, "session-replayed");
  await win.app.keys("Escape");
  await (await testid("send-message")).waitForDisplayed({ timeout: 5_000 });

  // The stored role and the export mark the continuation as the engine's.
  const sessionId = await view.getAttribute("data-session").catch(() => null);
  const cli = path.join(repoRoot, "target/debug/finishline");
  const listed = execFileSync(cli, ["sessions", "list", "--json", "--data-dir", appDataDir(win.home)], { encoding: "utf8" }).trim().split("\n").map((l) => JSON.parse(l));
  const id = sessionId ?? listed[0].id;
  const exported = JSON.parse(execFileSync(cli, ["sessions", "export", id, "--format", "json", "--data-dir", appDataDir(win.home)], { encoding: "utf8" }));
  const roles = exported.transcript.filter((e) => e.kind === "message").map((e) => e.role);
  assert.ok(roles.includes("continuation"), `the stored message has role continuation: ${roles}`);
  assert.ok(!exported.transcript.some((e) => e.kind === "message" && e.role === "user" && e.text.includes("b.txt is missing")), "never stored as the person's message");
  const md = execFileSync(cli, ["sessions", "export", id, "--format", "md", "--data-dir", appDataDir(win.home)], { encoding: "utf8" });
  assert.match(md, /Continuation( \d+\/\d+)? from Finishline\*\* \(evaluator: work remains; not written by you\)/, "the export marks it, once");
  assert.equal(md.match(/↻/g)?.length, 1, `one continuation, shown once:\n${md}`);

  // What the model received: a tagged reminder, not a bare user message.
  const requests = await win.fake.requests();
  const sent = requests.find((r) => r.kind === "agent" && r.last_message.includes("b.txt is missing"));
  assert.ok(sent, "the agent received the continuation");
  assert.match(sent.last_message, /<system-reminder source="evaluator" attempt="1\/5">/);
});
