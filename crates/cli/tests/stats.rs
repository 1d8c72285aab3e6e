//! `finishline stats evaluator` prints the figures the window's Trust view shows, from the same
//! history: here a history where the person rejected one `done` and approved another.

mod support {
    pub mod cli;
}

use std::sync::Arc;

use finishline_engine::domain::*;
use finishline_engine::event::EngineEvent;
use finishline_engine::store::decisions::RequestKind;
use finishline_engine::store::{NewSession, Store};
use support::cli::{env, finishline, lines};

fn decided(store: &Store, task: &str, decision: Decision) -> SessionId {
    let sid = store
        .create_session(&NewSession { task: task.into(), workspace: "/ws".into(), provider: "openai".into(), model: "agent".into(), base_url: None })
        .unwrap()
        .0;
    let (run, review) = (RunId::new(), RequestId::new());
    let status = |s| EngineEvent::StatusChanged { status: s, attempt: None, max_retries: None, next_retry_at: None, message: None };
    store
        .append_all(
            &sid,
            Some(&run),
            vec![
                EngineEvent::RunStarted { trigger: RunTrigger::Task },
                EngineEvent::Evaluation {
                    cycle: 1,
                    verdict: Verdict::Done,
                    summary: String::new(),
                    remaining: vec![],
                    stuck_reason: None,
                    model: "judge".into(),
                    parse_ok: true,
                    usage: Default::default(),
                    question: Default::default(),
                    repairs: 0,
                },
                EngineEvent::ReviewRequested {
                    review_id: review.clone(),
                    claim: Claim::Success,
                    verdict: Some(Verdict::Done),
                    end_reason: EndReason::VerifiedDone,
                    remaining: vec![],
                    files_changed: vec![],
                    verification: vec![],
                    tokens: Default::default(),
                    cost_usd: None,
                    round_cost_usd: None,
                    claim_words: None,
                    verdict_summary: None,
                    verdict_on_step: None,
                    stuck: None,
                    not_covered: vec![],
                    unrecorded: false,
                    not_landed: vec![],
                    in_submodules: vec![],
                    audit: vec![],
                    auto_approve: None,
                    criteria: vec![],
                },
                status(SessionStatus::AwaitingReview),
            ],
        )
        .unwrap();
    let after = if decision == Decision::Approve { SessionStatus::Completed } else { SessionStatus::Rejected };
    store
        .resolve_request(
            &review,
            RequestKind::Review,
            SessionStatus::AwaitingReview,
            Some(&run),
            vec![
                EngineEvent::ReviewResolved { review_id: review.clone(), decision, by: DecidedBy::Person, feedback: None, reverted: false, occasion: None },
                status(after),
            ],
        )
        .unwrap();
    sid
}

#[test]
fn stats_evaluator_prints_each_judges_false_done_rate_and_the_sessions_behind_it() {
    let e = env();
    std::fs::create_dir_all(&e.data).unwrap();
    let store = Store::open(&e.data.join("history.db"), Arc::new(finishline_engine::clock::SystemClock)).unwrap();
    let rejected = decided(&store, "rejected", Decision::Reject);
    decided(&store, "approved", Decision::Approve);
    drop(store);

    let json = finishline(&["stats", "evaluator", "--json"], &e.data);
    assert!(json.status.success(), "{}", String::from_utf8_lossy(&json.stderr));
    let rows = lines(&json);
    assert_eq!(rows.len(), 1, "one row per evaluator model");
    assert_eq!(rows[0]["model"], "judge");
    assert_eq!(rows[0]["reviews"], 2);
    assert_eq!(rows[0]["false_done_rate"], 0.5, "one of two `done` verdicts was rejected");
    assert_eq!(rows[0]["false_done"][0], rejected.as_str(), "the session behind the number");

    let text = finishline(&["stats", "evaluator"], &e.data);
    let out = String::from_utf8_lossy(&text.stdout);
    assert!(out.contains("judge") && out.contains("false done 1 review(s) (50%)") && out.contains(rejected.as_str()), "a person reads the same figures: {out}");
}

#[test]
fn stats_evaluator_on_a_history_without_reviews_says_so() {
    let e = env();
    std::fs::create_dir_all(&e.data).unwrap();
    drop(Store::open(&e.data.join("history.db"), Arc::new(finishline_engine::clock::SystemClock)).unwrap());
    let o = finishline(&["stats", "evaluator"], &e.data);
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stdout).contains("No reviews"), "an empty history is not a perfect judge");
}

#[test]
fn stats_alone_prints_both_figures_and_takes_its_options_before_or_after_the_figure() {
    let e = env();
    std::fs::create_dir_all(&e.data).unwrap();
    let store = Store::open(&e.data.join("history.db"), Arc::new(finishline_engine::clock::SystemClock)).unwrap();
    decided(&store, "one", Decision::Approve);
    drop(store);
    // `finishline stats --data-dir D` (what `--help` of the other commands teaches) was refused
    // by clap as an unexpected argument.
    let o = finishline(&["stats"], &e.data);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "stats alone: {}", String::from_utf8_lossy(&o.stderr));
    assert!(
        out.contains("Agents") && out.contains("verified done") && out.contains("Evaluators") && out.contains("judge"),
        "both figures, each under its name: {out}"
    );
    let json = lines(&finishline(&["stats", "--json"], &e.data));
    assert_eq!(json.len(), 1, "one object: {json:?}");
    assert_eq!(json[0]["agents"][0]["model"], "agent");
    assert_eq!(json[0]["evaluator"][0]["model"], "judge");
    // The options before the figure's name count as after it.
    let before = finishline(&["stats", "--json", "evaluator"], &e.data);
    assert!(before.status.success(), "{}", String::from_utf8_lossy(&before.stderr));
    assert_eq!(lines(&before)[0]["model"], "judge");
    let data_first = std::process::Command::new(support::cli::bin()).arg("stats").arg("--data-dir").arg(&e.data).arg("agents").output().unwrap();
    assert!(String::from_utf8_lossy(&data_first.stdout).contains("agent"), "{}", String::from_utf8_lossy(&data_first.stderr));
}

/// An agent that says "Done!" in its reply, without the `complete_task` claim, while the
/// evaluator finds work left, was caught claiming done as much as one that called the tool: the
/// agents' figures count it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_done_said_in_words_and_refused_by_the_evaluator_counts_as_a_false_claim() {
    use fake_llm::{FakeServer, Protocol};
    use serde_json::json;
    let verdict = |done: bool| {
        json!({"done": done, "summary": if done { "both lines are there" } else { "the second line is missing" }, "remaining": if done { json!([]) } else { json!(["write the second line"]) },
            "continuation_prompt": "Write the second line.", "is_stuck": false, "stuck_reason": ""})
        .to_string()
    };
    let server = FakeServer::start(
        serde_json::from_value(json!({"rules": [
            {"when": {"kind": "evaluator", "any_message_contains": "second line"}, "reply": {"text": verdict(true)}},
            {"when": {"kind": "evaluator"}, "reply": {"text": verdict(false)}},
            {"when": {"kind": "agent", "last_message_contains": "Wrote notes.md"}, "reply": {"text": "Done! notes.md is written."}},
            {"when": {"kind": "agent", "last_message_contains": "Write the second line"}, "reply": {"text": "Adding the second line.", "tool_calls": [{"name": "write_file", "arguments": {"path": "notes.md", "content": "one\nsecond line\n"}}]}},
            {"when": {"kind": "agent", "last_message_contains": "Created notes.md"}, "reply": {"text": "Done! notes.md is written."}},
            {"when": {"kind": "agent"}, "reply": {"text": "Writing.", "tool_calls": [{"name": "write_file", "arguments": {"path": "notes.md", "content": "one\n"}}]}}
        ]}))
        .unwrap(),
    )
    .await
    .unwrap();
    let e = env();
    let url = server.base_url(Protocol::Openai);
    let ws = e.ws.to_string_lossy().to_string();
    let run = tokio::task::block_in_place(|| {
        finishline(&["run", "write notes.md with two lines", "--workspace", &ws, "--base-url", &url, "--model", "m", "--json", "--review", "approve"], &e.data)
    });
    assert_eq!(run.status.code(), Some(0), "{}", String::from_utf8_lossy(&run.stderr));
    let stats = lines(&finishline(&["stats", "agents", "--json"], &e.data));
    assert_eq!(stats[0]["false_claims"], 1, "the agent said it was done and was not: {stats:?}");
    assert_eq!(stats[0]["verified_done"], 1, "{stats:?}");
}
