//! `sampler-collector`: serve, create tokens, register builds.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use sampler_collector::limits::Limits;
use sampler_collector::store::{DatabaseTarget, Store};
use sampler_collector::tokens::{self, Scope};

/// mimalloc instead of glibc's malloc: an upload allocates and frees
/// thousands of small blocks (a row of counters each) among large buffers,
/// on several threads; glibc spent a sixth of the server's time on it
/// (consolidating free chunks), mimalloc an eighth less CPU per upload in
/// all (BENCHMARKS.md, "Collector: sustained uploads").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The collection server of the sampler toolchain: stores the feedback
/// reports of instrumented programs, their builds and their crashes.
#[derive(Debug, Parser)]
#[command(name = "sampler-collector", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// Where the data is: a directory for SQLite, or a PostgreSQL URL.
#[derive(Debug, clap::Args)]
struct Database {
    /// The data directory: its `collector.sqlite` is created, with its
    /// tables, on first use.
    #[arg(long, default_value = "./sampler-data", value_name = "DIR")]
    data: PathBuf,

    /// Use PostgreSQL instead of SQLite (`postgres://user:password@host/db`).
    #[arg(long, env = "DATABASE_URL", value_name = "URL", hide_env_values = true)]
    database: Option<String>,
}

impl Database {
    async fn open(&self, connections: u32) -> anyhow::Result<Store> {
        Store::open(
            &DatabaseTarget::choose(&self.data, self.database.as_deref())?,
            connections,
        )
        .await
    }
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve uploads, builds, the read API, /healthz and /metrics.
    Serve {
        #[command(flatten)]
        database: Database,

        /// The address to listen on.
        #[arg(long, default_value = "127.0.0.1:7450", value_name = "ADDR")]
        listen: SocketAddr,

        /// Log lines as JSON objects instead of text.
        #[arg(long)]
        log_json: bool,

        #[command(flatten)]
        limits: Limits,
    },
    /// Manage access tokens.
    Token {
        #[command(subcommand)]
        command: TokenCommand,
    },
    /// Register builds.
    Build {
        #[command(subcommand)]
        command: BuildCommand,
    },
    /// Print the sampling rates learned from an application's runs (a
    /// rates file for `sampler-cc`, schema/rates-format.md), from its
    /// latest build with runs or the one named.
    Rates {
        #[command(flatten)]
        database: Database,

        /// The application.
        #[arg(long, value_name = "NAME")]
        app: String,

        /// The build's version (default: the latest build with runs).
        #[arg(long, value_name = "V")]
        version: Option<String>,

        /// The build's release (default empty).
        #[arg(long, value_name = "R", requires = "version")]
        release: Option<String>,

        /// Expected observations per site per run.
        #[arg(long, default_value = "100", value_name = "T", value_parser = sampler_analysis::rates::parse_target)]
        target: f64,

        /// Bound on the whole program's expected observations per run.
        #[arg(long, default_value = "100000", value_name = "B", value_parser = sampler_analysis::rates::parse_budget)]
        budget: f64,

        /// The deployment sparsity (default: the runs' most common).
        #[arg(long, value_name = "D", value_parser = sampler_analysis::rates::parse_sparsity)]
        sparsity: Option<u32>,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum ScopeArg {
    /// Upload runs and register builds.
    Ingest,
    /// Read the API.
    Read,
}

#[derive(Debug, Subcommand)]
enum TokenCommand {
    /// Print a new token for an application (created if new). The token is
    /// shown once; only its hash is stored.
    Create {
        #[command(flatten)]
        database: Database,

        /// The application.
        #[arg(long, value_name = "NAME")]
        app: String,

        /// What the token allows.
        #[arg(long, value_enum)]
        scope: ScopeArg,
    },
    /// List tokens (ids, applications, scopes; never secrets).
    List {
        #[command(flatten)]
        database: Database,
    },
    /// Revoke a token, given its id (as `token list` shows it) or the
    /// whole token. Running servers refuse it within 30 seconds.
    Revoke {
        #[command(flatten)]
        database: Database,

        /// The token's id, or the token.
        #[arg(value_name = "ID")]
        id: String,
    },
}

#[derive(Debug, Subcommand)]
enum BuildCommand {
    /// Upload an instrumented build's ELF files (executables, shared
    /// libraries, plugins, separate debug files): their site tables, and
    /// their debug information for symbolizing crashes.
    Add {
        /// The collector's address, e.g. http://127.0.0.1:7450.
        #[arg(long, env = "SAMPLER_SERVER", value_name = "URL")]
        server: String,

        /// An ingest token of the application.
        #[arg(
            long,
            env = "SAMPLER_TOKEN",
            value_name = "TOKEN",
            hide_env_values = true
        )]
        token: String,

        /// The application.
        #[arg(long, value_name = "NAME")]
        app: String,

        /// The build's version.
        #[arg(long, value_name = "V")]
        version: String,

        /// The build's release.
        #[arg(long, value_name = "R")]
        release: Option<String>,

        /// Also register the source files the site tables name, so that
        /// the dashboard shows each predictor's code.
        #[arg(long)]
        sources: bool,

        /// With --sources: the folder relative source paths are read from
        /// (the build's folder, where the compiler ran).
        #[arg(long, value_name = "DIR", default_value = ".", requires = "sources")]
        source_root: PathBuf,

        /// The files.
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
    },
}

fn init_logs(json: bool) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,tower_http=warn,sqlx=warn"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    if json {
        builder.json().init();
    } else {
        builder.init();
    }
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Serve {
            database,
            listen,
            log_json,
            limits,
        } => {
            init_logs(log_json);
            let target = DatabaseTarget::choose(&database.data, database.database.as_deref())?;
            let store = Store::open(&target, limits.connections).await?;
            let listener = tokio::net::TcpListener::bind(listen)
                .await
                .map_err(|error| anyhow::anyhow!("cannot listen on {listen}: {error}"))?;
            let scratch = match &target {
                DatabaseTarget::SqliteDir(dir) => dir.join("incoming"),
                DatabaseTarget::Postgres(_) => {
                    std::env::temp_dir().join("sampler-collector-incoming")
                }
            };
            let running =
                sampler_collector::server::start(store, limits, scratch, listener).await?;
            tracing::info!(address = %running.address, database = %target.describe(), "serving");
            shutdown_signal().await;
            running.shutdown().await?;
            tracing::info!("stopped");
            Ok(())
        }
        Command::Token {
            command:
                TokenCommand::Create {
                    database,
                    app,
                    scope,
                },
        } => {
            let store = database.open(2).await?;
            let scope = match scope {
                ScopeArg::Ingest => Scope::Ingest,
                ScopeArg::Read => Scope::Read,
            };
            println!("{}", tokens::create(&store, &app, scope).await?);
            Ok(())
        }
        Command::Token {
            command: TokenCommand::List { database },
        } => {
            let store = database.open(2).await?;
            for (id, app, scope, created_ms, revoked) in tokens::list(&store).await? {
                let created = sampler_collector::api::ms_to_rfc3339(created_ms);
                println!(
                    "{id}\t{app}\t{scope}\t{created}{}",
                    if revoked { "\trevoked" } else { "" }
                );
            }
            Ok(())
        }
        Command::Token {
            command: TokenCommand::Revoke { database, id },
        } => {
            let store = database.open(2).await?;
            if !tokens::revoke(&store, &id).await? {
                anyhow::bail!("no token `{id}` to revoke");
            }
            println!("revoked");
            Ok(())
        }
        Command::Rates {
            database,
            app,
            version,
            release,
            target,
            budget,
            sparsity,
        } => {
            let store = database.open(2).await?;
            let spec = sampler_collector::rates::RatesSpec {
                build: version.map(|version| (version, release.unwrap_or_default())),
                request: sampler_analysis::rates::RatesRequest {
                    target,
                    budget,
                    sparsity,
                },
            };
            let computed = sampler_collector::rates::compute(&store, &app, &spec).await?;
            for warning in &computed.warnings {
                eprintln!("sampler-collector: {warning}");
            }
            print!("{}", computed.rates.to_text());
            Ok(())
        }
        Command::Build {
            command:
                BuildCommand::Add {
                    server,
                    token,
                    app,
                    version,
                    release,
                    sources,
                    source_root,
                    files,
                },
        } => {
            let build = sampler_collector::builds::BuildUpload {
                app: &app,
                version: &version,
                release: release.as_deref(),
                files: &files,
                sources: sources.then_some(source_root.as_path()),
            };
            let (summary, skipped) =
                sampler_collector::builds::upload_build(&server, &token, &build).await?;
            for source in &skipped.sources {
                eprintln!("sampler-collector: source not registered: {source}");
            }
            for file in &summary.files {
                println!(
                    "{}\t{}\t{} site tables\t{}",
                    file.name,
                    file.build_id.as_deref().unwrap_or("-"),
                    file.site_tables,
                    if file.debug_info {
                        "debug info"
                    } else {
                        "no debug info"
                    }
                );
            }
            println!(
                "registered {} {} {}: {} new site tables, {} source files, {} waiting crashes symbolized",
                summary.application,
                summary.version,
                summary.release,
                summary.new_site_tables,
                summary.sources,
                summary.symbolized
            );
            Ok(())
        }
    }
}

async fn shutdown_signal() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("installing a SIGTERM handler");
    tokio::select! {
        _ = term.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
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
            eprintln!("sampler-collector: {error:#}");
            ExitCode::FAILURE
        }
    }
}
