//! One test per row of the transition table in `judge/completion.rs`, against the pure function.

use finishline_engine::domain::*;
use finishline_engine::judge::completion::*;
use finishline_engine::provider::StopReason;

fn cfg() -> CompletionConfig {
    CompletionConfig::default()
}

fn stop() -> Evidence {
    let mut e = Evidence::new(StepEnd::Stopped(StopReason::EndTurn));
    e.run_used_tools = true;
    e.files_changed = true;
    e
}

fn verdict(v: Verdict, remaining: &[&str], prompt: &str) -> EvaluationOutcome {
    EvaluationOutcome {
        verdict: v,
        summary: String::new(),
        remaining: remaining.iter().map(|s| s.to_string()).collect(),
        continuation_prompt: prompt.into(),
        stuck_reason: None,
        output_data: None,
        comments: vec![],
    }
}

fn claim(c: Claim) -> Option<ClaimEvidence> {
    Some(ClaimEvidence::new(c))
}

fn source(a: &Action) -> Option<ContinuationSource> {
    if let Action::Continue { source, .. } = a {
        Some(*source)
    } else {
        None
    }
}

fn stuck_of(a: &Action) -> Option<Stuck> {
    if let Action::Review { stuck, .. } = a {
        stuck.clone()
    } else {
        None
    }
}

fn end(a: &Action) -> Option<EndReason> {
    match a {
        Action::Review { end_reason, .. } | Action::Idle { end_reason } => Some(*end_reason),
        _ => None,
    }
}

#[test]
fn row_1_a_failed_step_fails_the_run() {
    assert!(
        matches!(
            decide(&Evidence::new(StepEnd::Failed { code: finishline_engine::ErrorCode::ProviderAuth, message: "401".into() }), &cfg()),
            Action::Fail { .. }
        ),
        "a non-retryable error ends the run as failed"
    );
}

#[test]
fn row_2_a_content_filter_fails_the_run() {
    assert!(matches!(decide(&Evidence::new(StepEnd::Stopped(StopReason::ContentFilter)), &cfg()), Action::Fail { .. }));
}

#[test]
fn row_3_a_stuck_pattern_goes_to_review_even_mid_work() {
    let mut e = stop();
    e.step_called_tools = true;
    e.stuck_pattern = Some(Stuck { pattern: StuckPattern::SameActionError, repeated: "read_file({\"path\":\"x\"})".into() });
    assert_eq!(end(&decide(&e, &cfg())), Some(EndReason::Stuck), "stuck is checked after every step, not only at stops");
    assert_eq!(stuck_of(&decide(&e, &cfg())), e.stuck_pattern, "the review names the pattern and the repeated action");
}

#[test]
fn row_1_a_failed_step_keeps_its_error_code_so_a_wrong_key_says_auth() {
    let e = Evidence::new(StepEnd::Failed { code: finishline_engine::ErrorCode::ProviderAuth, message: "The provider refused the API key".into() });
    match decide(&e, &cfg()) {
        Action::Fail { code, .. } => {
            assert_eq!(code, finishline_engine::ErrorCode::ProviderAuth, "the person must see `auth`, not a generic provider error")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn row_2a_a_context_overflow_that_compaction_did_not_fix_fails_and_is_never_a_completion() {
    let mut e = stop();
    e.step_end = StepEnd::Stopped(StopReason::ContextWindowExceeded);
    match decide(&e, &cfg()) {
        Action::Fail { code, .. } => assert_eq!(code, finishline_engine::ErrorCode::ContextTooLong),
        other => panic!("an overflow must not be judged as a completion: {other:?}"),
    }
}

#[test]
fn row_2b_an_unknown_finish_reason_is_a_protocol_error_never_a_completion() {
    let mut e = stop();
    e.step_end = StepEnd::Stopped(StopReason::Unknown);
    match decide(&e, &cfg()) {
        Action::Fail { code, message } => {
            assert_eq!(code, finishline_engine::ErrorCode::ProviderProtocol);
            assert!(message.contains("finish reason"), "the person is told what happened: {message}");
        }
        other => panic!("an unknown stop must not be judged as a completion: {other:?}"),
    }
}

#[test]
fn row_4_length_is_a_truncation_continuation_without_the_evaluator() {
    let e = Evidence::new(StepEnd::Stopped(StopReason::Length));
    assert_eq!(source(&decide(&e, &cfg())), Some(ContinuationSource::Truncation));
    let cut = Evidence::new(StepEnd::Cut);
    assert_eq!(source(&decide(&cut, &cfg())), Some(ContinuationSource::Truncation), "a stream with no finish reason is cut off too");
}

#[test]
fn row_4_a_two_token_stop_while_work_is_open_is_a_truncation() {
    let mut e = stop();
    e.output_tokens = 2;
    e.prev_step_called_tools = true;
    assert_eq!(source(&decide(&e, &cfg())), Some(ContinuationSource::Truncation), "the seed's real case: 2 tokens mid-task is not a completion");
    e.prev_step_called_tools = false;
    e.open_todos = vec!["b".into()];
    assert_eq!(source(&decide(&e, &cfg())), Some(ContinuationSource::Truncation), "open todos are open work");
}

#[test]
fn row_4_a_terse_complete_claim_with_todos_open_goes_to_the_todo_gate_not_truncation() {
    let mut e = stop();
    e.output_tokens = 2;
    e.last_text = "Done!".into();
    e.open_todos = vec!["write b.txt".into()];
    assert_eq!(
        source(&decide(&e, &cfg())),
        Some(ContinuationSource::TodoGate),
        "a short answer that ends like a sentence is a claim: the todo gate lists what is open"
    );
    e.last_text = "Next I will".into();
    assert_eq!(source(&decide(&e, &cfg())), Some(ContinuationSource::Truncation), "a short stop mid-sentence is still a cut-off");
}

#[test]
fn row_4_a_short_stop_with_no_open_work_is_not_a_truncation() {
    let mut e = stop();
    e.output_tokens = 2;
    assert_eq!(decide(&e, &cfg()), Action::Evaluate { question: EvaluationQuestion::Done });
}

#[test]
fn row_5_the_fourth_truncation_in_a_row_goes_to_review() {
    let mut e = Evidence::new(StepEnd::Stopped(StopReason::Length));
    e.counters.truncations_in_row = 3;
    assert_eq!(end(&decide(&e, &cfg())), Some(EndReason::TruncationExhausted));
}

#[test]
fn row_5_truncations_do_not_spend_the_continuation_budget() {
    let mut e = Evidence::new(StepEnd::Stopped(StopReason::Length));
    e.counters.continuations_used = 5;
    assert_eq!(source(&decide(&e, &cfg())), Some(ContinuationSource::Truncation), "truncation has its own cap");
}

#[test]
fn row_6_tool_calls_mean_another_step() {
    let mut e = stop();
    e.step_called_tools = true;
    assert_eq!(decide(&e, &cfg()), Action::NextStep);
    let paused = Evidence::new(StepEnd::Stopped(StopReason::PauseTurn));
    assert_eq!(decide(&paused, &cfg()), Action::NextStep, "Anthropic's pause_turn continues");
}

#[test]
fn row_7_the_step_limit_goes_to_review() {
    let mut e = stop();
    e.step_called_tools = true;
    e.counters.steps = 60;
    assert_eq!(end(&decide(&e, &cfg())), Some(EndReason::StepLimit));
    let mut t = Evidence::new(StepEnd::Stopped(StopReason::Length));
    t.counters.steps = 60;
    assert_eq!(end(&decide(&t, &cfg())), Some(EndReason::StepLimit), "no continuation beyond the limit either");
}

#[test]
fn row_8_a_conversation_turn_asks_only_about_announced_actions() {
    let e = Evidence::new(StepEnd::Stopped(StopReason::EndTurn));
    assert_eq!(decide(&e, &cfg()), Action::Evaluate { question: EvaluationQuestion::AnnouncedAction });
}

#[test]
fn row_9_an_announced_action_not_taken_gets_missing_action() {
    let mut e = Evidence::new(StepEnd::Stopped(StopReason::EndTurn));
    e.evaluation = Some(verdict(Verdict::NotDone, &["look at the files"], "Do it now: look at the files"));
    assert_eq!(source(&decide(&e, &cfg())), Some(ContinuationSource::MissingAction));
}

#[test]
fn row_8_a_run_answering_requested_changes_that_only_talks_is_judged_as_work_not_a_conversation() {
    let mut e = Evidence::new(StepEnd::Stopped(StopReason::EndTurn));
    e.answers_review = true;
    assert_eq!(decide(&e, &cfg()), Action::Evaluate { question: EvaluationQuestion::Done }, "asked whether the work is done, not about an announced action");
    e.evaluation = Some(verdict(Verdict::Unavailable, &[], ""));
    assert!(
        matches!(decide(&e, &cfg()), Action::Review { end_reason: EndReason::Unverified, .. }),
        "the work the person asked to change goes back to them for a decision; it never goes idle with nothing to approve or reject"
    );
    e.evaluation = None;
    e.open_criteria = vec!["app.txt:1: why three retries?".into()];
    assert_eq!(
        decide(&e, &cfg()),
        Action::Evaluate { question: EvaluationQuestion::Done },
        "a reply in words to a comment on a file it did not touch is for the evaluator: the comment may be a question, answered"
    );
    e.run_used_tools = true;
    assert_eq!(
        source(&decide(&e, &cfg())),
        Some(ContinuationSource::ReviewComments),
        "a run that worked but never touched the comment's file is sent back to it"
    );
}

#[test]
fn row_13a_conflict_markers_left_in_a_merge_for_the_agent_send_it_back_even_when_it_only_talks() {
    let mut e = Evidence::new(StepEnd::Stopped(StopReason::EndTurn));
    e.answers_review = true;
    e.last_text = "Done! Resolved.".into();
    e.conflict_markers = vec!["notes.md".into()];
    let action = decide(&e, &cfg());
    assert_eq!(source(&action), Some(ContinuationSource::ConflictMarkers), "the markers are there to see: no evaluator can call it done");
    let Action::Continue { text, remaining, .. } = action else { unreachable!() };
    assert!(text.contains("notes.md") && text.contains("<<<<<<<"), "{text}");
    assert_eq!(remaining, vec!["notes.md".to_string()]);
    assert!(ContinuationSource::ConflictMarkers.spends_budget(), "it counts against the budget: an agent that keeps stopping is not sent back for ever");
    e.counters.continuations_used = cfg().continuation_budget;
    assert!(
        matches!(decide(&e, &cfg()), Action::Review { end_reason: EndReason::CyclesExhausted, .. }),
        "with no budget left it goes to the person, never as verified done"
    );
}

#[test]
fn row_10_a_greeting_goes_idle_and_never_loops() {
    let mut e = Evidence::new(StepEnd::Stopped(StopReason::EndTurn));
    e.evaluation = Some(verdict(Verdict::Done, &[], ""));
    assert_eq!(decide(&e, &cfg()), Action::Idle { end_reason: EndReason::Conversation });
    e.evaluation = Some(verdict(Verdict::Unavailable, &[], ""));
    assert_eq!(
        decide(&e, &cfg()),
        Action::Idle { end_reason: EndReason::ConversationUnchecked },
        "no usable verdict: nothing to review, but not called a plain answer either (it may have claimed work it never did)"
    );
    e.evaluation = Some(verdict(Verdict::NotDone, &["x"], ""));
    e.counters.continuations_used = 5;
    assert_eq!(decide(&e, &cfg()), Action::Idle { end_reason: EndReason::Conversation }, "with the budget spent a conversation still ends quietly");
}

#[test]
fn row_11_a_blocked_claim_goes_to_review_at_once() {
    let mut e = stop();
    e.claim = claim(Claim::Blocked);
    e.open_todos = vec!["needs a password".into()];
    assert_eq!(
        decide(&e, &cfg()),
        Action::Review { end_reason: EndReason::ClaimedBlocked, claim: Claim::Blocked, stuck: None },
        "blocked work must never loop, even with open todos"
    );
}

#[test]
fn row_12_a_partial_claim_goes_to_review_at_once() {
    let mut e = stop();
    e.claim = claim(Claim::Partial);
    assert_eq!(decide(&e, &cfg()), Action::Review { end_reason: EndReason::ClaimedPartial, claim: Claim::Partial, stuck: None });
}

#[test]
fn row_13_open_todos_get_a_todo_gate_naming_exactly_them() {
    let mut e = stop();
    e.claim = claim(Claim::Success);
    e.open_todos = vec!["write b.txt".into(), "run tests".into()];
    match decide(&e, &cfg()) {
        Action::Continue { source: ContinuationSource::TodoGate, text, remaining } => {
            assert!(text.contains("write b.txt") && text.contains("run tests"), "the continuation names the open items: {text}");
            assert_eq!(remaining, vec!["write b.txt".to_string(), "run tests".to_string()]);
        }
        other => panic!("expected a todo gate, got {other:?}"),
    }
}

#[test]
fn row_13b_a_review_comment_on_a_file_the_run_never_touched_sends_it_back_before_any_check() {
    let mut e = stop();
    e.claim = claim(Claim::Success);
    e.files_changed = true;
    e.verify_commands = vec!["cargo test".into()];
    e.open_criteria = vec!["src/a.rs:3: rename x".into()];
    match decide(&e, &cfg()) {
        Action::Continue { source: ContinuationSource::ReviewComments, text, remaining } => {
            assert!(text.contains("src/a.rs:3: rename x"), "it names the comment: {text}");
            assert_eq!(remaining, vec!["src/a.rs:3: rename x".to_string()]);
        }
        other => panic!("expected the comments back, got {other:?}"),
    }
}

#[test]
fn row_14_require_complete_task_asks_for_the_claim() {
    let mut e = stop();
    let strict = CompletionConfig { require_complete_task: true, ..cfg() };
    assert_eq!(source(&decide(&e, &strict)), Some(ContinuationSource::MissingCompletion));
    e.claim = claim(Claim::Success);
    assert_eq!(decide(&e, &strict), Action::Evaluate { question: EvaluationQuestion::Done }, "with the claim made, the checks go on");
    e.claim = None;
    assert_eq!(decide(&e, &cfg()), Action::Evaluate { question: EvaluationQuestion::Done }, "off by default");
}

#[test]
fn row_15_verification_runs_when_files_changed_a_command_was_given_or_success_is_claimed() {
    let mut e = stop();
    e.verify_commands = vec!["cargo test".into()];
    assert_eq!(decide(&e, &cfg()), Action::Verify { commands: vec!["cargo test".into()] });
    e.files_changed = false;
    e.claim = None;
    assert_eq!(decide(&e, &cfg()), Action::Evaluate { question: EvaluationQuestion::Done }, "nothing changed and nothing claimed: nothing to verify");
    e.claim = claim(Claim::Success);
    assert_eq!(
        decide(&e, &cfg()),
        Action::Verify { commands: vec!["cargo test".into()] },
        "“make the tests pass”, claimed done with no file changed, is verified before it can be called done"
    );
    e.claim = Some(ClaimEvidence { verify_command: Some("make check".into()), ..ClaimEvidence::new(Claim::Success) });
    assert_eq!(decide(&e, &cfg()), Action::Verify { commands: vec!["cargo test".into(), "make check".into()] }, "a command given with the claim runs too");
}

fn failed(command: &str) -> VerificationFailure {
    VerificationFailure { command: command.into(), exit_code: Some(1), output_tail: "2 failed".into() }
}

#[test]
fn row_15_with_no_file_changed_a_failure_of_a_command_the_task_did_not_name_is_evidence_not_an_order() {
    // A question answered with a success claim, in a workspace whose suite already fails: the
    // run cannot have broken it, and nobody asked it to fix it. The evaluator sees the failure.
    let mut e = stop();
    e.files_changed = false;
    e.claim = claim(Claim::Success);
    e.verify_commands = vec!["cargo test".into()];
    e.verification = Some(VerificationOutcome { failures: vec![failed("cargo test")], ..Default::default() });
    assert_eq!(decide(&e, &cfg()), Action::Evaluate { question: EvaluationQuestion::Done });

    e.task_commands = vec!["cargo test".into()];
    assert_eq!(source(&decide(&e, &cfg())), Some(ContinuationSource::Verification), "the task's own command (`--verify`) must pass");

    e.task_commands = vec![];
    e.files_changed = true;
    assert_eq!(source(&decide(&e, &cfg())), Some(ContinuationSource::Verification), "a run that changed files answers for every command");

    e.files_changed = false;
    e.claim = Some(ClaimEvidence { verify_command: Some("make check".into()), ..ClaimEvidence::new(Claim::Success) });
    e.verification = Some(VerificationOutcome { failures: vec![failed("cargo test"), failed("make check")], ..Default::default() });
    match decide(&e, &cfg()) {
        Action::Continue { source: ContinuationSource::Verification, text, .. } => {
            assert!(text.contains("make check") && !text.contains("cargo test"), "the agent is sent back for the command it named: {text}")
        }
        other => panic!("expected the claimed command's failure back, got {other:?}"),
    }
}

#[test]
fn row_16_the_same_verification_failure_twice_is_stuck() {
    let f = VerificationFailure { command: "cargo test".into(), exit_code: Some(101), output_tail: "1 failed".into() };
    let mut e = stop();
    e.verify_commands = vec!["cargo test".into()];
    e.verification = Some(VerificationOutcome { failures: vec![f.clone()], ..Default::default() });
    e.previous_verification_failure = Some(f);
    assert_eq!(end(&decide(&e, &cfg())), Some(EndReason::Stuck));
    assert_eq!(
        stuck_of(&decide(&e, &cfg())).map(|s| s.pattern),
        Some(StuckPattern::SameVerificationFailure),
        "the review names the repeated verification failure"
    );
}

#[test]
fn row_17_a_verification_failure_continues_with_the_command_and_output() {
    let mut e = stop();
    e.verify_commands = vec!["cargo test".into()];
    e.verification = Some(VerificationOutcome {
        failures: vec![VerificationFailure { command: "cargo test".into(), exit_code: Some(101), output_tail: "test foo ... FAILED".into() }],
        ..Default::default()
    });
    match decide(&e, &cfg()) {
        Action::Continue { source: ContinuationSource::Verification, text, .. } => {
            assert!(text.contains("cargo test") && text.contains("test foo ... FAILED") && text.contains("101"), "{text}")
        }
        other => panic!("expected a verification continuation, got {other:?}"),
    }
}

#[test]
fn row_17_a_declined_verification_does_not_end_the_run() {
    let mut e = stop();
    e.verify_commands = vec!["cargo test".into()];
    e.verification = Some(VerificationOutcome { failures: vec![], ..Default::default() });
    assert_eq!(decide(&e, &cfg()), Action::Evaluate { question: EvaluationQuestion::Done });
}

#[test]
fn row_18_the_evaluator_is_asked_once_per_cycle() {
    assert_eq!(decide(&stop(), &cfg()), Action::Evaluate { question: EvaluationQuestion::Done });
}

#[test]
fn row_19_done_and_stuck_together_is_stuck() {
    let mut e = stop();
    e.evaluation = Some(verdict(Verdict::Stuck, &[], ""));
    assert_eq!(end(&decide(&e, &cfg())), Some(EndReason::Stuck));
}

#[test]
fn row_20_done_goes_to_review_as_verified() {
    let mut e = stop();
    e.claim = claim(Claim::Success);
    e.evaluation = Some(verdict(Verdict::Done, &[], ""));
    assert_eq!(decide(&e, &cfg()), Action::Review { end_reason: EndReason::VerifiedDone, claim: Claim::Success, stuck: None });
}

#[test]
fn row_21_an_unavailable_verdict_is_unverified_never_done() {
    let mut e = stop();
    e.claim = claim(Claim::Success);
    e.evaluation = Some(verdict(Verdict::Unavailable, &[], ""));
    assert_eq!(end(&decide(&e, &cfg())), Some(EndReason::Unverified), "a parse failure never counts as done");
}

#[test]
fn row_22_the_same_remaining_list_over_two_cycles_is_stuck() {
    let mut e = stop();
    e.evaluation = Some(verdict(Verdict::NotDone, &["write b.txt"], "write it"));
    e.previous_remaining = Some(vec!["write b.txt".into()]);
    assert_eq!(end(&decide(&e, &cfg())), Some(EndReason::Stuck));
    assert_eq!(
        stuck_of(&decide(&e, &cfg())).map(|s| (s.pattern, s.repeated)),
        Some((StuckPattern::RemainingUnchanged, "write b.txt".into())),
        "the review names the pattern and what stayed"
    );
}

#[test]
fn row_23_not_done_with_nothing_to_say_goes_to_review() {
    let mut e = stop();
    e.evaluation = Some(verdict(Verdict::NotDone, &[], "  "));
    assert_eq!(end(&decide(&e, &cfg())), Some(EndReason::Unverified));
}

#[test]
fn row_24_not_done_continues_with_the_targeted_prompt_or_one_built_from_remaining() {
    let mut e = stop();
    e.evaluation = Some(verdict(Verdict::NotDone, &["write b.txt"], "b.txt is missing: write it"));
    match decide(&e, &cfg()) {
        Action::Continue { source: ContinuationSource::Evaluator, text, remaining } => {
            assert!(text.contains("b.txt is missing: write it"));
            assert_eq!(remaining, vec!["write b.txt".to_string()]);
        }
        other => panic!("{other:?}"),
    }
    e.evaluation = Some(verdict(Verdict::NotDone, &["write b.txt"], ""));
    match decide(&e, &cfg()) {
        Action::Continue { text, .. } => assert!(text.contains("- write b.txt"), "an empty prompt is built from remaining: {text}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn row_25_a_continuation_with_the_budget_spent_goes_to_review() {
    let mut e = stop();
    e.counters.continuations_used = 5;
    e.evaluation = Some(verdict(Verdict::NotDone, &["x"], "do x"));
    assert_eq!(end(&decide(&e, &cfg())), Some(EndReason::CyclesExhausted));
    let mut t = stop();
    t.counters.continuations_used = 5;
    t.open_todos = vec!["a".into()];
    assert_eq!(end(&decide(&t, &cfg())), Some(EndReason::CyclesExhausted), "the budget is shared by every source");
}

#[test]
fn the_marker_counts_as_a_success_claim_only_when_on() {
    let mut e = stop();
    e.last_text = "All done.\nTASK_COMPLETE".into();
    assert_eq!(claim_of(&e, &cfg()), Claim::None, "off by default");
    let with = CompletionConfig { marker: Some("TASK_COMPLETE".into()), ..cfg() };
    assert_eq!(claim_of(&e, &with), Claim::Success);
}
