//! The judge: everything that decides whether a run's work is done, and says so. The loop
//! gathers evidence; these modules weigh it. The decision itself is `completion::decide`, pure.
//!
//! - [`completion`]: the completion engine's decision table, pure (docs/completion.md);
//! - [`prompt`]: the words said to the model: system prompt and every continuation;
//! - [`evaluator`]: the independent model call that judges done, read by the [`ladder`];
//! - [`ladder`]: asking a model for one JSON object (schema, lenient read, one repair);
//! - [`stuck`]: stuck patterns across steps, pure; [`runaway`]: one step's output running away;
//! - [`audit`]: gamed checks in a run's changes (assertions removed, tests skipped), pure;
//! - [`criteria`]: the person's line comments as criteria the next run is judged on;
//! - [`ranking`]: attempts of one task side by side, ranked by a rule the person can read, pure;
//! - [`comparison`]: the evaluator's word on two attempts, which never overrides the rule, pure;
//! - [`said_done`]: whether the agent's words claim it finished, without the tool, pure.

pub mod audit;
pub mod comparison;
pub mod completion;
pub mod criteria;
pub mod evaluator;
pub mod ladder;
pub mod prompt;
pub mod ranking;
pub mod runaway;
pub mod said_done;
pub mod stuck;
