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

test("a search hit in the long timeline's first answer opens the session there, far from its end", async () => {
  await clickAway(await win.app.$('[data-testid="nav-history"]'));
  await typeInto(win.app, await win.app.$('[data-testid="history-search"]'), "xylophone");
  await (await win.app.$('[data-testid="history"] form button')).click();
  await (await win.app.$('[data-testid="search-summary"]')).waitForDisplayed({ timeout: 10_000 });
  await clickAway(await (await win.app.$('[data-testid="history-row"]')).$("button.link"));
  await win.app.waitUntil(() => win.app.execute(() => !!document.querySelector("[data-found]")), { timeout: 10_000, timeoutMsg: "the hit's message was not marked" });
  const seen = await win.app.execute(() => {
    const found = document.querySelector("[data-found]");
    const r = found.getBoundingClientRect();
    const top = document.querySelector(".session-top").getBoundingClientRect().bottom;
    const bottom = document.querySelector('[data-testid="bottom-bar"]').getBoundingClientRect().top;
    return { text: found.textContent, inView: r.top >= top - 1 && r.bottom <= bottom + 1, mounted: document.querySelectorAll('[data-testid="tool-card"]').length, where: [r.top, r.bottom, top, bottom] };
  });
  await shot(win.app, "long-search-hit");
  assert.match(seen.text, /Listing; xylophone is the word to find later/);
  assert.ok(seen.inView, `the marked message is in view: ${JSON.stringify(seen.where)}`);
  assert.ok(seen.mounted < 150, `still only what is on screen is drawn (${seen.mounted})`);
});
