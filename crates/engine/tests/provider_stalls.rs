//! Servers that hold a connection open: a body that never comes, an error page that never ends,
//! a finished answer on a connection left open. Each is said (or ended) in bounded time and
//! memory, instead of a run that waits for ever before its first step or a finished answer that
//! waits out the stall limit and is then taken for a cut one.

use std::sync::Arc;
use std::time::Duration;

use finishline_engine::provider::{ChatMessage, CompletionEvent, CompletionRequest, HttpProvider, Provider, ProviderConfig, StopReason};
use finishline_engine::ProviderKind;
use futures_util::StreamExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A server that answers every request with `head`, then with what `body` writes, and never
/// closes the connection by itself.
async fn holding_server(head: &'static str, body: fn() -> Vec<u8>, endless: bool) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else { return };
            tokio::spawn(async move {
                let mut seen = Vec::new();
                let mut buf = [0u8; 8192];
                while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                    match sock.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => seen.extend_from_slice(&buf[..n]),
                    }
                }
                if sock.write_all(head.as_bytes()).await.is_err() {
                    return;
                }
                let chunk = body();
                loop {
                    if sock.write_all(&chunk).await.is_err() || !endless {
                        break;
                    }
                }
                tokio::time::sleep(Duration::from_secs(120)).await;
            });
        }
    });
    format!("http://{addr}/v1")
}

fn provider(url: String) -> Arc<HttpProvider> {
    let mut config = ProviderConfig::new(ProviderKind::Openai, url, None);
    config.connect_timeout = Duration::from_secs(1);
    config.idle_timeout = Duration::from_secs(30);
    Arc::new(HttpProvider::new(config).unwrap())
}

fn request() -> CompletionRequest {
    CompletionRequest {
        model: "m".into(),
        system: "You are a careful agent.".into(),
        messages: vec![ChatMessage::User { content: "say hello".into() }],
        tools: vec![],
        max_tokens: Some(64),
        structured: None,
        temperature: None,
    }
}

#[tokio::test]
async fn a_server_whose_settings_never_arrive_does_not_hold_up_the_run_or_the_connection_check() {
    let url = holding_server("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n", Vec::new, false).await;
    let p = provider(url);
    let window = tokio::time::timeout(Duration::from_secs(20), p.context_window("m")).await;
    assert_eq!(window.ok(), Some(None), "the context window is given up on, not waited for");
    let listed = tokio::time::timeout(Duration::from_secs(20), p.list_models()).await.expect("Test connection answers");
    let e = listed.expect_err("a model list that never arrives is an error");
    assert!(e.message.contains("did not answer in time"), "{}", e.message);
}

#[tokio::test]
async fn an_error_page_that_never_ends_is_cut_and_said_with_its_status() {
    let url = holding_server(
        "HTTP/1.1 500 Internal Server Error\r\ncontent-type: text/plain\r\ntransfer-encoding: chunked\r\n\r\n",
        || {
            let piece = "overloaded ".repeat(6000);
            format!("{:x}\r\n{piece}\r\n", piece.len()).into_bytes()
        },
        true,
    )
    .await;
    let mut stream = provider(url).stream(&request());
    let first = tokio::time::timeout(Duration::from_secs(20), stream.next()).await.expect("the error is said while the page still streams");
    let e = first.expect("an item").expect_err("a 500 is an error");
    assert!(e.message.contains("500") || e.message.to_lowercase().contains("server"), "{}", e.message);
    assert!(e.message.len() < 70_000, "the page is cut, not kept whole: {} bytes", e.message.len());
}

#[tokio::test]
async fn a_finished_answer_on_a_connection_left_open_ends_at_its_last_event() {
    let url = holding_server(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n",
        || {
            concat!(
                "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Done.\"}}]}\n\n",
                "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
                "data: [DONE]\n\n"
            )
            .as_bytes()
            .to_vec()
        },
        false,
    )
    .await;
    let events: Vec<_> = tokio::time::timeout(Duration::from_secs(10), provider(url).stream(&request()).collect::<Vec<_>>())
        .await
        .expect("the answer ends at [DONE], not when the server lets go");
    let events: Vec<CompletionEvent> = events.into_iter().map(|e| e.expect("no error")).collect();
    assert!(events.iter().any(|e| matches!(e, CompletionEvent::Stop { reason: StopReason::EndTurn })), "{events:?}");
}
