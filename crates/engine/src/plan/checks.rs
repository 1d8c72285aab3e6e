//! A plan step's success criteria that need no model: "notes.md exists", "`cargo test`
//! passes", "README.md contains \"Usage\"". Read from the manager's words, pure; the run checks
//! the files and runs the commands. A step whose every criterion is of these kinds is judged
//! without asking the evaluator, and says so.

use regex::Regex;
use std::sync::OnceLock;

/// One criterion, as far as it can be checked without a model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Check {
    /// A file (relative to the workspace) exists.
    FileExists(String),
    /// A file contains this text.
    FileContains(String, String),
    /// A shell command exits 0.
    CommandPasses(String),
    /// Only a reader can judge it.
    NeedsJudgement,
}

impl Check {
    /// How the window and the evaluator's evidence name it.
    pub fn describe(&self) -> String {
        match self {
            Check::FileExists(p) => format!("{p} exists"),
            Check::FileContains(p, t) => format!("{p} contains “{t}”"),
            Check::CommandPasses(c) => format!("`{c}` passes"),
            Check::NeedsJudgement => "needs judgement".into(),
        }
    }
}

fn re(cell: &'static OnceLock<Regex>, pattern: &str) -> &'static Regex {
    cell.get_or_init(|| Regex::new(pattern).expect("a valid pattern"))
}

/// A path-like word: has a slash or an extension, no spaces.
fn path_like(s: &str) -> bool {
    let s = s.trim_matches(|c| c == '`' || c == '"' || c == '\'');
    !s.is_empty()
        && !s.contains(' ')
        && !s.starts_with('-')
        && (s.contains('/') || s.rsplit_once('.').is_some_and(|(a, b)| !a.is_empty() && !b.is_empty() && b.chars().all(|c| c.is_ascii_alphanumeric())))
}

/// Reads one criterion.
pub fn parse(criterion: &str) -> Check {
    static COMMAND: OnceLock<Regex> = OnceLock::new();
    static CONTAINS: OnceLock<Regex> = OnceLock::new();
    static EXISTS: OnceLock<Regex> = OnceLock::new();
    let c = criterion.trim().trim_end_matches('.');
    // "`cargo test` passes", "running `npm test` succeeds", "`make check` exits 0 / with code 0"
    let command = re(&COMMAND, r"(?i)^(?:running\s+)?`([^`]+)`\s+(?:passes|succeeds|exits (?:with )?(?:code )?0|returns 0|runs without errors?)$");
    if let Some(m) = command.captures(c) {
        return Check::CommandPasses(m[1].trim().to_string());
    }
    // "notes.md contains "three fruits"", "`src/a.rs` mentions `parse_args`"
    let contains =
        re(&CONTAINS, r#"(?i)^(?:the file\s+)?`?([^\s`"']+)`?\s+(?:contains|mentions|includes)\s+(?:the (?:text|word|line)\s+)?["“`']([^"”`']+)["”`']$"#);
    if let Some(m) = contains.captures(c) {
        if path_like(&m[1]) {
            return Check::FileContains(m[1].to_string(), m[2].to_string());
        }
    }
    // "notes.md exists", "a file `tests/test_x.py` is created", "src/lib.rs is present"
    let exists = re(&EXISTS, r"(?i)^(?:a |the )?(?:file\s+)?`?([^\s`]+)`?\s+(?:exists|is created|has been created|is present|is written)$");
    if let Some(m) = exists.captures(c) {
        if path_like(&m[1]) {
            return Check::FileExists(m[1].to_string());
        }
    }
    Check::NeedsJudgement
}

/// Every criterion read; `None` when any needs a reader (the evaluator judges the step).
pub fn decidable(criteria: &[String]) -> Option<Vec<Check>> {
    if criteria.is_empty() {
        return None;
    }
    let checks: Vec<Check> = criteria.iter().map(|c| parse(c)).collect();
    (!checks.contains(&Check::NeedsJudgement)).then_some(checks)
}

/// The commands a step's criteria name in backticks: the task's verification commands run at a
/// step only when its criteria name them.
pub fn named_commands<'a>(criteria: &[String], commands: &'a [String]) -> Vec<&'a String> {
    commands.iter().filter(|cmd| criteria.iter().any(|c| c.contains(cmd.as_str()))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_commands_and_texts_are_read_and_the_rest_needs_a_reader() {
        assert_eq!(parse("notes.md exists"), Check::FileExists("notes.md".into()));
        assert_eq!(parse("A file `tests/test_calc.py` is created."), Check::FileExists("tests/test_calc.py".into()));
        assert_eq!(parse("`cargo test` passes"), Check::CommandPasses("cargo test".into()));
        assert_eq!(parse("Running `python3 -m pytest -q` succeeds"), Check::CommandPasses("python3 -m pytest -q".into()));
        assert_eq!(parse("`make check` exits 0"), Check::CommandPasses("make check".into()));
        assert_eq!(parse("README.md contains \"Usage\""), Check::FileContains("README.md".into(), "Usage".into()));
        assert_eq!(parse("the code is clean and idiomatic"), Check::NeedsJudgement);
        assert_eq!(parse("everything exists"), Check::NeedsJudgement, "a word that is not a path is not a file");
    }

    #[test]
    fn a_step_is_decidable_only_when_every_criterion_is() {
        assert!(decidable(&["notes.md exists".into(), "`cargo test` passes".into()]).is_some());
        assert!(decidable(&["notes.md exists".into(), "the notes are well written".into()]).is_none());
        assert!(decidable(&[]).is_none(), "a step without criteria is judged by the evaluator");
    }

    #[test]
    fn the_tasks_commands_run_at_a_step_only_when_its_criteria_name_them() {
        let cmds = vec!["cargo test".to_string(), "cargo clippy".to_string()];
        assert_eq!(named_commands(&["`cargo test` passes".into()], &cmds), vec![&cmds[0]]);
        assert!(named_commands(&["a failing test exists in tests/a.rs".into()], &cmds).is_empty());
    }
}
