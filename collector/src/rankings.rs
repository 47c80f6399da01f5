//! The analysis's rankings, served by the read API (`GET /api/v1/ranking`)
//! and drawn by the dashboard: `sampler_analysis` over the runs this
//! collector stored, with source lines from the sources registered with
//! the builds.
//!
//! A ranking reads every run of the application, which takes seconds at
//! 100,000 runs, so each is computed once and kept until the data under it
//! change: a new run, or a build registered (which brings site tables,
//! sources and newly symbolized crashes). One ranking is computed at a
//! time (each holds every run's bitmaps in memory); requests for the same
//! one wait for it and then share it.

use std::collections::HashMap;
use std::io::Read;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sampler_analysis::collector_db::{self, FailureRule, Selection};
use sampler_analysis::report::{Report, SourceLines};
use sampler_analysis::scores::{Ranking, z_of_confidence};
use serde::Deserialize;
use sqlx::Row;

use crate::store::Store;
use crate::upload::Refusal;

/// Rankings kept at most; the oldest computed goes first.
const CACHED: usize = 32;

/// What to rank, as the read API's query string and the dashboard's
/// links spell it.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct RankingQuery {
    /// The application (the token's own when absent).
    pub app: Option<String>,
    /// Only the runs of this build (with `release`, default empty), instead
    /// of every build's.
    pub version: Option<String>,
    /// The build's release.
    pub release: Option<String>,
    /// Only the runs of this crash group fail: its own predictors.
    pub crash_group: Option<i64>,
    /// Non-zero exit statuses fail too.
    #[serde(default)]
    pub fail_on_exit: bool,
    /// These exit statuses fail (comma-separated).
    pub fail_on_status: Option<String>,
    /// The score that orders predicates: harmonic (default), importance,
    /// ochiai, tarantula, dstar.
    pub rank_by: Option<String>,
    /// Confidence level of Increase's lower bound, in percent (95).
    pub confidence: Option<f64>,
    /// Keep only predicates accepted at this false discovery rate.
    pub fdr: Option<f64>,
}

/// A checked `RankingQuery`.
#[derive(Debug, Clone, PartialEq)]
pub struct RankingSpec {
    /// Only this build's runs: (version, release).
    pub build: Option<(String, String)>,
    /// Which runs fail.
    pub rule: FailureRule,
    /// The ordering.
    pub ranking: Ranking,
    /// The confidence level, in percent.
    pub confidence: f64,
    /// The false discovery rate, if limited.
    pub fdr: Option<f64>,
}

impl RankingQuery {
    /// Checks the query; a bad parameter is named in a 400.
    pub fn spec(&self) -> Result<RankingSpec, Refusal> {
        let statuses = match &self.fail_on_status {
            None => Vec::new(),
            Some(list) => list
                .split(',')
                .filter(|item| !item.trim().is_empty())
                .map(|item| {
                    item.trim().parse::<i64>().map_err(|_| {
                        Refusal::malformed(format!(
                            "fail_on_status `{list}`: expected exit statuses separated by commas"
                        ))
                    })
                })
                .collect::<Result<_, _>>()?,
        };
        let ranking = match self.rank_by.as_deref() {
            None => Ranking::default(),
            Some(name) => Ranking::from_name(name).ok_or_else(|| {
                let names: Vec<&str> = Ranking::NAMES.iter().map(|(name, _)| *name).collect();
                Refusal::malformed(format!(
                    "rank_by `{name}`: expected one of {}",
                    names.join(", ")
                ))
            })?,
        };
        let confidence = self.confidence.unwrap_or(95.0);
        z_of_confidence(confidence)
            .map_err(|error| Refusal::malformed(format!("confidence: {error}")))?;
        let build = match (&self.version, &self.release) {
            (Some(version), release) => {
                Some((version.clone(), release.clone().unwrap_or_default()))
            }
            (None, Some(_)) => {
                return Err(Refusal::malformed(
                    "release without version: a build is named by its version (and release)",
                ));
            }
            (None, None) => None,
        };
        if let Some(q) = self.fdr
            && !(q > 0.0 && q < 1.0)
        {
            return Err(Refusal::malformed(format!(
                "fdr `{q}`: expected a rate between 0 and 1, such as 0.05"
            )));
        }
        Ok(RankingSpec {
            fdr: self.fdr,
            build,
            rule: FailureRule {
                nonzero_exit: self.fail_on_exit,
                statuses,
                crash_group: self.crash_group,
            },
            ranking,
            confidence,
        })
    }
}

/// A computed ranking with the source text it points into.
#[derive(Debug)]
pub struct RankingView {
    /// The analysis, as `sampler-analyze --format json` prints it.
    pub report: Report,
    /// The registered source files its predictors are in, as lines.
    pub sources: HashMap<String, Vec<String>>,
    /// How long it took.
    pub elapsed: Duration,
}

impl RankingView {
    /// Lines `line - around ..= line + around` of `file`, numbered, if its
    /// source was registered.
    pub fn context(&self, file: &str, line: u32, around: u32) -> Option<Vec<(u32, &str)>> {
        let lines = self.sources.get(file)?;
        let first = line.saturating_sub(around).max(1);
        let last = line.saturating_add(around).min(lines.len() as u32);
        (line as usize <= lines.len()).then(|| {
            (first..=last)
                .map(|number| (number, lines[number as usize - 1].as_str()))
                .collect()
        })
    }
}

/// Source lines from the registered sources.
struct Registered<'a>(&'a HashMap<String, Vec<String>>);

impl SourceLines for Registered<'_> {
    fn line(&mut self, file: &str, line: u32) -> Option<String> {
        self.0
            .get(file)?
            .get((line as usize).checked_sub(1)?)
            .map(|text| text.trim().to_owned())
    }
}

/// What a ranking depends on; when it changes, the ranking is stale.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Generation {
    runs: i64,
    last_run: i64,
    last_registration: i64,
}

#[derive(Debug, Clone, PartialEq)]
struct Key {
    application_id: i64,
    spec: RankingSpec,
}

struct Entry {
    key: Key,
    generation: Generation,
    view: Arc<RankingView>,
}

/// The rankings computed so far.
#[derive(Clone, Default)]
pub struct Rankings {
    cache: Arc<Mutex<Vec<Entry>>>,
    computing: Arc<tokio::sync::Mutex<()>>,
}

impl std::fmt::Debug for Rankings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rankings").finish_non_exhaustive()
    }
}

async fn generation(store: &Store, application_id: i64) -> Result<Generation, sqlx::Error> {
    let row = sqlx::query(
        "SELECT (SELECT COUNT(*) FROM runs WHERE application_id = $1), \
         (SELECT COALESCE(MAX(id), 0) FROM runs WHERE application_id = $1), \
         (SELECT COALESCE(MAX(registered_ms), 0) FROM builds WHERE application_id = $1)",
    )
    .bind(application_id)
    .fetch_one(&store.pool)
    .await?;
    Ok(Generation {
        runs: row.try_get(0)?,
        last_run: row.try_get(1)?,
        last_registration: row.try_get(2)?,
    })
}

/// The newest registered text of each of `files` among the application's
/// builds, as lines.
async fn registered_sources(
    store: &Store,
    application_id: i64,
    files: &[&str],
) -> anyhow::Result<HashMap<String, Vec<String>>> {
    let mut sources = HashMap::new();
    for file in files {
        let row = sqlx::query(
            "SELECT bs.data_gz FROM build_sources bs JOIN builds b ON b.id = bs.build_id \
             WHERE b.application_id = $1 AND bs.path = $2 ORDER BY b.id DESC LIMIT 1",
        )
        .bind(application_id)
        .bind(*file)
        .fetch_optional(&store.pool)
        .await?;
        if let Some(row) = row {
            let data_gz: Vec<u8> = row.try_get(0)?;
            let mut text = Vec::new();
            flate2::read::GzDecoder::new(data_gz.as_slice())
                .read_to_end(&mut text)
                .map_err(|error| anyhow::anyhow!("the stored source `{file}`: {error}"))?;
            let lines = String::from_utf8_lossy(&text)
                .lines()
                .map(str::to_owned)
                .collect();
            sources.insert((*file).to_owned(), lines);
        }
    }
    Ok(sources)
}

impl Rankings {
    fn cached(&self, key: &Key, generation: Generation) -> Option<Arc<RankingView>> {
        let cache = self.cache.lock().expect("the rankings' lock");
        cache
            .iter()
            .find(|entry| entry.key == *key && entry.generation == generation)
            .map(|entry| entry.view.clone())
    }

    /// The ranking of `application`'s runs under `spec`, computed now or
    /// earlier on the same data; `selection` is `spec`'s build, resolved
    /// by the caller (which answers an unknown one).
    pub async fn get(
        &self,
        store: &Store,
        application_id: i64,
        application: &str,
        spec: &RankingSpec,
        selection: &Selection,
    ) -> anyhow::Result<Arc<RankingView>> {
        let key = Key {
            application_id,
            spec: spec.clone(),
        };
        if let Some(view) = self.cached(&key, generation(store, application_id).await?) {
            return Ok(view);
        }
        let _computing = self.computing.lock().await;
        // Whoever held the lock may have computed this very ranking.
        let generation = generation(store, application_id).await?;
        if let Some(view) = self.cached(&key, generation) {
            return Ok(view);
        }
        let started = Instant::now();
        let selection = selection.clone();
        let (reader, application, rule) =
            (store.clone(), application.to_owned(), spec.rule.clone());
        let (ranking, z, fdr) = (spec.ranking, z_of_confidence(spec.confidence)?, spec.fdr);
        let handle = tokio::runtime::Handle::current();
        // Reading and ranking are CPU-bound for seconds: off the workers
        // that serve requests.
        let mut report = tokio::task::spawn_blocking(move || -> anyhow::Result<Report> {
            let dataset = handle.block_on(collector_db::load_selected(
                &reader,
                &application,
                &selection,
                &rule,
                |_, _| {},
            ))?;
            Ok(Report::analyse(
                &dataset,
                ranking,
                z,
                fdr,
                &mut sampler_analysis::report::NoSources,
            ))
        })
        .await??;
        let sources = registered_sources(store, application_id, &report.files()).await?;
        report.fill_sources(&mut Registered(&sources));
        let view = Arc::new(RankingView {
            report,
            sources,
            elapsed: started.elapsed(),
        });
        let mut cache = self.cache.lock().expect("the rankings' lock");
        cache.retain(|entry| entry.key != key);
        if cache.len() >= CACHED {
            cache.remove(0);
        }
        cache.push(Entry {
            key,
            generation,
            view: view.clone(),
        });
        Ok(view)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_are_checked_and_named() {
        let spec = RankingQuery {
            fail_on_status: Some("1, 3".into()),
            rank_by: Some("ochiai".into()),
            ..RankingQuery::default()
        }
        .spec()
        .unwrap();
        assert_eq!(spec.rule.statuses, vec![1, 3]);
        assert_eq!(spec.ranking, Ranking::Ochiai);
        assert_eq!(spec.confidence, 95.0);
        assert_eq!(spec.build, None);
        let build = RankingQuery {
            version: Some("1.2".into()),
            ..RankingQuery::default()
        }
        .spec()
        .unwrap();
        assert_eq!(build.build, Some(("1.2".to_owned(), String::new())));
        let bad = |query: RankingQuery| query.spec().unwrap_err().message;
        assert_eq!(
            bad(RankingQuery {
                rank_by: Some("best".into()),
                ..RankingQuery::default()
            }),
            "rank_by `best`: expected one of harmonic, importance, ochiai, tarantula, dstar"
        );
        assert_eq!(
            bad(RankingQuery {
                fail_on_status: Some("1,x".into()),
                ..RankingQuery::default()
            }),
            "fail_on_status `1,x`: expected exit statuses separated by commas"
        );
        assert_eq!(
            bad(RankingQuery {
                release: Some("3".into()),
                ..RankingQuery::default()
            }),
            "release without version: a build is named by its version (and release)"
        );
        assert!(
            bad(RankingQuery {
                confidence: Some(100.0),
                ..RankingQuery::default()
            })
            .starts_with("confidence: confidence 100%")
        );
    }

    #[test]
    fn context_is_clipped_to_the_file() {
        let view = RankingView {
            report: Report {
                runs: sampler_analysis::report::RunCounts {
                    failing: 0,
                    successful: 0,
                },
                predicates: 0,
                unresolved_sections: 0,
                elimination: Vec::new(),
                ranking: Vec::new(),
            },
            sources: HashMap::from([(
                "a.c".to_owned(),
                vec!["one".into(), "two".into(), "three".into()],
            )]),
            elapsed: Duration::ZERO,
        };
        assert_eq!(
            view.context("a.c", 1, 1),
            Some(vec![(1, "one"), (2, "two")])
        );
        assert_eq!(
            view.context("a.c", 3, 5),
            Some(vec![(1, "one"), (2, "two"), (3, "three")])
        );
        assert_eq!(view.context("a.c", 4, 1), None);
        assert_eq!(view.context("b.c", 1, 1), None);
    }
}
