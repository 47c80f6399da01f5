//! `resolve-backtrace FILE...`
//!
//! Symbolizes the backtrace of a crashed run. Reads a raw report on
//! standard input (a whole report, several one after another, or just its
//! `main-backtrace` and `modules` subreports; or the bare body that
//! `extract-report main-backtrace` prints), and the ELF files FILE...:
//! executables, shared libraries, separate debug files
//! (`objcopy --only-keep-debug`). Each module of the report is matched to
//! a file by GNU build id, else by path, else by file name (never to a file
//! with another build id). Prints a header, then one tab-separated line per
//! frame, the faulting one first:
//!
//! ```text
//! return          module              function    file           line
//! 0x7f3a2c40111b  /opt/app/libcrash.so  lib_store  /src/lib.c     5
//! 0x7f3a2c40113d  /opt/app/libcrash.so  lib_helper /src/lib.c     10
//! 0x7f3a2c23c24a  /lib/x86_64-linux-gnu/libc.so.6  ??  ??        0
//! ```
//!
//! - `return` is the address as printed in the backtrace; `module` the
//!   object's path from the `modules` subreport (as printed in the
//!   backtrace when no module matched); `file` as the DWARF line table
//!   names it; unknown function or file `??`, unknown line `0`.
//! - The runtime's signal handler frames and the signal trampoline are
//!   left out; every frame but the faulting one is looked up one byte
//!   before its return address, so that the line is the call's.
//! - A function inlined at an address is printed on its own line before
//!   the function it was inlined into, with the same return address and
//!   `(inlined) ` before its name.
//! - Several backtraces on the input are printed one after another,
//!   separated by an empty line, under one header.
//!
//! Exit status: 0 on success; 1 when the input holds no `main-backtrace`
//! (the run did not crash); 2 on any error (an unreadable file, a malformed
//! report, the message naming the line).

use std::borrow::Cow;
use std::io::{self, BufRead, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use sampler_extract::cli::{EXIT_NOT_FOUND, EXIT_OK, finish, warn};
use sampler_resolve::{
    CrashSubreports, DebugFileSet, LoadedModule, RawFrame, SymbolizedFrame, parse_backtrace,
    parse_modules, read_crash_subreports, symbolize,
};

const TOOL: &str = "resolve-backtrace";

/// Symbolize the backtrace of a crashed run's report (stdin).
#[derive(Debug, Parser)]
#[command(name = TOOL, version)]
struct Args {
    /// Executables, shared libraries and separate debug files of the
    /// program, matched to its modules by build id, path or file name.
    files: Vec<PathBuf>,
}

fn main() -> ExitCode {
    finish(TOOL, run(Args::parse()))
}

fn run(args: Args) -> anyhow::Result<u8> {
    let debug = DebugFileSet::from_paths(&args.files)?;
    let crashes = read_input(io::stdin().lock()).context("standard input")?;
    if crashes.is_empty() {
        warn(
            TOOL,
            "no `<report id=\"main-backtrace\">` in the input: the run did not crash",
        );
        return Ok(EXIT_NOT_FOUND);
    }
    let mut out = io::BufWriter::new(io::stdout().lock());
    writeln!(out, "return\tmodule\tfunction\tfile\tline")?;
    for (index, (frames, modules)) in crashes.iter().enumerate() {
        if index > 0 {
            writeln!(out)?;
        }
        for frame in symbolize(frames, modules, &debug) {
            write_frame(&mut out, &frame)?;
        }
    }
    out.flush()?;
    Ok(EXIT_OK)
}

/// Every backtrace of the input with its modules, all parsed before
/// anything is printed.
fn read_input(mut input: impl BufRead) -> anyhow::Result<Vec<(Vec<RawFrame>, Vec<LoadedModule>)>> {
    let crashes = match input.fill_buf()?.first() {
        Some(b'<') => read_crash_subreports(input)?,
        _ => {
            let mut body = String::new();
            input.read_to_string(&mut body)?;
            if body.is_empty() {
                Vec::new()
            } else {
                vec![CrashSubreports {
                    backtrace: body,
                    ..CrashSubreports::default()
                }]
            }
        }
    };
    crashes
        .into_iter()
        .map(|crash| {
            let frames = parse_backtrace(&crash.backtrace)
                .map_err(|error| error.shifted(crash.backtrace_line))?;
            let modules = match &crash.modules {
                Some(text) => {
                    parse_modules(text).map_err(|error| error.shifted(crash.modules_line))?
                }
                None => Vec::new(),
            };
            Ok((frames, modules))
        })
        .collect()
}

fn write_frame(out: &mut impl Write, frame: &SymbolizedFrame) -> io::Result<()> {
    writeln!(
        out,
        "{:#x}\t{}\t{}{}\t{}\t{}",
        frame.address,
        field(Some(&frame.module)),
        if frame.inlined { "(inlined) " } else { "" },
        field(frame.function.as_deref()),
        field(frame.file.as_deref()),
        frame.line.unwrap_or(0),
    )
}

/// A value as a field: `??` when unknown, tabs and line ends (which would
/// break the columns) as spaces.
fn field(text: Option<&str>) -> Cow<'_, str> {
    match text {
        None => Cow::Borrowed("??"),
        Some(text) if text.contains(['\t', '\n', '\r']) => {
            Cow::Owned(text.replace(['\t', '\n', '\r'], " "))
        }
        Some(text) => Cow::Borrowed(text),
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn command_line_is_consistent() {
        super::Args::command().debug_assert();
    }
}
