//! Finishline's MCP server (`complete_task`) reached over stdio. Every ACP agent can start an
//! MCP server as a process, while HTTP is an optional capability; and OpenCode opens a session
//! with a stdio server about 150 ms sooner than with an HTTP one (it sets up OAuth discovery and
//! an event stream for every remote server). So the agent is given a small process that joins
//! its stdin and stdout to the server's Unix socket: the front end's own executable, run with
//! its pipe argument ([`PipeCommand`]), which calls [`join_stdio`].
//!
//! Unix only: elsewhere there is no pipe ([`PipeCommand::this_executable`] is `None`) and the
//! agent gets the server over HTTP, as before.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// How a front end runs [`join_stdio`]: its own executable and the arguments that come before
/// the socket's path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PipeCommand {
    pub program: PathBuf,
    pub args: Vec<String>,
}

/// The argument that makes a front end the pipe: `<its executable> mcp-pipe SOCKET`.
pub const PIPE_ARG: &str = "mcp-pipe";

impl PipeCommand {
    /// This executable as the pipe, for a front end whose `main` calls [`run_if_asked`] first.
    pub fn this_executable() -> Option<PipeCommand> {
        if cfg!(not(unix)) {
            return None;
        }
        std::env::current_exe().ok().map(|program| PipeCommand { program, args: vec![PIPE_ARG.into()] })
    }

    /// The command line that joins an agent's MCP client to the server at `socket`.
    pub fn for_socket(&self, socket: &Path) -> (PathBuf, Vec<String>) {
        let mut args = self.args.clone();
        args.push(socket.to_string_lossy().into_owned());
        (self.program.clone(), args)
    }
}

/// Joins `input` and `output` to the server at `socket` until the server closes: what the agent
/// writes goes to the server, what the server answers goes back, message by message.
#[cfg(unix)]
pub fn join(socket: &Path, mut input: impl Read + Send + 'static, mut output: impl Write) -> std::io::Result<()> {
    use std::net::Shutdown;
    let stream = std::os::unix::net::UnixStream::connect(socket)?;
    let mut to_server = stream.try_clone()?;
    // The agent closing our stdin ends the server's connection too; the server then closes its
    // side, which ends the copy below.
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut input, &mut to_server);
        let _ = to_server.shutdown(Shutdown::Write);
    });
    let mut from_server = stream;
    let mut buf = [0u8; 16 * 1024];
    loop {
        let n = from_server.read(&mut buf)?;
        if n == 0 {
            return Ok(());
        }
        // Each answer reaches the agent as soon as it arrives: it waits for it.
        output.write_all(&buf[..n])?;
        output.flush()?;
    }
}

#[cfg(not(unix))]
pub fn join(_socket: &Path, _input: impl Read + Send + 'static, _output: impl Write) -> std::io::Result<()> {
    Err(std::io::Error::new(std::io::ErrorKind::Unsupported, "the MCP pipe needs Unix sockets"))
}

/// [`join`] over this process's stdin and stdout: the whole of the pipe process.
pub fn join_stdio(socket: &Path) -> std::io::Result<()> {
    join(socket, std::io::stdin(), std::io::stdout().lock())
}

/// When this process was started as the pipe (`<executable> mcp-pipe SOCKET`), runs it and
/// returns its exit code; otherwise `None` and the front end starts as usual.
pub fn run_if_asked() -> Option<i32> {
    let mut args = std::env::args_os().skip(1);
    if args.next()? != PIPE_ARG {
        return None;
    }
    let Some(socket) = args.next() else {
        eprintln!("usage: {PIPE_ARG} SOCKET");
        return Some(2);
    };
    Some(match join_stdio(Path::new(&socket)) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("{PIPE_ARG}: {e}");
            1
        }
    })
}
