//! How a file looks on disk (its identity, size and times), so that what was read of it a moment
//! ago can be trusted without reading it again while it still looks the same. A revert of a
//! command's thousands of files reads them all in one git process, then only stamps each just
//! before touching it, rather than starting git once a file.

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::workspace::ownership::FileState;

/// Every change to a file's content or metadata moves its change time, and a replaced file is a
/// new inode: equal stamps mean the same file, unless the change came within the clock's
/// granularity of the stamp, which [`Stamp::of`] does not trust.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stamp {
    dev: u64,
    ino: u64,
    size: u64,
    mode: u32,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

/// A changed file's times can equal those it had a moment before (the kernel's clock moves in
/// ticks); a stamp is trusted only for a file untouched this long before it was read.
const SETTLED: Duration = Duration::from_secs(1);

impl Stamp {
    /// The stamp of the regular file at `path`, if it has been untouched for [`SETTLED`] before
    /// `reading` (when the reading of what it holds started); `None` otherwise.
    pub fn of(path: &Path, reading: SystemTime) -> Option<Stamp> {
        let m = std::fs::symlink_metadata(path).ok()?;
        if !m.file_type().is_file() {
            return None;
        }
        let changed = UNIX_EPOCH + Duration::new(u64::try_from(m.ctime()).ok()?, u32::try_from(m.ctime_nsec()).ok()?);
        if changed + SETTLED > reading {
            return None;
        }
        Some(Stamp { dev: m.dev(), ino: m.ino(), size: m.size(), mode: m.mode(), mtime: (m.mtime(), m.mtime_nsec()), ctime: (m.ctime(), m.ctime_nsec()) })
    }

    /// Whether the file at `path` still looks as stamped.
    pub fn holds(&self, path: &Path) -> bool {
        std::fs::symlink_metadata(path).is_ok_and(|m| {
            self == &Stamp {
                dev: m.dev(),
                ino: m.ino(),
                size: m.size(),
                mode: m.mode(),
                mtime: (m.mtime(), m.mtime_nsec()),
                ctime: (m.ctime(), m.ctime_nsec()),
            }
        })
    }
}

/// A file's state as read, with its stamp from just before: the state stands while the stamp
/// holds.
#[derive(Debug, Clone)]
pub struct Seen {
    pub state: FileState,
    pub stamp: Option<Stamp>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stamp_holds_until_the_file_is_written_even_to_the_same_length() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("a.txt");
        std::fs::write(&f, "1\n").unwrap();
        let later = SystemTime::now() + Duration::from_secs(5);
        let stamp = Stamp::of(&f, later).expect("settled before the reading");
        assert!(stamp.holds(&f));
        std::fs::write(&f, "2\n").unwrap();
        assert!(!stamp.holds(&f), "written again, it is read again");
    }

    #[test]
    fn a_file_changed_just_before_the_reading_is_not_stamped() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("a.txt");
        std::fs::write(&f, "1\n").unwrap();
        assert!(Stamp::of(&f, SystemTime::now()).is_none(), "its times may not move with a change made within the clock's tick");
        assert!(Stamp::of(dir.path(), SystemTime::now() + Duration::from_secs(5)).is_none(), "a folder has no stamp");
    }
}
