//! Whoever does a run's work, behind one trait: Finishline's own loop ([`builtin`]) or an
//! external ACP agent ([`acp`]). The run asks its worker for one turn at a time and judges what
//! the turn gave; it never branches on which worker it has.

pub mod acp;
pub mod builtin;

use std::sync::Arc;

use async_trait::async_trait;

use super::run::{Halt, Run};
use super::Engine;
use crate::event::{EngineEvent, Envelope};
use crate::judge::completion::{ClaimEvidence, StepEnd};
use crate::provider::{ChatMessage, ToolCall, Usage};
use crate::store::SessionSummary;

/// What one turn of work gave, for the judge: a model step of the built-in loop (its tool calls
/// not yet run), or an external agent's whole turn (its tools already run).
pub(in crate::agent) struct StepOutput {
    pub text: String,
    pub calls: Vec<ToolCall>,
    pub end: StepEnd,
    pub usage: Usage,
    /// The step's text is already in the conversation (it came before a compaction).
    pub in_history: bool,
    /// The answer repeated itself and was stopped: the repeated text.
    pub repeating: Option<String>,
    /// Tool calls an external agent ran itself during its turn: `name(arguments)`, the output,
    /// and whether it failed. The built-in agent's calls are in `calls` and run after the step.
    pub ran: Vec<(String, String, bool)>,
    /// An external agent's `complete_task` call, made through Finishline's MCP server.
    pub claim: Option<ClaimEvidence>,
}

/// The one role both workers play.
#[async_trait]
pub(in crate::agent) trait Worker: Send + Sync {
    /// One turn of work on the run's conversation, to the same [`StepOutput`] whoever did it.
    async fn turn(&mut self, run: &mut Run) -> Result<StepOutput, Halt>;

    /// Whether the judge may insist on a `complete_task` call before it believes the work is
    /// done. An agent that may have no such tool would be sent back for ever; its claims are
    /// judged by the todo gate, verification and the evaluator.
    fn can_be_asked_to_claim(&self) -> bool {
        true
    }

    /// The todo gate's words for this worker, when the judge's own name tools it does not have.
    fn todo_gate(&self, _remaining: &[String]) -> Option<String> {
        None
    }

    /// Whether the agent keeps its own conversation, and is sent only what is new since its last
    /// turn (an external agent); else the whole conversation goes to the model each time, and a
    /// tool's result at its end is something to answer.
    fn keeps_its_conversation(&self) -> bool {
        false
    }
}

/// The worker a session keeps: the agent it started with (the engine's, when it is that one,
/// else a known agent or the preset of that name), or Finishline's own loop.
pub(in crate::agent) async fn for_session(engine: &Arc<Engine>, summary: &SessionSummary, events: &[Envelope]) -> crate::Result<Box<dyn Worker>> {
    if summary.provider != crate::external::ACP_PROVIDER {
        return Ok(Box::new(builtin::BuiltinAgent::new(engine.context_window().await)));
    }
    let agent = engine
        .config
        .external
        .clone()
        .filter(|a| a.name == summary.model)
        .or_else(|| engine.known_agent(&summary.model))
        .or_else(|| crate::external::ExternalAgent::preset(&summary.model))
        .ok_or_else(|| {
            crate::Error::InvalidInput(format!(
                "this session was run by the external agent `{}`, which is not set up here: choose it in Settings → Agent (or pass --agent) to continue it",
                summary.model
            ))
        })?;
    // The agent's own session from an earlier run of this one, to reopen.
    let reopen = events.iter().rev().find_map(|e| match &e.event {
        EngineEvent::AgentConnected { agent: a, acp_session, .. } if *a == agent.name => Some(acp_session.clone()),
        _ => None,
    });
    Ok(Box::new(acp::AcpAgent::new(agent, reopen)))
}

/// A rough token count of a conversation: characters / 4, plus room for the system prompt and
/// tools. What a worker reports when its server does not count, and what compaction goes by.
pub(in crate::agent) fn estimate_tokens(history: &[ChatMessage]) -> u64 {
    let chars: usize = history
        .iter()
        .map(|m| match m {
            ChatMessage::User { content } => content.len(),
            ChatMessage::Assistant { text, tool_calls } => {
                text.len() + tool_calls.iter().map(|c| crate::provider::openai::arguments_text(&c.input).len() + 20).sum::<usize>()
            }
            ChatMessage::Tool { content, .. } => content.len(),
        })
        .sum();
    (chars as u64 + 4000) / 4
}
