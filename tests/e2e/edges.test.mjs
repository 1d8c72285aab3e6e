// The window's rough edges from the second daily-use walk (issue 39), in the real app: the review
// and the transcript share the height, the dark theme reads right (placeholders, the checkbox,
// GTK's own dropdown menu, a live preview before Save), tooltips go with their control, Esc closes
// the innermost box and asks before it cancels, Settings has an index, and the run's clock counts
// the run.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { artifacts, resizeWindow, shot, typeInto, waitForScreen, statusNow as statusIn } from "./app.mjs";
import { appWindow } from "./window.mjs";

const win = appWindow({ scenario: "e2e-edges.json", port: 4640, name: "edges", settings: { theme: "dark" } });

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const testid = (id) => win.testid(id);
const statusNow = () => statusIn(win.app);
const waitStatus = (s, timeout = 30_000) => win.app.waitUntil(async () => (await statusNow()) === s, { timeout, timeoutMsg: `the session never reached ${s}` });
/** Relative luminance of a CSS colour, 0 (black) to 1 (white). */
const luminance = (css) => {
  const [r, g, b] = css.match(/[\d.]+/g).map(Number);
  return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255;
};

async function runTask(task) {
  await (await testid("nav-new")).click();
  await waitForScreen(win.app, "new-task-form");
  await typeInto(win.app, await testid("task-input"), task);
  await typeInto(win.app, await testid("workspace-path"), mkdtempSync(path.join(tmpdir(), "finishline-ws-")));
  await (await testid("run")).click();
  await (await testid("session-view")).waitForDisplayed({ timeout: 10_000 });
}

/** WCAG contrast of an element's words against its own background. */
const wordsOnGround = (selector) =>
  win.app.execute((selector) => {
    const el = document.querySelector(selector);
    const linear = (css) => {
      const [r, g, b] = css.match(/[\d.]+/g).map(Number).map((c) => c / 255).map((c) => (c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4));
      return 0.2126 * r + 0.7152 * g + 0.0722 * b;
    };
    const style = getComputedStyle(el);
    const [a, b] = [linear(style.color), linear(style.backgroundColor)].sort((x, y) => y - x);
    return { text: el.textContent, color: style.color, background: style.backgroundColor, ratio: Math.round(((a + 0.05) / (b + 0.05)) * 100) / 100 };
  }, selector);

/** How much of the window the transcript shows between the pinned header and the bottom bar. */
const transcriptShare = () =>
  win.app.execute(() => {
    const top = document.querySelector(".session-top").getBoundingClientRect().bottom;
    const bottom = document.querySelector('[data-testid="bottom-bar"]').getBoundingClientRect().top;
    return (bottom - top) / window.innerHeight;
  });

test("the open review and the transcript share the height, with one scroll area each", async () => {
  await runTask("write a.txt, b.txt and c.txt");
  await waitStatus("awaiting_review");
  await (await testid("review-panel")).waitForDisplayed();
  await (await win.app.$('[data-testid="file-change"] button')).click(); // a 60-line diff, opened
  await sleep(300);
  const share = await transcriptShare();
  assert.ok(share >= 0.3, `the transcript keeps a fair share of the window beside the review (${Math.round(share * 100)}%)`);
  const layout = await win.app.execute(() => {
    const bar = document.querySelector('[data-testid="bottom-bar"]');
    const scrollers = [...bar.querySelectorAll("*")].filter((e) => /(auto|scroll)/.test(getComputedStyle(e).overflowY) && e.scrollHeight > e.clientHeight + 1);
    const approve = document.querySelector('[data-testid="approve"]').getBoundingClientRect();
    return { nested: scrollers.map((e) => e.className), approveInView: approve.top >= 0 && approve.bottom <= window.innerHeight };
  });
  assert.deepEqual(layout.nested, [], "inside the review nothing scrolls on its own: no scroll area inside a scroll area");
  assert.ok(layout.approveInView, "the decision buttons stay in view");
  await shot(win.app, "edges-review");
  // What else this session shows of the walk's list.
  assert.equal(await (await testid("review-claim")).getText(), "said it was done in its reply", "its last words were \"Done!\"");
  const run = await testid("tool-run");
  assert.equal(await run.getAttribute("data-count"), "3", "three identical listings are one card");
  assert.match(await run.getProperty("textContent"), /Listed the workspace\s*×3/);
  // Given the window, the review's diff has most of it; the transcript keeps a strip.
  await (await testid("review-tall")).click();
  await sleep(300);
  const tall = await win.app.execute(() => document.querySelector('[data-testid="bottom-bar"]').getBoundingClientRect().height / window.innerHeight);
  assert.ok(tall >= 0.7, `given the window, the review takes most of it (${Math.round(tall * 100)}%)`);
  assert.ok(await (await testid("approve")).isDisplayed(), "its buttons stay in view");
  await shot(win.app, "edges-review-tall");
  await (await testid("review-tall")).click();
  await sleep(300);
  assert.ok((await transcriptShare()) >= 0.3, "and shared again, the transcript has its share back");
  await (await testid("review-fold")).click();
  await sleep(300);
  const folded = await transcriptShare();
  assert.ok(folded >= 0.55, `folded, the review leaves the transcript most of the window (${Math.round(folded * 100)}%)`);
  assert.ok(await (await testid("approve")).isDisplayed(), "folded, the buttons stay");
  await shot(win.app, "edges-review-folded");
});

test("in a short window the file's name stays above its lines as the arrows move through a long diff", async () => {
  await (await testid("review-fold")).click(); // unfolded again
  await sleep(300);
  const restore = await resizeWindow(win.app, 1000, 560);
  try {
    // The keyboard's way into the opened file's sixty lines: the cursor starts at the first.
    await win.app.execute(() => document.querySelector('[data-testid="file-change"] .diff-lines').focus());
    // One press at a time: a key already down gives no second press.
    for (let i = 0; i < 40; i++) await win.app.keys(["ArrowDown"]);
    for (let i = 0; i < 6; i++) await win.app.keys(["ArrowUp"]);
    await sleep(300);
    const seen = await win.app.execute(() => {
      const current = document.querySelector(".diff-line-current");
      const head = current.closest('[data-testid="file-change"]').querySelector(".diff-file-head").getBoundingClientRect();
      const line = current.getBoundingClientRect();
      const bar = document.querySelector('[data-testid="bottom-bar"]').getBoundingClientRect();
      /** What the person sees at a point: the element there, under whatever covers it. */
      const at = (x, y) => document.elementFromPoint(x, y);
      return {
        headShown: head.top >= bar.top - 1 && !!at(head.left + 40, head.top + head.height / 2)?.closest(".diff-file-head"),
        lineShown: !!at(line.left + line.width / 2, line.top + 3)?.closest(".diff-line-current") && !!at(line.left + line.width / 2, line.bottom - 3)?.closest(".diff-line-current"),
        text: current.textContent,
        where: { head: [head.top, head.bottom], bar: bar.top, there: at(head.left + 40, head.top + head.height / 2)?.outerHTML.slice(0, 120) },
      };
    });
    await shot(win.app, "edges-review-lines-short");
    assert.ok(seen.headShown, `the file's name is in view above the lines being read: ${JSON.stringify(seen.where)}`);
    assert.ok(seen.lineShown, `the current line (${seen.text}) is whole, not under the file's name or the buttons`);
  } finally {
    await restore();
  }
  await (await testid("review-fold")).click(); // folded, as the next test found it
  await sleep(300);
});

test("the dark theme: placeholders read as empty and the checkbox is dark", async () => {
  const look = await win.app.execute(() => {
    const box = document.querySelector('[data-testid="revert-checkbox"]');
    return { checkbox: getComputedStyle(box).backgroundColor, border: getComputedStyle(box).borderTopColor, text: getComputedStyle(document.body).color };
  });
  assert.ok(luminance(look.checkbox) < 0.25, `the "Also undo" checkbox is a dark box, not a white square: ${JSON.stringify(look)}`);
  // Words on the accent read as well as any other (4.5:1): white on the dark theme's light
  // violet stood 3.5:1 on Approve, Land this one, Save and a selected choice.
  const approve = await wordsOnGround('[data-testid="approve"]');
  assert.ok(approve.ratio >= 4.5, `Approve's words stand out from the button: ${JSON.stringify(approve)}`);
  await (await testid("nav-new")).click();
  await waitForScreen(win.app, "new-task-form");
  const chosen = await wordsOnGround(".segmented label.selected");
  assert.ok(chosen.ratio >= 4.5, `the chosen Plan option's words stand out: ${JSON.stringify(chosen)}`);
  // Reached by the keys, the chosen option shows its focus (edges-chosen-focused.png).
  await win.app.execute(() => document.querySelector('[data-testid="task-model"]').focus());
  await win.app.keys(["Tab"]);
  assert.ok(await win.app.execute(() => document.activeElement.closest(".segmented label.selected") !== null), "Tab reaches the chosen option");
  await shot(win.app, "edges-chosen-focused");
  const colours = await win.app.execute(() => {
    // WebKit does not compute styles of ::placeholder: the page's rule is applied to a probe.
    const rule = [...document.styleSheets].flatMap((s) => [...s.cssRules]).find((r) => r.selectorText === "::placeholder");
    const input = document.querySelector('[data-testid="workspace-path"]');
    const probe = document.createElement("span");
    probe.style.color = rule.style.color;
    input.parentElement.appendChild(probe);
    const placeholder = getComputedStyle(probe).color;
    probe.remove();
    return { placeholder, value: getComputedStyle(input).color };
  });
  assert.ok(luminance(colours.value) - luminance(colours.placeholder) > 0.3, `a placeholder is clearly dimmer than a value: ${JSON.stringify(colours)}`);
});

test("the dark theme: GTK's own dropdown menu is dark, and a theme shows before Save", async () => {
  await (await testid("nav-settings")).click();
  const theme = await waitForScreen(win.app, "theme-select");
  await theme.scrollIntoView({ block: "center" });
  await sleep(300);
  // The open menu is drawn by GTK, outside the page: only the screen shows it.
  const [x, y, h] = await win.app.execute(() => {
    const r = document.querySelector('[data-testid="theme-select"]').getBoundingClientRect();
    return [window.screenX + r.left + 40, window.screenY + (window.outerHeight - window.innerHeight) + r.top + r.height / 2, r.height];
  });
  execFileSync("xdotool", ["mousemove", String(Math.round(x)), String(Math.round(y)), "click", "1"]);
  await sleep(800);
  const screen = path.join(artifacts, "edges-dropdown.png");
  execFileSync("import", ["-window", "root", screen]);
  execFileSync("xdotool", ["key", "Escape"]);
  await sleep(300);
  // The menu opens over the select: sample its first entry's background, left of the text.
  const pixel = execFileSync("convert", [screen, "-format", "%[pixel:p{" + Math.round(x - 36) + "," + Math.round(y + h) + "}]", "info:"]).toString();
  assert.ok(luminance(pixel) < 0.35, `the open dropdown menu is dark (pixel ${pixel}; see edges-dropdown.png)`);

  await theme.selectByAttribute("value", "light");
  await win.app.waitUntil(async () => (await win.app.execute(() => document.documentElement.dataset.theme)) === "light", { timeout: 3_000, timeoutMsg: "the theme did not show before Save" });
  assert.ok(luminance(await win.app.execute(() => getComputedStyle(document.body).backgroundColor)) > 0.8, "the page is light at once");
  await shot(win.app, "edges-theme-preview");
  await (await testid("nav-new")).click();
  await (await testid("leave-discard")).click();
  await waitForScreen(win.app, "new-task-form");
  assert.equal(await win.app.execute(() => document.documentElement.dataset.theme), "dark", "discarded, the saved theme comes back");
});

test("Settings has an index: a section is one click away", async () => {
  await (await testid("nav-settings")).click();
  await waitForScreen(win.app, "settings-index");
  const links = await win.app.$$('[data-testid="settings-index-link"]');
  const names = [];
  for (const l of links) names.push(await l.getText());
  for (const name of ["Provider", "Evaluator", "Limits", "Permissions", "Appearance"]) assert.ok(names.some((n) => n.replace(/\s+/g, " ") === name), `the index lists ${name}: ${names.join(", ")}`);
  const appearance = links[names.findIndex((n) => n === "Appearance")];
  await appearance.click();
  await win.app.waitUntil(
    async () =>
      win.app.execute(() => {
        const legend = [...document.querySelectorAll("fieldset.panel > legend")].find((l) => l.textContent === "Appearance");
        const r = legend.getBoundingClientRect();
        return r.top >= 0 && r.top < window.innerHeight / 2;
      }),
    { timeout: 3_000, timeoutMsg: "Appearance was not brought into view" },
  );
  assert.equal(await appearance.getAttribute("aria-current"), "true", "the index marks where the page is");
  // Scrolled by hand (a wheel, then the page moves), it marks the section being read.
  const limits = links[names.findIndex((n) => n === "Limits")];
  await win.app.execute(() => {
    window.dispatchEvent(new WheelEvent("wheel"));
    [...document.querySelectorAll("fieldset.panel > legend")].find((l) => l.textContent === "Limits").parentElement.scrollIntoView({ block: "start" });
  });
  await win.app.waitUntil(async () => (await limits.getAttribute("aria-current")) === "true", { timeout: 3_000, timeoutMsg: "scrolled to Limits by hand, the index did not mark it" });
  await shot(win.app, "edges-settings-index");
});

test("the clock counts the run, and a tooltip goes when its control does", async () => {
  await runTask("write a note briefly");
  const cancel = await testid("cancel");
  await cancel.waitForDisplayed({ timeout: 5_000 });
  await cancel.moveTo();
  const tip = await win.app.$('[role="tooltip"]');
  await tip.waitForDisplayed({ timeout: 3_000 });
  assert.equal(await tip.getText(), "Cancel the task now (Esc asks first)");
  // The run ends by itself, the pointer still resting where Cancel was.
  await waitStatus("awaiting_review");
  await sleep(300);
  assert.equal(await win.app.$('[data-testid="cancel"]').isExisting(), false);
  assert.equal(await win.app.$('[role="tooltip"]').isExisting(), false, "the tooltip of a control that went away does not stay on screen");
  const clock = await (await testid("run-timing")).getText();
  const secs = clock.split(" ")[0].split(":").reduce((m, s) => m * 60 + Number(s), 0);
  assert.ok(secs >= 3, `the clock shows the run's 3+ seconds, not its last step's (${clock})`);
});

test("Esc closes the feedback box first, and asks before it cancels a running task", async () => {
  await (await testid("request-changes")).click();
  const box = await testid("feedback-input");
  await typeInto(win.app, box, "shorter, please");
  await win.app.keys(["Escape"]);
  await win.app.waitUntil(async () => !(await win.app.$('[data-testid="feedback-input"]').isExisting()), { timeout: 3_000, timeoutMsg: "Esc left the feedback box open" });
  await (await testid("request-changes")).click();
  assert.equal(await (await testid("feedback-input")).getValue(), "shorter, please", "what was typed is kept");
  await win.app.keys(["Escape"]);

  await runTask("write it slowly");
  await waitStatus("busy");
  await (await testid("timeline")).click();
  await win.app.keys(["Escape"]);
  await (await testid("confirm-cancel")).waitForDisplayed({ timeout: 3_000 });
  assert.equal(await statusNow(), "busy", "nothing is cancelled before the person confirms");
  await shot(win.app, "edges-confirm-cancel");
  await win.app.keys(["Escape"]);
  await win.app.waitUntil(async () => !(await win.app.$('[data-testid="confirm-cancel"]').isExisting()), { timeout: 3_000, timeoutMsg: "Esc did not close the question" });
  assert.equal(await statusNow(), "busy", "Esc on the question keeps the run");
  await win.app.keys(["Escape"]);
  await (await testid("confirm-cancel-stop")).click();
  await waitStatus("cancelled", 10_000);
});

/** How far the window is from the end of the scrolling area, in pixels (0: at the end). */
const fromEnd = () => win.app.execute(() => {
  const m = document.querySelector("main.content");
  return Math.round(m.scrollHeight - m.scrollTop - m.clientHeight);
});

test("after a decision, and when the session is opened again, the timeline's end sits above the bottom bar, not under it", async () => {
  await runTask("write a.txt, b.txt and c.txt");
  await waitStatus("awaiting_review");
  await (await testid("approve")).click();
  await waitStatus("completed");
  await win.app.waitUntil(async () => (await fromEnd()) <= 2, { timeout: 3_000, timeoutMsg: "after approving, the window is not at the end: the last words lie under the decided panel" });
  const id = await win.app.execute(() => document.querySelector('[data-testid="session-view"]')?.getAttribute("data-session") ?? null);
  await (await testid("nav-history")).click();
  const row = id ? await win.app.$(`[data-testid="history-row"][data-session="${id}"]`) : (await win.app.$$('[data-testid="history-row"]'))[0];
  await row.waitForExist({ timeout: 10_000 });
  await (await row.$("button.link")).click();
  await (await testid("session-view")).waitForDisplayed({ timeout: 10_000 });
  await waitStatus("completed");
  await win.app.waitUntil(async () => (await fromEnd()) <= 2, { timeout: 3_000, timeoutMsg: `opened again, the window is not at the end (${await fromEnd()} px short)` });
  await shot(win.app, "edges-opened-at-the-end");
});

test("a search hit opens its session at the message the passage is in, marked, not at the end", async () => {
  await runTask("mention an airship, then write a.txt, b.txt and c.txt");
  await waitStatus("awaiting_review");
  await (await testid("nav-history")).click();
  await typeInto(win.app, await testid("history-search"), "zeppelin");
  await (await win.app.$('[data-testid="history"] form button')).click();
  await (await testid("search-summary")).waitForDisplayed({ timeout: 10_000 });
  const rows = await win.app.$$('[data-testid="history-row"]');
  assert.equal(rows.length, 1, "one session says zeppelin");
  await (await rows[0].$("button.link")).click();
  await (await testid("session-view")).waitForDisplayed({ timeout: 10_000 });
  await win.app.waitUntil(() => win.app.execute(() => !!document.querySelector("[data-found]")), { timeout: 5_000, timeoutMsg: "no message was marked as the hit's" });
  await sleep(500);
  const seen = await win.app.execute(() => {
    const found = document.querySelector("[data-found]").getBoundingClientRect();
    const top = document.querySelector(".session-top").getBoundingClientRect().bottom;
    const bottom = document.querySelector('[data-testid="bottom-bar"]').getBoundingClientRect().top;
    const marked = [...document.querySelector("[data-found]").querySelectorAll("mark")].map((m) => m.textContent);
    return { text: document.querySelector("[data-found]").textContent, marked, inView: found.top >= top - 1 && found.bottom <= bottom + 1, where: [found.top, found.bottom, top, bottom] };
  });
  await shot(win.app, "edges-search-hit-opened");
  assert.match(seen.text, /A zeppelin is one kind of airship/);
  assert.deepEqual(seen.marked.map((w) => w.toLowerCase()), ["zeppelin"], "the word searched for is marked in it, as in History's passage");
  assert.ok(seen.inView, `the marked message is in view between the header and the bottom bar: ${JSON.stringify(seen.where)}`);
  assert.ok((await fromEnd()) > 2, "and the window did not go on to the end");
  await (await testid("approve")).click();
  await waitStatus("completed");
});

test("at 800×600 History's search box, its button and the filters do not overlap", async () => {
  await (await testid("nav-history")).click();
  await (await testid("history-search")).waitForDisplayed({ timeout: 10_000 });
  const restore = await resizeWindow(win.app, 800, 600);
  try {
    await sleep(300);
    const boxes = await win.app.execute(() =>
      [document.querySelector('[data-testid="history-search"]'), document.querySelector('[data-testid="history-search"]').form.querySelector("button"), ...document.querySelectorAll('[data-testid^="history-"]:is(select)')].map((el) => {
        const r = el.getBoundingClientRect();
        return { what: el.getAttribute("data-testid") ?? el.textContent.trim(), left: r.left, right: r.right, top: r.top, bottom: r.bottom };
      }),
    );
    await shot(win.app, "edges-history-narrow");
    for (const [i, a] of boxes.entries())
      for (const b of boxes.slice(i + 1)) {
        const overlap = a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5;
        assert.ok(!overlap, `${a.what} and ${b.what} overlap: ${JSON.stringify([a, b])}`);
      }
  } finally {
    await restore();
  }
});

test("at 800×600 New Task opened from the keyboard opens at its top, its heading in view and the task box focused", async () => {
  const restore = await resizeWindow(win.app, 800, 600);
  try {
    // From the keyboard, as a person who uses it goes there: the focus the screen gives its task
    // box was taken for the person's own, and the screen scrolled to show the box with its label.
    await (await testid("nav-history")).click();
    await (await testid("history-search")).waitForDisplayed({ timeout: 10_000 });
    // Read down to its foot first: the next screen opened as far down as History was.
    await win.app.execute(() => {
      const m = document.querySelector("main.content");
      m.scrollTop = m.scrollHeight;
    });
    await win.app.keys(["Tab"]);
    await win.app.keys(["Alt", "1"]);
    await (await testid("task-input")).waitForDisplayed({ timeout: 10_000 });
    await sleep(400);
    const seen = await win.app.execute(() => ({
      heading: document.querySelector("main h1")?.getBoundingClientRect().top ?? -1,
      focused: document.activeElement?.getAttribute("data-testid"),
    }));
    await shot(win.app, "edges-new-task-narrow");
    assert.equal(seen.focused, "task-input", "the task box has the focus");
    assert.ok(seen.heading >= 0, `the heading is in view (its top at ${seen.heading})`);
  } finally {
    await restore();
  }
});
