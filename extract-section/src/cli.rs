//! Conventions shared by the command-line tools: messages on stderr
//! prefixed with the tool's name, exit codes, and quiet exit on a closed
//! pipe.

use std::io;
use std::process::ExitCode;

/// Exit status of a tool that did its job.
pub const EXIT_OK: u8 = 0;
/// Exit status when what was asked for is not there (no such report, a
/// required section missing): the grep convention.
pub const EXIT_NOT_FOUND: u8 = 1;
/// Exit status when the input or the system failed.
pub const EXIT_ERROR: u8 = 2;

/// Prints `tool: message` on stderr.
pub fn warn(tool: &str, message: impl std::fmt::Display) {
    eprintln!("{tool}: {message}");
}

/// True when `error` comes from writing to a pipe whose reader has gone,
/// as with `tool | head`: not a failure of the tool.
pub fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<io::Error>()
            .is_some_and(|io_error| io_error.kind() == io::ErrorKind::BrokenPipe)
    })
}

/// Turns the result of a tool's `run` into its exit status, printing the
/// error with its causes.
pub fn finish(tool: &str, result: anyhow::Result<u8>) -> ExitCode {
    match result {
        Ok(code) => ExitCode::from(code),
        Err(error) if is_broken_pipe(&error) => ExitCode::from(EXIT_OK),
        Err(error) => {
            warn(tool, format_args!("error: {error:#}"));
            ExitCode::from(EXIT_ERROR)
        }
    }
}
