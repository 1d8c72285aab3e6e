//! A pause at a named point, for the tests that kill Finishline in the middle of a revert or a
//! landing and check what the next start makes of it, or that change the world under it. Inert
//! unless `FINISHLINE_FAULT_PAUSE` names the point: then the process writes
//! `FINISHLINE_FAULT_MARKER` (when set) to say it got there, and waits to be killed, or goes on
//! when the test removes the marker (two minutes at most).

pub fn pause_at(point: &str) {
    if std::env::var("FINISHLINE_FAULT_PAUSE").ok().as_deref() != Some(point) {
        return;
    }
    let marker = std::env::var("FINISHLINE_FAULT_MARKER").ok().map(std::path::PathBuf::from);
    if let Some(m) = &marker {
        let _ = std::fs::write(m, point);
    }
    let until = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while std::time::Instant::now() < until && marker.as_ref().is_none_or(|m| m.exists()) {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// A panic at a named point, for the tests that check a run which panics ends failed and frees
/// its session, as no input should make it do. Inert unless `FINISHLINE_FAULT_PANIC` names the
/// point.
pub fn panic_at(point: &str) {
    if std::env::var("FINISHLINE_FAULT_PANIC").ok().as_deref() == Some(point) {
        panic!("a fault injected at {point}");
    }
}
