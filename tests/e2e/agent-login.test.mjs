// An agent whose login has run out, in the real window: the session says "Log in to <agent>"
// with the agent's own words and a button; the button logs it in (here through the agent's own
// `authenticate`, as Gemini CLI's Google login and Codex's ChatGPT login do) and the task runs
// again, to the review. The agent is the scripted ACP agent, whose login is a file it checks.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { clickAway, repoRoot, typeInto, waitForScreen } from "./app.mjs";
import { appWindow } from "./window.mjs";

const logs = mkdtempSync(path.join(tmpdir(), "finishline-e2e-login-agent-"));
const script = path.join(logs, "script.json");
writeFileSync(script, JSON.stringify({ auth: "agent", turns: [{ updates: [{ sessionUpdate: "agent_message_chunk", content: { type: "text", text: "Wrote done.txt and checked it." } }], write: { path: "done.txt", content: "done\n" } }] }));
const agent = { name: "scripted", command: "node", args: [path.join(repoRoot, "tests/agents/scripted-acp.mjs"), script], env: {} };
const win = appWindow({ scenario: "e2e-login.json", port: 4630, name: "login", settings: { agent }, env: () => ({ SCRIPTED_ACP_LOGS: logs }) });
const { testid } = win;

test("an agent that needs a login shows Log in to <agent>; the button logs it in and the task runs again to the review", async () => {
  await waitForScreen(win.app, "new-task-form");
  const ws = mkdtempSync(path.join(tmpdir(), "finishline-ws-login-"));
  await typeInto(win.app, await testid("workspace-path"), ws);
  await typeInto(win.app, await testid("task-input"), "Write done.txt");
  await clickAway(await testid("run"));
  await (await testid("session-view")).waitForDisplayed({ timeout: 10_000 });
  const card = await testid("agent-login");
  await card.waitForDisplayed({ timeout: 60_000 });
  const text = await card.getText();
  assert.match(text, /Log in to scripted/, "the person sees what to do, not a raw error");
  assert.match(text, /Opens the scripted agent's login page/, "in the agent's own words");
  assert.ok(!existsSync(path.join(ws, "done.txt")), "nothing ran before the login");
  await (await testid("login-agent-browser")).click();
  const review = await testid("review-panel");
  await review.waitForDisplayed({ timeout: 60_000 });
  assert.ok(existsSync(path.join(logs, "logged-in")), "the agent was logged in through authenticate");
  assert.ok(existsSync(path.join(ws, "done.txt")) || (await (await testid("review-panel")).getText()).includes("done.txt"), "the task ran again and did its work");
  assert.equal(await (await win.app.$('[data-testid="agent-login"]')).isExisting(), false, "the login card is gone once the agent works");
});
