//! The commands a message suggests, written so they can be pasted as they are: a history kept
//! elsewhere (`--data-dir`) is named in them, or the pasted command would look in the app's
//! folder and find no such session.

use std::path::Path;
use std::sync::OnceLock;

static DATA_DIR: OnceLock<String> = OnceLock::new();
static PROGRAM: OnceLock<String> = OnceLock::new();
static SERVER_FLAGS: OnceLock<String> = OnceLock::new();

/// The `--data-dir` the person passed, for every suggestion that follows.
pub fn remember_data_dir(dir: &Path) {
    let _ = DATA_DIR.set(quoted(&dir.to_string_lossy()));
}

/// The flags that named the server and model of a run by an external agent, for the `sessions
/// resume` it suggests: its session records the agent, not the server its evaluator asked, so
/// the resume pasted without them found no model (or asked for a key to OpenAI's own API).
pub fn remember_server_flags(flags: &[(&str, Option<&String>)]) {
    let said: Vec<String> = flags.iter().filter_map(|(flag, value)| value.map(|v| format!("{flag} {}", quoted(v)))).collect();
    if !said.is_empty() {
        let _ = SERVER_FLAGS.set(said.join(" "));
    }
}

/// `finishline {rest}`, with the `--data-dir` the person passed (and, for a resume, the flags
/// naming the server an external agent's run needs again).
pub fn command(rest: &str) -> String {
    let program = PROGRAM.get_or_init(|| {
        let typed = std::env::args_os().next().map(|a| a.to_string_lossy().into_owned()).unwrap_or_default();
        program_named(&typed, std::env::current_exe().ok().as_deref(), std::env::var_os("PATH").as_deref())
    });
    let rest = match SERVER_FLAGS.get() {
        Some(flags) if rest.starts_with("sessions resume ") => format!("{rest} {flags}"),
        _ => rest.to_string(),
    };
    match DATA_DIR.get() {
        Some(dir) => format!("{program} {rest} --data-dir {dir}"),
        None => format!("{program} {rest}"),
    }
}

/// How a suggestion names the program: `finishline` when that is what the person's shell finds,
/// else the path they ran it by (`./target/release/finishline`, as the README builds it), which
/// works pasted in the same folder.
fn program_named(typed: &str, me: Option<&Path>, path: Option<&std::ffi::OsStr>) -> String {
    let same = |p: &Path| p.canonicalize().ok().is_some_and(|p| me.and_then(|m| m.canonicalize().ok()).is_some_and(|m| m == p));
    let found = path.into_iter().flat_map(std::env::split_paths).map(|d| d.join("finishline")).find(|c| c.is_file());
    if !typed.contains('/') || found.as_deref().is_some_and(same) {
        "finishline".into()
    } else {
        quoted(typed)
    }
}

/// `path` as a shell reads it back: as it is when it holds nothing the shell treats specially,
/// else in single quotes.
pub fn quoted(path: &str) -> String {
    if !path.is_empty() && path.chars().all(|c| c.is_ascii_alphanumeric() || "/._-+,:@%=".contains(c)) {
        path.to_string()
    } else {
        format!("'{}'", path.replace('\'', r"'\''"))
    }
}

/// A clause from the engine ("the repository … is no longer at …") as a sentence's start.
pub fn sentence(clause: &str) -> String {
    let mut first = clause.chars();
    first.next().into_iter().flat_map(char::to_uppercase).chain(first).collect()
}

/// A message with each command it names (`` `finishline …` ``, as the engine words them for
/// either front end) written as [`command`] writes it: with the program as the shell finds it
/// and the `--data-dir` the person passed, so it can be pasted.
pub fn pasteable(message: &str) -> String {
    // One written by `command` already (a CLI hint in the same message) is left as it is: its
    // flags would be given twice, which the parser refuses.
    let written = |rest: &str| DATA_DIR.get().is_some_and(|_| rest.contains(" --data-dir ")) || SERVER_FLAGS.get().is_some_and(|f| rest.contains(f.as_str()));
    commands_written(message, |rest| if written(rest) { format!("finishline {rest}") } else { command(rest) })
}

/// `message` with each `` `finishline sessions …` `` it names as `write` writes it. Only a
/// session's commands: "the next `finishline run`" names no command to paste.
fn commands_written(message: &str, write: impl Fn(&str) -> String) -> String {
    let mut out = String::new();
    let mut rest = message;
    while let Some(at) = rest.find("`finishline sessions ") {
        let after = &rest[at + "`finishline ".len()..];
        let Some(end) = after.find('`') else { break };
        out.push_str(&rest[..at]);
        out.push('`');
        out.push_str(&write(&after[..end]));
        out.push('`');
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

/// How to put a session's kept work away, in a clause after "or": `sessions discard`, except for
/// an attempt of a group none was chosen from, which goes with its group (discard refuses it).
pub fn put_away(s: &finishline_engine::store::SessionSummary) -> String {
    match s.attempt.as_ref().filter(|a| !a.group_chosen) {
        Some(a) => format!(
            "put it away with its group (`{}`), or by choosing another attempt (`{}` shows them)",
            command(&format!("sessions attempts {} --reject", a.group)),
            command(&format!("sessions attempts {}", a.group))
        ),
        None => format!("put it away with `{}`", command(&format!("sessions discard {}", s.id))),
    }
}

#[cfg(test)]
mod tests {
    use super::{commands_written, program_named, quoted};

    /// The engine words a command for both front ends; the CLI's message gives it whole.
    #[test]
    fn a_command_an_engine_message_names_is_written_to_be_pasted() {
        let write = |rest: &str| format!("./fl {rest} --data-dir /d");
        assert_eq!(
            commands_written("reject it there (Reject in the window, `finishline sessions review s1 --reject` in a terminal)", write),
            "reject it there (Reject in the window, `./fl sessions review s1 --reject --data-dir /d` in a terminal)"
        );
        assert_eq!(
            commands_written("no command `here`; `finishline sessions a` and `finishline sessions b`", write),
            "no command `here`; `./fl sessions a --data-dir /d` and `./fl sessions b --data-dir /d`"
        );
        assert_eq!(commands_written("the next `finishline run` finishes it", write), "the next `finishline run` finishes it", "no command to paste");
        assert_eq!(commands_written("cut `finishline sessions a", write), "cut `finishline sessions a");
    }

    #[test]
    fn a_suggestion_names_the_program_as_the_shell_would_find_it() {
        let dir = tempfile::tempdir().unwrap();
        let (bin, other) = (dir.path().join("bin"), dir.path().join("build dir"));
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::create_dir_all(&other).unwrap();
        std::fs::write(bin.join("finishline"), "").unwrap();
        std::fs::write(other.join("finishline"), "").unwrap();
        let path = std::env::join_paths([&bin]).unwrap();
        assert_eq!(program_named("finishline", Some(&bin.join("finishline")), Some(&path)), "finishline", "run from PATH");
        assert_eq!(
            program_named(&bin.join("finishline").to_string_lossy(), Some(&bin.join("finishline")), Some(&path)),
            "finishline",
            "the one on PATH, by its path"
        );
        let built = other.join("finishline");
        assert_eq!(
            program_named("./target/release/finishline", Some(&built), Some(&path)),
            "./target/release/finishline",
            "another build than the one on PATH: as typed"
        );
        assert_eq!(program_named(&built.to_string_lossy(), Some(&built), None), format!("'{}'", built.display()), "nothing on PATH: as typed, quoted");
    }

    #[test]
    fn a_folder_with_spaces_or_quotes_is_quoted_as_a_shell_reads_it() {
        assert_eq!(quoted("/tmp/fl-data"), "/tmp/fl-data");
        assert_eq!(quoted("/home/me/my data"), "'/home/me/my data'");
        assert_eq!(quoted("/it's"), r"'/it'\''s'");
    }
}
