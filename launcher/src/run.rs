//! `sampler-run [OPTIONS] -- PROGRAM ARGS...`: runs the program with the
//! report on a pipe, forwards signals to it, records its outcome, hands the
//! report to the spool (or `--save`), uploads within the exit-time bound,
//! and exits as the program did.
//!
//! The pipe: the program gets the write end as `SAMPLER_REPORT_FD` (not
//! close-on-exec, so the runtime can use it after `exec`); we read the
//! read end while it runs, so a report larger than the pipe's buffer never
//! blocks it. Children that outlive the program inherit the write end, so
//! we never wait for end-of-file: once the program has exited (seen with
//! `waitid(WNOWAIT)`, before it is reaped), everything it wrote is already
//! in the pipe, and a non-blocking drain, bounded in time, takes it.

use std::ffi::{OsStr, OsString};
use std::io::Read as _;
use std::os::fd::{AsFd as _, AsRawFd as _};
use std::os::unix::process::{CommandExt as _, ExitStatusExt as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nix::fcntl::{FcntlArg, FdFlag, OFlag, fcntl};
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::signal::{SigSet, SigmaskHow, Signal, kill};
use nix::sys::wait::{Id, WaitPidFlag, waitid};
use nix::unistd::Pid;

use crate::config::{AppConfig, Consent, DEFAULT_SPARSITY, Dirs, Overrides};
use crate::report::{Capture, Outcome, RunFile};
use crate::spool::{self, FlushOptions, Spool};
use crate::sys;

/// The signals sent to `sampler-run` that reach the program.
pub const FORWARDED: [Signal; 7] = [
    Signal::SIGINT,
    Signal::SIGTERM,
    Signal::SIGHUP,
    Signal::SIGQUIT,
    Signal::SIGUSR1,
    Signal::SIGUSR2,
    Signal::SIGWINCH,
];

/// The longest the drain after the program's exit takes.
const DRAIN: Duration = Duration::from_millis(50);

/// What the command line asked for.
#[derive(Debug)]
pub struct RunArgs {
    /// Options that win over the configuration.
    pub overrides: Overrides,
    /// `--save DIR`.
    pub save: Option<PathBuf>,
    /// `--argv0 NAME`: the program's `argv[0]` (wrappers pass their own).
    pub argv0: Option<OsString>,
    /// PROGRAM ARGS...
    pub program: Vec<OsString>,
}

/// How the program ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// `exit(status)`.
    Exited(u8),
    /// Killed by this signal.
    Signaled(i32),
}

fn say(message: impl std::fmt::Display) {
    eprintln!("sampler-run: {message}");
}

/// Exits as the program did: the same status, or the same signal raised on
/// ourselves with its default action and core dumps off.
pub fn mirror(ending: Ending) -> ! {
    match ending {
        Ending::Exited(status) => std::process::exit(i32::from(status)),
        Ending::Signaled(number) => {
            if let Ok(signal) = Signal::try_from(number) {
                use nix::sys::resource::{Resource, getrlimit, setrlimit};
                if let Ok((_, hard)) = getrlimit(Resource::RLIMIT_CORE) {
                    let _ = setrlimit(Resource::RLIMIT_CORE, 0, hard);
                }
                let _ = sys::default_disposition(signal);
                let _ = SigSet::from(signal).thread_unblock();
                let _ = nix::sys::signal::raise(signal);
            }
            // A signal whose default action does not kill.
            std::process::exit(128 + number)
        }
    }
}

/// Where PROGRAM is, as `execvp` would find it.
fn locate(program: &OsStr) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt as _;
    let path = Path::new(program);
    let is_executable = |candidate: &Path| {
        candidate
            .metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.as_encoded_bytes().contains(&b'/') {
        return std::path::absolute(path).ok();
    }
    let search = std::env::var_os("PATH")?;
    std::env::split_paths(&search)
        .map(|dir| dir.join(path))
        .find(|candidate| is_executable(candidate))
        .and_then(|found| std::path::absolute(found).ok())
}

fn command(args: &RunArgs) -> Command {
    let mut command = Command::new(&args.program[0]);
    command.args(&args.program[1..]);
    if let Some(argv0) = &args.argv0 {
        command.arg0(argv0);
    }
    command
}

/// The exit status of a program that could not be started, as a shell's.
fn cannot_start(program: &OsStr, error: &std::io::Error) -> ! {
    say(format_args!(
        "cannot run `{}`: {error}",
        program.to_string_lossy()
    ));
    std::process::exit(if error.kind() == std::io::ErrorKind::NotFound {
        127
    } else {
        126
    })
}

/// Runs the program without sampling: `sampler-run` becomes it.
fn run_unsampled(args: &RunArgs) -> ! {
    let error = command(args).env_remove("SAMPLER_SPARSITY").exec();
    cannot_start(&args.program[0], &error)
}

/// The application's name: `--app`, `SAMPLER_APPLICATION_NAME`, else the
/// program's file name.
pub fn app_name(overrides: &Overrides, program: &OsStr) -> String {
    overrides
        .app
        .clone()
        .or_else(|| {
            std::env::var("SAMPLER_APPLICATION_NAME")
                .ok()
                .filter(|name| !name.is_empty())
        })
        .unwrap_or_else(|| {
            Path::new(program)
                .file_name()
                .map(|name| name.to_string_lossy().into_owned())
                .unwrap_or_default()
        })
}

/// `sampler-run -- PROGRAM ARGS...`.
pub fn run(args: RunArgs) -> ! {
    let app = app_name(&args.overrides, &args.program[0]);
    let dirs = Dirs::find(args.overrides.state_dir.as_deref());
    let config = AppConfig::resolve(&app, &args.overrides, &dirs);
    for warning in &config.warnings {
        say(format_args!("warning: {warning}"));
    }
    let spool = dirs.state.clone().map(Spool::new);
    if args.save.is_none() {
        let consent = match Consent::given(&app, &dirs) {
            Ok(consent) => consent,
            Err(error) => {
                say(format_args!("warning: {error}; running unsampled"));
                false
            }
        };
        if !consent {
            run_unsampled(&args);
        }
        if spool.is_none() {
            say(
                "warning: no state directory (no home directory, no SAMPLER_STATE_DIR); running unsampled",
            );
            run_unsampled(&args);
        }
        if !spool::valid_app_name(&app) {
            say(format_args!(
                "warning: application name `{app}` cannot name a folder; running unsampled"
            ));
            run_unsampled(&args);
        }
    }
    let state = spool
        .as_ref()
        .map(|spool| spool.app_state(&app))
        .unwrap_or_default();
    let sparsity = config
        .sparsity_explicit
        .or(state.sparsity)
        .or(config.sparsity_file)
        .unwrap_or(DEFAULT_SPARSITY);

    let (ending, captured, start_ms, end_ms) = match launch(&args, sparsity, &config) {
        Ok(result) => result,
        Err(Launch::Start(error)) => cannot_start(&args.program[0], &error),
        Err(Launch::Setup(error)) => {
            say(format_args!("warning: {error}; running unsampled"));
            run_unsampled(&args);
        }
    };

    let count = |change: fn(&mut spool::AppState)| {
        if let Some(spool) = &spool
            && spool::valid_app_name(&app)
            && let Err(error) = spool.update_app(&app, change)
        {
            say(format_args!("warning: {error:#}"));
        }
    };
    if captured.text.is_empty() {
        // Died before the runtime wrote, or not instrumented.
        count(|state| state.empty += 1);
        if let Some(dir) = &args.save {
            say(format_args!(
                "`{}` wrote no report (not instrumented, or killed before it could write); nothing saved in {}",
                args.program[0].to_string_lossy(),
                dir.display()
            ));
        }
        mirror(ending);
    }
    if captured.truncated {
        count(|state| state.truncated += 1);
    }
    let id = uuid::Uuid::now_v7().hyphenated().to_string();
    let (exit_status, exit_signal) = match ending {
        Ending::Exited(status) => (status, 0),
        Ending::Signaled(signal) => (0, u8::try_from(signal).unwrap_or(u8::MAX)),
    };
    let outcome = Outcome {
        report_id: id.clone(),
        application_name: app.clone(),
        application_version: config.version.clone(),
        application_release: config.release.clone(),
        executable_path: locate(&args.program[0]).map(|path| path.to_string_lossy().into_owned()),
        instrumentor_version: config.instrumentor_version.clone(),
        build_distribution: config.build_distribution.clone(),
        sparsity,
        exit_status,
        exit_signal,
        start_ms,
        end_ms,
        launcher_version: env!("CARGO_PKG_VERSION").to_owned(),
        truncated: captured.truncated,
        dropped_bytes: captured.dropped_bytes,
    };
    let text = RunFile::compose(&captured.text, &outcome);
    if let Some(dir) = &args.save {
        let path = dir.join(format!("{id}.report"));
        if let Err(error) = spool::write_atomically(&path, &text) {
            say(format_args!("cannot save the report: {error:#}"));
        }
        mirror(ending);
    }
    let Some(spool) = spool else { mirror(ending) };
    let path = match spool.add(&config, &id, &text) {
        Ok(path) => path,
        Err(error) => {
            say(format_args!("cannot spool the report: {error:#}"));
            mirror(ending);
        }
    };
    deliver(&spool, &dirs, &args.overrides, &config, path);
    mirror(ending)
}

/// Runs `work` on a thread for at most `bound`; whether it finished, and
/// its answer.
fn bounded<T: Send + 'static>(
    bound: Duration,
    work: impl FnOnce() -> T + Send + 'static,
) -> Option<T> {
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(work());
    });
    finished.recv_timeout(bound).ok()
}

/// Uploads the new report (then other due ones) for at most the exit-time
/// bound; what is left goes to a detached `sampler-run flush --background`.
fn deliver(spool: &Spool, dirs: &Dirs, overrides: &Overrides, config: &AppConfig, path: PathBuf) {
    let start = Instant::now();
    let state = spool.app_state(&config.app);
    if spool::blocked(config, &state, dirs).is_some() || state.not_before_ms > spool::now_ms() {
        // No upload now: only the flush to disk, within the bound.
        let _ = bounded(config.exit_bound, move || Spool::sync(&path));
        return;
    }
    let (spool_copy, dirs, overrides_copy, app) = (
        spool.clone(),
        dirs.clone(),
        overrides.clone(),
        config.app.clone(),
    );
    let options = FlushOptions {
        due_only: true,
        wait_locked: Duration::ZERO,
        first: Some(path.clone()),
        deadline: Some(start + config.exit_bound),
    };
    let finished = bounded(config.exit_bound, move || {
        let _ = Spool::sync(&path);
        spool::flush(&spool_copy, &dirs, &overrides_copy, Some(&app), &options).unfinished
    });
    if finished != Some(false) {
        background(spool, overrides, &config.app);
    }
}

/// Starts `sampler-run flush --app APP --background`, detached: its own
/// session, no terminal, stdio on /dev/null. Settings given as options
/// reach it through the environment (not the command line, where `ps`
/// would show a token).
fn background(spool: &Spool, overrides: &Overrides, app: &str) {
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    let mut command = Command::new(exe);
    command
        .args(["flush", "--background", "--app", app])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .env("SAMPLER_STATE_DIR", spool.root());
    if let Some(server) = &overrides.server {
        command.env("SAMPLER_SERVER", server);
    }
    if let Some(token) = &overrides.token {
        command.env("SAMPLER_TOKEN", token);
    }
    // Never waited for: it outlives us, and init reaps it.
    let _ = command.spawn();
}

enum Launch {
    /// The program could not be started.
    Start(std::io::Error),
    /// The pipe or the signals could not be set up.
    Setup(String),
}

type Launched = (Ending, crate::report::Captured, u64, u64);

fn launch(args: &RunArgs, sparsity: u32, config: &AppConfig) -> Result<Launched, Launch> {
    let setup =
        |what: &str, error: &dyn std::fmt::Display| Launch::Setup(format!("{what}: {error}"));
    let (reader, writer) = std::io::pipe().map_err(|e| setup("creating the report pipe", &e))?;
    let (notify_reader, notify_writer) =
        std::io::pipe().map_err(|e| setup("creating a pipe", &e))?;
    // The program keeps the write end across exec.
    fcntl(&writer, FcntlArg::F_SETFD(FdFlag::empty()))
        .map_err(|e| setup("passing the report pipe", &e))?;
    let signals = SigSet::from_iter(FORWARDED);
    let inherited = signals
        .thread_swap_mask(SigmaskHow::SIG_BLOCK)
        .map_err(|e| setup("blocking signals", &e))?;
    let start_ms = spool::now_ms();
    let mut command = command(args);
    command
        .env("SAMPLER_SPARSITY", sparsity.to_string())
        .env("SAMPLER_TRACE", config.trace.to_string())
        .env("SAMPLER_REPORT_FD", writer.as_raw_fd().to_string());
    sys::child_signal_mask(&mut command, inherited);
    let spawned = command.spawn();
    drop(writer);
    let mut child = match spawned {
        Ok(child) => child,
        Err(error) => {
            let _ = inherited.thread_set_mask();
            return Err(Launch::Start(error));
        }
    };
    let pid = Pid::from_raw(child.id() as i32);
    // Set once the program has exited and before it is reaped, so that a
    // signal is never sent to a process that reused its pid.
    let exited = Arc::new(Mutex::new(false));
    {
        let exited = exited.clone();
        std::thread::spawn(move || {
            loop {
                let Ok(caught) = sys::wait_signal(&signals) else {
                    return;
                };
                let terminal = caught.from_kernel
                    && matches!(
                        caught.signal,
                        Signal::SIGINT | Signal::SIGQUIT | Signal::SIGWINCH | Signal::SIGHUP
                    );
                // A terminal's signals went to the program's process group
                // already: sending them again would deliver them twice.
                if terminal {
                    continue;
                }
                let exited = exited.lock().unwrap_or_else(|poison| poison.into_inner());
                if !*exited {
                    let _ = kill(pid, caught.signal);
                }
            }
        });
    }
    {
        let exited = exited.clone();
        std::thread::spawn(move || {
            let _ = waitid(Id::Pid(pid), WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT);
            *exited.lock().unwrap_or_else(|poison| poison.into_inner()) = true;
            drop(notify_writer);
        });
    }
    let mut capture = Capture::new(usize::try_from(config.max_report_bytes).unwrap_or(usize::MAX));
    let mut reader = reader;
    let mut buffer = vec![0u8; 64 * 1024];
    let mut report_open = true;
    loop {
        let mut fds = vec![PollFd::new(notify_reader.as_fd(), PollFlags::POLLIN)];
        if report_open {
            fds.push(PollFd::new(reader.as_fd(), PollFlags::POLLIN));
        }
        match poll(&mut fds, PollTimeout::NONE) {
            Ok(_) => {}
            Err(nix::errno::Errno::EINTR) => continue,
            Err(_) => break,
        }
        let program_done = fds[0].any().unwrap_or(true);
        let report_ready = report_open && fds.get(1).and_then(|fd| fd.any()).unwrap_or(false);
        if report_ready && !program_done {
            match reader.read(&mut buffer) {
                Ok(0) => report_open = false,
                Ok(n) => capture.feed(&buffer[..n]),
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => report_open = false,
            }
        }
        if program_done {
            break;
        }
    }
    // The program is gone: take what is in the pipe without waiting for
    // end-of-file (its children may hold the write end), for at most DRAIN.
    if report_open && fcntl(&reader, FcntlArg::F_SETFL(OFlag::O_NONBLOCK)).is_ok() {
        let until = Instant::now() + DRAIN;
        while Instant::now() < until {
            match reader.read(&mut buffer) {
                Ok(0) => break,
                Ok(n) => capture.feed(&buffer[..n]),
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
    }
    let status = loop {
        match child.wait() {
            Ok(status) => break status,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(error) => {
                // Cannot happen after waitid saw it exit; never run it twice.
                say(format_args!("waiting for the program: {error}"));
                break std::process::ExitStatus::from_raw(255 << 8);
            }
        }
    };
    let end_ms = spool::now_ms();
    let ending = match (status.code(), status.signal()) {
        (Some(code), _) => Ending::Exited(u8::try_from(code & 0xff).unwrap_or(u8::MAX)),
        (None, Some(signal)) => Ending::Signaled(signal),
        (None, None) => Ending::Exited(u8::MAX),
    };
    Ok((ending, capture.finish(), start_ms, end_ms))
}
