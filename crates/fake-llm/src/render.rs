//! Renders a scripted reply as the exact SSE frames each protocol sends, so that clients are
//! tested against the real wire shapes.

use serde_json::{json, Value};

use crate::request::SeenRequest;
use crate::scenario::{Fault, Finish, Protocol, Reply};

/// One SSE frame, already encoded (`data: …\n\n`, with `event:` where the protocol uses it).
pub type Frame = Vec<u8>;

fn data(v: &Value) -> Frame {
    format!("data: {v}\n\n").into_bytes()
}
fn named(event: &str, v: &Value) -> Frame {
    format!("event: {event}\ndata: {v}\n\n").into_bytes()
}

/// Splits text into `n` pieces of whole characters, or per word when `n` is absent.
pub fn pieces(text: &str, n: Option<usize>) -> Vec<String> {
    if text.is_empty() {
        return vec![];
    }
    match n {
        Some(n) if n > 0 => {
            let chars: Vec<char> = text.chars().collect();
            let size = chars.len().div_ceil(n).max(1);
            chars.chunks(size).map(|c| c.iter().collect()).collect()
        }
        _ => {
            let mut out = Vec::new();
            let mut cur = String::new();
            for ch in text.chars() {
                cur.push(ch);
                if ch == ' ' || ch == '\n' {
                    out.push(std::mem::take(&mut cur));
                }
            }
            if !cur.is_empty() {
                out.push(cur);
            }
            out
        }
    }
}

fn arguments_text(args: &Value) -> String {
    match args {
        Value::String(s) => s.clone(),
        Value::Null => "{}".into(),
        other => other.to_string(),
    }
}

fn cut_half(s: &str) -> String {
    let n = s.chars().count() / 2;
    s.chars().take(n).collect()
}

pub struct Rendered {
    pub frames: Vec<Frame>,
    /// How many frames at the end carry the finish reason and end markers (dropped by `no_finish`).
    pub tail: usize,
}

pub fn render(protocol: Protocol, reply: &Reply, req: &SeenRequest) -> Rendered {
    let cx = Reply_ {
        reply,
        req,
        truncate_args: matches!(reply.fault, Some(Fault::TruncatedToolArgs)),
        finish: reply.finish.unwrap_or(if reply.tool_calls.is_empty() { Finish::Stop } else { Finish::ToolCalls }),
        input_tokens: reply.usage.map(|u| u.input).unwrap_or((req.body.to_string().len() / 4) as u64),
        output_tokens: reply.usage.map(|u| u.output).unwrap_or(((reply.text.len() + reply.reasoning.len()) / 4 + 1) as u64),
    };
    match protocol {
        Protocol::Openai => openai(&cx),
        Protocol::Anthropic => anthropic(&cx),
        Protocol::Responses => responses(&cx),
        Protocol::Gemini => gemini(&cx),
    }
}

/// A reply about to be rendered, with what every protocol's rendering needs of it.
#[derive(Clone, Copy)]
struct Reply_<'a> {
    reply: &'a Reply,
    req: &'a SeenRequest,
    truncate_args: bool,
    finish: Finish,
    input_tokens: u64,
    output_tokens: u64,
}

impl Reply_<'_> {
    /// A tool call's arguments as text, cut in half for the truncated-arguments fault.
    fn args(&self, c: &crate::scenario::FakeToolCall) -> String {
        let a = arguments_text(&c.arguments);
        if self.truncate_args {
            cut_half(&a)
        } else {
            a
        }
    }
}

/// The Openai wire format of `cx`'s reply.
fn openai(cx: &Reply_<'_>) -> Rendered {
    let Reply_ { reply, req, finish, input_tokens, output_tokens, .. } = *cx;
    let args = |c: &crate::scenario::FakeToolCall| cx.args(c);
    let chunk = |delta: Value, finish: Value| {
        data(&json!({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0, "model": req.model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}))
    };
    // A keep-alive comment first: clients must ignore comment lines.
    let mut frames = vec![b": keep-alive\n\n".to_vec(), chunk(json!({"role": "assistant", "content": ""}), Value::Null)];
    for p in pieces(&reply.reasoning, reply.chunks) {
        frames.push(chunk(json!({"reasoning_content": p}), Value::Null));
    }
    for p in pieces(&reply.text, reply.chunks) {
        frames.push(chunk(json!({"content": p}), Value::Null));
    }
    for (i, c) in reply.tool_calls.iter().enumerate() {
        let id = c.id.clone().unwrap_or_else(|| format!("call_fake_{i}"));
        frames.push(chunk(json!({"tool_calls": [{"index": i, "id": id, "type": "function", "function": {"name": c.name, "arguments": ""}}]}), Value::Null));
        for p in pieces(&args(c), Some(3)) {
            frames.push(chunk(json!({"tool_calls": [{"index": i, "function": {"arguments": p}}]}), Value::Null));
        }
    }
    let reason = match finish {
        Finish::Stop => "stop",
        Finish::ToolCalls => "tool_calls",
        Finish::Length => "length",
        Finish::ContentFilter => "content_filter",
        Finish::PauseTurn | Finish::ContextWindow | Finish::MalformedFunctionCall | Finish::Unknown => "something_new",
    };
    frames.push(chunk(json!({}), json!(reason)));
    frames.push(data(&json!({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0, "model": req.model, "choices": [],
            "usage": {"prompt_tokens": input_tokens, "completion_tokens": output_tokens, "total_tokens": input_tokens + output_tokens}})));
    frames.push(b"data: [DONE]\n\n".to_vec());
    Rendered { frames, tail: 3 }
}

/// The Anthropic wire format of `cx`'s reply.
fn anthropic(cx: &Reply_<'_>) -> Rendered {
    let Reply_ { reply, req, finish, input_tokens, output_tokens, truncate_args } = *cx;
    let args = |c: &crate::scenario::FakeToolCall| cx.args(c);
    let mut frames = vec![
        named(
            "message_start",
            &json!({"type": "message_start", "message": {"id": "msg_fake", "type": "message", "role": "assistant", "model": req.model, "content": [],
                "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": input_tokens, "output_tokens": 1}}}),
        ),
        named("ping", &json!({"type": "ping"})),
    ];
    let mut index = 0;
    if !reply.reasoning.is_empty() {
        frames
            .push(named("content_block_start", &json!({"type": "content_block_start", "index": index, "content_block": {"type": "thinking", "thinking": ""}})));
        for p in pieces(&reply.reasoning, reply.chunks) {
            frames.push(named(
                "content_block_delta",
                &json!({"type": "content_block_delta", "index": index, "delta": {"type": "thinking_delta", "thinking": p}}),
            ));
        }
        frames.push(named(
            "content_block_delta",
            &json!({"type": "content_block_delta", "index": index, "delta": {"type": "signature_delta", "signature": "sig-fake"}}),
        ));
        frames.push(named("content_block_stop", &json!({"type": "content_block_stop", "index": index})));
        index += 1;
    }
    let mut forced_answer = false;
    if let (Some(tool), false) = (&req.forced_tool, reply.text.is_empty()) {
        // Structured output by forced tool: the answer is the tool's input.
        forced_answer = true;
        frames.push(named(
            "content_block_start",
            &json!({"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": "toolu_answer", "name": tool, "input": {}}}),
        ));
        let answer = if truncate_args { cut_half(&reply.text) } else { reply.text.clone() };
        for p in pieces(&answer, Some(3)) {
            frames.push(named(
                "content_block_delta",
                &json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": p}}),
            ));
        }
        frames.push(named("content_block_stop", &json!({"type": "content_block_stop", "index": index})));
        index += 1;
    } else if !reply.text.is_empty() {
        frames.push(named("content_block_start", &json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}})));
        for p in pieces(&reply.text, reply.chunks) {
            frames.push(named("content_block_delta", &json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": p}})));
        }
        frames.push(named("content_block_stop", &json!({"type": "content_block_stop", "index": index})));
        index += 1;
    }
    for (i, c) in reply.tool_calls.iter().enumerate() {
        let id = c.id.clone().unwrap_or_else(|| format!("toolu_fake_{i}"));
        frames.push(named(
            "content_block_start",
            &json!({"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": id, "name": c.name, "input": {}}}),
        ));
        for p in pieces(&args(c), Some(3)) {
            frames.push(named(
                "content_block_delta",
                &json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": p}}),
            ));
        }
        frames.push(named("content_block_stop", &json!({"type": "content_block_stop", "index": index})));
        index += 1;
    }
    let reason = match finish {
        Finish::Stop if forced_answer => "tool_use",
        Finish::Stop => "end_turn",
        Finish::ToolCalls => "tool_use",
        Finish::Length => "max_tokens",
        Finish::ContentFilter => "refusal",
        Finish::PauseTurn => "pause_turn",
        Finish::ContextWindow => "model_context_window_exceeded",
        Finish::MalformedFunctionCall | Finish::Unknown => "something_new",
    };
    frames.push(named(
        "message_delta",
        &json!({"type": "message_delta", "delta": {"stop_reason": reason, "stop_sequence": null}, "usage": {"output_tokens": output_tokens}}),
    ));
    frames.push(named("message_stop", &json!({"type": "message_stop"})));
    Rendered { frames, tail: 2 }
}

/// The Responses wire format of `cx`'s reply.
fn responses(cx: &Reply_<'_>) -> Rendered {
    let Reply_ { reply, req, finish, input_tokens, output_tokens, .. } = *cx;
    let args = |c: &crate::scenario::FakeToolCall| cx.args(c);
    // Every event names itself twice (the SSE `event:` line and `type`) and carries a
    // sequence number, as OpenAI's server sends them.
    let mut seq = 0u64;
    let mut ev = |frames: &mut Vec<Frame>, kind: &str, mut v: Value| {
        v["type"] = json!(kind);
        v["sequence_number"] = json!(seq);
        seq += 1;
        frames.push(named(kind, &v));
    };
    let response = |status: &str, output: Value, usage: Value, incomplete: Value| {
        json!({"id": "resp_fake", "object": "response", "created_at": 0, "status": status, "model": req.model,
                "output": output, "usage": usage, "incomplete_details": incomplete, "error": null})
    };
    let mut frames = Vec::new();
    ev(&mut frames, "response.created", json!({"response": response("in_progress", json!([]), Value::Null, Value::Null)}));
    let mut output: Vec<Value> = Vec::new();
    if !reply.reasoning.is_empty() {
        let index = output.len();
        let item = json!({"id": "rs_fake", "type": "reasoning", "summary": []});
        ev(&mut frames, "response.output_item.added", json!({"output_index": index, "item": item}));
        ev(
            &mut frames,
            "response.reasoning_summary_part.added",
            json!({"item_id": "rs_fake", "output_index": index, "summary_index": 0, "part": {"type": "summary_text", "text": ""}}),
        );
        for p in pieces(&reply.reasoning, reply.chunks) {
            ev(&mut frames, "response.reasoning_summary_text.delta", json!({"item_id": "rs_fake", "output_index": index, "summary_index": 0, "delta": p}));
        }
        ev(
            &mut frames,
            "response.reasoning_summary_text.done",
            json!({"item_id": "rs_fake", "output_index": index, "summary_index": 0, "text": reply.reasoning}),
        );
        let done = json!({"id": "rs_fake", "type": "reasoning", "summary": [{"type": "summary_text", "text": reply.reasoning}]});
        ev(&mut frames, "response.output_item.done", json!({"output_index": index, "item": done}));
        output.push(done);
    }
    if !reply.text.is_empty() {
        let index = output.len();
        let id = "msg_fake";
        ev(
            &mut frames,
            "response.output_item.added",
            json!({"output_index": index, "item": {"id": id, "type": "message", "status": "in_progress", "role": "assistant", "content": []}}),
        );
        ev(
            &mut frames,
            "response.content_part.added",
            json!({"item_id": id, "output_index": index, "content_index": 0, "part": {"type": "output_text", "text": "", "annotations": []}}),
        );
        for p in pieces(&reply.text, reply.chunks) {
            ev(&mut frames, "response.output_text.delta", json!({"item_id": id, "output_index": index, "content_index": 0, "delta": p, "logprobs": []}));
        }
        ev(&mut frames, "response.output_text.done", json!({"item_id": id, "output_index": index, "content_index": 0, "text": reply.text, "logprobs": []}));
        let part = json!({"type": "output_text", "text": reply.text, "annotations": []});
        ev(&mut frames, "response.content_part.done", json!({"item_id": id, "output_index": index, "content_index": 0, "part": part}));
        let done = json!({"id": id, "type": "message", "status": "completed", "role": "assistant", "content": [part]});
        ev(&mut frames, "response.output_item.done", json!({"output_index": index, "item": done}));
        output.push(done);
    }
    for (i, c) in reply.tool_calls.iter().enumerate() {
        let index = output.len();
        let id = format!("fc_fake_{i}");
        let call_id = c.id.clone().unwrap_or_else(|| format!("call_fake_{i}"));
        let a = args(c);
        ev(
            &mut frames,
            "response.output_item.added",
            json!({"output_index": index, "item": {"id": id, "type": "function_call", "status": "in_progress", "call_id": call_id, "name": c.name, "arguments": ""}}),
        );
        for p in pieces(&a, Some(3)) {
            ev(&mut frames, "response.function_call_arguments.delta", json!({"item_id": id, "output_index": index, "delta": p}));
        }
        ev(&mut frames, "response.function_call_arguments.done", json!({"item_id": id, "output_index": index, "arguments": a}));
        let done = json!({"id": id, "type": "function_call", "status": "completed", "call_id": call_id, "name": c.name, "arguments": a});
        ev(&mut frames, "response.output_item.done", json!({"output_index": index, "item": done}));
        output.push(done);
    }
    let usage = json!({"input_tokens": input_tokens, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": input_tokens + output_tokens});
    // The end: `completed`, or `incomplete` with the reason (the output limit, a filter).
    let (kind, status, incomplete) = match finish {
        Finish::Length => ("response.incomplete", "incomplete", json!({"reason": "max_output_tokens"})),
        Finish::ContentFilter => ("response.incomplete", "incomplete", json!({"reason": "content_filter"})),
        Finish::Unknown | Finish::PauseTurn | Finish::ContextWindow | Finish::MalformedFunctionCall => {
            ("response.incomplete", "incomplete", json!({"reason": "something_new"}))
        }
        Finish::Stop | Finish::ToolCalls => ("response.completed", "completed", Value::Null),
    };
    ev(&mut frames, kind, json!({"response": response(status, Value::Array(output), usage, incomplete)}));
    Rendered { frames, tail: 1 }
}

/// The Gemini wire format of `cx`'s reply.
fn gemini(cx: &Reply_<'_>) -> Rendered {
    let Reply_ { reply, req, finish, input_tokens, output_tokens, .. } = *cx;
    let mut frames = Vec::new();
    let usage = |done: bool| json!({"promptTokenCount": input_tokens, "candidatesTokenCount": if done { output_tokens } else { 1 }, "totalTokenCount": input_tokens + output_tokens});
    let chunk = |parts: Value| {
        data(&json!({"candidates": [{"content": {"parts": parts, "role": "model"}, "index": 0}], "usageMetadata": usage(false), "modelVersion": req.model}))
    };
    for p in pieces(&reply.reasoning, reply.chunks) {
        frames.push(chunk(json!([{"text": p, "thought": true}])));
    }
    for p in pieces(&reply.text, reply.chunks) {
        frames.push(chunk(json!([{"text": p}])));
    }
    if !reply.tool_calls.is_empty() {
        let parts: Vec<Value> = reply
            .tool_calls
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let args = match &c.arguments {
                    Value::Object(_) => c.arguments.clone(),
                    _ => json!({}),
                };
                json!({"functionCall": {"name": c.name, "args": args}, "thoughtSignature": format!("sig-fake-{i}")})
            })
            .collect();
        frames.push(chunk(Value::Array(parts)));
    }
    let reason = match finish {
        Finish::Stop | Finish::ToolCalls => "STOP",
        Finish::Length => "MAX_TOKENS",
        Finish::ContentFilter => "SAFETY",
        Finish::MalformedFunctionCall => "MALFORMED_FUNCTION_CALL",
        Finish::PauseTurn | Finish::ContextWindow | Finish::Unknown => "SOMETHING_NEW",
    };
    frames.push(data(&json!({"candidates": [{"content": {"parts": [{"text": ""}], "role": "model"}, "finishReason": reason, "index": 0}],
            "usageMetadata": usage(true), "modelVersion": req.model})));
    Rendered { frames, tail: 1 }
}

/// Gemini's unary `generateContent` answer: the whole reply as one JSON body (Gemini CLI's
/// classifier asks this way before each turn).
pub fn gemini_unary(reply: &Reply, req: &SeenRequest) -> Value {
    let input_tokens = reply.usage.map(|u| u.input).unwrap_or((req.body.to_string().len() / 4) as u64);
    let output_tokens = reply.usage.map(|u| u.output).unwrap_or((reply.text.len() / 4 + 1) as u64);
    let mut parts: Vec<Value> = Vec::new();
    if !reply.text.is_empty() {
        parts.push(json!({"text": reply.text}));
    }
    for c in &reply.tool_calls {
        parts.push(json!({"functionCall": {"name": c.name, "args": if c.arguments.is_object() { c.arguments.clone() } else { json!({}) }}}));
    }
    let reason = match reply.finish {
        Some(Finish::Length) => "MAX_TOKENS",
        Some(Finish::ContentFilter) => "SAFETY",
        _ => "STOP",
    };
    json!({"candidates": [{"content": {"parts": parts, "role": "model"}, "finishReason": reason, "index": 0}],
        "usageMetadata": {"promptTokenCount": input_tokens, "candidatesTokenCount": output_tokens, "totalTokenCount": input_tokens + output_tokens}, "modelVersion": req.model})
}

/// The protocol's error inside a 200 stream.
pub fn error_frame(protocol: Protocol, kind: &str, message: &str) -> Frame {
    match protocol {
        Protocol::Responses => named("error", &json!({"type": "error", "code": kind, "message": message, "param": null, "sequence_number": 0})),
        Protocol::Openai => data(&json!({"error": {"message": message, "type": kind, "code": null}})),
        Protocol::Anthropic => named("error", &json!({"type": "error", "error": {"type": kind, "message": message}})),
        Protocol::Gemini => {
            let code = if kind.contains("overloaded") {
                503
            } else if kind.contains("rate") {
                429
            } else {
                500
            };
            data(&json!({"error": {"code": code, "message": message, "status": kind.to_ascii_uppercase()}}))
        }
    }
}

/// A cut-off JSON chunk in the protocol's framing.
pub fn invalid_json_frame(protocol: Protocol) -> Frame {
    match protocol {
        Protocol::Anthropic => {
            b"event: content_block_delta\ndata: {\"type\": \"content_block_delta\", \"index\": 0, \"delta\": {\"type\": \"text_del\n\n".to_vec()
        }
        _ => b"data: {\"choices\": [{\"delta\": {\"content\": \"cut of\n\n".to_vec(),
    }
}
