import { fireEvent, render, screen } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { mockIPC } from "@tauri-apps/api/mocks";
import { describe, expect, it, vi } from "vitest";
import { MAX_TASK_CHARS, NewTask, recentWorkspaces } from "../screens/NewTask";

function pickerReturns(path: string | null) {
  mockIPC((cmd) => {
    if (cmd === "plugin:dialog|open") return path;
  });
}

const UNDECIDED = "“write a.txt” waits for your review in /plain, its changes not decided yet.";

/** A plain folder whose first start (`whenBusy: ask`) is refused with `code`; any answer after it
 * starts ses_2. Returns the `whenBusy` of each start asked for; `extra` answers the rest. */
function refusedUntilAnswered(code: string, message: string, extra: (cmd: string) => unknown = () => undefined): string[] {
  const calls: string[] = [];
  mockIPC((cmd, args) => {
    if (cmd === "plugin:dialog|open") return "/plain";
    if (cmd === "start_session") {
      const when = (args as { whenBusy: string }).whenBusy;
      calls.push(when);
      if (when === "ask") throw { code, message };
      return "ses_2";
    }
    return extra(cmd);
  });
  return calls;
}

describe("New task", () => {
  it("enables Run only once there is a provider, a task and a folder", async () => {
    pickerReturns("/home/me/photos");
    render(<NewTask providerReady onOpenSettings={() => {}} onStarted={() => {}} />);
    const user = userEvent.setup();
    const run = screen.getByTestId("run");
    expect(run, "an empty task has nothing to run").toBeDisabled();
    await user.type(screen.getByTestId("task-input"), "rename the photos by date");
    expect(run, "a task with no workspace has nowhere to work").toBeDisabled();
    await user.click(screen.getByTestId("pick-workspace"));
    await vi.waitFor(() => expect(screen.getByTestId("workspace-path")).toHaveValue("/home/me/photos"));
    expect(run).toBeEnabled();
  });

  it("keeps the old folder when the person cancels the picker", async () => {
    pickerReturns(null);
    render(<NewTask providerReady onOpenSettings={() => {}} onStarted={() => {}} />);
    await userEvent.setup().click(screen.getByTestId("pick-workspace"));
    expect(screen.getByTestId("workspace-path")).toHaveValue("");
  });

  it("whitespace alone is not a task", async () => {
    render(<NewTask providerReady onOpenSettings={() => {}} onStarted={() => {}} />);
    await userEvent.setup().type(screen.getByTestId("task-input"), "   ");
    expect(screen.getByText("Describe the task first")).toBeInTheDocument();
  });

  it("refuses a huge task with a clear message and keeps the text", () => {
    render(<NewTask providerReady onOpenSettings={() => {}} onStarted={() => {}} />);
    const huge = "x".repeat(MAX_TASK_CHARS + 1);
    fireEvent.change(screen.getByTestId("task-input"), { target: { value: huge } });
    expect(screen.getByTestId("task-too-long")).toHaveTextContent(
      "This task is 100,001 characters; a task here holds at most 100,000. Shorten the task: put a long log or spec in a file in the folder and name it, or run it from a terminal with finishline run --task-file FILE (up to 1 MB).",
    );
    expect((screen.getByTestId("task-input") as HTMLTextAreaElement).value.length, "nothing the person typed is lost").toBe(MAX_TASK_CHARS + 1);
    expect(screen.getByTestId("run")).toBeDisabled();
  });

  it("Ctrl+Enter runs the task and opens its session, once", async () => {
    let started: unknown;
    let starts = 0;
    mockIPC((cmd, args) => {
      if (cmd === "plugin:dialog|open") return "/w";
      if (cmd === "start_session") {
        started = args;
        starts += 1;
        return "ses_1";
      }
    });
    const onStarted = vi.fn();
    render(<NewTask providerReady onOpenSettings={() => {}} onStarted={onStarted} />);
    const user = userEvent.setup();
    await user.click(screen.getByTestId("pick-workspace"));
    await vi.waitFor(() => expect(screen.getByTestId("workspace-path")).toHaveValue("/w"));
    await user.type(screen.getByTestId("task-input"), "hello");
    await user.keyboard("{Control>}{Enter}{/Control}");
    await vi.waitFor(() => expect(onStarted).toHaveBeenCalledWith("ses_1"));
    expect(started).toEqual({ task: "hello", workspace: "/w", model: null, plan: "auto", agent: null, isolation: null, base: null, whenBusy: "ask" });
    expect(starts, "the form's key and the window's are one").toBe(1);
  });

  it("Ctrl+Enter runs also after a click on blank space, where the focus is on the page around the form", async () => {
    sessionStorage.clear();
    let starts = 0;
    mockIPC((cmd) => {
      if (cmd === "plugin:dialog|open") return "/w";
      if (cmd === "start_session") {
        starts += 1;
        return "ses_1";
      }
    });
    const onStarted = vi.fn();
    render(
      <main className="content" tabIndex={-1}>
        <NewTask providerReady onOpenSettings={() => {}} onStarted={onStarted} />
      </main>,
    );
    const user = userEvent.setup();
    await user.click(screen.getByTestId("pick-workspace"));
    await vi.waitFor(() => expect(screen.getByTestId("workspace-path")).toHaveValue("/w"));
    await user.type(screen.getByTestId("task-input"), "hello");
    (document.querySelector("main.content") as HTMLElement).focus();
    await user.keyboard("{Control>}{Enter}{/Control}");
    await vi.waitFor(() => expect(onStarted).toHaveBeenCalledWith("ses_1"));
    expect(starts).toBe(1);
    sessionStorage.clear();
  });

  it("with a server in Settings but no model there, the model typed here runs the task", async () => {
    let started: { model?: string | null } = {};
    mockIPC((cmd, args) => {
      if (cmd === "plugin:dialog|open") return "/w";
      if (cmd === "start_session") {
        started = args as { model?: string | null };
        return "ses_1";
      }
    });
    const onStarted = vi.fn();
    render(<NewTask providerReady={false} modelMissing onOpenSettings={() => {}} onStarted={onStarted} />);
    const user = userEvent.setup();
    await user.click(screen.getByTestId("pick-workspace"));
    await vi.waitFor(() => expect(screen.getByTestId("workspace-path")).toHaveValue("/w"));
    await user.type(screen.getByTestId("task-input"), "hello");
    expect(screen.getByTestId("run"), "no model anywhere yet").toBeDisabled();
    await user.type(screen.getByTestId("task-model"), "qwen3");
    expect(screen.getByTestId("run")).toBeEnabled();
    await user.click(screen.getByTestId("run"));
    await vi.waitFor(() => expect(onStarted).toHaveBeenCalledWith("ses_1"));
    expect(started.model).toBe("qwen3");
  });

  it("in a git repository it says the task gets its own worktree, and the branch it starts from can be picked", async () => {
    let started: { base?: string | null } = {};
    mockIPC((cmd, args) => {
      if (cmd === "plugin:dialog|open") return "/repo";
      if (cmd === "workspace_info") return { worktrees: true, repository: "/repo", branch: "main", branches: ["main", "release"], unborn_repository: true, busy: [] };
      if (cmd === "start_session") {
        started = args as { base?: string | null };
        return "ses_1";
      }
    });
    render(<NewTask providerReady onOpenSettings={() => {}} onStarted={() => {}} />);
    const user = userEvent.setup();
    await user.click(screen.getByTestId("pick-workspace"));
    await vi.waitFor(() => expect(screen.getByTestId("workspace-isolation")).toHaveTextContent("its own worktree"));
    expect(screen.getByTestId("workspace-isolation")).toHaveTextContent("Your checkout stays as it is");
    await user.selectOptions(screen.getByTestId("base-branch"), "release");
    await user.type(screen.getByTestId("task-input"), "fix it");
    await user.click(screen.getByTestId("run"));
    await vi.waitFor(() => expect(started.base).toBe("release"));
    expect(screen.queryByTestId("workspace-uncommitted"), "a clean checkout: nothing to say").toBeNull();
  });

  it("says the task will not see the checkout's uncommitted edits, naming the first few, once git has looked (the rest of the line does not wait)", async () => {
    let answer: ((v: unknown) => void) | null = null;
    mockIPC((cmd) => {
      if (cmd === "plugin:dialog|open") return "/repo";
      if (cmd === "workspace_info") return { worktrees: true, repository: "/repo", branch: "main", branches: ["main"], unborn_repository: true, busy: [] };
      // A huge checkout's status takes a while.
      if (cmd === "workspace_uncommitted") return new Promise((r) => (answer = r));
    });
    render(<NewTask providerReady onOpenSettings={() => {}} onStarted={() => {}} />);
    await userEvent.setup().click(screen.getByTestId("pick-workspace"));
    expect(await screen.findByTestId("workspace-isolation")).toHaveTextContent("approving lands the task on main");
    await vi.waitFor(() => expect(answer, "the checkout is being looked at").not.toBeNull());
    expect(screen.queryByTestId("workspace-uncommitted")).toBeNull();
    answer!({ names: ["app.py", "notes/", "a", "b", "c"], count: 7 });
    const said = await screen.findByTestId("workspace-uncommitted");
    expect(said).toHaveTextContent("7 uncommitted changes in your checkout (app.py, notes/, a, b, c and 2 more) are not in the task's worktree: it starts from the last commit. Commit them first if the task needs them.");
  });

  it("on no branch (a rebase under way) it does not promise that approving lands the task: its branch is kept", async () => {
    mockIPC((cmd) => {
      if (cmd === "plugin:dialog|open") return "/repo";
      if (cmd === "workspace_info") return { worktrees: true, repository: "/repo", branch: null, under_way: "a rebase of main", rebasing: "main", branches: ["main", "release"], unborn_repository: true, busy: [] };
      if (cmd === "workspace_uncommitted") return { names: ["story.txt"], count: 1 };
    });
    render(<NewTask providerReady onOpenSettings={() => {}} onStarted={() => {}} />);
    const user = userEvent.setup();
    await user.click(screen.getByTestId("pick-workspace"));
    const line = await screen.findByTestId("workspace-isolation");
    expect(line).toHaveTextContent("Your checkout is on no branch (in the middle of a rebase of main): approving keeps the task's branch for you to merge.");
    expect(line).not.toHaveTextContent("approving lands the task there");
    // The conflicted file of the rebase is no change to commit first.
    expect(await screen.findByTestId("workspace-uncommitted")).toHaveTextContent("1 uncommitted change in your checkout (story.txt) is not in the task's worktree: it starts from the current commit.");
    expect(screen.getByTestId("workspace-uncommitted")).not.toHaveTextContent("Commit it first");
    // The branch being rebased is no place to land until the rebase is over: shown, not offered.
    const rebased = screen.getByRole("option", { name: "main (being rebased)" });
    expect(rebased).toBeDisabled();
    // Started from a branch, it lands there as usual.
    await user.selectOptions(screen.getByTestId("base-branch"), "release");
    expect(line).toHaveTextContent("Your checkout stays as it is; approving lands the task on release.");
  });

  it("holds the line where the task will work from the moment a folder is chosen, so Run does not move when it arrives", async () => {
    let answer: ((v: unknown) => void) | null = null;
    mockIPC((cmd) => {
      if (cmd === "plugin:dialog|open") return "/plain";
      if (cmd === "workspace_info") return new Promise((r) => (answer = r));
    });
    render(<NewTask providerReady onOpenSettings={() => {}} onStarted={() => {}} />);
    const user = userEvent.setup();
    await user.click(screen.getByTestId("pick-workspace"));
    // The picker answers asynchronously; the folder's answer is held back until `answer` below.
    expect(await screen.findByTestId("workspace-checking"), "the line is there before the folder has been looked at").toHaveClass("where-it-works");
    await vi.waitFor(() => expect(answer, "the folder is being looked at").not.toBeNull());
    answer!({ worktrees: false, repository: null, branch: null, branches: [], unborn_repository: false, busy: [] });
    await vi.waitFor(() => expect(screen.getByTestId("workspace-isolation")).toHaveTextContent("the folder itself"));
    expect(screen.queryByTestId("workspace-checking"), "the answer takes the held line's place").toBeNull();
  });

  it("with Attempts ticked, Run waits for the folder to be looked at, and a folder that cannot take attempts says so: never one run in their place", async () => {
    sessionStorage.clear();
    const started: string[] = [];
    let folder = "/repo";
    let answer: ((v: unknown) => void) | null = null;
    mockIPC((cmd, args) => {
      if (cmd === "plugin:dialog|open") return folder;
      if (cmd === "workspace_info") {
        if ((args as { folder: string }).folder === "/repo") return { worktrees: true, repository: "/repo", branch: "main", branches: ["main"], unborn_repository: false, busy: [] };
        return new Promise((r) => (answer = r));
      }
      if (cmd === "workspace_uncommitted") return [];
      if (cmd === "start_session" || cmd === "start_attempts") started.push(cmd);
      return null;
    });
    render(<NewTask providerReady defaultModel="m" onOpenSettings={() => {}} onStarted={() => {}} />);
    const user = userEvent.setup();
    await user.type(screen.getByTestId("task-input"), "write greet.py");
    await user.click(screen.getByTestId("pick-workspace"));
    await vi.waitFor(() => expect(screen.getByTestId("attempts-toggle")).toBeEnabled());
    await user.click(screen.getByTestId("attempts-toggle"));
    await user.clear(screen.getByTestId("attempts-builtin"));
    expect(screen.getByTestId("attempts-builtin"), "emptied, it stays empty to type into (none from this agent), not 0 to type after").toHaveValue(null);
    expect(screen.getByTestId("attempts-builtin")).toHaveAttribute("placeholder", "0");
    await user.type(screen.getByTestId("attempts-builtin"), "2");
    expect(screen.getByTestId("attempts-builtin")).toHaveValue(2);
    folder = "/plain";
    await user.click(screen.getByTestId("pick-workspace"));
    await vi.waitFor(() => expect(answer, "the new folder is being looked at").not.toBeNull());
    expect(screen.getByTestId("run"), "the attempts wait for the folder's answer").toBeDisabled();
    expect(screen.getByTestId("run")).toHaveAttribute("title", "Looking at the folder…");
    fireEvent.keyDown(screen.getByTestId("task-input"), { key: "Enter", ctrlKey: true });
    answer!({ worktrees: false, repository: null, branch: null, branches: [], unborn_repository: false, busy: [] });
    await vi.waitFor(() => expect(screen.getByTestId("run")).toHaveAttribute("title", expect.stringMatching(/attempts need a folder in a git repository/i)));
    expect(screen.getByTestId("run")).toBeDisabled();
    expect(started, "nothing started in their place").toEqual([]);
    await user.click(screen.getByTestId("attempts-toggle"));
    expect(screen.getByTestId("attempts-toggle"), "ticked, it can be unticked there").not.toBeChecked();
    await user.click(screen.getByTestId("run"));
    await vi.waitFor(() => expect(started).toEqual(["start_session"]));
    sessionStorage.clear();
  });

  it("a plain folder offers to become a git repository so tasks can run side by side", async () => {
    let made = "";
    let repo = false;
    mockIPC((cmd, args) => {
      if (cmd === "plugin:dialog|open") return "/plain";
      if (cmd === "workspace_info")
        return repo
          ? { worktrees: true, repository: "/plain", branch: "main", branches: ["main"], unborn_repository: true, busy: [] }
          : { worktrees: false, repository: null, branch: null, branches: [], unborn_repository: false, busy: [] };
      if (cmd === "make_repository") {
        made = (args as { folder: string }).folder;
        repo = true;
      }
    });
    render(<NewTask providerReady onOpenSettings={() => {}} onStarted={() => {}} />);
    const user = userEvent.setup();
    await user.click(screen.getByTestId("pick-workspace"));
    await vi.waitFor(() => expect(screen.getByTestId("workspace-isolation")).toHaveTextContent("the folder itself"));
    await user.click(screen.getByTestId("make-repository"));
    await vi.waitFor(() => expect(screen.getByTestId("workspace-isolation")).toHaveTextContent("its own worktree"));
    expect(made).toBe("/plain");
  });

  it("attempts are offered in a repository when Settings run single tasks in the folder itself: each attempt still gets its own worktree", async () => {
    sessionStorage.clear();
    const started: string[] = [];
    mockIPC((cmd) => {
      if (cmd === "plugin:dialog|open") return "/repo";
      if (cmd === "workspace_info") return { worktrees: false, repository: "/repo", branch: "main", branches: ["main", "release"], unborn_repository: true, busy: [] };
      if (cmd === "workspace_uncommitted") return { names: ["notes.txt"], count: 1 };
      if (cmd === "start_session" || cmd === "start_attempts") {
        started.push(cmd);
        return cmd === "start_attempts" ? ["grp_1", ["s1", "s2"]] : "s1";
      }
    });
    render(<NewTask providerReady defaultModel="m" onOpenSettings={() => {}} onStarted={() => {}} onStartedGroup={() => {}} />);
    const user = userEvent.setup();
    await user.type(screen.getByTestId("task-input"), "write greet.py");
    await user.click(screen.getByTestId("pick-workspace"));
    await vi.waitFor(() => expect(screen.getByTestId("attempts-toggle")).toBeEnabled());
    expect(screen.getByTestId("workspace-isolation"), "a single task works in place, as Settings say").toHaveTextContent("Works in the folder itself");
    await user.click(screen.getByTestId("attempts-toggle"));
    const line = screen.getByTestId("workspace-isolation");
    expect(line, "the attempts each work in a worktree, and the line says so").toHaveTextContent("Each attempt works in its own worktree on a new branch from");
    expect(screen.getByTestId("base-branch"), "from a branch the person chooses").toBeInTheDocument();
    expect(screen.getByTestId("workspace-uncommitted"), "edits not in the last commit are not in any attempt").toHaveTextContent("notes.txt");
    await user.clear(screen.getByTestId("attempts-builtin"));
    await user.type(screen.getByTestId("attempts-builtin"), "2");
    await user.click(screen.getByTestId("run"));
    await vi.waitFor(() => expect(started).toEqual(["start_attempts"]));
    sessionStorage.clear();
  });

  it("attempts with a model of this task's are judged by it, as a single task is, not by Settings' model", async () => {
    sessionStorage.clear();
    let sent: { agents: string[]; model?: string } | null = null;
    mockIPC((cmd, args) => {
      if (cmd === "plugin:dialog|open") return "/repo";
      if (cmd === "workspace_info") return { worktrees: true, repository: "/repo", branch: "main", branches: ["main"], unborn_repository: false, busy: [] };
      if (cmd === "workspace_uncommitted") return { names: [], count: 0 };
      if (cmd === "start_attempts") {
        sent = args as { agents: string[]; model?: string };
        return ["grp_1", ["s1", "s2"]];
      }
    });
    render(<NewTask providerReady defaultModel="gpt-bogus-9" onOpenSettings={() => {}} onStarted={() => {}} onStartedGroup={() => {}} />);
    const user = userEvent.setup();
    await user.type(screen.getByTestId("task-input"), "write greet.py");
    await user.click(screen.getByTestId("pick-workspace"));
    await vi.waitFor(() => expect(screen.getByTestId("attempts-toggle")).toBeEnabled());
    await user.click(screen.getByTestId("attempts-toggle"));
    await user.clear(screen.getByTestId("task-model"));
    await user.type(screen.getByTestId("task-model"), "fake-model");
    await user.clear(screen.getByTestId("attempts-builtin"));
    await user.type(screen.getByTestId("attempts-builtin"), "2");
    await user.click(screen.getByTestId("run"));
    await vi.waitFor(() => expect(sent).not.toBeNull());
    expect(sent!.agents).toEqual(["builtin:fake-model", "builtin:fake-model"]);
    expect(sent!.model, "the model the evaluator judges and compares them with").toBe("fake-model");
    sessionStorage.clear();
  });

  it("making the folder a repository shows that it is under way, is done once however often clicked, and holds Run meanwhile", async () => {
    const made: string[] = [];
    let done: (() => void) | null = null;
    mockIPC((cmd, args) => {
      if (cmd === "plugin:dialog|open") return "/plain";
      if (cmd === "workspace_info") return { worktrees: false, repository: null, branch: null, branches: [], unborn_repository: false, busy: [] };
      if (cmd === "make_repository") {
        made.push((args as { folder: string }).folder);
        return new Promise<void>((r) => (done = r));
      }
    });
    render(<NewTask providerReady onOpenSettings={() => {}} onStarted={() => {}} />);
    const user = userEvent.setup();
    await user.type(screen.getByTestId("task-input"), "tidy up");
    await user.click(screen.getByTestId("pick-workspace"));
    await user.click(await screen.findByTestId("make-repository"));
    expect(screen.getByTestId("make-repository")).toHaveTextContent("Making the first commit…");
    expect(screen.getByTestId("make-repository")).toBeDisabled();
    fireEvent.click(screen.getByTestId("make-repository"));
    expect(made).toEqual(["/plain"]);
    expect(screen.getByTestId("run"), "the task would start in the folder itself").toBeDisabled();
    done!();
    await vi.waitFor(() => expect(screen.getByTestId("run")).toBeEnabled());
  });

  it("a busy plain folder asks first: run anyway, queue after the other task, or cancel", async () => {
    const calls = refusedUntilAnswered("workspace_busy", "“write slow.txt” is working in /plain right now.");
    const onStarted = vi.fn();
    render(<NewTask providerReady onOpenSettings={() => {}} onStarted={onStarted} />);
    const user = userEvent.setup();
    await user.click(screen.getByTestId("pick-workspace"));
    await user.type(screen.getByTestId("task-input"), "write fast.txt");
    await user.click(screen.getByTestId("run"));
    await vi.waitFor(() => expect(screen.getByTestId("workspace-busy-dialog")).toHaveTextContent("write slow.txt"));
    expect(onStarted).not.toHaveBeenCalled();
    await vi.waitFor(() => expect(screen.getByTestId("busy-cancel")).toHaveFocus());
    await user.keyboard("{Control>}{Enter}{/Control}");
    expect(calls, "Ctrl+Enter in the question does not ask it again behind it").toEqual(["ask"]);
    await user.click(screen.getByTestId("busy-queue"));
    await vi.waitFor(() => expect(onStarted).toHaveBeenCalledWith("ses_2"));
    expect(calls).toEqual(["ask", "queue"]);
    expect(screen.getByTestId("task-input")).toHaveValue("");
  });

  it("a plain folder where another task's changes wait for review asks first, with no queue to offer", async () => {
    const calls = refusedUntilAnswered("workspace_undecided", UNDECIDED);
    const onStarted = vi.fn();
    render(<NewTask providerReady onOpenSettings={() => {}} onStarted={onStarted} />);
    const user = userEvent.setup();
    await user.click(screen.getByTestId("pick-workspace"));
    await user.type(screen.getByTestId("task-input"), "write b.txt");
    await user.click(screen.getByTestId("run"));
    const ask = await screen.findByTestId("workspace-busy-dialog");
    expect(ask).toHaveTextContent("Another task's changes wait for your review here");
    expect(ask).toHaveTextContent("write a.txt");
    expect(screen.queryByTestId("busy-queue"), "nothing runs there to wait for").toBeNull();
    expect(onStarted).not.toHaveBeenCalled();
    await user.click(screen.getByTestId("busy-run"));
    await vi.waitFor(() => expect(onStarted).toHaveBeenCalledWith("ses_2"));
    expect(calls).toEqual(["ask", "run"]);
  });

  it("the question about a folder's undecided work opens that task to review first, the typed task kept unsent", async () => {
    const calls: string[] = [];
    const plain = { worktrees: false, repository: null, branch: null, branches: [], unborn_repository: false, busy: [], waiting: [{ session_id: "ses_1", title: "write a.txt" }] };
    mockIPC((cmd, args) => {
      if (cmd === "plugin:dialog|open") return "/plain";
      if (cmd === "workspace_info") return plain;
      if (cmd === "start_session") {
        calls.push((args as { whenBusy: string }).whenBusy);
        throw { code: "workspace_undecided", message: "“write a.txt” waits for your review in /plain, its changes not decided yet." };
      }
    });
    const onStarted = vi.fn();
    const onOpenSession = vi.fn();
    render(<NewTask providerReady onOpenSettings={() => {}} onStarted={onStarted} onOpenSession={onOpenSession} />);
    const user = userEvent.setup();
    await user.click(screen.getByTestId("pick-workspace"));
    expect(await screen.findByTestId("workspace-waiting"), "said at the folder, before Run").toHaveTextContent("“write a.txt” waits for your review here.");
    await user.type(screen.getByTestId("task-input"), "write b.txt");
    await user.click(screen.getByTestId("run"));
    expect(await screen.findByTestId("busy-open-hint"), "said where all can read it, not in a tooltip").toHaveTextContent("Review it first goes to “write a.txt”; the words of this task wait here, unsent.");
    await user.click(await screen.findByTestId("busy-open"));
    expect(onOpenSession).toHaveBeenCalledWith("ses_1");
    expect(onStarted).not.toHaveBeenCalled();
    expect(calls, "nothing started").toEqual(["ask"]);
    expect(screen.getByTestId("task-input")).toHaveValue("write b.txt");
  });

  it("Run anyway works at once, while the question's task is still being looked up again", async () => {
    let looks = 0;
    const plain = { worktrees: false, repository: null, branch: null, branches: [], unborn_repository: false, busy: [], waiting: [{ session_id: "ses_1", title: "write a.txt" }] };
    // The folder's line is answered; the look after the question never is.
    const calls = refusedUntilAnswered("workspace_undecided", UNDECIDED, (cmd) => (cmd === "workspace_info" ? (looks++ === 0 ? plain : new Promise(() => {})) : undefined));
    const onStarted = vi.fn();
    render(<NewTask providerReady onOpenSettings={() => {}} onStarted={onStarted} onOpenSession={() => {}} />);
    const user = userEvent.setup();
    await user.click(screen.getByTestId("pick-workspace"));
    await screen.findByTestId("workspace-waiting");
    await user.type(screen.getByTestId("task-input"), "write b.txt");
    await user.click(screen.getByTestId("run"));
    await screen.findByTestId("workspace-busy-dialog");
    expect(screen.getByTestId("busy-open"), "the way to the waiting task is there with the question").toHaveTextContent("Review it first");
    await user.click(screen.getByTestId("busy-run"));
    await vi.waitFor(() => expect(onStarted).toHaveBeenCalledWith("ses_2"));
    expect(calls).toEqual(["ask", "run"]);
  });

  it("the question about a busy folder opens the task working there", async () => {
    mockIPC((cmd) => {
      if (cmd === "plugin:dialog|open") return "/plain";
      if (cmd === "workspace_info") return { worktrees: false, repository: null, branch: null, branches: [], unborn_repository: false, busy: [{ session_id: "ses_9", title: "write slow.txt" }], waiting: [] };
      if (cmd === "start_session") throw { code: "workspace_busy", message: "“write slow.txt” is working in /plain right now." };
    });
    const onOpenSession = vi.fn();
    render(<NewTask providerReady onOpenSettings={() => {}} onStarted={() => {}} onOpenSession={onOpenSession} />);
    const user = userEvent.setup();
    await user.click(screen.getByTestId("pick-workspace"));
    await user.type(screen.getByTestId("task-input"), "write fast.txt");
    await user.click(screen.getByTestId("run"));
    const open = await screen.findByTestId("busy-open");
    expect(open).toHaveTextContent("Open it");
    expect(screen.queryByTestId("workspace-waiting"), "a task at work there is said, not one waiting").toBeNull();
    await user.click(open);
    expect(onOpenSession).toHaveBeenCalledWith("ses_9");
  });

  it("an installed ACP agent can do the task instead of the built-in agent", async () => {
    let started: { agent?: string | null } = {};
    mockIPC((cmd, args) => {
      if (cmd === "plugin:dialog|open") return "/w";
      if (cmd === "agent_presets")
        return [
          { name: "opencode", label: "OpenCode", command: "opencode", args: ["acp"], install: "npm i -g opencode-ai", found: "/usr/bin/opencode" },
          { name: "gemini", label: "Gemini CLI", command: "gemini", args: [], install: "npm i -g @google/gemini-cli", found: null },
        ];
      if (cmd === "start_session") {
        started = args as { agent?: string | null };
        return "ses_3";
      }
    });
    render(<NewTask providerReady onOpenSettings={() => {}} onStarted={() => {}} />);
    const user = userEvent.setup();
    const picker = await screen.findByTestId("task-agent");
    expect([...(picker as HTMLSelectElement).options].map((o) => o.value), "only installed agents are offered").toEqual(["builtin", "opencode"]);
    expect(screen.getByTestId("task-model"), "the built-in agent's model field is there by default").toBeInTheDocument();
    await user.selectOptions(picker, "opencode");
    expect(screen.queryByTestId("task-model"), "OpenCode brings its own model").toBeNull();
    expect(screen.getByTestId("plan-choice"), "plan mode works with an external agent too: each step is one of its turns").toBeInTheDocument();
    await user.click(screen.getByTestId("pick-workspace"));
    await vi.waitFor(() => expect(screen.getByTestId("workspace-path")).toHaveValue("/w"));
    await user.type(screen.getByTestId("task-input"), "write the report");
    await user.click(screen.getByTestId("run"));
    await vi.waitFor(() => expect(started.agent, "the task starts with the picked agent").toBe("opencode"));
  });

  it("starts with the plan choice from Settings and sends the one the person picks", async () => {
    let started: { plan?: string } = {};
    mockIPC((cmd, args) => {
      if (cmd === "plugin:dialog|open") return "/w";
      if (cmd === "start_session") {
        started = args as { plan?: string };
        return "ses_2";
      }
    });
    render(<NewTask providerReady defaultPlan="off" onOpenSettings={() => {}} onStarted={() => {}} />);
    const user = userEvent.setup();
    expect(screen.getByTestId("plan-off"), "the Settings default is preselected").toBeChecked();
    expect(screen.getByTestId("plan-choice")).toHaveTextContent("One run, judged once at the end.");
    await user.click(screen.getByTestId("plan-on"));
    expect(screen.getByTestId("plan-choice"), "each choice says what it costs and does").toHaveTextContent("Always split the task into checked steps");
    await user.click(screen.getByTestId("pick-workspace"));
    await vi.waitFor(() => expect(screen.getByTestId("workspace-path")).toHaveValue("/w"));
    await user.type(screen.getByTestId("task-input"), "write the report");
    await user.click(screen.getByTestId("run"));
    await vi.waitFor(() => expect(started.plan, "the task runs with the picked plan mode").toBe("on"));
  });

  it("a folder that is not there is said at the field, before Run, and Run waits for another", async () => {
    mockIPC((cmd) => {
      if (cmd === "survey_workspace") throw { code: "invalid_input", message: "there is no folder at /gone: choose another, or check the spelling" };
    });
    render(<NewTask providerReady onOpenSettings={() => {}} onStarted={() => {}} />);
    fireEvent.change(screen.getByTestId("task-input"), { target: { value: "write a.txt" } });
    fireEvent.change(screen.getByTestId("workspace-path"), { target: { value: "/gone" } });
    expect(await screen.findByTestId("workspace-problem", {}, { timeout: 2000 })).toHaveTextContent("There is no folder at /gone: choose another, or check the spelling.");
    // Said once, at the field: Run does not start a task that would only fail with the same words.
    expect(screen.getByTestId("run")).toBeDisabled();
    expect(screen.getByTestId("run")).toHaveAttribute("title", "Choose a folder that can be used first");
    fireEvent.change(screen.getByTestId("workspace-path"), { target: { value: "/gone/again" } });
    expect(screen.queryByTestId("workspace-problem"), "a new path is looked at afresh").toBeNull();
  });

  it("a file chosen as the workspace is said at the field, with no word of where the task would work, and Run waits", async () => {
    mockIPC((cmd) => {
      if (cmd === "survey_workspace") throw { code: "invalid_input", message: "/r/README.md is a file, not a folder: choose the folder it is in, /r" };
      if (cmd === "workspace_info") return { repository: false, worktrees: false, branch: null, branches: [], busy: [], rebasing: null, under_way: null, unborn_repository: false };
    });
    render(<NewTask providerReady onOpenSettings={() => {}} onStarted={() => {}} />);
    fireEvent.change(screen.getByTestId("task-input"), { target: { value: "write a.txt" } });
    fireEvent.change(screen.getByTestId("workspace-path"), { target: { value: "/r/README.md" } });
    expect(await screen.findByTestId("workspace-problem", {}, { timeout: 2000 })).toHaveTextContent("/r/README.md is a file, not a folder: choose the folder it is in, /r.");
    await new Promise((r) => setTimeout(r, 50));
    expect(screen.queryByTestId("workspace-isolation"), "no 'works in the folder itself' for a file").toBeNull();
    expect(screen.getByTestId("run")).toBeDisabled();
  });

  it("a start's error goes once the workspace is changed: it was about the folder before", async () => {
    mockIPC((cmd) => {
      if (cmd === "survey_workspace") return { files: 3, capped: false, too_broad: false };
      if (cmd === "start_session") throw { code: "invalid_input", message: "the workspace /a cannot be used: odd" };
    });
    render(<NewTask providerReady onOpenSettings={() => {}} onStarted={() => {}} />);
    fireEvent.change(screen.getByTestId("task-input"), { target: { value: "write a.txt" } });
    fireEvent.change(screen.getByTestId("workspace-path"), { target: { value: "/a" } });
    await vi.waitFor(() => expect(screen.getByTestId("run")).toBeEnabled());
    fireEvent.click(screen.getByTestId("run"));
    expect(await screen.findByRole("alert")).toHaveTextContent("The workspace /a cannot be used: odd");
    fireEvent.change(screen.getByTestId("workspace-path"), { target: { value: "/b" } });
    await vi.waitFor(() => expect(screen.queryByText("The workspace /a cannot be used: odd")).toBeNull());
    expect(screen.getByTestId("task-input"), "the task stays").toHaveValue("write a.txt");
  });

  it("a refused start shows the engine's message and keeps the task", async () => {
    mockIPC((cmd) => {
      if (cmd === "plugin:dialog|open") return "/gone";
      if (cmd === "start_session") throw { code: "invalid_input", message: "the workspace /gone cannot be used: No such file or directory" };
    });
    render(<NewTask providerReady onOpenSettings={() => {}} onStarted={() => {}} />);
    const user = userEvent.setup();
    await user.click(screen.getByTestId("pick-workspace"));
    await user.type(screen.getByTestId("task-input"), "tidy up");
    await user.click(screen.getByTestId("run"));
    expect(await screen.findByRole("alert")).toHaveTextContent("cannot be used");
    expect(screen.getByRole("alert").closest(".new-task-actions"), "beside Run, which stays in view: not above it, out of sight below a long form").toContainElement(screen.getByTestId("run"));
    expect(screen.getByTestId("task-input")).toHaveValue("tidy up");
  });

  it("warns before a run in a home folder, with how many files it holds", async () => {
    mockIPC((cmd, args) => {
      if (cmd === "plugin:dialog|open") return "/home/me";
      if (cmd === "survey_workspace") return (args as { path: string }).path === "/home/me" ? { files: 200000, capped: true, too_broad: true } : { files: 12, capped: false, too_broad: false };
    });
    render(<NewTask providerReady onOpenSettings={() => {}} onStarted={() => {}} />);
    const user = userEvent.setup();
    await user.click(screen.getByTestId("pick-workspace"));
    expect(await screen.findByTestId("workspace-warning", {}, { timeout: 2000 })).toHaveTextContent("whole home folder");
    expect(screen.getByTestId("workspace-warning")).toHaveTextContent("over 200,000 files");
    fireEvent.change(screen.getByTestId("workspace-path"), { target: { value: "/home/me/project" } });
    await vi.waitFor(() => expect(screen.queryByTestId("workspace-warning")).toBeNull());
  });

  it("asks before a run in a home folder, even when Run is pressed before the warning came, and runs there only at the person's word", async () => {
    const started: string[] = [];
    let surveys = 0;
    mockIPC(async (cmd, args) => {
      if (cmd === "survey_workspace") {
        surveys += 1;
        // The first look is slow: Run is pressed before its warning shows.
        if (surveys === 1) await new Promise((r) => setTimeout(r, 600));
        return { files: 200000, capped: true, too_broad: true };
      }
      if (cmd === "start_session") {
        started.push((args as { workspace: string }).workspace);
        return "ses_1";
      }
    });
    render(<NewTask providerReady onOpenSettings={() => {}} onStarted={() => {}} />);
    const user = userEvent.setup();
    await user.type(screen.getByTestId("task-input"), "tidy up");
    fireEvent.change(screen.getByTestId("workspace-path"), { target: { value: "/home/me" } });
    await user.click(screen.getByTestId("run"));
    const ask = await screen.findByTestId("broad-folder-dialog", {}, { timeout: 3000 });
    expect(ask).toHaveTextContent("whole home folder");
    expect(ask).toHaveTextContent("over 200,000 files");
    expect(started, "nothing starts before the person answers").toEqual([]);
    await user.click(screen.getByTestId("broad-choose"));
    expect(screen.queryByTestId("broad-folder-dialog")).toBeNull();
    expect(screen.getByTestId("workspace-path"), "back at the folder, to choose another").toHaveFocus();
    expect(started).toEqual([]);
    await user.click(screen.getByTestId("run"));
    await user.click(await screen.findByTestId("broad-run"));
    await vi.waitFor(() => expect(started).toEqual(["/home/me"]));
  });

  it("says when the chosen folder has an AGENTS.md the agent and the evaluator will follow", async () => {
    mockIPC((cmd) => {
      if (cmd === "plugin:dialog|open") return "/home/me/project";
      if (cmd === "survey_workspace") return { files: 12, capped: false, too_broad: false, instructions: "AGENTS.md" };
    });
    render(<NewTask providerReady onOpenSettings={() => {}} onStarted={() => {}} />);
    await userEvent.setup().click(screen.getByTestId("pick-workspace"));
    expect(await screen.findByTestId("workspace-instructions", {}, { timeout: 2000 }), "the person knows the project's rules go along").toHaveTextContent("AGENTS.md goes to the agent and the evaluator");
  });

  it("keeps a half-typed task across a visit to another screen, and forgets it once started", async () => {
    mockIPC((cmd) => {
      if (cmd === "plugin:dialog|open") return "/home/me/notes";
      if (cmd === "start_session") return "ses_1";
      if (cmd === "survey_workspace") return { files: 3, capped: false, too_broad: false };
    });
    const first = render(<NewTask providerReady onOpenSettings={() => {}} onStarted={() => {}} />);
    const user = userEvent.setup();
    await user.type(screen.getByTestId("task-input"), "rename the photos");
    await user.click(screen.getByTestId("pick-workspace"));
    await vi.waitFor(() => expect(screen.getByTestId("workspace-path")).toHaveValue("/home/me/notes"));
    first.unmount();
    const second = render(<NewTask providerReady onOpenSettings={() => {}} onStarted={() => {}} />);
    expect(screen.getByTestId("task-input"), "back from Settings, the words are still there").toHaveValue("rename the photos");
    expect(screen.getByTestId("workspace-path"), "and so is the folder").toHaveValue("/home/me/notes");
    await vi.waitFor(() => expect(screen.getByTestId("run")).toBeEnabled());
    await user.click(screen.getByTestId("run"));
    await vi.waitFor(() => expect(screen.getByTestId("task-input")).toHaveValue(""));
    second.unmount();
    render(<NewTask providerReady onOpenSettings={() => {}} onStarted={() => {}} />);
    expect(screen.getByTestId("task-input"), "a started task is not offered again").toHaveValue("");
  });
});

/** New Task answered as in a git repository (`extra` answers the rest). */
function inARepository(extra: (cmd: string, args: unknown) => unknown) {
  mockIPC((cmd, args) => {
    if (cmd === "plugin:dialog|open") return "/repo";
    if (cmd === "workspace_info") return { worktrees: true, repository: "/repo", branch: "main", branches: ["main"], unborn_repository: false, busy: [] };
    if (cmd === "workspace_uncommitted") return { names: [], count: 0 };
    return extra(cmd, args);
  });
}

const attemptsForm = () => render(<NewTask providerReady defaultModel="m" onOpenSettings={() => {}} onStarted={() => {}} onStartedGroup={() => {}} />);

/** Attempts ticked with `tries` in the box `testid`, then the form left for another screen. */
async function attemptsTicked(testid: string, tries: string) {
  const first = attemptsForm();
  const user = userEvent.setup();
  await user.click(screen.getByTestId("pick-workspace"));
  await vi.waitFor(() => expect(screen.getByTestId("attempts-toggle")).toBeEnabled());
  await user.click(screen.getByTestId("attempts-toggle"));
  const box = await screen.findByTestId(testid);
  await user.clear(box);
  await user.type(box, tries);
  first.unmount();
}

describe("New task's choices across visits", () => {
  it("keeps the agent, model and plan chosen across a visit to another screen until the task is sent, and an agent no longer installed gives way to the default", async () => {
    sessionStorage.clear();
    let presets = [{ name: "opencode", label: "OpenCode", command: "opencode", args: ["acp"], install: "npm i -g opencode-ai", found: "/usr/bin/opencode" as string | null }];
    let started: { model?: string | null; plan?: string | null; agent?: string | null } = {};
    mockIPC((cmd, args) => {
      if (cmd === "plugin:dialog|open") return "/w";
      if (cmd === "agent_presets") return presets;
      if (cmd === "start_session") {
        started = args as typeof started;
        return "ses_4";
      }
    });
    const form = () => render(<NewTask providerReady defaultModel="settings-model" defaultPlan="auto" onOpenSettings={() => {}} onStarted={() => {}} />);
    const first = form();
    const user = userEvent.setup();
    await user.clear(screen.getByTestId("task-model"));
    await user.type(screen.getByTestId("task-model"), "bigger-model");
    await user.click(screen.getByTestId("plan-on"));
    first.unmount();

    const second = form();
    expect(screen.getByTestId("task-model"), "back from Settings, the model typed for this task is still there").toHaveValue("bigger-model");
    expect(screen.getByTestId("plan-on"), "and so is the plan choice").toBeChecked();
    await user.selectOptions(await screen.findByTestId("task-agent"), "opencode");
    second.unmount();

    presets = [{ ...presets[0], found: null }];
    const gone = form();
    await vi.waitFor(() => expect(screen.getByTestId("task-model"), "OpenCode uninstalled: the built-in agent does the task, with the model typed").toHaveValue("bigger-model"));
    expect(screen.queryByTestId("task-agent")).toBeNull();
    gone.unmount();

    presets = [{ ...presets[0], found: "/usr/bin/opencode" }];
    const third = form();
    await vi.waitFor(() => expect(screen.getByTestId("task-agent"), "installed again, the agent picked is still picked").toHaveValue("opencode"));
    await user.type(screen.getByTestId("task-input"), "write the report");
    await user.click(screen.getByTestId("pick-workspace"));
    await vi.waitFor(() => expect(screen.getByTestId("run")).toBeEnabled());
    await user.click(screen.getByTestId("run"));
    await vi.waitFor(() => expect(started, "the task starts with the choices as left").toMatchObject({ agent: "opencode", plan: "on" }));
    third.unmount();

    form();
    await vi.waitFor(() => expect(screen.getByTestId("task-agent"), "sent, the next task starts from Settings' choices").toHaveValue("builtin"));
    expect(screen.getByTestId("task-model")).toHaveValue("settings-model");
    expect(screen.getByTestId("plan-auto")).toBeChecked();
  });

  it("a choice equal to Settings' default is no choice: a default changed later shows", async () => {
    const first = render(<NewTask providerReady defaultPlan="auto" onOpenSettings={() => {}} onStarted={() => {}} />);
    const user = userEvent.setup();
    await user.click(screen.getByTestId("plan-on"));
    await user.click(screen.getByTestId("plan-auto"));
    first.unmount();
    render(<NewTask providerReady defaultPlan="off" onOpenSettings={() => {}} onStarted={() => {}} />);
    expect(screen.getByTestId("plan-off"), "Settings now says Off").toBeChecked();
  });

  it("keeps the tries set for an installed agent across a visit elsewhere (the agents are known a moment after the form)", async () => {
    inARepository((cmd) =>
      cmd === "agent_presets" ? new Promise((r) => setTimeout(() => r([{ name: "codex", label: "Codex", command: "codex-acp", args: [], install: "npm i -g @zed-industries/codex-acp", found: "/usr/bin/codex-acp" }]), 50)) : undefined,
    );
    await attemptsTicked("attempts-codex", "1");
    attemptsForm();
    await vi.waitFor(() => expect(screen.getByTestId("attempts-codex"), "Codex's try is still there").toHaveValue(1));
  });

  it("keeps Attempts ticked, with its tries, across a visit elsewhere; once started, the next task is one run again", async () => {
    sessionStorage.clear();
    let sent: { agents: string[] } | null = null;
    inARepository((cmd, args) => {
      if (cmd !== "start_attempts") return undefined;
      sent = args as { agents: string[] };
      return ["grp_1", ["s1", "s2", "s3"]];
    });
    await attemptsTicked("attempts-builtin", "3");
    const user = userEvent.setup();
    const second = attemptsForm();
    await vi.waitFor(() => expect(screen.getByTestId("attempts-toggle"), "Attempts is still ticked").toBeChecked());
    await vi.waitFor(() => expect(screen.getByTestId("attempts-builtin"), "with the tries set").toHaveValue(3));
    await user.type(screen.getByTestId("task-input"), "write greet.py");
    await vi.waitFor(() => expect(screen.getByTestId("run")).toBeEnabled());
    await user.click(screen.getByTestId("run"));
    await vi.waitFor(() => expect(sent?.agents).toEqual(["builtin", "builtin", "builtin"]));
    second.unmount();

    attemptsForm();
    await vi.waitFor(() => expect(screen.getByTestId("attempts-toggle")).toBeEnabled());
    expect(screen.getByTestId("attempts-toggle"), "the next task is one run unless asked again").not.toBeChecked();
    sessionStorage.clear();
  });
});

describe("recent workspaces", () => {
  it("lists the folders of earlier sessions, most recent first, each once, at most five", async () => {
    const s = (workspace: string, created_ms: number) => ({ workspace, created_ms }) as never;
    expect(recentWorkspaces([s("/a", 1), s("/b", 3), s("/a", 5), s("/c", 2), s("/d", 0), s("/e", 0), s("/f", 0)])).toEqual(["/a", "/b", "/c", "/d", "/e"]);
  });

  it("a recent folder is one click from being the workspace", async () => {
    mockIPC((cmd) => {
      if (cmd === "list_sessions") return [{ id: "s", workspace: "/home/p/projects/shop", created_ms: 2 }];
      if (cmd === "survey_workspace") return { files: 10, capped: false, too_broad: false };
    });
    render(<NewTask providerReady defaultModel="m" onOpenSettings={() => {}} onStarted={() => {}} />);
    await userEvent.setup().click(await screen.findByRole("button", { name: "shop" }));
    expect(screen.getByTestId("workspace-path"), "the folder's full path is filled in").toHaveValue("/home/p/projects/shop");
  });
});
