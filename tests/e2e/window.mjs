// One app window for a whole test file: the fake provider on its scenario, the app's settings
// pointing at it, tauri-driver with a fresh data folder, the app launched before the file's tests
// and everything stopped after them. Test files that start apps themselves (crash, desktop,
// notify) use app.mjs directly.
import { after, afterEach, before } from "node:test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { launchApp, seedSettings, shot, startDriver } from "./app.mjs";
import { startFake } from "./fake.mjs";

/**
 * Registers the file's `before` and `after` hooks and returns the window's handles, filled in once
 * `before` has run: `app` (the WebdriverIO browser), `fake`, `home` (the data folder's root) and
 * `driver`.
 * - `scenario`: the fake provider's scenario file in tests/scenarios.
 * - `port`: tauri-driver's port; each file has its own, so a leftover driver never answers another.
 * - `name`: part of the data folder's name, to find a failed run's files.
 * - `settings`: extra settings seeded beside the provider; `seed: false` starts with none, as a
 *   new user does.
 * - `env(home)`: extra environment for the driver and the app.
 * When a test fails, the window is saved as `<name>-failed.png` in artifacts and what it shows is
 * printed, because CI's output is often all there is to go on.
 */
export function appWindow({ scenario, port, name, settings = {}, seed = true, env = () => ({}) }) {
  const w = { app: null, fake: null, home: null, driver: null };
  w.testid = (id) => w.app.$(`[data-testid="${id}"]`);
  before(async () => {
    w.fake = await startFake(scenario);
    w.home = mkdtempSync(path.join(tmpdir(), `finishline-e2e-${name}-`));
    if (seed) seedSettings(w.home, { base_url: w.fake.baseUrl, model: "fake-model" }, settings);
    w.driver = await startDriver({ port, home: w.home, env: env(w.home) });
    w.app = await launchApp(w.driver);
  });
  afterEach(async (t) => {
    if (t.passed || !w.app) return;
    await shot(w.app, `${name}-failed`).catch(() => {});
    const seen = await w.app.execute(describeWindow).catch((e) => `(the window did not answer: ${e.message})`);
    console.error(`window when "${t.name}" failed: ${seen}`);
  });
  after(async () => {
    await w.app?.deleteSession().catch(() => {});
    await w.driver?.stop();
    w.fake?.stop();
  });
  return w;
}

/** Runs in the page: the screen, the scroll state, any alert and the start of the visible text. */
function describeWindow() {
  const doc = document.scrollingElement;
  const current = [...document.querySelectorAll('[aria-current="page"]')].map((e) => e.getAttribute("data-testid") ?? e.textContent.trim().slice(0, 40));
  const screens = [...document.querySelectorAll("main [data-testid]")].slice(0, 12).map((e) => e.getAttribute("data-testid"));
  const alerts = [...document.querySelectorAll('[role="alert"], [role="alertdialog"], dialog[open]')].map((e) => e.textContent.trim().slice(0, 120));
  const text = (document.querySelector("main")?.innerText ?? "").replace(/\s+/g, " ").slice(0, 400);
  return JSON.stringify({ current, screens, alerts, scroll: { top: doc.scrollTop, overflow: doc.scrollHeight - doc.clientHeight }, text });
}
