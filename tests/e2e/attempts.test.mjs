// Attempts side by side in the real window: one task by two attempts of Finishline's agent, each
// in its own worktree; the sidebar shows them under one entry while they run; the group screen
// ranks them with the reason, asks the evaluator to compare them, shows where they differ, and
// lands the one chosen as one commit, putting the other away.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { clickAway, shot, typeInto, waitForScreen } from "./app.mjs";
import { appWindow } from "./window.mjs";

const win = appWindow({ scenario: "e2e-attempts.json", port: 4612, name: "attempts" });
const { testid } = win;
const git = (repo, ...args) => execFileSync("git", ["-C", repo, ...args], { encoding: "utf8" }).trim();

function repository() {
  const repo = mkdtempSync(path.join(tmpdir(), "finishline-attempts-"));
  git(repo, "init", "-q", "-b", "main");
  git(repo, "config", "user.name", "Person");
  git(repo, "config", "user.email", "person@example.com");
  writeFileSync(path.join(repo, "README.md"), "hello\n");
  git(repo, "add", ".");
  git(repo, "commit", "-q", "-m", "init");
  return repo;
}

/** New Task with the repository and the task filled in and Attempts on; the Run button is next. */
async function attemptsForm(repo, task) {
  await waitForScreen(win.app, "new-task-form");
  await typeInto(win.app, await testid("workspace-path"), repo);
  await (await testid("workspace-isolation")).waitForDisplayed({ timeout: 10_000 });
  await typeInto(win.app, await testid("task-input"), task);
  const toggle = await testid("attempts-toggle");
  await toggle.waitForEnabled({ timeout: 10_000 });
  if (!(await toggle.isSelected())) await clickAway(toggle);
}

test("two attempts run under one entry, are ranked, compared by the evaluator on request, and the chosen one lands", async () => {
  const repo = repository();
  const before = git(repo, "rev-parse", "HEAD");
  await attemptsForm(repo, "write greet.txt");
  assert.match(await (await testid("attempts-total")).getText(), /2 of at most 4 attempts/, "two attempts of the built-in agent by default");
  assert.match(await (await testid("run")).getText(), /Run attempts/);
  await shot(win.app, "attempts-new-task");
  await clickAway(await testid("run"));

  const view = await testid("attempts-view");
  await view.waitForDisplayed({ timeout: 10_000 });
  const group = await view.getAttribute("data-group");
  // While they run, the sidebar holds them under one entry.
  // Looked up afresh each time: the entry moves between sidebar sections as statuses change,
  // and a reference kept from before the move would be stale.
  const entry = `[data-testid="side-group"][data-group="${group}"]`;
  await (await win.app.$(entry)).waitForExist({ timeout: 10_000 });
  await win.app.waitUntil(async () => (await win.app.$$(`${entry} [data-testid="side-session"][data-status="busy"]`)).length === 2, { timeout: 10_000, timeoutMsg: "both attempts should show working under the group" });
  // Each running attempt's card says what it is doing, live from its session.
  await win.app.waitUntil(async () => (await win.app.execute(() => [...document.querySelectorAll('[data-testid="attempt-end"]')].some((e) => /^Step \d+ · .+ · working for/.test(e.textContent)))), {
    timeout: 30_000,
    interval: 100,
    timeoutMsg: "a running attempt's card should say its step and what it is doing",
  });
  await shot(win.app, "attempts-running");

  // Both end; the ranking says why the first is first.
  await win.app.waitUntil(async () => (await win.app.$$('[data-testid="attempt-land"]')).length === 2, { timeout: 60_000, timeoutMsg: "both attempts should reach their review" });
  const attempts = await win.app.$$('[data-testid="attempt"]');
  assert.equal(await attempts[0].getAttribute("data-rank"), "1");
  assert.match(await (await attempts[0].$('[data-testid="attempt-reason"]')).getText(), /Above the next: a smaller diff/, "both verified: the smaller diff ranks first");
  assert.match(await (await attempts[0].$('[data-testid="attempt-checks"]')).getText(), /no command|pass/);
  const first = await attempts[0].getAttribute("data-session");
  // Side by side, as the screen says: their evidence compared at a glance, not one under the other.
  const cards = await win.app.execute(() => [...document.querySelectorAll('[data-testid="attempt"]')].map((e) => [Math.round(e.getBoundingClientRect().top), Math.round(e.getBoundingClientRect().left)]));
  assert.equal(cards[0][0], cards[1][0], `the two attempts stand in one row: ${JSON.stringify(cards)}`);
  assert.ok(cards[1][1] > cards[0][1], "the second beside the first");
  await shot(win.app, "attempts-ranked");

  // The first time it is asked, the evaluator says nothing. The comparison goes on while the
  // person looks elsewhere, shows again when they come back, and stops when they say so.
  await clickAway(await testid("attempts-compare"));
  await win.app.waitUntil(async () => /Comparing…/.test(await (await testid("attempts-compare")).getText()), { timeout: 5_000, timeoutMsg: "the button should say it is comparing" });
  await clickAway(await testid("nav-history"));
  await waitForScreen(win.app, "history");
  await clickAway(await win.app.$(`[data-testid="side-group"][data-group="${group}"] [data-testid="side-group-open"]`));
  await (await testid("attempts-view")).waitForDisplayed({ timeout: 10_000 });
  assert.match(await (await testid("attempts-compare")).getText(), /Comparing…/, "still comparing when the person comes back");
  assert.equal(await (await win.app.$$('[data-testid="attempt-land"]'))[0].isEnabled(), false, "nothing lands while the evaluator is asked");
  await shot(win.app, "attempts-comparing");
  await clickAway(await testid("attempts-stop-comparing"));
  await win.app.waitUntil(async () => /Stopped before the evaluator answered/.test(await (await testid("attempts-notice")).getText()), { timeout: 10_000, timeoutMsg: "stopping should say what was kept" });
  assert.equal((await win.app.$$('[data-testid="attempts-stop-comparing"]')).length, 0);

  // Asked again, the evaluator prefers the second; the rule's smaller diff still decides the order.
  await clickAway(await testid("attempts-compare"));
  const said = await testid("attempt-evaluator");
  await said.waitForDisplayed({ timeout: 20_000 });
  const labels = await win.app.$$('[data-testid="attempt-label"]');
  const [upper, lower] = [await labels[0].getText(), await labels[1].getText()];
  assert.ok((await said.getText()).includes(`The evaluator, shown ${upper} first and ${lower} second, prefers ${lower}`), await said.getText());
  assert.match(await said.getText(), /the second greets the reader at more length/);
  assert.equal(await (await win.app.$$('[data-testid="attempt"]'))[0].getAttribute("data-session"), first, "its word never reverses the rule");
  assert.match(await (await testid("attempt-evaluator-overruled")).getText(), /The rule decides here, on a smaller diff/, "and the attempt says so, for as long as it is shown");
  assert.match(await (await testid("attempts-notice")).getText(), /orders only attempts the rule finds equal/);
  await shot(win.app, "attempts-compared");

  // The attempt's own session shows the evaluator's word in its timeline.
  await clickAway(await (await win.app.$(`[data-testid="attempt"][data-session="${first}"]`)).$('[data-testid="attempt-open"]'));
  const card = await testid("compared-card");
  await card.waitForExist({ timeout: 10_000 });
  assert.match(await card.getText(), /prefers the other/);
  await win.app.waitUntil(async () => (await card.getText()).includes(`comparing this attempt with ${lower}`), { timeout: 5_000, timeoutMsg: `the card should name the other attempt, ${lower}` });
  assert.match(await card.getText(), /the second greets the reader at more length/);
  await clickAway(await testid("open-attempts"));
  await (await testid("attempts-view")).waitForDisplayed({ timeout: 10_000 });

  await clickAway(await testid("tab-differences"));
  const diff = await testid("difference");
  await diff.waitForDisplayed({ timeout: 10_000 });
  assert.equal(await diff.getAttribute("data-path"), "greet.txt");
  assert.equal(await diff.getAttribute("data-same"), "no", "the attempts wrote different greetings");
  assert.match(await diff.getText(), /hello there/);
  await shot(win.app, "attempts-differences");

  await clickAway(await testid("tab-ranking"));
  const land = await (await win.app.$(`[data-testid="attempt"][data-session="${first}"]`)).$('[data-testid="attempt-land"]');
  await clickAway(land);
  assert.match(await (await testid("attempt-land-dialog")).getText(), /It lands on main as one commit\./, "the dialog says where and how it lands");
  await clickAway(await testid("attempt-land-confirm"));
  // Looked up afresh: the comparison's notice goes when the choice starts.
  const landed = async () => {
    const notice = await win.app.$('[data-testid="attempts-notice"]');
    return (await notice.isExisting()) && /chosen\. Landed on main as [0-9a-f]{7} \(1 file\)\. The other attempt was rejected and its worktree removed/.test(await notice.getText());
  };
  await win.app.waitUntil(landed, { timeout: 20_000, timeoutMsg: "the screen should say the chosen attempt landed" });
  assert.deepEqual(git(repo, "log", "--format=%s", `${before}..main`).split("\n"), ["write greet.txt"], "exactly one new commit");
  assert.equal(readFileSync(path.join(repo, "greet.txt"), "utf8"), "hello\n", "the chosen attempt's file");
  await win.app.waitUntil(async () => git(repo, "worktree", "list", "--porcelain").split("\n").filter((l) => l.startsWith("worktree ")).length === 1, { timeout: 20_000, timeoutMsg: "no attempt's worktree should be left" });
  await shot(win.app, "attempts-landed");

  // History holds the group as one row, with the chosen attempt's outcome.
  await clickAway(await testid("nav-history"));
  const row = await win.app.$(`[data-testid="history-row"][data-group="${group}"]`);
  await row.waitForExist({ timeout: 10_000 });
  await win.app.waitUntil(async () => (await row.getAttribute("data-status")) === "completed", { timeout: 10_000, timeoutMsg: "the group's row should say completed, as its chosen attempt" });
  assert.match(await row.getText(), /2 attempts · chose /);
  assert.match(await row.getText(), /Verified done/);
  // Every button of the row is in the window, none cut off behind a scroller at the edge.
  const right = await win.app.execute(() => document.documentElement.clientWidth);
  for (const button of await row.$$("button")) {
    const { x } = await button.getLocation();
    const { width } = await button.getSize();
    assert.ok(x + width <= right, `"${await button.getText()}" ends at ${Math.round(x + width)} px, past the window's ${right} px`);
  }
  // The group's four buttons in even rows (they wrapped one, two and one), and its attempts said
  // in words, not in a bordered box that reads as a field.
  const layout = await win.app.execute((g) => {
    const row = document.querySelector(`[data-testid="history-row"][data-group="${g}"]`);
    const tops = [...row.querySelectorAll(".group-actions button")].map((b) => Math.round(b.getBoundingClientRect().top));
    const perRow = [...new Set(tops)].map((t) => tops.filter((x) => x === t).length);
    return { perRow, border: getComputedStyle(row.querySelector('[data-testid="history-attempts"]')).borderTopStyle };
  }, group);
  assert.ok(layout.perRow.every((n) => n === layout.perRow[0]), `as many buttons on each row: ${JSON.stringify(layout.perRow)}`);
  assert.equal(layout.border, "none", "the attempts line has no box of its own");
  await shot(win.app, "attempts-history");
});

test("attempts cancelled with nothing to land are rejected as a group, which the screen says at once", async () => {
  const repo = repository();
  await clickAway(await testid("nav-new"));
  await attemptsForm(repo, "a slow task");
  await clickAway(await testid("run"));
  const view = await testid("attempts-view");
  await view.waitForDisplayed({ timeout: 10_000 });
  const worktrees = () => git(repo, "worktree", "list", "--porcelain").split("\n").filter((l) => l.startsWith("worktree ")).length;
  await win.app.waitUntil(async () => worktrees() === 3, { timeout: 20_000, timeoutMsg: "each attempt should have its worktree" });

  await clickAway(await testid("attempts-cancel"));
  await clickAway(await testid("attempts-cancel-confirm"));
  const state = async () => (await (await testid("attempts-state")).getText()) ?? "";
  await win.app.waitUntil(async () => /none has work to land/.test(await state()), { timeout: 20_000, timeoutMsg: "the group should say none has work to land" });
  await clickAway(await testid("attempts-reject-all"));
  await clickAway(await testid("attempts-reject-all-confirm"));
  await win.app.waitUntil(async () => /put away: none landed/.test(await state()), { timeout: 5_000, timeoutMsg: "the screen should say the group was put away" });
  assert.equal((await win.app.$$('[data-testid="attempts-reject-all"]')).length, 0, "nothing left to reject");
  await win.app.waitUntil(async () => worktrees() === 1, { timeout: 20_000, timeoutMsg: "no attempt's worktree should be left" });
  await shot(win.app, "attempts-rejected");

  // None chosen, the group exports whole from its row in History (the newest row).
  await clickAway(await testid("nav-history"));
  const row = await win.app.$('[data-testid="history-row"]');
  await row.waitForExist({ timeout: 10_000 });
  await clickAway(await row.$("button=Markdown"));
  const text = await testid("export-text");
  await text.waitForDisplayed({ timeout: 10_000 });
  await win.app.waitUntil(async () => (await text.getText()).startsWith("# Attempts: a slow task"), { timeout: 10_000, timeoutMsg: "the export should be the group's" });
  assert.match(await text.getText(), /None was chosen: you rejected every attempt\./);
  assert.match(await text.getText(), /# Attempt 1 of 2: [\s\S]*# Attempt 2 of 2: /, "every attempt's session follows");
});
