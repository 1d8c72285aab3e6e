fn main() {
    // The app manifest lists our commands so that capabilities can grant them one by one:
    // the webview may call only what capabilities/default.json allows.
    let manifest = tauri_build::AppManifest::new().commands(&[
        "get_settings",
        "save_settings",
        "start_session",
        "subscribe_session",
        "cancel_run",
        "respond_permission",
        "answer_question",
        "submit_review",
        "send_message",
        "list_sessions",
        "search_sessions",
        "get_session",
        "export_session",
        "save_session_export",
        "delete_session",
        "test_connection",
        "provider_presets",
        "key_status",
        "save_key",
        "forget_key",
        "mcp_status",
        "export_settings",
        "import_settings",
        "confirm_import",
        "open_link",
        "survey_workspace",
        "checkpoint_usage",
        "free_checkpoints",
        "perf_enabled",
        "perf_report",
        "startup_action",
    ]);
    tauri_build::try_build(tauri_build::Attributes::new().config_path("../tauri.conf.json").app_manifest(manifest)).expect("tauri build step");
}
