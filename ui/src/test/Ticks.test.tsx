import { render } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import { Ticks } from "../components/Ticks";

describe("engine text with `quoted` parts", () => {
  it("shows commands as code, as text, and leaves an unpaired backtick as it is", () => {
    const { container } = render(<Ticks text="Claude Code is not installed here: `claude-agent-acp` is not on PATH. Run `npm i -g <b>x</b>`." />);
    expect([...container.querySelectorAll("code")].map((c) => c.textContent)).toEqual(["claude-agent-acp", "npm i -g <b>x</b>"]);
    expect(container.querySelector("b"), "never markup").toBeNull();
    expect(container.textContent).toBe("Claude Code is not installed here: claude-agent-acp is not on PATH. Run npm i -g <b>x</b>.");
    const odd = render(<Ticks text="a ` b" />).container;
    expect(odd.textContent).toBe("a ` b");
    expect(odd.querySelector("code")).toBeNull();
  });
});
