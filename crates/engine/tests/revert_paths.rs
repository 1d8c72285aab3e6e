//! A revert puts back only the files it names, and only inside the workspace: a folder that
//! became a link (to anywhere) since is never written or deleted through, and a name with
//! pattern characters is no pattern.

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
