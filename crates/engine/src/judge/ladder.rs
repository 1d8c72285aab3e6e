//! Asking a model for one JSON object, read by a ladder: schema-constrained output (falling back
//! to asking by instruction where a server refuses `json_schema`), then lenient extraction from
//! free text, then one repair retry that says what was wrong. The evaluator and the planner both
//! ask this way.

use std::sync::Arc;

use futures_util::StreamExt;
use tokio_util::sync::CancellationToken;

use crate::provider::{
    stream_with_retry, ChatMessage, CompletionEvent, CompletionRequest, OnRetry, Provider, ProviderErrorKind, RetryPolicy, StopReason, StructuredMode, Usage,
};

/// How long a structured answer that repeats itself may grow before it is given up: longer than
/// a verdict or a plan with a repetitive field, far shorter than the output limit.
const RUNAWAY_ANSWER_CHARS: usize = 800;

/// What came of a structured call.
#[derive(Debug)]
pub struct Answer<T> {
    /// The parsed answer, or why there is none, in words for the person.
    pub value: Result<T, Unusable>,
    pub usage: Usage,
    /// Model calls made (a repair or an instruction-mode retry counts).
    pub calls: u32,
}

/// Why a structured call gave nothing usable.
#[derive(Debug, Clone, PartialEq)]
pub enum Unusable {
    Unreachable(String),
    Refused,
    CutOff,
    /// Two answers, neither usable; the reason the second was not.
    Unparseable(String),
    /// No answer within the step limit (its seconds): the caller stopped waiting.
    OverLimit(u64),
}

impl Unusable {
    /// In words, for the person.
    pub fn describe(&self) -> String {
        match self {
            Unusable::Unreachable(why) => format!("the model could not be reached: {why}"),
            Unusable::Refused => "the model refused".into(),
            Unusable::CutOff => "the answer was cut off".into(),
            Unusable::Unparseable(why) => format!("the answer could not be read: {why}"),
            Unusable::OverLimit(secs) => format!("no answer came within the step limit ({secs} s)"),
        }
    }
}

/// A structured call cancelled: its request dropped at once. `usage` is what the calls that
/// finished before it took (an answer that needed a repair was still paid for); the dropped
/// call's own tokens are never reported by the provider.
#[derive(Debug)]
pub struct Cancelled {
    pub usage: Usage,
}

/// Asks with `build(mode)` and reads the answer with `parse`, which returns what was wrong for
/// the repair message.
pub async fn ask<T>(
    provider: Arc<dyn Provider>,
    build: impl Fn(StructuredMode) -> CompletionRequest,
    parse: impl Fn(&str) -> Result<T, String>,
    policy: RetryPolicy,
    on_retry: OnRetry,
    cancel: &CancellationToken,
) -> Result<Answer<T>, Cancelled> {
    let mut request = build(StructuredMode::Native);
    let mut usage = Usage::default();
    let mut calls = 0;
    let mut native = true;
    let mut repaired = false;
    loop {
        calls += 1;
        let mut stream = stream_with_retry(provider.clone(), request.clone(), policy, on_retry.clone());
        let mut text = String::new();
        let mut stop = None;
        let mut failed = None;
        // A weak model's JSON can run away inside a string ("1.1.1.1…" to the output limit):
        // stopped once it is clear and the answer is longer than any honest one, since a repair
        // would only ask the same model again. A short answer with a repetitive field still has
        // its verdict read.
        let mut watch = crate::judge::runaway::RunawayWatch::new(crate::judge::runaway::RunawayConfig::json());
        let mut seen = None;
        let mut repeating = None;
        loop {
            let item = tokio::select! {
                item = stream.next() => item,
                _ = cancel.cancelled() => return Err(Cancelled { usage }),
            };
            match item {
                None => break,
                Some(Ok(CompletionEvent::TextDelta { text: t })) => {
                    text.push_str(&t);
                    if let Some(crate::judge::runaway::Runaway::Repeating { text: unit, .. }) = watch.push(&t) {
                        seen = Some(unit);
                    }
                    if seen.is_some() && text.len() >= RUNAWAY_ANSWER_CHARS {
                        repeating = seen.take();
                        break;
                    }
                }
                Some(Ok(CompletionEvent::Usage { usage: u })) => {
                    usage.input_tokens += u.input_tokens;
                    usage.output_tokens += u.output_tokens;
                }
                Some(Ok(CompletionEvent::Stop { reason })) => stop = Some(reason),
                Some(Ok(_)) => {}
                Some(Err(e)) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        let done = |value| Ok(Answer { value, usage, calls });
        if let Some(e) = failed {
            // Many OpenAI-compatible servers answer 400 to `json_schema`: ask by instruction
            // instead (the parsing ladder still applies) before giving up.
            if native && e.kind == ProviderErrorKind::BadRequest && !cancel.is_cancelled() {
                native = false;
                request = build(StructuredMode::Instruction);
                continue;
            }
            return done(Err(Unusable::Unreachable(e.message)));
        }
        if let Some(unit) = repeating {
            return done(Err(Unusable::Unparseable(format!("the answer repeated “{}” over and over", unit.chars().take(80).collect::<String>()))));
        }
        match stop {
            Some(StopReason::ContentFilter) => return done(Err(Unusable::Refused)),
            Some(StopReason::Length) => return done(Err(Unusable::CutOff)),
            _ => {}
        }
        match parse(&text) {
            Ok(value) => return done(Ok(value)),
            Err(problem) if !repaired => {
                request.messages.push(ChatMessage::Assistant { text: text.chars().take(2000).collect(), tool_calls: vec![] });
                request.messages.push(ChatMessage::User {
                    content: format!("Your answer could not be used: {problem}. Reply again with only one JSON object that matches the schema."),
                });
                repaired = true;
            }
            Err(problem) => return done(Err(Unusable::Unparseable(problem))),
        }
    }
}
