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
use crate::store::{Backend, Store};

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

    /// Stores `runs` in one transaction. Each statement covers many runs
    /// (`chunks`): the cost of a batch is in its round trips to the
    /// database (for SQLite, hand-offs to sqlx's connection thread), so a
    /// batch makes about ten of them whatever its size, not several per run.
    async fn write_batch(&mut self, runs: &[&NewRun]) -> Result<Vec<Stored>, sqlx::Error> {
        let mut tx = self.store.pool.begin().await?;
        let mut new_builds = Vec::new();
        let mut build_ids = Vec::with_capacity(runs.len());
        for run in runs {
            let key = (run.application_id, run.version.clone(), run.release.clone());
            let id = match self.builds.get(&key) {
                Some(&id) => id,
                None => match new_builds.iter().find(|(new, _)| *new == key) {
                    Some(&(_, id)) => id,
                    None => {
                        let id = build_id(&mut tx, run.application_id, &run.version, &run.release)
                            .await?;
                        new_builds.push((key, id));
                        id
                    }
                },
            };
            build_ids.push(id);
        }

        // A report id already stored, or earlier in this batch, is a
        // duplicate: it gets the run id stored before.
        let mut known = stored_reports(&mut tx, self.store.backend, runs).await?;
        let mut stored = Vec::with_capacity(runs.len());
        let mut new = Vec::new();
        for (index, run) in runs.iter().enumerate() {
            if let Some(run_id) = run.report_id.as_ref().and_then(|id| known.get(id)) {
                stored.push(Stored {
                    run_id: run_id.clone(),
                    duplicate: true,
                });
                continue;
            }
            let run_id = uuid::Uuid::now_v7().to_string();
            if let Some(report_id) = &run.report_id {
                known.insert(report_id.clone(), run_id.clone());
            }
            new.push(index);
            stored.push(Stored {
                run_id,
                duplicate: false,
            });
        }

        let mut crash_groups = HashMap::new();
        for &index in &new {
            if let Some(crash) = &runs[index].crash {
                let run = runs[index];
                let group = crate::crashes::record_group(
                    &mut tx,
                    run.application_id,
                    build_ids[index],
                    crash,
                    run.received_ms,
                )
                .await?;
                crash_groups.insert(index, group);
            }
        }
        let row_ids = insert_runs(
            &mut tx,
            self.store.backend,
            runs,
            &build_ids,
            &new,
            &stored,
            &crash_groups,
        )
        .await?;
        insert_subreports(&mut tx, self.store.backend, runs, &new, &row_ids).await?;

        let mut totals = Totals::default();
        for &index in &new {
            let (run, build_id) = (runs[index], build_ids[index]);
            let column = run.outcome() as usize;
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
        write_totals(&mut tx, self.store.backend, &totals).await?;
        tx.commit().await?;
        self.builds.extend(new_builds);
        Ok(stored)
    }
}

/// The rows of each statement when `n` rows are written, at most `max`
/// to a statement: one statement for a batch of up to `max`, since every
/// statement is a round trip. (Each size is prepared once per connection
/// and kept in sqlx's statement cache.)
fn chunks(n: usize, max: usize) -> impl Iterator<Item = std::ops::Range<usize>> {
    (0..n)
        .step_by(max.max(1))
        .map(move |start| start..n.min(start + max.max(1)))
}

/// `rows` rows of `columns` placeholders: `($1, $2, ...), (...), ...` for
/// PostgreSQL, `(?, ?, ...), (...)` for SQLite. (sqlx finds the argument
/// of each SQLite parameter by its name, which SQLite looks up in a list
/// of every named parameter: binding `$N`s costs the square of their
/// number, a tenth of the writer's time with 64 runs of 18 columns.)
fn placeholders(backend: Backend, rows: usize, columns: usize) -> String {
    let mut text = String::with_capacity(rows * columns * 5);
    for row in 0..rows {
        text.push_str(if row == 0 { "(" } else { ", (" });
        for column in 0..columns {
            if column > 0 {
                text.push_str(", ");
            }
            match backend {
                Backend::Sqlite => text.push('?'),
                Backend::Postgres => {
                    text.push('$');
                    text.push_str(&(row * columns + column + 1).to_string());
                }
            }
        }
        text.push(')');
    }
    text
}

/// The run ids of the report ids of `runs` that are already stored.
async fn stored_reports(
    tx: &mut Transaction<'_, Any>,
    backend: Backend,
    runs: &[&NewRun],
) -> Result<HashMap<String, String>, sqlx::Error> {
    let report_ids: Vec<&str> = runs
        .iter()
        .filter_map(|run| run.report_id.as_deref())
        .collect();
    let mut known = HashMap::new();
    for chunk in chunks(report_ids.len(), 256) {
        let sql = format!(
            "SELECT report_id, run_id FROM runs WHERE report_id IN {}",
            placeholders(backend, 1, chunk.len())
        );
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
        for report_id in &report_ids[chunk] {
            query = query.bind(*report_id);
        }
        for row in query.fetch_all(&mut **tx).await? {
            known.insert(row.try_get(0)?, row.try_get(1)?);
        }
    }
    Ok(known)
}

/// Inserts the `new` runs (indices into `runs`) with their run ids in
/// `stored`; returns each one's row id, by index.
async fn insert_runs(
    tx: &mut Transaction<'_, Any>,
    backend: Backend,
    runs: &[&NewRun],
    build_ids: &[i64],
    new: &[usize],
    stored: &[Stored],
    crash_groups: &HashMap<usize, i64>,
) -> Result<HashMap<usize, i64>, sqlx::Error> {
    let mut row_ids = HashMap::with_capacity(new.len());
    for chunk in chunks(new.len(), 64) {
        let indices = &new[chunk];
        let sql = format!(
            "INSERT INTO runs (run_id, report_id, application_id, build_id, received_ms, sampler_version, \
             executable_path, instrumentor_version, build_distribution, sparsity, exit_status, exit_signal, \
             outcome, counters, report_bytes, symbolized, backtrace_json, crash_group_id) \
             VALUES {} RETURNING id, run_id",
            placeholders(backend, indices.len(), 18)
        );
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
        let mut by_run_id = HashMap::with_capacity(indices.len());
        for &index in indices {
            let run = runs[index];
            let symbolized: Option<i64> = match (&run.crash, run.symbolize_later) {
                (Some(_), _) => Some(1),
                (None, true) => Some(0),
                (None, false) => None,
            };
            by_run_id.insert(stored[index].run_id.as_str(), index);
            query = query
                .bind(&stored[index].run_id)
                .bind(&run.report_id)
                .bind(run.application_id)
                .bind(build_ids[index])
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
                .bind(crash_groups.get(&index).copied());
        }
        // RETURNING promises no order: rows are matched by run id.
        for row in query.fetch_all(&mut **tx).await? {
            let id: i64 = row.try_get(0)?;
            let run_id: String = row.try_get(1)?;
            let index = by_run_id.get(run_id.as_str()).ok_or_else(|| {
                sqlx::Error::Protocol(format!("the database returned an unknown run {run_id}"))
            })?;
            row_ids.insert(*index, id);
        }
    }
    if row_ids.len() != new.len() {
        return Err(sqlx::Error::Protocol(format!(
            "{} runs inserted, {} ids returned",
            new.len(),
            row_ids.len()
        )));
    }
    Ok(row_ids)
}

/// Inserts the subreports of the `new` runs.
async fn insert_subreports(
    tx: &mut Transaction<'_, Any>,
    backend: Backend,
    runs: &[&NewRun],
    new: &[usize],
    row_ids: &HashMap<usize, i64>,
) -> Result<(), sqlx::Error> {
    let parts: Vec<(i64, usize, &StoredSubreport)> = new
        .iter()
        .flat_map(|index| {
            let id = row_ids[index];
            runs[*index]
                .subreports
                .iter()
                .enumerate()
                .map(move |(position, part)| (id, position, part))
        })
        .collect();
    for chunk in chunks(parts.len(), 64) {
        let sql = format!(
            "INSERT INTO run_subreports (run_id, position, name, size, data_gz) VALUES {}",
            placeholders(backend, chunk.len(), 5)
        );
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
        for (id, position, part) in &parts[chunk] {
            query = query
                .bind(*id)
                .bind(*position as i64)
                .bind(&part.name)
                .bind(part.size)
                .bind(part.data_gz.as_slice());
        }
        query.execute(&mut **tx).await?;
    }
    Ok(())
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

async fn write_totals(
    tx: &mut Transaction<'_, Any>,
    backend: Backend,
    totals: &Totals,
) -> Result<(), sqlx::Error> {
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
    let sections: Vec<_> = totals.sections.iter().collect();
    for chunk in chunks(sections.len(), 64) {
        let sql = format!(
            "INSERT INTO build_section_totals (build_id, unit_signature, scheme, runs_success, runs_error, runs_crash) \
             VALUES {} ON CONFLICT (build_id, unit_signature, scheme) DO UPDATE SET \
             runs_success = build_section_totals.runs_success + excluded.runs_success, \
             runs_error = build_section_totals.runs_error + excluded.runs_error, \
             runs_crash = build_section_totals.runs_crash + excluded.runs_crash",
            placeholders(backend, chunk.len(), 6)
        );
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
        for ((build_id, unit, scheme), [success, error, crash]) in &sections[chunk] {
            query = query
                .bind(*build_id)
                .bind(unit.as_str())
                .bind(scheme.as_str())
                .bind(*success)
                .bind(*error)
                .bind(*crash);
        }
        query.execute(&mut **tx).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::DatabaseTarget;

    fn run(application_id: i64, report_id: Option<&str>) -> NewRun {
        NewRun {
            report_id: report_id.map(str::to_owned),
            application_id,
            version: "1".into(),
            release: String::new(),
            sampler_version: None,
            executable_path: None,
            instrumentor_version: None,
            build_distribution: None,
            sparsity: None,
            exit_status: 0,
            exit_signal: 0,
            counters: vec![1, 0],
            sections: vec![("u".into(), "branches".into())],
            subreports: vec![StoredSubreport {
                name: "samples".into(),
                size: 1,
                data_gz: vec![1, 2, 3],
            }],
            report_bytes: 1,
            crash: None,
            symbolize_later: false,
            received_ms: 1,
        }
    }

    #[tokio::test]
    async fn one_report_id_sent_at_once_many_times_is_stored_once() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&DatabaseTarget::SqliteDir(dir.path().to_owned()), 2)
            .await
            .unwrap();
        let app = store.ensure_application("demo").await.unwrap();
        let (ingest, writer) = Ingest::start(store.clone(), Metrics::new(), 64, 64);
        // Queued together, so that most land in one batch.
        let report_id = "5c9a1f0e-2b7d-4e1a-9c3f-0a1b2c3d4e5f";
        let tasks: Vec<_> = (0..12)
            .map(|i| {
                let ingest = ingest.clone();
                let run = run(app, (i % 3 != 0).then_some(report_id));
                tokio::spawn(async move { ingest.store(run).await.unwrap() })
            })
            .collect();
        let mut answers = Vec::new();
        for task in tasks {
            answers.push(task.await.unwrap());
        }
        writer.finish().await;
        let same: Vec<_> = answers
            .iter()
            .enumerate()
            .filter(|(i, _)| i % 3 != 0)
            .collect();
        assert_eq!(
            same.iter().filter(|(_, stored)| !stored.duplicate).count(),
            1
        );
        assert!(
            same.iter()
                .all(|(_, stored)| stored.run_id == same[0].1.run_id)
        );
        let count = |sql: &'static str| {
            let pool = store.pool.clone();
            async move {
                sqlx::query(sql)
                    .fetch_one(&pool)
                    .await
                    .unwrap()
                    .get::<i64, _>(0)
            }
        };
        // 4 runs without a report id, 1 with.
        assert_eq!(count("SELECT COUNT(*) FROM runs").await, 5);
        assert_eq!(count("SELECT COUNT(*) FROM run_subreports").await, 5);
        assert_eq!(count("SELECT runs_success FROM builds").await, 5);
        assert_eq!(
            count("SELECT runs_success FROM build_section_totals").await,
            5
        );
    }

    #[test]
    fn chunks_cover_every_row_once() {
        let sizes = |n| chunks(n, 64).map(|range| range.len()).collect::<Vec<_>>();
        assert_eq!(sizes(0), Vec::<usize>::new());
        assert_eq!(sizes(1), [1]);
        assert_eq!(sizes(14), [14]);
        assert_eq!(sizes(64), [64]);
        assert_eq!(sizes(150), [64, 64, 22]);
        for n in 0..300 {
            let mut next = 0;
            for range in chunks(n, 64) {
                assert_eq!(range.start, next);
                assert!(!range.is_empty() && range.len() <= 64);
                next = range.end;
            }
            assert_eq!(next, n);
        }
    }

    #[test]
    fn placeholders_number_rows_in_order() {
        assert_eq!(placeholders(Backend::Postgres, 1, 2), "($1, $2)");
        assert_eq!(
            placeholders(Backend::Postgres, 2, 3),
            "($1, $2, $3), ($4, $5, $6)"
        );
        assert_eq!(placeholders(Backend::Sqlite, 2, 2), "(?, ?), (?, ?)");
    }
}
