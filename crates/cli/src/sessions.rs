//! `finishline sessions …`: list, show, search, export. Read-only over the same store.

use std::sync::Arc;

use finishline_engine::clock::SystemClock;
use finishline_engine::domain::{DecisionOccasion, GroupId, SessionId, SessionStatus};
use finishline_engine::store::{export, ListQuery, Shown, Store};

use crate::output::{errln, humanln, outln};
use crate::{config, exit, Common};

pub fn open(common: &Common) -> Result<Store, u8> {
    let dir = config::data_dir(common);
    let path = dir.join("history.db");
    if !path.exists() {
        return Err(crate::run::fail(
            exit::USAGE,
            common.json,
            &format!(
                "no history yet in {}: run a task first (`{}`), or name the folder that holds it with --data-dir",
                dir.display(),
                crate::hint::command("run \"…\"")
            ),
        ));
    }
    let store = Store::open(&path, Arc::new(SystemClock)).map_err(|e| {
        // A file that is not a database (a copy gone wrong, a disk fault): reading changes no
        // file, so it is left for the person, with what a run would do with it.
        let way = if Store::unreadable(&path) {
            format!(
                "; move it aside to look at it, or run a task (`{}`), which keeps it whole beside as history.db.unreadable-… and starts a new history",
                crate::hint::command("run \"…\"")
            )
        } else {
            String::new()
        };
        crate::run::fail(exit::FAILED, common.json, &format!("the history {} cannot be read: {e}{way}", path.display()))
    })?;
    // Every front end recovers runs whose process died before it shows anything, so a listing
    // never shows a dead run as running. Finishing a revert or a landing a crash cut short (and
    // sweeping worktrees) is left to the commands that act: a listing changes no file.
    if let Err(e) = store.recover() {
        errln!("finishline: {e}");
    }
    Ok(store)
}

pub fn list(status: Option<String>, limit: usize, common: &Common) -> u8 {
    let mut q = ListQuery { limit, ..Default::default() };
    if let Some(given) = status {
        // A stored status lists every session stored so (the word this list prints); the window's
        // other names for a state (discarded, branch_kept, not_checked) list as its filter does.
        // Typed as the window writes it ("Branch kept") or in capitals, it is the same word.
        let s = given.trim().to_lowercase().replace([' ', '-'], "_");
        match (SessionStatus::parse(&s), Shown::parse(&s)) {
            (Some(st), _) => q.statuses.push(st),
            (None, Some(shown)) => q.shown.push(shown),
            (None, None) => {
                let known = SessionStatus::ALL.map(SessionStatus::as_str).join(", ");
                let shown = [Shown::Discarded, Shown::BranchKept, Shown::NotChecked, Shown::NotChosen].map(Shown::as_str).join(", ");
                return crate::run::fail(exit::USAGE, common.json, &format!("unknown status `{given}`: one of {known}, or {shown}"));
            }
        }
    }
    // No history yet is an empty list, as an empty history is (a script asking gets no error),
    // with where it looked and what makes one.
    let dir = config::data_dir(common);
    if !dir.join("history.db").exists() {
        if !common.json {
            outln!(
                "No sessions yet in {}: run a task first (`{}`), or name the folder that holds them with --data-dir.",
                dir.display(),
                crate::hint::command("run \"…\"")
            );
        }
        return exit::OK;
    }
    let store = match open(common) {
        Ok(s) => s,
        Err(c) => return c,
    };
    match store.list_sessions(&q) {
        Err(e) => crate::run::fail_on(exit::FAILED, common.json, &e),
        Ok(rows) => {
            if common.json {
                for r in rows {
                    outln!("{}", serde_json::to_string(&r).unwrap_or_default());
                }
            } else if rows.is_empty() {
                outln!("No sessions.");
            } else {
                for r in rows {
                    let plan = if r.plan_steps > 0 { format!("  [plan {}/{} steps]", r.plan_done, r.plan_steps) } else { String::new() };
                    // Rejected (or failed) now, the task may have landed before: say so.
                    let approved = if r.approvals > 0 && r.status != SessionStatus::Completed { "  [earlier work approved]" } else { "" };
                    // The group's id is what `sessions attempts` takes.
                    let attempt = r
                        .attempt
                        .as_ref()
                        .map(|a| {
                            // Stored as rejected, set aside for the one chosen: nobody refused it.
                            let aside = r.status == SessionStatus::Rejected && r.occasion == Some(DecisionOccasion::AnotherAttemptChosen);
                            let how = if a.chosen {
                                ", chosen"
                            } else if aside {
                                ", not chosen"
                            } else {
                                ""
                            };
                            format!("  [attempt {} of {}, {}{how}]", a.number, a.of, a.group)
                        })
                        .unwrap_or_default();
                    // A branch named with no worktree is one kept for later: the task's work waits there.
                    let kept = match (&r.branch, &r.work_dir) {
                        (Some(b), None) => format!("  [branch kept: {b}]"),
                        _ => String::new(),
                    };
                    let put_away = if r.put_away_unreviewed() { "  [put away without a review]" } else { "" };
                    let waits = if r.status == SessionStatus::AwaitingApproval { waits_for(&store, &r.id) } else { String::new() };
                    // "verified_done" beside checks the agent weakened is not a clean result.
                    let audit = match r.audit_findings {
                        0 => String::new(),
                        1 => "  [audit: 1 weakened check]".to_string(),
                        n => format!("  [audit: {n} weakened checks]"),
                    };
                    // Same-named tasks in different folders are told apart by the folder's name.
                    let folder = std::path::Path::new(&r.workspace).file_name().map(|n| format!("  [in {}]", n.to_string_lossy())).unwrap_or_default();
                    humanln!(
                        "{}  {:<17} {:<22} {}  {}{folder}{plan}{audit}{approved}{attempt}{put_away}{kept}{waits}",
                        r.id,
                        r.status.as_str(),
                        // A run under way has no end yet: the last one's is not this one's.
                        r.end_reason.filter(|_| !r.status.at_work()).map(|e| e.as_str()).unwrap_or("—"),
                        r.created_at,
                        r.title
                    );
                }
            }
            exit::OK
        }
    }
}

/// Whether this history has the session; if not, says so (and how to see the ones it has).
pub fn known(id: &str, common: &Common) -> Result<String, u8> {
    let store = open(common)?;
    let list = crate::hint::command("sessions list");
    let unknown = if id.trim().is_empty() {
        format!("no session id given: `{list}` shows them")
    } else if id.starts_with("grp_") {
        format!(
            "{id} is a group of attempts, not a session: `{}` shows its ranking, `{}` exports it whole",
            crate::hint::command(&format!("sessions attempts {id}")),
            crate::hint::command(&format!("sessions export {id}"))
        )
    } else {
        format!("there is no session {id} in this history: `{list}` shows them")
    };
    resolve(
        id,
        common,
        &Kind {
            plural: "sessions",
            prefix: "ses_",
            exists: &|id| store.session(&SessionId(id.into())).map(|_| ()),
            starting: &|start, n| Ok(store.sessions_starting(start, n)?.into_iter().map(|s| s.0).collect()),
            ending: &|end, n| Ok(store.sessions_ending(end, n)?.into_iter().map(|s| s.0).collect()),
            unknown,
        },
    )
}

/// What `sessions export` was given: a session, or a group of attempts exported whole.
pub enum Exported {
    Session(String),
    Group(String),
}

/// A session's id, or a group's (`grp_…`, or the start or end of one). Letters that name both (a
/// group and its attempts are made in the same moment, so their ids start alike) are refused: the
/// one or the other is never exported in place of what was meant.
pub fn known_exported(id: &str, common: &Common) -> Result<Exported, u8> {
    if id.starts_with("grp_") {
        return known_group(id, common).map(Exported::Group);
    }
    if id.starts_with("ses_") {
        return known(id, common).map(Exported::Session);
    }
    let store = open(common)?;
    let any = |found: finishline_engine::Result<Vec<String>>| found.is_ok_and(|f| !f.is_empty());
    let long = id.len() >= MIN_PREFIX;
    let ends = id.chars().count() >= MIN_END;
    let session = store.session(&SessionId(id.into())).is_ok()
        || (long && any(store.sessions_starting(&format!("ses_{id}"), 1).map(|v| v.into_iter().map(|s| s.0).collect())))
        || (ends && any(store.sessions_ending(id, 1).map(|v| v.into_iter().map(|s| s.0).collect())));
    let group = (long && any(store.groups_starting(&format!("grp_{id}"), 1).map(|v| v.into_iter().map(|g| g.0).collect())))
        || (ends && any(store.groups_ending(id, 1).map(|v| v.into_iter().map(|g| g.0).collect())));
    match (session, group) {
        (true, true) => Err(crate::run::fail(
            exit::USAGE,
            common.json,
            &format!("{id} names a session and an attempt group: give it with ses_ for the session, or grp_ for the whole group"),
        )),
        (false, true) => known_group(id, common).map(Exported::Group),
        _ => known(id, common).map(Exported::Session),
    }
}

/// Whether this history has the attempt group, named as a session is (whole, by its start or by
/// its end); if not, says so as [`known`] does for a session.
pub fn known_group(group: &str, common: &Common) -> Result<String, u8> {
    let store = open(common)?;
    let unknown = match store.session(&SessionId(group.into())) {
        // A session's id where a group's is asked for: its group, when it is an attempt.
        Ok(s) => match &s.attempt {
            Some(a) => format!(
                "{group} is a session, attempt {} of {} of the group {}: `{}` shows them",
                a.number,
                a.of,
                a.group,
                crate::hint::command(&format!("sessions attempts {}", a.group))
            ),
            None => format!("{group} is a session, not an attempt of a group: `{}` shows it", crate::hint::command(&format!("sessions show {group}"))),
        },
        Err(_) => format!(
            "there is no attempt group {group} in this history: `{}` shows the sessions, a group's attempts with its id",
            crate::hint::command("sessions list")
        ),
    };
    resolve(
        group,
        common,
        &Kind {
            plural: "attempt groups",
            prefix: "grp_",
            exists: &|id| finishline_engine::agent::attempts::group_attempts(&store, &GroupId(id.into())).map(|_| ()),
            starting: &|start, n| Ok(store.groups_starting(start, n)?.into_iter().map(|g| g.0).collect()),
            ending: &|end, n| Ok(store.groups_ending(end, n)?.into_iter().map(|g| g.0).collect()),
            unknown,
        },
    )
}

/// What an id names, for finding it by its start or its end.
struct Kind<'a> {
    plural: &'static str,
    /// What every such id starts with; `sessions list` shows ids with it, but read off aloud it
    /// is often left out.
    prefix: &'static str,
    exists: &'a dyn Fn(&str) -> finishline_engine::Result<()>,
    starting: &'a dyn Fn(&str, usize) -> finishline_engine::Result<Vec<String>>,
    ending: &'a dyn Fn(&str, usize) -> finishline_engine::Result<Vec<String>>,
    unknown: String,
}

fn resolve(id: &str, common: &Common, kind: &Kind) -> Result<String, u8> {
    match (kind.exists)(id) {
        Err(e) if e.code() == finishline_engine::ErrorCode::NotFound => {}
        _ => return Ok(id.to_string()),
    }
    // The start of an id, as `sessions list` shows it, is enough when only one id starts so;
    // else its end, which names the task's worktree and branch (ids made together share a start).
    let failed = |e: finishline_engine::Error| crate::run::fail_on(exit::FAILED, common.json, &e);
    // Read off the list without its prefix (8 characters or more, as with it), it is a start too.
    let start = if id.starts_with(kind.prefix) { id.to_string() } else { format!("{}{id}", kind.prefix) };
    let starting = if id.len() >= MIN_PREFIX { (kind.starting)(&start, SHOWN + 1).map_err(failed)? } else { vec![] };
    // Without its prefix, the same letters may be one id's start and another's end: both are
    // looked for, and two different ones are no answer.
    let look_at_ends = id.chars().count() >= MIN_END && (starting.is_empty() || !id.starts_with(kind.prefix));
    let ending = if look_at_ends { (kind.ending)(id, SHOWN + 1).map_err(failed)? } else { vec![] };
    let (found, how) = match (starting.is_empty(), ending.is_empty()) {
        (false, true) => (starting, "start"),
        (true, _) => (ending, "end"),
        (false, false) => {
            let mut both = starting;
            both.extend(ending.into_iter().filter(|e| !both.contains(e)).collect::<Vec<_>>());
            (both, "start or end")
        }
    };
    let plural = kind.plural;
    match &found[..] {
        // Too few letters are never looked for: how many are enough is said.
        // `not_found` under --json, as the engine says of an id it does not know.
        [] if id.chars().count() < MIN_PREFIX => Err(crate::run::fail_as(
            exit::USAGE,
            common.json,
            finishline_engine::ErrorCode::NotFound,
            &format!("{} (give its whole id, its first {MIN_PREFIX} characters or more, or its last {MIN_END} or more)", kind.unknown),
        )),
        [] => Err(crate::run::fail_as(exit::USAGE, common.json, finishline_engine::ErrorCode::NotFound, &kind.unknown)),
        [one] => Ok(one.clone()),
        many => Err(crate::run::fail(
            exit::USAGE,
            common.json,
            &if many.len() > SHOWN {
                format!("more than {SHOWN} {plural} {how} with {id}, the newest {}; give more of the id", many[..SHOWN].join(", "))
            } else {
                format!("{} {plural} {how} with {id}: {}; give more of the id", many.len(), many.join(", "))
            },
        )),
    }
}

/// How many of the ids sharing a start a refusal names.
const SHOWN: usize = 5;

/// The fewest characters of an id taken as its start: the prefix and a few more, so that a typo
/// of a few letters is not quietly read as some session.
pub(crate) const MIN_PREFIX: usize = 8;

/// The fewest characters of an id taken as its end: the six a task's worktree and branch show.
pub(crate) const MIN_END: usize = 6;

/// `sessions discard`: an ended task's worktree and branch removed, recorded as rejected.
pub fn discard(id: &str, keep_branch: bool, common: &Common) -> u8 {
    let store = match open(common) {
        Ok(s) => s,
        Err(c) => return c,
    };
    let data_dir = config::data_dir(common);
    if let Ok(Some(group)) = finishline_engine::agent::discard::competing_group(&store, &SessionId(id.into())) {
        let reject = crate::hint::command(&format!("sessions attempts {group} --reject"));
        return crate::run::fail(exit::USAGE, common.json, &format!("{id} is an attempt of group {group}: attempts are put away with their group: `{reject}`"));
    }
    match finishline_engine::agent::discard::discard(&store, &data_dir, &SessionId(id.into()), keep_branch) {
        Ok(d) if common.json => {
            outln!(
                "{}",
                serde_json::json!({
                    "type": "discarded",
                    "session_id": id,
                    "status": d.status.as_str(),
                    "worktree": d.worktree.folder,
                    "branch": d.worktree.branch,
                    "branch_kept": d.branch_kept.is_some(),
                })
            );
            exit::OK
        }
        Ok(d) => {
            let recorded = if d.status == SessionStatus::Completed { "it stays completed (its earlier work landed)" } else { "recorded as rejected" };
            match &d.branch_kept {
                Some(branch) if keep_branch => outln!(
                    "Put away {id}: {recorded}; its worktree {} is removed, and its branch {branch} is kept with its work (`git merge {branch}` takes it). Its history stays.",
                    d.worktree.folder
                ),
                Some(branch) => outln!(
                    "Discarded {id}: {recorded}; its worktree {} is removed, and its branch {branch} is kept{}. Its history stays.",
                    d.worktree.folder,
                    finishline_engine::domain::BranchKeptWhy::ChangedAfterTask.words()
                ),
                None => outln!("Discarded {id}: {recorded}; its worktree {} and branch {} are removed. Its history stays.", d.worktree.folder, d.worktree.branch),
            }
            exit::OK
        }
        Err(e) if matches!(e.code(), finishline_engine::ErrorCode::NotFound | finishline_engine::ErrorCode::InvalidInput) => {
            crate::run::fail_on(exit::USAGE, common.json, &e)
        }
        Err(e) => crate::run::fail_on(exit::FAILED, common.json, &e),
    }
}

/// `sessions delete`: a session and its worktree gone from the history, as the window's Delete.
/// Work that waits for a decision goes only when the person says so.
pub fn delete(id: &str, yes: bool, common: &Common) -> u8 {
    let store = match open(common) {
        Ok(s) => s,
        Err(c) => return c,
    };
    let sid = SessionId(id.into());
    if let Ok(Some(group)) = finishline_engine::agent::discard::competing_group(&store, &sid) {
        let reject = crate::hint::command(&format!("sessions attempts {group} --reject"));
        return crate::run::fail(
            exit::USAGE,
            common.json,
            &format!("{id} is an attempt of group {group}, not decided yet: decide the group first (`{reject}`), then delete it"),
        );
    }
    let s = match store.session(&sid) {
        Ok(s) => s,
        Err(e) => return crate::run::fail_on(exit::FAILED, common.json, &e),
    };
    let waits = match (s.status, &s.work_dir) {
        (SessionStatus::AwaitingReview, Some(folder)) => Some(format!("waits for your review, and its work is in {folder}")),
        (SessionStatus::AwaitingReview, None) => Some("waits for your review".to_string()),
        (status, Some(folder)) if !status.is_running() => Some(format!("has work nobody decided on in its worktree {folder}")),
        _ => None,
    };
    if let (Some(waits), false) = (&waits, yes) {
        let asked = std::io::IsTerminal::is_terminal(&std::io::stdin()) && !common.json;
        let said_yes = asked
            && crate::run::prompt_line(&format!("{id} {waits}. Delete it, its worktree and its history? [y/N] "))
                .is_some_and(|a| a.to_ascii_lowercase().starts_with('y'));
        if !said_yes {
            // A review is decided; work that ended without one is put away (its history stays).
            let decide = if s.status == SessionStatus::AwaitingReview { "review" } else { "discard" };
            let decide = crate::hint::command(&format!("sessions {decide} {id}"));
            let again = crate::hint::command(&format!("sessions delete {id} --yes"));
            let what = if asked { "Nothing was deleted" } else { "Not deleted" };
            return crate::run::fail(
                exit::USAGE,
                common.json,
                &format!("{what}: {id} {waits}. Decide it first (`{decide}`), or delete it anyway with `{again}`"),
            );
        }
    }
    let data_dir = config::data_dir(common);
    match finishline_engine::agent::decision::delete_task(&store, &data_dir, &sid) {
        Ok(deleted) if common.json => {
            outln!(
                "{}",
                serde_json::json!({
                    "type": "deleted",
                    "session_id": id,
                    "worktree": s.work_dir,
                    "left_in_moved_repository": deleted.left_in_moved_repository,
                })
            );
            exit::OK
        }
        Ok(deleted) => {
            match &s.work_dir {
                Some(folder) => outln!("Deleted {id}: its history and its worktree {folder} are removed."),
                None => outln!("Deleted {id}: its history is removed."),
            }
            if let Some(left) = deleted.left_in_moved_repository {
                outln!("{}.", crate::hint::sentence(&left));
            }
            exit::OK
        }
        Err(e) if matches!(e.code(), finishline_engine::ErrorCode::NotFound | finishline_engine::ErrorCode::InvalidInput) => {
            crate::run::fail_on(exit::USAGE, common.json, &e)
        }
        Err(e) => crate::run::fail_on(exit::FAILED, common.json, &e),
    }
}

/// One session's timeline: the Markdown export, or the JSON export with `--json`.
pub fn show(id: &str, common: &Common) -> u8 {
    // `--json` is one object per line, as everywhere; `export --format json` is a file to read.
    export_as(id, common.json.then_some(JsonLayout::OneLine), true, common)
}

/// What a session waiting mid-run waits for, as a tag of its line: its status says only that it
/// waits for the person.
fn waits_for(store: &Store, id: &SessionId) -> String {
    let pending = store.pending_requests(id).unwrap_or_default();
    match pending.iter().find(|(_, kind, _)| kind != "review") {
        Some((_, kind, _)) if kind == "question" => "  [waits for your answer to its question]".into(),
        Some((_, _, payload)) => match payload["tool"].as_str() {
            Some(tool) => format!("  [waits for your permission to run {tool}]"),
            None => "  [waits for your permission]".into(),
        },
        None if store.events(id, 0).ok().and_then(|e| finishline_engine::plan::state::PlanState::from_events(&e)).is_some_and(|p| p.awaiting_review) => {
            "  [waits for your go-ahead on its plan]".into()
        }
        None => String::new(),
    }
}

pub fn search(text: &str, common: &Common) -> u8 {
    if text.trim().is_empty() {
        // Read first, so the command suggested names the `--data-dir` given.
        config::data_dir(common);
        return crate::run::fail(
            exit::USAGE,
            common.json,
            "say what to search for: `finishline sessions search \"words\"` (`sessions list` shows every session)",
        );
    }
    let store = match open(common) {
        Ok(s) => s,
        Err(c) => return c,
    };
    match store.search(text, 50) {
        Err(e) => crate::run::fail_on(exit::FAILED, common.json, &e),
        Ok(hits) => {
            if hits.is_empty() && !common.json {
                crate::output::say(&format!("No session mentions “{}”.\n", said_back(text.trim())));
            }
            for h in hits {
                if common.json {
                    outln!("{}", serde_json::to_string(&h).unwrap_or_default());
                } else {
                    humanln!("{}  {:<17} {}\n    {}", h.session_id, h.status.as_str(), h.title, h.snippet_text());
                }
            }
            exit::OK
        }
    }
}

/// What the person searched for, said back: a 100 KB search is not echoed whole.
fn said_back(text: &str) -> String {
    const SHOWN: usize = 200;
    if text.chars().count() <= SHOWN {
        return text.to_string();
    }
    format!("{}…", text.chars().take(SHOWN).collect::<String>())
}

/// How a JSON export is laid out.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum JsonLayout {
    OneLine,
    Indented,
}

/// The session as Markdown, or as JSON laid out as `json` says. Markdown to a file is the record,
/// whole; to a terminal it is read there, and a model's escapes would act on it.
pub fn export(id: &str, json: Option<JsonLayout>, common: &Common) -> u8 {
    use std::io::IsTerminal;
    export_as(id, json, std::io::stdout().is_terminal(), common)
}

/// A group of attempts, whole: its ranking and choice, then every attempt's session.
pub fn export_group(group: &str, json: Option<JsonLayout>, common: &Common) -> u8 {
    use std::io::IsTerminal;
    let store = match open(common) {
        Ok(s) => s,
        Err(c) => return c,
    };
    match finishline_engine::agent::group_export::group_export(&store, &GroupId(group.into())) {
        Err(e) => crate::run::fail_on(exit::USAGE, common.json, &e),
        Ok(g) => {
            match json {
                Some(JsonLayout::OneLine) => outln!("{}", serde_json::to_string(&g.to_json()).unwrap_or_default()),
                Some(JsonLayout::Indented) => outln!("{}", serde_json::to_string_pretty(&g.to_json()).unwrap_or_default()),
                None if std::io::stdout().is_terminal() => crate::output::human(&g.to_markdown()),
                None => crate::output::write(format_args!("{}", g.to_markdown())),
            }
            exit::OK
        }
    }
}

fn export_as(id: &str, json: Option<JsonLayout>, read_here: bool, common: &Common) -> u8 {
    let store = match open(common) {
        Ok(s) => s,
        Err(c) => return c,
    };
    match store.timeline(&SessionId(id.into())) {
        Err(e) => crate::run::fail_on(exit::USAGE, common.json, &e),
        Ok(t) => {
            match json {
                Some(JsonLayout::OneLine) => outln!("{}", serde_json::to_string(&export::to_json(&t)).unwrap_or_default()),
                Some(JsonLayout::Indented) => outln!("{}", serde_json::to_string_pretty(&export::to_json(&t)).unwrap_or_default()),
                None if read_here => crate::output::human(&export::to_markdown(&t)),
                None => crate::output::write(format_args!("{}", export::to_markdown(&t))),
            }
            exit::OK
        }
    }
}
