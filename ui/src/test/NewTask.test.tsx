import { fireEvent, render, screen } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { mockIPC } from "@tauri-apps/api/mocks";
import { describe, expect, it } from "vitest";
import { MAX_TASK_CHARS, NewTask } from "../screens/NewTask";

function pickerReturns(path: string | null) {
  mockIPC((cmd) => {
    if (cmd === "plugin:dialog|open") return path;
  });
}

describe("New task", () => {
  it("enables Run only once there is a provider, a task and a folder", async () => {
    pickerReturns("/home/me/photos");
    render(<NewTask providerReady onOpenSettings={() => {}} />);
    const user = userEvent.setup();
    const run = screen.getByTestId("run");
    expect(run, "an empty task has nothing to run").toBeDisabled();
    await user.type(screen.getByTestId("task-input"), "rename the photos by date");
    expect(run, "a task with no workspace has nowhere to work").toBeDisabled();
    await user.click(screen.getByTestId("pick-workspace"));
    expect(await screen.findByText("/home/me/photos")).toBeInTheDocument();
    expect(run).toBeEnabled();
  });

  it("keeps the old folder when the person cancels the picker", async () => {
    pickerReturns(null);
    render(<NewTask providerReady onOpenSettings={() => {}} />);
    await userEvent.setup().click(screen.getByTestId("pick-workspace"));
    expect(screen.getByTestId("workspace-path")).toHaveTextContent("No folder chosen");
  });

  it("whitespace alone is not a task", async () => {
    render(<NewTask providerReady onOpenSettings={() => {}} />);
    await userEvent.setup().type(screen.getByTestId("task-input"), "   ");
    expect(screen.getByText("Describe the task first")).toBeInTheDocument();
  });

  it("refuses a huge task with a clear message and keeps the text", () => {
    render(<NewTask providerReady onOpenSettings={() => {}} />);
    const huge = "x".repeat(MAX_TASK_CHARS + 1);
    fireEvent.change(screen.getByTestId("task-input"), { target: { value: huge } });
    expect(screen.getByText(/Shorten the task/)).toBeInTheDocument();
    expect((screen.getByTestId("task-input") as HTMLTextAreaElement).value.length, "nothing the person typed is lost").toBe(MAX_TASK_CHARS + 1);
    expect(screen.getByTestId("run")).toBeDisabled();
  });

  it("Ctrl+Enter runs the task", async () => {
    pickerReturns("/w");
    render(<NewTask providerReady onOpenSettings={() => {}} />);
    const user = userEvent.setup();
    await user.click(screen.getByTestId("pick-workspace"));
    await screen.findByText("/w");
    await user.type(screen.getByTestId("task-input"), "hello");
    await user.keyboard("{Control>}{Enter}{/Control}");
    expect(await screen.findByText(/task text is kept/), "Run must answer, never be a dead button").toBeInTheDocument();
  });
});
