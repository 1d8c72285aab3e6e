//! What the person configured: settings (never a secret), provider presets, and where keys come
//! from. Read by every front end from the same file; nothing here runs a model or a tool.
//!
//! - [`settings`]: the settings file's shape, defaults and validation;
//! - [`preset`]: one-click provider presets;
//! - [`secret`]: keys in the OS keychain, the environment or memory, and never on disk;
//! - [`check_provider`]: Test connection, for the provider settings as typed.

pub mod preset;
pub mod secret;
pub mod settings;

/// Test connection with the settings as typed and the key from wherever it is kept.
pub async fn check_provider(
    settings: &crate::provider::settings::ProviderSettings,
    key: Option<crate::provider::ApiKey>,
) -> crate::Result<crate::provider::ConnectionReport> {
    let base = settings.base_url.trim();
    if base.is_empty() {
        return Err(crate::Error::InvalidSettings { field: "provider.base_url", problem: "type the provider's base URL, or pick a preset".into() });
    }
    let provider = crate::provider::HttpProvider::new(crate::provider::ProviderConfig::new(settings.kind, base, key)).map_err(crate::Error::Provider)?;
    crate::provider::check_connection(&provider, &settings.model).await.map_err(crate::Error::Provider)
}
