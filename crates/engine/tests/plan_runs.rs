//! Plan mode end to end through the fake provider: the manager's plan, each step as a run of its
//! own with a fresh conversation and its own evaluation, replanning when a step stalls, a plan
//! that fails honestly, Auto skipping the plan for a small task, an unusable manager answer, and
//! cancel in the middle of a step followed by a continue.

mod support {
    pub mod harness;
}

use std::os::unix::fs::FileTypeExt;
use std::time::Duration;

use fake_llm::RequestKind;
use finishline_engine::domain::*;
use finishline_engine::event::EngineEvent;
use finishline_engine::plan::state::PlanState;
use serde_json::{json, Value};
use support::harness::*;

fn manager(when: Value, text: String) -> Value {
    let mut w = when;
    w["kind"] = json!("manager");
    json!({"when": w, "reply": {"text": text}})
}

fn evaluator_when(when: Value, reply: Value) -> Value {
    let mut w = when;
    w["kind"] = json!("evaluator");
    json!({"when": w, "reply": reply})
}

async fn start(h: &Harness, task: &str, mode: PlanMode) -> Outcome {
    let (sid, handle) = h.engine.start_task(task, &h.ws(), mode).unwrap();
    tokio::time::timeout(Duration::from_secs(60), handle).await.expect("the plan ends in time").unwrap();
    h.outcome(&sid)
}

/// The errors the run recorded, for assertion messages.
fn errors(o: &Outcome) -> Vec<String> {
    o.events.iter().filter_map(|e| if let EngineEvent::Error { message, .. } = &e.event { Some(message.clone()) } else { None }).collect()
}

fn triggers(o: &Outcome) -> Vec<RunTrigger> {
    o.events.iter().filter_map(|e| if let EngineEvent::RunStarted { trigger } = &e.event { Some(*trigger) } else { None }).collect()
}

fn started(o: &Outcome) -> Vec<(usize, usize, usize)> {
    o.events
        .iter()
        .filter_map(|e| if let EngineEvent::PlanStepStarted { index, number, of, .. } = &e.event { Some((*index, *number, *of)) } else { None })
        .collect()
}

fn finished(o: &Outcome) -> Vec<(usize, EndReason)> {
    o.events
        .iter()
        .filter_map(|e| if let EngineEvent::PlanStepFinished { index, end_reason, .. } = &e.event { Some((*index, *end_reason)) } else { None })
        .collect()
}

/// A manager that plans THREE, an agent that writes each step's file, an evaluator that says done.
async fn three_steps() -> Harness {
    Harness::new(
        rules(json!([
            manager(json!({}), plan_json(&THREE)),
            evaluator(done_verdict()),
            agent(json!({"last_message_contains": "Created"}), json!({"text": DONE})),
            agent(json!({"last_message_contains": "This step: Write a.txt"}), write_reply("a.txt")),
            agent(json!({"last_message_contains": "This step: Write b.txt"}), write_reply("b.txt")),
            agent(json!({"last_message_contains": "This step: Write c.txt"}), write_reply("c.txt")),
        ])),
        Setup::default(),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_three_step_plan_runs_each_step_fresh_and_checks_the_whole_task_before_review() {
    let h = three_steps().await;
    let o = start(&h, "write a.txt, b.txt and c.txt", PlanMode::On).await;
    assert_eq!(o.status, SessionStatus::AwaitingReview, "a plan ends at the review gate like any task");
    assert_eq!(o.end_reason, Some(EndReason::VerifiedDone));
    for f in ["a.txt", "b.txt", "c.txt"] {
        assert!(h.read(f).is_some(), "step work lands in the workspace: {f}");
    }
    assert_eq!(triggers(&o), vec![RunTrigger::Task, RunTrigger::PlanStep, RunTrigger::PlanStep, RunTrigger::PlanStep], "each step is a run of its own");
    assert_eq!(started(&o), vec![(0, 1, 3), (1, 2, 3), (2, 3, 3)], "the person reads Step 1/3, 2/3, 3/3");
    assert_eq!(finished(&o), vec![(0, EndReason::VerifiedDone), (1, EndReason::VerifiedDone), (2, EndReason::VerifiedDone)]);
    assert_eq!(o.calls_of(RequestKind::Manager), 1, "one manager call makes the plan");
    assert_eq!(o.calls_of(RequestKind::Evaluator), 1, "each step's criteria (a file exists) are checked without a model; the whole task is judged once");
    assert_eq!(o.calls_of(RequestKind::Agent), 3, "a step ends as soon as its tools made its criteria hold: no extra answer per step");
    let step3 = o.requests.iter().find(|r| r.kind == RequestKind::Agent && r.last_message.contains("This step: Write c.txt")).unwrap();
    assert!(!step3.all_text.contains("a.txt contents"), "a step starts a fresh conversation: earlier steps' tool output is not in its context");
    assert!(step3.all_text.contains("[done] Write a.txt"), "the brief says what earlier steps did");
    let decided: Vec<Option<String>> =
        o.events.iter().filter_map(|e| if let EngineEvent::PlanStepFinished { decided_by, .. } = &e.event { Some(decided_by.clone()) } else { None }).collect();
    assert_eq!(decided[0].as_deref(), Some("checked without a model: a.txt exists ✓"), "each step says what decided it");
    let user_messages = o.events.iter().filter(|e| matches!(e.event, EngineEvent::MessageCreated { role: MessageRole::User, .. })).count();
    assert_eq!(user_messages, 1, "a step's brief is Finishline's text, never shown as the person's words");
    let plan = PlanState::from_events(&o.events).unwrap();
    assert!(plan.concluded && plan.steps.iter().all(|s| s.state == StepState::Done), "the stored plan shows every step done");
    assert!(o.gap_free());
    let md = finishline_engine::store::export::to_markdown(&h.store.timeline(&o.session).unwrap());
    for part in
        ["**▤ Plan (3 steps):**", "2. **Write b.txt**: Write b.txt. (done when: b.txt exists)", "#### Step 2/3: Write b.txt", "*Step ended: Verified done*"]
    {
        assert!(md.contains(part), "the export shows the plan and each step ({part}):\n{md}");
    }
    assert!(!md.contains("**Todos:**\n\n\n"), "no Todos heading over an emptied list:\n{md}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_runs_a_short_task_at_once_and_a_longer_one_after_one_manager_call() {
    let h = Harness::new(
        rules(json!([
            manager(json!({}), plan_json(&[("Write new.txt", "new.txt exists")])),
            evaluator(done_verdict()),
            agent(json!({"last_message_contains": "Created"}), json!({"text": DONE})),
            agent(json!({}), write_reply("new.txt")),
        ])),
        Setup::default(),
    )
    .await;
    let o = start(&h, "create new.txt", PlanMode::Auto).await;
    assert_eq!(o.status, SessionStatus::AwaitingReview);
    assert_eq!(o.end_reason, Some(EndReason::VerifiedDone));
    assert_eq!(o.calls_of(RequestKind::Manager), 0, "a one-line task never pays for planning");
    let long = "create new.txt with a short greeting in it, then check that the file ends with a newline and names today's date";
    std::fs::remove_file(h.ws().join("new.txt")).unwrap();
    let o = start(&h, long, PlanMode::Auto).await;
    assert_eq!(o.end_reason, Some(EndReason::VerifiedDone), "errors: {:?}", errors(&o));
    assert!(!o.has(|e| matches!(e, EngineEvent::PlanCreated { .. })), "a one-step plan is an ordinary run: no plan is shown");
    assert_eq!(triggers(&o), vec![RunTrigger::Task]);
    assert_eq!(o.calls_of(RequestKind::Manager), 1, "Auto costs one manager call on a longer task it runs as one");
    let before = h.server.requests().iter().filter(|r| r.kind == RequestKind::Manager).count();
    let plain = h.engine.start_task(long, &h.ws(), PlanMode::Off).unwrap();
    plain.1.await.unwrap();
    assert_eq!(h.server.requests().iter().filter(|r| r.kind == RequestKind::Manager).count(), before, "plan mode Off never asks the manager");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_that_stalls_is_replanned_with_a_cause_and_the_task_still_finishes() {
    let revision = json!({"cause": "b.txt was never written: the agent only talked about it", "steps": [
        {"title": "Create the second file", "instructions": "Write b.txt now with write_file.", "criteria": ["b.txt exists"], "depends_on": []},
        {"title": "Write c.txt", "instructions": "Write c.txt.", "criteria": ["c.txt exists"], "depends_on": []}
    ]});
    let h = Harness::new(
        rules(json!([
            manager(json!({"any_message_contains": "<failed"}), revision.to_string()),
            manager(json!({}), plan_json(&THREE)),
            evaluator_when(json!({"any_message_contains": "This step: Write b.txt"}), not_done_verdict(&["b.txt is missing"], "Write b.txt with write_file.")),
            evaluator(done_verdict()),
            agent(json!({"last_message_contains": "Created"}), json!({"text": DONE})),
            agent(json!({"last_message_contains": "This step: Write a.txt"}), write_reply("a.txt")),
            agent(json!({"last_message_contains": "This step: Create the second file"}), write_reply("b.txt")),
            agent(json!({"last_message_contains": "This step: Write c.txt"}), write_reply("c.txt")),
            agent(json!({}), json!({"text": "I will get to b.txt in a moment, it is nearly ready."})),
        ])),
        Setup::default(),
    )
    .await;
    let o = start(&h, "write a.txt, b.txt and c.txt", PlanMode::On).await;
    assert_eq!(o.status, SessionStatus::AwaitingReview, "errors: {:?}", errors(&o));
    assert_eq!(o.end_reason, Some(EndReason::VerifiedDone), "the revised plan got the task done");
    assert_eq!(h.read("b.txt").as_deref(), Some("b.txt contents"));
    let cause = o
        .events
        .iter()
        .find_map(|e| if let EngineEvent::PlanRevised { cause, first, .. } = &e.event { Some((cause.clone(), *first)) } else { None })
        .expect("the plan was revised");
    assert!(cause.0.contains("never written"), "the person sees why the plan changed: {}", cause.0);
    let plan = PlanState::from_events(&o.events).unwrap();
    let states: Vec<(String, StepState)> = plan.steps.iter().map(|s| (s.step.title.clone(), s.state)).collect();
    assert_eq!(
        states,
        vec![
            ("Write a.txt".into(), StepState::Done),
            ("Write b.txt".into(), StepState::Failed),
            ("Write c.txt".into(), StepState::Replaced),
            ("Create the second file".into(), StepState::Done),
            ("Write c.txt".into(), StepState::Done),
        ],
        "old steps stay visible: the failed one as failed, the one after it as replaced"
    );
    assert_eq!(plan.steps[2].replaced_because.as_deref(), Some(cause.0.as_str()));
    assert_eq!(plan.number_of(4), (4, 4), "replaced steps do not count in Step n/m");
    let failed = finished(&o).into_iter().find(|(i, _)| *i == 1).unwrap();
    assert_ne!(failed.1, EndReason::VerifiedDone, "a stalled step is never reported upward as done");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_two_replans_a_stuck_plan_goes_to_review_as_plan_failed_naming_the_step() {
    let again = json!({"cause": "the file is locked", "steps": [{"title": "Try the report again", "instructions": "Write report.md.", "criteria": ["report.md exists"], "depends_on": []}]});
    let h = Harness::new(
        rules(json!([
            manager(json!({"any_message_contains": "<failed"}), again.to_string()),
            manager(json!({}), plan_json(&[("Write the report", "report.md exists"), ("Write c.txt", "c.txt exists")])),
            evaluator_when(json!({"any_message_contains": "judge only this step"}), not_done_verdict(&["report.md is missing"], "Write report.md.")),
            evaluator(done_verdict()),
            agent(json!({}), json!({"text": "The report needs more thought before I can write it down."})),
        ])),
        Setup::default(),
    )
    .await;
    let o = start(&h, "write the report and c.txt", PlanMode::On).await;
    assert_eq!(o.status, SessionStatus::AwaitingReview, "a failed plan still reaches the person");
    assert_eq!(o.end_reason, Some(EndReason::PlanFailed));
    let revisions = o.events.iter().filter(|e| matches!(e.event, EngineEvent::PlanRevised { .. })).count();
    assert_eq!(revisions, 2, "at most two replans per task");
    assert_eq!(o.calls_of(RequestKind::Manager), 3, "one plan and two revisions");
    let remaining =
        o.events.iter().rev().find_map(|e| if let EngineEvent::ReviewRequested { remaining, .. } = &e.event { Some(remaining.clone()) } else { None }).unwrap();
    assert!(remaining.iter().any(|r| r.contains("Try the report again")), "the review names the failed step: {remaining:?}");
    let plan = PlanState::from_events(&o.events).unwrap();
    assert!(plan.steps.iter().all(|s| s.state != StepState::Done), "no step is shown as done when none was");
    assert!(h.read("c.txt").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_manager_answer_that_is_not_json_runs_the_task_as_one_run_and_says_so() {
    let h = Harness::new(
        rules(json!([
            manager(json!({}), "First I would look at the files, then write them.".to_string()),
            evaluator(done_verdict()),
            agent(json!({"last_message_contains": "Created"}), json!({"text": DONE})),
            agent(json!({}), write_reply("a.txt")),
        ])),
        Setup::default(),
    )
    .await;
    let o = start(&h, "write a.txt", PlanMode::On).await;
    assert_eq!(o.status, SessionStatus::AwaitingReview, "errors: {:?}", errors(&o));
    assert_eq!(o.end_reason, Some(EndReason::VerifiedDone), "the task is not lost because the plan was");
    assert_eq!(o.calls_of(RequestKind::Manager), 2, "the answer, then its one repair");
    let said =
        o.has(|e| matches!(e, EngineEvent::Error { code, message } if *code == finishline_engine::ErrorCode::Plan && message.contains("runs as one run")));
    assert!(said, "the person is told the plan could not be made");
    assert!(!o.has(|e| matches!(e, EngineEvent::PlanCreated { .. })));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_in_step_two_then_continue_picks_up_step_two_without_redoing_step_one() {
    let h = Harness::new(
        rules(json!([
            manager(json!({}), plan_json(&THREE)),
            evaluator(done_verdict()),
            agent(json!({"last_message_contains": "Created"}), json!({"text": DONE})),
            agent(json!({"last_message_contains": "This step: Write a.txt"}), write_reply("a.txt")),
            {"when": {"kind": "agent", "last_message_contains": "This step: Write b.txt"}, "times": 1, "reply": {"text": "thinking about b.txt for a long while", "chunk_delay_ms": 400}},
            agent(json!({"any_message_contains": "This step: Write b.txt"}), write_reply("b.txt")),
            agent(json!({"last_message_contains": "This step: Write c.txt"}), write_reply("c.txt")),
        ])),
        Setup::default(),
    )
    .await;
    let (sid, handle) = h.engine.start_task("write a.txt, b.txt and c.txt", &h.ws(), PlanMode::On).unwrap();
    // Cancel while step 2's model answer streams (not between its start and its first call).
    let t = std::time::Instant::now();
    loop {
        let o = h.outcome(&sid);
        if started(&o).len() == 2 && o.has(|e| matches!(e, EngineEvent::TextDelta { text, .. } if text.contains("thinking"))) {
            break;
        }
        assert!(t.elapsed() < Duration::from_secs(30), "step 2's answer streams");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(h.engine.cancel(&sid), finishline_engine::agent::Stop::Stopped, "step 2 is running and can be stopped");
    tokio::time::timeout(Duration::from_secs(20), handle).await.unwrap().unwrap();
    let o = h.outcome(&sid);
    assert_eq!(o.status, SessionStatus::Cancelled);
    assert_eq!(PlanState::from_events(&o.events).unwrap().running_step(), Some(1), "the plan remembers the step it was in");
    let handle = h.engine.send_message(&sid, "").unwrap();
    let dump = |o: &Outcome| {
        o.events
            .iter()
            .map(|e| format!("{} {:?} {}", e.seq, e.run_id, serde_json::to_string(&e.event).unwrap().chars().take(140).collect::<String>()))
            .collect::<Vec<_>>()
            .join("\n")
    };
    tokio::time::timeout(Duration::from_secs(60), handle).await.unwrap().unwrap();
    let o = h.outcome(&sid);
    assert_eq!(o.status, SessionStatus::AwaitingReview, "{}", dump(&o));
    assert_eq!(o.end_reason, Some(EndReason::VerifiedDone));
    let step_one_calls = o.requests.iter().filter(|r| r.kind == RequestKind::Agent && r.last_message.contains("This step: Write a.txt")).count();
    assert_eq!(step_one_calls, 1, "continuing does not redo a finished step");
    assert_eq!(started(&o), vec![(0, 1, 3), (1, 2, 3), (2, 3, 3)]);
    assert_eq!(finished(&o).len(), 3);
    assert!(h.read("c.txt").is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_changes_after_a_plan_goes_to_the_manager_which_adds_steps_that_run_and_are_checked() {
    let more = json!({"cause": "the person also wants d.txt", "steps": [{"title": "Write d.txt", "instructions": "Write d.txt.", "criteria": ["d.txt exists"], "depends_on": []}]});
    let h = Harness::new(
        rules(json!([
            manager(json!({"any_message_contains": "<feedback>"}), more.to_string()),
            manager(json!({}), plan_json(&THREE[..2])),
            evaluator(done_verdict()),
            agent(json!({"last_message_contains": "Created"}), json!({"text": DONE})),
            agent(json!({"last_message_contains": "This step: Write a.txt"}), write_reply("a.txt")),
            agent(json!({"last_message_contains": "This step: Write b.txt"}), write_reply("b.txt")),
            agent(json!({"last_message_contains": "This step: Write d.txt"}), write_reply("d.txt")),
        ])),
        Setup::default(),
    )
    .await;
    let o = start(&h, "write a.txt and b.txt", PlanMode::On).await;
    assert_eq!(o.status, SessionStatus::AwaitingReview, "errors: {:?}", errors(&o));
    h.engine.submit_review(&o.review_id(), Decision::RequestChanges, Some("also write d.txt".into()), false, false, DecidedBy::Person).unwrap();
    let o = h.wait_idle(&o.session).await;
    assert_eq!(o.status, SessionStatus::AwaitingReview, "errors: {:?}", errors(&o));
    assert_eq!(o.end_reason, Some(EndReason::VerifiedDone));
    assert_eq!(h.read("d.txt").as_deref(), Some("d.txt contents"), "the new step did the feedback's work");
    let revised = o
        .events
        .iter()
        .find_map(|e| if let EngineEvent::PlanRevised { for_feedback, cause, .. } = &e.event { Some((*for_feedback, cause.clone())) } else { None })
        .unwrap();
    assert!(revised.0, "the revision is marked as the person's, so it spends no replan");
    assert!(revised.1.contains("d.txt"));
    assert_eq!(started(&o).last(), Some(&(2, 3, 3)), "the added step is Step 3/3 of the plan");
    let plan = PlanState::from_events(&o.events).unwrap();
    assert_eq!(plan.replans(), 0);
    assert!(plan.concluded && plan.steps.iter().all(|s| s.state == StepState::Done));
    let feedback =
        o.events.iter().any(|e| matches!(&e.event, EngineEvent::MessageCreated { role: MessageRole::User, text: Some(t), .. } if t == "also write d.txt"));
    assert!(feedback, "the feedback is the person's own message in the timeline");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_reviewed_first_waits_for_the_person_who_edits_it_then_it_runs_as_edited() {
    let h = Harness::new(
        rules(json!([
            manager(json!({}), plan_json(&THREE)),
            evaluator(done_verdict()),
            agent(json!({"last_message_contains": "Created"}), json!({"text": DONE})),
            agent(json!({"last_message_contains": "This step: Write a.txt"}), write_reply("a.txt")),
            agent(json!({"last_message_contains": "This step: Write the notes"}), write_reply("notes.txt")),
            agent(json!({}), write_reply("unexpected.txt")),
        ])),
        Setup { review_plan: true, ..Setup::default() },
    )
    .await;
    let o = start(&h, "write a.txt, b.txt and c.txt", PlanMode::On).await;
    assert_eq!(o.status, SessionStatus::AwaitingApproval, "the plan waits for the person before anything runs");
    assert_eq!(o.calls_of(RequestKind::Agent), 0, "no step ran before the go-ahead");
    assert!(PlanState::from_events(&o.events).unwrap().awaiting_review);
    assert!(h.engine.send_message(&o.session, "go").is_err(), "a waiting plan is answered, not talked over");

    let mut steps: Vec<finishline_engine::plan::PlanStep> = PlanState::from_events(&o.events).unwrap().steps.iter().map(|s| s.step.clone()).collect();
    steps.truncate(1);
    steps.push(finishline_engine::plan::PlanStep {
        title: "Write the notes".into(),
        instructions: "Write notes.txt.".into(),
        criteria: vec!["notes.txt exists".into(), "  ".into()],
        depends_on: vec![0, 5],
        verify: vec![],
    });
    let bad = h.engine.run_plan(&o.session, Some(vec![])).unwrap_err();
    assert!(bad.to_string().contains("no steps"), "an emptied plan is refused with what to do: {bad}");
    let handle = h.engine.run_plan(&o.session, Some(steps)).unwrap();
    tokio::time::timeout(Duration::from_secs(60), handle).await.unwrap().unwrap();
    let o = h.wait_idle(&o.session).await;
    assert_eq!(o.status, SessionStatus::AwaitingReview, "errors: {:?}", errors(&o));
    assert_eq!(o.end_reason, Some(EndReason::VerifiedDone));
    assert!(h.read("notes.txt").is_some() && h.read("b.txt").is_none(), "the plan ran as the person edited it");
    let reviewed = o
        .events
        .iter()
        .find_map(|e| if let EngineEvent::PlanReviewed { approved, edited, steps } = &e.event { Some((*approved, *edited, steps.clone())) } else { None })
        .unwrap();
    assert!(reviewed.0 && reviewed.1, "the log says the person edited the plan");
    assert_eq!(reviewed.2[1].criteria, vec!["notes.txt exists"], "blank criteria are dropped");
    assert_eq!(reviewed.2[1].depends_on, vec![0], "a step can only wait for earlier steps");
    assert_eq!(started(&o), vec![(0, 1, 2), (1, 2, 2)]);
    assert!(h.engine.run_plan(&o.session, None).is_err(), "an answered plan cannot be run twice");
}

/// Steps the person removed at the plan's go-ahead are theirs to remove: the steps' briefs, the
/// evaluator at the end and the plan itself say so. The whole task was judged as first typed
/// ("write a.txt, b.txt and c.txt"), and an evaluator would have sent the agent back for the step
/// the person took out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steps_the_person_removed_from_the_plan_are_not_judged_missing() {
    let h = Harness::new(
        rules(json!([
            manager(json!({}), plan_json(&THREE)),
            evaluator(done_verdict()),
            agent(json!({"last_message_contains": "Created"}), json!({"text": DONE})),
            agent(json!({"last_message_contains": "This step: Write a.txt"}), write_reply("a.txt")),
            agent(json!({"last_message_contains": "This step: Write e.txt"}), write_reply("e.txt")),
            agent(json!({}), write_reply("unexpected.txt")),
        ])),
        Setup { review_plan: true, ..Setup::default() },
    )
    .await;
    let o = start(&h, "write a.txt, b.txt and c.txt", PlanMode::On).await;
    let made: Vec<finishline_engine::plan::PlanStep> = PlanState::from_events(&o.events).unwrap().steps.iter().map(|s| s.step.clone()).collect();
    let mut steps = vec![made[0].clone()];
    steps.push(finishline_engine::plan::PlanStep {
        title: "Write e.txt".into(),
        instructions: "Write e.txt.".into(),
        // Added without a "done when": the brief says what then decides it.
        criteria: vec![],
        depends_on: vec![],
        verify: vec![],
    });
    let handle = h.engine.run_plan(&o.session, Some(steps)).unwrap();
    tokio::time::timeout(Duration::from_secs(60), handle).await.unwrap().unwrap();
    let o = h.wait_idle(&o.session).await;
    assert_eq!(o.end_reason, Some(EndReason::VerifiedDone), "errors: {:?}", errors(&o));
    let edits = PlanState::from_events(&o.events).unwrap().person_edits.expect("the plan knows the person edited it");
    assert_eq!(edits.removed, vec![made[1].title.clone(), made[2].title.clone()]);
    assert_eq!(edits.added, vec!["Write e.txt".to_string()]);
    let requests = h.server.requests();
    let first = requests.iter().find(|r| r.kind == RequestKind::Agent && r.last_message.contains("This step: Write a.txt")).unwrap();
    assert!(first.body.to_string().contains("They removed:"), "the first step's brief is told the edits too");
    let brief = requests.iter().find(|r| r.kind == RequestKind::Agent && r.last_message.contains("This step: Write e.txt")).unwrap();
    let last_judged = requests.iter().rev().find(|r| r.kind == RequestKind::Evaluator).unwrap();
    for (who, body) in [("the step's brief", brief.body.to_string()), ("the evaluator at the end", last_judged.body.to_string())] {
        assert!(body.contains("removed") && body.contains(&made[2].title), "{who} is told the person removed the step: {body}");
        assert!(body.contains("Write e.txt"), "{who} is told of the step the person added");
    }
    let brief = brief.body.to_string();
    assert!(
        brief.contains("It is done when: its instructions above are carried out"),
        "a step without criteria is not left with \"done when:\" and nothing: {brief}"
    );
    let md = finishline_engine::store::export::to_markdown(&h.store.timeline(&o.session).unwrap());
    assert!(md.contains("**▤ Plan revised:** you edited it before it ran: removed \"Write b.txt\", \"Write c.txt\"; added \"Write e.txt\""), "{md}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_plan_that_waits_ends_the_task_with_nothing_run() {
    let h = Harness::new(
        rules(json!([manager(json!({}), plan_json(&THREE)), agent(json!({}), write_reply("a.txt"))])),
        Setup { review_plan: true, ..Setup::default() },
    )
    .await;
    let o = start(&h, "write a.txt, b.txt and c.txt", PlanMode::On).await;
    assert_eq!(o.status, SessionStatus::AwaitingApproval);
    assert_eq!(h.engine.cancel(&o.session), finishline_engine::agent::Stop::Stopped, "Cancel answers a waiting plan");
    let o = h.outcome(&o.session);
    assert_eq!(o.status, SessionStatus::Cancelled);
    let plan = PlanState::from_events(&o.events).unwrap();
    assert!(plan.steps.iter().all(|s| s.state == StepState::Skipped), "no step is shown as pending in a cancelled plan");
    assert!(h.read("a.txt").is_none());
}

/// A step its checks first found undone ("Done!" with nothing written), then done once the agent
/// wrote the file: it is recorded by the check that passed it, not the one that sent it back
/// ("Verified done: … b.txt exists ✗" read as a contradiction).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_its_checks_passed_on_a_second_look_keeps_the_passing_check() {
    let h = Harness::new(
        rules(json!([
            manager(json!({}), plan_json(&THREE[..2])),
            evaluator(done_verdict()),
            agent(json!({"last_message_contains": "do not hold yet"}), write_reply("a.txt")),
            agent(json!({"last_message_contains": "Created"}), json!({"text": DONE})),
            agent(json!({"last_message_contains": "This step: Write a.txt"}), json!({"text": DONE})),
            agent(json!({"last_message_contains": "This step: Write b.txt"}), write_reply("b.txt")),
        ])),
        Setup::default(),
    )
    .await;
    let o = start(&h, "write a.txt and b.txt", PlanMode::On).await;
    assert_eq!(o.status, SessionStatus::AwaitingReview, "errors: {:?}", errors(&o));
    assert!(o.has(|e| matches!(e, EngineEvent::Continuation { source: ContinuationSource::StepChecks, .. })), "its checks sent it back first");
    let step = PlanState::from_events(&o.events).unwrap().steps[0].clone();
    assert_eq!(step.state, StepState::Done);
    let said = format!("{:?} / {:?}", step.summary, step.decided_by);
    assert!(!said.contains('✗'), "the step is recorded by the check that passed it: {said}");
}

/// Resume after cancelling a plan at its go-ahead goes on from where it stopped: the plan waits
/// for the go-ahead again, as the manager made it, and runs when given it. It was an ordinary run
/// over the whole task, beside a plan panel saying "Not run".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resuming_a_plan_cancelled_at_its_go_ahead_brings_it_back_for_the_go_ahead() {
    let h = Harness::new(
        rules(json!([
            manager(json!({}), plan_json(&THREE[..2])),
            evaluator(done_verdict()),
            agent(json!({"last_message_contains": "Created"}), json!({"text": DONE})),
            agent(json!({"last_message_contains": "This step: Write a.txt"}), write_reply("a.txt")),
            agent(json!({"last_message_contains": "This step: Write b.txt"}), write_reply("b.txt")),
            agent(json!({}), write_reply("unplanned.txt")),
        ])),
        Setup { review_plan: true, ..Setup::default() },
    )
    .await;
    let o = start(&h, "write a.txt and b.txt", PlanMode::On).await;
    assert_eq!(h.engine.cancel(&o.session), finishline_engine::agent::Stop::Stopped);
    let cancelled = PlanState::from_events(&h.outcome(&o.session).events).unwrap();
    assert!(cancelled.declined, "the plan says the person cancelled it before it ran");

    let handle = h.engine.send_message(&o.session, "").unwrap();
    tokio::time::timeout(Duration::from_secs(60), handle).await.unwrap().unwrap();
    let o = h.wait_idle(&o.session).await;
    assert_eq!(o.status, SessionStatus::AwaitingApproval, "errors: {:?}", errors(&o));
    assert_eq!(o.calls_of(RequestKind::Agent), 0, "nothing ran");
    assert!(h.read("unplanned.txt").is_none());
    let plan = PlanState::from_events(&o.events).unwrap();
    assert!(plan.awaiting_review && !plan.declined && !plan.concluded, "{plan:?}");
    assert_eq!(
        plan.steps.iter().map(|s| (s.step.title.as_str(), s.state)).collect::<Vec<_>>(),
        vec![("Write a.txt", StepState::Pending), ("Write b.txt", StepState::Pending)]
    );
    assert_eq!(o.calls_of(RequestKind::Manager), 1, "the same plan, not a new one");

    let handle = h.engine.run_plan(&o.session, None).unwrap();
    tokio::time::timeout(Duration::from_secs(60), handle).await.unwrap().unwrap();
    let o = h.wait_idle(&o.session).await;
    assert_eq!(o.status, SessionStatus::AwaitingReview, "errors: {:?}", errors(&o));
    assert!(h.read("a.txt").is_some() && h.read("b.txt").is_some() && h.read("unplanned.txt").is_none());
}

/// Words sent to a plan cancelled at its go-ahead run the task without it, as the window says;
/// a Resume after that run is cancelled goes on with that run, not back to the plan.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn words_sent_to_a_plan_cancelled_at_its_go_ahead_run_the_task_without_it() {
    let h = Harness::new(
        rules(json!([
            manager(json!({}), plan_json(&THREE[..2])),
            evaluator(done_verdict()),
            agent(json!({"last_message_contains": "Created"}), json!({"text": DONE})),
            agent(json!({}), write_reply("unplanned.txt")),
        ])),
        Setup { review_plan: true, ..Setup::default() },
    )
    .await;
    let o = start(&h, "write a.txt and b.txt", PlanMode::On).await;
    assert_eq!(h.engine.cancel(&o.session), finishline_engine::agent::Stop::Stopped);
    let handle = h.engine.send_message(&o.session, "just write unplanned.txt").unwrap();
    tokio::time::timeout(Duration::from_secs(60), handle).await.unwrap().unwrap();
    let o = h.wait_idle(&o.session).await;
    assert_eq!(o.status, SessionStatus::AwaitingReview, "errors: {:?}", errors(&o));
    assert!(h.read("unplanned.txt").is_some());
    assert!(!PlanState::from_events(&o.events).unwrap().declined, "the plan is history now, not waiting to come back");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_can_read_an_earlier_steps_log_when_the_summary_is_not_enough() {
    let h = Harness::new(
        rules(json!([
            manager(json!({}), plan_json(&THREE[..2])),
            evaluator(done_verdict()),
            // Before the "Created" rule: step 1's log mentions it, and the step must still write b.txt.
            agent(json!({"last_message_contains": "Step 1 (Write a.txt)"}), write_reply("b.txt")),
            agent(json!({"last_message_contains": "Created"}), json!({"text": DONE})),
            agent(json!({"last_message_contains": "This step: Write a.txt"}), write_reply("a.txt")),
            agent(json!({"last_message_contains": "This step: Write b.txt"}), json!({"tool_calls": [{"name": "session_log", "arguments": {"step": 1}}]})),
        ])),
        Setup::default(),
    )
    .await;
    let o = start(&h, "write a.txt and b.txt", PlanMode::On).await;
    assert_eq!(o.status, SessionStatus::AwaitingReview, "errors: {:?}", errors(&o));
    let log = o.requests.iter().find(|r| r.last_message.contains("Step 1 (Write a.txt)")).expect("the log reached the model");
    assert!(
        log.last_message.contains("AGENT CALLED write_file") && log.last_message.contains("a.txt contents"),
        "the log holds step 1's calls and inputs: {}",
        log.last_message
    );
    let offered = o.requests.iter().filter(|r| r.kind == RequestKind::Agent).all(|r| r.body.to_string().contains("session_log"));
    assert!(offered, "every step's request offers session_log");
    let single = h.engine.start_task("write z.txt", &h.ws(), PlanMode::Off).unwrap();
    let _ = single.1.await;
    let last = h.server.requests().into_iter().rev().find(|r| r.kind == RequestKind::Agent).unwrap();
    assert!(!last.body.to_string().contains("session_log"), "a run outside a plan is not offered a tool it cannot use");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_final_check_that_finds_work_missing_replans_and_the_added_step_finishes_the_task() {
    let revision = json!({"cause": "c.txt was asked for but no step wrote it", "steps": [
        {"title": "Write c.txt", "instructions": "Write c.txt.", "criteria": ["c.txt exists"], "depends_on": []}
    ]});
    let h = Harness::new(
        rules(json!([
            {"when": {"kind": "manager"}, "reply": {"text": plan_json(&THREE[..2])}, "times": 1},
            manager(json!({}), revision.to_string()),
            evaluator_when(json!({"any_message_contains": "judge only this step"}), done_verdict()),
            {"when": {"kind": "evaluator"}, "reply": not_done_verdict(&["c.txt is missing"], "Write c.txt."), "times": 1},
            evaluator(done_verdict()),
            agent(json!({"last_message_contains": "Created"}), json!({"text": DONE})),
            agent(json!({"last_message_contains": "This step: Write a.txt"}), write_reply("a.txt")),
            agent(json!({"last_message_contains": "This step: Write b.txt"}), write_reply("b.txt")),
            agent(json!({"last_message_contains": "This step: Write c.txt"}), write_reply("c.txt")),
        ])),
        Setup::default(),
    )
    .await;
    let o = start(&h, "write a.txt, b.txt and c.txt", PlanMode::On).await;
    assert_eq!(o.status, SessionStatus::AwaitingReview, "errors: {:?}", errors(&o));
    assert_eq!(o.end_reason, Some(EndReason::VerifiedDone), "the step the final check asked for got the task done");
    assert_eq!(h.read("c.txt").as_deref(), Some("c.txt contents"), "the missing work was done by the added step");
    let cause = o
        .events
        .iter()
        .find_map(|e| if let EngineEvent::PlanRevised { cause, .. } = &e.event { Some(cause.clone()) } else { None })
        .expect("the final check's finding revised the plan");
    assert!(cause.contains("no step wrote it"), "the person sees why a step was added: {cause}");
    let plan = PlanState::from_events(&o.events).unwrap();
    let titles: Vec<(String, StepState)> = plan.steps.iter().map(|s| (s.step.title.clone(), s.state)).collect();
    assert_eq!(
        titles,
        vec![("Write a.txt".into(), StepState::Done), ("Write b.txt".into(), StepState::Done), ("Write c.txt".into(), StepState::Done)],
        "finished steps stay done; the new one is added after them"
    );
}

/// A plan's final check is judged on the person's review comments too: the evaluator calls the
/// work done but one comment not addressed, so the plan is revised with that comment and the task
/// ends verified only once it is met.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_final_check_that_calls_the_work_done_with_a_review_comment_not_addressed_replans_for_it() {
    let verdict = |addressed: bool, evidence: &str| {
        json!({"text": json!({"done": true, "summary": "all done", "remaining": [], "continuation_prompt": "", "is_stuck": false, "stuck_reason": "",
            "comments": [{"n": 1, "addressed": addressed, "evidence": evidence}]}).to_string()})
    };
    let more = json!({"cause": "the person also wants d.txt", "steps": [
        {"title": "Write d.txt", "instructions": "Write d.txt.", "criteria": ["d.txt lists the fruits"], "depends_on": []},
        {"title": "Write e.txt", "instructions": "Write e.txt.", "criteria": ["e.txt exists"], "depends_on": []}
    ]});
    let fix = json!({"cause": "a.txt still says what the comment asked to change", "steps": [{"title": "Fix a.txt", "instructions": "Write hello into a.txt.", "criteria": ["a.txt says hello"], "depends_on": []}]});
    let h = Harness::new(
        rules(json!([
            {"when": {"kind": "manager"}, "reply": {"text": plan_json(&THREE[..2])}, "times": 1},
            {"when": {"kind": "manager"}, "reply": {"text": more.to_string()}, "times": 1},
            manager(json!({}), fix.to_string()),
            {"when": {"kind": "evaluator", "any_message_contains": "<criteria>"}, "reply": verdict(false, "a.txt still says a.txt contents"), "times": 1},
            evaluator_when(json!({"any_message_contains": "<criteria>"}), verdict(true, "a.txt says hello")),
            evaluator(done_verdict()),
            agent(json!({"last_message_contains": "Created"}), json!({"text": DONE})),
            agent(json!({"last_message_contains": "Wrote"}), json!({"text": DONE})),
            agent(json!({"last_message_contains": "This step: Write a.txt"}), write_reply("a.txt")),
            agent(json!({"last_message_contains": "This step: Write b.txt"}), write_reply("b.txt")),
            // d.txt's step touches a.txt too, not as the comment asked.
            agent(
                json!({"last_message_contains": "This step: Write d.txt"}),
                json!({"tool_calls": [{"name": "write_file", "arguments": {"path": "d.txt", "content": "apple, pear"}}, {"name": "write_file", "arguments": {"path": "a.txt", "content": "a.txt contents, again"}}]})
            ),
            agent(json!({"last_message_contains": "This step: Write e.txt"}), write_reply("e.txt")),
            agent(json!({"last_message_contains": "This step: Fix a.txt"}), json!({"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "hello"}}]})),
        ])),
        Setup::default(),
    )
    .await;
    let o = start(&h, "write a.txt and b.txt", PlanMode::On).await;
    assert_eq!(o.status, SessionStatus::AwaitingReview, "errors: {:?}", errors(&o));
    let review = o.review_id();
    let comment = finishline_engine::judge::criteria::Comment {
        id: String::new(),
        path: "a.txt".into(),
        start_line: 1,
        end_line: 1,
        side: finishline_engine::judge::criteria::DiffSide::New,
        quote: "a.txt contents".into(),
        text: "say hello".into(),
    };
    h.engine.comment(&review, comment).unwrap();
    h.engine.submit_review(&review, Decision::RequestChanges, Some("also write d.txt".into()), false, false, DecidedBy::Person).unwrap();
    let o = h.wait_idle(&o.session).await;
    assert_eq!(o.status, SessionStatus::AwaitingReview, "errors: {:?}", errors(&o));
    assert_eq!(h.read("a.txt").as_deref(), Some("hello"), "a step was added for the comment the evaluator found not addressed, and it ran");
    assert_eq!(o.end_reason, Some(EndReason::VerifiedDone), "then the task is done");
    let causes: Vec<String> =
        o.events.iter().filter_map(|e| if let EngineEvent::PlanRevised { cause, .. } = &e.event { Some(cause.clone()) } else { None }).collect();
    assert_eq!(causes.len(), 2, "once for the feedback, once for the comment: {causes:?}");
    let asked = h.server.requests().into_iter().filter(|r| r.kind == RequestKind::Manager).any(|r| r.body.to_string().contains("say hello"));
    assert!(asked, "the manager was told which comment is open");
    // A step before the last is judged on its own work: the comments are the whole task's.
    let step_judged =
        h.server.requests().into_iter().filter(|r| r.kind == RequestKind::Evaluator && r.body.to_string().contains("judge only this step")).count();
    assert!(step_judged > 0, "d.txt's criterion needs a reader");
    let with_comments = h
        .server
        .requests()
        .into_iter()
        .filter(|r| r.kind == RequestKind::Evaluator && r.body.to_string().contains("judge only this step") && r.body.to_string().contains("<criteria>"))
        .count();
    assert_eq!(with_comments, 0, "no step before the last is judged on the person's comments");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_manager_that_cannot_revise_the_plan_sends_the_task_to_review_as_plan_failed() {
    let h = Harness::new(
        rules(json!([
            {"when": {"kind": "manager"}, "reply": {"text": plan_json(&[("Write the report", "report.md exists"), ("Write c.txt", "c.txt exists")])}, "times": 1},
            manager(json!({}), "I am not sure what to do next; maybe try again later?".to_string()),
            evaluator_when(json!({"any_message_contains": "judge only this step"}), not_done_verdict(&["report.md is missing"], "Write report.md.")),
            evaluator(done_verdict()),
            agent(json!({}), json!({"text": "The report needs more thought before I can write it down."})),
        ])),
        Setup::default(),
    )
    .await;
    let o = start(&h, "write the report and c.txt", PlanMode::On).await;
    assert_eq!(o.status, SessionStatus::AwaitingReview, "the task still reaches the person: {:?}", errors(&o));
    assert_eq!(o.end_reason, Some(EndReason::PlanFailed), "an unrevisable plan is failed honestly, not retried for ever");
    assert_eq!(o.calls_of(RequestKind::Manager), 3, "the plan, then one revision answer and its one repair");
    assert!(!o.has(|e| matches!(e, EngineEvent::PlanRevised { .. })), "no revision was made from an unusable answer");
    assert!(h.read("c.txt").is_none(), "nothing after the failed step runs");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_a_step_produced_reaches_the_later_steps_as_its_output_data() {
    let step_one = json!({"done": true, "summary": "a.txt is written", "output_data": "the port chosen is 8123", "remaining": [], "continuation_prompt": "", "is_stuck": false, "stuck_reason": ""});
    let h = Harness::new(
        rules(json!([
            // Criteria only a reader can judge: the evaluator judges each step and says what it produced.
            manager(json!({}), plan_json(&[("Write a.txt", "a.txt names the port the service listens on"), ("Write b.txt", "b.txt uses that port")])),
            evaluator_when(json!({"any_message_contains": "This step: Write a.txt"}), json!({"text": step_one.to_string()})),
            evaluator(done_verdict()),
            agent(json!({"last_message_contains": "Created"}), json!({"text": DONE})),
            agent(json!({"last_message_contains": "This step: Write a.txt"}), write_reply("a.txt")),
            agent(json!({"last_message_contains": "This step: Write b.txt"}), write_reply("b.txt")),
        ])),
        Setup::default(),
    )
    .await;
    let o = start(&h, "write a.txt and b.txt", PlanMode::On).await;
    assert_eq!(o.end_reason, Some(EndReason::VerifiedDone), "errors: {:?}", errors(&o));
    let judged = o.requests.iter().find(|r| r.kind == RequestKind::Evaluator && r.all_text.contains("judge only this step")).unwrap();
    assert!(
        judged.system.contains("output_data") && judged.body.to_string().contains("\"output_data\""),
        "the evaluator of a step is asked, in its instructions and its schema, what later steps need from it"
    );
    let whole = o.requests.iter().rfind(|r| r.kind == RequestKind::Evaluator).unwrap();
    assert!(!whole.system.contains("output_data"), "the final check of the whole task has no later steps to feed");
    let data: Vec<Option<String>> = o
        .events
        .iter()
        .filter_map(|e| if let EngineEvent::PlanStepFinished { output_data, .. } = &e.event { Some(output_data.clone()) } else { None })
        .collect();
    assert_eq!(data.first().cloned().flatten().as_deref(), Some("the port chosen is 8123"), "the step's output data is stored with its end");
    let step2 = o.requests.iter().find(|r| r.kind == RequestKind::Agent && r.last_message.contains("This step: Write b.txt")).unwrap();
    assert!(
        step2.last_message.contains("the port chosen is 8123"),
        "a later step starts fresh, so what an earlier step produced must be in its brief:\n{}",
        step2.last_message
    );
    let plan = PlanState::from_events(&o.events).unwrap();
    assert_eq!(plan.steps[0].output_data.as_deref(), Some("the port chosen is 8123"), "the plan panel can show it");
    let md = finishline_engine::store::export::to_markdown(&h.store.timeline(&o.session).unwrap());
    assert!(md.contains("*For later steps:* the port chosen is 8123"), "the export keeps what a step passed on:\n{md}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_test_first_plan_finishes_verified_with_no_replan_each_step_judged_on_its_own_evidence() {
    // Step 1 writes a failing test: the task's verification must fail until step 2, so it runs
    // at a step only when the step's criteria name it, and always at the end.
    let check = "test -f test_x.txt && grep -q ok impl.txt";
    let steps = json!({"steps": [
        {"title": "Write the failing test", "instructions": "Write test_x.txt.", "criteria": ["test_x.txt exists"], "depends_on": []},
        {"title": "Make it pass", "instructions": "Write impl.txt so the test passes.", "criteria": [format!("`{check}` passes")], "depends_on": [0]}
    ]});
    let h = Harness::new(
        rules(json!([
            manager(json!({}), steps.to_string()),
            evaluator(done_verdict()),
            agent(json!({"last_message_contains": "Created impl.txt"}), json!({"text": DONE})),
            agent(json!({"last_message_contains": "This step: Write the failing test"}), write_reply("test_x.txt")),
            agent(
                json!({"last_message_contains": "This step: Make it pass"}),
                json!({"tool_calls": [{"name": "write_file", "arguments": {"path": "impl.txt", "content": "ok"}}]})
            ),
        ])),
        Setup { verify_commands: vec![check.to_string()], ..Setup::default() },
    )
    .await;
    let o = start(&h, "write a failing test first, then make it pass", PlanMode::On).await;
    assert_eq!(o.end_reason, Some(EndReason::VerifiedDone), "errors: {:?}", errors(&o));
    assert!(!o.has(|e| matches!(e, EngineEvent::PlanRevised { .. })), "no replan");
    let step2_at = o.events.iter().position(|e| matches!(&e.event, EngineEvent::PlanStepStarted { number: 2, .. })).unwrap();
    assert!(
        !o.events[..step2_at].iter().any(|e| matches!(e.event, EngineEvent::Verification { .. })),
        "the task's check does not run at step 1, whose criteria do not name it"
    );
    assert!(
        o.events[step2_at..].iter().any(|e| matches!(&e.event, EngineEvent::Verification { command, exit_code: Some(0), .. } if command == check)),
        "it runs at step 2, which names it, and passes"
    );
    let decided: Vec<String> =
        o.events.iter().filter_map(|e| if let EngineEvent::PlanStepFinished { decided_by, .. } = &e.event { decided_by.clone() } else { None }).collect();
    assert_eq!(
        decided,
        vec!["checked without a model: test_x.txt exists ✓".to_string(), format!("checked without a model: `{check}` passes ✓")],
        "each step says what decided it"
    );
    assert_eq!(o.calls_of(RequestKind::Evaluator), 1, "the evaluator is asked once, about the whole task");
}

/// A single run may make 2 steps and no continuation, 3 calls: a plan may make 5.
fn five_calls() -> Setup {
    Setup {
        completion: finishline_engine::judge::completion::CompletionConfig { max_steps: 2, continuation_budget: 0, ..Default::default() },
        ..Setup::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_whose_budget_ends_with_its_last_step_says_the_whole_request_was_not_checked() {
    let four = [("Write a.txt", "a.txt exists"), ("Write b.txt", "b.txt exists"), ("Write c.txt", "c.txt exists"), ("Write d.txt", "d.txt exists")];
    let h = Harness::new(
        rules(json!([
            manager(json!({}), plan_json(&four)),
            evaluator(done_verdict()),
            agent(json!({"last_message_contains": "This step: Write a.txt"}), write_reply("a.txt")),
            agent(json!({"last_message_contains": "This step: Write b.txt"}), write_reply("b.txt")),
            agent(json!({"last_message_contains": "This step: Write c.txt"}), write_reply("c.txt")),
            agent(json!({"last_message_contains": "This step: Write d.txt"}), write_reply("d.txt")),
        ])),
        // A single run may make 2 steps and no continuation, 3 calls: the plan may make 5, the
        // manager's and one for each step (their files decide them, without a model).
        five_calls(),
    )
    .await;
    let o = start(&h, "write a.txt to d.txt", PlanMode::On).await;
    assert_eq!(o.end_reason, Some(EndReason::PlanBudgetSpent), "{:?}", errors(&o));
    let plan = PlanState::from_events(&o.events).unwrap();
    assert!(plan.next_pending().is_none(), "every step was done: {:?}", plan.steps.iter().map(|s| s.state).collect::<Vec<_>>());
    let remaining =
        o.events.iter().rev().find_map(|e| if let EngineEvent::ReviewRequested { remaining, .. } = &e.event { Some(remaining.clone()) } else { None }).unwrap();
    assert!(
        remaining.iter().any(|r| r.starts_with("the final check of the whole request was not made: the plan's budget of 5 model calls is spent")),
        "not a finished-looking review: {remaining:?}"
    );
    let judged = o.events.iter().rev().find_map(|e| if let EngineEvent::ReviewRequested { verdict, .. } = &e.event { Some(*verdict) } else { None });
    assert_eq!(judged, Some(None), "no verdict, so none reads as the whole task's: its files decided each step");
}

/// A step decided by its own command checks is judged alone, the last one too: the review says
/// which step the word was on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_stopped_short_after_a_step_its_commands_decided_says_which_step() {
    let four = [
        ("Write a.txt", "`test -f a.txt` passes"),
        ("Write b.txt", "`test -f b.txt` passes"),
        ("Write c.txt", "`test -f c.txt` passes"),
        ("Write d.txt", "`test -f d.txt` passes"),
    ];
    let h = Harness::new(
        rules(json!([
            manager(json!({}), plan_json(&four)),
            evaluator(done_verdict()),
            agent(json!({"last_message_contains": "Created"}), json!({"text": DONE})),
            agent(json!({"last_message_contains": "This step: Write a.txt"}), write_reply("a.txt")),
            agent(json!({"last_message_contains": "This step: Write b.txt"}), write_reply("b.txt")),
        ])),
        // The checks may run: a declined one decides nothing.
        Setup { permissions: finishline_engine::agent::PermissionPolicy { allow_all: true, ..Default::default() }, ..five_calls() },
    )
    .await;
    let o = start(&h, "write a.txt to d.txt", PlanMode::On).await;
    assert_eq!(o.end_reason, Some(EndReason::PlanBudgetSpent), "{:?}", errors(&o));
    let on_step = o
        .events
        .iter()
        .rev()
        .find_map(
            |e| if let EngineEvent::ReviewRequested { verdict, verdict_on_step, .. } = &e.event { Some((*verdict, verdict_on_step.clone())) } else { None },
        )
        .unwrap();
    assert_eq!(on_step, (Some(Verdict::Done), Some("Step 2: Write b.txt".to_string())), "its checks' word, on that step");
}

/// Request changes starts a new run with a fresh budget (spec §5): for a plan, the steps the
/// feedback adds get the plan's budget anew, not what the first round left of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_changes_after_a_plan_spent_its_budget_gives_the_added_steps_a_fresh_budget() {
    let four = [("Write a.txt", "a.txt exists"), ("Write b.txt", "b.txt exists"), ("Write c.txt", "c.txt exists"), ("Write d.txt", "d.txt exists")];
    let more = json!({"cause": "the person also wants e.txt", "steps": [{"title": "Write e.txt", "instructions": "Write e.txt.", "criteria": ["e.txt exists"], "depends_on": []}]});
    let h = Harness::new(
        rules(json!([
            manager(json!({"any_message_contains": "<feedback>"}), more.to_string()),
            manager(json!({}), plan_json(&four)),
            evaluator(done_verdict()),
            agent(json!({"last_message_contains": "This step: Write a.txt"}), write_reply("a.txt")),
            agent(json!({"last_message_contains": "This step: Write b.txt"}), write_reply("b.txt")),
            agent(json!({"last_message_contains": "This step: Write c.txt"}), write_reply("c.txt")),
            agent(json!({"last_message_contains": "This step: Write d.txt"}), write_reply("d.txt")),
            agent(json!({"last_message_contains": "This step: Write e.txt"}), write_reply("e.txt")),
        ])),
        // The plan may make 5 calls: the manager's and one per step spend it all.
        five_calls(),
    )
    .await;
    let o = start(&h, "write a.txt to d.txt", PlanMode::On).await;
    assert_eq!(o.end_reason, Some(EndReason::PlanBudgetSpent), "{:?}", errors(&o));
    h.engine.submit_review(&o.review_id(), Decision::RequestChanges, Some("also write e.txt".into()), false, false, DecidedBy::Person).unwrap();
    let o = h.wait_idle(&o.session).await;
    assert_eq!(o.status, SessionStatus::AwaitingReview, "errors: {:?}", errors(&o));
    assert_eq!(h.read("e.txt").as_deref(), Some("e.txt contents"), "the added step ran");
    assert_eq!(o.end_reason, Some(EndReason::VerifiedDone), "the feedback's round had a budget of its own, so the whole request was checked: {:?}", errors(&o));
    let plan = PlanState::from_events(&o.events).unwrap();
    assert!(plan.spent.total() <= 5, "the meter counts this round's calls against the budget, not 'n of 5' past it: {:?}", plan.spent);
    let asked = h.server.requests().into_iter().filter(|r| r.kind == RequestKind::Manager).find(|r| r.body.to_string().contains("<feedback>")).unwrap();
    assert!(!asked.body.to_string().contains("<budget>"), "nor is the manager told the old round's budget is spent, to cut the person's feedback short");
}

/// A plan that stops short of its steps was last judged on a step: the review says which, so
/// "Evaluator: done" does not read as the whole task's verdict.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_stopped_short_says_its_last_verdict_was_on_a_step() {
    let four = [("Write a.txt", "a.txt exists"), ("Write b.txt", "b.txt greets"), ("Write c.txt", "c.txt greets"), ("Write d.txt", "d.txt greets")];
    let h = Harness::new(
        rules(json!([
            manager(json!({}), plan_json(&four)),
            evaluator(done_verdict()),
            agent(json!({"last_message_contains": "Created"}), json!({"text": DONE})),
            agent(json!({"last_message_contains": "This step: Write a.txt"}), write_reply("a.txt")),
            agent(json!({"last_message_contains": "This step: Write b.txt"}), write_reply("b.txt")),
        ])),
        // 5 calls: the manager's, the agent's at step 1 (its file decides it), then the agent's
        // two and the evaluator's at step 2: spent as step 2 is judged.
        five_calls(),
    )
    .await;
    let o = start(&h, "write a.txt to d.txt", PlanMode::On).await;
    assert_eq!(o.end_reason, Some(EndReason::PlanBudgetSpent), "{:?}", errors(&o));
    let on_step = o
        .events
        .iter()
        .rev()
        .find_map(
            |e| if let EngineEvent::ReviewRequested { verdict, verdict_on_step, .. } = &e.event { Some((*verdict, verdict_on_step.clone())) } else { None },
        )
        .unwrap();
    assert_eq!(on_step, (Some(Verdict::Done), Some("Step 2: Write b.txt".to_string())), "the step the budget ran out at");
    let md = finishline_engine::store::export::to_markdown(&h.store.timeline(&o.session).unwrap());
    assert!(
        md.contains(
            "**Review requested:** Plan budget spent; the agent said it was done in its reply; the evaluator said done (on Step 2: Write b.txt, not the whole task)"
        ),
        "the export says whose it was too: {md}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_that_spends_its_budget_goes_to_the_person_with_what_is_done() {
    let h = Harness::new(
        rules(json!([
            manager(json!({}), plan_json(&THREE)),
            evaluator(done_verdict()),
            agent(json!({}), json!({"text": "I will get to it soon, after thinking about it a bit more."})),
        ])),
        // A single run may spend 2 steps and 1 continuation: the plan may make 8 calls in all.
        Setup {
            completion: finishline_engine::judge::completion::CompletionConfig { max_steps: 2, continuation_budget: 1, ..Default::default() },
            ..Setup::default()
        },
    )
    .await;
    let o = start(&h, "write a.txt, b.txt and c.txt", PlanMode::On).await;
    assert_eq!(o.status, SessionStatus::AwaitingReview);
    // Its own reason: not a step's continuation budget (the step may have had cycles left), nor the
    // last step's stuck pattern.
    assert_eq!(o.end_reason, Some(EndReason::PlanBudgetSpent), "the budget, not two more replans, ends it: {:?}", errors(&o));
    let (remaining, stuck) = o
        .events
        .iter()
        .rev()
        .find_map(|e| if let EngineEvent::ReviewRequested { remaining, stuck, .. } = &e.event { Some((remaining.clone(), stuck.clone())) } else { None })
        .unwrap();
    assert!(stuck.is_none(), "{stuck:?}");
    assert!(remaining.iter().all(|r| !r.contains("model calls")), "the budget is the end reason, not a thing left to do: {remaining:?}");
    assert!(remaining.iter().any(|r| r.starts_with("Step not done: ")), "what is not done is named by step: {remaining:?}");
    let unique: std::collections::HashSet<&String> = remaining.iter().collect();
    assert_eq!(unique.len(), remaining.len(), "a step planned again under its title is named once: {remaining:?}");
    let plan = PlanState::from_events(&o.events).unwrap();
    assert_eq!(plan.budget_calls, Some(8));
    assert_eq!(plan.spent.total(), 8, "every call counted, the manager's revision too, and none past the budget: {:?}", plan.spent);
    let folded = h.store.events_of_types(&o.session, finishline_engine::plan::state::FOLDED_TYPES).unwrap();
    assert_eq!(PlanState::from_events(&folded), Some(plan), "the events a plan folds are all it needs");
}

/// Every token the session spends is in its events, the manager's plan included, so the window's
/// running total (read from events) and History's (the store's) are the same figure.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_manager_call_is_counted_in_the_events_as_in_history() {
    let h = three_steps().await;
    let o = start(&h, "write a.txt, b.txt and c.txt", PlanMode::On).await;
    let from_events: u64 = o
        .events
        .iter()
        .map(|e| match &e.event {
            EngineEvent::StepFinished { usage, .. } | EngineEvent::Evaluation { usage, .. } | EngineEvent::TokensSpent { usage, .. } => {
                usage.input_tokens + usage.output_tokens
            }
            _ => 0,
        })
        .sum();
    let manager: u64 =
        o.events.iter().map(|e| if let EngineEvent::TokensSpent { usage, .. } = &e.event { usage.input_tokens + usage.output_tokens } else { 0 }).sum();
    assert!(manager > 0, "the manager's plan is an event of its own");
    let t = h.store.session(&o.session).unwrap().tokens;
    assert_eq!(from_events, t.agent + t.evaluator + t.compaction, "the events add up to what History shows");
}

/// A step's checks that a file exists and holds some text, where a named pipe is (a dev server's,
/// one the agent made): reading it would wait for a writer that never comes and hold the task for
/// ever. A pipe is no file (its review shows the file gone) and holds no text: neither check
/// holds, and the step is judged as any other.
#[test]
fn a_step_check_on_a_named_pipe_does_not_hold_and_never_waits_on_it() {
    // On a thread of its own: a read stuck in the kernel keeps the runtime's timers from firing.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        rt.block_on(a_step_check_on_a_named_pipe());
        let _ = tx.send(());
    });
    match rx.recv_timeout(Duration::from_secs(90)) {
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => panic!("the task waited on the pipe"),
        Err(e) => panic!("the check failed (above): {e}"),
        Ok(()) => {}
    }
}

async fn a_step_check_on_a_named_pipe() {
    let steps = json!({"steps": [
        {"title": "Write notes", "instructions": "Write notes.txt.", "criteria": ["notes.txt exists", "feed.txt exists", "feed.txt contains \"ok\""], "depends_on": []},
        {"title": "Write c.txt", "instructions": "Write c.txt.", "criteria": ["c.txt exists"], "depends_on": [0]}
    ]});
    let h = Harness::new(
        rules(json!([
            manager(json!({}), steps.to_string()),
            evaluator(done_verdict()),
            agent(json!({"last_message_contains": "do not hold yet"}), json!({"text": "The feed is a pipe; it cannot hold text."})),
            agent(json!({"last_message_contains": "Created"}), json!({"text": DONE})),
            agent(json!({"last_message_contains": "This step: Write notes"}), write_reply("notes.txt")),
            agent(json!({"last_message_contains": "This step: Write c.txt"}), write_reply("c.txt")),
        ])),
        Setup::default(),
    )
    .await;
    assert!(std::process::Command::new("mkfifo").arg(h.ws().join("feed.txt")).status().unwrap().success());
    let o = start(&h, "write notes, then c.txt", PlanMode::On).await;
    assert!(!finished(&o).is_empty(), "the step ended; errors: {:?}", errors(&o));
    let told = h.server.requests().into_iter().any(|r| r.body.to_string().contains("do not hold yet: feed.txt exists; feed.txt contains"));
    assert!(told, "the agent is told the checks on the pipe do not hold: a pipe is no file, as its review would show");
    let sources: Vec<ContinuationSource> = o
        .events
        .iter()
        .filter_map(|e| match &e.event {
            EngineEvent::Continuation { source, .. } if *source != ContinuationSource::PlanStep => Some(*source),
            _ => None,
        })
        .collect();
    assert!(
        !sources.is_empty() && sources.iter().all(|s| *s == ContinuationSource::StepChecks),
        "the step's checks sent it back, not an evaluator (none was asked): {sources:?}"
    );
    assert!(std::fs::symlink_metadata(h.ws().join("feed.txt")).unwrap().file_type().is_fifo(), "the pipe is left");
}

/// The budget spent just as the agent calls `complete_task`: its call is answered (it was left
/// waiting, a card pending for good) and its claim reaches the review.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_made_as_the_plans_budget_runs_out_is_answered_and_kept() {
    let four = [("Write a.txt", "a.txt exists"), ("Write b.txt", "b.txt exists"), ("Write c.txt", "c.txt exists"), ("Write d.txt", "d.txt greets the reader")];
    let claim = |path: &str| {
        json!({"tool_calls": [
            {"name": "write_file", "arguments": {"path": path, "content": "hello"}},
            {"name": "complete_task", "arguments": {"status": "success", "summary": format!("{path} greets"), "original_request_summary": "write them"}}
        ]})
    };
    let h = Harness::new(
        rules(json!([
            manager(json!({}), plan_json(&four)),
            evaluator(done_verdict()),
            agent(json!({"last_message_contains": "This step: Write a.txt"}), write_reply("a.txt")),
            agent(json!({"last_message_contains": "This step: Write b.txt"}), write_reply("b.txt")),
            agent(json!({"last_message_contains": "This step: Write c.txt"}), write_reply("c.txt")),
            agent(json!({"last_message_contains": "This step: Write d.txt"}), claim("d.txt")),
        ])),
        // 5 calls: the manager's, then one of the agent's per step (the first three decided by
        // their files): spent as the agent claims step 4 done, before its evaluation.
        five_calls(),
    )
    .await;
    let o = start(&h, "write a.txt to d.txt", PlanMode::On).await;
    assert_eq!(o.end_reason, Some(EndReason::PlanBudgetSpent), "{:?}", errors(&o));
    assert_eq!(o.calls_of(RequestKind::Evaluator), 0, "no evaluation past the budget");
    let mut answers: std::collections::HashMap<String, (ToolState, Option<String>)> = std::collections::HashMap::new();
    for e in &o.events {
        if let EngineEvent::ToolCall { call_id, tool, state, output, .. } = &e.event {
            if tool == "complete_task" {
                answers.insert(call_id.clone(), (*state, output.clone()));
            }
        }
    }
    assert_eq!(answers.len(), 1, "{answers:?}");
    assert!(answers.values().all(|(state, _)| *state == ToolState::Done), "no call left waiting: {answers:?}");
    assert!(answers.values().any(|(_, out)| out.as_deref().is_some_and(|o| o.contains("budget of model calls is spent"))), "{answers:?}");
    let claim = o.events.iter().rev().find_map(|e| if let EngineEvent::ReviewRequested { claim, .. } = &e.event { Some(*claim) } else { None });
    assert_eq!(claim, Some(Claim::Success), "the agent's claim reaches the review");
}

/// A step's agent that only says it is done, with no tool called, is judged against the step's
/// criteria and sent back, as in any task: it was taken for a conversation turn, so the step
/// ended "conversation" and the manager replanned it, twice, to `plan_failed`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_whose_agent_only_says_it_is_done_is_judged_and_sent_back_not_replanned() {
    let mut talk_first = agent(json!({"last_message_contains": "This step: Write a.txt"}), json!({"text": "Done! a.txt is written."}));
    talk_first["times"] = json!(1);
    let h = Harness::new(
        rules(json!([
            manager(json!({}), plan_json(&THREE[..2])),
            evaluator(done_verdict()),
            talk_first,
            agent(json!({"last_message_contains": "This step: Write a.txt"}), write_reply("a.txt")),
            agent(json!({"last_message_contains": "This step: Write b.txt"}), write_reply("b.txt")),
            agent(json!({"last_message_contains": "a.txt"}), write_reply("a.txt")),
        ])),
        Setup::default(),
    )
    .await;
    let o = start(&h, "write a.txt and b.txt", PlanMode::On).await;
    assert!(!o.has(|e| matches!(e, EngineEvent::PlanRevised { .. })), "no replan: {:?}", errors(&o));
    assert!(
        o.has(|e| matches!(e, EngineEvent::Continuation { .. } if !matches!(e, EngineEvent::Continuation { source: ContinuationSource::PlanStep, .. }))),
        "sent back"
    );
    assert_eq!(o.end_reason, Some(EndReason::VerifiedDone), "{:?}", errors(&o));
}

/// A step cancelled after the plan's last call, then continued, ends before another call: the
/// budget is a cap for a resumed step too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_continued_after_the_plans_budget_is_spent_makes_no_further_call() {
    let four = [("Write a.txt", "a.txt exists"), ("Write b.txt", "b.txt exists"), ("Write c.txt", "c.txt exists"), ("Write d.txt", "d.txt greets")];
    let h = Harness::new(
        rules(json!([
            manager(json!({}), plan_json(&four)),
            evaluator(done_verdict()),
            agent(json!({"last_message_contains": "This step: Write a.txt"}), write_reply("a.txt")),
            agent(json!({"last_message_contains": "This step: Write b.txt"}), write_reply("b.txt")),
            agent(json!({"last_message_contains": "This step: Write c.txt"}), write_reply("c.txt")),
            {"when": {"kind": "agent", "last_message_contains": "This step: Write d.txt"}, "reply": {"text": "thinking about d.txt for a long while", "chunk_delay_ms": 400}},
            agent(json!({}), write_reply("d.txt")),
        ])),
        // 5 calls: the manager's, then one per step; the fifth is step 4's, cancelled mid-answer.
        five_calls(),
    )
    .await;
    let (sid, handle) = h.engine.start_task("write a.txt to d.txt", &h.ws(), PlanMode::On).unwrap();
    let t = std::time::Instant::now();
    while !h.outcome(&sid).has(|e| matches!(e, EngineEvent::TextDelta { text, .. } if text.contains("thinking"))) {
        assert!(t.elapsed() < Duration::from_secs(30), "step 4's answer streams");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(h.engine.cancel(&sid), finishline_engine::agent::Stop::Stopped);
    tokio::time::timeout(Duration::from_secs(20), handle).await.unwrap().unwrap();
    let before = h.outcome(&sid).calls_of(RequestKind::Agent);
    let handle = h.engine.send_message(&sid, "").unwrap();
    tokio::time::timeout(Duration::from_secs(30), handle).await.unwrap().unwrap();
    let o = h.outcome(&sid);
    assert_eq!(o.end_reason, Some(EndReason::PlanBudgetSpent), "{:?}", errors(&o));
    assert_eq!(o.calls_of(RequestKind::Agent), before, "no call past the budget");
    assert_eq!(PlanState::from_events(&o.events).unwrap().spent.total(), 5);
    let last_run = o.events.iter().rposition(|e| matches!(e.event, EngineEvent::RunStarted { .. })).unwrap();
    let notes: Vec<_> = o.events[last_run..].iter().filter(|e| matches!(e.event, EngineEvent::Continuation { .. })).collect();
    assert!(notes.is_empty(), "no note telling the agent to go on, which it never got, is shown: {notes:?}");
}

/// The last step's evaluator found the whole request done; the task's own check then ran at the
/// end of the plan and wrote a file of its own (a lock file, a report). That is not work the
/// verdict did not see: the review keeps the evaluator's "done" beside "Verified done".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_check_that_writes_a_file_after_the_last_verdict_does_not_hide_the_verdict() {
    let steps = [("Write a.txt", "a.txt greets the reader"), ("Write b.txt", "b.txt greets the reader")];
    let h = Harness::new(
        rules(json!([
            manager(json!({}), plan_json(&steps)),
            evaluator(done_verdict()),
            agent(json!({"last_message_contains": "Created"}), json!({"text": DONE})),
            agent(json!({"last_message_contains": "This step: Write a.txt"}), write_reply("a.txt")),
            agent(json!({"last_message_contains": "This step: Write b.txt"}), write_reply("b.txt")),
        ])),
        Setup { verify_commands: vec!["echo locked > check.lock".into()], ..Setup::default() },
    )
    .await;
    let o = start(&h, "write two greetings, a.txt and b.txt", PlanMode::On).await;
    assert_eq!(o.end_reason, Some(EndReason::VerifiedDone), "errors: {:?}", errors(&o));
    assert_eq!(h.read("check.lock").as_deref(), Some("locked\n"), "the check wrote its file after the last verdict");
    let verdict = o.events.iter().find_map(|e| if let EngineEvent::ReviewRequested { verdict, .. } = &e.event { Some(*verdict) } else { None });
    assert_eq!(verdict, Some(Some(Verdict::Done)), "the evaluator's word is on the agent's work, which did not change since");
}

/// "Allow for this session" on a step's check command lasts the session, as the button says:
/// each step is a run of its own, and the next step's check was asked about again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allowing_a_steps_check_command_for_the_session_covers_the_next_steps_check() {
    let h = Harness::new(
        rules(json!([
            manager(
                json!({}),
                json!({"steps": [
                    {"title": "Write a.txt", "instructions": "Write a.txt.", "criteria": ["`test -f a.txt` passes"], "depends_on": []},
                    {"title": "Write b.txt", "instructions": "Write b.txt.", "criteria": ["b.txt exists", "`test -f a.txt` passes"], "depends_on": [0]}
                ]})
                .to_string()
            ),
            evaluator(done_verdict()),
            agent(json!({"last_message_contains": "Created"}), json!({"text": DONE})),
            agent(json!({"last_message_contains": "This step: Write a.txt"}), write_reply("a.txt")),
            agent(
                json!({"last_message_contains": "This step: Write b.txt"}),
                json!({"tool_calls": [
                    {"name": "run_command", "arguments": {"command": "echo checking first"}},
                    {"name": "write_file", "arguments": {"path": "b.txt", "content": "b.txt contents"}}
                ]})
            ),
        ])),
        Setup { permissions: Default::default(), ..Setup::default() },
    )
    .await;
    let (sid, handle) = h.engine.start_task("write a.txt, then b.txt", &h.ws(), PlanMode::On).unwrap();
    // The person: every question answered "Allow for this session".
    let person = answering_every_permission(&h, &sid, PermissionDecision::AllowSession);
    tokio::time::timeout(Duration::from_secs(60), handle).await.expect("the plan ends in time").unwrap();
    person.abort();
    let o = h.outcome(&sid);
    assert_eq!(o.end_reason, Some(EndReason::VerifiedDone), "errors: {:?}", errors(&o));
    let asked: Vec<String> = o
        .events
        .iter()
        .filter_map(|e| match &e.event {
            EngineEvent::PermissionRequested { tool, input, .. } if tool == "run_command" => input["command"].as_str().map(String::from),
            _ => None,
        })
        .collect();
    assert_eq!(
        asked,
        vec!["test -f a.txt".to_string(), "echo checking first".to_string()],
        "the check asked once, at step 1 (step 2's ran on the session's grant); the grant was that command's, not every command the agent runs"
    );
    let reason =
        o.events.iter().find_map(|e| if let EngineEvent::PermissionRequested { reason, .. } = &e.event { Some(reason.clone()) } else { None }).unwrap();
    assert!(reason.starts_with("The plan names this command") && !reason.contains("agent"), "the prompt says who named the command: {reason}");
    assert!(
        o.has(|e| matches!(e, EngineEvent::Verification { plans: true, persons_own: false, .. })),
        "its result says it is the plan's check, not one the agent named"
    );
    let ran =
        o.events.iter().filter(|e| matches!(&e.event, EngineEvent::Verification { command, exit_code: Some(0), .. } if command == "test -f a.txt")).count();
    assert_eq!(ran, 2, "the check ran and passed at both steps");
}

/// The person declines a step's check command: it never ran, so the step is not "checked
/// without a model ✓", which let unverified work reach the review as verified. The evaluator
/// judges the step instead, told the check was declined.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_steps_check_the_person_declines_is_not_counted_as_passed() {
    let h = Harness::new(
        rules(json!([
            manager(
                json!({}),
                json!({"steps": [
                    {"title": "Write a.txt", "instructions": "Write a.txt.", "criteria": ["`test -f a.txt` passes"], "depends_on": []},
                    {"title": "Write b.txt", "instructions": "Write b.txt.", "criteria": ["b.txt exists"], "depends_on": [0]}
                ]})
                .to_string()
            ),
            evaluator(done_verdict()),
            agent(json!({"last_message_contains": "Created"}), json!({"text": DONE})),
            agent(json!({"last_message_contains": "This step: Write a.txt"}), write_reply("a.txt")),
            agent(json!({"last_message_contains": "This step: Write b.txt"}), write_reply("b.txt")),
        ])),
        Setup { permissions: Default::default(), ..Setup::default() },
    )
    .await;
    let (sid, handle) = h.engine.start_task("write a.txt, then b.txt", &h.ws(), PlanMode::On).unwrap();
    let person = answering_every_permission(&h, &sid, PermissionDecision::Deny);
    tokio::time::timeout(Duration::from_secs(60), handle).await.expect("the plan ends in time").unwrap();
    person.abort();
    let o = h.outcome(&sid);
    assert!(
        o.has(|e| matches!(e, EngineEvent::Verification { command, skipped: true, .. } if command == "test -f a.txt")),
        "the check was declined: {:?}",
        errors(&o)
    );
    let decided: Vec<Option<String>> = o
        .events
        .iter()
        .filter_map(|e| if let EngineEvent::PlanStepFinished { index: 0, decided_by, .. } = &e.event { Some(decided_by.clone()) } else { None })
        .collect();
    assert!(!decided.iter().flatten().any(|d| d.contains('✓')), "a check that never ran is not ticked: {decided:?}");
    let evaluated = o.requests.iter().filter(|r| r.kind == RequestKind::Evaluator).any(|r| r.all_text.contains("`test -f a.txt`: skipped (declined)"));
    assert!(evaluated, "the evaluator judged the step, told the check was declined");
}

/// A declined check leaves the step to the evaluator only when every other check holds: a file
/// criterion that fails alongside it is the step not done, said to the agent, however the
/// evaluator would have judged it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declined_check_beside_one_that_fails_is_the_step_not_done_without_the_evaluator() {
    let h = Harness::new(
        rules(json!([
            manager(
                json!({}),
                json!({"steps": [
                    {"title": "Write a.txt", "instructions": "Write a.txt.", "criteria": ["`test -f a.txt` passes", "c.txt exists"], "depends_on": []},
                    {"title": "Write b.txt", "instructions": "Write b.txt.", "criteria": ["b.txt exists"], "depends_on": [0]}
                ]})
                .to_string()
            ),
            evaluator(done_verdict()),
            agent(json!({"last_message_contains": "Created"}), json!({"text": DONE})),
            agent(json!({"last_message_contains": "do not hold yet"}), write_reply("c.txt")),
            agent(json!({"last_message_contains": "This step: Write a.txt"}), write_reply("a.txt")),
            agent(json!({"last_message_contains": "This step: Write b.txt"}), write_reply("b.txt")),
        ])),
        Setup { permissions: Default::default(), ..Setup::default() },
    )
    .await;
    let (sid, handle) = h.engine.start_task("write a.txt, then b.txt", &h.ws(), PlanMode::On).unwrap();
    let person = answering_every_permission(&h, &sid, PermissionDecision::Deny);
    tokio::time::timeout(Duration::from_secs(60), handle).await.expect("the plan ends in time").unwrap();
    person.abort();
    let o = h.outcome(&sid);
    let told = o.requests.iter().position(|r| r.kind == RequestKind::Agent && r.all_text.contains("do not hold yet: c.txt exists"));
    let told = told.unwrap_or_else(|| panic!("the agent is told the failing criterion: {:?}", errors(&o)));
    assert!(h.ws().join("c.txt").exists(), "and makes it hold");
    let judged = o.requests.iter().position(|r| r.kind == RequestKind::Evaluator);
    assert!(judged.is_none_or(|j| j > told), "the evaluator never judged the step while c.txt was missing");
}

/// A step's verify list and its criteria name the same check, and the person declines it: asked
/// once, not again by the criteria a moment later. The evaluator then judging the step reads
/// every check's result, the one that ran and passed beside the declined one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declined_check_is_asked_once_and_the_evaluator_reads_every_checks_result() {
    let h = Harness::new(
        rules(json!([
            manager(
                json!({}),
                json!({"steps": [
                    {"title": "Write a.txt", "instructions": "Write a.txt.", "criteria": ["`test -s a.txt` passes", "`test -f a.txt` passes"], "depends_on": [], "verify": ["test -f a.txt"]},
                    {"title": "Write b.txt", "instructions": "Write b.txt.", "criteria": ["b.txt exists"], "depends_on": [0]}
                ]})
                .to_string()
            ),
            evaluator(done_verdict()),
            agent(json!({"last_message_contains": "Created"}), json!({"text": DONE})),
            agent(json!({"last_message_contains": "This step: Write a.txt"}), write_reply("a.txt")),
            agent(json!({"last_message_contains": "This step: Write b.txt"}), write_reply("b.txt")),
        ])),
        Setup { permissions: Default::default(), ..Setup::default() },
    )
    .await;
    let (sid, handle) = h.engine.start_task("write a.txt, then b.txt", &h.ws(), PlanMode::On).unwrap();
    // The person: `test -f a.txt` declined, anything else allowed once.
    let person =
        answering_permissions(&h, &sid, |input| if input["command"] == "test -f a.txt" { PermissionDecision::Deny } else { PermissionDecision::AllowOnce });
    tokio::time::timeout(Duration::from_secs(60), handle).await.expect("the plan ends in time").unwrap();
    person.abort();
    let o = h.outcome(&sid);
    let step2 = o.events.iter().position(|e| matches!(&e.event, EngineEvent::PlanStepStarted { number: 2, .. })).unwrap_or(o.events.len());
    let asked =
        o.events[..step2].iter().filter(|e| matches!(&e.event, EngineEvent::PermissionRequested { input, .. } if input["command"] == "test -f a.txt")).count();
    assert_eq!(asked, 1, "declined once, not asked again by the criteria: {:?}", errors(&o));
    let judged = o.requests.iter().find(|r| r.kind == RequestKind::Evaluator).expect("the evaluator judged the step");
    assert!(judged.all_text.contains("`test -f a.txt`: skipped (declined)"), "it reads the declined check");
    assert!(judged.all_text.contains("`test -s a.txt`: exit 0"), "and the one that ran and passed");
}

/// A step's own verify commands are the plan's (the manager wrote them): their prompt and result
/// say so, not that the agent named them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_steps_own_verify_command_is_said_to_be_the_plans() {
    let h = Harness::new(
        rules(json!([
            manager(
                json!({}),
                json!({"steps": [
                    {"title": "Write a.txt", "instructions": "Write a.txt.", "criteria": ["the file is written"], "depends_on": [], "verify": ["test -f a.txt"]},
                    {"title": "Write b.txt", "instructions": "Write b.txt.", "criteria": ["b.txt exists"], "depends_on": [0]}
                ]})
                .to_string()
            ),
            evaluator(done_verdict()),
            agent(json!({"last_message_contains": "Created"}), json!({"text": DONE})),
            agent(json!({"last_message_contains": "This step: Write a.txt"}), write_reply("a.txt")),
            agent(json!({"last_message_contains": "This step: Write b.txt"}), write_reply("b.txt")),
        ])),
        Setup { permissions: Default::default(), ..Setup::default() },
    )
    .await;
    let (sid, handle) = h.engine.start_task("write a.txt, then b.txt", &h.ws(), PlanMode::On).unwrap();
    let person = answering_every_permission(&h, &sid, PermissionDecision::AllowOnce);
    tokio::time::timeout(Duration::from_secs(60), handle).await.expect("the plan ends in time").unwrap();
    person.abort();
    let o = h.outcome(&sid);
    let reason = o
        .events
        .iter()
        .find_map(|e| match &e.event {
            EngineEvent::PermissionRequested { reason, input, .. } if input["command"] == "test -f a.txt" => Some(reason.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("the step's command was asked about: {:?}", errors(&o)));
    assert!(reason.starts_with("The plan names this command"), "{reason}");
    assert!(o.has(|e| matches!(e, EngineEvent::Verification { command, plans: true, .. } if command == "test -f a.txt")), "its result says it is the plan's");
}

/// A person who answers every permission the session asks for with `decision`.
fn answering_every_permission(h: &Harness, sid: &SessionId, decision: PermissionDecision) -> tokio::task::JoinHandle<()> {
    answering_permissions(h, sid, move |_| decision)
}

/// A person who answers each permission the session asks for as `decide` says for its input.
fn answering_permissions(
    h: &Harness,
    sid: &SessionId,
    decide: impl Fn(&serde_json::Value) -> PermissionDecision + Send + 'static,
) -> tokio::task::JoinHandle<()> {
    let (engine, store, s) = (h.engine.clone(), h.store.clone(), sid.clone());
    tokio::spawn(async move {
        let mut sub = Box::pin(store.subscribe(s, 0));
        while let Some(Ok(e)) = futures_util::StreamExt::next(&mut sub).await {
            if let EngineEvent::PermissionRequested { request_id, input, .. } = e.event {
                engine.respond_permission(&request_id, decide(&input)).unwrap();
            }
        }
    })
}

/// The manager's server failing and tried again is said while it happens, as the evaluator's is:
/// "planning the steps" alone for minutes read as hung.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_managers_retries_are_said_while_they_happen() {
    let h = Harness::new(
        rules(json!([
            {"when": {"kind": "manager"}, "times": 1, "reply": {"fault": {"type": "status", "status": 503, "body": "{\"error\": {\"message\": \"overloaded\"}}"}}},
            manager(json!({}), plan_json(&THREE[..2])),
            evaluator(done_verdict()),
            agent(json!({"last_message_contains": "Created"}), json!({"text": DONE})),
            agent(json!({"last_message_contains": "This step: Write a.txt"}), write_reply("a.txt")),
            agent(json!({"last_message_contains": "This step: Write b.txt"}), write_reply("b.txt")),
        ])),
        Setup::default(),
    )
    .await;
    let o = start(&h, "write a.txt and b.txt", PlanMode::On).await;
    let details: Vec<String> = o
        .events
        .iter()
        .filter_map(|e| if let EngineEvent::Activity { phase: ActivityPhase::Thinking, detail } = &e.event { Some(detail.clone()) } else { None })
        .collect();
    assert!(details.iter().any(|d| d.contains("again (1 of ") && d.contains("overloaded")), "the retry is said, with why: {details:?}");
    assert_eq!(o.end_reason, Some(EndReason::VerifiedDone), "and the plan that came after runs: {:?}", errors(&o));
}

/// A manager that takes the connection and never answers is stopped at the step limit, as an
/// evaluator is, and the task runs as one run, said so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_manager_that_never_answers_is_stopped_at_the_step_limit_and_the_task_runs_as_one_run() {
    let h = Harness::new(
        rules(json!([
            {"when": {"kind": "manager"}, "reply": {"text": "{}", "first_frame_delay_ms": 600_000}},
            evaluator(done_verdict()),
            agent(json!({"last_message_contains": "Created"}), json!({"text": DONE})),
            agent(json!({}), write_reply("a.txt")),
        ])),
        Setup { idle_ms: 60_000, step_limit: Duration::from_secs(2), ..Setup::default() },
    )
    .await;
    let o = start(&h, "write a.txt", PlanMode::On).await;
    let said = errors(&o);
    assert!(said.iter().any(|m| m.contains("step limit (2 s)") && m.contains("runs as one run")), "it says the limit stopped it: {said:?}");
    assert_eq!(o.end_reason, Some(EndReason::VerifiedDone), "the task is not lost because the plan was");
}
