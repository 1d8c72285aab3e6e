//! Where the CLI gets its settings: flags first, then the desktop app's settings file, then the
//! environment. A missing provider or model is a configuration error (exit 2) with a message
//! that says what to pass.

use std::path::{Path, PathBuf};

use finishline_engine::agent::ModelEndpoint;
use finishline_engine::provider::ApiKey;
use finishline_engine::{ProviderKind, ProviderSettings, Settings};

use crate::{Common, RunOptions};

/// The desktop app's data folder (tauri's app_data_dir for our identifier), shared with the CLI.
pub fn default_data_dir() -> PathBuf {
    let base = std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| ".".into())).join(".local/share"));
    base.join("dev.finishline.app")
}

pub fn data_dir(common: &Common) -> PathBuf {
    let dir = common.data_dir.clone().unwrap_or_else(default_data_dir);
    // Absolute, so worktrees and checkpoints are the same folders from every command's cwd
    // (and from git, which runs in the worktree).
    let dir = std::path::absolute(&dir).unwrap_or(dir);
    if dir.exists() && !dir.is_dir() {
        // Else every command misreads it: "the settings file could not be read", "no history yet".
        let code = crate::run::fail(
            crate::exit::USAGE,
            common.json,
            &format!("--data-dir {} is a file, not a folder: name a folder (it is made if missing)", dir.display()),
        );
        std::process::exit(code.into());
    }
    if common.data_dir.is_some() {
        crate::hint::remember_data_dir(&dir);
    }
    dir
}

/// The app's settings, if its settings file exists. A broken file is an error, not a silent reset.
/// A key in it no setting takes (a typo made by hand, a newer version's setting) is named, once.
pub fn settings(data_dir: &Path) -> Result<Settings, String> {
    let file = data_dir.join(finishline_engine::config::settings::STORE_FILE);
    let (settings, unknown) = Settings::read_file_noting_unknown(&file).map_err(|e| match e {
        // The window sets the file aside with a button; here, the command that does the same.
        finishline_engine::Error::SettingsUnreadable(_) => {
            let shown = crate::hint::quoted(&file.to_string_lossy());
            format!("{e} (to set it aside and start from the default settings: mv {shown} {shown}.broken)")
        }
        e => e.to_string(),
    })?;
    static SAID: std::sync::Once = std::sync::Once::new();
    if !unknown.is_empty() {
        SAID.call_once(|| {
            let (them, are) = if unknown.len() == 1 { ("it", "is not a setting") } else { ("they", "are not settings") };
            crate::output::say(&format!(
                "finishline: {} {are} this version knows, in {}: {them} changed nothing (kept in the file; check the spelling)\n",
                unknown.join(", "),
                file.display()
            ));
        });
    }
    Ok(settings)
}

/// The settings with the flags applied, and the agent's key as the flags found it.
pub struct Resolved {
    pub key: Option<ApiKey>,
    pub settings: Settings,
}

pub fn resolve(opts: &RunOptions) -> Result<Resolved, String> {
    let settings = settings(&data_dir(&opts.common))?;
    let kind = opts.provider.as_deref().map(kind_named).unwrap_or(settings.provider.kind);
    let from_settings = opts.provider.is_none() || settings.provider.kind == kind;
    let base_url = opts
        .base_url
        .clone()
        .or_else(|| from_settings.then(|| settings.provider.base_url.clone()).filter(|u| !u.trim().is_empty()))
        .unwrap_or_else(|| default_base_url(kind).to_string());
    if url::Url::parse(&base_url).map(|u| !matches!(u.scheme(), "http" | "https")).unwrap_or(true) {
        // Said where the person put it: the flag, or the settings file.
        return Err(match opts.base_url {
            Some(_) => format!("--base-url {base_url} is not an http(s) URL"),
            None => format!(
                "provider.base_url in {}: “{base_url}” is not an http(s) URL (it should look like http://127.0.0.1:8080/v1); change it in the app's Settings or in that file, or pass --base-url",
                data_dir(&opts.common).join(finishline_engine::config::settings::STORE_FILE).display()
            ),
        });
    }
    if opts.model.as_deref().is_some_and(|m| m.trim().is_empty()) {
        return Err("--model is empty: name the model the server should run (--model NAME), or leave the flag out for the settings' model".into());
    }
    let model = opts
        .model
        .clone()
        .or_else(|| from_settings.then(|| settings.provider.model.clone()).filter(|m| !m.trim().is_empty()))
        .ok_or("no model: pass --model, or set one in the app's Settings")?;
    // The CLI's flag wins; otherwise the same places as the app, in the same order: the OS
    // keychain entry the app saved for this provider, then its environment variable.
    let provider = ProviderSettings {
        preset: from_settings.then(|| settings.provider.preset.clone()).flatten(),
        kind,
        base_url: base_url.clone(),
        api_key_env: settings.provider.api_key_env.clone(),
        model: model.clone(),
    };
    let (key, key_env) = match &opts.api_key_env {
        // Named on purpose: a local server may need no key, but then the flag would not be there.
        Some(var) => match std::env::var(var).ok().and_then(ApiKey::new) {
            Some(key) => (Some(key), Some(var.clone())),
            None => return Err(format!("--api-key-env {var}: that variable is not set (or is empty) in this shell; export it, or leave the flag out")),
        },
        None => (finishline_engine::config::secret::Keys::os().resolve(&provider).0, Some(provider.key_env())),
    };
    if key.is_none() && !finishline_engine::provider::is_loopback_url(&base_url) {
        return Err(format!(
            "no API key for {base_url}: set {} (or name another variable with --api-key-env). A local server on 127.0.0.1 needs none",
            key_env.as_deref().unwrap_or("the key variable")
        ));
    }
    let evaluator_model = opts.evaluator_model.clone().or_else(|| settings.evaluator_model.clone());
    let mut settings = settings;
    apply_flags(&mut settings, opts, &provider, evaluator_model.clone())?;
    settings.validate().map_err(|e| match e {
        // Said as the person gave it: a flag by its name, else where the settings file holds it.
        // The flag's window is for this run's model; another model's is the file's.
        finishline_engine::Error::InvalidSettings { field, problem } => {
            match flag_of(field, opts).filter(|_| field != "context_windows" || problem.contains(&format!("“{}”", settings.provider.model))) {
                Some(flag) => format!("{flag}: {problem}"),
                None => format!(
                    "{field} in {}: {problem}; change it in the app's Settings or in that file",
                    data_dir(&opts.common).join(finishline_engine::config::settings::STORE_FILE).display()
                ),
            }
        }
        e => e.to_string(),
    })?;
    Ok(Resolved { key, settings })
}

/// The flag that set a setting this run, if one did.
fn flag_of(field: &str, opts: &RunOptions) -> Option<&'static str> {
    match field {
        "limits.max_steps" => opts.max_steps.is_some().then_some("--max-steps"),
        "limits.step_timeout_secs" => opts.step_timeout.is_some().then_some("--step-timeout"),
        "limits.continuation_budget" => opts.continuation_budget.is_some().then_some("--continuation-budget"),
        "limits.truncation_cap" => opts.truncation_cap.is_some().then_some("--truncation-cap"),
        "limits.short_stop_tokens" => opts.short_stop_tokens.is_some().then_some("--short-stop-tokens"),
        "limits.max_output_tokens" => opts.max_output_tokens.is_some().then_some("--max-output-tokens"),
        "context_windows" => opts.context_window.is_some().then_some("--context-window"),
        "provider.base_url" => opts.base_url.is_some().then_some("--base-url"),
        "provider.model" => opts.model.is_some().then_some("--model"),
        "provider.api_key_env" => opts.api_key_env.is_some().then_some("--api-key-env"),
        "evaluator_model" => opts.evaluator_model.is_some().then_some("--evaluator-model"),
        "evaluator_provider.base_url" => opts.evaluator_base_url.is_some().then_some("--evaluator-base-url"),
        _ => None,
    }
}

/// The flags override the settings they name, so the engine is configured from one place.
fn apply_flags(settings: &mut Settings, opts: &RunOptions, provider: &ProviderSettings, evaluator_model: Option<String>) -> Result<(), String> {
    settings.provider = provider.clone();
    if let Some(var) = &opts.api_key_env {
        settings.provider.api_key_env = Some(var.clone());
    }
    settings.evaluator_model = evaluator_model;
    if let Some(m) = &opts.manager_model {
        settings.manager_model = Some(m.clone());
    }
    if opts.evaluator_base_url.is_some() || opts.evaluator_provider.is_some() {
        let kind =
            opts.evaluator_provider.as_deref().map(kind_named).unwrap_or(settings.evaluator_provider.as_ref().map(|p| p.kind).unwrap_or(ProviderKind::Openai));
        let base_url = opts
            .evaluator_base_url
            .clone()
            .or_else(|| settings.evaluator_provider.as_ref().map(|p| p.base_url.clone()))
            .ok_or("--evaluator-provider needs --evaluator-base-url (where the evaluator's server is)")?;
        let model = settings.evaluator_model.clone().ok_or("a separate evaluator needs --evaluator-model")?;
        settings.evaluator_provider = Some(ProviderSettings { preset: None, kind, base_url, model, api_key_env: None });
    }
    let l = &mut settings.limits;
    if let Some(v) = opts.max_steps {
        l.max_steps = v;
    }
    if let Some(v) = opts.step_timeout {
        l.step_timeout_secs = v;
    }
    if let Some(v) = opts.max_output_tokens {
        l.max_output_tokens = v;
    }
    if let Some(v) = opts.continuation_budget {
        l.continuation_budget = v;
    }
    if let Some(v) = opts.truncation_cap {
        l.truncation_cap = v;
    }
    if let Some(v) = opts.short_stop_tokens {
        l.short_stop_tokens = v;
    }
    if let Some(v) = opts.context_window {
        settings.context_windows.insert(provider.model.clone(), v);
    }
    match opts.review {
        crate::ReviewMode::Approve => settings.auto_approve = true,
        // A dry run: the app's auto-approve must not land what it was asked to reject.
        crate::ReviewMode::Reject => settings.auto_approve = false,
        crate::ReviewMode::Prompt => {}
    }
    if let Some(choice) = &opts.agent {
        settings.agent = finishline_engine::external::ExternalAgent::from_choice(choice);
    }
    Ok(())
}

/// The agent's and the evaluator's endpoints, through the engine's one builder.
pub fn endpoints(settings: &Settings, key_for: &dyn Fn(&ProviderSettings) -> Option<ApiKey>) -> Result<(ModelEndpoint, Option<ModelEndpoint>), String> {
    finishline_engine::agent::config::endpoints(settings, None, key_for).map_err(|e| e.to_string())
}

/// For a command on a session (resume, review): its own folder, and the server it ran with when
/// the command names none (see [`with_endpoint_of`]). The history is opened once for both.
pub fn for_session(opts: RunOptions, id: &str) -> RunOptions {
    let Some(store) = history(&opts) else { return opts };
    let sid = finishline_engine::domain::SessionId(id.to_string());
    let opts = in_folder_of(opts, &store, &sid);
    with_endpoint_of(opts, &store, &sid)
}

/// [`for_session`] for a group of attempts: the folder they were started in and, for a command
/// that asks a model (`--compare`) and names no server, the server and model of the group's
/// first attempt by Finishline's own agent.
pub fn for_group(opts: RunOptions, group: &str, compare: bool) -> RunOptions {
    let Some(store) = history(&opts) else { return opts };
    let Ok(attempts) = finishline_engine::agent::attempts::group_attempts(&store, &finishline_engine::domain::GroupId(group.to_string())) else {
        return opts;
    };
    let mut opts = match attempts.first() {
        Some(a) => in_folder_of(opts, &store, &a.id),
        None => opts,
    };
    if !compare || opts.base_url.is_some() || opts.provider.is_some() || opts.agent.is_some() {
        return opts;
    }
    for a in &attempts {
        opts = with_endpoint_of(opts, &store, &a.id);
        if opts.base_url.is_some() {
            break;
        }
    }
    opts
}

fn history(opts: &RunOptions) -> Option<finishline_engine::store::Store> {
    let clock = std::sync::Arc::new(finishline_engine::clock::SystemClock);
    finishline_engine::store::Store::open(&data_dir(&opts.common).join("history.db"), clock).ok()
}

/// The provider `--provider` (or `--evaluator-provider`) names; clap has checked it is one of these.
fn kind_named(name: &str) -> ProviderKind {
    match name {
        "anthropic" => ProviderKind::Anthropic,
        "gemini" => ProviderKind::Gemini,
        "openai-responses" => ProviderKind::OpenaiResponses,
        _ => ProviderKind::Openai,
    }
}

/// A command on a session works in the session's own folder, wherever it is typed (the commands
/// Finishline prints carry no `--workspace`): its settings for that folder (the verify commands)
/// are the ones that apply, not those of the folder the person stands in.
fn in_folder_of(mut opts: RunOptions, store: &finishline_engine::store::Store, sid: &finishline_engine::domain::SessionId) -> RunOptions {
    if let Ok(session) = store.session(sid) {
        opts.workspace = session.workspace.into();
    }
    opts.on_session = true;
    opts
}

/// For a command on a session the built-in agent worked on that names no server, with no model
/// in the settings either: the provider, server and model (unless one is named) the session was
/// started with, so that the commands Finishline suggests work as printed. Only a server on this
/// machine or the provider's own: the key comes from the keychain or the environment as for any
/// run, and the variable the session's key came from is not known, so another server could be
/// sent a key that is not its own.
fn with_endpoint_of(mut opts: RunOptions, store: &finishline_engine::store::Store, sid: &finishline_engine::domain::SessionId) -> RunOptions {
    let created = store.events(sid, 0).ok().and_then(|events| {
        events.into_iter().find_map(|e| match e.event {
            finishline_engine::event::EngineEvent::SessionCreated { provider, model, base_url: Some(url), .. } => Some((provider, model, url)),
            _ => None,
        })
    });
    let Some((provider, model, url)) = created else { return opts };
    // The model it works with now: one switched to since (`--model` on a resume) is the session's.
    let model = store.session(sid).map(|s| s.model).unwrap_or(model);
    // `--provider` naming the protocol the session already speaks names no other server.
    let same_provider = opts.provider.as_deref().is_some_and(|p| kind_named(p).recorded_as(&provider));
    if opts.base_url.is_some() || (opts.provider.is_some() && !same_provider) || opts.agent.is_some() {
        // Another server for the same session: the model it ran with, unless one is named (a
        // provider named is another family of models, whose model must be named too).
        if opts.provider.is_none() && opts.agent.is_none() && opts.model.is_none() {
            opts.model = Some(model);
        }
        return opts;
    }
    // The settings' model and server, as for any run; not when `--provider` named the session's
    // protocol and the settings speak another (the protocol's public API is no server of its).
    if settings(&data_dir(&opts.common)).is_ok_and(|s| !s.provider.model.trim().is_empty() && (!same_provider || s.provider.kind.recorded_as(&provider))) {
        return opts;
    }
    // An external agent's session records the agent, not a server.
    let kinds = [ProviderKind::Openai, ProviderKind::OpenaiResponses, ProviderKind::Anthropic, ProviderKind::Gemini];
    let Some(kind) = kinds.into_iter().find(|k| k.recorded_as(&provider)) else { return opts };
    let own = default_base_url(kind).trim_end_matches('/') == url.trim_end_matches('/');
    if !own && !finishline_engine::provider::is_loopback_url(&url) {
        return opts;
    }
    opts.provider = Some(kind.name());
    opts.base_url = Some(url);
    opts.model = opts.model.or(Some(model));
    opts
}

/// Where a provider's own API is.
fn default_base_url(kind: ProviderKind) -> &'static str {
    match kind {
        ProviderKind::Openai | ProviderKind::OpenaiResponses => "https://api.openai.com/v1",
        ProviderKind::Anthropic => "https://api.anthropic.com/v1",
        ProviderKind::Gemini => "https://generativelanguage.googleapis.com/v1beta",
    }
}
