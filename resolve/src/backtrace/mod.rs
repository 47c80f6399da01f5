//! Crash symbolization: the `main-backtrace` and `modules` subreports of a
//! crashed run turned into functions, files and lines.
//!
//! - [`parse_backtrace`] and [`parse_modules`] read the two subreports'
//!   bodies ([`read_crash_subreports`] finds them in a raw report);
//! - [`DebugObject`] is one ELF file parsed for lookups, and [`DebugFiles`]
//!   says where they come from ([`DebugFileSet`]: files read once);
//! - [`symbolize`](fn@symbolize) maps each address to its module and source, leaving out
//!   the runtime's signal handler and the signal trampoline;
//! - [`crash_signature`] is the key that groups crashes.

mod debug_object;
mod parse;
mod report;
mod signature;
mod symbolize;

pub use debug_object::{
    DebugFileError, DebugFileSet, DebugFiles, DebugObject, DebugObjectError, SourceFrame,
};
pub use parse::{BacktraceError, LoadedModule, RawFrame, parse_backtrace, parse_modules};
pub use report::{BACKTRACE_REPORT_ID, CrashSubreports, MODULES_REPORT_ID, read_crash_subreports};
pub use signature::{crash_signature, is_system_module};
pub use symbolize::{SymbolizedFrame, symbolize};
