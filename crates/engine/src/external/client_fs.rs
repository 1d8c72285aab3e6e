//! The client's file system, offered to an external agent (`fs/read_text_file`,
//! `fs/write_text_file`): an agent that reads and writes through the client stays inside the
//! workspace, with the same confinement as the built-in agent's file tools (no `..`, no link
//! out of the folder). Agents with their own file tools (OpenCode) do not use it; Finishline's
//! checkpoints capture their changes either way.

use std::io::{Read, Write};
use std::path::Path;

use crate::tool::workspace::ConfinedError;
use crate::tool::Workspace;

/// The most one read returns, as for the built-in `read_file`.
const MAX_READ_BYTES: u64 = 10 * 1024 * 1024;

pub struct WorkspaceFiles {
    workspace: Workspace,
}

/// Why a read through the client failed: a file that is not there is ACP's "resource not found"
/// (an agent's write tool reads first and creates the file on that answer); anything else
/// (outside the workspace, unreadable) is refused.
#[derive(Debug, Clone, PartialEq)]
pub enum ReadError {
    NotFound(String),
    Refused(String),
}

impl WorkspaceFiles {
    pub fn new(workspace: Workspace) -> Self {
        WorkspaceFiles { workspace }
    }

    /// The file's text, or lines `line..line+limit` of it (1-based), as ACP asks.
    pub fn read(&self, path: &Path, line: Option<u32>, limit: Option<u32>) -> Result<String, ReadError> {
        let raw = path.to_string_lossy();
        let (_, file) = self.workspace.open_read(&raw).map_err(|e| match e {
            ConfinedError::Io(io) if io.kind() == std::io::ErrorKind::NotFound => ReadError::NotFound(format!("{raw}: {io}")),
            other => ReadError::Refused(format!("{raw}: {other}")),
        })?;
        let mut bytes = Vec::new();
        file.take(MAX_READ_BYTES).read_to_end(&mut bytes).map_err(|e| ReadError::Refused(format!("{raw}: {e}")))?;
        let text = String::from_utf8_lossy(&bytes).into_owned();
        if line.is_none() && limit.is_none() {
            return Ok(text);
        }
        let skip = line.unwrap_or(1).saturating_sub(1) as usize;
        let take = limit.map(|l| l as usize).unwrap_or(usize::MAX);
        Ok(text.split_inclusive('\n').skip(skip).take(take).collect())
    }

    pub fn write(&self, path: &Path, content: &str) -> Result<(), String> {
        let raw = path.to_string_lossy();
        let (_, mut file, _) = self.workspace.open_write(&raw).map_err(|e| format!("{raw}: {e}"))?;
        file.write_all(content.as_bytes()).map_err(|e| format!("{raw}: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_and_writes_stay_inside_the_workspace() {
        let dir = tempfile::tempdir().unwrap();
        let files = WorkspaceFiles::new(Workspace::new(dir.path()).unwrap());
        let inside = dir.path().canonicalize().unwrap().join("notes/a.txt");
        files.write(&inside, "one\ntwo\nthree\n").expect("a path inside the workspace");
        assert_eq!(files.read(&inside, None, None).unwrap(), "one\ntwo\nthree\n");
        assert_eq!(files.read(&inside, Some(2), Some(1)).unwrap(), "two\n", "line and limit are 1-based lines");
        let outside = dir.path().join("../escape.txt");
        assert!(files.write(&outside, "x").is_err(), "an agent cannot write outside the workspace through the client");
        assert!(matches!(files.read(Path::new("/etc/passwd"), None, None), Err(ReadError::Refused(_))), "nor read outside it");
        assert!(
            matches!(files.read(&dir.path().canonicalize().unwrap().join("new.txt"), None, None), Err(ReadError::NotFound(_))),
            "a file that is not there yet is not found, so an agent's write tool creates it"
        );
    }
}
