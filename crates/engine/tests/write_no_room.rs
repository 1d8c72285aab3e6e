//! A write the disk cannot take (full, over quota, over the file size limit) leaves the file as
//! it was: the agent's write_file and edit_file never empty a file before they know its new
//! contents fit. A file Finishline does not record (an ignored `.env`) could not be put back.
//! The process's file size limit stands in for a full disk here (the same refusal, `EFBIG`
//! instead of `ENOSPC`, at the same point): it is this test binary's only test, so nothing else
//! runs under the limit.

use finishline_engine::tool::{ToolContext, Toolbox, Workspace};
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn ctx(dir: &std::path::Path) -> ToolContext {
    ToolContext::new(Workspace::new(dir).unwrap(), CancellationToken::new())
}

#[tokio::test]
async fn a_write_or_edit_that_does_not_fit_leaves_the_file_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let original: String = (0..400).map(|i| format!("line {i} of the person's notes\n")).collect();
    std::fs::write(dir.path().join("notes.txt"), &original).unwrap();
    let big = "x".repeat(256 * 1024);
    let tb = Toolbox::standard();
    let limit = rustix::process::getrlimit(rustix::process::Resource::Fsize);
    // Over the limit a write fails with EFBIG, not the signal that would end the process.
    unsafe { libc::signal(libc::SIGXFSZ, libc::SIG_IGN) };
    rustix::process::setrlimit(rustix::process::Resource::Fsize, rustix::process::Rlimit { current: Some(64 * 1024), maximum: limit.maximum }).unwrap();
    let wrote = tb.get("write_file").unwrap().call(&ctx(dir.path()), json!({"path": "notes.txt", "content": big})).await;
    let after_write = std::fs::read_to_string(dir.path().join("notes.txt")).unwrap();
    let edited = tb.get("edit_file").unwrap().call(&ctx(dir.path()), json!({"path": "notes.txt", "old_text": "line 7 of", "new_text": big})).await;
    let after_edit = std::fs::read_to_string(dir.path().join("notes.txt")).unwrap();
    rustix::process::setrlimit(rustix::process::Resource::Fsize, limit).unwrap();

    assert!(wrote.is_error, "{}", wrote.content);
    assert!(wrote.content.contains("left as it was"), "the agent is told nothing was lost: {}", wrote.content);
    assert_eq!(after_write, original, "the write that did not fit left the file whole");
    assert!(edited.is_error, "{}", edited.content);
    assert_eq!(after_edit, original, "the edit that did not fit left the file whole");
    let small = tb.get("write_file").unwrap().call(&ctx(dir.path()), json!({"path": "notes.txt", "content": "short\n"})).await;
    assert!(!small.is_error, "{}", small.content);
    assert_eq!(std::fs::read_to_string(dir.path().join("notes.txt")).unwrap(), "short\n", "a write that fits replaces the whole file, no old tail left");
}
