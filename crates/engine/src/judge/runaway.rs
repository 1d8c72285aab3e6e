//! Watching one step's output as it streams, for the two ways a weak or misconfigured local model
//! runs away inside a single answer: repeating itself (the same line, or the same block of lines,
//! over and over) and leaking the server's chat-template tokens (a base model, or a template that
//! does not match the model). Pure and cheap: it looks at completed lines only, and at most the
//! last few hundred of them, so it can run on every batch of streamed text.

use std::collections::HashMap;

pub use crate::provider::TEMPLATE_MARKERS;

/// What was found in the step's output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Runaway {
    /// The quoted text repeated at least the threshold number of times.
    Repeating { text: String, times: usize },
    /// The chat-template markers seen.
    TemplateTokens { markers: Vec<String> },
}

#[derive(Debug, Clone, Copy)]
pub struct RunawayConfig {
    /// A line or block of lines repeated this many times in a row stops the step.
    pub repeats: usize,
    /// The longest block (in lines) looked for.
    pub max_block: usize,
    /// How many characters in a row a short unit ("=", "1.", a space) must fill inside a line.
    pub short_span: usize,
}

impl RunawayConfig {
    /// For an answer that must be one JSON object (a verdict, a plan): no string in it is a
    /// hundred characters of one short unit, so it is stopped sooner.
    pub fn json() -> RunawayConfig {
        RunawayConfig { short_span: 120, ..Default::default() }
    }
}

impl Default for RunawayConfig {
    fn default() -> Self {
        RunawayConfig { repeats: 8, max_block: 6, short_span: SHORT_UNIT_SPAN }
    }
}

/// How long a run of text without a line break may grow before it is checked for a repeating
/// unit inside the line.
const LONG_LINE: usize = 2_000;

/// How much a line must grow between two checks for a repeating unit inside it.
const CHECK_EVERY: usize = 32;

/// A unit with few letters or digits in it ("#", "}", "---", a space) turns up a few times in a
/// row in ordinary text, so it counts only when repeated this many times more than a unit with
/// words: a wall of 32 "#" lines is a model stuck, a dozen closing braces is code.
const SHORT_UNIT_FACTOR: usize = 4;

/// Inside one line, a short unit must fill this many characters in a row: a heading rule of 120
/// "=" is normal, a thousand is not.
const SHORT_UNIT_SPAN: usize = 1_000;

/// How a repeated unit that is only whitespace is quoted: the person cannot read blank space.
pub const WHITESPACE: &str = "(blank space)";

#[derive(Debug, Default)]
pub struct RunawayWatch {
    cfg: RunawayConfig,
    /// Completed, trimmed, non-empty lines; only the tail is kept.
    lines: Vec<String>,
    /// The line still being written.
    partial: String,
    /// Blank lines in a row since the last line with something in it.
    blank_lines: usize,
    /// How long the line being written was when it was last checked for a repeating unit.
    checked: usize,
    /// Every line seen in this step and how often: a line that keeps coming back between others
    /// is repetition too.
    counts: HashMap<String, usize>,
    markers: Vec<String>,
    /// Markers seen so far in this answer, counted one by one.
    marker_count: usize,
    found: Option<Runaway>,
}

impl RunawayWatch {
    pub fn new(cfg: RunawayConfig) -> RunawayWatch {
        RunawayWatch {
            cfg: RunawayConfig { repeats: cfg.repeats.max(2), max_block: cfg.max_block.max(1), short_span: cfg.short_span.max(16) },
            ..Default::default()
        }
    }

    /// Feeds streamed text; returns what ran away, once, as soon as it is clear.
    pub fn push(&mut self, text: &str) -> Option<Runaway> {
        if self.found.is_some() {
            return None;
        }
        self.partial.push_str(text);
        while let Some(at) = self.partial.find('\n') {
            let line: String = self.partial[..at].trim().to_string();
            self.partial.drain(..=at);
            self.checked = 0;
            if let Some(r) = self.line(line) {
                self.found = Some(r.clone());
                return Some(r);
            }
        }
        // Checked as the line grows (every few dozen characters, so the cost per streamed piece
        // stays flat), so a sentence repeating inside one long line stops after a few hundred
        // characters; a mismatch in the first compared unit ends each try at once.
        if self.partial.len() >= self.checked + CHECK_EVERY {
            self.checked = self.partial.len();
            if let Some(r) = repeating_unit(&self.partial, self.cfg.repeats, self.cfg.short_span) {
                self.found = Some(r.clone());
                return Some(r);
            }
        }
        if self.partial.len() > LONG_LINE {
            // Keep the tail only: the check needs no more.
            let cut = self.partial.len() - LONG_LINE / 2;
            let cut = (cut..self.partial.len()).find(|i| self.partial.is_char_boundary(*i)).unwrap_or(0);
            self.partial.drain(..cut);
            self.checked = self.partial.len();
        }
        None
    }

    fn line(&mut self, line: String) -> Option<Runaway> {
        for m in TEMPLATE_MARKERS {
            if line.contains(m) && !self.markers.iter().any(|x| x == m) {
                self.markers.push(m.to_string());
            }
        }
        // Two markers (an end and a start of a turn, say), or a marker that opens a role's turn,
        // is a template leak, not a mention.
        let here = TEMPLATE_MARKERS.iter().map(|m| line.matches(m).count()).sum::<usize>();
        self.marker_count += here;
        let opens_a_turn = TEMPLATE_MARKERS.iter().any(|m| {
            line.split(m).skip(1).any(|after| ["user", "assistant", "model", "system"].iter().any(|r| after.trim_start().to_ascii_lowercase().starts_with(r)))
        });
        if self.marker_count >= 2 || opens_a_turn {
            return Some(Runaway::TemplateTokens { markers: self.markers.clone() });
        }
        if line.is_empty() {
            self.blank_lines += 1;
            let limit = self.cfg.repeats * SHORT_UNIT_FACTOR;
            return (self.blank_lines >= limit).then(|| Runaway::Repeating { text: WHITESPACE.into(), times: limit });
        }
        self.blank_lines = 0;
        let n = self.counts.entry(line.clone()).or_default();
        *n += 1;
        // Short lines ("}", "---") repeat in normal text; only a line with words counts alone.
        if *n >= self.cfg.repeats * 2 && line.chars().filter(|c| c.is_alphanumeric()).count() >= 8 {
            return Some(Runaway::Repeating { text: line.clone(), times: *n });
        }
        self.lines.push(line);
        if self.lines.len() > 512 {
            self.lines.drain(..256);
        }
        self.repeated_block()
    }

    /// The last lines are the same block of `b` lines, `repeats` times in a row.
    fn repeated_block(&self) -> Option<Runaway> {
        let k = self.cfg.repeats;
        for b in 1..=self.cfg.max_block {
            if self.lines.len() < b {
                break;
            }
            let block = &self.lines[self.lines.len() - b..];
            let times = if block.iter().map(|l| alphanumerics(l)).sum::<usize>() < 8 { k * SHORT_UNIT_FACTOR } else { k };
            let need = b * times;
            if self.lines.len() < need {
                continue;
            }
            let tail = &self.lines[self.lines.len() - need..];
            if tail.chunks(b).all(|c| c == block) {
                return Some(Runaway::Repeating { text: block.join("\n"), times });
            }
        }
        None
    }
}

fn alphanumerics(text: &str) -> usize {
    text.chars().filter(|c| c.is_alphanumeric()).count()
}

/// A long run of text without a line break that ends in the same unit: `repeats` times for a
/// unit with words in it, or over `short_span` characters for a short one ("=", "# ", spaces).
fn repeating_unit(text: &str, repeats: usize, short_span: usize) -> Option<Runaway> {
    let bytes = text.as_bytes();
    for p in 1..=200.min(bytes.len() / repeats) {
        let span = p * repeats;
        let tail = &bytes[bytes.len() - span..];
        if tail.chunks(p).all(|c| c == &tail[..p]) {
            let unit = String::from_utf8_lossy(&tail[..p]).into_owned();
            // A unit of one character over and over ("0000…" in a hash) is judged by span below.
            let varied = unit.chars().filter(|c| c.is_alphanumeric()).collect::<std::collections::HashSet<_>>().len() >= 2;
            if p >= 4 && alphanumerics(&unit) >= 3 && varied {
                return Some(Runaway::Repeating { text: unit, times: repeats });
            }
            let times = short_span.div_ceil(p);
            if bytes.len() >= p * times {
                let tail = &bytes[bytes.len() - p * times..];
                if tail.chunks(p).all(|c| c == &tail[..p]) {
                    let text = if unit.trim().is_empty() { WHITESPACE.to_string() } else { unit };
                    return Some(Runaway::Repeating { text, times });
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(text: &str) -> Option<Runaway> {
        let mut w = RunawayWatch::new(RunawayConfig::default());
        // In small pieces, as a stream arrives.
        text.as_bytes().chunks(7).find_map(|c| w.push(&String::from_utf8_lossy(c)))
    }

    #[test]
    fn the_same_line_eight_times_in_a_row_is_repetition() {
        let text = "write a file named hello.txt that contains the word hi\n".repeat(9);
        assert_eq!(feed(&text), Some(Runaway::Repeating { text: "write a file named hello.txt that contains the word hi".into(), times: 8 }));
    }

    #[test]
    fn a_repeated_block_of_lines_is_repetition() {
        let text = "Step one: read the file.\nStep two: write it.\n".repeat(9);
        assert!(matches!(feed(&text), Some(Runaway::Repeating { text, .. }) if text == "Step one: read the file.\nStep two: write it."));
    }

    #[test]
    fn repetition_without_line_breaks_is_caught_too() {
        let text = "hi hi hello there ".repeat(400);
        assert!(matches!(feed(&text), Some(Runaway::Repeating { .. })));
    }

    #[test]
    fn a_sentence_repeating_inside_one_line_stops_within_a_few_hundred_characters() {
        // SmolLM2 summarising notes: one paragraph that never breaks its line.
        let mut w = RunawayWatch::new(RunawayConfig::default());
        let text = "Summary.md can be written in various ways.".to_string() + &" It can be written to be edited by user.".repeat(40);
        let at = text.as_bytes().chunks(5).position(|c| w.push(&String::from_utf8_lossy(c)).is_some()).expect("found") * 5;
        assert!(at < 600, "found after {at} characters");
    }

    #[test]
    fn chat_template_tokens_are_named() {
        let text = "Sure.<|im_end|>\n<|im_start|>user\nwrite a file<|im_end|>\n";
        assert_eq!(feed(text), Some(Runaway::TemplateTokens { markers: vec!["<|im_end|>".into(), "<|im_start|>".into()] }));
    }

    #[test]
    fn one_marker_that_opens_a_turn_is_enough() {
        assert!(matches!(feed("Here you go.\n<start_of_turn>user\n"), Some(Runaway::TemplateTokens { .. })));
        assert!(matches!(feed("<|im_end|><|im_start|>assistant hi\n"), Some(Runaway::TemplateTokens { .. })));
    }

    #[test]
    fn a_wall_of_one_symbol_per_line_is_repetition() {
        // SmolLM2 asked to write a file: "#" line after line until the window was full.
        let text = "Here is the file:\n".to_string() + &"#\n".repeat(40);
        assert_eq!(feed(&text), Some(Runaway::Repeating { text: "#".into(), times: 32 }));
        let spaced = "#\n\n".repeat(40);
        assert!(matches!(feed(&spaced), Some(Runaway::Repeating { text, .. }) if text == "#"), "blank lines between do not hide it");
    }

    #[test]
    fn a_long_run_of_one_character_is_repetition() {
        assert_eq!(feed(&("Result:\n".to_string() + &"=".repeat(3000))), Some(Runaway::Repeating { text: "=".into(), times: 1000 }));
        assert!(matches!(feed(&"# ".repeat(1500)), Some(Runaway::Repeating { text, .. }) if text == "# " || text == " #"));
    }

    #[test]
    fn a_json_answer_stops_at_a_short_unit_sooner() {
        // SmolLM2's verdict: `"action": "1.1.1.1.…"` to the output limit.
        let text = "{\"announced_action_not_taken\": true, \"action\": \"".to_string() + &"1.".repeat(500);
        let mut w = RunawayWatch::new(RunawayConfig::json());
        let at = text.as_bytes().chunks(3).position(|c| w.push(&String::from_utf8_lossy(c)).is_some()).expect("found") * 3;
        assert!(at < 250, "found after {at} characters");
        let mut ordinary = RunawayWatch::new(RunawayConfig::json());
        assert_eq!(ordinary.push(r#"{"done": true, "summary": "Wrote v1.1.1 of the notes ==== and 0x0000000000000000 as the seed.", "remaining": []}"#), None);
    }

    #[test]
    fn nothing_but_whitespace_is_repetition() {
        assert_eq!(feed(&"\n".repeat(200)), Some(Runaway::Repeating { text: WHITESPACE.into(), times: 32 }));
        assert_eq!(feed(&("Sure.".to_string() + &" ".repeat(3000))), Some(Runaway::Repeating { text: WHITESPACE.into(), times: 1000 }));
        assert_eq!(feed(&" \n\t\n".repeat(100)), Some(Runaway::Repeating { text: WHITESPACE.into(), times: 32 }));
    }

    #[test]
    fn a_block_of_symbol_lines_repeated_is_repetition() {
        let text = "+--+\n|  |\n".repeat(40);
        assert!(matches!(feed(&text), Some(Runaway::Repeating { text, .. }) if text == "+--+\n|  |"));
    }

    #[test]
    fn ordinary_code_and_prose_are_left_alone() {
        let code = "fn main() {\n    println!(\"hi\");\n}\n}\n}\n---\n---\n---\n".repeat(3)
            + &(0..200).map(|i| format!("line {i} of a long but varied answer\n")).collect::<String>()
            + "A table:\n| a | b |\n|---|---|\n| 1 | 2 |\n| 1 | 2 |\n| 1 | 2 |\n"
            + "The template uses <|im_start|> to begin a turn.\n"
            // Deep nesting closes with a dozen braces; a heading rule is a line of "=" or "#".
            + &"}\n".repeat(12)
            + &"=".repeat(120) + "\n" + &"#".repeat(80) + "\n\n\n\n\n\n\n\n\n\n"
            + "| 0 | 0 |\n".repeat(20).as_str()
            + "The zero hash is 0x" + &"0".repeat(64) + " and nothing else.\n"
            + "end\n";
        assert_eq!(feed(&code), None, "closing braces, rules, a few equal rows and one mention of a marker are normal");
    }
}
