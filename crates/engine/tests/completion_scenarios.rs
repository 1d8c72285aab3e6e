//! The completion engine's scenario suite: the real engine, the real HTTP provider layer, and
//! the fake provider server scripting both the agent and the evaluator. Each scenario states the
//! expected status, claim, end reason, continuation sources in order, and number of model calls.
//! The suite prints a table of expected against actual.

mod support {
    pub mod harness;
}

use fake_llm::Protocol;
use finishline_engine::domain::*;
use finishline_engine::tool::Permission;
use serde_json::{json, Value};
use support::harness::*;

use ContinuationSource as C;

struct Case {
    name: &'static str,
    protocol: Protocol,
    rules: Value,
    setup: fn(&mut Setup),
    prepare: fn(&Harness),
    status: SessionStatus,
    claim: Claim,
    end: EndReason,
    continuations: Vec<ContinuationSource>,
    model_calls: usize,
}

fn agent(when: Value, reply: Value) -> Value {
    let mut w = when;
    w["kind"] = json!("agent");
    json!({"when": w, "reply": reply})
}
fn agent_times(when: Value, reply: Value, times: u32) -> Value {
    let mut r = agent(when, reply);
    r["times"] = json!(times);
    r
}
fn evaluator(reply: Value) -> Value {
    json!({"when": {"kind": "evaluator", "system_contains": "independent reviewer"}, "reply": reply})
}
fn evaluator_times(reply: Value, times: u32) -> Value {
    json!({"when": {"kind": "evaluator", "system_contains": "independent reviewer"}, "reply": reply, "times": times})
}
fn announcement(reply: Value) -> Value {
    json!({"when": {"kind": "evaluator", "system_contains": "announce"}, "reply": reply})
}
fn write(path: &str, content: &str) -> Value {
    json!({"name": "write_file", "arguments": {"path": path, "content": content}})
}
fn complete(status: &str) -> Value {
    json!({"name": "complete_task", "arguments": {"status": status, "original_request_summary": "the task", "summary": "did it", "remaining_work": if status == "success" { Value::Null } else { json!("the rest needs a password") }}})
}
fn calls(c: Vec<Value>) -> Value {
    json!({"tool_calls": c})
}
fn text(t: &str) -> Value {
    json!({"text": t})
}
/// Long enough not to count as a cut-off stop (a stop of at most 10 tokens after tool work is a truncation).
const DONE: &str = "Done! Everything the task asked for is written and checked.";

fn nothing(_: &mut Setup) {}
fn no_files(_: &Harness) {}

fn cases() -> Vec<Case> {
    [success(), todos(), truncations(), claims(), verification(), stuck(), conversation(), limits_and_faults()].into_iter().flatten().collect()
}

/// Honest successes, in each protocol and without complete_task.
fn success() -> Vec<Case> {
    vec![
        Case {
            name: "honest success with complete_task (openai)",
            protocol: Protocol::Openai,
            rules: json!([
                evaluator(done_verdict()),
                agent(json!({"last_message_contains": "Created a.txt"}), calls(vec![complete("success")])),
                agent(json!({}), calls(vec![write("a.txt", "A")])),
            ]),
            setup: nothing,
            prepare: no_files,
            status: SessionStatus::AwaitingReview,
            claim: Claim::Success,
            end: EndReason::VerifiedDone,
            continuations: vec![],
            model_calls: 3,
        },
        Case {
            name: "honest success with complete_task (anthropic)",
            protocol: Protocol::Anthropic,
            rules: json!([
                evaluator(done_verdict()),
                agent(json!({"last_message_contains": "Created a.txt"}), calls(vec![complete("success")])),
                agent(json!({}), calls(vec![write("a.txt", "A")])),
            ]),
            setup: nothing,
            prepare: no_files,
            status: SessionStatus::AwaitingReview,
            claim: Claim::Success,
            end: EndReason::VerifiedDone,
            continuations: vec![],
            model_calls: 3,
        },
        Case {
            name: "honest success with complete_task (gemini)",
            protocol: Protocol::Gemini,
            rules: json!([
                evaluator(done_verdict()),
                agent(json!({"last_message_contains": "Created a.txt"}), calls(vec![complete("success")])),
                agent(json!({}), calls(vec![write("a.txt", "A")])),
            ]),
            setup: nothing,
            prepare: no_files,
            status: SessionStatus::AwaitingReview,
            claim: Claim::Success,
            end: EndReason::VerifiedDone,
            continuations: vec![],
            model_calls: 3,
        },
        Case {
            name: "honest success without complete_task",
            protocol: Protocol::Openai,
            rules: json!([
                evaluator(done_verdict()),
                agent(json!({"last_message_contains": "Created a.txt"}), text(DONE)),
                agent(json!({}), calls(vec![write("a.txt", "A")])),
            ]),
            setup: nothing,
            prepare: no_files,
            status: SessionStatus::AwaitingReview,
            claim: Claim::None,
            end: EndReason::VerifiedDone,
            continuations: vec![],
            model_calls: 3,
        },
    ]
}

/// Stops with todos open.
fn todos() -> Vec<Case> {
    vec![
        Case {
            name: "premature stop with open todos gets a todo_gate naming them",
            protocol: Protocol::Openai,
            rules: json!([
                evaluator(done_verdict()),
                agent(json!({"last_message_contains": "0 open"}), text(DONE)),
                agent(
                    json!({"last_message_contains": "write b.txt"}),
                    calls(vec![
                        write("b.txt", "B"),
                        json!({"name": "todo_write", "arguments": {"todos": [{"id": "1", "content": "write a.txt", "status": "completed"}, {"id": "2", "content": "write b.txt", "status": "completed"}]}})
                    ])
                ),
                agent(json!({"last_message_contains": "Created a.txt"}), text(DONE)),
                agent(
                    json!({}),
                    calls(vec![
                        json!({"name": "todo_write", "arguments": {"todos": [{"id": "1", "content": "write a.txt", "status": "completed"}, {"id": "2", "content": "write b.txt", "status": "pending"}]}}),
                        write("a.txt", "A")
                    ])
                ),
            ]),
            setup: nothing,
            prepare: no_files,
            status: SessionStatus::AwaitingReview,
            claim: Claim::None,
            end: EndReason::VerifiedDone,
            continuations: vec![C::TodoGate],
            model_calls: 5,
        },
        Case {
            name: "a terse Done! with todos open gets the todo gate, not a truncation",
            protocol: Protocol::Openai,
            rules: json!([
                evaluator(done_verdict()),
                agent(json!({"last_message_contains": "0 open"}), text(DONE)),
                agent(
                    json!({"last_message_contains": "write b.txt"}),
                    calls(vec![
                        write("b.txt", "B"),
                        json!({"name": "todo_write", "arguments": {"todos": [{"id": "1", "content": "write a.txt", "status": "completed"}, {"id": "2", "content": "write b.txt", "status": "completed"}]}})
                    ])
                ),
                agent(json!({"last_message_contains": "Created a.txt"}), text("Done!")),
                agent(
                    json!({}),
                    calls(vec![
                        json!({"name": "todo_write", "arguments": {"todos": [{"id": "1", "content": "write a.txt", "status": "completed"}, {"id": "2", "content": "write b.txt", "status": "pending"}]}}),
                        write("a.txt", "A")
                    ])
                ),
            ]),
            setup: nothing,
            prepare: no_files,
            status: SessionStatus::AwaitingReview,
            claim: Claim::None,
            end: EndReason::VerifiedDone,
            continuations: vec![C::TodoGate],
            model_calls: 5,
        },
    ]
}

/// Answers cut off: by the length limit, a short stop, a stream without its end.
fn truncations() -> Vec<Case> {
    vec![
        Case {
            name: "truncation by length continues at once without the evaluator",
            protocol: Protocol::Openai,
            rules: json!([
                evaluator(done_verdict()),
                agent(json!({"last_message_contains": "cut off"}), calls(vec![write("a.txt", "A")])),
                agent(json!({"last_message_contains": "Created a.txt"}), text(DONE)),
                agent(json!({}), json!({"text": "I will now write the fi", "finish": "length"})),
            ]),
            setup: nothing,
            prepare: no_files,
            status: SessionStatus::AwaitingReview,
            claim: Claim::None,
            end: EndReason::VerifiedDone,
            continuations: vec![C::Truncation],
            model_calls: 4,
        },
        Case {
            name: "a 2-token stop in the middle of a task is a truncation",
            protocol: Protocol::Anthropic,
            rules: json!([
                evaluator(done_verdict()),
                agent(json!({"last_message_contains": "cut off"}), text("All three files are written; the task is done.")),
                agent(json!({"last_message_contains": "Created a.txt"}), json!({"text": "Now", "usage": {"input": 100, "output": 2}})),
                agent(json!({}), calls(vec![write("a.txt", "A")])),
            ]),
            setup: nothing,
            prepare: no_files,
            status: SessionStatus::AwaitingReview,
            claim: Claim::None,
            end: EndReason::VerifiedDone,
            continuations: vec![C::Truncation],
            model_calls: 4,
        },
        Case {
            name: "a stream with no finish reason is a truncation",
            protocol: Protocol::Gemini,
            rules: json!([
                evaluator(done_verdict()),
                agent(json!({"last_message_contains": "cut off"}), calls(vec![write("a.txt", "A")])),
                agent(json!({"last_message_contains": "Created a.txt"}), text(DONE)),
                agent(json!({}), json!({"text": "Writing the file now and", "fault": {"type": "no_finish"}})),
            ]),
            setup: nothing,
            prepare: no_files,
            status: SessionStatus::AwaitingReview,
            claim: Claim::None,
            end: EndReason::VerifiedDone,
            continuations: vec![C::Truncation],
            model_calls: 4,
        },
        Case {
            name: "truncation exhausted after 3 in a row goes to review",
            protocol: Protocol::Openai,
            rules: json!([
                agent_times(json!({}), json!({"text": "and then I", "finish": "length"}), 1),
                agent_times(json!({}), json!({"text": "so the next", "finish": "length"}), 1),
                agent_times(json!({}), json!({"text": "which means", "finish": "length"}), 1),
                agent(json!({}), json!({"text": "therefore", "finish": "length"})),
            ]),
            setup: nothing,
            prepare: no_files,
            status: SessionStatus::AwaitingReview,
            claim: Claim::None,
            end: EndReason::TruncationExhausted,
            continuations: vec![C::Truncation, C::Truncation, C::Truncation],
            model_calls: 4,
        },
    ]
}

/// Claims: partial, blocked, the marker, and complete_task required.
fn claims() -> Vec<Case> {
    vec![
        Case {
            name: "a partial claim goes to review at once",
            protocol: Protocol::Openai,
            rules: json!([
                agent(json!({"last_message_contains": "Created"}), calls(vec![complete("partial")])),
                agent(json!({}), calls(vec![write("a.txt", "A")]))
            ]),
            setup: nothing,
            prepare: no_files,
            status: SessionStatus::AwaitingReview,
            claim: Claim::Partial,
            end: EndReason::ClaimedPartial,
            continuations: vec![],
            model_calls: 2,
        },
        Case {
            name: "a blocked claim goes to review at once and never loops",
            protocol: Protocol::Anthropic,
            rules: json!([agent(json!({}), calls(vec![complete("blocked")]))]),
            setup: nothing,
            prepare: no_files,
            status: SessionStatus::AwaitingReview,
            claim: Claim::Blocked,
            end: EndReason::ClaimedBlocked,
            continuations: vec![],
            model_calls: 1,
        },
        Case {
            name: "the marker, when on, is a success claim",
            protocol: Protocol::Openai,
            rules: json!([
                evaluator(done_verdict()),
                agent(json!({"last_message_contains": "Created"}), text("All the files the task needs are written now.\nTASK_COMPLETE")),
                agent(json!({}), calls(vec![write("a.txt", "A")]))
            ]),
            setup: |s| s.completion.marker = Some("TASK_COMPLETE".into()),
            prepare: no_files,
            status: SessionStatus::AwaitingReview,
            claim: Claim::Success,
            end: EndReason::VerifiedDone,
            continuations: vec![],
            model_calls: 3,
        },
        Case {
            name: "the marker, when off, is just text",
            protocol: Protocol::Openai,
            rules: json!([
                evaluator(done_verdict()),
                agent(json!({"last_message_contains": "Created"}), text("All the files the task needs are written now.\nTASK_COMPLETE")),
                agent(json!({}), calls(vec![write("a.txt", "A")]))
            ]),
            setup: nothing,
            prepare: no_files,
            status: SessionStatus::AwaitingReview,
            claim: Claim::None,
            end: EndReason::VerifiedDone,
            continuations: vec![],
            model_calls: 3,
        },
        Case {
            name: "require complete_task: a bare stop gets missing_completion",
            protocol: Protocol::Openai,
            rules: json!([
                evaluator(done_verdict()),
                agent(json!({"last_message_contains": "without calling complete_task"}), calls(vec![complete("success")])),
                agent(json!({"last_message_contains": "Created"}), text(DONE)),
                agent(json!({}), calls(vec![write("a.txt", "A")])),
            ]),
            setup: |s| s.completion.require_complete_task = true,
            prepare: no_files,
            status: SessionStatus::AwaitingReview,
            claim: Claim::Success,
            end: EndReason::VerifiedDone,
            continuations: vec![C::MissingCompletion],
            model_calls: 4,
        },
    ]
}

/// Verification commands failing, passing and declined.
fn verification() -> Vec<Case> {
    vec![
        Case {
            name: "verification failing then passing",
            protocol: Protocol::Openai,
            rules: json!([
                evaluator(done_verdict()),
                agent(json!({"last_message_contains": "failed (exit code"}), calls(vec![write("ok.txt", "yes")])),
                agent(json!({"last_message_contains": "Created ok.txt"}), text("Fixed: ok.txt now exists, so the check should pass.")),
                agent(json!({"last_message_contains": "Created a.txt"}), text(DONE)),
                agent(json!({}), calls(vec![write("a.txt", "A")])),
            ]),
            setup: |s| {
                s.verify_commands = vec!["test -f ok.txt || (echo ok.txt is missing; exit 1)".into()];
                s.permissions.overrides.insert("run_command".into(), Permission::Allow);
            },
            prepare: no_files,
            status: SessionStatus::AwaitingReview,
            claim: Claim::None,
            end: EndReason::VerifiedDone,
            continuations: vec![C::Verification],
            model_calls: 5,
        },
        Case {
            name: "the same verification failure twice is stuck",
            protocol: Protocol::Openai,
            rules: json!([
                agent(json!({"last_message_contains": "failed (exit code"}), calls(vec![write("b.txt", "B")])),
                agent(json!({"last_message_contains": "Created b.txt"}), text("Fixed, surely: b.txt is written and the check should pass now.")),
                agent(json!({"last_message_contains": "Created a.txt"}), text(DONE)),
                agent(json!({}), calls(vec![write("a.txt", "A")])),
            ]),
            setup: |s| {
                s.verify_commands = vec!["echo still broken; exit 3".into()];
                s.permissions.overrides.insert("run_command".into(), Permission::Allow);
            },
            prepare: no_files,
            status: SessionStatus::AwaitingReview,
            claim: Claim::None,
            end: EndReason::Stuck,
            continuations: vec![C::Verification],
            model_calls: 4,
        },
        Case {
            // A question answered with a success claim in a workspace whose suite already fails:
            // nothing changed, so the run cannot have broken it; the evaluator sees the failure.
            name: "a question answered changes nothing and is not sent to fix a suite that already failed",
            protocol: Protocol::Openai,
            rules: json!([evaluator(done_verdict()), agent(json!({}), calls(vec![complete("success")]))]),
            setup: |s| {
                s.verify_commands = vec!["echo an unrelated test fails; exit 1".into()];
            },
            prepare: no_files,
            status: SessionStatus::AwaitingReview,
            claim: Claim::Success,
            end: EndReason::VerifiedDone,
            continuations: vec![],
            model_calls: 2,
        },
        Case {
            // "Make the tests pass", claimed done with nothing changed, against the command given
            // for this task: a false pass unless it is sent back.
            name: "a success claimed with nothing changed is sent back while the task's own command fails",
            protocol: Protocol::Openai,
            rules: json!([evaluator(done_verdict()), agent(json!({}), calls(vec![complete("success")]))]),
            setup: |s| {
                s.extra_verify = vec!["echo 1 test still fails; exit 1".into()];
            },
            prepare: no_files,
            status: SessionStatus::AwaitingReview,
            claim: Claim::Success,
            end: EndReason::Stuck,
            continuations: vec![C::Verification],
            model_calls: 2,
        },
        Case {
            // The person's own verify commands run without asking; one the agent names asks, and
            // with nobody to ask it is declined.
            name: "a declined verification is skipped and the checks go on",
            protocol: Protocol::Openai,
            rules: json!([
                evaluator(done_verdict()),
                agent(
                    json!({"last_message_contains": "Created"}),
                    calls(vec![json!({"name": "complete_task", "arguments": {"status": "success", "summary": "wrote a.txt", "verify_command": "exit 1"}})])
                ),
                agent(json!({}), calls(vec![write("a.txt", "A")]))
            ]),
            setup: nothing,
            prepare: no_files,
            status: SessionStatus::AwaitingReview,
            claim: Claim::Success,
            end: EndReason::VerifiedDone,
            continuations: vec![],
            model_calls: 3,
        },
    ]
}

/// The stuck patterns, and cycles running out.
fn stuck() -> Vec<Case> {
    vec![
        Case {
            name: "stuck: the same action with the same result 4 times",
            protocol: Protocol::Openai,
            rules: json!([agent(json!({}), calls(vec![json!({"name": "list_dir", "arguments": {"path": "."}})]))]),
            setup: nothing,
            prepare: no_files,
            status: SessionStatus::AwaitingReview,
            claim: Claim::None,
            end: EndReason::Stuck,
            continuations: vec![],
            model_calls: 4,
        },
        Case {
            name: "stuck: the same action failing 3 times",
            protocol: Protocol::Anthropic,
            rules: json!([agent(json!({}), calls(vec![json!({"name": "read_file", "arguments": {"path": "missing.txt"}})]))]),
            setup: nothing,
            prepare: no_files,
            status: SessionStatus::AwaitingReview,
            claim: Claim::None,
            end: EndReason::Stuck,
            continuations: vec![],
            model_calls: 3,
        },
        Case {
            name: "stuck: identical messages 3 times",
            protocol: Protocol::Openai,
            rules: json!([
                evaluator_times(not_done_verdict(&["write c.txt"], ""), 1),
                evaluator_times(not_done_verdict(&["write c.txt", "check it"], ""), 1),
                evaluator(not_done_verdict(&["write c.txt", "check it", "really"], "")),
                agent(json!({"last_message_contains": "Created"}), text("I am working on it and will finish the remaining files soon.")),
                agent(json!({"last_message_contains": "Still to do"}), text("I am working on it and will finish the remaining files soon.")),
                agent(json!({}), calls(vec![write("a.txt", "A")])),
            ]),
            setup: nothing,
            prepare: no_files,
            status: SessionStatus::AwaitingReview,
            claim: Claim::None,
            end: EndReason::Stuck,
            continuations: vec![C::Evaluator, C::Evaluator],
            model_calls: 6,
        },
        Case {
            name: "stuck: alternating between two actions for 6 steps",
            protocol: Protocol::Openai,
            rules: json!([
                agent(json!({"last_message_contains": "(empty folder)"}), calls(vec![json!({"name": "glob", "arguments": {"pattern": "*.md"}})])),
                agent(json!({"last_message_contains": "a.txt ("}), calls(vec![json!({"name": "glob", "arguments": {"pattern": "*.md"}})])),
                agent(json!({}), calls(vec![json!({"name": "list_dir", "arguments": {"path": "."}})])),
            ]),
            setup: nothing,
            prepare: |h| h.write("a.txt", "A"),
            status: SessionStatus::AwaitingReview,
            claim: Claim::None,
            end: EndReason::Stuck,
            continuations: vec![],
            model_calls: 6,
        },
        Case {
            name: "stuck: 3 empty responses in a row",
            protocol: Protocol::Gemini,
            rules: json!([agent_times(json!({}), calls(vec![write("a.txt", "A")]), 1), agent(json!({}), json!({"text": ""}))]),
            setup: nothing,
            prepare: no_files,
            status: SessionStatus::AwaitingReview,
            claim: Claim::None,
            end: EndReason::Stuck,
            continuations: vec![C::Truncation, C::Truncation],
            model_calls: 4,
        },
        Case {
            name: "stuck: the evaluator's remaining list unchanged over 2 cycles",
            protocol: Protocol::Openai,
            rules: json!([
                evaluator(not_done_verdict(&["write b.txt"], "Write b.txt now.")),
                agent(json!({"last_message_contains": "Write b.txt now"}), text("Hmm, b.txt. I will get to that later, after a short break.")),
                agent(json!({"last_message_contains": "Created"}), text(DONE)),
                agent(json!({}), calls(vec![write("a.txt", "A")])),
            ]),
            setup: nothing,
            prepare: no_files,
            status: SessionStatus::AwaitingReview,
            claim: Claim::None,
            end: EndReason::Stuck,
            continuations: vec![C::Evaluator],
            model_calls: 5,
        },
        Case {
            name: "cycles exhausted when the evaluator keeps finding work",
            protocol: Protocol::Openai,
            rules: json!([
                evaluator_times(not_done_verdict(&["item 1"], ""), 1),
                evaluator_times(not_done_verdict(&["item 2"], ""), 1),
                evaluator_times(not_done_verdict(&["item 3"], ""), 1),
                evaluator(not_done_verdict(&["item 4"], "")),
                agent(json!({"last_message_contains": "Still to do"}), calls(vec![write("x.txt", "x")])),
                agent(json!({"last_message_contains": "x.txt"}), text("Done again: x.txt is written, nothing else should remain.")),
                agent(json!({"last_message_contains": "Created"}), text(DONE)),
                agent(json!({}), calls(vec![write("a.txt", "A")])),
            ]),
            setup: |s| s.completion.continuation_budget = 2,
            prepare: no_files,
            status: SessionStatus::AwaitingReview,
            claim: Claim::None,
            end: EndReason::CyclesExhausted,
            continuations: vec![C::Evaluator, C::Evaluator],
            model_calls: 9,
        },
    ]
}

/// Conversation turns, and an announced action not taken.
fn conversation() -> Vec<Case> {
    vec![
        Case {
            name: "a greeting is a conversation turn and never loops",
            protocol: Protocol::Openai,
            rules: json!([announcement(no_announcement()), agent(json!({}), text("Hello! How can I help you today?"))]),
            setup: nothing,
            prepare: no_files,
            status: SessionStatus::Idle,
            claim: Claim::None,
            end: EndReason::Conversation,
            continuations: vec![],
            model_calls: 2,
        },
        Case {
            name: "a question answered is a conversation turn",
            protocol: Protocol::Anthropic,
            rules: json!([announcement(no_announcement()), agent(json!({}), text("A monad is a monoid in the category of endofunctors."))]),
            setup: nothing,
            prepare: no_files,
            status: SessionStatus::Idle,
            claim: Claim::None,
            end: EndReason::Conversation,
            continuations: vec![],
            model_calls: 2,
        },
        Case {
            name: "an announced action not taken gets missing_action",
            protocol: Protocol::Openai,
            rules: json!([
                announcement(json!({"text": r#"{"announced_action_not_taken": true, "action": "look at the files"}"#})),
                evaluator(done_verdict()),
                agent(json!({"last_message_contains": "Do it now"}), calls(vec![json!({"name": "list_dir", "arguments": {}})])),
                agent(json!({"last_message_contains": "(empty folder)"}), text("The folder is empty, so there are no files to look at yet.")),
                agent(json!({}), text("Let me look at the files…")),
            ]),
            setup: nothing,
            prepare: no_files,
            status: SessionStatus::AwaitingReview,
            claim: Claim::None,
            end: EndReason::VerifiedDone,
            continuations: vec![C::MissingAction],
            model_calls: 5,
        },
    ]
}

/// Limits, refusals and faults of the model or the evaluator.
fn limits_and_faults() -> Vec<Case> {
    vec![
        Case {
            name: "the step limit ends the run at review",
            protocol: Protocol::Openai,
            rules: json!([agent(json!({}), calls(vec![write("a.txt", "A")]))]),
            setup: |s| s.completion.max_steps = 3,
            prepare: no_files,
            status: SessionStatus::AwaitingReview,
            claim: Claim::None,
            end: EndReason::StepLimit,
            continuations: vec![],
            model_calls: 3,
        },
        Case {
            name: "a denied permission stops the run as idle",
            protocol: Protocol::Openai,
            rules: json!([agent(json!({}), calls(vec![json!({"name": "run_command", "arguments": {"command": "echo hi"}})]))]),
            setup: nothing,
            prepare: no_files,
            status: SessionStatus::Idle,
            claim: Claim::None,
            end: EndReason::PermissionDenied,
            continuations: vec![],
            model_calls: 1,
        },
        Case {
            name: "a content filter fails the run with the reason",
            protocol: Protocol::Gemini,
            rules: json!([agent(json!({}), json!({"text": "I cannot", "finish": "content_filter"}))]),
            setup: nothing,
            prepare: no_files,
            status: SessionStatus::Failed,
            claim: Claim::None,
            end: EndReason::Failed,
            continuations: vec![],
            model_calls: 1,
        },
        Case {
            name: "an evaluator that answers garbage twice gives unverified",
            protocol: Protocol::Openai,
            rules: json!([
                evaluator(text("I think it is probably fine?")),
                agent(json!({"last_message_contains": "Created"}), text(DONE)),
                agent(json!({}), calls(vec![write("a.txt", "A")]))
            ]),
            setup: nothing,
            prepare: no_files,
            status: SessionStatus::AwaitingReview,
            claim: Claim::None,
            end: EndReason::Unverified,
            continuations: vec![],
            model_calls: 4,
        },
        Case {
            name: "an evaluator answering garbage then a repaired verdict",
            protocol: Protocol::Anthropic,
            rules: json!([
                evaluator_times(text("Sure! Here you go: {\"done\": tru"), 1),
                evaluator(done_verdict()),
                agent(json!({"last_message_contains": "Created"}), text(DONE)),
                agent(json!({}), calls(vec![write("a.txt", "A")])),
            ]),
            setup: nothing,
            prepare: no_files,
            status: SessionStatus::AwaitingReview,
            claim: Claim::None,
            end: EndReason::VerifiedDone,
            continuations: vec![],
            model_calls: 4,
        },
        Case {
            name: "malformed tool arguments go back to the model, not a failure",
            protocol: Protocol::Openai,
            rules: json!([
                evaluator(done_verdict()),
                agent(json!({"last_message_contains": "not valid JSON"}), calls(vec![write("a.txt", "A")])),
                agent(json!({"last_message_contains": "Created"}), text(DONE)),
                agent(json!({}), json!({"tool_calls": [{"name": "write_file", "arguments": "{\"path\": \"a.txt\", \"content\": "}]})),
            ]),
            setup: nothing,
            prepare: no_files,
            status: SessionStatus::AwaitingReview,
            claim: Claim::None,
            end: EndReason::VerifiedDone,
            continuations: vec![],
            model_calls: 4,
        },
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_scenario_suite_reaches_the_expected_decision_with_the_expected_model_calls() {
    let mut rows = Vec::new();
    let mut failures = Vec::new();
    for case in cases() {
        let mut setup = Setup { protocol: case.protocol, ..Default::default() };
        (case.setup)(&mut setup);
        let h = Harness::new(scenario(json!({"rules": case.rules})), setup).await;
        (case.prepare)(&h);
        let o = h.run("write the files the task needs").await;
        let actual = (o.status, o.claim.unwrap_or(Claim::None), o.end_reason, o.continuations(), o.model_calls());
        let expected = (case.status, case.claim, Some(case.end), case.continuations.clone(), case.model_calls);
        let ok = actual == expected;
        rows.push(format!(
            "{} | {:<70} | expected {:?}/{:?}/{:?} {:?} calls={} | actual {:?}/{:?}/{:?} {:?} calls={}",
            if ok { "ok  " } else { "FAIL" },
            case.name,
            expected.0,
            expected.1,
            case.end,
            expected.3,
            expected.4,
            actual.0,
            actual.1,
            actual.2.map(|e| e.as_str()).unwrap_or("-"),
            actual.3,
            actual.4
        ));
        assert!(o.gap_free(), "{}: events must be gap-free", case.name);
        if !ok {
            failures.push(case.name);
        }
    }
    println!("\nscenario | expected (status/claim/end reason, continuations, model calls) | actual");
    for r in &rows {
        println!("{r}");
    }
    println!("{} scenarios, {} passed, {} failed", rows.len(), rows.len() - failures.len(), failures.len());
    assert!(failures.is_empty(), "scenarios that decided wrongly: {failures:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn continuations_are_stored_as_continuations_and_sent_as_tagged_reminders() {
    let rules = json!([
        evaluator_times(not_done_verdict(&["write b.txt"], "Write b.txt with the letter B."), 1),
        evaluator(done_verdict()),
        agent(json!({"last_message_contains": "Created b.txt"}), text("Both files are written: a.txt holds A and b.txt holds B.")),
        agent(json!({"last_message_contains": "b.txt"}), calls(vec![write("b.txt", "B")])),
        agent(json!({"last_message_contains": "Created a.txt"}), text(DONE)),
        agent(json!({}), calls(vec![write("a.txt", "A")])),
    ]);
    let h = Harness::new(scenario(json!({"rules": rules})), Setup::default()).await;
    let o = h.run("write the two letter files").await;
    assert_eq!(o.end_reason, Some(EndReason::VerifiedDone));
    let cont = o.events.iter().find_map(|e| match &e.event {
        finishline_engine::event::EngineEvent::MessageCreated { role, source, text, .. } if *role == MessageRole::Continuation => Some((*source, text.clone())),
        _ => None,
    });
    assert_eq!(cont.as_ref().map(|c| c.0), Some(Some(ContinuationSource::Evaluator)), "the continuation is stored with its own role and source");
    let users = o.events.iter().filter(|e| matches!(&e.event, finishline_engine::event::EngineEvent::MessageCreated { role: MessageRole::User, text: Some(t), .. } if t.contains("b.txt with the letter"))).count();
    assert_eq!(users, 0, "a continuation is never stored as the person's message");
    let sent = o.requests.iter().find(|r| r.last_message.contains("Write b.txt with the letter B.")).expect("the agent received the continuation");
    assert!(sent.last_message.contains("<system-reminder source=\"evaluator\" attempt=\"1/5\">"), "sent as a tagged reminder: {}", sent.last_message);
    assert_eq!(h.read("b.txt").as_deref(), Some("B"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_continuation_that_answers_complete_task_goes_inside_its_tool_result() {
    let rules = json!([
        evaluator_times(not_done_verdict(&["write b.txt"], "b.txt is missing."), 1),
        evaluator(done_verdict()),
        agent(json!({"last_message_contains": "b.txt is missing"}), calls(vec![write("b.txt", "B"), complete("success")])),
        agent(json!({}), calls(vec![complete("success")])),
    ]);
    let h = Harness::new(scenario(json!({"rules": rules})), Setup { protocol: Protocol::Anthropic, ..Default::default() }).await;
    let o = h.run("write b.txt").await;
    assert_eq!(o.end_reason, Some(EndReason::VerifiedDone));
    let second = &o.requests.iter().filter(|r| r.kind == fake_llm::RequestKind::Agent).nth(1).unwrap().body;
    let last = second["messages"].as_array().unwrap().last().unwrap();
    assert_eq!(last["role"], "user");
    let block = &last["content"][0];
    assert_eq!(block["type"], "tool_result", "the reminder answers the complete_task call, as every call needs a result");
    assert!(block["content"].as_str().unwrap().contains("<system-reminder source=\"evaluator\""));
}

/// The evaluator's "not done: b.txt is missing", then the agent wrote b.txt, and the run ended
/// stuck on a failing check before the evaluator was asked again: its word was on files since
/// changed, and the review must not show it as the verdict on the work in front of the person.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_verdict_on_files_the_agent_changed_since_is_not_the_reviews_verdict() {
    let rules = json!([
        evaluator_times(not_done_verdict(&["write b.txt"], "b.txt is missing."), 1),
        evaluator(done_verdict()),
        agent(json!({"last_message_contains": "failed (exit code"}), text("Fixed, surely: the check should pass now that both files are there.")),
        agent(json!({"last_message_contains": "Created bad.txt"}), text("Both written: b.txt holds B, and the rest is done.")),
        agent(json!({"last_message_contains": "b.txt is missing"}), calls(vec![write("b.txt", "B"), write("bad.txt", "oops")])),
        agent(json!({"last_message_contains": "Created a.txt"}), text(DONE)),
        agent(json!({}), calls(vec![write("a.txt", "A")])),
    ]);
    let setup = Setup { verify_commands: vec!["test ! -f bad.txt || (echo bad.txt must not exist; exit 1)".into()], ..Default::default() };
    let h = Harness::new(scenario(json!({"rules": rules})), setup).await;
    let o = h.run("write a.txt and b.txt").await;
    assert_eq!(o.end_reason, Some(EndReason::Stuck), "the same failing check twice");
    assert_eq!(h.read("b.txt").as_deref(), Some("B"), "written after the evaluator's word");
    let (verdict, summary) = o
        .events
        .iter()
        .find_map(|e| match &e.event {
            finishline_engine::event::EngineEvent::ReviewRequested { verdict, verdict_summary, .. } => Some((*verdict, verdict_summary.clone())),
            _ => None,
        })
        .expect("a review");
    assert_eq!((verdict, summary), (None, None), "not the evaluator's verdict on this work: it was not asked at the end");
    let evaluated = o.events.iter().filter(|e| matches!(e.event, finishline_engine::event::EngineEvent::Evaluation { .. })).count();
    assert_eq!(evaluated, 1, "its earlier answer stays in the story");
}
