//! One run: steps until the completion engine says to stop. This file holds the loop and its
//! bookkeeping; the parts live beside it, each with its own tests:
//! - [`super::worker`]: whoever does the work, one turn at a time (Finishline's own loop, or
//!   an ACP agent), to a `StepOutput`;
//! - [`super::dispatch`]: tool calls through the permission gate, and answers after a restart;
//! - [`super::evidence`]: what the run gathered, saved with its events and restored on resume;
//! - [`super::verify`]: verification commands;
//! - [`super::evaluation`]: the evaluator's input and verdict;
//! - [`super::review`]: what the review gate shows.
//!
//! The decisions themselves are [`crate::judge::completion::decide`], a pure function.

use std::collections::HashSet;
use std::sync::Arc;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::evidence::{self, RunEvidence};
use super::plan_run::StepEnding;
use super::review::ReviewInput;
use super::{Answer, Engine};
use crate::domain::*;
use crate::error::ErrorCode;
use crate::event::EngineEvent;
use crate::judge::completion::{self, Action, ClaimEvidence, Evidence, StepEnd};
use crate::judge::prompt;
use crate::judge::stuck::{self, StepRecord};
use crate::provider::{ChatMessage, StopReason};
use crate::tool::{self, Workspace};
use crate::workspace::checkpoint::Checkpoints;

/// Why a run stopped early from inside a step or a tool.
pub(super) enum Halt {
    Cancelled,
    Failed { code: ErrorCode, message: String },
    Denied,
    QuestionDeclined,
    Store(crate::Error),
}

impl From<crate::Error> for Halt {
    fn from(e: crate::Error) -> Self {
        Halt::Store(e)
    }
}

/// How a run begins: its trigger, the person's message (task, feedback or a new message), or
/// the answer to a request that a previous process left waiting.
pub struct RunStart {
    pub trigger: RunTrigger,
    pub user_message: Option<String>,
    pub answer: Option<(RequestId, Answer)>,
    /// A new task's plan mode; later runs follow the plan the session already has.
    pub plan: PlanMode,
    /// Finishline's own words the run starts with instead of the person's (resolving a
    /// conflict that kept the task from landing).
    pub continuation: Option<(ContinuationSource, String)>,
}

pub struct Run {
    pub(super) engine: Arc<Engine>,
    /// The model Finishline's agent asks: the one the session started with (an attempt may have
    /// its own), when it is on the engine's provider.
    pub(super) agent_model: String,
    /// Who judges this run: the evaluator set, else the agent's endpoint (for an attempt, with
    /// the model its group was judged by).
    pub(super) evaluator: super::ModelEndpoint,
    pub(super) session: SessionId,
    pub(super) run: RunId,
    pub(super) cancel: CancellationToken,
    /// Fires when whoever asked the question now open can no longer hear its answer (an
    /// external agent that died): the question is withdrawn.
    pub(super) asker_gone: CancellationToken,
    pub(super) workspace: Workspace,
    pub(super) checkpoints: Option<Checkpoints>,
    /// The workspace's AGENTS.md (or CLAUDE.md, .clinerules), read when the run starts.
    pub(super) instructions: Option<crate::workspace::instructions::ProjectInstructions>,
    /// Why there are no checkpoints (git missing, an unwritable data folder), told once.
    pub(super) checkpoints_off: Option<String>,
    /// The task's worktree filled and the first snapshot taken, while the first model request
    /// streams; tools wait for it. An error fails the run (no worktree); an inner error turns
    /// checkpoints off; `None`: there are no checkpoints.
    pub(super) first_snapshot: Option<tokio::task::JoinHandle<crate::Result<Option<crate::Result<String>>>>>,
    /// Where this run works: the task's worktree, or the folder itself.
    pub(super) folder: super::changes::TaskFolder,
    /// This run's own changes, folded from its windows so far.
    pub(super) owned: crate::workspace::ownership::Ownership,
    pub(super) owned_folded: usize,
    /// How many files the first snapshot is copying, once its walk has found them.
    pub(super) first_snapshot_files: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    pub(super) task: String,
    pub(super) history: Vec<ChatMessage>,
    pub(super) evidence: RunEvidence,
    pub(super) todos: Vec<Todo>,
    /// Tools the person allowed for this session (across runs and restarts).
    pub(super) allowed: HashSet<String>,
    /// The built-in tools plus the live MCP servers' tools, refreshed before each step.
    pub(super) toolbox: crate::tool::Toolbox,
    /// Call ids seen in this session: some servers reuse ids across steps, and every call must
    /// keep its own result.
    pub(super) call_ids: HashSet<String>,
    /// The plan step this run works on, in plan mode.
    pub(super) plan_step: Option<super::plan_run::StepRun>,
    /// The final check of a plan judges the whole request, not the last step.
    pub(super) judge_whole: bool,
    /// What the person changed in the plan at its go-ahead, told to the evaluator with the task.
    pub(super) plan_edits: Option<crate::plan::edits::PlanEdits>,
    /// The run this one handed the session to (the next plan step), started in the store.
    pub(super) next: Option<(RunId, RunStart)>,
    /// Whoever does the work: Finishline's own loop or an ACP agent. Lent to itself for a turn
    /// (the turn works on this run), so `None` only while one is under way.
    pub(super) worker: Option<Box<dyn super::worker::Worker>>,
    /// The person's comments from the last review: this run is judged on each one.
    pub(super) criteria: Vec<crate::judge::criteria::Comment>,
    /// How they were found at the last check.
    pub(super) criteria_results: Vec<crate::judge::criteria::CriterionResult>,
    /// How many of this run's windows had closed when they were last checked.
    pub(super) criteria_checked_at: Option<usize>,
    /// The person's verify commands for this task ([`Engine::verify_commands_of`]).
    pub(super) verify_commands: Vec<String>,
    /// Those of them given for this task (the CLI's `--verify`), not the workspace's own.
    pub(super) task_verify: Vec<String>,
    /// Held while a window is open in a folder tasks share ([`Run::open_window`]).
    pub(super) window_lock: Option<crate::workspace::lock::WindowLock>,
    /// Beats while a window this run opened is open: one open without it was left by a kill.
    pub(super) heartbeat: Option<crate::workspace::last_seen::Heartbeat>,
}

/// What a run that failed records: the error, its end, and the failed status.
fn failed(e: &crate::Error, verdict: Option<Verdict>) -> Vec<EngineEvent> {
    vec![
        EngineEvent::Error { code: e.code(), message: e.to_string() },
        EngineEvent::RunFinished { status: SessionStatus::Failed, claim: Claim::None, verdict, end_reason: EndReason::Failed, stuck: None },
        EngineEvent::StatusChanged { status: SessionStatus::Failed, attempt: None, max_retries: None, next_retry_at: None, message: Some(e.to_string()) },
    ]
}

impl Run {
    /// Runs to the end and records how it ended. Never panics on bad input or provider faults:
    /// every way out ends in a status. Returns the run it handed the session to, if any (the
    /// next step of a plan), which the caller runs next under the same cancel token.
    pub async fn execute(engine: Arc<Engine>, session: SessionId, run_id: RunId, start: RunStart, cancel: CancellationToken) -> Option<(RunId, RunStart)> {
        use futures_util::FutureExt;
        let guarded = std::panic::AssertUnwindSafe(Self::execute_unguarded(engine.clone(), session.clone(), run_id.clone(), start, cancel));
        match guarded.catch_unwind().await {
            Ok(next) => next,
            // A bug, not the person's doing: the run ends failed, saying so, and the session is
            // free for a message that goes on; nothing of the task's work is touched.
            Err(panic) => {
                let what = panic.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| panic.downcast_ref::<String>().cloned()).unwrap_or_default();
                let e = crate::Error::Internal(format!(
                    "Finishline stopped this run on an internal error ({what}); what the task changed is kept: send a message to go on, and please report this"
                ));
                let _ = engine.store.append_all(&session, Some(&run_id), failed(&e, None));
                None
            }
        }
    }

    async fn execute_unguarded(
        engine: Arc<Engine>,
        session: SessionId,
        run_id: RunId,
        start: RunStart,
        cancel: CancellationToken,
    ) -> Option<(RunId, RunStart)> {
        let mut run = match Run::prepare(engine.clone(), session.clone(), run_id.clone(), start.trigger, cancel).await {
            Ok(r) => r,
            Err(e) => {
                // The run started (`run_started` is recorded): it finishes, failed, as any run does.
                let _ = engine.store.append_all(&session, Some(&run_id), failed(&e, None));
                return None;
            }
        };
        if let Err(e) = run.main(start).await {
            let _ = engine.store.append_all(&session, Some(&run_id), failed(&e, run.evidence.last_verdict));
            return None;
        }
        run.next.take()
    }

    async fn prepare(engine: Arc<Engine>, session: SessionId, run: RunId, trigger: RunTrigger, cancel: CancellationToken) -> crate::Result<Run> {
        let summary = engine.store.session(&session)?;
        let events = engine.store.events(&session, 0)?;
        let folder = engine.task_folder(&session, &summary.workspace, &events)?;
        let events = if folder.checkout_pending { engine.store.events(&session, 0)? } else { events };
        let work_dir = folder.work_dir();
        let workspace = Workspace::new(&work_dir).map_err(|e| crate::workspace::unusable_now(&work_dir, &e))?;
        let (checkpoints, checkpoints_off) = match engine.checkpoints(&session, &folder.recorded()) {
            Ok(c) => (Some(c), None),
            Err(e) => (None, Some(e.to_string())),
        };
        // A plan step works in a conversation of its own, from its brief on: the run that
        // starts it, and a resumed or continued run while it is still the running step.
        let plan = crate::plan::state::PlanState::from_events(&events);
        let plan_step = plan.as_ref().and_then(|p| match trigger {
            RunTrigger::PlanStep | RunTrigger::Resume | RunTrigger::Message => {
                // Stopped between steps, a plan goes on from the step it stopped after.
                let after = if trigger == RunTrigger::PlanStep { None } else { p.stopped_after() };
                p.running_step().or(after)
            }
            _ => None,
        });
        let plan_step = plan.as_ref().zip(plan_step).map(|(p, index)| {
            let (number, of) = p.number_of(index);
            let last = !p.steps.iter().skip(index + 1).any(|s| s.state == StepState::Pending);
            super::plan_run::StepRun { index, step: p.steps[index].step.clone(), number, of, last }
        });
        let history = match &plan_step {
            Some(s) => {
                let from = events.iter().rposition(|e| matches!(e.event, EngineEvent::PlanStepStarted { index, .. } if index == s.index)).unwrap_or(0);
                super::history::rebuild(&events[from..])
            }
            None => super::history::rebuild(&events),
        };
        let todos = engine.store.todos(&session)?;
        // A resumed run continues the interrupted one: its budget, step count, truncations in a
        // row, stuck memory and workspace base. Every other run starts afresh.
        let evidence = match trigger {
            // A review of how a task ended looks at its last run's windows as that run left them.
            RunTrigger::Resume | RunTrigger::Review => match engine.store.latest_run_evidence(&session)?.and_then(RunEvidence::from_json) {
                Some(e) => e,
                // Stored before runs saved their evidence: a resumed run is a work turn.
                None => RunEvidence {
                    used_tools: history.iter().any(|m| matches!(m, ChatMessage::Assistant { tool_calls, .. } if !tool_calls.is_empty())),
                    ..Default::default()
                },
            },
            RunTrigger::Feedback => RunEvidence { answers_review: true, ..Default::default() },
            _ => RunEvidence::default(),
        };
        // The built-in agent's context window may be looked up on a server that never answers
        // (two 15 s waits): a cancel does not wait for it, and the run then ends cancelled.
        let worker = if trigger == RunTrigger::Review {
            // No model is asked: the server may be the reason the task ended.
            None
        } else {
            tokio::select! {
                w = super::worker::for_session(&engine, &summary, &events) => Some(w?),
                () = cancel.cancelled() => None,
            }
        };
        let criteria = super::decision::judged_on(&events);
        // The provider the session started with is still the one set up: what it recorded may be asked of it.
        let same_provider = crate::provider::settings::current_name(&summary.provider) == engine.config.agent.provider_name;
        let agent_model = if same_provider && !summary.model.is_empty() { summary.model.clone() } else { engine.config.agent.model.clone() };
        let evaluator = judge_of(&engine.config, &summary.provider, &events);
        Ok(Run {
            evaluator,
            verify_commands: engine.verify_commands_of(&events),
            task_verify: super::verify::task_verify_of(&events),
            window_lock: None,
            heartbeat: None,
            agent_model,
            criteria,
            criteria_results: Vec::new(),
            criteria_checked_at: None,
            folder,
            owned: Default::default(),
            owned_folded: 0,
            worker,
            plan_edits: plan.as_ref().and_then(|p| p.person_edits.clone()),
            plan_step,
            judge_whole: false,
            next: None,
            toolbox: engine.toolbox.clone(),
            engine,
            session,
            run,
            cancel,
            asker_gone: CancellationToken::new(),
            workspace,
            checkpoints,
            checkpoints_off,
            first_snapshot: None,
            instructions: None,
            first_snapshot_files: Default::default(),
            task: summary.task,
            history,
            evidence,
            todos,
            allowed: evidence::session_grants(&events),
            call_ids: events
                .iter()
                .filter_map(|e| match &e.event {
                    EngineEvent::ToolCall { call_id, .. } => Some(call_id.clone()),
                    _ => None,
                })
                .collect(),
        })
    }

    /// Waits for the first snapshot, if it is still being taken: nothing may touch the
    /// workspace before it is recorded. A snapshot that failed turns checkpoints off, once, with
    /// the reason.
    pub(super) async fn checkpoint_ready(&mut self) -> crate::Result<()> {
        let Some(first) = self.first_snapshot.take() else { return Ok(()) };
        let mut first = first;
        let mut said = None;
        let done = loop {
            if first.is_finished() {
                break first.await;
            }
            // Said when the wait starts and again once the walk knows how many files it copies.
            let count = self.first_snapshot_files.load(std::sync::atomic::Ordering::Relaxed);
            if said != Some(count) {
                said = Some(count);
                let detail = match count {
                    // Said whatever the step does next (a read, a question, an answer with no
                    // tool at all): it records what a change would be measured against.
                    0 => "recording the workspace, to measure the run's changes against".to_string(),
                    1 => "recording the workspace's one file, to measure the run's changes against".to_string(),
                    n => format!(
                        "recording {} files of the workspace, to measure the run's changes against (the first time in a folder takes longest)",
                        crate::thousands::grouped(n)
                    ),
                };
                self.emit(EngineEvent::Activity { phase: ActivityPhase::Checkpointing, detail })?;
            }
            tokio::select! {
                r = &mut first => break r,
                _ = tokio::time::sleep(std::time::Duration::from_millis(250)) => {}
            }
        };
        // The worktree is filled (or its filling failed): reads go to it from now on.
        let was_filling = std::mem::replace(&mut self.folder.checkout_pending, false);
        match done {
            Ok(Err(e)) => return Err(e),
            Ok(Ok(None)) => {}
            Ok(Ok(Some(Ok(snap)))) => {
                self.evidence.base_snapshot.get_or_insert(snap);
                let unreadable = self.checkpoints.as_ref().map(|c| c.unreadable()).unwrap_or_default();
                if !unreadable.is_empty() {
                    let shown: Vec<&str> = unreadable.iter().take(10).map(String::as_str).collect();
                    let more = if unreadable.len() > 10 { format!(" and {} more", unreadable.len() - 10) } else { String::new() };
                    self.emit(EngineEvent::Error {
                        code: crate::error::ErrorCode::Checkpoints,
                        message: format!(
                            "{} file(s) could not be read, so revert cannot restore them: {}{more}. Everything else is recorded; the run goes on.",
                            unreadable.len(),
                            shown.join(", ")
                        ),
                    })?;
                }
            }
            Ok(Ok(Some(Err(e)))) => self.checkpoints_failed(e.to_string())?,
            // Stopped before saying whether the worktree was filled: no tool may work in it.
            Err(e) if was_filling => return Err(crate::Error::Worktree(format!("the task's worktree could not be filled: {e}"))),
            Err(e) => self.checkpoints_failed(e.to_string())?,
        }
        Ok(())
    }

    fn checkpoints_failed(&mut self, why: String) -> crate::Result<()> {
        self.checkpoints = None;
        self.emit(EngineEvent::Error {
            code: crate::error::ErrorCode::Checkpoints,
            message: format!("The workspace could not be recorded ({why}): the review will show no diffs and Reject cannot revert."),
        })
    }

    pub(super) fn emit(&self, event: EngineEvent) -> crate::Result<()> {
        self.engine.store.append(&self.session, Some(&self.run), event)?;
        Ok(())
    }

    pub(super) fn emit_all(&self, events: Vec<EngineEvent>) -> crate::Result<()> {
        self.engine.store.append_all(&self.session, Some(&self.run), events)?;
        Ok(())
    }

    /// Stores events together with the run's evidence, so a resumed run never reads evidence
    /// older than the events it sees.
    pub(super) fn emit_saving(&self, events: Vec<EngineEvent>) -> crate::Result<()> {
        self.engine.store.append_with_evidence(&self.session, &self.run, events, &self.evidence.to_json())?;
        Ok(())
    }

    pub(super) fn status(status: SessionStatus) -> EngineEvent {
        EngineEvent::StatusChanged { status, attempt: None, max_retries: None, next_retry_at: None, message: None }
    }

    pub(super) fn cfg(&self) -> &crate::judge::completion::CompletionConfig {
        &self.engine.config.completion
    }

    /// Finishline's own words to the agent, outside the judge's cycle: stored and shown as a
    /// note of their source, and tagged for the model as never the person's.
    fn note(&mut self, source: ContinuationSource, text: String) -> crate::Result<()> {
        self.emit_all(vec![
            EngineEvent::Continuation { source, attempt: 0, max: 0, remaining: vec![], text: text.clone(), answers_call: None, refused_claim: false },
            EngineEvent::MessageCreated { message_id: MessageId::new(), role: MessageRole::Continuation, source: Some(source), text: Some(text.clone()) },
        ])?;
        self.history.push(ChatMessage::User { content: prompt::tagged(source, 0, 0, &text) });
        Ok(())
    }

    /// Whether the agent, sent on now with nothing added, would have nothing new to answer: its
    /// own words end the conversation, or (an agent that keeps its conversation) anything that is
    /// not a message it has not seen yet.
    fn nothing_to_answer(&self) -> bool {
        let keeps_its_own = self.worker.as_ref().is_some_and(|w| w.keeps_its_conversation());
        match self.history.last() {
            Some(ChatMessage::User { .. }) => false,
            Some(ChatMessage::Tool { .. }) => keeps_its_own,
            _ => true,
        }
    }

    /// Checkpoints that are off, and the workspace's own rules for agents, said as the run starts.
    fn say_what_it_starts_with(&mut self) -> crate::Result<()> {
        if let Some(why) = self.checkpoints_off.take() {
            self.emit(EngineEvent::Error {
                code: crate::error::ErrorCode::Checkpoints,
                message: format!("Checkpoints are off for this run ({why}): the review will show no diffs and Reject cannot revert."),
            })?;
        }
        // Read at each run's start: the person may edit them between runs. A worktree still being
        // filled has the same files as the person's folder, which is read instead.
        self.instructions = crate::workspace::instructions::find(&self.folder.readable());
        if let Some(i) = &self.instructions {
            self.emit(EngineEvent::ProjectInstructions { file: i.file.clone(), chars: i.text.chars().count() as u64, truncated: i.truncated })?;
        }
        Ok(())
    }

    async fn main(&mut self, start: RunStart) -> crate::Result<()> {
        // Cancelled while it was being set up: nothing is started, but the person's words are
        // kept, as a cancel a moment later would have kept them (a message they sent is theirs).
        if self.cancel.is_cancelled() {
            if let Some(msg) = start.user_message {
                self.emit(EngineEvent::MessageCreated { message_id: MessageId::new(), role: MessageRole::User, source: None, text: Some(msg) })?;
            }
            return self.halted(Halt::Cancelled);
        }
        self.say_what_it_starts_with()?;
        // The worktree is filled and the workspace recorded while the model thinks; the first
        // tool waits for it. A review as the task ended has no tools, and its windows are kept.
        if start.trigger != RunTrigger::Review {
            self.start_preparing();
        }
        // `run_started` and `busy` were stored when the run began; the evidence joins them.
        self.emit_saving(vec![])?;
        if start.trigger == RunTrigger::Review {
            return self.review_as_it_is().await;
        }
        if let Some(step) = self.plan_step.clone().filter(|_| matches!(start.trigger, RunTrigger::Resume | RunTrigger::Message)) {
            if self.plan_state()?.running_step().is_none() {
                // The plan stopped after this step. Nothing to add: it goes on with its own next
                // move. The person's words: this step takes them up again, in its conversation,
                // and the plan moves on when it ends.
                if start.user_message.is_none() && start.continuation.is_none() {
                    return match self.go_on_after_step(None).await {
                        Ok(()) => Ok(()),
                        Err(h) => self.halted(h),
                    };
                }
                // Stopped while the manager was to revise a failed step: the words shape the revision.
                if let (Some(msg), None, true) = (&start.user_message, &start.continuation, self.revision_pending()?) {
                    self.emit(EngineEvent::MessageCreated { message_id: MessageId::new(), role: MessageRole::User, source: None, text: Some(msg.clone()) })?;
                    return match self.go_on_after_step(Some(msg.clone())).await {
                        Ok(()) => Ok(()),
                        Err(h) => self.halted(h),
                    };
                }
                self.emit(EngineEvent::PlanStepStarted { index: step.index, number: step.number, of: step.of, title: step.step.title.clone() })?;
            }
        }
        // A plan the person cancelled at its go-ahead stopped there: resumed, it waits there again.
        if matches!(start.trigger, RunTrigger::Resume | RunTrigger::Message)
            && start.user_message.is_none()
            && start.continuation.is_none()
            && start.answer.is_none()
        {
            let events = self.engine.store.events_of_types(&self.session, crate::plan::state::FOLDED_TYPES)?;
            if let Some(declined) = crate::plan::state::PlanState::from_events(&events).filter(|p| p.declined) {
                return self.reopen_plan(&declined);
            }
        }
        if let Some((request, answer)) = start.answer {
            if let Err(h) = self.refresh_tools().await {
                return self.halted(h);
            }
            if let Err(h) = self.apply_answer(&request, answer).await {
                return self.halted(h);
            }
        } else if start.user_message.is_some() || start.continuation.is_some() {
            // A new worktree's note first: it is the context the person's words come in. Then the
            // person's words (feedback), then Finishline's (their comments on the diff, or the
            // conflict to resolve), each stored and shown as what it is.
            if let Some(earlier) = self.folder.earlier.clone() {
                let base = self.folder.worktree.as_ref().and_then(|w| w.base_branch.clone());
                self.note(ContinuationSource::NewWorktree, prompt::new_worktree(&earlier, base.as_deref()))?;
            }
            if let Some(msg) = start.user_message {
                self.emit(EngineEvent::MessageCreated { message_id: MessageId::new(), role: MessageRole::User, source: None, text: Some(msg.clone()) })?;
                if start.trigger == RunTrigger::Feedback {
                    let with_comments = match &start.continuation {
                        Some((_, text)) => format!("{msg}\n\n{text}"),
                        None => msg.clone(),
                    };
                    match self.revise_for_feedback(&with_comments).await {
                        Ok(true) => return Ok(()),
                        Ok(false) => {}
                        Err(h) => return self.halted(h),
                    }
                }
                self.history.push(ChatMessage::User { content: msg });
            }
            if let Some((source, text)) = start.continuation {
                self.note(source, text)?;
            }
        } else if self.history.is_empty() {
            // A resumed session with nothing to say still needs the task in front of the model.
            self.history.push(ChatMessage::User { content: self.task.clone() });
        } else if self.plan_budget_spent()? {
            // The step ends at the budget below, before any call: a note telling the agent to go
            // on would show as sent when it never was.
        } else if start.trigger == RunTrigger::Resume {
            // Engine text, never the person's: stored and shown as Finishline's own note.
            self.note(ContinuationSource::Resume, prompt::resume_note())?;
        } else if start.trigger == RunTrigger::Message && self.nothing_to_answer() {
            // Sent on with no words (Resume after a cancel, Retry after a failure) where the
            // agent has nothing new to answer: told so, as after a restart, in words that say how
            // the last run ended. A conversation that ends in the task or a tool's result is sent
            // again as it is.
            let ended = self.engine.store.events_of_types(&self.session, &["run_finished"])?.into_iter().rev().find_map(|e| match e.event {
                EngineEvent::RunFinished { status, .. } => Some(status),
                _ => None,
            });
            self.note(ContinuationSource::Resume, prompt::go_on_note(ended))?;
        }
        let plans = match start.plan {
            PlanMode::On => true,
            PlanMode::Auto => crate::plan::auto_asks_manager(&self.task),
            PlanMode::Off => false,
        };
        if start.trigger == RunTrigger::Task && plans {
            match self.make_plan(start.plan).await {
                Ok(Some(plan)) => {
                    // Every step starts from the recorded workspace, so the first snapshot is
                    // finished before the plan hands over.
                    self.checkpoint_ready().await?;
                    return self.start_plan(plan, start.plan);
                }
                Ok(None) => {}
                Err(h) => return self.halted(h),
            }
        }
        // A step started (after a revision that made the plan's last call), resumed or continued
        // by a message with its plan's budget already spent ends before its first call: the
        // budget is a cap for it too.
        if matches!(start.trigger, RunTrigger::PlanStep | RunTrigger::Resume | RunTrigger::Message) && self.plan_step.is_some() {
            let nothing_yet = crate::judge::completion::Evidence::new(crate::judge::completion::StepEnd::Cut);
            match self.stop_at_plan_budget(&nothing_yet, None, vec![]).await {
                Ok(true) => return Ok(()),
                Ok(false) => {}
                Err(h) => return self.halted(h),
            }
        }
        loop {
            match self.step_and_decide().await {
                Ok(Some(())) => continue,
                Ok(None) => return Ok(()),
                Err(h) => return self.halted(h),
            }
        }
    }

    /// Ends the run for a halt with the status it calls for.
    fn halted(&mut self, halt: Halt) -> crate::Result<()> {
        match halt {
            Halt::Cancelled => {
                self.put_away_if_unused();
                let why = self.engine.runtime.why_cancelled(&self.session);
                self.finish(SessionStatus::Cancelled, EndReason::Cancelled, why)
            }
            Halt::Failed { code, message } => {
                self.emit(EngineEvent::Error { code, message: message.clone() })?;
                self.put_away_if_unused();
                self.finish(SessionStatus::Failed, EndReason::Failed, Some(message))
            }
            Halt::Denied => self.finish(SessionStatus::Idle, EndReason::PermissionDenied, None),
            Halt::QuestionDeclined => self.finish(SessionStatus::Idle, EndReason::QuestionDeclined, None),
            Halt::Store(e) => Err(e),
        }
    }

    /// The paths these calls write, as the workspace names them, when every call that may write
    /// is one of the agent's own file tools; `None` when a command or an MCP tool is among them.
    /// A path that cannot be read is simply not named: what changed there counts as unattributed.
    fn file_tool_writes(&self, calls: &[crate::provider::ToolCall]) -> Option<Vec<String>> {
        let writing: Vec<_> = calls.iter().filter(|c| !tool::READ_ONLY.contains(&c.name.as_str())).collect();
        if !writing.iter().all(|c| tool::FILE_WRITERS.contains(&c.name.as_str())) {
            return None;
        }
        let named = writing.iter().filter_map(|c| c.input.value()?.get("path")?.as_str().map(str::to_string));
        Some(named.filter_map(|p| self.recorded_name(&p)).collect())
    }

    /// A workspace path as the checkpoint store names it: from the top of the folder it records
    /// (a worktree's top, when the task works in a folder inside it). `None`: not in it.
    pub(super) fn recorded_name(&self, path: &str) -> Option<String> {
        let recorded = self.checkpoints.as_ref().map(|c| c.work_tree().to_path_buf()).unwrap_or_else(|| self.workspace.root().to_path_buf());
        let root = recorded.canonicalize().unwrap_or(recorded);
        Some(self.workspace.resolve(path).ok()?.strip_prefix(&root).ok()?.to_string_lossy().into_owned())
    }

    /// Runs the built-in agent's tool calls of the step (an external agent ran its own): the
    /// step's record of actions, and a `complete_task` claim among them.
    async fn run_step_tools(&mut self, out: &super::worker::StepOutput) -> Result<(StepRecord, Option<(ClaimEvidence, String)>), Halt> {
        let mut record = StepRecord { text: out.text.clone(), ..Default::default() };
        for (action, output, is_error) in &out.ran {
            record.actions.push(action.clone());
            record.observations.push((output.clone(), *is_error));
        }
        if !out.ran.is_empty() {
            self.evidence.used_tools = true;
        }
        let mut claim: Option<(ClaimEvidence, String)> = None;
        if !out.calls.is_empty() {
            self.evidence.used_tools = true;
            // Saved before the tools run: a crash while one runs resumes a work turn (with a
            // window open, the window's opening saves it).
            self.history.push(ChatMessage::Assistant { text: out.text.clone(), tool_calls: out.calls.clone() });
            if out.calls.iter().any(|c| !tool::READ_ONLY.contains(&c.name.as_str())) {
                let writes = self.file_tool_writes(&out.calls);
                self.open_window(writes).await?;
            } else {
                self.emit_saving(vec![])?;
            }
            let (results, complete) = self.run_tools(&out.calls, &mut record).await?;
            // A write denied or failed wrote nothing: what changed at its path meanwhile (an
            // edit saved while the question waited) is not the agent's.
            if self.evidence.open_writes.is_some() {
                let wrote: Vec<_> = out.calls.iter().zip(results.iter()).filter(|(_, r)| !r.is_error).map(|(c, _)| c.clone()).collect();
                self.evidence.open_writes = self.file_tool_writes(&wrote);
            }
            for (call, output) in out.calls.iter().zip(results.iter()) {
                if Some(&call.id) != complete.as_ref().map(|(_, id)| id) {
                    self.history.push(ChatMessage::Tool {
                        call_id: call.id.clone(),
                        name: call.name.clone(),
                        content: output.content.clone(),
                        is_error: output.is_error,
                    });
                }
            }
            claim = complete;
        } else if let Some(c) = out.claim.clone() {
            // An external agent's claim: its call was answered by Finishline's MCP server.
            claim = Some((c, String::new()));
        } else if !out.text.is_empty() && !out.in_history {
            self.history.push(ChatMessage::Assistant { text: out.text.clone(), tool_calls: vec![] });
        }
        Ok((record, claim))
    }

    /// Asks the completion engine what follows the step, running the checks it asks for, until
    /// it decides: another step, a continuation, review, idle or failure.
    async fn judge_step(&mut self, mut evidence: Evidence, answers_call: Option<String>, worker: &dyn super::worker::Worker) -> Result<Option<()>, Halt> {
        let judged = crate::judge::completion::CompletionConfig {
            require_complete_task: self.cfg().require_complete_task && worker.can_be_asked_to_claim(),
            ..self.cfg().clone()
        };
        let (mut verified_now, mut declined_now): (Vec<String>, Vec<String>) = (Vec::new(), Vec::new());
        // The last judgement was the plan step's own checks, not an evaluator's.
        let mut by_checks = false;
        loop {
            match completion::decide(&evidence, &judged) {
                Action::NextStep => {
                    // A plan step whose criteria are files that now hold is done: no further
                    // answer from the agent is needed to judge it.
                    if self.plan_step.is_some() && answers_call.is_none() && self.files_already_done() == Some(true) {
                        self.end_step(StepEnding {
                            end_reason: EndReason::VerifiedDone,
                            claim: Claim::None,
                            claim_words: None,
                            remaining: vec![],
                            stuck: None,
                        })
                        .await?;
                        return Ok(None);
                    }
                    if self.stop_at_plan_budget(&evidence, answers_call.as_deref(), evidence.open_todos.clone()).await? {
                        return Ok(None);
                    }
                    if let Some(id) = &answers_call {
                        self.answer_complete_task(id, "Noted. Finish the remaining tool work, then call complete_task again.")?;
                    }
                    return Ok(Some(()));
                }
                Action::Verify { commands } => {
                    let outcome = self.verify(&commands, false).await?;
                    verified_now = outcome.passed(&commands);
                    declined_now.clone_from(&outcome.skipped);
                    evidence.verification = Some(outcome);
                }
                Action::Evaluate { question } => {
                    // A plan step whose every criterion needs no reader is judged by its checks.
                    let checks = (question == crate::judge::completion::EvaluationQuestion::Done).then(|| self.step_checks()).flatten();
                    let by_checks_alone = match checks {
                        Some(checks) => self.check_step(&checks, &verified_now, &declined_now).await?,
                        None => None,
                    };
                    // A check declined (or nobody to ask) never ran: a model judges instead.
                    by_checks = by_checks_alone.is_some();
                    let ev = match by_checks_alone {
                        Some(ev) => ev,
                        None if self.stop_at_plan_budget(&evidence, answers_call.as_deref(), evidence.open_todos.clone()).await? => return Ok(None),
                        None => self.evaluate(question).await?,
                    };
                    evidence.evaluation = Some(ev);
                }
                Action::Continue { source, text, remaining } => {
                    // Work its checks found left is theirs to say, not an evaluator's.
                    let source = if by_checks && source == ContinuationSource::Evaluator { ContinuationSource::StepChecks } else { source };
                    if evidence.verification.is_some() {
                        self.evidence.previous_verification_failure = completion::deciding_failure(&evidence).cloned();
                    }
                    if let Some(ev) = &evidence.evaluation {
                        // In a plan step, an evaluation that leaves the same work open is a stall;
                        // too many and the step ends for the manager to replan.
                        let progress = self.evidence.previous_remaining.as_ref() != Some(&ev.remaining) || self.evidence.previous_remaining.is_none();
                        let remaining_now = ev.remaining.clone();
                        self.evidence.previous_remaining = Some(remaining_now.clone());
                        if self.step_stalled(progress) {
                            let stuck =
                                Some(Stuck { pattern: StuckPattern::RemainingUnchanged, repeated: remaining_now.join("; ").chars().take(300).collect() });
                            self.end_step(StepEnding { end_reason: EndReason::Stuck, claim: Claim::None, claim_words: None, remaining: remaining_now, stuck })
                                .await?;
                            return Ok(None);
                        }
                    }
                    let text = match source {
                        ContinuationSource::TodoGate => worker.todo_gate(&remaining).unwrap_or(text),
                        _ => text,
                    };
                    if self.stop_at_plan_budget(&evidence, answers_call.as_deref(), remaining.clone()).await? {
                        return Ok(None);
                    }
                    // Caught claiming done: with the tool, or in its reply ("Done!") when the
                    // checks or the evaluator then found work left. Asking for the tool's claim
                    // after a "Done!" (missing completion) refuses nothing yet.
                    let said_done = evidence.claim.is_none()
                        && matches!(
                            source,
                            ContinuationSource::Verification | ContinuationSource::Evaluator | ContinuationSource::StepChecks | ContinuationSource::TodoGate
                        )
                        && crate::judge::said_done::says_done(&evidence.last_text);
                    let refused = evidence.claim.as_ref().is_some_and(|c| c.claim == Claim::Success) || said_done;
                    self.continue_with(source, &text, remaining, answers_call.as_deref(), refused)?;
                    return Ok(Some(()));
                }
                Action::Review { end_reason, claim: c, stuck } => {
                    if let Some(id) = &answers_call {
                        // A plan step's end goes to the plan (its next step, a revision), not yet
                        // to the person.
                        let said = if self.plan_step.is_some() {
                            "Accepted: this step of the plan ends here, and the plan goes on from it. Stop here."
                        } else {
                            "Accepted: your completion goes to the person for review. Stop here."
                        };
                        self.answer_complete_task(id, said)?;
                    }
                    let remaining = evidence.evaluation.as_ref().map(|e| e.remaining.clone()).unwrap_or_else(|| evidence.open_todos.clone());
                    let claim_words = evidence.claim.as_ref().map(|c| ClaimWords {
                        summary: c.summary.clone(),
                        original_request_summary: c.original_request_summary.clone(),
                        remaining_work: c.remaining_work.clone(),
                    });
                    if self.plan_step.is_some() {
                        self.end_step(StepEnding { end_reason, claim: c, claim_words, remaining, stuck }).await?;
                        return Ok(None);
                    }
                    self.review(ReviewInput { claim: c, claim_words, end_reason, remaining, stuck })?;
                    return Ok(None);
                }
                Action::Idle { end_reason } => {
                    if self.plan_step.is_some() {
                        // A step that ends in conversation did no checked work: it is not done.
                        self.end_step(StepEnding { end_reason, claim: Claim::None, claim_words: None, remaining: evidence.open_todos.clone(), stuck: None })
                            .await?;
                        return Ok(None);
                    }
                    // An answer that changed nothing leaves no work to wait in a worktree; a
                    // task decided before (a thank-you after it landed) is then as it was decided,
                    // as putting the worktree away by hand would leave it.
                    let status = if self.put_away_if_unused() { self.decided_before().unwrap_or(SessionStatus::Idle) } else { SessionStatus::Idle };
                    self.finish(status, end_reason, None)?;
                    return Ok(None);
                }
                Action::Fail { code, message } => return Err(Halt::Failed { code, message }),
            }
        }
    }

    /// One step and what follows it. `Some` means another step.
    async fn step_and_decide(&mut self) -> Result<Option<()>, Halt> {
        if self.cancel.is_cancelled() {
            return Err(Halt::Cancelled);
        }
        let Some(mut worker) = self.worker.take() else {
            return Err(Halt::Failed { code: ErrorCode::Internal, message: "the run has no worker".into() });
        };
        self.evidence.counters.steps += 1;
        let judged = match worker.turn(self).await {
            Ok(out) => self.judge_turn(out, worker.as_ref()).await,
            Err(h) => Err(h),
        };
        self.worker = Some(worker);
        judged
    }

    /// What follows a turn: its tools run (the built-in agent's), its record kept, and the judge.
    async fn judge_turn(&mut self, out: super::worker::StepOutput, worker: &dyn super::worker::Worker) -> Result<Option<()>, Halt> {
        let (record, claim) = self.run_step_tools(&out).await?;
        self.checkpoint_ready().await?;
        self.snapshot_after_step()?;
        self.evidence.record(record);
        let stuck_pattern = match &out.repeating {
            Some(repeated) => Some(Stuck { pattern: StuckPattern::RepeatingOutput, repeated: repeated.chars().take(300).collect() }),
            None => stuck::detect(&self.evidence.records),
        };
        // A `complete_task` the engine refused (partial without remaining work) is a tool call
        // like any other: the model gets its error and another step.
        // An external agent's turn ends when the agent stops, whatever tools it ran on the way:
        // its end is judged, never waited past as a tool step.
        let step_called_tools = out.calls.iter().any(|c| c.name != tool::COMPLETE_TASK || claim.is_none());
        let turn_ran_tools = !out.ran.is_empty();
        let mut evidence = Evidence {
            step_end: out.end.clone(),
            output_tokens: out.usage.output_tokens,
            last_text: out.text.clone(),
            step_called_tools,
            // An external agent's turn holds its own tool steps: a short stop after tools in the
            // same turn is after tool work, as a built-in step after a tool step is.
            prev_step_called_tools: self.evidence.prev_step_called_tools || turn_ran_tools,
            claim: claim.as_ref().map(|(c, _)| c.clone()),
            open_todos: self.todos.iter().filter(|t| matches!(t.status, TodoStatus::Pending | TodoStatus::InProgress)).map(|t| t.content.clone()).collect(),
            run_used_tools: self.evidence.used_tools,
            run_wrote_todos: self.evidence.wrote_todos,
            files_changed: self.run_changed_files(),
            counters: self.evidence.counters,
            stuck_pattern,
            verify_commands: self.run_verify_commands(),
            task_commands: self.task_verify_commands(),
            verification: None,
            previous_verification_failure: self.evidence.previous_verification_failure.clone(),
            evaluation: None,
            previous_remaining: self.evidence.previous_remaining.clone(),
            open_criteria: self.open_criteria(),
            conflict_markers: self.markers_left(),
            // A plan step is work with criteria, as an answer to Request changes is: a step
            // that only talks is judged and sent back, not taken for a conversation turn.
            answers_review: self.evidence.answers_review || self.plan_step.is_some(),
        };
        // A cut-off step continues the one before it, so it leaves "work open" as it was.
        let cut = matches!(out.end, StepEnd::Cut | StepEnd::Stopped(StopReason::Length))
            || (out.calls.is_empty()
                && claim.is_none()
                && completion::short_stop_is_cut(&out.text, out.usage.output_tokens, self.cfg())
                && (evidence.prev_step_called_tools || !evidence.open_todos.is_empty()));
        if !cut {
            self.evidence.prev_step_called_tools = step_called_tools;
            self.evidence.counters.truncations_in_row = 0;
            evidence.counters.truncations_in_row = 0;
        }
        self.emit_saving(vec![])?;
        let answers_call = claim.as_ref().map(|(_, id)| id.clone()).filter(|id| !id.is_empty());
        self.judge_step(evidence, answers_call, worker).await
    }

    pub(super) fn answer_complete_task(&mut self, call_id: &str, text: &str) -> crate::Result<()> {
        self.emit(EngineEvent::ToolCall {
            call_id: call_id.into(),
            message_id: None,
            tool: tool::COMPLETE_TASK.into(),
            kind: None,
            input: Value::Null,
            state: ToolState::Done,
            output: Some(text.into()),
        })?;
        self.history.push(ChatMessage::Tool { call_id: call_id.into(), name: tool::COMPLETE_TASK.into(), content: text.into(), is_error: false });
        Ok(())
    }

    fn continue_with(
        &mut self,
        source: ContinuationSource,
        text: &str,
        remaining: Vec<String>,
        answers_call: Option<&str>,
        refused_claim: bool,
    ) -> crate::Result<()> {
        let (attempt, max) = if source.spends_budget() {
            self.evidence.counters.continuations_used += 1;
            (self.evidence.counters.continuations_used, self.cfg().continuation_budget)
        } else {
            self.evidence.counters.truncations_in_row += 1;
            (self.evidence.counters.truncations_in_row, self.cfg().truncation_cap)
        };
        let tagged = prompt::tagged(source, attempt, max, text);
        self.emit_saving(vec![
            EngineEvent::Continuation { source, attempt, max, remaining, text: text.to_string(), answers_call: answers_call.map(String::from), refused_claim },
            EngineEvent::MessageCreated { message_id: MessageId::new(), role: MessageRole::Continuation, source: Some(source), text: Some(text.to_string()) },
        ])?;
        match answers_call {
            Some(id) => {
                self.emit(EngineEvent::ToolCall {
                    call_id: id.into(),
                    message_id: None,
                    tool: tool::COMPLETE_TASK.into(),
                    kind: None,
                    input: Value::Null,
                    state: ToolState::Done,
                    output: Some(tagged.clone()),
                })?;
                self.history.push(ChatMessage::Tool { call_id: id.into(), name: tool::COMPLETE_TASK.into(), content: tagged, is_error: false });
            }
            None => self.history.push(ChatMessage::User { content: tagged }),
        }
        Ok(())
    }

    pub(super) fn finish(&mut self, status: SessionStatus, end_reason: EndReason, message: Option<String>) -> crate::Result<()> {
        self.emit_saving(vec![
            EngineEvent::RunFinished { status, claim: Claim::None, verdict: self.evidence.last_verdict, end_reason, stuck: None },
            EngineEvent::StatusChanged { status, attempt: None, max_retries: None, next_retry_at: None, message },
        ])
    }
}

/// The events that start a plan's step `index` before anything changed (the first step).
pub(super) fn plan_step_start(task: &str, state: &crate::plan::state::PlanState, index: usize) -> Vec<EngineEvent> {
    super::plan_run::step_start(task, state, index, &[])
}

/// Who judges a session's runs: the evaluator set, else, for an attempt, the model that judged
/// its group from the start (its own follow-up runs with its worker's model as the agent's, and
/// a comparison of the group is asked of the same judge), else the agent's endpoint.
/// `session_provider`: the provider the session recorded (`acp` for an external agent).
pub(super) fn judge_of(config: &super::EngineConfig, session_provider: &str, events: &[crate::event::Envelope]) -> super::ModelEndpoint {
    config.evaluator.clone().unwrap_or_else(|| {
        let agent = config.agent.clone();
        match recorded_judge(events, session_provider, &agent.provider_name) {
            Some(model) => super::ModelEndpoint { model, ..agent },
            None => agent,
        }
    })
}

/// The judge model an attempt recorded when it started, if it may be asked of the provider set up
/// now: the one it was asked of then (an external agent's session records `acp`, not the judge's
/// provider; a history from before the judge's provider was recorded is read by the session's
/// own). A model of another provider is not asked of this one: the settings changed since.
fn recorded_judge(events: &[crate::event::Envelope], session_provider: &str, current_provider: &str) -> Option<String> {
    let (model, provider) = events.iter().find_map(|e| match &e.event {
        EngineEvent::AttemptStarted { evaluator: Some(m), evaluator_provider, .. } => Some((m.clone(), evaluator_provider.clone())),
        _ => None,
    })?;
    let provider = provider.unwrap_or_else(|| session_provider.to_string());
    (crate::provider::settings::current_name(&provider) == current_provider && !model.trim().is_empty()).then_some(model)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Envelope;

    fn started(evaluator: &str, evaluator_provider: Option<&str>) -> Vec<Envelope> {
        let event = EngineEvent::AttemptStarted {
            group: GroupId("grp_1".into()),
            number: 1,
            of: 2,
            label: "Claude Code".into(),
            evaluator: Some(evaluator.into()),
            evaluator_provider: evaluator_provider.map(String::from),
        };
        vec![Envelope { seq: 1, session_id: SessionId("s".into()), run_id: None, at: String::new(), event }]
    }

    #[test]
    fn an_external_agents_attempt_keeps_the_judge_of_its_group_on_the_provider_it_was_asked_of() {
        assert_eq!(recorded_judge(&started("m", Some("openai")), "acp", "openai"), Some("m".into()), "its session's provider is acp, not the judge's");
        assert_eq!(recorded_judge(&started("m", Some("openai")), "acp", "anthropic"), None, "the settings moved to another provider");
        assert_eq!(recorded_judge(&started("m", None), "openai", "openai"), Some("m".into()), "an older history: the session's own provider");
        assert_eq!(recorded_judge(&started("openairesponses-m", Some("openairesponses")), "acp", "openai-responses"), Some("openairesponses-m".into()));
        assert_eq!(recorded_judge(&started(" ", Some("openai")), "openai", "openai"), None);
        assert_eq!(recorded_judge(&[], "openai", "openai"), None, "no attempt");
    }
}
