//! The history store: SQLite in WAL mode, one write handle and one read handle, versioned
//! migrations, and the event log. The rule everything rests on: an event is committed before
//! anyone receives it, so what a person saw is always in the database.

pub mod checkpoint;
pub mod decisions;
pub mod events;
pub mod export;
pub mod lease;
pub mod messages;
pub mod projection;
pub mod schema;
pub mod search;
pub mod sessions;
pub mod subscribe;
pub mod trust;

use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

use rusqlite::{params, Connection, OpenFlags, Transaction, TransactionBehavior};
use serde::Serialize;
use tokio::sync::broadcast;

use crate::clock::{rfc3339, Clock, SystemClock};
use crate::domain::*;
use crate::error::{Error, Result};
use crate::event::{EngineEvent, Envelope};

pub use lease::{LeaseOwner, RunsElsewhere};
pub use search::SearchHit;
pub use sessions::{ListQuery, SessionSummary, Shown, Tokens};

/// The longest task accepted: larger input is refused with a clear message, never truncated.
pub const MAX_TASK_BYTES: usize = 1_000_000;

/// A task, or a message to the agent (a follow-up, feedback), is held to [`MAX_TASK_BYTES`]:
/// past it, the model would refuse it anyway, with a less useful error.
pub fn within_message_limit(text: &str, what: &str) -> Result<()> {
    if text.len() > MAX_TASK_BYTES {
        return Err(Error::InvalidInput(format!(
            "{what} is {} bytes; the limit is {MAX_TASK_BYTES} bytes (1 MB). Put long material in a file in the workspace and refer to it",
            text.len()
        )));
    }
    Ok(())
}

pub struct Store {
    /// Declared first so it stops before the handles close (fields drop in order).
    _checkpoints: Option<checkpoint::Checkpointer>,
    writer: Mutex<Connection>,
    /// A separate read handle for file databases; an in-memory database reads through the writer
    /// (shared-cache readers would fail with table locks instead of waiting).
    reader: Option<Mutex<Connection>>,
    live: broadcast::Sender<Envelope>,
    clock: Arc<dyn Clock>,
    owner: LeaseOwner,
    lease_ttl_ms: i64,
    /// The writer's `data_version`, and the sessions' count and latest event, when
    /// [`Store::changed_elsewhere`] last looked.
    seen_version: Mutex<Option<(i64, (i64, i64))>>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Timeline {
    pub session: SessionSummary,
    pub todos: Vec<Todo>,
    pub events: Vec<Envelope>,
}

/// What a new session starts with.
#[derive(Debug, Clone, Default)]
pub struct NewSession {
    pub task: String,
    pub workspace: String,
    pub provider: String,
    pub model: String,
    /// The built-in agent's server (`None` for an external agent).
    pub base_url: Option<String>,
}

/// A session that runs or waits on a permission cannot be deleted: a process is at work on it.
pub fn refuse_deleting(status: SessionStatus) -> Result<()> {
    if status.at_work() {
        return Err(Error::InvalidInput("the session is running; cancel it before deleting it".into()));
    }
    Ok(())
}

impl Store {
    /// Opens (creating if needed) the database at `path`, migrates it, and runs no recovery:
    /// call [`Store::recover`] once at start.
    pub fn open(path: &Path, clock: Arc<dyn Clock>) -> Result<Store> {
        Self::open_checkpointing_every(path, clock, checkpoint::CHECKPOINT_EVERY)
    }

    /// [`Store::open`], with the log moved into the database every `every` (store/checkpoint.rs).
    pub fn open_checkpointing_every(path: &Path, clock: Arc<dyn Clock>, every: std::time::Duration) -> Result<Store> {
        let dir = path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(|e| unwritable_folder(dir, &e.to_string()))?;
        let new = !path.exists();
        let opened = (|| -> Result<Connection> {
            let writer = Connection::open(path)?;
            // The busy timeout first: switching a new file to WAL takes a lock another process
            // opening it at the same moment may hold.
            Self::configure(&writer)?;
            Self::enable_wal(&writer)?;
            Ok(writer)
        })();
        // No history yet and none can be made: the folder is what to fix, not a database.
        let writer = opened.map_err(|e| if new && matches!(e, Error::ReadOnly(_)) { unwritable_folder(dir, "permission denied") } else { e })?;
        // Commits leave the log to the checkpoint thread, so none of them waits on a disk sync.
        writer.pragma_update(None, "wal_autocheckpoint", checkpoint::BACKSTOP_PAGES)?;
        let reader = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI)?;
        Self::configure(&reader)?;
        let mut store = Self::with_connections(writer, Some(reader), clock)?;
        store._checkpoints = Some(checkpoint::Checkpointer::start(path, every)?);
        Ok(store)
    }

    /// [`Store::open`]; a file that is not a history database at all (garbage, or damaged past
    /// SQLite's reading) is moved aside whole, with its log, as `history.db.unreadable-<time>`,
    /// and a new history started, so the app opens and nothing is deleted. Returns where the old
    /// one was kept. Any other failure (a lock, a read-only folder, a full disk) is the error it
    /// was: those pass, and the file is fine.
    pub fn open_setting_aside_unreadable(path: &Path, clock: Arc<dyn Clock>) -> Result<(Store, Option<std::path::PathBuf>)> {
        // Looked at before it is opened for writing: a failed open deletes the log beside it.
        let kept = if path.is_file() && Self::unreadable(path) { Some(Self::set_aside(path)?) } else { None };
        Ok((Self::open(path, clock)?, kept))
    }

    /// Moves the file and its log to `<name>.unreadable-<time>`, whole; returns where.
    fn set_aside(path: &Path) -> Result<std::path::PathBuf> {
        let stamp = chrono::Utc::now().format("%Y%m%d-%H%M%S");
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "history.db".into());
        let kept = (0..1000)
            .map(|n| path.with_file_name(format!("{name}.unreadable-{stamp}{}", if n == 0 { String::new() } else { format!("-{n}") })))
            .find(|k| k.symlink_metadata().is_err())
            .ok_or_else(|| Error::Storage(format!("{} could not be set aside: too many kept already", path.display())))?;
        std::fs::rename(path, &kept)?;
        for log in ["-wal", "-shm"] {
            let from = path.with_file_name(format!("{name}{log}"));
            if from.exists() {
                std::fs::rename(&from, kept.with_file_name(format!("{}{log}", kept.file_name().unwrap_or_default().to_string_lossy())))?;
            }
        }
        Ok(kept)
    }

    /// Whether SQLite reads the file as no database at all: not a lock, not permissions.
    pub fn unreadable(path: &Path) -> bool {
        let Ok(conn) = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY) else { return false };
        match conn.query_row("PRAGMA schema_version", [], |r| r.get::<_, i64>(0)) {
            Err(rusqlite::Error::SqliteFailure(f, _)) => matches!(f.code, rusqlite::ErrorCode::NotADatabase | rusqlite::ErrorCode::DatabaseCorrupt),
            _ => false,
        }
    }

    /// A private in-memory database, for tests.
    pub fn open_in_memory() -> Result<Store> {
        Self::open_in_memory_with(Arc::new(SystemClock))
    }

    pub fn open_in_memory_with(clock: Arc<dyn Clock>) -> Result<Store> {
        let writer = Connection::open_in_memory()?;
        Self::configure(&writer)?;
        Self::with_connections(writer, None, clock)
    }

    /// Switches a file to WAL. SQLite answers "busy" at once, without waiting, when another
    /// connection switches the same new file at that moment; a moment later it is done.
    fn enable_wal(conn: &Connection) -> Result<()> {
        let mut tries = 0;
        loop {
            match conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0)) {
                Ok(_) => return Ok(()),
                Err(rusqlite::Error::SqliteFailure(f, _))
                    if matches!(f.code, rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked) && tries < 200 =>
                {
                    tries += 1;
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    fn configure(conn: &Connection) -> Result<()> {
        conn.busy_timeout(std::time::Duration::from_secs(10))?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        // WAL with NORMAL sync survives a killed process; only a power loss can drop the last commits.
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        Ok(())
    }

    fn with_connections(mut writer: Connection, reader: Option<Connection>, clock: Arc<dyn Clock>) -> Result<Store> {
        schema::migrate(&mut writer)?;
        let (live, _) = broadcast::channel(8192);
        Ok(Store {
            _checkpoints: None,
            writer: Mutex::new(writer),
            reader: reader.map(Mutex::new),
            live,
            clock,
            owner: LeaseOwner::this_process(),
            lease_ttl_ms: 15_000,
            seen_version: Mutex::new(None),
        })
    }

    /// Whether another process (the CLI, a second app) changed the sessions since the last look:
    /// this process's own changes are broadcast as they happen, theirs are not. SQLite's
    /// `data_version` on the writer moves only for other connections' commits; then the sessions'
    /// count and latest event tell a real change from a lease's heartbeat, which lists need not
    /// reload for. The first look only takes note.
    pub fn changed_elsewhere(&self) -> bool {
        let conn = self.write();
        let Ok(version) = conn.query_row("PRAGMA data_version", [], |r| r.get::<_, i64>(0)) else { return false };
        let mut seen = self.seen_version.lock().unwrap_or_else(|p| p.into_inner());
        if seen.is_some_and(|(v, _)| v == version) {
            return false;
        }
        let Ok(sessions) =
            conn.query_row("SELECT COUNT(*), COALESCE(MAX(updated_ms), 0) FROM sessions", [], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)))
        else {
            return false;
        };
        let before = seen.replace((version, sessions));
        before.is_some_and(|(_, s)| s != sessions)
    }

    /// How long a lease lives without a heartbeat.
    pub fn set_lease_ttl_ms(&mut self, ttl: i64) {
        self.lease_ttl_ms = ttl;
    }

    pub fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    fn write(&self) -> MutexGuard<'_, Connection> {
        self.writer.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn read(&self) -> MutexGuard<'_, Connection> {
        match &self.reader {
            Some(r) => r.lock().unwrap_or_else(|p| p.into_inner()),
            None => self.write(),
        }
    }

    /// Runs `f` in one IMMEDIATE transaction and delivers the events it appended only after the
    /// commit succeeded.
    fn transact<T>(&self, f: impl FnOnce(&Transaction<'_>, &mut Vec<Envelope>) -> Result<T>) -> Result<T> {
        let mut conn = self.write();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let mut out = Vec::new();
        let value = f(&tx, &mut out)?;
        tx.commit()?;
        // With NORMAL a commit survives a killed process, not a power loss; a decision about to be
        // acted on must survive both, so the log it was written to is synced before anyone acts
        // (what FULL does at every commit; SQLite will not change that inside a transaction).
        let synced = if out.iter().any(|e| e.event.acts_once_stored()) { sync_log(&conn) } else { Ok(()) };
        // A record of what was already done (a landing's approval with where it landed) is no
        // reason to fail its caller, who would report a landing that happened as failed: only a
        // decision not yet acted on is held back when the disk will not take it.
        let synced = synced.or_else(|why| if out.iter().any(|env| matches!(env.event, EngineEvent::Landed { .. })) { Ok(()) } else { Err(why) });
        for env in out {
            // No subscriber is fine: the event is in the store for whoever comes later.
            let _ = self.live.send(env);
        }
        synced?;
        Ok(value)
    }

    fn append_in(&self, tx: &Transaction<'_>, session: &SessionId, run: Option<&RunId>, event: EngineEvent) -> Result<Envelope> {
        let now = self.clock.now_ms();
        let seq: Option<i64> = tx
            .prepare_cached("UPDATE sessions SET last_seq = last_seq + 1, updated_ms = ?2 WHERE id = ?1 RETURNING last_seq")?
            .query_row(params![session.0, now], |r| r.get(0))
            .map(Some)
            .or_else(|e| if e == rusqlite::Error::QueryReturnedNoRows { Ok(None) } else { Err(e) })?;
        let seq = seq.ok_or_else(|| Error::NotFound(format!("session {session}")))?;
        let env = Envelope { seq: seq as u64, session_id: session.clone(), run_id: run.cloned(), at: rfc3339(now), event };
        events::insert(tx, &env)?;
        projection::apply(tx, &env, now)?;
        Ok(env)
    }

    /// Stores one event and then delivers it.
    pub fn append(&self, session: &SessionId, run: Option<&RunId>, event: EngineEvent) -> Result<Envelope> {
        self.transact(|tx, out| {
            let env = self.append_in(tx, session, run, event)?;
            out.push(env.clone());
            Ok(env)
        })
    }

    /// Stores one event if `allowed` accepts the session's status as it is at that moment, in
    /// one write: a run another process starts in between either comes first (and `allowed`
    /// sees it busy) or after.
    pub fn append_if(&self, session: &SessionId, event: EngineEvent, allowed: impl FnOnce(SessionStatus) -> Result<()>) -> Result<Envelope> {
        let mut stored = self.append_all_if(session, vec![event], allowed)?;
        Ok(stored.remove(0))
    }

    /// [`Store::append_if`] for several events, stored together or not at all.
    pub fn append_all_if(&self, session: &SessionId, events: Vec<EngineEvent>, allowed: impl FnOnce(SessionStatus) -> Result<()>) -> Result<Vec<Envelope>> {
        use rusqlite::OptionalExtension;
        self.transact(|tx, out| {
            let status: Option<String> = tx.query_row("SELECT status FROM sessions WHERE id = ?", params![session.0], |r| r.get(0)).optional()?;
            let status = status.ok_or_else(|| Error::NotFound(format!("session {session}")))?;
            allowed(SessionStatus::parse(&status).unwrap_or(SessionStatus::Idle))?;
            for e in events {
                out.push(self.append_in(tx, session, None, e)?);
            }
            Ok(out.clone())
        })
    }

    /// Stores `events` only if nothing was stored for the session after its event `seen` (the
    /// last the caller read), in one write: a run started meanwhile, here or in another process,
    /// wins, and the caller acts on nothing it did not see. False when something came between.
    pub fn append_if_unchanged(&self, session: &SessionId, seen: u64, events: Vec<EngineEvent>) -> Result<bool> {
        self.transact(|tx, out| {
            let last: i64 = tx.query_row("SELECT last_seq FROM sessions WHERE id = ?", params![session.0], |r| r.get(0))?;
            if last as u64 != seen {
                return Ok(false);
            }
            for e in events {
                out.push(self.append_in(tx, session, None, e)?);
            }
            Ok(true)
        })
    }

    /// Stores several events atomically, then delivers them in order.
    pub fn append_all(&self, session: &SessionId, run: Option<&RunId>, events: Vec<EngineEvent>) -> Result<Vec<Envelope>> {
        self.transact(|tx, out| {
            for e in events {
                out.push(self.append_in(tx, session, run, e)?);
            }
            Ok(out.clone())
        })
    }

    /// Stores events and the run's evidence in one transaction, so the evidence a resumed run
    /// reads back is never behind the events it saw.
    pub fn append_with_evidence(&self, session: &SessionId, run: &RunId, events: Vec<EngineEvent>, evidence: &serde_json::Value) -> Result<Vec<Envelope>> {
        self.transact(|tx, out| {
            for e in events {
                out.push(self.append_in(tx, session, Some(run), e)?);
            }
            tx.prepare_cached("UPDATE runs SET evidence = ?2 WHERE id = ?1")?.execute(params![run.0, evidence.to_string()])?;
            Ok(out.clone())
        })
    }

    /// The evidence of the session's newest run that saved any: what a resumed run continues.
    pub fn latest_run_evidence(&self, session: &SessionId) -> Result<Option<serde_json::Value>> {
        use rusqlite::OptionalExtension;
        let text: Option<String> = self
            .read()
            .prepare_cached("SELECT evidence FROM runs WHERE session_id = ?1 AND evidence IS NOT NULL ORDER BY started_ms DESC, rowid DESC LIMIT 1")?
            .query_row(params![session.0], |r| r.get(0))
            .optional()?;
        Ok(text.and_then(|t| serde_json::from_str(&t).ok()))
    }

    /// The evidence one run saved, if any.
    pub fn run_evidence(&self, run: &RunId) -> Result<Option<serde_json::Value>> {
        use rusqlite::OptionalExtension;
        let text: Option<Option<String>> =
            self.read().prepare_cached("SELECT evidence FROM runs WHERE id = ?1")?.query_row(params![run.0], |r| r.get(0)).optional()?;
        Ok(text.flatten().and_then(|t| serde_json::from_str(&t).ok()))
    }

    /// Creates a session and its `session_created` event.
    pub fn create_session(&self, new: &NewSession) -> Result<(SessionId, Envelope)> {
        let task = new.task.trim();
        if task.is_empty() {
            return Err(Error::InvalidInput("the task is empty; describe what you want done".into()));
        }
        within_message_limit(&new.task, "the task")?;
        let id = SessionId::new();
        let now = self.clock.now_ms();
        let env = self.transact(|tx, out| {
            tx.prepare_cached(
                "INSERT INTO sessions (id, title, task, workspace, provider, model, status, created_ms, updated_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'idle', ?7, ?7)",
            )?
            .execute(params![id.0, sessions::title_of(task), new.task, new.workspace, new.provider, new.model, now])?;
            let env = self.append_in(
                tx,
                &id,
                None,
                EngineEvent::SessionCreated {
                    task: new.task.clone(),
                    workspace: new.workspace.clone(),
                    provider: new.provider.clone(),
                    model: new.model.clone(),
                    base_url: new.base_url.clone(),
                },
            )?;
            out.push(env.clone());
            Ok(env)
        })?;
        Ok((id, env))
    }

    /// Events of a session after `after`, from the store.
    pub fn events(&self, session: &SessionId, after: u64) -> Result<Vec<Envelope>> {
        events::read(&self.read(), session, after, None)
    }

    /// A session's events of the given types only, in order.
    pub fn events_of_types(&self, session: &SessionId, types: &[&str]) -> Result<Vec<Envelope>> {
        events::read_types(&self.read(), session, types)
    }

    pub(crate) fn events_range(&self, session: &SessionId, after: u64, until: Option<u64>) -> Result<Vec<Envelope>> {
        events::read(&self.read(), session, after, until)
    }

    /// Every event of every session as it is committed; for broadcasts such as "history changed".
    pub fn follow_all(&self) -> broadcast::Receiver<Envelope> {
        self.live.subscribe()
    }

    /// Sessions created and statuses changed, as they are committed: what a history list and
    /// notifications follow. It never stops early: having fallen behind, it says so once.
    pub fn history_changes(&self) -> HistoryWatch {
        HistoryWatch(self.live.subscribe())
    }

    pub(crate) fn live_receiver(&self) -> broadcast::Receiver<Envelope> {
        self.live.subscribe()
    }

    pub fn session(&self, id: &SessionId) -> Result<SessionSummary> {
        sessions::get(&self.read(), id)?.ok_or_else(|| Error::NotFound(format!("session {id}")))
    }

    /// The sessions whose id starts so, at most `limit` (an id given by its start).
    pub fn sessions_starting(&self, start: &str, limit: usize) -> Result<Vec<SessionId>> {
        sessions::ids_starting(&self.read(), start, limit)
    }

    /// The sessions whose id ends so, at most `limit` (an id given by its end, as a task's
    /// worktree and branch are named).
    pub fn sessions_ending(&self, end: &str, limit: usize) -> Result<Vec<SessionId>> {
        sessions::ids_ending(&self.read(), end, limit)
    }

    /// The attempt groups whose id starts so, at most `limit`.
    pub fn groups_starting(&self, start: &str, limit: usize) -> Result<Vec<GroupId>> {
        sessions::group_ids_starting(&self.read(), start, limit)
    }

    /// The attempt groups whose id ends so, at most `limit`.
    pub fn groups_ending(&self, end: &str, limit: usize) -> Result<Vec<GroupId>> {
        sessions::group_ids_ending(&self.read(), end, limit)
    }

    pub fn list_sessions(&self, q: &ListQuery) -> Result<Vec<SessionSummary>> {
        sessions::list(&self.read(), q)
    }

    /// How far to trust each evaluator model, from the reviews people decided (store/trust.rs).
    pub fn evaluator_trust(&self) -> Result<Vec<trust::EvaluatorTrust>> {
        Ok(trust::summarize(&trust::reviewed_runs(&self.read())?))
    }

    /// How each agent has done across the history: verified, chosen, caught claiming done.
    pub fn agent_trust(&self) -> Result<Vec<trust::AgentTrust>> {
        Ok(trust::summarize_agents(&trust::agent_records(&self.read())?))
    }

    pub fn search(&self, text: &str, limit: usize) -> Result<Vec<SearchHit>> {
        search::search(&self.read(), text, limit)
    }

    pub fn todos(&self, session: &SessionId) -> Result<Vec<Todo>> {
        messages::todos(&self.read(), session)
    }

    pub fn tool_calls(&self, session: &SessionId) -> Result<Vec<messages::ToolCallRow>> {
        messages::tool_calls(&self.read(), session)
    }

    pub fn message_text(&self, message: &MessageId) -> Result<String> {
        messages::message_text(&self.read(), message)
    }

    /// Requests (permission, question, review) still waiting for a decision.
    pub fn pending_requests(&self, session: &SessionId) -> Result<Vec<(RequestId, String, serde_json::Value)>> {
        decisions::pending(&self.read(), session)
    }

    pub fn timeline(&self, id: &SessionId) -> Result<Timeline> {
        let conn = self.read();
        let session = sessions::get(&conn, id)?.ok_or_else(|| Error::NotFound(format!("session {id}")))?;
        let todos = messages::todos(&conn, id)?;
        let events = events::read(&conn, id, 0, None)?;
        Ok(Timeline { session, todos, events })
    }

    /// Removes the session and everything of it: runs, messages, parts, events, search entries.
    pub fn delete_session(&self, id: &SessionId) -> Result<()> {
        self.transact(|tx, _| {
            let status: Option<String> = tx.query_row("SELECT status FROM sessions WHERE id = ?", params![id.0], |r| r.get(0)).map(Some).or_else(|e| {
                if e == rusqlite::Error::QueryReturnedNoRows {
                    Ok(None)
                } else {
                    Err(e)
                }
            })?;
            let status = status.ok_or_else(|| Error::NotFound(format!("session {id}")))?;
            if let Some(s) = SessionStatus::parse(&status) {
                refuse_deleting(s)?;
            }
            tx.execute("DELETE FROM search WHERE session_id = ?", params![id.0])?;
            tx.execute("DELETE FROM sessions WHERE id = ?", params![id.0])?;
            Ok(())
        })
    }

    /// Applies a decision on a permission, question or review exactly once. A second decision,
    /// from anywhere, gets `AlreadyDecided` and changes nothing.
    pub fn resolve_request(
        &self,
        request: &RequestId,
        kind: decisions::RequestKind,
        waiting_status: SessionStatus,
        run: Option<&RunId>,
        events: Vec<EngineEvent>,
    ) -> Result<Vec<Envelope>> {
        self.transact(|tx, out| {
            let session = Self::check_undecided(tx, request, kind, waiting_status)?;
            for e in events {
                out.push(self.append_in(tx, &session, run, e)?);
            }
            Ok(out.clone())
        })
    }

    /// Records a decision for the run that asked, when that run is another live process's: it
    /// sees the decision ([`Store::request_state`]) and carries it out. One step, so a process
    /// that dies meanwhile leaves the request open for an answer that resumes the session.
    /// `None` (nothing written) when no other live process holds the session.
    pub fn resolve_for_holder(
        &self,
        request: &RequestId,
        kind: decisions::RequestKind,
        waiting_status: SessionStatus,
        events: Vec<EngineEvent>,
    ) -> Result<Option<RunsElsewhere>> {
        let now = self.clock.now_ms();
        self.transact(|tx, out| {
            let session = Self::check_undecided(tx, request, kind, waiting_status)?;
            let Some(elsewhere) = self.held_elsewhere_in(tx, &session, now)? else { return Ok(None) };
            for e in events {
                out.push(self.append_in(tx, &session, None, e)?);
            }
            Ok(Some(elsewhere))
        })
    }

    /// Applies a decision and starts the run that carries it out, in one step: the decision is
    /// never recorded without its run, and the run never starts twice.
    pub fn resolve_and_begin(
        &self,
        request: &RequestId,
        kind: decisions::RequestKind,
        waiting_status: SessionStatus,
        events: Vec<EngineEvent>,
        run: &RunId,
        trigger: RunTrigger,
    ) -> Result<SessionId> {
        let now = self.clock.now_ms();
        self.transact(|tx, out| {
            let session = Self::check_undecided(tx, request, kind, waiting_status)?;
            for e in events {
                out.push(self.append_in(tx, &session, None, e)?);
            }
            self.begin_in(tx, out, &session, run, trigger, now)?;
            Ok(session)
        })
    }

    fn check_undecided(tx: &Transaction<'_>, request: &RequestId, kind: decisions::RequestKind, waiting_status: SessionStatus) -> Result<SessionId> {
        let (session, stored_kind, decision) = decisions::state(tx, request)?.ok_or_else(|| Error::NotFound(format!("request {request}")))?;
        if stored_kind.0 != kind.as_str() {
            return Err(Error::InvalidInput(format!("{request} is a {} request, not a {}", stored_kind.0, kind.as_str())));
        }
        if let Some(d) = decision {
            return Err(Error::AlreadyDecided(format!("{} {request} was already decided ({d})", kind.as_str())));
        }
        let status: String = tx.query_row("SELECT status FROM sessions WHERE id = ?", params![session.0], |r| r.get(0))?;
        if status != waiting_status.as_str() {
            return Err(Error::AlreadyDecided(format!("the session is no longer waiting for this {} (it is {status})", kind.as_str())));
        }
        Ok(session)
    }

    /// Input and output tokens by source (agent, evaluator, compaction), for costs.
    pub fn usage_by_source(&self, session: &SessionId) -> Result<Vec<(UsageSource, u64, u64)>> {
        let conn = self.read();
        let mut stmt = conn.prepare_cached("SELECT source, SUM(input), SUM(output) FROM usage WHERE session_id = ? GROUP BY source")?;
        let rows = stmt.query_map(params![session.0], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?, r.get::<_, i64>(2)?)))?;
        let mut out = Vec::new();
        for row in rows {
            let (s, i, o) = row?;
            if let Some(src) = UsageSource::parse(&s) {
                out.push((src, i as u64, o as u64));
            }
        }
        Ok(out)
    }

    /// The session, kind and decision (if any) of a permission, question or review request.
    pub fn request_state(&self, request: &RequestId) -> Result<Option<(SessionId, String, Option<String>)>> {
        Ok(decisions::state(&self.read(), request)?.map(|(s, k, d)| (s, k.0, d)))
    }

    /// Caps the database at `pages` pages, after which writes fail exactly as on a full disk
    /// (SQLITE_FULL). For reliability tests and for trying the app's full-disk behaviour.
    pub fn cap_size_pages(&self, pages: u64) -> Result<()> {
        self.write().pragma_update(None, "max_page_count", pages as i64)?;
        Ok(())
    }

    /// `PRAGMA integrity_check`, for tests and diagnostics.
    pub fn integrity_check(&self) -> Result<String> {
        Ok(self.read().query_row("PRAGMA integrity_check", [], |r| r.get(0))?)
    }
}

/// One change a history list cares about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HistoryChange {
    Created {
        session: SessionId,
    },
    Status {
        session: SessionId,
        status: SessionStatus,
    },
    /// A task's worktree was removed (after a decision, possibly a while after): the lists of
    /// worktrees on disk change.
    WorktreeRemoved {
        session: SessionId,
    },
    /// The follower fell behind and some changes were dropped: reload everything.
    Missed,
}

/// See [`Store::history_changes`].
pub struct HistoryWatch(broadcast::Receiver<Envelope>);

impl HistoryWatch {
    /// The next change; `None` once the store is gone.
    pub async fn next(&mut self) -> Option<HistoryChange> {
        loop {
            match self.0.recv().await {
                Ok(env) => match env.event {
                    EngineEvent::SessionCreated { .. } => return Some(HistoryChange::Created { session: env.session_id }),
                    EngineEvent::StatusChanged { status, .. } => return Some(HistoryChange::Status { session: env.session_id, status }),
                    EngineEvent::WorktreeRemoved { .. } => return Some(HistoryChange::WorktreeRemoved { session: env.session_id }),
                    _ => continue,
                },
                // A full reload covers whatever is still queued, so it is skipped: the next
                // change reported is one made after this.
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    while !matches!(self.0.try_recv(), Err(broadcast::error::TryRecvError::Empty | broadcast::error::TryRecvError::Closed)) {}
                    return Some(HistoryChange::Missed);
                }
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    }
}

/// Syncs the write-ahead log of the history database to disk: every commit in it is then safe
/// from a power loss. An fsync of any handle on the file syncs the file; a database in memory
/// has no log.
fn sync_log(conn: &Connection) -> Result<()> {
    let Some(path) = conn.path().filter(|p| !p.is_empty()) else { return Ok(()) };
    match std::fs::File::open(format!("{path}-wal")) {
        Ok(f) => Ok(f.sync_data()?),
        // Checkpointed whole and gone (another process closed the last connection): the commit is
        // in the database file, synced by that checkpoint.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// A data folder that cannot be made or written, named with what to do: "Permission denied", or
/// SQLite's "unable to open database file" about a history that does not exist yet, left the
/// person to guess which folder.
fn unwritable_folder(dir: &Path, why: &str) -> Error {
    let why = why.split(" (os error").next().unwrap_or(why);
    let said = format!(
        "the data folder {} cannot be written ({why}), so no history can be kept there: check its owner and permissions, or use another",
        dir.display()
    );
    Error::Io(std::io::Error::new(std::io::ErrorKind::PermissionDenied, said))
}
