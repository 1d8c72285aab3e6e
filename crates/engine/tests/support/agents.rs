//! The real Claude Code, Gemini CLI and Codex ACP agents (npm, pinned in tests/agents) run
//! offline against the fake provider, each in its vendor's own protocol, as the machine notes
//! found them to: each with a HOME of its own, so it reads no person's login or settings.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use fake_llm::FakeServer;
use finishline_engine::external::ExternalAgent;
use serde_json::{json, Value};

/// `tests/agents/node_modules/.bin/<name>`, installed by scripts/setup.
pub fn agent_bin(name: &str) -> PathBuf {
    let bin = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/agents/node_modules/.bin").join(name);
    assert!(bin.exists(), "{name} is not installed at {}: run `bash scripts/setup` (it installs tests/agents from npm)", bin.display());
    bin
}

/// HOME and the XDG folders inside `home`.
fn home_env(home: &Path) -> BTreeMap<String, String> {
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
    env
}

/// Which agent, with its vendor's protocol.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Real {
    Claude,
    Gemini,
    Codex,
}

impl Real {
    pub fn protocol(self) -> fake_llm::Protocol {
        match self {
            Real::Claude => fake_llm::Protocol::Anthropic,
            Real::Gemini => fake_llm::Protocol::Gemini,
            Real::Codex => fake_llm::Protocol::Responses,
        }
    }

    /// The preset's name, so the engine gives it its preset's label and quirks.
    pub fn preset(self) -> &'static str {
        match self {
            Real::Claude => "claude-code",
            Real::Gemini => "gemini",
            Real::Codex => "codex",
        }
    }

    /// The agent as the engine starts it, asking `server` for its model. `key`: the value of its
    /// key variable, `None` for an agent with no key at all.
    pub fn agent(self, server: &FakeServer, home: &Path, key: Option<&str>) -> ExternalAgent {
        let mut env = home_env(home);
        let mut put = |k: &str, v: &str| {
            env.insert(k.to_string(), v.to_string());
        };
        let (command, args) = match self {
            Real::Claude => {
                put("ANTHROPIC_BASE_URL", &server.url());
                put("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1");
                // Claude Code refuses to skip its own permission prompts as root otherwise.
                put("IS_SANDBOX", "1");
                put("ANTHROPIC_API_KEY", key.unwrap_or(""));
                (agent_bin("claude-agent-acp"), vec![])
            }
            Real::Gemini => {
                // With a base URL and no key Gemini CLI takes the URL for a gateway; without
                // either it is a Gemini CLI nobody has logged in to.
                if key.is_some() {
                    put("GOOGLE_GEMINI_BASE_URL", &server.url());
                }
                put("GEMINI_API_KEY", key.unwrap_or(""));
                (agent_bin("gemini"), vec!["--acp".to_string()])
            }
            Real::Codex => {
                let codex_home = home.join("codex");
                std::fs::create_dir_all(&codex_home).unwrap();
                put("CODEX_HOME", &codex_home.to_string_lossy());
                if key.is_none() {
                    // A Codex nobody has logged in to: no provider of its own, no login.
                    return ExternalAgent {
                        name: self.preset().into(),
                        command: agent_bin("codex-acp").to_string_lossy().into_owned(),
                        args: vec![],
                        env: env.into_iter().filter(|(_, v)| !v.is_empty()).collect(),
                    };
                }
                let config = format!(
                    "model = \"m\"\nmodel_provider = \"local\"\napproval_policy = \"on-request\"\nsandbox_mode = \"danger-full-access\"\n\n[model_providers.local]\nname = \"local\"\nbase_url = \"{}\"\nwire_api = \"responses\"\nenv_key = \"FAKE_CODEX_KEY\"\n",
                    server.base_url(fake_llm::Protocol::Responses)
                );
                std::fs::write(codex_home.join("config.toml"), config).unwrap();
                put("FAKE_CODEX_KEY", key.unwrap_or(""));
                // Its default mode sandboxes commands with bubblewrap, which cannot run here
                // (every command fails with "bwrap: execvp codex-linux-sandbox").
                put("INITIAL_AGENT_MODE", "agent-full-access");
                (agent_bin("codex-acp"), vec![])
            }
        };
        // Empty means unset for these agents (a key variable set to "" is no key).
        env.retain(|_, v| !v.is_empty());
        ExternalAgent { name: self.preset().into(), command: command.to_string_lossy().into_owned(), args, env }
    }

    /// The agent's model writes `path` (relative to `ws`) with `content`, with its own write
    /// tool and that tool's own argument names.
    pub fn write(self, ws: &Path, path: &str, content: &str) -> Value {
        match self {
            Real::Claude => json!({"name": "Write", "arguments": {"file_path": ws.join(path).to_string_lossy(), "content": content}}),
            Real::Gemini => json!({"name": "write_file", "arguments": {"file_path": path, "content": content}}),
            Real::Codex => json!({"name": "exec_command", "arguments": {"cmd": format!("printf '%s' '{}' > {path}", content.replace('\'', "'\\''"))}}),
        }
    }

    /// What the agent's next model request says after its write tool worked.
    pub fn wrote(self) -> &'static str {
        match self {
            Real::Claude => "File created successfully",
            Real::Gemini => "Successfully created and wrote",
            Real::Codex => "Process exited with code 0",
        }
    }

    /// Rules for the model calls the agent makes besides its turns (titles, Gemini CLI's
    /// complexity classifier and its next-speaker check): harmless answers.
    pub fn side_calls(self) -> Vec<Value> {
        let p = self.protocol();
        match self {
            Real::Gemini => vec![
                json!({"when": {"protocol": p, "system_contains": "Task Routing"}, "reply": {"text": "{\"complexity_reasoning\": \"a small edit\", \"complexity_score\": 10}"}}),
                json!({"when": {"protocol": p, "kind": "evaluator"}, "reply": {"text": "{\"reasoning\": \"the model finished\", \"next_speaker\": \"user\"}"}}),
                json!({"when": {"protocol": p, "kind": "compaction"}, "reply": {"text": "Title"}}),
            ],
            _ => vec![
                json!({"when": {"protocol": p, "kind": "compaction"}, "reply": {"text": "Title"}}),
                json!({"when": {"protocol": p, "kind": "evaluator"}, "reply": {"text": "Title"}}),
            ],
        }
    }

    /// A rule for the agent's turns (its requests with tools).
    pub fn turn(self, when: Value, reply: Value) -> Value {
        let mut w = when;
        w["kind"] = json!("agent");
        w["protocol"] = json!(self.protocol());
        json!({"when": w, "reply": reply})
    }
}

/// Finishline's own evaluator (over the OpenAI protocol in the harness), so it never answers
/// the agents' own structured calls.
pub fn finishline_evaluator(reply: Value, times: Option<u32>) -> Value {
    let mut r = json!({"when": {"kind": "evaluator", "protocol": "openai"}, "reply": reply});
    if let Some(t) = times {
        r["times"] = json!(t);
    }
    r
}

/// Finishline's other calls (an announced action not taken): nothing to report.
pub fn finishline_side_calls() -> Value {
    json!({"when": {"protocol": "openai"}, "reply": {"text": r#"{"announced_action_not_taken": false, "action": ""}"#}})
}

/// The process groups the engine recorded as running (their leaders' pids).
pub fn recorded_groups(data: &Path) -> Vec<u32> {
    std::fs::read_dir(data.join("processes"))
        .map(|d| d.flatten().filter_map(|e| e.path().file_stem().and_then(|s| s.to_str()).and_then(|s| s.parse().ok())).collect())
        .unwrap_or_default()
}
