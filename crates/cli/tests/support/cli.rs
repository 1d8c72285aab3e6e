//! The `finishline` binary as the tests run it: a private data folder, no key, no terminal; its
//! JSON lines parsed; a fresh workspace.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_finishline")
}

pub fn finishline(args: &[&str], data: &Path) -> Output {
    Command::new(bin())
        .args(args)
        .arg("--data-dir")
        .arg(data)
        .env_remove("OPENAI_API_KEY")
        .env("XDG_DATA_HOME", data.join("xdg"))
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

pub fn lines(o: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

pub struct Env {
    pub _dir: tempfile::TempDir,
    pub data: PathBuf,
    pub ws: PathBuf,
}

pub fn env() -> Env {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    Env { _dir: dir, data, ws }
}
