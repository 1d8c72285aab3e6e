import { render, screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { emit } from "@tauri-apps/api/event";
import { mockIPC } from "@tauri-apps/api/mocks";
import { describe, expect, it } from "vitest";
import type { EngineEvent, Envelope, EvaluatorTrust } from "../ipc";
import { History } from "../screens/History";
import { SessionView } from "../screens/Session";

const judge = (over: Partial<EvaluatorTrust>): EvaluatorTrust => ({ model: "judge-a", reviews: 4, done_verdicts: 4, false_done_reviews: 2, false_done: ["ses_b", "ses_c"], false_done_rate: 0.5, sent_back: 1, sent_back_then_approved: ["ses_a"], ...over });

describe("the Trust view in History", () => {
  it("shows each evaluator's reviews and false-done rate, and opens the sessions behind a number", async () => {
    const opened: string[] = [];
    mockIPC((cmd) => {
      if (cmd === "list_sessions") return [];
      if (cmd === "evaluator_trust") return [judge({}), judge({ model: "judge-b", reviews: 1, done_verdicts: 1, false_done_reviews: 0, false_done: [], false_done_rate: 0, sent_back: 0, sent_back_then_approved: [] })];
      if (cmd === "checkpoint_usage") return [];
    });
    render(<History onNewTask={() => {}} onOpen={(id) => opened.push(id)} />);
    const user = userEvent.setup();
    await user.click(await screen.findByText("How far to trust the evaluator"));
    const rows = await screen.findAllByTestId("trust-row");
    expect(rows.map((r) => r.getAttribute("data-model"))).toEqual(["judge-a", "judge-b"]);
    expect(within(rows[0]).getByTestId("trust-false-done"), "rate, with the counts it comes from").toHaveTextContent("50% (2 of 4)");
    expect(within(rows[0]).getByTestId("trust-sent-back")).toHaveTextContent("1 of 1");
    await user.click(within(rows[0]).getAllByTestId("trust-session")[1]);
    expect(opened, "a number links to the sessions behind it").toEqual(["ses_c"]);
  });

  it("names the sessions behind a number by their tasks, not session 1, 2", async () => {
    const asked: unknown[] = [];
    mockIPC((cmd, args) => {
      if (cmd === "list_sessions") {
        const filter = (args as { filter: { ids?: string[] } | null }).filter ?? {};
        if (!filter.ids) return [];
        asked.push(filter.ids);
        return [
          { id: "ses_b", title: "Fix the parser", attempt: { group: "g", number: 2, of: 2, label: "Codex", chosen: false } },
          { id: "ses_c", title: "Write the changelog for the release of version two, with every change" },
        ];
      }
      if (cmd === "evaluator_trust") return [judge({})];
      if (cmd === "checkpoint_usage") return [];
    });
    render(<History onNewTask={() => {}} onOpen={() => {}} />);
    const user = userEvent.setup();
    await user.click(await screen.findByText("How far to trust the evaluator"));
    const row = await screen.findByTestId("trust-row");
    await waitFor(() => expect(within(row).getAllByTestId("trust-session").map((b) => b.textContent)).toEqual(["Fix the parser (Codex)", "Write the changelog for the release of…", "session ses_a"]));
    expect(within(row).getAllByTestId("trust-session")[1]).toHaveAttribute("title", "Open “Write the changelog for the release of version two, with every change”");
    expect(asked, "asked once, for every session named").toEqual([["ses_b", "ses_c", "ses_a"]]);
  });

  it("follows the history: a deleted session's figures go, and a failed load can be tried again", async () => {
    let figures: EvaluatorTrust[] | "broken" = "broken";
    mockIPC(
      (cmd) => {
        if (cmd === "list_sessions") return [];
        if (cmd === "checkpoint_usage") return [];
        if (cmd === "evaluator_trust") {
          if (figures === "broken") throw { code: "storage", message: "database is locked" };
          return figures;
        }
      },
      { shouldMockEvents: true },
    );
    render(<History onNewTask={() => {}} onOpen={() => {}} />);
    const user = userEvent.setup();
    await user.click(await screen.findByText("How far to trust the evaluator"));
    const view = screen.getByTestId("trust-view");
    expect(await within(view).findByRole("alert")).toHaveTextContent(/database is locked/i);
    figures = [judge({})];
    await user.click(within(view).getByRole("button", { name: "Try again" }));
    expect(await within(view).findAllByTestId("trust-row")).toHaveLength(1);
    figures = [];
    await emit("history-changed", "ses_b");
    await waitFor(() => expect(within(view).queryAllByTestId("trust-row"), "the deleted sessions' figures are gone").toHaveLength(0));
  });

  it("says there is nothing yet instead of showing a perfect 0%", async () => {
    mockIPC((cmd) => (cmd === "list_sessions" || cmd === "evaluator_trust" || cmd === "checkpoint_usage" ? [] : undefined));
    render(<History onNewTask={() => {}} onOpen={() => {}} />);
    await userEvent.setup().click(await screen.findByText("How far to trust the evaluator"));
    expect(await screen.findByText(/No reviews yet/)).toBeInTheDocument();
  });
});

let seq = 0;
const ev = (e: EngineEvent): Envelope => ({ ...e, seq: ++seq, session_id: "s1", at: "2026-11-21T00:00:00Z" }) as Envelope;
const reviewEvents = () => {
  seq = 0;
  return [
    ev({ type: "session_created", task: "t", workspace: "/ws", provider: "openai", model: "m" }),
    ev({ type: "run_started", trigger: "task" }),
    ev({ type: "evaluation", cycle: 1, verdict: "done", summary: "looks done", remaining: [], stuck_reason: null, model: "judge-a", parse_ok: true, usage: { input_tokens: 1, output_tokens: 1 } }),
    ev({ type: "review_requested", review_id: "r1", claim: "success", verdict: "done", end_reason: "verified_done", remaining: [], files_changed: [], verification: [] }),
    ev({ type: "run_finished", status: "awaiting_review", claim: "success", verdict: "done", end_reason: "verified_done" }),
    ev({ type: "status_changed", status: "awaiting_review" }),
  ];
};
function session(trust: EvaluatorTrust[]) {
  mockIPC((cmd, args) => {
    if (cmd === "subscribe_session") {
      const events = reviewEvents();
      setTimeout(() => events.forEach((e) => (args as { channel: { onmessage: (e: Envelope) => void } }).channel.onmessage(e)), 0);
      return 1;
    }
    if (cmd === "evaluator_trust") return trust;
  });
  render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
}

describe("the review panel's track record", () => {
  it("shows the current evaluator's false-done rate beside its verdict once it has 10 reviews", async () => {
    session([judge({ reviews: 40, done_verdicts: 30, false_done_reviews: 3, false_done_rate: 0.1 })]);
    expect(await screen.findByTestId("false-done-rate")).toHaveTextContent("judge-a: 10% false done over 40 reviews");
  });

  it("stays quiet below 10 reviews, where a rate would be noise", async () => {
    session([judge({ reviews: 9 })]);
    await screen.findByTestId("review-panel");
    await new Promise((r) => setTimeout(r, 50));
    await waitFor(() => expect(screen.queryByTestId("false-done-rate")).not.toBeInTheDocument());
  });
});
