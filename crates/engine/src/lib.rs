//! Finishline's engine. Every front end (the Tauri shell, the `finishline` CLI) drives this
//! crate; it must never depend on Tauri or a GUI toolkit, so it builds and tests headless.

pub mod agent;
pub mod and_list;
pub mod batch;
mod beside;
pub mod clock;
pub mod config;
pub mod domain;
pub mod error;
pub mod event;
pub mod external;
pub mod fault;
pub mod judge;
pub mod mcp;
pub mod plan;
pub mod process_groups;
pub mod provider;
pub mod stable_hash;
pub mod stop_signals;
pub mod store;
pub mod thousands;
pub mod tool;
pub mod workspace;

pub use config::settings::{Limits, ProviderKind, ProviderSettings, Settings, SettingsView, Theme};
pub use error::{Error, ErrorCode, Result};
/// How a front end stops what it asked the engine for (a comparison of attempts, a run).
pub use tokio_util::sync::CancellationToken;
