//! Finishline's engine. Every front end (the Tauri shell, the `finishline` CLI) drives this
//! crate; it must never depend on Tauri or a GUI toolkit, so it builds and tests headless.

pub mod agent;
pub mod batch;
pub mod checkpoint;
pub mod clock;
pub mod completion;
pub mod domain;
pub mod error;
pub mod evaluator;
pub mod fault;
pub mod external;
pub mod instructions;
pub mod judge;
pub mod ladder;
pub mod mcp;
pub mod plan;
pub mod plan_ledger;
pub mod plan_state;
pub mod event;
pub mod preset;
pub mod process_groups;
pub mod prompt;
pub mod runaway;
pub mod provider;
pub mod secret;
pub mod settings;
pub mod stable_hash;
pub mod store;
pub mod stuck;
pub mod tool;
pub mod workspace;

pub use error::{Error, ErrorCode, Result};
pub use settings::{Limits, ProviderKind, ProviderSettings, Settings, SettingsView, Theme};
