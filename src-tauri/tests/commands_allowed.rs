//! Every command the shell registers can be called from the window: Tauri refuses a command
//! the app manifest (`build.rs`) does not list or the capability does not allow, and the button
//! that calls it is dead ("… not allowed. Command not found"), which only the real window shows.

use std::collections::BTreeSet;

fn read(path: &str) -> String {
    std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).unwrap()
}

/// The commands in `generate_handler![…]`: its items, comments and attributes left out, up to
/// the bracket that closes it.
fn registered() -> BTreeSet<String> {
    let lib = read("src/lib.rs");
    let start = lib.find("generate_handler![").expect("lib.rs registers its commands") + "generate_handler![".len();
    let mut body = String::new();
    let mut depth = 1;
    let mut rest = &lib[start..];
    while let Some(c) = rest.chars().next() {
        if rest.starts_with("//") {
            rest = &rest[rest.find('\n').unwrap_or(rest.len())..];
            continue;
        }
        if rest.starts_with("/*") {
            rest = &rest[rest.find("*/").map_or(rest.len(), |e| e + 2)..];
            continue;
        }
        if rest.starts_with("#[") {
            rest = &rest[rest.find(']').map_or(rest.len(), |e| e + 1)..];
            continue;
        }
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            _ => {}
        }
        if depth == 0 {
            break;
        }
        body.push(c);
        rest = &rest[c.len_utf8()..];
    }
    body.split(',').map(|item| item.trim().rsplit("::").next().unwrap_or("").to_string()).filter(|name| !name.is_empty()).collect()
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
