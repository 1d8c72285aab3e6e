//! Finishline's MCP server reached through the pipe process, as an external agent starts it:
//! what the agent writes on the process's stdin reaches `complete_task`, the run's answer comes
//! back on its stdout, and nothing is left behind when the session's server stops.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

use finishline_engine::external::claims;
use serde_json::{json, Value};

fn pipe_process(socket: &std::path::Path) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_finishline-mcp-pipe")).arg(socket).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap()
}

fn send(stdin: &mut impl Write, message: Value) {
    writeln!(stdin, "{message}").unwrap();
    stdin.flush().unwrap();
}

/// The answers to requests 1 to `last`, by id: the server answers each as it is ready.
fn answers(lines: &mut impl Iterator<Item = std::io::Result<String>>, last: u64) -> Vec<Value> {
    let mut by_id = vec![Value::Null; last as usize];
    while by_id.iter().any(Value::is_null) {
        let message: Value = serde_json::from_str(&lines.next().expect("an answer").unwrap()).unwrap();
        if let Some(id) = message["id"].as_u64().filter(|id| (1..=last).contains(id)) {
            by_id[id as usize - 1] = message;
        }
    }
    by_id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agents_complete_task_through_the_pipe_reaches_the_run_and_gets_its_answer() {
    let (server, mut calls) = claims::serve().await.unwrap();
    let socket = server.socket.clone().expect("the server has a socket for the pipe");
    let mut child = pipe_process(&socket);
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let reader = tokio::task::spawn_blocking(move || {
        let mut lines = BufReader::new(stdout).lines();
        let mut all = answers(&mut lines, 3).into_iter();
        (all.next().unwrap(), all.next().unwrap(), all.next().unwrap())
    });
    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "agent", "version": "1"}}}),
    );
    send(&mut stdin, json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    send(&mut stdin, json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "complete_task", "arguments": {"status": "success", "summary": "all written", "original_request_summary": "write it"}}}),
    );
    let call = tokio::time::timeout(Duration::from_secs(10), calls.recv()).await.expect("the claim reaches the run").unwrap();
    assert_eq!(call.input["status"], "success", "the run judges the agent's own claim");
    call.reply.send(("Accepted: your completion goes to the person for review. Stop here.".into(), false)).unwrap();
    let (init, tools, result) = tokio::time::timeout(Duration::from_secs(10), reader).await.expect("the pipe passes every answer back").unwrap();
    assert!(init["result"]["serverInfo"].is_object(), "the agent's initialize is answered: {init}");
    assert!(tools.to_string().contains("complete_task"), "the agent sees complete_task: {tools}");
    assert!(result.to_string().contains("Accepted"), "the agent reads the run's answer to its claim: {result}");
    drop(stdin);
    let _ = child.wait();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_the_sessions_server_stops_the_pipe_process_exits_and_its_socket_is_gone() {
    let (server, _calls) = claims::serve().await.unwrap();
    let socket = server.socket.clone().unwrap();
    let mut child = pipe_process(&socket);
    // Held open, as an agent holds its MCP server's stdin for the whole session.
    let _stdin = child.stdin.take().unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    drop(server);
    let exited = tokio::task::spawn_blocking(move || {
        for _ in 0..100 {
            if let Some(status) = child.try_wait().unwrap() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill();
        None
    })
    .await
    .unwrap();
    assert!(exited.is_some(), "no pipe process outlives the session's server");
    assert!(!socket.exists() && !socket.parent().unwrap().exists(), "the socket and its private folder are removed: {socket:?}");
}

/// A front end killed outright (kill -9, a crash, power lost) cannot remove its socket's folder;
/// the next server tidies away every such folder nobody listens on, and leaves a live one alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_starting_removes_the_folders_of_sockets_nobody_listens_on_any_more() {
    let abandoned = std::env::temp_dir().join(format!("finishline-mcp-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir(&abandoned).unwrap();
    // Bound and then dropped: the socket file stays, as after a process killed mid-session.
    drop(std::os::unix::net::UnixListener::bind(abandoned.join("mcp.sock")).unwrap());
    let (live, _calls) = claims::serve().await.unwrap();
    let live_socket = live.socket.clone().unwrap();
    let (second, _more) = claims::serve().await.unwrap();
    assert!(!abandoned.exists(), "the folder of a socket nobody listens on is removed: {abandoned:?}");
    assert!(live_socket.exists(), "another session's live socket is left alone: {live_socket:?}");
    drop((live, second));
}

/// A session whose front end is stopped (Ctrl+Z) listens but accepts nothing: once its queue of
/// connections is full, a blocking knock on its socket would wait for as long as it stays
/// stopped, and the next server with it. The sweep never waits, and leaves that folder alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_starting_beside_a_session_that_accepts_nothing_starts_at_once_and_leaves_it_alone() {
    let stopped = std::env::temp_dir().join(format!("finishline-mcp-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir(&stopped).unwrap();
    let socket = stopped.join("mcp.sock");
    let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    // Its queue filled: every further connection would wait.
    let mut queued = Vec::new();
    loop {
        use rustix::net::{connect, socket_with, AddressFamily, SocketAddrUnix, SocketFlags, SocketType};
        let fd = socket_with(AddressFamily::UNIX, SocketType::STREAM, SocketFlags::NONBLOCK, None).unwrap();
        if connect(&fd, &SocketAddrUnix::new(&socket).unwrap()).is_err() {
            break;
        }
        queued.push(fd);
        assert!(queued.len() < 100_000, "the queue fills");
    }
    let started = tokio::time::timeout(Duration::from_secs(10), claims::serve()).await;
    let (server, _calls) = started.expect("the server starts without waiting on the stopped session").unwrap();
    assert!(socket.exists(), "the stopped session's socket is left alone");
    drop((server, queued, listener));
    let _ = std::fs::remove_dir_all(&stopped);
}
