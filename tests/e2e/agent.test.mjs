// An external agent in the real window: OpenCode (from npm, offline against the fake provider)
// picked in Settings → Agent and checked there, then a task it claims too early is sent back with
// a continuation card, and reaches the review with its changes.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { clickAway, repoRoot, shot, typeInto, waitForScreen, waitStatus as waitStatusIn } from "./app.mjs";
import { appWindow } from "./window.mjs";

// OpenCode as a person would have it: on PATH. Its HOME is the test's, so it reads no one's
// configuration; the workspace's opencode.json points it at the fake provider.
const bin = path.join(repoRoot, "tests/agents/node_modules/.bin");
const win = appWindow({ scenario: "e2e-acp.json", port: 4600, name: "acp", env: (home) => ({ PATH: `${bin}:${process.env.PATH}`, HOME: home }) });

const { testid } = win;

function workspace() {
  const ws = mkdtempSync(path.join(tmpdir(), "finishline-ws-acp-"));
  const config = {
    provider: { fake: { npm: "@ai-sdk/openai-compatible", name: "Fake", options: { baseURL: win.fake.baseUrl, apiKey: "x" }, models: { "fake-model": { name: "Fake" } } } },
    model: "fake/fake-model",
    small_model: "fake/fake-model",
    autoupdate: false,
    share: "disabled",
  };
  writeFileSync(path.join(ws, "opencode.json"), JSON.stringify(config));
  return ws;
}

test("OpenCode picked in Settings does a task; its early 'Done!' gets a continuation card; the review shows its changes", async () => {
  await waitForScreen(win.app, "new-task-form");
  await (await testid("nav-settings")).click();
  const select = await testid("agent-select");
  await select.waitForDisplayed({ timeout: 10_000 });
  await win.app.waitUntil(async () => (await win.app.$$('[data-testid="agent-select"] option')).length > 2, { timeout: 10_000, timeoutMsg: "the presets never loaded" });
  await select.scrollIntoView({ block: "center" });
  await select.selectByAttribute("value", "opencode");
  const found = await testid("agent-found");
  assert.match(await found.getText(), /Runs opencode acp from .*tests\/agents\/node_modules\/\.bin\/opencode/, "OpenCode is found on PATH");
  const check = await testid("agent-check");
  await check.scrollIntoView({ block: "center" });
  await check.click();
  const answered = await testid("agent-check-result");
  await answered.waitForDisplayed({ timeout: 60_000 });
  assert.match(await answered.getText(), /Answered: .*1\.18\.33/, "Check started OpenCode and shows who answered");
  await shot(win.app, "settings-agent");
  const save = await testid("save-settings");
  await save.scrollIntoView({ block: "center" });
  await save.click();
  await (await testid("nav-new")).click();
  await waitForScreen(win.app, "new-task-form");
  const picker = await testid("task-agent");
  assert.equal(await picker.getValue(), "opencode", "New Task starts with the agent from Settings");

  const ws = workspace();
  await typeInto(win.app, await testid("workspace-path"), ws);
  await typeInto(win.app, await testid("task-input"), "Write report.txt saying all good");
  await clickAway(await testid("run"));
  await (await testid("session-view")).waitForDisplayed({ timeout: 10_000 });
  await (await testid("tool-card")).waitForExist({ timeout: 60_000 });

  const card = await win.app.$('[data-role="continuation"]');
  await card.waitForExist({ timeout: 60_000 });
  assert.equal(await card.getAttribute("data-source"), "evaluator", "OpenCode's early claim was judged not done and sent back");
  assert.match(await card.getText(), /report\.txt is missing|it is missing/);

  const review = await testid("review-panel");
  await review.waitForDisplayed({ timeout: 60_000 });
  assert.match(await (await testid("review-end-reason")).getText(), /Verified done/);
  // The diff view is loaded with the first review, so its files show a moment after the panel.
  const changedFiles = () => win.app.execute(() => [...document.querySelectorAll('[data-testid="file-change"]')].map((e) => e.textContent));
  await win.app.waitUntil(async () => (await changedFiles()).some((f) => /report\.txt/.test(f)), { timeout: 10_000 }).catch(() => undefined);
  const files = await changedFiles();
  assert.ok(files.some((f) => /report\.txt/.test(f)), `the review lists OpenCode's change: ${files}`);
  await shot(win.app, "acp-opencode-review");
  // The app's own binary is the pipe to Finishline's MCP server (`finishline-app mcp-pipe`):
  // OpenCode started it, and offered its model complete_task from it.
  const offered = (await win.fake.requests()).filter((r) => r.kind === "agent").flatMap((r) => (r.body.tools ?? []).map((t) => t.function?.name ?? ""));
  assert.ok(offered.some((n) => n.includes("complete_task")), `OpenCode reached Finishline's complete_task through the app: ${offered}`);
  await (await testid("approve")).click();
  await waitStatusIn(win.app, "completed", 10_000);
  assert.equal(readFileSync(path.join(ws, "report.txt"), "utf8"), "all good\n");

  // A follow-up in the same session: the evaluator keeps the model set up in Settings (the
  // session records the agent's name as its model, which no provider has).
  await typeInto(win.app, await testid("message-input"), "Also write notes.txt");
  await (await testid("send-message")).click();
  await win.app.waitUntil(async () => (await win.fake.requests()).some((r) => r.kind === "agent" && r.last_message.includes("Also write notes.txt")), { timeout: 60_000, timeoutMsg: "the follow-up never reached OpenCode" });
  await (await testid("review-panel")).waitForDisplayed({ timeout: 60_000 });
  const models = (await win.fake.requests()).filter((r) => r.kind === "evaluator").map((r) => r.model);
  assert.ok(models.length >= 3, `the follow-up was judged too: ${models}`);
  assert.deepEqual([...new Set(models)], ["fake-model"], "every evaluation, the follow-up's included, asks for the configured model");
});
