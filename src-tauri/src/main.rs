// Hide the console window on Windows release builds.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

fn main() {
    // An external agent starting Finishline's MCP server: this process is only the pipe to it,
    // and no window opens.
    if let Some(code) = finishline_engine::external::claims_pipe::run_if_asked() {
        std::process::exit(code);
    }
    finishline_app::run();
}
