//! Opening files and making folders beneath the workspace *at open time*. Every open starts from a
//! handle on the workspace folder and asks the kernel to refuse any step that leaves it
//! (`openat2` with `RESOLVE_BENEATH`), so a folder swapped for a link between a check and the use
//! cannot send a read, a write or a new folder outside. Kernels without `openat2` (before 5.6)
//! get a walk one component at a time with `O_NOFOLLOW`, which refuses links altogether.

use std::fs::File;
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{fstat, mkdirat, openat, openat2, FileType, Mode, OFlags, ResolveFlags, CWD};
use rustix::io::Errno;

#[derive(Debug)]
pub struct Beneath {
    root: OwnedFd,
}

/// Only plain names: the callers' paths are already lexically inside (no `..`, not absolute).
fn names(rel: &Path) -> Vec<&std::ffi::OsStr> {
    rel.components().filter_map(|c| if let Component::Normal(n) = c { Some(n) } else { None }).collect()
}

impl Beneath {
    pub fn new(root: &Path) -> std::io::Result<Beneath> {
        Ok(Beneath { root: openat(CWD, root, OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())? })
    }

    /// Opens `rel` beneath the workspace. Links inside are followed while every step stays
    /// inside; a step out fails with `EXDEV` (`ELOOP` on the fallback walk).
    pub fn open(&self, rel: &Path, flags: OFlags, mode: Mode) -> Result<File, Errno> {
        let flags = flags | OFlags::CLOEXEC;
        let target: &Path = if rel.as_os_str().is_empty() { Path::new(".") } else { rel };
        match openat2(&self.root, target, flags, mode, ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS) {
            Err(Errno::NOSYS) => self.walk(rel, flags, mode),
            r => r.map(File::from),
        }
    }

    /// Without `openat2`: one name at a time from the workspace handle, following no link.
    fn walk(&self, rel: &Path, flags: OFlags, mode: Mode) -> Result<File, Errno> {
        let parts = names(rel);
        let Some((last, dirs)) = parts.split_last() else {
            return openat(&self.root, ".", flags, mode).map(File::from);
        };
        let mut dir: Option<OwnedFd> = None;
        for name in dirs {
            let next = match &dir {
                None => openat(&self.root, *name, OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC, Mode::empty())?,
                Some(d) => openat(d, *name, OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC, Mode::empty())?,
            };
            dir = Some(next);
        }
        let file = match &dir {
            None => openat(&self.root, *last, flags | OFlags::NOFOLLOW, mode),
            Some(d) => openat(d, *last, flags | OFlags::NOFOLLOW, mode),
        }
        .map(File::from)?;
        // A look (`O_PATH`) with `O_NOFOLLOW` opens a link itself, where any other open refuses it
        // (`ELOOP`): refused the same, the caller goes by the link's real path, as for any open.
        if flags.contains(OFlags::PATH) && FileType::from_raw_mode(fstat(&file)?.st_mode) == FileType::Symlink {
            return Err(Errno::LOOP);
        }
        Ok(file)
    }

    /// Makes the folders of `rel` that are missing. Each is made by name inside a folder that was
    /// itself opened beneath the workspace, so no folder is ever made anywhere else.
    pub fn create_dirs(&self, rel: &Path) -> Result<(), Errno> {
        let mut prefix = PathBuf::new();
        for name in names(rel) {
            let parent = self.open(&prefix, OFlags::PATH | OFlags::DIRECTORY, Mode::empty())?;
            prefix.push(name);
            match self.open(&prefix, OFlags::PATH | OFlags::DIRECTORY, Mode::empty()) {
                Ok(_) => continue,
                Err(Errno::NOENT) => match mkdirat(&parent, name, Mode::from_raw_mode(0o777)) {
                    Ok(()) | Err(Errno::EXIST) => {}
                    Err(e) => return Err(e),
                },
                Err(e) => return Err(e),
            }
            // What was made (or raced in) must open as a folder beneath, or the write stops here.
            self.open(&prefix, OFlags::PATH | OFlags::DIRECTORY, Mode::empty())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Kernels before 5.6 have no `openat2`; the walk stands in. A file tool looks at a path
    /// (`O_PATH`) before it opens it, so a link must come back from a look as from an open.
    #[test]
    fn the_walk_refuses_a_link_to_a_look_as_to_an_open_so_it_is_followed_by_its_real_path() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("real.txt"), "x").unwrap();
        std::os::unix::fs::symlink("real.txt", dir.path().join("link.txt")).unwrap();
        let beneath = Beneath::new(dir.path()).unwrap();
        for flags in [OFlags::RDONLY, OFlags::PATH] {
            assert_eq!(beneath.walk(Path::new("link.txt"), flags, Mode::empty()).err(), Some(Errno::LOOP), "{flags:?}");
        }
        assert!(beneath.walk(Path::new("real.txt"), OFlags::PATH, Mode::empty()).is_ok(), "a file is looked at as before");
    }
}
