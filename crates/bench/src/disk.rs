//! Which filesystem a measurement ran on, for the report. Creating tens of thousands of files
//! costs very different amounts on an ext4 with a journal (what desktop installers make) and one
//! without: without a journal, ext4 looks up the inode table block of every free inode it
//! considers for a new file, to skip recently deleted ones (`fs/ext4/ialloc.c`,
//! `check_recently_deleted`), and three fills at once pay that three times (benchmarks §10).

use std::path::Path;

/// "ext4 with a journal (/dev/loop0)", "ext4 without a journal (/dev/vda)", "tmpfs (tmpfs)", or
/// "unknown" where /proc does not say.
pub fn describe(path: &Path) -> String {
    let path = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    let Ok(mounts) = std::fs::read_to_string("/proc/self/mountinfo") else { return "unknown".into() };
    // Fields: id parent major:minor root mount-point options [optional…] - fstype source super-options
    let mount = mounts
        .lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let point = left.split_whitespace().nth(4)?;
            let mut right = right.split_whitespace();
            Some((point.to_string(), right.next()?.to_string(), right.next()?.to_string()))
        })
        .filter(|(point, _, _)| path.starts_with(point))
        .max_by_key(|(point, _, _)| point.len());
    let Some((_, fstype, source)) = mount else { return "unknown".into() };
    if fstype != "ext4" {
        return format!("{fstype} ({source})");
    }
    let device = Path::new(&source).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let journaled = std::fs::read_dir("/proc/fs/jbd2")
        .map(|entries| entries.flatten().any(|e| e.file_name().to_string_lossy().starts_with(&format!("{device}-"))))
        .unwrap_or(false);
    format!("ext4 {} a journal ({source})", if journaled { "with" } else { "without" })
}

/// Bytes this process has sent to storage so far (`write_bytes` in /proc/self/io: counted as pages
/// are dirtied, so rewriting a page still waiting for the disk is not counted twice; 0 where /proc
/// does not say).
pub fn written_by_this_process() -> u64 {
    let io = std::fs::read_to_string("/proc/self/io").unwrap_or_default();
    io.lines().find_map(|l| l.strip_prefix("write_bytes: ")?.trim().parse().ok()).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_is_described_by_the_deepest_mount_holding_it() {
        assert_eq!(describe(Path::new("/proc/self")), "proc (proc)");
        let root = describe(Path::new("/"));
        assert!(root != "unknown" && !root.starts_with("proc"), "{root}");
    }
}
