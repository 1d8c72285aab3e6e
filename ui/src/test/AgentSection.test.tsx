import { render, screen } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { mockIPC } from "@tauri-apps/api/mocks";
import { useState } from "react";
import { describe, expect, it } from "vitest";
import { AgentSection, commandLine, customAgent } from "../components/AgentSection";
import type { ExternalAgent } from "../ipc";

const presets = [
  { name: "opencode", label: "OpenCode", command: "opencode", args: ["acp"], install: "npm i -g opencode-ai", found: "/usr/local/bin/opencode" },
  { name: "gemini", label: "Gemini CLI", command: "gemini", args: ["--experimental-acp"], install: "npm i -g @google/gemini-cli", found: null },
];

function Harness({ start = null, onAgent }: { start?: ExternalAgent | null; onAgent?: (a: ExternalAgent | null) => void }) {
  const [agent, setAgent] = useState<ExternalAgent | null>(start);
  return (
    <AgentSection
      agent={agent}
      onChange={(a) => {
        setAgent(a);
        onAgent?.(a);
      }}
    />
  );
}

describe("Settings → Agent", () => {
  it("says so beside Choose… when the file chooser cannot open, and the program can still be typed", async () => {
    mockIPC((cmd) => {
      if (cmd === "agent_presets") return presets;
      if (cmd === "plugin:dialog|open") throw { code: "io", message: "no portal to open files with" };
    });
    render(<Harness start={{ name: "opencode", command: "opencode", args: ["acp"], env: {} }} />);
    const user = userEvent.setup();
    await user.click(await screen.findByTestId("agent-pick-program"));
    const said = await screen.findByRole("alert");
    expect(said).toHaveTextContent(/no portal to open files with/i);
    expect(said).toHaveTextContent("type the program's path");
    expect(screen.getByTestId("agent-program")).toBeEnabled();
  });

  it("picks a preset, says where it runs from, and Check shows who answered", async () => {
    let checked: unknown;
    mockIPC((cmd, args) => {
      if (cmd === "agent_presets") return presets;
      if (cmd === "check_agent") {
        checked = args;
        return { name: "OpenCode", version: "1.18.33", load_session: true };
      }
    });
    let last: ExternalAgent | null = null;
    render(<Harness onAgent={(a) => (last = a)} />);
    const user = userEvent.setup();
    const select = await screen.findByTestId("agent-select");
    await screen.findByRole("option", { name: "OpenCode over ACP" });
    await user.selectOptions(select, "opencode");
    expect(last, "the preset's command and ACP arguments are what runs").toEqual({ name: "opencode", command: "opencode", args: ["acp"], env: {} });
    expect(screen.getByTestId("agent-found")).toHaveTextContent("Runs opencode acp from /usr/local/bin/opencode.");
    await user.click(screen.getByTestId("agent-check"));
    expect(await screen.findByTestId("agent-check-result")).toHaveTextContent("Answered: OpenCode 1.18.33 (can reopen earlier sessions)");
    expect(checked).toMatchObject({ agent: { name: "opencode", command: "opencode" } });
  });

  it("a preset that is not installed shows how to install it, and a failed Check says why", async () => {
    mockIPC((cmd) => {
      if (cmd === "agent_presets") return presets;
      if (cmd === "check_agent") throw { code: "external_agent", message: "Gemini CLI is not installed here: `gemini` is not on PATH. Install it with: npm i -g @google/gemini-cli" };
    });
    render(<Harness />);
    const user = userEvent.setup();
    await screen.findByRole("option", { name: "Gemini CLI over ACP (not installed)" });
    await user.selectOptions(screen.getByTestId("agent-select"), "gemini");
    expect(screen.getByTestId("agent-found")).toHaveTextContent("It is not on PATH here; install it with npm i -g @google/gemini-cli.");
    await user.click(screen.getByTestId("agent-check"));
    expect(await screen.findByRole("alert")).toHaveTextContent("Gemini CLI is not installed here");
  });

  it("Check says whether the agent is logged in, and what to do when it is not, in its own words", async () => {
    mockIPC((cmd) => {
      if (cmd === "agent_presets") return presets;
      if (cmd === "check_agent") return { name: "Claude Agent", version: "0.101.0", load_session: true, logged_in: false, problem: "Claude Code needs you to log in (it says nobody is logged in). It offers: Anthropic Console: run `claude-agent-acp --cli auth login --console` in a terminal." };
    });
    render(<Harness start={{ name: "opencode", command: "opencode", args: ["acp"], env: {} }} />);
    const user = userEvent.setup();
    await screen.findByRole("option", { name: "OpenCode over ACP" });
    await user.click(screen.getByTestId("agent-check"));
    expect(await screen.findByTestId("agent-check-result")).toHaveTextContent("Answered: Claude Agent 0.101.0 (can reopen earlier sessions) · not logged in");
    expect(screen.getByTestId("agent-check-login")).toHaveTextContent("claude-agent-acp --cli auth login --console");
  });

  it("Check every agent lists each one: installed where (or how to install it), its version, logged in", async () => {
    mockIPC((cmd) => {
      if (cmd === "agent_presets") return presets;
      if (cmd === "check_agents")
        return [
          { agent: "opencode", label: "OpenCode", found: "/usr/local/bin/opencode", install: "npm i -g opencode-ai", name: "OpenCode", version: "1.18.33", load_session: true, logged_in: true, problem: null, login: [] },
          { agent: "codex", label: "Codex", found: "/usr/local/bin/codex-acp", install: "npm i -g @agentclientprotocol/codex-acp", name: "Codex", version: "2.6.0", load_session: true, logged_in: false, problem: "Codex needs you to log in", login: [] },
          { agent: "gemini", label: "Gemini CLI", found: null, install: "npm i -g @google/gemini-cli", name: null, version: null, load_session: false, logged_in: null, problem: null, login: [] },
        ];
    });
    render(<Harness />);
    const user = userEvent.setup();
    await user.click(await screen.findByTestId("agents-check-all"));
    expect(await screen.findByTestId("agent-status-opencode")).toHaveTextContent("OpenCode/usr/local/bin/opencode1.18.33yes");
    expect(screen.getByTestId("agent-status-codex")).toHaveAttribute("data-logged-in", "false");
    expect(screen.getByTestId("agent-status-gemini"), "a missing agent names its install command").toHaveTextContent("no: npm i -g @google/gemini-cli");
  });

  it("Check every agent that fails says why beside its button, with Finishline's own agent chosen too", async () => {
    mockIPC((cmd) => {
      if (cmd === "agent_presets") return presets;
      if (cmd === "check_agents") throw { code: "internal", message: "the agents could not be checked: too many open files" };
    });
    render(<Harness />);
    await userEvent.setup().click(await screen.findByTestId("agents-check-all"));
    expect(await screen.findByTestId("agents-check-all-error")).toHaveTextContent(/too many open files/);
  });

  it("a preset's program can be another install of it, and it stays that preset", async () => {
    mockIPC((cmd) => (cmd === "agent_presets" ? presets : undefined));
    let last: ExternalAgent | null = null;
    render(<Harness start={{ name: "opencode", command: "opencode", args: ["acp"], env: {} }} onAgent={(a) => (last = a)} />);
    const user = userEvent.setup();
    await screen.findByRole("option", { name: "OpenCode over ACP" });
    const program = screen.getByTestId("agent-program");
    await user.clear(program);
    await user.type(program, "/home/me/.bun/bin/opencode");
    expect(last).toEqual({ name: "opencode", command: "/home/me/.bun/bin/opencode", args: ["acp"], env: {} });
    expect(screen.getByTestId("agent-select"), "still OpenCode, with its label and hints").toHaveValue("opencode");
    expect(screen.getByTestId("agent-found")).toHaveTextContent("Runs /home/me/.bun/bin/opencode acp, the program you chose.");
  });

  it("any other ACP agent is a command line, named after its program; built-in clears it", async () => {
    mockIPC((cmd) => (cmd === "agent_presets" ? presets : undefined));
    let last: ExternalAgent | null = null;
    render(<Harness onAgent={(a) => (last = a)} />);
    const user = userEvent.setup();
    await screen.findByRole("option", { name: "OpenCode over ACP" });
    await user.selectOptions(screen.getByTestId("agent-select"), "custom");
    await user.type(screen.getByTestId("agent-command"), "/opt/bin/my-agent --acp");
    expect(last).toEqual({ name: "my-agent", command: "/opt/bin/my-agent", args: ["--acp"], env: {} });
    await user.selectOptions(screen.getByTestId("agent-select"), "builtin");
    expect(last, "the built-in agent is no external agent").toBeNull();
    expect(customAgent("   ")).toBeNull();
  });

  it("a custom agent's command line takes quotes as a shell does, and is shown back the same way", () => {
    const agent = customAgent(`"/opt/My Agent/bin/agent" --acp --name 'two words' a\\ b`);
    expect(agent).toEqual({ name: "agent", command: "/opt/My Agent/bin/agent", args: ["--acp", "--name", "two words", "a b"], env: {} });
    expect(customAgent(commandLine(agent!)), "what is shown reads back as the same agent").toEqual(agent);
    expect(customAgent(`node "unfinished`), "an unclosed quote runs to the end").toEqual({ name: "node", command: "node", args: ["unfinished"], env: {} });
  });

  it("the agent's environment is NAME=value lines, and a key can come from Finishline's environment", async () => {
    mockIPC((cmd) => (cmd === "agent_presets" ? presets : undefined));
    let last: ExternalAgent | null = null;
    render(<Harness start={{ name: "gemini", command: "gemini", args: ["--experimental-acp"], env: {} }} onAgent={(a) => (last = a)} />);
    const user = userEvent.setup();
    const env = await screen.findByTestId("agent-env");
    expect(screen.getByTestId("agent-section"), "the hint shows the syntax exactly as it is typed").toHaveTextContent("${VAR} passes yours");
    expect(screen.getByTestId("agent-section")).not.toHaveTextContent("$${VAR}");
    await user.type(env, "GEMINI_API_KEY=${{GEMINI_API_KEY}{enter}not a line{enter}MODE = fast");
    expect(last!.env, "lines without = are dropped; ${VAR} is kept for the engine to read at start").toEqual({ GEMINI_API_KEY: "${GEMINI_API_KEY}", MODE: "fast" });
  });

  it("after Save puts a typed key in the keychain, the box shows @keychain, not the key", async () => {
    mockIPC((cmd) => (cmd === "agent_presets" ? presets : undefined));
    const gemini = { name: "gemini", command: "gemini", args: ["--experimental-acp"], env: {} };
    const { rerender } = render(<AgentSection agent={gemini} onChange={() => {}} />);
    const user = userEvent.setup();
    await user.type(await screen.findByTestId("agent-env"), "GEMINI_API_KEY=AIza-secret");
    // The saved settings come back, the key kept in the keychain.
    rerender(<AgentSection agent={{ ...gemini, env: { GEMINI_API_KEY: "@keychain" } }} onChange={() => {}} />);
    expect(screen.getByTestId("agent-env")).toHaveValue("GEMINI_API_KEY=@keychain");
  });
});
