//! Judging a run's work: evidence that needs no model. Today the diff audit; the completion
//! decisions, the evaluator and the stuck patterns join this folder as the engine is reorganised
//! by concept (docs/architecture.md).
//!
//! - [`audit`]: gamed checks in a run's changes (assertions removed, tests skipped, checks
//!   rewritten), pure.
//! - [`criteria`]: the person's line comments as criteria the next run is judged on.
//! - [`ranking`]: attempts of one task side by side, ranked by a rule the person can read, pure.

pub mod audit;
pub mod criteria;
pub mod ranking;
