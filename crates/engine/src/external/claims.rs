//! Finishline's own MCP server for an external agent: `complete_task`, served on loopback over
//! MCP's streamable HTTP and offered in `session/new`, so an external agent says it is done (or
//! partly done, or blocked) the way the built-in agent does, and the completion engine weighs
//! that claim with the rest of the evidence when the turn ends.

use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use rmcp::model::{CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorData, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::{session::local::LocalSessionManager, StreamableHttpServerConfig, StreamableHttpService};
use rmcp::ServerHandler;

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
    stop: CancellationToken,
}

impl Drop for ClaimsServer {
    fn drop(&mut self) {
        self.stop.cancel();
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

/// Starts the server on a loopback port; its URL carries a random path, so only the agent it
/// is given to finds it.
pub async fn serve() -> std::io::Result<(ClaimsServer, mpsc::UnboundedReceiver<ClaimCall>)> {
    let (tx, rx) = mpsc::unbounded_channel();
    let stop = CancellationToken::new();
    let handler = Claims { calls: tx };
    let service: StreamableHttpService<Claims, LocalSessionManager> =
        StreamableHttpService::new(move || Ok(handler.clone()), Default::default(), StreamableHttpServerConfig::default().with_cancellation_token(stop.child_token()));
    let path = format!("/{}", uuid::Uuid::new_v4().simple());
    let router = axum::Router::new().nest_service(&path, service);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}{path}", listener.local_addr()?);
    let until = stop.clone();
    tokio::spawn(async move {
        let _ = axum::serve(listener, router).with_graceful_shutdown(async move { until.cancelled_owned().await }).await;
    });
    Ok((ClaimsServer { url, stop }, rx))
}
