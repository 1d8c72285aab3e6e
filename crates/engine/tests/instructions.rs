//! The workspace's own instructions (AGENTS.md, CLAUDE.md, .clinerules) reach the agent and the
//! evaluator, and the session says which file was used.

mod support {
    pub mod harness;
}

use finishline_engine::event::EngineEvent;
use finishline_engine::workspace::instructions::{find, MAX_CHARS};
use serde_json::json;
use support::harness::*;

#[test]
fn agents_md_wins_then_claude_md_then_clinerules_and_empty_files_do_not_count() {
    let ws = tempfile::tempdir().unwrap();
    assert_eq!(find(ws.path()), None, "no instructions: nothing is added");
    std::fs::create_dir(ws.path().join(".clinerules")).unwrap();
    std::fs::write(ws.path().join(".clinerules/b-style.md"), "Use tabs.").unwrap();
    std::fs::write(ws.path().join(".clinerules/a-tests.md"), "Run the tests.").unwrap();
    let found = find(ws.path()).unwrap();
    assert_eq!((found.file.as_str(), found.text.as_str()), (".clinerules", "Run the tests.\n\nUse tabs."), "Cline's folder form is read in name order");
    std::fs::write(ws.path().join("CLAUDE.md"), "Claude rules").unwrap();
    assert_eq!(find(ws.path()).unwrap().file, "CLAUDE.md");
    std::fs::write(ws.path().join("AGENTS.md"), "   \n").unwrap();
    assert_eq!(find(ws.path()).unwrap().file, "CLAUDE.md", "an empty AGENTS.md does not hide the others");
    std::fs::write(ws.path().join("AGENTS.md"), "Agents rules").unwrap();
    assert_eq!(find(ws.path()).unwrap().text, "Agents rules", "AGENTS.md is the one shared standard: it wins");
}

#[test]
fn a_link_is_not_followed_and_a_long_file_is_cut() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secrets.md"), "the person's private notes").unwrap();
    let ws = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path().join("secrets.md"), ws.path().join("AGENTS.md")).unwrap();
    assert_eq!(find(ws.path()), None, "a link could point at any file on the machine, and instructions are sent to the provider");
    std::fs::write(ws.path().join("CLAUDE.md"), "x".repeat(MAX_CHARS + 500)).unwrap();
    let found = find(ws.path()).unwrap();
    assert!(found.truncated && found.text.chars().count() == MAX_CHARS, "long instructions are cut, and say so");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_and_the_evaluator_get_the_projects_instructions_and_the_session_names_the_file() {
    let h = Harness::new(
        rules(json!([
            evaluator(done_verdict()),
            agent(json!({"last_message_contains": "Created"}), json!({"text": DONE})),
            agent(json!({}), json!({"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "A"}}]})),
        ])),
        Setup::default(),
    )
    .await;
    h.write("AGENTS.md", "Always write a CHANGELOG entry.");
    let o = h.run("write a.txt").await;
    let requests = h.server.requests();
    let agent = requests.iter().find(|r| r.kind == fake_llm::RequestKind::Agent).unwrap();
    assert!(
        agent.system.contains("Always write a CHANGELOG entry.") && agent.system.contains("AGENTS.md"),
        "the agent is told the project's rules and where they come from: {}",
        agent.system
    );
    let evaluator = requests.iter().find(|r| r.kind == fake_llm::RequestKind::Evaluator).unwrap();
    assert!(evaluator.all_text.contains("Always write a CHANGELOG entry."), "the evaluator judges the work against them too");
    let named: Vec<(String, bool)> = o
        .events
        .iter()
        .filter_map(|e| if let EngineEvent::ProjectInstructions { file, truncated, .. } = &e.event { Some((file.clone(), *truncated)) } else { None })
        .collect();
    assert_eq!(named, vec![("AGENTS.md".to_string(), false)], "the session says which file was followed");
}
