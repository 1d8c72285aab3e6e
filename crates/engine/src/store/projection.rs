//! Keeps the tables current from each event, inside the same transaction that stores the event,
//! so the tables can never disagree with the log.

use rusqlite::{params, Connection};

use super::{decisions, messages, search};
use crate::domain::*;
use crate::error::Result;
use crate::event::{EngineEvent, Envelope};

pub fn apply(conn: &Connection, env: &Envelope, now_ms: i64) -> Result<()> {
    let s = &env.session_id;
    let run = env.run_id.as_ref().map(|r| r.0.as_str());
    // What the evaluator said is searched too: its verdicts, and why it prefers one attempt.
    match &env.event {
        EngineEvent::Evaluation { summary, .. } => search::index(conn, s, None, summary)?,
        EngineEvent::AttemptsCompared { reason, .. } => search::index(conn, s, None, reason)?,
        _ => {}
    }
    match &env.event {
        EngineEvent::RunStarted { .. }
        | EngineEvent::RunFinished { .. }
        | EngineEvent::StatusChanged { .. }
        | EngineEvent::TaskWorkspace { .. }
        | EngineEvent::AttemptStarted { .. }
        | EngineEvent::AttemptChosen { .. }
        | EngineEvent::WorktreeRemoved { .. }
        | EngineEvent::StepStarted { .. } => apply_run(conn, env, now_ms)?,
        EngineEvent::PermissionRequested { .. }
        | EngineEvent::QuestionAsked { .. }
        | EngineEvent::ReviewRequested { .. }
        | EngineEvent::PermissionResolved { .. }
        | EngineEvent::RequestCancelled { .. }
        | EngineEvent::QuestionAnswered { .. }
        | EngineEvent::ReviewResolved { .. }
        | EngineEvent::Evaluation { .. } => apply_request(conn, env, now_ms)?,
        EngineEvent::SessionCreated { task, .. } => search::index(conn, s, None, task)?,
        EngineEvent::ModelSwitched { to, .. } => {
            conn.prepare_cached("UPDATE sessions SET model = ?2 WHERE id = ?1")?.execute(params![s.0, to])?;
        }
        EngineEvent::TokensSpent { source, usage, .. } => add_usage(conn, s, run, *source, usage.input_tokens, usage.output_tokens, now_ms)?,
        EngineEvent::StepFinished { usage, .. } => {
            add_usage(conn, s, run, UsageSource::Agent, usage.input_tokens, usage.output_tokens, now_ms)?;
            search::index_pending(conn, s)?;
        }
        EngineEvent::MessageCreated { message_id, role, source, text } => {
            conn.prepare_cached(
                "INSERT INTO messages (id, session_id, run_id, role, source, created_seq, created_ms, indexed) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            )?
            .execute(params![message_id.0, s.0, run, role.as_str(), source.map(|x| x.as_str()), env.seq as i64, now_ms, text.is_some() as i64])?;
            if let Some(t) = text {
                search::index(conn, s, Some(message_id), t)?;
            }
        }
        // Streamed text stays in the event log alone, read back when its message is indexed.
        EngineEvent::TextDelta { .. } | EngineEvent::ReasoningDelta { .. } => {}
        EngineEvent::ToolCall { call_id, message_id, tool, input, state, output, .. } => {
            messages::upsert_tool_call(conn, s, message_id.as_ref(), env.seq, call_id, tool, input, *state, output.as_deref())?
        }
        EngineEvent::TodosUpdated { todos } => messages::replace_todos(conn, s, todos)?,
        EngineEvent::Continuation { source, .. } if source.spends_budget() => {
            conn.prepare_cached("UPDATE runs SET continuations_used = continuations_used + 1 WHERE id = ?1")?.execute(params![run])?;
        }
        EngineEvent::Continuation { .. } => {}
        EngineEvent::AuditDismissed { .. } | EngineEvent::AuditRestored { .. } => super::sessions::refresh_audit(conn, s)?,
        EngineEvent::Activity { .. }
        | EngineEvent::AttemptsCompared { .. }
        | EngineEvent::ComparisonFailed { .. }
        | EngineEvent::TaskVerify { .. }
        | EngineEvent::TaskAllowed { .. }
        | EngineEvent::Verification { .. }
        | EngineEvent::Reverted { .. }
        | EngineEvent::RevertStarted { .. }
        | EngineEvent::ReviewComment { .. }
        | EngineEvent::ReviewCommentRemoved { .. }
        | EngineEvent::CommentsLetGo { .. }
        | EngineEvent::CriteriaSet { .. }
        | EngineEvent::CriteriaChecked { .. }
        | EngineEvent::WorktreeReady { .. }
        | EngineEvent::TaskCommitted { .. }
        | EngineEvent::LandingStarted { .. }
        | EngineEvent::Landed { .. }
        | EngineEvent::LandingBlocked { .. }
        | EngineEvent::IgnoredCopied { .. }
        | EngineEvent::BranchKept { .. }
        | EngineEvent::Rebased { .. }
        | EngineEvent::ProjectInstructions { .. }
        | EngineEvent::AgentConnected { .. }
        | EngineEvent::AgentLoginNeeded { .. }
        | EngineEvent::Unreadable { .. } => {}
        // What went wrong is found by its words ("overloaded", "does not exist").
        EngineEvent::Error { message, .. } => search::index(conn, s, None, message)?,
        EngineEvent::PlanCreated { .. }
        | EngineEvent::PlanRevised { .. }
        | EngineEvent::PlanReviewed { .. }
        | EngineEvent::PlanStepStarted { .. }
        | EngineEvent::PlanStepFinished { .. } => super::sessions::refresh_plan(conn, s)?,
    }
    Ok(())
}

/// A run's start, end and steps; the session's status, workspace and attempt.
fn apply_run(conn: &Connection, env: &Envelope, now_ms: i64) -> Result<()> {
    let s = &env.session_id;
    let run = env.run_id.as_ref().map(|r| r.0.as_str());
    match &env.event {
        EngineEvent::RunStarted { trigger } => {
            conn.prepare_cached("INSERT INTO runs (id, session_id, trigger, started_ms) VALUES (?1, ?2, ?3, ?4)")?.execute(params![
                run,
                s.0,
                trigger.as_str(),
                now_ms
            ])?;
            // A session at work has no outcome yet: the run before's (the round before a
            // follow-up, a plan's last step) would read as this one's, and History's outcome
            // filter would find it.
            conn.prepare_cached("UPDATE sessions SET run_started_ms = ?2, claim = NULL, verdict = NULL, end_reason = NULL, failure = NULL WHERE id = ?1")?
                .execute(params![s.0, now_ms])?;
        }
        EngineEvent::RunFinished { status, claim, verdict, end_reason, .. } => {
            conn.prepare_cached("UPDATE runs SET finished_ms = ?2, status = ?3, claim = ?4, verdict = ?5, end_reason = ?6 WHERE id = ?1")?.execute(params![
                run,
                now_ms,
                status.as_str(),
                claim.as_str(),
                verdict.map(|v| v.as_str()),
                end_reason.as_str()
            ])?;
            // Duration counts the time runs were working, not the time the session sat waiting.
            conn.prepare_cached("UPDATE sessions SET active_ms = active_ms + MAX(0, ?2 - COALESCE(run_started_ms, ?2)), run_started_ms = NULL WHERE id = ?1")?
                .execute(params![s.0, now_ms])?;
            // A plan step's run ends with the plan still at work: its end is the step's, not the
            // task's.
            if !status.at_work() {
                conn.prepare_cached("UPDATE sessions SET claim = ?2, verdict = ?3, end_reason = ?4 WHERE id = ?1")?.execute(params![
                    s.0,
                    claim.as_str(),
                    verdict.map(|v| v.as_str()),
                    end_reason.as_str()
                ])?;
            }
            search::index_pending(conn, s)?;
        }
        EngineEvent::StatusChanged { status, message, .. } => {
            conn.prepare_cached("UPDATE sessions SET status = ?2 WHERE id = ?1")?.execute(params![s.0, status.as_str()])?;
            // Why it failed, while it stands failed (a discard moves it on with no run).
            let failure = if *status == SessionStatus::Failed { message.as_deref() } else { None };
            conn.prepare_cached("UPDATE sessions SET failure = ?2 WHERE id = ?1")?.execute(params![s.0, failure])?;
            // Active time is a run's working time: a wait in the queue or for the person's answer
            // stops its clock (the run's end adds what is left), and work starts it again.
            match status {
                SessionStatus::Queued | SessionStatus::AwaitingApproval => {
                    conn.prepare_cached(
                        "UPDATE sessions SET active_ms = active_ms + MAX(0, ?2 - run_started_ms), run_started_ms = NULL WHERE id = ?1 AND run_started_ms IS NOT NULL",
                    )?
                    .execute(params![s.0, now_ms])?;
                }
                // An answer to a permission or a question sets Busy outside the run's own events.
                SessionStatus::Busy | SessionStatus::Retry => {
                    conn.prepare_cached("UPDATE sessions SET run_started_ms = ?2 WHERE id = ?1 AND run_started_ms IS NULL")?.execute(params![s.0, now_ms])?;
                }
                _ => {}
            }
            // A run that settles frees its session in the same step, so the next start never
            // finds the session idle but still held by a run that is on its way out.
            if !status.is_running() && *status != SessionStatus::AwaitingApproval {
                conn.prepare_cached(
                    "UPDATE sessions SET lease_owner = NULL, lease_pid = NULL, lease_host = NULL, lease_heartbeat_ms = NULL, lease_run = NULL,
                     cancel_asked_of = NULL WHERE id = ?1 AND lease_run = ?2",
                )?
                .execute(params![s.0, run])?;
            }
        }
        EngineEvent::TaskWorkspace { isolation, worktree, .. } => {
            let iso = serde_json::to_value(isolation).ok().and_then(|v| v.as_str().map(String::from));
            conn.prepare_cached("UPDATE sessions SET isolation = ?2, work_dir = ?3, branch = ?4 WHERE id = ?1")?.execute(params![
                s.0,
                iso,
                worktree.as_ref().map(|w| w.folder.clone()),
                worktree.as_ref().map(|w| w.branch.clone())
            ])?;
        }
        EngineEvent::AttemptStarted { group, number, of, label, .. } => {
            conn.prepare_cached("UPDATE sessions SET group_id = ?2, attempt = ?3, attempts = ?4, attempt_label = ?5 WHERE id = ?1")?.execute(params![
                s.0,
                group.0,
                *number as i64,
                *of as i64,
                label
            ])?;
        }
        EngineEvent::AttemptChosen { .. } => {
            conn.prepare_cached("UPDATE sessions SET chosen = 1 WHERE id = ?1")?.execute(params![s.0])?;
        }
        // Only when it is the task's current worktree: an older one's removal, finished late,
        // says nothing of the one the task works in now.
        EngineEvent::WorktreeRemoved { folder, branch_deleted, .. } => {
            conn.prepare_cached("UPDATE sessions SET work_dir = NULL WHERE id = ?1 AND work_dir = ?2")?.execute(params![s.0, folder])?;
            // The branch is named only while it exists: one left after the worktree (kept at
            // Approve, or holding edits made after a Reject) is where the task's work waits.
            if let Some(b) = branch_deleted {
                conn.prepare_cached("UPDATE sessions SET branch = NULL WHERE id = ?1 AND branch = ?2")?.execute(params![s.0, b])?;
            }
        }
        EngineEvent::StepStarted { step, .. } => {
            conn.prepare_cached("UPDATE runs SET steps = MAX(steps, ?2), model_calls = model_calls + 1 WHERE id = ?1")?.execute(params![run, *step as i64])?;
        }
        // The other events are [`apply`]'s.
        _ => {}
    }
    Ok(())
}

/// Requests to the person (permissions, questions, reviews), their answers, and verdicts.
fn apply_request(conn: &Connection, env: &Envelope, now_ms: i64) -> Result<()> {
    let s = &env.session_id;
    let run = env.run_id.as_ref().map(|r| r.0.as_str());
    match &env.event {
        EngineEvent::PermissionRequested { request_id, tool, input, reason, .. } => decisions::insert(
            conn,
            request_id,
            s,
            run,
            decisions::RequestKind::Permission,
            &serde_json::json!({"tool": tool, "input": input, "reason": reason}),
            now_ms,
        )?,
        EngineEvent::QuestionAsked { request_id, question, .. } => {
            decisions::insert(conn, request_id, s, run, decisions::RequestKind::Question, &serde_json::json!({"question": question}), now_ms)?
        }
        EngineEvent::ReviewRequested { review_id, audit, .. } => {
            let payload = serde_json::to_value(&env.event).unwrap_or_default();
            decisions::insert(conn, review_id, s, run, decisions::RequestKind::Review, &payload, now_ms)?;
            conn.prepare_cached("UPDATE sessions SET audit_findings = ?2 WHERE id = ?1")?.execute(params![s.0, audit.len() as i64])?;
        }
        EngineEvent::PermissionResolved { request_id, decision } => {
            decisions::mark_decided(conn, request_id, serde_json::to_value(decision).unwrap_or_default().as_str().unwrap_or(""), now_ms)?;
        }
        EngineEvent::RequestCancelled { request_id } => {
            decisions::mark_decided(conn, request_id, "cancelled", now_ms)?;
        }
        EngineEvent::QuestionAnswered { request_id, declined, .. } => {
            decisions::mark_decided(conn, request_id, if *declined { "declined" } else { "answered" }, now_ms)?;
        }
        EngineEvent::ReviewResolved { review_id, decision, by, occasion, .. } => {
            decisions::mark_decided(conn, review_id, decision.as_str(), now_ms)?;
            conn.prepare_cached("UPDATE sessions SET decision = ?2, decided_by = ?3, approvals = approvals + (?2 = 'approve') WHERE id = ?1")?
                .execute(params![s.0, decision.as_str(), by.as_str()])?;
            let occasion = occasion.and_then(|o| serde_json::to_value(o).ok()).and_then(|v| v.as_str().map(String::from));
            conn.prepare_cached("UPDATE runs SET decision = ?2, occasion = ?3 WHERE id = (SELECT run_id FROM requests WHERE id = ?1)")?.execute(params![
                review_id.0,
                decision.as_str(),
                occasion
            ])?;
        }
        EngineEvent::Evaluation { cycle, verdict, summary, remaining, stuck_reason, model, parse_ok, usage, .. } => {
            conn.prepare_cached(
                "INSERT INTO evaluations (session_id, run_id, cycle, verdict, summary, remaining, stuck_reason, model, parse_ok, at_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            )?
            .execute(params![
                s.0,
                run,
                *cycle as i64,
                verdict.as_str(),
                summary,
                serde_json::to_string(remaining).unwrap_or_default(),
                stuck_reason,
                model,
                *parse_ok as i64,
                now_ms
            ])?;
            add_usage(conn, s, run, UsageSource::Evaluator, usage.input_tokens, usage.output_tokens, now_ms)?;
        }
        // The other events are [`apply`]'s.
        _ => {}
    }
    Ok(())
}

pub fn add_usage(conn: &Connection, s: &SessionId, run: Option<&str>, source: UsageSource, input: u64, output: u64, now_ms: i64) -> Result<()> {
    conn.prepare_cached("INSERT INTO usage (session_id, run_id, source, input, output, at_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6)")?.execute(params![
        s.0,
        run,
        source.as_str(),
        input as i64,
        output as i64,
        now_ms
    ])?;
    let column = match source {
        UsageSource::Agent => "tokens_agent",
        UsageSource::Evaluator => "tokens_evaluator",
        UsageSource::Compaction => "tokens_compaction",
    };
    conn.prepare_cached(&format!("UPDATE sessions SET {column} = {column} + ?2 WHERE id = ?1"))?.execute(params![s.0, (input + output) as i64])?;
    Ok(())
}
