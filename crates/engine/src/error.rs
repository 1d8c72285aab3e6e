//! Errors as every front end shows them: a stable machine `code` the UI and CLI branch on, and a
//! `message` written for the person, saying what to fix.

use serde::{Serialize, Serializer};

/// The stable codes. The UI never matches on message text, only on these.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    InvalidSettings,
    SettingsUnreadable,
    Io,
    Internal,
}

impl ErrorCode {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidSettings => "invalid_settings",
            ErrorCode::SettingsUnreadable => "settings_unreadable",
            ErrorCode::Io => "io",
            ErrorCode::Internal => "internal",
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{field}: {problem}")]
    InvalidSettings { field: &'static str, problem: String },
    #[error("the settings file could not be read ({0}); fix or delete it, your other data is untouched")]
    SettingsUnreadable(String),
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("{0}")]
    Internal(String),
}

impl Error {
    pub fn code(&self) -> ErrorCode {
        match self {
            Error::InvalidSettings { .. } => ErrorCode::InvalidSettings,
            Error::SettingsUnreadable(_) => ErrorCode::SettingsUnreadable,
            Error::Io(_) => ErrorCode::Io,
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
