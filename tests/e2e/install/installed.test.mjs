// Installs the .deb the way a person does, runs the installed app, and removes it again:
//   an "older" package first, with the history a first-wave build left behind, then this
//   package over it (an upgrade: the store's migrations run on that history);
//   the installed app from /usr/bin under WebDriver runs a task against the fake provider;
//   `finishline --version` from PATH; the desktop entry and icons where desktops look;
//   removing the package leaves the person's data folder alone.
// Run by scripts/test-install (which builds the package first); it needs root or sudo.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { appDataDir, clickAway, launchApp, repoRoot, shot, startDriver, typeInto, waitForScreen } from "../app.mjs";
import { startFake } from "../fake.mjs";

const deb = process.env.FINISHLINE_DEB;
const asRoot = (cmd, args) => execFileSync(process.getuid() === 0 ? cmd : "sudo", process.getuid() === 0 ? args : [cmd, ...args], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" } });
const control = (field) => execFileSync("dpkg-deb", ["-f", deb, field], { encoding: "utf8" }).trim();
const pkg = () => control("Package");
const installedVersion = () => {
  try {
    return execFileSync("dpkg-query", ["-W", "-f=${Status} ${Version}", pkg()], { encoding: "utf8" });
  } catch {
    return "not installed";
  }
};
const installed = (f) => execFileSync("sh", ["-c", `command -v ${f} || true`], { encoding: "utf8" }).trim();

let fake, home;
before(async () => {
  assert.ok(deb && existsSync(deb), `FINISHLINE_DEB names the package to install: ${deb}`);
  fake = await startFake("e2e-flow.json");
  home = mkdtempSync(path.join(tmpdir(), "finishline-install-"));
  // Left by an earlier test run that failed halfway: start from nothing installed.
  if (installedVersion().includes("install ok")) asRoot("apt-get", ["remove", "-y", "-q", pkg()]);
});
after(() => {
  fake?.stop();
  if (installedVersion().includes("install ok")) asRoot("apt-get", ["remove", "-y", "-q", pkg()]);
});

test("install over an older build, run a task in the installed app, the CLI on PATH, remove and keep the data", async () => {
  // An older package of the same name (this build relabelled 0.0.1), installed first, so the
  // real package goes on as an upgrade; its history is what a first-wave build wrote.
  const work = mkdtempSync(path.join(tmpdir(), "finishline-oldpkg-"));
  execFileSync("dpkg-deb", ["-R", deb, path.join(work, "root")]);
  const ctl = path.join(work, "root/DEBIAN/control");
  writeFileSync(ctl, readFileSync(ctl, "utf8").replace(/^Version: .*$/m, "Version: 0.0.1"));
  execFileSync("dpkg-deb", ["-b", path.join(work, "root"), path.join(work, "old.deb")], { stdio: "ignore" });
  asRoot("apt-get", ["install", "-y", "-q", path.join(work, "old.deb")]);
  assert.match(installedVersion(), /install ok installed 0\.0\.1/, "the older package is installed");

  const data = appDataDir(home);
  cpSync(path.join(repoRoot, "tests/fixtures/wave1-data"), data, { recursive: true });
  const settingsFile = path.join(data, "settings.json");
  const settings = JSON.parse(readFileSync(settingsFile, "utf8"));
  settings.settings.provider.base_url = fake.baseUrl;
  writeFileSync(settingsFile, JSON.stringify(settings));

  asRoot("apt-get", ["install", "-y", "-q", path.resolve(deb)]);
  const version = control("Version");
  assert.match(installedVersion(), new RegExp(`install ok installed ${version.replace(/[.+~]/g, "\\$&")}$`), "the upgrade installed this build's version");

  // What a desktop needs to list and launch it.
  const app = installed("finishline-app");
  assert.equal(app, "/usr/bin/finishline-app", "the app is on PATH");
  const entries = readdirSync("/usr/share/applications").filter((f) => /finishline/i.test(f));
  assert.equal(entries.length, 1, `one desktop entry: ${entries}`);
  const entry = readFileSync(path.join("/usr/share/applications", entries[0]), "utf8");
  assert.match(entry, /^Exec=finishline-app/m, "the menu launches the installed app");
  assert.match(entry, /^Icon=finishline-app$/m, "the menu shows its icon");
  for (const size of ["32x32", "48x48", "128x128", "256x256", "512x512"]) {
    assert.ok(existsSync(`/usr/share/icons/hicolor/${size}/apps/finishline-app.png`), `an icon at ${size}, where desktops look`);
  }

  // The CLI beside it, with the one version of the workspace.
  assert.equal(installed("finishline"), "/usr/bin/finishline", "the CLI is on PATH");
  assert.equal(execFileSync("finishline", ["--version"], { encoding: "utf8" }).trim(), `finishline ${version}`, "the CLI reports the package's version");
  // Both are the pipe an external agent starts to reach Finishline's MCP server, before any
  // window or terminal output of their own: no display is needed, and a missing socket is a
  // plain error.
  for (const bin of ["finishline-app", "finishline"]) {
    const { DISPLAY: _display, WAYLAND_DISPLAY: _wayland, ...noDisplay } = process.env;
    const pipe = spawnSync(bin, ["mcp-pipe", path.join(work, "no-server.sock")], { encoding: "utf8", input: "", env: noDisplay, timeout: 10_000 });
    assert.equal(pipe.status, 1, `${bin} mcp-pipe without its server fails plainly: ${pipe.stderr}`);
    assert.match(pipe.stderr, /^mcp-pipe: /m, `${bin} says what failed: ${pipe.stderr}`);
  }

  // The installed app: the first-wave history is there, migrated, and a new task runs.
  const driver = await startDriver({ port: 4600, home });
  const browser = await launchApp(driver, app);
  try {
    await waitForScreen(browser, "new-task-form");
    const ws = mkdtempSync(path.join(tmpdir(), "finishline-ws-"));
    await typeInto(browser, await browser.$('[data-testid="workspace-path"]'), ws);
    await typeInto(browser, await browser.$('[data-testid="task-input"]'), "write the two letter files a.txt and b.txt");
    await clickAway(await browser.$('[data-testid="run"]'));
    const review = await browser.$('[data-testid="review-panel"]');
    await review.waitForDisplayed({ timeout: 40_000, timeoutMsg: "the installed app never reached review" });
    await (await browser.$('[data-testid="approve"]')).click();
    const badge = await browser.$('[data-testid="status-badge"]');
    await badge.waitUntil(async () => (await badge.getAttribute("data-status")) === "completed", { timeout: 10_000 });
    assert.equal(readFileSync(path.join(ws, "b.txt"), "utf8"), "B", "the installed app's agent wrote the files");

    await (await browser.$('[data-testid="nav-history"]')).click();
    await (await browser.$('[data-testid="history-row"]')).waitForDisplayed({ timeout: 10_000 });
    const rows = await browser.$$('[data-testid="history-row"]');
    assert.equal(rows.length, 2, "History holds the first-wave session and the new one: the upgrade kept it");

    await (await browser.$('[data-testid="nav-settings"]')).click();
    const shown = await browser.$('[data-testid="about-version"]');
    await shown.waitForDisplayed({ timeout: 10_000 });
    assert.equal(await shown.getText(), version, "About shows the installed version");
    assert.equal(await (await browser.$('[data-testid="about-data-dir"]')).getText(), data, "About shows where the data lives");
    await (await browser.$('[data-testid="about"]')).scrollIntoView();
    await shot(browser, "installed-about");
  } finally {
    await browser.deleteSession().catch(() => {});
    await driver.stop();
  }

  // Removing the program leaves the person's history and settings.
  asRoot("apt-get", ["remove", "-y", "-q", pkg()]);
  assert.equal(installed("finishline-app"), "", "the app is gone");
  assert.equal(installed("finishline"), "", "the CLI is gone");
  assert.ok(existsSync(path.join(data, "history.db")), "the history is left where it was");
  assert.ok(existsSync(settingsFile), "the settings are left where they were");
});
