// Drives the real built app: tauri-driver in front of WebKitWebDriver, one app process per
// WebDriver session. Each test file gets a fresh data folder so runs never see each other.
import { spawn } from "node:child_process";
import { mkdtempSync, mkdirSync } from "node:fs";
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

/** Starts tauri-driver with its own data folder; the app inherits the environment. */
export async function startDriver({ port = 4444 } = {}) {
  const home = mkdtempSync(path.join(tmpdir(), "finishline-e2e-"));
  const env = {
    ...process.env,
    XDG_DATA_HOME: path.join(home, "data"),
    XDG_CONFIG_HOME: path.join(home, "config"),
    XDG_CACHE_HOME: path.join(home, "cache"),
  };
  const driverBin = process.env.TAURI_DRIVER ?? path.join(process.env.HOME, ".cargo/bin/tauri-driver");
  const child = spawn(driverBin, ["--port", String(port), "--native-driver", "/usr/bin/WebKitWebDriver"], {
    env,
    detached: true, // its own process group, so stopping it stops WebKitWebDriver and the app too
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (d) => (stderr += d));
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      const res = await fetch(`http://127.0.0.1:${port}/status`);
      if (res.ok) break;
    } catch {
      /* not listening yet */
    }
    if (child.exitCode !== null) throw new Error(`tauri-driver exited: ${stderr}`);
    if (Date.now() > deadline) throw new Error(`tauri-driver did not answer in 30 s: ${stderr}`);
    await sleep(200);
  }
  return {
    home,
    port,
    async stop() {
      try {
        process.kill(-child.pid, "SIGTERM");
      } catch {
        /* already gone */
      }
      for (let i = 0; i < 50 && child.exitCode === null; i++) await sleep(100);
      if (child.exitCode === null) {
        try {
          process.kill(-child.pid, "SIGKILL");
        } catch {
          /* gone */
        }
      }
    },
  };
}

/** Launches the app (a new process) and returns the WebdriverIO browser for its window. */
export async function launchApp(driver) {
  const browser = await remote({
    hostname: "127.0.0.1",
    port: driver.port,
    logLevel: "warn",
    connectionRetryCount: 0,
    capabilities: {
      browserName: "wry",
      "wdio:enforceWebDriverClassic": true,
      "tauri:options": { application: appBinary },
    },
  });
  return browser;
}

export async function shot(browser, name) {
  await browser.saveScreenshot(path.join(artifacts, `${name}.png`));
}
