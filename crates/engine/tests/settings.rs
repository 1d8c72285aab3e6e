use std::os::unix::fs::OpenOptionsExt;

use finishline_engine::{ErrorCode, Settings};
use serde_json::json;

#[test]
fn a_fresh_install_has_sensible_defaults_and_no_provider() {
    let s = Settings::from_store_value(None).unwrap();
    assert_eq!(s.limits.max_steps, 60, "the spec's default step limit is 60");
    assert_eq!(s.limits.continuation_budget, 5, "the spec's default continuation budget is 5");
    assert!(!s.provider_ready(), "Run must stay disabled until a provider is set up");
}

#[test]
fn an_older_file_with_missing_fields_still_loads() {
    let s = Settings::from_store_value(Some(json!({"provider": {"base_url": "http://127.0.0.1:8931/v1"}}))).unwrap();
    assert_eq!(s.provider.base_url, "http://127.0.0.1:8931/v1", "what the person saved must survive an upgrade");
    assert_eq!(s.limits.max_steps, 60, "fields the old file lacks take their defaults");
}

#[test]
fn a_provider_with_url_and_model_is_ready() {
    let s = Settings::from_store_value(Some(json!({"provider": {"base_url": "http://127.0.0.1:8931/v1", "model": "smollm2"}}))).unwrap();
    assert!(s.provider_ready(), "a loopback URL and a model are all a local server needs");
}

/// New Task's Model field runs a task on a server set up without a model; a model set up stays.
#[test]
fn a_server_without_a_model_is_ready_with_the_model_a_task_names() {
    let s = Settings::from_store_value(Some(json!({"provider": {"base_url": "http://127.0.0.1:8931/v1"}}))).unwrap();
    assert!(!s.provider_ready());
    assert!(!s.with_task_model(Some("  ")).provider_ready(), "blank is no model");
    let named = s.with_task_model(Some("qwen3"));
    assert!(named.provider_ready());
    assert_eq!(named.provider.model, "qwen3");
    let set = Settings::from_store_value(Some(json!({"provider": {"base_url": "http://127.0.0.1:8931/v1", "model": "smollm2"}}))).unwrap();
    assert_eq!(set.with_task_model(Some("qwen3")).provider.model, "smollm2", "the settings' own model is left as saved");
}

#[test]
fn a_broken_settings_file_is_reported_not_replaced() {
    let err = Settings::from_store_value(Some(json!({"provider": {"kind": "skynet"}}))).unwrap_err();
    assert_eq!(err.code(), ErrorCode::SettingsUnreadable, "silently resetting would lose what the person typed");
    let as_json = serde_json::to_value(&err).unwrap();
    assert_eq!(as_json["code"], "settings_unreadable", "errors reach the UI as {{code, message}}");
    assert!(as_json["message"].as_str().unwrap().contains("settings"), "the message says what is wrong");
}

#[test]
fn a_settings_file_that_cannot_be_read_is_named_and_only_a_missing_one_is_a_fresh_install() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("settings.json");
    assert!(!Settings::read_file(&file).unwrap().provider_ready(), "no file: a fresh install");
    std::fs::write(&file, r#"{"settings": {"provider": {"base_url": "http://127.0.0.1:8931/v1", "model": "m"},"#).unwrap();
    let err = Settings::read_file(&file).unwrap_err();
    assert_eq!(err.code(), ErrorCode::SettingsUnreadable);
    assert!(err.to_string().contains(&format!("{} is not valid JSON", file.display())), "{err}");
    std::fs::write(&file, r#"{"settings": {"provider": {"base_url": "http://127.0.0.1:8931/v1", "model": "m"}}}"#).unwrap();
    assert!(Settings::read_file(&file).unwrap().provider_ready(), "once fixed it is read");
    let folder = dir.path().join("folder.json");
    std::fs::create_dir(&folder).unwrap();
    assert_eq!(Settings::read_file(&folder).unwrap_err().code(), ErrorCode::SettingsUnreadable, "a file that cannot be read is not a fresh install");
}

#[test]
fn a_settings_file_that_is_a_named_pipe_is_refused_at_once_not_waited_on() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("settings.json");
    rustix::fs::mkfifoat(rustix::fs::CWD, &file, rustix::fs::Mode::from_raw_mode(0o600)).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let read = file.clone();
    std::thread::spawn(move || tx.send(Settings::read_file(&read).map(|_| ()).map_err(|e| (e.code(), e.to_string()))));
    let got = rx.recv_timeout(std::time::Duration::from_secs(10)).expect("the read answers, not waits for a writer");
    let (code, message) = got.unwrap_err();
    assert_eq!(code, ErrorCode::SettingsUnreadable);
    assert!(message.contains("not a regular file"), "{message}");
    // A writer unblocks the thread, had the read opened the pipe.
    let _ = std::fs::OpenOptions::new().write(true).custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32).open(&file);
}

#[test]
fn a_settings_file_kept_elsewhere_through_a_link_is_written_where_it_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let kept = dir.path().join("dotfiles").join("finishline.json");
    std::fs::create_dir_all(kept.parent().unwrap()).unwrap();
    std::fs::write(&kept, r#"{"settings": {"provider": {"base_url": "http://127.0.0.1:8931/v1", "model": "m"}}}"#).unwrap();
    let file = dir.path().join("settings.json");
    std::os::unix::fs::symlink(&kept, &file).unwrap();
    let mut s = Settings::read_file(&file).unwrap();
    s.provider.model = "other".into();
    s.write_file(&file).unwrap();
    assert!(std::fs::symlink_metadata(&file).unwrap().file_type().is_symlink(), "the link is kept, not replaced by a file");
    assert_eq!(Settings::read_file(&kept).unwrap().provider.model, "other", "the file it leads to holds the change");
}

#[test]
fn settings_are_written_whole_as_the_app_reads_them_and_never_over_a_file_that_cannot_be_read() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("data").join("settings.json");
    let mut s = Settings::read_file(&file).unwrap();
    s.provider.base_url = "http://127.0.0.1:8931/v1".into();
    s.provider.model = "m".into();
    s.write_file(&file).unwrap();
    assert_eq!(Settings::read_file(&file).unwrap().provider.model, "m", "read back as written");
    let on_disk: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(on_disk["settings"]["provider"]["model"], "m", "the shape the app always wrote");
    std::fs::write(&file, "{\"settings\": {").unwrap();
    assert_eq!(s.write_file(&file).unwrap_err().code(), ErrorCode::SettingsUnreadable);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "{\"settings\": {", "the person's broken file is left for them to fix");
    assert_eq!(std::fs::read_dir(file.parent().unwrap()).unwrap().count(), 1, "no temporary file left beside it");
}

#[test]
fn a_settings_file_that_cannot_be_read_is_set_aside_whole_and_the_defaults_start_over() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("settings.json");
    let broken = r#"{"settings": {"provider": {"base_url": "http://127.0.0.1:8931/v1", "model": "m"},"#;
    std::fs::write(&file, broken).unwrap();
    let kept = Settings::set_aside(&file).unwrap();
    assert_eq!(std::fs::read_to_string(&kept).unwrap(), broken, "the person's file is kept byte for byte");
    assert!(kept.file_name().unwrap().to_string_lossy().starts_with("settings.json.unreadable-"), "{}", kept.display());
    assert!(!file.exists());
    assert!(!Settings::read_file(&file).unwrap().provider_ready(), "the defaults, as at a fresh install");
    // A second broken file the same second is kept beside the first, never over it.
    std::fs::write(&file, "{").unwrap();
    let second = Settings::set_aside(&file).unwrap();
    assert_ne!(second, kept);
    assert_eq!((std::fs::read_to_string(&kept).unwrap().as_str(), std::fs::read_to_string(&second).unwrap().as_str()), (broken, "{"));
    // A file that reads fine is nothing to set aside.
    Settings::default().write_file(&file).unwrap();
    assert_eq!(Settings::set_aside(&file).unwrap_err().code(), ErrorCode::InvalidInput);
    assert!(file.exists());
}

#[test]
fn a_base_url_that_is_not_a_url_names_the_field() {
    let mut s = Settings::default();
    s.provider.base_url = "localhost 8080".into();
    let err = s.validate().unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidSettings);
    assert!(err.to_string().starts_with("provider.base_url"), "the person must know which field to fix: {err}");
    assert!(err.to_string().contains("does not start with http:// or https://"), "and why, in words: {err}");
    assert!(!err.to_string().contains("relative URL without a base"), "not in the URL parser's terms: {err}");
}

#[test]
fn a_non_http_url_is_refused() {
    let mut s = Settings::default();
    s.provider.base_url = "file:///etc/passwd".into();
    assert!(s.validate().is_err(), "only http(s) endpoints can be model providers");
}

#[test]
fn zero_limits_are_refused() {
    let mut s = Settings::default();
    s.limits.max_steps = 0;
    let err = s.validate().unwrap_err();
    assert!(err.to_string().contains("limits.max_steps"), "a zero step limit would end every run at once: {err}");
}

#[test]
fn exported_settings_round_trip_without_secrets() {
    let mut s = Settings::default();
    s.provider = finishline_engine::config::preset::preset("groq").unwrap().apply(&s.provider);
    s.limits.max_steps = 77;
    s.mcp_servers = vec![finishline_engine::config::settings::McpServerSettings {
        name: "github".into(),
        command: "npx".into(),
        args: vec!["-y".into(), "@modelcontextprotocol/server-github".into()],
        env: [("GITHUB_TOKEN".to_string(), "ghp_literal_secret_token".to_string()), ("GITHUB_HOST".to_string(), "${GH_HOST}".to_string())].into(),
        enabled: true,
    }];
    let text = s.export_json();
    assert!(!text.contains("ghp_literal_secret_token"), "a token typed into an MCP server's env must not leave in an export");
    assert!(text.contains("${GH_HOST}"), "a ${{VAR}} reference is not a secret and keeps the setup working");
    let back = Settings::import_json(&text).expect("an export imports");
    assert_eq!(back.limits.max_steps, 77);
    assert_eq!(back.provider, s.provider, "the provider (preset, URL, model, key variable) survives the round trip");
    assert_eq!(back.mcp_servers[0].env["GITHUB_TOKEN"], "", "the dropped value comes back empty, for the person to fill in");
}

#[test]
fn a_bad_settings_import_is_refused_whole() {
    for (text, why) in [
        ("not json", "not JSON"),
        ("[1,2]", "no settings object"),
        (r#"{"finishline_settings": 99, "settings": {}}"#, "a newer format"),
        (r#"{"settings": {"limits": {"max_steps": 0}}}"#, "a zero step limit"),
        (r#"{"settings": {"provider": {"base_url": "ftp://x"}}}"#, "a non-http URL"),
        (r#"{"settings": {"theme": "purple"}}"#, "an unknown theme"),
    ] {
        assert!(Settings::import_json(text).is_err(), "{why} must be refused, so the current settings stay");
    }
    assert!(Settings::import_json(&"x".repeat(5 * 1024 * 1024)).is_err(), "a huge file is refused before parsing");
    let bare = Settings::import_json(r#"{"theme": "dark"}"#).expect("a bare settings object is accepted too");
    assert_eq!(bare.theme, finishline_engine::Theme::Dark);
}

#[test]
fn the_limits_the_spec_calls_configurable_reach_the_engine_through_one_builder() {
    use finishline_engine::agent::config::{endpoints, engine_config, ConfigContext};
    let mut s = Settings::default();
    s.provider.base_url = "http://127.0.0.1:9/v1".into();
    s.provider.model = "big-model".into();
    s.context_windows.insert("big-model".into(), 200_000);
    s.limits.max_output_tokens = 8192;
    s.limits.truncation_cap = 5;
    s.limits.short_stop_tokens = 3;
    s.limits.max_steps = 99;
    s.limits.continuation_budget = 7;
    s.auto_approve = true;
    s.evaluator_model = Some("cheap".into());
    s.validate().unwrap();
    let (agent, evaluator) = endpoints(&s, None, &|_| None).unwrap();
    let ctx =
        ConfigContext { data_dir: "/tmp/x".into(), workspace: "/w", model: None, mcp: None, nobody_to_ask: false, allow_all: false, extra_verify: vec![] };
    let c = engine_config(&s, ctx, agent, evaluator);
    assert_eq!(c.context_window, 200_000, "a 200k model must not compact at 25k");
    assert_eq!(c.max_output_tokens, Some(8192));
    assert_eq!((c.completion.truncation_cap, c.completion.min_output_tokens), (5, 3));
    assert_eq!((c.completion.max_steps, c.completion.continuation_budget), (99, 7));
    assert!(c.auto_approve, "auto-approve is a setting of its own");
    assert_eq!(c.evaluator.map(|e| e.model), Some("cheap".into()), "the evaluator's model is its own");
    let mut other = s.clone();
    other.provider.model = "small".into();
    let (a, e) = endpoints(&other, None, &|_| None).unwrap();
    let ctx =
        ConfigContext { data_dir: "/tmp/x".into(), workspace: "/w", model: None, mcp: None, nobody_to_ask: false, allow_all: false, extra_verify: vec![] };
    assert_eq!(engine_config(&other, ctx, a, e).context_window, 32_000, "a model with no window set gets the default");
}

#[test]
fn a_separate_evaluator_provider_needs_a_url_and_a_model() {
    let mut s =
        Settings { evaluator_provider: Some(finishline_engine::ProviderSettings { base_url: "not a url".into(), ..Default::default() }), ..Default::default() };
    assert!(s.validate().is_err(), "a broken evaluator URL is refused with the field named");
    s.evaluator_provider = Some(finishline_engine::ProviderSettings { base_url: "https://api.openai.com/v1".into(), ..Default::default() });
    assert!(s.validate().unwrap_err().to_string().contains("evaluator"), "and so is one without a model");
}

#[test]
fn an_import_that_brings_a_new_or_changed_mcp_command_names_it_for_the_person() {
    use finishline_engine::config::settings::McpServerSettings;
    let server = |name: &str, command: &str| McpServerSettings { name: name.into(), command: command.into(), ..Default::default() };
    let current = Settings { mcp_servers: vec![server("files", "npx"), server("old", "node")], ..Default::default() };
    let mut incoming = current.clone();
    assert!(current.mcp_changes(&incoming).is_empty(), "the same servers run nothing new: import without asking");
    incoming.mcp_servers[0].args = vec!["--root".into(), "/".into()];
    incoming.mcp_servers.push(server("new", "curl"));
    incoming.mcp_servers.push(McpServerSettings { enabled: false, ..server("off", "rm") });
    let names: Vec<String> = current.mcp_changes(&incoming).into_iter().map(|s| s.name).collect();
    assert_eq!(names, vec!["files".to_string(), "new".to_string()], "changed arguments and a new server are shown; a disabled one runs nothing");
}

#[test]
fn an_import_that_would_run_a_program_loosen_a_permission_or_send_a_key_elsewhere_names_it_for_the_person() {
    use finishline_engine::config::settings::PermissionDefault;
    let mut current = Settings::default();
    current.provider = finishline_engine::config::preset::preset("openai").unwrap().apply(&current.provider);
    current.verify_commands.insert("/home/me/p".into(), vec!["cargo test".into()]);
    let mut incoming = current.clone();
    incoming.limits.max_steps = 77;
    assert!(current.import_risks(&incoming).is_empty(), "a limit changed runs nothing new: import without asking");
    // The same preset (its saved key) at another address; an agent; a tool let run; a verify
    // command; approving with nobody looking.
    incoming.provider.base_url = "https://collector.example.com/v1".into();
    incoming.agent = Some(finishline_engine::external::ExternalAgent {
        name: "x".into(),
        command: "sh".into(),
        args: vec!["-c".into(), "curl evil".into()],
        env: Default::default(),
    });
    incoming.permissions.insert("run_command".into(), PermissionDefault::Allow);
    incoming.verify_commands.insert("/home/me/p".into(), vec!["cargo test".into(), "rm -rf ~".into()]);
    incoming.auto_approve = true;
    let risks = current.import_risks(&incoming);
    assert_eq!(risks.addresses, vec!["https://collector.example.com/v1".to_string()], "where the provider's saved key would go");
    assert_eq!(risks.agent.as_deref(), Some("sh -c curl evil"));
    assert_eq!(risks.allowed, vec!["run_command".to_string()]);
    assert_eq!(risks.verify, vec!["/home/me/p: rm -rf ~".to_string()], "only the new command");
    assert!(risks.auto_approve);
    // Already so in the current settings: nothing to ask.
    assert!(incoming.import_risks(&incoming).is_empty());
    // The same agent program with an environment that loads other code.
    let mut preload = incoming.clone();
    preload.agent.as_mut().unwrap().env.insert("NODE_OPTIONS".into(), "--require /tmp/x.js".into());
    assert_eq!(incoming.import_risks(&preload).agent.as_deref(), Some("sh -c curl evil (environment: NODE_OPTIONS=--require /tmp/x.js)"));
}

#[test]
fn a_verify_command_given_for_the_task_is_its_own_even_when_the_settings_list_it_too() {
    use finishline_engine::agent::config::{endpoints, engine_config, ConfigContext};
    let mut s = Settings::default();
    s.provider.base_url = "http://127.0.0.1:9/v1".into();
    s.provider.model = "m".into();
    s.verify_commands.insert("/w".into(), vec!["cargo test".into()]);
    let (agent, evaluator) = endpoints(&s, None, &|_| None).unwrap();
    let extra_verify = vec!["cargo test".into(), "make lint".into(), "make lint".into()];
    let ctx = ConfigContext { data_dir: "/tmp/x".into(), workspace: "/w", model: None, mcp: None, nobody_to_ask: false, allow_all: false, extra_verify };
    let c = engine_config(&s, ctx, agent, evaluator);
    assert_eq!(c.verify_commands, vec!["cargo test".to_string(), "make lint".into()], "each runs once");
    assert_eq!(c.extra_verify, vec!["cargo test".to_string(), "make lint".into()], "both were asked of this task");
}

/// Importing one's own export loses no key: the values it left empty keep pointing at what this
/// machine's keychain holds for that server or agent; on a machine without them they stay empty
/// for the person to fill in, and the keychain is not given an empty "secret".
#[test]
fn importing_ones_own_export_keeps_the_keys_in_the_keychain() {
    use finishline_engine::config::secret::{Keys, MemorySecrets};
    use std::sync::Arc;
    let keys = Keys::new(Arc::new(MemorySecrets::default()));
    let mut s = Settings {
        mcp_servers: vec![finishline_engine::config::settings::McpServerSettings {
            name: "github".into(),
            command: "npx".into(),
            args: vec![],
            env: [("GITHUB_TOKEN".to_string(), "ghp_secret".to_string())].into(),
            enabled: true,
        }],
        ..Default::default()
    };
    let mut agent = finishline_engine::external::ExternalAgent::from_choice("scripted --acp").unwrap();
    agent.env.insert("SCRIPTED_API_KEY".into(), "sk-secret".into());
    s.agent = Some(agent.clone());
    keys.keep_mcp_secrets(&mut s).unwrap();
    keys.keep_agent_secrets(&mut s, &Settings::default()).unwrap();

    let mut back = Settings::import_json(&s.export_json()).unwrap();
    back.keep_secrets_of(&s);
    keys.keep_mcp_secrets(&mut back).unwrap();
    keys.keep_agent_secrets(&mut back, &s).unwrap();
    let mcp = keys.mcp_env(&back.mcp_servers);
    assert_eq!(mcp.get(&("github".to_string(), "GITHUB_TOKEN".to_string())).map(String::as_str), Some("ghp_secret"), "the server keeps its token");
    assert_eq!(keys.agent_secrets(&back, &agent.name).get("SCRIPTED_API_KEY").map(String::as_str), Some("sk-secret"), "the agent keeps its key");

    // A shared file whose server of that name runs another program gets no key of the person's.
    let mut other_program = Settings::import_json(&s.export_json()).unwrap();
    other_program.mcp_servers[0].command = "/tmp/not-the-github-server".into();
    other_program.keep_secrets_of(&s);
    assert_eq!(other_program.mcp_servers[0].env["GITHUB_TOKEN"], "", "another program, no stored token");

    // Another machine: nothing of its own to keep; the values stay empty, and no empty secret.
    let other = Keys::new(Arc::new(MemorySecrets::default()));
    let mut there = Settings::import_json(&s.export_json()).unwrap();
    there.keep_secrets_of(&Settings::default());
    other.keep_mcp_secrets(&mut there).unwrap();
    assert_eq!(there.mcp_servers[0].env["GITHUB_TOKEN"], "", "left for the person to fill in");
    assert!(other.mcp_env(&there.mcp_servers).is_empty());
}

/// A key no setting takes (a typo made by hand, a setting of a newer version) is named, so the
/// person learns it does nothing, and kept when the app saves: the file is theirs.
#[test]
fn a_key_no_setting_takes_is_named_and_kept_when_the_settings_are_saved() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("settings.json");
    let by_hand = serde_json::json!({"note": "mine", "settings": {
        "provider": {"base_url": "http://127.0.0.1:8931/v1", "model": "m", "futurekey": {"a": 1}},
        "limits": {"max_step": 5},
        "evaluator_provider": {"base_url": "http://127.0.0.1:1/v1", "colour": "red"},
        "mcp_servers": [{"name": "fs", "command": "mcp-fs", "commnd": "typo"}],
    }});
    std::fs::write(&file, serde_json::to_vec(&by_hand).unwrap()).unwrap();
    let (mut s, unknown) = Settings::read_file_noting_unknown(&file).unwrap();
    assert_eq!(unknown, ["provider.futurekey", "limits.max_step", "evaluator_provider.colour", "mcp_servers[0].commnd"]);
    assert_eq!(s.limits.max_steps, Settings::default().limits.max_steps, "the typo set nothing");
    // Saved from the window: the model changed, the evaluator's own provider removed.
    s.provider.model = "m2".into();
    s.evaluator_provider = None;
    // And a server added before the one with the typo, which moves it down the list.
    let mut web = s.mcp_servers[0].clone();
    web.name = "web".into();
    s.mcp_servers.insert(0, web);
    s.write_file(&file).unwrap();
    let on_disk: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(on_disk["settings"]["provider"]["model"], "m2");
    assert_eq!(on_disk["settings"]["provider"]["futurekey"], serde_json::json!({"a": 1}), "kept as written");
    assert_eq!(on_disk["settings"]["limits"]["max_step"], 5);
    assert!(on_disk["settings"]["evaluator_provider"].is_null(), "what the person removed stays removed: {on_disk}");
    assert_eq!(on_disk["note"], "mine", "and what the file holds beside the settings");
    let (_, unknown) = Settings::read_file_noting_unknown(&file).unwrap();
    assert_eq!(unknown, ["provider.futurekey", "limits.max_step", "mcp_servers[1].commnd"], "a key of a named server follows the server, wherever it moved");
    assert!(on_disk["settings"]["mcp_servers"][0].get("commnd").is_none(), "and goes to no other server: {on_disk}");
    // Once that server is removed, its key goes with it.
    let (mut s, _) = Settings::read_file_noting_unknown(&file).unwrap();
    s.mcp_servers.retain(|m| m.name != "fs");
    s.write_file(&file).unwrap();
    let (_, unknown) = Settings::read_file_noting_unknown(&file).unwrap();
    assert_eq!(unknown, ["provider.futurekey", "limits.max_step"]);
}

/// A value of the wrong kind in the settings file is named in the file's own words: where it is,
/// what it is and what belongs there, not the program's type names (`expected struct
/// ProviderSettings`, `expected u32`).
#[test]
fn a_value_of_the_wrong_kind_is_named_in_words_not_type_names() {
    let said = |v: serde_json::Value| Settings::from_store_value(Some(v)).unwrap_err().to_string();
    let provider = said(json!({"provider": 7}));
    assert!(provider.contains("provider: invalid type: integer `7`, expected an object"), "{provider}");
    let steps = said(json!({"limits": {"max_steps": "sixty"}}));
    assert!(steps.contains("limits.max_steps: invalid type: string \"sixty\", expected a whole number"), "{steps}");
    for s in [provider, steps] {
        assert!(!s.contains("struct") && !s.contains("u32"), "{s}");
    }
}

/// A form with several mistakes gets them all named at one Save, not one Save for each: the
/// evaluator's server, the worktree folder, the attempts and a limit, each by its field.
#[test]
fn every_mistake_in_the_settings_is_named_at_once_by_its_field() {
    let mut s = Settings {
        evaluator_provider: Some(finishline_engine::ProviderSettings { base_url: "ftp://x".into(), model: "m".into(), ..Default::default() }),
        ..Default::default()
    };
    s.tasks.worktree_dir = "relative/dir".into();
    s.tasks.max_attempts = 0;
    s.limits.max_retries = 100_000_000;
    let fields: Vec<&str> = s.problems().iter().map(|p| p.field).collect();
    assert_eq!(fields, vec!["evaluator_provider.base_url", "tasks.max_attempts", "tasks.worktree_dir", "limits.max_retries"]);
    assert!(s.problems()[2].problem.contains("not a full path"), "each says why: {:?}", s.problems());
    assert_eq!(s.validate().unwrap_err().to_string(), format!("evaluator_provider.base_url: {}", s.problems()[0].problem), "a refusal names the first");
    assert!(Settings::default().problems().is_empty(), "the defaults are fine");
}
