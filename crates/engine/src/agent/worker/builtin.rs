//! Finishline's own agent loop as a worker: each turn is one model request streamed to a
//! [`StepOutput`] ([`step`]), after the tools are refreshed and an over-full conversation is
//! summarised ([`compaction`]). Its tool calls come back to the run, which puts them through the
//! permission gate.

pub mod compaction;
mod step;

use async_trait::async_trait;

use super::{StepOutput, Worker};
use crate::agent::run::{Halt, Run};

pub(in crate::agent) struct BuiltinAgent {
    /// The model's context window (set, or learned from the server; narrowed when the server
    /// refuses a request as too long).
    context_window: u64,
}

impl BuiltinAgent {
    pub fn new(context_window: u64) -> Self {
        BuiltinAgent { context_window }
    }
}

#[async_trait]
impl Worker for BuiltinAgent {
    async fn turn(&mut self, run: &mut Run) -> Result<StepOutput, Halt> {
        run.refresh_tools().await?;
        run.maybe_compact(self.context_window).await?;
        run.stream_step(&mut self.context_window).await
    }
}
