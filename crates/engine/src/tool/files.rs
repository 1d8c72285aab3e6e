//! read_file, list_dir, write_file, edit_file: confined to the workspace, capped in size, and
//! clear about binary and non-UTF-8 files.

use std::io::Read;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::workspace::ConfinedError;
use super::{parse_input, schema_of, Permission, Tool, ToolContext, ToolOutput};

/// Largest file read whole; larger files are read in windows with offset and limit.
pub const MAX_READ_BYTES: u64 = 256 * 1024;
pub const MAX_WRITE_BYTES: usize = 5 * 1024 * 1024;
const MAX_ENTRIES: usize = 500;

fn confined_error(e: ConfinedError) -> ToolOutput {
    match e {
        ConfinedError::Path(p) => ToolOutput::error(format!("Refused: {p}.")),
        ConfinedError::Io(e) if e.kind() == std::io::ErrorKind::NotFound => ToolOutput::error("No such file or folder."),
        ConfinedError::Io(e) => ToolOutput::error(format!("Could not access the file: {e}")),
    }
}

fn looks_binary(bytes: &[u8]) -> bool {
    bytes.iter().take(8192).any(|b| *b == 0)
}

#[derive(Deserialize, JsonSchema)]
pub struct ReadFileInput {
    /// Path relative to the workspace.
    pub path: String,
    /// First line to read, 1-based.
    #[serde(default)]
    pub offset: Option<usize>,
    /// How many lines to read.
    #[serde(default)]
    pub limit: Option<usize>,
}

pub struct ReadFile;

#[async_trait::async_trait]
impl Tool for ReadFile {
    fn name(&self) -> &str {
        "read_file"
    }
    fn description(&self) -> &str {
        "Read a text file of the workspace. For long files pass offset and limit (lines)."
    }
    fn input_schema(&self) -> Value {
        schema_of::<ReadFileInput>()
    }
    fn default_permission(&self) -> Permission {
        Permission::Allow
    }
    async fn call(&self, ctx: &ToolContext, input: Value) -> ToolOutput {
        let input: ReadFileInput = match parse_input(self.name(), input) {
            Ok(i) => i,
            Err(e) => return e,
        };
        let (_, file) = match ctx.workspace.open_read(&input.path) {
            Ok(f) => f,
            Err(e) => return confined_error(e),
        };
        let meta = match file.metadata() {
            Ok(m) => m,
            Err(e) => return ToolOutput::error(format!("Could not read {}: {e}", input.path)),
        };
        if meta.is_dir() {
            return ToolOutput::error(format!("{} is a folder; use list_dir.", input.path));
        }
        if input.offset.is_some() || input.limit.is_some() {
            return read_window(file, &input);
        }
        let mut bytes = Vec::new();
        if let Err(e) = file.take(MAX_READ_BYTES + 1).read_to_end(&mut bytes) {
            return ToolOutput::error(format!("Could not read {}: {e}", input.path));
        }
        if looks_binary(&bytes) {
            return ToolOutput::error(format!("{} is a binary file ({} bytes); it cannot be shown as text.", input.path, meta.len()));
        }
        let cut = bytes.len() as u64 > MAX_READ_BYTES;
        bytes.truncate(MAX_READ_BYTES as usize);
        let (mut out, lossy) = match String::from_utf8(bytes) {
            Ok(t) => (t, false),
            // A cut inside a multi-byte character is not a UTF-8 problem of the file.
            Err(e) if cut && e.utf8_error().error_len().is_none() => {
                let valid = e.utf8_error().valid_up_to();
                let mut b = e.into_bytes();
                b.truncate(valid);
                (String::from_utf8(b).unwrap_or_default(), false)
            }
            Err(e) => (String::from_utf8_lossy(e.as_bytes()).into_owned(), true),
        };
        if lossy {
            out.push_str("\n[note: the file is not valid UTF-8; invalid bytes are shown as �]");
        }
        if cut {
            out.push_str(&format!(
                "\n[note: the file is {} bytes; only the first {} are shown. Use offset and limit to read more.]",
                meta.len(),
                MAX_READ_BYTES
            ));
        }
        ToolOutput::ok(out)
    }
}

/// Lines `offset..offset+limit` of any size of file, read as a stream so that a window deep in a
/// huge file costs no more memory than the window.
fn read_window(file: std::fs::File, input: &ReadFileInput) -> ToolOutput {
    use std::io::BufRead;
    let start = input.offset.unwrap_or(1).max(1) - 1;
    let limit = input.limit.unwrap_or(2000).clamp(1, 20_000);
    let mut reader = std::io::BufReader::new(file);
    let mut line = Vec::new();
    let mut out = String::new();
    let (mut n, mut taken, mut lossy) = (0usize, 0usize, false);
    let mut cut_line = None;
    let unreadable = |e: std::io::Error| ToolOutput::error(format!("Could not read {}: {e}", input.path));
    loop {
        // Lines before the window are passed over, never held: one may be a minified file's
        // whole content.
        if n < start {
            match skip_line(&mut reader) {
                Ok(true) => {
                    n += 1;
                    continue;
                }
                Ok(false) => break,
                Err(e) => return unreadable(e),
            }
        }
        line.clear();
        // At most what is left of one read's bytes: a line longer than that is cut, not held whole.
        let room = MAX_READ_BYTES.saturating_sub(out.len() as u64);
        match std::io::Read::take(&mut reader, room + 1).read_until(b'\n', &mut line) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => return unreadable(e),
        }
        let cut = !line.ends_with(b"\n") && line.len() as u64 > room;
        if cut {
            line.truncate(room as usize);
            if let Err(e) = skip_line(&mut reader) {
                return unreadable(e);
            }
        }
        if line.contains(&0) {
            return ToolOutput::error(format!("{} is a binary file; it cannot be shown as text.", input.path));
        }
        let text = String::from_utf8_lossy(&line);
        lossy |= matches!(text, std::borrow::Cow::Owned(_));
        out.push_str(text.trim_end_matches(['\n', '\r']));
        out.push('\n');
        taken += 1;
        n += 1;
        if cut {
            cut_line = Some((n, room));
            break;
        }
        if taken >= limit || out.len() as u64 >= MAX_READ_BYTES {
            break;
        }
    }
    if taken == 0 {
        return ToolOutput::ok(format!("[the file has {n} lines; nothing at line {}]", start + 1));
    }
    let mut out = out.trim_end_matches('\n').to_string();
    if let Some((number, shown)) = cut_line {
        out.push_str(&format!(
            "\n[note: line {number} is longer than one read returns; only its first {shown} bytes are shown. Search it with grep, or cut pieces of it with run_command.]"
        ));
    }
    if lossy {
        out.push_str("\n[note: the file is not valid UTF-8; invalid bytes are shown as �]");
    }
    ToolOutput::ok(out)
}

/// Reads past the rest of a line without keeping it; `false` at the end of the file.
fn skip_line(reader: &mut impl std::io::BufRead) -> std::io::Result<bool> {
    let mut any = false;
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            return Ok(any);
        }
        any = true;
        if let Some(i) = buf.iter().position(|b| *b == b'\n') {
            reader.consume(i + 1);
            return Ok(true);
        }
        let len = buf.len();
        reader.consume(len);
    }
}

#[derive(Deserialize, JsonSchema)]
pub struct ListDirInput {
    /// Folder relative to the workspace; "." for its root.
    #[serde(default = "dot")]
    pub path: String,
}

fn dot() -> String {
    ".".into()
}

pub struct ListDir;

#[async_trait::async_trait]
impl Tool for ListDir {
    fn name(&self) -> &str {
        "list_dir"
    }
    fn description(&self) -> &str {
        "List the files and folders in a folder of the workspace."
    }
    fn input_schema(&self) -> Value {
        schema_of::<ListDirInput>()
    }
    fn default_permission(&self) -> Permission {
        Permission::Allow
    }
    async fn call(&self, ctx: &ToolContext, input: Value) -> ToolOutput {
        let input: ListDirInput = match parse_input(self.name(), input) {
            Ok(i) => i,
            Err(e) => return e,
        };
        let path = match ctx.workspace.resolve(&input.path) {
            Ok(p) => p,
            Err(e) => return ToolOutput::error(format!("Refused: {e}.")),
        };
        let read = match std::fs::read_dir(&path) {
            Ok(r) => r,
            Err(e) => return ToolOutput::error(format!("Could not list {}: {e}", input.path)),
        };
        let mut entries: Vec<String> = read
            .filter_map(Result::ok)
            .map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                match e.file_type() {
                    Ok(t) if t.is_dir() => format!("{name}/"),
                    Ok(t) if t.is_symlink() => format!("{name}@"),
                    _ => {
                        let size = e.metadata().map(|m| m.len()).unwrap_or(0);
                        format!("{name} ({size} bytes)")
                    }
                }
            })
            .collect();
        entries.sort();
        let total = entries.len();
        entries.truncate(MAX_ENTRIES);
        let mut out = if entries.is_empty() { "(empty folder)".to_string() } else { entries.join("\n") };
        if total > MAX_ENTRIES {
            out.push_str(&format!("\n[{} more entries not shown]", total - MAX_ENTRIES));
        }
        ToolOutput::ok(out)
    }
}

#[derive(Deserialize, JsonSchema)]
pub struct WriteFileInput {
    /// Path relative to the workspace; folders are created as needed.
    pub path: String,
    /// The whole new content of the file.
    pub content: String,
}

pub struct WriteFile;

#[async_trait::async_trait]
impl Tool for WriteFile {
    fn name(&self) -> &str {
        "write_file"
    }
    fn description(&self) -> &str {
        "Create or overwrite a text file in the workspace."
    }
    fn input_schema(&self) -> Value {
        schema_of::<WriteFileInput>()
    }
    fn default_permission(&self) -> Permission {
        Permission::Allow
    }
    async fn call(&self, ctx: &ToolContext, input: Value) -> ToolOutput {
        let input: WriteFileInput = match parse_input(self.name(), input) {
            Ok(i) => i,
            Err(e) => return e,
        };
        if input.content.len() > MAX_WRITE_BYTES {
            return ToolOutput::error(format!("The content is {} bytes; the limit is {MAX_WRITE_BYTES}. Write it in smaller files.", input.content.len()));
        }
        let (_, mut file, created) = match ctx.workspace.open_write(&input.path) {
            Ok(f) => f,
            Err(e) => return confined_error(e),
        };
        if let Err(e) = super::workspace::replace_contents(&mut file, input.content.as_bytes()) {
            return ToolOutput::error(format!("Could not write {}: {e}", input.path));
        }
        ToolOutput::ok(format!("{} {} ({} bytes).", if created { "Created" } else { "Wrote" }, input.path, input.content.len()))
    }
}

#[derive(Deserialize, JsonSchema)]
pub struct EditFileInput {
    /// Path relative to the workspace.
    pub path: String,
    /// Exact text to replace; it must occur once unless replace_all is true.
    pub old_text: String,
    pub new_text: String,
    #[serde(default)]
    pub replace_all: bool,
}

pub struct EditFile;

#[async_trait::async_trait]
impl Tool for EditFile {
    fn name(&self) -> &str {
        "edit_file"
    }
    fn description(&self) -> &str {
        "Replace exact text in a file of the workspace."
    }
    fn input_schema(&self) -> Value {
        schema_of::<EditFileInput>()
    }
    fn default_permission(&self) -> Permission {
        Permission::Allow
    }
    async fn call(&self, ctx: &ToolContext, input: Value) -> ToolOutput {
        let input: EditFileInput = match parse_input(self.name(), input) {
            Ok(i) => i,
            Err(e) => return e,
        };
        if input.old_text.is_empty() {
            return ToolOutput::error("old_text is empty; to create a file use write_file.");
        }
        let (_, file) = match ctx.workspace.open_read(&input.path) {
            Ok(f) => f,
            Err(e) => return confined_error(e),
        };
        // Held in memory twice while it is edited: a log or dump of gigabytes would take the app.
        if file.metadata().is_ok_and(|m| m.len() > MAX_WRITE_BYTES as u64) {
            return ToolOutput::error(format!(
                "{} is too large to edit here (over {} MB): change it with run_command (sed, a script), or split it.",
                input.path,
                MAX_WRITE_BYTES >> 20
            ));
        }
        let mut text = String::new();
        match file.take(MAX_WRITE_BYTES as u64 + 1).read_to_string(&mut text) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                return ToolOutput::error(format!("{} is not a UTF-8 text file; it cannot be edited as text.", input.path))
            }
            // A folder, a file it may not read: said as what it is, not as a file of the wrong kind.
            Err(e) => return ToolOutput::error(format!("Could not read {}: {e}", input.path)),
        }
        // It grew past the limit while being read (a log appended to): written back, it would be cut.
        if text.len() > MAX_WRITE_BYTES {
            return ToolOutput::error(format!(
                "{} is too large to edit here (over {} MB): change it with run_command, or split it.",
                input.path,
                MAX_WRITE_BYTES >> 20
            ));
        }
        let count = text.matches(&input.old_text).count();
        if count == 0 {
            return ToolOutput::error(format!("old_text was not found in {}. Read the file and copy the text exactly.", input.path));
        }
        if count > 1 && !input.replace_all {
            return ToolOutput::error(format!("old_text occurs {count} times in {}; give more context or set replace_all.", input.path));
        }
        let new = if input.replace_all { text.replace(&input.old_text, &input.new_text) } else { text.replacen(&input.old_text, &input.new_text, 1) };
        let (_, mut out, _) = match ctx.workspace.open_write(&input.path) {
            Ok(f) => f,
            Err(e) => return confined_error(e),
        };
        if let Err(e) = super::workspace::replace_contents(&mut out, new.as_bytes()) {
            return ToolOutput::error(format!("Could not write {}: {e}", input.path));
        }
        ToolOutput::ok(format!("Replaced {count} occurrence{} in {}.", if count == 1 { "" } else { "s" }, input.path))
    }
}
