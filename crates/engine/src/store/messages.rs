//! Messages and their tool calls, todos, usage and evaluations: the tables that the event
//! projection keeps current, so a session can be read without replaying. Streamed text is kept
//! only in the event log (see [`message_text`]); databases written before that also hold it as
//! `text` and `reasoning` parts, which nothing reads any more.

use rusqlite::{params, Connection, OptionalExtension};
use serde::Serialize;

use crate::domain::*;
use crate::error::Result;
use crate::event::{EngineEvent, Envelope};

pub const MIGRATION: &str = "
CREATE TABLE messages (
    id          TEXT PRIMARY KEY,
    session_id  TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    run_id      TEXT,
    role        TEXT NOT NULL,
    source      TEXT,
    created_seq INTEGER NOT NULL,
    created_ms  INTEGER NOT NULL,
    indexed     INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX messages_by_session ON messages(session_id, created_seq);
CREATE INDEX messages_unindexed ON messages(session_id) WHERE indexed = 0;
CREATE TABLE parts (
    id         INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    message_id TEXT,
    kind       TEXT NOT NULL CHECK (kind IN ('text', 'reasoning', 'tool_call')),
    seq        INTEGER NOT NULL,
    text       TEXT NOT NULL DEFAULT '',
    call_id    TEXT,
    tool       TEXT,
    input      TEXT,
    state      TEXT,
    output     TEXT
);
CREATE INDEX parts_by_session ON parts(session_id, seq);
CREATE INDEX parts_by_message ON parts(message_id, kind);
CREATE UNIQUE INDEX parts_by_call ON parts(session_id, call_id) WHERE call_id IS NOT NULL;
CREATE TABLE todos (
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    ord        INTEGER NOT NULL,
    todo_id    TEXT NOT NULL,
    content    TEXT NOT NULL,
    status     TEXT NOT NULL,
    PRIMARY KEY (session_id, ord)
);
CREATE TABLE usage (
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    run_id     TEXT,
    source     TEXT NOT NULL,
    input      INTEGER NOT NULL,
    output     INTEGER NOT NULL,
    at_ms      INTEGER NOT NULL
);
CREATE INDEX usage_by_session ON usage(session_id);
CREATE TABLE evaluations (
    session_id   TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    run_id       TEXT,
    cycle        INTEGER NOT NULL,
    verdict      TEXT NOT NULL,
    summary      TEXT NOT NULL,
    remaining    TEXT NOT NULL,
    stuck_reason TEXT,
    model        TEXT NOT NULL,
    parse_ok     INTEGER NOT NULL,
    at_ms        INTEGER NOT NULL
);
CREATE INDEX evaluations_by_session ON evaluations(session_id);
";

#[allow(clippy::too_many_arguments)]
pub fn upsert_tool_call(
    conn: &Connection,
    session: &SessionId,
    message: Option<&MessageId>,
    seq: u64,
    call_id: &str,
    tool: &str,
    input: &serde_json::Value,
    state: ToolState,
    output: Option<&str>,
) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO parts (session_id, message_id, kind, seq, call_id, tool, input, state, output)
         VALUES (?1, ?2, 'tool_call', ?3, ?4, ?5, ?6, ?7, ?8)
         ON CONFLICT (session_id, call_id) WHERE call_id IS NOT NULL
         DO UPDATE SET state = excluded.state, output = COALESCE(excluded.output, parts.output), input = CASE WHEN excluded.input = 'null' THEN parts.input ELSE excluded.input END",
    )?
    .execute(params![session.0, message.map(|m| m.0.clone()), seq as i64, call_id, tool, input.to_string(), state.as_str(), output])?;
    Ok(())
}

/// Tool calls that were running: after a crash their outcome is unknown.
pub fn running_tool_calls(conn: &Connection, session: &SessionId) -> Result<Vec<(String, String, serde_json::Value, Option<MessageId>)>> {
    let mut stmt = conn.prepare_cached("SELECT call_id, tool, input, message_id FROM parts WHERE session_id = ? AND kind = 'tool_call' AND state IN ('running', 'pending', 'awaiting_permission')")?;
    let rows = stmt.query_map(params![session.0], |r| {
        let input: String = r.get(2)?;
        Ok((r.get(0)?, r.get(1)?, serde_json::from_str(&input).unwrap_or(serde_json::Value::Null), r.get::<_, Option<String>>(3)?.map(MessageId)))
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

pub fn replace_todos(conn: &Connection, session: &SessionId, todos: &[Todo]) -> Result<()> {
    conn.prepare_cached("DELETE FROM todos WHERE session_id = ?")?.execute(params![session.0])?;
    let mut ins = conn.prepare_cached("INSERT INTO todos (session_id, ord, todo_id, content, status) VALUES (?, ?, ?, ?, ?)")?;
    for (i, t) in todos.iter().enumerate() {
        ins.execute(params![session.0, i as i64, t.id, t.content, t.status.as_str()])?;
    }
    Ok(())
}

pub fn todos(conn: &Connection, session: &SessionId) -> Result<Vec<Todo>> {
    let mut stmt = conn.prepare_cached("SELECT todo_id, content, status FROM todos WHERE session_id = ? ORDER BY ord")?;
    let rows = stmt.query_map(params![session.0], |r| {
        Ok(Todo { id: r.get(0)?, content: r.get(1)?, status: TodoStatus::parse(&r.get::<_, String>(2)?).unwrap_or(TodoStatus::Pending) })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The text of a message, joined from its events in order. The event log is the one copy of
/// streamed text. A second copy in a row of its own cost every streamed batch a row and two index
/// pages more in the log, or, kept as one growing row, the whole answer so far (SQLite cannot
/// append to a value), so an answer twice as long wrote 3.3 times the log. The text is read here
/// once, when its message is indexed for search: at the end of its step or run, or at the start
/// after a crash. The events read end at the first step or run end after the message: what the
/// old row held when it was indexed, and a later read does not parse the rest of the session.
pub fn message_text(conn: &Connection, message: &MessageId) -> Result<String> {
    let created: Option<(String, i64)> = conn
        .prepare_cached("SELECT session_id, created_seq FROM messages WHERE id = ?")?
        .query_row(params![message.0], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    let Some((session, from)) = created else { return Ok(String::new()) };
    let mut stmt = conn.prepare_cached(
        "SELECT body FROM events WHERE session_id = ?1 AND seq >= ?2 AND type IN ('message_created', 'text_delta')
           AND seq < COALESCE((SELECT MIN(seq) FROM events WHERE session_id = ?1 AND seq > ?2 AND type IN ('step_finished', 'run_finished')), 9223372036854775807)
         ORDER BY seq",
    )?;
    let mut text = String::new();
    for body in stmt.query_map(params![session, from], |r| r.get::<_, String>(0))? {
        // The search index is a convenience: an event it cannot read must not fail the commit of
        // the step that is being stored.
        let Ok(env) = serde_json::from_str::<Envelope>(&body?) else { continue };
        match env.event {
            EngineEvent::MessageCreated { message_id, text: Some(t), .. } | EngineEvent::TextDelta { message_id, text: t } if message_id == *message => {
                text.push_str(&t)
            }
            _ => {}
        }
    }
    Ok(text)
}

#[derive(Debug, Clone, Serialize)]
pub struct ToolCallRow {
    pub call_id: String,
    pub tool: String,
    pub state: ToolState,
}

pub fn tool_calls(conn: &Connection, session: &SessionId) -> Result<Vec<ToolCallRow>> {
    let mut stmt = conn.prepare_cached("SELECT call_id, tool, state FROM parts WHERE session_id = ? AND kind = 'tool_call' ORDER BY seq")?;
    let rows = stmt.query_map(params![session.0], |r| {
        Ok(ToolCallRow { call_id: r.get(0)?, tool: r.get(1)?, state: ToolState::parse(&r.get::<_, String>(2)?).unwrap_or(ToolState::Unknown) })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}
