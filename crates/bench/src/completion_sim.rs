//! Completion efficiency: the same scenarios, the same simulated agent, four stop policies.
//! Finishline's is the real, pure `completion::decide`; the three baselines are the policies the
//! seed projects used. The simulated agent is written down here and in docs/benchmarks.md, and
//! it reacts the way the seeds report agents reacting:
//! - each model call does at most one item of the task (a tool call), in order;
//! - a continuation that names missing items makes it do those items;
//! - a generic reminder ("call complete_task", "are you done?") gets another "Done!" and no work;
//! - on the calls the scenario says, its output is cut off (no work, no claim);
//! - where the scenario says, it claims success early, after k of n items;
//! - an item it cannot do it reports as blocked if the scenario says it is honest, else it claims
//!   success anyway.
//!
//! The evaluator in Finishline's runs is modelled as accurate (it lists exactly the undone items).

use finishline_engine::domain::{Claim, ContinuationSource, EndReason, Todo, TodoStatus, Verdict};
use finishline_engine::judge::completion::{
    decide, Action, ClaimEvidence, CompletionConfig, Counters, EvaluationOutcome, Evidence, StepEnd, VerificationFailure, VerificationOutcome,
};
use finishline_engine::judge::evaluator::{build_request, digest, EvaluatorInput};
use finishline_engine::provider::{ChatMessage, StopReason, StructuredMode};

use crate::report::Table;

/// A completion policy run over a scenario.
type Policy = Box<dyn Fn(&Scenario) -> Outcome>;

#[derive(Clone, Default)]
pub(crate) struct Scenario {
    pub(crate) name: &'static str,
    pub(crate) items: usize,
    /// Claims success after this many items (early), once.
    pub(crate) claims_after: Option<usize>,
    /// 1-based agent calls whose output is cut off.
    pub(crate) truncate_at: Vec<u32>,
    pub(crate) uses_todos: bool,
    /// This item cannot be done.
    pub(crate) impossible: Option<usize>,
    pub(crate) honest_blocked: bool,
    /// Says "Done!" in text and never calls complete_task.
    pub(crate) text_only_claim: bool,
    /// A bug only the tests catch, fixed when the failure is shown.
    pub(crate) hidden_bug: bool,
    /// A question, not work.
    pub(crate) conversation: bool,
    /// The model's window in tokens: a call whose conversation is longer is cut off (context
    /// pressure: a long single run fills it; a plan's fresh step conversations do not).
    pub(crate) context_limit: Option<u64>,
    /// This item's first attempt does not stick (a tool error, a wrong edit): it needs a retry.
    pub(crate) retry_item: Option<usize>,
}

fn scenarios() -> Vec<Scenario> {
    let s = Scenario::default;
    vec![
        Scenario { name: "honest, 3 items", items: 3, ..s() },
        Scenario { name: "claims success after 2 of 4", items: 4, claims_after: Some(2), ..s() },
        Scenario { name: "claims success after 1 of 3, with todos", items: 3, claims_after: Some(1), uses_todos: true, ..s() },
        Scenario { name: "cut off mid-task", items: 3, truncate_at: vec![2], ..s() },
        Scenario { name: "cut off twice", items: 4, truncate_at: vec![2, 4], ..s() },
        Scenario { name: "cut off in the final answer", items: 2, truncate_at: vec![3], ..s() },
        Scenario { name: "blocked, says so", items: 3, impossible: Some(2), honest_blocked: true, ..s() },
        Scenario { name: "blocked, claims success", items: 3, impossible: Some(2), ..s() },
        Scenario { name: "done, says Done! without complete_task", items: 2, text_only_claim: true, ..s() },
        Scenario { name: "a question, answered", conversation: true, ..s() },
        Scenario { name: "tests fail after all items", items: 2, hidden_bug: true, ..s() },
        Scenario { name: "long task, claims after 7 of 10", items: 10, claims_after: Some(7), ..s() },
        Scenario { name: "early claim and cut off", items: 5, claims_after: Some(3), truncate_at: vec![2], ..s() },
    ]
}

/// What the policy sends the agent next.
#[derive(Clone, Debug, PartialEq)]
enum Prompt {
    Task,
    /// No new message: the loop calls again after tool results.
    Next,
    Truncation,
    Named(Vec<usize>),
    Generic,
    VerificationFailed,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Turn {
    Work,
    Stop { claim: Option<Claim>, truncated: bool },
}

pub(crate) struct Agent<'a> {
    sc: &'a Scenario,
    pub(crate) done: Vec<bool>,
    /// The items this conversation works on (a plan step's); all when `None`.
    scope: Option<Vec<usize>>,
    /// Calls in the current conversation: a plan step starts a fresh one.
    conv_calls: u32,
    retried: bool,
    bug_fixed: bool,
    claimed_early: bool,
    /// Named items it is working through.
    named: Vec<usize>,
    pub(crate) calls: u32,
    pub(crate) input_tokens: u64,
    pub(crate) output_tokens: u64,
    /// Calls that moved nothing forward (see [`Outcome::wasted_calls`]).
    wasted: u32,
    /// The last call was a stop that counts as wasted if another call follows it in the same
    /// conversation (it was sent back), and not if it ends the conversation.
    stop_pending: bool,
}

impl<'a> Agent<'a> {
    pub(crate) fn new(sc: &'a Scenario) -> Self {
        Agent {
            sc,
            done: vec![false; sc.items],
            scope: None,
            conv_calls: 0,
            retried: false,
            bug_fixed: !sc.hidden_bug,
            claimed_early: false,
            named: vec![],
            calls: 0,
            input_tokens: 0,
            output_tokens: 0,
            wasted: 0,
            stop_pending: false,
        }
    }
    /// A plan step: a fresh conversation about these items only.
    pub(crate) fn fresh(&mut self, scope: Vec<usize>) {
        // The last step's final answer ended its conversation: it was its answer, not waste.
        self.stop_pending = false;
        self.scope = Some(scope);
        self.conv_calls = 0;
        self.named.clear();
    }
    pub(crate) fn complete(&self) -> bool {
        self.done.iter().all(|d| *d) && self.bug_fixed
    }
    pub(crate) fn undone(&self) -> Vec<usize> {
        (0..self.sc.items).filter(|i| !self.done[*i] && self.scope.as_ref().is_none_or(|s| s.contains(i))).collect()
    }
    /// Items not done anywhere in the task, whatever the scope.
    pub(crate) fn all_undone(&self) -> Vec<usize> {
        (0..self.sc.items).filter(|i| !self.done[*i]).collect()
    }
    pub(crate) fn possible(&self, i: usize) -> bool {
        self.sc.impossible != Some(i)
    }
    /// Marks an item done, except the first attempt at the item that needs a retry.
    fn attempt(&mut self, i: usize) {
        if self.sc.retry_item == Some(i) && !self.retried {
            self.retried = true;
        } else {
            self.done[i] = true;
        }
    }
    fn final_claim(&self) -> Claim {
        if self.undone().iter().any(|i| !self.possible(*i)) && self.sc.honest_blocked {
            Claim::Blocked
        } else {
            Claim::Success
        }
    }
    fn call(&mut self, prompt: &Prompt) -> Turn {
        self.calls += 1;
        self.conv_calls += 1;
        if std::mem::take(&mut self.stop_pending) {
            self.wasted += 1;
        }
        // The history grows with every call of a conversation; each call reads all of it.
        let history = 1_500 + 400 * (self.conv_calls as u64 - 1);
        self.input_tokens += history;
        if self.sc.context_limit.is_some_and(|l| history > l) {
            self.output_tokens += 80;
            // Cut off by the full window, not by the scenario: nothing of it is kept.
            self.wasted += 1;
            return Turn::Stop { claim: None, truncated: true };
        }
        let before = (self.done.iter().filter(|d| **d).count(), self.bug_fixed, self.retried);
        let turn = self.turn(prompt);
        self.output_tokens += if turn == Turn::Work { 250 } else { 80 };
        match turn {
            // Work counts when it did an item, fixed the bug, or was the retry item's first
            // attempt (which the scenario makes necessary).
            Turn::Work if before == (self.done.iter().filter(|d| **d).count(), self.bug_fixed, self.retried) => self.wasted += 1,
            Turn::Work => {}
            // A cut-off the scenario scripts is necessary; continuing it is the engine's job.
            Turn::Stop { truncated: true, .. } => {}
            Turn::Stop { truncated: false, .. } => self.stop_pending = true,
        }
        turn
    }
    fn turn(&mut self, prompt: &Prompt) -> Turn {
        if self.sc.truncate_at.contains(&self.calls) {
            return Turn::Stop { claim: None, truncated: true };
        }
        if self.sc.conversation {
            return Turn::Stop { claim: None, truncated: false };
        }
        match prompt {
            Prompt::Generic => return Turn::Stop { claim: Some(Claim::Success), truncated: false },
            Prompt::Named(items) => self.named = items.iter().copied().filter(|i| !self.done[*i]).collect(),
            Prompt::VerificationFailed => {
                self.bug_fixed = true;
                return Turn::Work;
            }
            _ => {}
        }
        // Named items first, then its own plan.
        while let Some(&i) = self.named.first() {
            if self.done[i] || !self.possible(i) {
                self.named.remove(0);
                continue;
            }
            self.attempt(i);
            if self.done[i] {
                self.named.remove(0);
            }
            return Turn::Work;
        }
        let done_count = self.done.iter().filter(|d| **d).count();
        if let Some(k) = self.sc.claims_after {
            if done_count >= k && !self.claimed_early && !self.complete() {
                self.claimed_early = true;
                return Turn::Stop { claim: Some(Claim::Success), truncated: false };
            }
        }
        if let Some(i) = self.undone().into_iter().find(|i| self.possible(*i)) {
            // After an early claim it waits to be told; its own plan stopped there.
            if !self.claimed_early {
                self.attempt(i);
                // A failed first attempt looks done to the agent: it moves on.
                if !self.done[i] {
                    self.named.retain(|n| *n != i);
                }
                return Turn::Work;
            }
        }
        Turn::Stop { claim: Some(self.final_claim()), truncated: false }
    }
}

#[derive(Default, Clone)]
pub(crate) struct Outcome {
    pub(crate) declared_complete: bool,
    pub(crate) actually_complete: bool,
    pub(crate) agent_calls: u32,
    pub(crate) evaluator_calls: u32,
    pub(crate) manager_calls: u32,
    pub(crate) tokens: u64,
    /// Agent calls that moved nothing forward: an answer cut off by a full window, work that
    /// did no item, and a stop that was sent back (followed by another call in the same
    /// conversation). A conversation's final answer is not waste, nor is a cut-off or retry
    /// that the scenario scripts.
    pub(crate) wasted_calls: u32,
    /// Agent calls beyond what one ideal single run of the scenario needs (net: a run that
    /// gives up early scores as cheap), kept beside `wasted_calls` for comparison.
    pub(crate) beyond_ideal: u32,
}

/// The agent calls an ideal single run needs: one per doable item (two for the one that needs
/// a retry), one per fix and per cut-off output, one final answer.
fn necessary_calls(sc: &Scenario) -> u32 {
    if sc.conversation {
        return 1;
    }
    let possible = (0..sc.items).filter(|i| sc.impossible != Some(*i)).count() as u32;
    possible + u32::from(sc.retry_item.is_some()) + u32::from(sc.hidden_bug) + 1 + sc.truncate_at.len() as u32
}

pub(crate) fn finish(sc: &Scenario, a: &Agent, declared_complete: bool, evaluator_calls: u32, evaluator_tokens: u64) -> Outcome {
    let actually_complete = if sc.conversation { true } else { a.complete() };
    Outcome {
        declared_complete,
        actually_complete,
        agent_calls: a.calls,
        evaluator_calls,
        manager_calls: 0,
        tokens: a.input_tokens + a.output_tokens + evaluator_tokens,
        wasted_calls: a.wasted,
        beyond_ideal: a.calls.saturating_sub(necessary_calls(sc)),
    }
}

/// How one run under the completion engine ended.
pub(crate) struct Ended {
    pub(crate) end: EndReason,
    pub(crate) eval_calls: u32,
    pub(crate) eval_tokens: u64,
}

const MAX_CALLS: u32 = 80;

/// Finishline: the real decision function over the simulated evidence.
fn finishline(sc: &Scenario) -> Outcome {
    let mut a = Agent::new(sc);
    let e = engine_loop(&mut a, sc, false);
    let declared = matches!(e.end, EndReason::VerifiedDone | EndReason::Conversation);
    finish(sc, &a, declared, e.eval_calls, e.eval_tokens)
}

/// One run (or one plan step) under the real `completion::decide`. `checked`: a plan step whose
/// criteria (its items done) are checked without a model, as `plan::checks` reads "x exists":
/// the step ends as soon as a tool step made them hold, and a stop is judged without the
/// evaluator.
pub(crate) fn engine_loop(a: &mut Agent, sc: &Scenario, checked: bool) -> Ended {
    let cfg = CompletionConfig::default();
    let mut counters = Counters::default();
    let mut prompt = Prompt::Task;
    let mut prev_tools = false;
    let mut previous_remaining: Option<Vec<String>> = None;
    let mut prev_failure: Option<VerificationFailure> = None;
    let (mut eval_calls, mut eval_tokens) = (0u32, 0u64);
    let names = |v: &[usize]| v.iter().map(|i| format!("item {}", i + 1)).collect::<Vec<_>>();
    while a.calls < MAX_CALLS {
        counters.steps += 1;
        let turn = a.call(&prompt);
        let (step_end, claim, tools) = match turn {
            Turn::Work => (StepEnd::Stopped(StopReason::ToolCalls), None, true),
            Turn::Stop { truncated: true, .. } => (StepEnd::Stopped(StopReason::Length), None, false),
            // A "Done!" in text is no claim to Finishline (no marker set); the evidence decides.
            Turn::Stop { claim, .. } => (StepEnd::Stopped(StopReason::EndTurn), if sc.text_only_claim { None } else { claim }, false),
        };
        let mut e = Evidence::new(step_end);
        e.step_called_tools = tools;
        e.prev_step_called_tools = prev_tools;
        e.claim = claim.map(ClaimEvidence::new);
        e.open_todos = if sc.uses_todos { names(&a.undone()) } else { vec![] };
        let worked = a.done.iter().any(|d| *d) || sc.hidden_bug && a.bug_fixed;
        e.run_used_tools = worked;
        e.run_wrote_todos = sc.uses_todos;
        e.files_changed = worked;
        e.counters = counters;
        e.verify_commands = if sc.hidden_bug { vec!["cargo test".into()] } else { vec![] };
        e.previous_remaining = previous_remaining.clone();
        e.previous_verification_failure = prev_failure.clone();
        prev_tools = tools;
        let action = loop {
            match decide(&e, &cfg) {
                Action::Evaluate { .. } => {
                    if !checked {
                        eval_calls += 1;
                        eval_tokens += 2_500 + 120;
                    }
                    let remaining = names(&a.undone());
                    let outcome = if sc.conversation {
                        EvaluationOutcome {
                            verdict: Verdict::Done,
                            summary: String::new(),
                            remaining: vec![],
                            continuation_prompt: String::new(),
                            stuck_reason: None,
                            output_data: None,
                            comments: vec![],
                        }
                    } else if remaining.is_empty() {
                        EvaluationOutcome {
                            verdict: Verdict::Done,
                            summary: "done".into(),
                            remaining: vec![],
                            continuation_prompt: String::new(),
                            stuck_reason: None,
                            output_data: None,
                            comments: vec![],
                        }
                    } else {
                        EvaluationOutcome {
                            verdict: Verdict::NotDone,
                            summary: String::new(),
                            continuation_prompt: format!("Do {}", remaining.join(", ")),
                            remaining,
                            stuck_reason: None,
                            output_data: None,
                            comments: vec![],
                        }
                    };
                    e.evaluation = Some(outcome);
                }
                Action::Verify { commands } => {
                    let failure =
                        (!a.bug_fixed).then(|| VerificationFailure { command: commands[0].clone(), exit_code: Some(1), output_tail: "1 test failed".into() });
                    e.verification = Some(VerificationOutcome { failures: failure.into_iter().collect(), ..Default::default() });
                }
                other => break other,
            }
        };
        match action {
            Action::NextStep if checked && a.undone().is_empty() => return Ended { end: EndReason::VerifiedDone, eval_calls, eval_tokens },
            Action::NextStep => prompt = Prompt::Next,
            Action::Continue { source, remaining, .. } => {
                if source == ContinuationSource::Truncation {
                    counters.truncations_in_row += 1;
                    prompt = Prompt::Truncation;
                } else {
                    counters.truncations_in_row = 0;
                    counters.continuations_used += 1;
                    previous_remaining = e.evaluation.as_ref().map(|ev| ev.remaining.clone());
                    prev_failure = e.verification.as_ref().and_then(|v| v.failure().cloned());
                    prompt = match source {
                        ContinuationSource::Verification => Prompt::VerificationFailed,
                        ContinuationSource::MissingCompletion => Prompt::Generic,
                        _ => Prompt::Named(
                            remaining.iter().filter_map(|r| r.strip_prefix("item ").and_then(|n| n.parse::<usize>().ok()).map(|n| n - 1)).collect(),
                        ),
                    };
                }
            }
            Action::Review { end_reason, .. } => return Ended { end: end_reason, eval_calls, eval_tokens },
            Action::Idle { end_reason } => return Ended { end: end_reason, eval_calls, eval_tokens },
            Action::Fail { .. } => return Ended { end: EndReason::Failed, eval_calls, eval_tokens },
            Action::Evaluate { .. } | Action::Verify { .. } => unreachable!(),
        }
    }
    Ended { end: EndReason::StepLimit, eval_calls, eval_tokens }
}

/// The seeds' enforcers: a generic reminder to call complete_task, `reminders` times, when the
/// agent stops without calling it; then either stop unfinished or complete anyway.
fn reminder_policy(sc: &Scenario, reminders: u32, complete_anyway: bool) -> Outcome {
    let mut a = Agent::new(sc);
    let mut prompt = Prompt::Task;
    let mut sent = 0;
    while a.calls < MAX_CALLS {
        match a.call(&prompt) {
            Turn::Work => prompt = Prompt::Next,
            Turn::Stop { claim: Some(c), truncated: false } if !sc.text_only_claim => return finish(sc, &a, c == Claim::Success, 0, 0),
            Turn::Stop { .. } => {
                if sent >= reminders {
                    return finish(sc, &a, complete_anyway, 0, 0);
                }
                sent += 1;
                prompt = Prompt::Generic;
            }
        }
    }
    finish(sc, &a, false, 0, 0)
}

/// Marker-only: the first stop ends the run; done if the answer carries the marker.
fn marker_only(sc: &Scenario) -> Outcome {
    let mut a = Agent::new(sc);
    let mut prompt = Prompt::Task;
    while a.calls < MAX_CALLS {
        match a.call(&prompt) {
            Turn::Work => prompt = Prompt::Next,
            Turn::Stop { claim, truncated } => return finish(sc, &a, !truncated && claim == Some(Claim::Success), 0, 0),
        }
    }
    finish(sc, &a, false, 0, 0)
}

pub fn run(_smoke: bool) -> (Table, Table) {
    let scs = scenarios();
    let policies: Vec<(&str, Policy)> = vec![
        ("Finishline (completion engine)", Box::new(finishline)),
        ("Old enforcer: generic reminder ×20", Box::new(|s: &Scenario| reminder_policy(s, 20, false))),
        ("complete_task: 2 reminders, then complete", Box::new(|s: &Scenario| reminder_policy(s, 2, true))),
        ("Marker only", Box::new(marker_only)),
    ];
    let mut t = Table::new(
        &format!("Completion efficiency: {} scenarios, the same simulated agent under each policy", scs.len()),
        &["Policy", "Correct terminal decisions", "False completions", "Agent calls", "Evaluator calls", "Wasted calls", "Calls beyond an ideal run", "Tokens"],
    );
    let mut per_scenario = String::from("| Scenario | Finishline | Old enforcer | complete_task | Marker only |\n|---|---|---|---|---|\n");
    let mut results: Vec<Vec<Outcome>> = Vec::new();
    for (_, p) in &policies {
        results.push(scs.iter().map(p).collect());
    }
    for (name, outs) in policies.iter().map(|(n, _)| n).zip(&results) {
        let correct = outs.iter().filter(|o| o.declared_complete == o.actually_complete).count();
        let false_c = outs.iter().filter(|o| o.declared_complete && !o.actually_complete).count();
        t.row(vec![
            name.to_string(),
            format!("{correct} / {}", outs.len()),
            false_c.to_string(),
            outs.iter().map(|o| o.agent_calls).sum::<u32>().to_string(),
            outs.iter().map(|o| o.evaluator_calls).sum::<u32>().to_string(),
            outs.iter().map(|o| o.wasted_calls).sum::<u32>().to_string(),
            outs.iter().map(|o| o.beyond_ideal).sum::<u32>().to_string(),
            format!("{:.0}k", outs.iter().map(|o| o.tokens).sum::<u64>() as f64 / 1000.0),
        ]);
    }
    let cell = |o: &Outcome| {
        let verdict = match (o.declared_complete, o.actually_complete) {
            (true, true) => "✓ complete",
            (false, false) => "✓ flagged",
            (true, false) => "✗ false completion",
            (false, true) => "✗ missed",
        };
        format!("{verdict} ({} calls)", o.agent_calls + o.evaluator_calls)
    };
    for (i, s) in scs.iter().enumerate() {
        per_scenario.push_str(&format!(
            "| {} | {} | {} | {} | {} |\n",
            s.name,
            cell(&results[0][i]),
            cell(&results[1][i]),
            cell(&results[2][i]),
            cell(&results[3][i])
        ));
    }
    let fin_correct = results[0].iter().filter(|o| o.declared_complete == o.actually_complete).count();
    let best_baseline = results[1..].iter().map(|r| r.iter().filter(|o| o.declared_complete == o.actually_complete).count()).max().unwrap_or(0);
    let fin_false = results[0].iter().filter(|o| o.declared_complete && !o.actually_complete).count();
    t.row(vec![
        "Goal: Finishline decides better".into(),
        if fin_correct > best_baseline { "yes".into() } else { "NO".into() },
        if fin_false == 0 { "yes".into() } else { "NO".into() },
        "".into(),
        "".into(),
        "".into(),
        "".into(),
        "".into(),
    ]);
    t.note("Wasted calls are agent calls that moved nothing forward: an answer cut off by a full window, work that did no item, a stop that was sent back (another call followed it in the same conversation). A conversation's final answer is not waste, nor is a cut-off or a retry the scenario scripts. Calls beyond an ideal run is the earlier measure: agent calls beyond what one ideal single run of the scenario needs (one per doable item, one per fix, one per scripted cut-off, one final answer); it is the agent calls less a constant per scenario, and a run that gives up early scores as cheap. Tokens model a history that grows 400 tokens a call from 1,500, 250 output tokens for a working call and 80 for a final answer; an evaluator call costs 2,620 (its input is bounded; see the next table). The evaluator is modelled as accurate.".into());
    t.note(format!("Per scenario (✓ = the policy's terminal decision matches the workspace; calls include evaluator calls):\n\n{per_scenario}"));

    // The evaluator's input as the transcript grows.
    let mut flat =
        Table::new("The evaluator's input stays flat as the transcript grows", &["Transcript", "Evaluator input", "Task present", "Todos present", "Met"]);
    let task = "Add a /health endpoint to the server and a test for it; update the README.";
    let todos = vec![
        Todo { id: "1".into(), content: "add the /health route".into(), status: TodoStatus::Completed },
        Todo { id: "2".into(), content: "write the health test".into(), status: TodoStatus::InProgress },
    ];
    let mut sizes = Vec::new();
    for tokens in [1_000usize, 10_000, 50_000, 200_000] {
        // About 4 characters a token, in transcript lines of ~400 characters.
        let lines: Vec<String> =
            (0..tokens * 4 / 400).map(|i| format!("[step {i}] tool read_file src/module_{i}.rs → {}", "fn handler() { /* … */ } ".repeat(14))).collect();
        let input = EvaluatorInput { task: task.into(), todos: todos.clone(), transcript_digest: digest(&lines), ..Default::default() };
        let req = build_request("judge", &input, StructuredMode::Native);
        let text: String = std::iter::once(req.system_text())
            .chain(req.messages.iter().map(|m| match m {
                ChatMessage::User { content } => content.clone(),
                _ => String::new(),
            }))
            .collect::<Vec<_>>()
            .join("\n");
        let in_tokens = text.len() / 4;
        sizes.push(in_tokens);
        let has_task = text.contains(task);
        let has_todos = todos.iter().all(|t| text.contains(&t.content));
        flat.row(vec![
            format!("{}k tokens", tokens / 1000),
            format!("{in_tokens} tokens"),
            if has_task { "yes" } else { "no" }.into(),
            if has_todos { "yes" } else { "no" }.into(),
            if has_task && has_todos { "yes" } else { "NO" }.into(),
        ]);
    }
    let spread = *sizes.iter().max().unwrap() as f64 / *sizes.iter().min().unwrap() as f64;
    flat.row(vec!["Growth 1k → 200k".into(), format!("{spread:.2}×"), "".into(), "".into(), if spread < 1.5 { "yes" } else { "NO" }.into()]);
    flat.note(
        "Measured on the real request the evaluator sends (`evaluator::build_request` with the transcript digest), at about 4 characters a token.".into(),
    );
    (t, flat)
}
