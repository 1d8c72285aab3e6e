//! External agents over the Agent Client Protocol (ACP): OpenCode, Gemini CLI, Claude Code,
//! Codex, goose or any other ACP agent does the work, and Finishline's completion engine judges
//! it exactly as it judges the built-in agent. The SDK (`agent-client-protocol`, pinned) stays
//! behind [`connection::AgentConnection`], as MCP stays behind `McpConnection`.
//!
//! - [`definition`]: which agents there are, how each starts, what to install when missing;
//! - [`update`]: ACP's `session/update` and stop reasons in Finishline's terms (pure);
//! - [`connection`]: the agent's process and the protocol session over its stdio.

pub mod agent_status;
pub mod auth_tap;
pub mod claims;
pub mod claims_pipe;
pub mod client_fs;
pub mod connection;
pub mod definition;
pub mod line_cap;
pub mod login;
pub mod login_run;
pub mod server_error;
pub mod stray_lines;
pub mod terminals;
pub mod update;

pub use definition::ExternalAgent;

/// The provider a session records when an external agent works on it; the model is its name.
pub const ACP_PROVIDER: &str = "acp";

/// The model a later run of a session asks its provider for: the one the session recorded, but
/// never an external agent's name (recorded as the model of its sessions), which no provider has:
/// then the settings' own model judges, as in the session's first run.
pub fn model_to_ask<'a>(provider: &str, model: &'a str) -> Option<&'a str> {
    (provider != ACP_PROVIDER).then_some(model)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_later_run_of_an_agents_session_asks_for_the_configured_model_not_the_agents_name() {
        assert_eq!(super::model_to_ask("acp", "opencode"), None, "\"opencode\" is no model the evaluator's provider has");
        assert_eq!(super::model_to_ask("openai", "gpt-5"), Some("gpt-5"), "a built-in session keeps the model it ran with");
    }
}
