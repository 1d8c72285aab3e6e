// The frame is real: the built app opens, the New Task form is there, a provider saved in
// Settings survives a restart of the app.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { appDataDir, launchApp, shot, startDriver } from "./app.mjs";

let driver;
before(async () => {
  driver = await startDriver();
});
after(async () => {
  await driver?.stop();
});

test("the window opens on New Task with Run disabled until a provider is set up", async () => {
  const app = await launchApp(driver);
  try {
    const form = await app.$('[data-testid="new-task-form"]');
    await form.waitForDisplayed({ timeout: 20_000 });
    assert.equal(await app.getTitle(), "Finishline", "the window is the Finishline app");
    const guide = await app.$('[data-testid="first-run"]');
    assert.match(await guide.getText(), /Ollama/, "a first-time user is pointed to a local provider");
    const run = await app.$('[data-testid="run"]');
    assert.equal(await run.isEnabled(), false, "Run must wait for a provider");
    await shot(app, "new-task");
  } finally {
    await app.deleteSession();
  }
});

test("a provider base URL saved in Settings is still there after a restart", async () => {
  const url = "http://127.0.0.1:8931/v1";
  let app = await launchApp(driver);
  try {
    await (await app.$('[data-testid="new-task-form"]')).waitForDisplayed({ timeout: 20_000 });
    await (await app.$('[data-testid="nav-settings"]')).click();
    const base = await app.$('[data-testid="provider-base-url"]');
    await base.waitForDisplayed();
    await base.setValue(url);
    await (await app.$('[data-testid="provider-model"]')).setValue("smollm2");
    await (await app.$('[data-testid="save-settings"]')).click();
    const status = await app.$('[data-testid="settings-status"]');
    await status.waitUntil(async () => (await status.getText()) === "Saved", { timeout: 10_000, timeoutMsg: "Save never confirmed" });
    await shot(app, "settings");
  } finally {
    await app.deleteSession();
  }

  app = await launchApp(driver);
  try {
    await (await app.$('[data-testid="new-task-form"]')).waitForDisplayed({ timeout: 20_000 });
    assert.equal(await (await app.$('[data-testid="first-run"]')).isExisting(), false, "with a provider saved, the first-run guide is gone");
    await (await app.$('[data-testid="nav-settings"]')).click();
    const base = await app.$('[data-testid="provider-base-url"]');
    await base.waitForDisplayed();
    assert.equal(await base.getValue(), url, "the saved base URL must survive a restart");
    assert.equal(await (await app.$('[data-testid="provider-model"]')).getValue(), "smollm2");
  } finally {
    await app.deleteSession();
  }
});

test("a settings file that is not JSON is named, never read as empty nor saved over, and read once fixed", async () => {
  const file = path.join(appDataDir(driver.home), "settings.json");
  const broken = '{"settings": {"provider": {"kind": "openai", "base_url": "http://127.0.0.1:8931/v1", "model": "smollm2"},';
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, broken);
  const app = await launchApp(driver);
  try {
    const alert = await app.$(".error-panel");
    await alert.waitForDisplayed({ timeout: 20_000, timeoutMsg: "the window said nothing of the broken file" });
    const said = await alert.getText();
    assert.match(said, /Settings could not be loaded/);
    assert.ok(said.includes(`${file} is not valid JSON`), `the file is named: ${said}`);
    await shot(app, "settings-broken");
    assert.equal(readFileSync(file, "utf8"), broken, "nothing was written over it");

    writeFileSync(file, `${broken.slice(0, -1)}}}`);
    await (await alert.$("button=Try again")).click();
    await (await app.$('[data-testid="new-task-form"]')).waitForDisplayed({ timeout: 10_000 });
    assert.equal(await (await app.$('[data-testid="first-run"]')).isExisting(), false, "the fixed file's provider is read");
  } finally {
    await app.deleteSession();
    rmSync(file, { force: true });
  }
});

test("a history file that is no database opens the app on a new history, the old file kept whole and named", async () => {
  const dir = appDataDir(driver.home);
  const file = path.join(dir, "history.db");
  const garbage = "not a database: the person's file all the same\n".repeat(50);
  mkdirSync(dir, { recursive: true });
  // The history the earlier tests made goes aside with it; this test's own copy is what is checked.
  writeFileSync(file, garbage);
  rmSync(`${file}-wal`, { force: true });
  rmSync(`${file}-shm`, { force: true });
  const app = await launchApp(driver);
  try {
    const note = await app.$('[data-testid="history-set-aside"]');
    await note.waitForDisplayed({ timeout: 20_000, timeoutMsg: "the window said nothing of the history it could not read" });
    const said = await note.getText();
    const kept = readdirSync(dir).find((n) => n.startsWith("history.db.unreadable-"));
    assert.ok(kept, `the old file is kept beside the new one: ${readdirSync(dir)}`);
    assert.equal(readFileSync(path.join(dir, kept), "utf8"), garbage, "byte for byte");
    assert.ok(said.includes(path.join(dir, kept)), `the note names where: ${said}`);
    await shot(app, "history-set-aside");
    await (await app.$('[data-testid="new-task-form"]')).waitForDisplayed({ timeout: 10_000 });
    await (await note.$("button=OK")).click();
    await note.waitForDisplayed({ reverse: true, timeout: 5_000 });
  } finally {
    await app.deleteSession();
  }
});

test("every Settings field the focus reaches is in view, never under the Save bar pinned to the window's foot", async () => {
  const app = await launchApp(driver);
  try {
    await (await app.$('[data-testid="nav-settings"]')).click();
    await (await app.$('[data-testid="save-settings"]')).waitForDisplayed({ timeout: 20_000 });
    const count = await app.execute(() => document.querySelectorAll(".settings-screen input:not([type=hidden]), .settings-screen select, .settings-screen textarea").length);
    const hidden = [];
    for (let i = 0; i < count; i++) {
      await app.execute((k) => {
        const el = document.querySelectorAll(".settings-screen input:not([type=hidden]), .settings-screen select, .settings-screen textarea")[k];
        if (el.offsetParent !== null && !el.closest(".settings-actions")) el.focus();
      }, i);
      // The window lifts the field at once and once more a moment later.
      await new Promise((r) => setTimeout(r, 250));
      const seen = await app.execute(() => {
        const el = document.activeElement;
        if (!el || el === document.body || el.closest(".settings-actions")) return null;
        const r = el.getBoundingClientRect();
        const at = document.elementFromPoint(r.left + Math.min(8, r.width / 2), r.top + r.height / 2);
        return at && (at === el || el.contains(at) || at.contains(el) || at.closest("label") === el.closest("label")) ? null : (el.closest("label")?.textContent ?? el.outerHTML).trim().slice(0, 60);
      });
      if (seen) hidden.push(seen);
    }
    assert.deepEqual(hidden, [], "fields hidden where the focus went");
  } finally {
    await app.deleteSession();
  }
});

test("an edit made to the settings file while the app runs is not written over when it quits", async () => {
  const file = path.join(appDataDir(driver.home), "settings.json");
  const app = await launchApp(driver);
  try {
    await (await app.$('[data-testid="new-task-form"]')).waitForDisplayed({ timeout: 20_000 });
    await (await app.$('[data-testid="nav-settings"]')).click();
    const model = await app.$('[data-testid="provider-model"]');
    await model.waitForDisplayed();
    await (await app.$('[data-testid="provider-base-url"]')).setValue("http://127.0.0.1:8931/v1");
    await model.setValue("from-the-window");
    await (await app.$('[data-testid="save-settings"]')).click();
    const status = await app.$('[data-testid="settings-status"]');
    await status.waitUntil(async () => (await status.getText()) === "Saved", { timeout: 10_000, timeoutMsg: "Save never confirmed" });
    assert.match(readFileSync(file, "utf8"), /from-the-window/);
    writeFileSync(file, readFileSync(file, "utf8").replace("from-the-window", "edited-by-hand"));
  } finally {
    await app.deleteSession();
  }
  await new Promise((r) => setTimeout(r, 1000));
  assert.match(readFileSync(file, "utf8"), /edited-by-hand/, "quitting kept the person's edit");
  rmSync(file, { force: true });
});
