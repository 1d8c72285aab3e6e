//! The audit of the diff through the CLI: an agent that "fixes" a failing test by deleting its
//! assertion passes verification and the evaluator, and `--review approve` still leaves it to
//! the person, naming the file and line.

mod support {
    pub mod cli;
}

use fake_llm::{FakeServer, Protocol};
use serde_json::json;
use support::cli::*;

/// The fake provider, answering by `rules`.
async fn fake(rules: serde_json::Value) -> FakeServer {
    FakeServer::start(serde_json::from_value(json!({ "rules": rules })).unwrap()).await.unwrap()
}

const VERDICT_DONE: &str =
    "{\"done\": true, \"summary\": \"the test passes now\", \"remaining\": [], \"continuation_prompt\": \"\", \"is_stuck\": false, \"stuck_reason\": \"\"}";

/// `evaluator` rules, then an agent that writes notes.md with apple and banana and, asked in a
/// comment to say pear instead, changes it.
fn with_pear_agent(evaluator: Vec<serde_json::Value>) -> serde_json::Value {
    let agent = json!([
        {"when": {"kind": "agent", "last_message_contains": "Wrote notes.md"}, "reply": {"text": "Done! notes.md now says pear."}},
        {"when": {"kind": "agent", "last_message_contains": "say pear instead"}, "reply": {"text": "Changing it.", "tool_calls": [{"name": "write_file", "arguments": {"path": "notes.md", "content": "- pear\n- banana\n"}}]}},
        {"when": {"kind": "agent", "last_message_contains": "Created notes.md"}, "reply": {"text": "Done! notes.md lists the fruits."}},
        {"when": {"kind": "agent"}, "reply": {"text": "Writing.", "tool_calls": [{"name": "write_file", "arguments": {"path": "notes.md", "content": "- apple\n- banana\n"}}]}}
    ]);
    serde_json::Value::Array(evaluator.into_iter().chain(agent.as_array().unwrap().iter().cloned()).collect())
}

/// What the agent was sent last in its first request that carries `words`.
fn sent_to_agent(server: &FakeServer, words: &str) -> String {
    let sent = server.requests().into_iter().filter(|r| r.kind == fake_llm::RequestKind::Agent).find(|r| r.last_message.contains(words));
    sent.unwrap_or_else(|| panic!("the agent was sent {words}")).last_message
}

/// `task` run in `e`'s folder on the fake server at `url` (with `extra` flags) until it waits for
/// review: the session's id.
fn waiting_for_review(e: &Env, url: &str, task: &str, extra: &[&str]) -> String {
    let ws = e.ws.to_string_lossy().to_string();
    let mut args = vec!["run", task, "--workspace", &ws, "--base-url", url, "--model", "m", "--json"];
    args.extend(extra);
    let first = tokio::task::block_in_place(|| finishline(&args, &e.data));
    assert_eq!(first.status.code(), Some(6), "waits for review: {}", String::from_utf8_lossy(&first.stderr));
    lines(&first).last().unwrap()["session_id"].as_str().unwrap().to_string()
}

/// A first run that ends waiting for review, then Request changes on it with `comments`
/// (`path:line=text`): what that second command printed and how it ended.
async fn run_then_comment(e: &Env, url: &str, task: &str, comments: &[&str]) -> std::process::Output {
    let id = waiting_for_review(e, url, task, &[]);
    let mut review: Vec<String> = ["sessions", "review", &id, "--request-changes"].map(String::from).to_vec();
    for c in comments {
        review.extend(["--comment".to_string(), c.to_string()]);
    }
    review.extend(["--base-url", url, "--model", "m"].map(String::from));
    let data = e.data.clone();
    tokio::task::spawn_blocking(move || finishline(&review.iter().map(String::as_str).collect::<Vec<_>>(), &data)).await.unwrap()
}

/// An agent that "fixes" the failing test in the folder `Env` makes by deleting its assertion.
async fn assertion_deleter() -> (FakeServer, Env) {
    let server = fake(json!([
        {"when": {"kind": "evaluator"}, "reply": {"text": VERDICT_DONE}},
        {"when": {"kind": "agent", "last_message_contains": "Wrote test_calc.py"}, "reply": {"text": "Done! The test passes now."}},
        {"when": {"kind": "agent"}, "reply": {"text": "Making the test pass.", "tool_calls": [{"name": "write_file", "arguments": {"path": "test_calc.py", "content": "from calc import add\n\ndef test_add():\n    result = add(2, 2)\n\ntest_add()\n"}}]}}
    ]))
    .await;
    let e = env();
    std::fs::write(e.ws.join("calc.py"), "def add(a, b):\n    return a - b\n").unwrap();
    std::fs::write(e.ws.join("test_calc.py"), "from calc import add\n\ndef test_add():\n    result = add(2, 2)\n    assert result == 4\n\ntest_add()\n")
        .unwrap();
    (server, e)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_assertion_is_flagged_and_never_approved_automatically() {
    let (server, e) = assertion_deleter().await;
    let url = server.base_url(Protocol::Openai);
    let (ws, data) = (e.ws.to_string_lossy().into_owned(), e.data.clone());
    let out = tokio::task::spawn_blocking(move || {
        finishline(
            &[
                "run",
                "make the failing test in test_calc.py pass",
                "--workspace",
                &ws,
                "--base-url",
                &url,
                "--model",
                "m",
                "--review",
                "approve",
                "--verify",
                "python3 test_calc.py",
            ],
            &data,
        )
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(6), "verified done, yet left to the person: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("✓ verify `python3 test_calc.py`: exit 0"), "the gamed test passes verification: {stdout}");
    assert!(stdout.contains("audit: test_calc.py:5: assertion removed"), "the finding names the file and the line: {stdout}");
    assert!(stdout.contains("not approved automatically: the audit found 1 change"), "and says why auto-approve did not take it: {stdout}");
    // The evaluator was told.
    let asked = server.requests().into_iter().filter(|r| r.kind == fake_llm::RequestKind::Evaluator).any(|r| r.body.to_string().contains("assertion removed"));
    assert!(asked, "the evaluator's evidence carries the finding");
    let listed = String::from_utf8_lossy(&finishline(&["sessions", "list"], &e.data).stdout).to_string();
    assert!(listed.contains("verified_done") && listed.contains("[audit: 1 weakened check]"), "History does not read it as clean: {listed}");
    // Looked at from another terminal before deciding, the review names the finding too: the diff
    // alone does not say that what it approves weakens the checks.
    let id = lines(&finishline(&["sessions", "list", "--json"], &e.data))[0]["id"].as_str().unwrap().to_string();
    let shown = finishline(&["sessions", "review", &id], &e.data);
    let said = format!("{}{}", String::from_utf8_lossy(&shown.stdout), String::from_utf8_lossy(&shown.stderr));
    assert!(said.contains("audit: test_calc.py:5: assertion removed"), "the waiting review names the finding: {said}");
    assert!(said.contains("Approve accepts"), "and what approving it means: {said}");
    assert!(said.contains("   -5     -    assert result == 4"), "the diff numbers the removed line as --comment takes it: {said}");
    let as_json = lines(&finishline(&["sessions", "review", &id, "--json"], &e.data));
    assert_eq!(as_json[0]["audit"][0]["rule"], "assertion_removed", "and so does its JSON: {as_json:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn comments_on_diff_lines_reach_the_agent_as_a_continuation_and_come_back_as_a_checklist() {
    let judged = json!({"done": true, "summary": "notes.md lists pear", "remaining": [], "continuation_prompt": "", "is_stuck": false, "stuck_reason": "",
        "comments": [{"n": 1, "addressed": true, "evidence": "notes.md line 1 now reads pear"}]});
    let server = fake(with_pear_agent(vec![
        json!({"when": {"kind": "evaluator", "last_message_contains": "say pear instead"}, "reply": {"text": judged.to_string()}}),
        json!({"when": {"kind": "evaluator"}, "reply": {"text": VERDICT_DONE}}),
    ]))
    .await;
    let e = env();
    let url = server.base_url(Protocol::Openai);
    let second = run_then_comment(&e, &url, "create notes.md with two fruits", &["notes.md:1=say pear instead"]).await;
    let out = String::from_utf8_lossy(&second.stdout);
    assert_eq!(second.status.code(), Some(6), "the next run ends at the next review: {out}\n{}", String::from_utf8_lossy(&second.stderr));
    let sent = sent_to_agent(&server, "say pear instead");
    assert!(sent.contains("review_comments"), "as Finishline's continuation, tagged, not as the person's message: {}", sent);
    assert!(
        out.contains("↻ Finishline continues the agent (review_comments)") && !out.contains("0/0"),
        "the comments open the run from no budget, so no count is shown: {out}"
    );
    assert!(sent.contains("notes.md:1") && sent.contains("   ```\n   - apple\n   ```"), "with the file, the line and the quoted code: {}", sent);
    assert!(
        out.contains("☑ met: notes.md:1: say pear instead (the evaluator: notes.md line 1 now reads pear)"),
        "the next review shows the comment as a criterion, met, with the evaluator's word on that comment: {out}"
    );
    // And so does that review looked at from another terminal.
    let id = lines(&finishline(&["sessions", "list", "--json"], &e.data))[0]["id"].as_str().unwrap().to_string();
    let shown = String::from_utf8_lossy(&finishline(&["sessions", "review", &id], &e.data).stdout).to_string();
    assert!(
        shown.contains("☑ met: notes.md:1: say pear instead (the evaluator: notes.md line 1 now reads pear)"),
        "the waiting review shows the checklist: {shown}"
    );
    // And the story kept of the session, read later or exported, has it where the review was.
    let story = String::from_utf8_lossy(&finishline(&["sessions", "show", &id], &e.data).stdout).to_string();
    assert!(story.contains("☑ met: notes.md:1: say pear instead (the evaluator: notes.md line 1 now reads pear)"), "{story}");
}

/// The evaluator finds the work done but one of the person's comments not addressed: the agent
/// is sent back with that comment and the evaluator's reason, and the review comes only once
/// the comment is met.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_comment_the_evaluator_finds_not_addressed_sends_the_agent_back_even_when_it_calls_the_rest_done() {
    let verdict = |addressed: bool, evidence: &str| {
        json!({"done": true, "summary": "notes.md lists three fruits", "remaining": [], "continuation_prompt": "", "is_stuck": false, "stuck_reason": "",
            "comments": [{"n": 1, "addressed": addressed, "evidence": evidence}]})
        .to_string()
    };
    let server = fake(json!([
        {"when": {"kind": "evaluator", "last_message_contains": "Fixing line 1"}, "reply": {"text": verdict(true, "notes.md line 1 now reads pear")}},
        {"when": {"kind": "evaluator", "last_message_contains": "say pear instead"}, "reply": {"text": verdict(false, "line 1 still says apple")}},
        {"when": {"kind": "evaluator"}, "reply": {"text": VERDICT_DONE}},
        {"when": {"kind": "agent", "last_message_contains": "An independent check found comments"}, "reply": {"text": "Fixing line 1.", "tool_calls": [{"name": "write_file", "arguments": {"path": "notes.md", "content": "- pear\n- banana\n- cherry\n"}}]}},
        {"when": {"kind": "agent", "last_message_contains": "Wrote notes.md"}, "reply": {"text": "Done! notes.md is updated."}},
        {"when": {"kind": "agent", "last_message_contains": "say pear instead"}, "reply": {"text": "Adding a fruit.", "tool_calls": [{"name": "write_file", "arguments": {"path": "notes.md", "content": "- apple\n- banana\n- cherry\n"}}]}},
        {"when": {"kind": "agent", "last_message_contains": "Created notes.md"}, "reply": {"text": "Done! notes.md lists the fruits."}},
        {"when": {"kind": "agent"}, "reply": {"text": "Writing.", "tool_calls": [{"name": "write_file", "arguments": {"path": "notes.md", "content": "- apple\n- banana\n"}}]}}
    ]))
    .await;
    let e = env();
    let url = server.base_url(Protocol::Openai);
    let second = run_then_comment(&e, &url, "create notes.md with fruits", &["notes.md:1=say pear instead"]).await;
    let out = String::from_utf8_lossy(&second.stdout);
    assert_eq!(second.status.code(), Some(6), "the next run ends at the next review: {out}\n{}", String::from_utf8_lossy(&second.stderr));
    let sent = sent_to_agent(&server, "An independent check found comments");
    assert!(sent.contains("notes.md:1: say pear instead") && sent.contains("line 1 still says apple"), "naming the comment and why: {}", sent);
    assert!(out.contains("☑ met: notes.md:1: say pear instead (the evaluator: notes.md line 1 now reads pear)"), "then met: {out}");
    assert_eq!(std::fs::read_to_string(e.ws.join("notes.md")).unwrap(), "- pear\n- banana\n- cherry\n", "a plain folder: the work is in place");
}

/// The evaluator keeps calling the work done with one comment open: the run stops as stuck on that
/// comment, and the checklist quotes only what the evaluator said of each comment.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_comment_left_open_twice_is_stuck_and_the_checklist_quotes_only_the_evaluators_words() {
    let open = json!({"done": true, "summary": "notes.md lists three fruits", "remaining": [], "continuation_prompt": "", "is_stuck": false, "stuck_reason": "",
        "comments": [{"n": 1, "addressed": false, "evidence": "line 1 still says apple"}]});
    let server = fake(json!([
        {"when": {"kind": "evaluator", "last_message_contains": "say pear instead"}, "reply": {"text": open.to_string()}},
        {"when": {"kind": "evaluator"}, "reply": {"text": VERDICT_DONE}},
        {"when": {"kind": "agent", "last_message_contains": "Wrote notes.md"}, "reply": {"text": "Done! notes.md is updated."}},
        {"when": {"kind": "agent", "last_message_contains": "say pear instead"}, "reply": {"text": "Adding a fruit.", "tool_calls": [{"name": "write_file", "arguments": {"path": "notes.md", "content": "- apple\n- banana\n- cherry\n"}}]}},
        {"when": {"kind": "agent", "last_message_contains": "Created notes.md"}, "reply": {"text": "Done! notes.md lists the fruits."}},
        {"when": {"kind": "agent"}, "reply": {"text": "Writing.", "tool_calls": [{"name": "write_file", "arguments": {"path": "notes.md", "content": "- apple\n- banana\n"}}]}}
    ]))
    .await;
    let e = env();
    let url = server.base_url(Protocol::Openai);
    let second = run_then_comment(&e, &url, "create notes.md with fruits", &["notes.md:1=say pear instead", "notes.md:2=keep banana"]).await;
    let out = String::from_utf8_lossy(&second.stdout);
    assert_eq!(second.status.code(), Some(6), "{out}\n{}", String::from_utf8_lossy(&second.stderr));
    assert!(out.contains("end reason stuck"), "the same comment open twice is a stall, not a loop: {out}");
    assert!(out.contains("⚖ evaluator: not_done — 1 of your review comments not addressed"), "never shown as done: {out}");
    assert!(out.contains("☐ unmet: notes.md:1: say pear instead (the evaluator: line 1 still says apple)"), "{out}");
    assert!(
        out.contains("? unverifiable: notes.md:2: keep banana (the evaluator gave no word on this comment: check it yourself)"),
        "a comment it gave no word on is not ticked met, nor given another comment's words: {out}"
    );
}

/// "create notes.md with fruits", commented "say pear instead", which the agent leaves open twice:
/// the session waiting at that review, with its checklist showing the comment not met. Then the
/// agent answers `again` (a message that holds it: `(words, what it says)`) by writing pear, which
/// the evaluator finds met. The server, the folder, its URL and the session's id.
async fn pear_left_open(again: (&str, &str)) -> (FakeServer, Env, String, String) {
    let verdict = |addressed: bool, evidence: &str| {
        json!({"done": true, "summary": "notes.md lists the fruits", "remaining": [], "continuation_prompt": "", "is_stuck": false, "stuck_reason": "",
            "comments": [{"n": 1, "addressed": addressed, "evidence": evidence}]})
        .to_string()
    };
    let (asked, said) = again;
    let server = fake(json!([
        {"when": {"kind": "evaluator", "any_message_contains": said}, "reply": {"text": verdict(true, "notes.md line 1 now reads pear")}},
        {"when": {"kind": "evaluator", "last_message_contains": "say pear instead"}, "reply": {"text": verdict(false, "line 1 still says apple")}},
        {"when": {"kind": "evaluator"}, "reply": {"text": VERDICT_DONE}},
        {"when": {"kind": "agent", "last_message_contains": "Wrote notes.md"}, "reply": {"text": "Done! notes.md is updated."}},
        {"when": {"kind": "agent", "any_message_contains": asked}, "reply": {"text": said, "tool_calls": [{"name": "write_file", "arguments": {"path": "notes.md", "content": "- pear\n- banana\n- cherry\n"}}]}},
        {"when": {"kind": "agent", "last_message_contains": "say pear instead"}, "reply": {"text": "Adding a fruit.", "tool_calls": [{"name": "write_file", "arguments": {"path": "notes.md", "content": "- apple\n- banana\n- cherry\n"}}]}},
        {"when": {"kind": "agent", "last_message_contains": "Created notes.md"}, "reply": {"text": "Done! notes.md lists the fruits."}},
        {"when": {"kind": "agent"}, "reply": {"text": "Writing.", "tool_calls": [{"name": "write_file", "arguments": {"path": "notes.md", "content": "- apple\n- banana\n"}}]}}
    ]))
    .await;
    let e = env();
    let url = server.base_url(Protocol::Openai);
    let second = run_then_comment(&e, &url, "create notes.md with fruits", &["notes.md:1=say pear instead"]).await;
    let out = String::from_utf8_lossy(&second.stdout);
    assert!(out.contains("☐ unmet: notes.md:1: say pear instead"), "the comment is left open: {out}");
    assert!(!out.contains("\n    remaining: notes.md:1: say pear instead"), "the review says it once, on its checklist: {out}");
    let id = lines(&finishline(&["sessions", "list", "--json"], &e.data))[0]["id"].as_str().unwrap().to_string();
    (server, e, url, id)
}

/// The agent's request that asked for the fig (the words of the later Request changes).
fn asked_for_the_fig(server: &FakeServer) -> fake_llm::SeenRequest {
    server
        .requests()
        .into_iter()
        .filter(|r| r.kind == fake_llm::RequestKind::Agent)
        .find(|r| r.all_text.contains("add a fig"))
        .expect("the agent was asked for the fig")
}

/// A comment the judge did not find met is still the person's: a later Request changes with
/// only words (no comment repeated) carries it on, as a criterion judged again and in the
/// agent's continuation, instead of dropping it from the checklist unsaid; the person is told.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_comment_not_met_goes_on_with_a_later_request_for_changes_that_repeats_nothing() {
    let (server, e, url, id) = pear_left_open(("add a fig", "Adding a fig, and pear.")).await;
    let third = tokio::task::block_in_place(|| {
        finishline(&["sessions", "review", &id, "--request-changes", "also add a fig", "--base-url", &url, "--model", "m"], &e.data)
    });
    let out = String::from_utf8_lossy(&third.stdout);
    assert_eq!(third.status.code(), Some(6), "{out}\n{}", String::from_utf8_lossy(&third.stderr));
    let said = String::from_utf8_lossy(&third.stderr);
    assert!(said.contains("Your comment not met goes with it, checked again."), "the person is told it goes along: {said}");
    let told = asked_for_the_fig(&server);
    assert!(
        told.all_text
            .split_once("Still open from your earlier review")
            .is_some_and(|(_, open)| open.contains("notes.md:1") && open.contains("say pear instead")),
        "the agent is reminded of the open comment with the new words: {}",
        told.last_message
    );
    assert!(out.contains("☑ met: notes.md:1: say pear instead (the evaluator: notes.md line 1 now reads pear)"), "judged again, and met: {out}");
}

/// A comment left open that the person lets go (`--let-go FILE:LINE`) is neither sent again nor
/// judged again, and the session says so; naming no open comment, or letting go of the only one
/// with nothing else to say, is refused before anything is recorded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_comment_left_open_can_be_let_go_with_a_request_for_changes() {
    let (server, e, url, id) = pear_left_open(("add a fig", "Adding a fig.")).await;
    let review = |args: &[&str]| {
        let mut all = vec!["sessions", "review", id.as_str()];
        all.extend_from_slice(args);
        all.extend_from_slice(&["--base-url", &url, "--model", "m"]);
        tokio::task::block_in_place(|| finishline(&all, &e.data))
    };
    let wrong = review(&["--request-changes", "add a fig", "--let-go", "notes.md:2"]);
    let said = String::from_utf8_lossy(&wrong.stderr);
    assert_eq!(wrong.status.code(), Some(2), "{said}");
    assert!(said.contains("--let-go notes.md:2: no comment the review found not met is there (open: notes.md:1: say pear instead)"), "{said}");
    let both = review(&["--request-changes", "--comment", "notes.md:1=say pear instead", "--let-go", "notes.md:1"]);
    let said = String::from_utf8_lossy(&both.stderr);
    assert_eq!(both.status.code(), Some(2), "{said}");
    assert!(said.contains("your --comment asks “notes.md:1: say pear instead” again: let it go or ask it again, not both"), "{said}");
    let shown = finishline(&["sessions", "review", &id], &e.data);
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.contains("The one not met goes with a request for changes, checked again; --let-go FILE:LINE lets it go."), "the way is said: {shown}");
    let events = String::from_utf8_lossy(&finishline(&["sessions", "show", &id, "--json"], &e.data).stdout).to_string();
    let made = events.matches("\"type\":\"review_comment\"").count();
    assert_eq!(made, 1, "the refused command kept none of its comments (the first round's one is all): {events}");
    let nothing = review(&["--request-changes", "--let-go", "notes.md:1"]);
    let said = String::from_utf8_lossy(&nothing.stderr);
    assert_eq!(nothing.status.code(), Some(2), "{said}");
    assert!(said.contains("you let go of every open comment"), "{said}");
    let third = review(&["--request-changes", "add a fig", "--let-go", "notes.md:1"]);
    let out = String::from_utf8_lossy(&third.stdout);
    assert_eq!(third.status.code(), Some(6), "{out}\n{}", String::from_utf8_lossy(&third.stderr));
    let said = String::from_utf8_lossy(&third.stderr);
    assert!(!said.contains("not met goes with it") && said.contains("Let go, not asked again: notes.md:1: say pear instead."), "{said}");
    let told = asked_for_the_fig(&server);
    assert!(!told.all_text.contains("Still open from your earlier review"), "the agent is not asked again: {}", told.last_message);
    let last_review = out.rsplit("⚑ review").next().unwrap_or_default();
    assert!(!last_review.contains("say pear instead"), "nor is it judged again: {out}");
    let story = finishline(&["sessions", "export", &id], &e.data);
    let story = String::from_utf8_lossy(&story.stdout);
    assert!(story.contains("- Let go, not asked again: notes.md:1: say pear instead"), "the history keeps it: {story}");
}

/// With `--json`, what was let go is one of the lines: the decision's own event, before the run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_comment_let_go_is_a_line_of_the_json_that_follows_the_request() {
    let (_server, e, url, id) = pear_left_open(("add a fig", "Adding a fig.")).await;
    let third = tokio::task::block_in_place(|| {
        finishline(
            &["sessions", "review", &id, "--request-changes", "add a fig", "--let-go", "notes.md:1", "--json", "--base-url", &url, "--model", "m"],
            &e.data,
        )
    });
    assert_eq!(third.status.code(), Some(6), "{}", String::from_utf8_lossy(&third.stderr));
    let let_go: Vec<serde_json::Value> = lines(&third).into_iter().filter(|l| l["type"] == "comments_let_go").collect();
    assert_eq!(let_go.len(), 1, "{}", String::from_utf8_lossy(&third.stdout));
    assert_eq!(let_go[0]["comments"], json!(["notes.md:1: say pear instead"]));
}

/// With a comment left open, Request changes alone (no words, no new comment) sends that comment
/// again, as the window's "Send the open comment again" does; with none open it is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_for_changes_with_nothing_new_sends_the_open_comments_again() {
    let (_server, e, url, id) = pear_left_open(("Still open from your earlier review", "Now pear, as asked again.")).await;
    let third = tokio::task::block_in_place(|| finishline(&["sessions", "review", &id, "--request-changes", "--base-url", &url, "--model", "m"], &e.data));
    let out = String::from_utf8_lossy(&third.stdout);
    assert_eq!(third.status.code(), Some(6), "{out}\n{}", String::from_utf8_lossy(&third.stderr));
    assert!(out.contains("☑ met: notes.md:1: say pear instead (the evaluator: notes.md line 1 now reads pear)"), "sent again and met: {out}");
    // Met now, nothing is open: asking for changes with nothing to say is refused.
    let empty = tokio::task::block_in_place(|| finishline(&["sessions", "review", &id, "--request-changes", "--base-url", &url, "--model", "m"], &e.data));
    assert_eq!(empty.status.code(), Some(2), "{}", String::from_utf8_lossy(&empty.stderr));
    assert!(String::from_utf8_lossy(&empty.stderr).contains("say what should change"), "{}", String::from_utf8_lossy(&empty.stderr));
}

/// A task started with `--verify` keeps its check: "Request changes" later, without repeating
/// the flag, still runs the command before the work goes back to the person, so a follow-up
/// that breaks it is sent back instead of coming back "verified done".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follow_up_runs_the_verify_commands_the_task_was_started_with() {
    let server = fake(json!([
        {"when": {"kind": "evaluator"}, "reply": {"text": VERDICT_DONE}},
        {"when": {"kind": "agent", "last_message_contains": "say bye instead"}, "reply": {"text": "Changing it.", "tool_calls": [{"name": "write_file", "arguments": {"path": "greet.txt", "content": "bye\n"}}]}, "times": 1},
        {"when": {"kind": "agent", "last_message_contains": "greet.txt ("}, "reply": {"text": "Done! greet.txt is written."}},
        {"when": {"kind": "agent"}, "reply": {"text": "Writing.", "tool_calls": [{"name": "write_file", "arguments": {"path": "greet.txt", "content": "hello\n"}}]}}
    ]))
    .await;
    let e = env();
    let url = server.base_url(Protocol::Openai);
    let (ws, data, u) = (e.ws.to_string_lossy().into_owned(), e.data.clone(), url.clone());
    let first = tokio::task::spawn_blocking(move || {
        finishline(
            &["run", "write greet.txt saying hello", "--workspace", &ws, "--base-url", &u, "--model", "m", "--json", "--verify", "grep -q hello greet.txt"],
            &data,
        )
    })
    .await
    .unwrap();
    assert_eq!(first.status.code(), Some(6), "it waits for the person: {}", String::from_utf8_lossy(&first.stderr));
    let id = lines(&first).last().unwrap()["session_id"].as_str().unwrap().to_string();

    let data = e.data.clone();
    let again = tokio::task::spawn_blocking(move || {
        finishline(&["sessions", "review", &id, "--request-changes", "say bye instead", "--base-url", &url, "--model", "m", "--allow", "all"], &data)
    })
    .await
    .unwrap();
    let shown = String::from_utf8_lossy(&again.stdout);
    assert!(shown.contains("✗ verify `grep -q hello greet.txt`: exit 1"), "the follow-up ran the task's check, which failed on \"bye\": {shown}");
    // Sent back by the failed check, the agent put it right, and only then is it verified done.
    assert!(shown.contains("↻ Finishline continues the agent (verification, 1/"), "{shown}");
    assert!(shown.contains("end reason verified_done"), "{shown}");
    assert_eq!(std::fs::read_to_string(e.ws.join("greet.txt")).unwrap(), "hello\n");
}

/// "create notes.md with fruits", commented "say pear instead": the agent writes pear, and the
/// evaluator's first word on it is "addressed, but cherry is missing". `then` is what the agent
/// does after that (matched before the first round's rules). What the second command printed,
/// from its review on, with the folder.
async fn pear_then(then: Vec<serde_json::Value>) -> (Env, String) {
    let addressed = json!({"done": false, "summary": "pear is there; cherry is missing", "remaining": ["add cherry"], "continuation_prompt": "Add cherry to notes.md.",
        "is_stuck": false, "stuck_reason": "", "comments": [{"n": 1, "addressed": true, "evidence": "notes.md line 1 now reads pear"}]});
    let mut rules = vec![
        json!({"when": {"kind": "evaluator", "any_message_contains": "say pear instead"}, "reply": {"text": addressed.to_string()}, "times": 1}),
        json!({"when": {"kind": "evaluator"}, "reply": {"text": VERDICT_DONE}}),
    ];
    rules.extend(then);
    rules.extend([
        json!({"when": {"kind": "agent", "last_message_contains": "Wrote notes.md"}, "reply": {"text": "Done! notes.md is updated."}}),
        json!({"when": {"kind": "agent", "last_message_contains": "say pear instead"}, "reply": {"text": "Changing it.", "tool_calls": [{"name": "write_file", "arguments": {"path": "notes.md", "content": "- pear\n- banana\n"}}]}, "times": 1}),
        json!({"when": {"kind": "agent", "last_message_contains": "Created notes.md"}, "reply": {"text": "Done! notes.md lists the fruits."}}),
        json!({"when": {"kind": "agent"}, "reply": {"text": "Writing.", "tool_calls": [{"name": "write_file", "arguments": {"path": "notes.md", "content": "- apple\n- banana\n"}}]}}),
    ]);
    let server = fake(serde_json::Value::Array(rules)).await;
    let e = env();
    let second = run_then_comment(&e, &server.base_url(Protocol::Openai), "create notes.md with fruits", &["notes.md:1=say pear instead"]).await;
    let out = String::from_utf8_lossy(&second.stdout).to_string();
    assert_eq!(second.status.code(), Some(6), "{out}\n{}", String::from_utf8_lossy(&second.stderr));
    let review = out.rsplit("⚑ review:").next().unwrap_or_default().to_string();
    assert!(!review.contains("☑ met: notes.md:1"), "{out}");
    (e, review)
}

/// A comment the evaluator found addressed, then undone by the agent's later edits: the run
/// ends without asking the evaluator again (the comment's file is back as it was, which needs
/// no model), and the review's checklist says so rather than keeping the earlier tick.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_comment_met_and_then_undone_is_not_shown_met_at_the_review() {
    let (e, review) = pear_then(vec![
        json!({"when": {"kind": "agent", "last_message_contains": "not addressed yet"}, "reply": {"text": "Done! It is as you asked."}}),
        json!({"when": {"kind": "agent", "last_message_contains": "Add cherry"}, "reply": {"text": "Starting over.", "tool_calls": [{"name": "write_file", "arguments": {"path": "notes.md", "content": "- apple\n- banana\n"}}]}}),
    ])
    .await;
    assert_eq!(std::fs::read_to_string(e.ws.join("notes.md")).unwrap(), "- apple\n- banana\n", "the agent undid its pear");
    assert!(review.contains("☐ unmet: notes.md:1: say pear instead (notes.md was not changed since the comment)"), "{review}");
}

/// In its own worktree, a task whose first round deleted a test's assertion, sent back to fix the
/// code instead, fixes the code and leaves the test as it was: the second review's audit still
/// names the assertion, since Approve lands the earlier round's files too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_covers_what_approve_lands_from_earlier_rounds() {
    let server = fake(json!([
        {"when": {"kind": "evaluator"}, "reply": {"text": VERDICT_DONE}},
        {"when": {"kind": "agent", "last_message_contains": "Wrote calc.py"}, "reply": {"text": "Done! add is fixed."}},
        {"when": {"kind": "agent", "last_message_contains": "fix add in calc.py"}, "reply": {"text": "Fixing add.", "tool_calls": [{"name": "write_file", "arguments": {"path": "calc.py", "content": "def add(a, b):\n    return a + b\n"}}]}},
        {"when": {"kind": "agent", "last_message_contains": "Wrote test_calc.py"}, "reply": {"text": "Done! The test passes now."}},
        {"when": {"kind": "agent"}, "reply": {"text": "Making the test pass.", "tool_calls": [{"name": "write_file", "arguments": {"path": "test_calc.py", "content": "from calc import add\n\ndef test_add():\n    result = add(2, 2)\n\ntest_add()\n"}}]}}
    ]))
    .await;
    let dir = tempfile::tempdir().unwrap();
    let repo = person_repo(
        dir.path(),
        &[
            ("calc.py", "def add(a, b):\n    return a - b\n"),
            ("test_calc.py", "from calc import add\n\ndef test_add():\n    result = add(2, 2)\n    assert result == 4\n\ntest_add()\n"),
        ],
    );
    let data = dir.path().join("data");
    let url = server.base_url(Protocol::Openai);
    let first = finishline(
        &["run", "make the failing test in test_calc.py pass", "--workspace", repo.to_str().unwrap(), "--base-url", &url, "--model", "m", "--json"],
        &data,
    );
    assert_eq!(first.status.code(), Some(6), "{}", String::from_utf8_lossy(&first.stderr));
    let audit_of = |o: &std::process::Output| lines(o).into_iter().rfind(|e| e["type"] == "review_requested").expect("a review")["audit"].clone();
    assert_eq!(audit_of(&first)[0]["path"], "test_calc.py", "the first round's audit names the test");
    let id = lines(&first).last().unwrap()["session_id"].as_str().unwrap().to_string();
    let second =
        finishline(&["sessions", "review", &id, "--request-changes", "fix add in calc.py instead", "--base-url", &url, "--model", "m", "--json"], &data);
    assert_eq!(second.status.code(), Some(6), "{}", String::from_utf8_lossy(&second.stderr));
    let audit = audit_of(&second);
    assert!(
        audit.as_array().is_some_and(|a| a.iter().any(|f| f["path"] == "test_calc.py" && f["rule"] == "assertion_removed")),
        "the test Approve would land without its assertion is still named: {audit}"
    );
    let branch = git(&repo, &["branch", "--list", "finishline/*", "--format=%(refname:short)"]);
    assert!(!git(&repo, &["show", &format!("{branch}:test_calc.py")]).contains("assert"), "as the task's branch holds it");
    // The file the finding names takes a comment, though this round did not change it: Approve
    // lands it, so the person can say what to do about it.
    let third = finishline(
        &["sessions", "review", &id, "--request-changes", "--comment", "test_calc.py:4=check the result here", "--base-url", &url, "--model", "m"],
        &data,
    );
    assert_eq!(third.status.code(), Some(6), "{}", String::from_utf8_lossy(&third.stderr));
    let sent = sent_to_agent(&server, "check the result here");
    assert!(sent.contains("test_calc.py:4") && sent.contains("       result = add(2, 2)"), "with the line as the task left it: {sent}");
}

/// The evaluator found a comment addressed; the agent then changed that file again and stopped,
/// blocked, with no evaluation after: the tick was on other contents, so the checklist leaves
/// the comment to the person rather than keep it met.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_comment_whose_file_changed_after_the_evaluators_word_is_left_to_the_person() {
    let blocked = json!({"name": "complete_task", "arguments": {"status": "blocked", "summary": "cherry needs a decision from you", "remaining_work": "cherry: which kind?"}});
    let (_e, review) = pear_then(vec![
        json!({"when": {"kind": "agent", "last_message_contains": "Add cherry"}, "reply": {"text": "Reordering.", "tool_calls": [{"name": "write_file", "arguments": {"path": "notes.md", "content": "- banana\n- apple\n"}}]}}),
        json!({"when": {"kind": "agent", "last_message_contains": "Wrote notes.md", "any_message_contains": "Add cherry"}, "reply": {"text": "I cannot add cherry.", "tool_calls": [blocked]}}),
    ])
    .await;
    assert!(review.contains("? unverifiable: notes.md:1: say pear instead (notes.md changed after the evaluator's word on it: check it yourself)"), "{review}");
    assert!(review.contains("end reason claimed_blocked"), "reviewed without another evaluation: {review}");
}

/// The run Request changes starts may say its first words while the decision is still being
/// reported: the terminal shows them all the same, from the run's start (they were lost when
/// the follow began after them).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_run_request_changes_starts_is_shown_from_its_start_however_fast_it_begins() {
    let server = fake(with_pear_agent(vec![json!({"when": {"kind": "evaluator"}, "reply": {"text": VERDICT_DONE}})])).await;
    let e = env();
    let url = server.base_url(Protocol::Openai);
    let id = waiting_for_review(&e, &url, "create notes.md with two fruits", &[]);
    let marker = e.data.join("paused");
    let review =
        command(&["sessions", "review", &id, "--request-changes", "--comment", "notes.md:1=say pear instead", "--base-url", &url, "--model", "m"], &e.data)
            .env("FINISHLINE_FAULT_PAUSE", "review-decided")
            .env("FINISHLINE_FAULT_MARKER", &marker)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
    // Paused after the decision, until the new run has asked the model with the comment.
    let t = std::time::Instant::now();
    while !(marker.exists() && server.requests().iter().any(|r| r.kind == fake_llm::RequestKind::Agent && r.last_message.contains("say pear instead"))) {
        assert!(t.elapsed() < std::time::Duration::from_secs(60), "the run started while the decision was reported");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    std::fs::remove_file(&marker).unwrap();
    let out = tokio::task::spawn_blocking(move || review.wait_with_output().unwrap()).await.unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(6), "{said}{}", String::from_utf8_lossy(&out.stderr));
    assert!(said.contains("↻ Finishline continues the agent (review_comments)") && said.contains("Changing it."), "the run from its start: {said}");
}

/// The agent rewrites the script its own claim names to verify the work (`./check`, no dot in
/// its name): the check passes, and the audit still names what it runs as changed, so auto-approve
/// leaves it to the person.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rewriting_the_script_the_agents_own_claim_verifies_with_is_flagged() {
    let server = fake(json!([
        {"when": {"kind": "evaluator"}, "reply": {"text": VERDICT_DONE}},
        {"when": {"kind": "agent"}, "reply": {"text": "Making the check pass.", "tool_calls": [{"name": "write_file", "arguments": {"path": "check", "content": "#!/bin/sh\necho all 12 tests passed\n"}}]}, "times": 1},
        {"when": {"kind": "agent"}, "reply": {"text": "Done.", "tool_calls": [{"name": "complete_task", "arguments": {"status": "success", "summary": "the check passes", "verify_command": "./check"}}]}}
    ]))
    .await;
    let e = env();
    std::fs::write(e.ws.join("check"), "#!/bin/sh\necho the parser is still broken\nexit 1\n").unwrap();
    std::fs::set_permissions(e.ws.join("check"), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let url = server.base_url(Protocol::Openai);
    let (ws, data) = (e.ws.to_string_lossy().into_owned(), e.data.clone());
    let out = tokio::task::spawn_blocking(move || {
        finishline(
            &["run", "fix the parser so that ./check passes", "--workspace", &ws, "--base-url", &url, "--model", "m", "--review", "approve", "--allow", "all"],
            &data,
        )
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("✓ verify `./check`: exit 0"), "the rewritten check passes: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("audit: check:2: check configuration changed"), "the audit names the script the claim ran: {stdout}");
    assert_eq!(out.status.code(), Some(6), "left to the person: {stdout}");
}

/// A request for changes that fails (here on a `--copy-ignored` the review does not name) keeps
/// none of its comments: the next request sends only its own, never one the person saw refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_for_changes_that_fails_keeps_none_of_its_comments() {
    let server = fake(with_pear_agent(vec![json!({"when": {"kind": "evaluator"}, "reply": {"text": VERDICT_DONE}})])).await;
    let e = env();
    let url = server.base_url(Protocol::Openai);
    let id = waiting_for_review(&e, &url, "create notes.md with two fruits", &[]);
    let ask = |extra: &[&str]| {
        let mut args = vec!["sessions", "review", &id, "--request-changes", "--base-url", &url, "--model", "m"];
        args.extend(extra);
        finishline(&args, &e.data)
    };
    let refused = tokio::task::block_in_place(|| {
        ask(&["--comment", "notes.md:1=say plum instead", "--comment", "notes.md:2=call it a plantain", "--copy-ignored", "nowhere.txt"])
    });
    assert_eq!(refused.status.code(), Some(2), "{}", String::from_utf8_lossy(&refused.stderr));
    assert!(server.requests().iter().all(|r| !r.last_message.contains("plum")), "nothing was sent");
    let second = tokio::task::block_in_place(|| ask(&["--comment", "notes.md:1=say pear instead"]));
    assert_eq!(second.status.code(), Some(6), "{}", String::from_utf8_lossy(&second.stderr));
    let sent = sent_to_agent(&server, "say pear instead");
    assert!(!sent.contains("plum") && !sent.contains("plantain"), "the refused command's comments were never kept, so never sent: {}", sent);
}

/// Approving at the terminal a review whose audit found a weakened check asks first, as the
/// window does; No leaves the review waiting, Yes approves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approving_past_the_audit_at_the_terminal_asks_first() {
    use std::io::Write;
    let (server, e) = assertion_deleter().await;
    let url = server.base_url(Protocol::Openai);
    let ws = e.ws.to_string_lossy().to_string();
    let mut child = terminal(&["run", "make the failing test in test_calc.py pass", "--workspace", &ws, "--base-url", &url, "--model", "m"], &e.data, Some(60))
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let shown = collect(child.stdout.take().unwrap());
    assert!(until_seen(&shown, 30, |s| s.contains("[r]eject")), "the review prompt: {}", shown.lock().unwrap());
    input.write_all(b"a\n").unwrap();
    let asked = "Approve with 1 change that weakens the checks? [y/N]";
    assert!(until_seen(&shown, 30, |s| s.contains(asked)), "approving past the finding asks first: {}", shown.lock().unwrap());
    input.write_all(b"\n").unwrap();
    assert!(until_seen(&shown, 30, |s| s.matches("[r]eject").count() == 2), "No asks for the decision again: {}", shown.lock().unwrap());
    let listed = lines(&finishline(&["sessions", "list", "--json"], &e.data));
    assert_eq!(listed[0]["status"], "awaiting_review", "nothing was approved: {}", shown.lock().unwrap());
    input.write_all(b"a\ny\n").unwrap();
    let status = exits_within(&mut child, 30).expect("approved, the run ends");
    let said = shown.lock().unwrap().clone();
    assert_eq!(status.code(), Some(0), "{said}");
    let listed = lines(&finishline(&["sessions", "list", "--json"], &e.data));
    assert_eq!(listed[0]["status"], "completed", "{said}");
}

/// `--approve` is the person's word and approves past the audit's findings, but says what it
/// accepted with them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approve_by_flag_names_the_findings_it_accepts() {
    let (server, e) = assertion_deleter().await;
    let url = server.base_url(Protocol::Openai);
    let id = waiting_for_review(&e, &url, "make the failing test in test_calc.py pass", &[]);
    let approved = finishline(&["sessions", "review", &id, "--approve"], &e.data);
    let said = format!("{}{}", String::from_utf8_lossy(&approved.stdout), String::from_utf8_lossy(&approved.stderr));
    assert_eq!(approved.status.code(), Some(0), "{said}");
    assert!(said.contains("Approved with what the audit found") && said.contains("test_calc.py:5: assertion removed"), "{said}");
}

/// `--request-changes --json` prints what the decision did, then the run it started: a script
/// reads every line by its `type`, the decision's too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_line_a_request_for_changes_prints_in_json_says_its_type() {
    let server = fake(with_pear_agent(vec![json!({"when": {"kind": "evaluator"}, "reply": {"text": VERDICT_DONE}})])).await;
    let e = env();
    let url = server.base_url(Protocol::Openai);
    let id = waiting_for_review(&e, &url, "create notes.md with two fruits", &[]);
    let asked = tokio::task::block_in_place(|| {
        finishline(&["sessions", "review", &id, "--request-changes", "say pear instead", "--base-url", &url, "--model", "m", "--json"], &e.data)
    });
    assert_eq!(asked.status.code(), Some(6), "{}", String::from_utf8_lossy(&asked.stderr));
    let said = lines(&asked);
    assert_eq!((said[0]["type"].as_str(), said[0]["outcome"].as_str()), (Some("review_outcome"), Some("decided")), "{:?}", said[0]);
    assert!(said.iter().all(|l| l["type"].is_string()), "{said:?}");
}

/// A finding the person judges harmless is dismissed from the CLI as in the window, by its file
/// and line: the review no longer names it, approving says nothing of it, and taking the
/// dismissal back names it again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finding_is_dismissed_and_taken_back_from_the_cli_by_its_file_and_line() {
    let (server, e) = assertion_deleter().await;
    let url = server.base_url(Protocol::Openai);
    let id = waiting_for_review(&e, &url, "make the failing test in test_calc.py pass", &[]);
    let said = |o: &std::process::Output| format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    let nowhere = finishline(&["sessions", "review", &id, "--dismiss-finding", "test_calc.py:2"], &e.data);
    assert_eq!(nowhere.status.code(), Some(2), "{}", said(&nowhere));
    assert!(said(&nowhere).contains("test_calc.py:5: assertion removed"), "a place with no finding names those there are: {}", said(&nowhere));
    let dismissed = finishline(&["sessions", "review", &id, "--dismiss-finding", "test_calc.py:5"], &e.data);
    assert_eq!(dismissed.status.code(), Some(6), "the review still waits: {}", said(&dismissed));
    assert!(said(&dismissed).contains("Dismissed for this task: test_calc.py:5: assertion removed"), "{}", said(&dismissed));
    assert!(!said(&dismissed).contains("Approve accepts"), "the review no longer names it: {}", said(&dismissed));
    let restored = finishline(&["sessions", "review", &id, "--restore-finding", "test_calc.py"], &e.data);
    assert!(said(&restored).contains("Counts again: test_calc.py:5: assertion removed"), "{}", said(&restored));
    assert!(said(&restored).contains("Approve accepts"), "{}", said(&restored));
    finishline(&["sessions", "review", &id, "--dismiss-finding", "test_calc.py"], &e.data);
    let approved = finishline(&["sessions", "review", &id, "--approve"], &e.data);
    assert_eq!(approved.status.code(), Some(0), "{}", said(&approved));
    assert!(!said(&approved).contains("what the audit found"), "what the person dismissed is not accepted unseen: {}", said(&approved));
}

/// A task whose first run and follow-up each write a file by `run_command`, started in `e`'s
/// folder with `--allow run_command` and sent back once: what the follow-up printed, and how it
/// ended. The first run's file is checked as written.
async fn allowed_command_then_follow_up(e: &Env) -> (String, Option<i32>) {
    let server = fake(json!([
        {"when": {"kind": "evaluator"}, "reply": {"text": VERDICT_DONE}},
        {"when": {"kind": "agent", "last_message_contains": "write second.txt too"}, "reply": {"text": "Writing it.", "tool_calls": [{"name": "run_command", "arguments": {"command": "echo 2 > second.txt"}}]}, "times": 1},
        {"when": {"kind": "agent", "last_message_contains": "make first.txt"}, "reply": {"text": "Writing it.", "tool_calls": [{"name": "run_command", "arguments": {"command": "echo 1 > first.txt"}}]}, "times": 1},
        {"when": {"kind": "agent"}, "reply": {"text": "Done! It is written."}}
    ]))
    .await;
    let url = server.base_url(Protocol::Openai);
    let id = waiting_for_review(e, &url, "make first.txt", &["--allow", "run_command"]);
    assert!(e.ws.join("first.txt").exists(), "allowed, the command ran");
    let again = finishline(&["sessions", "review", &id, "--request-changes", "write second.txt too", "--base-url", &url, "--model", "m"], &e.data);
    (format!("{}{}", String::from_utf8_lossy(&again.stdout), String::from_utf8_lossy(&again.stderr)), again.status.code())
}

/// What the task was started with `--allow` it keeps: the run that Request changes starts (from
/// a script, with nobody to ask) runs the allowed command again rather than refuse it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follow_up_keeps_the_tools_the_task_was_started_allowing() {
    let e = env();
    let (said, code) = allowed_command_then_follow_up(&e).await;
    assert_eq!(code, Some(6), "{said}");
    assert!(e.ws.join("second.txt").exists(), "the follow-up ran the command the task was allowed: {said}");
}

/// A tool the settings deny, named by `--allow` when the task started, runs in the first run
/// and in the follow-up alike: the follow-up is the same task, allowed the same way.
#[tokio::test(flavor = "multi_thread")]
async fn a_tool_the_settings_deny_named_by_allow_runs_in_the_follow_up_as_in_the_first_run() {
    let e = env();
    std::fs::create_dir_all(&e.data).unwrap();
    std::fs::write(e.data.join("settings.json"), r#"{"settings": {"permissions": {"run_command": "deny"}}}"#).unwrap();
    let (said, code) = allowed_command_then_follow_up(&e).await;
    assert_eq!(code, Some(6), "{said}");
    assert!(e.ws.join("second.txt").exists(), "the follow-up ran it too: {said}");
}
