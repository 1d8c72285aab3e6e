//! `finishline run TASK --attempts claude-code,codex,builtin`: one task by several agents (or
//! several tries), side by side in their own worktrees, judged the same way, ranked, and the best
//! one landed; `finishline sessions attempts GROUP` shows a group's ranking and lands the one
//! the person chooses.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use finishline_engine::agent::attempts::{parse_attempts, GroupRanking};
use finishline_engine::agent::{Engine, ReviewOutcome};
use finishline_engine::domain::*;
use finishline_engine::event::EngineEvent;
use finishline_engine::store::Store;
use serde_json::json;

use crate::output::{errln, humanln, outln};
use crate::run::{ask_permission, fail, fail_on, open, open_for, report_review, Again, Need, Opened};
use crate::sessions::{MIN_END, MIN_PREFIX};
use crate::typed::Typed;
use crate::{exit, ReviewMode, RunOptions};

/// Runs the attempts to their ends, prints the ranking, and decides as `--review` says:
/// `approve` lands the first when it is verified done with a clean audit, `reject` rejects them
/// all, `prompt` asks which to land (in a terminal; elsewhere they wait).
pub async fn run(task: String, spec: String, how: finishline_engine::agent::TaskOptions, opts: RunOptions) -> u8 {
    let json = opts.common.json;
    let workers = match parse_attempts(&spec) {
        Ok(w) => w,
        Err(e) => return fail_on(exit::USAGE, json, &e),
    };
    if opts.plan_review == crate::PlanReview::Prompt {
        return fail(
            exit::USAGE,
            json,
            "--plan-review prompt does not go with --attempts: every attempt would stop at its plan and wait, and the ranking needs them ended; let the plans run (the default, --plan-review approve)",
        );
    }
    let Opened { engine, store, mcp, interactive, .. } = match open(&opts) {
        Ok(o) => o,
        Err(code) => return code,
    };
    let (group, started) = match engine.start_attempts(&task, &opts.workspace, workers, how) {
        Ok(g) => g,
        Err(e) => return fail_on(if e.code() == finishline_engine::ErrorCode::InvalidInput { exit::USAGE } else { exit::FAILED }, json, &e),
    };
    let sessions: Vec<SessionId> = started.into_iter().map(|(s, _)| s).collect();
    engine.keep_alive();
    // Stopped by the person: nothing is decided for them afterwards, not even an attempt that
    // had reached its review before (`--review approve` would have landed it).
    let stopped = Arc::new(std::sync::atomic::AtomicBool::new(false));
    // Handed to the decision below: a signal that comes as it starts, before its landing
    // exists to be stopped, stops it too.
    let stop_deciding = finishline_engine::CancellationToken::new();
    {
        let (engine, stopped, all, stop_deciding) = (engine.clone(), stopped.clone(), sessions.clone(), stop_deciding.clone());
        tokio::spawn(async move {
            let Some(mut signals) = finishline_engine::stop_signals::StopSignals::listen() else { return };
            tokio::select! {
                _ = signals.next() => {}
                _ = crate::output::closed() => {}
            }
            stopped.store(true, std::sync::atomic::Ordering::SeqCst);
            stop_deciding.cancel();
            // What this terminal runs: an attempt sent on meanwhile from another terminal or the
            // window runs there, and the person stops it there.
            for s in all.iter().filter(|s| engine.is_running(s)) {
                engine.cancel(s);
            }
            // An attempt being landed (`--review approve`): its checks stop before anything moves.
            for s in &all {
                engine.stop_landing(s);
            }
            // The attempts wind down and the ranking is printed; a second signal, or a terminal
            // question that keeps them from ending, does not wait for that. A landing past the
            // point where it can be stopped finishes first.
            loop {
                tokio::select! {
                    _ = tokio::time::sleep(crate::run::STOP_GRACE * 3) => if !engine.deciding_now() { break },
                    _ = signals.next() => break,
                }
            }
            engine.config.processes.end_all();
            crate::output::say("finishline: stopped\n");
            std::process::exit(i32::from(exit::CANCELLED));
        });
    }
    let labels: HashMap<SessionId, String> =
        engine.attempts(&group).unwrap_or_default().into_iter().map(|s| (s.id.clone(), s.attempt.map(|a| a.label).unwrap_or(s.model))).collect();
    if json {
        outln!("{}", json!({"type": "attempts_started", "group": group, "sessions": sessions}));
    } else {
        // Its title, as the list shows it: a long task (or a file's worth) is not echoed whole.
        humanln!("{} attempts of “{}” side by side ({group}):", sessions.len(), finishline_engine::store::sessions::title_of(&task));
        for (i, s) in sessions.iter().enumerate() {
            let folder = store.session(s).ok().and_then(|x| x.work_dir).unwrap_or_default();
            humanln!(
                "  {}. {} — {s}{}",
                i + 1,
                labels.get(s).cloned().unwrap_or_default(),
                if folder.is_empty() { String::new() } else { format!(" in {folder}") }
            );
        }
    }
    // Each attempt's events, counted as a single run's are, for the summary that ends `--json`.
    let mut views: HashMap<SessionId, crate::view::View> = sessions.iter().map(|s| (s.clone(), crate::view::View::new(json, 0))).collect();
    follow_all(&engine, &store, &sessions, &labels, &opts, interactive, &mut views).await;
    let code = match engine.rank_group(&group) {
        Ok(ranking) => {
            print_ranking(&ranking, json);
            if stopped.load(std::sync::atomic::Ordering::SeqCst) {
                errln!("finishline: stopped, so nothing lands.");
                ways_on(&ranking);
                exit::CANCELLED
            } else {
                decide(&engine, &store, &ranking, &opts, interactive, &stop_deciding)
            }
        }
        Err(e) => fail_on(exit::FAILED, json, &e),
    };
    if let Some(m) = &mcp {
        m.stop_all().await;
    }
    // Whatever the attempts started and still runs ends with us.
    engine.config.processes.end_all();
    tokio::task::block_in_place(|| engine.settle());
    if json {
        for sid in &sessions {
            if let Some(v) = views.get_mut(sid) {
                v.summary(&store, sid);
            }
        }
    }
    code
}

/// Prints each attempt's events as they are stored (prefixed with who it is), answers or
/// refuses what they ask, and returns when none is running any more.
async fn follow_all(
    engine: &Arc<Engine>,
    store: &Arc<Store>,
    sessions: &[SessionId],
    labels: &HashMap<SessionId, String>,
    opts: &RunOptions,
    interactive: bool,
    views: &mut HashMap<SessionId, crate::view::View>,
) {
    let json = opts.common.json;
    let mut seen: HashMap<SessionId, u64> = sessions.iter().map(|s| (s.clone(), 0)).collect();
    let mut quiet_rounds = 0;
    loop {
        for sid in sessions {
            let after = seen[sid];
            let Ok(events) = store.events(sid, after) else { continue };
            for env in events {
                seen.insert(sid.clone(), env.seq);
                if json {
                    // Printed as a single run prints it, and counted for its summary.
                    if let Some(v) = views.get_mut(sid) {
                        v.show(&env);
                    }
                }
                let who = labels.get(sid).map(String::as_str).unwrap_or("");
                match &env.event {
                    EngineEvent::PermissionRequested { request_id, tool, input, .. } => {
                        let allowed = opts.allow.iter().any(|a| a == "all" || a == tool);
                        let d = if allowed {
                            Some(PermissionDecision::AllowOnce)
                        } else if interactive {
                            errln!("[{who}]");
                            ask_permission(&engine.store, sid, request_id, tool, input).await
                        } else {
                            Some(PermissionDecision::Deny)
                        };
                        // None: the attempt was cancelled elsewhere while it asked.
                        if let Some(d) = d {
                            let _ = engine.respond_permission(request_id, d);
                        }
                    }
                    // Attempts run side by side to the end, to be compared: with nobody to ask, a
                    // question is declined (and said), not left open as a single task's is.
                    EngineEvent::QuestionAsked { request_id, question, .. } => {
                        let answer = if interactive {
                            let q = format!("[{who}] The agent asks: {question}\nYour answer (empty to decline): ");
                            match crate::run::answer_at_terminal(&engine.store, sid, request_id, &q).await {
                                Some(answer) => answer,
                                None => continue,
                            }
                        } else {
                            // A declined question ends the attempt's run, idle: said, with the way on.
                            errln!(
                                "[{who}] the agent asks: {question}\n[{who}] nobody is at a terminal to answer, so it is declined and this attempt stops; `{}` answers it and goes on",
                                crate::hint::command(&format!("sessions resume {sid} \"your answer\""))
                            );
                            None
                        };
                        let _ = engine.answer_question(request_id, answer);
                    }
                    EngineEvent::ToolCall { state: ToolState::Denied, tool, kind, output: Some(why), .. } if why.contains("nobody to ask") => {
                        crate::output::say(&format!("[{who}] "));
                        crate::run::say_unasked(sid, tool, kind.as_deref());
                    }
                    _ if json => {}
                    EngineEvent::AgentConnected { name, version, .. } => humanln!("[{who}] connected: {} {}", name, version.as_deref().unwrap_or("")),
                    EngineEvent::Continuation { source, attempt, max, refused_claim, .. } => {
                        humanln!(
                            "[{who}] ↻ sent back by Finishline ({}, {attempt}/{max}){}",
                            source_words(*source),
                            if *refused_claim { ": it claimed done" } else { "" }
                        )
                    }
                    EngineEvent::Verification { command, exit_code, skipped: false, .. } => {
                        humanln!(
                            "[{who}] {} verify `{command}`: exit {}",
                            if *exit_code == Some(0) { "✓" } else { "✗" },
                            exit_code.map(|c| c.to_string()).unwrap_or("none".into())
                        )
                    }
                    EngineEvent::Evaluation { verdict, .. } => humanln!("[{who}] evaluator: {}", verdict.as_str()),
                    EngineEvent::ReviewRequested { end_reason, files_changed, .. } => {
                        humanln!("[{who}] ended {} · {} file(s) changed", end_reason.as_str(), files_changed.len())
                    }
                    EngineEvent::Error { message, .. } => humanln!("[{who}] error: {message}"),
                    EngineEvent::StatusChanged { status: status @ (SessionStatus::Failed | SessionStatus::Cancelled), message, .. } => {
                        humanln!("[{who}] {}{}", status.as_str(), message.as_ref().map(|m| format!(": {m}")).unwrap_or_default())
                    }
                    _ => {}
                }
            }
        }
        let running = sessions.iter().any(|s| engine.is_running(s) || store.session(s).is_ok_and(|x| x.status.is_running()));
        if !running {
            // Settled in the store and in this process; one more round prints the last events.
            quiet_rounds += 1;
            if quiet_rounds > 1 {
                break;
            }
        } else {
            quiet_rounds = 0;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn source_words(s: ContinuationSource) -> &'static str {
    match s {
        ContinuationSource::TodoGate => "todos still open",
        ContinuationSource::Verification => "verification failed",
        ContinuationSource::Evaluator => "the evaluator found work left",
        ContinuationSource::StepChecks => "the step's checks found work left",
        ContinuationSource::Truncation => "cut off",
        ContinuationSource::MissingCompletion => "no complete_task",
        ContinuationSource::MissingAction => "left undone",
        _ => "continuation",
    }
}

/// The ranking, with the rule and why each attempt is above the next.
pub fn print_ranking(r: &GroupRanking, json: bool) {
    if json {
        outln!("{}", json!({"type": "ranking", "ranking": r}));
        return;
    }
    outln!();
    humanln!(
        "Ranking (verified done first; then work to review, of changed files; no audit findings; more verification passing; fewer items left; a smaller diff; a lower cost, or fewer tokens without prices):"
    );
    if r.comparison_tokens > 0 {
        humanln!("  (asking the evaluator to compare them took {} tokens so far, not counted as the attempts' own)", r.comparison_tokens);
    }
    // Attempts the rule finds equal share a place, as the window shows them ("=2.").
    for (a, place) in r.ranking.iter().zip(&r.places) {
        let e = &a.evidence;
        let end = if e.ended { e.end_reason.map(|x| x.as_str()).unwrap_or("ended") } else { "still running" };
        // Refused in its own review: listed, with what it did, but no longer among the choices.
        let end = if e.refused { format!("{end}, rejected by you: out of the choice") } else { end.to_string() };
        let cost = e.cost_usd.map(|c| format!("${c:.4} · {} tokens", e.tokens)).unwrap_or_else(|| format!("{} tokens", e.tokens));
        let chosen = if r.chosen.as_ref() == Some(&e.session) { " · chosen" } else { "" };
        if e.ended && !e.reviewed {
            // No review: no evidence to show, only why. Its worktree stays: "no work to review"
            // read as nothing there, just above the command that removes the worktrees.
            // Until the group is decided: choosing one, or rejecting them all, removes the others' worktrees.
            let kept = if r.chosen.is_none() && !r.put_away { ": its worktree stays as it left it" } else { "" };
            humanln!("  {place}. {} — {end} before a review{kept}{chosen}", e.label);
            if let Some(error) = &e.error {
                humanln!("     {error}");
            }
            humanln!("     {}", e.session);
            continue;
        }
        let left = if e.evaluated { e.remaining.to_string() } else { "not judged".into() };
        humanln!(
            "  {place}. {} — {end} · audit findings {} · verification {}/{} · items left {left} · diff {} in {} · {cost} · {:.1} s{chosen}",
            e.label,
            e.findings,
            e.checks_passed,
            e.checks_run,
            crate::view::counted(e.diff_lines, "line"),
            crate::view::counted(e.files, "file"),
            e.wall_ms as f64 / 1000.0
        );
        humanln!("     {}", e.session);
        if let Some(why) = &a.above_next {
            humanln!("     above the next: {why}");
        }
        if let Some(w) = &a.evaluator {
            let verdict = match &w.prefers {
                Some(p) => format!("prefers {p}"),
                None if w.disagreed => "gave two answers that disagree".into(),
                None => "finds them equally good".into(),
            };
            humanln!("     the evaluator, shown {} first and {} second, {verdict}: {}", w.first, w.second, w.reason);
        }
    }
}

/// What the person can do with a group left undecided: land one that reached its review, go on
/// with one that did not (its worktree keeps whatever it wrote), or remove them all.
fn ways_on(r: &GroupRanking) {
    if r.ranking.iter().any(|a| a.evidence.review.is_some()) {
        errln!("  land one that reached its review with `{}`", choose_cmd(r));
    }
    let unreviewed: Vec<_> = r.ranking.iter().filter(|a| a.evidence.review.is_none()).collect();
    if !unreviewed.is_empty() {
        errln!("  Their worktrees keep whatever they wrote:");
    }
    for a in unreviewed {
        errln!("  {}: go on with `{}`", a.evidence.label, crate::hint::command(&format!("sessions resume {} \"what to do next\"", a.evidence.session)));
    }
    errln!("  or remove them all with `{}`", crate::hint::command(&format!("sessions attempts {} --reject", r.group)));
}

/// Whether the first attempt may land without asking: only as auto-approve would take it were
/// it a task alone (verified done, nothing found by the audit, no file .gitignore hides …);
/// else why not.
fn may_land_unasked(r: &GroupRanking) -> Result<&SessionId, String> {
    const NONE: &str = "no attempt is verified done with a clean audit";
    let top = r.ranking.first().ok_or(NONE)?;
    if !(top.rank == 1 && top.evidence.end_reason == Some(EndReason::VerifiedDone) && top.evidence.findings == 0 && top.evidence.review.is_some()) {
        return Err(NONE.into());
    }
    if let Some(why) = &top.evidence.held_back {
        return Err(format!("the first, {}, waits for you: {why}", top.evidence.label));
    }
    // Level with another ("=1"): landing either would be a guess the rule did not make.
    at_place(1, r).map(|_| &top.evidence.session)
}

fn decide(engine: &Arc<Engine>, store: &Store, r: &GroupRanking, opts: &RunOptions, interactive: bool, stop: &finishline_engine::CancellationToken) -> u8 {
    let json = opts.common.json;
    let land = opts.land.map(|l| l.mode());
    let choose = |sid: &SessionId, by: DecidedBy| -> u8 {
        let choice = finishline_engine::agent::ReviewChoice {
            landing: land,
            stop: Some(stop.clone()),
            ..finishline_engine::agent::ReviewChoice::new(Decision::Approve, by)
        };
        let aside = set_aside(store, sid);
        let outcome = tokio::task::block_in_place(|| engine.choose_attempt_with(&r.group, sid, choice));
        if json {
            match &outcome {
                Ok(o) => outln!("{}", json!({"type": "attempt_chosen", "session_id": sid, "outcome": o})),
                Err(e) => outln!("{}", serde_json::to_string(e).unwrap_or_default()),
            }
        }
        let code = match &outcome {
            Ok(ReviewOutcome::Decided { .. }) => exit::OK,
            Ok(_) => exit::WAITING,
            Err(_) => exit::FAILED,
        };
        if !json {
            say_set_aside(engine, store, aside, code == exit::OK);
            report_review(outcome, Again::Attempt(&r.group, sid));
        }
        code
    };
    if r.ranking.iter().all(|a| a.evidence.review.is_none()) {
        // Stopped (Ctrl+C) is a cancelled run, as a single task's is; what the attempts wrote is
        // still in their worktrees, so the way on is said, not "nothing to land".
        let cancelled = r.ranking.iter().any(|a| a.evidence.end_reason == Some(EndReason::Cancelled));
        errln!("finishline: no attempt reached a review: {} (see each session for why).", if cancelled { "they were stopped" } else { "each one failed" });
        ways_on(r);
        return if cancelled { exit::CANCELLED } else { exit::FAILED };
    }
    match opts.review {
        ReviewMode::Approve => match may_land_unasked(r) {
            Ok(sid) => choose(sid, DecidedBy::Auto),
            Err(why) => {
                errln!("finishline: {why}, so none lands without you: choose with `{}`", choose_cmd(r));
                exit::WAITING
            }
        },
        ReviewMode::Reject => {
            // Every attempt, with the worktrees of those that failed or were cancelled.
            // A dry run: nobody looked at the attempts.
            match tokio::task::block_in_place(|| engine.reject_group(&r.group, DecidedBy::Auto)) {
                Ok(n) => {
                    errln!("{n} attempts rejected and their worktrees removed; nothing landed.");
                    exit::REJECTED
                }
                // Not rejected: the attempts still wait, and saying "rejected" would hide it.
                Err(e) => fail_on(exit::FAILED, opts.common.json, &e),
            }
        }
        ReviewMode::Prompt if interactive => {
            crate::output::say(&format!("Land which attempt{}? [number, Enter to decide later]: ", on_base(r, engine)));
            // Chosen meanwhile from another terminal or the window, the question no longer stands.
            let waits = || r.ranking.iter().any(|a| store.pending_requests(&a.evidence.session).is_ok_and(|p| p.iter().any(|(_, k, _)| k == "review")));
            let answer = match crate::typed::line_unless_here(|| !waits()) {
                Typed::Line(a) => Some(a),
                Typed::Closed => None,
                Typed::Stopped => return chosen_elsewhere(store, r),
            };
            // A place as printed; one two attempts share names neither, and is said so.
            let at = answer.and_then(|a| a.trim().parse::<usize>().ok()).map(|k| at_place(k, r));
            if let Some(Err(why)) = &at {
                errln!("finishline: {why}");
            }
            match at {
                Some(Ok(sid)) => choose(&sid, DecidedBy::Person),
                _ => {
                    errln!("The attempts wait: `{}` lands one{}.", choose_cmd(r), on_base(r, engine));
                    exit::WAITING
                }
            }
        }
        ReviewMode::Prompt => {
            errln!("finishline: the attempts wait for your choice: `{}` lands one{}, or the window", choose_cmd(r), on_base(r, engine));
            exit::WAITING
        }
    }
}

/// The group was decided from another terminal or the window while this one asked which attempt
/// to land: said, and this ends as the group did.
fn chosen_elsewhere(store: &Store, r: &GroupRanking) -> u8 {
    let landed = r.ranking.iter().find(|a| store.session(&a.evidence.session).is_ok_and(|s| s.status == SessionStatus::Completed));
    match landed {
        Some(a) => {
            crate::output::say(&format!("\nChosen elsewhere (another terminal or the window): {}.\n", a.evidence.label));
            exit::OK
        }
        None => {
            crate::output::say("\nDecided elsewhere (another terminal or the window): no attempt was chosen.\n");
            exit::REJECTED
        }
    }
}

/// " on main": where choosing an attempt lands it (nothing from a detached HEAD, or when the
/// landing keeps its branch only).
fn on_base(r: &GroupRanking, engine: &Engine) -> String {
    match engine.config.tasks.landing {
        // Nothing lands: the chosen attempt's branch is kept.
        LandingMode::Branch => String::new(),
        _ => r.base_branch.as_deref().map(|b| format!(" on {b}")).unwrap_or_default(),
    }
}

/// `--choose N` as a rank: a number short enough to be one. A longer one is a session id's
/// start or end (the six characters a worktree shows may all be digits).
fn as_rank(choice: &str) -> Option<usize> {
    choice.parse::<usize>().ok().filter(|_| choice.len() < MIN_END)
}

/// The group's attempt a session id names: whole, by its start (with or without `ses_`, 8
/// characters or more) or by its end (6 or more, as its worktree and branch show it).
fn named_attempt(choice: &str, ids: &[&SessionId], group: &GroupId) -> Result<SessionId, String> {
    let start = if choice.starts_with("ses_") { choice.to_string() } else { format!("ses_{choice}") };
    let matching: Vec<&SessionId> = ids
        .iter()
        .copied()
        .filter(|id| {
            id.as_str() == choice
                || (choice.len() >= MIN_PREFIX && id.as_str().starts_with(&start))
                || (choice.chars().count() >= MIN_END && id.as_str().ends_with(choice))
        })
        .collect();
    match matching[..] {
        [one] => Ok(one.clone()),
        [] => Err(format!(
            "no attempt of this group is {choice}: `{}` shows them, each with its rank and session",
            crate::hint::command(&format!("sessions attempts {group}"))
        )),
        _ => Err(format!("{} attempts of this group match {choice}; give more of the session id, or its rank", matching.len())),
    }
}

/// The command that lands one of the group's attempts.
fn choose_cmd(r: &GroupRanking) -> String {
    crate::hint::command(&format!("sessions attempts {} --choose N", r.group))
}

/// `--choose K` where no attempt is ranked K: the ranks there are, and where to see them.
/// The attempt in place `k` as the ranking prints it, or why there is none to take: no such
/// place, or a place two attempts share (the rule finds them equal, so a number names neither).
fn at_place(k: usize, r: &GroupRanking) -> Result<SessionId, String> {
    let places = &r.places;
    let there: Vec<&SessionId> =
        r.ranking.iter().zip(places).filter(|(_, p)| p.trim_start_matches('=') == k.to_string()).map(|(a, _)| &a.evidence.session).collect();
    let shown = || format!("`{}` shows the ranking", crate::hint::command(&format!("sessions attempts {}", r.group)));
    match there.as_slice() {
        [one] => Ok((*one).clone()),
        [] => {
            let mut placed: Vec<&str> = places.iter().map(String::as_str).filter(|p| *p != "–").collect();
            placed.dedup();
            let what = if placed.is_empty() {
                "none has a place until every attempt has ended with work to land".to_string()
            } else {
                format!("the places now are {}; choose an attempt by its place, or by its session id", placed.join(", "))
            };
            Err(format!("there is no attempt in place {k}: {what}; {}", shown()))
        }
        tied => Err(format!(
            "{} attempts share place {k} (the rule finds them equal): choose one by its session id ({}), or let the evaluator order them with `{}`",
            tied.len(),
            tied.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", "),
            crate::hint::command(&format!("sessions attempts {} --compare", r.group))
        )),
    }
}

/// `finishline sessions attempts GROUP [--choose N|SESSION | --cancel | --reject | --compare]`.
pub async fn group(group: String, choose: Option<String>, cancel: bool, reject: bool, compare: bool, opts: RunOptions) -> u8 {
    let json = opts.common.json;
    // Comparing asks the evaluator model; the rest only records decisions.
    let Opened { engine, store, .. } = match open_for(&opts, if compare { Need::Model } else { Need::Decision }) {
        Ok(o) => o,
        Err(code) => return code,
    };
    let group = GroupId(group);
    if cancel {
        return tokio::task::block_in_place(|| crate::cancel::group(&engine, &store, &group, json));
    }
    if reject {
        let outcome = tokio::task::block_in_place(|| engine.reject_group(&group, DecidedBy::Person));
        tokio::task::block_in_place(|| engine.settle());
        return match outcome {
            // Rejected, as `sessions review --reject` and `run --review reject` say it (exit 3).
            Ok(n) => {
                errln!("{n} attempts rejected and their worktrees removed; nothing landed.");
                exit::REJECTED
            }
            Err(e) => fail_on(exit::USAGE, json, &e),
        };
    }
    if compare {
        // Ctrl+C (or a SIGTERM) stops the evaluator: the pairs it answered are kept and shown.
        let stop = finishline_engine::CancellationToken::new();
        let on_signal = tokio::spawn({
            let stop = stop.clone();
            async move {
                let Some(mut signals) = finishline_engine::stop_signals::StopSignals::listen() else { return };
                tokio::select! {
                    _ = signals.next() => {}
                    _ = crate::output::closed() => {}
                }
                stop.cancel();
            }
        });
        let outcome = engine.compare_attempts(&group, &stop).await;
        on_signal.abort();
        return match outcome {
            Ok(c) if stop.is_cancelled() => {
                print_ranking(&c.ranking, json);
                errln!("Stopped: the evaluator's answers given before it was stopped are kept; `--compare` asks about the rest.");
                exit::CANCELLED
            }
            Ok(c) => {
                print_ranking(&c.ranking, json);
                if c.asked == 0 {
                    errln!(
                        "Each pair already has {}'s answer, and asked again it would answer the same: another evaluator model (--evaluator-model) gives its own.",
                        c.model
                    );
                }
                exit::OK
            }
            // Asked at the wrong moment (still running, decided, too few) is a usage error; an
            // evaluator that could not answer is a failure.
            Err(e) => fail(
                if matches!(e.code(), finishline_engine::ErrorCode::InvalidInput | finishline_engine::ErrorCode::AlreadyDecided) {
                    exit::USAGE
                } else {
                    exit::FAILED
                },
                json,
                &e.to_string(),
            ),
        };
    }
    let ranking = match engine.rank_group(&group) {
        Ok(r) => r,
        Err(e) => return fail_on(exit::USAGE, json, &e),
    };
    let Some(choice) = choose else {
        print_ranking(&ranking, json);
        return exit::OK;
    };
    let sid = match as_rank(&choice) {
        Some(k) => match at_place(k, &ranking) {
            Ok(sid) => sid,
            Err(why) => return fail(exit::USAGE, json, &why),
        },
        None => match named_attempt(&choice, &ranking.ranking.iter().map(|a| &a.evidence.session).collect::<Vec<_>>(), &ranking.group) {
            Ok(sid) => sid,
            Err(why) => return fail(exit::USAGE, json, &why),
        },
    };
    // Ctrl+C (or a SIGTERM) while the chosen attempt lands stops its checks before anything moves.
    let (on_signal, stop) = crate::run::stop_landing_on_signal(engine.clone(), sid.clone());
    let choice = finishline_engine::agent::ReviewChoice {
        landing: opts.land.map(|l| l.mode()),
        stop: Some(stop),
        ..finishline_engine::agent::ReviewChoice::new(Decision::Approve, DecidedBy::Person)
    };
    let aside = set_aside(&store, &sid);
    let outcome = tokio::task::block_in_place(|| engine.choose_attempt_with(&group, &sid, choice));
    on_signal.abort();
    if json {
        crate::run::print_outcome(&outcome);
    }
    let code = match &outcome {
        Ok(ReviewOutcome::Decided { .. }) => exit::OK,
        Ok(_) => exit::WAITING,
        Err(e)
            if matches!(
                e.code(),
                finishline_engine::ErrorCode::InvalidInput | finishline_engine::ErrorCode::NotFound | finishline_engine::ErrorCode::AlreadyDecided
            ) =>
        {
            exit::USAGE
        }
        Err(_) => exit::FAILED,
    };
    if !json {
        say_set_aside(&engine, &store, aside, code == exit::OK);
        report_review(outcome, Again::Attempt(&group, &sid));
    }
    tokio::task::block_in_place(|| engine.settle());
    code
}

/// What choosing an attempt sets aside: the group's other attempts not rejected already, whose
/// worktrees go with the choice, each with where its history stood before it.
pub(crate) struct SetAside {
    chosen: String,
    others: Vec<(SessionId, String, u64)>,
}

/// What choosing `sid` would set aside, read before the choice. None when `sid` is no attempt of
/// a group still open (approving one continued after the choice chooses nothing).
pub(crate) fn set_aside(store: &Store, sid: &SessionId) -> Option<SetAside> {
    let me = store.session(sid).ok()?;
    let mine = me.attempt.as_ref().filter(|a| !a.group_chosen)?;
    let others = finishline_engine::agent::attempts::group_attempts(store, &mine.group)
        .ok()?
        .into_iter()
        .filter(|s| &s.id != sid && s.status != SessionStatus::Rejected)
        .map(|s| (s.id, s.attempt.map(|a| a.label).unwrap_or(s.model), s.last_seq))
        .collect();
    Some(SetAside { chosen: mine.label.clone(), others })
}

/// A set-aside attempt's branch that was kept when its worktree went: the person's commits there
/// (or what they asked) are not removed with it, and the words must not say they were.
struct KeptBranch {
    branch: String,
    why: finishline_engine::domain::BranchKeptWhy,
    files: Vec<String>,
}

/// What became of one attempt the choice set aside, read from its history once it is done.
enum AsideEnd {
    /// Its worktree removed, and its branch with it unless kept.
    Removed(Option<KeptBranch>),
    /// Nothing of it was removed: it had no worktree, or the person sent it on meanwhile (it is
    /// theirs then, a task like any other).
    Untouched,
    /// Putting it away failed, for this reason; it stays as it was.
    Failed(String),
}

/// What the choice set aside, in words: the others, whose worktrees went (only those), each
/// branch kept rather than removed, any that could not be put away, and those that had no review
/// to choose from (`unreviewed`: they may have written nothing).
fn set_aside_words(chosen: &str, ends: &[(String, AsideEnd)], unreviewed: &[&str]) -> String {
    let aside: Vec<&str> = ends.iter().filter(|(_, e)| !matches!(e, AsideEnd::Failed(_))).map(|(l, _)| l.as_str()).collect();
    let removed: Vec<&str> = ends.iter().filter(|(_, e)| matches!(e, AsideEnd::Removed(_))).map(|(l, _)| l.as_str()).collect();
    let kept: Vec<(&str, &KeptBranch)> =
        ends.iter().filter_map(|(l, e)| if let AsideEnd::Removed(Some(k)) = e { Some((l.as_str(), k)) } else { None }).collect();
    let what = if removed.iter().any(|l| unreviewed.contains(l)) { "anything" } else { "what" };
    let with = match (kept.is_empty(), removed.len()) {
        (true, 1) => format!(", with {what} it wrote"),
        (true, _) => format!(", with {what} they wrote"),
        (false, _) => String::new(),
    };
    let and_list = finishline_engine::and_list::and_list;
    let mut said = format!("Chose {chosen}");
    if !aside.is_empty() {
        said.push_str(&format!("; {} {} set aside", and_list(&aside), if aside.len() == 1 { "was" } else { "were" }));
        match (removed.len(), removed.len() == aside.len()) {
            (0, _) => {}
            (1, true) => said.push_str(&format!(" and its worktree removed{with}")),
            (_, true) => said.push_str(&format!(" and their worktrees removed{with}")),
            (1, false) => said.push_str(&format!("; the worktree of {} was removed{with}", removed[0])),
            (_, false) => said.push_str(&format!("; the worktrees of {} were removed{with}", and_list(&removed))),
        }
    }
    said.push('.');
    for (label, k) in kept {
        let whose = if aside.len() == 1 { "Its".to_string() } else { format!("{label}'s") };
        let files = if k.files.is_empty() { String::new() } else { format!(" ({})", crate::run::few(&k.files)) };
        said.push_str(&format!(" {whose} branch {} is kept{}{files}.", k.branch, k.why.words()));
    }
    for (label, e) in ends {
        if let AsideEnd::Failed(why) = e {
            said.push_str(&format!(" {label} could not be put away, and stays as it was: {why}."));
        }
    }
    said.push_str(&discarded_words(unreviewed));
    said
}

/// What became of `sid` since `seen`, as its history says.
fn aside_end(store: &Store, sid: &SessionId, seen: u64) -> AsideEnd {
    let events = store.events(sid, seen).unwrap_or_default();
    let kept = events.iter().rev().find_map(|e| match &e.event {
        EngineEvent::BranchKept { branch, files, why } => Some(KeptBranch { branch: branch.clone(), why: *why, files: files.clone() }),
        _ => None,
    });
    if events.iter().any(|e| matches!(e.event, EngineEvent::WorktreeRemoved { .. })) {
        return AsideEnd::Removed(kept);
    }
    let failed = events.iter().rev().find_map(|e| match &e.event {
        EngineEvent::Error { message, .. } => {
            message.strip_prefix(finishline_engine::agent::attempts::NOT_PUT_AWAY).map(|m| m.trim_start_matches(": ").to_string())
        }
        _ => None,
    });
    failed.map_or(AsideEnd::Untouched, AsideEnd::Failed)
}

/// [`set_aside`], said once the choice was made and what it set aside is done with (`settle`
/// waits for the worktrees that go in the background).
pub(crate) fn say_set_aside(engine: &Engine, store: &Store, aside: Option<SetAside>, decided: bool) {
    let Some(aside) = aside.filter(|_| decided) else { return };
    tokio::task::block_in_place(|| engine.settle());
    let ends: Vec<(String, AsideEnd)> = aside.others.iter().map(|(sid, label, seen)| (label.clone(), aside_end(store, sid, *seen))).collect();
    // Put away with no review of theirs, as `sessions list` tags them (the window's Discarded):
    // not among those not chosen, whose review the person passed over.
    let discarded: Vec<&str> =
        aside.others.iter().filter(|(sid, _, _)| store.session(sid).is_ok_and(|s| s.put_away_unreviewed())).map(|(_, label, _)| label.as_str()).collect();
    errln!("{}", set_aside_words(&aside.chosen, &ends, &discarded));
}

/// Those set aside that had no review to choose from, in words ("" when none).
fn discarded_words(labels: &[&str]) -> String {
    match labels {
        [] => String::new(),
        [one] => format!(" {one} had no review to choose from: it was put away without one."),
        many => format!(" {} had no review to choose from: they were put away without one.", finishline_engine::and_list::and_list(many)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_words_of_a_choice_say_only_what_went_and_name_what_stayed() {
        let removed = |l: &str| (l.to_string(), AsideEnd::Removed(None));
        assert_eq!(set_aside_words("a", &[], &[]), "Chose a.");
        assert_eq!(
            set_aside_words("a", &[removed("b"), removed("c")], &[]),
            "Chose a; b and c were set aside and their worktrees removed, with what they wrote."
        );
        let kept = KeptBranch { branch: "finishline/c".into(), why: BranchKeptWhy::ChangedAfterTask, files: vec!["mine.txt".into()] };
        let said = set_aside_words("a", &[removed("b"), ("c".into(), AsideEnd::Removed(Some(kept)))], &[]);
        assert!(said.starts_with("Chose a; b and c were set aside and their worktrees removed. c's branch finishline/c is kept: it holds work"), "{said}");
        assert!(said.ends_with(" (mine.txt)."), "{said}");
        // No worktree to remove (or sent on meanwhile): set aside, and nothing said to be gone.
        assert_eq!(set_aside_words("a", &[("b".into(), AsideEnd::Untouched)], &[]), "Chose a; b was set aside.");
        assert_eq!(
            set_aside_words("a", &[removed("b"), ("c".into(), AsideEnd::Untouched)], &[]),
            "Chose a; b and c were set aside; the worktree of b was removed, with what it wrote."
        );
        assert_eq!(
            set_aside_words("a", &[removed("b"), ("c".into(), AsideEnd::Failed("disk full".into()))], &[]),
            "Chose a; b was set aside and its worktree removed, with what it wrote. c could not be put away, and stays as it was: disk full."
        );
    }

    #[test]
    fn those_set_aside_with_no_review_are_named_as_put_away_without_one() {
        assert_eq!(discarded_words(&[]), "");
        assert_eq!(discarded_words(&["b"]), " b had no review to choose from: it was put away without one.");
        assert_eq!(discarded_words(&["b", "c"]), " b and c had no review to choose from: they were put away without one.");
        // It may have written nothing: its worktree went with anything it wrote.
        assert_eq!(
            set_aside_words("a", &[("b".into(), AsideEnd::Removed(None))], &["b"]),
            "Chose a; b was set aside and its worktree removed, with anything it wrote. b had no review to choose from: it was put away without one."
        );
    }

    #[test]
    fn a_short_number_is_a_rank_and_a_session_ids_end_of_digits_is_that_session() {
        assert_eq!(as_rank("2"), Some(2));
        assert_eq!(as_rank("402913"), None, "six digits: the end of a session id");
        let (a, b) = (SessionId("ses_01a2b3c4d5e6f7a8b9c0d1e2f3402913".into()), SessionId("ses_01a2b3c4d5e6f7a8b9c0d1e2f3abcdef".into()));
        let group = GroupId("grp_1".into());
        assert_eq!(named_attempt("402913", &[&a, &b], &group), Ok(a.clone()));
        assert_eq!(
            named_attempt("01a2b3c4d5", &[&a, &b], &group).unwrap_err(),
            "2 attempts of this group match 01a2b3c4d5; give more of the session id, or its rank"
        );
        assert!(named_attempt("999999", &[&a, &b], &group).unwrap_err().starts_with("no attempt of this group is 999999"));
    }
}
