// Model and tool text rendered as Markdown, safely: react-markdown never renders raw HTML (it
// shows as text), its URL filter drops `javascript:` and other unsafe links, and links never
// navigate the app's webview. A click shows the whole address first; only a web link can then be
// opened, and it opens in the system browser.
import { useState, type ReactNode } from "react";
import ReactMarkdown, { type Components } from "react-markdown";
import { AppError, ipc } from "../ipc";

function isWebLink(href: string | undefined): href is string {
  try {
    return !!href && ["http:", "https:"].includes(new URL(href).protocol);
  } catch {
    return false;
  }
}

function Link({ href, children }: { href?: string; children?: ReactNode }) {
  const [asking, setAsking] = useState(false);
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
    <span className="link-out">
      <a
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
          <button type="button" className="btn small" onClick={() => setAsking(false)} data-testid="link-cancel">
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

export function Markdown({ text }: { text: string }) {
  return (
    <div className="md">
      <ReactMarkdown components={components} skipHtml>
        {text}
      </ReactMarkdown>
    </div>
  );
}
