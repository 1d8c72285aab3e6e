//! What a desktop app does besides its screens: one instance per data folder, launches handed to
//! the running window, an About box, and a close that asks first while a task runs.

use std::path::{Path, PathBuf};

use serde::Serialize;
use tauri::{AppHandle, Emitter, Manager, State};

use crate::commands::startup_action_from;
use crate::state::AppState;

/// The app's data folder as Tauri resolves it on Linux (`$XDG_DATA_HOME/<identifier>`), known
/// before the app is built, so the single-instance name can depend on it.
fn data_dir_before_setup(identifier: &str) -> Option<PathBuf> {
    let base = std::env::var_os("XDG_DATA_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".local/share")))?;
    Some(base.join(identifier))
}

/// The D-Bus name that makes a second launch find the first. One instance per *data folder*,
/// not per machine: what must never happen is two engines on one database, while a person (or
/// a test) running Finishline with another `XDG_DATA_HOME` is a different app's worth of history.
pub fn instance_name(identifier: &str) -> String {
    let folder = data_dir_before_setup(identifier).map(|p| p.to_string_lossy().into_owned()).unwrap_or_default();
    let hash = finishline_engine::stable_hash::fnv1a(folder.as_bytes());
    format!("{identifier}.i{hash:016x}")
}

/// With FINISHLINE_PERF=1, when the shell reached `name`, in ms since the first mark, on stderr
/// beside the UI's marks (docs/benchmarks.md, section 6: where a start goes).
pub fn perf_mark(name: &str) {
    static FIRST: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    let first = *FIRST.get_or_init(std::time::Instant::now);
    if crate::commands::perf_enabled() {
        eprintln!("finishline-perf rust_{name} {:.3}", first.elapsed().as_secs_f64() * 1000.0);
    }
}

/// What the window needs for its first screen, handed over before its script runs: the
/// settings (or why they could not be read) and whether to report timings. Asking for them over
/// IPC after the first render cost a round trip and a second render on every start
/// (docs/benchmarks.md, section 6).
#[derive(Serialize)]
struct Boot {
    settings: Option<finishline_engine::SettingsView>,
    settings_error: Option<finishline_engine::Error>,
    perf: bool,
}

/// The main window, created here rather than from the config so that it starts with [`Boot`].
pub fn open_main_window(app: &tauri::App) -> Result<(), Box<dyn std::error::Error>> {
    let config = app.config().app.windows.iter().find(|w| w.label == "main").ok_or("tauri.conf.json has no main window")?.clone();
    let (settings, settings_error) = match crate::commands::settings_view(app.handle()) {
        Ok(s) => (Some(s), None),
        Err(e) => (None, Some(e)),
    };
    let boot = Boot { settings, settings_error, perf: crate::commands::perf_enabled() };
    // JSON is a JavaScript expression; the script is injected, not parsed as HTML, so nothing in
    // the settings can end it early.
    let script = format!("window.__FINISHLINE_BOOT__ = {};", serde_json::to_string(&boot)?);
    tauri::WebviewWindowBuilder::from_config(app.handle(), &config)?.initialization_script(&script).build()?;
    Ok(())
}

/// Brings the main window to the front: unminimised, shown, focused.
pub fn focus_main(app: &AppHandle) {
    if let Some(w) = app.get_webview_window("main") {
        let _ = w.unminimize();
        let _ = w.show();
        let _ = w.set_focus();
    }
}

/// A second launch: its `--task` / `--open-session` go to this window, which comes to the front.
pub fn second_launch(app: &AppHandle, argv: Vec<String>) {
    // A launch while the closed window's app waits for a decision to finish wants the app: it
    // stays (see [`close_requested`]), rather than exiting under the window shown again.
    app.state::<AppState>().reopen();
    focus_main(app);
    if let Some(action) = startup_action_from(&argv) {
        app.state::<AppState>().set_startup_action(action);
        // The window asks for the action (and takes it), exactly as it does at its own start.
        let _ = app.emit("startup-action", ());
    }
}

/// The window's close button. With a task running the window stays and asks (the UI shows what
/// closing would stop); otherwise it closes as any window does, and the app waits for a decision
/// under way (see [`stop_all_and_exit`]).
pub fn close_requested(window: &tauri::Window, api: &tauri::CloseRequestApi) {
    let state = window.state::<AppState>();
    let running = state.running_sessions().len();
    if running > 0 && !state.quit_confirmed() {
        api.prevent_close();
        let _ = window.emit("close-requested", running);
    } else if state.runtime.deciding_now() && !state.quit_confirmed() {
        // A decision under way: the window goes now, the app once the decision has ended, unless
        // the app is launched again meanwhile.
        api.prevent_close();
        let _ = window.hide();
        window.state::<AppState>().close_hidden();
        let app = window.app_handle().clone();
        tauri::async_runtime::spawn(async move { stop_all_and_exit(&app, Reopen::CallsOff).await });
    }
}

#[derive(Serialize)]
pub struct About {
    pub version: String,
    pub data_dir: String,
    pub database: String,
    pub settings_file: String,
    pub checkpoints_dir: String,
}

/// The About box: the one version of the whole workspace and where everything is kept.
#[tauri::command]
pub fn about(app: AppHandle, state: State<'_, AppState>) -> About {
    let d = &state.data_dir;
    About {
        version: app.package_info().version.to_string(),
        data_dir: d.display().to_string(),
        database: d.join("history.db").display().to_string(),
        settings_file: d.join("settings.json").display().to_string(),
        checkpoints_dir: d.join("checkpoints").display().to_string(),
    }
}

/// Quits: asked by Ctrl+Q, or by "Close anyway" after the close button asked. With
/// `stop_running` false and a task running nothing happens and the count comes back, so the
/// window can ask. Running tasks are cancelled (recorded `cancelled`, not left to look crashed)
/// before the app exits.
#[tauri::command]
pub async fn quit(app: AppHandle, state: State<'_, AppState>, stop_running: bool) -> Result<usize, finishline_engine::Error> {
    let running = state.running_sessions();
    if !running.is_empty() && !stop_running {
        return Ok(running.len());
    }
    stop_all_and_exit(&app, Reopen::Ignored).await;
    Ok(0)
}

/// What a launch does to an exit waiting for a decision to finish.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Reopen {
    /// The close button hid the window: the person launching the app wants it, so it stays.
    CallsOff,
    /// A quit or a stop signal: the exit goes on.
    Ignored,
}

/// Cancels every running task and exits; the exit ends what they started (an agent, a
/// command, an MCP server).
async fn stop_all_and_exit(app: &AppHandle, reopen: Reopen) {
    let state = app.state::<AppState>();
    // A cancelled run records its end within moments; wait for that and for a decision under
    // way, but never hang the quit (a second signal does not wait at all).
    let started = std::time::Instant::now();
    let waits = || {
        let runs = !state.running_sessions().is_empty() && started.elapsed() < std::time::Duration::from_secs(5);
        runs || (state.runtime.deciding_now() && started.elapsed() < std::time::Duration::from_secs(30))
    };
    loop {
        if reopen == Reopen::CallsOff && !state.closing_hidden() {
            return;
        }
        // Looked at again each time: a run or an approve started while the quit waits (a click
        // in the window as it closes) is stopped too, not cut short by the exit.
        for session in &state.running_sessions() {
            state.runtime.cancel(&state.data_dir, session);
        }
        // An approve still checking its landing stops before anything moves and records that it
        // did; one past that point, and a reject's revert, finish: exiting half way would leave
        // them for the next start to finish or report.
        state.runtime.stop_landings();
        if !waits() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    state.confirm_quit();
    app.exit(0);
}

/// SIGTERM (a logout, `kill`, a service manager), SIGHUP and SIGINT (Ctrl-C in the terminal that
/// started the app) quit as the window's Quit with "stop them" does: by default they would end
/// the process at once, and every agent and command in a process group of its own would run on
/// until the next start. A second signal does not wait. One the app was started ignoring
/// (`nohup finishline-app`) stays ignored.
pub fn quit_on_stop_signals(app: &AppHandle) {
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        let Some(mut signals) = finishline_engine::stop_signals::StopSignals::listen() else { return };
        for nth in 0.. {
            signals.next().await;
            if nth == 0 {
                let app = app.clone();
                tauri::async_runtime::spawn(async move { stop_all_and_exit(&app, Reopen::Ignored).await });
            } else {
                // Not `stop_mcp`, which blocks on this runtime: every process the tasks started,
                // MCP servers with them, is in the registry.
                app.state::<AppState>().processes.end_all();
                std::process::exit(1);
            }
        }
    });
}
