//! A window with one paragraph, rendered the way the real app renders on this machine. With FINISHLINE_READY_PROBE=1 it says on stderr when the page
//! has loaded, as the real app's UI reports when it is ready.

fn main() {
    // The same renderer choice as the real app (src-tauri/src/lib.rs), so the comparison measures
    // the app and not a different WebKit mode: no GL compositing without a GPU render node.
    let has_gpu = std::fs::read_dir("/dev/dri").map(|d| d.flatten().any(|e| e.file_name().to_string_lossy().starts_with("renderD"))).unwrap_or(false);
    if !has_gpu && std::env::var_os("WEBKIT_DISABLE_COMPOSITING_MODE").is_none() {
        std::env::set_var("WEBKIT_DISABLE_COMPOSITING_MODE", "1");
    }
    let probe = std::env::var("FINISHLINE_READY_PROBE").is_ok_and(|v| v == "1");
    tauri::Builder::default()
        .on_page_load(move |_, payload| {
            if probe && matches!(payload.event(), tauri::webview::PageLoadEvent::Finished) {
                eprintln!("finishline-perf ready 0");
            }
        })
        .run(tauri::generate_context!())
        .expect("the minimal window");
}
