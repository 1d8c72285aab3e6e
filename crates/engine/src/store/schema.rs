//! Versioned migrations. Each table's DDL lives beside the code that reads and writes it; this
//! list only orders them. `PRAGMA user_version` records how far a database has come.

use rusqlite::Connection;

use super::{decisions, events, messages, search, sessions};
use crate::error::Result;

pub struct Migration {
    pub version: i64,
    pub name: &'static str,
    pub sql: &'static str,
    /// Fills what the SQL added from the event log, in the same transaction.
    pub backfill: Option<fn(&Connection) -> Result<()>>,
}

pub const MIGRATIONS: &[Migration] = &[
    Migration { version: 1, name: "sessions and runs", sql: sessions::MIGRATION, backfill: None },
    Migration { version: 2, name: "messages, parts, todos, usage, evaluations", sql: messages::MIGRATION, backfill: None },
    Migration { version: 3, name: "events", sql: events::MIGRATION, backfill: None },
    Migration { version: 4, name: "permission, question and review requests", sql: decisions::MIGRATION, backfill: None },
    Migration { version: 5, name: "full-text search", sql: search::MIGRATION, backfill: None },
    Migration { version: 6, name: "the evidence a run gathered, for resume", sql: sessions::EVIDENCE_MIGRATION, backfill: None },
    Migration { version: 7, name: "the run that holds a session's lease", sql: sessions::LEASE_RUN_MIGRATION, backfill: None },
    Migration { version: 8, name: "a plan's steps in the history list", sql: sessions::PLAN_MIGRATION, backfill: Some(sessions::backfill_plans) },
    Migration { version: 9, name: "where each task works: worktree or in place", sql: sessions::WORKSPACE_MIGRATION, backfill: None },
    Migration { version: 10, name: "attempts of one task, side by side", sql: sessions::ATTEMPTS_MIGRATION, backfill: None },
    Migration { version: 11, name: "how many of a task's reviews were approved", sql: sessions::APPROVALS_MIGRATION, backfill: None },
    Migration { version: 12, name: "a task's branch named only while it exists", sql: sessions::BRANCH_MIGRATION, backfill: Some(sessions::backfill_branches) },
    Migration { version: 13, name: "what the evaluator said, searchable", sql: "", backfill: Some(search::backfill_evaluator) },
    Migration {
        version: 14,
        name: "the audit findings that stand, in the history list",
        sql: sessions::AUDIT_MIGRATION,
        backfill: Some(sessions::backfill_audit),
    },
    Migration {
        version: 15,
        name: "how a run's decision came about: an attempt not chosen is not one rejected",
        sql: sessions::OCCASION_MIGRATION,
        backfill: Some(sessions::backfill_occasions),
    },
    Migration {
        version: 16,
        name: "a group rejected whole, told from an attempt rejected on its own",
        sql: "",
        backfill: Some(sessions::backfill_group_rejects),
    },
    Migration { version: 17, name: "a cancel asked of the process that runs a session", sql: sessions::CANCEL_ASK_MIGRATION, backfill: None },
    Migration {
        version: 18,
        name: "why a failed session failed, in the list and in search",
        sql: sessions::FAILURE_MIGRATION,
        backfill: Some(search::backfill_errors),
    },
];

pub fn migrate(conn: &mut Connection) -> Result<()> {
    let current: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    let latest = MIGRATIONS.last().map(|m| m.version).unwrap_or(0);
    if current > latest {
        return Err(crate::Error::Storage(format!(
            "the history database was written by a newer Finishline (schema {current}, this build knows {latest}); update Finishline"
        )));
    }
    for m in MIGRATIONS.iter().filter(|m| m.version > current) {
        // The app and the CLI may open a new data folder at the same moment: each migration
        // takes the write lock first and checks again, so it runs exactly once.
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let now: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if now >= m.version {
            continue;
        }
        tx.execute_batch(m.sql)?;
        if let Some(fill) = m.backfill {
            fill(&tx)?;
        }
        tx.pragma_update(None, "user_version", m.version)?;
        tx.commit()?;
    }
    Ok(())
}
