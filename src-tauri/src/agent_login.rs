//! "Log in to <agent>": the window's buttons for a session whose agent needs a login. The way
//! is looked up in what the engine recorded for the session (never a command from the page): the
//! agent's own login command in a terminal, a key for the keychain, or `authenticate`. The window
//! runs the task again once this returns.

use finishline_engine::domain::SessionId;
use finishline_engine::event::EngineEvent;
use finishline_engine::external::login::LoginMethod;
use finishline_engine::external::{login_run, ExternalAgent};
use finishline_engine::{Error, ErrorCode, Settings};
use tauri::{AppHandle, State};

use crate::state::AppState;

/// How long an agent may take to start and log in through `authenticate` (a browser flow).
const AUTHENTICATE_LIMIT: std::time::Duration = std::time::Duration::from_secs(600);

#[tauri::command]
pub async fn agent_login(app: AppHandle, state: State<'_, AppState>, session_id: SessionId, method_id: String, key: Option<String>) -> Result<(), Error> {
    let events = state.store.events(&session_id, 0)?;
    let (agent_name, method) = events
        .iter()
        .rev()
        .find_map(|e| match &e.event {
            EngineEvent::AgentLoginNeeded { agent, methods, .. } => Some((agent.clone(), methods.iter().find(|m| m.id() == method_id).cloned())),
            _ => None,
        })
        .ok_or_else(|| Error::NotFound(format!("no login was asked for in session {session_id}")))?;
    let method = method.ok_or_else(|| Error::NotFound(format!("the agent did not offer the way to log in “{method_id}”")))?;
    let mut settings = crate::commands::settings(&app)?;
    let agent = agent_of(&settings, &agent_name)?;
    let workspace = std::path::PathBuf::from(state.store.session(&session_id)?.workspace);
    let failed = |message: String| Error::External { code: ErrorCode::ExternalAgentAuth, message };
    match &method {
        LoginMethod::Terminal { .. } => {
            let Some(terminal) = login_run::terminal_program() else {
                return Err(failed(format!(
                    "No terminal program was found here. Run `{}` in a terminal yourself, then click Retry.",
                    method.command_line().unwrap_or_default()
                )));
            };
            let ok = login_run::run_in_terminal(&terminal, &method, &agent.env, &state.data_dir).await.map_err(failed)?;
            if !ok {
                return Err(failed(format!(
                    "The login did not finish: `{}` ended with an error. Try again, or run it in a terminal yourself.",
                    method.command_line().unwrap_or_default()
                )));
            }
        }
        LoginMethod::Key { vars, authenticate, id, .. } => {
            let key = key.filter(|k| !k.trim().is_empty()).ok_or_else(|| Error::InvalidInput(format!("enter the key for {}", vars.join(" and "))))?;
            let keys = state.keys.clone();
            let (name, vars) = (agent.name.clone(), vars.clone());
            settings = tauri::async_runtime::spawn_blocking(move || -> Result<Settings, Error> {
                for var in &vars {
                    keys.save_agent_key(&mut settings, &name, var, &key)?;
                }
                Ok(settings)
            })
            .await
            .map_err(|e| Error::Internal(e.to_string()))??;
            crate::commands::store_settings(&app, &settings)?;
            if *authenticate {
                let secrets = state.keys.agent_secrets(&settings, &agent.name);
                login_run::authenticate(&agent, &workspace, id, &secrets, AUTHENTICATE_LIMIT).await.map_err(|f| failed(f.message))?;
            }
        }
        LoginMethod::Agent { id, .. } => {
            let secrets = state.keys.agent_secrets(&settings, &agent.name);
            login_run::authenticate(&agent, &workspace, id, &secrets, AUTHENTICATE_LIMIT).await.map_err(|f| failed(f.message))?;
        }
    }
    Ok(())
}

/// The agent a session's login is for: the one set up in Settings, else the preset by that name.
fn agent_of(settings: &Settings, name: &str) -> Result<ExternalAgent, Error> {
    settings
        .agent
        .clone()
        .filter(|a| a.name == name)
        .or_else(|| ExternalAgent::preset(name))
        .ok_or_else(|| Error::NotFound(format!("the agent {name} is no longer set up")))
}
