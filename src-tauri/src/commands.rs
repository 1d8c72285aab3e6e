//! IPC commands. Errors cross as the engine's `{code, message}`.

use finishline_engine::settings::STORE_KEY;
use finishline_engine::{Error, Settings, SettingsView};
use tauri::AppHandle;
use tauri_plugin_store::StoreExt;

/// tauri-plugin-store resolves this inside the app's data folder; the CLI reads the same file.
const STORE_FILE: &str = "settings.json";

fn store_error(e: tauri_plugin_store::Error) -> Error {
    Error::SettingsUnreadable(e.to_string())
}

#[tauri::command]
pub fn get_settings(app: AppHandle) -> Result<SettingsView, Error> {
    let store = app.store(STORE_FILE).map_err(store_error)?;
    Settings::from_store_value(store.get(STORE_KEY)).map(SettingsView::from)
}

#[tauri::command]
pub fn save_settings(app: AppHandle, settings: Settings) -> Result<SettingsView, Error> {
    settings.validate()?;
    let store = app.store(STORE_FILE).map_err(store_error)?;
    store.set(STORE_KEY, serde_json::to_value(&settings).map_err(|e| Error::Internal(e.to_string()))?);
    store.save().map_err(|e| Error::Io(std::io::Error::other(e.to_string())))?;
    Ok(settings.into())
}
