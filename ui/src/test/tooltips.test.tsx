import { act, fireEvent, render, screen } from "@testing-library/react";
import { useState } from "react";
import { describe, expect, it, onTestFinished } from "vitest";
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

  it("stay whole inside the window beside its left edge: a sidebar badge's long title is not cut", async () => {
    const original = HTMLElement.prototype.getBoundingClientRect;
    // jsdom lays nothing out: the badge sits at the left edge, the tooltip is 300 px wide and
    // drawn centred on where it is put (as its CSS transform does).
    HTMLElement.prototype.getBoundingClientRect = function (this: HTMLElement) {
      if (this.getAttribute("role") === "tooltip") {
        const left = parseFloat(this.style.left) - 150;
        return { left, right: left + 300, top: 0, bottom: 20, width: 300, height: 20, x: left, y: 0, toJSON: () => ({}) } as DOMRect;
      }
      return { left: 20, right: 100, top: 100, bottom: 120, width: 80, height: 20, x: 20, y: 100, toJSON: () => ({}) } as DOMRect;
    };
    onTestFinished(() => void (HTMLElement.prototype.getBoundingClientRect = original));
    render(
      <>
        <span title="You approved an earlier round of this task; that work stays where it landed. Only the last round was rejected.">Follow-up rejected</span>
        <Tooltips />
      </>,
    );
    fireEvent.pointerOver(screen.getByText("Follow-up rejected"));
    await rest();
    const tip = screen.getByRole("tooltip");
    expect(parseFloat(tip.style.left) - 150, "its left edge inside the window").toBeGreaterThanOrEqual(8);
  });
});
