//! The real Gemini agent over ACP (npm, pinned in tests/agents), offline against the fake provider
//! speaking its vendor's protocol: what every preset must show to be called tested.

mod support {
    pub mod agent_turns;
    pub mod agents;
    pub mod harness;
}

use support::agent_turns::*;
use support::agents::Real;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gemini_cli_writes_a_new_file_is_judged_not_done_continued_then_finished_and_approved() {
    a_new_file_judged_not_done_is_continued_then_finished_and_approved(Real::Gemini).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_in_the_middle_of_a_gemini_cli_turn_ends_its_whole_process_group_and_records_the_session_cancelled() {
    cancel_mid_turn_ends_its_whole_process_group_and_records_the_session_cancelled(Real::Gemini).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gemini_cli_not_installed_says_the_exact_install_command() {
    not_installed_says_the_exact_install_command(Real::Gemini).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gemini_cli_without_a_key_or_login_says_how_to_log_in_in_its_own_words() {
    without_a_key_says_how_to_log_in_in_the_agents_own_words(
        Real::Gemini,
        &["Gemini API key is missing or not configured", "Log in with Google", "GEMINI_API_KEY"],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_of_gemini_cli_without_a_key_shows_it_installed_with_its_version_and_not_logged_in() {
    check_without_a_key_says_it_is_not_logged_in(Real::Gemini).await;
}

/// A key its server refuses: Gemini CLI fails the turn with the server's JSON body as it came,
/// which the person read raw. Said in the server's words, with what to check.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_its_server_refuses_fails_the_turn_in_the_servers_words_with_what_to_check() {
    use finishline_engine::event::EngineEvent;
    use serde_json::json;
    use support::agents::*;
    use support::harness::*;
    let home = tempfile::tempdir().unwrap();
    let real = Real::Gemini;
    let h = harness(real, home.path(), Some("fake-key")).await;
    let refused = r#"{"error":{"code":401,"message":"API key not valid. Please pass a valid API key.","status":"UNAUTHENTICATED"}}"#;
    let mut r = real.side_calls();
    r.extend([
        finishline_evaluator(done_verdict(), None),
        finishline_side_calls(),
        real.turn(json!({}), json!({"fault": {"type": "status", "status": 401, "body": refused}})),
    ]);
    h.server.set_scenario(rules(json!(r)));
    let o = h.run("Write hello.txt").await;
    let message = o.events.iter().rev().find_map(|e| if let EngineEvent::Error { message, .. } = &e.event { Some(message.clone()) } else { None }).unwrap();
    assert!(
        message.contains("answered 401 UNAUTHENTICATED: API key not valid")
            && message.contains("Check the key it reads from its environment")
            && !message.contains("{\""),
        "{message}"
    );
}
