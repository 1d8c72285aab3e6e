//! The one way from the person's settings to an [`EngineConfig`]. The desktop app and the CLI
//! both call [`engine_config`]; the CLI's flags are applied to the settings first, so the two
//! front ends cannot assemble a run differently.

use std::path::PathBuf;
use std::sync::Arc;

use super::{EngineConfig, ModelEndpoint, PermissionPolicy};
use crate::config::settings::{ProviderSettings, Settings};
use crate::error::{Error, Result};
use crate::judge::completion::CompletionConfig;
use crate::mcp::McpServers;
use crate::provider::{ApiKey, ProviderConfig, RetryPolicy};

/// What the settings cannot say: where data lives, which workspace, and the front end's own
/// choices (a model for this task, a person at a terminal or not, extra verify commands).
pub struct ConfigContext<'a> {
    pub data_dir: PathBuf,
    pub workspace: &'a str,
    /// This task's model instead of the settings' model.
    pub model: Option<&'a str>,
    pub mcp: Option<Arc<McpServers>>,
    /// With nobody to ask (a CLI without a terminal), what would ask is denied.
    pub nobody_to_ask: bool,
    /// `--allow all`.
    pub allow_all: bool,
    /// Commands that verify work, beside the workspace's own from the settings.
    pub extra_verify: Vec<String>,
}

/// Where tasks work and how they land, from the settings; the app shares one set of slots
/// between all its engines, so the limit counts every task it runs.
#[derive(Clone)]
pub struct TaskPolicy {
    pub isolation: crate::domain::Isolation,
    /// The folder task worktrees are made in.
    pub worktrees: PathBuf,
    /// Untracked files a worktree gets from the person's checkout (gitignore syntax).
    pub includes: Vec<String>,
    pub landing: crate::domain::LandingMode,
    /// The most attempts one task may have side by side.
    pub max_attempts: u32,
    /// How many tasks run at once; `None`: no limit (the CLI runs one task).
    pub slots: Option<Arc<super::queue::TaskSlots>>,
}

impl TaskPolicy {
    /// The defaults, with worktrees in `data_dir`.
    pub fn new(data_dir: &std::path::Path) -> TaskPolicy {
        TaskPolicy::from_settings(&crate::config::settings::TaskSettings::default(), data_dir)
    }

    pub fn from_settings(t: &crate::config::settings::TaskSettings, data_dir: &std::path::Path) -> TaskPolicy {
        let dir = t.worktree_dir.trim();
        TaskPolicy {
            isolation: t.isolation,
            // Absolute: git runs inside the worktree, and the start-up sweep compares folders.
            worktrees: std::path::absolute(if dir.is_empty() { data_dir.join("worktrees") } else { PathBuf::from(dir) })
                .unwrap_or_else(|_| data_dir.join("worktrees")),
            includes: t.worktree_include.clone(),
            landing: t.landing,
            max_attempts: t.max_attempts.max(1),
            slots: None,
        }
    }
}

/// Where the front end finds a provider's key (session keys, the OS keychain, the environment).
pub type KeyLookup<'a> = &'a dyn Fn(&ProviderSettings) -> Option<ApiKey>;

/// The agent's endpoint and the evaluator's (its own provider and model when set).
pub fn endpoints(settings: &Settings, model: Option<&str>, key_for: KeyLookup<'_>) -> Result<(ModelEndpoint, Option<ModelEndpoint>)> {
    let p = &settings.provider;
    if p.base_url.trim().is_empty() {
        return Err(Error::InvalidSettings { field: "provider", problem: "set up a provider (base URL and model) in Settings first".into() });
    }
    let model = model.map(str::trim).filter(|m| !m.is_empty()).unwrap_or(p.model.trim());
    if model.is_empty() {
        return Err(Error::InvalidSettings { field: "provider.model", problem: "no model: pick one in Settings (Test connection lists them)".into() });
    }
    let agent = ModelEndpoint::http(ProviderConfig::new(p.kind, p.base_url.trim(), key_for(p)), model)?;
    let evaluator_model = settings.evaluator_model.as_deref().map(str::trim).filter(|m| !m.is_empty());
    let evaluator = match &settings.evaluator_provider {
        Some(ep) => {
            let m = evaluator_model.unwrap_or(ep.model.trim());
            Some(ModelEndpoint::http(ProviderConfig::new(ep.kind, ep.base_url.trim(), key_for(ep)), m)?)
        }
        None => evaluator_model.map(|m| ModelEndpoint { model: m.to_string(), ..agent.clone() }),
    };
    Ok((agent, evaluator))
}

/// The model a later run of a session asks for: the one the session recorded, while the settings
/// still name the same kind of provider (a model of one provider is not asked of another) and it
/// is a model at all (an external agent's name is recorded as the model of its sessions); else
/// `None`, the settings' own model.
pub fn session_model<'a>(settings: &Settings, provider: &str, model: &'a str) -> Option<&'a str> {
    crate::external::model_to_ask(provider, model).filter(|_| settings.provider.kind.recorded_as(provider))
}

/// Every configured key variable (the provider's, the evaluator's, a custom one): kept out of
/// commands and MCP servers, beside the names that look secret.
pub fn hidden_env(settings: &Settings) -> Vec<String> {
    let mut names = vec![settings.provider.key_env()];
    if let Some(ep) = &settings.evaluator_provider {
        names.push(ep.key_env());
    }
    names.dedup();
    names
}

/// The MCP servers the settings enable, with the one environment policy and the values the
/// keychain keeps for them; `None` when none is enabled.
pub fn mcp_servers(settings: &Settings, keys: &crate::config::secret::Keys) -> Option<std::sync::Arc<crate::mcp::McpServers>> {
    owned_mcp_servers(settings, keys, None)
}

/// The same, their process groups owned by `processes` (the front end's), so SIGTERM, a quit or
/// the next start after a crash ends them.
pub fn owned_mcp_servers(
    settings: &Settings,
    keys: &crate::config::secret::Keys,
    processes: Option<std::sync::Arc<crate::process_groups::ProcessGroups>>,
) -> Option<std::sync::Arc<crate::mcp::McpServers>> {
    let enabled: Vec<_> = settings.mcp_servers.iter().filter(|m| m.enabled).cloned().collect();
    if enabled.is_empty() {
        return None;
    }
    let env = crate::mcp::ServerEnv { hidden: hidden_env(settings), stored: keys.mcp_env(&enabled), processes };
    Some(crate::mcp::McpServers::new(enabled, env))
}

/// The run configuration for a task in `ctx.workspace`.
pub fn engine_config(settings: &Settings, ctx: ConfigContext<'_>, agent: ModelEndpoint, evaluator: Option<ModelEndpoint>) -> EngineConfig {
    let l = &settings.limits;
    let mut verify_commands = settings.verify_commands_for(ctx.workspace);
    let mut extra_verify: Vec<String> = Vec::new();
    // Every command given for the task is recorded as its own, even one the settings list too:
    // the task's own must pass even when nothing changed (completion row 17).
    for c in ctx.extra_verify {
        if !extra_verify.contains(&c) {
            if !verify_commands.contains(&c) {
                verify_commands.push(c.clone());
            }
            extra_verify.push(c);
        }
    }
    let secret_env = hidden_env(settings);
    let context_window = settings.context_window_for(&agent.model) as u64;
    // The manager plans on the evaluator's provider, with its own model when one is set.
    let manager = settings
        .manager_model
        .as_deref()
        .map(str::trim)
        .filter(|m| !m.is_empty())
        .map(|m| ModelEndpoint { model: m.to_string(), ..evaluator.clone().unwrap_or_else(|| agent.clone()) });
    EngineConfig {
        manager,
        data_dir: ctx.data_dir.clone(),
        completion: CompletionConfig {
            max_steps: l.max_steps,
            continuation_budget: l.continuation_budget,
            truncation_cap: l.truncation_cap,
            min_output_tokens: l.short_stop_tokens as u64,
            marker: Some(settings.completion.marker.trim().to_string()).filter(|m| !m.is_empty()),
            require_complete_task: settings.completion.require_complete_task,
        },
        retry: RetryPolicy { max_retries: l.max_retries, ..Default::default() },
        permissions: PermissionPolicy {
            overrides: settings.permissions.iter().map(|(t, p)| (t.clone(), (*p).into())).collect(),
            allow_all: ctx.allow_all,
            nobody_to_ask: ctx.nobody_to_ask,
            continue_after_denial: settings.completion.continue_after_denial,
        },
        verify_commands,
        extra_verify,
        task_allowed: vec![],
        context_window,
        // Only where it costs nothing: a local server answers at once; a cloud provider's
        // windows are known and would add a round trip before every first step.
        learn_context_window: !settings.context_windows.contains_key(&agent.model) && crate::provider::is_local_url(&settings.provider.base_url),
        max_output_tokens: Some(l.max_output_tokens),
        step_limit: std::time::Duration::from_secs(l.step_timeout_secs as u64),
        runaway: crate::judge::runaway::RunawayConfig { repeats: l.repeat_threshold as usize, ..Default::default() },
        checkpoint_max_file: l.checkpoint_max_file_mb as u64 * 1024 * 1024,
        auto_approve: settings.auto_approve,
        review_plan: !settings.run_plans_without_review,
        secret_env,
        prices: settings.prices.clone(),
        mcp: ctx.mcp,
        external: settings.agent.clone(),
        // The front end sets it: only it knows how to run itself as the pipe.
        claims_pipe: None,
        tasks: TaskPolicy::from_settings(&settings.tasks, &ctx.data_dir),
        processes: crate::process_groups::ProcessGroups::in_data_dir(&ctx.data_dir),
        agent_secrets: Default::default(),
        agent,
        evaluator,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_later_run_asks_for_the_sessions_model_only_of_the_same_kind_of_provider() {
        let mut settings = Settings::default();
        settings.provider.kind = crate::provider::settings::ProviderKind::Openai;
        assert_eq!(session_model(&settings, "openai", "qwen3"), Some("qwen3"), "a session keeps the model it ran with");
        assert_eq!(session_model(&settings, "acp", "opencode"), None, "an agent's name is no model");
        settings.provider.kind = crate::provider::settings::ProviderKind::Anthropic;
        assert_eq!(session_model(&settings, "openai", "qwen3"), None, "Anthropic is not asked for a model of another provider");
    }
}
