//! Sampling rates learned from a training set of runs (issue 19): each
//! site's executions per run estimated from its sampled counts, and the
//! rate and countdown scale chosen so that every site is observed about
//! `target` times per run within a budget on the whole program's
//! observations (`schema/rates-format.md`, which gives the rules).
//!
//! [`Training`] accumulates the runs ([`Training::run`] is a
//! [`RowVisitor`] of stored blobs; [`Training::add_samples`] takes parsed
//! samples), [`choose`] picks the rates, [`compute`] writes them as a
//! [`Rates`] file. [`from_run_files`] and [`from_collector`] read the two
//! kinds of training sets; `sampler-analyze rates` and the collector's
//! `GET /api/v1/rates` and `sampler-collector rates` are built on them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use futures_util::TryStreamExt;
use sampler_formats::{
    Rates, RatesSource, SampleKind, SectionKey, SiteRate, SiteTableReader, observation_probability,
    scale_for_rate,
};
use sampler_resolve::extract_reports;
use sampler_storage::counters::{RowVisitor, Rows, RunSamples, walk};
use sampler_storage::store::Store;
use sqlx::Row;

/// The expected observations per site per run asked for by default: the
/// PLDI'05 study's 100.
pub const DEFAULT_TARGET: f64 = 100.0;

/// The default bound on the whole program's expected observations per run.
pub const DEFAULT_BUDGET: f64 = 100_000.0;

/// The steps of the bisection that lowers the target to meet the budget.
const BISECTION_STEPS: u32 = 64;

/// The scale each site had in the training build: its countdown decrement,
/// 0 for counted on every execution. Builds do not record it yet, so
/// [`UniformScales`] (1 everywhere) is what the tools use today.
pub trait TrainingScales {
    /// The scale of site `site` of `key`.
    fn scale(&self, key: &SectionKey, site: u32) -> u32;
}

/// Scale 1 for every site: builds without rates.
#[derive(Debug, Clone, Copy, Default)]
pub struct UniformScales;

impl TrainingScales for UniformScales {
    fn scale(&self, _key: &SectionKey, _site: u32) -> u32 {
        1
    }
}

impl TrainingScales for sampler_formats::SiteScales {
    fn scale(&self, key: &SectionKey, site: u32) -> u32 {
        sampler_formats::SiteScales::scale(self, key, site)
    }
}

impl<F: Fn(&SectionKey, u32) -> u32> TrainingScales for F {
    fn scale(&self, key: &SectionKey, site: u32) -> u32 {
        self(key, site)
    }
}

/// Whether sites of `key`'s scheme count events (every scheme but
/// `bounds`, whose values are a minimum and a maximum).
fn counts_events(key: &SectionKey) -> bool {
    key.scheme.sample_kind() != Some(SampleKind::Bounds)
}

/// A training set, accumulated: per site of every counting scheme, the sum
/// over runs of its observations divided by their probability.
#[derive(Debug, Default)]
pub struct Training {
    sections: BTreeMap<SectionKey, Vec<f64>>,
    runs: u64,
    /// How many runs had each sparsity.
    sparsities: BTreeMap<u32, u64>,
    /// Runs left out because they did not say their sparsity.
    pub runs_without_sparsity: u64,
}

impl Training {
    /// An empty training set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a site table's (unit, scheme) and its number of sites: its
    /// sites are in the rates file even if no run observes them.
    pub fn add_table(&mut self, key: SectionKey, n_sites: u32) {
        if counts_events(&key) {
            let sums = self.sections.entry(key).or_default();
            if sums.len() < n_sites as usize {
                sums.resize(n_sites as usize, 0.0);
            }
        }
    }

    /// Adds the tables of `text` (`<sites>` sections).
    pub fn add_site_tables(&mut self, text: &str) -> Result<(), sampler_formats::ReadError> {
        let mut reader = SiteTableReader::new(text.as_bytes());
        while let Some(section) = reader.next_section()? {
            let n_sites = u32::try_from(section.sites.len()).unwrap_or(u32::MAX);
            self.add_table(section.key, n_sites);
        }
        Ok(())
    }

    /// Starts a run at `sparsity`: its rows follow, as [`RowVisitor`]
    /// calls on the returned visitor. `scales` gives each site's scale in
    /// the build the run ran.
    pub fn run<'a>(&'a mut self, sparsity: u32, scales: &'a dyn TrainingScales) -> RunVisitor<'a> {
        let sparsity = sparsity.max(1);
        self.runs += 1;
        *self.sparsities.entry(sparsity).or_default() += 1;
        RunVisitor {
            training: self,
            sparsity,
            scales,
            current: None,
        }
    }

    /// Adds a run at `sparsity` from its samples.
    pub fn add_samples(
        &mut self,
        sparsity: u32,
        samples: &RunSamples,
        scales: &dyn TrainingScales,
    ) {
        let mut run = self.run(sparsity, scales);
        for section in &samples.sections {
            match &section.rows {
                Rows::Counters { arity, rows } => {
                    run.section(section.key.clone(), section.n_sites, Some(*arity));
                    for (site, counters) in rows {
                        run.counters(*site, counters);
                    }
                }
                Rows::Bounds(_) => run.section(section.key.clone(), section.n_sites, None),
            }
        }
    }

    /// The training runs added.
    pub fn runs(&self) -> u64 {
        self.runs
    }

    /// The most common sparsity among the runs (the smallest of those
    /// tied), if there are runs.
    pub fn most_common_sparsity(&self) -> Option<u32> {
        self.sparsities
            .iter()
            .max_by(|(d1, n1), (d2, n2)| n1.cmp(n2).then(d2.cmp(d1)))
            .map(|(&sparsity, _)| sparsity)
    }

    /// Each site's estimated executions per run, in (unit, scheme, site)
    /// order; 0 for every site when there are no runs.
    pub fn estimates(&self) -> Vec<Estimate> {
        let runs = self.runs.max(1) as f64;
        self.sections
            .iter()
            .flat_map(|(key, sums)| {
                sums.iter().enumerate().map(move |(site, &sum)| Estimate {
                    key: key.clone(),
                    site: site as u32,
                    executions_per_run: sum / runs,
                })
            })
            .collect()
    }
}

/// One run's rows going into a [`Training`] (see [`Training::run`]).
pub struct RunVisitor<'a> {
    training: &'a mut Training,
    sparsity: u32,
    scales: &'a dyn TrainingScales,
    current: Option<SectionKey>,
}

impl std::fmt::Debug for RunVisitor<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunVisitor")
            .field("sparsity", &self.sparsity)
            .field("current", &self.current)
            .finish_non_exhaustive()
    }
}

impl RowVisitor for RunVisitor<'_> {
    fn section(&mut self, key: SectionKey, n_sites: u32, arity: Option<u32>) {
        self.current = None;
        if arity.is_some() && counts_events(&key) {
            self.training.add_table(key.clone(), n_sites);
            self.current = Some(key);
        }
    }

    fn counters(&mut self, site: u32, counters: &[u64]) {
        let Some(key) = &self.current else {
            return;
        };
        let Some(sums) = self.training.sections.get_mut(key) else {
            return;
        };
        if sums.len() <= site as usize {
            sums.resize(site as usize + 1, 0.0);
        }
        let observed: f64 = counters.iter().map(|&count| count as f64).sum();
        let probability = observation_probability(self.scales.scale(key, site), self.sparsity);
        sums[site as usize] += observed / probability;
    }
}

/// One site's estimated executions per run.
#[derive(Debug, Clone, PartialEq)]
pub struct Estimate {
    /// The site's unit and scheme.
    pub key: SectionKey,
    /// Its index in the (unit, scheme)'s site table.
    pub site: u32,
    /// Estimated executions per run.
    pub executions_per_run: f64,
}

/// The rate asked for a site executed `e` times per run, at `target` and
/// `sparsity`: 1 up to the target, else `target / e` but at least
/// `1/sparsity`.
pub fn wanted_rate(e: f64, target: f64, sparsity: u32) -> f64 {
    if e <= target {
        1.0
    } else {
        (target / e).max(1.0 / f64::from(sparsity.max(1)))
    }
}

/// The (realized rate, scale) of a site executed `e` times per run.
pub fn site_rate(e: f64, target: f64, sparsity: u32) -> (f64, u32) {
    let scale = scale_for_rate(wanted_rate(e, target, sparsity), sparsity);
    (observation_probability(scale, sparsity), scale)
}

/// Expected observations per run at `target`.
fn expected_at(estimates: &[Estimate], target: f64, sparsity: u32) -> f64 {
    estimates
        .iter()
        .map(|estimate| {
            estimate.executions_per_run * site_rate(estimate.executions_per_run, target, sparsity).0
        })
        .sum()
}

/// Rates chosen for a set of estimates.
#[derive(Debug, Clone, PartialEq)]
pub struct Choice {
    /// Each site's line, in the estimates' order.
    pub sites: Vec<SiteRate>,
    /// The target the rates are for: the one asked, or lower to meet the
    /// budget.
    pub target: f64,
    /// Expected observations per run with these rates.
    pub expected: f64,
    /// Expected observations per run with uniform sampling.
    pub uniform: f64,
    /// The budget was below uniform sampling's cost (the rates are then
    /// uniform's, rare sites unobserved in training still at 1).
    pub over_budget: bool,
}

/// Chooses every site's rate at `target`, lowered by bisection until the
/// expected observations per run are within `budget`.
pub fn choose(estimates: &[Estimate], sparsity: u32, target: f64, budget: f64) -> Choice {
    let sparsity = sparsity.max(1);
    let uniform: f64 = estimates
        .iter()
        .map(|estimate| estimate.executions_per_run * observation_probability(1, sparsity))
        .sum();
    let mut used = target;
    let mut over_budget = false;
    if expected_at(estimates, target, sparsity) > budget {
        if expected_at(estimates, 0.0, sparsity) > budget {
            used = 0.0;
            over_budget = true;
        } else {
            // E(0) <= budget < E(target), and E grows with the target.
            let (mut low, mut high) = (0.0, target);
            for _ in 0..BISECTION_STEPS {
                let middle = low + (high - low) / 2.0;
                if expected_at(estimates, middle, sparsity) <= budget {
                    low = middle;
                } else {
                    high = middle;
                }
            }
            used = low;
        }
    }
    let sites: Vec<SiteRate> = estimates
        .iter()
        .map(|estimate| {
            let (rate, scale) = site_rate(estimate.executions_per_run, used, sparsity);
            SiteRate {
                key: estimate.key.clone(),
                site: estimate.site,
                executions_per_run: estimate.executions_per_run,
                rate,
                scale,
            }
        })
        .collect();
    let expected = sites
        .iter()
        .map(|site| site.executions_per_run * site.rate)
        .sum();
    Choice {
        sites,
        target: used,
        expected,
        uniform,
        over_budget,
    }
}

/// What is asked of the rates.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RatesRequest {
    /// Expected observations per site per run.
    pub target: f64,
    /// Bound on the program's expected observations per run.
    pub budget: f64,
    /// The deployment sparsity; by default the training runs' most common.
    pub sparsity: Option<u32>,
}

impl Default for RatesRequest {
    fn default() -> Self {
        Self {
            target: DEFAULT_TARGET,
            budget: DEFAULT_BUDGET,
            sparsity: None,
        }
    }
}

/// `text` as a target: a number ≥ 0.
pub fn parse_target(text: &str) -> Result<f64, String> {
    parse_non_negative(text, "observations per site per run")
}

/// `text` as a budget: a number ≥ 0.
pub fn parse_budget(text: &str) -> Result<f64, String> {
    parse_non_negative(text, "observations per run")
}

fn parse_non_negative(text: &str, what: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(value) if value.is_finite() && value >= 0.0 => Ok(value),
        _ => Err(format!("`{text}`: expected a number ≥ 0 ({what})")),
    }
}

/// `text` as a sparsity: a whole number from 1 to 2^32 − 1.
pub fn parse_sparsity(text: &str) -> Result<u32, String> {
    match text.trim().parse::<u32>() {
        Ok(value) if value >= 1 => Ok(value),
        _ => Err(format!(
            "`{text}`: expected a whole number from 1 to {}",
            u32::MAX
        )),
    }
}

/// A rates file and what the tools say about it.
#[derive(Debug, Clone, PartialEq)]
pub struct Computed {
    /// The file.
    pub rates: Rates,
    /// The target the rates are for (below the one asked when the budget
    /// lowered it).
    pub target: f64,
    /// Things the user should know, one sentence each.
    pub warnings: Vec<String>,
}

/// The rates of `training` under `request`, computed from `source`.
pub fn compute(
    training: &Training,
    request: &RatesRequest,
    source: RatesSource,
) -> anyhow::Result<Computed> {
    let mut warnings = Vec::new();
    if training.runs_without_sparsity > 0 {
        warnings.push(format!(
            "{} runs without a sparsity were left out",
            training.runs_without_sparsity
        ));
    }
    if training.runs() == 0 {
        anyhow::bail!("no training runs (with a sparsity) to learn rates from");
    }
    let sparsity = match request.sparsity {
        Some(sparsity) => sparsity,
        None => training
            .most_common_sparsity()
            .expect("runs have sparsities"),
    };
    let choice = choose(
        &training.estimates(),
        sparsity,
        request.target,
        request.budget,
    );
    if choice.over_budget {
        warnings.push(format!(
            "the budget of {} observations per run is below uniform sampling's {} at sparsity {sparsity}: the rates are uniform's",
            request.budget, choice.uniform
        ));
    } else if choice.target < request.target {
        warnings.push(format!(
            "the budget of {} observations per run lowered the target from {} to {} observations per site per run",
            request.budget, request.target, choice.target
        ));
    }
    Ok(Computed {
        rates: Rates {
            source,
            sparsity,
            target: request.target,
            budget: request.budget,
            runs: training.runs(),
            expected: choice.expected,
            uniform: choice.uniform,
            sites: choice.sites,
        },
        target: choice.target,
        warnings,
    })
}

/// The `sparsity` of a run file's `outcome` subreport, if it has one.
fn outcome_sparsity(outcome: &str) -> Option<u32> {
    outcome
        .lines()
        .find_map(|line| line.strip_prefix("sparsity\t"))
        .and_then(|value| value.parse::<u32>().ok())
        .filter(|&sparsity| sparsity >= 1)
}

/// A training set from the run files of `dir` (`sampler-run --save`) and
/// the site tables of `files` (binaries or `.sites` files). The sites'
/// scales are those the binaries record (`.debug_site_scales`, a build
/// with rates) when they record any, else `scales`'.
pub fn from_run_files(
    dir: &Path,
    files: &[PathBuf],
    scales: &dyn TrainingScales,
) -> anyhow::Result<Training> {
    let recorded = crate::run_files::site_scales(files)?;
    let scales: &dyn TrainingScales = if recorded.is_empty() {
        scales
    } else {
        &recorded
    };
    let mut training = Training::new();
    for file in files {
        crate::run_files::for_each_site_table(file, &mut |text| training.add_site_tables(text))?;
    }
    for file in crate::run_files::run_files(dir)? {
        let name = file.display();
        let bytes = std::fs::read(&file).map_err(|error| anyhow::anyhow!("{name}: {error}"))?;
        let mut outcome = Vec::new();
        let n = extract_reports(bytes.as_slice(), "outcome", &mut outcome)
            .map_err(|error| anyhow::anyhow!("{name}: {error}"))?;
        if n == 0 {
            anyhow::bail!("{name}: no `outcome` subreport: not a run file of `sampler-run --save`");
        }
        let Some(sparsity) = outcome_sparsity(&String::from_utf8_lossy(&outcome)) else {
            training.runs_without_sparsity += 1;
            continue;
        };
        let mut samples = Vec::new();
        extract_reports(
            bytes.as_slice(),
            sampler_formats::SAMPLES_REPORT_ID,
            &mut samples,
        )
        .map_err(|error| anyhow::anyhow!("{name}: {error}"))?;
        let samples = RunSamples::parse(&samples)
            .map_err(|error| anyhow::anyhow!("{name}: samples: {error}"))?;
        training.add_samples(sparsity, &samples, scales);
    }
    Ok(training)
}

/// Why rates could not be read from a collector's database.
#[derive(Debug, thiserror::Error)]
pub enum CollectorRatesError {
    /// The application, the build, or runs to learn from are not there.
    #[error("{0}")]
    NotFound(String),
    /// Anything else (the database, a damaged blob).
    #[error(transparent)]
    Failed(#[from] anyhow::Error),
}

impl From<sqlx::Error> for CollectorRatesError {
    fn from(error: sqlx::Error) -> Self {
        Self::Failed(error.into())
    }
}

/// The rates of `application`'s build `build` (version, release), by
/// default its latest build with runs, from the collector's database.
pub async fn from_collector(
    store: &Store,
    application: &str,
    build: Option<(&str, &str)>,
    request: &RatesRequest,
    scales: &dyn TrainingScales,
) -> Result<Computed, CollectorRatesError> {
    if store.application_id(application).await?.is_none() {
        return Err(CollectorRatesError::NotFound(format!(
            "no application `{application}` in the collector's database"
        )));
    }
    let (build_id, version, release) = match build {
        Some((version, release)) => {
            let id = crate::collector_db::build_id(store, application, version, release)
                .await?
                .ok_or_else(|| {
                    CollectorRatesError::NotFound(format!(
                        "no build version `{version}` release `{release}` of `{application}` in the collector's database"
                    ))
                })?;
            (id, version.to_owned(), release.to_owned())
        }
        None => crate::collector_db::latest_build(store, application)
            .await?
            .ok_or_else(|| {
                CollectorRatesError::NotFound(format!(
                    "application `{application}` has no build with runs"
                ))
            })?,
    };
    let training = training_of_build(store, build_id, scales).await?;
    if training.runs() == 0 {
        return Err(CollectorRatesError::NotFound(format!(
            "build version `{version}` release `{release}` of `{application}` has no runs with a sparsity"
        )));
    }
    let source = RatesSource::Collector {
        application: application.to_owned(),
        version,
        release,
    };
    Ok(compute(&training, request, source)?)
}

/// The training set of build `build_id`: its site tables and its runs.
/// The sites' scales are those the build's files recorded
/// (`.debug_site_scales`, stored by `build add`) when it has any, else
/// `scales`'.
pub async fn training_of_build(
    store: &Store,
    build_id: i64,
    scales: &dyn TrainingScales,
) -> anyhow::Result<Training> {
    let recorded = crate::collector_db::build_scales(store, build_id).await?;
    let scales: &dyn TrainingScales = if recorded.is_empty() {
        scales
    } else {
        &recorded
    };
    let mut training = Training::new();
    let tables = sqlx::query(
        "SELECT st.unit_signature, st.scheme, st.n_sites FROM site_tables st \
         JOIN build_site_tables bst ON bst.site_table_id = st.id WHERE bst.build_id = $1",
    )
    .bind(build_id)
    .fetch_all(&store.pool)
    .await?;
    for row in &tables {
        let unit: String = row.try_get(0)?;
        let scheme: String = row.try_get(1)?;
        let n_sites: i64 = row.try_get(2)?;
        let key = SectionKey::new(
            unit.parse()
                .map_err(|error| anyhow::anyhow!("a site table in the database: {error}"))?,
            scheme
                .parse::<sampler_formats::SchemeName>()
                .map_err(|error| anyhow::anyhow!("a site table in the database: {error}"))?,
        );
        training.add_table(key, u32::try_from(n_sites).unwrap_or(u32::MAX));
    }
    let mut rows =
        sqlx::query("SELECT run_id, sparsity, counters FROM runs WHERE build_id = $1 ORDER BY id")
            .bind(build_id)
            .fetch(&store.pool);
    while let Some(row) = rows.try_next().await? {
        let sparsity: Option<i64> = row.try_get(1)?;
        let Some(sparsity) = sparsity
            .and_then(|sparsity| u32::try_from(sparsity).ok())
            .filter(|&sparsity| sparsity >= 1)
        else {
            training.runs_without_sparsity += 1;
            continue;
        };
        let blob: Vec<u8> = row.try_get(2)?;
        let mut run = training.run(sparsity, scales);
        walk(&blob, &mut run).map_err(|error| {
            let run_id: String = row.try_get(0).unwrap_or_default();
            anyhow::anyhow!("run {run_id}: {error}")
        })?;
    }
    Ok(training)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sampler_formats::{SchemeName, UnitSignature};
    use sampler_storage::counters::SectionSamples;

    const UNIT: &str = "0123456789abcdef0123456789abcdef";
    const OTHER: &str = "fedcba9876543210fedcba9876543210";

    fn key(unit: &str, scheme: &str) -> SectionKey {
        SectionKey::new(
            unit.parse::<UnitSignature>().unwrap(),
            scheme.parse::<SchemeName>().unwrap(),
        )
    }

    fn estimates(executions: &[f64]) -> Vec<Estimate> {
        executions
            .iter()
            .enumerate()
            .map(|(site, &executions_per_run)| Estimate {
                key: key(UNIT, "branches"),
                site: site as u32,
                executions_per_run,
            })
            .collect()
    }

    /// (rate, scale) of each site.
    fn chosen(choice: &Choice) -> Vec<(f64, u32)> {
        choice
            .sites
            .iter()
            .map(|site| (site.rate, site.scale))
            .collect()
    }

    #[test]
    fn rare_sites_at_1_others_inversely_to_frequency_at_least_1_over_d() {
        let choice = choose(
            &estimates(&[0.0, 1.0, 10.0, 100.0, 1000.0, 1e6]),
            100,
            DEFAULT_TARGET,
            DEFAULT_BUDGET,
        );
        assert_eq!(
            chosen(&choice),
            [
                // Never observed, and at most the target: always.
                (1.0, 0),
                (1.0, 0),
                (1.0, 0),
                (1.0, 0),
                // r = 0.1: scale round(ln 0.9 / ln 0.99) = round(10.48) = 10,
                // realized 1 − 0.99^10.
                (0.095_617_924_991_195_52, 10),
                // r = 10^-4, held to 1/D: scale 1, exactly 0.01.
                (0.01, 1),
            ]
        );
        assert_eq!(choice.target, 100.0);
        assert!(!choice.over_budget);
        // 1 + 10 + 100 + 1000 · 0.0956... + 10^6 · 0.01.
        assert_eq!(choice.expected, 10_206.617_924_991_195);
        assert_eq!(choice.uniform, 10_011.11);
    }

    #[test]
    fn the_budget_lowers_the_target_by_bisection() {
        // At T = 100: 1000 · q(10) + 10^6 · 0.01 = 10095.6 > 10050. The
        // greatest scale of the 1,000-execution site within the budget is
        // 5 (q(5) = 0.049, q(6) = 0.0585), which T/1000 asks for up to
        // 1 − 0.99^5.5 = 0.0537768...
        let sites = estimates(&[1000.0, 1e6]);
        let choice = choose(&sites, 100, 100.0, 10_050.0);
        assert_eq!(chosen(&choice), [(0.049_009_950_100_000_005, 5), (0.01, 1)]);
        assert_eq!(choice.expected, 10_049.009_950_1);
        assert_eq!(choice.uniform, 10_010.0);
        assert!(!choice.over_budget);
        assert!(
            (choice.target - 53.776_847_536_102_46).abs() < 1e-9,
            "{}",
            choice.target
        );
        // The greatest target within the budget: a hair more is over it.
        assert!(expected_at(&sites, choice.target + 1e-9, 100) > 10_050.0);
        // A budget that holds at the asked target changes nothing.
        let roomy = choose(&sites, 100, 100.0, 10_095.7);
        assert_eq!((roomy.target, roomy.sites[0].scale), (100.0, 10));
    }

    #[test]
    fn a_budget_below_uniform_gets_uniform_rates() {
        let choice = choose(&estimates(&[0.0, 1.0, 1000.0, 1e6]), 100, 100.0, 5000.0);
        assert!(choice.over_budget);
        assert_eq!(choice.target, 0.0);
        // At T = 0 every observed site is at 1/D; the never observed one
        // stays at 1 (it costs nothing expected).
        assert_eq!(chosen(&choice), [(1.0, 0), (0.01, 1), (0.01, 1), (0.01, 1)]);
        assert_eq!(choice.expected, choice.uniform);
        assert_eq!(choice.uniform, 10_010.01);
    }

    #[test]
    fn scales_above_the_cap_are_rate_1() {
        // At D = 10^9, r = 0.5 needs ln 0.5 / ln(1 − 10^-9) ≈ 6.9 · 10^8
        // decrements, more than 2^24: counted always instead. A site far
        // above the target is held to 1/D, scale 1.
        let choice = choose(&estimates(&[200.0, 1e12]), 1_000_000_000, 100.0, 1e12);
        assert_eq!(chosen(&choice), [(1.0, 0), (1e-9, 1)]);
        assert_eq!(choice.expected, 200.0 + 1000.0);
        // At sparsity 1 every site is always observed.
        let all = choose(&estimates(&[5.0, 1e6]), 1, 100.0, 1e12);
        assert_eq!(chosen(&all), [(1.0, 0), (1.0, 0)]);
        assert_eq!((all.expected, all.uniform), (1_000_005.0, 1_000_005.0));
    }

    /// A run's samples: branches rows of UNIT, a bounds section, and a
    /// function-entries section of a unit without a table.
    fn samples(branches: &[(u32, [u64; 2])], entries: &[(u32, u64)]) -> RunSamples {
        let mut sections = vec![
            SectionSamples {
                key: key(UNIT, "bounds"),
                n_sites: 2,
                rows: Rows::Bounds(vec![(
                    0,
                    sampler_formats::BoundValue::Integer(1),
                    sampler_formats::BoundValue::Integer(9),
                )]),
            },
            SectionSamples {
                key: key(UNIT, "branches"),
                n_sites: 4,
                rows: Rows::Counters {
                    arity: 2,
                    rows: branches
                        .iter()
                        .map(|(site, counters)| (*site, counters.to_vec()))
                        .collect(),
                },
            },
        ];
        if !entries.is_empty() {
            sections.push(SectionSamples {
                key: key(OTHER, "function-entries"),
                n_sites: 3,
                rows: Rows::Counters {
                    arity: 1,
                    rows: entries
                        .iter()
                        .map(|(site, count)| (*site, vec![*count]))
                        .collect(),
                },
            });
        }
        RunSamples { sections }
    }

    fn training(from_blobs: bool, scales: &dyn TrainingScales) -> Training {
        let mut training = Training::new();
        training
            .add_site_tables(&format!(
                "<sites unit=\"{UNIT}\" scheme=\"branches\">\n\
                 a.c\t1\tf\t0\tx\na.c\t2\tf\t1\ty\na.c\t3\tf\t2\tz\na.c\t4\tf\t3\tw\n</sites>\n\
                 <sites unit=\"{UNIT}\" scheme=\"bounds\">\n\
                 a.c\t1\tf\t0\tv\tlocal\tdirect\na.c\t2\tf\t1\tv\tlocal\tdirect\n</sites>\n"
            ))
            .unwrap();
        let runs = [
            (4, samples(&[(0, [2, 3]), (1, [1, 0])], &[(2, 7)])),
            (2, samples(&[(0, [1, 0]), (3, [0, 4])], &[])),
            (4, samples(&[(1, [0, 2])], &[(2, 1)])),
        ];
        for (sparsity, samples) in &runs {
            if from_blobs {
                let mut run = training.run(*sparsity, scales);
                walk(&samples.encode(), &mut run).unwrap();
            } else {
                training.add_samples(*sparsity, samples, scales);
            }
        }
        training
    }

    #[test]
    fn executions_are_observations_over_their_probability_averaged_over_runs() {
        for from_blobs in [false, true] {
            let training = training(from_blobs, &UniformScales);
            assert_eq!(training.runs(), 3);
            // Two runs at 4, one at 2.
            assert_eq!(training.most_common_sparsity(), Some(4));
            let estimates: Vec<(String, u32, f64)> = training
                .estimates()
                .into_iter()
                .map(|e| (e.key.to_string(), e.site, e.executions_per_run))
                .collect();
            let branches = key(UNIT, "branches").to_string();
            let entries = key(OTHER, "function-entries").to_string();
            assert_eq!(
                estimates,
                [
                    // (5 · 4 + 1 · 2) / 3; (1 · 4 + 2 · 4) / 3; never; 4 · 2 / 3.
                    (branches.clone(), 0, 22.0 / 3.0),
                    (branches.clone(), 1, 4.0),
                    (branches.clone(), 2, 0.0),
                    (branches, 3, 8.0 / 3.0),
                    // A section without a table: its sites from the runs.
                    (entries.clone(), 0, 0.0),
                    (entries.clone(), 1, 0.0),
                    (entries, 2, 32.0 / 3.0),
                ],
                "from blobs: {from_blobs}"
            );
        }
    }

    #[test]
    fn executions_follow_the_training_builds_scales() {
        // Site 0 of the branches counted on every execution (scale 0),
        // site 1 at scale 2: 1 − (3/4)^2 = 7/16 per execution at D = 4.
        let scales = |key: &SectionKey, site: u32| match (key.scheme.as_str(), site) {
            ("branches", 0) => 0,
            ("branches", 1) => 2,
            _ => 1,
        };
        let training = training(false, &scales);
        let estimates = training.estimates();
        assert_eq!(estimates[0].executions_per_run, (5.0 + 1.0) / 3.0);
        let q = observation_probability(2, 4);
        assert!((q - 7.0 / 16.0).abs() < 1e-15);
        assert_eq!(estimates[1].executions_per_run, (1.0 / q + 2.0 / q) / 3.0);
        assert_eq!(estimates[3].executions_per_run, 8.0 / 3.0);
    }

    #[test]
    fn the_file_says_what_it_was_computed_from() {
        let training = training(false, &UniformScales);
        let source = RatesSource::Runs {
            directory: "runs".into(),
        };
        let request = RatesRequest {
            target: 3.0,
            ..RatesRequest::default()
        };
        let computed = compute(&training, &request, source.clone()).unwrap();
        let rates = &computed.rates;
        assert_eq!((rates.sparsity, rates.runs, rates.target), (4, 3, 3.0));
        assert_eq!(rates.budget, DEFAULT_BUDGET);
        assert!(computed.warnings.is_empty());
        // 22/3 > 3: r = 9/22, scale round(ln(13/22) / ln(3/4)) = round(1.83) = 2;
        // 4 > 3: r = 3/4, scale round(ln(1/4) / ln(3/4)) = round(4.82) = 5.
        assert_eq!(rates.sites[0].scale, 2);
        assert_eq!(rates.sites[1].scale, 5);
        assert_eq!(rates.sites[2].scale, 0);
        assert_eq!(rates.sites[3].scale, 0);
        assert_eq!(rates.sites.len(), 7);
        let text = rates.to_text();
        assert!(text.starts_with(
            "sampler-rates\t1\nsource\truns\truns\nsparsity\t4\ntarget\t3\nbudget\t100000\nruns\t3\n"
        ));
        assert_eq!(&Rates::read(text.as_bytes()).unwrap(), rates);
        // A sparsity asked for, and a budget below uniform sampling: (22/3
        // + 4 + 8/3 + 32/3) / 2 = 37/3.
        let request = RatesRequest {
            target: 100.0,
            budget: 1.0,
            sparsity: Some(2),
        };
        let computed = compute(&training, &request, source.clone()).unwrap();
        assert_eq!(computed.rates.sparsity, 2);
        assert_eq!(
            computed.warnings,
            [
                "the budget of 1 observations per run is below uniform sampling's 12.333333333333332 at sparsity 2: the rates are uniform's"
            ]
        );
        assert!(
            compute(&Training::new(), &RatesRequest::default(), source)
                .unwrap_err()
                .to_string()
                .starts_with("no training runs")
        );
    }

    #[test]
    fn options_are_checked() {
        assert_eq!(parse_target("100"), Ok(100.0));
        assert_eq!(parse_target("0"), Ok(0.0));
        assert_eq!(parse_budget("2.5e3"), Ok(2500.0));
        assert!(parse_target("-1").is_err());
        assert!(parse_budget("inf").is_err());
        assert!(parse_budget("NaN").is_err());
        assert_eq!(parse_sparsity("100"), Ok(100));
        assert_eq!(
            parse_sparsity("0"),
            Err("`0`: expected a whole number from 1 to 4294967295".to_owned())
        );
        assert!(parse_sparsity("1.5").is_err());
    }
}
