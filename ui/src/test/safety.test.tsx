import { render, screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { mockIPC } from "@tauri-apps/api/mocks";
import { describe, expect, it, vi } from "vitest";
import type { EngineEvent, Envelope } from "../ipc";
import { SessionView } from "../screens/Session";

let seq = 0;
const ev = (e: EngineEvent): Envelope => ({ ...e, seq: ++seq, session_id: "s1", at: "2026-11-21T00:00:00Z" }) as Envelope;

type Call = { cmd: string; [k: string]: unknown };

function script(events: Envelope[], calls: Call[], answer: (cmd: string) => unknown = () => null) {
  mockIPC((cmd, args) => {
    calls.push({ cmd, ...(args as object) });
    if (cmd === "subscribe_session") {
      const channel = (args as { channel: { onmessage: (e: Envelope) => void } }).channel;
      setTimeout(() => events.forEach((e) => channel.onmessage(e)), 0);
      return null;
    }
    return answer(cmd);
  });
}

const finished = () => {
  seq = 0;
  return [
    ev({ type: "session_created", task: "say hello", workspace: "/ws", provider: "openai", model: "m" }),
    ev({ type: "run_started", trigger: "task" }),
    ev({ type: "message_created", message_id: "a", role: "assistant", text: "Hello there." }),
    ev({ type: "status_changed", status: "idle" }),
  ];
};

const awaitingReview = () => {
  seq = 0;
  return [
    ev({ type: "session_created", task: "change a.txt", workspace: "/ws", provider: "openai", model: "m" }),
    ev({ type: "run_started", trigger: "task" }),
    ev({ type: "review_requested", review_id: "r1", claim: "success", verdict: "done", end_reason: "verified_done", remaining: [], files_changed: [{ path: "a.txt", kind: "modified", diff: "-a\n+b" }], verification: [] }),
    ev({ type: "status_changed", status: "awaiting_review" }),
  ];
};

describe("safety in the window", () => {
  it("sends one message however fast Send is clicked while the start is on its way", async () => {
    const calls: Call[] = [];
    let finish: () => void = () => undefined;
    script(finished(), calls, (cmd) => (cmd === "send_message" ? new Promise<null>((r) => (finish = () => r(null))) : null));
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    await userEvent.type(await screen.findByTestId("message-input"), "and now the tests");
    const send = screen.getByTestId("send-message");
    await userEvent.click(send);
    await userEvent.click(send);
    await userEvent.keyboard("{Enter}");
    expect(send).toBeDisabled();
    expect(calls.filter((c) => c.cmd === "send_message")).toHaveLength(1);
    finish();
    await waitFor(() => expect(screen.getByTestId("message-input")).toHaveValue(""));
  });

  it("rejects without touching the files unless the person ticks the revert", async () => {
    const calls: Call[] = [];
    script(awaitingReview(), calls, (cmd) => (cmd === "submit_review" ? { outcome: "decided", status: "rejected", revert: null } : null));
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    const box = await screen.findByTestId("revert-checkbox");
    expect(box).not.toBeChecked();
    expect(screen.getByTestId("reject")).toHaveTextContent(/^Reject$/);
    await userEvent.click(box);
    expect(screen.getByTestId("reject"), "the button says what the tick does, and Approve does not").toHaveTextContent("Reject and undo its changes");
    expect(screen.getByTestId("approve")).not.toHaveTextContent(/undo/);
    await userEvent.click(box);
    await userEvent.click(screen.getByTestId("reject"));
    await waitFor(() => expect(calls.some((c) => c.cmd === "submit_review")).toBe(true));
    const input = (calls.find((c) => c.cmd === "submit_review") as unknown as { input: { revert: boolean } }).input;
    expect(input.revert).toBe(false);
  });

  it("says the revert is under way while it waits for another task's tools in the folder, and what stopped it", async () => {
    const calls: Call[] = [];
    let refuse: (e: unknown) => void = () => undefined;
    script(awaitingReview(), calls, (cmd) => (cmd === "submit_review" ? new Promise((_, no) => (refuse = no)) : null));
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} />);
    await userEvent.click(await screen.findByTestId("revert-checkbox"));
    await userEvent.click(screen.getByTestId("reject"));
    expect(await screen.findByTestId("deciding"), "not a row of dead buttons").toHaveTextContent(
      "Undoing the task's changes… If another task's tools are at work in this folder, this waits for them (up to 10 s).",
    );
    const busy = "another task is at work in /ws or a folder around or inside it (its tools or its agent are running, or it waits for your answer to one of its questions), and what a revert did meanwhile would be counted as that task's: reject again once that is done; nothing was done yet";
    refuse({ code: "workspace_busy", message: busy });
    expect(await screen.findByRole("alert"), "said as a sentence").toHaveTextContent(busy.replace(/^a/, "A"));
    expect(screen.queryByTestId("deciding")).toBeNull();
    expect(screen.getByTestId("reject"), "and Reject can be tried again").toBeEnabled();
  });
});

describe("History and live runs", () => {
  it("offers no Delete on a session that is still running or waiting", async () => {
    const { History } = await import("../screens/History");
    const row = (id: string, status: string) => ({
      id, title: `task ${id}`, task: "t", workspace: "/ws", provider: "openai", model: "m", status, claim: null, verdict: null, end_reason: null, decision: null,
      created_at: "2026-11-23T10:00:00Z", created_ms: 1, duration_ms: 0, tokens: { agent: 0, evaluator: 0, compaction: 0 }, last_seq: 1,
    });
    mockIPC((cmd) => {
      if (cmd === "list_sessions") return [row("a", "busy"), row("b", "completed")];
      if (cmd === "checkpoint_usage") return [];
      return null;
    });
    render(<History onNewTask={() => {}} onOpen={() => {}} />);
    expect(await screen.findByTestId("delete-running")).toHaveTextContent("Cancel it to delete");
    expect(screen.getAllByTestId("delete"), "only the finished session can be deleted").toHaveLength(1);
  });
});

describe("errors with a way forward", () => {
  it("a model name the provider does not know is named as the session's own, which Settings does not change", async () => {
    seq = 0;
    script(
      [
        ev({ type: "session_created", task: "say hello", workspace: "/ws", provider: "openai", model: "model-b" }),
        ev({ type: "run_started", trigger: "task" }),
        ev({ type: "error", code: "provider_not_found", message: "Not found (404): The model `model-b` does not exist or you do not have access to it." }),
        ev({ type: "status_changed", status: "failed" }),
      ],
      [],
    );
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} onOpenSettings={() => {}} />);
    const way = await screen.findByTestId("failure-actions");
    expect(way).toHaveTextContent("This session keeps the model it started with, model-b: if that name is wrong, start the task again with the right one; the provider's address is in Settings.");
    expect(way).not.toHaveTextContent("Fix it in Settings");
    const said = screen.getByText(/does not exist or you do not have access/);
    expect(said.tagName, "the words and the name in them are one line of text, not columns").toBe("SPAN");
    expect(within(said).getByText("model-b").tagName).toBe("CODE");
  });

  it("a model name the provider does not know offers to start the task again, its words and folder in New Task; a draft there is kept", async () => {
    seq = 0;
    const events = [
      ev({ type: "session_created", task: "say hello", workspace: "/ws", provider: "openai", model: "model-b" }),
      ev({ type: "run_started", trigger: "task" }),
      ev({ type: "error", code: "provider_not_found", message: "Not found (404): The model `model-b` does not exist or you do not have access to it." }),
      ev({ type: "status_changed", status: "failed" }),
    ];
    script(events, []);
    sessionStorage.clear();
    const startAgain = vi.fn();
    const { unmount } = render(<SessionView sessionId="s1" onOpenHistory={() => {}} onOpenSettings={() => {}} onStartAgain={startAgain} />);
    await userEvent.click(await screen.findByTestId("start-again"));
    expect(startAgain).toHaveBeenCalled();
    expect([sessionStorage.getItem("finishline.taskDraft"), sessionStorage.getItem("finishline.workspaceDraft")]).toEqual(["say hello", "/ws"]);
    unmount();
    // Words the person typed in New Task meanwhile are theirs: not replaced.
    sessionStorage.setItem("finishline.taskDraft", "my other task");
    seq = 0;
    script(events, []);
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} onOpenSettings={() => {}} onStartAgain={startAgain} />);
    await userEvent.click(await screen.findByTestId("start-again"));
    expect(sessionStorage.getItem("finishline.taskDraft")).toBe("my other task");
    sessionStorage.clear();
  });

  it("a run that failed on the provider offers Retry and Open Settings", async () => {
    const calls: Call[] = [];
    seq = 0;
    script(
      [
        ev({ type: "session_created", task: "say hello", workspace: "/ws", provider: "openai", model: "m" }),
        ev({ type: "run_started", trigger: "task" }),
        ev({ type: "error", code: "provider_unreachable", message: "Could not connect to the provider at http://127.0.0.1:9/v1." }),
        ev({ type: "status_changed", status: "failed" }),
      ],
      calls,
    );
    const openSettings = vi.fn();
    render(<SessionView sessionId="s1" onOpenHistory={() => {}} onOpenSettings={openSettings} />);
    expect(await screen.findByTestId("failure-actions")).toHaveTextContent("could not be reached");
    await userEvent.click(screen.getByTestId("open-settings"));
    expect(openSettings, "Settings opens on the field to fix: the provider's address").toHaveBeenCalledWith("provider-base-url");
    await userEvent.click(screen.getByTestId("retry-run"));
    expect(calls.find((c) => c.cmd === "send_message")).toMatchObject({ sessionId: "s1", message: "" });
  });
});
