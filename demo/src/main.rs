//! `sampler-demo`: the whole loop of cooperative bug isolation on the
//! example that ships with the project (`examples/`): build it with
//! `sampler-cc`, start a collector on a temporary SQLite database,
//! register the build, run the program a few thousand times through
//! `sampler-run` with generated inputs, then print the predicates that
//! predict its failures and its crash groups, and serve the dashboard.
//!
//! It uses the tools beside its own executable (`cargo build --release`
//! puts them all in `target/release`), and the collector and the analysis
//! as libraries.

mod example;

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::Context as _;
use clap::Parser;
use rand::SeedableRng;
use sampler_analysis::collector_db::Selection;
use sampler_analysis::output::{TableStyle, print_table};
use sampler_collector::builds::{BuildUpload, upload_build};
use sampler_collector::crashes::Frame;
use sampler_collector::limits::Limits;
use sampler_collector::rankings::{RankingQuery, Rankings};
use sampler_collector::server;
use sampler_collector::store::{DatabaseTarget, Store};
use sampler_collector::tokens::{self, Scope};
use sqlx::Row;

use crate::example::{Expect, Input};

/// Builds the example with sampler-cc, runs it many times through
/// sampler-run against a collector on loopback, prints the predicates that
/// predict its failures, and serves the dashboard.
///
/// It looks for `sampler-cc` and `sampler-run` beside its own executable
/// (`cargo build --release` puts them all in `target/release`); sampler-cc
/// finds its runtime as its `--help` says. Everything it writes goes to
/// `--dir` (default: a temporary folder, removed when it exits).
#[derive(Debug, Parser)]
#[command(name = "sampler-demo", version)]
struct Cli {
    /// How many times to run the example.
    #[arg(long, default_value_t = 3000, value_name = "N")]
    runs: usize,

    /// Sample one event in N on average.
    #[arg(long, default_value_t = 100, value_name = "N")]
    sparsity: u32,

    /// Seed of the generated inputs and of each run's sampling, so that a
    /// demo can be repeated exactly.
    #[arg(long, default_value_t = 1, value_name = "SEED")]
    seed: u64,

    /// Runs at a time (default: one per core).
    #[arg(long, value_name = "N")]
    jobs: Option<usize>,

    /// Where the collector listens (another free port if this one is
    /// taken).
    #[arg(long, default_value = "127.0.0.1:7450", value_name = "ADDR")]
    listen: SocketAddr,

    /// Keep everything (the program, the runs' database, the spool) in this
    /// folder instead of a temporary one.
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,

    /// Stop once the results are printed instead of serving the dashboard
    /// until interrupted.
    #[arg(long)]
    no_serve: bool,

    /// Also write the ranking (as `sampler-analyze --format json` prints
    /// it) to this file.
    #[arg(long, value_name = "FILE")]
    report_json: Option<PathBuf>,
}

const APP: &str = example::NAME;
const VERSION: &str = "1.0";

/// What the runs did.
#[derive(Debug, Default)]
struct Tally {
    success: usize,
    error: usize,
    crash: usize,
    /// Runs whose outcome was not what their input should give.
    unexpected: usize,
}

fn tool(bin: &Path, name: &str) -> anyhow::Result<PathBuf> {
    let path = bin.join(name);
    anyhow::ensure!(
        path.exists(),
        "{name} is not beside sampler-demo in {}: build the whole workspace (`cargo build --release`)",
        bin.display()
    );
    Ok(path)
}

/// How each run is launched.
#[derive(Debug)]
struct Launch {
    sampler_run: PathBuf,
    /// Where the program is.
    dir: PathBuf,
    /// sampler-run's options.
    common: Vec<String>,
    /// Where sampler-run keeps its consent and spool.
    env: Vec<(&'static str, PathBuf)>,
}

/// Runs the program once through `sampler-run`; its outcome.
fn run_once(launch: &Launch, seed: u64, input: &Input) -> anyhow::Result<Expect> {
    let mut child = Command::new(&launch.sampler_run)
        .args(&launch.common)
        .arg("--")
        .arg(format!("./{}", example::NAME))
        .args(&input.args)
        .current_dir(&launch.dir)
        .envs(launch.env.iter().map(|(key, value)| (key, value)))
        .env("SAMPLER_SEED", seed.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .context("starting sampler-run")?;
    // A program that dies early closes its end: the rest of the input is
    // of no interest.
    let _ = child
        .stdin
        .take()
        .expect("a piped stdin")
        .write_all(&input.stdin);
    let status = child.wait()?;
    Ok(match status.code() {
        Some(0) => Expect::Success,
        Some(_) => Expect::WrongExit,
        None => Expect::Crash,
    })
}

/// Runs the example once per input, `jobs` at a time, with a progress bar.
fn run_all(launch: &Launch, seed: u64, inputs: &[Input], jobs: usize) -> anyhow::Result<Tally> {
    let bar = indicatif::ProgressBar::new(inputs.len() as u64).with_style(
        indicatif::ProgressStyle::with_template(
            "  {wide_bar} {pos}/{len} runs ({per_sec}, {eta} left)",
        )
        .expect("a valid template"),
    );
    let next = AtomicUsize::new(0);
    let outcomes: Vec<anyhow::Result<Vec<(usize, Expect)>>> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..jobs)
            .map(|_| {
                scope.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let index = next.fetch_add(1, Ordering::Relaxed);
                        let Some(input) = inputs.get(index) else {
                            return Ok(done);
                        };
                        let run_seed = seed.wrapping_mul(1_000_003).wrapping_add(index as u64);
                        done.push((index, run_once(launch, run_seed, input)?));
                        bar.inc(1);
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|worker| worker.join().expect("a run thread"))
            .collect()
    });
    bar.finish_and_clear();
    let mut tally = Tally::default();
    for outcome in outcomes {
        for (index, got) in outcome? {
            match got {
                Expect::Success => tally.success += 1,
                Expect::WrongExit => tally.error += 1,
                Expect::Crash => tally.crash += 1,
            }
            tally.unexpected += usize::from(got != inputs[index].expect);
        }
    }
    Ok(tally)
}

/// Prints each crash group with its symbolized frames and its own first
/// predictor.
async fn print_crash_groups(
    store: &Store,
    application_id: i64,
    rankings: &Rankings,
) -> anyhow::Result<()> {
    let bold = console::Style::new().bold();
    let dim = console::Style::new().dim();
    let groups = sqlx::query(
        "SELECT id, signature, runs, frames_json FROM crash_groups WHERE application_id = $1 \
         ORDER BY runs DESC, id",
    )
    .bind(application_id)
    .fetch_all(&store.pool)
    .await?;
    println!(
        "\n{}",
        bold.apply_to("Crash groups (by the functions on top of the stack)")
    );
    if groups.is_empty() {
        println!("  none");
    }
    for group in &groups {
        let id: i64 = group.try_get(0)?;
        let signature: String = group.try_get(1)?;
        let runs: i64 = group.try_get(2)?;
        let frames: Vec<Frame> = serde_json::from_str(&group.try_get::<String, _>(3)?)?;
        println!("  #{id} {signature}: {runs} runs");
        let module = |frame: &Frame| {
            frame
                .module
                .rsplit('/')
                .next()
                .unwrap_or(&frame.module)
                .to_owned()
        };
        let mut index = 0;
        while index < frames.len() {
            let frame = &frames[index];
            // A library's unnamed frames (no symbols) in a row, as one line.
            let unnamed = frames[index..]
                .iter()
                .take_while(|next| next.function.is_none() && next.module == frame.module)
                .count();
            if unnamed > 1 {
                println!(
                    "    {index:>2} {}",
                    dim.apply_to(format!("… {unnamed} frames in {}", module(frame)))
                );
                index += unnamed;
                continue;
            }
            let place = match (&frame.file, frame.line) {
                (Some(file), Some(line)) => {
                    format!("{}:{line}", file.rsplit('/').next().unwrap_or(file))
                }
                _ => module(frame),
            };
            println!(
                "    {index:>2} {:<24} {}",
                frame.function.as_deref().unwrap_or("??"),
                dim.apply_to(place)
            );
            index += 1;
        }
        let spec = RankingQuery {
            crash_group: Some(id),
            ..RankingQuery::default()
        }
        .spec()
        .map_err(|refusal| anyhow::anyhow!(refusal.message))?;
        let own = rankings
            .get(store, application_id, APP, &spec, &Selection::default())
            .await?;
        match own.report.elimination.first() {
            Some(first) => println!(
                "    its first predictor: {}:{} {}   {}",
                first.file.rsplit('/').next().unwrap_or(&first.file),
                first.line,
                first.predicate,
                dim.apply_to(first.source.as_deref().unwrap_or(""))
            ),
            None => println!("    no predictor of its own"),
        }
    }
    Ok(())
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    let bold = console::Style::new().bold();
    let exe = std::env::current_exe().context("finding sampler-demo's own path")?;
    let bin = exe.parent().context("sampler-demo's folder")?;
    let (sampler_cc, sampler_run) = (tool(bin, "sampler-cc")?, tool(bin, "sampler-run")?);
    let temporary;
    let dir = match &cli.dir {
        Some(dir) => {
            std::fs::create_dir_all(dir)?;
            dir.canonicalize()?
        }
        None => {
            temporary = tempfile::Builder::new().prefix("sampler-demo-").tempdir()?;
            temporary.path().to_owned()
        }
    };

    // 1. The program, built as a user would build theirs.
    let source = format!("{}.c", example::NAME);
    std::fs::write(dir.join(&source), example::SOURCE)?;
    println!(
        "{} {} with sampler-cc (schemes branches and returns, sampled) in {}",
        bold.apply_to("Building"),
        source,
        dir.display()
    );
    let built = Command::new(&sampler_cc)
        .args([
            "-g",
            "-O2",
            "-fsampler-strict",
            &source,
            "-o",
            example::NAME,
        ])
        .current_dir(&dir)
        .status()
        .context("running sampler-cc")?;
    anyhow::ensure!(built.success(), "sampler-cc failed ({built})");

    // 2. A collector on loopback, with the build registered.
    let store = Store::open(&DatabaseTarget::SqliteDir(dir.join("data")), 8).await?;
    let ingest = tokens::create(&store, APP, Scope::Ingest).await?;
    let read = tokens::create(&store, APP, Scope::Read).await?;
    let listener = match tokio::net::TcpListener::bind(cli.listen).await {
        Ok(listener) => listener,
        Err(error) => {
            eprintln!(
                "sampler-demo: cannot listen on {}: {error}; taking a free port",
                cli.listen
            );
            tokio::net::TcpListener::bind((cli.listen.ip(), 0)).await?
        }
    };
    let running = server::start(
        store.clone(),
        Limits::default(),
        dir.join("incoming"),
        listener,
    )
    .await?;
    let url = format!("http://{}", running.address);
    let binary = dir.join(example::NAME);
    upload_build(
        &url,
        &ingest,
        &BuildUpload {
            app: APP,
            version: VERSION,
            files: std::slice::from_ref(&binary),
            sources: Some(&dir),
            ..BuildUpload::default()
        },
    )
    .await?;
    println!(
        "{} on {url} (SQLite in {}); build {VERSION} registered with its site tables, debug information and source",
        bold.apply_to("Collector"),
        dir.join("data").display()
    );

    // 3. Many runs through sampler-run, each uploaded as it ends.
    let env_dirs = [
        ("XDG_CONFIG_HOME", dir.join("config")),
        ("SAMPLER_STATE_DIR", dir.join("state")),
    ];
    let consent = Command::new(&sampler_run)
        .args(["consent", "yes", "--app", APP])
        .envs(env_dirs.iter().map(|(k, v)| (k, v)))
        .output()?;
    anyhow::ensure!(
        consent.status.success(),
        "sampler-run consent: {}",
        String::from_utf8_lossy(&consent.stderr)
    );
    let mut rng = rand::rngs::StdRng::seed_from_u64(cli.seed);
    let inputs: Vec<Input> = (0..cli.runs).map(|_| example::input(&mut rng)).collect();
    let jobs = cli
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, usize::from))
        .max(1);
    println!(
        "{} {} {} times through sampler-run at sparsity {} with generated inputs ({jobs} at a time)",
        bold.apply_to("Running"),
        example::NAME,
        cli.runs,
        cli.sparsity
    );
    let common: Vec<String> = [
        "--app",
        APP,
        "--version",
        VERSION,
        "--server",
        &url,
        "--token",
        &ingest,
        "--sparsity",
        &cli.sparsity.to_string(),
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    let tally = {
        let launch = Launch {
            sampler_run: sampler_run.clone(),
            dir: dir.clone(),
            common,
            env: env_dirs.to_vec(),
        };
        let seed = cli.seed;
        // Blocking work, off the threads that serve the collector.
        tokio::task::spawn_blocking(move || run_all(&launch, seed, &inputs, jobs)).await??
    };
    // Whatever a run could not send within its exit-time bound.
    let flushed = Command::new(&sampler_run)
        .args(["flush", "--app", APP])
        .envs(env_dirs.iter().map(|(k, v)| (k, v)))
        .output()?;
    anyhow::ensure!(
        flushed.status.success(),
        "sampler-run flush: {}",
        String::from_utf8_lossy(&flushed.stderr)
    );
    let stored: i64 = sqlx::query("SELECT COUNT(*) FROM runs")
        .fetch_one(&store.pool)
        .await?
        .try_get(0)?;
    println!(
        "  {} runs: {} successful, {} exited with a non-zero status, {} crashed; {stored} stored by the collector",
        cli.runs, tally.success, tally.error, tally.crash
    );
    if tally.unexpected > 0 {
        eprintln!(
            "sampler-demo: {} runs did not do what their input should make them do",
            tally.unexpected
        );
    }

    // 4. The analysis: every failure (crashes and non-zero exit statuses).
    let application_id = store
        .application_id(APP)
        .await?
        .context("the application was not created")?;
    let rankings = Rankings::default();
    let spec = RankingQuery {
        fail_on_exit: true,
        ..RankingQuery::default()
    }
    .spec()
    .map_err(|refusal| anyhow::anyhow!(refusal.message))?;
    let view = rankings
        .get(&store, application_id, APP, &spec, &Selection::default())
        .await?;
    println!(
        "\n{}",
        bold.apply_to(
            "What predicts failure (a crash or a non-zero exit status), as `sampler-analyze --fail-on-exit` ranks it:"
        )
    );
    let stdout = std::io::stdout();
    print_table(&mut stdout.lock(), &view.report, TableStyle::for_stdout(0))?;
    println!(
        "{}",
        console::Style::new().dim().apply_to(
            "Each predictor explains the failing runs where it was seen to hold; sampling sees only some \
             executions, so the failing runs where no predictor was seen are left over."
        )
    );
    if let Some(path) = &cli.report_json {
        std::fs::write(path, serde_json::to_vec_pretty(&view.report)?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    print_crash_groups(&store, application_id, &rankings).await?;

    // 5. The dashboard.
    println!(
        "\n{} {url}/dashboard?failure=exit  (sign in with the read token {read})",
        bold.apply_to("Dashboard:")
    );
    if cli.no_serve {
        running.shutdown().await?;
        return Ok(());
    }
    println!(
        "Serving until interrupted (Ctrl-C); the data is in {}.",
        dir.display()
    );
    tokio::signal::ctrl_c().await?;
    running.shutdown().await?;
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    match runtime.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("sampler-demo: {error:#}");
            ExitCode::FAILURE
        }
    }
}
