//! Checkpoints of the workspace in a shadow git repository kept in the app's data folder (the
//! idea Cline uses). Every change is captured, whichever tool made it, the shell and MCP servers
//! included, because snapshots read the files themselves. The workspace's ignore files are
//! respected. The review's diffs and Reject's revert come from here.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Serialize;

use crate::error::{Error, Result};

#[derive(Debug, Clone)]
pub struct Checkpoints {
    git_dir: PathBuf,
    work_tree: PathBuf,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    Created,
    Modified,
    Deleted,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FileChange {
    pub path: String,
    pub kind: ChangeKind,
    /// A unified diff, capped in size; binary files say so.
    pub diff: String,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct RevertReport {
    pub restored: Vec<String>,
    pub deleted: Vec<String>,
    /// Files the person edited after the agent's last change; left alone unless forced.
    pub conflicts: Vec<String>,
    pub applied: bool,
}

const MAX_DIFF: usize = 64 * 1024;

impl Checkpoints {
    pub fn open(dir: &Path, work_tree: &Path) -> Result<Checkpoints> {
        std::fs::create_dir_all(dir)?;
        let cp = Checkpoints { git_dir: dir.to_path_buf(), work_tree: work_tree.to_path_buf() };
        if !dir.join("HEAD").exists() {
            cp.git(&["init", "--quiet"])?;
            // The shadow repository must never touch the workspace's own git settings.
            cp.git(&["config", "core.autocrlf", "false"])?;
            cp.git(&["config", "core.quotePath", "false"])?;
            cp.git(&["config", "gc.auto", "0"])?;
        }
        Ok(cp)
    }

    fn git(&self, args: &[&str]) -> Result<String> {
        let out = Command::new("git")
            .arg("--git-dir")
            .arg(&self.git_dir)
            .arg("--work-tree")
            .arg(&self.work_tree)
            .args(["-c", "user.name=Finishline", "-c", "user.email=checkpoints@finishline.local", "-c", "commit.gpgsign=false"])
            .args(args)
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .env_remove("GIT_INDEX_FILE")
            .current_dir(&self.work_tree)
            .output()
            .map_err(|e| Error::Internal(format!("git is needed for checkpoints and could not run: {e}")))?;
        if !out.status.success() {
            return Err(Error::Internal(format!("checkpoint git {} failed: {}", args.first().unwrap_or(&""), String::from_utf8_lossy(&out.stderr).trim())));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Records the workspace as it is now; returns the checkpoint id.
    pub fn snapshot(&self, label: &str) -> Result<String> {
        self.git(&["add", "--all"])?;
        self.git(&["commit", "--quiet", "--allow-empty", "--no-verify", "-m", label])?;
        Ok(self.git(&["rev-parse", "HEAD"])?.trim().to_string())
    }

    /// Points a name (`base`, `agent`) at a checkpoint.
    pub fn mark(&self, name: &str, commit: &str) -> Result<()> {
        self.git(&["update-ref", &format!("refs/finishline/{name}"), commit])?;
        Ok(())
    }

    /// The checkpoint a name points at, if set.
    pub fn marked(&self, name: &str) -> Option<String> {
        self.git(&["rev-parse", "--verify", "--quiet", &format!("refs/finishline/{name}")]).ok().map(|s| s.trim().to_string()).filter(|s| !s.is_empty())
    }

    /// Whether any file differs between two checkpoints (cheap: no diffs are computed).
    pub fn differs(&self, from: &str, to: &str) -> Result<bool> {
        Ok(!self.git(&["diff", "--name-only", "--no-renames", from, to])?.trim().is_empty())
    }

    /// Files that differ between two checkpoints, with diffs.
    pub fn changes(&self, from: &str, to: &str) -> Result<Vec<FileChange>> {
        let names = self.git(&["diff", "--name-status", "--no-renames", "-z", from, to])?;
        let mut parts = names.split('\0').filter(|s| !s.is_empty());
        let mut out = Vec::new();
        while let (Some(status), Some(path)) = (parts.next(), parts.next()) {
            let kind = match status.chars().next() {
                Some('A') => ChangeKind::Created,
                Some('D') => ChangeKind::Deleted,
                _ => ChangeKind::Modified,
            };
            let mut diff = self.git(&["diff", "--no-color", "--no-renames", from, to, "--", path])?;
            if diff.len() > MAX_DIFF {
                let mut cut = MAX_DIFF;
                while !diff.is_char_boundary(cut) {
                    cut -= 1;
                }
                diff.truncate(cut);
                diff.push_str("\n[… diff truncated …]\n");
            }
            out.push(FileChange { path: path.to_string(), kind, diff });
        }
        Ok(out)
    }

    /// Puts the files the agent changed between `base` and `agent_last` back as they were at
    /// `base`: restores changed and deleted files, deletes created ones. Files the person edited
    /// after `agent_last` are conflicts: nothing is touched unless `force` is set.
    pub fn revert(&self, base: &str, agent_last: &str, force: bool) -> Result<RevertReport> {
        let (agent_changes, conflicts) = self.revert_plan(base, agent_last)?;
        let mut report = RevertReport { conflicts: conflicts.clone(), ..Default::default() };
        if !conflicts.is_empty() && !force {
            return Ok(report);
        }
        for c in &agent_changes {
            match c.kind {
                ChangeKind::Created => {
                    let p = self.work_tree.join(&c.path);
                    if p.exists() || p.symlink_metadata().is_ok() {
                        std::fs::remove_file(&p)?;
                    }
                    report.deleted.push(c.path.clone());
                }
                ChangeKind::Modified | ChangeKind::Deleted => {
                    self.git(&["checkout", base, "--", &c.path])?;
                    report.restored.push(c.path.clone());
                }
            }
        }
        report.applied = true;
        self.snapshot("after revert")?;
        Ok(report)
    }

    /// Files a revert would overwrite that the person edited after the agent; touches nothing.
    pub fn revert_conflicts(&self, base: &str, agent_last: &str) -> Result<Vec<String>> {
        Ok(self.revert_plan(base, agent_last)?.1)
    }

    fn revert_plan(&self, base: &str, agent_last: &str) -> Result<(Vec<FileChange>, Vec<String>)> {
        let now = self.snapshot("before revert")?;
        let agent_changes = self.changes(base, agent_last)?;
        let person_changes: Vec<String> = self.changes(agent_last, &now)?.into_iter().map(|c| c.path).collect();
        let conflicts: Vec<String> = agent_changes.iter().filter(|c| person_changes.contains(&c.path)).map(|c| c.path.clone()).collect();
        Ok((agent_changes, conflicts))
    }
}
