//! `fake-llm [--scenario FILE] [--port N]`: serves the fake provider until killed and prints its
//! URL on the first line of stdout. Scenarios can also be replaced at run time with
//! `PUT /_fake/scenario`.

use std::io::Write;

#[tokio::main]
async fn main() {
    let mut scenario = fake_llm::Scenario::default();
    let mut port = 0u16;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--scenario" => {
                let path = args.next().unwrap_or_else(|| fail("--scenario needs a file"));
                let text = std::fs::read_to_string(&path).unwrap_or_else(|e| fail(&format!("cannot read {path}: {e}")));
                scenario = fake_llm::parse_scenario(&text).unwrap_or_else(|e| fail(&e));
            }
            "--port" => port = args.next().and_then(|p| p.parse().ok()).unwrap_or_else(|| fail("--port needs a number")),
            "-h" | "--help" => {
                println!("usage: fake-llm [--scenario FILE] [--port N]");
                return;
            }
            other => fail(&format!("unknown argument {other}")),
        }
    }
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await.unwrap_or_else(|e| fail(&format!("cannot listen: {e}")));
    let server = fake_llm::FakeServer::serve(listener, scenario).unwrap_or_else(|e| fail(&e.to_string()));
    println!("{}", server.url());
    let _ = std::io::stdout().flush();
    let _ = tokio::signal::ctrl_c().await;
}

fn fail(msg: &str) -> ! {
    eprintln!("fake-llm: {msg}");
    std::process::exit(2);
}
