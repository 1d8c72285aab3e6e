// Tasks side by side in a git repository, as a new user meets them in the real window: three
// tasks started at once, each in its own worktree; one approved (it lands as one commit on the
// person's branch), one sent back with changes (it keeps its worktree), one rejected (it leaves
// nothing). The person's own uncommitted edit survives all of it. In a plain folder a second task
// asks first about the one waiting for review there.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { clickAway, resizeWindow, shot, typeInto, waitForScreen, waitStatus as waitStatusIn } from "./app.mjs";
import { appWindow } from "./window.mjs";

const win = appWindow({ scenario: "e2e-worktrees.json", port: 4610, name: "worktrees" });
const { testid } = win;
const git = (repo, ...args) => execFileSync("git", ["-C", repo, ...args], { encoding: "utf8" }).trim();

function repository() {
  const repo = mkdtempSync(path.join(tmpdir(), "finishline-repo-"));
  git(repo, "init", "-q", "-b", "main");
  git(repo, "config", "user.name", "Person");
  git(repo, "config", "user.email", "person@example.com");
  writeFileSync(path.join(repo, "README.md"), "hello\n");
  git(repo, "add", ".");
  git(repo, "commit", "-q", "-m", "init");
  writeFileSync(path.join(repo, "README.md"), "hello\nmy own edit, not committed\n");
  return repo;
}

async function start(repo, task) {
  await clickAway(await testid("nav-new"));
  await waitForScreen(win.app, "new-task-form");
  await typeInto(win.app, await testid("workspace-path"), repo);
  const where = await testid("workspace-isolation");
  await where.waitForDisplayed({ timeout: 10_000 });
  assert.match(await where.getText(), /its own worktree/, "New Task says the task gets its own worktree");
  await typeInto(win.app, await testid("task-input"), task);
  await clickAway(await testid("run"));
  const view = await testid("session-view");
  await view.waitForDisplayed({ timeout: 10_000 });
  return view.getAttribute("data-session");
}

async function open(id) {
  const selector = `[data-testid="side-session"][data-session="${id}"]`;
  const shown = async () => (await win.app.execute(() => document.querySelector('[data-testid="session-view"]')?.getAttribute("data-session") ?? null)) === id;
  // Looked up and clicked afresh until the session shows: the entry moves between the sidebar's
  // sections as statuses change, and WebKit's driver can find it just as it is replaced ("stale
  // element", one CI run) or click where it was a moment before, on its neighbour (another).
  await win.app.waitUntil(
    async () => {
      if (await shown()) return true;
      try {
        const entry = await win.app.$(selector);
        if (await entry.isExisting()) await clickAway(entry);
      } catch (e) {
        if (!/stale/i.test(String(e.message))) throw e;
      }
      return shown();
    },
    { timeout: 20_000, interval: 300, timeoutMsg: `the sidebar never opened ${id}` },
  );
}

const waitStatus = (status) => waitStatusIn(win.app, status);

test("three tasks side by side: one approved lands one commit, one rejected leaves nothing, one sent back keeps its worktree", async () => {
  const repo = repository();
  const before = git(repo, "rev-parse", "HEAD");
  const approved = await start(repo, "write approved.txt");
  const changes = await start(repo, "write changes.txt");
  const rejected = await start(repo, "write rejected.txt");
  const working = await win.app.$$('[data-testid="side-session"][data-status="busy"]');
  assert.ok(working.length >= 2, `the sidebar shows the tasks working at once (${working.length})`);
  assert.ok(!existsSync(path.join(repo, "approved.txt")), "while they run, the person's checkout is untouched");
  await shot(win.app, "worktrees-side-by-side");

  await open(approved);
  await waitStatus("awaiting_review");
  assert.match(await (await testid("session-worktree")).getText(), /finishline\/.* from main/, "the header names the task's branch");
  await (await testid("copy-worktree-path")).click();
  await win.app.waitUntil(async () => (await (await testid("worktree-said")).getText()).includes("Path copied"), { timeout: 5000, timeoutMsg: "copying the path never said it was copied" });
  const folder = await (await testid("worktree-path")).getAttribute("title");
  assert.ok(existsSync(path.join(folder, "approved.txt")), `copied, the header shows the worktree's folder, which holds the task's file (${folder})`);
  assert.match(await (await testid("approve")).getText(), /land on main/);
  await shot(win.app, "worktrees-review");
  // In a narrower window the review's row wraps or its "Land" choice narrows: no button of the
  // three ways lies over it, where a click meant for its arrow would reject the task.
  for (const width of [1000, 820]) {
    const restore = await resizeWindow(win.app, width, 700);
    try {
      const overlaps = await win.app.execute(() => {
        const box = (id) => document.querySelector(`[data-testid="${id}"]`).getBoundingClientRect();
        const land = box("landing-mode");
        return ["reject", "request-changes", "approve"].filter((id) => {
          const b = box(id);
          return b.left < land.right && land.left < b.right && b.top < land.bottom && land.top < b.bottom;
        });
      });
      assert.deepEqual(overlaps, [], `at ${width} px no button lies over the Land choice`);
      await shot(win.app, `worktrees-review-${width}`);
    } finally {
      await restore();
    }
  }
  await clickAway(await testid("approve"));
  await waitStatus("completed");
  assert.match(await (await testid("landed-summary")).getText(), /Landed on main as [0-9a-f]{7}/);

  await open(rejected);
  await waitStatus("awaiting_review");
  await clickAway(await testid("reject"));
  await testid("confirm-reject");
  // The question dims and covers the whole window, as every other one does. Drawn inside the
  // review's dock, a box that scrolls, WebKit painted it clipped to the dock (its title cut off
  // under the timeline) though its geometry and hit-testing said the whole window: so what is
  // checked is that no box that scrolls or clips holds it.
  const clippedBy = await win.app.execute(() => {
    const out = [];
    for (let el = document.querySelector('[data-testid="confirm-reject"]').parentElement; el && el !== document.body; el = el.parentElement) {
      if (getComputedStyle(el).overflowY !== "visible") out.push(el.className);
    }
    return out;
  });
  assert.deepEqual(clippedBy, [], "nothing that scrolls or clips holds the Reject question");
  await shot(win.app, "worktrees-reject-question");
  await clickAway(await testid("confirm-reject-go")); // the worktree goes: asked first
  await waitStatus("rejected");

  await open(changes);
  await waitStatus("awaiting_review");
  await clickAway(await testid("request-changes"));
  await typeInto(win.app, await testid("feedback-input"), "also write more.txt");
  await clickAway(await testid("send-feedback"));
  await win.app.waitUntil(async () => /more\.txt/.test(await (await testid("review-panel")).getText().catch(() => "")), { timeout: 30_000, timeoutMsg: "the second review never came" });
  await waitStatus("awaiting_review");
  // The review's files show once its diff view has loaded (and the first review's are gone).
  const paths = () => win.app.execute(() => [...document.querySelectorAll('[data-testid="file-change"]')].map((e) => e.getAttribute("data-path")));
  await win.app.waitUntil(async () => (await paths()).includes("more.txt"), { timeout: 10_000 }).catch(() => undefined);
  assert.deepEqual(await paths(), ["more.txt"], "the second review shows only what the second run changed");

  const log = git(repo, "log", "--format=%s", `${before}..main`).split("\n");
  assert.deepEqual(log, ["write approved.txt"], "exactly one new commit on the person's branch");
  assert.equal(readFileSync(path.join(repo, "approved.txt"), "utf8"), "approved\n");
  assert.ok(!existsSync(path.join(repo, "rejected.txt")) && !existsSync(path.join(repo, "changes.txt")));
  assert.equal(readFileSync(path.join(repo, "README.md"), "utf8"), "hello\nmy own edit, not committed\n", "the person's uncommitted edit is still there");
  const worktrees = git(repo, "worktree", "list", "--porcelain").split("\n").filter((l) => l.startsWith("worktree ")).map((l) => l.slice(9));
  assert.equal(worktrees.length, 2, `the repository and one task worktree: ${worktrees.join(", ")}`);
  assert.ok(existsSync(path.join(worktrees[1], "more.txt")), "the worktree left is the one with changes requested");
});

test("what .gitignore hides is kept at the person's word, and a cancelled task's work is discarded", async () => {
  const repo = repository();
  writeFileSync(path.join(repo, ".gitignore"), ".env\n");
  git(repo, "add", ".gitignore");
  git(repo, "commit", "-q", "-m", "ignore .env");

  const id = await start(repo, "write the config");
  await open(id);
  await waitStatus("awaiting_review");
  const hidden = await testid("review-not-landed");
  assert.match(await hidden.getText(), /your \.gitignore hides these/, "the review names what never lands");
  await clickAway(await win.app.$('button[aria-label="Copy .env into your checkout"]'));
  const copied = await testid("ignored-copied");
  await copied.waitForDisplayed({ timeout: 10_000 });
  assert.match(await copied.getText(), /Copied into your checkout: \.env\./);
  assert.equal(readFileSync(path.join(repo, ".env"), "utf8"), "TOKEN=from-the-task\n", "the file is in the person's checkout");
  await shot(win.app, "worktrees-copied-ignored");
  await clickAway(await testid("approve"));
  await waitStatus("completed");
  assert.equal(readFileSync(path.join(repo, "config.txt"), "utf8"), "config\n", "the task landed");
  assert.equal(readFileSync(path.join(repo, ".env"), "utf8"), "TOKEN=from-the-task\n", "and the copy stays after its worktree went");

  // Cancelled before it changed anything, a task leaves no worktree and waits for nobody.
  const quiet = await start(repo, "think quietly");
  await open(quiet);
  await waitStatus("busy");
  await (await testid("agent-text")).waitForDisplayed({ timeout: 10_000 });
  await clickAway(await testid("cancel"));
  await waitStatus("cancelled");
  const notes = async () => {
    const texts = [];
    for (const n of await win.app.$$('[data-testid="landing-note"]')) texts.push(await n.getText());
    return texts;
  };
  await win.app.waitUntil(async () => (await notes()).some((t) => /Nothing was changed/.test(t)), { timeout: 10_000, timeoutMsg: "the window never said the worktree went" });
  assert.ok((await notes()).some((t) => /its worktree and branch were removed: a message to go on starts a new one/.test(t)), String(await notes()));
  assert.ok(!(await (await testid("discard-offer")).isExisting()), "no work to discard");
  assert.equal(git(repo, "worktree", "list", "--porcelain").split("\n").filter((l) => l.startsWith("worktree ")).length, 1, "its worktree is gone");
  assert.ok(!(await win.app.$(`[data-testid="side-waiting"] [data-session="${quiet}"]`).isExisting()), "it is not under Waiting for you");
  await shot(win.app, "worktrees-cancelled-unchanged");

  // Cancelled after it wrote a file, its work waits in its worktree until discarded.
  const slow = await start(repo, "write slowly");
  await open(slow);
  await waitStatus("busy");
  await win.app.waitUntil(async () => (await win.app.$$('[data-testid="tool-card"][data-state="done"]')).length > 0, { timeout: 10_000, timeoutMsg: "the slow task never wrote its first file" });
  await clickAway(await testid("cancel"));
  await waitStatus("cancelled");
  await clickAway(await testid("discard-work"));
  await clickAway(await testid("confirm-discard-go"));
  await waitStatus("rejected");
  const offer = await testid("discard-offer");
  await offer.waitForExist({ reverse: true, timeout: 10_000 });
  await win.app.waitUntil(() => git(repo, "worktree", "list", "--porcelain").split("\n").filter((l) => l.startsWith("worktree ")).length === 1, {
    timeout: 15_000,
    timeoutMsg: "the discarded task's worktree was never removed",
  });
  assert.ok(!existsSync(path.join(repo, "slow.txt")), "nothing of the discarded task reached the checkout");
  await win.app.waitUntil(async () => (await notes()).some((t) => /^Discarded: its worktree and the branch finishline\/\S+ were removed/.test(t)), {
    timeout: 10_000,
    timeoutMsg: "the transcript never said the work was discarded",
  });

  // Put away keeping only its branch: the worktree goes, what the agent wrote stays on the branch.
  const kept = await start(repo, "write slowly");
  await open(kept);
  await waitStatus("busy");
  await win.app.waitUntil(async () => (await win.app.$$('[data-testid="tool-card"][data-state="done"]')).length > 0, { timeout: 10_000, timeoutMsg: "the second slow task never wrote its first file" });
  await clickAway(await testid("cancel"));
  await waitStatus("cancelled");
  await clickAway(await testid("discard-work"));
  await (await testid("confirm-discard")).waitForDisplayed({ timeout: 10_000 });
  const wrapped = await win.app.execute(() =>
    [...document.querySelectorAll('[data-testid="confirm-discard"] .actions .btn')].filter((b) => b.getClientRects().length > 1 || b.getBoundingClientRect().height > 44).map((b) => b.textContent),
  );
  assert.deepEqual(wrapped, [], "each of the question's choices reads on one line");
  const rows = await win.app.execute(() => new Set([...document.querySelectorAll('[data-testid="confirm-discard"] .actions .btn')].map((b) => Math.round(b.getBoundingClientRect().top))).size);
  assert.equal(rows, 1, "and the three choices sit side by side");
  await shot(win.app, "worktrees-discard-question");
  await clickAway(await testid("confirm-discard-keep-branch"));
  await waitStatus("rejected");
  await win.app.waitUntil(() => git(repo, "worktree", "list", "--porcelain").split("\n").filter((l) => l.startsWith("worktree ")).length === 1, {
    timeout: 15_000,
    timeoutMsg: "the put-away task's worktree was never removed",
  });
  const branches = git(repo, "branch", "--list", "finishline/*", "--format=%(refname:short)").split("\n").filter(Boolean);
  assert.equal(branches.length, 1, `only the kept task's branch is left: ${branches.join(", ")}`);
  assert.equal(git(repo, "show", `${branches[0]}:slow-start.txt`), "started", "what the agent wrote is committed on the kept branch");
  await win.app.waitUntil(async () => (await notes()).some((t) => t.includes(`Kept the branch ${branches[0]} with the task's work`)), {
    timeout: 10_000,
    timeoutMsg: "the window never said the branch was kept",
  });
  assert.ok(!existsSync(path.join(repo, "slow-start.txt")), "the kept work did not reach the checkout");
  await shot(win.app, "worktrees-put-away-branch-kept");

  // The same title in another repository: the sidebar tells them apart by folder, and the
  // folder's long name does not cut the title itself to a word.
  const elsewhere = await start(repository(), "write slowly");
  await open(elsewhere);
  await waitStatus("busy");
  const cut = await win.app.execute(() =>
    [...document.querySelectorAll('[data-testid="side-session"] .side-title-text')].filter((t) => t.textContent === "write slowly" && t.scrollWidth > t.clientWidth + 1).length,
  );
  assert.equal(cut, 0, "each same-titled task's title reads whole beside what tells it apart");
  // Two of them in one folder: a long folder name is cut, the time that tells them apart is not.
  const ends = await win.app.execute(() =>
    [...document.querySelectorAll('[data-testid="side-session"] .side-tell-end')].map((e) => {
      const row = e.closest(".side-session-title").getBoundingClientRect();
      const r = e.getBoundingClientRect();
      return { text: e.textContent, inside: r.right <= row.right + 0.5 && r.width > 0 };
    }),
  );
  assert.ok(ends.length >= 2 && ends.every((e) => e.inside), `the time of each same-titled task of one folder shows whole: ${JSON.stringify(ends)}`);
  await shot(win.app, "worktrees-same-titles");
  await clickAway(await testid("cancel"));
  await waitStatus("cancelled");
});

test("in a plain folder a second task asks first about the one waiting there: Review it first opens that one, the typed task kept, and Run anyway runs it beside", async () => {
  const folder = mkdtempSync(path.join(tmpdir(), "finishline-plain-"));
  const typeTask = async (task) => {
    await clickAway(await testid("nav-new"));
    await waitForScreen(win.app, "new-task-form");
    await typeInto(win.app, await testid("workspace-path"), folder);
    if (task) await typeInto(win.app, await testid("task-input"), task);
  };
  await typeTask("write approved.txt");
  const where = await testid("workspace-isolation");
  await where.waitForDisplayed({ timeout: 10_000 });
  assert.match(await where.getText(), /Works in the folder itself/);
  await clickAway(await testid("run"));
  await (await testid("session-view")).waitForDisplayed({ timeout: 10_000 });
  const first = await (await testid("session-view")).getAttribute("data-session");
  await waitStatus("awaiting_review");

  await typeTask();
  const waiting = await testid("workspace-waiting");
  await waiting.waitForDisplayed({ timeout: 10_000 });
  assert.match(await waiting.getText(), /“write approved\.txt” waits for your review here/, "said at the folder, before Run");
  await typeInto(win.app, await testid("task-input"), "write changes.txt");
  await clickAway(await testid("run"));
  const ask = await testid("workspace-busy-dialog");
  await ask.waitForDisplayed({ timeout: 10_000 });
  assert.match(await ask.getText(), /write approved\.txt/, "the question names the waiting task");
  const review = await testid("busy-open");
  await review.waitForDisplayed({ timeout: 10_000 });
  assert.equal(await review.getText(), "Review it first");
  await shot(win.app, "plain-folder-undecided-question");
  await clickAway(review);
  await win.app.waitUntil(async () => (await win.app.execute(() => document.querySelector('[data-testid="session-view"]')?.getAttribute("data-session") ?? null)) === first, {
    timeout: 10_000,
    timeoutMsg: "Review it first never opened the waiting task",
  });
  await (await testid("review-panel")).waitForDisplayed({ timeout: 10_000 });
  assert.ok(!existsSync(path.join(folder, "changes.txt")), "nothing of the second task ran");

  await clickAway(await testid("nav-new"));
  await waitForScreen(win.app, "new-task-form");
  assert.equal(await (await testid("task-input")).getValue(), "write changes.txt", "the typed task waited, unsent");
  await clickAway(await testid("run"));
  await (await testid("workspace-busy-dialog")).waitForDisplayed({ timeout: 10_000 });
  await (await testid("busy-run")).waitForDisplayed({ timeout: 10_000 });
  await clickAway(await testid("busy-run"));
  await win.app.waitUntil(async () => {
    const id = await win.app.execute(() => document.querySelector('[data-testid="session-view"]')?.getAttribute("data-session") ?? null);
    return id !== null && id !== first;
  }, { timeout: 10_000, timeoutMsg: "Run anyway never started the second task" });
  await waitStatus("awaiting_review");
  const paths = () => win.app.execute(() => [...document.querySelectorAll('[data-testid="file-change"]')].map((e) => e.getAttribute("data-path")));
  await win.app.waitUntil(async () => (await paths()).length > 0, { timeout: 10_000 }).catch(() => undefined);
  assert.deepEqual(await paths(), ["changes.txt"], "its review is its own, not the waiting task's file too");
  assert.ok(existsSync(path.join(folder, "approved.txt")) && existsSync(path.join(folder, "changes.txt")), "both tasks' files are in the folder");
});
