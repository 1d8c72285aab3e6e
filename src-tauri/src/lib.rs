//! The desktop shell. Each command is a one-liner into the engine; no product logic lives here.

mod agent_login;
mod attempts;
mod commands;
mod desktop;
mod files;
mod state;
mod task_folders;

use tauri::{Emitter, Manager};

/// A desktop notification when the person is needed and the window is not in front. Failing to
/// notify (no notification service) is not an error: the window shows the same state.
fn notify_if_unfocused(app: &tauri::AppHandle, status: finishline_engine::domain::SessionStatus) {
    use tauri_plugin_notification::NotificationExt;
    let focused = app.get_webview_window("main").and_then(|w| w.is_focused().ok()).unwrap_or(true);
    if focused {
        return;
    }
    let body = match status {
        finishline_engine::domain::SessionStatus::AwaitingReview => "A task is ready for your review.",
        _ => "A task is waiting for your permission or answer.",
    };
    let _ = app.notification().builder().title("Finishline").body(body).show();
}

/// WebKitGTK composites with OpenGL. Without a GPU (no DRM render node: a VM, a remote desktop,
/// Xvfb) that GL is software (llvmpipe), and every time the page grows past a tile it stalls a
/// frame for ~100 ms; the footprint benchmark found this while text streamed in. Painting without
/// compositing is smooth there. With a GPU nothing changes; WEBKIT_DISABLE_COMPOSITING_MODE set
/// by the person always wins.
#[cfg(target_os = "linux")]
fn avoid_software_gl_compositing() {
    if std::env::var_os("WEBKIT_DISABLE_COMPOSITING_MODE").is_some() {
        return;
    }
    let has_gpu = std::fs::read_dir("/dev/dri").map(|d| d.flatten().any(|e| e.file_name().to_string_lossy().starts_with("renderD"))).unwrap_or(false);
    if !has_gpu {
        // Called first thing in `run`, before WebKit or any other thread starts.
        std::env::set_var("WEBKIT_DISABLE_COMPOSITING_MODE", "1");
    }
}

/// Opens the window, then the history, and starts what runs beside the window for the app's
/// whole life: the history broadcasts, the lease heartbeat, and the clean-up after a crash.
fn setup(app: &mut tauri::App) -> Result<(), Box<dyn std::error::Error>> {
    desktop::perf_mark("setup");
    // The window first: its web process starts loading the page while the history
    // database opens. Nothing reaches the commands before setup returns.
    desktop::open_main_window(app)?;
    desktop::perf_mark("window");
    let data_dir = app.path().app_data_dir()?;
    let state = state::AppState::open(data_dir)?;
    desktop::perf_mark("store");
    // Rare broadcasts: the history list refreshes when a session's status changes.
    let mut changes = state.store.history_changes();
    let handle = app.handle().clone();
    tauri::async_runtime::spawn(async move {
        use finishline_engine::domain::SessionStatus;
        use finishline_engine::store::HistoryChange;
        while let Some(change) = changes.next().await {
            let session = match change {
                HistoryChange::Status { session, status } => {
                    if matches!(status, SessionStatus::AwaitingApproval | SessionStatus::AwaitingReview) {
                        notify_if_unfocused(&handle, status);
                    }
                    Some(session)
                }
                HistoryChange::Created { session } | HistoryChange::WorktreeRemoved { session } => Some(session),
                // Some changes were dropped: every list reloads.
                HistoryChange::Missed => None,
            };
            let _ = handle.emit("history-changed", &session);
        }
    });
    // Leases kept alive, and a cancel asked from a terminal of a task the window runs heeded.
    let runtime = state.runtime.clone();
    tauri::async_runtime::spawn(async move { runtime.keep_alive() });
    // Sessions the CLI (or another app) starts and decides reach the sidebar and History too:
    // their changes are not broadcast in this process, so the history is looked at every two
    // seconds, and every list reloads when it moved. The first look takes note now, before the
    // window reads any list: taken later, what a terminal did meanwhile was never shown.
    let store = state.store.clone();
    store.changed_elsewhere();
    let handle = app.handle().clone();
    tauri::async_runtime::spawn(async move {
        loop {
            tokio::time::sleep(std::time::Duration::from_secs(2)).await;
            if store.changed_elsewhere() {
                let _ = handle.emit("history-changed", None::<finishline_engine::domain::SessionId>);
            }
        }
    });
    app.manage(state);
    // A revert or a landing a crash cut short is finished, and worktrees no task needs
    // are removed, off the window's path.
    let handle = app.handle().clone();
    tauri::async_runtime::spawn_blocking(move || handle.state::<state::AppState>().finish_interrupted());
    desktop::quit_on_stop_signals(app.handle());
    Ok(())
}

pub fn run() {
    desktop::perf_mark("main");
    #[cfg(target_os = "linux")]
    avoid_software_gl_compositing();
    let context = tauri::generate_context!("tauri.conf.json");
    let instance = desktop::instance_name(&context.config().identifier);
    tauri::Builder::default()
        // First, so a second launch hands over its arguments and exits before opening anything.
        .plugin(tauri_plugin_single_instance::Builder::new().dbus_id(instance).callback(|app, argv, _cwd| desktop::second_launch(app, argv)).build())
        .plugin(tauri_plugin_window_state::Builder::default().build())
        .plugin(tauri_plugin_dialog::init())
        .plugin(tauri_plugin_notification::init())
        .plugin(tauri_plugin_opener::init())
        .setup(setup)
        .invoke_handler(tauri::generate_handler![
            commands::get_settings,
            commands::set_aside_settings,
            commands::save_settings,
            commands::check_settings,
            commands::start_session,
            commands::run_plan,
            commands::agent_presets,
            commands::check_agent,
            commands::check_agents,
            agent_login::agent_login,
            commands::subscribe_session,
            commands::unsubscribe_session,
            commands::cancel_run,
            commands::respond_permission,
            commands::answer_question,
            commands::submit_review,
            commands::revert_rejected,
            commands::review_ended,
            commands::changed_since_run,
            commands::resolve_conflict,
            commands::comment_review,
            commands::remove_review_comment,
            commands::copy_ignored,
            commands::review_file,
            commands::dismiss_finding,
            commands::restore_finding,
            commands::workspace_info,
            commands::workspace_uncommitted,
            commands::make_repository,
            commands::open_worktree,
            commands::discard_session,
            files::worktree_usage,
            files::clean_up_worktrees,
            commands::send_message,
            commands::list_sessions,
            commands::search_sessions,
            commands::evaluator_trust,
            attempts::start_attempts,
            attempts::attempt_group,
            attempts::attempt_judge,
            attempts::attempt_differences,
            attempts::choose_attempt,
            attempts::cancel_attempts,
            attempts::reject_attempts,
            attempts::compare_attempts,
            attempts::stop_comparing,
            attempts::agent_trust,
            commands::get_session,
            files::export_session,
            files::save_session_export,
            files::export_group,
            files::save_group_export,
            commands::delete_session,
            commands::test_connection,
            commands::provider_presets,
            commands::key_status,
            commands::save_key,
            commands::forget_key,
            commands::mcp_status,
            files::export_settings,
            files::import_settings,
            files::confirm_import,
            files::open_link,
            files::survey_workspace,
            files::checkpoint_usage,
            files::free_checkpoints,
            commands::perf_enabled,
            commands::perf_report,
            commands::startup_action,
            commands::history_set_aside,
            commands::retry_now,
            commands::interrupted_at_start,
            desktop::about,
            desktop::quit,
        ])
        .on_window_event(|window, event| {
            if let tauri::WindowEvent::CloseRequested { api, .. } = event {
                desktop::close_requested(window, api);
            }
        })
        .build(context)
        .expect("error while starting Finishline")
        .run(|app, event| {
            // MCP servers are child processes: they go when the app goes.
            if let tauri::RunEvent::Exit = event {
                if let Some(state) = app.try_state::<state::AppState>() {
                    state.stop_mcp();
                }
            }
        });
}
