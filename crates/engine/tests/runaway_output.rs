//! Runaway output from weak local models, through the whole loop and the fake provider: an answer
//! that repeats itself is stopped within the step as stuck, raw chat-template tokens are named,
//! and a step that outlives its time limit is stopped. What was shown is always kept. And a model
//! server with a small context: a request it refuses is compacted to fit the size it reports, or
//! the person is told that size and how to raise it.

mod support {
    pub mod harness;
}

use std::time::{Duration, Instant};

use finishline_engine::domain::*;
use finishline_engine::event::EngineEvent;
use serde_json::json;
use support::harness::*;

fn shown_text(o: &Outcome) -> String {
    o.events.iter().filter_map(|e| if let EngineEvent::TextDelta { text, .. } = &e.event { Some(text.as_str()) } else { None }).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_repeating_one_line_is_stopped_mid_stream_as_repeating_output() {
    // 400 repetitions streamed slowly: the whole answer would take 40 s.
    let line = "write a file named hello.txt that contains the word hi\n";
    let h = Harness::new(rules(json!([agent(json!({}), json!({"text": line.repeat(400), "chunks": 400, "chunk_delay_ms": 100}))])), Setup::default()).await;
    let started = Instant::now();
    let o = h.run("write a file named hello.txt that contains the word hi").await;
    assert!(started.elapsed() < Duration::from_secs(20), "the repetition is stopped within the step, not after the whole answer ({:?})", started.elapsed());
    assert!(shown_text(&o).matches("hello.txt").count() < 200, "stopped long before its end");
    assert_eq!(o.status, SessionStatus::AwaitingReview, "a runaway answer goes to the person as stuck");
    assert_eq!(o.end_reason, Some(EndReason::Stuck));
    let stuck = o
        .events
        .iter()
        .find_map(|e| if let EngineEvent::ReviewRequested { stuck, .. } = &e.event { stuck.clone() } else { None })
        .expect("the review names the pattern");
    assert_eq!(stuck.pattern, StuckPattern::RepeatingOutput);
    assert_eq!(stuck.repeated, "write a file named hello.txt that contains the word hi", "the review quotes what repeated");
    assert!(shown_text(&o).matches("hello.txt").count() >= 8, "what was shown is kept");
    assert_eq!(o.model_calls(), 1, "no continuation is spent on a hopeless answer");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wall_of_hash_lines_is_stopped_in_seconds_as_repeating_output() {
    // SmolLM2 in the window: "#" line after line until the server's context was full (minutes).
    let wall = "Here is hello.txt:\n".to_string() + &"#\n".repeat(2000);
    let h = Harness::new(rules(json!([agent(json!({}), json!({"text": wall, "chunks": 2000, "chunk_delay_ms": 50}))])), Setup::default()).await;
    let started = Instant::now();
    let o = h.run("write a file named hello.txt that contains the word hi").await;
    assert!(started.elapsed() < Duration::from_secs(10), "stopped within the step ({:?}); the whole wall takes 100 s", started.elapsed());
    assert_eq!(o.end_reason, Some(EndReason::Stuck));
    let stuck = o
        .events
        .iter()
        .find_map(|e| if let EngineEvent::ReviewRequested { stuck, .. } = &e.event { stuck.clone() } else { None })
        .expect("the review names the pattern");
    assert_eq!((stuck.pattern, stuck.repeated.as_str()), (StuckPattern::RepeatingOutput, "#"), "the review quotes the unit that repeated");
    assert_eq!(o.model_calls(), 1, "no truncation continuation or compaction is spent on it");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_of_only_blank_lines_is_repeating_output() {
    let h = Harness::new(rules(json!([agent(json!({}), json!({"text": "\n".repeat(3000), "chunks": 1000, "chunk_delay_ms": 50}))])), Setup::default()).await;
    let started = Instant::now();
    let o = h.run("write a file named hello.txt that contains the word hi").await;
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
    let stuck = o
        .events
        .iter()
        .find_map(|e| if let EngineEvent::ReviewRequested { stuck, .. } = &e.event { stuck.clone() } else { None })
        .expect("the review names the pattern");
    assert_eq!(stuck.pattern, StuckPattern::RepeatingOutput);
    assert_eq!(stuck.repeated, finishline_engine::judge::runaway::WHITESPACE, "blank space is named in words the person can read");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_template_tokens_in_an_answer_are_named_in_plain_words() {
    let leak = "Sure, I will write it.<|im_end|>\n<|im_start|>user\nwrite a file named hello.txt<|im_end|>\n<|im_start|>assistant\nSure.";
    let h = Harness::new(rules(json!([agent(json!({}), json!({"text": leak}))])), Setup::default()).await;
    let o = h.run("write a file named hello.txt that contains the word hi").await;
    assert_eq!(o.status, SessionStatus::Failed, "the agent loop does not go on with a model that cannot hold a conversation");
    let (code, message) = o
        .events
        .iter()
        .find_map(|e| if let EngineEvent::Error { code, message } = &e.event { Some((*code, message.clone())) } else { None })
        .expect("an error the person sees");
    assert_eq!(code, finishline_engine::ErrorCode::ChatTemplate);
    assert!(message.contains("base model") && message.contains("<|im_start|>"), "the diagnosis says what it means and what was seen: {message}");
    assert!(shown_text(&o).contains("Sure, I will write it."), "what was shown is kept");
    assert_eq!(o.model_calls(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_that_outlives_its_time_limit_is_stopped_and_says_so() {
    let h = Harness::new(
        rules(json!([agent(
            json!({}),
            json!({"text": "thinking very slowly about every single word of this answer. ".repeat(6), "chunks": 60, "chunk_delay_ms": 500})
        )])),
        Setup { step_limit: Duration::from_secs(2), ..Default::default() },
    )
    .await;
    let started = Instant::now();
    let o = h.run("anything").await;
    // The whole answer would take 30 s.
    assert!(started.elapsed() < Duration::from_secs(15), "stopped at the limit ({:?})", started.elapsed());
    assert_eq!(o.status, SessionStatus::Failed);
    let message = o
        .events
        .iter()
        .find_map(|e| match &e.event {
            EngineEvent::Error { code, message } if *code == finishline_engine::ErrorCode::StepTimeout => Some(message.clone()),
            _ => None,
        })
        .expect("a step_timeout error");
    assert!(message.contains("step limit (2 s)") && message.contains("Settings"), "{message}");
    assert!(shown_text(&o).contains("thinking"), "what was shown is kept");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ordinary_long_answer_with_repeated_short_lines_is_not_stopped() {
    let code = (0..60).map(|i| format!("fn f{i}() {{\n    step_{i}();\n}}\n\n")).collect::<String>();
    let answer = format!("Here is the module, complete as the task asked; nothing is left to do.\n```rust\n{code}```\n");
    let h = Harness::new(rules(json!([evaluator(done_verdict()), agent(json!({}), json!({"text": answer}))])), Setup::default()).await;
    let o = h.run("write sixty functions").await;
    assert_ne!(o.end_reason, Some(EndReason::Stuck), "closing braces and blank lines are not repetition");
    assert!(shown_text(&o).contains("fn f59()"), "the whole answer streamed");
}

/// A server like llama.cpp with `-c 8192 --parallel 2`: 4096 tokens a request, counted at two
/// characters a token (code and symbols), so Finishline's characters / 4 estimate falls short.
fn small_server(tokens: u64, rules: serde_json::Value) -> fake_llm::Scenario {
    let mut s = support::harness::rules(rules);
    s.context_limit = Some(fake_llm::ContextLimit { tokens, chars_per_token: 2.0 });
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_the_server_refuses_as_too_long_is_compacted_to_fit_the_size_it_reports() {
    // A long answer cut by the output limit: its truncation continuation no longer fits.
    let long: String = (0..100).map(|i| format!("fn step_{i}() {{ write(\"hello.txt\", {i}); }}\n")).collect();
    let h = Harness::new(
        small_server(4096, json!([
            {"when": {"kind": "compaction"}, "reply": {"text": "The task is to write hello.txt containing hi; nothing is written yet."}},
            evaluator(done_verdict()),
            agent(json!({"last_message_contains": "Created"}), json!({"text": DONE})),
            agent(json!({"last_message_contains": "<summary>"}), json!({"tool_calls": [{"name": "write_file", "arguments": {"path": "hello.txt", "content": "hi"}}]})),
            agent(json!({}), json!({"text": long, "finish": "length"})),
        ])),
        Setup::default(),
    )
    .await;
    let started = Instant::now();
    let o = h.run("write a file named hello.txt that contains the word hi").await;
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
    let errors: Vec<_> = o.events.iter().filter_map(|e| if let EngineEvent::Error { message, .. } = &e.event { Some(message.clone()) } else { None }).collect();
    assert!(errors.is_empty(), "the refusal is handled, not shown as a failure: {errors:?}");
    assert_eq!(o.end_reason, Some(EndReason::VerifiedDone), "the run goes on after the compaction and finishes");
    assert_eq!(h.read("hello.txt").as_deref(), Some("hi"));
    let refused = o
        .requests
        .iter()
        .filter(|r| r.kind == fake_llm::RequestKind::Agent && fake_llm::ContextLimit { tokens: 4096, chars_per_token: 2.0 }.count(r) > 4096)
        .count();
    assert_eq!(refused, 1, "one refused request, then every request fits the server's 4096 tokens");
    assert!(o.has(|e| matches!(e, EngineEvent::MessageCreated { role: MessageRole::Summary, .. })), "the compaction is shown as a summary marker");
    // A follow-up or a resume rebuilds the conversation from the log: the same fitted one.
    let rebuilt = finishline_engine::agent::history::rebuild(&o.events);
    let text: String = rebuilt.iter().map(|m| format!("{m:?}")).collect();
    assert!(
        text.starts_with("User { content: \"<summary>") && !text.contains("fn step_99"),
        "the rebuilt conversation starts at the summary, without what did not fit: {text:.300}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_summary_that_repeats_itself_is_stopped_and_the_digest_stands_in() {
    // SmolLM2 asked to summarise a long task copied one of its lines 800 tokens long.
    let task =
        "Summarise these notes into notes.md:\n".to_string() + &(0..300).map(|i| format!("note {i}: the fox jumps over the lazy dog\n")).collect::<String>();
    let h = Harness::new(
        small_server(
            4096,
            json!([
                {"when": {"kind": "compaction"}, "reply": {"text": "the fox fox over seven lazy\n".repeat(200), "chunks": 200, "chunk_delay_ms": 100}},
                evaluator(done_verdict()),
                agent(json!({"last_message_contains": "Created"}), json!({"text": DONE})),
                agent(json!({}), json!({"tool_calls": [{"name": "write_file", "arguments": {"path": "notes.md", "content": "- notes"}}]})),
            ]),
        ),
        Setup::default(),
    )
    .await;
    let started = Instant::now();
    let o = h.run(&task).await;
    assert!(started.elapsed() < Duration::from_secs(10), "the runaway summary is cut short; all of it takes 20 s ({:?})", started.elapsed());
    let summary = o
        .events
        .iter()
        .find_map(|e| match &e.event {
            EngineEvent::MessageCreated { role: MessageRole::Summary, text, .. } => text.clone(),
            _ => None,
        })
        .expect("a summary");
    assert!(
        summary.matches("the fox fox over seven lazy").count() < 8 && summary.contains("note 299"),
        "the digest of the conversation stands in: {summary:.300}"
    );
    assert_eq!(o.end_reason, Some(EndReason::VerifiedDone));
    let compaction: u64 = h.store.usage_by_source(&o.session).unwrap().iter().filter(|(s, ..)| *s == UsageSource::Compaction).map(|(_, i, o)| i + o).sum();
    assert!(compaction > 0, "what the cut-short summary cost is still counted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_context_too_small_for_the_agent_fails_with_its_size_and_how_to_raise_it() {
    // The tools and instructions alone are more than this server takes.
    let h = Harness::new(
        small_server(
            2000,
            json!([
                {"when": {"kind": "compaction"}, "reply": {"text": "The task is to write hello.txt containing hi."}},
                agent(json!({}), json!({"text": DONE})),
            ]),
        ),
        Setup::default(),
    )
    .await;
    let started = Instant::now();
    let o = h.run("write a file named hello.txt that contains the word hi").await;
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
    assert_eq!(o.status, SessionStatus::Failed);
    let (code, message) = o
        .events
        .iter()
        .find_map(|e| if let EngineEvent::Error { code, message } = &e.event { Some((*code, message.clone())) } else { None })
        .expect("an error the person sees");
    assert_eq!(code, finishline_engine::ErrorCode::ContextTooLong);
    assert!(message.contains("context of 2000 tokens"), "names the server's context: {message}");
    assert!(message.contains("-c "), "says how to raise it on llama.cpp: {message}");
    assert!(!message.contains("try increasing it"), "not the server's raw words: {message}");
    assert_eq!(o.calls_of(fake_llm::RequestKind::Agent), 2, "one compaction and one retry, then it stops");
}
