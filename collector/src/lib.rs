//! The collection server of the sampler toolchain (`sampler-collector`).
//!
//! Instrumented programs' feedback reports arrive by the original CBI
//! upload protocol (`upload`), are checked, reduced to a compact form for
//! the analysis (`counters`), symbolized when they crashed (`crashes`) and
//! stored durably before they are acknowledged (`ingest`) in SQLite or
//! PostgreSQL (`store`). Builds register their site tables and debug files
//! (`builds`); the read API serves it all back as JSON (`api`), with the
//! analysis's rankings (`rankings`) and sampling rates (`rates`).

#![forbid(unsafe_code)]

pub mod api;
pub mod builds;
pub mod crashes;
pub mod dashboard;
pub mod ingest;
pub mod limits;
pub mod metrics;
pub mod rankings;
pub mod rates;
pub mod server;
pub mod tokens;
pub mod traces;
pub mod upload;

// The database and the compact counters live in `sampler-storage`, which the
// analysis shares; re-exported so that the collector's paths stay as they were.
pub use sampler_storage::{counters, store};
