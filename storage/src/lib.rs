//! What the collector stores and the analysis reads.
//!
//! - [`store`]: the database, SQLite or PostgreSQL through sqlx's `Any`
//!   driver, opened for writing (the collector) or read-only (the
//!   analysis, the dashboard);
//! - [`counters`]: a run's samples in the compact blob the collector
//!   writes at ingest and the analysis walks without allocating.
//!
//! Both sides depend on this crate, not on each other, so the collector
//! can serve the analysis's rankings.

#![forbid(unsafe_code)]

pub mod counters;
pub mod store;
