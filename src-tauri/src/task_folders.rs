//! Which folder of a task the window opens in the file manager, and what it says when that
//! folder is gone: the launcher's own error ("xdg-open … ExitStatus(512)") tells a person nothing.

use std::path::{Path, PathBuf};

use finishline_engine::Error;
use serde::Deserialize;

/// Which folder of a task to open.
#[derive(Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum FolderOfTask {
    Worktree,
    Checkout,
}

/// The folder to open: the task's worktree, or the person's own folder (where a landing stopped
/// by their edits or files looks). One that is no longer there is said in words, with what still
/// works.
pub fn folder_to_open(which: FolderOfTask, work_dir: Option<&str>, workspace: &str) -> Result<PathBuf, Error> {
    let dir = match which {
        FolderOfTask::Worktree => {
            work_dir.ok_or_else(|| Error::InvalidInput("this task has no worktree (it landed, was rejected, or works in its folder)".into()))?
        }
        FolderOfTask::Checkout => workspace,
    };
    if Path::new(dir).is_dir() {
        return Ok(PathBuf::from(dir));
    }
    Err(Error::Worktree(match which {
        FolderOfTask::Worktree => format!(
            "The task's worktree is no longer at {dir} (moved or deleted). Its branch still holds the task's work: Approve makes the worktree again from it, and Reject or Discard removes what is left."
        ),
        FolderOfTask::Checkout => format!("Your folder is no longer at {dir} (moved, renamed or deleted)."),
    }))
}

/// What the window says when the folder is there but nothing opened it (no file manager, or
/// none that answers): what to do instead, in one sentence. The launcher's own words
/// ("ExitStatus(unix_wait_status(768))") tell a person nothing and filled the header with five
/// lines; they go to the app's log, for whoever asks.
pub fn opener_failed(dir: &Path, launcher: &str) -> Error {
    eprintln!("finishline: the file manager did not open {}: {launcher}", dir.display());
    Error::Io(std::io::Error::other(format!("No file manager opened {}: open it yourself from there, or copy its path.", dir.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_no_file_manager_opened_is_said_in_one_sentence_of_what_to_do() {
        let err = opener_failed(Path::new("/data/worktrees/repo-abc"), "Launcher \"xdg-open\" failed with ExitStatus(unix_wait_status(768))");
        let message = err.to_string();
        assert!(message.starts_with("No file manager opened /data/worktrees/repo-abc: open it yourself from there, or copy its path."), "{message}");
        assert!(!message.contains("ExitStatus") && !message.contains("xdg-open"), "the launcher's words are not the person's: {message}");
    }

    #[test]
    fn a_worktree_deleted_by_hand_is_said_in_words_with_what_still_works() {
        let gone = std::env::temp_dir().join("finishline-no-such-worktree-7d1c");
        let err = folder_to_open(FolderOfTask::Worktree, gone.to_str(), "/").unwrap_err();
        let Error::Worktree(message) = err else { panic!("a worktree error: {err:?}") };
        assert!(message.contains("no longer at") && message.contains(gone.to_str().unwrap()), "{message}");
        assert!(message.contains("Approve makes the worktree again"), "{message}");
    }

    #[test]
    fn a_folder_that_is_there_is_opened() {
        let here = std::env::temp_dir();
        assert_eq!(folder_to_open(FolderOfTask::Worktree, here.to_str(), "/nowhere").unwrap(), here);
        assert_eq!(folder_to_open(FolderOfTask::Checkout, None, here.to_str().unwrap()).unwrap(), here);
    }

    #[test]
    fn a_checkout_moved_away_is_said_in_words() {
        let err = folder_to_open(FolderOfTask::Checkout, None, "/nowhere/repo").unwrap_err();
        assert!(matches!(&err, Error::Worktree(m) if m == "Your folder is no longer at /nowhere/repo (moved, renamed or deleted)."), "{err:?}");
    }

    #[test]
    fn a_task_without_a_worktree_says_so() {
        assert!(matches!(folder_to_open(FolderOfTask::Worktree, None, "/"), Err(Error::InvalidInput(_))));
    }
}
