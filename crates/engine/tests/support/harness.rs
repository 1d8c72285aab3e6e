//! Runs the real engine against the fake provider server and collects what a person and the
//! provider would see: events, stored rows, files, and the requests the model received.

#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use fake_llm::{FakeServer, Protocol, Scenario, SeenRequest};
use finishline_engine::agent::{Engine, EngineConfig, ModelEndpoint, PermissionPolicy};
use finishline_engine::domain::*;
use finishline_engine::event::{EngineEvent, Envelope};
use finishline_engine::judge::completion::CompletionConfig;
use finishline_engine::provider::{ProviderConfig, RetryPolicy};
use finishline_engine::store::Store;
use finishline_engine::ProviderKind;
use serde_json::{json, Value};

pub struct Harness {
    pub server: FakeServer,
    pub engine: Arc<Engine>,
    pub store: Arc<Store>,
    pub workspace: tempfile::TempDir,
    pub data: tempfile::TempDir,
}

pub struct Setup {
    pub protocol: Protocol,
    pub completion: CompletionConfig,
    pub permissions: PermissionPolicy,
    pub verify_commands: Vec<String>,
    /// Verify commands given for this task (the CLI's `--verify`), beside the settings' own.
    pub extra_verify: Vec<String>,
    pub context_window: u64,
    pub auto_approve: bool,
    pub review_plan: bool,
    pub idle_ms: u64,
    pub prices: std::collections::BTreeMap<String, finishline_engine::config::settings::Price>,
    pub mcp: Option<std::sync::Arc<finishline_engine::mcp::McpServers>>,
    pub step_limit: Duration,
    pub learn_context_window: bool,
    /// An ACP agent doing the work instead of the built-in agent.
    pub external: Option<finishline_engine::external::ExternalAgent>,
    /// How the external agent reaches `complete_task`: the pipe process (as the CLI and the app
    /// offer it) or, when `None`, HTTP.
    pub claims_pipe: Option<finishline_engine::external::claims_pipe::PipeCommand>,
    /// An external agent that must know the fake server's address (its base URL in its own
    /// environment or configuration): made once the server runs. Wins over `external`.
    pub agent_for: Option<Box<dyn Fn(&FakeServer) -> finishline_engine::external::ExternalAgent + Send + Sync>>,
    /// How many tasks may run at once (the app's limit); `None`: no limit, as in the CLI.
    pub parallel: Option<usize>,
}

impl Default for Setup {
    fn default() -> Self {
        Setup {
            protocol: Protocol::Openai,
            completion: CompletionConfig::default(),
            permissions: PermissionPolicy { nobody_to_ask: true, ..Default::default() },
            verify_commands: vec![],
            extra_verify: vec![],
            context_window: 200_000,
            auto_approve: false,
            review_plan: false,
            idle_ms: 5000,
            prices: Default::default(),
            mcp: None,
            step_limit: Duration::from_secs(600),
            learn_context_window: false,
            external: None,
            claims_pipe: Some(finishline_engine::external::claims_pipe::PipeCommand {
                program: env!("CARGO_BIN_EXE_finishline-mcp-pipe").into(),
                args: vec![],
            }),
            parallel: None,
            agent_for: None,
        }
    }
}

pub fn scenario(v: Value) -> Scenario {
    serde_json::from_value(v).expect("a valid scenario")
}

impl Harness {
    pub async fn new(scn: Scenario, setup: Setup) -> Harness {
        let server = FakeServer::start(scn).await.unwrap();
        let external = setup.agent_for.as_ref().map(|f| f(&server)).or(setup.external.clone());
        let kind = match setup.protocol {
            Protocol::Openai => ProviderKind::Openai,
            Protocol::Anthropic => ProviderKind::Anthropic,
            Protocol::Gemini => ProviderKind::Gemini,
            Protocol::Responses => ProviderKind::OpenaiResponses,
        };
        let mut pc = ProviderConfig::new(kind, server.base_url(setup.protocol), None);
        pc.idle_timeout = Duration::from_millis(setup.idle_ms);
        let agent = ModelEndpoint::http(pc, "fake-model").unwrap();
        let data = tempfile::tempdir().unwrap();
        let store = Arc::new(Store::open(&data.path().join("history.db"), Arc::new(finishline_engine::clock::SystemClock)).unwrap());
        let workspace = tempfile::tempdir().unwrap();
        let engine = Engine::new(
            store.clone(),
            EngineConfig {
                data_dir: data.path().to_path_buf(),
                agent,
                evaluator: None,
                manager: None,
                completion: setup.completion,
                retry: RetryPolicy {
                    max_retries: 3,
                    base_delay: Duration::from_millis(10),
                    max_delay: Duration::from_millis(50),
                    max_retry_after: Duration::from_secs(3),
                    jitter: 0.0,
                },
                permissions: setup.permissions,
                verify_commands: setup.verify_commands.iter().chain(&setup.extra_verify).cloned().collect(),
                extra_verify: setup.extra_verify,
                task_allowed: vec![],
                context_window: setup.context_window,
                learn_context_window: setup.learn_context_window,
                max_output_tokens: Some(1024),
                step_limit: setup.step_limit,
                runaway: Default::default(),
                checkpoint_max_file: finishline_engine::workspace::checkpoint::DEFAULT_MAX_FILE,
                auto_approve: setup.auto_approve,
                review_plan: setup.review_plan,
                secret_env: vec![],
                prices: setup.prices,
                mcp: setup.mcp.clone(),
                external,
                claims_pipe: setup.claims_pipe.clone(),
                tasks: finishline_engine::agent::config::TaskPolicy {
                    slots: setup.parallel.map(finishline_engine::agent::queue::TaskSlots::new),
                    ..finishline_engine::agent::config::TaskPolicy::new(data.path())
                },
                processes: finishline_engine::process_groups::ProcessGroups::in_data_dir(data.path()),
                agent_secrets: Default::default(),
            },
        );
        Harness { server, engine, store, workspace, data }
    }

    pub fn ws(&self) -> PathBuf {
        self.workspace.path().to_path_buf()
    }

    pub fn write(&self, rel: &str, content: &str) {
        let p = self.ws().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
    }

    pub fn read(&self, rel: &str) -> Option<String> {
        std::fs::read_to_string(self.ws().join(rel)).ok()
    }

    /// Starts the task and waits for its run to end (review, idle, failed, …).
    pub async fn run(&self, task: &str) -> Outcome {
        let (sid, handle) = self.engine.start_session(task, &self.ws()).unwrap();
        tokio::time::timeout(Duration::from_secs(60), handle).await.expect("the run ends in time").unwrap();
        self.outcome(&sid)
    }

    pub async fn wait_idle(&self, sid: &SessionId) -> Outcome {
        for _ in 0..600 {
            let s = self.store.session(sid).unwrap();
            if !s.status.is_running() {
                // Runs end with their status event; wait a moment for the task to finish.
                tokio::time::sleep(Duration::from_millis(20)).await;
                let s2 = self.store.session(sid).unwrap();
                if !s2.status.is_running() {
                    return self.outcome(sid);
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("the session did not stop running");
    }

    pub fn outcome(&self, sid: &SessionId) -> Outcome {
        let s = self.store.session(sid).unwrap();
        Outcome {
            session: sid.clone(),
            status: s.status,
            claim: s.claim,
            verdict: s.verdict,
            end_reason: s.end_reason,
            events: self.store.events(sid, 0).unwrap(),
            requests: self.server.requests(),
        }
    }
}

pub struct Outcome {
    pub session: SessionId,
    pub status: SessionStatus,
    pub claim: Option<Claim>,
    pub verdict: Option<Verdict>,
    pub end_reason: Option<EndReason>,
    pub events: Vec<Envelope>,
    pub requests: Vec<SeenRequest>,
}

impl Outcome {
    pub fn continuations(&self) -> Vec<ContinuationSource> {
        self.events.iter().filter_map(|e| if let EngineEvent::Continuation { source, .. } = &e.event { Some(*source) } else { None }).collect()
    }
    pub fn model_calls(&self) -> usize {
        self.requests.len()
    }
    pub fn calls_of(&self, kind: fake_llm::RequestKind) -> usize {
        self.requests.iter().filter(|r| r.kind == kind).count()
    }
    pub fn review_id(&self) -> RequestId {
        self.events
            .iter()
            .rev()
            .find_map(|e| if let EngineEvent::ReviewRequested { review_id, .. } = &e.event { Some(review_id.clone()) } else { None })
            .expect("a review was requested")
    }
    pub fn evaluations(&self) -> Vec<(Verdict, bool)> {
        self.events
            .iter()
            .filter_map(|e| if let EngineEvent::Evaluation { verdict, parse_ok, .. } = &e.event { Some((*verdict, *parse_ok)) } else { None })
            .collect()
    }
    pub fn has(&self, pred: impl Fn(&EngineEvent) -> bool) -> bool {
        self.events.iter().any(|e| pred(&e.event))
    }
    pub fn gap_free(&self) -> bool {
        self.events.iter().enumerate().all(|(i, e)| e.seq == i as u64 + 1)
    }
}

/// A final answer long enough that it is never taken for a cut-off reply.
pub const DONE: &str = "Done! Everything the task asked for is written and checked.";

/// A scenario of rules, first match wins.
pub fn rules(v: Value) -> Scenario {
    scenario(serde_json::json!({"rules": v}))
}

/// A rule for the agent's requests.
pub fn agent(when: Value, reply: Value) -> Value {
    let mut w = when;
    w["kind"] = serde_json::json!("agent");
    serde_json::json!({"when": w, "reply": reply})
}

/// A rule for the evaluator's requests.
pub fn evaluator(reply: Value) -> Value {
    serde_json::json!({"when": {"kind": "evaluator"}, "reply": reply})
}

pub fn done_verdict() -> Value {
    serde_json::json!({"text": r#"{"done": true, "summary": "all done", "remaining": [], "continuation_prompt": "", "is_stuck": false, "stuck_reason": ""}"#})
}

pub fn not_done_verdict(remaining: &[&str], prompt: &str) -> Value {
    let v =
        serde_json::json!({"done": false, "summary": "not yet", "remaining": remaining, "continuation_prompt": prompt, "is_stuck": false, "stuck_reason": ""});
    serde_json::json!({"text": v.to_string()})
}

pub fn no_announcement() -> Value {
    serde_json::json!({"text": r#"{"announced_action_not_taken": false, "action": ""}"#})
}

/// A manager's plan as it answers one: each step a title and one criterion.
pub fn plan_json(steps: &[(&str, &str)]) -> String {
    let steps: Vec<Value> = steps
        .iter()
        .map(|(title, criterion)| json!({"title": title, "instructions": format!("{title}."), "criteria": [criterion], "depends_on": []}))
        .collect();
    json!({ "steps": steps }).to_string()
}

/// An agent's reply that writes `path` with "`path` contents".
pub fn write_reply(path: &str) -> Value {
    json!({"tool_calls": [{"name": "write_file", "arguments": {"path": path, "content": format!("{path} contents")}}]})
}

/// Three steps, each writing a file its criterion names.
pub const THREE: [(&str, &str); 3] = [("Write a.txt", "a.txt exists"), ("Write b.txt", "b.txt exists"), ("Write c.txt", "c.txt exists")];
