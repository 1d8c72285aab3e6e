// A long session (over 260 tool cards in one run) renders only what is on screen and still
// scrolls to its end.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { clickAway, launchApp, seedSettings, shot, startDriver, typeInto, waitForScreen } from "./app.mjs";
import { startFake } from "./fake.mjs";

let driver, fake, app;
before(async () => {
  fake = await startFake("e2e-long.json");
  const home = mkdtempSync(path.join(tmpdir(), "finishline-e2e-long-"));
  seedSettings(home, { base_url: fake.baseUrl, model: "fake-model" });
  driver = await startDriver({ port: 4490, home });
  app = await launchApp(driver);
});
after(async () => {
  await app?.deleteSession().catch(() => {});
  await driver?.stop();
  fake?.stop();
});

test("a long timeline mounts only the visible cards and reaches its end", async () => {
  const ws = mkdtempSync(path.join(tmpdir(), "finishline-ws-"));
  await waitForScreen(app, "new-task-form");
  await typeInto(app, await app.$('[data-testid="workspace-path"]'), ws);
  await typeInto(app, await app.$('[data-testid="task-input"]'), "list the folder again and again");
  await clickAway(await app.$('[data-testid="run"]'));
  const review = await app.$('[data-testid="review-panel"]');
  await review.waitForExist({ timeout: 30_000 });
  const mounted = (await app.$$('[data-testid="tool-card"]')).length;
  assert.ok(mounted > 0 && mounted < 150, `only the visible part of 260 tool cards is in the page (${mounted})`);
  await review.scrollIntoView();
  const verdict = await app.$('[data-testid="verdict-card"]');
  await verdict.waitForExist({ timeout: 5_000 });
  assert.equal(await verdict.getAttribute("data-verdict"), "done", "the end of the long timeline is reachable");
  await shot(app, "long-session");
});
