//! Reading runs from a collector's database (read-only).

use futures_util::TryStreamExt;
use sampler_storage::store::Store;
use sqlx::Row;

use sampler_storage::counters::walk;

use crate::dataset::{Batch, Dataset};

/// Which runs count as failures.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FailureRule {
    /// Non-zero exit statuses fail too (by default only fatal signals do).
    pub nonzero_exit: bool,
    /// These exit statuses fail (in addition to fatal signals).
    pub statuses: Vec<i64>,
    /// Only the runs of this crash group fail; runs failing otherwise are
    /// left out, so the group's own predictors come first.
    pub crash_group: Option<i64>,
}

impl FailureRule {
    /// Whether a run failed (`Some(true)`), succeeded (`Some(false)`), or
    /// is left out (`None`: another kind of failure, under `crash_group`).
    pub fn classify(
        &self,
        exit_status: i64,
        exit_signal: i64,
        crash_group: Option<i64>,
    ) -> Option<bool> {
        let failed = exit_signal != 0
            || (self.nonzero_exit && exit_status != 0)
            || self.statuses.contains(&exit_status);
        match self.crash_group {
            Some(group) if crash_group == Some(group) => Some(true),
            Some(_) if failed => None,
            Some(_) => Some(false),
            None => Some(failed),
        }
    }
}

/// Runs walked by one thread at a time.
const CHUNK: usize = 512;

/// Chunks in flight per walking thread.
const DEPTH: usize = 2;

/// One stored run, as read.
struct StoredRun {
    run: u32,
    run_id: String,
    failed: Option<bool>,
    /// The sparsity the run was sampled at, when stored.
    sparsity: Option<u32>,
    blob: Vec<u8>,
    /// With tail predicates: the run's last `trace` subreport, gzipped as
    /// stored.
    trace_gz: Option<Vec<u8>>,
}

/// Walks the blobs of `runs` into `batch`; the number of runs.
fn walk_chunk(batch: &mut Batch, runs: &[StoredRun]) -> anyhow::Result<usize> {
    for stored in runs {
        if batch.start_run(stored.run, stored.failed) {
            if let Some(sparsity) = stored.sparsity {
                batch.note_sparsity(sparsity);
            }
            walk(&stored.blob, batch)
                .map_err(|error| anyhow::anyhow!("run {}: {error}", stored.run_id))?;
            if let (Some(events), Some(trace_gz)) = (batch.tail(), &stored.trace_gz) {
                let mut text = Vec::new();
                std::io::Read::read_to_end(
                    &mut flate2::read::MultiGzDecoder::new(trace_gz.as_slice()),
                    &mut text,
                )
                .map_err(|error| anyhow::anyhow!("run {}: its trace: {error}", stored.run_id))?;
                let tail = crate::tail::tail_of_report(&text, events).map_err(|error| {
                    anyhow::anyhow!("run {}: its trace: {error}", stored.run_id)
                })?;
                if let Some(tail) = tail {
                    batch.add_samples(&tail);
                }
            }
        }
    }
    batch.group();
    Ok(runs.len())
}

/// Which runs of an application are analysed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    /// Only the runs (and site tables) of this build (its row id), instead
    /// of every build's, merged.
    pub build: Option<i64>,
    /// Also the tail predicates of each run's last K observations, from its
    /// stored `trace` subreport (`sampler-analyze --last K`).
    pub tail: Option<u32>,
}

/// The id of `application`'s build `version`/`release`, if there is one.
pub async fn build_id(
    store: &Store,
    application: &str,
    version: &str,
    release: &str,
) -> anyhow::Result<Option<i64>> {
    let row = sqlx::query(
        "SELECT b.id FROM builds b JOIN applications a ON a.id = b.application_id \
         WHERE a.name = $1 AND b.version = $2 AND b.release = $3",
    )
    .bind(application)
    .bind(version)
    .bind(release)
    .fetch_optional(&store.pool)
    .await?;
    Ok(row.map(|row| row.try_get(0)).transpose()?)
}

/// The scales build `build_id`'s sites were built with (`build_site_scales`,
/// from its files' `.debug_site_scales`): empty for a build without rates.
pub async fn build_scales(
    store: &Store,
    build_id: i64,
) -> anyhow::Result<sampler_formats::SiteScales> {
    let rows = sqlx::query(
        "SELECT unit_signature, scheme, scales FROM build_site_scales WHERE build_id = $1",
    )
    .bind(build_id)
    .fetch_all(&store.pool)
    .await?;
    let mut scales = sampler_formats::SiteScales::new();
    for row in &rows {
        let unit: String = row.try_get(0)?;
        let scheme: String = row.try_get(1)?;
        let lines: String = row.try_get(2)?;
        let text = format!("<scales unit=\"{unit}\" scheme=\"{scheme}\">\n{lines}</scales>\n");
        scales.add_text(&text).map_err(|error| {
            anyhow::anyhow!("the scales of build {build_id} in the database: {error}")
        })?;
    }
    Ok(scales)
}

/// `application`'s latest build with runs: (id, version, release). Latest
/// is the most recently registered (`build add`); a build never registered
/// counts from its first run.
pub async fn latest_build(
    store: &Store,
    application: &str,
) -> anyhow::Result<Option<(i64, String, String)>> {
    let row = sqlx::query(
        "SELECT b.id, b.version, b.release FROM builds b JOIN applications a ON a.id = b.application_id \
         WHERE a.name = $1 AND EXISTS (SELECT 1 FROM runs r WHERE r.build_id = b.id) \
         ORDER BY COALESCE(b.registered_ms, b.first_run_ms, 0) DESC, b.id DESC LIMIT 1",
    )
    .bind(application)
    .fetch_optional(&store.pool)
    .await?;
    Ok(row
        .map(|row| -> Result<_, sqlx::Error> {
            Ok((row.try_get(0)?, row.try_get(1)?, row.try_get(2)?))
        })
        .transpose()?)
}

/// Loads `application`'s site tables and runs into a dataset, calling
/// `progress(done, total)` as runs are read.
pub async fn load(
    store: &Store,
    application: &str,
    rule: &FailureRule,
    progress: impl FnMut(u64, u64),
) -> anyhow::Result<Dataset> {
    load_selected(store, application, &Selection::default(), rule, progress).await
}

/// [`load`], of the runs `selection` names.
pub async fn load_selected(
    store: &Store,
    application: &str,
    selection: &Selection,
    rule: &FailureRule,
    mut progress: impl FnMut(u64, u64),
) -> anyhow::Result<Dataset> {
    let application_id = store.application_id(application).await?.ok_or_else(|| {
        anyhow::anyhow!("no application `{application}` in the collector's database")
    })?;
    // A build is one of the application's, so filtering on it alone is
    // enough; the placeholder stays $1 so that both queries bind one value.
    let (scope, key) = match selection.build {
        Some(build) => ("b.id = $1", build),
        None => ("b.application_id = $1", application_id),
    };
    let runs_scope = match selection.build {
        Some(_) => "build_id = $1",
        None => "application_id = $1",
    };
    let mut dataset = match selection.tail {
        Some(events) => Dataset::with_tail(events),
        None => Dataset::new(),
    };
    let tables = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT DISTINCT st.id, st.sites FROM site_tables st \
         JOIN build_site_tables bst ON bst.site_table_id = st.id \
         JOIN builds b ON b.id = bst.build_id WHERE {scope} ORDER BY st.id"
    )))
    .bind(key)
    .fetch_all(&store.pool)
    .await?;
    for row in &tables {
        let id: i64 = row.try_get(0)?;
        let text: String = row.try_get(1)?;
        dataset
            .add_site_tables(&text)
            .map_err(|error| anyhow::anyhow!("site table {id} in the database: {error}"))?;
    }
    // The scales the sites were built with (builds with rates), the
    // newest build's where several recorded one unit's.
    let scale_rows = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT s.unit_signature, s.scheme, s.scales FROM build_site_scales s \
         JOIN builds b ON b.id = s.build_id WHERE {scope} ORDER BY b.id"
    )))
    .bind(key)
    .fetch_all(&store.pool)
    .await?;
    let mut scales = sampler_formats::SiteScales::new();
    for row in &scale_rows {
        let unit: String = row.try_get(0)?;
        let scheme: String = row.try_get(1)?;
        let lines: String = row.try_get(2)?;
        scales
            .add_text(&format!(
                "<scales unit=\"{unit}\" scheme=\"{scheme}\">\n{lines}</scales>\n"
            ))
            .map_err(|error| anyhow::anyhow!("site scales in the database: {error}"))?;
    }
    dataset.record_scales(&scales);
    let total: i64 = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT COUNT(*) FROM runs WHERE {runs_scope}"
    )))
    .bind(key)
    .fetch_one(&store.pool)
    .await?
    .try_get(0)?;
    let mut rows = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT run_id, exit_status, exit_signal, crash_group_id, counters, sparsity, {trace} \
         FROM runs WHERE {runs_scope} ORDER BY id",
        // The last trace of the run (a crash's, or the one at exit after
        // an interim one), only when tail predicates are asked for.
        trace = if selection.tail.is_some() {
            "(SELECT s.data_gz FROM run_subreports s WHERE s.run_id = runs.id \
             AND s.name = 'trace' ORDER BY s.position DESC LIMIT 1)"
        } else {
            "NULL"
        }
    )))
    .bind(key)
    .fetch(&store.pool);
    // The blobs are walked on other threads, a chunk of runs at a time
    // (chunk i on worker i mod n), while this one reads the next rows and
    // adds the walked chunks to the dataset, in order. At most `DEPTH`
    // chunks per worker are in flight. (The receiving blocks this thread
    // while a worker finishes a chunk.)
    let n_workers = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .clamp(1, 4);
    let mut jobs = Vec::new();
    let mut results = Vec::new();
    let mut workers = Vec::new();
    for _ in 0..n_workers {
        let (job_sender, job_receiver) = std::sync::mpsc::channel::<(Batch, Vec<StoredRun>)>();
        let (result_sender, result_receiver) = std::sync::mpsc::channel();
        jobs.push(job_sender);
        results.push(result_receiver);
        workers.push(std::thread::spawn(move || {
            for (mut batch, runs) in job_receiver {
                let result = walk_chunk(&mut batch, &runs).map(|n| (batch, n));
                if result_sender.send(result).is_err() {
                    return;
                }
            }
        }));
    }
    let mut sent = 0usize;
    let mut added = 0usize;
    let mut done: u64 = 0;
    let mut receive = |dataset: &mut Dataset, added: &mut usize| -> anyhow::Result<()> {
        let (batch, n) = results[*added % n_workers]
            .recv()
            .map_err(|_| anyhow::anyhow!("a thread reading runs stopped"))??;
        dataset.add_batch(batch);
        *added += 1;
        done += n as u64;
        progress(done, total as u64);
        Ok(())
    };
    let mut chunk = Vec::with_capacity(CHUNK);
    let mut run: u32 = 0;
    let mut more = true;
    while more {
        match rows.try_next().await? {
            Some(row) => {
                chunk.push(StoredRun {
                    run,
                    run_id: row.try_get(0)?,
                    failed: rule.classify(row.try_get(1)?, row.try_get(2)?, row.try_get(3)?),
                    sparsity: row
                        .try_get::<Option<i64>, _>(5)?
                        .and_then(|sparsity| u32::try_from(sparsity).ok())
                        .filter(|&sparsity| sparsity >= 1),
                    blob: row.try_get(4)?,
                    trace_gz: if selection.tail.is_some() {
                        row.try_get(6)?
                    } else {
                        None
                    },
                });
                run = run
                    .checked_add(1)
                    .ok_or_else(|| anyhow::anyhow!("more than 2^32 runs"))?;
            }
            None => more = false,
        }
        if chunk.len() == CHUNK || (!more && !chunk.is_empty()) {
            if sent - added == DEPTH * n_workers {
                receive(&mut dataset, &mut added)?;
            }
            jobs[sent % n_workers]
                .send((dataset.batch(), std::mem::take(&mut chunk)))
                .map_err(|_| anyhow::anyhow!("a thread reading runs stopped"))?;
            sent += 1;
        }
    }
    while added < sent {
        receive(&mut dataset, &mut added)?;
    }
    drop(jobs);
    for worker in workers {
        worker
            .join()
            .map_err(|_| anyhow::anyhow!("a thread reading runs panicked"))?;
    }
    dataset.finish();
    progress(u64::from(run), total as u64);
    Ok(dataset)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_by_rule() {
        let signals = FailureRule::default();
        assert_eq!(signals.classify(0, 11, None), Some(true));
        assert_eq!(signals.classify(2, 0, None), Some(false));
        let exits = FailureRule {
            nonzero_exit: true,
            ..FailureRule::default()
        };
        assert_eq!(exits.classify(2, 0, None), Some(true));
        let listed = FailureRule {
            statuses: vec![3],
            ..FailureRule::default()
        };
        assert_eq!(
            (listed.classify(3, 0, None), listed.classify(2, 0, None)),
            (Some(true), Some(false))
        );
        let group = FailureRule {
            crash_group: Some(7),
            ..FailureRule::default()
        };
        assert_eq!(group.classify(0, 11, Some(7)), Some(true));
        assert_eq!(group.classify(0, 6, Some(8)), None);
        assert_eq!(group.classify(0, 0, None), Some(false));
    }
}
