//! The audit's findings dismissed from the CLI, as the window's Dismiss does, and dismissals
//! taken back: each named by its file and line, as the review prints it.

use finishline_engine::domain::SessionId;
use finishline_engine::judge::audit::Finding;
use serde_json::json;

use crate::output::outln;
use crate::run::{fail, fail_on, no_review, open_for, show_waiting_review, Need, Opened};
use crate::{exit, RunOptions};

/// Dismisses the findings at `dismiss` and takes back the dismissals at `restore` (each
/// `FILE[:LINE]`), then shows the review as it stands. Every place is checked first: one that
/// names no finding records nothing.
pub fn dismiss_or_restore(id: &str, dismiss: &[String], restore: &[String], opts: &RunOptions) -> Result<u8, u8> {
    let json = opts.common.json;
    let Opened { engine, store, .. } = open_for(opts, Need::Decision)?;
    let sid = SessionId(id.to_string());
    let Some((review, _, _)) = store.pending_requests(&sid).unwrap_or_default().into_iter().find(|(_, k, _)| k == "review") else {
        return Err(fail(exit::USAGE, json, &no_review(&store, &sid)));
    };
    let events = store.events(&sid, 0).map_err(|e| fail_on(exit::FAILED, json, &e))?;
    let found = finishline_engine::agent::changes::review_audit(&events, &review);
    let standing = finishline_engine::agent::changes::standing_findings(found.clone(), &events);
    let dismissed: Vec<Finding> = found.iter().filter(|f| !standing.contains(f)).cloned().collect();
    let to_dismiss = at_places(dismiss, &standing, ("stands", "those that do")).map_err(|e| fail(exit::USAGE, json, &e))?;
    let to_restore = at_places(restore, &dismissed, ("was dismissed", "those dismissed")).map_err(|e| fail(exit::USAGE, json, &e))?;
    for (f, dismissing) in to_dismiss.iter().map(|f| (f, true)).chain(to_restore.iter().map(|f| (f, false))) {
        let done = if dismissing { engine.dismiss_finding(&sid, f) } else { engine.restore_finding(&sid, f) };
        if let Err(e) = done {
            return Err(fail_on(exit::FAILED, json, &e));
        }
        if json {
            outln!("{}", json!({"type": if dismissing { "finding_dismissed" } else { "finding_restored" }, "finding": f}));
        } else {
            crate::output::say(&format!("{}: {}\n", if dismissing { "Dismissed for this task" } else { "Counts again" }, f.describe()));
        }
    }
    Ok(show_waiting_review(id, opts))
}

/// The findings among `among` at each place (`FILE:LINE`, or `FILE` for all of a file's), or
/// which place names none, with those there are.
fn at_places(places: &[String], among: &[Finding], (which, those): (&str, &str)) -> Result<Vec<Finding>, String> {
    let mut out: Vec<Finding> = Vec::new();
    for place in places {
        let (path, line) = match place.rsplit_once(':') {
            Some((p, l)) if !l.is_empty() && l.bytes().all(|b| b.is_ascii_digit()) => (p, l.parse::<u32>().ok()),
            _ => (place.as_str(), None),
        };
        let here: Vec<&Finding> = among.iter().filter(|f| f.path == path && (line.is_none() || f.line == line)).collect();
        if here.is_empty() {
            let there = if among.is_empty() {
                "there are none".to_string()
            } else {
                format!("{those}: {}", among.iter().map(Finding::describe).collect::<Vec<_>>().join("; "))
            };
            return Err(format!("no finding of this review {which} at {place}; {there}"));
        }
        for f in here {
            if !out.contains(f) {
                out.push(f.clone());
            }
        }
    }
    Ok(out)
}
