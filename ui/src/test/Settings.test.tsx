import { render, screen } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { mockIPC } from "@tauri-apps/api/mocks";
import { describe, expect, it, vi } from "vitest";
import type { Settings } from "../ipc";
import { SettingsScreen } from "../screens/Settings";
import { view } from "./fixtures";

describe("Settings", () => {
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

  it("shows the engine's message when a field is wrong, keeping what was typed", async () => {
    mockIPC((cmd) => {
      if (cmd === "save_settings") throw { code: "invalid_settings", message: "provider.base_url: “localhost 8080” is not a URL" };
    });
    render(<SettingsScreen view={view()} onSaved={() => {}} />);
    const user = userEvent.setup();
    await user.type(screen.getByTestId("provider-base-url"), "localhost 8080");
    await user.click(screen.getByTestId("save-settings"));
    expect(await screen.findByTestId("settings-error")).toHaveTextContent("is not a URL");
    expect(screen.getByTestId("provider-base-url")).toHaveValue("localhost 8080");
  });
});

describe("Settings, more", () => {
  it("Test connection reports the models, or says what is wrong", async () => {
    let fail = false;
    mockIPC((cmd) => {
      if (cmd === "test_connection") {
        if (fail) throw { code: "invalid_input", message: "Could not connect to the provider at http://127.0.0.1:9/v1. Check the base URL and that the server is running." };
        return { models: ["smollm2", "other"], model_listed: false };
      }
    });
    render(<SettingsScreen view={view({ base_url: "http://127.0.0.1:8931/v1", model: "gpt-x" }, true)} onSaved={() => {}} />);
    const user = userEvent.setup();
    await user.click(screen.getByTestId("test-connection"));
    expect(await screen.findByTestId("connection-report")).toHaveTextContent("Connected: 2 models; “gpt-x” is not among them.");
    fail = true;
    await user.click(screen.getByTestId("test-connection"));
    await vi.waitFor(() => expect(screen.getByTestId("connection-report")).toHaveTextContent("server is running"));
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
    await user.type(screen.getByTestId("verify-commands"), "/home/me/p: cargo test{enter}/home/me/p: cargo clippy{enter}junk line");
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
    await user.type(screen.getByTestId("prices"), "gpt-4.1-mini: 0.4 1.6{enter}broken: x y");
    await user.click(screen.getByTestId("save-settings"));
    await screen.findByText("Saved");
    expect(sent?.prices).toEqual({ "gpt-4.1-mini": { input_per_mtok: 0.4, output_per_mtok: 1.6 } });
  });
});
