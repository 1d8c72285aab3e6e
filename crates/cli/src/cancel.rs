//! `sessions cancel` and `sessions attempts G --cancel`: what runs in this process stops at
//! once; a run another process is at work on (a terminal, the window) is asked to stop, and this
//! one waits until it has, so that what it says is what happened.

use std::time::{Duration, Instant};

use finishline_engine::agent::{Engine, Stop};
use finishline_engine::domain::{GroupId, SessionId};
use finishline_engine::store::{RunsElsewhere, Store};

use crate::output::{errln, outln};
use crate::run::{fail, fail_on};
use crate::{config, exit, Common};

/// How long a process asked to stop a run has before this one says it has not. It looks every
/// second; a run busy in a tool or a model's answer stops as soon as that is cut.
const STOP_WAIT: Duration = Duration::from_secs(15);

/// Waits until none of `sessions` is at work any more, or [`STOP_WAIT`] has passed: those still
/// at work then.
fn until_stopped(store: &Store, sessions: &[SessionId]) -> Vec<SessionId> {
    let until = Instant::now() + STOP_WAIT;
    loop {
        let left: Vec<SessionId> = sessions.iter().filter(|s| store.session(s).is_ok_and(|s| s.status.at_work())).cloned().collect();
        if left.is_empty() || Instant::now() >= until {
            return left;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// What to say of a process asked to stop a run that has not yet.
fn not_yet(what: &str, by: &RunsElsewhere) -> String {
    format!(
        "{what} was asked to stop and has not within {} s: the process running it (pid {} on {}) may be busy or hung; if it stays so, end that process, and the session is marked interrupted",
        STOP_WAIT.as_secs(),
        by.pid,
        by.host
    )
}

/// `sessions cancel ID`: a session at work in another process is stopped by it; one left waiting
/// for the person by a process that is gone has what it waits for cancelled.
pub fn session(id: &str, common: &Common) -> u8 {
    let store = match crate::sessions::open(common) {
        Ok(s) => s,
        Err(c) => return c,
    };
    let sid = SessionId(id.into());
    match store.ask_to_cancel(&sid) {
        Ok(Some(by)) => {
            return if until_stopped(&store, std::slice::from_ref(&sid)).is_empty() {
                outln!("Cancelled {id} in another terminal or the window, which stopped it: nothing more runs in it; its history stays.");
                exit::OK
            } else {
                fail(exit::FAILED, common.json, &not_yet(id, &by))
            };
        }
        Ok(None) => {}
        Err(e) if e.code() == finishline_engine::ErrorCode::NotFound => return fail_on(exit::USAGE, common.json, &e),
        Err(e) => return fail_on(exit::FAILED, common.json, &e),
    }
    match finishline_engine::agent::cancel_waiting(&store, &config::data_dir(common), &sid) {
        Ok(true) => {
            outln!("Cancelled {id}: nothing more runs in it; its history stays.");
            exit::OK
        }
        Ok(false) if store.session(&sid).is_ok_and(|s| s.status == finishline_engine::domain::SessionStatus::AwaitingReview) => fail(
            exit::USAGE,
            common.json,
            &format!(
                "{id} waits for your review, which cancelling does not answer: decide it with `{}`, `--reject` or `--request-changes \"what to change\"`",
                crate::hint::command(&format!("sessions review {id} --approve"))
            ),
        ),
        Ok(false) => {
            let status = store.session(&sid).map(|s| s.status.as_str()).unwrap_or("unknown");
            fail(exit::USAGE, common.json, &format!("{id} is {status}: nothing in it runs or waits, so there is nothing to cancel"))
        }
        Err(e) if e.code() == finishline_engine::ErrorCode::NotFound => fail_on(exit::USAGE, common.json, &e),
        Err(e) => fail_on(exit::FAILED, common.json, &e),
    }
}

/// "1 attempt", "2 attempts".
fn attempts(n: usize) -> String {
    format!("{n} attempt{}", if n == 1 { "" } else { "s" })
}

/// `sessions attempts G --cancel`: every attempt still at work stops, here or where it runs.
pub fn group(engine: &Engine, store: &Store, group: &GroupId, json: bool) -> u8 {
    let stops = match engine.cancel_group(group) {
        Ok(s) => s,
        Err(e) => return fail_on(exit::USAGE, json, &e),
    };
    let here = stops.iter().filter(|(_, s)| *s == Stop::Stopped).count();
    let asked: Vec<(SessionId, RunsElsewhere)> = stops.into_iter().filter_map(|(id, s)| if let Stop::Asked(by) = s { Some((id, by)) } else { None }).collect();
    if here > 0 {
        errln!("{} cancelled.", attempts(here));
    }
    if here == 0 && asked.is_empty() {
        errln!("No attempt of this group is running.");
        return exit::OK;
    }
    let left = until_stopped(store, &asked.iter().map(|(id, _)| id.clone()).collect::<Vec<_>>());
    if asked.len() > left.len() {
        errln!("{} cancelled in another terminal or the window.", attempts(asked.len() - left.len()));
    }
    match left.first() {
        None => exit::OK,
        Some(first) => {
            let labels = engine.attempts(group).unwrap_or_default();
            let names: Vec<String> = left
                .iter()
                .map(|id| labels.iter().find(|s| &s.id == id).and_then(|s| s.attempt.as_ref()).map_or(id.to_string(), |a| a.label.clone()))
                .collect();
            let by = &asked.iter().find(|(id, _)| id == first).expect("asked").1;
            fail(exit::FAILED, json, &not_yet(&finishline_engine::and_list::and_list(&names), by))
        }
    }
}
