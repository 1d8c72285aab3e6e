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

/// The commit the task's branch is based on now: where it meets the branch it lands on (after a
/// catch-up rebase or merge, that branch's tip then), else where it started. Against the start
/// alone, a commit after a rebase put back the links the person had moved since.
fn base_of(wt: &TaskWorktree) -> String {
    let folder = Path::new(&wt.folder);
    wt.base_branch
        .as_ref()
        .and_then(|b| git(folder, &["merge-base", "HEAD", &format!("refs/heads/{b}")]).ok())
        .map(|c| c.trim().to_string())
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| wt.base_commit.clone())
}

/// What a task's branch leaves as the base commit has it: its submodules (paths from the top)
/// and `.gitmodules`, which must go on naming them; none without one. Only a path the base's
/// tree really links counts: a stale `.gitmodules` entry can name an ordinary folder, whose
/// changes are the task's to land.
pub(crate) fn base_paths(wt: &TaskWorktree) -> Vec<String> {
    paths_at(wt, &base_of(wt))
}

fn paths_at(wt: &TaskWorktree, base: &str) -> Vec<String> {
    let folder = Path::new(&wt.folder);
    let blob = format!("{base}:.gitmodules");
    let listed = git(folder, &["config", "--blob", &blob, "--get-regexp", r"^submodule\..*\.path$"]).unwrap_or_default();
    let named: Vec<&str> = listed.lines().filter_map(|l| l.split_once(' ').map(|(_, p)| p.trim())).filter(|p| !p.is_empty()).collect();
    if named.is_empty() {
        return vec![];
    }
    let mut args = vec!["-c", "core.quotePath=false", "ls-tree", "-z", base, "--"];
    args.extend(named.iter().copied());
    let tree = git(folder, &args).unwrap_or_default();
    let mut paths: Vec<String> =
        tree.split('\0').filter_map(|e| e.strip_prefix("160000 commit ")).filter_map(|e| e.split_once('\t')).map(|(_, p)| p.to_string()).collect();
    if !paths.is_empty() {
        paths.push(MODULES.into());
    }
    paths
}

const MODULES: &str = ".gitmodules";

/// Whether `path` is one of `submodules` or inside one.
pub(crate) fn within(path: &str, submodules: &[String]) -> bool {
    let path = path.trim_end_matches('/');
    submodules.iter().any(|s| path == s || path.strip_prefix(s.as_str()).is_some_and(|rest| rest.starts_with('/')))
}

/// Puts each submodule link of the base commit (`base`: [`base_paths`]) back in the worktree's
/// index as the base has it, and its `.gitmodules`, whatever the task did (moved one, removed
/// it, replaced it by a file, committed that itself): a branch that changes one would land a
/// link to a commit only the worktree had, or delete the person's submodule checkout with their
/// edits in it. What the task did there is named in the review instead ([`changed`]). A
/// submodule the task adds is its own work and left to land. Returns whether the index changed.
pub(crate) fn keep_links(wt: &TaskWorktree, base: &[String]) -> crate::error::Result<bool> {
    if base.is_empty() {
        return Ok(false);
    }
    let folder = Path::new(&wt.folder);
    // Every link, whatever `submodule.*.ignore` or `diff.ignoreSubmodules` says.
    let raw = git(folder, &["diff", "--cached", "--raw", "-z", "--no-renames", "--no-abbrev", "--ignore-submodules=none", &base_of(wt)])?;
    let mut fields = raw.split('\0');
    let mut info = String::new();
    let mut remove: Vec<String> = Vec::new();
    while let (Some(head), Some(path)) = (fields.next(), fields.next()) {
        let parts: Vec<&str> = head.trim_start_matches(':').split(' ').collect();
        let [old_mode, new_mode, old_sha, ..] = parts[..] else { continue };
        // A link the task added goes too: `.gitmodules` is put back, so it would name nothing.
        if old_mode != "160000" && new_mode != "160000" && path != MODULES {
            continue;
        }
        // The path and anything the task put under it go; then it is as the base had it.
        remove.push(path.to_string());
        if old_mode != "000000" {
            info.push_str(&format!("{old_mode} {old_sha} 0\t{path}\0"));
        }
    }
    if remove.is_empty() {
        return Ok(false);
    }
    // Paths as they are: a submodule at `v[12]` must not take the files `v1` and `v2` with it.
    let mut rm = git_in(folder);
    rm.env("GIT_LITERAL_PATHSPECS", "1").args(["rm", "--cached", "-r", "-q", "-f", "--ignore-unmatch", "--"]).args(&remove);
    let put_back = |cmd: Command, input: &[u8]| -> crate::error::Result<()> {
        let out = super::worktree::git_with_input(cmd, input).map_err(|e| crate::Error::Worktree(format!("git could not run: {e}")))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(crate::Error::Worktree(format!("the task's submodules could not be kept as they were: {}", String::from_utf8_lossy(&out.stderr).trim())))
        }
    };
    put_back(rm, b"")?;
    if !info.is_empty() {
        let mut cmd = git_in(folder);
        cmd.args(["update-index", "-z", "--index-info"]);
        put_back(cmd, info.as_bytes())?;
    }
    Ok(true)
}

fn head(dir: &Path) -> Option<String> {
    dir.join(".git").exists().then(|| git(dir, &["rev-parse", "-q", "--verify", "HEAD"]).ok()).flatten().map(|h| h.trim().to_string())
}

/// What the task did to the worktree's submodules that its branch does not carry, as paths from
/// the worktree's top: files changed inside one (a folder new in it as `dir/`; in one the fill
/// left empty, every file), one moved to another commit (`path/ (at another commit…)`), one
/// removed or replaced. None of it lands, and it goes with the worktree.
pub fn changed(wt: &TaskWorktree) -> Vec<String> {
    let mut out = Vec::new();
    let folder = Path::new(&wt.folder);
    let base = base_of(wt);
    if paths_at(wt, &base).iter().any(|p| p == MODULES) && !super::worktree::git_ok(folder, &["diff", "--quiet", &base, "--", MODULES]) {
        out.push(format!("{MODULES} (changed by the task: a task's branch leaves submodules as they are)"));
    }
    changed_in(folder, "", &mut out);
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
        if !std::fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir()) {
            out.push(format!("{prefix}{} (removed or replaced by the task: a task's branch leaves submodules as they are)", link.path));
            continue;
        }
        if let Some(at) = head(&dir) {
            if at != link.commit {
                out.push(format!("{inner} (at another commit, {}: a task's branch leaves submodules where they are)", &at[..at.len().min(12)]));
            }
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
