//! The review gate's evidence: the claim in the agent's own words beside the evaluator's verdict,
//! the end reason (with the stuck pattern), verification, the session's file changes with diffs,
//! tokens and cost; and auto-approval, which takes only a verified completion.

use serde_json::{json, Value};

use super::run::Run;
use crate::domain::*;
use crate::event::EngineEvent;

/// What a run ends at the review gate with.
pub(super) struct ReviewInput {
    pub claim: Claim,
    pub claim_words: Option<ClaimWords>,
    pub end_reason: EndReason,
    pub remaining: Vec<String>,
    pub stuck: Option<Stuck>,
}

impl Run {
    /// A step's tools are done: the window around them closes.
    pub(super) fn snapshot_after_step(&mut self) -> crate::Result<()> {
        self.close_window()
    }

    pub(super) fn review(&mut self, r: ReviewInput) -> crate::Result<()> {
        let review_id = RequestId::new();
        let left_out = self.commit_to_branch()?;
        let changes = self.changes();
        let mut not_landed = left_out.ignored;
        if let Some(wt) = &self.folder.worktree {
            // A file copied in from the person's checkout (`.env`) never lands either: a change
            // the task made to it is shown, and named with what goes with the worktree.
            let copied = super::changes::copied_files(&self.engine.store.events(&self.session, 0)?);
            let from_top = |p: &str| if wt.subdir.is_empty() { p.to_string() } else { format!("{}/{p}", wt.subdir) };
            for c in &changes {
                let path = from_top(&c.path);
                if copied.contains(&path) && !not_landed.contains(&path) {
                    not_landed.push(path);
                }
            }
        }
        let files: Vec<Value> = changes
            .into_iter()
            .filter(|c| !crate::workspace::submodules::within(&c.path, &left_out.submodules))
            .map(|c| serde_json::to_value(c).unwrap_or_default())
            .collect();
        let verification: Vec<Value> = self.evidence.verification_log.iter().map(|v| json!(v)).collect();
        let audit = self.audit(true);
        self.criteria_at_review()?;
        let summary = self.engine.store.session(&self.session).ok();
        let unconfirmed = self.criteria_results.iter().filter(|c| c.state != crate::judge::criteria::CriterionState::Met).count();
        let (mut auto, mut why) = auto_approval(self.engine.config.auto_approve, r.end_reason, r.claim, audit.len(), unconfirmed);
        if auto && self.checkpoints.is_none() {
            // The audit had no diff to look at, and a reject could not undo the work.
            (auto, why) = (false, "the task's changes were not recorded, so the audit could not look at them: check them yourself".into());
        }
        if auto && !not_landed.is_empty() {
            // A file the agent wrote on purpose would go with the worktree unseen; what its
            // commands left (a build folder, node_modules) is no reason to wait.
            let events = self.engine.store.events(&self.session, 0)?;
            let hidden = self.folder.worktree.as_ref().map(|wt| written_and_hidden(&events, &not_landed, wt)).unwrap_or_default();
            if !hidden.is_empty() {
                (auto, why) = (
                    false,
                    format!("the agent wrote {}, which .gitignore hides: it would not land, and goes with the worktree unless you keep it", hidden.join(", ")),
                );
            }
        }
        if auto && !left_out.in_submodules.is_empty() {
            (auto, why) = (false, in_submodules_reason(&left_out.in_submodules));
        }
        if auto && self.folder.worktree.as_ref().is_some_and(|wt| wt.base_branch.is_none()) {
            // Nothing can land: keeping the branch instead is the person's call (a script on a
            // detached checkout, as CI's often is, would go on without the work).
            (auto, why) = (false, "the task started on no branch, so nothing can land: keeping its branch instead is yours to choose".into());
        }
        let mut group_decides = false;
        if let Some(a) = summary.as_ref().and_then(|s| s.attempt.as_ref()) {
            // Landing one attempt on its own would decide the group behind the person's back;
            // a reason found above still holds it, whatever the group decides.
            if auto {
                (auto, why, group_decides) = (false, format!("it is attempt {} of {}: you choose between them", a.number, a.of), true);
            }
        }
        let tokens = summary.map(|s| s.tokens).unwrap_or_default();
        let (cost_usd, round_cost_usd) = (self.cost(), self.round_cost());
        // A verdict on files changed since is not the review's: "not asked at the end", and its
        // answer stays in the story where it came.
        let outdated = self.verdict_outdated();
        let verdict = self.evidence.last_verdict.filter(|_| !outdated);
        let mut events = vec![
            EngineEvent::ReviewRequested {
                review_id: review_id.clone(),
                claim: r.claim,
                verdict,
                end_reason: r.end_reason,
                remaining: r.remaining,
                files_changed: files,
                verification,
                tokens,
                cost_usd,
                round_cost_usd,
                claim_words: r.claim_words,
                verdict_summary: self.evidence.last_verdict_summary.clone().filter(|_| !outdated),
                verdict_on_step: self.evidence.last_verdict_on_step.clone().filter(|_| !outdated),
                stuck: r.stuck.clone(),
                not_covered: self.checkpoints.as_ref().map(|c| c.not_covered()).unwrap_or_default(),
                unrecorded: self.checkpoints.is_none(),
                not_landed,
                in_submodules: left_out.in_submodules,
                audit,
                auto_approve: self.engine.config.auto_approve.then_some(crate::event::AutoApproval { approved: auto, reason: why, group_decides }),
                criteria: self.criteria_results.clone(),
            },
            EngineEvent::RunFinished { status: SessionStatus::AwaitingReview, claim: r.claim, verdict, end_reason: r.end_reason, stuck: r.stuck },
            Self::status(SessionStatus::AwaitingReview),
        ];
        if !auto {
            events.insert(1, EngineEvent::Activity { phase: ActivityPhase::Waiting, detail: "your review".into() });
        }
        self.emit_all(events)?;
        if auto {
            // Approved as the person would: in a worktree it lands, and a landing that cannot
            // go through leaves the review open for the person.
            // A Stop that comes before its landing exists stops it too.
            let choice =
                super::decision::ReviewChoice { stop: Some(self.cancel.clone()), ..super::decision::ReviewChoice::new(Decision::Approve, DecidedBy::Auto) };
            let engine = self.engine.clone();
            tokio::task::block_in_place(|| engine.decide(&review_id, choice))?;
        } else {
            self.lend_index();
        }
        Ok(())
    }

    /// The session's cost so far, when every model it used has a price.
    fn cost(&self) -> Option<f64> {
        self.priced(self.engine.store.usage_by_source(&self.session).ok()?)
    }

    /// The cost of the usage since the session's last review, for a review after one.
    fn round_cost(&self) -> Option<f64> {
        let events = self.engine.store.events(&self.session, 0).ok()?;
        let last = events.iter().rposition(|e| matches!(e.event, EngineEvent::ReviewRequested { .. }))?;
        self.priced(events[last..].iter().filter_map(|e| e.event.usage()).map(|(source, u)| (source, u.input_tokens, u.output_tokens)))
    }

    /// Usage by source priced at the settings' prices, when every model it used has one.
    fn priced(&self, usage: impl IntoIterator<Item = (UsageSource, u64, u64)>) -> Option<f64> {
        let cfg = &self.engine.config;
        let agent = cfg.prices.get(&self.agent_model)?;
        let evaluator_model = self.evaluator.model.as_str();
        let mut total = 0.0;
        for (source, input, output) in usage {
            let p = match source {
                UsageSource::Evaluator => cfg.prices.get(evaluator_model)?,
                _ => agent,
            };
            total += (input as f64 * p.input_per_mtok + output as f64 * p.output_per_mtok) / 1_000_000.0;
        }
        Some(total)
    }
}

/// Of what never lands (`not_landed`: files and folders `.gitignore` hides), the entries holding
/// a file the agent wrote with its file tools in the task's current worktree.
fn written_and_hidden(events: &[crate::event::Envelope], not_landed: &[String], wt: &crate::workspace::worktree::TaskWorktree) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for e in super::changes::since_worktree(events) {
        let EngineEvent::ToolCall { tool, input, state: ToolState::Done, .. } = &e.event else { continue };
        let Some(path) = written_path(tool, input).and_then(|p| in_repository(p, wt)) else { continue };
        let path = path.as_str();
        let entry = not_landed.iter().find(|n| match n.strip_suffix('/') {
            Some(folder) => path.strip_prefix(folder).is_some_and(|rest| rest.starts_with('/')),
            None => path == n.as_str(),
        });
        if let Some(entry) = entry.filter(|e| !out.contains(e)) {
            out.push(entry.clone());
        }
    }
    out
}

/// The file a file tool's call named, unless the tool only reads: Finishline's own (`write_file`,
/// `edit_file`) or an ACP agent's, as it names them and their path (OpenCode `write` with
/// `filePath`; Claude Code `Write /abs/path` with `file_path`; Gemini CLI's titles describe the
/// call). A tool this does not know counts as writing: the worst is a review that waits for the
/// person. A command's output is not named here: what a build leaves is no reason to wait.
fn written_path<'a>(tool: &str, input: &'a Value) -> Option<&'a str> {
    let verb: String = tool.split_whitespace().next()?.chars().filter(char::is_ascii_alphanumeric).collect::<String>().to_ascii_lowercase();
    let reads = ["read", "view", "list", "ls", "glob", "grep", "search", "find", "fetch", "open", "cat", "readfile", "readmanyfiles", "listdir", "reading"];
    if reads.contains(&verb.as_str()) {
        return None;
    }
    ["path", "filePath", "file_path", "absolute_path"].iter().find_map(|k| input.get(k).and_then(Value::as_str))
}

/// A file tool's path as the repository names it: the tools take paths relative to the folder
/// the task works in (a subfolder of the worktree) or absolute inside it, `..` included.
fn in_repository(path: &str, wt: &crate::workspace::worktree::TaskWorktree) -> Option<String> {
    use std::path::{Component, Path};
    let top = Path::new(&wt.folder);
    let full = top.join(&wt.subdir).join(path);
    let mut parts: Vec<String> = Vec::new();
    for c in full.strip_prefix(top).ok()?.components() {
        match c {
            Component::Normal(n) => parts.push(n.to_string_lossy().into_owned()),
            Component::ParentDir => {
                parts.pop()?;
            }
            _ => {}
        }
    }
    Some(parts.join("/"))
}

/// Whether auto-approve takes a review, and why (not): only a verified completion with a success
/// claim or none, never one whose changes the audit flagged, and never one with a comment of the
/// person's that the judge did not find met (unmet, or left without a word).
pub(super) fn auto_approval(enabled: bool, end: EndReason, claim: Claim, findings: usize, unconfirmed_comments: usize) -> (bool, String) {
    if !enabled {
        return (false, "auto-approve is off".into());
    }
    if end != EndReason::VerifiedDone {
        return (false, format!("the run ended {} rather than verified done", end.as_str()));
    }
    if !matches!(claim, Claim::Success | Claim::None) {
        return (false, format!("the agent claimed {}", claim.as_str()));
    }
    if findings > 0 {
        let (changes, weaken) = if findings == 1 { ("change", "weakens or bypasses") } else { ("changes", "weaken or bypass") };
        return (false, format!("the audit found {findings} {changes} that {weaken} the checks"));
    }
    if unconfirmed_comments > 0 {
        let (was, it) = if unconfirmed_comments == 1 { ("was", "it") } else { ("were", "them") };
        return (false, format!("{unconfirmed_comments} of your comments {was} not confirmed met: check {it} yourself"));
    }
    (true, "verified done, and the audit found nothing".into())
}

/// Why auto-approve leaves changes inside submodules to the person: named by submodule.
fn in_submodules_reason(files: &[String]) -> String {
    let shown: Vec<&str> = files.iter().take(5).map(String::as_str).collect();
    let more = if files.len() > shown.len() { format!(" and {} more", files.len() - shown.len()) } else { String::new() };
    format!(
        "the agent changed {}{more} inside a submodule: the task's branch cannot carry that, and it goes with the worktree unless you make it in the submodule's own repository",
        shown.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_approve_takes_only_a_verified_completion_the_audit_found_clean() {
        assert!(auto_approval(true, EndReason::VerifiedDone, Claim::Success, 0, 0).0);
        assert!(auto_approval(true, EndReason::VerifiedDone, Claim::None, 0, 0).0);
        let (ok, why) = auto_approval(true, EndReason::VerifiedDone, Claim::Success, 1, 0);
        assert_eq!((ok, why.as_str()), (false, "the audit found 1 change that weakens or bypasses the checks"), "a finding leaves it to the person");
        assert_eq!(auto_approval(true, EndReason::VerifiedDone, Claim::Success, 2, 0).1, "the audit found 2 changes that weaken or bypass the checks");
        assert!(!auto_approval(true, EndReason::Unverified, Claim::Success, 0, 0).0);
        assert!(!auto_approval(true, EndReason::VerifiedDone, Claim::Partial, 0, 0).0);
        assert!(!auto_approval(false, EndReason::VerifiedDone, Claim::Success, 0, 0).0);
        assert_eq!(
            auto_approval(true, EndReason::VerifiedDone, Claim::Success, 0, 2),
            (false, "2 of your comments were not confirmed met: check them yourself".to_string()),
            "the person's comments are criteria: unchecked, they are the person's to check"
        );
    }

    fn wrote(tool: &str, path: &str, state: ToolState) -> crate::event::Envelope {
        let event = EngineEvent::ToolCall {
            call_id: path.into(),
            message_id: None,
            tool: tool.into(),
            kind: None,
            input: json!({ "path": path }),
            state,
            output: None,
        };
        crate::event::Envelope { seq: 0, session_id: SessionId("s".into()), run_id: None, at: String::new(), event }
    }

    #[test]
    fn a_hidden_entry_counts_only_when_the_file_tools_wrote_into_it() {
        let hidden = [".env".to_string(), "build/".to_string(), "node_modules/".to_string()];
        let events = [
            wrote("write_file", "./build/out.js", ToolState::Done),
            wrote("edit_file", ".env", ToolState::Done),
            wrote("write_file", "build/again.js", ToolState::Done),
            wrote("write_file", "node_modules_notes.txt", ToolState::Done),
            wrote("write_file", "node_modules/x.js", ToolState::Denied),
            wrote("read_file", "node_modules/y.js", ToolState::Done),
        ];
        let at = |subdir: &str| crate::workspace::worktree::TaskWorktree {
            repo: "/r".into(),
            folder: "/w/t".into(),
            subdir: subdir.into(),
            branch: "b".into(),
            base_branch: None,
            base_commit: "c".into(),
        };
        let wt = at("app");
        assert_eq!(written_and_hidden(&events, &hidden, &wt), vec![] as Vec<String>, "paths are the task folder's, app/ here");
        let top = at("");
        assert_eq!(written_and_hidden(&events, &hidden, &top), vec!["build/".to_string(), ".env".to_string()]);
        let more = [wrote("write_file", "/w/t/app/.env", ToolState::Done), wrote("write_file", "../build/x.js", ToolState::Done)];
        assert_eq!(
            written_and_hidden(&more, &[".env".into(), "app/.env".into(), "build/".into()], &wt),
            vec!["app/.env".to_string(), "build/".to_string()],
            "absolute and `..` paths too"
        );
    }

    #[test]
    fn a_hidden_file_an_acp_agents_own_file_tools_wrote_counts_too() {
        let call = |tool: &str, input: Value| crate::event::Envelope {
            seq: 0,
            session_id: SessionId("s".into()),
            run_id: None,
            at: String::new(),
            event: EngineEvent::ToolCall { call_id: tool.into(), message_id: None, tool: tool.into(), kind: None, input, state: ToolState::Done, output: None },
        };
        let wt = crate::workspace::worktree::TaskWorktree {
            repo: "/r".into(),
            folder: "/w/t".into(),
            subdir: String::new(),
            branch: "b".into(),
            base_branch: None,
            base_commit: "c".into(),
        };
        let hidden = [".env".to_string(), "secrets/".to_string(), "build/".to_string(), "dist/".to_string()];
        let events = [
            call("write", json!({"filePath": "/w/t/.env", "content": "x"})),                  // OpenCode
            call("Write /w/t/secrets/key.pem", json!({"file_path": "/w/t/secrets/key.pem"})), // Claude Code
            call("WriteFile", json!({"file_path": "build/out.js"})),                          // Gemini CLI
            call("Read /w/t/dist/x.js", json!({"file_path": "/w/t/dist/x.js"})),              // read, not written
            call("ReadFile", json!({"absolute_path": "/w/t/dist/y.js"})),
            call("list_dir", json!({"path": "dist"})),
        ];
        assert_eq!(written_and_hidden(&events, &hidden, &wt), vec![".env".to_string(), "secrets/".to_string(), "build/".to_string()]);
    }
}
