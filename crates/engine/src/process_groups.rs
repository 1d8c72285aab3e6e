//! Every process Finishline starts that may start others (an ACP agent, an MCP server, a command
//! in an agent's terminal) runs as the leader of its own process group, and Finishline owns the
//! group: it is ended on cancel, on a step timeout, when the CLI gets SIGTERM or SIGHUP, when the
//! app quits, and, after a crash, at the next start.
//!
//! A process can leave its group (`setsid`, a daemon's double fork), so every process Finishline
//! starts also carries a mark in its environment, which everything it starts inherits: ending a
//! group also ends every process that carries the group's mark, wherever it went. Except a
//! terminal: a process on a terminal that is not Finishline's own, or one that hosts such a
//! process (a tmux server an agent started, whose panes the person then opens; an editor started
//! with `code .`, whose terminals they type in), is the person's to end.
//!
//! The next start finds what a crashed Finishline left running through a record kept in the data
//! folder: one small file per group, naming the group and when its leader started (and which
//! Finishline process owned it). A group is ended only when its owner is gone and its leader is
//! still the process that was recorded (same pid and same start time since the same boot), so a
//! pid the system has since given to another program is never signalled.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

/// One group's record on disk.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Record {
    pgid: u32,
    /// The leader's start time (clock ticks since boot, `/proc/PID/stat` field 22).
    leader_start: u64,
    owner_pid: u32,
    owner_start: u64,
    /// The boot it was recorded in: start times mean nothing across a reboot.
    boot_id: String,
    /// What it is, for the person reading the log ("Claude Code", "MCP server fs").
    what: String,
    /// The mark its processes carry (see [`mark`]); empty in a record from before marks.
    #[serde(default)]
    mark: String,
}

/// The groups this Finishline process owns, and where their records are kept.
#[derive(Debug)]
pub struct ProcessGroups {
    /// `<data>/processes`; `None`: kept in memory only (a quick Check, a test).
    dir: Option<PathBuf>,
    live: Mutex<HashMap<u32, Live>>,
}

#[derive(Debug)]
struct Live {
    leader_start: Option<u64>,
    mark: String,
}

/// A group Finishline started: ended (SIGKILL to the whole group) when this is dropped or
/// [`OwnedGroup::end`] is called, whichever comes first.
pub struct OwnedGroup {
    pgid: u32,
    groups: Arc<ProcessGroups>,
}

impl OwnedGroup {
    pub fn pgid(&self) -> u32 {
        self.pgid
    }

    /// Ends the whole group now: the leader and everything it started that stayed in its group.
    pub fn end(&self) {
        self.groups.end_group(self.pgid);
    }
}

impl Drop for OwnedGroup {
    fn drop(&mut self) {
        self.groups.end_group(self.pgid);
    }
}

/// What the start-up sweep found left behind by a Finishline process that is gone.
#[derive(Debug, Clone, PartialEq)]
pub struct LeftBehind {
    pub pgid: u32,
    pub what: String,
    /// It was still running and has been ended (else only its stale record was removed).
    pub ended: bool,
}

impl ProcessGroups {
    /// Groups recorded in `dir` (made when needed), so a later start can end them after a crash.
    pub fn recorded(dir: PathBuf) -> Arc<ProcessGroups> {
        Arc::new(ProcessGroups { dir: Some(dir), live: Mutex::new(HashMap::new()) })
    }

    /// The record's folder inside a data folder.
    pub fn in_data_dir(data: &Path) -> Arc<ProcessGroups> {
        Self::recorded(data.join("processes"))
    }

    /// Groups ended with this process but recorded nowhere.
    pub fn unrecorded() -> Arc<ProcessGroups> {
        Arc::new(ProcessGroups { dir: None, live: Mutex::new(HashMap::new()) })
    }

    fn live(&self) -> std::sync::MutexGuard<'_, HashMap<u32, Live>> {
        self.live.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes ownership of the group led by `pid` (started with `process_group(0)` and given `mark`
    /// by [`mark`]), recording it.
    pub fn own(self: &Arc<Self>, pid: u32, what: &str, mark: &str) -> OwnedGroup {
        let leader_start = proc_stat(pid).map(|s| s.start);
        self.live().insert(pid, Live { leader_start, mark: mark.to_string() });
        if let (Some(dir), Some(leader_start), Some(owner_start)) = (&self.dir, leader_start, proc_stat(std::process::id()).map(|s| s.start)) {
            let record = Record {
                pgid: pid,
                leader_start,
                owner_pid: std::process::id(),
                owner_start,
                boot_id: boot_id(),
                what: what.to_string(),
                mark: mark.to_string(),
            };
            // Without the record the group is still ended with this process; only a crash would
            // leave it behind, so a folder that cannot be written does not stop the work.
            // Written whole, then renamed into place: a sweep starting in another process
            // never reads half a record (and drops it as unreadable).
            let part = dir.join(format!("{pid}.json.part"));
            let _ = std::fs::create_dir_all(dir)
                .and_then(|_| std::fs::write(&part, serde_json::to_vec(&record).unwrap_or_default()))
                .and_then(|_| std::fs::rename(&part, dir.join(record_name(pid))));
        }
        OwnedGroup { pgid: pid, groups: self.clone() }
    }

    /// How many groups are live.
    pub fn count(&self) -> usize {
        self.live().len()
    }

    /// Ends every group this process owns (SIGTERM or SIGHUP of the CLI, the app quitting).
    pub fn end_all(&self) -> usize {
        let pgids: Vec<u32> = self.live().keys().copied().collect();
        for pgid in &pgids {
            self.end_group(*pgid);
        }
        pgids.len()
    }

    fn end_group(&self, pgid: u32) {
        let Some(live) = self.live().remove(&pgid) else { return };
        // The leader is Finishline's child, so its pid is not reused before Finishline reaps it;
        // once reaped, the group's id stays taken while any member lives. A leader that is alive
        // with another start time is someone else's process: leave it alone.
        let reused = matches!((proc_stat(pgid), live.leader_start), (Some(now), Some(then)) if now.start != then);
        if !reused {
            kill_group(pgid);
        }
        end_marked(&live.mark);
        if let Some(dir) = &self.dir {
            let _ = std::fs::remove_file(dir.join(record_name(pgid)));
        }
    }

    /// At start: ends the groups a Finishline process that is gone (crashed, killed) left
    /// running, as its records in `<data>/processes` say, and removes their records. Records of
    /// a Finishline process still running (the app while the CLI runs) are left alone.
    pub fn end_left_behind(data: &Path) -> Vec<LeftBehind> {
        let dir = data.join("processes");
        let Ok(entries) = std::fs::read_dir(&dir) else { return vec![] };
        let boot = boot_id();
        let mut found = Vec::new();
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_some_and(|e| e == "part") {
                // Being written by a live process, or left by one that died writing it.
                let stale = entry.metadata().and_then(|m| m.modified()).is_ok_and(|t| t.elapsed().is_ok_and(|age| age.as_secs() > 60));
                if stale {
                    let _ = std::fs::remove_file(&path);
                }
                continue;
            }
            let Some(record) = std::fs::read(&path).ok().and_then(|b| serde_json::from_slice::<Record>(&b).ok()) else {
                let _ = std::fs::remove_file(&path);
                continue;
            };
            if record.boot_id == boot && proc_stat(record.owner_pid).is_some_and(|s| s.start == record.owner_start) {
                continue; // its owner is alive and ends it itself
            }
            let same_boot = record.boot_id == boot;
            let ended_group = same_boot && left_running(&record) && kill_group(record.pgid);
            // What left the group is found by its mark, which no other program's process carries.
            let ended = (same_boot && end_marked(&record.mark) > 0) || ended_group;
            let _ = std::fs::remove_file(&path);
            found.push(LeftBehind { pgid: record.pgid, what: record.what, ended });
        }
        found
    }
}

/// Whether the recorded group still runs as recorded: its leader with the recorded start time,
/// or, the leader gone, members that started after it (a group's id is not given out again while
/// any member lives). A leader's pid that is alive with another start time was given to another
/// program: nothing is ended.
fn left_running(record: &Record) -> bool {
    match proc_stat(record.pgid) {
        Some(leader) => leader.start == record.leader_start,
        None => members(record.pgid).iter().any(|m| m.start >= record.leader_start),
    }
}

/// The environment variable that carries a group's mark.
pub const MARK_VAR: &str = "FINISHLINE_PROCESS_MARK";

/// Gives `cmd` a mark of its own, and returns it: everything the process starts inherits it (a
/// process that empties its environment on purpose is the one way out).
pub fn mark(cmd: &mut tokio::process::Command) -> String {
    let mark = uuid::Uuid::new_v4().simple().to_string();
    cmd.env(MARK_VAR, &mark);
    mark
}

/// Ends (SIGKILL) every process that carries `mark`, however it left its group, unless it is on
/// or hosts another terminal (see the top); returns how many. Each is held by a pidfd before its
/// environment is read again and it is signalled, so a pid the system gives to another program
/// meanwhile is never signalled.
pub fn end_marked(mark: &str) -> usize {
    if mark.is_empty() {
        return 0;
    }
    let wanted = format!("{MARK_VAR}={mark}");
    let me = std::process::id();
    let own_tty = proc_stat(me).map_or(0, |s| s.tty);
    let (mut ended, mut seen) = (std::collections::HashSet::new(), std::collections::HashSet::new());
    // A marked process may start another while it is being looked for: look again until a pass
    // finds nobody new.
    for _ in 0..5 {
        let all: Vec<(u32, ProcStat)> = pids().filter(|p| *p != me).filter_map(|p| proc_stat(p).map(|s| (p, s))).collect();
        let marked: Vec<u32> = all.iter().map(|(p, _)| *p).filter(|p| !seen.contains(p) && carries(*p, &wanted)).collect();
        if marked.is_empty() {
            break;
        }
        let terminals = on_other_terminals(&all, own_tty);
        for pid in marked {
            seen.insert(pid);
            if !terminals.contains(&pid) && signal_if_marked(pid, &wanted) {
                ended.insert(pid);
            }
        }
    }
    ended.len()
}

fn carries(pid: u32, wanted: &str) -> bool {
    std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|env| env.split(|b| *b == 0).any(|var| var == wanted.as_bytes()))
}

/// The processes on a terminal other than `own_tty` (Finishline's, 0 for none) and every process
/// above one of them: a person's terminal sessions and what hosts them.
fn on_other_terminals(all: &[(u32, ProcStat)], own_tty: i64) -> std::collections::HashSet<u32> {
    let parent: std::collections::HashMap<u32, u32> = all.iter().map(|(p, s)| (*p, s.ppid)).collect();
    let mut out = std::collections::HashSet::new();
    for (pid, _) in all.iter().filter(|(_, s)| s.tty != 0 && s.tty != own_tty) {
        let mut at = Some(*pid);
        while let Some(p) = at.filter(|p| *p > 1 && out.insert(*p)) {
            at = parent.get(&p).copied();
        }
    }
    out
}

fn pids() -> impl Iterator<Item = u32> {
    std::fs::read_dir("/proc").into_iter().flatten().flatten().filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()))
}

#[cfg(target_os = "linux")]
fn signal_if_marked(pid: u32, wanted: &str) -> bool {
    use rustix::process::{pidfd_open, pidfd_send_signal, Pid, PidfdFlags, Signal};
    let Some(fd) = Pid::from_raw(pid as i32).and_then(|p| pidfd_open(p, PidfdFlags::empty()).ok()) else { return false };
    // Read again through the pidfd's lifetime: the pid is this process's until it is reaped.
    carries(pid, wanted) && pidfd_send_signal(&fd, Signal::KILL).is_ok()
}

#[cfg(not(target_os = "linux"))]
fn signal_if_marked(_pid: u32, _wanted: &str) -> bool {
    false
}

fn members(pgid: u32) -> Vec<ProcStat> {
    pids().filter_map(proc_stat).filter(|s| s.pgrp == pgid).collect()
}

fn record_name(pgid: u32) -> String {
    format!("{pgid}.json")
}

fn kill_group(pgid: u32) -> bool {
    #[cfg(unix)]
    {
        pgid > 1 && unsafe { libc::killpg(pgid as i32, libc::SIGKILL) } == 0
    }
    #[cfg(not(unix))]
    {
        let _ = pgid;
        false
    }
}

/// What `/proc/PID/stat` says of a process that is alive (a zombie counts as gone).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProcStat {
    pub ppid: u32,
    pub pgrp: u32,
    /// Its controlling terminal's device number; 0 for none.
    pub tty: i64,
    pub start: u64,
}

/// A live process's group and start time; `None` when there is no such process or it is a zombie.
pub fn proc_stat(pid: u32) -> Option<ProcStat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&text)
}

/// Fields after the command name, which is in parentheses and may itself hold spaces or ')'.
fn parse_stat(text: &str) -> Option<ProcStat> {
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    if matches!(fields.first(), Some(&"Z") | Some(&"X") | Some(&"x")) {
        return None;
    }
    Some(ProcStat {
        ppid: fields.get(1)?.parse().ok()?,
        pgrp: fields.get(2)?.parse().ok()?,
        tty: fields.get(4)?.parse().ok()?,
        start: fields.get(19)?.parse().ok()?,
    })
}

fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id").map(|s| s.trim().to_string()).unwrap_or_default()
}

/// Whether any live process is in group `pgid` (the leader or what it left behind).
pub fn group_alive(pgid: u32) -> bool {
    !members(pgid).is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stat_line_is_read_past_a_command_name_with_spaces_and_parentheses() {
        let line = "4242 (node (agent) x) S 1 4242 4242 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 11 0 987654 100000 2000 0";
        assert_eq!(parse_stat(line), Some(ProcStat { ppid: 1, pgrp: 4242, tty: 0, start: 987654 }));
        let zombie = "4243 (sleep) Z 1 4242 4242 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 11 0 987655 0 0 0";
        assert_eq!(parse_stat(zombie), None, "a zombie is gone: only its exit status is left to collect");
    }

    #[tokio::test]
    async fn a_record_being_written_is_left_to_its_writer_and_a_whole_one_is_kept_while_its_owner_lives() {
        let data = tempfile::tempdir().unwrap();
        let groups = ProcessGroups::in_data_dir(data.path());
        let mut cmd = tokio::process::Command::new("sleep");
        cmd.arg("30").process_group(0);
        let m = mark(&mut cmd);
        let child = cmd.spawn().unwrap();
        let owned = groups.own(child.id().unwrap(), "sleep", &m);
        let dir = data.path().join("processes");
        std::fs::write(dir.join("99999.json.part"), "{\"pgid\": 999").unwrap();
        assert!(ProcessGroups::end_left_behind(data.path()).is_empty(), "this process owns its group: nothing is ended");
        assert!(dir.join("99999.json.part").exists(), "half a record is another process's to finish");
        assert!(dir.join(record_name(owned.pgid())).exists(), "the whole record stays while its owner lives");
        drop(owned);
        assert!(!dir.join(record_name(child.id().unwrap())).exists(), "ended, its record goes");
    }
}
