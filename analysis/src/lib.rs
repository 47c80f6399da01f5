//! Statistical bug isolation: which predicates predict failure.
//!
//! - [`scores`]: Failure, Context, Increase and its lower bound, the
//!   paper's Importance, the reference code's harmonic mean, and the
//!   spectrum-based Ochiai, Tarantula and DStar, for one predicate;
//! - [`predicates`]: which predicates each scheme's sites have, when they
//!   hold, and their C text;
//! - [`ranking`]: the ranking of retained predicates and the iterative
//!   redundancy elimination, over per-predicate bitmaps of runs;
//! - [`report`]: an analysis as users read it (sites, scores, source
//!   lines), shared by `sampler-analyze` and the collector's dashboard;
//! - [`output`]: a report as a terminal table or CSV;
//! - [`rates`]: sampling rates learned from a training set of runs.

#![forbid(unsafe_code)]

pub mod collector_db;
pub mod dataset;
pub mod output;
pub mod ranking;
pub mod rates;

/// Which predicates each scheme's sites have, and their C text: in
/// `sampler-formats`, shared with `resolve-trace`.
pub use sampler_formats::predicates;
pub mod report;
pub mod run_files;
pub mod scores;
pub mod tail;
