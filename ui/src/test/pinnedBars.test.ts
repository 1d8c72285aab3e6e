import { describe, expect, it } from "vitest";
import { scrollToClear } from "../pinnedBars";

// The gap between a header ending at 100 and a bottom bar starting at 300.
describe("scrolling what the keyboard reached clear of the pinned bars", () => {
  it("leaves alone what already shows between them", () => {
    expect(scrollToClear({ top: 120, bottom: 160 }, 100, 300)).toBe(0);
  });
  it("scrolls up what is under the header, with a little air", () => {
    expect(scrollToClear({ top: 60, bottom: 95 }, 100, 300)).toBe(-48);
  });
  it("scrolls down what is under the bottom bar, with a little air", () => {
    expect(scrollToClear({ top: 290, bottom: 330 }, 100, 300)).toBe(38);
  });
  it("shows the top of one taller than the gap, not its foot", () => {
    expect(scrollToClear({ top: 400, bottom: 900 }, 100, 300)).toBe(292);
  });
});
