//! The real Codex agent over ACP (npm, pinned in tests/agents), offline against the fake provider
//! speaking its vendor's protocol: what every preset must show to be called tested.

mod support {
    pub mod agent_turns;
    pub mod agents;
    pub mod harness;
}

use support::agent_turns::*;
use support::agents::Real;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_writes_a_new_file_is_judged_not_done_continued_then_finished_and_approved() {
    a_new_file_judged_not_done_is_continued_then_finished_and_approved(Real::Codex).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_in_the_middle_of_a_codex_turn_ends_its_whole_process_group_and_records_the_session_cancelled() {
    cancel_mid_turn_ends_its_whole_process_group_and_records_the_session_cancelled(Real::Codex).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_not_installed_says_the_exact_install_command() {
    not_installed_says_the_exact_install_command(Real::Codex).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_without_a_key_or_login_says_how_to_log_in_in_its_own_words() {
    without_a_key_says_how_to_log_in_in_the_agents_own_words(Real::Codex, &["API Key", "OPENAI_API_KEY", "ChatGPT"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_of_codex_without_a_key_shows_it_installed_with_its_version_and_not_logged_in() {
    check_without_a_key_says_it_is_not_logged_in(Real::Codex).await;
}

/// Codex says its model server's failure as its reply ("unexpected status 503 …") and ends the
/// turn as if it had answered. Asked to write a file, that reply is no answer: the conversation
/// check asks whether what the person asked for was left undone (an evaluator answering that
/// question says yes), and Codex is sent back; once its server answers, the file is written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_codex_turn_its_model_server_failed_is_not_taken_for_an_answer_and_codex_is_sent_back() {
    use finishline_engine::domain::{ContinuationSource, SessionStatus};
    use serde_json::json;
    use support::agents::*;
    use support::harness::*;
    let home = tempfile::tempdir().unwrap();
    let real = Real::Codex;
    let h = harness(real, home.path(), Some("fake-key")).await;
    let ws = h.ws().canonicalize().unwrap();
    let mut r = real.side_calls();
    r.extend([
        // The conversation check, answered as its question asks: the person asked for a file.
        json!({"when": {"protocol": "openai", "system_contains": "asked for work"}, "reply": {"text": r#"{"left_undone": true, "action": "write hello.txt"}"#}, "times": 1}),
        finishline_evaluator(done_verdict(), None),
        finishline_side_calls(),
        real.turn(json!({"last_message_contains": "Do it now"}), json!({"tool_calls": [real.write(&ws, "hello.txt", "hi\n")]})),
        real.turn(json!({"last_message_contains": real.wrote()}), json!({"text": "Wrote hello.txt."})),
        // Every try of the first turn (Codex retries a 503 itself) fails.
        real.turn(json!({}), json!({"fault": {"type": "status", "status": 503, "body": "{\"error\":{\"message\":\"overloaded\"}}"}})),
    ]);
    h.server.set_scenario(rules(json!(r)));
    let (sid, handle) = h.engine.start_session("Write hello.txt with hi in it", &h.ws()).unwrap();
    let person = allow_once_as_asked(&h, &sid);
    if tokio::time::timeout(std::time::Duration::from_secs(120), handle).await.is_err() {
        let o = h.outcome(&sid);
        panic!("the run did not end in time: {}\n{}", story(&o), requests(&o));
    }
    let o = h.outcome(&sid);
    assert_eq!(o.continuations(), vec![ContinuationSource::MissingAction], "the failed turn was sent back, not taken for an answer: {}", story(&o));
    assert_eq!(o.status, SessionStatus::AwaitingReview, "{}\n{}", story(&o), requests(&o));
    assert_eq!(h.read("hello.txt").as_deref(), Some("hi\n"), "{}", story(&o));
    person.abort();
}
