//! An exclusive lock on a folder Finishline writes with git (a checkpoint store, a session's
//! landing), shared by every Finishline process: an advisory `flock` on a file in it. The kernel
//! drops it when the holder dies, so a crash never leaves it held. The git processes started
//! while it is held inherit it, so it is held for as long as any of them lives: a git that
//! outlives a killed Finishline still owns its `index.lock`, and nobody deletes that lock under it.

use std::cell::RefCell;
use std::fs::File;
use std::os::fd::{AsRawFd, RawFd};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

thread_local! {
    /// The locks this thread holds, innermost last, for git processes it starts to inherit.
    static HELD: RefCell<Vec<(PathBuf, RawFd)>> = const { RefCell::new(Vec::new()) };
}

/// A lock file that cannot be made or opened, named: "Permission denied" alone left the person
/// to guess which folder (a data folder another user owns, a read-only one).
fn unopenable(file: &Path, e: std::io::Error) -> Error {
    let folder = file.parent().map_or_else(|| file.display().to_string(), |p| p.display().to_string());
    let said = e.to_string();
    let said = said.split(" (os error").next().unwrap_or_default();
    Error::Io(std::io::Error::new(
        e.kind(),
        format!("{folder} cannot be written to take the lock {}: {said}; check that folder's owner and permissions", file.display()),
    ))
}

/// `attempt` until it takes what it tries for, or `wait` has passed; then `None`. Always tried
/// once, however short the wait.
fn within<T>(wait: std::time::Duration, mut attempt: impl FnMut() -> Result<Option<T>>) -> Result<Option<T>> {
    let until = std::time::Instant::now() + wait;
    loop {
        let taken = attempt()?;
        if taken.is_some() || std::time::Instant::now() >= until {
            return Ok(taken);
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// The file of a folder's [`WindowLock`]: one per folder under the data folder, named by a hash
/// of its real path.
fn window_file(data_dir: &Path, real: &Path) -> PathBuf {
    let name = format!("window-{:016x}.lock", crate::stable_hash::fnv1a(real.to_string_lossy().as_bytes()));
    data_dir.join("locks").join(name)
}

/// The lock a task working in place holds on its folder while its tools may change files (a
/// *window*), and a revert holds while it puts files back: what changes there while it is held
/// is the holder's. A window in a folder sees every file inside it, so folders inside one
/// another are one place: the holder has its folder's file to itself and shares the file of
/// each folder around it. Tasks in sibling folders go on together; one in the folder around
/// them waits for both, and they for it. Across processes (`flock`); the kernel lets go of it
/// when the holder dies.
pub struct WindowLock {
    _files: Vec<File>,
}

impl WindowLock {
    /// The lock on `folder` if no holder in it, inside it or around it has one now.
    pub fn try_take(data_dir: &Path, folder: &Path) -> Result<Option<WindowLock>> {
        use rustix::fs::FlockOperation::{NonBlockingLockExclusive, NonBlockingLockShared};
        let real = folder.canonicalize().unwrap_or_else(|_| folder.to_path_buf());
        let mut around: Vec<&Path> = real.ancestors().skip(1).collect();
        // Outermost first, the same order for every holder.
        around.reverse();
        let wanted = around.into_iter().map(|a| (a, NonBlockingLockShared)).chain(std::iter::once((real.as_path(), NonBlockingLockExclusive)));
        std::fs::create_dir_all(data_dir.join("locks")).map_err(|e| unopenable(&data_dir.join("locks").join("window.lock"), e))?;
        let mut files = Vec::new();
        for (place, how) in wanted {
            let path = window_file(data_dir, place);
            // A lock file this user cannot write (left by a run as another user) still locks.
            let f = match std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(&path) {
                Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => File::open(&path).map_err(|e| unopenable(&path, e))?,
                opened => opened.map_err(|e| unopenable(&path, e))?,
            };
            match rustix::fs::flock(&f, how) {
                Ok(()) => files.push(f),
                // Those taken so far are let go as `files` is dropped.
                Err(rustix::io::Errno::WOULDBLOCK) => return Ok(None),
                Err(e) => return Err(Error::Internal(format!("could not lock {}: {e}", path.display()))),
            }
        }
        Ok(Some(WindowLock { _files: files }))
    }

    /// [`Self::try_take`], trying again for up to `wait`.
    pub fn try_take_within(data_dir: &Path, folder: &Path, wait: std::time::Duration) -> Result<Option<WindowLock>> {
        within(wait, || Self::try_take(data_dir, folder))
    }
}

pub struct FolderLock {
    /// `None` when this thread already held the lock: the outer holder lets it go.
    file: Option<File>,
}

impl FolderLock {
    /// Waits for the lock on `file` (created if missing). Taking it again on a thread that holds
    /// it is a no-op: an operation under the lock may call another that takes it.
    pub fn acquire(file: &Path) -> Result<FolderLock> {
        Self::take(file, rustix::fs::FlockOperation::LockExclusive)?.ok_or_else(|| Error::Internal(format!("could not lock {}", file.display())))
    }

    /// The lock on `file` if nobody else holds it now; `None` when another holder has it (a
    /// process at work on what the lock guards).
    pub fn try_acquire(file: &Path) -> Result<Option<FolderLock>> {
        Self::take(file, rustix::fs::FlockOperation::NonBlockingLockExclusive)
    }

    /// [`Self::try_acquire`], trying again for up to `wait` before saying another holder has it.
    /// A process another thread of this one is starting holds a copy of every open descriptor
    /// from its fork until it runs its program, so a lock let go a moment ago can look held for
    /// that moment (seen on a loaded machine). A caller that waited reads again what the holder
    /// may have changed meanwhile.
    pub fn try_acquire_within(file: &Path, wait: std::time::Duration) -> Result<Option<FolderLock>> {
        within(wait, || Self::try_acquire(file))
    }

    /// [`Self::try_acquire_within`] for a lock in a folder that is someone else's (a
    /// repository's git directory): gone, it is not made again, and the error says so.
    pub fn try_acquire_in_place_within(file: &Path, wait: std::time::Duration) -> Result<Option<FolderLock>> {
        within(wait, || Self::take_in(file, rustix::fs::FlockOperation::NonBlockingLockExclusive, false))
    }

    fn take(file: &Path, how: rustix::fs::FlockOperation) -> Result<Option<FolderLock>> {
        Self::take_in(file, how, true)
    }

    fn take_in(file: &Path, how: rustix::fs::FlockOperation, make_folder: bool) -> Result<Option<FolderLock>> {
        if HELD.with(|h| h.borrow().iter().any(|(p, _)| p == file)) {
            return Ok(Some(FolderLock { file: None }));
        }
        if let Some(dir) = file.parent().filter(|_| make_folder) {
            std::fs::create_dir_all(dir).map_err(|e| unopenable(file, e))?;
        }
        let f = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(file).map_err(|e| unopenable(file, e))?;
        match rustix::fs::flock(&f, how) {
            Ok(()) => {}
            Err(rustix::io::Errno::WOULDBLOCK) => return Ok(None),
            Err(e) => return Err(Error::Internal(format!("could not lock {}: {e}", file.display()))),
        }
        HELD.with(|h| h.borrow_mut().push((file.to_path_buf(), f.as_raw_fd())));
        Ok(Some(FolderLock { file: Some(f) }))
    }

    /// This thread's descriptor of the lock on `file`, if it holds it.
    pub fn held_on(file: &Path) -> Option<RawFd> {
        HELD.with(|h| h.borrow().iter().rev().find(|(p, _)| p == file).map(|(_, fd)| *fd))
    }
}

impl Drop for FolderLock {
    fn drop(&mut self) {
        if let Some(f) = &self.file {
            let fd = f.as_raw_fd();
            HELD.with(|h| h.borrow_mut().retain(|(_, held)| *held != fd));
            // Closing the file lets go; an explicit unlock would also take the lock from a git
            // process that inherited it (a lock belongs to the open file, shared with children).
        }
    }
}

/// Lets `cmd`'s process inherit the lock on `file` when this thread holds it (descriptors are
/// closed on exec by default; only this child keeps this one). Only that lock: another one held
/// here (a decision's) would be kept by whatever the process leaves running.
pub fn inherit_held(cmd: &mut std::process::Command, file: &Path) {
    use std::os::unix::process::CommandExt;
    let Some(fd) = FolderLock::held_on(file) else { return };
    // SAFETY: between fork and exec only async-signal-safe calls are allowed; fcntl is one.
    unsafe {
        cmd.pre_exec(move || {
            let flags = libc::fcntl(fd, libc::F_GETFD);
            if flags >= 0 {
                libc::fcntl(fd, libc::F_SETFD, flags & !libc::FD_CLOEXEC);
            }
            Ok(())
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lock_that_cannot_be_made_names_its_folder() {
        let dir = tempfile::tempdir().unwrap();
        // A file where the locks folder should be: nothing can be made in it, root or not.
        std::fs::write(dir.path().join("locks"), "").unwrap();
        let why = FolderLock::acquire(&dir.path().join("locks").join("ses_1.lock")).err().expect("refused").to_string();
        assert!(why.contains(&dir.path().join("locks").display().to_string()) && why.contains("check that folder"), "{why}");
    }

    #[test]
    fn a_window_excludes_one_in_the_same_folder_or_inside_or_around_it_and_never_a_sibling() {
        let data = tempfile::tempdir().unwrap();
        let top = tempfile::tempdir().unwrap();
        let (a, b) = (top.path().join("a"), top.path().join("b"));
        std::fs::create_dir_all(a.join("deep")).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        let take = |folder: &Path| WindowLock::try_take(data.path(), folder).unwrap();
        // Given a moment where it must be free: a process another test starts meanwhile holds a
        // copy of a lock let go just before, until it runs its program.
        let free = |folder: &Path| WindowLock::try_take_within(data.path(), folder, std::time::Duration::from_secs(2)).unwrap();
        let in_a = take(&a).expect("free at first");
        assert!(take(&a).is_none(), "the same folder waits");
        assert!(take(&a.join("deep")).is_none(), "a folder inside it waits");
        assert!(take(top.path()).is_none(), "the folder around it waits");
        let in_b = take(&b).expect("a sibling goes on");
        drop(in_a);
        assert!(take(top.path()).is_none(), "around waits for every folder inside");
        drop(in_b);
        let deep = free(&a.join("deep")).expect("free once both let go");
        assert!(take(&a).is_none(), "a window inside makes the folder around it wait");
        drop(deep);
        assert!(free(top.path()).is_some(), "and nothing is left held");
    }

    #[test]
    fn a_try_while_another_holds_it_gets_nothing_and_gets_it_once_let_go() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.lock");
        let first = FolderLock::acquire(&path).unwrap();
        let p2 = path.clone();
        assert!(std::thread::spawn(move || FolderLock::try_acquire(&p2).unwrap().is_none()).join().unwrap());
        drop(first);
        let p2 = path.clone();
        assert!(std::thread::spawn(move || FolderLock::try_acquire_within(&p2, std::time::Duration::from_secs(2)).unwrap().is_some()).join().unwrap());
    }

    #[test]
    fn a_second_holder_waits_until_the_first_lets_go() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lock");
        let first = FolderLock::acquire(&path).unwrap();
        let p2 = path.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        let t = std::thread::spawn(move || {
            let _second = FolderLock::acquire(&p2).unwrap();
            tx.send(()).unwrap();
        });
        assert!(rx.recv_timeout(std::time::Duration::from_millis(200)).is_err(), "the second waits while the first holds it");
        drop(first);
        rx.recv_timeout(std::time::Duration::from_secs(5)).expect("and gets it once the first lets go");
        t.join().unwrap();
    }

    #[test]
    fn taking_it_again_on_the_same_thread_does_not_wait_for_itself() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lock");
        let outer = FolderLock::acquire(&path).unwrap();
        let inner = FolderLock::acquire(&path).unwrap();
        drop(inner);
        assert!(FolderLock::held_on(&path).is_some(), "the outer holder still holds it");
        drop(outer);
        assert!(FolderLock::held_on(&path).is_none());
    }

    #[test]
    fn a_child_started_under_the_lock_keeps_it_after_the_parent_lets_go() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lock");
        let lock = FolderLock::acquire(&path).unwrap();
        let mut cmd = std::process::Command::new("sleep");
        cmd.arg("1");
        inherit_held(&mut cmd, &path);
        let mut child = cmd.spawn().unwrap();
        drop(lock);
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        assert!(rustix::fs::flock(&f, rustix::fs::FlockOperation::NonBlockingLockExclusive).is_err(), "the child still holds it");
        child.wait().unwrap();
        assert!(rustix::fs::flock(&f, rustix::fs::FlockOperation::NonBlockingLockExclusive).is_ok(), "free once the child is gone");
    }
}
