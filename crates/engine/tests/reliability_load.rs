//! Load: 20 sessions streaming at once from the fake server, with tools, on one engine and one
//! database. All finish, every log stays gap-free, the database stays consistent, and memory
//! returns to its level before the load.

mod support {
    pub mod harness;
}

use std::time::{Duration, Instant};

use finishline_engine::domain::*;
use finishline_engine::event::EngineEvent;
use serde_json::json;
use support::harness::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_sessions_streaming_at_once_all_finish_consistently() {
    let h = Harness::new(
        scenario(json!({"rules": [
            {"when": {"kind": "evaluator"}, "reply": {"text": "{\"done\": true, \"summary\": \"ok\", \"remaining\": [], \"continuation_prompt\": \"\", \"is_stuck\": false, \"stuck_reason\": \"\"}"}},
            {"when": {"kind": "agent", "last_message_contains": "Created"}, "reply": {"text": "Done! The file is written with the words the task asked for, nothing else.", "chunks": 30, "chunk_delay_ms": 5}},
            {"when": {"kind": "agent"}, "reply": {"text": "Writing the file now, word by word, as asked.", "chunks": 40, "chunk_delay_ms": 5, "tool_calls": [{"name": "write_file", "arguments": {"path": "out.txt", "content": "words"}}]}}
        ]})),
        Setup::default(),
    )
    .await;
    // Warm up (lazy statics, SQLite's page cache, the HTTP pool), then take the baseline.
    one_round(&h, 1).await;
    let baseline = rss_after_trim(&h);
    let (events, elapsed) = one_round(&h, 20).await;
    let after_first = rss_after_trim(&h);
    // Further rounds show whether anything is kept per session (a leak) or the level holds.
    one_round(&h, 20).await;
    one_round(&h, 20).await;
    let after_third = rss_after_trim(&h);
    one_round(&h, 20).await;
    let after_second = rss_after_trim(&h);
    assert_eq!(h.store.integrity_check().unwrap(), "ok");
    println!("load: 20 concurrent sessions, {events} events, all finished in {:.1} s", elapsed.as_secs_f64());
    println!(
        "memory (RSS after returning freed memory to the OS): baseline {baseline:.1} MiB, after 20 sessions {after_first:.1} MiB, after 60 more {after_third:.1} MiB, after 20 more {after_second:.1} MiB"
    );
    assert!(after_first - baseline < 24.0, "memory returns to near its baseline after the load ({baseline:.1} → {after_first:.1} MiB)");
    assert!(
        after_second - after_third < 2.0,
        "another load of 20 adds nothing once caches are warm: nothing leaks per session ({after_third:.1} → {after_second:.1} MiB)"
    );
}

/// This process's resident memory in MiB, after asking the allocator to give back what is free.
fn rss_after_trim(h: &Harness) -> f64 {
    // The fake server's record of requests is the test's, not the engine's.
    h.server.clear_requests();
    unsafe { libc::malloc_trim(0) };
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kib: f64 = status.lines().find(|l| l.starts_with("VmRSS:")).and_then(|l| l.split_whitespace().nth(1)).and_then(|v| v.parse().ok()).unwrap();
    kib / 1024.0
}

/// Starts `n` sessions at once and checks each finished as it would alone.
async fn one_round(h: &Harness, n: usize) -> (usize, Duration) {
    let started = Instant::now();
    let mut runs = Vec::new();
    for i in 0..n {
        let ws = tempfile::tempdir().unwrap();
        let (sid, handle) = h.engine.start_session(&format!("task {i}: write out.txt"), ws.path()).unwrap();
        runs.push((sid, handle, ws));
    }
    for (_, handle, _) in runs.iter_mut() {
        tokio::time::timeout(Duration::from_secs(120), handle).await.expect("every run finishes under load").unwrap();
    }
    let elapsed = started.elapsed();
    let mut events = 0;
    for (sid, _, ws) in &runs {
        let s = h.store.session(sid).unwrap();
        assert_eq!((s.status, s.end_reason), (SessionStatus::AwaitingReview, Some(EndReason::VerifiedDone)), "{sid} finished as it would alone");
        let log = h.store.events(sid, 0).unwrap();
        assert!(log.iter().enumerate().all(|(i, e)| e.seq == i as u64 + 1), "{sid}: gap-free under load");
        assert_eq!(log.iter().filter(|e| matches!(e.event, EngineEvent::RunFinished { .. })).count(), 1);
        assert_eq!(std::fs::read_to_string(ws.path().join("out.txt")).unwrap(), "words", "each workspace got its own file");
        events += log.len();
    }
    (events, elapsed)
}
