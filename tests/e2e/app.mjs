// Drives the real built app: tauri-driver in front of WebKitWebDriver, one app process per
// WebDriver session. Each test file gets a fresh data folder so runs never see each other.
import { execFileSync, spawn } from "node:child_process";
import { createWriteStream, mkdtempSync, mkdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { remote } from "webdriverio";

const here = path.dirname(fileURLToPath(import.meta.url));
export const repoRoot = path.resolve(here, "../..");
export const appBinary = process.env.FINISHLINE_APP ?? path.join(repoRoot, "target/debug/finishline-app");
export const artifacts = path.join(here, "artifacts");
mkdirSync(artifacts, { recursive: true });

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** The app's data folder under a test's XDG_DATA_HOME. */
export const appDataDir = (home) => path.join(home, "data", "dev.finishline.app");

/**
 * Writes the app's settings file, as Settings would, before the app starts. Plan mode is off
 * unless a test asks for it, so scenarios written for single runs get no manager call.
 */
export function seedSettings(home, provider, extra = {}) {
  mkdirSync(appDataDir(home), { recursive: true });
  writeFileSync(path.join(appDataDir(home), "settings.json"), JSON.stringify({ settings: { plan_mode: "off", ...extra, provider: { kind: "openai", api_key_env: null, ...provider } } }));
}

/** Starts tauri-driver with its own data folder; the app inherits the environment. */
export async function startDriver({ port = 4444, home = mkdtempSync(path.join(tmpdir(), "finishline-e2e-")), env: extraEnv = {} } = {}) {
  const env = {
    ...process.env,
    ...extraEnv,
    XDG_DATA_HOME: path.join(home, "data"),
    XDG_CONFIG_HOME: path.join(home, "config"),
    XDG_CACHE_HOME: path.join(home, "cache"),
    // Without a GPU the app paints without WebKit's GL compositing (smoother; see
    // docs/benchmarks.md), but in that mode WebKitWebDriver's screenshot can hang. Apps driven
    // through WebDriver keep compositing on; the crash and notification tests, which start the
    // app directly, and the benchmark run it in its own mode.
    WEBKIT_DISABLE_COMPOSITING_MODE: process.env.WEBKIT_DISABLE_COMPOSITING_MODE ?? "0",
  };
  // The driver's and the app's own messages, for when a test fails.
  const log = createWriteStream(path.join(artifacts, `driver-${port}.log`));
  const driver = { home, port, child: await spawnDriver(port, env, log) };
  driver.stop = async () => {
    await stopGroup(driver.child);
  };
  // A fresh driver on the same port and data folder: what a stuck session leaves (WebKitWebDriver
  // still waiting, an app it launched that never answered) goes with the old process group.
  driver.restart = async () => {
    await stopGroup(driver.child);
    driver.child = await spawnDriver(port, env, log);
  };
  return driver;
}

async function spawnDriver(port, env, log) {
  const driverBin = process.env.TAURI_DRIVER ?? path.join(process.env.HOME, ".cargo/bin/tauri-driver");
  // Each driver gets its own native port too: WebKitWebDriver defaults to 4445.
  const child = spawn(driverBin, ["--port", String(port), "--native-port", String(port + 100), "--native-driver", "/usr/bin/WebKitWebDriver"], {
    env,
    detached: true, // its own process group, so stopping it stops WebKitWebDriver and the app too
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (d) => {
    stderr += d;
    log.write(d);
  });
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      const res = await fetch(`http://127.0.0.1:${port}/status`);
      if (res.ok) return child;
    } catch {
      /* not listening yet */
    }
    const failed = child.exitCode !== null ? `tauri-driver exited: ${stderr}` : Date.now() > deadline ? `tauri-driver did not answer in 30 s: ${stderr}` : null;
    if (failed) {
      await stopGroup(child);
      throw new Error(failed);
    }
    await sleep(200);
  }
}

/**
 * Stops a driver's process group: SIGTERM, then SIGKILL for whatever is left of the group (the
 * driver exits on SIGTERM at once, but an app that hung need not), and waits until it is gone.
 */
async function stopGroup(child) {
  const signal = (sig) => {
    try {
      process.kill(-child.pid, sig);
    } catch {
      /* already gone */
    }
  };
  signal("SIGTERM");
  for (let i = 0; i < 50 && groupAlive(child.pid); i++) await sleep(100);
  if (!groupAlive(child.pid)) return;
  signal("SIGKILL");
  for (let i = 0; i < 50 && groupAlive(child.pid); i++) await sleep(100);
  if (groupAlive(child.pid)) throw new Error(`tauri-driver's process group ${child.pid} outlived SIGKILL`);
}

function groupAlive(pgid) {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The environment the driver gives the app, for launching a second process of the same app. */
export function appEnv(driver, extra = {}) {
  const home = driver.home;
  return { ...process.env, XDG_DATA_HOME: path.join(home, "data"), XDG_CONFIG_HOME: path.join(home, "config"), XDG_CACHE_HOME: path.join(home, "cache"), ...extra };
}

/** Launches the app (a new process) and returns the WebdriverIO browser for its window. */
export async function launchApp(driver, application = appBinary) {
  const session = (timeout) =>
    remote({
      hostname: "127.0.0.1",
      port: driver.port,
      logLevel: "warn",
      connectionRetryCount: 0,
      connectionRetryTimeout: timeout,
      capabilities: {
        browserName: "wry",
        "wdio:enforceWebDriverClassic": true,
        "tauri:options": { application },
      },
    });
  try {
    return await session(60_000);
  } catch (e) {
    // WebKitWebDriver now and then never hears back from the browser it launched (seen in CI on
    // a loaded machine: the session request hung, and the app it had launched lingered on the
    // data folder and stalled the file's next windows). Only that, a session that timed out,
    // is tried again, on a restarted driver (its process group, the stuck app in it, goes);
    // what was running is kept in artifacts, and the test's output says it happened.
    if (!driver.restart || !/TIMEOUT|timed? ?out/i.test(String(e.message))) throw e;
    const seen = path.join(artifacts, `stuck-session-${driver.port}-${Date.now()}.txt`);
    writeFileSync(seen, `${e.message}\n\n${processesOf(driver.child.pid)}`);
    console.warn(`::warning:: the WebDriver session on port ${driver.port} did not start (${e.message}); what ran is in ${seen}; restarting tauri-driver and trying once more`);
    await driver.restart();
    try {
      return await session(120_000);
    } catch (again) {
      throw new Error(`the WebDriver session did not start twice: ${again.message}`, { cause: e });
    }
  }
}

/** The processes of a process group, for a record of what a stuck session left running. */
function processesOf(pgid) {
  try {
    const all = execFileSync("ps", ["-eo", "pgid,pid,stat,etime,pcpu,rss,args"], { encoding: "utf8" }).split("\n");
    return [all[0], ...all.filter((l) => l.trim().split(/\s+/)[0] === String(pgid))].join("\n");
  } catch (e) {
    return `(ps failed: ${e.message})`;
  }
}

export async function shot(browser, name) {
  await browser.saveScreenshot(path.join(artifacts, `${name}.png`));
}

/**
 * Resizes the window as a person dragging its edge would (under Xvfb there is no window manager,
 * so xdotool sizes the X window itself), asking again until the page sees the new size: GTK may
 * still be settling the window's first. Returns what puts the size before back.
 */
export async function resizeWindow(browser, width, height) {
  const [wasWidth, wasHeight, wasInner, wasInnerHeight] = await browser.execute(() => [window.outerWidth, window.outerHeight, window.innerWidth, window.innerHeight]);
  const size = (w, h) => execFileSync("xdotool", ["search", "--name", "^Finishline$", "windowsize", "%@", String(w), String(h)]);
  const become = (w, h, inner, innerHeight) =>
    browser.waitUntil(
      async () => {
        size(w, h);
        await new Promise((r) => setTimeout(r, 300));
        const [iw, ih] = await browser.execute(() => [window.innerWidth, window.innerHeight]);
        return Math.abs(iw - inner) <= 30 && Math.abs(ih - innerHeight) <= 30;
      },
      { timeout: 15_000, interval: 100, timeoutMsg: `the window did not become ${inner}×${innerHeight}` },
    );
  await become(width, height, width, height);
  // Awaited: the next test's clicks must not land while the page lays itself out again.
  return () => become(wasWidth, wasHeight, wasInner, wasInnerHeight);
}

/** Types into a field with real key events. */
export async function typeInto(_browser, element, text) {
  await element.waitForDisplayed();
  // What a box holds from before (New Task keeps its folder for the window) is replaced, as a
  // person selecting it all and typing would.
  if (await element.getValue()) await element.clearValue();
  await element.addValue(text);
}

/** Waits for a screen to show and settle (its first data load re-renders it once). */
export async function waitForScreen(browser, testid) {
  const el = await browser.$(`[data-testid="${testid}"]`);
  await el.waitForDisplayed({ timeout: 20_000 });
  await new Promise((r) => setTimeout(r, 500));
  return el;
}

/**
 * Clicks a control whose handler replaces the screen at once. WebKitWebDriver then reports an
 * "unknown error" for the click it did perform (the element is gone when it checks); the test
 * asserts the effect on the next screen instead.
 */
export async function clickAway(element) {
  try {
    await element.click();
  } catch (e) {
    if (!String(e.message).includes("unknown error")) throw e;
  }
}

/**
 * The open session's status, read in the page. The badge is replaced as the status changes, and
 * WebKit's driver could find it just as it was (a "stale element", also from `$` itself, in CI
 * runs): nothing here holds an element handle.
 */
export const statusNow = (browser) => browser.execute(() => document.querySelector('[data-testid="status-badge"]')?.getAttribute("data-status") ?? null);

/** Waits until the open session's status is one of `statuses` (a string or a list). */
export const waitStatus = (browser, statuses, timeout = 30_000) => {
  const wanted = [statuses].flat();
  return browser.waitUntil(async () => wanted.includes(await statusNow(browser)), { timeout, timeoutMsg: `the session never reached ${wanted.join(" or ")}` });
};

/** Opens a tool card, clicking until it says it is open: under load a click can land while the
 * view still settles after the review arrived, and be taken by what moves over the card (the
 * pinned progress strip, a transcript that follows its end). */
export async function openCard(head) {
  await head.waitUntil(
    async () => {
      if ((await head.getAttribute("aria-expanded")) !== "true") {
        await head.scrollIntoView({ block: "center" }).catch(() => undefined);
        await head.click().catch(() => undefined);
      }
      return (await head.getAttribute("aria-expanded")) === "true";
    },
    { timeout: 10_000, interval: 300, timeoutMsg: "the tool card never opened" },
  );
}
