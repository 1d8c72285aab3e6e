import { act, cleanup, fireEvent, render, screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { mockIPC } from "@tauri-apps/api/mocks";
import { describe, expect, it, vi } from "vitest";
import { compareOnce } from "../comparing";
import type { Compared, EngineEvent, Envelope, FileChange } from "../ipc";
import DiffView, { unchangedLines } from "../components/DiffView";
import { sendLabel } from "../components/ReviewPanel";
import { SessionView } from "../screens/Session";
import { DISCARDED_TITLE } from "../session/model";
import { spyOnScrollIntoView } from "./fixtures";

let seq = 0;
const ev = (e: EngineEvent): Envelope => ({ ...e, seq: ++seq, session_id: "s1", at: "2026-11-25T00:00:00Z" }) as Envelope;

const worktree = { repo: "/repo", folder: "/data/worktrees/repo-abc-fix", subdir: "", branch: "finishline/abc-fix", base_branch: "main", base_commit: "1111111" };

function reviewWaiting(): Envelope[] {
  seq = 0;
  return [
    ev({ type: "session_created", task: "fix the parser", workspace: "/repo", provider: "openai", model: "m" }),
    ev({ type: "task_workspace", isolation: "worktree", folder: worktree.folder, worktree }),
    ev({ type: "run_started", trigger: "task" }),
    ev({ type: "review_requested", review_id: "r1", claim: "success", verdict: "done", end_reason: "verified_done", remaining: [], files_changed: [{ path: "parser.rs", kind: "modified", diff: "+fixed" }], verification: [] }),
    ev({ type: "status_changed", status: "awaiting_review" }),
  ];
}

/** Feeds `events` to the view, then whatever `more` returns for each command it sends. */
/** A task in the plain folder /plain whose review waits, with `files` (path, kind) changed. */
function inPlaceReview(task: string, files: [string, FileChange["kind"]][]): Envelope[] {
  seq = 0;
  return [
    ev({ type: "session_created", task, workspace: "/plain", provider: "openai", model: "m" }),
    ev({ type: "task_workspace", isolation: "in_place", folder: "/plain" }),
    ev({ type: "run_started", trigger: "task" }),
    ev({ type: "review_requested", review_id: "r1", claim: "success", verdict: "done", end_reason: "verified_done", remaining: [], files_changed: files.map(([path, kind]) => ({ path, kind, diff: "" })), verification: [] }),
    ev({ type: "status_changed", status: "awaiting_review" }),
  ] as Envelope[];
}

function script(events: Envelope[], onCommand: (cmd: string, args: unknown, push: (e: EngineEvent) => void) => unknown) {
  let channel: { onmessage: (e: Envelope) => void } | null = null;
  const push = (e: EngineEvent) => channel?.onmessage(ev(e));
  mockIPC((cmd, args) => {
    if (cmd === "subscribe_session") {
      channel = (args as { channel: { onmessage: (e: Envelope) => void } }).channel;
      setTimeout(() => events.forEach((e) => channel!.onmessage(e)), 0);
      return 1;
    }
    return onCommand(cmd, args, push);
  });
}

describe("a task in its own worktree", () => {
  it("started on no branch, approving keeps its branch: it does not offer a landing that can only be refused", async () => {
    const events = reviewWaiting().map((e) => (e.type === "task_workspace" ? { ...e, worktree: { ...worktree, base_branch: null } } : e));
    let sent: { landing?: string } | null = null;
    script(events, (cmd, args, push) => {
      if (cmd === "get_settings") return { settings: { tasks: { landing: "squash" } } };
      if (cmd === "submit_review") {
        sent = (args as { input: { landing?: string } }).input;
        push({ type: "review_resolved", review_id: "r1", decision: "approve", by: "person", feedback: null, reverted: false });
        push({ type: "landed", mode: "branch", target_branch: null, commit: null, branch_kept: worktree.branch, files: ["parser.rs"] });
        push({ type: "status_changed", status: "completed" });
        push({ type: "worktree_removed", folder: worktree.folder, why: "landed", branch_deleted: null });
        return { outcome: "decided", status: "completed", revert: null };
      }
    });
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const approve = await screen.findByTestId("approve");
    expect(approve).toHaveTextContent(/^Approve$/);
    expect(screen.getByTestId("review-where")).toHaveTextContent("Approve keeps its branch for you to merge: your checkout was on no branch when the task started;");
    expect(screen.queryByTestId("landing-mode"), "no landing on a branch to choose").toBeNull();
    await userEvent.setup().click(approve);
    await waitFor(() => expect(sent?.landing).toBe("branch"));
    // Approved but not landed: "Completed" would read as done like a task that landed.
    await waitFor(() => expect(screen.getByTestId("status-badge")).toHaveTextContent("Branch kept"));
    expect(screen.getByTestId("status-badge")).toHaveAttribute("title", `Approved; its work waits on ${worktree.branch}, not landed: merge it when you like`);
  });

  it("stops a landing whose checks take too long: Stop asks the engine to stop it, and nothing lands", async () => {
    let land: (v: unknown) => void = () => {};
    let stopped: string | null = null;
    script(reviewWaiting(), (cmd, args) => {
      if (cmd === "get_settings") return { settings: { tasks: { landing: "squash" } } };
      if (cmd === "submit_review") return new Promise((done) => (land = done));
      if (cmd === "cancel_run") {
        stopped = (args as { sessionId: string }).sessionId;
        land({ outcome: "landing_blocked", reason: "stopped", detail: "you stopped the landing before anything moved; nothing landed", files: [] });
        return true;
      }
    });
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const user = userEvent.setup();
    await user.click(await screen.findByTestId("approve"));
    await user.click(await screen.findByRole("button", { name: "Stop landing" }));
    await waitFor(() => expect(stopped).toBe("s1"));
    await waitFor(() => expect(screen.queryByTestId("deciding")).toBeNull());
    expect(screen.getByTestId("approve"), "the review waits, to approve again").toBeEnabled();
  });

  it("says what Approve is doing while it lands the task, which may mean rebasing and checking it again", async () => {
    let land: () => void = () => {};
    script(reviewWaiting(), (cmd) => {
      if (cmd === "get_settings") return { settings: { tasks: { landing: "squash" } } };
      if (cmd === "submit_review") return new Promise((done) => (land = () => done({ outcome: "decided", status: "completed", revert: null })));
    });
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    await userEvent.setup().click(await screen.findByTestId("approve"));
    const status = await screen.findByTestId("deciding");
    expect(status).toHaveTextContent(`Landing the task on ${worktree.base_branch}…`);
    expect(status, "a wait of minutes is explained").toHaveTextContent("If the branch moved since the task began, the task is rebased and checked again first");
    land();
    await waitFor(() => expect(screen.queryByTestId("deciding")).toBeNull());
  });

  it("says, in the bar with the buttons, what the landing waits for: another task's landing, the checks again", async () => {
    let land: () => void = () => {};
    let send: (e: EngineEvent) => void = () => {};
    script(reviewWaiting(), (cmd, _args, push) => {
      if (cmd === "get_settings") return { settings: { tasks: { landing: "squash" } } };
      if (cmd === "submit_review") {
        send = push;
        return new Promise((done) => (land = () => done({ outcome: "decided", status: "completed", revert: null })));
      }
    });
    const { container } = render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    await userEvent.setup().click(await screen.findByTestId("approve"));
    const status = await screen.findByTestId("deciding");
    // Below the fold of the dock it was not seen: the buttons greyed out, and nothing said why.
    expect(container.querySelector(".review-actions")?.contains(status), "beside the buttons it greys out").toBe(true);
    act(() => send({ type: "activity", phase: "landing", detail: "waiting for another task's landing in this repository to finish" }));
    await waitFor(() => expect(status).toHaveTextContent(`Landing on ${worktree.base_branch}: waiting for another task's landing in this repository to finish…`));
    act(() => send({ type: "activity", phase: "verifying", detail: "after moving the task onto the branch: cargo test" }));
    await waitFor(() => expect(status).toHaveTextContent(`Landing on ${worktree.base_branch}: checking again after moving the task onto the branch: cargo test…`));
    land();
    await waitFor(() => expect(screen.queryByTestId("deciding")).toBeNull());
  });

  it("a landing stopped while it waited does not greet the next Approve with that wait's words", async () => {
    let land: (blocked: boolean) => void = () => {};
    let send: (e: EngineEvent) => void = () => {};
    script(reviewWaiting(), (cmd, _args, push) => {
      if (cmd === "get_settings") return { settings: { tasks: { landing: "squash" } } };
      if (cmd === "submit_review") {
        send = push;
        return new Promise((done) => (land = (blocked) => done(blocked ? { outcome: "landing_blocked", reason: "stopped", files: [], detail: "you stopped the landing" } : { outcome: "decided", status: "completed", revert: null })));
      }
    });
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const user = userEvent.setup();
    await user.click(await screen.findByTestId("approve"));
    act(() => send({ type: "activity", phase: "landing", detail: "waiting for another task's landing in this repository to finish" }));
    await waitFor(() => expect(screen.getByTestId("deciding")).toHaveTextContent("waiting for another task's landing"));
    act(() => send({ type: "landing_blocked", reason: "stopped", files: [], detail: "you stopped the landing" }));
    land(true);
    await waitFor(() => expect(screen.queryByTestId("deciding")).toBeNull());
    await user.click(await screen.findByTestId("approve"));
    const status = await screen.findByTestId("deciding");
    expect(status).not.toHaveTextContent("waiting for another task's landing");
    expect(status).toHaveTextContent(`Landing the task on ${worktree.base_branch}…`);
    land(false);
  });

  it("after a round of changes, the approved review's diff says it is this round's, not all that landed", async () => {
    const second = { type: "review_requested", review_id: "r2", claim: "success", verdict: "done", end_reason: "verified_done", remaining: [], files_changed: [{ path: "c.txt", kind: "created", diff: "+c" }], verification: [] } as EngineEvent;
    const events = [
      ...reviewWaiting(),
      ev({ type: "review_resolved", review_id: "r1", decision: "request_changes", by: "person", feedback: "also write c.txt", reverted: false }),
      ev({ type: "run_started", trigger: "feedback" }),
      ev(second),
      ev({ type: "review_resolved", review_id: "r2", decision: "approve", by: "person", feedback: null, reverted: false }),
      ev({ type: "landed", mode: "merge", target_branch: "main", commit: "9870e90", files: ["parser.rs", "c.txt"] }),
      ev({ type: "status_changed", status: "completed" }),
    ];
    script(events, () => null);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const panel = await screen.findByTestId("review-panel");
    await waitFor(() => expect(within(panel).getByTestId("decided-diff")).toHaveTextContent("This round's diff (1 file)"));
    const records = screen.getAllByTestId("decided-diff").filter((d) => !panel.contains(d));
    expect(records.map((d) => d.querySelector("summary")?.textContent), "the first round's record is the whole diff then").toEqual(["Its diff (1 file)"]);
    // A follow-up later, both decisions are records in the timeline, each saying what it showed.
    cleanup();
    seq = events.length;
    script([...events, ev({ type: "message_created", message_id: "u2", role: "user", text: "one more thing" }), ev({ type: "run_started", trigger: "message" })], () => null);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    await waitFor(() => expect(screen.getAllByTestId("decided-diff")).toHaveLength(2));
    expect(screen.getAllByTestId("decided-diff").map((d) => d.querySelector("summary")?.textContent)).toEqual(["Its diff (1 file)", "This round's diff (1 file)"]);
  });

  it("after \"Let the agent resolve it\", the approved review's diff is the whole landing's, not a round's", async () => {
    const second = { type: "review_requested", review_id: "r2", claim: "success", verdict: "done", end_reason: "verified_done", remaining: [], files_changed: [{ path: "parser.rs", kind: "modified", diff: "+merged" }], verification: [] } as EngineEvent;
    const events = [
      ...reviewWaiting(),
      ev({ type: "review_resolved", review_id: "r1", decision: "request_changes", by: "person", feedback: "resolve it", reverted: false, occasion: "resolve_landing" }),
      ev({ type: "run_started", trigger: "feedback" }),
      ev(second),
      ev({ type: "review_resolved", review_id: "r2", decision: "approve", by: "person", feedback: null, reverted: false }),
      ev({ type: "landed", mode: "merge", target_branch: "main", commit: "9870e90", files: ["parser.rs"] }),
      ev({ type: "status_changed", status: "completed" }),
    ];
    script(events, () => null);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const panel = await screen.findByTestId("review-panel");
    await waitFor(() => expect(within(panel).getByTestId("decided-diff")).toHaveTextContent("Its diff (1 file)"));
  });

  it("a decided review keeps its diff in the timeline, as Reject's question promised: opened from History, the rejected work can be read", async () => {
    const diff = "diff --git a/parser.rs b/parser.rs\n--- a/parser.rs\n+++ b/parser.rs\n@@ -1,1 +1,1 @@\n-broken\n+fixed\n";
    const events = (reviewWaiting().map((e) => (e.type === "review_requested" ? { ...e, files_changed: [{ path: "parser.rs", kind: "modified" as const, diff }] } : e)) as Envelope[]).filter(
      (e) => e.type !== "status_changed",
    );
    const decided = [
      ...events,
      ev({ type: "review_resolved", review_id: "r1", decision: "reject", by: "person", feedback: null, reverted: false }),
      ev({ type: "worktree_removed", folder: worktree.folder, why: "rejected", branch_deleted: worktree.branch }),
      ev({ type: "status_changed", status: "rejected" }),
    ];
    script(decided, () => null);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    // The latest decision is said where the buttons were.
    const record = within(await screen.findByTestId("review-panel")).getByTestId("decided-diff");
    expect(record).toHaveTextContent("Its diff (1 file)");
    const scrolled = spyOnScrollIntoView();
    await userEvent.setup().click(within(record).getByText(/Its diff/));
    await waitFor(() => expect(scrolled.mock.contexts, "opened, it comes into view").toContain(record));
    const shown = await within(record).findByTestId("diff-view", {}, { timeout: 10_000 });
    await waitFor(() => expect(shown).toHaveTextContent("fixed"));
    expect(within(shown).queryByTestId("comment-box"), "read only: the review is decided").toBeNull();
    expect(within(shown).queryByTestId("file-viewed"), "nothing to mark viewed in a record").toBeNull();
    // A follow-up later, the decision is a record in the timeline, its diff with it.
    cleanup();
    seq = decided.length;
    script([...decided, ev({ type: "message_created", message_id: "u2", role: "user", text: "try again" }), ev({ type: "run_started", trigger: "message" })], () => null);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const note = await screen.findByTestId("decision-note", {}, { timeout: 10_000 });
    expect(note.parentElement!.querySelector("[data-testid=decided-diff]")).toHaveTextContent("Its diff (1 file)");
  });

  it("an attempt's own review says approving it chooses it over the other attempts", async () => {
    const [created, ...rest] = reviewWaiting();
    seq = 0;
    const events = [created, { type: "attempt_started", group: "g1", number: 2, of: 3, label: "Codex" } as EngineEvent, ...rest].map((e) => ev(e as EngineEvent));
    script(events, () => undefined);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const approve = await screen.findByTestId("approve");
    expect(approve).toHaveTextContent("Choose this attempt and land on main");
    expect(approve.getAttribute("title")).toMatch(/other attempts are rejected/);
  });

  it("feedback kept from before stays unsent while the evaluator compares the attempts, as the other decisions wait", async () => {
    const [created, ...rest] = reviewWaiting();
    seq = 0;
    const events = [created, { type: "attempt_started", group: "g-cmp", number: 2, of: 3, label: "Codex" } as EngineEvent, ...rest].map((e) => ev(e as EngineEvent));
    const calls: string[] = [];
    script(events, (cmd) => {
      calls.push(cmd);
      return undefined;
    });
    sessionStorage.setItem("finishline.feedbackDraft.r1", "use tabs");
    let done: (c: Compared) => void = () => {};
    void compareOnce("g-cmp", () => new Promise<Compared>((resolve) => (done = resolve)));
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const box = await screen.findByTestId("feedback-input");
    expect(box).toHaveValue("use tabs");
    expect(screen.getByTestId("send-feedback"), "a choice made while the evaluator compares would throw its answer away").toBeDisabled();
    fireEvent.keyDown(box, { key: "Enter" });
    expect(calls).not.toContain("submit_review");
    done({ ranking: [], pairs: [] } as unknown as Compared);
    await waitFor(() => expect(screen.getByTestId("send-feedback")).toBeEnabled());
  });

  it("an attempt's session can be exported from its own screen, chosen or not", async () => {
    const [created, ...rest] = reviewWaiting();
    seq = 0;
    const events = [created, { type: "attempt_started", group: "g1", number: 2, of: 3, label: "Codex" } as EngineEvent, ...rest].map((e) => ev(e as EngineEvent));
    const asked: unknown[] = [];
    script(events, (cmd, args) => {
      if (cmd === "save_session_export") {
        asked.push(args);
        return "/home/me/codex-attempt.md";
      }
      return undefined;
    });
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    await userEvent.click(await screen.findByTestId("session-export"));
    expect(await screen.findByText(/Saved to \/home\/me\/codex-attempt.md/)).toBeTruthy();
    expect(asked).toEqual([{ sessionId: "s1", format: "md" }]);
  });

  it("any task's session can be saved as Markdown from its own screen, not only from History", async () => {
    seq = 0;
    const events = reviewWaiting().map((e) => ev(e as EngineEvent));
    const asked: unknown[] = [];
    script(events, (cmd, args) => {
      if (cmd === "save_session_export") {
        asked.push(args);
        return "/home/me/fix-the-parser.md";
      }
      return undefined;
    });
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    await userEvent.click(await screen.findByRole("button", { name: "Save as Markdown" }));
    expect(await screen.findByText(/Saved to \/home\/me\/fix-the-parser.md/)).toBeTruthy();
    expect(asked).toEqual([{ sessionId: "s1", format: "md" }]);
  });

  it("an attempt continued after another of its group was chosen is approved as any task: it chooses nothing", async () => {
    const [created, ...rest] = reviewWaiting();
    seq = 0;
    const decided: EngineEvent[] = [
      { type: "attempt_started", group: "g1", number: 2, of: 3, label: "Codex" } as EngineEvent,
      { type: "status_changed", status: "rejected" } as EngineEvent,
      { type: "worktree_removed", folder: worktree.folder, why: "rejected" } as EngineEvent,
    ];
    const events = [created, ...decided, ...rest].map((e) => ev(e as EngineEvent));
    let chosen: string | null = null;
    script(events, (cmd) => (cmd === "attempt_group" ? { group: "g1", task: "fix the parser", ranking: [], places: [], all_ended: true, chosen } : undefined));
    const view = render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    expect(await screen.findByTestId("approve"), "rejected on its own while the group is open, it still competes").toHaveTextContent("Choose this attempt and land on main");
    view.unmount();
    chosen = "s9";
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const approve = await screen.findByTestId("approve");
    await waitFor(() => expect(approve).toHaveTextContent("Approve and land on main"));
    expect(approve.getAttribute("title") ?? "").not.toMatch(/other attempts/);
    expect(screen.getByTestId("review-where")).not.toHaveTextContent("rejects the other attempts");
  });

  it("a follow-up rejected after earlier work landed says the earlier work stays approved, beside its Rejected badge", async () => {
    const events = reviewWaiting() as EngineEvent[];
    events.splice(
      3,
      0,
      { type: "review_requested", review_id: "r0", claim: "success", verdict: "done", end_reason: "verified_done", remaining: [], files_changed: [{ path: "first.rs", kind: "created", diff: "+a" }], verification: [] },
      { type: "review_resolved", review_id: "r0", decision: "approve", by: "person", feedback: null, reverted: false },
      { type: "status_changed", status: "completed" },
    );
    seq = 0;
    script(events.map((e) => ev(e as EngineEvent)), (cmd, _args, push) => {
      if (cmd === "submit_review") {
        push({ type: "review_resolved", review_id: "r1", decision: "reject", by: "person", feedback: null, reverted: false });
        push({ type: "status_changed", status: "rejected" });
        return { outcome: "decided", status: "rejected", revert: null };
      }
    });
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    await screen.findByTestId("approve");
    const user = userEvent.setup();
    await user.click(screen.getByTestId("reject"));
    await user.click(await screen.findByTestId("confirm-reject-go"));
    await waitFor(() => expect(screen.getByTestId("status-badge")).toHaveAttribute("data-status", "rejected"));
    expect(screen.getByTestId("approved-before")).toHaveTextContent("earlier work approved");
  });

  it("a review with no file changed offers Approve, not a landing", async () => {
    seq = 0;
    const events = reviewWaiting().map((e) => ((e as { type: string }).type === "review_requested" ? { ...e, files_changed: [] } : e)) as Envelope[];
    script(events, () => undefined);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    expect(await screen.findByTestId("approve")).toHaveTextContent(/^Approve$/);
    expect(screen.getByTestId("review-where")).toHaveTextContent("Approve lands nothing, as no file changed; Reject removes");
    expect(screen.queryByTestId("landing-mode"), "no way of landing to choose for nothing to land").toBeNull();
  });

  it("an attempt cannot be chosen from its session while the evaluator compares its group, and can once it answered", async () => {
    const [created, ...rest] = reviewWaiting();
    seq = 0;
    const events = [created, { type: "attempt_started", group: "g1", number: 2, of: 3, label: "Codex" } as EngineEvent, ...rest].map((e) => ev(e as EngineEvent));
    script(events, () => undefined);
    let answer: (c: Compared) => void = () => {};
    const pending = compareOnce("g1", () => new Promise<Compared>((resolve) => (answer = resolve)));
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const approve = await screen.findByTestId("approve");
    expect(approve).toBeDisabled();
    expect(approve.getAttribute("title")).toMatch(/The evaluator is comparing the attempts/);
    expect(screen.getByTestId("reject")).toBeDisabled();
    expect(screen.getByTestId("request-changes")).toBeDisabled();
    answer({ group: "g1", task: "fix the parser", ranking: [], places: [], all_ended: true, chosen: null, asked: 1, model: "m" });
    await pending;
    await waitFor(() => expect(screen.getByTestId("approve")).toBeEnabled());
    expect(screen.getByTestId("reject")).toBeEnabled();
  });

  /** `events` with a first round answered with Request changes spliced in at `at`, then the
   * follow-up's commit: its review is the one `reviewWaiting` ends with. Rendered. */
  const sentBackOnce = (events: EngineEvent[], at: number) => {
    events.splice(
      at,
      0,
      { type: "review_requested", review_id: "r0", claim: "success", verdict: "done", end_reason: "verified_done", remaining: [], files_changed: [{ path: "first.rs", kind: "created", diff: "+a" }], verification: [] },
      { type: "review_resolved", review_id: "r0", decision: "request_changes", by: "person", feedback: "also parser.rs", reverted: false },
      { type: "task_committed", commit: "2222222", branch: worktree.branch, files_since_start: ["first.rs", "parser.rs"] },
    );
    seq = 0;
    script(
      events.map((e) => ev(e)),
      () => undefined,
    );
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
  };

  it("a follow-up's review says Approve lands the earlier rounds' files too", async () => {
    sentBackOnce(reviewWaiting() as EngineEvent[], 3);
    expect(await screen.findByTestId("earlier-rounds")).toHaveTextContent("Approve lands 1 more file from earlier rounds of this task, reviewed before: first.rs.");
    expect(screen.getByTestId("review-files-heading"), "the diff is this round's: a file both rounds changed shows only the second change").toHaveTextContent("Files changed since your last review (1)");
  });

  it("a follow-up's review in a plain folder names the earlier rounds' files it does not show, and what Reject's undo does to them", async () => {
    seq = 0;
    const events = [
      ev({ type: "session_created", task: "tidy up", workspace: "/ws", provider: "openai", model: "m" }),
      ev({ type: "task_workspace", isolation: "in_place", folder: "/ws", worktree: null }),
      ev({ type: "run_started", trigger: "task" }),
      ev({ type: "review_requested", review_id: "r0", claim: "success", verdict: "done", end_reason: "verified_done", remaining: [], files_changed: [{ path: "README.md", kind: "modified", diff: "+a" }, { path: "config.json", kind: "created", diff: "+{}" }], verification: [] }),
      ev({ type: "review_resolved", review_id: "r0", decision: "request_changes", by: "person", feedback: "add a LICENSE", reverted: false }),
      ev({ type: "run_started", trigger: "feedback" }),
      ev({ type: "review_requested", review_id: "r1", claim: "success", verdict: "done", end_reason: "verified_done", remaining: [], files_changed: [{ path: "LICENSE", kind: "created", diff: "+MIT" }, { path: "README.md", kind: "modified", diff: "+b" }], verification: [] }),
      ev({ type: "status_changed", status: "awaiting_review" }),
    ];
    script(events, () => undefined);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    expect(await screen.findByTestId("review-files-heading")).toHaveTextContent("Files changed since your last review (2)");
    expect(screen.getByTestId("earlier-rounds")).toHaveTextContent(
      "Earlier rounds of this task changed 1 more file, reviewed before: config.json. It stays as it is when you approve; Reject with “Also undo” undoes it too.",
    );
  });

  it("a review in a plain folder marks the files that changed while a command ran, before the person decides; a worktree's does not", async () => {
    seq = 0;
    const files = [
      { path: "README.md", kind: "modified" as const, diff: "+a", unattributed: true },
      { path: "notes.txt", kind: "created" as const, diff: "+n" },
    ];
    script(
      [
        ev({ type: "session_created", task: "tidy up", workspace: "/ws", provider: "openai", model: "m" }),
        ev({ type: "task_workspace", isolation: "in_place", folder: "/ws", worktree: null }),
        ev({ type: "run_started", trigger: "task" }),
        ev({ type: "review_requested", review_id: "r1", claim: "success", verdict: "done", end_reason: "verified_done", remaining: [], files_changed: files, verification: [] }),
        ev({ type: "status_changed", status: "awaiting_review" }),
      ],
      () => undefined,
    );
    const view = render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    await screen.findAllByTestId("file-change");
    const marks = screen.getAllByTestId("file-unattributed");
    expect(marks, "only the file a command may have changed").toHaveLength(1);
    expect(marks[0].closest("[data-path]")).toHaveAttribute("data-path", "README.md");
    expect(marks[0]).toHaveTextContent("may include your edits");
    expect(marks[0].getAttribute("title")).toMatch(/while a command or an external agent was at work: an edit of yours saved then looks the same as theirs.*keeps a copy/);
    view.unmount();
    script(
      reviewWaiting().map((e) => (e.type === "review_requested" ? { ...e, files_changed: files } : e)),
      () => undefined,
    );
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    await screen.findAllByTestId("file-change");
    expect(screen.queryByTestId("file-unattributed"), "in a worktree nothing else writes").toBeNull();
  });

  it("a follow-up's review in a plain folder promises no undo when a round was not recorded", async () => {
    seq = 0;
    const events = [
      ev({ type: "session_created", task: "tidy up", workspace: "/ws", provider: "openai", model: "m" }),
      ev({ type: "task_workspace", isolation: "in_place", folder: "/ws", worktree: null }),
      ev({ type: "run_started", trigger: "task" }),
      ev({ type: "review_requested", review_id: "r0", claim: "success", verdict: "done", end_reason: "verified_done", remaining: [], files_changed: [{ path: "config.json", kind: "created", diff: "+{}" }], verification: [], unrecorded: true }),
      ev({ type: "review_resolved", review_id: "r0", decision: "request_changes", by: "person", feedback: "add a LICENSE", reverted: false }),
      ev({ type: "run_started", trigger: "feedback" }),
      ev({ type: "review_requested", review_id: "r1", claim: "success", verdict: "done", end_reason: "verified_done", remaining: [], files_changed: [{ path: "LICENSE", kind: "created", diff: "+MIT" }], verification: [] }),
      ev({ type: "status_changed", status: "awaiting_review" }),
    ];
    script(events, () => undefined);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    expect(await screen.findByTestId("earlier-rounds")).toHaveTextContent("Reject cannot undo the rounds' changes: not all of them were recorded.");
    expect(screen.getByTestId("earlier-rounds")).not.toHaveTextContent("Also undo");
  });

  it("an attempt sent back shows its whole diff at the next review, not one since the last: choosing it lands the whole", async () => {
    const [created, ...rest] = reviewWaiting() as EngineEvent[];
    sentBackOnce([created, { type: "attempt_started", group: "g1", number: 2, of: 3, label: "Codex" } as EngineEvent, ...rest], 4);
    await screen.findByTestId("approve");
    expect(screen.getByTestId("review-files-heading")).toHaveTextContent(/^Files changed \(1\)$/);
    expect(screen.queryByTestId("earlier-rounds"), "an attempt's review already shows every round").toBeNull();
  });

  it("a first review says nothing of earlier rounds, even when its diff shows fewer files than the branch holds", async () => {
    const events = reviewWaiting() as EngineEvent[];
    events.splice(3, 0, { type: "task_committed", commit: "2222222", branch: worktree.branch, files_since_start: ["big.bin", "parser.rs"] });
    seq = 0;
    script(
      events.map((e) => ev(e)),
      () => undefined,
    );
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    await screen.findByTestId("approve");
    expect(screen.queryByTestId("earlier-rounds")).toBeNull();
    expect(screen.getByTestId("review-files-heading")).toHaveTextContent(/^Files changed \(1\)$/);
  });

  it("rejecting a follow-up says the work approved in an earlier round stays where it landed", async () => {
    const first = reviewWaiting();
    const events = [
      ...first.slice(0, 4),
      ev({ type: "review_resolved", review_id: "r1", decision: "approve", by: "person", feedback: null, reverted: false }),
      ev({ type: "landed", mode: "squash", target_branch: "main", commit: "1111111", files: ["parser.rs"] }),
      ev({ type: "status_changed", status: "completed" }),
      ev({ type: "task_workspace", isolation: "worktree", folder: worktree.folder, worktree }),
      ev({ type: "run_started", trigger: "message" }),
      ev({ type: "review_requested", review_id: "r2", claim: "success", verdict: "done", end_reason: "verified_done", remaining: [], files_changed: [{ path: "lexer.rs", kind: "modified", diff: "+more" }], verification: [] }),
      ev({ type: "status_changed", status: "awaiting_review" }),
    ];
    script(events, () => undefined);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const user = userEvent.setup();
    await user.click(await screen.findByTestId("reject"));
    expect(await screen.findByTestId("confirm-reject")).toHaveTextContent("The work you approved in an earlier round stays where it landed: only this round's is removed.");
  });

  it("reject asks before the worktree goes, keeping it by default, and rejects once confirmed", async () => {
    const sent: { input: { decision: string } }[] = [];
    script(reviewWaiting(), (cmd, args, push) => {
      if (cmd !== "submit_review") return undefined;
      sent.push(args as { input: { decision: string } });
      push({ type: "review_resolved", review_id: "r1", decision: "reject", by: "person", feedback: null, reverted: false });
      push({ type: "worktree_removed", folder: worktree.folder, why: "rejected", branch_deleted: worktree.branch });
      push({ type: "status_changed", status: "rejected" });
      return { outcome: "decided", status: "rejected", revert: null };
    });
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const user = userEvent.setup();
    await user.click(await screen.findByTestId("reject"));
    const ask = await screen.findByTestId("confirm-reject");
    expect(ask).toHaveTextContent("finishline/abc-fix");
    expect(screen.getByTestId("confirm-reject-keep"), "keeping it is the default").toHaveFocus();
    await user.keyboard("{Escape}");
    expect(screen.queryByTestId("confirm-reject")).toBeNull();
    expect(sent, "nothing was decided").toHaveLength(0);
    await user.click(screen.getByTestId("reject"));
    await user.click(await screen.findByTestId("confirm-reject-go"));
    await vi.waitFor(() => expect(sent).toHaveLength(1));
    expect(sent[0].input.decision).toBe("reject");
    // The decided panel says what became of the work, as the question said it would.
    expect(await screen.findByTestId("worktree-gone")).toHaveTextContent("The task's worktree was removed and its branch finishline/abc-fix deleted; History keeps its diff.");
  });

  it("approving with comments on the diff asks first, since only Request changes sends them, and keeps reviewing by default", async () => {
    const sent: { input: { decision: string } }[] = [];
    const comment = { id: "c1", path: "parser.rs", start_line: 1, end_line: 1, side: "new", quote: "fixed", text: "name the constant" } as const;
    script([...reviewWaiting(), ev({ type: "review_comment", review_id: "r1", comment })], (cmd, args, push) => {
      if (cmd !== "submit_review") return undefined;
      sent.push(args as { input: { decision: string } });
      push({ type: "review_resolved", review_id: "r1", decision: "approve", by: "person", feedback: null, reverted: false });
      push({ type: "status_changed", status: "completed" });
      return { outcome: "decided", status: "completed", revert: null };
    });
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const user = userEvent.setup();
    await user.click(await screen.findByTestId("approve"));
    const ask = await screen.findByTestId("confirm-approve");
    expect(ask).toHaveTextContent("1 comment");
    expect(screen.getByTestId("confirm-approve-keep"), "going back to the review is the default").toHaveFocus();
    await user.keyboard("{Escape}");
    expect(screen.queryByTestId("confirm-approve")).toBeNull();
    expect(sent, "nothing was decided, the comment is still there to send").toHaveLength(0);
    await user.click(screen.getByTestId("approve"));
    await user.click(await screen.findByTestId("confirm-approve-go"));
    await vi.waitFor(() => expect(sent).toHaveLength(1));
    expect(sent[0].input.decision).toBe("approve");
  });

  it("approving or rejecting past feedback typed and not sent asks first, and going back opens the box with the words", async () => {
    const sent: { input: { decision: string } }[] = [];
    script(reviewWaiting(), (cmd, args) => {
      if (cmd !== "submit_review") return undefined;
      sent.push(args as { input: { decision: string } });
      return new Promise(() => {});
    });
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const user = userEvent.setup();
    await user.click(await screen.findByTestId("request-changes"));
    await user.type(screen.getByTestId("feedback-input"), "also rename foo");
    await user.keyboard("{Escape}");
    expect(screen.queryByTestId("feedback-input"), "Esc put the box away, words and all").toBeNull();
    await waitFor(() => expect(screen.getByTestId("request-changes"), "the focus goes back to the button that opened it").toHaveFocus());
    await user.click(screen.getByTestId("approve"));
    const ask = await screen.findByTestId("confirm-approve");
    expect(ask).toHaveTextContent("Approve without sending your feedback?");
    expect(ask).toHaveTextContent("also rename foo");
    await user.click(screen.getByTestId("confirm-approve-keep"));
    expect(await screen.findByTestId("feedback-input"), "back to the words").toHaveValue("also rename foo");
    await waitFor(() => expect(screen.getByTestId("feedback-input"), "with the focus in them").toHaveFocus());
    expect(sent, "nothing was decided").toHaveLength(0);
    await user.keyboard("{Escape}");
    // Reject asks once, with both what goes with the worktree and the words it drops.
    await user.click(screen.getByTestId("reject"));
    const rejecting = await screen.findByTestId("confirm-reject");
    expect(rejecting).toHaveTextContent("You typed feedback that only Request changes sends: “also rename foo”. Rejecting drops it.");
    expect(screen.queryByTestId("confirm-feedback-reject"), "one question for one decision").toBeNull();
    await user.click(screen.getByTestId("confirm-reject-keep"));
    expect(await screen.findByTestId("feedback-input"), "kept, the words are open again").toHaveValue("also rename foo");
    await user.keyboard("{Escape}");
    await user.click(screen.getByTestId("reject"));
    await user.click(await screen.findByTestId("confirm-reject-go"));
    await vi.waitFor(() => expect(sent.map((s) => s.input.decision)).toEqual(["reject"]));
  });

  it("feedback sent, the agent at work again: the focus goes to the page, not its Cancel (which acts at once on a second Enter), nor is it lost", async () => {
    script(reviewWaiting(), (cmd, _args, push) => {
      if (cmd !== "submit_review") return undefined;
      push({ type: "review_resolved", review_id: "r1", decision: "request_changes", by: "person", feedback: "shorter", reverted: false });
      push({ type: "run_started", trigger: "feedback" });
      push({ type: "status_changed", status: "busy" });
      return { outcome: "decided", status: "busy", revert: null };
    });
    render(
      <main className="content" tabIndex={-1}>
        <SessionView sessionId="s1" onOpenHistory={() => {}} />
      </main>,
    );
    const user = userEvent.setup();
    await user.click(await screen.findByTestId("request-changes"));
    await user.keyboard("shorter");
    await user.click(screen.getByTestId("send-feedback"));
    await vi.waitFor(() => expect(document.querySelector("main.content"), "the keyboard goes on from the page").toHaveFocus(), { timeout: 3000 });
    expect(screen.getByTestId("cancel")).not.toHaveFocus();
  });

  it("the approve question asked from the palette, which is gone when it closes, gives the focus to Approve", async () => {
    const comment = { id: "c1", path: "parser.rs", start_line: 1, end_line: 1, side: "new", quote: "fixed", text: "name the constant" } as const;
    script([...reviewWaiting(), ev({ type: "review_comment", review_id: "r1", comment })], () => undefined);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const user = userEvent.setup();
    // The palette's field had the focus when Approve was picked there; it closes meanwhile.
    const palette = document.createElement("input");
    document.body.appendChild(palette);
    palette.focus();
    fireEvent.click(await screen.findByTestId("approve"));
    await screen.findByTestId("confirm-approve");
    palette.remove();
    await user.click(screen.getByTestId("confirm-approve-keep"));
    await vi.waitFor(() => expect(screen.getByTestId("approve"), "not the page: the keyboard goes on from the review").toHaveFocus());
  });

  it("the header names its branch, and approve lands it on the branch it started from as chosen", async () => {
    let sent: { input: { decision: string; landing?: string; revert?: boolean } } | null = null;
    script(reviewWaiting(), (cmd, args, push) => {
      if (cmd === "submit_review") {
        sent = args as typeof sent;
        push({ type: "review_resolved", review_id: "r1", decision: "approve", by: "person", feedback: null, reverted: false });
        push({ type: "landed", mode: "merge", target_branch: "main", commit: "abcdef1234", files: ["parser.rs"] });
        push({ type: "status_changed", status: "completed" });
        push({ type: "worktree_removed", folder: worktree.folder, why: "landed", branch_deleted: worktree.branch });
        return { outcome: "decided", status: "completed", revert: null };
      }
    });
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    expect(await screen.findByTestId("session-worktree")).toHaveTextContent("finishline/abc-fix from main");
    expect(screen.getByTestId("review-where")).toHaveTextContent("your checkout is untouched");
    expect(screen.queryByTestId("revert-checkbox")).toBeNull();
    const user = userEvent.setup();
    await user.selectOptions(screen.getByTestId("landing-mode"), "merge");
    expect(screen.getByTestId("approve")).toHaveTextContent("Approve and land on main");
    await user.click(screen.getByTestId("approve"));
    expect(await screen.findByTestId("landed-summary")).toHaveTextContent("Landed on main as abcdef1 (1 file)");
    expect(screen.getAllByText(/Landed on main as abcdef1/), "said once: the decided review holds it, the timeline does not repeat it").toHaveLength(1);
    await waitFor(() => expect(screen.getByTestId("review-panel"), "the focus goes to what was decided, not to the page with the button gone").toHaveFocus());
    expect(sent!.input.landing).toBe("merge");
    expect(sent!.input.revert).toBe(false);
    expect(screen.getByTestId("status-badge"), "landed: done").toHaveTextContent(/^Completed$/);
  });

  it("the header offers the worktree's folder, and opening or copying it says that it did, copying with the path", async () => {
    const opened: unknown[] = [];
    script(reviewWaiting(), (cmd, args) => {
      if (cmd === "open_worktree") opened.push(args);
      return null;
    });
    const user = userEvent.setup();
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    expect(await screen.findByTestId("copy-worktree-path"), "its hover says what is copied").toHaveAttribute("title", worktree.folder);
    expect(screen.queryByTestId("worktree-path"), "not a header line of its own").toBeNull();
    await user.click(screen.getByTestId("open-worktree"));
    expect(opened).toEqual([{ sessionId: "s1", which: "worktree" }]);
    expect(await screen.findByTestId("worktree-said")).toHaveTextContent("Opened in your file manager");
    await user.click(screen.getByTestId("copy-worktree-path"));
    expect(await navigator.clipboard.readText()).toBe(worktree.folder);
    expect(await screen.findByTestId("worktree-said")).toHaveTextContent("Path copied");
    expect(screen.getByTestId("worktree-path"), "with the path it copied").toHaveTextContent(worktree.folder);
  });

  it("a folder no file manager opened says so, then makes way again: it does not stay for the rounds after", async () => {
    script(reviewWaiting(), (cmd) => {
      if (cmd === "open_worktree") throw { code: "io", message: "No file manager opened /w: open it yourself from there, or copy its path." };
      return null;
    });
    vi.useFakeTimers({ shouldAdvanceTime: true });
    try {
      const user = userEvent.setup({ advanceTimers: vi.advanceTimersByTime });
      render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
      await user.click(await screen.findByTestId("open-worktree"));
      expect(await screen.findByTestId("worktree-said")).toHaveTextContent("No file manager opened /w");
      await act(async () => {
        vi.advanceTimersByTime(12_000);
      });
      expect(screen.queryByTestId("worktree-said")).toBeNull();
    } finally {
      vi.useRealTimers();
    }
  });

  it("a landing that cannot go through says why, overwrites nothing, and offers the ways out", async () => {
    const calls: string[] = [];
    script(reviewWaiting(), (cmd, args, push) => {
      calls.push(cmd);
      if (cmd === "submit_review") {
        const landing = (args as { input: { landing?: string } }).input.landing;
        if (landing === "branch") {
          push({ type: "review_resolved", review_id: "r1", decision: "approve", by: "person", feedback: null, reverted: false });
          push({ type: "landed", mode: "branch", branch_kept: "finishline/abc-fix", files: [] });
          push({ type: "status_changed", status: "completed" });
          return { outcome: "decided", status: "completed", revert: null };
        }
        push({ type: "landing_blocked", reason: "conflict", files: ["parser.rs"], detail: "“main” moved on since the task started, and the task's changes conflict with what landed there" });
        return { outcome: "landing_blocked", reason: "conflict", files: ["parser.rs"], detail: "…" };
      }
    });
    const shown = spyOnScrollIntoView();
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const user = userEvent.setup();
    await user.click(await screen.findByTestId("approve"));
    const blocked = await screen.findByTestId("landing-blocked");
    expect(shown.mock.contexts, "the notice is brought into view: below the window the button looks dead").toContain(blocked);
    await waitFor(() => expect(blocked, "and takes the focus: with Approve's work done, Tab goes on to its ways out, not from the page").toHaveFocus());
    expect(blocked, "the engine's detail says what happened, once").toHaveTextContent("Not landed. “main” moved on since the task started, and the task's changes conflict with what landed there. Nothing was overwritten.");
    expect(blocked).toHaveTextContent("parser.rs");
    expect(blocked).toHaveTextContent("Nothing was overwritten");
    expect(screen.getByTestId("resolve-with-agent")).toBeEnabled();
    expect(screen.getByTestId("resolve-with-agent"), "a conflict does not go by itself: the agent resolving it is the way forward").toHaveClass("primary");
    expect(screen.getByTestId("approve"), "landing again, unchanged, meets the same conflict").not.toHaveClass("primary");
    expect(screen.getByTestId("blocked-open-worktree")).toBeEnabled();
    expect(screen.getAllByRole("button", { name: /again|land on main/ }).map((b) => b.textContent), "one button lands again, and says so: not two that do the same").toEqual(["Try landing on main again"]);
    expect(screen.queryByTestId("tried-again")).toBeNull();
    await user.click(screen.getByTestId("approve"));
    expect(await screen.findByTestId("tried-again"), "blocked again, the box says it tried: it would look as before").toHaveTextContent(/Tried again at .+: still not landed\./);
    await user.click(screen.getByTestId("keep-branch"));
    const summary = await screen.findByTestId("landed-summary");
    expect(summary).toHaveTextContent("Kept the task's branch finishline/abc-fix for later: git merge finishline/abc-fix on the branch you want it on takes it.");
    expect(summary.querySelector("code"), "the command reads as one, not between backticks").toHaveTextContent(/^git merge finishline\/abc-fix$/);
    expect(calls.filter((c) => c === "submit_review")).toHaveLength(3);
  });

  it("a branch that moved in the instant of landing offers approving again, not the agent resolving a conflict", async () => {
    script([...reviewWaiting(), ev({ type: "landing_blocked", reason: "branch_moved", files: [], detail: "“main” moved while the task was being landed: approve again" })], () => undefined);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const blocked = await screen.findByTestId("landing-blocked");
    expect(blocked).toHaveTextContent("Not landed. “main” moved while the task was being landed: approve again. Nothing was overwritten.");
    expect(screen.queryByTestId("resolve-with-agent"), "nothing conflicts: there is nothing for the agent to resolve").toBeNull();
    expect(screen.getByTestId("approve")).toBeEnabled();
  });

  it("the review after the agent resolved a landing is headed as what lands on the branch, not as the changes since the last review", async () => {
    const events = [
      ...reviewWaiting(),
      ev({ type: "landing_blocked", reason: "conflict", files: ["parser.rs"], detail: "“main” moved on since the task started, and the task's changes conflict with what landed there" }),
      ev({ type: "review_resolved", review_id: "r1", decision: "request_changes", by: "person", feedback: null, reverted: false, occasion: "resolve_landing" }),
      ev({ type: "run_started", trigger: "feedback" }),
      ev({ type: "step_started", step: 1, cycle: { used: 0, max: 5 } }),
      ev({ type: "task_committed", commit: "2222222", branch: worktree.branch, files_since_start: ["parser.rs"] }),
      ev({ type: "review_requested", review_id: "r2", claim: "success", verdict: "done", end_reason: "verified_done", remaining: [], files_changed: [{ path: "parser.rs", kind: "modified", diff: "+fixed" }], verification: [] }),
      ev({ type: "status_changed", status: "awaiting_review" }),
    ];
    script(events, () => undefined);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    await waitFor(() => expect(screen.getByTestId("review-files-heading")).toHaveTextContent("What lands on main, merged with its changes (1)"));
    expect(screen.queryByTestId("earlier-rounds"), "the diff is the whole landing: no earlier rounds besides it").toBeNull();
    // It was sent back, to resolve the landing: "sent it back 0 times" read as if it had not been.
    expect(screen.getByTestId("cycle-count")).toHaveTextContent("Sent back to resolve the landing; Finishline may send it back up to 5 more times");
  });

  it("tried again and blocked for another reason, the box says the new reason, not 'still not landed'", async () => {
    let tries = 0;
    script(reviewWaiting(), (cmd, _args, push) => {
      if (cmd !== "submit_review") return undefined;
      tries += 1;
      const [reason, detail] = tries === 1 ? (["your_edits", "you have uncommitted edits to parser.rs"] as const) : (["conflict", "“main” moved on since the task started, and the task's changes conflict with what landed there"] as const);
      push({ type: "landing_blocked", reason, files: ["parser.rs"], detail });
      return { outcome: "landing_blocked", reason, files: ["parser.rs"], detail };
    });
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const user = userEvent.setup();
    await user.click(await screen.findByTestId("approve"));
    expect(await screen.findByTestId("landing-blocked")).toHaveAttribute("data-reason", "your_edits");
    await user.click(screen.getByTestId("approve"));
    await waitFor(() => expect(screen.getByTestId("landing-blocked")).toHaveAttribute("data-reason", "conflict"));
    expect(screen.queryByTestId("tried-again"), "it is not the same block: it reads anew").toBeNull();
  });

  it("a landing stopped by files the person's .gitignore hides names them and does not offer the agent", async () => {
    const opened: unknown[] = [];
    script(reviewWaiting(), (cmd, args, push) => {
      if (cmd === "open_worktree") opened.push(args);
      if (cmd === "submit_review") {
        const detail = "the task would replace files your .gitignore hides, which are not in git and could not be brought back: move or rename them, then approve again, or keep the task's branch";
        push({ type: "landing_blocked", reason: "your_ignored_files", files: ["local.json"], detail });
        return { outcome: "landing_blocked", reason: "your_ignored_files", files: ["local.json"], detail };
      }
    });
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    await userEvent.setup().click(await screen.findByTestId("approve"));
    const blocked = await screen.findByTestId("landing-blocked");
    expect(blocked).toHaveTextContent("Not landed: it would replace files your .gitignore hides");
    expect(blocked).toHaveTextContent("local.json");
    expect(blocked).toHaveTextContent("move or rename them");
    expect(blocked, "the detail starts its own sentence after the title").toHaveTextContent("hides. The task would replace");
    expect(screen.queryByTestId("resolve-with-agent")).toBeNull();
    // The files in the way are in the person's checkout, not in the task's worktree.
    expect(screen.queryByTestId("blocked-open-worktree")).toBeNull();
    await userEvent.setup().click(screen.getByTestId("blocked-open-checkout"));
    await waitFor(() => expect(opened).toEqual([{ sessionId: "s1", which: "checkout" }]));
  });

  it("a repository moved away says so with the way back, and offers no branch to keep that went with it", async () => {
    const gone = "The repository the task started from is no longer at /repo (moved, renamed or deleted)";
    script(reviewWaiting(), (cmd, args, push) => {
      if (cmd !== "submit_review") return undefined;
      const decision = (args as { input: { decision: string } }).input.decision;
      if (decision === "reject") throw { code: "repository_gone", message: `${gone}: put it back there and reject again` };
      const detail = "the repository the task started from is no longer at /repo (moved, renamed or deleted): put it back there and approve again; or, in the repository where it is now, `git worktree repair /wt` then `git merge finishline/abc-fix` takes the task's work by hand";
      push({ type: "landing_blocked", reason: "repository_gone", files: [], detail });
      return { outcome: "landing_blocked", reason: "repository_gone", files: [], detail };
    });
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const user = userEvent.setup();
    await user.click(await screen.findByTestId("approve"));
    const blocked = await screen.findByTestId("landing-blocked");
    // Said once: the title does not say what the sentence after it says.
    expect(blocked).toHaveTextContent(/^Not landed\. The repository the task started from is no longer at \/repo/);
    expect(blocked).toHaveTextContent("put it back there and approve again");
    expect(screen.queryByTestId("keep-branch"), "the branch went with the repository").toBeNull();
    expect(screen.queryByTestId("resolve-with-agent")).toBeNull();
    expect(screen.getByTestId("approve")).toHaveTextContent("Try landing on main again");
    // Reject waits for the repository too: the box that says where it went says so, rather than
    // a second copy of the same long message in red below it.
    await user.click(screen.getByTestId("reject"));
    await user.click(await screen.findByTestId("confirm-reject-go"));
    expect(await within(blocked).findByTestId("gone-too")).toHaveTextContent(/Reject, tried at .*, waits for it too: put it back there and reject again\./);
    expect(screen.queryByText(new RegExp(`${gone}: put it back there and reject again`))).toBeNull();
    expect(screen.getAllByText(/is no longer at \/repo/), "the transcript's note and the box, not a third").toHaveLength(2);
  });
});

describe("the review arriving", () => {
  it("takes the window to the timeline's end, so the agent's last words and the verdict sit above the panel, not under it", async () => {
    const events = reviewWaiting();
    const later = events.splice(3);
    let channel: { onmessage: (e: Envelope) => void } | null = null;
    mockIPC((cmd, args) => {
      if (cmd !== "subscribe_session") return undefined;
      channel = (args as { channel: { onmessage: (e: Envelope) => void } }).channel;
      setTimeout(() => events.forEach((e) => channel!.onmessage(e)), 0);
      return 1;
    });
    render(
      <main className="content">
        <SessionView sessionId="s1" onOpenHistory={() => {}} />
      </main>,
    );
    await waitFor(() => expect(channel).not.toBeNull());
    const main = document.querySelector("main.content") as HTMLElement;
    // Following the run at its foot; the review's panel then makes the page taller.
    Object.defineProperty(main, "scrollHeight", { configurable: true, value: 1400 });
    Object.defineProperty(main, "clientHeight", { configurable: true, value: 800 });
    main.scrollTop = 0;
    later.forEach((e) => channel!.onmessage(e));
    await screen.findByTestId("review-dock");
    await waitFor(() => expect(main.scrollTop).toBe(1400));
  });
});

describe("what a worktree's review cannot land", () => {
  it("names the files the task wrote that .gitignore hides, as text, since they go with the worktree", async () => {
    const events = reviewWaiting();
    const review = events.find((e) => e.type === "review_requested")!;
    Object.assign(review, { not_landed: [".env", "build/", "<img src=x onerror=alert(1)>"] });
    script(events, () => undefined);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const note = await screen.findByTestId("review-not-landed");
    expect(note).toHaveTextContent("your .gitignore hides these, or they were copied in from your checkout at the start, so they never land and go with the task's worktree unless you copy them");
    expect([...note.querySelectorAll("code")].map((c) => c.textContent)).toEqual([".env", "build/", "<img src=x onerror=alert(1)>"]);
    expect(note.querySelector("img"), "a file name is text").toBeNull();
  });

  it("names what the task changed inside a submodule, which the branch cannot carry, as text", async () => {
    const events = reviewWaiting();
    Object.assign(events.find((e) => e.type === "review_requested")!, { in_submodules: ["lib/api.txt", "lib/<b>x</b>.txt"] });
    script(events, () => undefined);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const note = await screen.findByTestId("review-in-submodules");
    expect(note).toHaveTextContent("inside a submodule");
    expect(note).toHaveTextContent("these never land and go with the task's worktree");
    expect(note).toHaveTextContent("lib/api.txt, lib/<b>x</b>.txt");
    expect(note.querySelector("b"), "a file name is text").toBeNull();
  });

  it("copies one of them into the checkout at the person's word, and says what was copied and what was left", async () => {
    const events = reviewWaiting();
    Object.assign(events.find((e) => e.type === "review_requested")!, { not_landed: [".env", "build/"] });
    const asked: unknown[] = [];
    script(events, (cmd, args, push) => {
      if (cmd !== "copy_ignored") return undefined;
      asked.push(args);
      if ((args as { entries: string[] }).entries[0] === "build/") {
        push({ type: "ignored_copied", copied: ["build/out.txt"], left: ["build/keep.txt"] });
        return { copied: ["build/out.txt"], left: ["build/keep.txt"] };
      }
      push({ type: "ignored_copied", copied: [".env"], left: [] });
      return { copied: [".env"], left: [] };
    });
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const user = userEvent.setup();
    await user.click(await screen.findByRole("button", { name: "Copy .env into your checkout" }));
    expect(asked).toEqual([{ reviewId: "r1", entries: [".env"] }]);
    expect(await screen.findByTestId("ignored-copied"), "what happened is said").toHaveTextContent("Copied into your checkout: .env.");
    expect(screen.queryByRole("button", { name: "Copy .env into your checkout" }), "a copied entry has no button left").toBeNull();
    expect(screen.getByTestId("review-not-landed"), "the focus stays in the box the button was in, not on the page").toHaveFocus();
    await user.click(screen.getByRole("button", { name: "Copy build/ into your checkout" }));
    await waitFor(() =>
      expect(screen.getByTestId("ignored-copied")).toHaveTextContent("Copied into your checkout: .env, build/out.txt. Left as it was, already in your checkout: build/keep.txt."),
    );
    const note = screen.getByTestId("review-not-landed");
    expect(note.querySelector("ul"), "nothing left to copy: no empty list").toBeNull();
    expect(note, "and no offer to copy what was copied").not.toHaveTextContent("unless you copy them");
  });

  it("once decided, says which of them went with the worktree, uncopied", async () => {
    const events = reviewWaiting();
    Object.assign(events.find((e) => e.type === "review_requested")!, { not_landed: [".env", "build/"] });
    events.push(ev({ type: "ignored_copied", copied: ["build/out.txt"], left: [] }));
    events.push(ev({ type: "review_resolved", review_id: "r1", decision: "approve", by: "person", feedback: null, reverted: false }));
    events.push(ev({ type: "landed", mode: "squash", target_branch: "main", commit: "abcdef1234", files: ["parser.rs"] }));
    events.push(ev({ type: "status_changed", status: "completed" }));
    script(events, () => undefined);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    expect(await screen.findByTestId("not-kept")).toHaveTextContent("Not kept: .env (your .gitignore hides it; it went with the task's worktree).");
  });

  it("keeps the decision buttons off while a copy runs, and names what could not be copied", async () => {
    const events = reviewWaiting();
    Object.assign(events.find((e) => e.type === "review_requested")!, { not_landed: ["cfg/local.env"] });
    let finish: () => void = () => {};
    script(events, (cmd, _args, push) => {
      if (cmd !== "copy_ignored") return undefined;
      return new Promise((resolve) => {
        finish = () => {
          const out = { copied: [], left: [], failed: ["cfg/local.env: a folder on its way in your checkout is a link or a file"] };
          push({ type: "ignored_copied", ...out });
          resolve(out);
        };
      });
    });
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const user = userEvent.setup();
    await user.click(await screen.findByRole("button", { name: "Copy cfg/local.env into your checkout" }));
    await waitFor(() => expect(screen.getByTestId("approve"), "no decision removes the worktree while it is copied from").toBeDisabled());
    expect(screen.getByTestId("reject")).toBeDisabled();
    finish();
    expect(await screen.findByTestId("ignored-copied")).toHaveTextContent("Not copied: cfg/local.env: a folder on its way in your checkout is a link or a file.");
    await waitFor(() => expect(screen.getByTestId("approve")).toBeEnabled());
  });

  it("offers no copy while an approve is landing, so no copy ending turns the decision buttons back on mid-landing", async () => {
    const events = reviewWaiting();
    Object.assign(events.find((e) => e.type === "review_requested")!, { not_landed: [".env"] });
    script(events, (cmd) => {
      if (cmd === "get_settings") return { settings: { tasks: { landing: "squash" } } };
      if (cmd === "submit_review") return new Promise(() => {});
      if (cmd === "copy_ignored") return { copied: [".env"], left: [] };
      return undefined;
    });
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const user = userEvent.setup();
    await user.click(await screen.findByTestId("approve"));
    await screen.findByText(/Landing the task on main/);
    const copy = screen.getByRole("button", { name: "Copy .env into your checkout" });
    expect(copy, "the worktree may be gone by the time a copy runs").toBeDisabled();
    await user.click(copy);
    expect(screen.getByTestId("approve"), "the landing is still under way").toBeDisabled();
    expect(screen.getByTestId("reject")).toBeDisabled();
  });

  it("says why a copy failed inside the box, beside its button", async () => {
    const events = reviewWaiting();
    Object.assign(events.find((e) => e.type === "review_requested")!, { not_landed: [".env"] });
    script(events, (cmd) => {
      if (cmd === "copy_ignored") throw { code: "internal", message: "the worktree is gone" };
      return undefined;
    });
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const user = userEvent.setup();
    await user.click(await screen.findByRole("button", { name: "Copy .env into your checkout" }));
    const alert = await screen.findByRole("alert");
    expect(screen.getByTestId("review-not-landed")).toContainElement(alert);
    expect(alert).toHaveTextContent("The worktree is gone");
  });
});

describe("a task that ended without a review", () => {
  it("offers its review as it ended, in the person's folder once it used a tool, and opens it without a model", async () => {
    seq = 0;
    const events = [
      ev({ type: "session_created", task: "write a.txt", workspace: "/plain", provider: "openai", model: "m" }),
      ev({ type: "task_workspace", isolation: "in_place", folder: "/plain" }),
      ev({ type: "run_started", trigger: "task" }),
      ev({ type: "tool_call", call_id: "c1", tool: "write_file", input: { path: "a.txt" }, state: "done", output: "Created a.txt" }),
      ev({ type: "status_changed", status: "interrupted" }),
    ];
    const asked: string[] = [];
    script(events, (cmd, _args, push) => {
      if (cmd !== "review_ended") return null;
      asked.push(cmd);
      push({ type: "run_started", trigger: "review" });
      push({ type: "run_finished", status: "cancelled", claim: "none", verdict: null, end_reason: "cancelled" });
      push({ type: "status_changed", status: "cancelled", message: "It changed no files: there is nothing to review." });
      return null;
    });
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const user = userEvent.setup();
    expect(await screen.findByTestId("review-ended-offer")).toHaveTextContent("What it changed stays in your folder undecided until you resume it, or review it as it is");
    await user.click(screen.getByTestId("review-ended"));
    expect(asked).toEqual(["review_ended"]);
    // Nothing to show: the run's end says why the task is as it was.
    expect(await screen.findByText(/It changed no files: there is nothing to review/)).toBeInTheDocument();
    expect(screen.getByText("Review of the task as it ended")).toBeInTheDocument();
    expect(screen.queryByTestId("review-ended-offer"), "not offered again once it found nothing").toBeNull();
  });

  it("offers the review as a task ended only after a tool that could write", async () => {
    seq = 0;
    const events = [
      ev({ type: "session_created", task: "list the folder", workspace: "/plain", provider: "openai", model: "m" }),
      ev({ type: "task_workspace", isolation: "in_place", folder: "/plain" }),
      ev({ type: "run_started", trigger: "task" }),
      ev({ type: "tool_call", call_id: "c1", tool: "list_dir", input: { path: "." }, state: "done", output: "a.txt" }),
      ev({ type: "error", code: "provider", message: "the model went away" }),
      ev({ type: "run_finished", status: "failed", claim: "none", verdict: null, end_reason: "failed" }),
      ev({ type: "status_changed", status: "failed" }),
    ];
    script(events, () => null);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    expect(await screen.findByTestId("retry-run")).toBeInTheDocument();
    expect(screen.queryByTestId("review-ended-offer"), "listing the folder changed nothing").toBeNull();
  });

  it("keeps a failure's Retry once a review as it ended found nothing", async () => {
    seq = 0;
    const events = [
      ev({ type: "session_created", task: "write a.txt", workspace: "/plain", provider: "openai", model: "m" }),
      ev({ type: "task_workspace", isolation: "in_place", folder: "/plain" }),
      ev({ type: "run_started", trigger: "task" }),
      ev({ type: "tool_call", call_id: "c1", tool: "write_file", input: { path: "a.txt" }, state: "done", output: "Created a.txt" }),
      ev({ type: "error", code: "provider", message: "the model went away" }),
      ev({ type: "run_finished", status: "failed", claim: "none", verdict: null, end_reason: "failed" }),
      ev({ type: "status_changed", status: "failed" }),
      ev({ type: "run_started", trigger: "review" }),
      ev({ type: "run_finished", status: "failed", claim: "none", verdict: null, end_reason: "failed" }),
      ev({ type: "status_changed", status: "failed", message: "It changed no files: there is nothing to review." }),
    ];
    script(events, () => null);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    expect(await screen.findByTestId("retry-run")).toBeInTheDocument();
    expect(screen.queryByTestId("review-ended")).toBeNull();
  });

  it("says a review opened as the task ended for what it is, not as a second end", async () => {
    seq = 0;
    const events = [
      ev({ type: "session_created", task: "write a.txt", workspace: "/plain", provider: "openai", model: "m" }),
      ev({ type: "task_workspace", isolation: "in_place", folder: "/plain" }),
      ev({ type: "run_started", trigger: "task" }),
      ev({ type: "run_finished", status: "cancelled", claim: "none", verdict: null, end_reason: "cancelled" }),
      ev({ type: "status_changed", status: "cancelled" }),
      ev({ type: "run_started", trigger: "review" }),
      ev({ type: "run_finished", status: "awaiting_review", claim: "none", verdict: null, end_reason: "cancelled" }),
    ];
    script(events, () => null);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    expect(await screen.findByText("Review opened as the task ended: Cancelled")).toBeInTheDocument();
    expect(screen.getAllByText("Run ended: Cancelled")).toHaveLength(1);
  });

  it("offers the review of a worktree's work as it ended beside its discard", async () => {
    seq = 0;
    const events = [
      ev({ type: "session_created", task: "fix the parser", workspace: "/repo", provider: "openai", model: "m" }),
      ev({ type: "task_workspace", isolation: "worktree", folder: worktree.folder, worktree }),
      ev({ type: "run_started", trigger: "task" }),
      ev({ type: "status_changed", status: "failed" }),
    ];
    script(events, () => null);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    expect(await screen.findByTestId("discard-offer")).toHaveTextContent("review what the agent wrote there as it is, or discard it");
    expect(screen.getByTestId("review-ended")).toHaveTextContent("Review its changes");
  });

  it("offers to discard the work its worktree holds, asks first, and the offer goes once it is done", async () => {
    seq = 0;
    const events = [
      ev({ type: "session_created", task: "fix the parser", workspace: "/repo", provider: "openai", model: "m" }),
      ev({ type: "task_workspace", isolation: "worktree", folder: worktree.folder, worktree }),
      ev({ type: "run_started", trigger: "task" }),
      ev({ type: "status_changed", status: "failed" }),
    ];
    const asked: unknown[] = [];
    script(events, (cmd, args, push) => {
      if (cmd !== "discard_session") return null;
      asked.push(args);
      push({ type: "status_changed", status: "rejected" });
      push({ type: "worktree_removed", folder: worktree.folder, why: "rejected", branch_deleted: worktree.branch });
      return null;
    });
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const user = userEvent.setup();
    expect(await screen.findByTestId("discard-offer")).toHaveTextContent("finishline/abc-fix");
    // A failed task goes on with a message; the words name the way the box below offers.
    expect(screen.getByTestId("discard-offer")).toHaveTextContent("stays until you send a message to go on");
    await user.click(screen.getByTestId("discard-work"));
    expect(await screen.findByTestId("confirm-discard")).toHaveTextContent("with whatever the agent wrote there");
    expect(screen.getByTestId("confirm-discard")).toHaveTextContent("If anything changed in the worktree after the task ended (your own edits there), the branch is kept with it instead");
    await user.keyboard("{Escape}");
    expect(screen.queryByTestId("confirm-discard")).toBeNull();
    expect(asked, "Esc keeps the work").toEqual([]);
    await user.click(screen.getByTestId("discard-work"));
    await user.click(await screen.findByTestId("confirm-discard-go"));
    await waitFor(() => expect(asked).toEqual([{ sessionId: "s1", keepBranch: false }]));
    await waitFor(() => expect(screen.queryByTestId("discard-offer"), "nothing is left to discard").toBeNull());
    // Put away unreviewed: "Rejected" said a review had refused it.
    expect(screen.getByTestId("status-badge"), "its branch went with it: nothing waits").toHaveTextContent(/^Discarded$/);
    expect(screen.getByTestId("status-badge")).toHaveAttribute("title", DISCARDED_TITLE);
  });

  it("an attempt put away when the person rejected every attempt says Rejected, as the sidebar does, not Discarded", async () => {
    seq = 0;
    const events = [
      ev({ type: "session_created", task: "fix the parser", workspace: "/repo", provider: "openai", model: "m" }),
      ev({ type: "attempt_started", group: "g1", number: 2, of: 2, label: "Codex" }),
      ev({ type: "task_workspace", isolation: "worktree", folder: worktree.folder, worktree }),
      ev({ type: "run_started", trigger: "task" }),
      ev({ type: "status_changed", status: "failed" }),
      // Reject on the group: an attempt with no review of its own is recorded rejected, then put away.
      ev({ type: "status_changed", status: "rejected" }),
      ev({ type: "worktree_removed", folder: worktree.folder, why: "rejected", branch_deleted: worktree.branch }),
    ];
    script(events, () => null);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    await waitFor(() => expect(screen.getByTestId("status-badge")).toHaveTextContent(/^Rejected$/));
    expect(screen.getByText(/^Put away: its worktree and the branch finishline\/abc-fix were removed/), "the transcript says it went").toBeInTheDocument();
    expect(screen.queryByText(/^Discarded/)).toBeNull();
  });

  it("an attempt sent on after another was chosen, then discarded, reads Discarded in its header, as any task would", async () => {
    seq = 0;
    const events = [
      ev({ type: "session_created", task: "fix the parser", workspace: "/repo", provider: "openai", model: "m" }),
      ev({ type: "attempt_started", group: "g1", number: 2, of: 2, label: "Codex" }),
      ev({ type: "task_workspace", isolation: "worktree", folder: worktree.folder, worktree }),
      ev({ type: "run_started", trigger: "message" }),
      ev({ type: "status_changed", status: "idle" }),
      ev({ type: "status_changed", status: "rejected" }),
      ev({ type: "worktree_removed", folder: worktree.folder, why: "rejected", branch_deleted: worktree.branch }),
    ];
    script(events, (cmd) => (cmd === "attempt_group" ? { group: "g1", task: "fix the parser", all_ended: true, chosen: "s-other", put_away: false, ranking: [], places: [] } : null));
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    await waitFor(() => expect(screen.getByTestId("status-badge")).toHaveTextContent(/^Discarded$/));
  });

  it("can put the worktree away and keep the task's work on its branch, and says so in the transcript", async () => {
    seq = 0;
    const events = [
      ev({ type: "session_created", task: "fix the parser", workspace: "/repo", provider: "openai", model: "m" }),
      ev({ type: "task_workspace", isolation: "worktree", folder: worktree.folder, worktree }),
      ev({ type: "run_started", trigger: "task" }),
      ev({ type: "status_changed", status: "cancelled" }),
    ];
    const asked: unknown[] = [];
    script(events, (cmd, args, push) => {
      if (cmd !== "discard_session") return null;
      asked.push(args);
      push({ type: "status_changed", status: "rejected" });
      push({ type: "branch_kept", branch: worktree.branch, files: ["parser.rs"], why: "asked" });
      push({ type: "worktree_removed", folder: worktree.folder, why: "rejected", branch_deleted: null });
      return null;
    });
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    // A cancelled task goes on with Resume: the offer names that, not a message.
    expect(await screen.findByTestId("discard-offer")).toHaveTextContent("stays until you resume it (a note for the agent is optional)");
    const user = userEvent.setup();
    await user.click(await screen.findByTestId("discard-work"));
    expect(await screen.findByTestId("confirm-discard")).toHaveTextContent("keep only its branch: what the agent wrote is committed on it");
    await user.click(screen.getByTestId("confirm-discard-keep-branch"));
    await waitFor(() => expect(asked).toEqual([{ sessionId: "s1", keepBranch: true }]));
    await waitFor(() =>
      expect(screen.getAllByTestId("landing-note").map((n) => [n.textContent, n.querySelector("code")?.textContent])).toContainEqual([
        `Kept the branch ${worktree.branch} with the task's work (parser.rs), as you asked: git merge ${worktree.branch} on the branch you want it on takes it.`,
        `git merge ${worktree.branch}`,
      ]),
    );
    await waitFor(() => expect(screen.queryByTestId("discard-offer")).toBeNull());
    // As in the sidebar: its work waits on a branch, which "Rejected" alone does not say.
    const badge = screen.getByTestId("status-badge");
    expect(badge).toHaveTextContent("Branch kept");
    expect(badge, "put away, not refused in a review").toHaveAttribute("title", `Put away without a review; its work waits on ${worktree.branch}: merge it when you like, or delete it`);
  });

  it("an error from a discard or from opening the folder goes once the same action is tried again and works", async () => {
    seq = 0;
    const events = [
      ev({ type: "session_created", task: "fix the parser", workspace: "/repo", provider: "openai", model: "m" }),
      ev({ type: "task_workspace", isolation: "worktree", folder: worktree.folder, worktree }),
      ev({ type: "run_started", trigger: "task" }),
      ev({ type: "status_changed", status: "cancelled" }),
    ];
    let moved = true;
    let folderGone = true;
    script(events, (cmd, _args, push) => {
      if (cmd === "open_worktree") {
        if (folderGone) throw { code: "worktree", message: "The task's worktree folder is missing" };
        return null;
      }
      if (cmd !== "discard_session") return null;
      if (moved) throw { code: "worktree", message: "The repository moved: put it back there and discard again" };
      push({ type: "status_changed", status: "rejected" });
      push({ type: "worktree_removed", folder: worktree.folder, why: "rejected", branch_deleted: worktree.branch });
      return null;
    });
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const user = userEvent.setup();
    await user.click(await screen.findByTestId("open-worktree"));
    expect(await screen.findByText(/The task's worktree folder is missing/)).toBeInTheDocument();
    // Said beside the link that failed, where the person looks, not in the panel over the review.
    expect(within(screen.getByTestId("session-worktree")).getByRole("alert")).toHaveTextContent("The task's worktree folder is missing");
    expect(screen.queryByTestId("session-error")).toBeNull();
    folderGone = false;
    await user.click(screen.getByTestId("open-worktree"));
    await waitFor(() => expect(screen.queryByText(/The task's worktree folder is missing/), "opened, the folder's error goes").toBeNull());
    await user.click(screen.getByTestId("discard-work"));
    await user.click(await screen.findByTestId("confirm-discard-go"));
    expect(await screen.findByText("The repository moved: put it back there and discard again")).toBeInTheDocument();
    moved = false;
    await user.click(screen.getByTestId("discard-work"));
    await user.click(await screen.findByTestId("confirm-discard-go"));
    await waitFor(() => expect(screen.queryByTestId("discard-offer")).toBeNull());
    expect(screen.queryByText("The repository moved: put it back there and discard again"), "discarded, the error of the try before goes").toBeNull();
  });

  it("says a branch kept when a task was put away holds what changed after the task, not after a review", async () => {
    seq = 0;
    script([
      ev({ type: "session_created", task: "fix the parser", workspace: "/repo", provider: "openai", model: "m" }),
      ev({ type: "task_workspace", isolation: "worktree", folder: worktree.folder, worktree }),
      ev({ type: "run_started", trigger: "task" }),
      ev({ type: "status_changed", status: "failed" }),
      ev({ type: "status_changed", status: "rejected" }),
      ev({ type: "branch_kept", branch: worktree.branch, files: ["notes.md"], why: "changed_after_task" }),
      ev({ type: "worktree_removed", folder: worktree.folder, why: "rejected", branch_deleted: null }),
    ], () => null);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    expect(await screen.findByText(`Kept the branch ${worktree.branch}: it holds work Finishline did not make, such as commits of yours or the agent's own, or what changed in the worktree after the task ended (notes.md).`)).toBeInTheDocument();
  });
});

describe("an attempt continued after another of its group was chosen", () => {
  it("offers to discard the worktree its conversation made, as a task on its own", async () => {
    seq = 0;
    script([
      ev({ type: "session_created", task: "fix the parser", workspace: "/repo", provider: "openai", model: "m" }),
      ev({ type: "attempt_started", group: "g1", number: 2, of: 2, label: "Codex" }),
      ev({ type: "task_workspace", isolation: "worktree", folder: worktree.folder, worktree }),
      ev({ type: "run_started", trigger: "task" }),
      ev({ type: "status_changed", status: "rejected" }),
      ev({ type: "worktree_removed", folder: worktree.folder, why: "rejected", branch_deleted: worktree.branch }),
      ev({ type: "task_workspace", isolation: "worktree", folder: `${worktree.folder}-2`, worktree: { ...worktree, folder: `${worktree.folder}-2`, branch: "finishline/abc-fix-2" } }),
      ev({ type: "run_started", trigger: "message" }),
      ev({ type: "status_changed", status: "idle" }),
    ], (cmd) => (cmd === "attempt_group" ? { group: "g1", task: "fix the parser", ranking: [], places: [], all_ended: true, chosen: "s9" } : null));
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    expect(await screen.findByTestId("discard-offer"), "its group is decided: the worktree would otherwise stay for ever").toHaveTextContent("finishline/abc-fix-2");
  });
});

describe("reject in the folder itself", () => {
  /** A task in the folder itself whose first round (a.md) was sent back, and whose second
   * round changed nothing: then `after`. */
  const sentBackInPlace = (after: EngineEvent[]) => {
    seq = 0;
    return [
      { type: "session_created", task: "write notes", workspace: "/plain", provider: "openai", model: "m" },
      { type: "task_workspace", isolation: "in_place", folder: "/plain" },
      { type: "run_started", trigger: "task" },
      { type: "review_requested", review_id: "r0", claim: "success", verdict: "done", end_reason: "verified_done", remaining: [], files_changed: [{ path: "a.md", kind: "created", diff: "" }], verification: [] },
      { type: "review_resolved", review_id: "r0", decision: "request_changes", by: "person", feedback: "check it", reverted: false },
      { type: "run_started", trigger: "feedback" },
      { type: "review_requested", review_id: "r1", claim: "success", verdict: "done", end_reason: "verified_done", remaining: [], files_changed: [], verification: [] },
      ...after,
    ].map((e) => ev(e as EngineEvent));
  };

  it("after an approval, a follow-up's review is a task afresh: its undo covers its own changes", async () => {
    const events = sentBackInPlace([
      { type: "review_resolved", review_id: "r1", decision: "approve", by: "person", feedback: null, reverted: false },
      { type: "status_changed", status: "completed" },
      { type: "run_started", trigger: "message" },
      { type: "review_requested", review_id: "r2", claim: "success", verdict: "done", end_reason: "verified_done", remaining: [], files_changed: [{ path: "b.md", kind: "created", diff: "" }], verification: [] },
      { type: "status_changed", status: "awaiting_review" },
    ] as EngineEvent[]);
    script(events, () => null);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const box = await screen.findByTestId("revert-checkbox");
    expect(box.closest("label")).toHaveTextContent(/^Also undo the agent's changes to my files$/);
    expect(screen.getByTestId("review-files-heading")).toHaveTextContent("Files changed (1)");
  });

  it("after a request for changes, the undo says it covers every round, not only the files shown", async () => {
    const events = sentBackInPlace([{ type: "status_changed", status: "awaiting_review" }]);
    script(events, () => null);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const box = await screen.findByTestId("revert-checkbox");
    expect(box.closest("label"), "0 files shown, yet the undo removes the first round's a.md").toHaveTextContent("Also undo the agent's changes to my files, from every round of this task");
  });

  it("lists files changed after the run, keeps them unless ticked one by one, and says which were kept", async () => {
    const events = inPlaceReview("write notes", [["a.md", "created"], ["b.md", "created"]]);
    const sent: { overwrite?: string[] }[] = [];
    script(events, (cmd, args, push) => {
      if (cmd !== "submit_review") return null;
      const input = (args as { input: { overwrite?: string[] } }).input;
      sent.push(input);
      if (input.overwrite === undefined) return { outcome: "needs_confirmation", conflicts: ["a.md", "b.md"] };
      push({ type: "review_resolved", review_id: "r1", decision: "reject", by: "person", feedback: null, reverted: true });
      push({ type: "reverted", restored: [], deleted: ["b.md"], kept: ["a.md"] });
      push({ type: "status_changed", status: "rejected" });
      return { outcome: "decided", status: "rejected", revert: { restored: [], deleted: ["b.md"], conflicts: ["a.md"], applied: true } };
    });
    const shown = spyOnScrollIntoView();
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const user = userEvent.setup();
    await user.click(await screen.findByTestId("revert-checkbox"));
    await user.click(screen.getByTestId("reject"));
    const ask = await screen.findByTestId("revert-conflicts");
    expect(shown.mock.contexts, "the question is brought into view").toContain(ask);
    expect(ask, "and takes the focus").toHaveFocus();
    expect(ask).toHaveTextContent("a.md");
    // Back (or Esc) gives the focus to Reject, which asked, not to the page.
    await user.click(within(ask).getByRole("button", { name: "Back" }));
    await waitFor(() => expect(screen.getByTestId("reject")).toHaveFocus());
    await user.click(screen.getByTestId("reject"));
    await screen.findByTestId("revert-conflicts");
    await user.keyboard("{Escape}");
    await waitFor(() => expect(screen.getByTestId("reject")).toHaveFocus());
    await user.click(screen.getByTestId("reject"));
    await screen.findByTestId("revert-conflicts");
    // The agent made the file: putting back its start deletes it, the person's lines too.
    expect(screen.getAllByTestId("overwrite-label")[0]).toHaveTextContent("Delete a.md (the agent created it: your changes in it go too)");
    expect(screen.getByTestId("revert-anyway")).toHaveTextContent("keeping these");
    await user.click(screen.getAllByTestId("overwrite-file")[1]);
    await user.click(screen.getByTestId("revert-anyway"));
    // Three rejects asked (each answered with the question), then the one confirmed.
    await vi.waitFor(() => expect(sent).toHaveLength(4));
    expect(sent.map((s) => s.overwrite)).toEqual([undefined, undefined, undefined, ["b.md"]]);
    expect(await screen.findByTestId("revert-kept")).toHaveTextContent("a.md");
  });

  it("a pipe or a socket where the agent left no file is asked about as what it is, with no copy promised", async () => {
    const events = inPlaceReview("tidy up", [[".env", "deleted"], ["notes.md", "modified"]]);
    script(events, (cmd) => (cmd === "submit_review" ? { outcome: "needs_confirmation", conflicts: [".env", "notes.md"], no_file: [".env"] } : null));
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const user = userEvent.setup();
    await user.click(await screen.findByTestId("revert-checkbox"));
    await user.click(screen.getByTestId("reject"));
    await screen.findByTestId("revert-conflicts");
    const [pipe, edited] = screen.getAllByTestId("overwrite-label");
    expect(pipe).toHaveTextContent("Replace .env (a pipe or a socket is there now, where the agent left no file: perhaps yours, and it cannot be copied)");
    expect(edited).toHaveTextContent(/^Overwrite notes\.md$/);
  });

  it("a review in a plain folder says which of its files are not as the agent left them, and by whom, before Approve", async () => {
    const events = inPlaceReview("write notes", [["shared.md", "modified"], ["notes.md", "modified"]]);
    let asked = 0;
    script(events, (cmd) => {
      if (cmd !== "changed_since_run") return null;
      asked++;
      return asked === 1 ? [] : [{ path: "shared.md", by: [{ path: "shared.md", session: "ses_beta", title: "beta task" }] }, { path: "notes.md" }];
    });
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    await screen.findByTestId("review-panel");
    await vi.waitFor(() => expect(asked).toBe(1));
    expect(screen.queryByTestId("changed-since-run"), "as the agent left them: nothing to say").toBeNull();
    // The person edits a file elsewhere and comes back to the window.
    window.dispatchEvent(new Event("focus"));
    const said = await screen.findByTestId("changed-since-run");
    expect(said).toHaveTextContent("approving keeps them as they are now");
    expect(said).toHaveTextContent("shared.md (changed by “beta task”)");
    expect(said).toHaveTextContent("notes.md (changed by you, or a command)");
  });

  it("a file another task in the folder changed too is asked about as that task's work, by its title", async () => {
    const events = inPlaceReview("write notes", [["shared.md", "modified"], ["notes.md", "modified"]]);
    const other = { path: "shared.md", session: "ses_beta", title: "beta: tidy <b>up</b>" };
    script(events, (cmd) => (cmd === "submit_review" ? { outcome: "needs_confirmation", conflicts: ["notes.md", "shared.md"], other_tasks: [other] } : null));
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const user = userEvent.setup();
    await user.click(await screen.findByTestId("revert-checkbox"));
    await user.click(screen.getByTestId("reject"));
    await screen.findByTestId("revert-conflicts");
    const [edited, theirs] = screen.getAllByTestId("overwrite-label");
    expect(edited).toHaveTextContent(/^Overwrite notes\.md$/);
    expect(theirs, "whose work it would undo, its title as words").toHaveTextContent("Overwrite shared.md (another task changed it too: “beta: tidy <b>up</b>”; it may hold that task's work, which would go)");
    expect(theirs.querySelector("b")).toBeNull();
  });

  it("while the reject and revert it confirmed is under way, its question cannot be changed or sent again", async () => {
    const events = inPlaceReview("write notes", [["a.md", "created"]]);
    const sent: unknown[] = [];
    script(events, (cmd, args) => {
      if (cmd !== "submit_review") return null;
      const input = (args as { input: { overwrite?: string[] } }).input;
      sent.push(input);
      if (input.overwrite === undefined) return { outcome: "needs_confirmation", conflicts: ["a.md"] };
      return new Promise(() => {}); // waiting for another task's tools, up to 10 s
    });
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const user = userEvent.setup();
    await user.click(await screen.findByTestId("revert-checkbox"));
    await user.click(screen.getByTestId("reject"));
    await screen.findByTestId("revert-conflicts");
    await user.click(screen.getByTestId("revert-anyway"));
    await vi.waitFor(() => expect(sent).toHaveLength(2));
    expect(screen.getByTestId("revert-anyway")).toBeDisabled();
    expect(screen.getByTestId("overwrite-file"), "a tick now would never be sent").toBeDisabled();
    expect(within(screen.getByTestId("revert-conflicts")).getByRole("button", { name: "Back" })).toBeDisabled();
  });
});

describe("review that talks back", () => {
  const diff = "diff --git a/src/a.rs b/src/a.rs\n--- a/src/a.rs\n+++ b/src/a.rs\n@@ -1,3 +1,3 @@\n fn a() {\n-    let x = 1;\n+    let x = 2;\n }\n";
  function waiting(extra: Partial<Extract<EngineEvent, { type: "review_requested" }>> = {}): Envelope[] {
    seq = 0;
    return [
      ev({ type: "session_created", task: "fix a", workspace: "/plain", provider: "openai", model: "m" }),
      ev({ type: "run_started", trigger: "task" }),
      ev({ type: "review_requested", review_id: "r1", claim: "success", verdict: "done", end_reason: "verified_done", remaining: [], files_changed: [{ path: "src/a.rs", kind: "modified", diff }], verification: [], ...extra }),
      ev({ type: "status_changed", status: "awaiting_review" }),
    ];
  }

  /** The review waiting, with a file to comment on: each comment saved and each decision sent goes into `sent`. */
  function commenting(sent: unknown[]) {
    script(waiting(), (cmd, args, push) => {
      if (cmd === "review_file") return "fn a() {\n    let x = 1;\n}\n";
      if (cmd === "comment_review") {
        const c = (args as { comment: Record<string, unknown> }).comment;
        sent.push(c);
        const saved = { ...c, id: "cmt_1", quote: "    let x = 2;" };
        push({ type: "review_comment", review_id: "r1", comment: saved as never });
        return saved;
      }
      if (cmd === "submit_review") {
        sent.push((args as { input: unknown }).input);
        return { outcome: "decided", status: "busy", revert: null };
      }
      return null;
    });
  }

  it("a line range picked in the diff takes a comment, which Request changes sends back", async () => {
    const sent: unknown[] = [];
    commenting(sent);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const user = userEvent.setup();
    await screen.findByTestId("diff-view", {}, { timeout: 10_000 });
    // The gutter cells of the new side: click line 1, shift-click line 2.
    const gutters = [...document.querySelectorAll("td.diff-gutter")].filter((td) => /^[12]$/.test(td.textContent ?? ""));
    await user.click(gutters.find((g) => g.textContent === "1")!);
    await user.keyboard("{Shift>}");
    await user.click(gutters.filter((g) => g.textContent === "2").at(-1)!);
    await user.keyboard("{/Shift}");
    await user.type(await screen.findByTestId("comment-input"), "use a named constant");
    expect(screen.getByTestId("comment-keys"), "Enter saves at once, so the box says how to write a second line").toHaveTextContent("Enter saves · Shift+Enter for a new line");
    await user.click(screen.getByTestId("save-comment"));
    await vi.waitFor(() => expect(screen.getByTestId("diff-comment")).toHaveTextContent("use a named constant"));
    expect(sent[0]).toMatchObject({ path: "src/a.rs", start_line: 1, end_line: 2, side: "new", text: "use a named constant" });
    expect(screen.getByTestId("request-changes")).toHaveTextContent("1 comment");
    await user.click(screen.getByTestId("request-changes"));
    expect(screen.getByTestId("feedback-input")).toHaveFocus();
    // The comments say it all: Enter in the empty box sends them, as the box's hint says.
    await user.keyboard("{Enter}");
    await vi.waitFor(() => expect(sent).toHaveLength(2));
    expect(sent[1]).toMatchObject({ review_id: "r1", decision: "request_changes" });
  });

  it("a comment is added once however often Enter and Comment are pressed while it is on its way", async () => {
    const sent: unknown[] = [];
    let answer: () => void = () => {};
    script(waiting(), (cmd, args, push) => {
      if (cmd === "review_file") return "fn a() {\n    let x = 1;\n}\n";
      if (cmd === "comment_review") {
        const c = (args as { comment: Record<string, unknown> }).comment;
        sent.push(c);
        const saved = { ...c, id: `cmt_${sent.length}`, quote: "fn a() {" };
        return new Promise((done) => {
          answer = () => {
            push({ type: "review_comment", review_id: "r1", comment: saved as never });
            done(saved);
          };
        });
      }
      return null;
    });
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const user = userEvent.setup();
    await screen.findByTestId("diff-view", {}, { timeout: 10_000 });
    await user.click([...document.querySelectorAll("td.diff-gutter")].find((td) => td.textContent === "1")!);
    await user.type(await screen.findByTestId("comment-input"), "name the constant{Enter}{Enter}");
    expect(screen.getByTestId("save-comment"), "the Comment button waits with it").toBeDisabled();
    await user.keyboard("{Enter}");
    expect(sent, "one comment, sent once: a second would be a second criterion for the agent").toHaveLength(1);
    answer();
    await vi.waitFor(() => expect(screen.getAllByTestId("diff-comment")).toHaveLength(1));
  });

  it("after a comment is edited or removed, the keys go on from its line, not from the page", async () => {
    let comments = [{ id: "cmt_1", path: "src/a.rs", start_line: 2, end_line: 2, side: "new", quote: "    let x = 1;", text: "name it" }];
    script([...waiting(), ev({ type: "review_comment", review_id: "r1", comment: comments[0] as never })], (cmd, args, push) => {
      if (cmd === "review_file") return "fn a() {\n    let x = 1;\n}\n";
      if (cmd === "comment_review") {
        const c = (args as { comment: (typeof comments)[0] }).comment;
        comments = [c];
        push({ type: "review_comment", review_id: "r1", comment: c as never });
        return c;
      }
      if (cmd === "remove_review_comment") {
        push({ type: "review_comment_removed", review_id: "r1", comment_id: "cmt_1" } as never);
        return null;
      }
      return null;
    });
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const user = userEvent.setup();
    const comment = await screen.findByTestId("diff-comment", {}, { timeout: 10_000 });
    await user.click(within(comment).getByTestId("edit-comment"));
    await user.type(within(comment).getByTestId("comment-input"), " constant{Enter}");
    const lines = document.querySelector<HTMLElement>(".diff-lines")!;
    await waitFor(() => expect(lines, "saved, the focus is back on the lines").toHaveFocus());
    expect(document.querySelector(".diff-line-head")?.textContent, "at the comment's line, 2").toMatch(/^\s*2\b/);
    await user.click(within(screen.getByTestId("diff-comment")).getByTestId("delete-comment"));
    await waitFor(() => expect(screen.queryByTestId("diff-comment")).toBeNull());
    expect(lines, "removed, the focus is on the lines, not the page").toHaveFocus();
  });

  it("an edit or a removal of a comment that fails says why, beside that comment", async () => {
    script(
      [...waiting(), ev({ type: "review_comment", review_id: "r1", comment: { id: "cmt_1", path: "src/a.rs", start_line: 1, end_line: 1, side: "new", quote: "fn a() {", text: "name it" } as never })],
      (cmd) => {
        if (cmd === "review_file") return "fn a() {\n    let x = 1;\n}\n";
        if (cmd === "comment_review" || cmd === "remove_review_comment") throw { code: "invalid_input", message: "the review was already decided" };
        return null;
      },
    );
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const user = userEvent.setup();
    const comment = await screen.findByTestId("diff-comment", {}, { timeout: 10_000 });
    await user.click(within(comment).getByTestId("delete-comment"));
    expect(await within(comment).findByRole("alert")).toHaveTextContent(/the review was already decided/i);
    await user.click(within(comment).getByTestId("edit-comment"));
    await user.type(within(comment).getByTestId("comment-input"), " constant{Enter}");
    expect(await within(screen.getByTestId("diff-comment")).findByRole("alert")).toHaveTextContent(/the review was already decided/i);
    expect(within(screen.getByTestId("diff-comment")).getByTestId("comment-input"), "the edit is kept to try again").toHaveValue("name it constant");
  });

  it("editing an added comment keeps a new comment half typed; a line clicked while editing never gets the edited words, nor drops changed ones", async () => {
    script(
      [...waiting(), ev({ type: "review_comment", review_id: "r1", comment: { id: "cmt_1", path: "src/a.rs", start_line: 1, end_line: 1, side: "new", quote: "fn a() {", text: "name it" } as never })],
      (cmd) => (cmd === "review_file" ? "fn a() {\n    let x = 1;\n}\n" : null),
    );
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const user = userEvent.setup();
    const comment = await screen.findByTestId("diff-comment", {}, { timeout: 10_000 });
    await user.click([...document.querySelectorAll("td.diff-gutter")].find((td) => td.textContent === "2")!);
    await user.type(await screen.findByTestId("comment-input"), "why a let?");
    await user.click(within(comment).getByTestId("edit-comment"));
    expect(within(comment).getByTestId("comment-input"), "the edit starts from the comment").toHaveValue("name it");
    await user.keyboard("{Escape}");
    expect(await screen.findByTestId("comment-input"), "the new comment is as it was left").toHaveValue("why a let?");
    await user.click(within(screen.getByTestId("diff-comment")).getByTestId("edit-comment"));
    await user.click([...document.querySelectorAll("td.diff-gutter")].find((td) => td.textContent === "3")!);
    expect(screen.getAllByTestId("comment-input"), "one box").toHaveLength(1);
    expect(screen.getByTestId("comment-input"), "not the edited comment's words").not.toHaveValue("name it");
    // An edit with words changed is not dropped by a click on a line: it says to finish it first.
    await user.click(within(screen.getByTestId("diff-comment")).getByTestId("edit-comment"));
    await user.type(within(screen.getByTestId("diff-comment")).getByTestId("comment-input"), " constant");
    await user.click([...document.querySelectorAll("td.diff-gutter")].find((td) => td.textContent === "3")!);
    const editing = within(screen.getByTestId("diff-comment"));
    expect(editing.getByTestId("comment-input"), "the edit stays with its words").toHaveValue("name it constant");
    expect(editing.getByRole("alert")).toHaveTextContent("Save or cancel this edit first");
  });

  it("Esc in an edit with its words changed keeps them, as in a new comment; unchanged, it closes the edit, whose button says Save", async () => {
    script(
      [...waiting(), ev({ type: "review_comment", review_id: "r1", comment: { id: "cmt_1", path: "src/a.rs", start_line: 1, end_line: 1, side: "new", quote: "fn a() {", text: "name it" } as never })],
      (cmd) => (cmd === "review_file" ? "fn a() {\n    let x = 1;\n}\n" : null),
    );
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const user = userEvent.setup();
    const comment = await screen.findByTestId("diff-comment", {}, { timeout: 10_000 });
    await user.click(within(comment).getByTestId("edit-comment"));
    expect(within(comment).getByTestId("save-comment"), "an edit saves the comment, it does not add another").toHaveTextContent("Save");
    await user.keyboard("{Escape}");
    expect(within(screen.getByTestId("diff-comment")).queryByTestId("comment-input"), "nothing changed: Esc closes the edit").toBeNull();
    await user.click(within(screen.getByTestId("diff-comment")).getByTestId("edit-comment"));
    await user.keyboard(" constant, as the CI log shows{Escape}");
    const editing = within(screen.getByTestId("diff-comment"));
    expect(editing.getByTestId("comment-input"), "the words typed are not lost to Esc").toHaveValue("name it constant, as the CI log shows");
    expect(editing.getByTestId("comment-input"), "the focus went back to the lines").not.toHaveFocus();
    await user.click(editing.getByRole("button", { name: "Cancel" }));
    expect(screen.getByTestId("diff-comment"), "Cancel gives the edit up").toHaveTextContent("name it");
    expect(within(screen.getByTestId("diff-comment")).queryByTestId("comment-input")).toBeNull();
  });

  it("an edit with its words changed is not dropped for the Edit of another comment", async () => {
    const on = (id: string, line: number, text: string) =>
      ev({ type: "review_comment", review_id: "r1", comment: { id, path: "src/a.rs", start_line: line, end_line: line, side: "new", quote: "", text } as never });
    script([...waiting(), on("cmt_1", 1, "name it"), on("cmt_2", 3, "close it")], (cmd) => (cmd === "review_file" ? "fn a() {\n    let x = 1;\n}\n" : null));
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const user = userEvent.setup();
    await vi.waitFor(() => expect(screen.getAllByTestId("diff-comment")).toHaveLength(2), { timeout: 10_000 });
    const [first, second] = screen.getAllByTestId("diff-comment");
    await user.click(within(first).getByTestId("edit-comment"));
    await user.type(within(first).getByTestId("comment-input"), " constant");
    await user.click(within(second).getByTestId("edit-comment"));
    expect(within(first).getByTestId("comment-input"), "the changed words stay").toHaveValue("name it constant");
    expect(within(first).getByRole("alert")).toHaveTextContent("Save or cancel this edit first");
    expect(within(second).queryByTestId("comment-input"), "the other is not opened over it").toBeNull();
  });

  /** The review waiting, with "name the constant" typed on line 1 and not added. */
  async function typedNotAdded() {
    const sent: unknown[] = [];
    commenting(sent);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const user = userEvent.setup();
    await screen.findByTestId("diff-view", {}, { timeout: 10_000 });
    await user.click([...document.querySelectorAll("td.diff-gutter")].find((td) => td.textContent === "1")!);
    await user.type(await screen.findByTestId("comment-input"), "name the constant");
    return { sent, user };
  }

  it("a comment typed but not added is not lost to Send feedback: it asks first, going back to the comment is the default", async () => {
    const { sent, user } = await typedNotAdded();
    await user.click(screen.getByTestId("request-changes"));
    await user.keyboard("shorter{Enter}");
    const ask = await screen.findByTestId("confirm-unsaved");
    expect(ask).toHaveTextContent("src/a.rs");
    expect(screen.getByTestId("confirm-unsaved-keep"), "going back to the comment is the default").toHaveFocus();
    await user.keyboard("{Escape}");
    expect(sent, "nothing was sent").toHaveLength(0);
    expect(screen.getByTestId("comment-input"), "the words are still there to add").toHaveValue("name the constant");
    await waitFor(() => expect(screen.getByTestId("comment-input"), "and the focus is back in their box").toHaveFocus());
    await user.click(screen.getByTestId("send-feedback"));
    await user.click(await screen.findByTestId("confirm-unsaved-go"));
    await vi.waitFor(() => expect(sent).toHaveLength(1));
    expect(sent[0]).toMatchObject({ decision: "request_changes", feedback: "shorter" });
  });

  /** One comment added on line 1, and Request changes opened. */
  async function commentedAndOpened() {
    const { user } = await typedNotAdded();
    await user.keyboard("{Enter}");
    await user.click(screen.getByTestId("request-changes"));
    return user;
  }

  it("Send names what goes: the comments alone when no feedback is typed, the feedback and the comments once it is", async () => {
    const user = await commentedAndOpened();
    expect(screen.getByTestId("send-feedback")).toHaveTextContent(/^Send 1 comment$/);
    await user.keyboard("shorter");
    expect(screen.getByTestId("send-feedback")).toHaveTextContent(/^Send feedback and 1 comment$/);
  });

  it("approving with a comment and feedback typed asks about both in its title, as its words do", async () => {
    const user = await commentedAndOpened();
    await user.keyboard("and sort the list");
    await user.click(screen.getByTestId("approve"));
    const ask = await screen.findByTestId("confirm-approve");
    expect(ask).toHaveTextContent("Approve without sending your comment and feedback?");
    expect(ask).toHaveTextContent("and sort the list");
  });

  it("approving with a comment typed but not added asks first, as with comments added", async () => {
    const { sent, user } = await typedNotAdded();
    await user.click(screen.getByTestId("approve"));
    const ask = await screen.findByTestId("confirm-approve");
    expect(ask).toHaveTextContent("did not add it");
    expect(ask).toHaveTextContent("src/a.rs");
    expect(ask, "one comment, said as one").toHaveTextContent("Approve without sending your comment?");
    await user.click(screen.getByTestId("confirm-approve-keep"));
    expect(sent, "nothing was decided").toHaveLength(0);
    await waitFor(() => expect(screen.getByTestId("comment-input")).toHaveFocus());
    await user.click(screen.getByTestId("approve"));
    await user.click(await screen.findByTestId("confirm-approve-go"));
    await vi.waitFor(() => expect(sent).toHaveLength(1));
    expect(sent[0]).toMatchObject({ decision: "approve" });
  });

  it("a comment saved with Enter in a box a click opened leaves the focus on the lines, so the arrows go on from that line", async () => {
    const sent: unknown[] = [];
    commenting(sent);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const user = userEvent.setup();
    await screen.findByTestId("diff-view", {}, { timeout: 10_000 });
    const gutter = [...document.querySelectorAll("td.diff-gutter")].find((td) => td.textContent === "1")!;
    await user.click(gutter);
    await user.type(await screen.findByTestId("comment-input"), "use a named constant{Enter}");
    await vi.waitFor(() => expect(screen.getByTestId("diff-comment")).toHaveTextContent("use a named constant"));
    const lines = screen.getByRole("group", { name: /^Diff of src\/a\.rs/ });
    expect(lines, "not lost to the page, where the keys do nothing").toHaveFocus();
    expect(lines, "ringed, with its current line marked, as a Tab into it would be").toHaveAttribute("data-keys", "on");
    await user.keyboard("{ArrowDown}c");
    expect(await screen.findByTestId("comment-box"), "the line after the one commented").toHaveTextContent("Comment on removed line 2");
  });

  it("a comment just saved is scrolled into view, not left behind the review's buttons", async () => {
    const sent: unknown[] = [];
    commenting(sent);
    const shown: Element[] = [];
    // jsdom lays nothing out and has no scrollIntoView: a stand-in records what was shown.
    Element.prototype.scrollIntoView = function (this: Element) {
      shown.push(this);
    };
    try {
      render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
      const user = userEvent.setup();
      await screen.findByTestId("diff-view", {}, { timeout: 10_000 });
      await user.click([...document.querySelectorAll("td.diff-gutter")].find((td) => td.textContent === "1")!);
      await user.type(await screen.findByTestId("comment-input"), "use a named constant{Enter}");
      const saved = await screen.findByTestId("diff-comment");
      await vi.waitFor(() => expect(shown, "the saved comment was brought into view").toContain(saved));
    } finally {
      delete (Element.prototype as { scrollIntoView?: unknown }).scrollIntoView;
    }
  });

  it("a comment half typed survives leaving the session: back, its box is open on the same lines with the words", async () => {
    const sent: unknown[] = [];
    commenting(sent);
    const first = render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const user = userEvent.setup();
    await screen.findByTestId("diff-view", {}, { timeout: 10_000 });
    await user.click([...document.querySelectorAll("td.diff-gutter")].find((td) => td.textContent === "3")!);
    await user.type(await screen.findByTestId("comment-input"), "half a thought");
    first.unmount();
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    expect(await screen.findByTestId("comment-box", {}, { timeout: 10_000 })).toHaveTextContent("Comment on line 3");
    expect(screen.getByTestId("comment-input")).toHaveValue("half a thought");
    expect((screen.getByTestId("comment-input") as HTMLTextAreaElement).selectionStart, "typing goes on after the words, not before them").toBe("half a thought".length);
    // The same review's diff shown read-only (Attempts compares it) offers no box, and keeps the draft.
    const readOnly = render(<DiffView files={[{ path: "src/a.rs", kind: "modified", diff }]} reviewId="r1" comments={[]} editable={false} />);
    await vi.waitFor(() => expect(readOnly.container.querySelector("td.diff-gutter")).not.toBeNull());
    expect(within(readOnly.container).queryByTestId("comment-box")).toBeNull();
    readOnly.unmount();
    expect(screen.getByTestId("comment-input")).toHaveValue("half a thought");
    // Saved, it is not brought back again.
    await user.click(screen.getByTestId("save-comment"));
    await vi.waitFor(() => expect(sent).toHaveLength(1));
    cleanup();
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    await screen.findByTestId("diff-view", {}, { timeout: 10_000 });
    expect(screen.queryByTestId("comment-box")).toBeNull();
  });

  it("a draft the keyboard began comes back with the keyboard's hint", async () => {
    commenting([]);
    const first = render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const user = userEvent.setup();
    await screen.findByTestId("diff-view", {}, { timeout: 10_000 });
    screen.getByTestId("file-viewed").focus();
    await user.tab();
    await user.keyboard("{Enter}");
    await user.type(await screen.findByTestId("comment-input"), "half");
    first.unmount();
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    expect(await screen.findByTestId("comment-box", {}, { timeout: 10_000 })).toHaveTextContent("Esc goes back to the lines");
  });

  it("a click on a line's code makes it the current line, so Enter comments on the line clicked", async () => {
    const sent: unknown[] = [];
    commenting(sent);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const user = userEvent.setup();
    await screen.findByTestId("diff-view", {}, { timeout: 10_000 });
    const code = [...document.querySelectorAll("td.diff-code")].find((td) => td.textContent === "}")!;
    await user.click(code);
    await user.keyboard("{Enter}");
    expect(await screen.findByTestId("comment-box"), "the line clicked, not the hunk's first").toHaveTextContent("Comment on line 3");
  });

  /** The diff of src/a.rs and src/b.rs, rendered with its changes' @@ lines. */
  async function twoFiles(editable: boolean) {
    const other = diff.replaceAll("src/a.rs", "src/b.rs");
    const view = render(
      <DiffView
        files={[
          { path: "src/a.rs", kind: "modified", diff },
          { path: "src/b.rs", kind: "modified", diff: other },
        ]}
        reviewId="r1"
        comments={[]}
        editable={editable}
      />,
    );
    await vi.waitFor(() => expect(view.container.querySelectorAll(".diff-hunk-anchor")).toHaveLength(2));
    return view;
  }

  it("each file is one Tab stop (its toggle), and j/k, n/p still move between files and changes", async () => {
    spyOnScrollIntoView();
    const view = await twoFiles(false);
    const user = userEvent.setup();
    const [firstToggle, secondToggle] = screen.getAllByTestId("file-toggle");
    firstToggle.focus();
    await user.tab();
    expect(secondToggle, "read only, from one file's toggle Tab goes to the next file's: its head and the @@ line are no stops").toHaveFocus();
    firstToggle.focus();
    await user.keyboard("j");
    expect(view.container.querySelectorAll(".diff-file-head")[1]).toHaveFocus();
    await user.keyboard("p");
    expect(view.container.querySelectorAll(".diff-hunk-anchor")[0]).toHaveFocus();
    view.unmount();
  });

  it("with the focus outside the diff, j leads into it; a text field keeps its keys", async () => {
    spyOnScrollIntoView();
    const other = diff.replaceAll("src/a.rs", "src/b.rs");
    const view = render(
      <>
        <main tabIndex={-1} data-testid="main">
          <p>Agent's claim</p>
          <input data-testid="field" />
          <DiffView
            files={[
              { path: "src/a.rs", kind: "modified", diff },
              { path: "src/b.rs", kind: "modified", diff: other },
            ]}
            reviewId="r1"
            comments={[]}
            editable
          />
        </main>
      </>,
    );
    await vi.waitFor(() => expect(view.container.querySelectorAll(".diff-hunk-anchor")).toHaveLength(2));
    const user = userEvent.setup();
    const heads = view.container.querySelectorAll(".diff-file-head");
    await user.click(screen.getByTestId("field"));
    await user.keyboard("j");
    expect(screen.getByTestId("field"), "typed, not a move").toHaveValue("j");
    expect(screen.getByTestId("field")).toHaveFocus();
    // A click on plain text focuses the main area (it takes the focus from script), not the page.
    screen.getByTestId("main").focus();
    await user.keyboard("j");
    expect(heads[0], "from outside the diff, j goes to the first file").toHaveFocus();
    await user.keyboard("j");
    expect(heads[1], "and on from there").toHaveFocus();
    (document.activeElement as HTMLElement).blur();
    await user.keyboard("k");
    expect(heads[0], "from the page itself too").toHaveFocus();
    view.unmount();
  });

  it("from outside any diff, j goes to the waiting review's diff, not an earlier round's above it nor one folded away", async () => {
    spyOnScrollIntoView();
    const other = diff.replaceAll("src/a.rs", "src/b.rs");
    const view = render(
      <main tabIndex={-1} data-testid="main">
        <DiffView files={[{ path: "src/a.rs", kind: "modified", diff }]} reviewId="r0" comments={[]} editable={false} />
        <div className="review-dock" data-testid="dock">
          <DiffView files={[{ path: "src/b.rs", kind: "modified", diff: other }]} reviewId="r1" comments={[]} editable />
        </div>
      </main>,
    );
    await vi.waitFor(() => expect(view.container.querySelectorAll(".diff-hunk-anchor")).toHaveLength(2));
    const user = userEvent.setup();
    const heads = view.container.querySelectorAll(".diff-file-head");
    screen.getByTestId("main").focus();
    await user.keyboard("j");
    expect(heads[1], "the review's diff answers").toHaveFocus();
    screen.getByTestId("dock").classList.add("folded");
    screen.getByTestId("main").focus();
    await user.keyboard("j");
    expect(heads[0], "folded away, the review's diff does not take the keys").toHaveFocus();
    view.unmount();
  });

  it("what j/k and n/p move to is brought into view clear of the sticky file head: a file from its start, a change by its row", async () => {
    const into = spyOnScrollIntoView();
    const view = await twoFiles(true);
    const user = userEvent.setup();
    view.container.querySelectorAll<HTMLElement>(".diff-file-head")[1].focus();
    into.mockClear();
    await user.keyboard("k");
    // Stuck at the top while its lines scroll, a head brought into view "nearest" moved nothing.
    expect(into.mock.contexts.at(-1), "k goes back to the file's start").toBe(view.container.querySelectorAll(".file-change")[0]);
    expect((into.mock.calls.at(-1) as unknown[] | undefined)?.[0]).toEqual({ block: "start" });
    await user.keyboard("n");
    expect((into.mock.contexts.at(-1) as Element).tagName, "the @@ line by its row, which keeps the margin under the head").toBe("TR");
    view.unmount();
  });

  it("j/k and n/p go on from the file whose lines have the focus, and the keys on a change's @@ line lead into its lines", async () => {
    const into = spyOnScrollIntoView();
    const files = ["src/a.rs", "src/b.rs", "src/c.rs"].map((path) => ({ path, kind: "modified" as const, diff: diff.replaceAll("src/a.rs", path) }));
    const view = render(<DiffView files={files} reviewId="r1" comments={[]} editable />);
    await vi.waitFor(() => expect(view.container.querySelectorAll(".diff-hunk-anchor")).toHaveLength(3));
    const user = userEvent.setup();
    const heads = view.container.querySelectorAll<HTMLElement>(".diff-file-head");
    const anchors = view.container.querySelectorAll<HTMLElement>(".diff-hunk-anchor");
    const lines = (n = 1) => view.container.querySelectorAll<HTMLElement>(".diff-lines")[n];
    lines().focus();
    await user.keyboard("j");
    expect(heads[2], "from b's lines, the next file is c, not a").toHaveFocus();
    lines().focus();
    await user.keyboard("k");
    expect(heads[0], "and the one before is a").toHaveFocus();
    lines().focus();
    await user.keyboard("n");
    expect(anchors[2], "from the line on b's change, the next change is c's").toHaveFocus();
    await user.keyboard("{ArrowDown}");
    expect(lines(2), "↓ on the @@ line goes into its lines").toHaveFocus();
    await user.keyboard("{Enter}");
    const box = await screen.findByTestId("comment-box");
    expect(box, "and Enter comments on the change's first line").toHaveTextContent("Comment on line 1");
    expect(into.mock.contexts, "brought into view with the words above it that say what it comments on, not only its text box").toContain(box);
    view.unmount();
  });

  it("↓ on a file's head (where j leads) goes on to its first change, and ↓ again into its lines, so the hint's keys read in order", async () => {
    spyOnScrollIntoView();
    const view = render(<DiffView files={[{ path: "src/a.rs", kind: "modified", diff }]} reviewId="r1" comments={[]} editable />);
    await vi.waitFor(() => expect(view.container.querySelectorAll(".diff-hunk-anchor")).toHaveLength(1));
    const user = userEvent.setup();
    view.container.querySelector<HTMLElement>(".diff-file-head")!.focus();
    await user.keyboard("{ArrowDown}");
    expect(view.container.querySelector(".diff-hunk-anchor")).toHaveFocus();
    await user.keyboard("{ArrowDown}");
    expect(view.container.querySelector(".diff-lines"), "into the lines").toHaveFocus();
    await user.keyboard("{Enter}");
    expect(await screen.findByTestId("comment-box")).toHaveTextContent("Comment on line 1");
    expect(screen.getByTestId("file-change"), "the file stays open").toContainElement(screen.getByTestId("comment-box"));
    view.unmount();
  });

  it("n from a line in a file's second change goes to the next file's change, not back to the file's first", async () => {
    spyOnScrollIntoView();
    const two = "diff --git a/src/m.rs b/src/m.rs\n--- a/src/m.rs\n+++ b/src/m.rs\n@@ -1,2 +1,2 @@\n-one\n+ONE\n two\n@@ -10,2 +10,2 @@\n ten\n-eleven\n+ELEVEN\n";
    const files = [
      { path: "src/m.rs", kind: "modified" as const, diff: two },
      { path: "src/z.rs", kind: "modified" as const, diff: diff.replaceAll("src/a.rs", "src/z.rs") },
    ];
    const view = render(<DiffView files={files} reviewId="r1" comments={[]} editable />);
    await vi.waitFor(() => expect(view.container.querySelectorAll(".diff-hunk-anchor")).toHaveLength(3));
    const user = userEvent.setup();
    const anchors = view.container.querySelectorAll<HTMLElement>(".diff-hunk-anchor");
    view.container.querySelector<HTMLElement>(".diff-lines")!.focus();
    await user.keyboard("{ArrowDown}{ArrowDown}{ArrowDown}{ArrowDown}");
    expect(view.container.querySelector(".diff-line-head")).toHaveTextContent("eleven");
    await user.keyboard("n");
    expect(anchors[2], "the change after the line the cursor is on").toHaveFocus();
    view.unmount();
  });

  it("a click on a removed line's number opens its box at once: the press that focuses the lines does not first jump to the hunk's first line", async () => {
    const sent: unknown[] = [];
    commenting(sent);
    const into = spyOnScrollIntoView();
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const user = userEvent.setup();
    await screen.findByTestId("diff-view", {}, { timeout: 10_000 });
    into.mockClear();
    // Line 2 of the old file: the removed `let x = 1;`.
    const removed = document.querySelector("td.diff-gutter-delete")!;
    expect(removed).toHaveTextContent("2");
    await user.click(removed);
    expect(await screen.findByTestId("comment-box"), "the old file's line 2, said to be the removed one").toHaveTextContent("Comment on removed line 2");
    const jumped = into.mock.contexts.filter((el) => (el as Element).classList?.contains("diff-line-head") && !(el as Element).textContent?.includes("let x = 1;"));
    expect(jumped, "the view did not move to another line under the pointer").toHaveLength(0);
    // Closed, Enter opens the box on the line clicked, not on line 1.
    await user.keyboard("{Escape}");
    screen.getByRole("group", { name: /^Diff of src\/a\.rs/ }).focus();
    await user.keyboard("{Enter}");
    expect(await screen.findByTestId("comment-box")).toHaveTextContent("Comment on removed line 2");
  });

  it("a button that shows unchanged lines counts them as a person would say it", () => {
    expect([1, 2, 20, 21, 300].map(unchangedLines)).toEqual([
      "Show 1 unchanged line",
      "Show 2 unchanged lines",
      "Show 20 unchanged lines",
      "Show 20 more of 21 unchanged lines",
      "Show 20 more of 300 unchanged lines",
    ]);
  });

  it("a line range is commented from the keyboard alone: arrows choose it, Shift extends it, Enter opens the box, Esc closes it", async () => {
    const sent: unknown[] = [];
    commenting(sent);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const user = userEvent.setup();
    await screen.findByTestId("diff-view", {}, { timeout: 10_000 });
    // One Tab stop after the file's head, however long the file: the lines are chosen with the arrows.
    screen.getByTestId("file-viewed").focus();
    await user.tab();
    const lines = screen.getByRole("group", { name: /^Diff of src\/a\.rs: arrow keys choose a line.*Enter comments/ });
    expect(lines).toHaveFocus();
    // Tabbed into, line 1 is the current line at once; Down moves on and Up comes back; Shift+Down
    // extends to line 2 of the new file (over the deleted line, which is the old file's); Enter
    // opens the box.
    const current = () => [...lines.querySelectorAll(".diff-line-current")];
    expect(current()).toHaveLength(1);
    expect(current()[0]).toHaveTextContent("fn a() {");
    await user.keyboard("{ArrowDown}{ArrowUp}");
    expect(current()[0]).toHaveTextContent("fn a() {");
    await user.keyboard("{Shift>}{ArrowDown}{/Shift}");
    expect(current()).toHaveLength(2);
    expect(current()[1]).toHaveTextContent("let x = 2;");
    await user.keyboard("{Enter}");
    expect(await screen.findByTestId("comment-box")).toHaveTextContent("Comment on lines 1–2");
    expect(screen.getByTestId("comment-input")).toHaveFocus();
    await user.keyboard("use a named constant{Enter}");
    await vi.waitFor(() => expect(screen.getByTestId("diff-comment")).toHaveTextContent("use a named constant"));
    expect(sent[0]).toMatchObject({ path: "src/a.rs", start_line: 1, end_line: 2, side: "new", text: "use a named constant" });
    expect(screen.getByTestId("diff-comment")).toHaveTextContent("Lines 1–2");
    expect(screen.getByTestId("request-changes")).toHaveTextContent("1 comment");
    expect(lines, "the focus is back on the lines, to go on").toHaveFocus();
    // Another line, "c" opens its box too; with words in it, Esc goes back to the lines and the
    // box stays with them: Shift+Up and Enter move it to the range chosen, words and all.
    await user.keyboard("{ArrowDown}c");
    expect(await screen.findByTestId("comment-box")).toHaveTextContent("Comment on line 3");
    expect(screen.getByTestId("comment-box"), "the hint says what Esc does").toHaveTextContent("Esc goes back to the lines");
    await user.keyboard("half a thought{Escape}");
    expect(lines).toHaveFocus();
    expect(screen.getByTestId("comment-input"), "the words are not lost to Esc").toHaveValue("half a thought");
    await user.keyboard("{Shift>}{ArrowUp}{/Shift}{Enter}");
    expect(await screen.findByTestId("comment-box")).toHaveTextContent("Comment on lines 2–3");
    expect(screen.getByTestId("comment-input")).toHaveValue("half a thought");
    // Cancel gives the words up; an empty box closes with Esc.
    await user.click(screen.getByRole("button", { name: "Cancel" }));
    expect(screen.queryByTestId("comment-box")).toBeNull();
    expect(screen.getAllByTestId("diff-comment")).toHaveLength(1);
    lines.focus();
    await user.keyboard("c");
    expect(screen.getByTestId("comment-input"), "a draft given up does not come back in the next box").toHaveValue("");
    await user.keyboard("{Escape}");
    expect(screen.queryByTestId("comment-box")).toBeNull();
    expect(lines).toHaveFocus();
    expect(sent).toHaveLength(1);
  });

  it("says beside a verified outcome that a comment of the person's is not confirmed met, and does not highlight Approve", async () => {
    script(
      waiting({
        criteria: [
          { id: "c1", text: "keyboard.txt:1: say Enter, not Return", state: "unmet", evidence: "keyboard.txt was not changed since the comment" },
          { id: "c2", text: "a.txt:1: shorter", state: "met", evidence: "the evaluator found the work done" },
        ],
      }),
      () => null,
    );
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const outcome = await screen.findByTestId("review-end-reason");
    expect(outcome).toHaveTextContent("Verified done, but 1 of your comments is not confirmed met (below)");
    expect(screen.getByTestId("approve")).not.toHaveClass("primary");
  });

  it("a task rejected in place without undoing its changes says they stay and undoes them later, asking before overwriting a file changed since", async () => {
    const calls: unknown[] = [];
    script(
      [...waiting(), ev({ type: "review_resolved", review_id: "r1", decision: "reject", by: "person", feedback: null, reverted: false }), ev({ type: "status_changed", status: "rejected" })],
      (cmd, args, push) => {
        if (cmd !== "revert_rejected") return null;
        calls.push(args);
        if (!(args as { overwrite: string[] | null }).overwrite) return { outcome: "needs_confirmation", conflicts: ["src/a.rs"] };
        push({ type: "revert_started", overwrite: ["src/a.rs"] } as never);
        push({ type: "reverted", restored: ["src/a.rs"], deleted: [], kept: [] });
        return { outcome: "decided", status: "rejected", revert: { restored: ["src/a.rs"], deleted: [], conflicts: [], applied: true } };
      },
    );
    const user = userEvent.setup();
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    expect(await screen.findByTestId("undo-later")).toHaveTextContent("What the task changed stays in your folder (1 file)");
    await user.click(screen.getByTestId("undo-later-button"));
    const asked = await screen.findByTestId("undo-later-conflicts");
    // The engine asks before it undoes anything: nothing is undone yet.
    expect(asked).toHaveTextContent("Nothing is undone yet: src/a.rs changed after the agent (your edits, or another task's).");
    expect(calls[0]).toMatchObject({ sessionId: "s1", overwrite: null });
    expect(screen.getByTestId("undo-later-keep"), "the rest can be undone without touching it").toHaveTextContent("Undo the rest, keeping it");
    await user.click(screen.getByTestId("undo-later-overwrite"));
    expect(await screen.findByTestId("revert-summary")).toHaveTextContent("The agent's changes were undone");
    expect(calls[1]).toMatchObject({ sessionId: "s1", overwrite: ["src/a.rs"] });
    expect(screen.queryByTestId("undo-later"), "nothing is left to undo").toBeNull();
  });

  it("undoing a rejected task's changes later can keep the files changed since and undo the rest", async () => {
    const calls: unknown[] = [];
    script(
      [...waiting(), ev({ type: "review_resolved", review_id: "r1", decision: "reject", by: "person", feedback: null, reverted: false }), ev({ type: "status_changed", status: "rejected" })],
      (cmd, args) => {
        if (cmd !== "revert_rejected") return null;
        calls.push(args);
        if (!(args as { overwrite: string[] | null }).overwrite) return { outcome: "needs_confirmation", conflicts: ["src/a.rs"] };
        return { outcome: "decided", status: "rejected", revert: { restored: [], deleted: [], conflicts: ["src/a.rs"], applied: true } };
      },
    );
    const user = userEvent.setup();
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    await user.click(await screen.findByTestId("undo-later-button"));
    await user.click(await screen.findByTestId("undo-later-keep"));
    await vi.waitFor(() => expect(calls[1]).toMatchObject({ sessionId: "s1", overwrite: [] }));
  });

  it("rejected in place after Request changes, a last round that changed nothing still offers to undo the earlier rounds", async () => {
    const [created, ...rest] = waiting();
    const events = [
      created,
      ev({ type: "task_workspace", isolation: "in_place", folder: "/plain" }),
      ...rest.filter((e) => e.type !== "status_changed"),
      ev({ type: "review_resolved", review_id: "r1", decision: "request_changes", by: "person", feedback: "and more", reverted: false }),
      ev({ type: "run_started", trigger: "feedback" }),
      ev({ type: "review_requested", review_id: "r2", claim: "success", verdict: "done", end_reason: "verified_done", remaining: [], files_changed: [], verification: [] }),
      ev({ type: "review_resolved", review_id: "r2", decision: "reject", by: "person", feedback: null, reverted: false }),
      ev({ type: "status_changed", status: "rejected" }),
    ];
    script(events, () => null);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    expect(await screen.findByTestId("undo-later")).toHaveTextContent("What the task changed in its rounds since your last approval stays in your folder.");
  });

  it("asks the person to check a comment nobody could while the review waits, and no longer once it is decided", async () => {
    const unchecked = { id: "c1", text: "a.txt:1: shorter", state: "unverifiable" as const, evidence: "the evaluator gave no word on this comment" };
    script(waiting({ criteria: [unchecked] }), () => null);
    const { unmount } = render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    expect(await screen.findByTestId("criterion")).toHaveTextContent("? not verifiable a.txt:1: shorter — the evaluator gave no word on this comment: check it yourself");
    unmount();
    script(
      [...waiting({ criteria: [unchecked] }), ev({ type: "review_resolved", review_id: "r1", decision: "reject", by: "person", feedback: null, reverted: false }), ev({ type: "status_changed", status: "rejected" })],
      () => null,
    );
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const kept = await screen.findByTestId("criterion");
    expect(kept).toHaveTextContent("the evaluator gave no word on this comment");
    expect(kept, "a rejected task has nothing left to check").not.toHaveTextContent("check it yourself");
  });

  it("approving past the audit's findings or a comment not confirmed met asks first, naming them, and keeps reviewing by default", async () => {
    const sent: { input: { decision: string } }[] = [];
    const finding = { rule: "assertion_removed", path: "tests/a.rs", line: 4, detail: "an assertion was removed", excerpt: "assert_eq!(x, 4);" } as const;
    const decided = (cmd: string, args: unknown) => {
      if (cmd !== "submit_review") return undefined;
      sent.push(args as { input: { decision: string } });
      return { outcome: "decided", status: "completed", revert: null };
    };
    script(waiting({ audit: [finding, { ...finding, line: 9, rule: "skip_added" as const }] }), decided);
    const { unmount } = render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const user = userEvent.setup();
    await user.click(await screen.findByTestId("approve"));
    const ask = await screen.findByTestId("confirm-approve");
    expect(ask).toHaveTextContent("Approve with 2 changes that weaken the checks?");
    expect(ask).toHaveTextContent("The audit found: assertion removed at tests/a.rs:4; test skipped at tests/a.rs:9. Approving accepts them as they are.");
    expect(screen.getByTestId("confirm-approve-keep"), "going back to the review is the default").toHaveFocus();
    await user.keyboard("{Escape}");
    expect(sent, "nothing was decided").toHaveLength(0);
    await user.click(screen.getByTestId("approve"));
    await user.click(await screen.findByTestId("confirm-approve-go"));
    await vi.waitFor(() => expect(sent).toHaveLength(1));
    expect(sent[0].input.decision).toBe("approve");
    unmount();

    sent.length = 0;
    script(waiting({ criteria: [{ id: "c2", text: "src/b.rs:1: add a test", state: "unmet", evidence: "src/b.rs was not changed since the comment" }] }), decided);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    await user.click(await screen.findByTestId("approve"));
    expect(await screen.findByTestId("confirm-approve")).toHaveTextContent("Approve with 1 of your comments not confirmed met?");
    expect(screen.getByTestId("confirm-approve")).toHaveTextContent("src/b.rs:1: add a test");
    await user.click(screen.getByTestId("confirm-approve-keep"));
    expect(sent).toHaveLength(0);
  });

  it("shows the audit's findings, why auto-approve did not take it, and the last review's comments as a checklist", async () => {
    script(
      waiting({
        audit: [{ rule: "assertion_removed", path: "tests/a.rs", line: 4, detail: "an assertion was removed", excerpt: "assert_eq!(x, 4);" }],
        auto_approve: { approved: false, reason: "the audit found 1 change that weakens or bypasses the checks" },
        criteria: [
          { id: "c1", text: "src/a.rs:2: use a named constant", state: "met", evidence: "the evaluator found the work done" },
          { id: "c2", text: "src/b.rs:1: add a test", state: "unmet", evidence: "src/b.rs was not changed since the comment" },
        ],
        remaining: ["src/b.rs:1: add a test", "update the changelog"],
      }),
      () => null,
    );
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const audit = await screen.findByTestId("review-audit");
    // The outcome reads "Verified done": beside it, that the checks it passed were weakened.
    expect(screen.getByTestId("review-end-reason")).toHaveTextContent(
      "Verified done, but the audit found 1 change that weakens the checks (below), and 1 of your comments is not confirmed met (below)",
    );
    expect(audit).toHaveTextContent("Assertion removed");
    expect(audit).toHaveTextContent("tests/a.rs:4");
    // tests/a.rs is not among this round's files: an earlier round changed it, and it lands too.
    expect(within(audit).getByTestId("audit-earlier")).toHaveTextContent("from an earlier round; Approve accepts it too");
    expect(audit, "beside the path, not run together with the finding's own brackets").toHaveTextContent("tests/a.rs:4 (from an earlier round; Approve accepts it too) — an assertion was removed");
    expect(screen.getByTestId("approve"), "approving weakened checks is not the highlighted way on").not.toHaveClass("primary");
    expect(screen.getByTestId("auto-approve-note")).toHaveTextContent("the audit found 1 change");
    const items = screen.getAllByTestId("criterion");
    expect(items[0]).toHaveTextContent("✓ met");
    expect(items[1]).toHaveTextContent("✗ not met");
    expect(items[1]).toHaveTextContent("src/b.rs was not changed");
    expect(screen.getByTestId("review-remaining"), "an open comment is in the checklist, with its reason, not listed twice").not.toHaveTextContent("add a test");
    expect(screen.getByTestId("review-remaining")).toHaveTextContent("update the changelog");
    // Asking for more changes without repeating it: the comment not met goes with the request.
    await userEvent.setup().click(screen.getByTestId("request-changes"));
    expect(await screen.findByTestId("feedback-carried")).toHaveTextContent("Your comment not met goes with it, checked again");
    // Nothing typed, nothing added: that comment alone can be sent again.
    expect(screen.getByTestId("send-feedback")).toHaveTextContent("Send the open comment again");
    expect(screen.getByTestId("send-feedback")).toBeEnabled();
  });

  it("names on Send everything that goes: the words, the comments, and the open comments carried on", () => {
    expect(sendLabel("", 0)).toBe("Send feedback");
    expect(sendLabel("rename it", 0)).toBe("Send feedback");
    expect(sendLabel("", 2)).toBe("Send 2 comments");
    expect(sendLabel("rename it", 1)).toBe("Send feedback and 1 comment");
    expect(sendLabel("", 0, 1)).toBe("Send the open comment again");
    expect(sendLabel("rename it", 0, 1)).toBe("Send feedback and the open comment");
    expect(sendLabel("rename it", 1, 2)).toBe("Send feedback, 1 comment and the 2 open comments");
    expect(sendLabel("", 1, 1)).toBe("Send 1 comment and the open comment");
  });

  it("offers no Let it go for a comment found not met that a new comment on this review asks again, nor counts it twice", async () => {
    const events = waiting({
      criteria: [
        { id: "c1", text: "src/a.rs:2: use a named constant", state: "unmet", evidence: "line 2 still says 1" },
        { id: "c2", text: "src/a.rs:1-2 (as it was): keep the old name", state: "unmet", evidence: "renamed" },
      ],
    });
    events.push(ev({ type: "review_comment", review_id: "r1", comment: { id: "cmt_9", path: "src/a.rs", start_line: 2, end_line: 2, side: "new", quote: "", text: " use a named constant " } }));
    script(events, () => null);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const items = await screen.findAllByTestId("criterion");
    expect(within(items[0]).queryByTestId("criterion-let-go"), "asked again by the new comment").toBeNull();
    expect(within(items[1]).getByTestId("criterion-let-go")).toHaveAccessibleName("Let it go: src/a.rs:1-2 (as it was): keep the old name");
    await userEvent.setup().click(screen.getByTestId("request-changes"));
    expect(screen.getByTestId("feedback-carried")).toHaveTextContent("Your comment not met goes with it");
  });

  it("a comment let go is accepted: the outcome counts it apart and Approve does not ask about it again", async () => {
    const sent: string[] = [];
    script(
      waiting({
        criteria: [
          { id: "c1", text: "src/a.rs:2: use a named constant", state: "unmet", evidence: "src/a.rs was not changed since the comment" },
          { id: "c2", text: "src/b.rs:1: add a test", state: "unmet", evidence: "src/b.rs was not changed since the comment" },
        ],
      }),
      (cmd, args) => {
        if (cmd === "submit_review") sent.push((args as { input: { decision: string } }).input.decision);
        return cmd === "submit_review" ? { outcome: "decided", status: "completed", revert: null } : null;
      },
    );
    const user = userEvent.setup();
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const items = await screen.findAllByTestId("criterion");
    expect(screen.getByTestId("review-outcome-unmet")).toHaveTextContent("2 of your comments are not confirmed met (below)");
    await user.click(within(items[1]).getByTestId("criterion-let-go"));
    expect(screen.getByTestId("review-outcome-unmet")).toHaveTextContent("1 of your comments is not confirmed met, and you let 1 go (below)");
    await user.click(screen.getByTestId("approve"));
    const asked = await screen.findByTestId("confirm-approve");
    expect(asked).toHaveTextContent("with 1 of your comments not confirmed met?");
    expect(asked, "the one let go is not named again").not.toHaveTextContent("add a test");
    await user.keyboard("{Escape}");
    await user.click(within(items[0]).getByTestId("criterion-let-go"));
    expect(screen.getByTestId("review-outcome-unmet")).toHaveTextContent("you let go of 2 comments not met (below)");
    await user.click(screen.getByTestId("approve"));
    await waitFor(() => expect(sent, "both let go: approving asks nothing more").toEqual(["approve"]));
  });

  it("keeps a comment let go, as the typed words are, across a visit elsewhere and back", async () => {
    const sent: { let_go?: string[] }[] = [];
    const events = waiting({ criteria: [{ id: "c2", text: "src/b.rs:1: add a test", state: "unmet", evidence: "src/b.rs was not changed since the comment" }] });
    const answer = (cmd: string, args: unknown) => {
      if (cmd === "submit_review") {
        sent.push((args as { input: { let_go?: string[] } }).input);
        return { outcome: "decided", status: "busy", revert: null };
      }
      return null;
    };
    script(events, answer);
    const user = userEvent.setup();
    const first = render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    await user.click(await screen.findByTestId("criterion-let-go"));
    await user.click(screen.getByTestId("request-changes"));
    await user.type(screen.getByTestId("feedback-input"), "rename it");
    first.unmount();
    script(events, answer);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    expect(await screen.findByTestId("criterion-let-go")).toHaveTextContent("Keep asking");
    const box = screen.getByTestId<HTMLTextAreaElement>("feedback-input");
    expect(box.selectionStart, "the caret is after the words kept, where typing goes on").toBe("rename it".length);
    expect(await screen.findByTestId("feedback-let-go")).toHaveTextContent("The comment you let go is not sent");
    await user.click(screen.getByTestId("send-feedback"));
    expect(sent.map((i) => i.let_go)).toEqual([["c2"]]);
  });

  it("lets the person let go of a comment found not met: it is not sent with the request, and the record says so", async () => {
    let sent: { let_go?: string[]; feedback?: string } | null = null;
    script(
      waiting({
        criteria: [
          { id: "c1", text: "src/a.rs:2: use a named constant", state: "met", evidence: "the evaluator found the work done" },
          { id: "c2", text: "src/b.rs:1: add a test", state: "unmet", evidence: "src/b.rs was not changed since the comment" },
        ],
      }),
      (cmd, args, push) => {
        if (cmd === "submit_review") {
          sent = (args as { input: { let_go?: string[]; feedback?: string } }).input;
          push({ type: "review_resolved", review_id: "r1", decision: "request_changes", by: "person", feedback: "rename it", reverted: false });
          push({ type: "comments_let_go", review_id: "r1", comments: ["src/b.rs:1: add a test"] });
          return { outcome: "decided", status: "busy", revert: null };
        }
        return null;
      },
    );
    const user = userEvent.setup();
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const items = await screen.findAllByTestId("criterion");
    expect(within(items[0]).queryByTestId("criterion-let-go"), "one met is done: nothing to let go").toBeNull();
    await user.click(within(items[1]).getByTestId("criterion-let-go"));
    expect(items[1]).toHaveTextContent("let go: not sent with your request, nor checked again");
    expect(within(items[1]).getByTestId("criterion-let-go")).toHaveTextContent("Keep asking");
    await user.click(screen.getByTestId("request-changes"));
    expect(screen.queryByTestId("feedback-carried"), "none goes with it now").toBeNull();
    expect(screen.getByTestId("feedback-let-go")).toHaveTextContent("The comment you let go is not sent");
    expect(screen.getByTestId("send-feedback"), "with it let go and nothing typed there is nothing to send").toBeDisabled();
    await user.type(screen.getByTestId("feedback-input"), "rename it");
    await user.click(screen.getByTestId("send-feedback"));
    expect(sent!.let_go).toEqual(["c2"]);
    expect(await screen.findByTestId("let-go-record")).toHaveTextContent("Let go, not asked again: src/b.rs:1: add a test");
    // The decided review's checklist, kept above the next run, marks it too.
    await waitFor(() => expect(screen.getAllByTestId("criterion")[1]).toHaveTextContent("you let it go"));
  });
});
