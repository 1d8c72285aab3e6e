//! Attempts side by side: one task by several agents, each in its own worktree from the same
//! commit, judged the same way and ranked by a rule the person can read; the best one lands as
//! one commit and no worktree is left. Driven through the `finishline` binary against the fake
//! provider, with three models of Finishline's own agent as the three agents: one claims done
//! without doing the work, one fails verification, one succeeds; and a real agent from npm
//! (Gemini CLI, offline against the fake provider) beside Finishline's own.

mod support {
    pub mod cli;
}
#[path = "../../engine/tests/support/agents.rs"]
mod agents;

use std::path::{Path, PathBuf};
use std::process::Command;

use fake_llm::{FakeServer, Protocol};
use serde_json::{json, Value};
use support::cli::*;

/// The task every attempt here is given.
const GREET: &str = "write greet.py with hello() returning 'hello'";
const VERDICT_DONE: &str =
    "{\"done\": true, \"summary\": \"greet.py says hello\", \"remaining\": [], \"continuation_prompt\": \"\", \"is_stuck\": false, \"stuck_reason\": \"\"}";
const VERDICT_NOTHING_WRITTEN: &str = "{\"done\": false, \"summary\": \"greet.py was never written\", \"remaining\": [\"write greet.py\"], \"continuation_prompt\": \"Write greet.py.\", \"is_stuck\": false, \"stuck_reason\": \"\"}";

/// A repository on `main` whose check needs `greet.hello()` to say hello, and the person's own
/// uncommitted edit in it.
fn repo(dir: &Path) -> PathBuf {
    person_repo(dir, &[("check.py", "import greet\nassert greet.hello() == 'hello', greet.hello()\nprint('ok')\n")])
}

fn claim() -> Value {
    json!({"name": "complete_task", "arguments": {"status": "success", "summary": "greet.py says hello"}})
}

fn write_greet(word: &str) -> Value {
    json!({"name": "write_file", "arguments": {"path": "greet.py", "content": format!("def hello():\n    return '{word}'\n")}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_attempts_are_ranked_by_the_evidence_and_the_verified_one_lands_as_one_commit() {
    let (_server, e, r, url) = serving(json!([
            // The evaluator sees whether anything was written.
            {"when": {"kind": "evaluator", "any_message_contains": "Created greet.py"}, "reply": {"text": VERDICT_DONE}},
            {"when": {"kind": "evaluator"}, "reply": {"text": VERDICT_NOTHING_WRITTEN}},
            // Does the work, and says so once it is written.
            {"when": {"kind": "agent", "model": "good", "last_message_contains": "greet.py"}, "reply": {"text": "Writing greet.py.", "tool_calls": [write_greet("hello")]}, "times": 1},
            {"when": {"kind": "agent", "model": "good"}, "reply": {"text": "Done.", "tool_calls": [claim()]}},
            // Claims done without writing anything.
            {"when": {"kind": "agent", "model": "liar"}, "reply": {"text": "All done, greet.py says hello.", "tool_calls": [claim()]}},
            // Writes the wrong greeting, so the person's check fails.
            {"when": {"kind": "agent", "model": "wrong", "last_message_contains": "greet.py"}, "reply": {"text": "Writing greet.py.", "tool_calls": [write_greet("bye")]}, "times": 1},
            {"when": {"kind": "agent", "model": "wrong"}, "reply": {"text": "Done.", "tool_calls": [claim()]}}
        ])).await;
    let (ws, data, u) = (r.to_string_lossy().into_owned(), e.data.clone(), url.clone());
    let out = tokio::task::spawn_blocking(move || {
        finishline(
            &[
                "run",
                GREET,
                "--workspace",
                &ws,
                "--base-url",
                &u,
                "--model",
                "m",
                "--json",
                "--attempts",
                "builtin:liar,builtin:wrong,builtin:good",
                "--verify",
                "python3 check.py",
                "--continuation-budget",
                "1",
                "--allow",
                "all",
                "--review",
                "approve",
            ],
            &data,
        )
    })
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let all = lines(&out);
    assert_eq!(out.status.code(), Some(0), "the verified attempt lands: {stderr}\n{}", String::from_utf8_lossy(&out.stdout));
    let ranking = all.iter().find(|l| l["type"] == "ranking").expect("the ranking is printed")["ranking"].clone();
    let ranked: Vec<&Value> = ranking["ranking"].as_array().unwrap().iter().collect();
    let label = |i: usize| ranked[i]["evidence"]["label"].as_str().unwrap().to_string();
    assert_eq!(ranked.len(), 3);
    assert_eq!(label(0), "Finishline's agent (good)", "the one that did the work is first: {ranking}");
    // As every run with --json, it ends with a summary object: one per attempt, the decision in it.
    let summaries: Vec<&Value> = all.iter().filter(|l| l["type"] == "summary").collect();
    assert_eq!(summaries.len(), 3, "{}", String::from_utf8_lossy(&out.stdout));
    assert_eq!(all.last().unwrap()["type"], "summary", "the summaries come last");
    let good = summaries.iter().find(|s| s["session_id"] == ranked[0]["evidence"]["session"]).expect("the chosen attempt's summary");
    assert_eq!((good["decision"].as_str(), good["end_reason"].as_str()), (Some("approve"), Some("verified_done")), "{good}");
    assert!(good["counts"]["steps"].as_u64().unwrap() > 0 && good["landed_commit"].is_string(), "{good}");
    assert_eq!(ranked[0]["above_next"], "verified done", "and says why: {ranking}");
    assert_eq!(ranked[0]["evidence"]["checks_passed"], 1);
    let wrong = ranked.iter().find(|a| a["evidence"]["label"] == "Finishline's agent (wrong)").unwrap();
    assert_eq!(
        (wrong["evidence"]["checks_passed"].as_u64(), wrong["evidence"]["checks_run"].as_u64()),
        (Some(0), Some(1)),
        "its verification failed: {ranking}"
    );
    assert!(wrong["evidence"]["diff_lines"].as_u64().unwrap() > 0);
    let liar = ranked.iter().find(|a| a["evidence"]["label"] == "Finishline's agent (liar)").unwrap();
    assert_eq!(liar["evidence"]["files"], 0, "it changed nothing: {ranking}");
    assert!(ranking["all_ended"].as_bool().unwrap());

    // Landed as one commit on the person's branch, their own edit kept, nothing else left.
    assert_eq!(git(&r, &["rev-list", "--count", "main"]), "2", "one commit for the chosen attempt");
    assert_eq!(git(&r, &["show", "main:greet.py"]), "def hello():\n    return 'hello'");
    assert!(std::fs::read_to_string(r.join("README.md")).unwrap().contains("my own edit"), "the person's uncommitted edit is kept");
    assert_eq!(worktrees(&r), 1, "no attempt's worktree is left");
    assert_eq!(git(&r, &["branch", "--list", "finishline/*"]), "", "nor their branches");

    // The history shows the group, the choice, and the trust figures per agent.
    let group = ranking["group"].as_str().unwrap().to_string();
    let shown = finishline(&["sessions", "attempts", &group, "--json", "--workspace", &r.to_string_lossy(), "--base-url", &url, "--model", "m"], &e.data);
    assert_eq!(shown.status.code(), Some(0));
    let again = lines(&shown).into_iter().find(|l| l["type"] == "ranking").unwrap();
    assert_eq!(again["ranking"]["chosen"], ranked[0]["evidence"]["session"], "the chosen attempt is recorded");
    let stats = lines(&finishline(&["stats", "agents", "--json"], &e.data));
    let row = |model: &str| stats.iter().find(|s| s["model"] == model).unwrap_or_else(|| panic!("{model} in {stats:?}")).clone();
    assert_eq!((row("good")["verified_done"].as_u64(), row("good")["chosen"].as_u64(), row("good")["attempts_decided"].as_u64()), (Some(1), Some(1), Some(1)));
    assert_eq!((row("liar")["false_claims"].as_u64(), row("liar")["chosen"].as_u64()), (Some(1), Some(0)), "the liar was caught claiming done");
    assert_eq!(row("wrong")["false_claims"].as_u64(), Some(1), "so was the one whose check failed");
    assert_eq!(row("wrong")["reviews_decided"].as_u64(), Some(0), "set aside for a better attempt is not work the person refused");
    // A losing attempt's story says it was not chosen, not that the person rejected its work.
    let wrong_id = wrong["evidence"]["session"].as_str().unwrap();
    let md = String::from_utf8_lossy(&finishline(&["sessions", "show", wrong_id], &e.data).stdout).to_string();
    assert!(md.contains("**Review decision:** not chosen: another attempt was landed (automatically)"), "{md}");
    assert!(
        md.contains("- **Status:** Not chosen ·") && md.contains("**Decision:** not chosen: another attempt was landed\n"),
        "its header says so too, as the window's badge does: {md}"
    );
    // Landed by --review approve, nobody looked: no person's verdict on the evaluator.
    let judges = lines(&finishline(&["stats", "evaluator", "--json"], &e.data));
    assert!(judges.iter().all(|j| j["reviews"] == 0), "{judges:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attempts_need_a_repository_and_say_how_to_get_one() {
    let e = env();
    let out = finishline(
        &["run", "anything", "--workspace", &e.ws.to_string_lossy(), "--base-url", "http://127.0.0.1:9", "--model", "m", "--attempts", "builtin*2"],
        &e.data,
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("need a git repository") && err.contains("git init"), "{err}");
    // A repository with no commit yet is one: what it lacks is the commit, said as such.
    assert!(Command::new("git").args(["init", "-q"]).current_dir(&e.ws).status().unwrap().success());
    let out = finishline(
        &["run", "anything", "--workspace", &e.ws.to_string_lossy(), "--base-url", "http://127.0.0.1:9", "--model", "m", "--attempts", "builtin*2"],
        &e.data,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("is a git repository with no commit yet: commit once (git add -A; git commit -m start)"), "{err}");
    assert!(!err.contains("git init"), "{err}");
    let out = finishline(
        &["run", "anything", "--workspace", &e.ws.to_string_lossy(), "--base-url", "http://127.0.0.1:9", "--model", "m", "--attempts", "builtin*9"],
        &e.data,
    );
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("more than the limit of 4") && said.contains("`tasks.max_attempts` in the settings file"),
        "a way to raise it from the command line too: {said}"
    );
    // A misspelt agent alone: its name is what is wrong, not the count.
    let out = finishline(
        &["run", "anything", "--workspace", &e.ws.to_string_lossy(), "--base-url", "http://127.0.0.1:9", "--model", "m", "--attempts", "nope"],
        &e.data,
    );
    assert_eq!(out.status.code(), Some(2));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("nope is not installed here") && !said.contains("at least two"), "the agent's name first: {said}");
}

/// Attempts are judged when they end; a plan each one waits to have approved would leave them
/// all waiting and read as failed. The pair is refused before anything starts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attempts_with_plans_that_wait_for_a_go_ahead_are_refused_before_anything_starts() {
    let e = env();
    let r = repo(&e.ws);
    let ws = r.to_string_lossy();
    let args =
        ["run", "anything", "--workspace", &ws, "--base-url", "http://127.0.0.1:9", "--model", "m", "--attempts", "builtin*2", "--plan-review", "prompt"];
    let out = finishline(&args, &e.data);
    assert_eq!(out.status.code(), Some(2));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("--plan-review prompt") && said.contains("--attempts"), "{said}");
    let listed = finishline(&["sessions", "list", "--json"], &e.data);
    assert!(lines(&listed).iter().all(|l| l["type"] == "error"), "no attempt was started: {}", String::from_utf8_lossy(&listed.stdout));
}

/// The real Gemini CLI (npm, offline against the fake provider in Gemini's protocol) and
/// Finishline's own agent attempt the same task: the agent that wrote the file and passed the
/// person's check is ranked first for that reason and lands; the one that only claimed done is
/// caught doing so. `--attempts builtin,gemini` finds the agent the way a person's machine would,
/// on PATH.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_agent_and_finishlines_own_are_judged_alike_and_the_one_that_did_the_work_lands() {
    use agents::{agent_bin, Real};
    let real = Real::Gemini;
    let greet = "def hello():\n    return 'hello'\n";
    let mut rules = real.side_calls();
    rules.extend([
        {
            let mut write = real.turn(json!({}), json!({"text": "Writing greet.py.", "tool_calls": [real.write(Path::new("."), "greet.py", greet)]}));
            write["times"] = json!(1);
            write
        },
        real.turn(json!({}), json!({"text": "greet.py is written and says hello."})),
        // Finishline's own agent only claims it.
        json!({"when": {"kind": "agent", "protocol": "openai"}, "reply": {"text": "All done, greet.py says hello.", "tool_calls": [claim()]}}),
        agents::finishline_side_calls(),
    ]);
    // The evaluator is asked for both; it says done only where greet.py was written.
    rules.insert(0, json!({"when": {"kind": "evaluator", "protocol": "openai", "any_message_contains": "created greet.py"}, "reply": {"text": VERDICT_DONE}}));
    rules.insert(1, json!({"when": {"kind": "evaluator", "protocol": "openai"}, "reply": {"text": VERDICT_NOTHING_WRITTEN}}));
    let server = FakeServer::start(serde_json::from_value(json!({"rules": rules})).unwrap()).await.unwrap();
    let home = tempfile::tempdir().unwrap();
    let agent = real.agent(&server, home.path(), Some("fake-key"));
    let e = env();
    let r = repo(e._dir.path());
    let url = server.base_url(Protocol::Openai);
    let path = format!("{}:{}", agent_bin("gemini").parent().unwrap().display(), std::env::var("PATH").unwrap_or_default());
    let (ws, data) = (r.to_string_lossy().into_owned(), e.data.clone());
    let out = tokio::task::spawn_blocking(move || {
        Command::new(bin())
            .args(["run", GREET, "--workspace", &ws, "--base-url", &url, "--model", "m", "--json"])
            .args(["--attempts", "builtin,gemini", "--verify", "python3 check.py", "--continuation-budget", "1", "--allow", "all", "--review", "approve"])
            .arg("--data-dir")
            .arg(&data)
            .env_remove("OPENAI_API_KEY")
            .env("XDG_DATA_HOME", data.join("xdg"))
            .envs(&agent.env)
            .env("PATH", path)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let all = lines(&out);
    assert_eq!(out.status.code(), Some(0), "Gemini CLI's verified attempt lands: {stderr}\n{}", String::from_utf8_lossy(&out.stdout));
    let ranking = all.iter().find(|l| l["type"] == "ranking").expect("the ranking is printed")["ranking"].clone();
    let ranked = ranking["ranking"].as_array().unwrap();
    assert_eq!(ranked.len(), 2);
    assert!(ranked[0]["evidence"]["label"].as_str().unwrap().contains("Gemini"), "the real agent that did the work is first: {ranking}");
    assert_eq!(ranked[0]["above_next"], "verified done", "and says why: {ranking}");
    assert_eq!(ranked[0]["evidence"]["checks_passed"], 1, "the person's check passed on its work: {ranking}");
    assert_eq!(ranked[1]["evidence"]["files"], 0, "Finishline's agent changed nothing: {ranking}");
    assert_eq!(git(&r, &["show", "main:greet.py"]), greet.trim_end(), "Gemini CLI's file landed on the person's branch");
    assert_eq!(git(&r, &["rev-list", "--count", "main"]), "2", "as one commit");
    assert_eq!(worktrees(&r), 1, "no attempt's worktree is left");
    let stats = lines(&finishline(&["stats", "agents", "--json"], &e.data));
    let builtin = stats.iter().find(|s| s["model"] == "m").unwrap_or_else(|| panic!("Finishline's agent in {stats:?}"));
    assert_eq!(builtin["false_claims"], 1, "Finishline's own agent was caught claiming done: {stats:?}");
}

/// Where the attempt that wrote "# one" is shown first and the one that wrote "# two" second in
/// the evaluator's question, and the other way round (the end of one diff, then the next block).
const ONE_THEN_TWO: &str = "# one\n\n</diff>\n</attempt>\n<attempt name=\"second\">";
const TWO_THEN_ONE: &str = "# two\n\n</diff>\n</attempt>\n<attempt name=\"second\">";

/// The fake provider's rules for attempts `builtin:MODEL` that each write greet.py with the same
/// function and a comment of their own (`# one`, `# two`: the same size, so the rule finds them
/// equal) and claim done: the evaluator answers the comparison by `comparing`, and otherwise
/// judges the work done.
fn commented(comparing: Value, comments: &[(&str, &str)]) -> Value {
    let mut rules = comparing.as_array().cloned().unwrap_or_default();
    rules.push(json!({"when": {"kind": "evaluator"}, "reply": {"text": VERDICT_DONE}}));
    for (model, word) in comments {
        let file = write_file("greet.py", &format!("def hello():\n    return 'hello'  # {word}\n"));
        rules.push(json!({"when": {"kind": "agent", "model": model, "last_message_contains": "greet.py"}, "reply": {"text": "Writing.", "tool_calls": [file]}, "times": 1}));
    }
    rules.push(json!({"when": {"kind": "agent"}, "reply": {"text": "Done.", "tool_calls": [claim()]}}));
    Value::Array(rules)
}

/// Two attempts the rule finds equal (`a` writes `# one`, `b` writes `# two`), waiting for the
/// person, and an evaluator that prefers the one with "# two" whichever place it is shown in.
async fn two_preferred() -> Waiting {
    let prefer = |better: &str| json!({"text": format!("{{\"better\": \"{better}\", \"reason\": \"the comment of the second names the case\"}}")});
    let comparing = json!([
        {"when": {"kind": "evaluator", "last_message_contains": ONE_THEN_TWO}, "reply": prefer("second")},
        {"when": {"kind": "evaluator", "last_message_contains": TWO_THEN_ONE}, "reply": prefer("first")},
    ]);
    waiting(commented(comparing, &[("a", "one"), ("b", "two")])).await
}

/// How many worktrees the repository has, its own checkout included.
fn worktrees(r: &Path) -> usize {
    git(r, &["worktree", "list", "--porcelain"]).lines().filter(|l| l.starts_with("worktree ")).count()
}

fn write_file(path: &str, content: &str) -> Value {
    json!({"name": "write_file", "arguments": {"path": path, "content": content}})
}

/// Two attempts waiting for the person in a fresh repository, against the fake provider.
struct Waiting {
    /// Held for as long as the test asks the provider anything.
    _server: FakeServer,
    e: Env,
    r: PathBuf,
    url: String,
    group: String,
    /// Each attempt's session, by its model (`a`, `b`).
    sessions: std::collections::HashMap<String, String>,
}

/// The fake provider answering by `rules`, and two attempts (`builtin:a`, `builtin:b`) of the
/// task run to their ends.
async fn waiting(rules: Value) -> Waiting {
    waiting_for(rules, "builtin:a,builtin:b").await
}

/// The fake provider answering by `rules`, a fresh repository and data folder, and the
/// provider's address.
async fn serving(rules: Value) -> (FakeServer, Env, PathBuf, String) {
    let server = FakeServer::start(serde_json::from_value(json!({ "rules": rules })).unwrap()).await.unwrap();
    let e = env();
    let r = repo(e._dir.path());
    let url = server.base_url(Protocol::Openai);
    (server, e, r, url)
}

/// The fake provider answering by `rules`, and the attempts `spec` names run to their ends.
async fn waiting_for(rules: Value, spec: &str) -> Waiting {
    let (server, e, r, url) = serving(rules).await;
    let (group, sessions) = waiting_attempts(&e, &r, &url, spec);
    Waiting { _server: server, e, r, url, group, sessions }
}

/// `finishline run GREET --attempts SPEC` against the fake provider, verified by `check.py`, every
/// tool allowed, with `more` flags.
fn run_attempts(e: &Env, r: &Path, url: &str, spec: &str, more: &[&str]) -> std::process::Output {
    let ws = r.to_string_lossy();
    let mut args =
        vec!["run", GREET, "--workspace", &ws, "--base-url", url, "--model", "m", "--attempts", spec, "--verify", "python3 check.py", "--allow", "all"];
    args.extend_from_slice(more);
    finishline(&args, &e.data)
}

/// The attempts `spec` names (`builtin:a,builtin:b`) run to their reviews and wait for the
/// person; the group and each model's session.
fn waiting_attempts(e: &Env, r: &Path, url: &str, spec: &str) -> (String, std::collections::HashMap<String, String>) {
    let out = run_attempts(e, r, url, spec, &["--json"]);
    assert_eq!(out.status.code(), Some(6), "both wait for the person: {}", String::from_utf8_lossy(&out.stderr));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("` lands one on main"), "it says where choosing lands: {said}");
    let all = lines(&out);
    let ranking = all.iter().find(|l| l["type"] == "ranking").expect("the ranking is printed")["ranking"].clone();
    let sessions = ranking["ranking"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            let label = a["evidence"]["label"].as_str().unwrap();
            (label.trim_start_matches("Finishline's agent (").trim_end_matches(')').to_string(), a["evidence"]["session"].as_str().unwrap().to_string())
        })
        .collect();
    (ranking["group"].as_str().unwrap().to_string(), sessions)
}

fn ranking_of(e: &Env, r: &Path, group: &str, url: &str) -> Value {
    let shown = finishline(&["sessions", "attempts", group, "--json", "--workspace", &r.to_string_lossy(), "--base-url", url, "--model", "m"], &e.data);
    assert_eq!(shown.status.code(), Some(0), "{}", String::from_utf8_lossy(&shown.stderr));
    lines(&shown).into_iter().find(|l| l["type"] == "ranking").expect("a ranking")["ranking"].clone()
}

/// Approving an attempt from its own session (the session's review, not the group's screen) is
/// choosing it: the group records it as chosen, the other attempt is rejected and its worktree
/// removed, and nothing else can land after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approving_an_attempt_in_its_own_session_chooses_it_for_the_group() {
    let Waiting { _server, e, r, url, group, sessions } = waiting(json!([
        {"when": {"kind": "evaluator"}, "reply": {"text": VERDICT_DONE}},
        {"when": {"kind": "agent", "model": "a", "last_message_contains": "greet.py"}, "reply": {"text": "Writing.", "tool_calls": [write_greet("hello")]}, "times": 1},
        {"when": {"kind": "agent", "model": "b", "last_message_contains": "greet.py"}, "reply": {"text": "Writing.", "tool_calls": [write_file("greet.py", "def hello():\n    return 'hel' + 'lo'\n")]}, "times": 1},
        {"when": {"kind": "agent"}, "reply": {"text": "Done.", "tool_calls": [claim()]}}
    ]))
    .await;

    // `sessions list` names each attempt's group, which `sessions attempts` takes.
    let list = String::from_utf8_lossy(&finishline(&["sessions", "list"], &e.data).stdout).to_string();
    assert_eq!(list.matches(&format!("of 2, {group}")).count(), 2, "both attempts are tagged with their group: {list}");
    let before = ranking_of(&e, &r, &group, &url);
    assert_eq!(before["base_branch"], "main", "the group names the branch choosing one lands on: {before}");
    let approved = finishline(&["sessions", "review", &sessions["b"], "--approve"], &e.data);
    let said = String::from_utf8_lossy(&approved.stderr).to_string();
    assert_eq!(approved.status.code(), Some(0), "{said}");
    assert_eq!(git(&r, &["show", "main:greet.py"]), "def hello():\n    return 'hel' + 'lo'", "b's work landed");
    assert!(
        said.contains("Chose Finishline's agent (b); Finishline's agent (a) was set aside and its worktree removed, with what it wrote."),
        "an approve here chose for the group, and says what went with it: {said}"
    );
    assert!(!said.contains("had no review to choose from"), "the one set aside had a review, which the person passed over: {said}");
    let ranking = ranking_of(&e, &r, &group, &url);
    assert_eq!(ranking["chosen"], sessions["b"].as_str(), "the group records b as chosen: {ranking}");
    assert_eq!(worktrees(&r), 1, "a's worktree is removed");
    // a is listed as the window's badge says: not chosen, which nobody refused.
    let list = String::from_utf8_lossy(&finishline(&["sessions", "list"], &e.data).stdout).to_string();
    let row = list.lines().find(|l| l.starts_with(sessions["a"].as_str())).unwrap_or_else(|| panic!("{list}"));
    assert!(row.contains(&format!("[attempt 1 of 2, {group}, not chosen]")), "{list}");
    let aside = lines(&finishline(&["sessions", "list", "--status", "not_chosen", "--json"], &e.data));
    assert_eq!(aside.iter().map(|s| s["id"].as_str().unwrap()).collect::<Vec<_>>(), vec![sessions["a"].as_str()]);
    let as_the_window_says = lines(&finishline(&["sessions", "list", "--status", "Not chosen", "--json"], &e.data));
    assert_eq!(as_the_window_says, aside, "the badge's own words list the same");
    let other = finishline(&["sessions", "review", &sessions["a"], "--approve"], &e.data);
    assert_eq!(other.status.code(), Some(2), "a was put away: {}", String::from_utf8_lossy(&other.stderr));
    // Asked only to look, a decided review says what it is and where to read it, not to decide.
    let look = finishline(&["sessions", "review", &sessions["b"]], &e.data);
    let said = String::from_utf8_lossy(&look.stderr).to_string();
    assert!(!said.contains("say --approve"), "{said}");
    assert!(said.contains(&format!("session {} is already decided (completed): `finishline sessions show {}", sessions["b"], sessions["b"])), "{said}");
    assert_eq!(git(&r, &["rev-list", "--count", "main"]), "2", "one commit landed, not two");
}

/// A terminal that asks which attempt to land, while the person chooses one from another terminal
/// or the window: the question ends there, saying what was decided, and nothing typed after it
/// lands a second attempt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_terminals_choice_of_attempt_ends_when_one_is_chosen_elsewhere() {
    let (_server, e, r, url) = serving(json!([
        {"when": {"kind": "evaluator"}, "reply": {"text": VERDICT_DONE}},
        {"when": {"kind": "agent", "model": "a", "last_message_contains": "greet.py"}, "reply": {"text": "Writing.", "tool_calls": [write_greet("hello")]}, "times": 1},
        {"when": {"kind": "agent", "model": "b", "last_message_contains": "greet.py"}, "reply": {"text": "Writing.", "tool_calls": [write_file("greet.py", "def hello():\n    return 'hel' + 'lo'\n")]}, "times": 1},
        {"when": {"kind": "agent"}, "reply": {"text": "Done.", "tool_calls": [claim()]}}
    ]))
    .await;
    let ws = r.to_string_lossy().into_owned();
    let args = [
        "run",
        GREET,
        "--workspace",
        &ws,
        "--base-url",
        &url,
        "--model",
        "m",
        "--attempts",
        "builtin:a,builtin:b",
        "--verify",
        "python3 check.py",
        "--allow",
        "all",
    ];
    let mut terminal = in_a_terminal(&args, &e.data);
    let seen = collect(terminal.stdout.take().unwrap());
    let asked = tokio::task::block_in_place(|| until_seen(&seen, 120, |s| s.contains("Land which attempt")));
    assert!(asked, "the terminal asks which attempt to land: {}", seen.lock().unwrap());
    let listed = lines(&finishline(&["sessions", "list", "--json"], &e.data));
    let group = listed[0]["attempt"]["group"].as_str().unwrap_or_else(|| panic!("{listed:?}")).to_string();
    let b = listed.iter().find(|s| s["model"] == "b").unwrap()["id"].as_str().unwrap().to_string();
    let chose = finishline(&["sessions", "attempts", &group, "--choose", &b, "--workspace", &ws], &e.data);
    assert_eq!(chose.status.code(), Some(0), "{}", String::from_utf8_lossy(&chose.stderr));
    let status = tokio::task::block_in_place(|| exits_within(&mut terminal, 15));
    let said = seen.lock().unwrap().clone();
    assert_eq!(status.and_then(|s| s.code()), Some(0), "the terminal stops asking once an attempt is chosen: {said}");
    assert!(said.contains("Chosen elsewhere (another terminal or the window)"), "it says what happened: {said}");
    assert_eq!(git(&r, &["rev-list", "--count", "main"]), "2", "one attempt landed");
    assert_eq!(git(&r, &["show", "main:greet.py"]), "def hello():\n    return 'hel' + 'lo'", "the one chosen elsewhere");
}

/// An attempt sent back with "Request changes" is ranked, compared and shown on everything it
/// would land, both rounds, not only the last one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attempt_sent_back_is_ranked_on_everything_it_would_land() {
    let notes = write_file("NOTES.md", "notes\n");
    let Waiting { _server, e, r, url, group, sessions } = waiting(json!([
        {"when": {"kind": "evaluator"}, "reply": {"text": VERDICT_DONE}},
        {"when": {"kind": "agent", "model": "a", "last_message_contains": "also write NOTES.md"}, "reply": {"text": "Adding notes.", "tool_calls": [notes]}, "times": 1},
        // One rule per attempt: shared, whichever attempt asked twice first took both writes.
        {"when": {"kind": "agent", "model": "b", "last_message_contains": "Created greet.py"}, "reply": {"text": "Adding notes.", "tool_calls": [notes]}, "times": 1},
        {"when": {"kind": "agent", "model": "a", "last_message_contains": "greet.py"}, "reply": {"text": "Writing.", "tool_calls": [write_greet("hello")]}, "times": 1},
        {"when": {"kind": "agent", "model": "b", "last_message_contains": "greet.py"}, "reply": {"text": "Writing.", "tool_calls": [write_greet("hello")]}, "times": 1},
        {"when": {"kind": "agent"}, "reply": {"text": "Done.", "tool_calls": [claim()]}}
    ]))
    .await;
    _server.clear_requests();
    // Sent back without naming a model: a's agent goes on as a, and its new round is judged by
    // the evaluator that judged the group (m, the run's --model), not by a.
    let sent_back =
        finishline(&["sessions", "review", &sessions["a"], "--request-changes", "also write NOTES.md", "--base-url", &url, "--allow", "all"], &e.data);
    assert_eq!(sent_back.status.code(), Some(6), "it waits for the person again: {}", String::from_utf8_lossy(&sent_back.stderr));
    let asked: Vec<(String, String)> = _server.requests().iter().map(|q| (format!("{:?}", q.kind), q.model.clone())).collect();
    assert!(asked.iter().any(|(k, m)| k == "Agent" && m == "a"), "{asked:?}");
    assert!(asked.iter().any(|(k, _)| k == "Evaluator"), "{asked:?}");
    assert!(asked.iter().filter(|(k, _)| k == "Evaluator").all(|(_, m)| m == "m"), "the same judge as the first round: {asked:?}");

    let ranking = ranking_of(&e, &r, &group, &url);
    let of = |k: &str| ranking["ranking"].as_array().unwrap().iter().find(|a| a["evidence"]["session"] == sessions[k].as_str()).unwrap()["evidence"].clone();
    let (a, b) = (of("a"), of("b"));
    assert_eq!((a["files"].as_u64(), b["files"].as_u64()), (Some(2), Some(2)), "a's two rounds count as two files, as b's one round: {ranking}");
    assert_eq!(a["diff_lines"], b["diff_lines"], "the same work, the same size: {ranking}");
}

/// A group the person wants none of is put away whole: the attempt waiting for review is
/// rejected, the one that failed (no review, its worktree kept as undecided work until now) has
/// its worktree removed too, nothing lands, and the group cannot be put away twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rejecting_a_whole_group_removes_every_attempts_worktree_and_lands_nothing() {
    let Waiting { _server, e, r, url, group, sessions } = waiting(json!([
        {"when": {"kind": "evaluator"}, "reply": {"text": VERDICT_DONE}},
        {"when": {"kind": "agent", "model": "b"}, "reply": {"fault": {"type": "status", "status": 400, "body": "{\"error\": {\"message\": \"model b is not served here\\u001b]0;pwned\\u0007\"}}"}}},
        {"when": {"kind": "agent", "last_message_contains": "greet.py"}, "reply": {"text": "Writing.", "tool_calls": [write_greet("hello")]}, "times": 1},
        {"when": {"kind": "agent"}, "reply": {"text": "Done.", "tool_calls": [claim()]}}
    ]))
    .await;
    let ranking = ranking_of(&e, &r, &group, &url);
    let failed = ranking["ranking"].as_array().unwrap().iter().find(|a| a["evidence"]["session"] == sessions["b"].as_str()).unwrap()["evidence"].clone();
    assert!(failed["error"].as_str().is_some_and(|m| m.contains("not served here")), "the failed attempt says why, in the provider's words: {failed}");
    // Read in the terminal, the provider's words cannot drive it (the escape is the server's).
    let shown = finishline(&["sessions", "attempts", &group, "--workspace", &r.to_string_lossy()], &e.data);
    assert!(String::from_utf8_lossy(&shown.stdout).contains("not served here"), "{}", String::from_utf8_lossy(&shown.stdout));
    assert!(!shown.stdout.iter().any(|b| *b == 0x1b || *b == 0x07), "{:?}", String::from_utf8_lossy(&shown.stdout));
    assert_eq!(worktrees(&r), 3, "both attempts' worktrees wait: one for review, the failed one as undecided work");
    // The failed one is put away with its group (discard refuses an attempt): the way said is that.
    let failed_review = finishline(&["sessions", "review", &sessions["b"]], &e.data);
    let said = String::from_utf8_lossy(&failed_review.stderr).to_string();
    assert!(said.contains(&format!("or put it away with its group (`finishline sessions attempts {group} --reject")), "{said}");
    assert!(!said.contains("sessions discard"), "{said}");
    // A group is named as a session is: by its start as shown without `grp_`, or by its end.
    let start = &group["grp_".len()..16];
    let compare = finishline(&["sessions", "attempts", start, "--compare", "--workspace", &r.to_string_lossy(), "--base-url", &url, "--model", "m"], &e.data);
    assert_eq!(compare.status.code(), Some(2), "one attempt has nothing to compare: {}", String::from_utf8_lossy(&compare.stderr));
    assert!(
        String::from_utf8_lossy(&compare.stderr).contains("only 1 of the 2 attempts has work waiting to land"),
        "{}",
        String::from_utf8_lossy(&compare.stderr)
    );

    let out = finishline(&["sessions", "attempts", &group[group.len() - 6..], "--reject", "--workspace", &r.to_string_lossy()], &e.data);
    assert_eq!(out.status.code(), Some(3), "rejected, as `sessions review --reject` says it: {}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("2 attempts"), "it says what it put away: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(worktrees(&r), 1, "no attempt's worktree is left");
    assert_eq!(git(&r, &["branch", "--list", "finishline/*"]), "", "nor their branches");
    assert_eq!(git(&r, &["rev-list", "--count", "main"]), "1", "nothing landed");
    assert_eq!(ranking_of(&e, &r, &group, &url)["put_away"], true, "the group says it was rejected whole, the failed attempt included");
    let again = finishline(&["sessions", "attempts", &group, "--reject", "--workspace", &r.to_string_lossy()], &e.data);
    assert_eq!(again.status.code(), Some(2), "already put away: {}", String::from_utf8_lossy(&again.stderr));

    // A group given where a session is asked for, and a session where a group is, point the
    // way to what was meant.
    let shown = finishline(&["sessions", "show", &group], &e.data);
    assert_eq!(shown.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&shown.stderr).contains(&format!("{group} is a group of attempts, not a session: `finishline sessions attempts {group}")),
        "{}",
        String::from_utf8_lossy(&shown.stderr)
    );
    let as_group = finishline(&["sessions", "attempts", &sessions["a"]], &e.data);
    assert_eq!(as_group.status.code(), Some(2));
    let said = String::from_utf8_lossy(&as_group.stderr).to_string();
    assert!(
        said.contains(&format!("{} is a session, attempt ", sessions["a"]))
            && said.contains(&format!(" of 2 of the group {group}: `finishline sessions attempts {group}")),
        "{said}"
    );
    let empty = finishline(&["sessions", "show", ""], &e.data);
    assert!(String::from_utf8_lossy(&empty.stderr).contains("no session id given"), "{}", String::from_utf8_lossy(&empty.stderr));

    // With none chosen, the group is exported whole: what each attempt did, in one document.
    let md = finishline(&["sessions", "export", &group], &e.data);
    let text = String::from_utf8_lossy(&md.stdout).to_string();
    assert_eq!(md.status.code(), Some(0), "{}", String::from_utf8_lossy(&md.stderr));
    assert!(text.starts_with("# Attempts: "), "{text}");
    assert!(text.contains("None was chosen: you rejected every attempt."), "{text}");
    for n in 1..=2 {
        assert!(text.contains(&format!("# Attempt {n} of 2: ")), "every attempt's own session: {text}");
    }
    assert!(text.contains("not served here"), "the failed one says why: {text}");
    let json = finishline(&["sessions", "export", &group[group.len() - 6..], "--json"], &e.data);
    let doc: Value = serde_json::from_slice(&json.stdout).unwrap_or_else(|err| panic!("{err}: {}", String::from_utf8_lossy(&json.stdout)));
    assert_eq!(doc["format"], "finishline-attempts");
    assert_eq!(doc["group"], group.as_str());
    assert_eq!(doc["put_away"], true);
    let exported: Vec<&str> = doc["attempts"].as_array().unwrap().iter().map(|a| a["session"]["id"].as_str().unwrap()).collect();
    assert_eq!(exported.len(), 2);
    assert!(exported.contains(&sessions["a"].as_str()) && exported.contains(&sessions["b"].as_str()), "{doc}");
}

/// A terminal that went away (SIGHUP, a closed window) fails every write to standard error: the
/// CLI says what it can and goes on, never a panic half way (which would skip ending what the
/// attempts started).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_rejected_with_nobody_reading_standard_error_is_rejected_whole_without_a_panic() {
    let Waiting { e, r, group, .. } = waiting(commented(json!([]), &[("a", "one"), ("b", "two")])).await;
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = command(&["sessions", "attempts", &group, "--reject", "--workspace", &r.to_string_lossy()], &e.data)
        .stdout(std::process::Stdio::piped())
        .stderr(writer)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "rejected, as with a terminal to read it");
    assert_eq!(worktrees(&r), 1, "no attempt's worktree is left");
}

/// Rejecting a group never throws away a commit Finishline did not make: the failed attempt's
/// worktree, where the person committed their own work, goes, and its branch stays with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rejecting_a_group_keeps_an_attempts_branch_that_holds_the_persons_commit() {
    let Waiting { _server, e, r, url: _, group, sessions } = waiting(json!([
        {"when": {"kind": "evaluator"}, "reply": {"text": VERDICT_DONE}},
        {"when": {"kind": "agent", "model": "b"}, "reply": {"fault": {"type": "status", "status": 400, "body": "{\"error\": {\"message\": \"model b is not served here\"}}"}}},
        {"when": {"kind": "agent", "last_message_contains": "greet.py"}, "reply": {"text": "Writing.", "tool_calls": [write_greet("hello")]}, "times": 1},
        {"when": {"kind": "agent"}, "reply": {"text": "Done.", "tool_calls": [claim()]}}
    ]))
    .await;
    // The failed attempt's worktree and branch, found by its session id as its branch names it.
    let id = sessions["b"].as_str();
    let list = git(&r, &["worktree", "list", "--porcelain"]);
    let entry = list.split("\n\n").find(|w| w.contains(&format!("-{}", &id[id.len() - 6..]))).expect("the failed attempt's worktree").to_string();
    let folder = PathBuf::from(entry.lines().next().unwrap().trim_start_matches("worktree "));
    let branch = entry.lines().find_map(|l| l.strip_prefix("branch refs/heads/")).unwrap().to_string();
    std::fs::write(folder.join("mine.txt"), "the person's work\n").unwrap();
    git(&folder, &["add", "mine.txt"]);
    git(&folder, &["-c", "user.name=P", "-c", "user.email=p@p", "commit", "-q", "-m", "mine"]);
    let out = finishline(&["sessions", "attempts", &group, "--reject", "--workspace", &r.to_string_lossy()], &e.data);
    assert_eq!(out.status.code(), Some(3), "rejected, as `sessions review --reject` says it: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(worktrees(&r), 1, "no attempt's worktree is left");
    assert_eq!(
        git(&r, &["branch", "--list", "finishline/*"]).trim_start_matches(['*', '+', ' ']),
        branch,
        "the branch with the person's commit stays, the other goes"
    );
    assert_eq!(git(&r, &["show", &format!("{branch}:mine.txt")]), "the person's work");
}

/// The evaluator compares the attempts when the person asks: its word is shown on each attempt
/// against the next, and where the rule finds two equal it is asked both ways round and its
/// preference, when both answers agree, orders them. Its tokens are not the attempts' own, and a
/// later review of either attempt makes its word stale.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_evaluator_compares_attempts_on_request_and_orders_only_what_the_rule_finds_equal() {
    let Waiting { _server, e, r, url, group, sessions } = two_preferred().await;
    let before = ranking_of(&e, &r, &group, &url);
    let order = |ranking: &Value| -> Vec<String> {
        ranking["ranking"].as_array().unwrap().iter().map(|a| a["evidence"]["session"].as_str().unwrap().to_string()).collect()
    };
    assert_eq!(order(&before), vec![sessions["a"].clone(), sessions["b"].clone()], "equal by the rule, in the order they started: {before}");
    assert_eq!(before["ranking"][0]["above_next"], Value::Null, "the rule finds them equal: {before}");
    assert_eq!(before["places"], json!(["=1", "=1"]), "the places every front end shows: {before}");
    let tokens_before: Vec<Value> = before["ranking"].as_array().unwrap().iter().map(|a| a["evidence"]["tokens"].clone()).collect();

    let ws = r.to_string_lossy().into_owned();
    // Named no server: the attempts' own is asked, as `resume` and `review` do. Named another
    // agent model, the judge is still the one that judged the group (m), as for a follow-up.
    _server.clear_requests();
    let compared = finishline(&["sessions", "attempts", &group, "--compare", "--workspace", &ws, "--model", "z"], &e.data);
    assert_eq!(compared.status.code(), Some(0), "{}", String::from_utf8_lossy(&compared.stderr));
    let judges: Vec<String> = _server.requests().iter().filter(|q| format!("{:?}", q.kind) == "Evaluator").map(|q| q.model.clone()).collect();
    assert!(!judges.is_empty() && judges.iter().all(|m| m == "m"), "the group's own evaluator compares them: {judges:?}");
    let shown = finishline(&["sessions", "attempts", &group, "--json", "--workspace", &ws, "--base-url", &url, "--model", "z"], &e.data);
    let shown = lines(&shown).into_iter().find(|l| l["type"] == "ranking").expect("a ranking")["ranking"].clone();
    assert_eq!(shown["judge"], "m", "the ranking names the judge a comparison asks, for the window to tell its answers: {shown}");
    let text = String::from_utf8_lossy(&compared.stdout);
    assert!(
        text.contains("the evaluator, shown Finishline's agent (a) first and Finishline's agent (b) second, prefers Finishline's agent (b): the comment of the second names the case"),
        "its word is printed, naming the attempts: {text}"
    );
    let after = ranking_of(&e, &r, &group, &url);
    assert_eq!(order(&after), vec![sessions["b"].clone(), sessions["a"].clone()], "both ways round it prefers b, which orders the tie: {after}");
    assert_eq!(after["ranking"][0]["above_next"], "the rule finds them equal; the evaluator prefers it");
    assert_eq!(after["places"], json!(["1", "2"]), "ordered, they no longer share a place: {after}");
    let tokens_after: Vec<Value> = after["ranking"].as_array().unwrap().iter().rev().map(|a| a["evidence"]["tokens"].clone()).collect();
    assert_eq!(tokens_after, tokens_before, "asking the evaluator adds nothing to an attempt's own tokens");
    assert!(after["comparison_tokens"].as_u64().is_some_and(|t| t > 0), "what it cost is shown on its own: {after}");
    assert!(text.contains("asking the evaluator to compare them took"), "{text}");

    let sent_back =
        finishline(&["sessions", "review", &sessions["a"], "--request-changes", "once more", "--base-url", &url, "--model", "m", "--allow", "all"], &e.data);
    assert_eq!(sent_back.status.code(), Some(6), "{}", String::from_utf8_lossy(&sent_back.stderr));
    let stale = ranking_of(&e, &r, &group, &url);
    assert!(stale["ranking"].as_array().unwrap().iter().all(|a| a["evaluator"].is_null()), "a new review of a makes the comparison stale: {stale}");
    assert!(!stale.to_string().contains("the evaluator prefers it"), "nor does its preference order anything: {stale}");
}

/// Three attempts the rule finds equal, where the evaluator consistently prefers c to b to a:
/// each answer that reorders the tie makes new neighbours, and they are asked in turn, so the
/// ranking ends c, b, a. Asked again, it asks nothing: each pair already has its answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_equal_attempts_are_ordered_by_asking_about_each_new_pair_of_neighbours() {
    // "# X" ends the first attempt's diff: which comes first in the question.
    let first_is = |word: &str| format!("# {word}\n\n</diff>\n</attempt>\n<attempt name=\"second\">");
    let prefer = |better: &str| json!({"text": format!("{{\"better\": \"{better}\", \"reason\": \"the {better} one names its case\"}}")});
    let Waiting { _server, e, r, url, group, sessions } = waiting_for(
        commented(
            json!([
                {"when": {"kind": "evaluator", "last_message_contains": first_is("one")}, "reply": prefer("second")},
                {"when": {"kind": "evaluator", "last_message_contains": first_is("six")}, "reply": prefer("first")},
                // "# two" first: better than "# one" second, worse than "# six" second.
                {"when": {"kind": "evaluator", "last_message_contains": first_is("two"), "last_message_not_contains": "# six"}, "reply": prefer("first")},
                {"when": {"kind": "evaluator", "last_message_contains": first_is("two")}, "reply": prefer("second")},
            ]),
            &[("a", "one"), ("b", "two"), ("c", "six")],
        ),
        "builtin:a,builtin:b,builtin:c",
    )
    .await;
    let order = |ranking: &Value| -> Vec<String> {
        ranking["ranking"].as_array().unwrap().iter().map(|a| a["evidence"]["session"].as_str().unwrap().to_string()).collect()
    };
    let before = ranking_of(&e, &r, &group, &url);
    assert_eq!(order(&before), vec![sessions["a"].clone(), sessions["b"].clone(), sessions["c"].clone()], "equal by the rule: {before}");
    _server.clear_requests();

    let ws = r.to_string_lossy().into_owned();
    let compare = || finishline(&["sessions", "attempts", &group, "--compare", "--workspace", &ws, "--base-url", &url, "--model", "m"], &e.data);
    let compared = compare();
    assert_eq!(compared.status.code(), Some(0), "{}", String::from_utf8_lossy(&compared.stderr));
    let after = ranking_of(&e, &r, &group, &url);
    assert_eq!(order(&after), vec![sessions["c"].clone(), sessions["b"].clone(), sessions["a"].clone()], "c above b above a: {after}");
    for place in [0, 1] {
        assert_eq!(after["ranking"][place]["above_next"], "the rule finds them equal; the evaluator prefers it", "{after}");
        assert!(after["ranking"][place]["evaluator"].is_object(), "its word on each pair shown: {after}");
    }
    let questions = |server: &FakeServer| server.requests().iter().filter(|q| q.last_message.contains("<attempt name=\"second\">")).count();
    assert_eq!(questions(&_server), 6, "three pairs, each asked both ways round, each once");

    let again = compare();
    assert_eq!(again.status.code(), Some(0), "{}", String::from_utf8_lossy(&again.stderr));
    assert_eq!(questions(&_server), 6, "asked again, it asks nothing: each pair has its answer");
    assert!(String::from_utf8_lossy(&again.stderr).contains("Each pair already has m's answer"), "{}", String::from_utf8_lossy(&again.stderr));
    assert_eq!(order(&ranking_of(&e, &r, &group, &url)), order(&after));

    let chose = finishline(&["sessions", "attempts", &group, "--choose", "1", "--workspace", &ws, "--base-url", &url, "--model", "m"], &e.data);
    assert_eq!(chose.status.code(), Some(0), "{}", String::from_utf8_lossy(&chose.stderr));
    let decided = ranking_of(&e, &r, &group, &url);
    assert_eq!(decided["chosen"], sessions["c"].as_str(), "{decided}");
    assert!(decided["ranking"][0]["evaluator"].is_object(), "once decided, what the evaluator said stays shown: {decided}");
}

/// An attempt rejected on its own still ranks between the two others, which the evaluator is
/// asked about as neighbours: the one put away is out of the contest, not a wall between them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_attempts_with_work_are_compared_and_one_the_person_rejected_leaves_the_ranking() {
    let Waiting { _server, e, r, url, group, sessions } = waiting_for(
        commented(
        json!([
            {"when": {"kind": "evaluator", "last_message_contains": "<attempt name=\"second\">"}, "reply": {"text": "{\"better\": \"neither\", \"reason\": \"both write the same function\"}"}},
        ]),
        &[("a", "one"), ("b", "two"), ("c", "six")]),
        "builtin:a,builtin:b,builtin:c",
    )
    .await;
    let rejected = finishline(&["sessions", "review", &sessions["b"], "--reject", "--base-url", &url, "--model", "m"], &e.data);
    assert_eq!(rejected.status.code(), Some(3), "{}", String::from_utf8_lossy(&rejected.stderr));
    let before = ranking_of(&e, &r, &group, &url);
    // Refused by the person, b is out of the choice: listed last, with no place.
    assert_eq!(before["ranking"][2]["evidence"]["session"], sessions["b"].as_str(), "b, rejected in its own review, is listed last: {before}");
    assert_eq!((before["ranking"][2]["rank"].as_u64(), before["ranking"][2]["evidence"]["refused"].as_bool()), (Some(0), Some(true)), "{before}");
    assert_eq!(before["ranking"][1]["rank"], 2, "the other two keep their places: {before}");
    let shown = String::from_utf8_lossy(&finishline(&["sessions", "attempts", &group, "--workspace", &r.to_string_lossy()], &e.data).stdout).to_string();
    assert!(shown.contains("–. Finishline's agent (b) — verified_done, rejected by you: out of the choice"), "{shown}");
    assert!(!shown.contains("=2."), "c is not level with the one rejected: {shown}");
    assert!(shown.contains(" · diff 2 lines in 1 file · "), "counted in words: {shown}");
    _server.clear_requests();

    let ws = r.to_string_lossy().into_owned();
    let compared = finishline(&["sessions", "attempts", &group, "--compare", "--workspace", &ws, "--base-url", &url, "--model", "m"], &e.data);
    assert_eq!(compared.status.code(), Some(0), "{}", String::from_utf8_lossy(&compared.stderr));
    let asked = _server.requests().iter().filter(|q| q.last_message.contains("<attempt name=\"second\">")).count();
    assert_eq!(asked, 2, "a and c, tied by the rule, asked both ways round");
    let after = ranking_of(&e, &r, &group, &url);
    let word = &after["ranking"][0]["evaluator"];
    assert_eq!(word["first"], "Finishline's agent (a)", "{after}");
    assert_eq!(word["second"], "Finishline's agent (c)", "the word on a is about c, past b: {after}");
    assert!(after["ranking"][1]["evaluator"].is_null(), "{after}");

    // The rest rejected whole: b was still refused on its own, before, and stays told apart.
    let put_away = finishline(&["sessions", "attempts", &group, "--reject", "--workspace", &ws], &e.data);
    assert_eq!(put_away.status.code(), Some(3), "{}", String::from_utf8_lossy(&put_away.stderr));
    let away = ranking_of(&e, &r, &group, &url);
    assert_eq!(away["put_away"], true, "{away}");
    assert_eq!(away["ranking"][2]["evidence"]["session"], sessions["b"].as_str(), "{away}");
    assert_eq!((away["ranking"][2]["rank"].as_u64(), away["ranking"][2]["evidence"]["refused"].as_bool()), (Some(0), Some(true)), "{away}");
    assert_eq!(
        (away["ranking"][0]["rank"].as_u64(), away["ranking"][1]["rank"].as_u64()),
        (Some(1), Some(2)),
        "the two put away with the group keep their places: {away}"
    );
    let md = String::from_utf8_lossy(&finishline(&["sessions", "export", &group], &e.data).stdout).to_string();
    assert!(md.contains(&format!("- –. Finishline's agent (b) (`{}`) · rejected by you: out of the choice", sessions["b"])), "{md}");
    assert!(md.contains("None was chosen: you rejected Finishline's agent (b) in its own review, then the other 2 together."), "{md}");
    let told = String::from_utf8_lossy(&finishline(&["sessions", "show", &sessions["a"]], &e.data).stdout).to_string();
    assert!(told.contains("**Review decision:** rejected with the other attempts (by you)\n"), "{told}");
}

/// The evaluator's answer is about reviews waiting for the person: once one of them is decided
/// (here the attempt is rejected on its own), the answer no longer orders anything.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_comparison_goes_stale_once_either_review_is_decided() {
    let Waiting { _server, e, r, url, group, sessions } = two_preferred().await;
    let ws = r.to_string_lossy().into_owned();
    let compared = finishline(&["sessions", "attempts", &group, "--compare", "--workspace", &ws, "--base-url", &url, "--model", "m"], &e.data);
    assert_eq!(compared.status.code(), Some(0), "{}", String::from_utf8_lossy(&compared.stderr));
    assert_eq!(ranking_of(&e, &r, &group, &url)["ranking"][0]["evidence"]["session"], sessions["b"].as_str(), "the evaluator's preference orders the tie");

    let rejected = finishline(&["sessions", "review", &sessions["b"], "--reject", "--base-url", &url, "--model", "m"], &e.data);
    assert_eq!(rejected.status.code(), Some(3), "{}", String::from_utf8_lossy(&rejected.stderr));
    let after = ranking_of(&e, &r, &group, &url);
    assert!(after["ranking"].as_array().unwrap().iter().all(|a| a["evaluator"].is_null()), "the answer about b's decided review is stale: {after}");
    assert!(!after.to_string().contains("the evaluator prefers it"), "{after}");
    assert_eq!(after["ranking"][0]["evidence"]["session"], sessions["a"].as_str(), "a, still waiting, is first: {after}");

    // Choosing a leaves b as the person left it: refused in its own review, not put away again.
    let store = finishline_engine::store::Store::open(&e.data.join("history.db"), std::sync::Arc::new(finishline_engine::clock::SystemClock)).unwrap();
    let b = finishline_engine::domain::SessionId(sessions["b"].clone());
    let before = store.session(&b).unwrap().last_seq;
    let chosen = finishline(&["sessions", "attempts", &group, "--choose", &sessions["a"], "--workspace", &ws], &e.data);
    assert_eq!(chosen.status.code(), Some(0), "{}", String::from_utf8_lossy(&chosen.stderr));
    let since: Vec<String> = store.events(&b, before).unwrap().iter().map(|e| e.event.type_name().to_string()).collect();
    assert!(since.is_empty(), "nothing more happens to the attempt the person rejected: {since:?}");
    assert!(String::from_utf8_lossy(&chosen.stderr).starts_with("Chose "), "{}", String::from_utf8_lossy(&chosen.stderr));
}

/// Ctrl+C while the evaluator is slow to compare stops it at once, records no half-answered
/// pair, and leaves the attempts to be compared again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_stops_a_slow_comparison_at_once_and_it_can_be_asked_again() {
    let Waiting { _server, e, r, url, group, .. } = waiting(commented(json!([
        // The first time it is asked to compare, the evaluator says nothing for a minute.
        {"when": {"kind": "evaluator", "last_message_contains": "<attempt name=\"second\">"}, "reply": {"text": "", "fault": {"type": "stall_after", "frames": 0, "ms": 60000}}, "times": 1},
        {"when": {"kind": "evaluator", "last_message_contains": "<attempt name=\"second\">"}, "reply": {"text": "{\"better\": \"neither\", \"reason\": \"both write the same function\"}"}},
    ]), &[("a", "one"), ("b", "two")]))
    .await;
    let ws = r.to_string_lossy().into_owned();
    let child = spawn_finishline(&["sessions", "attempts", &group, "--compare", "--workspace", &ws, "--base-url", &url, "--model", "m"], &e.data);
    until_asked(&_server, "<attempt name=\"second\">", "the evaluator was never asked to compare").await;
    let stopped_at = std::time::Instant::now();
    assert!(Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap().success());
    let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap()).await.unwrap();
    let took = stopped_at.elapsed();
    assert_eq!(out.status.code(), Some(5), "stopped is cancelled: {}", String::from_utf8_lossy(&out.stderr));
    assert!(took < std::time::Duration::from_secs(20), "it stopped at once, not when the evaluator answered: {took:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("Stopped: the evaluator's answers given before it was stopped are kept"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let after = ranking_of(&e, &r, &group, &url);
    assert!(after["ranking"].as_array().unwrap().iter().all(|a| a["evaluator"].is_null()), "no half-answered pair is recorded: {after}");

    let again = finishline(&["sessions", "attempts", &group, "--compare", "--workspace", &ws, "--base-url", &url, "--model", "m"], &e.data);
    assert_eq!(again.status.code(), Some(0), "{}", String::from_utf8_lossy(&again.stderr));
    assert!(String::from_utf8_lossy(&again.stdout).contains("both write the same function"), "{}", String::from_utf8_lossy(&again.stdout));
}

/// A comparison stopped while the evaluator is asked again (its first answer gave no reason)
/// still counts the tokens of the answer it was paid for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_comparison_stopped_while_asked_again_counts_the_tokens_of_the_answer_before() {
    let Waiting { _server, e, r, url, group, .. } = waiting(commented(json!([
        {"when": {"kind": "evaluator", "any_message_contains": "could not be used"}, "reply": {"text": "", "fault": {"type": "stall_after", "frames": 0, "ms": 60000}}},
        {"when": {"kind": "evaluator", "last_message_contains": "<attempt name=\"second\">"}, "reply": {"text": "{\"better\": \"first\", \"reason\": \"first\"}"}},
    ]), &[("a", "one"), ("b", "two")]))
    .await;
    let ws = r.to_string_lossy().into_owned();
    let child = spawn_finishline(&["sessions", "attempts", &group, "--compare", "--workspace", &ws, "--base-url", &url, "--model", "m"], &e.data);
    until_asked(&_server, "could not be used", "the evaluator was never asked again").await;
    assert!(Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap().success());
    let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap()).await.unwrap();
    assert_eq!(out.status.code(), Some(5), "stopped is cancelled: {}", String::from_utf8_lossy(&out.stderr));
    let after = ranking_of(&e, &r, &group, &url);
    assert!(after["ranking"].as_array().unwrap().iter().all(|a| a["evaluator"].is_null()), "no answer is recorded: {after}");
    assert!(after["comparison_tokens"].as_u64().is_some_and(|t| t > 0), "the first answer's tokens are counted: {after}");
}

/// Waits until the fake provider was sent a last message holding `words` (at most 30 s).
async fn until_asked(server: &FakeServer, words: &str, never: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !server.requests().iter().any(|q| q.last_message.contains(words)) {
        assert!(std::time::Instant::now() < deadline, "{never}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// An evaluator that prefers whichever attempt it is shown first has no preference the ranking
/// can use: asked both ways round, its answers disagree, and the screen says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_preference_that_follows_the_order_of_asking_orders_nothing() {
    let Waiting { _server, e, r, url, group, sessions } = waiting(commented(json!([
        {"when": {"kind": "evaluator", "last_message_contains": "<attempt name=\"second\">"}, "reply": {"text": "{\"better\": \"second\", \"reason\": \"the second one reads better\"}"}},
    ]), &[("a", "one"), ("b", "two")]))
    .await;
    let compared =
        finishline(&["sessions", "attempts", &group, "--compare", "--workspace", &r.to_string_lossy(), "--base-url", &url, "--model", "m", "--json"], &e.data);
    assert_eq!(compared.status.code(), Some(0), "{}", String::from_utf8_lossy(&compared.stderr));
    let ranking = ranking_of(&e, &r, &group, &url);
    assert_eq!(ranking["ranking"][0]["evidence"]["session"], sessions["a"].as_str(), "the order stays: {ranking}");
    assert_eq!(ranking["ranking"][0]["above_next"], Value::Null);
    let word = &ranking["ranking"][0]["evaluator"];
    assert_eq!(word["prefers"], Value::Null, "{ranking}");
    assert!(word["reason"].as_str().unwrap().contains("asked both ways round"), "{ranking}");
}

/// An evaluator whose answer gives no reason (a weak model repeats "first") is asked once more,
/// then the comparison fails saying why and what to try; the rule's ranking stands untouched, and
/// the tokens it took are counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_evaluator_that_gives_no_reason_leaves_the_ranking_to_the_rule_and_says_so() {
    let Waiting { _server, e, r, url, group, .. } = waiting(json!([
        // Asked again with what was wrong, it answers the same.
        {"when": {"kind": "evaluator", "any_message_contains": "<attempt name=\"second\">"}, "reply": {"text": "{\"better\": \"first\", \"reason\": \"first\"}"}},
        {"when": {"kind": "evaluator"}, "reply": {"text": VERDICT_DONE}},
        {"when": {"kind": "agent", "last_message_contains": "greet.py"}, "reply": {"text": "Writing.", "tool_calls": [write_greet("hello")]}, "times": 2},
        {"when": {"kind": "agent"}, "reply": {"text": "Done.", "tool_calls": [claim()]}}
    ]))
    .await;
    let before = ranking_of(&e, &r, &group, &url);
    let compared = finishline(&["sessions", "attempts", &group, "--compare", "--workspace", &r.to_string_lossy(), "--base-url", &url, "--model", "m"], &e.data);
    assert_eq!(compared.status.code(), Some(4), "{}", String::from_utf8_lossy(&compared.stderr));
    let said = String::from_utf8_lossy(&compared.stderr);
    assert!(
        said.contains("could not compare") && said.contains("in a sentence") && said.contains("A stronger evaluator model"),
        "why, and what to try: {said}"
    );
    let mut after = ranking_of(&e, &r, &group, &url);
    assert!(after["comparison_tokens"].as_u64().is_some_and(|t| t > 0), "what the evaluator was paid for is counted: {after}");
    after["comparison_tokens"] = before["comparison_tokens"].clone();
    assert_eq!(after, before, "no answer recorded, nothing reordered");
}

/// An attempt is put away with its group, never alone by `sessions discard`: the group's
/// ranking and choice would lose one of theirs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attempt_is_not_discarded_on_its_own() {
    let Waiting { _server, e, group, sessions, .. } = waiting(commented(json!([]), &[("a", "one"), ("b", "two")])).await;
    let out = finishline(&["sessions", "discard", sessions["a"].as_str()], &e.data);
    assert_eq!(out.status.code(), Some(2));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("put away with their group") && said.contains(&format!("sessions attempts {group} --reject")), "{said}");
}

/// `--choose` with a rank no attempt has lands nothing and says which ranks there are, and how
/// to see them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn choosing_a_rank_no_attempt_has_names_the_ranks_there_are_and_lands_nothing() {
    let Waiting { _server, e, r, group, .. } = waiting(commented(json!([]), &[("a", "one"), ("b", "two")])).await;
    for rank in ["3", "0"] {
        let out = finishline(&["sessions", "attempts", &group, "--choose", rank], &e.data);
        let said = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "--choose {rank}: {said}");
        assert!(said.contains("the places now are =1;"), "--choose {rank}: it names the places there are: {said}");
        assert!(
            said.contains(&format!("`finishline sessions attempts {group} --data-dir {}`", e.data.display())),
            "--choose {rank}: and how to see the ranking: {said}"
        );
    }
    // The two share the first place: "1" names neither, so neither is landed on a guess.
    let tied = finishline(&["sessions", "attempts", &group, "--choose", "1"], &e.data);
    let said = String::from_utf8_lossy(&tied.stderr);
    assert_eq!(tied.status.code(), Some(2), "{said}");
    assert!(said.contains("2 attempts share place 1 (the rule finds them equal): choose one by its session id"), "{said}");
    assert!(said.contains("--compare"), "or let the evaluator order them: {said}");
    assert_eq!(git(&r, &["rev-list", "--count", "main"]), "1", "nothing landed");
    assert_eq!(worktrees(&r), 3, "both attempts still wait");
}

/// An attempt chosen over the person's uncommitted edit of a file it changed does not land; the
/// message names the command that keeps its branch instead, and that command does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attempt_that_cannot_land_over_the_persons_edit_says_how_to_keep_its_branch_instead() {
    let readme = write_file("README.md", "the attempt's readme\n");
    let Waiting { _server, e, r, group, sessions, .. } = waiting(json!([
        {"when": {"kind": "evaluator"}, "reply": {"text": VERDICT_DONE}},
        {"when": {"kind": "agent", "model": "a", "last_message_contains": "greet.py"}, "reply": {"text": "Writing.", "tool_calls": [write_greet("hello"), readme]}, "times": 1},
        {"when": {"kind": "agent", "model": "b", "last_message_contains": "greet.py"}, "reply": {"text": "Writing.", "tool_calls": [write_greet("hello")]}, "times": 1},
        {"when": {"kind": "agent"}, "reply": {"text": "Done.", "tool_calls": [claim()]}}
    ]))
    .await;
    let a = sessions["a"].as_str();
    let chose = finishline(&["sessions", "attempts", &group, "--choose", a], &e.data);
    let said = String::from_utf8_lossy(&chose.stderr);
    assert_eq!(chose.status.code(), Some(6), "it waits for the person: {said}");
    assert!(
        said.contains(&format!("`finishline sessions attempts {group} --choose {a} --data-dir {} --land branch`", e.data.display())),
        "it says how to keep the branch instead: {said}"
    );
    assert_eq!(std::fs::read_to_string(r.join("README.md")).unwrap(), "hello\nmy own edit, not committed\n", "the person's edit is kept");
    assert_eq!(git(&r, &["rev-list", "--count", "main"]), "1", "nothing landed");

    let kept = finishline(&["sessions", "attempts", &group, "--choose", a, "--land", "branch"], &e.data);
    assert_eq!(kept.status.code(), Some(0), "{}", String::from_utf8_lossy(&kept.stderr));
    let branches = git(&r, &["branch", "--list", "finishline/*", "--format=%(refname:short)"]);
    assert_eq!(branches.lines().count(), 1, "a's branch is kept, b's removed with it: {branches}");
    assert_eq!(git(&r, &["show", &format!("{branches}:README.md")]), "the attempt's readme");
}

/// Ctrl+C while attempts work stops them all, and the run says so as a cancelled run does (exit
/// 5), not as a failure. What they wrote stays in their worktrees, and the printed command, pasted
/// as it is, takes one of them on to a review it can land from.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_during_attempts_exits_cancelled_and_says_how_to_go_on_with_what_they_wrote() {
    let (server, e, r, url) = serving(json!([
            {"when": {"kind": "evaluator"}, "reply": {"text": VERDICT_DONE}},
            {"when": {"kind": "agent", "last_message_contains": "go on"}, "reply": {"text": "Done.", "tool_calls": [claim()]}},
            // Each attempt writes its file, then thinks for a minute.
            {"when": {"kind": "agent", "last_message_contains": "Created slow.txt"}, "reply": {"text": "", "fault": {"type": "stall_after", "frames": 0, "ms": 60000}}},
            {"when": {"kind": "agent"}, "reply": {"text": "Writing.", "tool_calls": [write_file("slow.txt", "half of the work\n")]}},
        ])).await;
    let child = spawn_attempts(&e, &r, &url, "write the slow file", "builtin*2", &[]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while server.requests().iter().filter(|q| q.last_message.contains("Created slow.txt")).count() < 2 {
        assert!(std::time::Instant::now() < deadline, "both attempts wrote their file");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap().success());
    let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap()).await.unwrap();
    let said = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(5), "stopped is cancelled, as a single run's Ctrl+C is: {said}");
    assert!(said.contains("Their worktrees keep whatever they wrote"), "{said}");
    // The ranking above it says the same: each stopped before a review, its work kept; "no work
    // to review" read as nothing there, and the next line as what to remove.
    let ranked = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(!ranked.contains("no work to review"), "{ranked}");
    assert_eq!(ranked.matches("cancelled before a review: its worktree stays as it left it").count(), 2, "{ranked}");
    assert_eq!(worktrees(&r), 3, "the person's checkout and both attempts' worktrees, kept");

    // The printed way on, pasted as it is (its placeholder filled in).
    let resume = said.split('`').find(|c| c.starts_with("finishline sessions resume ")).unwrap_or_else(|| panic!("a resume command: {said}"));
    let pasted: Vec<String> =
        resume.replace("\"what to do next\"", "go-on").split_whitespace().skip(1).map(|w| if w == "go-on" { "go on".into() } else { w.to_string() }).collect();
    let resumed = Command::new(bin())
        .args(&pasted)
        .env_remove("OPENAI_API_KEY")
        .env("XDG_DATA_HOME", e.data.join("xdg"))
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(resumed.status.code(), Some(6), "it goes on to a review: {}", String::from_utf8_lossy(&resumed.stderr));
    let remove = said.split('`').find(|c| c.contains("sessions attempts ") && c.contains("--reject")).unwrap_or_else(|| panic!("a way to remove them: {said}"));
    let group = remove.split_whitespace().nth(3).unwrap().to_string();
    let ranking = ranking_of(&e, &r, &group, &url);
    let first = &ranking["ranking"].as_array().unwrap()[0]["evidence"];
    assert_eq!(first["end_reason"], "verified_done", "the resumed attempt is ranked on its review: {ranking}");
    // The person took the stopped one's half further by hand, and committed it in its worktree.
    let other = ranking["ranking"][1]["evidence"].clone();
    let other_folder = worktree_of(&e, other["session"].as_str().unwrap());
    std::fs::write(other_folder.join("mine.txt"), "my own go at it\n").unwrap();
    git(&other_folder, &["add", "mine.txt"]);
    git(&other_folder, &["-c", "user.name=p", "-c", "user.email=p@x", "commit", "-qm", "mine"]);
    let other_branch = git(&other_folder, &["branch", "--show-current"]);
    let chosen = finishline(&["sessions", "attempts", &group, "--choose", "1", "--workspace", &r.to_string_lossy()], &e.data);
    let said = String::from_utf8_lossy(&chosen.stderr).to_string();
    assert_eq!(chosen.status.code(), Some(0), "{said}");
    assert_eq!(git(&r, &["show", "main:slow.txt"]), "half of the work");
    assert_eq!(worktrees(&r), 1, "no worktree is left");
    assert_eq!(git(&r, &["show", &format!("{other_branch}:mine.txt")]), "my own go at it", "the person's commit is kept on its branch");
    // What went with the choice is said, and the stopped attempt no longer reads as cancelled
    // with its work kept: it was put away without a review, as the window's Discarded says. Its
    // branch, with the person's commit, is not said to be gone: it is named, and why it stays.
    let label = other["label"].as_str().unwrap();
    assert!(said.contains(&format!("{label} was set aside and its worktree removed.")), "{said}");
    assert!(!said.contains("with what it wrote"), "{said}");
    assert!(said.contains(&format!("Its branch {other_branch} is kept: it holds work Finishline did not make")), "{said}");
    let listed = String::from_utf8_lossy(&finishline(&["sessions", "list"], &e.data).stdout).to_string();
    let row = listed.lines().find(|l| l.starts_with(other["session"].as_str().unwrap())).unwrap_or_else(|| panic!("{listed}"));
    assert!(row.contains("[put away without a review]"), "{listed}");
    // The choice said so too: it was no review the person passed over ("not chosen").
    assert!(said.contains(&format!("{label} had no review to choose from: it was put away without one.")), "{said}");
    assert!(!row.contains("not chosen"), "{listed}");
}

/// An attempt set aside for another, then continued by a message that changes nothing, is in a
/// worktree again and no longer competes: it can be discarded on its own, so its worktree does
/// not stay forever (its group is decided and cannot be rejected any more).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attempt_continued_after_its_group_was_decided_can_be_discarded() {
    let hello = json!([{"when": {"kind": "agent", "last_message_contains": "hello there"}, "reply": {"text": "Hi! How can I help?"}}]);
    let Waiting { _server, e, r, url, group, sessions } = waiting(commented(hello, &[("a", "one"), ("b", "two")])).await;
    let ws = r.to_string_lossy().into_owned();
    let chosen = finishline(&["sessions", "attempts", &group, "--choose", sessions["a"].as_str(), "--workspace", &ws], &e.data);
    assert_eq!(chosen.status.code(), Some(0), "{}", String::from_utf8_lossy(&chosen.stderr));
    let resumed = finishline(&["sessions", "resume", sessions["b"].as_str(), "hello there", "--base-url", &url, "--model", "m"], &e.data);
    assert!(String::from_utf8_lossy(&resumed.stdout).contains("Hi! How can I help?"), "{}", String::from_utf8_lossy(&resumed.stderr));
    assert_eq!(worktrees(&r), 2, "the conversation went on in a worktree of its own");
    // The next start's sweep (here, a command that opens the engine) keeps it: it is the
    // person's conversation, undecided, not the leftover of an attempt passed over.
    let _ = ranking_of(&e, &r, &group, &url);
    assert_eq!(worktrees(&r), 2, "the next start keeps the continued attempt's worktree");

    let discarded = finishline(&["sessions", "discard", sessions["b"].as_str()], &e.data);
    assert_eq!(discarded.status.code(), Some(0), "{}", String::from_utf8_lossy(&discarded.stderr));
    assert_eq!(worktrees(&r), 1, "its worktree is gone");
    assert_eq!(git(&r, &["branch", "--list", "finishline/*"]), "", "and its branch");
    // Put away on its own, after the choice: nobody refused its new work, as the sidebar says.
    let listed = String::from_utf8_lossy(&finishline(&["sessions", "list"], &e.data).stdout).to_string();
    let row = listed.lines().find(|l| l.starts_with(sessions["b"].as_str())).unwrap_or_else(|| panic!("{listed}"));
    assert!(row.contains("[put away without a review]"), "{listed}");
    let md = String::from_utf8_lossy(&finishline(&["sessions", "export", sessions["b"].as_str()], &e.data).stdout).to_string();
    assert!(md.contains("**Status:** Discarded (put away without a review)"), "{md}");
}

/// Once the group is decided, an attempt continued by the person is a task like any other: a
/// follow-up of the chosen one lands on top of it, and one passed over, sent on, lands too when
/// approved (it no longer competes: approving it chooses nothing).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attempts_continued_after_the_choice_are_approved_like_any_task() {
    let more = json!([
        {"when": {"kind": "agent", "last_message_contains": "also write NOTES.md"}, "reply": {"text": "Adding notes.", "tool_calls": [write_file("NOTES.md", "notes\n")]}, "times": 1},
        {"when": {"kind": "agent", "last_message_contains": "also write EXTRA.md"}, "reply": {"text": "Adding more.", "tool_calls": [write_file("EXTRA.md", "extra\n")]}, "times": 1},
    ]);
    let Waiting { _server, e, r, url, group, sessions } = waiting(commented(more, &[("a", "one"), ("b", "two")])).await;
    let ws = r.to_string_lossy().into_owned();
    // The attempt is named by its session's end, as its worktree and branch show it.
    let a_end = &sessions["a"][sessions["a"].len() - 6..];
    let chosen_from = ranking_of(&e, &r, &group, &url);
    let chosen = finishline(&["sessions", "attempts", &group, "--choose", a_end, "--workspace", &ws], &e.data);
    assert_eq!(chosen.status.code(), Some(0), "{}", String::from_utf8_lossy(&chosen.stderr));

    let follow_up =
        finishline(&["sessions", "resume", sessions["a"].as_str(), "also write NOTES.md", "--base-url", &url, "--model", "m", "--allow", "all"], &e.data);
    assert_eq!(follow_up.status.code(), Some(6), "the follow-up waits for review: {}", String::from_utf8_lossy(&follow_up.stderr));
    let approved = finishline(&["sessions", "review", sessions["a"].as_str(), "--approve"], &e.data);
    assert_eq!(approved.status.code(), Some(0), "the chosen attempt's follow-up lands: {}", String::from_utf8_lossy(&approved.stderr));
    assert_eq!(git(&r, &["show", "main:NOTES.md"]), "notes");

    let sent_on =
        finishline(&["sessions", "resume", sessions["b"].as_str(), "also write EXTRA.md", "--base-url", &url, "--model", "m", "--allow", "all"], &e.data);
    assert_eq!(sent_on.status.code(), Some(6), "{}", String::from_utf8_lossy(&sent_on.stderr));
    let approved = finishline(&["sessions", "review", sessions["b"].as_str(), "--approve"], &e.data);
    let said = String::from_utf8_lossy(&approved.stderr);
    assert_eq!(approved.status.code(), Some(0), "the one passed over, sent on, lands when approved: {said}");
    assert_eq!(git(&r, &["show", "main:EXTRA.md"]), "extra");
    assert_eq!(git(&r, &["show", "main:greet.py"]), "def hello():\n    return 'hello'  # one", "the choice stands: b's first round did not come back with it");
    let after = ranking_of(&e, &r, &group, &url);
    assert_eq!(after["chosen"], sessions["a"].as_str(), "the group's choice is still a");
    assert_eq!(worktrees(&r), 1, "every worktree is gone");
    // The ranking is the one the choice was made from: the rounds after it are each attempt's
    // own story, not a new standing that could put another attempt above the one chosen.
    let standing = |v: &Value| -> Vec<(Value, Value, Value, Value)> {
        v["ranking"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| (a["evidence"]["session"].clone(), a["rank"].clone(), a["evidence"]["diff_lines"].clone(), a["evidence"]["files"].clone()))
            .collect()
    };
    assert_eq!(standing(&after), standing(&chosen_from), "{after}");
}

/// An attempt the person rejected on its own while the group was still open, then sent on and
/// approved, is chosen for the group: the other attempt is put away, and only one lands.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attempt_rejected_alone_then_sent_on_and_approved_is_chosen_for_the_open_group() {
    let more = json!([
        {"when": {"kind": "agent", "last_message_contains": "try once more"}, "reply": {"text": "Writing again.", "tool_calls": [write_file("greet.py", "def hello():\n    return 'hello'  # again\n")]}, "times": 1},
    ]);
    let Waiting { _server, e, r, url, group, sessions } = waiting(commented(more, &[("a", "one"), ("b", "two")])).await;
    let rejected = finishline(&["sessions", "review", sessions["a"].as_str(), "--reject"], &e.data);
    assert_eq!(rejected.status.code(), Some(3), "{}", String::from_utf8_lossy(&rejected.stderr));
    let sent_on = finishline(&["sessions", "resume", sessions["a"].as_str(), "try once more", "--base-url", &url, "--model", "m", "--allow", "all"], &e.data);
    assert_eq!(sent_on.status.code(), Some(6), "{}", String::from_utf8_lossy(&sent_on.stderr));
    let approved = finishline(&["sessions", "review", sessions["a"].as_str(), "--approve"], &e.data);
    assert_eq!(approved.status.code(), Some(0), "{}", String::from_utf8_lossy(&approved.stderr));
    let ranking = ranking_of(&e, &r, &group, &url);
    assert_eq!(ranking["chosen"], sessions["a"].as_str(), "approving it chose it for the group: {ranking}");
    let b = finishline(&["sessions", "review", sessions["b"].as_str(), "--approve"], &e.data);
    assert_eq!(b.status.code(), Some(2), "the other attempt was put away: {}", String::from_utf8_lossy(&b.stderr));
    assert_eq!(git(&r, &["rev-list", "--count", "main"]), "2", "one commit landed, not two");
    assert_eq!(worktrees(&r), 1, "no worktree is left");
}

/// Ctrl+C after one attempt reached its review and while another still works: nothing lands,
/// even with `--review approve`; the run exits as cancelled and says how to land the one that
/// waits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_lands_nothing_even_when_one_attempt_already_waits_for_review() {
    let (_server, e, r, url) = serving(json!([
            {"when": {"kind": "evaluator"}, "reply": {"text": VERDICT_DONE}},
            {"when": {"kind": "agent", "model": "fast", "last_message_contains": "greet.py"}, "reply": {"text": "Writing.", "tool_calls": [write_greet("hello")]}, "times": 1},
            {"when": {"kind": "agent", "model": "fast"}, "reply": {"text": "Done.", "tool_calls": [claim()]}},
            {"when": {"kind": "agent", "model": "slow"}, "reply": {"text": "", "fault": {"type": "stall_after", "frames": 0, "ms": 60000}}},
        ])).await;
    let child = spawn_attempts(&e, &r, &url, GREET, "builtin:fast,builtin:slow", &["--verify", "python3 check.py", "--review", "approve"]);
    // The fast one was judged and its review recorded (a fixed wait after the judging was not
    // always enough on a loaded machine).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !lines(&finishline(&["sessions", "list", "--json"], &e.data)).iter().any(|s| s["status"] == "awaiting_review") {
        assert!(std::time::Instant::now() < deadline, "the fast attempt waits for its review");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap().success());
    let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap()).await.unwrap();
    let said = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(5), "stopped is cancelled: {said}");
    assert_eq!(git(&r, &["rev-list", "--count", "main"]), "1", "nothing landed: {said}");
    assert!(said.contains("stopped, so nothing lands") && said.contains("--choose N"), "{said}");
}

/// `finishline run TASK --attempts ATTEMPTS` in `r` against the fake provider at `url`, every
/// tool allowed, in a process of its own (`more` adds flags).
fn spawn_attempts(e: &Env, r: &Path, url: &str, task: &str, attempts: &str, more: &[&str]) -> std::process::Child {
    let ws = r.to_string_lossy().into_owned();
    let mut args = vec!["run", task, "--workspace", &ws, "--base-url", url, "--model", "m", "--attempts", attempts, "--allow", "all"];
    args.extend_from_slice(more);
    spawn_finishline(&args, &e.data)
}

/// Ctrl+C in the terminal running attempts stops what that terminal runs: an attempt the person
/// sent back meanwhile from another terminal (or the window) runs there, and goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_during_attempts_leaves_an_attempt_sent_on_elsewhere_running() {
    let (_server, e, r, url) = serving(json!([
        {"when": {"kind": "evaluator"}, "reply": {"text": VERDICT_DONE}},
        {"when": {"kind": "agent", "last_message_contains": "louder"}, "reply": {"text": "", "fault": {"type": "stall_after", "frames": 0, "ms": 60000}}},
        {"when": {"kind": "agent", "model": "b"}, "reply": {"text": "", "fault": {"type": "stall_after", "frames": 0, "ms": 60000}}},
        {"when": {"kind": "agent", "model": "a", "last_message_contains": "greet.py"}, "reply": {"text": "Writing.", "tool_calls": [write_greet("hello")]}, "times": 1},
        {"when": {"kind": "agent", "model": "a"}, "reply": {"text": "Done.", "tool_calls": [claim()]}}
    ]))
    .await;
    let attempts = spawn_attempts(&e, &r, &url, GREET, "builtin:a,builtin:b", &["--verify", "python3 check.py"]);
    let status_of = |model: &str| -> (String, String) {
        let rows = lines(&finishline(&["sessions", "list", "--json"], &e.data));
        rows.iter()
            .find(|s| s["model"] == model)
            .map(|s| (s["id"].as_str().unwrap_or_default().to_string(), s["status"].as_str().unwrap_or_default().to_string()))
            .unwrap_or_default()
    };
    let until = |model: &str, status: &str| {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        loop {
            let (id, now) = status_of(model);
            if now == status {
                return id;
            }
            assert!(std::time::Instant::now() < deadline, "{model} never became {status} (it is {now})");
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    };
    let a = tokio::task::block_in_place(|| until("a", "awaiting_review"));
    let elsewhere = spawn_finishline(&["sessions", "review", &a, "--request-changes", "make it louder", "--base-url", &url, "--model", "a"], &e.data);
    tokio::task::block_in_place(|| until("a", "busy"));
    assert!(Command::new("kill").args(["-INT", &attempts.id().to_string()]).status().unwrap().success());
    let out = tokio::task::spawn_blocking(move || attempts.wait_with_output().unwrap()).await.unwrap();
    assert_eq!(out.status.code(), Some(5), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(status_of("b").1, "cancelled", "the attempt this terminal ran is stopped");
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    assert_eq!(status_of("a").1, "busy", "the one sent on from the other terminal still runs there");
    let mut elsewhere = elsewhere;
    let _ = elsewhere.kill();
    let _ = elsewhere.wait();
}

/// Attempts without a terminal, as a single run: a tool that needs the person's permission is
/// not run, and the output names the command that goes on with it allowed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attempts_without_a_terminal_name_the_command_that_allows_a_tool_nobody_could_be_asked_for() {
    let (_server, e, r, url) = serving(json!([
        {"when": {"kind": "evaluator"}, "reply": {"text": VERDICT_NOTHING_WRITTEN}},
        {"when": {"kind": "agent", "last_message_contains": "nobody to ask"}, "reply": {"text": "I could not run it.", "tool_calls": [claim()]}},
        {"when": {"kind": "agent"}, "reply": {"text": "Running.", "tool_calls": [{"name": "run_command", "arguments": {"command": "echo hi > c.txt"}}]}},
    ]))
    .await;
    let ws = r.to_string_lossy().into_owned();
    let out = finishline(
        &[
            "run",
            "make c.txt",
            "--workspace",
            &ws,
            "--base-url",
            &url,
            "--model",
            "m",
            "--attempts",
            "builtin*2",
            "--continuation-budget",
            "1",
            "--review",
            "reject",
        ],
        &e.data,
    );
    let said = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(said.contains("run_command needs your permission and there is no terminal to ask, so it was not run"), "{said}");
    assert!(said.contains("\"go on\" --allow run_command"), "the command that goes on with it allowed: {said}");
    assert!(!r.join("c.txt").exists());
}

/// `--review reject` of attempts is a dry run, as a single task's: nobody looked at them, so the
/// trust figures count no person's verdict (the evaluator's "done" was counted as wrong).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dry_run_reject_of_attempts_is_no_persons_verdict() {
    let (_server, e, r, url) = serving(json!([
        {"when": {"kind": "evaluator"}, "reply": {"text": VERDICT_DONE}},
        {"when": {"kind": "agent", "last_message_contains": "Created greet.py"}, "reply": {"text": "Done.", "tool_calls": [claim()]}},
        {"when": {"kind": "agent"}, "reply": {"text": "Writing.", "tool_calls": [write_greet("hello")]}},
    ]))
    .await;
    let ws = r.to_string_lossy().into_owned();
    // A long task (here 3,000 characters on one line) is named by its title, not echoed whole.
    let task = format!("{GREET} {}", "and keep it tidy ".repeat(180));
    let out = finishline(&["run", &task, "--workspace", &ws, "--base-url", &url, "--model", "m", "--attempts", "builtin*2", "--review", "reject"], &e.data);
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
    let started = String::from_utf8_lossy(&out.stdout).lines().find(|l| l.contains(" attempts of ")).map(String::from).unwrap_or_default();
    assert!(started.starts_with("2 attempts of “") && started.chars().count() < 160, "{started}");
    let agents = lines(&finishline(&["stats", "agents", "--json"], &e.data));
    assert!(agents.len() == 1 && agents[0]["tasks"] == 2 && agents[0]["reviews_decided"] == 0, "{agents:?}");
    let judges = lines(&finishline(&["stats", "evaluator", "--json"], &e.data));
    assert!(judges.iter().all(|j| j["reviews"] == 0), "{judges:?}");
}

/// `--review approve` lands the first attempt unasked only when it is first alone: two the rule
/// finds equal ("=1") wait for the person, as `--choose 1` refuses them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attempts_level_at_the_top_are_not_landed_unasked() {
    let (_server, e, r, url) = serving(commented(json!([]), &[("a", "one"), ("b", "two")])).await;
    let out = run_attempts(&e, &r, &url, "builtin:a,builtin:b", &["--review", "approve"]);
    let said = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(6), "they wait for the person: {said}");
    assert!(said.contains("2 attempts share place 1"), "{said}");
    assert_eq!(git(&r, &["rev-list", "--count", "main"]), "1", "nothing landed");
}

/// An attempt whose agent asks a question with nobody at a terminal is declined, and its run
/// stops there (idle): the terminal says so and how to answer, not that it "goes on".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_nobody_can_answer_stops_that_attempt_and_says_how_to_answer_it() {
    let (_server, e, r, url) = serving(json!([
        {"when": {"kind": "agent"}, "reply": {"text": "One thing first.", "tool_calls": [{"name": "ask_user", "arguments": {"question": "Which colour?"}}]}},
    ]))
    .await;
    let out = finishline(&["run", GREET, "--workspace", &r.to_string_lossy(), "--base-url", &url, "--model", "m", "--attempts", "builtin*2"], &e.data);
    let said = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(
        said.matches("nobody is at a terminal to answer, so it is declined and this attempt stops; `finishline sessions resume ses_").count(),
        2,
        "{said}"
    );
    assert!(!said.contains("declined and the attempt goes on"), "{said}");
    let rows = lines(&finishline(&["sessions", "list", "--json"], &e.data));
    assert!(rows.iter().all(|s| s["status"] == "idle" && s["end_reason"] == "question_declined"), "{rows:?}");
}

/// Rules for two attempts: `a` writes greet.py and claims done (its review waits); `b` writes
/// slow.txt and then thinks for a minute, until the person sends it on with "go on", when it
/// writes more.txt and claims done.
fn one_waits_one_thinks() -> Value {
    json!([
        {"when": {"kind": "evaluator"}, "reply": {"text": VERDICT_DONE}},
        {"when": {"kind": "agent", "last_message_contains": "Created more.txt"}, "reply": {"text": "Done.", "tool_calls": [claim()]}},
        {"when": {"kind": "agent", "last_message_contains": "go on"}, "reply": {"text": "Going on.", "tool_calls": [write_file("more.txt", "the work sent on\n")]}},
        {"when": {"kind": "agent", "model": "a", "last_message_contains": "greet.py"}, "reply": {"text": "Writing.", "tool_calls": [write_greet("hello")]}, "times": 1},
        {"when": {"kind": "agent", "model": "a"}, "reply": {"text": "Done.", "tool_calls": [claim()]}},
        {"when": {"kind": "agent", "model": "b", "last_message_contains": "Created slow.txt"}, "reply": {"text": "", "fault": {"type": "stall_after", "frames": 0, "ms": 60000}}},
        {"when": {"kind": "agent", "model": "b"}, "reply": {"text": "Writing.", "tool_calls": [write_file("slow.txt", "half of the work\n")]}},
    ])
}

/// Starts [`one_waits_one_thinks`]'s attempts in a process of their own and waits until `a`'s
/// review waits and `b` thinks: the running process, the group, and `a`'s and `b`'s sessions.
async fn a_waits_while_b_runs(server: &FakeServer, e: &Env, r: &Path, url: &str) -> (std::process::Child, String, String, String) {
    let child = spawn_attempts(e, r, url, GREET, "builtin:a,builtin:b", &[]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let mut rows = Vec::new();
    while std::time::Instant::now() < deadline {
        rows = lines(&finishline(&["sessions", "list", "--json"], &e.data));
        let waiting = rows.iter().find(|s| s["status"] == "awaiting_review");
        let thinking = server.requests().iter().any(|q| q.last_message.contains("Created slow.txt"));
        if let (Some(a), true) = (waiting, thinking) {
            let b = rows.iter().find(|s| s["id"] != a["id"]).expect("the other attempt");
            let group = a["attempt"]["group"].as_str().unwrap().to_string();
            return (child, group, a["id"].as_str().unwrap().to_string(), b["id"].as_str().unwrap().to_string());
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let mut child = child;
    let _ = child.kill();
    let _ = child.wait();
    panic!("a waits for its review while b thinks: {rows:?}");
}

/// The worktree a session works in now, as its history records it.
fn worktree_of(e: &Env, session: &str) -> PathBuf {
    let row = lines(&finishline(&["sessions", "list", "--json"], &e.data)).into_iter().find(|s| s["id"] == session).unwrap();
    PathBuf::from(row["work_dir"].as_str().unwrap_or_else(|| panic!("a worktree: {row}")))
}

/// Choosing one attempt while another runs in another process (another terminal, the window)
/// is refused: removing its worktree would pull the folder from under its run. Cancelling the
/// group from here asks that process to stop it; then the choice goes through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn choosing_while_another_attempt_runs_elsewhere_is_refused_until_cancelling_from_here_stops_it() {
    let (server, e, r, url) = serving(one_waits_one_thinks()).await;
    let (child, group, a, b) = a_waits_while_b_runs(&server, &e, &r, &url).await;
    let b_folder = worktree_of(&e, &b);
    let ws = r.to_string_lossy().into_owned();
    let chosen = finishline(&["sessions", "attempts", &group, "--choose", &a, "--workspace", &ws], &e.data);
    let said = String::from_utf8_lossy(&chosen.stderr).to_string();
    // The group's export meanwhile says b runs, and ranks nobody before every attempt has ended.
    let md = String::from_utf8_lossy(&finishline(&["sessions", "export", &group], &e.data).stdout).to_string();
    assert_eq!(chosen.status.code(), Some(2), "refused: {said}");
    assert!(said.contains("still running") && said.contains(&format!("sessions attempts {group} --cancel")), "it says what runs and how to stop it: {said}");
    assert!(md.contains(&format!("- –. Finishline's agent (b) (`{b}`) · still running")), "{md}");
    assert!(md.contains(&format!("- –. Finishline's agent (a) (`{a}`)\n")), "no place yet, and no reason for one: {md}");
    assert!(!md.contains("rejected by you"), "nobody rejected anything: {md}");
    assert!(b_folder.join("slow.txt").exists(), "the running attempt's worktree is left as it was");
    assert_eq!(git(&r, &["rev-list", "--count", "main"]), "1", "nothing landed");

    // Cancelled from here: the process running b stops it, and this one says so once it has.
    let (data, g) = (e.data.clone(), group.clone());
    let cancel = tokio::task::spawn_blocking(move || finishline(&["sessions", "attempts", &g, "--cancel"], &data)).await.unwrap();
    let cancel_said = String::from_utf8_lossy(&cancel.stderr).to_string();
    let ran = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap()).await.unwrap();
    let ran_said = String::from_utf8_lossy(&ran.stdout).to_string() + &String::from_utf8_lossy(&ran.stderr);
    assert_eq!(cancel.status.code(), Some(0), "{cancel_said}");
    assert!(cancel_said.contains("1 attempt cancelled in another terminal or the window"), "{cancel_said}");
    assert!(ran_said.contains("cancelled: asked from another terminal or the window"), "the terminal that ran it says who stopped it: {ran_said}");
    assert!(b_folder.join("slow.txt").exists(), "a cancelled attempt's worktree keeps what it wrote");
    let chosen = finishline(&["sessions", "attempts", &group, "--choose", &a, "--workspace", &ws], &e.data);
    assert_eq!(chosen.status.code(), Some(0), "{}", String::from_utf8_lossy(&chosen.stderr));
    assert_eq!(git(&r, &["rev-list", "--count", "main"]), "2", "a landed");
    assert_eq!(worktrees(&r), 1, "no worktree is left");
}

/// A set-aside attempt the person sends on while the choice is still putting it away keeps what
/// its new run writes: the choice removes a worktree only if nothing happened to the attempt
/// since it looked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attempt_sent_on_while_the_choice_puts_it_away_keeps_what_its_new_run_writes() {
    let (server, e, r, url) = serving(one_waits_one_thinks()).await;
    let (child, group, a, b) = a_waits_while_b_runs(&server, &e, &r, &url).await;
    assert!(Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap().success());
    let _ = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap()).await.unwrap();
    let marker = e.data.join("paused");
    let mut choose = command(&["sessions", "attempts", &group, "--choose", &a, "--workspace", &r.to_string_lossy()], &e.data);
    choose.env("FINISHLINE_FAULT_PAUSE", "attempt-set-aside").env("FINISHLINE_FAULT_MARKER", &marker);
    let choosing = choose.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap();
    let t = std::time::Instant::now();
    while !marker.exists() {
        assert!(t.elapsed() < std::time::Duration::from_secs(30), "the choice reached the attempt it sets aside");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let resumed = finishline(&["sessions", "resume", &b, "go on", "--base-url", &url, "--model", "m", "--allow", "all"], &e.data);
    assert_eq!(resumed.status.code(), Some(6), "its new run ends in a review: {}", String::from_utf8_lossy(&resumed.stderr));
    std::fs::remove_file(&marker).unwrap();
    let chosen = tokio::task::spawn_blocking(move || choosing.wait_with_output().unwrap()).await.unwrap();
    assert_eq!(chosen.status.code(), Some(0), "a lands: {}", String::from_utf8_lossy(&chosen.stderr));
    let folder = worktree_of(&e, &b);
    assert_eq!(std::fs::read_to_string(folder.join("more.txt")).unwrap_or_default(), "the work sent on\n", "what b's new run wrote is there");
    let row = lines(&finishline(&["sessions", "list", "--json"], &e.data)).into_iter().find(|s| s["id"] == b.as_str()).unwrap();
    assert_eq!(row["status"], "awaiting_review", "b's new review waits for the person, not rejected by the choice: {row}");
}

/// A set-aside attempt whose worktree a killed choice left behind, sent on by the person while
/// another command's start-up sweep removes that worktree: its new run works in a worktree of its
/// own, and what it writes stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attempt_sent_on_while_a_start_sweeps_its_old_worktree_keeps_what_its_new_run_writes() {
    let (server, e, r, url) = serving(one_waits_one_thinks()).await;
    let (child, group, a, b) = a_waits_while_b_runs(&server, &e, &r, &url).await;
    assert!(Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap().success());
    let _ = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap()).await.unwrap();
    let paused = |args: &[&str], point: &str| {
        let marker = e.data.join(point);
        let mut cmd = command(args, &e.data);
        cmd.env("FINISHLINE_FAULT_PAUSE", point).env("FINISHLINE_FAULT_MARKER", &marker);
        let child = cmd.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap();
        let t = std::time::Instant::now();
        while !marker.exists() {
            assert!(t.elapsed() < std::time::Duration::from_secs(30), "reached {point}");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        (child, marker)
    };
    // The choice lands `a` and is killed before it puts `b` away: b's worktree is left.
    let (mut choosing, _) = paused(&["sessions", "attempts", &group, "--choose", &a, "--workspace", &r.to_string_lossy()], "attempt-set-aside");
    choosing.kill().unwrap();
    let _ = choosing.wait();
    let old = worktree_of(&e, &b);
    assert!(old.join("slow.txt").exists());
    // Another command starts, and its sweep is about to remove the passed-over attempt's worktree.
    let (sweeping, marker) =
        paused(&["sessions", "attempts", &group, "--workspace", &r.to_string_lossy(), "--base-url", &url, "--model", "m"], "sweep-decided");
    let resumed = finishline(&["sessions", "resume", &b, "go on", "--base-url", &url, "--model", "m", "--allow", "all"], &e.data);
    assert_eq!(resumed.status.code(), Some(6), "its new run ends in a review: {}", String::from_utf8_lossy(&resumed.stderr));
    std::fs::remove_file(&marker).unwrap();
    let swept = sweeping.wait_with_output().unwrap();
    assert_eq!(swept.status.code(), Some(0), "{}", String::from_utf8_lossy(&swept.stderr));
    let now = worktree_of(&e, &b);
    assert_eq!(std::fs::read_to_string(now.join("more.txt")).unwrap_or_default(), "the work sent on\n", "what b's new run wrote is there ({})", now.display());
    assert!(!old.exists() || old == now, "the old worktree went, or is the one it works in");
}

/// `--review approve` lands the first attempt only as auto-approve would land a task alone: one
/// that wrote a file .gitignore hides (it would not land, and would go with the worktree) waits
/// for the person, who is told why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attempts_approved_unasked_wait_for_the_person_when_the_first_wrote_a_hidden_file() {
    let server = FakeServer::start(
        serde_json::from_value(json!({"rules": [
            {"when": {"kind": "evaluator"}, "reply": {"text": VERDICT_DONE}},
            {"when": {"kind": "agent", "last_message_contains": "greet.py"}, "reply": {"text": "Writing.", "tool_calls": [write_greet("hello"), write_file(".env.local", "TOKEN=mine\n")]}, "times": 2},
            {"when": {"kind": "agent"}, "reply": {"text": "Done.", "tool_calls": [claim()]}}
        ]}))
        .unwrap(),
    )
    .await
    .unwrap();
    let e = env();
    let r = person_repo(&e.ws, &[("check.py", "import greet\nassert greet.hello() == 'hello'\n"), (".gitignore", ".env.local\n")]);
    let url = server.base_url(Protocol::Openai);
    let (ws, data) = (r.to_string_lossy().into_owned(), e.data.clone());
    let out = tokio::task::spawn_blocking(move || {
        finishline(
            &[
                "run",
                GREET,
                "--workspace",
                &ws,
                "--base-url",
                &url,
                "--model",
                "m",
                "--attempts",
                "builtin*2",
                "--verify",
                "python3 check.py",
                "--allow",
                "all",
                "--review",
                "approve",
            ],
            &data,
        )
    })
    .await
    .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(6), "left to the person: {said}");
    assert!(said.contains(".env.local"), "who is told which file: {said}");
    assert_eq!(git(&r, &["rev-list", "--count", "main"]), "1", "nothing landed");
    assert_eq!(worktrees(&r), 3, "both attempts wait, with the file in their worktrees");
}

/// SIGTERM (a `timeout`, CI) or SIGHUP (a closed terminal) while attempts run stops them all as
/// Ctrl-C does: each attempt's command (here a ten-minute server) ends with it, the attempts are
/// recorded as cancelled, and nothing is left running.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_while_attempts_run_cancels_them_all_and_ends_their_commands() {
    use finishline_engine::process_groups::group_alive;
    let pids = tempfile::tempdir().unwrap();
    let command = format!("echo $$ >> {}; exec sleep 600", pids.path().join("pids").display());
    let (_server, e, r, url) = serving(json!([
        {"when": {"kind": "agent", "last_message_contains": "serve the site"}, "reply": {"text": "Starting it.", "tool_calls": [{"name": "run_command", "arguments": {"command": command}}]}},
        {"when": {"kind": "agent"}, "reply": {"text": "Done."}}
    ]))
    .await;
    let (ws, data) = (r.to_string_lossy().into_owned(), e.data.clone());
    let mut cli = Command::new(bin())
        .args([
            "run",
            "serve the site",
            "--workspace",
            &ws,
            "--base-url",
            &url,
            "--model",
            "m",
            "--attempts",
            "builtin*2",
            "--allow",
            "all",
            "--review",
            "approve",
            "--data-dir",
        ])
        .arg(&data)
        .env_remove("OPENAI_API_KEY")
        .env("XDG_DATA_HOME", data.join("xdg"))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid_file = pids.path().join("pids");
    let (code, left, stderr) = tokio::task::spawn_blocking(move || {
        let started = |t: &std::time::Instant| {
            while t.elapsed() < std::time::Duration::from_secs(60) {
                let found: Vec<u32> = std::fs::read_to_string(&pid_file).unwrap_or_default().lines().filter_map(|l| l.trim().parse().ok()).collect();
                if found.len() == 2 {
                    return found;
                }
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            panic!("both attempts started their command");
        };
        let groups = started(&std::time::Instant::now());
        assert!(Command::new("kill").args(["-TERM", &cli.id().to_string()]).status().unwrap().success());
        let t = std::time::Instant::now();
        let code = loop {
            if let Some(s) = cli.try_wait().unwrap() {
                break s.code();
            }
            if t.elapsed() > std::time::Duration::from_secs(15) {
                let _ = cli.kill();
                break None;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while groups.iter().any(|g| group_alive(*g)) && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let left: Vec<u32> = groups.iter().copied().filter(|g| group_alive(*g)).collect();
        for g in &left {
            let _ = Command::new("kill").args(["-KILL", "--", &format!("-{g}")]).status();
        }
        let mut stderr = String::new();
        let _ = std::io::Read::read_to_string(&mut cli.stderr.take().unwrap(), &mut stderr);
        (code, left, stderr)
    })
    .await
    .unwrap();
    assert_eq!(code, Some(5), "SIGTERM ends the attempts as cancelled (exit 5): {stderr}");
    assert!(left.is_empty(), "no attempt's command is left running: {left:?}");
    let rows = lines(&finishline(&["sessions", "list", "--json"], &e.data));
    assert!(rows.iter().all(|s| s["status"] == "cancelled"), "{rows:?}");
}
