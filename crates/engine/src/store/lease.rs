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
    if cfg!(target_os = "linux") {
        std::path::Path::new(&format!("/proc/{pid}")).exists()
    } else {
        true
    }
}

struct Holder {
    token: Option<String>,
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
            .query_row("SELECT lease_owner, lease_pid, lease_host, lease_heartbeat_ms FROM sessions WHERE id = ?", params![session.0], |r| {
                Ok(Holder { token: r.get(0)?, pid: r.get::<_, Option<i64>>(1)?.map(|p| p as u32), host: r.get(2)?, heartbeat_ms: r.get(3)? })
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

    /// Takes the session for this process, or says who has it.
    pub fn acquire_lease(&self, session: &SessionId) -> Result<()> {
        let now = self.clock.now_ms();
        self.transact(|tx, _| {
            let h = Self::holder(tx, session)?.ok_or_else(|| Error::NotFound(format!("session {session}")))?;
            if self.held_by_someone_else(&h, now) {
                return Err(Error::LeaseHeld(format!("{session} (process {} on {})", h.pid.unwrap_or(0), h.host.unwrap_or_default())));
            }
            tx.execute(
                "UPDATE sessions SET lease_owner = ?2, lease_pid = ?3, lease_host = ?4, lease_heartbeat_ms = ?5 WHERE id = ?1",
                params![session.0, self.owner.token, self.owner.pid as i64, self.owner.host, now],
            )?;
            Ok(())
        })
    }

    /// Keeps this process's leases alive; call every few seconds while sessions run.
    pub fn heartbeat(&self) -> Result<usize> {
        let now = self.clock.now_ms();
        Ok(self.write().execute("UPDATE sessions SET lease_heartbeat_ms = ?2 WHERE lease_owner = ?1", params![self.owner.token, now])?)
    }

    pub fn release_lease(&self, session: &SessionId) -> Result<()> {
        self.write().execute(
            "UPDATE sessions SET lease_owner = NULL, lease_pid = NULL, lease_host = NULL, lease_heartbeat_ms = NULL WHERE id = ?1 AND lease_owner = ?2",
            params![session.0, self.owner.token],
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
            let mut stmt = conn.prepare("SELECT id FROM sessions WHERE status IN ('busy', 'retry')")?;
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
                for (call_id, tool, input, message_id) in super::messages::running_tool_calls(tx, &session)? {
                    out.push(self.append_in(
                        tx,
                        &session,
                        None,
                        EngineEvent::ToolCall {
                            call_id,
                            message_id,
                            tool,
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
                        attempt: None,
                        next_retry_at: None,
                        message: Some("Finishline stopped while this session was running. Resume it to continue.".into()),
                    },
                )?);
                super::search::index_pending(tx, &session)?;
                tx.execute(
                    "UPDATE sessions SET lease_owner = NULL, lease_pid = NULL, lease_host = NULL, lease_heartbeat_ms = NULL, run_started_ms = NULL WHERE id = ?1",
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
