//! Finishline's engine. Every front end (the Tauri shell, the `finishline` CLI) drives this
//! crate; it must never depend on Tauri or a GUI toolkit, so it builds and tests headless.

pub mod batch;
pub mod clock;
pub mod domain;
pub mod error;
pub mod event;
pub mod provider;
pub mod settings;
pub mod store;

pub use error::{Error, ErrorCode};
pub use settings::{Limits, ProviderKind, ProviderSettings, Settings, SettingsView, Theme};
