//! Stuck detection after every step, with OpenHands' patterns. Pure: it reads the run's step
//! records and names the pattern that fired, if any.

use serde::Serialize;

/// What one step did, reduced to what the patterns compare.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct StepRecord {
    /// Tool calls as `name(arguments)`, in order.
    pub actions: Vec<String>,
    /// Their results, in order, with whether each was an error.
    pub observations: Vec<(String, bool)>,
    /// The agent's text.
    pub text: String,
    /// A compaction happened instead of a normal step.
    pub compaction: bool,
}

impl StepRecord {
    fn is_empty_response(&self) -> bool {
        !self.compaction && self.actions.is_empty() && self.text.trim().is_empty()
    }
    fn key(&self) -> (&[String], &[(String, bool)]) {
        (&self.actions, &self.observations)
    }
}

pub const SAME_ACTION_SAME_OBSERVATION: &str = "the same action with the same result 4 times";
pub const SAME_ACTION_ERROR: &str = "the same action failing 3 times";
pub const IDENTICAL_MESSAGES: &str = "the same message 3 times in a row";
pub const ALTERNATION: &str = "alternating between two actions for 6 steps";
pub const REPEATED_COMPACTION: &str = "compacting again with nothing in between";
pub const EMPTY_RESPONSES: &str = "3 empty responses in a row";

/// The pattern the last steps form, if any.
pub fn detect(steps: &[StepRecord]) -> Option<&'static str> {
    let n = steps.len();
    // Two compactions with no step between, also when the step that followed them just ended.
    if steps[n.saturating_sub(3)..].windows(2).any(|w| w[0].compaction && w[1].compaction) {
        return Some(REPEATED_COMPACTION);
    }
    let real: Vec<&StepRecord> = steps.iter().filter(|s| !s.compaction).collect();
    let m = real.len();
    if m >= 3 && real[m - 3..].iter().all(|s| s.is_empty_response()) {
        return Some(EMPTY_RESPONSES);
    }
    if m >= 3 {
        let w = &real[m - 3..];
        let a = &w[0];
        if !a.actions.is_empty() && w.iter().all(|s| s.actions == a.actions && !s.observations.is_empty() && s.observations.iter().all(|(_, err)| *err)) {
            return Some(SAME_ACTION_ERROR);
        }
        if a.actions.is_empty() && !a.text.trim().is_empty() && w.iter().all(|s| s.actions.is_empty() && s.text == a.text) {
            return Some(IDENTICAL_MESSAGES);
        }
    }
    if m >= 4 {
        let w = &real[m - 4..];
        if !w[0].actions.is_empty() && w.iter().all(|s| s.key() == w[0].key()) {
            return Some(SAME_ACTION_SAME_OBSERVATION);
        }
    }
    if m >= 6 {
        let w = &real[m - 6..];
        let alternates = (2..6).all(|i| w[i].key() == w[i - 2].key()) && w[0].key() != w[1].key() && !w[0].actions.is_empty() && !w[1].actions.is_empty();
        if alternates {
            return Some(ALTERNATION);
        }
    }
    None
}
