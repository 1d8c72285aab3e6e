//! Taking turns. A run waits, visibly `queued`, while the app already runs as many tasks as the
//! person allows, or while another task works in place in the same plain folder (when the
//! person chose to queue after it). A run that waits holds nothing: not a slot, not the folder.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::Engine;
use crate::domain::*;
use crate::event::EngineEvent;

/// How many tasks may run at once in one app; shared by every engine the app makes.
pub struct TaskSlots {
    limit: AtomicUsize,
    running: Mutex<usize>,
    freed: Notify,
}

/// One running task's place; dropping it lets the next waiting task start.
pub struct Slot {
    slots: Arc<TaskSlots>,
}

impl TaskSlots {
    pub fn new(limit: usize) -> Arc<TaskSlots> {
        Arc::new(TaskSlots { limit: AtomicUsize::new(limit.max(1)), running: Mutex::new(0), freed: Notify::new() })
    }

    /// A changed setting applies to the next task that asks; running ones go on.
    pub fn set_limit(&self, limit: usize) {
        self.limit.store(limit.max(1), Ordering::SeqCst);
        self.freed.notify_waiters();
    }

    pub fn limit(&self) -> usize {
        self.limit.load(Ordering::SeqCst)
    }

    pub fn running(&self) -> usize {
        *self.running.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A place now, if one is free.
    pub fn try_take(self: &Arc<Self>) -> Option<Slot> {
        let mut running = self.running.lock().unwrap_or_else(|p| p.into_inner());
        if *running < self.limit() {
            *running += 1;
            Some(Slot { slots: self.clone() })
        } else {
            None
        }
    }

    /// Waits for a place.
    pub async fn take(self: &Arc<Self>) -> Slot {
        loop {
            let freed = self.freed.notified();
            if let Some(s) = self.try_take() {
                return s;
            }
            freed.await;
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut running = self.slots.running.lock().unwrap_or_else(|p| p.into_inner());
        *running = running.saturating_sub(1);
        drop(running);
        self.slots.freed.notify_waiters();
    }
}

/// How often a run waiting for a folder looks again (the other task may be in another process).
const FOLDER_POLL: Duration = Duration::from_millis(300);

impl Engine {
    /// Waits until this run may work: its folder is free (for a plain folder) and the app has a
    /// free slot. Says so while it waits. `None`: cancelled while waiting.
    pub(super) async fn wait_for_turn(
        self: &Arc<Self>,
        session: &SessionId,
        run: &RunId,
        cancel: &CancellationToken,
        folder_turn: bool,
    ) -> crate::Result<Option<Option<Slot>>> {
        let summary = self.store.session(session)?;
        let in_place = folder_turn && summary.isolation != Some(Isolation::Worktree);
        let mut said: Option<String> = None;
        let mut queued = false;
        let say = |engine: &Arc<Engine>, detail: String, said: &mut Option<String>, queued: &mut bool| -> crate::Result<()> {
            if said.as_deref() == Some(detail.as_str()) {
                return Ok(());
            }
            let mut events = vec![EngineEvent::Activity { phase: ActivityPhase::Waiting, detail: detail.clone() }];
            if !*queued {
                events.insert(
                    0,
                    EngineEvent::StatusChanged {
                        status: SessionStatus::Queued,
                        attempt: None,
                        max_retries: None,
                        next_retry_at: None,
                        message: Some(detail.clone()),
                    },
                );
                *queued = true;
            }
            engine.store.append_all(session, Some(run), events)?;
            *said = Some(detail);
            Ok(())
        };
        loop {
            if cancel.is_cancelled() {
                return Ok(None);
            }
            if in_place {
                let others = self.store.live_in_folder(&summary.workspace, session)?;
                if let Some((_, title)) = others.first() {
                    say(self, format!("its turn in this folder: “{title}” is working in it"), &mut said, &mut queued)?;
                    tokio::select! {
                        _ = cancel.cancelled() => return Ok(None),
                        _ = tokio::time::sleep(FOLDER_POLL) => {}
                    }
                    continue;
                }
            }
            let slot = match &self.config.tasks.slots {
                None => None,
                Some(slots) => match slots.try_take() {
                    Some(s) => Some(s),
                    None => {
                        say(self, free_place(slots.running(), slots.limit()), &mut said, &mut queued)?;
                        tokio::select! {
                            _ = cancel.cancelled() => return Ok(None),
                            s = slots.take() => {
                                // The folder may have been taken meanwhile: look again holding the place.
                                if in_place && !self.store.live_in_folder(&summary.workspace, session)?.is_empty() {
                                    drop(s);
                                    continue;
                                }
                                Some(s)
                            }
                        }
                    }
                },
            };
            if queued {
                self.store.append_all(
                    session,
                    Some(run),
                    vec![EngineEvent::StatusChanged { status: SessionStatus::Busy, attempt: None, max_retries: None, next_retry_at: None, message: None }],
                )?;
            }
            return Ok(Some(slot));
        }
    }
}

/// What a task past the limit waits for, as the person reads it in its activity.
fn free_place(running: usize, limit: usize) -> String {
    let tasks = if running == 1 { "1 task is running".to_string() } else { format!("{running} tasks are running") };
    format!("a free place: {tasks} (the limit is {limit}; Settings → Tasks)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_waiting_for_a_place_counts_the_running_ones_in_words() {
        assert_eq!(free_place(1, 1), "a free place: 1 task is running (the limit is 1; Settings → Tasks)");
        assert_eq!(free_place(4, 4), "a free place: 4 tasks are running (the limit is 4; Settings → Tasks)");
    }

    #[tokio::test]
    async fn a_task_past_the_limit_waits_until_one_ends() {
        let slots = TaskSlots::new(2);
        let a = slots.try_take().expect("first");
        let _b = slots.try_take().expect("second");
        assert!(slots.try_take().is_none(), "the third waits");
        let s2 = slots.clone();
        let waiting = tokio::spawn(async move { s2.take().await });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiting.is_finished());
        drop(a);
        let _c = tokio::time::timeout(Duration::from_secs(2), waiting).await.expect("starts once a place is free").unwrap();
        assert_eq!(slots.running(), 2);
    }
}
