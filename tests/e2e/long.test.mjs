// A long session (over 260 tool cards in one run) renders only what is on screen and still
// scrolls to its end. Its calls alternate between listing "." and "./": identical calls in a
// row fold into one card with a count, and this test is about many cards.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { clickAway, shot, typeInto, waitForScreen } from "./app.mjs";
import { appWindow } from "./window.mjs";

const win = appWindow({ scenario: "e2e-long.json", port: 4490, name: "long" });

test("a long timeline mounts only the visible cards and reaches its end", async () => {
  const ws = mkdtempSync(path.join(tmpdir(), "finishline-ws-"));
  await waitForScreen(win.app, "new-task-form");
  await typeInto(win.app, await win.app.$('[data-testid="workspace-path"]'), ws);
  await typeInto(win.app, await win.app.$('[data-testid="task-input"]'), "list the folder again and again");
  await clickAway(await win.app.$('[data-testid="run"]'));
  const review = await win.app.$('[data-testid="review-panel"]');
  await review.waitForExist({ timeout: 30_000 });
  const mounted = (await win.app.$$('[data-testid="tool-card"]')).length;
  assert.ok(mounted > 0 && mounted < 150, `only the visible part of 260 tool cards is in the page (${mounted})`);
  await review.scrollIntoView();
  const verdict = await win.app.$('[data-testid="verdict-card"]');
  await verdict.waitForExist({ timeout: 5_000 });
  assert.equal(await verdict.getAttribute("data-verdict"), "done", "the end of the long timeline is reachable");
  await shot(win.app, "long-session");
});
