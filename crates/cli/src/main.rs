//! `finishline`: the same engine as the desktop app, without a window.

use std::process::ExitCode;

const USAGE: &str = "usage: finishline run \"TASK\" --workspace DIR [options]
       finishline sessions list|show ID|search TEXT|export ID --format md|json
       finishline --version";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("--version") | Some("-V") => {
            println!("finishline {}", env!("CARGO_PKG_VERSION"));
            ExitCode::SUCCESS
        }
        Some("--help") | Some("-h") | None => {
            println!("{USAGE}");
            ExitCode::SUCCESS
        }
        Some(other) => {
            eprintln!("finishline: `{other}` is not available in this build yet\n{USAGE}");
            // 2 is the CLI's exit code for usage and configuration errors.
            ExitCode::from(2)
        }
    }
}
