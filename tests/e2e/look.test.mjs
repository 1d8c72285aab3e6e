// What a person sees all day: Settings that never drop typed input, the dark theme with readable
// dropdowns, a session whose header and bottom bar stay in view, and a narrow window.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { clickAway, resizeWindow, shot, typeInto, waitForScreen, statusNow as statusIn } from "./app.mjs";
import { appWindow } from "./window.mjs";

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const win = appWindow({ scenario: "e2e-workday.json", port: 4580, name: "look" });

const q = (sel) => win.app.$(sel);
const testid = (id) => q(`[data-testid="${id}"]`);
const statusNow = () => statusIn(win.app);
/** Whether the element is inside the window, not scrolled away. */
const inView = (id) =>
  win.app.execute((id) => {
    const r = document.querySelector(`[data-testid="${id}"]`).getBoundingClientRect();
    return r.top >= 0 && r.bottom <= window.innerHeight;
  }, id);
const waitStatus = (s, timeout = 20_000) => win.app.waitUntil(async () => (await statusNow()) === s, { timeout, timeoutMsg: `the session never reached ${s}` });

test("Settings keep typed input when the person leaves: asked, kept, saved", async () => {
  await (await testid("nav-settings")).click();
  const model = await testid("provider-model");
  await model.waitForDisplayed({ timeout: 10_000 });
  await model.clearValue();
  await typeInto(win.app, model, "fake-model-2");
  assert.equal(await (await testid("settings-status")).getText(), "Unsaved changes");
  assert.ok(await inView("save-settings"), "Save is in view without scrolling to the bottom of the page");
  await (await testid("nav-new")).click();
  await (await testid("leave-settings")).waitForDisplayed({ timeout: 5_000 });
  await (await testid("leave-stay")).click();
  assert.equal(await (await testid("provider-model")).getValue(), "fake-model-2", "Keep editing keeps what was typed");
  await (await testid("nav-history")).click();
  await (await testid("leave-save")).click();
  await waitForScreen(win.app, "history");
  await (await testid("nav-settings")).click();
  await (await testid("provider-model")).waitForDisplayed({ timeout: 10_000 });
  assert.equal(await (await testid("provider-model")).getValue(), "fake-model-2", "Save in the question saved it");
});

test("the dark theme: native dropdowns are dark too", async () => {
  const theme = await testid("theme-select");
  await theme.scrollIntoView({ block: "center" });
  await theme.selectByAttribute("value", "dark");
  await (await testid("save-settings")).click();
  await win.app.waitUntil(async () => (await win.app.execute(() => document.documentElement.getAttribute("data-theme"))) === "dark", { timeout: 5_000, timeoutMsg: "the theme was not applied" });
  const look = await win.app.execute(() => {
    const sel = document.querySelector('[data-testid="theme-select"]');
    const cs = getComputedStyle(sel);
    const lum = (c) => {
      const [r, g, b] = c.match(/\d+/g).map(Number);
      return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255;
    };
    return { scheme: getComputedStyle(document.documentElement).colorScheme, bg: lum(cs.backgroundColor), fg: lum(cs.color) };
  });
  assert.equal(look.scheme, "dark", "native controls are told the page is dark, so their popups are dark");
  assert.ok(look.bg < 0.25 && look.fg > 0.7, `the dropdown is light text on a dark box: ${JSON.stringify(look)}`);
  await (await testid("settings-status")).waitUntil(async function () {
    return (await this.getText()) === "Saved";
  }, { timeout: 5_000, timeoutMsg: "the theme change was never saved" });
  await new Promise((r) => setTimeout(r, 300)); // the screenshot shows the last painted frame
  await shot(win.app, "settings-dark");
});

test("a session keeps its header and the review in view while the timeline scrolls", async () => {
  await (await testid("nav-new")).click();
  await waitForScreen(win.app, "new-task-form");
  await typeInto(win.app, await testid("task-input"), "write a.txt with the letter A");
  await typeInto(win.app, await testid("workspace-path"), mkdtempSync(path.join(tmpdir(), "finishline-ws-")));
  await (await testid("run")).click();
  await waitStatus("awaiting_review");
  await win.app.execute(() => {
    const m = document.querySelector("main.content");
    m.scrollTop = 0;
  });
  assert.ok(await inView("approve"), "the review's buttons are in the bottom bar, in view at any scroll position");
  assert.ok(await inView("status-badge"), "the status stays pinned at the top");
  assert.ok(await (await testid("bottom-bar")).$('[data-testid="review-panel"]').isExisting(), "the review sits in the bottom bar");
  await shot(win.app, "session-dark");
});

/** Where the focused element is, and what covers its top or its foot (null: nothing). */
const focusedShows = () =>
  win.app.execute(() => {
    const el = document.activeElement;
    const r = el.getBoundingClientRect();
    const over = (y) => {
      const at = document.elementFromPoint(r.left + Math.min(8, r.width / 2), y);
      return el.contains(at) ? null : (at?.closest("[data-testid]")?.getAttribute("data-testid") ?? "nothing");
    };
    const m = document.querySelector("main.content");
    const label = el.closest("label, .field")?.getBoundingClientRect();
    return { labelHidden: !!label && label.top < m.getBoundingClientRect().top, inTimeline: !!el.closest('[data-testid="timeline"]'), what: el.getAttribute("data-testid") ?? el.className, top: over(r.top + 2), bottom: over(r.bottom - 2), scrolls: m.scrollHeight > m.clientHeight };
  });

test("what the keyboard reaches in the timeline is shown whole, not under the pinned header or the review", async () => {
  // A short window: the timeline scrolls between the header and the review at the bottom.
  const restore = await resizeWindow(win.app, 1000, 520);
  try {
    // Scrolled to one end, the focus is put just before (or after) the timeline, and
    // Tab (or Shift+Tab) takes it into the timeline, as a person's keys would.
    const enter = async (from) => {
      await win.app.execute((from) => {
        const m = document.querySelector("main.content");
        m.scrollTop = from === "header" ? m.scrollHeight : 0;
        const timeline = document.querySelector('[data-testid="timeline"]');
        const focusable = [...document.querySelectorAll("button, [href], input, textarea, select")].filter((e) => !e.disabled && e.getClientRects().length > 0 && !timeline.contains(e));
        const side = from === "header" ? Node.DOCUMENT_POSITION_PRECEDING : Node.DOCUMENT_POSITION_FOLLOWING;
        const outside = focusable.filter((e) => timeline.compareDocumentPosition(e) & side);
        (from === "header" ? outside[outside.length - 1] : outside[0]).focus();
      }, from);
      await win.app.keys(from === "header" ? ["Tab"] : ["Shift", "Tab"]);
      return focusedShows();
    };
    const first = await enter("header");
    assert.ok(first.inTimeline && first.scrolls, `Tab from the header reaches the scrolling timeline: ${JSON.stringify(first)}`);
    assert.deepEqual([first.top, first.bottom], [null, null], `tabbed to from the header, it is not under the header or the review: ${JSON.stringify(first)}`);
    const last = await enter("review");
    assert.ok(last.inTimeline, `Shift+Tab from the review reaches the timeline: ${JSON.stringify(last)}`);
    assert.deepEqual([last.top, last.bottom], [null, null], `tabbed back to from the review, it is not under the header or the review: ${JSON.stringify(last)}`);
  } finally {
    await win.app.keys(["Shift"]); // the modifier is let go
    await restore();
  }
});

test("Request changes on a folded review opens its box, in view and with the focus in it", async () => {
  // The session at review from the tests above.
  await clickAway(await testid("review-fold"));
  await win.app.waitUntil(async () => (await (await testid("review-fold")).getAttribute("aria-expanded")) === "false", { timeout: 5_000, timeoutMsg: "the review did not fold" });
  await clickAway(await testid("request-changes"));
  const box = await testid("feedback-input");
  await box.waitForDisplayed({ timeout: 5_000, timeoutMsg: "the feedback box stays hidden in the folded review" });
  assert.ok(await box.isFocused(), "the focus is in the box, ready for the words");
  await win.app.keys(["Escape"]);
  await box.waitForDisplayed({ reverse: true, timeout: 5_000 });
  await clickAway(await testid("review-fold"));
});

test("a sidebar session reached with Tab shows its whole focus ring, not cut by the scrolling list", async () => {
  // Tab from the last item before the sessions, as a person's keys reach it.
  await win.app.execute(() => document.querySelector('[data-testid="nav-settings"]').focus());
  await win.app.keys(["Tab"]);
  const ring = await win.app.execute(() => {
    const entry = document.activeElement;
    if (entry?.getAttribute("data-testid") !== "side-session" || !entry.matches(":focus-visible")) return { fits: false, focused: entry?.outerHTML.slice(0, 80) };
    const list = entry.closest(".side-sessions").getBoundingClientRect();
    const r = entry.getBoundingClientRect();
    const shadow = getComputedStyle(entry).boxShadow;
    // How far the ring reaches outside the entry: the widest spread of a shadow not drawn inset.
    const outside = shadow === "none" ? 0 : Math.max(0, ...shadow.split(/,(?![^(]*\))/).filter((s) => !s.includes("inset")).map((s) => Number(s.match(/(-?[\d.]+)px\s*$/)?.[1] ?? s.match(/(-?[\d.]+)px(?!.*px)/)?.[1] ?? 0)));
    return { outside, fits: r.left - outside >= list.left && r.right + outside <= list.right, shadow };
  });
  assert.ok(ring.fits, `the ring is inside the list's box: ${JSON.stringify(ring)}`);
  await shot(win.app, "sidebar-focus-ring");
});

test("the shortcut list fits a short window: its Close is in view and the list scrolls", async () => {
  const restore = await resizeWindow(win.app, 1000, 520);
  try {
    await (await testid("nav-history")).click();
    await waitForScreen(win.app, "history");
    await win.app.keys(["?"]);
    const list = await testid("shortcuts");
    await list.waitForDisplayed({ timeout: 5_000 });
    const fit = await win.app.execute(() => {
      const close = document.activeElement.getBoundingClientRect();
      const dialog = document.querySelector('[data-testid="shortcuts"]');
      const box = dialog.getBoundingClientRect();
      const title = dialog.querySelector("h2").getBoundingClientRect();
      return { focused: document.activeElement.textContent, close: [close.top, close.bottom], title: [title.top, title.bottom], box: [box.top, box.bottom], height: innerHeight };
    });
    assert.equal(fit.focused, "Close");
    assert.ok(fit.box[0] >= 0 && fit.box[1] <= fit.height && fit.close[1] <= fit.box[1], `the list and its focused Close are inside the window: ${JSON.stringify(fit)}`);
    assert.ok(fit.title[0] >= fit.box[0], `it opens at its title: ${JSON.stringify(fit)}`);
    await shot(win.app, "shortcuts-short-window");
  } finally {
    // Closed whatever happened: left open, it would take every later test's clicks.
    if (await (await testid("shortcuts")).isExisting()) await win.app.keys(["Escape"]);
    await restore();
  }
});

test("Tab through Settings in a short window: each field shows clear of the pinned Save", async () => {
  await clickAway(await testid("nav-settings"));
  await waitForScreen(win.app, "settings-form");
  const restore = await resizeWindow(win.app, 1000, 520);
  try {
    await win.app.execute(() => {
      document.querySelector("main.content").scrollTop = 0;
      document.querySelector('[data-testid="settings-form"] input, [data-testid="settings-form"] select').focus();
    });
    const hidden = [];
    for (const key of [...Array(30).fill(["Tab"]), ...Array(30).fill(["Shift", "Tab"])]) {
      await win.app.keys(key);
      const now = await focusedShows();
      // Its label too: a field brought in from below the top edge showed only its box.
      if (now.top !== null || now.bottom !== null || now.labelHidden) hidden.push(now);
    }
    await win.app.keys(["Shift"]); // let go
    assert.deepEqual(hidden, [], "no field the keyboard reached, forwards or back, was under the Save bar or had its label out of view");
  } finally {
    await restore();
  }
});

test("a Settings field being typed in stays clear of Save when the window is made shorter", async () => {
  await clickAway(await testid("nav-settings"));
  await waitForScreen(win.app, "settings-form");
  // The lowest field above the Save bar at the full height, with the focus in it.
  await win.app.execute(() => {
    const m = document.querySelector("main.content");
    m.scrollTop = 0;
    const bar = document.querySelector('[data-pinned="bottom"]').getBoundingClientRect();
    const fields = [...document.querySelectorAll('[data-testid="settings-form"] input:not([type=checkbox]):not([type=radio]), [data-testid="settings-form"] textarea')];
    const lowest = fields.filter((f) => f.getBoundingClientRect().bottom < bar.top - 4).at(-1);
    lowest.focus();
  });
  const restore = await resizeWindow(win.app, 1000, 520);
  try {
    await sleep(400);
    const now = await focusedShows();
    assert.equal(now.bottom, null, `the field typed in (${now.what}) is not under the Save bar after the window shrank`);
  } finally {
    await restore();
  }
});

/** Types a task and a folder on New Task and runs it. */
async function runTask(task, ws) {
  await (await testid("nav-new")).click();
  await waitForScreen(win.app, "new-task-form");
  const box = await testid("task-input");
  await box.clearValue();
  await typeInto(win.app, box, task);
  const folder = await testid("workspace-path");
  await folder.clearValue();
  await typeInto(win.app, folder, ws);
  await (await testid("run")).click();
  await (await testid("session-view")).waitForDisplayed({ timeout: 10_000 });
}

async function saveSettings() {
  await (await testid("save-settings")).click();
  await (await testid("settings-status")).waitUntil(async function () {
    return (await this.getText()) === "Saved";
  }, { timeout: 5_000, timeoutMsg: "Settings were not saved" });
}

test("a verify command from Settings runs without asking, numbered and marked as the person's own", async () => {
  const ws = mkdtempSync(path.join(tmpdir(), "finishline-ws-"));
  await (await testid("nav-settings")).click();
  const verify = await testid("verify-commands");
  await verify.waitForDisplayed({ timeout: 10_000 });
  await verify.scrollIntoView({ block: "center" });
  await typeInto(win.app, verify, `${ws}: test -f a.txt`);
  await saveSettings();
  await runTask("write a.txt with the letter A", ws);
  await waitStatus("awaiting_review");
  assert.equal((await win.app.$$('[data-testid="permission-prompt"]')).length, 0, "the person's own verify command never asks as if the agent did");
  const card = await testid("verification-card");
  assert.match(await card.getText(), /Verification: test -f a\.txt exit 0/);
  assert.match(await card.getText(), /your verify command/);
});

test("a refused connection offers Retry and Open Settings, and Retry goes on after the fix", async () => {
  await (await testid("nav-settings")).click();
  const url = await testid("provider-base-url");
  await url.waitForDisplayed({ timeout: 10_000 });
  await url.clearValue();
  await typeInto(win.app, url, "http://127.0.0.1:9/v1");
  const retries = await testid("max-retries");
  await retries.scrollIntoView({ block: "center" });
  await retries.clearValue();
  await typeInto(win.app, retries, "1");
  await saveSettings();
  await runTask("write a.txt with the letter A", mkdtempSync(path.join(tmpdir(), "finishline-ws-")));
  await waitStatus("failed", 60_000);
  const actions = await testid("failure-actions");
  await actions.waitForDisplayed({ timeout: 5_000 });
  assert.match(await actions.getText(), /could not be reached/i, "the failure says what went wrong");
  await shot(win.app, "refused-connection");
  await (await testid("open-settings")).click();
  const again = await testid("provider-base-url");
  await again.waitForDisplayed({ timeout: 10_000 });
  await again.clearValue();
  await typeInto(win.app, again, win.fake.baseUrl);
  await saveSettings();
  await (await testid("nav-history")).click();
  await waitForScreen(win.app, "history");
  await (await q('[data-testid="history-row"][data-status="failed"] button.link')).click();
  await (await testid("retry-run")).click();
  await waitStatus("awaiting_review", 30_000);
});

test("a narrow window folds the sidebar to icons and History still fits", async () => {
  const restore = await resizeWindow(win.app, 700, 700);
  try {
    const sidebar = await win.app.execute(() => document.querySelector("nav.sidebar").getBoundingClientRect().width);
    assert.ok(sidebar < 80, `the sidebar folds to its icons (${sidebar}px)`);
    assert.equal(await (await q(".nav-item .nav-label")).isDisplayed(), false, "nav labels are hidden; the buttons keep their titles");
    // The session the test before left waiting for review stays one click away.
    const waiting = await testid("side-compact-waiting");
    assert.ok(await waiting.isDisplayed(), "what waits for the person shows as a count");
    assert.match(await waiting.getAttribute("aria-label"), /^[1-9]\d* waiting for you$/);
    await shot(win.app, "narrow-sidebar");
    await clickAway(waiting);
    await waitForScreen(win.app, "session-view");
    await (await testid("nav-history")).click();
    await waitForScreen(win.app, "history");
    const overflow = await win.app.execute(() => document.querySelector("main.content").scrollWidth - document.querySelector("main.content").clientWidth);
    assert.ok(overflow <= 1, `History fits the window without sideways scrolling (${overflow}px over)`);
    await shot(win.app, "narrow-history");
    // A little wider, the sidebar is whole again and leaves the table less room than at 700.
    await resizeWindow(win.app, 900, 700);
    const fits = await win.app.execute(() => {
      const table = document.querySelector(".table-scroll");
      const main = document.querySelector("main.content").getBoundingClientRect();
      const buttons = [...document.querySelectorAll('[data-testid="history-row"] .row-actions button')].map((b) => b.getBoundingClientRect());
      const cols = [...document.querySelectorAll('[data-testid="history-row"]:first-child > td')].map((td) => Math.round(td.getBoundingClientRect().width));
      return { cols, width: table.clientWidth, over: table.scrollWidth - table.clientWidth, hidden: buttons.filter((r) => r.right > main.right || r.left < main.left).length, buttons: buttons.length };
    });
    await shot(win.app, "history-900");
    assert.ok(fits.buttons > 0, "History lists sessions here");
    assert.ok(fits.over <= 1, `at 900 px History's table does not scroll sideways (${fits.over}px over: ${fits.cols} in ${fits.width})`);
    assert.equal(fits.hidden, 0, "every row's buttons are in view");
  } finally {
    await restore();
  }
});

test("a pasted URL longer than the window breaks in the task's bubble and in History, never widening the page", async () => {
  const url = `https://example.com/${"a".repeat(260)}`;
  await runTask(`Look at ${url} then write a.txt with the letter A`, mkdtempSync(path.join(tmpdir(), "finishline-ws-")));
  await waitStatus("awaiting_review", 30_000);
  const over = () => win.app.execute(() => document.querySelector("main.content").scrollWidth - document.querySelector("main.content").clientWidth);
  assert.ok((await over()) <= 1, `the session fits the window without sideways scrolling (${await over()}px over)`);
  await (await testid("nav-history")).click();
  await waitForScreen(win.app, "history");
  assert.ok((await over()) <= 1, `History fits the window without sideways scrolling (${await over()}px over)`);
  const right = await win.app.execute(() => [document.querySelector('[data-testid="export-md"]').getBoundingClientRect().right, window.innerWidth]);
  assert.ok(right[0] <= right[1], `the row's buttons are in view (${right[0]} of ${right[1]}px)`);
  await shot(win.app, "long-url-history");
});

test("New Task's Plan switch keeps its focus ring as the arrow keys move the choice", async () => {
  await (await testid("nav-new")).click();
  await waitForScreen(win.app, "new-task-form");
  const ring = () =>
    win.app.execute(() => {
      const focused = document.activeElement?.closest('[data-testid^="plan-label-"]');
      return focused ? [focused.dataset.testid, getComputedStyle(focused).boxShadow] : [null, "none"];
    });
  // Reached with Tab from the box before it, as a person moving through the form does.
  await win.app.execute(() => document.querySelector('input[name="plan"]:checked').focus());
  await win.app.keys(["ArrowLeft"]);
  await win.app.waitUntil(async () => (await ring())[0] !== null, { timeout: 5_000, timeoutMsg: "the arrow key left the Plan switch" });
  const [label, shadow] = await ring();
  assert.notEqual(shadow, "none", `the newly chosen ${label} shows where the focus is`);
  await shot(win.app, "plan-switch-arrow");
});
