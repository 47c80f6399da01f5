//! `resolve-samples FILE...`
//!
//! Joins the `<samples>` sections on standard input (a samples subreport,
//! or whole raw reports) with the site tables in FILE... (`.sites` files,
//! or binaries, libraries, objects and archives holding `.debug_site_info`)
//! and prints one tab-separated line per site:
//!
//! ```text
//! origin  unit  scheme  file  line  function  node  scheme fields...  counters...
//! ```
//!
//! Sections repeated for one unit and scheme (a plugin loaded twice, or
//! several reports piped together) are merged: counters summed, `bounds`
//! minima and maxima combined. With `--estimate D`, counters are estimates
//! of the true counts of runs sampled at sparsity D: each divided by its
//! site's observation probability (its scale from the binaries'
//! `.debug_site_scales`, written by `sampler-cc -fsampler-rates`; 1
//! without), with one decimal.
//!
//! Exit status: 0 on success, 2 on any error: an unreadable table, a
//! malformed report, a section without a table, or a section whose line
//! count differs from its table (the message names unit, scheme and both
//! counts).

use std::io;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use sampler_extract::cli::{EXIT_OK, finish};
use sampler_resolve::{SiteStore, resolve_samples_estimated};

const TOOL: &str = "resolve-samples";

/// Join the samples of feedback reports (stdin) with static site tables.
#[derive(Debug, Parser)]
#[command(name = TOOL, version)]
struct Args {
    /// Site tables: `.sites` files, or ELF binaries, libraries, objects
    /// and archives with a `.debug_site_info` section.
    #[arg(required = true)]
    files: Vec<PathBuf>,

    /// Print estimates of the true counts of runs sampled at sparsity D
    /// (`SAMPLER_SPARSITY`) instead of the sampled counts.
    #[arg(long, value_name = "D", value_parser = clap::value_parser!(u32).range(1..))]
    estimate: Option<u32>,
}

fn main() -> ExitCode {
    finish(TOOL, run(Args::parse()))
}

fn run(args: Args) -> anyhow::Result<u8> {
    let store = SiteStore::from_paths(&args.files)?;
    resolve_samples_estimated(
        &store,
        io::stdin().lock(),
        io::BufWriter::new(io::stdout().lock()),
        args.estimate,
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
