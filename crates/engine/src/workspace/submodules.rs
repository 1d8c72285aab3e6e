//! The person's submodules in a task's worktree. `git worktree add` fills none, so the agent would
//! find each folder empty and could neither read nor build against it; each one the person has
//! checked out is filled from their copy, offline. What a task changes inside one cannot land (a
//! branch records only which commit a submodule is at), so it is named in the review instead.

use std::path::Path;
use std::process::Command;

use super::worktree::{git, git_in, in_background, TaskWorktree};

/// Past this many, what changed inside submodules is counted, not listed.
const LISTED: usize = 200;

/// A submodule a checkout's index links: its path from the top and the commit it is at.
struct Link {
    path: String,
    commit: String,
}

/// The submodules a checkout's index links, read only when it has a `.gitmodules`: listing a
/// large index costs more than that look.
fn links(folder: &Path) -> Vec<Link> {
    if !folder.join(".gitmodules").exists() {
        return vec![];
    }
    let listed = git(folder, &["-c", "core.quotePath=false", "ls-files", "--stage", "-z"]).unwrap_or_default();
    listed
        .split('\0')
        .filter_map(|e| e.strip_prefix("160000 "))
        .filter_map(|e| {
            let (commit, path) = e.split_once(' ').map(|(c, rest)| (c, rest.split_once('\t').map(|(_, p)| p)))?;
            Some(Link { path: path?.to_string(), commit: commit.to_string() })
        })
        .collect()
}

/// git that never reaches the network nor asks for a login: a local path is all it may read
/// (a partial clone would otherwise fetch what it lacks from its remote).
fn offline(dir: &Path) -> Command {
    let mut cmd = git_in(dir);
    cmd.args(["-c", "protocol.allow=never", "-c", "protocol.file.allow=always"]).env("GIT_NO_LAZY_FETCH", "1").env("GIT_TERMINAL_PROMPT", "0");
    cmd
}

fn offline_ok(dir: &Path, args: &[&str]) -> bool {
    offline(dir).args(args).output().is_ok_and(|o| o.status.success())
}

/// Whether the person's copy of a submodule has the commit.
fn theirs_has(theirs: &Path, commit: &str) -> bool {
    theirs.join(".git").exists() && offline_ok(theirs, &["cat-file", "-e", &format!("{commit}^{{commit}}")])
}

/// Fills each submodule of a fresh worktree that the person has checked out, at the commit the
/// branch links, by a clone of their copy (objects linked, not copied; their copy untouched),
/// with no remote: a push from the task's copy must not reach the person's. One they have not
/// checked out, or whose copy lacks that commit, stays empty, as in a fresh clone.
pub(crate) fn fill(repo: &Path, folder: &Path) {
    for link in links(folder) {
        let (theirs, ours) = (repo.join(&link.path), folder.join(&link.path));
        if !theirs_has(&theirs, &link.commit) {
            continue;
        }
        let mut clone = offline(folder);
        clone.args(["clone", "--quiet", "--no-checkout", "--"]).arg(&theirs).arg(&ours);
        in_background(&mut clone);
        let filled = clone.output().is_ok_and(|o| o.status.success())
            && offline_ok(&ours, &["remote", "remove", "origin"])
            && offline_ok(&ours, &["-c", "checkout.workers=0", "-c", "core.autocrlf=false", "checkout", "--quiet", "--detach", &link.commit]);
        if filled {
            fill(&theirs, &ours);
        } else {
            // Half made (a shallow or partial copy lacking the files): empty again, as git
            // leaves a submodule it did not fill, so the review does not list its files deleted.
            let _ = std::fs::remove_dir_all(&ours);
            let _ = std::fs::create_dir_all(&ours);
        }
    }
}

/// The worktree's submodules now at a commit the person's copy does not have (made in the task's
/// worktree): the branch keeps its old link to them, as landing the new one would link to nothing.
pub(crate) fn stranded(wt: &TaskWorktree) -> Vec<String> {
    let (repo, folder) = (Path::new(&wt.repo), Path::new(&wt.folder));
    links(folder)
        .into_iter()
        .filter(|l| head(&folder.join(&l.path)).is_some_and(|h| h != l.commit && !theirs_has(&repo.join(&l.path), &h)))
        .map(|l| l.path)
        .collect()
}

fn head(dir: &Path) -> Option<String> {
    dir.join(".git").exists().then(|| git(dir, &["rev-parse", "-q", "--verify", "HEAD"]).ok()).flatten().map(|h| h.trim().to_string())
}

/// What differs inside the worktree's submodules from the commit the branch links, as paths from
/// the worktree's top (a folder new in one as `dir/`; a submodule moved to commits made in the
/// worktree as `path/ (…)`). None of it lands, and it goes with the worktree. In a submodule the
/// fill left empty, every file is new.
pub fn changed(wt: &TaskWorktree) -> Vec<String> {
    let mut out = Vec::new();
    let folder = Path::new(&wt.folder);
    changed_in(folder, "", &mut out);
    for path in stranded(wt) {
        out.push(format!("{path}/ (commits made in the task's worktree)"));
    }
    if out.len() > LISTED {
        let more = out.len() - LISTED;
        out.truncate(LISTED);
        out.push(format!("… and {more} more"));
    }
    out
}

fn changed_in(top: &Path, prefix: &str, out: &mut Vec<String>) {
    for link in links(top) {
        let dir = top.join(&link.path);
        let inner = format!("{prefix}{}/", link.path);
        if dir.join(".git").exists() {
            let args = ["-c", "core.quotePath=false", "status", "--porcelain=v1", "-z", "--untracked-files=normal", "--no-renames", "--ignore-submodules=all"];
            let listed = git(&dir, &args).unwrap_or_default();
            out.extend(listed.split('\0').filter(|e| e.len() > 3).map(|e| format!("{inner}{}", &e[3..])));
            changed_in(&dir, &inner, out);
        } else {
            let walk = ignore::WalkBuilder::new(&dir).hidden(false).git_ignore(false).ignore(false).parents(false).build().flatten();
            let mut found: Vec<String> = walk
                .filter(|e| e.file_type().is_some_and(|t| !t.is_dir()))
                .filter_map(|e| e.path().strip_prefix(&dir).ok().map(|p| format!("{inner}{}", p.to_string_lossy())))
                .take(LISTED + 1)
                .collect();
            found.sort();
            out.extend(found);
        }
    }
}
