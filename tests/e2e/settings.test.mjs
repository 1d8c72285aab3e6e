// The frame is real: the built app opens, the New Task form is there, a provider saved in
// Settings survives a restart of the app.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { launchApp, shot, startDriver } from "./app.mjs";

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
