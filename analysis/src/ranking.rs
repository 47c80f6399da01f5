//! Ranking and iterative redundancy elimination (analysis-and-collection.md
//! §A.4) over per-predicate sets of runs.
//!
//! Each predicate carries two compressed bitmaps of run numbers (`roaring`):
//! the runs where its site was observed and those where it held. Every
//! count the scores need is an intersection cardinality with the failing
//! runs or the runs still in play, so a round of elimination costs one
//! pass over the candidates' bitmaps, never over the runs' reports.

use std::cmp::Ordering;

use roaring::RoaringBitmap;

use crate::scores::{Counts, Ranking, Scores, Totals};

/// Where one predicate was observed and where it held.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Observations {
    /// Runs where the predicate's site was observed.
    pub observed: RoaringBitmap,
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
        Some((other, counts)) if other.observed == observations.observed => {
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
) -> Vec<Ranked> {
    let active = RunSet::new(active);
    let failing = RunSet::new(failing);
    let score = |candidates: &[usize]| -> Vec<Ranked> {
        let mut previous: Option<(usize, Counts)> = None;
        let mut out = Vec::new();
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
            if ranked.scores.retained(ranked.counts) {
                out.push(ranked);
            }
        }
        out
    };
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    if threads < 2 || candidates.len() < 4096 {
        return score(candidates);
    }
    let (low, high) = candidates.split_at(candidates.len() / 2);
    std::thread::scope(|scope| {
        let low = scope.spawn(|| score(low));
        let mut high = score(high);
        let mut out = low.join().expect("scoring does not panic");
        out.append(&mut high);
        out
    })
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
    let failing = failing & runs;
    let totals = Totals {
        failing: failing.len(),
        successful: runs.len() - failing.len(),
    };
    let all: Vec<usize> = (0..predicates.len()).collect();
    let mut ranked = score_all(predicates, &all, runs, &failing, totals, z);
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
        let round = score_all(predicates, &candidates, &active, &failing_active, totals, z);
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
                observed: all.clone(),
                held: bitmap(0..40),
            },
            Observations {
                observed: all.clone(),
                held: bitmap(40..60),
            },
            Observations {
                observed: all.clone(),
                held: bitmap((0..60).chain((60..200).step_by(2))),
            },
            Observations {
                observed: all.clone(),
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
