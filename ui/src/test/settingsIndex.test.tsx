import { act, render, screen } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import { SettingsIndex } from "../components/SettingsIndex";

/** A form of sections laid out at `tops` (their top edges, in window pixels, as scrolled now). */
function page(names: string[]) {
  render(
    <main className="content">
      <form>
        <SettingsIndex />
        {names.map((n) => (
          <fieldset key={n} className="panel">
            <legend>{n}</legend>
            <textarea aria-label={n} />
          </fieldset>
        ))}
      </form>
    </main>,
  );
  const sections = [...document.querySelectorAll<HTMLElement>("fieldset.panel")];
  const main = document.querySelector("main") as HTMLElement;
  // The page scrolls in the app's main pane, as in the window: 2000 px in a 800 px pane.
  Object.defineProperty(main, "scrollHeight", { configurable: true, value: 2000 });
  Object.defineProperty(main, "clientHeight", { configurable: true, value: 800 });
  return (tops: number[], from: Element = main) =>
    act(async () => {
      sections.forEach((s, i) => (s.getBoundingClientRect = () => ({ top: tops[i], bottom: (tops[i + 1] ?? tops[i] + 400) - 16, left: 0, right: 0, width: 0, height: 0, x: 0, y: tops[i], toJSON: () => "" })));
      main.scrollTop = Math.max(0, -tops[0]);
      from.dispatchEvent(new Event("scroll"));
      // The index looks once a frame.
      await new Promise((r) => requestAnimationFrame(r));
    });
}

const marked = () => screen.getAllByTestId("settings-index-link").filter((l) => l.getAttribute("aria-current") === "true").map((l) => l.textContent);

describe("Settings' index", () => {
  it("marks the section the person is reading as they scroll: the last one whose heading has reached the top", async () => {
    Object.defineProperty(window, "innerHeight", { value: 800, configurable: true });
    const scrollTo = page(["Provider", "Evaluator", "Limits"]);
    await scrollTo([0, 500, 1100]);
    expect(marked()).toEqual(["Provider"]);
    // The Evaluator's heading is near the top; only Provider's last lines are above it.
    await scrollTo([-420, 80, 680]);
    expect(marked(), "not the section whose tail is still in view").toEqual(["Evaluator"]);
    // Limits' heading is just below the middle: the Evaluator is still what is read.
    await scrollTo([-900, -400, 420]);
    expect(marked(), "not the next section before it is reached").toEqual(["Evaluator"]);
    // A short section at the top, the next one's heading below it, high in the window.
    await scrollTo([-900, 16, 226]);
    expect(marked(), "the short section at the top, not the one under it").toEqual(["Evaluator"]);
    await scrollTo([-1100, -600, 60]);
    expect(marked()).toEqual(["Limits"]);
    // A text box scrolled to its end is not the page at its end.
    const box = screen.getByLabelText("Provider");
    Object.defineProperty(box, "scrollHeight", { configurable: true, value: 300 });
    Object.defineProperty(box, "clientHeight", { configurable: true, value: 100 });
    box.scrollTop = 200;
    await scrollTo([0, 500, 1100]);
    expect(marked()).toEqual(["Provider"]);
    await scrollTo([0, 500, 1100], box);
    expect(marked(), "a text box scrolled to its end is not the page at its end").toEqual(["Provider"]);
  });

  it("a field that takes the focus marks its section, though the page scrolls it only to the middle", async () => {
    Object.defineProperty(window, "innerHeight", { value: 800, configurable: true });
    const scrollTo = page(["Provider", "Evaluator", "Limits"]);
    await scrollTo([0, 500, 1100]);
    // Save's error (or Tab) took the focus to a field of Limits, scrolled to the window's middle.
    act(() => screen.getByLabelText("Limits").focus());
    await scrollTo([-900, -400, 420]);
    expect(marked(), "the section being worked in, not the one above it").toEqual(["Limits"]);
    // The person scrolls on their own: the reading line decides again.
    window.dispatchEvent(new Event("wheel"));
    await scrollTo([-420, 80, 680]);
    expect(marked()).toEqual(["Evaluator"]);
  });
});
