// The session window as a person reads it during a long run: the clock counts the run, the
// transcript follows the agent's order, repeated calls fold, and the review reads the agent's
// words when it made no claim.
import { render, screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { mockIPC } from "@tauri-apps/api/mocks";
import { describe, expect, it } from "vitest";
import type { EngineEvent, Envelope } from "../ipc";
import { SessionView } from "../screens/Session";
import { foldRepeats } from "../session/fold";
import { applyAll, emptyModel, saysDone } from "../session/model";

let seq = 0;
const t0 = Date.UTC(2026, 10, 25, 9, 0, 0);
/** An event `secs` seconds into the run. */
const ev = (e: EngineEvent, secs = 0): Envelope => ({ ...e, seq: ++seq, session_id: "s1", at: new Date(t0 + secs * 1000).toISOString() }) as Envelope;

function script(events: Envelope[], calls: Record<string, unknown>[] = []) {
  mockIPC((cmd, args) => {
    calls.push({ cmd, ...(args as object) });
    if (cmd === "subscribe_session") {
      const channel = (args as { channel: { onmessage: (e: Envelope) => void } }).channel;
      setTimeout(() => events.forEach((e) => channel.onmessage(e)), 0);
      return 7;
    }
    if (cmd === "evaluator_trust") return [];
    // The attempts of group g1, by name.
    if (cmd === "list_sessions" && (args as { filter?: { group?: string } }).filter?.group === "g1")
      return ["s0", "s1", "s2"].map((id, i) => ({ id, title: "write hello.txt", attempt: { group: "g1", number: i + 1, of: 3, label: ["Codex", "Claude Code", "Gemini CLI"][i], chosen: false } }));
    if (cmd === "get_settings") return null;
  });
}

const start = () => {
  seq = 0;
  return [
    ev({ type: "session_created", task: "write hello.txt", workspace: "/ws", provider: "openai", model: "m" }),
    ev({ type: "run_started", trigger: "task" }),
    ev({ type: "status_changed", status: "busy" }),
    ev({ type: "message_created", message_id: "u", role: "user", text: "write hello.txt" }),
  ];
};

const review = (secs: number, claim: "none" | "success" = "none") => [
  ev({ type: "review_requested", review_id: "r1", claim, verdict: "done", end_reason: "verified_done", remaining: [], files_changed: [], verification: [] }, secs),
  ev({ type: "run_finished", status: "awaiting_review", claim, verdict: "done", end_reason: "verified_done" }, secs),
  ev({ type: "status_changed", status: "awaiting_review" }, secs),
];

describe("the run's clock", () => {
  it("counts the whole run, not the last step: 0:01 after three minutes was wrong", async () => {
    script([
      ...start(),
      ev({ type: "step_started", step: 1 }, 0),
      ev({ type: "step_finished", step: 1, stop_reason: "tool_use", usage: { input_tokens: 10, output_tokens: 100 } }, 100),
      ev({ type: "activity", phase: "evaluating", detail: "" }, 100),
      ev({ type: "step_started", step: 2 }, 170),
      ev({ type: "step_finished", step: 2, stop_reason: "end_turn", usage: { input_tokens: 10, output_tokens: 5 } }, 171),
      ...review(171),
    ]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    await waitFor(() => expect(screen.getByTestId("run-timing").textContent).toMatch(/^2:51/));
  });

  it("a run over in under a second says so, not 0:00", async () => {
    script([...start(), ev({ type: "step_started", step: 1 }, 0), ev({ type: "step_finished", step: 1, stop_reason: "end_turn", usage: { input_tokens: 10, output_tokens: 5 } }, 0.3), ...review(0.3)]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    await waitFor(() => expect(screen.getByTestId("run-timing").textContent).toMatch(/^under 1 s/));
  });

  it("goes on across the runs of a plan's steps and stops at the end", () => {
    seq = 0;
    const m = applyAll(emptyModel(), [
      ev({ type: "run_started", trigger: "plan_step" }, 0),
      ev({ type: "run_finished", status: "busy", claim: "none", verdict: "done", end_reason: "verified_done" }, 50),
      ev({ type: "run_started", trigger: "plan_step" }, 51),
      ev({ type: "run_finished", status: "awaiting_review", claim: "none", verdict: "done", end_reason: "verified_done" }, 90),
    ]);
    expect(m.runClock).toEqual({ startedAt: t0, finishedAt: t0 + 90_000 });
  });
});

describe("the transcript's order", () => {
  it("puts what the agent says after a tool call below that call's card, as it happened", async () => {
    // OpenCode over ACP: one message for the whole turn, its text before and after the write.
    script([
      ...start(),
      ev({ type: "step_started", step: 1 }),
      ev({ type: "message_created", message_id: "m1", role: "assistant" }),
      ev({ type: "text_delta", message_id: "m1", text: "I'll write the file." }),
      ev({ type: "tool_call", call_id: "c1", tool: "write", input: { filePath: "hello.txt" }, state: "done", output: "Wrote file successfully." }),
      ev({ type: "text_delta", message_id: "m1", text: "Done!" }),
    ]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    await screen.findByText("Done!");
    const timeline = screen.getByTestId("timeline");
    const order = [...timeline.querySelectorAll('[data-testid="agent-text"], [data-testid="tool-card"]')].map((e) => (e.getAttribute("data-testid") === "tool-card" ? "card" : e.textContent));
    expect(order).toEqual(["I'll write the file.", "card", "Done!"]);
  });
});

describe("repeated tool calls", () => {
  it("fold forty identical 'Listed the workspace' cards into one card with a count", async () => {
    const calls: Envelope[] = start();
    for (let i = 0; i < 40; i++) {
      calls.push(ev({ type: "step_started", step: i + 1 }));
      calls.push(ev({ type: "message_created", message_id: `m${i}`, role: "assistant" }));
      calls.push(ev({ type: "tool_call", call_id: `c${i}`, tool: "list_dir", input: { path: "." }, state: "done", output: "a.txt" }));
    }
    script([...calls, ev({ type: "tool_call", call_id: "w", tool: "write_file", input: { path: "a.txt", content: "A" }, state: "done", output: "Created a.txt" })]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const run = await screen.findByTestId("tool-run");
    expect(run).toHaveAttribute("data-count", "40");
    expect(run).toHaveTextContent("×40");
    expect(screen.getAllByTestId("tool-card"), "only the different call keeps a card of its own").toHaveLength(1);
    await userEvent.setup().click(within(run).getByRole("button", { expanded: false }));
    expect(within(run).getAllByTestId("tool-card"), "opened, every call is there").toHaveLength(40);
  });

  it("keep calls that differ in input or outcome apart", () => {
    const tool = (key: string, path: string, output = "ok") => ({ kind: "tool" as const, key, tool: "read_file", input: { path }, state: "done" as const, output });
    const shown = foldRepeats([tool("1", "a"), tool("2", "a"), tool("3", "b"), tool("4", "b", "changed"), tool("5", "b", "changed")]);
    expect(shown.map((s) => (s.kind === "tool_run" ? `${s.items.length}×` : s.key))).toEqual(["2×", "3", "2×"]);
  });
});

describe("the review's claim line", () => {
  it("says the agent said it was done without complete_task when its last words were 'Done!'", async () => {
    script([
      ...start(),
      ev({ type: "step_started", step: 1 }),
      ev({ type: "message_created", message_id: "m1", role: "assistant" }),
      ev({ type: "text_delta", message_id: "m1", text: "I wrote hello.txt.\n\nDone!" }),
      ...review(5),
    ]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    expect(await screen.findByTestId("review-claim")).toHaveTextContent("said it was done in its reply");
  });

  it("says there was no claim when the agent never said it was done", async () => {
    script([...start(), ev({ type: "message_created", message_id: "m1", role: "assistant" }), ev({ type: "text_delta", message_id: "m1", text: "Here is how you could write the file." }), ...review(5)]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    expect(await screen.findByTestId("review-claim")).toHaveTextContent("no explicit claim");
  });

  it("reads done-words, and not their negations", () => {
    for (const yes of ["Done!", "All done.", "The task is complete.", "I have completed the task.", "Wrote it. Everything is done now.", "**Done.**", "Great, the file is done!"]) expect(saysDone(yes), yes).toBe(true);
    for (const no of ["Not done yet.", "I haven't finished.", "Here is what I have done so far: read a.txt.", "Let me know when you're done.", "The task isn't complete.", "", "Almost done."]) expect(saysDone(no), no).toBe(false);
  });
});

describe("Esc closes the innermost box first", () => {
  it("closes the 'What should change?' box, keeping what was typed", async () => {
    script([...start(), ...review(5, "success")]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const user = userEvent.setup();
    await user.click(await screen.findByTestId("request-changes"));
    await user.keyboard("use tabs");
    await user.keyboard("{Escape}");
    await waitFor(() => expect(screen.queryByTestId("feedback-input")).toBeNull());
    await user.click(screen.getByTestId("request-changes"));
    expect(await screen.findByTestId("feedback-input"), "the words are not lost").toHaveValue("use tabs");
  });
});

describe("what the task was started with and what the evaluator said of its attempts", () => {
  it("says which commands beyond the workspace's own check the task, as started from the CLI", async () => {
    script([...start(), ev({ type: "task_verify", commands: ["cargo test", "npm run lint"] })]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const line = await screen.findByTestId("session-verify");
    expect(line.textContent).toContain("also checked by cargo test and 1 more");
    expect(line.getAttribute("title")).toContain("cargo test, npm run lint");
  });

  it("says which tools the task was started allowing without asking, as its follow-ups keep them", async () => {
    script([...start(), ev({ type: "task_allowed", tools: ["run_command"] })]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const line = await screen.findByTestId("session-allowed");
    expect(line.textContent).toContain("allowed run_command without asking");
    expect(line.getAttribute("title")).toContain("its follow-ups keep them");
  });

  it("shows the evaluator's comparison with which attempt it prefers, from this attempt's side", async () => {
    script([
      ...start(),
      ev({ type: "attempt_started", group: "g1", number: 2, of: 3, label: "Claude Code" }),
      ...review(5),
      ev({ type: "attempts_compared", first: "s0", second: "s1", prefers: "s0", reason: "The first adds the test the task asked for.", model: "judge-m", tokens: 40 }, 9),
      ev({ type: "attempts_compared", first: "s1", second: "s2", prefers: null, reason: "Both write the same file.", model: "judge-m", tokens: 30 }, 9),
    ]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    await waitFor(() => expect(screen.getAllByTestId("compared-card")).toHaveLength(2));
    const [other, tie] = screen.getAllByTestId("compared-card");
    await waitFor(() => expect(other.textContent).toContain("comparing this attempt with Codex"));
    expect(tie.textContent).toContain("comparing this attempt with Gemini CLI");
    expect(other.textContent).toContain("prefers the other");
    expect(other.textContent).toContain("The first adds the test the task asked for.");
    expect(other.textContent).toContain("It was shown this attempt second");
    expect(other.textContent).toContain("judge-m");
    expect(tie.textContent).toContain("finds them equally good");
    expect(tie.textContent).toContain("It was shown this attempt first");
    // One sentence in one box of the head's row: as loose text and a <strong>, the flex row set
    // the answer in a column of its own beside a wrapped column of the question.
    const head = other.querySelector(".card-head")!;
    const sentence = within(other as HTMLElement).getByTestId("compared-words");
    expect(sentence.parentElement).toBe(head);
    expect(sentence.textContent).toMatch(/^Evaluator \(judge-m\), comparing this attempt with Codex: prefers the other$/);
    expect([...head.childNodes].filter((n) => n.nodeType === Node.TEXT_NODE && n.textContent!.trim()), "no loose text in the row").toHaveLength(0);
  });

  it("sets each card's head sentence in one box, never loose words beside a <strong> or a <code>", async () => {
    script([
      ...start(),
      ev({ type: "verification", command: "npm test -- --run --reporter=verbose --coverage", exit_code: 1, output_tail: "1 failed", skipped: false, nth: 1, of: 1, persons_own: true }),
      ev({ type: "evaluation", cycle: 1, verdict: "not_done", summary: "b.txt is missing", remaining: ["b.txt"], stuck_reason: null, model: "judge", parse_ok: true, usage: { input_tokens: 1, output_tokens: 1 }, question: "done" }),
      ...review(5),
      ev({ type: "attempts_compared", first: "s0", second: "s1", prefers: "s0", reason: "The first adds the test.", model: "judge-m", tokens: 40 }, 9),
    ]);
    const { container } = render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    await screen.findByTestId("compared-card");
    await screen.findByTestId("verification-card");
    await screen.findAllByTestId("verdict-card");
    for (const head of container.querySelectorAll(".card-head")) {
      const loose = [...head.childNodes].some((n) => n.nodeType === Node.TEXT_NODE && n.textContent!.trim());
      const inline = [...head.children].some((c) => ["STRONG", "CODE", "EM"].includes(c.tagName));
      expect(loose && inline, `one box in the head's flex row: ${head.outerHTML}`).toBe(false);
    }
  });

  it("shows a reason that looks like markup as text", async () => {
    script([...start(), ev({ type: "attempts_compared", first: "s1", second: "s2", prefers: "s1", reason: "<img src=x onerror=alert(1)> is better", model: "m", tokens: 1 })]);
    const { container } = render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const card = await screen.findByTestId("compared-card");
    expect(card.textContent).toContain("<img src=x onerror=alert(1)> is better");
    expect(card.textContent).toContain("prefers this one");
    expect(card.textContent, "without its group's names, the other is not named").toContain("comparing this attempt with another of the task");
    expect(container.querySelector("img")).toBeNull();
  });
});
