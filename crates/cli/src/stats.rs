//! `finishline stats evaluator`: how far to trust each evaluator model, the same figures as the
//! window's Trust view (store/trust.rs).

use finishline_engine::store::trust::EvaluatorTrust;

use crate::exit;
use crate::output::{errln, humanln, outln};
use crate::sessions::open;
use crate::Common;

fn percent(rate: Option<f64>) -> String {
    rate.map(|r| format!("{:.0}%", r * 100.0)).unwrap_or_else(|| "—".into())
}

fn line(t: &EvaluatorTrust) -> String {
    let mut s = format!(
        "{}\n  reviews {} · done verdicts {} · false done {} review(s) ({}) · runs it sent back to the agent {} · of those, approved by you as delivered {}",
        t.model,
        t.reviews,
        t.done_verdicts,
        t.false_done_reviews,
        percent(t.false_done_rate),
        t.sent_back,
        t.sent_back_then_approved.len()
    );
    if !t.false_done.is_empty() {
        // A session sent back twice holds two of the reviews: say so, or the list looks short.
        s.push_str(&format!("\n  false done in {} session(s): {}", t.false_done.len(), t.false_done.iter().map(|i| i.as_str()).collect::<Vec<_>>().join(" ")));
    }
    if !t.sent_back_then_approved.is_empty() {
        s.push_str(&format!(
            "\n  sent back by it, then approved by you: {}",
            t.sent_back_then_approved.iter().map(|i| i.as_str()).collect::<Vec<_>>().join(" ")
        ));
    }
    s
}

pub fn evaluator(common: &Common) -> u8 {
    print_rows(common, |store| store.evaluator_trust(), "No reviews decided by a person after an evaluator verdict yet.", line)
}

/// Prints the store's rows, one JSON object a line with `--json`, else in words (`none` when
/// there are none yet).
fn print_rows<T: serde::Serialize>(
    common: &Common,
    rows: impl FnOnce(&finishline_engine::store::Store) -> finishline_engine::Result<Vec<T>>,
    none: &str,
    words: impl Fn(&T) -> String,
) -> u8 {
    let store = match open(common) {
        Ok(s) => s,
        Err(c) => return c,
    };
    match rows(&store) {
        Err(e) => {
            errln!("finishline: {e}");
            exit::FAILED
        }
        Ok(rows) if rows.is_empty() && !common.json => {
            humanln!("{none}");
            exit::OK
        }
        Ok(rows) => {
            for t in &rows {
                if common.json {
                    outln!("{}", serde_json::to_string(t).unwrap_or_default());
                } else {
                    humanln!("{}", words(t));
                }
            }
            exit::OK
        }
    }
}

fn share(part: u32, of: u32) -> String {
    if of == 0 {
        "—".into()
    } else {
        format!("{part}/{of} ({:.0}%)", f64::from(part) * 100.0 / f64::from(of))
    }
}

/// `finishline stats`: both figures, agents first (the one a person picks from), each under its
/// name; with `--json` one object holding both.
pub fn both(common: &Common) -> u8 {
    let store = match open(common) {
        Ok(s) => s,
        Err(c) => return c,
    };
    let (agents, judges) = match store.agent_trust().and_then(|a| Ok((a, store.evaluator_trust()?))) {
        Ok(both) => both,
        Err(e) => {
            errln!("finishline: {e}");
            return exit::FAILED;
        }
    };
    if common.json {
        outln!("{}", serde_json::json!({ "agents": agents, "evaluator": judges }));
        return exit::OK;
    }
    humanln!("Agents");
    if agents.is_empty() {
        humanln!("  No tasks yet.");
    }
    for t in &agents {
        humanln!("{}", indented(&agent_words(t)));
    }
    humanln!("\nEvaluators");
    if judges.is_empty() {
        humanln!("  No reviews decided by a person after an evaluator verdict yet.");
    }
    for t in &judges {
        humanln!("{}", indented(&line(t)));
    }
    exit::OK
}

fn indented(words: &str) -> String {
    words.lines().map(|l| format!("  {l}")).collect::<Vec<_>>().join("\n")
}

fn agent_words(t: &finishline_engine::store::trust::AgentTrust) -> String {
    let name = if t.model.is_empty() { t.agent.clone() } else { format!("{} ({})", t.agent, t.model) };
    format!(
        "{name}\n  verified done {} · chosen among attempts {} · approved {} · claimed done without being done {}",
        share(t.verified_done, t.tasks),
        share(t.chosen, t.attempts_decided),
        share(t.approved, t.reviews_decided),
        share(t.false_claims, t.tasks)
    )
}

/// `finishline stats agents`: which agent to send which task to, from the person's own history.
pub fn agents(common: &Common) -> u8 {
    print_rows(common, |store| store.agent_trust(), "No tasks yet.", agent_words)
}
