//! Logging in to an external agent is a button, not a dead end: an agent that needs a login
//! fails the run with what to do and the ways it offers; each way (its own login command in a
//! terminal, a key kept in the keychain for it alone, `authenticate`) logs it in, and the run
//! then goes on. The agent is the scripted one, whose login is a file it checks.

mod support {
    pub mod harness;
    pub mod scripted;
}

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use finishline_engine::agent::Engine;
use finishline_engine::config::secret::{Keys, MemorySecrets};
use finishline_engine::domain::*;
use finishline_engine::event::EngineEvent;
use finishline_engine::external::login::LoginMethod;
use finishline_engine::external::login_run;
use finishline_engine::Settings;
use serde_json::json;
use support::harness::*;
use support::scripted::Scripted;

fn text(t: &str) -> serde_json::Value {
    json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": t}})
}

/// The run that fails for the login, with what it said and the ways it offered.
async fn needs_login(auth: &str) -> (Scripted, Harness, SessionId, String, Vec<LoginMethod>) {
    let s = Scripted::new(
        json!({"auth": auth, "turns": [{"updates": [text("Wrote done.txt and checked it.")], "write": {"path": "done.txt", "content": "done\n"}}]}),
    );
    let h = Harness::new(rules(json!([evaluator(done_verdict())])), Setup { external: Some(s.agent.clone()), ..Setup::default() }).await;
    let o = h.run("Look around").await;
    assert_eq!(o.status, SessionStatus::Failed);
    let message = o
        .events
        .iter()
        .rev()
        .find_map(|e| {
            if let EngineEvent::Error { code, message } = &e.event {
                assert_eq!(*code, finishline_engine::ErrorCode::ExternalAgentAuth);
                Some(message.clone())
            } else {
                None
            }
        })
        .unwrap();
    let methods = o
        .events
        .iter()
        .find_map(|e| {
            if let EngineEvent::AgentLoginNeeded { methods, label, .. } = &e.event {
                assert_eq!(label, "scripted");
                Some(methods.clone())
            } else {
                None
            }
        })
        .expect("the window learns the agent wants a login");
    (s, h, o.session, message, methods)
}

/// Runs the task again (the window's Retry after a login) and waits for it.
async fn again(engine: &Arc<Engine>, h: &Harness, sid: &SessionId) -> Outcome {
    engine.send_message(sid, "").unwrap();
    tokio::time::timeout(Duration::from_secs(60), h.wait_idle(sid)).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_terminal_login_runs_the_agents_own_command_and_the_task_then_goes_on() {
    let (s, h, sid, message, methods) = needs_login("terminal").await;
    assert!(message.contains("Log in in a terminal: run `") && message.contains("--login` in a terminal"), "the message names the command: {message}");
    let [method @ LoginMethod::Terminal { command, args, .. }] = methods.as_slice() else { panic!("one terminal method: {methods:?}") };
    assert!(
        command.ends_with("node") && args.last().map(String::as_str) == Some("--login"),
        "the agent's own invocation with the method's arguments: {command} {args:?}"
    );
    // A "terminal" that runs the script where it is, as a terminal window would.
    let ran = login_run::run_in_terminal(&["env".to_string()], method, &s.agent.env, h.data.path()).await.unwrap();
    assert!(ran, "the login command exited 0");
    assert_eq!(s.log("logged-in"), "yes");
    let o = again(&h.engine, &h, &sid).await;
    assert_eq!(o.status, SessionStatus::AwaitingReview, "logged in, the agent works");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_terminal_login_says_so_and_nothing_goes_on() {
    let (s, h, _, _, methods) = needs_login("terminal").await;
    let LoginMethod::Terminal { id, name, description, env, .. } = methods[0].clone() else { panic!() };
    let failing = LoginMethod::Terminal { id, name, description, command: "false".into(), args: vec![], env };
    let ran = login_run::run_in_terminal(&["env".to_string()], &failing, &s.agent.env, h.data.path()).await.unwrap();
    assert!(!ran, "a login command that exits non-zero is not a login");
    assert!(
        std::fs::read_dir(h.data.path()).unwrap().flatten().all(|e| !e.file_name().to_string_lossy().starts_with("login-")),
        "its script and status are removed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_is_kept_in_the_keychain_for_that_agent_alone_and_the_task_then_goes_on() {
    let (_s, h, sid, message, methods) = needs_login("key").await;
    assert!(message.contains("it reads its key from SCRIPTED_KEY") && message.contains("Scripted key: give scripted SCRIPTED_KEY"), "{message}");
    let [LoginMethod::Key { vars, .. }] = methods.as_slice() else { panic!("{methods:?}") };
    assert_eq!(vars, &["SCRIPTED_KEY"]);
    let keys = Keys::new(Arc::new(MemorySecrets::default()));
    let mut settings = Settings::default();
    keys.save_agent_key(&mut settings, "scripted", "SCRIPTED_KEY", "sk-scripted").unwrap();
    assert_eq!(settings.agent_keys.get("scripted"), Some(&vec!["SCRIPTED_KEY".to_string()]), "the settings name the variable");
    assert!(!serde_json::to_string(&settings).unwrap().contains("sk-scripted"), "and never the key");
    let secrets = keys.agent_secrets(&settings, "scripted");
    assert_eq!(secrets, BTreeMap::from([("SCRIPTED_KEY".to_string(), "sk-scripted".to_string())]));
    assert!(keys.agent_secrets(&settings, "another-agent").is_empty(), "no other agent gets it");
    let engine = Engine::new(h.store.clone(), finishline_engine::agent::EngineConfig { agent_secrets: secrets, ..h.engine.config.clone() });
    let o = again(&engine, &h, &sid).await;
    assert_eq!(o.status, SessionStatus::AwaitingReview, "with its key, the agent works");
    let stored = serde_json::to_string(&o.events.iter().map(|e| &e.event).collect::<Vec<_>>()).unwrap();
    assert!(!stored.contains("sk-scripted"), "the key is in no event");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_typed_into_the_agents_environment_is_kept_in_the_keychain_not_the_settings_file_and_the_agent_still_gets_it() {
    let (s, h, sid, _, _) = needs_login("key").await;
    let keys = Keys::new(Arc::new(MemorySecrets::default()));
    let mut settings = Settings::default();
    let mut agent = s.agent.clone();
    agent.env.insert("SCRIPTED_KEY".into(), "sk-scripted".into());
    agent.env.insert("FROM_FINISHLINE".into(), "${HOME}".into());
    agent.env.insert("SCRIPTED_HOME".into(), "/opt/scripted".into());
    settings.agent = Some(agent);
    let export = settings.export_json();
    assert!(!export.contains("sk-scripted"), "an export, which says it is without keys, holds no typed key");
    assert!(export.contains("/opt/scripted"), "a setting that is no secret travels with it");
    keys.keep_agent_secrets(&mut settings, &Settings::default()).unwrap();
    let file = serde_json::to_string(&settings).unwrap();
    assert!(!file.contains("sk-scripted"), "a value typed into the agent's environment never reaches the settings file: {file}");
    let kept = settings.agent.as_ref().unwrap();
    assert_eq!(kept.env["SCRIPTED_KEY"], finishline_engine::domain::IN_KEYCHAIN, "the file says where it is");
    assert_eq!(kept.env["FROM_FINISHLINE"], "${HOME}", "a reference to Finishline's environment is no secret and stays");
    assert_eq!(kept.env["SCRIPTED_HOME"], "/opt/scripted", "nor is a setting whose name says no secret: it needs no keychain");
    let before = settings.clone();
    keys.keep_agent_secrets(&mut settings, &before).unwrap();
    assert_eq!(keys.agent_secrets(&settings, "scripted").get("SCRIPTED_KEY").map(String::as_str), Some("sk-scripted"), "a second save keeps it");
    // The agent renamed (its command changed): its keys go with it.
    let mut renamed = settings.clone();
    renamed.agent.as_mut().unwrap().name = "scripted-2".into();
    keys.keep_agent_secrets(&mut renamed, &settings).unwrap();
    assert_eq!(keys.agent_secrets(&renamed, "scripted-2").get("SCRIPTED_KEY").map(String::as_str), Some("sk-scripted"), "a renamed agent keeps its key");
    let config = finishline_engine::agent::EngineConfig {
        agent_secrets: keys.agent_secrets(&settings, "scripted"),
        external: settings.agent.clone(),
        ..h.engine.config.clone()
    };
    let o = again(&Engine::new(h.store.clone(), config), &h, &sid).await;
    assert_eq!(o.status, SessionStatus::AwaitingReview, "the agent gets the typed key from the keychain, and works");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_method_logs_in_with_authenticate_and_the_task_then_goes_on() {
    let (s, h, sid, message, methods) = needs_login("agent").await;
    assert!(message.contains("Log in with the browser: Opens the scripted agent's login page"), "{message}");
    let [LoginMethod::Agent { id, .. }] = methods.as_slice() else { panic!("{methods:?}") };
    login_run::authenticate(&s.agent, &h.ws(), id, &BTreeMap::new(), Duration::from_secs(30)).await.expect("authenticate logs it in");
    let o = again(&h.engine, &h, &sid).await;
    assert_eq!(o.status, SessionStatus::AwaitingReview);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_says_whether_the_agent_is_installed_its_version_and_whether_it_is_logged_in() {
    use finishline_engine::external::agent_status::status;
    let s = Scripted::new(json!({"auth": "agent", "turns": [{}]}));
    let dir = tempfile::tempdir().unwrap();
    let before = status(&s.agent, dir.path(), Duration::from_secs(30), &BTreeMap::new()).await;
    assert!(
        before.found.is_some() && before.version.as_deref() == Some("1.0.0"),
        "installed, with the version it answered before it refused a session: {before:?}"
    );
    assert_eq!(before.logged_in, Some(false));
    assert!(before.problem.as_deref().is_some_and(|p| p.contains("Log in with the browser")) && before.login.len() == 1, "{before:?}");
    login_run::authenticate(&s.agent, dir.path(), "browser", &BTreeMap::new(), Duration::from_secs(30)).await.unwrap();
    let after = status(&s.agent, dir.path(), Duration::from_secs(30), &BTreeMap::new()).await;
    assert_eq!((after.logged_in, after.version.as_deref(), after.problem.as_deref()), (Some(true), Some("1.0.0"), None), "{after:?}");
    let mut missing = finishline_engine::external::ExternalAgent::preset("codex").unwrap();
    missing.command = "codex-acp-not-here".into();
    let not_installed = status(&missing, dir.path(), Duration::from_secs(5), &BTreeMap::new()).await;
    assert_eq!((not_installed.found, not_installed.install.as_deref(), not_installed.logged_in), (None, Some("npm i -g @agentclientprotocol/codex-acp"), None));
}

/// A program that is no ACP agent (here `cat`, which echoes the request back) is said to be one
/// that does not speak the protocol, with what to check: not "Cat refused to start (initialize):
/// Method not found".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_program_that_does_not_speak_acp_is_said_to_be_so() {
    use finishline_engine::external::agent_status::status;
    let cat = finishline_engine::external::ExternalAgent { name: "cat".into(), command: "/bin/cat".into(), args: vec![], env: Default::default() };
    let dir = tempfile::tempdir().unwrap();
    let s = status(&cat, dir.path(), Duration::from_secs(10), &BTreeMap::new()).await;
    let problem = s.problem.unwrap_or_default();
    assert!(problem.contains("does not speak the Agent Client Protocol"), "{problem}");
    assert!(!problem.contains("Method not found"), "{problem}");
}

/// An agent that exits at its start says why in its own words (a key not set, a crash): the
/// problem quotes its last output and its exit, where it said only "Incoming transport closed".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_that_exits_at_its_start_is_quoted_with_its_exit() {
    use finishline_engine::external::agent_status::status;
    let dies = finishline_engine::external::ExternalAgent {
        name: "dies".into(),
        command: "/bin/sh".into(),
        args: vec!["-c".into(), "echo 'fatal: ANTHROPIC_API_KEY is not set' >&2; exit 3".into()],
        env: Default::default(),
    };
    let dir = tempfile::tempdir().unwrap();
    let s = status(&dies, dir.path(), Duration::from_secs(10), &BTreeMap::new()).await;
    let problem = s.problem.unwrap_or_default();
    assert!(problem.contains("fatal: ANTHROPIC_API_KEY is not set"), "its own words: {problem}");
    assert!(problem.contains("exit status: 3"), "and how it ended: {problem}");
    assert!(!problem.contains("transport closed"), "{problem}");
}

/// A program started without its ACP mode (an agent's interactive CLI) greets on stdout and
/// waits: when it has not answered in time, the problem quotes what it wrote, on stdout and on
/// stderr, and says what to check, not only that it did not answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_program_that_waits_without_answering_is_quoted_when_it_runs_out_of_time() {
    use finishline_engine::external::agent_status::status;
    let script = "echo 'Welcome to FooCLI 2.1. Type your prompt:'; echo 'hint: editors start foo --acp' >&2; exec sleep 60";
    let foo = finishline_engine::external::ExternalAgent {
        name: "foo".into(),
        command: "/bin/sh".into(),
        args: vec!["-c".into(), script.into()],
        env: Default::default(),
    };
    let dir = tempfile::tempdir().unwrap();
    let s = status(&foo, dir.path(), Duration::from_secs(3), &BTreeMap::new()).await;
    let problem = s.problem.unwrap_or_default();
    assert!(problem.contains("did not answer") && problem.contains("within 3 s"), "{problem}");
    assert!(problem.contains("Welcome to FooCLI 2.1. Type your prompt:"), "what it wrote on stdout is quoted: {problem}");
    assert!(problem.contains("hint: editors start foo --acp"), "and on stderr: {problem}");
    assert!(problem.contains("ACP mode"), "it says what to check: {problem}");
}

/// Claude Code and Codex open a session without a login and say who is logged in a moment later
/// (`_auth/status_update`, once a probe of their CLI lands): Check waits for that word instead
/// of reading the silence before it as "logged in".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_waits_for_the_agents_word_on_its_login_that_comes_after_the_session_opens() {
    use finishline_engine::external::agent_status::status;
    let dir = tempfile::tempdir().unwrap();
    let nobody = Scripted::new(json!({"auth_status": {"kind": "none", "label": "Not logged in"}, "auth_status_delay_ms": 700, "turns": [{}]}));
    let s = status(&nobody.agent, dir.path(), Duration::from_secs(30), &BTreeMap::new()).await;
    assert_eq!(s.logged_in, Some(false), "{s:?}");
    assert!(s.problem.as_deref().is_some_and(|p| p.contains("nobody is logged in")), "{s:?}");
    let key = Scripted::new(json!({"auth_status": {"kind": "apiKey", "label": "API key"}, "auth_status_delay_ms": 700, "turns": [{}]}));
    let s = status(&key.agent, dir.path(), Duration::from_secs(30), &BTreeMap::new()).await;
    assert_eq!((s.logged_in, s.problem.as_deref()), (Some(true), None), "{s:?}");
}
