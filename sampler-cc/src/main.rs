//! The `sampler-cc` program: the driver, or the `cc1` stage when gcc runs
//! it under that name.

#![forbid(unsafe_code)]

use std::process::ExitCode;

fn main() -> ExitCode {
    let mut args = std::env::args_os();
    let argv0 = args.next().unwrap_or_default();
    let args: Vec<String> = args.map(|arg| arg.to_string_lossy().into_owned()).collect();
    let called_as = std::path::Path::new(&argv0).file_name().unwrap_or_default();
    if called_as == "cc1" {
        sampler_cc::cc1::main(args)
    } else {
        sampler_cc::driver::main(args)
    }
}
