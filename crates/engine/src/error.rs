//! Errors as every front end shows them: a stable machine `code` the UI and CLI branch on, and a
//! `message` written for the person, saying what to fix.

use serde::{Deserialize, Serialize, Serializer};

/// The stable codes. The UI never matches on message text, only on these; the same codes travel
/// on errors returned by commands and on a session's `error` events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    InvalidSettings,
    SettingsUnreadable,
    Io,
    Storage,
    DiskFull,
    ReadOnly,
    NotFound,
    AlreadyDecided,
    LeaseHeld,
    InvalidInput,
    /// The provider refused the key (401/403). `auth`, as the CLI's contract names it; events
    /// stored before say `provider_auth`.
    #[serde(rename = "auth", alias = "provider_auth")]
    ProviderAuth,
    /// Nothing answered at the base URL.
    ProviderUnreachable,
    /// Something answered, but not the API the settings name (404, not JSON).
    ProviderNotFound,
    /// Any other provider failure.
    Provider,
    /// The provider answered with something the protocol does not allow or we do not know.
    ProviderProtocol,
    /// The conversation does not fit the model's context window.
    ContextTooLong,
    /// No OS keychain service here; the message offers the alternatives.
    KeychainUnavailable,
    /// An MCP server failed to start, list its tools or answer.
    Mcp,
    /// The model answers with raw chat-template tokens: a base model, or a server template that
    /// does not match it.
    ChatTemplate,
    /// A step ran past the step time limit.
    StepTimeout,
    /// An external (ACP) agent could not be started, broke the protocol or exited mid-turn.
    ExternalAgent,
    /// An external agent needs the person to log in first.
    ExternalAgentAuth,
    /// Another task works in place in the same folder right now; the message names it and the
    /// choices (run anyway, queue after it).
    WorkspaceBusy,
    /// Another task's changes in the same plain folder wait for the person's review: a second
    /// task there asks first (run it anyway, or decide that one first); no queue to wait in.
    WorkspaceUndecided,
    /// The task's worktree could not be made, or git refused what the task needed of it.
    Worktree,
    /// The repository a task's worktree belongs to moved away (renamed, moved or deleted): no
    /// decision that needs it can act until it is back. Its own code, so the window can say it
    /// once beside the landing it stopped, not again for every button.
    RepositoryGone,
    /// Snapshots of the workspace are off or failed: review and revert cover less (the run goes on).
    Checkpoints,
    /// Plan mode could not plan or revise; the task runs or ends with what it has.
    Plan,
    /// A code this version does not know (written by a newer one) reads as internal.
    #[serde(other)]
    Internal,
}

impl ErrorCode {
    /// Every code, for the checks that the UI's list and the wire names agree.
    pub const ALL: &'static [ErrorCode] = &[
        ErrorCode::InvalidSettings,
        ErrorCode::SettingsUnreadable,
        ErrorCode::Io,
        ErrorCode::Storage,
        ErrorCode::DiskFull,
        ErrorCode::ReadOnly,
        ErrorCode::NotFound,
        ErrorCode::AlreadyDecided,
        ErrorCode::LeaseHeld,
        ErrorCode::InvalidInput,
        ErrorCode::ProviderAuth,
        ErrorCode::ProviderUnreachable,
        ErrorCode::ProviderNotFound,
        ErrorCode::Provider,
        ErrorCode::ProviderProtocol,
        ErrorCode::ContextTooLong,
        ErrorCode::KeychainUnavailable,
        ErrorCode::Mcp,
        ErrorCode::ChatTemplate,
        ErrorCode::StepTimeout,
        ErrorCode::ExternalAgent,
        ErrorCode::ExternalAgentAuth,
        ErrorCode::WorkspaceBusy,
        ErrorCode::WorkspaceUndecided,
        ErrorCode::Worktree,
        ErrorCode::RepositoryGone,
        ErrorCode::Checkpoints,
        ErrorCode::Plan,
        ErrorCode::Internal,
    ];

    /// The code a provider failure reaches the person with: a wrong key says so, not "provider".
    pub fn of_provider(kind: crate::provider::ProviderErrorKind) -> ErrorCode {
        use crate::provider::ProviderErrorKind as K;
        match kind {
            K::Auth => ErrorCode::ProviderAuth,
            K::Network => ErrorCode::ProviderUnreachable,
            K::NotFound | K::MalformedStream => ErrorCode::ProviderNotFound,
            K::ContextTooLong => ErrorCode::ContextTooLong,
            _ => ErrorCode::Provider,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidSettings => "invalid_settings",
            ErrorCode::SettingsUnreadable => "settings_unreadable",
            ErrorCode::Io => "io",
            ErrorCode::Storage => "storage",
            ErrorCode::DiskFull => "disk_full",
            ErrorCode::ReadOnly => "read_only",
            ErrorCode::NotFound => "not_found",
            ErrorCode::AlreadyDecided => "already_decided",
            ErrorCode::LeaseHeld => "lease_held",
            ErrorCode::InvalidInput => "invalid_input",
            ErrorCode::ProviderAuth => "auth",
            ErrorCode::ProviderUnreachable => "provider_unreachable",
            ErrorCode::ProviderNotFound => "provider_not_found",
            ErrorCode::Provider => "provider",
            ErrorCode::ProviderProtocol => "provider_protocol",
            ErrorCode::ContextTooLong => "context_too_long",
            ErrorCode::KeychainUnavailable => "keychain_unavailable",
            ErrorCode::Mcp => "mcp",
            ErrorCode::ChatTemplate => "chat_template",
            ErrorCode::StepTimeout => "step_timeout",
            ErrorCode::ExternalAgent => "external_agent",
            ErrorCode::ExternalAgentAuth => "external_agent_auth",
            ErrorCode::WorkspaceBusy => "workspace_busy",
            ErrorCode::WorkspaceUndecided => "workspace_undecided",
            ErrorCode::Worktree => "worktree",
            ErrorCode::RepositoryGone => "repository_gone",
            ErrorCode::Checkpoints => "checkpoints",
            ErrorCode::Plan => "plan",
            ErrorCode::Internal => "internal",
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{field}: {problem}")]
    InvalidSettings { field: &'static str, problem: String },
    #[error("the settings file could not be read ({0}): fix it or set it aside; your other data is untouched")]
    SettingsUnreadable(String),
    #[error("{}", io_words(.0))]
    Io(#[from] std::io::Error),
    #[error("{0}")]
    Storage(String),
    #[error("the disk is full, so nothing more can be saved ({0}); free some space, nothing saved so far is lost")]
    DiskFull(String),
    #[error("the history database is read-only ({0}); check the permissions of the data folder")]
    ReadOnly(String),
    #[error("{0} was not found")]
    NotFound(String),
    #[error("this was already decided: {0}")]
    AlreadyDecided(String),
    #[error("session {0} is running in another Finishline process")]
    LeaseHeld(String),
    #[error("{0}")]
    InvalidInput(String),
    #[error("{}", .0.message)]
    Provider(crate::provider::ProviderError),
    #[error("{0}")]
    KeychainUnavailable(String),
    #[error("{0}")]
    Mcp(String),
    /// An external agent could not be started or used (`external_agent`, `external_agent_auth`).
    #[error("{message}")]
    External { code: ErrorCode, message: String },
    #[error("{0}")]
    WorkspaceBusy(String),
    #[error("{0}")]
    WorkspaceUndecided(String),
    #[error("{0}")]
    Worktree(String),
    #[error("{0}")]
    RepositoryGone(String),
    #[error("{0}")]
    Internal(String),
}

impl From<rusqlite::Error> for Error {
    fn from(e: rusqlite::Error) -> Self {
        use rusqlite::ffi::ErrorCode as C;
        match e.sqlite_error_code() {
            Some(C::DiskFull) => Error::DiskFull(e.to_string()),
            Some(C::ReadOnly) | Some(C::CannotOpen) | Some(C::PermissionDenied) => Error::ReadOnly(e.to_string()),
            _ => Error::Storage(format!("the history database failed: {e}")),
        }
    }
}

impl Error {
    pub fn code(&self) -> ErrorCode {
        match self {
            Error::InvalidSettings { .. } => ErrorCode::InvalidSettings,
            Error::SettingsUnreadable(_) => ErrorCode::SettingsUnreadable,
            Error::Io(e) if full(e) => ErrorCode::DiskFull,
            Error::Io(_) => ErrorCode::Io,
            Error::Storage(_) => ErrorCode::Storage,
            Error::DiskFull(_) => ErrorCode::DiskFull,
            Error::ReadOnly(_) => ErrorCode::ReadOnly,
            Error::NotFound(_) => ErrorCode::NotFound,
            Error::AlreadyDecided(_) => ErrorCode::AlreadyDecided,
            Error::LeaseHeld(_) => ErrorCode::LeaseHeld,
            Error::InvalidInput(_) => ErrorCode::InvalidInput,
            Error::Provider(e) => ErrorCode::of_provider(e.kind),
            Error::KeychainUnavailable(_) => ErrorCode::KeychainUnavailable,
            Error::Mcp(_) => ErrorCode::Mcp,
            Error::External { code, .. } => *code,
            Error::WorkspaceBusy(_) => ErrorCode::WorkspaceBusy,
            Error::WorkspaceUndecided(_) => ErrorCode::WorkspaceUndecided,
            Error::Worktree(_) => ErrorCode::Worktree,
            Error::RepositoryGone(_) => ErrorCode::RepositoryGone,
            Error::Internal(_) => ErrorCode::Internal,
        }
    }
}

/// Errors cross IPC and `--json` as `{code, message}`.
impl Serialize for Error {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("Error", 2)?;
        st.serialize_field("code", &self.code())?;
        st.serialize_field("message", &self.to_string())?;
        st.end()
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A disk (or quota) that is full: the way forward is space, not a retry as it is.
fn full(e: &std::io::Error) -> bool {
    matches!(e.kind(), std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded | std::io::ErrorKind::FileTooLarge)
}

/// An I/O error's words, with the way forward where there is one: a revert that met a full disk
/// said only "No space left on device".
fn io_words(e: &std::io::Error) -> String {
    if full(e) {
        format!("the disk is full ({e}): free some space, then do it again")
    } else {
        e.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::ErrorCode;

    #[test]
    fn a_full_disk_met_anywhere_says_to_free_space_and_is_coded_so() {
        let e = super::Error::from(std::io::Error::from(std::io::ErrorKind::StorageFull));
        assert_eq!(e.code(), ErrorCode::DiskFull);
        assert!(e.to_string().contains("free some space, then do it again"), "{e}");
        let other = super::Error::from(std::io::Error::from(std::io::ErrorKind::PermissionDenied));
        assert_eq!((other.code(), other.to_string().contains("free")), (ErrorCode::Io, false));
    }

    #[test]
    fn a_refused_key_is_auth_and_events_stored_as_provider_auth_still_read() {
        assert_eq!(serde_json::to_value(ErrorCode::ProviderAuth).unwrap(), "auth");
        assert_eq!(ErrorCode::ProviderAuth.as_str(), "auth");
        assert_eq!(serde_json::from_str::<ErrorCode>("\"provider_auth\"").unwrap(), ErrorCode::ProviderAuth);
    }
}
