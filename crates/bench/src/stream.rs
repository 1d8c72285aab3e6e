//! Stream overhead. The fake provider server streams N chunks over loopback as fast as it can;
//! we read them twice: raw (HTTP + SSE parse + JSON parse, nothing else) and through the whole
//! engine (map → persist in SQLite → event delivered to a subscriber). Then, paced at about 1k
//! chunks/s with each chunk stamped with its send time, the chunk → delivered latency.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use eventsource_stream::Eventsource;
use fake_llm::{FakeServer, Protocol, Scenario};
use finishline_engine::agent::{Engine, ModelEndpoint};
use finishline_engine::batch::BATCH_WINDOW;
use finishline_engine::event::EngineEvent;
use finishline_engine::provider::ProviderConfig;
use finishline_engine::store::Store;
use finishline_engine::ProviderKind;
use futures_util::StreamExt;
use serde_json::json;

use crate::report::{quantile, Table};

const VERDICT: &str = r#"{"done": true, "summary": "answered", "remaining": [], "continuation_prompt": "", "is_stuck": false, "stuck_reason": ""}"#;

fn scenario(text: String, chunks: usize, rate: Option<f64>, stamp: bool) -> Scenario {
    serde_json::from_value(json!({"rules": [
        {"when": {"kind": "evaluator"}, "reply": {"text": VERDICT}},
        {"reply": {"text": text, "chunks": chunks, "frames_per_second": rate, "stamp": stamp}}
    ]}))
    .expect("scenario")
}

/// Raw: the bytes, the SSE framing and each chunk's JSON, counted and dropped.
async fn raw(base: &str) -> (Duration, usize) {
    let client = reqwest::Client::new();
    let started = Instant::now();
    let resp = client
        .post(format!("{base}/chat/completions"))
        .header("content-type", "application/json")
        .body(json!({"model": "fake-model", "stream": true, "messages": [{"role": "user", "content": "go"}]}).to_string())
        .send()
        .await
        .expect("request");
    let mut events = resp.bytes_stream().eventsource();
    let mut chunks = 0;
    while let Some(Ok(ev)) = events.next().await {
        if ev.data == "[DONE]" {
            break;
        }
        let v: serde_json::Value = serde_json::from_str(&ev.data).expect("chunk JSON");
        if v.pointer("/choices/0/delta/content").and_then(|c| c.as_str()).is_some_and(|c| !c.is_empty()) {
            chunks += 1;
        }
    }
    (started.elapsed(), chunks)
}

struct Engined {
    _data: tempfile::TempDir,
    _ws: tempfile::TempDir,
    engine: Arc<Engine>,
    store: Arc<Store>,
}

fn engine(base: &str) -> Engined {
    let data = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open(&data.path().join("history.db"), Arc::new(finishline_engine::clock::SystemClock)).unwrap());
    let agent = ModelEndpoint::http(ProviderConfig::new(ProviderKind::Openai, base, None), "fake-model").unwrap();
    let engine = Engine::new(store.clone(), crate::engine_config::defaults(data.path(), agent));
    Engined { _data: data, _ws: ws, engine, store }
}

/// Runs one task and returns every delivered event with the time it arrived.
async fn delivered(e: &Engined) -> Vec<(Instant, SystemTime, EngineEvent)> {
    // Listening before the run starts, so every event is timed as it is delivered live.
    let mut live = e.store.follow_all();
    let (sid, handle) = e.engine.start_session("stream the answer", e._ws.path()).expect("start");
    let mut out = Vec::new();
    while let Ok(env) = live.recv().await {
        if env.session_id != sid {
            continue;
        }
        let end = matches!(env.event, EngineEvent::RunFinished { .. });
        out.push((Instant::now(), SystemTime::now(), env.event));
        if end {
            break;
        }
    }
    handle.await.expect("run task");
    out
}

pub async fn run(chunks: usize, paced_chunks: usize) -> Table {
    // Throughput. Distinct words, as real text is: a stream repeating one unit would be stopped
    // by the runaway-output guard, which this measures too.
    let text: String = (0..chunks).map(|i| format!("w{i:06} ")).collect();
    let server = FakeServer::start(scenario(text.clone(), chunks, None, false)).await.unwrap();
    let base = server.base_url(Protocol::Openai);
    // Both readers run as tasks on the runtime's workers, as the engine's runs do (the benchmark's
    // own `block_on` thread would add a cross-thread wake-up per chunk to the raw side only).
    let raw_task = |b: String| async move { tokio::spawn(async move { raw(&b).await }).await.expect("raw reader") };
    let _ = raw_task(base.clone()).await; // warm up
    let mut raw_times = Vec::new();
    let mut engine_times = Vec::new();
    let mut written = Vec::new();
    for _ in 0..3 {
        let (t, n) = raw_task(base.clone()).await;
        assert_eq!(n, chunks, "the raw reader saw every chunk");
        raw_times.push(t.as_secs_f64());
        let e = engine(&base);
        let before = crate::disk::written_by_this_process();
        let events = delivered(&e).await;
        written.push(crate::disk::written_by_this_process() - before);
        let start = events.iter().find(|(_, _, ev)| matches!(ev, EngineEvent::StepStarted { step: 1, .. })).expect("step 1 started").0;
        let end = events.iter().find(|(_, _, ev)| matches!(ev, EngineEvent::StepFinished { step: 1, .. })).expect("step 1 finished").0;
        let got: usize = events.iter().filter_map(|(_, _, ev)| if let EngineEvent::TextDelta { text, .. } = ev { Some(text.len()) } else { None }).sum();
        assert!(got >= text.trim_end().len(), "the subscriber received all the text ({got} of {} bytes)", text.len());
        engine_times.push((end - start).as_secs_f64());
    }
    raw_times.sort_by(f64::total_cmp);
    engine_times.sort_by(f64::total_cmp);
    written.sort();
    let (raw_t, eng_t) = (raw_times[1], engine_times[1]);
    let ratio = raw_t / eng_t;

    // Latency, paced at about 1k chunks/s, persistence on.
    let stamp = fake_llm::scenario::STAMP;
    let paced_text: String = (0..paced_chunks).map(|_| format!("{stamp} ")).collect();
    let paced = FakeServer::start(scenario(paced_text, paced_chunks, Some(1000.0), true)).await.unwrap();
    let e = engine(&paced.base_url(Protocol::Openai));
    let events = delivered(&e).await;
    let mut lat_ms = Vec::new();
    let mut first_last: Option<(u128, u128)> = None;
    for (_, wall, ev) in &events {
        if let EngineEvent::TextDelta { text, .. } = ev {
            let now = wall.duration_since(UNIX_EPOCH).unwrap().as_micros();
            for word in text.split_whitespace() {
                if let Ok(sent) = word.parse::<u128>() {
                    lat_ms.push((now.saturating_sub(sent)) as f64 / 1000.0);
                    first_last = Some(first_last.map_or((sent, sent), |(a, _)| (a, sent)));
                }
            }
        }
    }
    lat_ms.sort_by(f64::total_cmp);
    assert_eq!(lat_ms.len(), paced_chunks, "every stamped chunk was delivered once");
    let rate = first_last.map(|(a, b)| (paced_chunks as f64 - 1.0) / ((b - a) as f64 / 1e6)).unwrap_or(0.0);
    let (p50, p99) = (quantile(&lat_ms, 0.5), quantile(&lat_ms, 0.99));
    let goal = BATCH_WINDOW.as_secs_f64() * 1000.0 + 5.0;

    let mut t = Table::new(&format!("Stream overhead: {chunks} chunks over loopback, then {paced_chunks} chunks paced"), &["Measure", "Value", "Goal", "Met"]);
    let met = |ok: bool| if ok { "yes" } else { "NO" }.to_string();
    t.row(vec![
        "Raw read + SSE parse + JSON parse".into(),
        format!("{:.0} ms ({:.0}k chunks/s)", raw_t * 1000.0, chunks as f64 / raw_t / 1000.0),
        "".into(),
        "".into(),
    ]);
    t.row(vec![
        "Full engine: map → persist → delivered".into(),
        format!("{:.0} ms ({:.0}k chunks/s)", eng_t * 1000.0, chunks as f64 / eng_t / 1000.0),
        "".into(),
        "".into(),
    ]);
    t.row(vec!["Throughput ratio (engine ÷ raw)".into(), format!("{ratio:.2}"), "≥ 0.5".into(), met(ratio >= 0.5)]);
    t.row(vec![
        "Written to disk by the whole-engine run (history log and database)".into(),
        format!("{:.1} MB for {:.0} KB of text ({:.1} bytes a byte)", written[1] as f64 / 1e6, text.len() as f64 / 1e3, written[1] as f64 / text.len() as f64),
        "".into(),
        "".into(),
    ]);
    t.row(vec![format!("Chunk → delivered latency p50 at {rate:.0} chunks/s"), format!("{p50:.1} ms"), "".into(), "".into()]);
    t.row(vec![
        format!("Chunk → delivered latency p99 at {rate:.0} chunks/s"),
        format!("{p99:.1} ms"),
        format!("≤ {goal:.0} ms (batch window {} ms + 5)", BATCH_WINDOW.as_millis()),
        met(p99 <= goal),
    ]);
    t.note("Both readers run in this process against the same fake server; times and bytes written are the median of 3. The engine's time runs from `step_started` to `step_finished` as a subscriber receives them, so it includes every SQLite commit. Text reaches subscribers in batches of at most one window, which is what the latency measures.".into());
    t
}
