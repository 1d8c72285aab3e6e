// Script payloads in a model answer, a tool's input and output, a file name, an evaluator
// summary and the task title render as text in the real webview: nothing runs. Markdown still
// renders. An MCP server's tool description and output get the same treatment.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { clickAway, openCard, repoRoot, shot, typeInto, waitForScreen } from "./app.mjs";
import { appWindow } from "./window.mjs";

const win = appWindow({ scenario: "e2e-payloads.json", port: 4470, name: "sec" });

test("model, tool, file-name and title payloads never run script; Markdown still renders", async () => {
  const ws = mkdtempSync(path.join(tmpdir(), "finishline-ws-"));
  await waitForScreen(win.app, "new-task-form");
  await typeInto(win.app, await win.app.$('[data-testid="workspace-path"]'), ws);
  await typeInto(win.app, await win.app.$('[data-testid="task-input"]'), `<img src=x onerror="document.title='pwned-title'"> write a file`);
  await clickAway(await win.app.$('[data-testid="run"]'));
  const review = await win.app.$('[data-testid="review-panel"]');
  await review.waitForDisplayed({ timeout: 20_000 });
  const timeline = await win.app.$('[data-testid="timeline"]');
  assert.equal(await win.app.getTitle(), "Finishline", "no payload changed the document");
  for (const sel of ["script", "iframe", "img", "[onerror]", "[onmouseover]", 'a[href^="javascript"]']) {
    assert.equal((await timeline.$$(sel)).length, 0, `no ${sel} element may come from model or tool output`);
  }
  const answer = (await win.app.$$('[data-testid="agent-text"]')).at(-1);
  assert.equal(await (await answer.$("strong")).getText(), "bold", "bold still renders");
  assert.equal(await (await answer.$("code")).getText(), "code", "code still renders");
  assert.equal((await answer.$$("li")).length, 2, "lists still render");
  assert.equal(await (await answer.$('a[href="https://example.com"]')).getText(), "a normal link", "ordinary links still render");
  assert.doesNotMatch(await answer.getHTML(), /<script|<img|<iframe|<div onmouseover/i, "raw HTML in the answer is never turned into elements");
  assert.match(await answer.getText(), /<script>document\.title='pwned-script'<\/script>/, "it shows as the text it is, as an agent naming a tag means");
  const head = await win.app.$(".session-head h1");
  assert.match(await head.getProperty("textContent"), /<img src=x onerror=/, "the task title shows as text");
  await openCard(await win.app.$('[data-testid="tool-card"] .card-head'));
  assert.match(await (await win.app.$('[data-testid="tool-card"]')).getProperty("textContent"), /pwned-output/, "tool output shows as text");
  await (await win.app.$('[data-testid="file-toggle"]')).click();
  assert.equal(await win.app.getTitle(), "Finishline", "still nothing ran after opening the cards");
  await shot(win.app, "security");
});

test("an MCP server's tool description and output carrying payloads never run script", async () => {
  const hostile = path.join(repoRoot, "tests/mcp/hostile-server.mjs");
  await clickAway(await win.app.$('[data-testid="nav-settings"]'));
  await waitForScreen(win.app, "settings-form");
  await (await win.app.$('[data-testid="mcp-add"]')).click();
  const name = await win.app.$('[data-testid="mcp-name-0"]');
  await name.clearValue();
  await name.addValue("hostile");
  await typeInto(win.app, await win.app.$('[data-testid="mcp-command-0"]'), "node");
  await typeInto(win.app, await win.app.$('[data-testid="mcp-args-0"]'), hostile);
  await (await win.app.$('[data-testid="mcp-check"]')).click();
  const status = await win.app.$('[data-testid="mcp-status"]');
  await status.waitForExist({ timeout: 30_000 });
  const tool = await win.app.$('[data-testid="mcp-tool"]');
  await tool.waitForExist({ timeout: 10_000 });
  assert.match(await tool.getText(), /<img src=x onerror=/, "the description shows as text");
  for (const sel of ["script", "img", "iframe", "[onerror]", 'a[href^="javascript"]']) {
    assert.equal((await status.$$(sel)).length, 0, `no ${sel} element may come from an MCP tool description`);
  }
  await (await win.app.$('[data-testid="save-settings"]')).click();
  const saved = await win.app.$('[data-testid="settings-status"]');
  await saved.waitUntil(async () => (await saved.getText()) === "Saved", { timeout: 10_000 });

  await win.fake.setScenario({
    rules: [
      { when: { kind: "evaluator" }, reply: { text: '{"done": true, "summary": "peeked", "remaining": [], "continuation_prompt": "", "is_stuck": false, "stuck_reason": ""}' } },
      { when: { kind: "agent", last_message_contains: "peeked" }, reply: { text: "Done! The hostile tool was called and its output shown, which is all the task asked for." } },
      { when: { kind: "agent" }, reply: { text: "Peeking.", tool_calls: [{ name: "hostile__peek", arguments: {} }] } },
    ],
  });
  await clickAway(await win.app.$('[data-testid="nav-new"]'));
  await waitForScreen(win.app, "new-task-form");
  const ws = mkdtempSync(path.join(tmpdir(), "finishline-ws-"));
  await typeInto(win.app, await win.app.$('[data-testid="workspace-path"]'), ws);
  await typeInto(win.app, await win.app.$('[data-testid="task-input"]'), "peek with the hostile tool");
  await clickAway(await win.app.$('[data-testid="run"]'));
  await (await win.app.$('[data-testid="permission-prompt"]')).waitForDisplayed({ timeout: 30_000 });
  await (await win.app.$('[data-testid="allow-once"]')).click();
  const card = await win.app.$('[data-testid="tool-card"][data-tool="hostile__peek"]');
  await card.waitUntil(async () => (await card.getAttribute("data-state")) === "done", { timeout: 20_000, timeoutMsg: "the MCP call never finished" });
  await openCard(await card.$(".card-head"));
  assert.match(await card.getProperty("textContent"), /pwned-mcp-output/, "the MCP output shows as text");
  const timeline = await win.app.$('[data-testid="timeline"]');
  for (const sel of ["script", "iframe", "img", "[onerror]", 'a[href^="javascript"]']) {
    assert.equal((await timeline.$$(sel)).length, 0, `no ${sel} element may come from MCP tool output`);
  }
  assert.equal(await win.app.getTitle(), "Finishline", "no MCP payload changed the document");
});
