//! The sessions and runs tables, and the history list.

use rusqlite::{params, OptionalExtension, Row};
use serde::{Deserialize, Serialize};

use crate::domain::*;
use crate::error::Result;

pub const MIGRATION: &str = "
CREATE TABLE sessions (
    id                TEXT PRIMARY KEY,
    title             TEXT NOT NULL,
    task              TEXT NOT NULL,
    workspace         TEXT NOT NULL,
    provider          TEXT NOT NULL,
    model             TEXT NOT NULL,
    status            TEXT NOT NULL,
    claim             TEXT,
    verdict           TEXT,
    end_reason        TEXT,
    decision          TEXT,
    decided_by        TEXT,
    created_ms        INTEGER NOT NULL,
    updated_ms        INTEGER NOT NULL,
    last_seq          INTEGER NOT NULL DEFAULT 0,
    active_ms         INTEGER NOT NULL DEFAULT 0,
    run_started_ms    INTEGER,
    tokens_agent      INTEGER NOT NULL DEFAULT 0,
    tokens_evaluator  INTEGER NOT NULL DEFAULT 0,
    tokens_compaction INTEGER NOT NULL DEFAULT 0,
    lease_owner       TEXT,
    lease_pid         INTEGER,
    lease_host        TEXT,
    lease_heartbeat_ms INTEGER
);
CREATE INDEX sessions_by_created ON sessions(created_ms DESC, id DESC);
CREATE INDEX sessions_by_status ON sessions(status, created_ms DESC);
CREATE TABLE runs (
    id                 TEXT PRIMARY KEY,
    session_id         TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    trigger            TEXT NOT NULL,
    started_ms         INTEGER NOT NULL,
    finished_ms        INTEGER,
    status             TEXT,
    claim              TEXT,
    verdict            TEXT,
    end_reason         TEXT,
    decision           TEXT,
    steps              INTEGER NOT NULL DEFAULT 0,
    continuations_used INTEGER NOT NULL DEFAULT 0,
    truncations_in_row INTEGER NOT NULL DEFAULT 0,
    compactions        INTEGER NOT NULL DEFAULT 0,
    model_calls        INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX runs_by_session ON runs(session_id, started_ms);
";

/// A run's gathered evidence (counters, stuck memory, its workspace base) as JSON, written with
/// the events that change it, so a crash and resume continue it instead of starting over.
pub const EVIDENCE_MIGRATION: &str = "ALTER TABLE runs ADD COLUMN evidence TEXT;";

/// The run that holds a session's lease, so only that run's end frees it.
pub const LEASE_RUN_MIGRATION: &str = "ALTER TABLE sessions ADD COLUMN lease_run TEXT;";

/// A cancel asked of the process that runs a session (its lease's token), from another process:
/// that one stops the run. Indexed only where asked, so each process's look every second is free.
pub const CANCEL_ASK_MIGRATION: &str = "ALTER TABLE sessions ADD COLUMN cancel_asked_of TEXT;
CREATE INDEX sessions_cancel_asked ON sessions(cancel_asked_of) WHERE cancel_asked_of IS NOT NULL;";

/// Why a failed session failed, for the history list, until its next run starts.
pub const FAILURE_MIGRATION: &str = "ALTER TABLE sessions ADD COLUMN failure TEXT;
UPDATE sessions SET failure = (SELECT json_extract(body, '$.message') FROM events
    WHERE events.session_id = sessions.id AND type = 'status_changed' AND json_extract(body, '$.status') = 'failed' ORDER BY seq DESC LIMIT 1)
  WHERE status = 'failed';";

/// A plan's progress for the history list: the steps of the plan as it stands and how many are
/// done (0 and 0 without a plan).
pub const PLAN_MIGRATION: &str = "ALTER TABLE sessions ADD COLUMN plan_steps INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN plan_done INTEGER NOT NULL DEFAULT 0;";

/// Where each task works: its isolation (NULL for sessions made before tasks had worktrees,
/// which worked in place), the folder the agent works in while it has one, and its branch.
pub const ATTEMPTS_MIGRATION: &str = "ALTER TABLE sessions ADD COLUMN group_id TEXT;
ALTER TABLE sessions ADD COLUMN attempt INTEGER;
ALTER TABLE sessions ADD COLUMN attempts INTEGER;
ALTER TABLE sessions ADD COLUMN attempt_label TEXT;
ALTER TABLE sessions ADD COLUMN chosen INTEGER NOT NULL DEFAULT 0;
CREATE INDEX sessions_by_group ON sessions(group_id) WHERE group_id IS NOT NULL;";

/// How many of a task's reviews the person approved: a task rejected now may have landed before.
pub const APPROVALS_MIGRATION: &str = "ALTER TABLE sessions ADD COLUMN approvals INTEGER NOT NULL DEFAULT 0;
UPDATE sessions SET approvals = (SELECT COUNT(*) FROM requests WHERE requests.session_id = sessions.id AND kind = 'review' AND decision = 'approve');";

pub const WORKSPACE_MIGRATION: &str = "ALTER TABLE sessions ADD COLUMN isolation TEXT;
ALTER TABLE sessions ADD COLUMN work_dir TEXT;
ALTER TABLE sessions ADD COLUMN branch TEXT;
CREATE INDEX sessions_by_workspace ON sessions(workspace, status);";

/// How many of the latest review's audit findings stand, for the history list: "verified done"
/// beside checks the agent weakened must not read as clean there.
pub const AUDIT_MIGRATION: &str = "ALTER TABLE sessions ADD COLUMN audit_findings INTEGER NOT NULL DEFAULT 0;";

pub fn backfill_audit(conn: &rusqlite::Connection) -> Result<()> {
    let ids: Vec<String> = conn
        .prepare("SELECT DISTINCT session_id FROM events WHERE type = 'review_requested'")?
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    for id in ids {
        refresh_audit(conn, &SessionId(id))?;
    }
    Ok(())
}

/// Recounts the latest review's audit findings that stand: found, and not dismissed since (a
/// dismissal said twice is one; a restore brings the finding back). Reads that review and the
/// audit events after it only.
pub fn refresh_audit(conn: &rusqlite::Connection, session: &SessionId) -> Result<()> {
    let latest: Option<(i64, String)> = conn
        .prepare_cached("SELECT seq, body FROM events WHERE session_id = ?1 AND type = 'review_requested' ORDER BY seq DESC LIMIT 1")?
        .query_row([&session.0], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    let findings = match latest.and_then(|(seq, body)| serde_json::from_str::<crate::event::Envelope>(&body).ok().map(|e| (seq, e.event))) {
        Some((seq, crate::event::EngineEvent::ReviewRequested { audit, .. })) => {
            let mut dismissed = std::collections::HashSet::new();
            let mut stmt = conn
                .prepare_cached("SELECT body FROM events WHERE session_id = ?1 AND seq > ?2 AND type IN ('audit_dismissed', 'audit_restored') ORDER BY seq")?;
            for body in stmt.query_map(params![session.0, seq], |r| r.get::<_, String>(0))? {
                match serde_json::from_str::<crate::event::Envelope>(&body?).map(|e| e.event) {
                    Ok(crate::event::EngineEvent::AuditDismissed { rule, path, excerpt }) => {
                        dismissed.insert((rule, path, excerpt));
                    }
                    Ok(crate::event::EngineEvent::AuditRestored { rule, path, excerpt }) => {
                        dismissed.remove(&(rule, path, excerpt));
                    }
                    _ => {}
                }
            }
            audit.into_iter().filter(|f| !dismissed.contains(&(f.rule, f.path.clone(), f.excerpt.clone()))).count()
        }
        _ => 0,
    };
    conn.prepare_cached("UPDATE sessions SET audit_findings = ?2 WHERE id = ?1")?.execute(params![session.0, findings as i64])?;
    Ok(())
}

/// The plan events [`PlanState`](crate::plan::state::PlanState) folds.
const PLAN_EVENTS: &str = "'plan_created', 'plan_reviewed', 'plan_revised', 'plan_step_started', 'plan_step_finished'";

/// Recounts a session's plan from its plan events. Called for each plan event, which are few
/// in a session; the read skips every other event's body.
pub fn refresh_plan(conn: &rusqlite::Connection, session: &SessionId) -> Result<()> {
    let mut stmt = conn.prepare_cached(&format!("SELECT body FROM events WHERE session_id = ?1 AND type IN ({PLAN_EVENTS}) ORDER BY seq"))?;
    let envs: Vec<crate::event::Envelope> =
        stmt.query_map([&session.0], |r| r.get::<_, String>(0))?.filter_map(|b| b.ok().and_then(|b| serde_json::from_str(&b).ok())).collect();
    let (steps, done) = match crate::plan::state::PlanState::from_events(&envs) {
        Some(p) => {
            let current: Vec<_> = p.counted().collect();
            (current.len(), current.iter().filter(|s| s.state == StepState::Done).count())
        }
        None => (0, 0),
    };
    conn.prepare_cached("UPDATE sessions SET plan_steps = ?2, plan_done = ?3 WHERE id = ?1")?.execute(rusqlite::params![
        session.0,
        steps as i64,
        done as i64
    ])?;
    Ok(())
}

/// Migration 8's backfill: every session that has a plan.
pub fn backfill_plans(conn: &rusqlite::Connection) -> Result<()> {
    let ids: Vec<String> =
        conn.prepare("SELECT DISTINCT session_id FROM events WHERE type = 'plan_created'")?.query_map([], |r| r.get(0))?.collect::<rusqlite::Result<_>>()?;
    for id in ids {
        refresh_plan(conn, &SessionId(id))?;
    }
    Ok(())
}

/// A task's branch is named only while it exists (since version 12): a database from before
/// named the branches of landed and rejected tasks too. Folds each such session's worktree
/// events as the projection now does.
pub const BRANCH_MIGRATION: &str = "";

/// How a run's decision came about, beside the decision: an attempt set aside because the person
/// chose another of its group is "not chosen", where one they rejected themselves is rejected.
pub const OCCASION_MIGRATION: &str = "ALTER TABLE runs ADD COLUMN occasion TEXT;";

/// Each decided run's occasion, from the review_resolved event that decided it. Builds before
/// the event had an occasion set an attempt aside with a reject in words of their own
/// ([`crate::store::trust::SET_ASIDE`]): that is the occasion too.
pub fn backfill_occasions(conn: &rusqlite::Connection) -> Result<()> {
    conn.execute(
        "UPDATE runs SET occasion = (
             SELECT COALESCE(json_extract(e.body, '$.occasion'),
                             CASE WHEN json_extract(e.body, '$.decision') = 'reject' AND json_extract(e.body, '$.feedback') = ?1
                                       AND (SELECT group_id FROM sessions s WHERE s.id = q.session_id) IS NOT NULL
                                  THEN 'another_attempt_chosen' END)
             FROM requests q
             JOIN events e ON e.session_id = q.session_id AND e.type = 'review_resolved' AND json_extract(e.body, '$.review_id') = q.id
             WHERE q.run_id = runs.id AND q.kind = 'review' ORDER BY e.seq DESC LIMIT 1)
         WHERE decision IS NOT NULL",
        [crate::store::trust::SET_ASIDE],
    )?;
    Ok(())
}

/// Reviews rejected with their whole group before that had an occasion of its own (the reject
/// in the group's words, [`crate::agent::attempts::EVERY_ATTEMPT_REJECTED`]): told apart from an
/// attempt the person refused on its own, which the ranking keeps out of the choice.
pub fn backfill_group_rejects(conn: &rusqlite::Connection) -> Result<()> {
    conn.execute(
        "UPDATE runs SET occasion = 'every_attempt_rejected'
         WHERE decision = 'reject' AND occasion IS NULL AND EXISTS (
             SELECT 1 FROM requests q
             JOIN events e ON e.session_id = q.session_id AND e.type = 'review_resolved' AND json_extract(e.body, '$.review_id') = q.id
             WHERE q.run_id = runs.id AND q.kind = 'review' AND json_extract(e.body, '$.feedback') = ?1
               AND (SELECT group_id FROM sessions s WHERE s.id = q.session_id) IS NOT NULL)",
        [crate::agent::attempts::EVERY_ATTEMPT_REJECTED],
    )?;
    Ok(())
}

pub fn backfill_branches(conn: &rusqlite::Connection) -> Result<()> {
    let ids: Vec<String> =
        conn.prepare("SELECT id FROM sessions WHERE branch IS NOT NULL AND work_dir IS NULL")?.query_map([], |r| r.get(0))?.collect::<rusqlite::Result<_>>()?;
    let mut stmt = conn.prepare("SELECT body FROM events WHERE session_id = ?1 AND type IN ('task_workspace', 'worktree_removed') ORDER BY seq")?;
    for id in ids {
        let mut branch: Option<String> = None;
        for body in stmt.query_map([&id], |r| r.get::<_, String>(0))? {
            match serde_json::from_str::<crate::event::Envelope>(&body?).map(|e| e.event) {
                Ok(crate::event::EngineEvent::TaskWorkspace { worktree, .. }) => branch = worktree.map(|w| w.branch),
                Ok(crate::event::EngineEvent::WorktreeRemoved { branch_deleted: Some(b), .. }) if branch.as_ref() == Some(&b) => branch = None,
                _ => {}
            }
        }
        if branch.is_none() {
            conn.execute("UPDATE sessions SET branch = NULL WHERE id = ?1", [&id])?;
        }
    }
    Ok(())
}

/// One row of the history list.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionSummary {
    pub id: SessionId,
    pub title: String,
    pub task: String,
    pub workspace: String,
    pub provider: String,
    pub model: String,
    pub status: SessionStatus,
    pub claim: Option<Claim>,
    pub verdict: Option<Verdict>,
    pub end_reason: Option<EndReason>,
    /// The person's decision on its latest run's work; none while that is undecided.
    pub decision: Option<Decision>,
    /// How that decision came about, when not by the person's own review of it: another attempt
    /// of its group was chosen (a reject that refused nothing), or a landing sent back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub occasion: Option<DecisionOccasion>,
    pub created_at: String,
    pub created_ms: i64,
    pub duration_ms: i64,
    /// When its last event was recorded: for a session waiting for the person, since when.
    pub updated_ms: i64,
    pub tokens: Tokens,
    pub last_seq: u64,
    /// The steps of its plan as it stands (0 without a plan), and how many are done.
    pub plan_steps: u32,
    pub plan_done: u32,
    /// `worktree` or `in_place`; `None` for sessions from before tasks had worktrees.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isolation: Option<Isolation>,
    /// The task's own worktree, while it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work_dir: Option<String>,
    /// The task's branch in the person's repository, while it exists: with no `work_dir`, a
    /// branch kept (at Approve, or holding edits after a Reject) where the task's work waits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// Which attempt of a group it is, when several agents (or tries) do the task side by side.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<AttemptOf>,
    /// How many of its reviews the person approved: a task rejected now may have landed before.
    pub approvals: u32,
    /// The latest review's audit findings the person has not dismissed: checks the agent weakened.
    pub audit_findings: u32,
    /// Why it failed, while it stands failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
}

impl SessionSummary {
    /// Stored rejected, as a reject would be, but nobody refused it: put away with no review of
    /// its latest work (the window's "Discarded", [`Shown::Discarded`]). An attempt goes with its
    /// group, which says why, until one is chosen; after that it is a task like any other.
    pub fn put_away_unreviewed(&self) -> bool {
        self.status == SessionStatus::Rejected && self.decision != Some(Decision::Reject) && self.attempt.as_ref().is_none_or(|a| a.group_chosen)
    }

    /// What its badge names it: [`Shown::condition`]'s rules, in the same order, for one row.
    pub fn shown(&self) -> Shown {
        let set_aside = self.status == SessionStatus::Rejected
            && self.attempt.as_ref().is_some_and(|a| !a.chosen)
            && self.occasion == Some(DecisionOccasion::AnotherAttemptChosen);
        let branch_kept =
            self.branch.is_some() && self.work_dir.is_none() && matches!(self.status, SessionStatus::Completed | SessionStatus::Rejected) && !set_aside;
        if set_aside {
            Shown::NotChosen
        } else if branch_kept {
            Shown::BranchKept
        } else if self.put_away_unreviewed() {
            Shown::Discarded
        } else if self.status == SessionStatus::Idle && self.end_reason == Some(EndReason::ConversationUnchecked) {
            Shown::NotChecked
        } else {
            Shown::Status(self.status)
        }
    }
}

/// One attempt of a group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AttemptOf {
    pub group: GroupId,
    pub number: u32,
    pub of: u32,
    pub label: String,
    /// The person chose it to land.
    pub chosen: bool,
    /// The person chose one of its group (this or another) to land.
    pub group_chosen: bool,
}

pub use crate::domain::Tokens;

/// A column of a session's latest run, in SQL over `sessions`: a macro, so the summary's columns
/// are one constant string.
macro_rules! latest_run {
    ($column:literal) => {
        concat!("(SELECT r.", $column, " FROM runs r WHERE r.session_id = sessions.id ORDER BY r.started_ms DESC, r.rowid DESC LIMIT 1)")
    };
}

/// Whether one attempt of the session's group was chosen to land, in SQL over `sessions`.
macro_rules! group_chosen {
    () => {
        "EXISTS (SELECT 1 FROM sessions o WHERE o.group_id = sessions.group_id AND o.chosen != 0)"
    };
}

/// The decision is its latest run's: one made before the task ran again (a reject, then a message
/// to go on) is not the decision of its new work, which may be put away with no review. The
/// column keeps the latest decision made, for the trust figures.
pub const SUMMARY_COLUMNS: &str = concat!("id, title, task, workspace, provider, model, status, claim, verdict, end_reason, ", latest_run!("decision"), ", created_ms, active_ms, tokens_agent, tokens_evaluator, tokens_compaction, last_seq, plan_steps, plan_done, isolation, work_dir, branch, group_id, attempt, attempts, attempt_label, chosen, approvals, updated_ms, audit_findings, ", latest_run!("occasion"), ", ", group_chosen!(), ", failure");

pub fn summary_from_row(r: &Row<'_>) -> rusqlite::Result<SessionSummary> {
    let word = |i: usize| -> rusqlite::Result<Option<String>> { r.get(i) };
    let created_ms: i64 = r.get(11)?;
    Ok(SessionSummary {
        id: SessionId(r.get(0)?),
        title: r.get(1)?,
        task: r.get(2)?,
        workspace: r.get(3)?,
        // One spelling for a provider whatever version recorded it.
        provider: crate::provider::settings::current_name(&r.get::<_, String>(4)?).to_string(),
        model: r.get(5)?,
        status: SessionStatus::parse(&r.get::<_, String>(6)?).unwrap_or(SessionStatus::Idle),
        claim: word(7)?.and_then(|s| Claim::parse(&s)),
        verdict: word(8)?.and_then(|s| Verdict::parse(&s)),
        end_reason: word(9)?.and_then(|s| EndReason::parse(&s)),
        decision: word(10)?.and_then(|s| Decision::parse(&s)),
        created_at: crate::clock::rfc3339(created_ms),
        created_ms,
        duration_ms: r.get(12)?,
        tokens: Tokens { agent: r.get::<_, i64>(13)? as u64, evaluator: r.get::<_, i64>(14)? as u64, compaction: r.get::<_, i64>(15)? as u64 },
        last_seq: r.get::<_, i64>(16)? as u64,
        plan_steps: r.get::<_, i64>(17)? as u32,
        plan_done: r.get::<_, i64>(18)? as u32,
        isolation: word(19)?.and_then(|s| serde_json::from_value(serde_json::Value::String(s)).ok()),
        work_dir: word(20)?,
        branch: word(21)?,
        attempt: match word(22)? {
            Some(g) => Some(AttemptOf {
                group: GroupId(g),
                number: r.get::<_, Option<i64>>(23)?.unwrap_or(1) as u32,
                of: r.get::<_, Option<i64>>(24)?.unwrap_or(1) as u32,
                label: word(25)?.unwrap_or_default(),
                chosen: r.get::<_, i64>(26)? != 0,
                group_chosen: r.get::<_, i64>(31)? != 0,
            }),
            None => None,
        },
        approvals: r.get::<_, i64>(27)? as u32,
        updated_ms: r.get(28)?,
        audit_findings: r.get::<_, i64>(29)? as u32,
        occasion: word(30)?.and_then(|s| serde_json::from_value(serde_json::Value::String(s)).ok()),
        failure: word(32)?,
    })
}

/// What the history list shows a session as: its status, or what its badge says where the stored
/// status alone would mislead (a task put away with no review is stored rejected, a kept branch's
/// stored approved or rejected, an unchecked answer stored idle). History filters by these, so a
/// filter lists exactly the rows whose badge it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum Shown {
    Status(SessionStatus),
    Discarded,
    BranchKept,
    NotChecked,
    /// An attempt set aside because the person chose another of its group.
    NotChosen,
}

impl Shown {
    /// The badge's words (the window's `shownLabel`).
    pub fn words(self) -> &'static str {
        match self {
            Shown::Status(s) => s.words(),
            Shown::Discarded => "Discarded",
            Shown::BranchKept => "Branch kept",
            Shown::NotChecked => "Not checked",
            Shown::NotChosen => "Not chosen",
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Shown::Status(s) => s.as_str(),
            Shown::Discarded => "discarded",
            Shown::BranchKept => "branch_kept",
            Shown::NotChecked => "not_checked",
            Shown::NotChosen => "not_chosen",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "discarded" => Some(Shown::Discarded),
            "branch_kept" => Some(Shown::BranchKept),
            "not_checked" => Some(Shown::NotChecked),
            "not_chosen" => Some(Shown::NotChosen),
            _ => SessionStatus::parse(s).map(Shown::Status),
        }
    }

    /// The rows so shown, in SQL over `sessions`: the badges' rules (ui/src/session/model.ts,
    /// `listedState`, with `setAside` of ui/src/sidebar.ts), the first that holds naming the row.
    fn condition(self) -> String {
        // Rejected because the person chose another attempt: "Not chosen", whatever else holds.
        let set_aside = concat!("(status = 'rejected' AND group_id IS NOT NULL AND chosen = 0 AND ", latest_run!("occasion"), " IS 'another_attempt_chosen')");
        // Its work waits on a branch for a merge by hand.
        let branch_kept = format!("(branch IS NOT NULL AND work_dir IS NULL AND status IN ('completed', 'rejected') AND NOT {set_aside})");
        // No review of its latest work refused it. An attempt goes with its group until one is
        // chosen, which says why; after that it is a task like any other.
        let discarded = concat!("(status = 'rejected' AND (group_id IS NULL OR ", group_chosen!(), ") AND ", latest_run!("decision"), " IS NOT 'reject')");
        let not_checked = "(status = 'idle' AND end_reason = 'conversation_unchecked')";
        match self {
            Shown::BranchKept => branch_kept,
            Shown::Discarded => format!("({discarded} AND NOT {branch_kept})"),
            Shown::NotChecked => not_checked.to_string(),
            Shown::NotChosen => set_aside.to_string(),
            Shown::Status(s) => format!("(status = '{}' AND NOT {branch_kept} AND NOT {discarded} AND NOT {not_checked} AND NOT {set_aside})", s.as_str()),
        }
    }
}

impl TryFrom<String> for Shown {
    type Error = String;
    fn try_from(s: String) -> std::result::Result<Self, String> {
        Shown::parse(&s).ok_or_else(|| format!("unknown state `{s}`"))
    }
}

impl From<Shown> for String {
    fn from(s: Shown) -> String {
        s.as_str().to_string()
    }
}

/// Filters for the history list. Paging is by keyset (created_ms, id), newest first, so a page
/// costs the same whether it is the first or the thousandth.
#[derive(Debug, Clone, Default)]
pub struct ListQuery {
    pub statuses: Vec<SessionStatus>,
    /// As the window's badges name them (any of these).
    pub shown: Vec<Shown>,
    pub end_reasons: Vec<EndReason>,
    pub since_ms: Option<i64>,
    pub until_ms: Option<i64>,
    pub limit: usize,
    /// The last row of the previous page.
    pub before: Option<(i64, SessionId)>,
    /// Only the attempts of this group.
    pub group: Option<GroupId>,
    /// Only sessions whose worktree is still there, attempts left out (a group's are decided
    /// with it): work kept for the person to decide on.
    pub kept_work: bool,
    /// Only these sessions (a search's matches), however far back they are, with the other
    /// attempts of their groups (the list shows a group as one row); empty for all.
    pub ids: Vec<SessionId>,
}

pub fn list(conn: &rusqlite::Connection, q: &ListQuery) -> Result<Vec<SessionSummary>> {
    let mut sql = format!("SELECT {SUMMARY_COLUMNS} FROM sessions WHERE 1=1");
    let mut args: Vec<rusqlite::types::Value> = Vec::new();
    if !q.statuses.is_empty() {
        sql.push_str(&format!(" AND status IN ({})", vec!["?"; q.statuses.len()].join(",")));
        args.extend(q.statuses.iter().map(|s| s.as_str().to_string().into()));
    }
    if !q.shown.is_empty() {
        sql.push_str(&format!(" AND ({})", q.shown.iter().map(|s| s.condition()).collect::<Vec<_>>().join(" OR ")));
    }
    if !q.end_reasons.is_empty() {
        sql.push_str(&format!(" AND end_reason IN ({})", vec!["?"; q.end_reasons.len()].join(",")));
        args.extend(q.end_reasons.iter().map(|s| s.as_str().to_string().into()));
    }
    if let Some(g) = &q.group {
        sql.push_str(" AND group_id = ?");
        args.push(g.0.clone().into());
    }
    if q.kept_work {
        sql.push_str(" AND work_dir IS NOT NULL AND group_id IS NULL");
    }
    if !q.ids.is_empty() {
        let marks = vec!["?"; q.ids.len()].join(",");
        sql.push_str(&format!(" AND (id IN ({marks}) OR group_id IN (SELECT group_id FROM sessions WHERE group_id IS NOT NULL AND id IN ({marks})))"));
        for _ in 0..2 {
            args.extend(q.ids.iter().map(|id| id.0.clone().into()));
        }
    }
    if let Some(s) = q.since_ms {
        sql.push_str(" AND created_ms >= ?");
        args.push(s.into());
    }
    if let Some(u) = q.until_ms {
        sql.push_str(" AND created_ms < ?");
        args.push(u.into());
    }
    if let Some((ms, id)) = &q.before {
        sql.push_str(" AND (created_ms, id) < (?, ?)");
        args.push((*ms).into());
        args.push(id.0.clone().into());
    }
    sql.push_str(" ORDER BY created_ms DESC, id DESC LIMIT ?");
    args.push((if q.limit == 0 { 50 } else { q.limit } as i64).into());
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map(rusqlite::params_from_iter(args), summary_from_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

pub fn get(conn: &rusqlite::Connection, id: &SessionId) -> Result<Option<SessionSummary>> {
    let mut stmt = conn.prepare_cached(&format!("SELECT {SUMMARY_COLUMNS} FROM sessions WHERE id = ?"))?;
    Ok(stmt.query_row(params![id.0], summary_from_row).optional()?)
}

/// The ids that start with `start`, newest first, at most `limit`: a range over the id's index, so a
/// long history is not read to find one session.
pub fn ids_starting(conn: &rusqlite::Connection, start: &str, limit: usize) -> Result<Vec<SessionId>> {
    starting(conn, "id", start, limit, SessionId)
}

/// The ids that end with `end`, newest first, at most `limit`. An id's end is random where its start
/// is the time it was made, so this reads every id: the history list's scale, not an event log's.
pub fn ids_ending(conn: &rusqlite::Connection, end: &str, limit: usize) -> Result<Vec<SessionId>> {
    ending(conn, "id", end, limit, SessionId)
}

/// The attempt groups whose id starts with `start`, newest first, at most `limit`.
pub fn group_ids_starting(conn: &rusqlite::Connection, start: &str, limit: usize) -> Result<Vec<GroupId>> {
    starting(conn, "group_id", start, limit, GroupId)
}

/// The attempt groups whose id ends with `end`, newest first, at most `limit`.
pub fn group_ids_ending(conn: &rusqlite::Connection, end: &str, limit: usize) -> Result<Vec<GroupId>> {
    ending(conn, "group_id", end, limit, GroupId)
}

/// `column` is one of this file's own names, never the caller's text.
fn starting<T>(conn: &rusqlite::Connection, column: &'static str, start: &str, limit: usize, id: fn(String) -> T) -> Result<Vec<T>> {
    let sql = format!("SELECT DISTINCT {column} FROM sessions WHERE {column} >= ?1 AND {column} < ?1 || char(1114111) ORDER BY {column} DESC LIMIT ?2");
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map(params![start, limit as i64], |r| Ok(id(r.get(0)?)))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

fn ending<T>(conn: &rusqlite::Connection, column: &'static str, end: &str, limit: usize, id: fn(String) -> T) -> Result<Vec<T>> {
    let sql = format!("SELECT DISTINCT {column} FROM sessions WHERE {column} IS NOT NULL AND substr({column}, -?2) = ?1 ORDER BY {column} DESC LIMIT ?3");
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map(params![end, end.chars().count() as i64, limit as i64], |r| Ok(id(r.get(0)?)))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// A short title from the task: its first line, cut at a word near 80 characters.
pub fn title_of(task: &str) -> String {
    let first = task.trim().lines().next().unwrap_or("").trim();
    if first.chars().count() <= 80 {
        return if first.is_empty() { "Untitled task".into() } else { first.to_string() };
    }
    let cut: String = first.chars().take(80).collect();
    let at = cut.rfind(' ').filter(|i| *i > 40).unwrap_or(cut.len());
    format!("{}…", &cut[..at])
}
