//! Confinement of the file tools to the workspace. A path is checked lexically (no `..` out, no
//! absolute path elsewhere, no `~`, no Windows forms, no NUL), then the file is opened without
//! following a final symlink, and the path of what was actually opened is read back from the
//! kernel and checked again. Checking the opened file, not the name, defeats a link swapped
//! between the check and the use. Files with more than one hard link are refused, since the
//! other name may live outside.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};

#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
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
}

impl Workspace {
    /// The root must exist; it is canonicalised once so later checks compare real paths.
    pub fn new(root: &Path) -> io::Result<Workspace> {
        let root = root.canonicalize()?;
        if !root.is_dir() {
            return Err(io::Error::new(io::ErrorKind::NotADirectory, format!("{} is not a folder", root.display())));
        }
        Ok(Workspace { root })
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
        if meta.is_file() && meta.nlink() > 1 {
            return Err(PathError::HardLink(raw.to_string()).into());
        }
        Ok(())
    }

    /// Opens an existing file for reading, confined.
    pub fn open_read(&self, raw: &str) -> Result<(PathBuf, File), ConfinedError> {
        let path = self.follow_inside(self.resolve(raw)?, raw)?;
        let file = OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW).open(&path).map_err(|e| link_error(e, raw))?;
        self.verify_opened(&file, raw)?;
        Ok((path, file))
    }

    /// Opens (creating parents and the file as needed) a file for writing, truncated, confined.
    pub fn open_write(&self, raw: &str) -> Result<(PathBuf, File, bool), ConfinedError> {
        let path = self.resolve(raw)?;
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
            // The folders just made (or found) must still be inside.
            let real = parent.canonicalize()?;
            if !real.starts_with(&self.root) {
                return Err(PathError::LinkOutside(raw.to_string()).into());
            }
        }
        let path = self.follow_inside(path, raw)?;
        let existed = path.symlink_metadata().is_ok();
        // Not truncating before the check: a swapped link must not destroy the file it points to.
        let file = OpenOptions::new().write(true).create(true).truncate(false).custom_flags(libc::O_NOFOLLOW).open(&path).map_err(|e| link_error(e, raw))?;
        self.verify_opened(&file, raw)?;
        file.set_len(0)?;
        Ok((path, file, !existed))
    }
}

impl Workspace {
    /// A final symlink is followed only when it points inside; its target is then opened with
    /// O_NOFOLLOW, and what was opened is verified again after opening.
    fn follow_inside(&self, path: PathBuf, raw: &str) -> Result<PathBuf, ConfinedError> {
        match path.symlink_metadata() {
            Ok(m) if m.file_type().is_symlink() => {
                let real = path.canonicalize().map_err(|_| PathError::LinkOutside(raw.to_string()))?;
                if real.starts_with(&self.root) {
                    Ok(real)
                } else {
                    Err(PathError::LinkOutside(raw.to_string()).into())
                }
            }
            _ => Ok(path),
        }
    }
}

fn link_error(e: io::Error, raw: &str) -> ConfinedError {
    // O_NOFOLLOW on a symlink fails with ELOOP.
    if e.raw_os_error() == Some(libc::ELOOP) {
        ConfinedError::Path(PathError::LinkOutside(raw.to_string()))
    } else {
        ConfinedError::Io(e)
    }
}

fn opened_path(file: &File) -> io::Result<PathBuf> {
    use std::os::fd::AsRawFd;
    std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd()))
}

#[derive(Debug, thiserror::Error)]
pub enum ConfinedError {
    #[error(transparent)]
    Path(#[from] PathError),
    #[error(transparent)]
    Io(#[from] io::Error),
}
