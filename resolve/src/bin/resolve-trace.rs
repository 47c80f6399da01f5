//! `resolve-trace FILE...`
//!
//! Prints the last sampled observations of a run's threads, in the order
//! they happened. Reads whole reports on standard input (every
//! `<report id="trace">`, the other subreports checked and skipped), or the
//! bare body that `extract-report trace` prints, and the site tables in
//! FILE... (`.sites` files, or binaries, libraries, objects and archives
//! holding `.debug_site_info`, as for `resolve-samples`). Prints a header,
//! then one tab-separated line per record, sorted by the process-wide
//! sequence number:
//!
//! ```text
//! thread  sequence  time         location        function  predicate
//! 4240    12        0.000000000  /src/util.c:1   helper    helper() reached
//! 4242*   17        0.000067890  /src/main.c:12  main      argc > 1
//! 4242*   22        0.000109350  /src/main.c:20  main      p == 0
//! ```
//!
//! - `thread` is the kernel's thread id, followed by `*` for the crashing
//!   thread; `time` is in seconds since the first record (in sequence
//!   order), as precise as the trace's clock, down to nanoseconds.
//! - `predicate` is the text of the counter slot the observation bumped,
//!   as the analysis writes that predicate (`!(C)` or `C` for a branch,
//!   `f() < 0`, `f() == 0` or `f() > 0` for a return, ...).
//! - Several traces on the input (interim reports, several runs) are
//!   printed one after another, separated by an empty line, under one
//!   header.
//!
//! Exit status: 0 on success; 1 when the input holds no trace (the run
//! was not traced); 2 on any error: an unreadable table, a malformed
//! report or trace (the message names the line), a record whose unit and
//! scheme have no table or whose site is past the end of its table.

use std::io;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use sampler_extract::cli::{EXIT_NOT_FOUND, EXIT_OK, finish, warn};
use sampler_resolve::{SiteStore, resolve_trace};

const TOOL: &str = "resolve-trace";

/// Print the trace of a run's report (stdin): each thread's last sampled
/// observations, in order, with their sites and predicates.
#[derive(Debug, Parser)]
#[command(name = TOOL, version)]
struct Args {
    /// Site tables: `.sites` files, or ELF binaries, libraries, objects
    /// and archives with a `.debug_site_info` section.
    #[arg(required = true)]
    files: Vec<PathBuf>,
}

fn main() -> ExitCode {
    finish(TOOL, run(Args::parse()))
}

fn run(args: Args) -> anyhow::Result<u8> {
    let store = SiteStore::from_paths(&args.files)?;
    let n_traces = resolve_trace(
        &store,
        io::stdin().lock(),
        io::BufWriter::new(io::stdout().lock()),
    )?;
    if n_traces == 0 {
        warn(
            TOOL,
            "no `<report id=\"trace\">` in the input: the run was not traced (SAMPLER_TRACE)",
        );
        return Ok(EXIT_NOT_FOUND);
    }
    Ok(EXIT_OK)
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn command_line_is_consistent() {
        super::Args::command().debug_assert();
    }
}
