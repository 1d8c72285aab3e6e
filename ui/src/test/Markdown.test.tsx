import { render } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import { Markdown } from "../components/Markdown";

const PAYLOAD = `**bold** and \`code\`

- one
- two

[a link](https://example.com) and [bad](javascript:alert(1))

<script>window.pwned = 1</script>
<img src=x onerror="window.pwned = 2">
<iframe src="https://evil.example"></iframe>
<b onclick="alert(1)">raw html</b>`;

describe("Markdown", () => {
  it("renders Markdown but nothing that can run script", () => {
    const { container } = render(<Markdown text={PAYLOAD} />);
    expect(container.querySelector("strong")?.textContent).toBe("bold");
    expect(container.querySelector("code")?.textContent).toBe("code");
    expect(container.querySelectorAll("li")).toHaveLength(2);
    const links = [...container.querySelectorAll("a")];
    expect(links[0].getAttribute("href")).toBe("https://example.com");
    expect(links.every((a) => !(a.getAttribute("href") ?? "").startsWith("javascript:")), "javascript: links are dropped").toBe(true);
    expect(container.querySelector("script, iframe, img, [onerror], [onclick]"), "no raw HTML element is created").toBeNull();
    expect((window as unknown as { pwned?: number }).pwned).toBeUndefined();
  });
});

describe("what a coding agent writes", () => {
  it("shows tags it names as text, never dropped and never made into elements", () => {
    const text = 'I added a <div class="box"> wrapper and a <br> tag, plus <input type="text">. Generic Vec<String> too.\n\n<script>alert(1)</script> **bold** after it';
    const { container } = render(<Markdown text={text} />);
    expect(container.textContent).toContain('I added a <div class="box"> wrapper and a <br> tag, plus <input type="text">. Generic Vec<String> too.');
    expect(container.textContent).toContain("<script>alert(1)</script>");
    expect(container.querySelector("script, input, br, div.box"), "no raw HTML element is created").toBeNull();
  });

  it("keeps the lines of a block of HTML it shows as text", () => {
    const { container } = render(<Markdown text={'<div class="card">\n  <p>hi</p>\n</div>'} />);
    const block = container.querySelector("pre code");
    expect(block?.textContent?.trimEnd()).toBe('<div class="card">\n  <p>hi</p>\n</div>');
  });

  it("draws a table, as agents summarise with them", () => {
    const { container } = render(<Markdown text={"| file | lines |\n|---|---|\n| a.rs | 12 |\n| b.rs | 3 |"} />);
    expect([...container.querySelectorAll("th")].map((c) => c.textContent)).toEqual(["file", "lines"]);
    expect([...container.querySelectorAll("tbody tr")].map((r) => r.textContent)).toEqual(["a.rs12", "b.rs3"]);
  });
});

describe("links in model output", () => {
  it("show the whole address first, then open only in the system browser", async () => {
    const { mockIPC } = await import("@tauri-apps/api/mocks");
    const { default: userEvent } = await import("@testing-library/user-event");
    const { screen } = await import("@testing-library/react");
    const opened: string[] = [];
    mockIPC((cmd, args) => {
      if (cmd === "open_link") opened.push((args as { url: string }).url);
      return null;
    });
    render(<Markdown text={"See [the docs](https://docs.example.com/a?b=1) or [a file](file:///etc/passwd)."} />);
    await userEvent.click(screen.getByText("the docs"));
    expect(screen.getByTestId("link-url")).toHaveTextContent("https://docs.example.com/a?b=1");
    expect(opened, "nothing opens on the first click: the person sees where it goes").toEqual([]);
    await userEvent.click(screen.getByTestId("link-open"));
    expect(opened).toEqual(["https://docs.example.com/a?b=1"]);
    expect(window.location.href, "the webview itself never navigates").not.toContain("docs.example.com");
    await userEvent.click(screen.getByText("a file"));
    expect(screen.queryByTestId("link-open"), "a file: link has no Open button").toBeNull();
  });

  it("Esc closes the address shown and gives the focus back to the link, and goes no further", async () => {
    const { default: userEvent } = await import("@testing-library/user-event");
    const { screen } = await import("@testing-library/react");
    let reachedWindow = false;
    const onKey = (e: KeyboardEvent) => (reachedWindow = e.key === "Escape" && !e.defaultPrevented);
    window.addEventListener("keydown", onKey);
    try {
      render(<Markdown text={"See [the docs](https://docs.example.com/a) or [a file](file:///etc/hosts)."} />);
      const user = userEvent.setup();
      await user.click(screen.getByText("the docs"));
      expect(screen.getByTestId("link-open")).toHaveFocus();
      await user.keyboard("{Escape}");
      expect(screen.queryByTestId("link-confirm")).toBeNull();
      expect(screen.getByText("the docs"), "the focus is back where it was").toHaveFocus();
      expect(reachedWindow, "Esc closed the box only: it does not also ask to cancel the run").toBe(false);
      // A link that does not open from here has no button to take the focus: it stays on the link.
      await user.click(screen.getByText("a file"));
      expect(screen.getByTestId("link-confirm")).toBeInTheDocument();
      await user.keyboard("{Escape}");
      expect(screen.queryByTestId("link-confirm")).toBeNull();
      expect(reachedWindow).toBe(false);
    } finally {
      window.removeEventListener("keydown", onKey);
    }
  });

  it("keeps a review comment apart from the lines it quotes, as the engine sends it", () => {
    const text = "The person reviewed your changes.\n\n1. hello.txt:2\n   ```\n   - apple\n   ```\n\n   say pear instead\n";
    const { container } = render(<Markdown text={text} />);
    expect(container.querySelector("pre")?.textContent?.trim(), "the quoted line is code, its dash kept").toBe("- apple");
    expect(container.querySelectorAll("li"), "not a bullet of its own").toHaveLength(1);
    expect(container.querySelector("li")?.textContent).toContain("say pear instead");
  });
});
