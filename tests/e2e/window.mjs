// One app window for a whole test file: the fake provider on its scenario, the app's settings
// pointing at it, tauri-driver with a fresh data folder, the app launched before the file's tests
// and everything stopped after them. Test files that start apps themselves (crash, desktop,
// notify) use app.mjs directly.
import { after, before } from "node:test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { launchApp, seedSettings, startDriver } from "./app.mjs";
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
  after(async () => {
    await w.app?.deleteSession().catch(() => {});
    await w.driver?.stop();
    w.fake?.stop();
  });
  return w;
}
