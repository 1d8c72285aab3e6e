//! A plan stopped between its steps: cancelled while the manager revises it, or while the
//! whole request is checked after the last step. Going on picks up the plan's own next move (the
//! revision, the final check), never an ordinary run over the whole history that leaves the
//! pending steps unrun; a message the person sends there reaches the step it stopped after.
//! And each step is judged on its own evidence: a file that was already there proves nothing
//! about the step, and the last step's verdict on the whole request sees the whole request.

mod support {
    pub mod harness;
}

use std::time::Duration;

use fake_llm::RequestKind;
use finishline_engine::domain::*;
use finishline_engine::event::EngineEvent;
use finishline_engine::plan::state::PlanState;
use serde_json::{json, Value};
use support::harness::*;

/// Waits until the server has a request of `kind` whose text holds `text`, then cancels.
async fn cancel_when_asked(h: &Harness, sid: &SessionId, kind: RequestKind, text: &str) {
    let t = std::time::Instant::now();
    while !h.server.requests().iter().any(|r| r.kind == kind && r.all_text.contains(text)) {
        if t.elapsed() > Duration::from_secs(30) {
            for e in h.outcome(sid).events {
                eprintln!("{}", serde_json::to_string(&e.event).unwrap().chars().take(300).collect::<String>());
            }
            panic!("the {kind:?} call with “{text}” is made");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(h.engine.cancel(sid), finishline_engine::agent::Stop::Stopped);
}

async fn finished(h: &Harness, handle: tokio::task::JoinHandle<()>, sid: &SessionId) -> Outcome {
    tokio::time::timeout(Duration::from_secs(60), handle).await.expect("the run ends in time").unwrap();
    h.outcome(sid)
}

async fn start(h: &Harness, task: &str) -> Outcome {
    let (sid, handle) = h.engine.start_task(task, &h.ws(), PlanMode::On).unwrap();
    finished(h, handle, &sid).await
}

fn steps(o: &Outcome) -> Vec<(String, StepState)> {
    PlanState::from_events(&o.events).unwrap().steps.iter().map(|s| (s.step.title.clone(), s.state)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_cancelled_while_the_manager_revises_it_goes_on_with_the_revision() {
    let revision = json!({"cause": "b.txt was blocked", "steps": [
        {"title": "Write B.txt instead", "instructions": "Write B.txt.", "criteria": ["B.txt exists"], "depends_on": []},
        {"title": "Write c.txt", "instructions": "Write c.txt.", "criteria": ["c.txt exists"], "depends_on": []}
    ]});
    let blocked = json!({"tool_calls": [{"name": "complete_task", "arguments": {"status": "blocked", "summary": "b.txt cannot be written", "original_request_summary": "write files", "remaining_work": "b.txt: the name is locked"}}]});
    let h = Harness::new(
        rules(json!([
            // The first revision never comes in time: the person cancels while it is awaited.
            {"when": {"kind": "manager", "any_message_contains": "<failed"}, "times": 1, "reply": {"text": revision.to_string(), "first_frame_delay_ms": 30000}},
            {"when": {"kind": "manager", "any_message_contains": "<failed"}, "reply": {"text": revision.to_string()}},
            {"when": {"kind": "manager"}, "reply": {"text": plan_json(&THREE)}},
            evaluator(done_verdict()),
            agent(json!({"last_message_contains": "Created"}), json!({"text": DONE})),
            agent(json!({"last_message_contains": "This step: Write a.txt"}), write_reply("a.txt")),
            agent(json!({"last_message_contains": "This step: Write b.txt"}), blocked),
            agent(json!({"last_message_contains": "This step: Write B.txt instead"}), write_reply("B.txt")),
            agent(json!({"last_message_contains": "This step: Write c.txt"}), write_reply("c.txt")),
        ])),
        Setup::default(),
    )
    .await;
    let (sid, handle) = h.engine.start_task("write a.txt, b.txt and c.txt", &h.ws(), PlanMode::On).unwrap();
    cancel_when_asked(&h, &sid, RequestKind::Manager, "<failed").await;
    let o = finished(&h, handle, &sid).await;
    assert_eq!(o.status, SessionStatus::Cancelled);

    let o = finished(&h, h.engine.send_message(&sid, "").unwrap(), &sid).await;
    assert_eq!(o.status, SessionStatus::AwaitingReview, "the plan went on to its review");
    assert_eq!(o.end_reason, Some(EndReason::VerifiedDone), "the revised plan got the task done");
    assert_eq!(
        steps(&o),
        vec![
            ("Write a.txt".into(), StepState::Done),
            ("Write b.txt".into(), StepState::Failed),
            ("Write c.txt".into(), StepState::Replaced),
            ("Write B.txt instead".into(), StepState::Done),
            ("Write c.txt".into(), StepState::Done),
        ],
        "the revision asked for before the cancel is asked for again and its steps run"
    );
    assert!(h.read("B.txt").is_some() && h.read("c.txt").is_some(), "the pending steps ran");
    let whole_history = o
        .requests
        .iter()
        .any(|r| r.kind == RequestKind::Agent && r.all_text.contains("This step: Write a.txt") && r.all_text.contains("This step: Write b.txt"));
    assert!(!whole_history, "no agent call is made over the whole session's history");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_to_a_plan_stopped_while_the_manager_revised_it_shapes_the_revision() {
    let revision = json!({"cause": "b.txt is locked", "steps": [
        {"title": "Write B.txt instead", "instructions": "Write B.txt.", "criteria": ["B.txt exists"], "depends_on": []}
    ]});
    let blocked = json!({"tool_calls": [{"name": "complete_task", "arguments": {"status": "blocked", "summary": "b.txt is locked", "original_request_summary": "write files", "remaining_work": "b.txt"}}]});
    let h = Harness::new(
        rules(json!([
            {"when": {"kind": "manager", "any_message_contains": "<failed"}, "times": 1, "reply": {"text": revision.to_string(), "first_frame_delay_ms": 30000}},
            {"when": {"kind": "manager", "any_message_contains": "<failed"}, "reply": {"text": revision.to_string()}},
            {"when": {"kind": "manager"}, "reply": {"text": plan_json(&THREE[..2])}},
            evaluator(done_verdict()),
            agent(json!({"last_message_contains": "This step: Write a.txt"}), write_reply("a.txt")),
            agent(json!({"last_message_contains": "This step: Write b.txt"}), blocked),
            agent(json!({"last_message_contains": "This step: Write B.txt instead"}), write_reply("B.txt")),
        ])),
        Setup::default(),
    )
    .await;
    let (sid, handle) = h.engine.start_task("write a.txt and b.txt", &h.ws(), PlanMode::On).unwrap();
    cancel_when_asked(&h, &sid, RequestKind::Manager, "<failed").await;
    finished(&h, handle, &sid).await;

    let o = finished(&h, h.engine.send_message(&sid, "call it B.txt instead, please").unwrap(), &sid).await;
    assert_eq!(o.status, SessionStatus::AwaitingReview, "the plan went on to its review");
    let revisions: Vec<_> = o.requests.iter().filter(|r| r.kind == RequestKind::Manager && r.all_text.contains("<failed")).collect();
    assert!(revisions.last().unwrap().all_text.contains("call it B.txt instead, please"), "the person's words reach the manager revising the plan");
    let step_b = o.requests.iter().filter(|r| r.kind == RequestKind::Agent && r.all_text.contains("This step: Write b.txt")).count();
    assert_eq!(step_b, 1, "the failed step is not run again");
    assert!(h.read("B.txt").is_some());
    assert!(
        o.has(|e| matches!(e, EngineEvent::MessageCreated { role: MessageRole::User, text: Some(t), .. } if t == "call it B.txt instead, please")),
        "the words are kept as the person's"
    );
}

fn three_with_a_slow_final_check(extra: Vec<Value>) -> fake_llm::Scenario {
    let mut list = vec![
        {
            // The final check (the whole request, not one step) is slow the first time.
            json!({"when": {"kind": "evaluator", "any_message_contains": "write a.txt, b.txt and c.txt"}, "times": 1, "reply": {"text": "{}", "first_frame_delay_ms": 30000}})
        },
        json!({"when": {"kind": "manager"}, "reply": {"text": plan_json(&THREE)}}),
        evaluator(done_verdict()),
    ];
    list.extend(extra);
    list.extend([
        agent(json!({"last_message_contains": "Created"}), json!({"text": DONE})),
        agent(json!({"last_message_contains": "This step: Write a.txt"}), write_reply("a.txt")),
        agent(json!({"last_message_contains": "This step: Write b.txt"}), write_reply("b.txt")),
        agent(json!({"last_message_contains": "This step: Write c.txt"}), write_reply("c.txt")),
    ]);
    rules(Value::Array(list))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_cancelled_in_its_final_check_is_checked_when_continued_not_worked_on_again() {
    let h = Harness::new(three_with_a_slow_final_check(vec![]), Setup::default()).await;
    let (sid, handle) = h.engine.start_task("write a.txt, b.txt and c.txt", &h.ws(), PlanMode::On).unwrap();
    cancel_when_asked(&h, &sid, RequestKind::Evaluator, "write a.txt, b.txt and c.txt").await;
    let o = finished(&h, handle, &sid).await;
    assert_eq!(o.status, SessionStatus::Cancelled);
    let agent_calls = o.calls_of(RequestKind::Agent);

    let o = finished(&h, h.engine.send_message(&sid, "").unwrap(), &sid).await;
    assert_eq!(o.status, SessionStatus::AwaitingReview);
    assert_eq!(o.end_reason, Some(EndReason::VerifiedDone), "the final check was made and passed");
    assert_eq!(o.calls_of(RequestKind::Agent), agent_calls, "every step was done: the agent is not set to work again");
    assert_eq!(o.calls_of(RequestKind::Evaluator), 2, "the final check is asked again, once");
    assert!(steps(&o).iter().all(|(_, s)| *s == StepState::Done));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_to_a_plan_stopped_after_its_last_step_reaches_that_step_then_the_whole_is_checked() {
    let extra = vec![agent(json!({"last_message_contains": "also write d.txt"}), write_reply("d.txt"))];
    let h = Harness::new(three_with_a_slow_final_check(extra), Setup::default()).await;
    let (sid, handle) = h.engine.start_task("write a.txt, b.txt and c.txt", &h.ws(), PlanMode::On).unwrap();
    cancel_when_asked(&h, &sid, RequestKind::Evaluator, "write a.txt, b.txt and c.txt").await;
    finished(&h, handle, &sid).await;

    let o = finished(&h, h.engine.send_message(&sid, "also write d.txt").unwrap(), &sid).await;
    assert_eq!(o.status, SessionStatus::AwaitingReview, "the plan went on to its review");
    assert_eq!(h.read("d.txt").as_deref(), Some("d.txt contents"), "the agent did what the person asked");
    let asked = o.requests.iter().find(|r| r.kind == RequestKind::Agent && r.last_message.contains("also write d.txt")).expect("the agent was asked");
    assert!(asked.all_text.contains("This step: Write c.txt"), "the message goes on in the conversation of the step the plan stopped after");
    assert!(!asked.all_text.contains("This step: Write a.txt"), "not over the whole session's history");
    let last = o.requests.iter().rev().find(|r| r.kind == RequestKind::Evaluator).unwrap();
    assert!(last.all_text.contains("d.txt"), "the whole request is checked with the new work in it");
    assert!(steps(&o).iter().all(|(_, s)| *s == StepState::Done), "{:?}", steps(&o));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_whose_file_was_already_there_is_not_done_by_its_file_check_alone() {
    let h = Harness::new(
        rules(json!([
            {"when": {"kind": "manager"}, "reply": {"text": plan_json(&[("Rewrite notes.md as a list", "notes.md exists"), ("Write c.txt", "c.txt exists")])}},
            {"when": {"kind": "evaluator", "any_message_contains": "judge only this step"}, "reply": not_done_verdict(&["notes.md is not a list yet"], "Rewrite notes.md as a bullet list.")},
            evaluator(done_verdict()),
            agent(json!({"last_message_contains": "Created"}), json!({"text": DONE})),
            agent(json!({"last_message_contains": "Rewrite notes.md as a bullet list."}), json!({"tool_calls": [{"name": "write_file", "arguments": {"path": "notes.md", "content": "- old\n- notes\n"}}]})),
            agent(json!({"last_message_contains": "This step: Rewrite notes.md"}), json!({"tool_calls": [{"name": "read_file", "arguments": {"path": "notes.md"}}]})),
            agent(json!({"last_message_contains": "This step: Write c.txt"}), write_reply("c.txt")),
            agent(json!({}), json!({"text": "Done! notes.md is a list now."})),
        ])),
        Setup::default(),
    )
    .await;
    h.write("notes.md", "old notes\n");
    let o = start(&h, "rewrite notes.md as a list and write c.txt").await;
    assert!(
        o.requests.iter().any(|r| r.kind == RequestKind::Evaluator && r.all_text.contains("This step: Rewrite notes.md")),
        "a file that was there before the step proves nothing about it: the step was judged by the evaluator"
    );
    assert_eq!(h.read("notes.md").as_deref(), Some("- old\n- notes\n"), "the step was sent back until it did its work");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_last_steps_verdict_on_the_whole_request_sees_every_steps_files() {
    let two = [("Write a.txt", "a.txt greets the reader"), ("Write b.txt", "b.txt greets the reader")];
    let h = Harness::new(
        rules(json!([
            {"when": {"kind": "manager"}, "reply": {"text": plan_json(&two)}},
            evaluator(done_verdict()),
            agent(json!({"last_message_contains": "Created"}), json!({"text": DONE})),
            agent(json!({"last_message_contains": "This step: Write a.txt"}), write_reply("a.txt")),
            agent(json!({"last_message_contains": "This step: Write b.txt"}), write_reply("b.txt")),
        ])),
        Setup::default(),
    )
    .await;
    let o = start(&h, "write a.txt and b.txt").await;
    assert_eq!(o.end_reason, Some(EndReason::VerifiedDone));
    let last = o.requests.iter().rev().find(|r| r.kind == RequestKind::Evaluator).expect("the last step was judged");
    assert!(last.all_text.contains("The whole task:"), "the last step's verdict judges the whole request");
    assert!(last.all_text.contains("created a.txt"), "so it sees the earlier step's files too");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revision_that_spends_the_plans_last_call_leaves_no_call_for_the_new_step() {
    let revision = json!({"cause": "b.txt was never written", "steps": [{"title": "Write B.txt instead", "instructions": "Write B.txt.", "criteria": ["B.txt exists"], "depends_on": []}]});
    let h = Harness::new(
        rules(json!([
            {"when": {"kind": "manager", "any_message_contains": "<failed"}, "reply": {"text": revision.to_string()}},
            {"when": {"kind": "manager"}, "reply": {"text": plan_json(&THREE[..2])}},
            evaluator(done_verdict()),
            agent(json!({"last_message_contains": "This step: Write a.txt"}), write_reply("a.txt")),
            agent(json!({"any_message_contains": "This step: Write b.txt"}), json!({"tool_calls": [{"name": "read_file", "arguments": {"path": "a.txt"}}]})),
            agent(json!({}), write_reply("B.txt")),
        ])),
        // A single run may make 2 agent calls and 1 evaluation: the plan may make 5 calls. The
        // manager's plan, step 1's call, step 2's two (its step limit), then the revision: 5.
        Setup {
            completion: finishline_engine::judge::completion::CompletionConfig { max_steps: 2, continuation_budget: 0, ..Default::default() },
            ..Setup::default()
        },
    )
    .await;
    let o = start(&h, "write a.txt and b.txt").await;
    let kinds: Vec<RequestKind> = o.requests.iter().map(|r| r.kind).collect();
    assert_eq!(o.end_reason, Some(EndReason::PlanBudgetSpent), "{kinds:?}");
    assert_eq!(kinds.len(), 5, "no call past the plan's budget of 5: {kinds:?}");
    assert!(h.read("B.txt").is_none());
    let remaining =
        o.events.iter().rev().find_map(|e| if let EngineEvent::ReviewRequested { remaining, .. } = &e.event { Some(remaining.clone()) } else { None }).unwrap();
    assert!(remaining.contains(&"Step not done: Write B.txt instead".to_string()), "{remaining:?}");
    assert!(!remaining.contains(&"Step not done: Write b.txt".to_string()), "the step the revision took over is not left undone: {remaining:?}");
    let listed = h.store.session(&o.session).unwrap();
    assert_eq!((listed.plan_done, listed.plan_steps), (1, 2), "the list counts the plan's steps as revised: a.txt, then B.txt instead");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_plans_meter_counts_every_call_made_a_repair_of_an_unusable_answer_too() {
    let h = Harness::new(
        rules(json!([
            // The manager's first answer is prose: it is asked again (a repair), then plans.
            {"when": {"kind": "manager"}, "times": 1, "reply": {"text": "First a.txt, then b.txt, I think."}},
            {"when": {"kind": "manager"}, "reply": {"text": plan_json(&THREE[..2])}},
            {"when": {"kind": "evaluator"}, "times": 1, "reply": {"text": "It looks done to me."}},
            evaluator(done_verdict()),
            agent(json!({"last_message_contains": "Created"}), json!({"text": DONE})),
            agent(json!({"last_message_contains": "This step: Write a.txt"}), write_reply("a.txt")),
            agent(json!({"last_message_contains": "This step: Write b.txt"}), write_reply("b.txt")),
        ])),
        Setup::default(),
    )
    .await;
    let o = start(&h, "write a.txt and b.txt").await;
    assert_eq!(o.end_reason, Some(EndReason::VerifiedDone));
    let plan = PlanState::from_events(&o.events).unwrap();
    let kinds: Vec<RequestKind> = o.requests.iter().map(|r| r.kind).collect();
    assert_eq!(plan.spent.total() as usize, kinds.len(), "the meter counts every call the server got: {kinds:?} against {:?}", plan.spent);
}
