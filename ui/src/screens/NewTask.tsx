import { useEffect, useRef, useState, type FormEvent, type KeyboardEvent } from "react";
import { FolderOpen, Play } from "lucide-react";
import { AppError, ipc, sentence, type AgentPreset, type ExternalAgent, type PlanMode, type SessionSummary, type WhenBusy, type WorkspaceInfo, type WorkspaceSurvey } from "../ipc";
import { gradeOf } from "../modelGrades";
import { AlertDialog } from "../components/AlertDialog";
import { attemptChoices, refreshedChoices, attemptList, AttemptsPicker, attemptsProblem, settingsAgentLabel, type AttemptChoice } from "../components/AttemptsPicker";
import { useWindowChoice, useWindowDraft } from "../windowDraft";

interface Props {
  providerReady: boolean;
  /** A server is set but no model: the one thing Settings still needs. */
  modelMissing?: boolean;
  /** The model from Settings; the task can use another. */
  defaultModel?: string;
  /** Opens Settings, with the focus in `field` when the person is sent there to fill it in. */
  onOpenSettings: (field?: "provider-model") => void;
  onStarted: (sessionId: string) => void;
  /** Changes each time the person goes to New Task: the cursor goes to the task box. */
  focusSignal?: number;
  /** The plan choice from Settings. */
  defaultPlan?: PlanMode;
  /** The agent from Settings; null: the built-in agent. */
  defaultAgent?: ExternalAgent | null;
  /** The most attempts side by side (Settings → Tasks). */
  attemptLimit?: number;
  /** Attempts started: their group. */
  onStartedGroup?: (group: string) => void;
  /** Opens another task: the one a busy folder's question names, to decide it first. */
  onOpenSession?: (sessionId: string) => void;
}

const PLAN_CHOICES: { mode: PlanMode; label: string; hint: string }[] = [
  { mode: "auto", label: "Auto", hint: "A manager splits long tasks into checked steps. One short line (12 words or fewer) runs at once, without asking it; a task it finds small runs as one." },
  { mode: "on", label: "On", hint: "Always split the task into checked steps, each judged against its own criteria." },
  { mode: "off", label: "Off", hint: "One run, judged once at the end." },
];

const NO_CHOICES: AttemptChoice[] = [];

/** Tasks larger than this are refused in the form, before anything is sent anywhere. */
export const MAX_TASK_CHARS = 100_000;

/** Distinct workspaces of these sessions, most recent first, at most five. */
export function recentWorkspaces(sessions: SessionSummary[], max = 5): string[] {
  const out: string[] = [];
  for (const s of [...sessions].sort((a, b) => b.created_ms - a.created_ms)) {
    if (s.workspace && !out.includes(s.workspace)) out.push(s.workspace);
    if (out.length === max) break;
  }
  return out;
}

export function NewTask({ providerReady, modelMissing = false, defaultModel = "", onOpenSettings, onStarted, focusSignal = 0, defaultPlan = "auto", defaultAgent = null, attemptLimit = 4, onStartedGroup, onOpenSession }: Props) {
  const taskBox = useRef<HTMLTextAreaElement>(null);
  useEffect(() => {
    if (providerReady) taskBox.current?.focus();
  }, [focusSignal, providerReady]);
  // The form's choices, like its words, are as the person left them after a visit elsewhere.
  const [model, setModel, forgetModel] = useWindowChoice("finishline.modelChoice", defaultModel);
  const [plan, setPlan, forgetPlan] = useWindowChoice<PlanMode>("finishline.planChoice", defaultPlan);
  // Who does this task: the Settings choice, the built-in agent, or an installed ACP preset.
  const defaultAgentName = defaultAgent?.name ?? "builtin";
  const [agentChosen, setAgentName, forgetAgent] = useWindowChoice("finishline.agentChoice", defaultAgentName);
  const [presets, setPresets] = useState<AgentPreset[] | null>(null);
  useEffect(() => {
    ipc.agentPresets().then((ps) => setPresets(ps ?? []), () => setPresets([]));
  }, []);
  const installed = (presets ?? []).filter((p) => p.found);
  // An agent chosen on an earlier visit that is no longer there (Settings changed, uninstalled)
  // gives way to the default, as the list shows.
  const agentName = presets === null || agentChosen === "builtin" || agentChosen === defaultAgent?.name || installed.some((p) => p.name === agentChosen) ? agentChosen : defaultAgentName;
  const fromSettings = settingsAgentLabel(defaultAgent, presets ?? []);
  // Attempts side by side: how many tries each agent gets.
  const [attemptsAsked, setAttemptsOn, forgetAttemptsAsked] = useWindowChoice("finishline.attemptsChoice", false);
  // A limit under two (Settings → Tasks) turns attempts off.
  const attemptsOn = attemptsAsked && attemptLimit >= 2;
  const [choices, setChoices] = useWindowChoice<AttemptChoice[]>("finishline.attemptCounts", NO_CHOICES);
  useEffect(() => {
    // Not before the installed agents are known: the tries kept for one of them would be dropped.
    if (presets === null) return;
    const running = model.trim() || defaultModel;
    setChoices((old) => refreshedChoices(old, attemptChoices(running, defaultAgent, presets), running));
  }, [presets, model, defaultModel, defaultAgent, setChoices]);
  const external = !attemptsOn && agentName !== "builtin";
  const [task, setTask] = useWindowDraft("finishline.taskDraft");
  // The box's words as they are now, for a start that awaited something meanwhile.
  const taskNow = useRef(task);
  taskNow.current = task;
  const [folder, setFolder] = useWindowDraft("finishline.workspaceDraft");
  const workspace = folder || null;
  const setWorkspace = (w: string | null) => setFolder(w ?? "");
  const [starting, setStarting] = useState(false);
  const [error, setError] = useState<string | null>(null);

  // Folders of earlier sessions, most recent first: most tasks go to a folder used before.
  const [recent, setRecent] = useState<string[]>([]);
  useEffect(() => {
    ipc.listSessions({ limit: 100 }).then((list) => setRecent(recentWorkspaces(list ?? [])), () => {});
  }, []);
  // A folder dropped on the window becomes the workspace.
  useEffect(() => {
    // Outside the app's window (a test, a browser) there is nothing to drop onto.
    const off = ipc.onPathDropped((p) => setFolder(p)).catch(() => undefined);
    return () => void off.then((f) => f?.());
  }, [setFolder]);

  const [survey, setSurvey] = useState<WorkspaceSurvey | null>(null);
  // Why the folder cannot be looked at (none there, not readable): said at the field, before Run.
  const [folderProblem, setFolderProblem] = useState<string | null>(null);
  // Where the task will work: its own worktree (a git repository), or the folder itself.
  const [info, setInfo] = useState<WorkspaceInfo | null>(null);
  const [base, setBase] = useState<string>("");
  const [infoRound, setInfoRound] = useState(0);
  // The folder is being looked at: its line is held open meanwhile, so that the line arriving
  // does not move the Run button from under the pointer.
  const [checking, setChecking] = useState(false);
  // Another task works in this plain folder: run anyway, queue after it, or cancel.
  // What the other task in the folder is doing: at work (a queue to wait in), or done and
  // waiting for the person's review (nothing to wait for but their decision).
  // `other`: the task it names, to open (its review is where its changes are decided).
  const [busyAsk, setBusyAsk] = useState<{ message: string; undecided: boolean; other?: { session_id: string; title: string } } | null>(null);
  // The folder is a whole home folder or the disk's root: run there only at the person's word.
  const [broadAsk, setBroadAsk] = useState<WorkspaceSurvey | null>(null);
  const [uncommitted, setUncommitted] = useState<{ names: string[]; count: number } | null>(null);
  // A start refused for the folder before ("… is not a folder") is not about the one chosen now.
  useEffect(() => setError(null), [workspace]);
  useEffect(() => {
    setSurvey(null);
    setFolderProblem(null);
    setInfo(null);
    setUncommitted(null);
    setChecking(!!workspace);
    if (!workspace) return;
    let live = true;
    // Paths are typed a letter at a time: survey the folder once typing pauses.
    const t = setTimeout(() => {
      ipc.surveyWorkspace(workspace).then(
        (s) => live && setSurvey(s),
        (e) => live && (e as AppError).code === "invalid_input" && setFolderProblem(sentence((e as AppError).message)),
      );
      ipc.workspaceInfo(workspace).then(
        (i) => {
          if (live) setChecking(false);
          // Outside the app (a test without this command) there is nothing to say.
          if (!live || !i) return;
          setInfo(i);
          setBase(i.branch ?? "");
          // A task's worktree starts from the last commit: the person's edits since are not in it.
          // Attempts get worktrees in any repository, whatever Settings say of single tasks.
          if (i.repository)
            ipc.workspaceUncommitted(workspace).then(
              (u) => live && setUncommitted(u),
              () => undefined,
            );
        },
        () => live && setChecking(false),
      );
    }, 300);
    return () => {
      live = false;
      clearTimeout(t);
    };
  }, [workspace, infoRound]);
  // Committing a large folder takes seconds: said while it lasts, done once, and Run waits (the
  // task would otherwise start in the folder itself).
  const [makingRepository, setMakingRepository] = useState(false);
  const makeRepository = async () => {
    if (!workspace || makingRepository) return;
    setError(null);
    setMakingRepository(true);
    try {
      await ipc.makeRepository(workspace);
      setInfoRound((n) => n + 1);
    } catch (e) {
      setError((e as AppError).message);
    } finally {
      setMakingRepository(false);
    }
  };
  // Where the task (or each of its attempts) works: a worktree of its own, or the folder itself.
  const inWorktrees = !!info && (info.worktrees || (attemptsOn && !!info.repository));
  const trimmed = task.trim();
  // Not a blocker: a weak model may still do a small task, but the person should know.
  const noTools = gradeOf(model)?.find((c) => c.kind === "calls_tools" && !c.passed);
  const tooLong = task.length > MAX_TASK_CHARS;
  // A server is set but no model: the one typed here will do (for this task).
  const modelForThisTask = !providerReady && modelMissing && !!model.trim() && !external;
  const blocker = !providerReady && !modelForThisTask
    ? modelMissing
      ? "Name a model in the Model field above, or in Settings"
      : "Set up a provider in Settings first"
    : !trimmed
      ? "Describe the task first"
      : tooLong
        ? `The task is longer than ${MAX_TASK_CHARS.toLocaleString("en")} characters`
        : !workspace
          ? "Choose a workspace folder first"
          : // What is wrong with it is said at the field: a start would fail with the same words.
            folderProblem
            ? "Choose a folder that can be used first"
            : makingRepository
            ? "Making the first commit…"
            : attemptsOn
            ? // Attempts are never one run in their place: Run waits for the folder's answer, and
              // a folder that cannot hold them says so.
              !info
              ? checking
                ? "Looking at the folder…"
                : "Attempts need a folder in a git repository with a commit: the folder could not be looked at"
              : !info.repository
                ? "Attempts need a folder in a git repository with a commit: untick Attempts to run it once"
                : attemptsProblem(choices, attemptLimit)
            : null;

  const pick = async () => {
    setError(null);
    try {
      const dir = await ipc.pickWorkspace();
      if (dir) setWorkspace(dir);
    } catch (e) {
      setError((e as AppError).message);
    }
  };

  const run = async (e?: FormEvent, whenBusy: WhenBusy = "ask", broadOk = false) => {
    e?.preventDefault();
    if (blocker || starting || !workspace) return;
    setStarting(true);
    setError(null);
    setBusyAsk(null);
    setBroadAsk(null);
    // What is sent: words typed while the folder is looked at stay in the box.
    const sent = task;
    // Sent, the form is the Settings' again (its words too, unless more were typed meanwhile);
    // the next task is one run unless attempts are asked for again.
    const clearSent = () => {
      if (taskNow.current === sent) setTask("");
      forgetModel();
      forgetPlan();
      forgetAgent();
      forgetAttemptsAsked();
    };
    try {
      // A whole home folder or the disk's root asks first, also when Run came before its
      // warning: the agent could change any file there.
      const looked = broadOk ? null : (survey ?? (await ipc.surveyWorkspace(workspace).catch(() => null)));
      if (looked?.too_broad) {
        setBroadAsk(looked);
        return;
      }
      const baseChoice = inWorktrees && base && base !== info?.branch ? base : undefined;
      // Attempts need a repository with a commit, whatever Settings say of single tasks: each
      // attempt gets its own worktree (`info.worktrees` is about single tasks).
      if (attemptsOn && info?.repository) {
        const m = model.trim();
        // The built-in agent's attempts use this task's model when it is not the Settings one.
        const agents = attemptList(choices).map((a) => (a === "builtin" && m && m !== defaultModel ? `builtin:${m}` : a));
        const [group, ids] = await ipc.startAttempts(sent, workspace, agents, plan, baseChoice, m && m !== defaultModel ? m : undefined);
        clearSent();
        if (onStartedGroup) onStartedGroup(group);
        else onStarted(ids[0]);
        return;
      }
      const id = await ipc.startSession(sent, workspace, model.trim() && model.trim() !== defaultModel ? model.trim() : undefined, plan, agentName !== defaultAgentName ? agentName : undefined, { base: baseChoice, whenBusy });
      clearSent();
      onStarted(id);
    } catch (err) {
      // The task text stays in the box: nothing the person typed is lost.
      const code = (err as AppError).code;
      if (code === "workspace_busy" || code === "workspace_undecided") {
        const undecided = code === "workspace_undecided";
        const message = (err as AppError).message;
        // Who it is: as the folder's line knew it, so the button is there with the question
        // (none appearing under the pointer), then asked again without holding the answers
        // (the line may be older than the question).
        setBusyAsk({ message, undecided, other: (undecided ? info?.waiting : info?.busy)?.[0] });
        void ipc.workspaceInfo(workspace).then(
          (now) => {
            const other = (undecided ? now?.waiting : now?.busy)?.[0];
            if (other) setBusyAsk((a) => (a && a.message === message ? { ...a, other } : a));
          },
          () => undefined,
        );
      } else setError((err as AppError).message);
    } finally {
      setStarting(false);
    }
  };

  // Ctrl+Enter runs from any field of the form (Enter in a one-line field submits it too).
  const onKeyDown = (e: KeyboardEvent<HTMLFormElement>) => {
    // Not from a dialog drawn over the form (a portal's keys bubble here too): its own buttons
    // answer it, with the choice the person made there.
    if (!e.currentTarget.contains(e.target as Node) || e.nativeEvent.isComposing) return;
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      run();
    }
  };
  // And when the focus is on the page around the form (after a click on blank space); what the
  // form's own handler took is not taken twice.
  const runNow = useRef(run);
  runNow.current = run;
  useEffect(() => {
    const onKey = (e: globalThis.KeyboardEvent) => {
      if (e.defaultPrevented || e.isComposing || e.key !== "Enter" || !(e.ctrlKey || e.metaKey)) return;
      if (document.querySelector('[role="alertdialog"], [role="dialog"]')) return;
      e.preventDefault();
      void runNow.current();
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, []);

  return (
    <form className="screen" onSubmit={run} onKeyDown={onKeyDown} data-testid="new-task-form">
      <header className="screen-head">
        <h1>New task</h1>
        <p className="muted">Describe what you want done. Finishline checks the work before it calls it finished.</p>
      </header>

      {modelForThisTask ? (
        // The guide asked for a model and one was given: asking on would read as if it were not.
        <p className="muted small" data-testid="model-for-this-task">
          This task runs with {model.trim()}. Name a model in{" "}
          <button type="button" className="link-btn" onClick={() => onOpenSettings("provider-model")}>
            Settings
          </button>{" "}
          to use one for every task.
        </p>
      ) : !providerReady && (
        <div className="panel callout" data-testid="first-run">
          <h2>{modelMissing ? "Choose a model to get started" : "Connect a model to get started"}</h2>
          {modelMissing ? (
            <p data-testid="first-run-model">A server is set in Settings, but no model: name the one it serves (Test connection lists them).</p>
          ) : (
          <p>
            Finishline needs a model provider. A local server works without a key: <strong>Ollama</strong>{" "}
            (<code>http://localhost:11434/v1</code>) or the <strong>llama.cpp</strong> server (
            <code>http://127.0.0.1:8080/v1</code>). OpenAI, Anthropic and Gemini work with a key.
          </p>
          )}
          <button type="button" className="btn primary" onClick={() => onOpenSettings(modelMissing ? "provider-model" : undefined)} data-testid="open-settings">
            {modelMissing ? "Choose a model" : "Set up a provider"}
          </button>
        </div>
      )}

      <label className="field">
        <span>Task</span>
        <textarea
          data-testid="task-input"
          value={task}
          onChange={(e) => setTask(e.target.value)}
          ref={taskBox}
          placeholder="e.g. Summarise the PDFs in this folder into notes.md"
          rows={7}
          aria-invalid={tooLong || undefined}
        />
        {tooLong && (
          <span className="field-error" data-testid="task-too-long">
            This task is {task.length.toLocaleString("en")} characters; a task here holds at most {MAX_TASK_CHARS.toLocaleString("en")}. Shorten the task: put a long log or spec in a file in the folder and name it, or run it from a terminal with <code>finishline run --task-file FILE</code> (up to 1 MB).
          </span>
        )}
      </label>

      <div className="field">
        <span>Workspace</span>
        <div className="row">
          <input
            className="path-input"
            data-testid="workspace-path"
            value={workspace ?? ""}
            onChange={(e) => setWorkspace(e.target.value || null)}
            placeholder="No folder chosen: pick one, paste its path or drop it here"
            aria-label="Workspace folder"
            spellCheck={false}
          />
          <button type="button" className="btn" onClick={pick} data-testid="pick-workspace">
            <FolderOpen size={15} aria-hidden /> Choose folder…
          </button>
        </div>
        {recent.length > 0 && (
          <div className="recent-workspaces" data-testid="recent-workspaces">
            <span className="muted">Recent:</span>
            {recent.map((w) => (
              <button key={w} type="button" className="chip" aria-pressed={workspace === w} onClick={() => setWorkspace(w)} title={w}>
                {w.split("/").filter(Boolean).pop() ?? w}
              </button>
            ))}
          </div>
        )}
        {!info && checking && (
          <div className="muted small where-it-works" data-testid="workspace-checking">
            Looking at the folder…
          </div>
        )}
        {/* A folder that cannot be used has no "where it works": its problem is said instead. */}
        {info && !folderProblem && (
          <div className="muted small where-it-works" data-testid="workspace-isolation" data-worktree={inWorktrees ? "yes" : "no"}>
            {inWorktrees ? (
              <>
                {info.worktrees ? "Works" : "Each attempt works"} in its own worktree on a new branch from{" "}
                {info.branches.length > 1 ? (
                  <select value={base} onChange={(e) => setBase(e.target.value)} data-testid="base-branch" aria-label="Branch the task starts from and lands on">
                    {info.branch === null && <option value="">the current commit</option>}
                    {info.branches.map((b) =>
                      b === info.rebasing ? (
                        // Its landing would be refused until the rebase is over.
                        <option key={b} value={b} disabled>
                          {b} (being rebased)
                        </option>
                      ) : (
                        <option key={b} value={b}>
                          {b}
                        </option>
                      ),
                    )}
                  </select>
                ) : (
                  <code>{info.branch ?? "the current commit"}</code>
                )}
                .{" "}
                {base || info.branch ? (
                  <>Your checkout stays as it is; approving lands the task on {base || info.branch}.</>
                ) : (
                  // A detached HEAD (a rebase or bisect under way detaches it) has no branch to land on.
                  <>Your checkout is on no branch{info.under_way ? ` (in the middle of ${info.under_way})` : ""}: approving keeps the task's branch for you to merge.</>
                )}{" "}
                Several tasks can run side by side.
                {uncommitted && uncommitted.count > 0 && <Uncommitted names={uncommitted.names} count={uncommitted.count} midway={!!info.under_way} />}
              </>
            ) : (
              <>
                Works in the folder itself{info.repository ? " (Settings say in place)" : ""}.{" "}
                {info.busy.length > 0 && <strong data-testid="workspace-busy">“{info.busy[0].title}” is working in it right now. </strong>}
                {info.busy.length === 0 && !!info.waiting?.length && (
                  <strong data-testid="workspace-waiting">
                    {info.waiting.length === 1 ? `“${info.waiting[0].title}” waits` : `${info.waiting.length} tasks wait`} for your review here.{" "}
                  </strong>
                )}
                {!info.repository && (
                  <>
                    To run tasks side by side, each in its own copy,{" "}
                    <button type="button" className="link" onClick={makeRepository} disabled={makingRepository} aria-busy={makingRepository} data-testid="make-repository">
                      {makingRepository ? "Making the first commit…" : info.unborn_repository ? "make a first commit" : "make it a git repository"}
                    </button>{" "}
                    (it commits the folder as it is now).
                  </>
                )}
              </>
            )}
          </div>
        )}
        {folderProblem && (
          <span className="field-error" role="status" data-testid="workspace-problem">
            {folderProblem}.
          </span>
        )}
        {survey?.instructions && (
          <p className="muted small" data-testid="workspace-instructions">
            This folder's <code>{survey.instructions}</code> goes to the agent and the evaluator: the work follows it.
          </p>
        )}
        {survey && (survey.too_broad || survey.files >= 20_000) && (
          <p className="notice" role="status" data-testid="workspace-warning">
            {survey.too_broad ? "This is your whole home folder or the root of the disk. " : "This is a large folder. "}
            It holds {survey.capped ? "over " : ""}
            {survey.files.toLocaleString()} files; the agent can change any of them, and recording them for review and revert takes a while the first time. A project folder is usually what you mean.
          </p>
        )}
      </div>

      <AttemptsPicker on={attemptsOn} onToggle={setAttemptsOn} choices={choices} onChange={setChoices} limit={attemptLimit} available={!!info?.repository} model={model.trim() || defaultModel} />
      {!attemptsOn && (defaultAgent || installed.length > 0) && (
        <label className="field">
          <span>Agent</span>
          <select data-testid="task-agent" value={agentName} onChange={(e) => setAgentName(e.target.value)}>
            <option value="builtin">Finishline's built-in agent</option>
            {defaultAgent && fromSettings && <option value={defaultAgent.name}>{fromSettings}</option>}
            {installed.map((p) => (
              <option key={p.name} value={p.name}>
                {p.label} (ACP)
              </option>
            ))}
          </select>
          {external && <span className="muted small">It works with its own model; Finishline judges when it is really done.</span>}
        </label>
      )}
      {!external && (
        <label className="field">
          <span>Model</span>
          <input data-testid="task-model" value={model} onChange={(e) => setModel(e.target.value)} placeholder="The model from Settings" spellCheck={false} />
        </label>
      )}
      <fieldset className="field plan-choice" data-testid="plan-choice">
        <legend>Plan</legend>
        <div className="segmented" role="radiogroup" aria-label="Plan">
          {PLAN_CHOICES.map((c) => (
            <label key={c.mode} className={plan === c.mode ? "selected" : ""} title={c.hint} data-testid={`plan-label-${c.mode}`}>
              <input type="radio" name="plan" value={c.mode} checked={plan === c.mode} onChange={() => setPlan(c.mode)} data-testid={`plan-${c.mode}`} />
              {c.label}
            </label>
          ))}
        </div>
        <span className="muted small">{PLAN_CHOICES.find((c) => c.mode === plan)?.hint}</span>
      </fieldset>
      {noTools && !external && (
        <p className="notice" role="status" data-testid="model-warning">
          In Test connection, {model.trim()} did not call a tool when asked ({noTools.detail}). It can answer, but it will rarely act on files. Name another model above for this task, or in{" "}
          <button type="button" className="link" onClick={() => onOpenSettings("provider-model")}>
            Settings
          </button>{" "}
          for every task, or run anyway.
        </p>
      )}

      {broadAsk && (
        <AlertDialog title={/^[\\/]*$/.test(workspace ?? "") ? "Run across the whole disk?" : "Run in your whole home folder?"} testid="broad-folder-dialog" onEscape={() => setBroadAsk(null)}>
          <p>
            {workspace} is your whole home folder or the root of the disk. It holds {broadAsk.capped ? "over " : ""}
            {broadAsk.files.toLocaleString()} files, and the agent can change any of them. A project folder is usually what you mean.
          </p>
          <div className="actions">
            <button
              type="button"
              className="btn primary"
              onClick={() => {
                setBroadAsk(null);
                document.querySelector<HTMLInputElement>('[data-testid="workspace-path"]')?.focus();
              }}
              data-testid="broad-choose"
              autoFocus
            >
              Choose another folder
            </button>
            <button type="button" className="btn" onClick={() => run(undefined, "ask", true)} data-testid="broad-run">
              Run here anyway
            </button>
          </div>
        </AlertDialog>
      )}

      {busyAsk && (
        <AlertDialog title={busyAsk.undecided ? "Another task's changes wait for your review here" : "Another task works in this folder"} testid="workspace-busy-dialog" onEscape={() => setBusyAsk(null)}>
          <p>{busyAsk.message}</p>
          {busyAsk.other && onOpenSession && (
            <p className="muted small" data-testid="busy-open-hint">
              {busyAsk.undecided ? "Review it first" : "Open it"} goes to “{busyAsk.other.title}”; the words of this task wait here, unsent.
            </p>
          )}
          <div className="actions">
            <button type="button" className="btn" onClick={() => setBusyAsk(null)} data-testid="busy-cancel" autoFocus>
              Cancel
            </button>
            {busyAsk.other && onOpenSession && (
              <button type="button" className="btn" onClick={() => onOpenSession(busyAsk.other!.session_id)} title={`Open “${busyAsk.other.title}”; the words of this task stay in New Task, unsent`} data-testid="busy-open">
                {busyAsk.undecided ? "Review it first" : "Open it"}
              </button>
            )}
            <button type="button" className={busyAsk.undecided ? "btn primary" : "btn"} onClick={() => run(undefined, "run", true)} data-testid="busy-run">
              Run anyway
            </button>
            {!busyAsk.undecided && (
              <button type="button" className="btn primary" onClick={() => run(undefined, "queue", true)} data-testid="busy-queue">
                Queue after it
              </button>
            )}
          </div>
        </AlertDialog>
      )}

      {/* Kept in view at the window's foot: notes above (uncommitted changes, attempts) must
          not push Run below the fold. */}
      <div className="actions new-task-actions" data-pinned="bottom">
        {/* In the bar, beside Run: below a long form it would be out of sight or under it. */}
        {error && (
          <p className="field-error" role="alert">
            {error}
          </p>
        )}
        <span className="muted hint">{blocker ?? "Ctrl+Enter runs"}</span>
        <button type="submit" className="btn primary" disabled={!!blocker || starting} title={blocker ?? "Run (Ctrl+Enter)"} data-testid="run">
          <Play size={15} aria-hidden /> {attemptsOn && info?.repository ? "Run attempts" : "Run"}
        </button>
      </div>
    </form>
  );
}

/** A new worktree starts from the last commit: the person's edits since are not in it, and a
 * task about them would not find them. */
function Uncommitted({ names, count, midway }: { names: string[]; count: number; midway: boolean }) {
  const more = count - names.length;
  const it = count === 1 ? "it" : "them";
  return (
    <span className="block" data-testid="workspace-uncommitted">
      {count === 1 ? "1 uncommitted change" : `${count} uncommitted changes`} in your checkout ({names.join(", ")}
      {more > 0 ? ` and ${more} more` : ""}) {count === 1 ? "is" : "are"} not in the task's worktree: it starts from the {midway ? "current" : "last"} commit.
      {/* In the middle of a rebase or bisect, "commit it first" is not the advice. */}
      {midway ? "" : ` Commit ${it} first if the task needs ${it}.`}
    </span>
  );
}
