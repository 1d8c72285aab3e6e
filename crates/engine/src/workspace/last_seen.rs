//! When a run was last seen alive with a window open. A run killed while its tools ran (a crash,
//! a power cut, `kill -9`) leaves its window open, and the window then spans the time Finishline
//! was closed, when the person may have edited their files. The run keeps a file's modification
//! time fresh while its window is open; what changed in that window after the last beat was
//! written when the run was no longer there to see it, so it is not surely the run's.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, SystemTime};

/// How often the beat is written. A change the run made less than this before it was killed
/// counts as one made after: the safe side (a revert asks before putting it back).
const BEAT: Duration = Duration::from_millis(250);

/// The beat's file for one session, under the data folder.
pub fn beat_file(data_dir: &Path, session: &str) -> PathBuf {
    data_dir.join("alive").join(session)
}

/// When the run of `session` was last seen alive with a window open; `None` when nothing says
/// (no beat was kept, as before this was).
pub fn last_beat(data_dir: &Path, session: &str) -> Option<SystemTime> {
    std::fs::metadata(beat_file(data_dir, session)).and_then(|m| m.modified()).ok()
}

/// Which of `paths` (relative to `root`) were written after `seen`, or are gone (when a file was
/// deleted is not kept anywhere): with no `seen`, all of them.
pub fn changed_after(root: &Path, paths: impl IntoIterator<Item = String>, seen: Option<SystemTime>) -> Vec<String> {
    paths
        .into_iter()
        .filter(|p| {
            let written = std::fs::symlink_metadata(root.join(p)).and_then(|m| m.modified()).ok();
            match (seen, written) {
                (Some(seen), Some(written)) => written > seen,
                _ => true,
            }
        })
        .collect()
}

/// Writes the beat until dropped; dropped, it stops and removes the file (the window closed as it
/// should, so nothing will ask when the run was last seen).
pub struct Heartbeat {
    file: PathBuf,
    stop: Option<mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Heartbeat {
    pub fn start(data_dir: &Path, session: &str) -> Heartbeat {
        let file = beat_file(data_dir, session);
        let (stop, stopped) = mpsc::channel::<()>();
        let beating = file.clone();
        let thread = std::thread::Builder::new()
            .name("window-heartbeat".into())
            .spawn(move || {
                let _ = beating.parent().map(std::fs::create_dir_all);
                // A beat that cannot be written leaves the last one (or none): the safe side.
                let Ok(f) = std::fs::File::create(&beating) else { return };
                while {
                    let _ = f.set_modified(SystemTime::now());
                    stopped.recv_timeout(BEAT) == Err(mpsc::RecvTimeoutError::Timeout)
                } {}
            })
            .ok();
        Heartbeat { file, stop: Some(stop), thread }
    }
}

impl Drop for Heartbeat {
    fn drop(&mut self) {
        self.stop.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let _ = std::fs::remove_file(&self.file);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_written_after_the_last_beat_or_gone_is_not_surely_the_runs() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("before.txt"), "x").unwrap();
        let old = SystemTime::now() - Duration::from_secs(60);
        std::fs::File::options().write(true).open(root.join("before.txt")).unwrap().set_modified(old).unwrap();
        std::fs::write(root.join("after.txt"), "y").unwrap();
        let seen = SystemTime::now() - Duration::from_secs(30);
        let names = ["before.txt", "after.txt", "gone.txt"].map(String::from);
        assert_eq!(changed_after(root, names.clone(), Some(seen)), vec!["after.txt".to_string(), "gone.txt".to_string()]);
        assert_eq!(changed_after(root, names, None).len(), 3, "with no beat kept, nothing is surely the run's");
    }

    #[test]
    fn the_beat_is_kept_while_the_window_is_open_and_gone_once_it_closes() {
        let dir = tempfile::tempdir().unwrap();
        let beat = Heartbeat::start(dir.path(), "ses_1");
        let t = std::time::Instant::now();
        while last_beat(dir.path(), "ses_1").is_none() {
            assert!(t.elapsed() < Duration::from_secs(5), "the first beat is written at once");
            std::thread::sleep(Duration::from_millis(5));
        }
        let first = last_beat(dir.path(), "ses_1").unwrap();
        std::thread::sleep(BEAT * 3);
        assert!(last_beat(dir.path(), "ses_1").unwrap() > first, "the beat goes on while the window is open");
        drop(beat);
        assert_eq!(last_beat(dir.path(), "ses_1"), None);
    }
}
