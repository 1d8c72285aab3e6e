//! IPC commands: one-liners into the engine. Errors cross as the engine's `{code, message}`.

use finishline_engine::agent::ReviewOutcome;
use finishline_engine::config::check_provider;
use finishline_engine::config::secret::{KeyPlace, KeyStatus, Keys};
use finishline_engine::config::settings::STORE_FILE;
use finishline_engine::domain::*;
use finishline_engine::domain::{Isolation, LandingMode};
use finishline_engine::event::Envelope;
use finishline_engine::mcp::McpServerStatus;
use finishline_engine::plan::state::{PlanFollower, PlanState};
use finishline_engine::provider::ConnectionReport;
use finishline_engine::store::{ListQuery, SearchHit, SessionSummary, Shown, Timeline};
use finishline_engine::{Error, ProviderSettings, Settings, SettingsView};
use futures_util::StreamExt;
use serde::Deserialize;
use tauri::ipc::Channel;
use tauri::{AppHandle, Emitter, Manager, State};

use crate::state::AppState;
use crate::task_folders::{folder_to_open, opener_failed, FolderOfTask};

/// The settings file, in the app's data folder; the CLI reads the same file.
fn settings_file(app: &AppHandle) -> Result<std::path::PathBuf, Error> {
    Ok(app.path().app_data_dir().map_err(|e| Error::SettingsUnreadable(e.to_string()))?.join(STORE_FILE))
}

/// Read from the file itself, as the CLI does: the store plugin reads a file that is not JSON as
/// empty, and the person would see their settings gone, then lose them at the next save.
pub(crate) fn settings(app: &AppHandle) -> Result<Settings, Error> {
    Settings::read_file(&settings_file(app)?)
}

/// The settings as the window shows them, with the keys in the file no setting takes.
pub(crate) fn settings_view(app: &AppHandle) -> Result<SettingsView, Error> {
    let (settings, unknown_keys) = Settings::read_file_noting_unknown(&settings_file(app)?)?;
    Ok(SettingsView { unknown_keys, ..settings.into() })
}

#[tauri::command]
pub fn get_settings(app: AppHandle) -> Result<SettingsView, Error> {
    settings_view(&app)
}

/// A settings file that cannot be read is moved aside whole (`settings.json.unreadable-…`) and
/// the app goes on from the defaults: the person's way out when they cannot fix it now. Says
/// where it was kept, so they can copy what they need from it.
#[tauri::command]
pub fn set_aside_settings(app: AppHandle) -> Result<SetAside, Error> {
    let kept = Settings::set_aside(&settings_file(&app)?)?;
    Ok(SetAside { view: settings_view(&app)?, kept_as: kept.to_string_lossy().into_owned() })
}

#[derive(serde::Serialize)]
pub struct SetAside {
    view: SettingsView,
    kept_as: String,
}

/// Every mistake in the form's settings, each by its field, without saving: Save names them all
/// at once, with those the window tells itself.
#[tauri::command]
pub fn check_settings(settings: Settings) -> Vec<finishline_engine::config::settings::SettingProblem> {
    settings.problems()
}

/// Saves the settings. Values typed into an MCP server's or the agent's environment go to the
/// keychain first; the file keeps only where they are.
#[tauri::command]
pub async fn save_settings(app: AppHandle, state: State<'_, AppState>, settings: Settings) -> Result<SettingsView, Error> {
    settings.validate()?;
    // The window never edits which agent keys the keychain holds (a login adds them): a form
    // opened before the login must not forget them.
    let mut settings = settings;
    let before = self::settings(&app).unwrap_or_default();
    for (agent, vars) in before.agent_keys.clone() {
        let kept = settings.agent_keys.entry(agent).or_default();
        for v in vars {
            if !kept.contains(&v) {
                kept.push(v);
            }
        }
    }
    let settings = with_keys(&state, move |k| {
        let mut settings = settings;
        k.keep_mcp_secrets(&mut settings)?;
        k.keep_agent_secrets(&mut settings, &before)?;
        Ok(settings)
    })
    .await?;
    store_settings(&app, &settings)?;
    settings_view(&app)
}

/// Writes the settings file (never with a key: those are in the keychain by now). Written by us,
/// not tauri-plugin-store: the plugin keeps what it read in memory and writes that back at quit,
/// over any edit made to the file meanwhile.
pub(crate) fn store_settings(app: &AppHandle, settings: &Settings) -> Result<(), Error> {
    settings.write_file(&settings_file(app)?)
}

// Commands that start runs are async so they execute on the Tokio runtime the runs spawn onto.
#[tauri::command]
pub async fn start_session(
    app: AppHandle,
    state: State<'_, AppState>,
    task: String,
    workspace: String,
    model: Option<String>,
    plan: Option<finishline_engine::domain::PlanMode>,
    agent: Option<String>,
    isolation: Option<Isolation>,
    base: Option<String>,
    when_busy: Option<String>,
) -> Result<SessionId, Error> {
    let mut settings = settings(&app)?;
    // New Task's agent for this task: `builtin`, the one set up in Settings, or a preset.
    if let Some(choice) = agent {
        settings.agent = match &settings.agent {
            Some(a) if a.name == choice => Some(a.clone()),
            _ => finishline_engine::external::ExternalAgent::from_choice(&choice),
        };
    }
    let engine = state.engine_from(&settings, &workspace, model.as_deref())?;
    use finishline_engine::agent::{TaskOptions, WhenBusy, WhenUndecided};
    let when_busy = match when_busy.as_deref() {
        Some("queue") => WhenBusy::Queue,
        Some("run") => WhenBusy::Run,
        _ => WhenBusy::Ask,
    };
    // Not answered yet, the window asks about another task's undecided changes too; an answer
    // to either question (run anyway, queue after it) is the person's word on sharing the folder.
    let when_undecided = if when_busy == WhenBusy::Ask { WhenUndecided::Ask } else { WhenUndecided::Run };
    let opts = TaskOptions {
        plan: plan.unwrap_or(settings.plan_mode),
        isolation,
        base: base.filter(|b| !b.trim().is_empty()),
        when_busy,
        when_undecided,
        ..Default::default()
    };
    let (sid, _) = engine.start_task_with(&task, std::path::Path::new(&workspace), opts)?;
    Ok(sid)
}

/// An event as the window gets it: with the session's plan as the engine folds it, when the
/// event changed the plan (the window does not fold the plan itself).
#[derive(serde::Serialize)]
pub struct Delivered {
    #[serde(flatten)]
    envelope: Envelope,
    #[serde(skip_serializing_if = "Option::is_none")]
    plan: Option<PlanState>,
}

/// Replays the session's events after `after_seq` from the store, then follows live ones. Events
/// that are ready together go as one message: a long replay is a few messages, not thousands.
#[tauri::command]
pub async fn subscribe_session(state: State<'_, AppState>, session_id: SessionId, after_seq: u64, channel: Channel<Vec<Delivered>>) -> Result<u64, Error> {
    state.store.session(&session_id)?;
    let mut plan = PlanFollower::default();
    if after_seq > 0 {
        for e in state.store.events(&session_id, 0)?.iter().take_while(|e| e.seq <= after_seq) {
            plan.see(&e.event);
        }
    }
    let events = state.store.subscribe(session_id, after_seq);
    let mut batches =
        Box::pin(events.take_while(|e| futures_util::future::ready(e.is_ok())).filter_map(|e| futures_util::future::ready(e.ok())).ready_chunks(1024));
    let task = tauri::async_runtime::spawn(async move {
        while let Some(batch) = batches.next().await {
            let batch = batch.into_iter().map(|envelope| Delivered { plan: plan.see(&envelope.event), envelope }).collect();
            if channel.send(batch).is_err() {
                break; // the window went away
            }
        }
    });
    Ok(state.keep_subscription(task))
}

/// Ends a subscription when its view closes; without this a finished session's follower would
/// wait for events for the life of the app, one per session ever opened.
#[tauri::command]
pub fn unsubscribe_session(state: State<'_, AppState>, subscription: u64) -> bool {
    state.end_subscription(subscription)
}

/// Cancels the session's run; one running in a terminal is stopped by asking that process; a
/// session left waiting by an earlier start of the app has no run here, and cancelling resolves
/// what it waits for. Needs no settings: a broken provider never
/// keeps a task from being stopped.
#[tauri::command]
pub async fn cancel_run(state: State<'_, AppState>, session_id: SessionId) -> Result<bool, Error> {
    Ok(state.runtime.cancel(&state.data_dir, &session_id).any())
}

/// Asks the model again now, where the session's run waits to retry: whether one waited.
#[tauri::command]
pub async fn retry_now(state: State<'_, AppState>, session_id: SessionId) -> Result<bool, Error> {
    Ok(state.runtime.retry_now(&session_id))
}

/// Runs a plan that waited for the person: as edited (`steps`), or as the manager made it.
#[tauri::command]
pub async fn run_plan(
    app: AppHandle,
    state: State<'_, AppState>,
    session_id: SessionId,
    steps: Option<Vec<finishline_engine::plan::PlanStep>>,
) -> Result<(), Error> {
    let engine = engine_for_session(&app, &state, &session_id, Need::Model)?;
    engine.run_plan(&session_id, steps)?;
    Ok(())
}

/// What a command's engine is for.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Need {
    /// It starts work that asks the model (a message, a plan's go-ahead, changes asked for):
    /// refused up front while no provider works.
    Model,
    /// It records a person's answer, comment or decision: never refused for the provider's sake.
    Decision,
}

/// An engine for what follows in a session: the settings of the moment with the session's own
/// workspace, model and agent from its record. A run live in this process is reached through the
/// shared runtime; for a session an earlier start of the app (or the CLI) left waiting,
/// answering resumes it.
pub(crate) fn engine_for_session(
    app: &AppHandle,
    state: &AppState,
    session: &SessionId,
    need: Need,
) -> Result<std::sync::Arc<finishline_engine::agent::Engine>, Error> {
    let s = state.store.session(session)?;
    let settings = settings(app)?;
    let model = finishline_engine::agent::config::session_model(&settings, &s.provider, &s.model);
    match need {
        Need::Model => state.engine_from(&settings, &s.workspace, model),
        Need::Decision => state.engine_for_decisions(&settings, &s.workspace, model),
    }
}

fn engine_for_request(app: &AppHandle, state: &AppState, request: &RequestId, need: Need) -> Result<std::sync::Arc<finishline_engine::agent::Engine>, Error> {
    let (session, _, _) = state.store.request_state(request)?.ok_or_else(|| Error::NotFound(format!("request {request}")))?;
    engine_for_session(app, state, &session, need)
}

#[tauri::command]
pub async fn respond_permission(app: AppHandle, state: State<'_, AppState>, request_id: RequestId, decision: PermissionDecision) -> Result<(), Error> {
    engine_for_request(&app, &state, &request_id, Need::Decision)?.respond_permission(&request_id, decision).map(|_| ())
}

#[tauri::command]
pub async fn answer_question(app: AppHandle, state: State<'_, AppState>, request_id: RequestId, answer: Option<String>) -> Result<(), Error> {
    engine_for_request(&app, &state, &request_id, Need::Decision)?.answer_question(&request_id, answer).map(|_| ())
}

#[derive(Deserialize)]
pub struct ReviewInput {
    review_id: RequestId,
    decision: Decision,
    #[serde(default)]
    feedback: Option<String>,
    #[serde(default)]
    revert: bool,
    #[serde(default)]
    force: bool,
    /// Files someone changed after the run that the revert may overwrite all the same (the
    /// others of that list are kept); absent: not asked yet.
    #[serde(default)]
    overwrite: Option<Vec<String>>,
    /// How an approved task in a worktree lands (the settings' choice when absent).
    #[serde(default)]
    landing: Option<LandingMode>,
    /// Request changes: the comments the review found not met that the person lets go (ids).
    #[serde(default)]
    let_go: Vec<String>,
}

/// The decision, off the async workers: landing may rebase and run the verification commands.
#[tauri::command]
pub async fn submit_review(app: AppHandle, state: State<'_, AppState>, input: ReviewInput) -> Result<ReviewOutcome, Error> {
    use finishline_engine::agent::{Overwrite, ReviewChoice};
    let need = if input.decision == Decision::RequestChanges { Need::Model } else { Need::Decision };
    let engine = engine_for_request(&app, &state, &input.review_id, need)?;
    let overwrite = match (input.force, input.overwrite) {
        (true, _) => Overwrite::All,
        (false, Some(files)) => Overwrite::Files(files),
        (false, None) => Overwrite::Nothing,
    };
    let choice = ReviewChoice {
        feedback: input.feedback,
        revert: input.revert,
        overwrite,
        landing: input.landing,
        let_go: input.let_go,
        ..ReviewChoice::new(input.decision, DecidedBy::Person)
    };
    let review = input.review_id;
    tauri::async_runtime::spawn_blocking(move || engine.decide(&review, choice)).await.map_err(|e| Error::Internal(e.to_string()))?
}

/// Undoes what a task rejected in place without a revert changed (`overwrite`: also files the
/// person changed after it).
#[tauri::command]
pub async fn revert_rejected(
    app: AppHandle,
    state: State<'_, AppState>,
    session_id: SessionId,
    overwrite: Option<Vec<String>>,
) -> Result<ReviewOutcome, Error> {
    use finishline_engine::agent::Overwrite;
    let engine = engine_for_session(&app, &state, &session_id, Need::Decision)?;
    // Not asked yet (none), or the person's answer to the files changed since: these are
    // overwritten, the others kept as they are (an empty list undoes only the rest).
    let overwrite = overwrite.map_or(Overwrite::Nothing, Overwrite::Files);
    tauri::async_runtime::spawn_blocking(move || engine.revert_rejected(&session_id, overwrite)).await.map_err(|e| Error::Internal(e.to_string()))?
}

/// Opens the review of a task that ended without one (cancelled, failed, interrupted), as it is:
/// no model is asked. Its review arrives as the session's events.
#[tauri::command]
pub async fn review_ended(app: AppHandle, state: State<'_, AppState>, session_id: SessionId) -> Result<(), Error> {
    engine_for_session(&app, &state, &session_id, Need::Decision)?.review_ended(&session_id)?;
    Ok(())
}

/// Adds or edits a comment on lines of a waiting review's diff.
#[tauri::command]
pub async fn comment_review(
    app: AppHandle,
    state: State<'_, AppState>,
    review_id: RequestId,
    comment: finishline_engine::judge::criteria::Comment,
) -> Result<finishline_engine::judge::criteria::Comment, Error> {
    let engine = engine_for_request(&app, &state, &review_id, Need::Decision)?;
    tauri::async_runtime::spawn_blocking(move || engine.comment(&review_id, comment)).await.map_err(|e| Error::Internal(e.to_string()))?
}

#[tauri::command]
pub async fn remove_review_comment(app: AppHandle, state: State<'_, AppState>, review_id: RequestId, comment_id: String) -> Result<(), Error> {
    engine_for_request(&app, &state, &review_id, Need::Decision)?.remove_comment(&review_id, &comment_id)
}

/// The waiting review's files in a plain folder that are not as its run left them (another task
/// or the person changed them since): said beside Approve, which keeps them as they are.
#[tauri::command]
pub async fn changed_since_run(
    app: AppHandle,
    state: State<'_, AppState>,
    review_id: RequestId,
) -> Result<Vec<finishline_engine::agent::changed_since_run::ChangedSinceRun>, Error> {
    let engine = engine_for_request(&app, &state, &review_id, Need::Decision)?;
    tauri::async_runtime::spawn_blocking(move || engine.changed_since_run(&review_id)).await.map_err(|e| Error::Internal(e.to_string()))?
}

/// Copies into the person's checkout what the waiting review names as never landing (hidden by
/// `.gitignore`); nothing there is overwritten.
#[tauri::command]
pub async fn copy_ignored(
    app: AppHandle,
    state: State<'_, AppState>,
    review_id: RequestId,
    entries: Vec<String>,
) -> Result<finishline_engine::workspace::worktree::CopiedOut, Error> {
    let engine = engine_for_request(&app, &state, &review_id, Need::Decision)?;
    tauri::async_runtime::spawn_blocking(move || engine.copy_ignored(&review_id, &entries)).await.map_err(|e| Error::Internal(e.to_string()))?
}

/// A reviewed file's whole text (for lines around the changes); `None` when it is not text.
#[tauri::command]
pub async fn review_file(
    app: AppHandle,
    state: State<'_, AppState>,
    review_id: RequestId,
    path: String,
    side: finishline_engine::judge::criteria::DiffSide,
) -> Result<Option<String>, Error> {
    let engine = engine_for_request(&app, &state, &review_id, Need::Decision)?;
    tauri::async_runtime::spawn_blocking(move || engine.review_file(&review_id, &path, side)).await.map_err(|e| Error::Internal(e.to_string()))?
}

/// Dismisses an audit finding for this session; the dismissal is recorded.
#[tauri::command]
pub async fn dismiss_finding(
    app: AppHandle,
    state: State<'_, AppState>,
    session_id: SessionId,
    finding: finishline_engine::judge::audit::Finding,
) -> Result<(), Error> {
    engine_for_session(&app, &state, &session_id, Need::Decision)?.dismiss_finding(&session_id, &finding)
}

/// Takes back a dismissal of an audit finding: it counts again.
#[tauri::command]
pub async fn restore_finding(
    app: AppHandle,
    state: State<'_, AppState>,
    session_id: SessionId,
    finding: finishline_engine::judge::audit::Finding,
) -> Result<(), Error> {
    engine_for_session(&app, &state, &session_id, Need::Decision)?.restore_finding(&session_id, &finding)
}

/// "Let the agent resolve it": the moved branch is merged into the task's worktree and the
/// agent is sent back to resolve the conflicts.
#[tauri::command]
pub async fn resolve_conflict(app: AppHandle, state: State<'_, AppState>, review_id: RequestId) -> Result<(), Error> {
    let engine = engine_for_request(&app, &state, &review_id, Need::Model)?;
    engine.resolve_conflict(&review_id)
}

/// What New Task tells the person about a folder: whether tasks get their own worktree there
/// (a git repository with a commit), on which branch, and which tasks work in it right now.
#[tauri::command]
pub async fn workspace_info(app: AppHandle, state: State<'_, AppState>, folder: String) -> Result<WorkspaceInfo, Error> {
    let settings = settings(&app)?;
    let worktrees = finishline_engine::agent::config::TaskPolicy::from_settings(&settings.tasks, &state.data_dir).worktrees;
    let store = state.store.clone();
    tauri::async_runtime::spawn_blocking(move || {
        let path = std::path::Path::new(&folder).canonicalize().map_err(|e| Error::InvalidInput(format!("{folder} cannot be used: {e}")))?;
        let repo = finishline_engine::workspace::worktree::repo_of(&path, &worktrees);
        let busy = store
            .live_in_folder(&path.to_string_lossy(), &SessionId(String::new()))?
            .into_iter()
            .map(|(id, title)| BusyTask { session_id: id, title })
            .collect();
        let waiting = store
            .waiting_in_folder(&path.to_string_lossy(), &SessionId(String::new()))?
            .into_iter()
            .map(|(id, title)| BusyTask { session_id: id, title })
            .collect();
        let is_git = path.join(".git").exists();
        let worktrees = settings.tasks.isolation == Isolation::Worktree && repo.is_some();
        Ok(WorkspaceInfo {
            worktrees,
            branch: repo.as_ref().and_then(|r| r.branch.clone()),
            under_way: repo.as_ref().filter(|r| r.branch.is_none()).and_then(|r| finishline_engine::workspace::worktree::under_way(&r.top)),
            rebasing: repo.as_ref().filter(|r| r.branch.is_none()).and_then(|r| finishline_engine::workspace::worktree::rebasing(&r.top)),
            branches: repo.as_ref().map(|r| finishline_engine::workspace::worktree::branches(&r.top)).unwrap_or_default(),
            repository: repo.map(|r| r.top.to_string_lossy().into_owned()),
            unborn_repository: is_git,
            busy,
            waiting,
        })
    })
    .await
    .map_err(|e| Error::Internal(e.to_string()))?
}

/// The first few of the checkout's uncommitted changes, which a task's worktree does not start
/// with (it starts from the last commit), and how many there are. Asked apart from
/// [`workspace_info`]: on a huge checkout git's status takes a while, and the rest of New Task's
/// line need not wait for it.
#[tauri::command]
pub async fn workspace_uncommitted(folder: String) -> Result<Uncommitted, Error> {
    tauri::async_runtime::spawn_blocking(move || {
        let path = std::path::Path::new(&folder).canonicalize().map_err(|e| Error::InvalidInput(format!("{folder} cannot be used: {e}")))?;
        let top = finishline_engine::workspace::worktree::repo_of(&path, std::path::Path::new("")).map(|r| r.top);
        let all = top.map(|t| finishline_engine::workspace::worktree::uncommitted(&t).unwrap_or_default()).unwrap_or_default();
        Ok(Uncommitted { count: all.len(), names: all.into_iter().take(5).collect() })
    })
    .await
    .map_err(|e| Error::Internal(e.to_string()))?
}

#[derive(serde::Serialize)]
pub struct Uncommitted {
    names: Vec<String>,
    count: usize,
}

#[derive(serde::Serialize)]
pub struct WorkspaceInfo {
    /// Tasks here get their own worktree.
    worktrees: bool,
    repository: Option<String>,
    branch: Option<String>,
    /// On no branch: what git is in the middle of that detached it ("a rebase of main").
    under_way: Option<String>,
    /// The branch a rebase there is rebasing: not one to land on until it is over.
    rebasing: Option<String>,
    branches: Vec<String>,
    /// A `.git` is there (maybe without a commit yet).
    unborn_repository: bool,
    /// Tasks working in the folder itself right now.
    busy: Vec<BusyTask>,
    /// Tasks that worked in the folder itself (or one inside or around it) and wait for the
    /// person's review: their changes are undecided there.
    waiting: Vec<BusyTask>,
}

#[derive(serde::Serialize)]
pub struct BusyTask {
    session_id: SessionId,
    title: String,
}

/// New Task's "Make it a git repository": `git init` and one commit of the folder as it is, so
/// tasks can work side by side in worktrees of it.
#[tauri::command]
pub async fn make_repository(folder: String) -> Result<(), Error> {
    tauri::async_runtime::spawn_blocking(move || finishline_engine::workspace::worktree::make_repository(std::path::Path::new(&folder)))
        .await
        .map_err(|e| Error::Internal(e.to_string()))?
}

/// Puts away a task that ended without a review: recorded as rejected, then its worktree and
/// branch removed (`keep_branch`: the branch stays, with the task's work committed on it).
// Off the window's thread: it reads (or deletes) as much as the history holds.
#[tauri::command(async)]
pub fn discard_session(app: AppHandle, state: State<'_, AppState>, session_id: SessionId, keep_branch: Option<bool>) -> Result<(), Error> {
    engine_for_session(&app, &state, &session_id, Need::Decision)?.discard(&session_id, keep_branch.unwrap_or(false))
}

/// Opens a task's worktree in the file manager. The page names the session, never a path.
#[tauri::command]
pub fn open_worktree(app: AppHandle, state: State<'_, AppState>, session_id: SessionId, which: Option<FolderOfTask>) -> Result<(), Error> {
    let s = state.store.session(&session_id)?;
    let dir = folder_to_open(which.unwrap_or(FolderOfTask::Worktree), s.work_dir.as_deref(), &s.workspace)?;
    use tauri_plugin_opener::OpenerExt;
    app.opener().open_path(dir.to_string_lossy(), None::<&str>).map_err(|e| opener_failed(&dir, &e.to_string()))
}

#[tauri::command]
pub async fn send_message(app: AppHandle, state: State<'_, AppState>, session_id: SessionId, message: String) -> Result<(), Error> {
    engine_for_session(&app, &state, &session_id, Need::Model)?.send_message(&session_id, &message)?;
    Ok(())
}

#[derive(Deserialize, Default)]
pub struct ListInput {
    #[serde(default)]
    statuses: Vec<SessionStatus>,
    /// As the window's badges name them.
    #[serde(default)]
    shown: Vec<Shown>,
    #[serde(default)]
    end_reasons: Vec<EndReason>,
    since_ms: Option<i64>,
    until_ms: Option<i64>,
    #[serde(default)]
    limit: usize,
    before: Option<(i64, SessionId)>,
    group: Option<GroupId>,
    #[serde(default)]
    kept_work: bool,
    #[serde(default)]
    ids: Vec<SessionId>,
}

#[tauri::command]
pub fn list_sessions(state: State<'_, AppState>, filter: Option<ListInput>) -> Result<Vec<SessionSummary>, Error> {
    let f = filter.unwrap_or_default();
    state.store.list_sessions(&ListQuery {
        statuses: f.statuses,
        shown: f.shown,
        end_reasons: f.end_reasons,
        since_ms: f.since_ms,
        until_ms: f.until_ms,
        limit: f.limit,
        before: f.before,
        group: f.group,
        kept_work: f.kept_work,
        ids: f.ids,
    })
}

// Off the window's thread: it reads (or deletes) as much as the history holds.
#[tauri::command(async)]
pub fn search_sessions(state: State<'_, AppState>, text: String) -> Result<Vec<SearchHit>, Error> {
    state.store.search(&text, 50)
}

/// How far to trust each evaluator model, from the reviews people decided.
// Off the window's thread: it reads (or deletes) as much as the history holds.
#[tauri::command(async)]
pub fn evaluator_trust(state: State<'_, AppState>) -> Result<Vec<finishline_engine::store::trust::EvaluatorTrust>, Error> {
    state.store.evaluator_trust()
}

// Off the window's thread: it reads (or deletes) as much as the history holds.
#[tauri::command(async)]
pub fn get_session(state: State<'_, AppState>, session_id: SessionId) -> Result<Timeline, Error> {
    state.store.timeline(&session_id)
}

// Off the window's thread: it reads (or deletes) as much as the history holds.
#[tauri::command(async)]
/// Returns what stays in the task's repository when it moved away, to be said.
pub fn delete_session(app: AppHandle, state: State<'_, AppState>, session_id: SessionId) -> Result<Option<String>, Error> {
    let deleted = finishline_engine::agent::decision::delete_task(&state.store, &state.data_dir, &session_id)?;
    // A deletion appends no event, so the lists (the sidebar's among them) are told here.
    let _ = app.emit("history-changed", &session_id);
    Ok(deleted.left_in_moved_repository)
}

#[tauri::command]
pub fn provider_presets() -> &'static [finishline_engine::config::preset::ProviderPreset] {
    finishline_engine::config::preset::PRESETS
}

/// Keychain calls can wait on D-Bus, so they run off the async workers.
async fn with_keys<T: Send + 'static>(state: &AppState, f: impl FnOnce(&Keys) -> Result<T, Error> + Send + 'static) -> Result<T, Error> {
    let keys = state.keys.clone();
    tauri::async_runtime::spawn_blocking(move || f(&keys)).await.map_err(|e| Error::Internal(e.to_string()))?
}

/// Where this provider's key comes from, and whether there is a keychain at all.
#[tauri::command]
pub async fn key_status(state: State<'_, AppState>, provider: ProviderSettings) -> Result<KeyStatus, Error> {
    with_keys(&state, move |k| Ok(k.status(&provider))).await
}

#[tauri::command]
pub async fn save_key(state: State<'_, AppState>, provider: ProviderSettings, key: String, place: KeyPlace) -> Result<KeyStatus, Error> {
    with_keys(&state, move |k| {
        k.save(&provider, &key, place)?;
        Ok(k.status(&provider))
    })
    .await
}

#[tauri::command]
pub async fn forget_key(state: State<'_, AppState>, provider: ProviderSettings) -> Result<KeyStatus, Error> {
    with_keys(&state, move |k| {
        k.forget(&provider)?;
        Ok(k.status(&provider))
    })
    .await
}

/// "Test connection": the model list, the key, and whether the model takes tools, with the
/// settings as typed.
#[tauri::command]
pub async fn test_connection(state: State<'_, AppState>, settings: Settings) -> Result<ConnectionReport, Error> {
    settings.validate()?;
    let provider = settings.provider.clone();
    let (key, _) = with_keys(&state, move |k| Ok(k.resolve(&provider))).await?;
    check_provider(&settings.provider, key).await
}

/// Starts the configured MCP servers (if not yet running) and lists each one's tools or failure.
#[tauri::command]
pub async fn mcp_status(state: State<'_, AppState>, settings: Settings) -> Result<Vec<McpServerStatus>, Error> {
    settings.validate()?;
    Ok(match state.mcp_for(&settings) {
        Some(servers) => servers.status().await,
        None => Vec::new(),
    })
}

/// The external agents Settings offers, each with where its command is (or how to install it).
#[tauri::command]
pub fn agent_presets() -> Vec<AgentPresetView> {
    finishline_engine::external::definition::PRESETS
        .iter()
        .map(|p| {
            let agent = finishline_engine::external::ExternalAgent::preset(p.name).expect("a preset");
            AgentPresetView { preset: p.clone(), found: agent.locate().map(|l| l.to_string_lossy().into_owned()) }
        })
        .collect()
}

#[derive(serde::Serialize)]
pub struct AgentPresetView {
    #[serde(flatten)]
    preset: finishline_engine::external::definition::Preset,
    /// Where its command was found on PATH; `None`: not installed here.
    found: Option<String>,
}

/// Settings' Check button: starts the agent, introduces Finishline, opens a session, and says
/// who answered and whether it is logged in.
#[tauri::command]
pub async fn check_agent(
    app: AppHandle,
    state: State<'_, AppState>,
    agent: finishline_engine::external::ExternalAgent,
    workspace: Option<String>,
) -> Result<AgentCheck, Error> {
    let s = agent_status(&app, &state, &agent, workspace).await;
    match (&s.found, &s.name, s.logged_in) {
        (None, _, _) => Err(Error::External {
            code: finishline_engine::ErrorCode::ExternalAgent,
            message: format!("{} is not installed here.{}", s.label, s.install.as_deref().map(|i| format!(" Install it with: {i}")).unwrap_or_default()),
        }),
        (_, Some(name), logged_in) if logged_in.is_some() => {
            Ok(AgentCheck { name: name.clone(), version: s.version.clone(), load_session: s.load_session, logged_in, problem: s.problem.clone() })
        }
        _ => {
            Err(Error::External { code: finishline_engine::ErrorCode::ExternalAgent, message: s.problem.unwrap_or_else(|| "the agent did not answer".into()) })
        }
    }
}

/// Check for every agent Settings offers (and the custom one set up): installed, version, logged in.
#[tauri::command]
pub async fn check_agents(
    app: AppHandle,
    state: State<'_, AppState>,
    workspace: Option<String>,
) -> Result<Vec<finishline_engine::external::agent_status::AgentStatus>, Error> {
    let mut agents: Vec<_> =
        finishline_engine::external::definition::PRESETS.iter().filter_map(|p| finishline_engine::external::ExternalAgent::preset(p.name)).collect();
    if let Some(a) = settings(&app)?.agent {
        match agents.iter_mut().find(|p| p.name == a.name) {
            Some(p) => *p = a,
            None => agents.push(a),
        }
    }
    let checks = agents.iter().map(|a| agent_status(&app, &state, a, workspace.clone()));
    Ok(futures_util::future::join_all(checks).await)
}

async fn agent_status(
    app: &AppHandle,
    state: &AppState,
    agent: &finishline_engine::external::ExternalAgent,
    workspace: Option<String>,
) -> finishline_engine::external::agent_status::AgentStatus {
    let cwd = workspace
        .filter(|w| std::path::Path::new(w).is_dir())
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(std::path::PathBuf::from))
        .unwrap_or_else(std::env::temp_dir);
    let secrets = settings(app).map(|s| state.keys.agent_secrets(&s, &agent.name)).unwrap_or_default();
    finishline_engine::external::agent_status::status(agent, &cwd, std::time::Duration::from_secs(60), &secrets).await
}

#[derive(serde::Serialize)]
pub struct AgentCheck {
    name: String,
    version: Option<String>,
    load_session: bool,
    logged_in: Option<bool>,
    /// What to do to log in, in the agent's words.
    problem: Option<String>,
}

/// Whether the app reports its own timing (FINISHLINE_PERF=1, set by the footprint benchmark).
#[tauri::command]
pub fn perf_enabled() -> bool {
    std::env::var("FINISHLINE_PERF").is_ok_and(|v| v == "1")
}

/// One timing from the UI, printed for the benchmark that started the app; ignored otherwise.
#[tauri::command]
pub fn perf_report(name: String, value: f64) {
    if perf_enabled() && name.len() <= 64 && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        eprintln!("finishline-perf {name} {value:.3}");
    }
}

#[derive(serde::Serialize, Clone, Debug, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum StartupAction {
    OpenSession { session_id: SessionId },
    RunTask { task: String, workspace: String },
}

/// Reads `--open-session ID` or `--task TEXT --workspace DIR` from the command line.
pub fn startup_action_from(args: &[String]) -> Option<StartupAction> {
    let value = |flag: &str| args.iter().position(|a| a == flag).and_then(|i| args.get(i + 1)).cloned();
    if let Some(id) = value("--open-session") {
        return id.starts_with("ses_").then(|| StartupAction::OpenSession { session_id: SessionId::from(id.as_str()) });
    }
    match (value("--task"), value("--workspace")) {
        (Some(task), Some(workspace)) => Some(StartupAction::RunTask { task, workspace }),
        _ => None,
    }
}

/// Where the history file was kept when this start found it was no database and began a new
/// one; `None` when the history opened as it was.
#[tauri::command]
pub fn history_set_aside(state: State<'_, AppState>) -> Option<String> {
    state.history_set_aside.clone()
}

/// A session this start found cut short, by its title.
#[derive(serde::Serialize)]
pub struct Stopped {
    id: String,
    title: String,
}

/// The sessions this start found cut short that are still so (one resumed since, from here or a
/// terminal, is news no more), oldest first as they were found.
#[tauri::command]
pub fn interrupted_at_start(state: State<'_, AppState>) -> Vec<Stopped> {
    state
        .interrupted_at_start
        .iter()
        .filter_map(|id| state.store.session(id).ok())
        .filter(|s| s.status == finishline_engine::domain::SessionStatus::Interrupted)
        .map(|s| Stopped { id: s.id.0, title: s.title })
        .collect()
}

/// What the app was asked to do at launch; answered once, so a reload does not repeat it.
#[tauri::command]
pub fn startup_action(state: State<'_, AppState>) -> Option<StartupAction> {
    state.take_startup_action()
}
