//! A revert puts back only the files it names, and only inside the workspace: a folder that
//! became a link (to anywhere) since is never written or deleted through, and a name with
//! pattern characters is no pattern.

use std::os::unix::fs::FileTypeExt;

use finishline_engine::workspace::checkpoint::Checkpoints;
use finishline_engine::workspace::ownership::FileState;

#[test]
fn a_file_is_never_restored_or_deleted_through_a_folder_that_became_a_link() {
    let dir = tempfile::tempdir().unwrap();
    let (work, outside) = (dir.path().join("work"), dir.path().join("outside"));
    std::fs::create_dir_all(work.join("d")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(work.join("d/x"), "the workspace's x\n").unwrap();
    std::fs::write(outside.join("y"), "a file elsewhere\n").unwrap();
    let cp = Checkpoints::open(&dir.path().join("store"), &work).unwrap();
    cp.snapshot("start").unwrap();
    let x = cp.file_states(&["d/x"]).unwrap().remove(0);
    assert!(matches!(x, FileState::Blob { .. }));
    // d is now a link leading out of the workspace.
    std::fs::remove_dir_all(work.join("d")).unwrap();
    std::os::unix::fs::symlink(&outside, work.join("d")).unwrap();
    assert!(cp.restore_file("d/x", &x).is_err(), "refused");
    assert!(!outside.join("x").exists(), "nothing written where the link leads");
    assert!(cp.restore_file("d/y", &FileState::Absent).is_err(), "refused");
    assert_eq!(std::fs::read_to_string(outside.join("y")).unwrap(), "a file elsewhere\n", "nothing deleted there");
}

#[test]
fn a_revert_of_a_name_with_pattern_characters_puts_back_that_file_only() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(work.join("file[1].txt"), "before\n").unwrap();
    std::fs::write(work.join("file1.txt"), "the person's before\n").unwrap();
    let cp = Checkpoints::open(&dir.path().join("store"), &work).unwrap();
    let base = cp.snapshot("start").unwrap();
    std::fs::write(work.join("file[1].txt"), "the agent's\n").unwrap();
    let agent_last = cp.snapshot("agent").unwrap();
    // The person's own edit, of a file the agent never touched.
    std::fs::write(work.join("file1.txt"), "the person's edit\n").unwrap();
    let report = cp.revert(&base, &agent_last, false).unwrap();
    assert_eq!(report.restored, vec!["file[1].txt".to_string()]);
    assert_eq!(std::fs::read_to_string(work.join("file[1].txt")).unwrap(), "before\n");
    assert_eq!(std::fs::read_to_string(work.join("file1.txt")).unwrap(), "the person's edit\n", "a file the pattern would match is untouched");
}

/// A name that starts with a double quote is a name, not git's quoting of another: the state of
/// `"q.txt"` is read from that file, so the person's edit of it after the agent counts as
/// theirs and a revert keeps it (it was read as `q.txt`, and deleted).
#[test]
fn a_name_that_starts_with_a_quote_is_read_as_itself_and_an_edit_of_it_is_kept() {
    use finishline_engine::workspace::ownership::{revert_step, OwnedChange, RevertStep};
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let cp = Checkpoints::open(&dir.path().join("store"), &work).unwrap();
    cp.snapshot("start").unwrap();
    let names = ["q.txt", "\"q.txt\"", "tab\there", "line\nbreak", "back\\slash"];
    let before = cp.file_states(&names).unwrap();
    for n in names {
        std::fs::write(work.join(n), "Q\n").unwrap();
    }
    cp.snapshot("agent").unwrap();
    let after = cp.file_states(&names).unwrap();
    // The person's edit of every name but q.txt.
    for n in &names[1..] {
        std::fs::write(work.join(n), "my edit\n").unwrap();
    }
    let now = cp.file_states(&names).unwrap();
    for (i, n) in names.iter().enumerate() {
        let change = OwnedChange { path: n.to_string(), before: before[i].clone(), after: after[i].clone(), unattributed: false, edited_between: false };
        let expected = if i == 0 { RevertStep::Restore } else { RevertStep::ChangedSince };
        assert_eq!(revert_step(&change, &now[i]), expected, "{n:?}");
    }
}

/// Putting a file back writes it beside itself first, under a name no file of the person's has:
/// a file the person named `.a.txt.finishline-restore` (the temporary name once used) is neither
/// replaced nor deleted, whether the file put back is text or a link.
#[test]
fn putting_a_file_back_keeps_a_file_of_the_persons_named_as_its_temporary() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(work.join("a.txt"), "before\n").unwrap();
    std::os::unix::fs::symlink("a.txt", work.join("l")).unwrap();
    let cp = Checkpoints::open(&dir.path().join("store"), &work).unwrap();
    cp.snapshot("start").unwrap();
    let before = cp.file_states(&["a.txt", "l"]).unwrap();
    std::fs::write(work.join("a.txt"), "the agent's\n").unwrap();
    std::fs::remove_file(work.join("l")).unwrap();
    std::fs::write(work.join("l"), "the agent's\n").unwrap();
    for name in [".a.txt.finishline-restore", ".l.finishline-restore"] {
        std::fs::write(work.join(name), "the person's own\n").unwrap();
    }
    cp.restore_file("a.txt", &before[0]).unwrap();
    cp.restore_file("l", &before[1]).unwrap();
    assert_eq!(std::fs::read_to_string(work.join("a.txt")).unwrap(), "before\n");
    assert_eq!(std::fs::read_link(work.join("l")).unwrap(), std::path::Path::new("a.txt"));
    for name in [".a.txt.finishline-restore", ".l.finishline-restore"] {
        assert_eq!(std::fs::read_to_string(work.join(name)).unwrap(), "the person's own\n", "{name} kept");
    }
    let mut left: Vec<_> = std::fs::read_dir(&work).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    left.sort();
    assert_eq!(left, [".a.txt.finishline-restore", ".l.finishline-restore", "a.txt", "l"], "no temporary file left");
}

/// A name as long as the disk allows is put back too: its temporary name still fits.
#[test]
fn a_file_with_a_name_of_the_longest_length_is_put_back() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let long = format!("{}.txt", "é".repeat(125));
    assert_eq!(long.len(), 254);
    std::fs::write(work.join(&long), "before\n").unwrap();
    let cp = Checkpoints::open(&dir.path().join("store"), &work).unwrap();
    cp.snapshot("start").unwrap();
    let before = cp.file_states(&[long.as_str()]).unwrap().remove(0);
    std::fs::write(work.join(&long), "the agent's\n").unwrap();
    cp.restore_file(&long, &before).unwrap();
    assert_eq!(std::fs::read_to_string(work.join(&long)).unwrap(), "before\n");
}

/// A file another task showed for review is kept by a revert unless the person named it to be
/// overwritten, even when its content is what this task left: answering "no" to overwriting
/// (an empty list) keeps it.
#[test]
fn a_revert_keeps_a_file_another_task_showed_unless_the_person_named_it_and_then_keeps_a_copy_of_it() {
    use finishline_engine::agent::decision::revert_owned;
    use finishline_engine::workspace::ownership::OwnedChange;
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let cp = Checkpoints::open(&dir.path().join("store"), &work).unwrap();
    cp.snapshot("start").unwrap();
    std::fs::write(work.join("notes.txt"), "hello\n").unwrap();
    let after = cp.file_states(&["notes.txt"]).unwrap().remove(0);
    let owned = vec![OwnedChange { path: "notes.txt".into(), before: FileState::Absent, after, unattributed: false, edited_between: false }];
    let others = vec!["notes.txt".to_string()];
    let copies = dir.path().join("copies");
    let report = revert_owned(&cp, &owned, &[], &others, &copies).unwrap();
    assert_eq!(report.conflicts, vec!["notes.txt".to_string()], "kept and named");
    assert_eq!(std::fs::read_to_string(work.join("notes.txt")).unwrap(), "hello\n");
    assert!(report.copies.is_empty() && !copies.exists(), "nothing overwritten, nothing copied");

    // Where no copy can be made, nothing of theirs is overwritten, though they named it.
    let blocked = dir.path().join("a file, not a folder");
    std::fs::write(&blocked, "").unwrap();
    let report = revert_owned(&cp, &owned, &["notes.txt".to_string()], &others, &blocked).unwrap();
    assert_eq!(report.conflicts, vec!["notes.txt".to_string()], "kept and named: {report:?}");
    // Told to overwrite it and not done, the revert says why: the copy could not be made.
    assert_eq!(report.not_copied.iter().map(|n| n.path.as_str()).collect::<Vec<_>>(), vec!["notes.txt"], "{report:?}");
    assert!(!report.not_copied[0].reason.is_empty(), "{report:?}");
    assert_eq!(std::fs::read_to_string(work.join("notes.txt")).unwrap(), "hello\n");

    let report = revert_owned(&cp, &owned, &["notes.txt".to_string()], &others, &copies).unwrap();
    assert_eq!(report.deleted, vec!["notes.txt".to_string()], "named by the person, it goes");
    assert!(!work.join("notes.txt").exists());
    let copy = copies.join("notes.txt");
    assert_eq!(report.copies.iter().map(|c| (c.path.as_str(), c.copy.clone())).collect::<Vec<_>>(), vec![("notes.txt", copy.display().to_string())]);
    assert_eq!(std::fs::read_to_string(&copy).unwrap(), "hello\n", "the version it overwrote is kept");

    // A link the person put there is copied as a link; a folder cannot be copied, so it stays.
    std::os::unix::fs::symlink("elsewhere.txt", work.join("notes.txt")).unwrap();
    let report = revert_owned(&cp, &owned, &["notes.txt".to_string()], &others, &copies).unwrap();
    assert_eq!(std::fs::read_link(&report.copies[0].copy).unwrap(), std::path::PathBuf::from("elsewhere.txt"), "{report:?}");
    std::fs::create_dir_all(work.join("notes.txt")).unwrap();
    std::fs::write(work.join("notes.txt/inside.txt"), "the person's\n").unwrap();
    let report = revert_owned(&cp, &owned, &["notes.txt".to_string()], &others, &copies).unwrap();
    assert_eq!(report.conflicts, vec!["notes.txt".to_string()], "no copy, no overwrite: {report:?}");
    assert!(report.not_copied[0].reason.contains("folder"), "and says why: {report:?}");
    assert_eq!(std::fs::read_to_string(work.join("notes.txt/inside.txt")).unwrap(), "the person's\n");
    std::fs::remove_dir_all(work.join("notes.txt")).unwrap();
    std::fs::remove_dir_all(&copies).unwrap();

    // A second overwrite of the same file keeps the first copy too.
    std::fs::write(work.join("notes.txt"), "hello\n").unwrap();
    revert_owned(&cp, &owned, &["notes.txt".to_string()], &others, &copies).unwrap();
    std::fs::write(work.join("notes.txt"), "hello again\n").unwrap();
    let report = revert_owned(&cp, &owned, &["notes.txt".to_string()], &others, &copies).unwrap();
    assert_eq!(report.copies[0].copy, copies.join("notes.txt.2").display().to_string());
    assert_eq!(std::fs::read_to_string(&copy).unwrap(), "hello\n");
    assert_eq!(std::fs::read_to_string(copies.join("notes.txt.2")).unwrap(), "hello again\n");
}

/// A revert reads each file through one running git just before it touches it: what it reads
/// is the file as it is at that moment, whatever its name, and a file gone meanwhile is read as
/// gone, the next read working as before.
#[test]
fn a_file_read_just_before_it_is_touched_is_read_as_it_is_then_even_after_one_vanished() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let names = ["a.txt", "\"q.txt\"", "tab\there", "line\nbreak", "Übersicht.md"];
    for n in names {
        std::fs::write(work.join(n), format!("{n}\n")).unwrap();
    }
    let cp = Checkpoints::open(&dir.path().join("store"), &work).unwrap();
    cp.snapshot("start").unwrap();
    // git's own id of each file, asked by its path as an argument (no quoting on the way).
    let id = |n: &str| {
        let out = std::process::Command::new("git").arg("hash-object").arg(work.join(n)).output().unwrap();
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    };
    let mut reader = cp.reader();
    for n in names {
        assert_eq!(reader.state(n).unwrap(), FileState::Blob { oid: id(n), mode: "100644".into() }, "{n:?} as git reads it");
    }
    let first = reader.state("a.txt").unwrap();
    std::fs::write(work.join("a.txt"), "b\n").unwrap();
    let now = reader.state("a.txt").unwrap();
    assert_ne!(now, first, "an edit since the last read is seen");
    assert_eq!(now, FileState::Blob { oid: id("a.txt"), mode: "100644".into() });
    std::fs::remove_file(work.join("a.txt")).unwrap();
    assert_eq!(reader.state("a.txt").unwrap(), FileState::Absent);
    assert_eq!(reader.state("Übersicht.md").unwrap(), FileState::Blob { oid: id("Übersicht.md"), mode: "100644".into() }, "and it goes on");
}

/// A named pipe where a file was is the file gone, to a store of one session (as sessions made
/// before shared stores have) as to a shared one: the snapshot is taken (git cannot add a pipe,
/// and a whole `add` stopped at it). Whose the pipe is, the snapshots cannot say (the run's, or
/// the person's made since), so a revert asks before it puts the file back in the pipe's place.
#[test]
fn a_named_pipe_where_a_file_was_is_recorded_as_the_file_gone_and_reverted_once_the_person_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(work.join("notes.txt"), "the person's notes\n").unwrap();
    for store in [Checkpoints::open(&dir.path().join("own"), &work).unwrap(), Checkpoints::open_shared(&dir.path().join("shared"), &work, "s1").unwrap()] {
        let base = store.snapshot("start").unwrap();
        std::fs::remove_file(work.join("notes.txt")).unwrap();
        assert!(std::process::Command::new("mkfifo").arg(work.join("notes.txt")).status().unwrap().success());
        let after = store.snapshot("agent").expect("the snapshot is taken");
        assert_eq!(store.file_states(&["notes.txt"]).unwrap(), vec![FileState::Absent], "no file is there");
        let report = store.revert(&base, &after, false).unwrap();
        assert_eq!((report.applied, report.conflicts), (false, vec!["notes.txt".to_string()]), "asked about, not replaced");
        assert!(std::fs::symlink_metadata(work.join("notes.txt")).unwrap().file_type().is_fifo(), "the pipe is left");
        let report = store.revert(&base, &after, true).unwrap();
        assert_eq!(report.restored, vec!["notes.txt".to_string()]);
        assert!(std::fs::symlink_metadata(work.join("notes.txt")).unwrap().is_file(), "a file again");
        assert_eq!(std::fs::read_to_string(work.join("notes.txt")).unwrap(), "the person's notes\n");
    }
}

/// A named pipe or a socket made where the run deleted a file, after the run (a dev server's, a
/// secrets manager's `.env`), holds no file, as the run left none: it still is not the run's, so
/// a revert asks before it puts the file back in its place.
#[test]
fn a_pipe_or_socket_made_after_the_run_where_it_deleted_a_file_is_asked_about_before_a_revert_replaces_it() {
    use finishline_engine::agent::decision::revert_owned;
    use finishline_engine::workspace::ownership::OwnedChange;
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(work.join(".env"), "KEY=1\n").unwrap();
    std::fs::write(work.join("app.sock"), "old\n").unwrap();
    let cp = Checkpoints::open(&dir.path().join("store"), &work).unwrap();
    cp.snapshot("start").unwrap();
    let before = cp.file_states(&[".env", "app.sock"]).unwrap();
    // The run deleted both; after it, the person made a pipe and a server its socket there.
    std::fs::remove_file(work.join(".env")).unwrap();
    std::fs::remove_file(work.join("app.sock")).unwrap();
    let owned: Vec<OwnedChange> = [".env", "app.sock"]
        .iter()
        .zip(before)
        .map(|(p, before)| OwnedChange { path: p.to_string(), before, after: FileState::Absent, unattributed: false, edited_between: false })
        .collect();
    assert!(std::process::Command::new("mkfifo").arg(work.join(".env")).status().unwrap().success());
    let _server = std::os::unix::net::UnixListener::bind(work.join("app.sock")).unwrap();
    let copies = dir.path().join("copies");
    let report = revert_owned(&cp, &owned, &[], &[], &copies).unwrap();
    assert_eq!(report.conflicts, vec![".env".to_string(), "app.sock".to_string()], "asked about: {report:?}");
    assert!(std::fs::symlink_metadata(work.join(".env")).unwrap().file_type().is_fifo(), "the pipe is left");
    assert!(std::fs::symlink_metadata(work.join("app.sock")).unwrap().file_type().is_socket(), "the socket is left");
    let report = revert_owned(&cp, &owned, &[".env".to_string()], &[], &copies).unwrap();
    assert_eq!((report.restored, report.conflicts), (vec![".env".to_string()], vec!["app.sock".to_string()]), "named by the person, it is replaced");
    assert_eq!(std::fs::read_to_string(work.join(".env")).unwrap(), "KEY=1\n");
}

/// A file that goes away between the look and git's read of it (a build removing its output as
/// the person rejects) is gone, and the other files are still read: the look at all of them
/// failed with git's "could not open", and the reject with it.
#[test]
fn a_file_gone_between_the_look_and_the_read_counts_as_gone_and_the_rest_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    for name in ["a.txt", "b.txt", "c.txt"] {
        std::fs::write(work.join(name), format!("{name}\n")).unwrap();
    }
    let store = dir.path().join("store");
    let cp = Checkpoints::open(&store, &work).unwrap();
    cp.snapshot("start").unwrap();
    let before = cp.file_states(&["a.txt", "c.txt"]).unwrap();
    // Reading a.txt removes b.txt, after the look and before git reaches it: git's clean filter
    // runs as git reads a file, so the timing is exact.
    std::fs::write(work.join(".gitattributes"), "a.txt filter=sweep\n").unwrap();
    let mut config = std::fs::OpenOptions::new().append(true).open(store.join("config")).unwrap();
    std::io::Write::write_all(&mut config, b"[filter \"sweep\"]\n\tclean = \"rm -f b.txt; cat\"\n").unwrap();
    let now = cp.file_states(&["a.txt", "b.txt", "c.txt"]).expect("read although b.txt went");
    assert!(!work.join("b.txt").exists(), "the filter ran");
    assert_eq!(now, vec![before[0].clone(), FileState::Absent, before[1].clone()]);
}

/// Finishline's data folder inside the workspace is no task's change, even in a store made
/// before it was left out, which recorded it: its snapshots' copies are never named as a change
/// (so never undone over the live history), and what the task wrote still is.
#[test]
fn the_data_folder_inside_the_workspace_is_never_a_change_even_in_a_store_that_recorded_it() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("home");
    let data = work.join(".local/share/app");
    let stores = data.join("checkpoints");
    std::fs::create_dir_all(&stores).unwrap();
    std::fs::write(data.join("history.db"), "history, first\n").unwrap();
    let cp = Checkpoints::open_shared(&stores, &work, "s1").unwrap();
    // A store made before: its excludes without the data folder, which it then recorded.
    let git_dir = std::fs::read_dir(&stores).unwrap().next().unwrap().unwrap().path();
    let exclude = git_dir.join("info/exclude");
    let kept: String = std::fs::read_to_string(&exclude).unwrap().lines().filter(|l| !l.contains(".local")).map(|l| format!("{l}\n")).collect();
    std::fs::write(&exclude, kept).unwrap();
    let old = cp.snapshot("before the fix").unwrap();
    assert!(cp.changes(&old, &old).unwrap().is_empty());
    drop(cp);
    let cp = Checkpoints::open_shared(&stores, &work, "s2").unwrap();
    let start = cp.snapshot("start").unwrap();
    std::fs::write(data.join("history.db"), "history, later\n").unwrap();
    std::fs::write(work.join("notes.md"), "the task's\n").unwrap();
    let end = cp.snapshot("end").unwrap();
    for (from, to) in [(&old, &end), (&start, &end), (&old, &start)] {
        let paths: Vec<String> = cp.changes(from, to).unwrap().into_iter().map(|c| c.path).collect();
        assert!(paths.iter().all(|p| !p.starts_with(".local")), "{paths:?}");
        let window: Vec<String> = cp.window_changes(from, to).unwrap().into_iter().map(|c| c.path).collect();
        assert!(window.iter().all(|p| !p.starts_with(".local")), "{window:?}");
    }
    assert_eq!(cp.changes(&start, &end).unwrap().into_iter().map(|c| c.path).collect::<Vec<_>>(), vec!["notes.md".to_string()]);
    let report = cp.revert(&old, &end, true).unwrap();
    assert_eq!(std::fs::read_to_string(data.join("history.db")).unwrap(), "history, later\n", "the live history is never put back: {report:?}");
    assert!(!work.join("notes.md").exists(), "the task's file is undone");
}

/// A file is put back as git would check it out, through what the folder's `.gitattributes`
/// ask (line endings, an encoding, a filter such as Git LFS's): a revert wrote back the bytes as
/// git commits them (LF for a CRLF file, UTF-8 for a UTF-16 one, an LFS pointer for an image).
#[test]
fn a_revert_puts_back_a_file_as_git_checks_it_out_whatever_the_folders_gitattributes_ask() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(work.join(".gitattributes"), "*.txt text eol=crlf\n*.u16 text working-tree-encoding=UTF-16LE-BOM\n").unwrap();
    let windows = "one\r\ntwo\r\n";
    let utf16: Vec<u8> = [0xFF, 0xFE].into_iter().chain("héllo\n".encode_utf16().flat_map(u16::to_le_bytes)).collect();
    std::fs::write(work.join("win.txt"), windows).unwrap();
    std::fs::write(work.join("names.u16"), &utf16).unwrap();
    let cp = Checkpoints::open(&dir.path().join("store"), &work).unwrap();
    cp.snapshot("start").unwrap();
    let before = cp.file_states(&["win.txt", "names.u16"]).unwrap();
    std::fs::write(work.join("win.txt"), "the agent's\r\n").unwrap();
    std::fs::remove_file(work.join("names.u16")).unwrap();
    cp.snapshot("agent").unwrap();
    cp.restore_file("win.txt", &before[0]).unwrap();
    cp.restore_file("names.u16", &before[1]).unwrap();
    assert_eq!(std::fs::read(work.join("win.txt")).unwrap(), windows.as_bytes(), "the line endings as they were");
    assert_eq!(std::fs::read(work.join("names.u16")).unwrap(), utf16, "in its own encoding, not git's UTF-8");
}

/// A file whose checkout filter fails now (the folder's `.gitattributes` changed since, an LFS
/// object not fetched) is put back as stored: a revert that stopped at it would stop at it again
/// at every start.
#[test]
fn a_file_whose_checkout_filter_fails_is_put_back_as_stored() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(work.join("notes.txt"), "my notes\n").unwrap();
    let cp = Checkpoints::open(&dir.path().join("store"), &work).unwrap();
    cp.snapshot("start").unwrap();
    let before = cp.file_states(&["notes.txt"]).unwrap().remove(0);
    std::fs::write(work.join("notes.txt"), "the agent's\n").unwrap();
    cp.snapshot("agent").unwrap();
    // A required filter whose program fails, as the person's global config may name one.
    let global = dir.path().join("gitconfig");
    std::fs::write(&global, "[filter \"broken\"]\n\tsmudge = false\n\trequired = true\n").unwrap();
    std::env::set_var("GIT_CONFIG_GLOBAL", &global);
    std::fs::write(work.join(".gitattributes"), "notes.txt filter=broken\n").unwrap();
    let restored = cp.restore_file("notes.txt", &before);
    std::env::remove_var("GIT_CONFIG_GLOBAL");
    restored.expect("put back");
    assert_eq!(std::fs::read_to_string(work.join("notes.txt")).unwrap(), "my notes\n");
}

/// A file that cannot be put back is named in the error: "Permission denied" alone, or "Is a
/// directory", left the person to guess which of a revert's files stopped it.
#[test]
fn a_file_that_cannot_be_put_back_is_named_in_the_error() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(work.join("a.txt"), "before\n").unwrap();
    let cp = Checkpoints::open(&dir.path().join("store"), &work).unwrap();
    cp.snapshot("start").unwrap();
    let before = cp.file_states(&["a.txt"]).unwrap();
    // Where the file was, a folder with something in it now: no rename goes over it.
    std::fs::remove_file(work.join("a.txt")).unwrap();
    std::fs::create_dir_all(work.join("a.txt/inside")).unwrap();
    let why = cp.restore_file("a.txt", &before[0]).unwrap_err().to_string();
    assert!(why.starts_with("a.txt could not be put back: "), "{why}");
    assert!(work.join("a.txt/inside").is_dir(), "the folder stays");
}

/// Takes the immutable flag off again however the test ends, so its folder can go.
struct Immutable(std::path::PathBuf);

impl Drop for Immutable {
    fn drop(&mut self) {
        let _ = std::process::Command::new("chattr").arg("-i").arg(&self.0).status();
    }
}

/// A revert that stops at a file it cannot put back says what it did and what it had not
/// reached: "sub/b.txt could not be put back: Operation not permitted" alone left the person to
/// guess that a.txt was gone and z.txt was still the task's, and that a start finishes it.
#[test]
fn a_revert_stopped_by_one_file_says_what_is_back_what_is_not_and_what_finishes_it() {
    use finishline_engine::agent::decision::revert_owned;
    use finishline_engine::workspace::ownership::OwnedChange;
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir_all(work.join("sub")).unwrap();
    let cp = Checkpoints::open(&dir.path().join("store"), &work).unwrap();
    cp.snapshot("start").unwrap();
    let names = ["a.txt", "sub/b.txt", "z.txt"];
    for n in names {
        std::fs::write(work.join(n), "the task's\n").unwrap();
    }
    let after = cp.file_states(&names).unwrap();
    let owned: Vec<OwnedChange> = names
        .iter()
        .zip(after)
        .map(|(p, after)| OwnedChange { path: p.to_string(), before: FileState::Absent, after, unattributed: false, edited_between: false })
        .collect();
    let stuck = work.join("sub/b.txt");
    let flagged = std::process::Command::new("chattr").arg("+i").arg(&stuck).output().unwrap();
    assert!(flagged.status.success(), "this test needs chattr +i (root, ext4): {}", String::from_utf8_lossy(&flagged.stderr));
    let _unflag = Immutable(stuck.clone());
    let why = revert_owned(&cp, &owned, &[], &[], &dir.path().join("copies")).unwrap_err().to_string();
    assert!(why.starts_with("sub/b.txt could not be put back: "), "{why}");
    assert!(why.contains("put back so far: a.txt") && why.contains("not yet: sub/b.txt, z.txt"), "{why}");
    assert!(why.contains("the next start of Finishline"), "what finishes it: {why}");
    assert!(!work.join("a.txt").exists() && work.join("z.txt").exists());
}
