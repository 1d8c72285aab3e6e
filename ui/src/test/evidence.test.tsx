import { render, screen } from "@testing-library/react";
import { mockIPC } from "@tauri-apps/api/mocks";
import { describe, expect, it } from "vitest";
import type { EngineEvent, Envelope } from "../ipc";
import { SessionView } from "../screens/Session";
import { apply, emptyModel } from "../session/model";

let seq = 0;
const ev = (e: EngineEvent): Envelope => ({ ...e, seq: ++seq, session_id: "s1", at: "2026-11-21T00:00:00Z" }) as Envelope;

function script(events: Envelope[]) {
  mockIPC((cmd, args) => {
    if (cmd === "subscribe_session") {
      const channel = (args as { channel: { onmessage: (e: Envelope) => void } }).channel;
      setTimeout(() => events.forEach((e) => channel.onmessage(e)), 0);
      return null;
    }
    return null;
  });
}

const start = () => {
  seq = 0;
  return [ev({ type: "session_created", task: "write a.txt and b.txt", workspace: "/ws", provider: "openai", model: "m" }), ev({ type: "run_started", trigger: "task" })];
};

describe("evidence the person sees", () => {
  it("shows the agent's claim in its own words and the stuck pattern at the review gate", async () => {
    script([
      ...start(),
      ev({
        type: "review_requested",
        review_id: "r1",
        claim: "partial",
        verdict: "not_done",
        end_reason: "stuck",
        remaining: ["write b.txt"],
        files_changed: [],
        verification: [],
        claim_words: { summary: "Wrote a.txt", remaining_work: "b.txt: I lack its contents" },
        verdict_summary: "a.txt exists, b.txt does not",
        stuck: { pattern: "same_action_error", repeated: 'read_file({"path":"b.src"})' },
        not_covered: ["media/take1.mov"],
      }),
      ev({ type: "status_changed", status: "awaiting_review" }),
    ]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    expect(await screen.findByTestId("review-claim-words")).toHaveTextContent("Wrote a.txt");
    expect(screen.getByTestId("review-claim-remaining")).toHaveTextContent("b.txt: I lack its contents");
    expect(screen.getByTestId("review-stuck")).toHaveTextContent("the same action failing 3 times");
    expect(screen.getByTestId("review-stuck"), "what repeated is said in words, as its card says it").toHaveTextContent("the same action failing 3 times: read b.src");
    expect(screen.getByTestId("review-stuck"), "not as raw arguments").not.toHaveTextContent('{"path"');
    expect(screen.getByTestId("review-not-covered"), "the review says which files revert cannot restore").toHaveTextContent("media/take1.mov");
    expect(screen.getByTestId("review-verdict")).toHaveTextContent("a.txt exists, b.txt does not");
  });

  it("a task that worked while its folder could not be recorded says Reject cannot undo it, and offers no revert", async () => {
    script([
      ...start(),
      ev({ type: "review_requested", review_id: "r1", claim: "success", verdict: "done", end_reason: "verified_done", remaining: [], files_changed: [], verification: [], unrecorded: true }),
      ev({ type: "status_changed", status: "awaiting_review" }),
    ]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    expect(await screen.findByTestId("review-unrecorded")).toHaveTextContent("could not be recorded");
    expect(screen.getByTestId("review-unrecorded")).toHaveTextContent("Reject cannot undo it");
    expect(screen.getByTestId("revert-checkbox"), "no revert offered that could only say nothing was undone").toBeDisabled();
  });

  it("a stuck run's review says the evaluator was not asked at the end, not that it was never asked, when it answered earlier", async () => {
    script([
      ...start(),
      ev({ type: "evaluation", cycle: 1, verdict: "not_done", summary: "b.txt is missing", remaining: ["b.txt"], stuck_reason: null, model: "judge", parse_ok: true, usage: { input_tokens: 1, output_tokens: 1 }, question: "done" }),
      ev({ type: "review_requested", review_id: "r1", claim: "none", verdict: null, end_reason: "stuck", remaining: [], files_changed: [], verification: [], stuck: { pattern: "same_action_error", repeated: "read_file" } }),
      ev({ type: "status_changed", status: "awaiting_review" }),
    ]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    expect(await screen.findByTestId("review-verdict")).toHaveTextContent("not asked at the end; its earlier answers are in the timeline");
  });

  it("a later round that never asked the evaluator says so, not that its earlier answers are in the timeline", async () => {
    script([
      ...start(),
      ev({ type: "evaluation", cycle: 1, verdict: "done", summary: "a.txt written", remaining: [], stuck_reason: null, model: "judge", parse_ok: true, usage: { input_tokens: 100, output_tokens: 20 }, question: "done" }),
      ev({ type: "review_requested", review_id: "r1", claim: "none", verdict: "done", end_reason: "verified_done", remaining: [], files_changed: [], verification: [], tokens: { agent: 500, evaluator: 120, compaction: 0 } }),
      ev({ type: "review_resolved", review_id: "r1", decision: "request_changes", by: "person", feedback: "and b.txt", reverted: false }),
      ev({ type: "review_requested", review_id: "r2", claim: "none", verdict: null, end_reason: "stuck", remaining: [], files_changed: [], verification: [], tokens: { agent: 900, evaluator: 120, compaction: 0 }, stuck: { pattern: "same_action_error", repeated: "read_file" } }),
      ev({ type: "status_changed", status: "awaiting_review" }),
    ]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    expect(await screen.findByTestId("review-verdict")).toHaveTextContent("not asked in this round");
  });

  it("shows the narrow conversation question as what was asked, never as a done verdict", async () => {
    script([
      ...start(),
      ev({ type: "evaluation", cycle: 1, verdict: "done", summary: "Nothing left undone.", remaining: [], stuck_reason: null, model: "m", parse_ok: true, usage: { input_tokens: 1, output_tokens: 1 }, question: "announced_action" }),
    ]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const q = await screen.findByTestId("verdict-question");
    expect(q).toHaveTextContent("asked whether the agent left undone what it announced or was asked to do: no");
    expect(screen.getByTestId("verdict-card")).not.toHaveTextContent("Evaluator: done");
  });

  it("turns a cancelled question's and permission's buttons into a plain note", async () => {
    seq = 0;
    const m = [
      ev({ type: "question_asked", request_id: "q1", question: "Which folder?", call_id: "c1" }),
      ev({ type: "permission_requested", request_id: "p1", tool: "run_command", input: { command: "ls" }, reason: "the shell", call_id: "c2" }),
      ev({ type: "request_cancelled", request_id: "q1" }),
      ev({ type: "request_cancelled", request_id: "p1" }),
    ].reduce(apply, emptyModel());
    const q = m.items.find((i) => i.kind === "question");
    const p = m.items.find((i) => i.kind === "permission");
    expect(q && q.kind === "question" && q.cancelled, "a cancelled question is not a declined one").toBe(true);
    expect(q && q.kind === "question" && q.answered, "nobody answered it").toBe(false);
    expect(p && p.kind === "permission" && p.cancelled).toBe(true);
    expect(p && p.kind === "permission" && p.decision, "a cancelled permission is not a denial").toBeUndefined();
    script([...start(), ev({ type: "question_asked", request_id: "q1", question: "Which folder?", call_id: "c1" }), ev({ type: "request_cancelled", request_id: "q1" })]);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    expect(await screen.findByTestId("question-cancelled")).toHaveTextContent("Cancelled");
    expect(screen.queryByRole("button", { name: "Answer" }), "its buttons are gone").toBeNull();
  });
});
