import { listedState } from "../session/model";
import type { SessionSummary } from "../ipc";
import { cleanup, render, screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { mockIPC } from "@tauri-apps/api/mocks";
import { describe, expect, it, vi } from "vitest";
import { App } from "../App";
import { started } from "../screens/History";
import { view } from "./fixtures";

describe("App shell", () => {
  it("Ctrl+F, from any screen, opens History with its search box ready to type in", async () => {
    mockIPC((cmd) => {
      if (cmd === "get_settings") return view({}, true);
      if (cmd === "list_sessions") return [];
    });
    render(<App />);
    const user = userEvent.setup();
    await screen.findByTestId("new-task-form");
    await user.type(screen.getByTestId("task-input"), "half a task");
    await user.keyboard("{Control>}f{/Control}");
    await waitFor(() => expect(screen.getByTestId("history-search"), "the search box has the keys").toHaveFocus());
    await user.keyboard("pear");
    expect(screen.getByTestId("history-search")).toHaveValue("pear");
  });

  it("back in History from a session opened there, the keys are on that session's row again", async () => {
    const row = (id: string, title: string, ago: number) =>
      ({ id, title, task: title, workspace: "/repo", provider: "openai", model: "m", status: "completed", claim: null, verdict: null, end_reason: "verified_done", decision: "approve", created_at: "", created_ms: Date.now() - ago, duration_ms: 0, tokens: { agent: 0, evaluator: 0, compaction: 0 }, last_seq: 1, plan_steps: 0, plan_done: 0, approvals: 1, attempt: null }) as unknown as SessionSummary;
    mockIPC(
      (cmd) => {
        if (cmd === "get_settings") return view({}, true);
        if (cmd === "list_sessions") return [row("s1", "write a.txt", 1000), row("s2", "write b.txt", 2000), row("s3", "write c.txt", 3000)];
        if (cmd === "get_session_events") return [];
      },
      { shouldMockEvents: true },
    );
    render(<App />);
    const user = userEvent.setup();
    await user.keyboard("{Alt>}2{/Alt}");
    const open = async () => within((await screen.findAllByTestId("history-row")).find((r) => r.getAttribute("data-session") === "s2")!).getByRole("button", { name: "write b.txt" });
    await user.click(await open());
    await screen.findByTestId("session-view");
    await user.keyboard("{Alt>}2{/Alt}");
    await waitFor(async () => expect(await open(), "Tab goes on from the row the person left").toHaveFocus());
    await user.keyboard("{Alt>}1{/Alt}");
    await screen.findByTestId("new-task-form");
    (document.activeElement as HTMLElement | null)?.blur();
    await user.keyboard("{Alt>}2{/Alt}");
    await screen.findAllByTestId("history-row");
    await new Promise((r) => setTimeout(r, 100));
    expect(await open(), "a later visit is not back from that session").not.toHaveFocus();
  });

  it("guides a first-time user to set up a provider and keeps Run disabled", async () => {
    mockIPC((cmd) => {
      if (cmd === "get_settings") return view();
    });
    render(<App />);
    expect(await screen.findByTestId("first-run")).toHaveTextContent(/Ollama/);
    expect(screen.getByTestId("first-run")).toHaveTextContent(/llama\.cpp/);
    expect(screen.getByTestId("run"), "no task can run without a provider").toBeDisabled();
  });

  it("says the model is what is missing when a server is set without one, in New Task and in Settings", async () => {
    mockIPC((cmd) => (cmd === "get_settings" ? view({ base_url: "http://127.0.0.1:8080/v1", model: "" }) : undefined));
    render(<App />);
    expect(await screen.findByTestId("first-run")).toHaveTextContent("Choose a model to get started");
    expect(screen.getByTestId("first-run"), "not the guide to connecting a server it already has").not.toHaveTextContent(/Ollama/);
    await userEvent.setup().click(screen.getByTestId("open-settings"));
    expect(await screen.findByTestId("model-missing")).toHaveTextContent("No model: tasks cannot run until you name one");
    await vi.waitFor(() => expect(screen.getByTestId("provider-model"), "'Choose a model' leads to the Model field, ready to type in").toHaveFocus());
  });

  it("a model typed for the task itself answers 'Choose a model': the guide steps back to a note on Settings", async () => {
    mockIPC((cmd) => (cmd === "get_settings" ? view({ base_url: "http://127.0.0.1:8080/v1", model: "" }) : undefined));
    render(<App />);
    await screen.findByTestId("first-run");
    await userEvent.setup().type(screen.getByTestId("task-model"), "smollm2");
    await waitFor(() => expect(screen.queryByTestId("first-run"), "no longer asking for what was just given").toBeNull());
    expect(screen.getByTestId("model-for-this-task")).toHaveTextContent("This task runs with smollm2. Name a model in Settings to use one for every task.");
    expect(screen.getByTestId("run").getAttribute("title"), "what Run waits for is the task, not a model").toBe("Describe the task first");
  });

  /** `--task "fix the parser" --workspace /no/such/folder`, refused by the engine. */
  function launchWithTaskThatCannotStart(refusal = { code: "workspace_missing", message: "the folder /no/such/folder does not exist" }) {
    mockIPC(
      (cmd) => {
        if (cmd === "get_settings") return view({}, true);
        if (cmd === "startup_action") return { kind: "run_task", task: "fix the parser", workspace: "/no/such/folder" };
        if (cmd === "start_session") throw refusal;
        if (cmd === "list_sessions") return [];
      },
      { shouldMockEvents: true },
    );
    render(<App />);
  }

  it("a task from the command line that cannot start says why, and waits in New Task with its folder to fix and run", async () => {
    sessionStorage.clear();
    launchWithTaskThatCannotStart();
    expect(await screen.findByTestId("startup-failed")).toHaveTextContent(/the task from the command line did not start: the folder \/no\/such\/folder does not exist/i);
    expect(screen.getByTestId("task-input"), "the task is not lost").toHaveValue("fix the parser");
    expect(screen.getByTestId("workspace-path")).toHaveValue("/no/such/folder");
    sessionStorage.clear();
  });

  it("a task from the command line held back by a busy folder waits in New Task for the person's choice, with nothing said to fix", async () => {
    sessionStorage.clear();
    launchWithTaskThatCannotStart({ code: "workspace_undecided", message: "“write a.txt” waits for your review in /no/such/folder, its changes not decided yet." });
    const notice = await screen.findByTestId("startup-failed");
    expect(notice).toHaveTextContent("It waits in New Task: Run there to choose.");
    expect(notice).not.toHaveTextContent("to fix");
    expect(screen.getByTestId("task-input")).toHaveValue("fix the parser");
    sessionStorage.clear();
  });

  it("a task from the command line that cannot start leaves a task the person was writing as it was, and names its own", async () => {
    sessionStorage.clear();
    sessionStorage.setItem("finishline.taskDraft", "my own half-written task");
    launchWithTaskThatCannotStart();
    const notice = await screen.findByTestId("startup-failed");
    expect(notice).toHaveTextContent("“fix the parser” in /no/such/folder");
    expect(notice).toHaveTextContent("your own draft in New Task is kept");
    expect(screen.getByTestId("task-input")).toHaveValue("my own half-written task");
    sessionStorage.clear();
  });

  it("a second task from the command line that cannot start replaces the first one left untouched, but not a folder the person chose", async () => {
    sessionStorage.clear();
    sessionStorage.setItem("finishline.taskDraft", "an earlier launched task");
    sessionStorage.setItem("finishline.workspaceDraft", "/old");
    sessionStorage.setItem("finishline.launchedDraft", JSON.stringify({ task: "an earlier launched task", folder: "/old" }));
    launchWithTaskThatCannotStart();
    expect(await screen.findByTestId("startup-failed")).toHaveTextContent("It waits in New Task");
    expect(screen.getByTestId("task-input"), "the earlier launch's task, left as it was, is no draft of the person's").toHaveValue("fix the parser");
    cleanup();
    sessionStorage.clear();
    sessionStorage.setItem("finishline.workspaceDraft", "/my/project");
    launchWithTaskThatCannotStart();
    expect(await screen.findByTestId("startup-failed")).toHaveTextContent("your own draft in New Task is kept");
    expect(screen.getByTestId("workspace-path"), "the folder the person chose stays").toHaveValue("/my/project");
    sessionStorage.clear();
  });

  it("moves between the three screens from the sidebar", async () => {
    mockIPC((cmd) => (cmd === "get_settings" ? view() : cmd === "list_sessions" ? [] : undefined), { shouldMockEvents: true });
    render(<App />);
    const user = userEvent.setup();
    await screen.findByTestId("new-task-form");
    await user.click(screen.getByTestId("nav-history"));
    expect(await screen.findByTestId("history-empty")).toHaveTextContent("No sessions yet.");
    await user.click(screen.getByTestId("nav-settings"));
    expect(await screen.findByTestId("settings-form")).toBeInTheDocument();
    await user.click(screen.getByTestId("nav-new"));
    expect(screen.getByTestId("new-task-form")).toBeInTheDocument();
  });

  it("the first-run button opens Settings", async () => {
    mockIPC((cmd) => (cmd === "get_settings" ? view() : undefined));
    render(<App />);
    await userEvent.setup().click(await screen.findByTestId("open-settings"));
    expect(await screen.findByTestId("provider-base-url"), "the guide must lead straight to the provider fields").toBeInTheDocument();
    await vi.waitFor(() => expect(document.activeElement, "the focus goes to the new screen, not the page").toBe(document.querySelector("main.content")));
  });

  it("starts on the settings the shell handed over, without asking for them", async () => {
    const asked: string[] = [];
    mockIPC((cmd) => {
      asked.push(cmd);
      if (cmd === "get_settings") return view();
    });
    const w = window as { __FINISHLINE_BOOT__?: unknown };
    w.__FINISHLINE_BOOT__ = { settings: view({}, true), settings_error: null, perf: false };
    try {
      render(<App />);
      expect(screen.getByTestId("new-task-form"), "the first screen must be there on the first render, with no round trip").toBeInTheDocument();
      expect(screen.queryByTestId("first-run"), "a configured provider needs no first-run guide").toBeNull();
      await new Promise((r) => setTimeout(r, 20));
      expect(asked, "settings given at start are not fetched again").not.toContain("get_settings");
    } finally {
      delete w.__FINISHLINE_BOOT__;
    }
  });

  it("shows a settings file the shell could not read at start, and retries over IPC", async () => {
    mockIPC((cmd) => (cmd === "get_settings" ? view() : undefined));
    const w = window as { __FINISHLINE_BOOT__?: unknown };
    w.__FINISHLINE_BOOT__ = { settings: null, settings_error: { code: "settings_unreadable", message: "the settings file could not be read (expected value)" }, perf: false };
    try {
      render(<App />);
      expect(screen.getByRole("alert")).toHaveTextContent("The settings file could not be read");
      await userEvent.setup().click(screen.getByRole("button", { name: "Try again" }));
      await waitFor(() => expect(screen.getByTestId("new-task-form")).toBeInTheDocument());
    } finally {
      delete w.__FINISHLINE_BOOT__;
    }
  });

  it("with a settings file it cannot read, History and the sessions still open, and the file can be set aside for defaults", async () => {
    const asked: string[] = [];
    mockIPC((cmd) => {
      asked.push(cmd);
      if (cmd === "get_settings") throw { code: "settings_unreadable", message: "/data/settings.json is not valid JSON: EOF while parsing" };
      if (cmd === "list_sessions") return [];
      if (cmd === "set_aside_settings") return { view: view(), kept_as: "/data/settings.json.unreadable-20261129-2350" };
    }, { shouldMockEvents: true });
    render(<App />);
    expect(await screen.findByRole("alert")).toHaveTextContent("not valid JSON");
    const user = userEvent.setup();
    await user.click(screen.getByTestId("nav-history"));
    expect(await screen.findByTestId("history-empty"), "History needs no settings: a review waiting there must stay reachable").toBeInTheDocument();
    await user.click(screen.getByTestId("nav-new"));
    await user.click(await screen.findByRole("button", { name: "Start with default settings" }));
    expect(asked).toContain("set_aside_settings");
    expect(await screen.findByTestId("new-task-form")).toBeInTheDocument();
    expect(screen.getByTestId("settings-set-aside")).toHaveTextContent("Your unreadable settings file was kept as /data/settings.json.unreadable-20261129-2350");
  });

  it("says a history file that was no database was kept whole and a new history started, until the person has read it", async () => {
    mockIPC((cmd) => {
      if (cmd === "get_settings") return view();
      if (cmd === "history_set_aside") return "/data/history.db.unreadable-20261130-0530";
      if (cmd === "list_sessions") return [];
    }, { shouldMockEvents: true });
    render(<App />);
    const said = await screen.findByTestId("history-set-aside");
    expect(said).toHaveTextContent("Your history file could not be read");
    expect(said, "where the old one is, so nothing is lost").toHaveTextContent("/data/history.db.unreadable-20261130-0530");
    expect(screen.getByTestId("new-task-form"), "the app works meanwhile").toBeInTheDocument();
    await userEvent.setup().click(within(said).getByRole("button", { name: "OK" }));
    expect(screen.queryByTestId("history-set-aside")).toBeNull();
  });

  it("says which tasks Finishline's last close stopped, each a click from its Resume, until read", async () => {
    mockIPC((cmd, args) => {
      if (cmd === "get_settings") return view();
      if (cmd === "interrupted_at_start") return [{ id: "ses_a", title: "Fix the login form" }, { id: "ses_b", title: "Write the changelog" }];
      if (cmd === "list_sessions") return [];
      if (cmd === "get_session_events") return [];
      void args;
    }, { shouldMockEvents: true });
    render(<App />);
    const said = await screen.findByTestId("stopped-at-start");
    expect(said).toHaveTextContent("2 tasks were stopped when Finishline last closed");
    expect(screen.getByTestId("new-task-form"), "the app works meanwhile").toBeInTheDocument();
    const user = userEvent.setup();
    await user.click(within(said).getByRole("button", { name: "Fix the login form" }));
    // Opened: the other is still named, the one opened is not.
    expect(await screen.findByTestId("stopped-at-start")).toHaveTextContent("1 task was stopped when Finishline last closed");
    expect(screen.getByTestId("stopped-at-start")).not.toHaveTextContent("Fix the login form");
    await user.click(within(screen.getByTestId("stopped-at-start")).getByRole("button", { name: "OK" }));
    expect(screen.queryByTestId("stopped-at-start")).toBeNull();
  });

  it("shows a settings load failure with a way to retry", async () => {
    let calls = 0;
    mockIPC((cmd) => {
      if (cmd !== "get_settings") return;
      calls += 1;
      if (calls === 1) throw { code: "settings_unreadable", message: "the settings file could not be read (expected value)" };
      return view();
    });
    render(<App />);
    expect(await screen.findByRole("alert")).toHaveTextContent("The settings file could not be read");
    await userEvent.setup().click(screen.getByRole("button", { name: "Try again" }));
    await waitFor(() => expect(screen.getByTestId("new-task-form")).toBeInTheDocument());
  });
});

/** History opened in the app on an empty history; `calls`: every filter list_sessions was asked with. */
async function emptyHistory() {
  const calls: unknown[] = [];
  mockIPC(
    (cmd, args) => {
      if (cmd === "get_settings") return view();
      if (cmd === "list_sessions") {
        calls.push((args as { filter: unknown }).filter);
        return [];
      }
    },
    { shouldMockEvents: true },
  );
  render(<App />);
  const user = userEvent.setup();
  await user.click(await screen.findByTestId("nav-history"));
  await screen.findByTestId("history-empty");
  return { calls, user };
}

describe("History filters", () => {
  it("filters by outcome and date through list_sessions", async () => {
    const { calls, user } = await emptyHistory();
    await user.selectOptions(screen.getByTestId("history-outcome"), "stuck");
    await user.selectOptions(screen.getByTestId("history-date"), "week");
    await waitFor(() => expect(calls.at(-1)).toMatchObject({ end_reasons: ["stuck"] }));
    const last = calls.at(-1) as { since_ms: number };
    expect(Date.now() - last.since_ms, "the last 7 days").toBeGreaterThan(6.9 * 86_400_000);
    expect(screen.getByTestId("history-empty")).toHaveTextContent("No sessions match these filters.");
  });
});

describe("History beyond its newest 200", () => {
  it("shows older sessions on request, 200 more at a time, and says when there are none left", async () => {
    const limits: number[] = [];
    const all = Array.from({ length: 250 }, (_, i) => ({ id: `s${i}`, title: `task ${i}`, task: `task ${i}`, workspace: "/ws", provider: "openai", model: "m", status: "completed", claim: null, verdict: null, end_reason: null, decision: null, created_at: "", created_ms: 1000 - i, duration_ms: 0, tokens: { agent: 0, evaluator: 0, compaction: 0 }, last_seq: 1 }));
    mockIPC(
      (cmd, args) => {
        if (cmd === "get_settings") return view();
        if (cmd === "list_sessions") {
          const limit = (args as { filter: { limit: number } }).filter.limit;
          limits.push(limit);
          return all.slice(0, limit);
        }
      },
      { shouldMockEvents: true },
    );
    render(<App />);
    const user = userEvent.setup();
    await user.click(await screen.findByTestId("nav-history"));
    await waitFor(() => expect(screen.getAllByTestId("history-row")).toHaveLength(200));
    await user.click(screen.getByTestId("history-more"));
    await waitFor(() => expect(screen.getAllByTestId("history-row")).toHaveLength(250));
    expect(limits.at(-1)).toBe(400);
    expect(screen.queryByTestId("history-more"), "all 250 are shown").toBeNull();
  });
});

describe("History's status filter", () => {
  it("offers every status a person may look for, waiting-for-you and working included", async () => {
    const { calls, user } = await emptyHistory();
    const options = Array.from(screen.getByTestId("history-filter").querySelectorAll("option")).map((o) => o.getAttribute("value"));
    expect(options, "a session waiting for a permission or an answer must be findable").toContain("awaiting_approval");
    expect(options, "and so must one that is working").toContain("busy");
    await user.selectOptions(screen.getByTestId("history-filter"), "awaiting_approval");
    await waitFor(() => expect(calls.at(-1)).toMatchObject({ shown: ["awaiting_approval"] }));
  });

  it("names what the badges say: Discarded, Branch kept, Not checked and Not chosen are choices, asked for as such", async () => {
    const { calls, user } = await emptyHistory();
    const labels = Array.from(screen.getByTestId("history-filter").querySelectorAll("option")).map((o) => o.textContent);
    expect(labels).toEqual(expect.arrayContaining(["Discarded", "Branch kept", "Not checked", "Not chosen", "Rejected", "Completed"]));
    expect(labels.indexOf("Discarded"), "beside Rejected, which it is not").toBe(labels.indexOf("Rejected") + 1);
    expect(labels.indexOf("Not chosen"), "and so is an attempt set aside for another").toBe(labels.indexOf("Discarded") + 1);
    for (const [label, shown] of [
      ["Discarded", "discarded"],
      ["Branch kept", "branch_kept"],
      ["Not checked", "not_checked"],
      ["Not chosen", "not_chosen"],
    ]) {
      await user.selectOptions(screen.getByTestId("history-filter"), label);
      await waitFor(() => expect(calls.at(-1)).toMatchObject({ shown: [shown] }));
    }
  });
});

describe("History, loading and errors", () => {
  it("shows Loading, then a failure with a retry that loads the list", async () => {
    let answer: "hang" | "fail" | "ok" = "hang";
    let release: (() => void) | null = null;
    mockIPC(
      async (cmd) => {
        if (cmd === "get_settings") return view();
        if (cmd === "list_sessions") {
          if (answer === "hang") await new Promise<void>((r) => (release = r));
          if (answer === "fail") throw { code: "storage", message: "the history database failed: disk I/O error" };
          return [];
        }
      },
      { shouldMockEvents: true },
    );
    render(<App />);
    const user = userEvent.setup();
    await user.click(await screen.findByTestId("nav-history"));
    expect(await screen.findByTestId("history-loading")).toBeInTheDocument();
    answer = "fail";
    release!();
    expect(await screen.findByTestId("history-error")).toHaveTextContent("disk I/O error");
    expect(screen.getByTestId("history-error").textContent, "the engine's message reads as a sentence on its own").toMatch(/The history database failed/);
    expect(screen.queryByTestId("history-loading"), "no endless Loading next to the error").toBeNull();
    answer = "ok";
    await user.click(screen.getByText("Try again"));
    expect(await screen.findByTestId("history-empty")).toHaveTextContent("No sessions yet.");
  });
});

describe("quitting over running tasks", () => {
  it("Ctrl+Q asks while a task runs, Esc keeps the window, and 'Stop it and quit' cancels before quitting", async () => {
    const quits: boolean[] = [];
    mockIPC((cmd, args) => {
      if (cmd === "get_settings") return view();
      if (cmd === "quit") {
        const stop = (args as { stopRunning: boolean }).stopRunning;
        quits.push(stop);
        return stop ? 0 : 1;
      }
    }, { shouldMockEvents: true });
    render(<App />);
    const user = userEvent.setup();
    await screen.findByTestId("new-task-form");
    await user.keyboard("{Control>}q{/Control}");
    const dialog = await screen.findByTestId("quit-dialog");
    expect(dialog, "the person is told what quitting stops").toHaveTextContent("A task is still running");
    expect(screen.getByTestId("quit-keep"), "keeping the window is the default: a stray Enter must not stop work").toHaveFocus();
    await user.keyboard("{Escape}");
    expect(screen.queryByTestId("quit-dialog"), "Esc keeps working").not.toBeInTheDocument();
    expect(quits, "asking is not quitting").toEqual([false]);

    await user.keyboard("{Control>}q{/Control}");
    await user.click(await screen.findByTestId("quit-stop"));
    await waitFor(() => expect(quits).toEqual([false, false, true]));
  });

  it("Ctrl+Q with nothing running quits without a question", async () => {
    const quits: boolean[] = [];
    mockIPC((cmd, args) => {
      if (cmd === "get_settings") return view();
      if (cmd === "quit") {
        quits.push((args as { stopRunning: boolean }).stopRunning);
        return 0;
      }
    }, { shouldMockEvents: true });
    render(<App />);
    await screen.findByTestId("new-task-form");
    await userEvent.setup().keyboard("{Control>}q{/Control}");
    await waitFor(() => expect(quits).toEqual([false]));
    expect(screen.queryByTestId("quit-dialog"), "no question when nothing would be lost").not.toBeInTheDocument();
  });

  it("Ctrl+Q that cannot quit says why, rather than seeming to do nothing", async () => {
    mockIPC((cmd) => {
      if (cmd === "get_settings") return view();
      if (cmd === "quit") throw { code: "internal", message: "the history could not be closed" };
    }, { shouldMockEvents: true });
    render(<App />);
    await screen.findByTestId("new-task-form");
    await userEvent.setup().keyboard("{Control>}q{/Control}");
    expect(await screen.findByTestId("quit-failed")).toHaveTextContent(/could not quit: the history could not be closed/i);
  });

  it("Settings shows the version and where the data lives", async () => {
    mockIPC((cmd) => {
      if (cmd === "get_settings") return view();
      if (cmd === "about") return { version: "0.1.0", data_dir: "/home/p/.local/share/dev.finishline.app", database: "/h/history.db", settings_file: "/h/settings.json", checkpoints_dir: "/h/checkpoints" };
    });
    render(<App />);
    await userEvent.setup().click(await screen.findByTestId("nav-settings"));
    expect(await screen.findByTestId("about-version")).toHaveTextContent("0.1.0");
    expect(screen.getByTestId("about-data-dir"), "a bug report or a backup needs the folder").toHaveTextContent("/home/p/.local/share/dev.finishline.app");
  });
});

describe("History search", () => {
  const row = (id: string, title: string) => ({
    id,
    title,
    task: title,
    workspace: "/ws",
    provider: "openai",
    model: "m",
    status: "completed",
    claim: null,
    verdict: null,
    end_reason: "verified_done",
    decision: "approve",
    created_at: "2026-11-23T10:00:00Z",
    created_ms: 1_795_000_000_000,
    duration_ms: 1000,
    tokens: { agent: 1, evaluator: 0, compaction: 0 },
    last_seq: 3,
    plan_steps: 0,
    plan_done: 0,
    approvals: 0,
  });

  it("an answer the evaluator could not check reads Not checked in History, as in the sidebar, not Idle", async () => {
    mockIPC(
      (cmd) => {
        if (cmd === "get_settings") return view();
        if (cmd === "list_sessions") return [{ ...row("a", "Say hello"), status: "idle", end_reason: "conversation_unchecked", decision: null }];
      },
      { shouldMockEvents: true },
    );
    render(<App />);
    const user = userEvent.setup();
    await user.click(await screen.findByTestId("nav-history"));
    const badge = within(await screen.findByTestId("history-row")).getByTestId("status-badge");
    expect(badge).toHaveTextContent("Not checked");
  });

  it("History says how the run ended apart from the decision: a rejected verified done does not read as a contradiction", async () => {
    mockIPC(
      (cmd) => {
        if (cmd === "get_settings") return view();
        if (cmd === "list_sessions") return [{ ...row("a", "Say hello"), status: "rejected", end_reason: "verified_done", decision: "reject" }];
      },
      { shouldMockEvents: true },
    );
    render(<App />);
    const user = userEvent.setup();
    await user.click(await screen.findByTestId("nav-history"));
    await screen.findByTestId("history-row");
    expect(screen.getByRole("columnheader", { name: "Run ended" }), "the column is the run's end, judged before the person decided").toBeInTheDocument();
    expect(screen.getByRole("columnheader", { name: "Status" })).toBeInTheDocument();
  });

  it("counts tokens and time as the session's header does: 7.4k, exact on hover, and seconds in every row", async () => {
    mockIPC(
      (cmd) => {
        if (cmd === "get_settings") return view();
        if (cmd === "list_sessions")
          return [
            { ...row("a", "Big one"), tokens: { agent: 7000, evaluator: 300, compaction: 116 }, duration_ms: 3_725_000 },
            { ...row("b", "Quick one"), created_ms: 1_794_000_000_000, tokens: { agent: 950, evaluator: 0, compaction: 0 }, duration_ms: 950 },
          ];
      },
      { shouldMockEvents: true },
    );
    render(<App />);
    const user = userEvent.setup();
    await user.click(await screen.findByTestId("nav-history"));
    await waitFor(() => expect(screen.getAllByTestId("history-row")).toHaveLength(2));
    const [big, quick] = screen.getAllByTestId("history-row");
    const tokens = within(big).getByTestId("history-tokens");
    expect(tokens).toHaveTextContent(/^7\.4k$/);
    expect(tokens.getAttribute("title")).toBe("7,416 tokens: agent 7,000 · evaluator 300 · compaction 116");
    expect(within(quick).getByTestId("history-tokens")).toHaveTextContent(/^950$/);
    expect(within(big).getByTestId("history-active")).toHaveTextContent(/^1 h 2 min$/);
    expect(within(quick).getByTestId("history-active"), "not 950 ms beside 12 s: one unit down the column").toHaveTextContent(/^< 1 s$/);
  });

  it("Resume on an interrupted session's row resumes it, then opens it (it only opened it, to a second Resume)", async () => {
    const sent: unknown[] = [];
    mockIPC(
      (cmd, args) => {
        if (cmd === "get_settings") return view();
        if (cmd === "list_sessions") return [{ ...row("a", "Read the file slowly"), status: "interrupted", end_reason: null }];
        if (cmd === "send_message") sent.push(args);
        if (cmd === "subscribe_session") return 1;
      },
      { shouldMockEvents: true },
    );
    render(<App />);
    const user = userEvent.setup();
    await user.click(await screen.findByTestId("nav-history"));
    await user.click(await screen.findByTestId("history-resume"));
    await waitFor(() => expect(sent).toEqual([expect.objectContaining({ sessionId: "a", message: "" })]));
    expect(await screen.findByTestId("session-view")).toHaveAttribute("data-session", "a");
  });

  it("History says why a session failed, and offers Retry on a failed row and Resume on a cancelled one, beside its status", async () => {
    const sent: unknown[] = [];
    mockIPC(
      (cmd, args) => {
        if (cmd === "get_settings") return view();
        if (cmd === "list_sessions")
          return [
            { ...row("a", "Summarise the README"), status: "failed", end_reason: "failed", failure: "The provider is overloaded (503): try again later" },
            { ...row("b", "Write the report"), status: "cancelled", end_reason: "cancelled" },
            row("c", "Done already"),
          ];
        if (cmd === "send_message") sent.push(args);
        if (cmd === "subscribe_session") return 1;
      },
      { shouldMockEvents: true },
    );
    render(<App />);
    const user = userEvent.setup();
    await user.click(await screen.findByTestId("nav-history"));
    const [failed, cancelled, done] = await screen.findAllByTestId("history-row");
    const why = within(failed).getByTestId("history-failure");
    expect(why).toHaveTextContent("The provider is overloaded (503): try again later");
    expect(within(failed).getByTestId("history-resume")).toHaveTextContent("Retry");
    expect(within(cancelled).getByTestId("history-resume")).toHaveTextContent("Resume");
    expect(within(done).queryByTestId("history-resume")).toBeNull();
    await user.click(within(failed).getByTestId("history-resume"));
    await waitFor(() => expect(sent).toEqual([expect.objectContaining({ sessionId: "a", message: "" })]));
    expect(await screen.findByTestId("session-view")).toHaveAttribute("data-session", "a");
  });

  it("History marks a verified done whose audit found weakened checks, so it does not read as clean", async () => {
    mockIPC(
      (cmd) => {
        if (cmd === "get_settings") return view();
        if (cmd === "list_sessions") return [{ ...row("a", "Make the tests pass"), end_reason: "verified_done", audit_findings: 2 }, row("b", "Write the report")];
      },
      { shouldMockEvents: true },
    );
    render(<App />);
    const user = userEvent.setup();
    await user.click(await screen.findByTestId("nav-history"));
    const rows = await screen.findAllByTestId("history-row");
    expect(within(rows[0]).getByTestId("history-audit")).toHaveTextContent("⚠ audit: 2 weakened checks");
    expect(within(rows[1]).queryByTestId("history-audit")).toBeNull();
  });

  it("a Resume refused for want of a provider offers Open Settings, as the session view does", async () => {
    mockIPC(
      (cmd) => {
        if (cmd === "get_settings") return view();
        if (cmd === "list_sessions") return [{ ...row("a", "Read the file slowly"), status: "interrupted", end_reason: null }];
        if (cmd === "send_message") throw { code: "invalid_settings", message: "No model is set up: choose one in Settings." };
      },
      { shouldMockEvents: true },
    );
    render(<App />);
    const user = userEvent.setup();
    await user.click(await screen.findByTestId("nav-history"));
    await user.click(await screen.findByTestId("history-resume"));
    expect(await screen.findByRole("alert")).toHaveTextContent("No model is set up");
    await user.click(screen.getByTestId("error-open-settings"));
    expect(document.querySelector(".settings-screen")).not.toBeNull();
  });

  it("comes back to the search and filters the person left, after they opened something else", async () => {
    mockIPC(
      (cmd) => {
        if (cmd === "get_settings") return view();
        if (cmd === "list_sessions") return [row("a", "Write the report")];
        if (cmd === "search_sessions") return [];
      },
      { shouldMockEvents: true },
    );
    render(<App />);
    const user = userEvent.setup();
    await user.click(await screen.findByTestId("nav-history"));
    await user.type(await screen.findByTestId("history-search"), "report");
    await user.selectOptions(screen.getByTestId("history-date"), "week");
    await user.click(screen.getByTestId("nav-new"));
    await user.click(screen.getByTestId("nav-history"));
    expect(await screen.findByTestId("history-search")).toHaveValue("report");
    expect(screen.getByTestId("history-date")).toHaveValue("week");
  });

  it("says of a rejected task that its earlier work was approved", async () => {
    mockIPC(
      (cmd) => {
        if (cmd === "get_settings") return view();
        if (cmd === "list_sessions") return [{ ...row("a", "Write the report"), status: "rejected", decision: "reject", approvals: 1 }, { ...row("b", "Rename a file"), status: "rejected", decision: "reject" }];
      },
      { shouldMockEvents: true },
    );
    render(<App />);
    const user = userEvent.setup();
    await user.click(await screen.findByTestId("nav-history"));
    await waitFor(() => expect(screen.getAllByTestId("history-row")).toHaveLength(2));
    const [landed, rejected] = screen.getAllByTestId("history-row");
    expect(within(landed).getByTestId("history-approved-before"), "its first work landed; only a follow-up was rejected").toHaveTextContent("earlier work approved");
    expect(within(landed).getByTestId("history-approved-before").getAttribute("title")).toMatch(/Only the last round was rejected/);
    expect(within(rejected).queryByTestId("history-approved-before")).toBeNull();
    // The sidebar and the palette say it too: "Rejected" alone read as if the landed work had
    // been thrown away.
    const listed = (r: ReturnType<typeof row>, approvals: number): SessionSummary => ({ ...r, end_reason: "verified_done", updated_ms: r.created_ms, status: "rejected", decision: "reject", approvals });
    const [a, b] = [listed(row("a", "Write the report"), 1), listed(row("b", "Rename a file"), 0)];
    expect(listedState(a).word).toBe("Follow-up rejected");
    expect(listedState(a).title).toMatch(/earlier round of this task; that work stays where it landed/);
    expect(listedState(b).word).toBe("Rejected");
  });

  it("says when a session started as short as it can: today's by the time, this year's without the year", () => {
    const now = new Date(2026, 10, 29, 15, 0);
    const today = started(new Date(2026, 10, 29, 10, 18).getTime(), now);
    expect(today).toBe(new Date(2026, 10, 29, 10, 18).toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit" }));
    const thisYear = started(new Date(2026, 1, 3, 9, 5).getTime(), now);
    expect(thisYear).toContain(new Date(2026, 1, 3, 9, 5).toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit" }));
    expect(thisYear).not.toContain("2026");
    expect(started(new Date(2025, 11, 31, 23, 0).getTime(), now)).toContain("2025");
  });

  it("says where a task's kept branch holds its work, and names no branch of a task that landed", async () => {
    mockIPC(
      (cmd) => {
        if (cmd === "get_settings") return view();
        if (cmd === "list_sessions")
          return [
            { ...row("a", "Write the report"), isolation: "worktree", branch: "finishline/a-write-the-report", work_dir: null },
            { ...row("b", "Rename a file"), isolation: "worktree", branch: null, work_dir: null },
            { ...row("c", "Still at work"), status: "awaiting_review", decision: null, isolation: "worktree", branch: "finishline/c-still", work_dir: "/data/worktrees/c" },
          ];
      },
      { shouldMockEvents: true },
    );
    render(<App />);
    const user = userEvent.setup();
    await user.click(await screen.findByTestId("nav-history"));
    await waitFor(() => expect(screen.getAllByTestId("history-row")).toHaveLength(3));
    const [kept, landed, working] = screen.getAllByTestId("history-row");
    expect(within(kept).getByTestId("history-branch")).toHaveTextContent("Branch kept: finishline/a-write-the-report");
    expect(within(landed).queryByTestId("history-branch")).toBeNull();
    expect(within(working).queryByTestId("history-branch"), "a task still in its worktree is not put away on a branch").toBeNull();
  });

  it("marks a session that ran a plan with its steps done", async () => {
    mockIPC(
      (cmd) => {
        if (cmd === "get_settings") return view();
        if (cmd === "list_sessions") return [{ ...row("a", "Write the report"), plan_steps: 4, plan_done: 1 }, row("b", "Rename a file")];
      },
      { shouldMockEvents: true },
    );
    render(<App />);
    const user = userEvent.setup();
    await user.click(await screen.findByTestId("nav-history"));
    await waitFor(() => expect(screen.getAllByTestId("history-row")).toHaveLength(2));
    const [planned, plain] = screen.getAllByTestId("history-row");
    expect(within(planned).getByTestId("history-plan"), "History shows which sessions ran a plan, and how far it got").toHaveTextContent("Plan: 1/4 steps");
    expect(within(plain).queryByTestId("history-plan"), "a session without a plan has no plan mark").toBeNull();
  });

  it("counts what a search shows as the list shows it: a group of attempts is one task, its sessions said beside", async () => {
    const attempt = (number: number) => ({ group: "g1", number, of: 2, label: "Finishline's agent (m)", chosen: false });
    mockIPC(
      (cmd) => {
        if (cmd === "get_settings") return view();
        if (cmd === "list_sessions") return [{ ...row("a1", "Say hello"), attempt: attempt(1) }, { ...row("a2", "Say hello"), attempt: attempt(2) }, row("b", "Say hello twice")];
        if (cmd === "search_sessions")
          return ["a1", "a2", "b"].map((id) => ({ session_id: id, title: "Say hello", status: "completed", created_at: "", snippet: [{ text: "hello", matched: true }] }));
      },
      { shouldMockEvents: true },
    );
    render(<App />);
    const user = userEvent.setup();
    await user.click(await screen.findByTestId("nav-history"));
    await user.type(await screen.findByTestId("history-search"), "hello");
    await waitFor(() => expect(screen.getByTestId("search-summary")).toHaveTextContent('2 tasks match "hello" (3 sessions: a group\'s attempts are one row)'));
    expect(screen.getAllByTestId("history-row")).toHaveLength(2);
  });

  it("filters the list to the sessions that match, highlights the words, and clears back to all", async () => {
    mockIPC(
      (cmd, args) => {
        if (cmd === "get_settings") return view();
        if (cmd === "list_sessions") return [row("a", "Fix the parser"), row("b", "Write the release notes"), row("c", "Rename a file")];
        if (cmd === "search_sessions") {
          expect((args as { text: string }).text).toBe("parser");
          return [{ session_id: "a", title: "Fix the parser", status: "completed", created_at: "", snippet: [{ text: "the list [a, b] and the ", matched: false }, { text: "parser", matched: true }, { text: " now", matched: false }] }];
        }
      },
      { shouldMockEvents: true },
    );
    render(<App />);
    const user = userEvent.setup();
    await user.click(await screen.findByTestId("nav-history"));
    await waitFor(() => expect(screen.getAllByTestId("history-row")).toHaveLength(3));
    await user.type(screen.getByTestId("history-search"), "parser");
    await waitFor(() => expect(screen.getAllByTestId("history-row"), "the list itself shows only the matching sessions").toHaveLength(1));
    expect(screen.getByTestId("history-row")).toHaveTextContent("Fix the parser");
    expect(screen.getByTestId("search-summary")).toHaveTextContent('1 session matches "parser"');
    const marks = screen.getByTestId("history-row").querySelectorAll("mark");
    expect(Array.from(marks).map((m) => m.textContent), "the matched word is highlighted, not wrapped in brackets").toEqual(["parser"]);
    expect(screen.getByTestId("history-row"), "brackets the model wrote stay as they were").toHaveTextContent("the list [a, b] and the parser now");
    await user.click(screen.getByTestId("clear-search"));
    await waitFor(() => expect(screen.getAllByTestId("history-row")).toHaveLength(3));
    expect(screen.getByTestId("history-search")).toHaveValue("");
  });

  it("a match in the title is highlighted in the title, not said a second time beneath it", async () => {
    mockIPC(
      (cmd) => {
        if (cmd === "get_settings") return view();
        if (cmd === "list_sessions") return [row("a", "write meeting notes to notes.md"), row("b", "Rename a file")];
        if (cmd === "search_sessions")
          return [{ session_id: "a", title: "write meeting notes to notes.md", status: "completed", created_at: "", snippet: [{ text: "write meeting ", matched: false }, { text: "notes", matched: true }, { text: " to notes.md", matched: false }] }];
      },
      { shouldMockEvents: true },
    );
    render(<App />);
    const user = userEvent.setup();
    await user.click(await screen.findByTestId("nav-history"));
    await user.type(await screen.findByTestId("history-search"), "notes");
    await waitFor(() => expect(screen.getAllByTestId("history-row")).toHaveLength(1));
    const row1 = screen.getByTestId("history-row");
    expect(within(row1).queryByTestId("search-snippet"), "the passage is the title: once is enough").toBeNull();
    expect(Array.from(row1.querySelectorAll("button mark")).map((m) => m.textContent), "the words are marked where they are, in the title").toEqual(["notes", "notes"]);
    expect(row1.querySelector("button")).toHaveTextContent(/^write meeting notes to notes\.md$/);
  });

  it("a search answered after it was cleared, or after a newer one, does not filter the list", async () => {
    const answers: Record<string, (v: unknown) => void> = {};
    mockIPC(
      (cmd, args) => {
        if (cmd === "get_settings") return view();
        if (cmd === "list_sessions") return [row("a", "Fix the parser"), row("b", "Write the release notes")];
        if (cmd === "search_sessions") return new Promise((done) => (answers[(args as { text: string }).text] = done));
      },
      { shouldMockEvents: true },
    );
    render(<App />);
    const user = userEvent.setup();
    await user.click(await screen.findByTestId("nav-history"));
    await waitFor(() => expect(screen.getAllByTestId("history-row")).toHaveLength(2));
    const hit = (id: string) => [{ session_id: id, title: "", status: "completed", created_at: "", snippet: [{ text: "x", matched: true }] }];
    await user.type(screen.getByTestId("history-search"), "pa");
    await waitFor(() => expect(answers.pa).toBeDefined());
    await user.type(screen.getByTestId("history-search"), "r");
    await waitFor(() => expect(answers.par).toBeDefined());
    answers.par(hit("a"));
    await waitFor(() => expect(screen.getAllByTestId("history-row")).toHaveLength(1));
    answers.pa(hit("b"));
    await new Promise((r) => setTimeout(r, 50));
    expect(screen.getByTestId("history-row"), "the older answer does not replace the newer").toHaveTextContent("Fix the parser");
    await user.type(screen.getByTestId("history-search"), "s");
    await waitFor(() => expect(answers.pars).toBeDefined());
    await user.click(screen.getByTestId("clear-search"));
    answers.pars(hit("a"));
    await new Promise((r) => setTimeout(r, 50));
    expect(screen.queryByTestId("search-summary"), "no matches said under an empty box").toBeNull();
    expect(screen.getAllByTestId("history-row")).toHaveLength(2);
  });

  it("finds a session older than the newest 200 the list holds, within the filters chosen", async () => {
    const asked: Record<string, unknown>[] = [];
    const newest = Array.from({ length: 200 }, (_, i) => row(`new${i}`, `Recent task ${i}`));
    mockIPC(
      (cmd, args) => {
        if (cmd === "get_settings") return view();
        if (cmd === "list_sessions") {
          const filter = (args as { filter: { ids?: string[] } | null }).filter ?? {};
          asked.push(filter);
          return filter.ids ? [row("old", "Fix the parser, months ago")].filter((r) => filter.ids!.includes(r.id)) : newest;
        }
        if (cmd === "search_sessions") return [{ session_id: "old", title: "Fix the parser, months ago", status: "completed", created_at: "", snippet: [{ text: "parser", matched: true }] }];
      },
      { shouldMockEvents: true },
    );
    render(<App />);
    const user = userEvent.setup();
    await user.click(await screen.findByTestId("nav-history"));
    await waitFor(() => expect(screen.getAllByTestId("history-row")).toHaveLength(200));
    await user.type(screen.getByTestId("history-search"), "parser");
    await waitFor(() => expect(screen.getAllByTestId("history-row"), "the match is shown, not \"No sessions match\"").toHaveLength(1));
    expect(screen.getByTestId("history-row")).toHaveTextContent("Fix the parser, months ago");
    expect(asked.at(-1), "the matches are asked for by id").toMatchObject({ ids: ["old"] });
  });

  it("a filter changed during a search never shows the matches found under the old filter", async () => {
    mockIPC(
      (cmd, args) => {
        if (cmd === "get_settings") return view();
        if (cmd === "list_sessions") {
          const filter = (args as { filter: { ids?: string[]; shown?: string[] } | null }).filter ?? {};
          if (filter.shown) return filter.ids ? new Promise(() => {}) : [];
          return filter.ids ? [row("old", "Fix the parser, months ago")] : [row("new", "Recent task")];
        }
        if (cmd === "search_sessions") return [{ session_id: "old", title: "Fix the parser, months ago", status: "completed", created_at: "", snippet: [{ text: "parser", matched: true }] }];
      },
      { shouldMockEvents: true },
    );
    render(<App />);
    const user = userEvent.setup();
    await user.click(await screen.findByTestId("nav-history"));
    await user.type(await screen.findByTestId("history-search"), "parser");
    await waitFor(() => expect(screen.getByTestId("history-row")).toHaveTextContent("Fix the parser, months ago"));
    await user.selectOptions(screen.getByTestId("history-filter"), "failed");
    await waitFor(() => expect(screen.queryByTestId("history-row"), "a completed session under Failed: the old filter's answer").toBeNull());
  });

  it("a match that is one attempt of an older group shows as its group's row, its attempts counted", async () => {
    const attempt = (number: number) => ({ group: "g-old", number, of: 2, label: `agent ${number}`, chosen: false });
    mockIPC(
      (cmd, args) => {
        if (cmd === "get_settings") return view();
        if (cmd === "list_sessions") {
          const filter = (args as { filter: { ids?: string[] } | null }).filter ?? {};
          return filter.ids ? [{ ...row("old1", "Fix the parser"), attempt: attempt(1) }, { ...row("old2", "Fix the parser"), attempt: attempt(2) }] : [row("new", "Recent task")];
        }
        if (cmd === "search_sessions") return [{ session_id: "old1", title: "Fix the parser", status: "completed", created_at: "", snippet: [{ text: "parser", matched: true }] }];
      },
      { shouldMockEvents: true },
    );
    render(<App />);
    const user = userEvent.setup();
    await user.click(await screen.findByTestId("nav-history"));
    await screen.findByTestId("history-row");
    await user.type(screen.getByTestId("history-search"), "parser");
    await waitFor(() => expect(screen.getByTestId("history-attempts")).toHaveTextContent("2 attempts"));
    expect(screen.getAllByTestId("history-row")).toHaveLength(1);
  });

  it("says when nothing matches instead of showing the full list", async () => {
    mockIPC(
      (cmd) => {
        if (cmd === "get_settings") return view();
        if (cmd === "list_sessions") return [row("a", "Fix the parser")];
        if (cmd === "search_sessions") return [];
      },
      { shouldMockEvents: true },
    );
    render(<App />);
    const user = userEvent.setup();
    await user.click(await screen.findByTestId("nav-history"));
    await screen.findByTestId("history-row");
    await user.type(screen.getByTestId("history-search"), "zebra{Enter}");
    expect(await screen.findByTestId("history-empty")).toHaveTextContent('No sessions match "zebra"');
    expect(screen.queryByTestId("history-row")).toBeNull();
    expect(screen.getAllByRole("button", { name: "Clear search" }), "one way to clear it, not two").toHaveLength(1);
  });
});

describe("Settings never lose input", () => {
  it("Esc on the unsaved-changes question from the sidebar leaves the focus on Settings, the one page that looks current", async () => {
    mockIPC(
      (cmd) => {
        if (cmd === "get_settings") return view();
        if (cmd === "list_sessions") return [];
      },
      { shouldMockEvents: true },
    );
    render(<App />);
    const user = userEvent.setup();
    await user.click(await screen.findByTestId("nav-settings"));
    await user.type(await screen.findByTestId("provider-base-url"), "x");
    screen.getByTestId("nav-history").focus();
    await user.keyboard("{Enter}");
    expect(await screen.findByTestId("leave-settings")).toBeInTheDocument();
    await user.keyboard("{Escape}");
    expect(screen.queryByTestId("leave-settings")).toBeNull();
    expect(screen.getByTestId("provider-base-url"), "still there, as typed").toHaveValue(view().settings.provider.base_url + "x");
    expect(screen.getByTestId("nav-settings"), "the page it stayed on").toHaveAttribute("aria-current", "page");
    expect(screen.getByTestId("nav-settings"), "the focus with it, not on History").toHaveFocus();
  });

  it("leaving with unsaved changes asks: Stay keeps them, Save saves and goes on, Discard drops them", async () => {
    const saved: unknown[] = [];
    let current = view();
    mockIPC(
      (cmd, args) => {
        if (cmd === "get_settings") return current;
        if (cmd === "list_sessions") return [];
        if (cmd === "save_settings") {
          const s = (args as { settings: ReturnType<typeof view>["settings"] }).settings;
          saved.push(s);
          current = { settings: s, provider_ready: true };
          return current;
        }
      },
      { shouldMockEvents: true },
    );
    render(<App />);
    const user = userEvent.setup();
    await user.click(await screen.findByTestId("nav-settings"));
    const url = await screen.findByTestId("provider-base-url");
    await user.clear(url);
    await user.type(url, "http://127.0.0.1:9999/v1");
    expect(screen.getByTestId("settings-status"), "the person sees the changes are not saved yet").toHaveTextContent("Unsaved changes");
    await user.click(screen.getByTestId("nav-new"));
    expect(await screen.findByTestId("leave-settings"), "leaving asks instead of dropping what was typed").toBeInTheDocument();
    await user.click(screen.getByTestId("leave-stay"));
    expect(screen.getByTestId("provider-base-url")).toHaveValue("http://127.0.0.1:9999/v1");
    await user.click(screen.getByTestId("nav-history"));
    await user.click(await screen.findByTestId("leave-save"));
    await screen.findByTestId("history");
    expect(saved, "Save in the question saves what was typed").toHaveLength(1);
    expect((saved[0] as { provider: { base_url: string } }).provider.base_url).toBe("http://127.0.0.1:9999/v1");
    await user.click(screen.getByTestId("nav-settings"));
    expect(await screen.findByTestId("provider-base-url")).toHaveValue("http://127.0.0.1:9999/v1");
    await user.type(screen.getByTestId("provider-base-url"), "x");
    await user.click(screen.getByTestId("nav-new"));
    await user.click(await screen.findByTestId("leave-discard"));
    await screen.findByTestId("new-task-form");
    await user.click(screen.getByTestId("nav-settings"));
    expect(await screen.findByTestId("provider-base-url"), "Discard drops only the unsaved edit").toHaveValue("http://127.0.0.1:9999/v1");
    await user.click(screen.getByTestId("nav-new"));
    expect(screen.queryByTestId("leave-settings"), "nothing unsaved: no question").toBeNull();
  });

  it("Save in the leave question with a field Settings refuses stays there, the focus on that field (not on the sidebar link)", async () => {
    mockIPC(
      (cmd) => {
        if (cmd === "get_settings") return view();
        if (cmd === "list_sessions") return [];
        if (cmd === "check_settings") return [];
      },
      { shouldMockEvents: true },
    );
    render(<App />);
    const user = userEvent.setup();
    await user.click(await screen.findByTestId("nav-settings"));
    const url = await screen.findByTestId("provider-base-url");
    await user.clear(url);
    await user.type(url, "not a url");
    await user.click(screen.getByTestId("nav-history"));
    await user.click(await screen.findByTestId("leave-save"));
    await waitFor(() => expect(screen.queryByTestId("leave-settings")).toBeNull());
    expect(screen.getByTestId("provider-base-url")).toHaveFocus();
  });

  /** Settings open, a new URL typed and Save pressed, its answer held until `answer()`. */
  async function savingANewUrl() {
    let answer: () => void = () => {};
    mockIPC(
      (cmd, args) => {
        if (cmd === "get_settings") return view();
        if (cmd === "list_sessions") return [];
        if (cmd === "save_settings") return new Promise((done) => (answer = () => done({ settings: (args as { settings: unknown }).settings, provider_ready: true })));
      },
      { shouldMockEvents: true },
    );
    render(<App />);
    const user = userEvent.setup();
    await user.click(await screen.findByTestId("nav-settings"));
    const url = await screen.findByTestId("provider-base-url");
    await user.clear(url);
    await user.type(url, "http://127.0.0.1:9999/v1");
    await user.click(screen.getByTestId("save-settings"));
    return { user, url, answer: () => answer() };
  }

  it("leaving right after Save, while the save is on its way, waits for it and asks nothing", async () => {
    const { user, answer } = await savingANewUrl();
    await user.click(screen.getByTestId("nav-new"));
    expect(screen.queryByTestId("leave-settings"), "the changes are being saved: no question").toBeNull();
    answer();
    await screen.findByTestId("new-task-form");
    expect(screen.queryByTestId("leave-settings")).toBeNull();
  });

  it("words typed while a save is on its way are kept, and leaving then asks about them", async () => {
    const { user, url, answer } = await savingANewUrl();
    // The fields stay open while it saves: more is typed before the save comes back.
    await user.type(url, "/more");
    await user.click(screen.getByTestId("nav-new"));
    answer();
    expect(await screen.findByTestId("leave-settings"), "what was typed after Save is not saved: asked").toBeTruthy();
    expect(screen.getByTestId<HTMLInputElement>("provider-base-url").value, "and not thrown away").toBe("http://127.0.0.1:9999/v1/more");
  });
});
