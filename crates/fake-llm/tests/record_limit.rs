//! A scenario rule without `times` answers an agent that loops on it for ever, and every request
//! it sends carries the whole conversation: recorded, that once grew to 9.8 GB and took the
//! machine's memory with it. Past a limit on what it has recorded the server stops answering
//! with a clear error, so a runaway test fails instead.

use fake_llm::{FakeServer, Protocol};
use serde_json::json;

fn looping_scenario(limit: u64) -> fake_llm::Scenario {
    fake_llm::parse_scenario(&json!({"record_limit_bytes": limit, "rules": [{"reply": {"text": "again"}}]}).to_string()).unwrap()
}

async fn ask(client: &reqwest::Client, base: &str, padding: usize) -> reqwest::Response {
    let body = json!({"model": "fake-model", "stream": true, "tools": [{"type": "function", "function": {"name": "t", "parameters": {}}}], "messages": [{"role": "user", "content": "x".repeat(padding)}]});
    client.post(format!("{base}/chat/completions")).header("content-type", "application/json").body(body.to_string()).send().await.unwrap()
}

#[tokio::test]
async fn a_rule_answering_a_loop_is_stopped_with_a_clear_error_once_the_record_is_full() {
    let server = FakeServer::start(looping_scenario(10_000)).await.unwrap();
    let base = server.base_url(Protocol::Openai);
    let client = reqwest::Client::new();
    let mut answered = 0;
    let refusal = loop {
        let resp = ask(&client, &base, 1_000).await;
        if !resp.status().is_success() {
            break resp;
        }
        answered += 1;
        assert!(answered < 100, "the server kept answering and recording past its limit");
    };
    assert!((5..=10).contains(&answered), "requests within the limit are answered as the scenario says ({answered} were)");
    assert_eq!(refusal.status().as_u16(), 507, "a full record is an error the client sees at once, not a hang");
    let text = refusal.text().await.unwrap();
    assert!(text.contains("times"), "the error says how to fix the scenario: {text}");
    let recorded = server.requests().len();
    ask(&client, &base, 1_000).await;
    assert_eq!(server.requests().len(), recorded, "nothing more is kept once the record is full");

    server.clear_requests();
    assert!(ask(&client, &base, 1_000).await.status().is_success(), "clearing the record lets a long test go on");
}

#[tokio::test]
async fn the_default_limit_leaves_ordinary_tests_alone() {
    let server = FakeServer::start(fake_llm::parse_scenario(r#"{"rules": [{"reply": {"text": "ok"}}]}"#).unwrap()).await.unwrap();
    let base = server.base_url(Protocol::Openai);
    let client = reqwest::Client::new();
    for _ in 0..20 {
        assert!(ask(&client, &base, 100_000).await.status().is_success(), "2 MB of requests is far inside the default limit");
    }
    assert_eq!(server.requests().len(), 20);
}
