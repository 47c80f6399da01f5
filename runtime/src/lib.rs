//! The runtime library linked into every program built by `sampler-cc`.
//!
//! The C ABI is `include/sampler.h`; ARCHITECTURE.md explains it. In short:
//! instrumented code decrements the thread-local `cbi_countdown` at each
//! site and calls `cbi_sample` when it runs out (`countdown` draws the
//! next gap); each compilation unit registers its counter arrays
//! (`registry`); at exit, at the unloading of a plugin, on request, or on
//! a fatal signal (`crash`) the samples are written as a feedback report
//! (`report`) to `SAMPLER_REPORT_FD` or `SAMPLER_FILE`. Two schemes ask
//! the runtime what to count: `gobject` classifies `g_object_unref`
//! arguments, `atoms` tells whether an access follows one by another
//! thread. With `SAMPLER_TRACE`, `trace` keeps each thread's last sampled
//! observations for the crash report (issue 18's flight recorder).
//!
//! Configuration comes from the environment once, at the first unit
//! registration or sampled event (`config`), and the variables are then
//! removed so that child processes do not inherit them.

// The runtime is the one crate that needs `unsafe`: it is a C library.
// Every unsafe operation sits in a small function with its invariant
// written beside it; `sys` holds all calls into libc.
#![allow(unsafe_code)]
#![deny(clippy::undocumented_unsafe_blocks)]

mod abi;
mod atoms;
mod config;
pub mod countdown;
mod crash;
mod gobject;
mod registry;
mod report;
mod sys;
mod trace;

use std::sync::OnceLock;
use std::sync::atomic::Ordering;

use config::Destination;
use countdown::Generator;

/// The configuration every thread shares, fixed at start-up.
#[derive(Debug)]
struct Runtime {
    generator: Generator,
    seed: Option<u64>,
}

static RUNTIME: OnceLock<Runtime> = OnceLock::new();

/// The runtime, initialised on first use.
fn runtime() -> &'static Runtime {
    RUNTIME.get_or_init(initialise)
}

fn initialise() -> Runtime {
    let (config, warnings) = config::parse(|name| std::env::var_os(name), sys::read_file);
    for name in config::CONSUMED_VARIABLES {
        sys::remove_env(name);
    }
    for warning in &warnings {
        warn(warning);
    }
    let fd = match &config.destination {
        Destination::None => None,
        Destination::Fd(fd) => match sys::adopt_report_fd(*fd) {
            Ok(()) => Some(*fd),
            Err(error) => {
                warn(&format!(
                    "SAMPLER_REPORT_FD={fd} is not an open file descriptor ({error}); no report will be written"
                ));
                None
            }
        },
        Destination::File(path) => {
            use std::os::fd::IntoRawFd;
            // std opens with O_CLOEXEC: programs we run cannot write into it.
            match std::fs::File::create(path) {
                Ok(file) => Some(file.into_raw_fd()),
                Err(error) => {
                    warn(&format!(
                        "cannot create SAMPLER_FILE=`{}` ({error}); no report will be written",
                        path.to_string_lossy()
                    ));
                    None
                }
            }
        }
    };
    if let Some(fd) = fd {
        report::OWNER_PID.store(sys::getpid(), Ordering::Release);
        report::REPORT_FD.store(fd, Ordering::Release);
        trace::enable(config.trace);
        sys::at_exit(abi::at_exit);
        crash::install();
    }
    sys::at_fork_child(countdown::after_fork_in_child);
    trace::start_plain_counts();
    Runtime {
        generator: Generator::new(config.sampling),
        seed: config.seed,
    }
}

/// One line on stderr, prefixed so the user knows who speaks.
fn warn(message: &str) {
    eprintln!("sampler: {message}");
}
