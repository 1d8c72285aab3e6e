//! Moves the write-ahead log into the database file from a thread of its own.
//!
//! SQLite's default does it inside whichever commit fills the log past 1,000 pages, and a
//! checkpoint syncs the disk. Commits themselves never sync (WAL with `synchronous = NORMAL`), so
//! that sync is the one wait on the path from a streamed chunk to the window: on a journaled disk
//! busy with other writes (three worktrees of 30,000 files being filled) it waits for the whole
//! journal, and every session's writes queue behind the one write handle meanwhile. Here the
//! commit only appends; this thread, with its own connection, does the checkpoint beside it.
//! A passive checkpoint never blocks a writer or a reader.

use std::path::Path;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use crate::error::Result;

/// How often the log is moved into the database while the store is open.
pub const CHECKPOINT_EVERY: Duration = Duration::from_secs(1);

/// The log size, in pages, at which a commit checkpoints anyway: a backstop should this thread
/// fall behind or fail to start, so the log can never grow without bound (SQLite's default is
/// 1,000 pages, about 4 MB; this is about 40 MB).
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
