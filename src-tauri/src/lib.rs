//! The desktop shell. Each command is a one-liner into the engine; no product logic lives here.

mod commands;

pub fn run() {
    tauri::Builder::default()
        .plugin(tauri_plugin_store::Builder::default().build())
        .plugin(tauri_plugin_dialog::init())
        .invoke_handler(tauri::generate_handler![commands::get_settings, commands::save_settings])
        .run(tauri::generate_context!("../tauri.conf.json"))
        .expect("error while running Finishline");
}
