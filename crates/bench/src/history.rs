//! History at scale: 100k sessions and about 2M parts (stored events, the units the timeline
//! shows) in Finishline's SQLite store, against the same data kept as one JSON folder per task
//! as Roo Code keeps its history (`tasks/<id>/ui_messages.json` plus task metadata).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use finishline_engine::clock::ManualClock;
use finishline_engine::domain::*;
use finishline_engine::event::EngineEvent;
use finishline_engine::store::{ListQuery, NewSession, Store};
use serde_json::json;

use crate::report::{median, Table};

pub struct Scale {
    pub sessions: usize,
    pub parts_per_session: usize,
    pub big_session_parts: usize,
}

const WORDS: &[&str] =
    &["refactor", "parser", "tests", "login", "cache", "database", "migration", "button", "layout", "docs", "release", "benchmark", "router", "schema"];

fn task_text(i: usize) -> String {
    format!("Task {i}: update the {} and the {} in module {}", WORDS[i % WORDS.len()], WORDS[(i / 7) % WORDS.len()], i % 97)
}

/// The parts of one session, shaped like a real run: steps, each an assistant message with its
/// text and a tool call, and a finish.
pub fn session_events(i: usize, parts: usize) -> Vec<EngineEvent> {
    let mut ev = vec![EngineEvent::RunStarted { trigger: RunTrigger::Task }];
    let mut k = 0;
    let mut msg = MessageId::new();
    while ev.len() + 1 < parts {
        k += 1;
        match k % 4 {
            1 => {
                msg = MessageId::new();
                ev.push(EngineEvent::MessageCreated { message_id: msg.clone(), role: MessageRole::Assistant, source: None, text: None });
            }
            2 if k == 2 && i % 5000 == 1 => {
                // A phrase only a few sessions hold: what a person searching for one past task types.
                ev.push(EngineEvent::TextDelta { message_id: msg.clone(), text: "The flamingo migration needs a rollback plan. ".into() });
            }
            2 => ev.push(EngineEvent::TextDelta { message_id: msg.clone(), text: format!("Working on the {} step {k}. ", WORDS[(i + k) % WORDS.len()]) }),
            3 => ev.push(EngineEvent::ToolCall {
                call_id: format!("c{i}-{k}"),
                message_id: Some(msg.clone()),
                tool: "read_file".into(),
                kind: None,
                input: json!({"path": format!("src/{}.rs", WORDS[k % WORDS.len()])}),
                state: ToolState::Done,
                output: Some(format!("fn {}() {{}}", WORDS[(i + k) % WORDS.len()])),
            }),
            _ => ev
                .push(EngineEvent::TextDelta { message_id: msg.clone(), text: format!("Read it; the {} part looks right.", WORDS[(i * 3 + k) % WORDS.len()]) }),
        }
    }
    ev.push(EngineEvent::RunFinished {
        status: SessionStatus::Completed,
        claim: Claim::Success,
        verdict: Some(Verdict::Done),
        end_reason: EndReason::VerifiedDone,
        stuck: None,
    });
    ev
}

/// Fills a store through its public API, one transaction per session, as runs write it.
pub fn generate_sqlite(dir: &Path, scale: &Scale) -> (Arc<Store>, SessionId, Duration) {
    let started = Instant::now();
    let clock = Arc::new(ManualClock::new(1_700_000_000_000));
    let store = Arc::new(Store::open(&dir.join("history.db"), clock.clone()).expect("open store"));
    let mut big = None;
    for i in 0..scale.sessions {
        clock.advance(1000);
        let new = NewSession {
            task: task_text(i),
            workspace: format!("/home/me/project{}", i % 13),
            provider: "openai".into(),
            model: "gpt-4.1".into(),
            base_url: None,
        };
        let (sid, _) = store.create_session(&new).expect("create session");
        let parts = if i == scale.sessions / 2 { scale.big_session_parts } else { scale.parts_per_session };
        store.append_all(&sid, None, session_events(i, parts)).expect("append");
        if i == scale.sessions / 2 {
            big = Some(sid);
        }
    }
    (store, big.expect("a big session"), started.elapsed())
}

/// The same sessions as one folder per task with JSON files, as Roo Code keeps them.
pub fn generate_json_folders(dir: &Path, scale: &Scale) -> Duration {
    let started = Instant::now();
    let tasks = dir.join("tasks");
    std::fs::create_dir_all(&tasks).unwrap();
    for i in 0..scale.sessions {
        let folder = tasks.join(format!("task-{i:06}"));
        std::fs::create_dir_all(&folder).unwrap();
        let ts = 1_700_000_000_000i64 + i as i64 * 1000;
        let parts = if i == scale.sessions / 2 { scale.big_session_parts } else { scale.parts_per_session };
        let messages: Vec<serde_json::Value> = std::iter::once(json!({"ts": ts, "type": "say", "say": "text", "text": task_text(i)}))
            .chain(session_events(i, parts).iter().map(|e| json!({"ts": ts, "type": "say", "say": "event", "text": serde_json::to_string(e).unwrap()})))
            .collect();
        std::fs::write(folder.join("ui_messages.json"), serde_json::to_vec(&messages).unwrap()).unwrap();
        std::fs::write(
            folder.join("task_metadata.json"),
            serde_json::to_vec(&json!({"id": format!("task-{i:06}"), "ts": ts, "task": task_text(i), "status": "completed"})).unwrap(),
        )
        .unwrap();
    }
    started.elapsed()
}

/// The first page of the list from the folders: read every task's metadata, sort, take 50.
fn json_list(dir: &Path) -> usize {
    let mut rows: Vec<(i64, String)> = Vec::new();
    for e in std::fs::read_dir(dir.join("tasks")).unwrap().flatten() {
        let meta: serde_json::Value = serde_json::from_slice(&std::fs::read(e.path().join("task_metadata.json")).unwrap()).unwrap();
        rows.push((meta["ts"].as_i64().unwrap_or(0), meta["task"].as_str().unwrap_or_default().to_string()));
    }
    rows.sort_by_key(|r| std::cmp::Reverse(r.0));
    rows.truncate(50);
    rows.len()
}

/// Search in the folders: read every task's messages and look for the words.
fn json_search(dir: &Path, needle: &str) -> usize {
    let mut hits = 0;
    for e in std::fs::read_dir(dir.join("tasks")).unwrap().flatten() {
        let text = std::fs::read_to_string(e.path().join("ui_messages.json")).unwrap();
        if text.contains(needle) {
            hits += 1;
            if hits >= 50 {
                break;
            }
        }
    }
    hits
}

fn time<T>(runs: usize, mut f: impl FnMut() -> T) -> (Duration, T) {
    let mut times = Vec::new();
    let mut last = None;
    for _ in 0..runs {
        let t = Instant::now();
        last = Some(f());
        times.push(t.elapsed());
    }
    (median(&mut times), last.unwrap())
}

pub fn run(scale: &Scale, runs: usize) -> Table {
    let dir = tempfile::tempdir().unwrap();
    let (store, big, gen_sql) = generate_sqlite(dir.path(), scale);
    let gen_json = generate_json_folders(dir.path(), scale);
    let needle = "flamingo migration";

    let (list, page) = time(runs, || store.list_sessions(&ListQuery { limit: 50, ..Default::default() }).unwrap().len());
    assert_eq!(page, 50.min(scale.sessions), "the first page is full");
    let (search, hits) = time(runs, || store.search(needle, 50).unwrap().len());
    assert!(hits > 0, "search finds the generated text");
    let (open, parts) = time(runs, || store.timeline(&big).unwrap().events.len());
    assert!(parts >= scale.big_session_parts, "the big session has its parts: {parts}");
    drop(store);
    let db = dir.path().join("history.db");
    let (startup, _) = time(runs, || {
        let s = Store::open(&db, Arc::new(finishline_engine::clock::SystemClock)).unwrap();
        s.recover().unwrap();
        s.list_sessions(&ListQuery { limit: 50, ..Default::default() }).unwrap().len()
    });
    // The folders are read warm too (a second pass), the fairest case for them.
    let _ = json_list(dir.path());
    let (jlist, _) = time(runs.min(3), || json_list(dir.path()));
    let (jsearch, _) = time(runs.min(3), || json_search(dir.path(), needle));

    let total_parts = (scale.sessions - 1) * scale.parts_per_session + scale.big_session_parts;
    let mut t = Table::new(
        &format!("History at scale: {} sessions, {} parts", scale.sessions, total_parts),
        &["Measure", "Finishline (SQLite + FTS5)", "One JSON folder per task", "Ratio", "Goal", "Met"],
    );
    let ms = |d: Duration| format!("{:.2} ms", d.as_secs_f64() * 1000.0);
    let ratio = |a: Duration, b: Duration| format!("{:.0}×", b.as_secs_f64() / a.as_secs_f64().max(1e-9));
    let met = |ok: bool| if ok { "yes" } else { "NO" }.to_string();
    t.row(vec![
        "First page of the list (50)".into(),
        ms(list),
        ms(jlist),
        ratio(list, jlist),
        "< 10 ms, ≥ 10× faster".into(),
        met(list < Duration::from_millis(10) && jlist.as_secs_f64() >= 10.0 * list.as_secs_f64()),
    ]);
    t.row(vec![
        format!("Full-text search, a rare phrase ({hits} sessions)"),
        ms(search),
        ms(jsearch),
        ratio(search, jsearch),
        "< 50 ms, ≥ 10× faster".into(),
        met(search < Duration::from_millis(50) && jsearch.as_secs_f64() >= 10.0 * search.as_secs_f64()),
    ]);
    t.row(vec![
        format!("Open a {}-part session", scale.big_session_parts),
        ms(open),
        "".into(),
        "".into(),
        "< 30 ms".into(),
        met(open < Duration::from_millis(30)),
    ]);
    t.row(vec![
        "Start-up with recovery (open, recover, first page)".into(),
        ms(startup),
        "".into(),
        "".into(),
        "< 200 ms".into(),
        met(startup < Duration::from_millis(200)),
    ]);
    t.note(format!("Generating the data took {:.1} s through the store's own API (one transaction per session, as runs write) and {:.1} s as JSON folders. Times are medians of {runs} runs, warm cache.", gen_sql.as_secs_f64(), gen_json.as_secs_f64()));
    t
}
