//! The HTTP server: the three protocols' endpoints, fault injection, request recording, and a
//! control API under `/_fake/` for tests that run the server as a separate process.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use axum::{Json, Router};
use futures_util::stream;
use serde_json::{json, Value};

use crate::render::{error_frame, invalid_json_frame, render};
use crate::request::SeenRequest;
use crate::scenario::{Fault, Protocol, Reply, Scenario};

#[derive(Default)]
pub struct Shared {
    pub scenario: Scenario,
    pub used: Vec<u32>,
    pub requests: Vec<SeenRequest>,
    /// The bodies' bytes behind `requests`, against the scenario's record limit.
    pub recorded_bytes: u64,
}

impl Shared {
    pub fn new(scenario: Scenario) -> Shared {
        Shared { used: vec![0; scenario.rules.len()], scenario, requests: vec![], recorded_bytes: 0 }
    }

    pub fn clear_requests(&mut self) {
        self.requests = Vec::new();
        self.recorded_bytes = 0;
    }
}

pub type AppState = Arc<Mutex<Shared>>;

pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/v1/chat/completions", post(openai))
        .route("/v1/messages", post(anthropic))
        .route("/v1/messages/count_tokens", post(count_tokens))
        .route("/v1/responses", post(responses))
        .route("/v1/models", get(models))
        .route("/props", get(props))
        .route("/v1beta/models", get(models))
        .route("/v1beta/models/{*rest}", post(gemini))
        .route("/_fake/requests", get(requests).delete(clear_requests))
        .route("/_fake/scenario", put(set_scenario))
        .with_state(state)
}

/// llama.cpp's settings endpoint, with the context window the scenario names.
async fn props(State(state): State<AppState>) -> Response {
    match state.lock().unwrap().scenario.context_window {
        Some(n) => Json(json!({"default_generation_settings": {"n_ctx": n}, "total_slots": 1})).into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

async fn models(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let s = state.lock().unwrap();
    if let Some(denied) = check_key(&s.scenario, &headers) {
        return denied;
    }
    let names = if s.scenario.models.is_empty() { vec!["fake-model".to_string()] } else { s.scenario.models.clone() };
    let data: Vec<Value> = names.iter().map(|n| json!({"id": n, "object": "model"})).collect();
    let gemini: Vec<Value> = names.iter().map(|n| json!({"name": format!("models/{n}")})).collect();
    Json(json!({"object": "list", "data": data, "models": gemini})).into_response()
}

/// The 401 a provider answers when the scenario wants a key and the request's is missing or wrong.
fn check_key(scenario: &Scenario, headers: &HeaderMap) -> Option<Response> {
    let want = scenario.api_key.as_deref()?;
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_string);
    let given =
        header("authorization").map(|a| a.trim_start_matches("Bearer ").to_string()).or_else(|| header("x-api-key")).or_else(|| header("x-goog-api-key"));
    (given.as_deref() != Some(want)).then(|| json_error(StatusCode::UNAUTHORIZED, "Incorrect API key provided."))
}

async fn requests(State(state): State<AppState>) -> Json<Value> {
    Json(serde_json::to_value(&state.lock().unwrap().requests).unwrap())
}

async fn clear_requests(State(state): State<AppState>) -> StatusCode {
    state.lock().unwrap().clear_requests();
    StatusCode::NO_CONTENT
}

async fn set_scenario(State(state): State<AppState>, Json(scenario): Json<Scenario>) -> StatusCode {
    // The record stays: a test that swaps the scenario may still look at what came before.
    let mut s = state.lock().unwrap();
    s.used = vec![0; scenario.rules.len()];
    s.scenario = scenario;
    StatusCode::NO_CONTENT
}

async fn openai(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    handle(state, Protocol::Openai, "/v1/chat/completions".into(), None, headers, body).await
}

async fn anthropic(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    handle(state, Protocol::Anthropic, "/v1/messages".into(), None, headers, body).await
}

async fn responses(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    handle(state, Protocol::Responses, "/v1/responses".into(), None, headers, body).await
}

/// Anthropic's token count (Claude Code asks before it sends a long conversation): about four
/// characters a token, as the rest of the fake server counts. Not a model call, so not recorded.
async fn count_tokens(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    if let Some(denied) = check_key(&state.lock().unwrap().scenario, &headers) {
        return denied;
    }
    Json(json!({"input_tokens": (body.len() / 4).max(1)})).into_response()
}

async fn gemini(State(state): State<AppState>, Path(rest): Path<String>, headers: HeaderMap, body: Bytes) -> Response {
    let model = rest.split(':').next().map(String::from);
    handle(state, Protocol::Gemini, format!("/v1beta/models/{rest}"), model, headers, body).await
}

/// Counts a request's body against the record limit, or refuses it once the record is full.
fn record_full(s: &mut Shared, len: u64) -> Option<Response> {
    let limit = s.scenario.record_limit_bytes.unwrap_or(crate::scenario::DEFAULT_RECORD_LIMIT_BYTES);
    if s.recorded_bytes + len > limit {
        let msg = format!(
            "fake-llm: {} requests ({} bytes) recorded, over the record limit of {limit} bytes; a rule without `times` is probably answering a loop: give it `times`, or clear the record (DELETE /_fake/requests) in a long test",
            s.requests.len(),
            s.recorded_bytes
        );
        return Some(json_error(StatusCode::INSUFFICIENT_STORAGE, &msg));
    }
    s.recorded_bytes += len;
    None
}

fn json_error(status: StatusCode, message: &str) -> Response {
    (status, Json(json!({"error": {"message": message, "type": "fake_llm"}}))).into_response()
}

async fn handle(state: AppState, protocol: Protocol, path: String, model: Option<String>, headers: HeaderMap, body: Bytes) -> Response {
    if let Some(denied) = check_key(&state.lock().unwrap().scenario, &headers) {
        return denied;
    }
    if let Some(full) = record_full(&mut state.lock().unwrap(), body.len() as u64) {
        return full;
    }
    let body: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => return json_error(StatusCode::BAD_REQUEST, &format!("fake-llm: request body is not JSON: {e}")),
    };
    let headers: Vec<(String, String)> = headers.iter().map(|(k, v)| (k.as_str().to_ascii_lowercase(), v.to_str().unwrap_or_default().to_string())).collect();
    let seen = SeenRequest::parse(protocol, &path, model, headers, body);
    let reply = {
        let mut s = state.lock().unwrap();
        s.requests.push(seen.clone());
        if let Some(limit) = s.scenario.context_limit {
            let n = limit.count(&seen);
            if n > limit.tokens {
                let message = format!("request ({n} tokens) exceeds the available context size ({} tokens), try increasing it", limit.tokens);
                let body =
                    json!({"error": {"code": 400, "message": message, "type": "exceed_context_size_error", "n_prompt_tokens": n, "n_ctx": limit.tokens}});
                return (StatusCode::BAD_REQUEST, Json(body)).into_response();
            }
        }
        let used_len = s.scenario.rules.len();
        if s.used.len() != used_len {
            s.used = vec![0; used_len];
        }
        let pick = (0..used_len).find(|&i| {
            let rule = &s.scenario.rules[i];
            rule.times.is_none_or(|t| s.used[i] < t) && rule.when.matches(&seen)
        });
        pick.map(|i| {
            s.used[i] += 1;
            s.scenario.rules[i].reply.clone()
        })
    };
    let Some(reply) = reply else {
        let msg = format!("fake-llm: no scenario rule matches this {:?} request (kind {:?}); last message: {:.200}", protocol, seen.kind, seen.last_message);
        return json_error(StatusCode::BAD_REQUEST, &msg);
    };
    if protocol == Protocol::Gemini
        && seen.path.contains(":generateContent")
        && !matches!(reply.fault, Some(Fault::Status { .. }) | Some(Fault::ResetBeforeHeaders))
    {
        // The unary call answers with one JSON body, not a stream.
        return Json(crate::render::gemini_unary(&reply, &seen)).into_response();
    }
    respond(protocol, &reply, &seen)
}

enum Item {
    Bytes(Vec<u8>),
    Sleep(u64),
    Fail,
}

fn respond(protocol: Protocol, reply: &Reply, seen: &SeenRequest) -> Response {
    match &reply.fault {
        Some(Fault::Status { status, headers, body }) => {
            let code = StatusCode::from_u16(*status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let body = body
                .clone()
                .unwrap_or_else(|| json!({"error": {"message": format!("fake status {status}"), "type": "fake_fault", "code": status}}).to_string());
            // A content-type of the fault's own replaces the default (a web page, an empty stream).
            let own_type = headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("content-type"));
            let mut resp = Response::builder().status(code);
            if !own_type {
                resp = resp.header("content-type", "application/json");
            }
            for (k, v) in headers {
                resp = resp.header(k.as_str(), v.as_str());
            }
            return resp.body(Body::from(body)).unwrap();
        }
        // Unwinding without the panic hook drops the connection before any header, silently.
        Some(Fault::ResetBeforeHeaders) => std::panic::resume_unwind(Box::new("fake-llm: reset before headers")),
        _ => {}
    }
    let rendered = render(protocol, reply, seen);
    let mut frames = rendered.frames;
    let mut items: Vec<Item> = Vec::new();
    match &reply.fault {
        Some(Fault::NoFinish) => {
            let keep = frames.len().saturating_sub(rendered.tail);
            frames.truncate(keep);
            items.extend(frames.into_iter().map(Item::Bytes));
        }
        Some(Fault::ResetAfter { frames: k }) => {
            items.extend(frames.into_iter().take(*k).map(Item::Bytes));
            items.push(Item::Fail);
        }
        Some(Fault::StallAfter { frames: k, ms }) => {
            items.extend(frames.into_iter().take(*k).map(Item::Bytes));
            items.push(Item::Sleep(*ms));
        }
        Some(Fault::MalformedSse { frames: k }) => {
            let k = (*k).min(frames.len());
            frames.insert(k, b"data: \xff\xfe\xfd broken\n\n".to_vec());
            items.extend(frames.into_iter().map(Item::Bytes));
        }
        Some(Fault::InvalidJson { frames: k }) => {
            let k = (*k).min(frames.len());
            frames.insert(k, invalid_json_frame(protocol));
            items.extend(frames.into_iter().map(Item::Bytes));
        }
        Some(Fault::ErrorAfter200 { frames: k, kind, message }) => {
            items.extend(frames.into_iter().take(*k).map(Item::Bytes));
            items.push(Item::Bytes(error_frame(protocol, kind, message)));
        }
        _ => items.extend(frames.into_iter().map(Item::Bytes)),
    }
    if let Some(n) = reply.byte_split.filter(|n| *n > 0) {
        items = resplit(items, n);
    }
    let delay = reply.chunk_delay_ms;
    let stamp = reply.stamp;
    // With a rate, frame i is due at start + i / rate, so the average rate is exact.
    let period = reply.frames_per_second.filter(|r| *r > 0.0).map(|r| Duration::from_secs_f64(1.0 / r));
    let first_delay = Duration::from_millis(reply.first_frame_delay_ms);
    let start = tokio::time::Instant::now() + first_delay;
    let body = stream::unfold((items.into_iter(), 0u32), move |(mut it, n)| async move {
        let item = it.next()?;
        if n == 0 && !first_delay.is_zero() {
            tokio::time::sleep_until(start).await;
        }
        match period {
            Some(p) => tokio::time::sleep_until(start + p * n).await,
            None if delay > 0 && n > 0 => tokio::time::sleep(Duration::from_millis(delay)).await,
            None => {}
        }
        let out = match item {
            Item::Bytes(b) if stamp => Ok(Bytes::from(stamped(b))),
            Item::Bytes(b) => Ok(Bytes::from(b)),
            Item::Sleep(ms) => {
                tokio::time::sleep(Duration::from_millis(ms)).await;
                Ok(Bytes::new())
            }
            Item::Fail => Err(std::io::Error::new(std::io::ErrorKind::ConnectionReset, "fake-llm: reset mid-stream")),
        };
        Some((out, (it, n + 1)))
    });
    Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "text/event-stream")
        .header("cache-control", "no-cache")
        .body(Body::from_stream(body))
        .unwrap()
}

/// The frame with every stamp placeholder replaced by the time now.
fn stamped(mut frame: Vec<u8>) -> Vec<u8> {
    let marker = crate::scenario::STAMP.as_bytes();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_micros();
    let digits = format!("{now:016}");
    let mut i = 0;
    while i + marker.len() <= frame.len() {
        if &frame[i..i + marker.len()] == marker {
            frame[i..i + marker.len()].copy_from_slice(digits.as_bytes());
            i += marker.len();
        } else {
            i += 1;
        }
    }
    frame
}

/// Re-cuts runs of bytes into pieces of `n` bytes, keeping sleeps and failures in place.
fn resplit(items: Vec<Item>, n: usize) -> Vec<Item> {
    let mut out = Vec::new();
    let mut buf: Vec<u8> = Vec::new();
    let flush = |buf: &mut Vec<u8>, out: &mut Vec<Item>| {
        for c in buf.chunks(n) {
            out.push(Item::Bytes(c.to_vec()));
        }
        buf.clear();
    };
    for item in items {
        match item {
            Item::Bytes(b) => buf.extend(b),
            other => {
                flush(&mut buf, &mut out);
                out.push(other);
            }
        }
    }
    flush(&mut buf, &mut out);
    out
}
