//! Two pieces of blocking work at once. Much of a task's git work is short processes whose start
//! costs more than their work; those that do not depend on each other run side by side.

/// Runs `a` on a thread of its own while `b` runs on this one, and returns both results; `a`
/// runs after `b` when no thread can start. A panic in `a` goes on here, as if it ran inline.
pub(crate) fn beside<RA: Send, RB>(a: impl Fn() -> RA + Sync, b: impl FnOnce() -> RB) -> (RA, RB) {
    std::thread::scope(|s| match std::thread::Builder::new().spawn_scoped(s, &a) {
        Ok(handle) => {
            let rb = b();
            (handle.join().unwrap_or_else(|p| std::panic::resume_unwind(p)), rb)
        }
        Err(_) => {
            let rb = b();
            (a(), rb)
        }
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn both_results_come_back_in_order() {
        let (a, b) = super::beside(|| 1 + 1, || "two");
        assert_eq!((a, b), (2, "two"));
    }
}
