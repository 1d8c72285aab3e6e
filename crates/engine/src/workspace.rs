//! Where a task works and what it owns there: its own git worktree in a repository (or the
//! folder itself elsewhere), the changes each run made, and how an approved task lands on the
//! person's branch. Nothing here deletes or overwrites a file the task did not change itself.
//!
//! - [`ownership`]: a run's changes, window by window (pure);
//! - [`lock`]: one writer at a time in a git folder, across processes;
//! - [`last_seen`]: when a run was last alive with a window open, for a window a kill left open;
//! - [`worktree`]: a task's worktree and branch, the files it copies in, and cleaning up;
//! - [`submodules`]: the person's submodules filled in a task's worktree, and what changed in them;
//! - [`landing`]: approve puts the task's branch on the branch it started from;
//! - [`checkpoint`]: snapshots in a shadow git repository, for the review's diff and revert;
//! - [`instructions`]: the workspace's own rules for agents (`AGENTS.md`).

pub mod checkpoint;
pub mod instructions;
pub mod landing;
pub mod last_seen;
pub mod lock;
pub mod ownership;
pub mod submodules;
pub mod worktree;

/// Why a folder the person named cannot be a task's workspace, in their words: which folder,
/// and what to do, without the system's error number.
pub fn unusable(path: &std::path::Path, e: &std::io::Error) -> crate::Error {
    let message = match e.kind() {
        std::io::ErrorKind::NotFound => format!("there is no folder at {}: choose another, or check the spelling", path.display()),
        std::io::ErrorKind::PermissionDenied => format!("the folder {} cannot be read: permission denied", path.display()),
        _ => format!("the workspace {} cannot be used: {}", path.display(), e.to_string().split(" (os error").next().unwrap_or_default()),
    };
    crate::Error::InvalidInput(message)
}

/// A file where a folder was asked for (a path typed or dropped one level too deep): the way on
/// is the folder it is in.
pub fn not_a_folder(path: &std::path::Path) -> crate::Error {
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).map_or_else(|| ".".into(), |p| p.display().to_string());
    crate::Error::InvalidInput(format!("{} is a file, not a folder: choose the folder it is in, {parent}", path.display()))
}

/// Why the folder a session works in cannot be used now: it was there when the task began, so a
/// missing one was moved or deleted since, and naming another is not what to do.
pub fn unusable_now(path: &std::path::Path, e: &std::io::Error) -> crate::Error {
    if e.kind() == std::io::ErrorKind::NotFound {
        return crate::Error::InvalidInput(format!(
            "the folder this session works in, {}, is gone (moved or deleted): put it back there and resume, or start a new task in another folder",
            path.display()
        ));
    }
    unusable(path, e)
}
