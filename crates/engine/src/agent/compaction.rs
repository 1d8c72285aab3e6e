//! Compaction: older turns become one summary message, and the newest turns stay verbatim. The
//! split is one pure function used by the live run and by the rebuild from the event log, so a
//! resumed run gives the model exactly the conversation the live run had.

use std::sync::Arc;

use futures_util::StreamExt;

use super::run::{Halt, Run};
use crate::domain::*;
use crate::evaluator;
use crate::event::EngineEvent;
use crate::provider::{stream_with_retry, ChatMessage, CompletionEvent, CompletionRequest, Usage};
use crate::stuck::StepRecord;

/// Messages kept verbatim after a compaction (more when a tool result would be split from its call).
pub const KEEP_VERBATIM: usize = 4;

/// Where the verbatim tail starts: the last `KEEP_VERBATIM` messages, moved back so that a tool
/// call is never split from its result.
pub fn split_point(history: &[ChatMessage]) -> usize {
    let mut cut = history.len().saturating_sub(KEEP_VERBATIM);
    while cut > 0 && matches!(history.get(cut), Some(ChatMessage::Tool { .. })) {
        cut -= 1;
    }
    cut
}

/// The message that stands for everything before the split.
pub fn summary_message(summary: &str) -> ChatMessage {
    ChatMessage::User { content: format!("<summary>\nThe earlier conversation, summarised:\n{summary}\n</summary>") }
}

/// Replaces the history before the split with the summary.
pub fn apply(history: &mut Vec<ChatMessage>, summary: &str) {
    let cut = split_point(history);
    let tail = history.split_off(cut);
    history.clear();
    history.push(summary_message(summary));
    history.extend(tail);
}

/// A rough token count of the conversation: characters / 4, plus room for the system prompt and tools.
pub fn estimate_tokens(history: &[ChatMessage]) -> u64 {
    let chars: usize = history
        .iter()
        .map(|m| match m {
            ChatMessage::User { content } => content.len(),
            ChatMessage::Assistant { text, tool_calls } => text.len() + tool_calls.iter().map(|c| crate::provider::openai::arguments_text(&c.input).len() + 20).sum::<usize>(),
            ChatMessage::Tool { content, .. } => content.len(),
        })
        .sum();
    (chars as u64 + 4000) / 4
}

impl Run {
    pub(super) async fn maybe_compact(&mut self) -> Result<(), Halt> {
        if estimate_tokens(&self.history) * 10 > self.context_window * 8 && self.history.len() > KEEP_VERBATIM {
            self.compact().await?;
        }
        Ok(())
    }

    /// Summarises older turns into one summary message; the last turns stay as they are.
    pub(super) async fn compact(&mut self) -> Result<(), Halt> {
        self.emit(EngineEvent::Activity { phase: ActivityPhase::Compacting, detail: String::new() })?;
        self.evidence.compactions += 1;
        let older = super::evaluation::transcript_lines(&self.history[..split_point(&self.history)]);
        let request = CompletionRequest {
            model: self.agent_model.clone(),
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
        apply(&mut self.history, &summary);
        self.evidence.record(StepRecord { compaction: true, ..Default::default() });
        Ok(())
    }
}
