//! The report-side offline tools: `extract-report`, `resolve-samples`,
//! `resolve-timestamps`, `resolve-backtrace` and `resolve-trace`, as
//! library functions the binaries (and later the collector) call.
//!
//! - [`SiteStore`] loads site tables from `.sites` files or from the
//!   `.debug_site_info` sections of binaries;
//! - [`resolve_samples`] and [`resolve_timestamps`] join a report's
//!   sections with those tables;
//! - [`resolve_trace`] orders the records of a `trace` subreport across
//!   threads and names their sites and predicates;
//! - [`extract_reports`] picks subreports out of a raw report;
//! - [`symbolize`] turns a crash's `main-backtrace` into functions, files
//!   and lines (module [`backtrace`]), and [`crash_signature`] groups
//!   crashes.

#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod backtrace;
mod extract_report;
mod join;
mod site_store;
mod trace;

pub use backtrace::{
    BacktraceError, CrashSubreports, DebugFileError, DebugFileSet, DebugFiles, DebugObject,
    DebugObjectError, LoadedModule, RawFrame, SourceFrame, SymbolizedFrame, crash_signature,
    parse_backtrace, parse_modules, read_crash_subreports, symbolize,
};
pub use extract_report::{ExtractReportError, extract_reports};
pub use join::{JoinError, resolve_samples, resolve_samples_estimated, resolve_timestamps};
pub use site_store::{LoadError, SITE_INFO_SECTION, SITE_SCALES_SECTION, SiteStore, SiteTable};
pub use trace::{TRACE_HEADER, TraceError, resolve_trace, seconds, slot_text};
