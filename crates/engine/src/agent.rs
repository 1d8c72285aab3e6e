//! The engine's front door: sessions start, run, wait for people, and end here. The desktop
//! shell and the CLI call these methods and nothing deeper. Each run is a task of its own; the
//! person's answers (permissions, questions, reviews) reach it through the store, where they are
//! recorded once, and a wake-up channel.

pub mod attempts;
pub mod changed_since_run;
pub mod changes;
pub mod comparison;
pub mod config;
pub mod decision;
pub mod discard;
mod dispatch;
pub mod ended_review;
mod evaluation;
pub mod evidence;
pub mod group_export;
pub mod history;
mod late_revert;
pub mod permission;
mod plan_run;
pub mod queue;
mod review;
pub mod run;
mod step_checks;
mod verify;
pub mod worker;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};

use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::domain::*;
use crate::error::{Error, Result};
use crate::event::EngineEvent;
use crate::judge::completion::CompletionConfig;
use crate::provider::{HttpProvider, Provider, ProviderConfig, RetryPolicy};
use crate::store::decisions::RequestKind;
use crate::store::{NewSession, Store};
use crate::tool::Toolbox;
use crate::workspace::checkpoint::Checkpoints;
pub use attempts::{AttemptSlot, Worker};
pub use decision::{OtherTasksFile, Overwrite, Rebased, ReviewChoice, ReviewOutcome};
pub use permission::PermissionPolicy;

/// A model endpoint: the provider and the model name.
#[derive(Clone)]
pub struct ModelEndpoint {
    pub provider: Arc<dyn Provider>,
    pub provider_name: String,
    pub model: String,
    /// The server's address (empty when there is none).
    pub base_url: String,
}

impl ModelEndpoint {
    pub fn http(config: ProviderConfig, model: impl Into<String>) -> Result<ModelEndpoint> {
        let provider_name = config.kind.name();
        let base_url = config.base_url.clone();
        let provider = HttpProvider::new(config).map_err(|e| Error::InvalidSettings { field: "provider", problem: e.message })?;
        Ok(ModelEndpoint { provider: Arc::new(provider), provider_name, model: model.into(), base_url })
    }

    /// No provider works with these settings: see [`crate::provider::Unconfigured`].
    pub fn unconfigured(problem: impl Into<String>) -> ModelEndpoint {
        let provider = crate::provider::Unconfigured { problem: problem.into() };
        ModelEndpoint { provider: Arc::new(provider), provider_name: "unconfigured".into(), model: String::new(), base_url: String::new() }
    }
}

#[derive(Clone)]
pub struct EngineConfig {
    pub data_dir: PathBuf,
    pub agent: ModelEndpoint,
    /// The evaluator's endpoint; the agent's when `None`.
    pub evaluator: Option<ModelEndpoint>,
    /// Plan mode's manager; the evaluator's when `None`.
    pub manager: Option<ModelEndpoint>,
    pub completion: CompletionConfig,
    pub retry: RetryPolicy,
    pub permissions: PermissionPolicy,
    pub verify_commands: Vec<String>,
    /// Those of `verify_commands` the front end added for this task (the CLI's `--verify`), not
    /// the settings': recorded with a task it starts, so that its later runs run them too.
    pub extra_verify: Vec<String>,
    /// Tools the front end allowed for this task without asking (the CLI's `--allow`, `all`
    /// among them): recorded with a task it starts, so that its later runs keep them.
    pub task_allowed: Vec<String>,
    /// The model's context window in tokens; compaction starts at 80 % of it.
    pub context_window: u64,
    /// Nobody set the window for this model: ask the server once (llama.cpp's `/props`, the
    /// model list), and use what it says instead of the default.
    pub learn_context_window: bool,
    pub max_output_tokens: Option<u32>,
    /// The longest one model step may take before it is stopped.
    pub step_limit: std::time::Duration,
    /// When one answer counts as repeating itself.
    pub runaway: crate::judge::runaway::RunawayConfig,
    /// Files larger than this are left out of checkpoints.
    pub checkpoint_max_file: u64,
    /// Approve verified completions without asking (only `verified_done` with a success or no claim).
    pub auto_approve: bool,
    /// A plan waits for the person (who may edit it) before its first step runs.
    pub review_plan: bool,
    /// Extra environment variable names to keep out of child processes (a custom key variable).
    pub secret_env: Vec<String>,
    /// Model name → price, for the review's cost.
    pub prices: std::collections::BTreeMap<String, crate::config::settings::Price>,
    /// MCP servers whose tools join the built-in ones; shared by every run of the app.
    pub mcp: Option<Arc<crate::mcp::McpServers>>,
    /// An external ACP agent that does the work of new sessions; `None`: the built-in agent.
    pub external: Option<crate::external::ExternalAgent>,
    /// How an external agent reaches Finishline's `complete_task` over stdio: the front end's
    /// own executable as a pipe. `None`: over HTTP, for agents that take it.
    pub claims_pipe: Option<crate::external::claims_pipe::PipeCommand>,
    /// Where tasks work (their own worktrees in a repository), how many at once, how they land.
    pub tasks: config::TaskPolicy,
    /// The process groups runs start (ACP agents, their terminals' commands), owned and ended
    /// by this process; shared by every engine of a front end, so quitting ends them all.
    pub processes: Arc<crate::process_groups::ProcessGroups>,
    /// The keychain's values for the external agent's environment (the keys the person gave
    /// it when it asked to log in), by variable; never written anywhere.
    pub agent_secrets: std::collections::BTreeMap<String, String>,
}

/// A person's answer to a waiting run.
#[derive(Debug, Clone)]
pub enum Answer {
    Permission(PermissionDecision),
    Question(Option<String>),
}

#[derive(Default)]
struct Live {
    /// The session's running run in this engine, and how to stop it.
    cancels: HashMap<SessionId, (RunId, CancellationToken)>,
    waiters: HashMap<RequestId, oneshot::Sender<Answer>>,
    /// External agents tasks were started with besides the engine's own (an attempt's), by name,
    /// so their later runs start the same command.
    agents: HashMap<String, crate::external::ExternalAgent>,
    /// Approves landing now, and how to stop the checks they run again before anything moves.
    /// Two approves of one session at once (a second waits its turn) each have their own, so a
    /// front end's stop reaches its own approve only; Stop for the session reaches both.
    landings: HashMap<SessionId, Vec<(u64, CancellationToken)>>,
    /// The next landing's number, telling its entry apart from another of the same session.
    next_landing: u64,
    /// Runs stopped because another process asked: their end says so.
    asked_elsewhere: std::collections::HashSet<SessionId>,
    /// What cuts short a run's wait before it asks its model again, by session.
    retry_wakes: HashMap<SessionId, Arc<tokio::sync::Notify>>,
}

/// Where a person's answer went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delivered {
    /// To the run of this process that waited for it.
    Here,
    /// To the run that asked, in another process (a terminal, a second window): it goes on
    /// with the answer there.
    Elsewhere(crate::store::RunsElsewhere),
    /// The process that asked is gone: a new run here carries the answer out.
    Resumed,
}

/// What a cancel did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stop {
    /// Its run here stopped, or what it waited for was cancelled.
    Stopped,
    /// Another process (a terminal, a second window) runs it, and was asked to stop it: it does
    /// within a second or so, as its own Cancel would.
    Asked(crate::store::RunsElsewhere),
    /// Nothing of it was running or waiting.
    Nothing,
}

impl Stop {
    /// Whether anything was stopped, or asked to stop.
    pub fn any(&self) -> bool {
        *self != Stop::Nothing
    }
}

/// Why a run stopped by [`Runtime::heed_cancel_asks`] ended, in its history and its terminal.
pub const ASKED_ELSEWHERE: &str = "asked from another terminal or the window";

/// An approve's landing while it may still be stopped; forgotten when it ends.
pub(crate) struct LandingStop {
    runtime: Arc<Runtime>,
    session: SessionId,
    id: u64,
    pub(crate) token: CancellationToken,
}

impl Drop for LandingStop {
    fn drop(&mut self) {
        let mut live = self.runtime.live();
        if let Some(stops) = live.landings.get_mut(&self.session) {
            stops.retain(|(id, _)| *id != self.id);
            if stops.is_empty() {
                live.landings.remove(&self.session);
            }
        }
    }
}

/// What every engine of one front end shares, whatever settings each was built from: the
/// history, the runs live in this process (their cancel tokens and the answers they wait for),
/// the agents tasks were started with, and work left running after decisions. The app keeps one
/// for its whole life and builds each run's [`Engine`] on it from the settings of the moment and
/// the session's record, so a follow-up reaches a session's run, waiter and agent whichever
/// engine started it, and is never built from the settings another task started with.
pub struct Runtime {
    pub store: Arc<Store>,
    live: Mutex<Live>,
    /// Work left running after a decision (a worktree being removed); see [`Engine::settle`].
    background: Mutex<Vec<std::thread::JoinHandle<()>>>,
    /// How many decisions are under way. A decision records itself before it leaves work in
    /// `background`, and a front end that exits on seeing it recorded (the CLI, when a run's
    /// auto-approval lands) must wait for that work too.
    deciding: (Mutex<usize>, Condvar),
    /// Whether [`Runtime::keep_alive`] started.
    kept_alive: std::sync::atomic::AtomicBool,
}

/// A decision under way, for as long as it lives; see [`Runtime::deciding`].
pub(crate) struct Deciding<'a>(&'a Runtime);

impl Drop for Deciding<'_> {
    fn drop(&mut self) {
        let (count, done) = &self.0.deciding;
        *count.lock().unwrap_or_else(|p| p.into_inner()) -= 1;
        done.notify_all();
    }
}

impl Runtime {
    pub fn new(store: Arc<Store>) -> Arc<Runtime> {
        Arc::new(Runtime {
            store,
            live: Mutex::new(Live::default()),
            background: Mutex::new(Vec::new()),
            deciding: (Mutex::new(0), Condvar::new()),
            kept_alive: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// Marks a decision under way until the returned guard is dropped.
    pub(crate) fn deciding(&self) -> Deciding<'_> {
        *self.deciding.0.lock().unwrap_or_else(|p| p.into_inner()) += 1;
        Deciding(self)
    }

    /// Returns once no decision is under way.
    fn decisions_done(&self) {
        let (count, done) = &self.deciding;
        let mut n = count.lock().unwrap_or_else(|p| p.into_inner());
        while *n > 0 {
            n = done.wait(n).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Whether a decision is under way in this process (a landing past the point where it can
    /// be stopped, a revert): a front end that is asked to stop lets it finish.
    pub fn deciding_now(&self) -> bool {
        *self.deciding.0.lock().unwrap_or_else(|p| p.into_inner()) > 0
    }

    fn live(&self) -> std::sync::MutexGuard<'_, Live> {
        self.live.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// What cuts short the wait of `session`'s run before it asks its model again.
    pub(crate) fn retry_wake(&self, session: &SessionId) -> Arc<tokio::sync::Notify> {
        self.live().retry_wakes.entry(session.clone()).or_default().clone()
    }

    /// Asks the model again now, where `session`'s run in this process waits to (a provider
    /// overloaded, a rate limit): whether one waited.
    pub fn retry_now(&self, session: &SessionId) -> bool {
        let waiting = self.store.session(session).is_ok_and(|s| s.status == SessionStatus::Retry) && self.live().cancels.contains_key(session);
        if waiting {
            self.retry_wake(session).notify_waiters();
        }
        waiting
    }

    /// Stops an approve's landing of `session` while its checks run on a moved branch, before
    /// the person's branch moves: nothing lands. False when none can be stopped.
    pub fn stop_landing(&self, session: &SessionId) -> bool {
        self.live().landings.get(session).map(|stops| stops.iter().for_each(|(_, c)| c.cancel())).is_some()
    }

    /// Stops every approve's landing still checking (a quit): each ends before anything moves,
    /// and says so. Returns how many there were.
    pub fn stop_landings(&self) -> usize {
        let live = self.live();
        live.landings.values().flatten().for_each(|(_, c)| c.cancel());
        live.landings.values().map(Vec::len).sum()
    }

    /// Registers an approve's landing of `session`, which [`Runtime::cancel`] can then stop.
    /// A stop the front end already holds (`within`) stops it too, whenever it comes.
    pub(crate) fn landing_stop(self: &Arc<Self>, session: &SessionId, within: Option<&CancellationToken>) -> LandingStop {
        let token = within.map_or_else(CancellationToken::new, CancellationToken::child_token);
        let id = {
            let mut live = self.live();
            let id = live.next_landing;
            live.next_landing += 1;
            live.landings.entry(session.clone()).or_default().push((id, token.clone()));
            id
        };
        LandingStop { runtime: self.clone(), session: session.clone(), id, token }
    }

    /// Whether a run of this session is live in this process (streaming, running a tool, or
    /// waiting for a person's answer); the window asks before closing over one.
    pub fn is_running(&self, session: &SessionId) -> bool {
        self.live().cancels.contains_key(session)
    }

    /// The sessions whose run is live in this process.
    pub fn running(&self) -> Vec<SessionId> {
        self.live().cancels.keys().cloned().collect()
    }

    /// Stops the session's run: the stream, the evaluator, commands and retry waits all end. A
    /// session left waiting for a person by a process that is gone (the app or the CLI was
    /// restarted) has no run to stop: its open requests are resolved as cancelled and it ends
    /// `cancelled`. No settings are needed for either.
    /// A plan cancelled before its go-ahead leaves its worktree unused: it goes in the background
    /// (recorded first, so a quit before it is done leaves it to the next start's sweep).
    /// A run another process is at work on (a terminal, a second window) is stopped by asking
    /// that process, which looks every second ([`Runtime::keep_alive`]).
    pub fn cancel(&self, data_dir: &Path, session: &SessionId) -> Stop {
        // A run, and an approve landing from it (auto-approve's): both stop.
        let run = self.live().cancels.get(session).map(|(_, c)| c.cancel()).is_some();
        if self.stop_landing(session) || run {
            return Stop::Stopped;
        }
        if let Ok(Some(elsewhere)) = self.store.ask_to_cancel(session) {
            return Stop::Asked(elsewhere);
        }
        let Ok((cancelled, unused)) = end_waiting(&self.store, session) else { return Stop::Nothing };
        if let Some(wt) = unused {
            let (store, data_dir, session) = (self.store.clone(), data_dir.to_path_buf(), session.clone());
            let job = std::thread::spawn(move || decision::remove_recorded(&store, &data_dir, &session, &wt, true));
            self.background.lock().unwrap_or_else(|p| p.into_inner()).push(job);
        }
        if cancelled {
            Stop::Stopped
        } else {
            Stop::Nothing
        }
    }

    /// Stops the runs of this process that another one asked to stop ([`Store::ask_to_cancel`]).
    /// Nothing is read while nothing runs here.
    pub fn heed_cancel_asks(&self) {
        if self.live().cancels.is_empty() {
            return;
        }
        let Ok(asked) = self.store.cancels_asked() else { return };
        for session in asked {
            let mut live = self.live();
            if let Some((_, c)) = live.cancels.get(&session) {
                c.cancel();
                live.asked_elsewhere.insert(session.clone());
            }
            drop(live);
            let _ = self.store.cancel_heeded(&session);
        }
    }

    /// Why the run of `session` was cancelled, when not by this process's own front end: said
    /// once, by the run that ends.
    pub(crate) fn why_cancelled(&self, session: &SessionId) -> Option<String> {
        self.live().asked_elsewhere.remove(session).then(|| ASKED_ELSEWHERE.to_string())
    }

    /// Keeps this process's leases alive (every five seconds) and heeds asks from other
    /// processes to cancel its runs (every second), for as long as the runtime lives. Started
    /// once however often it is called: each front end calls it where its runs begin.
    pub fn keep_alive(self: &Arc<Self>) {
        if self.kept_alive.swap(true, std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        let runtime = Arc::downgrade(self);
        tokio::spawn(async move {
            for tick in 1u64.. {
                tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                let Some(rt) = runtime.upgrade() else { return };
                rt.heed_cancel_asks();
                if tick % 5 == 0 {
                    let _ = rt.store.heartbeat();
                }
            }
        });
    }
}

pub struct Engine {
    pub store: Arc<Store>,
    pub config: EngineConfig,
    pub toolbox: Toolbox,
    runtime: Arc<Runtime>,
    /// The window the server reported, asked once per engine.
    learned_window: tokio::sync::OnceCell<Option<u64>>,
}

impl Engine {
    /// An engine with a runtime of its own: a front end that makes one engine (the CLI).
    pub fn new(store: Arc<Store>, config: EngineConfig) -> Arc<Engine> {
        // What a Finishline process that crashed left running (an agent, an MCP server) ends
        // now; groups of one still running are its own to end.
        crate::process_groups::ProcessGroups::end_left_behind(&config.data_dir);
        Engine::on(&Runtime::new(store), config)
    }

    /// An engine with these settings on a front end's shared runtime. The front end ends what
    /// a crashed process left running once, when it opens the runtime (the app does it as it
    /// opens its history), not for every engine.
    pub fn on(runtime: &Arc<Runtime>, config: EngineConfig) -> Arc<Engine> {
        Arc::new(Engine {
            store: runtime.store.clone(),
            config,
            toolbox: Toolbox::standard(),
            runtime: runtime.clone(),
            learned_window: tokio::sync::OnceCell::new(),
        })
    }

    pub fn runtime(&self) -> &Arc<Runtime> {
        &self.runtime
    }

    /// The context window runs compact against: the one set for the model, else what the
    /// server reports (a 4096-token llama.cpp server is not a 32k model), else the default.
    pub async fn context_window(&self) -> u64 {
        if !self.config.learn_context_window {
            return self.config.context_window;
        }
        let learned = self.learned_window.get_or_init(|| async { self.config.agent.provider.context_window(&self.config.agent.model).await }).await;
        learned.unwrap_or(self.config.context_window)
    }

    /// An external agent a task of this engine was started with, by its name.
    pub(crate) fn known_agent(&self, name: &str) -> Option<crate::external::ExternalAgent> {
        self.live().agents.get(name).cloned()
    }

    fn live(&self) -> std::sync::MutexGuard<'_, Live> {
        self.runtime.live()
    }

    /// The session's checkpoints: in the workspace's shared store, or in the store of its own
    /// that sessions made before stores were shared still have.
    pub fn checkpoints(&self, session: &SessionId, workspace: &std::path::Path) -> Result<Checkpoints> {
        let stores = self.config.data_dir.join("checkpoints");
        let own = stores.join(session.as_str());
        let cp = if own.join("HEAD").exists() { Checkpoints::open(&own, workspace)? } else { Checkpoints::open_shared(&stores, workspace, session.as_str())? };
        Ok(cp.with_max_file(self.config.checkpoint_max_file))
    }

    /// Creates a session for the task and starts its first run. Returns at once; follow the run
    /// with [`Store::subscribe`] or wait with [`Engine::wait`].
    pub fn start_session(self: &Arc<Self>, task: &str, workspace: &std::path::Path) -> Result<(SessionId, tokio::task::JoinHandle<()>)> {
        self.start_task(task, workspace, PlanMode::Off)
    }

    /// Like [`Engine::start_session`], with plan mode: `On` asks the manager for checked steps
    /// first, `Auto` lets it decide whether the task needs them.
    pub fn start_task(self: &Arc<Self>, task: &str, workspace: &std::path::Path, plan: PlanMode) -> Result<(SessionId, tokio::task::JoinHandle<()>)> {
        self.start_task_with(task, workspace, TaskOptions { plan, ..Default::default() })
    }

    /// Starts a task with every choice: plan mode, where it works (its own worktree in a git
    /// repository unless `isolation` says in place), the branch it starts from, and what to do
    /// when another task works in the same plain folder.
    pub fn start_task_with(self: &Arc<Self>, task: &str, workspace: &std::path::Path, opts: TaskOptions) -> Result<(SessionId, tokio::task::JoinHandle<()>)> {
        let meta = std::fs::metadata(workspace).map_err(|e| crate::workspace::unusable(workspace, &e))?;
        if !meta.is_dir() {
            return Err(crate::workspace::not_a_folder(workspace));
        }
        let workspace = workspace.canonicalize()?;
        let ws = workspace.to_string_lossy().into_owned();
        let isolation = opts.isolation.unwrap_or(self.config.tasks.isolation);
        let repo = match isolation {
            Isolation::Worktree => crate::workspace::worktree::repo_of(&workspace, &self.config.tasks.worktrees),
            Isolation::InPlace => None,
        };
        if repo.is_none() {
            if opts.isolation == Some(Isolation::Worktree) {
                // Asked for by name: working in the folder itself instead would do what the
                // person ruled out.
                return Err(Error::InvalidInput(format!(
                    "a task's own worktree needs a git repository with a commit that git can read: {ws} is not one (or is inside Finishline's worktrees). Make a first commit there (git init; git add -A; git commit), or let the task work in the folder itself (--isolation in-place)"
                )));
            }
            if let Some(base) = &opts.base {
                return Err(Error::InvalidInput(format!(
                    "--base {base}: {ws} is not worked on in a worktree of a git repository with a commit, so there is no branch to start from"
                )));
            }
            if opts.when_busy == WhenBusy::Ask {
                if let Some((other, title)) = self.store.live_in_folder(&ws, &SessionId(String::new()))?.first() {
                    // Its own folder: it may be one around or inside this one.
                    let there = self.store.session(other).map_or_else(|_| ws.clone(), |s| s.workspace);
                    // Either answer shares the folder with undecided work there too: said now,
                    // since this question is the only one asked.
                    let waiting: Vec<String> =
                        self.store.waiting_in_folder(&ws, &SessionId(String::new()))?.into_iter().map(|(_, t)| format!("“{t}”")).collect();
                    let also = if waiting.is_empty() {
                        String::new()
                    } else {
                        format!(" {} also {} for your review there.", waiting.join(" and "), if waiting.len() == 1 { "waits" } else { "wait" })
                    };
                    return Err(Error::WorkspaceBusy(format!(
                        "“{title}” is working in {there} right now.{also} Run this task anyway (they share the folder; each one's review and revert cover only its own changes), queue it to start when that one ends, or cancel. In a git repository each task gets its own worktree instead."
                    )));
                }
            }
            if opts.when_undecided == WhenUndecided::Ask {
                // Its changes wait undecided where this one would write: a file both change is
                // then one whose revert must ask, so the person hears of it before, not after.
                // Named by its title: the window's question opens it (an id is no help there).
                if let Some((other, title)) = self.store.waiting_in_folder(&ws, &SessionId(String::new()))?.first() {
                    let there = self.store.session(other).map_or_else(|_| ws.clone(), |s| s.workspace);
                    return Err(Error::WorkspaceUndecided(format!(
                        "“{title}” waits for your review in {there}, its changes not decided yet. Run this task anyway (the two share the folder: each one's review and revert cover only its own changes, and a revert asks before it undoes a file both changed), or decide that one first. In a git repository each task gets its own worktree instead."
                    )));
                }
            }
        }
        // A branch to start from that is not there is refused before the session is made: it
        // left an empty session in the history.
        if let Some(r) = &repo {
            crate::workspace::worktree::base_of(r, opts.base.as_deref())?;
        }
        // A session records who works on it: an external agent as provider `acp` and its name.
        let worker = opts.worker.clone().unwrap_or_else(|| match &self.config.external {
            Some(a) => Worker::External(a.clone()),
            None => Worker::Builtin { model: None },
        });
        let (provider, model, base_url) = match &worker {
            Worker::External(a) => {
                // Refused before anything is made: a task that cannot start must not leave a
                // session and a worktree behind.
                a.installed().map_err(Error::InvalidInput)?;
                self.live().agents.insert(a.name.clone(), a.clone());
                (crate::external::ACP_PROVIDER.to_string(), a.name.clone(), None)
            }
            Worker::Builtin { model } => (
                self.config.agent.provider_name.clone(),
                model.clone().unwrap_or_else(|| self.config.agent.model.clone()),
                recorded_url(&self.config.agent.base_url),
            ),
        };
        let (sid, _) = self.store.create_session(&NewSession { task: task.to_string(), workspace: ws.clone(), provider, model, base_url })?;
        if !self.config.extra_verify.is_empty() {
            self.store.append(&sid, None, EngineEvent::TaskVerify { commands: self.config.extra_verify.clone() })?;
        }
        if !self.config.task_allowed.is_empty() {
            self.store.append(&sid, None, EngineEvent::TaskAllowed { tools: self.config.task_allowed.clone() })?;
        }
        let place = match &repo {
            Some(r) => {
                let mut wt = crate::workspace::worktree::plan(r, &self.config.tasks.worktrees, sid.as_str(), task, opts.base.as_deref(), 1)?;
                if let Some(commit) = &opts.base_commit {
                    // Attempts of one task start from the same commit, whatever the branch did since.
                    wt.base_commit = commit.clone();
                }
                EngineEvent::TaskWorkspace { isolation: Isolation::Worktree, folder: wt.work_dir().to_string_lossy().into_owned(), worktree: Some(wt) }
            }
            None => EngineEvent::TaskWorkspace { isolation: Isolation::InPlace, folder: ws.clone(), worktree: None },
        };
        let run = RunId::new();
        if let Some(a) = &opts.attempt {
            let evaluator = self.config.evaluator.is_none().then(|| self.config.agent.model.clone()).filter(|m| !m.trim().is_empty());
            let evaluator_provider = evaluator.is_some().then(|| self.config.agent.provider_name.clone());
            let started =
                EngineEvent::AttemptStarted { group: a.group.clone(), number: a.number, of: a.of, label: a.label.clone(), evaluator, evaluator_provider };
            self.store.append(&sid, None, started)?;
        }
        self.store.append(&sid, None, place)?;
        self.store.begin_run(&sid, &run, |status| may_start(status).map(|_| RunTrigger::Task))?;
        let start = run::RunStart { trigger: RunTrigger::Task, user_message: Some(task.to_string()), answer: None, plan: opts.plan, continuation: None };
        let handle = self.spawn_queued(sid.clone(), run, start, opts.when_busy != WhenBusy::Run);
        Ok((sid, handle))
    }

    /// Starts a run of an existing session: after feedback, a new message, or to resume. The
    /// start is one step in the store, so of any number of racing starts exactly one runs.
    pub fn spawn_run(self: &Arc<Self>, session: SessionId, trigger: RunTrigger, user_message: Option<String>) -> Result<tokio::task::JoinHandle<()>> {
        let run = RunId::new();
        self.store.begin_run(&session, &run, |status| may_start(status).map(|_| trigger))?;
        Ok(self.spawn_begun(session, run, run::RunStart { trigger, user_message, answer: None, plan: PlanMode::Off, continuation: None }))
    }

    /// Runs a run the store has already begun (its lease and `run_started` are recorded), once
    /// it is its turn (see [`Engine::wait_for_turn`]).
    fn spawn_begun(self: &Arc<Self>, session: SessionId, run: RunId, start: run::RunStart) -> tokio::task::JoinHandle<()> {
        self.spawn_queued(session, run, start, true)
    }

    /// [`Engine::spawn_begun`]; `folder_turn`: wait while another task works in the same plain
    /// folder (false when the person chose to run beside it).
    fn spawn_queued(self: &Arc<Self>, session: SessionId, run: RunId, start: run::RunStart, folder_turn: bool) -> tokio::task::JoinHandle<()> {
        let cancel = CancellationToken::new();
        self.live().cancels.insert(session.clone(), (run.clone(), cancel.clone()));
        let engine = self.clone();
        tokio::spawn(async move {
            // Cleans up even if the run panics, and only what is this run's: a newer run of the
            // session keeps its cancel token and its lease.
            let current = Arc::new(Mutex::new(run.clone()));
            let _end = RunEnd { engine: engine.clone(), session: session.clone(), run: current.clone() };
            // A review as the task ended calls no model and runs no tool: it takes no place.
            let waits = start.trigger != RunTrigger::Review;
            let turn = if waits { engine.wait_for_turn(&session, &run, &cancel, folder_turn).await } else { Ok(Some(None)) };
            let _slot = match turn {
                Ok(Some(slot)) => slot,
                Ok(None) => {
                    let _ = engine.store.append_all(
                        &session,
                        Some(&run),
                        vec![
                            EngineEvent::RunFinished {
                                status: SessionStatus::Cancelled,
                                claim: Claim::None,
                                verdict: None,
                                end_reason: EndReason::Cancelled,
                                stuck: None,
                            },
                            EngineEvent::StatusChanged {
                                status: SessionStatus::Cancelled,
                                attempt: None,
                                max_retries: None,
                                next_retry_at: None,
                                message: engine.runtime.why_cancelled(&session),
                            },
                        ],
                    );
                    return;
                }
                Err(e) => {
                    let _ = engine.store.append_all(
                        &session,
                        Some(&run),
                        vec![
                            EngineEvent::Error { code: e.code(), message: e.to_string() },
                            EngineEvent::StatusChanged {
                                status: SessionStatus::Failed,
                                attempt: None,
                                max_retries: None,
                                next_retry_at: None,
                                message: Some(e.to_string()),
                            },
                        ],
                    );
                    return;
                }
            };
            let (mut run, mut start) = (run, start);
            // A plan's steps follow one another in this task: each run hands the session to the
            // next in the store, and here the cancel token and the cleanup follow it.
            while let Some((next, next_start)) = run::Run::execute(engine.clone(), session.clone(), run.clone(), start, cancel.clone()).await {
                *current.lock().unwrap_or_else(|p| p.into_inner()) = next.clone();
                engine.live().cancels.insert(session.clone(), (next.clone(), cancel.clone()));
                (run, start) = (next, next_start);
            }
        })
    }

    /// [`Runtime::cancel`].
    pub fn cancel(&self, session: &SessionId) -> Stop {
        self.runtime.cancel(&self.config.data_dir, session)
    }

    /// [`Runtime::retry_now`].
    pub fn retry_now(&self, session: &SessionId) -> bool {
        self.runtime.retry_now(session)
    }

    /// [`Runtime::keep_alive`].
    pub fn keep_alive(&self) {
        self.runtime.keep_alive()
    }

    /// [`Runtime::stop_landing`].
    pub fn stop_landing(&self, session: &SessionId) -> bool {
        self.runtime.stop_landing(session)
    }

    /// [`Runtime::deciding_now`].
    pub fn deciding_now(&self) -> bool {
        self.runtime.deciding_now()
    }

    /// [`Runtime::is_running`].
    pub fn is_running(&self, session: &SessionId) -> bool {
        self.runtime.is_running(session)
    }

    pub(crate) fn register_waiter(&self, request: &RequestId) -> oneshot::Receiver<Answer> {
        let (tx, rx) = oneshot::channel();
        self.live().waiters.insert(request.clone(), tx);
        rx
    }

    pub(crate) fn forget_waiter(&self, request: &RequestId) {
        self.live().waiters.remove(request);
    }

    /// Records the answer once, then hands it to the run waiting for it. When no run in this
    /// process waits (the process that asked is gone), the answer resumes the session: a new run
    /// carries out the call the request was about and goes on.
    fn deliver(self: &Arc<Self>, request: &RequestId, kind: RequestKind, events: Vec<EngineEvent>, answer: Answer) -> Result<Delivered> {
        let waiting_here = self.live().waiters.contains_key(request);
        if waiting_here {
            self.store.resolve_request(request, kind, SessionStatus::AwaitingApproval, None, events)?;
            if let Some(tx) = self.live().waiters.remove(request) {
                let _ = tx.send(answer);
            }
            return Ok(Delivered::Here);
        }
        // Another live process's run waits for it: recorded, that run picks it up.
        if let Some(elsewhere) = self.store.resolve_for_holder(request, kind, SessionStatus::AwaitingApproval, events.clone())? {
            return Ok(Delivered::Elsewhere(elsewhere));
        }
        // The answer and the run that carries it out are one step: a process that takes the
        // session meanwhile keeps its request (its lease refuses the step), and two answers
        // start one run.
        let run = RunId::new();
        let mut events: Vec<EngineEvent> = events.into_iter().filter(|e| !matches!(e, EngineEvent::StatusChanged { .. })).collect();
        events.push(EngineEvent::Activity { phase: ActivityPhase::Thinking, detail: "resuming from your answer".into() });
        let session = self.store.resolve_and_begin(request, kind, SessionStatus::AwaitingApproval, events, &run, RunTrigger::Resume)?;
        self.spawn_begun(
            session,
            run,
            run::RunStart { trigger: RunTrigger::Resume, user_message: None, answer: Some((request.clone(), answer)), plan: PlanMode::Off, continuation: None },
        );
        Ok(Delivered::Resumed)
    }

    /// Allow once, allow for the session, or deny. Applies once; a second answer is reported.
    pub fn respond_permission(self: &Arc<Self>, request: &RequestId, decision: PermissionDecision) -> Result<Delivered> {
        let events = vec![
            EngineEvent::PermissionResolved { request_id: request.clone(), decision },
            EngineEvent::StatusChanged { status: SessionStatus::Busy, attempt: None, max_retries: None, next_retry_at: None, message: None },
        ];
        self.deliver(request, RequestKind::Permission, events, Answer::Permission(decision))
    }

    /// Answers an `ask_user` question; `None` declines it.
    pub fn answer_question(self: &Arc<Self>, request: &RequestId, answer: Option<String>) -> Result<Delivered> {
        let declined = answer.as_deref().is_none_or(|a| a.trim().is_empty());
        let answer = if declined { None } else { answer };
        let events = vec![
            EngineEvent::QuestionAnswered { request_id: request.clone(), answer: answer.clone(), declined },
            EngineEvent::StatusChanged { status: SessionStatus::Busy, attempt: None, max_retries: None, next_retry_at: None, message: None },
        ];
        self.deliver(request, RequestKind::Question, events, Answer::Question(answer))
    }

    /// The person's review decision, applied once; [`Engine::decide`] with every choice.
    /// `force`: a revert may overwrite files someone changed after the run.
    pub fn submit_review(
        self: &Arc<Self>,
        review: &RequestId,
        decision: Decision,
        feedback: Option<String>,
        revert: bool,
        force: bool,
        by: DecidedBy,
    ) -> Result<ReviewOutcome> {
        self.decide(
            review,
            ReviewChoice { feedback, revert, overwrite: if force { Overwrite::All } else { Overwrite::Nothing }, ..ReviewChoice::new(decision, by) },
        )
    }

    fn pending_review_session(&self, review: &RequestId) -> Result<crate::store::SessionSummary> {
        let (session, kind, decided) = self.store.request_state(review)?.ok_or_else(|| Error::NotFound(format!("review {review}")))?;
        if kind != "review" {
            return Err(Error::InvalidInput(format!("{review} is not a review")));
        }
        if let Some(d) = decided {
            return Err(Error::AlreadyDecided(format!("review {review} was already decided ({d})")));
        }
        self.store.session(&session)
    }

    /// The session's plan, when it waits for the person's go-ahead.
    fn plan_waiting(&self, session: &SessionId) -> Result<Option<crate::plan::state::PlanState>> {
        plan_waiting(&self.store, session)
    }

    /// Runs a plan that waited for the person, with their edits (`steps`) or as the manager
    /// made it (`None`). Its first step starts in the same store step as the answer, so two
    /// answers start one run.
    pub fn run_plan(self: &Arc<Self>, session: &SessionId, steps: Option<Vec<crate::plan::PlanStep>>) -> Result<tokio::task::JoinHandle<()>> {
        let Some(waiting) = self.plan_waiting(session)? else {
            return Err(Error::InvalidInput("this session has no plan waiting for you".into()));
        };
        let original: Vec<crate::plan::PlanStep> = waiting.steps.iter().map(|s| s.step.clone()).collect();
        let steps = match steps {
            Some(s) => crate::plan::check_steps(s).map_err(Error::InvalidInput)?,
            None => original.clone(),
        };
        let edited = steps != original;
        let reviewed = EngineEvent::PlanReviewed { approved: true, edited, steps: steps.clone() };
        let mut state = waiting;
        state.apply(&reviewed);
        let task = self.store.session(session)?.task;
        let mut events = vec![reviewed];
        // The first step's brief carries the person's edits too, as every later one does.
        events.extend(run::plan_step_start(&crate::plan::edits::settled(&task, state.person_edits.as_ref()), &state, 0));
        let run = RunId::new();
        self.store.begin_run_then(
            session,
            &run,
            |status| {
                if status != SessionStatus::AwaitingApproval {
                    return Err(Error::AlreadyDecided(format!("the plan was already answered (the session is {})", status.as_str())));
                }
                Ok(RunTrigger::PlanStep)
            },
            events,
        )?;
        Ok(self.spawn_begun(
            session.clone(),
            run,
            run::RunStart { trigger: RunTrigger::PlanStep, user_message: None, answer: None, plan: PlanMode::Off, continuation: None },
        ))
    }

    /// Continues a session with a new message from the person: after an interruption (resume),
    /// a conversation turn, or a finished session.
    pub fn send_message(self: &Arc<Self>, session: &SessionId, message: &str) -> Result<tokio::task::JoinHandle<()>> {
        self.send_message_with(session, message, None)
    }

    /// [`Engine::send_message`], with the built-in agent going on with `model` from this run on
    /// when it is not the session's: a session started with a model its server does not have
    /// (or no longer has) is not lost with it. An external agent's session keeps its agent.
    pub fn send_message_with(self: &Arc<Self>, session: &SessionId, message: &str, model: Option<&str>) -> Result<tokio::task::JoinHandle<()>> {
        let msg = message.trim();
        let summary = self.store.session(session)?;
        let switch = match model.map(str::trim) {
            None => None,
            Some("") => return Err(Error::InvalidInput("the model to go on with has no name".into())),
            // An external agent's session records the agent, not a model: a model named for it
            // is its server's (the agent's own setting), no switch of the session's.
            Some(_) if summary.provider == crate::external::ACP_PROVIDER => None,
            Some(m) if m == summary.model => None,
            Some(m) => Some(EngineEvent::ModelSwitched { from: summary.model.clone(), to: m.to_string() }),
        };
        crate::store::within_message_limit(msg, "the message")?;
        // A folder moved or deleted since is said before a run starts: a run would only fail,
        // and its failure would replace how the session ended (rejected, approved) in the list.
        let folder = changes::folder_a_run_needs(&self.store.events(session, 0)?, &self.store.session(session)?.workspace);
        if let Err(e) = std::fs::metadata(&folder) {
            return Err(crate::workspace::unusable_now(&folder, &e));
        }
        let run = RunId::new();
        let trigger = self.store.begin_run_then(
            session,
            &run,
            |status| {
                may_start(status)?;
                // After an interruption the run resumes where the last one stopped.
                Ok(if status == SessionStatus::Interrupted { RunTrigger::Resume } else { RunTrigger::Message })
            },
            switch.into_iter().collect(),
        )?;
        Ok(self.spawn_begun(
            session.clone(),
            run,
            run::RunStart { trigger, user_message: (!msg.is_empty()).then(|| msg.to_string()), answer: None, plan: PlanMode::Off, continuation: None },
        ))
    }
}

/// What to do when another task works in the same plain folder right now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WhenBusy {
    /// Refuse with `workspace_busy`, so the front end can ask the person.
    #[default]
    Ask,
    /// Start once the other task's run ends (the session waits, `queued`).
    Queue,
    /// Run beside it: each task's review and revert still cover only its own changes.
    Run,
}

/// What to do when another task's changes in the same plain folder wait for the person's review
/// (nothing runs there: a queue would have nothing to wait for).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WhenUndecided {
    /// Start beside them: each task's review and revert cover only its own changes.
    #[default]
    Run,
    /// Refuse with `workspace_undecided`, so the front end can ask the person first.
    Ask,
}

/// A new task's choices beside its text and folder.
#[derive(Debug, Clone, Default)]
pub struct TaskOptions {
    pub plan: PlanMode,
    /// Where it works; the engine's policy when `None`.
    pub isolation: Option<Isolation>,
    /// The branch its worktree starts from; the person's current branch when `None`.
    pub base: Option<String>,
    pub when_busy: WhenBusy,
    pub when_undecided: WhenUndecided,
    /// Who does the task; the engine's agent when `None`.
    pub worker: Option<Worker>,
    /// The commit its worktree starts from, when it must be exactly that one (attempts).
    pub base_commit: Option<String>,
    /// The attempt of a group it is.
    pub attempt: Option<attempts::AttemptSlot>,
}

/// Whether a session in `status` may start a run.
fn may_start(status: SessionStatus) -> Result<()> {
    if status.is_running() {
        return Err(Error::InvalidInput(
            "the session is still running; wait for it to end, or cancel it (Cancel in the window, `sessions cancel` in a terminal)".into(),
        ));
    }
    if status == SessionStatus::AwaitingReview {
        // Sending it on with words is what a request for changes does.
        return Err(Error::InvalidInput("the task waits for your review: approve it, reject it, or request changes to send it on".into()));
    }
    if status == SessionStatus::AwaitingApproval {
        return Err(Error::InvalidInput("the session waits for your answer (a plan's go-ahead, a permission or a question); answer that first".into()));
    }
    Ok(())
}

/// A run's cleanup in this engine, on every way out of its task.
struct RunEnd {
    engine: Arc<Engine>,
    session: SessionId,
    /// The run that holds the session now (a plan hands it from step to step).
    run: Arc<Mutex<RunId>>,
}

impl Drop for RunEnd {
    fn drop(&mut self) {
        let run = self.run.lock().unwrap_or_else(|p| p.into_inner()).clone();
        // The lease goes first: once `is_running` says no, the session can be started again.
        let _ = self.engine.store.release_lease(&self.session, &run);
        let mut live = self.engine.live();
        if live.cancels.get(&self.session).is_some_and(|(r, _)| *r == run) {
            live.cancels.remove(&self.session);
            // An ask that came as the run ended on its own is not a later run's reason.
            live.asked_elsewhere.remove(&self.session);
            live.retry_wakes.remove(&self.session);
        }
    }
}

/// Cancels a session left waiting for the person by a process that is gone (its plan's go-ahead,
/// a permission or a question): no engine needed, so the CLI can do it with only the history.
/// False when the session is not waiting. A plan cancelled before its go-ahead ran nothing: its
/// worktree, unused, goes with its branch before this returns.
pub fn cancel_waiting(store: &Store, data_dir: &Path, session: &SessionId) -> Result<bool> {
    let (cancelled, unused) = end_waiting(store, session)?;
    if let Some(wt) = unused {
        decision::remove_recorded(store, data_dir, session, &wt, true);
    }
    Ok(cancelled)
}

/// [`cancel_waiting`]'s decision, recorded; with the worktree whose removal it recorded.
fn end_waiting(store: &Store, session: &SessionId) -> Result<(bool, Option<crate::workspace::worktree::TaskWorktree>)> {
    if store.session(session)?.status != SessionStatus::AwaitingApproval {
        return Ok((false, None));
    }
    let holder = RunId::new();
    store.acquire_lease(session, &holder)?;
    if plan_waiting(store, session)?.is_some() {
        // A plan waiting for its go-ahead: not run at all, so its worktree holds nothing of the
        // task's (the person may have worked in it meanwhile: then it stays, undecided).
        let events = store.events(session, 0)?;
        let unused = changes::current_worktree(&events).filter(|wt| changes::unused(&events, wt));
        let mut ending = vec![
            EngineEvent::PlanReviewed { approved: false, edited: false, steps: vec![] },
            EngineEvent::RunFinished { status: SessionStatus::Cancelled, claim: Claim::None, verdict: None, end_reason: EndReason::Cancelled, stuck: None },
            EngineEvent::StatusChanged { status: SessionStatus::Cancelled, attempt: None, max_retries: None, next_retry_at: None, message: None },
        ];
        ending.extend(unused.as_ref().map(changes::unused_removed));
        let done = store.append_all(session, None, ending);
        let _ = store.release_lease(session, &holder);
        return done.map(|_| (true, unused));
    }
    let mut cancelled = false;
    for (request, kind, _) in store.pending_requests(session)? {
        let kind = match kind.as_str() {
            "permission" => RequestKind::Permission,
            "question" => RequestKind::Question,
            _ => continue,
        };
        let mut events = vec![EngineEvent::RequestCancelled { request_id: request.clone() }];
        if !cancelled {
            events.push(EngineEvent::RunFinished {
                status: SessionStatus::Cancelled,
                claim: Claim::None,
                verdict: None,
                end_reason: EndReason::Cancelled,
                stuck: None,
            });
            events.push(EngineEvent::StatusChanged { status: SessionStatus::Cancelled, attempt: None, max_retries: None, next_retry_at: None, message: None });
        }
        cancelled |=
            store.resolve_request(&request, kind, if cancelled { SessionStatus::Cancelled } else { SessionStatus::AwaitingApproval }, None, events).is_ok();
    }
    let _ = store.release_lease(session, &holder);
    Ok((cancelled, None))
}

fn plan_waiting(store: &Store, session: &SessionId) -> Result<Option<crate::plan::state::PlanState>> {
    Ok(crate::plan::state::PlanState::from_events(&store.events(session, 0)?).filter(|p| p.awaiting_review))
}

/// A server's address as a session records it: without a user name or password in it, which
/// would otherwise sit in the history and its exports.
fn recorded_url(url: &str) -> Option<String> {
    let mut parsed = url::Url::parse(url).ok()?;
    let _ = parsed.set_username("");
    let _ = parsed.set_password(None);
    Some(parsed.to_string().trim_end_matches('/').to_string())
}
