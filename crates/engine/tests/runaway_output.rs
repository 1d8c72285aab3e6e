//! Runaway output from weak local models, through the whole loop and the fake provider: an answer
//! that repeats itself is stopped within the step as stuck, raw chat-template tokens are named,
//! and a step that outlives its time limit is stopped. What was shown is always kept.

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
    assert!(started.elapsed() < Duration::from_secs(5), "the repetition is stopped within the step, not after the whole answer ({:?})", started.elapsed());
    assert_eq!(o.status, SessionStatus::AwaitingReview, "a runaway answer goes to the person as stuck");
    assert_eq!(o.end_reason, Some(EndReason::Stuck));
    let stuck = o.events.iter().find_map(|e| if let EngineEvent::ReviewRequested { stuck, .. } = &e.event { stuck.clone() } else { None }).expect("the review names the pattern");
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
    let stuck = o.events.iter().find_map(|e| if let EngineEvent::ReviewRequested { stuck, .. } = &e.event { stuck.clone() } else { None }).expect("the review names the pattern");
    assert_eq!((stuck.pattern, stuck.repeated.as_str()), (StuckPattern::RepeatingOutput, "#"), "the review quotes the unit that repeated");
    assert_eq!(o.model_calls(), 1, "no truncation continuation or compaction is spent on it");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_of_only_blank_lines_is_repeating_output() {
    let h = Harness::new(rules(json!([agent(json!({}), json!({"text": "\n".repeat(3000), "chunks": 1000, "chunk_delay_ms": 50}))])), Setup::default()).await;
    let started = Instant::now();
    let o = h.run("write a file named hello.txt that contains the word hi").await;
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
    let stuck = o.events.iter().find_map(|e| if let EngineEvent::ReviewRequested { stuck, .. } = &e.event { stuck.clone() } else { None }).expect("the review names the pattern");
    assert_eq!(stuck.pattern, StuckPattern::RepeatingOutput);
    assert_eq!(stuck.repeated, finishline_engine::runaway::WHITESPACE, "blank space is named in words the person can read");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_template_tokens_in_an_answer_are_named_in_plain_words() {
    let leak = "Sure, I will write it.<|im_end|>\n<|im_start|>user\nwrite a file named hello.txt<|im_end|>\n<|im_start|>assistant\nSure.";
    let h = Harness::new(rules(json!([agent(json!({}), json!({"text": leak}))])), Setup::default()).await;
    let o = h.run("write a file named hello.txt that contains the word hi").await;
    assert_eq!(o.status, SessionStatus::Failed, "the agent loop does not go on with a model that cannot hold a conversation");
    let (code, message) = o.events.iter().find_map(|e| if let EngineEvent::Error { code, message } = &e.event { Some((code.clone(), message.clone())) } else { None }).expect("an error the person sees");
    assert_eq!(code, "chat_template");
    assert!(message.contains("base model") && message.contains("<|im_start|>"), "the diagnosis says what it means and what was seen: {message}");
    assert!(shown_text(&o).contains("Sure, I will write it."), "what was shown is kept");
    assert_eq!(o.model_calls(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_that_outlives_its_time_limit_is_stopped_and_says_so() {
    let h = Harness::new(
        rules(json!([agent(json!({}), json!({"text": "thinking very slowly about every single word of this answer", "chunks": 10, "chunk_delay_ms": 500}))])),
        Setup { step_limit: Duration::from_secs(2), ..Default::default() },
    )
    .await;
    let started = Instant::now();
    let o = h.run("anything").await;
    assert!(started.elapsed() < Duration::from_secs(5), "stopped at the limit ({:?})", started.elapsed());
    assert_eq!(o.status, SessionStatus::Failed);
    let message = o.events.iter().find_map(|e| match &e.event {
        EngineEvent::Error { code, message } if code == "step_timeout" => Some(message.clone()),
        _ => None,
    }).expect("a step_timeout error");
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
