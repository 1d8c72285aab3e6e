//! The history's write-ahead log while sessions stream for a long time. Each streamed batch is
//! one commit (stored before it is delivered); the store's own thread moves the log into the
//! database (`store/checkpoint.rs`), and a commit does it itself only past the backstop, with a
//! sync on the way from a chunk to the window. This streams three sessions at the engine's pace
//! (a batch every 33 ms, the batch window) straight into the store and watches the log.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use finishline_engine::batch::BATCH_WINDOW;
use finishline_engine::domain::{MessageId, MessageRole};
use finishline_engine::event::EngineEvent;
use finishline_engine::store::checkpoint::BACKSTOP_PAGES;
use finishline_engine::store::{NewSession, Store};

use crate::report::{quantile, Table};

const SESSIONS: usize = 3;
/// A 36-byte unit; one batch is 16 of them (576 bytes), about what a model streams in one batch
/// window.
const BATCH: &str = "streamed answer text, a batch of it ";
/// Batches per answer before the next message starts (about 10 s of one answer).
const ANSWER_BATCHES: usize = 300;

pub fn run(smoke: bool) -> Table {
    let secs = if smoke { 3 } else { 60 };
    let dir = tempfile::tempdir().expect("temp dir");
    let (db, wal) = (dir.path().join("history.db"), dir.path().join("history.db-wal"));
    let store = Arc::new(Store::open(&db, Arc::new(finishline_engine::clock::SystemClock)).expect("open the store"));
    let commits = Arc::new(Mutex::new(Vec::new()));
    let batch = BATCH.repeat(16);
    let written_before = crate::disk::written_by_this_process();
    let started = Instant::now();
    let streams: Vec<_> = (0..SESSIONS)
        .map(|i| {
            let (store, commits, batch) = (store.clone(), commits.clone(), batch.clone());
            std::thread::spawn(move || {
                let new = NewSession {
                    task: format!("stream for a minute {i}"),
                    workspace: "/tmp".into(),
                    provider: "fake".into(),
                    model: "fake-model".into(),
                    base_url: None,
                };
                let (s, _) = store.create_session(&new).expect("session");
                while started.elapsed() < Duration::from_secs(secs) {
                    let m = MessageId::new();
                    let created = EngineEvent::MessageCreated { message_id: m.clone(), role: MessageRole::Assistant, source: None, text: None };
                    store.append(&s, None, created).expect("message");
                    for _ in 0..ANSWER_BATCHES {
                        if started.elapsed() >= Duration::from_secs(secs) {
                            break;
                        }
                        let t = Instant::now();
                        store.append(&s, None, EngineEvent::TextDelta { message_id: m.clone(), text: batch.clone() }).expect("batch");
                        commits.lock().expect("samples").push(t.elapsed().as_secs_f64() * 1000.0);
                        std::thread::sleep(BATCH_WINDOW);
                    }
                }
            })
        })
        .collect();
    let mut largest = 0;
    while streams.iter().any(|t| !t.is_finished()) {
        largest = largest.max(std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0));
        std::thread::sleep(Duration::from_millis(100));
    }
    for t in streams {
        t.join().expect("stream");
    }
    let written = crate::disk::written_by_this_process() - written_before;
    let mut ms = commits.lock().expect("samples").clone();
    ms.sort_by(f64::total_cmp);
    let text = ms.len() * batch.len();
    let backstop = u64::from(BACKSTOP_PAGES) * 4096;
    let met = largest < backstop;

    let mut t = Table::new(
        &format!(
            "{SESSIONS} sessions streaming for {secs} s, a batch of {} bytes every {} ms each, straight into the store",
            batch.len(),
            BATCH_WINDOW.as_millis()
        ),
        &["Commits", "Text", "Written to disk", "Commit p50", "p99", "Slowest", "Largest log", "Goal", "Met"],
    );
    t.row(vec![
        ms.len().to_string(),
        format!("{:.1} MB", text as f64 / 1e6),
        format!("{:.1} MB ({:.0} bytes a byte)", written as f64 / 1e6, written as f64 / text.max(1) as f64),
        format!("{:.2} ms", quantile(&ms, 0.5)),
        format!("{:.2} ms", quantile(&ms, 0.99)),
        format!("{:.2} ms", ms.last().copied().unwrap_or(0.0)),
        format!("{:.1} MB", largest as f64 / 1e6),
        format!("under the {:.0} MB backstop", backstop as f64 / 1e6),
        if met { "yes" } else { "NO" }.into(),
    ]);
    t.note(format!(
        "The store's disk: {}. A commit is one streamed batch stored (the engine stores a batch before it delivers it). The goal: the log never reaches the backstop, where a commit moves it into the database itself and syncs the disk while the person waits for the chunk; below it the store's own thread does that every second. Written to disk is what this process sent to storage meanwhile (`write_bytes` of /proc/self/io): the log and the database the checkpoints fill.",
        crate::disk::describe(dir.path())
    ));
    t
}
