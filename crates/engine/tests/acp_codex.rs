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
