//! Watching one step's output as it streams, for the two ways a weak or misconfigured local model
//! runs away inside a single answer: repeating itself (the same line, or the same block of lines,
//! over and over) and leaking the server's chat-template tokens (a base model, or a template that
//! does not match the model). Pure and cheap: it looks at completed lines only, and at most the
//! last few hundred of them, so it can run on every batch of streamed text.

use std::collections::HashMap;

/// Role markers of the common chat templates. A model that writes them is not being talked to
/// through the template it was trained on.
pub const TEMPLATE_MARKERS: &[&str] = &[
    "<|im_start|>",
    "<|im_end|>",
    "<start_of_turn>",
    "<end_of_turn>",
    "[INST]",
    "[/INST]",
    "<|eot_id|>",
    "<|start_header_id|>",
    "<|end_header_id|>",
    "<|endoftext|>",
    "<|assistant|>",
    "<|user|>",
];

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
}

impl Default for RunawayConfig {
    fn default() -> Self {
        RunawayConfig { repeats: 8, max_block: 6 }
    }
}

/// How long a run of text without a line break may grow before it is checked for a repeating
/// unit inside the line.
const LONG_LINE: usize = 2_000;

#[derive(Debug, Default)]
pub struct RunawayWatch {
    cfg: RunawayConfig,
    /// Completed, trimmed, non-empty lines; only the tail is kept.
    lines: Vec<String>,
    /// The line still being written.
    partial: String,
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
        RunawayWatch { cfg: RunawayConfig { repeats: cfg.repeats.max(2), max_block: cfg.max_block.max(1) }, ..Default::default() }
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
            if let Some(r) = self.line(line) {
                self.found = Some(r.clone());
                return Some(r);
            }
        }
        if self.partial.len() > LONG_LINE {
            if let Some(r) = repeating_unit(&self.partial, self.cfg.repeats) {
                self.found = Some(r.clone());
                return Some(r);
            }
            // Keep the tail only: the check needs no more.
            let cut = self.partial.len() - LONG_LINE / 2;
            let cut = (cut..self.partial.len()).find(|i| self.partial.is_char_boundary(*i)).unwrap_or(0);
            self.partial.drain(..cut);
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
            return None;
        }
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
            let need = b * k;
            if self.lines.len() < need {
                break;
            }
            let tail = &self.lines[self.lines.len() - need..];
            let block = &tail[..b];
            if block.iter().map(|l| l.chars().filter(|c| c.is_alphanumeric()).count()).sum::<usize>() < 8 {
                continue;
            }
            if tail.chunks(b).all(|c| c == block) {
                return Some(Runaway::Repeating { text: block.join("\n"), times: k });
            }
        }
        None
    }
}

/// A long run of text without a line break that ends in the same unit `repeats` times.
fn repeating_unit(text: &str, repeats: usize) -> Option<Runaway> {
    let bytes = text.as_bytes();
    for p in 4..=200.min(bytes.len() / repeats) {
        let span = p * repeats;
        let tail = &bytes[bytes.len() - span..];
        if tail.chunks(p).all(|c| c == &tail[..p]) {
            let unit = String::from_utf8_lossy(&tail[..p]).into_owned();
            if unit.chars().filter(|c| c.is_alphanumeric()).count() >= 3 {
                return Some(Runaway::Repeating { text: unit, times: repeats });
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
    fn ordinary_code_and_prose_are_left_alone() {
        let code = "fn main() {\n    println!(\"hi\");\n}\n}\n}\n---\n---\n---\n".repeat(3)
            + &(0..200).map(|i| format!("line {i} of a long but varied answer\n")).collect::<String>()
            + "A table:\n| a | b |\n|---|---|\n| 1 | 2 |\n| 1 | 2 |\n| 1 | 2 |\n"
            + "The template uses <|im_start|> to begin a turn.\n";
        assert_eq!(feed(&code), None, "closing braces, rules, a few equal rows and one mention of a marker are normal");
    }
}
