import { describe, expect, it, onTestFinished } from "vitest";
import { fireEvent } from "@testing-library/react";
import { followLastInput } from "../lastInput";

describe("the last input", () => {
  it("marks the page while the keys are in use, and not after a click or a modifier alone", () => {
    const root = document.documentElement;
    onTestFinished(followLastInput(root));
    expect(root.dataset.keys).toBeUndefined();
    fireEvent.keyDown(window, { key: "Shift" });
    expect(root.dataset.keys, "a modifier held for a click moves nothing").toBeUndefined();
    fireEvent.keyDown(window, { key: "ArrowLeft" });
    expect(root.dataset.keys).toBe("");
    fireEvent.pointerDown(window);
    expect(root.dataset.keys).toBeUndefined();
  });
});
