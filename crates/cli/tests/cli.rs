//! The `finishline` binary as a script would use it: JSON events, the final summary, the
//! history commands, and the exit codes.

mod support {
    pub mod cli;
}

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use fake_llm::{FakeServer, Protocol};
use serde_json::{json, Value};
use support::cli::*;

const DONE: &str = "Done! notes.md lists three fruits, as the task asked.";

fn fruits() -> fake_llm::Scenario {
    serde_json::from_value(json!({"rules": [
        {"when": {"kind": "evaluator"}, "reply": {"text": "{\"done\": true, \"summary\": \"notes.md lists three fruits\", \"remaining\": [], \"continuation_prompt\": \"\", \"is_stuck\": false, \"stuck_reason\": \"\"}"}},
        {"when": {"kind": "agent", "last_message_contains": "Created notes.md"}, "reply": {"text": DONE}},
        {"when": {"kind": "agent"}, "reply": {"text": "Writing it.", "tool_calls": [{"name": "write_file", "arguments": {"path": "notes.md", "content": "- apple\n- banana\n- cherry\n"}}]}}
    ]}))
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_prints_events_and_a_summary_then_history_shows_the_session() {
    let server = FakeServer::start(fruits()).await.unwrap();
    let e = env();
    let url = server.base_url(Protocol::Openai);
    let data = e.data.clone();
    let ws = e.ws.to_string_lossy().into_owned();
    let out = tokio::task::spawn_blocking(move || {
        finishline(
            &["run", "create notes.md listing three fruits", "--workspace", &ws, "--base-url", &url, "--model", "fake-model", "--review", "approve", "--json"],
            &data,
        )
    })
    .await
    .unwrap();
    assert_eq!(out.status.code(), Some(0), "a verified, auto-approved run exits 0; stderr: {}", String::from_utf8_lossy(&out.stderr));
    let events = lines(&out);
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    for t in [
        "session_created",
        "run_started",
        "step_started",
        "text_delta",
        "tool_call",
        "step_finished",
        "evaluation",
        "review_requested",
        "run_finished",
        "review_resolved",
    ] {
        assert!(types.contains(&t), "--json prints `{t}` events: {types:?}");
    }
    let seqs: Vec<u64> = events.iter().filter_map(|e| e["seq"].as_u64()).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>(), "events are printed once each, in order");
    let summary = events.last().unwrap();
    assert_eq!(summary["type"], "summary");
    assert_eq!(summary["status"], "completed");
    assert_eq!(summary["end_reason"], "verified_done");
    assert_eq!(summary["claim"], "none");
    assert_eq!(summary["verdict"], "done");
    assert_eq!(summary["decision"], "approve");
    assert!(summary["tokens"]["agent"].as_u64().unwrap() > 0);
    assert_eq!(std::fs::read_to_string(e.ws.join("notes.md")).unwrap(), "- apple\n- banana\n- cherry\n");

    let list = finishline(&["sessions", "list", "--json"], &e.data);
    assert_eq!(list.status.code(), Some(0));
    let rows = lines(&list);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["status"], "completed");
    let id = rows[0]["id"].as_str().unwrap().to_string();
    assert_eq!(id, summary["session_id"].as_str().unwrap());

    let listed = String::from_utf8_lossy(&finishline(&["sessions", "list"], &e.data).stdout).to_string();
    let folder = e.ws.canonicalize().unwrap();
    let folder = folder.file_name().unwrap().to_string_lossy();
    assert!(listed.contains(&format!("create notes.md listing three fruits  [in {folder}]")), "which folder a task was in: {listed}");
    // The start of the id, as one reads it off the list, is enough.
    let shown = finishline(&["sessions", "show", &id[..12]], &e.data);
    assert_eq!(shown.status.code(), Some(0), "{}", String::from_utf8_lossy(&shown.stderr));
    assert!(String::from_utf8_lossy(&shown.stdout).contains("create notes.md listing three fruits"));
    let short = finishline(&["sessions", "show", &id[..6]], &e.data);
    assert_eq!(short.status.code(), Some(2), "a few letters are not taken for an id");
    assert!(String::from_utf8_lossy(&short.stderr).contains(&format!("there is no session {} in this history", &id[..6])));
    assert!(
        String::from_utf8_lossy(&short.stderr).contains("give its whole id, its first 8 characters or more, or its last 6 or more"),
        "and how much of an id is enough: {}",
        String::from_utf8_lossy(&short.stderr)
    );

    let bare = finishline(&["sessions", "show", &id[4..12]], &e.data);
    assert_eq!(bare.status.code(), Some(0), "the start of the id without its `ses_` is enough too: {}", String::from_utf8_lossy(&bare.stderr));
    let as_json = finishline(&["sessions", "export", &id, "--json"], &e.data);
    let exported: Value =
        serde_json::from_slice(&as_json.stdout).unwrap_or_else(|e| panic!("--json exports JSON ({e}): {}", String::from_utf8_lossy(&as_json.stdout)));
    assert_eq!(exported["session"]["id"], id.as_str(), "{exported}");
    assert_eq!(String::from_utf8_lossy(&as_json.stdout).trim_end().lines().count(), 1, "--json is one object on one line, as everywhere");
    let to_read = finishline(&["sessions", "export", &id, "--format", "json"], &e.data);
    assert!(String::from_utf8_lossy(&to_read.stdout).lines().count() > 1, "--format json is indented, to read");
    let both = finishline(&["sessions", "export", &id, "--format", "md", "--json"], &e.data);
    assert_eq!(both.status.code(), Some(2), "two formats asked for: {}", String::from_utf8_lossy(&both.stdout));

    let md = finishline(&["sessions", "export", &id, "--format", "md"], &e.data);
    let md = String::from_utf8_lossy(&md.stdout);
    assert!(
        md.contains("# create notes.md listing three fruits") && md.contains("**Tool `write_file`** (done)") && md.contains("Evaluator verdict"),
        "the export shows the timeline:\n{md}"
    );
    let found = finishline(&["sessions", "search", "asked", "--json"], &e.data);
    assert_eq!(lines(&found).len(), 1, "search finds the session by a word the agent wrote");
    let empty = finishline(&["sessions", "search", "  "], &e.data);
    assert_eq!(empty.status.code(), Some(2), "nothing to search for is a usage error");
    assert!(String::from_utf8_lossy(&empty.stderr).contains("say what to search for"), "{}", String::from_utf8_lossy(&empty.stderr));
    let none = finishline(&["sessions", "search", "zebra"], &e.data);
    assert!(String::from_utf8_lossy(&none.stderr).contains("No session mentions “zebra”"), "a search that finds nothing says so");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readable_view_lists_each_changed_file_before_asking_for_a_decision() {
    let server = FakeServer::start(fruits()).await.unwrap();
    let e = env();
    let url = server.base_url(Protocol::Openai);
    let (data, ws) = (e.data.clone(), e.ws.to_string_lossy().into_owned());
    let out = tokio::task::spawn_blocking(move || {
        finishline(&["run", "create notes.md listing three fruits", "--workspace", &ws, "--base-url", &url, "--model", "fake-model"], &data)
    })
    .await
    .unwrap();
    assert_eq!(out.status.code(), Some(6), "waits for review: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    let review = text.find("⚑ review").unwrap_or_else(|| panic!("a review line: {text}"));
    assert!(text[review..].contains("created  notes.md (+3 −0)"), "the file and its size, under the review: {text}");
}

/// `--review reject` tells the dry run in the order it happened: the review asked, then what the
/// unattended reject did (its outcome came before the review was said to wait).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unattended_reject_is_told_after_the_review_it_decides() {
    let server = FakeServer::start(fruits()).await.unwrap();
    let e = env();
    let url = server.base_url(Protocol::Openai);
    let (data, ws) = (e.data.clone(), e.ws.to_string_lossy().into_owned());
    std::fs::create_dir_all(&e.data).unwrap();
    let log = e.data.join("terminal.log");
    let file = std::fs::File::create(&log).unwrap();
    let status = tokio::task::spawn_blocking(move || {
        command(&["run", "create notes.md", "--workspace", &ws, "--base-url", &url, "--model", "m", "--review", "reject"], &data)
            .stdout(file.try_clone().unwrap())
            .stderr(file)
            .status()
            .unwrap()
    })
    .await
    .unwrap();
    let said = std::fs::read_to_string(&log).unwrap();
    assert_eq!(status.code(), Some(3), "{said}");
    let at = |what: &str| said.find(what).unwrap_or_else(|| panic!("{what}: {said}"));
    assert!(at("● awaiting_review") < at("Rejected."), "{said}");
    assert!(at("Rejected.") < at("■ ses_"), "{said}");
    assert!(at("decision: reject by auto") < at("Rejected."), "{said}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provider_openai_responses_runs_the_task_over_the_responses_api() {
    let server = FakeServer::start(fruits()).await.unwrap();
    let e = env();
    let (url, data, ws) = (server.base_url(Protocol::Responses), e.data.clone(), e.ws.to_string_lossy().into_owned());
    let out = tokio::task::spawn_blocking(move || {
        finishline(
            &[
                "run",
                "create notes.md listing three fruits",
                "--workspace",
                &ws,
                "--provider",
                "openai-responses",
                "--base-url",
                &url,
                "--model",
                "fake-model",
                "--review",
                "approve",
            ],
            &data,
        )
    })
    .await
    .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(std::fs::read_to_string(e.ws.join("notes.md")).unwrap(), "- apple\n- banana\n- cherry\n", "the tool call came over the Responses API");
    let paths: Vec<String> = server.requests().iter().map(|r| r.path.clone()).collect();
    assert!(!paths.is_empty() && paths.iter().all(|p| p == "/v1/responses"), "the agent and the evaluator asked /v1/responses: {paths:?}");
    let listed = finishline(&["sessions", "list", "--json"], &e.data);
    let session: serde_json::Value = serde_json::from_slice(listed.stdout.split(|b| *b == b'\n').next().unwrap()).unwrap();
    assert_eq!(session["provider"], "openai-responses", "recorded as the flag spells it: {session}");
}

/// Flags that would be taken quietly and do something else are usage errors, before anything
/// runs: a misspelt tool in `--allow` (the tool would be refused, not allowed), an empty
/// `--verify` (it passed as a check), a folder whose name is not UTF-8 (a session was made, then
/// failed saying there was no folder), `--force-revert` with `--review approve`.
#[test]
fn a_misspelt_allow_an_empty_verify_and_a_folder_name_that_is_not_text_are_usage_errors() {
    use std::os::unix::ffi::OsStrExt;
    let e = env();
    let ws = e.ws.to_string_lossy().into_owned();
    let base = ["run", "hello", "--base-url", "http://127.0.0.1:9/v1", "--model", "m"];
    let misspelt = finishline(&[&base[..], &["--workspace", &ws, "--allow", "run-command"]].concat(), &e.data);
    assert_eq!(misspelt.status.code(), Some(2));
    let said = String::from_utf8_lossy(&misspelt.stderr);
    assert!(said.contains("--allow run-command: Finishline's agent has no such tool") && said.contains("run_command"), "names the tools there are: {said}");
    let mcp = finishline(&[&base[..], &["--workspace", "/definitely/not/here", "--allow", "run_command,files__write,"]].concat(), &e.data);
    assert!(
        !String::from_utf8_lossy(&mcp.stderr).contains("no such tool"),
        "a known tool, an MCP tool and a trailing comma are taken: {}",
        String::from_utf8_lossy(&mcp.stderr)
    );
    let external = finishline(&[&base[..], &["--workspace", "/definitely/not/here", "--agent", "opencode", "--allow", "bash"]].concat(), &e.data);
    assert!(
        !String::from_utf8_lossy(&external.stderr).contains("no such tool"),
        "an external agent's tools have its own names: {}",
        String::from_utf8_lossy(&external.stderr)
    );
    let empty = finishline(&[&base[..], &["--workspace", &ws, "--verify", " "]].concat(), &e.data);
    assert_eq!(empty.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&empty.stderr).contains("--verify needs a command"), "{}", String::from_utf8_lossy(&empty.stderr));
    // An approval reverts nothing, so a --force-revert beside it was taken and did nothing.
    let approving = finishline(&[&base[..], &["--workspace", &ws, "--review", "approve", "--force-revert"]].concat(), &e.data);
    assert_eq!(approving.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&approving.stderr).contains("--force-revert goes with a reject"), "{}", String::from_utf8_lossy(&approving.stderr));
    let odd = e.ws.parent().unwrap().join(std::ffi::OsStr::from_bytes(b"nu\xffws"));
    std::fs::create_dir_all(&odd).unwrap();
    let out = command(&base, &e.data).arg("--workspace").arg(&odd).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not UTF-8"), "{}", String::from_utf8_lossy(&out.stderr));
    let list = finishline(&["sessions", "list", "--json"], &e.data);
    assert!(lines(&list).is_empty(), "no session was made by any of them");
}

#[test]
fn no_model_is_a_configuration_error() {
    let e = env();
    let out = finishline(&["run", "hello", "--workspace", &e.ws.to_string_lossy(), "--base-url", "http://127.0.0.1:9/v1"], &e.data);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no model"), "the message says what to pass");
}

/// No history yet lists no sessions, as an empty history does: a script asking gets an empty list,
/// not an error; a person reads where it looked.
#[test]
fn listing_before_any_task_is_an_empty_list_not_an_error() {
    let e = env();
    let out = finishline(&["sessions", "list"], &e.data);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("No sessions yet in"), "{}", String::from_utf8_lossy(&out.stdout));
    let json = finishline(&["sessions", "list", "--json"], &e.data);
    assert_eq!((json.status.code(), json.stdout.is_empty()), (Some(0), true), "{}", String::from_utf8_lossy(&json.stdout));
    assert_eq!(finishline(&["sessions", "list", "--status", "nope"], &e.data).status.code(), Some(2), "a status that is none is still refused");
    assert_eq!(finishline(&["sessions", "show", "ses_0123456789"], &e.data).status.code(), Some(2), "a session asked for by id is not there");
}

/// What is wrong is said where the person put it: an empty --model is the flag's, and a bad
/// address in the settings file is the file's (it was blamed on a --base-url never given).
#[test]
fn an_empty_model_flag_and_a_bad_address_in_the_settings_are_named_where_they_are() {
    let e = env();
    let ws = e.ws.to_string_lossy().to_string();
    let empty = finishline(&["run", "hello", "--workspace", &ws, "--base-url", "http://127.0.0.1:9/v1", "--model", " "], &e.data);
    assert_eq!(empty.status.code(), Some(2));
    let said = String::from_utf8_lossy(&empty.stderr);
    assert!(said.contains("--model is empty") && !said.contains("Settings"), "{said}");
    std::fs::create_dir_all(&e.data).unwrap();
    std::fs::write(e.data.join("settings.json"), r#"{"settings": {"provider": {"kind": "openai", "base_url": "ftp://x", "model": "m"}}}"#).unwrap();
    let bad = finishline(&["run", "hello", "--workspace", &ws], &e.data);
    assert_eq!(bad.status.code(), Some(2));
    let said = String::from_utf8_lossy(&bad.stderr);
    assert!(!said.contains("--base-url ftp"), "no flag was given: {said}");
    assert!(said.contains("provider.base_url") && said.contains("settings.json") && said.contains("ftp://x"), "{said}");
    let flag = finishline(&["run", "hello", "--workspace", &ws, "--base-url", "localhost:8080"], &e.data);
    assert!(String::from_utf8_lossy(&flag.stderr).contains("--base-url localhost:8080 is not an http(s) URL"), "a flag's is the flag's");
}

/// A key no setting takes (a typo made by hand) is named once, so the person learns it does
/// nothing; the run goes on with the rest.
#[test]
fn a_settings_key_no_setting_takes_is_named_and_the_run_goes_on() {
    let e = env();
    std::fs::create_dir_all(&e.data).unwrap();
    let file = e.data.join("settings.json");
    std::fs::write(&file, r#"{"settings": {"provider": {"kind": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "m"}, "limits": {"max_step": 5}}}"#)
        .unwrap();
    let out = finishline(&["run", "hello", "--workspace", &e.ws.to_string_lossy()], &e.data);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(said.matches("limits.max_step ").count(), 1, "named once: {said}");
    assert!(said.contains("limits.max_step is not a setting this version knows") && said.contains("settings.json"), "{said}");
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(shown.contains("Could not connect to the provider at http://127.0.0.1:9/v1"), "and the run went on to the provider: {shown}");
    assert!(shown.contains("● failed (as above)") && !shown.contains("● failed: Could not connect"), "the failure is said once: {shown}");
}

/// A settings file written by hand says what is wrong with it, by field, instead of being taken
/// for no settings at all.
#[test]
fn a_settings_file_that_cannot_be_used_says_where_it_is_wrong() {
    let e = env();
    std::fs::create_dir_all(&e.data).unwrap();
    let run = || finishline(&["run", "hello", "--workspace", &e.ws.to_string_lossy()], &e.data);
    let file = e.data.join("settings.json");
    std::fs::write(&file, r#"{"provider": {"kind": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "m"}}"#).unwrap();
    let out = run();
    assert_eq!(out.status.code(), Some(2));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("\"settings\"") && said.contains("settings.json"), "the settings sit at the top level, where the app does not read them: {said}");
    std::fs::write(&file, r#"{"settings": {"limits": {"max_steps": "ten"}}}"#).unwrap();
    let said = String::from_utf8_lossy(&run().stderr).to_string();
    assert!(said.contains("limits.max_steps"), "the wrong value is named by where it is: {said}");
    // "Set it aside" is a button in the window; here it is the command that does it.
    assert!(said.contains(&format!("mv {} {}.broken", file.display(), file.display())), "{said}");
    // A value out of range: named in the file that holds it, or as the flag that gave it.
    std::fs::write(&file, r#"{"settings": {"provider": {"kind": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "m"}, "limits": {"max_steps": 0}}}"#)
        .unwrap();
    let said = String::from_utf8_lossy(&run().stderr).to_string();
    assert!(said.contains("limits.max_steps in ") && said.contains("settings.json: must be between 1 and 10000"), "{said}");
    let flag = finishline(&["run", "hello", "--workspace", &e.ws.to_string_lossy(), "--max-steps", "20000"], &e.data);
    let said = String::from_utf8_lossy(&flag.stderr).to_string();
    assert!(said.contains("--max-steps: must be between 1 and 10000, not 20000"), "{said}");
    // Another model's window in the file is the file's, even when --context-window is given.
    std::fs::write(
        &file,
        r#"{"settings": {"provider": {"kind": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "m"}, "context_windows": {"other": 5}}}"#,
    )
    .unwrap();
    let out = finishline(&["run", "hello", "--workspace", &e.ws.to_string_lossy(), "--context-window", "8192"], &e.data);
    let said = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(said.contains("context_windows in ") && said.contains("“other”") && !said.contains("--context-window:"), "{said}");
    std::fs::write(&file, "[]").unwrap();
    let out = run();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a settings object"), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn a_remote_provider_without_a_key_is_a_configuration_error() {
    let e = env();
    let out = finishline(&["run", "hello", "--workspace", &e.ws.to_string_lossy(), "--model", "gpt-x"], &e.data);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("OPENAI_API_KEY"), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn a_key_variable_named_with_api_key_env_that_is_not_set_is_a_configuration_error_even_for_a_local_server() {
    let e = env();
    let out = command(
        &["run", "hello", "--workspace", &e.ws.to_string_lossy(), "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--api-key-env", "NOPE_KEY"],
        &e.data,
    )
    .env_remove("NOPE_KEY")
    .output()
    .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "nothing is sent without the key the person named: {said}");
    assert!(said.contains("NOPE_KEY") && said.contains("not set"), "it names the variable and what is wrong with it: {said}");
}

#[test]
fn bad_flags_are_usage_errors() {
    let e = env();
    let out = finishline(&["run", "x", "--review", "maybe"], &e.data);
    assert_eq!(out.status.code(), Some(2));
    let out = finishline(&["run", "x", "--workspace", "/definitely/not/here", "--model", "m", "--base-url", "http://127.0.0.1:9/v1"], &e.data);
    assert_eq!(out.status.code(), Some(2), "a missing workspace is a usage error: {}", String::from_utf8_lossy(&out.stderr));
    // What only starts a task is refused where no task starts, and not offered in the help there.
    for (sub, id) in [("review", "ses_x"), ("resume", "ses_x")] {
        for option in ["--attempts", "--base", "--isolation", "--when-busy", "--plan"] {
            let out = finishline(&["sessions", sub, id, option, "x"], &e.data);
            assert_eq!(out.status.code(), Some(2), "sessions {sub} {option}");
            assert!(String::from_utf8_lossy(&out.stderr).contains(&format!("unexpected argument '{option}'")), "sessions {sub} {option}");
        }
        let help = String::from_utf8_lossy(&finishline(&["sessions", sub, "--help"], &e.data).stdout).to_string();
        assert!(!help.contains("--attempts") && help.contains("--model"), "sessions {sub} --help: {help}");
        // What shapes the run it starts is under a heading of its own, after the command's own.
        let heading = help.find("\nFor the run it starts").unwrap_or_else(|| panic!("sessions {sub} --help: {help}"));
        assert!(help.find("--max-steps").is_some_and(|at| at > heading), "sessions {sub} --help: {help}");
        let general = help.find("\nHistory and output:").unwrap_or_else(|| panic!("sessions {sub} --help: {help}"));
        assert!(help.find("--json").is_some_and(|at| at > general) && general > heading, "sessions {sub} --help: {help}");
    }
    let help = String::from_utf8_lossy(&finishline(&["sessions", "review", "--help"], &e.data).stdout).to_string();
    let (approve, heading) = (help.find("--approve").unwrap(), help.find("\nFor the run it starts").unwrap());
    assert!(approve < heading, "the decision's own options first: {help}");
    let help = String::from_utf8_lossy(&finishline(&["run", "--help"], &e.data).stdout).to_string();
    assert!(["--attempts", "--base", "--isolation", "--when-busy", "--plan "].iter().all(|o| help.contains(o)), "run still takes them: {help}");
}

/// A script's author finds what each exit status means where they look first.
#[test]
fn the_help_says_what_each_exit_code_means() {
    let e = env();
    for args in [&["--help"][..], &["run", "--help"]] {
        let help = String::from_utf8_lossy(&finishline(args, &e.data).stdout).to_string();
        for code in ["0 done", "2 usage", "3 rejected", "4 failed", "5 cancelled", "6 waiting for you"] {
            assert!(help.contains(code), "finishline {args:?} names exit code {code}: {help}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exit_codes_follow_how_the_session_ended() {
    // 4: a wrong key.
    let server = FakeServer::start(serde_json::from_value(json!({"rules": [{"reply": {"fault": {"type": "status", "status": 401}}}]})).unwrap()).await.unwrap();
    let e = env();
    let (url, data, ws) = (server.base_url(Protocol::Openai), e.data.clone(), e.ws.to_string_lossy().into_owned());
    let out =
        tokio::task::spawn_blocking(move || finishline(&["run", "hi", "--workspace", &ws, "--base-url", &url, "--model", "m", "--json"], &data)).await.unwrap();
    assert_eq!(out.status.code(), Some(4), "a wrong key exits 4");
    assert!(
        lines(&out).iter().any(|l| l["type"] == "error" && l["code"] == "auth"),
        "and says why, with the code `auth`: {}",
        String::from_utf8_lossy(&out.stdout)
    );

    // 6: waiting for a review with nobody to answer.
    let server = FakeServer::start(fruits()).await.unwrap();
    let e = env();
    let (url, data, ws) = (server.base_url(Protocol::Openai), e.data.clone(), e.ws.to_string_lossy().into_owned());
    let out = tokio::task::spawn_blocking(move || finishline(&["run", "create notes.md", "--workspace", &ws, "--base-url", &url, "--model", "m"], &data))
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(6), "review prompt with no terminal waits for a person: exit 6");

    // 3: rejected.
    let server = FakeServer::start(fruits()).await.unwrap();
    let e = env();
    let (url, data, ws) = (server.base_url(Protocol::Openai), e.data.clone(), e.ws.to_string_lossy().into_owned());
    let out = tokio::task::spawn_blocking(move || {
        finishline(&["run", "create notes.md", "--workspace", &ws, "--base-url", &url, "--model", "m", "--review", "reject"], &data)
    })
    .await
    .unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(e.ws.join("notes.md").exists(), "--review reject does not revert: it is for dry runs");

    // 3, and the files go back only when the person says so with --force-revert.
    let server = FakeServer::start(fruits()).await.unwrap();
    let e = env();
    std::fs::write(e.ws.join("notes.md"), "my own notes\n").unwrap();
    let (url, data, ws) = (server.base_url(Protocol::Openai), e.data.clone(), e.ws.to_string_lossy().into_owned());
    let out = tokio::task::spawn_blocking(move || {
        finishline(&["run", "create notes.md", "--workspace", &ws, "--base-url", &url, "--model", "m", "--review", "reject", "--force-revert"], &data)
    })
    .await
    .unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(
        std::fs::read_to_string(e.ws.join("notes.md")).unwrap(),
        "my own notes\n",
        "--force-revert puts the person's file back as it was before the agent"
    );

    // 6: a tool that asks, with no terminal and no --allow, is denied.
    let server = FakeServer::start(
        serde_json::from_value(json!({"rules": [{"reply": {"tool_calls": [{"name": "run_command", "arguments": {"command": "touch ran.txt"}}]}}]})).unwrap(),
    )
    .await
    .unwrap();
    let e = env();
    let (url, data, ws) = (server.base_url(Protocol::Openai), e.data.clone(), e.ws.to_string_lossy().into_owned());
    let out = tokio::task::spawn_blocking(move || finishline(&["run", "touch it", "--workspace", &ws, "--base-url", &url, "--model", "m", "--json"], &data))
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(6));
    assert_eq!(lines(&out).last().unwrap()["end_reason"], "permission_denied");
    assert!(!e.ws.join("ran.txt").exists(), "the denied command did not run");

    // 0 for an answer; 6 for a reply no check could read: "Done!" with nothing done may be a
    // false claim, and a script must not take it for success.
    for (evaluator, end, code) in
        [("{\"announced_action_not_taken\": false, \"action\": \"\"}", "conversation", 0), ("not json at all", "conversation_unchecked", 6)]
    {
        let rules = json!({"rules": [
            {"when": {"kind": "evaluator"}, "reply": {"text": evaluator}},
            {"when": {"kind": "agent"}, "reply": {"text": "Done! I wrote notes.md as asked."}}
        ]});
        let server = FakeServer::start(serde_json::from_value(rules).unwrap()).await.unwrap();
        let e = env();
        let (url, data, ws) = (server.base_url(Protocol::Openai), e.data.clone(), e.ws.to_string_lossy().into_owned());
        let out = tokio::task::spawn_blocking(move || {
            finishline(&["run", "write notes.md", "--workspace", &ws, "--base-url", &url, "--model", "m", "--json"], &data)
        })
        .await
        .unwrap();
        assert_eq!(lines(&out).last().unwrap()["end_reason"], end, "{}", String::from_utf8_lossy(&out.stdout));
        assert_eq!(out.status.code(), Some(code), "{end}");
        // 6 with no review to decide says what waits: the person's own look at the answer.
        let said = String::from_utf8_lossy(&out.stderr);
        assert_eq!(said.contains("could not check this answer") && said.contains("sessions show"), code == 6, "{end}: {said}");
    }
}

/// The real local model (shared/tools/local-llm): every step streams, usage is recorded, and the
/// run ends within its limits with a stored end reason and the exit code for it.
#[test]
fn a_run_against_the_real_local_model_ends_within_its_limits() {
    let script = std::env::var("FINISHLINE_LOCAL_LLM")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/tools/local-llm"));
    let start = Command::new("bash").arg(&script).arg("start").output().expect("run local-llm");
    assert!(start.status.success(), "the local model must start: {}", String::from_utf8_lossy(&start.stderr));
    let url = String::from_utf8_lossy(&start.stdout).lines().last().unwrap().trim().to_string();
    let e = env();
    let out = finishline(
        &[
            "run",
            "create notes.md listing three fruits",
            "--workspace",
            &e.ws.to_string_lossy(),
            "--base-url",
            &url,
            "--model",
            "smollm2",
            "--max-steps",
            "6",
            "--max-output-tokens",
            "200",
            "--json",
        ],
        &e.data,
    );
    let events = lines(&out);
    let summary = events.last().unwrap();
    assert_eq!(summary["type"], "summary", "the run always ends with a summary");
    let steps: Vec<&Value> = events.iter().filter(|e| e["type"] == "step_finished").collect();
    assert!(!steps.is_empty() && steps.len() <= 6, "within the step limit: {} steps", steps.len());
    for s in &steps {
        assert!(s["usage"]["output_tokens"].as_u64().unwrap() > 0, "usage is recorded for every step: {s}");
    }
    let streamed = events.iter().filter(|e| e["type"] == "text_delta").count();
    assert!(streamed >= 1, "the model's text streamed");
    assert!(events.iter().any(|e| e["type"] == "run_finished"), "a run_finished event");
    let end = summary["end_reason"].as_str().expect("a stored end reason");
    let status = summary["status"].as_str().unwrap();
    let expected_code = match status {
        "completed" => 0,
        "idle" if end == "conversation" => 0,
        "failed" => 4,
        _ => 6,
    };
    assert_eq!(out.status.code(), Some(expected_code), "exit code for {status}/{end}");
    for ev in events.iter().filter(|e| e["type"] == "evaluation") {
        assert!(ev["parse_ok"] == true || ev["verdict"] == "unavailable", "a verdict that did not parse is unavailable, never done: {ev}");
    }
    println!("local model: {} steps, status {status}, end reason {end}", steps.len());
}

/// A two-step plan (a.txt, then b.txt) that the manager makes and every step finishes.
fn two_step_plan() -> fake_llm::Scenario {
    let plan = json!({"steps": [
        {"title": "Write a.txt", "instructions": "Write a.txt.", "criteria": ["a.txt exists"], "depends_on": []},
        {"title": "Write b.txt", "instructions": "Write b.txt.", "criteria": ["b.txt exists"], "depends_on": [0]}
    ]});
    let write = |p: &str| json!({"tool_calls": [{"name": "write_file", "arguments": {"path": p, "content": "x"}}]});
    let scenario: fake_llm::Scenario = serde_json::from_value(json!({"rules": [
        {"when": {"kind": "manager"}, "reply": {"text": plan.to_string()}},
        {"when": {"kind": "evaluator", "system_contains": "leave undone what it was to do"}, "reply": {"text": "{\"left_undone\": false, \"action\": \"\"}"}},
        {"when": {"kind": "evaluator"}, "reply": {"text": "{\"done\": true, \"summary\": \"the file is there\", \"remaining\": [], \"continuation_prompt\": \"\", \"is_stuck\": false, \"stuck_reason\": \"\"}"}},
        {"when": {"kind": "agent", "last_message_contains": "Created"}, "reply": {"text": DONE}},
        {"when": {"kind": "agent", "last_message_contains": "This step: Write a.txt"}, "reply": write("a.txt")},
        {"when": {"kind": "agent", "last_message_contains": "This step: Write b.txt"}, "reply": write("b.txt")}
    ]}))
    .unwrap();
    scenario
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_with_plan_on_prints_the_plan_and_each_steps_outcome() {
    let server = FakeServer::start(two_step_plan()).await.unwrap();
    let e = env();
    let url = server.base_url(Protocol::Openai);
    let (data, ws) = (e.data.clone(), e.ws.to_string_lossy().into_owned());
    let out = tokio::task::spawn_blocking(move || {
        finishline(
            &["run", "write a.txt and b.txt", "--workspace", &ws, "--base-url", &url, "--model", "fake-model", "--plan", "on", "--review", "approve"],
            &data,
        )
    })
    .await
    .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "a verified plan is approved like a run: {text}\n{}", String::from_utf8_lossy(&out.stderr));
    for line in [
        "▤ plan: 2 steps",
        "1. Write a.txt — done when: a.txt exists",
        "▤ step 1/2: Write a.txt",
        "▤ step 2/2: Write b.txt",
        "step ended: verified_done — a.txt exists",
        "decided by checked without a model: a.txt exists ✓",
        "⚖ evaluator: done — the file is there",
    ] {
        assert!(text.contains(line), "the terminal shows the plan and each step's outcome ({line}):\n{text}");
    }
    // A step's hand-over is not Finishline sending the agent back, and a step's fresh (empty)
    // todo list is no news: "todos 0/0", "↻ … (plan_step)" and "1 step, 2 continuations" read as
    // noise and as a run that had to be pushed.
    for noise in ["todos 0/0", "(plan_step", "… evaluating \n"] {
        assert!(!text.contains(noise), "no `{noise}`:\n{text}");
    }
    let summary = text.lines().find(|l| l.starts_with("■ ")).unwrap_or_else(|| panic!("a summary:\n{text}"));
    assert!(summary.contains("2 steps") && summary.contains("0 continuations"), "each step counted, no hand-over as a continuation: {summary}");
    let listed = finishline(&["sessions", "list"], &e.data);
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(listed.contains("[plan 2/2 steps]"), "the session list marks a plan and how far it got:\n{listed}");
    let bad = finishline(&["run", "x", "--plan", "sometimes"], &e.data);
    assert_eq!(bad.status.code(), Some(2), "an unknown plan mode is a usage error");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_left_waiting_for_its_go_ahead_is_run_from_the_terminal_with_sessions_resume() {
    let server = FakeServer::start(two_step_plan()).await.unwrap();
    let e = env();
    let url = server.base_url(Protocol::Openai);
    let (data, ws) = (e.data.clone(), e.ws.to_string_lossy().into_owned());
    let (d, w, u) = (data.clone(), ws.clone(), url.clone());
    let out = tokio::task::spawn_blocking(move || {
        finishline(
            &["run", "write a.txt and b.txt", "--workspace", &w, "--base-url", &u, "--model", "fake-model", "--plan", "on", "--plan-review", "prompt"],
            &d,
        )
    })
    .await
    .unwrap();
    assert_eq!(out.status.code(), Some(6), "with nobody at a terminal the plan waits for its go-ahead");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("finishline sessions resume ses_"), "the message says how to run it from a terminal: {said}");
    let id = String::from_utf8_lossy(&finishline(&["sessions", "list"], &data).stdout).split_whitespace().next().unwrap().to_string();
    assert!(!e.ws.join("a.txt").exists(), "nothing runs before the go-ahead");

    let (d, w, u, i) = (data.clone(), ws.clone(), url.clone(), id.clone());
    let out = tokio::task::spawn_blocking(move || {
        finishline(&["sessions", "resume", &i, "--workspace", &w, "--base-url", &u, "--model", "fake-model", "--review", "approve"], &d)
    })
    .await
    .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "resume runs the waiting plan as the manager made it, and it is approved: {text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("▤ step 2/2: Write b.txt"), "each step's progress is printed:\n{text}");
    assert!(e.ws.join("a.txt").exists() && e.ws.join("b.txt").exists(), "both steps did their work");

    let again = finishline(&["sessions", "resume", &id, "--workspace", &ws, "--base-url", &url, "--model", "fake-model", "--plan-review", "prompt"], &data);
    assert_ne!(again.status.code(), Some(6), "a plan that already ran is not waiting any more");

    // Another plan left waiting, this time cancelled from the terminal.
    let (d, w, u) = (data.clone(), ws.clone(), url.clone());
    let out = tokio::task::spawn_blocking(move || {
        finishline(
            &["run", "write c.txt and d.txt", "--workspace", &w, "--base-url", &u, "--model", "fake-model", "--plan", "on", "--plan-review", "prompt"],
            &d,
        )
    })
    .await
    .unwrap();
    assert_eq!(out.status.code(), Some(6));
    let id = String::from_utf8_lossy(&finishline(&["sessions", "list"], &data).stdout).split_whitespace().next().unwrap().to_string();
    let cancel = finishline(&["sessions", "cancel", &id], &data);
    assert_eq!(cancel.status.code(), Some(0), "the command the message names exists and works: {}", String::from_utf8_lossy(&cancel.stderr));
    let listed = String::from_utf8_lossy(&finishline(&["sessions", "list"], &data).stdout).lines().next().unwrap_or_default().to_string();
    assert!(listed.contains("cancelled"), "the cancelled plan is listed as cancelled: {listed}");
    let twice = finishline(&["sessions", "cancel", &id], &data);
    assert_eq!(twice.status.code(), Some(2), "a session that no longer waits has nothing to cancel, and says so");
    assert!(
        String::from_utf8_lossy(&twice.stderr).contains("nothing in it runs or waits, so there is nothing to cancel"),
        "{}",
        String::from_utf8_lossy(&twice.stderr)
    );
}

/// A plan shown at a terminal for its go-ahead, then cancelled from the window or another
/// terminal: the question no longer stands, so the terminal stops asking, says what happened and
/// ends as cancelled, instead of waiting for an answer that would only be refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_waiting_at_a_terminal_and_cancelled_elsewhere_ends_the_question_there() {
    let server = FakeServer::start(two_step_plan()).await.unwrap();
    let e = env();
    let url = server.base_url(Protocol::Openai);
    let ws = e.ws.to_string_lossy().into_owned();
    let mut terminal = in_a_terminal(
        &["run", "write a.txt and b.txt", "--workspace", &ws, "--base-url", &url, "--model", "fake-model", "--plan", "on", "--plan-review", "prompt"],
        &e.data,
    );
    let seen = collect(terminal.stdout.take().unwrap());
    let asked = tokio::task::block_in_place(|| until_seen(&seen, 60, |s| s.contains("Run this plan?")));
    assert!(asked, "the terminal asks for the plan's go-ahead: {}", seen.lock().unwrap());
    let id = String::from_utf8_lossy(&finishline(&["sessions", "list"], &e.data).stdout).split_whitespace().next().unwrap().to_string();
    let cancel = finishline(&["sessions", "cancel", &id], &e.data);
    assert_eq!(cancel.status.code(), Some(0), "{}", String::from_utf8_lossy(&cancel.stderr));
    let status = tokio::task::block_in_place(|| exits_within(&mut terminal, 15));
    let Some(status) = status else { panic!("the terminal still asks about a cancelled plan: {}", seen.lock().unwrap()) };
    tokio::task::block_in_place(|| until_seen(&seen, 5, |s| s.contains("■ ")));
    let said = seen.lock().unwrap().clone();
    assert_eq!(status.code(), Some(5), "the run ends cancelled: {said}");
    assert!(said.contains("the plan was cancelled in another terminal or the window"), "the terminal says why it stopped asking: {said}");
    assert!(!said.contains("no plan waiting"), "nothing was answered into a plan that was gone: {said}");
    assert!(!e.ws.join("a.txt").exists(), "nothing of the plan ran");

    // A plan left waiting, resumed at a terminal, and cancelled elsewhere while it asks there.
    let waiting = &["run", "write c.txt and d.txt", "--workspace", &ws, "--base-url", &url, "--model", "fake-model", "--plan", "on", "--plan-review", "prompt"];
    assert_eq!(finishline(waiting, &e.data).status.code(), Some(6), "with nobody at a terminal the plan waits");
    let id = String::from_utf8_lossy(&finishline(&["sessions", "list"], &e.data).stdout).split_whitespace().next().unwrap().to_string();
    let mut terminal = in_a_terminal(&["sessions", "resume", &id, "--plan-review", "prompt", "--base-url", &url, "--model", "fake-model"], &e.data);
    let seen = collect(terminal.stdout.take().unwrap());
    let asked = tokio::task::block_in_place(|| until_seen(&seen, 60, |s| s.contains("Run this plan?")));
    assert!(asked, "resuming at a terminal asks for the go-ahead: {}", seen.lock().unwrap());
    assert_eq!(finishline(&["sessions", "cancel", &id], &e.data).status.code(), Some(0));
    let status = tokio::task::block_in_place(|| exits_within(&mut terminal, 15));
    let said = seen.lock().unwrap().clone();
    assert_eq!(status.and_then(|s| s.code()), Some(5), "the resumed question ends too, as cancelled: {said}");
    assert!(said.contains("the plan was cancelled in another terminal or the window"), "{said}");
    assert!(!e.ws.join("c.txt").exists(), "nothing of that plan ran either");
}

/// A plan left waiting, resumed at a terminal that asks for its go-ahead, and run meanwhile from
/// another terminal: the first stops asking, says so and exits 0, since the plan runs there and
/// nothing waits for it here; the plan ran once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_asked_about_at_a_terminal_and_run_from_another_ends_the_question_with_success() {
    let server = FakeServer::start(two_step_plan()).await.unwrap();
    let e = env();
    let url = server.base_url(Protocol::Openai);
    let ws = e.ws.to_string_lossy().into_owned();
    let waiting = &["run", "write a.txt and b.txt", "--workspace", &ws, "--base-url", &url, "--model", "fake-model", "--plan", "on", "--plan-review", "prompt"];
    assert_eq!(finishline(waiting, &e.data).status.code(), Some(6), "with nobody at a terminal the plan waits");
    let id = String::from_utf8_lossy(&finishline(&["sessions", "list"], &e.data).stdout).split_whitespace().next().unwrap().to_string();
    let mut terminal = in_a_terminal(&["sessions", "resume", &id, "--plan-review", "prompt", "--base-url", &url, "--model", "fake-model"], &e.data);
    let seen = collect(terminal.stdout.take().unwrap());
    let asked = tokio::task::block_in_place(|| until_seen(&seen, 60, |s| s.contains("Run this plan?")));
    assert!(asked, "resuming at a terminal asks for the go-ahead: {}", seen.lock().unwrap());
    let (d, u, i) = (e.data.clone(), url.clone(), id.clone());
    let run =
        tokio::task::spawn_blocking(move || finishline(&["sessions", "resume", &i, "--base-url", &u, "--model", "fake-model", "--review", "approve"], &d))
            .await
            .unwrap();
    assert_eq!(run.status.code(), Some(0), "run from the other terminal: {}", String::from_utf8_lossy(&run.stderr));
    let status = tokio::task::block_in_place(|| exits_within(&mut terminal, 15));
    let said = seen.lock().unwrap().clone();
    assert_eq!(status.and_then(|s| s.code()), Some(0), "the first terminal ends, the plan being run elsewhere: {said}");
    assert!(said.contains("the plan was answered in another terminal or the window"), "{said}");
    assert!(e.ws.join("a.txt").exists() && e.ws.join("b.txt").exists(), "the plan ran");
    let store = finishline_engine::store::Store::open(&e.data.join("history.db"), std::sync::Arc::new(finishline_engine::clock::SystemClock)).unwrap();
    let events = store.events(&finishline_engine::domain::SessionId(id.clone()), 0).unwrap();
    let reviewed = events.iter().filter(|e| matches!(e.event, finishline_engine::event::EngineEvent::PlanReviewed { .. })).count();
    assert_eq!(reviewed, 1, "the plan was run once");
}

/// A plan the person edited at its go-ahead (in the window) is shown with what they changed: the
/// export showed the manager's plan as made, steps the person removed and all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_edited_at_its_go_ahead_is_shown_with_what_was_changed() {
    use finishline_engine::event::EngineEvent;
    let server = FakeServer::start(two_step_plan()).await.unwrap();
    let e = env();
    let url = server.base_url(Protocol::Openai);
    let ws = e.ws.to_string_lossy().into_owned();
    let waiting = finishline(
        &["run", "write a.txt and b.txt", "--workspace", &ws, "--base-url", &url, "--model", "fake-model", "--plan", "on", "--plan-review", "prompt"],
        &e.data,
    );
    assert_eq!(waiting.status.code(), Some(6), "the plan waits: {}", String::from_utf8_lossy(&waiting.stderr));
    let id = String::from_utf8_lossy(&finishline(&["sessions", "list"], &e.data).stdout).split_whitespace().next().unwrap().to_string();
    let store = finishline_engine::store::Store::open(&e.data.join("history.db"), std::sync::Arc::new(finishline_engine::clock::SystemClock)).unwrap();
    let sid = finishline_engine::domain::SessionId(id.clone());
    let made =
        store.events(&sid, 0).unwrap().into_iter().find_map(|e| if let EngineEvent::PlanCreated { steps, .. } = e.event { Some(steps) } else { None }).unwrap();
    // What the window's Run plan records when the person took out step 2.
    store.append(&sid, None, EngineEvent::PlanReviewed { approved: true, edited: true, steps: made[..1].to_vec() }).unwrap();
    let shown = finishline(&["sessions", "show", &id], &e.data);
    let said = String::from_utf8_lossy(&shown.stdout);
    assert!(said.contains("**▤ Plan revised:** you edited it before it ran: removed \"Write b.txt\""), "{said}");
}

/// "n" at a plan's go-ahead, in a run or a resume alike, leaves the plan waiting (exit 6) with
/// the ways on: nothing is cancelled that the person did not cancel, and the plan can still be
/// edited in the window or run later.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_to_a_plan_at_a_terminal_leaves_it_waiting_to_be_run_later() {
    use std::io::Write;
    let server = FakeServer::start(two_step_plan()).await.unwrap();
    let e = env();
    let url = server.base_url(Protocol::Openai);
    let ws = e.ws.to_string_lossy().into_owned();
    let mut terminal = in_a_terminal(
        &["run", "write a.txt and b.txt", "--workspace", &ws, "--base-url", &url, "--model", "fake-model", "--plan", "on", "--plan-review", "prompt"],
        &e.data,
    );
    let seen = collect(terminal.stdout.take().unwrap());
    let asked = tokio::task::block_in_place(|| until_seen(&seen, 60, |s| s.contains("Run this plan?")));
    assert!(asked, "the terminal asks for the plan's go-ahead: {}", seen.lock().unwrap());
    terminal.stdin.take().unwrap().write_all(b"n\n").unwrap();
    let status = tokio::task::block_in_place(|| exits_within(&mut terminal, 15));
    let said = seen.lock().unwrap().clone();
    assert_eq!(status.and_then(|s| s.code()), Some(6), "the plan waits: {said}");
    assert!(said.contains("the plan still waits") && said.contains("sessions resume"), "it says how to go on: {said}");
    let listed = String::from_utf8_lossy(&finishline(&["sessions", "list"], &e.data).stdout).into_owned();
    assert!(listed.contains("awaiting_approval"), "not cancelled: {listed}");
    let id = listed.split_whitespace().next().unwrap().to_string();
    let (d, u) = (e.data.clone(), url.clone());
    let resumed =
        tokio::task::spawn_blocking(move || finishline(&["sessions", "resume", &id, "--base-url", &u, "--model", "fake-model", "--review", "approve"], &d))
            .await
            .unwrap();
    assert_eq!(resumed.status.code(), Some(0), "run later, as the manager made it: {}", String::from_utf8_lossy(&resumed.stderr));
    assert!(e.ws.join("a.txt").exists() && e.ws.join("b.txt").exists(), "both steps ran");
}

/// `finishline … | head -1`: once the reader has gone, a run stops as Ctrl-C stops it (recorded
/// cancelled, its agents ended) and every command ends quietly, never with a panic.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_that_goes_away_stops_the_run_quietly_and_records_it_cancelled() {
    use std::io::BufRead;
    let slow: fake_llm::Scenario = serde_json::from_value(json!({"rules": [
        {"when": {"kind": "agent"}, "reply": {"text": "Thinking it over at some length before writing anything at all.", "chunks": 60, "chunk_delay_ms": 100}}
    ]}))
    .unwrap();
    let server = FakeServer::start(slow).await.unwrap();
    let e = env();
    let url = server.base_url(Protocol::Openai);
    let spawn = |args: &[&str]| spawn_finishline(args, &e.data);
    let mut child = spawn(&["run", "write notes.md", "--workspace", &e.ws.to_string_lossy(), "--base-url", &url, "--model", "m", "--json"]);
    let mut first = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
    assert!(first.contains("session_created"), "{first}");
    // The reader (and with it the pipe) is gone here, as `head -1` leaves it.
    let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap()).await.unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!said.contains("panicked"), "no panic: {said}");
    assert_eq!(out.status.code(), Some(5), "stopped, as by Ctrl-C: {said}");
    let rows = lines(&finishline(&["sessions", "list", "--json"], &e.data));
    assert_eq!(rows[0]["status"], "cancelled", "recorded cancelled, not left interrupted: {rows:?}");
    let id = rows[0]["id"].as_str().unwrap();
    assert!(said.contains("the output was closed") && said.contains(&format!("sessions resume {id}")), "why it stopped, and the way on: {said}");

    let mut list = spawn(&["sessions", "list"]);
    drop(list.stdout.take());
    let out = tokio::task::spawn_blocking(move || list.wait_with_output().unwrap()).await.unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!said.contains("panicked") && out.status.code() != Some(101), "a listing whose reader went away ends quietly: {said}");
}

/// What a model writes cannot drive the person's terminal: an escape that clears the screen or
/// retitles the window is dropped from the readable view, the words around it kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminal_escapes_in_the_models_words_never_reach_the_terminal() {
    let escapes: fake_llm::Scenario = serde_json::from_value(json!({"rules": [
        {"when": {"kind": "evaluator"}, "reply": {"text": "{\"done\": true, \"summary\": \"all \\u001b[31mred\\u001b[0m and done\", \"remaining\": [], \"continuation_prompt\": \"\", \"is_stuck\": false, \"stuck_reason\": \"\"}"}},
        {"when": {"kind": "agent"}, "reply": {"text": "Hello \u{1b}[2J\u{1b}]0;pwned\u{7}there."}}
    ]}))
    .unwrap();
    let server = FakeServer::start(escapes).await.unwrap();
    let e = env();
    let url = server.base_url(Protocol::Openai);
    let (data, ws) = (e.data.clone(), e.ws.to_string_lossy().into_owned());
    let out = tokio::task::spawn_blocking(move || {
        finishline(&["run", "say hello \u{1b}]0;task\u{7}now", "--workspace", &ws, "--base-url", &url, "--model", "m"], &data)
    })
    .await
    .unwrap();
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(!out.stdout.iter().any(|b| *b == 0x1b || *b == 0x07), "no escape or bell reaches the terminal: {shown:?}");
    assert!(shown.contains("Hello") && shown.contains("there."), "the words are kept: {shown}");
    // Nor read back from the history: the list, a search and a session shown are read too.
    for args in [&["sessions", "list"][..], &["sessions", "search", "hello"], &["sessions", "show", "ses_0"]] {
        let mut args = args.to_vec();
        let id = lines(&finishline(&["sessions", "list", "--json"], &e.data))[0]["id"].as_str().unwrap().to_string();
        if args[1] == "show" {
            args[2] = &id;
        }
        let out = finishline(&args, &e.data);
        let shown = String::from_utf8_lossy(&out.stdout);
        assert!(!out.stdout.iter().any(|b| *b == 0x1b || *b == 0x07), "{args:?}: {shown:?}");
        assert!(shown.contains("say hello"), "{args:?}: {shown}");
    }
    // An export to a file keeps the text whole: it is the record.
    let id = lines(&finishline(&["sessions", "list", "--json"], &e.data))[0]["id"].as_str().unwrap().to_string();
    assert!(finishline(&["sessions", "export", &id], &e.data).stdout.contains(&0x1b), "the export is the record, whole");
}

/// `run --task-file PATH`: the task as a file holds it, run exactly as the same text given as
/// the argument (the file's last line break is not part of the task, as with `"$(cat PATH)"`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_read_from_a_file_runs_as_the_same_text_given_as_the_argument() {
    let task = "create notes.md listing three fruits";
    let mut runs = Vec::new();
    for from_file in [false, true] {
        let server = FakeServer::start(fruits()).await.unwrap();
        let e = env();
        let file = e._dir.path().join("task.txt");
        std::fs::write(&file, format!("{task}\n")).unwrap();
        let (url, data, ws, file) =
            (server.base_url(Protocol::Openai), e.data.clone(), e.ws.to_string_lossy().into_owned(), file.to_string_lossy().into_owned());
        let out = tokio::task::spawn_blocking(move || {
            let mut args = if from_file { vec!["run", "--task-file", &file] } else { vec!["run", task] };
            args.extend_from_slice(&["--workspace", &ws, "--base-url", &url, "--model", "fake-model", "--review", "approve", "--json"]);
            finishline(&args, &data)
        })
        .await
        .unwrap();
        assert_eq!(out.status.code(), Some(0), "from a file: {from_file}; stderr: {}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(std::fs::read_to_string(e.ws.join("notes.md")).unwrap(), "- apple\n- banana\n- cherry\n", "from a file: {from_file}");
        let events = lines(&out);
        let created = events.iter().find(|e| e["type"] == "session_created").expect("a session").clone();
        let summary = events.last().unwrap().clone();
        runs.push((created["task"].clone(), summary["status"].clone(), summary["end_reason"].clone(), summary["decision"].clone()));
    }
    assert_eq!(runs[0].0, task);
    assert_eq!(runs[1], runs[0], "the task from the file is the same task, and it ends the same way");
}

/// A task file that cannot be the task is refused before anything starts (exit 2, no session,
/// no history), saying which file and why; so is one given beside a task, or neither.
#[test]
fn a_task_file_that_cannot_be_the_task_is_refused_with_the_reason_and_nothing_is_created() {
    let e = env();
    let dir = e._dir.path();
    let missing = dir.join("missing.txt");
    let blank = dir.join("blank.txt");
    std::fs::write(&blank, " \n\t\n").unwrap();
    let huge = dir.join("huge.txt");
    std::fs::write(&huge, "x".repeat(1_000_001)).unwrap();
    let latin1 = dir.join("latin1.txt");
    std::fs::write(&latin1, b"caf\xe9 au lait\n").unwrap();
    // UTF-16 saved without its BOM (as some Windows editors do) is valid UTF-8 with NULs between
    // the letters: it was run as a task of invisible characters and printed so.
    let utf16 = dir.join("utf16.txt");
    std::fs::write(&utf16, "fix it".encode_utf16().flat_map(u16::to_le_bytes).collect::<Vec<u8>>()).unwrap();
    let ws = e.ws.to_string_lossy().into_owned();
    let run = |given: &[&str]| {
        let mut args = vec!["run"];
        args.extend_from_slice(given);
        args.extend_from_slice(&["--workspace", &ws, "--base-url", "http://127.0.0.1:9/v1", "--model", "m"]);
        finishline(&args, &e.data)
    };
    let path = |p: &std::path::Path| p.to_string_lossy().into_owned();
    for (file, says) in [
        (path(&missing), vec![path(&missing), "No such file or directory".to_string()]),
        (path(dir), vec![path(dir), "Is a directory".to_string()]),
        (path(&blank), vec![path(&blank), "the task is empty".to_string()]),
        (path(&huge), vec![path(&huge), "1000001 bytes".to_string(), "1000000 bytes".to_string()]),
        (path(&latin1), vec![path(&latin1), "UTF-8".to_string()]),
        (path(&utf16), vec![path(&utf16), "NUL bytes".to_string(), "byte offset 1".to_string(), "UTF-8".to_string()]),
    ] {
        let out = run(&["--task-file", &file]);
        let said = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{file}: {said}");
        for s in says {
            assert!(said.contains(&s), "{file}: the message says `{s}`: {said}");
        }
        assert!(!e.data.exists(), "{file}: nothing is created in the data folder");
    }
    let both = run(&["a task", "--task-file", &path(&blank)]);
    assert_eq!(both.status.code(), Some(2), "a task and a task file: {}", String::from_utf8_lossy(&both.stderr));
    let neither = run(&[]);
    assert_eq!(neither.status.code(), Some(2), "no task at all: {}", String::from_utf8_lossy(&neither.stderr));
    assert!(String::from_utf8_lossy(&neither.stderr).contains("<TASK|--task-file <PATH>>"), "it names both ways to give it");
    assert!(!e.data.exists());
}

/// A data folder that is a file is named as such by every command, not read as a broken
/// settings file or an empty history, and the file is left as it was.
#[test]
fn a_data_dir_that_is_a_file_is_named_so_by_every_command() {
    let e = env();
    std::fs::write(&e.data, "my notes, not a folder\n").unwrap();
    let json = finishline(&["sessions", "list", "--json"], &e.data);
    assert_eq!(json.status.code(), Some(2));
    let line: serde_json::Value = serde_json::from_str(String::from_utf8_lossy(&json.stdout).trim()).expect("one JSON line");
    assert!(line["message"].as_str().unwrap().contains("is a file, not a folder"), "{line}");
    for args in [&["sessions", "list"][..], &["run", "hello", "--base-url", "http://127.0.0.1:9/v1", "--model", "m"], &["stats", "evaluator"]] {
        let out = finishline(args, &e.data);
        let said = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {said}");
        assert!(said.contains("is a file, not a folder") && said.contains(&e.data.to_string_lossy().into_owned()), "{args:?}: {said}");
    }
    assert_eq!(std::fs::read_to_string(&e.data).unwrap(), "my notes, not a folder\n");
}

#[test]
fn a_workspace_that_does_not_exist_is_named_in_words_with_the_way_on() {
    let e = env();
    let missing = e.data.parent().unwrap().join("no-such-project");
    let out = finishline(&["run", "hello", "--workspace", &missing.to_string_lossy(), "--base-url", "http://127.0.0.1:9/v1", "--model", "m"], &e.data);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(said.contains(&format!("there is no folder at {}", missing.display())), "{said}");
    assert!(!said.contains("os error"), "no system error number: {said}");
}

/// With --json every history command says its error as one JSON line, `{"type": "error", …}`,
/// as `run` does: a script reading the output never meets plain text instead.
#[test]
fn every_history_command_says_its_error_as_one_json_line_with_json() {
    let e = env();
    std::fs::create_dir_all(&e.data).unwrap();
    drop(finishline_engine::store::Store::open(&e.data.join("history.db"), std::sync::Arc::new(finishline_engine::clock::SystemClock)).unwrap());
    for args in [
        &["sessions", "show", "ses_nope", "--json"][..],
        &["sessions", "list", "--status", "foo", "--json"],
        &["sessions", "discard", "ses_nope", "--json"],
        &["sessions", "cancel", "ses_nope", "--json"],
        &["sessions", "export", "ses_nope", "--json"],
    ] {
        let out = finishline(args, &e.data);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        let said = lines(&out);
        assert_eq!(said.len(), 1, "{args:?}: one line: {}", String::from_utf8_lossy(&out.stdout));
        assert_eq!(said[0]["type"], "error", "{args:?}: {}", said[0]);
        assert!(!said[0]["message"].as_str().unwrap_or("").is_empty(), "{args:?}: {}", said[0]);
    }
    let status = lines(&finishline(&["sessions", "list", "--status", "foo", "--json"], &e.data));
    assert!(status[0]["message"].as_str().unwrap().contains("awaiting_review"), "it names the statuses there are: {}", status[0]);
}

/// A group and its attempts are made in the same moment, so their ids start alike: letters that
/// name both are refused by `sessions export`, never read as the one or the other.
#[test]
fn export_refuses_letters_that_name_a_session_and_a_group_and_takes_either_with_its_prefix() {
    let e = env();
    std::fs::create_dir_all(&e.data).unwrap();
    let path = e.data.join("history.db");
    {
        let store = finishline_engine::store::Store::open(&path, std::sync::Arc::new(finishline_engine::clock::SystemClock)).unwrap();
        for task in ["alone", "an attempt"] {
            let (sid, _) = store
                .create_session(&finishline_engine::store::NewSession {
                    task: task.into(),
                    workspace: "/tmp/ws".into(),
                    provider: "openai".into(),
                    model: "m".into(),
                    base_url: None,
                })
                .unwrap();
            if task == "an attempt" {
                let group = finishline_engine::domain::GroupId("grp_0a1b2c3d4e5f9999".into());
                store
                    .append(
                        &sid,
                        None,
                        finishline_engine::event::EngineEvent::AttemptStarted {
                            group,
                            number: 1,
                            of: 1,
                            label: "agent".into(),
                            evaluator: None,
                            evaluator_provider: None,
                        },
                    )
                    .unwrap();
            }
        }
    }
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "PRAGMA foreign_keys = OFF;
         UPDATE events SET session_id = 'ses_0a1b2c3d4e5f1111' WHERE session_id = (SELECT id FROM sessions WHERE task = 'alone');
         UPDATE sessions SET id = 'ses_0a1b2c3d4e5f1111' WHERE task = 'alone';",
    )
    .unwrap();
    drop(conn);
    let out = finishline(&["sessions", "export", "0a1b2c3d4e5f"], &e.data);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(said.contains("0a1b2c3d4e5f names a session and an attempt group: give it with ses_ for the session, or grp_ for the whole group"), "{said}");
    let group = finishline(&["sessions", "export", "grp_0a1b2c3d4e5f"], &e.data);
    assert!(String::from_utf8_lossy(&group.stdout).starts_with("# Attempts: an attempt"), "{}", String::from_utf8_lossy(&group.stderr));
    let session = finishline(&["sessions", "export", "ses_0a1b2c3d4e5f"], &e.data);
    assert!(String::from_utf8_lossy(&session.stdout).starts_with("# alone"), "{}", String::from_utf8_lossy(&session.stderr));
}

/// An id this history does not have is said the same way by every command that takes one, with
/// the command that lists the ones it has; a group's id too.
#[test]
fn every_command_says_an_unknown_id_the_same_way_and_how_to_see_the_ones_there_are() {
    let e = env();
    std::fs::create_dir_all(&e.data).unwrap();
    drop(finishline_engine::store::Store::open(&e.data.join("history.db"), std::sync::Arc::new(finishline_engine::clock::SystemClock)).unwrap());
    for args in [
        &["sessions", "show", "ses_nope"][..],
        &["sessions", "export", "ses_nope"],
        &["sessions", "cancel", "ses_nope"],
        &["sessions", "discard", "ses_nope"],
        &["sessions", "review", "ses_nope", "--approve"],
        &["sessions", "resume", "ses_nope", "go on"],
    ] {
        let out = finishline(args, &e.data);
        let said = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {said}");
        assert!(said.contains("there is no session ses_nope in this history") && said.contains("sessions list"), "{args:?}: {said}");
        // A script reads the same code as the window's, whichever command it was.
        let json = finishline(&[args, &["--json"][..]].concat(), &e.data);
        let line: Value =
            serde_json::from_slice(&json.stdout).unwrap_or_else(|err| panic!("{args:?}: one JSON line ({err}): {}", String::from_utf8_lossy(&json.stdout)));
        assert_eq!((line["type"].as_str(), line["code"].as_str()), (Some("error"), Some("not_found")), "{args:?}");
    }
    for args in [&["sessions", "attempts", "grp_nope"][..], &["sessions", "attempts", "grp_nope", "--reject"]] {
        let out = finishline(args, &e.data);
        let said = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {said}");
        assert!(said.contains("there is no attempt group grp_nope in this history") && said.contains("sessions list"), "{args:?}: {said}");
    }
}

/// The history commands before any task has run say where they looked and how to look elsewhere.
#[test]
fn history_commands_with_no_history_say_where_they_looked_and_how_to_point_elsewhere() {
    let e = env();
    let out = finishline(&["sessions", "search", "parser"], &e.data);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(said.contains(&e.data.to_string_lossy().into_owned()), "where it looked: {said}");
    assert!(said.contains("--data-dir") && said.contains("finishline run"), "and the ways forward: {said}");
    // The list is empty, not an error, and says the same.
    let listed = finishline(&["sessions", "list"], &e.data);
    let said = String::from_utf8_lossy(&listed.stdout);
    assert!(said.contains(&e.data.to_string_lossy().into_owned()) && said.contains("--data-dir") && said.contains("finishline run"), "{said}");
}

/// Built and run by its path (`./target/release/finishline …`, as the README does) with no
/// `finishline` on PATH, the commands it suggests name it as it was run, so they work pasted.
#[test]
fn suggestions_name_the_program_as_it_was_run_when_it_is_not_on_path() {
    let e = env();
    let bin = std::path::Path::new(bin());
    let out = Command::new("./finishline")
        .current_dir(bin.parent().unwrap())
        .args(["sessions", "search", "parser", "--data-dir"])
        .arg(&e.data)
        // A PATH that holds no finishline, whatever this machine has installed.
        .env("PATH", e._dir.path())
        .env("XDG_DATA_HOME", e.data.join("xdg"))
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(said.contains("`./finishline run \"…\" --data-dir"), "pasted where it was run, it runs: {said}");
}

/// Sessions made one after another share the start of their ids: a start two of them share is
/// not taken for either, and the answer names both.
#[test]
fn the_start_of_an_id_two_sessions_share_names_both_and_picks_neither_and_the_end_names_one() {
    let e = env();
    std::fs::create_dir_all(&e.data).unwrap();
    let store = finishline_engine::store::Store::open(&e.data.join("history.db"), std::sync::Arc::new(finishline_engine::clock::SystemClock)).unwrap();
    let new = |task: &str| finishline_engine::store::NewSession {
        task: task.into(),
        workspace: "/ws".into(),
        provider: "openai".into(),
        model: "m".into(),
        base_url: None,
    };
    let a = store.create_session(&new("first")).unwrap().0 .0;
    let b = store.create_session(&new("second")).unwrap().0 .0;
    drop(store);
    let shared = a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count();
    assert!(shared >= 8, "ids made together share their start: {a} {b}");
    let out = finishline(&["sessions", "show", &a[..shared]], &e.data);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(said.contains("2 sessions start with") && said.contains(&a) && said.contains(&b), "{said}");

    // Ids made together differ at their end, which is what a task's worktree and branch are
    // named with (`finishline/793ccd-write-notes`): six characters of it name the session.
    let out = finishline(&["sessions", "show", &b[b.len() - 6..]], &e.data);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("second"), "the session whose id ends so: {}", String::from_utf8_lossy(&out.stdout));
    let out = finishline(&["sessions", "show", &b[b.len() - 5..]], &e.data);
    assert_eq!(out.status.code(), Some(2), "five characters are too few to be taken for an id's end");
}

/// The data folder inside the workspace (the CLI run from the home folder, which holds the app's
/// data folder) is Finishline's, not the task's: the review lists the task's file only, and a
/// revert undoes it and leaves the history alone. Before, the review listed the history database
/// and the checkpoints' own objects as the agent's work, and the revert of them failed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_data_folder_inside_the_workspace_is_not_the_tasks_work_and_a_revert_leaves_it_alone() {
    let server = FakeServer::start(fruits()).await.unwrap();
    let e = env();
    let data = e.ws.join(".local/share/dev.finishline.app");
    let url = server.base_url(Protocol::Openai);
    let ws = e.ws.to_string_lossy().into_owned();
    let d = data.clone();
    let out = tokio::task::spawn_blocking(move || {
        finishline(&["run", "create notes.md listing three fruits", "--workspace", &ws, "--base-url", &url, "--model", "fake-model", "--json"], &d)
    })
    .await
    .unwrap();
    assert_eq!(out.status.code(), Some(6), "the review waits; stderr: {}", String::from_utf8_lossy(&out.stderr));
    let events = lines(&out);
    let review = events.iter().find(|e| e["type"] == "review_requested").expect("a review");
    let files: Vec<&str> = review["files_changed"].as_array().unwrap().iter().map(|f| f["path"].as_str().unwrap()).collect();
    assert_eq!(files, vec!["notes.md"], "only the task's own file");
    let id = events.last().unwrap()["session_id"].as_str().unwrap().to_string();
    let d = data.clone();
    let rejected = tokio::task::spawn_blocking(move || finishline(&["sessions", "review", &id, "--reject", "--revert"], &d)).await.unwrap();
    assert_eq!(rejected.status.code(), Some(3), "rejected and reverted: {}", String::from_utf8_lossy(&rejected.stderr));
    assert!(!e.ws.join("notes.md").exists(), "the task's file is undone");
    let list = finishline(&["sessions", "list", "--json"], &data);
    assert_eq!(lines(&list)[0]["status"], "rejected", "the history is whole: {}", String::from_utf8_lossy(&list.stderr));
}

/// A command on a session (here a request for changes) runs the verify commands of the session's
/// own folder, wherever it is typed: the commands Finishline prints carry no `--workspace`, so
/// they are pasted from anywhere. It ran the commands of the folder it was typed in, inside the
/// task's folder, and left the task's own unchecked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follow_up_typed_in_another_folder_runs_the_sessions_own_verify_commands() {
    let scenario: fake_llm::Scenario = serde_json::from_value(json!({"rules": [
        {"when": {"kind": "evaluator"}, "reply": {"text": "{\"done\": true, \"summary\": \"written\", \"remaining\": [], \"continuation_prompt\": \"\", \"is_stuck\": false, \"stuck_reason\": \"\"}"}},
        {"when": {"kind": "agent", "last_message_contains": "Created"}, "reply": {"text": "Done! The file is written as asked."}},
        {"when": {"kind": "agent", "last_message_contains": "also write more.txt"}, "reply": {"text": "Adding it.", "tool_calls": [{"name": "write_file", "arguments": {"path": "more.txt", "content": "more\n"}}]}},
        {"when": {"kind": "agent"}, "reply": {"text": "Writing it.", "tool_calls": [{"name": "write_file", "arguments": {"path": "approved.txt", "content": "approved\n"}}]}}
    ]}))
    .unwrap();
    let server = FakeServer::start(scenario).await.unwrap();
    let e = env();
    let elsewhere = e.ws.parent().unwrap().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::create_dir_all(&e.data).unwrap();
    let settings = json!({"settings": {"verify_commands": {
        e.ws.to_string_lossy(): ["echo ran >> own-check.log"],
        elsewhere.to_string_lossy(): ["echo wrong >> elsewhere-check.log"]
    }}});
    std::fs::write(e.data.join("settings.json"), settings.to_string()).unwrap();
    let url = server.base_url(Protocol::Openai);
    let (ws, data) = (e.ws.to_string_lossy().into_owned(), e.data.clone());
    let (u, d) = (url.clone(), data.clone());
    let out = tokio::task::spawn_blocking(move || {
        finishline(&["run", "write approved.txt", "--workspace", &ws, "--base-url", &u, "--model", "fake-model", "--json"], &d)
    })
    .await
    .unwrap();
    assert_eq!(out.status.code(), Some(6), "the review waits; stderr: {}", String::from_utf8_lossy(&out.stderr));
    let id = lines(&out).last().unwrap()["session_id"].as_str().unwrap().to_string();
    assert_eq!(std::fs::read_to_string(e.ws.join("own-check.log")).unwrap(), "ran\n", "the folder's own check ran once");
    let from = elsewhere.clone();
    let followed = tokio::task::spawn_blocking(move || {
        command(&["sessions", "review", &id, "--request-changes", "also write more.txt", "--base-url", &url, "--model", "fake-model"], &data)
            .current_dir(&from)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert_eq!(followed.status.code(), Some(6), "the next review waits: {}", String::from_utf8_lossy(&followed.stderr));
    assert!(e.ws.join("more.txt").exists(), "the follow-up ran");
    assert_eq!(std::fs::read_to_string(e.ws.join("own-check.log")).unwrap(), "ran\nran\n", "the session's folder's check ran again");
    assert!(!e.ws.join("elsewhere-check.log").exists(), "the other folder's command never ran in the task's folder");
}

/// An agent that asks for a colour, then writes the one it is told into colour.txt.
fn colour_question() -> fake_llm::Scenario {
    serde_json::from_value(json!({"rules": [
        {"when": {"kind": "evaluator"}, "reply": {"text": "{\"done\": true, \"summary\": \"written\", \"remaining\": [], \"continuation_prompt\": \"\", \"is_stuck\": false, \"stuck_reason\": \"\"}"}},
        {"when": {"kind": "agent", "last_message_contains": "Created"}, "reply": {"text": "Done! colour.txt says blue."}},
        {"when": {"kind": "agent", "last_message_contains": "blue"}, "reply": {"text": "Blue it is.", "tool_calls": [{"name": "write_file", "arguments": {"path": "colour.txt", "content": "blue\n"}}]}},
        {"when": {"kind": "agent"}, "reply": {"text": "I need to know one thing.", "tool_calls": [{"name": "ask_user", "arguments": {"question": "Which colour?"}}]}}
    ]}))
    .unwrap()
}

/// With nobody at a terminal, the agent's question is said with the command that answers it, and
/// stays open: `sessions resume ID "ANSWER"` answers it and the task goes on. It was answered
/// "declined" at once, recorded as the person's refusal, and never shown.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_with_nobody_to_ask_waits_and_resume_with_a_message_answers_it() {
    let server = FakeServer::start(colour_question()).await.unwrap();
    let e = env();
    let url = server.base_url(Protocol::Openai);
    let (ws, data) = (e.ws.to_string_lossy().into_owned(), e.data.clone());
    let (u, d) = (url.clone(), data.clone());
    let out = tokio::task::spawn_blocking(move || {
        finishline(&["run", "write my favourite colour", "--workspace", &ws, "--base-url", &u, "--model", "fake-model"], &d)
    })
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(6), "it waits for the answer: {stderr}");
    assert!(stderr.contains("Which colour?"), "the question is said: {stderr}");
    let list = finishline(&["sessions", "list", "--json"], &data);
    let id = lines(&list)[0]["id"].as_str().unwrap().to_string();
    assert!(stderr.contains(&format!("sessions resume {id} \"")), "with the command that answers it: {stderr}");
    let d = data.clone();
    let answered = tokio::task::spawn_blocking(move || {
        finishline(&["sessions", "resume", &id, "blue", "--base-url", &url, "--model", "fake-model", "--review", "approve"], &d)
    })
    .await
    .unwrap();
    assert_eq!(answered.status.code(), Some(0), "answered, the task went on and was approved: {}", String::from_utf8_lossy(&answered.stderr));
    assert_eq!(std::fs::read_to_string(e.ws.join("colour.txt")).unwrap(), "blue\n");
}

/// A person at a terminal answers the agent's question and then approves the review, both typed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_and_the_review_are_answered_by_typing_at_the_terminal() {
    use std::io::Write;
    let server = FakeServer::start(colour_question()).await.unwrap();
    let e = env();
    let url = server.base_url(Protocol::Openai);
    let ws = e.ws.to_string_lossy().into_owned();
    let mut terminal = in_a_terminal(&["run", "write my favourite colour", "--workspace", &ws, "--base-url", &url, "--model", "fake-model"], &e.data);
    let seen = collect(terminal.stdout.take().unwrap());
    let mut keys = terminal.stdin.take().unwrap();
    let asked = tokio::task::block_in_place(|| until_seen(&seen, 60, |s| s.contains("Your answer")));
    assert!(asked, "the terminal asks the agent's question: {}", seen.lock().unwrap());
    keys.write_all(b"blue\n").unwrap();
    let review = tokio::task::block_in_place(|| until_seen(&seen, 60, |s| s.contains("Review: [a]pprove")));
    assert!(review, "the answer reached the agent, which finished, and the review is asked: {}", seen.lock().unwrap());
    keys.write_all(b"a\n").unwrap();
    let status = tokio::task::block_in_place(|| exits_within(&mut terminal, 30));
    let said = seen.lock().unwrap().clone();
    assert_eq!(status.and_then(|s| s.code()), Some(0), "approved at the terminal: {said}");
    assert_eq!(std::fs::read_to_string(e.ws.join("colour.txt")).unwrap(), "blue\n", "the typed answer shaped the work");
}

/// The agent's question asked at a terminal, and the task cancelled from the window or another
/// terminal meanwhile: the terminal stops asking and ends as cancelled, saying who stopped it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_asked_at_a_terminal_ends_there_when_the_task_is_cancelled_elsewhere() {
    let scenario: fake_llm::Scenario = serde_json::from_value(json!({"rules": [
        {"when": {"kind": "agent"}, "reply": {"text": "I need to know one thing.", "tool_calls": [{"name": "ask_user", "arguments": {"question": "Which colour?"}}]}}
    ]}))
    .unwrap();
    let server = FakeServer::start(scenario).await.unwrap();
    let e = env();
    let url = server.base_url(Protocol::Openai);
    let ws = e.ws.to_string_lossy().into_owned();
    let mut terminal = in_a_terminal(&["run", "write my favourite colour", "--workspace", &ws, "--base-url", &url, "--model", "fake-model"], &e.data);
    let seen = collect(terminal.stdout.take().unwrap());
    let asked = tokio::task::block_in_place(|| until_seen(&seen, 60, |s| s.contains("Your answer")));
    assert!(asked, "the terminal asks the agent's question: {}", seen.lock().unwrap());
    let id = String::from_utf8_lossy(&finishline(&["sessions", "list"], &e.data).stdout).split_whitespace().next().unwrap().to_string();
    let cancel = finishline(&["sessions", "cancel", &id], &e.data);
    assert_eq!(cancel.status.code(), Some(0), "{}", String::from_utf8_lossy(&cancel.stderr));
    let status = tokio::task::block_in_place(|| exits_within(&mut terminal, 15));
    let said = seen.lock().unwrap().clone();
    assert_eq!(status.and_then(|s| s.code()), Some(5), "the terminal stops asking and the run ends cancelled: {said}");
    assert!(said.contains("cancelled: asked from another terminal or the window"), "it says who stopped it: {said}");
}

/// The agent's question asked at a terminal, and answered from another terminal (or the window)
/// meanwhile: the answer reaches the run that asked, which goes on with it in its own process;
/// the first terminal stops asking and says where the answer came from.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_asked_at_a_terminal_can_be_answered_from_another_terminal() {
    use std::io::Write;
    let server = FakeServer::start(colour_question()).await.unwrap();
    let e = env();
    let url = server.base_url(Protocol::Openai);
    let ws = e.ws.to_string_lossy().into_owned();
    let mut terminal = in_a_terminal(&["run", "write my favourite colour", "--workspace", &ws, "--base-url", &url, "--model", "fake-model"], &e.data);
    let seen = collect(terminal.stdout.take().unwrap());
    let mut keys = terminal.stdin.take().unwrap();
    let asked = tokio::task::block_in_place(|| until_seen(&seen, 60, |s| s.contains("Your answer")));
    assert!(asked, "the terminal asks the agent's question: {}", seen.lock().unwrap());
    let id = String::from_utf8_lossy(&finishline(&["sessions", "list"], &e.data).stdout).split_whitespace().next().unwrap().to_string();
    let answer = finishline(&["sessions", "resume", &id, "blue"], &e.data);
    let told = String::from_utf8_lossy(&answer.stderr).into_owned();
    assert_eq!(answer.status.code(), Some(0), "the answer is taken: {told}");
    assert!(told.contains("answer was handed to the run in process"), "it says where the task goes on: {told}");
    let review = tokio::task::block_in_place(|| until_seen(&seen, 60, |s| s.contains("Review: [a]pprove")));
    let said = seen.lock().unwrap().clone();
    assert!(review, "the run that asked went on with the answer and finished: {said}");
    assert!(said.contains("Answered elsewhere (another terminal or the window): blue"), "the first terminal says so: {said}");
    keys.write_all(b"a\n").unwrap();
    let status = tokio::task::block_in_place(|| exits_within(&mut terminal, 30));
    assert_eq!(status.and_then(|s| s.code()), Some(0), "approved at the first terminal: {}", seen.lock().unwrap());
    assert_eq!(std::fs::read_to_string(e.ws.join("colour.txt")).unwrap(), "blue\n", "the answer from elsewhere shaped the work");
}

/// A tool's permission asked at a terminal, and given from another terminal meanwhile (`sessions
/// resume ID --allow TOOL`): the command runs in the run that asked, and the first terminal
/// says it was allowed elsewhere.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permission_asked_at_a_terminal_can_be_given_from_another_terminal() {
    use std::io::Write;
    let scenario: fake_llm::Scenario = serde_json::from_value(json!({"rules": [
        {"when": {"kind": "evaluator"}, "reply": {"text": "{\"done\": true, \"summary\": \"ran\", \"remaining\": [], \"continuation_prompt\": \"\", \"is_stuck\": false, \"stuck_reason\": \"\"}"}},
        {"when": {"kind": "agent", "last_message_contains": "exit code"}, "reply": {"text": "Done! ran.txt is there."}},
        {"when": {"kind": "agent"}, "reply": {"text": "Touching it.", "tool_calls": [{"name": "run_command", "arguments": {"command": "touch ran.txt"}}]}}
    ]}))
    .unwrap();
    let server = FakeServer::start(scenario).await.unwrap();
    let e = env();
    let url = server.base_url(Protocol::Openai);
    let ws = e.ws.to_string_lossy().into_owned();
    let mut terminal = in_a_terminal(&["run", "touch ran.txt", "--workspace", &ws, "--base-url", &url, "--model", "fake-model"], &e.data);
    let seen = collect(terminal.stdout.take().unwrap());
    let asked = tokio::task::block_in_place(|| until_seen(&seen, 60, |s| s.contains("Allow run_command")));
    assert!(asked, "the terminal asks for the permission: {}", seen.lock().unwrap());
    let id = String::from_utf8_lossy(&finishline(&["sessions", "list"], &e.data).stdout).split_whitespace().next().unwrap().to_string();
    let allow = finishline(&["sessions", "resume", &id, "--allow", "run_command"], &e.data);
    assert_eq!(allow.status.code(), Some(0), "the permission is taken: {}", String::from_utf8_lossy(&allow.stderr));
    let review = tokio::task::block_in_place(|| until_seen(&seen, 60, |s| s.contains("Review: [a]pprove")));
    let said = seen.lock().unwrap().clone();
    assert!(review, "the run that asked ran the command and finished: {said}");
    assert!(said.contains("Answered elsewhere (another terminal or the window): allowed once"), "the first terminal says so: {said}");
    assert!(e.ws.join("ran.txt").exists(), "the command allowed elsewhere ran");
    terminal.stdin.take().unwrap().write_all(b"a\n").unwrap();
    let status = tokio::task::block_in_place(|| exits_within(&mut terminal, 30));
    assert_eq!(status.and_then(|s| s.code()), Some(0), "approved at the first terminal: {}", seen.lock().unwrap());
}

/// `--review reject` is a dry run: nobody looked at the work, so the trust figures do not take it
/// for a person's verdict (it counted as the evaluator wrongly saying done, and as the agent's
/// work refused).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dry_run_reject_is_no_persons_verdict_in_the_trust_figures() {
    let server = FakeServer::start(fruits()).await.unwrap();
    let e = env();
    let url = server.base_url(Protocol::Openai);
    let (ws, data) = (e.ws.to_string_lossy().into_owned(), e.data.clone());
    let d = data.clone();
    let out = tokio::task::spawn_blocking(move || {
        finishline(&["run", "create notes.md listing three fruits", "--workspace", &ws, "--base-url", &url, "--model", "fake-model", "--review", "reject"], &d)
    })
    .await
    .unwrap();
    assert_eq!(out.status.code(), Some(3), "rejected: {}", String::from_utf8_lossy(&out.stderr));
    let judges = finishline(&["stats", "evaluator", "--json"], &data);
    assert!(lines(&judges).iter().all(|j| j["reviews"] == 0), "no review a person decided: {}", String::from_utf8_lossy(&judges.stdout));
    let agents = finishline(&["stats", "agents", "--json"], &data);
    let agents = lines(&agents);
    assert_eq!(agents.len(), 1, "{agents:?}");
    assert_eq!((agents[0]["tasks"].as_u64(), agents[0]["reviews_decided"].as_u64()), (Some(1), Some(0)), "the task counts, no verdict on it: {agents:?}");
}

/// A history file that is no database: the commands that only read say so with the way forward,
/// and change nothing; a run keeps it whole beside and starts a new history.
#[test]
fn a_history_that_is_no_database_is_named_with_the_way_forward_and_left_as_it_is() {
    let e = env();
    std::fs::create_dir_all(&e.data).unwrap();
    std::fs::write(e.data.join("history.db"), "garbage, not a database\n").unwrap();
    let list = finishline(&["sessions", "list"], &e.data);
    assert_eq!(list.status.code(), Some(4));
    let said = String::from_utf8_lossy(&list.stderr);
    assert!(said.contains("history.db cannot be read") && said.contains("move it aside") && said.contains("history.db.unreadable-"), "{said}");
    assert_eq!(std::fs::read_to_string(e.data.join("history.db")).unwrap(), "garbage, not a database\n", "a listing changes no file");
}

/// A run that hits a bug (a panic) ends failed with the reason, at once: the terminal is not left
/// waiting for events that never come, and the session takes a message that goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_that_panics_ends_failed_and_its_session_goes_on_with_a_message() {
    let server = FakeServer::start(fruits()).await.unwrap();
    let e = env();
    let (url, data, ws) = (server.base_url(Protocol::Openai), e.data.clone(), e.ws.to_string_lossy().into_owned());
    let (tx, rx) = std::sync::mpsc::channel();
    let mut run = command(&["run", "create notes.md", "--workspace", &ws, "--base-url", &url, "--model", "m", "--json"], &data);
    run.env("FINISHLINE_FAULT_PANIC", "model-step");
    let child = run.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap();
    let pid = child.id();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let Ok(out) = rx.recv_timeout(Duration::from_secs(60)) else {
        let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
        panic!("a run that panicked left the terminal waiting");
    };
    let out = out.unwrap();
    assert_eq!(out.status.code(), Some(4), "failed: {}", String::from_utf8_lossy(&out.stderr));
    let events = lines(&out);
    let error = events.iter().find(|l| l["type"] == "error").unwrap_or_else(|| panic!("an error event: {events:?}"));
    assert_eq!(error["code"], "internal");
    assert!(error["message"].as_str().unwrap().contains("send a message to go on"), "{error}");
    let summary = events.iter().find(|l| l["type"] == "summary").expect("a summary");
    assert_eq!(summary["status"], "failed");

    let id = summary["session_id"].as_str().unwrap().to_string();
    let (url, data) = (server.base_url(Protocol::Openai), e.data.clone());
    let resumed =
        tokio::task::spawn_blocking(move || finishline(&["sessions", "resume", &id, "go on", "--base-url", &url, "--model", "m"], &data)).await.unwrap();
    assert_eq!(resumed.status.code(), Some(6), "it goes on to its review: {}", String::from_utf8_lossy(&resumed.stderr));
    assert!(e.ws.join("notes.md").exists());
}

/// `--review reject` is a dry run even when the person turned on auto-approve in the app: the
/// flag overrides the setting, so nothing is approved and nothing lands.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dry_run_reject_is_not_approved_by_the_auto_approve_setting() {
    let server = FakeServer::start(fruits()).await.unwrap();
    let e = env();
    let repo = person_repo(&e.ws, &[("README.md", "hello\n")]);
    std::fs::create_dir_all(&e.data).unwrap();
    std::fs::write(e.data.join("settings.json"), json!({"settings": {"auto_approve": true}}).to_string()).unwrap();
    let (url, data, ws) = (server.base_url(Protocol::Openai), e.data.clone(), repo.to_string_lossy().into_owned());
    let out = tokio::task::spawn_blocking(move || {
        finishline(
            &["run", "create notes.md listing three fruits", "--workspace", &ws, "--base-url", &url, "--model", "m", "--review", "reject", "--json"],
            &data,
        )
    })
    .await
    .unwrap();
    assert_eq!(out.status.code(), Some(3), "rejected: {}", String::from_utf8_lossy(&out.stderr));
    let summary = lines(&out).into_iter().find(|l| l["type"] == "summary").expect("a summary");
    assert_eq!(summary["status"], "rejected", "{summary}");
    assert!(!repo.join("notes.md").exists(), "nothing landed on the person's branch");
    assert_eq!(git(&repo, &["rev-list", "--count", "HEAD"]), "1", "no commit landed");
}

/// Auto-approve never takes a task whose changes could not be recorded: the audit had nothing to
/// look at, and a reject could not undo it, so the person decides.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_approve_leaves_a_task_whose_changes_were_not_recorded_to_the_person() {
    let server = FakeServer::start(fruits()).await.unwrap();
    let e = env();
    std::fs::create_dir_all(&e.data).unwrap();
    // Where the checkpoints go is taken by a file: the workspace cannot be recorded.
    std::fs::write(e.data.join("checkpoints"), "not a folder\n").unwrap();
    let (url, data, ws) = (server.base_url(Protocol::Openai), e.data.clone(), e.ws.to_string_lossy().into_owned());
    let out = tokio::task::spawn_blocking(move || {
        finishline(&["run", "create notes.md listing three fruits", "--workspace", &ws, "--base-url", &url, "--model", "m", "--review", "approve"], &data)
    })
    .await
    .unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(6), "left to the person: {said}");
    assert!(said.contains("not approved automatically") && said.contains("not recorded"), "and says why: {said}");
}

/// A server that takes the connection and never answers (a hung local model): Ctrl-C stops the
/// run at once and records it cancelled, with the summary a script reads, however early it comes.
/// It used to wait for the look-up of the model's context window (two 15 s waits) and exit
/// before anything was recorded: the session was left "interrupted", with no summary line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_while_a_server_never_answers_cancels_the_run_at_once_and_records_it() {
    let deaf = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", deaf.local_addr().unwrap());
    // Connections are taken (the kernel's backlog) and never read nor answered.
    let e = env();
    // Started, then stopped with Ctrl-C once its run is under way: how long the stop took.
    let stopped = |args: Vec<String>| {
        let data = e.data.clone();
        async move {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let child = spawn_finishline(&args, &data);
            once_busy(&data).await;
            let sent = std::time::Instant::now();
            assert!(std::process::Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap().success());
            let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap()).await.unwrap();
            (out, sent.elapsed())
        }
    };
    let ws = e.ws.to_string_lossy().to_string();
    let common = ["--base-url", &url, "--model", "m", "--json"].map(String::from);
    let (out, took) = stopped([vec!["run".into(), "write notes.md".into(), "--workspace".into(), ws], common.to_vec()].concat()).await;
    let said = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(5), "stopped, as Ctrl-C stops a run: {said}");
    assert!(took < Duration::from_secs(3), "at once, not after a grace spent waiting ({took:?}): {said}");
    let printed = lines(&out);
    let summary = printed.iter().find(|l| l["type"] == "summary").unwrap_or_else(|| panic!("the summary line a script reads: {printed:?}"));
    assert_eq!(summary["status"], "cancelled", "{summary}");
    let rows = lines(&finishline(&["sessions", "list", "--json"], &e.data));
    assert_eq!(rows[0]["status"], "cancelled", "recorded cancelled, not left interrupted: {rows:?}");

    // Sent on with words, and stopped as soon: the words are kept in the session, as theirs.
    let id = rows[0]["id"].as_str().unwrap().to_string();
    let (out, took) = stopped([vec!["sessions".into(), "resume".into(), id.clone(), "and a table of contents".into()], common.to_vec()].concat()).await;
    drop(deaf);
    assert_eq!(out.status.code(), Some(5), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(took < Duration::from_secs(3), "{took:?}");
    let shown = String::from_utf8_lossy(&finishline(&["sessions", "show", &id], &e.data).stdout).to_string();
    assert!(shown.contains("and a table of contents"), "the person's message is in the session: {shown}");
}

/// The newest session, once its run has started (30 s at most).
async fn once_busy(data: &std::path::Path) -> String {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let rows = lines(&finishline(&["sessions", "list", "--json"], data));
        if let Some(id) = rows.first().filter(|r| r["status"] == "busy").and_then(|r| r["id"].as_str()) {
            return id.to_string();
        }
        assert!(std::time::Instant::now() < deadline, "the run started: {rows:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A session running in another terminal: `sessions resume` says how it is stopped, not to
/// "cancel it first".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resuming_a_session_still_running_elsewhere_says_where_to_stop_it() {
    let slow: fake_llm::Scenario = serde_json::from_value(json!({"rules": [
        {"when": {"kind": "agent"}, "reply": {"text": "Thinking it over at some length before writing anything at all.", "chunks": 100, "chunk_delay_ms": 100}}
    ]}))
    .unwrap();
    let server = FakeServer::start(slow).await.unwrap();
    let e = env();
    let url = server.base_url(Protocol::Openai);
    let mut child = spawn_finishline(&["run", "write notes.md", "--workspace", &e.ws.to_string_lossy(), "--base-url", &url, "--model", "m"], &e.data);
    let id = once_busy(&e.data).await;
    let out = finishline(&["sessions", "resume", &id, "go on"], &e.data);
    let said = String::from_utf8_lossy(&out.stderr).to_string();
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(said.contains("still running") && said.contains("`sessions cancel`"), "names how it is stopped: {said}");
    assert!(!said.contains("cancel it first"), "{said}");
}

/// A task running in another terminal (or the window) is cancelled from here: `sessions cancel`
/// asks the process that runs it, which stops it as its own Ctrl+C would, and says so once it has.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_cancel_stops_a_task_running_in_another_terminal() {
    let slow: fake_llm::Scenario = serde_json::from_value(json!({"rules": [
        {"when": {"kind": "agent"}, "reply": {"text": "Thinking it over.", "fault": {"type": "stall_after", "frames": 1, "ms": 60000}}}
    ]}))
    .unwrap();
    let server = FakeServer::start(slow).await.unwrap();
    let e = env();
    let url = server.base_url(Protocol::Openai);
    let child = spawn_finishline(&["run", "write notes.md", "--workspace", &e.ws.to_string_lossy(), "--base-url", &url, "--model", "m"], &e.data);
    let id = once_busy(&e.data).await;
    let (data, sid) = (e.data.clone(), id.clone());
    let asked = std::time::Instant::now();
    let out = tokio::task::spawn_blocking(move || finishline(&["sessions", "cancel", &sid], &data)).await.unwrap();
    let took = asked.elapsed();
    let ran = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap()).await.unwrap();
    let said = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    let ran_said = String::from_utf8_lossy(&ran.stdout).to_string() + &String::from_utf8_lossy(&ran.stderr);
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(said.contains(&format!("Cancelled {id}")) && said.contains("another terminal or the window"), "says it stopped, and where it ran: {said}");
    assert!(took < Duration::from_secs(10), "it waited for the stop, not for the task ({took:?})");
    assert_eq!(ran.status.code(), Some(5), "the terminal running it ends as its own Ctrl+C ends it: {ran_said}");
    assert!(ran_said.contains("cancelled: asked from another terminal or the window"), "that terminal says who stopped it: {ran_said}");
    let rows = lines(&finishline(&["sessions", "list", "--json"], &e.data));
    assert_eq!(rows[0]["status"], "cancelled", "{rows:?}");
}

/// `sessions resume ID --provider openai` on a session that ran against a server on this machine
/// in that protocol: the same server and model, not the provider's public API (where, with a key
/// in the environment, the conversation would have gone).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resuming_with_the_sessions_own_provider_named_keeps_its_server_and_model() {
    let done: fake_llm::Scenario = serde_json::from_value(json!({"rules": [{"when": {"kind": "agent"}, "reply": {"text": "Nothing to change."}}]})).unwrap();
    let server = FakeServer::start(done).await.unwrap();
    let e = env();
    let url = server.base_url(Protocol::Openai);
    let (data, ws) = (e.data.clone(), e.ws.to_string_lossy().into_owned());
    tokio::task::spawn_blocking(move || finishline(&["run", "say hello", "--workspace", &ws, "--base-url", &url, "--model", "m"], &data)).await.unwrap();
    let id = lines(&finishline(&["sessions", "list", "--json"], &e.data))[0]["id"].as_str().unwrap().to_string();
    // With no settings, and with settings of another provider (the app's, say Anthropic's).
    for settings in [None, Some(json!({"settings": {"provider": {"kind": "anthropic", "base_url": "http://127.0.0.1:9/v1", "model": "claude-x"}}}))] {
        if let Some(settings) = &settings {
            std::fs::write(e.data.join("settings.json"), settings.to_string()).unwrap();
        }
        let asked = server.requests().len();
        let (data, id) = (e.data.clone(), id.clone());
        let out = tokio::task::spawn_blocking(move || finishline(&["sessions", "resume", &id, "and again", "--provider", "openai", "--model", "m"], &data))
            .await
            .unwrap();
        assert_eq!(out.status.code(), Some(6), "{settings:?}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(server.requests().len() > asked, "the session's own server was asked ({settings:?})");
    }
}

/// A base URL on a port nothing listens on: bound, then let go.
fn nobody_listens() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    format!("http://{}/v1", l.local_addr().unwrap())
}

/// A run that failed (nothing answered at the base URL) says how to go on once the cause is
/// fixed, with the command to paste, as a cancelled or waiting run does.
#[test]
fn a_failed_run_names_the_command_that_goes_on_once_the_cause_is_fixed() {
    let url = nobody_listens();
    let e = env();
    let out = finishline(&["run", "write notes.md", "--workspace", &e.ws.to_string_lossy(), "--base-url", &url, "--model", "m"], &e.data);
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(4), "{said}");
    let id = lines(&finishline(&["sessions", "list", "--json"], &e.data))[0]["id"].as_str().unwrap().to_string();
    assert!(said.contains(&format!("once the cause is fixed, go on with `finishline sessions resume {id}")), "{said}");
    // The session keeps the server it was started with: one that is no server is left behind
    // only by naming another.
    assert!(said.contains(&format!("or ask another server: `finishline sessions resume {id} --base-url URL")), "{said}");
}

/// Words that start with `-` are searched for (`-hello` printed the help and exited 0), the
/// options around them still read as options; an empty `--agent` is refused, not taken for the
/// built-in agent.
#[test]
fn a_search_for_words_with_a_dash_searches_and_an_empty_agent_is_refused() {
    let e = env();
    std::fs::create_dir_all(&e.data).unwrap();
    drop(finishline_engine::store::Store::open(&e.data.join("history.db"), std::sync::Arc::new(finishline_engine::clock::SystemClock)).unwrap());
    let out = finishline(&["sessions", "search", "-hello"], &e.data);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("No session mentions “-hello”"), "{said}{}", String::from_utf8_lossy(&out.stdout));
    let json = finishline(&["sessions", "search", "--json", "-x"], &e.data);
    assert!(json.status.success() && json.stdout.is_empty(), "--json still an option: {}", String::from_utf8_lossy(&json.stderr));
    let out =
        finishline(&["run", "hello", "--agent", "", "--workspace", &e.ws.to_string_lossy(), "--base-url", "http://127.0.0.1:9/v1", "--model", "m"], &e.data);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--agent needs a name"), "{}", String::from_utf8_lossy(&out.stderr));
}

/// `sessions list --limit 0` listed every session (the store reads 0 as its default); it is
/// refused with what the option takes.
#[test]
fn a_limit_of_zero_is_refused_not_read_as_no_limit() {
    let e = env();
    let out = finishline(&["sessions", "list", "--limit", "0"], &e.data);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--limit"), "{}", String::from_utf8_lossy(&out.stderr));
}

/// A session whose folder was deleted (or moved) since: resuming it says the session's folder is
/// gone and how to go on, not New Task's "choose another, or check the spelling".
#[test]
fn resuming_a_session_whose_folder_is_gone_says_so_and_how_to_go_on() {
    let url = nobody_listens();
    let e = env();
    finishline(&["run", "write notes.md", "--workspace", &e.ws.to_string_lossy(), "--base-url", &url, "--model", "m"], &e.data);
    let id = lines(&finishline(&["sessions", "list", "--json"], &e.data))[0]["id"].as_str().unwrap().to_string();
    std::fs::remove_dir_all(&e.ws).unwrap();
    let out = finishline(&["sessions", "resume", &id, "--base-url", &url, "--model", "m"], &e.data);
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(said.contains(&format!("{}, is gone", e.ws.display())) && said.contains("put it back"), "{said}");
    assert!(!said.contains("check the spelling"), "{said}");
}

/// A task given as one long line (a pasted log, a file of 100 KB): the terminal shows its start
/// and how long it is, not all of it after the ▶.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_very_long_task_is_shown_by_its_start_and_its_length() {
    let done: fake_llm::Scenario = serde_json::from_value(json!({"rules": [{"when": {"kind": "agent"}, "reply": {"text": "Nothing to change."}}]})).unwrap();
    let server = FakeServer::start(done).await.unwrap();
    let e = env();
    let task = format!("summarise this log: {}", "x".repeat(100_000));
    let file = e.ws.join("..").join("task.txt");
    std::fs::write(&file, &task).unwrap();
    let url = server.base_url(Protocol::Openai);
    let (data, ws, path) = (e.data.clone(), e.ws.to_string_lossy().to_string(), file.to_string_lossy().to_string());
    let out = tokio::task::spawn_blocking(move || {
        finishline(&["run", "--task-file", &path, "--workspace", &ws, "--base-url", &url, "--model", "m", "--review", "reject"], &data)
    })
    .await
    .unwrap();
    let said = String::from_utf8_lossy(&out.stdout).to_string();
    let shown = said.lines().find(|l| l.starts_with('▶')).unwrap_or_else(|| panic!("the task's line: {}", &said[..said.len().min(2000)]));
    assert!(shown.chars().count() < 400, "its start only: {} characters", shown.chars().count());
    assert!(shown.starts_with("▶ summarise this log: xxx") && shown.contains("100,020 characters"), "{shown}");
}

/// `--task-file -` reads the task from standard input, as `-` means to every other tool
/// (`git log | finishline run --task-file -`); it was taken for a file named `-`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_file_of_dash_is_read_from_standard_input() {
    use std::io::Write;
    let done: fake_llm::Scenario = serde_json::from_value(json!({"rules": [{"when": {"kind": "agent"}, "reply": {"text": "Nothing to change."}}]})).unwrap();
    let server = FakeServer::start(done).await.unwrap();
    let e = env();
    let url = server.base_url(Protocol::Openai);
    let (data, ws) = (e.data.clone(), e.ws.to_string_lossy().to_string());
    let run = move |input: &'static str| {
        let mut child = command(&["run", "--task-file", "-", "--workspace", &ws, "--base-url", &url, "--model", "m", "--review", "reject"], &data)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
        child.wait_with_output().unwrap()
    };
    let (r1, r2) = (run.clone(), run);
    let out = tokio::task::spawn_blocking(move || r1("summarise the log below\nline one\n")).await.unwrap();
    let said = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(said.contains("▶ summarise the log below"), "{said}{}", String::from_utf8_lossy(&out.stderr));
    assert!(!String::from_utf8_lossy(&out.stderr).contains("Ctrl-D"), "piped, nothing is asked of anyone");
    let empty = tokio::task::spawn_blocking(move || r2("\n")).await.unwrap();
    assert_eq!(empty.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&empty.stderr).contains("--task-file - (standard input): the task is empty"), "{}", String::from_utf8_lossy(&empty.stderr));
}

/// `--task-file -` at a terminal says how to end the task: a silent wait read as hung. Piped, it
/// says nothing (above: the task is all that is printed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_file_of_dash_at_a_terminal_says_how_to_end_the_task() {
    use std::io::Write;
    let done: fake_llm::Scenario = serde_json::from_value(json!({"rules": [{"when": {"kind": "agent"}, "reply": {"text": "Nothing to change."}}]})).unwrap();
    let server = FakeServer::start(done).await.unwrap();
    let e = env();
    let url = server.base_url(Protocol::Openai);
    let ws = e.ws.to_string_lossy().into_owned();
    let mut terminal = in_a_terminal(&["run", "--task-file", "-", "--workspace", &ws, "--base-url", &url, "--model", "m", "--review", "reject"], &e.data);
    let seen = collect(terminal.stdout.take().unwrap());
    let asked = tokio::task::block_in_place(|| until_seen(&seen, 30, |s| s.contains("press Ctrl-D")));
    assert!(asked, "the terminal says how the task ends: {}", seen.lock().unwrap());
    let mut typing = terminal.stdin.take().unwrap();
    typing.write_all(b"say hello\n\x04").unwrap();
    let status = tokio::task::block_in_place(|| exits_within(&mut terminal, 60));
    let said = seen.lock().unwrap().clone();
    assert!(status.is_some(), "the task ran once Ctrl-D ended it: {said}");
    assert!(said.contains("▶ say hello"), "{said}");
}

/// `--land` with `--isolation in-place` was accepted and ignored: the work is already in the
/// folder, so the two are refused together, before anything starts.
#[test]
fn land_with_the_folder_itself_is_refused_as_a_contradiction() {
    let e = env();
    let out = finishline(
        &[
            "run",
            "write a.txt",
            "--workspace",
            &e.ws.to_string_lossy(),
            "--isolation",
            "in-place",
            "--land",
            "squash",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--model",
            "m",
        ],
        &e.data,
    );
    let said = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(said.contains("--land") && said.contains("in-place"), "{said}");
    assert!(!e.data.join("history.db").exists(), "nothing was started");
}

/// A script reading `--json` gets every error as a JSON line, the flags' own mistakes too (they
/// came as plain text, which the script failed to parse).
#[test]
fn a_flag_mistake_under_json_is_said_as_a_json_error_line() {
    let e = env();
    let out = finishline(&["sessions", "list", "--json", "--bogus"], &e.data);
    assert_eq!(out.status.code(), Some(2));
    let line: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|err| panic!("one JSON line ({err}): {}", String::from_utf8_lossy(&out.stdout)));
    assert_eq!(line["type"], "error");
    assert_eq!(line["code"], "usage");
    assert_eq!(line["message"], "unexpected argument '--bogus' found", "{line}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("Usage: finishline sessions list"), "the person still reads the usage");
    let missing = finishline(&["sessions", "show", "--json"], &e.data);
    let line: Value = serde_json::from_slice(&missing.stdout).unwrap();
    assert!(line["message"].as_str().unwrap().contains("<ID>"), "what is missing is named: {line}");
    let help = finishline(&["sessions", "list", "--json", "--help"], &e.data);
    assert_eq!(help.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&help.stdout).contains("Usage: finishline sessions list [OPTIONS]"),
        "help stays help: {}",
        String::from_utf8_lossy(&help.stdout)
    );
}

/// A run that went to review stuck says, under the review line, which pattern caught it and
/// what repeated: "end reason stuck" alone left the person to guess (only --json carried it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stuck_run_names_its_pattern_and_what_repeated_in_the_live_view_and_the_history() {
    let scenario = serde_json::from_value(json!({"rules": [
        {"when": {"kind": "agent"}, "reply": {"text": "Reading it.", "tool_calls": [{"name": "read_file", "arguments": {"path": "missing.txt"}}]}}
    ]}))
    .unwrap();
    let server = FakeServer::start(scenario).await.unwrap();
    let e = env();
    let (url, data, ws) = (server.base_url(Protocol::Openai), e.data.clone(), e.ws.to_string_lossy().into_owned());
    let out = tokio::task::spawn_blocking(move || {
        finishline(&["run", "summarise missing.txt", "--workspace", &ws, "--base-url", &url, "--model", "fake-model"], &data)
    })
    .await
    .unwrap();
    let said = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("end reason stuck"), "{said}");
    assert!(said.contains("    stuck: the same action failing 3 times: read_file"), "{said}");
    let listed = finishline(&["sessions", "list", "--json"], &e.data);
    let session: Value = serde_json::from_slice(listed.stdout.split(|b| *b == b'\n').next().unwrap()).unwrap();
    let shown = finishline(&["sessions", "show", session["id"].as_str().unwrap()], &e.data);
    assert!(
        String::from_utf8_lossy(&shown.stdout).contains("- Stuck: the same action failing 3 times: `read_file"),
        "{}",
        String::from_utf8_lossy(&shown.stdout)
    );
}

/// A model slower than the step limit is stopped with a way forward that works here: the
/// window's "Settings → Limits" is not in a terminal, so the CLI names its own `--step-timeout`,
/// and a value the settings refuse is named by that flag.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_slower_than_the_limit_names_the_flag_that_gives_it_longer() {
    let scenario: fake_llm::Scenario =
        serde_json::from_value(json!({"rules": [{"when": {"kind": "agent"}, "reply": {"text": "Thinking slowly.", "first_frame_delay_ms": 13000}}]})).unwrap();
    let server = FakeServer::start(scenario).await.unwrap();
    let e = env();
    let url = server.base_url(Protocol::Openai);
    let (data, ws) = (e.data.clone(), e.ws.to_string_lossy().into_owned());
    let args = move |secs: &'static str| -> Vec<String> {
        ["run", "think", "--workspace", &ws, "--base-url", &url, "--model", "fake-model", "--step-timeout", secs, "--review", "reject"]
            .map(String::from)
            .to_vec()
    };
    let too_short = args("5");
    let refused = finishline(&too_short.iter().map(String::as_str).collect::<Vec<_>>(), &data);
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--step-timeout: must be between 10"), "{}", String::from_utf8_lossy(&refused.stderr));
    let out = tokio::task::spawn_blocking(move || finishline(&args("10").iter().map(String::as_str).collect::<Vec<_>>(), &data)).await.unwrap();
    let said = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("longer than the step limit (10 s)"), "{said}");
    assert!(said.contains("--step-timeout"), "the way to give it longer, in a terminal: {said}");
}

/// `finishline ARGS` off the test's async threads, where its fake provider answers.
async fn off_thread(args: &[&str], data: &std::path::Path) -> std::process::Output {
    let (args, data): (Vec<String>, PathBuf) = (args.iter().map(|a| a.to_string()).collect(), data.to_path_buf());
    tokio::task::spawn_blocking(move || finishline(&args.iter().map(String::as_str).collect::<Vec<_>>(), &data)).await.unwrap()
}

/// A `--json` run's summary line, and the session it names.
fn summary_of(out: &std::process::Output) -> (Value, String) {
    let summary = lines(out).into_iter().find(|l| l["type"] == "summary").unwrap_or_else(|| panic!("a summary: {}", String::from_utf8_lossy(&out.stderr)));
    let id = summary["session_id"].as_str().unwrap().to_string();
    (summary, id)
}

/// With nobody to ask, a refused call is shown with what it would have done: the command that
/// allows it next time is not taken blind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_refused_with_nobody_to_ask_shows_what_it_would_have_run() {
    let scenario = serde_json::from_value(json!({"rules": [
        {"when": {"kind": "evaluator"}, "reply": {"text": "{\"done\": false, \"summary\": \"nothing\", \"remaining\": [\"c.txt\"], \"continuation_prompt\": \"\", \"is_stuck\": false, \"stuck_reason\": \"\"}"}},
        {"when": {"kind": "agent"}, "reply": {"text": "Writing it.", "tool_calls": [{"name": "run_command", "arguments": {"command": "echo hi > c.txt"}}]}}
    ]}))
    .unwrap();
    let server = FakeServer::start(scenario).await.unwrap();
    let e = env();
    let (url, ws) = (server.base_url(Protocol::Openai), e.ws.to_string_lossy().into_owned());
    let out = off_thread(&["run", "make c.txt", "--workspace", &ws, "--base-url", &url, "--model", "m"], &e.data).await;
    let shown = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(String::from_utf8_lossy(&out.stderr).contains("run_command needs your permission"), "{}", String::from_utf8_lossy(&out.stderr));
    let call = shown.find("→ run_command {\"command\":\"echo hi > c.txt\"}").unwrap_or_else(|| panic!("the refused command is shown: {shown}"));
    assert!(call < shown.find("✗ run_command (denied)").unwrap(), "{shown}");
    assert!(!e.ws.join("c.txt").exists());
}

/// A run that stops mid-way for the person's answer has no end yet: its summary does not carry
/// the end reason of the run before it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_waiting_for_an_answer_does_not_show_the_last_runs_end_reason() {
    let scenario = serde_json::from_value(json!({"rules": [
        {"when": {"kind": "evaluator"}, "reply": {"text": "{\"done\": false, \"summary\": \"nothing\", \"remaining\": [\"c.txt\"], \"continuation_prompt\": \"\", \"is_stuck\": false, \"stuck_reason\": \"\"}"}},
        {"when": {"kind": "agent", "last_message_contains": "go on"}, "reply": {"text": "Asking.", "tool_calls": [{"name": "ask_user", "arguments": {"question": "Which colour?"}}]}},
        {"when": {"kind": "agent"}, "reply": {"text": "Writing it.", "tool_calls": [{"name": "run_command", "arguments": {"command": "echo hi > c.txt"}}]}}
    ]}))
    .unwrap();
    let server = FakeServer::start(scenario).await.unwrap();
    let e = env();
    let (url, ws) = (server.base_url(Protocol::Openai), e.ws.to_string_lossy().into_owned());
    let (summary, id) = summary_of(&off_thread(&["run", "make c.txt", "--workspace", &ws, "--base-url", &url, "--model", "m", "--json"], &e.data).await);
    assert_eq!(summary["end_reason"], "permission_denied", "{summary}");
    let again = off_thread(&["sessions", "resume", &id, "go on", "--base-url", &url, "--model", "m"], &e.data).await;
    let said = String::from_utf8_lossy(&again.stdout).to_string();
    assert_eq!(again.status.code(), Some(6), "{said}");
    assert!(said.contains("status awaiting_approval, end reason —"), "{said}");
    // The list says what it waits for, as `--help` promises.
    let listed = String::from_utf8_lossy(&finishline(&["sessions", "list"], &e.data).stdout).to_string();
    assert!(listed.contains("[waits for your answer to its question]"), "{listed}");
}

/// A resume whose folder is gone is refused before it starts: the session stays as it was
/// (here, rejected), not a failed run that says the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resume_whose_folder_is_gone_is_refused_and_changes_nothing() {
    let server = FakeServer::start(fruits()).await.unwrap();
    let e = env();
    let (url, data, ws) = (server.base_url(Protocol::Openai), e.data.clone(), e.ws.to_string_lossy().into_owned());
    let first = off_thread(&["run", "create notes.md", "--workspace", &ws, "--base-url", &url, "--model", "m", "--review", "reject", "--json"], &data).await;
    assert_eq!(first.status.code(), Some(3), "{}", String::from_utf8_lossy(&first.stderr));
    let (_, id) = summary_of(&first);
    std::fs::rename(&e.ws, e.ws.with_file_name("moved")).unwrap();
    let again = off_thread(&["sessions", "resume", &id, "go on", "--base-url", &url, "--model", "m"], &data).await;
    let said = String::from_utf8_lossy(&again.stderr).to_string();
    assert_eq!(again.status.code(), Some(2), "{said}");
    assert!(said.contains("is gone (moved or deleted): put it back there and resume"), "{said}");
    let listed = String::from_utf8_lossy(&finishline(&["sessions", "list"], &data).stdout).to_string();
    assert!(listed.contains("rejected") && !listed.contains("failed"), "{listed}");
}

/// A refusal that names a command names it as the person can paste it: with the `--data-dir`
/// they passed, as every other suggestion does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_names_its_command_with_the_data_dir_given() {
    let server = FakeServer::start(fruits()).await.unwrap();
    let e = env();
    let (url, data) = (server.base_url(Protocol::Openai), e.data.clone());
    let repo = person_repo(&e.ws, &[]).to_string_lossy().into_owned();
    let first = off_thread(&["run", "create notes.md", "--workspace", &repo, "--base-url", &url, "--model", "m", "--json"], &data).await;
    assert_eq!(first.status.code(), Some(6), "{}", String::from_utf8_lossy(&first.stderr));
    let (_, id) = summary_of(&first);
    let refused = finishline(&["sessions", "discard", &id], &data);
    let said = String::from_utf8_lossy(&refused.stderr).to_string();
    assert_eq!(refused.status.code(), Some(2), "{said}");
    assert!(said.contains(&format!("sessions review {id} --reject --data-dir {}`", data.display())), "{said}");
    let empty = finishline(&["sessions", "search", " "], &data);
    let said = String::from_utf8_lossy(&empty.stderr).to_string();
    assert!(said.contains(&format!("sessions search \"words\" --data-dir {}`", data.display())), "{said}");
}

/// A review read later says how its run ended beside the diff: the end reason, the verdict, why
/// it was stuck and the checks that failed, as the run's own lines said it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_review_read_later_says_how_its_run_ended() {
    let server = FakeServer::start(fruits()).await.unwrap();
    let e = env();
    let (url, data, ws) = (server.base_url(Protocol::Openai), e.data.clone(), e.ws.to_string_lossy().into_owned());
    let first =
        off_thread(&["run", "create notes.md", "--workspace", &ws, "--base-url", &url, "--model", "m", "--verify", "echo checking; exit 3", "--json"], &data)
            .await;
    assert_eq!(first.status.code(), Some(6), "{}", String::from_utf8_lossy(&first.stderr));
    let (_, id) = summary_of(&first);
    let read = finishline(&["sessions", "review", &id], &data);
    let said = String::from_utf8_lossy(&read.stdout).to_string();
    assert!(said.contains("end reason stuck") && said.contains("stuck: "), "{said}");
    assert!(said.contains("check failed: `echo checking; exit 3`: exit 3"), "the check that failed: {said}");
}

/// After a request for changes the review shows what changed since the person's last one: said
/// so, since "0 files changed" would read as a task that changed nothing, and in a plain folder a
/// revert on Reject still undoes the earlier rounds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_review_after_a_request_for_changes_says_its_files_are_since_the_last_review() {
    let scenario = serde_json::from_value(json!({"rules": [
        {"when": {"kind": "evaluator"}, "reply": {"text": "{\"done\": true, \"summary\": \"ok\", \"remaining\": [], \"continuation_prompt\": \"\", \"is_stuck\": false, \"stuck_reason\": \"\"}"}},
        {"when": {"kind": "agent", "last_message_contains": "Created k.txt"}, "reply": {"text": "Done! written."}},
        {"when": {"kind": "agent", "last_message_contains": "Wrote k.txt"}, "reply": {"text": "Done! written."}},
        {"when": {"kind": "agent"}, "reply": {"text": "Writing.", "tool_calls": [{"name": "write_file", "arguments": {"path": "k.txt", "content": "k\n"}}]}}
    ]}))
    .unwrap();
    let server = FakeServer::start(scenario).await.unwrap();
    let e = env();
    let (url, data, ws) = (server.base_url(Protocol::Openai), e.data.clone(), e.ws.to_string_lossy().into_owned());
    let (_, id) = summary_of(&off_thread(&["run", "make k", "--workspace", &ws, "--base-url", &url, "--model", "m", "--json"], &data).await);
    let again = off_thread(&["sessions", "review", &id, "--request-changes", "check it", "--base-url", &url, "--model", "m"], &data).await;
    let said = String::from_utf8_lossy(&again.stdout).to_string();
    assert_eq!(again.status.code(), Some(6), "{said}");
    assert!(said.contains("0 file(s) changed since your last review"), "{said}");
    assert!(said.contains("a revert on Reject undoes the earlier rounds too"), "{said}");
    let read = String::from_utf8_lossy(&finishline(&["sessions", "review", &id], &data).stdout).to_string();
    assert!(read.contains("0 file(s) changed since your last review") && read.contains("a revert on Reject undoes the earlier rounds too"), "{read}");
}

/// A session started with a model the server does not have goes on with the one `sessions
/// resume --model` names, as the failure's hint says: the model was asked again (the session's
/// recorded one won), and the session could never be rescued. The switch is said and kept.
#[tokio::test(flavor = "multi_thread")]
async fn resuming_with_a_model_named_switches_the_session_to_it() {
    let scenario: fake_llm::Scenario = serde_json::from_value(json!({"rules": [
        {"when": {"model": "nope"}, "reply": {"fault": {"type": "status", "status": 404, "body": "{\"error\":{\"message\":\"The model `nope` does not exist\",\"type\":\"invalid_request_error\",\"code\":\"model_not_found\"}}"}}},
        {"when": {"kind": "agent"}, "reply": {"text": "Nothing to change."}}
    ]}))
    .unwrap();
    let server = FakeServer::start(scenario).await.unwrap();
    let e = env();
    let url = server.base_url(Protocol::Openai);
    let (data, ws) = (e.data.clone(), e.ws.to_string_lossy().into_owned());
    let out =
        tokio::task::spawn_blocking(move || finishline(&["run", "say hello", "--workspace", &ws, "--base-url", &url, "--model", "nope"], &data)).await.unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(4), "{said}");
    let id = lines(&finishline(&["sessions", "list", "--json"], &e.data))[0]["id"].as_str().unwrap().to_string();
    assert!(said.contains(&format!("finishline sessions resume {id} --base-url URL --model NAME")), "{said}");
    let asked = server.requests().len();
    let (data, sid) = (e.data.clone(), id.clone());
    let out = tokio::task::spawn_blocking(move || finishline(&["sessions", "resume", &sid, "--model", "good"], &data)).await.unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(6), "{said}");
    let models: Vec<String> = server.requests()[asked..].iter().filter_map(|r| r.body.get("model").and_then(|m| m.as_str()).map(String::from)).collect();
    assert!(!models.is_empty() && models.iter().all(|m| m == "good"), "asked with {models:?}");
    assert!(said.contains("model: good (was nope)"), "the switch is said: {said}");
    // Its counts are this command's, its tokens the session's: said as such.
    assert!(said.contains("· this command: 1 step, 0 tool calls, 0 continuations · session tokens: agent "), "{said}");
    // Kept: the list names the model it works with now, and the next resume keeps it.
    assert_eq!(lines(&finishline(&["sessions", "list", "--json"], &e.data))[0]["model"], "good");
    let shown = String::from_utf8_lossy(&finishline(&["sessions", "show", &id], &e.data).stdout).into_owned();
    assert!(shown.contains("good (was nope)"), "{shown}");
    // The next resume names no model: the agent and its evaluator keep the one switched to.
    let asked = server.requests().len();
    let (data, sid) = (e.data.clone(), id.clone());
    let out = tokio::task::spawn_blocking(move || finishline(&["sessions", "resume", &sid, "and again"], &data)).await.unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(6), "{said}");
    let models: Vec<String> = server.requests()[asked..].iter().filter_map(|r| r.body.get("model").and_then(|m| m.as_str()).map(String::from)).collect();
    assert!(!models.is_empty() && models.iter().all(|m| m == "good"), "asked with {models:?}");
}

/// A conversation turn's evaluator is asked only whether the agent left undone what it announced
/// or was asked to do: said as that question and its answer, live and in `sessions show`, not as
/// "evaluator: done" beside a summary whose verdict is "—" (no verdict on the task was made).
#[tokio::test(flavor = "multi_thread")]
async fn a_conversation_turns_check_is_said_as_its_question_not_as_a_verdict() {
    let scenario: fake_llm::Scenario = serde_json::from_value(json!({"rules": [
        {"when": {"kind": "evaluator"}, "reply": {"text": "{\"left_undone\": false, \"summary\": \"Nothing left undone.\", \"remaining\": []}"}},
        {"when": {"kind": "agent"}, "reply": {"text": "Hello! How can I help?"}}
    ]}))
    .unwrap();
    let server = FakeServer::start(scenario).await.unwrap();
    let e = env();
    let url = server.base_url(Protocol::Openai);
    let (data, ws) = (e.data.clone(), e.ws.to_string_lossy().into_owned());
    let out =
        tokio::task::spawn_blocking(move || finishline(&["run", "say hello", "--workspace", &ws, "--base-url", &url, "--model", "m"], &data)).await.unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(server.requests().iter().any(|r| r.kind == fake_llm::RequestKind::Evaluator), "the evaluator was asked: {said}");
    assert!(!said.contains("evaluator: done"), "{said}");
    assert!(said.contains("⚖ evaluator, asked whether the agent left undone what it announced or was asked to do: no — Nothing left undone."), "{said}");
    let id = lines(&finishline(&["sessions", "list", "--json"], &e.data))[0]["id"].as_str().unwrap().to_string();
    let shown = String::from_utf8_lossy(&finishline(&["sessions", "show", &id], &e.data).stdout).into_owned();
    assert!(!shown.contains("Evaluator verdict"), "{shown}");
    assert!(shown.contains("Evaluator, asked whether the agent left undone what it announced or was asked to do (cycle 1): no"), "{shown}");
}
