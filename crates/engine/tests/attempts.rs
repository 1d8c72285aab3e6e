//! Attempts side by side in one process, as the window runs them: choosing one while another is
//! still at work. (The CLI's own tests, `crates/cli/tests/attempts.rs`, choose once all ended.)

mod support {
    pub mod harness;
}

use std::time::Duration;

use finishline_engine::agent::attempts::Worker;
use finishline_engine::agent::TaskOptions;
use finishline_engine::domain::*;
use finishline_engine::event::EngineEvent;
use serde_json::json;
use support::harness::*;

fn git_in(dir: &std::path::Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git").arg("-C").arg(dir).args(["-c", "user.name=P", "-c", "user.email=p@p"]).args(args).output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn builtin(model: &str) -> Worker {
    Worker::Builtin { model: Some(model.into()) }
}

/// The agent's reply that streams nothing for a minute: an attempt at work until stopped.
fn thinks_for_a_minute() -> serde_json::Value {
    json!({"text": "", "fault": {"type": "stall_after", "frames": 0, "ms": 60000}})
}

/// A repository on `main` with one commit, and a fake provider whose agent writes notes.md and
/// says it is done (the judge agrees), unless one of `first` matches a request before that.
async fn in_a_repository(first: &[serde_json::Value]) -> Harness {
    let mut all = vec![evaluator(done_verdict())];
    all.extend(first.iter().cloned());
    all.push(agent(json!({"last_message_contains": "Created notes.md"}), json!({"text": DONE})));
    all.push(agent(json!({}), json!({"tool_calls": [{"name": "write_file", "arguments": {"path": "notes.md", "content": "- apple"}}]})));
    let h = Harness::new(rules(serde_json::Value::Array(all)), Setup::default()).await;
    let git = |args: &[&str]| git_in(&h.ws(), args);
    git(&["init", "-q", "-b", "main"]);
    h.write("README.md", "hello\n");
    git(&["add", "."]);
    git(&["commit", "-qm", "init"]);
    h
}

async fn until(what: &str, mut done: impl FnMut() -> bool) {
    let t = std::time::Instant::now();
    while !done() {
        assert!(t.elapsed() < Duration::from_secs(60), "{what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The person chose the quick attempt while the slow one still thought: the slow one is stopped
/// and put away, and the standing they chose from is the group's record. A follow-up of the one
/// chosen then does not unplace it (every place read "–" while it ran, as if nothing was chosen).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn choosing_while_another_attempt_runs_records_the_standing_a_follow_up_does_not_move() {
    let h = in_a_repository(&[
        // The follow-up of the chosen one thinks for a minute.
        agent(json!({"last_message_contains": "add a second line"}), thinks_for_a_minute()),
        agent(json!({"model": "slow"}), thinks_for_a_minute()),
    ])
    .await;
    let git = |args: &[&str]| git_in(&h.ws(), args);

    let (group, started) = h.engine.start_attempts("create notes.md", &h.ws(), vec![builtin("quick"), builtin("slow")], TaskOptions::default()).unwrap();
    let (quick, slow) = (started[0].0.clone(), started[1].0.clone());
    until("the quick attempt waits for its review", || h.store.session(&quick).unwrap().status == SessionStatus::AwaitingReview).await;
    assert!(h.store.session(&slow).unwrap().status.at_work(), "the slow one still thinks");

    let engine = h.engine.clone();
    let (g, q) = (group.clone(), quick.clone());
    tokio::task::spawn_blocking(move || engine.choose_attempt(&g, &q, None)).await.unwrap().unwrap();
    until("the slow attempt is put away", || h.store.session(&slow).unwrap().status == SessionStatus::Rejected).await;
    assert_eq!(git(&["show", "main:notes.md"]), "- apple", "the chosen one landed");

    let recorded = h.store.events(&quick, 0).unwrap().into_iter().find_map(|e| match e.event {
        EngineEvent::AttemptChosen { ranking, .. } => Some(ranking),
        _ => None,
    });
    assert!(recorded.expect("the choice is recorded").is_some(), "with the standing it was made from");
    let reason = h.store.events(&quick, 0).unwrap().into_iter().find_map(|e| match e.event {
        EngineEvent::AttemptChosen { reason, .. } => reason,
        _ => None,
    });
    assert_eq!(reason.as_deref(), Some("verified done"), "why it was first, against the one stopped");
    let chosen = h.engine.rank_group(&group).unwrap();
    assert_eq!(chosen.places, ["1", "–"], "the chosen one first; the stopped one had no review: {:?}", chosen.ranking);
    assert_eq!(chosen.ranking[1].evidence.session, slow);
    assert!(chosen.ranking[1].evidence.ended, "the stopped one reads as ended, not still running");

    // A follow-up of the chosen one, at work.
    h.engine.send_message(&quick, "add a second line").unwrap();
    until("the follow-up is at work", || h.store.session(&quick).unwrap().status.at_work()).await;
    let during = h.engine.rank_group(&group).unwrap();
    assert_eq!(during.places, ["1", "–"], "the choice keeps its place while its follow-up runs");
    assert!(during.ranking.iter().all(|r| r.evidence.ended), "{:?}", during.ranking);
    assert_eq!(during.chosen.as_ref(), Some(&quick));
    h.engine.cancel(&quick);
    h.wait_idle(&quick).await;
}

/// One attempt reached its review and the person sent it back; while it works on that, they
/// choose the other. The standing recorded keeps what the one sent back had shown in its review
/// (verified done, its files): stopped, it ends on that review, not as "cancelled" with nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attempt_sent_back_and_at_work_when_another_is_chosen_keeps_its_reviews_standing() {
    let h = in_a_repository(&[agent(json!({"last_message_contains": "try it once more"}), thinks_for_a_minute())]).await;
    let (group, started) = h.engine.start_attempts("create notes.md", &h.ws(), vec![builtin("one"), builtin("two")], TaskOptions::default()).unwrap();
    let (one, two) = (started[0].0.clone(), started[1].0.clone());
    until("both wait for their review", || [&one, &two].iter().all(|s| h.store.session(s).unwrap().status == SessionStatus::AwaitingReview)).await;
    let review = h.outcome(&two).review_id();
    h.engine.submit_review(&review, Decision::RequestChanges, Some("try it once more".into()), false, false, DecidedBy::Person).unwrap();
    until("the one sent back is at work", || h.store.session(&two).unwrap().status.at_work()).await;

    let engine = h.engine.clone();
    let (g, o) = (group.clone(), one.clone());
    tokio::task::spawn_blocking(move || engine.choose_attempt(&g, &o, None)).await.unwrap().unwrap();
    until("the one sent back is put away", || h.store.session(&two).unwrap().status == SessionStatus::Rejected).await;
    let ranked = h.engine.rank_group(&group).unwrap();
    let theirs = ranked.ranking.iter().find(|r| r.evidence.session == two).unwrap();
    assert_eq!(theirs.evidence.end_reason, Some(EndReason::VerifiedDone), "{ranked:?}");
    assert_eq!(theirs.evidence.files, 1, "its review's files");
    assert!(theirs.rank > 0, "placed on its review: {:?}", ranked.places);
}

/// The person committed on their branch while the attempts worked: the one chosen is rebased
/// onto it before it lands, and what the choice returns says so (the window's notice), with how
/// many checks ran again on the result (none here: the workspace sets no check command).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attempt_chosen_after_the_branch_moved_says_it_was_rebased_and_what_ran_again() {
    let h = in_a_repository(&[]).await;
    let git = |args: &[&str]| git_in(&h.ws(), args);
    let (group, started) = h.engine.start_attempts("create notes.md", &h.ws(), vec![builtin("a"), builtin("b")], TaskOptions::default()).unwrap();
    let (first, second) = (started[0].0.clone(), started[1].0.clone());
    for s in [&first, &second] {
        until("each attempt waits for its review", || h.store.session(s).unwrap().status == SessionStatus::AwaitingReview).await;
    }
    h.write("moved.txt", "moved\n");
    git(&["add", "moved.txt"]);
    git(&["commit", "-qm", "the person's own commit"]);
    let engine = h.engine.clone();
    let outcome = tokio::task::spawn_blocking(move || engine.choose_attempt(&group, &first, None)).await.unwrap().unwrap();
    let finishline_engine::agent::ReviewOutcome::Decided { landed: Some(landed), .. } = outcome else { panic!("it lands: {outcome:?}") };
    assert_eq!(landed.rebased, Some(finishline_engine::agent::Rebased { checks_run: 0 }), "{landed:?}");
    assert_eq!(git(&["log", "--format=%s", "main"]).lines().nth(1), Some("the person's own commit"), "landed on top of the person's commit");
}
