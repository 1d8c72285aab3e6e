import { describe, expect, it } from "vitest";
import { sentence, type EngineEvent, type Envelope } from "../ipc";
import { apply, decidedByText, emptyModel, landedText, runLabel, stepSummary, stepsDone, type PlanStepView } from "../session/model";

let seq = 0;
const ev = (e: EngineEvent): Envelope => ({ ...e, seq: ++seq, session_id: "s", at: "2026-11-21T00:00:00Z" }) as Envelope;

const wt = (folder: string) => ({ repo: "/repo", folder, subdir: "", branch: `finishline/${folder}`, base_branch: "main", base_commit: "1111111" });

describe("session model", () => {
  it("a run cut short by Finishline closing ends its clock at its last work and says it stopped; the resumed run has a clock of its own", () => {
    seq = 0;
    const at = (iso: string, e: EngineEvent): Envelope => ({ ...e, seq: ++seq, session_id: "s", at: iso }) as Envelope;
    const m = [
      at("2026-11-21T00:00:00Z", { type: "run_started", trigger: "task" }),
      at("2026-11-21T00:00:05Z", { type: "tool_call", call_id: "c1", message_id: "m1", tool: "run_command", input: { command: "sleep 300" }, state: "running" } as EngineEvent),
      // Found at the next start, an hour later.
      at("2026-11-21T01:00:00Z", { type: "tool_call", call_id: "c1", message_id: "m1", tool: "run_command", input: null, state: "unknown", output: "Finishline stopped while this ran; its outcome is unknown." } as EngineEvent),
      at("2026-11-21T01:00:00Z", { type: "status_changed", status: "interrupted", message: "Finishline stopped while this session was running. Resume it to continue." } as EngineEvent),
    ].reduce(apply, emptyModel());
    expect(m.runClock).toEqual({ startedAt: Date.parse("2026-11-21T00:00:00Z"), finishedAt: Date.parse("2026-11-21T00:00:05Z") });
    expect(m.items.at(-1)).toMatchObject({ kind: "stopped" });
    const resumed = apply(m, at("2026-11-21T01:00:01Z", { type: "run_started", trigger: "resume" }));
    expect(resumed.runClock).toEqual({ startedAt: Date.parse("2026-11-21T01:00:01Z") });
  });

  it("a model switched from a terminal is the session's model from then on, and said in the timeline", () => {
    seq = 0;
    const m = [
      ev({ type: "session_created", task: "t", workspace: "/w", provider: "openai", model: "nope" }),
      ev({ type: "run_started", trigger: "message" }),
      ev({ type: "model_switched", from: "nope", to: "good" }),
    ].reduce(apply, emptyModel());
    expect(m.model).toBe("good");
    expect(m.items.some((i) => i.kind === "landing" && i.text === "Goes on with the model good (it was nope).")).toBe(true);
  });

  it("a landing blocked the same way again counts its tries in one note, and a new reason gets its own", () => {
    seq = 0;
    const blocked = (detail: string) => ev({ type: "landing_blocked", reason: "your_edits", files: ["a.txt"], detail });
    const m = [blocked("you are editing a.txt"), blocked("you are editing a.txt"), blocked("you are editing a.txt"), blocked("main moved on")].reduce(apply, emptyModel());
    const notes = m.items.filter((i) => i.kind === "landing") as Extract<(typeof m.items)[number], { kind: "landing" }>[];
    expect(notes.map((n) => [n.text, n.times ?? 1])).toEqual([
      ["Not landed: you are editing a.txt", 3],
      ["Not landed: main moved on", 1],
    ]);
  });

  it("tried again with the checks' output between, a landing blocked the same way is still one note, after the latest output", () => {
    seq = 0;
    const blocked = () => ev({ type: "landing_blocked", reason: "verification_failed", files: [], detail: "the checks fail on main" });
    const checks = () => ev({ type: "verification", command: "npm test", exit_code: 1, output_tail: "1 failed", skipped: false } as EngineEvent);
    const m = [checks(), blocked(), checks(), blocked()].reduce(apply, emptyModel());
    expect(m.items.map((i) => (i.kind === "landing" ? `${i.text} ×${i.times ?? 1}` : i.kind))).toEqual(["verification", "verification", "Not landed: the checks fail on main ×2"]);
    // The agent's run between two tries ends the episode: the next block is a note of its own.
    const later = [ev({ type: "run_started", trigger: "feedback" }), blocked()].reduce(apply, m);
    expect(later.items.filter((i) => i.kind === "landing")).toHaveLength(2);
  });

  it("a rebase before landing names the person's branch it moved the task's commits onto", () => {
    seq = 0;
    const m = [
      ev({ type: "task_workspace", isolation: "worktree", folder: "/w/first", worktree: wt("/w/first") }),
      ev({ type: "rebased", onto: "2222222" }),
    ].reduce(apply, emptyModel());
    const note = m.items.find((i) => i.kind === "landing") as Extract<(typeof m.items)[number], { kind: "landing" }>;
    expect(note.text).toBe("“main” moved on while the task ran: the task's commits were moved on top of it (rebased), to land there.");
  });

  it("a rebase that landed with no check run again on it says so; one whose checks ran leaves them to speak", () => {
    const start = () => [ev({ type: "task_workspace", isolation: "worktree", folder: "/w/first", worktree: wt("/w/first") }), ev({ type: "rebased", onto: "2222222" })];
    const landed = () => ev({ type: "landed", mode: "squash", target_branch: "main", commit: "3333333", files: ["a.txt"] });
    const note = (m: ReturnType<typeof emptyModel>) => (m.items.find((i) => i.kind === "landing") as { text: string }).text;
    seq = 0;
    const unchecked = [...start(), landed()].reduce(apply, emptyModel());
    expect(note(unchecked)).toBe("“main” moved on while the task ran: the task's commits were moved on top of it (rebased), to land there. No check command is set for this workspace, so nothing was run again on the result.");
    seq = 0;
    const checked = [...start(), ev({ type: "verification", command: "npm test", exit_code: 0, output_tail: "ok", skipped: false } as EngineEvent), landed()].reduce(apply, emptyModel());
    expect(note(checked)).toBe("“main” moved on while the task ran: the task's commits were moved on top of it (rebased), to land there.");
    // A later round that lands without a rebase leaves the earlier note as it was.
    const again = [landed()].reduce(apply, unchecked);
    expect(note(again)).toBe(note(unchecked));
  });

  it("names a run the person started with words a new message, and one started without (Retry) a try again", () => {
    seq = 0;
    const events = [
      ev({ type: "run_started", trigger: "task" }),
      ev({ type: "status_changed", status: "failed" }),
      ev({ type: "run_started", trigger: "message" }),
      ev({ type: "status_changed", status: "failed" }),
      ev({ type: "run_started", trigger: "message" }),
      ev({ type: "message_created", message_id: "u", role: "user", text: "use the other endpoint" }),
      ev({ type: "status_changed", status: "completed" }),
      // After a decision the new worktree's note comes before the person's words.
      ev({ type: "run_started", trigger: "message" }),
      ev({ type: "continuation", source: "new_worktree", attempt: 0, max: 0, remaining: [], text: "You now work in a new worktree" }),
      ev({ type: "message_created", message_id: "c", role: "continuation", source: "new_worktree", text: "You now work in a new worktree" }),
      ev({ type: "message_created", message_id: "u2", role: "user", text: "also a README" }),
    ];
    const m = events.reduce(apply, emptyModel());
    expect(m.items.filter((i) => i.kind === "run").map((i) => runLabel(i as Extract<typeof i, { kind: "run" }>))).toEqual(["Task", "Tried again", "New message", "New message"]);
  });

  it("names a run the Resume button started after a cancel a resume, not a try again", () => {
    seq = 0;
    const events = [
      ev({ type: "run_started", trigger: "task" }),
      ev({ type: "status_changed", status: "cancelled" }),
      ev({ type: "run_started", trigger: "message" }),
      ev({ type: "status_changed", status: "cancelled" }),
      ev({ type: "run_started", trigger: "message" }),
      ev({ type: "message_created", message_id: "u", role: "user", text: "and a README" }),
    ];
    const m = events.reduce(apply, emptyModel());
    expect(m.items.filter((i) => i.kind === "run").map((i) => runLabel(i as Extract<typeof i, { kind: "run" }>))).toEqual(["Task", "Resumed", "New message"]);
  });

  it("the run the agent is sent back in to resolve a landing is not headed as the person's feedback", () => {
    seq = 0;
    const events = [
      ev({ type: "run_started", trigger: "task" }),
      ev({ type: "review_requested", review_id: "r1", claim: "success", verdict: "done", end_reason: "verified_done", remaining: [], files_changed: [], verification: [] }),
      ev({ type: "landing_blocked", reason: "conflict", files: ["README.md"], detail: "main moved on" }),
      ev({ type: "review_resolved", review_id: "r1", decision: "request_changes", by: "person", feedback: null, reverted: false, occasion: "resolve_landing" }),
      ev({ type: "run_started", trigger: "feedback" }),
      ev({ type: "review_requested", review_id: "r2", claim: "success", verdict: "done", end_reason: "verified_done", remaining: [], files_changed: [], verification: [] }),
      ev({ type: "review_resolved", review_id: "r2", decision: "request_changes", by: "person", feedback: "and a test", reverted: false }),
      ev({ type: "run_started", trigger: "feedback" }),
    ];
    const m = events.reduce(apply, emptyModel());
    expect(m.items.filter((i) => i.kind === "run").map((i) => runLabel(i as Extract<typeof i, { kind: "run" }>))).toEqual(["Task", "Resolving the landing", "Your feedback"]);
  });

  it("shows a continuation as its own card, never as the person's message", () => {
    seq = 0;
    const events = [
      ev({ type: "message_created", message_id: "u", role: "user", text: "write a and b" }),
      ev({ type: "continuation", source: "evaluator", attempt: 2, max: 5, remaining: ["b.txt", "c.txt"], text: "b.txt is missing" }),
      ev({ type: "message_created", message_id: "c", role: "continuation", source: "evaluator", text: "b.txt is missing" }),
    ];
    const m = events.reduce(apply, emptyModel());
    const users = m.items.filter((i) => i.kind === "user");
    expect(users.map((u) => (u.kind === "user" ? u.text : "")), "only the person's words are user items").toEqual(["write a and b"]);
    const cards = m.items.filter((i) => i.kind === "continuation");
    expect(cards).toHaveLength(1);
    expect(m.cycle).toEqual({ n: 2, max: 5 });
  });

  it("keeps a follow-up's new worktree when the old one's removal is recorded after it", () => {
    seq = 0;
    const events = [
      ev({ type: "task_workspace", isolation: "worktree", folder: "/w/first", worktree: wt("/w/first") }),
      ev({ type: "status_changed", status: "rejected" }),
      ev({ type: "task_workspace", isolation: "worktree", folder: "/w/second", worktree: wt("/w/second") }),
      ev({ type: "worktree_removed", folder: "/w/first", why: "rejected", branch_deleted: "finishline//w/first" }),
    ];
    const m = events.reduce(apply, emptyModel());
    expect(m.place?.worktree?.folder).toBe("/w/second");
    expect(m.place?.removed, "the task's current worktree is still there").toBeFalsy();
    expect(apply(m, ev({ type: "worktree_removed", folder: "/w/second", why: "landed" })).place?.removed).toBe(true);
  });

  it("says a worktree put away unused held nothing, and that a message starts a new one", () => {
    seq = 0;
    const m = [
      ev({ type: "task_workspace", isolation: "worktree", folder: "/w/first", worktree: wt("/w/first") }),
      ev({ type: "worktree_removed", folder: "/w/first", why: "unused", branch_deleted: "finishline/first" }),
    ].reduce(apply, emptyModel());
    expect(m.place?.removed).toBe(true);
    const notes = m.items.flatMap((i) => (i.kind === "landing" ? [i.text] : []));
    expect(notes).toEqual(["Nothing was changed, so its worktree and branch were removed: a message to go on starts a new one."]);
  });

  it("says a discarded task's worktree and branch were removed, which a rejected review's own words already say", () => {
    seq = 0;
    const notes = (events: Envelope[]) => events.reduce(apply, emptyModel()).items.flatMap((i) => (i.kind === "landing" ? [i.text] : []));
    const started = () => [ev({ type: "task_workspace", isolation: "worktree", folder: "/w/first", worktree: wt("/w/first") }), ev({ type: "run_started", trigger: "task" })];
    const removed = (branch_deleted: string | null) => ev({ type: "worktree_removed", folder: "/w/first", why: "rejected", branch_deleted });
    expect(notes([...started(), ev({ type: "status_changed", status: "cancelled" }), ev({ type: "status_changed", status: "rejected" }), removed("finishline/first")])).toEqual([
      "Discarded: its worktree and the branch finishline/first were removed (History keeps what it did); a message to go on starts a new worktree.",
    ]);
    expect(notes([...started(), ev({ type: "status_changed", status: "cancelled" }), ev({ type: "status_changed", status: "rejected" }), removed(null)]), "kept, the branch has its own note").toEqual([
      "Put away: its worktree was removed; a message to go on starts a new worktree.",
    ]);
    // Made in order: a model takes an event only once, by its number.
    const review = () => ev({ type: "review_requested", review_id: "r1", claim: "success", verdict: "done", end_reason: "verified_done", remaining: [], files_changed: [], verification: [] });
    const resolved = (decision: "reject" | "request_changes") => ev({ type: "review_resolved", review_id: "r1", decision, by: "person", feedback: null, reverted: false });
    expect(notes([...started(), review(), resolved("reject"), removed("finishline/first")]), "a review's Reject says it in its decision").toEqual([]);
    expect(notes([...started(), review(), resolved("request_changes"), ev({ type: "run_started", trigger: "feedback" }), ev({ type: "status_changed", status: "cancelled" }), removed("finishline/first")]), "sent back, then cancelled and discarded").toEqual([
      "Discarded: its worktree and the branch finishline/first were removed (History keeps what it did); a message to go on starts a new worktree.",
    ]);
  });

  it("says the branch already held the change when a reviewed change lands as nothing, not that the task changed nothing", () => {
    const l = { mode: "squash" as const, target_branch: "master", commit: null, branch_kept: null, files: [] };
    expect(landedText(l, 1)).toBe("Nothing to land: master already holds everything the task changed.");
    expect(landedText(l, 0)).toBe("Nothing to land: the task left every file git tracks as it was.");
  });

  it("landed on a branch the person's checkout is not on, says their files did not change and how to see the work", () => {
    seq = 0;
    const landing = (checkout_elsewhere?: { branch: string } | "no_branch") =>
      [ev({ type: "landed", mode: "squash", target_branch: "main", commit: "9e96867abc", files: ["moved.txt"], checkout_elsewhere })]
        .reduce(apply, emptyModel())
        .items.flatMap((i) => (i.kind === "landing" ? [i.text] : []));
    expect(landing({ branch: "feature" })).toEqual(["Landed on main as 9e96867 (1 file). Your checkout is on feature, so its files did not change: `git switch main` shows the task's work."]);
    expect(landing("no_branch")).toEqual(["Landed on main as 9e96867 (1 file). Your checkout is on no branch, so its files did not change: `git switch main` shows the task's work."]);
    expect(landing()).toEqual(["Landed on main as 9e96867 (1 file)."]);
  });

  it("says a rejected task's branch was kept, with what changed after the review", () => {
    seq = 0;
    const notes = [ev({ type: "branch_kept", branch: "finishline/one", files: ["notes.txt"] })].reduce(apply, emptyModel()).items.filter((i) => i.kind === "landing");
    expect(notes.map((i) => (i.kind === "landing" ? i.text : ""))).toEqual(["Kept the branch finishline/one: it holds what changed in the worktree after the review (notes.txt)."]);
  });

  it("streams text into the right message and ignores events it already has", () => {
    seq = 0;
    const created = ev({ type: "message_created", message_id: "m", role: "assistant" });
    const d1 = ev({ type: "text_delta", message_id: "m", text: "Hel" });
    const d2 = ev({ type: "text_delta", message_id: "m", text: "lo" });
    let m = [created, d1, d2].reduce(apply, emptyModel());
    m = apply(m, d2); // a replay overlapping the live stream
    const a = m.items[0];
    expect(a.kind === "assistant" && a.text).toBe("Hello");
  });

  it("moves a dismissed finding aside and back when the dismissal is taken back", () => {
    seq = 0;
    const finding = { rule: "skip_added" as const, path: "t.py", line: 3, detail: "skipped", excerpt: "@skip" };
    let m = apply(emptyModel(), ev({ type: "review_requested", review_id: "r1", claim: "success", verdict: "done", end_reason: "verified_done", remaining: [], files_changed: [], verification: [], audit: [finding] }));
    m = apply(m, ev({ type: "audit_dismissed", rule: "skip_added", path: "t.py", excerpt: "@skip" }));
    expect([m.review?.audit, m.review?.dismissed]).toEqual([[], [finding]]);
    // The next round's review (which the engine gives without it) still shows it dismissed, to undo.
    const next = apply(m, ev({ type: "review_requested", review_id: "r2", claim: "success", verdict: "done", end_reason: "verified_done", remaining: [], files_changed: [], verification: [], audit: [] }));
    expect([next.review?.reviewId, next.review?.dismissed]).toEqual(["r2", [finding]]);
    m = apply(m, ev({ type: "audit_restored", rule: "skip_added", path: "t.py", excerpt: "@skip" }));
    expect([m.review?.audit, m.review?.dismissed]).toEqual([[finding], []]);
  });

  it("says what decided a plan step as a sentence, and drops a summary that only repeats how it ended", () => {
    expect(decidedByText("checked without a model: a.txt exists ✓")).toBe("Checked without a model: a.txt exists\u00a0✓");
    expect(decidedByText("the run ended conversation")).toBe("Decided by how its run ended: Answered");
    expect(decidedByText("the evaluator (m): done")).toBe("Decided by the evaluator (m): done");
    expect(stepSummary("ended: conversation", "conversation")).toBeUndefined();
    expect(stepSummary("a.txt is written", "verified_done")).toBe("a.txt is written");
  });

  it("tracks retry with its next time and clears it when work resumes", () => {
    seq = 0;
    let m = apply(emptyModel(), ev({ type: "status_changed", status: "retry", attempt: 2, next_retry_at: "2026-11-21T00:00:05Z", message: "429" }));
    expect(m.retry).toEqual({ attempt: 2, of: undefined, nextRetryAt: "2026-11-21T00:00:05Z", message: "429" });
    m = apply(m, ev({ type: "status_changed", status: "busy" }));
    expect(m.retry).toBeUndefined();
  });

  it("updates a tool card in place as its state changes", () => {
    seq = 0;
    const m = [
      ev({ type: "tool_call", call_id: "c1", tool: "write_file", input: { path: "a" }, state: "pending" }),
      ev({ type: "tool_call", call_id: "c1", tool: "write_file", input: { path: "a" }, state: "running" }),
      ev({ type: "tool_call", call_id: "c1", tool: "write_file", input: { path: "a" }, state: "done", output: "Created a" }),
    ].reduce(apply, emptyModel());
    expect(m.items).toHaveLength(1);
    expect(m.items[0]).toMatchObject({ kind: "tool", state: "done", output: "Created a" });
  });

  it("keeps the review until it is decided", () => {
    seq = 0;
    let m = apply(emptyModel(), ev({ type: "review_requested", review_id: "r", claim: "success", verdict: "done", end_reason: "verified_done", remaining: [], files_changed: [{ path: "a", kind: "created", diff: "+a" }], verification: [] }));
    expect(m.review?.files).toHaveLength(1);
    m = apply(m, ev({ type: "review_resolved", review_id: "r", decision: "approve", by: "person", feedback: null, reverted: false }));
    expect(m.review?.decided).toEqual({ decision: "approve", by: "person" });
  });

  it("counts the manager's plan and compacting in the running total, as History does", () => {
    seq = 0;
    const usage = (input_tokens: number, output_tokens: number) => ({ input_tokens, output_tokens }) as never;
    let m = apply(emptyModel(), ev({ type: "tokens_spent", source: "evaluator", usage: usage(700, 100) }));
    m = apply(m, ev({ type: "step_finished", step: 1, stop_reason: "end_turn", usage: usage(1000, 200) } as EngineEvent));
    m = apply(m, ev({ type: "tokens_spent", source: "compaction", usage: usage(300, 50) }));
    expect(m.tokens).toEqual({ agent: 1550, evaluator: 800 });
  });
});

describe("step timing", () => {
  it("shows a step's tokens per second from its usage once it finished, estimated while it streams", async () => {
    const { tokensPerSecond } = await import("../session/model");
    let m = emptyModel();
    const at = (s: number) => new Date(Date.UTC(2026, 10, 21, 0, 0, s)).toISOString();
    m = apply(m, { type: "step_started", step: 1, seq: 1, session_id: "s", at: at(0) } as Envelope);
    m = apply(m, { type: "message_created", message_id: "a", role: "assistant", seq: 2, session_id: "s", at: at(0) } as Envelope);
    m = apply(m, { type: "text_delta", message_id: "a", text: "x".repeat(40), seq: 3, session_id: "s", at: at(0) } as Envelope);
    m = apply(m, { type: "text_delta", message_id: "a", text: "x".repeat(40), seq: 4, session_id: "s", at: at(4) } as Envelope);
    expect(tokensPerSecond(m.stepClock!), "80 characters are about 20 tokens, in 4 s").toBeCloseTo(5);
    m = apply(m, { type: "step_finished", step: 1, stop_reason: "stop", usage: { input_tokens: 10, output_tokens: 50 }, seq: 5, session_id: "s", at: at(5) } as Envelope);
    expect(tokensPerSecond(m.stepClock!), "50 tokens in 5 s, from the provider's usage").toBeCloseTo(10);
  });

  it("counts the model's writing, not its reading of the prompt before the first word", async () => {
    const { tokensPerSecond } = await import("../session/model");
    let m = emptyModel();
    const at = (s: number) => new Date(Date.UTC(2026, 10, 21, 0, 0, s)).toISOString();
    m = apply(m, { type: "step_started", step: 1, seq: 1, session_id: "s", at: at(0) } as Envelope);
    m = apply(m, { type: "message_created", message_id: "a", role: "assistant", seq: 2, session_id: "s", at: at(0) } as Envelope);
    // A local model reads a long prompt for a minute, then writes 100 tokens in 10 s.
    m = apply(m, { type: "text_delta", message_id: "a", text: "x".repeat(4), seq: 3, session_id: "s", at: at(60) } as Envelope);
    m = apply(m, { type: "text_delta", message_id: "a", text: "x".repeat(396), seq: 4, session_id: "s", at: at(70) } as Envelope);
    m = apply(m, { type: "step_finished", step: 1, stop_reason: "stop", usage: { input_tokens: 9000, output_tokens: 100 }, seq: 5, session_id: "s", at: at(70) } as Envelope);
    expect(tokensPerSecond(m.stepClock!), "100 tokens written in 10 s, not in 70").toBeCloseTo(10);
  });

  it("names no speed for a step that wrote almost nothing", async () => {
    const { tokensPerSecond } = await import("../session/model");
    let m = emptyModel();
    const at = (s: number) => new Date(Date.UTC(2026, 10, 21, 0, 0, s)).toISOString();
    m = apply(m, { type: "step_started", step: 1, seq: 1, session_id: "s", at: at(0) } as Envelope);
    m = apply(m, { type: "step_finished", step: 1, stop_reason: "tool_use", usage: { input_tokens: 900, output_tokens: 3 }, seq: 2, session_id: "s", at: at(6) } as Envelope);
    expect(tokensPerSecond(m.stepClock!), "3 tokens are no measure of speed (it read as 0.5 tok/s)").toBeNull();
  });
});

describe("an error's words in the window", () => {
  it("start with a capital when they start with a plain word, and keep a path, a setting or code as written", () => {
    expect(sentence("the disk is full, so nothing more can be saved")).toBe("The disk is full, so nothing more can be saved");
    expect(sentence("git could not run: No such file")).toBe("Git could not run: No such file");
    expect(sentence("provider.base_url: not a URL"), "a setting's name").toBe("provider.base_url: not a URL");
    expect(sentence("src/main.rs is gone"), "a path").toBe("src/main.rs is gone");
    expect(sentence("old_text was not found")).toBe("old_text was not found");
    expect(sentence("`git` is missing")).toBe("`git` is missing");
    expect(sentence("claude-3-opus is not served here"), "a model's name").toBe("claude-3-opus is not served here");
    expect(sentence("prices: “x” is not a price"), "a setting named first").toBe("prices: “x” is not a price");
    expect(sentence("")).toBe("");
  });

  it("shows a session's error event as a sentence", () => {
    const m = apply(emptyModel(), ev({ type: "error", code: "io", message: "the task's worktree could not be removed" } as EngineEvent));
    expect(m.items.at(-1)).toMatchObject({ kind: "error", message: "The task's worktree could not be removed" });
  });
});

describe("a plan's count of steps", () => {
  const step = (title: string, state: PlanStepView["state"]): PlanStepView => ({ step: { title, instructions: title, criteria: [], depends_on: [] }, state });
  it("leaves out the failed step a revision took over, so a plan that got there reads all done", () => {
    const steps = [step("Write a.txt", "done"), { ...step("Write b.txt", "failed"), superseded: true }, step("Write c.txt", "replaced"), step("Write B.txt instead", "done"), step("Write c.txt", "done")];
    expect(stepsDone(steps)).toBe("3 of 3");
  });
  it("counts a failed step nothing followed as not done", () => {
    expect(stepsDone([step("Write a.txt", "done"), step("Write b.txt", "failed"), step("Write c.txt", "skipped")])).toBe("1 of 3");
  });
});
