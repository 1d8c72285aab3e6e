import { render, screen, waitFor } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { mockIPC } from "@tauri-apps/api/mocks";
import { describe, expect, it, vi } from "vitest";
import { App } from "../App";
import { CommandPalette, matches } from "../components/CommandPalette";
import type { Envelope, SessionSummary } from "../ipc";
import { view } from "./fixtures";

const summary = (id: string, title: string): SessionSummary => ({ id, title, task: title, workspace: "/ws", provider: "openai", model: "m", status: "completed", claim: null, verdict: null, end_reason: null, decision: null, created_at: "", created_ms: 1, duration_ms: 0, tokens: { agent: 0, evaluator: 0, compaction: 0 }, last_seq: 1 }) as SessionSummary;

describe("the command palette", () => {
  it("matches every typed word, in any order, ignoring case", () => {
    expect(matches("Open: fix the login page", "login fix")).toBe(true);
    expect(matches("Go to History", "HIST")).toBe(true);
    expect(matches("Go to History", "settings")).toBe(false);
  });

  it("Ctrl+K opens it; typing and Enter goes to a screen or opens a session by its title; Esc closes it", async () => {
    const calls: string[] = [];
    mockIPC(
      (cmd) => {
        calls.push(cmd);
        if (cmd === "get_settings") return view();
        if (cmd === "list_sessions") return [summary("ses_1", "fix the login page"), summary("ses_2", "write docs")];
        if (cmd === "subscribe_session") return 1;
      },
      { shouldMockEvents: true },
    );
    render(<App />);
    const user = userEvent.setup();
    await screen.findByTestId("new-task-form");
    await user.keyboard("{Control>}k{/Control}");
    expect(await screen.findByTestId("palette-input"), "the palette takes the keyboard at once").toHaveFocus();
    await user.keyboard("hist{Enter}");
    expect(await screen.findByTestId("history"), "Go to History ran").toBeInTheDocument();
    expect(screen.queryByTestId("palette")).not.toBeInTheDocument();

    await user.keyboard("{Control>}k{/Control}");
    await user.keyboard("login");
    await waitFor(() => expect(screen.getAllByTestId("palette-item")[0]).toHaveTextContent("Open: fix the login page"));
    await user.keyboard("{Enter}");
    await waitFor(() => expect(calls).toContain("subscribe_session"));
    expect(await screen.findByTestId("session-view")).toBeInTheDocument();

    await user.keyboard("{Control>}k{/Control}");
    await screen.findByTestId("palette");
    await user.keyboard("{Escape}");
    expect(screen.queryByTestId("palette"), "Esc closes the palette").not.toBeInTheDocument();
  });

  it("sessions of one title are told apart as the sidebar tells them: by folder, else by when they started", async () => {
    const at = (h: number) => new Date(2026, 11, 7, h, 26).getTime();
    mockIPC(
      (cmd) => {
        if (cmd === "get_settings") return view();
        if (cmd === "list_sessions")
          return [
            { ...summary("ses_1", "summarise the README"), created_ms: at(10) },
            { ...summary("ses_2", "summarise the README"), created_ms: at(11) },
            { ...summary("ses_3", "summarise the README"), workspace: "/other", created_ms: at(12) },
          ];
      },
      { shouldMockEvents: true },
    );
    render(<App />);
    const user = userEvent.setup();
    await screen.findByTestId("new-task-form");
    await user.keyboard("{Control>}k{/Control}");
    await user.keyboard("README");
    await waitFor(() => expect(screen.getAllByTestId("palette-item")).toHaveLength(3));
    const labels = screen.getAllByTestId("palette-item").map((i) => i.textContent ?? "");
    expect(new Set(labels).size, labels.join(" | ")).toBe(3);
    expect(labels.some((l) => l.includes("summarise the README · other"))).toBe(true);
  });

  it("Ctrl+N starts a new task from any screen, its task box ready for typing", async () => {
    mockIPC(
      (cmd) => {
        if (cmd === "get_settings") return view({}, true);
        if (cmd === "list_sessions") return [];
      },
      { shouldMockEvents: true },
    );
    render(<App />);
    const user = userEvent.setup();
    await screen.findByTestId("new-task-form");
    await user.keyboard("{Alt>}2{/Alt}");
    expect(await screen.findByTestId("history")).toBeInTheDocument();
    await user.keyboard("{Control>}n{/Control}");
    expect(await screen.findByTestId("new-task-form"), "the reflex for new, as in every desktop app").toBeInTheDocument();
    await waitFor(() => expect(screen.getByTestId("task-input")).toHaveFocus());
  });

  it("on a Mac, Cmd+N and Cmd+K are the shortcuts, and Ctrl+N in a text field is left to the field (its next line)", async () => {
    const platform = vi.spyOn(navigator, "platform", "get").mockReturnValue("MacIntel");
    try {
      mockIPC(
        (cmd) => {
          if (cmd === "get_settings") return view({}, true);
          if (cmd === "list_sessions") return [];
        },
        { shouldMockEvents: true },
      );
      render(<App />);
      const user = userEvent.setup();
      await screen.findByTestId("new-task-form");
      await user.keyboard("{Alt>}2{/Alt}");
      await user.click(await screen.findByTestId("history-search"));
      await user.keyboard("{Control>}n{/Control}");
      expect(screen.getByTestId("history"), "Ctrl+N in a field is the field's own key there").toBeInTheDocument();
      await user.keyboard("{Meta>}k{/Meta}");
      await screen.findByTestId("palette");
      await user.keyboard("{Escape}");
      await user.keyboard("{Meta>}n{/Meta}");
      expect(await screen.findByTestId("new-task-form"), "Cmd+N is new, as in every Mac app").toBeInTheDocument();
    } finally {
      platform.mockRestore();
    }
  });

  it("typing trust opens History's trust figures, unfolded and focused", async () => {
    mockIPC(
      (cmd) => {
        if (cmd === "get_settings") return view();
        if (cmd === "list_sessions") return [];
        if (cmd === "evaluator_trust" || cmd === "agent_trust" || cmd === "checkpoint_usage") return [];
      },
      { shouldMockEvents: true },
    );
    render(<App />);
    const user = userEvent.setup();
    await screen.findByTestId("new-task-form");
    await user.keyboard("{Control>}k{/Control}");
    await user.keyboard("trust");
    expect(screen.getAllByTestId("palette-item").map((i) => i.textContent)).toEqual(["Trust: how far to trust the evaluator", "Trust: how each agent has done"]);
    await user.keyboard("{Enter}");
    const panel = await screen.findByTestId("trust-view");
    await waitFor(() => expect(panel).toHaveAttribute("open"));
    expect(panel.querySelector("summary")).toHaveFocus();
  });

  it("the window's shortcuts wait while a dialog asks: nothing opens under it, and the screen stays", async () => {
    mockIPC(
      (cmd) => {
        if (cmd === "get_settings") return view();
        if (cmd === "list_sessions") return [];
        if (cmd === "quit") return 1;
      },
      { shouldMockEvents: true },
    );
    render(<App />);
    const user = userEvent.setup();
    await screen.findByTestId("new-task-form");
    await user.keyboard("{Control>}q{/Control}");
    expect(await screen.findByTestId("quit-dialog")).toBeInTheDocument();
    await user.keyboard("{Control>}k{/Control}");
    await user.keyboard("?");
    await user.keyboard("{Alt>}2{/Alt}");
    expect(screen.queryByTestId("palette"), "no palette under the question").not.toBeInTheDocument();
    expect(screen.queryByTestId("shortcuts"), "nor the shortcut list").not.toBeInTheDocument();
    expect(screen.getByTestId("new-task-form"), "and the screen behind it stays").toBeInTheDocument();
    expect(screen.getByTestId("quit-dialog")).toBeInTheDocument();
  });

  it("finds a session by its title beyond the newest hundred, and says when the sessions could not be listed", async () => {
    const opened: string[] = [];
    mockIPC((cmd) => {
      if (cmd === "list_sessions") throw { code: "storage", message: "database is locked" };
      if (cmd === "search_sessions") return [{ session_id: "ses_old", title: "fix the parser", status: "completed", created_at: "", snippet: [] }];
    });
    render(<CommandPalette commands={[]} onOpenSession={(id) => opened.push(id)} onClose={() => {}} />);
    const user = userEvent.setup();
    expect(await screen.findByTestId("palette-sessions-error")).toHaveTextContent(/sessions could not be listed: database is locked/i);
    await user.type(screen.getByTestId("palette-input"), "parser");
    await waitFor(() => expect(screen.getAllByTestId("palette-item")[0]).toHaveTextContent("Open: fix the parser"));
    await user.keyboard("{Enter}");
    expect(opened).toEqual(["ses_old"]);
  });

  it("names each session's state as the sidebar does, and tells a task's attempts apart", async () => {
    const at = (id: string, status: SessionSummary["status"], extra: Partial<SessionSummary>) => ({ ...summary(id, `task ${id}`), status, ...extra }) as SessionSummary;
    const group = { group: "g1", number: 1, of: 2, label: "Codex", chosen: true };
    mockIPC((cmd) => {
      if (cmd === "list_sessions")
        return [
          at("discarded", "rejected", { decision: null }),
          at("refused", "rejected", { decision: "reject" }),
          at("kept", "completed", { decision: "approve", branch: "finishline/kept", work_dir: null }),
          at("unchecked", "idle", { end_reason: "conversation_unchecked" }),
          at("doubt", "awaiting_review", { end_reason: "cycles_exhausted" }),
          at("a1", "completed", { task: "write greet.txt", title: "write greet.txt", attempt: group }),
          at("a2", "rejected", { task: "write greet.txt", title: "write greet.txt", decision: "reject", occasion: "another_attempt_chosen", attempt: { ...group, number: 2, label: "Claude Code", chosen: false } }),
        ];
      return [];
    });
    const onOpenGroup = vi.fn();
    render(<CommandPalette commands={[]} onOpenSession={() => {}} onOpenGroup={onOpenGroup} onClose={() => {}} />);
    await waitFor(() => expect(screen.getAllByTestId("palette-item")).toHaveLength(8));
    expect(screen.getAllByTestId("palette-item").map((i) => i.textContent)).toEqual([
      "Open: task discardedDiscarded",
      "Open: task refusedRejected",
      "Open: task keptBranch kept",
      "Open: task uncheckedNot checked",
      "Open: task doubtOut of tries",
      "Open: write greet.txt · 2 attempts side by sideOne chosen",
      "Open: write greet.txt · 1. CodexCompleted",
      "Open: write greet.txt · 2. Claude CodeNot chosen",
    ]);
    // The attempts side by side, as the sidebar's group opens them: by their task's words.
    await userEvent.setup().keyboard("greet side{Enter}");
    expect(onOpenGroup).toHaveBeenCalledWith("g1");
  });

  it("finds a recent session by words in its messages, not only by its title", async () => {
    const opened: string[][] = [];
    mockIPC((cmd) => {
      if (cmd === "list_sessions") return [summary("ses_new", "read the file slowly"), summary("ses_other", "write docs")];
      if (cmd === "search_sessions")
        return [{ session_id: "ses_new", title: "read the file slowly", status: "completed", created_at: "", message_id: "m7", snippet: [{ text: "the ship sailed into the ", matched: false }, { text: "harbor", matched: true }] }];
    });
    render(<CommandPalette commands={[]} onOpenSession={(...args) => opened.push(args.filter((a) => a !== undefined) as string[])} onClose={() => {}} />);
    const user = userEvent.setup();
    await user.type(screen.getByTestId("palette-input"), "harbor");
    await waitFor(() => expect(screen.getAllByTestId("palette-item").map((i) => i.textContent)).toEqual([expect.stringContaining("Open: read the file slowly")]));
    // Why it matched, when its title does not say: the passage, its words marked.
    const passage = screen.getByTestId("palette-passage");
    expect(passage).toHaveTextContent("the ship sailed into the harbor");
    expect(passage.querySelector("mark")).toHaveTextContent("harbor");
    await user.keyboard("{Enter}");
    expect(opened, "opened at the message the match is in, with the words to mark there").toEqual([["ses_new", "m7", ["harbor"]]]);
  });

  it("opens a session found by its title at where it is now, not at a message that happens to hold the words", async () => {
    const opened: string[][] = [];
    let searched = false;
    mockIPC((cmd) => {
      if (cmd === "list_sessions") return [summary("ses_new", "edit notes")];
      if (cmd === "search_sessions" && (searched = true))
        return [{ session_id: "ses_new", title: "edit notes", status: "completed", created_at: "", message_id: "m2", snippet: [{ text: "Editing notes.txt now", matched: true }] }];
    });
    render(<CommandPalette commands={[]} onOpenSession={(...args) => opened.push(args.filter((a) => a !== undefined) as string[])} onClose={() => {}} />);
    const user = userEvent.setup();
    await user.type(screen.getByTestId("palette-input"), "edit notes");
    await waitFor(() => expect(searched).toBe(true));
    await waitFor(() => expect(screen.getAllByTestId("palette-item").map((i) => i.textContent)).toEqual([expect.stringContaining("Open: edit notes")]));
    await user.keyboard("{Enter}");
    expect(opened, "its title says why it matched: it opens as it is, at its end").toEqual([["ses_new"]]);
  });

  it("offers Approve while a review waits, and Approve decides it", async () => {
    const calls: { cmd: string; args: unknown }[] = [];
    let seq = 0;
    const ev = (e: object) => ({ ...e, seq: ++seq, session_id: "ses_1", at: "2026-11-21T00:00:00Z" }) as Envelope;
    mockIPC(
      (cmd, args) => {
        calls.push({ cmd, args });
        if (cmd === "get_settings") return view();
        if (cmd === "list_sessions") return [{ ...summary("ses_1", "fix the login page"), status: "awaiting_review", created_ms: Date.now() }];
        if (cmd === "subscribe_session") {
          const events = [
            ev({ type: "session_created", task: "fix the login page", workspace: "/ws", provider: "openai", model: "m" }),
            ev({ type: "review_requested", review_id: "r1", claim: "success", verdict: "done", end_reason: "verified_done", remaining: [], files_changed: [], verification: [] }),
            ev({ type: "status_changed", status: "awaiting_review" }),
          ];
          setTimeout(() => events.forEach((e) => (args as { channel: { onmessage: (e: Envelope) => void } }).channel.onmessage(e)), 0);
          return 1;
        }
        // The landing takes its time: meanwhile the review is being decided.
        if (cmd === "submit_review") return new Promise(() => {});
      },
      { shouldMockEvents: true },
    );
    render(<App />);
    const user = userEvent.setup();
    await screen.findByTestId("new-task-form");
    await user.click(await screen.findByRole("button", { name: /fix the login page/ }));
    await screen.findByTestId("approve");
    await user.keyboard("{Control>}k{/Control}");
    const first = (await screen.findAllByTestId("palette-item"))[0];
    expect(first, "Ctrl+K then Enter, out of habit, decides nothing: a decision is picked by name").not.toHaveTextContent(/Approve|Reject|Request changes/);
    expect(screen.getAllByTestId("palette-item").map((i) => i.textContent)).toEqual(expect.arrayContaining([expect.stringContaining("Approve the result")]));
    await user.keyboard("approve{Enter}");
    await waitFor(() => expect(calls.find((c) => c.cmd === "submit_review")?.args).toMatchObject({ input: { review_id: "r1", decision: "approve" } }));
    // While that decision is on its way, the palette offers no second one.
    await user.keyboard("{Control>}k{/Control}");
    await screen.findByTestId("palette");
    expect(screen.getAllByTestId("palette-item").map((i) => i.textContent)).not.toEqual(expect.arrayContaining([expect.stringMatching(/Reject the result|Approve the result/)]));
  });

  it("offers the buttons the screen shows, by name: Retry on a failed run presses Retry", async () => {
    const calls: { cmd: string; args: unknown }[] = [];
    let seq = 0;
    const ev = (e: object) => ({ ...e, seq: ++seq, session_id: "ses_1", at: "2026-11-21T00:00:00Z" }) as Envelope;
    mockIPC(
      (cmd, args) => {
        calls.push({ cmd, args });
        if (cmd === "get_settings") return view();
        if (cmd === "list_sessions") return [{ ...summary("ses_1", "fix the login page"), status: "failed", created_ms: Date.now() }];
        if (cmd === "subscribe_session") {
          const events = [
            ev({ type: "session_created", task: "fix the login page", workspace: "/ws", provider: "openai", model: "m" }),
            ev({ type: "run_started", trigger: "task" }),
            ev({ type: "error", code: "provider_unreachable", message: "connection refused" }),
            ev({ type: "status_changed", status: "failed" }),
          ];
          setTimeout(() => events.forEach((e) => (args as { channel: { onmessage: (e: Envelope) => void } }).channel.onmessage(e)), 0);
          return 1;
        }
        if (cmd === "send_message") return null;
      },
      { shouldMockEvents: true },
    );
    render(<App />);
    const user = userEvent.setup();
    await screen.findByTestId("new-task-form");
    await user.click(await screen.findByRole("button", { name: /fix the login page/ }));
    await screen.findByTestId("retry-run");
    await user.keyboard("{Control>}k{/Control}");
    const items = (await screen.findAllByTestId("palette-item")).map((i) => i.textContent);
    expect(items).toEqual(expect.arrayContaining([expect.stringContaining("Retry the run"), expect.stringContaining("Save the session as Markdown")]));
    expect(items, "a button not on screen is not offered").not.toEqual(expect.arrayContaining([expect.stringContaining("Ask the evaluator to compare")]));
    await user.keyboard("retry{Enter}");
    await waitFor(() => expect(calls.find((c) => c.cmd === "send_message")?.args).toMatchObject({ sessionId: "ses_1", message: "" }));
  });

  it("? lists the shortcuts, but typing ? in a text field is just a question mark", async () => {
    mockIPC((cmd) => (cmd === "get_settings" ? view() : cmd === "list_sessions" ? [] : undefined), { shouldMockEvents: true });
    render(<App />);
    const user = userEvent.setup();
    const task = await screen.findByTestId("task-input");
    await user.click(task);
    await user.keyboard("why?");
    expect(screen.queryByTestId("shortcuts")).not.toBeInTheDocument();
    expect(task).toHaveValue("why?");
    await user.click(screen.getByTestId("nav-history"));
    await user.keyboard("?");
    expect(await screen.findByTestId("shortcuts")).toHaveTextContent("Ctrl+K");
    expect(screen.getByTestId("shortcuts"), "the review's keys too").toHaveTextContent("j / kThe review's diff: next / previous file");
    await user.keyboard("{Escape}");
    expect(screen.queryByTestId("shortcuts")).not.toBeInTheDocument();
    await waitFor(() => expect(screen.getByTestId("nav-history"), "the focus is back where it was").toHaveFocus());
  });

  it("Tab and Shift+Tab stay in the palette and the shortcut list, never reaching the page behind them", async () => {
    mockIPC((cmd) => (cmd === "get_settings" ? view() : cmd === "list_sessions" ? [] : undefined), { shouldMockEvents: true });
    render(<App />);
    const user = userEvent.setup();
    await screen.findByTestId("task-input");
    await user.keyboard("{Control>}k{/Control}");
    const input = await screen.findByTestId("palette-input");
    await user.tab();
    expect(input, "Tab keeps the keys in the palette").toHaveFocus();
    await user.tab({ shift: true });
    expect(input, "so does Shift+Tab").toHaveFocus();
    await user.keyboard("{Escape}");
    expect(screen.queryByTestId("palette")).not.toBeInTheDocument();

    await user.click(screen.getByTestId("nav-history"));
    await user.keyboard("?");
    const list = await screen.findByTestId("shortcuts");
    const close = list.querySelector("button")!;
    expect(close).toHaveFocus();
    await user.tab();
    expect(close, "Tab stays on the list's one button").toHaveFocus();
    await user.tab({ shift: true });
    expect(close).toHaveFocus();
  });

  it("Esc gives the focus back to where it was before the palette opened", async () => {
    mockIPC((cmd) => (cmd === "get_settings" ? view() : cmd === "list_sessions" ? [] : undefined), { shouldMockEvents: true });
    render(<App />);
    const user = userEvent.setup();
    const task = await screen.findByTestId("task-input");
    await user.click(task);
    await user.keyboard("{Control>}k{/Control}");
    expect(await screen.findByTestId("palette-input")).toHaveFocus();
    await user.keyboard("{Escape}");
    expect(screen.queryByTestId("palette")).not.toBeInTheDocument();
    await waitFor(() => expect(task, "a keyboard user goes on where they were, not from the page's top").toHaveFocus());
    // The shortcut list opened from the palette gives it back there too, not to the page.
    await user.keyboard("{Control>}k{/Control}");
    await user.keyboard("keyboard shortcuts{Enter}");
    await screen.findByTestId("shortcuts");
    await user.keyboard("{Escape}");
    expect(screen.queryByTestId("shortcuts")).not.toBeInTheDocument();
    await waitFor(() => expect(task).toHaveFocus());
  });
});
