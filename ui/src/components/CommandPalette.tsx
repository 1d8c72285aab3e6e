import { useEffect, useMemo, useRef, useState } from "react";
import { AppError, ipc, type SearchHit, type SessionSummary } from "../ipc";
import { listedState, STATUS_LABEL } from "../session/model";
import { foundWordsOf } from "../session/reveal";
import { attemptLabel, setAside, sidebarTitles } from "../sidebar";
import { dialogKeys } from "./AlertDialog";
import { SHORTCUT_MODIFIER } from "../keys";

export interface PaletteCommand {
  id: string;
  label: string;
  hint?: string;
  run: () => void;
}

/** Review actions go to the open review panel through one window event, so the palette needs no
 * handle on it; the panel listens while it is shown. */
export const REVIEW_EVENT = "finishline:review";
export type ReviewAction = "approve" | "request_changes" | "reject";
export function requestReview(action: ReviewAction) {
  window.dispatchEvent(new CustomEvent<ReviewAction>(REVIEW_EVENT, { detail: action }));
}

/** Whether every word typed appears in the label, in any order, ignoring case. */
export function matches(label: string, query: string): boolean {
  const l = label.toLowerCase();
  return query
    .toLowerCase()
    .split(/\s+/)
    .filter(Boolean)
    .every((w) => l.includes(w));
}

/** A dialog that closes gives the focus back to where it was when it opened, unless what it
 * did put the focus somewhere on purpose (a screen that opened with its own field focused). */
function useReturnFocus() {
  useEffect(() => {
    const at = document.activeElement;
    const before = at instanceof HTMLElement && at !== document.body && at.isConnected ? at : handedOn;
    return () => {
      // A dialog this one opened as it closed (the palette's "Keyboard shortcuts") mounts with
      // nothing focused: it gives the focus back where this one would have.
      handedOn = before;
      // After the close has settled: the dialog's own element still holds the focus as it goes.
      setTimeout(() => {
        if (handedOn === before) handedOn = null;
        const now = document.activeElement;
        if (before?.isConnected && (!now || now === document.body)) before.focus();
      }, 0);
    };
  }, []);
}

/** Where a dialog that just closed would have given the focus back, for one opened from it. */
let handedOn: HTMLElement | null = null;

const NONE: SearchHit[] = [];

/** Ctrl+K: the screens, the shown screen's buttons and the sessions by name. Arrows move, Enter runs, Esc closes. */
export function CommandPalette({
  commands,
  onOpenSession,
  onOpenGroup,
  onClose,
}: {
  commands: PaletteCommand[];
  onOpenSession: (id: string, message?: string, words?: string[]) => void;
  /** Opens a task's attempts side by side, as the sidebar's group does. */
  onOpenGroup?: (group: string) => void;
  onClose: () => void;
}) {
  const [query, setQuery] = useState("");
  const [active, setActive] = useState(0);
  const [sessions, setSessions] = useState<SessionSummary[]>([]);
  const [sessionsError, setSessionsError] = useState<string | null>(null);
  const input = useRef<HTMLInputElement>(null);
  useReturnFocus();
  useEffect(() => {
    input.current?.focus();
    ipc.listSessions({ limit: 100 }).then(
      (s) => setSessions(s ?? []),
      (e: AppError) => setSessionsError(e.message),
    );
  }, []);
  // The newest hundred are at hand; any older session is found by the history's search as the
  // person types (its words, the title among them).
  // With the words they were found for: hits for what was typed before are no match for what is
  // typed now (Enter would open them).
  const [searched, setSearched] = useState<{ words: string; hits: SearchHit[] }>({ words: "", hits: [] });
  const found = searched.words === query.trim() ? searched.hits : NONE;
  useEffect(() => {
    const words = query.trim();
    if (words.length < 2) return;
    let live = true;
    const t = setTimeout(() => {
      ipc.searchSessions(words).then(
        (hits) => live && setSearched({ words, hits: hits ?? [] }),
        () => live && setSearched({ words, hits: [] }),
      );
    }, 150);
    return () => {
      live = false;
      clearTimeout(t);
    };
  }, [query]);
  // A session the search found matches by its words even where its title does not.
  // A session found by its words shows the passage, unless its title says why it matched.
  const all = useMemo<(PaletteCommand & { found?: boolean; passage?: SearchHit["snippet"] })[]>(() => {
    const listed = new Set(sessions.map((s) => s.id));
    // A hit opens its session at the message the match is in; one its title matches opens as it
    // is now (a message with the title's words in it is not what the person was after).
    const hits = new Map(found.map((h) => [h.session_id, h]));
    const open = (label: string, id: string) => (matches(label, query) ? onOpenSession(id) : onOpenSession(id, hits.get(id)?.message_id, foundWordsOf(hits.get(id)?.snippet)));
    const passage = (label: string, id: string) => {
      const parts = hits.get(id)?.snippet;
      return parts && parts.length > 0 && !matches(label, query) ? parts : undefined;
    };
    // A task's attempts side by side are one entry too, before its first attempt.
    const groups = new Set<string>();
    const groupOf = (s: SessionSummary): PaletteCommand[] => {
      const g = s.attempt?.group;
      if (!g || !onOpenGroup || groups.has(g)) return [];
      groups.add(g);
      const chosen = sessions.some((o) => o.attempt?.group === g && (o.attempt.chosen || o.attempt.group_chosen));
      return [{ id: `group-${g}`, label: `Open: ${s.title || s.task} · ${s.attempt!.of} attempts side by side`, hint: chosen ? "One chosen" : "To compare", run: () => onOpenGroup(g) }];
    };
    // Tasks of one title read alike: told apart as the sidebar tells them (folder, start).
    const titles = sidebarTitles(sessions.filter((s) => !s.attempt));
    return [
      ...commands,
      ...sessions.flatMap((s) => [...groupOf(s), {
        id: `session-${s.id}`,
        // A task's attempts share its title: each is told by its number and agent.
        label: `Open: ${s.attempt ? `${s.title || s.task} · ${attemptLabel(s)}` : (titles.get(s.id) ?? s.title ?? s.task)}`,
        hint: listedState(s, setAside(s), sessions.some((o) => !!s.attempt && o.attempt?.group === s.attempt.group && o.attempt.chosen)).word,
        run: () => open(s.title || s.task, s.id),
        found: hits.has(s.id),
        passage: passage(s.title || s.task, s.id),
      }]),
      ...found
        .filter((h) => !listed.has(h.session_id))
        .map((h) => ({
          id: `session-${h.session_id}`,
          label: `Open: ${h.title}`,
          hint: STATUS_LABEL[h.status],
          run: () => open(h.title, h.session_id),
          found: true,
          passage: passage(h.title, h.session_id),
        })),
    ];
  }, [commands, sessions, found, onOpenSession, onOpenGroup, query]);
  const shown = all.filter((c) => c.found || matches(c.label, query)).slice(0, 12);
  const pick = (c: PaletteCommand | undefined) => {
    if (!c) return;
    onClose();
    c.run();
  };
  return (
    <div className="modal-backdrop palette-backdrop" onMouseDown={onClose}>
      <div
        className="panel modal palette"
        // A press on its padding keeps the focus in it (Esc and Tab still answer), not the page's.
        tabIndex={-1}
        role="dialog"
        aria-modal="true"
        aria-label="Command palette"
        data-testid="palette"
        onMouseDown={(e) => e.stopPropagation()}
        // Esc closes it from anywhere in it; Tab never leaves it for the page behind.
        onKeyDown={dialogKeys(onClose)}
      >
        <input
          ref={input}
          value={query}
          onChange={(e) => {
            setQuery(e.target.value);
            setActive(0);
          }}
          onKeyDown={(e) => {
            if (e.key === "ArrowDown") {
              e.preventDefault();
              setActive((a) => Math.min(a + 1, shown.length - 1));
            } else if (e.key === "ArrowUp") {
              e.preventDefault();
              setActive((a) => Math.max(a - 1, 0));
            } else if (e.key === "Enter") {
              e.preventDefault();
              pick(shown[active]);
            }
          }}
          placeholder="Type a command or a session's title"
          aria-label="Command"
          aria-controls="palette-list"
          aria-activedescendant={shown[active] ? `palette-${shown[active].id}` : undefined}
          data-testid="palette-input"
        />
        <ul id="palette-list" role="listbox" className="palette-list">
          {shown.map((c, n) => (
            <li key={c.id} id={`palette-${c.id}`} role="option" aria-selected={n === active} className="palette-item" data-testid="palette-item" onMouseEnter={() => setActive(n)} onClick={() => pick(c)}>
              <span className="palette-label">
                {c.label}
                {c.passage && (
                  <span className="small muted palette-passage" data-testid="palette-passage">
                    {c.passage.map((p, i) => (p.matched ? <mark key={i}>{p.text}</mark> : <span key={i}>{p.text}</span>))}
                  </span>
                )}
              </span>
              {c.hint && <span className="muted">{c.hint}</span>}
            </li>
          ))}
          {shown.length === 0 && <li className="muted palette-empty">Nothing matches “{query}”.</li>}
          {sessionsError && (
            <li className="field-error" role="alert" data-testid="palette-sessions-error">
              The sessions could not be listed: {sessionsError}
            </li>
          )}
        </ul>
      </div>
    </div>
  );
}

export const SHORTCUTS: [string, string][] = [
  [`${SHORTCUT_MODIFIER}K`, "Command palette: every screen, the buttons of the one you are on, every session by title"],
  [`${SHORTCUT_MODIFIER}N`, "New task"],
  [`${SHORTCUT_MODIFIER}F`, "Search every session (History)"],
  ["Alt+1 / Alt+2 / Alt+3", "New task / History / Settings"],
  ["Alt+↓ / Alt+↑", "The next / previous session in the sidebar"],
  ["Ctrl+Enter", "Run the task (New Task)"],
  ["Enter", "Send a message, an answer or feedback"],
  ["Shift+Enter", "A new line in those boxes"],
  ["Esc", "Close a dialog; in a session, outside a text field, cancel its running task (asks first)"],
  ["j / k", "The review's diff: next / previous file"],
  ["n / p", "The review's diff: next / previous change"],
  ["↑ / ↓, Shift", "The review's diff: move along the lines, Shift picks a range"],
  ["Enter or c", "The review's diff: comment on the lines picked"],
  ["Ctrl+S", "Save Settings"],
  ["Ctrl+Q", "Quit (asks first while a task runs)"],
  ["?", "This list"],
];

export function ShortcutList({ onClose }: { onClose: () => void }) {
  const close = useRef<HTMLButtonElement>(null);
  useReturnFocus();
  // Without scrolling: in a short window the list scrolls, and it opens at its title.
  useEffect(() => close.current?.focus({ preventScroll: true }), []);
  return (
    <div className="modal-backdrop" onMouseDown={onClose}>
      <div
        className="panel modal"
        role="dialog"
        aria-modal="true"
        aria-labelledby="shortcuts-title"
        data-testid="shortcuts"
        onMouseDown={(e) => e.stopPropagation()}
        onKeyDown={dialogKeys(onClose)}
      >
        <h2 id="shortcuts-title">Keyboard shortcuts</h2>
        <dl className="about-list">
          {SHORTCUTS.map(([k, what]) => (
            <div key={k} style={{ display: "contents" }}>
              <dt>
                <kbd>{k}</kbd>
              </dt>
              <dd>{what}</dd>
            </div>
          ))}
        </dl>
        <div className="actions modal-foot">
          <button ref={close} className="btn" onClick={onClose}>
            Close
          </button>
        </div>
      </div>
    </div>
  );
}
