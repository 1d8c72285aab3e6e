//! A window with one paragraph, rendered the way the real app renders on this machine. With
//! FINISHLINE_READY_PROBE=1 it says on stderr when its first frame is painted ("ready", reported
//! by the page over IPC as the real app's UI reports its own), and when the page had loaded.

use std::sync::OnceLock;
use std::time::Instant;

static MAIN: OnceLock<Instant> = OnceLock::new();

fn probe() -> bool {
    std::env::var("FINISHLINE_READY_PROBE").is_ok_and(|v| v == "1")
}

/// The same marks as the real app's shell (`rust_NAME`, ms since main), to compare where a
/// start goes.
fn mark(name: &str) {
    if probe() {
        eprintln!("finishline-perf rust_{name} {:.3}", MAIN.get_or_init(Instant::now).elapsed().as_secs_f64() * 1000.0);
    }
}

/// The page's first frame is painted (web/painted.js): the window is ready. WebKit's page-load
/// event comes before that paint, and the real app's "ready" comes after its first paint, so
/// this is the moment to compare with.
#[tauri::command]
fn painted() {
    mark("painted");
    if probe() {
        eprintln!("finishline-perf ready 0");
    }
}

fn main() {
    MAIN.get_or_init(Instant::now);
    // The same renderer choice as the real app (src-tauri/src/lib.rs), so the comparison measures
    // the app and not a different WebKit mode: no GL compositing without a GPU render node.
    let has_gpu = std::fs::read_dir("/dev/dri").map(|d| d.flatten().any(|e| e.file_name().to_string_lossy().starts_with("renderD"))).unwrap_or(false);
    if !has_gpu && std::env::var_os("WEBKIT_DISABLE_COMPOSITING_MODE").is_none() {
        std::env::set_var("WEBKIT_DISABLE_COMPOSITING_MODE", "1");
    }
    tauri::Builder::default()
        .setup(|_| {
            mark("setup");
            Ok(())
        })
        .invoke_handler(tauri::generate_handler![painted])
        .on_page_load(|_, payload| {
            if matches!(payload.event(), tauri::webview::PageLoadEvent::Finished) {
                mark("page_loaded");
            }
        })
        .run(tauri::generate_context!())
        .expect("the minimal window");
}
