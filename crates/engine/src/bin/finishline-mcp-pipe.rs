//! The pipe process on its own (`claims_pipe`), for the engine's tests and for a program that
//! embeds the engine without a front end of its own to run as the pipe. The CLI and the app are
//! their own pipe (`<executable> mcp-pipe SOCKET`) and ship no extra binary.

fn main() {
    let Some(socket) = std::env::args_os().nth(1) else {
        eprintln!("usage: finishline-mcp-pipe SOCKET");
        std::process::exit(2);
    };
    if let Err(e) = finishline_engine::external::claims_pipe::join_stdio(std::path::Path::new(&socket)) {
        eprintln!("finishline-mcp-pipe: {e}");
        std::process::exit(1);
    }
}
