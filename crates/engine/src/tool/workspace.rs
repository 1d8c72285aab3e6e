//! Confinement of the file tools to the workspace. A path is checked lexically (no `..` out, no
//! absolute path elsewhere, no `~`, no Windows forms, no NUL); then every open and every new
//! folder is resolved beneath the workspace by the kernel at open time ([`super::beneath`]), so a
//! link swapped in between cannot lead outside; and the path of what was opened is read back and
//! checked once more. Files with more than one hard link are refused, since the other name may
//! live outside.

use std::fs::File;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;

use super::beneath::Beneath;

#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
    beneath: Arc<Beneath>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error("the path contains a NUL byte")]
    Nul,
    #[error("`~` paths are not allowed; use a path relative to the workspace")]
    Home,
    #[error("Windows-style paths are not allowed here; use a path relative to the workspace with `/`")]
    Windows,
    #[error("`{0}` is outside the workspace")]
    Outside(String),
    #[error("`{0}` is a link that leads outside the workspace")]
    LinkOutside(String),
    #[error("`{0}` has other hard links, which may lead outside the workspace")]
    HardLink(String),
    #[error("the path is empty")]
    Empty,
    #[error("`{0}` is not a regular file but a named pipe, a socket or a device: it cannot be read or written as a file")]
    NotAFile(String),
    /// Git runs what its folder says (`core.fsmonitor`, hooks) on its next call, Finishline's
    /// own included: a write there would be a command run without the command permission.
    #[error("`{0}` is in git's own folder (.git), which only git may change")]
    GitFolder(String),
}

impl Workspace {
    /// The root must exist; it is canonicalised once so later checks compare real paths.
    pub fn new(root: &Path) -> io::Result<Workspace> {
        let root = root.canonicalize()?;
        if !root.is_dir() {
            return Err(io::Error::new(io::ErrorKind::NotADirectory, format!("{} is not a folder", root.display())));
        }
        let beneath = Arc::new(Beneath::new(&root)?);
        Ok(Workspace { root, beneath })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Resolves what the model wrote to a path inside the workspace, lexically.
    pub fn resolve(&self, raw: &str) -> Result<PathBuf, PathError> {
        if raw.contains('\0') {
            return Err(PathError::Nul);
        }
        let raw = raw.trim();
        if raw.is_empty() {
            return Err(PathError::Empty);
        }
        if raw == "~" || raw.starts_with("~/") || raw.starts_with('~') {
            return Err(PathError::Home);
        }
        let b = raw.as_bytes();
        if raw.contains('\\') || (b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':') {
            return Err(PathError::Windows);
        }
        let p = Path::new(raw);
        let rel: PathBuf = if p.is_absolute() {
            match p.strip_prefix(&self.root) {
                Ok(r) => r.to_path_buf(),
                Err(_) => return Err(PathError::Outside(raw.to_string())),
            }
        } else {
            p.to_path_buf()
        };
        let mut out = self.root.clone();
        let mut depth = 0usize;
        for c in rel.components() {
            match c {
                Component::Normal(n) => {
                    out.push(n);
                    depth += 1;
                }
                Component::CurDir => {}
                Component::ParentDir => {
                    if depth == 0 {
                        return Err(PathError::Outside(raw.to_string()));
                    }
                    out.pop();
                    depth -= 1;
                }
                Component::RootDir | Component::Prefix(_) => return Err(PathError::Outside(raw.to_string())),
            }
        }
        // Every existing ancestor must really be inside (a symlinked folder may point out).
        let mut probe = out.clone();
        loop {
            if let Ok(real) = probe.canonicalize() {
                if !real.starts_with(&self.root) {
                    return Err(PathError::LinkOutside(raw.to_string()));
                }
                break;
            }
            if !probe.pop() {
                break;
            }
        }
        Ok(out)
    }

    /// The path relative to the root, for messages and diffs.
    pub fn relative(&self, p: &Path) -> String {
        p.strip_prefix(&self.root).unwrap_or(p).to_string_lossy().into_owned()
    }

    fn verify_opened(&self, file: &File, raw: &str) -> Result<(), ConfinedError> {
        let real = opened_path(file)?;
        if !real.starts_with(&self.root) {
            return Err(PathError::LinkOutside(raw.to_string()).into());
        }
        let meta = file.metadata()?;
        if !meta.is_file() && !meta.is_dir() {
            return Err(PathError::NotAFile(raw.to_string()).into());
        }
        if meta.is_file() && meta.nlink() > 1 {
            return Err(PathError::HardLink(raw.to_string()).into());
        }
        Ok(())
    }

    /// Opens an existing file for reading, confined.
    pub fn open_read(&self, raw: &str) -> Result<(PathBuf, File), ConfinedError> {
        let path = self.resolve(raw)?;
        let file = self.open_checked(&self.rel(&path), raw, OFlags::RDONLY)?;
        Ok((path, file))
    }

    /// Opens (creating parents and the file as needed) a file for writing, confined; its contents
    /// are then replaced with [`replace_contents`].
    /// Never in a `.git` folder (or over a worktree's `.git` file), at any depth: a nested
    /// repository's is as live as the workspace's. Returns whether the file was created.
    pub fn open_write(&self, raw: &str) -> Result<(PathBuf, File, bool), ConfinedError> {
        let path = self.resolve(raw)?;
        let mut rel = self.rel(&path);
        if self.in_git_folder(&rel) {
            return Err(PathError::GitFolder(raw.to_string()).into());
        }
        let (Some(parent), Some(name)) = (rel.parent().map(Path::to_path_buf), rel.file_name().map(|n| n.to_os_string())) else {
            return Err(PathError::Empty.into());
        };
        match self.beneath.create_dirs(&parent) {
            Ok(()) => {}
            // A folder reached through an absolute link: go by its real path if that is inside.
            Err(Errno::XDEV) | Err(Errno::LOOP) => {
                let real = self.inside_real_path(&parent, raw)?;
                self.beneath.create_dirs(&real).map_err(|e| errno_error(e, raw))?;
                rel = real.join(name);
            }
            Err(e) => return Err(errno_error(e, raw)),
        }
        // Exclusive create first, so "created" is true only when this call made the file, and a
        // name that is a link is never created through.
        let (file, created) = match self.beneath.open(&rel, OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL, Mode::from_raw_mode(0o666)) {
            Ok(f) => {
                self.verify_opened(&f, raw)?;
                (f, true)
            }
            // Not truncating before the check: a swapped link must not destroy the file it points to.
            Err(Errno::EXIST) => (self.open_checked(&rel, raw, OFlags::WRONLY)?, false),
            Err(e) => return Err(errno_error(e, raw)),
        };
        // Not emptied here: `replace_contents` empties it once the new contents are sure to fit.
        Ok((path, file, created))
    }

    /// Whether `rel` names a `.git`, or leads into one through a link inside the workspace (what
    /// exists of it, resolved: a repository may hold a link to its own `.git`).
    fn in_git_folder(&self, rel: &Path) -> bool {
        let named = |p: &Path| p.components().any(|c| c.as_os_str().eq_ignore_ascii_case(".git"));
        if named(rel) {
            return true;
        }
        let mut probe = self.root.join(rel);
        loop {
            if let Ok(real) = probe.canonicalize() {
                return real.strip_prefix(&self.root).is_ok_and(named);
            }
            if !probe.pop() {
                return false;
            }
        }
    }

    fn rel(&self, path: &Path) -> PathBuf {
        path.strip_prefix(&self.root).map(Path::to_path_buf).unwrap_or_default()
    }

    /// Opens beneath the workspace what is checked to be a file (or a folder) inside it. First as
    /// a handle that reads and writes nothing (`O_PATH`): a named pipe or a device is never opened
    /// itself, since opening a pipe wakes a program waiting at its other end (and closing it
    /// then ends that program's stream), and a device may act on being opened. What passes is
    /// opened for `flags` through that handle, so it is the very file checked.
    fn open_checked(&self, rel: &Path, raw: &str, flags: OFlags) -> Result<File, ConfinedError> {
        let handle = self.open_beneath(rel, raw, OFlags::PATH)?;
        self.verify_opened(&handle, raw)?;
        let file = rustix::fs::open(fd_path(&handle), flags | OFlags::CLOEXEC, Mode::empty()).map_err(io::Error::from)?;
        Ok(File::from(file))
    }

    /// Opens beneath the workspace. A link written with an absolute target that is inside (the
    /// kernel refuses absolute links beneath a folder) is followed by its real path, which is
    /// then opened beneath again.
    fn open_beneath(&self, rel: &Path, raw: &str, flags: OFlags) -> Result<File, ConfinedError> {
        match self.beneath.open(rel, flags, Mode::empty()) {
            Ok(f) => Ok(f),
            Err(Errno::XDEV) | Err(Errno::LOOP) => {
                let real = self.inside_real_path(rel, raw)?;
                self.beneath.open(&real, flags, Mode::empty()).map_err(|e| errno_error(e, raw))
            }
            Err(e) => Err(errno_error(e, raw)),
        }
    }

    /// The real path of `rel`, relative to the workspace, if it exists and is inside.
    fn inside_real_path(&self, rel: &Path, raw: &str) -> Result<PathBuf, ConfinedError> {
        let real = self.root.join(rel).canonicalize().map_err(|_| PathError::LinkOutside(raw.to_string()))?;
        real.strip_prefix(&self.root).map(Path::to_path_buf).map_err(|_| PathError::LinkOutside(raw.to_string()).into())
    }
}

/// A step out of the workspace (`EXDEV` beneath, `ELOOP` on a refused link) is a link outside;
/// anything else is the file system's own error.
fn errno_error(e: Errno, raw: &str) -> ConfinedError {
    if e == Errno::XDEV || e == Errno::LOOP {
        ConfinedError::Path(PathError::LinkOutside(raw.to_string()))
    } else {
        ConfinedError::Io(e.into())
    }
}

/// The kernel's name for an open file: reading it as a link gives the file's path; opening it
/// opens that same file, whatever its path has become since.
fn fd_path(file: &File) -> String {
    use std::os::fd::AsRawFd;
    format!("/proc/self/fd/{}", file.as_raw_fd())
}

fn opened_path(file: &File) -> io::Result<PathBuf> {
    std::fs::read_link(fd_path(file))
}

#[derive(Debug, thiserror::Error)]
pub enum ConfinedError {
    #[error(transparent)]
    Path(#[from] PathError),
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// Writes `bytes` as the whole of a file `open_write` opened, the room for them taken first: a
/// disk that cannot take them (full, over quota or the file size limit) refuses before a byte of
/// the file is touched, and the file is left as it was. Emptying it first, then writing, lost the
/// person's file to a full disk, unrecoverably where Finishline does not record it (an ignored
/// `.env`). A filesystem that cannot reserve room is written as before.
pub fn replace_contents(file: &mut File, bytes: &[u8]) -> io::Result<()> {
    use std::io::{Seek, Write};
    let (len, was) = (bytes.len() as u64, file.metadata()?.len());
    if len > was {
        match rustix::fs::fallocate(&*file, rustix::fs::FallocateFlags::empty(), 0, len) {
            Ok(()) => {}
            Err(Errno::OPNOTSUPP) => {}
            Err(e) => {
                // Some filesystems extend the file as far as they got: back to its own length.
                let _ = file.set_len(was);
                let e = io::Error::from(e);
                return Err(io::Error::new(e.kind(), format!("no room for it ({e}): nothing was written, and the file is left as it was")));
            }
        }
    }
    file.seek(io::SeekFrom::Start(0))?;
    file.write_all(bytes)?;
    file.set_len(len)
}
