//! What the shell keeps: the engine's runtime (the store, the runs live in this process, what
//! they wait for) and the data folder. Each run gets an engine built on that runtime from the
//! settings of the moment and the session's record, so changed settings apply to the next run
//! without disturbing running ones, and a follow-up never inherits another start's settings.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use finishline_engine::agent::{config, Engine, ModelEndpoint, Runtime};
use finishline_engine::clock::SystemClock;
use finishline_engine::config::secret::Keys;
use finishline_engine::domain::{GroupId, SessionId};
use finishline_engine::mcp::McpServers;
use finishline_engine::store::Store;
use finishline_engine::{Error, Settings};

pub struct AppState {
    pub store: Arc<Store>,
    pub data_dir: PathBuf,
    /// Session-only keys live here, so they are gone when the app quits.
    pub keys: Arc<Keys>,
    /// What every run's engine shares: one for the app's whole life.
    pub runtime: Arc<Runtime>,
    /// The MCP servers of the current settings, shared by every session; replaced (and the old
    /// ones stopped) when the configured list changes.
    mcp: Mutex<Option<Arc<McpServers>>>,
    startup: Mutex<Option<crate::commands::StartupAction>>,
    /// Set once the person chose to quit over running tasks, so the close that follows is not
    /// asked about again.
    quitting: std::sync::atomic::AtomicBool,
    /// Set while the close button's hidden window waits for a decision to finish before the app
    /// exits; a launch meanwhile clears it and the app stays.
    closing_hidden: std::sync::atomic::AtomicBool,
    /// Open session views' event followers, by the id their view holds.
    subscriptions: Mutex<HashMap<u64, tauri::async_runtime::JoinHandle<()>>>,
    next_subscription: std::sync::atomic::AtomicU64,
    /// Settings read from a file the person picked, waiting for them to confirm its MCP servers.
    import: Mutex<Option<Settings>>,
    /// How many tasks run at once, shared by every engine the app makes (Settings → Tasks).
    slots: Arc<finishline_engine::agent::queue::TaskSlots>,
    /// Every process group the app starts (agents, MCP servers), ended when it quits.
    pub processes: Arc<finishline_engine::process_groups::ProcessGroups>,
    /// The evaluator's comparisons of attempt groups under way, to stop one, and to refuse a
    /// second of the same group meanwhile.
    pub comparisons: Mutex<HashMap<GroupId, finishline_engine::CancellationToken>>,
    /// Where a history file that was no database at all was kept when this start began a new one.
    pub history_set_aside: Option<String>,
    /// The sessions this start found cut short (the app or a CLI closed, crashed or was killed
    /// while they ran): the person hears of them, not only from a badge.
    pub interrupted_at_start: Vec<finishline_engine::domain::SessionId>,
}

impl AppState {
    pub fn open(data_dir: PathBuf) -> Result<AppState, Error> {
        let (store, history_set_aside) = Store::open_setting_aside_unreadable(&data_dir.join("history.db"), Arc::new(SystemClock))?;
        let store = Arc::new(store);
        let interrupted_at_start = store.recover()?;
        // What a crashed app or CLI left running (an agent, an MCP server) ends now.
        finishline_engine::process_groups::ProcessGroups::end_left_behind(&data_dir);
        let processes = finishline_engine::process_groups::ProcessGroups::in_data_dir(&data_dir);
        Ok(AppState {
            processes,
            slots: finishline_engine::agent::queue::TaskSlots::new(4),
            runtime: Runtime::new(store.clone()),
            store,
            data_dir,
            keys: Arc::new(Keys::os()),
            mcp: Mutex::new(None),
            import: Mutex::new(None),
            quitting: Default::default(),
            closing_hidden: Default::default(),
            subscriptions: Mutex::new(HashMap::new()),
            comparisons: Mutex::new(HashMap::new()),
            next_subscription: Default::default(),
            startup: Mutex::new(crate::commands::startup_action_from(&std::env::args().collect::<Vec<_>>())),
            history_set_aside: history_set_aside.map(|p| p.to_string_lossy().into_owned()),
            interrupted_at_start,
        })
    }

    /// An engine built from the current settings, for a session in `workspace`; `model`
    /// overrides the settings' model for this task. The engine's one config builder does the rest.
    pub fn engine_from(&self, settings: &Settings, workspace: &str, model: Option<&str>) -> Result<Arc<Engine>, Error> {
        // A server set up without a model runs a task with the model New Task names.
        let settings = &settings.with_task_model(model);
        if !settings.provider_ready() {
            return Err(Error::InvalidSettings { field: "provider", problem: "set up a provider (base URL and model) in Settings first".into() });
        }
        let keys = self.keys.clone();
        let (agent, evaluator) = config::endpoints(settings, model, &move |p| keys.resolve(p).0)?;
        Ok(self.engine_with(settings, workspace, model, agent, evaluator))
    }

    /// Like [`AppState::engine_from`], for what needs no model: a person's answer, comment or
    /// review decision is recorded whatever the provider settings say. With no provider that
    /// works, a run that follows fails at once saying what to set up, and can be resumed.
    pub fn engine_for_decisions(&self, settings: &Settings, workspace: &str, model: Option<&str>) -> Result<Arc<Engine>, Error> {
        match self.engine_from(settings, workspace, model) {
            Err(Error::InvalidSettings { problem, .. }) => Ok(self.engine_with(settings, workspace, model, ModelEndpoint::unconfigured(problem), None)),
            built => built,
        }
    }

    fn engine_with(&self, settings: &Settings, workspace: &str, model: Option<&str>, agent: ModelEndpoint, evaluator: Option<ModelEndpoint>) -> Arc<Engine> {
        let ctx = config::ConfigContext {
            data_dir: self.data_dir.clone(),
            workspace,
            model,
            mcp: self.mcp_for(settings),
            nobody_to_ask: false,
            allow_all: false,
            extra_verify: Vec::new(),
        };
        let mut cfg = config::engine_config(settings, ctx, agent, evaluator);
        cfg.claims_pipe = finishline_engine::external::claims_pipe::PipeCommand::this_executable();
        cfg.processes = self.processes.clone();
        // The keys the person gave the agent when it asked to log in, for it alone.
        if let Some(agent) = &settings.agent {
            cfg.agent_secrets = self.keys.agent_secrets(settings, &agent.name);
        }
        self.slots.set_limit(settings.tasks.parallel_limit as usize);
        cfg.tasks.slots = Some(self.slots.clone());
        Engine::on(&self.runtime, cfg)
    }

    /// What a crash cut short (a revert, a landing) is finished, and decided tasks' worktrees no
    /// task needs any more are removed; called once the window is up.
    pub fn finish_interrupted(&self) {
        finishline_engine::agent::decision::finish_interrupted(&self.store, &self.data_dir);
    }

    /// The servers for these settings: the running set when the list is unchanged, so servers
    /// start once per app and not once per task.
    pub fn mcp_for(&self, settings: &Settings) -> Option<Arc<McpServers>> {
        let wanted: Vec<_> = settings.mcp_servers.iter().filter(|m| m.enabled).cloned().collect();
        let mut current = self.mcp.lock().unwrap_or_else(|p| p.into_inner());
        if current.as_ref().map(|c| c.configs()) != Some(wanted.as_slice()) {
            if let Some(old) = current.take() {
                tauri::async_runtime::spawn(async move { old.stop_all().await });
            }
            *current = config::owned_mcp_servers(settings, &self.keys, Some(self.processes.clone()));
        }
        current.clone()
    }

    /// Stops every MCP server; called when the app exits.
    pub fn stop_mcp(&self) {
        if let Some(m) = self.mcp.lock().unwrap_or_else(|p| p.into_inner()).take() {
            tauri::async_runtime::block_on(m.stop_all());
        }
        // And whatever else it started that still runs: an agent kept for a session's next turn.
        self.processes.end_all();
    }

    pub fn hold_import(&self, settings: Settings) {
        *self.import.lock().unwrap_or_else(|p| p.into_inner()) = Some(settings);
    }

    pub fn take_import(&self) -> Option<Settings> {
        self.import.lock().unwrap_or_else(|p| p.into_inner()).take()
    }

    pub fn take_startup_action(&self) -> Option<crate::commands::StartupAction> {
        self.startup.lock().unwrap_or_else(|p| p.into_inner()).take()
    }

    /// A launch handed over by a second instance replaces any action not yet taken.
    pub fn set_startup_action(&self, action: crate::commands::StartupAction) {
        *self.startup.lock().unwrap_or_else(|p| p.into_inner()) = Some(action);
    }

    /// Sessions whose run is live in this process.
    pub fn running_sessions(&self) -> Vec<SessionId> {
        self.runtime.running()
    }

    /// Keeps a view's event follower; the id is what the view gives back when it closes.
    pub fn keep_subscription(&self, task: tauri::async_runtime::JoinHandle<()>) -> u64 {
        let id = self.next_subscription.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        let mut subs = self.subscriptions.lock().unwrap_or_else(|p| p.into_inner());
        subs.insert(id, task);
        id
    }

    /// Stops a view's follower; false when it was already gone.
    pub fn end_subscription(&self, id: u64) -> bool {
        let task = self.subscriptions.lock().unwrap_or_else(|p| p.into_inner()).remove(&id);
        task.map(|t| t.abort()).is_some()
    }

    pub fn confirm_quit(&self) {
        self.quitting.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    pub fn quit_confirmed(&self) -> bool {
        self.quitting.load(std::sync::atomic::Ordering::SeqCst)
    }

    pub fn close_hidden(&self) {
        self.closing_hidden.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    pub fn closing_hidden(&self) -> bool {
        self.closing_hidden.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Calls off the exit a hidden close waits to make; once the app has decided to exit
    /// (`quit_confirmed`) it is too late.
    pub fn reopen(&self) {
        if !self.quit_confirmed() {
            self.closing_hidden.store(false, std::sync::atomic::Ordering::SeqCst);
        }
    }
}
