//! The agent's process and one ACP session over its stdio. The SDK's connection runs on its own
//! task; the run talks to it through [`AgentConnection`] and reads what the agent reports from a
//! channel, so a permission prompt can wait for the person while updates keep arriving.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AuthCapabilities, AuthMethodId, AuthenticateRequest, CancelNotification, ClientCapabilities, ContentBlock, CreateTerminalRequest, CreateTerminalResponse,
    FileSystemCapabilities, Implementation, InitializeRequest, KillTerminalRequest, KillTerminalResponse, LoadSessionRequest, McpServer, McpServerHttp,
    McpServerStdio, NewSessionRequest, PermissionOptionKind, PromptRequest, ReadTextFileRequest, ReadTextFileResponse, ReleaseTerminalRequest,
    ReleaseTerminalResponse, RequestPermissionOutcome, RequestPermissionRequest, RequestPermissionResponse, SelectedPermissionOutcome, SessionId,
    SessionNotification, TerminalExitStatus, TerminalId, TerminalOutputRequest, TerminalOutputResponse, TextContent, WaitForTerminalExitRequest,
    WaitForTerminalExitResponse, WriteTextFileRequest, WriteTextFileResponse,
};
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::{Agent, ByteStreams, Client};
use serde_json::Value;
use tokio::io::AsyncReadExt;
use tokio::sync::{mpsc, oneshot};
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

use super::client_fs::ReadError;
use super::definition::ExternalAgent;
use super::login::{self, LoginMethod};
use super::update::{map_update, TurnItem};
use crate::error::ErrorCode;
use crate::process_groups::{OwnedGroup, ProcessGroups};

/// What the person sees when an agent cannot be used: a code and what to do about it.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentFault {
    pub code: ErrorCode,
    pub message: String,
    /// With `external_agent_auth`: the ways the agent offers to log in.
    pub login: Vec<LoginMethod>,
    /// Who answered `initialize` before the failure, and its version.
    pub answered: Option<(String, Option<String>)>,
}

impl AgentFault {
    fn from(mut self, who: &(String, Option<String>)) -> Self {
        self.answered = Some(who.clone());
        self
    }

    pub fn new(message: impl Into<String>) -> Self {
        AgentFault { code: ErrorCode::ExternalAgent, message: message.into(), login: vec![], answered: None }
    }

    /// A login asked for with bare words ("Authentication required", Claude Code's, after three
    /// minutes of its own retries) where the agent's reply in the turn said why: a key it was
    /// given is refused ("Invalid API key · Fix external API key"). Said in those words: "needs
    /// you to log in" sent the person to log in with a key that was the thing to fix.
    pub fn explained_by(self, label: &str, said: &str) -> Self {
        let last = said.trim().rsplit("\n\n").next().unwrap_or_default().trim();
        if self.code != ErrorCode::ExternalAgentAuth || login::key_refused(&self.message) || !login::key_refused(last) {
            return self;
        }
        let words: String = last.chars().take(300).collect();
        AgentFault { message: login::what_to_do(label, &words, None, &self.login), ..self }
    }

    /// The agent refused a request: auth-required (or an error naming the key variables it
    /// lacks) becomes what to do to log in, in the agent's own words; anything else says what
    /// it refused.
    fn refused(label: &str, what: &str, e: &agent_client_protocol::Error, methods: &[LoginMethod], ended: Option<String>) -> Self {
        let detail = login::error_detail(e.data.as_ref());
        if e.code == agent_client_protocol::ErrorCode::AUTH_REQUIRED || e.data.as_ref().is_some_and(|d| d.get("envVars").is_some()) {
            return AgentFault {
                code: ErrorCode::ExternalAgentAuth,
                message: login::what_to_do(label, &e.message, detail.as_deref(), methods),
                login: methods.to_vec(),
                answered: None,
            };
        }
        // No method `initialize`: whatever answered is no ACP agent (a program without its ACP
        // mode, or another program altogether), and the protocol's words would not say that.
        let detail = detail.map(|d| format!(" ({d})")).unwrap_or_default();
        if what == START && e.code == agent_client_protocol::ErrorCode::METHOD_NOT_FOUND {
            return AgentFault::new(format!(
                "{label} does not speak the Agent Client Protocol: it did not know how to start a session (initialize{detail}{}). Check that the command starts the agent's ACP mode (for example `opencode acp` or `gemini --experimental-acp`)",
                ended.map(|w| format!("; {w}")).unwrap_or_default()
            ));
        }
        AgentFault::new(format!("{label} refused {what}: {}{detail}{}", e.message, ended.map(|w| format!(" ({w})")).unwrap_or_default()))
    }
}

/// What the first request, `initialize`, is called in what the person reads.
const START: &str = "to start (initialize)";

/// Who answered `initialize`, and what it offers.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AgentInfo {
    pub name: String,
    pub version: Option<String>,
    pub load_session: bool,
    /// It accepted the MCP servers offered in `session/new` (it can reach HTTP servers).
    pub took_mcp: bool,
    /// The agent's own id for this session.
    pub session: String,
    /// It reopened the earlier session (`Launch::reopen`) with its memory of it.
    pub loaded: bool,
    /// The ways it offers to log in (its `authMethods`).
    pub login: Vec<LoginMethod>,
    /// Whether it says it is logged in (`_auth/status_update`, sent by Claude Code and Codex);
    /// `None`: it did not say.
    pub signed_in: Option<bool>,
    /// It marks that it says so (`agentCapabilities._meta.authStatus`), which it may do only a
    /// moment after the session opened.
    pub reports_login: bool,
}

/// The agent asks before running a tool.
pub struct PermissionAsk {
    pub call_id: String,
    pub title: String,
    /// The tool's kind (`edit`, `execute`, …), when the agent says one.
    pub kind: Option<String>,
    pub input: Option<Value>,
    /// The choices it offers, by kind; the answer names one by id.
    pub options: Vec<(String, PermissionOptionKind)>,
    pub reply: oneshot::Sender<Option<String>>,
}

/// The agent wants to run a command in the client's terminal: allowed or not.
pub struct TerminalAsk {
    pub command: String,
    pub reply: oneshot::Sender<bool>,
}

/// Everything the agent sends on its own during a turn, in order.
pub enum AgentMessage {
    Update(TurnItem),
    Permission(PermissionAsk),
    Terminal(TerminalAsk),
}

/// How a turn ended, as the agent said.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnResult {
    pub stop: agent_client_protocol::v1::schema::StopReason,
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
}

/// Claude Code's and Codex's word on their login (an extension of ACP): `{authStatus: {kind,
/// label}}`, where kind `none` means nobody is logged in.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, agent_client_protocol::JsonRpcNotification)]
#[notification(method = "_auth/status_update")]
struct AuthStatusUpdate {
    #[serde(rename = "authStatus", default)]
    auth_status: Value,
}

impl AuthStatusUpdate {
    fn signed_in(&self) -> bool {
        !matches!(self.auth_status.get("kind").and_then(Value::as_str), Some("none") | Some("unauthenticated"))
    }
}

/// One live ACP session. Behind this trait so the SDK can move without the run noticing.
#[async_trait::async_trait]
pub trait AgentConnection: Send + Sync {
    fn info(&self) -> &AgentInfo;
    /// One prompt turn; what the agent reports on the way arrives on the message channel.
    async fn prompt(&self, text: String) -> Result<TurnResult, AgentFault>;
    /// Asks the agent to stop the turn; the turn then ends with `cancelled`.
    async fn cancel(&self);
    /// Resolves once the connection to the agent has ended (it exited or closed its output).
    async fn closed(&self);
    /// Ends the agent's process group now, whoever still holds the connection: an agent that
    /// ignores `session/cancel` must not go on editing once the session shows it stopped.
    fn end(&self);
    /// Whether it says it is logged in, waiting up to `within` for its word when it marks that
    /// it gives one and has not yet: `None` if it did not say.
    async fn says_logged_in(&self, within: Duration) -> Option<bool>;
    /// The last line the agent wrote on its stdout that is no ACP message (skipped by the
    /// reader) since this was last asked, or the line it left without an end, if any: quoted
    /// when its turn then looks silent. An unfinished line that grew `within` is being written.
    fn take_stray_line(&self, within: Duration) -> Option<super::stray_lines::StrayLine>;
}

/// Where and how the agent runs.
#[derive(Clone)]
pub struct Launch<'a> {
    pub agent: &'a ExternalAgent,
    pub cwd: &'a Path,
    /// Variables the commands it runs in Finishline's terminal must not see (beside every
    /// secret-looking name). The agent itself gets the person's environment, as it would from
    /// their shell: it needs its own keys (Codex reads OPENAI_API_KEY, Gemini CLI GEMINI_API_KEY).
    pub hidden_env: &'a [String],
    /// How long `initialize` and `session/new` may take (a cold `npx` start is slow).
    pub start_timeout: Duration,
    /// MCP servers to give the agent's session.
    pub mcp_servers: Vec<OfferedServer>,
    /// The agent's session of an earlier run, to reopen when the agent can (`session/load`).
    pub reopen: Option<String>,
    /// The workspace's files, offered as the client's file system (`fs/*`).
    pub files: Option<Arc<super::client_fs::WorkspaceFiles>>,
    /// Offer the client's terminal (`terminal/*`), commands gated like `run_command`.
    pub terminals: bool,
    /// Who owns the agent's process group (and its terminals' groups), to end them on cancel,
    /// quit or after a crash.
    pub processes: Arc<ProcessGroups>,
    /// Log in with this method (`authenticate`) before opening the session.
    pub authenticate: Option<String>,
    /// The keys the keychain keeps for this agent, by variable: set in its environment (and a
    /// value written [`crate::domain::IN_KEYCHAIN`] there is read from here).
    pub secrets: BTreeMap<String, String>,
}

impl<'a> Launch<'a> {
    /// A start with no task: to check the agent or log in to it. No tools, no terminal, no
    /// process group recorded for a later sweep.
    pub fn bare(agent: &'a ExternalAgent, cwd: &'a Path, start_timeout: Duration, secrets: &BTreeMap<String, String>, authenticate: Option<String>) -> Self {
        Launch {
            agent,
            cwd,
            hidden_env: &[],
            start_timeout,
            mcp_servers: vec![],
            reopen: None,
            files: None,
            terminals: false,
            processes: ProcessGroups::unrecorded(),
            authenticate,
            secrets: secrets.clone(),
        }
    }
}

/// An MCP server for the agent's session: started by the agent over stdio when there is a
/// command for it (every ACP agent takes those), else at its URL if the agent takes HTTP.
#[derive(Debug, Clone)]
pub struct OfferedServer {
    pub name: String,
    pub url: String,
    pub stdio: Option<(PathBuf, Vec<String>)>,
}

impl OfferedServer {
    fn for_agent(&self, http: bool) -> Option<McpServer> {
        match &self.stdio {
            Some((command, args)) => Some(McpServer::Stdio(McpServerStdio::new(self.name.clone(), command.clone()).args(args.clone()))),
            None if http => Some(McpServer::Http(McpServerHttp::new(self.name.clone(), self.url.clone()))),
            None => None,
        }
    }
}

struct Acp {
    info: AgentInfo,
    /// The person's name for the agent (the preset's label).
    label: String,
    cx: ConnectionTo<Agent>,
    session: SessionId,
    /// Set when the connection ends: why, with the tail of the agent's stderr.
    ended: Arc<Mutex<Option<String>>>,
    ended_rx: tokio::sync::watch::Receiver<bool>,
    /// The agent's latest word on its login (`_auth/status_update`).
    login_said: tokio::sync::watch::Receiver<Option<bool>>,
    _stop: oneshot::Sender<()>,
    /// The agent may have started its own children (an `npx` wrapper, the CLI it drives, a
    /// language server): the whole group ends with the connection, or at [`AgentConnection::end`].
    group: Option<OwnedGroup>,
    /// Its terminals' commands end with it.
    terminals: Arc<super::terminals::Terminals>,
    /// See [`AgentConnection::take_stray_line`].
    stray: super::stray_lines::Stray,
}

const STDERR_TAIL: usize = 4000;

/// What the agent wrote that was no answer, on stdout and stderr: quoted when it does not answer
/// in time (a program started without its ACP mode greets and waits for a prompt).
struct Heard {
    stray: super::stray_lines::Stray,
    stderr: Arc<Mutex<String>>,
}

impl Heard {
    fn quote(&self) -> String {
        let stdout = self.stray.take(Duration::ZERO).map(|l| format!("on stdout \"{}\"", l.quoted()));
        let stderr =
            Some(last_lines(&self.stderr.lock().unwrap_or_else(|p| p.into_inner()), 3)).filter(|l| !l.is_empty()).map(|l| format!("on stderr \"{l}\""));
        match (stdout, stderr) {
            (None, None) => " It wrote nothing.".into(),
            (a, b) => format!(" It wrote {}.", a.into_iter().chain(b).collect::<Vec<_>>().join(", and ")),
        }
    }
}

/// Starts the agent, initializes the protocol and opens a session in `cwd`.
pub async fn connect(launch: Launch<'_>) -> Result<(Arc<dyn AgentConnection>, mpsc::UnboundedReceiver<AgentMessage>), AgentFault> {
    let mut initialized = false;
    let started = tokio::time::Instant::now();
    match connect_once(launch.clone(), &mut initialized).await {
        // An older version that does not know its preset's arguments (Gemini CLI before
        // `--acp`) exits at once: it is started again the older way. One that waited out the
        // start's time is not (the person would wait as long again, for the same silence).
        Err(first) if !initialized && started.elapsed() < launch.start_timeout && launch.agent.locate().is_some() => match launch.agent.older_args() {
            Some(args) => {
                let older = ExternalAgent { args, ..launch.agent.clone() };
                let mut again = false;
                connect_once(Launch { agent: &older, ..launch }, &mut again).await.map_err(|second| if again { second } else { first })
            }
            None => Err(first),
        },
        r => r,
    }
}

type Connected = (Arc<dyn AgentConnection>, mpsc::UnboundedReceiver<AgentMessage>);

/// The agent's command: in the workspace, in a process group of its own, with the person's
/// environment as a terminal gives it, minus Finishline's own provider-key variables (those are
/// for Finishline's models, not the agent's, unless the person gives one to the agent in its
/// settings), plus the keys the person gave this agent alone.
fn command(launch: &Launch<'_>, program: &Path) -> tokio::process::Command {
    let agent = launch.agent;
    let mut cmd = tokio::process::Command::new(program);
    // PWD as well: Node and Bun agents (OpenCode) take the project from $PWD, which would
    // still name Finishline's own folder.
    cmd.args(&agent.args)
        .current_dir(launch.cwd)
        .env("PWD", launch.cwd)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    // The person's environment, as a terminal gives it, minus Finishline's own provider-key
    // variables: those are for Finishline's models, not the agent's, unless the person gives
    // one to the agent in its settings.
    for k in launch.hidden_env.iter().filter(|k| !agent.env.contains_key(*k)) {
        cmd.env_remove(k);
    }
    for (k, v) in &agent.env {
        let value = if v == crate::domain::IN_KEYCHAIN { launch.secrets.get(k).cloned().unwrap_or_default() } else { expand_env(v) };
        cmd.env(k, value);
    }
    // The keys the person gave this agent when it asked to log in, for it alone.
    for (k, v) in &launch.secrets {
        cmd.env(k, v);
    }
    #[cfg(unix)]
    cmd.process_group(0);
    cmd
}

/// The newest part of what a stream says (the agent's stderr), kept for a failure's message.
fn keep_tail(stderr: Option<tokio::process::ChildStderr>) -> (Arc<Mutex<String>>, tokio::task::JoinHandle<()>) {
    let tail = Arc::new(Mutex::new(String::new()));
    let kept = tail.clone();
    let reading = tokio::spawn(async move {
        let Some(mut err) = stderr else { return };
        let mut buf = [0u8; 4096];
        while let Ok(n) = err.read(&mut buf).await {
            if n == 0 {
                break;
            }
            let mut t = kept.lock().unwrap();
            t.push_str(&String::from_utf8_lossy(&buf[..n]));
            if t.len() > STDERR_TAIL {
                let cut = t.len() - STDERR_TAIL;
                let cut = (cut..t.len()).find(|i| t.is_char_boundary(*i)).unwrap_or(t.len());
                t.drain(..cut);
            }
        }
    });
    (tail, reading)
}

/// Asks the person, through the run, about the agent's permission request; the answer is the
/// option the person picked, or nothing (cancelled).
fn ask_person(asks: &mpsc::UnboundedSender<AgentMessage>, r: &RequestPermissionRequest) -> oneshot::Receiver<Option<String>> {
    let (reply, answer) = oneshot::channel();
    let _ = asks.send(AgentMessage::Permission(PermissionAsk {
        call_id: r.tool_call.tool_call_id.0.to_string(),
        title: r.tool_call.fields.title.clone().unwrap_or_else(|| "a tool".into()),
        kind: r.tool_call.fields.kind.and_then(super::update::kind_name),
        input: r
            .tool_call
            .fields
            .raw_input
            .clone()
            .filter(|v| !v.as_object().is_some_and(|o| o.is_empty()))
            .or_else(|| r.tool_call.fields.locations.as_deref().and_then(super::update::where_it_works)),
        options: r.options.iter().map(|o| (o.option_id.0.to_string(), o.kind)).collect(),
        reply,
    }));
    answer
}

fn permission_answer(picked: Option<String>) -> RequestPermissionResponse {
    RequestPermissionResponse::new(match picked {
        Some(id) => RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(id)),
        None => RequestPermissionOutcome::Cancelled,
    })
}

/// Asks the person, through the run, whether the agent may run a command in a terminal.
fn ask_terminal(asks: &mpsc::UnboundedSender<AgentMessage>, terms: &super::terminals::Terminals, r: &CreateTerminalRequest) -> oneshot::Receiver<bool> {
    let (reply, answer) = oneshot::channel();
    // What the command gets: a secret's value the agent sent is never passed, so it is neither
    // shown nor kept in the history.
    let env = terms.passed_env(&requested_env(r));
    let command = shown_command(&r.command, &r.args, &env, r.cwd.as_deref());
    let _ = asks.send(AgentMessage::Terminal(TerminalAsk { command, reply }));
    answer
}

/// The variables the agent asks a terminal command to get.
fn requested_env(r: &CreateTerminalRequest) -> Vec<(String, String)> {
    r.env.iter().map(|e| (e.name.clone(), e.value.clone())).collect()
}

/// The terminal command as the person is asked about it, and as "Allow for this session"
/// remembers it: read as a shell would, so it is the whole of what runs. Joined with plain spaces
/// (and without its environment and folder), two different requests read the same, and the
/// grant for one let the other run unasked.
fn shown_command(command: &str, args: &[String], env: &[(String, String)], cwd: Option<&Path>) -> String {
    // A NUL cannot be quoted for a shell; no process gets it in an argument either.
    let quote = |s: &str| shlex::try_quote(s).map_or_else(|_| format!("{s:?}"), std::borrow::Cow::into_owned);
    let folder = cwd.map(|c| format!("cd {} &&", quote(&c.to_string_lossy())));
    let vars = env.iter().map(|(k, v)| format!("{}={}", quote(k), quote(v)));
    folder.into_iter().chain(vars).chain(std::iter::once(command).chain(args.iter().map(String::as_str)).map(quote)).collect::<Vec<_>>().join(" ")
}

/// `terminal/create` once the person answered: the command runs in the workspace, or is refused.
fn make_terminal(
    terms: &super::terminals::Terminals,
    r: &CreateTerminalRequest,
    allowed: bool,
) -> Result<CreateTerminalResponse, agent_client_protocol::Error> {
    if !allowed {
        return Err(agent_client_protocol::Error::new(-32000, "The person denied this command."));
    }
    terms
        .create(&r.command, &r.args, &requested_env(r), r.cwd.as_deref(), r.output_byte_limit)
        .map(|id| CreateTerminalResponse::new(TerminalId::new(id)))
        .map_err(invalid)
}

/// Why the connection ended, with the agent's last output lines.
fn why_it_ended(failed: Option<&agent_client_protocol::Error>, status: Option<std::process::ExitStatus>, stderr: &str) -> String {
    let mut why = match (failed, status) {
        // An exit explains a connection that failed with it ("Internal error" says nothing).
        (_, Some(s)) if !s.success() => format!("the agent exited ({s})"),
        (Some(e), _) => format!("the connection to the agent failed: {}", e.message),
        (None, _) => "the agent closed the connection".to_string(),
    };
    if !stderr.is_empty() {
        why.push_str(&format!(". Its last output: {}", last_lines(stderr, 6)));
    }
    why
}

/// `fs/read_text_file`, confined to the workspace; a missing file is ACP's "resource not found",
/// in words agents match on too.
fn read_text_file(files: Option<&super::client_fs::WorkspaceFiles>, r: &ReadTextFileRequest) -> Result<ReadTextFileResponse, agent_client_protocol::Error> {
    match files.map(|f| f.read(&r.path, r.line, r.limit)) {
        Some(Ok(text)) => Ok(ReadTextFileResponse::new(text)),
        Some(Err(ReadError::NotFound(why))) => {
            Err(agent_client_protocol::Error::new(-32002, format!("Resource not found: {why}")).data(serde_json::json!({"uri": r.path.to_string_lossy()})))
        }
        Some(Err(ReadError::Refused(why))) => Err(invalid(why)),
        None => Err(agent_client_protocol::Error::new(-32601, "fs/read_text_file is not offered")),
    }
}

/// `fs/write_text_file`, confined to the workspace.
fn write_text_file(files: Option<&super::client_fs::WorkspaceFiles>, r: &WriteTextFileRequest) -> Result<WriteTextFileResponse, agent_client_protocol::Error> {
    match files.map(|f| f.write(&r.path, &r.content)) {
        Some(Ok(())) => Ok(WriteTextFileResponse::new()),
        Some(Err(why)) => Err(invalid(why)),
        None => Err(agent_client_protocol::Error::new(-32601, "fs/write_text_file is not offered")),
    }
}

/// A request Finishline refuses, with its reason (JSON-RPC "invalid params").
fn invalid(why: String) -> agent_client_protocol::Error {
    agent_client_protocol::Error::new(-32602, why)
}

/// `initialize` (with a login when asked), then the agent's session: an earlier one reopened
/// where the agent can, else a new one, offered Finishline's MCP servers. `offered`: whether the
/// client's file system and terminals are offered.
#[allow(clippy::too_many_arguments)]
async fn open_session(
    launch: &Launch<'_>,
    program: &Path,
    cx: &ConnectionTo<Agent>,
    ended: &Arc<Mutex<Option<String>>>,
    mut ended_watch: tokio::sync::watch::Receiver<bool>,
    (fs_offered, terminal_offered): (bool, bool),
    raw_auth: &Arc<Mutex<Option<Value>>>,
    heard: &Heard,
    initialized: &mut bool,
) -> Result<(AgentInfo, SessionId), AgentFault> {
    let agent = launch.agent;
    let ended_now = |ended: &Arc<Mutex<Option<String>>>| ended.lock().unwrap().clone();
    let label = agent.label();
    let within = |what: &'static str,
                  methods: &[LoginMethod],
                  r: Result<Result<Value, agent_client_protocol::Error>, tokio::time::error::Elapsed>|
     -> Result<Value, AgentFault> {
        match r {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(AgentFault::refused(&label, what, &e, methods, ended_now(ended))),
            Err(_) => Err(AgentFault::new(format!(
                "{label} did not answer {what} within {} s.{}{}",
                launch.start_timeout.as_secs(),
                heard.quote(),
                if what == START {
                    " Check that the command starts the agent's ACP mode (for example `opencode acp` or `gemini --experimental-acp`), not its own prompt."
                } else {
                    ""
                }
            ))),
        }
    };
    // Terminal logins are offered: Finishline can run the agent's own login command in one.
    let caps = ClientCapabilities::new()
        .fs(FileSystemCapabilities::new().read_text_file(fs_offered && agent.reads_through_client()).write_text_file(fs_offered))
        .terminal(terminal_offered)
        .auth(AuthCapabilities::new().terminal(true));
    let init = tokio::time::timeout(
        launch.start_timeout,
        ended_or(&mut ended_watch, async {
            cx.send_request(
                InitializeRequest::new(ProtocolVersion::V1).client_capabilities(caps).client_info(Implementation::new("finishline", env!("CARGO_PKG_VERSION"))),
            )
            .block_task()
            .await
            .map(|r| serde_json::to_value(r).unwrap_or_default())
        }),
    )
    .await;
    if let Ok(Err(e)) = &init {
        if let Some(why) = stopped_at_start(e, ended, &mut ended_watch).await {
            return Err(AgentFault::new(format!("{label} stopped before it started: {why}")));
        }
    }
    let init = within(START, &[], init)?;
    *initialized = true;
    let who = (
        init.pointer("/agentInfo/title").or_else(|| init.pointer("/agentInfo/name")).and_then(Value::as_str).map(String::from).unwrap_or_else(|| agent.label()),
        init.pointer("/agentInfo/version").and_then(Value::as_str).map(String::from),
    );
    let raw = raw_auth.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let methods = login::parse_methods(raw.as_ref().or(init.get("authMethods")).unwrap_or(&Value::Null), program, &agent.args);
    if let Some(method) = &launch.authenticate {
        let auth = tokio::time::timeout(
            launch.start_timeout,
            ended_or(&mut ended_watch, async {
                cx.send_request(AuthenticateRequest::new(AuthMethodId::new(method.as_str())))
                    .block_task()
                    .await
                    .map(|r| serde_json::to_value(r).unwrap_or_default())
            }),
        )
        .await;
        within("to log in", &methods, auth).map_err(|f| f.from(&who))?;
    }
    let info = AgentInfo {
        name: who.0.clone(),
        version: who.1.clone(),
        load_session: init.pointer("/agentCapabilities/loadSession").and_then(Value::as_bool).unwrap_or(false),
        took_mcp: false,
        session: String::new(),
        loaded: false,
        login: methods.clone(),
        signed_in: None,
        reports_login: init.pointer("/agentCapabilities/_meta/authStatus").is_some(),
    };
    let mut info = info;
    let http = init.pointer("/agentCapabilities/mcpCapabilities/http").and_then(Value::as_bool).unwrap_or(false);
    let servers: Vec<McpServer> = launch.mcp_servers.iter().filter_map(|s| s.for_agent(http)).collect();
    info.took_mcp = !servers.is_empty();
    // An earlier run's session, reopened with the agent's memory of it, when the agent can; it
    // replays the conversation as updates first, which Finishline already has.
    let mut session = None;
    if let (Some(id), true) = (&launch.reopen, info.load_session) {
        let load = tokio::time::timeout(
            launch.start_timeout,
            ended_or(&mut ended_watch, async {
                cx.send_request(LoadSessionRequest::new(SessionId::new(id.clone()), launch.cwd.to_path_buf()).mcp_servers(servers.clone()))
                    .block_task()
                    .await
                    .map(|r| serde_json::to_value(r).unwrap_or_default())
            }),
        )
        .await;
        if let Ok(Ok(_)) = load {
            session = Some(SessionId::new(id.clone()));
            info.loaded = true;
        }
    }
    let session = match session {
        Some(s) => s,
        None => {
            let new = tokio::time::timeout(
                launch.start_timeout,
                ended_or(&mut ended_watch, async {
                    cx.send_request(NewSessionRequest::new(launch.cwd.to_path_buf()).mcp_servers(servers))
                        .block_task()
                        .await
                        .map(|r| serde_json::to_value(r).unwrap_or_default())
                }),
            )
            .await;
            let new = within("a new session", &methods, new).map_err(|f| f.from(&who))?;
            new.get("sessionId")
                .and_then(Value::as_str)
                .map(|s| SessionId::new(s.to_string()))
                .ok_or_else(|| AgentFault::new(format!("{} opened a session without an id", agent.label())))?
        }
    };
    info.session = session.0.to_string();
    Ok((info, session))
}

/// What the client's side of the connection works with.
struct ClientSide {
    stdin: tokio::process::ChildStdin,
    stdout: super::auth_tap::AuthTap<super::stray_lines::StrayLines<super::line_cap::LineCap<tokio::process::ChildStdout>>>,
    /// Why reading stopped, when the agent sent a message past [`super::line_cap::MAX_LINE`].
    cut: Arc<Mutex<Option<String>>>,
    child: tokio::process::Child,
    /// The agent's updates and requests, to the run.
    tx: mpsc::UnboundedSender<AgentMessage>,
    signed_in: tokio::sync::watch::Sender<Option<bool>>,
    files: Option<Arc<super::client_fs::WorkspaceFiles>>,
    terminals: Arc<super::terminals::Terminals>,
    terminal_offered: bool,
    connected: oneshot::Sender<ConnectionTo<Agent>>,
    /// Fires (or is dropped) when the run lets go of the agent.
    stop: oneshot::Receiver<()>,
    tail: Arc<Mutex<String>>,
    /// Ends when the agent's stderr does: its last lines are read before it is said why it ended.
    tail_read: tokio::task::JoinHandle<()>,
    /// Why the connection ended, once it has, and a signal when it does.
    ended: Arc<Mutex<Option<String>>>,
    ended_tx: tokio::sync::watch::Sender<bool>,
}

/// Serves the client's side of the connection in a task of its own, until the run lets go of
/// the agent or the agent closes its end: the agent's updates, permission requests and use of
/// the client's file system and terminals.
fn serve_client(side: ClientSide) {
    let transport = ByteStreams::new(side.stdin.compat_write(), side.stdout.compat());
    let (updates, asks, terminal_asks) = (side.tx.clone(), side.tx.clone(), side.tx);
    let (reads, writes, terminals) = (side.files.clone(), side.files, side.terminals);
    let (auth_status, terminal_offered, cx_tx, stop_rx) = (side.signed_in, side.terminal_offered, side.connected, side.stop);
    let (mut child, tail, tail_read, ended, ended_tx, cut) = (side.child, side.tail, side.tail_read, side.ended, side.ended_tx, side.cut);
    let (t_create, t_output, t_wait, t_kill, t_release) = (terminals.clone(), terminals.clone(), terminals.clone(), terminals.clone(), terminals);
    tokio::spawn(async move {
        let result = Client
            .v1()
            .name("finishline")
            .on_receive_notification(
                async move |n: AuthStatusUpdate, _cx| {
                    auth_status.send_replace(Some(n.signed_in()));
                    Ok(())
                },
                agent_client_protocol::on_receive_notification!(),
            )
            .on_receive_notification(
                async move |n: SessionNotification, _cx| {
                    let _ = updates.send(AgentMessage::Update(map_update(&n.update)));
                    Ok(())
                },
                agent_client_protocol::on_receive_notification!(),
            )
            .on_receive_request(
                async move |r: RequestPermissionRequest, responder, _cx| {
                    let answer = ask_person(&asks, &r);
                    // The person may take minutes: the answer is sent from its own task so the
                    // connection keeps reading the agent's updates meanwhile.
                    tokio::spawn(async move {
                        let _ = responder.respond(permission_answer(answer.await.ok().flatten()));
                    });
                    Ok(())
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |r: ReadTextFileRequest, responder, _cx| responder.respond_with_result(read_text_file(reads.as_deref(), &r)),
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |r: WriteTextFileRequest, responder, _cx| responder.respond_with_result(write_text_file(writes.as_deref(), &r)),
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |r: CreateTerminalRequest, responder, _cx| {
                    if !terminal_offered {
                        return responder.respond_with_error(agent_client_protocol::Error::new(-32601, "terminal/create is not offered"));
                    }
                    let terms = t_create.clone();
                    let answer = ask_terminal(&terminal_asks, &terms, &r);
                    // The person may take a while to decide: answer from a task of its own.
                    tokio::spawn(async move {
                        let _ = responder.respond_with_result(make_terminal(&terms, &r, answer.await == Ok(true)));
                    });
                    Ok(())
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |r: TerminalOutputRequest, responder, _cx| {
                    responder.respond_with_result(
                        t_output
                            .output(&r.terminal_id.0)
                            .map(|(out, truncated, exit)| TerminalOutputResponse::new(out, truncated).exit_status(exit.map(exit_status)))
                            .map_err(invalid),
                    )
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |r: WaitForTerminalExitRequest, responder, _cx| {
                    let terms = t_wait.clone();
                    tokio::spawn(async move {
                        let _ = responder
                            .respond_with_result(terms.wait(&r.terminal_id.0).await.map(|s| WaitForTerminalExitResponse::new(exit_status(s))).map_err(invalid));
                    });
                    Ok(())
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |r: KillTerminalRequest, responder, _cx| {
                    responder.respond_with_result(t_kill.kill(&r.terminal_id.0).map(|()| KillTerminalResponse::new()).map_err(invalid))
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |r: ReleaseTerminalRequest, responder, _cx| {
                    responder.respond_with_result(t_release.release(&r.terminal_id.0).map(|()| ReleaseTerminalResponse::new()).map_err(invalid))
                },
                agent_client_protocol::on_receive_request!(),
            )
            .connect_with(transport, async move |cx: ConnectionTo<Agent>| {
                let _ = cx_tx.send(cx.clone());
                // Until the run lets go of the agent, or the agent closes its end.
                tokio::select! {
                    _ = stop_rx => {}
                    _ = cx.incoming_closed() => {}
                }
                Ok(())
            })
            .await;
        // Give the process a moment to exit and its last stderr lines to arrive.
        let status = tokio::time::timeout(Duration::from_millis(500), child.wait()).await.ok().and_then(|s| s.ok());
        if status.is_some() {
            // Exited: what it wrote last (why it stopped) is read to its end first.
            let _ = tokio::time::timeout(Duration::from_millis(300), tail_read).await;
        }
        let stderr = tail.lock().unwrap().trim().to_string();
        let cut = cut.lock().unwrap().clone();
        *ended.lock().unwrap() = Some(cut.unwrap_or_else(|| why_it_ended(result.as_ref().err(), status, &stderr)));
        let _ = ended_tx.send(true);
    });
}

/// Why the agent ended, when `initialize` failed because it did (not an answer: a refusal, a
/// login asked for). The request fails a moment before the connection's task has the agent's
/// exit status and last stderr lines, which say why ("ANTHROPIC_API_KEY is not set"): they are
/// waited for briefly.
async fn stopped_at_start(
    e: &agent_client_protocol::Error,
    ended: &Arc<Mutex<Option<String>>>,
    ended_watch: &mut tokio::sync::watch::Receiver<bool>,
) -> Option<String> {
    // An answer: no such method, or a login asked for (its methods and variables are its own).
    let answered = [agent_client_protocol::ErrorCode::METHOD_NOT_FOUND, agent_client_protocol::ErrorCode::AUTH_REQUIRED].contains(&e.code)
        || e.data.as_ref().is_some_and(|d| d.get("envVars").is_some());
    if answered {
        return None;
    }
    let _ = tokio::time::timeout(Duration::from_secs(2), ended_watch.wait_for(|e| *e)).await;
    ended.lock().unwrap().clone()
}

/// One start of the agent; `initialized` turns true once it has answered `initialize`.
async fn connect_once(launch: Launch<'_>, initialized: &mut bool) -> Result<Connected, AgentFault> {
    let agent = launch.agent;
    let program = agent.installed().map_err(AgentFault::new)?;
    let mut cmd = command(&launch, &program);
    let mark = crate::process_groups::mark(&mut cmd);
    let mut child = cmd.spawn().map_err(|e| AgentFault::new(format!("{} could not be started ({}): {e}", agent.label(), program.display())))?;
    // Owned from its first moment: a connection that fails below still ends the group.
    let group = child.id().map(|pid| launch.processes.own(pid, &agent.label(), &mark));
    let stdin = child.stdin.take().ok_or_else(|| AgentFault::new("the agent's stdin could not be opened"))?;
    let stdout = child.stdout.take().ok_or_else(|| AgentFault::new("the agent's stdout could not be opened"))?;
    let (tail, tail_read) = keep_tail(child.stderr.take());

    let (tx, rx) = mpsc::unbounded_channel();
    let (signed_in, login_said) = tokio::sync::watch::channel(None);
    let (cx_tx, cx_rx) = oneshot::channel::<ConnectionTo<Agent>>();
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let (ended_tx, ended_rx) = tokio::sync::watch::channel(false);
    let ended = Arc::new(Mutex::new(None));
    let (stdout, cut) = super::line_cap::LineCap::new(stdout, super::line_cap::MAX_LINE);
    let (stdout, stray) = super::stray_lines::StrayLines::new(stdout);
    let (stdout, raw_auth) = super::auth_tap::AuthTap::new(stdout);
    let fs_offered = launch.files.is_some();
    let terminals = Arc::new(super::terminals::Terminals::new(launch.cwd, launch.hidden_env, launch.processes.clone()));
    let terminal_offered = launch.terminals;
    serve_client(ClientSide {
        stdin,
        stdout,
        child,
        tx,
        signed_in,
        files: launch.files.clone(),
        terminals: terminals.clone(),
        terminal_offered,
        connected: cx_tx,
        stop: stop_rx,
        tail: tail.clone(),
        tail_read,
        ended: ended.clone(),
        ended_tx,
        cut,
    });
    let ended_now = |ended: &Arc<Mutex<Option<String>>>| ended.lock().unwrap().clone();
    let cx = match tokio::time::timeout(launch.start_timeout, cx_rx).await {
        Ok(Ok(cx)) => cx,
        _ => return Err(AgentFault::new(format!("{} did not start: {}", agent.label(), ended_now(&ended).unwrap_or_else(|| "no answer".into())))),
    };
    let heard = Heard { stray: stray.clone(), stderr: tail.clone() };
    let (mut info, session) =
        open_session(&launch, &program, &cx, &ended, ended_rx.clone(), (fs_offered, terminal_offered), &raw_auth, &heard, initialized).await?;
    info.signed_in = *login_said.borrow();
    let mut rx = rx;
    while rx.try_recv().is_ok() {}
    let conn = Acp { info, label: agent.label(), cx, session, ended, ended_rx, login_said, _stop: stop_tx, group, terminals, stray };
    Ok((Arc::new(conn), rx))
}

/// A value written `${VAR}` is read from Finishline's own environment when the agent starts, so
/// a key can reach the agent without being saved in the settings file.
pub fn expand_env(value: &str) -> String {
    match value.strip_prefix("${").and_then(|v| v.strip_suffix('}')) {
        Some(name) if !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') => std::env::var(name).unwrap_or_default(),
        _ => value.to_string(),
    }
}

fn exit_status((code, signal): super::terminals::ExitStatus) -> TerminalExitStatus {
    TerminalExitStatus::new().exit_code(code).signal(signal)
}

fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join(" | ")
}

/// A request's answer, or an error as soon as the agent's connection ends.
async fn ended_or<T>(
    ended: &mut tokio::sync::watch::Receiver<bool>,
    fut: impl std::future::Future<Output = Result<T, agent_client_protocol::Error>>,
) -> Result<T, agent_client_protocol::Error> {
    tokio::select! {
        r = fut => r,
        _ = ended.wait_for(|e| *e) => Err(agent_client_protocol::Error::new(-32603, "the agent's connection ended")),
    }
}

#[async_trait::async_trait]
impl AgentConnection for Acp {
    fn info(&self) -> &AgentInfo {
        &self.info
    }

    async fn prompt(&self, text: String) -> Result<TurnResult, AgentFault> {
        let mut ended = self.ended_rx.clone();
        let request = PromptRequest::new(self.session.clone(), vec![ContentBlock::Text(TextContent::new(text))]);
        match ended_or(&mut ended, async { self.cx.send_request(request).block_task().await }).await {
            Ok(r) => Ok(TurnResult {
                stop: r.stop_reason,
                input_tokens: r.usage.as_ref().map(|u| u.input_tokens),
                output_tokens: r.usage.as_ref().map(|u| u.output_tokens),
            }),
            Err(e) if e.code == agent_client_protocol::ErrorCode::AUTH_REQUIRED || e.data.as_ref().is_some_and(|d| d.get("envVars").is_some()) => {
                // Claude Code asks for its login only when the turn starts.
                Err(AgentFault::refused(&self.label, "the turn", &e, &self.info.login, None))
            }
            Err(e) => {
                // The request fails as the transport closes, a moment before the connection's
                // task has the exit status and the last stderr lines: wait for them briefly.
                let _ = tokio::time::timeout(Duration::from_secs(2), ended.wait_for(|e| *e)).await;
                let why = self.ended.lock().unwrap().clone();
                Err(AgentFault::new(match why {
                    Some(w) => format!("{} stopped in the middle of its turn: {w}", self.info.name),
                    None => format!("{} failed the turn: {}", self.info.name, super::server_error::words(&e.message).unwrap_or_else(|| e.message.clone())),
                }))
            }
        }
    }

    async fn cancel(&self) {
        let _ = self.cx.send_notification(CancelNotification::new(self.session.clone()));
    }

    async fn closed(&self) {
        let _ = self.ended_rx.clone().wait_for(|e| *e).await;
    }

    fn end(&self) {
        self.terminals.end_all();
        if let Some(g) = &self.group {
            g.end();
        }
    }

    async fn says_logged_in(&self, within: Duration) -> Option<bool> {
        let mut said = self.login_said.clone();
        if self.info.reports_login && said.borrow().is_none() {
            let mut ended = self.ended_rx.clone();
            tokio::select! {
                _ = tokio::time::timeout(within, said.wait_for(Option::is_some)) => {}
                _ = ended.wait_for(|e| *e) => {}
            }
        }
        let now = *said.borrow();
        now
    }

    fn take_stray_line(&self, within: Duration) -> Option<super::stray_lines::StrayLine> {
        self.stray.take(within)
    }
}

/// Used by Settings' Check button and `finishline agents`: start, introduce, stop.
pub async fn check(agent: &ExternalAgent, cwd: &Path, timeout: Duration, secrets: &BTreeMap<String, String>) -> Result<AgentInfo, AgentFault> {
    let (conn, _rx) = connect(Launch::bare(agent, cwd, timeout, secrets, None)).await?;
    let mut info = conn.info().clone();
    // Claude Code and Codex open a session whoever is logged in and say who is once a probe of
    // their CLI lands (Claude Code gives that probe 5 s): silence before it is not a login.
    info.signed_in = conn.says_logged_in(timeout.min(Duration::from_secs(8))).await;
    Ok(info)
}

#[cfg(test)]
mod tests {
    use super::expand_env;

    #[test]
    fn a_terminal_command_is_shown_whole_so_requests_that_differ_never_read_the_same() {
        let shown = |c: &str, a: &[&str], e: &[(&str, &str)], d: Option<&str>| {
            let args: Vec<String> = a.iter().map(|s| s.to_string()).collect();
            let env: Vec<(String, String)> = e.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
            super::shown_command(c, &args, &env, d.map(std::path::Path::new))
        };
        assert_eq!(shown("cargo", &["test"], &[], None), "cargo test", "a plain command reads as typed");
        assert_eq!(shown("sh", &["-c", "echo hi; rm x"], &[], None), "sh -c 'echo hi; rm x'");
        assert_ne!(shown("echo", &["a b"], &[], None), shown("echo", &["a", "b"], &[], None), "arguments keep their edges");
        assert_eq!(
            shown("cargo", &["test"], &[("RUSTC_WRAPPER", "/tmp/x y")], None),
            "RUSTC_WRAPPER='/tmp/x y' cargo test",
            "the environment it sets is shown"
        );
        assert_eq!(shown("make", &[], &[], Some("sub dir")), "cd 'sub dir' && make", "and the folder it runs in");
    }

    #[test]
    fn a_bare_login_request_is_explained_by_the_turns_last_words_only_when_they_say_a_key_was_refused() {
        let auth = |m: &str| super::AgentFault { code: crate::error::ErrorCode::ExternalAgentAuth, message: m.into(), login: vec![], answered: None };
        let said = "Let me write it.\n\nInvalid API key · Fix external API key";
        assert!(auth("Claude Code needs you to log in (authentication required).")
            .explained_by("Claude Code", said)
            .message
            .contains("is refused (Invalid API key"));
        let plain = auth("Claude Code needs you to log in (authentication required).");
        assert_eq!(plain.clone().explained_by("Claude Code", "I could not find the file."), plain, "words that say nothing of a key leave the login asked for");
        assert_eq!(plain.clone().explained_by("Claude Code", "Invalid API key.\n\nHere is the plan."), plain, "only the turn's last words explain its end");
        let other = super::AgentFault::new("Claude Code refused the prompt: busy");
        assert_eq!(other.clone().explained_by("Claude Code", said), other, "a fault that is no login is left as it is");
    }

    #[test]
    fn a_dollar_brace_value_is_read_from_finishlines_environment_and_anything_else_is_literal() {
        std::env::set_var("FINISHLINE_TEST_AGENT_KEY", "k-123");
        assert_eq!(expand_env("${FINISHLINE_TEST_AGENT_KEY}"), "k-123", "a key passes from the environment without being saved");
        assert_eq!(expand_env("${FINISHLINE_TEST_UNSET_VAR}"), "", "an unset variable is empty, not the literal text");
        assert_eq!(expand_env("plain ${X} text"), "plain ${X} text");
        assert_eq!(expand_env("${bad-name}"), "${bad-name}");
    }
}
