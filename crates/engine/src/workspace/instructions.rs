//! The workspace's own instructions for agents: `AGENTS.md`, or `CLAUDE.md` or `.clinerules`
//! where there is no `AGENTS.md` (the files other agents already read, so a project written for
//! them works here unchanged). They join the agent's system prompt and the evaluator's context,
//! so the work is done and judged by the project's rules.

use std::path::Path;

use serde::Serialize;

/// Where instructions are looked for, first found wins.
pub const FILES: &[&str] = &["AGENTS.md", "CLAUDE.md", ".clinerules"];

/// Instructions longer than this are cut: they share the context window with the task.
pub const MAX_CHARS: usize = 16_000;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProjectInstructions {
    /// The file they came from, relative to the workspace (`.clinerules` may be a folder).
    pub file: String,
    pub text: String,
    /// Cut at [`MAX_CHARS`].
    pub truncated: bool,
}

/// The instructions of `workspace`, if it has any that are not empty. Only regular files inside
/// the workspace are read: a link could point anywhere on the machine, and what is read here is
/// sent to the model provider.
pub fn find(workspace: &Path) -> Option<ProjectInstructions> {
    FILES.iter().find_map(|name| {
        let path = workspace.join(name);
        let meta = std::fs::symlink_metadata(&path).ok()?;
        let text = if meta.is_file() {
            read(&path)?
        } else if meta.is_dir() && *name == ".clinerules" {
            // Cline's folder form: every file in it, in name order.
            let mut files: Vec<_> = std::fs::read_dir(&path).ok()?.flatten().filter(|e| e.file_type().is_ok_and(|t| t.is_file())).map(|e| e.path()).collect();
            files.sort();
            files.iter().filter_map(|p| read(p)).collect::<Vec<_>>().join("\n\n")
        } else {
            return None;
        };
        let text = text.trim();
        if text.is_empty() {
            return None;
        }
        let truncated = text.chars().count() > MAX_CHARS;
        let text: String = text.chars().take(MAX_CHARS).collect();
        Some(ProjectInstructions { file: name.to_string(), text, truncated })
    })
}

/// Reads at most what could be kept (a stray huge file costs no more than that).
fn read(path: &Path) -> Option<String> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(path).ok()?.take((MAX_CHARS * 4 + 4) as u64).read_to_end(&mut bytes).ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}
