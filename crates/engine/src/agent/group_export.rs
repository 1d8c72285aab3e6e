//! A group of attempts exported whole: which attempts there were, how the rule ranked them and
//! what the person chose, then each attempt's own session as `store::export` writes one. A group
//! with none chosen has no one session that tells its story.

use std::fmt::Write;

use serde_json::{json, Value};

use super::attempts::{group_attempts, rank_group, GroupRanking};
use crate::domain::GroupId;
use crate::error::Result;
use crate::store::{export, Store, Timeline};

pub struct GroupExport {
    pub ranking: GroupRanking,
    /// Each attempt's session, in the order they were started.
    pub attempts: Vec<Timeline>,
}

/// The group as it stands in the history; the attempts' own sessions in full.
pub fn group_export(store: &Store, group: &GroupId) -> Result<GroupExport> {
    let attempts = group_attempts(store, group)?.iter().map(|s| store.timeline(&s.id)).collect::<Result<Vec<_>>>()?;
    Ok(GroupExport { ranking: rank_group(store, group)?, attempts })
}

impl GroupExport {
    pub fn title(&self) -> &str {
        self.attempts.first().map_or(self.ranking.task.as_str(), |t| t.session.title.as_str())
    }

    pub fn to_markdown(&self) -> String {
        let r = &self.ranking;
        let mut md = String::new();
        let _ = writeln!(md, "# Attempts: {}\n", self.title());
        let _ = writeln!(md, "One task by {} attempts side by side (group `{}`).\n", self.attempts.len(), r.group);
        let label = |t: &Timeline| t.session.attempt.as_ref().map_or_else(String::new, |a| format!("attempt {}, {}", a.number, a.label));
        let outcome = match (&r.chosen, r.put_away) {
            (Some(chosen), _) => match self.attempts.iter().find(|t| &t.session.id == chosen) {
                Some(t) => format!("Chosen: {} (`{}`).", label(t), chosen),
                None => format!("Chosen: `{chosen}`."),
            },
            (None, true) => put_away_words(r),
            (None, false) => "Not decided yet.".to_string(),
        };
        let _ = writeln!(md, "{outcome}\n\n## Ranking\n");
        if !r.all_ended {
            let _ = writeln!(md, "Ranked once every attempt has ended.\n");
        }
        // Placed as `sessions attempts` and the window place them.
        for (e, place) in r.ranking.iter().zip(&r.places) {
            let why = match (&e.above_next, place.as_str()) {
                _ if e.evidence.refused => " · rejected by you: out of the choice".to_string(),
                _ if !e.evidence.ended => " · still running".to_string(),
                _ if !e.evidence.reviewed => " · ended before a review".to_string(),
                (Some(why), p) if p != "–" => format!(" · above the next: {why}"),
                _ => String::new(),
            };
            let _ = writeln!(md, "- {place}. {} (`{}`){why}", e.evidence.label, e.evidence.session);
        }
        for t in &self.attempts {
            let of = t.session.attempt.as_ref().map_or_else(String::new, |a| format!("Attempt {} of {}: {}", a.number, a.of, a.label));
            // The session's own heading names the task, which the group's says once.
            let own = export::to_markdown(t);
            let body = own.split_once('\n').map_or(own.as_str(), |(_, rest)| rest);
            let _ = write!(md, "\n---\n\n# {of}\n{body}");
        }
        md
    }

    pub fn to_json(&self) -> Value {
        let r = &self.ranking;
        json!({
            "format": "finishline-attempts",
            "version": 1,
            "group": r.group,
            "task": r.task,
            "chosen": r.chosen,
            "put_away": r.put_away,
            "ranking": r.ranking,
            "attempts": self.attempts.iter().map(export::to_json).collect::<Vec<_>>(),
        })
    }
}

/// How a group with none chosen came to be put away: all at once, or after the person had
/// rejected some in their own reviews (those stay out of the ranking, as they were).
fn put_away_words(r: &GroupRanking) -> String {
    let refused: Vec<&str> = r.ranking.iter().filter(|e| e.evidence.refused).map(|e| e.evidence.label.as_str()).collect();
    let rest = r.ranking.len() - refused.len();
    if refused.is_empty() || rest == 0 {
        return "None was chosen: you rejected every attempt.".into();
    }
    let names = crate::and_list::and_list(&refused);
    let own = if refused.len() == 1 { "its own review" } else { "their own reviews" };
    let then = if rest == 1 { "the other one".to_string() } else { format!("the other {rest} together") };
    format!("None was chosen: you rejected {names} in {own}, then {then}.")
}
