//! What the person changed in a plan at its go-ahead. Their edits are their later word on the
//! task: a step they removed is not work left undone, and the agent, the evaluator and the
//! manager are told so beside the request as first typed. Pure: steps in, words out.

use serde::Serialize;

use crate::domain::PlanStep;

/// The steps the person removed, added and changed, by title, in the plan's order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PlanEdits {
    pub removed: Vec<String>,
    pub added: Vec<String>,
    /// Kept under the same title, with other instructions or criteria.
    pub changed: Vec<String>,
}

impl PlanEdits {
    /// The edits from the plan as made to the plan as approved; `None` when the steps say the
    /// same (steps only moved are no change of what is to be done).
    pub fn between(before: &[PlanStep], after: &[PlanStep]) -> Option<PlanEdits> {
        let mut unmatched: Vec<Option<&PlanStep>> = after.iter().map(Some).collect();
        let mut edits = PlanEdits::default();
        for old in before {
            let same_title = unmatched.iter_mut().find(|s| s.is_some_and(|s| s.title.trim() == old.title.trim()));
            match same_title.and_then(Option::take) {
                Some(new) if new.instructions.trim() != old.instructions.trim() || new.criteria != old.criteria => edits.changed.push(new.title.clone()),
                Some(_) => {}
                None => edits.removed.push(old.title.clone()),
            }
        }
        edits.added = unmatched.into_iter().flatten().map(|s| s.title.clone()).collect();
        (edits != PlanEdits::default()).then_some(edits)
    }

    /// For the person: "removed "Write c.txt"; added "Write e.txt"".
    pub fn summary(&self) -> String {
        [("removed", &self.removed), ("added", &self.added), ("changed", &self.changed)]
            .into_iter()
            .filter(|(_, titles)| !titles.is_empty())
            .map(|(what, titles)| format!("{what} {}", quoted(titles)))
            .collect::<Vec<_>>()
            .join("; ")
    }

    /// For the models, beside the person's request: what the person decided since they typed it.
    pub fn words(&self) -> String {
        let mut said = String::from(
            "The person reviewed the plan before it ran and edited it; where the request above and these edits differ, the edits are their later word (feedback or messages they sent after the plan come later still, and may ask again for what they removed).",
        );
        if !self.removed.is_empty() {
            said.push_str(&format!("\nThey removed: {} (not to be done; not missing work).", quoted(&self.removed)));
        }
        if !self.added.is_empty() {
            said.push_str(&format!("\nThey added: {}.", quoted(&self.added)));
        }
        if !self.changed.is_empty() {
            said.push_str(&format!("\nThey changed: {} (as the plan now says).", quoted(&self.changed)));
        }
        said
    }
}

/// Step titles, each in quotes: "Write a.txt", "Write b.txt".
fn quoted(titles: &[String]) -> String {
    titles.iter().map(|t| format!("\"{t}\"")).collect::<Vec<_>>().join(", ")
}

/// The person's request with their edits of the plan after it, as the models are given it.
pub fn settled(task: &str, edits: Option<&PlanEdits>) -> String {
    match edits {
        Some(e) => format!("{task}\n\n{}", e.words()),
        None => task.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(title: &str, criterion: &str) -> PlanStep {
        PlanStep { title: title.into(), instructions: format!("{title}."), criteria: vec![criterion.into()], depends_on: vec![], verify: vec![] }
    }

    #[test]
    fn a_removed_an_added_and_a_changed_step_are_named_in_the_plans_order() {
        let before = [step("Write a.txt", "a"), step("Write b.txt", "b"), step("Write c.txt", "c")];
        let after = [step("Write a.txt", "a"), step("Write b.txt", "b has one line"), step("Write e.txt", "e")];
        let edits = PlanEdits::between(&before, &after).unwrap();
        assert_eq!(edits.removed, vec!["Write c.txt"]);
        assert_eq!(edits.added, vec!["Write e.txt"]);
        assert_eq!(edits.changed, vec!["Write b.txt"]);
        let words = edits.words();
        assert!(words.contains("They removed: \"Write c.txt\" (not to be done; not missing work)"), "{words}");
        assert!(words.contains("They added: \"Write e.txt\"") && words.contains("They changed: \"Write b.txt\""), "{words}");
        assert_eq!(edits.summary(), "removed \"Write c.txt\"; added \"Write e.txt\"; changed \"Write b.txt\"");
    }

    #[test]
    fn steps_only_moved_or_left_as_they_were_are_no_edit() {
        let before = [step("Write a.txt", "a"), step("Write b.txt", "b")];
        assert_eq!(PlanEdits::between(&before, &before), None);
        let moved = [step("Write b.txt", "b"), step("Write a.txt", "a")];
        assert_eq!(PlanEdits::between(&before, &moved), None);
    }

    #[test]
    fn two_steps_of_one_title_are_matched_one_to_one() {
        let before = [step("Run the tests", "pass"), step("Run the tests", "pass")];
        let after = [step("Run the tests", "pass")];
        assert_eq!(PlanEdits::between(&before, &after).unwrap().removed, vec!["Run the tests"]);
    }
}
