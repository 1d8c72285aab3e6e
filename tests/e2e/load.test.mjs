// Load in the real window: 20 sessions started from New Task, streaming from the fake server at
// once, with a tool call each. While they stream, the window answers: History lists them and a
// running session opens quickly. All 20 finish at the review gate, each with its own file.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { appDataDir, clickAway, repoRoot, shot, typeInto, waitForScreen } from "./app.mjs";
import { appWindow } from "./window.mjs";

const SESSIONS = 20;
// Twenty at once: the limit on tasks running together (4 by default, the rest queued) is raised
// for this test of the window under load.
const win = appWindow({ scenario: "e2e-load.json", port: 4530, name: "load", settings: { tasks: { parallel_limit: SESSIONS } } });

const { testid } = win;
const cli = path.join(repoRoot, "target/debug/finishline");
const statuses = () =>
  execFileSync(cli, ["sessions", "list", "--json", "--data-dir", appDataDir(win.home)], { encoding: "utf8" })
    .split("\n")
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l).status);

/**
 * How far the window itself scrolls, and where the History button is. The sidebar's list of
 * sessions scrolls inside the sidebar; when the window scrolled instead, a long list carried the
 * navigation out of view and following a stream scrolled the whole window under the pointer.
 */
async function windowScroll() {
  return win.app.execute(() => {
    const doc = document.scrollingElement;
    const nav = document.querySelector('[data-testid="nav-history"]').getBoundingClientRect();
    return { overflow: doc.scrollHeight - doc.clientHeight, scrolled: doc.scrollTop, navTop: nav.top, navBottom: nav.bottom, height: window.innerHeight };
  });
}

function assertNavInView(w, when) {
  assert.ok(w.overflow <= 0 && w.scrolled === 0, `${when}: the window itself does not scroll; the sidebar's list does (${JSON.stringify(w)})`);
  assert.ok(w.navTop >= 0 && w.navBottom <= w.height, `${when}: History stays in view however many sessions the sidebar lists (${JSON.stringify(w)})`);
}

/** Milliseconds from a click to the element being displayed, through WebDriver. */
async function responds(clickId, waitSelector) {
  const t = Date.now();
  await clickAway(await testid(clickId));
  await (await win.app.$(waitSelector)).waitForDisplayed({ timeout: 10_000 });
  return Date.now() - t;
}

test(`${SESSIONS} sessions streaming at once: the window stays responsive and all finish`, async () => {
  const workspaces = [];
  for (let i = 0; i < SESSIONS; i++) {
    await clickAway(await testid("nav-new"));
    await waitForScreen(win.app, "new-task-form");
    const ws = mkdtempSync(path.join(tmpdir(), `finishline-ws-load-${i}-`));
    workspaces.push(ws);
    const wsInput = await testid("workspace-path");
    await wsInput.clearValue();
    await typeInto(win.app, wsInput, ws);
    await typeInto(win.app, await testid("task-input"), `load task ${i}: write out.txt`);
    await clickAway(await testid("run"));
    await (await testid("session-view")).waitForDisplayed({ timeout: 15_000 });
  }
  const running = statuses().filter((s) => s === "busy").length;
  assertNavInView(await windowScroll(), `${SESSIONS} sessions in the sidebar`);
  assert.ok(running >= SESSIONS / 2, `most sessions stream at the same time (${running} busy)`);

  // While they stream: History and a running session open promptly.
  const history = await responds("nav-history", '[data-testid="history-row"]');
  const rows = await win.app.$$('[data-testid="history-row"]');
  assert.equal(rows.length, SESSIONS, "History lists every session");
  await clickAway(await rows[0].$("button.link"));
  const t = Date.now();
  await (await testid("session-view")).waitForDisplayed({ timeout: 10_000 });
  const open = Date.now() - t;
  await shot(win.app, "load-session");
  console.log(`under load (${running} streaming): History in ${history} ms, a running session in ${open} ms`);
  assert.ok(history < 2000, `History answers within 2 s under load (${history} ms)`);
  assert.ok(open < 2000, `a running session opens within 2 s under load (${open} ms)`);

  const deadline = Date.now() + 120_000;
  let s = statuses();
  while (s.some((x) => x !== "awaiting_review") && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 1000));
    s = statuses();
  }
  assert.deepEqual(s, Array(SESSIONS).fill("awaiting_review"), "every session finished at the review gate");
  for (const ws of workspaces) assert.equal(readFileSync(path.join(ws, "out.txt"), "utf8"), "words", "each workspace got its own file");
  assertNavInView(await windowScroll(), "after following a session to its review");
  await clickAway(await testid("nav-history"));
  await (await testid("history-row")).waitForDisplayed({ timeout: 10_000 });
  await shot(win.app, "load-history");
});
