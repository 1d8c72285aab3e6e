//! Compaction: older turns become one summary message, and the newest turns stay verbatim. The
//! split is one pure function used by the live run and by the rebuild from the event log, so a
//! resumed run gives the model exactly the conversation the live run had.

use std::sync::Arc;

use futures_util::StreamExt;

use crate::agent::run::{Halt, Run};
use crate::agent::worker::estimate_tokens;
use crate::domain::*;
use crate::event::EngineEvent;
use crate::judge::evaluator;
use crate::judge::stuck::StepRecord;
use crate::provider::{stream_with_retry, ChatMessage, CompletionEvent, CompletionRequest, Usage};

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

/// Replaces the whole history with the summary: the compaction of a request the server refused
/// as too long, where the newest turns (a runaway answer, a huge tool result) may be what did
/// not fit. The rebuild knows it by where it comes: inside a step, before the step said anything.
pub fn apply_all(history: &mut Vec<ChatMessage>, summary: &str) {
    history.clear();
    history.push(summary_message(summary));
}

/// The conversation as sent in a window of `window` estimated tokens: a tool's output longer
/// than half the window is cut there, with a note that says how to read the rest. One read of a
/// big file (256 KB) was twice a 32k window, and compaction keeps the newest turns whole, so
/// no summary could make that request fit. Pure, applied to each request (the history and its
/// rebuild from the log keep the whole output), so a resumed run sends what the live run sent.
pub fn fit_tool_results(history: &[ChatMessage], window: u64) -> Vec<ChatMessage> {
    let most = (window as usize / 2) * 4;
    history
        .iter()
        .map(|m| match m {
            ChatMessage::Tool { call_id, name, content, is_error } if content.len() > most => {
                let mut cut = most;
                while !content.is_char_boundary(cut) {
                    cut -= 1;
                }
                let note = format!(
                    "\n[cut here: the output has {} characters, more than half of the model's context window ({window} tokens) holds. Read it in parts: read_file with offset and limit, or a command that prints less.]",
                    content.chars().count()
                );
                ChatMessage::Tool { call_id: call_id.clone(), name: name.clone(), content: format!("{}{note}", &content[..cut]), is_error: *is_error }
            }
            other => other.clone(),
        })
        .collect()
}

/// How many characters of transcript a compaction request may carry into a window of `window`
/// estimated tokens: half the window, so the request and its summary fit beside the system
/// prompt, never more than the evaluator's digest.
pub fn digest_chars(window: u64) -> usize {
    ((window as usize / 2) * 4).clamp(1_000, evaluator::DIGEST_CHARS)
}

impl Run {
    pub(in crate::agent) async fn maybe_compact(&mut self, window: u64) -> Result<(), Halt> {
        // Measured on what a request sends (a long tool output goes cut): the whole output would
        // compact at every turn while it sits among the newest turns, which compaction keeps.
        if estimate_tokens(&fit_tool_results(&self.history, window)) * 10 > window * 8 && self.history.len() > KEEP_VERBATIM {
            self.compact(window).await?;
        }
        Ok(())
    }

    /// Summarises older turns into one summary message; the last turns stay as they are.
    pub(in crate::agent) async fn compact(&mut self, window: u64) -> Result<(), Halt> {
        self.compact_with(false, window).await
    }

    /// Summarises the whole conversation, for a request the server refused as too long.
    pub(in crate::agent) async fn compact_all(&mut self, window: u64) -> Result<(), Halt> {
        self.compact_with(true, window).await
    }

    async fn compact_with(&mut self, all: bool, window: u64) -> Result<(), Halt> {
        self.emit(EngineEvent::Activity { phase: ActivityPhase::Compacting, detail: String::new() })?;
        self.evidence.compactions += 1;
        let cut = if all { self.history.len() } else { split_point(&self.history) };
        let older = crate::agent::evaluation::transcript_lines(&self.history[..cut]);
        let budget = digest_chars(window);
        let request = CompletionRequest {
            model: self.agent_model.clone(),
            system: "Summarize the conversation so far for the agent that will continue it: the task, what was done, files touched, decisions, and what remains. Be concise and concrete.".into(),
            messages: vec![ChatMessage::User { content: format!("Task: {}\n\n{}", evaluator::clip(&self.task, budget / 2), evaluator::digest_within(&older, budget)) }],
            tools: vec![],
            // A small window gets a short summary: it has to fit beside the next request.
            max_tokens: Some((window / 6).clamp(200, 800) as u32),
            structured: None,
            temperature: Some(0.0),
        };
        let asked: usize =
            request.system.len() + request.messages.iter().map(|m| if let ChatMessage::User { content } = m { content.len() } else { 0 }).sum::<usize>();
        let mut stream = stream_with_retry(self.engine.config.agent.provider.clone(), request, self.engine.config.retry, Arc::new(|_| {}));
        let (mut summary, mut usage) = (String::new(), Usage::default());
        // A weak model summarising can copy one line over and over: what it wrote is no summary,
        // and the transcript's own digest stands in for it.
        let mut watch = crate::judge::runaway::RunawayWatch::new(self.engine.config.runaway);
        let mut streamed = 0usize;
        loop {
            let item = tokio::select! {
                i = stream.next() => i,
                _ = self.cancel.cancelled() => return Err(Halt::Cancelled),
            };
            match item {
                None => break,
                Some(Ok(CompletionEvent::TextDelta { text })) => {
                    summary.push_str(&text);
                    streamed += text.len();
                    if watch.push(&text).is_some() {
                        summary.clear();
                        break;
                    }
                }
                Some(Ok(CompletionEvent::Usage { usage: u })) => usage = u,
                Some(Ok(_)) => {}
                Some(Err(_)) => break,
            }
        }
        if usage.input_tokens + usage.output_tokens == 0 && streamed > 0 {
            // Stopped before the server's count arrived: what was spent is still counted.
            usage = Usage { input_tokens: asked.div_ceil(4) as u64, output_tokens: streamed.div_ceil(4) as u64, estimated: true, ..Default::default() };
        }
        if summary.trim().is_empty() {
            summary = evaluator::digest_within(&older, budget);
        }
        self.emit(EngineEvent::TokensSpent { source: UsageSource::Compaction, usage, repairs: 0 })?;
        self.emit(EngineEvent::MessageCreated { message_id: MessageId::new(), role: MessageRole::Summary, source: None, text: Some(summary.clone()) })?;
        if all {
            apply_all(&mut self.history, &summary);
        } else {
            apply(&mut self.history, &summary);
        }
        self.evidence.record(StepRecord { compaction: true, ..Default::default() });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_output_over_half_the_window_is_cut_with_how_to_read_the_rest() {
        let big = "é".repeat(40_000);
        let history = vec![
            ChatMessage::User { content: "read it".into() },
            ChatMessage::Tool { call_id: "c1".into(), name: "read_file".into(), content: big.clone(), is_error: false },
            ChatMessage::Tool { call_id: "c2".into(), name: "read_file".into(), content: "short".into(), is_error: false },
        ];
        let sent = fit_tool_results(&history, 8_000);
        let ChatMessage::Tool { content, .. } = &sent[1] else { panic!() };
        assert!(content.len() < 16_000 + 300 && content.ends_with("or a command that prints less.]"), "{}", content.len());
        assert!(content.contains("the output has 40000 characters"), "characters, not bytes");
        assert_eq!(sent[2], history[2], "a short output goes as it is");
        assert_eq!(sent[0], history[0]);
    }
}
