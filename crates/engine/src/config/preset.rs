//! One-click provider presets: the base URL, the protocol, the key's usual variable and a few
//! model hints for the providers people already use. Picking one fills the form; everything stays
//! editable, and Test connection lists the models the server really has.

use serde::Serialize;

use crate::config::settings::{ProviderKind, ProviderSettings};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ProviderPreset {
    /// Stable id, kept in the settings; it also names the key's keychain entry.
    pub id: &'static str,
    pub label: &'static str,
    pub kind: ProviderKind,
    pub base_url: &'static str,
    /// Suggestions only; the first is filled in. Empty where the server decides (local servers).
    pub models: &'static [&'static str],
    /// The environment variable the key is usually in; `None` for servers that take no key.
    pub key_env: Option<&'static str>,
    /// Runs on this machine: no key, no cost.
    pub local: bool,
    /// One line shown under the preset: what to start or where to get a key.
    pub hint: &'static str,
}

pub const PRESETS: &[ProviderPreset] = &[
    ProviderPreset {
        id: "openai",
        label: "OpenAI",
        kind: ProviderKind::Openai,
        base_url: "https://api.openai.com/v1",
        models: &["gpt-4.1", "gpt-4.1-mini", "gpt-4o-mini"],
        key_env: Some("OPENAI_API_KEY"),
        local: false,
        hint: "Key from platform.openai.com/api-keys",
    },
    ProviderPreset {
        id: "anthropic",
        label: "Anthropic",
        kind: ProviderKind::Anthropic,
        base_url: "https://api.anthropic.com/v1",
        models: &["claude-sonnet-4-5", "claude-opus-4-1", "claude-3-5-haiku-latest"],
        key_env: Some("ANTHROPIC_API_KEY"),
        local: false,
        hint: "Key from console.anthropic.com",
    },
    ProviderPreset {
        id: "gemini",
        label: "Google Gemini",
        kind: ProviderKind::Gemini,
        base_url: "https://generativelanguage.googleapis.com/v1beta",
        models: &["gemini-2.5-pro", "gemini-2.5-flash"],
        key_env: Some("GEMINI_API_KEY"),
        local: false,
        hint: "Key from aistudio.google.com",
    },
    ProviderPreset {
        id: "xai",
        label: "xAI",
        kind: ProviderKind::Openai,
        base_url: "https://api.x.ai/v1",
        models: &["grok-4", "grok-3-mini"],
        key_env: Some("XAI_API_KEY"),
        local: false,
        hint: "Key from console.x.ai",
    },
    ProviderPreset {
        id: "openrouter",
        label: "OpenRouter",
        kind: ProviderKind::Openai,
        base_url: "https://openrouter.ai/api/v1",
        models: &["anthropic/claude-sonnet-4.5", "openai/gpt-4.1-mini", "google/gemini-2.5-flash"],
        key_env: Some("OPENROUTER_API_KEY"),
        local: false,
        hint: "One key for many providers, from openrouter.ai/keys",
    },
    ProviderPreset {
        id: "groq",
        label: "Groq",
        kind: ProviderKind::Openai,
        base_url: "https://api.groq.com/openai/v1",
        models: &["llama-3.3-70b-versatile", "openai/gpt-oss-120b"],
        key_env: Some("GROQ_API_KEY"),
        local: false,
        hint: "Key from console.groq.com/keys",
    },
    ProviderPreset {
        id: "ollama",
        label: "Ollama",
        kind: ProviderKind::Openai,
        base_url: "http://localhost:11434/v1",
        models: &["qwen2.5-coder:7b", "llama3.1:8b"],
        key_env: None,
        local: true,
        hint: "Start it with `ollama serve`; pull a model that supports tools",
    },
    ProviderPreset {
        id: "lmstudio",
        label: "LM Studio",
        kind: ProviderKind::Openai,
        base_url: "http://localhost:1234/v1",
        models: &[],
        key_env: None,
        local: true,
        hint: "Start the local server in LM Studio's Developer tab",
    },
    ProviderPreset {
        id: "llamacpp",
        label: "llama.cpp server",
        kind: ProviderKind::Openai,
        base_url: "http://127.0.0.1:8080/v1",
        models: &[],
        key_env: None,
        local: true,
        hint: "Start `llama-server -m model.gguf --jinja`; change the port if yours differs",
    },
    ProviderPreset {
        id: "custom",
        label: "Custom (OpenAI-compatible)",
        kind: ProviderKind::Openai,
        base_url: "",
        models: &[],
        key_env: None,
        local: false,
        hint: "Any server that speaks OpenAI's Chat Completions API",
    },
];

pub fn preset(id: &str) -> Option<&'static ProviderPreset> {
    PRESETS.iter().find(|p| p.id == id)
}

impl ProviderPreset {
    /// The provider settings this preset fills in. The model is the first hint, or the one the
    /// person already typed when the preset has none.
    pub fn apply(&self, current: &ProviderSettings) -> ProviderSettings {
        ProviderSettings {
            preset: Some(self.id.to_string()),
            kind: self.kind,
            base_url: if self.base_url.is_empty() { current.base_url.clone() } else { self.base_url.to_string() },
            model: self.models.first().map(|m| m.to_string()).unwrap_or_else(|| current.model.clone()),
            api_key_env: self.key_env.map(str::to_string),
        }
    }
}
