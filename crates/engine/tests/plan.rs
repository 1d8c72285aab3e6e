//! Plan mode's task ledger: the manager's plan read through the structured-answer ladder, from a
//! clean answer, from prose, and from an answer that needs its one repair.

use std::sync::Arc;

use fake_llm::{FakeServer, Protocol};
use finishline_engine::judge::ladder::Unusable;
use finishline_engine::plan::{make_plan, parse_plan, PlannerInput, MAX_STEPS};
use finishline_engine::provider::{HttpProvider, Provider, ProviderConfig, RetryPolicy};
use finishline_engine::ProviderKind;
use serde_json::json;
use tokio_util::sync::CancellationToken;

const GOOD: &str = r#"{"steps": [
  {"title": "Read the reports", "instructions": "Read every file in reports/", "criteria": ["every report was opened"], "depends_on": []},
  {"title": "Write the summary", "instructions": "Write summary.md from the reports", "criteria": ["summary.md exists", "it names every report"], "depends_on": [0]}
]}"#;

#[test]
fn a_clean_plan_is_read_with_its_criteria_and_dependencies() {
    let plan = parse_plan(GOOD).unwrap();
    assert_eq!(plan.steps.len(), 2);
    assert_eq!(plan.steps[1].title, "Write the summary");
    assert_eq!(plan.steps[1].criteria, vec!["summary.md exists", "it names every report"], "the evaluator judges each step against its criteria");
    assert_eq!(plan.steps[1].depends_on, vec![0]);
    assert!(!plan.is_single());
}

#[test]
fn a_plan_in_prose_or_as_plain_strings_is_still_read() {
    let fenced = format!("Here is the plan:\n```json\n{GOOD}\n```\nGood luck!");
    assert_eq!(parse_plan(&fenced).unwrap().steps.len(), 2, "a small model wraps JSON in prose and fences");
    let bare = parse_plan(r#"Plan: ["Rename old.txt to new.txt"] done"#).unwrap();
    assert!(bare.is_single(), "a bare list of step texts is a plan too");
    assert_eq!(bare.steps[0].instructions, "Rename old.txt to new.txt");
    let loose = parse_plan(r#"{"steps": [{"title": "Fix it", "criteria": "tests pass", "depends_on": [3, 0]}]}"#).unwrap();
    assert_eq!(loose.steps[0].criteria, vec!["tests pass"], "criteria given as one string count");
    assert_eq!(loose.steps[0].instructions, "Fix it", "a step with only a title uses it as its instructions");
    assert!(loose.steps[0].depends_on.is_empty(), "a step can only wait for earlier steps: the rest is dropped, not fatal");
}

#[test]
fn no_steps_too_many_steps_or_no_json_say_what_is_wrong() {
    assert!(parse_plan(r#"{"steps": []}"#).unwrap_err().contains("no steps"));
    let many: Vec<String> = (0..MAX_STEPS + 2).map(|i| format!("\"step {i}\"")).collect();
    let err = parse_plan(&format!("{{\"steps\": [{}]}}", many.join(","))).unwrap_err();
    assert!(err.contains("at most 7"), "the repair message says how to fix it: {err}");
    assert!(parse_plan("I would start by reading the files.").unwrap_err().contains("no JSON"));
}

async fn planner(rules: serde_json::Value) -> (FakeServer, Arc<dyn Provider>) {
    let server = FakeServer::start(serde_json::from_value(json!({ "rules": rules })).unwrap()).await.unwrap();
    let provider: Arc<dyn Provider> = Arc::new(HttpProvider::new(ProviderConfig::new(ProviderKind::Openai, server.base_url(Protocol::Openai), None)).unwrap());
    (server, provider)
}

fn input() -> PlannerInput {
    PlannerInput {
        task: "Summarise the reports into summary.md".into(),
        listing: vec!["reports/q1.md".into(), "reports/q2.md".into()],
        instructions: Some(("AGENTS.md".into(), "Write British English.".into())),
        may_skip: true,
    }
}

#[tokio::test]
async fn the_manager_is_asked_with_the_task_the_files_and_the_projects_rules() {
    let (server, provider) = planner(json!([{"when": {}, "reply": {"text": GOOD}}])).await;
    let r = make_plan(provider, "manager", &input(), RetryPolicy::default(), std::sync::Arc::new(|_| {}), &CancellationToken::new()).await.unwrap();
    assert_eq!(r.plan.unwrap().steps.len(), 2);
    assert_eq!(r.calls, 1);
    let req = &server.requests()[0];
    assert!(
        req.all_text.contains("reports/q2.md") && req.all_text.contains("Write British English."),
        "the manager sees the workspace and the project's instructions"
    );
    assert!(req.system.contains("exactly one step"), "in Auto the manager may decline to plan a small task");
}

#[tokio::test]
async fn a_manager_reply_that_is_not_json_gets_one_repair_then_is_unusable() {
    let (server, provider) = planner(json!([
        {"when": {"last_message_contains": "could not be used"}, "reply": {"text": GOOD}},
        {"when": {}, "reply": {"text": "First I would read the reports, then write it."}}
    ]))
    .await;
    let r = make_plan(provider, "manager", &input(), RetryPolicy::default(), std::sync::Arc::new(|_| {}), &CancellationToken::new()).await.unwrap();
    assert_eq!(r.plan.unwrap().steps.len(), 2, "the repair message gets a usable plan");
    assert_eq!((r.calls, server.requests().len()), (2, 2), "exactly one repair call");

    let (_server, provider) = planner(json!([{"when": {}, "reply": {"text": "no plan from me"}}])).await;
    let r = make_plan(provider, "manager", &input(), RetryPolicy::default(), std::sync::Arc::new(|_| {}), &CancellationToken::new()).await.unwrap();
    assert!(matches!(r.plan, Err(Unusable::Unparseable(_))), "two unusable answers end planning with a reason, never a made-up plan: {:?}", r.plan);
    assert_eq!(r.calls, 2);
}
