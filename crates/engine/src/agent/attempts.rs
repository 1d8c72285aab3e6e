//! Attempts side by side: one task done by several agents (or several tries of one), each its own
//! session in its own worktree from the same commit, judged by the same completion engine and
//! verification, ranked by [`crate::judge::ranking`], and one chosen to land while the others
//! are rejected and their worktrees removed.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Serialize;

use super::changes::current_worktree;
use super::comparison::{fresh_comparisons, spent_on_comparisons};
use super::decision::{ReviewChoice, ReviewOutcome};
use super::{Engine, TaskOptions, WhenBusy, WhenUndecided};
use crate::domain::*;
use crate::error::{Error, Result};
use crate::event::{EngineEvent, Envelope};
use crate::external::ExternalAgent;
use crate::judge::comparison::{self, Comparison};
use crate::judge::ranking::{self, AttemptEvidence, Ranked};
use crate::store::{ListQuery, SessionSummary, Store};
use crate::workspace::checkpoint::{ChangeKind, FileChange};
use crate::workspace::ownership::FileState;

/// Who does a task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Worker {
    /// Finishline's own agent, with the engine's model or another of its provider's.
    Builtin {
        model: Option<String>,
    },
    External(ExternalAgent),
}

impl Worker {
    /// `builtin`, `builtin:MODEL`, a preset's name (`claude-code`), or any ACP agent's command
    /// line.
    pub fn from_choice(choice: &str) -> Worker {
        let choice = choice.trim();
        if let Some(model) = choice.strip_prefix("builtin:").map(str::trim).filter(|m| !m.is_empty()) {
            return Worker::Builtin { model: Some(model.to_string()) };
        }
        ExternalAgent::from_choice(choice).map(Worker::External).unwrap_or(Worker::Builtin { model: None })
    }

    pub fn label(&self, builtin_model: &str) -> String {
        match self {
            Worker::Builtin { model } => format!("Finishline's agent ({})", model.as_deref().unwrap_or(builtin_model)),
            Worker::External(a) => a.label(),
        }
    }
}

/// Reads `claude-code,codex,builtin` or `builtin*3,opencode` or `builtin:small,builtin:large`:
/// who does each attempt, in order.
pub fn parse_attempts(spec: &str) -> Result<Vec<Worker>> {
    let mut out = Vec::new();
    for item in spec.split(',').map(str::trim) {
        if item.is_empty() {
            return Err(Error::InvalidInput(format!(
                "--attempts {spec:?}: an empty name between commas; write agents as claude-code,codex,builtin or builtin*3"
            )));
        }
        let (name, times) =
            match item.rsplit_once('*') {
                Some((name, n)) => {
                    let n: u32 =
                        n.trim().parse().ok().filter(|n| (1..=16).contains(n)).ok_or_else(|| {
                            Error::InvalidInput(format!("--attempts: “{item}” repeats an agent a number of times from 1 to 16, like builtin*3"))
                        })?;
                    (name.trim(), n)
                }
                None => (item, 1),
            };
        if name.is_empty() {
            return Err(Error::InvalidInput(format!("--attempts: “{item}” names no agent")));
        }
        for _ in 0..times {
            out.push(Worker::from_choice(name));
        }
    }
    Ok(out)
}

/// Which attempt of a group a new session is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptSlot {
    pub group: GroupId,
    pub number: u32,
    pub of: u32,
    pub label: String,
}

/// A group as it stands: its attempts ranked once ended, those still running after them.
#[derive(Debug, Clone, Serialize)]
pub struct GroupRanking {
    pub group: GroupId,
    pub task: String,
    pub ranking: Vec<Ranked>,
    pub all_ended: bool,
    /// The attempt the person chose, once chosen.
    pub chosen: Option<SessionId>,
    /// None was chosen: the person rejected every attempt.
    pub put_away: bool,
    /// What asking the evaluator to compare them has cost so far, in tokens (every answer, a
    /// stale one too): not the attempts' own, so shown on its own.
    pub comparison_tokens: u64,
    /// The branch the attempts started from, which choosing one lands on (none from a
    /// detached HEAD): every attempt starts from the same one.
    pub base_branch: Option<String>,
    /// Each attempt's place as the person reads it, in the ranking's order (see [`places`]):
    /// every front end shows these, so that none places an attempt differently.
    pub places: Vec<String>,
    /// The model a comparison asks now (the evaluator set, else the group's own judge), to tell
    /// its answers from another's; known to the engine, which has the settings, not to the
    /// history alone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub judge: Option<String>,
}

/// Each attempt's place as the person reads it, in the ranking's order: "1", "=2" for attempts
/// the rule finds equal (a 2 and a 3 would say an order the rule did not give), and "–" for one
/// with no place: still running (or ranked only once every attempt has ended), with no work to
/// land, or rejected by the person in its own review.
fn places(ranking: &[Ranked], all_ended: bool) -> Vec<String> {
    let mut before: Option<(usize, bool)> = None;
    let mut out = Vec::with_capacity(ranking.len());
    for (i, a) in ranking.iter().enumerate() {
        let own = if a.rank == 0 || !all_ended || !a.evidence.reviewed { 0 } else { a.rank };
        let level = own > 0 && a.above_next.is_none() && ranking.get(i + 1).is_some_and(|n| n.evidence.reviewed && !n.evidence.refused);
        let after_level = own > 0 && before.is_some_and(|(_, l)| l);
        let rank = if after_level { before.map_or(own, |(b, _)| b) } else { own };
        before = Some((rank, level));
        out.push(match rank {
            0 => "–".to_string(),
            _ if level || after_level => format!("={rank}"),
            _ => rank.to_string(),
        });
    }
    out
}

/// One file some attempt changed, as each attempt left it.
#[derive(Debug, Clone, Serialize)]
pub struct FileDifference {
    pub path: String,
    /// Every attempt with work to review left it the same.
    pub same: bool,
    pub versions: Vec<FileVersion>,
}

#[derive(Debug, Clone, Serialize)]
pub struct FileVersion {
    pub session: SessionId,
    pub label: String,
    /// `None`: this attempt left the file alone.
    pub kind: Option<ChangeKind>,
    pub diff: String,
}

impl Engine {
    /// Starts the task once per worker, side by side: each its own session in its own worktree
    /// from the same commit of the person's branch (or `opts.base`). Only in a git repository,
    /// and never more than the settings' limit.
    pub fn start_attempts(
        self: &Arc<Self>,
        task: &str,
        workspace: &std::path::Path,
        workers: Vec<Worker>,
        opts: TaskOptions,
    ) -> Result<(GroupId, Vec<(SessionId, tokio::task::JoinHandle<()>)>)> {
        // A misspelt agent is what is wrong with `--attempts nope`, before how many it names.
        for w in &workers {
            if let Worker::External(a) = w {
                a.installed().map_err(Error::InvalidInput)?;
            }
        }
        let limit = self.config.tasks.max_attempts;
        if workers.len() < 2 {
            return Err(Error::InvalidInput("attempts side by side need at least two: name two agents, or one with *2 (builtin*2)".into()));
        }
        if workers.len() as u32 > limit {
            return Err(Error::InvalidInput(format!("{} attempts is more than the limit of {limit}: raise it in Settings → Tasks → Attempts at most, or as `tasks.max_attempts` in the settings file", workers.len())));
        }
        if opts.isolation == Some(Isolation::InPlace) {
            return Err(Error::InvalidInput("attempts each need their own worktree; they cannot share the folder in place".into()));
        }
        let folder = workspace.canonicalize().map_err(|e| crate::workspace::unusable(workspace, &e))?;
        let repo = crate::workspace::worktree::repo_of(&folder, &self.config.tasks.worktrees).ok_or_else(|| {
            let why = if crate::workspace::worktree::no_commit_yet(&folder) {
                "is a git repository with no commit yet: commit once (git add -A; git commit -m start), then start them"
            } else {
                "is not one (New Task → Make it a repository, or git init and commit)"
            };
            Error::InvalidInput(format!(
                "attempts side by side need a git repository with a commit, so that each attempt gets its own worktree: {} {why}",
                folder.display()
            ))
        })?;
        let base_commit = crate::workspace::worktree::plan(&repo, &self.config.tasks.worktrees, "base", task, opts.base.as_deref(), 1)?.base_commit;
        let group = GroupId::new();
        let of = workers.len() as u32;
        let labels = labels(&workers, &self.config.agent.model);
        let mut started = Vec::new();
        for (i, (worker, label)) in workers.into_iter().zip(labels).enumerate() {
            let attempt = AttemptSlot { group: group.clone(), number: i as u32 + 1, of, label };
            let one = TaskOptions {
                plan: opts.plan,
                isolation: Some(Isolation::Worktree),
                base: opts.base.clone(),
                when_busy: WhenBusy::Run,
                when_undecided: WhenUndecided::Run,
                worker: Some(worker),
                base_commit: Some(base_commit.clone()),
                attempt: Some(attempt),
            };
            match self.start_task_with(task, workspace, one) {
                Ok(s) => started.push(s),
                Err(e) => {
                    // All or none: the attempts already started stop, and say why.
                    for (sid, _) in &started {
                        self.cancel(sid);
                    }
                    return Err(e);
                }
            }
        }
        Ok((group, started))
    }

    /// The group's attempts, in their order.
    pub fn attempts(&self, group: &GroupId) -> Result<Vec<SessionSummary>> {
        group_attempts(&self.store, group)
    }

    /// The group ranked by the rule, from each attempt's last review, with the judge a
    /// comparison would ask.
    pub fn rank_group(&self, group: &GroupId) -> Result<GroupRanking> {
        let mut ranking = rank_group(&self.store, group)?;
        ranking.judge = self.group_judge(group)?;
        Ok(ranking)
    }

    /// The model a comparison of the group asks now: the evaluator set, else the group's own
    /// judge (see [`super::run::judge_of`]); none when no provider is set up.
    pub fn group_judge(&self, group: &GroupId) -> Result<Option<String>> {
        Ok(Some(self.judge_of_group(group)?.model).filter(|m| !m.is_empty()))
    }

    /// Lands the chosen attempt as a single task's approve would, then rejects every other one
    /// (a running attempt is cancelled first) and removes its worktree. A landing that cannot go
    /// through leaves the whole group as it was.
    pub fn choose_attempt(self: &Arc<Self>, group: &GroupId, chosen: &SessionId, landing: Option<LandingMode>) -> Result<ReviewOutcome> {
        let mut choice = ReviewChoice::new(Decision::Approve, DecidedBy::Person);
        choice.landing = landing;
        self.choose_attempt_with(group, chosen, choice)
    }

    /// [`Engine::choose_attempt`] with the approve as the person gave it (their words, how it
    /// lands): what an approve of an attempt in its own session comes to.
    pub fn choose_attempt_with(self: &Arc<Self>, group: &GroupId, chosen: &SessionId, choice: ReviewChoice) -> Result<ReviewOutcome> {
        let choice = ReviewChoice { decision: Decision::Approve, ..choice };
        let ranked = self.rank_group(group)?;
        if let Some(c) = &ranked.chosen {
            return Err(Error::AlreadyDecided(format!("this group's attempt {c} was already chosen")));
        }
        let Some(mine) = ranked.ranking.iter().find(|r| &r.evidence.session == chosen) else {
            return Err(Error::NotFound(format!("{chosen} is not an attempt of group {group}")));
        };
        let Some(review) = mine.evidence.review.clone() else {
            let why = if mine.evidence.ended {
                "it has no review waiting (it ended without work to land)"
            } else {
                "it is still running: wait for its review, or cancel it"
            };
            return Err(Error::InvalidInput(format!("{} cannot be chosen: {why}", mine.evidence.label)));
        };
        // An attempt running in another process (a terminal, the window) stops only once that
        // process heeds the ask, and putting it away before would pull its worktree from under
        // its run: the person cancels it first.
        let elsewhere: Vec<&str> = ranked
            .ranking
            .iter()
            .filter(|r| &r.evidence.session != chosen && !r.evidence.ended && !self.is_running(&r.evidence.session))
            .map(|r| r.evidence.label.as_str())
            .collect();
        if !elsewhere.is_empty() {
            return Err(Error::InvalidInput(format!(
                "{} still running in another window or terminal: cancel it (`finishline sessions attempts {group} --cancel`, or Cancel in the window) or wait for its review, then choose",
                elsewhere.join(", ")
            )));
        }
        // The standing the choice is made from, those still at work here as they will be once the
        // choice stops them: recorded with it, so that a follow-up of the one chosen does not
        // move the group's places afterwards.
        let running: Vec<SessionId> = ranked.ranking.iter().filter(|r| !r.evidence.ended).map(|r| r.evidence.session.clone()).collect();
        let at_choice = if running.is_empty() { ranked.clone() } else { standing_with(&self.store, group, &running)?.ranking };
        let reason = at_choice.ranking.iter().find(|r| &r.evidence.session == chosen).filter(|r| r.rank == 1).and_then(|r| r.above_next.clone());
        let by = choice.by;
        let outcome = self.decide_one(&review, choice)?;
        if !matches!(outcome, ReviewOutcome::Decided { .. }) {
            return Ok(outcome);
        }
        // The choice is recorded before the others are touched: a crash in between leaves a
        // decided group whose leftovers the start-up sweep removes.
        self.store.append(chosen, None, EngineEvent::AttemptChosen { group: group.clone(), reason, ranking: recorded_ranking(&at_choice) })?;
        // One the person rejected in its own review is theirs as they left it: not put away again.
        for other in ranked.ranking.iter().filter(|r| &r.evidence.session != chosen && !r.evidence.refused) {
            if let Err(e) = self.discard_attempt(&other.evidence, crate::store::trust::SET_ASIDE, Some(DecisionOccasion::AnotherAttemptChosen), by) {
                let _ = self.store.append(&other.evidence.session, None, EngineEvent::Error { code: e.code(), message: format!("{NOT_PUT_AWAY}: {e}") });
            }
        }
        Ok(outcome)
    }

    /// Stops every attempt of the group still at work, here or by asking the process running it;
    /// each of those, with what was done.
    pub fn cancel_group(&self, group: &GroupId) -> Result<Vec<(SessionId, super::Stop)>> {
        Ok(self.attempts(group)?.into_iter().filter(|s| s.status.at_work()).map(|s| (s.id.clone(), self.cancel(&s.id))).collect())
    }

    /// Puts the whole group away, choosing none: every review rejected and every attempt's
    /// worktree removed; nothing lands. Only once every attempt has ended, so that no worktree
    /// goes from under a run (one in another process cannot be stopped from here). How many
    /// attempts it put away. `by`: the person, or nobody (the CLI's `--review reject`).
    pub fn reject_group(self: &Arc<Self>, group: &GroupId, by: DecidedBy) -> Result<usize> {
        let ranked = self.rank_group(group)?;
        if let Some(c) = &ranked.chosen {
            return Err(Error::AlreadyDecided(format!("this group's attempt {c} was already chosen")));
        }
        let running = ranked.ranking.iter().filter(|r| !r.evidence.ended).count();
        if running > 0 {
            return Err(Error::InvalidInput(format!("{running} of the attempts still running: cancel them first, then reject the group")));
        }
        if ranked.put_away {
            return Err(Error::AlreadyDecided("every attempt of this group is already rejected".into()));
        }
        let statuses: BTreeMap<SessionId, SessionStatus> = self.attempts(group)?.into_iter().map(|s| (s.id, s.status)).collect();
        let left: Vec<&AttemptEvidence> =
            ranked.ranking.iter().map(|r| &r.evidence).filter(|e| statuses.get(&e.session) != Some(&SessionStatus::Rejected)).collect();
        for a in &left {
            match &a.review {
                Some(_) => self.discard_attempt(a, EVERY_ATTEMPT_REJECTED, Some(DecisionOccasion::EveryAttemptRejected), by)?,
                None => {
                    // The decision first (a failed or cancelled attempt becomes rejected): a crash
                    // after it leaves a rejected session, whose worktree the start-up sweep removes.
                    self.store.append(&a.session, None, super::decision::status_event(SessionStatus::Rejected))?;
                    if let Some(wt) = current_worktree(&self.store.events(&a.session, 0)?) {
                        let kept = super::discard::keep_foreign_commits(&self.store, &a.session, &wt)?;
                        self.remove_worktree_soon(&a.session, &wt, WorktreeEnd::Rejected, kept.is_none());
                    }
                }
            }
        }
        Ok(left.len())
    }

    /// An attempt that was not chosen: its review rejected, its run stopped, its worktree gone.
    fn discard_attempt(self: &Arc<Self>, a: &AttemptEvidence, why: &str, occasion: Option<DecisionOccasion>, by: DecidedBy) -> Result<()> {
        if let Some(review) = &a.review {
            let mut choice = ReviewChoice::new(Decision::Reject, by);
            (choice.feedback, choice.occasion) = (Some(why.into()), occasion);
            self.decide_one(review, choice)?;
            return Ok(());
        }
        let (session, why) = (a.session.clone(), why.to_string());
        let running = !a.ended;
        if running {
            self.cancel(&session);
        }
        let (engine, store) = (self.clone(), self.store.clone());
        let job = std::thread::spawn(move || {
            // A cancelled run records its end within moments; its worktree goes after that.
            let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
            while engine.is_running(&session) && std::time::Instant::now() < until {
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            let Ok(events) = store.events(&session, 0) else { return };
            let seen = events.last().map_or(0, |e| e.seq);
            crate::fault::pause_at("attempt-set-aside");
            // The person may have sent it on since (here or in another process): once anything
            // happened to it, it is theirs, a task like any other, and nothing here touches it.
            if store.session(&session).map_or(true, |s| s.last_seq != seen) {
                return;
            }
            if let Ok(pending) = store.pending_requests(&session) {
                if let Some((review, _, _)) = pending.into_iter().find(|(_, kind, _)| kind == "review") {
                    let mut choice = ReviewChoice::new(Decision::Reject, by);
                    (choice.feedback, choice.occasion) = (Some(why), occasion);
                    let _ = engine.decide_one(&review, choice);
                    return;
                }
            }
            let put_away = super::decision::status_event(SessionStatus::Rejected);
            let Some(wt) = current_worktree(&events) else {
                // Nothing of it to remove: it is put away all the same, as the choice says.
                let _ = store.append_if_unchanged(&session, seen, vec![put_away]);
                return;
            };
            // Recorded before anything goes, and only if still nothing happened: a run started
            // after this sees the worktree gone and works in a new one.
            let kept = super::discard::branch_kept(&events, &wt);
            let delete_branch = kept.is_none();
            let removed = EngineEvent::WorktreeRemoved {
                folder: wt.folder.clone(),
                why: WorktreeEnd::Rejected,
                branch_deleted: delete_branch.then(|| wt.branch.clone()),
            };
            // Put away without a review, as rejecting the group puts such an attempt: left as
            // it was (cancelled, idle) it would still read as work kept to go on with.
            if matches!(store.append_if_unchanged(&session, seen, kept.into_iter().chain([put_away, removed]).collect()), Ok(true)) {
                super::decision::remove_recorded(&store, &engine.config.data_dir, &session, &wt, delete_branch);
            }
        });
        self.keep_background(job);
        Ok(())
    }
}

/// The words a review is rejected with when the person rejects the whole group; builds before
/// its occasion was recorded are read by them.
pub const EVERY_ATTEMPT_REJECTED: &str = "You rejected every attempt.";

/// The start of the error an attempt records when the choice of another could not put it away.
pub const NOT_PUT_AWAY: &str = "This attempt was not chosen, but could not be put away";

/// The group's attempts, in their order.
pub fn group_attempts(store: &Store, group: &GroupId) -> Result<Vec<SessionSummary>> {
    let mut list = store.list_sessions(&ListQuery { group: Some(group.clone()), limit: 64, ..Default::default() })?;
    if list.is_empty() {
        return Err(Error::NotFound(format!("attempt group {group}")));
    }
    list.sort_by_key(|s| s.attempt.as_ref().map(|a| a.number).unwrap_or(0));
    Ok(list)
}

/// The group ranked by the rule, from each attempt's last review; needs only the history.
pub fn rank_group(store: &Store, group: &GroupId) -> Result<GroupRanking> {
    Ok(standing(store, group)?.ranking)
}

/// The session's last review asked for, decided or not.
fn last_review(events: &[Envelope]) -> Option<RequestId> {
    events.iter().rev().find_map(|e| match &e.event {
        EngineEvent::ReviewRequested { review_id, .. } => Some(review_id.clone()),
        _ => None,
    })
}

/// A group's ranking with the evaluator's answers it used, and the model that gave each.
pub(super) struct Standing {
    pub ranking: GroupRanking,
    pub answers: Vec<(Comparison, String)>,
}

pub(super) fn standing(store: &Store, group: &GroupId) -> Result<Standing> {
    standing_with(store, group, &[])
}

/// [`standing`] as it will be once the attempts `stopping` (still at work) are stopped with no
/// review: what a choice made while they run records.
fn standing_with(store: &Store, group: &GroupId, stopping: &[SessionId]) -> Result<Standing> {
    let attempts = group_attempts(store, group)?;
    let mut evidence = Vec::new();
    let mut events = BTreeMap::new();
    for s in &attempts {
        let its = store.events(&s.id, 0)?;
        let mut e = attempt_evidence(s, &its, store.pending_requests(&s.id)?);
        // Read afresh: one that reached its review meanwhile is ranked on it. One sent back from
        // an earlier review keeps that review's evidence and end, as a stop would leave it.
        if stopping.contains(&s.id) && !e.ended {
            (e.ended, e.review) = (true, None);
            if !e.reviewed {
                e.end_reason = Some(EndReason::Cancelled);
            }
        }
        evidence.push(e);
        events.insert(s.id.clone(), its);
    }
    let mut all_ended = evidence.iter().all(|e| e.ended);
    let chosen = attempts.iter().find(|s| s.attempt.as_ref().is_some_and(|a| a.chosen)).map(|s| s.id.clone());
    let put_away = chosen.is_none() && attempts.iter().all(|s| s.status == SessionStatus::Rejected);
    if put_away && evidence.iter().all(|e| e.refused) {
        // Every one refused on its own (or the group put away by a build that did not tell the
        // two apart): the ranking still says which did best. One refused before the rest were
        // put away together stays out of the choice, as it was.
        evidence.iter_mut().for_each(|e| e.refused = false);
    }
    // The reviews an answer must have judged to hold: those waiting for the person; once the
    // group is decided, those it was decided on, so that what the evaluator said stays shown.
    let judged: BTreeMap<SessionId, RequestId> = if chosen.is_some() || put_away {
        events.iter().filter_map(|(s, its)| Some((s.clone(), last_review(its)?))).collect()
    } else {
        evidence.iter().filter_map(|e| Some((e.session.clone(), e.review.clone()?))).collect()
    };
    let answers = fresh_comparisons(&events, &judged);
    let comparison_tokens = spent_on_comparisons(&events);
    let mut ranking = ranking::rank(&evidence);
    comparison::apply(&mut ranking, &answers.iter().map(|(c, _)| c.clone()).collect::<Vec<_>>());
    if let Some(then) = chosen.as_ref().and_then(|c| ranking_chosen_from(events.get(c)?)) {
        // Decided: the standing the person chose from is the group's record. Rounds of its
        // attempts since (a follow-up of the one chosen, one passed over sent on) are each
        // session's own, and must not rank another above the choice after the fact. It was
        // recorded with every attempt ended (or stopped by the choice): a round at work now does
        // not unplace them.
        ranking = then;
        all_ended = true;
    }
    let base_branch = events.values().flatten().find_map(|e| match &e.event {
        EngineEvent::TaskWorkspace { worktree: Some(wt), .. } => wt.base_branch.clone(),
        _ => None,
    });
    let places = places(&ranking, all_ended);
    let ranking = GroupRanking {
        group: group.clone(),
        task: attempts[0].task.clone(),
        ranking,
        all_ended,
        chosen,
        put_away,
        comparison_tokens,
        base_branch,
        places,
        judge: None,
    };
    Ok(Standing { ranking, answers })
}

/// The ranking a choice records: only a whole one, every attempt ended or read as stopped by the
/// choice (before that no attempt has a place, and one still running would stay "running" in
/// the record).
fn recorded_ranking(r: &GroupRanking) -> Option<serde_json::Value> {
    r.all_ended.then(|| serde_json::to_value(&r.ranking).ok()).flatten()
}

/// The ranking recorded with the choice, its reviews decided; none when the choice recorded
/// none (by a build that recorded one only once every attempt had ended) or it no longer reads.
fn ranking_chosen_from(events: &[Envelope]) -> Option<Vec<Ranked>> {
    let mut then: Vec<Ranked> = events.iter().find_map(|e| match &e.event {
        EngineEvent::AttemptChosen { ranking: Some(r), .. } => serde_json::from_value(r.clone()).ok(),
        _ => None,
    })?;
    then.iter_mut().for_each(|r| r.evidence.review = None);
    Some(then)
}

/// The files the attempts changed, each as every attempt left it; those they left
/// differently first.
pub fn attempt_differences(store: &Store, group: &GroupId) -> Result<Vec<FileDifference>> {
    let attempts = group_attempts(store, group)?;
    let mut reviewed: Vec<(&SessionSummary, Vec<FileChange>)> = Vec::new();
    for s in &attempts {
        if let Some(files) = last_review_files(&store.events(&s.id, 0)?) {
            reviewed.push((s, files));
        }
    }
    let mut by_path: BTreeMap<String, Vec<(usize, &FileChange)>> = BTreeMap::new();
    for (i, (_, files)) in reviewed.iter().enumerate() {
        for f in files {
            by_path.entry(f.path.clone()).or_default().push((i, f));
        }
    }
    let mut out: Vec<FileDifference> = by_path
        .into_iter()
        .map(|(path, changes)| {
            let versions: Vec<FileVersion> = reviewed
                .iter()
                .enumerate()
                .map(|(i, (s, _))| {
                    let change = changes.iter().find(|(j, _)| *j == i).map(|(_, c)| *c);
                    FileVersion {
                        session: s.id.clone(),
                        label: label_of(s),
                        kind: change.map(|c| c.kind),
                        diff: change.map(|c| c.diff.clone()).unwrap_or_default(),
                    }
                })
                .collect();
            let results: Vec<Option<&FileState>> =
                reviewed.iter().enumerate().map(|(i, _)| changes.iter().find(|(j, _)| *j == i).and_then(|(_, c)| c.after.as_ref())).collect();
            let same = changes.len() == reviewed.len() && results.iter().all(|r| r.is_some() && *r == results[0]);
            FileDifference { path, same, versions }
        })
        .collect();
    out.sort_by_key(|d| d.same);
    Ok(out)
}

/// Labels for the attempts: the same agent twice is `Codex #1`, `Codex #2`.
fn labels(workers: &[Worker], builtin_model: &str) -> Vec<String> {
    let names: Vec<String> = workers.iter().map(|w| w.label(builtin_model)).collect();
    let mut seen: BTreeMap<&str, u32> = BTreeMap::new();
    names
        .iter()
        .map(|n| {
            if names.iter().filter(|m| *m == n).count() < 2 {
                return n.clone();
            }
            let k = seen.entry(n).or_insert(0);
            *k += 1;
            format!("{n} #{k}")
        })
        .collect()
}

fn label_of(s: &SessionSummary) -> String {
    s.attempt.as_ref().map(|a| a.label.clone()).unwrap_or_else(|| s.model.clone())
}

/// The files of the session's last review, as the review listed them.
pub(super) fn last_review_files(events: &[Envelope]) -> Option<Vec<FileChange>> {
    events.iter().rev().find_map(|e| match &e.event {
        EngineEvent::ReviewRequested { files_changed, .. } => Some(files_changed.iter().filter_map(|v| serde_json::from_value(v.clone()).ok()).collect()),
        _ => None,
    })
}

/// What an attempt spent on its own, by its first review.
#[derive(Debug, Clone, Copy, PartialEq)]
struct OwnCost {
    tokens: u64,
    cost_usd: Option<f64>,
    /// How long its runs were at work: from each run's start to its last event (a gap while
    /// the app was closed is nobody's time, nor a wait for a free place among the parallel
    /// tasks before a run started).
    active_ms: i64,
}

/// What an attempt spent on its own: its tokens, cost and time when it first came to review.
/// Rounds the person asked for after that are their doing, and the attempts are compared on the
/// task alone.
fn own_cost(events: &[Envelope]) -> Option<OwnCost> {
    let ms = |at: &str| chrono::DateTime::parse_from_rfc3339(at).map(|t| t.timestamp_millis()).ok();
    let mut runs: BTreeMap<&str, (i64, i64)> = BTreeMap::new();
    for env in events {
        if let (Some(run), Some(t)) = (&env.run_id, ms(&env.at)) {
            if matches!(env.event, EngineEvent::RunStarted { .. }) {
                runs.insert(run.0.as_str(), (t, t));
            } else if let Some(span) = runs.get_mut(run.0.as_str()) {
                span.1 = span.1.max(t);
            }
        }
        if let EngineEvent::ReviewRequested { tokens, cost_usd, .. } = &env.event {
            let active_ms = runs.values().map(|(start, end)| end - start).sum();
            return Some(OwnCost { tokens: tokens.agent + tokens.evaluator + tokens.compaction, cost_usd: *cost_usd, active_ms });
        }
    }
    None
}

/// What an attempt ended with: its last review's evidence, or only its end when it had none.
pub fn attempt_evidence(s: &SessionSummary, events: &[Envelope], pending: Vec<(RequestId, String, serde_json::Value)>) -> AttemptEvidence {
    let ended = !s.status.at_work();
    let review = pending.into_iter().find(|(_, kind, _)| kind == "review").map(|(id, _, _)| id);
    let mut e = AttemptEvidence {
        session: s.id.clone(),
        label: label_of(s),
        ended,
        end_reason: s.end_reason,
        review,
        reviewed: false,
        findings: 0,
        checks_passed: 0,
        checks_run: 0,
        evaluated: false,
        remaining: 0,
        diff_lines: 0,
        files: 0,
        cost_usd: None,
        tokens: s.tokens.agent + s.tokens.evaluator + s.tokens.compaction,
        wall_ms: s.duration_ms,
        error: None,
        held_back: None,
        // Rejected by the person themselves, on this attempt's own evidence: a reject that came
        // of choosing another, or of rejecting the whole group, has its occasion.
        refused: s.status == SessionStatus::Rejected && s.decision == Some(Decision::Reject) && s.occasion.is_none(),
    };
    let last = events.iter().rev().find_map(|env| match &env.event {
        EngineEvent::ReviewRequested { end_reason, remaining, files_changed, verification, cost_usd, audit, verdict, auto_approve, .. } => {
            Some((*end_reason, remaining, files_changed, verification, *cost_usd, audit.len(), verdict.is_some(), auto_approve))
        }
        _ => None,
    });
    if let Some((end_reason, remaining, files, verification, _, findings, evaluated, auto)) = last {
        e.reviewed = true;
        e.held_back = match auto {
            Some(a) if a.group_decides => None,
            Some(a) => Some(a.reason.clone()),
            None => Some("auto-approve is off".into()),
        };
        e.evaluated = evaluated;
        e.end_reason = Some(end_reason);
        e.remaining = remaining.len();
        e.files = files.len();
        e.diff_lines = files.iter().filter_map(|f| f.get("diff").and_then(|d| d.as_str())).map(ranking::diff_lines).sum();
        e.checks_run = verification.len();
        e.checks_passed = verification.iter().filter_map(|v| v.as_str()).filter(|v| v.lines().next().is_some_and(|l| l.ends_with(": exit 0"))).count();
        e.findings = findings;
        if let Some(own) = own_cost(events) {
            (e.tokens, e.cost_usd) = (own.tokens, own.cost_usd);
            // A history whose events name no run keeps the session's own count.
            if own.active_ms > 0 {
                e.wall_ms = own.active_ms;
            }
        }
    } else if ended {
        e.error = events.iter().rev().find_map(|env| match &env.event {
            EngineEvent::Error { message, .. } => Some(message.clone()),
            _ => None,
        });
    }
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    fn review(tokens: u64, cost: f64) -> Envelope {
        let event = serde_json::from_value(serde_json::json!({
            "type": "review_requested", "review_id": "r", "claim": "success", "end_reason": "verified_done",
            "remaining": [], "files_changed": [], "verification": [],
            "tokens": {"agent": tokens, "evaluator": 0, "compaction": 0}, "cost_usd": cost,
        }))
        .unwrap();
        Envelope { seq: 0, session_id: SessionId("s".into()), run_id: None, at: String::new(), event }
    }

    #[test]
    fn an_attempt_costs_what_it_took_to_reach_its_first_review_not_the_rounds_the_person_asked_for() {
        let changes = EngineEvent::ReviewResolved {
            review_id: RequestId("r".into()),
            decision: Decision::RequestChanges,
            by: DecidedBy::Person,
            feedback: Some("also b.txt".into()),
            reverted: false,
            occasion: None,
        };
        let events = [review(1_000, 0.01), Envelope { event: changes, ..review(0, 0.0) }, review(5_000, 0.05)];
        let spent = |events: &[Envelope]| own_cost(events).map(|o| (o.tokens, o.cost_usd));
        assert_eq!(spent(&events), Some((1_000, Some(0.01))), "the person's round of feedback is not counted against it");
        assert_eq!(spent(&events[2..]), Some((5_000, Some(0.05))));
        assert_eq!(own_cost(&[]), None, "no review: the session's own count stands");

        // What the ranking reads: the first review's cost beside the latest review's evidence.
        let summary = SessionSummary {
            id: SessionId("s".into()),
            title: "t".into(),
            task: "t".into(),
            workspace: "/ws".into(),
            provider: "openai".into(),
            model: "m".into(),
            status: SessionStatus::AwaitingReview,
            claim: None,
            verdict: None,
            end_reason: None,
            decision: None,
            occasion: None,
            created_at: String::new(),
            created_ms: 0,
            duration_ms: 0,
            updated_ms: 0,
            tokens: Tokens { agent: 9_000, evaluator: 0, compaction: 0 },
            last_seq: 0,
            plan_steps: 0,
            plan_done: 0,
            isolation: None,
            work_dir: None,
            branch: None,
            attempt: None,
            approvals: 0,
            audit_findings: 0,
            failure: None,
        };
        let evidence = attempt_evidence(&summary, &events, vec![]);
        assert_eq!((evidence.tokens, evidence.cost_usd, evidence.reviewed), (1_000, Some(0.01), true));
        assert_eq!(attempt_evidence(&summary, &[], vec![]).tokens, 9_000, "without a review, all it spent");
    }

    #[test]
    fn an_attempt_takes_the_time_its_runs_were_at_work_until_its_first_review() {
        let at = |run: &str, at: &str, event: serde_json::Value| Envelope {
            seq: 0,
            session_id: SessionId("s".into()),
            run_id: Some(RunId(run.into())),
            at: format!("2026-11-30T10:{at}.000Z"),
            event: serde_json::from_value(event).unwrap(),
        };
        let started = serde_json::json!({"type": "run_started", "trigger": "task"});
        let step = serde_json::json!({"type": "activity", "phase": "thinking", "detail": ""});
        let reviewed = |e: Envelope| Envelope { run_id: e.run_id.clone(), at: e.at.clone(), ..review(1_000, 0.01) };
        let events = [
            // Waiting for a free place among the parallel tasks is not work.
            at("a", "00:00", step.clone()),
            // A run cut short by a crash, resumed five minutes later, then the first review.
            at("a", "00:30", started.clone()),
            at("a", "00:31", step.clone()),
            at("b", "05:00", started.clone()),
            reviewed(at("b", "05:02", step.clone())),
            // The round the person asked for afterwards.
            at("c", "20:00", started),
            reviewed(at("c", "21:00", step)),
        ];
        assert_eq!(
            own_cost(&events).map(|o| o.active_ms),
            Some(3_000),
            "1 s before the crash and 2 s after it; not the wait for a place, the gap, nor the person's round"
        );
    }

    /// A ranked attempt: `rank`, why it is above the next (none: level by the rule), reviewed or
    /// not, refused by the person or not.
    fn ranked(rank: usize, above_next: Option<&str>, reviewed: bool, refused: bool) -> Ranked {
        let evidence = serde_json::from_value(serde_json::json!({
            "session": format!("s{rank}"), "label": format!("a{rank}"), "ended": true, "end_reason": "verified_done",
            "review": reviewed.then_some("r"), "reviewed": reviewed, "findings": 0, "checks_passed": 1, "checks_run": 1,
            "evaluated": true, "remaining": 0, "diff_lines": 2, "files": 1, "cost_usd": null, "tokens": 10, "wall_ms": 1,
            "error": null, "refused": refused,
        }))
        .unwrap();
        Ranked { rank, evidence, above_next: above_next.map(String::from), evaluator: None }
    }

    #[test]
    fn attempts_the_rule_finds_equal_share_a_place_and_those_without_one_read_a_dash() {
        let two_level = [ranked(1, None, true, false), ranked(2, None, true, false)];
        assert_eq!(places(&two_level, true), ["=1", "=1"]);
        assert_eq!(places(&two_level, false), ["–", "–"], "no place before every attempt has ended");
        let level_second = [ranked(1, Some("verified done"), true, false), ranked(2, None, true, false), ranked(3, None, true, false)];
        assert_eq!(places(&level_second, true), ["1", "=2", "=2"], "a 2 and a 3 would say an order the rule did not give");
        let then_refused = [ranked(1, None, true, false), ranked(0, None, true, true)];
        assert_eq!(places(&then_refused, true), ["1", "–"], "nothing is level with one the person refused");
        let then_unreviewed = [ranked(1, None, true, false), ranked(2, None, false, false)];
        assert_eq!(places(&then_unreviewed, true), ["1", "–"], "one with no work to land has no place");
    }

    #[test]
    fn attempts_are_named_agents_with_an_optional_count() {
        let w = parse_attempts("claude-code, codex,builtin*2").unwrap();
        assert_eq!(w.len(), 4);
        assert!(matches!(&w[0], Worker::External(a) if a.name == "claude-code"));
        assert_eq!((&w[2], &w[3]), (&Worker::Builtin { model: None }, &Worker::Builtin { model: None }));
        assert_eq!(parse_attempts("builtin:small,builtin:large").unwrap()[1], Worker::Builtin { model: Some("large".into()) });
        assert!(parse_attempts("builtin*0").is_err());
        assert!(parse_attempts("codex,,builtin").is_err());
        assert!(parse_attempts("*2").is_err());
    }

    #[test]
    fn the_same_agent_twice_is_told_apart_by_number() {
        let l = labels(&[Worker::from_choice("builtin"), Worker::from_choice("codex"), Worker::from_choice("builtin")], "m");
        assert_eq!(l, vec!["Finishline's agent (m) #1", "Codex", "Finishline's agent (m) #2"]);
    }
}
