//! Every provider fault end to end over real HTTP against the fake server, for each protocol:
//! what is retried, what is not, what the caller is told, and that no output is duplicated.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use fake_llm::{FakeServer, Fault, Finish, Matcher, Protocol, Reply, Rule, Scenario};
use finishline_engine::provider::{
    stream_with_retry, ApiKey, ChatMessage, CompletionEvent, CompletionRequest, HttpProvider, ProviderConfig, ProviderError, ProviderErrorKind, RetryPolicy,
    StopReason, StructuredMode, StructuredOutput, ToolInput, ToolSpec, Usage,
};
use finishline_engine::ProviderKind;
use futures_util::StreamExt;
use serde_json::json;

struct Outcome {
    events: Vec<CompletionEvent>,
    error: Option<ProviderError>,
    waits: Vec<(u32, Duration)>,
}

impl Outcome {
    fn text(&self) -> String {
        self.events.iter().filter_map(|e| if let CompletionEvent::TextDelta { text } = e { Some(text.as_str()) } else { None }).collect()
    }
    fn stop(&self) -> Option<StopReason> {
        self.events.iter().find_map(|e| if let CompletionEvent::Stop { reason } = e { Some(*reason) } else { None })
    }
    fn usage(&self) -> Option<Usage> {
        self.events.iter().find_map(|e| if let CompletionEvent::Usage { usage } = e { Some(*usage) } else { None })
    }
    fn error_kind(&self) -> Option<ProviderErrorKind> {
        self.error.as_ref().map(|e| e.kind)
    }
}

fn kind_of(p: Protocol) -> ProviderKind {
    match p {
        Protocol::Openai => ProviderKind::Openai,
        Protocol::Anthropic => ProviderKind::Anthropic,
        Protocol::Gemini => ProviderKind::Gemini,
        Protocol::Responses => ProviderKind::OpenaiResponses,
    }
}

fn request() -> CompletionRequest {
    CompletionRequest {
        model: "fake-model".into(),
        system: "You are a careful agent.".into(),
        messages: vec![ChatMessage::User { content: "create notes.md listing three fruits".into() }],
        tools: vec![ToolSpec {
            name: "write_file".into(),
            description: "Write a file".into(),
            input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}}, "required": ["path", "content"]}),
        }],
        max_tokens: Some(512),
        structured: None,
        temperature: None,
    }
}

fn fast_policy(max_retries: u32) -> RetryPolicy {
    RetryPolicy {
        max_retries,
        base_delay: Duration::from_millis(20),
        max_delay: Duration::from_millis(100),
        max_retry_after: Duration::from_secs(5),
        jitter: 0.0,
    }
}

async fn run_with(server: &FakeServer, p: Protocol, req: CompletionRequest, policy: RetryPolicy, idle: Duration, key: Option<&str>) -> Outcome {
    let mut config = ProviderConfig::new(kind_of(p), server.base_url(p), key.and_then(ApiKey::new));
    config.idle_timeout = idle;
    let provider = Arc::new(HttpProvider::new(config).unwrap());
    let waits = Arc::new(Mutex::new(Vec::new()));
    let w = waits.clone();
    let mut stream = stream_with_retry(provider, req, policy, Arc::new(move |wait| w.lock().unwrap().push((wait.attempt, wait.delay))));
    let mut events = Vec::new();
    let mut error = None;
    while let Some(item) = stream.next().await {
        match item {
            Ok(e) => events.push(e),
            Err(e) => {
                error = Some(e);
                break;
            }
        }
    }
    let waits = waits.lock().unwrap().clone();
    Outcome { events, error, waits }
}

async fn run(server: &FakeServer, p: Protocol) -> Outcome {
    run_with(server, p, request(), fast_policy(3), Duration::from_secs(5), None).await
}

fn ok_reply(text: &str) -> Reply {
    Reply { text: text.into(), usage: Some(fake_llm::FakeUsage { input: 40, output: 9 }), ..Default::default() }
}

fn once(fault: Fault, text: &str) -> Rule {
    Rule { when: Matcher::default(), reply: Reply { fault: Some(fault), ..ok_reply(text) }, times: Some(1) }
}

fn always(reply: Reply) -> Rule {
    Rule { when: Matcher::default(), reply, times: None }
}

async fn server(rules: Vec<Rule>) -> FakeServer {
    FakeServer::start(Scenario { rules, ..Default::default() }).await.unwrap()
}

macro_rules! for_each_protocol {
    ($($name:ident => $proto:expr),* $(,)?) => {$(
        mod $name {
            use super::*;
            const P: Protocol = $proto;

            #[tokio::test]
            async fn streams_text_usage_and_a_normal_stop() {
                let s = server(vec![always(Reply { byte_split: Some(7), ..ok_reply("Three fruits: apple, banana, cherry — ✓") })]).await;
                let o = run(&s, P).await;
                assert!(o.error.is_none(), "a clean stream has no error: {:?}", o.error);
                assert_eq!(o.text(), "Three fruits: apple, banana, cherry — ✓", "text cut into 7-byte pieces on the wire arrives whole");
                assert_eq!(o.stop(), Some(StopReason::EndTurn));
                let u = o.usage().expect("usage is reported for every step");
                assert_eq!((u.input_tokens, u.output_tokens), (40, 9));
                assert_eq!(s.requests().len(), 1);
            }

            #[tokio::test]
            async fn sends_system_messages_and_tools_in_the_protocols_own_shape() {
                let s = server(vec![always(ok_reply("ok"))]).await;
                run(&s, P).await;
                let r = &s.requests()[0];
                assert_eq!(r.system, "You are a careful agent.", "the system prompt travels in the protocol's system slot");
                assert_eq!(r.last_message, "create notes.md listing three fruits");
                let tools = match P {
                    Protocol::Openai => r.body["tools"][0]["function"]["name"].clone(),
                    Protocol::Anthropic => r.body["tools"][0]["name"].clone(),
                    Protocol::Gemini => r.body["tools"][0]["functionDeclarations"][0]["name"].clone(),
                    Protocol::Responses => r.body["tools"][0]["name"].clone(),
                };
                assert_eq!(tools, "write_file", "the tool list must reach the model");
                if P == Protocol::Openai {
                    assert_eq!(r.body["stream_options"]["include_usage"], true, "without include_usage OpenAI sends no token counts");
                }
            }

            #[tokio::test]
            async fn tool_calls_arrive_complete_with_parsed_arguments() {
                let reply = Reply {
                    tool_calls: vec![
                        fake_llm::FakeToolCall { id: None, name: "write_file".into(), arguments: json!({"path": "notes.md", "content": "- apple\n- banana\n- cherry"}) },
                        fake_llm::FakeToolCall { id: None, name: "list_dir".into(), arguments: json!({}) },
                    ],
                    ..ok_reply("")
                };
                let s = server(vec![always(reply)]).await;
                let o = run(&s, P).await;
                let calls: Vec<_> = o.events.iter().filter_map(|e| if let CompletionEvent::ToolCall { call } = e { Some(call.clone()) } else { None }).collect();
                assert_eq!(calls.len(), 2, "both parallel calls arrive");
                assert_eq!(calls[0].input, ToolInput::Parsed { value: json!({"path": "notes.md", "content": "- apple\n- banana\n- cherry"}) });
                assert_eq!(o.stop(), Some(StopReason::ToolCalls));
            }

            #[tokio::test]
            async fn a_429_with_retry_after_seconds_is_waited_out_then_succeeds() {
                let s = server(vec![once(Fault::Status { status: 429, headers: vec![("retry-after".into(), "1".into())], body: None }, ""), always(ok_reply("after the wait"))]).await;
                let o = run(&s, P).await;
                assert_eq!(o.text(), "after the wait");
                assert_eq!(o.waits, vec![(1, Duration::from_secs(1))], "the provider's retry-after must be honoured, not our own backoff");
                assert_eq!(s.requests().len(), 2);
            }

            #[tokio::test]
            async fn a_429_with_an_http_date_retry_after_is_honoured() {
                let at = std::time::SystemTime::now() + Duration::from_secs(2);
                let s = server(vec![once(Fault::Status { status: 429, headers: vec![("retry-after".into(), httpdate::fmt_http_date(at))], body: None }, ""), always(ok_reply("ok"))]).await;
                let o = run(&s, P).await;
                assert_eq!(o.text(), "ok");
                let d = o.waits[0].1;
                assert!(d > Duration::ZERO && d <= Duration::from_secs(2), "an HTTP-date retry-after is a wait until that time, got {d:?}");
            }

            #[tokio::test]
            async fn retry_after_ms_wins_over_retry_after() {
                let s = server(vec![once(Fault::Status { status: 429, headers: vec![("retry-after".into(), "30".into()), ("retry-after-ms".into(), "120".into())], body: None }, ""), always(ok_reply("ok"))]).await;
                let o = run(&s, P).await;
                assert_eq!(o.waits, vec![(1, Duration::from_millis(120))]);
            }

            #[tokio::test]
            async fn server_errors_and_overload_are_retried_with_backoff() {
                for status in [408u16, 500, 502, 503, 504, 529] {
                    let s = server(vec![once(Fault::Status { status, headers: vec![], body: None }, ""), always(ok_reply("recovered"))]).await;
                    let o = run(&s, P).await;
                    assert_eq!(o.text(), "recovered", "{status} is transient and must be retried");
                    assert_eq!(o.waits.len(), 1, "{status}: exactly one wait is reported so the session can show `retry`");
                }
            }

            #[tokio::test]
            async fn retries_are_bounded_and_the_last_error_says_so() {
                let s = server(vec![always(Reply { fault: Some(Fault::Status { status: 503, headers: vec![], body: None }), ..Default::default() })]).await;
                let o = run(&s, P).await;
                assert_eq!(o.error_kind(), Some(ProviderErrorKind::Server));
                assert_eq!(o.waits.len(), 3, "max_retries bounds the retries");
                assert_eq!(s.requests().len(), 4, "one first try and three retries");
                assert!(o.error.unwrap().message.contains("gave up after 3 retries"));
            }

            #[tokio::test]
            async fn a_wrong_key_fails_at_once_with_a_message_about_the_key() {
                let s = server(vec![always(Reply { fault: Some(Fault::Status { status: 401, headers: vec![], body: Some(r#"{"error":{"message":"Incorrect API key provided"}}"#.into()) }), ..Default::default() })]).await;
                let o = run(&s, P).await;
                assert_eq!(o.error_kind(), Some(ProviderErrorKind::Auth));
                assert!(o.waits.is_empty(), "retrying a wrong key cannot help");
                let msg = o.error.unwrap().message;
                assert!(msg.contains("Incorrect API key provided") && msg.contains("key"), "the person must learn the key is wrong: {msg}");
            }

            #[tokio::test]
            async fn a_key_with_a_line_break_in_it_fails_at_once_saying_so() {
                let s = server(vec![always(ok_reply("hello"))]).await;
                let o = run_with(&s, P, request(), fast_policy(3), Duration::from_secs(5), Some("sk-abc\ndef")).await;
                assert_eq!(o.error_kind(), Some(ProviderErrorKind::Auth), "{:?}", o.error);
                assert!(o.waits.is_empty(), "retrying the same key cannot help");
                assert!(s.requests().is_empty(), "nothing was sent");
                let msg = o.error.unwrap().message;
                assert!(msg.contains("API key holds a line break"), "the person learns what is wrong with the key: {msg}");
            }

            #[tokio::test]
            async fn a_context_overflow_is_typed_so_the_loop_can_compact() {
                let s = server(vec![always(Reply { fault: Some(Fault::Status { status: 400, headers: vec![], body: Some(r#"{"error":{"message":"This model's maximum context length is 8192 tokens"}}"#.into()) }), ..Default::default() })]).await;
                assert_eq!(run(&s, P).await.error_kind(), Some(ProviderErrorKind::ContextTooLong));
            }

            #[tokio::test]
            async fn a_bad_request_is_not_retried() {
                let s = server(vec![always(Reply { fault: Some(Fault::Status { status: 400, headers: vec![], body: Some(r#"{"error":{"message":"unknown field foo"}}"#.into()) }), ..Default::default() })]).await;
                let o = run(&s, P).await;
                assert_eq!(o.error_kind(), Some(ProviderErrorKind::BadRequest));
                assert_eq!(s.requests().len(), 1);
            }

            /// What a wrong base URL answers: a web page, one JSON document, or nothing, all
            /// with 200. Each fails at once saying what came back and what to check; none is
            /// taken for a cut-off stream and continued.
            #[tokio::test]
            async fn an_answer_that_is_not_a_stream_fails_at_once_saying_what_it_was() {
                let page = "<!DOCTYPE html><html><head><title>Welcome to nginx!</title></head><body><h1>Welcome to nginx!</h1><p>If you see this page, the web server works.</p></body></html>";
                // An empty answer may be a proxy's hiccup: asked again (one try and three retries).
                let answers: [(&str, &str, &str, ProviderErrorKind, usize); 3] = [
                    ("text/html; charset=utf-8", page, "a web page", ProviderErrorKind::MalformedStream, 1),
                    ("application/json", r#"{"id":"x","choices":[{"message":{"content":"hi"}}]}"#, "one JSON document", ProviderErrorKind::MalformedStream, 1),
                    ("text/event-stream", "", "no events", ProviderErrorKind::Network, 4),
                ];
                for (content_type, body, said, kind, asked) in answers {
                    let status = Fault::Status { status: 200, headers: vec![("content-type".into(), content_type.into())], body: Some(body.into()) };
                    let s = server(vec![always(Reply { fault: Some(status), ..Default::default() })]).await;
                    let o = run(&s, P).await;
                    assert_eq!(o.error_kind(), Some(kind), "{content_type}: {:?}", o.error);
                    assert_eq!(s.requests().len(), asked, "{content_type}: asked again only where that can help");
                    let msg = o.error.unwrap().message;
                    assert!(msg.contains(said) && msg.contains("base URL"), "{content_type}: what came back and what to check: {msg}");
                    assert!(!msg.contains('<'), "no markup in the message: {msg}");
                }
            }

            #[tokio::test]
            async fn a_server_that_does_not_implement_the_request_is_not_retried_and_its_page_is_summed_up() {
                let page = "<!DOCTYPE HTML>\n<html><head><title>Error response</title></head><body><h1>Error response</h1><p>Error code: 501</p><p>Message: Unsupported method ('POST').</p></body></html>";
                let s = server(vec![always(Reply { fault: Some(Fault::Status { status: 501, headers: vec![("content-type".into(), "text/html".into())], body: Some(page.into()) }), ..Default::default() })]).await;
                let o = run(&s, P).await;
                assert_eq!(s.requests().len(), 1, "a 501 is the server's answer to every try");
                let msg = o.error.unwrap().message;
                assert!(msg.contains("Unsupported method ('POST')") && msg.contains("base URL"), "{msg}");
                assert!(!msg.contains('<'), "no markup in the message: {msg}");
            }

            #[tokio::test]
            async fn a_reset_before_headers_is_retried() {
                let s = server(vec![once(Fault::ResetBeforeHeaders, ""), always(ok_reply("second try"))]).await;
                let o = run(&s, P).await;
                assert_eq!(o.text(), "second try");
                assert_eq!(o.waits.len(), 1);
            }

            #[tokio::test]
            async fn a_reset_mid_stream_keeps_the_partial_text_and_is_not_retried() {
                // Frames are paced so that the text before the reset really reaches the client.
                let reset = Rule { when: Matcher::default(), reply: Reply { fault: Some(Fault::ResetAfter { frames: 6 }), chunk_delay_ms: 15, ..ok_reply("one two three four five six seven") }, times: Some(1) };
                let s = server(vec![reset, always(ok_reply("must not be asked"))]).await;
                let o = run(&s, P).await;
                assert!(!o.text().is_empty(), "what was shown is kept");
                assert!(!o.text().contains("must not"), "no retry after output, or the person would see it twice");
                assert_eq!(o.error_kind(), Some(ProviderErrorKind::Network));
                assert_eq!(s.requests().len(), 1);
            }

            #[tokio::test]
            async fn a_stall_after_output_is_reported_as_a_stall() {
                let s = server(vec![always(Reply { fault: Some(Fault::StallAfter { frames: 6, ms: 3000 }), chunk_delay_ms: 15, ..ok_reply("one two three four five six seven") })]).await;
                let o = run_with(&s, P, request(), fast_policy(3), Duration::from_millis(1500), None).await;
                assert_eq!(o.error_kind(), Some(ProviderErrorKind::Stall));
                assert!(!o.text().is_empty(), "the text before the stall is kept");
                assert_eq!(s.requests().len(), 1, "a stall after output is for the loop's truncation path, not a retry");
            }

            #[tokio::test]
            async fn a_stall_before_any_output_is_retried() {
                let s = server(vec![once(Fault::StallAfter { frames: 0, ms: 3000 }, ""), always(ok_reply("fresh"))]).await;
                let o = run_with(&s, P, request(), fast_policy(3), Duration::from_millis(1500), None).await;
                assert_eq!(o.text(), "fresh");
                assert_eq!(o.waits.len(), 1);
            }

            #[tokio::test]
            async fn malformed_sse_is_a_malformed_stream_error() {
                let s = server(vec![always(Reply { fault: Some(Fault::MalformedSse { frames: 3 }), ..ok_reply("one two three four") })]).await;
                let o = run(&s, P).await;
                assert_eq!(o.error_kind(), Some(ProviderErrorKind::MalformedStream));
            }

            #[tokio::test]
            async fn invalid_json_in_a_chunk_is_a_malformed_stream_error() {
                let s = server(vec![always(Reply { fault: Some(Fault::InvalidJson { frames: 3 }), ..ok_reply("one two three four") })]).await;
                let o = run(&s, P).await;
                assert_eq!(o.error_kind(), Some(ProviderErrorKind::MalformedStream));
                assert!(o.error.unwrap().message.contains("not JSON"));
            }

            #[tokio::test]
            async fn an_error_event_after_200_before_output_is_retried() {
                let s = server(vec![
                    once(Fault::ErrorAfter200 { frames: 0, kind: "overloaded_error".into(), message: "Overloaded".into() }, ""),
                    always(ok_reply("after overload")),
                ]).await;
                let o = run(&s, P).await;
                assert_eq!(o.text(), "after overload");
                assert_eq!(o.waits.len(), 1);
            }

            #[tokio::test]
            async fn an_error_event_after_output_ends_the_stream_with_that_error() {
                let s = server(vec![always(Reply { fault: Some(Fault::ErrorAfter200 { frames: 4, kind: "server_error".into(), message: "boom".into() }), ..ok_reply("one two three four five six") })]).await;
                let o = run(&s, P).await;
                assert_eq!(o.error_kind(), Some(ProviderErrorKind::Server));
                assert!(o.error.unwrap().message.contains("boom"));
                assert_eq!(s.requests().len(), 1);
            }

            #[tokio::test]
            async fn a_stream_without_finish_reason_is_a_truncation() {
                let s = server(vec![always(Reply { fault: Some(Fault::NoFinish), ..ok_reply("cut off mid") })]).await;
                let o = run(&s, P).await;
                assert_eq!(o.text(), "cut off mid");
                assert_eq!(o.error_kind(), Some(ProviderErrorKind::TruncatedStream));
            }

            #[tokio::test]
            async fn a_length_finish_is_reported_as_length() {
                let s = server(vec![always(Reply { finish: Some(Finish::Length), ..ok_reply("long answer") })]).await;
                assert_eq!(run(&s, P).await.stop(), Some(StopReason::Length));
            }

            #[tokio::test]
            async fn a_content_filter_finish_is_reported_as_content_filter() {
                let s = server(vec![always(Reply { finish: Some(Finish::ContentFilter), ..ok_reply("no") })]).await;
                assert_eq!(run(&s, P).await.stop(), Some(StopReason::ContentFilter));
            }

            #[tokio::test]
            async fn the_api_key_travels_in_the_protocols_header() {
                let s = server(vec![always(ok_reply("ok"))]).await;
                run_with(&s, P, request(), fast_policy(0), Duration::from_secs(5), Some("sk-test-123")).await;
                let r = &s.requests()[0];
                let header = |n: &str| r.headers.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
                let expected = match P {
                    Protocol::Openai => ("authorization", "Bearer sk-test-123"),
                    Protocol::Anthropic => ("x-api-key", "sk-test-123"),
                    Protocol::Gemini => ("x-goog-api-key", "sk-test-123"),
                    Protocol::Responses => ("authorization", "Bearer sk-test-123"),
                };
                assert_eq!(header(expected.0).as_deref(), Some(expected.1));
                assert!(!r.body.to_string().contains("sk-test-123"), "the key must never be in the body");
            }

            #[tokio::test]
            async fn structured_output_is_asked_natively_and_read_back_as_text() {
                let verdict = r#"{"done": true, "summary": "notes.md lists three fruits"}"#;
                let s = server(vec![always(ok_reply(verdict))]).await;
                let mut req = request();
                req.tools.clear();
                req.structured = Some(StructuredOutput { name: "verdict".into(), schema: json!({"type": "object", "properties": {"done": {"type": "boolean"}, "summary": {"type": "string"}}}), mode: StructuredMode::Native });
                let o = run_with(&s, P, req, fast_policy(0), Duration::from_secs(5), None).await;
                let r = &s.requests()[0];
                assert_eq!(r.kind, fake_llm::RequestKind::Evaluator, "the request must look like structured output");
                match P {
                    Protocol::Openai => {
                        assert_eq!(r.body["response_format"]["type"], "json_schema");
                        assert_eq!(r.body["response_format"]["json_schema"]["name"], "verdict", "the nested form that llama.cpp honours");
                        assert!(r.body["response_format"]["json_schema"]["schema"].is_object());
                    }
                    Protocol::Anthropic => assert_eq!(r.body["tool_choice"], json!({"type": "tool", "name": "verdict"}), "Anthropic forces the answer tool"),
                    Protocol::Gemini => assert!(r.body["generationConfig"]["responseJsonSchema"].is_object()),
                    Protocol::Responses => {
                        assert_eq!(r.body["text"]["format"]["type"], "json_schema", "the Responses API's own structured output");
                        assert_eq!(r.body["text"]["format"]["name"], "verdict");
                    }
                }
                let parsed: serde_json::Value = serde_json::from_str(&o.text()).expect("the answer reads back as JSON text");
                assert_eq!(parsed["done"], true);
            }

            #[tokio::test]
            async fn structured_output_by_instruction_puts_the_schema_in_the_system_prompt() {
                let s = server(vec![always(ok_reply("{}"))]).await;
                let mut req = request();
                req.tools.clear();
                req.structured = Some(StructuredOutput { name: "verdict".into(), schema: json!({"type": "object", "properties": {"done": {"type": "boolean"}}}), mode: StructuredMode::Instruction });
                run_with(&s, P, req, fast_policy(0), Duration::from_secs(5), None).await;
                let r = &s.requests()[0];
                assert!(r.system.contains("Answer with one JSON object") && r.system.contains("\"done\""), "the fallback names the schema in words");
                assert!(r.body.get("response_format").is_none() && r.body.get("tool_choice").is_none());
            }

            #[tokio::test]
            async fn an_unreachable_server_is_a_clear_network_error() {
                let config = ProviderConfig::new(kind_of(P), "http://127.0.0.1:9/v1", None);
                let provider = Arc::new(HttpProvider::new(config).unwrap());
                let mut stream = stream_with_retry(provider, request(), fast_policy(1), Arc::new(|_| {}));
                let err = stream.next().await.unwrap().unwrap_err();
                assert_eq!(err.kind, ProviderErrorKind::Network);
                assert!(err.message.contains("127.0.0.1:9") && err.message.contains("server is running"), "the message says where and what to check: {}", err.message);
            }
        }
    )*};
}

for_each_protocol! {
    openai => Protocol::Openai,
    anthropic => Protocol::Anthropic,
    gemini => Protocol::Gemini,
    openai_responses => Protocol::Responses,
}

/// A server on this machine that refuses the connection is not running (or the port is wrong):
/// the run says so after one retry, not after five retries and half a minute of waiting.
#[tokio::test]
async fn a_local_server_that_refuses_the_connection_is_retried_once_and_the_error_says_so() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    for base in [format!("http://127.0.0.1:{port}/v1"), format!("http://localhost:{port}/v1")] {
        let provider = Arc::new(HttpProvider::new(ProviderConfig::new(ProviderKind::Openai, &base, None)).unwrap());
        let waits = Arc::new(Mutex::new(Vec::new()));
        let w = waits.clone();
        let mut stream = stream_with_retry(provider, request(), fast_policy(5), Arc::new(move |wait| w.lock().unwrap().push((wait.attempt, wait.max_retries))));
        let err = stream.next().await.unwrap().unwrap_err();
        assert_eq!(err.kind, ProviderErrorKind::Network);
        assert_eq!(*waits.lock().unwrap(), vec![(1, 1)], "{base}: one retry, shown as 1 of 1");
        assert!(err.message.ends_with("(gave up after 1 retry)"), "{base}: {}", err.message);
    }
}

/// A run at a server that wants a key, with none set: said as no key sent, not as a wrong one.
#[tokio::test]
async fn a_run_at_a_server_that_asks_for_a_key_when_none_is_set_says_none_was_sent() {
    let s = FakeServer::start(Scenario { rules: vec![always(ok_reply("ok"))], api_key: Some("sk-local".into()), ..Default::default() }).await.unwrap();
    let o = run_with(&s, Protocol::Openai, request(), fast_policy(0), Duration::from_secs(5), None).await;
    let e = o.error.expect("refused");
    assert_eq!(e.kind, ProviderErrorKind::Auth);
    assert!(e.message.contains("asks for an API key") && e.message.contains("none is set"), "{}", e.message);
    let o = run_with(&s, Protocol::Openai, request(), fast_policy(0), Duration::from_secs(5), Some("sk-wrong")).await;
    assert!(o.error.expect("refused").message.contains("refused the API key"), "a key sent and refused is named so");
}

#[tokio::test]
async fn truncated_tool_arguments_reach_the_caller_as_invalid_input() {
    // Gemini sends function calls whole, so this fault exists only for the streaming-argument protocols.
    for p in [Protocol::Openai, Protocol::Anthropic, Protocol::Responses] {
        let reply = Reply {
            tool_calls: vec![fake_llm::FakeToolCall { id: None, name: "write_file".into(), arguments: json!({"path": "a.txt", "content": "hello"}) }],
            fault: Some(Fault::TruncatedToolArgs),
            ..Default::default()
        };
        let s = server(vec![always(reply)]).await;
        let o = run(&s, p).await;
        let call =
            o.events.iter().find_map(|e| if let CompletionEvent::ToolCall { call } = e { Some(call.clone()) } else { None }).expect("the call still arrives");
        assert!(matches!(call.input, ToolInput::Invalid { .. }), "{p:?}: cut arguments go back to the model as a tool error, not a crash");
    }
}

#[tokio::test]
async fn gemini_thought_signatures_are_echoed_back_in_the_history() {
    let s = server(vec![always(ok_reply("ok"))]).await;
    let mut req = request();
    req.messages.push(ChatMessage::Assistant {
        text: String::new(),
        tool_calls: vec![finishline_engine::provider::ToolCall {
            id: "c0".into(),
            name: "write_file".into(),
            input: ToolInput::Parsed { value: json!({"path": "a"}) },
            signature: Some("sig-123".into()),
        }],
    });
    req.messages.push(ChatMessage::Tool { call_id: "c0".into(), name: "write_file".into(), content: "wrote a".into(), is_error: false });
    run_with(&s, Protocol::Gemini, req, fast_policy(0), Duration::from_secs(5), None).await;
    let body = &s.requests()[0].body;
    assert_eq!(body["contents"][1]["parts"][0]["thoughtSignature"], "sig-123", "Gemini rejects a history whose function calls lost their signature");
    assert_eq!(body["contents"][2]["parts"][0]["functionResponse"]["name"], "write_file");
}

#[tokio::test]
async fn test_connection_lists_models_and_says_what_is_wrong() {
    let s = server(vec![]).await;
    for p in [Protocol::Openai, Protocol::Anthropic, Protocol::Gemini] {
        let provider = HttpProvider::new(ProviderConfig::new(kind_of(p), s.base_url(p), None)).unwrap();
        assert_eq!(provider.list_models().await.unwrap(), vec!["fake-model".to_string()], "{p:?}: the model list is read");
    }
    let unreachable = HttpProvider::new(ProviderConfig::new(ProviderKind::Openai, "http://127.0.0.1:9/v1", None)).unwrap();
    let e = unreachable.list_models().await.unwrap_err();
    assert_eq!(e.kind, ProviderErrorKind::Network, "an unreachable server is reported as such: {}", e.message);
    assert_eq!(
        e.message, "Could not connect to the provider at http://127.0.0.1:9/v1 (connection refused). Check the base URL and that the server is running.",
        "in words a person reads, not the HTTP library's chain of errors"
    );
    let wrong_url = HttpProvider::new(ProviderConfig::new(ProviderKind::Openai, format!("{}/nope", s.url()), None)).unwrap();
    let e = wrong_url.list_models().await.unwrap_err();
    assert_eq!(e.kind, ProviderErrorKind::NotFound, "a wrong URL says to check it: {}", e.message);
    assert!(e.message.contains("base URL"));
}

/// The base URL without its `/v1` (`http://localhost:8080`, as a server prints its address): the
/// 404 says what is most likely missing, with the URL to try, not only "check the base URL".
#[tokio::test]
async fn a_base_url_without_v1_is_told_to_try_it_with_v1() {
    let s = server(vec![always(ok_reply("hello"))]).await;
    let bare = s.url().trim_end_matches('/').to_string();
    let provider = Arc::new(HttpProvider::new(ProviderConfig::new(ProviderKind::Openai, bare.clone(), None)).unwrap());
    let mut stream = stream_with_retry(provider, request(), fast_policy(0), Arc::new(|_| {}));
    let e = loop {
        match stream.next().await {
            Some(Err(e)) => break e,
            Some(Ok(_)) => continue,
            None => panic!("the request to {bare} should fail"),
        }
    };
    assert_eq!(e.kind, ProviderErrorKind::NotFound, "{}", e.message);
    assert!(e.message.contains(&format!("try {bare}/v1")), "{}", e.message);
    // With its /v1 the same server answers.
    let with_v1 = Arc::new(HttpProvider::new(ProviderConfig::new(ProviderKind::Openai, format!("{bare}/v1"), None)).unwrap());
    let mut ok = stream_with_retry(with_v1, request(), fast_policy(0), Arc::new(|_| {}));
    while let Some(item) = ok.next().await {
        item.unwrap_or_else(|e| panic!("with /v1 it answers: {}", e.message));
    }
}

/// Test connection on a base URL without its `/v1` says to try it with `/v1` once: the check's own
/// words and the request's both said it (three times with the window's link).
#[tokio::test]
async fn the_connection_check_names_the_url_with_v1_once() {
    let s = server(vec![always(ok_reply("hello"))]).await;
    let bare = s.url().trim_end_matches('/').to_string();
    let provider = HttpProvider::new(ProviderConfig::new(ProviderKind::Openai, bare.clone(), None)).unwrap();
    let e = finishline_engine::provider::check_connection(&provider, "m").await.unwrap_err();
    assert_eq!(e.kind, ProviderErrorKind::NotFound, "{}", e.message);
    assert_eq!(e.message.matches(&format!("{bare}/v1")).count(), 1, "{}", e.message);
}

/// A host name that does not resolve (a typo in the base URL) is not a server that is busy:
/// one retry, and the error names the host that was not found, not five retries and half a minute.
#[tokio::test]
async fn a_host_name_that_does_not_resolve_is_retried_once_and_named() {
    let base = "http://no-such-host.invalid/v1";
    let provider = Arc::new(HttpProvider::new(ProviderConfig::new(ProviderKind::Openai, base, None)).unwrap());
    let waits = Arc::new(Mutex::new(Vec::new()));
    let w = waits.clone();
    let mut stream = stream_with_retry(provider, request(), fast_policy(5), Arc::new(move |wait| w.lock().unwrap().push((wait.attempt, wait.max_retries))));
    let err = stream.next().await.unwrap().unwrap_err();
    assert_eq!(err.kind, ProviderErrorKind::Network, "{}", err.message);
    assert_eq!(*waits.lock().unwrap(), vec![(1, 1)], "one retry: {}", err.message);
    assert!(err.message.contains("no-such-host.invalid was not found"), "{}", err.message);
}

/// A server that takes the connection and never answers (a hung local model): one retry, then
/// the error says what was seen. Five retries of a 90 s wait kept a run silent for ten minutes.
#[tokio::test]
async fn a_server_that_never_answers_is_retried_once_and_the_error_says_what_was_seen() {
    let deaf = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}/v1", deaf.local_addr().unwrap());
    let mut config = ProviderConfig::new(ProviderKind::Openai, &base, None);
    config.idle_timeout = Duration::from_millis(300);
    let provider = Arc::new(HttpProvider::new(config).unwrap());
    let waits = Arc::new(Mutex::new(Vec::new()));
    let w = waits.clone();
    let mut stream = stream_with_retry(provider, request(), fast_policy(5), Arc::new(move |wait| w.lock().unwrap().push((wait.attempt, wait.max_retries))));
    let err = stream.next().await.unwrap().unwrap_err();
    drop(deaf);
    assert_eq!(err.kind, ProviderErrorKind::Stall, "{}", err.message);
    assert_eq!(*waits.lock().unwrap(), vec![(1, 1)], "one retry: {}", err.message);
    assert!(err.message.contains("took the connection but sent nothing"), "{}", err.message);
}
