//! `extract-report ID`
//!
//! Reads a raw feedback report on standard input and writes the bodies of
//! all `<report id="ID">` blocks, without their tags, to standard output:
//! `extract-report samples < report | resolve-samples prog`.
//!
//! Exit status: 0 when at least one block was found, 1 when none, 2 when
//! the input is not a well-formed report (the message names the line).

use std::io;
use std::process::ExitCode;

use clap::Parser;
use sampler_extract::cli::{EXIT_NOT_FOUND, EXIT_OK, finish, warn};
use sampler_resolve::extract_reports;

const TOOL: &str = "extract-report";

/// Print the subreports with one id from a raw feedback report on stdin.
#[derive(Debug, Parser)]
#[command(name = TOOL, version)]
struct Args {
    /// The subreport id: `samples`, `main-backtrace`, `modules`, ...
    id: String,
}

fn main() -> ExitCode {
    finish(TOOL, run(Args::parse()))
}

fn run(args: Args) -> anyhow::Result<u8> {
    let stdout = io::BufWriter::new(io::stdout().lock());
    let n_found = extract_reports(io::stdin().lock(), &args.id, stdout)?;
    if n_found == 0 {
        warn(
            TOOL,
            format_args!("no `<report id=\"{}\">` in the input", args.id),
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
