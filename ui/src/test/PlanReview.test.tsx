import { cleanup, render, screen } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { mockIPC } from "@tauri-apps/api/mocks";
import { describe, expect, it, vi } from "vitest";
import type { PlanStep } from "../ipc";
import { MAX_STEPS, PlanReview } from "../components/PlanReview";
import { spyOnScrollIntoView } from "./fixtures";

const steps: PlanStep[] = [
  { title: "Read the reports", instructions: "Read reports/.", criteria: ["every report opened"], depends_on: [] },
  { title: "Write the summary", instructions: "Write summary.md.", criteria: ["summary.md exists", "names every report"], depends_on: [0] },
];

describe("Plan review", () => {
  it("runs the plan as the person edited it: changed text, criteria per line, a removed and an added step", async () => {
    let sent: { sessionId?: string; steps?: PlanStep[] } = {};
    mockIPC((cmd, args) => {
      if (cmd === "run_plan") sent = args as typeof sent;
    });
    render(<PlanReview sessionId="s1" steps={steps} />);
    const user = userEvent.setup();
    expect(screen.getAllByTestId("plan-edit-step").map((s) => s.querySelector(".step-number")?.textContent), "each step shows its number, as the error names it").toEqual(["1.", "2."]);
    const criteria = screen.getAllByTestId("plan-edit-criteria");
    expect(criteria[1], "criteria show one per line").toHaveValue("summary.md exists\nnames every report");
    // Filled in, each box still says what it holds.
    expect(criteria[1].closest("label"), "the criteria box is named in words beside it").toHaveTextContent("Done when (one per line)");
    expect(screen.getAllByTestId("plan-edit-instructions")[1].closest("label")).toHaveTextContent("Instructions");
    // What a step waits for shows, so removing the step it waits for is seen to drop that.
    expect(screen.getAllByTestId("plan-edit-step")[1]).toHaveTextContent("Starts after step 1");
    expect(screen.getAllByTestId("plan-edit-step")[0]).not.toHaveTextContent("Starts after");
    expect(screen.getByRole("textbox", { name: "Step 1 title" }), "an empty title takes the instructions' first line").toHaveAttribute("placeholder", "What this step does (empty: its instructions' first line)");
    await user.clear(screen.getAllByTestId("plan-edit-title")[1]);
    await user.type(screen.getAllByTestId("plan-edit-title")[1], "Write a short summary");
    await user.click(screen.getAllByTestId("plan-edit-remove")[0]);
    expect(screen.getAllByTestId("plan-edit-step")[0], "the step it waited for is gone").not.toHaveTextContent("Starts after");
    await user.click(screen.getByTestId("plan-edit-add"));
    expect(screen.getByTestId("plan-run"), "an empty new step must be filled in or removed first").toBeDisabled();
    expect(screen.getByTestId("plan-review")).toHaveTextContent("Step 2 is empty");
    await user.type(screen.getAllByTestId("plan-edit-title")[1], "Check the links");
    await user.click(screen.getByTestId("plan-run"));
    await vi.waitFor(() => expect(sent.steps).toBeDefined());
    expect(sent.sessionId).toBe("s1");
    expect(sent.steps!.map((s) => s.title)).toEqual(["Write a short summary", "Check the links"]);
    expect(sent.steps![0].depends_on, "a removed step is no longer waited for").toEqual([]);
    expect(sent.steps![0].criteria).toEqual(["summary.md exists", "names every report"]);
  });

  it("keeps the person's edits when they leave the plan and come back, and not once it ran", async () => {
    mockIPC(() => undefined);
    const first = render(<PlanReview sessionId="s1" steps={steps} />);
    const user = userEvent.setup();
    await user.type(screen.getAllByTestId("plan-edit-title")[0], " twice");
    await user.click(screen.getByTestId("plan-edit-add"));
    await user.type(screen.getAllByTestId("plan-edit-title")[2], "Check the links");
    first.unmount();
    const again = render(<PlanReview sessionId="s1" steps={steps} />);
    expect(screen.getAllByTestId("plan-edit-title").map((t) => (t as HTMLInputElement).value), "the edits are as the person left them").toEqual([
      "Read the reports twice",
      "Write the summary",
      "Check the links",
    ]);
    again.unmount();
    // Another plan (the manager revised it) starts from its own steps.
    render(<PlanReview sessionId="s1" steps={[steps[1]]} />);
    expect(screen.getAllByTestId("plan-edit-title").map((t) => (t as HTMLInputElement).value)).toEqual(["Write the summary"]);
    await user.click(screen.getByTestId("plan-run"));
    cleanup();
    render(<PlanReview sessionId="s1" steps={steps} />);
    expect(screen.getAllByTestId("plan-edit-title").map((t) => (t as HTMLInputElement).value), "run, its drafts are gone").toEqual(["Read the reports", "Write the summary"]);
  });

  it("stops adding at the most steps a plan may have, each added step's title taking the focus", async () => {
    mockIPC(() => undefined);
    render(<PlanReview sessionId="s1" steps={steps} />);
    const user = userEvent.setup();
    for (let i = steps.length; i < MAX_STEPS; i++) {
      await user.click(screen.getByTestId("plan-edit-add"));
      expect(screen.getAllByTestId("plan-edit-title")[i], "the new step is where the typing goes").toHaveFocus();
    }
    expect(screen.getByTestId("plan-edit-add")).toBeDisabled();
  });

  it("an added step is brought into view whole, not only its title", async () => {
    mockIPC(() => undefined);
    const into = spyOnScrollIntoView();
    render(<PlanReview sessionId="s-add" steps={steps} />);
    const user = userEvent.setup();
    await user.click(screen.getByTestId("plan-edit-add"));
    expect(into.mock.contexts, "the new step's whole item, its instructions and Done when with it").toContain(screen.getAllByTestId("plan-edit-step")[2]);
    into.mockClear();
    await user.click(screen.getAllByTestId("plan-edit-remove")[0]);
    expect(into, "a removal moves the focus only").not.toHaveBeenCalled();
  });

  it("a step removed with the keys gives the focus to the step in its place, and the last one removed to Add step", async () => {
    mockIPC(() => undefined);
    render(<PlanReview sessionId="s-remove" steps={steps} />);
    const user = userEvent.setup();
    screen.getAllByTestId("plan-edit-remove")[1].focus();
    await user.keyboard("{Enter}");
    expect(screen.getAllByTestId("plan-edit-title")[0], "the last step removed: the one before it, not the page").toHaveFocus();
    screen.getAllByTestId("plan-edit-remove")[0].focus();
    await user.keyboard("{Enter}");
    expect(screen.getByTestId("plan-edit-add"), "none left: where the plan goes on").toHaveFocus();
  });

  it("Cancel task stays usable while Run plan is on its way: the plan's Cancel is the only one on the screen", async () => {
    const calls: string[] = [];
    mockIPC((cmd) => {
      calls.push(cmd);
      if (cmd === "run_plan") return new Promise(() => {});
      if (cmd === "cancel_run") return true;
    });
    render(<PlanReview sessionId="s1" steps={steps} />);
    const user = userEvent.setup();
    await user.click(screen.getByTestId("plan-run"));
    expect(screen.getByTestId("plan-run"), "one start at a time").toBeDisabled();
    expect(screen.getByTestId("plan-cancel")).toBeEnabled();
    await user.click(screen.getByTestId("plan-cancel"));
    await vi.waitFor(() => expect(calls).toContain("cancel_run"));
  });

  it("Cancel ends an unedited plan's task at once, and asks first when the person's edits would be lost", async () => {
    const calls: string[] = [];
    mockIPC((cmd) => {
      calls.push(cmd);
      if (cmd === "cancel_run") return true;
    });
    const first = render(<PlanReview sessionId="s1" steps={steps} />);
    const user = userEvent.setup();
    await user.click(screen.getByTestId("plan-cancel"));
    await vi.waitFor(() => expect(calls).toContain("cancel_run"));
    expect(screen.queryByTestId("confirm-cancel"), "nothing of the person's to lose: the button does what it says").toBeNull();
    first.unmount();
    calls.length = 0;

    render(<PlanReview sessionId="s2" steps={steps} />);
    await user.type(screen.getAllByTestId("plan-edit-title")[0], " twice");
    await user.click(screen.getByTestId("plan-cancel"));
    const dialog = await screen.findByTestId("confirm-cancel");
    expect(dialog).toHaveTextContent("your edits to the plan are lost with it");
    expect(screen.getByTestId("confirm-cancel-keep"), "keeping the plan is the default").toHaveFocus();
    await user.keyboard("{Enter}");
    expect(screen.queryByTestId("confirm-cancel")).toBeNull();
    expect(calls).not.toContain("cancel_run");
    expect(screen.getAllByTestId("plan-edit-title")[0]).toHaveValue("Read the reports twice");
    await user.click(screen.getByTestId("plan-cancel"));
    await screen.findByTestId("confirm-cancel");
    await user.keyboard("{Control>}{Enter}{/Control}");
    expect(calls, "Ctrl+Enter in the dialog does not run the plan behind it").not.toContain("run_plan");
    await user.click(await screen.findByTestId("confirm-cancel-stop"));
    await vi.waitFor(() => expect(calls).toContain("cancel_run"));
  });

  it("a refused plan shows the engine's message and keeps the edits", async () => {
    mockIPC((cmd) => {
      if (cmd === "run_plan") throw { code: "invalid_input", message: "the plan was already answered (the session is busy)" };
    });
    render(<PlanReview sessionId="s1" steps={steps} />);
    const user = userEvent.setup();
    await user.type(screen.getAllByTestId("plan-edit-title")[0], " first");
    await user.click(screen.getByTestId("plan-run"));
    expect(await screen.findByRole("alert")).toHaveTextContent("already answered");
    expect(screen.getAllByTestId("plan-edit-title")[0]).toHaveValue("Read the reports first");
  });
});
