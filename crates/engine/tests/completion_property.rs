//! A property test: random agent and verdict scripts (stops, tool calls, truncations, claims,
//! todo changes, broken verdicts) through the real engine and the fake server. Every run must end,
//! and every run must respect the bound on model calls:
//! agent steps + evaluations + compactions ≤ steps + continuation budget + truncation cap + compactions.

mod support {
    pub mod harness;
}

use std::time::Duration;

use finishline_engine::domain::*;
use finishline_engine::event::EngineEvent;
use serde_json::{json, Value};
use support::harness::*;

fn agent_step(rng: &mut fastrand::Rng, i: usize) -> Value {
    match rng.u8(0..9) {
        0 => json!({"text": "I have finished everything that was asked, the files are in place."}),
        1 => json!({"text": "ok"}),
        2 => json!({"text": "and then", "finish": "length"}),
        3 => json!({"text": "half a sen", "fault": {"type": "no_finish"}}),
        4 => json!({"tool_calls": [{"name": "write_file", "arguments": {"path": format!("f{}.txt", rng.u8(0..3)), "content": format!("v{i}")}}]}),
        5 => {
            let statuses = ["pending", "in_progress", "completed", "cancelled"];
            let todos: Vec<Value> =
                (0..rng.usize(1..4)).map(|k| json!({"id": k.to_string(), "content": format!("item {k}"), "status": statuses[rng.usize(0..4)]})).collect();
            json!({"tool_calls": [{"name": "todo_write", "arguments": {"todos": todos}}]})
        }
        6 => {
            let st = ["success", "partial", "blocked"][rng.usize(0..3)];
            json!({"tool_calls": [{"name": "complete_task", "arguments": {"status": st, "summary": "claimed", "remaining_work": "maybe"}}]})
        }
        7 => json!({"text": ""}),
        _ => json!({"tool_calls": [{"name": "list_dir", "arguments": {}}]}),
    }
}

fn verdict(rng: &mut fastrand::Rng, i: usize) -> Value {
    match rng.u8(0..5) {
        0 => done_verdict(),
        1 => {
            json!({"text": format!("{{\"done\": false, \"summary\": \"no\", \"remaining\": [\"thing {}\"], \"continuation_prompt\": \"\", \"is_stuck\": false, \"stuck_reason\": \"\"}}", i % 3)})
        }
        2 => {
            json!({"text": "{\"done\": false, \"summary\": \"loop\", \"remaining\": [], \"continuation_prompt\": \"\", \"is_stuck\": true, \"stuck_reason\": \"loops\"}"})
        }
        3 => json!({"text": "what even is JSON"}),
        _ => json!({"text": "{\"announced_action_not_taken\": true, \"action\": \"do it\"}"}),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_scripts_always_end_within_the_model_call_bound() {
    let mut rng = fastrand::Rng::with_seed(20261121);
    let cases = 40;
    let mut ends = std::collections::BTreeMap::<String, usize>::new();
    for case in 0..cases {
        let steps = rng.usize(4..16);
        let mut rules: Vec<Value> = Vec::new();
        for i in 0..steps {
            rules.push(json!({"when": {"kind": "agent"}, "reply": agent_step(&mut rng, i), "times": 1}));
        }
        for i in 0..8 {
            rules.push(json!({"when": {"kind": "evaluator"}, "reply": verdict(&mut rng, i), "times": 1}));
        }
        rules.push(json!({"when": {"kind": "evaluator"}, "reply": done_verdict()}));
        rules.push(json!({"when": {"kind": "agent"}, "reply": {"text": "Nothing more to do here; everything is finished now."}}));
        let max_steps = rng.u32(3..12);
        let budget = rng.u32(1..5);
        let mut setup = Setup::default();
        setup.completion.max_steps = max_steps;
        setup.completion.continuation_budget = budget;
        let h = Harness::new(scenario(json!({"rules": rules})), setup).await;
        let (sid, handle) = h.engine.start_session("do the random task", &h.ws()).unwrap();
        tokio::time::timeout(Duration::from_secs(30), handle).await.unwrap_or_else(|_| panic!("case {case}: the run must end")).unwrap();
        let o = h.outcome(&sid);
        assert!(!o.status.is_running(), "case {case}: the run ended in a resting status, not {:?}", o.status);
        let agent_steps = o.events.iter().filter(|e| matches!(e.event, EngineEvent::StepStarted { .. })).count() as u32;
        let evaluations = o.events.iter().filter(|e| matches!(e.event, EngineEvent::Evaluation { .. })).count() as u32;
        let compactions = o.calls_of(fake_llm::RequestKind::Compaction) as u32;
        let evaluator_requests = o.calls_of(fake_llm::RequestKind::Evaluator) as u32;
        let model_calls = agent_steps + evaluations + compactions;
        let bound = agent_steps + budget + 3 + compactions;
        assert!(agent_steps <= max_steps, "case {case}: {agent_steps} steps exceed the limit {max_steps}");
        assert!(model_calls <= bound, "case {case}: {model_calls} model calls exceed the bound {bound}");
        assert!(evaluator_requests <= 2 * evaluations, "case {case}: at most one repair retry per evaluation");
        let continuations = o.continuations().iter().filter(|s| **s != ContinuationSource::Truncation).count() as u32;
        assert!(continuations <= budget, "case {case}: {continuations} continuations exceed the budget {budget}");
        assert!(o.gap_free(), "case {case}: gap-free events");
        *ends.entry(format!("{}/{}", o.status.as_str(), o.end_reason.map(|e| e.as_str()).unwrap_or("-"))).or_default() += 1;
    }
    println!("{cases} random runs ended as: {ends:?}");
}
