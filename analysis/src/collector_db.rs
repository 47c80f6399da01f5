//! Reading runs from a collector's database (read-only).

use futures_util::TryStreamExt;
use sampler_storage::store::Store;
use sqlx::Row;

use crate::dataset::Dataset;

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

/// Loads `application`'s site tables and runs into a dataset, calling
/// `progress(done, total)` as runs are read.
pub async fn load(
    store: &Store,
    application: &str,
    rule: &FailureRule,
    mut progress: impl FnMut(u64, u64),
) -> anyhow::Result<Dataset> {
    let application_id = store.application_id(application).await?.ok_or_else(|| {
        anyhow::anyhow!("no application `{application}` in the collector's database")
    })?;
    let mut dataset = Dataset::new();
    let tables = sqlx::query(
        "SELECT DISTINCT st.id, st.sites FROM site_tables st \
         JOIN build_site_tables bst ON bst.site_table_id = st.id \
         JOIN builds b ON b.id = bst.build_id WHERE b.application_id = $1 ORDER BY st.id",
    )
    .bind(application_id)
    .fetch_all(&store.pool)
    .await?;
    for row in &tables {
        let id: i64 = row.try_get(0)?;
        let text: String = row.try_get(1)?;
        dataset
            .add_site_tables(&text)
            .map_err(|error| anyhow::anyhow!("site table {id} in the database: {error}"))?;
    }
    let total: i64 = sqlx::query("SELECT COUNT(*) FROM runs WHERE application_id = $1")
        .bind(application_id)
        .fetch_one(&store.pool)
        .await?
        .try_get(0)?;
    let mut rows = sqlx::query(
        "SELECT run_id, exit_status, exit_signal, crash_group_id, counters FROM runs \
         WHERE application_id = $1 ORDER BY id",
    )
    .bind(application_id)
    .fetch(&store.pool);
    let mut run: u32 = 0;
    while let Some(row) = rows.try_next().await? {
        let run_id: String = row.try_get(0)?;
        let failed = rule.classify(row.try_get(1)?, row.try_get(2)?, row.try_get(3)?);
        let blob: Vec<u8> = row.try_get(4)?;
        dataset
            .add_run_blob(run, failed, &blob)
            .map_err(|error| anyhow::anyhow!("run {run_id}: {error}"))?;
        run += 1;
        if run.is_multiple_of(1024) {
            progress(u64::from(run), total as u64);
        }
    }
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
