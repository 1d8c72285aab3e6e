//! Attempts side by side in the window: start a group, see it ranked and how the attempts
//! differ, ask the evaluator to compare them, land the one the person chooses, cancel the rest;
//! and each agent's record.

use finishline_engine::agent::attempts::{self, FileDifference, GroupRanking, Worker};
use finishline_engine::agent::comparison::Compared;
use finishline_engine::agent::{ReviewOutcome, TaskOptions};
use finishline_engine::domain::*;
use finishline_engine::store::trust::AgentTrust;
use finishline_engine::Error;
use tauri::{AppHandle, State};

use crate::commands::{engine_for_session, settings, Need};
use crate::state::AppState;

/// Starts the task once per agent named (`builtin`, `builtin:MODEL`, a preset, the one from
/// Settings), each in its own worktree from the same commit; `model` is New Task's, when not
/// Settings' own. Returns the group and its sessions.
#[tauri::command]
pub async fn start_attempts(
    app: AppHandle,
    state: State<'_, AppState>,
    task: String,
    workspace: String,
    agents: Vec<String>,
    plan: Option<PlanMode>,
    base: Option<String>,
    model: Option<String>,
) -> Result<(GroupId, Vec<SessionId>), Error> {
    let settings = settings(&app)?;
    let workers: Vec<Worker> = agents
        .iter()
        .map(|choice| match &settings.agent {
            // The agent set up in Settings keeps its own command and environment.
            Some(a) if a.name == *choice => Worker::External(a.clone()),
            _ => Worker::from_choice(choice),
        })
        .collect();
    let mut engine_settings = settings.clone();
    // The engine's own agent is the built-in one; each attempt names its worker.
    engine_settings.agent = None;
    // New Task's model, when the person named one, is this task's: with no evaluator of its own
    // in Settings it judges and compares the attempts, as it judges a single task.
    let model = model.as_deref().map(str::trim).filter(|m| !m.is_empty());
    let engine = state.engine_from(&engine_settings, &workspace, model)?;
    let opts = TaskOptions { plan: plan.unwrap_or(settings.plan_mode), base: base.filter(|b| !b.trim().is_empty()), ..Default::default() };
    let (group, started) = engine.start_attempts(&task, std::path::Path::new(&workspace), workers, opts)?;
    Ok((group, started.into_iter().map(|(s, _)| s).collect()))
}

#[tauri::command]
pub fn attempt_group(state: State<'_, AppState>, group: GroupId) -> Result<GroupRanking, Error> {
    attempts::rank_group(&state.store, &group)
}

/// The model asking the evaluator to compare the group would ask now (the evaluator of the
/// settings, else the group's own judge), for the window to tell its answers from another's.
#[tauri::command]
pub fn attempt_judge(app: AppHandle, state: State<'_, AppState>, group: GroupId) -> Result<Option<String>, Error> {
    let first = attempts::group_attempts(&state.store, &group)?.into_iter().next().ok_or_else(|| Error::NotFound(format!("attempt group {group}")))?;
    let engine = state.engine_from(&settings(&app)?, &first.workspace, None)?;
    engine.group_judge(&group)
}

#[tauri::command]
pub fn attempt_differences(state: State<'_, AppState>, group: GroupId) -> Result<Vec<FileDifference>, Error> {
    attempts::attempt_differences(&state.store, &group)
}

/// Lands the chosen attempt and rejects the others (their worktrees removed).
#[tauri::command]
pub async fn choose_attempt(
    app: AppHandle,
    state: State<'_, AppState>,
    group: GroupId,
    session_id: SessionId,
    landing: Option<LandingMode>,
) -> Result<ReviewOutcome, Error> {
    let engine = engine_for_session(&app, &state, &session_id, Need::Decision)?;
    tauri::async_runtime::spawn_blocking(move || engine.choose_attempt(&group, &session_id, landing)).await.map_err(|e| Error::Internal(e.to_string()))?
}

/// Cancels every attempt of the group still running (one in another process is asked to stop);
/// how many were.
#[tauri::command]
pub fn cancel_attempts(app: AppHandle, state: State<'_, AppState>, group: GroupId) -> Result<usize, Error> {
    let first =
        attempts::group_attempts(&state.store, &group)?.into_iter().next().map(|s| s.id).ok_or_else(|| Error::NotFound(format!("attempt group {group}")))?;
    Ok(engine_for_session(&app, &state, &first, Need::Decision)?.cancel_group(&group)?.iter().filter(|(_, stop)| stop.any()).count())
}

/// Chooses none: rejects every attempt of the group and removes their worktrees, once none is
/// running; how many it put away.
#[tauri::command]
pub async fn reject_attempts(app: AppHandle, state: State<'_, AppState>, group: GroupId) -> Result<usize, Error> {
    let first =
        attempts::group_attempts(&state.store, &group)?.into_iter().next().map(|s| s.id).ok_or_else(|| Error::NotFound(format!("attempt group {group}")))?;
    let engine = engine_for_session(&app, &state, &first, Need::Decision)?;
    tauri::async_runtime::spawn_blocking(move || engine.reject_group(&group, finishline_engine::domain::DecidedBy::Person))
        .await
        .map_err(|e| Error::Internal(e.to_string()))?
}

/// Asks the evaluator model to compare each attempt with work to land and the one ranked below
/// it; returns the ranking with its sentences. Once every attempt has ended.
#[tauri::command]
pub async fn compare_attempts(app: AppHandle, state: State<'_, AppState>, group: GroupId) -> Result<Compared, Error> {
    // Registered first, so that Stop works from the moment the person can press it.
    let asking = Asking::start(&state, &group)?;
    let first = attempts::group_attempts(&state.store, &group)?.into_iter().next().ok_or_else(|| Error::NotFound(format!("attempt group {group}")))?;
    // The evaluator (or model) of the settings, not the first attempt's own: an attempt's model
    // does not judge the contest it is in.
    let engine = state.engine_from(&settings(&app)?, &first.workspace, None)?;
    engine.compare_attempts(&group, &asking.cancel).await
}

/// A comparison under way in the shell's list, taken off it however the command ends (an error,
/// a panic), so that the group can always be compared again.
struct Asking<'a> {
    state: &'a AppState,
    group: GroupId,
    cancel: finishline_engine::CancellationToken,
}

impl<'a> Asking<'a> {
    fn start(state: &'a AppState, group: &GroupId) -> Result<Asking<'a>, Error> {
        let mut asking = state.comparisons.lock().map_err(|e| Error::Internal(e.to_string()))?;
        if asking.contains_key(group) {
            return Err(Error::InvalidInput("the evaluator is already comparing these attempts: wait for its answer, or stop it".into()));
        }
        let cancel = asking.entry(group.clone()).or_default().clone();
        Ok(Asking { state, group: group.clone(), cancel })
    }
}

impl Drop for Asking<'_> {
    fn drop(&mut self) {
        if let Ok(mut asking) = self.state.comparisons.lock() {
            asking.remove(&self.group);
        }
    }
}

/// Stops the evaluator's comparison of the group under way; the pairs it answered are kept.
/// Whether one was under way.
#[tauri::command]
pub fn stop_comparing(state: State<'_, AppState>, group: GroupId) -> Result<bool, Error> {
    let asking = state.comparisons.lock().map_err(|e| Error::Internal(e.to_string()))?;
    Ok(asking.get(&group).map(|c| c.cancel()).is_some())
}

// Off the window's thread: it reads (or deletes) as much as the history holds.
#[tauri::command(async)]
pub fn agent_trust(state: State<'_, AppState>) -> Result<Vec<AgentTrust>, Error> {
    state.store.agent_trust()
}
