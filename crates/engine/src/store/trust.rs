//! How far to trust the evaluator: for every review a person decided, what the evaluator of
//! that run said, and what the person then did. A `done` verdict the person rejected or sent
//! back is a false done; a run the evaluator sent back and the person then approved as delivered
//! is a nudge the person did not need to see undone.

use std::collections::BTreeMap;

use rusqlite::Connection;
use serde::Serialize;

use crate::domain::{DecidedBy, Decision, EndReason, SessionId, Verdict};
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

/// The words an attempt is rejected with when the person chooses another of its group.
pub const SET_ASIDE: &str = "Another attempt was chosen.";

/// Every decided review with the evaluator's verdicts of its run, oldest first. An attempt's
/// rejection made by choosing another of its group ([`SET_ASIDE`]) is left out: it says which
/// attempt was better, not that this one's `done` was wrong. A Reject the person gave it
/// themselves still counts.
pub fn reviewed_runs(conn: &Connection) -> Result<Vec<ReviewedRun>> {
    let mut reviews = conn.prepare_cached(
        "SELECT r.session_id, r.run_id, r.decision, json_extract(e.body, '$.by')
         FROM requests r
         JOIN events e ON e.session_id = r.session_id AND e.type = 'review_resolved' AND json_extract(e.body, '$.review_id') = r.id
         JOIN sessions s ON s.id = r.session_id
         WHERE r.kind = 'review' AND r.decided_ms IS NOT NULL AND r.run_id IS NOT NULL
           AND NOT (r.decision = 'reject' AND s.group_id IS NOT NULL AND COALESCE(json_extract(e.body, '$.feedback'), '') = ?1)
         ORDER BY r.decided_ms",
    )?;
    let rows: Vec<(String, String, Option<String>, Option<String>)> =
        reviews.query_map([SET_ASIDE], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?)))?.collect::<std::result::Result<_, _>>()?;
    let mut verdicts = conn.prepare_cached("SELECT verdict, model FROM evaluations WHERE run_id = ?1 ORDER BY at_ms, cycle")?;
    let mut out = Vec::new();
    for (session, run, decision, by) in rows {
        let (Some(decision), Some(by)) = (decision.as_deref().and_then(Decision::parse), by.as_deref().and_then(DecidedBy::parse)) else { continue };
        let evals: Vec<(String, String)> = verdicts.query_map([&run], |row| Ok((row.get(0)?, row.get(1)?)))?.collect::<std::result::Result<_, _>>()?;
        let Some((_, model)) = evals.last().cloned() else { continue };
        out.push(ReviewedRun {
            session: SessionId::from(session.as_str()),
            model,
            verdicts: evals.iter().filter_map(|(v, _)| Verdict::parse(v)).collect(),
            decision,
            by,
        });
    }
    Ok(out)
}

/// How one agent has done across the person's history: which one to send which task to.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct AgentTrust {
    /// `Finishline's agent` or the external agent's name as the person knows it.
    pub agent: String,
    /// The model of Finishline's agent; empty for an external agent (it chooses its own).
    pub model: String,
    /// Tasks (and attempts) it worked on that have ended.
    pub tasks: u32,
    pub verified_done: u32,
    /// Attempts of groups the person has decided, and how many of them were the one chosen.
    pub attempts_decided: u32,
    pub chosen: u32,
    /// Reviews the person decided on its work, and how many they approved.
    pub reviews_decided: u32,
    pub approved: u32,
    /// Tasks where it claimed done and the evidence said otherwise at least once.
    pub false_claims: u32,
}

/// One session's part in its agent's figures.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentRecord {
    pub provider: String,
    pub model: String,
    pub ended: bool,
    pub verified_done: bool,
    /// `Some(chosen)` for an attempt of a group the person decided.
    pub attempt_chosen: Option<bool>,
    /// The person's decision: one made without them (auto-approve, a dry run's reject) is none.
    pub decision: Option<Decision>,
    pub false_claim: bool,
}

/// The figures per agent and model, most tasks first.
pub fn summarize_agents(records: &[AgentRecord]) -> Vec<AgentTrust> {
    let mut by: BTreeMap<(String, String), AgentTrust> = BTreeMap::new();
    for r in records {
        let (agent, model) = if r.provider == crate::external::ACP_PROVIDER {
            let label = crate::external::ExternalAgent::preset(&r.model).map(|a| a.label()).unwrap_or_else(|| r.model.clone());
            (label, String::new())
        } else {
            ("Finishline's agent".to_string(), r.model.clone())
        };
        let t = by.entry((agent.clone(), model.clone())).or_insert_with(|| AgentTrust { agent, model, ..Default::default() });
        if r.ended {
            t.tasks += 1;
        }
        t.verified_done += r.verified_done as u32;
        if let Some(chosen) = r.attempt_chosen {
            t.attempts_decided += 1;
            t.chosen += chosen as u32;
        }
        // An attempt not chosen was set aside for a better one, not refused: "chosen" says so.
        if let Some(d) = r.decision.filter(|_| r.attempt_chosen != Some(false)) {
            t.reviews_decided += 1;
            t.approved += (d == Decision::Approve) as u32;
        }
        t.false_claims += r.false_claim as u32;
    }
    let mut out: Vec<AgentTrust> = by.into_values().collect();
    out.sort_by(|a, b| b.tasks.cmp(&a.tasks).then_with(|| a.agent.cmp(&b.agent)));
    out
}

/// Every session's part in its agent's figures. A false claim is a continuation that refused a
/// claim of done, or a run that ended on a claim of success it could not back.
pub fn agent_records(conn: &Connection) -> Result<Vec<AgentRecord>> {
    let mut stmt = conn.prepare_cached(
        "SELECT s.provider, s.model, s.status, s.end_reason, CASE WHEN s.decided_by = 'auto' THEN NULL ELSE s.decision END, s.claim,
                CASE WHEN s.group_id IS NULL THEN NULL
                     WHEN EXISTS (SELECT 1 FROM sessions g WHERE g.group_id = s.group_id AND g.chosen = 1) THEN s.chosen END,
                EXISTS (SELECT 1 FROM events e WHERE e.session_id = s.id AND e.type = 'continuation' AND json_extract(e.body, '$.refused_claim') = 1),
                s.tokens_agent
         FROM sessions s",
    )?;
    let rows = stmt.query_map([], |r| {
        let status: String = r.get(2)?;
        let end: Option<String> = r.get(3)?;
        let claim: Option<String> = r.get(5)?;
        let ended_unbacked = claim.as_deref() == Some("success") && end.as_deref().is_some_and(|e| !backs_a_success(e));
        let provider: String = r.get(0)?;
        // Failed before its model ever answered (a refused key, a server down): that says
        // nothing of the agent. (An external agent may report no tokens though it worked.)
        let never_answered = status == "failed" && r.get::<_, i64>(8)? == 0 && provider != crate::external::ACP_PROVIDER;
        Ok(AgentRecord {
            provider,
            model: r.get(1)?,
            ended: !matches!(status.as_str(), "busy" | "retry" | "queued" | "awaiting_approval" | "idle") && !never_answered,
            verified_done: end.as_deref() == Some("verified_done"),
            attempt_chosen: r.get::<_, Option<i64>>(6)?.map(|c| c != 0),
            decision: r.get::<_, Option<String>>(4)?.as_deref().and_then(Decision::parse),
            false_claim: r.get::<_, i64>(7)? != 0 || ended_unbacked,
        })
    })?;
    Ok(rows.collect::<std::result::Result<_, _>>()?)
}

/// An end that leaves a claim of success standing: verified, stopped by the person, or a plan
/// stopped by its budget of model calls (its last step's claim was never contradicted).
fn backs_a_success(end: &str) -> bool {
    matches!(EndReason::parse(end), Some(EndReason::VerifiedDone | EndReason::Cancelled | EndReason::PlanBudgetSpent))
}

#[cfg(test)]
mod agent_tests {
    use super::*;

    #[test]
    fn a_plan_stopped_by_its_budget_is_no_false_claim_but_a_success_left_unverified_is() {
        assert!(backs_a_success("plan_budget_spent"));
        assert!(backs_a_success("verified_done") && backs_a_success("cancelled"));
        assert!(!backs_a_success("unverified") && !backs_a_success("stuck") && !backs_a_success("plan_failed"));
    }

    fn rec(provider: &str, model: &str) -> AgentRecord {
        AgentRecord {
            provider: provider.into(),
            model: model.into(),
            ended: true,
            verified_done: false,
            attempt_chosen: None,
            decision: None,
            false_claim: false,
        }
    }

    #[test]
    fn each_agent_counts_its_verified_chosen_and_false_claims() {
        let mut a = rec("acp", "codex");
        (a.verified_done, a.attempt_chosen, a.decision) = (true, Some(true), Some(Decision::Approve));
        let mut b = rec("acp", "codex");
        (b.false_claim, b.attempt_chosen, b.decision) = (true, Some(false), Some(Decision::Reject));
        let c = rec("openai", "gpt");
        let t = summarize_agents(&[a, b, c]);
        assert_eq!(t[0].agent, "Codex");
        assert_eq!((t[0].tasks, t[0].verified_done, t[0].attempts_decided, t[0].chosen, t[0].false_claims, t[0].approved), (2, 1, 2, 1, 1, 1));
        assert_eq!((t[1].agent.as_str(), t[1].model.as_str(), t[1].tasks), ("Finishline's agent", "gpt", 1));
    }

    #[test]
    fn an_attempt_set_aside_for_another_is_not_counted_as_work_the_person_refused() {
        let mut chosen = rec("openai", "m");
        (chosen.verified_done, chosen.attempt_chosen, chosen.decision) = (true, Some(true), Some(Decision::Approve));
        let mut others = [rec("openai", "m"), rec("openai", "m")];
        for o in &mut others {
            (o.verified_done, o.attempt_chosen, o.decision) = (true, Some(false), Some(Decision::Reject));
        }
        let mut single = rec("openai", "m");
        single.decision = Some(Decision::Reject);
        let t = summarize_agents(&[chosen, others[0].clone(), others[1].clone(), single]);
        assert_eq!((t[0].attempts_decided, t[0].chosen), (3, 1), "not chosen is counted as that");
        assert_eq!((t[0].reviews_decided, t[0].approved), (2, 1), "three verified attempts of which one landed are not 'approved 1 of 3'");
    }
}
