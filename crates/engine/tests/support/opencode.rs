//! The real OpenCode (npm `opencode-ai`, pinned in tests/agents) as an ACP agent, offline: its
//! workspace's opencode.json points it at the fake provider, and it runs with a scratch HOME so
//! it reads no person's configuration.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use fake_llm::Protocol;
use finishline_engine::external::ExternalAgent;

use super::harness::Harness;

/// `tests/agents/node_modules/.bin/opencode`, installed by scripts/setup.
pub fn opencode_bin() -> PathBuf {
    let bin = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/agents/node_modules/.bin/opencode");
    assert!(bin.exists(), "OpenCode is not installed at {}: run `bash scripts/setup` (it installs tests/agents from npm)", bin.display());
    bin
}

/// Points the workspace's OpenCode at the harness's fake provider.
pub fn write_config(h: &Harness) {
    write_config_with(h, serde_json::json!({}));
}

/// The same, with more of OpenCode's settings (`permission`, ...).
pub fn write_config_with(h: &Harness, extra: serde_json::Value) {
    let mut config = serde_json::json!({
        "$schema": "https://opencode.ai/config.json",
        "provider": {
            "fake": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Fake",
                "options": { "baseURL": h.server.base_url(Protocol::Openai), "apiKey": "x" },
                "models": { "fake-model": { "name": "Fake model" } }
            }
        },
        "model": "fake/fake-model",
        "small_model": "fake/fake-model",
        "autoupdate": false,
        "share": "disabled"
    });
    if let (Some(c), Some(e)) = (config.as_object_mut(), extra.as_object()) {
        c.extend(e.clone());
    }
    h.write("opencode.json", &serde_json::to_string_pretty(&config).unwrap());
}

/// The agent as the engine starts it.
pub fn opencode(home: &Path) -> ExternalAgent {
    let mut env = BTreeMap::new();
    for (k, v) in [
        ("HOME", home.to_path_buf()),
        ("XDG_CONFIG_HOME", home.join(".config")),
        ("XDG_DATA_HOME", home.join(".local/share")),
        ("XDG_CACHE_HOME", home.join(".cache")),
        ("XDG_STATE_HOME", home.join(".local/state")),
    ] {
        env.insert(k.to_string(), v.to_string_lossy().into_owned());
    }
    ExternalAgent { name: "opencode".into(), command: opencode_bin().to_string_lossy().into_owned(), args: vec!["acp".into()], env }
}
