//! Tool dispatch: a step's calls run in order through the permission gate; `todo_write`,
//! `ask_user` and `complete_task` are the engine's own. Every call gets a result, even when the
//! run stops halfway. A permission or question waiting for the person survives a restart: the
//! answer resumes the run at the call it was about ([`Run::apply_answer`]).

use serde_json::{json, Value};

use super::permission::Gate;
use super::run::{Halt, Run};
use super::Answer;
use crate::domain::*;
use crate::event::EngineEvent;
use crate::judge::completion::ClaimEvidence;
use crate::judge::stuck::StepRecord;
use crate::provider::{ChatMessage, ToolCall, ToolInput};
use crate::store::decisions::RequestKind;
use crate::tool::{self, CompleteTaskInput, CompletionStatus, ToolContext, ToolOutput};

pub(super) const DENIED: &str = "The person denied this call.";
/// A call refused because it needs the person's permission and nobody can be asked (the CLI with
/// no terminal): not the person's denial.
pub(super) const UNASKED: &str = "Not run: it needs the person's permission, and there was nobody to ask (no terminal; `--allow` allows it).";
const DECLINED: &str = "The person declined to answer.";

/// A step's tool results, and the claim its `complete_task` call made (with that call's id).
pub(super) type Dispatched = (Vec<ToolOutput>, Option<(ClaimEvidence, String)>);

impl Run {
    pub(super) fn tool_event(&self, call: &ToolCall, state: ToolState, output: Option<String>) -> EngineEvent {
        let input = match &call.input {
            ToolInput::Parsed { value } => value.clone(),
            ToolInput::Invalid { raw, .. } => json!({"_invalid_json": raw}),
        };
        EngineEvent::ToolCall { call_id: call.id.clone(), message_id: None, tool: call.name.clone(), kind: None, input, state, output }
    }

    /// Runs a step's tool calls in order; `complete_task` is answered last, by the completion
    /// engine. Every call gets a result, even when the run stops halfway.
    pub(super) async fn run_tools(&mut self, calls: &[ToolCall], record: &mut StepRecord) -> Result<Dispatched, Halt> {
        self.checkpoint_ready().await?;
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
                (ToolInput::Invalid { raw, error }, _) => ToolOutput::error(format!(
                    "The arguments are not valid JSON ({error}): {}. Call {} again with valid JSON.",
                    crate::provider::openai::clip(raw),
                    call.name
                )),
                (ToolInput::Parsed { value }, tool::COMPLETE_TASK) => match parse_claim(value.clone()) {
                    Ok(claim) => {
                        complete = Some((claim, call.id.clone()));
                        results.push(ToolOutput::ok(""));
                        continue;
                    }
                    Err(e) => e,
                },
                (ToolInput::Parsed { value }, tool::TODO_WRITE) => self.todo_write(value.clone())?,
                (ToolInput::Parsed { value }, tool::SESSION_LOG) if self.plan_step.is_some() => self.session_log(value.clone())?,
                (ToolInput::Parsed { value }, tool::ASK_USER) => match self.ask_user(call, value.clone()).await {
                    Ok(o) => o,
                    Err(Halt::Cancelled) => {
                        self.emit(self.tool_event(call, ToolState::Error, Some("Cancelled.".into())))?;
                        return Err(Halt::Cancelled);
                    }
                    Err(h) => {
                        let o = ToolOutput::error(DECLINED);
                        self.emit(self.tool_event(call, ToolState::Error, Some(o.content.clone())))?;
                        results.push(o);
                        halt = Some(h);
                        continue;
                    }
                },
                (ToolInput::Parsed { value }, name) => match self.toolbox.get(name).cloned() {
                    None => ToolOutput::error(format!("There is no tool named `{name}`. Use one of the tools you were given.")),
                    Some(_) => {
                        let reason = format!("{name} can change things outside Finishline's checkpoints or reach the network.");
                        match self.permit_command(name, value.clone(), reason, Some(call)).await {
                            Err(Halt::Denied) => {
                                let unasked = self.engine.config.permissions.refused_unasked(&self.toolbox, name, &self.allowed);
                                let o = ToolOutput::error(if unasked { UNASKED } else { DENIED });
                                self.emit(self.tool_event(call, ToolState::Denied, Some(o.content.clone())))?;
                                results.push(o);
                                if !self.engine.config.permissions.continue_after_denial {
                                    halt = Some(Halt::Denied);
                                }
                                continue;
                            }
                            Err(Halt::Cancelled) => {
                                self.emit(self.tool_event(call, ToolState::Error, Some("Cancelled.".into())))?;
                                return Err(Halt::Cancelled);
                            }
                            Err(h) => return Err(h),
                            Ok(()) => self.call_tool(call, name, value.clone()).await?,
                        }
                    }
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
                    self.history.push(ChatMessage::Tool {
                        call_id: call.id.clone(),
                        name: call.name.clone(),
                        content: output.content.clone(),
                        is_error: output.is_error,
                    });
                }
                Err(h)
            }
            None => Ok((results, complete)),
        }
    }

    /// Runs an allowed tool. Cancel during it leaves the call marked as cancelled.
    async fn call_tool(&mut self, call: &ToolCall, name: &str, value: Value) -> Result<ToolOutput, Halt> {
        let Some(t) = self.toolbox.get(name).cloned() else {
            return Ok(ToolOutput::error(format!("There is no tool named `{name}`. Use one of the tools you were given.")));
        };
        self.emit_all(vec![self.tool_event(call, ToolState::Running, None), EngineEvent::Activity { phase: ActivityPhase::Tool, detail: name.to_string() }])?;
        let ctx = ToolContext {
            workspace: self.workspace.clone(),
            cancel: self.cancel.clone(),
            hidden_env: self.engine.config.secret_env.clone(),
            processes: Some(self.engine.config.processes.clone()),
        };
        let o = t.call(&ctx, value).await;
        if self.cancel.is_cancelled() {
            self.emit(self.tool_event(call, ToolState::Error, Some("Cancelled.".into())))?;
            return Err(Halt::Cancelled);
        }
        Ok(o)
    }

    fn todo_write(&mut self, value: Value) -> crate::Result<ToolOutput> {
        match tool::parse_input::<tool::TodoWriteInput>(tool::TODO_WRITE, value) {
            Err(e) => Ok(e),
            Ok(input) => {
                self.todos = input.todos.into_iter().map(|t| Todo { id: t.id, content: t.content, status: t.status }).collect();
                self.evidence.wrote_todos = true;
                self.emit(EngineEvent::TodosUpdated { todos: self.todos.clone() })?;
                let open = self.todos.iter().filter(|t| matches!(t.status, TodoStatus::Pending | TodoStatus::InProgress)).count();
                Ok(ToolOutput::ok(format!("Todo list saved: {} items, {open} open.", self.todos.len())))
            }
        }
    }

    /// Waits for the person, here or in another process (the window while this runs in a
    /// terminal, or another terminal): that one records the answer, which this run reads back.
    /// Cancel resolves the request as cancelled, so its buttons go dead and it is never recorded
    /// as a denial or a declined answer.
    async fn wait_for(&self, request: &RequestId, kind: RequestKind, rx: tokio::sync::oneshot::Receiver<Answer>) -> Result<Answer, Halt> {
        let from_elsewhere = async {
            loop {
                tokio::time::sleep(std::time::Duration::from_millis(400)).await;
                if let Some(answer) = recorded_answer(&self.engine.store, &self.session, request, kind) {
                    return answer;
                }
            }
        };
        let answer = tokio::select! {
            a = rx => a.ok(),
            a = from_elsewhere => {
                self.engine.forget_waiter(request);
                // Ended elsewhere: already recorded there, nothing to record here.
                return a.ok_or(Halt::Cancelled);
            }
            _ = self.cancel.cancelled() => None,
            _ = self.asker_gone.cancelled() => None,
        };
        match answer {
            Some(a) => Ok(a),
            None => {
                self.engine.forget_waiter(request);
                let _ = self.engine.store.resolve_request(
                    request,
                    kind,
                    SessionStatus::AwaitingApproval,
                    Some(&self.run),
                    vec![EngineEvent::RequestCancelled { request_id: request.clone() }],
                );
                Err(Halt::Cancelled)
            }
        }
    }

    async fn ask_user(&mut self, call: &ToolCall, value: Value) -> Result<ToolOutput, Halt> {
        let input = match tool::parse_input::<tool::AskUserInput>(tool::ASK_USER, value) {
            Ok(i) => i,
            Err(e) => return Ok(e),
        };
        let request = RequestId::new();
        let rx = self.engine.register_waiter(&request);
        self.emit_saving(vec![
            self.tool_event(call, ToolState::AwaitingPermission, None),
            EngineEvent::QuestionAsked { request_id: request.clone(), question: input.question.clone(), call_id: Some(call.id.clone()) },
            EngineEvent::Activity { phase: ActivityPhase::Waiting, detail: "your answer to its question".into() },
            Self::status(SessionStatus::AwaitingApproval),
        ])?;
        match self.wait_for(&request, RequestKind::Question, rx).await? {
            Answer::Question(Some(a)) => Ok(answered(&a)),
            _ => Err(Halt::QuestionDeclined),
        }
    }

    /// The permission gate for a tool (or a verification command, with no `call`).
    pub(super) async fn permit_command(&mut self, tool: &str, input: Value, reason: String, call: Option<&ToolCall>) -> Result<(), Halt> {
        let policy = &self.engine.config.permissions;
        let gate = match input.get("command").and_then(Value::as_str).filter(|_| call.is_none()) {
            Some(command) => policy.gate_command(&self.toolbox, tool, command, &self.allowed),
            None => policy.gate(&self.toolbox, tool, &self.allowed),
        };
        self.permit_gated(gate, tool, input, reason, call).await
    }

    /// The gate's decision carried out: run, refuse, or ask the person and wait.
    pub(super) async fn permit_gated(&mut self, gate: Gate, tool: &str, input: Value, reason: String, call: Option<&ToolCall>) -> Result<(), Halt> {
        // A prompt about a command, not a call of the agent's: allowed for the session, it is
        // that command that is (see [`super::permission::command_grant`]).
        let command_grant = call.is_none().then(|| input.get("command").and_then(Value::as_str).map(super::permission::command_grant)).flatten();
        match gate {
            Gate::Run => Ok(()),
            Gate::Refuse => Err(Halt::Denied),
            Gate::Ask => {
                let request = RequestId::new();
                let rx = self.engine.register_waiter(&request);
                let mut events = Vec::new();
                if let Some(c) = call {
                    events.push(self.tool_event(c, ToolState::AwaitingPermission, None));
                }
                events.extend([
                    EngineEvent::PermissionRequested {
                        request_id: request.clone(),
                        tool: tool.to_string(),
                        input,
                        reason,
                        call_id: call.map(|c| c.id.clone()),
                    },
                    EngineEvent::Activity { phase: ActivityPhase::Waiting, detail: format!("permission for {tool}") },
                    Self::status(SessionStatus::AwaitingApproval),
                ]);
                self.emit_saving(events)?;
                match self.wait_for(&request, RequestKind::Permission, rx).await? {
                    Answer::Permission(PermissionDecision::AllowOnce) => Ok(()),
                    Answer::Permission(PermissionDecision::AllowSession) => {
                        match command_grant {
                            Some(g) => {
                                self.allowed.insert(g);
                            }
                            None => super::permission::grant(&mut self.allowed, tool),
                        }
                        Ok(())
                    }
                    _ => Err(Halt::Denied),
                }
            }
        }
    }

    /// Carries out the person's answer to a request whose run did not survive a restart: the call
    /// it was about runs (or is denied, or gets the answer), and its result replaces the "outcome
    /// unknown" the rebuilt conversation holds for it.
    pub(super) async fn apply_answer(&mut self, request: &RequestId, answer: Answer) -> Result<(), Halt> {
        self.open_window(None).await?;
        let events = self.engine.store.events(&self.session, 0)?;
        let Some((call_id, name, input)) = super::evidence::call_of_request(&events, request) else {
            return Ok(()); // a verification command: the run goes on and checks again
        };
        let call = ToolCall { id: call_id.clone(), name: name.clone(), input: ToolInput::Parsed { value: input.clone() }, signature: None };
        let (out, halt) = match answer {
            Answer::Permission(PermissionDecision::Deny) => {
                let stop = (!self.engine.config.permissions.continue_after_denial).then_some(Halt::Denied);
                (ToolOutput::error(DENIED), stop)
            }
            Answer::Permission(_) => match self.call_tool(&call, &name, input).await {
                Ok(o) => (o, None),
                Err(h) => return Err(h),
            },
            Answer::Question(Some(a)) => (answered(&a), None),
            Answer::Question(None) => (ToolOutput::error(DECLINED), Some(Halt::QuestionDeclined)),
        };
        let state = match (&halt, out.is_error) {
            (Some(Halt::Denied), _) => ToolState::Denied,
            (_, true) if out.content == DENIED => ToolState::Denied,
            (_, true) => ToolState::Error,
            _ => ToolState::Done,
        };
        self.emit(self.tool_event(&call, state, Some(out.content.clone())))?;
        for m in self.history.iter_mut() {
            if let ChatMessage::Tool { call_id: id, content, is_error, .. } = m {
                if *id == call_id {
                    *content = out.content.clone();
                    *is_error = out.is_error;
                }
            }
        }
        self.evidence.used_tools = true;
        self.evidence.prev_step_called_tools = true;
        match halt {
            Some(h) => Err(h),
            None => Ok(()),
        }
    }
}

/// The decision recorded for `request`, once there is one: `Some(None)` when it was cancelled.
/// A store that cannot be read now is asked again later.
fn recorded_answer(store: &crate::store::Store, session: &SessionId, request: &RequestId, kind: RequestKind) -> Option<Option<Answer>> {
    let decision = store.request_state(request).ok()??.2?;
    if decision == "cancelled" {
        return Some(None);
    }
    Some(Some(match kind {
        RequestKind::Permission => Answer::Permission(serde_json::from_value(Value::String(decision)).unwrap_or(PermissionDecision::Deny)),
        _ => Answer::Question(store.events(session, 0).ok()?.into_iter().find_map(|e| match e.event {
            EngineEvent::QuestionAnswered { request_id, answer, .. } if request_id == *request => Some(answer),
            _ => None,
        })?),
    }))
}

fn answered(answer: &str) -> ToolOutput {
    ToolOutput::ok(format!("The person answered: {answer}"))
}

/// Reads a `complete_task` call. `partial` and `blocked` must say what remains: without it the
/// call goes back to the model as a tool error asking for it.
pub(super) fn parse_claim(value: Value) -> Result<ClaimEvidence, ToolOutput> {
    let input = tool::parse_input::<CompleteTaskInput>(tool::COMPLETE_TASK, value)?;
    let claim = match input.status {
        CompletionStatus::Success => Claim::Success,
        CompletionStatus::Partial => Claim::Partial,
        CompletionStatus::Blocked => Claim::Blocked,
    };
    let remaining = input.remaining_work.map(|r| r.trim().to_string()).filter(|r| !r.is_empty());
    if matches!(claim, Claim::Partial | Claim::Blocked) && remaining.is_none() {
        return Err(ToolOutput::error(format!(
            "complete_task with status {} needs remaining_work: say what is left and why, so the person can decide. Call complete_task again with remaining_work.",
            claim.as_str()
        )));
    }
    let words = |s: String| Some(s.trim().to_string()).filter(|s| !s.is_empty());
    Ok(ClaimEvidence {
        claim,
        remaining_work: remaining,
        verify_command: input.verify_command,
        summary: words(input.summary),
        original_request_summary: words(input.original_request_summary),
    })
}
