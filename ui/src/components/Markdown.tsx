// Model and tool text rendered as Markdown, safely: react-markdown never renders raw HTML (it
// shows as text), its URL filter drops `javascript:` and other unsafe links, and links never
// navigate the app's webview.
import ReactMarkdown, { type Components } from "react-markdown";

const components: Components = {
  a: ({ href, children }) => (
    <a href={href} title={href} rel="noreferrer noopener" onClick={(e) => e.preventDefault()}>
      {children}
    </a>
  ),
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
