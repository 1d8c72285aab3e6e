import { render, screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { emit } from "@tauri-apps/api/event";
import { mockIPC } from "@tauri-apps/api/mocks";
import { describe, expect, it, onTestFinished, vi } from "vitest";
import { App } from "../App";
import { SidebarSessions } from "../components/SidebarSessions";
import { SHORTCUTS } from "../components/CommandPalette";
import type { SessionStatus, SessionSummary } from "../ipc";
import { sidebarGroups, sidebarTitles, waitingFor } from "../sidebar";
import { DISCARDED_TITLE } from "../session/model";
import { view } from "./fixtures";

const now = new Date(2026, 10, 23, 15, 0, 0);
const at = (h: number, dayOffset = 0) => new Date(2026, 10, 23 + dayOffset, h, 0, 0).getTime();
function s(id: string, status: SessionStatus, created_ms: number): SessionSummary {
  return { id, title: `task ${id}`, task: `task ${id}`, workspace: "/ws", provider: "openai", model: "m", status, claim: null, verdict: null, end_reason: null, decision: null, created_at: "", created_ms, duration_ms: 0, updated_ms: created_ms, tokens: { agent: 0, evaluator: 0, compaction: 0 }, last_seq: 1 } as SessionSummary;
}

describe("the sidebar's grouping", () => {
  it("puts working, then waiting for you, then the rest of today, each session once, newest first", () => {
    const g = sidebarGroups([s("a", "completed", at(9)), s("b", "busy", at(10)), s("c", "awaiting_review", at(8)), s("d", "awaiting_approval", at(11)), s("b", "busy", at(10)), s("e", "failed", at(12))], now);
    expect(g.working.map((x) => x.id)).toEqual(["b"]);
    expect(g.waiting.map((x) => x.id), "both kinds of waiting, newest first").toEqual(["d", "c"]);
    expect(g.today.map((x) => x.id), "finished ones of today, newest first").toEqual(["e", "a"]);
  });

  it("keeps a session from yesterday that still waits for the person, and drops yesterday's finished ones", () => {
    const g = sidebarGroups([s("old-wait", "awaiting_review", at(10, -1)), s("old-done", "completed", at(10, -1))], now);
    expect(g.waiting.map((x) => x.id), "it still needs the person").toEqual(["old-wait"]);
    expect(g.today, "yesterday's finished work belongs to History").toEqual([]);
  });

  it("tells apart two sessions with the same title by their folder, else by when they started", () => {
    const same = (id: string, workspace: string, h: number) => ({ ...s(id, "completed", at(h)), title: "Fix the tests", workspace });
    const titles = sidebarTitles([same("a", "/work/api", 9), same("b", "/work/web", 10), same("c", "/work/web", 11), s("d", "busy", at(12))]);
    expect(titles.get("a")).toBe("Fix the tests · api");
    expect(titles.get("b"), "the same folder too: the time tells them apart").toBe("Fix the tests · web, 10:00");
    expect(titles.get("c")).toBe("Fix the tests · web, 11:00");
    expect(titles.get("d"), "a title of its own is left alone").toBe("task d");
    // Folders of the same name, started in the same minute: numbered in the order they started.
    const minute = (id: string, workspace: string, ms: number) => ({ ...s(id, "completed", at(9) + ms), title: "Tidy", workspace });
    const twins = sidebarTitles([minute("y", "/b/repo", 2000), minute("x", "/a/repo", 1000)]);
    expect([twins.get("x"), twins.get("y")]).toEqual(["Tidy · 09:00 #1", "Tidy · 09:00 #2"]);
  });

  it("tells apart titles that differ only past what the sidebar shows by the words where they differ", () => {
    const titled = (id: string, title: string) => ({ ...s(id, "completed", at(9)), title });
    const titles = sidebarTitles([
      titled("a", "Refactor the authentication module to use tokens"),
      titled("b", "Refactor the authentication module to use sessions"),
      titled("c", "Refactor the auth"),
    ]);
    expect(titles.get("a")).toBe("Refactor the authentication module to use tokens · …tokens");
    expect(titles.get("b")).toBe("Refactor the authentication module to use sessions · …sessions");
    expect(titles.get("c"), "a short title shows whole: left alone").toBe("Refactor the auth");
  });

  it("puts a stopped task whose worktree still holds its work under waiting for you, whatever day it ran", () => {
    const kept = (id: string, status: SessionStatus, h: number, day = 0) => ({ ...s(id, status, at(h, day)), work_dir: `/data/worktrees/${id}` });
    const g = sidebarGroups([kept("cancelled", "cancelled", 9), kept("failed-yesterday", "failed", 9, -1), s("failed-no-worktree", "failed", at(10)), kept("idle", "idle", 11)], now);
    expect(g.waiting.map((x) => x.id), "its work waits to be resumed or put away").toEqual(["idle", "cancelled", "failed-yesterday"]);
    expect(g.today.map((x) => x.id), "with nothing kept it is only today's").toEqual(["failed-no-worktree"]);
  });

  it("shows at most a handful of today's sessions, and knows more were left out", () => {
    const many = Array.from({ length: 20 }, (_, i) => s(`t${i}`, "completed", at(1) + i));
    expect(sidebarGroups(many, now, 6).today).toHaveLength(6);
    expect(sidebarGroups(many, now, 6).moreToday, "the rest wait in History").toBe(true);
    expect(sidebarGroups(many.slice(0, 6), now, 6).moreToday).toBe(false);
  });

  it("a cut Today list ends with the way to the rest in History", async () => {
    const many = Array.from({ length: 9 }, (_, i) => s(`t${i}`, "completed", Date.now() - 1000 * (i + 1)));
    mockIPC((cmd) => (cmd === "list_sessions" ? many : null));
    const opened: string[] = [];
    render(<SidebarSessions current={null} onOpen={() => {}} onOpenHistory={() => opened.push("history")} />);
    const more = await screen.findByTestId("side-more");
    expect(within(screen.getByTestId("side-today")).getAllByTestId("side-session")).toHaveLength(6);
    expect(more).toHaveTextContent("More from today: in History");
    await userEvent.setup().click(more);
    expect(opened).toEqual(["history"]);
  });
});

/** The app's commands as the sidebar meets them: `list()` is every session there is now. */
function servesSessions(list: () => SessionSummary[]) {
  mockIPC(
    (cmd, args) => {
      if (cmd === "get_settings") return view();
      if (cmd === "list_sessions") {
        const f = (args as { filter: { statuses?: SessionStatus[] } }).filter;
        return f.statuses ? list().filter((x) => f.statuses!.includes(x.status)) : list();
      }
      if (cmd === "subscribe_session") return 1;
    },
    { shouldMockEvents: true },
  );
}

describe("the sidebar in the window", () => {
  it("lists working and waiting sessions with a count, opens one on click, and updates when a status changes", async () => {
    let list: SessionSummary[] = [s("s-work", "busy", Date.now()), s("s-wait", "awaiting_review", Date.now() - 1000)];
    servesSessions(() => list);
    render(<App />);
    expect(await screen.findByTestId("side-working")).toHaveTextContent("task s-work");
    expect(screen.getByTestId("waiting-count"), "the count of sessions waiting for the person").toHaveTextContent("1");

    await userEvent.setup().click(screen.getByRole("button", { name: /task s-wait/ }));
    await waitFor(() => expect(screen.getByRole("button", { name: /task s-wait/ })).toHaveAttribute("aria-current", "page"));

    // The working session starts to wait: the sidebar follows without a reload.
    list = [s("s-work", "awaiting_approval", Date.now()), s("s-wait", "awaiting_review", Date.now() - 1000)];
    await emit("history-changed", "s-work");
    await waitFor(() => expect(screen.getByTestId("waiting-count")).toHaveTextContent("2"));
    expect(screen.queryByTestId("side-working"), "nothing is working any more").not.toBeInTheDocument();
  });
});

describe("moving between sessions from the keyboard", () => {
  it("Alt+↓ and Alt+↑ open the next and the previous session in the sidebar's order, from a session or any screen", async () => {
    const list: SessionSummary[] = [s("s-a", "busy", Date.now()), s("s-b", "awaiting_review", Date.now() - 1000), s("s-c", "completed", Date.now() - 2000)];
    servesSessions(() => list);
    render(<App />);
    await screen.findByRole("button", { name: /task s-c/ });
    const current = () => document.querySelector('[data-testid="side-session"][aria-current="page"]')?.getAttribute("data-session");
    const user = userEvent.setup();
    await user.keyboard("{Alt>}{ArrowDown}{/Alt}");
    await waitFor(() => expect(current(), "from another screen, the first").toBe("s-a"));
    await user.keyboard("{Alt>}{ArrowDown}{/Alt}");
    await waitFor(() => expect(current()).toBe("s-b"));
    await user.keyboard("{Alt>}{ArrowDown}{/Alt}");
    await waitFor(() => expect(current()).toBe("s-c"));
    await user.keyboard("{Alt>}{ArrowDown}{/Alt}");
    expect(current(), "the last stays the last").toBe("s-c");
    await user.keyboard("{Alt>}{ArrowUp}{/Alt}");
    await waitFor(() => expect(current()).toBe("s-b"));
    expect(SHORTCUTS.some(([keys]) => keys.includes("Alt+↓")), "the shortcut list names it").toBe(true);
    // From a text box the keys stay the box's (they move the caret on some systems).
    await user.click(screen.getByTestId("nav-new"));
    (await screen.findByTestId("task-input")).focus();
    await user.keyboard("{Alt>}{ArrowDown}{/Alt}");
    await new Promise((r) => setTimeout(r, 50));
    expect(screen.getByTestId("task-input"), "New Task stays open").toHaveFocus();
  });
});

describe("how long something has waited for the person", () => {
  it("reads in minutes, hours or days, with the moment in full in its tooltip", () => {
    const ago = (minutes: number) => waitingFor(now.getTime() - minutes * 60_000, now).short;
    expect([ago(0), ago(5), ago(59), ago(60), ago(23 * 60 + 59), ago(24 * 60), ago(3 * 24 * 60)]).toEqual(["now", "5 min", "59 min", "1 h", "23 h", "1 d", "3 d"]);
    expect(waitingFor(at(9, -1), now).full, "the day and the time it began waiting").toMatch(/^Waiting since .*22.*, 09:00$/);
  });

  it("shows each waiting entry's age, a group's once, from its last attempt, and none on working or today's entries", async () => {
    // At noon: an hour ago is still today whenever the suite runs (it failed just after midnight).
    vi.useFakeTimers({ toFake: ["Date"] });
    vi.setSystemTime(new Date(2026, 10, 30, 12, 0, 0));
    onTestFinished(() => {
      vi.useRealTimers();
    });
    const hour = 3_600_000;
    const group = { group: "g1", number: 1, of: 3, label: "Codex", chosen: false };
    const list: SessionSummary[] = [
      s("s-work", "busy", Date.now()),
      { ...s("s-old", "awaiting_review", Date.now() - 30 * hour), updated_ms: Date.now() - 26 * hour },
      { ...s("s-a1", "awaiting_review", Date.now() - 3 * hour), attempt: group, updated_ms: Date.now() - 2 * hour },
      { ...s("s-a2", "awaiting_review", Date.now() - 3 * hour), attempt: { ...group, number: 2, label: "Claude Code" }, updated_ms: Date.now() - 5 * 60_000 },
      s("s-done", "completed", Date.now() - hour),
    ];
    mockIPC((cmd) => (cmd === "list_sessions" ? list : null));
    render(<SidebarSessions current={null} onOpen={() => {}} />);
    const waiting = await screen.findByTestId("side-waiting");
    const ages = [...waiting.querySelectorAll("[data-testid=side-age]")].map((a) => a.textContent);
    expect(ages, "the group (one decision) waits since its last attempt ended; yesterday's task says so").toEqual(["5 min", "1 d"]);
    expect(screen.getByTestId("side-working").querySelector("[data-testid=side-age]"), "a working task is not waiting").toBeNull();
    expect(screen.getByTestId("side-today").querySelector("[data-testid=side-age]"), "a finished task is not waiting").toBeNull();
    expect(screen.getByTestId("side-group-open"), "of its own attempts, only those listed: it counts as many as were started").toHaveTextContent("3 attempts");
  });
});

describe("what is open, in the sidebar", () => {
  it("brings an opened group into view with its attempts, once", async () => {
    const scrolled: Element[] = [];
    const before = Element.prototype.scrollIntoView;
    Element.prototype.scrollIntoView = function (this: Element) {
      scrolled.push(this);
    };
    onTestFinished(() => void (Element.prototype.scrollIntoView = before));
    const group = { group: "g1", number: 1, of: 2, label: "Codex", chosen: false };
    const list: SessionSummary[] = [
      { ...s("s-a1", "awaiting_review", Date.now() - 1000), attempt: group },
      { ...s("s-a2", "awaiting_review", Date.now() - 1000), attempt: { ...group, number: 2, label: "Claude Code" } },
    ];
    mockIPC((cmd) => (cmd === "list_sessions" ? list : null));
    const { rerender } = render(<SidebarSessions current={null} currentGroup="g1" onOpen={() => {}} />);
    await waitFor(() => expect(scrolled).toHaveLength(1));
    expect(scrolled[0], "the group's block, its attempts too").toBe(screen.getByTestId("side-group"));
    rerender(<SidebarSessions current={null} currentGroup="g1" onOpen={() => {}} />);
    expect(scrolled, "a refresh leaves the person's scroll alone").toHaveLength(1);
  });
});

describe("a review of work not verified done in the sidebar", () => {
  it("says how the run ended (stuck, said blocked) instead of the same badge verified work gets", async () => {
    const list: SessionSummary[] = [
      { ...s("s-done", "awaiting_review", Date.now() - 1000), end_reason: "verified_done" },
      { ...s("s-stuck", "awaiting_review", Date.now() - 2000), end_reason: "stuck" },
      { ...s("s-blocked", "awaiting_review", Date.now() - 3000), end_reason: "claimed_blocked" },
    ];
    mockIPC((cmd) => (cmd === "list_sessions" ? list : null));
    render(<SidebarSessions current={null} onOpen={() => {}} />);
    await screen.findByTestId("side-waiting");
    const badges = screen.getAllByTestId("side-session").map((b) => [b.dataset.session, b.querySelector(".side-badge")?.textContent]);
    expect(badges).toEqual([
      ["s-done", "Ready for review"],
      ["s-stuck", "Stuck"],
      ["s-blocked", "Agent says blocked"],
    ]);
  });
});

describe("same-titled tasks in the sidebar", () => {
  it("keep what tells them apart in sight: a long folder name is cut, the time after it is not", async () => {
    const now = Date.now();
    const same = (id: string, workspace: string, ms: number) => ({ ...s(id, "completed", ms), title: "write slowly", workspace });
    const list: SessionSummary[] = [same("a", "/tmp/finishline-repo-omVa1b2c3d4e5f6", now - 60_000), same("b", "/tmp/finishline-repo-omVa1b2c3d4e5f6", now - 3 * 60_000), same("c", "/tmp/finishline-repo-rVFgiM", now - 2 * 60_000)];
    mockIPC((cmd) => (cmd === "list_sessions" ? list : null));
    render(<SidebarSessions current={null} onOpen={() => {}} />);
    await screen.findByTestId("side-today");
    const tells = screen.getAllByTestId("side-session").map((b) => [b.dataset.session, b.querySelector(".side-tell-lead")?.textContent, b.querySelector(".side-tell-end")?.textContent ?? null]);
    const clock = (ms: number) => `${String(new Date(ms).getHours()).padStart(2, "0")}:${String(new Date(ms).getMinutes()).padStart(2, "0")}`;
    expect(tells).toEqual([
      ["a", " · finishline-repo-omVa1b2c3d4e5f6", `, ${clock(now - 60_000)}`],
      ["c", " · finishline-repo-rVFgiM", null],
      ["b", " · finishline-repo-omVa1b2c3d4e5f6", `, ${clock(now - 3 * 60_000)}`],
    ]);
  });
});

describe("same-titled tasks whose folder name holds a comma", () => {
  it("keep the folder name in one piece: only a start time is held apart from what is cut", async () => {
    const now = Date.now();
    const same = (id: string, workspace: string, ms: number) => ({ ...s(id, "completed", ms), title: "write slowly", workspace });
    const list: SessionSummary[] = [same("a", "/work/notes, drafts and a very long folder name", now - 60_000), same("b", "/work/plain", now - 2 * 60_000)];
    mockIPC((cmd) => (cmd === "list_sessions" ? list : null));
    render(<SidebarSessions current={null} onOpen={() => {}} />);
    await screen.findByTestId("side-today");
    const tells = screen.getAllByTestId("side-session").map((b) => [b.dataset.session, b.querySelector(".side-tell-lead")?.textContent, b.querySelector(".side-tell-end")?.textContent ?? null]);
    expect(tells).toEqual([
      ["a", " · notes, drafts and a very long folder name", null],
      ["b", " · plain", null],
    ]);
  });
});

describe("a task whose work waits on a kept branch in the sidebar", () => {
  it("is badged 'Branch kept', not 'Completed' as one that landed, nor only 'Rejected'", async () => {
    const list: SessionSummary[] = [
      { ...s("s-landed", "completed", Date.now() - 1000), branch: null },
      { ...s("s-kept", "completed", Date.now() - 2000), branch: "finishline/abc-readme" },
      { ...s("s-put-away", "rejected", Date.now() - 3000), branch: "finishline/def-slowly", decision: null },
      { ...s("s-rejected-kept", "rejected", Date.now() - 3500), branch: "finishline/jkl-kept", decision: "reject" },
      { ...s("s-open", "cancelled", Date.now() - 4000), branch: "finishline/ghi-open", work_dir: "/data/worktrees/ghi" },
      { ...s("s-discarded", "rejected", Date.now() - 5000), branch: null, decision: null },
      { ...s("s-refused", "rejected", Date.now() - 6000), branch: null, decision: "reject" },
    ];
    mockIPC((cmd) => (cmd === "list_sessions" ? list : null));
    render(<SidebarSessions current={null} onOpen={() => {}} />);
    await screen.findByTestId("side-today");
    const badges = screen.getAllByTestId("side-session").map((b) => [b.dataset.session, b.querySelector(".side-badge")?.textContent, b.querySelector(".side-badge")?.getAttribute("title") ?? null]);
    expect(badges).toEqual([
      ["s-open", "Cancelled", null], // its worktree waits for the person: a branch still in use is no kept one
      ["s-landed", "Completed", null],
      ["s-kept", "Branch kept", "Approved; its work waits on finishline/abc-readme, not landed: merge it when you like"],
      ["s-put-away", "Branch kept", "Put away without a review; its work waits on finishline/def-slowly: merge it when you like, or delete it"],
      ["s-rejected-kept", "Branch kept", "Rejected; its work waits on finishline/jkl-kept: merge it when you like, or delete it"],
      ["s-discarded", "Discarded", DISCARDED_TITLE], // put away with no review: nobody refused it
      ["s-refused", "Rejected", null],
    ]);
  });
});

describe("a decided group in the sidebar", () => {
  it("badges the attempts set aside for the one landed as not chosen, and one the person rejected in its own review as rejected", async () => {
    const group = { group: "g1", number: 1, of: 3, label: "Codex", chosen: true };
    const list: SessionSummary[] = [
      { ...s("s-a1", "completed", Date.now() - 1000), attempt: group },
      { ...s("s-a2", "rejected", Date.now() - 2000), decision: "reject", occasion: "another_attempt_chosen", attempt: { ...group, number: 2, label: "Claude Code", chosen: false } },
      { ...s("s-a3", "rejected", Date.now() - 3000), decision: "reject", attempt: { ...group, number: 3, label: "Gemini CLI", chosen: false } },
    ];
    mockIPC((cmd) => (cmd === "list_sessions" ? list : null));
    render(<SidebarSessions current={null} onOpen={() => {}} />);
    await screen.findByTestId("side-group");
    const badges = screen.getAllByTestId("side-session").map((b) => b.querySelector(".side-badge")?.textContent);
    expect(badges, "the third was refused before the first was chosen").toEqual(["Completed", "Not chosen", "Rejected"]);
  });

  it("an attempt sent on after the choice and then discarded reads Discarded, as any task would", async () => {
    const group = { group: "g1", number: 1, of: 2, label: "Codex", chosen: true };
    const list: SessionSummary[] = [
      { ...s("s-a1", "completed", Date.now() - 1000), attempt: group },
      // Set aside, then sent on by the person (its new run undecided), then discarded.
      { ...s("s-a2", "rejected", Date.now() - 2000), decision: null, attempt: { ...group, number: 2, label: "Claude Code", chosen: false } },
    ];
    mockIPC((cmd) => (cmd === "list_sessions" ? list : null));
    render(<SidebarSessions current={null} onOpen={() => {}} />);
    await screen.findByTestId("side-group");
    expect(screen.getAllByTestId("side-session").map((b) => b.querySelector(".side-badge")?.textContent)).toEqual(["Completed", "Discarded"]);
  });

  it("still says rejected when the person rejected every attempt", async () => {
    const group = { group: "g1", number: 1, of: 2, label: "Codex", chosen: false };
    const list: SessionSummary[] = [
      { ...s("s-a1", "rejected", Date.now() - 1000), attempt: group },
      { ...s("s-a2", "rejected", Date.now() - 2000), attempt: { ...group, number: 2, label: "Claude Code" } },
    ];
    mockIPC((cmd) => (cmd === "list_sessions" ? list : null));
    render(<SidebarSessions current={null} onOpen={() => {}} />);
    await screen.findByTestId("side-group");
    expect(screen.getAllByTestId("side-session").map((b) => b.querySelector(".side-badge")?.textContent)).toEqual(["Rejected", "Rejected"]);
  });
});

describe("the sidebar folded to icons (a narrow window)", () => {
  it("keeps what waits for the person one click away: a count, opening the first that waits", async () => {
    const group = { group: "g1", number: 1, of: 2, label: "Codex", chosen: false };
    const list: SessionSummary[] = [
      s("s-work", "busy", Date.now()),
      { ...s("s-a1", "awaiting_review", Date.now() - 1000), attempt: group },
      { ...s("s-a2", "awaiting_review", Date.now() - 2000), attempt: { ...group, number: 2, label: "Claude Code" } },
      s("s-wait", "awaiting_review", Date.now() - 3000),
    ];
    mockIPC((cmd) => (cmd === "list_sessions" ? list : null));
    const opened: string[] = [];
    render(<SidebarSessions current={null} onOpen={(id) => opened.push(`session ${id}`)} onOpenGroup={(g) => opened.push(`group ${g}`)} />);
    const waiting = await screen.findByTestId("side-compact-waiting");
    expect(waiting.getAttribute("aria-label")).toBe("2 waiting for you");
    expect(waiting.textContent).toBe("2");
    await userEvent.click(waiting);
    expect(opened, "the newest that waits is the attempts of one task: their screen opens").toEqual(["group g1"]);
    await userEvent.click(screen.getByTestId("side-compact-working"));
    expect(opened[1]).toBe("session s-work");
    expect(screen.getByTestId("side-compact-working").getAttribute("title")).toBe("1 working: open the first");
  });
});

describe("an answer in the sidebar", () => {
  it("marks an answer whose check could not be made as not checked, apart from a checked one", async () => {
    const list: SessionSummary[] = [
      { ...s("s-checked", "idle", Date.now() - 1000), end_reason: "conversation" },
      { ...s("s-unchecked", "idle", Date.now() - 2000), end_reason: "conversation_unchecked" },
    ];
    mockIPC((cmd) => (cmd === "list_sessions" ? list : null));
    render(<SidebarSessions current={null} onOpen={() => {}} />);
    await screen.findAllByTestId("side-session");
    const badges = screen.getAllByTestId("side-session").map((b) => [b.dataset.session, b.querySelector(".side-badge")?.textContent]);
    expect(badges).toEqual([
      ["s-checked", "Idle"],
      ["s-unchecked", "Not checked"],
    ]);
    const unchecked = screen.getAllByTestId("side-session")[1];
    expect(unchecked.querySelector(".side-badge")).toHaveAttribute("title", "Answered, not checked: the evaluator gave no usable answer");
  });
});
