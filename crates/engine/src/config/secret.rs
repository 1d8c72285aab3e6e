//! Where provider keys come from, and where they never go. A key lives in the OS keychain
//! (through the `keyring` crate), in an environment variable, or in memory for this session only.
//! It is never written to the settings file, the history or an export; when no keychain service
//! exists (a headless Linux without a secret service) saving to it fails with a message that
//! offers the two other places, instead of quietly writing the key somewhere else. Values typed
//! into an MCP server's environment are secrets too, and live in the keychain the same way.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use serde::Serialize;

use crate::config::settings::{is_env_reference, McpServerSettings, ProviderSettings, Settings, IN_KEYCHAIN};
use crate::error::{Error, Result};
use crate::provider::ApiKey;

/// The keychain service name all of Finishline's entries live under.
pub const SERVICE: &str = "dev.finishline.app";

/// A place that keeps secrets across restarts. Behind a trait so that the engine's tests and
/// headless machines can use the in-memory one.
pub trait SecretStore: Send + Sync {
    fn get(&self, account: &str) -> Result<Option<String>>;
    fn set(&self, account: &str, secret: &str) -> Result<()>;
    fn delete(&self, account: &str) -> Result<()>;
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum KeychainStatus {
    Available,
    Unavailable { reason: String },
}

/// Where the key in use comes from; the UI shows it so the person knows which one is used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum KeySource {
    /// Typed into this session of the app; forgotten when it quits.
    Session,
    Keychain,
    Env {
        var: String,
    },
    /// No key anywhere; `var` is where one would be read from.
    Missing {
        var: String,
    },
}

/// Where to keep a key the person types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KeyPlace {
    Keychain,
    Session,
}

/// What the key section of Settings shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KeyStatus {
    pub source: KeySource,
    pub keychain: KeychainStatus,
    /// The variable that is read for this provider.
    pub env_var: String,
}

/// The operating system's keychain: Keychain on macOS, Credential Manager on Windows, the Secret
/// Service (GNOME Keyring, KWallet) on Linux.
pub struct OsKeychain {
    service: String,
}

impl OsKeychain {
    pub fn new(service: &str) -> Self {
        OsKeychain { service: service.to_string() }
    }

    fn entry(&self, account: &str) -> Result<keyring::Entry> {
        keyring::Entry::new(&self.service, account).map_err(unavailable)
    }
}

fn unavailable(e: keyring::Error) -> Error {
    let why = match &e {
        keyring::Error::PlatformFailure(inner) | keyring::Error::NoStorageAccess(inner) => inner.to_string(),
        other => other.to_string(),
    };
    Error::KeychainUnavailable(format!("No OS keychain is available here ({why}). Set the key in an environment variable, or use it for this session only."))
}

impl SecretStore for OsKeychain {
    fn get(&self, account: &str) -> Result<Option<String>> {
        match self.entry(account)?.get_password() {
            Ok(s) => Ok(Some(s)),
            Err(keyring::Error::NoEntry) => Ok(None),
            Err(e) => Err(unavailable(e)),
        }
    }

    fn set(&self, account: &str, secret: &str) -> Result<()> {
        self.entry(account)?.set_password(secret).map_err(unavailable)
    }

    fn delete(&self, account: &str) -> Result<()> {
        match self.entry(account)?.delete_credential() {
            Ok(()) | Err(keyring::Error::NoEntry) => Ok(()),
            Err(e) => Err(unavailable(e)),
        }
    }
}

/// A keychain that lives in memory: for tests, and for the session-only keys.
#[derive(Default)]
pub struct MemorySecrets(Mutex<HashMap<String, String>>);

impl SecretStore for MemorySecrets {
    fn get(&self, account: &str) -> Result<Option<String>> {
        Ok(self.0.lock().unwrap_or_else(|p| p.into_inner()).get(account).cloned())
    }
    fn set(&self, account: &str, secret: &str) -> Result<()> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).insert(account.to_string(), secret.to_string());
        Ok(())
    }
    fn delete(&self, account: &str) -> Result<()> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).remove(account);
        Ok(())
    }
}

/// All the places a key can be, in the order they are read: a session key, then the keychain,
/// then the environment variable.
pub struct Keys {
    keychain: Arc<dyn SecretStore>,
    session: MemorySecrets,
}

/// A throwaway account read to learn whether the keychain answers at all.
const PROBE: &str = "probe:availability";

impl Keys {
    pub fn new(keychain: Arc<dyn SecretStore>) -> Self {
        Keys { keychain, session: MemorySecrets::default() }
    }

    /// The OS keychain under Finishline's service name.
    pub fn os() -> Self {
        Keys::new(Arc::new(OsKeychain::new(SERVICE)))
    }

    pub fn keychain_status(&self) -> KeychainStatus {
        match self.keychain.get(PROBE) {
            Ok(_) => KeychainStatus::Available,
            Err(e) => KeychainStatus::Unavailable { reason: e.to_string() },
        }
    }

    /// The key to use for this provider, and where it came from.
    pub fn resolve(&self, provider: &ProviderSettings) -> (Option<ApiKey>, KeySource) {
        let account = provider.key_account();
        if let Some(k) = self.session.get(&account).ok().flatten().and_then(ApiKey::new) {
            return (Some(k), KeySource::Session);
        }
        if let Some(k) = self.keychain.get(&account).ok().flatten().and_then(ApiKey::new) {
            return (Some(k), KeySource::Keychain);
        }
        let var = provider.key_env();
        match std::env::var(&var).ok().and_then(ApiKey::new) {
            Some(k) => (Some(k), KeySource::Env { var }),
            None => (None, KeySource::Missing { var }),
        }
    }

    pub fn status(&self, provider: &ProviderSettings) -> KeyStatus {
        KeyStatus { source: self.resolve(provider).1, keychain: self.keychain_status(), env_var: provider.key_env() }
    }

    /// Keeps a typed key. Saving to a keychain that is not there is an error that says what to
    /// do instead; it never falls back to anywhere else.
    pub fn save(&self, provider: &ProviderSettings, key: &str, place: KeyPlace) -> Result<KeySource> {
        let key = key.trim();
        if key.is_empty() {
            return Err(Error::InvalidInput("the key is empty; paste the whole key".into()));
        }
        if key.len() > 4096 || key.chars().any(|c| c.is_control() || c.is_whitespace()) {
            return Err(Error::InvalidInput("that does not look like an API key (it has spaces, line breaks or is over 4 KB)".into()));
        }
        let account = provider.key_account();
        match place {
            KeyPlace::Keychain => {
                self.keychain.set(&account, key)?;
                // A session key would shadow the one just saved.
                self.session.delete(&account)?;
                Ok(KeySource::Keychain)
            }
            KeyPlace::Session => {
                self.session.set(&account, key)?;
                Ok(KeySource::Session)
            }
        }
    }

    /// Moves every value typed into an MCP server's environment into the keychain, leaving
    /// [`IN_KEYCHAIN`] in the settings, so the settings file never holds one. Without a keychain
    /// the settings are refused with what to do instead; nothing is written anywhere else.
    pub fn keep_mcp_secrets(&self, settings: &mut Settings) -> Result<()> {
        for server in &mut settings.mcp_servers {
            let literals: Vec<(String, String)> = server.literal_env().map(|(k, v)| (k.clone(), v.clone())).collect();
            for (var, value) in literals {
                self.keychain.set(&server.env_account(&var), &value).map_err(|e| match e {
                    Error::KeychainUnavailable(why) => Error::KeychainUnavailable(format!(
                        "{why}. The value of {var} for the MCP server “{}” is a secret and is never written to the settings file: write ${{{var}}} instead and set {var} in Finishline's environment",
                        server.name
                    )),
                    other => other,
                })?;
                server.env.insert(var, IN_KEYCHAIN.to_string());
            }
        }
        Ok(())
    }

    /// Moves each key typed into the external agent's environment (a value whose name says it is
    /// a secret: `GEMINI_API_KEY=…`, `*_TOKEN`) into the keychain, for that agent alone, leaving
    /// [`IN_KEYCHAIN`] in the settings. Other values (`CODEX_HOME=…`) are settings and stay, as do
    /// `${VAR}` references. An agent renamed since `before` (another command) takes its keys along.
    pub fn keep_agent_secrets(&self, settings: &mut Settings, before: &Settings) -> Result<()> {
        let Some(agent) = settings.agent.as_mut() else { return Ok(()) };
        if let Some(old) = before.agent.as_ref().filter(|old| old.name != agent.name) {
            for (var, _) in agent.env.iter().filter(|(k, v)| v.as_str() == IN_KEYCHAIN && old.env.get(*k).is_some_and(|o| o == IN_KEYCHAIN)) {
                if let (Ok(None), Ok(Some(value))) = (self.keychain.get(&agent_account(&agent.name, var)), self.keychain.get(&agent_account(&old.name, var))) {
                    self.keychain.set(&agent_account(&agent.name, var), &value)?;
                }
            }
        }
        let literals: Vec<(String, String)> = agent
            .env
            .iter()
            .filter(|(k, v)| crate::tool::command::is_secret_var(k) && !v.trim().is_empty() && !is_env_reference(v) && v.as_str() != IN_KEYCHAIN)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        for (var, value) in literals {
            self.keychain.set(&agent_account(&agent.name, &var), &value).map_err(|e| match e {
                Error::KeychainUnavailable(why) => Error::KeychainUnavailable(format!(
                    "{why}. The value of {var} for {} is kept as a secret and never written to the settings file: write ${{{var}}} instead and set {var} in Finishline's environment",
                    agent.name
                )),
                other => other,
            })?;
            agent.env.insert(var, IN_KEYCHAIN.to_string());
        }
        Ok(())
    }

    /// The keychain's values for the servers' environments, by (server, variable).
    pub fn mcp_env(&self, servers: &[McpServerSettings]) -> BTreeMap<(String, String), String> {
        let mut out = BTreeMap::new();
        for server in servers {
            for (var, _) in server.env.iter().filter(|(_, v)| v.as_str() == IN_KEYCHAIN) {
                if let Ok(Some(value)) = self.keychain.get(&server.env_account(var)) {
                    out.insert((server.name.clone(), var.clone()), value);
                }
            }
        }
        out
    }

    /// Keeps a key an agent asked for (its login) in the keychain, for that agent only, and
    /// records the variable's name in the settings. Without a keychain nothing is written: the
    /// person is told to give the agent the variable another way.
    pub fn save_agent_key(&self, settings: &mut Settings, agent: &str, var: &str, key: &str) -> Result<()> {
        let key = key.trim();
        if key.is_empty() {
            return Err(Error::InvalidInput(format!("the key for {var} is empty")));
        }
        self.keychain.set(&agent_account(agent, var), key).map_err(|e| match e {
            Error::KeychainUnavailable(why) => Error::KeychainUnavailable(format!(
                "{why}. The key is never written to the settings file: set {var} in Finishline's environment and give it to the agent in Settings → Agent as {var}=${{{var}}}"
            )),
            other => other,
        })?;
        let vars = settings.agent_keys.entry(agent.to_string()).or_default();
        if !vars.iter().any(|v| v == var) {
            vars.push(var.to_string());
        }
        Ok(())
    }

    /// The keys the keychain keeps for this agent, by variable (given to its process only): those
    /// a login saved, and those typed into its environment in Settings.
    pub fn agent_secrets(&self, settings: &Settings, agent: &str) -> BTreeMap<String, String> {
        let typed = settings.agent.iter().filter(|a| a.name == agent).flat_map(|a| a.env.iter().filter(|(_, v)| v.as_str() == IN_KEYCHAIN).map(|(k, _)| k));
        settings
            .agent_keys
            .get(agent)
            .into_iter()
            .flatten()
            .chain(typed)
            .filter_map(|var| self.keychain.get(&agent_account(agent, var)).ok().flatten().map(|v| (var.clone(), v)))
            .collect()
    }

    /// Forgets the key typed for this provider, in the session and in the keychain. The
    /// environment variable is the person's own and is left alone.
    pub fn forget(&self, provider: &ProviderSettings) -> Result<()> {
        let account = provider.key_account();
        self.session.delete(&account)?;
        match self.keychain.delete(&account) {
            Ok(()) | Err(Error::KeychainUnavailable(_)) => Ok(()),
            Err(e) => Err(e),
        }
    }
}

fn agent_account(agent: &str, var: &str) -> String {
    format!("agent-env:{agent}:{var}")
}
