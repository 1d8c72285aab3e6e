//! The scripted ACP agent (tests/agents/scripted-acp.mjs): the faults and logins a real agent
//! cannot be made to show on demand.

#![allow(dead_code)]

use std::path::Path;

use finishline_engine::external::ExternalAgent;
use serde_json::Value;

pub struct Scripted {
    pub agent: ExternalAgent,
    pub logs: tempfile::TempDir,
}

impl Scripted {
    pub fn new(script: Value) -> Scripted {
        let logs = tempfile::tempdir().unwrap();
        let file = logs.path().join("script.json");
        std::fs::write(&file, script.to_string()).unwrap();
        let js = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/agents/scripted-acp.mjs");
        let mut env = std::collections::BTreeMap::new();
        env.insert("SCRIPTED_ACP_LOGS".to_string(), logs.path().to_string_lossy().into_owned());
        let agent = ExternalAgent {
            name: "scripted".into(),
            command: "node".into(),
            args: vec![js.to_string_lossy().into_owned(), file.to_string_lossy().into_owned()],
            env,
        };
        Scripted { agent, logs }
    }

    pub fn log(&self, name: &str) -> String {
        std::fs::read_to_string(self.logs.path().join(name)).unwrap_or_default()
    }
}
