//! The provider layer against a real model: llama.cpp's server with SmolLM2-135M, started by
//! `shared/tools/local-llm`. No mocks: the real OpenAI-compatible wire protocol, real usage, real
//! finish reasons, and `json_schema` output from a model that writes odd JSON when left alone.
//! If the model cannot be set up, these tests fail loudly; they never skip.

use std::path::PathBuf;
use std::process::Command;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use finishline_engine::provider::{
    stream_with_retry, ChatMessage, CompletionEvent, CompletionRequest, HttpProvider, ProviderConfig, RetryPolicy, StopReason, StructuredMode,
    StructuredOutput, ToolSpec,
};
use finishline_engine::ProviderKind;
use futures_util::StreamExt;
use serde_json::json;

/// One request at a time: llama.cpp's output depends on what else is in its batch, so a test
/// sharing the server's two slots with another could see SmolLM2 loop where alone it does not
/// (the manager's plan did, once, in CI). Each test asks as a person's single task would.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn local_llm_script() -> PathBuf {
    if let Ok(p) = std::env::var("FINISHLINE_LOCAL_LLM") {
        return p.into();
    }
    // The repo's sibling `shared/` folder, as on developer machines and in CI.
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/tools/local-llm")
}

fn base_url() -> &'static str {
    static URL: OnceLock<String> = OnceLock::new();
    URL.get_or_init(|| {
        let script = local_llm_script();
        assert!(script.exists(), "the local model launcher is missing at {}; set FINISHLINE_LOCAL_LLM", script.display());
        let out = Command::new("bash").arg(&script).arg("start").output().expect("run local-llm start");
        assert!(out.status.success(), "local-llm could not start the real model:\n{}", String::from_utf8_lossy(&out.stderr));
        let url = String::from_utf8_lossy(&out.stdout).lines().last().unwrap_or_default().trim().to_string();
        assert!(url.starts_with("http://127.0.0.1:"), "local-llm printed no base URL: {url:?}");
        url
    })
}

async fn run(req: CompletionRequest) -> (String, Option<StopReason>, Option<finishline_engine::provider::Usage>) {
    let mut config = ProviderConfig::new(ProviderKind::Openai, base_url(), None);
    config.idle_timeout = Duration::from_secs(60);
    let provider = Arc::new(HttpProvider::new(config).unwrap());
    let mut s = stream_with_retry(provider, req, RetryPolicy::default(), Arc::new(|_| {}));
    let (mut text, mut stop, mut usage) = (String::new(), None, None);
    while let Some(item) = s.next().await {
        match item.expect("the real model's stream must parse without error") {
            CompletionEvent::TextDelta { text: t } => text.push_str(&t),
            CompletionEvent::Stop { reason } => stop = Some(reason),
            CompletionEvent::Usage { usage: u } => usage = Some(u),
            _ => {}
        }
    }
    (text, stop, usage)
}

fn ask(system: &str, user: &str, max_tokens: u32) -> CompletionRequest {
    CompletionRequest {
        model: "smollm2".into(),
        system: system.into(),
        messages: vec![ChatMessage::User { content: user.into() }],
        max_tokens: Some(max_tokens),
        temperature: Some(0.0),
        ..Default::default()
    }
}

#[tokio::test]
async fn a_real_model_streams_an_answer_with_usage_and_a_finish_reason() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let (text, stop, usage) = run(ask("You are a helpful assistant.", "Name three fruits.", 48)).await;
    assert!(!text.trim().is_empty(), "the model must say something");
    assert!(matches!(stop, Some(StopReason::EndTurn | StopReason::Length)), "a real stream ends with a finish reason, got {stop:?}");
    let u = usage.expect("include_usage makes the server report tokens");
    assert!(u.input_tokens > 0 && u.output_tokens > 0, "both sides of usage are counted: {u:?}");
    assert!(u.output_tokens <= 48, "max_tokens was sent and honoured");
}

#[tokio::test]
async fn a_real_model_cut_by_max_tokens_reports_length() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let (_, stop, _) = run(ask("You are a helpful assistant.", "Write a long story about a dragon.", 5)).await;
    assert_eq!(stop, Some(StopReason::Length), "a 5-token budget on a story must be reported as a cut, not a finish");
}

#[tokio::test]
async fn json_schema_output_from_a_real_model_parses() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let mut req = ask("You judge whether a task is finished.", "Task: create notes.md. The agent wrote notes.md with three fruits. Is it done?", 200);
    req.structured = Some(StructuredOutput {
        name: "verdict".into(),
        schema: json!({
            "type": "object",
            "properties": {"done": {"type": "boolean"}, "summary": {"type": "string", "maxLength": 200}},
            "required": ["done", "summary"],
            "additionalProperties": false
        }),
        mode: StructuredMode::Native,
    });
    let (text, stop, _) = run(req).await;
    assert_eq!(stop, Some(StopReason::EndTurn), "the constrained answer ends normally: {text}");
    let v: serde_json::Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("json_schema output must parse ({e}): {text}"));
    assert!(v["done"].is_boolean(), "the schema's boolean is a boolean: {v}");
    assert!(v["summary"].is_string());
}

#[tokio::test]
async fn a_real_server_accepts_our_tool_definitions() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let mut req = ask("You are an agent. Use tools when useful.", "List the files in the workspace.", 64);
    req.tools = vec![ToolSpec {
        name: "list_dir".into(),
        description: "List a directory of the workspace".into(),
        input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
    }];
    let (_, stop, usage) = run(req).await;
    assert!(stop.is_some(), "with tools the server still streams to a finish");
    assert!(usage.is_some());
}

#[tokio::test]
async fn the_evaluator_gets_a_parsed_verdict_from_the_real_model() {
    let _alone = ONE_AT_A_TIME.lock().await;
    use finishline_engine::judge::evaluator::{evaluate, EvaluatorInput};
    let config = ProviderConfig::new(ProviderKind::Openai, base_url(), None);
    let provider: Arc<dyn finishline_engine::provider::Provider> = Arc::new(HttpProvider::new(config).unwrap());
    let input = EvaluatorInput {
        task: "Create notes.md listing three fruits".into(),
        files_changed: vec!["created notes.md".into()],
        transcript_digest:
            "AGENT CALLED write_file({\"path\": \"notes.md\", \"content\": \"- apple\\n- banana\\n- cherry\"})\nTOOL write_file returned: Created notes.md"
                .into(),
        ..Default::default()
    };
    let r = evaluate(provider, "smollm2", &input, RetryPolicy::default(), std::sync::Arc::new(|_| {}), &tokio_util::sync::CancellationToken::new())
        .await
        .expect("not cancelled");
    assert!(r.parse_ok, "json_schema output constrains even the tiny model: {:?}", r.outcome);
    assert!(r.usage.output_tokens > 0, "the evaluator's tokens are counted");
    assert!(r.calls <= 2, "at most one repair retry");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn test_connection_grades_the_real_model_in_seconds() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let provider = HttpProvider::new(ProviderConfig::new(ProviderKind::Openai, base_url(), None)).unwrap();
    let started = std::time::Instant::now();
    let report = finishline_engine::provider::check_connection(&provider, "").await.expect("the real server answers");
    assert!(started.elapsed() < Duration::from_secs(45), "grading takes seconds, not minutes ({:?})", started.elapsed());
    let kinds: Vec<_> = report.checks.iter().map(|c| c.kind).collect();
    use finishline_engine::provider::CheckKind::*;
    assert_eq!(kinds, vec![Streams, FollowsInstruction, CallsTools, CleanTemplate], "every behaviour is graded: {:?}", report.checks);
    assert!(report.checks[0].passed, "llama.cpp streams with a finish reason: {:?}", report.checks[0]);
    println!("SmolLM2 graded: {:?}", report.checks.iter().map(|c| (c.kind, c.passed)).collect::<Vec<_>>());
}

#[tokio::test]
async fn the_manager_gets_a_usable_plan_from_the_real_model() {
    let _alone = ONE_AT_A_TIME.lock().await;
    use finishline_engine::plan::{make_plan, PlannerInput, MAX_STEPS};
    let provider: Arc<dyn finishline_engine::provider::Provider> =
        Arc::new(HttpProvider::new(ProviderConfig::new(ProviderKind::Openai, base_url(), None)).unwrap());
    let input = PlannerInput {
        task: "Create notes.md listing three fruits, then create summary.md that counts them".into(),
        listing: vec!["README.md".into()],
        instructions: None,
        may_skip: false,
    };
    let r = make_plan(provider, "smollm2", &input, RetryPolicy::default(), std::sync::Arc::new(|_| {}), &tokio_util::sync::CancellationToken::new())
        .await
        .expect("not cancelled");
    let plan = r.plan.expect("json_schema output constrains even the tiny model to a plan");
    assert!((1..=MAX_STEPS).contains(&plan.steps.len()), "a plan has 1 to 7 steps: {plan:?}");
    assert!(plan.steps.iter().all(|s| !s.title.trim().is_empty()), "every step has a title the person can read: {plan:?}");
    assert!(r.calls <= 2, "at most one repair");
    println!("SmolLM2's plan: {:?}", plan.steps.iter().map(|s| &s.title).collect::<Vec<_>>());
}
