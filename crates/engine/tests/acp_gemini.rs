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
