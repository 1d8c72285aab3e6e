//! Where a provider is and how it is spoken to: its protocol, base URL, model and the name of
//! the variable holding its key (never the key). Part of the person's settings, defined here so
//! the provider layer depends on nothing above it.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProviderKind {
    /// OpenAI-compatible Chat Completions: OpenAI, xAI, Ollama, LM Studio, llama.cpp, vLLM, …
    #[default]
    Openai,
    /// OpenAI's Responses API (`/responses`), for OpenAI's models and servers that speak only it.
    #[serde(rename = "openai_responses", alias = "openai-responses")]
    OpenaiResponses,
    Anthropic,
    Gemini,
}

impl ProviderKind {
    /// The name sessions record as their provider, as the CLI's `--provider` spells it.
    pub fn name(self) -> String {
        match self {
            ProviderKind::Openai => "openai",
            ProviderKind::OpenaiResponses => "openai-responses",
            ProviderKind::Anthropic => "anthropic",
            ProviderKind::Gemini => "gemini",
        }
        .to_string()
    }

    /// Whether a session recorded as running on `recorded` ran on this kind.
    pub fn recorded_as(self, recorded: &str) -> bool {
        current_name(recorded) == self.name()
    }
}

/// A session's recorded provider as this version spells it: sessions made before the name was
/// spelt as the flag spells it recorded the Responses API as `openairesponses`.
pub fn current_name(recorded: &str) -> &str {
    if recorded == "openairesponses" {
        "openai-responses"
    } else {
        recorded
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ProviderSettings {
    /// The preset this was filled from (`openai`, `ollama`, …, `custom`); it names the key's
    /// keychain entry, so each provider keeps its own key.
    pub preset: Option<String>,
    pub kind: ProviderKind,
    pub base_url: String,
    pub model: String,
    /// Name of an environment variable holding the key; the key itself is never stored here.
    pub api_key_env: Option<String>,
}

impl ProviderSettings {
    /// The environment variable that holds the key: the one named in settings, else the
    /// protocol's usual one (xAI's for an x.ai base URL).
    pub fn key_env(&self) -> String {
        if let Some(v) = self.api_key_env.as_ref().filter(|v| !v.trim().is_empty()) {
            return v.trim().to_string();
        }
        match self.kind {
            ProviderKind::Openai if self.base_url.contains("x.ai") => "XAI_API_KEY",
            ProviderKind::Openai if self.base_url.contains("openrouter.ai") => "OPENROUTER_API_KEY",
            ProviderKind::Openai if self.base_url.contains("groq.com") => "GROQ_API_KEY",
            ProviderKind::Openai | ProviderKind::OpenaiResponses => "OPENAI_API_KEY",
            ProviderKind::Anthropic => "ANTHROPIC_API_KEY",
            ProviderKind::Gemini => "GEMINI_API_KEY",
        }
        .to_string()
    }

    /// The keychain entry that holds this provider's key: one per preset, so switching between
    /// providers keeps each key.
    pub fn key_account(&self) -> String {
        let id = self.preset.as_deref().map(str::trim).filter(|p| !p.is_empty()).unwrap_or(match self.kind {
            ProviderKind::Openai | ProviderKind::OpenaiResponses => "custom",
            ProviderKind::Anthropic => "anthropic",
            ProviderKind::Gemini => "gemini",
        });
        format!("provider:{id}")
    }
}

#[cfg(test)]
mod tests {
    use super::ProviderKind;

    #[test]
    fn a_session_recorded_under_the_old_name_of_the_responses_api_is_still_of_that_kind() {
        assert_eq!(ProviderKind::OpenaiResponses.name(), "openai-responses");
        assert!(ProviderKind::OpenaiResponses.recorded_as("openairesponses"), "a session of an earlier version");
        assert!(ProviderKind::OpenaiResponses.recorded_as("openai-responses"));
        assert!(!ProviderKind::Openai.recorded_as("openairesponses"), "Chat Completions is another protocol");
    }
}
