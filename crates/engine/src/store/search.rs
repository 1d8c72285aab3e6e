//! Full-text search over task text and message text (FTS5). Streamed text is indexed once its
//! message is complete, so that one word split across two delta batches is still one word.

use rusqlite::{params, Connection};
use serde::Serialize;

use crate::domain::{MessageId, SessionId, SessionStatus};
use crate::error::Result;

pub const MIGRATION: &str = "
CREATE VIRTUAL TABLE search USING fts5(body, session_id UNINDEXED, message_id UNINDEXED, tokenize = 'unicode61 remove_diacritics 2');
";

pub fn index(conn: &Connection, session: &SessionId, message: Option<&MessageId>, body: &str) -> Result<()> {
    if body.trim().is_empty() {
        return Ok(());
    }
    conn.prepare_cached("INSERT INTO search (body, session_id, message_id) VALUES (?1, ?2, ?3)")?.execute(params![
        body,
        session.0,
        message.map(|m| m.0.clone())
    ])?;
    Ok(())
}

/// Migration 13's backfill: what the evaluator said before it was indexed as it was recorded
/// (its verdicts, and why it preferred one attempt).
pub fn backfill_evaluator(conn: &Connection) -> Result<()> {
    conn.execute_batch(
        "INSERT INTO search (body, session_id, message_id)
           SELECT json_extract(body, '$.summary'), session_id, NULL FROM events
            WHERE type = 'evaluation' AND trim(COALESCE(json_extract(body, '$.summary'), '')) <> '';
         INSERT INTO search (body, session_id, message_id)
           SELECT json_extract(body, '$.reason'), session_id, NULL FROM events
            WHERE type = 'attempts_compared' AND trim(COALESCE(json_extract(body, '$.reason'), '')) <> '';",
    )?;
    Ok(())
}

/// The errors runs met, searchable as they are from now on ("overloaded", "does not exist").
pub fn backfill_errors(conn: &Connection) -> Result<()> {
    conn.execute_batch(
        "INSERT INTO search (body, session_id, message_id)
           SELECT json_extract(body, '$.message'), session_id, NULL FROM events
            WHERE type = 'error' AND trim(COALESCE(json_extract(body, '$.message'), '')) <> '';",
    )?;
    Ok(())
}

/// Indexes the finished text of every message of the session not yet indexed.
pub fn index_pending(conn: &Connection, session: &SessionId) -> Result<()> {
    let pending: Vec<String> = conn
        .prepare_cached("SELECT id FROM messages WHERE session_id = ? AND indexed = 0 AND role = 'assistant'")?
        .query_map(params![session.0], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    for id in pending {
        let id = MessageId(id);
        let text = super::messages::message_text(conn, &id)?;
        index(conn, session, Some(&id), &text)?;
        conn.prepare_cached("UPDATE messages SET indexed = 1 WHERE id = ?")?.execute(params![id.0])?;
    }
    Ok(())
}

#[derive(Debug, Clone, Serialize)]
pub struct SearchHit {
    pub session_id: SessionId,
    pub title: String,
    pub status: SessionStatus,
    pub created_at: String,
    /// The matching passage in parts, the matched words marked.
    pub snippet: Vec<SnippetPart>,
    /// The message the passage is in, where the session opens; none for the task's own words
    /// and the evaluator's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_id: Option<MessageId>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SnippetPart {
    pub text: String,
    pub matched: bool,
}

/// Where FTS5 marks a match: private-use characters no message holds, so the brackets or
/// asterisks a model writes are never taken for a match.
const OPEN: char = '\u{E000}';
const CLOSE: char = '\u{E001}';

/// Splits a snippet marked with [`OPEN`] and [`CLOSE`] into its parts, each as plain text.
fn parts(marked: &str) -> Vec<SnippetPart> {
    let mut out = Vec::new();
    let mut rest = marked;
    while let Some(start) = rest.find(OPEN) {
        if start > 0 {
            out.push(SnippetPart { text: plain(&rest[..start]), matched: false });
        }
        let after = &rest[start + OPEN.len_utf8()..];
        let end = after.find(CLOSE).unwrap_or(after.len());
        out.push(SnippetPart { text: plain(&after[..end]), matched: true });
        rest = after.get(end + CLOSE.len_utf8()..).unwrap_or("");
    }
    if !rest.is_empty() {
        out.push(SnippetPart { text: plain(rest), matched: false });
    }
    out
}

/// Text without the `**` of bold, but with a `**` between two letters or digits (`2**8`).
fn unbold(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("**") {
        let before = rest[..at].chars().next_back().or_else(|| out.chars().next_back());
        let after = rest[at + 2..].chars().next();
        out.push_str(&rest[..at]);
        if before.is_some_and(char::is_alphanumeric) && after.is_some_and(char::is_alphanumeric) {
            out.push_str("**");
        }
        rest = &rest[at + 2..];
    }
    out.push_str(rest);
    out
}

/// A passage of a message as one line of text: a snippet is read beside the task's title, where
/// the Markdown a model writes (code fences, backticks, bold, a heading's #) and its line breaks
/// showed as raw marks.
fn plain(text: &str) -> String {
    let unmarked = text
        .lines()
        .enumerate()
        .map(|(n, line)| {
            // A part's first line may start anywhere in a line of the message ("C# and F#").
            let at = line.trim_start();
            let heading = at.trim_start_matches('#');
            if n > 0 && heading.len() < at.len() && heading.starts_with(' ') {
                heading
            } else {
                line
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        .replace("```", " ")
        .replace('`', "");
    let unmarked = unbold(&unmarked);
    let mut out = String::with_capacity(unmarked.len());
    for c in unmarked.chars() {
        if !c.is_whitespace() {
            out.push(c);
        } else if !out.ends_with(' ') {
            out.push(' ');
        }
    }
    // The break that ended a part is kept as its space; a part's own first space is too.
    if text.ends_with(char::is_whitespace) && !out.ends_with(' ') {
        out.push(' ');
    }
    out
}

impl SearchHit {
    /// The snippet as one line of text, matches in `[` `]`, for a terminal.
    pub fn snippet_text(&self) -> String {
        self.snippet.iter().map(|p| if p.matched { format!("[{}]", p.text) } else { p.text.clone() }).collect()
    }
}

/// Turns what a person typed into an FTS5 query: every word must appear, or a word it begins
/// (a search box is read as it is typed: "farewel" finds farewell). Operators and quotes in the
/// input are taken literally, never as query syntax.
pub fn fts_query(text: &str) -> Option<String> {
    let terms: Vec<String> = text.split_whitespace().map(|w| format!("\"{}\"*", w.replace('"', "\"\""))).collect();
    (!terms.is_empty()).then(|| terms.join(" "))
}

pub fn search(conn: &Connection, text: &str, limit: usize) -> Result<Vec<SearchHit>> {
    let Some(q) = fts_query(text) else { return Ok(vec![]) };
    let mut stmt = conn.prepare_cached(
        "WITH hits AS (
             SELECT session_id, message_id, snippet(search, 0, char(57344), char(57345), '…', 12) AS snip, rank
             FROM search WHERE search MATCH ?1 ORDER BY rank LIMIT 2000
         ), best AS (
             -- SQLite takes a bare column from the row MIN() chose: the snippet and its message.
             SELECT session_id, message_id, snip, MIN(rank) AS r FROM hits GROUP BY session_id
         )
         SELECT s.id, s.title, s.status, s.created_ms, best.snip, best.message_id
         FROM best JOIN sessions s ON s.id = best.session_id
         ORDER BY best.r LIMIT ?2",
    )?;
    let rows = stmt.query_map(params![q, limit as i64], |r| {
        Ok(SearchHit {
            session_id: SessionId(r.get(0)?),
            title: r.get(1)?,
            status: SessionStatus::parse(&r.get::<_, String>(2)?).unwrap_or(SessionStatus::Idle),
            created_at: crate::clock::rfc3339(r.get(3)?),
            snippet: parts(&r.get::<_, String>(4)?),
            message_id: r.get::<_, Option<String>>(5)?.map(MessageId),
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}
