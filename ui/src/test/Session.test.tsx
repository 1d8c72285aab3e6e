import { fireEvent, render, screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { mockIPC } from "@tauri-apps/api/mocks";
import { describe, expect, it, vi } from "vitest";
import type { EngineEvent, Envelope, PlanProjection, StepState } from "../ipc";
import { decisionText } from "../components/ReviewPanel";
import { SessionView } from "../screens/Session";
import { spyOnScrollIntoView } from "./fixtures";

let seq = 0;
const ev = (e: EngineEvent): Envelope => ({ ...e, seq: ++seq, session_id: "s1", at: "2026-11-21T00:00:00Z" }) as Envelope;

/** The engine as the session sees it: `events` delivered once subscribed, every command kept in
 * `calls`, `other` answering commands first (a reviewed or cancelled run otherwise goes through).
 * Returns what delivers more events. */
function script(events: Envelope[], calls: Record<string, unknown>[] = [], other: (cmd: string, args: unknown) => unknown = () => undefined) {
  let deliver: (e: Envelope) => void = () => {};
  mockIPC((cmd, args) => {
    calls.push({ cmd, ...(args as object) });
    if (cmd === "subscribe_session") {
      const channel = (args as { channel: { onmessage: (e: Envelope) => void } }).channel;
      deliver = (e) => channel.onmessage(e);
      setTimeout(() => events.forEach(deliver), 0);
      return 7;
    }
    const answered = other(cmd, args);
    if (answered !== undefined) return answered;
    if (cmd === "submit_review") return { outcome: "decided", status: "completed", revert: null };
    if (cmd === "cancel_run") return true;
  });
  return (e: Envelope) => deliver(e);
}

const running = () => {
  seq = 0;
  return [
    ev({ type: "session_created", task: "write a.txt and b.txt", workspace: "/ws", provider: "openai", model: "m" }),
    ev({ type: "run_started", trigger: "task" }),
    ev({ type: "status_changed", status: "busy" }),
    ev({ type: "message_created", message_id: "u", role: "user", text: "write a.txt and b.txt" }),
    ev({ type: "step_started", step: 1 }),
    ev({ type: "activity", phase: "tool", detail: "write_file" }),
    ev({ type: "message_created", message_id: "m1", role: "assistant" }),
    ev({ type: "text_delta", message_id: "m1", text: "Writing **a.txt**" }),
    ev({ type: "tool_call", call_id: "c1", tool: "write_file", input: { path: "a.txt" }, state: "done", output: "Created a.txt" }),
    ev({ type: "continuation", source: "evaluator", attempt: 1, max: 5, remaining: ["write b.txt"], text: "b.txt is still missing" }),
  ];
};

/** A run ending in review `id`, waiting for the person. */
const reviewWaits = (id = "r1") => [
  ev({ type: "review_requested", review_id: id, claim: "success", verdict: "done", end_reason: "verified_done", remaining: [], files_changed: [], verification: [] }),
  ev({ type: "run_finished", status: "awaiting_review", claim: "success", verdict: "done", end_reason: "verified_done" }),
  ev({ type: "status_changed", status: "awaiting_review" }),
];

describe("Session view", () => {
  it("Replay plays the timeline again as it happened, Step goes to the next thing shown, and Esc ends it on the session as it is", async () => {
    seq = 0;
    const t = (ms: number, e: EngineEvent): Envelope => ({ ...e, seq: ++seq, session_id: "s1", at: new Date(Date.UTC(2026, 10, 21) + ms).toISOString() }) as Envelope;
    script([
      t(0, { type: "session_created", task: "write a.txt", workspace: "/ws", provider: "openai", model: "m" }),
      t(10, { type: "run_started", trigger: "task" }),
      t(20, { type: "message_created", message_id: "u", role: "user", text: "write a.txt" }),
      t(30, { type: "message_created", message_id: "m1", role: "assistant" }),
      t(60_000, { type: "text_delta", message_id: "m1", text: "Writing a.txt now" }),
      t(60_010, { type: "tool_call", call_id: "c1", tool: "write_file", input: { path: "a.txt" }, state: "done", output: "Created a.txt" }),
      t(60_020, { type: "run_finished", status: "idle", claim: "none", verdict: null, end_reason: "conversation" } as EngineEvent),
      t(60_030, { type: "status_changed", status: "idle" }),
    ]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    await screen.findByText("Writing a.txt now");
    const user = userEvent.setup();
    await user.click(screen.getByTestId("session-replay"));
    expect(screen.getByTestId("replay-bar")).toBeInTheDocument();
    expect(screen.queryByTestId("send-message"), "the message box waits for the replay's end").toBeNull();
    // Paused at once, then stepped: one thing at a time.
    await user.click(screen.getByTestId("replay-play"));
    expect(screen.queryByText("Writing a.txt now"), "the agent's words come later in the replay").toBeNull();
    // Each step goes to the next thing shown: the streamed words are passed on the way to the tool call.
    const position = () => Number(/Replay: (\d+) of 8/.exec(screen.getByTestId("replay-position").textContent ?? "")?.[1]);
    while (position() < 6) {
      const before = position();
      await user.click(screen.getByTestId("replay-step"));
      expect(position()).toBeGreaterThan(before);
    }
    expect(position(), "the step after the agent's message stops at its tool call, not at its words").toBe(6);
    expect(screen.getByText("Writing a.txt now")).toBeInTheDocument();
    // Played on, the minute the model thought is a moment.
    await user.click(screen.getByTestId("replay-play"));
    await waitFor(() => expect(screen.getByTestId("replay-position")).toHaveTextContent("the end"), { timeout: 3000 });
    expect(screen.getByText("Writing a.txt now")).toBeInTheDocument();
    await user.keyboard("{Escape}");
    expect(screen.queryByTestId("replay-bar")).toBeNull();
    expect(screen.getByTestId("send-message")).toBeInTheDocument();
  });

  it("counts no step before the first: a run (or a plan) just started reads no 'Step 0' or 'Turn 0'", async () => {
    seq = 0;
    script([
      ev({ type: "session_created", task: "write a", workspace: "/ws", provider: "openai", model: "m" }),
      ev({ type: "run_started", trigger: "task" }),
      ev({ type: "status_changed", status: "busy" }),
    ]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const strip = await screen.findByTestId("progress-strip");
    await waitFor(() => expect(screen.getByTestId("status-badge")).toHaveTextContent("Working"));
    expect(strip).not.toHaveTextContent(/(Step|Turn) 0/);
  });

  it("a task's first line cut short in the header is there whole on hover", async () => {
    seq = 0;
    const line = "build the inventory module: inventory.py with an Item class, a test for low stock, and a README section";
    script([ev({ type: "session_created", task: `${line}\nmore details`, workspace: "/ws", provider: "openai", model: "m" })]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    await waitFor(() => expect(screen.getByTestId("session-task-title")).toHaveAttribute("title", line));
  });

  it("shows the person's words with their line breaks, and a pasted log folded until asked for", async () => {
    seq = 0;
    const log = Array.from({ length: 300 }, (_, i) => `line ${i + 1} of the log`).join("\n");
    const task = `fix this:\n${log}`;
    script([
      ev({ type: "session_created", task, workspace: "/ws", provider: "openai", model: "m" }),
      ev({ type: "run_started", trigger: "task" }),
      ev({ type: "message_created", message_id: "u", role: "user", text: task }),
    ]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const bubble = await screen.findByTestId("user-bubble");
    expect(bubble.querySelector(".person-words")?.textContent?.split("\n").slice(0, 2)).toEqual(["fix this:", "line 1 of the log"]);
    expect(bubble).not.toHaveTextContent("line 300 of the log");
    await userEvent.click(screen.getByRole("button", { name: "Show all 301 lines" }));
    expect(bubble).toHaveTextContent("line 300 of the log");
    const less = screen.getAllByRole("button", { name: "Show less" });
    expect(less, "at the top too: the person need not scroll 300 lines down to fold it").toHaveLength(2);
    const into = spyOnScrollIntoView();
    await userEvent.click(less[1]);
    expect(bubble).not.toHaveTextContent("line 300 of the log");
    expect(into.mock.contexts.some((el) => bubble.contains(el as Node)), "folded from the foot, the start of the text is brought into view").toBe(true);
  });

  it("while the provider is retried, says which try of how many and why", async () => {
    seq = 0;
    const events = [
      ev({ type: "session_created", task: "write a", workspace: "/ws", provider: "openai", model: "m" }),
      ev({ type: "run_started", trigger: "task" }),
      ev({ type: "status_changed", status: "retry", attempt: 3, max_retries: 5, next_retry_at: "2026-11-21T00:00:05Z", message: "connection refused" }),
    ];
    const calls: Record<string, unknown>[] = [];
    script(events, calls, (cmd) => (cmd === "retry_now" ? true : undefined));
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    expect(await screen.findByText(/^The request to the model failed/)).toHaveTextContent("The request to the model failed; trying it again (retry 3 of 5): connection refused");
    // Not made to sit out the pause: the next try now.
    await userEvent.setup().click(screen.getByTestId("retry-now"));
    await waitFor(() => expect(calls).toContainEqual(expect.objectContaining({ cmd: "retry_now", sessionId: "s1" })));
  });

  it("tells the person's comments sent with Request changes apart from Finishline sending the agent back to one not addressed", async () => {
    seq = 0;
    script([
      ev({ type: "session_created", task: "write notes.md", workspace: "/ws", provider: "openai", model: "m" }),
      ev({ type: "run_started", trigger: "feedback" }),
      ev({ type: "continuation", source: "review_comments", attempt: 0, max: 0, remaining: [], text: "1. notes.md:1: say pear instead" }),
      ev({ type: "continuation", source: "review_comments", attempt: 1, max: 5, remaining: ["notes.md:1: say pear instead"], text: "notes.md was not changed since the comment" }),
    ]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    await waitFor(() => expect(screen.getAllByTestId("continuation-card")).toHaveLength(2));
    const [sent, again] = screen.getAllByTestId("continuation-card");
    expect(sent).toHaveTextContent("Your comments on the diff");
    expect(sent).toHaveTextContent("Finishline sent your comments on the diff to the agent, with the lines they are on:");
    expect(again, "Finishline's own check, not the person writing again").toHaveTextContent("Your comments, not yet addressed");
    expect(again).toHaveTextContent("Finishline found a comment of yours not addressed yet and sent the agent back to it — not your words:");
  });

  it("a note Finishline adds to the person's follow-up says Finishline told the agent, not that it sent the agent back to work", async () => {
    seq = 0;
    script([
      ev({ type: "session_created", task: "write notes.md", workspace: "/ws", provider: "openai", model: "m" }),
      ev({ type: "run_started", trigger: "message" }),
      ev({ type: "continuation", source: "new_worktree", attempt: 0, max: 0, remaining: [], text: "Your earlier changes in this task were approved and landed on main." }),
      ev({ type: "message_created", message_id: "u2", role: "user", text: "Now add a LICENSE file" }),
      ev({ type: "continuation", source: "resume", attempt: 0, max: 0, remaining: [], text: "Finishline was restarted." }),
    ]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    await waitFor(() => expect(screen.getAllByTestId("continuation-card")).toHaveLength(2));
    for (const card of screen.getAllByTestId("continuation-card")) {
      expect(card).toHaveTextContent("Finishline told the agent — not your words:");
      expect(card).not.toHaveTextContent("sent the agent back to work");
    }
  });

  it("opened from a search hit, the session goes to the message the passage is in and marks it, not to its end", async () => {
    const into = spyOnScrollIntoView();
    seq = 0;
    const head = [ev({ type: "session_created", task: "write notes.md", workspace: "/ws", provider: "openai", model: "m" }), ev({ type: "run_started", trigger: "task" })];
    const answers = Array.from({ length: 30 }, (_, i) => [
      ev({ type: "message_created", message_id: `a${i}`, role: "assistant" }),
      ev({ type: "text_delta", message_id: `a${i}`, text: i === 7 ? "Here the word quetzalcoatl stands, not quetzalcoatls." : `Answer number ${i}.` }),
    ]).flat();
    script([...head, ...answers]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} reveal={{ message: "a7", words: ["Quetzalcoatl"] }} />);
    const found = await waitFor(() => {
      const bubble = screen.getAllByTestId("agent-text").find((b) => b.hasAttribute("data-found"));
      expect(bubble).toBeDefined();
      return bubble!;
    });
    expect(found).toHaveTextContent("Here the word quetzalcoatl stands, not quetzalcoatls.");
    await waitFor(() => expect(into.mock.contexts).toContain(found));
    expect(screen.getAllByTestId("agent-text").filter((b) => b.hasAttribute("data-found")), "only the passage's message is marked").toHaveLength(1);
    expect([...found.querySelectorAll("mark")].map((m) => m.textContent), "the words the search found are marked in it, as in History's passage, whole: not inside a longer word").toEqual(["quetzalcoatl"]);
    expect(screen.getAllByTestId("agent-text").flatMap((b) => [...b.querySelectorAll("mark")]), "and only in it").toHaveLength(1);
  });

  it("opened from a hit in a message that began with a tool call, it marks the part with the words", async () => {
    spyOnScrollIntoView();
    seq = 0;
    const head = [ev({ type: "session_created", task: "write notes.md", workspace: "/ws", provider: "openai", model: "m" }), ev({ type: "run_started", trigger: "task" })];
    script([
      ...head,
      ev({ type: "message_created", message_id: "a1", role: "assistant" }),
      ev({ type: "tool_call", call_id: "c1", tool: "write_file", input: { path: "a.txt" }, state: "done", output: "Created a.txt" }),
      ev({ type: "text_delta", message_id: "a1", text: "Then the word quetzalcoatl." }),
    ]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} reveal={{ message: "a1" }} />);
    await screen.findByText("Then the word quetzalcoatl.");
    await waitFor(() => expect(screen.getByText("Then the word quetzalcoatl.").closest("[data-found]")).not.toBeNull());
    await waitFor(() => expect(document.activeElement, "the marked message has the focus, so a screen reader reads it").toBe(screen.getByText("Then the word quetzalcoatl.").closest("[data-found]")));
  });

  it("opened from a hit in what Finishline sent the agent (the person's comments sent back), it goes to that card and marks it", async () => {
    const into = spyOnScrollIntoView();
    seq = 0;
    const head = [ev({ type: "session_created", task: "write notes.md", workspace: "/ws", provider: "openai", model: "m" }), ev({ type: "run_started", trigger: "task" })];
    const answers = Array.from({ length: 20 }, (_, i) => [ev({ type: "message_created", message_id: `a${i}`, role: "assistant" }), ev({ type: "text_delta", message_id: `a${i}`, text: `Answer number ${i}.` })]).flat();
    script([
      ...head,
      ...answers.slice(0, 10),
      ev({ type: "continuation", source: "review_comments", attempt: 0, max: 0, remaining: [], text: "notes.md:1: say pear instead" }),
      ev({ type: "message_created", message_id: "c1", role: "continuation", source: "review_comments", text: "notes.md:1: say pear instead" }),
      ...answers.slice(10),
    ]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} reveal={{ message: "c1", words: ["pear"] }} />);
    const card = await waitFor(() => {
      const c = screen.getAllByTestId("continuation-card").find((b) => b.hasAttribute("data-found"));
      expect(c, "the card with the words is marked").toBeDefined();
      return c!;
    });
    expect(card).toHaveTextContent("say pear instead");
    await waitFor(() => expect(into.mock.contexts).toContain(card));
    await waitFor(() => expect(document.activeElement, "and has the focus").toBe(card));
  });

  it("does not call a reply an answer when the check of it could not be made", async () => {
    seq = 0;
    script([
      ev({ type: "session_created", task: "write notes.md", workspace: "/ws", provider: "openai", model: "m" }),
      ev({ type: "run_started", trigger: "task" }),
      ev({ type: "message_created", message_id: "a", role: "assistant", text: "Done! I wrote notes.md as asked." }),
      ev({ type: "run_finished", status: "idle", claim: "none", verdict: "unavailable", end_reason: "conversation_unchecked" }),
      ev({ type: "status_changed", status: "idle" }),
    ]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const end = await screen.findByText(/Run ended/);
    expect(end).toHaveTextContent("Run ended: Answered, not checked");
    expect(screen.getByTestId("unchecked-note")).toHaveTextContent("The evaluator gave no usable answer, so whether the agent only talked where it should have acted (or claimed work it did not do) was not checked.");
  });

  it("says who cancelled a run from elsewhere: a terminal asked the window's run to stop", async () => {
    seq = 0;
    script([
      ev({ type: "session_created", task: "think it over", workspace: "/ws", provider: "openai", model: "m" }),
      ev({ type: "run_started", trigger: "task" }),
      ev({ type: "status_changed", status: "busy" }),
      ev({ type: "run_finished", status: "cancelled", claim: "none", verdict: null, end_reason: "cancelled" }),
      ev({ type: "status_changed", status: "cancelled", message: "asked from another terminal or the window" }),
    ]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const end = await screen.findByText(/Run ended/);
    await waitFor(() => expect(end).toHaveTextContent("Run ended: Cancelled — asked from another terminal or the window"));
  });

  it("shows the live timeline: progress, streamed text, tool card and a continuation card that is not the user's", async () => {
    script(running());
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    expect(await screen.findByTestId("continuation-card")).toHaveAttribute("data-source", "evaluator");
    expect(screen.getByTestId("continuation-card")).toHaveTextContent("Evaluator");
    expect(screen.getByTestId("continuation-card")).toHaveTextContent("1 item remaining, continuing (1/5)");
    expect(screen.getByTestId("agent-text").querySelector("strong")?.textContent).toBe("a.txt");
    expect(screen.getByTestId("tool-card")).toHaveAttribute("data-state", "done");
    const userBubbles = screen.getAllByTestId("user-bubble");
    expect(userBubbles.every((b) => !b.textContent?.includes("b.txt is still missing")), "no user bubble holds the continuation").toBe(true);
    expect(screen.getByTestId("progress-strip")).toHaveTextContent("Step 1");
    expect(screen.getByTestId("step-count"), "why the count starts over in the next run").toHaveAttribute("title", expect.stringContaining("Each run"));
    expect(screen.getByTestId("progress-strip")).toHaveTextContent("Running write_file");
    expect(screen.getByTestId("progress-strip")).toHaveTextContent("Finishline sent it back 1 time (up to 5)");
    expect(screen.getByTestId("status-badge")).toHaveTextContent("Working");
  });

  it("Esc asks before it cancels a running session: Esc again keeps it, the confirmation cancels it", async () => {
    const calls: Record<string, unknown>[] = [];
    script(running(), calls);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    await screen.findByTestId("cancel");
    const user = userEvent.setup();
    await user.keyboard("{Escape}");
    expect(await screen.findByTestId("confirm-cancel"), "a run is minutes of work: Esc asks first").toHaveTextContent("Cancel the running task?");
    expect(calls.some((c) => c.cmd === "cancel_run"), "nothing is cancelled before the person confirms").toBe(false);
    await user.keyboard("{Escape}");
    await waitFor(() => expect(screen.queryByTestId("confirm-cancel"), "Esc closes the question, the innermost box").toBeNull());
    expect(calls.some((c) => c.cmd === "cancel_run"), "and keeps the run").toBe(false);
    await user.keyboard("{Escape}");
    await user.click(await screen.findByTestId("confirm-cancel-stop"));
    await waitFor(() => expect(calls.some((c) => c.cmd === "cancel_run")).toBe(true));
  });

  it("Esc while typing an answer clears nothing and cancels nothing: only Esc outside a text field cancels the run", async () => {
    const calls: Record<string, unknown>[] = [];
    script([...running(), ev({ type: "question_asked", request_id: "q1", question: "Which folder?" }), ev({ type: "status_changed", status: "awaiting_approval" })], calls);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const user = userEvent.setup();
    const answer = await screen.findByLabelText("Your answer");
    await user.click(answer);
    await user.keyboard("src{Escape}");
    await new Promise((r) => setTimeout(r, 50));
    expect(calls.some((c) => c.cmd === "cancel_run"), "Esc in a text field belongs to the field, not to the whole run").toBe(false);
    expect(answer).toHaveValue("src");
  });

  it("Enter sends the answer to a question; Shift+Enter does not", async () => {
    const calls: Record<string, unknown>[] = [];
    script([...running(), ev({ type: "question_asked", request_id: "q1", question: "Which folder?" }), ev({ type: "status_changed", status: "awaiting_approval" })], calls);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const user = userEvent.setup();
    await user.click(await screen.findByLabelText("Your answer"));
    await user.keyboard("src{Shift>}{Enter}{/Shift}");
    expect(calls.some((c) => c.cmd === "answer_question"), "Shift+Enter is not a send").toBe(false);
    await user.keyboard("{Enter}");
    await waitFor(() => expect(calls.find((c) => c.cmd === "answer_question"), "Enter sends, as in every chat box").toMatchObject({ requestId: "q1", answer: "src" }));
  });

  it("numbers each verify command within its cycle, says whose it is, and the review labels the round", async () => {
    script([
      ...running(),
      ev({ type: "verification", command: "npm test", exit_code: 0, output_tail: "ok", skipped: false, nth: 1, of: 2, persons_own: true }),
      ev({ type: "verification", command: "npm run lint", exit_code: 0, output_tail: "clean", skipped: false, nth: 2, of: 2, persons_own: true }),
      ev({ type: "review_requested", review_id: "r1", claim: "success", verdict: "done", end_reason: "verified_done", remaining: [], files_changed: [], verification: ["`npm test`: exit 0\nok", "`npm run lint`: exit 0\nclean"] }),
      ev({ type: "run_finished", status: "awaiting_review", claim: "success", verdict: "done", end_reason: "verified_done" }),
      ev({ type: "status_changed", status: "awaiting_review" }),
    ]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const cards = await screen.findAllByTestId("verification-card");
    expect(cards[0]).toHaveTextContent("Verification 1 of 2: npm test exit 0");
    expect(cards[1]).toHaveTextContent("Verification 2 of 2: npm run lint exit 0");
    expect(cards[0], "the person's own command is not presented as the agent's").toHaveTextContent("your verify command");
    const round = screen.getAllByTestId("review-verification");
    expect(round.map((r) => r.textContent)).toEqual(["Verification 1 of 2`npm test`: exit 0\nok", "Verification 2 of 2`npm run lint`: exit 0\nclean"]);
  });

  it("an external agent that has gone quiet is said to, in the strip, mid-step", async () => {
    script([
      ...running(),
      ev({ type: "step_started", step: 2 }),
      ev({ type: "activity", phase: "waiting", detail: "Claude Code, which has said nothing for 45 s: it may be waiting on its model server (a slow answer, or retrying one that fails); Stop ends the turn" }),
    ]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    await waitFor(() => expect(screen.getByTestId("activity")).toHaveTextContent("Waiting for Claude Code, which has said nothing for 45 s"));
  });

  it("Allow for this session says on hover that it reaches the session's later runs, unwatched ones too", async () => {
    script([...running(), ev({ type: "permission_requested", request_id: "p1", tool: "run_command", input: { command: "npm test" }, reason: "the shell" })]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const allow = await screen.findByTestId("allow-session");
    expect(allow.getAttribute("title")).toMatch(/^This command, as written, is allowed without asking again in this session's later runs too.*a script/);
  });

  it("a plan step's check command is asked for and shown as the plan's, not as one the agent named", async () => {
    script([
      ...running(),
      ev({ type: "permission_requested", request_id: "p1", tool: "run_command", input: { command: "test -s b.txt" }, reason: "The plan names this command as this step's check (“Done when”). It runs in a shell in the workspace." }),
      ev({ type: "permission_resolved", request_id: "p1", decision: "allow_session" }),
      ev({ type: "verification", command: "test -s b.txt", exit_code: 0, output_tail: "", skipped: false, nth: 1, of: 1, persons_own: false, plans: true }),
    ]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const prompt = await screen.findByTestId("permission-prompt");
    expect(prompt).toHaveTextContent("Run this check command with run_command?");
    expect(prompt).toHaveTextContent("The plan names this command");
    expect(prompt).not.toHaveTextContent("the agent's verify command");
    const card = await screen.findByTestId("verification-card");
    expect(card).toHaveTextContent("the plan's check");
    expect(card).not.toHaveTextContent("named by the agent");
  });

  it("the header of a review of work not verified done says how the run ended, as the sidebar does, not 'Ready for review'", async () => {
    script([
      ...running(),
      ev({ type: "review_requested", review_id: "r1", claim: "none", verdict: "not_done", end_reason: "stuck", remaining: ["write b.txt"], files_changed: [], verification: [] }),
      ev({ type: "run_finished", status: "awaiting_review", claim: "none", verdict: "not_done", end_reason: "stuck" }),
      ev({ type: "status_changed", status: "awaiting_review" }),
    ]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    await waitFor(() => expect(screen.getByTestId("status-badge")).toHaveAttribute("data-status", "awaiting_review"));
    const badge = screen.getByTestId("status-badge");
    expect(badge).toHaveTextContent("Stuck");
    expect([...badge.childNodes].filter((n) => !(n instanceof HTMLElement && n.classList.contains("sr-only"))).map((n) => n.textContent).join(""), "what shows").toBe("Stuck");
    expect(badge, "a screen reader also hears that a decision waits").toHaveTextContent("Ready for review: Stuck");
    expect(badge.getAttribute("title")).toMatch(/Ready for review: Stuck, not verified done/);
  });

  /** A review of a run that changed nothing, rejected by the person (with revert). */
  const rejected = (review: string) => [
    ev({ type: "review_requested", review_id: review, claim: "success", verdict: "done", end_reason: "verified_done", remaining: [], files_changed: [], verification: [] }),
    ev({ type: "run_finished", status: "awaiting_review", claim: "success", verdict: "done", end_reason: "verified_done" }),
    ev({ type: "review_resolved", review_id: review, decision: "reject", by: "person", feedback: null, reverted: true }),
    ev({ type: "status_changed", status: "rejected" }),
  ];

  it("keeps the checklist of the person's comments once the review is decided", async () => {
    script([
      ...running(),
      ev({
        type: "review_requested",
        review_id: "r1",
        claim: "success",
        verdict: "done",
        end_reason: "verified_done",
        remaining: [],
        files_changed: [],
        verification: [],
        criteria: [{ id: "c1", text: "notes.md:1: say pear instead", state: "met", evidence: "the evaluator: line 1 reads pear" }],
      }),
      ev({ type: "run_finished", status: "awaiting_review", claim: "success", verdict: "done", end_reason: "verified_done" }),
      ev({ type: "review_resolved", review_id: "r1", decision: "approve", by: "person", feedback: null, reverted: false }),
      ev({ type: "status_changed", status: "completed" }),
    ]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    expect(await screen.findByText("Approved")).toBeInTheDocument();
    expect(screen.getByTestId("criterion"), "what became of each comment, after the decision too").toHaveTextContent("✓ met notes.md:1: say pear instead — the evaluator: line 1 reads pear");
  });

  it("a finding dismissed for the task stays in sight as dismissed, and Undo takes the dismissal back", async () => {
    const calls: Record<string, unknown>[] = [];
    const finding = { rule: "assertion_removed" as const, path: "tests/test_calc.py", line: 5, detail: "an assertion was removed", excerpt: "assert add(2, 3) == 5" };
    const events = [
      ...running(),
      ev({ type: "review_requested", review_id: "r1", claim: "success", verdict: "done", end_reason: "verified_done", remaining: [], files_changed: [], verification: [], audit: [finding] }),
      ev({ type: "status_changed", status: "awaiting_review" }),
      ev({ type: "audit_dismissed", rule: finding.rule, path: finding.path, excerpt: finding.excerpt }),
    ];
    script(events, calls);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const trace = await screen.findByTestId("audit-dismissed");
    expect(trace, "not gone without a word").toHaveTextContent("Dismissed by you for this task: assertion removed tests/test_calc.py:5");
    expect(screen.queryByTestId("audit-finding"), "no longer counted against the work").toBeNull();
    await userEvent.click(screen.getByRole("button", { name: "Undo" }));
    await waitFor(() => expect(calls.find((c) => c.cmd === "restore_finding")).toMatchObject({ sessionId: "s1", finding: { rule: "assertion_removed", path: "tests/test_calc.py" } }));
  });

  it("after Reject with revert, says what was undone where the buttons were", async () => {
    script([
      ...running(),
      ...rejected("r1"),
      ev({ type: "reverted", restored: ["a.txt", "b.txt"], deleted: ["new.txt"] }),
    ]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    expect(await screen.findByTestId("revert-summary"), "the person sees the revert happened, and to which files").toHaveTextContent("The agent's changes were undone: 2 files restored, 1 deleted. (a.txt, b.txt, new.txt)");
  });

  it("a revert that overwrote the person's edit, as they said, says where their version is kept", async () => {
    const copy = "/home/p/.local/share/dev.finishline.app/overwritten/s1/notes.md";
    script([...running(), ...rejected("r1"), ev({ type: "reverted", restored: [], deleted: ["notes.md"], kept: [], copies: [{ path: "notes.md", copy }] })]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    expect(await screen.findByTestId("revert-copies")).toHaveTextContent(`Your version of notes.md, which the revert replaced or removed as you said, is kept at ${copy}.`);
  });

  it("a revert that replaced a file changed while a command ran says a copy is kept, in case the person's edit is in it", async () => {
    const copy = "/home/p/.local/share/dev.finishline.app/overwritten/s1/README.md";
    script([...running(), ...rejected("r1"), ev({ type: "reverted", restored: ["README.md"], deleted: [], kept: [], copies: [{ path: "README.md", copy, unattributed: true }] })]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    expect(await screen.findByTestId("revert-copies")).toHaveTextContent(
      `README.md changed while a command or an external agent was at work, so an edit of yours then would look like the agent's: a copy of it as it was before the revert is kept at ${copy}.`,
    );
  });

  it("a revert of many files a command made says so in a sentence, with where their copies are, not one line a file", async () => {
    const folder = "/home/p/.local/share/dev.finishline.app/overwritten/s1/gen";
    const names = Array.from({ length: 400 }, (_, i) => `gen/f${i}.txt`);
    const copies = names.map((path) => ({ path, copy: `/home/p/.local/share/dev.finishline.app/overwritten/s1/${path}`, unattributed: true }));
    script([...running(), ...rejected("r1"), ev({ type: "reverted", restored: [], deleted: names, kept: [], copies })]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const said = await screen.findByTestId("revert-copies");
    expect(said.querySelectorAll("li")).toHaveLength(1);
    expect(said).toHaveTextContent(
      `400 files (gen/f0.txt, gen/f1.txt, gen/f2.txt and 397 more) changed while a command or an external agent was at work, so an edit of yours then would look like the agent's: copies of them as they were before the revert are kept in ${folder}.`,
    );
    expect(screen.getByTestId("revert-summary"), "the summary names a few, not four hundred").toHaveTextContent(
      "The agent's changes were undone: 400 files deleted. (gen/f0.txt, gen/f1.txt, gen/f2.txt, gen/f3.txt, gen/f4.txt and 395 more)",
    );
  });

  it("a file the person said to overwrite that was left says why: no copy of their version could be kept", async () => {
    const reason = "No space left on device (os error 28)";
    script([...running(), ...rejected("r1"), ev({ type: "reverted", restored: [], deleted: [], kept: ["notes.md"], not_copied: [{ path: "notes.md", reason }] })]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    expect(await screen.findByTestId("revert-not-copied")).toHaveTextContent(`notes.md was not overwritten: no copy of your version could be kept first (${reason}).`);
    expect(screen.queryByTestId("revert-kept"), "not only listed as changed after the agent").toBeNull();
  });

  it("a revert with nothing to undo says so, not that the changes were undone", async () => {
    script([...running(), ...rejected("r1"), ev({ type: "reverted", restored: [], deleted: [], kept: [] })]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    expect(await screen.findByTestId("revert-summary")).toHaveTextContent(/^Nothing needed undoing: the files were already as the task found them\.$/);
  });

  it("a reject nobody made (the CLI's --review reject) is not said to be auto-approve's or the person's", async () => {
    script([
      ...running(),
      ev({ type: "review_requested", review_id: "r1", claim: "success", verdict: "done", end_reason: "verified_done", remaining: [], files_changed: [], verification: [] }),
      ev({ type: "run_finished", status: "awaiting_review", claim: "success", verdict: "done", end_reason: "verified_done" }),
      ev({ type: "review_resolved", review_id: "r1", decision: "reject", by: "auto", feedback: null, reverted: false }),
      ev({ type: "status_changed", status: "rejected" }),
    ]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    expect(await screen.findByTestId("review-panel")).toHaveTextContent("RejectedDecided by a dry run (--review reject), with nobody looking.");
  });

  it("keeps each decision in the timeline once a follow-up runs: who decided, and what a revert undid", async () => {
    script([
      ...running(),
      ...rejected("r1"),
      ev({ type: "reverted", restored: ["a.txt"], deleted: ["new.txt"], kept: ["mine.txt"] }),
      ev({ type: "message_created", message_id: "u2", role: "user", text: "try again, smaller" }),
      ev({ type: "run_started", trigger: "message" }),
      ev({ type: "review_requested", review_id: "r2", claim: "success", verdict: "done", end_reason: "verified_done", remaining: [], files_changed: [], verification: [] }),
      ev({ type: "run_finished", status: "awaiting_review", claim: "success", verdict: "done", end_reason: "verified_done" }),
      ev({ type: "review_resolved", review_id: "r2", decision: "approve", by: "auto", feedback: null, reverted: false }),
      ev({ type: "status_changed", status: "completed" }),
    ]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const notes = await screen.findAllByTestId("decision-note");
    expect(notes.map((n) => n.textContent), "the first review's Reject is still on the record, before the follow-up").toEqual([
      "Rejected by you. The agent's changes were undone: 1 file restored, 1 deleted (a.txt, new.txt). Left as they were, because they changed after the agent: mine.txt.",
    ]);
    expect(screen.getByTestId("review-panel"), "the latest decision is said once, where the buttons were").toHaveTextContent("ApprovedDecided by auto-approve.");
    const timeline = screen.getByTestId("timeline");
    const text = timeline.textContent ?? "";
    expect(text.indexOf("Rejected by you"), "in the order it happened").toBeLessThan(text.indexOf("try again, smaller"));
  });

  it("keeps what was copied out of the worktree in the decision's note once a follow-up runs", async () => {
    script([
      ...running(),
      ev({ type: "review_requested", review_id: "r1", claim: "success", verdict: "done", end_reason: "verified_done", remaining: [], files_changed: [], verification: [], not_landed: [".env", "build/"] }),
      ev({ type: "run_finished", status: "awaiting_review", claim: "success", verdict: "done", end_reason: "verified_done" }),
      ev({ type: "ignored_copied", copied: [".env"], left: [], failed: [] }),
      ev({ type: "review_resolved", review_id: "r1", decision: "request_changes", by: "person", feedback: "and a README", reverted: false }),
      ev({ type: "message_created", message_id: "u2", role: "user", text: "and a README" }),
      ev({ type: "run_started", trigger: "message" }),
    ]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const notes = await screen.findAllByTestId("decision-note");
    expect(notes.map((n) => n.textContent), "the copy is on the record with the decision it came before").toEqual([
      "Changes requested by you. Copied into your checkout: .env.",
    ]);
  });

  it("tells a landing sent back to the agent to resolve apart from a change the person asked for", async () => {
    script([
      ...running(),
      ev({ type: "review_requested", review_id: "r1", claim: "success", verdict: "done", end_reason: "verified_done", remaining: [], files_changed: [], verification: [] }),
      ev({ type: "run_finished", status: "awaiting_review", claim: "success", verdict: "done", end_reason: "verified_done" }),
      ev({ type: "landing_blocked", reason: "conflict", files: ["notes.md"], detail: "main moved on" }),
      ev({ type: "review_resolved", review_id: "r1", decision: "request_changes", by: "person", feedback: null, reverted: false, occasion: "resolve_landing" }),
      ev({ type: "run_started", trigger: "feedback" }),
    ]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const notes = await screen.findAllByTestId("decision-note");
    expect(notes.map((n) => n.textContent), "the person asked for no change: they let the agent resolve the conflict").toEqual(["You let the agent resolve the landing."]);
  });

  it("the open review can be given the window for a long diff, and share it again", async () => {
    script([...running(), ...reviewWaits()]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const tall = await screen.findByRole("button", { name: "Enlarge the review" });
    await userEvent.click(tall);
    expect(screen.getByTestId("review-dock")).toHaveClass("tall");
    expect(screen.getByRole("button", { name: "Shrink the review" }), "its words say what a click does now").toBeInTheDocument();
    await userEvent.click(screen.getByRole("button", { name: "Fold the review to read the transcript" }));
    expect(screen.getByTestId("review-dock"), "folded, it gives the transcript the room").toHaveClass("folded");
    expect(screen.queryByTestId("review-tall"), "folded, only the way back is offered").toBeNull();
    await userEvent.click(screen.getByRole("button", { name: "Unfold the review" }));
    expect(screen.getByTestId("review-dock"), "unfolded, it is as large as the person made it").toHaveClass("tall");
  });

  it("a decided review, which stays at the window's foot, folds to its decision so the transcript has the room", async () => {
    script([
      ...running(),
      ...reviewWaits(),
      ev({ type: "review_resolved", review_id: "r1", decision: "reject", by: "person", feedback: null, reverted: false }),
      ev({ type: "status_changed", status: "rejected" }),
    ]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const fold = await screen.findByRole("button", { name: "Fold to read the transcript" });
    expect(screen.queryByTestId("review-tall"), "nothing to enlarge once decided").toBeNull();
    await userEvent.click(fold);
    expect(screen.getByTestId("review-dock"), "folded, only the decision's title stays").toHaveClass("folded");
    expect(within(screen.getByTestId("review-panel")).getByRole("heading")).toHaveTextContent("Rejected");
    await userEvent.click(screen.getByRole("button", { name: "Unfold the decision" }));
    expect(screen.getByTestId("review-dock")).not.toHaveClass("folded");
  });

  it("the review after a request for changes shows the words the person asked with, beside their comments", async () => {
    script([
      ...running(),
      ...reviewWaits(),
      ev({ type: "review_resolved", review_id: "r1", decision: "request_changes", by: "person", feedback: "Also add a CHANGELOG.md entry\n<b>for it</b>", reverted: false }),
      ev({ type: "run_started", trigger: "feedback" }),
      ...reviewWaits("r2"),
    ]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const asked = await screen.findByTestId("review-asked");
    expect(asked, "what was asked, as written: its markup is words, never drawn").toHaveTextContent("Also add a CHANGELOG.md entry <b>for it</b>");
    expect(asked.querySelector("b")).toBeNull();
    expect(within(screen.getByTestId("review-panel")).getByText("What you asked at your last review")).toBeInTheDocument();
    // Comments on lines get a mark each; these words have none: said where they are, so they do
    // not read as checked by a mark that is not there.
    expect(screen.getByTestId("review-asked-judged"), "who judged them, and how").toHaveTextContent("No mark of its own: the evaluator judged this round with it (its word is above)");
  });

  it("a first review, or one after a request with comments only, shows no words asked", async () => {
    script([...running(), ...reviewWaits()]);
    const first = render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    await screen.findByTestId("review-panel");
    expect(screen.queryByTestId("review-asked"), "a first review").toBeNull();
    first.unmount();
    script([
      ...running(),
      ...reviewWaits(),
      ev({ type: "review_resolved", review_id: "r1", decision: "request_changes", by: "person", feedback: null, reverted: false }),
      ev({ type: "run_started", trigger: "feedback" }),
      ...reviewWaits("r2"),
    ]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    await screen.findByTestId("review-panel");
    await waitFor(() => expect(screen.getAllByTestId("decision-note"), "the request is on the record: this is the review after it").toHaveLength(1));
    expect(screen.queryByTestId("review-asked"), "after a request with comments only").toBeNull();
  });

  it("a review enlarged once opens enlarged in the next session too, until it is shrunk", async () => {
    const waiting = () =>
      script([...running(), ...reviewWaits()]);
    waiting();
    const first = render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    await userEvent.click(await screen.findByRole("button", { name: "Enlarge the review" }));
    first.unmount();
    seq = 0;
    waiting();
    const second = render(<SessionView sessionId="s2" onOpenHistory={() => {}} />);
    await screen.findByRole("button", { name: "Shrink the review" });
    expect(screen.getByTestId("review-dock"), "the diff gets the room the person gave the last one").toHaveClass("tall");
    await userEvent.click(screen.getByRole("button", { name: "Shrink the review" }));
    second.unmount();
    seq = 0;
    waiting();
    render(<SessionView sessionId="s3" onOpenHistory={() => {}} />);
    await screen.findByRole("button", { name: "Enlarge the review" });
    expect(screen.getByTestId("review-dock"), "shrunk, the next one shares the window again").not.toHaveClass("tall");
  });

  /** An attempt's review rejected as its group's decision, `occasion` saying which. */
  const rejectedWithGroup = (occasion: "another_attempt_chosen" | "every_attempt_rejected", feedback: string) => {
    script([
      ...running(),
      ev({ type: "review_requested", review_id: "r1", claim: "success", verdict: "done", end_reason: "verified_done", remaining: [], files_changed: [], verification: [] }),
      ev({ type: "run_finished", status: "awaiting_review", claim: "success", verdict: "done", end_reason: "verified_done" }),
      ev({ type: "review_resolved", review_id: "r1", decision: "reject", by: "person", feedback, reverted: false, occasion }),
      ev({ type: "status_changed", status: "rejected" }),
    ]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
  };

  it("says an attempt set aside for another was not chosen, not rejected by the person", async () => {
    rejectedWithGroup("another_attempt_chosen", "Another attempt was chosen.");
    const panel = await screen.findByTestId("review-panel");
    expect(panel, "a red Rejected would say the person refused work they never looked at").toHaveTextContent("Not chosen");
    expect(panel).not.toHaveTextContent("Rejected");
    expect(screen.getByTestId("status-badge"), "nor does the header").toHaveTextContent("Not chosen");
  });

  it("says an attempt rejected with the rest of its group went with them, not on its own evidence", async () => {
    rejectedWithGroup("every_attempt_rejected", "You rejected every attempt.");
    const panel = await screen.findByTestId("review-panel");
    expect(panel, "the person refused the group, not this attempt on its own").toHaveTextContent("Decided by you, with every other attempt of this task.");
    // The record the transcript keeps once a later run follows.
    expect(decisionText({ decision: "reject", by: "person", occasion: "every_attempt_rejected" })).toBe("Rejected by you, with every other attempt of this task.");
    // An occasion a later version recorded is not told as the person's own verdict.
    expect(decisionText({ decision: "reject", by: "person", occasion: "other" })).toBe("Rejected, on an occasion a later version of Finishline recorded.");
  });

  it("Enter sends the review feedback; Shift+Enter makes a new line", async () => {
    const calls: Record<string, unknown>[] = [];
    const events = [
      ...running(),
      ev({ type: "review_requested", review_id: "r1", claim: "success", verdict: "done", end_reason: "verified_done", remaining: [], files_changed: [], verification: [] }),
      ev({ type: "run_finished", status: "awaiting_review", claim: "success", verdict: "done", end_reason: "verified_done" }),
      ev({ type: "status_changed", status: "awaiting_review" }),
    ];
    script(events, calls);
    const shown = spyOnScrollIntoView().mock.contexts;
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const user = userEvent.setup();
    await user.click(await screen.findByTestId("request-changes"));
    const box = await screen.findByTestId("feedback-input");
    expect(shown, "the box is brought to the middle of the window, not left behind the buttons").toContain(box);
    await user.keyboard("use tabs{Shift>}{Enter}{/Shift}not spaces");
    expect(box).toHaveValue("use tabs\nnot spaces");
    expect(calls.some((c) => c.cmd === "submit_review")).toBe(false);
    await user.keyboard("{Enter}");
    await waitFor(() => expect(calls.find((c) => c.cmd === "submit_review")).toMatchObject({ input: { review_id: "r1", decision: "request_changes", feedback: "use tabs\nnot spaces" } }));
  });

  it("labels each todo checkbox by its text, so a screen reader reads the list, not 'pending, completed'", async () => {
    script([...running(), ev({ type: "todos_updated", todos: [{ id: "1", content: "write a.txt", status: "completed" }, { id: "2", content: "write b.txt", status: "pending" }] })]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const done = await screen.findByRole("checkbox", { name: /write a\.txt/ });
    expect(done, "the finished todo is ticked").toBeChecked();
    expect(screen.getByRole("checkbox", { name: /write b\.txt/ }), "the open one is not").not.toBeChecked();
  });

  it("closing the view ends its subscription, so no follower is left running for the life of the app", async () => {
    const calls: Record<string, unknown>[] = [];
    script(running(), calls);
    const view = render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    await screen.findByTestId("continuation-card");
    view.unmount();
    await waitFor(() => expect(calls.find((c) => c.cmd === "unsubscribe_session"), "the id subscribe_session gave is handed back").toMatchObject({ subscription: 7 }));
  });

  it("scrolled up while it streams, the view stays put and offers Jump to latest; at the bottom it follows", async () => {
    const push = script(running());
    render(
      <main className="content">
        <SessionView sessionId="s1" onOpenHistory={() => {}} />
      </main>,
    );
    await screen.findByTestId("continuation-card");
    const main = document.querySelector("main.content") as HTMLElement;
    // The person scrolls up to read: 2000 px of content, a 500 px window, 300 px from the top.
    Object.defineProperty(main, "scrollHeight", { configurable: true, value: 2000 });
    Object.defineProperty(main, "clientHeight", { configurable: true, value: 500 });
    main.scrollTop = 300;
    main.dispatchEvent(new Event("scroll"));
    push(ev({ type: "message_created", message_id: "m2", role: "assistant" }));
    push(ev({ type: "text_delta", message_id: "m2", text: "more words" }));
    const jump = await screen.findByTestId("jump-latest");
    expect(main.scrollTop, "new output must not pull a reading person down").toBe(300);
    await userEvent.setup().click(jump);
    expect(main.scrollTop, "Jump to latest goes to the very end, the last words above the bottom bar").toBe(2000);
    await waitFor(() => expect(screen.queryByTestId("jump-latest")).not.toBeInTheDocument());
    // More arrives below: the window is short of the end until it follows.
    main.scrollTop = 1500;
    push(ev({ type: "text_delta", message_id: "m2", text: " and more" }));
    await waitFor(() => expect(main.scrollTop, "at the bottom, the view follows the stream").toBe(2000));
    main.scrollTop = 300;
    main.dispatchEvent(new Event("scroll"));
    push(ev({ type: "text_delta", message_id: "m2", text: " and more again" }));
    await screen.findByTestId("jump-latest");
    push(ev({ type: "permission_requested", request_id: "p1", tool: "run_command", input: { command: "ls" }, reason: "the shell" }));
    push(ev({ type: "status_changed", status: "awaiting_approval" }));
    push(ev({ type: "activity", phase: "waiting", detail: "you" }));
    await screen.findByTestId("permission-prompt");
    expect(screen.getByTestId("permission-prompt")).toHaveTextContent("Allow run_command?");
    await waitFor(() => expect(screen.getByTestId("activity")).toHaveTextContent("Waiting for you"));
    expect(screen.queryByText("Waiting for you…"), "the question itself says the run waits: no line above it says so again").toBeNull();
    await waitFor(() => expect(screen.queryByTestId("jump-latest"), "a question waits at the foot of the window: nothing is laid over its buttons").toBeNull());
  });

  /** A run waiting on `asked`, shown; each `answer` sent is kept and held until `answered.now()`;
   * `push` delivers more events. */
  function waitingOn(asked: () => Envelope, answer: string) {
    const answers: unknown[] = [];
    const answered = { now: () => {} };
    const push = script([...running(), asked(), ev({ type: "status_changed", status: "awaiting_approval" })], [], (cmd, args) => {
      if (cmd !== answer) return undefined;
      answers.push(args);
      return new Promise<void>((done) => (answered.now = done));
    });
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    return { answers, answered, push };
  }

  it("a second question opens empty, with the focus in its box; an answer on its way is sent once", async () => {
    const { answers, push, answered } = waitingOn(() => ev({ type: "question_asked", request_id: "q1", question: "Which folder?" }), "answer_question");
    const user = userEvent.setup();
    await user.type(await screen.findByRole("textbox", { name: "Your answer" }), "src{Enter}");
    await user.keyboard("{Enter}");
    await user.click(screen.getByRole("button", { name: "Answer" }));
    expect(answers, "one answer, however often sent while it is on its way").toHaveLength(1);
    answered.now();
    // The answer and the next question arrive together.
    push(ev({ type: "question_answered", request_id: "q1", answer: "src", declined: false }));
    push(ev({ type: "question_asked", request_id: "q2", question: "Which file?" }));
    await screen.findByText("Which file?");
    const box = screen.getByRole("textbox", { name: "Your answer" });
    expect(box, "not the first question's answer").toHaveValue("");
    expect(box, "the keys go on to the next question").toHaveFocus();
  });

  it("a permission answer is sent once however often clicked, and the next prompt takes the focus", async () => {
    const { answers, push, answered } = waitingOn(() => ev({ type: "permission_requested", request_id: "p1", tool: "run_command", input: { command: "ls" }, reason: "the shell" }), "respond_permission");
    const user = userEvent.setup();
    await user.click(await screen.findByTestId("allow-once"));
    expect(screen.getByTestId("deny"), "the other answers wait with it").toBeDisabled();
    fireEvent.click(screen.getByTestId("deny"));
    expect(answers).toHaveLength(1);
    answered.now();
    push(ev({ type: "permission_resolved", request_id: "p1", decision: "allow_once" }));
    push(ev({ type: "permission_requested", request_id: "p2", tool: "run_command", input: { command: "make" }, reason: "the shell" }));
    await waitFor(() => expect(screen.getAllByTestId("permission-prompt").at(-1)).toHaveTextContent("make"));
    expect(screen.getByTestId("allow-once")).toBeEnabled();
    const next = screen.getAllByTestId("permission-prompt").at(-1)!;
    // The prompt takes the focus in an effect after it is drawn: a moment later under load.
    await waitFor(() => expect(next, "the keys go on to the next prompt").toHaveFocus());
    // A Space or Enter meant for scrolling the timeline allows nothing: the card has the focus,
    // not one of its answers; Tab reaches them.
    await user.keyboard(" ");
    await user.keyboard("{Enter}");
    expect(answers, "no keystroke answered the second prompt").toHaveLength(1);
    await user.tab();
    expect(screen.getByTestId("allow-once")).toHaveFocus();
  });

  it("a verification continuation shows the command and its output as code, not as literal fences", async () => {
    seq = 0;
    script([
      ev({ type: "session_created", task: "t", workspace: "/ws", provider: "openai", model: "m" }),
      ev({ type: "run_started", trigger: "task" }),
      ev({
        type: "continuation",
        source: "verification",
        text: "The verification command `pytest -q` failed (exit code 1). The end of its output:\n```\nFAILED test_calc.py::test_add\n```\nFix the cause, then finish.",
        attempt: 1,
        max: 5,
        remaining: [],
      } as EngineEvent),
    ]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const card = await screen.findByTestId("continuation-card");
    expect(card).not.toHaveTextContent("```");
    expect(card.querySelector("pre")?.textContent, "the output is a code block").toContain("FAILED test_calc.py::test_add");
    expect(card.querySelector("code")?.textContent).toBe("pytest -q");
  });

  it("a session the person cancelled resumes with one click, as an interrupted one does; a note is optional", async () => {
    seq = 0;
    const calls: Record<string, unknown>[] = [];
    script(
      [
        ev({ type: "session_created", task: "t", workspace: "/ws", provider: "openai", model: "m" }),
        ev({ type: "run_started", trigger: "task" }),
        ev({ type: "status_changed", status: "busy" }),
        ev({ type: "run_finished", status: "cancelled", claim: "none", verdict: null, end_reason: "cancelled" }),
        ev({ type: "status_changed", status: "cancelled" }),
      ],
      calls,
    );
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    expect(await screen.findByTestId("message-input")).toHaveAttribute("placeholder", "Optional note for the agent");
    const resume = screen.getByTestId("send-message");
    expect(resume).toHaveTextContent("Resume");
    await userEvent.setup().click(resume);
    await waitFor(() => expect(calls.find((c) => c.cmd === "send_message")).toMatchObject({ message: "" }));
  });

  it("Enter in the empty note box of a cancelled session does not start it again: Resume is a click (or Enter on the button), a note goes with Enter", async () => {
    seq = 0;
    const calls: Record<string, unknown>[] = [];
    script(
      [
        ev({ type: "session_created", task: "t", workspace: "/ws", provider: "openai", model: "m" }),
        ev({ type: "run_started", trigger: "task" }),
        ev({ type: "status_changed", status: "busy" }),
        ev({ type: "run_finished", status: "cancelled", claim: "none", verdict: null, end_reason: "cancelled" }),
        ev({ type: "status_changed", status: "cancelled" }),
      ],
      calls,
    );
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const box = await screen.findByTestId("message-input");
    const user = userEvent.setup();
    await user.click(box);
    // The focus lands here after a Cancel: an Enter meant for something else must not undo it.
    await user.keyboard("{Enter}");
    await new Promise((r) => setTimeout(r, 50));
    expect(calls.filter((c) => c.cmd === "send_message"), "cancelled stays cancelled").toEqual([]);
    await user.type(box, "use the other file{Enter}");
    await waitFor(() => expect(calls.find((c) => c.cmd === "send_message")).toMatchObject({ message: "use the other file" }));
  });

  it("a message the person sends brings the view back to the latest, though they had scrolled up to read", async () => {
    seq = 0;
    const calls: Record<string, unknown>[] = [];
    script(
      [
        ev({ type: "session_created", task: "t", workspace: "/ws", provider: "openai", model: "m" }),
        ev({ type: "run_started", trigger: "task" }),
        ev({ type: "message_created", message_id: "m1", role: "assistant" }),
        ev({ type: "text_delta", message_id: "m1", text: "An answer." }),
        ev({ type: "status_changed", status: "idle" }),
      ],
      calls,
    );
    render(
      <main className="content">
        <SessionView sessionId="s1" onOpenHistory={() => {}} />
      </main>,
    );
    const box = await screen.findByTestId("message-input");
    const main = document.querySelector("main.content") as HTMLElement;
    Object.defineProperty(main, "scrollHeight", { configurable: true, value: 2000 });
    Object.defineProperty(main, "clientHeight", { configurable: true, value: 500 });
    main.scrollTop = 300;
    main.dispatchEvent(new Event("scroll"));
    const user = userEvent.setup();
    await user.type(box, "and now b.txt");
    await user.click(screen.getByTestId("send-message"));
    await waitFor(() => expect(calls.some((c) => c.cmd === "send_message")).toBe(true));
    await waitFor(() => expect(main.scrollTop, "the view goes to the end, where the run starts").toBe(2000));
  });

  it("the focus is not lost when a message starts a run and the box goes, nor when the run ends and Cancel goes", async () => {
    const calls: Record<string, unknown>[] = [];
    seq = 0;
    const deliver = script(
      [
        ev({ type: "session_created", task: "write a.txt", workspace: "/ws", provider: "openai", model: "m" }),
        ev({ type: "run_started", trigger: "task" }),
        ev({ type: "run_finished", status: "idle", claim: "none", verdict: "unavailable", end_reason: "conversation_unchecked" }),
        ev({ type: "status_changed", status: "idle" }),
      ],
      calls,
    );
    render(
      <main className="content" tabIndex={-1}>
        <SessionView sessionId="s1" onOpenHistory={() => {}} />
      </main>,
    );
    const main = document.querySelector("main.content") as HTMLElement;
    const user = userEvent.setup();
    await user.type(await screen.findByTestId("message-input"), "and now b.txt{Enter}");
    await waitFor(() => expect(calls.some((c) => c.cmd === "send_message")).toBe(true));
    deliver(ev({ type: "run_started", trigger: "message" }));
    deliver(ev({ type: "status_changed", status: "busy" }));
    await waitFor(() => expect(screen.queryByTestId("message-input")).toBeNull());
    // Not Cancel: an Enter pressed twice would stop the run just asked for.
    await waitFor(() => expect(main, "the page the session is on, where Tab goes on from").toHaveFocus());
    screen.getByTestId("cancel").focus();
    deliver(ev({ type: "run_finished", status: "idle", claim: "none", verdict: "unavailable", end_reason: "conversation_unchecked" }));
    deliver(ev({ type: "status_changed", status: "idle" }));
    await waitFor(() => expect(screen.getByTestId("message-input"), "Cancel is gone: the box to say what next").toHaveFocus());
  });

  it("a link's address left open in the timeline does not take Esc's question about the run away", async () => {
    const calls: Record<string, unknown>[] = [];
    script([...running(), ev({ type: "message_created", message_id: "m2", role: "assistant" }), ev({ type: "text_delta", message_id: "m2", text: "See [the docs](https://docs.example.com)." })], calls);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const user = userEvent.setup();
    await user.click(await screen.findByText("the docs"));
    await screen.findByTestId("link-confirm");
    (document.activeElement as HTMLElement | null)?.blur();
    await user.keyboard("{Escape}");
    expect(await screen.findByTestId("confirm-cancel")).toBeInTheDocument();
  });

  it("a message, review feedback or answer half typed is there again after a visit to another screen", async () => {
    seq = 0;
    const events = [
      ...running(),
      ev({ type: "question_asked", request_id: "q1", question: "Which folder?" }),
      ev({ type: "review_requested", review_id: "r1", claim: "success", verdict: "done", end_reason: "verified_done", remaining: [], files_changed: [], verification: [] }),
      ev({ type: "run_finished", status: "awaiting_review", claim: "success", verdict: "done", end_reason: "verified_done" }),
      ev({ type: "status_changed", status: "awaiting_review" }),
    ];
    script(events, []);
    const first = render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const user = userEvent.setup();
    await user.type(await screen.findByRole("textbox", { name: "Your answer" }), "src, I think");
    await user.click(await screen.findByTestId("request-changes"));
    await user.type(await screen.findByTestId("feedback-input"), "use tabs, and");
    first.unmount();
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    expect(await screen.findByTestId("feedback-input"), "the feedback box is open again with the words").toHaveValue("use tabs, and");
    expect(screen.getByRole("textbox", { name: "Your answer" })).toHaveValue("src, I think");
  });

  it("the feedback box closes with a button of its own, as with Esc, keeping its words for when it opens again", async () => {
    seq = 0;
    const events = [
      ...running(),
      ev({ type: "review_requested", review_id: "r1", claim: "success", verdict: "done", end_reason: "verified_done", remaining: [], files_changed: [], verification: [] }),
      ev({ type: "run_finished", status: "awaiting_review", claim: "success", verdict: "done", end_reason: "verified_done" }),
      ev({ type: "status_changed", status: "awaiting_review" }),
    ];
    script(events, []);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const user = userEvent.setup();
    await user.click(await screen.findByTestId("request-changes"));
    await user.type(await screen.findByTestId("feedback-input"), "use tabs");
    expect(screen.getByRole("textbox", { name: "What should change?" }), "the box's name is its question, not its hint").toBeTruthy();
    await user.click(screen.getByRole("button", { name: "Close (Esc)" }));
    expect(screen.queryByTestId("feedback-input"), "a pointer alone closes the box").toBeNull();
    await waitFor(() => expect(screen.getByTestId("request-changes"), "the focus back on the button that opened it").toHaveFocus());
    await user.click(screen.getByTestId("request-changes"));
    expect(await screen.findByTestId("feedback-input"), "its words are there again").toHaveValue("use tabs");
  });

  it("a message half typed is there again after a visit to another session", async () => {
    seq = 0;
    script([ev({ type: "session_created", task: "t", workspace: "/ws", provider: "openai", model: "m" }), ev({ type: "run_started", trigger: "task" }), ev({ type: "status_changed", status: "idle" })], []);
    const first = render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    await userEvent.type(await screen.findByTestId("message-input"), "and then b.txt");
    first.unmount();
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    expect(await screen.findByTestId("message-input")).toHaveValue("and then b.txt");
  });

  it("a message that could not be sent says why beside the message box, and the words stay to send again", async () => {
    seq = 0;
    const events = [
      ev({ type: "session_created", task: "write a.txt", workspace: "/ws", provider: "openai", model: "m" }),
      ev({ type: "run_started", trigger: "task" }),
      ev({ type: "status_changed", status: "idle" }),
    ];
    script(events, [], (cmd) => {
      if (cmd === "send_message") throw { code: "workspace_busy", message: "another task is changing /ws; try again when it ends" };
    });
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const user = userEvent.setup();
    await user.type(await screen.findByTestId("message-input"), "and b.txt{Enter}");
    // The timeline can be long: an error above it would be out of sight of the box just used.
    expect(await within(screen.getByTestId("bottom-bar")).findByRole("alert")).toHaveTextContent(/another task is changing \/ws/i);
    expect(screen.getByTestId("message-input")).toHaveValue("and b.txt");
  });

  it("a message or feedback refused for want of a provider offers Open Settings beside the words", async () => {
    seq = 0;
    const events = [
      ...running(),
      ev({ type: "review_requested", review_id: "r1", claim: "success", verdict: "done", end_reason: "verified_done", remaining: [], files_changed: [], verification: [] }),
      ev({ type: "run_finished", status: "awaiting_review", claim: "success", verdict: "done", end_reason: "verified_done" }),
      ev({ type: "status_changed", status: "awaiting_review" }),
    ];
    const refused = { code: "invalid_settings", message: "set up a provider (base URL and model) in Settings first" };
    script(events, [], (cmd) => {
      if (cmd === "submit_review") throw refused;
    });
    const opened = vi.fn();
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} onOpenSettings={opened} />);
    const user = userEvent.setup();
    await user.click(await screen.findByTestId("request-changes"));
    await user.type(await screen.findByTestId("feedback-input"), "use tabs{Enter}");
    const alert = await screen.findByRole("alert");
    expect(alert).toHaveTextContent("Set up a provider");
    await user.click(within(alert).getByRole("button", { name: "Open Settings" }));
    expect(opened).toHaveBeenCalledOnce();
  });

  it("says whether it waits for the model or the answer is streaming in, the same in the header and under the timeline", async () => {
    seq = 0;
    const base = [
      ev({ type: "session_created", task: "t", workspace: "/ws", provider: "openai", model: "m" }),
      ev({ type: "run_started", trigger: "task" }),
      ev({ type: "status_changed", status: "busy" }),
      ev({ type: "step_started", step: 1 }),
      ev({ type: "activity", phase: "thinking", detail: "" }),
    ];
    script(base);
    const view = render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    await waitFor(() => expect(screen.getByTestId("activity"), "nothing back from the server yet").toHaveTextContent("Waiting for the model"));
    expect(screen.getByTestId("typing"), "the line under the timeline says the same").toHaveTextContent("Waiting for the model…");
    view.unmount();
    script([...base, ev({ type: "message_created", message_id: "m1", role: "assistant" }), ev({ type: "text_delta", message_id: "m1", text: "Hello" })]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    await waitFor(() => expect(screen.getByTestId("activity"), "the answer is arriving").toHaveTextContent("Writing"));
    expect(screen.getByTestId("typing"), "not Thinking under the words arriving").toHaveTextContent("Writing…");
  });

  it("names the project's instructions file the run follows", async () => {
    seq = 0;
    script([
      ev({ type: "session_created", task: "t", workspace: "/ws", provider: "openai", model: "m" }),
      ev({ type: "run_started", trigger: "task" }),
      ev({ type: "project_instructions", file: "AGENTS.md", chars: 120, truncated: false }),
      ev({ type: "status_changed", status: "busy" }),
    ]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    expect(await screen.findByTestId("session-instructions"), "the person sees which rules the agent was given").toHaveTextContent("following AGENTS.md");
  });

  it("names the external agent that does the work, as it introduced itself", async () => {
    seq = 0;
    script([
      ev({ type: "session_created", task: "t", workspace: "/ws", provider: "acp", model: "opencode" }),
      ev({ type: "run_started", trigger: "task" }),
      ev({ type: "agent_connected", agent: "opencode", name: "OpenCode", version: "1.18.33", acp_session: "ses_1", loaded: false, claims: true }),
      ev({ type: "status_changed", status: "busy" }),
    ]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    expect(await screen.findByTestId("session-agent"), "the header says which agent works, not a model name").toHaveTextContent("OpenCode 1.18.33 (ACP)");
  });

  it("says how many files a long first recording copies", async () => {
    seq = 0;
    script([
      ev({ type: "session_created", task: "t", workspace: "/ws", provider: "openai", model: "m" }),
      ev({ type: "run_started", trigger: "task" }),
      ev({ type: "status_changed", status: "busy" }),
      ev({ type: "step_started", step: 1 }),
      ev({ type: "activity", phase: "checkpointing", detail: "recording 20,000 files of the workspace, to measure the run's changes against (the first time in a folder takes longest)" }),
    ]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    await waitFor(() => expect(screen.getByTestId("activity"), "a wait of seconds says what it is doing and how big it is").toHaveTextContent("Recording 20,000 files of the workspace"));
  });

  it("shows the cycle and its budget from the first step, before any continuation", async () => {
    seq = 0;
    script([
      ev({ type: "session_created", task: "t", workspace: "/ws", provider: "openai", model: "m" }),
      ev({ type: "run_started", trigger: "task" }),
      ev({ type: "status_changed", status: "busy" }),
      ev({ type: "step_started", step: 1, cycle: { used: 0, max: 5 } }),
    ]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    await waitFor(() => expect(screen.getByTestId("progress-strip"), "the budget is visible before it is touched").toHaveTextContent("Finishline may send it back up to 5 times"));
  });

  it("once a run has ended without being sent back, the strip no longer counts the sending back: '0 times (up to 5)' stayed on a completed task", async () => {
    seq = 0;
    script([
      ev({ type: "session_created", task: "t", workspace: "/ws", provider: "openai", model: "m" }),
      ev({ type: "run_started", trigger: "task" }),
      ev({ type: "status_changed", status: "busy" }),
      ev({ type: "step_started", step: 1, cycle: { used: 0, max: 5 } }),
      ev({ type: "review_requested", review_id: "r1", claim: "success", verdict: "done", end_reason: "verified_done", remaining: [], files_changed: [], verification: [] }),
      ev({ type: "status_changed", status: "awaiting_review" }),
    ]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    await screen.findByTestId("review-panel");
    expect(screen.queryByTestId("cycle-count")).toBeNull();
  });

  it("the header counts tokens live as steps finish", async () => {
    script([...running(), ev({ type: "step_finished", step: 1, stop_reason: null, usage: { input_tokens: 11_000, output_tokens: 1_300 } })]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    expect(await screen.findByTestId("session-tokens"), "what the run has used so far, without opening the review").toHaveTextContent("12k tokens");
  });

  it("shows the review gate with claim, outcome and diffs, and approves", async () => {
    const calls: Record<string, unknown>[] = [];
    const events = [
      ...running(),
      ev({ type: "review_requested", review_id: "r1", claim: "success", verdict: "done", end_reason: "verified_done", remaining: [], files_changed: [{ path: "a.txt", kind: "created", diff: "+A" }], verification: [] }),
      ev({ type: "run_finished", status: "awaiting_review", claim: "success", verdict: "done", end_reason: "verified_done" }),
      ev({ type: "status_changed", status: "awaiting_review" }),
    ];
    script(events, calls);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const panel = await screen.findByTestId("review-panel");
    expect(panel).toHaveTextContent("success");
    expect(screen.getByTestId("review-end-reason")).toHaveTextContent("Verified done");
    expect(await screen.findByTestId("file-change", {}, { timeout: 10_000 })).toHaveTextContent("a.txt");
    await userEvent.setup().click(screen.getByTestId("approve"));
    await waitFor(() => expect(calls.find((c) => c.cmd === "submit_review")).toMatchObject({ input: { review_id: "r1", decision: "approve" } }));
  });

  it("keeps a waiting permission in the pinned bottom bar and says so at its place in the timeline; once answered it returns to the timeline", async () => {
    seq = 0;
    const base = [
      ev({ type: "session_created", task: "t", workspace: "/ws", provider: "openai", model: "m" }),
      ev({ type: "run_started", trigger: "task" }),
      ev({ type: "permission_requested", request_id: "p1", tool: "run_command", input: { command: "ls" }, reason: "the shell" }),
      ev({ type: "status_changed", status: "awaiting_approval" }),
    ];
    script(base);
    const view = render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const bar = await screen.findByTestId("bottom-bar");
    await waitFor(() => expect(bar.querySelector('[data-testid="permission-prompt"]'), "what waits for the person is always in view").not.toBeNull());
    expect(screen.getByTestId("timeline")).toHaveTextContent("Asked for permission: answer below.");
    view.unmount();
    script([...base, ev({ type: "permission_resolved", request_id: "p1", decision: "allow_once" }), ev({ type: "status_changed", status: "busy" })]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    await waitFor(() => expect(screen.getByTestId("timeline").querySelector('[data-testid="permission-prompt"]'), "the answered request is history, in the timeline").not.toBeNull());
    expect(screen.getByTestId("bottom-bar").querySelector('[data-testid="permission-prompt"]')).toBeNull();
    expect(screen.getByTestId("permission-decision")).toHaveTextContent("Allowed once");
  });

  it("a queued task says what it waits for, a free place, never that it waits for the person", async () => {
    seq = 0;
    const detail = "a free place: 1 task is running (the limit is 1; Settings → Tasks)";
    script([
      ev({ type: "session_created", task: "write greet.txt", workspace: "/ws", provider: "openai", model: "m" }),
      ev({ type: "run_started", trigger: "task" }),
      ev({ type: "status_changed", status: "queued", message: detail }),
      ev({ type: "activity", phase: "waiting", detail }),
    ]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    await waitFor(() => expect(screen.getByTestId("activity")).toHaveTextContent("Waiting for a free place: 1 task is running"));
    expect(screen.getByTestId("timeline")).not.toHaveTextContent("Waiting for you");
    // Said once, above; under TASK is the task the person typed, not the wait again.
    expect(screen.getByTestId("timeline")).not.toHaveTextContent("a free place");
    expect(screen.getByTestId("user-bubble")).toHaveTextContent("write greet.txt");
  });

  it("asks for permission inline", async () => {
    const calls: Record<string, unknown>[] = [];
    seq = 0;
    script(
      [
        ev({ type: "session_created", task: "t", workspace: "/ws", provider: "openai", model: "m" }),
        ev({ type: "permission_requested", request_id: "p1", tool: "run_command", input: { command: "ls" }, reason: "the shell" }),
        ev({ type: "status_changed", status: "awaiting_approval" }),
      ],
      calls,
    );
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    await userEvent.setup().click(await screen.findByTestId("allow-once"));
    await waitFor(() => expect(calls.find((c) => c.cmd === "respond_permission")).toMatchObject({ requestId: "p1", decision: "allow_once" }));
    expect(screen.getByTestId("status-badge")).toHaveTextContent("Waiting for you");
  });
});

describe("Session view, long sessions", () => {
  it("renders a 5k-item session without mounting every item", async () => {
    seq = 0;
    const events: Envelope[] = [ev({ type: "session_created", task: "long", workspace: "/ws", provider: "openai", model: "m" })];
    for (let i = 0; i < 5000; i++) events.push(ev({ type: "tool_call", call_id: `c${i}`, tool: "list_dir", input: {}, state: "done", output: "x" }));
    script(events);
    const { container } = render(
      <main className="content" style={{ height: 600, overflow: "auto" }}>
        <SessionView sessionId="s1" onOpenHistory={() => {}} />
      </main>,
    );
    await waitFor(() => expect(screen.getByTestId("progress-strip")).toBeInTheDocument());
    await waitFor(() => expect(container.querySelector("[data-testid=timeline] > div")).not.toBeNull());
    const mounted = container.querySelectorAll('[data-testid="tool-card"]').length;
    expect(mounted, "only the visible part of a long timeline is in the DOM").toBeLessThan(200);
  });
});

describe("Session view, loading and errors", () => {
  it("shows Loading until the first event, then the status", async () => {
    let deliver: (() => void) | null = null;
    mockIPC((cmd, args) => {
      if (cmd === "subscribe_session") {
        const channel = (args as { channel: { onmessage: (e: Envelope) => void } }).channel;
        seq = 0;
        deliver = () => channel.onmessage(ev({ type: "session_created", task: "t", workspace: "/ws", provider: "openai", model: "m" }));
        return null;
      }
    });
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    expect(await screen.findByTestId("status-badge")).toHaveAttribute("data-status", "loading");
    await waitFor(() => expect(deliver).not.toBeNull());
    deliver!();
    await waitFor(() => expect(screen.getByTestId("status-badge")).not.toHaveAttribute("data-status", "loading"));
  });

  it("a session that cannot be opened says why and offers a retry that works", async () => {
    let fail = true;
    mockIPC((cmd, args) => {
      if (cmd === "subscribe_session") {
        if (fail) throw { code: "not_found", message: "session ses_x was not found" };
        const channel = (args as { channel: { onmessage: (e: Envelope) => void } }).channel;
        seq = 0;
        setTimeout(() => channel.onmessage(ev({ type: "session_created", task: "found it", workspace: "/ws", provider: "openai", model: "m" })), 0);
        return null;
      }
    });
    const back = vi.fn();
    render(<SessionView sessionId="s1" onOpenHistory={back} />);
    expect(await screen.findByTestId("session-error")).toHaveTextContent("was not found");
    const user = userEvent.setup();
    await user.click(screen.getByText("Back to History"));
    expect(back).toHaveBeenCalled();
    fail = false;
    await user.click(screen.getByText("Try again"));
    expect(await screen.findByRole("heading", { name: "found it" })).toBeInTheDocument();
    expect(screen.queryByTestId("session-error"), "the error goes once the session opens").toBeNull();
  });

  it("shows the plan with each step's state, Step 2/3 in the progress strip, and why the plan changed", async () => {
    seq = 0;
    const step = (title: string) => ({ title, instructions: `${title}.`, criteria: [`${title} is done`], depends_on: [] });
    // The plan as the engine folds it, sent with the events that change it (the view does not fold it).
    const view = (title: string, state: StepState, more: Partial<PlanProjection["steps"][number]> = {}) => ({
      step: step(title),
      state,
      end_reason: null,
      summary: null,
      output_data: null,
      replaced_because: null,
      decided_by: null,
      ...more,
    });
    const plan = (steps: PlanProjection["steps"], more: Partial<PlanProjection> = {}): PlanProjection => ({
      mode: "on",
      steps,
      revisions: [],
      replans: 0,
      current: null,
      number: null,
      of: null,
      concluded: false,
      awaiting_review: false,
      budget_calls: 30,
      spent: { agent: 0, evaluator: 0, manager: 1 },
      ...more,
    });
    const a = view("Write a", "done", { end_reason: "verified_done", summary: "a.txt is written", output_data: "a.txt holds the port, 8123", decided_by: "checked without a model: a.txt exists ✓" });
    const replaced = { replaced_because: "b needs the data first" };
    script([
      ev({ type: "session_created", task: "write a, b and c", workspace: "/ws", provider: "openai", model: "m" }),
      ev({ type: "run_started", trigger: "task" }),
      ev({ type: "status_changed", status: "busy" }),
      ev({ type: "message_created", message_id: "u", role: "user", text: "write a, b and c" }),
      { ...ev({ type: "plan_created", mode: "on", steps: [step("Write a"), step("Write b"), step("Write c")], budget_calls: 30 }), plan: plan([view("Write a", "pending"), view("Write b", "pending"), view("Write c", "pending")]) },
      ev({ type: "run_started", trigger: "plan_step" }),
      ev({ type: "plan_step_started", index: 0, number: 1, of: 3, title: "Write a" }),
      ev({ type: "continuation", source: "plan_step", attempt: 0, max: 0, remaining: [], text: "You are on step 1 of 3" }),
      ev({ type: "plan_step_finished", index: 0, end_reason: "verified_done", summary: "a.txt is written", output_data: "a.txt holds the port, 8123" }),
      ev({ type: "run_finished", status: "busy", claim: "none", verdict: "done", end_reason: "verified_done" }),
      ev({ type: "plan_revised", first: 1, cause: "b needs the data first", steps: [step("Fetch the data"), step("Write b")] }),
      ev({ type: "run_started", trigger: "plan_step" }),
      ev({ type: "plan_step_started", index: 3, number: 2, of: 3, title: "Fetch the data" }),
      {
        ...ev({ type: "step_started", step: 1 }),
        plan: plan([a, view("Write b", "replaced", replaced), view("Write c", "replaced", replaced), view("Fetch the data", "running"), view("Write b", "pending")], {
          revisions: ["b needs the data first"],
          replans: 1,
          current: 3,
          number: 2,
          of: 3,
          spent: { agent: 1, evaluator: 0, manager: 2 },
        }),
      },
    ]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    expect(await screen.findByTestId("plan-progress")).toHaveTextContent("Step 2/3: Fetch the data");
    const steps = screen.getAllByTestId("plan-step");
    expect(steps.map((s) => s.getAttribute("data-state")), "old steps stay visible as replaced").toEqual(["done", "replaced", "replaced", "running", "pending"]);
    expect(
      steps.map((s) => s.getAttribute("value")),
      "the panel numbers the steps as the strip does (Step 2/3 is the panel's 2.); a replaced step has no number",
    ).toEqual(["1", null, null, "2", "3"]);
    expect(steps[0]).toHaveTextContent("Verified done: a.txt is written");
    expect(steps[0], "what a step produced for later steps is shown, as their briefs carry it").toHaveTextContent("For later steps: a.txt holds the port, 8123");
    expect(steps[1]).toHaveTextContent("Replaced: b needs the data first");
    // Its tick bound to the word before it: alone on a line it read as a stray mark.
    expect(steps[0].querySelector("[data-testid=step-decided-by]")?.textContent, "what decided a step, in words").toMatch(/^Checked without a model: a\.txt exists\u00a0✓$/);
    expect(steps[3], "each step shows its success criteria").toHaveTextContent("Fetch the data is done");
    expect(screen.getByTestId("plan-revised")).toHaveTextContent("b needs the data first");
    expect(screen.getByTestId("plan-budget"), "every model call of the plan counts: the manager's two and the agent's one").toHaveTextContent("3 of 30 model calls");
    expect(screen.getAllByTestId("plan-step-divider").map((d) => d.textContent)).toEqual(["Step 1/3: Write a", "Step 2/3: Fetch the data"]);
    expect(screen.getByText(/step ended/i), "the end of a plan's step, not of one of the agent's turns").toHaveTextContent("Plan step ended: Verified done");
    const brief = screen.getByTestId("continuation-card");
    expect(brief, "a step's brief is Finishline's words, not the person's").toHaveTextContent("Finishline briefed the agent for this step — not your words");
    expect(brief).not.toHaveTextContent("continuing (0/0)");
    expect(screen.getAllByTestId("user-bubble")).toHaveLength(1);
  });

  it("a failed step a revision took over says so at the step, and its checks' words are not said twice", async () => {
    seq = 0;
    const step = (title: string) => ({ title, instructions: `${title}.`, criteria: [], depends_on: [] });
    const checked = "checked without a model: b.txt exists ✗";
    const view = (title: string, state: StepState, more: Partial<PlanProjection["steps"][number]> = {}) => ({ step: step(title), state, end_reason: null, summary: null, output_data: null, replaced_because: null, decided_by: null, ...more });
    const steps = [
      view("Write a", "done", { end_reason: "verified_done" }),
      view("Write b", "failed", { end_reason: "stuck", summary: checked, decided_by: checked, superseded: true }),
      view("Fetch b", "done", { end_reason: "verified_done" }),
    ];
    const plan: PlanProjection = { mode: "on", steps, revisions: ["b needs fetching"], replans: 1, current: 2, number: 3, of: 3, concluded: true, awaiting_review: false, budget_calls: 30, spent: { agent: 3, evaluator: 0, manager: 2 } };
    script([
      ev({ type: "session_created", task: "write a and b", workspace: "/ws", provider: "openai", model: "m" }),
      ev({ type: "run_started", trigger: "plan_step" }),
      { ...ev({ type: "plan_step_finished", index: 2, end_reason: "verified_done", summary: "" }), plan },
      ev({ type: "status_changed", status: "completed" }),
    ]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const [, failed] = await screen.findAllByTestId("plan-step");
    expect(within(failed).getByTestId("step-superseded")).toHaveTextContent("The plan was revised after it failed");
    expect(within(failed).queryByTestId("step-decided-by"), "its summary says what decided it already").toBeNull();
    expect(failed.textContent?.match(/b\.txt exists/g)).toHaveLength(1);
    expect(screen.getByTestId("plan-progress")).toHaveTextContent("Plan: 2/2 steps done · revised after step 2 failed");
  });

  it("a plan the person edited at its go-ahead says what they changed", async () => {
    seq = 0;
    const step = (title: string) => ({ title, instructions: `${title}.`, criteria: [], depends_on: [] });
    const view = (title: string, state: StepState) => ({ step: step(title), state, end_reason: null, summary: null, output_data: null, replaced_because: null, decided_by: null });
    const plan: PlanProjection = {
      mode: "on",
      steps: [view("Write a", "running"), view("Write e", "pending")],
      revisions: [],
      replans: 0,
      current: 0,
      number: 1,
      of: 2,
      concluded: false,
      awaiting_review: false,
      budget_calls: 30,
      spent: { agent: 0, evaluator: 0, manager: 1 },
      person_edits: { removed: ["Write c"], added: ["Write e"], changed: [] },
    };
    script([
      ev({ type: "session_created", task: "write a, b and c", workspace: "/ws", provider: "openai", model: "m" }),
      { ...ev({ type: "plan_reviewed", approved: true, edited: true, steps: [step("Write a"), step("Write e")] }), plan },
    ]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    expect(await screen.findByTestId("plan-edits")).toHaveTextContent("You edited this plan before it ran: removed “Write c”; added “Write e”.");
  });

  it("a step its checks passed says its criterion once beside its plan, and the review's list gives a failed step the panel's badge", async () => {
    seq = 0;
    const step = (title: string, criteria: string[]) => ({ title, instructions: `${title}.`, criteria, depends_on: [] });
    const steps = [
      { step: step("Write a", ["a.txt exists"]), state: "done" as StepState, end_reason: "verified_done" as const, summary: "a.txt exists", output_data: null, replaced_because: null, decided_by: "checked without a model: a.txt exists ✓" },
      { step: step("Write b", ["b.txt exists"]), state: "failed" as StepState, end_reason: "stuck" as const, summary: "b.txt is missing", output_data: null, replaced_because: null, decided_by: null, superseded: true },
      { step: step("Fetch b", ["b.txt exists"]), state: "done" as StepState, end_reason: "verified_done" as const, summary: "", output_data: null, replaced_because: null, decided_by: null },
    ];
    const plan: PlanProjection = { mode: "on", steps, revisions: ["b needs fetching"], replans: 1, current: 2, number: 3, of: 3, concluded: true, awaiting_review: false, budget_calls: 30, spent: { agent: 3, evaluator: 1, manager: 2 } };
    script([
      ev({ type: "session_created", task: "write a and b", workspace: "/ws", provider: "openai", model: "m" }),
      ev({ type: "run_started", trigger: "plan_step" }),
      { ...ev({ type: "plan_step_finished", index: 2, end_reason: "verified_done", summary: "" }), plan },
      ev({ type: "review_requested", review_id: "r1", claim: "none", verdict: "done", end_reason: "verified_done", remaining: [], files_changed: [], verification: [] }),
      ev({ type: "status_changed", status: "awaiting_review" }),
    ]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const [done] = await screen.findAllByTestId("plan-step");
    expect(done.textContent?.match(/a\.txt exists/g), "the criterion, then the check that passed it: not a third time after 'Verified done'").toHaveLength(2);
    expect(within(done).getByTestId("step-decided-by")).toHaveTextContent("Checked without a model: a.txt exists");
    expect(screen.getByTestId("review-steps"), "the list below numbers the failed step the count leaves out").toHaveTextContent(/^2 of 2 done, plan revised 1× after step 2 failed/);
    const listed = within(screen.getByTestId("review-steps")).getAllByRole("listitem");
    expect(listed[1]).toHaveTextContent(/^Failed Write b \(stuck\): b\.txt is missing$/);
  });

  it("a plan's review counts the manager's tokens with the evaluator's and says so, beside an evaluator not asked at the end", async () => {
    seq = 0;
    const step = { title: "Write a", instructions: "Write a.", criteria: ["a is written"], depends_on: [] };
    const done = { step, state: "done" as StepState, end_reason: "verified_done" as const, summary: null, output_data: null, replaced_because: null, decided_by: null };
    const plan: PlanProjection = { mode: "on", steps: [done], revisions: [], replans: 0, current: 0, number: 1, of: 1, concluded: true, awaiting_review: false, budget_calls: 12, spent: { agent: 1, evaluator: 0, manager: 1 } };
    script([
      ev({ type: "session_created", task: "write a", workspace: "/ws", provider: "openai", model: "m" }),
      ev({ type: "run_started", trigger: "plan_step" }),
      { ...ev({ type: "plan_step_finished", index: 0, end_reason: "verified_done", summary: "" }), plan },
      ev({ type: "review_requested", review_id: "r1", claim: "none", verdict: null, end_reason: "plan_budget_spent", remaining: [], files_changed: [], verification: [], tokens: { agent: 900, evaluator: 300, compaction: 0 } }),
      ev({ type: "status_changed", status: "awaiting_review" }),
    ]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    expect(await screen.findByTestId("review-verdict")).toHaveTextContent("not asked");
    expect(screen.getByTestId("review-tokens")).toHaveTextContent("agent 900 · evaluator and manager 300 tokens");
    // The claim is the last step's: "Done!" said in an earlier step is not it.
    expect(screen.getByTestId("review-claim")).toHaveTextContent(/^no explicit claim in its last step$/);
  });

  it("a later round's review says what that round used beside the whole session's: a follow-up read the session's total as its own", async () => {
    seq = 0;
    const reviewed = (id: string, agent: number, evaluator: number, round?: number) =>
      ev({ type: "review_requested", review_id: id, claim: "none", verdict: "done", end_reason: "verified_done", remaining: [], files_changed: [], verification: [], tokens: { agent, evaluator, compaction: 0 }, cost_usd: (agent + evaluator) / 100_000, round_cost_usd: round });
    script([
      ev({ type: "session_created", task: "write a", workspace: "/ws", provider: "openai", model: "m" }),
      ev({ type: "run_started", trigger: "task" }),
      reviewed("r1", 9000, 1000),
      ev({ type: "review_resolved", review_id: "r1", decision: "approve", by: "person", feedback: null, reverted: false }),
      ev({ type: "run_started", trigger: "message" }),
      reviewed("r2", 9400, 1100, 0.005),
      ev({ type: "status_changed", status: "awaiting_review" }),
    ]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const used = await screen.findByTestId("review-tokens");
    expect(used).toHaveTextContent(/^agent 400 · evaluator 100 tokens this round \(session: 10,500\)$/);
    expect(screen.getByTestId("review-cost")).toHaveTextContent(/^\$0\.0050 this round \(session: \$0\.1050\)$/);
  });

  it("a round's cost is the engine's figure for that round, never the difference of two session totals; a history without it shows the session's", async () => {
    seq = 0;
    const reviewed = (id: string, agent: number, cost?: number, round?: number) =>
      ev({ type: "review_requested", review_id: id, claim: "none", verdict: "done", end_reason: "verified_done", remaining: [], files_changed: [], verification: [], tokens: { agent, evaluator: 0, compaction: 0 }, cost_usd: cost, round_cost_usd: round });
    const rounds = (second: () => ReturnType<typeof ev>) => [
      ev({ type: "session_created", task: "write a", workspace: "/ws", provider: "openai", model: "m" }),
      ev({ type: "run_started", trigger: "task" }),
      reviewed("r1", 9000, 0.009),
      ev({ type: "review_resolved", review_id: "r1", decision: "request_changes", by: "person", feedback: "more", reverted: false }),
      ev({ type: "run_started", trigger: "feedback" }),
      second(),
      ev({ type: "status_changed", status: "awaiting_review" }),
    ];
    // The price was raised tenfold between the rounds: 0.11 − 0.009 is not what round 2 cost.
    script(rounds(() => reviewed("r2", 11000, 0.11, 0.02)));
    const { unmount } = render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    expect(await screen.findByTestId("review-cost")).toHaveTextContent(/^\$0\.0200 this round \(session: \$0\.1100\)$/);
    unmount();
    seq = 0;
    script(rounds(() => reviewed("r2", 11000, 0.11)));
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    expect(await screen.findByTestId("review-cost"), "no round figure stored: the session's cost, said to be the session's").toHaveTextContent(/^\$0\.1100 \(session\)$/);
  });

  it("a plan's evaluations say what they judged: a step, the last step with the whole task, the whole task after it (also once resumed)", async () => {
    seq = 0;
    const judged = (cycle: number, summary: string) => ev({ type: "evaluation", cycle, verdict: "done", summary, remaining: [], parse_ok: true, stuck_reason: null, model: "judge", usage: { input_tokens: 1, output_tokens: 1 } });
    script([
      ev({ type: "session_created", task: "write a and b", workspace: "/ws", provider: "openai", model: "m" }),
      ev({ type: "run_started", trigger: "plan_step" }),
      ev({ type: "plan_step_started", index: 0, number: 1, of: 2, title: "Write a" }),
      judged(1, "a is written"),
      ev({ type: "plan_step_finished", index: 0, end_reason: "verified_done", summary: "a is written" }),
      ev({ type: "run_started", trigger: "plan_step" }),
      ev({ type: "plan_step_started", index: 1, number: 2, of: 2, title: "Write b" }),
      judged(1, "b is written, and a"),
      ev({ type: "plan_step_finished", index: 1, end_reason: "verified_done", summary: "b is written" }),
      judged(2, "the whole task is done"),
      ev({ type: "run_started", trigger: "resume" }),
      judged(3, "still done"),
    ]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    await waitFor(() => expect(screen.getAllByTestId("verdict-card")).toHaveLength(4));
    expect(screen.getAllByTestId("verdict-card").map((c) => c.querySelector(".card-head")?.textContent?.trim())).toEqual([
      "Evaluator: done",
      "Evaluator, on the last step and the whole task: done",
      "Evaluator, on the whole task: done",
      "Evaluator, on the whole task: done",
    ]);
  });

  it("a plan's meter after the person's feedback counts the new round's calls and says so: it went from 9 to 2 with no word why", async () => {
    seq = 0;
    const step = { title: "Add LICENSE", instructions: "Add LICENSE.", criteria: ["LICENSE exists"], depends_on: [] };
    const running = { step, state: "running" as StepState, end_reason: null, summary: null, output_data: null, replaced_because: null, decided_by: null };
    const plan: PlanProjection = { mode: "on", steps: [running], revisions: ["the person wants a LICENSE"], replans: 0, current: 0, number: 1, of: 1, concluded: false, awaiting_review: false, budget_calls: 107, spent: { agent: 1, evaluator: 0, manager: 1 }, rounds: 1 };
    script([
      ev({ type: "session_created", task: "tidy up", workspace: "/ws", provider: "openai", model: "m" }),
      ev({ type: "run_started", trigger: "feedback" }),
      { ...ev({ type: "step_started", step: 1 }), plan },
    ]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const meter = await screen.findByTestId("plan-budget");
    expect(meter).toHaveTextContent("2 of 107 model calls this round");
    expect(meter.getAttribute("title")).toMatch(/your feedback started a new round/i);
  });

  it("a concluded plan shows its steps done, not its last step's 'Turn 1'; a follow-up after it counts steps", async () => {
    seq = 0;
    const step = { title: "Write a", instructions: "Write a.", criteria: ["a is written"], depends_on: [] };
    const done = { step, state: "done" as StepState, end_reason: "verified_done" as const, summary: null, output_data: null, replaced_because: null, decided_by: null };
    const plan: PlanProjection = { mode: "on", steps: [done], revisions: [], replans: 0, current: 0, number: 1, of: 1, concluded: true, awaiting_review: false, budget_calls: 12, spent: { agent: 1, evaluator: 1, manager: 1 } };
    const events = [
      ev({ type: "session_created", task: "write a", workspace: "/ws", provider: "openai", model: "m" }),
      ev({ type: "run_started", trigger: "plan_step" }),
      ev({ type: "step_started", step: 1 }),
      { ...ev({ type: "plan_step_finished", index: 0, end_reason: "verified_done", summary: "" }), plan },
      ev({ type: "review_requested", review_id: "r1", claim: "none", verdict: "done", end_reason: "verified_done", remaining: [], files_changed: [], verification: [], tokens: { agent: 900, evaluator: 300, compaction: 0 } }),
      ev({ type: "status_changed", status: "awaiting_review" }),
    ];
    script(events);
    const { unmount } = render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    expect(await screen.findByTestId("plan-progress")).toHaveTextContent("Plan: 1/1 steps done");
    expect(screen.queryByTestId("step-count"), "the plan is over: its last step's turn is no news").toBeNull();
    unmount();
    script([...events, ev({ type: "run_started", trigger: "message" }), ev({ type: "step_started", step: 1 }), ev({ type: "status_changed", status: "busy" })]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    expect(await screen.findByTestId("step-count"), "an ordinary run after the plan counts steps, and says it is after the plan").toHaveTextContent("After the plan: step 1");
  });

  it("a plan cancelled between its steps says after which step it stopped, and what Resume does next", async () => {
    seq = 0;
    const step = (title: string) => ({ title, instructions: `${title}.`, criteria: [], depends_on: [] });
    const view = (title: string, state: StepState) => ({ step: step(title), state, end_reason: state === "done" ? ("verified_done" as const) : null, summary: null, output_data: null, replaced_because: null, decided_by: null });
    const plan: PlanProjection = { mode: "on", steps: [view("Write a", "done"), view("Write b", "pending")], revisions: [], replans: 0, current: 0, number: 1, of: 2, concluded: false, awaiting_review: false, budget_calls: 12, spent: { agent: 1, evaluator: 1, manager: 1 } };
    script([
      ev({ type: "session_created", task: "write a and b", workspace: "/ws", provider: "openai", model: "m" }),
      ev({ type: "run_started", trigger: "plan_step" }),
      ev({ type: "plan_step_started", index: 0, number: 1, of: 2, title: "Write a" }),
      ev({ type: "step_started", step: 1 }),
      { ...ev({ type: "plan_step_finished", index: 0, end_reason: "verified_done", summary: "a is written" }), plan },
      ev({ type: "run_finished", status: "cancelled", claim: "none", verdict: null, end_reason: "cancelled" }),
      ev({ type: "status_changed", status: "cancelled" }),
    ]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    expect(await screen.findByTestId("plan-progress")).toHaveTextContent("Stopped after step 1/2");
    expect(screen.queryByTestId("step-count"), "the ended step's last turn is no news").toBeNull();
    expect(screen.getByTestId("plan-resume")).toHaveTextContent("Resume goes on with step 2/2: Write b.");
    expect(screen.getByTestId("send-message")).toHaveTextContent("Resume");
  });

  it("a plan's final check resumed after a cancel is the plan's, not a run after it; a resumed run shows no turn of the run before", async () => {
    seq = 0;
    const step = (title: string) => ({ title, instructions: `${title}.`, criteria: [], depends_on: [] });
    const view = (title: string) => ({ step: step(title), state: "done" as StepState, end_reason: "verified_done" as const, summary: null, output_data: null, replaced_because: null, decided_by: null });
    const base: PlanProjection = { mode: "on", steps: [view("Write a"), view("Write b")], revisions: [], replans: 0, current: 1, number: 2, of: 2, concluded: false, awaiting_review: false, budget_calls: 12, spent: { agent: 2, evaluator: 2, manager: 1 } };
    const before = [
      ev({ type: "session_created", task: "write a and b", workspace: "/ws", provider: "openai", model: "m" }),
      ev({ type: "run_started", trigger: "plan_step" }),
      ev({ type: "plan_step_started", index: 1, number: 2, of: 2, title: "Write b" }),
      ev({ type: "step_started", step: 1 }),
      { ...ev({ type: "plan_step_finished", index: 1, end_reason: "verified_done", summary: "b" }), plan: base },
      ev({ type: "run_finished", status: "cancelled", claim: "none", verdict: null, end_reason: "cancelled" }),
      ev({ type: "status_changed", status: "cancelled" }),
      ev({ type: "run_started", trigger: "message" }),
      ev({ type: "status_changed", status: "busy" }),
    ];
    script(before);
    const { unmount } = render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    expect(await screen.findByTestId("plan-progress")).toHaveTextContent("Step 2/2 done · final check of the whole task");
    expect(screen.queryByTestId("step-count"), "no agent turn runs: the last run's Turn 1 is no news").toBeNull();
    unmount();
    script([
      ...before,
      { ...ev({ type: "review_requested", review_id: "r1", claim: "none", verdict: "done", end_reason: "verified_done", remaining: [], files_changed: [], verification: [], tokens: { agent: 9, evaluator: 3, compaction: 0 } }), plan: { ...base, concluded: true } },
      ev({ type: "status_changed", status: "awaiting_review" }),
    ]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    expect(await screen.findByTestId("plan-progress")).toHaveTextContent("Plan: 2/2 steps done");
    expect(screen.queryByText(/After the plan/), "the final check was the plan's own").toBeNull();
  });

  it("the note's hint says where a note goes: without the plan, or to the plan's revision", async () => {
    seq = 0;
    const step = (title: string) => ({ title, instructions: `${title}.`, criteria: [], depends_on: [] });
    const skipped = (title: string) => ({ step: step(title), state: "skipped" as StepState, end_reason: null, summary: null, output_data: null, replaced_because: null, decided_by: null });
    const declined: PlanProjection = { mode: "on", steps: [skipped("Write a"), skipped("Write b")], revisions: [], replans: 0, current: null, number: null, of: null, concluded: true, awaiting_review: false, declined: true, budget_calls: 12, spent: { agent: 0, evaluator: 0, manager: 1 } };
    script([
      ev({ type: "session_created", task: "write a and b", workspace: "/ws", provider: "openai", model: "m" }),
      ev({ type: "run_started", trigger: "task" }),
      { ...ev({ type: "plan_reviewed", approved: false, edited: false, steps: [] }), plan: declined },
      ev({ type: "run_finished", status: "cancelled", claim: "none", verdict: null, end_reason: "cancelled" }),
      ev({ type: "status_changed", status: "cancelled" }),
    ]);
    const { unmount } = render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    expect(await screen.findByTestId("plan-resume")).toHaveTextContent("Resume brings the plan back for your go-ahead");
    expect(screen.getByTestId("message-input").getAttribute("placeholder")).toBe("Or a note, to run the task as one run without the plan");
    unmount();
    seq = 0;
    const failed = { step: step("Write a"), state: "failed" as StepState, end_reason: "stuck" as const, summary: null, output_data: null, replaced_because: null, decided_by: null };
    const atFailed: PlanProjection = { ...declined, declined: false, concluded: false, steps: [failed, { ...skipped("Write b"), state: "pending" }], current: 0, number: 1, of: 2 };
    script([
      ev({ type: "session_created", task: "write a and b", workspace: "/ws", provider: "openai", model: "m" }),
      ev({ type: "run_started", trigger: "plan_step" }),
      { ...ev({ type: "plan_step_finished", index: 0, end_reason: "stuck", summary: "" }), plan: atFailed },
      ev({ type: "run_finished", status: "cancelled", claim: "none", verdict: null, end_reason: "cancelled" }),
      ev({ type: "status_changed", status: "cancelled" }),
    ]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    expect(await screen.findByTestId("plan-progress")).toHaveTextContent("Stopped after step 1/2 failed");
    expect(screen.getByTestId("message-input").getAttribute("placeholder")).toBe("Optional note for the plan's revision");
  });

  it("a task the manager ran as one step (plan mode auto) counts the manager's tokens with the evaluator's and says so, with no plan shown", async () => {
    seq = 0;
    script([
      ev({ type: "session_created", task: "write a", workspace: "/ws", provider: "openai", model: "m" }),
      ev({ type: "run_started", trigger: "task" }),
      ev({ type: "tokens_spent", source: "evaluator", usage: { input_tokens: 250, output_tokens: 50 } }),
      ev({ type: "activity", phase: "thinking", detail: "one step is enough: running the task as one run" }),
      ev({ type: "review_requested", review_id: "r1", claim: "none", verdict: null, end_reason: "verified_done", remaining: [], files_changed: [], verification: [], tokens: { agent: 900, evaluator: 300, compaction: 0 } }),
      ev({ type: "status_changed", status: "awaiting_review" }),
    ]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    expect(await screen.findByTestId("review-tokens")).toHaveTextContent("agent 900 · evaluator and manager 300 tokens");
  });

  it("a step the person cancelled reads Stopped, not Running, and says a resume goes on with it", async () => {
    seq = 0;
    const step = (title: string) => ({ title, instructions: `${title}.`, criteria: [`${title} is done`], depends_on: [] });
    const view = (title: string, state: StepState) => ({ step: step(title), state, end_reason: null, summary: null, output_data: null, replaced_because: null, decided_by: null });
    const plan = (a: StepState, b: StepState): PlanProjection => ({
      mode: "on",
      steps: [view("Write a", a), view("Write b", b)],
      revisions: [],
      replans: 0,
      current: 1,
      number: 2,
      of: 2,
      concluded: false,
      awaiting_review: false,
      budget_calls: 30,
      spent: { agent: 2, evaluator: 1, manager: 1 },
    });
    script([
      ev({ type: "session_created", task: "write a and b", workspace: "/ws", provider: "openai", model: "m" }),
      ev({ type: "run_started", trigger: "plan_step" }),
      { ...ev({ type: "plan_step_started", index: 1, number: 2, of: 2, title: "Write b" }), plan: plan("done", "running") },
      ev({ type: "status_changed", status: "busy" }),
      ev({ type: "run_finished", status: "cancelled", claim: "none", verdict: null, end_reason: "cancelled" }),
      ev({ type: "status_changed", status: "cancelled" }),
    ]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const steps = await screen.findAllByTestId("plan-step");
    const state = within(steps[1]).getByText("Stopped");
    expect(state).toHaveAttribute("title", expect.stringMatching(/resume goes on with this step/i));
    expect(screen.queryByText("Running"), "nothing runs").toBeNull();
  });
});

describe("a plan that waits for its go-ahead", () => {
  function waitingPlan(calls: Record<string, unknown>[] = []) {
    seq = 0;
    const step = (title: string) => ({ title, instructions: `${title}.`, criteria: [`${title} is done`], depends_on: [] });
    const view = (title: string) => ({ step: step(title), state: "pending" as StepState, end_reason: null, summary: null, output_data: null, replaced_because: null, decided_by: null });
    const plan: PlanProjection = {
      mode: "on",
      steps: [view("Write a.txt"), view("Write b.txt")],
      revisions: [],
      replans: 0,
      current: null,
      number: null,
      of: null,
      concluded: false,
      awaiting_review: true,
      budget_calls: 30,
      spent: { agent: 0, evaluator: 0, manager: 1 },
    };
    script(
      [
        ev({ type: "session_created", task: "write a.txt and b.txt", workspace: "/ws", provider: "openai", model: "m" }),
        ev({ type: "run_started", trigger: "task" }),
        { ...ev({ type: "plan_created", mode: "on", steps: [step("Write a.txt"), step("Write b.txt")], budget_calls: 30, awaiting_review: true }), plan },
        ev({ type: "status_changed", status: "awaiting_approval" }),
      ],
      calls,
    );
  }

  it("a plan waiting for review is shown once, in its editor, which says what the plan may spend", async () => {
    waitingPlan();
    render(<SessionView sessionId="s-once" onOpenHistory={() => {}} />);
    const review = await screen.findByTestId("plan-review");
    expect(screen.queryByTestId("plan-panel"), "not a second, read-only copy of the steps beside the editor").toBeNull();
    expect(review, "making the plan took one of its calls").toHaveTextContent("29 of the plan's 30 model calls are left");
  });

  it("the plan's editor shows the task it plans for: the transcript above it had room for none of it", async () => {
    waitingPlan();
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const review = await screen.findByTestId("plan-review");
    expect(within(review).getByTestId("plan-task")).toHaveTextContent("Your task: write a.txt and b.txt");
    expect(screen.queryByTestId("typing"), "'Waiting for you…' under it said again what the badge and the editor say").toBeNull();
  });

  it("Esc asks before cancelling it in words that fit: nothing ran yet, no agent stops", async () => {
    waitingPlan();
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    await screen.findByTestId("plan-review");
    await userEvent.setup().keyboard("{Escape}");
    const ask = await screen.findByTestId("confirm-cancel");
    expect(ask).toHaveTextContent("Cancel the task?");
    expect(ask).toHaveTextContent("Its plan has not run, so nothing was changed");
    expect(ask).not.toHaveTextContent("The agent stops where it is");
  });

  it("a plan waiting for review offers one Cancel, the plan's own, which keeps the person's edits when they keep them", async () => {
    const calls: Record<string, unknown>[] = [];
    waitingPlan(calls);
    render(<SessionView sessionId="s-edited" onOpenHistory={() => {}} />);
    const user = userEvent.setup();
    await screen.findByTestId("plan-review");
    expect(screen.queryByTestId("cancel"), "not a second Cancel in the header").toBeNull();
    expect(screen.getAllByRole("button", { name: /cancel/i }), "one way to cancel").toHaveLength(1);
    await user.type(screen.getAllByTestId("plan-edit-title")[0], " first");
    await user.click(screen.getByTestId("plan-cancel"));
    const ask = await screen.findByTestId("confirm-cancel");
    expect(ask).toHaveTextContent("your edits to the plan are lost with it");
    expect(calls.some((c) => c.cmd === "cancel_run"), "nothing is cancelled before the person confirms").toBe(false);
    await user.click(screen.getByTestId("confirm-cancel-keep"));
    expect(screen.getAllByTestId("plan-edit-title")[0], "the edits are kept").toHaveValue("Write a.txt first");
    expect(calls.some((c) => c.cmd === "cancel_run")).toBe(false);
  });

  it("the header's Cancel says that it cancels at once and that Esc asks first", async () => {
    seq = 0;
    script([
      ev({ type: "session_created", task: "t", workspace: "/ws", provider: "openai", model: "m" }),
      ev({ type: "run_started", trigger: "task" }),
      ev({ type: "status_changed", status: "busy" }),
    ]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    expect(await screen.findByTestId("cancel")).toHaveAttribute("title", "Cancel the task now (Esc asks first)");
  });
});

describe("the review of a plan that did not finish", () => {
  it("says the evaluator's last word was on a step, not the whole task, and does not offer Approve as the way", async () => {
    seq = 0;
    const step = (title: string) => ({ title, instructions: `${title}.`, criteria: [`${title} is done`], depends_on: [] });
    const view = (title: string, state: StepState, end_reason: PlanProjection["steps"][number]["end_reason"] = null) => ({
      step: step(title),
      state,
      end_reason,
      summary: null,
      output_data: null,
      replaced_because: null,
      decided_by: null,
    });
    const plan: PlanProjection = {
      mode: "on",
      steps: [view("Write a.txt", "done", "verified_done"), view("Write b.txt", "skipped")],
      revisions: [],
      replans: 0,
      current: 0,
      number: 1,
      of: 2,
      concluded: true,
      awaiting_review: false,
      budget_calls: 3,
      spent: { agent: 1, evaluator: 1, manager: 1 },
    };
    script([
      ev({ type: "session_created", task: "write a.txt and b.txt", workspace: "/ws", provider: "openai", model: "m" }),
      ev({ type: "run_started", trigger: "task" }),
      { ...ev({ type: "plan_created", mode: "on", steps: [step("Write a.txt"), step("Write b.txt")], budget_calls: 3 }), plan },
      ev({
        type: "review_requested",
        review_id: "r1",
        claim: "none",
        verdict: "done",
        verdict_summary: "the file is written",
        verdict_on_step: "Step 1: Write a.txt",
        end_reason: "plan_budget_spent",
        remaining: ["Step not done: Write b.txt"],
        files_changed: [],
        verification: [],
      }),
      ev({ type: "status_changed", status: "awaiting_review" }),
    ]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    expect(await screen.findByTestId("review-verdict")).toHaveTextContent("done (its word on Step 1: Write a.txt, not on the whole task): the file is written");
    expect(screen.getByTestId("approve"), "approving partial work is possible, not the highlighted way").not.toHaveClass("primary");
  });
});

describe("Log in to an external agent", () => {
  const needsLogin = () => {
    seq = 0;
    return [
      ev({ type: "session_created", task: "write a.txt", workspace: "/ws", provider: "acp", model: "claude-code" }),
      ev({ type: "run_started", trigger: "task" }),
      ev({ type: "status_changed", status: "busy" }),
      ev({
        type: "agent_login_needed",
        agent: "claude-code",
        label: "Claude Code",
        message: "Claude Code needs you to log in (authentication required).",
        methods: [
          { type: "terminal", id: "console-login", name: "Anthropic Console", command: "/usr/bin/claude-agent-acp", args: ["--cli", "auth", "login", "--console"], env: {} },
          { type: "key", id: "api-key", name: "API Key", vars: ["ANTHROPIC_API_KEY"], authenticate: false },
        ],
      }),
      ev({ type: "error", code: "external_agent_auth", message: "Claude Code needs you to log in (authentication required)." }),
      ev({ type: "status_changed", status: "failed" }),
    ];
  };

  it("an expired login shows a Log in button per way the agent offers, and after the login the task runs again", async () => {
    const calls: Record<string, unknown>[] = [];
    script(needsLogin(), calls);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const card = await screen.findByTestId("agent-login");
    expect(card).toHaveTextContent("Log in to Claude Code");
    expect(card, "the terminal way shows the agent's own command").toHaveTextContent("claude-agent-acp --cli auth login --console");
    await userEvent.click(screen.getByTestId("login-run-console-login"));
    await waitFor(() => expect(calls.find((c) => c.cmd === "agent_login")).toMatchObject({ sessionId: "s1", methodId: "console-login", key: null }));
    await waitFor(() => expect(calls.find((c) => c.cmd === "send_message"), "once logged in, the task runs again").toMatchObject({ sessionId: "s1", message: "" }));
  });

  it("a key is sent once for the keychain and never shown again", async () => {
    const calls: Record<string, unknown>[] = [];
    script(needsLogin(), calls);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const user = userEvent.setup();
    const input = await screen.findByTestId("login-key-api-key");
    expect(input).toHaveAttribute("type", "password");
    expect(screen.getByTestId("login-save-api-key"), "nothing to save before a key is typed").toBeDisabled();
    await user.type(input, "sk-ant-123");
    await user.click(screen.getByTestId("login-save-api-key"));
    await waitFor(() => expect(calls.find((c) => c.cmd === "agent_login")).toMatchObject({ methodId: "api-key", key: "sk-ant-123" }));
  });

  it("Enter in the key field saves it, as its button would", async () => {
    const calls: Record<string, unknown>[] = [];
    script(needsLogin(), calls);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    await userEvent.setup().type(await screen.findByTestId("login-key-api-key"), "sk-ant-456{Enter}");
    await waitFor(() => expect(calls.find((c) => c.cmd === "agent_login")).toMatchObject({ methodId: "api-key", key: "sk-ant-456" }));
  });

  it("an agent that offers no way to log in from here has the Retry its words promise, for after a login in a terminal", async () => {
    const calls: Record<string, unknown>[] = [];
    script(
      needsLogin().map((e) => (e.type === "agent_login_needed" ? { ...e, methods: [] } : e)),
      calls,
    );
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const card = await screen.findByTestId("agent-login");
    expect(card).toHaveTextContent("then click Retry");
    await userEvent.click(within(card).getByRole("button", { name: /Retry/ }));
    await waitFor(() => expect(calls.find((c) => c.cmd === "send_message"), "the task runs again").toMatchObject({ sessionId: "s1", message: "" }));
  });
});
