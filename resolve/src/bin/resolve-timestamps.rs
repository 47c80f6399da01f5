//! `resolve-timestamps FILE...`
//!
//! Joins the `<timestamps>` sections on standard input (a samples
//! subreport, or whole raw reports) with the site tables in FILE... and
//! prints one tab-separated line per site, timestamp first so that
//! `sort -n` orders them by time of observation:
//!
//! ```text
//! timestamp  origin  unit  scheme  first|last  file  line  function  node  scheme fields...
//! ```
//!
//! A timestamp of 0 means the site was never observed. Repeated sections
//! merge: `first` keeps the earliest stamp, `last` the latest.
//!
//! Exit status: 0 on success, 2 on any error, as for `resolve-samples`.

use std::io;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use sampler_extract::cli::{EXIT_OK, finish};
use sampler_resolve::{SiteStore, resolve_timestamps};

const TOOL: &str = "resolve-timestamps";

/// Join the timestamps of feedback reports (stdin) with static site tables.
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
    resolve_timestamps(
        &store,
        io::stdin().lock(),
        io::BufWriter::new(io::stdout().lock()),
    )?;
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
