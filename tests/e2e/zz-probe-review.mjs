// PROBE (temporary): records what the review panel and its buttons do in the first seconds.
import { test } from "node:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before } from "node:test";
import { clickAway, launchApp, seedSettings, startDriver, typeInto, waitForScreen, waitStatus } from "./app.mjs";
import { startFake } from "./fake.mjs";

const win = { app: null };
let fake, driver;
before(async () => {
  fake = await startFake("e2e-review.json");
  const home = mkdtempSync(path.join(tmpdir(), "finishline-e2e-zzprobe-"));
  seedSettings(home, { base_url: fake.baseUrl, model: "fake-model" });
  driver = await startDriver({ port: Number(process.env.PROBE_PORT ?? 4795), home });
});
after(async () => {
  await win.app?.deleteSession().catch(() => {});
  await driver?.stop();
  fake?.stop();
});
const testid = (id) => win.app.$(`[data-testid="${id}"]`);
const OUT = process.env.PROBE_OUT ?? "/tmp/probe-out";
const ROUNDS = Number(process.env.PROBE_ROUNDS ?? 4);
const CLICK = process.env.PROBE_CLICK ?? "request-changes";

function install() {
  const T0 = performance.now();
  const P = (window.__probe = { t0: T0, log: [], frames: [], ids: new WeakMap(), next: 1, firstAt: null });
  const now = () => Math.round(performance.now() - T0);
  const id = (el) => {
    if (!el) return null;
    if (!P.ids.has(el)) P.ids.set(el, P.next++);
    return P.ids.get(el);
  };
  const r = (el) => {
    if (!el) return null;
    const b = el.getBoundingClientRect();
    return [Math.round(b.x), Math.round(b.y), Math.round(b.width), Math.round(b.height)];
  };
  const tid = (el) => (el && el.nodeType === 1 ? el.getAttribute("data-testid") || el.tagName.toLowerCase() + (el.className && typeof el.className === "string" ? "." + el.className.split(" ")[0] : "") : String(el));
  const q = (s) => document.querySelector(`[data-testid="${s}"]`);
  const sample = (why) => {
    if (!P.firstAt || performance.now() - T0 > P.firstAt + 3000) return;
    const btn = q("request-changes");
    const s = JSON.stringify([id(q("review-panel")), id(btn), r(btn), r(q("revert-checkbox")), r(q("review-dock")), !!q("diff-view"), !!(q("review-panel")?.textContent.includes("Loading the diff")), Math.round(document.querySelector("main.content")?.scrollTop ?? -1), q("bottom-bar") ? Math.round(q("bottom-bar").scrollTop) : null]);
    if (s !== P.lastSample) {
      P.lastSample = s;
      P.log.push({ t: now(), ev: "sample:" + why, s });
    }
  };
  setInterval(() => sample("timer"), 5);
  new MutationObserver((muts) => {
    sample("mutation");
    for (const m of muts) {
      for (const n of m.addedNodes) {
        if (n.nodeType !== 1) continue;
        const panels = [...(n.matches?.('[data-testid="review-panel"],[data-testid="review-dock"],[data-testid="bottom-bar"],[data-testid="session-view"]') ? [n] : []), ...n.querySelectorAll('[data-testid="review-panel"],[data-testid="review-dock"],[data-testid="bottom-bar"],[data-testid="session-view"]')];
        for (const p of panels) P.log.push({ t: now(), ev: "added", what: tid(p), id: id(p) });
        const btns = [...(n.matches?.('[data-testid="request-changes"],[data-testid="revert-checkbox"]') ? [n] : []), ...n.querySelectorAll('[data-testid="request-changes"],[data-testid="revert-checkbox"]')];
        for (const b of btns) P.log.push({ t: now(), ev: "added", what: tid(b), id: id(b) });
        if (n.matches?.('[data-testid="diff-view"]') || n.querySelector?.('[data-testid="diff-view"]')) P.log.push({ t: now(), ev: "added", what: "diff-view" });
        if (!P.firstAt && panels.some((p) => p.getAttribute("data-testid") === "review-panel")) {
          P.firstAt = now();
          const until = performance.now() + 3000;
          const frame = () => {
            const btn = q("request-changes");
            const bb = q("bottom-bar");
            const main = document.querySelector("main.content");
            P.frames.push({
              t: now(),
              panel: id(q("review-panel")),
              btnId: id(btn),
              btn: r(btn),
              box: r(q("revert-checkbox")),
              panelR: r(q("review-panel")),
              dock: r(q("review-dock")),
              bar: r(bb),
              barScroll: bb ? [Math.round(bb.scrollTop), bb.scrollHeight, bb.clientHeight] : null,
              mainScroll: main ? [Math.round(main.scrollTop), main.scrollHeight, main.clientHeight] : null,
              loading: !!(q("review-panel")?.textContent.includes("Loading the diff")),
              active: tid(document.activeElement),
              status: q("status-badge")?.getAttribute("data-status"),
              at: btn ? tid(document.elementFromPoint(...(() => { const b = btn.getBoundingClientRect(); return [b.x + b.width / 2, b.y + b.height / 2]; })())) : null,
            });
            if (performance.now() < until) requestAnimationFrame(frame);
          };
          requestAnimationFrame(frame);
        }
      }
      for (const n of m.removedNodes) {
        if (n.nodeType !== 1) continue;
        const panels = [...(n.matches?.('[data-testid="review-panel"],[data-testid="review-dock"],[data-testid="bottom-bar"],[data-testid="session-view"],[data-testid="request-changes"],[data-testid="revert-checkbox"]') ? [n] : []), ...n.querySelectorAll('[data-testid="review-panel"],[data-testid="review-dock"],[data-testid="bottom-bar"],[data-testid="session-view"],[data-testid="request-changes"],[data-testid="revert-checkbox"]')];
        for (const p of panels) P.log.push({ t: now(), ev: "removed", what: tid(p), id: id(p), from: tid(m.target) });
      }
    }
    sample("mutation-end");
  }).observe(document.body, { childList: true, subtree: true });
  for (const type of ["pointerdown", "mousedown", "mouseup", "click", "focusin", "scroll"]) {
    document.addEventListener(
      type,
      (e) => {
        if (type === "scroll") {
          const t = e.target === document ? "document" : tid(e.target);
          const st = e.target.scrollTop;
          P.log.push({ t: now(), ev: "scroll", what: t, top: Math.round(st ?? -1) });
          return;
        }
        const btn = q("request-changes");
        P.log.push({ t: now(), ev: type, what: tid(e.target), x: Math.round(e.clientX ?? -1), y: Math.round(e.clientY ?? -1), btn: r(btn), btnId: id(btn), box: r(q("revert-checkbox")), bar: q("bottom-bar") ? Math.round(q("bottom-bar").scrollTop) : null, main: Math.round(document.querySelector("main.content")?.scrollTop ?? -1), loading: !!(q("review-panel")?.textContent.includes("Loading the diff")) });
      },
      true,
    );
  }
  // Wrap scrollIntoView to see who calls it.
  const orig = Element.prototype.scrollIntoView;
  Element.prototype.scrollIntoView = function (...a) {
    P.log.push({ t: now(), ev: "scrollIntoView", what: tid(this), arg: JSON.stringify(a[0] ?? null) });
    return orig.apply(this, a);
  };
  return true;
}

for (let i = 0; i < ROUNDS; i++) {
  test(`probe round ${i}`, async () => {
    if (process.env.PROBE_FRESH !== "0" || !win.app) {
      await win.app?.deleteSession().catch(() => {});
      win.app = await launchApp(driver);
      await waitForScreen(win.app, "new-task-form");
    }
    const ws = mkdtempSync(path.join(tmpdir(), "finishline-ws-"));
    writeFileSync(path.join(ws, "keep.txt"), "original");
    await clickAway(await testid("nav-new"));
    await waitForScreen(win.app, "new-task-form");
    await typeInto(win.app, await testid("workspace-path"), ws);
    await typeInto(win.app, await testid("task-input"), "write keep.txt");
    await win.app.execute(install);
    const tInstall = Date.now();
    await clickAway(await testid("run"));
    let tSent;
    let tRet;
    if (CLICK === "revert-checkbox") {
      await waitStatus(win.app, "awaiting_review", 20_000);
      const el = await testid("revert-checkbox");
      tSent = Date.now();
      await clickAway(el);
      tRet = Date.now();
    } else {
      if (process.env.PROBE_FAST) {
        const t = Date.now();
        while (!(await win.app.execute(() => !!document.querySelector('[data-testid="request-changes"]'))) && Date.now() - t < 20_000);
      } else await (await testid("review-panel")).waitForDisplayed({ timeout: 20_000 });
      const el = await testid("request-changes");
      tSent = Date.now();
      await clickAway(el);
      tRet = Date.now();
    }
    await new Promise((r) => setTimeout(r, 3500));
    const ok = CLICK === "revert-checkbox" ? await win.app.execute(() => !!document.querySelector('[data-testid="revert-checkbox"]')?.checked) : await win.app.execute(() => !!document.querySelector('[data-testid="feedback-input"]'));
    const probe = await win.app.execute(() => {
      const P = window.__probe;
      const at = (x, y) => { const e = document.elementFromPoint(x, y); return e ? (e.getAttribute("data-testid") || e.tagName + "." + e.className) : null; };
      P.log.push({ t: -1, ev: "settled-hit", at718: at(935, 718), at747: at(935, 747), box718: at(260, 718) });
      return { firstAt: P.firstAt, log: P.log, frames: P.frames };
    });
    writeFileSync(`${OUT}-${CLICK}-${i}.json`, JSON.stringify({ ok, clickSentMs: tSent - tInstall, clickReturnedMs: tRet - tInstall, ...probe }, null, 1));
    console.log(`round ${i}: click ${ok ? "WORKED" : "LOST"}; panel first at ${probe.firstAt} ms; click sent at ${tSent - tInstall}..${tRet - tInstall} ms (node clock since install)`);
    // End the session so the next round starts clean.
    if (await win.app.execute(() => !!document.querySelector('[data-testid="feedback-input"]'))) await clickAway(await testid("feedback-close"));
    await win.app.execute(() => {
      const b = document.querySelector('[data-testid="revert-checkbox"]');
      if (b && b.checked) b.click();
    });
    await clickAway(await testid("reject"));
    await waitStatus(win.app, "rejected", 20_000);
  });
}
