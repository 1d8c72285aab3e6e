//! Commands that read or write files the person names. The webview never passes a path: the
//! shell asks the person in a native save or open dialog, so a compromised page can write or read
//! nothing the person did not choose. Links open in the system browser, never in the webview.

use std::path::PathBuf;

use finishline_engine::config::settings::McpServerSettings;
use finishline_engine::domain::{GroupId, SessionId};
use finishline_engine::store::export;
use finishline_engine::{Error, Settings, SettingsView};
use serde::Serialize;
use tauri::{AppHandle, State};
use tauri_plugin_dialog::DialogExt;

use crate::commands::{save_settings, settings};
use crate::state::AppState;

/// A settings file is a few kilobytes; anything much larger is not one.
const MAX_SETTINGS_FILE: u64 = 4 * 1024 * 1024;

fn io(path: &std::path::Path, verb: &str, e: std::io::Error) -> Error {
    Error::Io(std::io::Error::new(e.kind(), format!("could not {verb} {}: {e}", path.display())))
}

/// The native save dialog; `None` when the person cancels.
async fn ask_where_to_save(app: &AppHandle, title: &str, file_name: String, filter: (&'static str, &'static str)) -> Result<Option<PathBuf>, Error> {
    let (app, title) = (app.clone(), title.to_string());
    let picked = tauri::async_runtime::spawn_blocking(move || {
        app.dialog().file().set_title(title).set_file_name(file_name).add_filter(filter.0, &[filter.1]).blocking_save_file()
    })
    .await
    .map_err(|e| Error::Internal(e.to_string()))?;
    picked.map(|p| p.into_path().map_err(|e| Error::InvalidInput(format!("that place cannot be written to: {e}")))).transpose()
}

/// The native open dialog for one file; `None` when the person cancels.
async fn ask_which_file(app: &AppHandle, title: &str) -> Result<Option<PathBuf>, Error> {
    let (app, title) = (app.clone(), title.to_string());
    let picked = tauri::async_runtime::spawn_blocking(move || app.dialog().file().set_title(title).add_filter("JSON", &["json"]).blocking_pick_file())
        .await
        .map_err(|e| Error::Internal(e.to_string()))?;
    picked.map(|p| p.into_path().map_err(|e| Error::InvalidInput(format!("that file cannot be read: {e}")))).transpose()
}

/// What is exported: one session, or a group of attempts whole.
enum Exported<'a> {
    Session(&'a SessionId),
    Group(&'a GroupId),
}

/// The export's text and the title its file is named after.
fn export_text(state: &AppState, what: Exported<'_>, format: &str) -> Result<(String, String), Error> {
    let json = match format {
        "json" => true,
        "md" | "markdown" => false,
        other => return Err(Error::InvalidInput(format!("unknown export format `{other}`; use md or json"))),
    };
    let pretty = |v: serde_json::Value| serde_json::to_string_pretty(&v).map_err(|e| Error::Internal(e.to_string()));
    match what {
        Exported::Session(id) => {
            let t = state.store.timeline(id)?;
            Ok((if json { pretty(export::to_json(&t))? } else { export::to_markdown(&t) }, t.session.title))
        }
        Exported::Group(group) => {
            let g = finishline_engine::agent::group_export::group_export(&state.store, group)?;
            Ok((if json { pretty(g.to_json())? } else { g.to_markdown() }, format!("attempts {}", g.title())))
        }
    }
}

/// The export as text, to show and copy.
#[tauri::command]
pub fn export_session(state: State<'_, AppState>, session_id: SessionId, format: String) -> Result<String, Error> {
    Ok(export_text(&state, Exported::Session(&session_id), &format)?.0)
}

/// A group of attempts exported whole (its ranking and choice, then every attempt's session), to
/// show and copy: with none chosen, no one session tells its story.
#[tauri::command]
pub fn export_group(state: State<'_, AppState>, group: GroupId, format: String) -> Result<String, Error> {
    Ok(export_text(&state, Exported::Group(&group), &format)?.0)
}

/// Saves the export where the person says in the save dialog; the path written, or `None` when
/// they cancelled.
#[tauri::command]
pub async fn save_session_export(app: AppHandle, state: State<'_, AppState>, session_id: SessionId, format: String) -> Result<Option<String>, Error> {
    let (text, title) = export_text(&state, Exported::Session(&session_id), &format)?;
    save_export(&app, "Export session", text, &title, &format).await
}

/// Saves a group's export, as [`save_session_export`] a session's.
#[tauri::command]
pub async fn save_group_export(app: AppHandle, state: State<'_, AppState>, group: GroupId, format: String) -> Result<Option<String>, Error> {
    let (text, title) = export_text(&state, Exported::Group(&group), &format)?;
    save_export(&app, "Export the attempts", text, &title, &format).await
}

/// `heading`: the save dialog's title, naming what is saved.
async fn save_export(app: &AppHandle, heading: &str, text: String, title: &str, format: &str) -> Result<Option<String>, Error> {
    let stem: String = title.chars().map(|c| if c.is_alphanumeric() || c == '-' { c } else { '-' }).take(60).collect();
    let (name, filter) = if format == "json" { (format!("{stem}.json"), ("JSON", "json")) } else { (format!("{stem}.md"), ("Markdown", "md")) };
    let Some(path) = ask_where_to_save(app, heading, name, filter).await? else { return Ok(None) };
    std::fs::write(&path, text).map_err(|e| io(&path, "write", e))?;
    Ok(Some(path.display().to_string()))
}

/// Writes the settings, without any secret, where the person says; `None` when they cancelled.
#[tauri::command]
pub async fn export_settings(app: AppHandle) -> Result<Option<String>, Error> {
    let text = settings(&app)?.export_json();
    let Some(path) = ask_where_to_save(&app, "Export settings", "finishline-settings.json".into(), ("JSON", "json")).await? else { return Ok(None) };
    std::fs::write(&path, text).map_err(|e| io(&path, "write", e))?;
    Ok(Some(path.display().to_string()))
}

/// What an import did, or what it needs the person to confirm first.
#[derive(Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
// Made once per import and sent straight to the page.
#[allow(clippy::large_enum_variant)]
pub enum ImportOutcome {
    Cancelled,
    Imported {
        settings: SettingsView,
        path: String,
    },
    /// The file would run programs, loosen a permission or send requests elsewhere, as the
    /// current settings do not: shown before anything is saved.
    Confirm {
        servers: Vec<ServerPreview>,
        agent: Option<String>,
        allowed: Vec<String>,
        verify: Vec<String>,
        addresses: Vec<String>,
        auto_approve: bool,
        path: String,
    },
}

#[derive(Serialize)]
pub struct ServerPreview {
    name: String,
    command: String,
    args: Vec<String>,
    /// Names only: values are secrets.
    env: Vec<String>,
}

impl From<McpServerSettings> for ServerPreview {
    fn from(s: McpServerSettings) -> Self {
        ServerPreview { name: s.name, command: s.command, args: s.args, env: s.env.into_keys().collect() }
    }
}

/// Reads a settings file the person picks; only a valid one replaces the current settings, and
/// one that would run a program, loosen a permission or send requests elsewhere waits for
/// [`confirm_import`].
#[tauri::command]
pub async fn import_settings(app: AppHandle, state: State<'_, AppState>) -> Result<ImportOutcome, Error> {
    let Some(path) = ask_which_file(&app, "Import settings").await? else { return Ok(ImportOutcome::Cancelled) };
    let meta = std::fs::metadata(&path).map_err(|e| io(&path, "read", e))?;
    if meta.len() > MAX_SETTINGS_FILE {
        return Err(Error::InvalidInput(format!("{} is over 4 MB; a settings file is a few kilobytes", path.display())));
    }
    let text = std::fs::read_to_string(&path).map_err(|e| Error::InvalidInput(format!("could not read {} as text: {e}", path.display())))?;
    let current = settings(&app)?;
    let mut imported = Settings::import_json(&text)?;
    // One's own export, imported again, keeps the keys it left out.
    imported.keep_secrets_of(&current);
    let risks = current.import_risks(&imported);
    let shown = path.display().to_string();
    if !risks.is_empty() {
        state.hold_import(imported);
        return Ok(ImportOutcome::Confirm {
            servers: risks.servers.into_iter().map(ServerPreview::from).collect(),
            agent: risks.agent,
            allowed: risks.allowed,
            verify: risks.verify,
            addresses: risks.addresses,
            auto_approve: risks.auto_approve,
            path: shown,
        });
    }
    Ok(ImportOutcome::Imported { settings: save_settings(app, state, imported).await?, path: shown })
}

/// The person's answer to an import that waited for them: save it, or drop it.
#[tauri::command]
pub async fn confirm_import(app: AppHandle, state: State<'_, AppState>, accept: bool) -> Result<Option<SettingsView>, Error> {
    let held = state.take_import().ok_or_else(|| Error::InvalidInput("there is no import waiting; import the file again".into()))?;
    if !accept {
        return Ok(None);
    }
    save_settings(app, state, held).await.map(Some)
}

/// How big the chosen folder is, and whether it is a home folder or `/`: New Task warns first.
#[tauri::command]
pub async fn survey_workspace(path: String) -> Result<finishline_engine::workspace::checkpoint::WorkspaceSurvey, Error> {
    tauri::async_runtime::spawn_blocking(move || finishline_engine::workspace::checkpoint::survey(std::path::Path::new(&path)))
        .await
        .map_err(|e| Error::Internal(e.to_string()))?
}

/// The checkpoint storage of each workspace, for History.
#[tauri::command]
pub async fn checkpoint_usage(state: State<'_, AppState>) -> Result<Vec<finishline_engine::workspace::checkpoint::StoreUsage>, Error> {
    let stores = state.data_dir.join("checkpoints");
    tauri::async_runtime::spawn_blocking(move || finishline_engine::workspace::checkpoint::usage(&stores)).await.map_err(|e| Error::Internal(e.to_string()))
}

/// Frees what no remaining session of that workspace needs; returns the bytes freed.
#[tauri::command]
pub async fn free_checkpoints(state: State<'_, AppState>, id: String) -> Result<u64, Error> {
    let stores = state.data_dir.join("checkpoints");
    let store = state.store.clone();
    tauri::async_runtime::spawn_blocking(move || finishline_engine::agent::decision::free_checkpoints(&store, &stores, &id))
        .await
        .map_err(|e| Error::Internal(e.to_string()))?
}

/// Each task's worktree and the space it takes, for Settings → Storage.
#[tauri::command]
pub async fn worktree_usage(state: State<'_, AppState>) -> Result<Vec<finishline_engine::agent::decision::WorktreeUsage>, Error> {
    let store = state.store.clone();
    tauri::async_runtime::spawn_blocking(move || finishline_engine::agent::decision::worktree_usage(&store))
        .await
        .map_err(|e| Error::Internal(e.to_string()))?
}

/// Removes the worktrees of decided tasks; returns the bytes freed.
#[tauri::command]
pub async fn clean_up_worktrees(state: State<'_, AppState>) -> Result<u64, Error> {
    let (store, data_dir) = (state.store.clone(), state.data_dir.clone());
    tauri::async_runtime::spawn_blocking(move || {
        let before: u64 = finishline_engine::agent::decision::worktree_usage(&store)?.iter().map(|w| w.bytes).sum();
        finishline_engine::agent::decision::finish_interrupted(&store, &data_dir);
        let after: u64 = finishline_engine::agent::decision::worktree_usage(&store)?.iter().map(|w| w.bytes).sum();
        Ok(before.saturating_sub(after))
    })
    .await
    .map_err(|e| Error::Internal(e.to_string()))?
}

/// Opens a web link from model or tool output in the system browser. Only http and https: a
/// `file:` or custom-scheme link could start a program.
#[tauri::command]
pub fn open_link(app: AppHandle, url: String) -> Result<(), Error> {
    let parsed = url::Url::parse(url.trim()).map_err(|e| Error::InvalidInput(format!("“{url}” is not a link ({e})")))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(Error::InvalidInput(format!("only web links open; this one is {}:", parsed.scheme())));
    }
    use tauri_plugin_opener::OpenerExt;
    app.opener().open_url(parsed.as_str(), None::<&str>).map_err(|e| Error::Internal(format!("the browser could not be opened: {e}")))
}
