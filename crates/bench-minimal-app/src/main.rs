//! A window with one paragraph. With FINISHLINE_READY_PROBE=1 it says on stderr when the page
//! has loaded, as the real app's UI reports when it is ready.

fn main() {
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
