import { act, fireEvent, render, screen } from "@testing-library/react";
import { useState } from "react";
import { describe, expect, it } from "vitest";
import { Tooltips } from "../components/Tooltips";

function Plan() {
  const [started, setStarted] = useState(false);
  return (
    <>
      {started ? <p>Step 1/2 running</p> : <button title="Run the plan (Ctrl+Enter)">Run the plan</button>}
      <button onClick={() => setStarted(true)}>start from elsewhere</button>
      <Tooltips />
    </>
  );
}

const rest = () => act(() => new Promise((r) => setTimeout(r, 650)));

describe("tooltips", () => {
  it("show a control's title after a rest, and close when the control goes away under the pointer", async () => {
    render(<Plan />);
    const run = screen.getByText("Run the plan");
    fireEvent.pointerOver(run);
    await rest();
    expect(screen.getByRole("tooltip")).toHaveTextContent("Run the plan (Ctrl+Enter)");
    expect(run, "the native tooltip is held back while the page's shows").not.toHaveAttribute("title");
    // The plan starts (Ctrl+Enter, or from elsewhere): the button is replaced, the pointer has not moved.
    act(() => screen.getByText("start from elsewhere").click());
    await act(() => new Promise((r) => setTimeout(r, 20)));
    expect(screen.queryByRole("tooltip")).toBeNull();
  });

  it("give the title back when the pointer leaves", async () => {
    render(<Plan />);
    const run = screen.getByText("Run the plan");
    fireEvent.pointerOver(run);
    await rest();
    fireEvent.pointerOut(run, { relatedTarget: document.body });
    expect(screen.queryByRole("tooltip")).toBeNull();
    expect(run).toHaveAttribute("title", "Run the plan (Ctrl+Enter)");
  });
});
