//! The fault matrix of external agents, with a scripted ACP agent (tests/agents/scripted-acp.mjs)
//! that can exit mid-turn, write broken JSON-RPC, never end a turn or ask to log in: each ends in
//! a clear status with what happened before it kept. The real OpenCode is in acp_opencode.rs.

mod support {
    pub mod harness;
    pub mod scripted;
}

use std::time::Duration;

use finishline_engine::domain::*;
use finishline_engine::event::EngineEvent;
use finishline_engine::external::ExternalAgent;
use serde_json::{json, Value};
use support::harness::*;
use support::scripted::Scripted;

fn text(t: &str) -> Value {
    json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": t}})
}

async fn harness(s: &Scripted, evaluator_rules: Value, step_limit: Duration) -> Harness {
    Harness::new(rules(evaluator_rules), Setup { external: Some(s.agent.clone()), step_limit, permissions: Default::default(), ..Setup::default() }).await
}

fn error_of(o: &Outcome) -> Option<(String, String)> {
    o.events.iter().rev().find_map(|e| match &e.event {
        EngineEvent::Error { code, message } => Some((code.as_str().to_string(), message.clone())),
        _ => None,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_that_exits_mid_turn_fails_the_session_with_why_and_keeps_what_it_said() {
    let s = Scripted::new(json!({"turns": [{"updates": [text("Starting on it")], "end": "exit"}]}));
    let h = harness(&s, json!([evaluator(done_verdict())]), Duration::from_secs(60)).await;
    let o = h.run("Do the thing").await;
    assert_eq!(o.status, SessionStatus::Failed);
    let (code, message) = error_of(&o).expect("the failure is explained");
    assert_eq!(code, "external_agent");
    assert!(
        message.contains("Scripted agent stopped in the middle of its turn") && message.contains("giving up in the middle of the turn"),
        "the message says what happened and shows the agent's last words on stderr: {message}"
    );
    assert!(o.has(|e| matches!(e, EngineEvent::TextDelta { text, .. } if text.contains("Starting on it"))), "what the agent said before it died is kept");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_that_never_ends_is_stopped_after_the_step_limit_with_a_clear_error() {
    let s = Scripted::new(json!({"turns": [{"updates": [text("Working")], "end": "hang"}]}));
    let h = harness(&s, json!([evaluator(done_verdict())]), Duration::from_secs(2)).await;
    let o = h.run("Do the thing").await;
    assert_eq!(o.status, SessionStatus::Failed);
    let (code, message) = error_of(&o).unwrap();
    assert_eq!(code, "step_timeout");
    assert!(message.contains("reported nothing for 2 s"), "{message}");
    assert!(!message.contains("no ACP message"), "an agent that wrote nothing wrong is not said to have: {message}");
    assert_eq!(s.log("cancel.log").lines().count(), 1, "the agent is asked to stop its turn");
}

/// An agent that goes quiet (Claude Code retried a refused key for three minutes without a word)
/// is said to have gone quiet, long before the step limit, and the words go once it speaks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_that_goes_quiet_is_said_to_and_the_words_go_once_it_speaks() {
    let s = Scripted::new(json!({"turns": [{"updates": [{"pause_ms": 3000}, text("Wrote it, all done and checked.")]}]}));
    let h = harness(&s, json!([evaluator(done_verdict())]), Duration::from_secs(8)).await;
    let o = h.run("Do the thing").await;
    assert_ne!(o.status, SessionStatus::Failed, "a quiet spell within the step limit is no failure");
    let quiet = o
        .events
        .iter()
        .position(|e| matches!(&e.event, EngineEvent::Activity { detail, .. } if detail.contains("has said nothing for 2 s")))
        .expect("said quiet");
    let spoke = o.events.iter().position(|e| matches!(e.event, EngineEvent::TextDelta { .. })).unwrap();
    assert!(quiet < spoke, "said while it was quiet");
    let EngineEvent::Activity { detail, .. } = &o.events[quiet].event else { unreachable!() };
    assert!(detail.contains("model server") && detail.contains("Stop"), "what it may be doing, and the way out: {detail}");
    assert!(
        o.events[quiet..].iter().any(|e| matches!(&e.event, EngineEvent::Activity { detail, .. } if detail.ends_with("is working"))),
        "once it speaks, the quiet words go"
    );
}

/// A quiet spell while one of its tools runs (a test suite) is the tool's, whose card says it is
/// running: not said to be the agent's wait on its model server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quiet_spell_while_the_agents_tool_runs_is_not_said_to_be_a_wait_on_its_model() {
    let s = Scripted::new(json!({"turns": [{"updates": [
        {"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "cargo test", "status": "in_progress"},
        {"pause_ms": 3000},
        {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed"},
        text("Ran the tests, all done and checked.")
    ]}]}));
    let h = harness(&s, json!([evaluator(done_verdict())]), Duration::from_secs(8)).await;
    let o = h.run("Run the tests").await;
    assert!(!o.has(|e| matches!(e, EngineEvent::Activity { detail, .. } if detail.contains("has said nothing"))), "the tool's time is not the agent's silence");
}

/// An answer the agent wrote broken is skipped by the protocol's reader, so the turn looks
/// silent until the step limit: the message then quotes the line, so the person learns the agent
/// is at fault, not a slow model.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_whose_answer_came_garbled_quotes_it_when_the_step_limit_stops_the_turn() {
    let s = Scripted::new(json!({"turns": [{"updates": [text("Working")], "end": "garbled_answer"}]}));
    let h = harness(&s, json!([evaluator(done_verdict())]), Duration::from_secs(2)).await;
    let o = h.run("Do the thing").await;
    assert_eq!(o.status, SessionStatus::Failed);
    let (code, message) = error_of(&o).unwrap();
    assert_eq!(code, "step_timeout");
    assert!(message.contains("no ACP message") && message.contains(r#""stopReason":"end_turn""#), "{message}");
    assert!(o.has(|e| matches!(e, EngineEvent::TextDelta { text, .. } if text.contains("Working"))), "what it said before is kept");
}

/// So is an answer the agent wrote whole but never ended with its line break: the reader waits
/// for the end that does not come.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_whose_answer_was_left_without_its_line_end_quotes_it_when_the_step_limit_stops_the_turn() {
    let s = Scripted::new(json!({"turns": [{"updates": [text("Working")], "end": "unfinished_answer"}]}));
    let h = harness(&s, json!([evaluator(done_verdict())]), Duration::from_secs(2)).await;
    let o = h.run("Do the thing").await;
    assert_eq!(o.status, SessionStatus::Failed);
    let (code, message) = error_of(&o).unwrap();
    assert_eq!(code, "step_timeout");
    assert!(message.contains("a line it never ended") && message.contains(r#""stopReason":"end_turn"}}"#), "{message}");
}

/// An answer still being written when the limit strikes is no fault of the agent's: the message
/// says it was still coming, and how much had come, instead of quoting it as left unfinished.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_stopped_while_its_answer_is_still_coming_says_so_without_blaming_the_agent() {
    let s = Scripted::new(json!({"turns": [{"updates": [text("Working")], "end": "trickled_answer"}]}));
    let h = harness(&s, json!([evaluator(done_verdict())]), Duration::from_secs(2)).await;
    let o = h.run("Do the thing").await;
    assert_eq!(o.status, SessionStatus::Failed);
    let (code, message) = error_of(&o).unwrap();
    assert_eq!(code, "step_timeout");
    assert!(message.contains("was still writing a line") && message.contains("still coming"), "{message}");
    assert!(!message.contains("at fault"), "a line still coming is not the agent's fault: {message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broken_json_rpc_from_the_agent_does_not_lose_the_turn() {
    let s = Scripted::new(
        json!({"turns": [{"updates": [text("All of it is done and checked.")], "write": {"path": "out.txt", "content": "x"}, "end": "garbage"}]}),
    );
    let h = harness(&s, json!([evaluator(done_verdict()), {"when": {}, "reply": no_announcement()}]), Duration::from_secs(60)).await;
    let o = h.run("Write out.txt").await;
    // The SDK drops a line that is not JSON-RPC and reads on: the turn's answer after it counts.
    assert_eq!(o.status, SessionStatus::AwaitingReview, "a bad line between good ones loses nothing: {:?}", error_of(&o));
    assert_eq!(h.read("out.txt").as_deref(), Some("x"));
    assert!(o.has(|e| matches!(e, EngineEvent::TextDelta { text, .. } if text.contains("All of it is done"))), "the agent's text before the bad line is kept");
}

/// Log lines and blank lines an agent prints on stdout are no ACP message: they are set aside
/// (the last one kept to quote), never answered with a parse error that hands the agent its own
/// line back, and the turn around them counts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agents_log_lines_on_stdout_are_set_aside_not_answered() {
    let noise = json!(["Starting language server on :4096", "", "   ", "[info] model warmed up", "\u{1b}[32mready\u{1b}[0m"]);
    let s =
        Scripted::new(json!({"turns": [{"noise": noise, "updates": [text("All of it is done and checked.")], "write": {"path": "out.txt", "content": "x"}}]}));
    let h = harness(&s, json!([evaluator(done_verdict()), {"when": {}, "reply": no_announcement()}]), Duration::from_secs(60)).await;
    let o = h.run("Write out.txt").await;
    assert_eq!(o.status, SessionStatus::AwaitingReview, "{:?}", error_of(&o));
    assert!(o.has(|e| matches!(e, EngineEvent::TextDelta { text, .. } if text.contains("All of it is done"))), "the turn's words count");
    assert_eq!(s.log("client-errors.log"), "", "no line of the agent's was sent back to it as an error");
}

/// A message without end (a runaway dump on stdout, a binary by mistake) would be held whole in
/// memory until the app or the CLI was killed: past 64 MB the agent is given up on, and says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_that_sends_a_line_without_end_fails_the_session_with_why() {
    let s = Scripted::new(json!({"turns": [{"updates": [text("Dumping it all")], "end": "endless_line"}]}));
    let h = harness(&s, json!([evaluator(done_verdict())]), Duration::from_secs(30)).await;
    let o = h.run("Do the thing").await;
    assert_eq!(o.status, SessionStatus::Failed);
    let (code, message) = error_of(&o).expect("the failure is explained");
    assert_eq!(code, "external_agent", "{message}");
    assert!(message.contains("more than 64 MB"), "{message}");
    assert!(o.has(|e| matches!(e, EngineEvent::TextDelta { text, .. } if text.contains("Dumping it all"))), "what it said before is kept");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_that_needs_a_login_says_how_to_log_in() {
    let s = Scripted::new(json!({"auth": true, "turns": [{}]}));
    let h = harness(&s, json!([evaluator(done_verdict())]), Duration::from_secs(60)).await;
    let o = h.run("Do the thing").await;
    assert_eq!(o.status, SessionStatus::Failed);
    let (code, message) = error_of(&o).unwrap();
    assert_eq!(code, "external_agent_auth");
    assert!(message.contains("log in") && message.contains("Run `scripted login` in a terminal"), "the person learns how to log in: {message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_the_agent_changes_as_it_starts_is_recorded_before_and_reject_puts_it_back() {
    let s = Scripted::new(
        json!({"startup_write": {"path": "zz/agent.json", "content": "{\"rewritten\": true}"}, "turns": [{"updates": [text("Nothing else to do.")], "end": "end_turn"}]}),
    );
    let h = harness(&s, json!([evaluator(done_verdict())]), Duration::from_secs(30)).await;
    h.write("zz/agent.json", "{\"model\": \"mine\"}");
    // Enough files that recording the workspace takes longer than the agent's start.
    for i in 0..20000 {
        h.write(&format!("src/f{i}.txt"), "x");
    }
    let o = h.run("Look around").await;
    assert_eq!(
        o.status,
        SessionStatus::AwaitingReview,
        "the agent changed a file, so the task goes to review with it; had the workspace been recorded after the change, the change would be invisible ({:?})",
        error_of(&o)
    );
    h.engine.submit_review(&o.review_id(), Decision::Reject, None, true, false, DecidedBy::Person).unwrap();
    assert_eq!(
        h.read("zz/agent.json").as_deref(),
        Some("{\"model\": \"mine\"}"),
        "the workspace is recorded before the agent's process starts: whatever it writes as it starts is its change, and Reject restores the person's file"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_preset_that_is_not_installed_says_how_to_install_it_before_anything_is_made() {
    let mut agent = ExternalAgent::preset("gemini").unwrap();
    agent.command = "gemini-not-installed-here".into();
    let h = Harness::new(rules(json!([evaluator(done_verdict())])), Setup { external: Some(agent), ..Setup::default() }).await;
    let refused = h.engine.start_session("Do the thing", &h.ws()).expect_err("a task whose agent is not installed does not start");
    assert_eq!(refused.code(), finishline_engine::ErrorCode::InvalidInput);
    let message = refused.to_string();
    assert!(message.contains("Gemini CLI is not installed here") && message.contains("npm i -g @google/gemini-cli"), "{message}");
    assert!(h.store.list_sessions(&Default::default()).unwrap().is_empty(), "no session (and so no worktree) is left behind");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agents_own_turn_limit_goes_to_review_as_the_agents_not_finishlines() {
    let s = Scripted::new(
        json!({"turns": [{"updates": [text("I ran out of requests.")], "write": {"path": "half.txt", "content": "x"}, "end": "max_turn_requests"}]}),
    );
    let h = harness(&s, json!([evaluator(done_verdict())]), Duration::from_secs(60)).await;
    let o = h.run("Do a long thing").await;
    assert_eq!(
        (o.status, o.end_reason),
        (SessionStatus::AwaitingReview, Some(EndReason::AgentTurnLimit)),
        "the work so far goes to the person, marked as cut short by the agent's own limit (Gemini CLI's loop detection ends a turn so too), \
         not Finishline's step limit, which raising would not change"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_fails_the_session_as_a_content_stop() {
    let s = Scripted::new(json!({"turns": [{"updates": [text("I can't help with that.")], "end": "refusal"}]}));
    let h = harness(&s, json!([evaluator(done_verdict())]), Duration::from_secs(60)).await;
    let o = h.run("Do the thing").await;
    assert_eq!(o.status, SessionStatus::Failed);
    assert!(error_of(&o).unwrap().1.contains("content policy"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agents_acp_plan_is_the_todo_list_and_an_open_item_sends_it_back() {
    let plan = |second: &str| {
        json!({"sessionUpdate": "plan", "entries": [
        {"content": "Write one.txt", "priority": "high", "status": "completed"},
        {"content": "Write two.txt", "priority": "high", "status": second}]})
    };
    let s = Scripted::new(json!({"turns": [
        {"updates": [plan("pending"), text("Done with everything!")], "write": {"path": "one.txt", "content": "1"}},
        {"updates": [plan("completed"), text("Now both files are written and checked.")], "write": {"path": "two.txt", "content": "2"}}
    ]}));
    let h = harness(&s, json!([evaluator(done_verdict())]), Duration::from_secs(60)).await;
    let o = h.run("Write one.txt and two.txt").await;
    assert_eq!(o.continuations(), vec![ContinuationSource::TodoGate], "the agent's own plan holds it to its word");
    assert_eq!(o.status, SessionStatus::AwaitingReview);
    let prompts = s.log("prompts.log");
    assert_eq!(prompts.lines().count(), 2, "one turn for the task, one for the continuation: {prompts}");
    assert!(prompts.lines().nth(1).unwrap().contains("Write two.txt"), "the second turn names the open item: {prompts}");
    assert!(o.has(|e| matches!(e, EngineEvent::TodosUpdated { todos } if todos.len() == 2)), "the checklist shows the agent's plan");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allow_for_the_session_answers_the_agents_next_request_without_asking_again() {
    let ask = |id: &str| json!({"toolCallId": id, "title": "bash", "rawInput": {"command": "echo hi"}});
    let s = Scripted::new(json!({"turns": [
        {"updates": [{"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "bash", "status": "pending"}], "permission": ask("c1"), "after": [{"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "completed", "content": [{"type": "content", "content": {"type": "text", "text": "hi"}}]}, text("Ran it.")]},
        {"updates": [{"sessionUpdate": "tool_call", "toolCallId": "c2", "title": "bash", "status": "pending"}], "permission": ask("c2"), "after": [{"sessionUpdate": "tool_call_update", "toolCallId": "c2", "status": "completed"}, text("All done and checked now.")]}
    ]}));
    let h = harness(
        &s,
        json!([{"when": {"kind": "evaluator"}, "reply": not_done_verdict(&["run it again"], "Run it once more."), "times": 1}, evaluator(done_verdict())]),
        Duration::from_secs(60),
    )
    .await;
    let (sid, handle) = h.engine.start_session("Run echo twice", &h.ws()).unwrap();
    let EngineEvent::PermissionRequested { request_id: request, tool, input, .. } = first_request(&h, &sid).await else { unreachable!() };
    assert_eq!((tool.as_str(), input["command"].as_str()), ("bash", Some("echo hi")), "the prompt shows the agent's tool and exactly what it will run");
    h.engine.respond_permission(&request, PermissionDecision::AllowSession).unwrap();
    tokio::time::timeout(Duration::from_secs(60), handle).await.unwrap().unwrap();
    let o = h.outcome(&sid);
    assert_eq!(o.status, SessionStatus::AwaitingReview);
    assert_eq!(
        s.log("permissions.log").lines().collect::<Vec<_>>(),
        vec!["yes", "yes"],
        "allowed once by the person, then by the session's grant; the agent is never granted more than once at a time"
    );
    let asked = o.events.iter().filter(|e| matches!(e.event, EngineEvent::PermissionRequested { .. })).count();
    assert_eq!(asked, 1, "the person was asked once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_using_the_clients_file_system_stays_inside_the_workspace() {
    let s = Scripted::new(json!({"turns": [{"updates": [text("Wrote the notes through the client, and checked them.")], "fs": [
        {"path": "notes/today.txt", "content": "written through Finishline\n"},
        {"path": "notes/today.txt"},
        {"path": "../outside.txt", "content": "escaped"},
        {"path": "notes/not-yet.txt"}
    ]}]}));
    let h = harness(&s, json!([evaluator(done_verdict())]), Duration::from_secs(60)).await;
    let o = h.run("Write notes/today.txt").await;
    assert_eq!(o.status, SessionStatus::AwaitingReview);
    assert_eq!(h.read("notes/today.txt").as_deref(), Some("written through Finishline\n"), "a write through the client lands in the workspace");
    let log: Vec<Value> = s.log("fs.log").lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(log[1]["answer"]["content"], "written through Finishline\n", "a read through the client returns the file's text");
    assert!(log[2]["answer"]["error"].is_object(), "a write outside the workspace is refused: {:?}", log[2]);
    assert!(!h.ws().join("../outside.txt").exists(), "nothing was written outside the workspace");
    assert_eq!(
        log[3]["answer"]["error"]["code"], -32002,
        "a file that is not there is ACP's resource-not-found, so a write tool that reads first creates it: {:?}",
        log[3]
    );
    assert!(log[3]["answer"]["error"]["message"].as_str().unwrap().contains("Resource not found"), "{:?}", log[3]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_in_the_clients_terminal_asks_like_run_command_and_runs_in_the_workspace_without_secrets() {
    std::env::set_var("FINISHLINE_ACP_TEST_TOKEN", "tok-secret");
    let s = Scripted::new(json!({"turns": [{"updates": [text("Ran the check, and it passed.")],
        "terminal": {"command": "sh", "args": ["-c", "echo in $(pwd); echo token=${FINISHLINE_ACP_TEST_TOKEN:-none}; echo $GREETING; touch ran.txt"],
            "env": [{"name": "GREETING", "value": "hi there"}, {"name": "FINISHLINE_ACP_TEST_TOKEN", "value": "tok-sent-by-agent"}]}}]}));
    let h = harness(&s, json!([evaluator(done_verdict())]), Duration::from_secs(60)).await;
    let (sid, handle) = h.engine.start_session("Run the check", &h.ws()).unwrap();
    let EngineEvent::PermissionRequested { request_id: request, tool, input, .. } = first_request(&h, &sid).await else { unreachable!() };
    assert_eq!(tool, "run_command", "a terminal command is gated like the built-in shell tool");
    let shown = input["command"].as_str().unwrap();
    assert!(shown.starts_with("GREETING='hi there' sh -c 'echo in"), "the prompt shows the command line with what it sets: {input}");
    assert!(!shown.contains("tok-sent-by-agent"), "a secret the agent sent is never passed, so neither shown nor kept: {input}");
    assert!(h.read("ran.txt").is_none(), "nothing runs before the person answers");
    h.engine.respond_permission(&request, PermissionDecision::AllowOnce).unwrap();
    tokio::time::timeout(Duration::from_secs(60), handle).await.unwrap().unwrap();
    assert_eq!(h.outcome(&sid).status, SessionStatus::AwaitingReview);
    let log: Value = serde_json::from_str(s.log("terminal.log").lines().next().expect("the agent got its terminal")).unwrap();
    assert_eq!(log["exit"]["exitCode"], 0, "the agent learns how its command ended: {log}");
    let out = log["output"]["output"].as_str().unwrap();
    assert!(out.contains(&format!("in {}", h.ws().canonicalize().unwrap().display())), "it ran in the workspace: {out}");
    assert!(out.contains("token=none"), "a secret-looking variable never reaches the agent's command: {out}");
    assert!(out.contains("hi there"), "what the prompt showed it set, it got: {out}");
    assert!(h.read("ran.txt").is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_terminal_command_nobody_can_approve_is_refused_and_never_runs() {
    let s = Scripted::new(json!({"turns": [{"updates": [text("Tried to run it.")], "terminal": {"command": "touch", "args": ["never.txt"]}}]}));
    let h = Harness::new(rules(json!([evaluator(done_verdict())])), Setup { external: Some(s.agent.clone()), ..Setup::default() }).await;
    let o = h.run("Run it").await;
    assert_eq!((o.status, o.end_reason), (SessionStatus::Idle, Some(EndReason::PermissionDenied)), "with nobody to ask, a command that would ask is denied");
    assert!(s.log("terminal.log").contains("denied"), "the agent is told: {}", s.log("terminal.log"));
    assert!(h.read("never.txt").is_none());
}

/// The agent's and its child's pids, as the scripted agent logged them at start.
fn pids(s: &Scripted) -> (u32, u32) {
    let line: Value = serde_json::from_str(s.log("pids.log").lines().next().expect("the agent logged its pids")).unwrap();
    (line["agent"].as_u64().unwrap() as u32, line["child"].as_u64().unwrap() as u32)
}

/// Waits up to `within` for the agent's whole process group to be gone.
/// Whether the group is gone within `within`, looked at once at least (however little is left).
async fn group_gone(pgid: u32, within: Duration) -> bool {
    let until = std::time::Instant::now() + within;
    loop {
        if !finishline_engine::process_groups::group_alive(pgid) {
            return true;
        }
        if std::time::Instant::now() >= until {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The first question the session puts to the person (a `PermissionRequested`), once asked.
async fn first_request(h: &Harness, sid: &SessionId) -> EngineEvent {
    let mut sub = Box::pin(h.store.subscribe(sid.clone(), 0));
    let wait = async {
        loop {
            let e = futures_util::StreamExt::next(&mut sub).await.unwrap().unwrap().event;
            if matches!(e, EngineEvent::PermissionRequested { .. }) {
                return e;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(60), wait).await.expect("the agent asks the person")
}

async fn first_text(h: &Harness, sid: &SessionId) {
    let mut sub = Box::pin(h.store.subscribe(sid.clone(), 0));
    let wait = async {
        loop {
            if let EngineEvent::TextDelta { .. } = futures_util::StreamExt::next(&mut sub).await.unwrap().unwrap().event {
                return;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(30), wait).await.expect("the agent starts its turn");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_that_ignores_cancel_is_ended_with_its_whole_process_group() {
    let s = Scripted::new(json!({"children": true, "turns": [{"updates": [text("Editing, and I will not stop")], "end": "deaf"}]}));
    let h = harness(&s, json!([evaluator(done_verdict())]), Duration::from_secs(60)).await;
    let (sid, handle) = h.engine.start_session("Edit forever", &h.ws()).unwrap();
    first_text(&h, &sid).await;
    let (agent, child) = pids(&s);
    let asked = std::time::Instant::now();
    assert_eq!(h.engine.cancel(&sid), finishline_engine::agent::Stop::Stopped);
    tokio::time::timeout(Duration::from_secs(30), handle).await.expect("cancel ends the run").unwrap();
    assert_eq!(h.outcome(&sid).status, SessionStatus::Cancelled);
    assert!(h.store.session(&sid).unwrap().tokens.agent > 0, "History counts what the cancelled turn wrote, as an estimate, not 0");
    assert!(
        group_gone(agent, Duration::from_secs(15).saturating_sub(asked.elapsed())).await,
        "the agent and the child it started are gone within 15 s of the cancel (3 s of them its grace), though the agent ignored session/cancel"
    );
    assert!(finishline_engine::process_groups::proc_stat(child).is_none(), "its child went with it");
    let edits = s.log("edits.log").lines().count();
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(s.log("edits.log").lines().count(), edits, "nothing goes on editing once the session shows it cancelled");
}

/// `make` run by the agent, its output streamed in `lines` updates, each with all of it so far.
fn streamed_make(lines: usize) -> Vec<Value> {
    let mut updates = vec![
        json!({"sessionUpdate": "tool_call", "toolCallId": "b1", "title": "bash", "kind": "execute", "status": "pending", "rawInput": {"command": "make"}}),
    ];
    let mut out = String::new();
    for i in 0..lines {
        out.push_str(&format!("compiling unit {i}\n"));
        updates.push(json!({"sessionUpdate": "tool_call_update", "toolCallId": "b1", "status": "in_progress", "content": [{"type": "content", "content": {"type": "text", "text": out}}]}));
    }
    updates
}

/// An agent that streams a command's output as it comes, an update every few milliseconds,
/// each carrying all of it so far: the window sees it grow, a few times a second, and the
/// session keeps a handful of them, not each (they would fill the database), ending with all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commands_streamed_output_is_stored_a_few_times_a_second_and_whole_at_its_end() {
    let mut updates = streamed_make(200);
    updates.push(json!({"sessionUpdate": "tool_call_update", "toolCallId": "b1", "status": "completed"}));
    updates.push(text("Built it."));
    let s = Scripted::new(json!({"turns": [{"updates": updates, "delay_ms": 5}]}));
    let h = harness(&s, json!([evaluator(done_verdict()), {"when": {}, "reply": no_announcement()}]), Duration::from_secs(60)).await;
    let o = h.run("Build it").await;
    let stored: Vec<(ToolState, Option<String>)> = o
        .events
        .iter()
        .filter_map(|e| match &e.event {
            EngineEvent::ToolCall { tool, state, output, .. } if tool == "bash" => Some((*state, output.clone())),
            _ => None,
        })
        .collect();
    let running = stored.iter().filter(|(s, _)| *s == ToolState::Running).count();
    assert!((2..=20).contains(&running), "it was seen growing, a few times a second, not stored 200 times: {running} of {}", stored.len());
    let (state, last) = stored.last().unwrap();
    assert_eq!(*state, ToolState::Done);
    assert!(last.as_deref().is_some_and(|o| o.contains("compiling unit 0") && o.contains("compiling unit 199")), "its end carries all of it: {last:?}");
}

/// A command that streams output, then goes quiet for a while before it ends: the window sees
/// its newest output during the quiet, not only at its end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commands_output_held_back_is_shown_when_it_goes_quiet() {
    let mut updates = streamed_make(20);
    updates.push(json!({"pause_ms": 1000}));
    updates.push(json!({"sessionUpdate": "tool_call_update", "toolCallId": "b1", "status": "completed"}));
    updates.push(text("Built it."));
    let s = Scripted::new(json!({"turns": [{"updates": updates, "delay_ms": 5}]}));
    let h = harness(&s, json!([evaluator(done_verdict()), {"when": {}, "reply": no_announcement()}]), Duration::from_secs(60)).await;
    let o = h.run("Build it").await;
    let running: Vec<&str> = o
        .events
        .iter()
        .filter_map(|e| match &e.event {
            EngineEvent::ToolCall { state: ToolState::Running, output, .. } => output.as_deref(),
            _ => None,
        })
        .collect();
    assert!(running.last().is_some_and(|o| o.contains("compiling unit 19")), "its newest output was shown while it ran: {:?}", running.last());
}

/// An agent that dies while the person is being asked about its command: the question is
/// withdrawn (nobody is left to answer it), and the session says the agent stopped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_for_an_agent_that_died_is_withdrawn_and_the_session_says_why() {
    let ask = json!({"toolCallId": "c1", "title": "bash", "rawInput": {"command": "echo hi"}});
    let s = Scripted::new(json!({"turns": [{"updates": [text("Running echo")], "permission": ask, "die_after_asking": true}]}));
    let h = harness(&s, json!([evaluator(done_verdict())]), Duration::from_secs(60)).await;
    let (sid, handle) = h.engine.start_session("Run echo", &h.ws()).unwrap();
    tokio::time::timeout(Duration::from_secs(20), handle).await.expect("the run ends without anyone answering").unwrap();
    let o = h.outcome(&sid);
    let request = o.events.iter().find_map(|e| match &e.event {
        EngineEvent::PermissionRequested { request_id, .. } => Some(request_id.clone()),
        _ => None,
    });
    let request = request.expect("the person was asked");
    assert!(o.has(|e| matches!(e, EngineEvent::RequestCancelled { request_id } if *request_id == request)), "the question is withdrawn");
    assert_eq!(o.status, SessionStatus::Failed);
    let (code, message) = error_of(&o).expect("the failure is explained");
    assert_eq!(code, "external_agent");
    assert!(message.contains("crashed while waiting for permission"), "{message}");
}

/// An agent that ends its own turn as "cancelled" when nobody here cancelled it: the session does
/// not say the person cancelled it. It failed, with why, and a way on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_that_cancels_its_own_turn_is_not_reported_as_the_persons_cancel() {
    let s = Scripted::new(json!({"turns": [{"updates": [text("Half way through")], "end": "cancelled"}]}));
    let h = harness(&s, json!([evaluator(done_verdict())]), Duration::from_secs(60)).await;
    let o = h.run("Do the thing").await;
    assert_eq!(o.status, SessionStatus::Failed, "nobody cancelled it");
    let (code, message) = error_of(&o).expect("the failure is explained");
    assert_eq!(code, "external_agent");
    assert!(message.contains("Scripted agent ended its turn as cancelled") && message.contains("Resume"), "{message}");
    assert!(o.has(|e| matches!(e, EngineEvent::TextDelta { text, .. } if text.contains("Half way through"))), "what it said is kept");
}

/// Resume after a cancel (the window's Resume, `sessions resume ID` with no words) and Retry after
/// a failure send the agent on with the task. With nothing new to say, an ACP agent was sent an
/// empty prompt (the built-in agent's model a conversation ending in its own words): it
/// answered "Done." and the session ended as a conversation, the task never taken up again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_after_a_cancel_tells_the_agent_to_go_on_with_the_task() {
    let s = Scripted::new(json!({"load_session": true, "turns": [{"updates": [text("Working on it")], "end": "hang"}, {"updates": [text("Going on.")]}]}));
    let h = harness(&s, json!([evaluator(done_verdict())]), Duration::from_secs(60)).await;
    let (sid, handle) = h.engine.start_session("Write the report", &h.ws()).unwrap();
    first_text(&h, &sid).await;
    assert_eq!(h.engine.cancel(&sid), finishline_engine::agent::Stop::Stopped);
    tokio::time::timeout(Duration::from_secs(30), handle).await.expect("cancel ends the run").unwrap();
    assert_eq!(h.outcome(&sid).status, SessionStatus::Cancelled);
    let resumed = h.engine.send_message(&sid, "").unwrap();
    let waited = tokio::time::timeout(Duration::from_secs(20), resumed).await;
    let o = h.outcome(&sid);
    assert!(
        waited.is_ok(),
        "the resumed run ends: {:?}",
        o.events.iter().map(|e| format!("{:?}", e.event).chars().take(200).collect::<String>()).collect::<Vec<_>>()
    );
    let prompts: Vec<String> = s.log("prompts.log").lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(prompts.len(), 2, "{prompts:?}");
    let resumed = &prompts[1];
    assert!(
        resumed.contains("stopped") && resumed.contains("go on") && resumed.contains("source=\"resume\""),
        "the agent is told, as Finishline's words, to go on: {resumed:?}"
    );
    assert!(
        o.has(|e| matches!(e, EngineEvent::Continuation { source: ContinuationSource::Resume, .. })),
        "the window shows what Finishline told the agent, never as the person's words"
    );
}

/// An agent deaf to the cancel that keeps asking to run commands: none of them is allowed once
/// the person cancelled (not even with every tool allowed), nobody is asked about them, and its
/// asking does not keep the stopped turn alive.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_that_keeps_asking_after_the_cancel_is_refused_and_stopped() {
    let s = Scripted::new(json!({"children": true, "turns": [{"updates": [text("Running commands, and I will not stop")], "end": "pester"}]}));
    let permissions = finishline_engine::agent::PermissionPolicy { allow_all: true, ..Default::default() };
    let h = Harness::new(
        rules(json!([evaluator(done_verdict())])),
        Setup { external: Some(s.agent.clone()), permissions, step_limit: Duration::from_secs(60), ..Setup::default() },
    )
    .await;
    let (sid, handle) = h.engine.start_session("Run echo until told to stop", &h.ws()).unwrap();
    first_text(&h, &sid).await;
    let until = std::time::Instant::now() + Duration::from_secs(30);
    while !s.log("permissions.log").contains("yes") && std::time::Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (agent, _) = pids(&s);
    assert_eq!(h.engine.cancel(&sid), finishline_engine::agent::Stop::Stopped);
    let allowed_before = s.log("permissions.log").lines().filter(|l| *l == "yes").count();
    assert!(allowed_before > 0, "with every tool allowed, its commands ran before the cancel");
    tokio::time::timeout(Duration::from_secs(15), handle).await.expect("the cancel ends the run however the agent goes on asking").unwrap();
    assert_eq!(h.outcome(&sid).status, SessionStatus::Cancelled);
    assert!(group_gone(agent, Duration::from_secs(10)).await, "the agent is ended");
    let answers = s.log("permissions.log");
    // One ask may have been answered in the instant between the check and the cancel.
    assert!(answers.lines().filter(|l| *l == "yes").count() <= allowed_before + 1, "nothing it asked after the cancel was allowed: {answers}");
    assert!(answers.lines().count() > allowed_before + 1, "it did ask after the cancel, and was refused: {answers}");
    let o = h.outcome(&sid);
    let asked = o.events.iter().filter(|e| matches!(e.event, EngineEvent::PermissionRequested { .. })).count();
    assert_eq!(asked, 0, "with every tool allowed nobody was asked, before or after");
    let cards: std::collections::BTreeSet<String> = o
        .events
        .iter()
        .filter_map(|e| match &e.event {
            EngineEvent::ToolCall { call_id, .. } => Some(call_id.clone()),
            _ => None,
        })
        .collect();
    assert!(cards.len() <= allowed_before + 2, "what it started asking after the cancel adds no card ({} cards, {allowed_before} allowed before)", cards.len());
}

/// The same agent after the person denied its command: the denial stops its turn, and the person
/// is not asked again about what it goes on asking.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_that_keeps_asking_after_a_denial_does_not_ask_the_person_again() {
    let s = Scripted::new(json!({"turns": [{"updates": [text("Running commands")], "end": "pester"}]}));
    let h = harness(&s, json!([evaluator(done_verdict())]), Duration::from_secs(60)).await;
    let (sid, handle) = h.engine.start_session("Run echo", &h.ws()).unwrap();
    let EngineEvent::PermissionRequested { request_id: request, .. } = first_request(&h, &sid).await else { unreachable!() };
    h.engine.respond_permission(&request, PermissionDecision::Deny).unwrap();
    tokio::time::timeout(Duration::from_secs(15), handle).await.expect("the denial ends the turn however the agent goes on asking").unwrap();
    let o = h.outcome(&sid);
    let asked = o.events.iter().filter(|e| matches!(e.event, EngineEvent::PermissionRequested { .. })).count();
    assert_eq!(asked, 1, "the person was asked once, about the command they denied");
    let answers = s.log("permissions.log");
    assert!(answers.lines().count() > 1 && !answers.contains("yes"), "what it asked after the denial was refused: {answers}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_timeout_of_an_agent_that_ignores_cancel_is_reported_as_a_step_timeout_and_ends_its_group() {
    let s = Scripted::new(json!({"children": true, "turns": [{"updates": [text("Working")], "end": "deaf"}]}));
    let h = harness(&s, json!([evaluator(done_verdict())]), Duration::from_secs(2)).await;
    let o = h.run("Do the thing").await;
    let (agent, _) = pids(&s);
    assert_eq!(o.status, SessionStatus::Failed);
    assert_eq!(error_of(&o).map(|e| e.0).as_deref(), Some("step_timeout"), "the run stopped because the step took too long, not because someone cancelled it");
    assert!(group_gone(agent, Duration::from_secs(15)).await, "the agent's group is ended");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answering_a_permission_after_the_step_limit_does_not_stop_the_turn() {
    let ask = json!({"toolCallId": "c1", "title": "bash", "rawInput": {"command": "echo hi"}});
    let s = Scripted::new(
        json!({"turns": [{"updates": [{"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "bash", "status": "pending"}], "permission": ask,
        "after": [{"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "completed"}, text("Ran it, and it printed hi as asked.")]}]}),
    );
    let h = harness(&s, json!([evaluator(done_verdict())]), Duration::from_secs(1)).await;
    let (sid, handle) = h.engine.start_session("Run echo", &h.ws()).unwrap();
    let EngineEvent::PermissionRequested { request_id: request, .. } = first_request(&h, &sid).await else { unreachable!() };
    tokio::time::sleep(Duration::from_millis(2500)).await;
    h.engine.respond_permission(&request, PermissionDecision::AllowOnce).unwrap();
    tokio::time::timeout(Duration::from_secs(30), handle).await.unwrap().unwrap();
    let o = h.outcome(&sid);
    assert_eq!(o.status, SessionStatus::AwaitingReview, "the person's thinking time is not the agent's idle time: {:?}", error_of(&o));
    assert_eq!(s.log("permissions.log").trim(), "yes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_offering_only_always_is_asked_in_those_words_and_once_is_never_turned_into_always_unasked() {
    let ask = |id: &str| {
        json!({"toolCallId": id, "title": "bash", "rawInput": {"command": "echo hi"}, "options": [
        {"optionId": "always", "name": "Always allow", "kind": "allow_always"}, {"optionId": "no", "name": "Reject", "kind": "reject_once"}]})
    };
    let s = Scripted::new(
        json!({"turns": [{"updates": [{"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "bash", "status": "pending"}], "permission": ask("c1"),
        "after": [{"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "completed"}, text("Ran it, and it printed hi as asked.")]}]}),
    );
    let h = harness(&s, json!([evaluator(done_verdict())]), Duration::from_secs(60)).await;
    let (sid, handle) = h.engine.start_session("Run echo", &h.ws()).unwrap();
    let EngineEvent::PermissionRequested { request_id: request, reason, .. } = first_request(&h, &sid).await else { unreachable!() };
    assert!(reason.contains("only \"Always allow\"") && reason.contains("without asking again"), "the person learns that allowing is for good: {reason}");
    h.engine.respond_permission(&request, PermissionDecision::AllowOnce).unwrap();
    tokio::time::timeout(Duration::from_secs(30), handle).await.unwrap().unwrap();
    assert_eq!(s.log("permissions.log").trim(), "always", "asked in those words, the person's allow is the agent's only allow");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gemini_cli_too_old_for_acp_is_started_again_with_experimental_acp() {
    let s = Scripted::new(json!({"turns": [{"updates": [text("Nothing to change; all checked.")]}]}));
    let bin = s.logs.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let gemini = bin.join("gemini");
    let js = &s.agent.args[0];
    let script = &s.agent.args[1];
    std::fs::write(&gemini, format!("#!/bin/sh\nfor a in \"$@\"; do [ \"$a\" = \"--acp\" ] && {{ echo 'Unknown argument: acp' >&2; exit 1; }}; done\necho \"$@\" >> \"$SCRIPTED_ACP_LOGS/args.log\"\nexec node {js} {script}\n")).unwrap();
    std::os::unix::fs::PermissionsExt::set_mode(&mut std::fs::metadata(&gemini).unwrap().permissions(), 0o755);
    std::fs::set_permissions(&gemini, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let agent = ExternalAgent { command: gemini.to_string_lossy().into_owned(), ..ExternalAgent::preset("gemini").unwrap() };
    let agent = ExternalAgent { env: s.agent.env.clone(), ..agent };
    assert_eq!(agent.args, vec!["--acp"]);
    let h = Harness::new(rules(json!([evaluator(done_verdict())])), Setup { external: Some(agent), ..Setup::default() }).await;
    let o = h.run("Look around").await;
    assert!(matches!(o.status, SessionStatus::AwaitingReview | SessionStatus::Idle), "{:?}", error_of(&o));
    assert_eq!(s.log("args.log").trim(), "--experimental-acp", "refused `--acp`, it was started the way older versions take");
}

/// The retry the older way is for a Gemini CLI that exits at once: one that stays silent until
/// the start's time runs out is not started again to be waited for as long once more.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gemini_cli_that_never_answers_is_not_waited_for_twice() {
    let logs = tempfile::tempdir().unwrap();
    let gemini = logs.path().join("gemini");
    std::fs::write(&gemini, format!("#!/bin/sh\necho \"$@\" >> {}/args.log\nexec sleep 60\n", logs.path().display())).unwrap();
    std::fs::set_permissions(&gemini, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let agent = ExternalAgent { command: gemini.to_string_lossy().into_owned(), ..ExternalAgent::preset("gemini").unwrap() };
    let asked = std::time::Instant::now();
    let s = finishline_engine::external::agent_status::status(&agent, logs.path(), Duration::from_secs(3), &Default::default()).await;
    assert!(s.problem.as_deref().is_some_and(|p| p.contains("within 3 s")), "{:?}", s.problem);
    assert!(asked.elapsed() < Duration::from_secs(5), "one wait, not two: {:?}", asked.elapsed());
    assert_eq!(std::fs::read_to_string(logs.path().join("args.log")).unwrap().trim(), "--acp", "started once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_first_titled_as_being_prepared_is_named_by_its_real_title() {
    let s = Scripted::new(json!({"turns": [{"updates": [
        {"sessionUpdate": "tool_call", "toolCallId": "w1", "title": "Preparing file…", "status": "pending"},
        {"sessionUpdate": "tool_call_update", "toolCallId": "w1", "title": "Write notes.txt", "rawInput": {"file_path": "notes.txt"}},
        {"sessionUpdate": "tool_call_update", "toolCallId": "w1", "status": "completed"},
        text("Wrote notes.txt and checked it.")
    ], "write": {"path": "notes.txt", "content": "n"}}]}));
    let h = harness(&s, json!([evaluator(done_verdict())]), Duration::from_secs(60)).await;
    let o = h.run("Write notes.txt").await;
    let names: Vec<String> =
        o.events.iter().filter_map(|e| if let EngineEvent::ToolCall { tool, .. } = &e.event { Some(tool.clone()) } else { None }).collect();
    assert_eq!(
        names.last().map(String::as_str),
        Some("Write notes.txt"),
        "the card reads as what the call did (Claude Code titles every call \"Preparing file…\" first): {names:?}"
    );
}

/// With nobody to ask (the CLI without a terminal), a tool the agent asks about is refused
/// unasked: the history says so, as for the built-in agent's tools, and never that the person
/// denied a call they were not shown.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agents_tool_refused_with_nobody_to_ask_is_not_recorded_as_the_persons_denial() {
    let ask = json!({"toolCallId": "c1", "title": "bash", "rawInput": {"command": "echo hi"}});
    let s = Scripted::new(
        json!({"turns": [{"updates": [{"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "bash", "status": "pending"}], "permission": ask,
        "after": [text("It was not allowed.")]}]}),
    );
    let permissions = finishline_engine::agent::PermissionPolicy { nobody_to_ask: true, ..Default::default() };
    let h = Harness::new(rules(json!([evaluator(done_verdict())])), Setup { external: Some(s.agent.clone()), permissions, ..Setup::default() }).await;
    let o = h.run("Run echo").await;
    assert_eq!(s.log("permissions.log").trim(), "no", "refused");
    assert!(!o.has(|e| matches!(e, EngineEvent::PermissionRequested { .. })), "nobody was asked");
    let said: Vec<String> = o
        .events
        .iter()
        .filter_map(|e| match &e.event {
            EngineEvent::ToolCall { state: ToolState::Denied, output: Some(out), .. } => Some(out.clone()),
            _ => None,
        })
        .collect();
    assert!(!said.is_empty() && said.iter().all(|s| s.contains("there was nobody to ask") && !s.contains("The person denied")), "{said:?}");
}

/// Gemini CLI titles each call by its file ("Writing to a.txt") and sends no input: the person
/// who allows one write for the session is not asked again for the next file (the agent's kind
/// for the tool, `edit`, is allowed with it), and the question shows the file, not `{}`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allowing_one_of_an_agents_writes_for_the_session_covers_its_next_file() {
    let ask = |id: &str, file: &str| json!({"toolCallId": id, "title": format!("Writing to {file}"), "kind": "edit", "locations": [{"path": file}]});
    let turn = |id: &str, file: &str| {
        json!({"updates": [{"sessionUpdate": "tool_call", "toolCallId": id, "title": format!("Writing to {file}"), "kind": "edit", "status": "pending", "locations": [{"path": file}]}],
        "permission": ask(id, file), "after": [{"sessionUpdate": "tool_call_update", "toolCallId": id, "status": "completed"}, text(&format!("Wrote {file}."))]})
    };
    let s = Scripted::new(json!({"turns": [turn("c1", "a.txt"), turn("c2", "b.txt")]}));
    let mut not_yet = evaluator(not_done_verdict(&["write b.txt"], "Write b.txt too."));
    not_yet["times"] = json!(1);
    let h = harness(&s, json!([not_yet, evaluator(done_verdict())]), Duration::from_secs(60)).await;
    let (sid, handle) = h.engine.start_session("Write a.txt and b.txt", &h.ws()).unwrap();
    let EngineEvent::PermissionRequested { request_id: request, input, .. } = first_request(&h, &sid).await else { unreachable!() };
    assert_eq!(input, json!({"path": "a.txt"}), "the question shows the file");
    h.engine.respond_permission(&request, PermissionDecision::AllowSession).unwrap();
    tokio::time::timeout(Duration::from_secs(30), handle).await.unwrap().unwrap();
    let o = h.outcome(&sid);
    assert_eq!(o.events.iter().filter(|e| matches!(e.event, EngineEvent::PermissionRequested { .. })).count(), 1, "asked once: {:?}", error_of(&o));
    assert_eq!(s.log("permissions.log").lines().collect::<Vec<_>>(), vec!["yes", "yes"], "both writes allowed");
}
