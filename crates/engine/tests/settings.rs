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

#[test]
fn a_broken_settings_file_is_reported_not_replaced() {
    let err = Settings::from_store_value(Some(json!({"provider": {"kind": "skynet"}}))).unwrap_err();
    assert_eq!(err.code(), ErrorCode::SettingsUnreadable, "silently resetting would lose what the person typed");
    let as_json = serde_json::to_value(&err).unwrap();
    assert_eq!(as_json["code"], "settings_unreadable", "errors reach the UI as {{code, message}}");
    assert!(as_json["message"].as_str().unwrap().contains("settings"), "the message says what is wrong");
}

#[test]
fn a_base_url_that_is_not_a_url_names_the_field() {
    let mut s = Settings::default();
    s.provider.base_url = "localhost 8080".into();
    let err = s.validate().unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidSettings);
    assert!(err.to_string().starts_with("provider.base_url"), "the person must know which field to fix: {err}");
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
