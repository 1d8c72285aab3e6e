//! The real Claude agent over ACP (npm, pinned in tests/agents), offline against the fake provider
//! speaking its vendor's protocol: what every preset must show to be called tested.

mod support {
    pub mod agent_turns;
    pub mod agents;
    pub mod harness;
}

use support::agent_turns::*;
use support::agents::Real;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_code_writes_a_new_file_is_judged_not_done_continued_then_finished_and_approved() {
    a_new_file_judged_not_done_is_continued_then_finished_and_approved(Real::Claude).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_in_the_middle_of_a_claude_code_turn_ends_its_whole_process_group_and_records_the_session_cancelled() {
    cancel_mid_turn_ends_its_whole_process_group_and_records_the_session_cancelled(Real::Claude).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_code_not_installed_says_the_exact_install_command() {
    not_installed_says_the_exact_install_command(Real::Claude).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_code_without_a_key_or_login_says_how_to_log_in_in_its_own_words() {
    without_a_key_says_how_to_log_in_in_the_agents_own_words(Real::Claude, &["Anthropic Console", "auth login --console"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_of_claude_code_without_a_key_shows_it_installed_with_its_version_and_not_logged_in() {
    check_without_a_key_says_it_is_not_logged_in(Real::Claude).await;
}

/// A key Claude Code is given and its server refuses: Claude Code says "Invalid API key" as its
/// reply, then fails the turn with a bare "Authentication required". The person read "Claude
/// Code needs you to log in" and went to log in, with a key that was the thing to fix.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_claude_codes_server_refuses_is_named_as_the_thing_to_fix_not_a_login() {
    use finishline_engine::event::EngineEvent;
    use serde_json::json;
    use support::agents::*;
    use support::harness::*;
    let home = tempfile::tempdir().unwrap();
    let real = Real::Claude;
    let dir = home.path().to_path_buf();
    // Its own retries (three minutes of them) are not what is tested here.
    let agent_for = move |server: &fake_llm::FakeServer| {
        let mut a = real.agent(server, &dir, Some("wrong-key"));
        a.env.insert("CLAUDE_CODE_MAX_RETRIES".into(), "0".into());
        a
    };
    let h = Harness::new(rules(json!([])), Setup { agent_for: Some(Box::new(agent_for)), permissions: Default::default(), ..Setup::default() }).await;
    let refused = r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#;
    let mut r = real.side_calls();
    r.extend([
        finishline_evaluator(done_verdict(), None),
        finishline_side_calls(),
        real.turn(json!({}), json!({"fault": {"type": "status", "status": 401, "body": refused}})),
    ]);
    h.server.set_scenario(rules(json!(r)));
    let o = h.run("Write hello.txt").await;
    let message = o.events.iter().rev().find_map(|e| if let EngineEvent::Error { message, .. } = &e.event { Some(message.clone()) } else { None }).unwrap();
    assert!(message.starts_with("Claude Code says the API key it was given is refused (Invalid API key"), "{message}");
    assert!(message.contains("check the key in its environment"), "{message}");
}
