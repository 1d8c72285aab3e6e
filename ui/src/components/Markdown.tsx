// Model and tool text rendered as Markdown (with GitHub's tables, strikethrough and task lists),
// safely: raw HTML is never rendered, it shows as the text it is, its URL filter drops
// `javascript:` and other unsafe links, and links never navigate the app's webview. A click shows
// the whole address first; only a web link can then be opened, and it opens in the system
// browser.
import { useRef, useState, type ReactNode } from "react";
import ReactMarkdown, { type Components } from "react-markdown";
import remarkGfm from "remark-gfm";
import { AppError, ipc } from "../ipc";
import { cutAtWords } from "../session/reveal";

interface MdNode {
  type: string;
  value?: string;
  children?: MdNode[];
  /** The element it becomes, for a node of ours (a found word: `mark`). */
  data?: { hName: string };
}

/** Nodes that hold blocks, where an HTML block sits; anywhere else it is inline. */
const BLOCKS = new Set(["root", "blockquote", "listItem", "footnoteDefinition"]);

/** Raw HTML in the text becomes that text: an agent that writes "a <div> wrapper" or
 * `Vec<String>` outside backticks means the words, which dropping the tag would change (and
 * React escapes text, so nothing of it can run). A block of it becomes a code block. */
function htmlAsText() {
  const walk = (node: MdNode) => {
    node.children = node.children?.map((child) => {
      if (child.type !== "html") {
        walk(child);
        return child;
      }
      const text = { type: "text", value: child.value ?? "" };
      // A block of it is code, shown as a code block with its lines and indentation.
      return BLOCKS.has(node.type) ? { type: "code", value: child.value ?? "" } : text;
    });
  };
  return (tree: MdNode) => walk(tree);
}

/** The search's words marked where they stand in the text (`<mark>`), as History's passage marks
 * them; code is left as it is. */
function markWords(words: string[]) {
  const walk = (node: MdNode) => {
    node.children = node.children?.flatMap((child): MdNode[] => {
      if (child.type !== "text") {
        walk(child);
        return [child];
      }
      return cutAtWords(child.value ?? "", words).map((part) => (part.found ? { type: "found", data: { hName: "mark" }, children: [{ type: "text", value: part.text }] } : { type: "text", value: part.text }));
    });
  };
  return () => (tree: MdNode) => walk(tree);
}

function isWebLink(href: string | undefined): href is string {
  try {
    return !!href && ["http:", "https:"].includes(new URL(href).protocol);
  } catch {
    return false;
  }
}

function Link({ href, children }: { href?: string; children?: ReactNode }) {
  const [asking, setAsking] = useState(false);
  const anchor = useRef<HTMLAnchorElement>(null);
  // Esc closes the address shown, focus back on the link; it is taken here, so it does not also
  // ask to cancel the run around it.
  const close = () => {
    setAsking(false);
    anchor.current?.focus();
  };
  const [error, setError] = useState<string | null>(null);
  const open = async () => {
    setError(null);
    try {
      await ipc.openLink(href ?? "");
      setAsking(false);
    } catch (e) {
      setError((e as AppError).message);
    }
  };
  return (
    <span
      className="link-out"
      // On the link too: with no button to take it (a link that does not open from here), the
      // focus stays on the link.
      onKeyDown={(e) => {
        if (asking && e.key === "Escape") {
          e.preventDefault();
          e.stopPropagation();
          close();
        }
      }}
    >
      <a
        ref={anchor}
        href={href}
        title={href}
        rel="noreferrer noopener"
        onClick={(e) => {
          e.preventDefault();
          setAsking((a) => !a);
        }}
      >
        {children}
      </a>
      {asking && (
        <span className="link-confirm" role="dialog" aria-label="Open link" data-testid="link-confirm">
          <code data-testid="link-url">{href ?? "(no address)"}</code>
          {isWebLink(href) ? (
            <button type="button" className="btn small" onClick={open} data-testid="link-open" autoFocus>
              Open in browser
            </button>
          ) : (
            <span className="muted">Only web links open from here.</span>
          )}
          <button type="button" className="btn small" onClick={close} data-testid="link-cancel">
            Cancel
          </button>
          {error && <span className="field-error">{error}</span>}
        </span>
      )}
    </span>
  );
}

const components: Components = {
  a: ({ href, children }) => <Link href={href}>{children}</Link>,
  img: ({ alt }) => <span className="muted">[image: {alt ?? "no description"}]</span>,
};

export function Markdown({ text, marks }: { text: string; marks?: string[] }) {
  return (
    <div className="md">
      <ReactMarkdown components={components} remarkPlugins={marks && marks.length > 0 ? [remarkGfm, htmlAsText, markWords(marks)] : [remarkGfm, htmlAsText]}>
        {text}
      </ReactMarkdown>
    </div>
  );
}
