//! When a run was last seen alive with a window open. A run killed while its tools ran (a crash,
//! a power cut, `kill -9`) leaves its window open, and the window then spans the time Finishline
//! was closed, when the person may have edited their files. The run keeps a file's modification
//! time fresh while its window is open; what changed in that window after the last beat was
//! written when the run was no longer there to see it, so it is not surely the run's.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, SystemTime};

/// How often the beat is written.
const BEAT: Duration = Duration::from_millis(250);

/// A change written less than this before the last beat counts as one made after it: the safe
/// side (a revert asks before putting it back). The workspace may be on another disk than the
/// beat, with its own clock (a network share) or a coarse one (FAT keeps times to 2 s).
const MARGIN: Duration = Duration::from_secs(2);

/// The beat's file for one session, under the data folder.
pub fn beat_file(data_dir: &Path, session: &str) -> PathBuf {
    data_dir.join("alive").join(session)
}

/// When the run of `session` was last seen alive with a window open; `None` when nothing says
/// (no beat was kept, as before this was).
pub fn last_beat(data_dir: &Path, session: &str) -> Option<SystemTime> {
    std::fs::metadata(beat_file(data_dir, session)).and_then(|m| m.modified()).ok()
}

/// Which of `paths` (relative to `root`) changed after `seen` (less [`MARGIN`]): with no `seen`,
/// all of them. A file's change is the later of its modification and its status change, which a
/// move, a copy that keeps the time (`cp -p`, `tar`, `rsync -a`) or a `chmod` sets too. A file
/// that is gone was deleted when its folder last changed (the nearest folder still there).
pub fn changed_after(root: &Path, paths: impl IntoIterator<Item = String>, seen: Option<SystemTime>) -> Vec<String> {
    paths
        .into_iter()
        .filter(|p| {
            let Some(seen) = seen else { return true };
            match last_change(root, p) {
                Some(changed) => changed + MARGIN > seen,
                None => true,
            }
        })
        .collect()
}

/// When what is at `path` last changed, or when it was deleted.
fn last_change(root: &Path, path: &str) -> Option<SystemTime> {
    use std::os::unix::fs::MetadataExt;
    let full = root.join(path);
    let there = full.ancestors().take_while(|a| a.starts_with(root)).find_map(|a| std::fs::symlink_metadata(a).ok())?;
    let status = SystemTime::UNIX_EPOCH.checked_add(Duration::new(u64::try_from(there.ctime()).ok()?, u32::try_from(there.ctime_nsec()).ok()?))?;
    Some(there.modified().ok()?.max(status))
}

/// Writes the beat until dropped. Dropped, it stops and leaves the file, whose time is then when
/// the run was last there: a process that ends with its window open (a question waits for an
/// answer in another process) is seen so as one killed is. Closing the window removes it
/// ([`forget`]).
pub struct Heartbeat {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Heartbeat {
    /// The first beat is written before this returns: the window it marks is saved next.
    pub fn start(data_dir: &Path, session: &str) -> Heartbeat {
        let file = beat_file(data_dir, session);
        let (stop, stopped) = mpsc::channel::<()>();
        let _ = file.parent().map(std::fs::create_dir_all);
        // A beat that cannot be written leaves none: everything in the window is then asked about.
        let thread = std::fs::File::create(&file).ok().and_then(|f| {
            std::thread::Builder::new()
                .name("window-heartbeat".into())
                .spawn(move || {
                    while {
                        let _ = f.set_modified(SystemTime::now());
                        stopped.recv_timeout(BEAT) == Err(mpsc::RecvTimeoutError::Timeout)
                    } {}
                })
                .ok()
        });
        Heartbeat { stop: Some(stop), thread }
    }
}

impl Drop for Heartbeat {
    fn drop(&mut self) {
        self.stop.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The window closed and its closing is saved: nothing will ask when the run was last seen.
pub fn forget(data_dir: &Path, session: &str) {
    let _ = std::fs::remove_file(beat_file(data_dir, session));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_changed_after_the_last_beat_is_not_surely_the_runs() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("old")).unwrap();
        std::fs::write(root.join("old/before.txt"), "x").unwrap();
        std::fs::write(root.join("old/gone.txt"), "x").unwrap();
        std::fs::remove_file(root.join("old/gone.txt")).unwrap();
        // Everything so far happened before the last beat; what follows, after it.
        std::thread::sleep(MARGIN + Duration::from_millis(50));
        let seen = SystemTime::now();
        std::thread::sleep(Duration::from_millis(20));
        std::fs::write(root.join("after.txt"), "y").unwrap();
        // A copy that keeps its old time is still a change now (its status changed).
        std::fs::write(root.join("copied.txt"), "z").unwrap();
        std::fs::File::options().write(true).open(root.join("copied.txt")).unwrap().set_modified(seen - Duration::from_secs(600)).unwrap();
        std::fs::create_dir_all(root.join("new")).unwrap();
        let names = ["old/before.txt", "old/gone.txt", "after.txt", "copied.txt", "new/gone.txt"].map(String::from);
        assert_eq!(changed_after(root, names.clone(), Some(seen)), vec!["after.txt".to_string(), "copied.txt".into(), "new/gone.txt".into()]);
        assert_eq!(changed_after(root, names, None).len(), 5, "with no beat kept, nothing is surely the run's");
    }

    #[test]
    fn the_beat_goes_on_while_the_window_is_open_stops_with_the_run_and_goes_once_it_closes() {
        let dir = tempfile::tempdir().unwrap();
        let beat = Heartbeat::start(dir.path(), "ses_1");
        assert!(last_beat(dir.path(), "ses_1").is_some(), "the first beat is written before the window is saved");
        let first = last_beat(dir.path(), "ses_1").unwrap();
        std::thread::sleep(BEAT * 3);
        assert!(last_beat(dir.path(), "ses_1").unwrap() > first, "the beat goes on while the window is open");
        drop(beat);
        let last = last_beat(dir.path(), "ses_1").expect("a run gone with its window open leaves when it was last seen");
        std::thread::sleep(BEAT * 2);
        assert_eq!(last_beat(dir.path(), "ses_1"), Some(last), "and the beat stopped");
        forget(dir.path(), "ses_1");
        assert_eq!(last_beat(dir.path(), "ses_1"), None);
    }
}
