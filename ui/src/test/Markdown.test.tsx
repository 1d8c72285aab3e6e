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
