//! Sustained uploads to a real `sampler-collector serve` (the release
//! binary) over loopback:
//!
//! ```text
//! cargo bench -p sampler-collector --bench uploads -- \
//!     [--uploads N] [--connections C] [--database postgres://...] [--server-arg=--batch=256 ...]
//! ```
//!
//! Reports of a sampled mid-sized program (5,000 sites over 8 units and
//! three schemes, one run in ten a crash with its backtrace and modules)
//! are generated and gzip-compressed before the clock starts; each upload
//! sends one of them under a new `Sampler-Report-Id` from one of C
//! keep-alive connections. Prints throughput, latency percentiles, errors
//! by status, the server's memory every few thousand uploads, its CPU
//! time and the database's size, as one table.

#[path = "../tests/it/load.rs"]
mod load;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::Parser;
use sqlx::{Connection, Executor, Row};

use load::{Answer, ServerProcess, Shape};

#[derive(Debug, Parser)]
#[command(about = "Sustained uploads to a real sampler-collector server")]
struct Args {
    /// Uploads to send.
    #[arg(long, default_value_t = 100_000)]
    uploads: usize,

    /// Concurrent keep-alive connections.
    #[arg(long, default_value_t = 32)]
    connections: usize,

    /// A PostgreSQL server (`postgres://user:password@host/db`) on which a
    /// fresh database is created and dropped; SQLite in a temporary
    /// directory when not given.
    #[arg(long)]
    database: Option<String>,

    /// Distinct reports generated; uploads cycle through them.
    #[arg(long, default_value_t = 2000)]
    distinct: usize,

    /// Sites per report.
    #[arg(long, default_value_t = 5000)]
    sites: usize,

    /// Sample the server's memory every this many uploads.
    #[arg(long, default_value_t = 5000)]
    every: usize,

    /// Keep the data directory (SQLite) or the database (PostgreSQL).
    #[arg(long)]
    keep: bool,

    /// The server to run instead of this build's, e.g. another build's
    /// copy, to compare the two.
    #[arg(long, value_name = "PATH")]
    server_binary: Option<PathBuf>,

    /// More arguments for `serve` (`--server-arg=--batch=256`).
    #[arg(long = "server-arg", allow_hyphen_values = true)]
    server_args: Vec<String>,

    /// Passed by `cargo bench`. Without it (`cargo test --benches`), a
    /// smoke run: 300 uploads of 20 reports at most.
    #[arg(long, hide = true)]
    bench: bool,
}

/// The server's state after some uploads.
#[derive(Debug, Clone, Copy)]
struct Sample {
    uploads: usize,
    at: Duration,
    rss_kib: u64,
}

/// What the connections share.
#[derive(Debug)]
struct Shared {
    url: String,
    token: String,
    reports: Vec<load::Prepared>,
    report_ids: Vec<String>,
    server_pid: u32,
    started: Instant,
    every: usize,
    next: AtomicUsize,
    done: AtomicUsize,
    samples: Mutex<Vec<Sample>>,
}

/// What one connection saw.
#[derive(Debug, Default)]
struct Seen {
    latencies_us: Vec<u32>,
    errors: BTreeMap<String, usize>,
}

/// Where the data is, and how to clean it up.
#[derive(Debug)]
enum Database {
    Sqlite(tempfile::TempDir),
    Postgres { admin: String, name: String },
}

impl Database {
    async fn create(url: Option<&str>) -> Self {
        match url {
            None => Self::Sqlite(tempfile::tempdir().unwrap()),
            Some(admin) => {
                let name = format!("sampler_bench_{}", uuid::Uuid::new_v4().simple());
                let mut connection = sqlx::PgConnection::connect(admin)
                    .await
                    .expect("connecting to PostgreSQL");
                connection
                    .execute(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
                    .await
                    .expect("creating the benchmark's database");
                Self::Postgres {
                    admin: admin.to_owned(),
                    name,
                }
            }
        }
    }

    fn url(&self) -> Option<String> {
        match self {
            Self::Sqlite(_) => None,
            Self::Postgres { admin, name } => {
                let (prefix, _) = admin.rsplit_once('/').expect("a URL with a database name");
                Some(format!("{prefix}/{name}"))
            }
        }
    }

    fn args(&self) -> Vec<String> {
        match self {
            Self::Sqlite(dir) => vec!["--data".into(), dir.path().display().to_string()],
            Self::Postgres { .. } => vec!["--database".into(), self.url().unwrap()],
        }
    }

    fn describe(&self) -> String {
        match self {
            Self::Sqlite(_) => "SQLite (WAL, synchronous=FULL)".to_owned(),
            Self::Postgres { .. } => "PostgreSQL (fsync on)".to_owned(),
        }
    }

    fn sqlite_file(&self) -> Option<PathBuf> {
        match self {
            Self::Sqlite(dir) => Some(dir.path().join("collector.sqlite")),
            Self::Postgres { .. } => None,
        }
    }

    /// Runs stored, and the database's size in bytes.
    async fn measure(&self) -> (i64, u64) {
        match self {
            Self::Sqlite(dir) => {
                let file = self.sqlite_file().unwrap();
                let mut connection = sqlx::SqliteConnection::connect(&format!(
                    "sqlite://{}?mode=ro",
                    file.display()
                ))
                .await
                .unwrap();
                let runs: i64 = connection
                    .fetch_one("SELECT COUNT(*) FROM runs")
                    .await
                    .unwrap()
                    .get(0);
                connection.close().await.unwrap();
                (runs, directory_size(dir.path()))
            }
            Self::Postgres { .. } => {
                let mut connection = sqlx::PgConnection::connect(&self.url().unwrap())
                    .await
                    .unwrap();
                let row = connection
                    .fetch_one(
                        "SELECT (SELECT COUNT(*) FROM runs), pg_database_size(current_database())",
                    )
                    .await
                    .unwrap();
                let (runs, size): (i64, i64) = (row.get(0), row.get(1));
                connection.close().await.unwrap();
                (runs, size as u64)
            }
        }
    }

    async fn remove(self, keep: bool) {
        match self {
            Self::Sqlite(dir) if keep => eprintln!("kept {}", dir.keep().display()),
            Self::Sqlite(dir) => drop(dir),
            Self::Postgres { name, .. } if keep => eprintln!("kept database {name}"),
            Self::Postgres { admin, name } => {
                let mut connection = sqlx::PgConnection::connect(&admin).await.unwrap();
                connection
                    .execute(sqlx::AssertSqlSafe(format!("DROP DATABASE {name}")))
                    .await
                    .unwrap();
            }
        }
    }
}

/// The bytes of every file under `dir`.
fn directory_size(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| {
            let entry = entry.unwrap();
            let metadata = entry.metadata().unwrap();
            if metadata.is_dir() {
                directory_size(&entry.path())
            } else {
                metadata.len()
            }
        })
        .sum()
}

/// The writer's batches from the server's `/metrics`: how many, and the
/// seconds they took in the database in all.
async fn batches(url: &str) -> Option<(f64, f64)> {
    let text = reqwest::get(format!("{url}/metrics"))
        .await
        .ok()?
        .text()
        .await
        .ok()?;
    let value = |name: &str| {
        text.lines().find_map(|line| {
            line.strip_prefix(name)?
                .strip_prefix(' ')?
                .parse::<f64>()
                .ok()
        })
    };
    Some((
        value("sampler_collector_database_batch_seconds_count")?,
        value("sampler_collector_database_batch_seconds_sum")?,
    ))
}

/// Clock ticks per second (`getconf CLK_TCK`, 100 when unknown).
fn clock_ticks() -> f64 {
    std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|output| String::from_utf8(output.stdout).ok()?.trim().parse().ok())
        .unwrap_or(100.0)
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / f64::from(1 << 20)
}

fn percentile(sorted: &[u32], p: f64) -> f64 {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    f64::from(sorted[rank.clamp(1, sorted.len()) - 1]) / 1000.0
}

async fn connection(shared: Arc<Shared>) -> Seen {
    let client = load::client();
    let mut seen = Seen::default();
    loop {
        let i = shared.next.fetch_add(1, Ordering::Relaxed);
        let Some(report_id) = shared.report_ids.get(i) else {
            return seen;
        };
        let report = &shared.reports[i % shared.reports.len()];
        let sent = Instant::now();
        let answer = load::send(&client, &shared.url, &shared.token, report, report_id).await;
        let latency = sent.elapsed();
        seen.latencies_us
            .push(u32::try_from(latency.as_micros()).unwrap_or(u32::MAX));
        match answer {
            Answer::Stored(_) => {}
            Answer::Refused(status, body) => {
                *seen
                    .errors
                    .entry(format!("{status} {}", body.trim()))
                    .or_default() += 1;
            }
            Answer::Lost(error) => *seen.errors.entry(error).or_default() += 1,
        }
        let done = shared.done.fetch_add(1, Ordering::Relaxed) + 1;
        if done.is_multiple_of(shared.every) {
            let sample = Sample {
                uploads: done,
                at: shared.started.elapsed(),
                rss_kib: load::rss_kib(shared.server_pid).unwrap_or(0),
            };
            shared.samples.lock().unwrap().push(sample);
        }
    }
}

async fn run(args: Args) {
    let binary = args
        .server_binary
        .as_deref()
        .unwrap_or(Path::new(env!("CARGO_BIN_EXE_sampler-collector")));
    let database = Database::create(args.database.as_deref()).await;
    let ingest = load::token(binary, &database.args(), "ingest");

    let generating = Instant::now();
    let shape = Shape {
        sites: args.sites,
        ..Shape::REALISTIC
    };
    let reports = load::reports(1, args.distinct.max(1), &shape);
    let report_ids: Vec<String> = (0..args.uploads)
        .map(|_| uuid::Uuid::new_v4().to_string())
        .collect();
    let body_bytes: usize = reports.iter().map(|report| report.body.len()).sum();
    let text_bytes: usize = reports
        .iter()
        .flat_map(|report| &report.parts)
        .map(|part| part.text.len())
        .sum();
    let crashes = reports
        .iter()
        .filter(|report| report.exit_signal != 0)
        .count();
    eprintln!(
        "generated {} reports in {:.1?}: {:.1} KiB of text, {:.1} KiB sent each on average; {crashes} crashes",
        reports.len(),
        generating.elapsed(),
        text_bytes as f64 / reports.len() as f64 / 1024.0,
        body_bytes as f64 / reports.len() as f64 / 1024.0,
    );

    let log = std::env::temp_dir().join(format!("sampler-bench-{}.log", std::process::id()));
    let mut serve_args = database.args();
    serve_args.extend(["--token-rate", "1000000", "--token-burst", "1000000"].map(str::to_owned));
    serve_args.extend(args.server_args.iter().cloned());
    let mut server = ServerProcess::start(binary, &serve_args, &log);
    let url = server.url.clone();
    let ticks = clock_ticks();
    let rss_start = server.rss_kib().unwrap_or(0);
    let cpu_start = server.cpu_ticks().unwrap_or(0);
    let own_cpu_start = load::cpu_ticks("/proc/self/stat").unwrap_or(0);
    eprintln!(
        "sending {} uploads over {} connections to {url} ({})",
        args.uploads,
        args.connections,
        database.describe()
    );

    let started = Instant::now();
    let shared = Arc::new(Shared {
        url: url.clone(),
        token: ingest,
        reports,
        report_ids,
        server_pid: server.pid,
        started,
        every: args.every.max(1),
        next: AtomicUsize::new(0),
        done: AtomicUsize::new(0),
        samples: Mutex::new(vec![Sample {
            uploads: 0,
            at: Duration::ZERO,
            rss_kib: rss_start,
        }]),
    });
    let tasks: Vec<_> = (0..args.connections.max(1))
        .map(|_| tokio::spawn(connection(shared.clone())))
        .collect();
    let mut latencies = Vec::with_capacity(args.uploads);
    let mut errors: BTreeMap<String, usize> = BTreeMap::new();
    for task in tasks {
        let seen = task.await.unwrap();
        latencies.extend(seen.latencies_us);
        for (error, count) in seen.errors {
            *errors.entry(error).or_default() += count;
        }
    }
    let elapsed = started.elapsed();
    let rss_end = server.rss_kib().unwrap_or(0);
    let server_cpu = (server.cpu_ticks().unwrap_or(0) - cpu_start) as f64 / ticks;
    let own_cpu = (load::cpu_ticks("/proc/self/stat").unwrap_or(0) - own_cpu_start) as f64 / ticks;
    let (batch_count, batch_seconds) = batches(&url).await.unwrap_or((0.0, 0.0));
    let mut samples = shared.samples.lock().unwrap().clone();
    if samples
        .last()
        .is_none_or(|last| last.uploads != args.uploads)
    {
        samples.push(Sample {
            uploads: args.uploads,
            at: elapsed,
            rss_kib: rss_end,
        });
    }
    server.terminate();
    let reports = &shared.reports;
    let (runs, size) = database.measure().await;
    latencies.sort_unstable();

    let rate = args.uploads as f64 / elapsed.as_secs_f64();
    let middle = samples[samples.len() / 2];
    let peak = samples
        .iter()
        .map(|sample| sample.rss_kib)
        .max()
        .unwrap_or(0);
    let error_text = if errors.is_empty() {
        "none".to_owned()
    } else {
        errors
            .iter()
            .map(|(error, count)| format!("{count} × {error}"))
            .collect::<Vec<_>>()
            .join("; ")
    };
    let mut rows: Vec<(&str, String)> = vec![
        ("database", database.describe()),
        (
            "uploads",
            format!(
                "{} over {} keep-alive connections; {} distinct reports, {:.1} KiB sent, {:.1} KiB of text each",
                args.uploads,
                args.connections,
                reports.len(),
                body_bytes as f64 / reports.len() as f64 / 1024.0,
                text_bytes as f64 / reports.len() as f64 / 1024.0,
            ),
        ),
        (
            "server arguments",
            if args.server_args.is_empty() {
                "defaults".to_owned()
            } else {
                args.server_args.join(" ")
            },
        ),
        ("server", binary.display().to_string()),
        ("elapsed", format!("{:.1} s", elapsed.as_secs_f64())),
        ("uploads/s", format!("{rate:.0}")),
        (
            "latency p50 / p99 / max",
            format!(
                "{:.1} / {:.1} / {:.1} ms",
                percentile(&latencies, 50.0),
                percentile(&latencies, 99.0),
                percentile(&latencies, 100.0)
            ),
        ),
        ("errors", error_text),
        (
            "runs stored",
            format!(
                "{runs}{}",
                if runs as usize == args.uploads {
                    ""
                } else {
                    " (MISSING RUNS)"
                }
            ),
        ),
        (
            "server CPU",
            format!(
                "{server_cpu:.1} s ({:.2} cores, {:.0} µs per upload)",
                server_cpu / elapsed.as_secs_f64(),
                server_cpu * 1e6 / args.uploads as f64
            ),
        ),
        (
            "writer batches",
            format!(
                "{batch_count:.0}: {:.1} runs and {:.1} ms each on average, busy {:.0}% of the time",
                args.uploads as f64 / batch_count.max(1.0),
                batch_seconds * 1e3 / batch_count.max(1.0),
                100.0 * batch_seconds / elapsed.as_secs_f64()
            ),
        ),
        (
            "load generator CPU",
            format!(
                "{own_cpu:.1} s ({:.2} cores)",
                own_cpu / elapsed.as_secs_f64()
            ),
        ),
        (
            "server RSS start / middle / end / peak",
            format!(
                "{:.0} / {:.0} / {:.0} / {:.0} MiB",
                mib(rss_start * 1024),
                mib(middle.rss_kib * 1024),
                mib(rss_end * 1024),
                mib(peak * 1024)
            ),
        ),
        (
            "database size",
            format!(
                "{:.0} MiB ({:.1} KiB per run)",
                mib(size),
                size as f64 / runs.max(1) as f64 / 1024.0
            ),
        ),
    ];
    rows.push((
        "cores",
        std::thread::available_parallelism()
            .map_or(0, usize::from)
            .to_string(),
    ));
    // Every `every` uploads: the rate since the previous sample and the
    // server's memory, to see whether either drifts as the database grows.
    let every = format!("every {} uploads", args.every.max(1));
    let rates: Vec<String> = samples
        .windows(2)
        .map(|pair| {
            let (before, after) = (pair[0], pair[1]);
            let rate = (after.uploads - before.uploads) as f64
                / (after.at - before.at).as_secs_f64().max(1e-9);
            format!("{rate:.0}")
        })
        .collect();
    let memory: Vec<String> = samples
        .iter()
        .map(|sample| format!("{:.0}", mib(sample.rss_kib * 1024)))
        .collect();
    let rates_row = format!("uploads/s, {every}");
    let memory_row = format!("server RSS (MiB) at the start and {every}");
    rows.push((&rates_row, rates.join(" ")));
    rows.push((&memory_row, memory.join(" ")));

    println!();
    println!("| collector: sustained uploads | |");
    println!("|---|---|");
    for (name, value) in &rows {
        println!("| {name} | {value} |");
    }
    database.remove(args.keep).await;
    if args.keep {
        eprintln!("kept the server's log {}", log.display());
    } else {
        let _ = std::fs::remove_file(&log);
    }
    if !errors.is_empty() || runs as usize != args.uploads {
        std::process::exit(1);
    }
}

fn main() {
    let mut args = Args::parse();
    if !args.bench {
        args.uploads = args.uploads.min(300);
        args.distinct = args.distinct.min(20);
        args.every = args.every.min(100);
        eprintln!(
            "not run by `cargo bench`: a smoke run of {} uploads",
            args.uploads
        );
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(run(args));
}
