//! Provider presets, where keys come from, and Test connection against the fake provider server
//! speaking each real wire protocol: the wrong key, the wrong URL, nothing running, a model that
//! cannot use tools, and a missing OS keychain.

use std::sync::Arc;

use fake_llm::scenario::Protocol;
use fake_llm::{parse_scenario, FakeServer};
use finishline_engine::config::check_provider;
use finishline_engine::config::preset::{preset, PRESETS};
use finishline_engine::config::secret::{KeyPlace, KeySource, KeychainStatus, Keys, MemorySecrets, OsKeychain, SecretStore};
use finishline_engine::provider::{ApiKey, CheckKind, ToolSupport};
use finishline_engine::{ErrorCode, ProviderKind, ProviderSettings};

const KEY: &str = "sk-test-correct-horse-battery";

fn kind_of(p: Protocol) -> ProviderKind {
    match p {
        Protocol::Openai => ProviderKind::Openai,
        Protocol::Anthropic => ProviderKind::Anthropic,
        Protocol::Gemini => ProviderKind::Gemini,
        Protocol::Responses => ProviderKind::OpenaiResponses,
    }
}

async fn server(extra: &str) -> FakeServer {
    let text = format!(r#"{{"api_key": "{KEY}", "models": ["fake-model", "fake-model-large"] {extra}, "rules": [{{"reply": {{"text": "OK"}}}}]}}"#);
    FakeServer::start(parse_scenario(&text).unwrap()).await.unwrap()
}

fn settings(server: &FakeServer, p: Protocol, model: &str) -> ProviderSettings {
    ProviderSettings { kind: kind_of(p), base_url: server.base_url(p), model: model.into(), ..Default::default() }
}

#[test]
fn presets_cover_the_providers_people_use_with_working_urls() {
    for id in ["openai", "anthropic", "gemini", "xai", "openrouter", "groq", "ollama", "lmstudio", "llamacpp", "custom"] {
        assert!(preset(id).is_some(), "the preset `{id}` must exist: the issue lists it as one click away");
    }
    assert_eq!(preset("ollama").unwrap().base_url, "http://localhost:11434/v1", "Ollama's OpenAI-compatible endpoint is on 11434/v1");
    let mut ids: Vec<_> = PRESETS.iter().map(|p| p.id).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), PRESETS.len(), "preset ids name keychain entries, so they must be unique");
    for p in PRESETS.iter().filter(|p| p.id != "custom") {
        let url = url::Url::parse(p.base_url).unwrap_or_else(|e| panic!("{}'s base URL must parse: {e}", p.id));
        assert!(!p.local || url.host_str().is_some_and(|h| h == "localhost" || h == "127.0.0.1"), "{} is local so it must point at this machine", p.id);
        assert_eq!(p.key_env.is_none(), p.local, "{}: hosted providers need a key variable, local servers none", p.id);
    }
}

#[test]
fn applying_a_preset_fills_url_kind_model_and_key_variable() {
    let typed = ProviderSettings { model: "my-local-model".into(), ..Default::default() };
    let a = preset("anthropic").unwrap().apply(&typed);
    assert_eq!((a.kind, a.base_url.as_str(), a.api_key_env.as_deref()), (ProviderKind::Anthropic, "https://api.anthropic.com/v1", Some("ANTHROPIC_API_KEY")));
    assert!(!a.model.is_empty(), "a hosted preset suggests a model so the form is ready");
    let l = preset("llamacpp").unwrap().apply(&typed);
    assert_eq!(l.model, "my-local-model", "a local preset has no model list of its own, so the typed model stays");
    assert_eq!(l.key_account(), "provider:llamacpp");
    assert_ne!(a.key_account(), l.key_account(), "each provider keeps its own key");
}

#[tokio::test]
async fn test_connection_lists_models_and_confirms_tools_on_every_protocol() {
    let s = server("").await;
    for p in [Protocol::Openai, Protocol::Anthropic, Protocol::Gemini] {
        let report =
            check_provider(&settings(&s, p, "fake-model"), ApiKey::new(KEY)).await.unwrap_or_else(|e| panic!("{p:?}: the right key must connect: {e}"));
        assert_eq!(report.models, vec!["fake-model", "fake-model-large"], "{p:?}: the list the server offers is shown to pick from");
        assert_eq!(report.model_listed, Some(true));
        assert_eq!(report.tools, ToolSupport::Supported, "{p:?}: the model accepted a request with a tool");
    }
    let r = check_provider(&settings(&s, Protocol::Openai, "gpt-nope"), ApiKey::new(KEY)).await.unwrap();
    assert_eq!(r.model_listed, Some(false), "a typo in the model name is flagged before a task fails on it");
}

#[tokio::test]
async fn test_connection_names_a_wrong_key_on_every_protocol() {
    let s = server("").await;
    for p in [Protocol::Openai, Protocol::Anthropic, Protocol::Gemini] {
        for key in [ApiKey::new("sk-wrong"), None] {
            let e = check_provider(&settings(&s, p, "fake-model"), key.clone()).await.expect_err("a wrong or missing key must not pass");
            assert_eq!(e.code(), ErrorCode::ProviderAuth, "{p:?} {key:?}: the UI says 'wrong key' from this code");
            assert!(e.to_string().contains("key"), "the message must say it is the key: {e}");
        }
    }
}

/// A local server started with a key (llama-server --api-key, LM Studio's auth) and no key in
/// the settings: "check the key" sends the person looking for a key they never gave.
#[tokio::test]
async fn a_server_that_asks_for_a_key_when_none_is_set_says_no_key_was_sent() {
    let s = server("").await;
    for p in [Protocol::Openai, Protocol::Anthropic, Protocol::Gemini] {
        let e = check_provider(&settings(&s, p, "fake-model"), None).await.expect_err("no key");
        assert_eq!(e.code(), ErrorCode::ProviderAuth, "{p:?}");
        let said = e.to_string();
        assert!(said.contains("asks for an API key") && said.contains("none is set"), "{p:?}: it says no key went: {said}");
        assert!(!said.contains("refused the API key") && !said.contains("Check the key"), "{p:?}: not a wrong key: {said}");
    }
    let wrong = check_provider(&settings(&s, Protocol::Openai, "fake-model"), ApiKey::new("sk-wrong")).await.expect_err("a wrong key");
    assert!(wrong.to_string().contains("Check the key"), "a key that was sent and refused is still named so: {wrong}");
}

#[tokio::test]
async fn test_connection_names_a_wrong_url_and_an_unreachable_server() {
    let s = server("").await;
    let mut wrong = settings(&s, Protocol::Openai, "fake-model");
    wrong.base_url = format!("{}/not-the-api/v1", s.url());
    let e = check_provider(&wrong, ApiKey::new(KEY)).await.expect_err("a URL with no API behind it must not pass");
    assert_eq!(e.code(), ErrorCode::ProviderNotFound, "a server that answers 404 is the wrong URL: {e}");

    // The server's own address without its version segment: the model is there, the URL is not.
    let mut bare = settings(&s, Protocol::Openai, "fake-model");
    bare.base_url = s.url();
    let e = check_provider(&bare, ApiKey::new(KEY)).await.expect_err("no API answers at the bare address");
    assert_eq!(e.code(), ErrorCode::ProviderNotFound, "{e}");
    assert!(!e.to_string().contains("no model called"), "the model is not what is wrong: {e}");
    assert!(e.to_string().contains(&format!("{}/v1", s.url())), "the URL to try is named: {e}");

    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let gone = ProviderSettings { base_url: format!("http://127.0.0.1:{free}/v1"), model: "m".into(), ..Default::default() };
    let e = check_provider(&gone, None).await.expect_err("nothing listens there");
    assert_eq!(e.code(), ErrorCode::ProviderUnreachable, "{e}");
    assert!(e.to_string().contains(&format!("127.0.0.1:{free}")), "the message names the address tried: {e}");

    let empty = ProviderSettings::default();
    assert_eq!(check_provider(&empty, None).await.unwrap_err().code(), ErrorCode::InvalidSettings, "an empty URL is a form problem, not a network one");
}

#[tokio::test]
async fn a_server_with_one_model_is_tested_without_typing_a_model() {
    let text = r#"{"models": ["only-model"], "rules": [{"reply": {"text": "OK"}}]}"#;
    let s = FakeServer::start(parse_scenario(text).unwrap()).await.unwrap();
    let r = check_provider(&settings(&s, Protocol::Openai, ""), None).await.unwrap();
    assert_eq!(r.tools, ToolSupport::Supported, "the one listed model is the one probed, as on a llama.cpp server");
    assert_eq!(s.requests().last().map(|q| q.model.clone()).as_deref(), Some("only-model"));
}

#[tokio::test]
async fn test_connection_reports_a_model_that_cannot_use_tools() {
    // What Ollama answers for a model without tool support.
    let text = r#"{"rules": [{"when": {"kind": "agent"}, "reply": {"fault": {"type": "status", "status": 400,
        "body": "{\"error\":{\"message\":\"registry.ollama.ai/library/gemma:2b does not support tools\",\"type\":\"api_error\"}}"}}}]}"#;
    let s = FakeServer::start(parse_scenario(text).unwrap()).await.unwrap();
    let r = check_provider(&settings(&s, Protocol::Openai, "gemma:2b"), None).await.expect("the server is reachable; the model is the problem");
    match r.tools {
        ToolSupport::Unsupported { message } => assert!(message.contains("does not support tools") && message.contains("gemma:2b"), "{message}"),
        other => panic!("a 400 about tools means the model cannot be an agent, got {other:?}"),
    }
}

#[test]
fn keys_are_read_session_first_then_keychain_then_environment() {
    let provider = ProviderSettings { preset: Some("groq".into()), api_key_env: Some("FINISHLINE_TEST_GROQ_KEY".into()), ..Default::default() };
    let keys = Keys::new(Arc::new(MemorySecrets::default()));
    assert_eq!(keys.resolve(&provider).1, KeySource::Missing { var: "FINISHLINE_TEST_GROQ_KEY".into() }, "no key anywhere says which variable would be read");
    std::env::set_var("FINISHLINE_TEST_GROQ_KEY", "from-env");
    assert_eq!(keys.resolve(&provider), (ApiKey::new("from-env"), KeySource::Env { var: "FINISHLINE_TEST_GROQ_KEY".into() }));
    keys.save(&provider, "from-keychain", KeyPlace::Keychain).unwrap();
    assert_eq!(keys.resolve(&provider), (ApiKey::new("from-keychain"), KeySource::Keychain), "a key saved in the app wins over the environment");
    keys.save(&provider, "from-session", KeyPlace::Session).unwrap();
    assert_eq!(keys.resolve(&provider), (ApiKey::new("from-session"), KeySource::Session));
    keys.forget(&provider).unwrap();
    assert_eq!(keys.resolve(&provider).1, KeySource::Env { var: "FINISHLINE_TEST_GROQ_KEY".into() }, "forgetting leaves the person's own variable alone");
    std::env::remove_var("FINISHLINE_TEST_GROQ_KEY");
    for bad in ["", "   ", "two words", "line\nbreak"] {
        assert_eq!(keys.save(&provider, bad, KeyPlace::Session).unwrap_err().code(), ErrorCode::InvalidInput, "{bad:?} is not a key");
    }
}

/// A keychain that is not there, as on a headless Linux without a secret service.
struct NoKeychain;
impl SecretStore for NoKeychain {
    fn get(&self, _: &str) -> finishline_engine::Result<Option<String>> {
        Err(finishline_engine::Error::KeychainUnavailable("No OS keychain is available here (no secret service)".into()))
    }
    fn set(&self, a: &str, _: &str) -> finishline_engine::Result<()> {
        self.get(a).map(|_| ())
    }
    fn delete(&self, a: &str) -> finishline_engine::Result<()> {
        self.get(a).map(|_| ())
    }
}

#[test]
fn without_a_keychain_saving_fails_clearly_and_a_session_key_still_works() {
    let provider = ProviderSettings { preset: Some("openai".into()), ..Default::default() };
    let keys = Keys::new(Arc::new(NoKeychain));
    assert!(matches!(keys.keychain_status(), KeychainStatus::Unavailable { .. }), "the UI shows the keychain as missing");
    let e = keys.save(&provider, "sk-abc", KeyPlace::Keychain).expect_err("never a silent fallback to somewhere else");
    assert_eq!(e.code(), ErrorCode::KeychainUnavailable);
    assert!(matches!(keys.resolve(&provider).1, KeySource::Missing { .. } | KeySource::Env { .. }), "the failed save kept the key nowhere");
    keys.save(&provider, "sk-abc", KeyPlace::Session).expect("a session-only key needs no keychain");
    assert_eq!(keys.resolve(&provider), (ApiKey::new("sk-abc"), KeySource::Session));
    keys.forget(&provider).expect("forgetting works without a keychain too");
}

#[test]
fn the_os_keychain_without_a_secret_service_reports_itself_missing() {
    // No session bus at all: what a headless server or a CI runner has.
    std::env::set_var("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent/finishline-test-bus");
    let keys = Keys::new(Arc::new(OsKeychain::new("dev.finishline.test")));
    match keys.keychain_status() {
        KeychainStatus::Unavailable { reason } => {
            assert!(reason.contains("environment variable") && reason.contains("session only"), "the reason offers both alternatives: {reason}")
        }
        KeychainStatus::Available => panic!("there is no secret service on a bus that does not exist"),
    }
    let provider = ProviderSettings::default();
    assert_eq!(keys.save(&provider, "sk-x", KeyPlace::Keychain).unwrap_err().code(), ErrorCode::KeychainUnavailable);
}

#[tokio::test]
async fn test_connection_grades_a_model_that_streams_follows_and_calls_tools() {
    let text = r#"{"rules": [
        {"when": {"last_message_contains": "READY"}, "reply": {"text": "READY"}},
        {"when": {"last_message_contains": "save_word"}, "reply": {"tool_calls": [{"name": "save_word", "arguments": {"word": "hi"}}]}},
        {"reply": {"text": "OK"}}]}"#;
    let s = FakeServer::start(parse_scenario(text).unwrap()).await.unwrap();
    let r = check_provider(&settings(&s, Protocol::Openai, "fake-model"), None).await.unwrap();
    let kinds: Vec<(CheckKind, bool)> = r.checks.iter().map(|c| (c.kind, c.passed)).collect();
    assert_eq!(
        kinds,
        vec![(CheckKind::Streams, true), (CheckKind::FollowsInstruction, true), (CheckKind::CallsTools, true), (CheckKind::CleanTemplate, true)],
        "{:?}",
        r.checks
    );
}

#[tokio::test]
async fn test_connection_names_a_base_model_that_answers_with_template_tokens() {
    // What a base model behind a chat server writes: the conversation's own markup.
    let text = r#"{"rules": [{"reply": {"text": "Reply with exactly one word<|im_end|>\n<|im_start|>user\nReply with exactly one word<|im_end|>"}}]}"#;
    let s = FakeServer::start(parse_scenario(text).unwrap()).await.unwrap();
    let r = check_provider(&settings(&s, Protocol::Openai, "fake-model"), None).await.unwrap();
    let check = |k: CheckKind| r.checks.iter().find(|c| c.kind == k).cloned().unwrap();
    assert!(check(CheckKind::Streams).passed, "it streams; that is not the problem");
    assert!(!check(CheckKind::FollowsInstruction).passed);
    assert!(!check(CheckKind::CallsTools).passed && check(CheckKind::CallsTools).detail.contains("rarely act as an agent"));
    let template = check(CheckKind::CleanTemplate);
    assert!(!template.passed && template.detail.contains("probably a base model") && template.detail.contains("<|im_start|>"), "{}", template.detail);
}
