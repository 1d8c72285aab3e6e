//! The person's comments on a review's diff, and the criteria they become. Request changes sends
//! the comments to the agent; the next run is judged on each one: met, unmet or unverifiable,
//! with the evidence. What can be decided without a model is decided here (a comment on a file the
//! run never touched is not addressed); the evaluator answers the rest.

use serde::{Deserialize, Serialize};

/// Which side of the diff a comment's lines are on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DiffSide {
    /// The file as the run left it.
    #[default]
    New,
    /// The file as it was before (a removed line).
    Old,
}

/// A comment on lines of a reviewed file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Comment {
    pub id: String,
    pub path: String,
    pub start_line: u32,
    pub end_line: u32,
    #[serde(default)]
    pub side: DiffSide,
    /// The commented lines as they read, so the agent sees what the person saw.
    #[serde(default)]
    pub quote: String,
    pub text: String,
}

impl Comment {
    /// The comment as a criterion: where and what, `src/a.rs:12: rename x`.
    pub fn criterion(&self) -> String {
        // Line numbers of the file as it was name other lines than the same numbers now.
        let side = if self.side == DiffSide::Old { " (as it was)" } else { "" };
        format!("{}{side}: {}", self.location(), self.text.trim())
    }

    /// `src/a.rs:12-14`.
    pub fn location(&self) -> String {
        if self.start_line == self.end_line {
            format!("{}:{}", self.path, self.start_line)
        } else {
            format!("{}:{}-{}", self.path, self.start_line, self.end_line)
        }
    }

    /// Checks what a person (or the CLI) can get wrong.
    pub fn check(&self) -> Result<(), String> {
        if self.text.trim().is_empty() {
            return Err("the comment is empty: say what should change".into());
        }
        if self.text.chars().count() > 20_000 {
            return Err("a comment is at most 20,000 characters".into());
        }
        if self.path.trim().is_empty() || self.path.contains('\0') {
            return Err("the comment names no file".into());
        }
        if self.start_line == 0 {
            return Err("line 0 is no line of a file: lines count from 1".into());
        }
        if self.end_line < self.start_line {
            return Err(format!("lines {}-{} run backwards: name the first line first", self.start_line, self.end_line));
        }
        Ok(())
    }
}

/// Parses the CLI's `FILE:LINE[-LINE]=TEXT`; `FILE:-LINE[-LINE]=TEXT` is on removed lines (the
/// file as it was), as a diff marks them.
pub fn parse_cli_comment(arg: &str, id: String) -> Result<Comment, String> {
    // The `=` after the line: a file's name may hold one (`a=b.txt:3=…`), and the words may too.
    let is_lines = |at: &str| at.rsplit_once(':').is_some_and(|(_, l)| !l.is_empty() && l.bytes().all(|b| b.is_ascii_digit() || b == b'-'));
    let split = arg.match_indices('=').map(|(i, _)| (&arg[..i], &arg[i + 1..])).find(|(at, _)| is_lines(at));
    let (at, text) = split.or_else(|| arg.split_once('=')).ok_or_else(|| format!("“{}”: write FILE:LINE=TEXT or FILE:FIRST-LAST=TEXT", typed(arg)))?;
    let (path, lines) = at.rsplit_once(':').ok_or_else(|| format!("“{at}”: name the line after the file, as in src/a.rs:12"))?;
    let (side, range) = match lines.trim().strip_prefix('-') {
        Some(rest) => (DiffSide::Old, rest),
        None => (DiffSide::New, lines.trim()),
    };
    // Digits only: `u32::from_str` takes a `+` too, which is no side of a diff.
    let number = |s: &str| Some(s.trim()).filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())).and_then(|s| s.parse::<u32>().ok());
    let (start, end) = match range.split_once('-') {
        Some((a, b)) => (number(a), number(b)),
        None => (number(range), number(range)),
    };
    let (Some(start_line), Some(end_line)) = (start, end) else {
        return Err(format!("“{lines}” is not a line number or a range such as 12-14 (-12-14 for removed lines)"));
    };
    let c = Comment { id, path: path.trim().to_string(), start_line, end_line, side, quote: String::new(), text: text.trim().to_string() };
    // Said with what was typed: "--comment the comment is empty" named no comment.
    c.check().map_err(|e| format!("“{}”: {e}", typed(arg)))?;
    Ok(c)
}

/// What was typed, as an error quotes it: its start, when it is long (a 20,000-character comment
/// is not printed back whole).
fn typed(arg: &str) -> String {
    const SHOWN: usize = 60;
    if arg.chars().count() <= SHOWN {
        return arg.to_string();
    }
    format!("{}…", arg.chars().take(SHOWN).collect::<String>())
}

/// The comments of the round a review closes that its checklist shows not met, carried into the
/// next: the person never said they were fine, so a Request changes that does not repeat them
/// still asks for them. One nobody could check ("not verifiable") is the person's to look at,
/// not carried: the agent may have done it already, and the next round's check of untouched
/// files would call it open again for a file it rightly leaves alone. `set`: the comments the
/// round was judged on; `checked`: the review's checklist, paired with `set` by position (as
/// [`settle`] makes it); `new`: the comments sent now (the same words on the same lines are not
/// asked twice).
pub fn still_open(set: &[Comment], checked: &[CriterionResult], new: &[Comment]) -> Vec<Comment> {
    set.iter()
        .zip(checked)
        .filter(|(c, r)| r.id == c.id && r.state == CriterionState::Unmet)
        .map(|(c, _)| c)
        .filter(|c| !new.iter().any(|n| n.criterion() == c.criterion()))
        .cloned()
        .collect()
}

/// The continuation that carries the comments to the agent: each with its place, the quoted
/// lines and the person's words; then the earlier comments still open (see [`still_open`]).
pub fn continuation(comments: &[Comment], carried: &[Comment]) -> String {
    let mut text = String::new();
    if !comments.is_empty() {
        text.push_str("The person reviewed your changes and left comments on specific lines. Address every one of them; each is checked before your work goes back for review.\n");
        listed(&mut text, comments, 0);
    }
    if !carried.is_empty() {
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(
            "Still open from your earlier review: the check did not find these comments of the person's addressed. Address each; they are checked again. Their lines and quoted code are as they were at that review: read the file as it is now.\n",
        );
        listed(&mut text, carried, comments.len());
    }
    text
}

/// Each comment as an item of a numbered list, from `first + 1`.
fn listed(text: &mut String, comments: &[Comment], first: usize) {
    for (i, c) in comments.iter().enumerate().map(|(i, c)| (i + first, c)) {
        let number = format!("{}. ", i + 1);
        // Indented as far as the item's number reaches ("10. " is four), or Markdown ends the
        // list item and the quote falls out of it.
        let pad = " ".repeat(number.len());
        text.push_str(&format!("\n{number}{}", c.location()));
        if c.side == DiffSide::Old {
            text.push_str(" (lines as they were before your change)");
        }
        text.push('\n');
        if !c.quote.trim().is_empty() {
            // Fenced as code: quoted with `>`, a line such as `- apple` read as Markdown (the
            // window shows it so) became a list bullet. The fence is longer than any run of
            // backticks in the code, so the code cannot close it.
            let fence = "`".repeat(3.max(longest_backtick_run(&c.quote) + 1));
            text.push_str(&format!("{pad}{fence}\n"));
            for l in c.quote.lines().take(QUOTED_LINES) {
                text.push_str(&format!("{pad}{l}\n"));
            }
            text.push_str(&format!("{pad}{fence}\n"));
            // The rest is not shown, and the agent is told so: it reads the file for it.
            let more = c.quote.lines().count().saturating_sub(QUOTED_LINES);
            if more > 0 {
                text.push_str(&format!("{pad}(and {more} more line{}, to line {})\n", if more == 1 { "" } else { "s" }, c.end_line));
            }
            text.push('\n');
        }
        // Every line of the person's words in the item, or Markdown ends it at the first break.
        for l in c.text.trim().lines() {
            text.push_str(&if l.trim().is_empty() { "\n".to_string() } else { format!("{pad}{l}\n") });
        }
    }
}

/// The lines of a comment's quote the continuation shows; the file holds the rest.
const QUOTED_LINES: usize = 20;

fn longest_backtick_run(text: &str) -> usize {
    text.split(|c| c != '`').map(str::len).max().unwrap_or(0)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CriterionState {
    Met,
    Unmet,
    Unverifiable,
}

/// How the judge found one criterion.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CriterionResult {
    /// The comment it came from.
    pub id: String,
    /// Where and what: `src/a.rs:12: rename x`.
    pub text: String,
    pub state: CriterionState,
    pub evidence: String,
}

/// A review's remaining items that are not one of its comments: a comment left open is on the
/// checklist with the judge's evidence, and listed again as "remaining" it read as a second thing
/// left to do.
pub fn beyond_checklist<'a>(remaining: &'a [String], checklist: &[CriterionResult]) -> Vec<&'a String> {
    remaining.iter().filter(|r| !checklist.iter().any(|c| c.text == **r)).collect()
}

/// How many comments the evaluator is shown (and may answer for), in order; those after are
/// unverifiable.
pub const SHOWN: usize = 50;

/// The evaluator's word on one comment, by its number in the request (from 1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommentAnswer {
    pub n: usize,
    pub addressed: bool,
    pub evidence: String,
}

/// What needs no model: a comment on a file the run never touched is unmet.
pub fn check_without_model(comments: &[Comment], changed: &[String]) -> Vec<Option<CriterionResult>> {
    comments
        .iter()
        .map(|c| {
            (!changed.contains(&c.path)).then(|| CriterionResult {
                id: c.id.clone(),
                text: c.criterion(),
                state: CriterionState::Unmet,
                evidence: format!("{} was not changed since the comment", c.path),
            })
        })
        .collect()
}

/// The criteria's results once the evaluator has answered: what needs no model stays as it was
/// found; then the evaluator's own answer for the comment (`answers`, by number); the rest are
/// unmet when a verdict of not done names the criterion's file or words among its remaining
/// items, else unverifiable.
pub fn settle(
    comments: &[Comment],
    found: Vec<Option<CriterionResult>>,
    verdict_done: Option<bool>,
    remaining: &[String],
    answers: &[CommentAnswer],
) -> Vec<CriterionResult> {
    comments
        .iter()
        .zip(found)
        .enumerate()
        .map(|(i, (c, f))| {
            f.unwrap_or_else(|| {
                let text = c.criterion();
                if i >= SHOWN {
                    return CriterionResult {
                        id: c.id.clone(),
                        text,
                        state: CriterionState::Unverifiable,
                        evidence: format!("only the first {SHOWN} comments are shown to the evaluator"),
                    };
                }
                // Two answers for one comment: the cautious one holds.
                let mine: Vec<&CommentAnswer> = answers.iter().filter(|a| a.n == i + 1).collect();
                if let Some(a) = mine.iter().find(|a| !a.addressed).or(mine.first()) {
                    let state = if a.addressed { CriterionState::Met } else { CriterionState::Unmet };
                    let evidence = match a.evidence.trim() {
                        "" if a.addressed => "the evaluator found it addressed, without saying where".to_string(),
                        "" => "the evaluator found it not addressed, without saying why".to_string(),
                        said => format!("the evaluator: {said}"),
                    };
                    return CriterionResult { id: c.id.clone(), text, state, evidence };
                }
                let named = remaining
                    .iter()
                    .find(|r| r.contains(&c.path) || significant_words(&c.text).iter().filter(|w| r.to_lowercase().contains(w.as_str())).count() >= 2);
                // A verdict of done on the whole is no check of this comment: ticking it "met"
                // would show a check nobody made (two walkthroughs read it so).
                match (verdict_done, named) {
                    (Some(false), Some(r)) => CriterionResult { id: c.id.clone(), text, state: CriterionState::Unmet, evidence: format!("the evaluator: {r}") },
                    _ => CriterionResult {
                        id: c.id.clone(),
                        text,
                        state: CriterionState::Unverifiable,
                        evidence: "the evaluator gave no word on this comment".into(),
                    },
                }
            })
        })
        .collect()
}

/// A verdict of done that answers one of the person's comments "not addressed" contradicts itself
/// (the evaluator is told the work is done only when every comment is): it is read as not done,
/// the open comments its remaining items (only they: the same ones open twice is a stall), its
/// continuation naming each with the evaluator's reason, its summary saying so. The run reads
/// every verdict through this, so each use agrees: the continuation, a plan's last step and final
/// check, the review's remaining list, the stall count. `criteria` as the evaluator was shown
/// them; an answer for no comment shown counts for nothing, and of two answers for one the
/// cautious holds.
pub fn cautious(mut outcome: crate::judge::completion::EvaluationOutcome, criteria: &[String]) -> crate::judge::completion::EvaluationOutcome {
    if outcome.verdict != crate::domain::Verdict::Done {
        return outcome;
    }
    let open: Vec<(String, String)> = criteria
        .iter()
        .take(SHOWN)
        .enumerate()
        .filter_map(|(i, c)| outcome.comments.iter().find(|a| a.n == i + 1 && !a.addressed).map(|a| (c.clone(), a.evidence.trim().to_string())))
        .collect();
    if open.is_empty() {
        return outcome;
    }
    let said = outcome.summary.trim();
    let of = format!("{} of your review comments", open.len());
    outcome.summary =
        if said.is_empty() { format!("{of} not addressed.") } else { format!("{of} not addressed (the evaluator called the rest done: {said}).") };
    outcome.verdict = crate::domain::Verdict::NotDone;
    outcome.continuation_prompt = crate::judge::prompt::unaddressed_comments(&open);
    outcome.remaining = open.into_iter().map(|(c, _)| c).collect();
    outcome
}

fn significant_words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric() && c != '_').filter(|w| w.len() >= 4).map(|w| w.to_lowercase()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn comment(path: &str, text: &str) -> Comment {
        Comment {
            id: "c1".into(),
            path: path.into(),
            start_line: 3,
            end_line: 4,
            side: DiffSide::New,
            quote: "let x = 1;\nlet y = 2;".into(),
            text: text.into(),
        }
    }

    fn done_answering(answers: Vec<CommentAnswer>) -> crate::judge::completion::EvaluationOutcome {
        crate::judge::completion::EvaluationOutcome {
            verdict: crate::domain::Verdict::Done,
            summary: "all done".into(),
            remaining: vec![],
            continuation_prompt: String::new(),
            stuck_reason: None,
            output_data: None,
            comments: answers,
        }
    }

    fn answer(n: usize, addressed: bool, evidence: &str) -> CommentAnswer {
        CommentAnswer { n, addressed, evidence: evidence.into() }
    }

    #[test]
    fn done_with_a_comment_answered_not_addressed_is_read_as_not_done_naming_it_and_why() {
        let criteria = vec!["src/a.rs:3: rename x".to_string(), "src/b.rs:9: keep the log line".to_string()];
        let read = cautious(done_answering(vec![answer(1, true, "renamed"), answer(2, false, "the log line was deleted")]), &criteria);
        assert_eq!(read.verdict, crate::domain::Verdict::NotDone);
        assert_eq!(read.remaining, vec!["src/b.rs:9: keep the log line".to_string()], "only the open one remains");
        assert!(read.continuation_prompt.contains("src/b.rs:9: keep the log line: the log line was deleted"), "{}", read.continuation_prompt);
        assert!(!read.continuation_prompt.contains("rename x"));
        assert_eq!(read.summary, "1 of your review comments not addressed (the evaluator called the rest done: all done).", "not shown as done");
        // Two answers for one comment: the cautious one holds.
        let read = cautious(done_answering(vec![answer(1, true, ""), answer(1, false, "still x")]), &criteria[..1]);
        assert_eq!(read.verdict, crate::domain::Verdict::NotDone);
    }

    #[test]
    fn answers_for_no_comment_shown_or_all_addressed_leave_done_done() {
        let criteria = vec!["src/a.rs:3: rename x".to_string()];
        let read = cautious(done_answering(vec![answer(1, true, ""), answer(0, false, "?"), answer(2, false, "?")]), &criteria);
        assert_eq!(read, done_answering(vec![answer(1, true, ""), answer(0, false, "?"), answer(2, false, "?")]));
        let many: Vec<String> = (0..SHOWN + 5).map(|i| format!("f.rs:{i}: c")).collect();
        let read = cautious(done_answering(vec![answer(SHOWN + 1, false, "never shown")]), &many);
        assert_eq!(read.verdict, crate::domain::Verdict::Done, "a comment past those shown was never asked about");
        let not_done = crate::judge::completion::EvaluationOutcome { verdict: crate::domain::Verdict::NotDone, ..done_answering(vec![answer(1, false, "x")]) };
        assert_eq!(cautious(not_done.clone(), &criteria), not_done, "a verdict of not done keeps its own words");
    }

    #[test]
    fn the_cli_form_names_a_file_a_line_or_a_range_and_the_text() {
        let c = parse_cli_comment("src/a.rs:12-14=rename x to count", "c1".into()).unwrap();
        assert_eq!((c.path.as_str(), c.start_line, c.end_line, c.text.as_str()), ("src/a.rs", 12, 14, "rename x to count"));
        let one = parse_cli_comment("a.py:7=use a constant", "c2".into()).unwrap();
        assert_eq!((one.start_line, one.end_line), (7, 7));
        assert!(parse_cli_comment("a.py=text", "c".into()).is_err(), "a line is required");
        assert!(parse_cli_comment("a.py:0=text", "c".into()).is_err(), "lines count from 1");
        assert!(parse_cli_comment("a.py:9-3=text", "c".into()).is_err());
        assert!(parse_cli_comment("a.py:3=  ", "c".into()).is_err(), "an empty comment says nothing");
        let odd = parse_cli_comment("conf/a=b.ini:3=set x = 4", "c".into()).unwrap();
        assert_eq!((odd.path.as_str(), odd.start_line, odd.text.as_str()), ("conf/a=b.ini", 3, "set x = 4"), "a name with = in it");
        let eq = parse_cli_comment("a.py:3=use x == 4 here", "c".into()).unwrap();
        assert_eq!(eq.text, "use x == 4 here");
    }

    #[test]
    fn the_cli_form_names_removed_lines_with_a_minus_as_a_diff_does() {
        let old = parse_cli_comment("test_calc.py:-5=put the assertion back", "c".into()).unwrap();
        assert_eq!((old.side, old.start_line, old.end_line), (DiffSide::Old, 5, 5));
        let range = parse_cli_comment("a.py:-5-7=keep these", "c".into()).unwrap();
        assert_eq!((range.side, range.start_line, range.end_line), (DiffSide::Old, 5, 7));
        assert_eq!(parse_cli_comment("a.py:5=x", "c".into()).unwrap().side, DiffSide::New);
        assert!(parse_cli_comment("a.py:+3=text", "c".into()).is_err(), "a sign other than the removed side's is a typo");
        assert!(parse_cli_comment("a.py:3-+4=text", "c".into()).is_err());
    }

    #[test]
    fn a_criterion_on_removed_lines_says_they_are_the_files_lines_as_it_was() {
        let old = parse_cli_comment("test_calc.py:-5=put the assertion back", "c".into()).unwrap();
        assert_eq!(old.criterion(), "test_calc.py:5 (as it was): put the assertion back");
        assert_eq!(parse_cli_comment("a.py:5=x", "c".into()).unwrap().criterion(), "a.py:5: x");
    }

    #[test]
    fn a_comments_length_is_counted_in_characters_not_bytes() {
        let mut c = comment("a.rs", "x");
        c.text = "é".repeat(15_000);
        assert!(c.check().is_ok(), "15,000 characters are within the 20,000 though 30,000 bytes");
        c.text = "x".repeat(20_001);
        assert!(c.check().is_err());
    }

    #[test]
    fn a_long_quote_says_how_much_more_it_covers_and_every_line_of_the_words_stays_in_the_item() {
        let mut c = comment("src/a.rs", "split this function\nand name the parts");
        c.start_line = 10;
        c.end_line = 39;
        c.quote = (10..40).map(|n| format!("line {n}")).collect::<Vec<_>>().join("\n");
        let text = continuation(&[c], &[]);
        assert!(text.contains("   line 29\n   ```\n   (and 10 more lines, to line 39)\n"), "{text}");
        assert!(!text.contains("line 30\n"), "{text}");
        assert!(text.contains("   split this function\n   and name the parts\n"), "{text}");
    }

    #[test]
    fn the_continuation_carries_each_comments_place_quote_and_words() {
        let text = continuation(&[comment("src/a.rs", "name these better")], &[]);
        assert!(text.contains("1. src/a.rs:3-4"));
        assert!(text.contains("   ```\n   let x = 1;\n   let y = 2;\n   ```\n"), "the quoted code as code: {text}");
        assert!(text.contains("   ```\n\n   name these better"), "the quote ends before the person's words: {text}");
    }

    #[test]
    fn the_tenth_comment_is_indented_under_its_wider_number() {
        let cs: Vec<Comment> = (0..10).map(|_| comment("src/a.rs", "name these better")).collect();
        let text = continuation(&cs, &[]);
        assert!(text.contains("\n10. src/a.rs:3-4\n    ```\n    let x = 1;\n"), "{text}");
        assert!(text.contains("\n9. src/a.rs:3-4\n   ```\n"), "{text}");
    }

    #[test]
    fn comments_the_checklist_does_not_show_met_go_on_numbered_after_the_new_ones() {
        let (mut a, mut b, mut c) = (comment("src/a.rs", "rename"), comment("src/b.rs", "split"), comment("src/c.rs", "test it"));
        (a.id, b.id, c.id) = ("a".into(), "b".into(), "c".into());
        let result = |id: &str, state| CriterionResult { id: id.into(), text: String::new(), state, evidence: String::new() };
        let checked = [result("a", CriterionState::Met), result("b", CriterionState::Unmet), result("c", CriterionState::Unverifiable)];
        let set = [a.clone(), b.clone(), c.clone()];
        assert_eq!(still_open(&set, &checked, &[]), vec![b.clone()], "met is done, one nobody could check is the person's; unmet is still asked");
        let mut again = b.clone();
        again.id = "new".into();
        assert_eq!(still_open(&set, &checked, &[again.clone()]), vec![] as Vec<Comment>, "the same words on the same lines are not asked twice");
        let c_unmet = [result("a", CriterionState::Met), result("b", CriterionState::Met), result("c", CriterionState::Unmet)];
        assert_eq!(still_open(&set, &c_unmet, &[]), vec![c.clone()]);
        assert_eq!(still_open(&set, &[], &[]), vec![], "a round with no checklist carries nothing");
        let text = continuation(&[again], &[c]);
        assert!(text.contains("1. src/b.rs:3-4") && text.contains("Still open from your earlier review") && text.contains("\n2. src/c.rs:3-4"), "{text}");
        let only = continuation(&[], &[b]);
        assert!(only.starts_with("Still open from your earlier review") && only.contains("1. src/b.rs:3-4"), "{only}");
    }

    #[test]
    fn a_comment_left_open_is_not_listed_again_among_what_remains() {
        let open = CriterionResult { id: "a".into(), text: "notes.md:1: say pear".into(), state: CriterionState::Unmet, evidence: String::new() };
        let remaining = ["notes.md:1: say pear".to_string(), "add a test".to_string()];
        assert_eq!(beyond_checklist(&remaining, &[open]), vec![&remaining[1]]);
        assert_eq!(beyond_checklist(&remaining, &[]).len(), 2, "without a checklist everything left is listed");
    }

    #[test]
    fn quoted_code_with_backticks_or_markdown_stays_code() {
        let mut c = comment("notes.md", "say pear");
        c.quote = "- apple\n```rust\n".into();
        let text = continuation(&[c], &[]);
        assert!(text.contains("   ````\n   - apple\n   ```rust\n   ````\n"), "a fence longer than any in the code: {text}");
    }

    #[test]
    fn a_comment_on_a_file_the_run_never_touched_is_unmet_without_asking_a_model() {
        let cs = [comment("src/a.rs", "rename"), comment("src/b.rs", "rename")];
        let found = check_without_model(&cs, &["src/b.rs".into()]);
        assert_eq!(found[0].as_ref().map(|r| r.state), Some(CriterionState::Unmet));
        assert!(found[1].is_none(), "a touched file is for the evaluator to judge");
    }

    #[test]
    fn a_comment_the_evaluator_gave_no_word_on_is_not_ticked_met_on_the_overall_verdict() {
        let cs = [comment("src/a.rs", "handle the empty input"), comment("src/b.rs", "add a docstring")];
        let done = settle(&cs, vec![None, None], Some(true), &[], &[]);
        assert!(done.iter().all(|r| r.state == CriterionState::Unverifiable), "nobody checked it: {done:?}");
        assert_eq!(done[0].evidence, "the evaluator gave no word on this comment");
        let not = settle(&cs, vec![None, None], Some(false), &["src/a.rs still panics on empty input".into()], &[]);
        assert_eq!(not[0].state, CriterionState::Unmet);
        assert_eq!(not[1].state, CriterionState::Unverifiable);
    }

    #[test]
    fn each_comment_follows_the_evaluators_own_answer_for_it() {
        let cs = [comment("src/a.rs", "handle the empty input"), comment("src/b.rs", "add a docstring"), comment("src/c.rs", "untouched")];
        let answers = [
            CommentAnswer { n: 2, addressed: false, evidence: "src/b.rs has no docstring".into() },
            CommentAnswer { n: 1, addressed: true, evidence: "src/a.rs returns early on empty input".into() },
            CommentAnswer { n: 3, addressed: true, evidence: "it says so".into() },
            CommentAnswer { n: 9, addressed: false, evidence: "no such comment".into() },
        ];
        let untouched = check_without_model(&cs, &["src/a.rs".into(), "src/b.rs".into()]);
        let r = settle(&cs, untouched, Some(true), &[], &answers);
        assert_eq!((r[0].state, r[0].evidence.as_str()), (CriterionState::Met, "the evaluator: src/a.rs returns early on empty input"));
        assert_eq!(
            (r[1].state, r[1].evidence.as_str()),
            (CriterionState::Unmet, "the evaluator: src/b.rs has no docstring"),
            "a comment the evaluator finds unaddressed is unmet, whatever its overall verdict"
        );
        assert_eq!(r[2].state, CriterionState::Unmet, "what needs no model is not overruled: src/c.rs was never touched");
    }

    #[test]
    fn two_answers_for_one_comment_count_as_the_cautious_one_and_comments_past_those_shown_are_unverifiable() {
        let cs: Vec<Comment> = (0..SHOWN + 1).map(|i| comment("src/a.rs", &format!("change {i}"))).collect();
        let answers = [
            CommentAnswer { n: 1, addressed: true, evidence: "done".into() },
            CommentAnswer { n: 1, addressed: false, evidence: String::new() },
            CommentAnswer { n: SHOWN + 1, addressed: true, evidence: "made up".into() },
        ];
        let r = settle(&cs, vec![None; SHOWN + 1], Some(true), &[], &answers);
        assert_eq!((r[0].state, r[0].evidence.as_str()), (CriterionState::Unmet, "the evaluator found it not addressed, without saying why"));
        assert_eq!(r[SHOWN].state, CriterionState::Unverifiable, "a comment the evaluator never saw is not met by a number it made up");
    }

    /// A comment the CLI cannot take is named as typed, with what is wrong in words.
    #[test]
    fn a_comment_that_cannot_be_taken_says_which_and_why() {
        assert_eq!(parse_cli_comment("n.txt:3=  ", String::new()).unwrap_err(), "“n.txt:3=  ”: the comment is empty: say what should change");
        assert_eq!(parse_cli_comment("n.txt:0=x", String::new()).unwrap_err(), "“n.txt:0=x”: line 0 is no line of a file: lines count from 1");
        assert_eq!(parse_cli_comment("n.txt:5-2=x", String::new()).unwrap_err(), "“n.txt:5-2=x”: lines 5-2 run backwards: name the first line first");
        let long = format!("n.txt:1={}", "x".repeat(20_001));
        let said = parse_cli_comment(&long, String::new()).unwrap_err();
        assert!(said.len() < 200 && said.ends_with("…”: a comment is at most 20,000 characters"), "{said}");
    }
}
