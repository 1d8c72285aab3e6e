//! The event log: every event of every session, in order, with a gap-free per-session `seq`.

use rusqlite::{params, Connection};

use crate::domain::SessionId;
use crate::error::Result;
use crate::event::{EngineEvent, Envelope};

pub const MIGRATION: &str = "
CREATE TABLE events (
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,
    run_id     TEXT,
    type       TEXT NOT NULL,
    at         TEXT NOT NULL,
    body       TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;
";

pub fn insert(conn: &Connection, env: &Envelope) -> Result<()> {
    let body = serde_json::to_string(env).map_err(|e| crate::Error::Internal(e.to_string()))?;
    conn.prepare_cached("INSERT INTO events (session_id, seq, run_id, type, at, body) VALUES (?1, ?2, ?3, ?4, ?5, ?6)")?.execute(params![
        env.session_id.0,
        env.seq as i64,
        env.run_id.as_ref().map(|r| r.0.clone()),
        env.event.type_name(),
        env.at,
        body
    ])?;
    Ok(())
}

/// Events with `after < seq <= until` (or to the end), in order.
pub fn read(conn: &Connection, session: &SessionId, after: u64, until: Option<u64>) -> Result<Vec<Envelope>> {
    let mut stmt = conn.prepare_cached("SELECT body FROM events WHERE session_id = ?1 AND seq > ?2 AND seq <= ?3 ORDER BY seq")?;
    let until = until.map(|u| u as i64).unwrap_or(i64::MAX);
    let rows = stmt.query_map(params![session.0, after as i64, until], |r| r.get::<_, String>(0))?;
    let mut out = Vec::new();
    for body in rows {
        out.push(envelope(&body?)?);
    }
    Ok(out)
}

/// A session's events of the given types, in order.
pub fn read_types(conn: &Connection, session: &SessionId, types: &[&str]) -> Result<Vec<Envelope>> {
    let marks = vec!["?"; types.len()].join(", ");
    let mut stmt = conn.prepare_cached(&format!("SELECT body FROM events WHERE session_id = ? AND type IN ({marks}) ORDER BY seq"))?;
    let args = std::iter::once(session.0.as_str()).chain(types.iter().copied());
    let rows = stmt.query_map(rusqlite::params_from_iter(args), |r| r.get::<_, String>(0))?;
    let mut out = Vec::new();
    for body in rows {
        out.push(envelope(&body?)?);
    }
    Ok(out)
}

/// A stored event, or in its place [`EngineEvent::Unreadable`] when a newer Finishline wrote a type
/// this one does not know: going back a version must not make a session unreadable. An event of a
/// known type that does not read stays an error: standing in for one the engine decides by (where
/// the task's worktree is) would have it act on an older record.
fn envelope(body: &str) -> Result<Envelope> {
    serde_json::from_str(body).or_else(|e| {
        #[derive(serde::Deserialize)]
        struct Bare {
            seq: u64,
            session_id: SessionId,
            run_id: Option<crate::domain::RunId>,
            at: String,
            #[serde(rename = "type")]
            was: String,
        }
        let unreadable = || crate::Error::Storage(format!("a stored event could not be read: {e}"));
        let bare: Bare = serde_json::from_str(body).map_err(|_| unreadable())?;
        if known_type(&bare.was) {
            return Err(unreadable());
        }
        Ok(Envelope { seq: bare.seq, session_id: bare.session_id, run_id: bare.run_id, at: bare.at, event: EngineEvent::Unreadable { was: bare.was } })
    })
}

/// Whether this build has an event of that type: asked of the event's own reading, which names a
/// type it does not have as an unknown variant.
fn known_type(name: &str) -> bool {
    match serde_json::from_value::<EngineEvent>(serde_json::json!({ "type": name })) {
        Ok(_) => true,
        Err(e) => !e.to_string().starts_with("unknown variant"),
    }
}
