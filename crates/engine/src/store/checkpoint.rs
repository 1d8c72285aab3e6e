//! Moves the write-ahead log into the database file from a thread of its own.
//!
//! SQLite's default does it inside whichever commit fills the log past 1,000 pages, and a
//! checkpoint syncs the disk. An ordinary commit does not sync (WAL with `synchronous = NORMAL`),
//! so that sync was the main wait on the path from a streamed chunk to the window: on a journaled
//! disk busy with other writes (three worktrees of 30,000 files being filled) it waits for the
//! journal, and every session's writes queue behind the one write handle meanwhile. Here this
//! thread, with its own connection, does the checkpoint beside the commits. Two syncs stay on a
//! commit: the one that starts the log over after a complete checkpoint syncs the log's header,
//! and past the backstop below a commit checkpoints as before. A passive checkpoint takes none
//! of SQLite's locks a writer or reader waits for; its sync still shares the disk with them.

use std::path::Path;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use crate::error::Result;

/// How often the log is moved into the database while the store is open.
pub const CHECKPOINT_EVERY: Duration = Duration::from_secs(1);

/// The log size, in pages, at which a commit checkpoints anyway, so the log can never grow
/// without bound (SQLite's default is 1,000 pages, about 4 MB; this is about 40 MB). The log only
/// starts over once a checkpoint has caught up with the commits. Three sessions streaming for a
/// minute kept it under 17 MB (benchmarks §1b); it reached this when each batch rewrote the answer
/// so far, which it no longer does (`messages::message_text`).
pub const BACKSTOP_PAGES: u32 = 10_000;

/// Runs passive checkpoints every `every` until dropped.
pub struct Checkpointer {
    stop: Option<Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Checkpointer {
    pub fn start(path: &Path, every: Duration) -> Result<Checkpointer> {
        let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI)?;
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new().name("store-checkpoint".into()).spawn(move || loop {
            match stopped.recv_timeout(every) {
                Err(RecvTimeoutError::Timeout) => {
                    // Busy (another process's checkpoint under way) or a failed read: the next tick
                    // tries again, and the commit backstop bounds the log meanwhile.
                    let _ = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
                }
                Ok(()) | Err(RecvTimeoutError::Disconnected) => return,
            }
        })?;
        Ok(Checkpointer { stop: Some(stop), thread: Some(thread) })
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
