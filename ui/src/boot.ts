// What the shell hands the window before any script runs (src-tauri/src/desktop.rs, `Boot`):
// the settings for the first screen and whether to report timings. Without it (tests, a browser)
// the app asks over IPC as before. Asking cost a round trip and a second render on every start.
import { AppError, type ErrorCode, type SettingsView } from "./ipc";

interface Boot {
  settings: SettingsView | null;
  settings_error: { code: ErrorCode; message: string } | null;
  perf: boolean;
}

function boot(): Boot | undefined {
  // A reload runs the shell's script again with the settings of the launch, which may be stale.
  const nav = performance.getEntriesByType?.("navigation")[0] as PerformanceNavigationTiming | undefined;
  if (nav?.type === "reload") return undefined;
  return (window as { __FINISHLINE_BOOT__?: Boot }).__FINISHLINE_BOOT__;
}

/** The settings the window started with, or why they could not be read; undefined: ask. */
export function bootSettings(): { view: SettingsView } | { error: AppError } | undefined {
  const b = boot();
  if (b?.settings) return { view: b.settings };
  if (b?.settings_error) return { error: new AppError(b.settings_error.code, b.settings_error.message) };
  return undefined;
}

/** Whether timings are reported, if the shell said so at start. */
export function bootPerf(): boolean | undefined {
  return boot()?.perf;
}
