//! One step: a model request streamed to a [`StepOutput`], persisted as it goes (batched deltas),
//! with retries reported as the `retry` status. How the stream ended is typed ([`StepEnd`]); what
//! follows is the completion engine's business.

use std::sync::Arc;
use std::time::Instant;

use futures_util::StreamExt;

use crate::agent::run::{Halt, Run};
use crate::agent::worker::StepOutput;
use crate::batch::DeltaBatcher;
use crate::clock::rfc3339;
use crate::domain::*;
use crate::error::ErrorCode;
use crate::event::EngineEvent;
use crate::judge::completion::StepEnd;
use crate::judge::prompt;
use crate::judge::runaway::{Runaway, RunawayWatch};
use crate::provider::{
    stream_with_retry_woken, ChatMessage, CompletionEvent, CompletionRequest, ContextOverflow, ProviderErrorKind, StopReason, ToolCall, Usage,
};

/// What one streamed answer gave, before the step's end is decided from it.
struct Streamed {
    text: String,
    calls: Vec<ToolCall>,
    usage: Option<Usage>,
    stop: Option<StopReason>,
    reasoning_chars: usize,
    /// Something reached the person (text or reasoning): a retry would repeat it.
    shown: bool,
    runaway: Option<Runaway>,
    timed_out: bool,
    /// The person cancelled mid-answer: the step is finished with what it cost, then the run halts.
    cancelled: bool,
    outcome: Result<(), crate::provider::ProviderError>,
}

/// Why a task cannot be sent to a model whose window is `window` estimated tokens: the task
/// alone is more than twice the whole window, so any summary of it drops most of it. (One near
/// the window's size is still compacted: the digest keeps most of its lines, and small local
/// models with a 4k window work from it.)
fn task_too_large(task: &str, window: u64) -> Option<String> {
    let tokens = task.len().div_ceil(4) as u64;
    (tokens > window * 2).then(|| {
        format!(
            "The task itself is about {} tokens, more than fits the model's context window (about {} tokens): it cannot be sent whole, and a summary of it would lose what you wrote. Put the long material in a file in the workspace and refer to it in the task (the agent reads it in parts), or use a model with a larger context window.",
            crate::thousands::grouped(tokens as usize),
            crate::thousands::grouped(window as usize)
        )
    })
}

/// The window to compact against after the server refused a request as too long: its reported
/// size, scaled into [`crate::agent::worker::estimate_tokens`]'s units by how far the estimate of
/// the refused request fell short of the server's count. Never larger than before.
pub(in crate::agent) fn fitted_window(current: u64, overflow: ContextOverflow, estimated: u64) -> u64 {
    let Some(limit) = overflow.limit else { return current };
    let scaled = match overflow.requested {
        Some(requested) if requested > estimated && estimated > 0 => limit * estimated / requested,
        _ => limit,
    };
    current.min(scaled.max(1))
}

/// How long a wait for MCP servers to start goes unremarked.
const SLOW_START: std::time::Duration = std::time::Duration::from_secs(2);

const MALFORMED_CALL: &str = "<system-reminder source=\"tool_error\">Your last tool call was malformed and could not be run. Call the tool again with valid JSON arguments.</system-reminder>";

impl Run {
    /// Starts MCP servers the first time, drops the tools of any that died, and tells the person
    /// about each server that failed, once.
    pub(in crate::agent) async fn refresh_tools(&mut self) -> Result<(), Halt> {
        let Some(mcp) = self.engine.config.mcp.clone() else { return Ok(()) };
        // A server's start-up can take many seconds; cancel does not wait for it. The start goes
        // on in the background, so the next run finds the server ready instead of half-started.
        let servers = mcp.clone();
        let mut starting = tokio::spawn(async move { mcp.tools().await });
        // A start that takes a moment is said once, by name and how long it may take.
        let slow = tokio::time::sleep(SLOW_START);
        tokio::pin!(slow);
        let mut said = false;
        let (tools, failures) = loop {
            tokio::select! {
                r = &mut starting => {
                    break r.map_err(|e| Halt::Failed { code: crate::error::ErrorCode::Mcp, message: format!("the MCP servers could not be started: {e}") })?
                }
                _ = &mut slow, if !said => {
                    said = true;
                    if let Some(detail) = servers.starting() {
                        self.emit(EngineEvent::Activity { phase: crate::domain::ActivityPhase::Waiting, detail })?;
                    }
                }
                _ = self.cancel.cancelled() => return Err(Halt::Cancelled),
            }
        };
        for message in failures {
            self.emit(EngineEvent::Error { code: crate::error::ErrorCode::Mcp, message })?;
        }
        self.toolbox = self.engine.toolbox.clone().with(tools);
        Ok(())
    }

    fn request(&self, window: u64) -> CompletionRequest {
        CompletionRequest {
            model: self.agent_model.clone(),
            system: prompt::system_prompt(&self.workspace.root().to_string_lossy(), self.cfg().marker.as_deref(), self.instructions.as_ref()),
            messages: super::compaction::fit_tool_results(&self.history, window),
            tools: {
                let mut tools = self.toolbox.specs();
                if self.plan_step.is_some() {
                    tools.push(crate::tool::session_log_spec());
                }
                tools
            },
            max_tokens: self.engine.config.max_output_tokens,
            structured: None,
            temperature: None,
        }
    }

    /// Reads one answer's stream to its end, a cancel, the step limit or a runaway, showing it
    /// as it comes (batched).
    async fn read_stream(
        &mut self,
        stream: &mut crate::provider::EventStream,
        message_id: &MessageId,
        retried: &std::sync::atomic::AtomicBool,
    ) -> Result<Streamed, Halt> {
        let mut batcher = DeltaBatcher::default();
        let (mut text, mut calls, mut usage, mut stop) = (String::new(), Vec::new(), None::<Usage>, None);
        let mut reasoning_chars = 0usize;
        let mut shown = false;
        let mut watch = RunawayWatch::new(self.engine.config.runaway);
        let mut runaway = None;
        let mut timed_out = false;
        let mut cancelled = false;
        let step_deadline = tokio::time::Instant::now() + self.engine.config.step_limit;
        let outcome: Result<(), crate::provider::ProviderError> = loop {
            let deadline = batcher.deadline().map(tokio::time::Instant::from_std);
            let item = tokio::select! {
                biased;
                _ = self.cancel.cancelled() => {
                    cancelled = true;
                    break Ok(());
                }
                _ = async { tokio::time::sleep_until(deadline.unwrap()).await }, if deadline.is_some() => {
                    if let Some(e) = batcher.take() { self.emit(e)?; }
                    continue;
                }
                _ = tokio::time::sleep_until(step_deadline) => {
                    timed_out = true;
                    break Ok(());
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
                    if let Some(e) = batcher.push(message_id, false, &t, Instant::now()) {
                        self.emit(e)?;
                    }
                    // A runaway answer is stopped here, keeping what was shown.
                    if let Some(r) = watch.push(&t) {
                        runaway = Some(r);
                        break Ok(());
                    }
                }
                Ok(CompletionEvent::ReasoningDelta { text: t }) => {
                    shown = true;
                    reasoning_chars += t.len();
                    if let Some(e) = batcher.push(message_id, true, &t, Instant::now()) {
                        self.emit(e)?;
                    }
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
        Ok(Streamed { text, calls, usage, stop, reasoning_chars, shown, runaway, timed_out, cancelled, outcome })
    }

    /// An answer cut by a full window is kept and the conversation compacted (the step goes on
    /// as cut off); a malformed call is told to the model. Other ends stand as they are.
    async fn settle_end(&mut self, window: u64, mut end: StepEnd, text: &str, calls: &mut Vec<ToolCall>, in_history: &mut bool) -> Result<StepEnd, Halt> {
        // The window overflowed mid-answer (Anthropic `model_context_window_exceeded`): what was
        // shown is kept, the conversation is compacted, and the step continues as cut off. A
        // second overflow in a row reaches the completion engine, which fails the run.
        if end == StepEnd::Stopped(StopReason::ContextWindowExceeded) && !self.evidence.overflowed {
            self.evidence.overflowed = true;
            // Calls cut off by the overflow are not run: the text is what the step produced.
            calls.clear();
            if !text.is_empty() {
                self.history.push(ChatMessage::Assistant { text: text.to_string(), tool_calls: vec![] });
                *in_history = true;
                self.compact(window).await?;
            } else {
                // Nothing said: summarised whole, as the rebuild from the log does.
                self.compact_all(window).await?;
            }
            end = StepEnd::Cut;
        } else if end != StepEnd::Stopped(StopReason::ContextWindowExceeded) {
            self.evidence.overflowed = false;
        }
        if end == StepEnd::Stopped(StopReason::MalformedCall) && calls.is_empty() {
            // A malformed call (Gemini MALFORMED_FUNCTION_CALL): tell the model, do not fail.
            self.history.push(ChatMessage::User { content: MALFORMED_CALL.into() });
            end = StepEnd::Stopped(StopReason::PauseTurn);
        }
        Ok(end)
    }

    /// A step's tokens counted by us (about 4 characters a token) when the server sent none.
    fn estimated_usage(&self, text: &str, reasoning_chars: usize, calls: &[ToolCall]) -> Usage {
        let args: usize = calls.iter().map(|c| crate::provider::openai::arguments_text(&c.input).len()).sum();
        Usage {
            input_tokens: crate::agent::worker::estimate_tokens(&self.history),
            output_tokens: ((text.len() + reasoning_chars + args) as u64).div_ceil(4),
            estimated: true,
            ..Default::default()
        }
    }

    pub(in crate::agent) async fn stream_step(&mut self, window: &mut u64) -> Result<StepOutput, Halt> {
        let step = self.evidence.counters.steps;
        let message_id = MessageId::new();
        self.emit_saving(vec![
            EngineEvent::StepStarted { step, cycle: Some(CycleCount { used: self.evidence.counters.continuations_used, max: self.cfg().continuation_budget }) },
            EngineEvent::Activity { phase: ActivityPhase::Thinking, detail: String::new() },
            EngineEvent::MessageCreated { message_id: message_id.clone(), role: MessageRole::Assistant, source: None, text: None },
        ])?;
        crate::fault::panic_at("model-step");
        let mut compacted_for_overflow = false;
        let mut overflow = ContextOverflow::default();
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
                let _ = store.append(
                    &session,
                    Some(&run),
                    EngineEvent::StatusChanged {
                        status: SessionStatus::Retry,
                        attempt: Some(w.attempt),
                        max_retries: Some(w.max_retries),
                        next_retry_at: Some(at),
                        message: Some(w.error.message.clone()),
                    },
                );
            });
            let wake = self.engine.runtime.retry_wake(&self.session);
            let mut stream =
                stream_with_retry_woken(self.engine.config.agent.provider.clone(), self.request(*window), self.engine.config.retry, on_retry, wake);
            let Streamed { text, mut calls, usage, stop, reasoning_chars, shown, runaway, timed_out, cancelled, outcome } =
                self.read_stream(&mut stream, &message_id, &retried).await?;
            if cancelled {
                // What was shown (or called) was paid for: History counts it (estimated, as no
                // usage came), not 0. Nothing yet is counted as nothing, as a refused request is.
                if let Some(usage) = usage.or_else(|| (shown || !calls.is_empty()).then(|| self.estimated_usage(&text, reasoning_chars, &calls))) {
                    self.emit(EngineEvent::StepFinished { step, stop_reason: None, usage })?;
                }
                return Err(Halt::Cancelled);
            }
            let mut in_history = false;
            let mut repeating = None;
            let refused = matches!(&outcome, Err(e) if e.refused);
            let end = match outcome {
                Ok(()) if timed_out => StepEnd::Failed {
                    code: ErrorCode::StepTimeout,
                    message: format!(
                        "The model's answer took longer than the step limit ({} s) and was stopped; what it wrote is kept. A slow local model may need a longer limit (Settings → Limits).",
                        self.engine.config.step_limit.as_secs()
                    ),
                },
                Ok(()) => match runaway {
                    Some(Runaway::Repeating { text: repeated, .. }) => {
                        // Judged stuck by the completion engine; the calls of a runaway answer are not run.
                        calls.clear();
                        repeating = Some(repeated);
                        StepEnd::Cut
                    }
                    Some(Runaway::TemplateTokens { markers }) => StepEnd::Failed {
                        code: ErrorCode::ChatTemplate,
                        message: format!(
                            "This model answers with raw chat-template tokens ({}): it is probably a base model, or the server's chat template does not match it. Use an instruction-tuned model, or start the server with the model's own chat template.",
                            markers.join(" ")
                        ),
                    },
                    None => match stop {
                        Some(r) => StepEnd::Stopped(r),
                        None => StepEnd::Cut,
                    },
                },
                // A context-too-long error compacts and retries once, while nothing was shown. The
                // server's numbers say how big the window really is, in this estimate's units
                // (a wall of symbols is many more tokens than characters / 4), and the whole
                // conversation is summarised: the newest turns may be what did not fit.
                Err(e) if e.kind == ProviderErrorKind::ContextTooLong && !compacted_for_overflow && !shown => {
                    compacted_for_overflow = true;
                    overflow = ContextOverflow::parse(&e.message);
                    // Measured on what was sent: long tool outputs went cut to half the window.
                    let sent = super::compaction::fit_tool_results(&self.history, *window);
                    *window = fitted_window(*window, overflow, crate::agent::worker::estimate_tokens(&sent));
                    // The person's task alone does not fit: a summary of it would lose what they
                    // wrote (900 KB became a few hundred characters, and that was judged done).
                    if let Some(message) = task_too_large(&self.task, *window) {
                        StepEnd::Failed { code: ErrorCode::ContextTooLong, message }
                    } else {
                        self.compact_all(*window).await?;
                        continue;
                    }
                }
                Err(e) if e.kind == ProviderErrorKind::ContextTooLong => {
                    let again = ContextOverflow::parse(&e.message);
                    let known = ContextOverflow { limit: again.limit.or(overflow.limit), requested: again.requested.or(overflow.requested) };
                    StepEnd::Failed { code: ErrorCode::ContextTooLong, message: known.explain(&e.message) }
                }
                Err(e) if shown && matches!(e.kind, ProviderErrorKind::Network | ProviderErrorKind::Stall | ProviderErrorKind::TruncatedStream | ProviderErrorKind::MalformedStream) => StepEnd::Cut,
                Err(e) if e.kind == ProviderErrorKind::TruncatedStream => StepEnd::Cut,
                Err(e) => StepEnd::Failed { code: ErrorCode::of_provider(e.kind), message: e.message },
            };
            let end = self.settle_end(*window, end, &text, &mut calls, &mut in_history).await?;
            let stop_reason = match &end {
                StepEnd::Stopped(r) => Some(*r),
                _ => None,
            };
            let usage = usage.unwrap_or_else(|| {
                // Refused before any model read it (an HTTP error, no connection): it cost
                // nothing. A step the server took and then lost (a stall, a step time limit, a
                // broken stream) is estimated, though it showed nothing: the model may have worked.
                if refused {
                    return Usage::default();
                }
                self.estimated_usage(&text, reasoning_chars, &calls)
            });
            self.emit(EngineEvent::StepFinished { step, stop_reason, usage })?;
            return Ok(StepOutput { text, calls, end, usage, in_history, repeating, ran: vec![], claim: None });
        }
    }
}
