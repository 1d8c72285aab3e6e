//! Stuck detection after every step, with OpenHands' patterns. Pure: it reads the run's step
//! records and names the pattern that fired, if any.

use serde::{Deserialize, Serialize};

use crate::domain::{Stuck, StuckPattern};

/// What one step did, reduced to what the patterns compare.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
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

fn stuck(pattern: StuckPattern, repeated: String) -> Option<Stuck> {
    Some(Stuck { pattern, repeated })
}

fn actions_text(s: &StepRecord) -> String {
    let mut t = s.actions.join(", ");
    if t.chars().count() > 300 {
        t = t.chars().take(300).collect::<String>() + "…";
    }
    t
}

/// The pattern the last steps form, if any, with what repeated.
pub fn detect(steps: &[StepRecord]) -> Option<Stuck> {
    let n = steps.len();
    // Two compactions with no step between, also when the step that followed them just ended.
    if steps[n.saturating_sub(3)..].windows(2).any(|w| w[0].compaction && w[1].compaction) {
        return stuck(StuckPattern::RepeatedCompaction, String::new());
    }
    let real: Vec<&StepRecord> = steps.iter().filter(|s| !s.compaction).collect();
    let m = real.len();
    if m >= 3 && real[m - 3..].iter().all(|s| s.is_empty_response()) {
        return stuck(StuckPattern::EmptyResponses, String::new());
    }
    if m >= 3 {
        let w = &real[m - 3..];
        let a = &w[0];
        if !a.actions.is_empty() && w.iter().all(|s| s.actions == a.actions && !s.observations.is_empty() && s.observations.iter().all(|(_, err)| *err)) {
            return stuck(StuckPattern::SameActionError, actions_text(a));
        }
        if a.actions.is_empty() && !a.text.trim().is_empty() && w.iter().all(|s| s.actions.is_empty() && s.text == a.text) {
            return stuck(StuckPattern::IdenticalMessages, a.text.chars().take(300).collect());
        }
    }
    if m >= 4 {
        let w = &real[m - 4..];
        if !w[0].actions.is_empty() && w.iter().all(|s| s.key() == w[0].key()) {
            return stuck(StuckPattern::SameActionSameObservation, actions_text(w[0]));
        }
    }
    if m >= 6 {
        let w = &real[m - 6..];
        let alternates = (2..6).all(|i| w[i].key() == w[i - 2].key()) && w[0].key() != w[1].key() && !w[0].actions.is_empty() && !w[1].actions.is_empty();
        if alternates {
            return stuck(StuckPattern::Alternation, format!("{} / {}", actions_text(w[0]), actions_text(w[1])));
        }
    }
    None
}
