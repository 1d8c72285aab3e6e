//! How far to trust the evaluator: each model's reviews, its false-done rate and the sessions
//! behind every number, from reviews a person decided (scripted through the real store).

use finishline_engine::domain::*;
use finishline_engine::event::EngineEvent;
use finishline_engine::store::decisions::RequestKind;
use finishline_engine::store::trust::TRUST_SHOWN_FROM;
use finishline_engine::store::{NewSession, Store};

fn status(s: SessionStatus) -> EngineEvent {
    EngineEvent::StatusChanged { status: s, attempt: None, max_retries: None, next_retry_at: None, message: None }
}

fn evaluation(cycle: u32, verdict: Verdict, model: &str) -> EngineEvent {
    EngineEvent::Evaluation {
        cycle,
        verdict,
        summary: String::new(),
        remaining: vec![],
        stuck_reason: None,
        model: model.into(),
        parse_ok: true,
        usage: Default::default(),
        question: Default::default(),
        repairs: 0,
    }
}

/// One run judged by `model` with these verdicts, ending in a review the person (or auto) decides.
fn reviewed(store: &Store, sid: &SessionId, verdicts: &[Verdict], model: &str, decision: Decision, by: DecidedBy) {
    reviewed_by(store, sid, verdicts, model, decision, by, None);
}

/// [`reviewed`] by the person, with their words.
fn reviewed_with(store: &Store, sid: &SessionId, verdicts: &[Verdict], model: &str, decision: Decision, feedback: Option<&str>) {
    reviewed_by(store, sid, verdicts, model, decision, DecidedBy::Person, feedback);
}

fn reviewed_by(store: &Store, sid: &SessionId, verdicts: &[Verdict], model: &str, decision: Decision, by: DecidedBy, feedback: Option<&str>) {
    let run = RunId::new();
    let review = RequestId::new();
    let mut events = vec![EngineEvent::RunStarted { trigger: RunTrigger::Task }];
    events.extend(verdicts.iter().enumerate().map(|(i, v)| evaluation(i as u32 + 1, *v, model)));
    events.push(EngineEvent::ReviewRequested {
        review_id: review.clone(),
        claim: Claim::Success,
        verdict: verdicts.last().copied(),
        end_reason: EndReason::VerifiedDone,
        remaining: vec![],
        files_changed: vec![],
        verification: vec![],
        tokens: Default::default(),
        cost_usd: None,
        round_cost_usd: None,
        claim_words: None,
        verdict_summary: None,
        verdict_on_step: None,
        stuck: None,
        not_covered: vec![],
        unrecorded: false,
        not_landed: vec![],
        in_submodules: vec![],
        audit: vec![],
        auto_approve: None,
        criteria: vec![],
    });
    events.push(status(SessionStatus::AwaitingReview));
    store.append_all(sid, Some(&run), events).unwrap();
    let after = if decision == Decision::Approve { SessionStatus::Completed } else { SessionStatus::Rejected };
    store
        .resolve_request(
            &review,
            RequestKind::Review,
            SessionStatus::AwaitingReview,
            Some(&run),
            vec![
                EngineEvent::ReviewResolved { review_id: review.clone(), decision, by, feedback: feedback.map(String::from), reverted: false, occasion: None },
                status(after),
            ],
        )
        .unwrap();
}

fn session(store: &Store, task: &str) -> SessionId {
    store
        .create_session(&NewSession { task: task.into(), workspace: "/ws".into(), provider: "openai".into(), model: "agent-model".into(), base_url: None })
        .unwrap()
        .0
}

#[test]
fn each_evaluator_model_gets_its_reviews_false_done_rate_and_the_sessions_behind_them() {
    let store = Store::open_in_memory().unwrap();
    let sent_back = session(&store, "sent back, then approved");
    reviewed(&store, &sent_back, &[Verdict::NotDone, Verdict::Done], "judge-a", Decision::Approve, DecidedBy::Person);
    let rejected = session(&store, "done, but rejected");
    reviewed(&store, &rejected, &[Verdict::Done], "judge-a", Decision::Reject, DecidedBy::Person);
    let changed = session(&store, "done, sent back by the person, then done and approved");
    reviewed(&store, &changed, &[Verdict::Done], "judge-a", Decision::RequestChanges, DecidedBy::Person);
    reviewed(&store, &changed, &[Verdict::Done], "judge-a", Decision::Approve, DecidedBy::Person);
    let auto = session(&store, "auto-approved");
    reviewed(&store, &auto, &[Verdict::Done], "judge-a", Decision::Approve, DecidedBy::Auto);
    let other = session(&store, "another judge");
    reviewed(&store, &other, &[Verdict::Done], "judge-b", Decision::Approve, DecidedBy::Person);
    let unjudged = session(&store, "no evaluator");
    reviewed(&store, &unjudged, &[], "nobody", Decision::Reject, DecidedBy::Person);

    let trust = store.evaluator_trust().unwrap();
    assert_eq!(
        trust.iter().map(|t| t.model.as_str()).collect::<Vec<_>>(),
        ["judge-a", "judge-b"],
        "one row per evaluator model, most reviewed first; a run nobody judged is no evidence about a judge"
    );
    let a = &trust[0];
    assert_eq!(a.reviews, 4, "every review the person decided counts; the auto-approval says nothing about the judge");
    assert_eq!(a.done_verdicts, 4);
    assert_eq!(a.false_done_reviews, 2, "a done the person rejected and a done the person sent back are both false");
    assert_eq!(a.false_done_rate, Some(0.5));
    assert_eq!(a.false_done, vec![rejected.clone(), changed.clone()], "the sessions behind the number, so the person can check them");
    assert_eq!(a.sent_back, 1);
    assert_eq!(a.sent_back_then_approved, vec![sent_back.clone()], "sent back by the judge, then approved as delivered");
    let b = &trust[1];
    assert_eq!((b.reviews, b.false_done_rate), (1, Some(0.0)));
    const { assert!(TRUST_SHOWN_FROM >= 10, "the panel waits for enough reviews before showing a rate") };
}

#[test]
fn no_reviews_means_no_figures_rather_than_a_zero_rate() {
    let store = Store::open_in_memory().unwrap();
    let s = session(&store, "still running");
    store.append(&s, Some(&RunId::new()), EngineEvent::RunStarted { trigger: RunTrigger::Task }).unwrap();
    assert!(store.evaluator_trust().unwrap().is_empty(), "a rate from nothing would read as a perfect judge");
}

fn attempt(store: &Store, group: &GroupId, number: u32) -> SessionId {
    let sid = session(store, "one task, two attempts");
    store
        .append(
            &sid,
            None,
            EngineEvent::AttemptStarted { group: group.clone(), number, of: 2, label: format!("#{number}"), evaluator: None, evaluator_provider: None },
        )
        .unwrap();
    sid
}

#[test]
fn an_attempt_rejected_because_another_was_chosen_is_no_false_done() {
    let store = Store::open_in_memory().unwrap();
    let group = GroupId::new();
    let (chosen, other) = (attempt(&store, &group, 1), attempt(&store, &group, 2));
    reviewed(&store, &other, &[Verdict::Done], "judge", Decision::RequestChanges, DecidedBy::Person);
    reviewed(&store, &chosen, &[Verdict::Done], "judge", Decision::Approve, DecidedBy::Person);
    store.append(&chosen, None, EngineEvent::AttemptChosen { group: group.clone(), reason: None, ranking: None }).unwrap();
    reviewed_with(&store, &other, &[Verdict::Done], "judge", Decision::Reject, Some(finishline_engine::store::trust::SET_ASIDE));
    // The person's own Reject of an attempt, before they chose another, is their judgement.
    let third_group = GroupId::new();
    let (kept, judged) = (attempt(&store, &third_group, 1), attempt(&store, &third_group, 2));
    reviewed(&store, &judged, &[Verdict::Done], "judge", Decision::Reject, DecidedBy::Person);
    reviewed(&store, &kept, &[Verdict::Done], "judge", Decision::Approve, DecidedBy::Person);
    store.append(&kept, None, EngineEvent::AttemptChosen { group: third_group.clone(), reason: None, ranking: None }).unwrap();
    let all_rejected = GroupId::new();
    let (first, second) = (attempt(&store, &all_rejected, 1), attempt(&store, &all_rejected, 2));
    reviewed(&store, &first, &[Verdict::Done], "judge", Decision::Reject, DecidedBy::Person);
    reviewed(&store, &second, &[Verdict::NotDone], "judge", Decision::Reject, DecidedBy::Person);

    let t = &store.evaluator_trust().unwrap()[0];
    assert_eq!(
        t.reviews, 6,
        "the attempt set aside when its sibling was chosen was not judged on its own: its rejection is left out; its earlier Request changes, a Reject the person gave one and a group rejected whole count"
    );
    assert_eq!(
        t.false_done_reviews, 3,
        "the person's Request changes on a done attempt, their own Reject of one, and a done attempt of a group they rejected whole"
    );
    assert_eq!(t.false_done, vec![other.clone(), judged.clone(), first.clone()]);
    assert_eq!(t.false_done_rate, Some(3.0 / 5.0));
}
