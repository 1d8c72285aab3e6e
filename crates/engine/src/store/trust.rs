//! How far to trust the evaluator: for every review a person decided, what the evaluator of
//! that run said, and what the person then did. A `done` verdict the person rejected or sent
//! back is a false done; a run the evaluator sent back and the person then approved as delivered
//! is a nudge the person did not need to see undone.

use std::collections::BTreeMap;

use rusqlite::Connection;
use serde::Serialize;

use crate::domain::{DecidedBy, Decision, SessionId, Verdict};
use crate::Result;

/// One decided review: the evaluator's verdicts in its run, in order, and the decision.
#[derive(Debug, Clone, PartialEq)]
pub struct ReviewedRun {
    pub session: SessionId,
    /// The evaluator model of the run's last verdict.
    pub model: String,
    pub verdicts: Vec<Verdict>,
    pub decision: Decision,
    pub by: DecidedBy,
}

/// Reviews a model needs before the review panel shows its false-done rate: fewer is noise.
pub const TRUST_SHOWN_FROM: u32 = 10;

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct EvaluatorTrust {
    pub model: String,
    /// Reviews the person decided after this model judged the run.
    pub reviews: u32,
    /// Of those, how many ended on a `done` verdict.
    pub done_verdicts: u32,
    /// Reviews where `done` was then rejected or sent back with changes.
    pub false_done_reviews: u32,
    /// The sessions behind them.
    pub false_done: Vec<SessionId>,
    /// `false_done / done_verdicts`; none before the first `done`.
    pub false_done_rate: Option<f64>,
    /// Reviews whose run the evaluator sent back at least once (`not_done`).
    pub sent_back: u32,
    /// Sessions sent back by the evaluator and then approved as delivered.
    pub sent_back_then_approved: Vec<SessionId>,
}

/// The figures per evaluator model, most-reviewed first. Decisions made automatically
/// (auto-approve of a verified completion) say nothing about the evaluator and are left out.
pub fn summarize(runs: &[ReviewedRun]) -> Vec<EvaluatorTrust> {
    let mut by_model: BTreeMap<&str, EvaluatorTrust> = BTreeMap::new();
    for r in runs.iter().filter(|r| r.by == DecidedBy::Person) {
        let Some(last) = r.verdicts.last() else { continue };
        let t = by_model.entry(&r.model).or_insert_with(|| EvaluatorTrust { model: r.model.clone(), ..Default::default() });
        t.reviews += 1;
        if *last == Verdict::Done {
            t.done_verdicts += 1;
            if matches!(r.decision, Decision::Reject | Decision::RequestChanges) {
                t.false_done_reviews += 1;
                if !t.false_done.contains(&r.session) {
                    t.false_done.push(r.session.clone());
                }
            }
        }
        if r.verdicts.contains(&Verdict::NotDone) {
            t.sent_back += 1;
            if r.decision == Decision::Approve && !t.sent_back_then_approved.contains(&r.session) {
                t.sent_back_then_approved.push(r.session.clone());
            }
        }
    }
    let mut out: Vec<EvaluatorTrust> = by_model
        .into_values()
        .map(|mut t| {
            t.false_done_rate = (t.done_verdicts > 0).then(|| f64::from(t.false_done_reviews) / f64::from(t.done_verdicts));
            t
        })
        .collect();
    out.sort_by(|a, b| b.reviews.cmp(&a.reviews).then_with(|| a.model.cmp(&b.model)));
    out
}

/// Every decided review with the evaluator's verdicts of its run, oldest first.
pub fn reviewed_runs(conn: &Connection) -> Result<Vec<ReviewedRun>> {
    let mut reviews = conn.prepare_cached(
        "SELECT r.session_id, r.run_id, r.decision, json_extract(e.body, '$.by')
         FROM requests r
         JOIN events e ON e.session_id = r.session_id AND e.type = 'review_resolved' AND json_extract(e.body, '$.review_id') = r.id
         WHERE r.kind = 'review' AND r.decided_ms IS NOT NULL AND r.run_id IS NOT NULL
         ORDER BY r.decided_ms",
    )?;
    let rows: Vec<(String, String, Option<String>, Option<String>)> = reviews.query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?)))?.collect::<std::result::Result<_, _>>()?;
    let mut verdicts = conn.prepare_cached("SELECT verdict, model FROM evaluations WHERE run_id = ?1 ORDER BY at_ms, cycle")?;
    let mut out = Vec::new();
    for (session, run, decision, by) in rows {
        let (Some(decision), Some(by)) = (decision.as_deref().and_then(Decision::parse), by.as_deref().and_then(DecidedBy::parse)) else { continue };
        let evals: Vec<(String, String)> = verdicts.query_map([&run], |row| Ok((row.get(0)?, row.get(1)?)))?.collect::<std::result::Result<_, _>>()?;
        let Some((_, model)) = evals.last().cloned() else { continue };
        out.push(ReviewedRun { session: SessionId::from(session.as_str()), model, verdicts: evals.iter().filter_map(|(v, _)| Verdict::parse(v)).collect(), decision, by });
    }
    Ok(out)
}
