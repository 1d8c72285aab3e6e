//! Where a task works and what it owns there: its own git worktree in a repository (or the
//! folder itself elsewhere), the changes each run made, and how an approved task lands on the
//! person's branch. Nothing here deletes or overwrites a file the task did not change itself.
//!
//! - [`ownership`]: a run's changes, window by window (pure);
//! - [`lock`]: one writer at a time in a git folder, across processes;
//! - [`worktree`]: a task's worktree and branch, the files it copies in, and cleaning up;
//! - [`submodules`]: the person's submodules filled in a task's worktree, and what changed in them;
//! - [`landing`]: approve puts the task's branch on the branch it started from;
//! - [`checkpoint`]: snapshots in a shadow git repository, for the review's diff and revert;
//! - [`instructions`]: the workspace's own rules for agents (`AGENTS.md`).

pub mod checkpoint;
pub mod instructions;
pub mod landing;
pub mod lock;
pub mod ownership;
pub mod submodules;
pub mod worktree;
