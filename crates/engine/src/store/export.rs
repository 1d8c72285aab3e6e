//! Exports of a session to Markdown and JSON. Continuations and verdicts are marked as the
//! engine's own, never shown as the person's words.

use std::collections::HashMap;
use std::fmt::Write;
use std::path::Path;

use serde::Serialize;
use serde_json::{json, Value};

use super::Timeline;
use crate::domain::*;
use crate::event::EngineEvent;
use crate::judge::completion::EvaluationQuestion;

/// A finding of the audit on a review, and whether the person dismissed it since.
#[derive(Debug, Clone, Serialize)]
pub struct AuditLine {
    #[serde(flatten)]
    pub finding: crate::judge::audit::Finding,
    pub dismissed: bool,
}

/// One readable entry of a transcript, folded from the events.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Entry {
    Run {
        trigger: RunTrigger,
        at: String,
    },
    Message {
        role: MessageRole,
        source: Option<ContinuationSource>,
        text: String,
        reasoning: String,
        at: String,
    },
    Tool {
        call_id: String,
        tool: String,
        input: Value,
        state: ToolState,
        output: Option<String>,
    },
    Continuation {
        source: ContinuationSource,
        attempt: u32,
        max: u32,
        remaining: Vec<String>,
    },
    Evaluation {
        cycle: u32,
        verdict: Verdict,
        summary: String,
        remaining: Vec<String>,
        parse_ok: bool,
        /// What it was asked: a conversation turn's check is no verdict on the task.
        question: EvaluationQuestion,
    },
    Verification {
        command: String,
        exit_code: Option<i32>,
        output_tail: String,
        skipped: bool,
        nth: u32,
        of: u32,
    },
    Todos {
        todos: Vec<Todo>,
    },
    Review {
        claim: Claim,
        verdict: Option<Verdict>,
        /// The plan step the verdict was on, when a plan stopped short: not the whole task's.
        #[serde(skip_serializing_if = "Option::is_none")]
        verdict_on_step: Option<String>,
        end_reason: EndReason,
        /// The pattern that ended a stuck run, and what repeated.
        #[serde(skip_serializing_if = "Option::is_none")]
        stuck: Option<Stuck>,
        remaining: Vec<String>,
        audit: Vec<AuditLine>,
        /// The person's comments from the review before, as the judge found them.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        criteria: Vec<crate::judge::criteria::CriterionResult>,
        /// What the review showed: kept in the story after the task's worktree is gone.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        files: Vec<ReviewedFile>,
    },
    Decision {
        decision: Decision,
        by: DecidedBy,
        feedback: Option<String>,
        occasion: Option<crate::domain::DecisionOccasion>,
        /// The comments found not met that the person let go with it.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        let_go: Vec<String>,
    },
    Reverted {
        restored: Vec<String>,
        deleted: Vec<String>,
        /// Left because they changed after the task.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        kept: Vec<String>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        copies: Vec<crate::workspace::checkpoint::OverwrittenCopy>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        not_copied: Vec<crate::workspace::checkpoint::NotCopied>,
    },
    /// Approve could not land the task.
    LandingBlocked {
        reason: LandingBlock,
        detail: String,
        files: Vec<String>,
    },
    Landed {
        mode: LandingMode,
        target_branch: Option<String>,
        commit: Option<String>,
        branch_kept: Option<String>,
        files: Vec<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        checkout_elsewhere: Option<crate::domain::CheckoutElsewhere>,
    },
    /// The task's branch kept when its worktree went, and why.
    BranchKept {
        branch: String,
        files: Vec<String>,
        why: crate::domain::BranchKeptWhy,
    },
    Instructions {
        file: String,
        truncated: bool,
    },
    /// The plan as made or revised: each step with its criteria.
    Plan {
        revised_because: Option<String>,
        steps: Vec<crate::plan::PlanStep>,
    },
    PlanStep {
        number: usize,
        of: usize,
        title: String,
    },
    PlanStepEnd {
        end_reason: EndReason,
        summary: String,
        output_data: Option<String>,
    },
    RunEnd {
        status: SessionStatus,
        end_reason: EndReason,
    },
    Status {
        status: SessionStatus,
        message: Option<String>,
    },
    Error {
        code: String,
        message: String,
    },
    /// The built-in agent goes on with another model from here.
    ModelSwitched {
        from: String,
        to: String,
    },
}

/// A tool call's entry: a new one, or its state and output brought up to date.
fn tool_entry(out: &mut Vec<Entry>, tools: &mut HashMap<String, usize>, event: &EngineEvent) {
    let EngineEvent::ToolCall { call_id, tool, input, state, output, .. } = event else { return };
    match tools.get(call_id).and_then(|i| out.get_mut(*i)) {
        Some(Entry::Tool { state: s, output: o, input: inp, .. }) => {
            *s = *state;
            if !input.is_null() {
                *inp = input.clone();
            }
            if output.is_some() {
                *o = output.clone();
            }
        }
        _ => {
            tools.insert(call_id.clone(), out.len());
            out.push(Entry::Tool { call_id: call_id.clone(), tool: tool.clone(), input: input.clone(), state: *state, output: output.clone() });
        }
    }
}

pub fn transcript(t: &Timeline) -> Vec<Entry> {
    let mut out: Vec<Entry> = Vec::new();
    let mut messages: HashMap<MessageId, usize> = HashMap::new();
    let mut tools: HashMap<String, usize> = HashMap::new();
    let mut plan = crate::plan::state::PlanFollower::default();
    for env in &t.events {
        plan.see(&env.event);
        match &env.event {
            EngineEvent::RunStarted { trigger } => out.push(Entry::Run { trigger: *trigger, at: env.at.clone() }),
            EngineEvent::ModelSwitched { from, to } => out.push(Entry::ModelSwitched { from: from.clone(), to: to.clone() }),
            EngineEvent::MessageCreated { message_id, role, source, text } => {
                messages.insert(message_id.clone(), out.len());
                out.push(Entry::Message { role: *role, source: *source, text: text.clone().unwrap_or_default(), reasoning: String::new(), at: env.at.clone() });
            }
            EngineEvent::TextDelta { message_id, text: d } | EngineEvent::ReasoningDelta { message_id, text: d } => {
                let reasoning = matches!(env.event, EngineEvent::ReasoningDelta { .. });
                if let Some(Entry::Message { text, reasoning: r, .. }) = messages.get(message_id).and_then(|i| out.get_mut(*i)) {
                    if reasoning {
                        r.push_str(d)
                    } else {
                        text.push_str(d)
                    }
                }
            }
            EngineEvent::ToolCall { .. } => tool_entry(&mut out, &mut tools, &env.event),
            EngineEvent::Continuation { source, attempt, max, remaining, .. } => {
                out.push(Entry::Continuation { source: *source, attempt: *attempt, max: *max, remaining: remaining.clone() })
            }
            EngineEvent::Evaluation { cycle, verdict, summary, remaining, parse_ok, question, .. } => out.push(Entry::Evaluation {
                cycle: *cycle,
                verdict: *verdict,
                summary: summary.clone(),
                remaining: remaining.clone(),
                parse_ok: *parse_ok,
                question: *question,
            }),
            EngineEvent::Verification { command, exit_code, output_tail, skipped, nth, of, .. } => out.push(Entry::Verification {
                command: command.clone(),
                exit_code: *exit_code,
                output_tail: output_tail.clone(),
                skipped: *skipped,
                nth: *nth,
                of: *of,
            }),
            EngineEvent::TodosUpdated { todos } => out.push(Entry::Todos { todos: todos.clone() }),
            EngineEvent::ReviewRequested { claim, verdict, verdict_on_step, end_reason, stuck, remaining, audit, criteria, files_changed, .. } => {
                out.push(Entry::Review {
                    claim: *claim,
                    verdict: *verdict,
                    verdict_on_step: verdict_on_step.clone(),
                    end_reason: *end_reason,
                    stuck: stuck.clone(),
                    remaining: remaining.clone(),
                    audit: audit.iter().map(|f| AuditLine { finding: f.clone(), dismissed: false }).collect(),
                    criteria: criteria.clone(),
                    files: files_changed.iter().filter_map(ReviewedFile::from_value).collect(),
                })
            }
            EngineEvent::AuditDismissed { rule, path, excerpt } | EngineEvent::AuditRestored { rule, path, excerpt } => {
                // Dismissed (or taken back) on the review it was found in: the story says so there.
                let dismissed = matches!(env.event, EngineEvent::AuditDismissed { .. });
                if let Some(Entry::Review { audit, .. }) = out.iter_mut().rev().find(|e| matches!(e, Entry::Review { .. })) {
                    for line in audit.iter_mut().filter(|l| l.finding.rule == *rule && l.finding.path == *path && l.finding.excerpt == *excerpt) {
                        line.dismissed = dismissed;
                    }
                }
            }
            EngineEvent::ReviewResolved { decision, by, feedback, occasion, .. } => {
                out.push(Entry::Decision { decision: *decision, by: *by, feedback: feedback.clone(), occasion: *occasion, let_go: Vec::new() })
            }
            EngineEvent::CommentsLetGo { comments, .. } => {
                if let Some(Entry::Decision { let_go, .. }) = out.iter_mut().rev().find(|e| matches!(e, Entry::Decision { .. })) {
                    let_go.extend(comments.iter().cloned());
                }
            }
            EngineEvent::Reverted { restored, deleted, kept, copies, not_copied } => out.push(Entry::Reverted {
                restored: restored.clone(),
                deleted: deleted.clone(),
                kept: changed_since(kept, not_copied).into_iter().map(String::from).collect(),
                copies: copies.clone(),
                not_copied: not_copied.clone(),
            }),
            EngineEvent::LandingBlocked { reason, files, detail } => {
                out.push(Entry::LandingBlocked { reason: *reason, detail: detail.clone(), files: files.clone() })
            }
            EngineEvent::Landed { mode, target_branch, commit, branch_kept, files, checkout_elsewhere } => out.push(Entry::Landed {
                mode: *mode,
                target_branch: target_branch.clone(),
                commit: commit.clone(),
                branch_kept: branch_kept.clone(),
                files: files.clone(),
                checkout_elsewhere: checkout_elsewhere.clone(),
            }),
            EngineEvent::BranchKept { branch, files, why } => out.push(Entry::BranchKept { branch: branch.clone(), files: files.clone(), why: *why }),
            EngineEvent::ProjectInstructions { file, truncated, .. } => out.push(Entry::Instructions { file: file.clone(), truncated: *truncated }),
            EngineEvent::PlanCreated { steps, .. } => out.push(Entry::Plan { revised_because: None, steps: steps.clone() }),
            EngineEvent::PlanRevised { cause, steps, .. } => out.push(Entry::Plan { revised_because: Some(cause.clone()), steps: steps.clone() }),
            // The plan that ran is the one the person approved, edited: shown as such.
            EngineEvent::PlanReviewed { approved: true, edited: true, steps } => {
                let edits = plan.state().and_then(|p| p.person_edits.as_ref()).map(|e| format!(": {}", e.summary())).unwrap_or_default();
                out.push(Entry::Plan { revised_because: Some(format!("you edited it before it ran{edits}")), steps: steps.clone() })
            }
            EngineEvent::PlanStepStarted { number, of, title, .. } => out.push(Entry::PlanStep { number: *number, of: *of, title: title.clone() }),
            EngineEvent::PlanStepFinished { end_reason, summary, output_data, .. } => {
                out.push(Entry::PlanStepEnd { end_reason: *end_reason, summary: summary.clone(), output_data: output_data.clone() })
            }
            EngineEvent::RunFinished { status, end_reason, .. } => out.push(Entry::RunEnd { status: *status, end_reason: *end_reason }),
            // A failure's words are its error's, said once.
            EngineEvent::StatusChanged { status: SessionStatus::Failed, message: Some(m), .. }
                if out.iter().rev().take_while(|e| !matches!(e, Entry::Run { .. })).any(|e| matches!(e, Entry::Error { message, .. } if message == m)) => {}
            EngineEvent::StatusChanged { status: status @ (SessionStatus::Interrupted | SessionStatus::Failed), message, .. } => {
                out.push(Entry::Status { status: *status, message: message.clone() })
            }
            EngineEvent::Error { code, message } => out.push(Entry::Error { code: code.as_str().to_string(), message: message.clone() }),
            _ => {}
        }
    }
    out
}

pub fn to_json(t: &Timeline) -> Value {
    json!({
        "format": "finishline-session",
        "version": 1,
        "session": t.session,
        "todos": t.todos,
        "transcript": transcript(t),
        "events": t.events,
    })
}

/// One that opens a run (review comments, a resolve) is from no budget: no count.
fn count(attempt: u32, max: u32) -> String {
    if max > 0 {
        format!(" {attempt}/{max}")
    } else {
        String::new()
    }
}

/// The comments sent again are Finishline's check finding one not addressed yet.
fn continuation_label(source: ContinuationSource, attempt: u32) -> &'static str {
    if source == ContinuationSource::ReviewComments && attempt > 0 {
        "the person's comments, not yet addressed"
    } else {
        source_label(source)
    }
}

fn source_label(s: ContinuationSource) -> &'static str {
    match s {
        ContinuationSource::Truncation => "truncation: the answer was cut off",
        ContinuationSource::TodoGate => "todo gate: open todo items",
        ContinuationSource::MissingCompletion => "missing completion claim",
        ContinuationSource::MissingAction => "left undone: announced or asked for",
        ContinuationSource::Verification => "verification failed",
        ContinuationSource::Evaluator => "evaluator: work remains",
        ContinuationSource::StepChecks => "the step's checks, without a model: criteria unmet",
        ContinuationSource::Resume => "resumed: told to go on",
        ContinuationSource::PlanStep => "plan step: the step's brief",
        ContinuationSource::LandingConflict => "resolve the conflict with the moved branch",
        ContinuationSource::NewWorktree => "a new worktree",
        ContinuationSource::ReviewComments => "the person's comments on the diff",
        ContinuationSource::ConflictMarkers => "conflict markers left in the merge",
    }
}

fn quote(text: &str) -> String {
    text.lines().map(|l| format!("> {l}")).collect::<Vec<_>>().join("\n")
}

pub fn to_markdown(t: &Timeline) -> String {
    let mut md = String::new();
    write_header(&mut md, t);
    let mut run_no = 0;
    // The agent's last words in this run: a review with no claim says when they said it was done.
    let mut last_said = String::new();
    let mut entries = transcript(t).into_iter().peekable();
    while let Some(e) = entries.next() {
        match e {
            Entry::Run { trigger, at } => {
                run_no += 1;
                last_said.clear();
                let started_by = match trigger {
                    RunTrigger::Task => "the task",
                    RunTrigger::Feedback => "your feedback",
                    RunTrigger::Message => "a new message",
                    RunTrigger::Resume => "resumed",
                    RunTrigger::PlanStep => "a plan step",
                    RunTrigger::Review => "your review of the task as it ended",
                };
                let _ = writeln!(md, "### Run {run_no} ({started_by}) · {at}\n");
            }
            // The engine records a continuation twice, as the judge's decision and as the message
            // the agent reads; the export shows it once, as the window does.
            Entry::Continuation { source, attempt, max, remaining } if matches!(entries.peek(), Some(Entry::Message { role: MessageRole::Continuation, source: Some(s), .. }) if *s == source) =>
            {
                let Some(Entry::Message { text, .. }) = entries.next() else { continue };
                let unsaid: Vec<String> = remaining.into_iter().filter(|r| !text.contains(r.as_str())).collect();
                let _ = writeln!(
                    md,
                    "**↻ Continuation{} from Finishline** ({}; not written by you){}\n\n{}\n",
                    count(attempt, max),
                    continuation_label(source, attempt),
                    list_inline(&unsaid),
                    quote(&text)
                );
            }
            e @ Entry::Message { .. } => {
                if let Entry::Message { role: MessageRole::Assistant, text, .. } = &e {
                    if !text.trim().is_empty() {
                        last_said.clone_from(text);
                    }
                }
                write_message(&mut md, e)
            }
            e @ (Entry::Continuation { .. } | Entry::Evaluation { .. } | Entry::Verification { .. } | Entry::Review { .. } | Entry::Decision { .. }) => {
                write_judgement(&mut md, e, crate::judge::said_done::says_done(&last_said))
            }
            e @ (Entry::Plan { .. } | Entry::PlanStep { .. } | Entry::PlanStepEnd { .. }) => write_plan_entry(&mut md, e),
            e => write_other(&mut md, e),
        }
    }
    md
}

fn write_header(md: &mut String, t: &Timeline) {
    let s = &t.session;
    let opt = |w: Option<&'static str>| w.unwrap_or("—");
    let _ = writeln!(md, "# {}\n", s.title);
    let _ = writeln!(
        md,
        "- **Status:** {}{} · **Outcome:** {} · **Agent's claim:** {} · **Evaluator:** {} · **Decision:** {}",
        s.shown().words(),
        if s.shown() == super::sessions::Shown::Discarded { " (put away without a review)" } else { "" },
        opt(s.end_reason.map(|x| x.words())),
        opt(s.claim.map(|x| match x {
            Claim::None => "none",
            c => c.as_str(),
        })),
        opt(s.verdict.map(|x| x.words())),
        opt(s.decision.map(|x| x.told_in_words(s.occasion)))
    );
    let _ = writeln!(md, "- **Workspace:** `{}` · **Model:** {} ({})", s.workspace, s.model, s.provider);
    let _ = writeln!(
        md,
        "- **Started:** {} · **Active for:** {:.1} s · **Tokens:** agent {}, evaluator {}, compaction {}\n",
        s.created_at,
        s.duration_ms as f64 / 1000.0,
        s.tokens.agent,
        s.tokens.evaluator,
        s.tokens.compaction
    );
    let _ = writeln!(md, "## Task\n\n{}\n\n## Timeline\n", s.task.trim());
}

/// What someone said: the person, the agent, a continuation, a summary.
fn write_message(md: &mut String, e: Entry) {
    match e {
        Entry::Message { role: MessageRole::User, text, .. } => {
            let _ = writeln!(md, "**You:**\n\n{}\n", quote(&text));
        }
        Entry::Message { role: MessageRole::Assistant, text, reasoning, .. } => {
            if !reasoning.trim().is_empty() {
                let _ = writeln!(md, "<details><summary>Agent reasoning</summary>\n\n{}\n\n</details>\n", reasoning.trim());
            }
            if !text.trim().is_empty() {
                let _ = writeln!(md, "**Agent:**\n\n{}\n", text.trim());
            }
        }
        Entry::Message { role: MessageRole::Continuation, source, text, .. } => {
            let label = source.map(source_label).unwrap_or("continuation");
            let _ = writeln!(md, "**↻ Continuation from Finishline** ({label}; not written by you):\n\n{}\n", quote(&text));
        }
        Entry::Message { role: MessageRole::Summary, text, .. } => {
            let _ = writeln!(md, "**⋯ Earlier turns summarised (compaction):**\n\n{}\n", quote(&text));
        }
        _ => {}
    }
}

/// What the judge and the person decided: continuations, verdicts, checks, the review.
/// `said_done`: the agent's last words in the run say it is done (for a review with no claim).
fn write_judgement(md: &mut String, e: Entry, said_done: bool) {
    match e {
        Entry::Continuation { source, attempt, max, remaining } => {
            let _ = writeln!(md, "- ↻ *Continuation{}* ({}){}\n", count(attempt, max), continuation_label(source, attempt), list_inline(&remaining));
        }
        Entry::Evaluation { cycle, verdict, summary, remaining, parse_ok, question } => {
            let asked = match question {
                EvaluationQuestion::AnnouncedAction => format!("Evaluator, {} (cycle {cycle})", EvaluationQuestion::ANNOUNCED_ACTION_ASKED),
                EvaluationQuestion::Done => format!("Evaluator verdict (cycle {cycle})"),
            };
            let _ = writeln!(
                md,
                "**⚖ {asked}: {}**{}\n\n{}{}\n",
                question.answer(verdict),
                if parse_ok || verdict == Verdict::Unavailable { "" } else { " (no usable answer)" },
                quote(&summary),
                list_block(&remaining)
            );
        }
        Entry::Verification { command, exit_code, output_tail, skipped, nth, of } => {
            let which = if of > 1 { format!(" {nth} of {of}") } else { String::new() };
            // Marked as the CLI marks it live: only exit 0 passed.
            let mark = match (skipped, exit_code) {
                (true, _) => "–",
                (false, Some(0)) => "✓",
                _ => "✗",
            };
            if skipped {
                let _ = writeln!(md, "**{mark} Verification{which}** {}: skipped\n", code_span(&command));
            } else {
                let _ = writeln!(
                    md,
                    "**{mark} Verification{which}** {}: exit {}\n\n{}",
                    code_span(&command),
                    exit_code.map(|c| c.to_string()).unwrap_or("?".into()),
                    fenced("", output_tail.trim_end())
                );
            }
        }
        Entry::Review { claim, verdict, verdict_on_step, end_reason, stuck, remaining, audit, criteria, files } => {
            let _ = writeln!(
                md,
                "**Review requested:** {}; {}{}{}{}\n",
                end_reason.words(),
                if claim == Claim::None && said_done { "the agent said it was done in its reply" } else { claim.words() },
                verdict
                    .map(|v| match v {
                        Verdict::Unavailable => "; the evaluator gave no usable answer".to_string(),
                        v => format!("; the evaluator said {}", v.words()),
                    })
                    .unwrap_or_default(),
                // After "said done": a plan's verdict is on its step.
                verdict_on_step.map(|s| format!(" (on {s}, not the whole task)")).unwrap_or_default(),
                list_block(&crate::judge::criteria::beyond_checklist(&remaining, &criteria))
            );
            if let Some(s) = stuck {
                // On one line: a repeating answer's lines would end the list item and its span.
                let one_line = s.repeated.split_whitespace().collect::<Vec<_>>().join(" ");
                let repeated = if one_line.is_empty() { String::new() } else { format!(": {}", code_span(&one_line)) };
                let _ = writeln!(md, "- Stuck: {}{repeated}\n", s.pattern.describe());
            }
            for l in &audit {
                let _ = writeln!(md, "- ⚠ audit: {}{}", l.finding.describe(), if l.dismissed { " (dismissed by you)" } else { "" });
            }
            for c in &criteria {
                let _ = writeln!(md, "- {}", criterion_words(c));
            }
            if !audit.is_empty() || !criteria.is_empty() {
                md.push('\n');
            }
            write_reviewed_files(md, &files);
        }
        Entry::Decision { decision, by, feedback, occasion, let_go } => {
            let _ = writeln!(
                md,
                "**Review decision:** {} ({}){}\n",
                decision.told_in_words(occasion),
                match by {
                    DecidedBy::Person => "by you",
                    DecidedBy::Auto => "automatically",
                },
                feedback.filter(|_| occasion.is_none()).map(|f| format!(": {f}")).unwrap_or_default()
            );
            for c in &let_go {
                let _ = writeln!(md, "- Let go, not asked again: {c}");
            }
            if !let_go.is_empty() {
                md.push('\n');
            }
        }
        _ => {}
    }
}

/// One of the person's comments as the judge found it: `☑ met: src/a.rs:3: rename x (evidence)`,
/// marked as the CLI and the window mark it.
pub fn criterion_words(c: &crate::judge::criteria::CriterionResult) -> String {
    use crate::judge::criteria::CriterionState;
    let mark = match c.state {
        CriterionState::Met => "☑ met",
        CriterionState::Unmet => "☐ unmet",
        CriterionState::Unverifiable => "? unverifiable",
    };
    format!("{mark}: {} ({})", c.text, c.evidence)
}

/// A file a review showed, as `review_requested` records it.
#[derive(Debug, Clone, Serialize)]
pub struct ReviewedFile {
    pub path: String,
    pub kind: String,
    pub diff: String,
}

impl ReviewedFile {
    fn from_value(v: &Value) -> Option<ReviewedFile> {
        let text = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
        Some(ReviewedFile { path: v.get("path")?.as_str()?.to_string(), kind: text("kind"), diff: text("diff") })
    }
}

/// The files a review showed, then each one's diff in a fence no line of it can close.
fn write_reviewed_files(md: &mut String, files: &[ReviewedFile]) {
    if files.is_empty() {
        return;
    }
    let names: Vec<String> = files.iter().map(|f| if f.kind.is_empty() { f.path.clone() } else { format!("{} ({})", f.path, f.kind) }).collect();
    let _ = writeln!(md, "Files changed: {}\n", names.join(", "));
    for f in files.iter().filter(|f| !f.diff.trim().is_empty()) {
        let _ = writeln!(md, "{}", fenced("diff", &f.diff));
    }
}

/// `text` as inline code whose backticks outnumber any run of them in it (a command holding one
/// ended the span early), with a space inside where it starts or ends with one, as CommonMark asks.
fn code_span(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let ticks = "`".repeat(longest + 1);
    let pad = if text.starts_with('`') || text.ends_with('`') { " " } else { "" };
    format!("{ticks}{pad}{text}{pad}{ticks}")
}

/// `text` in a code block whose fence is longer than any run of backticks in it, so that no line
/// of it (a file's own code block, read by a tool) can close the block early.
fn fenced(language: &str, text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    let end = if text.ends_with('\n') { "" } else { "\n" };
    format!("{fence}{language}\n{text}{end}{fence}\n")
}

/// The plan, a step's start and its end.
fn write_plan_entry(md: &mut String, e: Entry) {
    match e {
        Entry::Plan { revised_because, steps } => {
            match revised_because {
                None => {
                    let _ = writeln!(md, "**▤ Plan ({} steps):**\n", steps.len());
                }
                Some(cause) => {
                    let _ = writeln!(md, "**▤ Plan revised:** {cause}\n\nNew steps:\n");
                }
            }
            for (i, s) in steps.iter().enumerate() {
                let done_when = if s.criteria.is_empty() { String::new() } else { format!(" (done when: {})", s.criteria.join("; ")) };
                let _ = writeln!(md, "{}. **{}**: {}{done_when}", i + 1, s.title, s.instructions.trim());
            }
            md.push('\n');
        }
        Entry::PlanStep { number, of, title } => {
            let _ = writeln!(md, "#### Step {number}/{of}: {title}\n");
        }
        Entry::PlanStepEnd { end_reason, summary, output_data } => {
            let _ = writeln!(md, "*Step ended: {}*{}\n", end_reason.words(), if summary.is_empty() { String::new() } else { format!(": {summary}") });
            if let Some(data) = output_data {
                let _ = writeln!(md, "*For later steps:* {data}\n");
            }
        }
        _ => {}
    }
}

/// Tools, todos, instructions, reverts, run ends, statuses and errors.
fn write_other(md: &mut String, e: Entry) {
    match e {
        Entry::Tool { tool, input, state, output, .. } => {
            let _ = writeln!(
                md,
                "**Tool {}** ({})\n\n{}",
                code_span(&tool),
                state.as_str().replace('_', " "),
                fenced("json", &serde_json::to_string_pretty(&input).unwrap_or_default())
            );
            if let Some(o) = output.filter(|o| !o.is_empty()) {
                let shown: String = o.chars().take(2000).collect();
                let _ = writeln!(md, "{}", fenced("", &format!("{shown}{}", if o.chars().count() > 2000 { "\n…" } else { "" })));
            }
        }
        // Emptied (a plan's next step starts with none): no heading over nothing.
        Entry::Todos { todos } if todos.is_empty() => {}
        Entry::Todos { todos } => {
            let _ = writeln!(md, "**Todos:**\n");
            for t in todos {
                let mark = match t.status {
                    TodoStatus::Completed => "[x]",
                    TodoStatus::Cancelled => "[-]",
                    _ => "[ ]",
                };
                let _ = writeln!(md, "- {mark} {}", t.content);
            }
            md.push('\n');
        }
        Entry::Instructions { file, truncated } => {
            let _ = writeln!(md, "*Following the project's {file}{}*\n", if truncated { " (cut to its first part)" } else { "" });
        }
        Entry::Reverted { restored, deleted, kept, copies, not_copied } => {
            let kept: Vec<&str> = kept.iter().map(String::as_str).collect();
            let _ = writeln!(md, "**Reverted:** {}{}\n", revert_summary(restored.len(), deleted.len()), revert_left(&kept, &copies, &not_copied));
        }
        Entry::LandingBlocked { reason, detail, files } => {
            let _ = writeln!(md, "**Not landed** ({}): {detail}{}\n", reason.as_str().replace('_', " "), list_inline(&files));
        }
        Entry::Landed { mode, target_branch, commit, branch_kept, files, checkout_elsewhere } => {
            let on = target_branch.as_ref().map(|b| format!(" on {b}")).unwrap_or_default();
            let line = match (mode, commit, branch_kept) {
                (LandingMode::Branch, _, Some(k)) => format!("**Branch kept:** {k}, for later; nothing landed{on}"),
                _ if files.is_empty() => "**Approved:** the task left every file git tracks as it was, so nothing landed".to_string(),
                (_, Some(c), _) => format!("**Landed**{on} as {} ({})", &c[..c.len().min(10)], mode.as_str()),
                (_, None, _) => format!("**Landed**{on} as changes in your working tree, not committed"),
            };
            let _ = writeln!(md, "{line}\n");
            if let (Some(elsewhere), Some(target)) = (checkout_elsewhere, target_branch) {
                let _ = writeln!(md, "{}\n", elsewhere.words(&target));
            }
        }
        Entry::BranchKept { branch, files, why } => {
            let files = if files.is_empty() { String::new() } else { format!(" ({})", files.join(", ")) };
            let _ = writeln!(md, "**Branch kept:** {branch}{}{files}\n", why.words());
        }
        Entry::RunEnd { status, end_reason } => {
            // A plan's step ends as a run still at work: the step ended, as the window says.
            let _ = match status {
                SessionStatus::Busy => writeln!(md, "*Plan step ended: {}*\n", end_reason.words()),
                // "Failed (Failed)" says one thing twice.
                _ if status.words().eq_ignore_ascii_case(end_reason.words()) => writeln!(md, "*Run ended: {}*\n", status.words()),
                _ => writeln!(md, "*Run ended: {} ({})*\n", status.words(), end_reason.words()),
            };
        }
        Entry::Status { status, message } => {
            let _ = writeln!(md, "*{}: {}*\n", status.words(), message.unwrap_or_default());
        }
        Entry::ModelSwitched { from, to } => {
            let _ = writeln!(md, "*Model: {to} (was {from})*\n");
        }
        // The code is for programs (the JSON export keeps it); people read the message.
        Entry::Error { message, .. } => {
            let _ = writeln!(md, "**Error:** {message}\n");
        }
        _ => {}
    }
}

fn list_inline(items: &[String]) -> String {
    if items.is_empty() {
        String::new()
    } else {
        format!(": {}", items.join("; "))
    }
}

fn list_block<S: AsRef<str>>(items: &[S]) -> String {
    if items.is_empty() {
        return String::new();
    }
    let mut s = String::from("\n\nRemaining:\n");
    for i in items {
        let _ = writeln!(s, "- {}", i.as_ref());
    }
    s
}

/// Of the files a revert left, those left because they changed after the task: the others were
/// to be overwritten, and are named with why they were not ([`not_copied_words`]).
pub fn changed_since<'a>(kept: &'a [String], not_copied: &[crate::workspace::checkpoint::NotCopied]) -> Vec<&'a str> {
    kept.iter().filter(|k| !not_copied.iter().any(|n| &n.path == *k)).map(String::as_str).collect()
}

/// What a revert left and kept, after its summary: "; left as they are (changed after the agent):
/// a.txt; your version of b.txt is kept at …; c.txt was not overwritten: …". `changed` is
/// [`changed_since`]'s.
pub fn revert_left(
    changed: &[&str],
    copies: &[crate::workspace::checkpoint::OverwrittenCopy],
    not_copied: &[crate::workspace::checkpoint::NotCopied],
) -> String {
    let mut line = String::new();
    if !changed.is_empty() {
        line.push_str(&format!("; left as they are (changed after the agent): {}", changed.join(", ")));
    }
    for words in copies_words(copies, false) {
        line.push_str(&format!("; {words}"));
    }
    for n in not_copied {
        line.push_str(&format!("; {}", not_copied_words(n)));
    }
    line
}

/// Where a revert kept the version it replaced or removed, and why, in the words the window
/// uses; `sentence` starts it as a sentence (a path is never recased).
pub fn copy_words(c: &crate::workspace::checkpoint::OverwrittenCopy, sentence: bool) -> String {
    if c.unattributed {
        format!(
            "{} changed while a command or an external agent was at work, so an edit of yours then would look like the agent's: a copy of it as it was before the revert is kept at {}",
            c.path, c.copy
        )
    } else {
        format!("{} version of {}, which the revert replaced or removed as you said, is kept at {}", if sentence { "Your" } else { "your" }, c.path, c.copy)
    }
}

/// More copies than this of files changed while a command ran are said in one sentence.
pub const COPIES_NAMED: usize = 3;

/// [`copy_words`] for each copy a revert kept; those of files changed while a command ran (a
/// build or an install may make thousands) in one sentence when there are more than
/// [`COPIES_NAMED`], naming a few and the folder that holds them all.
pub fn copies_words(copies: &[crate::workspace::checkpoint::OverwrittenCopy], sentence: bool) -> Vec<String> {
    let (unattributed, named): (Vec<_>, Vec<_>) = copies.iter().partition(|c| c.unattributed);
    let mut words: Vec<String> = named.iter().map(|c| copy_words(c, sentence)).collect();
    if unattributed.len() <= COPIES_NAMED {
        words.extend(unattributed.iter().map(|c| copy_words(c, sentence)));
        return words;
    }
    let some = unattributed.iter().take(COPIES_NAMED).map(|c| c.path.as_str()).collect::<Vec<_>>().join(", ");
    words.push(format!(
        "{} files ({some} and {} more) changed while a command or an external agent was at work, so an edit of yours then would look like the agent's: copies of them as they were before the revert are kept in {}",
        unattributed.len(),
        unattributed.len() - COPIES_NAMED,
        holding_folder(unattributed.iter().map(|c| c.copy.as_str())).display()
    ));
    words
}

/// The innermost folder that holds every one of `files`.
fn holding_folder<'a>(mut files: impl Iterator<Item = &'a str>) -> std::path::PathBuf {
    let Some(first) = files.next() else { return std::path::PathBuf::new() };
    let mut common = Path::new(first).parent().map(Path::to_path_buf).unwrap_or_default();
    for f in files {
        while !Path::new(f).starts_with(&common) {
            if !common.pop() {
                break;
            }
        }
    }
    common
}

/// Why a file the person said to overwrite was left, in the words the window uses.
pub fn not_copied_words(n: &crate::workspace::checkpoint::NotCopied) -> String {
    format!("{} was not overwritten: no copy of your version could be kept first ({})", n.path, n.reason)
}

/// "2 files restored, 1 deleted": what a revert did, in the words the window uses.
pub fn revert_summary(restored: usize, deleted: usize) -> String {
    let files = |n: usize| if n == 1 { "1 file".to_string() } else { format!("{n} files") };
    match (restored, deleted) {
        (0, 0) => "no file needed restoring".into(),
        (r, 0) => format!("{} restored", files(r)),
        (0, d) => format!("{} deleted", files(d)),
        (r, d) => format!("{} restored, {d} deleted", files(r)),
    }
}
