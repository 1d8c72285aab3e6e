//! Whether an agent's words say it finished ("Done!", "The task is complete."): a claim made in
//! its reply rather than with the `complete_task` tool, as agents that do not know the tool (or
//! skip it) make it. The loop counts one the evidence then refused as a false claim, as it counts
//! a refused `complete_task`; the window names it at the review (`saysDone` in the UI, the same
//! rule). Pure.

use std::sync::LazyLock;

use regex::Regex;

static DONE_SENTENCE: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    [
        // "Done!", "All done.", "Finished", "Task complete."
        r"^(all |everything('s| is) )?(done|finished|complete|completed)$",
        r"^(the |this |your )?(task|work|job|change|changes)( is| has been| was| are| have been)? (now )?(done|complete|completed|finished)$",
        // "The task is done.", "It's finished now", "Everything is complete"
        r"^(it|that|everything|all|the (task|work|job|file|files|change|changes))( is|'s| has been| was| are| have been) (now )?(all )?(done|complete|completed|finished)( now)?$",
        // "I have completed the task", "I've finished everything"
        r"^i( have|'ve)? (now )?(finished|completed|done)( (the|this|your) (task|work|job|request)| everything| it| all of it)?( now)?$",
    ]
    .iter()
    .map(|p| Regex::new(p).expect("a fixed pattern"))
    .collect()
});

static NEGATED: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\bnot\b|n't|\bnever\b|\balmost\b|\bnearly\b|\byet\b").expect("a fixed pattern"));
static OPENER: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^(great|ok|okay|alright|perfect|there)[,!]?\s+").expect("a fixed pattern"));

/// Whether `text` reads as the agent saying it finished, judged on its last few sentences, and
/// never when they are negated ("not done yet", "almost done").
pub fn says_done(text: &str) -> bool {
    let lower: String = text.to_lowercase().chars().filter(|c| !matches!(c, '*' | '_' | '`' | '#' | '>')).collect();
    let sentences: Vec<String> = lower
        .lines()
        .flat_map(split_sentences)
        .map(|s| {
            s.trim()
                .trim_end_matches(|c: char| ".!?:;,".contains(c) || c.is_whitespace())
                .trim_start_matches(|c: char| c == '-' || c == '•' || c.is_whitespace())
                .to_string()
        })
        .filter(|s| !s.is_empty())
        .collect();
    let last = &sentences[sentences.len().saturating_sub(3)..];
    last.iter().any(|s| !NEGATED.is_match(s) && DONE_SENTENCE.iter().any(|re| re.is_match(&OPENER.replace(s, ""))))
}

/// A line's sentences: each ends at `.`, `!` or `?` followed by a space.
fn split_sentences(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut chars = line.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if matches!(c, '.' | '!' | '?') && chars.peek().is_some_and(|(_, n)| n.is_whitespace()) {
            out.push(&line[start..=i]);
            start = i + 1;
        }
    }
    out.push(&line[start..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_done_in_the_last_sentences_is_a_claim_and_a_negated_or_reported_one_is_not() {
        for yes in [
            "Done!",
            "All done.",
            "The task is complete.",
            "I have completed the task.",
            "Wrote it. Everything is done now.",
            "**Done.**",
            "Great, the file is done!",
        ] {
            assert!(says_done(yes), "{yes}");
        }
        assert!(says_done("Done! greet.txt has a warm, friendly greeting and all checks pass."), "a done followed by what it did");
        for no in [
            "Not done yet.",
            "I haven't finished.",
            "Here is what I have done so far: read a.txt.",
            "Let me know when you're done.",
            "The task isn't complete.",
            "",
            "Almost done.",
        ] {
            assert!(!says_done(no), "{no}");
        }
        assert!(!says_done("Done.\nThen I read a.txt.\nThen b.txt.\nNow c.txt is next."), "only the last three sentences count");
    }
}
