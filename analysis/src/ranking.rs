//! Ranking and iterative redundancy elimination (analysis-and-collection.md
//! §A.4) over per-predicate sets of runs.
//!
//! Each predicate carries two compressed bitmaps of run numbers (`roaring`):
//! the runs where its site was observed and those where it held. Every
//! count the scores need is an intersection cardinality with the failing
//! runs or the runs still in play, so a round of elimination costs one
//! pass over the candidates' bitmaps, never over the runs' reports.

use std::cmp::Ordering;
use std::sync::Arc;

use roaring::RoaringBitmap;

use crate::scores::{Counts, MIN_TRUE_RUNS, Ranking, Scores, Totals};

/// Where one predicate was observed and where it held.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Observations {
    /// Runs where the predicate's site was observed: one bitmap shared by
    /// the predicates of a site.
    pub observed: Arc<RoaringBitmap>,
    /// Runs where it was observed to be true (a subset of `observed`).
    pub held: RoaringBitmap,
}

/// A predicate's place in a ranking.
#[derive(Debug, Clone, PartialEq)]
pub struct Ranked {
    /// Its index in the input.
    pub predicate: usize,
    /// Its counts over the runs in play.
    pub counts: Counts,
    /// Its scores.
    pub scores: Scores,
}

/// One predicate chosen by redundancy elimination.
#[derive(Debug, Clone, PartialEq)]
pub struct Chosen {
    /// The predicate, with its counts and scores when it was chosen.
    pub ranked: Ranked,
    /// Failing runs it explains: failing runs still in play where it held,
    /// which are then set aside.
    pub explains: u64,
    /// Failing runs left unexplained after it.
    pub failing_left: u64,
}

/// A whole analysis: the retained predicates ranked, and the elimination.
#[derive(Debug, Clone, PartialEq)]
pub struct Analysis {
    /// The runs: how many failed and succeeded.
    pub totals: Totals,
    /// Retained predicates (lower bound > 0, true in at least 10 runs), best
    /// first, scored over every run.
    pub ranking: Vec<Ranked>,
    /// The predicates chosen by elimination, in order.
    pub elimination: Vec<Chosen>,
}

/// A set of runs to intersect with, and whether it is every run from its
/// least to its greatest (then an intersection is a range's cardinality).
struct RunSet<'a> {
    runs: &'a RoaringBitmap,
    range: Option<std::ops::RangeInclusive<u32>>,
}

impl<'a> RunSet<'a> {
    fn new(runs: &'a RoaringBitmap) -> Self {
        let range = match (runs.min(), runs.max()) {
            (Some(min), Some(max)) if runs.len() == u64::from(max - min) + 1 => Some(min..=max),
            _ => None,
        };
        Self { runs, range }
    }

    fn intersection_len(&self, bitmap: &RoaringBitmap) -> u64 {
        match &self.range {
            Some(range) => bitmap.range_cardinality(range.clone()),
            None if self.runs.is_empty() => 0,
            None => bitmap.intersection_len(self.runs),
        }
    }
}

/// The counts of `observations`; `previous` are those of the predicate
/// scored just before, reused when it was observed in the same runs (the
/// predicates of one site are).
fn counts(
    observations: &Observations,
    previous: Option<(&Observations, Counts)>,
    active: &RunSet<'_>,
    failing: &RunSet<'_>,
) -> Counts {
    let (f_observed, s_observed) = match previous {
        Some((other, counts))
            if Arc::ptr_eq(&other.observed, &observations.observed)
                || other.observed == observations.observed =>
        {
            (counts.f_observed, counts.s_observed)
        }
        _ => {
            let f_observed = failing.intersection_len(&observations.observed);
            (
                f_observed,
                active.intersection_len(&observations.observed) - f_observed,
            )
        }
    };
    let f_true = failing.intersection_len(&observations.held);
    Counts {
        f_true,
        s_true: active.intersection_len(&observations.held) - f_true,
        f_observed,
        s_observed,
    }
}

/// Best first: higher score, then more failing runs where it held, then
/// the lower index (a total order, so results are reproducible).
fn better(a: &Ranked, b: &Ranked, ranking: Ranking) -> Ordering {
    b.scores
        .score(ranking)
        .total_cmp(&a.scores.score(ranking))
        .then(b.counts.f_true.cmp(&a.counts.f_true))
        .then(a.predicate.cmp(&b.predicate))
}

/// Scores `candidates` (and keeps the retained ones, when `retained`),
/// on two threads when there are many.
fn score_all(
    predicates: &[Observations],
    candidates: &[usize],
    active: &RoaringBitmap,
    failing: &RoaringBitmap,
    totals: Totals,
    z: f64,
) -> (Vec<Ranked>, usize) {
    let active = RunSet::new(active);
    let failing = RunSet::new(failing);
    // The retained predicates, and how many were tested (true in enough
    // runs to be judged at all).
    let score = |candidates: &[usize]| -> (Vec<Ranked>, usize) {
        let mut previous: Option<(usize, Counts)> = None;
        let mut out = Vec::new();
        let mut tested = 0;
        for &predicate in candidates {
            let counts = counts(
                &predicates[predicate],
                previous.map(|(other, counts)| (&predicates[other], counts)),
                &active,
                &failing,
            );
            previous = Some((predicate, counts));
            let ranked = Ranked {
                predicate,
                counts,
                scores: Scores::compute(counts, totals, z),
            };
            tested += usize::from(counts.f_true + counts.s_true >= MIN_TRUE_RUNS);
            if ranked.scores.retained(ranked.counts) {
                out.push(ranked);
            }
        }
        (out, tested)
    };
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    if threads < 2 || candidates.len() < 4096 {
        return score(candidates);
    }
    let (low, high) = candidates.split_at(candidates.len() / 2);
    std::thread::scope(|scope| {
        let low = scope.spawn(|| score(low));
        let (mut high, tested_high) = score(high);
        let (mut out, tested_low) = low.join().expect("scoring does not panic");
        out.append(&mut high);
        (out, tested_low + tested_high)
    })
}

/// The one-sided p-value of "Increase > 0" under the normal approximation
/// the lower bound uses (the bound is above 0 exactly when this is below
/// the confidence level's tail).
pub fn increase_p_value(scores: &crate::scores::Scores, z: f64) -> f64 {
    use statrs::distribution::{ContinuousCDF, Normal};
    let deviation = if z > 0.0 { scores.interval / z } else { 0.0 };
    if deviation <= 0.0 {
        return if scores.increase > 0.0 { 0.0 } else { 1.0 };
    }
    1.0 - Normal::standard().cdf(scores.increase / deviation)
}

/// Keeps the predicates that Benjamini and Hochberg's procedure accepts at
/// false discovery rate `q` among `tested` hypotheses. Only retained
/// predicates are at hand; those left out have larger p-values, so the
/// threshold found is at most the full procedure's: never less strict.
fn benjamini_hochberg(ranked: Vec<Ranked>, tested: usize, q: f64, z: f64) -> Vec<Ranked> {
    let mut p_values: Vec<f64> = ranked
        .iter()
        .map(|r| increase_p_value(&r.scores, z))
        .collect();
    p_values.sort_by(f64::total_cmp);
    let m = tested.max(ranked.len()).max(1) as f64;
    let threshold = p_values
        .iter()
        .enumerate()
        .filter(|(k, p)| **p <= (*k as f64 + 1.0) * q / m)
        .map(|(_, p)| *p)
        .next_back();
    match threshold {
        Some(threshold) => ranked
            .into_iter()
            .filter(|r| increase_p_value(&r.scores, z) <= threshold)
            .collect(),
        None => Vec::new(),
    }
}

/// Ranks `predicates` over `runs`, of which `failing` failed, and runs
/// the elimination: repeatedly choose the best retained predicate, set
/// aside every run where it held, and re-score the others on the runs
/// left; stop when no failing run is left or no predicate is retained.
pub fn analyse(
    predicates: &[Observations],
    runs: &RoaringBitmap,
    failing: &RoaringBitmap,
    ranking: Ranking,
    z: f64,
) -> Analysis {
    analyse_with_fdr(predicates, runs, failing, ranking, z, None)
}

/// [`analyse`], and when `fdr` is given, the candidates are further
/// limited to those Benjamini and Hochberg's procedure accepts at that
/// false discovery rate among every predicate true in enough runs to be
/// tested. The pruning rule alone bounds each predicate's chance of being
/// retained by luck (2.5% at 95%), not the whole ranking's: among hundreds
/// of predicates a few are retained under any labelling.
pub fn analyse_with_fdr(
    predicates: &[Observations],
    runs: &RoaringBitmap,
    failing: &RoaringBitmap,
    ranking: Ranking,
    z: f64,
    fdr: Option<f64>,
) -> Analysis {
    let failing = failing & runs;
    let totals = Totals {
        failing: failing.len(),
        successful: runs.len() - failing.len(),
    };
    let all: Vec<usize> = (0..predicates.len()).collect();
    let (mut ranked, tested) = score_all(predicates, &all, runs, &failing, totals, z);
    if let Some(q) = fdr {
        ranked = benjamini_hochberg(ranked, tested, q, z);
    }
    ranked.sort_by(|a, b| better(a, b, ranking));

    // Candidates are the predicates retained over all runs: pruning first
    // is safe for this variant, which sets aside every run where the
    // chosen predicate held (§A.4, and the reference ranker). Each round
    // drops those no longer retained on the runs left.
    let mut candidates: Vec<usize> = ranked.iter().map(|ranked| ranked.predicate).collect();
    let mut active = runs.clone();
    let mut failing_active = failing.clone();
    let mut elimination = Vec::new();
    while !failing_active.is_empty() && !candidates.is_empty() {
        let totals = Totals {
            failing: failing_active.len(),
            successful: active.len() - failing_active.len(),
        };
        let (round, _) = score_all(predicates, &candidates, &active, &failing_active, totals, z);
        let Some(best) = round.iter().min_by(|a, b| better(a, b, ranking)).cloned() else {
            break;
        };
        candidates = round
            .iter()
            .map(|ranked| ranked.predicate)
            .filter(|&p| p != best.predicate)
            .collect();
        let held = &predicates[best.predicate].held;
        let explains = held.intersection_len(&failing_active);
        active -= held;
        failing_active -= held;
        elimination.push(Chosen {
            ranked: best,
            explains,
            failing_left: failing_active.len(),
        });
    }
    Analysis {
        totals,
        ranking: ranked,
        elimination,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bitmap(runs: impl IntoIterator<Item = u32>) -> RoaringBitmap {
        runs.into_iter().collect()
    }

    const Z95: f64 = 1.959_963_984_540_054;

    /// 200 runs: 0..40 fail by bug A (predicate 0 holds there), 40..60 fail
    /// by bug B (predicate 1 holds there); predicate 2 is a super-bug
    /// predictor true in every failing run and in half the successful ones;
    /// predicate 3 holds at random in every run; every site is observed in
    /// every run.
    fn two_bugs() -> (Vec<Observations>, RoaringBitmap, RoaringBitmap) {
        let all = bitmap(0..200);
        let failing = bitmap(0..60);
        let predicates = vec![
            Observations {
                observed: Arc::new(all.clone()),
                held: bitmap(0..40),
            },
            Observations {
                observed: Arc::new(all.clone()),
                held: bitmap(40..60),
            },
            Observations {
                observed: Arc::new(all.clone()),
                held: bitmap((0..60).chain((60..200).step_by(2))),
            },
            Observations {
                observed: Arc::new(all.clone()),
                held: bitmap((0..200).step_by(3)),
            },
        ];
        (predicates, all, failing)
    }

    #[test]
    fn elimination_finds_each_bug_once() {
        let (predicates, runs, failing) = two_bugs();
        let analysis = analyse(
            &predicates,
            &runs,
            &failing,
            Ranking::HarmonicLowerBound,
            Z95,
        );
        assert_eq!(
            analysis.totals,
            Totals {
                failing: 60,
                successful: 140
            }
        );
        let ranked: Vec<usize> = analysis.ranking.iter().map(|r| r.predicate).collect();
        assert_eq!(ranked, [0, 1, 2]);
        let chosen: Vec<(usize, u64, u64)> = analysis
            .elimination
            .iter()
            .map(|c| (c.ranked.predicate, c.explains, c.failing_left))
            .collect();
        assert_eq!(chosen, [(0, 40, 20), (1, 20, 0)]);
        // Bug A's predicate: F=40, S=0, F(obs)=60, S(obs)=140.
        assert_eq!(
            analysis.ranking[0].counts,
            Counts {
                f_true: 40,
                s_true: 0,
                f_observed: 60,
                s_observed: 140
            }
        );
        // Chosen second on the 160 runs left: F=20 of 20 failing.
        assert_eq!(
            analysis.elimination[1].ranked.counts,
            Counts {
                f_true: 20,
                s_true: 0,
                f_observed: 20,
                s_observed: 140
            }
        );
    }

    #[test]
    fn a_false_discovery_rate_drops_what_one_predicate_in_forty_passes_by_luck() {
        // 1,000 runs, 0..390 failing. Predicate 0 holds in 200 failing runs;
        // predicate 1 is observed in 100 runs (39 failing) and holds in 9
        // failing and 4 successful ones: p ≈ 0.014, retained on its own;
        // 200 more predicates hold in every 50th run, shifted: noise.
        let runs = bitmap(0..1000);
        let failing = bitmap(0..390);
        let mut predicates = vec![
            Observations {
                observed: Arc::new(runs.clone()),
                held: bitmap(0..200),
            },
            Observations {
                observed: Arc::new(bitmap((0..39).chain(500..561))),
                held: bitmap((0..9).chain(500..504)),
            },
        ];
        for shift in 0..200 {
            predicates.push(Observations {
                observed: Arc::new(runs.clone()),
                held: bitmap((0..1000).filter(|run| (run + shift) % 50 == 0)),
            });
        }
        let plain = analyse(
            &predicates,
            &runs,
            &failing,
            Ranking::HarmonicLowerBound,
            Z95,
        );
        let retained: Vec<usize> = plain.ranking.iter().map(|r| r.predicate).collect();
        assert!(
            retained.contains(&0) && retained.contains(&1),
            "{retained:?}"
        );
        let marginal = plain.ranking.iter().find(|r| r.predicate == 1).unwrap();
        let p = increase_p_value(&marginal.scores, Z95);
        assert!((0.01..0.02).contains(&p), "{p}");
        let controlled = analyse_with_fdr(
            &predicates,
            &runs,
            &failing,
            Ranking::HarmonicLowerBound,
            Z95,
            Some(0.05),
        );
        let retained: Vec<usize> = controlled.ranking.iter().map(|r| r.predicate).collect();
        assert_eq!(retained, [0]);
        assert_eq!(controlled.elimination.len(), 1);
        assert_eq!(controlled.elimination[0].explains, 200);
    }

    #[test]
    fn shuffled_outcomes_retain_nothing_predictive() {
        let (predicates, runs, _) = two_bugs();
        // Failing runs spread evenly over every predicate's runs.
        let failing = bitmap((0..200).step_by(7));
        let analysis = analyse(
            &predicates,
            &runs,
            &failing,
            Ranking::HarmonicLowerBound,
            Z95,
        );
        assert_eq!(analysis.ranking, []);
        assert_eq!(analysis.elimination, []);
    }

    #[test]
    fn no_failing_runs_no_elimination() {
        let (predicates, runs, _) = two_bugs();
        let analysis = analyse(
            &predicates,
            &runs,
            &RoaringBitmap::new(),
            Ranking::Importance,
            Z95,
        );
        assert_eq!(
            analysis.totals,
            Totals {
                failing: 0,
                successful: 200
            }
        );
        assert_eq!(analysis.ranking, []);
        assert_eq!(analysis.elimination, []);
    }

    #[test]
    fn never_observed_predicates_are_never_ranked() {
        let (mut predicates, runs, failing) = two_bugs();
        predicates.push(Observations::default());
        let analysis = analyse(&predicates, &runs, &failing, Ranking::Ochiai, Z95);
        assert!(analysis.ranking.iter().all(|r| r.predicate != 4));
    }
}
