//! An analysis as users read it: each ranked predicate with its site (file,
//! line, function, C text, source line), its scores and counts, and its
//! place in the elimination. `sampler-analyze` prints it as a table, JSON
//! or CSV; the collector serves the same value through its read API and
//! draws it on the dashboard, so the three never disagree.

use std::collections::HashMap;

use roaring::RoaringBitmap;
use serde::Serialize;

use crate::dataset::Dataset;
use crate::ranking::{Analysis, Ranked, analyse_with_fdr};
use crate::scores::Ranking;

/// Where predictors' source lines come from: the files on this machine
/// (offline), or the sources registered with a build (the collector).
pub trait SourceLines {
    /// Line `line` (1-based) of `file`, if known.
    fn line(&mut self, file: &str, line: u32) -> Option<String>;
}

/// Source lines read from the files the site tables name, each file read
/// once.
#[derive(Debug, Default)]
pub struct LocalSources {
    files: HashMap<String, Option<Vec<String>>>,
}

impl SourceLines for LocalSources {
    fn line(&mut self, file: &str, line: u32) -> Option<String> {
        let lines = self.files.entry(file.to_owned()).or_insert_with(|| {
            std::fs::read_to_string(file)
                .ok()
                .map(|text| text.lines().map(str::to_owned).collect())
        });
        lines
            .as_ref()?
            .get((line as usize).checked_sub(1)?)
            .map(|text| text.trim().to_owned())
    }
}

/// No source lines at all.
#[derive(Debug, Default)]
pub struct NoSources;

impl SourceLines for NoSources {
    fn line(&mut self, _file: &str, _line: u32) -> Option<String> {
        None
    }
}

/// How many runs failed and succeeded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct RunCounts {
    /// Failing runs analysed.
    pub failing: u64,
    /// Successful runs analysed.
    pub successful: u64,
}

/// One ranked predicate.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Predictor {
    /// The source file of its site, as the compiler saw it.
    pub file: String,
    /// The site's line.
    pub line: u32,
    /// The function holding the site.
    pub function: String,
    /// The site's scheme.
    pub scheme: String,
    /// The predicate as C text, such as `len > cap`.
    pub predicate: String,
    /// The site's source line, trimmed, when the source is available.
    pub source: Option<String>,
    /// Failure(P).
    pub failure: f64,
    /// Context(P).
    pub context: f64,
    /// Increase(P).
    pub increase: f64,
    /// The lower bound of Increase's confidence interval.
    pub lower_bound: f64,
    /// The paper's Importance.
    pub importance: f64,
    /// The harmonic mean of the lower bound and log-recall.
    pub harmonic: f64,
    /// Ochiai.
    pub ochiai: f64,
    /// Tarantula.
    pub tarantula: f64,
    /// DStar.
    pub dstar: f64,
    /// F(P): failing runs where it held.
    pub f: u64,
    /// S(P): successful runs where it held.
    pub s: u64,
    /// Failing runs where its site was observed.
    pub f_observed: u64,
    /// Successful runs where its site was observed.
    pub s_observed: u64,
    /// How likely each execution of its site was to be observed in a run
    /// at the runs' most common sparsity: 1/sparsity for a site built
    /// without rates, `1 − (1 − 1/sparsity)^scale` with
    /// `sampler-cc -fsampler-rates`, 1 for a site counted on every
    /// execution. Absent when no run's sparsity is known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    /// In the elimination list: failing runs it explains.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explains: Option<u64>,
    /// In the elimination list: failing runs left unexplained after it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failing_left: Option<u64>,
    /// In the ranking: its place in the elimination (1-based), if chosen.
    /// Always present in the ranking (`null` when not chosen).
    #[serde(skip_serializing_if = "Eliminated::is_absent")]
    pub eliminated: Eliminated,
}

impl Predictor {
    /// The score `ranking` orders by, as [`crate::scores::Scores::score`]
    /// gives it.
    pub fn score(&self, ranking: Ranking) -> f64 {
        match ranking {
            Ranking::HarmonicLowerBound => self.harmonic,
            Ranking::Importance => self.importance,
            Ranking::Ochiai => self.ochiai,
            Ranking::Tarantula => self.tarantula,
            Ranking::DStar => self.dstar,
        }
    }
}

/// A ranked predicate's place in the elimination.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Eliminated {
    /// Not applicable (an entry of the elimination list itself).
    #[serde(skip)]
    Absent,
    /// Chosen at this place (1-based), or not chosen (`None`).
    Place(Option<usize>),
}

impl Eliminated {
    fn is_absent(&self) -> bool {
        matches!(self, Self::Absent)
    }

    /// The place, if chosen.
    pub fn place(&self) -> Option<usize> {
        match self {
            Self::Place(place) => *place,
            Self::Absent => None,
        }
    }
}

/// A whole analysis, ready to print or serve.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// The runs analysed.
    pub runs: RunCounts,
    /// Predicates of the merged site tables.
    pub predicates: usize,
    /// Sections of runs that had no site table.
    pub unresolved_sections: u64,
    /// The predicates chosen by redundancy elimination, in order.
    pub elimination: Vec<Predictor>,
    /// Every retained predicate, best first.
    pub ranking: Vec<Predictor>,
}

fn predictor(dataset: &Dataset, ranked: &Ranked, sources: &mut dyn SourceLines) -> Predictor {
    let predicate = &dataset.predicates[ranked.predicate];
    let site = &dataset.sites[predicate.site];
    let (scores, counts) = (&ranked.scores, &ranked.counts);
    Predictor {
        file: site.file.clone(),
        line: site.line,
        function: site.function.clone(),
        scheme: site.scheme.clone(),
        predicate: predicate.text(&dataset.sites),
        source: sources.line(&site.file, site.line),
        failure: scores.failure,
        context: scores.context,
        increase: scores.increase,
        lower_bound: scores.lower_bound,
        importance: scores.importance,
        harmonic: scores.harmonic_lower_bound,
        ochiai: scores.ochiai,
        tarantula: scores.tarantula,
        dstar: scores.dstar,
        f: counts.f_true,
        s: counts.s_true,
        f_observed: counts.f_observed,
        s_observed: counts.s_observed,
        rate: dataset.observation_rate(predicate.site),
        explains: None,
        failing_left: None,
        eliminated: Eliminated::Absent,
    }
}

impl Report {
    /// The report of `analysis` over `dataset`.
    pub fn new(dataset: &Dataset, analysis: &Analysis, sources: &mut dyn SourceLines) -> Self {
        let elimination = analysis
            .elimination
            .iter()
            .map(|chosen| Predictor {
                explains: Some(chosen.explains),
                failing_left: Some(chosen.failing_left),
                ..predictor(dataset, &chosen.ranked, sources)
            })
            .collect();
        let places: HashMap<usize, usize> = analysis
            .elimination
            .iter()
            .enumerate()
            .map(|(place, chosen)| (chosen.ranked.predicate, place + 1))
            .collect();
        let ranking = analysis
            .ranking
            .iter()
            .map(|ranked| Predictor {
                eliminated: Eliminated::Place(places.get(&ranked.predicate).copied()),
                ..predictor(dataset, ranked, sources)
            })
            .collect();
        Self {
            runs: RunCounts {
                failing: analysis.totals.failing,
                successful: analysis.totals.successful,
            },
            predicates: dataset.predicates.len(),
            unresolved_sections: dataset.unresolved_sections,
            elimination,
            ranking,
        }
    }

    /// Sets each predictor's source line from `sources` (for a report
    /// made before its sources were at hand).
    pub fn fill_sources(&mut self, sources: &mut dyn SourceLines) {
        for predictor in self.elimination.iter_mut().chain(&mut self.ranking) {
            predictor.source = sources.line(&predictor.file, predictor.line);
        }
    }

    /// The source files its predictors are in, each once.
    pub fn files(&self) -> Vec<&str> {
        let mut files: Vec<&str> = self
            .elimination
            .iter()
            .chain(&self.ranking)
            .map(|predictor| predictor.file.as_str())
            .collect();
        files.sort_unstable();
        files.dedup();
        files
    }

    /// Analyses `dataset` (its failing runs as labelled) and reports it;
    /// `fdr` limits the retained predicates to a false discovery rate
    /// ([`crate::ranking::analyse_with_fdr`]).
    pub fn analyse(
        dataset: &Dataset,
        ranking: Ranking,
        z: f64,
        fdr: Option<f64>,
        sources: &mut dyn SourceLines,
    ) -> Self {
        let analysis = analyse_with_fdr(
            &dataset.observations,
            &dataset.runs,
            &dataset.failing,
            ranking,
            z,
            fdr,
        );
        Self::new(dataset, &analysis, sources)
    }
}

/// The same number of failing runs as `failing`, spread over `runs` by a
/// random permutation seeded with `seed`: a labelling that no predicate
/// can predict, to check that the analysis retains nothing by chance.
pub fn shuffled_outcomes(
    runs: &RoaringBitmap,
    failing: &RoaringBitmap,
    seed: u64,
) -> RoaringBitmap {
    use rand::SeedableRng;
    use rand::seq::SliceRandom;
    let mut all: Vec<u32> = runs.iter().collect();
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    all.shuffle(&mut rng);
    let count = (failing & runs).len() as usize;
    all.truncate(count);
    all.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shuffling_keeps_the_number_of_failures() {
        let runs: RoaringBitmap = (0..1000).collect();
        let failing: RoaringBitmap = (0..100).collect();
        let shuffled = shuffled_outcomes(&runs, &failing, 7);
        assert_eq!(shuffled.len(), 100);
        assert!(shuffled.is_subset(&runs));
        assert_ne!(shuffled, failing);
        assert_eq!(shuffled, shuffled_outcomes(&runs, &failing, 7));
        assert_ne!(shuffled, shuffled_outcomes(&runs, &failing, 8));
    }

    #[test]
    fn ranking_entries_say_null_when_not_chosen_and_elimination_entries_carry_explains() {
        let predictor = Predictor {
            file: "a.c".into(),
            line: 3,
            function: "f".into(),
            scheme: "branches".into(),
            predicate: "x > 0".into(),
            source: None,
            failure: 1.0,
            context: 0.5,
            increase: 0.5,
            lower_bound: 0.25,
            importance: 0.4,
            harmonic: 0.3,
            ochiai: 0.2,
            tarantula: 0.6,
            dstar: 4.0,
            f: 10,
            s: 0,
            f_observed: 20,
            s_observed: 20,
            rate: Some(0.01),
            explains: None,
            failing_left: None,
            eliminated: Eliminated::Place(None),
        };
        assert_eq!(
            Ranking::NAMES.map(|(_, ranking)| predictor.score(ranking)),
            [0.3, 0.4, 0.2, 0.6, 4.0]
        );
        let value = serde_json::to_value(&predictor).unwrap();
        assert_eq!(value["eliminated"], serde_json::Value::Null);
        assert_eq!(value["rate"], serde_json::json!(0.01));
        assert!(value.get("explains").is_none());
        let chosen = Predictor {
            explains: Some(10),
            failing_left: Some(0),
            eliminated: Eliminated::Absent,
            ..predictor
        };
        let value = serde_json::to_value(&chosen).unwrap();
        assert_eq!(value["explains"], 10);
        assert!(value.get("eliminated").is_none());
    }
}
