//! Every command the shell registers can be called from the window: Tauri refuses a command
//! the app manifest (`build.rs`) does not list or the capability does not allow, and the button
//! that calls it is dead ("… not allowed. Command not found"), which only the real window shows.

use std::collections::BTreeSet;

fn read(path: &str) -> String {
    std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).unwrap()
}

/// The commands in `generate_handler![…]`.
fn registered() -> BTreeSet<String> {
    let lib = read("src/lib.rs");
    let start = lib.find("generate_handler![").expect("lib.rs registers its commands");
    let end = start + lib[start..].find(']').unwrap();
    lib[start..end].split(',').filter_map(|s| s.trim().rsplit("::").next().map(str::to_string)).filter(|s| !s.is_empty() && !s.contains('[')).collect()
}

#[test]
fn every_registered_command_is_in_the_manifest_and_allowed_for_the_window() {
    let commands = registered();
    assert!(commands.len() > 30 && commands.contains("submit_review"), "read the registered commands: {commands:?}");
    let manifest = read("build.rs");
    let capability = read("capabilities/default.json");
    let unlisted: Vec<&String> = commands.iter().filter(|c| !manifest.contains(&format!("\"{c}\""))).collect();
    let unallowed: Vec<&String> = commands.iter().filter(|c| !capability.contains(&format!("\"allow-{}\"", c.replace('_', "-")))).collect();
    assert!(unlisted.is_empty(), "registered but missing from build.rs: {unlisted:?}");
    assert!(unallowed.is_empty(), "registered but not allowed in capabilities/default.json: {unallowed:?}");
}
