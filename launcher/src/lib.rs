//! `sampler-run`: runs an instrumented program with its report on a pipe,
//! exits as the program did, and delivers the report to a collector exactly
//! once (DESIGN.md decisions 6 and 8; cbi-behaviour.md §6 for the
//! original's launcher).
//!
//! - `run`: the launch, signal forwarding, the pipe, exit mirroring.
//! - `report`: capturing subreports under a cap, the `outcome` subreport,
//!   run files, the multipart body.
//! - `config`: options, `SAMPLER_*` variables, `APP.toml` files, consent.
//! - `spool`: the spool, locks, retries, per-application state, `status`.
//! - `upload`: one upload and what its answer means.
//! - `wrap`: `install` and `uninstall`, wrapping installed programs.
//! - `sys`: the only `unsafe` code (two system calls).

pub mod config;
pub mod report;
pub mod run;
pub mod spool;
pub mod sys;
pub mod upload;
pub mod wrap;
