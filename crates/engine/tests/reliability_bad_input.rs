//! The bad-input corpus: tasks, settings, workspaces, files, tool arguments. Each case must end
//! in a clear message and lose nothing; none may crash. The test prints what it tried and what held.

use finishline_engine::store::{NewSession, Store};
use finishline_engine::tool::{ToolContext, Toolbox, Workspace};
use finishline_engine::Settings;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

struct Report(Vec<String>);

impl Report {
    fn held(&mut self, case: &str, message: &str) {
        assert!(!message.trim().is_empty(), "{case}: an error must say something");
        self.0.push(format!("held | {case:<48} | {}", message.lines().next().unwrap_or("").chars().take(90).collect::<String>()));
    }
}

fn settings_case(r: &mut Report, case: &str, v: Value) {
    let message = match Settings::from_store_value(Some(v)) {
        Err(e) => e.to_string(),
        Ok(s) => match s.validate() {
            Err(e) => e.to_string(),
            Ok(()) => panic!("{case}: bad settings were accepted"),
        },
    };
    r.held(case, &message);
}

#[tokio::test]
async fn the_bad_input_corpus_gets_clear_errors_and_loses_nothing() {
    let mut r = Report(vec![]);

    // Tasks.
    let store = Store::open_in_memory().unwrap();
    let task = |t: &str| NewSession { task: t.into(), workspace: "/tmp".into(), provider: "openai".into(), model: "m".into(), base_url: None };
    for (case, t) in [("empty task", String::new()), ("whitespace-only task", " \n\t ".into()), ("task over 1 MB", "x".repeat(1_000_001))] {
        let e = store.create_session(&task(&t)).err().unwrap_or_else(|| panic!("{case} accepted"));
        r.held(case, &e.to_string());
    }
    let (big, _) = store.create_session(&task(&"y".repeat(999_000))).expect("a task just under the limit is accepted");
    assert_eq!(store.session(&big).unwrap().task.len(), 999_000, "and kept whole");
    assert_eq!(store.list_sessions(&Default::default()).unwrap().len(), 1, "refused tasks left nothing behind");

    // Settings.
    for (case, v) in [
        ("settings: unknown provider kind", json!({"provider": {"kind": "skynet"}})),
        ("settings: provider is a number", json!({"provider": 5})),
        ("settings: base URL not a URL", json!({"provider": {"base_url": "localhost 8080"}})),
        ("settings: file:// base URL", json!({"provider": {"base_url": "file:///etc/passwd"}})),
        ("settings: zero max steps", json!({"limits": {"max_steps": 0}})),
        ("settings: absurd max steps", json!({"limits": {"max_steps": 99999999}})),
        ("settings: zero budget", json!({"limits": {"continuation_budget": 0}})),
        ("settings: negative limit", json!({"limits": {"max_retries": -1}})),
        ("settings: key variable with spaces", json!({"provider": {"api_key_env": "MY KEY"}})),
        ("settings: marker of 1 KB", json!({"completion": {"marker": "m".repeat(1000)}})),
        ("settings: negative price", json!({"prices": {"gpt": {"input_per_mtok": -1.0, "output_per_mtok": 1.0}}})),
        ("settings: theme is a list", json!({"theme": ["dark"]})),
        ("settings: model name of 1 KB", json!({"provider": {"model": "m".repeat(1000)}})),
    ] {
        settings_case(&mut r, case, v);
    }

    // Workspaces.
    for (case, path) in [("workspace that does not exist", "/definitely/not/here"), ("workspace that is a file", "/etc/hostname")] {
        let e = Workspace::new(std::path::Path::new(path)).err().unwrap_or_else(|| panic!("{case} accepted"));
        r.held(case, &e.to_string());
    }

    // Files and tool arguments.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bin.dat"), [0u8, 159, 146, 150, 0, 1]).unwrap();
    std::fs::write(dir.path().join("latin1.txt"), b"na\xefve caf\xe9").unwrap();
    std::fs::create_dir(dir.path().join("folder")).unwrap();
    std::fs::write(dir.path().join("small.txt"), "a few words\n").unwrap();
    {
        use std::io::Write;
        let mut f = std::fs::File::create(dir.path().join("huge.txt")).unwrap();
        let line = "a".repeat(1023) + "\n";
        for _ in 0..(100 * 1024) {
            f.write_all(line.as_bytes()).unwrap();
        }
    }
    let ctx = ToolContext::new(Workspace::new(dir.path()).unwrap(), CancellationToken::new());
    let tb = Toolbox::standard();
    let cases: Vec<(&str, &str, Value, &str)> = vec![
        ("read_file: binary file", "read_file", json!({"path": "bin.dat"}), "binary"),
        ("read_file: a folder", "read_file", json!({"path": "folder"}), "folder"),
        ("read_file: missing file", "read_file", json!({"path": "nope.txt"}), "No such"),
        ("read_file: path is a number", "read_file", json!({"path": 42}), "Invalid arguments"),
        ("read_file: no path", "read_file", json!({}), "Invalid arguments"),
        ("read_file: arguments are a string", "read_file", json!("just a string"), "Invalid arguments"),
        ("read_file: offset is text", "read_file", json!({"path": "latin1.txt", "offset": "ten"}), "Invalid arguments"),
        ("write_file: content is an object", "write_file", json!({"path": "a.txt", "content": {"x": 1}}), "Invalid arguments"),
        ("write_file: empty path", "write_file", json!({"path": "", "content": "x"}), "empty"),
        ("write_file: 6 MB of content", "write_file", json!({"path": "big.txt", "content": "z".repeat(6 * 1024 * 1024)}), "limit"),
        ("edit_file: empty old_text", "edit_file", json!({"path": "latin1.txt", "old_text": "", "new_text": "x"}), "empty"),
        ("edit_file: non-UTF-8 file", "edit_file", json!({"path": "latin1.txt", "old_text": "na", "new_text": "x"}), "UTF-8"),
        ("edit_file: old_text not found", "edit_file", json!({"path": "small.txt", "old_text": "zzz", "new_text": "x"}), "not found"),
        ("edit_file: a 100 MB file", "edit_file", json!({"path": "huge.txt", "old_text": "zzz", "new_text": "x"}), "too large to edit"),
        ("list_dir: a file", "list_dir", json!({"path": "bin.dat"}), "Could not list"),
        ("glob: invalid pattern", "glob", json!({"pattern": "a[b"}), "Invalid glob"),
        ("glob: pattern is null", "glob", json!({"pattern": null}), "Invalid arguments"),
        ("grep: invalid regex", "grep", json!({"pattern": "(unclosed"}), "Invalid regular expression"),
        ("grep: huge regex", "grep", json!({"pattern": "a{1000}{1000}"}), "Invalid regular expression"),
        ("run_command: empty command", "run_command", json!({"command": "  "}), "empty"),
        ("run_command: timeout is text", "run_command", json!({"command": "true", "timeout_secs": "soon"}), "Invalid arguments"),
        ("run_command: megabytes of output", "run_command", json!({"command": "yes | head -c 5000000"}), "omitted"),
        ("fetch_url: not a URL", "fetch_url", json!({"url": "not a url"}), "Not a URL"),
        ("fetch_url: ftp URL", "fetch_url", json!({"url": "ftp://example.com/x"}), "Only http"),
    ];
    for (case, tool, input, expect) in cases {
        let out = tb.get(tool).unwrap().call(&ctx, input).await;
        assert!(out.content.contains(expect), "{case}: expected “{expect}” in: {}", out.content.chars().take(300).collect::<String>());
        r.held(case, &out.content);
    }
    let out = tb.get("read_file").unwrap().call(&ctx, json!({"path": "huge.txt"})).await;
    assert!(!out.is_error && out.content.contains("only the first") && out.content.len() < 300_000, "a 100 MB file is read in part, with a note");
    r.held("read_file: 100 MB text file", &out.content[out.content.len() - 120..]);
    let out = tb.get("read_file").unwrap().call(&ctx, json!({"path": "huge.txt", "offset": 102_000, "limit": 3})).await;
    assert_eq!(out.content.lines().count(), 3, "and any window of it can be read");
    r.held("read_file: window far into a 100 MB file", "3 lines read");
    let out = tb.get("read_file").unwrap().call(&ctx, json!({"path": "latin1.txt"})).await;
    assert!(!out.is_error && out.content.contains("not valid UTF-8"));
    r.held("read_file: non-UTF-8 text", &out.content);
    assert_eq!(tb.default_permission("no_such_tool"), finishline_engine::tool::Permission::Deny, "unknown tools are never run");
    r.held("unknown tool", "refused by the permission gate and answered as a tool error");
    assert_eq!(std::fs::read(dir.path().join("latin1.txt")).unwrap(), b"na\xefve caf\xe9", "no failed call changed a file");

    println!("\nbad input corpus: {} cases", r.0.len());
    for line in &r.0 {
        println!("{line}");
    }
    assert!(r.0.len() >= 45, "the corpus covers at least 45 cases here ({})", r.0.len());
}

#[test]
fn a_full_disk_is_reported_clearly_and_loses_nothing_already_saved() {
    use finishline_engine::domain::*;
    use finishline_engine::event::EngineEvent;
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("history.db"), std::sync::Arc::new(finishline_engine::clock::SystemClock)).unwrap();
    let (sid, _) = store
        .create_session(&NewSession { task: "fill the disk".into(), workspace: "/tmp".into(), provider: "openai".into(), model: "m".into(), base_url: None })
        .unwrap();
    let m = MessageId::new();
    store.append(&sid, None, EngineEvent::MessageCreated { message_id: m.clone(), role: MessageRole::Assistant, source: None, text: None }).unwrap();
    let pages: u64 = rusqlite::Connection::open(dir.path().join("history.db")).unwrap().query_row("PRAGMA page_count", [], |r| r.get(0)).unwrap();
    store.cap_size_pages(pages + 8).unwrap();
    let mut saved = 0;
    let err = loop {
        match store.append(&sid, None, EngineEvent::TextDelta { message_id: m.clone(), text: "x".repeat(2000) }) {
            Ok(_) => saved += 1,
            Err(e) => break e,
        }
        assert!(saved < 10_000, "the cap must be hit");
    };
    assert_eq!(err.code(), finishline_engine::ErrorCode::DiskFull, "{err}");
    assert!(err.to_string().contains("disk is full"), "the message names the problem: {err}");
    let events = store.events(&sid, 0).unwrap();
    assert_eq!(events.len(), 2 + saved, "every event saved before the disk filled is still there, and nothing half-written");
    assert_eq!(store.integrity_check().unwrap(), "ok");
    println!("full disk: {saved} events saved, then: {err}");
}

/// A real full disk: a 512 KiB tmpfs, mounted in a private mount namespace (`unshare`, so no
/// root is needed and nothing outside the test sees it). The test runs itself again inside it.
#[test]
fn a_real_full_tmpfs_is_reported_clearly_and_loses_nothing_already_saved() {
    use finishline_engine::domain::*;
    use finishline_engine::event::EngineEvent;
    if let Ok(dir) = std::env::var("FINISHLINE_FULL_TMPFS") {
        let dir = std::path::PathBuf::from(dir);
        let store =
            Store::open(&dir.join("history.db"), std::sync::Arc::new(finishline_engine::clock::SystemClock)).expect("the store opens on the small disk");
        let (sid, _) = store
            .create_session(&NewSession {
                task: "fill a real disk".into(),
                workspace: "/tmp".into(),
                provider: "openai".into(),
                model: "m".into(),
                base_url: None,
            })
            .unwrap();
        let m = MessageId::new();
        store.append(&sid, None, EngineEvent::MessageCreated { message_id: m.clone(), role: MessageRole::Assistant, source: None, text: None }).unwrap();
        let mut saved = 0;
        let err = loop {
            match store.append(&sid, None, EngineEvent::TextDelta { message_id: m.clone(), text: format!("{saved:06} {}", "y".repeat(3000)) }) {
                Ok(_) => saved += 1,
                Err(e) => break e,
            }
            assert!(saved < 100_000, "a 512 KiB disk must fill");
        };
        assert_eq!(err.code(), finishline_engine::ErrorCode::DiskFull, "a full disk is named as such: {err}");
        drop(store);
        let reopened = Store::open(&dir.join("history.db"), std::sync::Arc::new(finishline_engine::clock::SystemClock));
        let events = match reopened {
            Ok(s) => {
                assert_eq!(s.integrity_check().unwrap(), "ok", "the database is intact after the disk filled");
                s.events(&sid, 0).unwrap()
            }
            Err(e) => panic!("the history must open again after the disk filled: {e}"),
        };
        assert_eq!(events.len(), 2 + saved, "every event saved before the disk filled is there, none half-written");
        println!("real full disk (512 KiB tmpfs): {saved} events saved, then: {err}");
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let script = r#"d=$(mktemp -d) && mount -t tmpfs -o size=512k tmpfs "$d" && FINISHLINE_FULL_TMPFS="$d" exec "$0" --exact a_real_full_tmpfs_is_reported_clearly_and_loses_nothing_already_saved --nocapture --test-threads=1"#;
    let out =
        std::process::Command::new("unshare").args(["--mount", "--map-root-user", "sh", "-c", script]).arg(&exe).output().expect("unshare runs (util-linux)");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && text.contains("real full disk"), "the run on a real full tmpfs must pass:\n{text}");
    println!("{}", text.lines().find(|l| l.contains("real full disk")).unwrap_or_default());
}
