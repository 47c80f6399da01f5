//! `sampler-analyze`: the predicates that predict failure, from a
//! collector's database.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use sampler_analysis::collector_db::{self, FailureRule};
use sampler_analysis::dataset::Dataset;
use sampler_analysis::output::{self, TableStyle};
use sampler_analysis::rates::{self, RatesRequest, UniformScales};
use sampler_analysis::report::{LocalSources, Report, shuffled_outcomes};
use sampler_analysis::run_files;
use sampler_analysis::scores::{Ranking, z_of_confidence};
use sampler_storage::store::{DatabaseTarget, Store};

/// Ranks the predicates that predict failure in the runs a collector
/// stored (or, offline, in run files of `sampler-run --save`): the
/// elimination list first (each predicate with the failing runs it
/// explains), then the full ranking. `sampler-analyze rates` learns
/// sampling rates from the same runs instead.
#[derive(Debug, Parser)]
#[command(
    name = "sampler-analyze",
    version,
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true
)]
struct Cli {
    #[command(flatten)]
    input: Input,

    /// Count non-zero exit statuses as failures too (by default only
    /// deaths by a signal are).
    #[arg(long)]
    fail_on_exit: bool,

    /// Count these exit statuses as failures (comma-separated).
    #[arg(long, value_delimiter = ',', value_name = "N,...")]
    fail_on_status: Vec<i64>,

    /// Only the runs of this crash group fail (its predictors); runs that
    /// failed otherwise are left out.
    #[arg(long, value_name = "ID")]
    crash_group: Option<i64>,

    /// The score that orders predicates.
    #[arg(long, value_enum, default_value_t = Score::Harmonic)]
    rank_by: Score,

    /// Confidence level of Increase's lower bound, in percent.
    #[arg(long, default_value_t = 95.0, value_name = "PERCENT")]
    confidence: f64,

    /// Keep only predicates accepted at this false discovery rate
    /// (Benjamini-Hochberg over every predicate true in at least 10 runs),
    /// e.g. 0.05. By default each predicate is judged alone, as the
    /// original analysis did, so among hundreds a few pass by chance.
    #[arg(long, value_name = "Q", value_parser = fdr_level)]
    fdr: Option<f64>,

    /// Print how long reading, ranking and writing took, on stderr.
    #[arg(long)]
    timings: bool,

    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,

    /// Label the runs at random instead (as many failing as really failed,
    /// a permutation seeded with SEED): a check that nothing is retained
    /// by chance.
    #[arg(long, value_name = "SEED")]
    shuffle_outcomes: Option<u64>,

    /// Rows of the full ranking shown in the table (all in JSON and CSV).
    #[arg(long, default_value_t = 20, value_name = "N")]
    top: usize,

    /// Also rank "true in the last K events" predicates: each predicate
    /// restricted to a run's last K sampled observations, from the runs'
    /// `trace` subreports (SAMPLER_TRACE; runs without one have none).
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u32).range(1..=65536))]
    last: Option<u32>,

    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Learn sampling rates from a training set of runs (each site's
    /// executions per run, estimated from its sampled counts) and write a
    /// rates file for `sampler-cc` (schema/rates-format.md): rare sites at
    /// rate 1, others at about TARGET observations per run, at least
    /// 1/SPARSITY, within BUDGET observations per run in all.
    Rates(RatesArgs),
}

#[derive(Debug, clap::Args)]
struct RatesArgs {
    #[command(flatten)]
    input: Input,

    /// Expected observations per site per run.
    #[arg(long, default_value = "100", value_name = "T", value_parser = rates::parse_target)]
    target: f64,

    /// Bound on the whole program's expected observations per run (the
    /// target is lowered until it holds).
    #[arg(long, default_value = "100000", value_name = "B", value_parser = rates::parse_budget)]
    budget: f64,

    /// The deployment sparsity the rates are for (default: the most common
    /// among the training runs).
    #[arg(long, value_name = "D", value_parser = rates::parse_sparsity)]
    sparsity: Option<u32>,

    /// Write the rates file here instead of to stdout.
    #[arg(long, short, value_name = "FILE")]
    output: Option<PathBuf>,
}

/// Where the runs are: a collector's database, or run files.
#[derive(Debug, clap::Args)]
struct Input {
    /// The collector's data directory (its SQLite database is opened
    /// read-only).
    #[arg(long, default_value = "./sampler-data", value_name = "DIR")]
    data: PathBuf,

    /// A PostgreSQL collector database instead (`postgres://...`).
    #[arg(long, env = "DATABASE_URL", value_name = "URL", hide_env_values = true)]
    database: Option<String>,

    /// The application (with --data or --database).
    #[arg(long, value_name = "NAME", required_unless_present = "runs")]
    app: Option<String>,

    /// Only the runs of this build of the application (its version), and
    /// its site tables; by default every build's, merged (for `rates`, the
    /// latest build with runs).
    #[arg(long, value_name = "V", conflicts_with = "runs")]
    build_version: Option<String>,

    /// With --build-version: the build's release (default empty).
    #[arg(long, value_name = "R", requires = "build_version")]
    build_release: Option<String>,

    /// Offline: a directory of run files written by `sampler-run --save`,
    /// read with the site tables of FILE... instead of a database.
    #[arg(long, value_name = "DIR", requires = "files", conflicts_with_all = ["database", "app"])]
    runs: Option<PathBuf>,

    /// With --runs: the instrumented binaries, libraries or `.sites` files
    /// whose site tables the runs' counters refer to.
    #[arg(value_name = "FILE")]
    files: Vec<PathBuf>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Score {
    /// The reference code's harmonic mean of Increase's lower bound and
    /// log-recall (default).
    Harmonic,
    /// The paper's Importance (Increase instead of its lower bound).
    Importance,
    /// Ochiai.
    Ochiai,
    /// Tarantula.
    Tarantula,
    /// DStar (exponent 2).
    Dstar,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Format {
    /// A table for terminals.
    Table,
    /// JSON: the elimination list in order, then the full ranking.
    Json,
    /// CSV: the full ranking, with each predicate's place in the elimination.
    Csv,
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    if let Some(Command::Rates(args)) = cli.command {
        return write_rates(args).await;
    }
    let z = z_of_confidence(cli.confidence)?;
    let rule = FailureRule {
        nonzero_exit: cli.fail_on_exit,
        statuses: cli.fail_on_status,
        crash_group: cli.crash_group,
    };
    let bar = indicatif::ProgressBar::new(0).with_style(
        indicatif::ProgressStyle::with_template("{msg} {wide_bar} {pos}/{len} runs ({per_sec})")
            .expect("a valid template"),
    );
    bar.set_message("reading");
    let progress = |done, total| {
        bar.set_length(total);
        bar.set_position(done);
    };
    let started = std::time::Instant::now();
    let input = &cli.input;
    let mut dataset = match (&input.runs, &input.app) {
        (Some(dir), _) => {
            let mut dataset = match cli.last {
                Some(events) => Dataset::with_tail(events),
                None => Dataset::new(),
            };
            for file in &input.files {
                run_files::add_site_file(&mut dataset, file)?;
            }
            dataset.record_scales(&run_files::site_scales(&input.files)?);
            run_files::add_runs(&mut dataset, dir, &rule, progress)?;
            dataset
        }
        (None, Some(app)) => {
            let target = DatabaseTarget::choose(&input.data, input.database.as_deref())?;
            let store = Store::open_read_only(&target).await?;
            let mut selection = collector_db::Selection {
                tail: cli.last,
                ..collector_db::Selection::default()
            };
            if let Some(version) = &input.build_version {
                let release = input.build_release.as_deref().unwrap_or_default();
                selection.build = Some(
                    collector_db::build_id(&store, app, version, release)
                        .await?
                        .ok_or_else(|| {
                            anyhow::anyhow!(
                                "no build version `{version}` release `{release}` of `{app}` in the collector's database"
                            )
                        })?,
                );
            }
            collector_db::load_selected(&store, app, &selection, &rule, progress).await?
        }
        (None, None) => unreachable!("clap requires --app without --runs"),
    };
    bar.finish_and_clear();
    let ranking = match cli.rank_by {
        Score::Harmonic => Ranking::HarmonicLowerBound,
        Score::Importance => Ranking::Importance,
        Score::Ochiai => Ranking::Ochiai,
        Score::Tarantula => Ranking::Tarantula,
        Score::Dstar => Ranking::DStar,
    };
    if let Some(seed) = cli.shuffle_outcomes {
        dataset.failing = shuffled_outcomes(&dataset.runs, &dataset.failing, seed);
    }
    let read = started.elapsed();
    let report = Report::analyse(&dataset, ranking, z, cli.fdr, &mut LocalSources::default());
    let ranked = started.elapsed();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match cli.format {
        Format::Table => output::print_table(&mut out, &report, TableStyle::for_stdout(cli.top))?,
        Format::Json => writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?,
        Format::Csv => output::print_csv(&mut out, &report)?,
    }
    if cli.timings {
        let done = started.elapsed();
        eprintln!(
            "sampler-analyze: reading {:.2} s, ranking {:.2} s, output {:.2} s ({} runs, {} predicates)",
            read.as_secs_f64(),
            (ranked - read).as_secs_f64(),
            (done - ranked).as_secs_f64(),
            dataset.runs.len(),
            dataset.predicates.len()
        );
    }
    Ok(())
}

/// `sampler-analyze rates`.
async fn write_rates(args: RatesArgs) -> anyhow::Result<()> {
    let request = RatesRequest {
        target: args.target,
        budget: args.budget,
        sparsity: args.sparsity,
    };
    let input = &args.input;
    let computed = match (&input.runs, &input.app) {
        (Some(dir), _) => {
            let training = rates::from_run_files(dir, &input.files, &UniformScales)?;
            let source = sampler_formats::RatesSource::Runs {
                directory: dir.display().to_string(),
            };
            rates::compute(&training, &request, source)?
        }
        (None, Some(app)) => {
            let target = DatabaseTarget::choose(&input.data, input.database.as_deref())?;
            let store = Store::open_read_only(&target).await?;
            let build = input
                .build_version
                .as_deref()
                .map(|version| (version, input.build_release.as_deref().unwrap_or_default()));
            rates::from_collector(&store, app, build, &request, &UniformScales).await?
        }
        (None, None) => unreachable!("clap requires --app without --runs"),
    };
    for warning in &computed.warnings {
        eprintln!("sampler-analyze: {warning}");
    }
    let text = computed.rates.to_text();
    match &args.output {
        Some(path) => {
            std::fs::write(path, text)
                .map_err(|error| anyhow::anyhow!("{}: {error}", path.display()))?;
            let rates = &computed.rates;
            eprintln!(
                "sampler-analyze: {} sites from {} runs at sparsity {}: {} expected observations per run ({} with uniform sampling)",
                rates.sites.len(),
                rates.runs,
                rates.sparsity,
                rates.expected,
                rates.uniform
            );
        }
        None => std::io::stdout().lock().write_all(text.as_bytes())?,
    }
    Ok(())
}

fn fdr_level(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(q) if q > 0.0 && q < 1.0 => Ok(q),
        _ => Err(format!(
            "`{text}`: expected a rate between 0 and 1, such as 0.05"
        )),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    match runtime.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) if sampler_extract::cli::is_broken_pipe(&error) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("sampler-analyze: {error:#}");
            ExitCode::from(2)
        }
    }
}
