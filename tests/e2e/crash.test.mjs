// The real app killed with SIGKILL in the middle of a streaming run, a handful of times, at
// random points. After each kill: the database passes PRAGMA integrity_check and every
// session's seq is gap-free; the next start shows the session as interrupted; Resume continues
// it, and what was streamed before the kill is stored once, not twice.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { appBinary, appDataDir, clickAway, launchApp, repoRoot, seedSettings, shot, startDriver, waitForScreen, waitStatus as waitStatusIn } from "./app.mjs";
import { startFake } from "./fake.mjs";

const cli = path.join(repoRoot, "target/debug/finishline");
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
let fake, home;

before(async () => {
  fake = await startFake("e2e-crash.json");
  home = mkdtempSync(path.join(tmpdir(), "finishline-e2e-crash-"));
  seedSettings(home, { base_url: fake.baseUrl, model: "fake-model" });
});
after(() => fake?.stop());

const cliJson = (args) =>
  execFileSync(cli, [...args, "--json", "--data-dir", appDataDir(home)], { encoding: "utf8" })
    .split("\n")
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l));

/** integrity_check, and per session: as many events as the highest seq (no gaps, no repeats). */
function checkDatabase() {
  const py = `
import sqlite3, sys, json
db = sqlite3.connect(sys.argv[1])
ok = db.execute("PRAGMA integrity_check").fetchone()[0]
gaps = db.execute("SELECT session_id, COUNT(*), MIN(seq), MAX(seq) FROM events GROUP BY session_id HAVING COUNT(*) != MAX(seq) OR MIN(seq) != 1").fetchall()
print(json.dumps({"integrity": ok, "gaps": gaps}))`;
  return JSON.parse(execFileSync("python3", ["-c", py, path.join(appDataDir(home), "history.db")], { encoding: "utf8" }));
}

/** The app started directly (not through WebDriver) on a task, in its own process group. */
/** The app started on `task`; with `nohup`, as `nohup` starts it (SIGHUP ignored). */
function startAppOnTask(ws, task = "write the numbered words", appHome = home, { nohup = false } = {}) {
  const args = ["--task", task, "--workspace", ws];
  return spawn(nohup ? "nohup" : appBinary, nohup ? [appBinary, ...args] : args, {
    env: { ...process.env, XDG_DATA_HOME: path.join(appHome, "data"), XDG_CONFIG_HOME: path.join(appHome, "config"), XDG_CACHE_HOME: path.join(appHome, "cache") },
    detached: true,
    stdio: "ignore",
  });
}

/** The streamed words stored so far for a session, from the transcript (the Markdown export). */
function storedWords(id) {
  const text = execFileSync(cli, ["sessions", "export", id, "--format", "md", "--data-dir", appDataDir(home)], { encoding: "utf8" });
  return text.match(/w\d{4}/g) ?? [];
}

test("SIGKILL of the app mid-stream, three times: intact database, interrupted, resumed without duplicates", async () => {
  const killedAt = [];
  for (let round = 0; round < 3; round++) {
    const ws = mkdtempSync(path.join(tmpdir(), "finishline-ws-crash-"));
    let before = new Set();
    try {
      before = new Set(cliJson(["sessions", "list"]).map((s) => s.id));
    } catch {
      /* no history yet: the first round */
    }
    const app = startAppOnTask(ws);
    // A random point in the stream: after 10 to 120 words.
    const target = 10 + Math.floor(Math.random() * 110);
    let id = null;
    let words = [];
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline) {
      await sleep(150);
      try {
        id ??= cliJson(["sessions", "list"]).find((s) => !before.has(s.id))?.id ?? null;
        if (id) words = storedWords(id);
      } catch {
        /* the database is being created */
      }
      if (words.length >= target) break;
    }
    assert.ok(id && words.length >= target, `the run streamed (${words.length} words stored)`);
    process.kill(-app.pid, "SIGKILL");
    await new Promise((r) => (app.exitCode !== null || app.signalCode ? r() : app.once("exit", r)));
    killedAt.push(words.length);

    const db = checkDatabase();
    assert.equal(db.integrity, "ok", "PRAGMA integrity_check after a SIGKILL");
    assert.deepEqual(db.gaps, [], "every session's seq runs 1..n without gaps");

    // Next start: interrupted, then Resume in the window.
    const driver = await startDriver({ port: 4510 + round, home });
    const win = await launchApp(driver);
    try {
      await waitForScreen(win, "new-task-form");
      // Said at the start, not only by a badge: the task the kill stopped, a click from its Resume.
      const notice = await win.$('[data-testid="stopped-at-start"]');
      await notice.waitForDisplayed({ timeout: 15_000 });
      assert.match(await notice.getText(), /1 task was stopped when Finishline last closed/);
      if (round === 0) {
        await clickAway(await notice.$("button.link"));
        // Opened: no longer news.
        await win.waitUntil(async () => !(await (await win.$('[data-testid="stopped-at-start"]')).isExisting()), { timeout: 15_000 });
      } else {
        await clickAway(await win.$('[data-testid="nav-history"]'));
        const row = await win.$(`[data-testid="history-row"][data-session="${id}"]`);
        await row.waitForExist({ timeout: 15_000 });
        assert.equal(await row.getAttribute("data-status"), "interrupted", "the killed run is interrupted at the next start");
        await clickAway(await row.$("button.link"));
      }
      await (await win.$('[data-testid="session-view"]')).waitForDisplayed({ timeout: 15_000 });
      if (round === 0) await shot(win, "session-interrupted");
      await (await win.$('[data-testid="send-message"]')).click();
      await waitStatusIn(win, ["awaiting_review", "idle"]);
    } finally {
      await win.deleteSession().catch(() => {});
      await driver.stop();
    }
    const after = storedWords(id);
    assert.equal(new Set(after).size, after.length, "no streamed word is stored twice after the resume");
    assert.ok(after.length >= words.length, "nothing stored before the kill was lost");
    const final = execFileSync(cli, ["sessions", "export", id, "--format", "md", "--data-dir", appDataDir(home)], { encoding: "utf8" });
    assert.match(final, /picked up after the restart/, "the resumed run continued the task");
    const db2 = checkDatabase();
    assert.equal(db2.integrity, "ok");
    assert.deepEqual(db2.gaps, []);
  }
  console.log(`killed the app after ${killedAt.join(", ")} streamed words; each time the database held, the session was interrupted and resumed`);
});

test("the app killed while a permission waits: after the restart the person answers it in the window and the run goes on", async () => {
  const shellFake = await startFake("e2e-review.json");
  const appHome = mkdtempSync(path.join(tmpdir(), "finishline-e2e-permission-"));
  seedSettings(appHome, { base_url: shellFake.baseUrl, model: "fake-model" });
  const list = () =>
    execFileSync(cli, ["sessions", "list", "--json", "--data-dir", appDataDir(appHome)], { encoding: "utf8" })
      .split("\n")
      .filter((l) => l.trim())
      .map((l) => JSON.parse(l));
  const ws = mkdtempSync(path.join(tmpdir(), "finishline-ws-permission-"));
  const app = startAppOnTask(ws, "use the shell to write shell.txt", appHome);
  let waiting = null;
  const deadline = Date.now() + 60_000;
  while (!waiting && Date.now() < deadline) {
    await sleep(200);
    try {
      waiting = list().find((s) => s.status === "awaiting_approval") ?? null;
    } catch {
      /* the database is being created */
    }
  }
  try {
    assert.ok(waiting, "the run asks before running the shell command");
  } finally {
    process.kill(-app.pid, "SIGKILL");
    await new Promise((r) => (app.exitCode !== null || app.signalCode ? r() : app.once("exit", r)));
  }
  const driver = await startDriver({ port: 4520, home: appHome });
  const win = await launchApp(driver);
  try {
    await waitForScreen(win, "new-task-form");
    await clickAway(await win.$('[data-testid="nav-history"]'));
    const row = await win.$(`[data-testid="history-row"][data-session="${waiting.id}"]`);
    await row.waitForExist({ timeout: 15_000 });
    assert.equal(await row.getAttribute("data-status"), "awaiting_approval", "a waiting permission keeps waiting across the restart");
    await clickAway(await row.$("button.link"));
    const prompt = await win.$('[data-testid="permission-prompt"]');
    await prompt.waitForDisplayed({ timeout: 15_000 });
    await shot(win, "permission-after-restart");
    await clickAway(await win.$('[data-testid="allow-once"]'));
    await (await win.$('[data-testid="review-panel"]')).waitForDisplayed({ timeout: 30_000 });
    assert.equal(readFileSync(path.join(ws, "shell.txt"), "utf8"), "from-shell\n", "the command the killed app was asking about ran after the answer");
  } finally {
    await win.deleteSession().catch(() => {});
    await driver.stop();
    shellFake.stop();
  }
});

test("SIGTERM to the app (a logout, `kill`, a service manager) ends the command its task started, not only the window", async () => {
  const serverFake = await startFake("e2e-sigterm.json");
  const appHome = mkdtempSync(path.join(tmpdir(), "finishline-e2e-sigterm-"));
  seedSettings(appHome, { base_url: serverFake.baseUrl, model: "fake-model" }, { permissions: { run_command: "allow" } });
  const ws = mkdtempSync(path.join(tmpdir(), "finishline-ws-sigterm-"));
  // Started as `nohup` starts it: a closed terminal (SIGHUP) must not quit it, SIGTERM must.
  const app = startAppOnTask(ws, "serve the site", appHome, { nohup: true });
  const exited = new Promise((r) => (app.exitCode !== null || app.signalCode ? r() : app.once("exit", r)));
  const alive = (pgid) => {
    try {
      process.kill(-pgid, 0);
      return true;
    } catch {
      return false;
    }
  };
  let pgid = null;
  try {
    const deadline = Date.now() + 60_000;
    while (!pgid && Date.now() < deadline) {
      await sleep(200);
      try {
        pgid = Number(readFileSync(path.join(ws, "server.pid"), "utf8").trim()) || null;
      } catch {
        /* not started yet */
      }
    }
    assert.ok(pgid && alive(pgid), "the task started its ten-minute command");
    process.kill(app.pid, "SIGHUP");
    const quitOnHup = await Promise.race([exited.then(() => true), sleep(3_000).then(() => false)]);
    assert.ok(!quitOnHup && alive(pgid), "started under nohup, the app and its task go on when the terminal closes");
    process.kill(app.pid, "SIGTERM");
    const ended = await Promise.race([exited.then(() => true), sleep(15_000).then(() => false)]);
    assert.ok(ended, "the app exits on SIGTERM");
    const until = Date.now() + 5_000;
    while (alive(pgid) && Date.now() < until) await sleep(100);
    assert.ok(!alive(pgid), "the command the task started went with the app, not left running until the next start");
    const sessions = execFileSync(cli, ["sessions", "list", "--json", "--data-dir", appDataDir(appHome)], { encoding: "utf8" })
      .split("\n")
      .filter((l) => l.trim())
      .map((l) => JSON.parse(l));
    assert.deepEqual(
      sessions.map((s) => s.status),
      ["cancelled"],
      "the task is recorded as stopped, as Quit's \"stop them\" records it",
    );
  } finally {
    if (pgid && alive(pgid)) process.kill(-pgid, "SIGKILL");
    if (app.exitCode === null && !app.signalCode) process.kill(-app.pid, "SIGKILL");
    serverFake.stop();
  }
});
