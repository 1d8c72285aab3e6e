//! External agents over the Agent Client Protocol (ACP): OpenCode, Gemini CLI, Claude Code,
//! Codex, goose or any other ACP agent does the work, and Finishline's completion engine judges
//! it exactly as it judges the built-in agent. The SDK (`agent-client-protocol`, pinned) stays
//! behind [`connection::AgentConnection`], as MCP stays behind `McpConnection`.
//!
//! - [`definition`]: which agents there are, how each starts, what to install when missing;
//! - [`update`]: ACP's `session/update` and stop reasons in Finishline's terms (pure);
//! - [`connection`]: the agent's process and the protocol session over its stdio.

pub mod auth_tap;
pub mod claims;
pub mod claims_pipe;
pub mod client_fs;
pub mod connection;
pub mod login;
pub mod login_run;
pub mod terminals;
pub mod definition;
pub mod update;

pub use definition::ExternalAgent;

/// The provider a session records when an external agent works on it; the model is its name.
pub const ACP_PROVIDER: &str = "acp";
