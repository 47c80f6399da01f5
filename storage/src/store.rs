//! Everything the collector keeps, in SQLite or PostgreSQL through sqlx's
//! `Any` driver: one set of queries, two sets of migrations
//! (`schema/sqlite`, `schema/postgres`) that differ only in type names.
//!
//! Queries use `$N` placeholders, which both drivers accept. Times are
//! milliseconds since the epoch, stored as `BIGINT`, so neither database's
//! time types leak into the code.

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use sqlx::any::{AnyConnectOptions, AnyPoolOptions, AnyRow};
use sqlx::{AnyPool, ConnectOptions, Executor, Row};

/// Where the data lives.
#[derive(Debug, Clone)]
pub enum DatabaseTarget {
    /// A SQLite database `collector.sqlite` inside this directory.
    SqliteDir(PathBuf),
    /// A PostgreSQL URL (`postgres://...`).
    Postgres(String),
}

impl DatabaseTarget {
    /// From the command line: an explicit URL wins over the data directory.
    pub fn choose(data: &Path, database: Option<&str>) -> anyhow::Result<Self> {
        match database {
            Some(url) if url.starts_with("postgres://") || url.starts_with("postgresql://") => {
                Ok(Self::Postgres(url.to_owned()))
            }
            Some(url) => anyhow::bail!(
                "--database `{}`: expected a postgres:// or postgresql:// URL (SQLite is chosen with --data DIR)",
                redact(url)
            ),
            None => Ok(Self::SqliteDir(data.to_owned())),
        }
    }

    /// The database's kind, for messages.
    pub fn describe(&self) -> String {
        match self {
            Self::SqliteDir(dir) => format!("SQLite in {}", dir.join(SQLITE_FILE).display()),
            Self::Postgres(url) => format!("PostgreSQL at {}", redact(url)),
        }
    }
}

/// The database file inside a data directory.
pub const SQLITE_FILE: &str = "collector.sqlite";

/// A URL without its password, for logs.
pub fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let credentials = &url[scheme + 3..at];
            let user = credentials.split(':').next().unwrap_or_default();
            format!("{}{user}:***{}", &url[..scheme + 3], &url[at..])
        }
        _ => url.to_owned(),
    }
}

/// Which engine a [`Store`] talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// SQLite: one writer at a time.
    Sqlite,
    /// PostgreSQL.
    Postgres,
}

/// The database pool and the engine behind it.
#[derive(Debug, Clone)]
pub struct Store {
    /// Connections for everything.
    pub pool: AnyPool,
    /// The engine.
    pub backend: Backend,
}

static SQLITE_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("../schema/sqlite");
static POSTGRES_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("../schema/postgres");

impl Store {
    /// Opens (creating the SQLite file and running the migrations when
    /// needed) the database of `target`.
    pub async fn open(target: &DatabaseTarget, max_connections: u32) -> anyhow::Result<Self> {
        sqlx::any::install_default_drivers();
        match target {
            DatabaseTarget::SqliteDir(dir) => {
                std::fs::create_dir_all(dir).map_err(|error| {
                    anyhow::anyhow!(
                        "cannot create the data directory {}: {error}",
                        dir.display()
                    )
                })?;
                let path = dir.join(SQLITE_FILE);
                let url = format!("sqlite://{}?mode=rwc", path.display());
                let options = AnyConnectOptions::from_str(&url)?.disable_statement_logging();
                let pool = AnyPoolOptions::new()
                    .max_connections(max_connections.max(2))
                    .acquire_timeout(Duration::from_secs(10))
                    // WAL: readers never block the writer; synchronous=FULL:
                    // a committed transaction survives a power cut, which is
                    // what an acknowledgement promises.
                    .after_connect(|connection, _| {
                        Box::pin(async move {
                            connection
                                .execute(
                                    "PRAGMA busy_timeout = 10000; PRAGMA journal_mode = WAL; \
                                     PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;",
                                )
                                .await?;
                            Ok(())
                        })
                    })
                    .connect_with(options)
                    .await
                    .map_err(|error| anyhow::anyhow!("cannot open {}: {error}", path.display()))?;
                SQLITE_MIGRATIONS.run(&pool).await.map_err(|error| {
                    anyhow::anyhow!("cannot migrate {}: {error}", path.display())
                })?;
                Ok(Self {
                    pool,
                    backend: Backend::Sqlite,
                })
            }
            DatabaseTarget::Postgres(url) => {
                let options = AnyConnectOptions::from_str(url)?.disable_statement_logging();
                let pool = AnyPoolOptions::new()
                    .max_connections(max_connections.max(2))
                    .acquire_timeout(Duration::from_secs(10))
                    // Values over 2 KB (a run's counters) are compressed in
                    // TOAST by pglz unless told otherwise; lz4 compresses
                    // them as well at a fraction of the cost, which was most
                    // of the time of inserting runs (1,300 -> 1,900 uploads/s,
                    // BENCHMARKS.md). A server built without lz4 refuses the
                    // setting; the connection then keeps the server's default.
                    .after_connect(|connection, _| {
                        Box::pin(async move {
                            if let Err(error) = connection
                                .execute("SET default_toast_compression = 'lz4'")
                                .await
                            {
                                tracing::debug!(%error, "lz4 compression unavailable");
                            }
                            Ok(())
                        })
                    })
                    .connect_with(options)
                    .await
                    .map_err(|error| {
                        anyhow::anyhow!("cannot connect to {}: {error}", redact(url))
                    })?;
                POSTGRES_MIGRATIONS
                    .run(&pool)
                    .await
                    .map_err(|error| anyhow::anyhow!("cannot migrate {}: {error}", redact(url)))?;
                Ok(Self {
                    pool,
                    backend: Backend::Postgres,
                })
            }
        }
    }

    /// Opens an existing database for reading only (the analysis): no
    /// migrations, and SQLite opened read-only, so a running collector's
    /// writes are never blocked or touched.
    pub async fn open_read_only(target: &DatabaseTarget) -> anyhow::Result<Self> {
        sqlx::any::install_default_drivers();
        let (url, backend) = match target {
            DatabaseTarget::SqliteDir(dir) => {
                let path = dir.join(SQLITE_FILE);
                if !path.exists() {
                    anyhow::bail!(
                        "{}: no collector database here (is --data the collector's data directory?)",
                        path.display()
                    );
                }
                (
                    format!("sqlite://{}?mode=ro", path.display()),
                    Backend::Sqlite,
                )
            }
            DatabaseTarget::Postgres(url) => (url.clone(), Backend::Postgres),
        };
        let options = AnyConnectOptions::from_str(&url)?.disable_statement_logging();
        let pool = AnyPoolOptions::new()
            .max_connections(2)
            .acquire_timeout(Duration::from_secs(10))
            .connect_with(options)
            .await
            .map_err(|error| anyhow::anyhow!("cannot open {}: {error}", target.describe()))?;
        Ok(Self { pool, backend })
    }

    /// The application's id, created when new.
    pub async fn ensure_application(&self, name: &str) -> Result<i64, sqlx::Error> {
        sqlx::query("INSERT INTO applications (name, created_ms) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING")
            .bind(name)
            .bind(now_ms())
            .execute(&self.pool)
            .await?;
        sqlx::query("SELECT id FROM applications WHERE name = $1")
            .bind(name)
            .fetch_one(&self.pool)
            .await?
            .try_get(0)
    }

    /// The application's id, if it exists.
    pub async fn application_id(&self, name: &str) -> Result<Option<i64>, sqlx::Error> {
        sqlx::query("SELECT id FROM applications WHERE name = $1")
            .bind(name)
            .fetch_optional(&self.pool)
            .await?
            .map(|row| row.try_get(0))
            .transpose()
    }

    /// Whether the database answers.
    pub async fn ping(&self) -> Result<(), sqlx::Error> {
        sqlx::query("SELECT 1")
            .fetch_one(&self.pool)
            .await
            .map(drop)
    }
}

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_millis() as i64)
}

/// Reads an optional text column.
pub fn opt_text(row: &AnyRow, column: &str) -> Result<Option<String>, sqlx::Error> {
    row.try_get::<Option<String>, _>(column)
}
