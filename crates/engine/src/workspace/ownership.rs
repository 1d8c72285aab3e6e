//! What a run changed, and nothing else. A run records the workspace before and after each
//! stretch in which it can change files (a step's tools, an external agent's turn, verification):
//! a *window*. A file is the run's when one of its windows changed it; the run's change to it goes
//! from the file as it was when the run first touched it to the file as the run last left it.
//! Whatever happened outside the run's windows (the person's edits, another task in the same
//! folder, an earlier run of the session) is not the run's, so its review, its diff and its
//! revert never include it. Pure: the checkpoints supply the windows' raw differences.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Whether what is at a path is a named pipe, a socket or a device: git records only files, links
/// and folders, so to the snapshots (and to a revert's looks) no file is there. Reading one would
/// wait for a writer that may never come.
pub fn holds_no_file(meta: &std::fs::Metadata) -> bool {
    let kind = meta.file_type();
    !(kind.is_file() || kind.is_dir() || kind.is_symlink())
}

/// A file's state at one moment: absent, or a blob with its git mode (`100644`, `100755`,
/// `120000` for a symbolic link).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum FileState {
    Absent,
    Blob { oid: String, mode: String },
}

impl FileState {
    /// From a raw diff's mode and object id: git writes zeros for a side that does not exist.
    pub fn from_raw(mode: &str, oid: &str) -> FileState {
        if mode.chars().all(|c| c == '0') || oid.chars().all(|c| c == '0') {
            FileState::Absent
        } else {
            FileState::Blob { oid: oid.to_string(), mode: mode.to_string() }
        }
    }

    pub fn oid(&self) -> Option<&str> {
        match self {
            FileState::Blob { oid, .. } => Some(oid),
            FileState::Absent => None,
        }
    }

    /// Same content and kind: a mode change alone (chmod +x) is a change.
    pub fn same_as(&self, other: &FileState) -> bool {
        self == other
    }
}

/// One path a window changed, as `git diff-tree --raw` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawChange {
    pub path: String,
    pub before: FileState,
    pub after: FileState,
}

/// A file the run changed: as it was before the run first touched it, and as the run left it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OwnedChange {
    pub path: String,
    pub before: FileState,
    pub after: FileState,
    /// It changed in a window where more than the agent's own file tools ran (a command, an
    /// external agent's turn): an edit the person saved meanwhile looks the same, so a revert
    /// keeps a copy of what it replaces.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unattributed: bool,
    /// Someone changed it between two of the run's windows (the person saved an edit while the
    /// task worked): it goes back to before the run only when the person says so.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub edited_between: bool,
}

/// The run's changes so far, folded window by window (in order).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Ownership {
    /// Each file's state before the run first touched it, as the run left it, whether any window
    /// that changed it is unattributed, and whether it changed between windows.
    files: BTreeMap<String, (FileState, FileState, bool, bool)>,
}

impl Ownership {
    /// Adds one window's changes. A file the run touched before keeps its first `before` (the
    /// review shows all the run did to it); its `after` is the window's. When the window found
    /// the file other than the run last left it, someone changed it in between (the person's
    /// save): it is marked, and a revert asks before it goes past their edit.
    /// `writes` are the paths the agent's own file tools wrote in the window when nothing else
    /// ran in it (`None` otherwise): a change elsewhere is unattributed. `unseen` are the paths
    /// the window changed after the run was last seen alive (a kill left it open while the
    /// person could edit): marked as someone's edit, so a revert asks.
    pub fn add_window(&mut self, window: impl IntoIterator<Item = RawChange>, writes: Option<&[String]>, unseen: &[String]) {
        for c in window {
            let unattributed = !writes.is_some_and(|w| w.contains(&c.path));
            let theirs = unseen.contains(&c.path);
            match self.files.get_mut(&c.path) {
                Some(entry) => {
                    entry.3 |= entry.1 != c.before || theirs;
                    entry.1 = c.after;
                    entry.2 |= unattributed;
                }
                None => {
                    self.files.insert(c.path, (c.before, c.after, unattributed, theirs));
                }
            }
        }
    }

    /// The files the run changed, by path; a file the run changed and then put back as it found
    /// it is not among them.
    pub fn changes(&self) -> Vec<OwnedChange> {
        self.files
            .iter()
            .filter(|(_, (b, a, ..))| !b.same_as(a))
            .map(|(p, (b, a, u, e))| OwnedChange { path: p.clone(), before: b.clone(), after: a.clone(), unattributed: *u, edited_between: *e })
            .collect()
    }

    pub fn is_empty(&self) -> bool {
        self.changes().is_empty()
    }
}

/// What revert should do with one of the run's files, given what is there now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RevertStep {
    /// The file is as the run left it: put back what the run found.
    Restore,
    /// It is already as the run found it (reverted before a crash, or by hand): nothing to do.
    AlreadyBack,
    /// Someone changed it after the run did, or between its edits: overwriting would lose their
    /// work.
    ChangedSince,
}

/// Decides one file's revert from the run's change and the file's state now.
pub fn revert_step(change: &OwnedChange, now: &FileState) -> RevertStep {
    if now.same_as(&change.before) {
        RevertStep::AlreadyBack
    } else if now.same_as(&change.after) && !change.edited_between {
        RevertStep::Restore
    } else {
        RevertStep::ChangedSince
    }
}

/// Parses `git diff-tree -r -z --raw --no-renames` output into changes.
pub fn parse_raw(out: &str) -> Vec<RawChange> {
    let mut parts = out.split('\0');
    let mut changes = Vec::new();
    while let Some(meta) = parts.next() {
        let Some(meta) = meta.strip_prefix(':') else { continue };
        let Some(path) = parts.next() else { break };
        let f: Vec<&str> = meta.split(' ').collect();
        if f.len() < 5 {
            continue;
        }
        changes.push(RawChange { path: path.to_string(), before: FileState::from_raw(f[0], f[2]), after: FileState::from_raw(f[1], f[3]) });
    }
    changes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blob(oid: &str) -> FileState {
        FileState::Blob { oid: oid.into(), mode: "100644".into() }
    }
    fn raw(path: &str, before: FileState, after: FileState) -> RawChange {
        RawChange { path: path.into(), before, after }
    }

    #[test]
    fn a_file_changed_in_two_windows_goes_from_what_the_run_found_to_what_it_left() {
        let mut o = Ownership::default();
        o.add_window([raw("a.txt", blob("1"), blob("2"))], Some(&["a.txt".to_string()]), &[]);
        o.add_window([raw("a.txt", blob("2"), blob("3"))], Some(&["a.txt".to_string()]), &[]);
        assert_eq!(o.changes(), vec![OwnedChange { path: "a.txt".into(), before: blob("1"), after: blob("3"), unattributed: false, edited_between: false }]);
    }

    #[test]
    fn a_file_someone_changed_between_the_runs_windows_shows_all_the_run_did_and_is_reverted_only_when_asked() {
        let mut o = Ownership::default();
        o.add_window([raw("a.txt", blob("1"), blob("2"))], Some(&["a.txt".to_string()]), &[]);
        // Between the windows someone else wrote 3; the run then wrote 4.
        o.add_window([raw("a.txt", blob("3"), blob("4"))], Some(&["a.txt".to_string()]), &[]);
        let change = OwnedChange { path: "a.txt".into(), before: blob("1"), after: blob("4"), unattributed: false, edited_between: true };
        assert_eq!(o.changes(), vec![change.clone()]);
        assert_eq!(revert_step(&change, &blob("4")), RevertStep::ChangedSince, "as the run left it, yet holding their edit: asked");
    }

    #[test]
    fn a_file_the_run_created_and_then_deleted_is_not_its_change() {
        let mut o = Ownership::default();
        o.add_window([raw("tmp.txt", FileState::Absent, blob("1"))], None, &[]);
        o.add_window([raw("tmp.txt", blob("1"), FileState::Absent)], None, &[]);
        assert!(o.is_empty(), "nothing of the run's is left to review or revert");
    }

    #[test]
    fn files_changed_outside_the_runs_windows_are_never_its_own() {
        // The person's edit (b.txt) happened between windows: no window reports it.
        let mut o = Ownership::default();
        o.add_window([raw("a.txt", FileState::Absent, blob("1"))], None, &[]);
        o.add_window(Vec::new(), None, &[]);
        let paths: Vec<String> = o.changes().into_iter().map(|c| c.path).collect();
        assert_eq!(paths, vec!["a.txt".to_string()]);
    }

    #[test]
    fn revert_restores_only_a_file_still_as_the_run_left_it() {
        let c = OwnedChange { path: "a".into(), before: blob("1"), after: blob("2"), unattributed: false, edited_between: false };
        assert_eq!(revert_step(&c, &blob("2")), RevertStep::Restore);
        assert_eq!(revert_step(&c, &blob("1")), RevertStep::AlreadyBack, "a revert finished before a crash is not done twice");
        assert_eq!(revert_step(&c, &blob("3")), RevertStep::ChangedSince, "someone's later edit is never overwritten without asking");
        assert_eq!(revert_step(&c, &FileState::Absent), RevertStep::ChangedSince, "a file deleted after the run is someone else's decision");
        let created = OwnedChange { path: "n".into(), before: FileState::Absent, after: blob("5"), unattributed: false, edited_between: false };
        assert_eq!(revert_step(&created, &FileState::Absent), RevertStep::AlreadyBack);
    }

    #[test]
    fn a_change_is_the_agents_own_only_where_its_file_tools_wrote_and_nothing_else_ran() {
        let mut o = Ownership::default();
        let wrote = ["a.txt".to_string()];
        // The file tool wrote a.txt; b.txt changed in the same moment (the person's save).
        o.add_window([raw("a.txt", FileState::Absent, blob("1")), raw("b.txt", blob("2"), blob("3"))], Some(&wrote), &[]);
        // A command ran: whatever changed then may hold the person's edit.
        o.add_window([raw("c.txt", blob("4"), blob("5"))], None, &[]);
        let unattributed: Vec<(String, bool)> = o.changes().into_iter().map(|c| (c.path, c.unattributed)).collect();
        assert_eq!(unattributed, vec![("a.txt".into(), false), ("b.txt".into(), true), ("c.txt".into(), true)]);
        // Once a command touched a file, the file tool writing it again does not make it exact.
        o.add_window([raw("c.txt", blob("5"), blob("6"))], Some(&["c.txt".to_string()]), &[]);
        assert!(o.changes()[2].unattributed);
    }

    #[test]
    fn a_file_changed_after_the_run_was_last_seen_alive_is_reverted_only_when_asked() {
        let mut o = Ownership::default();
        // A kill left the window open: the command made a.txt before it, the person b.txt after.
        o.add_window([raw("a.txt", FileState::Absent, blob("1")), raw("b.txt", FileState::Absent, blob("2"))], None, &["b.txt".to_string()]);
        let asked: Vec<(String, bool)> = o.changes().into_iter().map(|c| (c.path, c.edited_between)).collect();
        assert_eq!(asked, vec![("a.txt".into(), false), ("b.txt".into(), true)]);
        assert_eq!(revert_step(&o.changes()[1], &blob("2")), RevertStep::ChangedSince, "their new file is not deleted without asking");
        // The resumed run writes b.txt again: it still holds what they wrote.
        o.add_window([raw("b.txt", blob("2"), blob("3"))], Some(&["b.txt".to_string()]), &[]);
        assert!(o.changes()[1].edited_between);
    }

    #[test]
    fn a_mode_change_alone_is_a_change() {
        let mut o = Ownership::default();
        o.add_window([raw("run.sh", blob("1"), FileState::Blob { oid: "1".into(), mode: "100755".into() })], None, &[]);
        assert_eq!(o.changes().len(), 1);
    }

    #[test]
    fn raw_diff_output_parses_created_modified_and_deleted_files() {
        let z = "0000000000000000000000000000000000000000";
        let out = format!(":000000 100644 {z} aaaa A\0new file.txt\0:100644 100644 bbbb cccc M\0dir/m.rs\0:100755 000000 dddd {z} D\0gone.sh\0");
        let c = parse_raw(&out);
        assert_eq!(c.len(), 3);
        assert_eq!(c[0], raw("new file.txt", FileState::Absent, blob("aaaa")));
        assert_eq!(c[1], raw("dir/m.rs", blob("bbbb"), blob("cccc")));
        assert_eq!(c[2], raw("gone.sh", FileState::Blob { oid: "dddd".into(), mode: "100755".into() }, FileState::Absent));
    }
}
