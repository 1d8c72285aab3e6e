//! Checkpoints at the scale of real workspaces: one shadow store per workspace shared by its
//! sessions, a first snapshot that never holds up the model, and the workspace's own git
//! repository left alone.

mod support {
    pub mod harness;
}

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use finishline_engine::domain::*;
use finishline_engine::event::EngineEvent;
use serde_json::json;
use support::harness::*;

fn size_of(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| {
            let m = e.metadata().unwrap();
            if m.is_dir() {
                size_of(&e.path())
            } else {
                m.len()
            }
        })
        .sum()
}

/// `n` files of `size` bytes each of text that does not compress away, in a few folders.
fn fill(ws: &Path, n: usize, size: usize) {
    let mut rng = fastrand::Rng::with_seed(17);
    for i in 0..n {
        let p = ws.join(format!("src/m{}/f{i}.txt", i % 20));
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        let text: String = (0..size / 16).map(|_| format!("{:016x}", rng.u64(..))).collect();
        std::fs::write(p, text).unwrap();
    }
}

/// Runs git in `dir` as a test person; its trimmed stdout.
fn git_as_person(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git").arg("-C").arg(dir).args(["-c", "user.name=T", "-c", "user.email=t@example.com"]).args(args).output().unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn writes(path: &str) -> fake_llm::Scenario {
    rules(json!([
        evaluator(done_verdict()),
        agent(json!({"last_message_contains": "Created"}), json!({"text": DONE})),
        agent(json!({}), json!({"tool_calls": [{"name": "write_file", "arguments": {"path": path, "content": "new"}}]})),
    ]))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_in_one_workspace_share_one_store_and_a_later_one_adds_only_what_changed() {
    let h = Harness::new(writes("a.txt"), Setup::default()).await;
    fill(&h.ws(), 300, 20_000);
    let first = h.run("write a.txt").await;
    assert_eq!(first.status, SessionStatus::AwaitingReview);
    let stores = h.data.path().join("checkpoints");
    let after_first = size_of(&stores);
    assert!(after_first > 1_000_000, "the first session recorded the workspace ({after_first} bytes)");

    h.server.set_scenario(writes("b.txt"));
    let second = h.run("write b.txt").await;
    assert_eq!(second.status, SessionStatus::AwaitingReview);
    let growth = size_of(&stores) - after_first;
    assert!(growth < 300_000, "a later session adds only what changed, not another copy of 6 MB: it added {growth} bytes");
    let dirs: Vec<_> = std::fs::read_dir(&stores).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(dirs.len(), 1, "one store for the workspace, not one per session: {dirs:?}");
    let files = second
        .events
        .iter()
        .find_map(|e| if let EngineEvent::ReviewRequested { files_changed, .. } = &e.event { Some(files_changed.clone()) } else { None })
        .unwrap();
    let paths: Vec<&str> = files.iter().map(|f| f["path"].as_str().unwrap()).collect();
    assert_eq!(paths, vec!["b.txt"], "each session's review shows its own changes, from its own refs");
    let r = h.engine.submit_review(&first.review_id(), Decision::Reject, None, true, true, DecidedBy::Person).unwrap();
    assert!(matches!(r, finishline_engine::agent::ReviewOutcome::Decided { .. }));
    assert!(h.read("a.txt").is_none() && h.read("b.txt").as_deref() == Some("new"), "reverting the first session undoes only its own file");
    // Deleting a session removes its refs; the other session's checkpoints stay.
    finishline_engine::workspace::checkpoint::forget_session(&stores, &h.ws().canonicalize().unwrap(), first.session.as_str()).unwrap();
    let store = std::fs::read_dir(&stores).unwrap().flatten().next().unwrap().path();
    let refs = |sid: &SessionId| {
        std::process::Command::new("git")
            .arg("--git-dir")
            .arg(&store)
            .args(["for-each-ref", "--format=%(refname)", &format!("refs/finishline/{}/", sid.as_str())])
            .output()
            .unwrap()
            .stdout
    };
    assert!(refs(&first.session).is_empty(), "the deleted session's refs are gone");
    assert!(!refs(&second.session).is_empty(), "the other session keeps its own");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_model_request_does_not_wait_for_the_first_snapshot() {
    let h = Harness::new(writes("a.txt"), Setup::default()).await;
    // Enough files that recording them takes a while.
    fill(&h.ws(), 20_000, 200);
    let (sid, handle) = h.engine.start_session("write a.txt", &h.ws()).unwrap();
    let mut first_request = None;
    for _ in 0..3000 {
        if !h.server.requests().is_empty() {
            first_request = Some(SystemTime::now());
            break;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let first_request = first_request.expect("the model was asked");
    tokio::time::timeout(Duration::from_secs(120), handle).await.unwrap().unwrap();
    let stores = h.data.path().join("checkpoints");
    let store = std::fs::read_dir(&stores).unwrap().flatten().next().unwrap().path();
    let base_ref = store.join(format!("refs/finishline/{}/base", sid.as_str()));
    let recorded = std::fs::metadata(&base_ref).expect("the base checkpoint exists").modified().unwrap();
    assert!(first_request < recorded, "the model's first request went out while the workspace was still being recorded");
    let o = h.outcome(&sid);
    let waited = o.events.iter().position(|e| matches!(e.event, EngineEvent::Activity { phase: ActivityPhase::Checkpointing, .. }));
    let tool = o.events.iter().position(|e| matches!(&e.event, EngineEvent::ToolCall { state: ToolState::Running, .. }));
    assert!(waited.is_some() && waited < tool, "the first tool waits for the recording, and the person sees why");
    let said: Vec<&str> = o
        .events
        .iter()
        .filter_map(|e| if let EngineEvent::Activity { phase: ActivityPhase::Checkpointing, detail } = &e.event { Some(detail.as_str()) } else { None })
        .collect();
    assert!(said.iter().any(|d| d.contains("recording 20,000 files")), "a long wait says how many files it is recording, not only that it is busy: {said:?}");
    assert_eq!(o.status, SessionStatus::AwaitingReview);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workspace_that_is_a_git_repository_keeps_its_own_index_and_history() {
    let h = Harness::new(writes("a.txt"), Setup::default()).await;
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git").args(["-c", "user.name=t", "-c", "user.email=t@t"]).args(args).current_dir(h.ws()).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    git(&["init", "-q"]);
    h.write("tracked.txt", "tracked");
    h.write("staged.txt", "staged only");
    git(&["add", "tracked.txt"]);
    git(&["commit", "-qm", "mine"]);
    git(&["add", "staged.txt"]);
    let status_before = git(&["status", "--porcelain"]);
    let o = h.run("write a.txt").await;
    assert_eq!(o.status, SessionStatus::AwaitingReview);
    assert_eq!(git(&["log", "--format=%s"]).trim(), "mine", "no commit is added to the person's repository");
    let status_after = git(&["status", "--porcelain"]);
    assert_eq!(status_after.replace("?? a.txt\n", ""), status_before, "the person's staged changes are as they were; only the agent's new file shows");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_over_the_size_limit_is_never_copied_and_the_review_says_revert_cannot_restore_it() {
    let h = Harness::new(writes("a.txt"), Setup::default()).await;
    // 12 MB of data that does not compress: over the 10 MB limit.
    let mut rng = fastrand::Rng::with_seed(3);
    let blob: Vec<u8> = (0..12 * 1024 * 1024).map(|_| rng.u8(..)).collect();
    std::fs::create_dir_all(h.ws().join("media")).unwrap();
    std::fs::write(h.ws().join("media/take 1 [final].mov"), &blob).unwrap();
    h.write("notes.md", "small");
    let o = h.run("write a.txt").await;
    assert_eq!(o.status, SessionStatus::AwaitingReview);
    let stores = h.data.path().join("checkpoints");
    assert!(size_of(&stores) < 2_000_000, "the 12 MB file is not copied ({} bytes stored)", size_of(&stores));
    let not_covered =
        o.events.iter().find_map(|e| if let EngineEvent::ReviewRequested { not_covered, .. } = &e.event { Some(not_covered.clone()) } else { None }).unwrap();
    assert_eq!(not_covered, vec!["media/take 1 [final].mov".to_string()], "the review names what revert cannot restore");
    let files = o
        .events
        .iter()
        .find_map(|e| if let EngineEvent::ReviewRequested { files_changed, .. } = &e.event { Some(files_changed.clone()) } else { None })
        .unwrap();
    assert_eq!(files.iter().map(|f| f["path"].as_str().unwrap()).collect::<Vec<_>>(), vec!["a.txt"], "the agent's change is still captured");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dependency_folders_are_left_out_by_default() {
    let h = Harness::new(writes("a.txt"), Setup::default()).await;
    fill(&h.ws().join("node_modules"), 200, 20_000);
    h.write("package.json", "{}");
    let o = h.run("write a.txt").await;
    assert_eq!(o.status, SessionStatus::AwaitingReview);
    assert!(size_of(&h.data.path().join("checkpoints")) < 1_000_000, "node_modules is recreated by npm, not copied into checkpoints");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_of_a_repository_nested_in_the_workspace_are_captured_and_reverted() {
    let scn = rules(json!([
        evaluator(done_verdict()),
        agent(json!({"last_message_contains": "Wrote"}), json!({"text": DONE})),
        agent(json!({}), json!({"tool_calls": [{"name": "write_file", "arguments": {"path": "vendor/lib/src.txt", "content": "changed by the agent"}}]})),
    ]));
    let h = Harness::new(scn, Setup::default()).await;
    h.write("vendor/lib/src.txt", "the library's own text");
    h.write("top.txt", "top");
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .current_dir(h.ws().join("vendor/lib"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    };
    git(&["init", "-q"]);
    git(&["add", "."]);
    git(&["commit", "-qm", "vendored"]);
    let o = h.run("change the vendored library").await;
    assert_eq!(o.status, SessionStatus::AwaitingReview);
    let files = o
        .events
        .iter()
        .find_map(|e| if let EngineEvent::ReviewRequested { files_changed, .. } = &e.event { Some(files_changed.clone()) } else { None })
        .unwrap();
    let paths: Vec<&str> = files.iter().map(|f| f["path"].as_str().unwrap()).collect();
    assert_eq!(paths, vec!["vendor/lib/src.txt"], "a file inside a nested repository shows as itself, not as a link to that repository");
    assert!(files[0]["diff"].as_str().unwrap().contains("+changed by the agent"));
    h.engine.submit_review(&o.review_id(), Decision::Reject, None, true, false, DecidedBy::Person).unwrap();
    assert_eq!(h.read("vendor/lib/src.txt").as_deref(), Some("the library's own text"), "and revert restores it");
}

#[test]
fn a_home_folder_or_the_root_is_flagged_and_files_are_counted_as_checkpoints_see_them() {
    use finishline_engine::workspace::checkpoint::survey;
    let dir = tempfile::tempdir().unwrap();
    fill(dir.path(), 50, 16);
    fill(&dir.path().join("node_modules"), 30, 16);
    std::fs::write(dir.path().join(".gitignore"), "ignored/\n").unwrap();
    fill(&dir.path().join("ignored"), 20, 16);
    let s = survey(dir.path()).unwrap();
    assert_eq!((s.files, s.capped, s.too_broad), (51, false, false), "50 files and .gitignore; node_modules and ignored folders are not counted");
    assert!(survey(Path::new("/")).unwrap().too_broad, "the root of the disk is flagged");
    let home = std::env::var("HOME").unwrap();
    assert!(survey(Path::new(&home)).unwrap().too_broad, "the home folder is flagged");
}

#[test]
fn a_file_chosen_as_the_workspace_is_said_to_be_a_file_with_the_folder_it_is_in() {
    use finishline_engine::workspace::checkpoint::survey;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("README.md");
    std::fs::write(&file, "hello\n").unwrap();
    let said = survey(&file).unwrap_err();
    assert_eq!(said.code(), finishline_engine::ErrorCode::InvalidInput);
    assert_eq!(said.to_string(), format!("{} is a file, not a folder: choose the folder it is in, {}", file.display(), dir.path().display()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_lists_each_workspace_store_and_freeing_it_keeps_what_live_sessions_need() {
    use finishline_engine::workspace::checkpoint::{forget_session, prune_store, usage};
    let h = Harness::new(writes("a.txt"), Setup::default()).await;
    let mut rng = fastrand::Rng::with_seed(9);
    let first_only: String = (0..200_000).map(|_| format!("{:016x}", rng.u64(..))).collect();
    let first = h.run("write a.txt").await;
    // A file only the first session saw (3 MB of noise), then gone before the second.
    std::fs::write(h.ws().join("scratch.txt"), &first_only).unwrap();
    h.server.set_scenario(writes("b.txt"));
    let stores = h.data.path().join("checkpoints");
    // Record scratch.txt in the first session's store, then delete it.
    let cp = h.engine.checkpoints(&first.session, &h.ws().canonicalize().unwrap()).unwrap();
    let snap = cp.snapshot("scratch").unwrap();
    cp.mark("agent", &snap).unwrap();
    std::fs::remove_file(h.ws().join("scratch.txt")).unwrap();
    let second = h.run("write b.txt").await;
    let listed = usage(&stores);
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].workspace, h.ws().canonicalize().unwrap().to_string_lossy(), "History can say which folder the space is for");
    assert_eq!(listed[0].sessions, 2, "both sessions have their checkpoints there");
    forget_session(&stores, &h.ws().canonicalize().unwrap(), first.session.as_str()).unwrap();
    let freed = prune_store(&stores, &listed[0].id).unwrap();
    assert!(freed > 1_000_000, "objects only the deleted session used are freed ({freed} bytes)");
    let r = h.engine.submit_review(&second.review_id(), Decision::Reject, None, true, true, DecidedBy::Person).unwrap();
    assert!(
        matches!(r, finishline_engine::agent::ReviewOutcome::Decided { revert: Some(ref rep), .. } if rep.applied),
        "the live session still reverts: {r:?}"
    );
    assert!(h.read("b.txt").is_none());
    assert!(prune_store(&stores, "../x").is_err(), "only a store's own name is accepted");
}

#[test]
fn a_step_records_files_created_changed_and_deleted_and_a_repository_that_appeared_since_the_last() {
    use finishline_engine::workspace::checkpoint::{ChangeKind, Checkpoints};
    let ws = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let ws = ws.path().canonicalize().unwrap();
    for (p, text) in [("keep.txt", "same"), ("edit.txt", "before"), ("gone.txt", "bye"), ("dir/deep.txt", "deep")] {
        std::fs::create_dir_all(ws.join(p).parent().unwrap()).unwrap();
        std::fs::write(ws.join(p), text).unwrap();
    }
    let cp = Checkpoints::open_shared(data.path(), &ws, "s1").unwrap();
    let first = cp.snapshot("first").unwrap();
    std::fs::write(ws.join("edit.txt"), "after").unwrap();
    std::fs::remove_file(ws.join("gone.txt")).unwrap();
    std::fs::write(ws.join("dir/new file.txt"), "new").unwrap();
    std::fs::create_dir_all(ws.join("cloned")).unwrap();
    std::fs::write(ws.join("cloned/readme.md"), "cloned text").unwrap();
    let out = std::process::Command::new("git").args(["init", "-q"]).current_dir(ws.join("cloned")).output().unwrap();
    assert!(out.status.success());
    let second = cp.snapshot("second").unwrap();
    let mut changes: Vec<(String, ChangeKind)> = cp.changes(&first, &second).unwrap().into_iter().map(|c| (c.path, c.kind)).collect();
    changes.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        changes,
        vec![
            ("cloned/readme.md".to_string(), ChangeKind::Created),
            ("dir/new file.txt".to_string(), ChangeKind::Created),
            ("edit.txt".to_string(), ChangeKind::Modified),
            ("gone.txt".to_string(), ChangeKind::Deleted),
        ],
        "a step records exactly what changed since the last one, a new repository's files included, or the review and revert miss them"
    );
    assert_eq!(cp.marked("last").as_deref(), Some(second.as_str()), "the session's latest checkpoint moves with each step");
    std::fs::write(ws.join("cloned/readme.md"), "edited inside the clone").unwrap();
    let third = cp.snapshot("third").unwrap();
    let changes: Vec<String> = cp.changes(&second, &third).unwrap().into_iter().map(|c| c.path).collect();
    assert_eq!(changes, vec!["cloned/readme.md"], "later edits inside a nested repository are recorded like any file");
}

#[test]
fn a_repository_with_no_commit_yet_inside_a_large_workspace_is_recorded_file_by_file() {
    use finishline_engine::workspace::checkpoint::Checkpoints;
    let ws = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let ws = ws.path().canonicalize().unwrap();
    // More files than a step adds one by one, so the first snapshot takes `git add --all`.
    for i in 0..5_100 {
        let p = ws.join(format!("src/m{}/f{i}.txt", i % 50));
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, i.to_string()).unwrap();
    }
    std::fs::create_dir_all(ws.join("scaffold")).unwrap();
    std::fs::write(ws.join("scaffold/main.py"), "print('hi')").unwrap();
    let out = std::process::Command::new("git").args(["init", "-q"]).current_dir(ws.join("scaffold")).output().unwrap();
    assert!(out.status.success());
    let cp = Checkpoints::open_shared(data.path(), &ws, "s1").expect("store");
    let first = cp.snapshot("first").expect("a freshly initialised repository in the workspace must not stop checkpoints");
    std::fs::write(ws.join("scaffold/main.py"), "print('changed')").unwrap();
    let second = cp.snapshot("second").unwrap();
    let changes: Vec<String> = cp.changes(&first, &second).unwrap().into_iter().map(|c| c.path).collect();
    assert_eq!(changes, vec!["scaffold/main.py"], "its files are recorded, so the review shows them and revert restores them");
}

#[test]
fn a_submodule_of_the_workspace_repository_is_captured_as_files_and_its_git_left_alone() {
    use finishline_engine::workspace::checkpoint::Checkpoints;
    let root = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let root = root.path().canonicalize().unwrap();
    let git = |dir: &Path, args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t", "-c", "protocol.file.allow=always"])
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let lib = root.join("lib-origin");
    let ws = root.join("ws");
    for d in [&lib, &ws] {
        std::fs::create_dir_all(d).unwrap();
        git(d, &["init", "-q"]);
    }
    std::fs::write(lib.join("lib.rs"), "pub fn lib() {}").unwrap();
    git(&lib, &["add", "."]);
    git(&lib, &["commit", "-qm", "lib"]);
    std::fs::write(ws.join("main.rs"), "fn main() {}").unwrap();
    git(&ws, &["submodule", "add", "-q", lib.to_str().unwrap(), "deps/lib"]);
    git(&ws, &["add", "."]);
    git(&ws, &["commit", "-qm", "with a submodule"]);
    let status_before = git(&ws, &["status", "--porcelain"]);

    let cp = Checkpoints::open_shared(data.path(), &ws, "s1").unwrap();
    let first = cp.snapshot("first").unwrap();
    std::fs::write(ws.join("deps/lib/lib.rs"), "pub fn lib() { changed() }").unwrap();
    let second = cp.snapshot("second").unwrap();
    let changes = cp.changes(&first, &second).unwrap();
    assert_eq!(changes.iter().map(|c| c.path.as_str()).collect::<Vec<_>>(), vec!["deps/lib/lib.rs"], "a file in a submodule shows as itself, with its diff");
    assert!(changes[0].diff.contains("+pub fn lib() { changed() }"));
    cp.revert(&first, &second, false).unwrap();
    assert_eq!(std::fs::read_to_string(ws.join("deps/lib/lib.rs")).unwrap(), "pub fn lib() {}", "revert restores it");
    assert_eq!(git(&ws, &["status", "--porcelain"]), status_before, "the workspace's own repository and its submodule see nothing of the checkpoints");
}

#[test]
fn an_index_lent_back_to_the_worktree_returns_holding_exactly_the_last_checkpoint() {
    use finishline_engine::workspace::checkpoint::{ChangeKind, Checkpoints};
    let git = |dir: &Path, args: &[&str]| {
        let out = std::process::Command::new("git").arg("-C").arg(dir).args(args).output().unwrap();
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    };
    let repo = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let repo = repo.path().canonicalize().unwrap();
    git(&repo, &["init", "-q"]);
    // The person's git marks every entry it adds assume-unchanged: the store must look anyway.
    git(&repo, &["config", "core.ignoreStat", "true"]);
    for (p, text) in [("a.txt", "a"), ("b.txt", "b"), ("c.txt", "c")] {
        std::fs::write(repo.join(p), text).unwrap();
    }
    git(&repo, &["add", "-A"]);
    let index = repo.join(".git/index");
    let cp = Checkpoints::open_shared(data.path(), &repo, "s1").unwrap();
    cp.borrow_objects(&repo.join(".git/objects"), &index).unwrap();
    std::fs::write(repo.join("c.txt"), "c, changed at once").unwrap();
    // A file the checkpoints leave out but the repository's index holds, and one the
    // checkpoints hold but the repository's index does not (a file copied into a worktree).
    std::fs::create_dir_all(repo.join("node_modules")).unwrap();
    std::fs::write(repo.join("node_modules/dep.js"), "dep").unwrap();
    git(&repo, &["add", "-f", "node_modules/dep.js"]);
    std::fs::write(repo.join(".env"), "TOKEN=1").unwrap();
    let first = cp.snapshot("first").unwrap();
    let files = |from: &str, to: &str| -> Vec<(String, ChangeKind)> { cp.changes(from, to).unwrap().into_iter().map(|c| (c.path, c.kind)).collect() };
    let store = data.path().read_dir().unwrap().map(|d| d.unwrap().path()).find(|p| p.join("HEAD").exists()).unwrap();
    let shown = std::process::Command::new("git").arg("--git-dir").arg(&store).args(["show", &format!("{first}:c.txt")]).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&shown.stdout), "c, changed at once", "the first snapshot has the edit the borrowed index was told to ignore");

    assert!(cp.lend_index(&index).unwrap(), "a store with a snapshot and a lender gives its index up");
    assert!(!data.path().read_dir().unwrap().any(|d| d.unwrap().path().join("index").exists()), "and keeps no index meanwhile");
    // Sparse checkout in the worktree meanwhile: its entries are skipped by the worktree's git.
    git(&repo, &["update-index", "--no-assume-unchanged", "--skip-worktree", "a.txt"]);
    std::fs::write(repo.join("b.txt"), "b, changed").unwrap();
    std::fs::write(repo.join("a.txt"), "a, changed").unwrap();
    let second = cp.snapshot("second").unwrap();
    assert_eq!(
        files(&first, &second),
        vec![("a.txt".to_string(), ChangeKind::Modified), ("b.txt".to_string(), ChangeKind::Modified)],
        "the next snapshot sees exactly what changed, as if the index had stayed, whatever the worktree's index says not to look at"
    );

    // The lender gone (the worktree removed): rebuilt from the last snapshot, still exact.
    assert!(cp.lend_index(&index).unwrap());
    std::fs::remove_file(&index).unwrap();
    std::fs::write(repo.join("c.txt"), "c, changed again").unwrap();
    let third = cp.snapshot("third").unwrap();
    assert_eq!(files(&second, &third), vec![("c.txt".to_string(), ChangeKind::Modified)]);
}

#[test]
fn a_new_worktrees_first_checkpoint_is_its_commit_and_the_next_sees_every_edit_whatever_its_index_marks() {
    use finishline_engine::workspace::checkpoint::{ChangeKind, Checkpoints};
    let git = git_as_person;
    // Two people's repositories: one whose git marks every entry assume-unchanged, one that
    // keeps a split index (a copy of which the store cannot read).
    for setting in ["core.ignoreStat", "core.splitIndex"] {
        let repo = tempfile::tempdir().unwrap();
        let data = tempfile::tempdir().unwrap();
        let repo = repo.path().canonicalize().unwrap();
        git(&repo, &["init", "-q"]);
        git(&repo, &["config", setting, "true"]);
        for (p, text) in [("a.txt", "a"), ("b.txt", "b"), ("dir/c.txt", "c")] {
            std::fs::create_dir_all(repo.join(p).parent().unwrap()).unwrap();
            std::fs::write(repo.join(p), text).unwrap();
        }
        git(&repo, &["add", "-A"]);
        git(&repo, &["commit", "-q", "-m", "start"]);
        let head = git(&repo, &["rev-parse", "HEAD"]);
        let cp = Checkpoints::open_shared(data.path(), &repo, "s1").unwrap();
        let first = cp.start_at_commit(&repo.join(".git/objects"), &head, "run start").unwrap().expect("a new store starts");
        cp.adopt_index(Some(&repo.join(".git/index")), &first).unwrap();
        let store = data.path().read_dir().unwrap().map(|d| d.unwrap().path()).find(|p| p.join("HEAD").exists()).unwrap();
        let tree = |rev: &str, git_dir: &Path| {
            let out = std::process::Command::new("git").arg("--git-dir").arg(git_dir).args(["rev-parse", &format!("{rev}^{{tree}}")]).output().unwrap();
            String::from_utf8_lossy(&out.stdout).trim().to_string()
        };
        assert_eq!(tree(&first, &store), tree(&head, &repo.join(".git")), "{setting}: the first checkpoint holds exactly the commit's files");
        assert_eq!((cp.marked("base"), cp.marked("last")), (Some(first.clone()), Some(first.clone())), "{setting}: it is the run's base and its last");
        assert_eq!(cp.start_at_commit(&repo.join(".git/objects"), &head, "again").unwrap(), None, "{setting}: a store that has begun is left as it is");

        std::fs::write(repo.join("a.txt"), "a, changed").unwrap();
        std::fs::write(repo.join("dir/new.txt"), "new").unwrap();
        std::fs::remove_file(repo.join("b.txt")).unwrap();
        let second = cp.snapshot("after").unwrap();
        let files: Vec<(String, ChangeKind)> = cp.changes(&first, &second).unwrap().into_iter().map(|c| (c.path, c.kind)).collect();
        assert_eq!(
            files,
            vec![("a.txt".into(), ChangeKind::Modified), ("b.txt".into(), ChangeKind::Deleted), ("dir/new.txt".into(), ChangeKind::Created)],
            "{setting}: the next snapshot sees exactly what changed"
        );
    }
}

#[test]
fn a_worktree_whose_index_the_store_cannot_read_still_starts_from_all_its_files() {
    use finishline_engine::workspace::checkpoint::Checkpoints;
    let git = git_as_person;
    let repo = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let repo = repo.path().canonicalize().unwrap();
    git(&repo, &["init", "-q"]);
    // A split index: a copy of it names a shared index the store does not have.
    git(&repo, &["config", "core.splitIndex", "true"]);
    std::fs::write(repo.join("a.txt"), "a").unwrap();
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "start"]);
    // A file copied into the worktree (a local `.env`).
    std::fs::write(repo.join(".env"), "TOKEN=1").unwrap();
    let cp = Checkpoints::open_shared(data.path(), &repo, "s1").unwrap();
    cp.borrow_objects(&repo.join(".git/objects"), &repo.join(".git/index")).unwrap();
    let first = cp.snapshot_known("run start", &[".env"]).unwrap();
    std::fs::write(repo.join("b.txt"), "b").unwrap();
    let second = cp.snapshot("after").unwrap();
    let files: Vec<String> = cp.changes(&first, &second).unwrap().into_iter().map(|c| c.path).collect();
    assert_eq!(files, vec!["b.txt".to_string()], "the task made only b.txt; the checkout's own files are not its changes");
}

#[test]
fn a_sparse_worktree_shows_only_what_the_task_changed_and_a_file_it_adds_outside_the_sparse_set() {
    use finishline_engine::workspace::checkpoint::{ChangeKind, Checkpoints};
    let git = git_as_person;
    let top = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let (repo, wt) = (top.path().join("repo"), top.path().join("wt"));
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    for (p, text) in [("app/main.rs", "fn main() {}\n"), ("docs/guide.md", "guide\n"), ("docs/faq.md", "faq\n")] {
        std::fs::create_dir_all(repo.join(p).parent().unwrap()).unwrap();
        std::fs::write(repo.join(p), text).unwrap();
    }
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "start"]);
    // The person works in a sparse checkout of `app/`; a new worktree inherits it, as a task's does.
    git(&repo, &["sparse-checkout", "set", "app"]);
    git(&repo, &["worktree", "add", "-q", "--no-checkout", "-b", "task", wt.to_str().unwrap(), "HEAD"]);
    git(&wt, &["reset", "-q", "--hard"]);
    assert!(!wt.join("docs/guide.md").exists(), "outside the sparse set nothing is on disk");
    let head = git(&wt, &["rev-parse", "HEAD"]);
    let index = PathBuf::from(git(&wt, &["rev-parse", "--path-format=absolute", "--git-path", "index"]));
    let objects = PathBuf::from(git(&wt, &["rev-parse", "--path-format=absolute", "--git-common-dir"])).join("objects");
    let cp = Checkpoints::open_shared(data.path(), &wt, "s1").unwrap();
    let first = cp.start_at_commit(&objects, &head, "run start").unwrap().unwrap();
    cp.adopt_index(Some(&index), &first).unwrap();
    let files = |from: &str, to: &str| -> Vec<(String, ChangeKind)> { cp.changes(from, to).unwrap().into_iter().map(|c| (c.path, c.kind)).collect() };

    std::fs::write(wt.join("app/main.rs"), "fn main() { run() }\n").unwrap();
    let second = cp.snapshot("after").unwrap();
    assert_eq!(files(&first, &second), vec![("app/main.rs".into(), ChangeKind::Modified)], "files outside the sparse set are not the task's deletions");

    std::fs::create_dir_all(wt.join("docs")).unwrap();
    std::fs::write(wt.join("docs/guide.md"), "a new guide\n").unwrap();
    let third = cp.snapshot("later").unwrap();
    assert_eq!(files(&second, &third), vec![("docs/guide.md".into(), ChangeKind::Modified)], "a file the task writes outside the sparse set is seen");
}

#[test]
fn a_new_worktrees_first_checkpoint_is_made_while_git_fills_it_and_files_copied_in_are_not_the_tasks() {
    use finishline_engine::workspace::checkpoint::{ChangeKind, Checkpoints};
    let git = git_as_person;
    let top = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let (repo, wt) = (top.path().join("repo"), top.path().join("wt"));
    std::fs::create_dir_all(repo.join("src")).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("src/lib.rs"), "pub fn a() {}\n").unwrap();
    std::fs::write(repo.join("README.md"), "readme\n").unwrap();
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "start"]);
    git(&repo, &["worktree", "add", "-q", "--no-checkout", "-b", "task", wt.to_str().unwrap(), "HEAD"]);
    let head = git(&wt, &["rev-parse", "HEAD"]);
    let index = PathBuf::from(git(&wt, &["rev-parse", "--path-format=absolute", "--git-path", "index"]));
    let objects = PathBuf::from(git(&wt, &["rev-parse", "--path-format=absolute", "--git-common-dir"])).join("objects");
    let cp = Checkpoints::open_shared(data.path(), &wt, "s1").unwrap();

    // Before git has written a file of the worktree.
    assert!(!wt.join("README.md").exists());
    let first = cp.start_at_commit(&objects, &head, "run start").unwrap().expect("a new store starts");
    git(&wt, &["reset", "-q", "--hard"]);
    std::fs::write(wt.join(".env"), "TOKEN=1\n").unwrap();
    cp.adopt_index(Some(&index), &first).unwrap();
    // The run's start then records the file copied in, after which the task's changes begin.
    let start = cp.snapshot_known("run start", &[".env"]).unwrap();
    cp.mark("base", &start).unwrap();
    let files = |from: &str, to: &str| -> Vec<(String, ChangeKind)> { cp.changes(from, to).unwrap().into_iter().map(|c| (c.path, c.kind)).collect() };
    assert_eq!(files(&first, &start), vec![(".env".into(), ChangeKind::Created)], "the store holds the checkout, then what was copied in");

    std::fs::write(wt.join("src/lib.rs"), "pub fn a() { b() }\n").unwrap();
    let after = cp.snapshot("after").unwrap();
    assert_eq!(files(&cp.marked("base").unwrap(), &after), vec![("src/lib.rs".into(), ChangeKind::Modified)], "only the task's edit is its change");
}

/// A file whose name is not UTF-8 text cannot be named back to git from here, so a step could
/// not record its change: it is listed as not covered by revert, which the review shows, rather
/// than silently missing from the review and the revert.
#[test]
fn a_file_whose_name_is_not_text_is_listed_as_not_covered() {
    use finishline_engine::workspace::checkpoint::Checkpoints;
    use std::os::unix::ffi::OsStrExt;
    let ws = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let ws = ws.path().canonicalize().unwrap();
    let odd = ws.join(std::ffi::OsStr::from_bytes(b"caf\xe9.txt"));
    std::fs::write(&odd, "orig").unwrap();
    std::fs::write(ws.join("plain.txt"), "orig").unwrap();
    let cp = Checkpoints::open_shared(data.path(), &ws, "s1").unwrap();
    let first = cp.snapshot("first").unwrap();
    std::fs::write(&odd, "changed by the agent").unwrap();
    std::fs::write(ws.join("plain.txt"), "changed").unwrap();
    let second = cp.snapshot("second").unwrap();
    let changed: Vec<String> = cp.changes(&first, &second).unwrap().into_iter().map(|c| c.path).collect();
    assert_eq!(changed, vec!["plain.txt"]);
    assert_eq!(cp.not_covered(), vec!["caf\u{FFFD}.txt".to_string()], "the review says which file revert cannot restore");
}
