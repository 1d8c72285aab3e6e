//! What the CLI prints: the engine's events as JSON lines (`--json`), or a readable live view.
//! Continuations and verdicts are marked as Finishline's, never shown as the person's words.

use finishline_engine::domain::*;
use finishline_engine::event::{EngineEvent, Envelope};
use finishline_engine::judge::completion::EvaluationQuestion;
use finishline_engine::store::Store;
use serde_json::json;

use crate::output::outln;

pub struct View {
    json: bool,
    last_seq: u64,
    /// It follows a session that ran before: its counts are this command's alone, beside the
    /// session's tokens.
    resumed: bool,
    in_text: bool,
    steps: u32,
    model_calls: u32,
    /// Calls that reached an end (done, failed, denied, unknown), each once however many updates
    /// it had: what the window shows as tool cards.
    tool_calls: std::collections::HashSet<String>,
    continuations: u32,
    evaluations: u32,
    /// In a worktree, every file the task's branch changes since it started: Approve lands them
    /// all, also those of rounds before the one a review shows.
    lands: Vec<String>,
    /// The agent wanted a login and its ways were shown: the error and the status that follow
    /// say the same in the window's words, so they are said in short.
    login_shown: Option<String>,
    /// The calls whose start was shown (`→ tool {input}`).
    calls_shown: std::collections::HashSet<String>,
    pub round: Round,
    /// The last error said, so the failure that follows in the same words is not said twice.
    last_error: Option<String>,
    /// What the run's last error was: a server that was not there is left behind by naming another.
    last_error_code: Option<finishline_engine::error::ErrorCode>,
    /// Why the session is queued, as its status said it.
    queued_for: Option<String>,
    /// The plan's steps as the manager made them: what the person's edits are told against.
    plan_made: Vec<finishline_engine::domain::PlanStep>,
}

/// Where the review a run asks for stands among the task's rounds: after a request for changes
/// its files are those changed since the person's last review, and in the folder itself a revert
/// on Reject undoes the earlier rounds too (in a worktree they go with it, and Approve lands them).
/// An attempt's review shows every round: it is weighed whole against the other attempts.
#[derive(Debug, Default, Clone, Copy)]
pub struct Round {
    since_last_review: bool,
    in_place: bool,
    attempt: bool,
}

impl Round {
    /// The round as of the end of `events`.
    pub fn after<'a>(events: impl IntoIterator<Item = &'a EngineEvent>) -> Round {
        let mut r = Round::default();
        for e in events {
            r.apply(e);
        }
        r
    }

    fn apply(&mut self, event: &EngineEvent) {
        match event {
            EngineEvent::TaskWorkspace { worktree, .. } => *self = Round { since_last_review: false, in_place: worktree.is_none(), ..*self },
            EngineEvent::AttemptStarted { .. } => self.attempt = true,
            // Resolving a landing is not a review of the work: its diff is what lands.
            EngineEvent::ReviewResolved { decision: Decision::RequestChanges, occasion, .. } => {
                self.since_last_review = *occasion != Some(DecisionOccasion::ResolveLanding) && !self.attempt
            }
            // Approved or rejected, the rounds before are settled: a follow-up starts afresh,
            // and a revert on its Reject covers only what it changed.
            EngineEvent::ReviewResolved { .. } => self.since_last_review = false,
            _ => {}
        }
    }

    /// The task works in the person's folder itself, not a worktree of its own.
    pub fn in_place(self) -> bool {
        self.in_place
    }

    /// "N file(s) changed", and since when.
    pub fn files_changed(self, n: usize) -> String {
        format!("{n} file(s) changed{}", if self.since_last_review { " since your last review" } else { "" })
    }

    /// In the folder itself, the files that changed while a command or an external agent was at
    /// work: an edit the person saved then is in them, looking like the agent's. Said before the
    /// decision, so that undoing them is asked knowing it (the revert keeps a copy of each).
    pub fn unattributed_line(self, files_changed: &[serde_json::Value]) -> Option<String> {
        let paths: Vec<String> = files_changed
            .iter()
            .filter(|f| f["unattributed"].as_bool() == Some(true))
            .filter_map(|f| f["path"].as_str())
            .map(|p| p.escape_debug().to_string())
            .collect();
        (self.in_place && !paths.is_empty()).then(|| {
            format!(
                "    changed while a command or an external agent was at work: {} (an edit of yours saved then looks like the agent's: a revert keeps a copy of each before putting it back)",
                crate::run::few(&paths)
            )
        })
    }

    /// What the diff of a later round leaves unsaid in the folder itself.
    pub fn revert_note(self) -> Option<&'static str> {
        (self.since_last_review && self.in_place).then_some("    (a revert on Reject undoes the earlier rounds too: what they changed is the task's)")
    }
}

impl View {
    pub fn new(json: bool, after: u64) -> Self {
        View {
            json,
            last_seq: after,
            resumed: after > 0,
            in_text: false,
            steps: 0,
            model_calls: 0,
            tool_calls: Default::default(),
            continuations: 0,
            login_shown: None,
            calls_shown: Default::default(),
            round: Round::default(),
            last_error: None,
            last_error_code: None,
            queued_for: None,
            evaluations: 0,
            lands: vec![],
            plan_made: vec![],
        }
    }

    pub fn last_seq(&self) -> u64 {
        self.last_seq
    }

    fn line(&mut self, s: &str) {
        if self.in_text {
            outln!();
            self.in_text = false;
        }
        crate::output::human(&format!("{s}\n"));
    }

    /// What the summary line counts.
    fn count(&mut self, event: &EngineEvent) {
        self.round.apply(event);
        match event {
            // Every run counts its steps from 1 (a plan's steps, a follow-up): each one is counted.
            EngineEvent::StepStarted { .. } => {
                self.steps += 1;
                self.model_calls += 1;
            }
            EngineEvent::ToolCall { call_id, state: ToolState::Done | ToolState::Error | ToolState::Denied | ToolState::Unknown, .. } => {
                self.tool_calls.insert(call_id.clone());
            }
            // Finishline sending the agent back; a plan step's or a resume's opening is a hand-over.
            EngineEvent::Continuation { source, .. } if !is_hand_over(*source) => self.continuations += 1,
            EngineEvent::TaskWorkspace { .. } => self.lands.clear(),
            // A new run's failure is its own, whatever an earlier one said about logging in.
            EngineEvent::RunStarted { .. } => (self.login_shown, self.last_error, self.last_error_code) = (None, None, None),
            EngineEvent::TaskCommitted { files_since_start: Some(files), .. } => self.lands = files.clone(),
            EngineEvent::Evaluation { .. } => {
                self.evaluations += 1;
                self.model_calls += 1;
            }
            _ => {}
        }
    }

    /// Whether the events shown are told in words (not `--json`): an outcome they told is not
    /// said again.
    pub fn tells(&self) -> bool {
        !self.json
    }

    pub fn show(&mut self, env: &Envelope) {
        if env.seq <= self.last_seq {
            return;
        }
        self.last_seq = env.seq;
        self.count(&env.event);
        if self.json {
            outln!("{}", serde_json::to_string(env).unwrap_or_default());
            return;
        }
        match &env.event {
            EngineEvent::PlanCreated { .. }
            | EngineEvent::PlanRevised { .. }
            | EngineEvent::PlanReviewed { .. }
            | EngineEvent::PlanStepStarted { .. }
            | EngineEvent::PlanStepFinished { .. } => self.show_plan(&env.event),
            EngineEvent::TaskWorkspace { .. }
            | EngineEvent::Rebased { .. }
            | EngineEvent::Landed { .. }
            | EngineEvent::LandingBlocked { .. }
            | EngineEvent::IgnoredCopied { .. }
            | EngineEvent::WorktreeRemoved { .. }
            | EngineEvent::BranchKept { .. }
            | EngineEvent::Reverted { .. }
            | EngineEvent::ReviewRequested { .. }
            | EngineEvent::ReviewResolved { .. } => self.show_review_and_landing(&env.event),
            EngineEvent::SessionCreated { task, workspace, model, .. } => self.line(&format!("▶ {}\n  in {workspace} with {model}", task_line(task))),
            // A plan step's run is opened by its own line (▤ step 2/3).
            EngineEvent::RunStarted { trigger: RunTrigger::PlanStep } => {}
            EngineEvent::RunStarted { trigger: RunTrigger::Review } => self.line("── review of the task as it ended (no model is asked) ──"),
            EngineEvent::RunStarted { trigger } => self.line(&format!("── run ({}) ──", trigger.as_str())),
            EngineEvent::ModelSwitched { from, to } => self.line(&format!("  model: {to} (was {from})")),
            EngineEvent::AgentConnected { name, version, loaded, .. } => self.line(&format!(
                "  ⇄ {name}{} over ACP{}",
                version.as_deref().map(|v| format!(" {v}")).unwrap_or_default(),
                if *loaded { ", in the session it had" } else { "" }
            )),
            EngineEvent::AgentLoginNeeded { label, methods, .. } => {
                // The error that follows says it in words; here, each way as something to do.
                self.line(&format!("  ⚿ {label} needs you to log in; then go on with the command below:"));
                for m in methods {
                    self.line(&format!("    - {}", m.in_terminal(label)));
                }
                self.login_shown = (!methods.is_empty()).then(|| label.clone());
            }
            EngineEvent::ProjectInstructions { file, truncated, .. } => {
                self.line(&format!("  following the project's {file}{}", if *truncated { " (cut to its first part)" } else { "" }))
            }
            EngineEvent::StepStarted { step, .. } => self.line(&format!("· step {step} — thinking")),
            // Its detail is a whole phrase ("recording 20,000 files of the workspace …").
            EngineEvent::Activity { phase: ActivityPhase::Checkpointing, detail } => self.line(&format!("  … {detail}")),
            // The queued status just said it in the same words.
            EngineEvent::Activity { phase: ActivityPhase::Waiting, detail } if self.queued_for.as_deref() == Some(detail.as_str()) => {}
            EngineEvent::Activity { phase, detail } if !matches!(phase, ActivityPhase::Thinking | ActivityPhase::Tool) => {
                let what = match phase {
                    ActivityPhase::Verifying => "verifying",
                    ActivityPhase::Evaluating => "evaluating",
                    ActivityPhase::Compacting => "compacting the conversation",
                    ActivityPhase::Landing => "landing:",
                    _ => "waiting for",
                };
                self.line(&format!("  … {what}{}", if detail.is_empty() { String::new() } else { format!(" {detail}") }))
            }
            EngineEvent::TextDelta { text, .. } => {
                crate::output::human(text);
                self.in_text = true;
            }
            // The question at the terminal names the call with its input: a denial needs no
            // second showing of it.
            EngineEvent::PermissionRequested { call_id: Some(call_id), .. } => {
                self.calls_shown.insert(call_id.clone());
            }
            EngineEvent::ToolCall { call_id, tool, input, state: ToolState::Running, .. } => {
                self.calls_shown.insert(call_id.clone());
                self.line(&call_line(tool, input))
            }
            // Refused before it ran, the call was never shown: what it would have done is, so
            // that the command allowing it next time is not taken blind.
            EngineEvent::ToolCall { call_id, tool, input, state: ToolState::Denied, output, .. } => {
                if !self.calls_shown.contains(call_id) && !input.is_null() {
                    self.line(&call_line(tool, input));
                }
                self.line(&tool_done_line(tool, ToolState::Denied, output.as_deref().unwrap_or("")))
            }
            EngineEvent::ToolCall { tool, state, output, .. } if matches!(state, ToolState::Done | ToolState::Error | ToolState::Unknown) => {
                self.line(&tool_done_line(tool, *state, output.as_deref().unwrap_or("")))
            }
            // A plan step starts with an empty list: no news.
            EngineEvent::TodosUpdated { todos } if todos.is_empty() => {}
            EngineEvent::TodosUpdated { todos } => {
                let done = todos.iter().filter(|t| t.status == TodoStatus::Completed).count();
                self.line(&format!("  ☐ todos {done}/{} done", todos.len()))
            }
            // The step's own line (▤ step 2/3) says it.
            EngineEvent::Continuation { source: ContinuationSource::PlanStep, .. } => {}
            EngineEvent::Continuation { source, attempt, max, remaining, text, .. } => self.line(&continuation_line(*source, *attempt, *max, remaining, text)),
            EngineEvent::Evaluation { verdict, summary, remaining, question, .. } => {
                let rest = if remaining.is_empty() { String::new() } else { format!(" — remaining: {}", remaining.join("; ")) };
                let said = match question {
                    // A conversation turn is judged on this question alone, never "done".
                    EvaluationQuestion::AnnouncedAction => format!("evaluator, {}: {}", EvaluationQuestion::ANNOUNCED_ACTION_ASKED, question.answer(*verdict)),
                    EvaluationQuestion::Done => format!("evaluator: {}", verdict.as_str()),
                };
                self.line(&format!("  ⚖ {said} — {summary}{rest}"));
                // Stopped at the step limit: the summary's "Settings → Limits" is the window's.
                if *verdict == Verdict::Unavailable && summary.contains("within the step limit") {
                    self.line("  (in a terminal: --step-timeout SECS gives each step longer)");
                }
            }
            EngineEvent::Verification { command, exit_code, skipped, nth, of, .. } => {
                let which = if *of > 1 { format!(" {nth}/{of}") } else { String::new() };
                let mark = match (skipped, exit_code) {
                    (true, _) => "–",
                    (false, Some(0)) => "✓",
                    _ => "✗",
                };
                self.line(&format!(
                    "  {mark} verify{which} `{command}`: {}",
                    if *skipped { "skipped".into() } else { format!("exit {}", exit_code.map(|c| c.to_string()).unwrap_or("?".into())) }
                ))
            }
            EngineEvent::StatusChanged { status, attempt, max_retries, message, .. } => self.show_status(*status, *attempt, *max_retries, message.as_deref()),
            EngineEvent::Error { code: finishline_engine::error::ErrorCode::StepTimeout, message } => {
                self.line(&format!("  ! {message}"));
                // The message's "Settings → Limits" is the window's.
                self.line("  (in a terminal: --step-timeout SECS gives each step longer)");
            }
            EngineEvent::Error { code: finishline_engine::error::ErrorCode::ExternalAgentAuth, .. } if self.login_shown.is_some() => {}
            EngineEvent::Error { message, code } => {
                (self.last_error, self.last_error_code) = (Some(message.clone()), Some(*code));
                self.line(&format!("  ! {message}"))
            }
            _ => {}
        }
    }

    /// A status the session moved to, with what it says.
    fn show_status(&mut self, status: SessionStatus, attempt: Option<u32>, max_retries: Option<u32>, message: Option<&str>) {
        let said = message.map(|m| format!(": {m}")).unwrap_or_default();
        match status {
            SessionStatus::Retry => self.line(&retry_line(attempt, max_retries, message)),
            SessionStatus::Busy => self.queued_for = None,
            SessionStatus::Queued => {
                self.queued_for = message.map(str::to_string);
                self.line(&format!("● queued{said}"))
            }
            SessionStatus::Failed if self.login_shown.is_some() => {
                self.line(&format!("● failed: {} is not logged in (above)", self.login_shown.as_deref().unwrap_or_default()))
            }
            // The error line just above said it in the same words.
            SessionStatus::Failed if message.is_some() && message == self.last_error.as_deref() => self.line("● failed (as above)"),
            s => self.line(&format!("● {}{said}", s.as_str())),
        }
    }

    /// The plan, its review and each step's start and end.
    fn show_plan(&mut self, event: &EngineEvent) {
        match event {
            EngineEvent::PlanCreated { steps, awaiting_review, .. } => {
                self.plan_made = steps.clone();
                self.line(&format!("▤ plan: {} steps{}", steps.len(), if *awaiting_review { " (waiting for your go-ahead)" } else { "" }));
                for (i, s) in steps.iter().enumerate() {
                    self.line(&format!(
                        "  {}. {} — done when: {}",
                        i + 1,
                        s.title,
                        if s.criteria.is_empty() { "the evaluator agrees".to_string() } else { s.criteria.join("; ") }
                    ));
                }
            }
            EngineEvent::PlanRevised { cause, steps, .. } => {
                self.line(&format!("▤ plan revised: {cause}"));
                for s in steps {
                    self.line(&format!("  + {} — done when: {}", s.title, s.criteria.join("; ")));
                }
            }
            EngineEvent::PlanReviewed { approved, edited, steps } => {
                let edits = finishline_engine::plan::edits::PlanEdits::between(&self.plan_made, steps).map(|e| format!(": {}", e.summary()));
                self.line(&match (approved, edited) {
                    (true, true) => format!("▤ plan run as you edited it{}", edits.unwrap_or_default()),
                    (true, false) => "▤ plan run as made".to_string(),
                    (false, _) => "▤ plan cancelled".to_string(),
                })
            }
            EngineEvent::PlanStepStarted { number, of, title, .. } => self.line(&format!("▤ step {number}/{of}: {title}")),
            EngineEvent::PlanStepFinished { end_reason, summary, output_data, decided_by, .. } => {
                self.line(&format!("  step ended: {} — {summary}", end_reason.as_str()));
                if let Some(d) = decided_by {
                    self.line(&format!("  decided by {d}"));
                }
                if let Some(data) = output_data {
                    self.line(&format!("  for later steps: {data}"));
                }
            }
            _ => {}
        }
    }

    /// Where the task works, the review, and what the decision did: landing, revert, clean-up.
    fn show_review_and_landing(&mut self, event: &EngineEvent) {
        match event {
            EngineEvent::ReviewRequested {
                claim,
                end_reason,
                stuck,
                remaining,
                files_changed,
                audit,
                auto_approve,
                criteria,
                not_landed,
                in_submodules,
                not_covered,
                ..
            } => {
                let files = self.round.files_changed(files_changed.len());
                self.line(&format!("⚑ review: claim {}, end reason {}, {files}", claim.as_str(), end_reason.as_str()));
                if let Some(s) = stuck {
                    self.line(&stuck_line(s));
                }
                // What is being approved, before the question: each file and how much of it.
                for f in files_changed.iter().take(LISTED_FILES) {
                    self.line(&format!("    {}", file_line(f)));
                }
                if files_changed.len() > LISTED_FILES {
                    self.line(&format!("    … and {} more (every diff: --json)", files_changed.len() - LISTED_FILES));
                }
                if let Some(l) = earlier_rounds_line(&self.lands, files_changed, not_covered) {
                    self.line(&l);
                }
                if let Some(l) = not_covered_line(not_covered, !self.round.in_place()) {
                    self.line(&l);
                }
                if let Some(l) = self.round.unattributed_line(files_changed) {
                    self.line(&l);
                }
                if let Some(note) = self.round.revert_note() {
                    self.line(note);
                }
                for l in left_out_lines(not_landed, in_submodules) {
                    self.line(&l);
                }
                for r in finishline_engine::judge::criteria::beyond_checklist(remaining, criteria) {
                    self.line(&format!("    remaining: {r}"));
                }
                for f in audit {
                    self.line(&audit_line(f, files_changed));
                }
                for c in criteria {
                    self.line(&criterion_line(c));
                }
                if let Some(a) = auto_approve.as_ref().filter(|a| !a.approved) {
                    self.line(&format!("    not approved automatically: {}", a.reason));
                }
            }
            EngineEvent::ReviewResolved { decision, by, occasion, .. } => self.line(&format!("  decision: {} by {}", decision.told(*occasion), by.as_str())),
            EngineEvent::CommentsLetGo { comments, .. } => {
                for c in comments {
                    self.line(&format!("    let go, not asked again: {c}"));
                }
            }
            EngineEvent::TaskWorkspace { worktree: Some(wt), .. } => self.line(&format!(
                "  ⎇ works in its own worktree {} on branch {}{}",
                wt.work_dir().display(),
                wt.branch,
                wt.base_branch.as_deref().map(|b| format!(", from {b}")).unwrap_or_default()
            )),
            EngineEvent::TaskWorkspace { worktree: None, folder, .. } => self.line(&format!("  works in the folder itself: {folder}")),
            EngineEvent::Rebased { onto, .. } => self.line(&format!("  ⎇ the branch moved on: the task's commits now sit on {}", &onto[..onto.len().min(10)])),
            EngineEvent::Landed { target_branch, commit, branch_kept, files, checkout_elsewhere, .. } => {
                self.line(&landed_line(commit.as_deref(), target_branch.as_deref(), branch_kept.as_deref(), files.len()));
                if let (Some(elsewhere), Some(target)) = (checkout_elsewhere, target_branch) {
                    self.line(&format!("    {}", elsewhere.words(target)));
                }
            }
            EngineEvent::LandingBlocked { detail, files, .. } => {
                self.line(&format!("  ! not landed: {detail}{}", if files.is_empty() { String::new() } else { format!(" ({})", files.join(", ")) }))
            }
            EngineEvent::IgnoredCopied { copied, left, failed } => self.line(&format!(
                "  copied into your checkout (.gitignore hides them): {}{}{}",
                if copied.is_empty() { "nothing".to_string() } else { crate::run::few(copied) },
                if left.is_empty() { String::new() } else { format!("; left as they were, already there: {}", crate::run::few(left)) },
                if failed.is_empty() { String::new() } else { format!("; not copied: {}", crate::run::few(failed)) }
            )),
            EngineEvent::BranchKept { branch, files, why } => self.line(&format!(
                "  ⎇ kept the branch {branch}{}{}",
                why.words(),
                if files.is_empty() { String::new() } else { format!(" ({})", crate::run::few(files)) }
            )),
            EngineEvent::WorktreeRemoved { folder, branch_deleted, why } => self.line(&format!(
                "  ⎇ removed the worktree {folder}{}{}",
                branch_deleted.as_deref().map(|b| format!(" and the branch {b}")).unwrap_or_default(),
                if *why == finishline_engine::domain::WorktreeEnd::Unused { ": nothing was changed there" } else { "" }
            )),
            EngineEvent::Reverted { restored, deleted, kept, copies, not_copied } => {
                use finishline_engine::store::export::{changed_since, revert_left, revert_summary};
                let left = revert_left(&changed_since(kept, not_copied), copies, not_copied);
                self.line(&format!("  reverted: {}{left}", revert_summary(restored.len(), deleted.len())));
            }

            _ => {}
        }
    }

    pub fn summary(&mut self, store: &Store, session: &SessionId) {
        let Ok(mut s) = store.session(session) else { return };
        // A run still at work (or waiting mid-way for an answer) has no end yet: the claim,
        // verdict and end reason stored are the last run's, not this one's.
        if s.status.at_work() {
            (s.claim, s.verdict, s.end_reason) = (None, None, None);
        }
        let v = json!({
            "type": "summary",
            "session_id": s.id,
            "status": s.status,
            "claim": s.claim,
            "verdict": s.verdict,
            "end_reason": s.end_reason,
            "decision": s.decision,
            "counts": {"steps": self.steps, "model_calls": self.model_calls, "tool_calls": self.tool_calls.len(), "continuations": self.continuations, "evaluations": self.evaluations},
            "tokens": s.tokens,
            "worktree": s.work_dir,
            "branch": s.branch,
            "landed_commit": store.events(session, 0).ok().and_then(|ev| ev.iter().rev().find_map(|e| if let EngineEvent::Landed { commit, .. } = &e.event { commit.clone() } else { None })),
        });
        if self.json {
            outln!("{v}");
        } else {
            self.line(&format!(
                "■ {} — status {}, end reason {}, claim {}, verdict {}, decision {} · {}{}, {}, {} · {}tokens: agent {}, evaluator {}",
                s.id,
                s.status.as_str(),
                s.end_reason.map(|e| e.as_str()).unwrap_or("—"),
                s.claim.map(|e| e.as_str()).unwrap_or("—"),
                s.verdict.map(|e| e.as_str()).unwrap_or("—"),
                // The last decision was on an earlier review while a new one waits: not this one's.
                if s.status == SessionStatus::AwaitingReview { "yours, waiting" } else { s.decision.map(|e| e.as_str()).unwrap_or("—") },
                if self.resumed { "this command: " } else { "" },
                counted(self.steps as usize, "step"),
                counted(self.tool_calls.len(), "tool call"),
                counted(self.continuations as usize, "continuation"),
                if self.resumed { "session " } else { "" },
                s.tokens.agent,
                s.tokens.evaluator
            ));
            // Work left in a worktree with nobody to decide on it: say how to go on or put it away.
            // A server that was not there (or had no such model) is left behind only by naming
            // another: the session keeps the one it was started with.
            use finishline_engine::error::ErrorCode::{ProviderNotFound, ProviderUnreachable};
            let named = crate::hint::command(&format!("sessions resume {}", s.id)).contains("--base-url");
            let elsewhere = match self.last_error_code.filter(|_| s.status == SessionStatus::Failed && !named) {
                Some(ProviderUnreachable) => {
                    format!(", or ask another server: `{}`", crate::hint::command(&format!("sessions resume {} --base-url URL", s.id)))
                }
                Some(ProviderNotFound) => {
                    format!(", or ask another server or model: `{}`", crate::hint::command(&format!("sessions resume {} --base-url URL --model NAME", s.id)))
                }
                _ => String::new(),
            };
            if let (Some(folder), SessionStatus::Cancelled | SessionStatus::Failed | SessionStatus::Idle | SessionStatus::Interrupted) = (&s.work_dir, s.status)
            {
                self.line(&format!(
                    "  its worktree {folder} is kept: go on with `{}`{elsewhere}, or {}",
                    crate::hint::command(&format!("sessions resume {} \"…\"", s.id)),
                    crate::hint::put_away(&s)
                ));
            } else if matches!(s.status, SessionStatus::Failed | SessionStatus::Cancelled | SessionStatus::Interrupted) && s.attempt.is_none() {
                // In the folder itself: nothing to put away, only the way on.
                let resume = crate::hint::command(&format!("sessions resume {}", s.id));
                if s.status == SessionStatus::Failed {
                    self.line(&format!("  once the cause is fixed, go on with `{resume}`{elsewhere}"));
                } else {
                    self.line(&format!("  go on with `{resume}`"));
                }
            }
            if let Some(a) = &s.attempt {
                self.line(&format!(
                    "  attempt {} of {} in {}: `{}` ranks them",
                    a.number,
                    a.of,
                    a.group,
                    crate::hint::command(&format!("sessions attempts {}", a.group))
                ));
            }
        }
    }
}

/// Files a review lists by name in the readable view; `--json` has every one, with its diff.
const LISTED_FILES: usize = 20;

/// `created  src/a.rs (+12 −0)`: the path with control characters escaped (a newline in a
/// file's name must not end the line).
pub(crate) fn file_line(f: &serde_json::Value) -> String {
    let (path, kind, diff) = (f["path"].as_str().unwrap_or("?"), f["kind"].as_str().unwrap_or("changed"), f["diff"].as_str().unwrap_or(""));
    let (added, removed) = finishline_engine::workspace::checkpoint::line_counts(diff);
    // A change of mode alone (chmod -x) changes no line: say what it is.
    let mode = |which: &str| diff.lines().find_map(|l| l.strip_prefix(which)).map(|m| m.trim().to_string());
    let modes = match (mode("old mode "), mode("new mode ")) {
        (Some(old), Some(new)) => format!(", mode {old} → {new}"),
        _ => String::new(),
    };
    // A binary file changes no line either: "(+0 −0)" read as nothing changed.
    if diff.lines().any(|l| l.starts_with("Binary files ") && l.ends_with(" differ")) {
        return format!("{kind:<8} {} (binary{modes})", path.escape_debug());
    }
    format!("{kind:<8} {} (+{added} −{removed}{modes})", path.escape_debug())
}

/// `n` and the word, in the plural unless `n` is one: "1 step", "3 tool calls".
pub(crate) fn counted(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

/// "⏳ retry 2 of 5 — connection refused": which try, of how many when the event says.
fn retry_line(attempt: Option<u32>, max_retries: Option<u32>, message: Option<&str>) -> String {
    let of = max_retries.map(|m| format!(" of {m}")).unwrap_or_default();
    format!("  ⏳ retry {}{of} — {}", attempt.unwrap_or(0), message.unwrap_or(""))
}

/// Where the approved task went, as the log says it.
fn landed_line(commit: Option<&str>, target_branch: Option<&str>, branch_kept: Option<&str>, files: usize) -> String {
    match (commit, target_branch, branch_kept) {
        (Some(c), Some(b), _) => format!("  ✓ landed on {b} as {} ({files} file(s))", &c[..c.len().min(10)]),
        // Nothing was left to land (the branch held it all): not "in your working tree".
        (None, Some(b), None) if files == 0 => format!("  ✓ nothing to land: {b} already holds it"),
        (None, Some(b), _) => format!("  ✓ the changes are in your working tree on {b}, not committed ({files} file(s))"),
        (_, _, Some(k)) => format!("  ✓ kept the branch {k} for later: `git merge {k}` on the branch you want it on takes it"),
        _ => "  ✓ nothing to land".to_string(),
    }
}

/// The task's first line, as far as a terminal line goes: a pasted log of 100 KB on one line was
/// printed whole after the ▶. Longer, its start and the whole task's length.
fn task_line(task: &str) -> String {
    const SHOWN: usize = 200;
    let first = task.lines().next().unwrap_or("");
    if first.chars().count() <= SHOWN {
        return first.to_string();
    }
    let start: String = first.chars().take(SHOWN).collect();
    format!("{start}… (the task is {} characters)", finishline_engine::thousands::grouped(task.chars().count()))
}

/// A continuation that opens a run rather than sends the agent back: a plan step's brief, a
/// resume's, a new worktree's.
fn is_hand_over(source: ContinuationSource) -> bool {
    matches!(source, ContinuationSource::PlanStep | ContinuationSource::Resume | ContinuationSource::NewWorktree)
}

/// What a review's branch leaves out, in words: what the task wrote that .gitignore hides and
/// what it changed inside a submodule. Said with the review, and again when it is read later.
pub fn left_out_lines(not_landed: &[String], in_submodules: &[String]) -> Vec<String> {
    let mut lines = Vec::new();
    if !not_landed.is_empty() {
        lines.push(format!(
            "    never landed (.gitignore hides them, or they were copied in from your checkout; they go with the worktree): {}",
            not_landed.join(", ")
        ));
        lines.push(
            "    to keep one in your checkout, decide with `--copy-ignored PATH` (nothing of yours is overwritten: a file you have stays as it is)".into(),
        );
    }
    if !in_submodules.is_empty() {
        lines.push(format!(
            "    changed inside a submodule, which the task's branch cannot carry (they go with the worktree; make them in the submodule's own repository): {}",
            in_submodules.join(", ")
        ));
    }
    lines
}

/// An audit finding as a review lists it. The audit covers what Approve accepts, earlier rounds
/// sent back included: a finding in none of this round's files says so.
pub fn audit_line(f: &finishline_engine::judge::audit::Finding, files_changed: &[serde_json::Value]) -> String {
    let shown = files_changed.iter().any(|c| c.get("path").and_then(|p| p.as_str()) == Some(f.path.as_str()));
    format!("    ⚠ audit: {}{}", f.describe(), if shown { "" } else { " (from an earlier round; Approve accepts it too)" })
}

/// One of the person's comments from the last review, as the judge found it.
pub fn criterion_line(c: &finishline_engine::judge::criteria::CriterionResult) -> String {
    let words = finishline_engine::store::export::criterion_words(c);
    // Nobody checked it: the person is the one to, while the review waits.
    match c.state {
        finishline_engine::judge::criteria::CriterionState::Unverifiable => format!("    {}: check it yourself)", words.strip_suffix(')').unwrap_or(&words)),
        _ => format!("    {words}"),
    }
}

/// A finished tool call, with the first line of what it returned. A `complete_task` Finishline
/// answered with a continuation was not accepted: it says so, with the answer's first words rather
/// than the tag the agent reads.
fn tool_done_line(tool: &str, state: ToolState, output: &str) -> String {
    let reminder = output.trim_start().starts_with("<system-reminder");
    let words = if reminder {
        let inner = output.trim_start().split_once('>').map_or("", |(_, rest)| rest);
        inner.lines().map(|l| l.replace("</system-reminder>", "")).find(|l| !l.trim().is_empty()).unwrap_or_default()
    } else {
        output.lines().next().unwrap_or("").to_string()
    };
    let first: String = words.trim().chars().take(160).collect();
    let (mark, state) = match state {
        ToolState::Done if reminder && tool == finishline_engine::tool::COMPLETE_TASK => ("✗", "not accepted"),
        ToolState::Done => ("✓", "done"),
        other => ("✗", other.as_str()),
    };
    format!("  {mark} {tool} ({state}) {first}").trim_end().to_string()
}

/// A unified diff with each line's numbers, as `--comment` names them: the file's line as the
/// run left it (`12`), or a removed line's as the file was (`-12`). The headers stay as they are.
pub fn numbered_diff(diff: &str) -> String {
    let (mut old, mut new, mut in_hunk) = (0u32, 0u32, false);
    let mut out = Vec::new();
    for l in diff.lines() {
        if let Some(rest) = l.strip_prefix("@@ -") {
            // `@@ -OLD[,N] +NEW[,N] @@`
            let mut parts = rest.split(' ');
            let start = |p: Option<&str>| p.and_then(|p| p.trim_start_matches('+').split(',').next()?.parse::<u32>().ok()).unwrap_or(1);
            (old, new, in_hunk) = (start(parts.next()), start(parts.next()), true);
            out.push(format!("{:>10}{l}", ""));
            continue;
        }
        if !in_hunk || l.starts_with('\\') {
            out.push(if in_hunk { format!("{:>10}{l}", "") } else { l.to_string() });
            continue;
        }
        let numbers = match l.chars().next() {
            Some('-') => {
                old += 1;
                format!("{:>5}     ", format!("-{}", old - 1))
            }
            Some('+') => {
                new += 1;
                format!("{:>5}     ", new - 1)
            }
            _ => {
                (old, new) = (old + 1, new + 1);
                format!("{:>5}     ", new - 1)
            }
        };
        out.push(format!("{numbers}{l}"));
    }
    out.join("\n")
}

/// Why the judge found a run stuck: the pattern, and what repeated, on one line.
pub fn stuck_line(s: &Stuck) -> String {
    let one_line = s.repeated.split_whitespace().collect::<Vec<_>>().join(" ");
    let repeated = if one_line.is_empty() { String::new() } else { format!(": {one_line}") };
    format!("    stuck: {}{repeated}", s.pattern.describe())
}

/// In a worktree, the files of the task's branch that a later round's review does not show:
/// Approve lands them too. `lands` is every file the branch changes since the task started.
/// Files no diff shows (`not_covered`) are said by [`not_covered_line`], not taken for earlier
/// rounds' (a single round's review named its big file "from earlier rounds").
pub fn earlier_rounds_line(lands: &[String], files_changed: &[serde_json::Value], not_covered: &[String]) -> Option<String> {
    let shown: Vec<&str> = files_changed.iter().filter_map(|f| f.get("path").and_then(|p| p.as_str())).collect();
    let earlier: Vec<String> = lands.iter().filter(|p| !shown.contains(&p.as_str()) && !not_covered.contains(p)).cloned().collect();
    (!earlier.is_empty()).then(|| format!("    and from earlier rounds, which Approve lands too: {}", crate::run::few(&earlier)))
}

/// The files the checkpoints never copied (too big, unreadable, a name that is not UTF-8): no
/// diff shows them, and in the folder itself no revert can put them back; the window says the
/// same. In a worktree, Approve lands them as they are there.
pub fn not_covered_line(not_covered: &[String], in_worktree: bool) -> Option<String> {
    let why = "too big to copy, unreadable, or a name that is not UTF-8";
    (!not_covered.is_empty()).then(|| {
        if in_worktree {
            format!("    not in any diff ({why}); Approve lands them as the worktree has them: {}", crate::run::few(not_covered))
        } else {
            format!("    not covered by revert ({why}): if the agent changed them, Reject cannot put them back: {}", crate::run::few(not_covered))
        }
    })
}

/// A call as it starts: its tool and input, cut to a line.
fn call_line(tool: &str, input: &serde_json::Value) -> String {
    let shown: String = input.to_string().chars().take(160).collect();
    format!("  → {tool} {shown}")
}

/// Finishline's words to the agent, by their source and what remains. A new worktree's note has
/// no list: its first sentence says why the run works in a new folder (the earlier changes
/// landed, were kept on a branch, or rejected), which the line names before the run's own.
fn continuation_line(source: ContinuationSource, attempt: u32, max: u32, remaining: &[String], text: &str) -> String {
    let rest = match source {
        ContinuationSource::NewWorktree => text.split_inclusive(". ").next().map(|s| format!(": {}", s.trim())).unwrap_or_default(),
        _ if remaining.is_empty() => String::new(),
        _ => format!(": {}", remaining.join("; ")),
    };
    // One that opens a run (review comments, a new worktree) is from no budget: no count.
    let count = if max > 0 { format!(", {attempt}/{max}") } else { String::new() };
    format!("  ↻ Finishline continues the agent ({}{count}){rest}", source.as_str())
}

#[cfg(test)]
mod tests {
    use super::{continuation_line, counted, earlier_rounds_line, file_line, landed_line, not_covered_line, numbered_diff, retry_line, tool_done_line, Round};

    #[test]
    fn a_file_no_diff_shows_is_not_taken_for_an_earlier_rounds() {
        let lands = vec!["a.txt".to_string(), "big.bin".to_string()];
        let shown = vec![serde_json::json!({"path": "a.txt"})];
        assert_eq!(earlier_rounds_line(&lands, &shown, &["big.bin".to_string()]), None, "one round: nothing from earlier rounds");
        let said = not_covered_line(&["big.bin".to_string()], true).unwrap();
        assert!(said.contains("not in any diff") && said.contains("Approve lands them") && said.ends_with("big.bin"), "{said}");
        assert_eq!(not_covered_line(&[], false), None);
    }

    #[test]
    fn a_diff_numbers_its_lines_as_a_comment_names_them() {
        let diff = "--- a/t.py\n+++ b/t.py\n@@ -3,3 +3,3 @@\n def t():\n-    assert x == 4\n+    assert x\n     y()\n\\ No newline at end of file";
        let shown = numbered_diff(diff);
        let lines: Vec<&str> = shown.lines().collect();
        assert_eq!(lines[0], "--- a/t.py", "the headers as they were");
        assert_eq!(lines[3], "    3      def t():");
        assert_eq!(lines[4], "   -4     -    assert x == 4", "a removed line by its number as the file was");
        assert_eq!(lines[5], "    4     +    assert x");
        assert_eq!(lines[6], "    5          y()");
        assert!(lines[7].ends_with("\\ No newline at end of file"));
    }
    use finishline_engine::domain::{ContinuationSource, ToolState};

    #[test]
    fn a_claim_sent_back_reads_as_not_accepted_with_finishlines_words_not_its_tags() {
        let answer = "<system-reminder source=\"open_todos\" attempt=\"1/5\">\nYou called complete_task, but 2 todos are still open.\n</system-reminder>";
        assert_eq!(
            tool_done_line("complete_task", ToolState::Done, answer),
            "  ✗ complete_task (not accepted) You called complete_task, but 2 todos are still open."
        );
        assert_eq!(tool_done_line("complete_task", ToolState::Done, "Task complete."), "  ✓ complete_task (done) Task complete.");
        assert_eq!(tool_done_line("read_file", ToolState::Error, "no such file\nmore"), "  ✗ read_file (error) no such file");
        assert_eq!(tool_done_line("write_file", ToolState::Done, ""), "  ✓ write_file (done)");
    }

    #[test]
    fn an_approval_with_nothing_left_to_land_never_says_the_changes_are_in_the_working_tree() {
        assert_eq!(landed_line(None, Some("main"), None, 0), "  ✓ nothing to land: main already holds it");
        assert_eq!(landed_line(None, Some("main"), None, 2), "  ✓ the changes are in your working tree on main, not committed (2 file(s))");
        assert_eq!(landed_line(Some("0123456789abcdef"), Some("main"), None, 1), "  ✓ landed on main as 0123456789 (1 file(s))");
        assert_eq!(
            landed_line(None, None, Some("finishline/1-a"), 0),
            "  ✓ kept the branch finishline/1-a for later: `git merge finishline/1-a` on the branch you want it on takes it",
            "told once at the terminal, the kept branch says how to take it, in the window's words"
        );
    }

    #[test]
    fn a_retry_says_which_try_of_how_many() {
        assert_eq!(retry_line(Some(2), Some(5), Some("connection refused")), "  ⏳ retry 2 of 5 — connection refused");
        assert_eq!(retry_line(Some(2), None, Some("429")), "  ⏳ retry 2 — 429", "an event from before the total was recorded");
    }

    #[test]
    fn a_file_whose_mode_alone_changed_says_which_modes() {
        let f = serde_json::json!({"path": "run.sh", "kind": "modified", "diff": "diff --git a/run.sh b/run.sh\nold mode 100755\nnew mode 100644\n"});
        assert_eq!(file_line(&f), "modified run.sh (+0 −0, mode 100755 → 100644)");
        assert_eq!((counted(1, "step"), counted(2, "tool call")), ("1 step".to_string(), "2 tool calls".to_string()));
    }

    #[test]
    fn a_binary_file_says_binary_not_no_lines() {
        let f =
            serde_json::json!({"path": "big.bin", "kind": "modified", "diff": "diff --git a/big.bin b/big.bin\nBinary files a/big.bin and b/big.bin differ\n"});
        assert_eq!(file_line(&f), "modified big.bin (binary)");
    }

    /// A follow-up in a new worktree says why there, not just that it is one.
    #[test]
    fn a_new_worktrees_note_says_what_became_of_the_earlier_changes() {
        let note = "Your earlier changes in this task were approved and landed on `main`. You now work in a new worktree made from `main` as it is now, with them in it.";
        assert_eq!(
            continuation_line(ContinuationSource::NewWorktree, 0, 0, &[], note),
            "  ↻ Finishline continues the agent (new_worktree): Your earlier changes in this task were approved and landed on `main`."
        );
        assert_eq!(
            continuation_line(ContinuationSource::TodoGate, 1, 5, &["write b".into()], "…"),
            "  ↻ Finishline continues the agent (todo_gate, 1/5): write b"
        );
    }

    /// After a request for changes the next review is a round's; after an approval the rounds
    /// before are settled, and a revert covers only the follow-up's own changes.
    #[test]
    fn a_round_after_a_request_for_changes_is_told_and_one_after_an_approval_is_not() {
        use finishline_engine::domain::{DecidedBy, Decision, Isolation, RequestId};
        use finishline_engine::event::EngineEvent;
        let resolved = |decision| EngineEvent::ReviewResolved {
            review_id: RequestId("r".into()),
            decision,
            by: DecidedBy::Person,
            feedback: None,
            reverted: false,
            occasion: None,
        };
        let in_place = EngineEvent::TaskWorkspace { isolation: Isolation::InPlace, folder: "/w".into(), worktree: None };
        let sent_back = Round::after([&in_place, &resolved(Decision::RequestChanges)]);
        assert_eq!(sent_back.files_changed(0), "0 file(s) changed since your last review");
        assert!(sent_back.revert_note().is_some());
        let approved_then = Round::after([&in_place, &resolved(Decision::RequestChanges), &resolved(Decision::Approve)]);
        assert_eq!(approved_then.files_changed(1), "1 file(s) changed");
        assert!(approved_then.revert_note().is_none());
    }

    /// In the person's folder a file a command changed may hold their edit: the review says so
    /// before they decide. In a worktree nothing else writes, so it says nothing.
    #[test]
    fn a_review_in_place_names_the_files_that_changed_while_a_command_ran() {
        use finishline_engine::domain::Isolation;
        use finishline_engine::event::EngineEvent;
        let files = [serde_json::json!({"path": "a.txt", "unattributed": true}), serde_json::json!({"path": "b.txt"})];
        let in_place = Round::after([&EngineEvent::TaskWorkspace { isolation: Isolation::InPlace, folder: "/w".into(), worktree: None }]);
        let line = in_place.unattributed_line(&files).expect("said in place");
        assert!(line.contains("at work: a.txt (an edit of yours"), "{line}");
        assert!(in_place.unattributed_line(&files[1..]).is_none(), "nothing to say when the agent's own tools wrote them");
        assert!(Round::default().unattributed_line(&files).is_none(), "nor in a worktree");
    }

    #[test]
    fn an_attempt_sent_back_is_reviewed_whole_again() {
        use finishline_engine::domain::{DecidedBy, Decision, GroupId, RequestId};
        use finishline_engine::event::EngineEvent;
        let attempt =
            EngineEvent::AttemptStarted { group: GroupId("g".into()), number: 1, of: 2, label: "Codex".into(), evaluator: None, evaluator_provider: None };
        let sent_back = EngineEvent::ReviewResolved {
            review_id: RequestId("r".into()),
            decision: Decision::RequestChanges,
            by: DecidedBy::Person,
            feedback: None,
            reverted: false,
            occasion: None,
        };
        assert_eq!(Round::after([&attempt, &sent_back]).files_changed(2), "2 file(s) changed", "choosing it lands every round, shown");
    }
}
