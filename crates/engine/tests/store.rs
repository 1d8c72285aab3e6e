//! The history store: what a person saw is in the database, in order, before they saw it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use finishline_engine::batch::DeltaBatcher;
use finishline_engine::domain::*;
use finishline_engine::event::{EngineEvent, Envelope};
use finishline_engine::store::decisions::RequestKind;
use finishline_engine::store::export;
use finishline_engine::store::{HistoryChange, ListQuery, NewSession, Shown, Store};
use finishline_engine::ErrorCode;
use futures_util::StreamExt;

fn new_session(task: &str) -> NewSession {
    NewSession { task: task.into(), workspace: "/tmp/ws".into(), provider: "openai".into(), model: "fake-model".into(), base_url: None }
}

fn status(s: SessionStatus) -> EngineEvent {
    EngineEvent::StatusChanged { status: s, attempt: None, max_retries: None, next_retry_at: None, message: None }
}

fn delta(m: &MessageId, t: &str) -> EngineEvent {
    EngineEvent::TextDelta { message_id: m.clone(), text: t.into() }
}

fn assistant(m: &MessageId) -> EngineEvent {
    EngineEvent::MessageCreated { message_id: m.clone(), role: MessageRole::Assistant, source: None, text: None }
}

/// The evaluator's verdict that the task is not done yet, in `summary`'s words.
fn not_done_yet(summary: &str) -> EngineEvent {
    evaluation(Verdict::NotDone, summary, &[], true)
}

/// The evaluator's first verdict: `verdict`, in `summary`'s words, with what it found left.
fn evaluation(verdict: Verdict, summary: &str, remaining: &[&str], parse_ok: bool) -> EngineEvent {
    EngineEvent::Evaluation {
        cycle: 1,
        verdict,
        summary: summary.into(),
        remaining: remaining.iter().map(|r| r.to_string()).collect(),
        stuck_reason: None,
        model: "judge".into(),
        parse_ok,
        usage: Default::default(),
        question: Default::default(),
        repairs: 0,
    }
}

/// The evaluator's comparison of two attempts, preferring `prefers`, for `reason`.
fn compared(first: &SessionId, second: &SessionId, prefers: &SessionId, reason: &str) -> EngineEvent {
    EngineEvent::AttemptsCompared {
        first: first.clone(),
        second: second.clone(),
        prefers: Some(prefers.clone()),
        reason: reason.into(),
        disagreed: false,
        model: "judge".into(),
        tokens: 10,
        first_review: None,
        second_review: None,
    }
}

#[test]
fn seq_is_gap_free_and_per_session() {
    let store = Store::open_in_memory().unwrap();
    let (a, first) = store.create_session(&new_session("task a")).unwrap();
    let (b, _) = store.create_session(&new_session("task b")).unwrap();
    assert_eq!(first.seq, 1, "session_created is the first event");
    for i in 0..10 {
        store.append(&a, None, status(if i % 2 == 0 { SessionStatus::Busy } else { SessionStatus::Idle })).unwrap();
        store.append(&b, None, status(SessionStatus::Busy)).unwrap();
    }
    let seqs: Vec<u64> = store.events(&a, 0).unwrap().iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=11).collect::<Vec<_>>(), "each session counts its own events without gaps");
    assert_eq!(store.session(&a).unwrap().status, SessionStatus::Idle, "the projection follows the last status event");
}

#[test]
fn empty_and_huge_tasks_are_refused_with_a_clear_message() {
    let store = Store::open_in_memory().unwrap();
    let err = store.create_session(&new_session("   \n\t ")).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidInput);
    assert!(err.to_string().contains("empty"), "{err}");
    let huge = "x".repeat(1_000_001);
    let err = store.create_session(&new_session(&huge)).unwrap_err();
    assert!(err.to_string().contains("limit"), "the person learns the size limit: {err}");
    assert!(store.list_sessions(&ListQuery::default()).unwrap().is_empty(), "a refused task leaves nothing half-made");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_then_live_has_no_gap_and_no_duplicate_when_joining_mid_stream() {
    let store = Arc::new(Store::open_in_memory().unwrap());
    let (sid, _) = store.create_session(&new_session("stream fast")).unwrap();
    let m = MessageId::new();
    store.append(&sid, None, assistant(&m)).unwrap();
    const TOTAL: u64 = 6000;
    let writer = {
        let store = store.clone();
        let sid = sid.clone();
        let m = m.clone();
        std::thread::spawn(move || {
            let started = Instant::now();
            for i in 0..TOTAL - 2 {
                store.append(&sid, None, delta(&m, &format!("t{i} "))).unwrap();
            }
            started.elapsed()
        })
    };
    // Subscribers join while the writer streams, from the start and from the middle, and one
    // of them reads slowly so that the live channel overflows and the store must fill the gap.
    let mut joins = Vec::new();
    for (k, (after, slow)) in [(0u64, false), (0, true), (500, false), (2000, false), (3000, true)].into_iter().enumerate() {
        tokio::time::sleep(Duration::from_millis(5 * k as u64)).await;
        let store = store.clone();
        let sid = sid.clone();
        joins.push(tokio::spawn(async move {
            let mut stream = Box::pin(store.subscribe(sid, after));
            let mut seen = Vec::new();
            while let Some(e) = stream.next().await {
                let e = e.unwrap();
                seen.push(e.seq);
                if slow && e.seq % 500 == 0 {
                    tokio::time::sleep(Duration::from_millis(30)).await;
                }
                if e.seq == TOTAL {
                    break;
                }
            }
            (after, seen)
        }));
    }
    let elapsed = writer.join().unwrap();
    for j in joins {
        let (after, seen) = j.await.unwrap();
        let expected: Vec<u64> = (after + 1..=TOTAL).collect();
        assert_eq!(seen.len(), expected.len(), "subscriber from {after} must see every event exactly once");
        assert_eq!(seen, expected, "subscriber from {after} must see events in order with no gap or duplicate");
    }
    let rate = TOTAL as f64 / elapsed.as_secs_f64();
    println!("store wrote {TOTAL} events at {rate:.0} events/s");
}

#[tokio::test]
async fn a_subscriber_can_resume_from_the_last_seq_it_saw() {
    let store = Arc::new(Store::open_in_memory().unwrap());
    let (sid, _) = store.create_session(&new_session("resume subscription")).unwrap();
    for _ in 0..5 {
        store.append(&sid, None, status(SessionStatus::Busy)).unwrap();
    }
    let mut s = Box::pin(store.subscribe(sid.clone(), 4));
    assert_eq!(s.next().await.unwrap().unwrap().seq, 5, "a reloaded UI continues after the last event it had");
    assert_eq!(s.next().await.unwrap().unwrap().seq, 6);
    store.append(&sid, None, status(SessionStatus::Idle)).unwrap();
    assert_eq!(s.next().await.unwrap().unwrap().seq, 7, "then follows live");
}

#[test]
fn search_finds_a_word_from_the_middle_of_a_long_assistant_message() {
    let store = Store::open_in_memory().unwrap();
    let (sid, _) = store.create_session(&new_session("summarise the reports")).unwrap();
    let m = MessageId::new();
    store.append(&sid, None, assistant(&m)).unwrap();
    let mut words: Vec<String> = (0..4000).map(|i| format!("filler{i}")).collect();
    words[2000] = "quetzalcoatl".into();
    // Streamed in small batches that cut words in two, as a real stream does.
    let text = words.join(" ");
    let bytes = text.as_bytes();
    for chunk in bytes.chunks(37) {
        store.append(&sid, None, delta(&m, std::str::from_utf8(chunk).unwrap())).unwrap();
    }
    store.append(&sid, None, EngineEvent::StepFinished { step: 1, stop_reason: None, usage: Default::default() }).unwrap();
    let hits = store.search("Quetzalcoatl", 10).unwrap();
    assert_eq!(hits.len(), 1, "the word in the middle of a long message must be found");
    assert_eq!(hits[0].session_id, sid);
    assert_eq!(hits[0].message_id.as_ref(), Some(&m), "the hit names the message it is in: the session opens there");
    let matched: Vec<&str> = hits[0].snippet.iter().filter(|p| p.matched).map(|p| p.text.as_str()).collect();
    assert_eq!(matched, vec!["quetzalcoatl"], "the snippet marks the match");
    let in_task = store.search("reports", 10).unwrap();
    assert_eq!(in_task.len(), 1, "the task text is searchable too");
    assert_eq!(in_task[0].message_id, None, "the task's own words are in no message: the session opens as ever");
    assert!(store.search("\"unbalanced AND OR (", 10).is_ok(), "query syntax in the input must not break search");
}

/// Search as a person types: a word's first letters find it ("farewel" finds farewell), as in
/// every search box, and what the box holds is still never query syntax.
#[test]
fn search_finds_a_word_from_its_first_letters() {
    let store = Store::open_in_memory().unwrap();
    let (sid, _) = store.create_session(&new_session("add a farewell function to README.md")).unwrap();
    for typed in ["farewel", "fare", "READM", "add farew", "Farewell"] {
        let hits = store.search(typed, 10).unwrap();
        assert_eq!(hits.len(), 1, "{typed:?} finds it");
        assert_eq!(hits[0].session_id, sid);
    }
    let matched: Vec<String> = store.search("farewel", 10).unwrap()[0].snippet.iter().filter(|p| p.matched).map(|p| p.text.clone()).collect();
    assert_eq!(matched, vec!["farewell"], "the whole word is marked");
    assert!(store.search("arewell", 10).unwrap().is_empty(), "a word's first letters, not any part of it");
    assert!(store.search("farewel*) OR \"", 10).is_ok(), "query syntax in the input is still taken literally");
}

#[test]
fn search_finds_each_answer_in_its_own_session_when_streams_interleave() {
    let store = Store::open_in_memory().unwrap();
    let (a, _) = store.create_session(&new_session("first task")).unwrap();
    let (b, _) = store.create_session(&new_session("second task")).unwrap();
    let (ma, mb) = (MessageId::new(), MessageId::new());
    store.append(&a, None, assistant(&ma)).unwrap();
    store.append(&b, None, assistant(&mb)).unwrap();
    for (word_a, word_b) in [("axolotl ", "narwhal "), ("pangolin", "okapi")] {
        store.append(&a, None, EngineEvent::ReasoningDelta { message_id: ma.clone(), text: "thinking quietly ".into() }).unwrap();
        store.append(&a, None, delta(&ma, word_a)).unwrap();
        store.append(&b, None, delta(&mb, word_b)).unwrap();
    }
    // A continuation arrives as a whole message of its own between the two answers' ends.
    let note = MessageId::new();
    let continuation = EngineEvent::MessageCreated { message_id: note.clone(), role: MessageRole::User, source: None, text: Some("keep going".into()) };
    store.append(&a, None, continuation).unwrap();
    for s in [&a, &b] {
        store.append(s, None, EngineEvent::StepFinished { step: 1, stop_reason: None, usage: Default::default() }).unwrap();
    }
    assert_eq!(store.message_text(&ma).unwrap(), "axolotl pangolin", "an answer's text is its own batches, in order, without its reasoning");
    assert_eq!(store.message_text(&mb).unwrap(), "narwhal okapi");
    assert_eq!(store.message_text(&note).unwrap(), "keep going", "a message that came whole reads back whole");
    // The next step's answer in the same session is its own.
    let next = MessageId::new();
    store.append(&a, None, assistant(&next)).unwrap();
    store.append(&a, None, delta(&next, "quokka")).unwrap();
    store.append(&a, None, EngineEvent::StepFinished { step: 2, stop_reason: None, usage: Default::default() }).unwrap();
    assert_eq!(store.message_text(&next).unwrap(), "quokka");
    assert_eq!(store.message_text(&ma).unwrap(), "axolotl pangolin", "an earlier answer reads the same after later steps");
    let sessions = |q: &str| store.search(q, 10).unwrap().into_iter().map(|h| h.session_id).collect::<Vec<_>>();
    assert_eq!(sessions("pangolin"), vec![a.clone()]);
    assert_eq!(sessions("okapi"), vec![b.clone()]);
    assert_eq!(sessions("quokka"), vec![a.clone()]);
    assert!(sessions("quietly").is_empty(), "reasoning is not indexed");
}

#[test]
fn search_finds_what_the_evaluator_said_its_verdicts_and_its_comparisons_of_attempts() {
    let store = Store::open_in_memory().unwrap();
    let (a, _) = store.create_session(&new_session("greet the user")).unwrap();
    let (b, _) = store.create_session(&new_session("greet the user")).unwrap();
    store.append(&a, None, not_done_yet("greet.py exists but hello() returns an empty string")).unwrap();
    // Recorded on both attempts, as the engine does.
    let reason = "the second handles Unicode names; the first mangles them";
    store.append(&a, None, compared(&a, &b, &b, reason)).unwrap();
    store.append(&b, None, compared(&a, &b, &b, reason)).unwrap();
    let sessions = |q: &str| {
        let mut found = store.search(q, 10).unwrap().into_iter().map(|h| h.session_id).collect::<Vec<_>>();
        found.sort_by(|x, y| x.0.cmp(&y.0));
        found
    };
    assert_eq!(sessions("empty string"), vec![a.clone()], "the evaluator's verdict");
    let mut both = vec![a.clone(), b.clone()];
    both.sort_by(|x, y| x.0.cmp(&y.0));
    assert_eq!(sessions("mangles Unicode"), both, "its reason for preferring one attempt, on both");
}

#[test]
fn a_search_snippet_marks_matches_apart_from_brackets_in_the_text_itself() {
    let store = Store::open_in_memory().unwrap();
    let (sid, _) = store.create_session(&new_session("fix the parser")).unwrap();
    let m = MessageId::new();
    store.append(&sid, None, assistant(&m)).unwrap();
    store.append(&sid, None, delta(&m, "The list [a, b] now parses; the parser handles [nested] lists too.")).unwrap();
    store.append(&sid, None, EngineEvent::StepFinished { step: 1, stop_reason: None, usage: Default::default() }).unwrap();
    let hits = store.search("nested", 10).unwrap();
    assert_eq!(hits.len(), 1);
    let text: String = hits[0].snippet.iter().map(|p| p.text.as_str()).collect();
    assert!(text.contains("[a, b]") && text.contains("[nested]"), "brackets the model wrote stay text: {text}");
    let matched: Vec<&str> = hits[0].snippet.iter().filter(|p| p.matched).map(|p| p.text.as_str()).collect();
    assert_eq!(matched, vec!["nested"], "only the searched word is marked, so the window can highlight it without guessing at brackets");
}

/// A snippet is read as a line of text beside the task's title: the Markdown a model writes
/// (code fences, backticks, bold) and its line breaks would show as raw marks.
#[test]
fn a_search_snippet_reads_as_plain_text_without_the_markdown_marks_or_line_breaks() {
    let store = Store::open_in_memory().unwrap();
    let (sid, _) = store.create_session(&new_session("fix the list")).unwrap();
    let m = MessageId::new();
    store.append(&sid, None, assistant(&m)).unwrap();
    store.append(&sid, None, delta(&m, "notes.md:1\n```\n- apple\n```\nsay **pear** instead, in `fruits.txt`")).unwrap();
    store.append(&sid, None, EngineEvent::StepFinished { step: 1, stop_reason: None, usage: Default::default() }).unwrap();
    let hits = store.search("pear", 10).unwrap();
    let text: String = hits[0].snippet.iter().map(|p| p.text.as_str()).collect();
    assert_eq!(text, "notes.md:1 - apple say pear instead, in fruits.txt");
    let matched: Vec<&str> = hits[0].snippet.iter().filter(|p| p.matched).map(|p| p.text.as_str()).collect();
    assert_eq!(matched, vec!["pear"]);

    let m = MessageId::new();
    store.append(&sid, None, assistant(&m)).unwrap();
    store.append(&sid, None, delta(&m, "ports in C# and F#\n## Results\nzanzibar is 2**8 wide")).unwrap();
    store.append(&sid, None, EngineEvent::StepFinished { step: 2, stop_reason: None, usage: Default::default() }).unwrap();
    let text: String = store.search("zanzibar", 10).unwrap()[0].snippet.iter().map(|p| p.text.as_str()).collect();
    assert_eq!(text, "ports in C# and F# Results zanzibar is 2**8 wide", "a heading's # goes, a name's and a power's stay");
}

/// A plan waiting at its second step for the person's answer was listed as "Verified done" (its
/// first step's end) and found by History's "Verified done" filter; a follow-up at work showed
/// the round before's outcome the same way. A session at work has no outcome yet.
#[test]
fn a_session_at_work_has_no_outcome_yet_not_its_last_runs_or_steps() {
    let store = Store::open_in_memory().unwrap();
    let (sid, _) = store.create_session(&new_session("write a.txt, then b.txt")).unwrap();
    let done = |status| EngineEvent::RunFinished { status, claim: Claim::None, verdict: Some(Verdict::Done), end_reason: EndReason::VerifiedDone, stuck: None };
    let (task, step1, step2) = (RunId::new(), RunId::new(), RunId::new());
    store.append(&sid, Some(&task), EngineEvent::RunStarted { trigger: RunTrigger::Task }).unwrap();
    store.append(&sid, Some(&step1), EngineEvent::RunStarted { trigger: RunTrigger::PlanStep }).unwrap();
    // A step's run ends with the plan still at work.
    store.append(&sid, Some(&step1), done(SessionStatus::Busy)).unwrap();
    assert_eq!(store.session(&sid).unwrap().end_reason, None, "step 1's end is not the task's");
    store.append(&sid, Some(&step2), EngineEvent::RunStarted { trigger: RunTrigger::PlanStep }).unwrap();
    store.append(&sid, Some(&step2), status(SessionStatus::AwaitingApproval)).unwrap();
    assert_eq!(store.session(&sid).unwrap().end_reason, None);
    let verified = store.list_sessions(&ListQuery { end_reasons: vec![EndReason::VerifiedDone], ..Default::default() }).unwrap();
    assert!(verified.is_empty(), "History's 'Verified done' does not find a plan still waiting");
    store.append(&sid, Some(&step2), done(SessionStatus::AwaitingReview)).unwrap();
    store.append(&sid, Some(&step2), status(SessionStatus::AwaitingReview)).unwrap();
    assert_eq!(store.session(&sid).unwrap().end_reason, Some(EndReason::VerifiedDone), "the plan's own end is its outcome");
    // A follow-up at work: the round before's outcome is not this one's.
    let follow_up = RunId::new();
    store.append(&sid, Some(&follow_up), EngineEvent::RunStarted { trigger: RunTrigger::Feedback }).unwrap();
    store.append(&sid, Some(&follow_up), status(SessionStatus::Busy)).unwrap();
    let s = store.session(&sid).unwrap();
    assert_eq!((s.claim, s.verdict, s.end_reason), (None, None, None));
}

#[test]
fn list_filters_by_status_end_reason_and_date_and_pages_newest_first() {
    let clock = Arc::new(finishline_engine::clock::ManualClock::new(1_700_000_000_000));
    let store = Store::open_in_memory_with(clock.clone()).unwrap();
    let mut ids = Vec::new();
    for i in 0..7 {
        clock.advance(60_000);
        let (sid, _) = store.create_session(&new_session(&format!("task {i}"))).unwrap();
        let run = RunId::new();
        store.append(&sid, Some(&run), EngineEvent::RunStarted { trigger: RunTrigger::Task }).unwrap();
        let (st, end) = if i % 2 == 0 { (SessionStatus::Completed, EndReason::VerifiedDone) } else { (SessionStatus::AwaitingReview, EndReason::Stuck) };
        store
            .append(
                &sid,
                Some(&run),
                EngineEvent::RunFinished { status: st, claim: Claim::Success, verdict: Some(Verdict::Done), end_reason: end, stuck: None },
            )
            .unwrap();
        store.append(&sid, Some(&run), status(st)).unwrap();
        ids.push(sid);
    }
    let all = store.list_sessions(&ListQuery::default()).unwrap();
    assert_eq!(all.first().unwrap().id, ids[6], "newest first");
    let done = store.list_sessions(&ListQuery { statuses: vec![SessionStatus::Completed], ..Default::default() }).unwrap();
    assert_eq!(done.len(), 4);
    let stuck = store.list_sessions(&ListQuery { end_reasons: vec![EndReason::Stuck], ..Default::default() }).unwrap();
    assert_eq!(stuck.len(), 3);
    let since = store.list_sessions(&ListQuery { since_ms: Some(1_700_000_000_000 + 5 * 60_000), ..Default::default() }).unwrap();
    assert_eq!(since.len(), 3, "the date filter keeps sessions from that time on");
    let page1 = store.list_sessions(&ListQuery { limit: 3, ..Default::default() }).unwrap();
    let last = page1.last().unwrap();
    let page2 = store.list_sessions(&ListQuery { limit: 3, before: Some((last.created_ms, last.id.clone())), ..Default::default() }).unwrap();
    assert_eq!(page2.first().unwrap().id, ids[3], "the next page starts right after the previous one");
    let found = store
        .list_sessions(&ListQuery { ids: vec![ids[0].clone(), ids[5].clone()], statuses: vec![SessionStatus::Completed], limit: 1, ..Default::default() })
        .unwrap();
    assert_eq!(found.iter().map(|s| &s.id).collect::<Vec<_>>(), vec![&ids[0]], "a search's matches, within the other filters, however far back");
    // A match that is one attempt of a group comes with the group's other attempts, which the
    // list shows as one row with it.
    let group = GroupId::new();
    let attempts: Vec<SessionId> = (1..=2)
        .map(|number| {
            let (sid, _) = store.create_session(&new_session("the same task twice")).unwrap();
            store
                .append(
                    &sid,
                    None,
                    EngineEvent::AttemptStarted {
                        group: group.clone(),
                        number,
                        of: 2,
                        label: format!("agent {number}"),
                        evaluator: None,
                        evaluator_provider: None,
                    },
                )
                .unwrap();
            sid
        })
        .collect();
    let found = store.list_sessions(&ListQuery { ids: vec![attempts[0].clone(), ids[1].clone()], limit: 50, ..Default::default() }).unwrap();
    let mut got: Vec<&SessionId> = found.iter().map(|s| &s.id).collect();
    got.sort();
    let mut want = vec![&attempts[0], &attempts[1], &ids[1]];
    want.sort();
    assert_eq!(got, want, "the match, its group's other attempt, and the other match");
}

#[test]
fn export_marks_continuations_and_verdicts_as_the_engines_not_the_persons() {
    let store = Store::open_in_memory().unwrap();
    let (sid, _) = store.create_session(&new_session("write a.txt and b.txt")).unwrap();
    let run = RunId::new();
    let u = MessageId::new();
    let c = MessageId::new();
    store
        .append_all(
            &sid,
            Some(&run),
            vec![
                EngineEvent::RunStarted { trigger: RunTrigger::Task },
                EngineEvent::ProjectInstructions { file: "AGENTS.md".into(), chars: 40, truncated: false },
                EngineEvent::MessageCreated { message_id: u, role: MessageRole::User, source: None, text: Some("write a.txt and b.txt".into()) },
                EngineEvent::Evaluation {
                    cycle: 1,
                    verdict: Verdict::NotDone,
                    summary: "a.txt exists, b.txt does not".into(),
                    remaining: vec!["write b.txt".into()],
                    stuck_reason: None,
                    model: "judge".into(),
                    parse_ok: true,
                    usage: Default::default(),
                    question: Default::default(),
                    repairs: 0,
                },
                EngineEvent::Continuation {
                    source: ContinuationSource::Evaluator,
                    attempt: 1,
                    max: 5,
                    remaining: vec!["write b.txt".into()],
                    text: "Still missing: b.txt".into(),
                    answers_call: None,
                    refused_claim: false,
                },
                EngineEvent::MessageCreated {
                    message_id: c,
                    role: MessageRole::Continuation,
                    source: Some(ContinuationSource::Evaluator),
                    text: Some("Still missing: b.txt".into()),
                },
            ],
        )
        .unwrap();
    let t = store.timeline(&sid).unwrap();
    let md = export::to_markdown(&t);
    assert!(md.contains("**You:**\n\n> write a.txt and b.txt"), "the person's words are theirs:\n{md}");
    assert!(md.contains(" from Finishline**") && md.contains("not written by you"), "a continuation is marked as the engine's:\n{md}");
    assert!(!md.contains("**You:**\n\n> Still missing"), "a continuation must never be shown as the person's message");
    assert_eq!(md.matches("↻").count(), 1, "a continuation is shown once, its count and its words together:\n{md}");
    assert!(
        md.contains("**↻ Continuation 1/5 from Finishline** (evaluator: work remains; not written by you): write b.txt\n\n> Still missing: b.txt"),
        "its count, its source, what remains and its words:\n{md}"
    );
    assert!(md.contains("Evaluator verdict (cycle 1): not done"));
    assert!(md.contains("Following the project's AGENTS.md"), "an export says which project instructions the run followed:\n{md}");
    let json = export::to_json(&t);
    let roles: Vec<&str> = json["transcript"].as_array().unwrap().iter().filter(|e| e["kind"] == "message").map(|e| e["role"].as_str().unwrap()).collect();
    assert_eq!(roles, vec!["user", "continuation"], "the JSON export keeps the continuation's own role");
}

#[test]
fn the_export_marks_a_failing_verification_as_failed_not_with_a_tick() {
    let store = Store::open_in_memory().unwrap();
    let (sid, _) = store.create_session(&new_session("make the tests pass")).unwrap();
    let check = |command: &str, exit_code: Option<i32>, skipped: bool| EngineEvent::Verification {
        command: command.into(),
        exit_code,
        output_tail: String::new(),
        skipped,
        nth: 0,
        of: 0,
        persons_own: true,
        plans: false,
    };
    store
        .append_all(
            &sid,
            Some(&RunId::new()),
            vec![
                EngineEvent::RunStarted { trigger: RunTrigger::Task },
                check("python3 check.py", Some(1), false),
                check("cargo test", Some(0), false),
                check("npm test", None, true),
                check("make slow", None, false),
            ],
        )
        .unwrap();
    let md = export::to_markdown(&store.timeline(&sid).unwrap());
    assert!(md.contains("**✗ Verification** `python3 check.py`: exit 1"), "{md}");
    assert!(md.contains("**✓ Verification** `cargo test`: exit 0"), "{md}");
    assert!(md.contains("**– Verification** `npm test`: skipped"), "{md}");
    assert!(md.contains("**✗ Verification** `make slow`: exit ?"), "a command with no exit code did not pass: {md}");
}

/// A file the agent read, or a command's output, that holds a fence of its own (a README's code
/// block) stays inside the export's block: its heading was a heading of the export, and every
/// fence after it was off by one.
#[test]
fn a_fence_in_a_tools_output_or_a_checks_output_stays_inside_its_block() {
    let store = Store::open_in_memory().unwrap();
    let (sid, _) = store.create_session(&new_session("read the readme")).unwrap();
    let readme = "before\n```\n# INJECTED HEADING\n```\nafter";
    store
        .append_all(
            &sid,
            Some(&RunId::new()),
            vec![
                EngineEvent::RunStarted { trigger: RunTrigger::Task },
                EngineEvent::ToolCall {
                    call_id: "c1".into(),
                    message_id: None,
                    tool: "read_file".into(),
                    kind: None,
                    input: serde_json::json!({"path": "x```y"}),
                    state: ToolState::Done,
                    output: Some(readme.into()),
                },
                EngineEvent::Verification {
                    command: "cat readme.txt".into(),
                    exit_code: Some(0),
                    output_tail: readme.into(),
                    skipped: false,
                    nth: 0,
                    of: 0,
                    persons_own: true,
                    plans: false,
                },
                EngineEvent::Verification {
                    command: "test `cat n.txt` = 3".into(),
                    exit_code: Some(0),
                    output_tail: String::new(),
                    skipped: false,
                    nth: 0,
                    of: 0,
                    persons_own: true,
                    plans: false,
                },
            ],
        )
        .unwrap();
    let md = export::to_markdown(&store.timeline(&sid).unwrap());
    // Outside every block, by CommonMark's rule: a fence closes only with one at least as long.
    let mut open: Option<usize> = None;
    for line in md.lines() {
        let ticks = line.chars().take_while(|c| *c == '`').count();
        match open {
            None if ticks >= 3 => open = Some(ticks),
            Some(n) if ticks >= n && line.trim_end().chars().all(|c| c == '`') => open = None,
            None => assert!(!line.starts_with("# INJECTED"), "the file's heading is the export's: {md}"),
            _ => {}
        }
    }
    assert_eq!(open, None, "every block is closed: {md}");
    assert!(md.contains("# INJECTED HEADING"), "the output is kept: {md}");
    assert!(md.contains("**✓ Verification** ``test `cat n.txt` = 3``: exit 0"), "a command with a backtick is one code span: {md}");
}

/// What the audit finds when an agent skips a test to make the suite pass.
fn a_skipped_test() -> finishline_engine::judge::audit::Finding {
    finishline_engine::judge::audit::Finding {
        rule: finishline_engine::judge::audit::AuditRule::SkipAdded,
        path: "tests/test_math.py".into(),
        line: Some(4),
        detail: "a test is now skipped".into(),
        excerpt: "@pytest.mark.skip".into(),
    }
}

/// History shows at a glance that a "verified done" weakened the checks: the list carries how
/// many of the latest review's audit findings stand (a dismissed one does not, until restored).
#[test]
fn the_history_list_counts_the_audit_findings_that_stand() {
    let store = Store::open_in_memory().unwrap();
    let (sid, _) = store.create_session(&new_session("make the tests pass")).unwrap();
    let finding = a_skipped_test();
    let second = finishline_engine::judge::audit::Finding { path: "tests/test_io.py".into(), ..finding.clone() };
    let run = RunId::new();
    store
        .append_all(
            &sid,
            Some(&run),
            vec![EngineEvent::RunStarted { trigger: RunTrigger::Task }, verified_review(RequestId::new(), vec![finding, second.clone()])],
        )
        .unwrap();
    assert_eq!(store.session(&sid).unwrap().audit_findings, 2);
    let dismissed = EngineEvent::AuditDismissed { rule: second.rule, path: second.path.clone(), excerpt: second.excerpt.clone() };
    store.append(&sid, None, dismissed.clone()).unwrap();
    store.append(&sid, None, dismissed).unwrap();
    assert_eq!(store.session(&sid).unwrap().audit_findings, 1, "dismissed once, however often said");
    store.append(&sid, None, EngineEvent::AuditRestored { rule: second.rule, path: second.path.clone(), excerpt: second.excerpt.clone() }).unwrap();
    assert_eq!(store.session(&sid).unwrap().audit_findings, 2);
    store.append(&sid, Some(&RunId::new()), verified_review(RequestId::new(), vec![])).unwrap();
    assert_eq!(store.session(&sid).unwrap().audit_findings, 0, "the latest review's");
}

#[test]
fn the_audit_findings_of_a_history_from_before_the_count_are_counted_at_the_upgrade() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("history.db");
    let sid = {
        let store = Store::open(&path, Arc::new(finishline_engine::clock::SystemClock)).unwrap();
        let (sid, _) = store.create_session(&new_session("make the tests pass")).unwrap();
        let finding = a_skipped_test();
        store
            .append_all(
                &sid,
                Some(&RunId::new()),
                vec![EngineEvent::RunStarted { trigger: RunTrigger::Task }, verified_review(RequestId::new(), vec![finding])],
            )
            .unwrap();
        sid
    };
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch("ALTER TABLE sessions DROP COLUMN audit_findings; ALTER TABLE runs DROP COLUMN occasion; DROP INDEX sessions_cancel_asked; ALTER TABLE sessions DROP COLUMN cancel_asked_of; ALTER TABLE sessions DROP COLUMN failure; PRAGMA user_version = 13;").unwrap();
    drop(conn);
    let store = Store::open(&path, Arc::new(finishline_engine::clock::SystemClock)).expect("an older history is migrated");
    assert_eq!(store.session(&sid).unwrap().audit_findings, 1);
}

#[test]
fn the_export_names_what_the_audit_found_in_the_reviewed_changes() {
    let store = Store::open_in_memory().unwrap();
    let (sid, _) = store.create_session(&new_session("make the tests pass")).unwrap();
    let finding = a_skipped_test();
    let second = finishline_engine::judge::audit::Finding { path: "tests/test_io.py".into(), ..finding.clone() };
    store
        .append_all(
            &sid,
            Some(&RunId::new()),
            vec![
                EngineEvent::RunStarted { trigger: RunTrigger::Task },
                verified_review(RequestId::new(), vec![finding.clone(), second.clone()]),
                EngineEvent::AuditDismissed { rule: second.rule, path: second.path.clone(), excerpt: second.excerpt.clone() },
            ],
        )
        .unwrap();
    let md = export::to_markdown(&store.timeline(&sid).unwrap());
    assert!(md.contains(&format!("⚠ audit: {}\n", finding.describe())), "the story says what was found, not only that the review came: {md}");
    assert!(md.contains(&format!("⚠ audit: {} (dismissed by you)", second.describe())), "and what the person dismissed: {md}");
}

/// A run that went to review stuck says which pattern caught it and what repeated: "end reason
/// stuck" alone left the person to guess.
#[test]
fn the_export_names_the_stuck_pattern_and_what_repeated() {
    let store = Store::open_in_memory().unwrap();
    let (sid, _) = store.create_session(&new_session("write notes.md")).unwrap();
    let mut review = verified_review(RequestId::new(), vec![]);
    if let EngineEvent::ReviewRequested { end_reason, stuck, claim, verdict, .. } = &mut review {
        (*end_reason, *claim, *verdict) = (EndReason::Stuck, Claim::None, None);
        *stuck = Some(Stuck { pattern: StuckPattern::SameActionError, repeated: "write_file(notes.md)".into() });
    }
    store.append_all(&sid, Some(&RunId::new()), vec![EngineEvent::RunStarted { trigger: RunTrigger::Task }, review]).unwrap();
    let md = export::to_markdown(&store.timeline(&sid).unwrap());
    assert!(md.contains("- Stuck: the same action failing 3 times: `write_file(notes.md)`"), "{md}");
    let (sid, _) = store.create_session(&new_session("say it")).unwrap();
    let mut review = verified_review(RequestId::new(), vec![]);
    if let EngineEvent::ReviewRequested { end_reason, stuck, .. } = &mut review {
        *end_reason = EndReason::Stuck;
        *stuck = Some(Stuck { pattern: StuckPattern::RepeatingOutput, repeated: "again\n\nagain".into() });
    }
    store.append_all(&sid, Some(&RunId::new()), vec![EngineEvent::RunStarted { trigger: RunTrigger::Task }, review]).unwrap();
    let md = export::to_markdown(&store.timeline(&sid).unwrap());
    assert!(md.contains(": `again again`\n"), "a repeating answer's lines kept on one line: {md}");
}

/// A plan's next step starts with its todo list emptied: the export puts no "Todos:" heading over
/// nothing, and still lists a list that has items.
#[test]
fn the_export_leaves_out_an_emptied_todo_list() {
    let store = Store::open_in_memory().unwrap();
    let (sid, _) = store.create_session(&new_session("write a and b")).unwrap();
    let todo = Todo { id: "1".into(), content: "write a".into(), status: TodoStatus::Completed };
    store
        .append_all(
            &sid,
            Some(&RunId::new()),
            vec![
                EngineEvent::RunStarted { trigger: RunTrigger::Task },
                EngineEvent::TodosUpdated { todos: vec![todo] },
                EngineEvent::TodosUpdated { todos: vec![] },
            ],
        )
        .unwrap();
    let md = export::to_markdown(&store.timeline(&sid).unwrap());
    assert_eq!(md.matches("**Todos:**").count(), 1, "{md}");
    assert!(md.contains("**Todos:**\n\n- [x] write a"), "{md}");
}

/// The story of a task keeps what its review showed: each file changed and its diff, so a
/// rejected task's work can be read after its worktree and branch are gone.
#[test]
fn the_export_keeps_the_reviewed_files_and_their_diffs() {
    let store = Store::open_in_memory().unwrap();
    let (sid, _) = store.create_session(&new_session("fix the parser")).unwrap();
    let diff = "diff --git a/parser.rs b/parser.rs\n--- a/parser.rs\n+++ b/parser.rs\n@@ -1 +1 @@\n-broken\n+fixed\n";
    let mut review = verified_review(RequestId::new(), vec![]);
    if let EngineEvent::ReviewRequested { files_changed, .. } = &mut review {
        *files_changed = vec![serde_json::json!({"path": "parser.rs", "kind": "modified", "diff": diff})];
    }
    store.append_all(&sid, Some(&RunId::new()), vec![EngineEvent::RunStarted { trigger: RunTrigger::Task }, review]).unwrap();
    let md = export::to_markdown(&store.timeline(&sid).unwrap());
    assert!(md.contains("Files changed: parser.rs (modified)"), "{md}");
    assert!(md.contains(&format!("```diff\n{diff}```")), "with its diff: {md}");
    let json = export::to_json(&store.timeline(&sid).unwrap()).to_string();
    assert!(json.contains("+fixed"), "the JSON export too: {json}");
}

#[test]
fn a_second_decision_on_the_same_review_is_reported_as_already_decided() {
    let store = Store::open_in_memory().unwrap();
    let (sid, _) = store.create_session(&new_session("task")).unwrap();
    let (run, review) = awaiting_review(&store, &sid);
    let decide = |d: Decision| {
        store.resolve_request(
            &review,
            RequestKind::Review,
            SessionStatus::AwaitingReview,
            Some(&run),
            vec![
                EngineEvent::ReviewResolved { review_id: review.clone(), decision: d, by: DecidedBy::Person, feedback: None, reverted: false, occasion: None },
                status(SessionStatus::Completed),
            ],
        )
    };
    decide(Decision::Approve).expect("the first decision applies");
    let err = decide(Decision::Reject).unwrap_err();
    assert_eq!(err.code(), ErrorCode::AlreadyDecided, "a second decision, from anywhere, must not apply: {err}");
    assert_eq!(store.session(&sid).unwrap().status, SessionStatus::Completed, "the first decision stands");
    assert_eq!(store.session(&sid).unwrap().decision, Some(Decision::Approve));
    let resolved = store.events(&sid, 0).unwrap().iter().filter(|e| matches!(e.event, EngineEvent::ReviewResolved { .. })).count();
    assert_eq!(resolved, 1, "exactly one review_resolved event exists");
}

/// The history list's decision is the one on the work since the task last ran: a task rejected,
/// continued and then put away with no review (discard) was not refused by anyone this time,
/// and the list must not call it rejected. The reject still counts in the trust figures.
#[test]
fn a_decision_made_before_the_task_ran_again_is_not_the_decision_of_its_new_work() {
    let store = Store::open_in_memory().unwrap();
    let (sid, _) = store.create_session(&new_session("task")).unwrap();
    reviewed_round(&store, &sid, Decision::Reject, SessionStatus::Rejected);
    assert_eq!(store.session(&sid).unwrap().decision, Some(Decision::Reject), "rejected in its review");
    let again = RunId::new();
    store.append_all(&sid, Some(&again), vec![EngineEvent::RunStarted { trigger: RunTrigger::Message }, status(SessionStatus::Busy)]).unwrap();
    assert_eq!(store.session(&sid).unwrap().decision, None, "running again, its new work is undecided");
    store.append_all(&sid, Some(&again), vec![status(SessionStatus::Failed)]).unwrap();
    store.append_all(&sid, None, vec![status(SessionStatus::Rejected)]).unwrap();
    let listed = store.list_sessions(&ListQuery::default()).unwrap();
    let s = listed.iter().find(|s| s.id == sid).unwrap();
    assert_eq!((s.status, s.decision), (SessionStatus::Rejected, None), "put away with no review: nobody refused its new work");
    let md = export::to_markdown(&store.timeline(&sid).unwrap());
    assert!(md.contains("- **Status:** Discarded (put away without a review) ·"), "its story says so too, as its badge does: {md}");
    let trust = store.agent_trust().unwrap();
    assert_eq!((trust[0].reviews_decided, trust[0].approved), (1, 0), "the reject in its first review still counts: {trust:?}");
}

/// A task that failed before its model ever answered (a refused key, a server down) says nothing
/// of the agent: the trust figures leave it out, where "verified done 0 of 15" blamed the agent
/// for fifteen runs its provider refused.
#[test]
fn a_task_whose_model_never_answered_is_not_counted_against_its_agent() {
    let store = Store::open_in_memory().unwrap();
    let (refused, _) = store.create_session(&new_session("the key was refused")).unwrap();
    let run = RunId::new();
    store.append_all(&refused, Some(&run), vec![EngineEvent::RunStarted { trigger: RunTrigger::Task }, status(SessionStatus::Busy)]).unwrap();
    store.append_all(&refused, Some(&run), vec![status(SessionStatus::Failed)]).unwrap();
    let (worked, _) = store.create_session(&new_session("worked, then failed")).unwrap();
    let run = RunId::new();
    store.append_all(&worked, Some(&run), vec![EngineEvent::RunStarted { trigger: RunTrigger::Task }, status(SessionStatus::Busy)]).unwrap();
    store
        .append_all(
            &worked,
            Some(&run),
            vec![
                EngineEvent::StepFinished {
                    step: 1,
                    stop_reason: None,
                    usage: finishline_engine::provider::Usage { input_tokens: 900, output_tokens: 40, ..Default::default() },
                },
                status(SessionStatus::Failed),
            ],
        )
        .unwrap();
    let trust = store.agent_trust().unwrap();
    assert_eq!(trust[0].tasks, 1, "only the task its model worked on counts: {trust:?}");
}

/// History's filter lists what its badges say: a task put away with no review is "Discarded", one
/// whose work waits on a kept branch is "Branch kept", an answer the evaluator could not check is
/// "Not checked", and none of them is listed under the status it is stored with.
#[test]
fn the_history_filter_lists_sessions_as_their_badges_name_them() {
    let store = Store::open_in_memory().unwrap();
    let (refused, _) = store.create_session(&new_session("refused")).unwrap();
    reviewed_round(&store, &refused, Decision::Reject, SessionStatus::Rejected);
    let (discarded, _) = store.create_session(&new_session("put away")).unwrap();
    store.append_all(&discarded, None, vec![status(SessionStatus::Rejected)]).unwrap();
    let kept = worked_in_a_worktree(&store, "kept its branch", "finishline/kept", false);
    reviewed_round(&store, &kept, Decision::Approve, SessionStatus::Completed);
    let (landed, _) = store.create_session(&new_session("landed")).unwrap();
    reviewed_round(&store, &landed, Decision::Approve, SessionStatus::Completed);
    let (unchecked, _) = store.create_session(&new_session("answered, not checked")).unwrap();
    let (answered, _) = store.create_session(&new_session("answered")).unwrap();
    for (sid, end) in [(&unchecked, EndReason::ConversationUnchecked), (&answered, EndReason::Conversation)] {
        let run = RunId::new();
        store
            .append_all(
                sid,
                Some(&run),
                vec![
                    EngineEvent::RunStarted { trigger: RunTrigger::Task },
                    EngineEvent::RunFinished { status: SessionStatus::Idle, claim: Claim::None, verdict: None, end_reason: end, stuck: None },
                    status(SessionStatus::Idle),
                ],
            )
            .unwrap();
    }
    let shown = |s: Shown| -> Vec<SessionId> {
        let mut ids: Vec<SessionId> = store.list_sessions(&ListQuery { shown: vec![s], ..Default::default() }).unwrap().into_iter().map(|s| s.id).collect();
        ids.sort_by(|a, b| a.0.cmp(&b.0));
        ids
    };
    assert_eq!(shown(Shown::Status(SessionStatus::Rejected)), vec![refused.clone()], "rejected in its review, and no other");
    assert_eq!(shown(Shown::Discarded), vec![discarded.clone()]);
    assert_eq!(shown(Shown::BranchKept), vec![kept.clone()]);
    assert_eq!(shown(Shown::Status(SessionStatus::Completed)), vec![landed.clone()], "approved and landed; the kept branch is listed as such");
    assert_eq!(shown(Shown::NotChecked), vec![unchecked.clone()]);
    assert_eq!(shown(Shown::Status(SessionStatus::Idle)), vec![answered.clone()]);
    // A group whose first attempt was chosen: the second set aside for it (its branch kept), the
    // third sent on after the choice and then discarded on its own, as any task.
    let group = GroupId::new();
    let attempt = |n: u32, sid: &SessionId| {
        store
            .append(
                sid,
                None,
                EngineEvent::AttemptStarted { group: group.clone(), number: n, of: 3, label: format!("agent {n}"), evaluator: None, evaluator_provider: None },
            )
            .unwrap();
    };
    let (chosen, _) = store.create_session(&new_session("the same task")).unwrap();
    attempt(1, &chosen);
    reviewed_round(&store, &chosen, Decision::Approve, SessionStatus::Completed);
    store.append(&chosen, None, EngineEvent::AttemptChosen { group: group.clone(), reason: None, ranking: None }).unwrap();
    let aside = worked_in_a_worktree(&store, "the same task", "finishline/aside", false);
    attempt(2, &aside);
    reviewed_round_as(&store, &aside, Decision::Reject, SessionStatus::Rejected, None, Some(DecisionOccasion::AnotherAttemptChosen));
    let (sent_on, _) = store.create_session(&new_session("the same task")).unwrap();
    attempt(3, &sent_on);
    reviewed_round_as(&store, &sent_on, Decision::Reject, SessionStatus::Rejected, None, Some(DecisionOccasion::AnotherAttemptChosen));
    let again = RunId::new();
    store
        .append_all(
            &sent_on,
            Some(&again),
            vec![EngineEvent::RunStarted { trigger: RunTrigger::Message }, status(SessionStatus::Busy), status(SessionStatus::Failed)],
        )
        .unwrap();
    store.append_all(&sent_on, None, vec![status(SessionStatus::Rejected)]).unwrap();
    let mut put_away = vec![discarded.clone(), sent_on.clone()];
    put_away.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(shown(Shown::Discarded), put_away, "discarded on its own after the choice, as any task");
    assert!(store.session(&sent_on).unwrap().put_away_unreviewed(), "as `sessions list` tags it");
    assert_eq!(shown(Shown::BranchKept), vec![kept.clone()], "one set aside for another reads Not chosen, whatever its branch");
    assert_eq!(shown(Shown::Status(SessionStatus::Rejected)), vec![refused.clone()], "nor Rejected: nobody refused it");
    assert_eq!(shown(Shown::NotChosen), vec![aside.clone()], "it is listed as what its badge says");
    // One row's own word (its export's header) is the filter's: each row is listed under it.
    for row in store.list_sessions(&ListQuery::default()).unwrap() {
        assert!(shown(row.shown()).contains(&row.id), "{} reads {:?}, and is not listed so", row.title, row.shown());
    }
    assert_eq!(store.session(&aside).unwrap().shown().words(), "Not chosen");
    // The window names them in the words it shows.
    for s in [Shown::Discarded, Shown::BranchKept, Shown::NotChecked, Shown::NotChosen, Shown::Status(SessionStatus::Rejected)] {
        assert_eq!(Shown::parse(s.as_str()), Some(s));
    }
    assert_eq!(serde_json::from_str::<Shown>("\"branch_kept\"").unwrap(), Shown::BranchKept);
    assert_eq!(serde_json::from_str::<Shown>("\"awaiting_review\"").unwrap(), Shown::Status(SessionStatus::AwaitingReview));
    assert!(serde_json::from_str::<Shown>("\"gone\"").is_err());
}

/// An attempt set aside when the person chose another is listed as such; one the person rejected
/// in its own review is not: the sidebar says "Not chosen" for the one and "Rejected" for the
/// other. An older history learns it on upgrade.
#[test]
fn the_list_tells_an_attempt_set_aside_for_another_from_one_the_person_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("history.db");
    let decided = |store: &Store, feedback: Option<&str>, occasion: Option<DecisionOccasion>| {
        let (sid, _) = store.create_session(&new_session("write greet.py")).unwrap();
        reviewed_round_as(store, &sid, Decision::Reject, SessionStatus::Rejected, feedback, occasion);
        sid
    };
    let (aside, refused, legacy, put_away) = {
        let store = Store::open(&path, Arc::new(finishline_engine::clock::SystemClock)).unwrap();
        let aside = decided(&store, None, Some(DecisionOccasion::AnotherAttemptChosen));
        let refused = decided(&store, None, None);
        // As builds before the occasion set an attempt aside: a reject in words of its own.
        let legacy = decided(&store, Some(finishline_engine::store::trust::SET_ASIDE), None);
        // And rejected a whole group: in words of their own too, and not refused on its own.
        let put_away = decided(&store, Some(finishline_engine::agent::attempts::EVERY_ATTEMPT_REJECTED), None);
        assert_eq!(store.session(&aside).unwrap().occasion, Some(DecisionOccasion::AnotherAttemptChosen));
        assert_eq!(store.session(&refused).unwrap().occasion, None);
        (aside, refused, legacy, put_away)
    };
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute("UPDATE sessions SET group_id = 'g1' WHERE id IN (?1, ?2, ?3, ?4)", [&aside.0, &refused.0, &legacy.0, &put_away.0]).unwrap();
    conn.execute_batch(
        "ALTER TABLE runs DROP COLUMN occasion; DROP INDEX sessions_cancel_asked; ALTER TABLE sessions DROP COLUMN cancel_asked_of; ALTER TABLE sessions DROP COLUMN failure; PRAGMA user_version = 14;",
    )
    .unwrap();
    drop(conn);
    let store = Store::open(&path, Arc::new(finishline_engine::clock::SystemClock)).expect("an older history is migrated");
    assert_eq!(store.session(&aside).unwrap().occasion, Some(DecisionOccasion::AnotherAttemptChosen), "learnt from its events");
    assert_eq!(store.session(&refused).unwrap().occasion, None);
    assert_eq!(store.session(&legacy).unwrap().occasion, Some(DecisionOccasion::AnotherAttemptChosen), "set aside in an older build's words");
    assert_eq!(store.session(&put_away).unwrap().occasion, Some(DecisionOccasion::EveryAttemptRejected), "rejected with its group in an older build's words");
}

#[test]
fn delete_removes_everything_of_the_session() {
    let store = Store::open_in_memory().unwrap();
    let (keep, _) = store.create_session(&new_session("keep me")).unwrap();
    let (gone, _) = store.create_session(&new_session("delete me zebra")).unwrap();
    let m = MessageId::new();
    store
        .append_all(
            &gone,
            None,
            vec![assistant(&m), delta(&m, "zebra stripes"), EngineEvent::StepFinished { step: 1, stop_reason: None, usage: Default::default() }],
        )
        .unwrap();
    store.delete_session(&gone).unwrap();
    assert_eq!(store.session(&gone).unwrap_err().code(), ErrorCode::NotFound);
    assert!(store.events(&gone, 0).unwrap().is_empty(), "its events are gone");
    assert!(store.search("zebra", 10).unwrap().is_empty(), "its text is no longer searchable");
    assert_eq!(store.list_sessions(&ListQuery::default()).unwrap().len(), 1);
    assert!(store.session(&keep).is_ok(), "other sessions are untouched");
}

#[test]
fn the_batcher_emits_one_event_per_window_and_keeps_order_across_messages() {
    let mut b = DeltaBatcher::new(Duration::from_millis(33));
    let t0 = Instant::now();
    let (m1, m2) = (MessageId::new(), MessageId::new());
    assert!(b.push(&m1, false, "Hel", t0).is_none());
    assert!(b.push(&m1, false, "lo", t0 + Duration::from_millis(10)).is_none());
    assert!(!b.is_due(t0 + Duration::from_millis(32)));
    assert!(b.is_due(t0 + Duration::from_millis(33)), "a batch is due at most 33 ms after its first delta");
    assert_eq!(b.deadline(), Some(t0 + Duration::from_millis(33)));
    let flushed = b.push(&m1, true, "thinking", t0 + Duration::from_millis(20)).expect("switching to reasoning flushes the text first");
    assert_eq!(flushed, EngineEvent::TextDelta { message_id: m1.clone(), text: "Hello".into() });
    let flushed = b.push(&m2, false, "next", t0 + Duration::from_millis(21)).unwrap();
    assert_eq!(flushed, EngineEvent::ReasoningDelta { message_id: m1, text: "thinking".into() });
    assert_eq!(b.take(), Some(EngineEvent::TextDelta { message_id: m2, text: "next".into() }));
    assert_eq!(b.take(), None);
}

#[test]
fn events_serialise_with_the_spec_fields() {
    let env = Envelope {
        seq: 3,
        session_id: SessionId("ses_1".into()),
        run_id: Some(RunId("run_1".into())),
        at: "2026-11-21T10:00:00.000Z".into(),
        event: EngineEvent::Continuation {
            source: ContinuationSource::TodoGate,
            attempt: 2,
            max: 5,
            remaining: vec!["b".into()],
            text: "x".into(),
            answers_call: None,
            refused_claim: false,
        },
    };
    let v = serde_json::to_value(&env).unwrap();
    for field in ["seq", "session_id", "run_id", "at", "type", "source", "attempt", "max", "remaining", "text"] {
        assert!(v.get(field).is_some(), "every event carries `{field}`: {v}");
    }
    assert_eq!(v["type"], "continuation");
    assert_eq!(v["source"], "todo_gate");
    let back: Envelope = serde_json::from_value(v).unwrap();
    assert_eq!(back, env, "events read back exactly as written");
}

#[test]
fn migrations_run_once_and_a_newer_database_is_refused_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("history.db");
    drop(Store::open(&path, Arc::new(finishline_engine::clock::SystemClock)).unwrap());
    drop(Store::open(&path, Arc::new(finishline_engine::clock::SystemClock)).expect("reopening an up-to-date database is fine"));
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.pragma_update(None, "user_version", 999).unwrap();
    drop(conn);
    let err = Store::open(&path, Arc::new(finishline_engine::clock::SystemClock)).err().expect("a newer schema is refused");
    assert!(err.to_string().contains("newer Finishline"), "{err}");
}

#[test]
fn a_read_only_database_is_reported_not_crashed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("history.db");
    let store = Store::open(&path, Arc::new(finishline_engine::clock::SystemClock)).unwrap();
    let (sid, _) = store.create_session(&new_session("before read-only")).unwrap();
    drop(store);
    let ro = rusqlite::Connection::open_with_flags(&path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    drop(ro);
    // Opening the file read-only through the OS: make the folder and file unwritable.
    use std::os::unix::fs::PermissionsExt;
    if unsafe_is_root() {
        // Root ignores permissions; use SQLite's own read-only switch instead.
        let store = Store::open(&path, Arc::new(finishline_engine::clock::SystemClock)).unwrap();
        let c = rusqlite::Connection::open(&path).unwrap();
        c.execute_batch("PRAGMA query_only = 1").unwrap();
        let err = c.execute("UPDATE sessions SET title = 'x'", []).map_err(finishline_engine::Error::from).unwrap_err();
        assert_eq!(err.code(), ErrorCode::ReadOnly, "{err}");
        assert!(err.to_string().contains("read-only"), "the message names the problem: {err}");
        assert_eq!(store.session(&sid).unwrap().title, "before read-only", "nothing was lost");
    } else {
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();
        let err = Store::open(&path, Arc::new(finishline_engine::clock::SystemClock)).err().expect("a read-only file cannot be opened for writing");
        assert!(matches!(err.code(), ErrorCode::ReadOnly | ErrorCode::Storage), "{err}");
    }
}

fn unsafe_is_root() -> bool {
    std::fs::read_to_string("/proc/self/status").map(|s| s.lines().any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))).unwrap_or(false)
}

#[test]
fn a_running_or_waiting_session_cannot_be_deleted_until_it_is_cancelled() {
    let store = Store::open_in_memory().unwrap();
    let (sid, _) =
        store.create_session(&NewSession { task: "t".into(), workspace: "/tmp".into(), provider: "openai".into(), model: "m".into(), base_url: None }).unwrap();
    for status in [SessionStatus::Busy, SessionStatus::AwaitingApproval] {
        store.append(&sid, None, EngineEvent::StatusChanged { status, attempt: None, max_retries: None, next_retry_at: None, message: None }).unwrap();
        let err = store.delete_session(&sid).unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidInput, "{status:?}: deleting a live run would pull its history from under it: {err}");
    }
    store
        .append(
            &sid,
            None,
            EngineEvent::StatusChanged { status: SessionStatus::Cancelled, attempt: None, max_retries: None, next_retry_at: None, message: None },
        )
        .unwrap();
    store.delete_session(&sid).expect("a cancelled session can be deleted");
}

#[test]
fn a_history_and_settings_from_the_first_release_open_after_an_upgrade_with_nothing_lost() {
    // tests/fixtures/wave1-data: what commit 3ff3ee8's own binaries wrote (schema version 5).
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/wave1-data");
    let dir = tempfile::tempdir().unwrap();
    for f in ["history.db", "settings.json"] {
        std::fs::copy(fixture.join(f), dir.path().join(f)).unwrap();
    }
    let store =
        Store::open(&dir.path().join("history.db"), Arc::new(finishline_engine::clock::SystemClock)).expect("an older history is migrated, not refused");
    store.recover().unwrap();
    let listed = store.list_sessions(&ListQuery { limit: 50, ..Default::default() }).unwrap();
    assert_eq!(listed.len(), 1, "the first release's session is still listed after the upgrade");
    let s = &listed[0];
    assert_eq!(s.status, SessionStatus::Completed, "its status survives the migrations");
    assert_eq!(s.end_reason, Some(EndReason::VerifiedDone), "and so does why it ended");
    assert_eq!(store.search("fruits", 10).unwrap().len(), 1, "full-text search still finds it");
    let md = export::to_markdown(&store.timeline(&s.id).unwrap());
    assert!(md.contains("create notes.md listing three fruits"), "its transcript exports");
    // A new session goes into the same, migrated history.
    store.create_session(&new_session("after the upgrade")).unwrap();
    assert_eq!(store.list_sessions(&ListQuery { limit: 50, ..Default::default() }).unwrap().len(), 2);

    let raw: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.path().join("settings.json")).unwrap()).unwrap();
    let settings = finishline_engine::Settings::from_store_value(raw.get("settings").cloned()).expect("the first release's settings still read");
    assert_eq!(settings.provider.model, "fake-model", "the chosen model is kept");
    assert_eq!(settings.verify_commands.get("/tmp/wave1-ws").map(|v| v.len()), Some(1), "verify commands are kept");
}

fn plan_step(title: &str) -> finishline_engine::plan::PlanStep {
    finishline_engine::plan::PlanStep {
        title: title.into(),
        instructions: format!("{title}."),
        criteria: vec![format!("{title} is done")],
        depends_on: vec![],
        verify: vec![],
    }
}

#[test]
fn history_lists_a_plan_sessions_steps_done_and_in_the_plan_also_after_an_upgrade() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("history.db");
    let sid = {
        let store = Store::open(&path, Arc::new(finishline_engine::clock::SystemClock)).unwrap();
        let (plain, _) = store.create_session(&new_session("rename a file")).unwrap();
        let (sid, _) = store.create_session(&new_session("write a, b and c")).unwrap();
        store
            .append_all(
                &sid,
                None,
                vec![
                    EngineEvent::PlanCreated {
                        steps: vec![plan_step("Write a"), plan_step("Write b"), plan_step("Write c")],
                        mode: PlanMode::On,
                        awaiting_review: false,
                        budget_calls: None,
                    },
                    EngineEvent::PlanStepStarted { index: 0, number: 1, of: 3, title: "Write a".into() },
                    EngineEvent::PlanStepFinished {
                        index: 0,
                        end_reason: EndReason::VerifiedDone,
                        summary: "a is written".into(),
                        output_data: None,
                        decided_by: None,
                    },
                    // b is replaced by two steps: the plan now has four, one of them done.
                    EngineEvent::PlanRevised {
                        first: 1,
                        cause: "b needs data first".into(),
                        steps: vec![plan_step("Fetch the data"), plan_step("Write b"), plan_step("Write c")],
                        for_feedback: false,
                    },
                ],
            )
            .unwrap();
        let listed = store.list_sessions(&ListQuery { limit: 50, ..Default::default() }).unwrap();
        let plan = listed.iter().find(|s| s.id == sid).unwrap();
        assert_eq!((plan.plan_steps, plan.plan_done), (4, 1), "History shows the plan as it stands: replaced steps do not count");
        let other = listed.iter().find(|s| s.id == plain).unwrap();
        assert_eq!(other.plan_steps, 0, "a session without a plan shows none");
        sid
    };
    // The same history as a build before this column wrote it: the upgrade fills it in.
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "DROP INDEX sessions_by_group; ALTER TABLE sessions DROP COLUMN group_id; ALTER TABLE sessions DROP COLUMN attempt; ALTER TABLE sessions DROP COLUMN attempts;
         ALTER TABLE sessions DROP COLUMN attempt_label; ALTER TABLE sessions DROP COLUMN chosen;
         DROP INDEX sessions_by_workspace; ALTER TABLE sessions DROP COLUMN isolation; ALTER TABLE sessions DROP COLUMN work_dir; ALTER TABLE sessions DROP COLUMN branch;
         ALTER TABLE sessions DROP COLUMN plan_steps; ALTER TABLE sessions DROP COLUMN plan_done; ALTER TABLE sessions DROP COLUMN approvals;
         ALTER TABLE sessions DROP COLUMN audit_findings; ALTER TABLE runs DROP COLUMN occasion; DROP INDEX sessions_cancel_asked; ALTER TABLE sessions DROP COLUMN cancel_asked_of; ALTER TABLE sessions DROP COLUMN failure; PRAGMA user_version = 7;",
    )
    .unwrap();
    drop(conn);
    let store = Store::open(&path, Arc::new(finishline_engine::clock::SystemClock)).expect("an older history is migrated");
    let listed = store.list_sessions(&ListQuery { limit: 50, ..Default::default() }).unwrap();
    let plan = listed.iter().find(|s| s.id == sid).unwrap();
    assert_eq!((plan.plan_steps, plan.plan_done), (4, 1), "plans made before the upgrade show in History too");
}

#[tokio::test]
async fn the_history_watch_keeps_going_after_falling_behind_and_says_it_missed_some() {
    let store = Store::open_in_memory().unwrap();
    let mut watch = store.history_changes();
    let (a, _) = store.create_session(&new_session("task a")).unwrap();
    // More events than the live channel holds, unread: the watch falls behind.
    let m = MessageId::new();
    store.append_all(&a, None, (0..9000).map(|i| delta(&m, &i.to_string())).collect()).unwrap();
    assert_eq!(watch.next().await, Some(HistoryChange::Missed), "dropped events are reported, so the list reloads");
    store.append(&a, None, status(SessionStatus::Busy)).unwrap();
    assert_eq!(watch.next().await, Some(HistoryChange::Status { session: a.clone(), status: SessionStatus::Busy }), "and it still hears what comes after");
    let (b, _) = store.create_session(&new_session("task b")).unwrap();
    assert_eq!(watch.next().await, Some(HistoryChange::Created { session: b }), "text deltas are not history changes");
}

#[tokio::test]
async fn the_history_watch_reports_a_worktree_removed_after_its_decision() {
    // Worktrees go a while after the decision that ends them; the lists of worktrees on disk
    // hear of it without a status change.
    let store = Store::open_in_memory().unwrap();
    let (a, _) = store.create_session(&new_session("task a")).unwrap();
    let mut watch = store.history_changes();
    store
        .append(
            &a,
            None,
            EngineEvent::WorktreeRemoved { folder: "/data/worktrees/a".into(), why: finishline_engine::domain::WorktreeEnd::Rejected, branch_deleted: None },
        )
        .unwrap();
    assert_eq!(watch.next().await, Some(HistoryChange::WorktreeRemoved { session: a }));
}

/// Streams `answers` answers of 64 KB through the store, one batch of 4 KB a commit, the way a
/// run does: about 400 KB of log each (the batch and the pages its commit touches).
fn stream_answers(store: &Store, session: &SessionId, answers: usize) {
    let batch = "streamed answer text ".repeat(200);
    for _ in 0..answers {
        let m = MessageId::new();
        store.append(session, None, assistant(&m)).unwrap();
        for _ in 0..16 {
            store.append(session, None, delta(&m, &batch)).unwrap();
        }
    }
}

fn file_len(path: &std::path::Path) -> u64 {
    std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

#[test]
fn a_commit_of_streamed_text_never_checkpoints_the_log_and_the_store_moves_it_into_the_database_beside() {
    let clock: Arc<dyn finishline_engine::clock::Clock> = Arc::new(finishline_engine::clock::SystemClock);

    // No background checkpoint during the writes: whatever reaches the database file was moved
    // there by a commit, which would have synced the disk on the way from a chunk to the window.
    let dir = tempfile::tempdir().unwrap();
    let (db, wal) = (dir.path().join("history.db"), dir.path().join("history.db-wal"));
    let store = Store::open_checkpointing_every(&db, clock.clone(), Duration::from_secs(3600)).unwrap();
    let (s, _) = store.create_session(&new_session("stream a long answer")).unwrap();
    stream_answers(&store, &s, 40);
    assert!(file_len(&wal) > 8 << 20, "the log holds what was streamed ({} bytes)", file_len(&wal));
    assert!(file_len(&db) < 1 << 20, "no commit moved the log into the database ({} bytes in it)", file_len(&db));
    assert_eq!(store.events(&s, 0).unwrap().len(), 1 + 40 * 17, "every event is readable from the log meanwhile");

    // The store's own thread does it instead, while the session streams.
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("history.db");
    let store = Store::open_checkpointing_every(&db, clock, Duration::from_millis(50)).unwrap();
    let (s, _) = store.create_session(&new_session("stream a long answer")).unwrap();
    stream_answers(&store, &s, 40);
    let deadline = Instant::now() + Duration::from_secs(20);
    while file_len(&db) < 2 << 20 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(file_len(&db) >= 2 << 20, "the checkpoint thread moved the log into the database ({} bytes in it)", file_len(&db));
    let events = store.events(&s, 0).unwrap();
    assert_eq!(events.len(), 1 + 40 * 17, "every event is there");
    assert!(events.windows(2).all(|w| w[1].seq == w[0].seq + 1), "in order, without a gap");
}

#[test]
fn the_log_stays_bounded_when_the_checkpoint_thread_falls_behind() {
    let dir = tempfile::tempdir().unwrap();
    let (db, wal) = (dir.path().join("history.db"), dir.path().join("history.db-wal"));
    let store = Store::open_checkpointing_every(&db, Arc::new(finishline_engine::clock::SystemClock), Duration::from_secs(3600)).unwrap();
    let (s, _) = store.create_session(&new_session("stream many long answers")).unwrap();
    stream_answers(&store, &s, 150);
    assert!(file_len(&db) >= 2 << 20, "a commit checkpointed once the log reached the backstop ({} bytes in the database)", file_len(&db));
    assert!(file_len(&wal) < 48 << 20, "the log was reused from its start, not grown to the 60 MB written ({} bytes)", file_len(&wal));
    assert_eq!(store.events(&s, 0).unwrap().len(), 1 + 150 * 17, "nothing was lost");
}

/// The bytes of log one answer of `batches` streamed batches writes, with nothing checkpointed.
fn log_of_one_answer(batches: usize) -> u64 {
    let dir = tempfile::tempdir().unwrap();
    let (db, wal) = (dir.path().join("history.db"), dir.path().join("history.db-wal"));
    let store = Store::open_checkpointing_every(&db, Arc::new(finishline_engine::clock::SystemClock), Duration::from_secs(3600)).unwrap();
    let (s, _) = store.create_session(&new_session("stream one long answer")).unwrap();
    let before = file_len(&wal);
    let m = MessageId::new();
    store.append(&s, None, assistant(&m)).unwrap();
    let batch = "streamed answer text ".repeat(50);
    for _ in 0..batches {
        store.append(&s, None, delta(&m, &batch)).unwrap();
    }
    assert_eq!(store.message_text(&m).unwrap(), batch.repeat(batches), "the answer reads back whole, in order");
    file_len(&wal) - before
}

#[test]
fn a_streamed_answer_writes_log_in_proportion_to_its_length_not_its_square() {
    // Each batch used to rewrite the answer so far, so an answer twice as long wrote about four
    // times the log, and a long answer reached the backstop where a commit syncs the disk.
    let (short, long) = (log_of_one_answer(100), log_of_one_answer(200));
    assert!(long * 10 < short * 25, "twice the answer wrote {:.1}× the log ({short} then {long} bytes)", long as f64 / short as f64);
}

/// A review asked for a verified success, with what the audit found.
fn verified_review(review_id: RequestId, audit: Vec<finishline_engine::judge::audit::Finding>) -> EngineEvent {
    EngineEvent::ReviewRequested {
        review_id,
        claim: Claim::Success,
        verdict: Some(Verdict::Done),
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
        audit,
        auto_approve: None,
        criteria: vec![],
    }
}

/// A run of `sid` that asks for a review of a verified success: its run and review.
fn awaiting_review(store: &Store, sid: &SessionId) -> (RunId, RequestId) {
    let run = RunId::new();
    let review = RequestId::new();
    store
        .append_all(
            sid,
            Some(&run),
            vec![EngineEvent::RunStarted { trigger: RunTrigger::Task }, verified_review(review.clone(), vec![]), status(SessionStatus::AwaitingReview)],
        )
        .unwrap();
    (run, review)
}

/// One run of `sid` that asks for a review and gets `decision`, ending `then`.
fn reviewed_round(store: &Store, sid: &SessionId, decision: Decision, then: SessionStatus) {
    reviewed_round_as(store, sid, decision, then, None, None);
}

/// A round that reached a review the person decided, with the decision's words and occasion.
fn reviewed_round_as(store: &Store, sid: &SessionId, decision: Decision, then: SessionStatus, feedback: Option<&str>, occasion: Option<DecisionOccasion>) {
    let (run, review) = awaiting_review(store, sid);
    let feedback = feedback.map(String::from);
    store
        .resolve_request(
            &review,
            RequestKind::Review,
            SessionStatus::AwaitingReview,
            Some(&run),
            vec![EngineEvent::ReviewResolved { review_id: review.clone(), decision, by: DecidedBy::Person, feedback, reverted: false, occasion }, status(then)],
        )
        .unwrap();
}

#[test]
fn a_task_whose_follow_up_was_rejected_still_says_its_earlier_work_was_approved_also_after_an_upgrade() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("history.db");
    let (landed, plain) = {
        let store = Store::open(&path, Arc::new(finishline_engine::clock::SystemClock)).unwrap();
        let (landed, _) = store.create_session(&new_session("landed, then a follow-up rejected")).unwrap();
        reviewed_round(&store, &landed, Decision::Approve, SessionStatus::Completed);
        reviewed_round(&store, &landed, Decision::Reject, SessionStatus::Rejected);
        let (plain, _) = store.create_session(&new_session("rejected")).unwrap();
        reviewed_round(&store, &plain, Decision::Reject, SessionStatus::Rejected);
        let s = store.session(&landed).unwrap();
        assert_eq!((s.status, s.approvals), (SessionStatus::Rejected, 1), "rejected now, its first work approved");
        assert_eq!(store.session(&plain).unwrap().approvals, 0);
        (landed, plain)
    };
    // The same history as a build before the count wrote it: the upgrade counts what was approved.
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch("ALTER TABLE sessions DROP COLUMN approvals; ALTER TABLE sessions DROP COLUMN audit_findings; ALTER TABLE runs DROP COLUMN occasion; DROP INDEX sessions_cancel_asked; ALTER TABLE sessions DROP COLUMN cancel_asked_of; ALTER TABLE sessions DROP COLUMN failure; PRAGMA user_version = 10;").unwrap();
    drop(conn);
    let store = Store::open(&path, Arc::new(finishline_engine::clock::SystemClock)).expect("an older history is migrated");
    let listed = store.list_sessions(&ListQuery { limit: 50, ..Default::default() }).unwrap();
    assert_eq!(listed.iter().find(|s| s.id == landed).unwrap().approvals, 1);
    assert_eq!(listed.iter().find(|s| s.id == plain).unwrap().approvals, 0);
}

#[test]
fn a_session_a_newer_finishline_wrote_events_into_still_reads_with_those_events_standing_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("history.db");
    let store = Store::open(&db, Arc::new(finishline_engine::clock::SystemClock)).unwrap();
    let (sid, _) = store.create_session(&new_session("a task from a newer version")).unwrap();
    store.append(&sid, None, status(SessionStatus::Busy)).unwrap();
    drop(store);
    // What a newer version writes: a type this one does not know.
    let raw = rusqlite::Connection::open(&db).unwrap();
    let row = |seq: i64, ty: &str, body: serde_json::Value| {
        raw.execute(
            "INSERT INTO events (session_id, seq, run_id, type, at, body) VALUES (?1, ?2, NULL, ?3, '2026-11-29T05:00:00.000Z', ?4)",
            rusqlite::params![sid.0, seq, ty, body.to_string()],
        )
        .unwrap();
    };
    row(3, "branch_renamed", serde_json::json!({"seq": 3, "session_id": sid.0, "at": "2026-11-29T05:00:00.000Z", "type": "branch_renamed", "to": "x"}));
    raw.execute("UPDATE sessions SET last_seq = 3 WHERE id = ?1", [&sid.0]).unwrap();
    drop(raw);
    let store = Store::open(&db, Arc::new(finishline_engine::clock::SystemClock)).unwrap();
    store.append(&sid, None, status(SessionStatus::Idle)).unwrap();

    let events = store.events(&sid, 0).expect("the session still reads");
    assert_eq!(events.iter().map(|e| e.seq).collect::<Vec<_>>(), vec![1, 2, 3, 4], "in order, without a gap");
    assert_eq!(events[2].event, EngineEvent::Unreadable { was: "branch_renamed".into() });
    assert_eq!(events[3].event, status(SessionStatus::Idle), "and what came after is there");
    assert!(export::to_markdown(&store.timeline(&sid).unwrap()).contains("a task from a newer version"), "it exports");

    // A known type that does not read is not passed over: the engine decides by such records.
    let raw = rusqlite::Connection::open(&db).unwrap();
    raw.execute(
        "INSERT INTO events (session_id, seq, run_id, type, at, body) VALUES (?1, 5, NULL, 'task_workspace', '2026-11-29T05:00:00.000Z', ?2)",
        rusqlite::params![
            sid.0,
            serde_json::json!({"seq": 5, "session_id": sid.0, "at": "x", "type": "task_workspace", "isolation": "teleported"}).to_string()
        ],
    )
    .unwrap();
    let err = store.events(&sid, 0).unwrap_err();
    assert!(err.to_string().contains("could not be read"), "{err}");
}

/// A task working in its own worktree on `branch`, and the worktree's folder.
fn working_in_a_worktree(store: &Store, task: &str, branch: &str) -> (SessionId, String) {
    let (id, _) = store.create_session(&new_session(task)).unwrap();
    let folder = format!("/data/worktrees/{branch}");
    let worktree = finishline_engine::workspace::worktree::TaskWorktree {
        repo: "/tmp/ws".into(),
        folder: folder.clone(),
        subdir: String::new(),
        branch: branch.into(),
        base_branch: Some("main".into()),
        base_commit: "0".repeat(40),
    };
    store.append(&id, None, EngineEvent::TaskWorkspace { isolation: Isolation::Worktree, folder: folder.clone(), worktree: Some(worktree) }).unwrap();
    (id, folder)
}

/// A task that worked in its own worktree on `branch`, and the worktree removed with the branch
/// (`deleted`) or with the branch kept.
fn worked_in_a_worktree(store: &Store, task: &str, branch: &str, deleted: bool) -> SessionId {
    let (id, folder) = working_in_a_worktree(store, task, branch);
    assert_eq!(store.session(&id).unwrap().branch.as_deref(), Some(branch), "named while the task works on it");
    let why = if deleted { WorktreeEnd::Landed } else { WorktreeEnd::Rejected };
    store.append(&id, None, EngineEvent::WorktreeRemoved { folder, why, branch_deleted: deleted.then(|| branch.to_string()) }).unwrap();
    id
}

#[test]
fn a_tasks_branch_is_named_only_while_it_exists_also_after_an_upgrade() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("history.db");
    let (landed, kept) = {
        let store = Store::open(&path, Arc::new(finishline_engine::clock::SystemClock)).unwrap();
        let landed = worked_in_a_worktree(&store, "landed", "finishline/a-landed", true);
        let kept = worked_in_a_worktree(&store, "kept", "finishline/b-kept", false);
        assert_eq!(store.session(&landed).unwrap().branch, None, "its branch went with the worktree");
        assert_eq!(store.session(&kept).unwrap().branch.as_deref(), Some("finishline/b-kept"), "the kept branch is where its work waits");
        (landed, kept)
    };
    // The same history as a build before wrote it, naming the deleted branch too.
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute("UPDATE sessions SET branch = 'finishline/a-landed' WHERE id = ?1", [&landed.0]).unwrap();
    conn.execute_batch("ALTER TABLE sessions DROP COLUMN audit_findings; ALTER TABLE runs DROP COLUMN occasion; DROP INDEX sessions_cancel_asked; ALTER TABLE sessions DROP COLUMN cancel_asked_of; ALTER TABLE sessions DROP COLUMN failure; PRAGMA user_version = 11;").unwrap();
    drop(conn);
    let store = Store::open(&path, Arc::new(finishline_engine::clock::SystemClock)).expect("an older history is migrated");
    assert_eq!(store.session(&landed).unwrap().branch, None);
    assert_eq!(store.session(&kept).unwrap().branch.as_deref(), Some("finishline/b-kept"));
}

#[test]
fn what_the_evaluator_said_before_an_upgrade_is_searchable_after_it_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("history.db");
    let sid = {
        let store = Store::open(&path, Arc::new(finishline_engine::clock::SystemClock)).unwrap();
        let (sid, _) = store.create_session(&new_session("greet the user")).unwrap();
        store.append(&sid, None, not_done_yet("hello() returns an empty string")).unwrap();
        store.append(&sid, None, compared(&sid, &SessionId::from("ses_other"), &sid, "the first names the user; the second greets nobody")).unwrap();
        sid
    };
    // The same history as a build before wrote it: neither was indexed.
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "DELETE FROM search WHERE session_id IN (SELECT id FROM sessions) AND message_id IS NULL AND body NOT LIKE 'greet the user';
         ALTER TABLE sessions DROP COLUMN audit_findings; ALTER TABLE runs DROP COLUMN occasion; DROP INDEX sessions_cancel_asked; ALTER TABLE sessions DROP COLUMN cancel_asked_of; ALTER TABLE sessions DROP COLUMN failure; PRAGMA user_version = 12;",
    )
    .unwrap();
    assert!(
        conn.query_row("SELECT count(*) FROM search WHERE body LIKE '%empty string%' OR body LIKE '%greets nobody%'", [], |r| r.get::<_, i64>(0)).unwrap() == 0
    );
    drop(conn);
    for _ in 0..2 {
        let store = Store::open(&path, Arc::new(finishline_engine::clock::SystemClock)).expect("an older history is migrated");
        assert_eq!(store.search("empty string", 10).unwrap().iter().map(|h| h.session_id.clone()).collect::<Vec<_>>(), vec![sid.clone()]);
        assert_eq!(store.search("greets nobody", 10).unwrap().iter().map(|h| h.session_id.clone()).collect::<Vec<_>>(), vec![sid.clone()]);
    }
    let conn = rusqlite::Connection::open(&path).unwrap();
    let rows: i64 = conn.query_row("SELECT count(*) FROM search WHERE body LIKE '%empty string%' OR body LIKE '%greets nobody%'", [], |r| r.get(0)).unwrap();
    assert_eq!(rows, 2, "each indexed once, however often the history is opened");
}

#[test]
fn a_tasks_active_time_leaves_out_its_wait_in_the_queue_and_for_the_persons_answer() {
    let clock = Arc::new(finishline_engine::clock::ManualClock::new(1_700_000_000_000));
    let store = Store::open_in_memory_with(clock.clone()).unwrap();
    let (sid, _) = store.create_session(&new_session("waits, then works")).unwrap();
    let run = RunId::new();
    store.append(&sid, Some(&run), EngineEvent::RunStarted { trigger: RunTrigger::Task }).unwrap();
    store.append(&sid, Some(&run), status(SessionStatus::Queued)).unwrap();
    clock.advance(10 * 60_000);
    store.append(&sid, Some(&run), status(SessionStatus::Busy)).unwrap();
    clock.advance(2_000);
    store.append(&sid, Some(&run), status(SessionStatus::AwaitingApproval)).unwrap();
    clock.advance(5 * 60_000);
    // The person's answer sets the session busy again from outside the run (`Engine::deliver`).
    store.append(&sid, None, status(SessionStatus::Busy)).unwrap();
    clock.advance(1_000);
    store.append(&sid, Some(&run), status(SessionStatus::Retry)).unwrap();
    clock.advance(2_000);
    store
        .append(
            &sid,
            Some(&run),
            EngineEvent::RunFinished {
                status: SessionStatus::Completed,
                claim: Claim::Success,
                verdict: Some(Verdict::Done),
                end_reason: EndReason::VerifiedDone,
                stuck: None,
            },
        )
        .unwrap();
    store.append(&sid, Some(&run), status(SessionStatus::Completed)).unwrap();
    clock.advance(60_000);
    assert_eq!(store.session(&sid).unwrap().duration_ms, 5_000, "2 s and 3 s of work (a retry's wait is the run's own); not the 15 minutes it waited");
}

/// A run whose process died mid-way is counted until the last thing it recorded: History showed
/// 0 ms for a session that had streamed for seconds, since only a run's end added its time.
#[test]
fn a_run_interrupted_by_a_dead_process_counts_its_time_until_its_last_event() {
    let clock = Arc::new(finishline_engine::clock::ManualClock::new(1_700_000_000_000));
    let store = Store::open_in_memory_with(clock.clone()).unwrap();
    let (sid, _) = store.create_session(&new_session("read the file slowly")).unwrap();
    let run = RunId::new();
    store.append(&sid, Some(&run), EngineEvent::RunStarted { trigger: RunTrigger::Task }).unwrap();
    store.append(&sid, Some(&run), status(SessionStatus::Busy)).unwrap();
    clock.advance(4_000);
    store.append(&sid, Some(&run), EngineEvent::StepStarted { step: 2, cycle: None }).unwrap();
    // Found a minute after the process died.
    clock.advance(60_000);
    assert_eq!(store.recover().unwrap(), vec![sid.clone()]);
    let s = store.session(&sid).unwrap();
    assert_eq!(s.status, SessionStatus::Interrupted);
    assert_eq!(s.duration_ms, 4_000, "its 4 s of work, not the minute nobody ran it");
}

/// A plan killed in its second step listed the first step's `verified_done` beside
/// `interrupted`: the run that was cut short ended nothing, so no end reason is shown.
#[test]
fn a_session_found_interrupted_keeps_no_end_reason_of_an_earlier_run() {
    let store = Store::open_in_memory().unwrap();
    let (sid, _) = store.create_session(&new_session("write a.txt then b.txt")).unwrap();
    let (first, second) = (RunId::new(), RunId::new());
    store.append(&sid, Some(&first), EngineEvent::RunStarted { trigger: RunTrigger::Task }).unwrap();
    let ended = EngineEvent::RunFinished {
        status: SessionStatus::Busy,
        claim: Claim::Success,
        verdict: Some(Verdict::Done),
        end_reason: EndReason::VerifiedDone,
        stuck: None,
    };
    store.append(&sid, Some(&first), ended).unwrap();
    store.append(&sid, Some(&second), EngineEvent::RunStarted { trigger: RunTrigger::PlanStep }).unwrap();
    store.append(&sid, Some(&second), status(SessionStatus::Busy)).unwrap();
    assert_eq!(store.recover().unwrap(), vec![sid.clone()]);
    let s = store.session(&sid).unwrap();
    assert_eq!((s.status, s.end_reason, s.claim, s.verdict), (SessionStatus::Interrupted, None, None, None), "nor its claim and verdict");
}

#[test]
fn the_list_of_sessions_whose_worktree_is_still_there_leaves_out_those_removed_and_those_without() {
    let store = Store::open_in_memory().unwrap();
    let removed = worked_in_a_worktree(&store, "removed", "finishline/a-removed", true);
    let (in_place, _) = store.create_session(&new_session("in place")).unwrap();
    let (kept, _) = working_in_a_worktree(&store, "cancelled, its work kept", "finishline/kept");
    let listed: Vec<SessionId> = store.list_sessions(&ListQuery { kept_work: true, ..Default::default() }).unwrap().into_iter().map(|s| s.id).collect();
    assert_eq!(listed, vec![kept], "not {removed:?} nor {in_place:?}");
}

#[test]
fn the_export_tells_the_persons_comments_apart_from_finishline_sending_one_back() {
    let store = Store::open_in_memory().unwrap();
    let (sid, _) = store.create_session(&new_session("write notes.md")).unwrap();
    let comments = |attempt, max| EngineEvent::Continuation {
        source: ContinuationSource::ReviewComments,
        attempt,
        max,
        remaining: vec!["notes.md:1: say pear".into()],
        text: "notes.md:1: say pear".into(),
        answers_call: None,
        refused_claim: false,
    };
    store.append(&sid, None, comments(0, 0)).unwrap();
    store.append(&sid, None, comments(1, 5)).unwrap();
    let md = export::to_markdown(&store.timeline(&sid).unwrap());
    assert!(md.contains("- ↻ *Continuation* (the person's comments on the diff)"), "{md}");
    assert!(md.contains("- ↻ *Continuation 1/5* (the person's comments, not yet addressed)"), "Finishline's check, not the person writing again: {md}");
}

#[test]
fn a_history_file_that_is_no_database_is_kept_aside_whole_and_a_new_history_starts() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("history.db");
    let garbage = b"this is not a database, but it is the person's file all the same".repeat(100);
    std::fs::write(&path, &garbage).unwrap();
    std::fs::write(dir.path().join("history.db-wal"), b"a log that goes with it").unwrap();
    let (store, kept) = Store::open_setting_aside_unreadable(&path, Arc::new(finishline_engine::clock::SystemClock)).unwrap();
    let kept = kept.expect("it says where the old file is");
    assert!(kept.file_name().unwrap().to_string_lossy().starts_with("history.db.unreadable-"), "{kept:?}");
    assert_eq!(std::fs::read(&kept).unwrap(), garbage, "kept byte for byte");
    let log = kept.with_file_name(format!("{}-wal", kept.file_name().unwrap().to_string_lossy()));
    assert_eq!(std::fs::read(log).unwrap(), b"a log that goes with it", "with its log");
    store.create_session(&new_session("after")).unwrap();
    assert_eq!(store.list_sessions(&ListQuery { limit: 10, ..Default::default() }).unwrap().len(), 1, "a new history works");
    drop(store);
    let (_again, none) = Store::open_setting_aside_unreadable(&path, Arc::new(finishline_engine::clock::SystemClock)).unwrap();
    assert!(none.is_none(), "a history that reads is never set aside");
}

#[test]
fn a_history_that_cannot_be_opened_for_another_reason_is_left_where_it_is() {
    let dir = tempfile::tempdir().unwrap();
    // Its folder is a file: opening fails, and the file is nobody's database to move.
    let blocker = dir.path().join("data");
    std::fs::write(&blocker, b"a file where the folder should be").unwrap();
    let path = blocker.join("history.db");
    assert!(Store::open_setting_aside_unreadable(&path, Arc::new(finishline_engine::clock::SystemClock)).is_err());
    assert_eq!(std::fs::read(&blocker).unwrap(), b"a file where the folder should be");
}

#[test]
fn a_change_another_process_commits_is_noticed_and_this_processs_own_are_not() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("history.db");
    let app = Store::open_checkpointing_every(&path, Arc::new(finishline_engine::clock::SystemClock), Duration::from_millis(20)).unwrap();
    let cli = Store::open(&path, Arc::new(finishline_engine::clock::SystemClock)).unwrap();
    assert!(!app.changed_elsewhere(), "the first look only takes note");
    let (own, _) = app.create_session(&new_session("the window's own")).unwrap();
    app.append(&own, None, status(SessionStatus::Busy)).unwrap();
    app.heartbeat().unwrap();
    std::thread::sleep(Duration::from_millis(100)); // the log is moved into the database meanwhile
    assert!(!app.changed_elsewhere(), "its own changes reach the window as they happen");
    cli.heartbeat().unwrap();
    assert!(!app.changed_elsewhere(), "a heartbeat that changes nothing is nothing");
    let (theirs, _) = cli.create_session(&new_session("started in a terminal")).unwrap();
    assert!(app.changed_elsewhere(), "a session the CLI started is noticed");
    assert!(!app.changed_elsewhere(), "once");
    std::thread::sleep(Duration::from_millis(5));
    cli.append(&theirs, None, status(SessionStatus::AwaitingReview)).unwrap();
    assert!(app.changed_elsewhere(), "and so is its status moving on");
}

/// Once chosen, a group shows the standing it was chosen from: an attempt continued after the
/// choice (a follow-up of the one chosen, at work now) does not take every place away, as if
/// the group had not ended yet.
#[test]
fn a_decided_group_keeps_its_places_while_an_attempt_continued_after_the_choice_runs() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("history.db"), Arc::new(finishline_engine::clock::SystemClock)).unwrap();
    let group = GroupId::new();
    let mut ids = Vec::new();
    for n in 1..=2 {
        let (sid, _) = store.create_session(&new_session("the same task")).unwrap();
        store
            .append(
                &sid,
                None,
                EngineEvent::AttemptStarted { group: group.clone(), number: n, of: 2, label: format!("agent {n}"), evaluator: None, evaluator_provider: None },
            )
            .unwrap();
        let (_, _) = awaiting_review(&store, &sid);
        ids.push(sid);
    }
    let before = finishline_engine::agent::attempts::rank_group(&store, &group).unwrap();
    assert!(before.all_ended && before.places.iter().all(|p| p != "–"), "{:?}", before.places);
    let recorded = serde_json::to_value(&before.ranking).unwrap();
    store.append(&ids[0], None, EngineEvent::AttemptChosen { group: group.clone(), reason: None, ranking: Some(recorded) }).unwrap();
    store.append_all(&ids[0], Some(&RunId::new()), vec![EngineEvent::RunStarted { trigger: RunTrigger::Message }, status(SessionStatus::Busy)]).unwrap();
    let after = finishline_engine::agent::attempts::rank_group(&store, &group).unwrap();
    assert_eq!(after.chosen.as_ref(), Some(&ids[0]));
    assert_eq!(after.places, before.places, "the places it was chosen in");
    assert!(after.all_ended, "the standing shown is one in which every attempt had ended");
}

/// A cancel asked from another process (a terminal, while the window runs the task) reaches the
/// process whose lease holds the session, only while its run is at work, and once: the run's end
/// takes the ask with it, so a later run of the session is not stopped by it.
#[test]
fn a_cancel_asked_from_another_process_reaches_the_one_running_the_session_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("history.db");
    let app = Store::open(&path, Arc::new(finishline_engine::clock::SystemClock)).unwrap();
    let cli = Store::open(&path, Arc::new(finishline_engine::clock::SystemClock)).unwrap();
    let (sid, _) = app.create_session(&new_session("runs in the window")).unwrap();
    assert_eq!(cli.ask_to_cancel(&sid).unwrap(), None, "nothing is at work on it");
    let run = RunId::new();
    app.acquire_lease(&sid, &run).unwrap();
    app.append(&sid, Some(&run), status(SessionStatus::Busy)).unwrap();
    assert_eq!(app.ask_to_cancel(&sid).unwrap(), None, "a process stops its own runs itself: it asks nobody");
    let asked = cli.ask_to_cancel(&sid).unwrap().expect("the window is asked");
    assert_eq!(asked.pid, std::process::id());
    assert!(cli.cancels_asked().unwrap().is_empty(), "the asking process has nothing to stop");
    assert_eq!(app.cancels_asked().unwrap(), vec![sid.clone()]);
    app.cancel_heeded(&sid).unwrap();
    assert!(app.cancels_asked().unwrap().is_empty(), "heeded, it is not asked again");
    // Asked as the run ends on its own: the end takes the ask with it.
    assert!(cli.ask_to_cancel(&sid).unwrap().is_some());
    app.append(&sid, Some(&run), status(SessionStatus::AwaitingReview)).unwrap();
    assert!(app.cancels_asked().unwrap().is_empty(), "a later run of the session is not stopped by it");
    assert_eq!(cli.ask_to_cancel(&sid).unwrap(), None, "a review waiting has no run to stop");
    let missing = cli.ask_to_cancel(&SessionId("ses_nobody".into())).unwrap_err();
    assert_eq!(missing.code(), finishline_engine::ErrorCode::NotFound);
}

/// A session another process runs (a task started in a terminal, opened in the window) reaches
/// a subscriber here as it goes: its events are not broadcast in this process, so they are read
/// back from the history, in order and once each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_sees_what_another_process_appends_as_it_goes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("history.db");
    let app = Arc::new(Store::open(&path, Arc::new(finishline_engine::clock::SystemClock)).unwrap());
    let cli = Store::open(&path, Arc::new(finishline_engine::clock::SystemClock)).unwrap();
    let (sid, _) = cli.create_session(&new_session("runs in a terminal")).unwrap();
    cli.append(&sid, None, status(SessionStatus::Busy)).unwrap();
    let mut sub = Box::pin(app.subscribe(sid.clone(), 0));
    let mut seen = Vec::new();
    while let Some(e) = within_seconds(&mut sub).await {
        seen.push(e.seq);
        if matches!(e.event, EngineEvent::StatusChanged { status: SessionStatus::Busy, .. }) {
            break;
        }
    }
    let m = MessageId::new();
    for t in ["Thinking ", "it ", "over."] {
        cli.append(&sid, None, delta(&m, t)).unwrap();
    }
    cli.append(&sid, None, status(SessionStatus::Cancelled)).unwrap();
    let mut text = String::new();
    let mut ended = false;
    while let Some(e) = within_seconds(&mut sub).await {
        seen.push(e.seq);
        match e.event {
            EngineEvent::TextDelta { text: t, .. } => text.push_str(&t),
            EngineEvent::StatusChanged { status: SessionStatus::Cancelled, .. } => {
                ended = true;
                break;
            }
            _ => {}
        }
    }
    assert!(ended, "the terminal's run ending reaches this process: {seen:?}");
    assert_eq!(text, "Thinking it over.");
    assert!(seen.windows(2).all(|w| w[1] == w[0] + 1), "in order, once each: {seen:?}");
}

/// The stream's next event, if one comes within five seconds.
async fn within_seconds<S: futures_util::Stream<Item = finishline_engine::Result<Envelope>> + Unpin>(sub: &mut S) -> Option<Envelope> {
    tokio::time::timeout(Duration::from_secs(5), sub.next()).await.ok().flatten().map(|e| e.unwrap())
}

/// A session's Markdown is read by people (pasted into a pull request, sent to a colleague): it
/// says what happened in the window's words, not the engine's stored names.
#[test]
fn the_markdown_export_reads_in_the_windows_words_not_the_stored_names() {
    let store = Store::open_in_memory().unwrap();
    let (sid, _) = store.create_session(&new_session("write a.txt")).unwrap();
    let (run, review) = (RunId::new(), RequestId::new());
    let mut asked = verified_review(review.clone(), vec![]);
    if let EngineEvent::ReviewRequested { end_reason, claim, verdict, .. } = &mut asked {
        (*end_reason, *claim, *verdict) = (EndReason::CyclesExhausted, Claim::None, Some(Verdict::NotDone));
    }
    store
        .append_all(
            &sid,
            Some(&run),
            vec![
                EngineEvent::RunStarted { trigger: RunTrigger::Task },
                evaluation(Verdict::NotDone, "a.txt is missing", &["write a.txt"], true),
                asked,
                EngineEvent::RunFinished {
                    status: SessionStatus::AwaitingReview,
                    end_reason: EndReason::CyclesExhausted,
                    claim: Claim::None,
                    verdict: Some(Verdict::NotDone),
                    stuck: None,
                },
                status(SessionStatus::AwaitingReview),
            ],
        )
        .unwrap();
    store
        .resolve_request(
            &review,
            RequestKind::Review,
            SessionStatus::AwaitingReview,
            Some(&run),
            vec![
                EngineEvent::ReviewResolved {
                    review_id: review.clone(),
                    decision: Decision::RequestChanges,
                    by: DecidedBy::Person,
                    feedback: Some("name it b.txt".into()),
                    reverted: false,
                    occasion: None,
                },
                status(SessionStatus::Idle),
            ],
        )
        .unwrap();
    let md = export::to_markdown(&store.timeline(&sid).unwrap());
    for stored in ["cycles_exhausted", "not_done", "claim none", "request_changes", "awaiting_review", "(by person)"] {
        assert!(!md.contains(stored), "{stored:?} is the engine's name, not words: {md}");
    }
    assert!(md.contains("**Outcome:** Out of tries"), "{md}");
    assert!(md.contains("**⚖ Evaluator verdict (cycle 1): not done**"), "{md}");
    assert!(md.contains("**Review requested:** Out of tries; the agent made no explicit claim; the evaluator said not done"), "{md}");
    assert!(md.contains("*Run ended: Ready for review (Out of tries)*"), "{md}");
    assert!(md.contains("**Review decision:** changes requested (by you): name it b.txt"), "{md}");
    assert!(md.contains("### Run 1 (the task) ·"), "{md}");

    // A plan's step ending, an answer the evaluator could not give, an error: in words too.
    let (sid, _) = store.create_session(&new_session("plan it")).unwrap();
    store
        .append_all(
            &sid,
            Some(&RunId::new()),
            vec![
                EngineEvent::RunStarted { trigger: RunTrigger::PlanStep },
                evaluation(Verdict::Unavailable, "", &[], false),
                EngineEvent::RunFinished { status: SessionStatus::Busy, end_reason: EndReason::VerifiedDone, claim: Claim::None, verdict: None, stuck: None },
                EngineEvent::Error { code: ErrorCode::ProviderUnreachable, message: "connection refused".into() },
            ],
        )
        .unwrap();
    let md = export::to_markdown(&store.timeline(&sid).unwrap());
    for stored in ["plan_step", "provider_unreachable", "Working", "no usable answer** (no usable answer)"] {
        assert!(!md.contains(stored), "{stored:?}: {md}");
    }
    assert!(md.contains("### Run 1 (a plan step) ·"), "{md}");
    assert!(md.contains("*Plan step ended: Verified done*"), "a step's end, not the run's, as the window says: {md}");
    assert!(md.contains("**Error:** connection refused"), "{md}");

    // "Done!" said in the reply, with no claim made: said so, as the review in the window says.
    let (sid, _) = store.create_session(&new_session("say it")).unwrap();
    let mut asked = verified_review(RequestId::new(), vec![]);
    if let EngineEvent::ReviewRequested { claim, .. } = &mut asked {
        *claim = Claim::None;
    }
    let said = MessageId::new();
    store
        .append_all(
            &sid,
            Some(&RunId::new()),
            vec![
                EngineEvent::RunStarted { trigger: RunTrigger::Task },
                EngineEvent::MessageCreated { message_id: said.clone(), role: MessageRole::Assistant, source: None, text: None },
                delta(&said, "Done! notes.md lists three fruits."),
                asked,
            ],
        )
        .unwrap();
    let md = export::to_markdown(&store.timeline(&sid).unwrap());
    assert!(md.contains("**Review requested:** Verified done; the agent said it was done in its reply; the evaluator said done"), "{md}");
}

/// History said only "Failed" of a failed session: why it failed is its summary's (until the
/// next run starts), and searching the error's words finds it.
#[test]
fn a_failed_sessions_reason_is_in_its_summary_and_found_by_search() {
    let store = Store::open_in_memory().unwrap();
    let (sid, _) = store.create_session(&new_session("summarise the README")).unwrap();
    let run = RunId::new();
    store.append(&sid, Some(&run), EngineEvent::RunStarted { trigger: RunTrigger::Task }).unwrap();
    let why = "The provider is overloaded (503): try again later";
    store.append(&sid, Some(&run), EngineEvent::Error { code: finishline_engine::error::ErrorCode::Provider, message: why.into() }).unwrap();
    let ended = EngineEvent::RunFinished { status: SessionStatus::Failed, claim: Claim::None, verdict: None, end_reason: EndReason::Failed, stuck: None };
    store.append(&sid, Some(&run), ended).unwrap();
    store
        .append(
            &sid,
            Some(&run),
            EngineEvent::StatusChanged { status: SessionStatus::Failed, attempt: None, max_retries: None, next_retry_at: None, message: Some(why.into()) },
        )
        .unwrap();
    assert_eq!(store.session(&sid).unwrap().failure.as_deref(), Some(why));
    let md = export::to_markdown(&store.timeline(&sid).unwrap());
    assert_eq!(md.matches(why).count(), 1, "the export says why once:\n{md}");
    assert!(md.contains("*Run ended: Failed*\n"), "not 'Failed (Failed)':\n{md}");
    let hits = store.search("overloaded", 10).unwrap();
    assert_eq!(hits.iter().filter(|h| h.session_id == sid).count(), 1, "found once, though the error is said twice: {hits:?}");
    // Retried: no longer why it stands.
    store.append(&sid, Some(&RunId::new()), EngineEvent::RunStarted { trigger: RunTrigger::Message }).unwrap();
    assert_eq!(store.session(&sid).unwrap().failure, None);
}

/// A data folder that cannot be made is named, with what to do: "Not a directory" (or
/// "Permission denied") alone left the person to guess which folder.
#[test]
fn a_data_folder_that_cannot_be_made_is_named() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("taken"), "a file where the folder would go").unwrap();
    let folder = dir.path().join("taken").join("data");
    let why = Store::open(&folder.join("history.db"), Arc::new(finishline_engine::clock::SystemClock)).err().expect("refused").to_string();
    assert!(why.contains(&folder.display().to_string()) && why.contains("check its owner and permissions"), "{why}");
}
