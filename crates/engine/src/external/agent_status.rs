//! Settings → Agent → Check: for each agent, whether it is installed (and where, or how to
//! install it), its version, and whether it is logged in, by starting it and opening a session
//! as a run would, then letting it go.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde::Serialize;

use super::connection;
use super::login::LoginMethod;
use super::ExternalAgent;
use crate::error::ErrorCode;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AgentStatus {
    /// The agent's name (as sessions record it) and the person's name for it.
    pub agent: String,
    pub label: String,
    /// Where its program is; `None`: not installed here.
    pub found: Option<String>,
    /// The command that installs it, for a preset.
    pub install: Option<String>,
    /// Who answered, and its version.
    pub name: Option<String>,
    pub version: Option<String>,
    /// It can reopen an earlier session (`session/load`).
    pub load_session: bool,
    /// Logged in (it opened a session, and did not say nobody is logged in); `None`: not known
    /// (not installed, or it failed for another reason).
    pub logged_in: Option<bool>,
    /// What went wrong, or what to do to log in, in the agent's words.
    pub problem: Option<String>,
    /// The ways it offers to log in.
    pub login: Vec<LoginMethod>,
}

pub async fn status(agent: &ExternalAgent, cwd: &Path, timeout: Duration, secrets: &BTreeMap<String, String>) -> AgentStatus {
    let mut s = AgentStatus {
        agent: agent.name.clone(),
        label: agent.label(),
        found: agent.locate().map(|p| p.to_string_lossy().into_owned()),
        install: agent.install_hint().map(String::from),
        name: None,
        version: None,
        load_session: false,
        logged_in: None,
        problem: None,
        login: vec![],
    };
    if s.found.is_none() {
        return s;
    }
    match connection::check(agent, cwd, timeout, secrets).await {
        Ok(info) => {
            s.logged_in = Some(info.signed_in.unwrap_or(true));
            if s.logged_in == Some(false) {
                s.problem = Some(super::login::what_to_do(&s.label, "it says nobody is logged in", None, &info.login));
            }
            s.name = Some(info.name);
            s.version = info.version;
            s.load_session = info.load_session;
            s.login = info.login;
        }
        Err(f) if f.code == ErrorCode::ExternalAgentAuth => {
            if let Some((name, version)) = f.answered.clone() {
                s.name = Some(name);
                s.version = version;
            }
            s.logged_in = Some(false);
            s.problem = Some(f.message);
            s.login = f.login;
        }
        Err(f) => s.problem = Some(f.message),
    }
    s
}
