//! A pause at a named point, for the tests that kill Finishline in the middle of a revert or a
//! landing and check what the next start makes of it. Inert unless `FINISHLINE_FAULT_PAUSE`
//! names the point: then the process writes `FINISHLINE_FAULT_MARKER` (when set) to say it got
//! there, and waits to be killed.

pub fn pause_at(point: &str) {
    if std::env::var("FINISHLINE_FAULT_PAUSE").ok().as_deref() != Some(point) {
        return;
    }
    if let Ok(marker) = std::env::var("FINISHLINE_FAULT_MARKER") {
        let _ = std::fs::write(marker, point);
    }
    std::thread::sleep(std::time::Duration::from_secs(120));
}
