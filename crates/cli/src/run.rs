//! `finishline run` and `sessions resume`: start the run, print its events as they are stored,
//! answer or refuse what it asks, and exit with the code of how it ended.

use std::io::IsTerminal;
use std::sync::Arc;
use std::time::Duration;

use finishline_engine::agent::{Delivered, Engine, OtherTasksFile, ReviewOutcome};
use finishline_engine::clock::SystemClock;
use finishline_engine::domain::*;
use finishline_engine::event::{EngineEvent, Envelope};
use finishline_engine::judge::criteria::Comment;
use finishline_engine::store::Store;
use futures_util::StreamExt;

use crate::typed::Typed;
use serde_json::json;

use crate::output::{errln, humanln, outln};
use crate::view::View;
use crate::{config, exit, ReviewMode, RunOptions};

pub enum Start {
    Task(String, finishline_engine::agent::TaskOptions),
    /// A session's id, the words to go on with, and the model `--model` named.
    Resume(String, String, Option<String>),
}

/// `run --task-file PATH`: the task as the file holds it, refused where the same text as the
/// argument would be (empty, over the engine's limit), but before anything is opened, so a file
/// that cannot be the task leaves nothing behind. Its last line breaks go, as `"$(cat PATH)"`
/// drops them: the same task as the same text typed.
pub fn task_from_file(path: &std::path::Path) -> Result<String, String> {
    use finishline_engine::store::MAX_TASK_BYTES;
    use std::io::Read;
    // `-` is standard input, as to every other tool (`git log | finishline run --task-file -`).
    let stdin = path == std::path::Path::new("-");
    let shown = if stdin { "- (standard input)".to_string() } else { path.display().to_string() };
    let unreadable = |e: std::io::Error| format!("--task-file {shown} cannot be read: {e}");
    let file = if stdin { None } else { Some(std::fs::File::open(path).map_err(unreadable)?) };
    // Typed at a terminal, a silent wait reads as hung: say how the task ends.
    if stdin && std::io::stdin().is_terminal() {
        errln!("finishline: type the task, then press Ctrl-D on a line of its own to start it (Ctrl-C leaves)");
    }
    // Never more than the limit is read: a huge file (or a device) cannot fill the memory.
    let mut bytes = Vec::new();
    let limit = MAX_TASK_BYTES as u64 + 1;
    match &file {
        Some(f) => f.take(limit).read_to_end(&mut bytes),
        None => std::io::stdin().lock().take(limit).read_to_end(&mut bytes),
    }
    .map_err(unreadable)?;
    if bytes.len() > MAX_TASK_BYTES {
        let size = file.and_then(|f| f.metadata().ok()).map(|m| m.len()).filter(|n| *n > MAX_TASK_BYTES as u64);
        return Err(format!(
            "--task-file {shown} is {} bytes; a task may be at most {MAX_TASK_BYTES} bytes (1 MB). Put long material in a file in the workspace and refer to it",
            size.map_or_else(|| format!("more than {MAX_TASK_BYTES}"), |n| n.to_string())
        ));
    }
    let text = String::from_utf8(bytes)
        .map_err(|e| format!("--task-file {shown} is not UTF-8 text (at byte offset {}): save it as UTF-8", e.utf8_error().valid_up_to()))?;
    // NULs pass as UTF-8 but are no text anyone typed: a UTF-16 file saved without its mark, or
    // a binary file given by mistake, would run as a task of invisible characters.
    if let Some(at) = text.find('\0') {
        return Err(format!("--task-file {shown} is not text: it holds NUL bytes (the first at byte offset {at}); if it is UTF-16, save it as UTF-8"));
    }
    let task = text.trim_end_matches(['\n', '\r']);
    if task.trim().is_empty() {
        return Err(format!("--task-file {shown}: the task is empty; describe what you want done"));
    }
    Ok(task.to_string())
}

pub(crate) fn fail(code: u8, json: bool, message: &str) -> u8 {
    say_failure(code, json, if code == exit::USAGE { "usage" } else { "failed" }, message)
}

/// An engine error, with the engine's own code on the `--json` line (`workspace_busy`, `auth`,
/// `not_found`…), the same code the window branches on, so a script can tell a busy folder it
/// may retry from a failure it may not.
pub(crate) fn fail_on(code: u8, json: bool, error: &finishline_engine::Error) -> u8 {
    fail_as(code, json, error.code(), &error.to_string())
}

/// An engine error told in the CLI's own words (its flags, not the window's buttons).
pub(crate) fn fail_as(code: u8, json: bool, error: finishline_engine::ErrorCode, message: &str) -> u8 {
    say_failure(code, json, error.as_str(), message)
}

fn say_failure(code: u8, json: bool, named: &str, message: &str) -> u8 {
    let message = &crate::hint::pasteable(message);
    if json {
        outln!("{}", json!({"type": "error", "code": named, "message": message}));
    }
    crate::output::say(&format!("finishline: {message}\n"));
    code
}

/// The engine a CLI command runs on, built from the settings and the flags, with whatever a
/// crash cut short finished first.
pub(crate) struct Opened {
    pub engine: Arc<Engine>,
    pub store: Arc<Store>,
    pub mcp: Option<Arc<finishline_engine::mcp::McpServers>>,
    pub interactive: bool,
    /// The sessions whose decision a crash (or a failure) cut short, finished as this command
    /// started: a command that asked for the same decision is answered by it.
    pub finished: Vec<SessionId>,
}

/// What a command's engine is for, by the same rule as the app's.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Need {
    /// It runs work that asks a model: without a provider and a model it is refused up front.
    Model,
    /// It records a decision (approve, reject, choose an attempt, cancel): never refused for the
    /// provider's sake.
    Decision,
}

pub(crate) fn open(opts: &RunOptions) -> Result<Opened, u8> {
    open_for(opts, Need::Model)
}

pub(crate) fn open_for(opts: &RunOptions, need: Need) -> Result<Opened, u8> {
    let json = opts.common.json;
    if let Some(problem) = flags_problem(opts) {
        return Err(fail(exit::USAGE, json, &problem));
    }
    let data_dir = config::data_dir(&opts.common);
    // A decision with no provider to ask: the settings as they are (a broken settings file is
    // still an error), and a provider that fails any run that follows with what is missing.
    let (resolved, unconfigured) = match (config::resolve(opts), need) {
        (Ok(r), _) => (r, None),
        (Err(problem), Need::Decision) => {
            let settings = config::settings(&data_dir).map_err(|e| fail(exit::USAGE, json, &e))?;
            (config::Resolved { key: None, settings }, Some(problem))
        }
        (Err(e), Need::Model) => return Err(fail(exit::USAGE, json, &e)),
    };
    let store = match Store::open_setting_aside_unreadable(&data_dir.join("history.db"), Arc::new(SystemClock)) {
        Ok((s, kept)) => {
            if let Some(kept) = kept {
                errln!("finishline: the history file was not a database any more: it is kept whole as {}, and a new history starts", kept.display());
            }
            Arc::new(s)
        }
        // Said once when the words already name the folder.
        Err(e) if e.to_string().contains(&data_dir.display().to_string()) => return Err(fail(exit::USAGE, json, &e.to_string())),
        Err(e) => return Err(fail(exit::USAGE, json, &format!("the history in {} cannot be opened: {e}", data_dir.display()))),
    };
    let _ = store.recover();
    let interactive = std::io::stdin().is_terminal() && !json;
    if let Some(problem) = unknown_tool(opts, &resolved.settings) {
        return Err(fail(exit::USAGE, json, &problem));
    }
    let mut settings = resolved.settings.clone();
    for t in opts.allow.iter().map(|a| a.trim()).filter(|a| !a.is_empty() && *a != "all") {
        settings.permissions.insert(t.trim().to_string(), finishline_engine::config::settings::PermissionDefault::Allow);
    }
    let cli_key = resolved.key.clone();
    let agent_settings = settings.provider.clone();
    let key_for = move |p: &finishline_engine::ProviderSettings| -> Option<finishline_engine::provider::ApiKey> {
        if *p == agent_settings {
            return cli_key.clone();
        }
        finishline_engine::config::secret::Keys::os().resolve(p).0
    };
    let (agent, evaluator) = match unconfigured {
        Some(problem) => (finishline_engine::agent::ModelEndpoint::unconfigured(problem), None),
        None => config::endpoints(&settings, &key_for).map_err(|e| fail(exit::USAGE, json, &e))?,
    };
    // One owner for every process group this CLI starts: the MCP servers and the run's agents.
    let processes = finishline_engine::process_groups::ProcessGroups::in_data_dir(&data_dir);
    let mcp = finishline_engine::agent::config::owned_mcp_servers(&settings, &finishline_engine::config::secret::Keys::os(), Some(processes.clone()));
    let ws = opts.workspace.canonicalize().unwrap_or(opts.workspace.clone());
    let ws = ws.to_string_lossy();
    let mut engine_config = finishline_engine::agent::config::engine_config(
        &settings,
        finishline_engine::agent::config::ConfigContext {
            data_dir: data_dir.clone(),
            workspace: &ws,
            model: None,
            mcp: mcp.clone(),
            nobody_to_ask: !interactive,
            allow_all: opts.allow.iter().any(|a| a == "all"),
            extra_verify: opts.verify.clone(),
        },
        agent,
        evaluator,
    );
    engine_config.review_plan = opts.plan_review == crate::PlanReview::Prompt;
    engine_config.task_allowed = opts.allow.iter().map(|a| a.trim().to_string()).filter(|a| !a.is_empty()).collect();
    engine_config.claims_pipe = finishline_engine::external::claims_pipe::PipeCommand::this_executable();
    engine_config.processes = processes;
    // The keys the person gave the agent in the window when it asked to log in.
    if let Some(agent) = &settings.agent {
        engine_config.agent_secrets = finishline_engine::config::secret::Keys::os().agent_secrets(&settings, &agent.name);
    }
    // As `--land` does: the process runs the one task, and what it says of where the task works
    // follows what was asked (no "make a first commit" to one told to work in place).
    if let Some(i) = opts.isolation {
        engine_config.tasks.isolation = isolation(i);
    }
    if let Some(l) = opts.land {
        engine_config.tasks.landing = l.mode();
    }
    // What a crashed Finishline left running ends first (as the engine is made), so that a
    // command of its still writing cannot change a file while its revert is finished; then a
    // revert or a landing that the crash cut short is finished before anything else.
    let engine = Engine::new(store.clone(), engine_config);
    let finished = finishline_engine::agent::decision::finish_interrupted(&store, &data_dir);
    Ok(Opened { engine, store, mcp, interactive, finished })
}

fn isolation(i: crate::IsolationArg) -> Isolation {
    match i {
        crate::IsolationArg::Worktree => Isolation::Worktree,
        crate::IsolationArg::InPlace => Isolation::InPlace,
    }
}

pub(crate) fn task_options(opts: &crate::TaskArgs) -> finishline_engine::agent::TaskOptions {
    use finishline_engine::agent::{TaskOptions, WhenBusy, WhenUndecided};
    TaskOptions {
        plan: opts.plan.mode(),
        isolation: opts.isolation.map(isolation),
        base: opts.base.clone(),
        when_busy: match opts.when_busy {
            crate::WhenBusyArg::Queue => WhenBusy::Queue,
            crate::WhenBusyArg::Run => WhenBusy::Run,
            crate::WhenBusyArg::Fail => WhenBusy::Ask,
        },
        // Otherwise it starts, and says whose undecided changes share the folder.
        when_undecided: if opts.when_busy == crate::WhenBusyArg::Fail { WhenUndecided::Ask } else { WhenUndecided::Run },
        ..Default::default()
    }
}

pub async fn run(start: Start, opts: RunOptions) -> u8 {
    let json = opts.common.json;
    if opts.agent.is_some() {
        crate::hint::remember_server_flags(&[
            ("--provider", opts.provider.as_ref()),
            ("--base-url", opts.base_url.as_ref()),
            ("--model", opts.model.as_ref()),
            ("--api-key-env", opts.api_key_env.as_ref()),
            ("--evaluator-provider", opts.evaluator_provider.as_ref()),
            ("--evaluator-base-url", opts.evaluator_base_url.as_ref()),
            ("--evaluator-model", opts.evaluator_model.as_ref()),
            // A command of the person's own is not known by the name the session records.
            ("--agent", opts.agent.as_ref()),
        ]);
    }
    let Opened { engine, store, mcp, interactive, .. } = match open(&opts) {
        Ok(o) => o,
        Err(code) => return code,
    };
    // A resumed session prints only what this run adds; a new one prints from its creation.
    let mut after = 0;
    let new_task = matches!(start, Start::Task(..));
    let started = match start {
        Start::Task(task, how) => engine.start_task_with(&task, &opts.workspace, how).map(|(sid, _)| sid),
        Start::Resume(id, message, model) => {
            let sid = SessionId(id);
            let summary = store.session(&sid);
            after = summary.as_ref().map(|s| s.last_seq).unwrap_or(0);
            let switches = |s: &finishline_engine::store::SessionSummary| {
                s.provider != finishline_engine::external::ACP_PROVIDER && model.as_deref().is_some_and(|m| m.trim() != s.model)
            };
            if summary.as_ref().is_ok_and(|s| s.status == SessionStatus::AwaitingApproval && switches(s)) {
                // The run that asked goes on as it was: a model named now would be ignored unsaid.
                let answer = crate::hint::command(&format!("sessions resume {sid} \"YOUR ANSWER\""));
                return fail(exit::USAGE, json, &format!("the session waits for your answer to what its run asked, and that run goes on with its own model: answer it first (`{answer}`), then name another model when you go on after it"));
            }
            if summary.as_ref().is_ok_and(|s| s.status == SessionStatus::AwaitingApproval) {
                // Left waiting by a process that is gone: answering it resumes the run.
                match answer_stranded(&engine, &store, &sid, &opts, interactive, &message).await {
                    Ok(()) => Ok(sid),
                    Err(code) => return code,
                }
            } else if summary.as_ref().is_ok_and(|s| s.status == SessionStatus::AwaitingReview) {
                // Words for a task whose review waits are a request for changes, made there.
                let send = crate::hint::command(&format!(
                    "sessions review {sid} --request-changes {}",
                    crate::hint::quoted(if message.trim().is_empty() { "what should change" } else { message.trim() })
                ));
                let look = crate::hint::command(&format!("sessions review {sid}"));
                return fail(exit::USAGE, json, &format!("the task waits for your review: send it on with `{send}`, or see it and decide with `{look}`"));
            } else if message.trim().is_empty()
                && summary.as_ref().is_ok_and(|s| matches!(s.status, SessionStatus::Idle | SessionStatus::Completed | SessionStatus::Rejected))
            {
                // Without words only a run that stopped short (failed, cancelled, interrupted) goes on.
                return fail(exit::USAGE, json, &format!("say what to do next: {}", crate::hint::command(&format!("sessions resume {sid} \"…\""))));
            } else {
                engine.send_message_with(&sid, &message, model.as_deref()).map(|_| sid)
            }
        }
    };
    let sid = match started {
        Ok(s) => s,
        Err(e) if e.code() == finishline_engine::ErrorCode::NotFound => return fail_on(exit::USAGE, json, &e),
        // The window asks; here the flags are the answer.
        Err(e) if e.code() == finishline_engine::ErrorCode::WorkspaceBusy => {
            let ws = opts.workspace.canonicalize().unwrap_or(opts.workspace.clone()).to_string_lossy().into_owned();
            let working = store.live_in_folder(&ws, &SessionId(String::new())).ok().and_then(|l| l.into_iter().next());
            let Some((other, title)) = working else { return fail_on(exit::FAILED, json, &e) };
            // Its own folder: it may be one around or inside this one.
            let ws = store.session(&other).map_or(ws, |s| s.workspace);
            return fail_as(
                exit::FAILED,
                json,
                e.code(),
                &format!(
                    "“{title}” ({other}) is working in {ws} right now, so this task did not start: run it beside that one with --when-busy run (each one's review and revert cover only its own changes), or queue it to start when that one ends with --when-busy queue. In a git repository each task gets its own worktree instead."
                ),
            );
        }
        Err(e) if e.code() == finishline_engine::ErrorCode::WorkspaceUndecided => {
            let ws = opts.workspace.canonicalize().unwrap_or(opts.workspace.clone()).to_string_lossy().into_owned();
            let waiting = store.waiting_in_folder(&ws, &SessionId(String::new())).ok().and_then(|l| l.into_iter().next());
            let Some((other, title)) = waiting else { return fail_on(exit::FAILED, json, &e) };
            let ws = store.session(&other).map_or(ws, |s| s.workspace);
            let decide = crate::hint::command(&format!("sessions review {other}"));
            return fail_as(
                exit::FAILED,
                json,
                e.code(),
                &format!(
                    "“{title}” ({other}) waits for your review in {ws}, its changes not decided yet, so this task did not start: decide that one first (`{decide}`), or run this one beside it with --when-busy run (each one's review and revert cover only its own changes, and a revert asks before it undoes a file both changed). In a git repository each task gets its own worktree instead."
                ),
            );
        }
        Err(e) => return fail_on(if e.code() == finishline_engine::ErrorCode::InvalidInput { exit::USAGE } else { exit::FAILED }, json, &e),
    };
    if new_task {
        say_shared_folder(&store, &sid);
        say_land_unused(&store, &sid, &opts);
    }
    let code = follow(&engine, &store, &sid, &opts, after, interactive).await;
    if let Some(m) = &mcp {
        m.stop_all().await;
    }
    // Whatever the run started and still runs (an agent kept for the next turn) ends with us.
    engine.config.processes.end_all();
    // A decided task's worktree is removed after the decision: let that finish before exiting.
    tokio::task::block_in_place(|| engine.settle());
    code
}

/// Follows a session's runs to their end: prints what they do, answers or refuses what they
/// ask, and returns the exit code of how they ended.
async fn follow(engine: &Arc<Engine>, store: &Arc<Store>, sid: &SessionId, opts: &RunOptions, after: u64, interactive: bool) -> u8 {
    let json = opts.common.json;
    let sid = sid.clone();
    engine.keep_alive();
    tokio::spawn(stop_on_signal(engine.clone(), sid.clone()));
    let mut view = View::new(json, after);
    if after > 0 {
        // A follow-up's review says where it stands among the rounds told before this command.
        let told = store.events(&sid, 0).unwrap_or_default();
        view.round = crate::view::Round::after(told.iter().filter(|e| e.seq <= after).map(|e| &e.event));
    }
    let mut events = Box::pin(store.subscribe(sid.clone(), after));
    let mut runs_finished = 0;
    let mut auto_refused = false;
    let code = loop {
        let env: Envelope = match events.next().await {
            Some(Ok(e)) => e,
            Some(Err(e)) => break fail_on(exit::FAILED, json, &e),
            None => break exit::FAILED,
        };
        view.show(&env);
        if !json && env.seq > after {
            say_where_it_works(engine, store, &sid, &env);
        }
        match &env.event {
            // A request that ends meanwhile (the task cancelled elsewhere) is not answered here:
            // what became of it comes next on the stream.
            EngineEvent::PermissionRequested { request_id, tool, input, .. } => {
                if let Some(d) = ask_permission(store, &sid, request_id, tool, input).await {
                    let _ = engine.respond_permission(request_id, d);
                }
            }
            EngineEvent::ToolCall { state: ToolState::Denied, tool, kind, output: Some(why), .. } if why.contains("nobody to ask") => {
                say_unasked(&sid, tool, kind.as_deref())
            }
            // With nobody to answer, the question stays open for a later answer: declining it
            // here would record a refusal nobody made.
            EngineEvent::QuestionAsked { question, .. } if !interactive => {
                say_question_waits(&sid, question);
                break exit::WAITING;
            }
            EngineEvent::QuestionAsked { request_id, question, .. } => {
                let q = format!("The agent asks: {question}\nYour answer (empty to decline): ");
                if let Some(answer) = answer_at_terminal(store, &sid, request_id, &q).await {
                    let _ = engine.answer_question(request_id, answer);
                }
            }
            EngineEvent::PlanCreated { awaiting_review: true, .. } => {
                if let Some(code) = go_ahead_here(engine, store, &sid, env.seq, interactive, json).await {
                    break code;
                }
            }
            EngineEvent::RunFinished { .. } => runs_finished += 1,
            // Approved, but it could not land: the review stays open for a person.
            EngineEvent::LandingBlocked { reason, .. } if !interactive || opts.review != ReviewMode::Prompt => {
                errln!(
                    "finishline: approved, but not landed; the review waits for you: {}",
                    landing_ways(
                        *reason,
                        &crate::hint::command(&format!("sessions review {sid} --approve")),
                        Some(&crate::hint::command(&format!("sessions review {sid} --resolve")))
                    )
                );
                break exit::WAITING;
            }
            EngineEvent::ReviewRequested { review_id, end_reason, claim, auto_approve, .. } => {
                // The engine decides what auto-approve takes (never a change the audit flagged).
                let auto_ok = opts.review == ReviewMode::Approve
                    && auto_approve
                        .as_ref()
                        .map(|a| a.approved)
                        .unwrap_or(*end_reason == EndReason::VerifiedDone && matches!(claim, Claim::Success | Claim::None));
                auto_refused = opts.review == ReviewMode::Approve && !auto_ok;
                if auto_ok {
                    continue; // the engine approves it itself
                }
                match opts.review {
                    ReviewMode::Reject => reject_unattended(engine, &mut view, &sid, review_id, opts.force_revert),
                    ReviewMode::Prompt if interactive => match prompt_review(store, &sid, review_id, &mut view).await {
                        Reviewed::Decided(d, fb) => {
                            if let Some(code) = decide_in_terminal(engine, &sid, &mut view, review_id, d, fb, opts.force_revert) {
                                break code;
                            }
                        }
                        // The input closed: the review stays open, said below.
                        Reviewed::Closed => break exit::WAITING,
                        Reviewed::Elsewhere => break decided_elsewhere(store, &sid),
                    },
                    _ => {}
                }
            }
            EngineEvent::StatusChanged { status: SessionStatus::Busy, .. } if runs_finished > 0 => runs_finished = 0,
            EngineEvent::StatusChanged { status, .. } if runs_finished > 0 || matches!(status, SessionStatus::Failed) => {
                if let Some(code) = settled(store, &sid, *status, opts, interactive, auto_refused).await {
                    break code;
                }
            }
            _ => {}
        }
    };
    // Drain what is already stored so the printed log is complete.
    catch_up(&mut view, store, &sid);
    view.summary(store, &sid);
    say_what_waits(store, &sid, code);
    code
}

/// After a run that exits 6 (waiting): what waits for the person, and the command for it.
fn say_what_waits(store: &Store, sid: &SessionId, code: u8) {
    if code != exit::WAITING {
        return;
    }
    let Ok(s) = store.session(sid) else { return };
    if s.status == SessionStatus::AwaitingReview {
        errln!(
            "finishline: it waits for your review: {} (or --reject, --request-changes \"…\"), or decide in the app",
            crate::hint::command(&format!("sessions review {sid} --approve"))
        );
    }
    // No review to decide: what waits is the person's own look at the answer.
    if s.status == SessionStatus::Idle && s.end_reason == Some(EndReason::ConversationUnchecked) {
        errln!(
            "finishline: the evaluator could not check this answer, so it waits for your own look: read it with `{}`; to go on, `{}`",
            crate::hint::command(&format!("sessions show {sid}")),
            crate::hint::command(&format!("sessions resume {sid} \"…\""))
        );
    }
}

/// Why a run stopped that nobody cancelled: its output's reader went away (`| head`).
/// Said once: the run's end and the stop that waits for it may both get here.
fn say_reader_gone(sid: &SessionId) {
    static SAID: std::sync::Once = std::sync::Once::new();
    SAID.call_once(|| {
        crate::output::say(&format!(
            "finishline: the output was closed (whatever read it, `head` or a pager, went away), so the run stopped as Ctrl-C stops it; `{}` goes on\n",
            crate::hint::command(&format!("sessions resume {sid}"))
        ))
    });
}

/// The exit code once the session has settled in `status` after a run, or `None` while it goes
/// on (an auto-approval landing, a person deciding in the terminal).
async fn settled(store: &Store, sid: &SessionId, status: SessionStatus, opts: &RunOptions, interactive: bool, auto_refused: bool) -> Option<u8> {
    match status {
        SessionStatus::Completed => Some(exit::OK),
        SessionStatus::Rejected => Some(exit::REJECTED),
        SessionStatus::Failed => Some(exit::FAILED),
        SessionStatus::Cancelled => {
            if crate::output::is_closed() {
                say_reader_gone(sid);
            }
            Some(exit::CANCELLED)
        }
        SessionStatus::Idle => {
            let end = store.session(sid).ok().and_then(|s| s.end_reason);
            Some(if end == Some(EndReason::Conversation) { exit::OK } else { exit::WAITING })
        }
        SessionStatus::AwaitingReview => {
            let waiting = match opts.review {
                ReviewMode::Approve => auto_refused || store.session(sid).map(|s| s.end_reason != Some(EndReason::VerifiedDone)).unwrap_or(true),
                ReviewMode::Prompt => !interactive,
                ReviewMode::Reject => false,
            };
            if waiting {
                // Give an auto-approval a moment to land before declaring we wait.
                tokio::time::sleep(Duration::from_millis(50)).await;
                let s = store.session(sid).map(|s| s.status).unwrap_or(SessionStatus::AwaitingReview);
                if s == SessionStatus::AwaitingReview {
                    return Some(exit::WAITING);
                }
            }
            None
        }
        _ => None,
    }
}

/// The review was decided in another process while this terminal asked: its events reach only
/// that process, so the decision is read from the history, said, and this ends as the task did.
fn decided_elsewhere(store: &Store, sid: &SessionId) -> u8 {
    let status = store.session(sid).map(|s| s.status).unwrap_or(SessionStatus::Failed);
    let (what, code) = match status {
        SessionStatus::Completed => ("approved", exit::OK),
        SessionStatus::Rejected => ("rejected", exit::REJECTED),
        SessionStatus::Cancelled => ("cancelled", exit::CANCELLED),
        SessionStatus::Failed => ("failed", exit::FAILED),
        // Changes were requested: the task goes on in the process that asked for them.
        _ => ("sent back to the agent, which goes on where that was decided", exit::OK),
    };
    crate::output::say(&format!("\nDecided elsewhere (another terminal or the window): {what}.\n"));
    code
}

/// How long a run has, after Ctrl-C, SIGTERM or SIGHUP, to record that it was cancelled before
/// the CLI ends what it started and exits anyway.
pub(crate) const STOP_GRACE: Duration = Duration::from_secs(4);

/// Ctrl-C, SIGTERM (a `timeout`, CI, systemd), SIGHUP (the terminal closed) and a closed standard
/// output all stop the run the same way: it is cancelled and recorded so, then the follow loop
/// ends, and the process groups the run started go with the CLI. A run that does not record its end in time, or a
/// second signal, ends them and exits at once: an agent must never outlive the CLI.
async fn stop_on_signal(engine: Arc<Engine>, sid: SessionId) {
    let Some(mut signals) = finishline_engine::stop_signals::StopSignals::listen() else { return };
    // A reader that went away (`| head`) stops the run too: nothing it does can be shown.
    let reader_gone = tokio::select! {
        _ = signals.next() => false,
        _ = crate::output::closed() => true,
    };
    // Nothing runs while the review waits at the terminal: stopping leaves it open, as Ctrl+D
    // does, rather than calling a task that ended cancelled.
    if !engine.is_running(&sid) && engine.store.session(&sid).is_ok_and(|s| s.status == SessionStatus::AwaitingReview) {
        // An approve given here, checking the task on a moved branch: its checks stop before
        // anything moves, so nothing lands. Past that point it finishes whole first.
        if engine.stop_landing(&sid) {
            tokio::select! {
                _ = tokio::time::sleep(STOP_GRACE) => {}
                _ = signals.next() => {}
            }
        } else if engine.deciding_now() {
            // The decision the person gave here finishes, and the terminal reports it and exits;
            // a second signal does not wait.
            signals.next().await;
            engine.config.processes.end_all();
            std::process::exit(exit::CANCELLED as i32);
        }
        // What the run started and still runs (an MCP server, an agent kept for the next turn).
        engine.config.processes.end_all();
        crate::output::say(&format!(
            "\nfinishline: stopped; the review waits for you: `{}` (or --reject, --request-changes)\n",
            crate::hint::command(&format!("sessions review {sid} --approve"))
        ));
        std::process::exit(exit::WAITING as i32);
    }
    engine.cancel(&sid);
    // An auto-approve's landing past its stop point finishes whole, however long that takes
    // (cut off, the checkout would be left half written); a second signal does not wait.
    let ended = async {
        tokio::time::sleep(STOP_GRACE).await;
        while engine.deciding_now() {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    };
    tokio::select! {
        _ = ended => {}
        _ = signals.next() => {}
    }
    engine.config.processes.end_all();
    // A closed terminal (SIGHUP) fails writes: said without a panic.
    if reader_gone {
        say_reader_gone(&sid);
    } else {
        crate::output::say("finishline: stopped\n");
    }
    std::process::exit(exit::CANCELLED as i32);
}

/// A plan left waiting for its go-ahead (as the history was read up to `since`): `--plan-review
/// approve` (resume's default) runs it as the manager made it; `prompt` shows it and asks in a
/// terminal, and elsewhere leaves it waiting.
async fn run_waiting_plan(
    engine: &Arc<Engine>,
    sid: &SessionId,
    plan: &finishline_engine::plan::state::PlanState,
    since: u64,
    opts: &RunOptions,
    interactive: bool,
) -> Result<(), u8> {
    let json = opts.common.json;
    let go = match opts.plan_review {
        crate::PlanReview::Approve => true,
        crate::PlanReview::Prompt if interactive => {
            errln!("This session's plan waits for your go-ahead:");
            for (i, s) in plan.steps.iter().enumerate() {
                errln!("  {}. {} — done when: {}", i + 1, s.step.title, s.step.criteria.join("; "));
            }
            match ask_go_ahead(&engine.store, sid, since).await {
                GoAhead::Given(yes) => yes,
                GoAhead::Closed => false,
                GoAhead::Elsewhere => {
                    say_plan_answered_elsewhere(&engine.store, sid);
                    // Run from there, it goes on there: nothing waits for this terminal.
                    return Err(if engine.store.session(sid).is_ok_and(|s| s.status == SessionStatus::Cancelled) { exit::CANCELLED } else { exit::OK });
                }
            }
        }
        crate::PlanReview::Prompt => false,
    };
    if !go {
        say_plan_waits(sid, "still waits");
        return Err(exit::WAITING);
    }
    engine.run_plan(sid, None).map(|_| ()).map_err(|e| fail_on(exit::FAILED, json, &e))
}

/// Answers the requests a session was left waiting on, in the terminal (or by `--allow`). With
/// nobody to ask, says so and exits as waiting: the request stays for the app or a terminal.
async fn answer_stranded(engine: &Arc<Engine>, store: &Store, sid: &SessionId, opts: &RunOptions, interactive: bool, message: &str) -> Result<(), u8> {
    let json = opts.common.json;
    let events = store.events(sid, 0).map_err(|e| fail_on(exit::FAILED, json, &e))?;
    if let Some(plan) = finishline_engine::plan::state::PlanState::from_events(&events).filter(|p| p.awaiting_review) {
        let since = events.last().map_or(0, |e| e.seq);
        return run_waiting_plan(engine, sid, &plan, since, opts, interactive).await;
    }
    let pending = store.pending_requests(sid).map_err(|e| fail_on(exit::FAILED, json, &e))?;
    let Some((request, kind, payload)) = pending.into_iter().find(|(_, k, _)| k == "permission" || k == "question") else {
        return Err(fail(
            exit::FAILED,
            json,
            &format!(
                "the session waits for an answer but has no open request; cancel it with `{}` or resume it from the app",
                crate::hint::command(&format!("sessions cancel {sid}"))
            ),
        ));
    };
    let answered = if kind == "permission" {
        let tool = payload["tool"].as_str().unwrap_or("a tool").to_string();
        let allowed = opts.allow.iter().any(|a| a == "all" || *a == tool);
        let decision = if allowed {
            Some(PermissionDecision::AllowOnce)
        } else if interactive {
            errln!("This session was left waiting for your permission.");
            match ask_permission(store, sid, &request, &tool, &payload["input"]).await {
                Some(d) => Some(d),
                None => return Err(decided_elsewhere(store, sid)),
            }
        } else {
            None
        };
        decision.map(|d| engine.respond_permission(&request, d))
    } else if !message.trim().is_empty() {
        // `sessions resume ID "ANSWER"`, as the question said.
        Some(engine.answer_question(&request, Some(message.trim().to_string())))
    } else if interactive {
        let question = payload["question"].as_str().unwrap_or("(no question text)");
        let q = format!("The agent asked: {question}\nYour answer (empty to decline): ");
        match answer_at_terminal(store, sid, &request, &q).await {
            Some(answer) => Some(engine.answer_question(&request, answer)),
            None => return Err(decided_elsewhere(store, sid)),
        }
    } else {
        None
    };
    match answered {
        Some(Ok(Delivered::Elsewhere(r))) => {
            // The run that asked goes on with it there, and asks its review there.
            errln!("finishline: your answer was handed to the run in process {} on {}; the task goes on there", r.pid, r.host);
            Err(exit::OK)
        }
        Some(Ok(_)) => Ok(()),
        Some(Err(e)) => Err(fail_on(exit::FAILED, json, &e)),
        None => {
            if kind == "question" {
                say_question_waits(sid, payload["question"].as_str().unwrap_or("(no question text)"));
            } else {
                errln!("finishline: the session waits for your {kind}; answer it in a terminal, with --allow, or in the app");
            }
            Err(exit::WAITING)
        }
    }
}

/// What is wrong with flags that would otherwise be taken quietly: a misspelt `--allow` would
/// refuse the tool it meant to allow, an empty `--verify` would pass as a check, and a folder
/// whose name is not text cannot be kept in the history by name.
fn flags_problem(opts: &RunOptions) -> Option<String> {
    if opts.verify.iter().any(|v| v.trim().is_empty()) {
        return Some("--verify needs a command (an empty one would pass as a check)".into());
    }
    if opts.force_revert && opts.review == crate::ReviewMode::Approve {
        return Some("--force-revert goes with a reject (--review reject, or your answer at the review): --review approve reverts nothing".into());
    }
    // An empty name ran the built-in agent without a word: say which.
    if opts.agent.as_deref().is_some_and(|a| a.trim().is_empty()) {
        return Some("--agent needs a name: builtin, opencode, gemini, claude-code, codex, goose, or an ACP agent's command line".into());
    }
    // The folder as the history will name it: `.` in a folder whose name is not text, too.
    if opts.workspace.canonicalize().unwrap_or(opts.workspace.clone()).to_str().is_none() {
        return Some(format!(
            "the folder {} has a name that is not UTF-8 text, which the history cannot keep: rename it, or work in another folder",
            opts.workspace.display()
        ));
    }
    None
}

/// A tool `--allow` names that Finishline's own agent does not have, for a new task of that
/// agent (an external agent's tools have its own names, known only once it asks).
fn unknown_tool(opts: &RunOptions, settings: &finishline_engine::config::settings::Settings) -> Option<String> {
    if opts.on_session || settings.agent.is_some() {
        return None;
    }
    let tools = finishline_engine::tool::Toolbox::standard();
    // An MCP server's tools are named `server__tool`; an empty name is a trailing comma.
    let unknown = opts.allow.iter().map(|a| a.trim()).find(|a| !a.is_empty() && *a != "all" && tools.get(a).is_none() && !a.contains("__"))?;
    let names: Vec<&str> = tools.names().collect();
    Some(format!("--allow {unknown}: Finishline's agent has no such tool; name one of {}, an MCP server's tool as server__tool, or all", names.join(", ")))
}

/// The plan the run just made waits for the person: asked at a terminal, and run when they say
/// yes. The exit code when following ends here (no, nobody to ask, Ctrl+D, a failed start).
async fn go_ahead_here(engine: &Arc<Engine>, store: &Store, sid: &SessionId, seq: u64, interactive: bool, json: bool) -> Option<u8> {
    if !interactive {
        say_plan_waits(sid, "waits for your go-ahead");
        return Some(exit::WAITING);
    }
    match ask_go_ahead(store, sid, seq).await {
        GoAhead::Given(true) => {}
        // No is not cancel: the plan waits, to be edited in the window or run later.
        GoAhead::Given(false) => {
            say_plan_waits(sid, "still waits");
            return Some(exit::WAITING);
        }
        GoAhead::Closed => {
            say_plan_waits(sid, "waits for your go-ahead");
            return Some(exit::WAITING);
        }
        // What became of it arrives next on the stream, and is followed from there.
        GoAhead::Elsewhere => {
            say_plan_answered_elsewhere(store, sid);
            return None;
        }
    };
    // The planning run is ending as the plan is shown: let it let go of the session.
    for _ in 0..250 {
        if !engine.is_running(sid) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    engine.run_plan(sid, None).err().map(|e| fail_on(exit::FAILED, json, &e))
}

/// What came of asking for a plan's go-ahead at the terminal.
enum GoAhead {
    /// Yes (Enter too) or no.
    Given(bool),
    /// The input closed (Ctrl+D): the plan still waits.
    Closed,
    /// Run, edited or cancelled meanwhile from another terminal or the window.
    Elsewhere,
}

/// Asks for the go-ahead of the plan that waits since `seq`. While it waits, an answer given
/// elsewhere (run, edited or cancelled: each records the plan reviewed) ends the question: one
/// typed here then would be refused, or would run a plan the person had just cancelled. Only
/// what came after `seq` is read, five times a second.
async fn ask_go_ahead(store: &Store, sid: &SessionId, seq: u64) -> GoAhead {
    crate::output::say("Run this plan? [Y/n] ");
    let answered = || store.events(sid, seq).is_ok_and(|es| es.iter().any(|e| matches!(e.event, EngineEvent::PlanReviewed { .. })));
    match crate::typed::line_unless(answered).await {
        Typed::Line(a) => GoAhead::Given(a.is_empty() || a.to_lowercase().starts_with('y')),
        Typed::Closed => GoAhead::Closed,
        Typed::Stopped => GoAhead::Elsewhere,
    }
}

/// The plan this terminal asked about was answered from another terminal or the window.
fn say_plan_answered_elsewhere(store: &Store, sid: &SessionId) {
    let how = if store.session(sid).is_ok_and(|s| s.status == SessionStatus::Cancelled) { "cancelled" } else { "answered" };
    errln!("\nfinishline: the plan was {how} in another terminal or the window; nothing is asked here");
}

/// A plan that waits for the person: said on stderr, with the commands that run or cancel it.
fn say_plan_waits(sid: &SessionId, waits: &str) {
    errln!(
        "finishline: the plan {waits}: run it with `{}`, edit it in the window, or cancel it with `{}`",
        crate::hint::command(&format!("sessions resume {sid}")),
        crate::hint::command(&format!("sessions cancel {sid}"))
    );
}

/// The agent's question, with no terminal to answer it in: said on stderr, with the command
/// that answers it.
fn say_question_waits(sid: &SessionId, question: &str) {
    let answer = crate::hint::command(&format!("sessions resume {sid} \"YOUR ANSWER\""));
    errln!("finishline: the agent asks: {question}\nThere is no terminal to answer in: answer with `{answer}`, or in the app");
}

/// A tool that needed the person's permission, with no terminal to ask it in, was not run: said
/// on stderr, with the command that goes on with it allowed. An external agent's tool is allowed
/// by its kind (`edit`): its title names one file ("Writing to a.txt") and allows only that.
pub(crate) fn say_unasked(sid: &SessionId, tool: &str, kind: Option<&str>) {
    let allow = crate::hint::quoted(kind.unwrap_or(tool));
    let again = crate::hint::command(&format!("sessions resume {sid} \"go on\" --allow {allow}"));
    errln!("finishline: {tool} needs your permission and there is no terminal to ask, so it was not run; to go on with it allowed: `{again}` (or run in a terminal)");
}

/// The person's answer at the terminal to a request of the run (a question, a permission):
/// `Some(None)` for an empty line or a closed input. `None` once the request no longer waits,
/// answered or ended from another terminal or the window (the task cancelled there): a line
/// typed then would land on nothing.
pub(crate) async fn answer_at_terminal(store: &Store, sid: &SessionId, request: &RequestId, q: &str) -> Option<Option<String>> {
    crate::output::say(q);
    let open = || store.pending_requests(sid).is_ok_and(|p| p.iter().any(|(r, _, _)| r == request));
    match crate::typed::line_unless(move || !open()).await {
        Typed::Line(a) => Some((!a.is_empty()).then_some(a)),
        Typed::Closed => Some(None),
        Typed::Stopped => {
            crate::output::say("\n");
            if let Some(answer) = answered_elsewhere(store, sid, request) {
                errln!("Answered elsewhere (another terminal or the window): {answer}");
            }
            None
        }
    }
}

/// How a request was answered from another terminal or the window, in the words of its
/// answer; `None` when it was not answered (the task cancelled).
fn answered_elsewhere(store: &Store, sid: &SessionId, request: &RequestId) -> Option<String> {
    store.events(sid, 0).ok()?.into_iter().rev().find_map(|e| match e.event {
        EngineEvent::QuestionAnswered { request_id, answer, .. } if request_id == *request => Some(answer.unwrap_or_else(|| "(declined)".into())),
        EngineEvent::PermissionResolved { request_id, decision, .. } if request_id == *request => Some(
            match decision {
                PermissionDecision::AllowOnce => "allowed once",
                PermissionDecision::AllowSession => "allowed for this session",
                PermissionDecision::Deny => "denied",
            }
            .into(),
        ),
        _ => None,
    })
}

/// Allow once, always or not: asked as [`answer_at_terminal`] asks.
pub(crate) async fn ask_permission(store: &Store, sid: &SessionId, request: &RequestId, tool: &str, input: &serde_json::Value) -> Option<PermissionDecision> {
    let q = format!("Allow {tool} {}? [y]es once / [a]lways this session / [N]o: ", input);
    Some(match answer_at_terminal(store, sid, request, &q).await?.map(|s| s.to_ascii_lowercase()) {
        Some(a) if a.starts_with('y') => PermissionDecision::AllowOnce,
        Some(a) if a.starts_with('a') => PermissionDecision::AllowSession,
        _ => PermissionDecision::Deny,
    })
}

/// What came of asking for the review at the terminal.
enum Reviewed {
    Decided(Decision, Option<String>),
    /// The input closed (Ctrl+D): the review stays open.
    Closed,
    /// Decided meanwhile from another terminal or the window.
    Elsewhere,
}

/// The person's decision at the terminal; an answer it does not know asks again. While it waits,
/// a decision made elsewhere ends the question.
async fn prompt_review(store: &Store, sid: &SessionId, review: &RequestId, view: &mut View) -> Reviewed {
    // The run's end is said before the question: it comes a moment after the review is asked for.
    let end = std::time::Instant::now() + Duration::from_secs(1);
    while store.session(sid).is_ok_and(|s| s.status != SessionStatus::AwaitingReview) && std::time::Instant::now() < end {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    catch_up(view, store, sid);
    let open = || store.pending_requests(sid).is_ok_and(|p| p.iter().any(|(r, k, _)| r == review && k == "review"));
    let answer = |q: &str| {
        crate::output::say(q);
        crate::typed::line_unless(move || !open())
    };
    loop {
        let a = match answer("Review: [a]pprove / [c]hange (give feedback) / [r]eject: ").await {
            Typed::Line(a) => a.to_ascii_lowercase(),
            Typed::Closed => return Reviewed::Closed,
            Typed::Stopped => return Reviewed::Elsewhere,
        };
        if a.starts_with('a') {
            // Past a weakened check or an unmet comment, as in the window, the person says so.
            let asked = asked_review(&store.events(sid, 0).unwrap_or_default(), review);
            let Some(q) = asked.approve_question() else { return Reviewed::Decided(Decision::Approve, None) };
            match answer(&q).await {
                Typed::Line(y) if y.to_ascii_lowercase().starts_with('y') => return Reviewed::Decided(Decision::Approve, None),
                Typed::Line(_) => crate::output::say("Not approved: the review waits.\n"),
                Typed::Closed => return Reviewed::Closed,
                Typed::Stopped => return Reviewed::Elsewhere,
            }
            continue;
        } else if a.starts_with('r') {
            return Reviewed::Decided(Decision::Reject, None);
        } else if a.starts_with('c') {
            // The comments found not met go on with it: said before the question, as the window does.
            let unmet = finishline_engine::agent::decision::carried_on(&store.events(sid, 0).unwrap_or_default(), review).len();
            if unmet > 0 {
                let alone = if unmet == 1 { "it" } else { "them" };
                crate::output::say(&format!("{} with it, checked again (Enter alone sends only {alone}).\n", carried_words(unmet)));
            }
            match answer("What should change? ").await {
                Typed::Line(fb) if !fb.is_empty() => return Reviewed::Decided(Decision::RequestChanges, Some(fb)),
                Typed::Line(_) if unmet > 0 => return Reviewed::Decided(Decision::RequestChanges, None),
                // The agent would be sent back with nothing to go on; the person probably hit Enter.
                Typed::Line(_) => crate::output::say("Nothing was sent: the request was empty.\n"),
                Typed::Closed => return Reviewed::Closed,
                Typed::Stopped => return Reviewed::Elsewhere,
            }
            continue;
        }
        crate::output::say("Type a to approve, c to ask for changes or r to reject (Ctrl+D leaves the review open).\n");
    }
}

/// A line typed while the review still waits; `None` once it was decided elsewhere meanwhile
/// (another terminal, the window): a key typed then would land on a decided review. A closed
/// input is an empty line, the safe answer to each question asked here.
fn line_while_open(store: &Store, review: &RequestId, q: &str) -> Option<String> {
    crate::output::say(q);
    let open = || store.request_state(review).ok().flatten().is_some_and(|(_, _, decided)| decided.is_none());
    match crate::typed::line_unless_here(|| !open()) {
        Typed::Line(a) => Some(a.to_ascii_lowercase()),
        Typed::Closed => Some(String::new()),
        Typed::Stopped => None,
    }
}

/// A decision made at the terminal. A reject asks whether to revert the agent's changes, and
/// asks again before overwriting files the person edited after the agent. An approval that
/// cannot land offers the ways out. The exit code when following ends here: the review left
/// waiting, or decided elsewhere while one of these was asked.
fn decide_in_terminal(
    engine: &Arc<Engine>,
    sid: &SessionId,
    view: &mut View,
    review: &RequestId,
    decision: Decision,
    feedback: Option<String>,
    force_revert: bool,
) -> Option<u8> {
    let store = &engine.store;
    let waits = |open: bool| open.then_some(exit::WAITING);
    if decision == Decision::Approve {
        return match engine.submit_review(review, decision, None, false, false, DecidedBy::Person) {
            // Ctrl+C while it waited behind a decision from elsewhere: that one decides, and
            // nothing here is left to ask.
            Ok(ReviewOutcome::LandingBlocked { reason: LandingBlock::StoppedBehindAnother, detail, .. }) => {
                errln!("{}.", crate::hint::sentence(&detail));
                Some(exit::WAITING)
            }
            Ok(ReviewOutcome::LandingBlocked { reason, detail, files }) => {
                catch_up(view, store, sid);
                // Its event's line (`! not landed: …`) just said why.
                if !view.tells() {
                    errln!("{}", not_landed(&detail, &files));
                }
                // Only a moved branch is the agent's to resolve (the window offers the same).
                let resolvable = reason.agent_can_resolve();
                let q = if resolvable {
                    "[k]eep the task's branch for later / let the agent [r]esolve it / [l]eave the review open: "
                } else {
                    "[k]eep the task's branch for later / [l]eave the review open: "
                };
                let Some(a) = line_while_open(store, review, q) else { return Some(decided_elsewhere(store, sid)) };
                if a.starts_with('k') {
                    let choice = finishline_engine::agent::ReviewChoice {
                        landing: Some(LandingMode::Branch),
                        ..finishline_engine::agent::ReviewChoice::new(Decision::Approve, DecidedBy::Person)
                    };
                    waits(reported(engine, sid, view, review, engine.decide(review, choice)))
                } else if resolvable && a.starts_with('r') {
                    engine.resolve_conflict(review).map(|_| None).unwrap_or_else(|e| {
                        errln!("finishline: {e}");
                        Some(exit::WAITING)
                    })
                } else {
                    Some(exit::WAITING)
                }
            }
            other => waits(reported(engine, sid, view, review, other)),
        };
    }
    if decision != Decision::Reject {
        // Sent back, the next run starts at once: its lines follow the words that sent it.
        let outcome = engine.submit_review(review, decision, feedback, false, false, DecidedBy::Person);
        if matches!(outcome, Ok(ReviewOutcome::Decided { .. })) {
            report_review(outcome, Again::Asked);
            catch_up(view, store, sid);
            return None;
        }
        return waits(reported(engine, sid, view, review, outcome));
    }
    let revert = force_revert
        || match line_while_open(store, review, "Also revert the agent's changes to your files? [y/N]: ") {
            Some(a) => a.starts_with('y'),
            None => return Some(decided_elsewhere(store, sid)),
        };
    match engine.submit_review(review, decision, None, revert, force_revert, DecidedBy::Person) {
        Ok(ReviewOutcome::NeedsConfirmation { conflicts, no_file, other_tasks }) => {
            let asked = crate::hint::sentence(&in_the_way(&conflicts, &no_file, &other_tasks));
            let q = format!("{asked}. Overwrite {} too? [y/N]: ", if conflicts.len() == 1 { "it" } else { "them" });
            let Some(a) = line_while_open(store, review, &q) else { return Some(decided_elsewhere(store, sid)) };
            // Either way the rest is reverted; those files only when the person says so, and
            // only those: one edited while the question waited is left, and named.
            let choice = finishline_engine::agent::ReviewChoice {
                revert: true,
                overwrite: finishline_engine::agent::Overwrite::Files(if a.starts_with('y') { conflicts } else { vec![] }),
                ..finishline_engine::agent::ReviewChoice::new(Decision::Reject, DecidedBy::Person)
            };
            waits(reported(engine, sid, view, review, engine.decide(review, choice)))
        }
        other => waits(reported(engine, sid, view, review, other)),
    }
}

/// `--copy-ignored`: copies what `.gitignore` hid out of the task's worktree before the decision,
/// and says what it did. Err(exit code) when the decision must not go on.
fn copy_ignored_first(engine: &Arc<Engine>, review_id: &RequestId, paths: &[String], decision: Decision, json: bool) -> Result<(), u8> {
    let c = match tokio::task::block_in_place(|| engine.copy_ignored(review_id, paths)) {
        Ok(c) => c,
        Err(e) => {
            let usage = matches!(e.code(), finishline_engine::ErrorCode::InvalidInput | finishline_engine::ErrorCode::AlreadyDecided);
            return Err(fail_on(if usage { exit::USAGE } else { exit::FAILED }, json, &e));
        }
    };
    if json {
        outln!("{}", serde_json::json!({"type": "ignored_copied", "copied": c.copied, "left": c.left, "failed": c.failed}));
    } else {
        for (words, list) in [("Copied into your checkout", &c.copied), ("Left as it was, already in your checkout", &c.left), ("Not copied", &c.failed)] {
            if !list.is_empty() {
                crate::output::say(&format!("{words}: {}.\n", few(list)));
            }
        }
    }
    // A copy asked for and not made stops an approve or a reject: the worktree they remove
    // holds the only one.
    if !c.failed.is_empty() && decision != Decision::RequestChanges {
        let why = "nothing was decided, since the task's worktree holds the only copy of what was not copied: the review waits; make room for it and decide again, or decide without that --copy-ignored to let it go with the worktree";
        return Err(fail(exit::FAILED, json, why));
    }
    Ok(())
}

/// While an approve lands: Ctrl+C (or a SIGTERM) stops it before the person's branch moves (its
/// checks on a moved branch can take minutes), and it reports that nothing landed. Past that
/// point, or in no landing, the signal ends the process as it would have. The token goes in the
/// approve's [`finishline_engine::agent::ReviewChoice::stop`]: a signal as the approve starts,
/// before its landing exists, stops it too.
pub(crate) fn stop_landing_on_signal(engine: Arc<Engine>, sid: SessionId) -> (tokio::task::JoinHandle<()>, finishline_engine::CancellationToken) {
    let stop = finishline_engine::CancellationToken::new();
    let stopping = stop.clone();
    let listening = tokio::spawn(async move {
        let Some(mut signals) = finishline_engine::stop_signals::StopSignals::listen() else { return };
        signals.next().await;
        stopping.cancel();
        // Stopped before the branch moves, it reports that nothing landed; past that point it
        // finishes whole (dying half way would leave the checkout half written), and reports.
        // A second signal does not wait.
        if engine.stop_landing(&sid) || engine.deciding_now() {
            signals.next().await;
        }
        engine.config.processes.end_all();
        std::process::exit(i32::from(exit::CANCELLED));
    });
    (listening, stop)
}

/// Says how a decision at the terminal went; true when the review is still open (the decision
/// failed or stopped short), so the terminal stops waiting for events that will not come.
fn reported(engine: &Engine, sid: &SessionId, view: &mut View, review: &RequestId, outcome: finishline_engine::Result<ReviewOutcome>) -> bool {
    // Still undecided: a reject recorded before its revert failed is decided, and its end follows.
    let open = !matches!(outcome, Ok(ReviewOutcome::Decided { .. }))
        && engine.store.request_state(review).ok().flatten().is_none_or(|(_, _, decided)| decided.is_none());
    // What the decision did (its landing, its revert) is told before its outcome, and once.
    catch_up(view, &engine.store, sid);
    report(outcome, Again::Asked, view.tells());
    open
}

/// Shows what is stored past what the view showed, so that what happened is told before the
/// question or the outcome that follows it.
fn catch_up(view: &mut View, store: &Store, sid: &SessionId) {
    for e in store.events(sid, view.last_seq()).unwrap_or_default() {
        view.show(&e);
    }
}

/// Where a decision that stopped short can be made again, to name the command that does.
pub(crate) enum Again<'a> {
    /// At the terminal, which offers the ways out itself.
    Asked,
    /// `sessions review ID`.
    Review(&'a SessionId),
    /// `sessions attempts GROUP --choose ID`.
    Attempt(&'a GroupId, &'a SessionId),
}

/// A landing that stopped, and the other `--land` choices that can still go through, as the
/// command to run: keeping the branch always can; where uncommitted changes cannot hold the
/// task's files, a commit can. `approve` is the command that approved it.
fn landing_ways(reason: LandingBlock, approve: &str, resolve: Option<&str>) -> String {
    let keep = format!("to keep the task's branch for later instead: `{approve} --land branch`");
    match (reason, resolve) {
        // Its detail says how: the branch is where the repository went, out of Finishline's reach.
        (LandingBlock::RepositoryGone, _) => format!("once the repository is back: `{approve}`"),
        (LandingBlock::BranchMoved, _) => format!("to land it on top of what moved: `{approve}`; {keep}"),
        (LandingBlock::OutsideSparseCheckout, _) => format!("to land it as a commit instead: `{approve} --land squash` (or `--land merge`); {keep}"),
        (LandingBlock::VerificationFailed, Some(resolve)) => format!("to let the agent fix it: `{resolve}`; {keep}"),
        (r, Some(resolve)) if r.agent_can_resolve() => format!("to let the agent resolve it: `{resolve}`; {keep}"),
        _ => keep,
    }
}

/// A decision's outcome (or its error) as one line of JSON, for `--json`.
pub(crate) fn print_outcome(outcome: &finishline_engine::Result<ReviewOutcome>) {
    // Typed as every other line is: a script reading the run a decision starts tells the
    // decision's line by its `type`, as it does the events after it.
    let (kind, mut line) = match outcome {
        Ok(o) => ("review_outcome", serde_json::to_value(o).unwrap_or_default()),
        Err(e) => ("error", serde_json::to_value(e).unwrap_or_default()),
    };
    if let Some(fields) = line.as_object_mut() {
        fields.insert("type".into(), json!(kind));
    }
    outln!("{line}");
}

pub(crate) fn report_review(outcome: finishline_engine::Result<ReviewOutcome>, again: Again) {
    report(outcome, again, false);
}

/// How a decision went, `told`: after its own events were shown (the terminal's review, where
/// `✓ landed on main as …` and `reverted: …` were just printed), what they said is not said again.
fn report(outcome: finishline_engine::Result<ReviewOutcome>, again: Again, told: bool) {
    let next = next_step(&outcome, &again);
    match outcome {
        Ok(ReviewOutcome::Decided { revert: Some(r), .. }) if told && r.applied => {}
        // What the landing's line does not say: the person's hooks and signing it did not apply.
        Ok(ReviewOutcome::Decided { landed: Some(l), .. }) if told => {
            if let (Some(_), Some(_), Some(words)) = (&l.commit, &l.target_branch, not_applied_words(&l.hooks_not_run, l.unsigned)) {
                errln!("{words}");
            }
        }
        Ok(ReviewOutcome::Decided { revert: Some(r), .. }) if r.applied => {
            errln!("Reverted: {} restored, {} removed.", r.restored.len(), r.deleted.len());
            let changed = finishline_engine::store::export::changed_since(&r.conflicts, &r.not_copied);
            if !changed.is_empty() {
                errln!("Left as they are (changed after the agent): {}.", changed.join(", "));
            }
            for words in finishline_engine::store::export::copies_words(&r.copies, true) {
                errln!("{words}.");
            }
            for n in &r.not_copied {
                errln!("{}.", finishline_engine::store::export::not_copied_words(n));
            }
        }
        Ok(ReviewOutcome::Decided { landed: Some(l), .. }) if l.files.is_empty() && l.branch_kept.is_none() => match (&l.target_branch, l.already_held) {
            (Some(b), true) => errln!("Nothing to land: {b} already holds everything the task changed."),
            _ => errln!("Nothing to land: the task left every file git tracks as it was."),
        },
        Ok(ReviewOutcome::Decided { landed: Some(l), .. }) => match (&l.commit, &l.target_branch, &l.branch_kept) {
            (Some(c), Some(b), _) => {
                errln!("Landed on {b} as {}.", &c[..c.len().min(10)]);
                if let Some(elsewhere) = &l.checkout_elsewhere {
                    errln!("{}", elsewhere.words(b));
                }
                if let Some(words) = not_applied_words(&l.hooks_not_run, l.unsigned) {
                    errln!("{words}");
                }
            }
            (None, Some(b), _) => errln!("The task's changes are in your working tree (on {b}), not committed."),
            (_, _, Some(k)) => errln!("Kept the task's branch {k} for later; its worktree is removed (`git merge {k}` on the branch you want it on takes it)."),
            _ => {}
        },
        Ok(ReviewOutcome::Decided { kept: Some(k), .. }) => errln!(
            "Rejected; kept the branch {}{}{}. Delete it with `git branch -D {}` once you no longer need it.",
            k.branch,
            k.why.words(),
            if k.files.is_empty() { String::new() } else { format!(" ({})", few(&k.files)) },
            k.branch
        ),
        // Said, so a decision never passes without a word.
        Ok(ReviewOutcome::Decided { status: SessionStatus::Rejected, .. }) => errln!("Rejected."),
        Ok(ReviewOutcome::Decided { status: SessionStatus::Completed, .. }) => errln!("Approved."),
        Ok(ReviewOutcome::Decided { .. }) => errln!("Sent back to the agent."),
        Ok(ReviewOutcome::NeedsConfirmation { conflicts, no_file, other_tasks }) => errln!("Not reverted: {}.", in_the_way(&conflicts, &no_file, &other_tasks)),
        // Not a landing that stopped short: this approve never began, and the other decides.
        // No event of it was stored, so it is said even after the events were shown.
        Ok(ReviewOutcome::LandingBlocked { reason: LandingBlock::StoppedBehindAnother, detail, .. }) => errln!("{}.", crate::hint::sentence(&detail)),
        Ok(ReviewOutcome::LandingBlocked { .. }) if told => {}
        Ok(ReviewOutcome::LandingBlocked { detail, files, .. }) => {
            errln!("{}", not_landed(&detail, &files))
        }
        Err(e) => errln!("finishline: {e}"),
    }
    if let Some(next) = next {
        errln!("finishline: {next}");
    }
}

/// What is in a revert's way, each as what it is: a file someone changed after the agent (a copy
/// of it is kept if it is overwritten), or a pipe or a socket where the agent left no file (never
/// copied).
fn in_the_way(conflicts: &[String], no_file: &[String], other_tasks: &[OtherTasksFile]) -> String {
    let (pipes, edited): (Vec<&String>, Vec<&String>) = conflicts.iter().partition(|c| no_file.contains(c));
    let (theirs, edited): (Vec<&String>, Vec<&String>) = edited.into_iter().partition(|c| other_tasks.iter().any(|t| &&t.path == c));
    let join = |v: &[&String]| v.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ");
    let mut said = Vec::new();
    // Another task's work is named as that task's: "your version" would have the person think
    // the file holds only their own edit.
    for path in theirs {
        let by: Vec<&OtherTasksFile> = other_tasks.iter().filter(|t| &t.path == path).collect();
        let them = if by.len() == 1 { "that task's" } else { "their" };
        said.push(format!(
            "{path} was changed by another task here too, {}: it may hold {them} work, which reverting it would undo (a copy is kept if it is overwritten)",
            tasks_named(&by)
        ));
    }
    if !edited.is_empty() {
        said.push(format!("someone (you, or a command) changed {} after the agent (a copy of what is there now is kept if it is overwritten)", join(&edited)));
    }
    if !pipes.is_empty() {
        said.push(format!("a pipe or a socket is there now where the agent left no file, perhaps yours, which cannot be copied: {}", join(&pipes)));
    }
    said.join("; ")
}

/// Other tasks as the person finds them again: “title” (id), joined by "and".
fn tasks_named(tasks: &[&OtherTasksFile]) -> String {
    tasks.iter().map(|t| format!("“{}” ({})", t.title, t.session)).collect::<Vec<_>>().join(" and ")
}

/// The approved task's files that are not as it left them: the diff approved is not what the
/// folder holds there, and the approval changed nothing to make it so.
fn say_changed_since_run(drifted: &[finishline_engine::agent::changed_since_run::ChangedSinceRun]) {
    if drifted.is_empty() {
        return;
    }
    let each: Vec<String> = drifted
        .iter()
        .map(|d| {
            let by: Vec<&OtherTasksFile> = d.by.iter().collect();
            format!("{} (changed by {})", d.path, if by.is_empty() { "you, or a command".to_string() } else { tasks_named(&by) })
        })
        .collect();
    crate::output::say(&format!(
        "finishline: not as the task left them, and kept as they are now: {}. Its diff shows what it wrote there, not what the folder holds.\n",
        each.join(", ")
    ));
}

/// `--land` given for a task that works in the folder itself (not a repository with a commit):
/// nothing will land, its changes are already there. Said, not refused: the flag may come from
/// a script run over many folders.
fn say_land_unused(store: &Store, sid: &SessionId, opts: &RunOptions) {
    if opts.land.is_none() {
        return;
    }
    let Ok(s) = store.session(sid) else { return };
    if s.isolation == Some(Isolation::Worktree) {
        return;
    }
    let repository = finishline_engine::workspace::worktree::repo_of(std::path::Path::new(&s.workspace), std::path::Path::new("")).is_some();
    let why = if repository {
        "the settings have tasks work in the folder itself (--isolation worktree gives this one its own worktree)".to_string()
    } else {
        format!("{} is not a git repository with a commit, so the task works in the folder itself", s.workspace)
    };
    crate::output::say(&format!("finishline: --land has nothing to land here: {why}; its changes are already there, and approving keeps them.\n"));
}

/// A new task that works in place beside other tasks' undecided changes says so once: a later
/// revert that asks about a file both changed is then no surprise.
fn say_shared_folder(store: &Store, sid: &SessionId) {
    let Ok(s) = store.session(sid) else { return };
    if s.isolation == Some(Isolation::Worktree) {
        return;
    }
    let Ok(waiting) = store.waiting_in_folder(&s.workspace, sid) else { return };
    if waiting.is_empty() {
        return;
    }
    let named: Vec<String> = waiting.iter().map(|(id, title)| format!("“{title}” ({id})")).collect();
    crate::output::say(&format!(
        "finishline: this task shares this folder with {}, whose changes wait for your review: each one's review and revert cover only its own changes, and a revert asks before it undoes a file both changed.\n",
        named.join(" and ")
    ));
}

/// The two answers to a revert that stopped at files changed since: keep them and put back the
/// rest, or overwrite them too.
fn revert_ways(sid: &SessionId, decided: &str, files: usize) -> String {
    let (them, are, each) = if files == 1 { ("it", "it is", "it") } else { ("them", "they are", "each") };
    format!(
        "to put back the rest and keep {them} as {are}: `{}`; to overwrite {them} too (a copy of {each} is kept): `{}`",
        crate::hint::command(&format!("sessions review {sid} {decided} --keep-changed")),
        crate::hint::command(&format!("sessions review {sid} {decided} --force-revert"))
    )
}

/// What to do about a decision that stopped short, as the command that does it.
fn next_step(outcome: &finishline_engine::Result<ReviewOutcome>, again: &Again) -> Option<String> {
    match (outcome, again) {
        // Another way to land would wait behind the same decision: what it did is what to see.
        (Ok(ReviewOutcome::LandingBlocked { reason: LandingBlock::StoppedBehindAnother, .. }), Again::Review(sid) | Again::Attempt(_, sid)) => {
            Some(format!("to see how it ended: `{}`", crate::hint::command(&format!("sessions show {sid}"))))
        }
        (Ok(ReviewOutcome::LandingBlocked { reason, .. }), Again::Review(sid)) => Some(landing_ways(
            *reason,
            &crate::hint::command(&format!("sessions review {sid} --approve")),
            Some(&crate::hint::command(&format!("sessions review {sid} --resolve"))),
        )),
        (Ok(ReviewOutcome::LandingBlocked { reason, .. }), Again::Attempt(group, sid)) => {
            Some(landing_ways(*reason, &crate::hint::command(&format!("sessions attempts {group} --choose {sid}")), None))
        }
        // The review is still open: the same reject may overwrite those files too, or revert none.
        (Ok(ReviewOutcome::NeedsConfirmation { conflicts, .. }), Again::Review(sid)) => Some(format!(
            "{}; to reject without reverting anything: `{}`",
            revert_ways(sid, "--reject --revert", conflicts.len()),
            crate::hint::command(&format!("sessions review {sid} --reject"))
        )),
        _ => None,
    }
}

/// What `sessions review` decides.
pub struct Verdict {
    pub approve: bool,
    pub reject: bool,
    /// Send a landing that conflicts back to the agent, as the window's "Let the agent resolve it".
    pub resolve: bool,
    pub revert: bool,
    /// With `revert`: the files someone changed since are kept, the rest put back.
    pub keep_changed: bool,
    pub request_changes: Option<String>,
    /// `FILE:LINE[-LINE]=TEXT`, each a comment on the diff.
    pub comments: Vec<String>,
    /// `FILE:LINE[-LINE]`, each a comment the review found not met, let go.
    pub let_go: Vec<String>,
    /// What the review names as never landing, to copy into the person's checkout first.
    pub copy_ignored: Vec<String>,
    /// `FILE[:LINE]`: the audit's findings there, to dismiss for the task, or to count again.
    pub dismiss: Vec<String>,
    pub restore: Vec<String>,
}

/// `sessions review ID --resolve`: the agent merges the moved branch into its worktree, and the
/// run that does is followed to its end.
async fn resolve(engine: &Arc<Engine>, store: &Arc<Store>, sid: &SessionId, review_id: &RequestId, opts: &RunOptions) -> u8 {
    let json = opts.common.json;
    let after = store.session(sid).map(|s| s.last_seq).unwrap_or(0);
    if let Err(e) = tokio::task::block_in_place(|| engine.resolve_conflict(review_id)) {
        let usage = matches!(e.code(), finishline_engine::ErrorCode::InvalidInput | finishline_engine::ErrorCode::AlreadyDecided);
        return fail_on(if usage { exit::USAGE } else { exit::FAILED }, json, &e);
    }
    if json {
        // What the decision did, first, as after `--request-changes --json`.
        let status = store.session(sid).map(|s| s.status).unwrap_or(SessionStatus::Busy);
        print_outcome(&Ok(ReviewOutcome::Decided { status, revert: None, landed: None, kept: None }));
    } else {
        crate::output::say("Sent back to the agent to resolve the landing.\n");
    }
    let code = follow(engine, store, sid, opts, after, false).await;
    tokio::task::block_in_place(|| engine.settle());
    code
}

/// What goes with a decision, checked and made before it: the comments on the diff (recorded),
/// the comments let go (checked, their ids given back), the ignored files copied out. Nothing is
/// recorded when a comment or a let-go is wrong. Also gives the comments found not met that go
/// on with a request for changes besides those made now (which ask again what they repeat), to
/// be said with it. Err(exit code) when the decision must not go on.
fn before_deciding(engine: &Arc<Engine>, review_id: &RequestId, v: &Verdict, decision: Decision, json: bool) -> Result<(Vec<String>, Vec<Comment>), u8> {
    let comments = checked_cli_comments(engine, review_id, &v.comments, json)?;
    let events = engine.store.request_state(review_id).ok().flatten().and_then(|(sid, _, _)| engine.store.events(&sid, 0).ok()).unwrap_or_default();
    let mut open = finishline_engine::agent::decision::carried_on(&events, review_id);
    let let_go = let_go_ids(&open, &comments, &v.let_go).map_err(|e| fail(exit::USAGE, json, &e))?;
    open.retain(|c| decision == Decision::RequestChanges && !comments.iter().any(|n| n.criterion() == c.criterion()));
    if !v.copy_ignored.is_empty() {
        copy_ignored_first(engine, review_id, &v.copy_ignored, decision, json)?;
    }
    if !comments.is_empty() {
        engine.comments(review_id, comments).map_err(|e| fail_on(exit::USAGE, json, &e))?;
    }
    Ok((let_go, open))
}

/// "Your comment not met goes" / "Your 2 comments not met go": what a Request changes carries on.
fn carried_words(n: usize) -> String {
    if n == 1 {
        "Your comment not met goes".to_string()
    } else {
        format!("Your {n} comments not met go")
    }
}

/// What a Request changes sent besides what was typed: the comments found not met go on with it
/// (`open`), but those the person let go (`let_go`, their ids).
fn say_carried(open: &[finishline_engine::judge::criteria::Comment], let_go: &[String]) {
    let carried = open.iter().filter(|c| !let_go.contains(&c.id)).count();
    if carried > 0 {
        crate::output::say(&format!("{} with it, checked again.\n", carried_words(carried)));
    }
    for c in open.iter().filter(|c| let_go.contains(&c.id)) {
        crate::output::say(&format!("Let go, not asked again: {}.\n", c.criterion()));
    }
}

/// `finishline sessions review ID --approve | --reject [--revert] | --request-changes TEXT`.
pub async fn review(id: String, v: Verdict, opts: RunOptions) -> u8 {
    let json = opts.common.json;
    if !v.dismiss.is_empty() || !v.restore.is_empty() {
        return crate::findings::dismiss_or_restore(&id, &v.dismiss, &v.restore, &opts).unwrap_or_else(|code| code);
    }
    let decision = match decision_of(&v, json) {
        Ok(Some(d)) => d,
        Ok(None) => return open_ended_review_alone(&id, &opts).await.map_or_else(|code| code, |()| show_waiting_review(&id, &opts)),
        Err(code) => return code,
    };
    if let Some(why) = misplaced(decision, &v, &opts) {
        return fail(exit::USAGE, json, why);
    }
    let need = if decision == Decision::RequestChanges { Need::Model } else { Need::Decision };
    let Opened { engine, store, finished, .. } = match open_for(&opts, need) {
        Ok(o) => o,
        Err(code) => return code,
    };
    let sid = SessionId(id);
    if decision == Decision::Reject && v.revert && store.session(&sid).is_ok_and(|s| s.status == SessionStatus::Rejected) {
        if finished.contains(&sid) {
            if let Some(code) = say_revert_finished(&store, &sid, json) {
                return code;
            }
        }
        return revert_later(&engine, &sid, overwrite_of(&opts, &v), json);
    }
    if !v.comments.is_empty() && (decision != Decision::RequestChanges || v.resolve) {
        return fail(exit::USAGE, json, "--comment goes with --request-changes: comments are sent back to the agent");
    }
    // A landing to resolve needs a review that met one: an ended task's has none.
    if !v.resolve {
        if let Err(code) = open_ended_review(&engine, &store, &sid, json).await {
            return code;
        }
    }
    let pending = store.pending_requests(&sid).unwrap_or_default();
    let Some((review_id, _, _)) = pending.into_iter().find(|(_, k, _)| k == "review") else {
        return fail(exit::USAGE, json, &no_review(&store, &sid));
    };
    if v.resolve {
        return resolve(&engine, &store, &sid, &review_id, &opts).await;
    }
    let (let_go, open) = match before_deciding(&engine, &review_id, &v, decision, json) {
        Ok(both) => both,
        Err(code) => return code,
    };
    let choice = finishline_engine::agent::ReviewChoice {
        feedback: v.request_changes.clone(),
        revert: v.revert,
        overwrite: overwrite_of(&opts, &v),
        landing: opts.land.map(|l| l.mode()),
        let_go: let_go.clone(),
        ..finishline_engine::agent::ReviewChoice::new(decision, DecidedBy::Person)
    };
    let before = store.session(&sid).map(|s| s.last_seq).unwrap_or(0);
    let on_signal = (decision == Decision::Approve).then(|| stop_landing_on_signal(engine.clone(), sid.clone()));
    let choice = finishline_engine::agent::ReviewChoice { stop: on_signal.as_ref().map(|(_, stop)| stop.clone()), ..choice };
    let progress = (!json && decision == Decision::Approve).then(|| say_landing_progress(store.clone(), sid.clone(), before));
    // What the approve accepts unconfirmed is said with it: the flag is the person's word, and
    // scripts give it, so it does not ask.
    let accepted = (decision == Decision::Approve).then(|| asked_review(&store.events(&sid, 0).unwrap_or_default(), &review_id).accepted_lines());
    // Approving an attempt chooses it for its group: what that sets aside is said with it.
    let aside = (decision == Decision::Approve).then(|| crate::attempts::set_aside(&store, &sid)).flatten();
    // Looked at before: once approved, the review is no longer waiting. An approval in place
    // changes no file, so what it finds holds after it too.
    let drifted =
        if decision == Decision::Approve { tokio::task::block_in_place(|| engine.changed_since_run(&review_id)).unwrap_or_default() } else { Vec::new() };
    let outcome = tokio::task::block_in_place(|| engine.decide(&review_id, choice));
    if let Some((t, _)) = on_signal {
        t.abort();
    }
    if let Some(p) = progress {
        // What the decision appended last is said before its outcome.
        p.finish_at(store.session(&sid).map(|s| s.last_seq).unwrap_or(0)).await;
    }
    tokio::task::block_in_place(|| finishline_engine::fault::pause_at("review-decided"));
    if json {
        print_outcome(&outcome);
        if matches!(&outcome, Ok(ReviewOutcome::Decided { status: SessionStatus::Completed, .. })) && !drifted.is_empty() {
            outln!("{}", json!({"type": "changed_since_run", "files": drifted}));
        }
        // The run followed below starts after the decision's events: what was let go is one
        // of them, and said here.
        for e in store.events(&sid, before).unwrap_or_default().iter().filter(|e| matches!(e.event, EngineEvent::CommentsLetGo { .. })) {
            outln!("{}", serde_json::to_string(e).unwrap_or_default());
        }
    }
    let code = match &outcome {
        Ok(ReviewOutcome::Decided { status: SessionStatus::Completed, .. }) => exit::OK,
        Ok(ReviewOutcome::Decided { status: SessionStatus::Rejected, .. }) => exit::REJECTED,
        Ok(ReviewOutcome::Decided { .. }) => exit::OK,
        Ok(_) => exit::WAITING,
        Err(e) if e.code() == finishline_engine::ErrorCode::AlreadyDecided || e.code() == finishline_engine::ErrorCode::InvalidInput => exit::USAGE,
        Err(_) => exit::FAILED,
    };
    if !json {
        let mendable = matches!(&outcome, Ok(ReviewOutcome::LandingBlocked { reason, .. }) if reason.agent_can_resolve());
        crate::attempts::say_set_aside(&engine, &store, aside, matches!(&outcome, Ok(ReviewOutcome::Decided { .. })));
        let sent = matches!(&outcome, Ok(ReviewOutcome::Decided { .. }));
        report_review(outcome, Again::Review(&sid));
        if sent {
            say_carried(&open, &let_go);
        }
        if code == exit::REJECTED && !v.revert {
            say_changes_stay(&store, &sid);
        }
        if mendable {
            say_worktree_to_mend(&store, &sid);
        }
        if code == exit::OK && decision == Decision::Approve {
            say_changed_since_run(&drifted);
            crate::output::say(&accepted.unwrap_or_default());
            say_ignored_gone(&store, &sid, &review_id, &v.copy_ignored);
        }
    }
    if decision == Decision::RequestChanges && code == exit::OK {
        // The next run started here: follow it to its end as `sessions resume` would, from its
        // start (it may have said its first words already, while the decision was reported).
        let code = follow(&engine, &store, &sid, &opts, next_run_from(&store, &sid, before), false).await;
        tokio::task::block_in_place(|| engine.settle());
        return code;
    }
    tokio::task::block_in_place(|| engine.settle());
    code
}

/// The `--comment`s, parsed and checked against the review, not yet kept: all of them, or none,
/// since one that cannot be taken keeps the others off the review too, and so does anything else
/// in the command that fails. Each gets an id of its own (the engine makes one), so none stands
/// for a comment of an earlier command.
fn checked_cli_comments(engine: &Engine, review: &RequestId, given: &[String], json: bool) -> Result<Vec<finishline_engine::judge::criteria::Comment>, u8> {
    let mut comments = Vec::new();
    for c in given {
        match finishline_engine::judge::criteria::parse_cli_comment(c, String::new()) {
            Ok(c) => comments.push(c),
            Err(e) => return Err(fail(exit::USAGE, json, &format!("--comment {e}"))),
        }
    }
    engine.checked_comments(review, comments).map_err(|e| fail_on(exit::USAGE, json, &e))
}

/// The ids of the open comments `--let-go` names: each by its place as `--comment` writes it
/// (`FILE:LINE`, `FILE:FIRST-LAST`, `FILE:-LINE` for removed lines), or by its whole line as the
/// review lists it (`FILE:LINE: words`) when two share a place. `repeated`: the comments made now,
/// which ask again what they repeat (it cannot be let go too). Refused, with what is open, when
/// none or several match.
fn let_go_ids(open: &[Comment], repeated: &[Comment], given: &[String]) -> Result<Vec<String>, String> {
    let listed = |cs: &[&Comment]| cs.iter().map(|c| c.criterion()).collect::<Vec<_>>().join("; ");
    let mut ids: Vec<String> = Vec::new();
    for g in given {
        let at = g.trim();
        let place = finishline_engine::judge::criteria::parse_cli_comment(&format!("{at}=let go"), String::new()).ok();
        let clean = |p: &str| p.trim_start_matches("./").to_string();
        let named: Vec<&Comment> = open
            .iter()
            .filter(|c| {
                c.criterion() == at
                    || place
                        .as_ref()
                        .is_some_and(|p| clean(&p.path) == clean(&c.path) && (p.start_line, p.end_line, p.side) == (c.start_line, c.end_line, c.side))
            })
            .collect();
        match named.as_slice() {
            [] => {
                let all: Vec<&Comment> = open.iter().collect();
                let what = if all.is_empty() { "none is open".to_string() } else { format!("open: {}", listed(&all)) };
                return Err(format!("--let-go {at}: no comment the review found not met is there ({what})"));
            }
            [c] if repeated.iter().any(|n| n.criterion() == c.criterion()) => {
                return Err(format!("--let-go {at}: your --comment asks “{}” again: let it go or ask it again, not both", c.criterion()));
            }
            [c] => {
                if !ids.contains(&c.id) {
                    ids.push(c.id.clone());
                }
            }
            several => {
                return Err(format!("--let-go {at}: {} open comments are there ({}): name one by its whole line, in quotes", several.len(), listed(several)))
            }
        }
    }
    Ok(ids)
}

/// Where to follow the run a decision started: from just before its start when it is recorded,
/// else from the decision's own events (its start comes after them).
fn next_run_from(store: &Store, sid: &SessionId, before: u64) -> u64 {
    let since = store.events(sid, before).unwrap_or_default();
    since.iter().find(|e| matches!(e.event, EngineEvent::RunStarted { .. })).map(|e| e.seq - 1).unwrap_or_else(|| since.last().map_or(before, |e| e.seq))
}

/// Whether the task worked in the person's folder itself (no worktree of its own).
fn worked_in_place(store: &Store, sid: &SessionId) -> bool {
    let events = store.events(sid, 0).unwrap_or_default();
    !events.iter().rev().any(|e| matches!(&e.event, EngineEvent::TaskWorkspace { worktree: Some(_), .. }))
}

/// `--review reject`: without a person to ask, only `--force-revert` may touch files.
fn reject_unattended(engine: &Arc<Engine>, view: &mut View, sid: &SessionId, review: &RequestId, revert: bool) {
    let store = &engine.store;
    // Told in its order: the review waiting, the decision's own lines, then its outcome.
    catch_up(view, store, sid);
    // A dry run: nobody looked at the work, so it is no person's verdict on it (the trust
    // figures count only those).
    let outcome = engine.submit_review(review, Decision::Reject, None, revert, revert, DecidedBy::Auto);
    catch_up(view, store, sid);
    report(outcome, Again::Asked, view.tells());
    if !revert {
        say_changes_stay(store, sid);
    }
}

/// `sessions review ID` with no decision: what the waiting review decides on, each file's diff
/// included, so a second terminal sees what it approves; then how to decide.
/// Why a landing stopped, with the files it concerns named apart: put at the end of the
/// detail, they read as the last choice's ("or keep the task's branch (notes.md)").
fn not_landed(detail: &str, files: &[String]) -> String {
    if files.is_empty() {
        return format!("Not landed: {detail}");
    }
    format!("Not landed: {}. The files: {}.", detail.trim_end_matches('.'), few(files))
}

/// The decision `sessions review` was given; `None` when it only shows the review.
fn decision_of(v: &Verdict, json: bool) -> Result<Option<Decision>, u8> {
    Ok(Some(match (v.approve, v.reject, &v.request_changes) {
        (true, _, _) => Decision::Approve,
        (_, true, _) => Decision::Reject,
        (_, _, Some(_)) => Decision::RequestChanges,
        // The agent's run answers the review, as a request for changes does.
        _ if v.resolve => Decision::RequestChanges,
        // What goes with a decision is never dropped unsaid.
        _ if !v.copy_ignored.is_empty() => {
            return Err(fail(exit::USAGE, json, "--copy-ignored goes with a decision: add --approve or --reject (the copy is made first)"))
        }
        _ if !v.comments.is_empty() => return Err(fail(exit::USAGE, json, "--comment goes with --request-changes: comments are sent back to the agent")),
        _ => return Ok(None),
    }))
}

/// A task that ended without a review (cancelled, failed, cut off, stopped at a refused
/// permission) is reviewed as it ended: its review is opened first, with no model asked. `Err`:
/// the exit code, once said why there is nothing to review.
async fn open_ended_review(engine: &Arc<Engine>, store: &Store, sid: &SessionId, json: bool) -> Result<(), u8> {
    use finishline_engine::agent::ended_review::{ENDED_UNREVIEWED, NOTHING_TO_REVIEW};
    let Ok(summary) = store.session(sid) else { return Ok(()) };
    // An answer the engine found changed nothing is no task to review.
    let answered = matches!(summary.end_reason, Some(EndReason::Conversation | EndReason::ConversationUnchecked));
    // An attempt is reviewed with its group.
    let competing = finishline_engine::agent::discard::competing_group(store, sid).ok().flatten().is_some();
    if !ENDED_UNREVIEWED.contains(&summary.status) || (summary.status == SessionStatus::Idle && answered) || competing {
        return Ok(());
    }
    if !json {
        errln!("{sid} ended {} without a review: opening its review as it is now (no model is asked)…", summary.status.as_str());
    }
    let before = summary.last_seq;
    match engine.review_ended(sid) {
        Ok(run) => {
            let _ = run.await;
        }
        // Opened meanwhile (the window, another terminal): it is decided as it is.
        Err(_) if store.session(sid).is_ok_and(|s| s.status == SessionStatus::AwaitingReview) => {}
        Err(e) => return Err(fail_on(if e.code() == finishline_engine::ErrorCode::Io { exit::FAILED } else { exit::USAGE }, json, &e)),
    }
    if store.session(sid).is_ok_and(|s| s.status == SessionStatus::AwaitingReview) {
        return Ok(());
    }
    // Ended as it was: it changed nothing, or its changes could not be gathered (said in its
    // history by the run that tried).
    let failed = store.events(sid, before).unwrap_or_default().into_iter().find_map(|e| match e.event {
        EngineEvent::Error { message, .. } => Some(message),
        _ => None,
    });
    match failed {
        Some(why) => Err(fail(exit::FAILED, json, &why)),
        None => Err(fail(exit::USAGE, json, &format!("{sid} {NOTHING_TO_REVIEW}. {}", no_review(store, sid)))),
    }
}

/// [`open_ended_review`] for `sessions review ID` without a decision, which needs no engine
/// otherwise.
async fn open_ended_review_alone(id: &str, opts: &RunOptions) -> Result<(), u8> {
    use finishline_engine::agent::ended_review::ENDED_UNREVIEWED;
    let json = opts.common.json;
    let Ok(store) = crate::sessions::open(&opts.common) else { return Ok(()) };
    let sid = SessionId(id.to_string());
    if !store.session(&sid).is_ok_and(|s| ENDED_UNREVIEWED.contains(&s.status)) {
        return Ok(());
    }
    drop(store);
    let Opened { engine, store, .. } = open_for(opts, Need::Decision)?;
    let opened = open_ended_review(&engine, &store, &sid, json).await;
    engine.settle();
    opened
}

pub(crate) fn show_waiting_review(id: &str, opts: &RunOptions) -> u8 {
    let json = opts.common.json;
    let usage = "say --approve, --reject, --request-changes \"what should change\" or --resolve";
    let Ok(store) = crate::sessions::open(&opts.common) else { return fail(exit::USAGE, json, usage) };
    let sid = SessionId(id.to_string());
    let Some((review, _, _)) = store.pending_requests(&sid).unwrap_or_default().into_iter().find(|(_, k, _)| k == "review") else {
        // Nothing to decide: what the session is, and where to read it, without the flags.
        return fail(exit::USAGE, json, &no_review(&store, &sid));
    };
    let events = store.events(&sid, 0).unwrap_or_default();
    let AskedReview { ended, why, files, not_landed, in_submodules, audit, criteria, not_covered } = asked_review(&events, &review);
    if json {
        outln!("{}", json!({"type": "review_waiting", "session_id": sid, "review_id": review, "files_changed": files, "audit": audit, "criteria": criteria}));
    } else {
        // How the run ended first: a run that stopped stuck, or with a check failing, is not
        // read as one verified done from its diff alone.
        let before: Vec<&EngineEvent> = events
            .iter()
            .take_while(|e| !matches!(&e.event, EngineEvent::ReviewRequested { review_id, .. } if *review_id == review))
            .map(|e| &e.event)
            .collect();
        let round = crate::view::Round::after(before.iter().copied());
        // In a worktree, what the branch holds since the task started, as the review's run saw it.
        let lands = before.iter().rev().take_while(|e| !matches!(e, EngineEvent::TaskWorkspace { .. })).find_map(|e| match e {
            EngineEvent::TaskCommitted { files_since_start: Some(f), .. } => Some(f.clone()),
            _ => None,
        });
        let earlier = crate::view::earlier_rounds_line(&lands.unwrap_or_default(), &files, &not_covered);
        let uncovered = crate::view::not_covered_line(&not_covered, !round.in_place());
        crate::output::human(&format!("{sid} waits for your review: {ended}, {}\n", round.files_changed(files.len())));
        let unattributed = round.unattributed_line(&files);
        for l in why.iter().map(String::as_str).chain(unattributed.as_deref()).chain(round.revert_note()).chain(earlier.as_deref()).chain(uncovered.as_deref())
        {
            crate::output::human(&format!("{l}\n"));
        }
        for f in &files {
            crate::output::human(&format!("\n{}\n{}\n", crate::view::file_line(f), crate::view::numbered_diff(f["diff"].as_str().unwrap_or("").trim_end())));
        }
        let left_out = crate::view::left_out_lines(&not_landed, &in_submodules);
        if !left_out.is_empty() {
            crate::output::human(&format!("\n{}\n", left_out.join("\n")));
        }
        // Beside the diff, what it does not show: that it weakens the checks, and how the
        // person's comments from the last review fared.
        if !audit.is_empty() {
            let lines: Vec<String> = audit.iter().map(|f| crate::view::audit_line(f, &files)).collect();
            crate::output::human(&format!(
                "\nThe audit found changes that weaken the checks; Approve accepts them (dismiss one you judge harmless with --dismiss-finding FILE:LINE):\n{}\n",
                lines.join("\n")
            ));
        }
        if !criteria.is_empty() {
            let lines: Vec<String> = criteria.iter().map(crate::view::criterion_line).collect();
            crate::output::human(&format!("\nYour comments on the diff:\n{}\n", lines.join("\n")));
            // What goes on with a request for changes, and the way to drop one, said where it shows.
            let open = finishline_engine::agent::decision::carried_on(&events, &review).len();
            if open > 0 {
                crate::output::human(&format!(
                    "{} with a request for changes, checked again; --let-go FILE:LINE lets {} go.\n",
                    if open == 1 { "The one not met goes" } else { "Those not met go" },
                    if open == 1 { "it" } else { "one" }
                ));
            }
        }
    }
    // The agent resolves a landing that stopped for it, since this review was asked for.
    let resolvable = events
        .iter()
        .rev()
        .take_while(|e| !matches!(e.event, EngineEvent::ReviewRequested { .. }))
        .find_map(|e| if let EngineEvent::LandingBlocked { reason, .. } = &e.event { Some(reason.agent_can_resolve()) } else { None })
        .unwrap_or(false);
    let approve = crate::hint::command(&format!("sessions review {sid} --approve"));
    let resolve = if resolvable {
        format!("; to let the agent resolve the landing: `{}`", crate::hint::command(&format!("sessions review {sid} --resolve")))
    } else {
        String::new()
    };
    errln!("finishline: decide it: `{approve}` (or --reject, --request-changes \"what should change\", with --comment FILE:LINE=TEXT on a line of the diff, FILE:-LINE on a removed one){resolve}");
    exit::WAITING
}

/// A waiting review as it was asked for: the files, what never lands, and what the diff alone
/// does not say (the audit's findings the person has not dismissed since, the checklist of their
/// comments from the last review).
#[derive(Default)]
struct AskedReview {
    /// How the run ended, as its review line said it: claim, end reason, verdict.
    ended: String,
    /// Why it ended so, one line each: what repeated (stuck), what remains, the checks that failed.
    why: Vec<String>,
    files: Vec<serde_json::Value>,
    not_landed: Vec<String>,
    in_submodules: Vec<String>,
    audit: Vec<finishline_engine::judge::audit::Finding>,
    criteria: Vec<finishline_engine::judge::criteria::CriterionResult>,
    /// Files the checkpoints never copied: no diff shows them, no revert restores them.
    not_covered: Vec<String>,
}

fn asked_review(events: &[finishline_engine::event::Envelope], review: &RequestId) -> AskedReview {
    let asked = events.iter().find_map(|e| match &e.event {
        EngineEvent::ReviewRequested {
            review_id,
            claim,
            verdict,
            end_reason,
            stuck,
            remaining,
            files_changed,
            not_landed,
            in_submodules,
            audit,
            criteria,
            not_covered,
            ..
        } if *review_id == *review => {
            let verdict = verdict.map(|v| format!(", verdict {}", v.as_str())).unwrap_or_default();
            let failed = failed_checks(events, review_id);
            let why = stuck
                .iter()
                .map(crate::view::stuck_line)
                .chain(finishline_engine::judge::criteria::beyond_checklist(remaining, criteria).into_iter().map(|r| format!("    remaining: {r}")))
                .chain(failed.iter().map(|l| format!("    check failed: {l}")))
                .collect();
            Some(AskedReview {
                ended: format!("claim {}, end reason {}{verdict}", claim.as_str(), end_reason.as_str()),
                why,
                files: files_changed.clone(),
                not_landed: not_landed.clone(),
                in_submodules: in_submodules.clone(),
                audit: audit.clone(),
                criteria: criteria.clone(),
                not_covered: not_covered.clone(),
            })
        }
        _ => None,
    });
    let asked = asked.unwrap_or_default();
    AskedReview { audit: finishline_engine::agent::changes::standing_findings(asked.audit.clone(), events), ..asked }
}

/// The checks that failed in their last run before the review `review` was asked, each once, in
/// the order they ran: `` `cmd`: exit 3 ``. Skipped (declined) checks did not fail.
fn failed_checks(events: &[finishline_engine::event::Envelope], review: &RequestId) -> Vec<String> {
    let asked = events.iter().position(|e| matches!(&e.event, EngineEvent::ReviewRequested { review_id, .. } if review_id == review)).unwrap_or(events.len());
    let run_start = events[..asked].iter().rposition(|e| matches!(e.event, EngineEvent::RunStarted { .. })).unwrap_or(0);
    let mut last: Vec<(&str, Option<i32>)> = Vec::new();
    for e in &events[run_start..asked] {
        if let EngineEvent::Verification { command, exit_code, skipped: false, .. } = &e.event {
            last.retain(|(c, _)| *c != command.as_str());
            last.push((command, *exit_code));
        }
    }
    last.into_iter()
        .filter(|(_, code)| *code != Some(0))
        .map(|(c, code)| format!("`{c}`: {}", code.map(|n| format!("exit {n}")).unwrap_or_else(|| "no exit code (stopped or timed out)".into())))
        .collect()
}

impl AskedReview {
    /// The comments approving accepts without the judge having found them met.
    fn unmet(&self) -> Vec<&finishline_engine::judge::criteria::CriterionResult> {
        self.criteria.iter().filter(|c| c.state != finishline_engine::judge::criteria::CriterionState::Met).collect()
    }

    /// The question approving asks first, in the window's words, when it accepts what was not
    /// confirmed: a weakened check, or a comment not confirmed met.
    fn approve_question(&self) -> Option<String> {
        let weakened = match self.audit.len() {
            0 => None,
            1 => Some("1 change that weakens the checks".to_string()),
            n => Some(format!("{n} changes that weaken the checks")),
        };
        let unmet = Some(self.unmet().len()).filter(|n| *n > 0).map(|n| format!("{n} of your comments not confirmed met"));
        let what = match (weakened, unmet) {
            (None, None) => return None,
            (Some(w), Some(u)) => format!("{w} and {u}"),
            (Some(one), None) | (None, Some(one)) => one,
        };
        Some(format!("Approve with {what}? [y/N]: "))
    }

    /// What an approval accepted unconfirmed, named, one per line.
    fn accepted_lines(&self) -> String {
        let mut said = String::new();
        if !self.audit.is_empty() {
            let lines: Vec<String> = self.audit.iter().map(|f| crate::view::audit_line(f, &self.files)).collect();
            said.push_str(&format!("Approved with what the audit found:\n{}\n", lines.join("\n")));
        }
        let unmet = self.unmet();
        if !unmet.is_empty() {
            let lines: Vec<String> = unmet.into_iter().map(crate::view::criterion_line).collect();
            said.push_str(&format!("Approved with your comments not confirmed met:\n{}\n", lines.join("\n")));
        }
        said
    }
}

/// The landing's progress while an approve decides: a branch that moved is rebased onto and the
/// checks run again, which may take minutes, said as they happen rather than in silence.
struct LandingProgress {
    task: tokio::task::JoinHandle<()>,
    said: tokio::sync::watch::Receiver<u64>,
}

impl LandingProgress {
    /// Waits (a moment at most) until every event up to `seq` has been looked at, then stops.
    async fn finish_at(mut self, seq: u64) {
        let _ = tokio::time::timeout(Duration::from_millis(300), self.said.wait_for(|s| *s >= seq)).await;
        self.task.abort();
    }
}

fn say_landing_progress(store: Arc<Store>, sid: SessionId, after: u64) -> LandingProgress {
    let (tx, said) = tokio::sync::watch::channel(after);
    let task = tokio::spawn(async move {
        let mut events = Box::pin(store.subscribe(sid, after));
        let mut view = View::new(false, after);
        while let Some(Ok(env)) = events.next().await {
            if matches!(
                env.event,
                EngineEvent::Rebased { .. } | EngineEvent::Verification { .. } | EngineEvent::Activity { phase: ActivityPhase::Verifying, .. }
            ) {
                view.show(&env);
            }
            let _ = tx.send(env.seq);
        }
    });
    LandingProgress { task, said }
}

/// A landing the task's changes could not make (a conflict, markers left, a check failing on the
/// moved branch) can also be mended by hand where the task works: its worktree is named.
fn say_worktree_to_mend(store: &Store, sid: &SessionId) {
    let events = store.events(sid, 0).unwrap_or_default();
    if let Some(wt) = finishline_engine::agent::changes::current_worktree(&events) {
        errln!("Or mend it by hand in the task's worktree, {}, and approve again.", wt.work_dir().display());
    }
}

/// After a decision that removed the worktree: what the task wrote that .gitignore hides and the
/// person did not ask to keep (`--copy-ignored`) went with it, and is named.
fn say_ignored_gone(store: &Store, sid: &SessionId, review: &RequestId, kept: &[String]) {
    let events = store.events(sid, 0).unwrap_or_default();
    let not_landed = events.iter().find_map(|e| match &e.event {
        EngineEvent::ReviewRequested { review_id, not_landed, .. } if review_id == review => Some(not_landed.clone()),
        _ => None,
    });
    // `--copy-ignored build` keeps the entry `build/`.
    let asked = |p: &str| kept.iter().any(|k| k.trim_end_matches('/') == p.trim_end_matches('/'));
    let gone: Vec<String> = not_landed.unwrap_or_default().into_iter().filter(|p| !asked(p)).collect();
    if !gone.is_empty() {
        errln!("Not copied, so gone with the worktree (.gitignore hides them): {}.", gone.join(", "));
    }
}

/// After a reject without revert in the person's folder: what the task changed is still there,
/// and the command that puts it back.
fn say_changes_stay(store: &Store, sid: &SessionId) {
    if worked_in_place(store, sid) && changed_anything(store, sid) {
        let back = crate::hint::command(&format!("sessions review {sid} --reject --revert"));
        errln!("What the task changed stays in your folder: `{back}` puts it back.");
    }
}

/// Whether the reviewed round changed files, or an earlier round since the last approval did (a
/// request for changes keeps them the task's to undo): as the window offers the undo.
fn changed_anything(store: &Store, sid: &SessionId) -> bool {
    let events = store.events(sid, 0).unwrap_or_default();
    let Some(last) = events.iter().rposition(|e| matches!(e.event, EngineEvent::ReviewRequested { .. })) else { return false };
    let files = matches!(&events[last].event, EngineEvent::ReviewRequested { files_changed, .. } if !files_changed.is_empty());
    // Since the last approval: what that kept is no longer the task's to undo.
    let since = events[..last].iter().rposition(|e| matches!(e.event, EngineEvent::ReviewResolved { decision: Decision::Approve, .. })).map_or(0, |i| i + 1);
    files || events[since..last].iter().any(|e| matches!(e.event, EngineEvent::ReviewResolved { decision: Decision::RequestChanges, .. }))
}

/// A flag of another decision than the one given: refused, not dropped unsaid. (Clap's `requires`
/// lets `--approve --revert` through, since --approve rules out the --reject that --revert needs.)
fn misplaced(decision: Decision, v: &Verdict, opts: &RunOptions) -> Option<&'static str> {
    let reverting = v.revert || v.keep_changed || opts.force_revert;
    match decision {
        Decision::Approve if reverting => Some("--revert, --keep-changed and --force-revert go with --reject: an approved task's changes stay"),
        Decision::RequestChanges if reverting => {
            Some("--revert, --keep-changed and --force-revert go with --reject: a request for changes keeps the work for the agent to go on with")
        }
        Decision::Reject if opts.land.is_some() => Some("--land goes with --approve: a rejected task lands nothing"),
        Decision::RequestChanges if opts.land.is_some() && !v.resolve => Some("--land goes with --approve: a request for changes lands nothing"),
        Decision::Reject if opts.force_revert && !v.revert => Some("--force-revert goes with --revert: a reject without it puts nothing back"),
        _ => None,
    }
}

/// What a revert may overwrite of the files someone changed since: all of them (--force-revert),
/// none while the rest is put back (--keep-changed), or, not said, nothing before asking.
fn overwrite_of(opts: &RunOptions, v: &Verdict) -> finishline_engine::agent::Overwrite {
    use finishline_engine::agent::Overwrite;
    match (opts.force_revert, v.keep_changed) {
        (true, _) => Overwrite::All,
        (false, true) => Overwrite::Files(Vec::new()),
        (false, false) => Overwrite::Nothing,
    }
}

/// The revert this command's start finished, which a crash or a failure had cut short: what the
/// person asked again is done, said as any decision's outcome is. `None` unless the session's
/// last revert started was finished (a start that could only say it waits finished nothing).
fn say_revert_finished(store: &Store, sid: &SessionId, json: bool) -> Option<u8> {
    let events = store.events(sid, 0).ok()?;
    let started = events.iter().rposition(|e| matches!(e.event, EngineEvent::RevertStarted { .. }))?;
    let report = events[started..].iter().find_map(|e| match &e.event {
        EngineEvent::Reverted { restored, deleted, kept, copies, not_copied } => Some(finishline_engine::workspace::checkpoint::RevertReport {
            restored: restored.clone(),
            deleted: deleted.clone(),
            conflicts: kept.clone(),
            copies: copies.clone(),
            not_copied: not_copied.clone(),
            applied: true,
        }),
        _ => None,
    })?;
    let outcome = Ok(ReviewOutcome::Decided { status: SessionStatus::Rejected, revert: Some(report), landed: None, kept: None });
    if json {
        print_outcome(&outcome);
    } else {
        errln!("The revert cut short before is finished.");
        report_review(outcome, Again::Review(sid));
    }
    Some(exit::REJECTED)
}

/// `sessions review ID --reject --revert` of a task rejected without a revert: its changes undone
/// now, as the reject's revert would have.
fn revert_later(engine: &Arc<Engine>, sid: &SessionId, overwrite: finishline_engine::agent::Overwrite, json: bool) -> u8 {
    let outcome = tokio::task::block_in_place(|| engine.revert_rejected(sid, overwrite));
    if json {
        print_outcome(&outcome);
    }
    match outcome {
        Ok(ReviewOutcome::NeedsConfirmation { conflicts, no_file, other_tasks }) => {
            if !json {
                errln!("Not reverted: {}.", in_the_way(&conflicts, &no_file, &other_tasks));
                errln!("finishline: {}.", revert_ways(sid, "--reject --revert", conflicts.len()));
            }
            exit::WAITING
        }
        Ok(o) => {
            if !json {
                report_review(Ok(o), Again::Review(sid));
            }
            exit::REJECTED
        }
        Err(e) => {
            let usage = matches!(e.code(), finishline_engine::ErrorCode::InvalidInput | finishline_engine::ErrorCode::AlreadyDecided);
            fail_on(if usage { exit::USAGE } else { exit::FAILED }, json, &e)
        }
    }
}

/// Why a session has no review to decide, and what can be done with it instead.
pub(crate) fn no_review(store: &Store, sid: &SessionId) -> String {
    let Ok(s) = store.session(sid) else {
        return format!("there is no session {sid} in this history: `{}` shows them", crate::hint::command("sessions list"));
    };
    let status = s.status.as_str();
    match s.status {
        SessionStatus::Completed | SessionStatus::Rejected => {
            format!(
                "session {sid} is already decided ({status}): `{}` shows what was decided, and the diff",
                crate::hint::command(&format!("sessions show {sid}"))
            )
        }
        SessionStatus::Busy | SessionStatus::Retry | SessionStatus::Queued => {
            format!("session {sid} is still running ({status}): its review comes when it ends")
        }
        SessionStatus::AwaitingApproval => {
            format!(
                "session {sid} waits for a permission or an answer, not a review: answer it where it runs, or `{}`",
                crate::hint::command(&format!("sessions cancel {sid}"))
            )
        }
        _ => {
            let discard = match s.work_dir {
                Some(_) => format!(", or {}", crate::hint::put_away(&s)),
                None => String::new(),
            };
            let resume = crate::hint::command(&format!("sessions resume {sid} \"what to do next\""));
            format!("session {sid} is {status}, not waiting for a review: go on with `{resume}`{discard}")
        }
    }
}

/// Under where a task works, what that means for the person, as New Task says it: their
/// uncommitted changes are not in a new worktree; a repository with no commit yet gives it none;
/// on no branch, there is nowhere to land. `isolation`: where tasks work by the settings, or
/// by `--isolation`.
fn say_what_it_means(isolation: finishline_engine::domain::Isolation, folder: &str, wt: Option<&finishline_engine::workspace::worktree::TaskWorktree>) {
    use finishline_engine::workspace::worktree;
    match wt {
        Some(wt) => {
            let all = worktree::uncommitted(std::path::Path::new(&wt.repo)).unwrap_or_default();
            if !all.is_empty() {
                let (n, it) = if all.len() == 1 { ("1 uncommitted change".to_string(), "it") } else { (format!("{} uncommitted changes", all.len()), "them") };
                humanln!(
                    "    {n} in your checkout ({}) {} not in the task's worktree: it starts from the last commit; commit {it} first if the task needs {it}",
                    few(&all),
                    if all.len() == 1 { "is" } else { "are" }
                );
            }
            if wt.base_branch.is_none() {
                humanln!("    your checkout is on no branch (a detached HEAD): Approve keeps the task's branch for you to merge rather than land it");
            }
        }
        None if isolation == finishline_engine::domain::Isolation::Worktree && worktree::no_commit_yet(std::path::Path::new(folder)) => {
            humanln!("    it is a git repository with no commit yet, so the task has no worktree of its own: make a first commit to give tasks one");
        }
        None => {}
    }
}

/// Under a task's workspace line, what it means for the person (see [`say_what_it_means`]), and
/// that a new round does not hold an earlier round's kept branch.
fn say_where_it_works(engine: &Engine, store: &Store, sid: &SessionId, env: &Envelope) {
    let EngineEvent::TaskWorkspace { folder, worktree, .. } = &env.event else { return };
    // The event records where it works; the settings say whether a worktree was wanted.
    say_what_it_means(engine.config.tasks.isolation, folder, worktree.as_ref());
    if let (Some(wt), Some(b)) = (worktree, kept_before(store, sid, env.seq)) {
        let from = wt.base_branch.as_deref().map_or("the commit your checkout is on".to_string(), |base| format!("{base} as it is now"));
        humanln!("    it starts from {from}, not from the kept branch {b}, which holds the earlier work: this round's branch does not have it");
    }
}

/// The branch an earlier round of the task was kept on (not landed), when a new worktree starts
/// after it: the new one starts from the person's commit and does not hold that work.
fn kept_before(store: &Store, sid: &SessionId, seq: u64) -> Option<String> {
    let events = store.events(sid, 0).ok()?;
    events.iter().filter(|e| e.seq < seq).rev().find_map(|e| match &e.event {
        EngineEvent::Landed { branch_kept, .. } => Some(branch_kept.clone()),
        EngineEvent::BranchKept { branch, .. } => Some(Some(branch.clone())),
        EngineEvent::TaskWorkspace { .. } => Some(None),
        _ => None,
    })?
}

/// What a landing's commit did not get that the person's own commits do, in a sentence.
fn not_applied_words(hooks: &[String], unsigned: bool) -> Option<String> {
    let hooks_said = (!hooks.is_empty()).then(|| format!("Your git hooks did not run for it ({})", hooks.join(", ")));
    let said = match (hooks_said, unsigned) {
        (None, false) => return None,
        (Some(h), true) => format!("{h}, and it is not signed (commit.gpgsign is on)"),
        (Some(h), false) => h,
        (None, true) => "It is not signed (commit.gpgsign is on)".to_string(),
    };
    Some(format!(
        "{said}: Finishline runs none of the repository's own code when it commits. Check it your way, or land with --land branch and commit it yourself."
    ))
}

/// A list of paths for a sentence: the first ten, then how many more (a copied `node_modules/`
/// is thousands of files).
pub(crate) fn few(list: &[String]) -> String {
    match list.len() {
        0..=10 => list.join(", "),
        n => format!("{} and {} more", list[..10].join(", "), n - 10),
    }
}

pub(crate) fn prompt_line(q: &str) -> Option<String> {
    // The question may be the agent's words.
    crate::output::say(q);
    let s = crate::typed::line()?;
    (!s.is_empty()).then_some(s)
}

#[cfg(test)]
mod tests {
    use super::AskedReview;

    #[test]
    fn a_stopped_landing_names_its_files_apart_from_the_last_choice() {
        let said = super::not_landed(
            "you have uncommitted edits in files the task changed: commit or stash them, then approve again, or keep the task's branch",
            &["existing.txt".into()],
        );
        assert!(said.ends_with("or keep the task's branch. The files: existing.txt."), "{said}");
        assert_eq!(super::not_landed("nothing moved", &[]), "Not landed: nothing moved");
    }
    use finishline_engine::judge::audit::{AuditRule, Finding};
    use finishline_engine::judge::criteria::{CriterionResult, CriterionState};

    #[test]
    fn approving_asks_about_both_the_weakened_checks_and_the_unmet_comments() {
        let finding = Finding { rule: AuditRule::AssertionRemoved, path: "t.py".into(), line: Some(5), detail: String::new(), excerpt: String::new() };
        let criterion = |state| CriterionResult { id: "c".into(), text: "a.py:1: rename".into(), state, evidence: String::new() };
        let asked = |audit: Vec<Finding>, criteria| AskedReview { audit, criteria, ..Default::default() }.approve_question();
        assert_eq!(asked(vec![], vec![criterion(CriterionState::Met)]), None, "nothing unconfirmed: no question");
        assert_eq!(asked(vec![finding.clone()], vec![]).as_deref(), Some("Approve with 1 change that weakens the checks? [y/N]: "));
        assert_eq!(
            asked(vec![finding.clone(), finding], vec![criterion(CriterionState::Unverifiable)]).as_deref(),
            Some("Approve with 2 changes that weaken the checks and 1 of your comments not confirmed met? [y/N]: ")
        );
    }
}
