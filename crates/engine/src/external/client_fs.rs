//! The client's file system, offered to an external agent (`fs/read_text_file`,
//! `fs/write_text_file`): an agent that reads and writes through the client stays inside the
//! workspace, with the same confinement as the built-in agent's file tools (no `..`, no link
//! out of the folder). Agents with their own file tools (OpenCode) do not use it; Finishline's
//! checkpoints capture their changes either way.

use std::io::{BufRead, Read};
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
        let refused = |e: std::io::Error| ReadError::Refused(format!("{raw}: {e}"));
        let bytes = if line.is_none() && limit.is_none() {
            // Whole or not at all: an agent's edit tool writes back what it read.
            let mut bytes = Vec::new();
            file.take(MAX_READ_BYTES + 1).read_to_end(&mut bytes).map_err(refused)?;
            if bytes.len() as u64 > MAX_READ_BYTES {
                return Err(ReadError::Refused(format!(
                    "{raw} is over the {} MB one read returns whole: read it in parts, with line and limit",
                    MAX_READ_BYTES >> 20
                )));
            }
            bytes
        } else {
            let (skip, take) = (line.unwrap_or(1).saturating_sub(1) as usize, limit.map(|l| l as usize).unwrap_or(usize::MAX));
            lines_of(std::io::BufReader::new(file), skip, take).map_err(refused)?.ok_or_else(|| {
                ReadError::Refused(format!("{raw}: the lines asked for are over the {} MB one read returns: ask for fewer", MAX_READ_BYTES >> 20))
            })?
        };
        // Bytes that are not text would come back changed in the agent's write.
        String::from_utf8(bytes).map_err(|_| ReadError::Refused(format!("{raw} is not UTF-8 text, so it is not read as text (an edit would change its bytes)")))
    }

    pub fn write(&self, path: &Path, content: &str) -> Result<(), String> {
        let raw = path.to_string_lossy();
        let (_, mut file, _) = self.workspace.open_write(&raw).map_err(|e| format!("{raw}: {e}"))?;
        crate::tool::workspace::replace_contents(&mut file, content.as_bytes()).map_err(|e| format!("{raw}: {e}"))
    }
}

/// Lines `skip..skip+take` (each with its newline), or `None` past [`MAX_READ_BYTES`]; a file
/// larger than that is read through, never held whole.
fn lines_of(mut reader: impl std::io::BufRead, skip: usize, take: usize) -> std::io::Result<Option<Vec<u8>>> {
    let (mut out, mut line, mut n) = (Vec::new(), Vec::new(), 0usize);
    while n < skip.saturating_add(take) {
        line.clear();
        if (&mut reader).take(MAX_READ_BYTES + 1).read_until(b'\n', &mut line)? == 0 {
            break;
        }
        // One line over the limit: not held whole, even to skip it.
        if line.len() as u64 > MAX_READ_BYTES {
            return Ok(None);
        }
        n += 1;
        if n > skip {
            out.extend_from_slice(&line);
            if out.len() as u64 > MAX_READ_BYTES {
                return Ok(None);
            }
        }
    }
    Ok(Some(out))
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

    /// An agent's edit tool reads the file whole, changes it and writes it back: a read cut at
    /// the limit, or with its bytes replaced, would have it write back a cut or changed file.
    #[test]
    fn a_read_is_whole_and_exact_or_refused_with_the_way_on() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let files = WorkspaceFiles::new(Workspace::new(&root).unwrap());
        let line = "0123456789".repeat(10) + "\n";
        let big: String = line.repeat((MAX_READ_BYTES as usize / line.len()) + 10) + "the end\n";
        std::fs::write(root.join("big.log"), &big).unwrap();
        match files.read(&root.join("big.log"), None, None) {
            Err(ReadError::Refused(why)) => assert!(why.contains("line and limit"), "{why}"),
            other => panic!("a whole read past the limit is refused, not cut: {:?}", other.map(|t| t.len())),
        }
        let lines = big.lines().count() as u32;
        assert_eq!(files.read(&root.join("big.log"), Some(lines), Some(5)).unwrap(), "the end\n", "it reads in parts, to its end");
        assert_eq!(files.read(&root.join("big.log"), Some(2), Some(1)).unwrap(), line);

        std::fs::write(root.join("latin1.txt"), b"caf\xe9\n").unwrap();
        match files.read(&root.join("latin1.txt"), None, None) {
            Err(ReadError::Refused(why)) => assert!(why.contains("not UTF-8"), "{why}"),
            other => panic!("bytes that are not text are not replaced: {other:?}"),
        }
    }
}
