import { useCallback, useEffect, useLayoutEffect, useRef, useState } from "react";
import { showTheme } from "./theme";
import { History as HistoryIcon, PlusSquare, Settings as SettingsIcon } from "lucide-react";
import { AppError, ipc, sentence, type SettingsView } from "./ipc";
import { bootSettings } from "./boot";
import { report } from "./perf";
import { NewTask } from "./screens/NewTask";
// One bundle: loading the Session screen on first use made `--open-session` show a long session
// 270 ms later and did not measurably shorten the cold start (docs/benchmarks.md, section 6).
import { freshLook, History, type HistoryLook } from "./screens/History";
import { SettingsScreen, type SettingsField, type SettingsGuard } from "./screens/Settings";
import { LeaveSettingsDialog } from "./components/LeaveSettingsDialog";
import { SessionView } from "./screens/Session";
import { AttemptsView } from "./screens/Attempts";
import { QuitDialog } from "./components/QuitDialog";
import { Tooltips } from "./components/Tooltips";
import { SidebarSessions } from "./components/SidebarSessions";
import { CommandPalette, requestReview, ShortcutList, type PaletteCommand } from "./components/CommandPalette";
import { dialogAsks, isTextField, SHORTCUT_MODIFIER, shortcutModifier } from "./keys";
import { keepFocusClearOfPinnedBars } from "./pinnedBars";

export type Screen = "new" | "history" | "settings" | "session" | "attempts";

/** Buttons a screen shows that the palette offers by name while they are on screen (a decision
 * on a review is offered apart, after them). */
const ON_SCREEN: { testid: string; label: string }[] = [
  { testid: "retry-run", label: "Retry the run" },
  { testid: "cancel", label: "Cancel the running task" },
  { testid: "session-export", label: "Save the session as Markdown" },
  { testid: "discard-work", label: "Discard the task's work" },
  { testid: "attempts-compare", label: "Ask the evaluator to compare the attempts" },
  { testid: "attempts-stop-comparing", label: "Stop comparing the attempts" },
  { testid: "attempts-cancel", label: "Cancel the running attempts" },
  { testid: "attempts-reject-all", label: "Reject every attempt" },
];

const NAV: { id: Screen; label: string; icon: typeof PlusSquare; key: string }[] = [
  { id: "new", label: "New task", icon: PlusSquare, key: "1" },
  { id: "history", label: "History", icon: HistoryIcon, key: "2" },
  { id: "settings", label: "Settings", icon: SettingsIcon, key: "3" },
];

/** A server is set but no model: what New Task asks for, and where its button leads. */
const modelMissing = (v: SettingsView) => !!v.settings.provider.base_url.trim() && !v.settings.provider.model.trim();

const TASK_DRAFT = "finishline.taskDraft";
const FOLDER_DRAFT = "finishline.workspaceDraft";
/** What a launch last put in New Task, to tell it from what the person wrote there since. */
const LAUNCHED_DRAFT = "finishline.launchedDraft";

/** Puts a task from the command line that could not start into New Task's drafts, unless the
 * person has a task or a folder of their own there (one a launch put there and they left as it
 * was is not theirs). Both or neither: a task beside another task's folder would mislead. */
function placeLaunchedTask(task: string, folder: string): boolean {
  try {
    const draft = { task: sessionStorage.getItem(TASK_DRAFT) ?? "", folder: sessionStorage.getItem(FOLDER_DRAFT) ?? "" };
    const launched = sessionStorage.getItem(LAUNCHED_DRAFT);
    const untouched = launched === JSON.stringify(draft);
    if (!untouched && (draft.task.trim() || draft.folder.trim())) return false;
    try {
      sessionStorage.setItem(TASK_DRAFT, task);
      sessionStorage.setItem(FOLDER_DRAFT, folder);
      sessionStorage.setItem(LAUNCHED_DRAFT, JSON.stringify({ task, folder }));
      return true;
    } catch {
      // Storage full: what was there is put back, so no half is left.
      sessionStorage.setItem(TASK_DRAFT, draft.task);
      sessionStorage.setItem(FOLDER_DRAFT, draft.folder);
      return false;
    }
  } catch {
    return false;
  }
}

/** How many stopped tasks the start's notice names; History lists the rest. */
const STOPPED_NAMED = 5;

export function App() {
  const [screen, setScreenState] = useState<Screen>("new");
  // Going to New Task (again) puts the cursor in the task box, however it was reached.
  const [newTaskFocus, setNewTaskFocus] = useState(0);
  // Settings tells the shell whether it holds unsaved changes, and how to save them, so leaving
  // it by any route (sidebar, shortcut, palette, a session opening) asks first.
  const settingsGuard = useRef<SettingsGuard>({ dirty: false, save: async () => true });
  const [leaving, setLeaving] = useState<(() => void) | null>(null);
  const screenRef = useRef<Screen>("new");
  const setScreen = (s: Screen) => {
    const go = () => {
      screenRef.current = s;
      setScreenState(s);
      if (s === "new") setNewTaskFocus((n) => n + 1);
    };
    const guard = settingsGuard.current;
    if (screenRef.current !== "settings" || s === "settings" || !guard.dirty) go();
    // Save was pressed a moment ago: what it saves is not unsaved. Gone once it is saved; asked
    // only if it could not be (the screen says why).
    else if (guard.saving) void guard.saving.then((ok) => (ok ? go() : setLeaving(() => go)));
    else setLeaving(() => go);
  };
  // Staying in Settings from the sidebar gives the focus back to the sidebar's History (say) while
  // Settings is the page shown: two items would look current. It goes to Settings' own item.
  useEffect(() => {
    if (leaving) return;
    const at = document.activeElement;
    if (at instanceof HTMLElement && at.classList.contains("nav-item") && at.getAttribute("aria-current") !== "page") document.querySelector<HTMLElement>('.nav-item[aria-current="page"]')?.focus();
  }, [leaving]);
  const [sessionId, setSessionId] = useState<string | null>(null);
  // A new screen whose button went with the old one (Run, "Set up a provider") leaves the focus
  // on the page: it goes to the screen instead, so Tab goes on from there. A screen that took
  // the focus itself (New Task's box) keeps it.
  const mainRef = useRef<HTMLElement>(null);
  useEffect(() => {
    const frame = requestAnimationFrame(() => {
      const lost = document.activeElement === null || document.activeElement === document.body;
      if (lost) mainRef.current?.focus({ preventScroll: true });
    });
    return () => cancelAnimationFrame(frame);
  }, [screen, sessionId]);
  useEffect(() => (mainRef.current ? keepFocusClearOfPinnedBars(mainRef.current) : undefined), []);
  // "Choose a model" opens Settings on the Model field; the sidebar's Settings, on the screen.
  const [settingsFocus, setSettingsFocus] = useState<SettingsField | undefined>(undefined);
  const openSettings = (field?: SettingsField) => {
    setSettingsFocus(field);
    setScreen("settings");
  };
  useEffect(() => {
    if (screen !== "settings") setSettingsFocus(undefined);
  }, [screen]);
  // A search hit's message the session opens at (a new object for each opening).
  const [reveal, setReveal] = useState<{ message: string; words?: string[] } | null>(null);
  const openSession = (id: string, message?: string, words?: string[]) => {
    setReveal(message ? { message, words } : null);
    setSessionId(id);
    setScreen("session");
  };
  // A group of attempts of one task, side by side.
  const [groupId, setGroupId] = useState<string | null>(null);
  const openGroup = (group: string) => {
    setGroupId(group);
    setScreen("attempts");
  };
  // Every screen opens at its top (a session then goes to its end itself): the scrolling area is
  // the window's, and a screen opened as far down as the one before it was read.
  useLayoutEffect(() => {
    if (mainRef.current) mainRef.current.scrollTop = 0;
  }, [screen, sessionId, groupId]);
  // The first screen comes from the settings the shell handed over at start (boot.ts); only
  // without them, and on "Try again", are they asked for.
  const [boot] = useState(bootSettings);
  const [view, setView] = useState<SettingsView | null>(boot && "view" in boot ? boot.view : null);
  const [loadError, setLoadError] = useState<AppError | null>(boot && "error" in boot ? boot.error : null);

  const load = useCallback(() => {
    setLoadError(null);
    ipc.getSettings().then(setView, (e: AppError) => setLoadError(e));
  }, []);
  // History's search and filters, as the person left them.
  const historyLook = useRef<HistoryLook>(freshLook());
  // Where an unreadable settings file was kept when the person chose to start from the defaults.
  const [keptAs, setKeptAs] = useState<string | null>(null);
  const setAside = () => {
    ipc.setAsideSettings().then(
      (r) => {
        setLoadError(null);
        setView(r.view);
        setKeptAs(r.kept_as);
      },
      (e: AppError) => setLoadError(e),
    );
  };
  useEffect(() => {
    if (!boot) load();
  }, [boot, load]);
  useEffect(() => report("shell", performance.now()), []);
  const hasView = view !== null;
  useEffect(() => {
    if (hasView) requestAnimationFrame(() => report("ready", performance.now()));
  }, [hasView]);

  // A `--task` that could not start (no such folder, no provider): said once, the task in New Task.
  const [startupFailed, setStartupFailed] = useState<string | null>(null);
  const [newTaskKey, setNewTaskKey] = useState(0);

  // `finishline-app --open-session ID` or `--task T --workspace W`: go straight there, at this
  // launch or when a second launch hands its arguments to this window.
  useEffect(() => {
    const take = () =>
      ipc.startupAction().then(
        async (a) => {
          if (a?.kind === "open_session") openSession(a.session_id);
          if (a?.kind !== "run_task") return;
          try {
            openSession(await ipc.startSession(a.task, a.workspace));
          } catch (e) {
            // Not lost: the task and its folder wait in New Task (its window drafts), with why;
            // unless the person is writing a task of their own there, which stays as it was.
            const why = (e as AppError).message.replace(/[.\s]*$/, ".");
            const placed = placeLaunchedTask(a.task, a.workspace);
            // A busy folder's question has nothing to fix: Run there asks it, with its answers.
            const asks = ["workspace_busy", "workspace_undecided"].includes((e as AppError).code);
            setStartupFailed(placed ? `${why} It waits in New Task${asks ? ": Run there to choose" : " to fix and run"}.` : `${why} It was “${a.task}” in ${a.workspace}; your own draft in New Task is kept.`);
            if (placed) {
              setNewTaskKey((k) => k + 1);
              setScreen("new");
            }
          }
        },
        () => {},
      );
    take();
    const off = ipc.onStartupAction(take);
    return () => void off.then((f) => f()).catch(() => undefined);
    // Once per launch: openSession only calls state setters, which React keeps stable.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, []);

  // A history file that was no database was kept aside at this start: the person hears of it.
  const [historyKept, setHistoryKept] = useState<string | null>(null);
  useEffect(() => {
    ipc.historySetAside().then(
      (p) => setHistoryKept(p ?? null),
      () => {},
    );
  }, []);

  // Tasks the last close cut short: said once, each a click from its Resume.
  const [stopped, setStopped] = useState<{ id: string; title: string }[]>([]);
  useEffect(() => {
    ipc.interruptedAtStart().then(
      (s) => setStopped(s ?? []),
      () => {},
    );
  }, []);
  const openStopped = (id: string) => {
    setStopped((s) => s.filter((t) => t.id !== id));
    openSession(id);
  };

  // Closing over running tasks asks first: the close button (the shell holds the window) and Ctrl+Q.
  const [quitAsk, setQuitAsk] = useState<number | null>(null);
  const [quitFailed, setQuitFailed] = useState<string | null>(null);
  useEffect(() => {
    const off = ipc.onCloseRequested((n) => setQuitAsk(n));
    const onKey = (e: KeyboardEvent) => {
      if (e.ctrlKey && !e.altKey && !e.shiftKey && e.key.toLowerCase() === "q") {
        e.preventDefault();
        setQuitFailed(null);
        ipc.quit(false).then(
          (n) => n > 0 && setQuitAsk(n),
          (err: AppError) => setQuitFailed(err.message),
        );
      }
    };
    window.addEventListener("keydown", onKey);
    return () => {
      window.removeEventListener("keydown", onKey);
      void off.then((f) => f()).catch(() => undefined);
    };
  }, []);

  useEffect(() => {
    showTheme(view?.settings.theme ?? "system");
  }, [view?.settings.theme]);

  // Ctrl+K: the command palette; Ctrl+N: a new task (the reflex for "new" in every desktop app);
  // ?: the shortcut list (outside text fields).
  const [overlay, setOverlay] = useState<"palette" | "shortcuts" | null>(null);
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (dialogAsks()) return;
      if (shortcutModifier(e) && e.key.toLowerCase() === "k") {
        e.preventDefault();
        setOverlay("palette");
      } else if (shortcutModifier(e) && !e.shiftKey && e.key.toLowerCase() === "n") {
        e.preventDefault();
        setScreen("new");
      } else if (shortcutModifier(e) && !e.shiftKey && e.key.toLowerCase() === "f") {
        // The window has no find bar: what a person looks for is in their sessions.
        e.preventDefault();
        searchHistoryNow.current();
      } else if (e.key === "?" && !e.ctrlKey && !e.altKey && !isTextField(e.target)) {
        e.preventDefault();
        setOverlay("shortcuts");
      }
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, []);
  /** History, its search box focused (its words selected, to type anew). */
  const searchHistory = () => {
    setScreen("history");
    let tries = 0;
    const focus = () => {
      const box = document.querySelector<HTMLInputElement>('[data-testid="history-search"]');
      if (!box) {
        if (++tries < 50) setTimeout(focus, 20);
        return;
      }
      box.focus();
      box.select();
    };
    setTimeout(focus, 0);
  };
  const searchHistoryNow = useRef(searchHistory);
  searchHistoryNow.current = searchHistory;
  /** History, with one of its folded panels opened, brought into view and focused. */
  const openInHistory = (testid: string) => {
    setScreen("history");
    let tries = 0;
    const reveal = () => {
      const panel = document.querySelector<HTMLDetailsElement>(`details[data-testid="${testid}"]`);
      if (!panel) {
        if (++tries < 50) setTimeout(reveal, 20);
        return;
      }
      panel.open = true;
      const head = panel.querySelector<HTMLElement>("summary");
      head?.scrollIntoView?.({ block: "start" });
      head?.focus();
    };
    setTimeout(reveal, 0);
  };
  const paletteCommands = (): PaletteCommand[] => {
    const go = (s: Screen) => () => setScreen(s);
    const list: PaletteCommand[] = [
      { id: "new", label: "New task", hint: `${SHORTCUT_MODIFIER}N`, run: go("new") },
      { id: "history", label: "Go to History", hint: "Alt+2", run: go("history") },
      { id: "search", label: "Search every session", hint: `${SHORTCUT_MODIFIER}F`, run: searchHistory },
      { id: "settings", label: "Go to Settings", hint: "Alt+3", run: go("settings") },
      { id: "shortcuts", label: "Keyboard shortcuts", hint: "?", run: () => setOverlay("shortcuts") },
      // The Trust figures are folded at the foot of History: named here, they open there.
      { id: "trust-evaluator", label: "Trust: how far to trust the evaluator", run: () => openInHistory("trust-view") },
      { id: "trust-agents", label: "Trust: how each agent has done", run: () => openInHistory("agent-trust-view") },
    ];
    // The screen's own buttons, while they are there to press: the palette presses them.
    for (const a of ON_SCREEN) {
      const button = document.querySelector<HTMLButtonElement>(`[data-testid="${a.testid}"]:not([disabled])`);
      if (button) list.push({ id: a.testid, label: a.label, run: () => button.click() });
    }
    // Offered only while a review waits on screen, and after the others: Ctrl+K then Enter, out
    // of habit, must not decide a review nobody read. A decision is picked by name.
    if (screen === "session" && document.querySelector('[data-testid="review-panel"] [data-testid="approve"]:not([disabled])')) {
      list.push(
        { id: "approve", label: "Approve the result", run: () => requestReview("approve") },
        { id: "request_changes", label: "Request changes", run: () => requestReview("request_changes") },
        { id: "reject", label: "Reject the result", run: () => requestReview("reject") },
      );
    }
    return list;
  };

  // Alt+1..3 moves between screens without the mouse; Alt+↓ and Alt+↑ between the sessions, in
  // the sidebar's order (what the person sees is the order they step through).
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (!e.altKey || dialogAsks()) return;
      const hit = NAV.find((n) => n.key === e.key);
      if (hit) {
        e.preventDefault();
        setScreen(hit.id);
      } else if ((e.key === "ArrowDown" || e.key === "ArrowUp") && !e.ctrlKey && !e.shiftKey && !e.metaKey && !e.defaultPrevented && !e.isComposing && !isTextField(e.target)) {
        // Not from a field: Alt+↓ opens a list's choices (a select, a model field's suggestions),
        // and moves the caret in a text box on some systems.
        const entries = [...document.querySelectorAll<HTMLElement>('nav.sidebar [data-testid="side-session"], nav.sidebar [data-testid="side-group-open"]')];
        if (entries.length === 0) return;
        e.preventDefault();
        const at = entries.findIndex((b) => b.getAttribute("aria-current") === "page");
        const next = at < 0 ? (e.key === "ArrowDown" ? 0 : entries.length - 1) : Math.min(entries.length - 1, Math.max(0, at + (e.key === "ArrowDown" ? 1 : -1)));
        if (next !== at) entries[next].click();
      }
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, []);

  return (
    <div className="shell">
      <nav className="sidebar" aria-label="Main">
        <div className="brand">
          <span className="brand-mark" aria-hidden>
            ✓
          </span>
          <span className="nav-label">Finishline</span>
        </div>
        {NAV.map(({ id, label, icon: Icon, key }) => (
          <button
            key={id}
            className="nav-item"
            aria-current={screen === id ? "page" : undefined}
            data-testid={`nav-${id}`}
            onClick={() => setScreen(id)}
            title={`${label} (Alt+${key})`}
          >
            <Icon size={16} aria-hidden />
            <span className="nav-label">{label}</span>
          </button>
        ))}
        <SidebarSessions current={screen === "session" ? sessionId : null} currentGroup={screen === "attempts" ? groupId : null} onOpen={openSession} onOpenGroup={openGroup} onOpenHistory={() => setScreen("history")} />
      </nav>
      <main className="content" ref={mainRef} tabIndex={-1}>
        {keptAs && (
          <p className="notice row" role="status" data-testid="settings-set-aside">
            <span className="grow">
              Your unreadable settings file was kept as <code>{keptAs}</code>; the app starts from the default settings.
            </span>
            <button className="btn small" onClick={() => setKeptAs(null)}>
              OK
            </button>
          </p>
        )}
        {quitFailed && (
          <p className="notice row" role="alert" data-testid="quit-failed">
            <span className="grow">Could not quit: {quitFailed}. Close the window to try again.</span>
            <button className="btn small" onClick={() => setQuitFailed(null)}>
              OK
            </button>
          </p>
        )}
        {startupFailed && (
          <p className="notice row" role="alert" data-testid="startup-failed">
            <span className="grow">The task from the command line did not start: {startupFailed}</span>
            <button className="btn small" onClick={() => setStartupFailed(null)}>
              OK
            </button>
          </p>
        )}
        {stopped.length > 0 && (
          <p className="notice row" role="status" data-testid="stopped-at-start">
            <span className="grow">
              {stopped.length === 1 ? "1 task was" : `${stopped.length} tasks were`} stopped when Finishline last closed: open{stopped.length === 1 ? " it" : " one"} to resume it where it stopped.{" "}
              {stopped.slice(0, STOPPED_NAMED).map((t, i) => (
                <span key={t.id}>
                  {i > 0 && " · "}
                  <button className="link" onClick={() => openStopped(t.id)}>
                    {t.title}
                  </button>
                </span>
              ))}
              {stopped.length > STOPPED_NAMED && (
                <>
                  {" · "}
                  <button className="link" onClick={() => setScreen("history")}>
                    {stopped.length - STOPPED_NAMED} more in History
                  </button>
                </>
              )}
            </span>
            <button className="btn small" onClick={() => setStopped([])}>
              OK
            </button>
          </p>
        )}
        {historyKept && (
          <p className="notice row" role="alert" data-testid="history-set-aside">
            <span className="grow">
              Your history file could not be read (it is not a database any more), so a new history was started. The old file is kept whole as <code>{historyKept}</code>; nothing was deleted.
            </span>
            <button className="btn small" onClick={() => setHistoryKept(null)}>
              OK
            </button>
          </p>
        )}
        {/* History and the sessions need no settings: a review waiting there stays reachable
            while the settings file cannot be read. */}
        {screen === "history" ? (
          <History onNewTask={() => setScreen("new")} onOpen={openSession} onOpenGroup={openGroup} onOpenSettings={() => openSettings()} look={historyLook.current} />
        ) : screen === "attempts" && groupId ? (
          <AttemptsView key={groupId} group={groupId} onOpenSession={openSession} onOpenHistory={() => setScreen("history")} />
        ) : screen === "session" && sessionId ? (
          <SessionView key={sessionId} sessionId={sessionId} reveal={reveal} onOpenHistory={() => setScreen("history")} onOpenSettings={openSettings} onOpenGroup={openGroup} onStartAgain={() => setScreen("new")} />
        ) : loadError ? (
          <div className="panel error-panel" role="alert">
            <h2>Settings could not be loaded</h2>
            <p>{sentence(loadError.message)}</p>
            <p className="muted">History and your sessions can still be read from the sidebar; running and deciding on tasks needs the settings. Fix the file and try again, or set it aside (it is kept, renamed) and start from the default settings.</p>
            <div className="row">
              <button className="btn" onClick={load}>
                Try again
              </button>
              <button className="btn" onClick={setAside}>
                Start with default settings
              </button>
            </div>
          </div>
        ) : !view ? (
          <p className="muted" aria-busy="true">
            Loading…
          </p>
        ) : screen === "new" ? (
          <NewTask key={newTaskKey} focusSignal={newTaskFocus} providerReady={view.provider_ready} modelMissing={modelMissing(view)} defaultModel={view.settings.provider.model} defaultPlan={view.settings.plan_mode ?? "auto"} defaultAgent={view.settings.agent ?? null} attemptLimit={view.settings.tasks?.max_attempts ?? 4} onOpenSettings={openSettings} onStarted={openSession} onStartedGroup={openGroup} onOpenSession={openSession} />
        ) : (
          <SettingsScreen view={view} onSaved={setView} guard={settingsGuard} focusField={settingsFocus} />
        )}
      </main>
      {leaving && (
        <LeaveSettingsDialog
          onStay={() => setLeaving(null)}
          onDiscard={() => {
            settingsGuard.current.dirty = false;
            setLeaving(null);
            leaving();
          }}
          onSave={async () => {
            const ok = await settingsGuard.current.save();
            if (ok) {
              setLeaving(null);
              leaving();
            }
            return ok;
          }}
        />
      )}
      {quitAsk !== null && <QuitDialog running={quitAsk} onKeep={() => setQuitAsk(null)} />}
      <Tooltips />
      {overlay === "palette" && <CommandPalette commands={paletteCommands()} onOpenSession={openSession} onOpenGroup={openGroup} onClose={() => setOverlay(null)} />}
      {overlay === "shortcuts" && <ShortcutList onClose={() => setOverlay(null)} />}
    </div>
  );
}
