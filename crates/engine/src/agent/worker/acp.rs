//! An external ACP agent as a worker: each turn is one `session/prompt`. The agent runs its own
//! tools; Finishline shows what it reports (text, thinking, tool cards, its plan as the todo
//! list), puts its permission requests through the same gate as the built-in agent's, and hands
//! the turn's end to the completion engine, which does not know who ran it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_client_protocol::v1::schema::PermissionOptionKind;
use async_trait::async_trait;
use serde_json::{json, Value};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{StepOutput, Worker};
use crate::agent::run::{Halt, Run};
use crate::batch::DeltaBatcher;
use crate::domain::*;
use crate::error::ErrorCode;
use crate::event::EngineEvent;
use crate::external::claims::{self, ClaimCall, ClaimsServer};
use crate::external::connection::{self, AgentConnection, AgentFault, AgentMessage, Launch, OfferedServer, PermissionAsk, TurnResult};
use crate::external::stray_lines::StrayLine;
use crate::external::update::{step_end, todos_from_tool, ToolReport, TurnItem};
use crate::external::ExternalAgent;
use crate::judge::completion::StepEnd;
use crate::provider::{ChatMessage, ToolCall, ToolInput, Usage};

/// How long an agent may take to start and open a session (an `npx` wrapper's first start
/// downloads nothing here, but a cold Node start with a large agent takes seconds).
const START_TIMEOUT: Duration = Duration::from_secs(120);
/// How long an agent's start goes unremarked.
const SLOW_START: Duration = Duration::from_secs(2);
/// After a cancel or a step timeout, how long the agent has to end its turn before its process
/// group is ended (well inside the 5 s in which a cancelled agent must be gone).
const CANCEL_GRACE: Duration = Duration::from_secs(3);
/// The most of the earlier conversation a new agent session is primed with.
const DIGEST_CHARS: usize = 8000;

/// A call's name until the agent gives it one.
const UNNAMED: &str = "tool";

/// The external agent of a session, and its live connection once started.
pub(in crate::agent) struct AcpAgent {
    pub agent: ExternalAgent,
    conn: Option<(Arc<dyn AgentConnection>, mpsc::UnboundedReceiver<AgentMessage>)>,
    /// Finishline's MCP server with `complete_task`, offered to the agent's session.
    claims: Option<(ClaimsServer, mpsc::UnboundedReceiver<ClaimCall>)>,
    /// How much of the conversation the agent has seen; what follows is the next prompt.
    sent: usize,
    /// The agent's own session from an earlier run of this session, to reopen.
    reopen: Option<String>,
}

impl AcpAgent {
    /// `reopen`: the agent's own session from an earlier run of this session.
    pub fn new(agent: ExternalAgent, reopen: Option<String>) -> Self {
        AcpAgent { agent, conn: None, claims: None, sent: 0, reopen }
    }
}

#[async_trait]
impl Worker for AcpAgent {
    async fn turn(&mut self, run: &mut Run) -> Result<StepOutput, Halt> {
        // Everything the agent does in its turn (its process starting included) is its own.
        run.open_window(None).await?;
        run.external_turn(self).await
    }

    fn can_be_asked_to_claim(&self) -> bool {
        false
    }

    /// Finishline's own tool names mean nothing to an external agent.
    fn todo_gate(&self, remaining: &[String]) -> Option<String> {
        Some(crate::judge::prompt::todo_gate_external(remaining))
    }

    fn keeps_its_conversation(&self) -> bool {
        true
    }
}

/// Where the messages the agent has not seen start: the trailing run of the person's and
/// Finishline's messages.
fn first_unseen(history: &[ChatMessage]) -> usize {
    history.iter().rposition(|m| !matches!(m, ChatMessage::User { .. })).map(|i| i + 1).unwrap_or(0)
}

/// A `complete_task` call made through Finishline's MCP server during the turn: answered at once,
/// and the claim kept for when the turn ends (an invalid call gets its error and no claim).
fn answer_claim(ClaimCall { input, reply }: ClaimCall) -> Option<crate::judge::completion::ClaimEvidence> {
    match crate::agent::dispatch::parse_claim(input) {
        Ok(c) => {
            let _ = reply.send(("Noted. Finishline checks the work when your turn ends: if you are done, end your turn now.".into(), false));
            Some(c)
        }
        Err(out) => {
            let _ = reply.send((out.content, true));
            None
        }
    }
}

/// The turn's tokens as the agent reported them, or estimated from what it wrote and the
/// conversation when it did not.
fn turn_usage(result: Option<&TurnResult>, written_chars: usize, history: &[ChatMessage]) -> Usage {
    Usage {
        input_tokens: result.and_then(|r| r.input_tokens).unwrap_or_else(|| super::estimate_tokens(history)),
        output_tokens: result.and_then(|r| r.output_tokens).unwrap_or((written_chars as u64).div_ceil(4)),
        estimated: result.map(|r| r.output_tokens.is_none()).unwrap_or(true),
        ..Default::default()
    }
}

/// A request that arrived after the turn ended is refused.
fn refuse_late(m: AgentMessage) {
    match m {
        AgentMessage::Permission(ask) => {
            let _ = ask.reply.send(None);
        }
        AgentMessage::Terminal(ask) => {
            let _ = ask.reply.send(false);
        }
        AgentMessage::Update(_) => {}
    }
}

/// Whether `item` reports a call not seen before in this turn.
fn starts_call(item: &TurnItem, tools: &[AgentTool]) -> bool {
    matches!(item, TurnItem::Tool(r) if !tools.iter().any(|t| t.ext_id == r.id))
}

/// One tool call the agent reported, as it stands.
struct AgentTool {
    ext_id: String,
    id: String,
    name: String,
    /// The agent's kind for it (`edit`), the name its permission is also known by.
    kind: Option<String>,
    input: Value,
    state: ToolState,
    output: Option<String>,
    /// When its last event was emitted, and whether a report came since that is not.
    sent: Option<Instant>,
    unsent: bool,
}

/// How often a running call's streamed output is emitted (and stored): each of the agent's
/// reports carries all of it so far, and it may send one every few milliseconds.
const PROGRESS_EVERY: Duration = Duration::from_millis(250);

/// When the next held report of a running call is due.
fn progress_due(tools: &[AgentTool]) -> Option<tokio::time::Instant> {
    tools.iter().filter(|t| t.unsent).filter_map(|t| t.sent).min().map(|at| tokio::time::Instant::from_std(at + PROGRESS_EVERY))
}

impl AgentTool {
    fn event(&self) -> EngineEvent {
        EngineEvent::ToolCall {
            call_id: self.id.clone(),
            message_id: None,
            tool: self.name.clone(),
            kind: self.kind.clone(),
            input: self.input.clone(),
            state: self.state,
            output: self.output.clone(),
        }
    }
    fn call(&self) -> ToolCall {
        ToolCall { id: self.id.clone(), name: self.name.clone(), input: ToolInput::Parsed { value: self.input.clone() }, signature: None }
    }
}

/// What the agent gets in its next turn: the person's and Finishline's messages since its last
/// turn. A new agent session (a resumed session, or the agent restarted) first gets a digest of
/// what happened, since it remembers nothing.
fn next_prompt(history: &[ChatMessage], sent: usize, task: &str) -> String {
    // The messages after the agent's last turn: the trailing run of the person's and
    // Finishline's messages.
    let unsent = &history[sent.min(history.len())..];
    let first_new = first_unseen(unsent);
    let new: Vec<&str> = unsent[first_new..]
        .iter()
        .filter_map(|m| match m {
            ChatMessage::User { content } => Some(content.as_str()),
            _ => None,
        })
        .collect();
    if sent > 0 || history[..history.len().saturating_sub(new.len())].iter().all(|m| matches!(m, ChatMessage::User { .. })) {
        return new.join("\n\n");
    }
    let mut digest = String::new();
    for m in history.iter().take(history.len().saturating_sub(new.len())) {
        let line = match m {
            ChatMessage::User { content } => format!("- Message: {}", clip(content, 600)),
            ChatMessage::Assistant { text, tool_calls } => {
                let calls: Vec<String> =
                    tool_calls.iter().map(|c| format!("{}({})", c.name, clip(&crate::provider::openai::arguments_text(&c.input), 200))).collect();
                match (text.trim().is_empty(), calls.is_empty()) {
                    (false, true) => format!("- You said: {}", clip(text, 600)),
                    (true, false) => format!("- You ran: {}", calls.join(", ")),
                    (false, false) => format!("- You said: {} and ran: {}", clip(text, 400), calls.join(", ")),
                    (true, true) => continue,
                }
            }
            ChatMessage::Tool { name, content, is_error, .. } => format!("- {name} {}: {}", if *is_error { "failed" } else { "returned" }, clip(content, 300)),
        };
        digest.push_str(&line);
        digest.push('\n');
    }
    if digest.len() > DIGEST_CHARS {
        let cut = (digest.len() - DIGEST_CHARS..digest.len()).find(|i| digest.is_char_boundary(*i)).unwrap_or(0);
        digest = format!("(earlier steps left out)\n{}", &digest[cut..]);
    }
    format!(
        "<system-reminder source=\"resume\">This task was started earlier; you are continuing it in a new session. The task:\n{task}\n\nWhat happened so far, oldest first:\n{digest}Check the workspace for what is already done before you change anything.</system-reminder>\n\n{}",
        new.join("\n\n")
    )
}

/// What the agent said in its turn. Chunks of another message than the last one named (another
/// `messageId`, or a named one after text that named none) start a paragraph of their own: a
/// notice (Claude Code's, which names no message) and the reply after it ran together
/// ("…billingDone: made new.txt.") in the window, in the history and in what the evaluator read.
#[derive(Default)]
struct Said {
    text: String,
    /// The last message a chunk named.
    named: Option<String>,
    /// An empty chunk began another message: the break goes before what comes next.
    break_due: bool,
}

impl Said {
    /// Adds a chunk; returns what it added (the chunk, after a paragraph break when it begins
    /// another message), to be streamed as it is stored.
    fn push(&mut self, chunk: &str, message: Option<String>) -> String {
        // A chunk naming no message is taken as more of the last one: an agent may name a
        // message on its first chunk only.
        let another = self.break_due || message.as_ref().is_some_and(|now| self.named.as_ref().map_or(!self.text.is_empty(), |was| was != now));
        if message.is_some() {
            self.named = message;
        }
        // Nothing said yet: a break now could be followed by nothing, so it waits for the text.
        self.break_due = another && chunk.is_empty();
        if chunk.is_empty() {
            return String::new();
        }
        let piece = if another && !self.text.ends_with("\n\n") {
            format!("{}{chunk}", if self.text.ends_with('\n') { "\n" } else { "\n\n" })
        } else {
            chunk.to_string()
        };
        self.text.push_str(&piece);
        piece
    }
}

fn clip(s: &str, max: usize) -> String {
    let s = s.trim();
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// The option that carries out the person's decision, by kind, never by position. Allowing
/// takes "allow once" only: "allow always" would let the agent skip Finishline's gate for the
/// rest of its session, so it is chosen only when `always` says the person agreed to exactly that.
fn option_for(options: &[(String, PermissionOptionKind)], allow: bool, always: bool) -> Option<String> {
    let kinds: &[PermissionOptionKind] = match (allow, always) {
        (true, false) => &[PermissionOptionKind::AllowOnce],
        (true, true) => &[PermissionOptionKind::AllowAlways],
        (false, _) => &[PermissionOptionKind::RejectOnce, PermissionOptionKind::RejectAlways],
    };
    kinds.iter().find_map(|k| options.iter().find(|(_, kind)| kind == k).map(|(id, _)| id.clone()))
}

/// The agent offers to be allowed only for good ("allow always"), never once.
fn only_always(options: &[(String, PermissionOptionKind)]) -> bool {
    let has = |k: PermissionOptionKind| options.iter().any(|(_, kind)| *kind == k);
    has(PermissionOptionKind::AllowAlways) && !has(PermissionOptionKind::AllowOnce)
}

/// A title an agent gives a call before it knows what the call is ("Preparing file…").
fn is_placeholder(title: &str) -> bool {
    let t = title.trim();
    t.ends_with('…') || t.ends_with("...")
}

/// Aborts a spawned task when dropped (a plain `JoinHandle` lets it run on).
struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl Run {
    /// Starts the agent's process and opens its session (reopening an earlier one where it
    /// can), offering Finishline's `complete_task` server.
    async fn start_agent(&mut self, ext: &mut AcpAgent) -> Result<(), Halt> {
        if ext.claims.is_none() {
            // Without it the agent still works; its claims then come from its words alone.
            ext.claims = claims::serve().await.ok();
        }
        let pipe = self.engine.config.claims_pipe.as_ref();
        let servers = ext
            .claims
            .as_ref()
            .map(|(s, _)| {
                vec![OfferedServer {
                    name: claims::SERVER_NAME.into(),
                    url: s.url.clone(),
                    stdio: s.socket.as_deref().zip(pipe).map(|(socket, pipe)| pipe.for_socket(socket)),
                }]
            })
            .unwrap_or_default();
        let hidden = self.engine.config.secret_env.clone();
        let cwd = self.workspace.root().to_path_buf();
        let launch = Launch {
            agent: &ext.agent,
            cwd: &cwd,
            hidden_env: &hidden,
            start_timeout: START_TIMEOUT,
            mcp_servers: servers,
            reopen: ext.reopen.clone(),
            files: Some(Arc::new(crate::external::client_fs::WorkspaceFiles::new(self.workspace.clone()))),
            terminals: true,
            processes: self.engine.config.processes.clone(),
            authenticate: None,
            secrets: self.engine.config.agent_secrets.clone(),
        };
        let connecting = connection::connect(launch);
        tokio::pin!(connecting);
        // A start that takes a moment is said once, with how long it may take: a first `npx`
        // download or a cold cache can take a minute, and silence reads as a hang.
        let slow = tokio::time::sleep(SLOW_START);
        tokio::pin!(slow);
        let mut said = false;
        let started = loop {
            tokio::select! {
                r = &mut connecting => break r,
                _ = &mut slow, if !said => {
                    said = true;
                    let detail = format!("{} to start (at most {} s)", ext.agent.label(), START_TIMEOUT.as_secs());
                    self.emit(EngineEvent::Activity { phase: ActivityPhase::Waiting, detail })?;
                }
                _ = self.cancel.cancelled() => return Err(Halt::Cancelled),
            }
        };
        match started {
            Ok(c) => {
                let info = c.0.info().clone();
                // A reopened session remembers everything before the new messages.
                ext.sent = if info.loaded { first_unseen(&self.history) } else { 0 };
                ext.reopen = Some(info.session.clone());
                ext.conn = Some(c);
                self.emit(EngineEvent::AgentConnected {
                    agent: ext.agent.name.clone(),
                    name: info.name,
                    version: info.version,
                    acp_session: info.session,
                    loaded: info.loaded,
                    claims: info.took_mcp,
                })?;
            }
            Err(fault) => {
                self.login_needed(&ext.agent, &fault)?;
                return Err(Halt::Failed { code: fault.code, message: fault.message });
            }
        }

        Ok(())
    }

    /// The turn joins the conversation: calls the agent left open are closed (as errors when
    /// `cancelled`), and the turn's text and tool calls are added to the history. Returns each
    /// call as an action, its output and whether it failed.
    fn record_turn(&mut self, text: &str, tools: &mut [AgentTool], cancelled: bool) -> Result<Vec<(String, String, bool)>, Halt> {
        // A call the agent left open at the end of its turn did not finish.
        for t in tools.iter_mut().filter(|t| matches!(t.state, ToolState::Pending | ToolState::Running | ToolState::AwaitingPermission)) {
            t.state = if cancelled { ToolState::Error } else { ToolState::Unknown };
            t.output.get_or_insert_with(|| "The agent's turn ended before this call finished.".into());
            self.emit(t.event())?;
        }
        // The agent's turn joins the conversation as the built-in agent's would, so the evaluator
        // and a later digest see it; the agent itself already knows it.
        self.history.push(ChatMessage::Assistant { text: text.to_string(), tool_calls: tools.iter().map(AgentTool::call).collect() });
        for t in tools.iter() {
            self.history.push(ChatMessage::Tool {
                call_id: t.id.clone(),
                name: t.name.clone(),
                content: t.output.clone().unwrap_or_default(),
                is_error: t.state != ToolState::Done,
            });
        }
        let ran = tools
            .iter()
            .map(|t| {
                (
                    format!("{}({})", t.name, crate::provider::openai::arguments_text(&ToolInput::Parsed { value: t.input.clone() })),
                    t.output.clone().unwrap_or_default(),
                    t.state != ToolState::Done,
                )
            })
            .collect();
        Ok(ran)
    }

    /// How the turn ended, from its answer and what stopped it; the connection is kept for the
    /// next turn when the agent ended its turn itself, and ended otherwise.
    fn turn_end(
        &mut self,
        ext: &mut AcpAgent,
        conn: Arc<dyn AgentConnection>,
        rx: mpsc::UnboundedReceiver<AgentMessage>,
        finished: Option<Result<TurnResult, AgentFault>>,
        halt: Option<Halt>,
        said: &str,
    ) -> Result<(StepEnd, Option<TurnResult>), Halt> {
        let finished = finished.map(|f| f.map_err(|fault| fault.explained_by(&ext.agent.label(), said)));
        Ok(match (finished, halt) {
            (_, Some(Halt::Cancelled)) => {
                // Cancelled: the agent's process group goes now, whether it ended its turn or
                // not (the next run starts it again, reopening its session where it can).
                conn.end();
                return Err(Halt::Cancelled);
            }
            (None, halt) => {
                // It did not end its turn within the grace after a step timeout or a refusal:
                // it is stopped, and the run ends for the reason it was stopped.
                conn.end();
                return Err(halt.unwrap_or(Halt::Cancelled));
            }
            (Some(Err(fault)), _) => {
                // The process is gone, broke the protocol or wants a login: the next turn
                // starts it again.
                self.login_needed(&ext.agent, &fault)?;
                (StepEnd::Failed { code: fault.code, message: fault.message }, None)
            }
            (Some(Ok(_)), Some(Halt::Failed { code, message })) => (StepEnd::Failed { code, message }, None),
            (Some(Ok(_)), Some(h)) => {
                ext.conn = Some((conn, rx));
                ext.sent = self.history.len();
                return Err(h);
            }
            // Its own "cancelled" crossed the person's cancel: the person's it is.
            (Some(Ok(r)), None) if r.stop == agent_client_protocol::v1::schema::StopReason::Cancelled && self.cancel.is_cancelled() => {
                conn.end();
                return Err(Halt::Cancelled);
            }
            (Some(Ok(r)), None) => {
                let end = step_end(r.stop, &conn.info().name);
                ext.conn = Some((conn, rx));
                ext.sent = self.history.len();
                (end, Some(r))
            }
        })
    }

    /// Puts what the agent asks (to run a tool, a command in the terminal) to the gate, and to
    /// the person where it asks: the halt when the answer stops its turn.
    async fn answer_agent(&mut self, ask: AgentMessage, conn: &Arc<dyn AgentConnection>, tools: &mut Vec<AgentTool>) -> Option<Halt> {
        // An agent that dies meanwhile takes its question with it: nobody is left to hear the
        // answer, and its turn's end says why.
        let gone = CancellationToken::new();
        self.asker_gone = gone.clone();
        let _watch = AbortOnDrop(tokio::spawn({
            let (conn, gone) = (conn.clone(), gone.clone());
            async move {
                conn.closed().await;
                gone.cancel();
            }
        }));
        let decided = match ask {
            AgentMessage::Terminal(ask) => self.external_terminal(ask).await,
            AgentMessage::Permission(ask) => self.external_permission(ask, tools).await,
            AgentMessage::Update(_) => Ok(()),
        };
        self.asker_gone = CancellationToken::new();
        decided.err().filter(|_| !gone.is_cancelled())
    }

    async fn external_turn(&mut self, ext: &mut AcpAgent) -> Result<StepOutput, Halt> {
        let step = self.evidence.counters.steps;
        let message_id = MessageId::new();
        let label = ext.agent.label();
        self.emit_saving(vec![
            EngineEvent::StepStarted { step, cycle: Some(CycleCount { used: self.evidence.counters.continuations_used, max: self.cfg().continuation_budget }) },
            EngineEvent::Activity { phase: ActivityPhase::Thinking, detail: format!("{label} is working") },
            EngineEvent::MessageCreated { message_id: message_id.clone(), role: MessageRole::Assistant, source: None, text: None },
        ])?;
        // The agent changes files as soon as it has the prompt: the workspace is recorded first.
        self.checkpoint_ready().await?;
        if ext.conn.is_none() {
            self.start_agent(ext).await?;
        }
        let prompt = next_prompt(&self.history, ext.sent, &self.task);
        let Some((conn, mut rx)) = ext.conn.take() else {
            return Err(Halt::Failed { code: ErrorCode::Internal, message: "the agent's connection is gone".into() });
        };
        let turn_conn = conn.clone();
        // A line from before this turn (a banner at its start) is no part of its answer.
        let _ = conn.take_stray_line(std::time::Duration::ZERO);
        // The turn's task holds the connection too: it is aborted whenever this step returns,
        // so no clone outlives a cancel and keeps the agent's process group alive.
        let mut turn = AbortOnDrop(tokio::spawn(async move { turn_conn.prompt(prompt).await }));

        let mut batcher = DeltaBatcher::default();
        let mut said = Said::default();
        let mut reasoning_chars = 0usize;
        let mut tools: Vec<AgentTool> = Vec::new();
        let idle = self.engine.config.step_limit;
        let mut last_heard = tokio::time::Instant::now();
        let mut quiet = Quiet::new(idle, &label);
        let mut halt: Option<Halt> = None;
        let mut grace_until = tokio::time::Instant::now();
        let mut rx_open = true;
        let mut claim = None;
        let mut claims_rx = ext.claims.as_mut().map(|(_, rx)| std::mem::replace(rx, mpsc::unbounded_channel().1));
        let finished: Option<Result<TurnResult, AgentFault>> = loop {
            let flush_at = batcher.deadline().map(tokio::time::Instant::from_std);
            let progress_at = progress_due(&tools);
            tokio::select! {
                biased;
                _ = self.cancel.cancelled(), if halt.is_none() => {
                    conn.cancel().await;
                    halt = Some(Halt::Cancelled);
                    grace_until = tokio::time::Instant::now() + CANCEL_GRACE;
                }
                _ = tokio::time::sleep_until(grace_until), if halt.is_some() => break None,
                _ = async { tokio::time::sleep_until(flush_at.unwrap()).await }, if flush_at.is_some() => {
                    if let Some(e) = batcher.take() { self.emit(e)?; }
                }
                _ = async { tokio::time::sleep_until(progress_at.unwrap()).await }, if progress_at.is_some() => self.send_progress(&mut tools, false)?,
                _ = tokio::time::sleep_until(last_heard + quiet.after), if halt.is_none() && quiet.may_say(&tools) => self.emit(quiet.say())?,
                _ = tokio::time::sleep_until(last_heard + idle), if halt.is_none() => {
                    // Taken before the cancel, which may make the agent end its line.
                    let stray = conn.take_stray_line(still_writing(idle));
                    conn.cancel().await;
                    halt = Some(Halt::Failed { code: ErrorCode::StepTimeout, message: silent_turn(&label, idle, stray) });
                    grace_until = tokio::time::Instant::now() + CANCEL_GRACE;
                }
                m = rx.recv(), if rx_open => {
                    last_heard = tokio::time::Instant::now();
                    if let Some(e) = quiet.heard(m.is_some()) { self.emit(e)?; }
                    match m {
                        None => rx_open = false,
                        // A call started while the turn is being stopped is none of its work:
                        // nothing more will be allowed to run.
                        Some(AgentMessage::Update(item)) if halt.is_some() && starts_call(&item, &tools) => {}
                        Some(AgentMessage::Update(item)) => self.apply_item(item, &message_id, &mut batcher, &mut said, &mut reasoning_chars, &mut tools)?,
                        // Once the turn is being stopped (cancelled, timed out, denied), an
                        // agent deaf to session/cancel may go on asking: nothing more is
                        // allowed and nobody is asked, and its asking does not put off the end.
                        Some(ask @ (AgentMessage::Terminal(_) | AgentMessage::Permission(_))) if halt.is_some() => self.refuse_stopping(ask, &mut tools)?,
                        // The agent waits for the person: what streamed so far is shown first,
                        // and a denial or cancel stops its turn.
                        Some(ask @ (AgentMessage::Terminal(_) | AgentMessage::Permission(_))) => {
                            if let Some(e) = batcher.take() { self.emit(e)?; }
                            self.send_progress(&mut tools, true)?;
                            if let Some(h) = self.answer_agent(ask, &conn, &mut tools).await {
                                conn.cancel().await;
                                halt = Some(h);
                                grace_until = tokio::time::Instant::now() + CANCEL_GRACE;
                            }
                            // The agent waited for the person, not the other way round: the
                            // step's idle time starts again from the answer.
                            last_heard = tokio::time::Instant::now();
                            self.emit(Self::status(SessionStatus::Busy))?;
                        }
                    }
                }
                c = async { claims_rx.as_mut().unwrap().recv().await }, if claims_rx.is_some() => {
                    last_heard = tokio::time::Instant::now();
                    if let Some(e) = quiet.heard(c.is_some()) { self.emit(e)?; }
                    match c {
                        None => claims_rx = None,
                        Some(call) => claim = answer_claim(call).or(claim),
                    }
                }
                r = &mut turn.0 => break Some(r.unwrap_or_else(|e| Err(AgentFault { code: ErrorCode::Internal, message: format!("the agent's turn panicked: {e}"), login: vec![], answered: None }))),
            }
        };
        // What the agent reported before its answer arrived is still on the channel.
        while let Ok(m) = rx.try_recv() {
            match m {
                AgentMessage::Update(item) if halt.is_some() && starts_call(&item, &tools) => {}
                AgentMessage::Update(item) => self.apply_item(item, &message_id, &mut batcher, &mut said, &mut reasoning_chars, &mut tools)?,
                // Asked after its turn ended: nobody is asked any more.
                other => refuse_late(other),
            }
        }
        batcher.take().map(|e| self.emit(e)).transpose()?;
        self.send_progress(&mut tools, true)?;
        if let (Some((_, slot)), Some(rx)) = (ext.claims.as_mut(), claims_rx) {
            *slot = rx;
        }
        let text = said.text;
        let ran = self.record_turn(&text, &mut tools, matches!(halt, Some(Halt::Cancelled)))?;

        // What the agent said it spent, if it ended its turn: kept for a turn stopped after all.
        let reported = finished.as_ref().and_then(|f| f.as_ref().ok()).cloned();
        let (end, result) = match self.turn_end(ext, conn, rx, finished, halt, &text) {
            Ok(ended) => ended,
            Err(h) => {
                // Stopped mid-turn (cancelled, timed out, refused): what it wrote was paid for.
                // History counts it (an estimate when the agent never said), not 0. The halt is
                // what the run ends with, whatever recording this meets.
                if reported.is_some() || !text.is_empty() || reasoning_chars > 0 || !tools.is_empty() {
                    let usage = turn_usage(reported.as_ref(), text.len() + reasoning_chars, &self.history);
                    let _ = self.emit(EngineEvent::StepFinished { step, stop_reason: None, usage });
                }
                return Err(h);
            }
        };
        let usage = turn_usage(result.as_ref(), text.len() + reasoning_chars, &self.history);
        let stop_reason = match &end {
            StepEnd::Stopped(r) => Some(*r),
            _ => None,
        };
        self.emit(EngineEvent::StepFinished { step, stop_reason, usage })?;
        Ok(StepOutput { text, calls: vec![], end, usage, in_history: true, repeating: None, ran, claim })
    }

    /// Refuses what the agent asks while its turn is being stopped; the call it asked about, if
    /// its card is shown, says it was refused rather than left unfinished.
    fn refuse_stopping(&mut self, ask: AgentMessage, tools: &mut [AgentTool]) -> crate::Result<()> {
        let call = match &ask {
            AgentMessage::Permission(a) => Some(a.call_id.clone()),
            _ => None,
        };
        refuse_late(ask);
        let open = |t: &&mut AgentTool| matches!(t.state, ToolState::Pending | ToolState::AwaitingPermission);
        if let Some(t) = call.and_then(|id| tools.iter_mut().find(|t| t.ext_id == id)).filter(open) {
            t.state = ToolState::Denied;
            t.output = Some("Refused: the turn was being stopped, so nothing more runs in it.".into());
            self.emit(t.event())?;
        }
        Ok(())
    }

    /// Emits the held reports of running calls: those due by now, or all of them.
    fn send_progress(&mut self, tools: &mut [AgentTool], all: bool) -> crate::Result<()> {
        for t in tools.iter_mut().filter(|t| t.unsent && (all || t.sent.is_none_or(|at| at.elapsed() >= PROGRESS_EVERY))) {
            (t.sent, t.unsent) = (Some(Instant::now()), false);
            self.emit(t.event())?;
        }
        Ok(())
    }

    fn apply_item(
        &mut self,
        item: TurnItem,
        message_id: &MessageId,
        batcher: &mut DeltaBatcher,
        said: &mut Said,
        reasoning_chars: &mut usize,
        tools: &mut Vec<AgentTool>,
    ) -> crate::Result<()> {
        match item {
            TurnItem::Text { text, message } => {
                let t = said.push(&text, message);
                if let Some(e) = batcher.push(message_id, false, &t, Instant::now()) {
                    self.emit(e)?;
                }
            }
            TurnItem::Thought(t) => {
                *reasoning_chars += t.len();
                if let Some(e) = batcher.push(message_id, true, &t, Instant::now()) {
                    self.emit(e)?;
                }
            }
            TurnItem::Tool(report) => {
                if let Some(e) = batcher.take() {
                    self.emit(e)?;
                }
                let was = tools.iter().find(|t| t.ext_id == report.id).map(|t| t.state);
                let id = self.agent_tool(report, tools).id.clone();
                let Some(tool) = tools.iter_mut().find(|t| t.id == id) else { return Ok(()) };
                // More output of a call still running, soon after the last: held, the newest
                // sent when due (or when the turn moves on).
                if was == Some(ToolState::Running) && tool.state == ToolState::Running && tool.sent.is_some_and(|at| at.elapsed() < PROGRESS_EVERY) {
                    tool.unsent = true;
                    return Ok(());
                }
                (tool.sent, tool.unsent) = (Some(Instant::now()), false);
                let tool = &*tool;
                let running = tool.state == ToolState::Running;
                let todos = if tool.state == ToolState::Done { todos_from_tool(&tool.name, &tool.input) } else { None };
                let mut events = vec![tool.event()];
                if running {
                    events.push(EngineEvent::Activity { phase: ActivityPhase::Tool, detail: tool.name.clone() });
                }
                self.emit_all(events)?;
                if let Some(todos) = todos {
                    self.apply_item(TurnItem::Todos(todos), message_id, batcher, said, reasoning_chars, tools)?;
                }
            }
            TurnItem::Todos(todos) => {
                self.todos = todos;
                self.evidence.wrote_todos = true;
                self.emit(EngineEvent::TodosUpdated { todos: self.todos.clone() })?;
            }
            TurnItem::Other => {}
        }
        Ok(())
    }

    /// The call a report is about, with the report applied; a new call gets an id of its own
    /// in this session (agents number their calls per session, and sessions can restart).
    fn agent_tool<'a>(&mut self, report: ToolReport, tools: &'a mut Vec<AgentTool>) -> &'a AgentTool {
        let at = match tools.iter().position(|t| t.ext_id == report.id) {
            Some(i) => i,
            None => {
                let mut id = if report.id.is_empty() { "acp_call".to_string() } else { report.id.clone() };
                if self.call_ids.contains(&id) {
                    id = format!("{id}_{}", uuid::Uuid::now_v7().simple());
                }
                self.call_ids.insert(id.clone());
                tools.push(AgentTool {
                    ext_id: report.id.clone(),
                    id,
                    name: UNNAMED.into(),
                    kind: None,
                    input: json!({}),
                    state: ToolState::Pending,
                    output: None,
                    sent: None,
                    unsent: false,
                });
                tools.len() - 1
            }
        };
        let t = &mut tools[at];
        // The first title names the tool (`write`); agents retitle a call as it runs (OpenCode
        // puts the file's path there), which would make one card look like two tools. A title
        // that says the call is still being prepared (Claude Code's "Preparing file…") is no name.
        if let Some(title) = report.title.filter(|s| !s.trim().is_empty()) {
            if t.name == UNNAMED || is_placeholder(&t.name) {
                t.name = title;
            }
        }
        if t.kind.is_none() {
            t.kind = report.kind;
        }
        if let Some(input) = report.input {
            t.input = input;
        }
        if let Some(state) = report.state {
            t.state = state;
        }
        if report.output.is_some() {
            t.output = report.output;
        }
        &tools[at]
    }

    /// An agent that needs a login says so with the ways it offers, before the run fails with
    /// what to do: the window turns them into "Log in to <agent>".
    fn login_needed(&mut self, agent: &ExternalAgent, fault: &AgentFault) -> crate::Result<()> {
        if fault.code != ErrorCode::ExternalAgentAuth {
            return Ok(());
        }
        self.emit(EngineEvent::AgentLoginNeeded {
            agent: agent.name.clone(),
            label: agent.label(),
            message: fault.message.clone(),
            methods: fault.login.clone(),
        })
    }

    /// A denial the agent was told of stops the run, unless the settings say to go on.
    fn after_denial(&self) -> Result<(), Halt> {
        if self.engine.config.permissions.continue_after_denial {
            Ok(())
        } else {
            Err(Halt::Denied)
        }
    }

    /// The agent wants to run a command in the client's terminal: the gate decides as for the
    /// built-in `run_command` (the same setting, the same allow-for-this-session).
    async fn external_terminal(&mut self, ask: crate::external::connection::TerminalAsk) -> Result<(), Halt> {
        let gate = self.engine.config.permissions.gate_command(&self.toolbox, crate::tool::RUN_COMMAND, &ask.command, &self.allowed);
        let reason = "The external agent runs this command in Finishline's terminal, in the workspace, without secrets in its environment.".to_string();
        match self.permit_gated(gate, crate::tool::RUN_COMMAND, json!({ "command": ask.command }), reason, None).await {
            Ok(()) => {
                let _ = ask.reply.send(true);
                Ok(())
            }
            Err(Halt::Denied) => {
                let _ = ask.reply.send(false);
                self.after_denial()
            }
            Err(h) => {
                let _ = ask.reply.send(false);
                Err(h)
            }
        }
    }

    /// The agent asks before a tool: Finishline's gate decides, asking the person when the
    /// settings say to. A denial stops the run unless the settings say to go on.
    async fn external_permission(&mut self, ask: PermissionAsk, tools: &mut Vec<AgentTool>) -> Result<(), Halt> {
        let report = ToolReport {
            id: ask.call_id.clone(),
            title: Some(ask.title.clone()),
            kind: ask.kind.clone(),
            input: ask.input.clone().filter(|v| !v.is_null()),
            state: None,
            output: None,
        };
        let (call, name, kind, input) = {
            let t = self.agent_tool(report, tools);
            (t.call(), t.name.clone(), t.kind.clone(), t.input.clone())
        };
        let gate = self.engine.config.permissions.gate_external(&name, kind.as_deref(), &self.allowed);
        let always = only_always(&ask.options);
        let reason = if always {
            // Allowing is then for good: the person is told so, and Finishline's own record
            // says the same (the agent will not ask about this tool again).
            format!("The external agent offers only \"Always allow\" for {name}: allowing it lets the agent run {name} without asking again for the rest of this session. Finishline's checkpoints record file changes, but not what a command does outside the workspace.")
        } else {
            "The external agent asks before running this; Finishline's checkpoints record file changes, but not what a command does outside the workspace."
                .to_string()
        };
        let decided = self.permit_gated(gate, &name, input, reason, Some(&call)).await;
        if always && decided.is_ok() {
            crate::agent::permission::grant(&mut self.allowed, &name);
        }
        // Allowed for the session by its title, which some agents make of each call's file
        // ("Writing to a.txt"): the agent's kind for it (`edit`) is allowed too, or the next
        // file would ask again.
        if let Some(kind) = kind.as_ref().filter(|_| decided.is_ok() && self.allowed.contains(&name)) {
            crate::agent::permission::grant(&mut self.allowed, kind);
        }
        let set_state = |tools: &mut Vec<AgentTool>, state: ToolState, output: Option<String>| {
            if let Some(t) = tools.iter_mut().find(|t| t.id == call.id) {
                t.state = state;
                if output.is_some() {
                    t.output = output;
                }
                Some(t.event())
            } else {
                None
            }
        };
        match decided {
            Ok(()) => {
                let _ = ask.reply.send(option_for(&ask.options, true, always));
                if let Some(e) = set_state(tools, ToolState::Running, None) {
                    self.emit(e)?;
                }
                Ok(())
            }
            Err(Halt::Denied) => {
                let _ = ask.reply.send(option_for(&ask.options, false, false));
                let unasked = self.engine.config.permissions.external_refused_unasked(&name, kind.as_deref(), &self.allowed);
                let said = if unasked { crate::agent::dispatch::UNASKED } else { crate::agent::dispatch::DENIED };
                if let Some(e) = set_state(tools, ToolState::Denied, Some(said.into())) {
                    self.emit(e)?;
                }
                self.after_denial()
            }
            Err(h) => {
                let _ = ask.reply.send(None);
                Err(h)
            }
        }
    }
}

/// A line without its end that grew this recently, when a turn silent for `idle` is stopped, is
/// still being written: a quarter of the limit, at most two seconds.
fn still_writing(idle: std::time::Duration) -> std::time::Duration {
    (idle / 4).min(std::time::Duration::from_secs(2))
}

/// A turn's quiet spell, said once it has gone on a while (a quarter of the step limit, at most
/// 45 s): Claude Code retrying a refused key says nothing for three minutes, and the window said
/// only that it was working.
struct Quiet {
    after: Duration,
    said: bool,
    label: String,
}

impl Quiet {
    fn new(idle: Duration, label: &str) -> Self {
        Quiet { after: (idle / 4).min(Duration::from_secs(45)), said: false, label: label.to_string() }
    }

    /// Not said twice, nor while one of its tools runs (a test suite may take minutes, and its
    /// card says it is running).
    fn may_say(&self, tools: &[AgentTool]) -> bool {
        !self.said && !tools.iter().any(|t| matches!(t.state, ToolState::Pending | ToolState::Running))
    }

    /// Waiting, as the window says it ("Waiting for Claude Code, which …"): its strip says a
    /// thinking step waits for the model, whatever the detail.
    fn say(&mut self) -> EngineEvent {
        self.said = true;
        let detail = format!(
            "{}, which has said nothing for {} s: it may be waiting on its model server (a slow answer, or retrying one that fails); Stop ends the turn",
            self.label,
            self.after.as_secs()
        );
        EngineEvent::Activity { phase: ActivityPhase::Waiting, detail }
    }

    /// Something came from the agent: once it `spoke` (a channel that closed, the agent gone, is
    /// no word from it) after a quiet spell was said, the window says it is working again.
    fn heard(&mut self, spoke: bool) -> Option<EngineEvent> {
        (spoke && std::mem::take(&mut self.said))
            .then(|| EngineEvent::Activity { phase: ActivityPhase::Thinking, detail: format!("{} is working", self.label) })
    }
}

/// Why a turn that reported nothing for `idle` was stopped. Its answer may be a line no reader
/// could take (`stray`): then the agent is at fault, and the line is quoted.
fn silent_turn(label: &str, idle: std::time::Duration, stray: Option<StrayLine>) -> String {
    let stray = match stray {
        Some(StrayLine::Skipped(line)) => {
            format!(" It also wrote a line that is no ACP message, which was skipped: “{line}”; if that was its answer, the agent is at fault.")
        }
        Some(StrayLine::Unfinished(line)) => {
            format!(" It also started a line it never ended, so no ACP message could be read from it: “{line}”; if that was its answer, the agent is at fault.")
        }
        Some(StrayLine::Writing { start, bytes }) => {
            format!(" It was still writing a line when stopped ({bytes} bytes so far, no line end yet): “{start}”; its answer may have been on the way.")
        }
        None => String::new(),
    };
    format!(
        "{label} reported nothing for {} s and its turn was stopped; what it did is kept. A slow model may need a longer step limit (Settings → Limits).{stray}",
        idle.as_secs()
    )
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_message_in_a_turn_starts_a_paragraph_so_a_notice_and_the_reply_after_it_do_not_run_together() {
        let mut said = Said::default();
        for (chunk, message) in
            [("Using the gateway for auto-mode billing", None), ("Done: ", Some("m1")), ("made new.txt.", Some("m1")), ("Checked it.", Some("m2"))]
        {
            said.push(chunk, message.map(String::from));
        }
        assert_eq!(said.text, "Using the gateway for auto-mode billing\n\nDone: made new.txt.\n\nChecked it.");
        let mut first_only = Said::default();
        for (chunk, message) in [("Hel", Some("m1")), ("lo", None), (" there.", None)] {
            first_only.push(chunk, message.map(String::from));
        }
        assert_eq!(first_only.text, "Hello there.", "a message named on its first chunk only is one message");
        let mut plain = Said::default();
        assert_eq!((plain.push("Hel", None), plain.push("lo", None)), ("Hel".to_string(), "lo".to_string()));
        assert_eq!(plain.text, "Hello", "an agent that names no messages streams one, as it always did");
        let mut named_again = Said::default();
        for (chunk, message) in [("Hel", Some("m1")), ("lo", None), (" there.", Some("m1"))] {
            named_again.push(chunk, message.map(String::from));
        }
        assert_eq!(named_again.text, "Hello there.", "a chunk naming no message between two of m1 does not split m1");
        let mut empty_start = Said::default();
        for (chunk, message) in [("One.", Some("m1")), ("", Some("m2"))] {
            empty_start.push(chunk, message.map(String::from));
        }
        assert_eq!(empty_start.text, "One.", "an empty chunk of a new message adds no break with nothing after it");
        empty_start.push("Two.", None);
        assert_eq!(empty_start.text, "One.\n\nTwo.", "the new message's text, named on its empty first chunk only, is a paragraph of its own");
    }

    #[test]
    fn the_first_turn_is_the_task_and_later_turns_are_only_what_is_new() {
        let mut h = vec![ChatMessage::User { content: "Write a.txt".into() }];
        assert_eq!(next_prompt(&h, 0, "Write a.txt"), "Write a.txt", "a new session's first prompt is the task, as the person wrote it");
        h.push(ChatMessage::Assistant { text: "Done".into(), tool_calls: vec![] });
        h.push(ChatMessage::User { content: "<system-reminder>b.txt is missing</system-reminder>".into() });
        assert_eq!(
            next_prompt(&h, 2, "Write a.txt"),
            "<system-reminder>b.txt is missing</system-reminder>",
            "the agent remembers its own session: only the continuation is sent"
        );
    }

    #[test]
    fn a_new_agent_session_on_an_old_conversation_is_primed_with_a_digest() {
        let h = vec![
            ChatMessage::User { content: "Write a.txt and b.txt".into() },
            ChatMessage::Assistant {
                text: "Writing a".into(),
                tool_calls: vec![ToolCall {
                    id: "1".into(),
                    name: "write".into(),
                    input: ToolInput::Parsed { value: json!({"filePath": "a.txt"}) },
                    signature: None,
                }],
            },
            ChatMessage::Tool { call_id: "1".into(), name: "write".into(), content: "Wrote file successfully.".into(), is_error: false },
            ChatMessage::User { content: "Continue with b.txt".into() },
        ];
        let p = next_prompt(&h, 0, "Write a.txt and b.txt");
        assert!(
            p.contains("Write a.txt and b.txt") && p.contains("write({\"filePath\":\"a.txt\"})") && p.contains("Wrote file successfully."),
            "the digest must say what was done: {p}"
        );
        assert!(p.ends_with("Continue with b.txt"), "the new message comes last: {p}");
    }

    #[test]
    fn a_decision_picks_the_option_by_its_kind_not_its_place() {
        let opts = vec![
            ("rej".to_string(), PermissionOptionKind::RejectOnce),
            ("always".to_string(), PermissionOptionKind::AllowAlways),
            ("once".to_string(), PermissionOptionKind::AllowOnce),
        ];
        assert_eq!(option_for(&opts, true, false).as_deref(), Some("once"), "allowing once must not grant the agent more");
        assert_eq!(option_for(&opts, false, false).as_deref(), Some("rej"));
        assert_eq!(option_for(&opts[1..], false, false), None, "with no reject option the request is cancelled instead");
    }

    #[test]
    fn allow_once_never_becomes_always() {
        let opts = vec![("always".to_string(), PermissionOptionKind::AllowAlways), ("rej".to_string(), PermissionOptionKind::RejectOnce)];
        assert_eq!(option_for(&opts, true, false), None, "an agent offering only \"always\" is not granted it by a once-only answer");
        assert!(only_always(&opts), "the person is asked in those words instead");
        assert_eq!(option_for(&opts, true, true).as_deref(), Some("always"), "once the person agreed to always, always it is");
    }
}
