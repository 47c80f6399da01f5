//! `extract-section [--require] SECTION FILE...`
//!
//! Writes the named section of every ELF executable, shared library,
//! relocatable object and archive member given, in argument order, to
//! standard output, with NUL bytes removed. Usual use:
//! `extract-section .debug_site_info prog libfoo.so > prog.sites`.
//!
//! A missing or empty section is reported on stderr and skipped. Exit
//! status: 0 when all went well; 1 when `--require` was given and some
//! section was missing or empty; 2 when some file could not be read as ELF
//! (the other files are still extracted).

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use sampler_extract::cli::{EXIT_ERROR, EXIT_NOT_FOUND, EXIT_OK, finish, warn};
use sampler_extract::{SectionContents, for_each_section};

const TOOL: &str = "extract-section";

/// Copy a section (normally `.debug_site_info`) out of ELF files and archives.
#[derive(Debug, Parser)]
#[command(name = TOOL, version)]
struct Args {
    /// Exit with status 1 if any file lacks the section or has it empty.
    #[arg(long)]
    require: bool,
    /// The section name, with its leading dot, e.g. `.debug_site_info`.
    section: String,
    /// ELF executables, shared libraries, objects or `.a` archives.
    #[arg(required = true)]
    files: Vec<PathBuf>,
}

fn main() -> ExitCode {
    finish(TOOL, run(Args::parse()))
}

fn run(args: Args) -> anyhow::Result<u8> {
    let mut stdout = io::BufWriter::new(io::stdout().lock());
    let mut n_missing = 0usize;
    let mut n_broken = 0usize;
    for path in &args.files {
        for_each_section(path, &args.section, &mut |origin, outcome| {
            match outcome {
                Ok(SectionContents::Data(bytes)) => {
                    stdout
                        .write_all(&bytes)
                        .context("writing to standard output")?;
                }
                Ok(SectionContents::Missing) => {
                    n_missing += 1;
                    warn(
                        TOOL,
                        format_args!("`{origin}`: section `{}` is missing", args.section),
                    );
                }
                Ok(SectionContents::Empty) => {
                    n_missing += 1;
                    warn(
                        TOOL,
                        format_args!("`{origin}`: section `{}` is empty", args.section),
                    );
                }
                Err(error) => {
                    n_broken += 1;
                    warn(
                        TOOL,
                        format_args!("`{origin}`: {:#}", anyhow::Error::from(error)),
                    );
                }
            }
            anyhow::Ok(())
        })?;
    }
    stdout.flush().context("writing to standard output")?;
    Ok(if n_broken > 0 {
        EXIT_ERROR
    } else if args.require && n_missing > 0 {
        EXIT_NOT_FOUND
    } else {
        EXIT_OK
    })
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn command_line_is_consistent() {
        super::Args::command().debug_assert();
    }
}
