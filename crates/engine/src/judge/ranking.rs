//! Attempts side by side: one task done by several agents (or several tries), ranked by a rule
//! the person can read. Verified done comes first; then having work to review at all (a failed
//! or cancelled attempt, or one that changed nothing, has nothing to land); then no audit findings; then more of the
//! verification commands passing; then fewer items the evaluator found remaining; then a smaller
//! diff; then a lower cost. Each attempt says why it is above the next, naming the first of
//! these that tells them apart. Pure.

use std::cmp::Ordering;

use serde::{Deserialize, Serialize};

use crate::domain::{EndReason, RequestId, SessionId};

/// What one attempt ended with, as its last review recorded it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttemptEvidence {
    pub session: SessionId,
    /// Who did it: `OpenCode`, `Finishline's agent (m)`, `Codex #2`.
    pub label: String,
    /// It has ended (a review, a failure, a cancel); `false`: still running.
    pub ended: bool,
    pub end_reason: Option<EndReason>,
    /// The review waiting for the person's decision, when it reached one.
    pub review: Option<RequestId>,
    /// It reached a review at some point (its evidence below is that review's).
    pub reviewed: bool,
    pub findings: usize,
    pub checks_passed: usize,
    pub checks_run: usize,
    /// The evaluator judged it (a failed verification, a claim of partial work or a stuck run
    /// reach review without asking it); `remaining` means nothing otherwise.
    pub evaluated: bool,
    pub remaining: usize,
    /// Lines added and removed.
    pub diff_lines: usize,
    pub files: usize,
    /// In US dollars when every model has a price, else `None` (tokens decide then).
    pub cost_usd: Option<f64>,
    pub tokens: u64,
    /// How long its runs were at work, to its first review as its cost is.
    pub wall_ms: i64,
    /// Why it ended without a review, in the words of its last error (a provider's refusal, an
    /// agent that would not start), so that the person sees it beside the others.
    pub error: Option<String>,
    /// Why it would not land without the person even were it alone (a file .gitignore hides,
    /// auto-approve off), from its review; `None` when only the group's choice holds it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held_back: Option<String>,
    /// The person rejected it in its own review while the group was undecided: out of the choice,
    /// so out of the ranking (a group put away keeps its ranking).
    pub refused: bool,
}

impl AttemptEvidence {
    fn verified(&self) -> bool {
        self.end_reason == Some(EndReason::VerifiedDone)
    }

    /// How much it has to land: a review of changes, above a review of none (an attempt that
    /// changed nothing is no better for its "smaller diff" than one that did the work wrong),
    /// above no review at all (it failed or was cancelled).
    fn work(&self) -> u8 {
        match (self.reviewed, self.files > 0) {
            (true, true) => 2,
            (true, false) => 1,
            (false, _) => 0,
        }
    }
}

/// An attempt in the ranking.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ranked {
    pub rank: usize,
    pub evidence: AttemptEvidence,
    /// Why it is above the next one (`None` for the last, or when they cannot be told apart).
    pub above_next: Option<String>,
    /// The evaluator's word on it and the next, when the person asked for a comparison
    /// ([`super::comparison`]).
    pub evaluator: Option<super::comparison::EvaluatorWord>,
}

/// The rule, criterion by criterion: which is better, and the words for why.
pub(super) fn compare(a: &AttemptEvidence, b: &AttemptEvidence) -> (Ordering, Option<String>) {
    let rules: [(Ordering, String); 7] = [
        (b.verified().cmp(&a.verified()), "verified done".into()),
        (
            b.work().cmp(&a.work()),
            if b.reviewed {
                "it changed files (the other changed none)".into()
            } else {
                format!("it has work to review (the other ended {})", b.end_reason.map(|e| e.as_str()).unwrap_or("without a review"))
            },
        ),
        (
            a.findings.cmp(&b.findings),
            if a.findings == 0 { "no audit findings".into() } else { format!("fewer audit findings ({} against {})", a.findings, b.findings) },
        ),
        (b.checks_passed.cmp(&a.checks_passed), format!("more verification commands pass ({} against {})", a.checks_passed, b.checks_passed)),
        (
            // Only between two the evaluator judged: "nothing left" from no judgement is not less.
            if a.evaluated && b.evaluated { a.remaining.cmp(&b.remaining) } else { Ordering::Equal },
            format!("fewer items left by the evaluator ({} against {})", a.remaining, b.remaining),
        ),
        (
            a.diff_lines.cmp(&b.diff_lines),
            format!("a smaller diff ({} line{} against {})", a.diff_lines, if a.diff_lines == 1 { "" } else { "s" }, b.diff_lines),
        ),
        (
            match (a.cost_usd, b.cost_usd) {
                (Some(x), Some(y)) => clearly(x, y),
                _ => clearly(a.tokens as f64, b.tokens as f64),
            },
            match (a.cost_usd, b.cost_usd) {
                (Some(x), Some(y)) => format!("a lower cost (${x:.4} against ${y:.4})"),
                _ => format!("fewer tokens ({} against {})", a.tokens, b.tokens),
            },
        ),
    ];
    for (order, why) in rules {
        if order != Ordering::Equal {
            return (order, Some(why));
        }
    }
    (Ordering::Equal, None)
}

/// How two costs compare, when they differ by more than a tenth of the larger: a few words more
/// in one answer is how runs of one model vary, no reason to prefer an attempt (a ranking that
/// said "fewer tokens (3134 against 3136)" read as a verdict on nothing). Near ones are left to
/// the evaluator's comparison, which orders only what the rule finds equal.
fn clearly(x: f64, y: f64) -> Ordering {
    if (x - y).abs() <= 0.1 * x.abs().max(y.abs()) {
        Ordering::Equal
    } else {
        x.partial_cmp(&y).unwrap_or(Ordering::Equal)
    }
}

/// Cost, exactly: priced when both are, else tokens.
fn exact_cost(a: &AttemptEvidence, b: &AttemptEvidence) -> Ordering {
    match (a.cost_usd, b.cost_usd) {
        (Some(x), Some(y)) => x.partial_cmp(&y).unwrap_or(Ordering::Equal),
        _ => a.tokens.cmp(&b.tokens),
    }
}

/// The rule finds nothing to tell the two apart.
pub fn equal_by_rule(a: &AttemptEvidence, b: &AttemptEvidence) -> bool {
    compare(a, b).0 == Ordering::Equal
}

/// Ranks the attempts that have ended; those the person refused, then those still running,
/// follow, unranked.
pub fn rank(attempts: &[AttemptEvidence]) -> Vec<Ranked> {
    let mut ended: Vec<AttemptEvidence> = attempts.iter().filter(|a| a.ended && !a.refused).cloned().collect();
    // Sorted by insertion, stable: the rule is no total order (items left compare only between
    // two the evaluator judged), and the standard sort may panic on such. Near costs, which the
    // rule finds equal, are ordered by the exact figure here, so that the order does not depend
    // on the order the attempts came in (1000, 1090, 1180 would stay as they came otherwise).
    let order = |a: &AttemptEvidence, b: &AttemptEvidence| compare(a, b).0.then_with(|| exact_cost(a, b));
    for i in 1..ended.len() {
        let mut j = i;
        while j > 0 && order(&ended[j - 1], &ended[j]) == Ordering::Greater {
            ended.swap(j - 1, j);
            j -= 1;
        }
    }
    let mut out: Vec<Ranked> = Vec::new();
    for (i, a) in ended.iter().enumerate() {
        let above_next = ended.get(i + 1).and_then(|next| {
            let (order, why) = compare(a, next);
            (order == Ordering::Less).then_some(why).flatten()
        });
        out.push(Ranked { rank: i + 1, evidence: a.clone(), above_next, evaluator: None });
    }
    for a in attempts.iter().filter(|a| a.ended && a.refused).chain(attempts.iter().filter(|a| !a.ended)) {
        out.push(Ranked { rank: 0, evidence: a.clone(), above_next: None, evaluator: None });
    }
    out
}

/// Lines added and removed in a unified diff.
pub fn diff_lines(diff: &str) -> usize {
    let (added, removed) = crate::workspace::checkpoint::line_counts(diff);
    added + removed
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// An attempt that ended with a review, its evidence middling: a test changes what it tells.
    pub(in crate::judge) fn attempt(label: &str, end: EndReason) -> AttemptEvidence {
        AttemptEvidence {
            session: SessionId(label.into()),
            label: label.into(),
            ended: true,
            end_reason: Some(end),
            review: None,
            reviewed: true,
            findings: 0,
            checks_passed: 1,
            checks_run: 1,
            evaluated: true,
            remaining: 0,
            diff_lines: 10,
            files: 1,
            cost_usd: None,
            tokens: 1000,
            wall_ms: 1000,
            error: None,
            held_back: None,
            refused: false,
        }
    }

    #[test]
    fn verified_done_comes_first_whatever_else() {
        let mut cheap = attempt("cheap", EndReason::Unverified);
        cheap.diff_lines = 1;
        cheap.tokens = 1;
        let r = rank(&[cheap, attempt("verified", EndReason::VerifiedDone)]);
        assert_eq!(r[0].evidence.label, "verified");
        assert_eq!(r[0].above_next.as_deref(), Some("verified done"));
    }

    #[test]
    fn an_attempt_the_person_rejected_in_its_own_review_leaves_the_ranking() {
        let mut refused = attempt("refused", EndReason::VerifiedDone);
        refused.refused = true;
        let r = rank(&[refused, attempt("open", EndReason::VerifiedDone)]);
        assert_eq!((r[0].evidence.label.as_str(), r[0].rank), ("open", 1), "the one left is first, alone");
        assert_eq!(r[0].above_next, None, "and above nothing: the refused one is out of the choice");
        assert_eq!((r[1].evidence.label.as_str(), r[1].rank), ("refused", 0), "not ranked");
    }

    #[test]
    fn each_rule_breaks_a_tie_in_order_and_says_so() {
        let base = attempt("a", EndReason::VerifiedDone);
        let mut flagged = attempt("flagged", EndReason::VerifiedDone);
        flagged.findings = 1;
        assert_eq!(rank(&[flagged.clone(), base.clone()])[0].above_next.as_deref(), Some("no audit findings"));
        let mut fewer_checks = attempt("fewer", EndReason::VerifiedDone);
        fewer_checks.checks_passed = 0;
        assert!(rank(&[fewer_checks, base.clone()])[0].above_next.as_deref().unwrap().starts_with("more verification commands pass"));
        let mut bigger = attempt("bigger", EndReason::VerifiedDone);
        bigger.diff_lines = 500;
        bigger.tokens = 1;
        let r = rank(&[bigger, base.clone()]);
        assert_eq!(r[0].evidence.label, "a", "a smaller diff beats fewer tokens");
        assert!(r[0].above_next.as_deref().unwrap().starts_with("a smaller diff"));
        let mut pricier = attempt("pricier", EndReason::VerifiedDone);
        pricier.tokens = 5000;
        assert!(rank(&[pricier, base])[0].above_next.as_deref().unwrap().starts_with("fewer tokens"));
    }

    #[test]
    fn costs_a_tenth_apart_or_less_decide_nothing_and_are_left_to_the_evaluator() {
        let (mut a, mut b) = (attempt("a", EndReason::VerifiedDone), attempt("b", EndReason::VerifiedDone));
        (a.tokens, b.tokens) = (3136, 3134);
        let r = rank(&[a.clone(), b.clone()]);
        assert_eq!((r[0].evidence.label.as_str(), r[0].above_next.as_deref()), ("b", None), "the cheaper first, but two tokens are no reason given");
        assert!(equal_by_rule(&a, &b), "so the evaluator's comparison may order them");
        // Near costs in a chain: the order is the costs', whatever order they came in.
        let chain = |tokens: [u64; 3]| {
            let many: Vec<AttemptEvidence> =
                tokens.iter().map(|t| AttemptEvidence { tokens: *t, label: t.to_string(), ..attempt("x", EndReason::VerifiedDone) }).collect();
            rank(&many).into_iter().map(|r| r.evidence.label).collect::<Vec<_>>()
        };
        assert_eq!(chain([1180, 1090, 1000]), vec!["1000", "1090", "1180"]);
        assert_eq!(chain([1000, 1180, 1090]), vec!["1000", "1090", "1180"]);
        b.tokens = 2500;
        assert_eq!(rank(&[a.clone(), b.clone()])[0].above_next.as_deref(), Some("fewer tokens (2500 against 3136)"));
        (a.cost_usd, b.cost_usd) = (Some(0.0105), Some(0.0100));
        assert!(equal_by_rule(&a, &b), "priced, the same: cents apart on a cent");
        a.cost_usd = Some(0.02);
        assert_eq!(rank(&[a, b])[0].above_next.as_deref(), Some("a lower cost ($0.0100 against $0.0200)"));
    }

    #[test]
    fn many_attempts_the_rule_cannot_order_wholly_are_ranked_without_a_fault() {
        // Near costs chain (1000 ~ 1090 ~ 1180 but 1000 < 1180), and items left count only
        // between attempts the evaluator judged: no total order.
        let many: Vec<AttemptEvidence> = (0..40)
            .map(|i| {
                let mut a = attempt(&format!("a{i}"), EndReason::VerifiedDone);
                a.tokens = 1000 + (i * 37 % 11) * 90;
                a.evaluated = i % 3 != 0;
                a.remaining = (i % 4) as usize;
                a
            })
            .collect();
        let r = rank(&many);
        assert_eq!(r.len(), 40);
        for pair in r.windows(2) {
            assert_ne!(compare(&pair[0].evidence, &pair[1].evidence).0, Ordering::Greater, "no attempt is right above one the rule puts before it");
        }
    }

    #[test]
    fn an_attempt_with_work_to_review_beats_one_that_failed_with_nothing() {
        let mut failed = attempt("failed", EndReason::Failed);
        (failed.reviewed, failed.diff_lines, failed.remaining, failed.checks_passed) = (false, 0, 0, 0);
        let mut unverified = attempt("unverified", EndReason::Unverified);
        (unverified.remaining, unverified.checks_passed) = (3, 0);
        let r = rank(&[failed, unverified]);
        assert_eq!(r[0].evidence.label, "unverified");
        assert!(r[0].above_next.as_deref().unwrap().starts_with("it has work to review"));
    }

    #[test]
    fn an_attempt_that_changed_nothing_is_below_one_with_work_however_small_its_diff() {
        // Both failed their check: one wrote the wrong greeting, the other wrote nothing.
        let mut wrong = attempt("wrong", EndReason::Unverified);
        (wrong.checks_passed, wrong.evaluated, wrong.diff_lines) = (0, false, 2);
        let mut empty = attempt("empty", EndReason::Stuck);
        (empty.checks_passed, empty.evaluated, empty.diff_lines, empty.files) = (0, false, 0, 0);
        let r = rank(&[empty, wrong]);
        assert_eq!(r[0].evidence.label, "wrong", "nothing to land is no smaller diff");
        assert_eq!(r[0].above_next.as_deref(), Some("it changed files (the other changed none)"));
    }

    #[test]
    fn an_attempt_reviewed_with_no_changes_still_ranks_above_one_that_failed() {
        let mut empty = attempt("empty", EndReason::Stuck);
        (empty.checks_passed, empty.diff_lines, empty.files, empty.tokens) = (0, 0, 0, 5000);
        let mut failed = attempt("failed", EndReason::Failed);
        (failed.reviewed, failed.checks_passed, failed.diff_lines, failed.files, failed.tokens) = (false, 0, 0, 0, 10);
        let r = rank(&[failed, empty]);
        assert_eq!(r[0].evidence.label, "empty", "a cheap failure is not first: it has nothing to choose");
        assert!(r[0].above_next.as_deref().unwrap().starts_with("it has work to review"), "{:?}", r[0].above_next);
    }

    #[test]
    fn items_left_compare_only_between_attempts_the_evaluator_judged() {
        // Both failed their check; one was also judged by the evaluator (1 item left), the other
        // never reached it. Its "nothing left" is no judgement, so the next rule decides.
        let mut judged = attempt("judged", EndReason::Unverified);
        (judged.checks_passed, judged.remaining, judged.diff_lines) = (0, 1, 2);
        let mut unjudged = attempt("unjudged", EndReason::Unverified);
        (unjudged.checks_passed, unjudged.evaluated, unjudged.remaining, unjudged.diff_lines) = (0, false, 0, 40);
        let r = rank(&[unjudged, judged]);
        assert_eq!(r[0].evidence.label, "judged");
        assert!(r[0].above_next.as_deref().unwrap().starts_with("a smaller diff"), "{:?}", r[0].above_next);
    }

    #[test]
    fn attempts_still_running_wait_unranked_at_the_end() {
        let mut running = attempt("running", EndReason::VerifiedDone);
        running.ended = false;
        let r = rank(&[running, attempt("done", EndReason::Stuck)]);
        assert_eq!((r[0].rank, r[0].evidence.label.as_str()), (1, "done"));
        assert_eq!((r[1].rank, r[1].evidence.label.as_str()), (0, "running"));
    }

    #[test]
    fn a_diff_counts_its_added_and_removed_lines_only() {
        assert_eq!(diff_lines("diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n c\n"), 2);
        // In SQL or Lua a line may start with `--`: removed, it reads `--- …`, and is a line.
        assert_eq!(diff_lines("diff --git a/x.sql b/x.sql\n--- a/x.sql\n+++ b/x.sql\n@@ -1,2 +1,2 @@\n--- a comment\n+++ counter\n keep\n"), 2);
    }
}
