//! Finishline's own MCP server for an external agent: `complete_task`, offered in `session/new`,
//! so an external agent says it is done (or partly done, or blocked) the way the built-in agent
//! does, and the completion engine weighs that claim with the rest of the evidence when the turn
//! ends. It is served on a Unix socket in a private folder, which the agent reaches through a
//! stdio process (`claims_pipe`), and on loopback over MCP's streamable HTTP for a front end that
//! has no pipe process to offer.

use std::path::{Path, PathBuf};

use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorData, ListToolsResult, PaginatedRequestParams, ServerCapabilities,
    ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::{session::local::LocalSessionManager, StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ServerHandler, ServiceExt};

use crate::tool::{self, CompleteTaskInput};

/// The name the agent sees the server under; its tool shows as `finishline_complete_task` or
/// similar, depending on the agent.
pub const SERVER_NAME: &str = "finishline";

/// A `complete_task` call, for the run to judge: its input, and where its answer goes (the text
/// and whether it is an error, as for the built-in tool).
pub struct ClaimCall {
    pub input: Value,
    pub reply: oneshot::Sender<(String, bool)>,
}

/// The running server; dropping it stops it.
pub struct ClaimsServer {
    pub url: String,
    /// The socket the pipe process joins; `None` where it could not be made.
    pub socket: Option<PathBuf>,
    stop: CancellationToken,
}

impl Drop for ClaimsServer {
    fn drop(&mut self) {
        self.stop.cancel();
        if let Some(dir) = self.socket.as_deref().and_then(Path::parent) {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

#[derive(Clone)]
struct Claims {
    calls: mpsc::UnboundedSender<ClaimCall>,
}

fn complete_task_tool() -> Tool {
    let schema = tool::schema_of::<CompleteTaskInput>();
    let schema = schema.as_object().cloned().unwrap_or_default();
    Tool::new(
        tool::COMPLETE_TASK,
        "Call this when you are finished: status success (everything asked is done), partial (say what remains) or blocked (say what you need). Finishline checks the work when your turn ends.",
        std::sync::Arc::new(schema),
    )
}

impl ServerHandler for Claims {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::default();
        info.capabilities = ServerCapabilities::builder().enable_tools().build();
        info.instructions = Some("Finishline judges when the task is really done. When you are finished, call complete_task with an honest status.".into());
        info
    }

    async fn list_tools(&self, _request: Option<PaginatedRequestParams>, _context: RequestContext<RoleServer>) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(vec![complete_task_tool()]))
    }

    async fn call_tool(&self, request: CallToolRequestParams, _context: RequestContext<RoleServer>) -> Result<CallToolResponse, ErrorData> {
        if request.name != tool::COMPLETE_TASK {
            return Ok(CallToolResult::error(vec![ContentBlock::text(format!("There is no tool named {}.", request.name))]).into());
        }
        let (reply, answer) = oneshot::channel();
        let input = Value::Object(request.arguments.unwrap_or_default());
        if self.calls.send(ClaimCall { input, reply }).is_err() {
            return Ok(CallToolResult::error(vec![ContentBlock::text("No run is listening; end your turn.")]).into());
        }
        let (text, is_error) = answer.await.unwrap_or_else(|_| ("Noted.".into(), false));
        let content = vec![ContentBlock::text(text)];
        Ok(if is_error { CallToolResult::error(content) } else { CallToolResult::success(content) }.into())
    }
}

/// Starts the server on a loopback port, whose URL carries a random path, and on a socket in a
/// folder only this user can enter: only the agent it is given to finds it.
pub async fn serve() -> std::io::Result<(ClaimsServer, mpsc::UnboundedReceiver<ClaimCall>)> {
    let (tx, rx) = mpsc::unbounded_channel();
    let stop = CancellationToken::new();
    let handler = Claims { calls: tx };
    // Off the runtime's threads: it reads a folder and knocks on sockets.
    #[cfg(unix)]
    let _ = tokio::task::spawn_blocking(|| remove_abandoned_sockets(&std::env::temp_dir())).await;
    let socket = serve_socket(handler.clone(), stop.clone());
    let service: StreamableHttpService<Claims, LocalSessionManager> = StreamableHttpService::new(
        move || Ok(handler.clone()),
        Default::default(),
        StreamableHttpServerConfig::default().with_cancellation_token(stop.child_token()),
    );
    let path = format!("/{}", uuid::Uuid::new_v4().simple());
    let router = axum::Router::new().nest_service(&path, service);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}{path}", listener.local_addr()?);
    let until = stop.clone();
    tokio::spawn(async move {
        let _ = axum::serve(listener, router).with_graceful_shutdown(async move { until.cancelled_owned().await }).await;
    });
    Ok((ClaimsServer { url, socket, stop }, rx))
}

#[cfg(not(unix))]
fn serve_socket(_handler: Claims, _stop: CancellationToken) -> Option<PathBuf> {
    None
}

const SOCKET_FOLDER_PREFIX: &str = "finishline-mcp-";

/// Removes the socket folders that front ends killed outright (kill -9, a crash, power lost) left
/// in `temp`: those whose socket refuses a connection, so nobody listens on it. A folder still
/// being made (no socket yet) or served by another session is left alone; so is one whose socket
/// was bound a moment ago and is not yet listening (refused then too): it is asked again.
#[cfg(unix)]
fn remove_abandoned_sockets(temp: &Path) {
    let Ok(entries) = std::fs::read_dir(temp) else { return };
    // Without waiting: a live session's front end stopped (Ctrl+Z) with its queue of connections
    // full would hold a blocking connect for as long as it stays stopped. Only a refusal counts.
    let refused = |socket: &Path| {
        use rustix::net::{connect, socket_with, AddressFamily, SocketAddrUnix, SocketFlags, SocketType};
        let Ok(addr) = SocketAddrUnix::new(socket) else { return false };
        let Ok(fd) = socket_with(AddressFamily::UNIX, SocketType::STREAM, SocketFlags::NONBLOCK | SocketFlags::CLOEXEC, None) else { return false };
        matches!(connect(&fd, &addr), Err(rustix::io::Errno::CONNREFUSED))
    };
    let silent: Vec<PathBuf> = entries
        .flatten()
        // A folder of its own only: never one a link elsewhere stands for.
        .filter(|entry| entry.file_name().to_string_lossy().starts_with(SOCKET_FOLDER_PREFIX) && entry.file_type().is_ok_and(|t| t.is_dir()))
        .map(|entry| entry.path())
        .filter(|dir| refused(&dir.join("mcp.sock")))
        .collect();
    if silent.is_empty() {
        return;
    }
    std::thread::sleep(std::time::Duration::from_millis(50));
    for dir in silent.into_iter().filter(|dir| refused(&dir.join("mcp.sock"))) {
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// Serves every connection to a fresh socket until `stop`; `None` when the socket cannot be made
/// (a temporary folder whose path is too long for a socket), and the agent gets HTTP instead.
#[cfg(unix)]
fn serve_socket(handler: Claims, stop: CancellationToken) -> Option<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    let dir = std::env::temp_dir().join(format!("{SOCKET_FOLDER_PREFIX}{}", uuid::Uuid::new_v4().simple()));
    std::fs::DirBuilder::new().mode(0o700).create(&dir).ok()?;
    let path = dir.join("mcp.sock");
    let Ok(listener) = tokio::net::UnixListener::bind(&path) else {
        let _ = std::fs::remove_dir_all(&dir);
        return None;
    };
    tokio::spawn(async move {
        loop {
            let stream = tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) => stream,
                    // Out of file handles or the like: the agent's claims then come from its
                    // words, as when it has no server at all.
                    Err(_) => return,
                },
                _ = stop.cancelled() => return,
            };
            let (handler, stop) = (handler.clone(), stop.clone());
            // Stopping drops the connection wherever it is, the handshake included: the pipe
            // process sees its end and exits.
            tokio::spawn(async move {
                let served = async {
                    if let Ok(service) = handler.serve(stream).await {
                        let _ = service.waiting().await;
                    }
                };
                tokio::select! {
                    _ = served => {}
                    _ = stop.cancelled() => {}
                }
            });
        }
    });
    Some(path)
}
