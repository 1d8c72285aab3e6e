//! The engine must build and test on a machine with no GUI libraries: the CLI, CI and benchmarks
//! rely on it. This asks cargo itself what the engine links.

use std::process::Command;

#[test]
fn the_engine_depends_on_no_tauri_or_gui_crate() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["tree", "-p", "finishline-engine", "-e", "normal,build", "--prefix", "none", "--offline"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo tree runs");
    assert!(out.status.success(), "cargo tree failed: {}", String::from_utf8_lossy(&out.stderr));
    let tree = String::from_utf8_lossy(&out.stdout);
    assert!(tree.contains("finishline-engine"), "cargo tree must list the engine itself");
    let gui = |name: &str| {
        ["tauri", "wry", "tao", "muda", "gtk", "gdk", "webkit2gtk", "javascriptcore", "glib", "cairo", "pango"]
            .iter()
            .any(|g| name == *g || name.starts_with(&format!("{g}-")) || name.starts_with(&format!("{g}_")))
    };
    let hits: Vec<&str> = tree.lines().filter_map(|l| l.split_whitespace().next()).filter(|n| gui(n)).collect();
    assert!(hits.is_empty(), "the engine must stay GUI-free, but it pulls in {hits:?}");
}
