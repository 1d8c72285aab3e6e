import { act, fireEvent, render, renderHook, screen, waitFor, within } from "@testing-library/react";
import { useAttemptProgress } from "../attemptProgress";
import userEvent from "@testing-library/user-event";
import { mockIPC } from "@tauri-apps/api/mocks";
import { emit } from "@tauri-apps/api/event";
import { describe, expect, it, onTestFinished, vi } from "vitest";
import { useState } from "react";
import type { Compared, EndReason, GroupRanking, SessionSummary } from "../ipc";
import { AttemptsView, belowFirst, placesOf } from "../screens/Attempts";
import { attemptChoices, attemptList, AttemptsPicker, attemptsProblem, refreshedChoices, withModel } from "../components/AttemptsPicker";
import { attemptLabel, setAside, sidebarEntries, sidebarGroups, waitingCount } from "../sidebar";
import { collapseGroups, History } from "../screens/History";
import { TasksSection } from "../components/TasksSection";
import { WorktreeStorage } from "../components/StoragePanel";
import type { Settings, TaskSettings } from "../ipc";
import { spyOnScrollIntoView } from "./fixtures";
import { DISCARDED_TITLE, listedState } from "../session/model";

const evidence = (session: string, label: string, over: Partial<GroupRanking["ranking"][number]["evidence"]> = {}) => ({
  session,
  label,
  ended: true,
  end_reason: "verified_done" as const,
  review: `req-${session}`,
  reviewed: true,
  findings: 0,
  checks_passed: 1,
  checks_run: 1,
  evaluated: true,
  remaining: 0,
  diff_lines: 2,
  files: 1,
  cost_usd: null,
  tokens: 1200,
  wall_ms: 2000,
  ...over,
});

const ranking = (): GroupRanking => ({
  group: "g1",
  task: "write greet.py",
  all_ended: true,
  chosen: null,
  ranking: [
    { rank: 1, evidence: evidence("s2", "Codex"), above_next: "verified done" },
    { rank: 2, evidence: evidence("s1", "Finishline's agent (m)", { end_reason: "cycles_exhausted", checks_passed: 0, findings: 1, evaluated: false }), above_next: null },
  ],
  places: ["1", "2"],
});

const summary = (id: string, status: SessionSummary["status"], group?: string, number = 1): SessionSummary =>
  ({
    id,
    title: "write greet.py",
    task: "write greet.py",
    workspace: "/repo",
    provider: "openai",
    model: "m",
    status,
    claim: null,
    verdict: null,
    end_reason: null,
    decision: null,
    created_at: "",
    created_ms: Date.now() - number,
    duration_ms: 0,
    tokens: { agent: 0, evaluator: 0, compaction: 0 },
    last_seq: 1,
    plan_steps: 0,
    plan_done: 0,
    approvals: 0,
    attempt: group ? { group, number, of: 2, label: `attempt ${number}`, chosen: false } : null,
  }) as SessionSummary;

describe("attempts side by side", () => {
  it("New Task counts attempts per agent and needs two to four", () => {
    const choices = attemptChoices("m", null, [{ name: "codex", label: "Codex", found: true } as never]);
    expect(choices.map((c) => c.label)).toEqual(["Finishline's agent (m)", "Codex"]);
    expect(attemptsProblem(choices, 4)).toMatch(/at least two/);
    choices[0].count = 2;
    choices[1].count = 1;
    expect(attemptsProblem(choices, 4)).toBeNull();
    expect(attemptList(choices)).toEqual(["builtin", "builtin", "codex"]);
    choices[1].count = 3;
    expect(attemptsProblem(choices, 4)).toMatch(/At most 4/);
  });

  it("the agent chosen in Settings that is not installed here says so, beside the installed ones", () => {
    const presets = [{ name: "codex", label: "Codex", found: "/bin/codex" }, { name: "claude-code", label: "Claude Code", found: null }] as never[];
    const labels = (agent: string) => attemptChoices("m", { name: agent } as never, presets).map((c) => c.label);
    expect(labels("claude-code")).toEqual(["Finishline's agent (m)", "Claude Code (from Settings, not installed here)", "Codex"]);
    expect(labels("codex"), "an installed one is listed once").toEqual(["Finishline's agent (m)", "Codex"]);
    expect(labels("my-agent"), "one of the person's own").toEqual(["Finishline's agent (m)", "my-agent (from Settings)", "Codex"]);
  });

  it("New Task says attempts are off when Settings allows fewer than two, and keeps a count over the limit as typed", () => {
    const choices = attemptChoices("m", null, [{ name: "codex", label: "Codex", found: "/bin/codex" }] as never[]);
    const { rerender } = render(<AttemptsPicker on onToggle={() => {}} choices={choices} onChange={() => {}} limit={1} available />);
    expect(screen.getByTestId("attempts-toggle")).toBeDisabled();
    expect(screen.getByTestId("attempts-off")).toHaveTextContent("Raise it to 2 or more");
    expect(screen.queryByTestId("attempts-total")).toBeNull();
    let changed: typeof choices = [];
    rerender(<AttemptsPicker on onToggle={() => {}} choices={choices} onChange={(c) => (changed = c)} limit={4} available />);
    expect(screen.getByTestId("attempts-builtin"), "one agent can have at most the limit").toHaveAttribute("max", "4");
    fireEvent.change(screen.getByTestId("attempts-builtin"), { target: { value: "9" } });
    expect(changed[0].count).toBe(9);
    expect(attemptsProblem(changed, 4)).toMatch(/At most 4/);
    rerender(<AttemptsPicker on onToggle={() => {}} choices={changed} onChange={() => {}} limit={4} available />);
    expect(screen.getByTestId("attempts-builtin"), "the box over the limit is marked, not only the total").toHaveAttribute("aria-invalid", "true");
    expect(screen.getByTestId("attempts-codex")).not.toHaveAttribute("aria-invalid");
  });

  it("the sidebar lists a group's attempts under one entry, in the section of its most urgent attempt", () => {
    const groups = sidebarGroups([summary("a", "busy", "g1", 1), summary("b", "awaiting_review", "g1", 2), summary("c", "busy")], new Date());
    const e = sidebarEntries(groups);
    expect(e.working).toHaveLength(2);
    const group = e.working.find((x) => x.kind === "group");
    expect(group && group.kind === "group" && group.attempts.map((s) => s.id)).toEqual(["a", "b"]);
    expect(e.waiting).toHaveLength(0);
  });

  it("a group whose attempts all stopped with their worktrees kept waits for the person: nothing is decided yet", () => {
    const kept = (id: string, status: SessionSummary["status"], n: number) => ({ ...summary(id, status, "g1", n), work_dir: `/data/worktrees/${id}` });
    const e = sidebarEntries(sidebarGroups([kept("a", "idle", 1), kept("b", "failed", 2)], new Date()));
    expect(e.waiting.map((r) => (r.kind === "group" ? r.attempts.length : 0)), "the group waits, whole").toEqual([2]);
    expect(e.today).toHaveLength(0);
  });

  it("today's list counts a group as one row and never cuts a group's attempts short", () => {
    const at = (s: SessionSummary, minutesAgo: number) => ({ ...s, created_ms: Date.now() - minutesAgo * 60_000 });
    const group = (g: string, n: number, minutesAgo: number) => Array.from({ length: n }, (_, i) => at({ ...summary(`${g}-${i + 1}`, "rejected", g, i + 1), attempt: { group: g, number: i + 1, of: n, label: `attempt ${i + 1}`, chosen: false } }, minutesAgo));
    const three = [...group("g3", 2, 1), ...group("g2", 3, 2), ...group("g1", 3, 3)];
    const g = sidebarGroups(three, new Date());
    const rows = sidebarEntries(g).today;
    expect(rows.map((r) => (r.kind === "group" ? `${r.group}:${r.attempts.length}` : "one"))).toEqual(["g3:2", "g2:3", "g1:3"]);
    expect(g.moreToday, "three rows are within the limit").toBe(false);
    const singles = Array.from({ length: 6 }, (_, i) => at(summary(`s${i}`, "completed"), 0.5));
    const full = sidebarGroups([...singles, ...group("g1", 3, 3)], new Date());
    expect(sidebarEntries(full).today.every((r) => r.kind === "session"), "six newer rows fill the list").toBe(true);
    expect(full.moreToday).toBe(true);
  });

  it("Settings' attempts limit can be emptied and retyped: clearing it and typing 2 gives 2, not 12", async () => {
    mockIPC(() => null);
    const seen: number[] = [];
    const draft = { tasks: { max_attempts: 4 } } as unknown as Settings;
    render(<TasksSection draft={draft} onChange={(t: TaskSettings) => seen.push(t.max_attempts ?? 0)} />);
    const box = screen.getByTestId("max-attempts");
    await userEvent.clear(box);
    await userEvent.type(box, "2");
    expect(seen).toEqual([2]);
    expect(box).toHaveValue(2);
  });

  it("Settings' untracked-file patterns take a new line and a space as typed; the settings get the trimmed patterns", async () => {
    mockIPC(() => null);
    let saved: string[] = [];
    function Form() {
      const [tasks, setTasks] = useState<TaskSettings | undefined>(undefined);
      return (
        <TasksSection
          draft={{ tasks } as unknown as Settings}
          onChange={(t) => {
            saved = t.worktree_include;
            setTasks(t);
          }}
        />
      );
    }
    render(<Form />);
    const box = screen.getByTestId("worktree-include");
    await userEvent.clear(box);
    await userEvent.type(box, ".env{Enter}my notes/*.txt {Enter}");
    expect(box, "what was typed stays as typed").toHaveValue(".env\nmy notes/*.txt \n");
    expect(saved).toEqual([".env", "my notes/*.txt"]);
  });

  it("New Task adds Finishline's agent on another model as its own attempt, as the CLI's builtin:MODEL", async () => {
    let choices = attemptChoices("small", null, []);
    choices[0].count = 1;
    render(<AttemptsPicker on onToggle={() => {}} choices={choices} onChange={(c) => (choices = c)} limit={4} available model="small" />);
    await userEvent.type(screen.getByTestId("attempts-model"), "large{Enter}");
    expect(attemptList(choices)).toEqual(["builtin", "builtin:large"]);
    expect(choices[1].label).toBe("Finishline's agent (large)");
    expect(attemptList(withModel(choices, "large", "small"))).toEqual(["builtin", "builtin:large", "builtin:large"]);
    expect(attemptList(withModel(choices, "small", "small"))).toEqual(["builtin", "builtin", "builtin:large"]);
  });

  it("a model typed in New Task that was already added for Finishline's agent is one row, not two alike", () => {
    let choices = refreshedChoices([], attemptChoices("small", null, []), "small");
    choices = withModel(choices, "large", "small");
    expect(attemptList(choices), "two tries on the task's model by default, one on the model added").toEqual(["builtin", "builtin", "builtin:large"]);
    // The person now types "large" in New Task's Model field: Finishline's agent runs on it.
    choices = refreshedChoices(choices, attemptChoices("large", null, []), "large");
    expect(choices.map((c) => c.label), "one row says (large)").toEqual(["Finishline's agent (large)"]);
    expect(attemptList(choices), "with both rows' attempts").toEqual(["builtin", "builtin", "builtin"]);
    // Typed on past it ("large" on the way to "large-v2"), the added model gets its own row back.
    const typedOn = refreshedChoices(choices, attemptChoices("large-v2", null, []), "large-v2");
    expect(typedOn.map((c) => `${c.label}×${c.count}`)).toEqual(["Finishline's agent (large-v2)×2", "Finishline's agent (large)×1"]);
    // Other rows added by hand stay as they were.
    const other = refreshedChoices(withModel(typedOn, "tiny", "large-v2"), attemptChoices("small", null, []), "small");
    expect(other.map((c) => `${c.label}×${c.count}`)).toEqual(["Finishline's agent (small)×2", "Finishline's agent (large)×1", "Finishline's agent (tiny)×1"]);
  });

  it("the sidebar names an attempt by its number first, and counts a waiting group as one decision", () => {
    const a = summary("a", "awaiting_review", "g1", 1);
    a.attempt = { ...a.attempt!, label: "Finishline's agent (m) #1" };
    expect(attemptLabel(a), "the model first, where a narrow sidebar cuts last").toBe("1. m · built-in");
    const e = sidebarEntries(sidebarGroups([a, summary("b", "awaiting_review", "g1", 2), summary("c", "awaiting_review", "g1", 3), summary("d", "awaiting_review")], new Date()));
    expect(waitingCount(e.waiting)).toBe(2);
  });

  it("History shows a group as one entry", () => {
    const rows = collapseGroups([summary("a", "completed", "g1", 1), summary("b", "rejected", "g1", 2), summary("c", "completed")]);
    expect(rows.map((r) => [r.row.id, r.attempts.length])).toEqual([
      ["a", 2],
      ["c", 0],
    ]);
  });

  it("History's row for a group tells the chosen attempt's outcome and the whole group's tokens and time", () => {
    const first = { ...summary("a", "rejected", "g1", 1), end_reason: "stuck" as const, duration_ms: 8000, tokens: { agent: 4000, evaluator: 100, compaction: 0 } };
    const chosen = { ...summary("b", "completed", "g1", 2), end_reason: "verified_done" as const, duration_ms: 12000, tokens: { agent: 3000, evaluator: 200, compaction: 0 } };
    chosen.attempt = { ...chosen.attempt!, chosen: true };
    const [row] = collapseGroups([first, chosen]);
    expect([row.row.status, row.row.end_reason]).toEqual(["completed", "verified_done"]);
    expect(row.row.tokens.agent + row.row.tokens.evaluator).toBe(7300);
    expect(row.row.duration_ms).toBe(12000);
    // Undecided, one still waits for review: the group waits for the person.
    const [waiting] = collapseGroups([summary("a", "failed", "g2", 1), summary("b", "awaiting_review", "g2", 2)]);
    expect(waiting.row.status).toBe("awaiting_review");
    const [running] = collapseGroups([summary("a", "awaiting_review", "g3", 1), summary("b", "busy", "g3", 2)]);
    expect(running.row.status).toBe("busy");
  });

  it("History's search that matches one attempt of a group still counts the whole group and tells the chosen one's outcome", () => {
    const matched = { ...summary("a", "rejected", "g1", 1), end_reason: "stuck" as const };
    const chosen = { ...summary("b", "completed", "g1", 2), end_reason: "verified_done" as const };
    chosen.attempt = { ...chosen.attempt!, chosen: true };
    const [row] = collapseGroups([matched], [matched, chosen, summary("c", "completed")]);
    expect(row.attempts.map((x) => x.id), "every attempt of the group, not only the one the search met").toEqual(["a", "b"]);
    expect([row.row.status, row.row.end_reason]).toEqual(["completed", "verified_done"]);
  });

  it("History filtered to one attempt's state shows its group's row as the whole group stands", async () => {
    const chosen = { ...summary("s1", "completed", "g1", 1), decision: "approve" as const };
    chosen.attempt = { ...chosen.attempt!, chosen: true };
    const refused = { ...summary("s2", "rejected", "g1", 2), decision: "reject" as const };
    const asked: unknown[] = [];
    mockIPC((cmd, args) => {
      if (cmd === "list_sessions") {
        const filter = ((args as { filter: { shown?: string[]; ids?: string[] } | null }).filter ?? {}) as { shown?: string[]; ids?: string[] };
        asked.push(filter);
        if (filter.ids) return filter.shown ? [] : [chosen, refused];
        return filter.shown ? [refused] : [chosen, refused];
      }
      return null;
    });
    render(<History onNewTask={() => {}} onOpen={() => {}} onOpenGroup={() => {}} />);
    const user = userEvent.setup();
    await screen.findByTestId("history-row");
    await user.selectOptions(screen.getByTestId("history-filter"), "rejected");
    await waitFor(() => expect(asked.at(-1), "its group's other attempts, whatever their state").toMatchObject({ ids: ["s2"] }));
    const row = await screen.findByTestId("history-row");
    await waitFor(() => expect(within(row).getByTestId("history-attempts")).toHaveTextContent("2 attempts · chose attempt 1"));
    expect(within(row).getByTestId("status-badge"), "the group's own state, not its rejected attempt's").toHaveTextContent("Completed");
    expect(within(row).getByTestId("open-group"), "a decided group is opened, not compared").toHaveTextContent(/^Open$/);
  });

  it("History's row of an undecided group whose attempts stopped says the state of its best one, not a failed one's", async () => {
    mockIPC((cmd) =>
      cmd === "list_sessions" ? [summary("c", "failed", "g1", 3), { ...summary("a", "idle", "g1", 1), end_reason: "conversation_unchecked" as const }, summary("b", "cancelled", "g1", 2)] : null,
    );
    render(<History onNewTask={() => {}} onOpen={() => {}} onOpenGroup={() => {}} />);
    const row = await screen.findByTestId("history-row");
    expect(row, "two attempts ended well enough to go on from").toHaveAttribute("data-status", "idle");
    expect(within(row).getByTestId("status-badge"), "in the sidebar's words").toHaveTextContent("Not checked");
  });

  it("History exports a group none was chosen from whole, and saves it as such", async () => {
    const asked: unknown[] = [];
    mockIPC((cmd, args) => {
      if (cmd === "list_sessions") return [summary("a", "rejected", "g1", 1), summary("b", "rejected", "g1", 2)];
      if (cmd === "export_group" || cmd === "save_group_export") {
        asked.push({ cmd, ...(args as object) });
        return cmd === "export_group" ? "# Attempts: t" : "/home/p/attempts.md";
      }
      return null;
    });
    render(<History onNewTask={() => {}} onOpen={() => {}} onOpenGroup={() => {}} />);
    const user = userEvent.setup();
    const row = await screen.findByTestId("history-row");
    const md = within(row).getByRole("button", { name: "Markdown" });
    expect(md.getAttribute("title"), "what it holds, said").toBe("Every attempt's session, with how they were ranked and what you chose");
    await user.click(md);
    expect(await screen.findByTestId("export-text")).toHaveTextContent("# Attempts: t");
    expect(screen.getByRole("region", { name: "Export of the attempts at write greet.py" }), "it says it is the group's").toHaveTextContent("Markdown export of the 2 attempts at “write greet.py”");
    await user.click(screen.getByRole("button", { name: /Save as/ }));
    await waitFor(() =>
      expect(asked).toEqual([
        { cmd: "export_group", group: "g1", format: "md" },
        { cmd: "save_group_export", group: "g1", format: "md" },
      ]),
    );
    expect(await screen.findByText("Saved to /home/p/attempts.md")).toBeTruthy();
  });

  it("History's Delete on a group deletes every attempt, not only the first", async () => {
    const deleted: unknown[] = [];
    mockIPC((cmd, args) => {
      if (cmd === "list_sessions") return [summary("a", "rejected", "g1", 1), summary("b", "failed", "g1", 2)];
      if (cmd === "delete_session") return void deleted.push((args as { sessionId: string }).sessionId);
      return null;
    });
    render(<History onNewTask={() => {}} onOpen={() => {}} onOpenGroup={() => {}} />);
    const row = await screen.findByTestId("history-row");
    expect(within(row).getByTestId("delete"), "red, as a single session's Delete is").toHaveClass("danger");
    await userEvent.click(within(row).getByTestId("delete"));
    await userEvent.click(screen.getByText("Delete all 2 for good"));
    expect(deleted).toEqual(["a", "b"]);
  });

  it("History's Delete for good says it is deleting, is done once, and leaves the focus in the search box once the group's row is gone", async () => {
    const deleted: string[] = [];
    let gone = false;
    let finish: () => void = () => {};
    mockIPC((cmd, args) => {
      if (cmd === "list_sessions") return gone ? [] : [summary("a", "rejected", "g1", 1), summary("b", "failed", "g1", 2)];
      if (cmd === "delete_session") {
        deleted.push((args as { sessionId: string }).sessionId);
        // A worktree and a checkpoint store take a while to remove.
        return deleted.length === 2 ? new Promise<void>((done) => (finish = done)) : null;
      }
      return null;
    });
    render(<History onNewTask={() => {}} onOpen={() => {}} onOpenGroup={() => {}} />);
    const user = userEvent.setup();
    await user.click(within(await screen.findByTestId("history-row")).getByTestId("delete"));
    await user.click(screen.getByTestId("confirm-delete"));
    await vi.waitFor(() => expect(deleted).toEqual(["a", "b"]));
    expect(screen.getByTestId("confirm-delete")).toHaveTextContent("Deleting…");
    expect(screen.getByTestId("confirm-delete")).toBeDisabled();
    fireEvent.click(screen.getByTestId("confirm-delete"));
    expect(deleted, "once").toEqual(["a", "b"]);
    gone = true;
    finish();
    await vi.waitFor(() => expect(screen.queryByTestId("history-row")).toBeNull());
    await vi.waitFor(() => expect(screen.getByTestId("history-search"), "not on the page").toHaveFocus());
  });

  it("History's export comes into view with the focus, from however far down the row was, and a failed save says why in view", async () => {
    const shown = spyOnScrollIntoView();
    mockIPC((cmd) => {
      if (cmd === "list_sessions") return [summary("s", "completed")];
      if (cmd === "export_session") return "# write greet.py";
      if (cmd === "save_session_export") throw { code: "io", message: "the disk is full" };
      return null;
    });
    render(<History onNewTask={() => {}} onOpen={() => {}} />);
    const user = userEvent.setup();
    await user.click(within(await screen.findByTestId("history-row")).getByText("Markdown"));
    const panel = await screen.findByTestId("export-panel");
    expect(shown.mock.contexts, "brought into view").toContain(panel);
    expect(panel).toHaveFocus();
    await user.click(within(panel).getByRole("button", { name: "Save as…" }));
    const said = await screen.findByRole("alert");
    expect(said).toHaveTextContent(/the disk is full/i);
    expect(
      shown.mock.contexts.some((el) => (el as Element).contains(said)),
      "the error too",
    ).toBe(true);
  });

  it("History's export names the session it holds, and Esc closes it with the focus back on the button that opened it", async () => {
    mockIPC((cmd) => {
      if (cmd === "list_sessions") return [summary("s", "completed")];
      if (cmd === "export_session") return "# write greet.py";
      return null;
    });
    render(<History onNewTask={() => {}} onOpen={() => {}} />);
    const user = userEvent.setup();
    const row = await screen.findByTestId("history-row");
    const opener = within(row).getByText("Markdown");
    await user.click(opener);
    const panel = await screen.findByTestId("export-panel");
    expect(within(panel).getByRole("heading")).toHaveTextContent("Markdown export of “write greet.py”");
    expect(panel).toHaveAccessibleName(/Export of/);
    await user.keyboard("{Escape}");
    expect(screen.queryByTestId("export-panel")).toBeNull();
    expect(opener).toHaveFocus();
  });

  it("History's export text is reached with Tab, past its buttons, so the arrow keys scroll it", async () => {
    mockIPC((cmd) => {
      if (cmd === "list_sessions") return [summary("s", "completed")];
      if (cmd === "export_session") return "# write greet.py\n".repeat(500);
      return null;
    });
    render(<History onNewTask={() => {}} onOpen={() => {}} />);
    const user = userEvent.setup();
    await user.click(within(await screen.findByTestId("history-row")).getByText("Markdown"));
    await screen.findByTestId("export-panel");
    await user.tab(); // Save as…
    await user.tab(); // Copy
    await user.tab(); // Close
    await user.tab();
    expect(screen.getByTestId("export-text"), "the text itself takes the keys").toHaveFocus();
    expect(screen.getByTestId("export-text")).toHaveAccessibleName("The exported text");
  });

  it("Esc in History's delete question keeps the session, gives the focus back to Delete, and does nothing else", async () => {
    const deleted: unknown[] = [];
    mockIPC((cmd, args) => {
      if (cmd === "list_sessions") return [summary("s", "completed"), summary("a", "rejected", "g1", 1), summary("b", "failed", "g1", 2)];
      if (cmd === "delete_session") return void deleted.push((args as { sessionId: string }).sessionId);
      return null;
    });
    const elsewhere: string[] = [];
    const listen = (e: KeyboardEvent) => elsewhere.push(e.key);
    window.addEventListener("keydown", listen);
    onTestFinished(() => window.removeEventListener("keydown", listen));
    render(<History onNewTask={() => {}} onOpen={() => {}} onOpenGroup={() => {}} />);
    const user = userEvent.setup();
    for (const row of await screen.findAllByTestId("history-row")) {
      const del = within(row).getByTestId("delete");
      del.focus();
      await user.keyboard("{Enter}");
      expect(await screen.findByTestId("confirm-delete")).toHaveTextContent(row.dataset.group ? "Delete all 2 for good" : "Delete for good");
      // Tab stays in the question: past its last button to its first, and back.
      const keep = screen.getByRole("button", { name: "Keep" });
      expect(keep).toHaveFocus();
      await user.tab({ shift: true });
      expect(screen.getByTestId("confirm-delete"), "Shift+Tab from the first goes round to the last").toHaveFocus();
      await user.tab();
      expect(keep, "Tab from the last goes round to the first").toHaveFocus();
      // A click beside the question leaves the focus in it, so Esc still answers it.
      await user.click(document.querySelector(".modal-backdrop")!);
      await user.keyboard("{Escape}");
      expect(screen.queryByTestId("confirm-delete"), "Esc closes the question").toBeNull();
      expect(within(row).getByTestId("delete"), "the focus is back where the question was asked from").toHaveFocus();
    }
    expect(deleted, "nothing is deleted").toEqual([]);
    expect(screen.getAllByTestId("history-row")).toHaveLength(2);
    expect(elsewhere, "no other Esc handler of the window sees it").not.toContain("Escape");
  });

  it("a task deleted after its repository moved says what stays in that repository and the commands that remove it", async () => {
    let rows = [summary("s", "cancelled")];
    const left = "the repository the task started from is no longer at /repo (moved, renamed or deleted), so git's entry for the task's worktree and its branch finishline/abc stay in it: where it is now, `git worktree remove -f -f /wt` removes the entry, and `git update-ref -d refs/heads/finishline/abc 1a2b3c` the branch if it is still where the task left it (a commit of yours on it keeps it)";
    mockIPC((cmd) => {
      if (cmd === "list_sessions") return rows;
      if (cmd === "delete_session") {
        rows = [];
        return left;
      }
      return null;
    });
    render(<History onNewTask={() => {}} onOpen={() => {}} onOpenGroup={() => {}} />);
    const user = userEvent.setup();
    await user.click(within(await screen.findByTestId("history-row")).getByTestId("delete"));
    await user.click(await screen.findByTestId("confirm-delete"));
    const said = await screen.findByTestId("deleted-left");
    expect(said).toHaveTextContent("Deleted. The repository the task started from is no longer at /repo");
    expect([...said.querySelectorAll("code")].map((c) => c.textContent)).toEqual(["git worktree remove -f -f /wt", "git update-ref -d refs/heads/finishline/abc 1a2b3c"]);
  });

  it("History badges what happened to each task's work as the sidebar does: put away, refused in a review, or waiting on a kept branch", async () => {
    const rows: SessionSummary[] = [
      { ...summary("put-away", "rejected"), decision: null },
      { ...summary("refused", "rejected"), decision: "reject", created_ms: Date.now() - 10 },
      { ...summary("kept", "rejected"), decision: null, branch: "finishline/kept", work_dir: null, created_ms: Date.now() - 20 },
      { ...summary("landed-on-branch", "completed"), decision: "approve", branch: "finishline/later", work_dir: null, created_ms: Date.now() - 30 },
    ];
    mockIPC((cmd) => (cmd === "list_sessions" ? rows : null));
    render(<History onNewTask={() => {}} onOpen={() => {}} onOpenGroup={() => {}} />);
    await screen.findAllByTestId("history-row");
    const badges = screen.getAllByTestId("history-row").map((r) => {
      const b = within(r).getByTestId("status-badge");
      return [b.textContent, b.getAttribute("title")];
    });
    expect(badges).toEqual([
      ["Discarded", DISCARDED_TITLE],
      ["Rejected", null],
      ["Branch kept", "Put away without a review; its work waits on finishline/kept: merge it when you like, or delete it"],
      ["Branch kept", "Approved; its work waits on finishline/later, not landed: merge it when you like"],
    ]);
  });

  it("a group of attempts deleted after its repository moved says, for each attempt, what stays in that repository", async () => {
    let rows = [summary("a", "rejected", "g1", 1), summary("b", "failed", "g1", 2)];
    const left = (id: string) =>
      `the repository the task started from is no longer at /repo (moved, renamed or deleted), so git's entry for the task's worktree and its branch finishline/${id} stay in it: where it is now, \`git worktree remove -f -f /wt/${id}\` removes the entry, and \`git update-ref -d refs/heads/finishline/${id} 1a2b3c\` the branch if it is still where the task left it (a commit of yours on it keeps it)`;
    mockIPC((cmd, args) => {
      if (cmd === "list_sessions") return rows;
      if (cmd === "delete_session") {
        const id = (args as { sessionId: string }).sessionId;
        rows = rows.filter((r) => r.id !== id);
        return left(id);
      }
      return null;
    });
    render(<History onNewTask={() => {}} onOpen={() => {}} onOpenGroup={() => {}} />);
    const user = userEvent.setup();
    await user.click(within(await screen.findByTestId("history-row")).getByTestId("delete"));
    await user.click(await screen.findByTestId("confirm-delete"));
    const said = await screen.findAllByTestId("deleted-left");
    expect(said, "one note for each attempt").toHaveLength(2);
    expect(said[0]).toHaveTextContent("Deleted. The repository the task started from is no longer at /repo");
    expect(said.flatMap((s) => [...s.querySelectorAll("code")].map((c) => c.textContent))).toEqual([
      "git worktree remove -f -f /wt/a",
      "git update-ref -d refs/heads/finishline/a 1a2b3c",
      "git worktree remove -f -f /wt/b",
      "git update-ref -d refs/heads/finishline/b 1a2b3c",
    ]);
  });

  it("after Delete for good the row goes and the focus lands on the search box, not the page", async () => {
    let rows = [summary("s", "completed"), summary("t", "rejected")];
    mockIPC((cmd, args) => {
      if (cmd === "list_sessions") return rows;
      if (cmd === "delete_session") rows = rows.filter((r) => r.id !== (args as { sessionId: string }).sessionId);
      return null;
    });
    render(<History onNewTask={() => {}} onOpen={() => {}} onOpenGroup={() => {}} />);
    const user = userEvent.setup();
    const [first] = await screen.findAllByTestId("history-row");
    await user.click(within(first).getByTestId("delete"));
    await user.click(await screen.findByTestId("confirm-delete"));
    await waitFor(() => expect(screen.getAllByTestId("history-row")).toHaveLength(1));
    await waitFor(() => expect(screen.getByTestId("history-search")).toHaveFocus());
  });

  it("every card's cost gives its tokens, so one with a price and one without can still be compared", async () => {
    const state: GroupRanking = {
      ...ranking(),
      ranking: [
        { rank: 1, evidence: evidence("s1", "attempt 1", { cost_usd: 0.0074, tokens: 4671 }), above_next: null },
        { rank: 2, evidence: evidence("s2", "attempt 2", { cost_usd: null, tokens: 5299 }), above_next: null },
      ],
    };
    mockIPC((cmd) => {
      if (cmd === "attempt_group") return state;
      if (cmd === "list_sessions") return [summary("s1", "awaiting_review", "g1", 1), summary("s2", "awaiting_review", "g1", 2)];
      return null;
    });
    render(<AttemptsView group="g1" onOpenSession={() => {}} />);
    await waitFor(() => expect(screen.getAllByTestId("attempt-cost")).toHaveLength(2));
    expect(screen.getAllByTestId("attempt-cost").map((c) => c.textContent)).toEqual([`$0.0074 · ${(4671).toLocaleString()}\u00a0tokens`, `${(5299).toLocaleString()}\u00a0tokens`]);
  });

  it("the differences name the attempts they leave out: one still running, one that ended with no work to review", async () => {
    const state: GroupRanking = {
      ...ranking(),
      all_ended: false,
      places: ["–", "–", "–"],
      ranking: [
        { rank: 1, evidence: evidence("s1", "Codex"), above_next: null },
        { rank: 0, evidence: evidence("s2", "Gemini CLI", { ended: false, end_reason: null, review: null, reviewed: false }), above_next: null },
        { rank: 0, evidence: evidence("s3", "model-c", { end_reason: "conversation_unchecked", review: null, reviewed: false, files: 0, diff_lines: 0 }), above_next: null },
      ],
    };
    mockIPC((cmd) => {
      if (cmd === "attempt_group") return state;
      if (cmd === "list_sessions") return [summary("s1", "awaiting_review", "g1", 1), summary("s2", "busy", "g1", 2), summary("s3", "idle", "g1", 3)];
      if (cmd === "attempt_differences") return [{ path: "greet.py", same: true, versions: [{ session: "s1", label: "Codex", kind: "created", diff: "+hi" }] }];
      return null;
    });
    render(<AttemptsView group="g1" onOpenSession={() => {}} />);
    await userEvent.click(await screen.findByTestId("tab-differences"));
    expect(await screen.findByTestId("differences-left-out")).toHaveTextContent("Not among them: Gemini CLI (still running), model-c (ended with no work to review).");
  });

  it("the Differences tab says which attempts changed a file the same way as another, so two identical ones are seen as one", async () => {
    const state: GroupRanking = {
      ...ranking(),
      places: ["1", "=2", "=2"],
      ranking: [
        { rank: 1, evidence: evidence("s1", "Codex"), above_next: null },
        { rank: 2, evidence: evidence("s2", "model-b"), above_next: null },
        { rank: 2, evidence: evidence("s3", "model-c"), above_next: null },
      ],
    };
    mockIPC((cmd) => {
      if (cmd === "attempt_group") return state;
      if (cmd === "list_sessions") return [summary("s1", "awaiting_review", "g1", 1), summary("s2", "awaiting_review", "g1", 2), summary("s3", "awaiting_review", "g1", 3)];
      if (cmd === "attempt_differences")
        return [
          {
            path: "greet.txt",
            same: false,
            versions: [
              { session: "s1", label: "Codex", kind: "created", diff: "+hello" },
              { session: "s2", label: "model-b", kind: "created", diff: "+hi\n+hi" },
              { session: "s3", label: "model-c", kind: "created", diff: "+hi\n+hi" },
            ],
          },
        ];
      return null;
    });
    render(<AttemptsView group="g1" onOpenSession={() => {}} />);
    await userEvent.click(await screen.findByTestId("tab-differences"));
    const versions = await screen.findAllByTestId("difference-version");
    expect(versions[2]).toHaveTextContent("the same as model-b");
    expect(versions[1]).not.toHaveTextContent("the same as");
    expect(versions[0]).not.toHaveTextContent("the same as");
  });

  it("when an attempt changes after the evaluator compared it, its word goes and so does the sentence that it compared them", async () => {
    const word = { first: "Codex", second: "Claude Code", prefers: "Claude Code", reason: "the second says more", model: "judge-m" };
    let state: GroupRanking = { ...ranking(), ranking: [{ ...ranking().ranking[0], evaluator: word }, ranking().ranking[1]] };
    mockIPC(
      (cmd) => {
        if (cmd === "attempt_group") return state;
        if (cmd === "list_sessions") return [summary("s1", "awaiting_review", "g1", 1), summary("s2", "awaiting_review", "g1", 2)];
        return null;
      },
      { shouldMockEvents: true },
    );
    sessionStorage.setItem("finishline.attempts.compared.g1", "The evaluator (judge-m) compared one pair of neighbours. Its word orders only attempts the rule finds equal.");
    onTestFinished(() => sessionStorage.removeItem("finishline.attempts.compared.g1"));
    render(<AttemptsView group="g1" onOpenSession={() => {}} />);
    expect(await screen.findByTestId("attempts-notice")).toHaveTextContent("compared one pair");
    state = ranking();
    await emit("history-changed", "s2");
    await waitFor(() => expect(screen.getByTestId("attempts-notice")).toHaveTextContent("An attempt changed since the evaluator compared them, so its word on that pair is gone: ask again to compare them as they are now."));
  });

  it("a group with nothing to land says why in its attempts' own terms: one that only answered did not fail", async () => {
    const group = (ends: [string, string]): GroupRanking => ({
      group: "g1",
      task: "translate the readme",
      all_ended: true,
      chosen: null,
      put_away: false,
      places: ["–", "–"],
      ranking: ends.map((end_reason, i) => ({
        rank: i + 1,
        evidence: evidence(`s${i + 1}`, `attempt ${i + 1}`, { end_reason: end_reason as EndReason, review: null, reviewed: false, files: 0, diff_lines: 0 }),
        above_next: null,
      })),
    });
    for (const [ends, said] of [
      [["conversation_unchecked", "conversation_unchecked"], "all ended, and none has work to land: none of them changed a file"],
      [["conversation_unchecked", "failed"], "all ended, and none has work to land: each one failed, was cancelled or changed no file"],
      [["failed", "cancelled"], "all ended, and none has work to land: each one failed or was cancelled"],
    ] as [[string, string], string][]) {
      mockIPC((cmd) => {
        if (cmd === "attempt_group") return group(ends);
        if (cmd === "list_sessions") return [summary("s1", "idle", "g1", 1), summary("s2", "idle", "g1", 2)];
        return null;
      });
      const { unmount } = render(<AttemptsView group="g1" onOpenSession={() => {}} />);
      expect(await screen.findByText(said, { exact: false }), ends.join(", ")).toBeTruthy();
      unmount();
    }
  });

  it("a group whose attempts all ended with nothing to land says so and can be put away whole", async () => {
    let rejected: unknown = null;
    let state: GroupRanking = {
      group: "g1",
      task: "a slow task",
      all_ended: true,
      chosen: null,
      put_away: false,
      places: ["–", "–"],
      ranking: [
        { rank: 1, evidence: evidence("s1", "attempt 1", { end_reason: "cancelled", review: null, reviewed: false, files: 0, diff_lines: 0 }), above_next: null },
        { rank: 2, evidence: evidence("s2", "attempt 2", { end_reason: "cancelled", review: null, reviewed: false, files: 0, diff_lines: 0 }), above_next: null },
      ],
    };
    mockIPC((cmd, args) => {
      if (cmd === "attempt_group") return state;
      if (cmd === "list_sessions") return [summary("s1", "cancelled", "g1", 1), summary("s2", "cancelled", "g1", 2)];
      if (cmd === "reject_attempts") {
        rejected = args;
        state = { ...state, put_away: true };
        return 2;
      }
      return null;
    });
    render(<AttemptsView group="g1" onOpenSession={() => {}} />);
    expect(await screen.findByText(/none has work to land/)).toBeTruthy();
    expect(screen.queryByText(/choose one to land/)).toBeNull();
    expect(screen.queryAllByTestId("attempt-land")).toHaveLength(0);
    expect(screen.getAllByTestId("attempt").map((a) => a.getAttribute("data-rank"))).toEqual(["0", "0"]);
    // Each may have written nothing: its worktree is named as kept, not "what it wrote".
    expect(screen.getAllByTestId("attempt-no-review").map((p) => p.textContent)).toEqual([
      "Ended before a review. Its worktree stays as it left it: open the attempt to go on.",
      "Ended before a review. Its worktree stays as it left it: open the attempt to go on.",
    ]);
    await userEvent.click(screen.getByTestId("attempts-reject-all"));
    await userEvent.click(await screen.findByTestId("attempts-reject-all-confirm"));
    expect(rejected).toMatchObject({ group: "g1" });
    expect(await screen.findByText(/2 attempts were rejected/)).toBeTruthy();
    expect(await screen.findByText(/put away: none landed/)).toBeTruthy();
    expect(screen.queryByTestId("attempts-reject-all")).toBeNull();
    expect(screen.getAllByTestId("attempt-no-review").map((p) => p.textContent)).toEqual(["Ended before a review.", "Ended before a review."]);
  });

  it("rejecting the rest when one attempt was left says its one worktree went", async () => {
    let state: GroupRanking = {
      group: "g1",
      task: "a slow task",
      all_ended: true,
      chosen: null,
      put_away: false,
      places: ["–", "–"],
      ranking: [
        { rank: 1, evidence: evidence("s1", "attempt 1", { end_reason: "cancelled", review: null, reviewed: false, files: 0, diff_lines: 0 }), above_next: null },
        { rank: 2, evidence: evidence("s2", "attempt 2", { end_reason: "cancelled", review: null, reviewed: false, files: 0, diff_lines: 0 }), above_next: null },
      ],
    };
    mockIPC((cmd) => {
      if (cmd === "attempt_group") return state;
      if (cmd === "list_sessions") return [summary("s1", "rejected", "g1", 1), summary("s2", "cancelled", "g1", 2)];
      if (cmd === "reject_attempts") {
        state = { ...state, put_away: true };
        return 1;
      }
      return null;
    });
    render(<AttemptsView group="g1" onOpenSession={() => {}} />);
    await userEvent.click(await screen.findByTestId("attempts-reject-all"));
    await userEvent.click(await screen.findByTestId("attempts-reject-all-confirm"));
    expect(await screen.findByTestId("attempts-notice")).toHaveTextContent("1 attempt was rejected and its worktree removed. Nothing landed.");
  });

  it("Settings → Storage says when the disk used could not be read, with Try again, instead of showing nothing", async () => {
    let broken = true;
    mockIPC((cmd) => {
      if (cmd === "worktree_usage") {
        if (broken) throw { code: "storage", message: "database is locked" };
        return [];
      }
      return null;
    });
    render(<WorktreeStorage />);
    const note = await screen.findByTestId("worktree-usage-error");
    expect(note).toHaveTextContent(/worktrees' disk use could not be read: database is locked/i);
    broken = false;
    await userEvent.click(within(note).getByRole("button", { name: "Try again" }));
    await waitFor(() => expect(screen.queryByTestId("worktree-usage-error")).toBeNull());
  });

  it("a group that cannot be opened says why, with Try again and the way back to History", async () => {
    let broken = true;
    const back: string[] = [];
    mockIPC((cmd) => {
      if (cmd === "attempt_group") {
        if (broken) throw { code: "storage", message: "database is locked" };
        return ranking();
      }
      if (cmd === "list_sessions") return [summary("s1", "awaiting_review", "g1", 1), summary("s2", "awaiting_review", "g1", 2)];
      return null;
    });
    render(<AttemptsView group="g1" onOpenSession={() => {}} onOpenHistory={() => back.push("history")} />);
    const panel = await screen.findByTestId("attempts-error");
    expect(panel).toHaveTextContent(/these attempts could not be opened: database is locked/i);
    await userEvent.click(within(panel).getByRole("button", { name: "Back to History" }));
    expect(back).toEqual(["history"]);
    broken = false;
    await userEvent.click(within(panel).getByRole("button", { name: "Try again" }));
    expect(await screen.findAllByTestId("attempt")).toHaveLength(2);
  });

  it("an attempt's diff that cannot be read says so, not that the attempt changed nothing", async () => {
    mockIPC((cmd) => {
      if (cmd === "attempt_group") return ranking();
      if (cmd === "list_sessions") return [summary("s1", "awaiting_review", "g1", 1), summary("s2", "awaiting_review", "g1", 2)];
      if (cmd === "get_session") throw { code: "storage", message: "database is locked" };
      return null;
    });
    render(<AttemptsView group="g1" onOpenSession={() => {}} />);
    const toggles = await screen.findAllByTestId("attempt-diff-toggle");
    await userEvent.click(toggles[0]);
    expect(await screen.findByTestId("attempt-diff-error")).toHaveTextContent(/the diff could not be read: database is locked/i);
  });

  it("an attempt's diff opens below the cards, under its name, and the cards stay side by side where they were", async () => {
    mockIPC((cmd) => {
      if (cmd === "attempt_group") return ranking();
      if (cmd === "list_sessions") return [summary("s1", "awaiting_review", "g1", 1), summary("s2", "awaiting_review", "g1", 2)];
      if (cmd === "get_session") return { summary: summary("s2", "awaiting_review", "g1", 2), events: [{ type: "review_requested", review_id: "req-s2", files_changed: [{ path: "greet.py", kind: "created", diff: "+def hello():" }] }] };
      return null;
    });
    render(<AttemptsView group="g1" onOpenSession={() => {}} />);
    const user = userEvent.setup();
    const cards = await screen.findAllByTestId("attempt");
    await user.click(within(cards[1]).getByTestId("attempt-diff-toggle"));
    const panel = await screen.findByTestId("attempt-diff-panel");
    expect(panel, "it names the attempt it is the diff of").toHaveTextContent(`${within(cards[1]).getByTestId("attempt-label").textContent}: its diff`);
    expect(cards.some((c) => c.contains(panel)), "not inside a card, which would grow across the row and move the others").toBe(false);
    expect(screen.getByTestId("attempt-list").compareDocumentPosition(panel) & Node.DOCUMENT_POSITION_FOLLOWING, "below the cards").toBeTruthy();
    expect(await within(panel).findByTestId("diff-view", {}, { timeout: 10_000 })).toBeInTheDocument();
    await user.click(within(cards[0]).getByTestId("attempt-diff-toggle"));
    await vi.waitFor(() => expect(screen.getByTestId("attempt-diff-panel")).toHaveTextContent(`${within(cards[0]).getByTestId("attempt-label").textContent}: its diff`));
    expect(screen.getAllByTestId("attempt-diff-panel"), "one diff at a time").toHaveLength(1);
    await user.click(screen.getByTestId("attempt-diff-hide"));
    expect(screen.queryByTestId("attempt-diff-panel")).toBeNull();
    expect(within(cards[0]).getByTestId("attempt-diff-toggle")).toHaveTextContent("Show its diff");
    await vi.waitFor(() => expect(within(cards[0]).getByTestId("attempt-diff-toggle"), "the keys go back to the card whose diff it was").toHaveFocus());
  });

  it("the evaluator compares the attempts on request: progress while it thinks, then its sentence, shown as text", async () => {
    let compared: unknown = null;
    let answer: (r: Compared) => void = () => {};
    const tie = (): GroupRanking => ({
      ...ranking(),
      places: ["=1", "=1"],
      ranking: [
        { rank: 1, evidence: evidence("s1", "Codex"), above_next: null },
        { rank: 2, evidence: evidence("s2", "Claude Code"), above_next: null },
      ],
    });
    mockIPC((cmd, args) => {
      if (cmd === "attempt_group") return tie();
      if (cmd === "list_sessions") return [summary("s1", "awaiting_review", "g1", 1), summary("s2", "awaiting_review", "g1", 2)];
      if (cmd === "compare_attempts") {
        compared = args;
        return new Promise<Compared>((resolve) => (answer = resolve));
      }
      return null;
    });
    render(<AttemptsView group="g1" onOpenSession={() => {}} />);
    await userEvent.click(await screen.findByTestId("attempts-compare"));
    expect(compared).toMatchObject({ group: "g1" });
    const button = screen.getByTestId("attempts-compare");
    expect(button.textContent).toMatch(/Comparing…/);
    expect((button as HTMLButtonElement).disabled).toBe(true);
    expect(screen.getAllByTestId("attempt-land").every((b) => (b as HTMLButtonElement).disabled)).toBe(true);
    answer({
      ...tie(),
      asked: 1,
      model: "judge-m",
      comparison_tokens: 2400,
      places: ["1", "2"],
      ranking: [
        { rank: 1, evidence: evidence("s2", "Claude Code"), above_next: "the rule finds them equal; the evaluator prefers it", evaluator: { first: "Codex", second: "Claude Code", prefers: "Claude Code", reason: "<img src=x onerror=alert(1)> the second keeps the old name working", model: "judge-m" } },
        { rank: 2, evidence: evidence("s1", "Codex"), above_next: null, evaluator: null },
      ],
    });
    const said = await screen.findByTestId("attempt-evaluator");
    expect(said.textContent).toContain("The evaluator, shown Codex first and Claude Code second, prefers Claude Code");
    expect(said.textContent).toContain("<img src=x onerror=alert(1)> the second keeps the old name working");
    expect(said.textContent, "the quoted words end a sentence: the next one does not run on").toMatch(/working”?\.$/);
    expect(said.querySelector("img")).toBeNull();
    expect(screen.getAllByTestId("attempt-label").map((l) => l.textContent)).toEqual(["Claude Code", "Codex"]);
    expect(screen.getByText(/the evaluator prefers it/)).toBeTruthy();
    expect(screen.queryByTestId("attempts-compare"), "each pair has its answer: nothing left to ask").toBeNull();
    expect(screen.getByTestId("ranking-rule").textContent).toContain("The evaluator has compared each attempt with the next.");
    expect(screen.getByTestId("ranking-rule").textContent).toMatch(/compare them took 2,400 tokens so far, not counted as the attempts' own/);
    expect(screen.getByTestId("attempts-notice").textContent).toContain("The evaluator (judge-m) compared one pair of neighbours");
    expect(screen.queryByTestId("attempts-stop-comparing")).toBeNull();
  });

  const tied = (): GroupRanking => ({
    ...ranking(),
    places: ["=1", "=1"],
    ranking: [
      { rank: 1, evidence: evidence("s1", "Codex"), above_next: null },
      { rank: 2, evidence: evidence("s2", "Claude Code"), above_next: null },
    ],
  });

  it("a comparison under way goes on when the person leaves the screen, and shows again when they come back", async () => {
    let asked = 0;
    let answer: (r: Compared) => void = () => {};
    mockIPC((cmd) => {
      if (cmd === "attempt_group") return tied();
      if (cmd === "list_sessions") return [];
      if (cmd === "compare_attempts") {
        asked += 1;
        return new Promise<Compared>((resolve) => (answer = resolve));
      }
      return null;
    });
    const first = render(<AttemptsView group="g1" onOpenSession={() => {}} />);
    await userEvent.click(await screen.findByTestId("attempts-compare"));
    first.unmount();
    render(<AttemptsView group="g1" onOpenSession={() => {}} />);
    const button = await screen.findByTestId("attempts-compare");
    expect(button.textContent).toMatch(/Comparing…/);
    expect((button as HTMLButtonElement).disabled).toBe(true);
    expect(screen.getAllByTestId("attempt-land").every((b) => (b as HTMLButtonElement).disabled)).toBe(true);
    expect(screen.getByTestId("attempts-stop-comparing")).toBeTruthy();
    expect(asked).toBe(1);
    answer({ ...tied(), asked: 1, model: "judge-m", ranking: [{ ...tied().ranking[0], evaluator: { first: "Codex", second: "Claude Code", prefers: null, reason: "both write the same function", disagreed: true, model: "judge-m" } }, tied().ranking[1]] });
    const disagreed = await screen.findByTestId("attempt-evaluator");
    expect(disagreed.textContent).toContain("gave two answers that disagree");
    expect(disagreed.querySelector("q"), "Finishline's own words about the answers are not quoted as the evaluator's").toBeNull();
    expect(screen.queryByTestId("attempts-compare")).toBeNull();
    expect(asked).toBe(1);
  });

  it("a comparison that ends while the person is on another screen says what it came to when they come back", async () => {
    let answer: (r: Compared) => void = () => {};
    mockIPC((cmd) => {
      if (cmd === "attempt_group") return tied();
      if (cmd === "list_sessions") return [];
      if (cmd === "compare_attempts") return new Promise<Compared>((resolve) => (answer = resolve));
      return null;
    });
    const first = render(<AttemptsView group="g-away" onOpenSession={() => {}} />);
    await userEvent.click(await screen.findByTestId("attempts-compare"));
    first.unmount();
    answer({ ...tied(), asked: 1, model: "judge-m", comparison_tokens: 900 });
    await new Promise((r) => setTimeout(r, 0));
    render(<AttemptsView group="g-away" onOpenSession={() => {}} />);
    expect((await screen.findByTestId("attempts-notice")).textContent).toContain("The evaluator (judge-m) compared one pair of neighbours");
  });

  it("a comparison that fails while the person is on another screen says why when they come back", async () => {
    let fail: (e: unknown) => void = () => {};
    mockIPC((cmd) => {
      if (cmd === "attempt_group") return tied();
      if (cmd === "list_sessions") return [];
      if (cmd === "compare_attempts") return new Promise<Compared>((_, reject) => (fail = reject));
      return null;
    });
    const first = render(<AttemptsView group="g-away-failed" onOpenSession={() => {}} />);
    await userEvent.click(await screen.findByTestId("attempts-compare"));
    first.unmount();
    fail({ code: "provider_unreachable", message: "Nothing answered at http://127.0.0.1:9/v1" });
    await new Promise((r) => setTimeout(r, 0));
    render(<AttemptsView group="g-away-failed" onOpenSession={() => {}} />);
    expect((await screen.findByRole("alert")).textContent).toBe("The attempts were not compared: Nothing answered at http://127.0.0.1:9/v1");
  });

  it("Stop comparing stops the evaluator and says how many pairs it answered before", async () => {
    let stopped: unknown = null;
    let answer: (r: Compared) => void = () => {};
    mockIPC((cmd, args) => {
      if (cmd === "attempt_group") return tied();
      if (cmd === "list_sessions") return [];
      if (cmd === "compare_attempts") return new Promise<Compared>((resolve) => (answer = resolve));
      if (cmd === "stop_comparing") {
        stopped = args;
        answer({ ...tied(), asked: 0, model: "judge-m" });
        return true;
      }
      return null;
    });
    render(<AttemptsView group="g1" onOpenSession={() => {}} />);
    await userEvent.click(await screen.findByTestId("attempts-compare"));
    await userEvent.click(await screen.findByTestId("attempts-stop-comparing"));
    expect(stopped).toMatchObject({ group: "g1" });
    expect((await screen.findByTestId("attempts-notice")).textContent).toContain("Stopped before the evaluator answered. Asking again asks about every pair.");
    expect(screen.queryByTestId("attempts-stop-comparing")).toBeNull();
    expect(screen.getByTestId("attempts-compare").textContent).toMatch(/Ask the evaluator to compare/);
  });

  it("says where the rule decides against the evaluator's preference, whenever the screen is opened", async () => {
    mockIPC((cmd) => {
      if (cmd === "attempt_group")
        return {
          ...tied(),
          places: ["1", "2"],
          ranking: [
            { rank: 1, evidence: evidence("s1", "Codex", { diff_lines: 1 }), above_next: "a smaller diff (1 line against 2)", evaluator: { first: "Codex", second: "Claude Code", prefers: "Claude Code", reason: "the second says more" } },
            tied().ranking[1],
          ],
        };
      if (cmd === "list_sessions") return [];
      return null;
    });
    render(<AttemptsView group="g1" onOpenSession={() => {}} />);
    const overruled = await screen.findByTestId("attempt-evaluator-overruled");
    expect(overruled.textContent).toContain("The rule decides here, on a smaller diff (1 line against 2): the evaluator's word orders only attempts the rule finds equal.");
    // The one ranked first is the one the evaluator liked less: said at the top, beside the rule,
    // not only in the small words on its card.
    expect(screen.getByTestId("ranking-overruled")).toHaveTextContent("The rule ranks Codex first, on a smaller diff (1 line against 2); the evaluator prefers Claude Code.");
  });

  it("offers to ask the group's judge when the answers are another model's, and not when they are its own", async () => {
    // The judge is the engine's word: the evaluator set in Settings, else the model that judged
    // the attempts when they started, whatever the agent's model in Settings is now.
    let model = "judge-a";
    const word = { first: "Codex", second: "Claude Code", prefers: null, reason: "both write the same function", model: "judge-a" };
    mockIPC((cmd) => {
      if (cmd === "attempt_group") return { ...tied(), ranking: [{ ...tied().ranking[0], evaluator: word }, tied().ranking[1]] };
      if (cmd === "attempt_judge") return model;
      if (cmd === "list_sessions") return [];
      if (cmd === "get_settings") return { settings: { provider: { model: "agent-m" } } };
      return null;
    });
    const first = render(<AttemptsView group="g1" onOpenSession={() => {}} />);
    await screen.findByTestId("attempt-evaluator");
    await waitFor(() => expect(screen.queryByTestId("attempts-compare")).toBeNull());
    expect(screen.getByTestId("ranking-rule").textContent).toContain("The evaluator has compared each attempt with the next.");
    first.unmount();
    model = "judge-b";
    render(<AttemptsView group="g1" onOpenSession={() => {}} />);
    expect((await screen.findByTestId("attempts-compare")).textContent).toMatch(/Ask judge-b too/);
  });

  it("says how many pairs the evaluator answered before it was stopped", async () => {
    let answer: (r: Compared) => void = () => {};
    mockIPC((cmd) => {
      if (cmd === "attempt_group") return tied();
      if (cmd === "list_sessions") return [];
      if (cmd === "compare_attempts") return new Promise<Compared>((resolve) => (answer = resolve));
      if (cmd === "stop_comparing") {
        answer({ ...tied(), asked: 2, model: "judge-m" });
        return true;
      }
      return null;
    });
    render(<AttemptsView group="g1" onOpenSession={() => {}} />);
    await userEvent.click(await screen.findByTestId("attempts-compare"));
    await userEvent.click(await screen.findByTestId("attempts-stop-comparing"));
    expect((await screen.findByTestId("attempts-notice")).textContent).toBe("Stopped. The 2 pairs it answered before are kept; asking again asks about the rest.");
  });

  it("moves between Ranking and Differences with the arrow keys, as tabs do", async () => {
    mockIPC((cmd) => {
      if (cmd === "attempt_group") return tied();
      if (cmd === "list_sessions") return [];
      if (cmd === "attempt_differences") return [];
      return null;
    });
    render(<AttemptsView group="g1" onOpenSession={() => {}} />);
    const ranking = await screen.findByTestId("tab-ranking");
    ranking.focus();
    await userEvent.keyboard("{ArrowRight}");
    expect(screen.getByTestId("tab-differences")).toHaveAttribute("aria-selected", "true");
    expect(document.activeElement).toBe(screen.getByTestId("tab-differences"));
    expect(screen.queryByTestId("attempt-list")).toBeNull();
    await userEvent.keyboard("{Home}");
    expect(screen.getByTestId("tab-ranking")).toHaveAttribute("aria-selected", "true");
    expect(screen.getByTestId("tab-differences")).toHaveAttribute("tabindex", "-1");
  });

  it("offers no comparison when only one attempt still has work waiting, though two were reviewed", async () => {
    mockIPC((cmd) => {
      if (cmd === "attempt_group") return { ...tied(), ranking: [tied().ranking[0], { ...tied().ranking[1], evidence: evidence("s2", "Claude Code", { review: null, reviewed: true }) }] };
      if (cmd === "list_sessions") return [];
      return null;
    });
    render(<AttemptsView group="g1" onOpenSession={() => {}} />);
    await screen.findAllByTestId("attempt-label");
    expect(screen.queryByTestId("attempts-compare")).toBeNull();
    expect(screen.getByTestId("attempts-reject-all")).toBeTruthy();
  });

  it("a comparison that fails says why and keeps the ranking as it was", async () => {
    mockIPC((cmd) => {
      if (cmd === "attempt_group") return ranking();
      if (cmd === "list_sessions") return [];
      if (cmd === "compare_attempts") return Promise.reject({ code: "provider_unreachable", message: "The evaluator could not compare Codex and Finishline's agent (m): the model could not be reached" });
      return null;
    });
    render(<AttemptsView group="g1" onOpenSession={() => {}} />);
    await userEvent.click(await screen.findByTestId("attempts-compare"));
    expect((await screen.findByRole("alert")).textContent).toMatch(/not compared: The evaluator could not compare Codex/);
    expect(screen.getAllByTestId("attempt-label").map((l) => l.textContent)).toEqual(["Codex", "Finishline's agent (m)"]);
    expect((screen.getByTestId("attempts-compare") as HTMLButtonElement).disabled).toBe(false);
  });

  it("an attempt that failed shows why instead of evidence it never gathered, and no rank while others run", async () => {
    mockIPC((cmd) => {
      if (cmd === "attempt_group")
        return {
          group: "g1",
          task: "write greet.py",
          all_ended: false,
          places: ["–", "–"],
          chosen: null,
          put_away: false,
          ranking: [
            { rank: 1, evidence: evidence("s1", "attempt 1", { end_reason: "failed", review: null, reviewed: false, files: 0, diff_lines: 0, error: "the provider said 400: model `b` is not served here" }), above_next: null },
            { rank: 0, evidence: evidence("s2", "attempt 2", { ended: false, review: null, reviewed: false }), above_next: null },
          ],
        };
      if (cmd === "list_sessions") return [summary("s1", "failed", "g1", 1), summary("s2", "busy", "g1", 2)];
      return null;
    });
    render(<AttemptsView group="g1" onOpenSession={() => {}} />);
    const [failed] = await screen.findAllByTestId("attempt");
    expect(within(failed).getByTestId("attempt-no-review")).toHaveTextContent("the provider said 400: model b is not served here");
    expect(within(failed).getByText("b").tagName, "a name in backticks is shown as code, not with its backticks").toBe("CODE");
    expect(within(failed).queryByTestId("attempt-evidence")).toBeNull();
    expect(within(failed).queryByText("1")).toBeNull();
    expect(within(failed).getAllByText("Failed")).toHaveLength(1);
    expect(within((await screen.findAllByTestId("attempt"))[1]).getByTestId("attempt-end")).toHaveTextContent(/working for \d+ s/);
  });

  it("a running attempt's card says what it is doing: its step and its latest tool, live", async () => {
    const deliver: Record<string, (e: unknown) => void> = {};
    const unsubscribed: unknown[] = [];
    let seq = 0;
    const ev = (event: Record<string, unknown>) => ({ ...event, seq: ++seq, session_id: "s", at: "2026-12-02T10:00:00Z" });
    mockIPC((cmd, args) => {
      if (cmd === "attempt_group")
        return {
          group: "g1",
          task: "write greet.py",
          all_ended: false,
          places: ["–", "–"],
          chosen: null,
          put_away: false,
          ranking: [
            { rank: 0, evidence: evidence("s1", "attempt 1", { ended: false, review: null, reviewed: false }), above_next: null },
            { rank: 0, evidence: evidence("s2", "attempt 2", { ended: false, review: null, reviewed: false }), above_next: null },
          ],
        };
      if (cmd === "list_sessions") return [summary("s1", "busy", "g1", 1), summary("s2", "busy", "g1", 2)];
      if (cmd === "subscribe_session") {
        const { sessionId, channel } = args as { sessionId: string; channel: { onmessage: (e: unknown) => void } };
        deliver[sessionId] = (e) => channel.onmessage(e);
        return sessionId === "s1" ? 1 : 2;
      }
      if (cmd === "unsubscribe_session") unsubscribed.push((args as { subscription: number }).subscription);
      return null;
    });
    const view = render(<AttemptsView group="g1" onOpenSession={() => {}} />);
    const cards = await screen.findAllByTestId("attempt");
    await waitFor(() => expect(Object.keys(deliver).sort(), "each running attempt is followed").toEqual(["s1", "s2"]));
    act(() => {
      deliver.s1(ev({ type: "step_started", step: 3 }));
      deliver.s1(ev({ type: "tool_call", call_id: "c1", tool: "write_file", input: { path: "greet.py" }, state: "running" }));
      deliver.s2(ev({ type: "step_started", step: 1 }));
      deliver.s2(ev({ type: "activity", phase: "thinking", detail: "" }));
    });
    await waitFor(() => expect(within(cards[0]).getByTestId("attempt-end")).toHaveTextContent(/^Step 3 · Writing greet\.py… · working for \d+ s/));
    expect(within(cards[1]).getByTestId("attempt-end")).toHaveTextContent(/^Step 1 · Thinking · working for \d+ s/);
    view.unmount();
    await waitFor(() => expect(unsubscribed.sort(), "followed no longer once the screen closes").toEqual([1, 2]));
  });

  it("an attempt waiting for a free place says so, not that it is working, and the group counts it as waiting", async () => {
    const deliver: Record<string, (e: unknown) => void> = {};
    let seq = 0;
    const ev = (event: Record<string, unknown>) => ({ ...event, seq: ++seq, session_id: "s", at: "2026-12-02T10:00:00Z" });
    mockIPC((cmd, args) => {
      if (cmd === "attempt_group")
        return {
          group: "g1",
          task: "write greet.py",
          all_ended: false,
          places: ["–", "–"],
          chosen: null,
          put_away: false,
          ranking: [
            { rank: 0, evidence: evidence("s1", "attempt 1", { ended: false, review: null, reviewed: false }), above_next: null },
            { rank: 0, evidence: evidence("s2", "attempt 2", { ended: false, review: null, reviewed: false }), above_next: null },
          ],
        };
      if (cmd === "list_sessions") return [summary("s1", "busy", "g1", 1), summary("s2", "queued", "g1", 2)];
      if (cmd === "subscribe_session") {
        const { sessionId, channel } = args as { sessionId: string; channel: { onmessage: (e: unknown) => void } };
        deliver[sessionId] = (e) => channel.onmessage(e);
        return sessionId === "s1" ? 1 : 2;
      }
      return null;
    });
    render(<AttemptsView group="g1" onOpenSession={() => {}} />);
    const cards = await screen.findAllByTestId("attempt");
    await waitFor(() => expect(Object.keys(deliver).sort()).toEqual(["s1", "s2"]));
    act(() => deliver.s2(ev({ type: "activity", phase: "waiting", detail: "a free place: 1 task is running (the limit is 1; Settings → Tasks)" })));
    await waitFor(() => expect(within(cards[1]).getByTestId("attempt-end")).toHaveTextContent(/^Waiting for a free place: 1 task is running \(the limit is 1; Settings → Tasks\)$/));
    expect(screen.getByText(/attempts side by side/)).toHaveTextContent("2 attempts side by side · none has ended: 1 running, 1 waiting for a free place; they are ranked once they end");
  });

  it("when one attempt ends, the others are followed on, not subscribed afresh from their start", async () => {
    const subscribed: string[] = [];
    const unsubscribed: number[] = [];
    mockIPC((cmd, args) => {
      if (cmd === "subscribe_session") {
        const id = (args as { sessionId: string }).sessionId;
        subscribed.push(id);
        return id === "s1" ? 1 : 2;
      }
      if (cmd === "unsubscribe_session") unsubscribed.push((args as { subscription: number }).subscription);
      return null;
    });
    const hook = renderHook(({ ids }) => useAttemptProgress(ids), { initialProps: { ids: ["s1", "s2"] } });
    await waitFor(() => expect(subscribed.sort()).toEqual(["s1", "s2"]));
    hook.rerender({ ids: ["s2"] });
    await waitFor(() => expect(unsubscribed, "the one that ended is let go").toEqual([1]));
    expect(subscribed, "the other is not subscribed again").toHaveLength(2);
    hook.unmount();
    await waitFor(() => expect(unsubscribed.sort()).toEqual([1, 2]));
  });

  it("Cancel the running attempts asks first (Esc keeps them) and cancels once however often pressed", async () => {
    const cancels: unknown[] = [];
    let answer: (n: number) => void = () => {};
    mockIPC((cmd) => {
      if (cmd === "attempt_group")
        return {
          group: "g1",
          task: "write greet.py",
          all_ended: false,
          places: ["–", "–"],
          chosen: null,
          put_away: false,
          ranking: [
            { rank: 0, evidence: evidence("s1", "attempt 1", { ended: false, review: null, reviewed: false }), above_next: null },
            { rank: 0, evidence: evidence("s2", "attempt 2", { ended: false, review: null, reviewed: false }), above_next: null },
          ],
        };
      if (cmd === "list_sessions") return [summary("s1", "busy", "g1", 1), summary("s2", "busy", "g1", 2)];
      if (cmd === "cancel_attempts") {
        cancels.push(cmd);
        return new Promise<number>((done) => (answer = done));
      }
      return null;
    });
    render(<AttemptsView group="g1" onOpenSession={() => {}} />);
    const user = userEvent.setup();
    await user.click(await screen.findByTestId("attempts-cancel"));
    expect(await screen.findByTestId("attempts-cancel-dialog")).toHaveTextContent("2 attempts");
    await user.keyboard("{Escape}");
    expect(screen.queryByTestId("attempts-cancel-dialog")).toBeNull();
    expect(cancels, "Esc keeps them running").toHaveLength(0);
    // Esc on the page, with nothing open to close, asks as it does of a single running task.
    await user.keyboard("{Escape}");
    expect(await screen.findByTestId("attempts-cancel-dialog"), "Esc asks whether to cancel them").toHaveTextContent("2 attempts");
    await user.keyboard("{Escape}");
    expect(screen.queryByTestId("attempts-cancel-dialog"), "and Esc again keeps them").toBeNull();
    expect(cancels).toHaveLength(0);
    await user.click(screen.getByTestId("attempts-cancel"));
    await user.click(await screen.findByTestId("attempts-cancel-confirm"));
    expect(screen.getByTestId("attempts-cancel"), "cancelling, once").toBeDisabled();
    fireEvent.click(screen.getByTestId("attempts-cancel"));
    answer(2);
    expect(await screen.findByText("2 attempts were cancelled.")).toBeTruthy();
    expect(cancels).toHaveLength(1);
  });

  it("once the running attempts are cancelled and their button goes, the focus is on what was said, not lost to the page", async () => {
    let cancelled = false;
    mockIPC((cmd) => {
      if (cmd === "attempt_group")
        return {
          ...ranking(),
          all_ended: cancelled,
          places: ["–", "–"],
          ranking: [1, 2].map((n) => ({
            rank: 0,
            evidence: evidence(`s${n}`, `attempt ${n}`, cancelled ? { end_reason: "cancelled", review: null, reviewed: false } : { ended: false, review: null, reviewed: false }),
            above_next: null,
          })),
        };
      if (cmd === "list_sessions") return [summary("s1", cancelled ? "cancelled" : "busy", "g1", 1), summary("s2", cancelled ? "cancelled" : "busy", "g1", 2)];
      if (cmd === "cancel_attempts") {
        cancelled = true;
        return 2;
      }
      return null;
    });
    render(<AttemptsView group="g1" onOpenSession={() => {}} />);
    const user = userEvent.setup();
    await user.click(await screen.findByTestId("attempts-cancel"));
    await user.click(await screen.findByTestId("attempts-cancel-confirm"));
    expect(await screen.findByText("2 attempts were cancelled.")).toBeTruthy();
    await waitFor(() => expect(screen.queryByTestId("attempts-cancel")).toBeNull(), { timeout: 5000 });
    await waitFor(() => expect(screen.getByTestId("attempts-notice")).toHaveFocus());
  });

  /** A group of two whose first attempt (Claude Code) the person rejected in its own review; the
   * other (Codex) waits for review. Its Attempts screen, rendered. */
  const oneRejectedAlready = () => {
    const state: GroupRanking = {
      ...ranking(),
      places: ["1", "–"],
      ranking: [
        { rank: 1, evidence: evidence("s2", "Codex"), above_next: null },
        { rank: 0, evidence: evidence("s1", "Claude Code", { review: null, refused: true }), above_next: null },
      ],
    };
    mockIPC((cmd) => {
      if (cmd === "attempt_group") return state;
      if (cmd === "list_sessions") return [{ ...summary("s1", "rejected", "g1", 1), decision: "reject" as const }, summary("s2", "awaiting_review", "g1", 2)];
      return null;
    });
    render(<AttemptsView group="g1" onOpenSession={() => {}} />);
  };

  it("an attempt the person rejected in its own review has no place in the ranking, and the one left is not level with it", async () => {
    oneRejectedAlready();
    const cards = await screen.findAllByTestId("attempt");
    await waitFor(() => expect(within(cards[0]).getByTestId("attempt-rank")).toHaveTextContent(/^1st$/));
    expect(within(cards[0]).queryByTestId("attempt-level"), "nothing is level with it: the other is out of the choice").toBeNull();
    expect(within(cards[1]).getByTestId("attempt-rank")).toHaveTextContent("–");
    expect(within(cards[1]).getByTestId("attempt-rank")).toHaveAccessibleName("Rejected by you: out of the choice");
    expect(within(cards[1]).getByTestId("attempt-status")).toHaveTextContent("Rejected");
  });

  it("with one attempt rejected already, putting the group away names the ones left, not every attempt", async () => {
    oneRejectedAlready();
    const user = userEvent.setup();
    const button = await screen.findByTestId("attempts-reject-all");
    expect(button).toHaveTextContent(/^Reject the other attempt$/);
    await user.click(button);
    const dialog = await screen.findByTestId("attempts-reject-all-dialog");
    expect(dialog).toHaveTextContent("Reject the other attempt?");
    expect(dialog).toHaveTextContent("Codex does not land either; you rejected Claude Code already.");
    expect(screen.getByTestId("attempts-reject-all-confirm")).toHaveTextContent(/^Reject it$/);
  });

  it("landing one after the person rejected the other says nothing more is rejected, before and after", async () => {
    let state: GroupRanking = { ...ranking(), base_branch: "main" };
    mockIPC((cmd) => {
      if (cmd === "attempt_group") return state;
      if (cmd === "get_settings") return { settings: { provider: { model: "m" }, tasks: { landing: "merge" } } };
      // The person rejected s1 in its own review already.
      if (cmd === "list_sessions") return [{ ...summary("s1", "rejected", "g1", 1), decision: "reject" as const }, summary("s2", state.chosen ? "completed" : "awaiting_review", "g1", 2)];
      if (cmd === "choose_attempt") {
        state = { ...state, chosen: "s2" };
        return { outcome: "decided", status: "completed", revert: null, landed: { mode: "merge", target_branch: "main", commit: "abcdef1234", branch_kept: null, files: ["greet.py"] } };
      }
      return null;
    });
    render(<AttemptsView group="g1" onOpenSession={() => {}} />);
    const user = userEvent.setup();
    await user.click(within((await screen.findAllByTestId("attempt"))[0]).getByTestId("attempt-land"));
    expect(await screen.findByTestId("attempt-land-dialog"), "no other attempt is left to reject").not.toHaveTextContent(/other|rejected/);
    await user.click(screen.getByTestId("attempt-land-confirm"));
    const said = await screen.findByTestId("attempts-notice");
    expect(said).toHaveTextContent("Codex chosen. Landed on main as abcdef1 (1 file).");
    expect(said, "the person rejected it before; the landing did not").not.toHaveTextContent("rejected");
    await waitFor(() => expect(screen.getAllByTestId("attempt-status").map((b) => b.textContent), "refused in its own review, not set aside").toEqual(["Completed", "Rejected"]));
  });

  it("one landed after the person's branch moved on says it was rebased first, and what ran again on the result", async () => {
    let state: GroupRanking = { ...ranking(), base_branch: "main" };
    mockIPC((cmd) => {
      if (cmd === "attempt_group") return state;
      if (cmd === "get_settings") return { settings: { provider: { model: "m" }, tasks: { landing: "squash" } } };
      if (cmd === "list_sessions") return [summary("s1", state.chosen ? "rejected" : "awaiting_review", "g1", 1), summary("s2", state.chosen ? "completed" : "awaiting_review", "g1", 2)];
      if (cmd === "choose_attempt") {
        state = { ...state, chosen: "s2" };
        return { outcome: "decided", status: "completed", revert: null, landed: { mode: "squash", target_branch: "main", commit: "abcdef1234", branch_kept: null, files: ["greet.py"], rebased: { checks_run: 0 } } };
      }
      return null;
    });
    render(<AttemptsView group="g1" onOpenSession={() => {}} />);
    const user = userEvent.setup();
    await user.click(within((await screen.findAllByTestId("attempt"))[0]).getByTestId("attempt-land"));
    await user.click(await screen.findByTestId("attempt-land-confirm"));
    expect(await screen.findByTestId("attempts-notice")).toHaveTextContent(
      "Codex chosen. Landed on main as abcdef1 (1 file). main had moved on since the task started: the task was rebased onto it first, and no check command is set for this workspace, so nothing was run again on the result.",
    );
  });

  it("shows each attempt's evidence and why it ranks where it does, and lands the chosen one", async () => {
    let chosen: unknown = null;
    let state: GroupRanking = { ...ranking(), base_branch: "main" };
    let statuses: [SessionSummary["status"], SessionSummary["status"]] = ["awaiting_review", "awaiting_review"];
    mockIPC((cmd, args) => {
      if (cmd === "attempt_group") return state;
      if (cmd === "get_settings") return { settings: { provider: { model: "m" }, tasks: { landing: "merge" } } };
      // Once s2 is chosen, s1 is set aside for it.
      if (cmd === "list_sessions") return [{ ...summary("s1", statuses[0], "g1", 1), occasion: statuses[0] === "rejected" ? ("another_attempt_chosen" as const) : null }, summary("s2", statuses[1], "g1", 2)];
      if (cmd === "choose_attempt") {
        chosen = args;
        state = { ...state, chosen: "s2" };
        statuses = ["rejected", "completed"];
        return { outcome: "decided", status: "completed", revert: null, landed: { mode: "merge", target_branch: "main", commit: "abcdef1234", branch_kept: null, files: ["greet.py"] } };
      }
      if (cmd === "attempt_differences")
        return [{ path: "greet.py", same: false, versions: [{ session: "s2", label: "Codex", kind: "created", diff: "diff --git a/greet.py b/greet.py\n--- /dev/null\n+++ b/greet.py\n@@ -0,0 +1,2 @@\n+def hello():\n+    return 'hello'" }, { session: "s1", label: "Finishline's agent (m)", kind: "created", diff: "+def hello():\n+    return 'bye'" }] }];
      return null;
    });
    render(<AttemptsView group="g1" onOpenSession={() => {}} />);
    const items = await screen.findAllByTestId("attempt");
    expect(within(items[0]).getByTestId("attempt-label")).toHaveTextContent("Codex");
    expect(within(items[0]).getByTestId("attempt-rank"), "a rank reads as a place, not as an attempt's number").toHaveTextContent("1st");
    expect(within(items[1]).getByTestId("attempt-rank")).toHaveTextContent("2nd");
    expect(within(items[1]).getByTestId("attempt-rank")).toHaveAccessibleName("Ranked 2nd");
    expect(within(items[0]).getByTestId("attempt-reason")).toHaveTextContent("Above the next: verified done");
    expect(within(items[1]).getByTestId("attempt-evidence")).toHaveTextContent("1 finding");
    expect(within(items[1]).getByTestId("attempt-checks")).toHaveTextContent("0/1 pass");
    expect(within(items[1]).getByTestId("attempt-evidence")).toHaveTextContent("Left to donot judged");
    const user = userEvent.setup();
    await user.click(screen.getByTestId("tab-differences"));
    const diff = await screen.findByTestId("difference");
    expect(diff).toHaveAttribute("data-same", "no");
    expect(within(diff).getAllByTestId("difference-version")[1]).toHaveTextContent("return 'bye'");
    expect(within(diff).getAllByTestId("difference-version")[0]).not.toHaveTextContent("diff --git");
    expect(within(diff).getAllByTestId("difference-version")[0]).toHaveTextContent("@@ -0,0 +1,2 @@");
    await user.click(screen.getByTestId("tab-ranking"));
    await user.click(within((await screen.findAllByTestId("attempt"))[0]).getByTestId("attempt-land"));
    const asked = await screen.findByTestId("attempt-land-dialog");
    expect(asked).toHaveTextContent("Land Codex?");
    expect(asked, "it says where and how, as Settings → Tasks chose").toHaveTextContent("It lands on main with its commits (a merge).");
    expect(asked).toHaveTextContent("The other attempt is rejected and its worktree removed, with whatever it wrote there.");
    expect(chosen, "nothing lands before the person confirms").toBeNull();
    expect(screen.getByTestId("attempt-land-keep"), "Enter keeps the other attempts").toHaveFocus();
    await user.keyboard("{Escape}");
    expect(screen.queryByTestId("attempt-land-dialog")).toBeNull();
    expect(chosen).toBeNull();
    expect(document.activeElement, "the focus goes back to the button that asked").toBe(within((await screen.findAllByTestId("attempt"))[0]).getByTestId("attempt-land"));
    expect(asked, "the first is not told it is below anyone").not.toHaveTextContent("ranked first");
    await user.click(within((await screen.findAllByTestId("attempt"))[1]).getByTestId("attempt-land"));
    expect(await screen.findByTestId("attempt-land-dialog"), "landing one placed lower says so first").toHaveTextContent("It is ranked 2nd: Codex is ranked first.");
    {
      // One level with another below the first says so, as its card's "=2nd" does.
      const three: GroupRanking = { ...ranking(), places: ["1", "=2", "=2"], ranking: [ranking().ranking[0], { ...ranking().ranking[1] }, { ...ranking().ranking[1], evidence: { ...ranking().ranking[1].evidence, session: "s3", label: "fake-large" } }] };
      expect(belowFirst(three, placesOf(three), three.ranking[1])).toBe(`It is ranked 2nd, level with fake-large: ${three.ranking[0].evidence.label} is ranked first.`);
    }
    await user.keyboard("{Escape}");
    await user.click(within((await screen.findAllByTestId("attempt"))[0]).getByTestId("attempt-land"));
    await user.click(await screen.findByTestId("attempt-land-confirm"));
    expect(await screen.findByTestId("attempts-notice")).toHaveTextContent("Codex chosen. Landed on main as abcdef1 (1 file). The other attempt was rejected and its worktree removed.");
    expect(chosen, "landed the way the dialog said").toMatchObject({ group: "g1", sessionId: "s2", landing: "merge" });
    await waitFor(() => expect(screen.getAllByTestId("attempt-status").map((b) => b.textContent), "the one set aside was not refused by the person").toEqual(["Completed", "Not chosen"]));
  });

  it("places attempts as the engine does, which the terminal prints too: two it finds level share the first place", async () => {
    // The engine's word on places is the one shown, whatever the window would make of the rest.
    mockIPC((cmd) => (cmd === "attempt_group" ? { ...ranking(), places: ["=1", "=1"] } : cmd === "list_sessions" ? [] : null));
    render(<AttemptsView group="g1" onOpenSession={() => {}} />);
    await waitFor(() => expect(screen.getAllByTestId("attempt-rank").map((r) => r.textContent)).toEqual(["=1st", "=1st"]));
    expect(screen.getAllByTestId("attempt-rank")[1]).toHaveAccessibleName("Ranked 1st, level with another");
  });

  it("an attempt that ended before a review and went with the choice reads Discarded, as the sidebar names it, not Rejected", async () => {
    const state: GroupRanking = {
      ...ranking(),
      chosen: "s2",
      places: ["1", "–"],
      ranking: [
        { rank: 1, evidence: evidence("s2", "Codex"), above_next: null },
        { rank: 0, evidence: evidence("s1", "Claude Code", { review: null, reviewed: false, end_reason: "cancelled" }), above_next: null },
      ],
    };
    // No review refused s1: it was put away when Codex was chosen, its worktree with it.
    const sessions = [summary("s1", "rejected", "g1", 1), { ...summary("s2", "completed", "g1", 2), attempt: { group: "g1", number: 2, of: 2, label: "Codex", chosen: true } }];
    mockIPC((cmd) => {
      if (cmd === "attempt_group") return state;
      if (cmd === "list_sessions") return sessions;
      return null;
    });
    render(<AttemptsView group="g1" onOpenSession={() => {}} />);
    await waitFor(() => expect(screen.getAllByTestId("attempt-status").map((b) => b.textContent)).toEqual(["Completed", "Discarded"]));
    expect(screen.getAllByTestId("attempt-status")[1]).toHaveAttribute("title", DISCARDED_TITLE);
    expect(listedState(sessions[0], setAside(sessions[0]), true).word, "the sidebar's word for it").toBe("Discarded");
  });
});

/** Two attempts waiting for review in group g1 (`extra` answers what else the view asks);
 * `chosen` is what choose_attempt was sent. */
function twoWaiting(group: GroupRanking, extra: (cmd: string) => unknown) {
  const asked: { chosen: unknown } = { chosen: null };
  mockIPC((cmd, args) => {
    if (cmd === "attempt_group") return group;
    if (cmd === "list_sessions") return [summary("s1", "awaiting_review", "g1", 1), summary("s2", "awaiting_review", "g1", 2)];
    if (cmd === "choose_attempt") {
      asked.chosen = args;
      return { outcome: "decided", status: "completed", revert: null };
    }
    return extra(cmd);
  });
  return asked;
}

describe("the Differences tab", () => {
  it("lands the attempt the person chose while reading the differences, with the same question first", async () => {
    const asked = twoWaiting(ranking(), (cmd) => (cmd === "attempt_differences" ? [] : null));
    render(<AttemptsView group="g1" onOpenSession={() => {}} />);
    const user = userEvent.setup();
    await user.click(await screen.findByTestId("tab-differences"));
    const lands = within(await screen.findByTestId("differences-land")).getAllByTestId("differences-land-one");
    const second = ranking().ranking[1].evidence;
    expect(lands.map((b) => b.textContent?.trim())).toEqual(ranking().ranking.map((r) => `Land ${r.evidence.label}`));
    await user.click(lands[1]);
    expect(await screen.findByTestId("attempt-land-dialog"), "as from its card: the others' fate is said first").toBeInTheDocument();
    await user.click(screen.getByTestId("attempt-land-confirm"));
    await waitFor(() => expect(asked.chosen).toMatchObject({ group: "g1", sessionId: second.session }));
  });
});

describe("attempts started on no branch", () => {
  it("are chosen by keeping the branch, which the dialog says, since nothing can land", async () => {
    const asked = twoWaiting({ ...ranking(), base_branch: null }, (cmd) => (cmd === "get_settings" ? { settings: { provider: { model: "m" }, tasks: { landing: "squash" } } } : null));
    render(<AttemptsView group="g1" onOpenSession={() => {}} />);
    const user = userEvent.setup();
    await user.click(within((await screen.findAllByTestId("attempt"))[0]).getByTestId("attempt-land"));
    expect(await screen.findByTestId("attempt-land-dialog")).toHaveTextContent("Nothing lands yet: its branch is kept for later.");
    await user.click(await screen.findByTestId("attempt-land-confirm"));
    await waitFor(() => expect(asked.chosen).toMatchObject({ group: "g1", landing: "branch" }));
  });
});

describe("equal attempts", () => {
  it("say they are level with the next, instead of a bare 1st and 2nd", async () => {
    const level = ranking();
    level.ranking = [
      { rank: 1, evidence: evidence("s2", "Codex"), above_next: null },
      { rank: 2, evidence: evidence("s1", "Finishline's agent (m)"), above_next: null },
    ];
    level.places = ["=1", "=1"];
    mockIPC((cmd) => (cmd === "attempt_group" ? level : cmd === "list_sessions" ? [summary("s1", "awaiting_review", "g1", 1), summary("s2", "awaiting_review", "g1", 2)] : null));
    render(<AttemptsView group="g1" onOpenSession={() => {}} />);
    const items = await screen.findAllByTestId("attempt");
    expect(within(items[0]).getByTestId("attempt-level")).toHaveTextContent("Level with the next on every rule");
    expect(within(items[1]).queryByTestId("attempt-level"), "the last has no next").toBeNull();
    // Their places say the same: a 1st and a 2nd read as an order the rule did not give.
    expect(items.map((i) => within(i).getByTestId("attempt-rank").textContent)).toEqual(["=1st", "=1st"]);
    expect(within(items[1]).getByTestId("attempt-rank")).toHaveAccessibleName("Ranked 1st, level with another");
    expect(items.filter((i) => within(i).getByTestId("attempt-land").classList.contains("primary")), "neither is put forward over the other").toHaveLength(0);
  });

  it("level in second place, the first stays first alone", async () => {
    const level = ranking();
    level.ranking = [
      { rank: 1, evidence: evidence("s3", "Claude Code"), above_next: "verified done" },
      { rank: 2, evidence: evidence("s2", "Codex"), above_next: null },
      { rank: 3, evidence: evidence("s1", "Finishline's agent (m)"), above_next: null },
    ];
    level.places = ["1", "=2", "=2"];
    mockIPC((cmd) => (cmd === "attempt_group" ? level : cmd === "list_sessions" ? [summary("s1", "awaiting_review", "g1", 1), summary("s2", "awaiting_review", "g1", 2), summary("s3", "awaiting_review", "g1", 3)] : null));
    render(<AttemptsView group="g1" onOpenSession={() => {}} />);
    const items = await screen.findAllByTestId("attempt");
    expect(items.map((i) => within(i).getByTestId("attempt-rank").textContent)).toEqual(["1st", "=2nd", "=2nd"]);
    expect(within(items[0]).getByTestId("attempt-land").classList.contains("primary"), "the first alone is put forward").toBe(true);
  });
});

describe("an attempt's diff", () => {
  it("opened, it is still open when the person comes back from another screen", async () => {
    mockIPC((cmd) => (cmd === "attempt_group" ? ranking() : cmd === "list_sessions" ? [summary("s1", "awaiting_review", "g-kept", 1), summary("s2", "awaiting_review", "g-kept", 2)] : cmd === "get_session" ? { summary: summary("s2", "awaiting_review"), events: [] } : null));
    const first = render(<AttemptsView group="g-kept" onOpenSession={() => {}} />);
    const user = userEvent.setup();
    await user.click(within((await screen.findAllByTestId("attempt"))[0]).getByTestId("attempt-diff-toggle"));
    expect(within(screen.getAllByTestId("attempt")[0]).getByTestId("attempt-diff-toggle")).toHaveTextContent("Hide its diff");
    first.unmount();
    render(<AttemptsView group="g-kept" onOpenSession={() => {}} />);
    expect(within((await screen.findAllByTestId("attempt"))[0]).getByTestId("attempt-diff-toggle"), "as the person left it").toHaveTextContent("Hide its diff");
  });


  it("shown while the person lands that attempt, it does not hang on Loading once the review is decided", async () => {
    let state = ranking();
    mockIPC((cmd) => {
      if (cmd === "attempt_group") return state;
      if (cmd === "list_sessions") return [summary("s1", "awaiting_review", "g1", 1), summary("s2", "awaiting_review", "g1", 2)];
      if (cmd === "get_session")
        return { summary: summary("s2", "awaiting_review", "g1", 2), events: [{ type: "review_requested", review_id: "req-s2", files_changed: [{ path: "greet.py", kind: "created", diff: "+def hello():" }] }] };
      if (cmd === "choose_attempt") {
        // Decided: the ranking no longer names a review to show.
        state = { ...state, chosen: "s2", ranking: state.ranking.map((r) => ({ ...r, evidence: { ...r.evidence, review: null } })) };
        return { outcome: "decided", status: "completed", revert: null };
      }
      return null;
    });
    render(<AttemptsView group="g1" onOpenSession={() => {}} />);
    const user = userEvent.setup();
    await user.click(within((await screen.findAllByTestId("attempt"))[0]).getByTestId("attempt-diff-toggle"));
    expect(await screen.findByTestId("diff-view", {}, { timeout: 10_000 })).toBeInTheDocument();
    await user.click(within((await screen.findAllByTestId("attempt"))[0]).getByTestId("attempt-land"));
    await user.click(await screen.findByTestId("attempt-land-confirm"));
    await screen.findByTestId("attempts-notice");
    await new Promise((r) => setTimeout(r, 300));
    expect(screen.queryByText("Loading the diff…"), "nothing is loading: the decided review's diff is in its session").toBeNull();
    expect(screen.getByTestId("diff-view"), "the diff stays: it is the record of what landed").toBeInTheDocument();
    const cards = await screen.findAllByTestId("attempt");
    expect(
      cards.map((c) => within(c).queryByTestId("attempt-diff-toggle")?.textContent),
      "every attempt's diff can still be read once the group is decided",
    ).toEqual(["Hide its diff", "Show its diff"]);
  });
});

describe("the worktrees in Settings → Storage", () => {
  it("tell the attempts of one task apart by their agent", async () => {
    const row = (session_id: string, attempt: string | null) => ({ session_id, title: "write greet.txt", status: "awaiting_review", folder: `/data/worktrees/${session_id}`, branch: `finishline/${session_id}`, attempt, bytes: 2_000_000, leftover: false });
    mockIPC((cmd) => (cmd === "worktree_usage" ? [row("a1", "Codex"), row("a2", "Claude Code"), row("t1", null)] : null));
    render(<WorktreeStorage />);
    const rows = await screen.findAllByTestId("worktree-row");
    expect(rows.map((r) => r.textContent?.split("finishline/")[0])).toEqual(["write greet.txt · Codex ", "write greet.txt · Claude Code ", "write greet.txt "]);
  });
});
