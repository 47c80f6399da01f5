//! The one writer of runs: uploads wait in a bounded queue; the writer
//! stores them in batches, one transaction each, and answers every upload
//! of a batch only after its transaction committed.
//!
//! Why one writer with group commit: an acknowledgement promises the run
//! is durable, so every commit waits for the disk (`synchronous = FULL` in
//! SQLite's write-ahead log, `fsync` in PostgreSQL). One commit per upload
//! would cap the server at the disk's flush rate; one commit per batch
//! pays it once for everything that arrived meanwhile. SQLite allows one
//! writer anyway. A full queue is refused at once (503 with
//! `Retry-After`) rather than held in memory.

use std::collections::HashMap;
use std::time::Instant;

use sqlx::{Any, Row, Transaction};
use tokio::sync::{mpsc, oneshot};

use crate::metrics::Metrics;
use crate::store::Store;

/// How a run ended, in the original's classes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// Exit status 0, no signal.
    Success,
    /// A non-zero exit status.
    Error,
    /// Killed by a signal.
    Crash,
}

impl Outcome {
    /// The class of an exit status and signal.
    pub fn of(exit_status: i64, exit_signal: i64) -> Self {
        if exit_signal != 0 {
            Self::Crash
        } else if exit_status != 0 {
            Self::Error
        } else {
            Self::Success
        }
    }

    /// The spelling in the database and the API.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Success => "success",
            Self::Error => "error",
            Self::Crash => "crash",
        }
    }
}

/// One subreport as it is stored: its gzip bytes.
#[derive(Debug, Clone)]
pub struct StoredSubreport {
    /// The part's name (`samples`, `main-backtrace`, ...).
    pub name: String,
    /// The decompressed size.
    pub size: i64,
    /// The gzip stream of its text.
    pub data_gz: Vec<u8>,
}

/// A crash's symbolized backtrace and its group.
#[derive(Debug, Clone)]
pub struct CrashRecord {
    /// The frames, as JSON (`crashes::FrameJson`).
    pub frames_json: String,
    /// The grouping signature.
    pub signature: String,
}

/// An upload, checked and ready to store.
#[derive(Debug, Clone)]
pub struct NewRun {
    /// The uploader's `Sampler-Report-Id`, which makes a retry idempotent.
    pub report_id: Option<String>,
    /// The application.
    pub application_id: i64,
    /// Its version and release: the build.
    pub version: String,
    /// The release ("" when not given).
    pub release: String,
    /// `Sampler-Version`.
    pub sampler_version: Option<String>,
    /// `Sampler-Executable-Path`.
    pub executable_path: Option<String>,
    /// `Sampler-Instrumentor-Version`.
    pub instrumentor_version: Option<String>,
    /// `Sampler-Build-Distribution`.
    pub build_distribution: Option<String>,
    /// `Sampler-Sparsity`.
    pub sparsity: Option<i64>,
    /// `Sampler-Exit-Status`.
    pub exit_status: i64,
    /// `Sampler-Exit-Signal`.
    pub exit_signal: i64,
    /// The compact counters (`counters.rs`).
    pub counters: Vec<u8>,
    /// The (unit, scheme) pairs of its samples, for the build's totals.
    pub sections: Vec<(String, String)>,
    /// The subreports as uploaded, in order.
    pub subreports: Vec<StoredSubreport>,
    /// Total decompressed size of the report.
    pub report_bytes: i64,
    /// For a crash: the symbolized backtrace, or `None` when its debug
    /// files have not arrived (or it has no backtrace).
    pub crash: Option<CrashRecord>,
    /// Whether a symbolization is pending: a crash with a backtrace that
    /// could not be symbolized yet.
    pub symbolize_later: bool,
    /// When it arrived.
    pub received_ms: i64,
}

impl NewRun {
    /// The run's outcome class.
    pub fn outcome(&self) -> Outcome {
        Outcome::of(self.exit_status, self.exit_signal)
    }
}

/// What the writer answers for one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    /// The run's public id (`Sampler-Unique-Id`).
    pub run_id: String,
    /// Whether the report id was already stored (nothing new was written).
    pub duplicate: bool,
}

/// Why a run was not stored.
#[derive(Debug, Clone, thiserror::Error)]
pub enum IngestError {
    /// The queue is full: the server is overloaded.
    #[error("the ingest queue is full")]
    QueueFull,
    /// The server is shutting down.
    #[error("the server is shutting down")]
    ShuttingDown,
    /// The database refused or is unreachable.
    #[error("the database failed: {0}")]
    Database(String),
}

struct Job {
    run: NewRun,
    answer: oneshot::Sender<Result<Stored, IngestError>>,
}

/// The sending side of the writer's queue.
#[derive(Debug, Clone)]
pub struct Ingest {
    queue: mpsc::Sender<Job>,
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Job")
            .field("report_id", &self.run.report_id)
            .finish_non_exhaustive()
    }
}

impl Ingest {
    /// Starts the writer.
    pub fn start(
        store: Store,
        metrics: Metrics,
        queue_len: usize,
        max_batch: usize,
    ) -> (Self, WriterHandle) {
        let (queue, receiver) = mpsc::channel(queue_len.max(1));
        let (stop, stopped) = oneshot::channel();
        let writer = Writer {
            store,
            metrics,
            builds: HashMap::new(),
        };
        let task = tokio::spawn(writer.run(receiver, stopped, max_batch.max(1)));
        (Self { queue }, WriterHandle { stop, task })
    }

    /// Stores `run`, returning once it is durable.
    pub async fn store(&self, run: NewRun) -> Result<Stored, IngestError> {
        let (answer, receive) = oneshot::channel();
        self.queue
            .try_send(Job { run, answer })
            .map_err(|error| match error {
                mpsc::error::TrySendError::Full(_) => IngestError::QueueFull,
                mpsc::error::TrySendError::Closed(_) => IngestError::ShuttingDown,
            })?;
        receive.await.map_err(|_| IngestError::ShuttingDown)?
    }

    /// Uploads waiting for the writer.
    pub fn queued(&self) -> usize {
        self.queue.max_capacity() - self.queue.capacity()
    }
}

/// Stops the writer.
#[derive(Debug)]
pub struct WriterHandle {
    stop: oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
}

impl WriterHandle {
    /// Closes the queue (later uploads get 503), stores what it holds, and
    /// returns when the last batch has committed.
    pub async fn finish(self) {
        let _ = self.stop.send(());
        if let Err(error) = self.task.await {
            tracing::error!(%error, "the writer failed");
        }
    }
}

struct Writer {
    store: Store,
    metrics: Metrics,
    /// (application, version, release) → build id, of committed builds.
    builds: HashMap<(i64, String, String), i64>,
}

/// What one batch adds to the totals, written once per batch.
#[derive(Default)]
struct Totals {
    /// build → (success, error, crash, first ms, last ms)
    builds: HashMap<i64, [i64; 5]>,
    /// (build, unit, scheme) → runs by outcome
    sections: HashMap<(i64, String, String), [i64; 3]>,
}

impl Writer {
    async fn run(
        mut self,
        mut receiver: mpsc::Receiver<Job>,
        mut stop: oneshot::Receiver<()>,
        max_batch: usize,
    ) {
        let mut batch = Vec::with_capacity(max_batch);
        let mut closed = false;
        loop {
            tokio::select! {
                biased;
                _ = &mut stop, if !closed => {
                    // Refuse new jobs; those queued are still received.
                    receiver.close();
                    closed = true;
                    continue;
                }
                received = receiver.recv_many(&mut batch, max_batch) => if received == 0 { break },
            }
            let started = Instant::now();
            let runs: Vec<&NewRun> = batch.iter().map(|job| &job.run).collect();
            let results = match self.write_batch(&runs).await {
                Ok(results) => results.into_iter().map(Ok).collect(),
                // One bad run must not fail the others: retry each alone.
                Err(error) if batch.len() > 1 => {
                    tracing::warn!(%error, runs = batch.len(), "batch failed; storing its runs one by one");
                    let mut results = Vec::with_capacity(batch.len());
                    for run in &runs {
                        results.push(match self.write_batch(&[run]).await {
                            Ok(mut stored) => Ok(stored.remove(0)),
                            Err(error) => Err(IngestError::Database(error.to_string())),
                        });
                    }
                    results
                }
                Err(error) => vec![Err(IngestError::Database(error.to_string()))],
            };
            self.metrics.observe_database(started.elapsed());
            for (job, result) in batch.drain(..).zip(results) {
                if let Err(error) = &result {
                    tracing::error!(%error, report_id = ?job.run.report_id, "run not stored");
                }
                // The uploader may have gone; the run is stored regardless.
                let _ = job.answer.send(result);
            }
        }
    }

    async fn write_batch(&mut self, runs: &[&NewRun]) -> Result<Vec<Stored>, sqlx::Error> {
        let mut tx = self.store.pool.begin().await?;
        let mut new_builds = Vec::new();
        let mut totals = Totals::default();
        let mut stored = Vec::with_capacity(runs.len());
        for run in runs {
            let key = (run.application_id, run.version.clone(), run.release.clone());
            let build_id = match self.builds.get(&key) {
                Some(&id) => id,
                None => {
                    let id =
                        build_id(&mut tx, run.application_id, &run.version, &run.release).await?;
                    new_builds.push((key, id));
                    id
                }
            };
            let result = insert_run(&mut tx, run, build_id).await?;
            if !result.duplicate {
                let outcome = run.outcome();
                let column = outcome as usize;
                let entry = totals
                    .builds
                    .entry(build_id)
                    .or_insert([0, 0, 0, i64::MAX, i64::MIN]);
                entry[column] += 1;
                entry[3] = entry[3].min(run.received_ms);
                entry[4] = entry[4].max(run.received_ms);
                for (unit, scheme) in &run.sections {
                    totals
                        .sections
                        .entry((build_id, unit.clone(), scheme.clone()))
                        .or_default()[column] += 1;
                }
            }
            stored.push(result);
        }
        write_totals(&mut tx, &totals).await?;
        tx.commit().await?;
        self.builds.extend(new_builds);
        Ok(stored)
    }
}

/// The build's id, created when new.
pub async fn build_id(
    tx: &mut Transaction<'_, Any>,
    application_id: i64,
    version: &str,
    release: &str,
) -> Result<i64, sqlx::Error> {
    sqlx::query(
        "INSERT INTO builds (application_id, version, release) VALUES ($1, $2, $3) \
         ON CONFLICT (application_id, version, release) DO NOTHING",
    )
    .bind(application_id)
    .bind(version)
    .bind(release)
    .execute(&mut **tx)
    .await?;
    sqlx::query("SELECT id FROM builds WHERE application_id = $1 AND version = $2 AND release = $3")
        .bind(application_id)
        .bind(version)
        .bind(release)
        .fetch_one(&mut **tx)
        .await?
        .try_get(0)
}

async fn insert_run(
    tx: &mut Transaction<'_, Any>,
    run: &NewRun,
    build_id: i64,
) -> Result<Stored, sqlx::Error> {
    if let Some(report_id) = &run.report_id {
        let existing = sqlx::query("SELECT run_id FROM runs WHERE report_id = $1")
            .bind(report_id)
            .fetch_optional(&mut **tx)
            .await?;
        if let Some(row) = existing {
            return Ok(Stored {
                run_id: row.try_get(0)?,
                duplicate: true,
            });
        }
    }
    let crash_group_id = match &run.crash {
        Some(crash) => Some(
            crate::crashes::record_group(tx, run.application_id, build_id, crash, run.received_ms)
                .await?,
        ),
        None => None,
    };
    let run_id = uuid::Uuid::now_v7().to_string();
    let symbolized: Option<i64> = match (run.outcome(), &run.crash, run.symbolize_later) {
        (_, Some(_), _) => Some(1),
        (_, None, true) => Some(0),
        _ => None,
    };
    let id: i64 = sqlx::query(
        "INSERT INTO runs (run_id, report_id, application_id, build_id, received_ms, sampler_version, \
         executable_path, instrumentor_version, build_distribution, sparsity, exit_status, exit_signal, \
         outcome, counters, report_bytes, symbolized, backtrace_json, crash_group_id) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18) RETURNING id",
    )
    .bind(&run_id)
    .bind(&run.report_id)
    .bind(run.application_id)
    .bind(build_id)
    .bind(run.received_ms)
    .bind(&run.sampler_version)
    .bind(&run.executable_path)
    .bind(&run.instrumentor_version)
    .bind(&run.build_distribution)
    .bind(run.sparsity)
    .bind(run.exit_status)
    .bind(run.exit_signal)
    .bind(run.outcome().as_str())
    .bind(run.counters.as_slice())
    .bind(run.report_bytes)
    .bind(symbolized)
    .bind(run.crash.as_ref().map(|crash| crash.frames_json.as_str()))
    .bind(crash_group_id)
    .fetch_one(&mut **tx)
    .await?
    .try_get(0)?;
    for (position, part) in run.subreports.iter().enumerate() {
        sqlx::query("INSERT INTO run_subreports (run_id, position, name, size, data_gz) VALUES ($1, $2, $3, $4, $5)")
            .bind(id)
            .bind(position as i64)
            .bind(&part.name)
            .bind(part.size)
            .bind(part.data_gz.as_slice())
            .execute(&mut **tx)
            .await?;
    }
    Ok(Stored {
        run_id,
        duplicate: false,
    })
}

async fn write_totals(tx: &mut Transaction<'_, Any>, totals: &Totals) -> Result<(), sqlx::Error> {
    for (build_id, [success, error, crash, first, last]) in &totals.builds {
        sqlx::query(
            "UPDATE builds SET runs_success = runs_success + $1, runs_error = runs_error + $2, \
             runs_crash = runs_crash + $3, \
             first_run_ms = CASE WHEN first_run_ms IS NULL OR first_run_ms > $4 THEN $4 ELSE first_run_ms END, \
             last_run_ms = CASE WHEN last_run_ms IS NULL OR last_run_ms < $5 THEN $5 ELSE last_run_ms END \
             WHERE id = $6",
        )
        .bind(success)
        .bind(error)
        .bind(crash)
        .bind(first)
        .bind(last)
        .bind(build_id)
        .execute(&mut **tx)
        .await?;
    }
    for ((build_id, unit, scheme), [success, error, crash]) in &totals.sections {
        sqlx::query(
            "INSERT INTO build_section_totals (build_id, unit_signature, scheme, runs_success, runs_error, runs_crash) \
             VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (build_id, unit_signature, scheme) DO UPDATE SET \
             runs_success = build_section_totals.runs_success + excluded.runs_success, \
             runs_error = build_section_totals.runs_error + excluded.runs_error, \
             runs_crash = build_section_totals.runs_crash + excluded.runs_crash",
        )
        .bind(build_id)
        .bind(unit)
        .bind(scheme)
        .bind(success)
        .bind(error)
        .bind(crash)
        .execute(&mut **tx)
        .await?;
    }
    Ok(())
}
