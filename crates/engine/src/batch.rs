//! Batches streamed deltas into one event per short window, so the person sees smooth text, the
//! database is written ~30 times a second instead of per token, and it is never behind what the
//! person saw (a batch is stored before it is delivered, like every event).

use std::time::{Duration, Instant};

use crate::domain::MessageId;
use crate::event::EngineEvent;

/// At most about 33 ms between a delta arriving and its batch being emitted.
pub const BATCH_WINDOW: Duration = Duration::from_millis(33);

#[derive(Debug)]
struct Pending {
    message_id: MessageId,
    reasoning: bool,
    text: String,
    since: Instant,
}

#[derive(Debug)]
pub struct DeltaBatcher {
    window: Duration,
    pending: Option<Pending>,
}

impl Default for DeltaBatcher {
    fn default() -> Self {
        DeltaBatcher::new(BATCH_WINDOW)
    }
}

impl DeltaBatcher {
    pub fn new(window: Duration) -> Self {
        DeltaBatcher { window, pending: None }
    }

    /// Adds a delta. If it belongs to another message or kind than the pending batch, that batch
    /// is returned to be emitted first, so order is kept.
    pub fn push(&mut self, message_id: &MessageId, reasoning: bool, text: &str, now: Instant) -> Option<EngineEvent> {
        let flushed = match &self.pending {
            Some(p) if p.message_id == *message_id && p.reasoning == reasoning => None,
            Some(_) => self.take(),
            None => None,
        };
        match &mut self.pending {
            Some(p) => p.text.push_str(text),
            None => self.pending = Some(Pending { message_id: message_id.clone(), reasoning, text: text.to_string(), since: now }),
        }
        flushed
    }

    /// When the pending batch must be emitted.
    pub fn deadline(&self) -> Option<Instant> {
        self.pending.as_ref().map(|p| p.since + self.window)
    }

    pub fn is_due(&self, now: Instant) -> bool {
        self.deadline().is_some_and(|d| now >= d)
    }

    /// The pending batch as an event, if any.
    pub fn take(&mut self) -> Option<EngineEvent> {
        self.pending.take().map(|p| {
            if p.reasoning {
                EngineEvent::ReasoningDelta { message_id: p.message_id, text: p.text }
            } else {
                EngineEvent::TextDelta { message_id: p.message_id, text: p.text }
            }
        })
    }
}
