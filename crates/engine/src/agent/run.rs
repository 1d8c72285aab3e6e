//! One run: steps until the completion engine says to stop. Every step streams from the model,
//! persists as it goes (batched deltas), runs tools through the permission gate, checkpoints the
//! workspace, checks for stuck patterns, and asks [`crate::completion::decide`] what comes next.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Instant;

use futures_util::StreamExt;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::{Answer, Engine};
use crate::agent::permission::Gate;
use crate::batch::DeltaBatcher;
use crate::checkpoint::{ChangeKind, Checkpoints};
use crate::clock::rfc3339;
use crate::completion::{self, Action, ClaimEvidence, Counters, EvaluationOutcome, EvaluationQuestion, Evidence, StepEnd, VerificationFailure, VerificationOutcome};
use crate::domain::*;
use crate::evaluator::{self, EvaluatorInput};
use crate::event::EngineEvent;
use crate::prompt;
use crate::provider::{stream_with_retry, ChatMessage, CompletionEvent, CompletionRequest, ProviderErrorKind, StopReason, ToolCall, ToolInput, Usage};
use crate::stuck::{self, StepRecord};
use crate::tool::{self, CompleteTaskInput, CompletionStatus, ToolContext, ToolOutput, Workspace};

/// Why a run stopped early from inside a step or a tool.
enum Halt {
    Cancelled,
    Failed(String),
    Denied,
    QuestionDeclined,
    Store(crate::Error),
}

impl From<crate::Error> for Halt {
    fn from(e: crate::Error) -> Self {
        Halt::Store(e)
    }
}

struct StepOutput {
    text: String,
    calls: Vec<ToolCall>,
    end: StepEnd,
    usage: Usage,
}

pub struct Run {
    engine: Arc<Engine>,
    session: SessionId,
    run: RunId,
    cancel: CancellationToken,
    workspace: Workspace,
    checkpoints: Option<Checkpoints>,
    task: String,
    history: Vec<ChatMessage>,
    counters: Counters,
    compactions: u32,
    records: Vec<StepRecord>,
    run_used_tools: bool,
    run_wrote_todos: bool,
    prev_step_called_tools: bool,
    todos: Vec<Todo>,
    allowed: HashSet<String>,
    /// The built-in tools plus the live MCP servers' tools, refreshed before each step.
    toolbox: crate::tool::Toolbox,
    cycle: u32,
    previous_verification_failure: Option<VerificationFailure>,
    previous_remaining: Option<Vec<String>>,
    last_verdict: Option<Verdict>,
    verification_log: Vec<String>,
    /// Call ids seen in this session: some servers reuse ids across steps, and every call must
    /// keep its own result.
    call_ids: HashSet<String>,
}

impl Run {
    /// Runs to the end and records how it ended. Never panics on bad input or provider faults:
    /// every way out ends in a status.
    pub async fn execute(engine: Arc<Engine>, session: SessionId, trigger: RunTrigger, user_message: Option<String>, cancel: CancellationToken) {
        let run_id = RunId::new();
        let mut run = match Run::prepare(engine.clone(), session.clone(), run_id.clone(), cancel).await {
            Ok(r) => r,
            Err(e) => {
                let _ = engine.store.append_all(&session, Some(&run_id), vec![
                    EngineEvent::Error { code: e.code().as_str().into(), message: e.to_string() },
                    EngineEvent::StatusChanged { status: SessionStatus::Failed, attempt: None, next_retry_at: None, message: Some(e.to_string()) },
                ]);
                return;
            }
        };
        if let Err(e) = run.main(trigger, user_message).await {
            let _ = engine.store.append_all(&session, Some(&run_id), vec![
                EngineEvent::Error { code: e.code().as_str().into(), message: e.to_string() },
                EngineEvent::RunFinished { status: SessionStatus::Failed, claim: Claim::None, verdict: run.last_verdict, end_reason: EndReason::Failed },
                EngineEvent::StatusChanged { status: SessionStatus::Failed, attempt: None, next_retry_at: None, message: Some(e.to_string()) },
            ]);
        }
    }

    async fn prepare(engine: Arc<Engine>, session: SessionId, run: RunId, cancel: CancellationToken) -> crate::Result<Run> {
        let summary = engine.store.session(&session)?;
        let workspace = Workspace::new(std::path::Path::new(&summary.workspace))
            .map_err(|e| crate::Error::InvalidInput(format!("the workspace {} cannot be used: {e}", summary.workspace)))?;
        let checkpoints = engine.checkpoints(&session, workspace.root()).ok();
        let events = engine.store.events(&session, 0)?;
        let history = super::history::rebuild(&events);
        let todos = engine.store.todos(&session)?;
        Ok(Run {
            toolbox: engine.toolbox.clone(),
            engine,
            session,
            run,
            cancel,
            workspace,
            checkpoints,
            task: summary.task,
            history,
            counters: Counters::default(),
            compactions: 0,
            records: vec![],
            run_used_tools: false,
            run_wrote_todos: false,
            prev_step_called_tools: false,
            todos,
            allowed: HashSet::new(),
            cycle: 0,
            previous_verification_failure: None,
            previous_remaining: None,
            last_verdict: None,
            verification_log: vec![],
            call_ids: events
                .iter()
                .filter_map(|e| match &e.event {
                    EngineEvent::ToolCall { call_id, .. } => Some(call_id.clone()),
                    _ => None,
                })
                .collect(),
        })
    }

    fn emit(&self, event: EngineEvent) -> crate::Result<()> {
        self.engine.store.append(&self.session, Some(&self.run), event)?;
        Ok(())
    }

    fn emit_all(&self, events: Vec<EngineEvent>) -> crate::Result<()> {
        self.engine.store.append_all(&self.session, Some(&self.run), events)?;
        Ok(())
    }

    fn status(status: SessionStatus) -> EngineEvent {
        EngineEvent::StatusChanged { status, attempt: None, next_retry_at: None, message: None }
    }

    fn cfg(&self) -> &crate::completion::CompletionConfig {
        &self.engine.config.completion
    }

    async fn main(&mut self, trigger: RunTrigger, user_message: Option<String>) -> crate::Result<()> {
        self.emit_all(vec![EngineEvent::RunStarted { trigger }, Self::status(SessionStatus::Busy)])?;
        // A resumed run continues interrupted work: it is a work turn even if it calls no tool.
        if trigger == RunTrigger::Resume {
            self.run_used_tools = self.history.iter().any(|m| matches!(m, ChatMessage::Assistant { tool_calls, .. } if !tool_calls.is_empty()));
        }
        if let Some(cp) = &self.checkpoints {
            let snap = tokio::task::block_in_place(|| cp.snapshot("run start"))?;
            if cp.marked("base").is_none() {
                cp.mark("base", &snap)?;
            }
        }
        if let Some(msg) = user_message {
            self.emit(EngineEvent::MessageCreated { message_id: MessageId::new(), role: MessageRole::User, source: None, text: Some(msg.clone()) })?;
            self.history.push(ChatMessage::User { content: msg });
        } else if self.history.is_empty() {
            // A resumed session with nothing to say still needs the task in front of the model.
            self.history.push(ChatMessage::User { content: self.task.clone() });
        } else if trigger == RunTrigger::Resume {
            let note = "Finishline was restarted. Continue the task from where you were; check the workspace for the state of anything whose outcome is unknown.";
            self.emit(EngineEvent::MessageCreated { message_id: MessageId::new(), role: MessageRole::User, source: None, text: Some(note.into()) })?;
            self.history.push(ChatMessage::User { content: note.into() });
        }
        loop {
            match self.step_and_decide().await {
                Ok(Some(())) => continue,
                Ok(None) => return Ok(()),
                Err(Halt::Cancelled) => return self.finish(SessionStatus::Cancelled, Claim::None, EndReason::Cancelled),
                Err(Halt::Failed(message)) => {
                    self.emit(EngineEvent::Error { code: "provider".into(), message: message.clone() })?;
                    return self.finish_with_message(SessionStatus::Failed, Claim::None, EndReason::Failed, Some(message));
                }
                Err(Halt::Denied) => return self.finish(SessionStatus::Idle, Claim::None, EndReason::PermissionDenied),
                Err(Halt::QuestionDeclined) => return self.finish(SessionStatus::Idle, Claim::None, EndReason::QuestionDeclined),
                Err(Halt::Store(e)) => return Err(e),
            }
        }
    }

    /// One step and what follows it. `Some` means another step.
    async fn step_and_decide(&mut self) -> Result<Option<()>, Halt> {
        if self.cancel.is_cancelled() {
            return Err(Halt::Cancelled);
        }
        self.refresh_tools().await?;
        self.maybe_compact().await?;
        self.counters.steps += 1;
        let out = self.stream_step().await?;
        let mut record = StepRecord { text: out.text.clone(), ..Default::default() };
        let mut claim: Option<(ClaimEvidence, String)> = None;
        if !out.calls.is_empty() {
            self.run_used_tools = true;
            self.history.push(ChatMessage::Assistant { text: out.text.clone(), tool_calls: out.calls.clone() });
            let (results, complete) = self.run_tools(&out.calls, &mut record).await?;
            for (call, output) in out.calls.iter().zip(results.iter()) {
                if Some(&call.id) != complete.as_ref().map(|(_, id)| id) {
                    self.history.push(ChatMessage::Tool { call_id: call.id.clone(), name: call.name.clone(), content: output.content.clone(), is_error: output.is_error });
                }
            }
            claim = complete.map(|(c, id)| (c, id));
        } else if !out.text.is_empty() {
            self.history.push(ChatMessage::Assistant { text: out.text.clone(), tool_calls: vec![] });
        }
        self.snapshot_after_step()?;
        self.records.push(record);
        let stuck_pattern = stuck::detect(&self.records).map(String::from);
        let step_called_tools = out.calls.iter().any(|c| c.name != tool::COMPLETE_TASK);
        let mut evidence = Evidence {
            step_end: out.end.clone(),
            output_tokens: out.usage.output_tokens,
            last_text: out.text.clone(),
            step_called_tools,
            prev_step_called_tools: self.prev_step_called_tools,
            claim: claim.as_ref().map(|(c, _)| c.clone()),
            open_todos: self.todos.iter().filter(|t| matches!(t.status, TodoStatus::Pending | TodoStatus::InProgress)).map(|t| t.content.clone()).collect(),
            run_used_tools: self.run_used_tools,
            run_wrote_todos: self.run_wrote_todos,
            files_changed: self.files_changed(),
            counters: self.counters,
            stuck_pattern,
            verify_commands: self.engine.config.verify_commands.clone(),
            verification: None,
            previous_verification_failure: self.previous_verification_failure.clone(),
            evaluation: None,
            previous_remaining: self.previous_remaining.clone(),
        };
        // A cut-off step continues the one before it, so it leaves "work open" as it was.
        let cut = matches!(out.end, StepEnd::Cut | StepEnd::Stopped(StopReason::Length))
            || (out.calls.is_empty() && claim.is_none() && out.usage.output_tokens <= self.cfg().min_output_tokens && (self.prev_step_called_tools || !evidence.open_todos.is_empty()));
        if !cut {
            self.prev_step_called_tools = step_called_tools;
            self.counters.truncations_in_row = 0;
            evidence.counters.truncations_in_row = 0;
        }
        let answers_call = claim.as_ref().map(|(_, id)| id.clone());
        loop {
            let action = completion::decide(&evidence, self.cfg());
            match action {
                Action::NextStep => {
                    if let Some(id) = &answers_call {
                        self.answer_complete_task(id, "Noted. Finish the remaining tool work, then call complete_task again.")?;
                    }
                    return Ok(Some(()));
                }
                Action::Verify { commands } => {
                    let outcome = self.verify(&commands).await?;
                    evidence.verification = Some(outcome);
                }
                Action::Evaluate { question } => {
                    let ev = self.evaluate(question).await?;
                    evidence.evaluation = Some(ev);
                }
                Action::Continue { source, text, remaining } => {
                    self.continue_with(source, &text, remaining, answers_call.as_deref())?;
                    if let Some(v) = &evidence.verification {
                        self.previous_verification_failure = v.failure.clone();
                    }
                    if let Some(ev) = &evidence.evaluation {
                        self.previous_remaining = Some(ev.remaining.clone());
                    }
                    return Ok(Some(()));
                }
                Action::Review { end_reason, claim: c } => {
                    if let Some(id) = &answers_call {
                        self.answer_complete_task(id, "Accepted: your completion goes to the person for review. Stop here.")?;
                    }
                    let remaining = evidence.evaluation.as_ref().map(|e| e.remaining.clone()).unwrap_or_else(|| evidence.open_todos.clone());
                    self.review(c, end_reason, remaining)?;
                    return Ok(None);
                }
                Action::Idle { end_reason } => {
                    self.finish(SessionStatus::Idle, Claim::None, end_reason)?;
                    return Ok(None);
                }
                Action::Fail { message } => return Err(Halt::Failed(message)),
            }
        }
    }

    fn answer_complete_task(&mut self, call_id: &str, text: &str) -> crate::Result<()> {
        self.emit(EngineEvent::ToolCall { call_id: call_id.into(), message_id: None, tool: tool::COMPLETE_TASK.into(), input: Value::Null, state: ToolState::Done, output: Some(text.into()) })?;
        self.history.push(ChatMessage::Tool { call_id: call_id.into(), name: tool::COMPLETE_TASK.into(), content: text.into(), is_error: false });
        Ok(())
    }

    fn continue_with(&mut self, source: ContinuationSource, text: &str, remaining: Vec<String>, answers_call: Option<&str>) -> crate::Result<()> {
        let (attempt, max) = if source == ContinuationSource::Truncation {
            self.counters.truncations_in_row += 1;
            (self.counters.truncations_in_row, self.cfg().truncation_cap)
        } else {
            self.counters.continuations_used += 1;
            (self.counters.continuations_used, self.cfg().continuation_budget)
        };
        let tagged = prompt::tagged(source, attempt, max, text);
        self.emit_all(vec![
            EngineEvent::Continuation { source, attempt, max, remaining, text: text.to_string(), answers_call: answers_call.map(String::from) },
            EngineEvent::MessageCreated { message_id: MessageId::new(), role: MessageRole::Continuation, source: Some(source), text: Some(text.to_string()) },
        ])?;
        match answers_call {
            Some(id) => {
                self.emit(EngineEvent::ToolCall { call_id: id.into(), message_id: None, tool: tool::COMPLETE_TASK.into(), input: Value::Null, state: ToolState::Done, output: Some(tagged.clone()) })?;
                self.history.push(ChatMessage::Tool { call_id: id.into(), name: tool::COMPLETE_TASK.into(), content: tagged, is_error: false });
            }
            None => self.history.push(ChatMessage::User { content: tagged }),
        }
        Ok(())
    }

    /// Starts MCP servers the first time, drops the tools of any that died, and tells the person
    /// about each server that failed, once.
    async fn refresh_tools(&mut self) -> Result<(), Halt> {
        let Some(mcp) = self.engine.config.mcp.clone() else { return Ok(()) };
        let (tools, failures) = mcp.tools().await;
        for message in failures {
            self.emit(EngineEvent::Error { code: "mcp".into(), message })?;
        }
        self.toolbox = self.engine.toolbox.clone().with(tools);
        Ok(())
    }

    fn request(&self) -> CompletionRequest {
        CompletionRequest {
            model: self.engine.config.agent.model.clone(),
            system: prompt::system_prompt(&self.workspace.root().to_string_lossy(), self.cfg().marker.as_deref()),
            messages: self.history.clone(),
            tools: self.toolbox.specs(),
            max_tokens: self.engine.config.max_output_tokens,
            structured: None,
            temperature: None,
        }
    }

    async fn stream_step(&mut self) -> Result<StepOutput, Halt> {
        let step = self.counters.steps;
        let message_id = MessageId::new();
        self.emit_all(vec![
            EngineEvent::StepStarted { step },
            EngineEvent::Activity { phase: ActivityPhase::Thinking, detail: String::new() },
            EngineEvent::MessageCreated { message_id: message_id.clone(), role: MessageRole::Assistant, source: None, text: None },
        ])?;
        let mut compacted_for_overflow = false;
        loop {
            let store = self.engine.store.clone();
            let (session, run) = (self.session.clone(), self.run.clone());
            let clock_now = store.now_ms();
            // Set by a retry wait, so the stream loop knows to show `busy` again without a query.
            let retried = Arc::new(std::sync::atomic::AtomicBool::new(false));
            let retried_flag = retried.clone();
            let on_retry = Arc::new(move |w: &crate::provider::RetryWait| {
                retried_flag.store(true, std::sync::atomic::Ordering::SeqCst);
                let at = rfc3339(clock_now.max(store.now_ms()) + w.delay.as_millis() as i64);
                let _ = store.append(&session, Some(&run), EngineEvent::StatusChanged {
                    status: SessionStatus::Retry,
                    attempt: Some(w.attempt),
                    next_retry_at: Some(at),
                    message: Some(w.error.message.clone()),
                });
            });
            let mut stream = stream_with_retry(self.engine.config.agent.provider.clone(), self.request(), self.engine.config.retry, on_retry);
            let mut batcher = DeltaBatcher::default();
            let (mut text, mut calls, mut usage, mut stop) = (String::new(), Vec::new(), None::<Usage>, None);
            let mut reasoning_chars = 0usize;
            let mut shown = false;
            let outcome: Result<(), crate::provider::ProviderError> = loop {
                let deadline = batcher.deadline().map(tokio::time::Instant::from_std);
                let item = tokio::select! {
                    biased;
                    _ = self.cancel.cancelled() => {
                        if let Some(e) = batcher.take() { self.emit(e)?; }
                        return Err(Halt::Cancelled);
                    }
                    _ = async { tokio::time::sleep_until(deadline.unwrap()).await }, if deadline.is_some() => {
                        if let Some(e) = batcher.take() { self.emit(e)?; }
                        continue;
                    }
                    item = stream.next() => item,
                };
                let Some(item) = item else { break Ok(()) };
                if retried.swap(false, std::sync::atomic::Ordering::SeqCst) {
                    // The retry worked: back to busy before the output shows.
                    self.emit(Self::status(SessionStatus::Busy))?;
                }
                match item {
                    Ok(CompletionEvent::TextDelta { text: t }) => {
                        shown = true;
                        text.push_str(&t);
                        if let Some(e) = batcher.push(&message_id, false, &t, Instant::now()) { self.emit(e)?; }
                    }
                    Ok(CompletionEvent::ReasoningDelta { text: t }) => {
                        shown = true;
                        reasoning_chars += t.len();
                        if let Some(e) = batcher.push(&message_id, true, &t, Instant::now()) { self.emit(e)?; }
                    }
                    Ok(CompletionEvent::ToolCall { mut call }) => {
                        if call.id.is_empty() || self.call_ids.contains(&call.id) {
                            call.id = format!("{}_{}", if call.id.is_empty() { "call" } else { &call.id }, uuid::Uuid::now_v7().simple());
                        }
                        self.call_ids.insert(call.id.clone());
                        calls.push(call)
                    }
                    Ok(CompletionEvent::Usage { usage: u }) => usage = Some(u),
                    Ok(CompletionEvent::Stop { reason }) => stop = Some(reason),
                    Err(e) => break Err(e),
                }
            };
            if let Some(e) = batcher.take() {
                self.emit(e)?;
            }
            let end = match outcome {
                Ok(()) => match stop {
                    Some(r) => StepEnd::Stopped(r),
                    None => StepEnd::Cut,
                },
                Err(e) if e.kind == ProviderErrorKind::ContextTooLong && !compacted_for_overflow && !shown => {
                    compacted_for_overflow = true;
                    self.compact().await?;
                    continue;
                }
                Err(e) if shown && matches!(e.kind, ProviderErrorKind::Network | ProviderErrorKind::Stall | ProviderErrorKind::TruncatedStream | ProviderErrorKind::MalformedStream) => StepEnd::Cut,
                Err(e) if e.kind == ProviderErrorKind::TruncatedStream => StepEnd::Cut,
                Err(e) => StepEnd::Failed { message: e.message },
            };
            if matches!(end, StepEnd::Stopped(StopReason::Error)) && calls.is_empty() {
                // A malformed call (Gemini MALFORMED_FUNCTION_CALL): tell the model, do not fail.
                self.history.push(ChatMessage::User { content: "<system-reminder source=\"tool_error\">Your last tool call was malformed and could not be run. Call the tool again with valid JSON arguments.</system-reminder>".into() });
            }
            let stop_reason = match &end {
                StepEnd::Stopped(r) => Some(*r),
                _ => None,
            };
            let usage = usage.unwrap_or_else(|| {
                let args: usize = calls.iter().map(|c| crate::provider::openai::arguments_text(&c.input).len()).sum();
                Usage { input_tokens: self.estimate_tokens(), output_tokens: ((text.len() + reasoning_chars + args) as u64).div_ceil(4), estimated: true, ..Default::default() }
            });
            self.emit(EngineEvent::StepFinished { step, stop_reason, usage })?;
            let end = if matches!(end, StepEnd::Stopped(StopReason::Error)) && calls.is_empty() { StepEnd::Stopped(StopReason::PauseTurn) } else { end };
            return Ok(StepOutput { text, calls, end, usage });
        }
    }

    fn tool_event(&self, call: &ToolCall, state: ToolState, output: Option<String>) -> EngineEvent {
        let input = match &call.input {
            ToolInput::Parsed { value } => value.clone(),
            ToolInput::Invalid { raw, .. } => json!({"_invalid_json": raw}),
        };
        EngineEvent::ToolCall { call_id: call.id.clone(), message_id: None, tool: call.name.clone(), input, state, output }
    }

    /// Runs a step's tool calls in order; `complete_task` is answered last, by the completion
    /// engine. Every call gets a result, even when the run stops halfway.
    async fn run_tools(&mut self, calls: &[ToolCall], record: &mut StepRecord) -> Result<(Vec<ToolOutput>, Option<(ClaimEvidence, String)>), Halt> {
        let mut results = Vec::new();
        let mut complete = None;
        let mut halt: Option<Halt> = None;
        for call in calls {
            record.actions.push(format!("{}({})", call.name, crate::provider::openai::arguments_text(&call.input)));
            if let Some(h) = &halt {
                let why = match h {
                    Halt::Denied => "Not run: the run stopped because the person denied an earlier call.",
                    _ => "Not run: the run stopped.",
                };
                self.emit(self.tool_event(call, ToolState::Error, Some(why.into())))?;
                results.push(ToolOutput::error(why));
                continue;
            }
            self.emit(self.tool_event(call, ToolState::Pending, None))?;
            let out = match (&call.input, call.name.as_str()) {
                (ToolInput::Invalid { raw, error }, _) => {
                    ToolOutput::error(format!("The arguments are not valid JSON ({error}): {}. Call {} again with valid JSON.", crate::provider::openai::clip(raw), call.name))
                }
                (ToolInput::Parsed { value }, tool::COMPLETE_TASK) => match tool::parse_input::<CompleteTaskInput>(tool::COMPLETE_TASK, value.clone()) {
                    Ok(input) => {
                        let c = match input.status {
                            CompletionStatus::Success => Claim::Success,
                            CompletionStatus::Partial => Claim::Partial,
                            CompletionStatus::Blocked => Claim::Blocked,
                        };
                        complete = Some((ClaimEvidence { claim: c, remaining_work: input.remaining_work, verify_command: input.verify_command }, call.id.clone()));
                        results.push(ToolOutput::ok(""));
                        continue;
                    }
                    Err(e) => e,
                },
                (ToolInput::Parsed { value }, tool::TODO_WRITE) => self.todo_write(value.clone())?,
                (ToolInput::Parsed { value }, tool::ASK_USER) => match self.ask_user(call, value.clone()).await {
                    Ok(o) => o,
                    Err(h) => {
                        let o = ToolOutput::error("The person declined to answer.");
                        self.emit(self.tool_event(call, ToolState::Error, Some(o.content.clone())))?;
                        results.push(o);
                        halt = Some(h);
                        continue;
                    }
                },
                (ToolInput::Parsed { value }, name) => match self.toolbox.get(name).cloned() {
                    None => ToolOutput::error(format!("There is no tool named `{name}`. Use one of the tools you were given.")),
                    Some(t) => match self.permit(call).await {
                        Err(Halt::Denied) => {
                            let o = ToolOutput::error("The person denied this call.");
                            self.emit(self.tool_event(call, ToolState::Denied, Some(o.content.clone())))?;
                            results.push(o);
                            if !self.engine.config.permissions.continue_after_denial {
                                halt = Some(Halt::Denied);
                            }
                            continue;
                        }
                        Err(h) => return Err(h),
                        Ok(()) => {
                            self.emit_all(vec![self.tool_event(call, ToolState::Running, None), EngineEvent::Activity { phase: ActivityPhase::Tool, detail: name.to_string() }])?;
                            let ctx = ToolContext { workspace: self.workspace.clone(), cancel: self.cancel.clone() };
                            let o = t.call(&ctx, value.clone()).await;
                            if self.cancel.is_cancelled() {
                                self.emit(self.tool_event(call, ToolState::Error, Some("Cancelled.".into())))?;
                                return Err(Halt::Cancelled);
                            }
                            o
                        }
                    },
                },
            };
            self.emit(self.tool_event(call, if out.is_error { ToolState::Error } else { ToolState::Done }, Some(out.content.clone())))?;
            record.observations.push((out.content.clone(), out.is_error));
            results.push(out);
        }
        match halt {
            Some(h) => {
                // The results still go into the history, so a later run sees a well-formed turn.
                for (call, output) in calls.iter().zip(results.iter()) {
                    self.history.push(ChatMessage::Tool { call_id: call.id.clone(), name: call.name.clone(), content: output.content.clone(), is_error: output.is_error });
                }
                Err(h)
            }
            None => Ok((results, complete)),
        }
    }

    fn todo_write(&mut self, value: Value) -> crate::Result<ToolOutput> {
        match tool::parse_input::<tool::TodoWriteInput>(tool::TODO_WRITE, value) {
            Err(e) => Ok(e),
            Ok(input) => {
                self.todos = input.todos.into_iter().map(|t| Todo { id: t.id, content: t.content, status: t.status }).collect();
                self.run_wrote_todos = true;
                self.emit(EngineEvent::TodosUpdated { todos: self.todos.clone() })?;
                let open = self.todos.iter().filter(|t| matches!(t.status, TodoStatus::Pending | TodoStatus::InProgress)).count();
                Ok(ToolOutput::ok(format!("Todo list saved: {} items, {open} open.", self.todos.len())))
            }
        }
    }

    async fn wait_for(&self, rx: tokio::sync::oneshot::Receiver<Answer>) -> Result<Answer, Halt> {
        tokio::select! {
            a = rx => a.map_err(|_| Halt::Cancelled),
            _ = self.cancel.cancelled() => Err(Halt::Cancelled),
        }
    }

    async fn ask_user(&mut self, call: &ToolCall, value: Value) -> Result<ToolOutput, Halt> {
        let input = match tool::parse_input::<tool::AskUserInput>(tool::ASK_USER, value) {
            Ok(i) => i,
            Err(e) => return Ok(e),
        };
        let request = RequestId::new();
        let rx = self.engine.register_waiter(&request);
        self.emit_all(vec![
            self.tool_event(call, ToolState::AwaitingPermission, None),
            EngineEvent::QuestionAsked { request_id: request.clone(), question: input.question.clone() },
            EngineEvent::Activity { phase: ActivityPhase::Waiting, detail: "a question for you".into() },
            Self::status(SessionStatus::AwaitingApproval),
        ])?;
        match self.wait_for(rx).await? {
            Answer::Question(Some(a)) => Ok(ToolOutput::ok(format!("The person answered: {a}"))),
            _ => Err(Halt::QuestionDeclined),
        }
    }

    async fn permit(&mut self, call: &ToolCall) -> Result<(), Halt> {
        match self.engine.config.permissions.gate(&self.toolbox, &call.name, &self.allowed) {
            Gate::Run => Ok(()),
            Gate::Refuse => Err(Halt::Denied),
            Gate::Ask => {
                let request = RequestId::new();
                let rx = self.engine.register_waiter(&request);
                let input = call.input.value().cloned().unwrap_or(Value::Null);
                self.emit_all(vec![
                    self.tool_event(call, ToolState::AwaitingPermission, None),
                    EngineEvent::PermissionRequested {
                        request_id: request.clone(),
                        tool: call.name.clone(),
                        input,
                        reason: format!("{} can change things outside Finishline's checkpoints or reach the network.", call.name),
                    },
                    EngineEvent::Activity { phase: ActivityPhase::Waiting, detail: format!("permission for {}", call.name) },
                    Self::status(SessionStatus::AwaitingApproval),
                ])?;
                match self.wait_for(rx).await? {
                    Answer::Permission(PermissionDecision::AllowOnce) => Ok(()),
                    Answer::Permission(PermissionDecision::AllowSession) => {
                        self.allowed.insert(call.name.clone());
                        Ok(())
                    }
                    _ => Err(Halt::Denied),
                }
            }
        }
    }

    fn snapshot_after_step(&mut self) -> crate::Result<()> {
        if let Some(cp) = &self.checkpoints {
            let snap = tokio::task::block_in_place(|| cp.snapshot("after step"))?;
            cp.mark("agent", &snap)?;
        }
        Ok(())
    }

    fn changes(&self) -> Vec<crate::checkpoint::FileChange> {
        let Some(cp) = &self.checkpoints else { return vec![] };
        match (cp.marked("base"), cp.marked("agent")) {
            (Some(b), Some(a)) => tokio::task::block_in_place(|| cp.changes(&b, &a)).unwrap_or_default(),
            _ => vec![],
        }
    }

    fn files_changed(&self) -> bool {
        let Some(cp) = &self.checkpoints else { return false };
        match (cp.marked("base"), cp.marked("agent")) {
            (Some(b), Some(a)) => tokio::task::block_in_place(|| cp.differs(&b, &a)).unwrap_or(false),
            _ => false,
        }
    }

    async fn verify(&mut self, commands: &[String]) -> Result<VerificationOutcome, Halt> {
        let mut outcome = VerificationOutcome::default();
        for command in commands {
            self.emit(EngineEvent::Activity { phase: ActivityPhase::Verifying, detail: command.clone() })?;
            let call = ToolCall { id: format!("verify_{}", uuid::Uuid::now_v7().simple()), name: "run_command".into(), input: ToolInput::Parsed { value: json!({"command": command}) }, signature: None };
            match self.permit(&call).await {
                Err(Halt::Denied) => {
                    self.emit(EngineEvent::Verification { command: command.clone(), exit_code: None, output_tail: String::new(), skipped: true })?;
                    self.verification_log.push(format!("`{command}`: skipped (declined)"));
                    continue;
                }
                Err(h) => return Err(h),
                Ok(()) => {}
            }
            let r = crate::tool::command::run_shell(command, self.workspace.root(), crate::tool::command::DEFAULT_TIMEOUT, &self.cancel, &self.engine.config.secret_env).await;
            if self.cancel.is_cancelled() {
                return Err(Halt::Cancelled);
            }
            let (code, output) = match r {
                Ok(r) => (r.exit_code, r.output),
                Err(e) => (None, format!("could not start: {e}")),
            };
            let tail: String = {
                let lines: Vec<&str> = output.lines().collect();
                lines[lines.len().saturating_sub(40)..].join("\n")
            };
            self.emit(EngineEvent::Verification { command: command.clone(), exit_code: code, output_tail: tail.clone(), skipped: false })?;
            self.verification_log.push(format!("`{command}`: exit {}\n{}", code.map(|c| c.to_string()).unwrap_or("none".into()), tail));
            if code != Some(0) && outcome.failure.is_none() {
                outcome.failure = Some(VerificationFailure { command: command.clone(), exit_code: code, output_tail: tail });
            }
        }
        Ok(outcome)
    }

    fn transcript_lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        for m in &self.history {
            match m {
                ChatMessage::User { content } => lines.push(format!("USER/REMINDER: {content}")),
                ChatMessage::Assistant { text, tool_calls } => {
                    if !text.is_empty() {
                        lines.push(format!("AGENT: {text}"));
                    }
                    for c in tool_calls {
                        lines.push(format!("AGENT CALLED {}({})", c.name, crate::provider::openai::arguments_text(&c.input)));
                    }
                }
                ChatMessage::Tool { name, content, is_error, .. } => lines.push(format!("TOOL {name} {}: {content}", if *is_error { "FAILED" } else { "returned" })),
            }
        }
        lines
    }

    async fn evaluate(&mut self, question: EvaluationQuestion) -> Result<EvaluationOutcome, Halt> {
        self.cycle += 1;
        let cycle = self.cycle;
        self.emit(EngineEvent::Activity { phase: ActivityPhase::Evaluating, detail: String::new() })?;
        let endpoint = self.engine.config.evaluator.clone().unwrap_or_else(|| self.engine.config.agent.clone());
        let feedback: Vec<String> = self
            .engine
            .store
            .events(&self.session, 0)?
            .into_iter()
            .filter_map(|e| match e.event {
                EngineEvent::MessageCreated { role: MessageRole::User, text: Some(t), .. } if t != self.task => Some(t),
                _ => None,
            })
            .collect();
        let files: Vec<String> = self
            .changes()
            .into_iter()
            .map(|c| format!("{} {}", match c.kind { ChangeKind::Created => "created", ChangeKind::Modified => "modified", ChangeKind::Deleted => "deleted" }, c.path))
            .collect();
        let input = EvaluatorInput {
            task: self.task.clone(),
            feedback,
            todos: self.todos.clone(),
            files_changed: files,
            verification: self.verification_log.clone(),
            transcript_digest: evaluator::digest(&self.transcript_lines()),
            question: Some(question),
        };
        let result = evaluator::evaluate(endpoint.provider.clone(), &endpoint.model, &input, self.engine.config.retry, &self.cancel).await;
        let Some(r) = result else { return Err(Halt::Cancelled) };
        if self.cancel.is_cancelled() {
            // A verdict that arrives after cancel belongs to nobody.
            return Err(Halt::Cancelled);
        }
        self.last_verdict = Some(r.outcome.verdict);
        self.emit(EngineEvent::Evaluation {
            cycle,
            verdict: r.outcome.verdict,
            summary: r.outcome.summary.clone(),
            remaining: r.outcome.remaining.clone(),
            stuck_reason: r.outcome.stuck_reason.clone(),
            model: endpoint.model.clone(),
            parse_ok: r.parse_ok,
            usage: r.usage,
        })?;
        Ok(r.outcome)
    }

    fn estimate_tokens(&self) -> u64 {
        let chars: usize = self
            .history
            .iter()
            .map(|m| match m {
                ChatMessage::User { content } => content.len(),
                ChatMessage::Assistant { text, tool_calls } => text.len() + tool_calls.iter().map(|c| crate::provider::openai::arguments_text(&c.input).len() + 20).sum::<usize>(),
                ChatMessage::Tool { content, .. } => content.len(),
            })
            .sum();
        (chars as u64 + 4000) / 4
    }

    async fn maybe_compact(&mut self) -> Result<(), Halt> {
        if self.estimate_tokens() * 10 > self.engine.config.context_window * 8 && self.history.len() > 4 {
            self.compact().await?;
        }
        Ok(())
    }

    /// Summarises older turns into one summary message; the last turns stay as they are.
    async fn compact(&mut self) -> Result<(), Halt> {
        self.emit(EngineEvent::Activity { phase: ActivityPhase::Compacting, detail: String::new() })?;
        self.compactions += 1;
        let keep_from = self.history.len().saturating_sub(4);
        // Never split a tool call from its result.
        let mut cut = keep_from;
        while cut > 0 && matches!(self.history.get(cut), Some(ChatMessage::Tool { .. })) {
            cut -= 1;
        }
        let older: Vec<String> = {
            let saved = std::mem::take(&mut self.history);
            let (old, rest) = saved.split_at(cut);
            self.history = old.to_vec();
            let lines = self.transcript_lines();
            self.history = rest.to_vec();
            lines
        };
        let request = CompletionRequest {
            model: self.engine.config.agent.model.clone(),
            system: "Summarize the conversation so far for the agent that will continue it: the task, what was done, files touched, decisions, and what remains. Be concise and concrete.".into(),
            messages: vec![ChatMessage::User { content: format!("Task: {}\n\n{}", self.task, evaluator::digest(&older)) }],
            tools: vec![],
            max_tokens: Some(800),
            structured: None,
            temperature: Some(0.0),
        };
        let mut stream = stream_with_retry(self.engine.config.agent.provider.clone(), request, self.engine.config.retry, Arc::new(|_| {}));
        let (mut summary, mut usage) = (String::new(), Usage::default());
        loop {
            let item = tokio::select! {
                i = stream.next() => i,
                _ = self.cancel.cancelled() => return Err(Halt::Cancelled),
            };
            match item {
                None => break,
                Some(Ok(CompletionEvent::TextDelta { text })) => summary.push_str(&text),
                Some(Ok(CompletionEvent::Usage { usage: u })) => usage = u,
                Some(Ok(_)) => {}
                Some(Err(_)) => break,
            }
        }
        if summary.trim().is_empty() {
            summary = evaluator::digest(&older);
        }
        self.engine.store.add_usage(&self.session, Some(&self.run), UsageSource::Compaction, usage.input_tokens, usage.output_tokens)?;
        self.emit(EngineEvent::MessageCreated { message_id: MessageId::new(), role: MessageRole::Summary, source: None, text: Some(summary.clone()) })?;
        let mut history = vec![ChatMessage::User { content: format!("<summary>\nThe earlier conversation, summarised:\n{summary}\n</summary>") }];
        history.append(&mut self.history);
        self.history = history;
        self.records.push(StepRecord { compaction: true, ..Default::default() });
        Ok(())
    }

    fn review(&mut self, claim: Claim, end_reason: EndReason, remaining: Vec<String>) -> crate::Result<()> {
        let review_id = RequestId::new();
        let files: Vec<Value> = self.changes().into_iter().map(|c| serde_json::to_value(c).unwrap_or_default()).collect();
        let verification: Vec<Value> = self.verification_log.iter().map(|v| json!(v)).collect();
        let auto = self.engine.config.auto_approve && end_reason == EndReason::VerifiedDone && matches!(claim, Claim::Success | Claim::None);
        let tokens = self.engine.store.session(&self.session).map(|s| s.tokens).unwrap_or_default();
        let cost_usd = self.cost();
        let mut events = vec![
            EngineEvent::ReviewRequested { review_id: review_id.clone(), claim, verdict: self.last_verdict, end_reason, remaining, files_changed: files, verification, tokens, cost_usd },
            EngineEvent::RunFinished { status: SessionStatus::AwaitingReview, claim, verdict: self.last_verdict, end_reason },
            Self::status(SessionStatus::AwaitingReview),
        ];
        if !auto {
            events.insert(1, EngineEvent::Activity { phase: ActivityPhase::Waiting, detail: "your review".into() });
        }
        self.emit_all(events)?;
        if auto {
            self.engine.store.resolve_request(&review_id, crate::store::decisions::RequestKind::Review, SessionStatus::AwaitingReview, Some(&self.run), vec![
                EngineEvent::ReviewResolved { review_id: review_id.clone(), decision: Decision::Approve, by: DecidedBy::Auto, feedback: None, reverted: false },
                Self::status(SessionStatus::Completed),
            ])?;
        }
        Ok(())
    }

    /// The session's cost so far, when every model it used has a price.
    fn cost(&self) -> Option<f64> {
        let cfg = &self.engine.config;
        let agent = cfg.prices.get(&cfg.agent.model)?;
        let evaluator_model = cfg.evaluator.as_ref().map(|e| e.model.as_str()).unwrap_or(&cfg.agent.model);
        let mut total = 0.0;
        for (source, input, output) in self.engine.store.usage_by_source(&self.session).ok()? {
            let p = match source {
                UsageSource::Evaluator => cfg.prices.get(evaluator_model)?,
                _ => agent,
            };
            total += (input as f64 * p.input_per_mtok + output as f64 * p.output_per_mtok) / 1_000_000.0;
        }
        Some(total)
    }

    fn finish(&mut self, status: SessionStatus, claim: Claim, end_reason: EndReason) -> crate::Result<()> {
        self.finish_with_message(status, claim, end_reason, None)
    }

    fn finish_with_message(&mut self, status: SessionStatus, claim: Claim, end_reason: EndReason, message: Option<String>) -> crate::Result<()> {
        self.emit_all(vec![
            EngineEvent::RunFinished { status, claim, verdict: self.last_verdict, end_reason },
            EngineEvent::StatusChanged { status, attempt: None, next_retry_at: None, message },
        ])
    }
}
