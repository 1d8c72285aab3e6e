//! The commands a message suggests, written so they can be pasted as they are: a history kept
//! elsewhere (`--data-dir`) is named in them, or the pasted command would look in the app's
//! folder and find no such session.

use std::path::Path;
use std::sync::OnceLock;

static DATA_DIR: OnceLock<String> = OnceLock::new();

/// The `--data-dir` the person passed, for every suggestion that follows.
pub fn remember_data_dir(dir: &Path) {
    let _ = DATA_DIR.set(quoted(&dir.to_string_lossy()));
}

/// `finishline {rest}`, with the `--data-dir` the person passed.
pub fn command(rest: &str) -> String {
    match DATA_DIR.get() {
        Some(dir) => format!("finishline {rest} --data-dir {dir}"),
        None => format!("finishline {rest}"),
    }
}

/// `path` as a shell reads it back: as it is when it holds nothing the shell treats specially,
/// else in single quotes.
fn quoted(path: &str) -> String {
    if !path.is_empty() && path.chars().all(|c| c.is_ascii_alphanumeric() || "/._-+,:@%=".contains(c)) {
        path.to_string()
    } else {
        format!("'{}'", path.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::quoted;

    #[test]
    fn a_folder_with_spaces_or_quotes_is_quoted_as_a_shell_reads_it() {
        assert_eq!(quoted("/tmp/fl-data"), "/tmp/fl-data");
        assert_eq!(quoted("/home/me/my data"), "'/home/me/my data'");
        assert_eq!(quoted("/it's"), r"'/it'\''s'");
    }
}
