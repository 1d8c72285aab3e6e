//! Recorded-style streams of each protocol through the real SSE parser and mapper, cut at every
//! byte boundary: the events must not depend on how the network chunked the bytes.

use std::time::Duration;

use bytes::Bytes;
use finishline_engine::provider::anthropic::AnthropicMapper;
use finishline_engine::provider::gemini::GeminiMapper;
use finishline_engine::provider::openai::OpenAiMapper;
use finishline_engine::provider::openai_responses::ResponsesMapper;
use finishline_engine::provider::{map_stream, CompletionEvent, ProviderErrorKind, StopReason, ToolInput, Usage, WireMapper};
use futures_util::StreamExt;
use serde_json::json;

type Outcome = Vec<Result<CompletionEvent, ProviderErrorKind>>;

async fn run(mapper: Box<dyn WireMapper>, chunks: Vec<Vec<u8>>) -> Outcome {
    let stream = futures_util::stream::iter(chunks.into_iter().map(|c| Ok::<_, std::io::Error>(Bytes::from(c))));
    map_stream(stream, Duration::from_secs(5), mapper).map(|r| r.map_err(|e| e.kind)).collect().await
}

/// Runs the stream whole, then cut in two at every byte, then one byte at a time; all must agree.
async fn run_every_split(make: impl Fn() -> Box<dyn WireMapper>, wire: &str) -> Outcome {
    let bytes = wire.as_bytes().to_vec();
    let whole = run(make(), vec![bytes.clone()]).await;
    for cut in 1..bytes.len() {
        let split = run(make(), vec![bytes[..cut].to_vec(), bytes[cut..].to_vec()]).await;
        assert_eq!(split, whole, "cutting the stream at byte {cut} must not change the events");
    }
    let single = run(make(), bytes.iter().map(|b| vec![*b]).collect()).await;
    assert_eq!(single, whole, "one byte per chunk must give the same events");
    whole
}

fn text(out: &Outcome) -> String {
    out.iter()
        .filter_map(|e| match e {
            Ok(CompletionEvent::TextDelta { text }) => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

fn stop(out: &Outcome) -> Option<StopReason> {
    out.iter().find_map(|e| match e {
        Ok(CompletionEvent::Stop { reason }) => Some(*reason),
        _ => None,
    })
}

fn usage(out: &Outcome) -> Option<Usage> {
    out.iter().find_map(|e| match e {
        Ok(CompletionEvent::Usage { usage }) => Some(*usage),
        _ => None,
    })
}

fn calls(out: &Outcome) -> Vec<(String, String, ToolInput)> {
    out.iter()
        .filter_map(|e| match e {
            Ok(CompletionEvent::ToolCall { call }) => Some((call.id.clone(), call.name.clone(), call.input.clone())),
            _ => None,
        })
        .collect()
}

fn openai() -> Box<dyn WireMapper> {
    Box::new(OpenAiMapper::new())
}

const OPENAI_TEXT: &str = ": OPENROUTER PROCESSING\n\n\
data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n\
data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Grüße, \"},\"finish_reason\":null}]}\n\n\
data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"café ☕ 🚀\"},\"finish_reason\":null}]}\n\n\
data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n\
data: {\"id\":\"c1\",\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":7,\"total_tokens\":19,\"completion_tokens_details\":{\"reasoning_tokens\":2}}}\n\n\
data: [DONE]\n\n";

#[tokio::test]
async fn openai_text_survives_every_chunk_boundary_including_inside_utf8_characters() {
    let out = run_every_split(openai, OPENAI_TEXT).await;
    assert_eq!(text(&out), "Grüße, café ☕ 🚀", "multi-byte characters split across chunks must be rebuilt whole");
    assert_eq!(stop(&out), Some(StopReason::EndTurn));
    assert_eq!(
        usage(&out),
        Some(Usage { input_tokens: 12, output_tokens: 7, reasoning_tokens: 2, cached_input_tokens: 0, estimated: false }),
        "usage comes from the final include_usage chunk"
    );
}

#[tokio::test]
async fn openai_parallel_tool_calls_are_accumulated_by_index_even_when_interleaved() {
    let wire = "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_a\",\"type\":\"function\",\"function\":{\"name\":\"read_file\",\"arguments\":\"\"}}]}}]}\n\n\
data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"id\":\"call_b\",\"type\":\"function\",\"function\":{\"name\":\"write_file\",\"arguments\":\"{\\\"pa\"}}]}}]}\n\n\
data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"path\\\":\"}}]}}]}\n\n\
data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"function\":{\"arguments\":\"th\\\":\\\"b.txt\\\"}\"}}]}}]}\n\n\
data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"\\\"a.txt\\\"}\"}}]}}]}\n\n\
data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n\
data: [DONE]\n\n";
    let out = run_every_split(openai, wire).await;
    let c = calls(&out);
    assert_eq!(c.len(), 2, "two parallel calls were sent");
    assert_eq!((c[0].0.as_str(), c[0].1.as_str()), ("call_a", "read_file"));
    assert_eq!(c[0].2, ToolInput::Parsed { value: json!({"path": "a.txt"}) }, "index 0's fragments belong to call_a only");
    assert_eq!(c[1].2, ToolInput::Parsed { value: json!({"path": "b.txt"}) }, "index 1's fragments belong to call_b only");
    assert_eq!(stop(&out), Some(StopReason::ToolCalls));
}

#[tokio::test]
async fn openai_stop_with_tool_calls_means_tools() {
    // Ollama and some proxies finish a tool-calling turn with "stop".
    let wire = "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c\",\"function\":{\"name\":\"list_dir\",\"arguments\":\"{}\"}}]}}]}\n\n\
data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
    let out = run(openai(), vec![wire.as_bytes().to_vec()]).await;
    assert_eq!(stop(&out), Some(StopReason::ToolCalls), "a stop that carries tool calls must run the tools, not end the turn");
}

#[tokio::test]
async fn openai_reasoning_deltas_are_reasoning_not_text() {
    let wire = "data: {\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\"think\"}}]}\n\n\
data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"answer\"}}]}\n\n\
data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n";
    let out = run(openai(), vec![wire.as_bytes().to_vec()]).await;
    assert_eq!(out[0], Ok(CompletionEvent::ReasoningDelta { text: "think".into() }));
    assert_eq!(text(&out), "answer", "reasoning must never leak into the answer text");
}

#[tokio::test]
async fn openai_stream_without_finish_reason_is_truncated_after_keeping_the_text() {
    let wire = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"half an ans\"}}]}\n\n";
    let out = run(openai(), vec![wire.as_bytes().to_vec()]).await;
    assert_eq!(text(&out), "half an ans", "the partial text is kept for the truncation path");
    assert_eq!(out.last(), Some(&Err(ProviderErrorKind::TruncatedStream)), "no finish reason means the answer was cut");
}

#[tokio::test]
async fn openai_error_object_after_200_is_an_error() {
    let wire = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}}]}\n\n\
data: {\"error\":{\"message\":\"Rate limit reached\",\"type\":\"rate_limit_exceeded\"}}\n\n";
    let out = run(openai(), vec![wire.as_bytes().to_vec()]).await;
    assert_eq!(out.last(), Some(&Err(ProviderErrorKind::RateLimit)), "an error inside a 200 stream is still an error, typed by its kind");
}

#[tokio::test]
async fn openai_unknown_finish_reason_is_an_unknown_stop_not_a_crash() {
    let wire = "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"brand_new_reason\"}]}\n\n";
    let out = run(openai(), vec![wire.as_bytes().to_vec()]).await;
    assert_eq!(stop(&out), Some(StopReason::Unknown), "a reason we do not know must never read as a completion");
}

#[tokio::test]
async fn openai_invalid_tool_arguments_become_a_tool_error_input() {
    let wire = "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c\",\"function\":{\"name\":\"write_file\",\"arguments\":\"{\\\"path\\\": \\\"a\"}}]}}]}\n\n\
data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n";
    let out = run(openai(), vec![wire.as_bytes().to_vec()]).await;
    match &calls(&out)[0].2 {
        ToolInput::Invalid { raw, .. } => assert_eq!(raw, "{\"path\": \"a", "the raw text is kept to show the model what it sent"),
        other => panic!("truncated arguments must be reported as invalid, got {other:?}"),
    }
}

fn responses() -> Box<dyn WireMapper> {
    Box::new(ResponsesMapper::new())
}

/// Reasoning, text and two function calls whose argument deltas interleave, as OpenAI's
/// Responses API streams them (the items' `done` events carry the whole arguments).
const RESPONSES_TOOLS: &str = "event: response.created\n\
data: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"status\":\"in_progress\",\"output\":[]}}\n\n\
event: response.output_item.added\n\
data: {\"type\":\"response.output_item.added\",\"output_index\":0,\"item\":{\"id\":\"rs_1\",\"type\":\"reasoning\",\"summary\":[]}}\n\n\
event: response.reasoning_summary_text.delta\n\
data: {\"type\":\"response.reasoning_summary_text.delta\",\"item_id\":\"rs_1\",\"output_index\":0,\"delta\":\"Two files. \"}\n\n\
event: response.output_item.added\n\
data: {\"type\":\"response.output_item.added\",\"output_index\":1,\"item\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[]}}\n\n\
event: response.output_text.delta\n\
data: {\"type\":\"response.output_text.delta\",\"item_id\":\"msg_1\",\"output_index\":1,\"content_index\":0,\"delta\":\"Writing both — ✓\"}\n\n\
event: response.output_item.added\n\
data: {\"type\":\"response.output_item.added\",\"output_index\":2,\"item\":{\"id\":\"fc_1\",\"type\":\"function_call\",\"call_id\":\"call_a\",\"name\":\"write_file\",\"arguments\":\"\"}}\n\n\
event: response.output_item.added\n\
data: {\"type\":\"response.output_item.added\",\"output_index\":3,\"item\":{\"id\":\"fc_2\",\"type\":\"function_call\",\"call_id\":\"call_b\",\"name\":\"write_file\",\"arguments\":\"\"}}\n\n\
event: response.function_call_arguments.delta\n\
data: {\"type\":\"response.function_call_arguments.delta\",\"item_id\":\"fc_1\",\"output_index\":2,\"delta\":\"{\\\"path\\\":\"}\n\n\
event: response.function_call_arguments.delta\n\
data: {\"type\":\"response.function_call_arguments.delta\",\"item_id\":\"fc_2\",\"output_index\":3,\"delta\":\"{\\\"path\\\":\\\"b.txt\\\"}\"}\n\n\
event: response.function_call_arguments.delta\n\
data: {\"type\":\"response.function_call_arguments.delta\",\"item_id\":\"fc_1\",\"output_index\":2,\"delta\":\"\\\"a.txt\\\"}\"}\n\n\
event: response.output_item.done\n\
data: {\"type\":\"response.output_item.done\",\"output_index\":2,\"item\":{\"id\":\"fc_1\",\"type\":\"function_call\",\"call_id\":\"call_a\",\"name\":\"write_file\",\"arguments\":\"{\\\"path\\\":\\\"a.txt\\\"}\"}}\n\n\
event: response.completed\n\
data: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_1\",\"status\":\"completed\",\"usage\":{\"input_tokens\":30,\"input_tokens_details\":{\"cached_tokens\":10},\"output_tokens\":12,\"output_tokens_details\":{\"reasoning_tokens\":4},\"total_tokens\":42}}}\n\n";

#[tokio::test]
async fn responses_reasoning_text_and_interleaved_calls_survive_every_chunk_boundary() {
    let out = run_every_split(responses, RESPONSES_TOOLS).await;
    assert_eq!(text(&out), "Writing both — ✓");
    assert!(
        out.iter().any(|e| matches!(e, Ok(CompletionEvent::ReasoningDelta { text }) if text == "Two files. ")),
        "the reasoning summary is reasoning, not text"
    );
    assert_eq!(
        calls(&out),
        vec![
            ("call_a".to_string(), "write_file".to_string(), ToolInput::Parsed { value: json!({"path": "a.txt"}) }),
            ("call_b".to_string(), "write_file".to_string(), ToolInput::Parsed { value: json!({"path": "b.txt"}) }),
        ],
        "each call's deltas are kept apart by item, and calls come out in the model's order"
    );
    assert_eq!(stop(&out), Some(StopReason::ToolCalls));
    let u = usage(&out).unwrap();
    assert_eq!((u.input_tokens, u.output_tokens, u.cached_input_tokens, u.reasoning_tokens), (30, 12, 10, 4));
}

#[tokio::test]
async fn responses_incomplete_reasons_map_to_length_content_filter_and_unknown() {
    let incomplete = |reason: &str| {
        format!("event: response.output_text.delta\ndata: {{\"type\":\"response.output_text.delta\",\"item_id\":\"m\",\"output_index\":0,\"delta\":\"I will now\"}}\n\n\
event: response.incomplete\ndata: {{\"type\":\"response.incomplete\",\"response\":{{\"status\":\"incomplete\",\"incomplete_details\":{{\"reason\":\"{reason}\"}},\"usage\":{{\"input_tokens\":5,\"output_tokens\":3}}}}}}\n\n")
    };
    for (reason, want) in [("max_output_tokens", StopReason::Length), ("content_filter", StopReason::ContentFilter), ("brand_new", StopReason::Unknown)] {
        let out = run(responses(), vec![incomplete(reason).into_bytes()]).await;
        assert_eq!(stop(&out), Some(want), "incomplete for {reason}");
        assert_eq!(text(&out), "I will now", "what came before the cut is kept");
    }
}

#[tokio::test]
async fn responses_failed_and_error_events_are_typed_errors_and_a_stream_without_its_end_is_truncated() {
    let failed = "event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"status\":\"failed\",\"error\":{\"code\":\"rate_limit_exceeded\",\"message\":\"Slow down\"}}}\n\n";
    assert_eq!(run(responses(), vec![failed.as_bytes().to_vec()]).await.last(), Some(&Err(ProviderErrorKind::RateLimit)));
    let error = "event: error\ndata: {\"type\":\"error\",\"code\":\"server_error\",\"message\":\"boom\"}\n\n";
    assert_eq!(run(responses(), vec![error.as_bytes().to_vec()]).await.last(), Some(&Err(ProviderErrorKind::Server)));
    let cut = "event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\",\"output_index\":0,\"item\":{\"id\":\"fc_1\",\"type\":\"function_call\",\"call_id\":\"c\",\"name\":\"write_file\",\"arguments\":\"\"}}\n\n\
event: response.function_call_arguments.delta\ndata: {\"type\":\"response.function_call_arguments.delta\",\"item_id\":\"fc_1\",\"output_index\":0,\"delta\":\"{\\\"pa\"}\n\n";
    let out = run(responses(), vec![cut.as_bytes().to_vec()]).await;
    assert_eq!(out.last(), Some(&Err(ProviderErrorKind::TruncatedStream)), "no response.completed means the answer was cut");
    assert!(calls(&out).is_empty(), "and a half call is never released");
}

fn anthropic() -> Box<dyn WireMapper> {
    Box::new(AnthropicMapper::new(None))
}

const ANTHROPIC_TOOLS: &str = "event: message_start\n\
data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude\",\"stop_reason\":null,\"usage\":{\"input_tokens\":25,\"cache_read_input_tokens\":5,\"output_tokens\":1}}}\n\n\
event: ping\ndata: {\"type\": \"ping\"}\n\n\
event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\"}}\n\n\
event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"Lass mich überlegen\"}}\n\n\
event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"EqQB\"}}\n\n\
event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n\
event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n\
event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"Reading — ✓\"}}\n\n\
event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n\
event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":2,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"read_file\",\"input\":{}}}\n\n\
event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\"}}\n\n\
event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"path\\\": \\\"ü.txt\"}}\n\n\
event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\\\"}\"}}\n\n\
event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":2}\n\n\
event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":3,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_2\",\"name\":\"list_dir\",\"input\":{}}}\n\n\
event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":3,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{}\"}}\n\n\
event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":3}\n\n\
event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":40}}\n\n\
event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{},\"usage\":{\"output_tokens\":89}}\n\n\
event: some_future_event\ndata: {\"type\":\"some_future_event\"}\n\n\
event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";

#[tokio::test]
async fn anthropic_thinking_text_and_parallel_tools_survive_every_chunk_boundary() {
    let out = run_every_split(anthropic, ANTHROPIC_TOOLS).await;
    assert_eq!(out[0], Ok(CompletionEvent::ReasoningDelta { text: "Lass mich überlegen".into() }), "thinking is reasoning");
    assert_eq!(text(&out), "Reading — ✓");
    let c = calls(&out);
    assert_eq!(c.len(), 2);
    assert_eq!(c[0].2, ToolInput::Parsed { value: json!({"path": "ü.txt"}) }, "input_json_delta fragments are joined per block");
    assert_eq!(c[1].1, "list_dir");
    assert_eq!(stop(&out), Some(StopReason::ToolCalls));
    let u = usage(&out).unwrap();
    assert_eq!(u.output_tokens, 89, "message_delta usage is cumulative: the last value wins, it is not summed");
    assert_eq!(u.input_tokens, 30, "cache reads count as input");
}

#[tokio::test]
async fn anthropic_stop_reasons_map_to_the_common_enum() {
    for (wire_reason, expected) in [
        ("end_turn", StopReason::EndTurn),
        ("stop_sequence", StopReason::EndTurn),
        ("max_tokens", StopReason::Length),
        ("model_context_window_exceeded", StopReason::ContextWindowExceeded),
        ("refusal", StopReason::ContentFilter),
        ("pause_turn", StopReason::PauseTurn),
    ] {
        let wire = format!(
            "event: message_start\ndata: {{\"type\":\"message_start\",\"message\":{{\"usage\":{{\"input_tokens\":1,\"output_tokens\":1}}}}}}\n\n\
event: message_delta\ndata: {{\"type\":\"message_delta\",\"delta\":{{\"stop_reason\":\"{wire_reason}\"}},\"usage\":{{\"output_tokens\":3}}}}\n\n\
event: message_stop\ndata: {{\"type\":\"message_stop\"}}\n\n"
        );
        let out = run(anthropic(), vec![wire.into_bytes()]).await;
        assert_eq!(stop(&out), Some(expected), "{wire_reason} must map to {expected:?}");
    }
}

#[tokio::test]
async fn anthropic_overloaded_error_event_is_typed_overloaded() {
    let wire = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":1}}}\n\n\
event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n";
    let out = run(anthropic(), vec![wire.as_bytes().to_vec()]).await;
    assert_eq!(out.last(), Some(&Err(ProviderErrorKind::Overloaded)));
}

#[tokio::test]
async fn anthropic_without_message_stop_is_truncated_and_releases_no_half_tool_call() {
    let cut = &ANTHROPIC_TOOLS[..ANTHROPIC_TOOLS.find("event: message_delta").unwrap()];
    let out = run(anthropic(), vec![cut.as_bytes().to_vec()]).await;
    assert!(calls(&out).is_empty(), "tool calls of a cut stream must not run");
    assert_eq!(out.last(), Some(&Err(ProviderErrorKind::TruncatedStream)));
}

#[tokio::test]
async fn anthropic_forced_answer_tool_comes_back_as_text() {
    let wire = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":1}}}\n\n\
event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"verdict\",\"input\":{}}}\n\n\
event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"done\\\": true}\"}}\n\n\
event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n\
event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":5}}\n\n\
event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
    let out = run(Box::new(AnthropicMapper::new(Some("verdict".into()))), vec![wire.as_bytes().to_vec()]).await;
    assert_eq!(text(&out), "{\"done\": true}", "structured output reads the same from every protocol");
    assert!(calls(&out).is_empty(), "the answer tool is not a tool for the agent to run");
    assert_eq!(stop(&out), Some(StopReason::EndTurn));
}

fn gemini() -> Box<dyn WireMapper> {
    Box::new(GeminiMapper::new())
}

const GEMINI_TOOLS: &str = "data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"Ich denke…\",\"thought\": true}],\"role\": \"model\"},\"index\": 0}],\"usageMetadata\": {\"promptTokenCount\": 9,\"candidatesTokenCount\": 1}}\r\n\r\n\
data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"Schreibe — \"}],\"role\": \"model\"},\"index\": 0}],\"usageMetadata\": {\"promptTokenCount\": 9,\"candidatesTokenCount\": 3}}\r\n\r\n\
data: {\"candidates\": [{\"content\": {\"parts\": [{\"functionCall\": {\"name\": \"write_file\",\"args\": {\"path\": \"a.txt\",\"content\": \"ä\"}},\"thoughtSignature\": \"CiQBVKhc\"},{\"functionCall\": {\"name\": \"list_dir\",\"args\": {}}}],\"role\": \"model\"},\"finishReason\": \"STOP\",\"index\": 0}],\"usageMetadata\": {\"promptTokenCount\": 9,\"candidatesTokenCount\": 20,\"thoughtsTokenCount\": 4}}\r\n\r\n";

#[tokio::test]
async fn gemini_whole_function_calls_with_stop_mean_tools_and_keep_their_signature() {
    let out = run_every_split(gemini, GEMINI_TOOLS).await;
    assert_eq!(out[0], Ok(CompletionEvent::ReasoningDelta { text: "Ich denke…".into() }));
    assert_eq!(text(&out), "Schreibe — ");
    let evs: Vec<_> = out
        .iter()
        .filter_map(|e| match e {
            Ok(CompletionEvent::ToolCall { call }) => Some(call.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(evs.len(), 2);
    assert_eq!(evs[0].signature.as_deref(), Some("CiQBVKhc"), "the thoughtSignature must be echoed back in the history");
    assert_ne!(evs[0].id, evs[1].id, "calls without ids still get distinct ids");
    assert_eq!(stop(&out), Some(StopReason::ToolCalls), "Gemini says STOP even when it called functions");
    assert_eq!(usage(&out).unwrap().output_tokens, 24, "the last usageMetadata wins, thoughts included");
}

#[tokio::test]
async fn gemini_finish_reasons_map_safety_to_content_filter_and_malformed_calls_to_error() {
    for (reason, expected) in [
        ("MAX_TOKENS", StopReason::Length),
        ("SAFETY", StopReason::ContentFilter),
        ("RECITATION", StopReason::ContentFilter),
        ("PROHIBITED_CONTENT", StopReason::ContentFilter),
        ("SPII", StopReason::ContentFilter),
        ("BLOCKLIST", StopReason::ContentFilter),
        ("MALFORMED_FUNCTION_CALL", StopReason::MalformedCall),
        ("SOMETHING_NEW", StopReason::Unknown),
    ] {
        let wire = format!("data: {{\"candidates\": [{{\"content\": {{\"parts\": [{{\"text\": \"x\"}}]}},\"finishReason\": \"{reason}\"}}]}}\n\n");
        let out = run(gemini(), vec![wire.into_bytes()]).await;
        assert_eq!(stop(&out), Some(expected), "{reason} must map to {expected:?}");
    }
}

#[tokio::test]
async fn gemini_without_finish_reason_is_truncated() {
    let cut = &GEMINI_TOOLS[..GEMINI_TOOLS.rfind("data:").unwrap()];
    let out = run(gemini(), vec![cut.as_bytes().to_vec()]).await;
    assert_eq!(out.last(), Some(&Err(ProviderErrorKind::TruncatedStream)));
}

#[tokio::test]
async fn bytes_that_are_not_utf8_are_a_malformed_stream() {
    let mut wire = b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"}}]}\n\n".to_vec();
    wire.extend_from_slice(b"data: \xff\xfe\n\n");
    let out = run(openai(), vec![wire]).await;
    assert_eq!(out.last(), Some(&Err(ProviderErrorKind::MalformedStream)));
}

/// The bad byte mid-stream, and the stream going on (pings, more text): said at once, not after
/// the stream ends, which a server that keeps sending may never do.
#[tokio::test(start_paused = true)]
async fn a_byte_that_is_not_utf8_mid_stream_is_said_at_once() {
    let first = futures_util::stream::iter(vec![
        Ok::<_, std::io::Error>(Bytes::from_static(b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hello \"}}]}\n\n")),
        Ok(Bytes::from_static(b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"caf\xe9\"}}]}\n\n")),
        Ok(Bytes::from_static(b": ping\n\n")),
    ]);
    let endless = first.chain(futures_util::stream::repeat_with(|| Ok(Bytes::from_static(b": ping\n\n"))).then(|b| async {
        tokio::time::sleep(Duration::from_millis(200)).await;
        b
    }));
    let out: Outcome = tokio::time::timeout(
        Duration::from_secs(60),
        map_stream(Box::pin(endless), Duration::from_secs(30), openai()).map(|r| r.map_err(|e| e.kind)).collect(),
    )
    .await
    .expect("the bad byte ends the stream while the server still sends");
    assert_eq!(text(&out), "hello ");
    assert_eq!(out.last(), Some(&Err(ProviderErrorKind::MalformedStream)));
}

/// A character split across chunks is not a bad byte.
#[tokio::test]
async fn a_character_split_across_chunks_is_read_whole() {
    let wire = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"café ☕ 𝄞\"}}]}\n\n";
    let out = run_every_split(openai, wire).await;
    assert_eq!(text(&out), "café ☕ 𝄞");
}

#[tokio::test]
async fn a_chunk_that_is_not_json_is_a_malformed_stream() {
    let out = run(openai(), vec![b"data: {\"choices\": [{\"delta\": {\"content\": \"cut of\n\n".to_vec()]).await;
    assert_eq!(out.last(), Some(&Err(ProviderErrorKind::MalformedStream)));
}

#[tokio::test(start_paused = true)]
async fn a_stream_that_goes_silent_is_reported_as_a_stall() {
    let first = futures_util::stream::iter(vec![Ok::<_, std::io::Error>(Bytes::from_static(
        b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n",
    ))]);
    let silent = first.chain(futures_util::stream::pending());
    let out: Outcome = map_stream(Box::pin(silent), Duration::from_secs(30), openai()).map(|r| r.map_err(|e| e.kind)).collect().await;
    assert_eq!(text(&out), "hi");
    assert_eq!(out.last(), Some(&Err(ProviderErrorKind::Stall)), "no byte for the idle timeout is a stall");
}

#[test]
fn local_servers_context_overflow_messages_are_context_too_long_so_the_run_compacts() {
    use finishline_engine::provider::{ProviderError, ProviderErrorKind};
    let headers = reqwest::header::HeaderMap::new();
    for body in [
        r#"{"error":{"code":400,"message":"request (4151 tokens) exceeds the available context size (4096 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":4151,"n_ctx":4096}}"#,
        r#"{"error":{"message":"the input length exceeds the context length","type":"api_error"}}"#,
        r#"{"object":"error","message":"This model's maximum context length is 8192 tokens. However, you requested 9000 tokens","type":"BadRequestError"}"#,
    ] {
        let e = ProviderError::from_status(400, &headers, body, false);
        assert_eq!(e.kind, ProviderErrorKind::ContextTooLong, "a full context is compacted and retried, not failed as a bad request: {body}");
    }
    let other = ProviderError::from_status(400, &headers, r#"{"error":{"message":"tools are not supported","type":"invalid_request_error"}}"#, false);
    assert_eq!(other.kind, ProviderErrorKind::BadRequest);
}

#[test]
fn only_servers_on_this_machine_or_the_local_network_are_asked_for_their_context_window() {
    use finishline_engine::provider::{is_local_url, is_loopback_url};
    for local in
        ["http://127.0.0.1:8931/v1", "http://localhost:1234/v1", "http://192.168.1.20:11434/v1", "http://10.0.0.5:8080/v1", "http://gpu-box.local:8080/v1"]
    {
        assert!(is_local_url(local), "{local} answers at once and says what it runs");
    }
    for remote in ["https://api.openai.com/v1", "https://openrouter.ai/api/v1", "http://8.8.8.8/v1"] {
        assert!(!is_local_url(remote), "{remote}: no extra round trip before the first step");
    }
    for here in ["http://127.0.0.1:8931/v1", "http://localhost:11434/v1", "http://LOCALHOST:1/v1", "http://[::1]:8080/v1", "http://127.1.2.3/v1"] {
        assert!(is_loopback_url(here), "{here} is on this machine");
    }
    for elsewhere in ["http://192.168.1.20:11434/v1", "https://llm.corp.example/v1", "http://localhost.example.com/v1", "http://127.evil.com/v1", "not a url"] {
        assert!(!is_loopback_url(elsewhere), "{elsewhere}: only this machine's servers need no key");
    }
}

/// A stream that begins with a byte-order mark (some proxies add one) is read like any other;
/// the SSE parser sliced inside the mark and panicked.
#[tokio::test]
async fn a_stream_that_begins_with_a_byte_order_mark_is_read_whole() {
    let wire = "\u{FEFF}data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hello\"},\"finish_reason\":null}]}\n\n\
data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n\
data: [DONE]\n\n";
    // However the network cuts it: a mark split across chunks reached the parser whole after an
    // empty first chunk, and it panicked as before.
    let out = run_every_split(openai, wire).await;
    assert_eq!(text(&out), "hello");
    assert!(out.iter().all(|e| e.is_ok()), "{out:?}");
    let twice = format!("\u{FEFF}{wire}");
    let out = run_every_split(openai, &twice).await;
    assert_eq!(text(&out), "hello", "a doubled mark is read past too");
}
