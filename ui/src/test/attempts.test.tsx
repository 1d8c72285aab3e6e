import { render, screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { mockIPC } from "@tauri-apps/api/mocks";
import { describe, expect, it } from "vitest";
import type { GroupRanking, SessionSummary } from "../ipc";
import { AttemptsView } from "../screens/Attempts";
import { attemptChoices, attemptList, attemptsProblem } from "../components/AttemptsPicker";
import { sidebarEntries, sidebarGroups } from "../sidebar";
import { collapseGroups } from "../screens/History";

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
    { rank: 2, evidence: evidence("s1", "Finishline's agent (m)", { end_reason: "cycles_exhausted", checks_passed: 0, findings: 1 }), above_next: null },
  ],
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

  it("the sidebar lists a group's attempts under one entry, in the section of its most urgent attempt", () => {
    const groups = sidebarGroups([summary("a", "busy", "g1", 1), summary("b", "awaiting_review", "g1", 2), summary("c", "busy")], new Date());
    const e = sidebarEntries(groups);
    expect(e.working).toHaveLength(2);
    const group = e.working.find((x) => x.kind === "group");
    expect(group && group.kind === "group" && group.attempts.map((s) => s.id)).toEqual(["a", "b"]);
    expect(e.waiting).toHaveLength(0);
  });

  it("History shows a group as one entry", () => {
    const rows = collapseGroups([summary("a", "completed", "g1", 1), summary("b", "rejected", "g1", 2), summary("c", "completed")]);
    expect(rows.map((r) => [r.row.id, r.attempts.length])).toEqual([
      ["a", 2],
      ["c", 0],
    ]);
  });

  it("shows each attempt's evidence and why it ranks where it does, and lands the chosen one", async () => {
    let chosen: unknown = null;
    let state = ranking();
    mockIPC((cmd, args) => {
      if (cmd === "attempt_group") return state;
      if (cmd === "list_sessions") return [summary("s1", "awaiting_review", "g1", 1), summary("s2", "awaiting_review", "g1", 2)];
      if (cmd === "choose_attempt") {
        chosen = args;
        state = { ...state, chosen: "s2" };
        return { outcome: "decided", status: "completed", revert: null };
      }
      if (cmd === "attempt_differences")
        return [{ path: "greet.py", same: false, versions: [{ session: "s2", label: "Codex", kind: "created", diff: "+def hello():\n+    return 'hello'" }, { session: "s1", label: "Finishline's agent (m)", kind: "created", diff: "+def hello():\n+    return 'bye'" }] }];
      return null;
    });
    render(<AttemptsView group="g1" onOpenSession={() => {}} />);
    const items = await screen.findAllByTestId("attempt");
    expect(within(items[0]).getByTestId("attempt-label")).toHaveTextContent("Codex");
    expect(within(items[0]).getByTestId("attempt-reason")).toHaveTextContent("Above the next: verified done");
    expect(within(items[1]).getByTestId("attempt-evidence")).toHaveTextContent("1 finding");
    expect(within(items[1]).getByTestId("attempt-checks")).toHaveTextContent("0/1 pass");
    const user = userEvent.setup();
    await user.click(screen.getByTestId("tab-differences"));
    const diff = await screen.findByTestId("difference");
    expect(diff).toHaveAttribute("data-same", "no");
    expect(within(diff).getAllByTestId("difference-version")[1]).toHaveTextContent("return 'bye'");
    await user.click(screen.getByTestId("tab-ranking"));
    await user.click(within((await screen.findAllByTestId("attempt"))[0]).getByTestId("attempt-land"));
    expect(await screen.findByTestId("attempts-notice")).toHaveTextContent("Codex landed. The other attempts were rejected");
    expect(chosen).toMatchObject({ group: "g1", sessionId: "s2" });
  });
});
