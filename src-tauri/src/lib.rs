//! The desktop shell. Each command is a one-liner into the engine; no product logic lives here.

mod commands;
mod state;

use tauri::{Emitter, Manager};

pub fn run() {
    tauri::Builder::default()
        .plugin(tauri_plugin_store::Builder::default().build())
        .plugin(tauri_plugin_dialog::init())
        .setup(|app| {
            let data_dir = app.path().app_data_dir()?;
            let state = state::AppState::open(data_dir)?;
            // Rare broadcasts: the history list refreshes when a session's status changes.
            let mut all = state.store.follow_all();
            let handle = app.handle().clone();
            tauri::async_runtime::spawn(async move {
                while let Ok(env) = all.recv().await {
                    if matches!(env.event, finishline_engine::event::EngineEvent::StatusChanged { .. } | finishline_engine::event::EngineEvent::SessionCreated { .. }) {
                        let _ = handle.emit("history-changed", &env.session_id);
                    }
                }
            });
            let store = state.store.clone();
            tauri::async_runtime::spawn(async move {
                loop {
                    tokio::time::sleep(std::time::Duration::from_secs(5)).await;
                    let _ = store.heartbeat();
                }
            });
            app.manage(state);
            Ok(())
        })
        .invoke_handler(tauri::generate_handler![
            commands::get_settings,
            commands::save_settings,
            commands::start_session,
            commands::subscribe_session,
            commands::cancel_run,
            commands::respond_permission,
            commands::answer_question,
            commands::submit_review,
            commands::send_message,
            commands::list_sessions,
            commands::search_sessions,
            commands::get_session,
            commands::export_session,
            commands::delete_session,
            commands::test_connection,
        ])
        .run(tauri::generate_context!("../tauri.conf.json"))
        .expect("error while running Finishline");
}
