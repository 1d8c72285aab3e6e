// The one place the UI talks to the Rust side. Components import these functions and types;
// they never call `invoke` themselves, so every command name and payload shape lives here.
import { invoke } from "@tauri-apps/api/core";
import { open } from "@tauri-apps/plugin-dialog";

export type ProviderKind = "openai" | "anthropic" | "gemini";
export type Theme = "system" | "light" | "dark";

export interface ProviderSettings {
  kind: ProviderKind;
  base_url: string;
  model: string;
  api_key_env: string | null;
}

export interface Limits {
  max_steps: number;
  continuation_budget: number;
  max_retries: number;
}

export interface Settings {
  provider: ProviderSettings;
  evaluator_model: string | null;
  limits: Limits;
  theme: Theme;
}

export interface SettingsView {
  settings: Settings;
  /** Decided by the engine: a provider with somewhere to send tasks and a model to ask. */
  provider_ready: boolean;
}

export type ErrorCode = "invalid_settings" | "settings_unreadable" | "io" | "internal" | "ipc";

/** Every failure the UI shows: a code to branch on, a message written for the person. */
export class AppError extends Error {
  constructor(
    public code: ErrorCode,
    message: string,
  ) {
    super(message);
  }
}

function toAppError(e: unknown): AppError {
  if (e && typeof e === "object" && "code" in e && "message" in e) {
    const { code, message } = e as { code: ErrorCode; message: string };
    return new AppError(code, String(message));
  }
  return new AppError("ipc", e instanceof Error ? e.message : String(e));
}

async function call<T>(cmd: string, args?: Record<string, unknown>): Promise<T> {
  try {
    return await invoke<T>(cmd, args);
  } catch (e) {
    throw toAppError(e);
  }
}

export const ipc = {
  getSettings: () => call<SettingsView>("get_settings"),
  saveSettings: (settings: Settings) => call<SettingsView>("save_settings", { settings }),
  /** Opens the system folder picker; resolves to null when the person cancels. */
  pickWorkspace: async (): Promise<string | null> => {
    try {
      const picked = await open({ directory: true, multiple: false, title: "Choose the workspace folder" });
      return typeof picked === "string" ? picked : null;
    } catch (e) {
      throw toAppError(e);
    }
  },
};
