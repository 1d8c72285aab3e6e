// The window a person keeps open: sessions in the sidebar updating live across two sessions,
// a task run and approved with the keyboard alone (Ctrl+K), Esc while typing an answer not
// cancelling the run, the reading position kept while text streams, the Trust view, and tasks
// started in a terminal: shown in the sidebar, cancelled from the window, and their questions
// answered there.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { appDataDir, repoRoot, shot, waitForScreen, statusNow as statusIn } from "./app.mjs";
import { appWindow } from "./window.mjs";

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const win = appWindow({ scenario: "e2e-workday.json", port: 4560, name: "workday" });

const q = (sel) => win.app.$(sel);
const statusNow = () => statusIn(win.app);
const waitStatus = (s, timeout = 20_000) => win.app.waitUntil(async () => (await statusNow()) === s, { timeout, timeoutMsg: `the session never reached ${s}` });

/** Types a task and a folder with the keyboard and starts it with Enter. */
async function startByKeyboard(task) {
  await (await q('[data-testid="nav-new"]')).click();
  await waitForScreen(win.app, "new-task-form");
  await win.app.waitUntil(async () => (await win.app.execute(() => document.activeElement?.getAttribute("data-testid"))) === "task-input", { timeout: 5_000, timeoutMsg: "New Task does not put the cursor in the task box" });
  const ws = mkdtempSync(path.join(tmpdir(), "finishline-ws-"));
  // Text goes in as key events to the focused field (WebDriver's bare key actions drop a letter
  // typed twice in a row); moving and starting are plain keys.
  const focused = async () => win.app.$(await win.app.execute(() => document.activeElement));
  await (await focused()).addValue(task);
  await win.app.keys(["Tab"]);
  assert.equal(await win.app.execute(() => document.activeElement?.getAttribute("data-testid")), "workspace-path", "Tab goes from the task to the folder");
  await (await focused()).addValue(ws);
  await win.app.keys(["Enter"]);
  await (await q('[data-testid="session-view"]')).waitForDisplayed({ timeout: 10_000 });
  return ws;
}

test("keyboard only: a task typed and started with Enter, approved from the Ctrl+K palette", async () => {
  await waitForScreen(win.app, "new-task-form");
  await startByKeyboard("write a.txt with the letter A");
  await waitStatus("awaiting_review");
  await win.app.keys(["Control", "k"]);
  await (await q('[data-testid="palette"]')).waitForDisplayed({ timeout: 5_000 });
  await (await q('[data-testid="palette-input"]')).addValue("approve");
  await shot(win.app, "palette-approve");
  await win.app.keys(["Enter"]);
  await waitStatus("completed", 10_000);
});

test("the sidebar shows a working and a waiting session, updating live", async () => {
  await startByKeyboard("read the file slowly");
  await waitStatus("busy");
  await startByKeyboard("ask me which folder");
  await waitStatus("awaiting_approval");
  // Read through the page: the sidebar re-renders as statuses change.
  const groupText = (id) => win.app.execute((t) => document.querySelector(`[data-testid="${t}"]`)?.textContent ?? "", id);
  await win.app.waitUntil(async () => /read the file slowly/.test(await groupText("side-working")), { timeout: 10_000, timeoutMsg: "the streaming session is not under Working" });
  await win.app.waitUntil(async () => /ask me which folder/.test(await groupText("side-waiting")), { timeout: 10_000, timeoutMsg: "the session asking a question is not under Waiting for you" });
  assert.equal(await (await q('[data-testid="waiting-count"]')).getText(), "1", "one session waits for the person");
  await shot(win.app, "sidebar-live");
});

test("Esc while typing an answer does not cancel the run; Enter sends the answer", async () => {
  // The asking session is open (the last one started).
  const answer = await q('input[aria-label="Your answer"]');
  await answer.waitForDisplayed({ timeout: 10_000 });
  await answer.click();
  await answer.addValue("src");
  await win.app.keys(["Escape"]);
  await sleep(1500);
  assert.equal(await statusNow(), "awaiting_approval", "Esc in the answer box must not cancel the whole run");
  await win.app.keys(["Enter"]);
  await waitStatus("awaiting_review");
  await win.app.keys(["Control", "k"]);
  await (await q('[data-testid="palette-input"]')).addValue("approve");
  await win.app.keys(["Enter"]);
  await waitStatus("completed", 10_000);
});

test("scrolled up while text streams, the view stays put and offers Jump to latest", async () => {
  const row = await q('[data-testid="side-working"] [data-testid="side-session"]');
  await row.click();
  await waitStatus("busy");
  await sleep(2500); // enough text to scroll
  const top = await win.app.execute(() => {
    const m = document.querySelector("main.content");
    m.scrollTop = 0;
    m.dispatchEvent(new Event("scroll"));
    return m.scrollTop;
  });
  await sleep(2000);
  const after = await win.app.execute(() => document.querySelector("main.content").scrollTop);
  assert.equal(after, top, "new output must not pull the reader down");
  const jump = await q('[data-testid="jump-latest"]');
  await jump.waitForDisplayed({ timeout: 5_000 });
  await shot(win.app, "jump-to-latest");
  await jump.click();
  await sleep(500);
  const gap = await win.app.execute(() => {
    const m = document.querySelector("main.content");
    return m.scrollHeight - m.scrollTop - m.clientHeight;
  });
  assert.ok(gap < 60, `Jump to latest goes to the bottom (gap ${gap}px)`);
  await (await q('[data-testid="cancel"]')).click();
  await waitStatus("cancelled", 10_000);
});

test("the Trust view shows the evaluator's reviews from the sessions approved above", async () => {
  await (await q('[data-testid="nav-history"]')).click();
  await waitForScreen(win.app, "history");
  await (await q('[data-testid="trust-view"] summary')).click();
  const row = await q('[data-testid="trust-row"]');
  await row.waitForDisplayed({ timeout: 10_000, timeoutMsg: "no evaluator row after two reviewed sessions" });
  assert.equal(await (await row.$('[data-testid="trust-reviews"]')).getText(), "2", "both approvals count");
  assert.match(await (await row.$('[data-testid="trust-false-done"]')).getText(), /0% \(0 of 2\)/, "no done verdict was rejected");
  await shot(win.app, "trust-view");
});

test("a task started in a terminal shows under Waiting for you without a reload, and opens", async () => {
  const ws = mkdtempSync(path.join(tmpdir(), "finishline-ws-"));
  const ran = spawnSync(path.join(repoRoot, "target/debug/finishline"), ["run", "write a.txt from the terminal", "--workspace", ws, "--base-url", win.fake.baseUrl, "--model", "fake-model", "--data-dir", appDataDir(win.home)], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
    timeout: 60_000,
  });
  assert.equal(ran.status, 6, `it waits for review: ${ran.stderr}`);
  const waiting = () => win.app.execute(() => document.querySelector('[data-testid="side-waiting"]')?.textContent ?? "");
  await win.app.waitUntil(async () => /from the terminal/.test(await waiting()), { timeout: 10_000, timeoutMsg: "the terminal's task never reached the sidebar" });
  await shot(win.app, "sidebar-from-terminal");
  const entry = await win.app.$('[data-testid="side-waiting"] [data-testid="side-session"][data-status="awaiting_review"]');
  await entry.click();
  await (await q('[data-testid="review-panel"]')).waitForDisplayed({ timeout: 10_000 });
});

test("a task running in a terminal is cancelled from the window: the terminal stops it and says so", async () => {
  const ws = mkdtempSync(path.join(tmpdir(), "finishline-ws-"));
  const cli = spawn(path.join(repoRoot, "target/debug/finishline"), ["run", "think it over in a terminal", "--workspace", ws, "--base-url", win.fake.baseUrl, "--model", "fake-model", "--data-dir", appDataDir(win.home)], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let said = "";
  cli.stdout.on("data", (d) => (said += d));
  cli.stderr.on("data", (d) => (said += d));
  const exited = new Promise((resolve) => cli.on("exit", (code) => resolve(code)));
  try {
    const working = () => win.app.execute(() => document.querySelector('[data-testid="side-working"]')?.textContent ?? "");
    await win.app.waitUntil(async () => /in a terminal/.test(await working()), { timeout: 20_000, timeoutMsg: "the terminal's running task never reached Working" });
    const id = await win.app.execute(
      () => [...document.querySelectorAll('[data-testid="side-working"] [data-testid="side-session"]')].find((e) => /in a terminal/.test(e.textContent ?? ""))?.getAttribute("data-session") ?? "",
    );
    assert.ok(id, "the terminal's task has an entry under Working");
    await (await q(`[data-testid="side-session"][data-session="${id}"]`)).click();
    await (await q('[data-testid="cancel"]')).waitForDisplayed({ timeout: 10_000, timeoutMsg: "no Cancel for a task running in a terminal" });
    await (await q('[data-testid="cancel"]')).click();
    const code = await Promise.race([exited, sleep(15_000).then(() => "still running after 15 s")]);
    assert.equal(code, 5, `the terminal's run ends cancelled: ${said}`);
    assert.match(said, /cancelled: asked from another terminal or the window/, "the terminal says who stopped it");
    await waitStatus("cancelled", 10_000);
    await shot(win.app, "cancelled-from-the-window");
  } finally {
    cli.kill();
  }
});

test("a question asked in a terminal is answered in the window: the terminal's run goes on with it", async () => {
  const ws = mkdtempSync(path.join(tmpdir(), "finishline-ws-"));
  const line = [path.join(repoRoot, "target/debug/finishline"), "run", "ask me in a terminal which folder", "--workspace", ws, "--base-url", win.fake.baseUrl, "--model", "fake-model", "--data-dir", appDataDir(win.home)]
    .map((a) => `'${a.replaceAll("'", "'\\''")}'`)
    .join(" ");
  // `script` gives the run a terminal, so it asks there, as for a person at one.
  const cli = spawn("script", ["-qfec", line, "/dev/null"], { stdio: ["pipe", "pipe", "pipe"] });
  let said = "";
  cli.stdout.on("data", (d) => (said += d));
  cli.stderr.on("data", (d) => (said += d));
  const exited = new Promise((resolve) => cli.on("exit", (code) => resolve(code)));
  try {
    await win.app.waitUntil(async () => /Your answer/.test(said), { timeout: 30_000, timeoutMsg: `the terminal never asked: ${said}` });
    const waiting = () => win.app.execute(() => document.querySelector('[data-testid="side-waiting"]')?.textContent ?? "");
    await win.app.waitUntil(async () => /in a terminal/.test(await waiting()), { timeout: 10_000, timeoutMsg: "the terminal's question never reached Waiting for you" });
    const id = await win.app.execute(
      () => [...document.querySelectorAll('[data-testid="side-waiting"] [data-testid="side-session"]')].find((e) => /in a terminal/.test(e.textContent ?? ""))?.getAttribute("data-session") ?? "",
    );
    await (await q(`[data-testid="side-session"][data-session="${id}"]`)).click();
    const answer = await q('input[aria-label="Your answer"]');
    await answer.waitForDisplayed({ timeout: 10_000, timeoutMsg: "the window does not offer to answer the terminal's question" });
    await answer.click();
    await answer.addValue("docs");
    await win.app.keys(["Enter"]);
    await win.app.waitUntil(async () => /Review: \[a\]pprove/.test(said), { timeout: 30_000, timeoutMsg: `the terminal's run did not go on with the window's answer: ${said}` });
    assert.match(said, /Answered elsewhere \(another terminal or the window\): docs/, "the terminal says where the answer came from");
    const card = () => win.app.execute(() => document.querySelector('[data-testid="question"]')?.textContent ?? "");
    await win.app.waitUntil(async () => /You answered: docs/.test(await card()), { timeout: 10_000, timeoutMsg: "the window does not show the answer it gave" });
    await waitStatus("awaiting_review", 10_000);
    // The sidebar hears of another process's changes within its two-second look.
    await win.app.waitUntil(async () => /in a terminal[\s\S]*Ready for review/.test(await waiting()), { timeout: 10_000, timeoutMsg: "the sidebar never showed the review waiting" });
    await shot(win.app, "terminal-question-answered-in-window");
    cli.stdin.write("a\n");
    const code = await Promise.race([exited, sleep(15_000).then(() => "still running after 15 s")]);
    assert.equal(code, 0, `approved at the terminal: ${said}`);
  } finally {
    cli.kill();
  }
});
