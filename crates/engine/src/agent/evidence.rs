//! The evidence a run gathers for the completion engine: its counters, what it did (tools, todos,
//! claims), its stuck memory and the workspace as it was when the run began. It is run-scoped,
//! saved with the events that change it, and read back when a crashed or stranded run resumes,
//! so a restart can neither reset a budget nor forget a repeated failure.

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::domain::{PermissionDecision, RequestId, Verdict};
use crate::event::{EngineEvent, Envelope};
use crate::judge::completion::{Counters, VerificationFailure};
use crate::judge::stuck::StepRecord;

/// Step records kept for the stuck patterns; the longest pattern looks at 6 steps.
const KEPT_RECORDS: usize = 16;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RunEvidence {
    pub counters: Counters,
    /// Evaluator calls so far; each verdict is tagged with its cycle.
    pub cycle: u32,
    pub compactions: u32,
    /// Whether this run used tools, wrote todos or made a claim: a run that did none of these
    /// (and changed no files) is a conversation turn.
    pub used_tools: bool,
    pub wrote_todos: bool,
    pub prev_step_called_tools: bool,
    pub previous_verification_failure: Option<VerificationFailure>,
    pub previous_remaining: Option<Vec<String>>,
    pub records: Vec<StepRecord>,
    /// The workspace snapshot taken when this run began: "files changed" means since then.
    pub base_snapshot: Option<String>,
    pub verification_log: Vec<String>,
    pub last_verdict: Option<Verdict>,
    pub last_verdict_summary: Option<String>,
    /// How many of `windows` there were when the last verdict came: a change the agent made in a
    /// later one is work the verdict never saw. `None` in evidence kept before this was.
    pub verdict_at_window: Option<usize>,
    /// A plan step's last verdict: what later steps need from its work.
    pub last_verdict_output_data: Option<String>,
    /// The step before overflowed the context window and was compacted: another overflow fails.
    pub overflowed: bool,
    /// Plan mode: evaluations of this step that showed no progress, less those that did.
    pub plan_stalls: u32,
    /// The run's windows: snapshots before and after each stretch that could change files.
    /// What changed inside them is the run's; nothing else is.
    pub windows: Vec<(String, String)>,
    /// The snapshot of a window still open (a step's tools running when the process died).
    pub window_open: Option<String>,
    /// Beside each of `windows`: the paths the agent's own file tools wrote in it, when nothing
    /// else ran in it; `None` when a command or an external agent did (or for windows recorded
    /// before this was kept), so a change there may hold the person's edit made meanwhile.
    pub window_writes: Vec<Option<Vec<String>>>,
    /// The same for the window still open.
    pub open_writes: Option<Vec<String>>,
    /// By the index of one of `windows` that a kill left open: the paths it changed after the
    /// run was last seen alive, when the person may have changed them (see
    /// [`crate::workspace::last_seen`]). A revert asks before it puts them back.
    pub window_unseen: std::collections::BTreeMap<usize, Vec<String>>,
    /// A plan step: what decided it (its checks without a model), for the plan panel.
    pub decided_by: Option<String>,
    /// The plan step the last verdict was on ("Step 2: Write b.txt"), when it judged a step and
    /// not the whole task.
    pub last_verdict_on_step: Option<String>,
    /// The last step's evaluation found the whole request done: the final check needs no call.
    pub whole_judged: bool,
    /// The run answers Request changes or a landing conflict (kept when it resumes).
    pub answers_review: bool,
}

/// One of a run's windows, as the ownership of its changes needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct Window {
    pub before: String,
    pub after: String,
    /// The paths the agent's own file tools wrote in it when nothing else ran there.
    pub writes: Option<Vec<String>>,
    /// The paths it changed after the run was last seen alive (a window a kill left open).
    pub unseen: Vec<String>,
}

impl RunEvidence {
    /// What the agent's file tools wrote in window `i`, when nothing else ran in it.
    pub fn writes_of(&self, i: usize) -> Option<&[String]> {
        self.window_writes.get(i).and_then(|w| w.as_deref())
    }

    /// The paths window `i` changed after the run was last seen alive.
    pub fn unseen_in(&self, i: usize) -> &[String] {
        self.window_unseen.get(&i).map_or(&[], Vec::as_slice)
    }

    pub fn windows_with_writes(&self) -> Vec<Window> {
        self.windows
            .iter()
            .enumerate()
            .map(|(i, (b, a))| Window {
                before: b.clone(),
                after: a.clone(),
                writes: self.writes_of(i).map(<[String]>::to_vec),
                unseen: self.unseen_in(i).to_vec(),
            })
            .collect()
    }

    pub fn record(&mut self, record: StepRecord) {
        self.records.push(record);
        let extra = self.records.len().saturating_sub(KEPT_RECORDS);
        self.records.drain(..extra);
    }

    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// The evidence a resumed run continues from; a value of another shape starts afresh.
    pub fn from_json(v: Value) -> Option<RunEvidence> {
        serde_json::from_value(v).ok()
    }
}

/// Tools the person allowed "for this session", read from the session's events: the grant lasts
/// as long as the session, across runs and restarts. A request with no call of the agent's (a
/// plan step's check, the agent's verify command) granted its command, as the run that asked
/// did: a plan's next step, a run of its own, asked again.
pub fn session_grants(events: &[Envelope]) -> HashSet<String> {
    // Each request's grant: a command's (Finishline's own key), or a tool's, by its name only.
    let mut asked: HashMap<&RequestId, Result<String, &str>> = HashMap::new();
    let mut granted = HashSet::new();
    for e in events {
        match &e.event {
            EngineEvent::PermissionRequested { request_id, tool, input, call_id, .. } => {
                let command = call_id.is_none().then(|| input.get("command").and_then(Value::as_str)).flatten();
                asked.insert(request_id, command.map(super::permission::command_grant).ok_or(tool.as_str()));
            }
            EngineEvent::PermissionResolved { request_id, decision: PermissionDecision::AllowSession } => match asked.get(request_id) {
                Some(Ok(command)) => {
                    granted.insert(command.clone());
                }
                Some(Err(tool)) => super::permission::grant(&mut granted, tool),
                None => {}
            },
            // Allowed when the task was started: for good, as "always this session" is.
            EngineEvent::TaskAllowed { tools } => super::permission::grant_started_with(&mut granted, tools),
            _ => {}
        }
    }
    granted
}

/// The agent's tool call a permission request or question was about: `(call_id, tool, input)`.
/// Requests stored before `call_id` existed are matched to the call waiting just before them.
pub fn call_of_request(events: &[Envelope], request: &RequestId) -> Option<(String, String, Value)> {
    let mut waiting: Option<(String, String, Value)> = None;
    let mut calls: HashMap<String, (String, Value)> = HashMap::new();
    for e in events {
        match &e.event {
            EngineEvent::ToolCall { call_id, tool, input, state, .. } => {
                if !input.is_null() {
                    calls.insert(call_id.clone(), (tool.clone(), input.clone()));
                }
                if *state == crate::domain::ToolState::AwaitingPermission {
                    waiting = calls.get(call_id).map(|(t, i)| (call_id.clone(), t.clone(), i.clone()));
                }
            }
            EngineEvent::PermissionRequested { request_id, call_id, .. } | EngineEvent::QuestionAsked { request_id, call_id, .. } if request_id == request => {
                return match call_id {
                    Some(id) => calls.get(id).map(|(t, i)| (id.clone(), t.clone(), i.clone())),
                    None if matches!(e.event, EngineEvent::QuestionAsked { .. }) => waiting,
                    // A verification command: Finishline's own, not a call of the agent's.
                    None => None,
                };
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_recorded_before_writes_were_kept_are_nobodys_for_sure() {
        // Evidence saved by an earlier version: two windows and nothing beside them.
        let mut ev = RunEvidence::from_json(serde_json::json!({"windows": [["a", "b"], ["b", "c"]]})).unwrap();
        assert_eq!(ev.writes_of(0), None);
        // A window closed since lines up with its own writes, not with the first window.
        ev.window_writes.resize(ev.windows.len(), None);
        ev.windows.push(("c".into(), "d".into()));
        ev.window_writes.push(Some(vec!["x.txt".into()]));
        let w = ev.windows_with_writes();
        assert_eq!((w[1].writes.clone(), w[2].writes.clone()), (None, Some(vec!["x.txt".to_string()])));
    }
}
