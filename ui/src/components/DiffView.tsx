// The review's diff: each changed file in unified or split view, syntax-highlighted
// (react-diff-view with refractor), collapsible with a "viewed" tick, lines around the changes
// shown on request from the whole file, and comments on any line range that go back with
// Request changes. Loaded only when a review is open, so the first screen never pays for it.
import { useEffect, useMemo, useRef, useState, type ReactNode } from "react";
import { dialogAsks, isTextField } from "../keys";
import { useOneAction } from "../oneAction";
import { Decoration, Diff, Hunk, getChangeKey, parseDiff, tokenize, useSourceExpansion, type ChangeData, type HunkData, type HunkTokens } from "react-diff-view";
import "react-diff-view/style/index.css";
import { refractor } from "refractor/core";
import bash from "refractor/bash";
import css from "refractor/css";
import go from "refractor/go";
import javascript from "refractor/javascript";
import json from "refractor/json";
import jsx from "refractor/jsx";
import markdown from "refractor/markdown";
import python from "refractor/python";
import rust from "refractor/rust";
import toml from "refractor/toml";
import tsx from "refractor/tsx";
import typescript from "refractor/typescript";
import yaml from "refractor/yaml";
import { AppError, ipc, type DiffSide, type FileChange, type ReviewComment } from "../ipc";
import { draftKey, keepDraft, readDraft } from "./commentDrafts";

for (const lang of [bash, css, go, javascript, json, jsx, markdown, python, rust, toml, typescript, tsx, yaml]) refractor.register(lang);

const LANGUAGE: Record<string, string> = {
  rs: "rust", py: "python", go: "go", js: "javascript", mjs: "javascript", cjs: "javascript", jsx: "jsx", ts: "typescript", tsx: "tsx",
  json: "json", toml: "toml", yml: "yaml", yaml: "yaml", md: "markdown", sh: "bash", bash: "bash", css: "css",
};

// react-diff-view takes refractor 2's API: highlight() returning the nodes, not a root.
const highlighter = { highlight: ((code: string, lang: string) => refractor.highlight(code, lang).children) as never };

function languageOf(path: string): string | undefined {
  return LANGUAGE[path.split(".").pop()?.toLowerCase() ?? ""];
}

/** The line a change is on, on the side a comment would name. */
function lineOf(change: ChangeData): { side: DiffSide; line: number } {
  if (change.type === "delete") return { side: "old", line: change.lineNumber };
  if (change.type === "insert") return { side: "new", line: change.lineNumber };
  return { side: "new", line: change.newLineNumber };
}

/** Lines on one side, from and to inclusive: what a comment names. */
export type Range = { side: DiffSide; from: number; to: number };

/** The keys of the changes a range covers, to mark them. */
function keysIn(changes: ChangeData[], range: Range | null): string[] {
  if (!range) return [];
  return changes.filter((c) => {
    const { side, line } = lineOf(c);
    return side === range.side && line >= range.from && line <= range.to;
  }).map(getChangeKey);
}

/** Files past this many are collapsed until opened, so a large review renders only what is read. */
const OPEN_UP_TO = 6;
/** Hunks past this many lines of a file are rendered on request. */
const LINES_AT_ONCE = 1500;

/** The diff that answers j/k and n/p pressed outside any diff: the waiting review's (an earlier
 * round's, opened in the timeline above it, comes first in the page), else the first on screen;
 * never one folded out of sight. */
function answeringDiff(): Element | null {
  const shown = [...document.querySelectorAll(".diff-view")].filter((d) => !d.closest(".review-dock.folded, details:not([open])"));
  return shown.find((d) => d.closest(".review-dock")) ?? shown[0] ?? null;
}

/** What the diff's keys read of a key press: React's event, or the window's when the focus is nowhere. */
type KeyLike = Pick<KeyboardEvent, "key" | "target" | "ctrlKey" | "metaKey" | "altKey" | "preventDefault">;

interface Props {
  files: FileChange[];
  reviewId: string;
  comments: ReviewComment[];
  /** Comments can be added and changed (the review waits for the person). */
  editable: boolean;
  onChanged?: () => void;
  /** The files are in the person's own folder, where their edits and a command's look alike. */
  inPlace?: boolean;
}

/** Why a file is marked: said before the person decides, not only once a revert kept copies. */
export const UNATTRIBUTED_TITLE =
  "It changed while a command or an external agent was at work: an edit of yours saved then looks the same as theirs. Reject with “Also undo” keeps a copy of it as it is before putting it back.";

export default function DiffView({ files, reviewId, comments, editable, onChanged, inPlace = false }: Props) {
  const [view, setView] = useState<"unified" | "split">("unified");
  const [viewed, setViewed] = useState<Record<string, boolean>>({});
  const [open, setOpen] = useState<Record<string, boolean>>(() => Object.fromEntries(files.map((f, i) => [f.path, i < OPEN_UP_TO])));
  const root = useRef<HTMLDivElement>(null);
  // Keyboard: j/k move between files, n/p between hunks (when focus is in the diff, not typing).
  const onKeyDown = (e: KeyLike) => {
    const t = e.target as HTMLElement;
    if (t.tagName === "TEXTAREA" || t.tagName === "INPUT" || e.ctrlKey || e.metaKey || e.altKey) return;
    const sel = { j: ".diff-file-head", k: ".diff-file-head", n: ".diff-hunk-anchor", p: ".diff-hunk-anchor" }[e.key];
    if (!sel || !root.current) return;
    const all = [...root.current.querySelectorAll<HTMLElement>(sel)];
    // Where the focus is, in the page's order: the last one at it or before it. In a file's lines
    // (after its head) that is the file's head, not none, which went back to the first file; and
    // it is the line the cursor is on there, not the lines' top, or n went back to their first change.
    const focused = document.activeElement;
    const active = focused?.matches(".diff-lines") ? (focused.querySelector(".diff-line-head") ?? focused) : focused;
    const at = active ? all.reduce((last, el, i) => (el === active || el.compareDocumentPosition(active) & Node.DOCUMENT_POSITION_FOLLOWING ? i : last), -1) : -1;
    const next = e.key === "j" || e.key === "n" ? all[Math.min(all.length - 1, at + 1)] : all[Math.max(0, at - 1)];
    if (next) {
      e.preventDefault();
      next.focus({ preventScroll: true });
      // A file's head sticks at the review's top while its lines scroll under it: brought into
      // view "nearest", a head already stuck there moved nothing, leaving the end of a long file
      // in view; its file's start is what k goes back to. A change's @@ line is an inline part of
      // its row, which carries the margin that keeps it clear of the sticky head.
      const shown = e.key === "j" || e.key === "k" ? (next.closest<HTMLElement>(".file-change") ?? next) : (next.closest<HTMLElement>("tr") ?? next);
      shown.scrollIntoView({ block: e.key === "j" || e.key === "k" ? "start" : "nearest" });
    }
  };
  // With the focus outside any diff (a click on plain text focuses the page's main area; a review
  // opened from the sidebar leaves it on the sidebar), j/k and n/p still lead into the diff on
  // screen, as on a code host's review page: a key that did nothing read as broken. The first
  // diff of the page answers; a text field, a dialog or another diff keeps its keys.
  const keys = useRef(onKeyDown);
  keys.current = onKeyDown;
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      const inADiff = e.target instanceof Element && e.target.closest(".diff-view") !== null;
      // A question on screen (modal or not, as the revert's) keeps the keys, as Esc's handling does.
      const asking = dialogAsks() || document.querySelector('[role="alertdialog"], [role="dialog"]:not(.link-confirm)') !== null;
      if (inADiff || isTextField(e.target) || e.defaultPrevented || asking || answeringDiff() !== root.current) return;
      keys.current(e);
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, []);
  return (
    <div className="diff-view" ref={root} onKeyDown={onKeyDown} data-testid="diff-view">
      <div className="row diff-toolbar">
        <span className="muted small">
          {editable ? `${Object.values(viewed).filter(Boolean).length} of ${files.length} viewed · ` : ""}j/k files, n/p changes{editable ? ", ↑/↓ lines, Enter comments" : ""}
        </span>
        <span className="grow" />
        <div className="segmented" role="radiogroup" aria-label="Diff layout">
          {(["unified", "split"] as const).map((v) => (
            <label key={v} className={view === v ? "selected" : ""}>
              <input type="radio" name="diff-view" checked={view === v} onChange={() => setView(v)} data-testid={`diff-${v}`} />
              {v === "unified" ? "Unified" : "Split"}
            </label>
          ))}
        </div>
      </div>
      {files.map((f) => (
        <FileDiff
          key={f.path}
          file={f}
          view={view}
          open={open[f.path] ?? false}
          viewed={viewed[f.path] ?? false}
          onToggle={() => setOpen({ ...open, [f.path]: !open[f.path] })}
          onViewed={(v) => {
            setViewed({ ...viewed, [f.path]: v });
            if (v) setOpen({ ...open, [f.path]: false });
          }}
          reviewId={reviewId}
          comments={comments.filter((c) => c.path === f.path)}
          editable={editable}
          onChanged={onChanged}
          unattributed={inPlace && !!f.unattributed}
        />
      ))}
    </div>
  );
}

function FileDiff(props: {
  file: FileChange;
  view: "unified" | "split";
  open: boolean;
  viewed: boolean;
  onToggle: () => void;
  onViewed: (v: boolean) => void;
  reviewId: string;
  comments: ReviewComment[];
  editable: boolean;
  onChanged?: () => void;
  unattributed: boolean;
}) {
  const { file, open } = props;
  const parsed = useMemo(() => {
    try {
      return parseDiff(file.diff)[0];
    } catch {
      return undefined;
    }
  }, [file.diff]);
  const binary = file.diff.includes("Binary files ") || parsed?.isBinary;
  // On the head j/k lead to: Enter folds the file; ↓ goes on to its first change, as n would
  // (whose ↓ then goes into the lines), the way the hint's keys read from there.
  const onHeadKeys = (e: React.KeyboardEvent<HTMLDivElement>) => {
    if (e.currentTarget !== e.target) return;
    if (e.key === "Enter") props.onToggle();
    else if (e.key === "ArrowDown") {
      const first = e.currentTarget.closest(".file-change")?.querySelector<HTMLElement>(".diff-hunk-anchor");
      if (!first) return;
      e.preventDefault();
      first.focus({ preventScroll: true });
      (first.closest<HTMLElement>("tr") ?? first).scrollIntoView?.({ block: "nearest" });
    }
  };
  const kind = file.kind === "created" ? "created" : file.kind === "deleted" ? "deleted" : "modified";
  return (
    <div className="file-change" data-testid="file-change" data-path={file.path}>
      {/* Focused by j/k, not a Tab stop of its own: its toggle is (one stop per file). */}
      <div className="file-head diff-file-head row" tabIndex={-1} onKeyDown={onHeadKeys}>
        <button className="link-btn plain" onClick={props.onToggle} aria-expanded={open} data-testid="file-toggle">
          <span className={`kind kind-${file.kind}`}>{binary ? `${kind}, binary` : kind}</span> <code>{file.path}</code>
        </button>
        {props.unattributed && (
          <span className="muted small" title={UNATTRIBUTED_TITLE} data-testid="file-unattributed">
            may include your edits
          </span>
        )}
        {props.comments.length > 0 && <span className="muted small">{props.comments.length} comment{props.comments.length === 1 ? "" : "s"}</span>}
        <span className="grow" />
        {/* Marking files viewed is part of reviewing: a decided review's diff is a record. */}
        {props.editable && (
          <label className="check small">
            <input type="checkbox" checked={props.viewed} onChange={(e) => props.onViewed(e.target.checked)} data-testid="file-viewed" /> Viewed
          </label>
        )}
      </div>
      {open &&
        (binary ? (
          <p className="muted small">A binary file: its content is not shown.</p>
        ) : !parsed || parsed.hunks.length === 0 ? (
          <pre className="diff">{file.diff}</pre>
        ) : (
          <FileHunks {...props} hunks={parsed.hunks} diffType={parsed.type} />
        ))}
    </div>
  );
}

function FileHunks({ file, view, hunks: parsedHunks, diffType, reviewId, comments, editable, onChanged }: {
  file: FileChange;
  view: "unified" | "split";
  hunks: HunkData[];
  diffType: "add" | "delete" | "modify" | "rename" | "copy";
  reviewId: string;
  comments: ReviewComment[];
  editable: boolean;
  onChanged?: () => void;
}) {
  // The whole file as it was, to show lines around the changes (comments may go on them too).
  const [oldSource, setOldSource] = useState<string | null>(null);
  const [hunks, expandRange] = useSourceExpansion(parsedHunks, oldSource);
  const [all, setAll] = useState(false);
  const lines = hunks.reduce((n, h) => n + h.changes.length, 0);
  const shown = all || lines <= LINES_AT_ONCE ? hunks : limitLines(hunks, LINES_AT_ONCE);
  const tokens: HunkTokens | null = useMemo(() => {
    const language = languageOf(file.path);
    if (!language) return null;
    try {
      return tokenize(shown, { highlight: true, refractor: highlighter, language });
    } catch {
      return null;
    }
  }, [shown, file.path]);
  // Selection: a click on a line's number picks it, a shift-click extends the range on that side.
  // A comment half typed outlives the view: the person may look elsewhere and come back to it.
  const key = draftKey(reviewId, file.path);
  // Only where comments can be made: the same review's diff is also shown read-only (Attempts).
  const [kept] = useState(() => (editable ? readDraft(key) : null));
  const [selection, setSelection] = useState<Range | null>(kept?.selection ?? null);
  // A new comment's words and an edit's are apart: editing an added comment must not take the
  // place of one half typed, nor a line clicked meanwhile start from the edit's words.
  const [draft, setDraft] = useState(kept?.draft ?? "");
  const [editing, setEditing] = useState<string | null>(kept?.editing ?? null);
  const [editDraft, setEditDraft] = useState(kept?.editDraft ?? "");
  useEffect(() => {
    const words = (selection && draft.trim()) || (editing && editDraft.trim());
    if (editable) keepDraft(key, words ? { selection, editing, draft, editDraft, byKeys: byKeys.current } : null);
  }, [key, editable, selection, editing, draft, editDraft]);
  // What failed and where to say it: under the new comment's box, or under the comment edited
  // or removed.
  const [error, setError] = useState<{ at: string; message: string } | null>(null);
  // A comment just saved is brought into view once it is shown: at the foot of the review it sat
  // half behind the review's buttons, its Edit and Delete out of sight.
  const [reveal, setReveal] = useState<string | null>(null);
  // One save at a time: a second Enter (or click) while the first is on its way would add the
  // comment twice, and the agent would be asked to meet it twice.
  const one = useOneAction((message, at) => setError(message === null ? null : { at, message }));
  const saving = one.busy !== null;
  const changes = useMemo(() => shown.flatMap((h) => h.changes), [shown]);
  // The lines as one Tab stop, and whether the open box came from the keyboard there.
  const region = useRef<HTMLDivElement>(null);
  // A draft brought back keeps how its box was opened: its hint and where the focus goes after.
  const byKeys = useRef(kept?.byKeys ?? false);
  const selectedKeys = useMemo(() => keysIn(changes, selection), [selection, changes]);
  // An edit whose words changed is not dropped for another line: it is saved or cancelled first.
  const editChanged = () => {
    const edited = editing ? comments.find((c) => c.id === editing) : undefined;
    if (!edited || editDraft.trim() === edited.text.trim()) return false;
    setError({ at: edited.id, message: "Save or cancel this edit first." });
    return true;
  };
  const pick = (change: ChangeData | null, extend: boolean) => {
    if (!editable || !change || editChanged()) return;
    const { side, line } = lineOf(change);
    byKeys.current = false;
    setEditing(null);
    setEditDraft("");
    setSelection((s) => (extend && s && s.side === side ? { side, from: Math.min(s.from, line), to: Math.max(s.to, line) } : { side, from: line, to: line }));
    // The keyboard goes on from the line clicked.
    if (!extend) setCursor({ anchor: getChangeKey(change), head: getChangeKey(change) });
  };
  // A press inside the lines focuses them too: that is not the Tab that starts at the first line.
  const pressed = useRef(false);
  const released = () => {
    pressed.current = false;
  };
  // The keyboard's way to the same box: the lines are one Tab stop, where Up/Down move the current
  // line, Shift+Up/Down extend it on its side (as a shift-click does) and Enter or c opens the box.
  const [cursor, setCursor] = useState<{ anchor: string; head: string } | null>(null);
  const cursorRange = useMemo((): Range | null => {
    const anchor = changes.find((c) => getChangeKey(c) === cursor?.anchor);
    const head = changes.find((c) => getChangeKey(c) === cursor?.head);
    if (!anchor || !head) return null;
    const { side, line } = lineOf(anchor);
    return { side, from: Math.min(line, lineOf(head).line), to: Math.max(line, lineOf(head).line) };
  }, [cursor, changes]);
  const currentKeys = useMemo(() => new Set(keysIn(changes, cursorRange)), [changes, cursorRange]);
  // The line just moved to is the one brought into view (not the range's start).
  useEffect(() => {
    if (cursor) region.current?.querySelector(".diff-line-head")?.scrollIntoView?.({ block: "nearest" });
  }, [cursor]);
  // Tabbed into, the lines start at the first: the person sees where the arrows begin.
  const onLinesFocus = (e: React.FocusEvent<HTMLDivElement>) => {
    const byPointer = pressed.current;
    pressed.current = false;
    // Moved to line 1 on a press, the view could scroll the line pressed from under the pointer
    // before the click lands, and Enter would then comment on line 1.
    if (byPointer) return;
    if (e.target === e.currentTarget && !cursor && changes.length > 0) setCursor({ anchor: getChangeKey(changes[0]), head: getChangeKey(changes[0]) });
  };
  const onLineKeys = (e: React.KeyboardEvent<HTMLDivElement>) => {
    if (e.ctrlKey || e.metaKey || e.altKey || changes.length === 0) return;
    // On a change's @@ line (where n/p lead), the line keys go into its lines, at its first.
    const hunk = e.target instanceof HTMLElement && e.target !== e.currentTarget ? e.target.closest<HTMLElement>(".diff-hunk-anchor") : null;
    if (hunk?.dataset.first && ["ArrowDown", "ArrowUp", "Enter", "c"].includes(e.key)) {
      e.preventDefault();
      // Focused from script, WebKit does not count it keyboard focus: the ring and the current
      // line would not show until the next key.
      e.currentTarget.dataset.keys = "on";
      // Not scrolled to the lines' top (it put the first line under the file's sticky head): the
      // cursor brings its line into view.
      e.currentTarget.focus({ preventScroll: true });
      // After the focus, which puts a cursor that has none on the first line of all.
      setCursor({ anchor: hunk.dataset.first, head: hunk.dataset.first });
      return;
    }
    if (e.target !== e.currentTarget) return;
    if (e.key === "ArrowDown" || e.key === "ArrowUp") {
      e.preventDefault();
      const at = changes.findIndex((c) => getChangeKey(c) === cursor?.head);
      const anchor = changes.find((c) => getChangeKey(c) === cursor?.anchor);
      if (at < 0 || !anchor) return setCursor({ anchor: getChangeKey(changes[0]), head: getChangeKey(changes[0]) });
      // Extending stays on the anchor's side: the other side's lines are stepped over.
      const side = e.shiftKey ? lineOf(anchor).side : null;
      const step = e.key === "ArrowDown" ? 1 : -1;
      let i = at + step;
      while (side && changes[i] && lineOf(changes[i]).side !== side) i += step;
      if (!changes[i]) return;
      const key = getChangeKey(changes[i]);
      setCursor({ anchor: e.shiftKey ? getChangeKey(anchor) : key, head: key });
    } else if ((e.key === "Enter" || e.key === "c") && cursorRange) {
      e.preventDefault();
      if (editChanged()) return;
      byKeys.current = true;
      setEditing(null);
      setEditDraft("");
      setSelection(cursorRange);
    }
  };
  // The box gives the focus back to the lines when it closes, whoever opened it: gone with the
  // box, the focus would fall to the page, where the arrows and Enter do nothing.
  const closeBox = () => {
    const at = selection ? changeAt(selection.side, selection.to) : undefined;
    setSelection(null);
    // A draft cancelled is gone: it must not reappear in the next box.
    setDraft("");
    // Saved after a wait, the person may have gone elsewhere meanwhile: the focus stays there.
    const active = document.activeElement;
    if (!active || active === document.body || region.current?.contains(active)) {
      // Focused from script after the box went, WebKit does not count it keyboard focus: the ring
      // and the current line would not show until the next key. A press in the lines clears it.
      if (region.current) region.current.dataset.keys = "on";
      if (byKeys.current) {
        region.current?.focus({ preventScroll: true });
        showCurrentLine();
      } else {
        // Opened by a click: the keys go on from the line commented, and the view stays where the
        // person is reading (not a Tab into the lines, which starts at the first).
        if (at) setCursor({ anchor: getChangeKey(at), head: getChangeKey(at) });
        pressed.current = true;
        region.current?.focus({ preventScroll: true });
        pressed.current = false;
      }
    }
    byKeys.current = false;
  };
  // Esc in a box with words goes back to the lines and leaves the box open with them: the keys
  // there choose other lines, and Enter moves the box, words and all. Cancel gives them up.
  const backToLines = () => {
    if (!selection) return;
    const from = changeAt(selection.side, selection.from);
    const to = changeAt(selection.side, selection.to);
    if (from && to) setCursor({ anchor: getChangeKey(from), head: getChangeKey(to) });
    toLines();
  };
  const toLines = () => {
    byKeys.current = true;
    if (region.current) region.current.dataset.keys = "on";
    // Not a Tab into the lines, which would start them at the first line.
    pressed.current = true;
    region.current?.focus({ preventScroll: true });
    pressed.current = false;
    showCurrentLine();
  };
  // Back in the lines from a box, the current line is brought into view once the box is gone: the
  // box had pushed it under the file's sticky head in a short window, and the cursor did not
  // move, so nothing else scrolls to it.
  const showCurrentLine = () => setTimeout(() => region.current?.querySelector(".diff-line-head")?.scrollIntoView?.({ block: "nearest" }), 0);
  // An edit closed or a comment removed gives the focus back to its line: with the box or the
  // comment's buttons gone, it would fall to the page, where the arrows and Enter do nothing.
  // Gone elsewhere meanwhile (a save waits on the disk), the person keeps their place.
  const backToLine = (side: DiffSide, line: number) => {
    const active = document.activeElement;
    if (active && active !== document.body && !region.current?.contains(active)) return;
    const at = changeAt(side, line);
    if (at) setCursor({ anchor: getChangeKey(at), head: getChangeKey(at) });
    if (region.current) region.current.dataset.keys = "on";
    pressed.current = true;
    region.current?.focus({ preventScroll: true });
    pressed.current = false;
    showCurrentLine();
  };
  const save = async (id?: string) => {
    const target = id ? comments.find((c) => c.id === id) : undefined;
    const at = target ? { side: target.side, from: target.start_line, to: target.end_line } : selection;
    const words = (id ? editDraft : draft).trim();
    if (!at || !words) return;
    await one.run(id ?? "new", async () => {
      const saved = await ipc.commentOnReview(reviewId, { id: target?.id ?? "", path: file.path, start_line: at.from, end_line: at.to, side: at.side, quote: target?.quote ?? "", text: words });
      setReveal(saved?.id ?? id ?? null);
      if (id) {
        setEditDraft("");
        setEditing(null);
        backToLine(at.side, at.to);
      } else {
        setDraft("");
        closeBox();
      }
      onChanged?.();
    });
  };
  const remove = async (id: string) => {
    setError(null);
    const target = comments.find((c) => c.id === id);
    try {
      await ipc.removeReviewComment(reviewId, id);
      if (target) backToLine(target.side, target.end_line);
      onChanged?.();
    } catch (e) {
      setError({ at: id, message: (e as AppError).message });
    }
  };
  const errorAt = (at: string) =>
    error?.at === at && (
      <p className="field-error" role="alert">
        {error.message}
      </p>
    );
  // Widgets under a line: the comments that end there, and the box for a new one.
  const widgets: Record<string, ReactNode> = {};
  const changeAt = (side: DiffSide, line: number) => shown.flatMap((h) => h.changes).find((c) => lineOf(c).side === side && lineOf(c).line === line);
  for (const c of comments) {
    const change = changeAt(c.side, c.end_line);
    if (!change) continue;
    const key = getChangeKey(change);
    widgets[key] = (
      <>
        {widgets[key]}
        <div className="diff-comment" data-testid="diff-comment" data-comment-id={c.id}>
          <span className="muted small">
            {c.start_line === c.end_line ? `Line ${c.start_line}` : `Lines ${c.start_line}–${c.end_line}`}
            {c.side === "old" ? " (before)" : ""}
          </span>
          {editing === c.id ? (
            <CommentBox
              value={editDraft}
              busy={saving}
              saveLabel="Save"
              onChange={setEditDraft}
              onSave={() => save(c.id)}
              onCancel={() => { setEditing(null); setEditDraft(""); setError(null); backToLine(c.side, c.end_line); }}
              // Words changed are kept, as in a new comment's box: Cancel gives them up.
              onEscape={editDraft.trim() !== c.text.trim() ? toLines : undefined}
            />
          ) : (
            <>
              <p>{c.text}</p>
              {editable && (
                <div className="row">
                  <button
                    className="link-btn"
                    onClick={() => {
                      if (editChanged()) return;
                      setEditing(c.id);
                      setEditDraft(c.text);
                    }}
                    data-testid="edit-comment"
                  >
                    Edit
                  </button>
                  <button className="link-btn" onClick={() => remove(c.id)} data-testid="delete-comment">
                    Delete
                  </button>
                </div>
              )}
            </>
          )}
          {errorAt(c.id)}
        </div>
      </>
    );
  }
  if (selection && !editing) {
    const last = changeAt(selection.side, selection.to);
    if (last) {
      const key = getChangeKey(last);
      widgets[key] = (
        <>
          {widgets[key]}
          <div className="diff-comment new" data-testid="comment-box">
            <span className="muted small">
              Comment on {selection.side === "old" ? "removed " : ""}
              {selection.from === selection.to ? `line ${selection.from}` : `lines ${selection.from}–${selection.to}`} ({byKeys.current ? "Esc goes back to the lines: Shift+↑/↓, then Enter, moves this box" : "shift-click a line number to extend"})
            </span>
            <CommentBox value={draft} busy={saving} onChange={setDraft} onSave={() => save()} onCancel={closeBox} onEscape={draft.trim() ? backToLines : closeBox} />
            {errorAt("new")}
          </div>
        </>
      );
    }
  }
  const canExpand = diffType === "modify" || diffType === "delete";
  const loadSource = () => {
    if (oldSource !== null) return;
    ipc.reviewFile(reviewId, file.path, "old").then((t) => setOldSource(t ?? ""), () => setOldSource(""));
  };
  useEffect(() => {
    if (canExpand) loadSource();
    // once per file
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [file.path]);
  const total = oldSource ? oldSource.split("\n").length : 0;
  useEffect(() => {
    if (!reveal) return;
    const shown = [...(region.current?.querySelectorAll<HTMLElement>(".diff-comment") ?? [])].find((el) => el.dataset.commentId === reveal);
    if (!shown) return;
    shown.scrollIntoView?.({ block: "nearest" });
    setReveal(null);
  }, [reveal, comments]);
  return (
    <>
      <div
        className="diff-lines"
        ref={region}
        tabIndex={editable ? 0 : undefined}
        role={editable ? "group" : undefined}
        aria-label={editable ? `Diff of ${file.path}: arrow keys choose a line, Shift+arrows extend it, Enter comments` : undefined}
        onKeyDown={editable ? onLineKeys : undefined}
        onFocus={editable ? onLinesFocus : undefined}
        onPointerDown={
          editable
            ? (e) => {
                pressed.current = true;
                delete e.currentTarget.dataset.keys;
              }
            : undefined
        }
        onPointerUp={editable ? released : undefined}
        onPointerCancel={editable ? released : undefined}
        onBlur={
          editable
            ? (e) => {
                // Only when the focus leaves the lines (not from a comment box to them).
                if (!e.currentTarget.contains(e.relatedTarget as Node | null)) pressed.current = false;
              }
            : undefined
        }
      >
        <Diff
          viewType={view}
          diffType={diffType}
          hunks={shown}
          tokens={tokens}
          widgets={widgets}
          selectedChanges={selectedKeys}
          generateLineClassName={({ changes: on }) => {
            const keys = on.filter((c): c is ChangeData => !!c).map(getChangeKey);
            if (!keys.some((k) => currentKeys.has(k))) return undefined;
            return keys.includes(cursor?.head ?? "") ? "diff-line-current diff-line-head" : "diff-line-current";
          }}
          gutterEvents={{ onClick: ({ change }, e) => pick(change, (e as React.MouseEvent).shiftKey) }}
          // A click on a line's code makes it the current line: Enter then comments on the line
          // the person pointed at, not on the hunk's first (where focusing the lines starts).
          codeEvents={
            editable
              ? {
                  onClick: ({ change }) => {
                    if (change) setCursor({ anchor: getChangeKey(change), head: getChangeKey(change) });
                  },
                }
              : undefined
          }
          codeClassName="diff-code"
        >
          {(hs) =>
            hs.flatMap((h, i) => {
              const out = [];
              const before = i === 0 ? h.oldStart - 1 : h.oldStart - (hs[i - 1].oldStart + hs[i - 1].oldLines);
              if (canExpand && oldSource && before > 0) {
                const start = i === 0 ? 1 : hs[i - 1].oldStart + hs[i - 1].oldLines;
                out.push(
                  <Decoration key={`x-${h.content}`}>
                    <button className="link-btn small diff-expand" onClick={() => expandRange(Math.max(start, h.oldStart - 20), h.oldStart)} data-testid="expand-context">
                      {unchangedLines(before)}
                    </button>
                  </Decoration>,
                );
              }
              out.push(
                <Decoration key={`d-${h.content}`}>
                  <span className="diff-hunk-anchor muted small" tabIndex={-1} data-first={h.changes[0] ? getChangeKey(h.changes[0]) : undefined}>
                    {h.content}
                  </span>
                </Decoration>,
              );
              out.push(<Hunk key={`h-${h.content}`} hunk={h} />);
              const lastHunk = i === hs.length - 1;
              const after = total - (h.oldStart + h.oldLines - 1);
              if (canExpand && oldSource && lastHunk && after > 1) {
                out.push(
                  <Decoration key={`y-${h.content}`}>
                    <button className="link-btn small diff-expand" onClick={() => expandRange(h.oldStart + h.oldLines, Math.min(total + 1, h.oldStart + h.oldLines + 20))} data-testid="expand-context">
                      {unchangedLines(after - 1)}
                    </button>
                  </Decoration>,
                );
              }
              return out;
            })
          }
        </Diff>
      </div>
      {shown !== hunks && (
        <button className="btn small" onClick={() => setAll(true)} data-testid="show-whole-diff">
          Show the rest of this file's {lines.toLocaleString()} changed lines
        </button>
      )}
    </>
  );
}

/** The words of a button that shows up to 20 of `n` unchanged lines. */
export function unchangedLines(n: number): string {
  if (n === 1) return "Show 1 unchanged line";
  return n <= 20 ? `Show ${n} unchanged lines` : `Show 20 more of ${n} unchanged lines`;
}

function CommentBox({
  value,
  busy,
  onChange,
  onSave,
  onCancel,
  onEscape = onCancel,
  saveLabel = "Comment",
}: {
  value: string;
  busy: boolean;
  saveLabel?: string;
  onChange: (v: string) => void;
  onSave: () => void;
  onCancel: () => void;
  onEscape?: () => void;
}) {
  // Opened low in the review, the box would sit under its sticky buttons (its CSS keeps a margin);
  // high, its focused text box came in at the top edge with the words above it ("Comment on line
  // 3") out of view: what is brought in is the comment with them.
  const box = useRef<HTMLDivElement>(null);
  const input = useRef<HTMLTextAreaElement>(null);
  useEffect(() => {
    (box.current?.closest<HTMLElement>(".diff-comment") ?? box.current)?.scrollIntoView?.({ block: "nearest" });
    // A draft brought back (or an edit) goes on from its end, not before its words.
    const t = input.current;
    t?.setSelectionRange(t.value.length, t.value.length);
  }, []);
  return (
    <div className="comment-box" ref={box}>
      <textarea
        ref={input}
        autoFocus
        rows={2}
        value={value}
        onChange={(e) => onChange(e.target.value)}
        onKeyDown={(e) => {
          if (e.key === "Enter" && !e.shiftKey && !e.nativeEvent.isComposing) {
            e.preventDefault();
            if (value.trim()) onSave();
          } else if (e.key === "Escape") {
            e.stopPropagation();
            onEscape();
          }
        }}
        placeholder="What should change here?"
        data-testid="comment-input"
      />
      <div className="row">
        {/* Enter saves at once: a person writing two lines must know Shift+Enter. */}
        <span className="muted small grow" data-testid="comment-keys">
          Enter saves · Shift+Enter for a new line
        </span>
        <button className="btn small" onClick={onCancel}>
          Cancel
        </button>
        <button className="btn small primary" disabled={!value.trim() || busy} onClick={onSave} data-testid="save-comment">
          {saveLabel}
        </button>
      </div>
    </div>
  );
}

/** The first `max` lines' worth of hunks. */
function limitLines(hunks: HunkData[], max: number): HunkData[] {
  const out: HunkData[] = [];
  let n = 0;
  for (const h of hunks) {
    if (n >= max) break;
    out.push(h);
    n += h.changes.length;
  }
  return out;
}
