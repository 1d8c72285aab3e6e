//! Leases: a running session belongs to one process (its token, pid and host, with a heartbeat),
//! so the app and the CLI can share a data folder without running the same session twice.
//! At start, sessions left running under a dead lease become `interrupted`.

use rusqlite::{params, OptionalExtension, Transaction};

use super::Store;
use crate::domain::*;
use crate::error::{Error, Result};
use crate::event::EngineEvent;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseOwner {
    /// Unique per process start, so a reused pid is never mistaken for the old owner.
    pub token: String,
    pub pid: u32,
    pub host: String,
}

impl LeaseOwner {
    pub fn this_process() -> LeaseOwner {
        LeaseOwner { token: uuid::Uuid::new_v4().simple().to_string(), pid: std::process::id(), host: host_name() }
    }
}

fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "localhost".into())
}

/// Whether a process on this host is alive. Where this cannot be known, the heartbeat decides.
fn pid_alive(pid: u32) -> bool {
    if !cfg!(target_os = "linux") {
        return true;
    }
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // A killed process whose parent has not reaped it yet is a zombie: it runs nothing.
        Ok(stat) => stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().next()).is_none_or(|state| !matches!(state, "Z" | "X")),
        Err(_) => false,
    }
}

/// The process at work on a session, seen from another one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunsElsewhere {
    pub pid: u32,
    pub host: String,
}

struct Holder {
    token: Option<String>,
    run: Option<String>,
    pid: Option<u32>,
    host: Option<String>,
    heartbeat_ms: Option<i64>,
}

impl Store {
    pub fn lease_owner(&self) -> &LeaseOwner {
        &self.owner
    }

    fn holder(tx: &Transaction<'_>, session: &SessionId) -> Result<Option<Holder>> {
        Ok(tx
            .query_row("SELECT lease_owner, lease_pid, lease_host, lease_heartbeat_ms, lease_run FROM sessions WHERE id = ?", params![session.0], |r| {
                Ok(Holder { token: r.get(0)?, pid: r.get::<_, Option<i64>>(1)?.map(|p| p as u32), host: r.get(2)?, heartbeat_ms: r.get(3)?, run: r.get(4)? })
            })
            .optional()?)
    }

    fn held_by_someone_else(&self, h: &Holder, now: i64) -> bool {
        let Some(token) = &h.token else { return false };
        if *token == self.owner.token {
            return false;
        }
        let fresh = h.heartbeat_ms.is_some_and(|hb| now - hb < self.lease_ttl_ms);
        let dead_here = h.host.as_deref() == Some(self.owner.host.as_str()) && h.pid.is_some_and(|p| !pid_alive(p));
        fresh && !dead_here
    }

    /// The other live process that holds the session, inside a caller's transaction.
    pub(super) fn held_elsewhere_in(&self, tx: &Transaction<'_>, session: &SessionId, now: i64) -> Result<Option<RunsElsewhere>> {
        let h = Self::holder(tx, session)?.ok_or_else(|| Error::NotFound(format!("session {session}")))?;
        Ok(self.held_by_someone_else(&h, now).then(|| RunsElsewhere { pid: h.pid.unwrap_or(0), host: h.host.unwrap_or_default() }))
    }

    /// Whether someone other than `holder` has the session: another live process, or another
    /// run of this one. A lease names its run, so two engines in one process (each IPC call of
    /// the app builds one) cannot both run a session either.
    fn held_against(&self, h: &Holder, holder: &RunId, now: i64) -> bool {
        if h.token.is_none() || h.run.as_deref() == Some(holder.0.as_str()) {
            return false;
        }
        if h.token.as_deref() == Some(self.owner.token.as_str()) {
            return true;
        }
        self.held_by_someone_else(h, now)
    }

    fn take_in(&self, tx: &Transaction<'_>, session: &SessionId, holder: &RunId, now: i64) -> Result<()> {
        let h = Self::holder(tx, session)?.ok_or_else(|| Error::NotFound(format!("session {session}")))?;
        if self.held_against(&h, holder, now) {
            return Err(if h.token.as_deref() == Some(self.owner.token.as_str()) {
                Error::LeaseHeld(format!("{session} is already running here; wait for it or cancel it first"))
            } else {
                Error::LeaseHeld(format!("{session} (process {} on {})", h.pid.unwrap_or(0), h.host.unwrap_or_default()))
            });
        }
        self.hold_in(tx, session, holder, now)
    }

    fn hold_in(&self, tx: &Transaction<'_>, session: &SessionId, holder: &RunId, now: i64) -> Result<()> {
        tx.prepare_cached("UPDATE sessions SET lease_owner = ?2, lease_pid = ?3, lease_host = ?4, lease_heartbeat_ms = ?5, lease_run = ?6 WHERE id = ?1")?
            .execute(params![session.0, self.owner.token, self.owner.pid as i64, self.owner.host, now, holder.0])?;
        Ok(())
    }

    /// Takes the session for `holder` (a run of this process), or says who has it.
    pub fn acquire_lease(&self, session: &SessionId, holder: &RunId) -> Result<()> {
        let now = self.clock.now_ms();
        self.transact(|tx, _| self.take_in(tx, session, holder, now))
    }

    /// Starts a run as one step: checks the session may start (`may_start` sees its status and
    /// says the run's trigger), takes its lease for the run, and records the run as started and
    /// the session as busy. Of any number of racing starts, from any engine or process, exactly
    /// one succeeds.
    pub fn begin_run(&self, session: &SessionId, run: &RunId, may_start: impl FnOnce(SessionStatus) -> Result<RunTrigger>) -> Result<RunTrigger> {
        self.begin_run_then(session, run, may_start, vec![])
    }

    /// [`Store::begin_run`], with the run's first events (`then`) in the same step.
    pub fn begin_run_then(
        &self,
        session: &SessionId,
        run: &RunId,
        may_start: impl FnOnce(SessionStatus) -> Result<RunTrigger>,
        then: Vec<EngineEvent>,
    ) -> Result<RunTrigger> {
        let now = self.clock.now_ms();
        self.transact(|tx, out| {
            let status: Option<String> = tx.query_row("SELECT status FROM sessions WHERE id = ?", params![session.0], |r| r.get(0)).optional()?;
            let status = status.ok_or_else(|| Error::NotFound(format!("session {session}")))?;
            let trigger = may_start(SessionStatus::parse(&status).unwrap_or(SessionStatus::Idle))?;
            self.begin_in(tx, out, session, run, trigger, now)?;
            for e in then {
                out.push(self.append_in(tx, session, Some(run), e)?);
            }
            Ok(trigger)
        })
    }

    /// Hands the session from one run to the next as one step: `before` is stored as the old
    /// run's last events, then the new run starts with `after`. Used between a plan's steps, so
    /// a crash leaves either the old step running or the new one started, never neither.
    pub fn hand_over(
        &self,
        session: &SessionId,
        from: &RunId,
        to: &RunId,
        trigger: RunTrigger,
        before: Vec<EngineEvent>,
        after: Vec<EngineEvent>,
    ) -> Result<()> {
        let now = self.clock.now_ms();
        self.transact(|tx, out| {
            let h = Self::holder(tx, session)?.ok_or_else(|| Error::NotFound(format!("session {session}")))?;
            if h.run.as_deref() != Some(from.0.as_str()) || h.token.as_deref() != Some(self.owner.token.as_str()) {
                return Err(Error::LeaseHeld(format!("{session} is no longer held by run {from}")));
            }
            for e in before {
                out.push(self.append_in(tx, session, Some(from), e)?);
            }
            self.hold_in(tx, session, to, now)?;
            out.push(self.append_in(tx, session, Some(to), EngineEvent::RunStarted { trigger })?);
            for e in after {
                out.push(self.append_in(tx, session, Some(to), e)?);
            }
            Ok(())
        })
    }

    /// The lease and the run's first events, inside a caller's transaction.
    pub(super) fn begin_in(
        &self,
        tx: &Transaction<'_>,
        out: &mut Vec<crate::event::Envelope>,
        session: &SessionId,
        run: &RunId,
        trigger: RunTrigger,
        now: i64,
    ) -> Result<()> {
        self.take_in(tx, session, run, now)?;
        out.push(self.append_in(tx, session, Some(run), EngineEvent::RunStarted { trigger })?);
        out.push(self.append_in(
            tx,
            session,
            Some(run),
            EngineEvent::StatusChanged { status: SessionStatus::Busy, attempt: None, max_retries: None, next_retry_at: None, message: None },
        )?);
        Ok(())
    }

    /// Sessions other than `except` whose run is live right now (here or in another process)
    /// working in place in `folder`, or in a folder inside or around it (the same files by other
    /// paths), with their titles: a task there would share files with them. Queued ones count
    /// when they began waiting before `except` did, so two waiting tasks go one after the other,
    /// never both and never neither.
    pub fn live_in_folder(&self, folder: &str, except: &SessionId) -> Result<Vec<(SessionId, String)>> {
        let now = self.clock.now_ms();
        let conn = self.read();
        let mine: i64 = conn.query_row("SELECT created_ms FROM sessions WHERE id = ?1", params![except.0], |r| r.get(0)).optional()?.unwrap_or(i64::MAX);
        let mut stmt = conn.prepare_cached(
            "SELECT id, title, status, created_ms, lease_owner, lease_pid, lease_host, lease_heartbeat_ms, lease_run, workspace FROM sessions
             WHERE id != ?1 AND (isolation IS NULL OR isolation = 'in_place')
               AND status IN ('busy', 'retry', 'awaiting_approval', 'queued')",
        )?;
        let rows = stmt.query_map(params![except.0], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, i64>(3)?,
                Holder { token: r.get(4)?, pid: r.get::<_, Option<i64>>(5)?.map(|p| p as u32), host: r.get(6)?, heartbeat_ms: r.get(7)?, run: r.get(8)? },
                r.get::<_, String>(9)?,
            ))
        })?;
        let here = std::path::Path::new(folder);
        let mut live = Vec::new();
        for row in rows {
            let (id, title, status, created, holder, there) = row?;
            let there = std::path::Path::new(&there);
            if !(there.starts_with(here) || here.starts_with(there)) {
                continue;
            }
            let alive = holder.token.as_deref() == Some(self.owner.token.as_str()) || self.held_by_someone_else(&holder, now);
            if alive && (status != "queued" || (created, id.as_str()) < (mine, except.0.as_str())) {
                live.push((SessionId(id), title));
            }
        }
        Ok(live)
    }

    /// Sessions other than `except` that worked in place in `folder`, or in a folder inside or
    /// around it (the same files by other paths), and wait for the person's review, with their
    /// titles, the oldest first: their changes are undecided there.
    pub fn waiting_in_folder(&self, folder: &str, except: &SessionId) -> Result<Vec<(SessionId, String)>> {
        let conn = self.read();
        let mut stmt = conn.prepare_cached(
            "SELECT id, title, workspace FROM sessions
             WHERE id != ?1 AND (isolation IS NULL OR isolation = 'in_place') AND status = 'awaiting_review'
             ORDER BY created_ms, id",
        )?;
        let rows = stmt.query_map(params![except.0], |r| Ok((SessionId(r.get(0)?), r.get::<_, String>(1)?, r.get::<_, String>(2)?)))?;
        let here = std::path::Path::new(folder);
        let mut out = Vec::new();
        for row in rows {
            let (id, title, there) = row?;
            let there = std::path::Path::new(&there);
            if there.starts_with(here) || here.starts_with(there) {
                out.push((id, title));
            }
        }
        Ok(out)
    }

    /// Keeps this process's leases alive; call every few seconds while sessions run.
    pub fn heartbeat(&self) -> Result<usize> {
        let now = self.clock.now_ms();
        Ok(self.write().execute("UPDATE sessions SET lease_heartbeat_ms = ?2 WHERE lease_owner = ?1", params![self.owner.token, now])?)
    }

    /// Asks the process that runs `session`, when that is another one alive, to stop it: it
    /// looks every second ([`Store::cancels_asked`]). Who was asked, or `None` when no other
    /// process is at work on it (it runs here, waits for nobody's run, or has ended).
    pub fn ask_to_cancel(&self, session: &SessionId) -> Result<Option<RunsElsewhere>> {
        let now = self.clock.now_ms();
        self.transact(|tx, _| {
            let status: Option<String> = tx.query_row("SELECT status FROM sessions WHERE id = ?", params![session.0], |r| r.get(0)).optional()?;
            let status = status.ok_or_else(|| Error::NotFound(format!("session {session}")))?;
            if !SessionStatus::parse(&status).is_some_and(SessionStatus::at_work) {
                return Ok(None);
            }
            let Some(elsewhere) = self.held_elsewhere_in(tx, session, now)? else { return Ok(None) };
            tx.execute("UPDATE sessions SET cancel_asked_of = lease_owner WHERE id = ?1", params![session.0])?;
            Ok(Some(elsewhere))
        })
    }

    /// The sessions this process runs that another process asked it to stop.
    pub fn cancels_asked(&self) -> Result<Vec<SessionId>> {
        let conn = self.read();
        let mut stmt = conn.prepare_cached("SELECT id FROM sessions WHERE cancel_asked_of = ?1")?;
        let rows = stmt.query_map(params![self.owner.token], |r| r.get::<_, String>(0))?;
        Ok(rows.map(|r| r.map(SessionId)).collect::<rusqlite::Result<_>>()?)
    }

    /// The ask to stop `session` was heeded (or found nothing to stop): it is not asked again.
    pub fn cancel_heeded(&self, session: &SessionId) -> Result<()> {
        self.write().execute("UPDATE sessions SET cancel_asked_of = NULL WHERE id = ?1 AND cancel_asked_of = ?2", params![session.0, self.owner.token])?;
        Ok(())
    }

    /// Gives the session up, if `holder` still has it: a run that ends never frees a newer one.
    pub fn release_lease(&self, session: &SessionId, holder: &RunId) -> Result<()> {
        self.write().execute(
            "UPDATE sessions SET lease_owner = NULL, lease_pid = NULL, lease_host = NULL, lease_heartbeat_ms = NULL, lease_run = NULL,
             cancel_asked_of = NULL WHERE id = ?1 AND lease_owner = ?2 AND lease_run = ?3",
            params![session.0, self.owner.token, holder.0],
        )?;
        Ok(())
    }

    /// Marks sessions left `busy` or `retry` by a dead process as `interrupted`, and their running
    /// tool calls as `unknown`. Sessions waiting for a person keep waiting. Returns the sessions
    /// that were interrupted.
    pub fn recover(&self) -> Result<Vec<SessionId>> {
        let now = self.clock.now_ms();
        let candidates: Vec<SessionId> = {
            let conn = self.read();
            let mut stmt = conn.prepare("SELECT id FROM sessions WHERE status IN ('busy', 'retry', 'queued')")?;
            let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
            rows.map(|r| r.map(SessionId)).collect::<rusqlite::Result<_>>()?
        };
        let mut interrupted = Vec::new();
        for session in candidates {
            let done = self.transact(|tx, out| {
                // Re-check inside the write transaction: another process may have recovered it,
                // or the owner may still be alive.
                let status: String = tx.query_row("SELECT status FROM sessions WHERE id = ?", params![session.0], |r| r.get(0))?;
                if !SessionStatus::parse(&status).is_some_and(|s| s.is_running()) {
                    return Ok(false);
                }
                let h = Self::holder(tx, &session)?.expect("the session exists");
                if self.held_by_someone_else(&h, now) || h.token.as_deref() == Some(self.owner.token.as_str()) {
                    return Ok(false);
                }
                // The run worked until the last thing it recorded (or its last heartbeat): that
                // much is its active time, not the minutes until someone found it stopped.
                tx.execute(
                    "UPDATE sessions SET active_ms = active_ms + MAX(0, MAX(updated_ms, COALESCE(lease_heartbeat_ms, 0)) - run_started_ms)
                     WHERE id = ?1 AND run_started_ms IS NOT NULL",
                    params![session.0],
                )?;
                for (call_id, tool, input, message_id) in super::messages::running_tool_calls(tx, &session)? {
                    out.push(self.append_in(
                        tx,
                        &session,
                        None,
                        EngineEvent::ToolCall {
                            call_id,
                            message_id,
                            tool,
                            kind: None,
                            input,
                            state: ToolState::Unknown,
                            output: Some("Finishline stopped while this ran; its outcome is unknown.".into()),
                        },
                    )?);
                }
                out.push(self.append_in(
                    tx,
                    &session,
                    None,
                    EngineEvent::StatusChanged {
                        status: SessionStatus::Interrupted,
                        attempt: None, max_retries: None,
                        next_retry_at: None,
                        message: Some("Finishline stopped while this session was running. Resume it to continue.".into()),
                    },
                )?);
                super::search::index_pending(tx, &session)?;
                // The run cut short ended nothing: an earlier run's end reason (a plan's first
                // step) would read as this session's outcome.
                tx.execute(
                    "UPDATE sessions SET lease_owner = NULL, lease_pid = NULL, lease_host = NULL, lease_heartbeat_ms = NULL, lease_run = NULL, run_started_ms = NULL,
                     claim = NULL, verdict = NULL, end_reason = NULL WHERE id = ?1",
                    params![session.0],
                )?;
                Ok(true)
            })?;
            if done {
                interrupted.push(session);
            }
        }
        Ok(interrupted)
    }
}
