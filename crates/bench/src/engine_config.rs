//! The engine as the benchmarks run it: defaults everywhere, a context window that never
//! compacts, and nobody to ask.

use std::path::Path;
use std::time::Duration;

use finishline_engine::agent::{EngineConfig, ModelEndpoint};

pub fn defaults(data_dir: &Path, agent: ModelEndpoint) -> EngineConfig {
    EngineConfig {
        data_dir: data_dir.to_path_buf(),
        agent,
        evaluator: None,
        manager: None,
        completion: Default::default(),
        retry: Default::default(),
        permissions: Default::default(),
        verify_commands: vec![],
        extra_verify: vec![],
        task_allowed: vec![],
        context_window: 1_000_000,
        learn_context_window: false,
        max_output_tokens: None,
        step_limit: Duration::from_secs(600),
        runaway: Default::default(),
        checkpoint_max_file: finishline_engine::workspace::checkpoint::DEFAULT_MAX_FILE,
        auto_approve: false,
        review_plan: false,
        secret_env: vec![],
        prices: Default::default(),
        mcp: None,
        external: None,
        claims_pipe: None,
        tasks: finishline_engine::agent::config::TaskPolicy::new(data_dir),
        processes: finishline_engine::process_groups::ProcessGroups::in_data_dir(data_dir),
        agent_secrets: Default::default(),
    }
}
