//! `sampler-run`: see the crate's documentation and README, "Running
//! programs with sampler-run".

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand, ValueEnum};
use sampler_launcher::config::{AppConfig, Consent, Dirs, Overrides};
use sampler_launcher::report::RunFile;
use sampler_launcher::run::{self, RunArgs};
use sampler_launcher::spool::{self, FlushOptions, Spool};
use sampler_launcher::upload::{self, Answer};
use sampler_launcher::wrap;

/// Runs an instrumented program, captures its report and outcome, and
/// delivers them to a collector exactly once (with the user's consent).
#[derive(Debug, Parser)]
#[command(
    name = "sampler-run",
    about = concat!("sampler-run ", env!("CARGO_PKG_VERSION"), ": runs an instrumented program and delivers its report"),
    override_usage = "sampler-run [OPTIONS] -- PROGRAM [ARGS]...\n       sampler-run <COMMAND>",
    args_conflicts_with_subcommands = true,
    disable_version_flag = true
)]
struct Cli {
    #[command(flatten)]
    overrides: Overrides,

    /// Write the run (report and outcome) as one file in DIR instead of
    /// uploading it (needs no consent).
    #[arg(long, value_name = "DIR")]
    save: Option<PathBuf>,

    /// The program's `argv[0]` (default: PROGRAM as given).
    #[arg(long, value_name = "NAME")]
    argv0: Option<OsString>,

    /// The program and its arguments, after `--`.
    #[arg(last = true, value_name = "PROGRAM")]
    program: Vec<OsString>,

    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Answered {
    Yes,
    No,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Show the spool, each application's state and counters.
    Status {
        #[command(flatten)]
        overrides: Overrides,
    },
    /// Upload the spooled reports now (all applications, or --app's).
    Flush {
        #[command(flatten)]
        overrides: Overrides,
        /// Started by a run whose upload outlived the exit-time bound:
        /// detach, honour backoff, wait for the run's lock.
        #[arg(long, hide = true)]
        background: bool,
    },
    /// Upload the run files `--save` wrote in DIR (they stay there).
    Upload {
        #[command(flatten)]
        overrides: Overrides,
        /// Remove each file once the collector has stored it.
        #[arg(long)]
        remove: bool,
        /// The folder of run files.
        dir: PathBuf,
    },
    /// Wrap installed programs: each PROGRAM moves to a `wrapped/` folder
    /// beside it and a script with its mode and owner takes its place,
    /// running it through sampler-run with these settings.
    Install {
        /// The application's name.
        #[arg(long, value_name = "NAME")]
        app: String,
        /// The application's version.
        #[arg(long, value_name = "V")]
        version: String,
        /// The application's release.
        #[arg(long, value_name = "R")]
        release: Option<String>,
        /// The installed programs.
        #[arg(required = true, value_name = "PROGRAM")]
        programs: Vec<PathBuf>,
    },
    /// Undo `install`: put each wrapped PROGRAM back in its wrapper's place.
    Uninstall {
        /// The wrappers `install` wrote.
        #[arg(required = true, value_name = "PROGRAM")]
        programs: Vec<PathBuf>,
    },
    /// Record whether runs may be uploaded (for --app, or for every
    /// application); `no` also empties the spool of the applications
    /// concerned.
    Consent {
        /// yes or no.
        answer: Answered,
        /// Only this application.
        #[arg(long, value_name = "NAME")]
        app: Option<String>,
        /// The state directory (spool).
        #[arg(long, value_name = "DIR")]
        state_dir: Option<PathBuf>,
    },
}

fn say(message: impl std::fmt::Display) {
    eprintln!("sampler-run: {message}");
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        None => {
            if cli.program.is_empty() {
                say("no program given: usage: sampler-run [OPTIONS] -- PROGRAM [ARGS]...");
                return ExitCode::from(2);
            }
            run::run(RunArgs {
                overrides: cli.overrides,
                save: cli.save,
                argv0: cli.argv0,
                program: cli.program,
            })
        }
        Some(Command::Status { overrides }) => {
            let dirs = Dirs::find(overrides.state_dir.as_deref());
            let Some(state) = dirs.state.clone() else {
                say("no state directory: set SAMPLER_STATE_DIR or HOME");
                return ExitCode::FAILURE;
            };
            print!("{}", spool::status(&Spool::new(state), &dirs, &overrides));
            ExitCode::SUCCESS
        }
        Some(Command::Flush {
            overrides,
            background,
        }) => flush(&overrides, background),
        Some(Command::Upload {
            overrides,
            remove,
            dir,
        }) => upload_dir(&overrides, &dir, remove),
        Some(Command::Consent {
            answer,
            app,
            state_dir,
        }) => consent(matches!(answer, Answered::Yes), app.as_deref(), state_dir),
        Some(Command::Install {
            app,
            version,
            release,
            programs,
        }) => {
            let launcher = match std::env::current_exe().and_then(std::fs::canonicalize) {
                Ok(path) => path,
                Err(error) => {
                    say(format!("cannot find sampler-run's own path: {error}"));
                    return ExitCode::FAILURE;
                }
            };
            let wrapper = wrap::Wrapper {
                launcher,
                app,
                version,
                release,
            };
            each_program(&programs, |program| {
                wrap::install(program, &wrapper).map(|wrapped| {
                    format!(
                        "{}: wrapped; the program is now {}",
                        program.display(),
                        wrapped.display()
                    )
                })
            })
        }
        Some(Command::Uninstall { programs }) => each_program(&programs, |program| {
            wrap::uninstall(program).map(|_| format!("{}: unwrapped", program.display()))
        }),
    }
}

/// Applies `action` to each program, saying what became of it; fails when
/// any failed (the others are still done).
fn each_program(
    programs: &[PathBuf],
    action: impl Fn(&std::path::Path) -> Result<String, wrap::WrapError>,
) -> ExitCode {
    let mut failed = false;
    for program in programs {
        match action(program) {
            Ok(done) => println!("{done}"),
            Err(error) => {
                say(error);
                failed = true;
            }
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

fn flush(overrides: &Overrides, background: bool) -> ExitCode {
    if background {
        // Out of the run's session: no terminal, no hang-up.
        let _ = nix::unistd::setsid();
    }
    let dirs = Dirs::find(overrides.state_dir.as_deref());
    let Some(state) = dirs.state.clone() else {
        say("no state directory: set SAMPLER_STATE_DIR or HOME");
        return ExitCode::FAILURE;
    };
    let options = FlushOptions {
        due_only: background,
        wait_locked: if background {
            Duration::from_secs(30)
        } else {
            Duration::ZERO
        },
        first: None,
        deadline: None,
    };
    let summary = spool::flush(
        &Spool::new(state),
        &dirs,
        overrides,
        overrides.app.as_deref(),
        &options,
    );
    for note in &summary.notes {
        say(note);
    }
    println!(
        "sent {}, refused {}, failed {}, waiting {}",
        summary.sent, summary.rejected, summary.failed, summary.waiting
    );
    if summary.failed > 0 || summary.rejected > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

fn upload_dir(overrides: &Overrides, dir: &std::path::Path, remove: bool) -> ExitCode {
    let dirs = Dirs::find(overrides.state_dir.as_deref());
    let mut files: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(entries) => entries
            .flatten()
            .map(|entry| entry.path())
            .filter(|path| {
                path.extension().is_some_and(|ext| ext == "report")
                    && !path
                        .file_name()
                        .is_some_and(|name| name.to_string_lossy().starts_with('.'))
            })
            .collect(),
        Err(error) => {
            say(format_args!("{}: {error}", dir.display()));
            return ExitCode::FAILURE;
        }
    };
    files.sort();
    let mut failed = 0;
    for path in &files {
        let run = match std::fs::read(path)
            .map_err(|error| error.to_string())
            .and_then(|bytes| RunFile::parse(&bytes))
        {
            Ok(run) => run,
            Err(error) => {
                say(format_args!("{}: {error}", path.display()));
                failed += 1;
                continue;
            }
        };
        let config = AppConfig::resolve(&run.outcome.application_name, overrides, &dirs);
        let answer = upload::client(&config)
            .map(|client| upload::send(&client, &config, &run))
            .unwrap_or_else(Answer::Failed);
        match answer {
            Answer::Stored { run_id, .. } => {
                println!("{}: stored as run {run_id}", path.display());
                if remove && let Err(error) = std::fs::remove_file(path) {
                    say(format_args!("{}: {error}", path.display()));
                }
            }
            Answer::Refused { status, reason }
            | Answer::Unauthorized { status, reason }
            | Answer::Later { status, reason, .. } => {
                say(format_args!(
                    "{}: the collector answered {status}: {reason}",
                    path.display()
                ));
                failed += 1;
            }
            Answer::Failed(error) => {
                say(format_args!("{}: {error}", path.display()));
                failed += 1;
            }
        }
    }
    if failed > 0 {
        say(format_args!(
            "{failed} of {} file(s) not stored",
            files.len()
        ));
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

fn consent(yes: bool, app: Option<&str>, state_dir: Option<PathBuf>) -> ExitCode {
    let dirs = Dirs::find(state_dir.as_deref());
    match Consent::record(&dirs, app, yes) {
        Ok(path) => println!(
            "{} {} (in {})",
            if yes {
                "uploads allowed for"
            } else {
                "no uploads for"
            },
            app.map_or_else(|| "every application".to_owned(), |app| format!("`{app}`")),
            path.display()
        ),
        Err(error) => {
            say(format_args!("{error:#}"));
            return ExitCode::FAILURE;
        }
    }
    if !yes && let Some(state) = dirs.state.clone() {
        let spool = Spool::new(state);
        let mut apps: Vec<String> = spool.entries(app).into_iter().map(|e| e.app).collect();
        apps.sort();
        apps.dedup();
        for app in apps {
            if !Consent::given(&app, &dirs).unwrap_or(false) {
                let removed = spool.purge(&app);
                if removed > 0 {
                    println!("removed {removed} spooled report(s) of `{app}`");
                }
            }
        }
    }
    ExitCode::SUCCESS
}
