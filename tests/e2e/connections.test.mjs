// Real-world connections in the real window: the local model (shared/tools/local-llm, a real
// llama.cpp server) set up from its preset, Test connection, a task run; the headless machine's
// missing keychain shown with a session-only key instead; an MCP server from npm added in
// Settings, its tools listed, and one called in a run against the fake provider.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { clickAway, openCard, repoRoot, shot, typeInto, waitForScreen, statusNow as statusIn } from "./app.mjs";
import { appWindow } from "./window.mjs";

const localLlm = process.env.FINISHLINE_LOCAL_LLM ?? path.join(repoRoot, "../shared/tools/local-llm");
const everything = path.join(repoRoot, "tests/mcp/node_modules/@modelcontextprotocol/server-everything/dist/index.js");

const win = appWindow({ scenario: "e2e-mcp.json", port: 4500, name: "conn", seed: false });

const { testid } = win;

async function replaceValue(id, text) {
  const el = await testid(id);
  await el.waitForDisplayed();
  await el.clearValue();
  await el.addValue(text);
}

async function waitText(id, re, timeout, msg) {
  const el = await testid(id);
  await el.waitForExist({ timeout });
  await el.waitUntil(async () => re.test(await el.getText()), { timeout, timeoutMsg: msg });
  return el.getText();
}

test("the local model is set up from its preset in under a minute, and a task runs on it", async () => {
  const url = execFileSync("bash", [localLlm, "start"], { encoding: "utf8" }).trim().split("\n").pop().trim();
  assert.match(url, /^http:\/\/127\.0\.0\.1:\d+\/v1$/, "local-llm prints its base URL");
  await waitForScreen(win.app, "new-task-form");
  const started = Date.now();
  await clickAway(await testid("nav-settings"));
  await waitForScreen(win.app, "settings-form");
  await (await testid("preset-llamacpp")).click();
  assert.equal(await (await testid("provider-base-url")).getValue(), "http://127.0.0.1:8080/v1", "the preset fills llama.cpp's usual address");
  await replaceValue("provider-base-url", url); // this server runs on another port
  await (await testid("test-connection")).click();
  const report = await testid("connection-report");
  await report.waitForExist({ timeout: 30_000 });
  await report.waitUntil(async () => (await report.getAttribute("data-tools")) === "supported", { timeout: 30_000, timeoutMsg: `Test connection did not succeed: ${await report.getText()}` });
  assert.match(await report.getText(), /Connected: 1 model listed/);
  // The report beside it, however long, never squeezes the button onto two lines.
  const [button, save] = [await (await testid("test-connection")).getSize(), await (await testid("save-settings")).getSize()];
  assert.equal(button.height, save.height, `Test connection keeps its one line beside the report: ${JSON.stringify({ button, save })}`);
  // The model's long name (a path to a .gguf) stays inside the page, not under Settings' index beside it.
  const overlap = await win.app.execute(() => {
    const index = document.querySelector('[data-testid="settings-index"]').getBoundingClientRect();
    const widest = Math.max(...[...document.querySelectorAll("fieldset.panel")].map((f) => f.getBoundingClientRect().right));
    return { index: index.left, widest };
  });
  assert.ok(overlap.widest <= overlap.index, `every section ends before the index: ${JSON.stringify(overlap)}`);
  assert.notEqual(await (await testid("provider-model")).getValue(), "", "the one listed model is filled in");
  await (await testid("save-settings")).click();
  await waitText("settings-status", /^Saved$/, 10_000, "Save never confirmed");
  const elapsed = Date.now() - started;
  assert.ok(elapsed < 60_000, `setting up the local model took ${elapsed} ms; it must take under a minute`);
  await shot(win.app, "settings-local-model");

  await clickAway(await testid("nav-new"));
  await waitForScreen(win.app, "new-task-form");
  const ws = mkdtempSync(path.join(tmpdir(), "finishline-ws-local-"));
  await typeInto(win.app, await testid("workspace-path"), ws);
  await typeInto(win.app, await testid("task-input"), "Say hello in one short sentence.");
  await clickAway(await testid("run"));
  await (await testid("session-view")).waitForDisplayed({ timeout: 15_000 });
  // The tiny model may answer at once or ramble for minutes: the person sees its words stream
  // in, and can stop it. Either way the run ends in a state they can act on.
  // The badge is read afresh each time: the session view re-renders as the run's first events
  // arrive, and a reference kept from before was stale in one CI run. No badge yet is "running".
  const badgeStatus = () => statusIn(win.app);
  const running = async () => {
    const status = await badgeStatus();
    return status === null || ["busy", "retry", "loading"].includes(status);
  };
  await win.app.waitUntil(async () => (await win.app.$$('[data-testid="agent-text"]')).length > 0 || !(await running()), {
    timeout: 120_000,
    timeoutMsg: "nothing from the local model appeared",
  });
  await shot(win.app, "session-local-model");
  if (await running()) {
    await (await testid("cancel")).click();
  }
  await win.app.waitUntil(async () => !(await running()), { timeout: 60_000, timeoutMsg: "the run on the local model did not stop" });
  const status = await badgeStatus();
  assert.ok(["awaiting_review", "idle", "failed", "cancelled"].includes(status), `the run ends in a state the person can act on, not ${status}`);
  assert.ok((await win.app.$$('[data-testid="agent-text"]')).length > 0 || status === "failed", "the model's answer is shown");
});

test("with no keychain on this machine, Settings says so and a session-only key works", async () => {
  await clickAway(await testid("nav-settings"));
  await waitForScreen(win.app, "settings-form");
  await (await testid("preset-openai")).click();
  const note = await testid("no-keychain");
  await note.waitForDisplayed({ timeout: 10_000 });
  assert.match(await note.getText(), /OPENAI_API_KEY/, "the environment variable is offered instead");
  await typeInto(win.app, await testid("key-input"), "sk-e2e-session-key");
  assert.equal((await win.app.$$('[data-testid="save-key-keychain"]')).length, 0, "nothing offers to save into a keychain that is not there");
  await (await testid("save-key-session")).click();
  await waitText("key-source", /this session/, 10_000, "the session key was not taken");
  await shot(win.app, "settings-no-keychain");
});

test("an MCP server added in Settings lists its tools and one is called in a run", async () => {
  await clickAway(await testid("nav-settings"));
  await waitForScreen(win.app, "settings-form");
  // Back to a provider the run can use: the fake server.
  await (await testid("preset-custom")).click();
  await replaceValue("provider-base-url", win.fake.baseUrl);
  await replaceValue("provider-model", "fake-model");
  await (await testid("mcp-add")).click();
  await replaceValue("mcp-name-0", "everything");
  await replaceValue("mcp-command-0", "node");
  await typeInto(win.app, await testid("mcp-args-0"), `${everything}\uE007stdio`);
  await (await testid("mcp-check")).click();
  const status = await testid("mcp-status");
  await status.waitForExist({ timeout: 60_000 });
  await status.waitUntil(async () => (await win.app.$$('[data-testid="mcp-tool"]')).length > 0, {
    timeout: 10_000,
    timeoutMsg: `no tools listed: ${await status.getText()}`,
  });
  const names = [];
  for (const t of await win.app.$$('[data-testid="mcp-tool"]')) names.push(await t.getText());
  assert.ok(names.some((n) => n.startsWith("everything__echo")), `the server's tools are listed: ${names.join(", ")}`);
  await (await testid("mcp-section")).scrollIntoView();
  await shot(win.app, "settings-mcp");
  await (await testid("save-settings")).click();
  await waitText("settings-status", /^Saved$/, 10_000, "Save never confirmed");

  await clickAway(await testid("nav-new"));
  await waitForScreen(win.app, "new-task-form");
  const ws = mkdtempSync(path.join(tmpdir(), "finishline-ws-mcp-"));
  await typeInto(win.app, await testid("workspace-path"), ws);
  await typeInto(win.app, await testid("task-input"), "greet through the MCP echo tool");
  await clickAway(await testid("run"));
  await (await testid("session-view")).waitForDisplayed({ timeout: 15_000 });
  await (await testid("permission-prompt")).waitForDisplayed({ timeout: 30_000 });
  await (await testid("allow-once")).click();
  const card = await win.app.$('[data-testid="tool-card"][data-tool="everything__echo"]');
  await card.waitForExist({ timeout: 20_000 });
  await card.waitUntil(async () => (await card.getAttribute("data-state")) === "done", { timeout: 20_000, timeoutMsg: "the MCP tool call never finished" });
  // The review comes up as the run ends and the view follows it to the end: the card is opened
  // once the page holds still (opened before, it went under the pinned header in a CI run).
  await (await testid("review-panel")).waitForDisplayed({ timeout: 30_000 });
  await win.app.waitUntil(async () => (await statusIn(win.app)) === "awaiting_review", { timeout: 30_000, timeoutMsg: "the run never came to review" });
  await openCard(await card.$(".card-head"));
  await card.waitUntil(async () => /Echo: hello through MCP/.test(await card.getText()), { timeout: 5_000, timeoutMsg: "the real MCP server's answer is not in the tool card" });
  await shot(win.app, "session-mcp");
  const requests = await win.fake.requests();
  // A new user's plan mode is Auto: a one-line task runs at once, without a manager call.
  assert.ok(!requests.some((r) => r.kind === "manager"), "Auto does not plan a one-line task");
  assert.ok(!(await (await win.app.$('[data-testid="plan-panel"]')).isExisting()), "an ordinary run shows no plan panel");
  const offered = (requests.find((r) => r.kind === "agent").body.tools ?? []).map((t) => t.function?.name);
  assert.ok(offered.includes("everything__echo"), "the model was offered the MCP tool by its namespaced name");
});

test("the MCP server stops when the app closes", async () => {
  const running = () =>
    readdirSync("/proc")
      .filter((p) => /^\d+$/.test(p))
      .filter((p) => {
        try {
          return readFileSync(`/proc/${p}/cmdline`, "utf8").includes("server-everything/dist/index.js");
        } catch {
          return false;
        }
      });
  assert.ok(running().length > 0, "the server the run used is running while the app is open");
  await win.app.deleteSession();
  win.app = null;
  const deadline = Date.now() + 10_000;
  while (running().length > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
  assert.deepEqual(running(), [], "no MCP server outlives the app");
});
