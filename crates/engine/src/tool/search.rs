//! glob and grep over the workspace, honouring its ignore files (the `ignore` crate) and never
//! leaving it (no symlinks followed).

use globset::Glob as GlobPattern;
use ignore::WalkBuilder;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use std::io::BufRead;

use super::{parse_input, schema_of, Permission, Tool, ToolContext, ToolOutput};

const MAX_PATHS: usize = 500;
const MAX_MATCHES: usize = 200;
/// Files larger than this are not searched (logs and data, not source).
const MAX_GREP_FILE: u64 = 8 * 1024 * 1024;

#[derive(Deserialize, JsonSchema)]
pub struct GlobInput {
    /// A glob such as `**/*.md` or `src/*.rs`, relative to the workspace.
    pub pattern: String,
}

pub struct Glob;

fn walker(ctx: &ToolContext) -> ignore::Walk {
    WalkBuilder::new(ctx.workspace.root())
        .hidden(false)
        .follow_links(false)
        .git_ignore(true)
        .git_exclude(true)
        .require_git(false)
        .filter_entry(|e| e.file_name() != ".git")
        .build()
}

#[async_trait::async_trait]
impl Tool for Glob {
    fn name(&self) -> &str {
        "glob"
    }
    fn description(&self) -> &str {
        "Find files of the workspace whose path matches a glob pattern."
    }
    fn input_schema(&self) -> Value {
        schema_of::<GlobInput>()
    }
    fn default_permission(&self) -> Permission {
        Permission::Allow
    }
    async fn call(&self, ctx: &ToolContext, input: Value) -> ToolOutput {
        let input: GlobInput = match parse_input(self.name(), input) {
            Ok(i) => i,
            Err(e) => return e,
        };
        if input.pattern.contains("..") || input.pattern.starts_with('/') {
            return ToolOutput::error("Refused: the pattern must stay inside the workspace (no `..`, no absolute path).");
        }
        let matcher = match GlobPattern::new(&input.pattern) {
            Ok(g) => g.compile_matcher(),
            Err(e) => return ToolOutput::error(format!("Invalid glob: {e}")),
        };
        let mut hits = Vec::new();
        let mut total = 0;
        for entry in walker(ctx).filter_map(Result::ok) {
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            let rel = ctx.workspace.relative(entry.path());
            if matcher.is_match(&rel) {
                total += 1;
                if hits.len() < MAX_PATHS {
                    hits.push(rel);
                }
            }
        }
        hits.sort();
        let mut out = if hits.is_empty() { "No files match.".to_string() } else { hits.join("\n") };
        if total > MAX_PATHS {
            out.push_str(&format!("\n[{} more not shown]", total - MAX_PATHS));
        }
        ToolOutput::ok(out)
    }
}

#[derive(Deserialize, JsonSchema)]
pub struct GrepInput {
    /// A regular expression.
    pub pattern: String,
    /// Only files whose path matches this glob.
    #[serde(default)]
    pub glob: Option<String>,
    #[serde(default)]
    pub case_insensitive: bool,
}

pub struct Grep;

#[async_trait::async_trait]
impl Tool for Grep {
    fn name(&self) -> &str {
        "grep"
    }
    fn description(&self) -> &str {
        "Search the text files of the workspace for a regular expression; prints path:line: text."
    }
    fn input_schema(&self) -> Value {
        schema_of::<GrepInput>()
    }
    fn default_permission(&self) -> Permission {
        Permission::Allow
    }
    async fn call(&self, ctx: &ToolContext, input: Value) -> ToolOutput {
        let input: GrepInput = match parse_input(self.name(), input) {
            Ok(i) => i,
            Err(e) => return e,
        };
        let re = match regex::RegexBuilder::new(&input.pattern).case_insensitive(input.case_insensitive).size_limit(1 << 20).build() {
            Ok(r) => r,
            Err(e) => return ToolOutput::error(format!("Invalid regular expression: {e}")),
        };
        let filter = match input.glob.as_deref().map(GlobPattern::new) {
            Some(Ok(g)) => Some(g.compile_matcher()),
            Some(Err(e)) => return ToolOutput::error(format!("Invalid glob: {e}")),
            None => None,
        };
        let mut out = Vec::new();
        let mut total = 0usize;
        let mut too_big = Vec::new();
        for entry in walker(ctx).filter_map(Result::ok) {
            if ctx.cancel.is_cancelled() {
                break;
            }
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            let rel = ctx.workspace.relative(entry.path());
            if filter.as_ref().is_some_and(|f| !f.is_match(&rel)) {
                continue;
            }
            // The size first: a folder of videos is never read into memory.
            if entry.metadata().map(|m| m.len()).unwrap_or(0) > MAX_GREP_FILE {
                too_big.push(rel);
                continue;
            }
            let Ok(file) = std::fs::File::open(entry.path()) else { continue };
            let mut reader = std::io::BufReader::new(file);
            let mut line = Vec::new();
            let mut n = 0usize;
            loop {
                line.clear();
                match reader.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
                // A NUL early on means a binary file: not text to search.
                if n < 64 && line.contains(&0) {
                    break;
                }
                n += 1;
                let text = String::from_utf8_lossy(&line);
                let text = text.trim_end_matches(['\n', '\r']);
                if re.is_match(text) {
                    total += 1;
                    if out.len() < MAX_MATCHES {
                        let shown: String = text.chars().take(300).collect();
                        out.push(format!("{rel}:{n}: {shown}"));
                    }
                }
            }
        }
        let mut s = if out.is_empty() { "No matches.".to_string() } else { out.join("\n") };
        if total > MAX_MATCHES {
            s.push_str(&format!("\n[{} more matches not shown]", total - MAX_MATCHES));
        }
        if !too_big.is_empty() {
            let names: Vec<&str> = too_big.iter().take(20).map(String::as_str).collect();
            s.push_str(&format!("\n[not searched, over {} MB: {}{}]", MAX_GREP_FILE >> 20, names.join(", "), if too_big.len() > 20 { ", …" } else { "" }));
        }
        ToolOutput::ok(s)
    }
}
