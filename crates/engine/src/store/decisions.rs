//! Permission requests, questions and reviews: each has an id and is decided at most once, so
//! that two windows, or the app and the CLI, cannot both apply a decision.

use rusqlite::{params, Connection, OptionalExtension};

use crate::domain::{RequestId, SessionId};
use crate::error::Result;

pub const MIGRATION: &str = "
CREATE TABLE requests (
    id         TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    run_id     TEXT,
    kind       TEXT NOT NULL CHECK (kind IN ('permission', 'question', 'review')),
    payload    TEXT NOT NULL,
    created_ms INTEGER NOT NULL,
    decided_ms INTEGER,
    decision   TEXT
);
CREATE INDEX requests_pending ON requests(session_id) WHERE decided_ms IS NULL;
";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestKind {
    Permission,
    Question,
    Review,
}

impl RequestKind {
    pub fn as_str(self) -> &'static str {
        match self {
            RequestKind::Permission => "permission",
            RequestKind::Question => "question",
            RequestKind::Review => "review",
        }
    }
}

pub fn insert(
    conn: &Connection,
    id: &RequestId,
    session: &SessionId,
    run: Option<&str>,
    kind: RequestKind,
    payload: &serde_json::Value,
    now_ms: i64,
) -> Result<()> {
    conn.prepare_cached("INSERT OR IGNORE INTO requests (id, session_id, run_id, kind, payload, created_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6)")?
        .execute(params![id.0, session.0, run, kind.as_str(), payload.to_string(), now_ms])?;
    Ok(())
}

/// The state of a request: `None` if unknown, `Some(None)` if pending, `Some(Some(decision))`
/// once decided.
pub fn state(conn: &Connection, id: &RequestId) -> Result<Option<(SessionId, RequestKindWord, Option<String>)>> {
    Ok(conn
        .prepare_cached("SELECT session_id, kind, decision FROM requests WHERE id = ?")?
        .query_row(params![id.0], |r| Ok((SessionId(r.get(0)?), RequestKindWord(r.get(1)?), r.get(2)?)))
        .optional()?)
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestKindWord(pub String);

pub fn mark_decided(conn: &Connection, id: &RequestId, decision: &str, now_ms: i64) -> Result<bool> {
    let n = conn
        .prepare_cached("UPDATE requests SET decided_ms = ?2, decision = ?3 WHERE id = ?1 AND decided_ms IS NULL")?
        .execute(params![id.0, now_ms, decision])?;
    Ok(n == 1)
}

pub fn pending(conn: &Connection, session: &SessionId) -> Result<Vec<(RequestId, String, serde_json::Value)>> {
    let mut stmt = conn.prepare_cached("SELECT id, kind, payload FROM requests WHERE session_id = ? AND decided_ms IS NULL ORDER BY created_ms")?;
    let rows = stmt.query_map(params![session.0], |r| {
        let payload: String = r.get(2)?;
        Ok((RequestId(r.get(0)?), r.get(1)?, serde_json::from_str(&payload).unwrap_or_default()))
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}
