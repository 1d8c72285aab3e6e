//! Tools beyond confinement: fetch_url's readable text, todo and edit behaviour.

use finishline_engine::tool::{ToolContext, Toolbox, Workspace};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

async fn serve_once(body: &'static str, content_type: &'static str) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let (mut sock, _) = listener.accept().await.unwrap();
        let mut buf = [0u8; 4096];
        let _ = sock.read(&mut buf).await;
        let resp = format!("HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}", body.len());
        sock.write_all(resp.as_bytes()).await.unwrap();
    });
    format!("http://{addr}/page")
}

fn ctx(dir: &std::path::Path) -> ToolContext {
    ToolContext::new(Workspace::new(dir).unwrap(), CancellationToken::new())
}

#[tokio::test]
async fn fetch_url_turns_html_into_readable_text() {
    let url = serve_once("<html><head><script>var hidden = 1;</script><style>p{}</style></head><body><h1>Fruit</h1><p>Apples are <b>red</b>.</p><ul><li>pear</li></ul></body></html>", "text/html; charset=utf-8").await;
    let dir = tempfile::tempdir().unwrap();
    let out = Toolbox::standard().get("fetch_url").unwrap().call(&ctx(dir.path()), json!({"url": url})).await;
    assert!(!out.is_error, "{}", out.content);
    assert!(out.content.contains("HTTP 200"));
    assert!(out.content.contains("Fruit") && out.content.contains("Apples are") && out.content.contains("pear"), "the page's text is kept: {}", out.content);
    assert!(!out.content.contains("<p>") && !out.content.contains("var hidden"), "tags and scripts are gone: {}", out.content);
}

#[tokio::test]
async fn fetch_url_refuses_other_schemes_and_reports_unreachable_hosts() {
    let dir = tempfile::tempdir().unwrap();
    let tb = Toolbox::standard();
    let out = tb.get("fetch_url").unwrap().call(&ctx(dir.path()), json!({"url": "file:///etc/passwd"})).await;
    assert!(out.is_error && out.content.contains("Only http and https"), "{}", out.content);
    let out = tb.get("fetch_url").unwrap().call(&ctx(dir.path()), json!({"url": "http://127.0.0.1:9/"})).await;
    assert!(out.is_error && out.content.contains("Could not fetch"), "{}", out.content);
    assert_eq!(tb.default_permission("fetch_url"), finishline_engine::tool::Permission::Ask, "the network asks first");
}

#[tokio::test]
async fn edit_file_needs_a_unique_exact_match() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "one two one").unwrap();
    let tb = Toolbox::standard();
    let edit = tb.get("edit_file").unwrap();
    let out = edit.call(&ctx(dir.path()), json!({"path": "a.txt", "old_text": "one", "new_text": "1"})).await;
    assert!(out.is_error && out.content.contains("occurs 2 times"), "an ambiguous edit is refused: {}", out.content);
    let out = edit.call(&ctx(dir.path()), json!({"path": "a.txt", "old_text": "one", "new_text": "1", "replace_all": true})).await;
    assert!(!out.is_error);
    assert_eq!(std::fs::read_to_string(dir.path().join("a.txt")).unwrap(), "1 two 1");
    let out = edit.call(&ctx(dir.path()), json!({"path": "a.txt", "old_text": "three", "new_text": "3"})).await;
    assert!(out.is_error && out.content.contains("not found"));
}

#[tokio::test]
async fn glob_and_grep_find_files_and_lines_and_honour_gitignore() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/main.rs"), "fn main() {\n    println!(\"hello\");\n}\n").unwrap();
    std::fs::write(dir.path().join(".gitignore"), "target/\n").unwrap();
    std::fs::create_dir_all(dir.path().join("target")).unwrap();
    std::fs::write(dir.path().join("target/junk.rs"), "println!(\"hello\")").unwrap();
    let tb = Toolbox::standard();
    let out = tb.get("glob").unwrap().call(&ctx(dir.path()), json!({"pattern": "**/*.rs"})).await;
    assert_eq!(out.content, "src/main.rs", "ignored folders are skipped");
    let out = tb.get("grep").unwrap().call(&ctx(dir.path()), json!({"pattern": "println"})).await;
    assert_eq!(out.content, "src/main.rs:2:     println!(\"hello\");");
}

#[test]
fn secret_looking_names_are_kept_out_of_children_and_ordinary_ones_are_not() {
    use finishline_engine::tool::command::is_secret_var;
    for name in [
        "AWS_SECRET_ACCESS_KEY",
        "AWS_ACCESS_KEY_ID",
        "GITHUB_TOKEN",
        "NPM_TOKEN",
        "OPENAI_API_KEY",
        "MY_SERVICE_APIKEY",
        "DB_PASSWORD",
        "PGPASSWORD",
        "SMTP_PASSWD",
        "CLIENT_SECRET",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "gpg_passphrase",
        "FINISHLINE_KEY_OPENAI",
    ] {
        assert!(is_secret_var(name), "{name} carries a secret and must not reach a command or an MCP server");
    }
    for name in ["PATH", "HOME", "LANG", "KEYBOARD_LAYOUT", "TOKENIZERS_PARALLELISM", "SSH_AUTH_SOCK", "XAUTHORITY", "CARGO_HOME", "PASSAGE"] {
        assert!(!is_secret_var(name), "{name} is an ordinary variable that commands need");
    }
}

#[tokio::test]
async fn a_command_that_leaves_a_background_child_returns_when_the_shell_exits_with_its_output() {
    let dir = tempfile::tempdir().unwrap();
    let shell = Toolbox::standard();
    let started = std::time::Instant::now();
    let out = shell.get("run_command").unwrap().call(&ctx(dir.path()), json!({"command": "sleep 60 & echo started the server", "timeout_secs": 20})).await;
    assert!(
        started.elapsed() < std::time::Duration::from_secs(5),
        "the tool returns when the shell exits, not when the background child closes the pipe ({:?})",
        started.elapsed()
    );
    assert!(!out.is_error && out.content.contains("started the server"), "its output is kept: {}", out.content);
}

#[tokio::test]
async fn a_process_a_command_starts_in_a_session_of_its_own_does_not_outlive_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let shell = Toolbox::standard();
    // `setsid` leaves the command's process group, which is what ends the rest of a command.
    let command = "setsid sh -c 'sleep 2; echo late > late.txt' > /dev/null 2>&1 < /dev/null & echo started";
    let out = shell.get("run_command").unwrap().call(&ctx(dir.path()), json!({"command": command, "timeout_secs": 20})).await;
    assert!(!out.is_error && out.content.contains("started"), "{}", out.content);
    tokio::time::sleep(std::time::Duration::from_millis(3500)).await;
    assert!(
        !dir.path().join("late.txt").exists(),
        "nothing the command started writes into the workspace after it returned, where the review would not see it"
    );
}

#[tokio::test]
async fn a_command_that_times_out_keeps_the_output_it_printed() {
    let dir = tempfile::tempdir().unwrap();
    let shell = Toolbox::standard();
    let out = shell.get("run_command").unwrap().call(&ctx(dir.path()), json!({"command": "echo compiled 41 of 42; sleep 30", "timeout_secs": 1})).await;
    assert!(out.is_error && out.content.contains("did not finish within 1 s"), "{}", out.content);
    assert!(out.content.contains("compiled 41 of 42"), "what it printed before the timeout is what the agent needs to see: {}", out.content);
}

#[tokio::test]
async fn grep_skips_a_huge_file_by_its_size_without_reading_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "needle in the notes\n").unwrap();
    // A sparse 6 GB file: reading it whole would take gigabytes of memory.
    std::fs::File::create(dir.path().join("video.bin")).unwrap().set_len(6 << 30).unwrap();
    let shell = Toolbox::standard();
    let started = std::time::Instant::now();
    let out = shell.get("grep").unwrap().call(&ctx(dir.path()), json!({"pattern": "needle"})).await;
    assert!(started.elapsed() < std::time::Duration::from_secs(3), "a huge file is skipped by its size ({:?})", started.elapsed());
    assert!(out.content.contains("notes.txt:1: needle in the notes"), "{}", out.content);
    assert!(out.content.contains("video.bin"), "the skipped file is named, so the agent knows it was not searched: {}", out.content);
}

/// The live processes whose command line is `words` and that carry `mark`.
fn marked_pids(words: &[&str], mark: &str) -> Vec<u32> {
    let cmdline: Vec<u8> = words.iter().flat_map(|w| w.bytes().chain([0])).collect();
    let wanted = format!("{}={mark}", finishline_engine::process_groups::MARK_VAR);
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| std::fs::read(format!("/proc/{p}/cmdline")).is_ok_and(|c| c == cmdline))
        .filter(|p| std::fs::read(format!("/proc/{p}/environ")).is_ok_and(|e| e.split(|b| *b == 0).any(|v| v == wanted.as_bytes())))
        .filter(|p| finishline_engine::process_groups::proc_stat(*p).is_some())
        .collect()
}

#[tokio::test]
async fn a_terminal_a_marked_process_opened_is_the_persons_and_is_left_running_while_what_escaped_without_one_ends() {
    use finishline_engine::process_groups::{end_marked, mark};
    // Both leave the command's group. One runs on a terminal of its own, as a tmux server's panes
    // and an editor's terminals do (the person may type in them); the other has none.
    let mut cmd = tokio::process::Command::new("sh");
    cmd.arg("-c")
        .arg("setsid script -qec 'sleep 47' /dev/null < /dev/null > /dev/null 2>&1 & setsid sleep 48 < /dev/null > /dev/null 2>&1 & echo started")
        .process_group(0)
        .stdin(std::process::Stdio::null());
    let m = mark(&mut cmd);
    assert!(cmd.output().await.unwrap().status.success());
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while (marked_pids(&["sleep", "47"], &m).is_empty() || marked_pids(&["sleep", "48"], &m).is_empty()) && std::time::Instant::now() < until {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let (on_terminal, host, bare) =
        (marked_pids(&["sleep", "47"], &m), marked_pids(&["script", "-qec", "sleep 47", "/dev/null"], &m), marked_pids(&["sleep", "48"], &m));
    assert!(on_terminal.len() == 1 && host.len() == 1 && bare.len() == 1, "{on_terminal:?} {host:?} {bare:?}");
    end_marked(&m);
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !marked_pids(&["sleep", "48"], &m).is_empty() && std::time::Instant::now() < until {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let left = (marked_pids(&["sleep", "47"], &m), marked_pids(&["script", "-qec", "sleep 47", "/dev/null"], &m), marked_pids(&["sleep", "48"], &m));
    for p in on_terminal.iter().chain(&host) {
        let _ = std::process::Command::new("kill").arg("-9").arg(p.to_string()).status();
    }
    assert!(left.2.is_empty(), "what escaped with no terminal is ended");
    assert_eq!((left.0, left.1), (on_terminal, host), "the process on a terminal of its own, and what hosts it, are left running");
}

#[tokio::test]
async fn a_window_on_a_file_of_one_huge_line_is_cut_to_what_one_read_returns() {
    let dir = tempfile::tempdir().unwrap();
    let mut body = "[".repeat(3 * 1024 * 1024);
    body.push_str("\nthe second line\n");
    std::fs::write(dir.path().join("data.min.json"), &body).unwrap();
    let read = Toolbox::standard();
    let read = read.get("read_file").unwrap();
    let out = read.call(&ctx(dir.path()), json!({"path": "data.min.json", "offset": 1, "limit": 1})).await;
    assert!(!out.is_error, "{}", out.content.chars().take(200).collect::<String>());
    assert!(out.content.len() < 300 * 1024, "one read returns at most 256 KB, not the 3 MB line: {} bytes", out.content.len());
    assert!(out.content.contains("line 1 is longer"), "the agent is told the line was cut: {}", &out.content[out.content.len().saturating_sub(300)..]);
    let out = read.call(&ctx(dir.path()), json!({"path": "data.min.json", "offset": 2, "limit": 1})).await;
    assert_eq!(out.content, "the second line", "the line after it is found");
}

#[tokio::test]
async fn edit_file_on_a_folder_says_it_is_a_folder_not_a_file_of_the_wrong_kind() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    let out = Toolbox::standard().get("edit_file").unwrap().call(&ctx(dir.path()), json!({"path": "src", "old_text": "a", "new_text": "b"})).await;
    assert!(out.is_error);
    assert!(!out.content.contains("UTF-8") && out.content.to_lowercase().contains("directory"), "{}", out.content);
}
