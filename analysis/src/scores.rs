//! The scores of one predicate, exactly as the PLDI'05 paper and the
//! reference code (`cbiexp`) define them (analysis-and-collection.md
//! §A.2–A.3), and the spectrum-based scores of §A.7 over the same counts.

use statrs::distribution::{ContinuousCDF, Normal};

/// How often a predicate was observed and held, over the runs analysed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counts {
    /// F(P): failing runs where P was observed to be true.
    pub f_true: u64,
    /// S(P): successful runs where P was observed to be true.
    pub s_true: u64,
    /// F(P observed): failing runs where P's site was observed.
    pub f_observed: u64,
    /// S(P observed): successful runs where P's site was observed.
    pub s_observed: u64,
}

/// The runs analysed: how many failed, how many succeeded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Totals {
    /// NumF.
    pub failing: u64,
    /// NumS.
    pub successful: u64,
}

/// Which score orders the predicates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Ranking {
    /// The reference code's `hl`: `2 / (1/lb + log NumF / log F)`, the
    /// harmonic mean of the lower bound of Increase and the log-recall.
    /// The default: a predicate must be *confidently* predictive, and a
    /// high Increase seen in two runs does not outrank a slightly lower
    /// one seen in two hundred (the paper's Importance uses Increase and
    /// lets such lucky predicates through).
    #[default]
    HarmonicLowerBound,
    /// The paper's Importance: `2 / (1/Increase + 1/(log F / log NumF))`.
    Importance,
    /// Ochiai.
    Ochiai,
    /// Tarantula.
    Tarantula,
    /// DStar with exponent 2.
    DStar,
}

impl Ranking {
    /// Every ranking, by the name `sampler-analyze --rank-by` and the read
    /// API's `rank_by` give it.
    pub const NAMES: [(&'static str, Ranking); 5] = [
        ("harmonic", Ranking::HarmonicLowerBound),
        ("importance", Ranking::Importance),
        ("ochiai", Ranking::Ochiai),
        ("tarantula", Ranking::Tarantula),
        ("dstar", Ranking::DStar),
    ];

    /// The ranking named `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::NAMES
            .iter()
            .find(|(known, _)| *known == name)
            .map(|(_, ranking)| *ranking)
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        Self::NAMES
            .iter()
            .find(|(_, ranking)| *ranking == self)
            .map_or("harmonic", |(name, _)| name)
    }
}

/// The z value of a two-sided confidence level in percent (95 → 1.96).
pub fn z_of_confidence(percent: f64) -> Result<f64, ConfidenceError> {
    if !(percent > 0.0 && percent < 100.0) {
        return Err(ConfidenceError(percent));
    }
    let normal = Normal::standard();
    Ok(normal.inverse_cdf(0.5 + percent / 200.0))
}

/// A confidence level outside (0, 100).
#[derive(Debug, thiserror::Error)]
#[error("confidence {0}%: expected a level between 0 and 100, such as 95")]
pub struct ConfidenceError(pub f64);

/// Every score of one predicate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scores {
    /// Failure(P) = F(P) / (S(P) + F(P)); 0 when P was never true.
    pub failure: f64,
    /// Context(P) = F(obs) / (S(obs) + F(obs)); 0 when never observed.
    pub context: f64,
    /// Increase(P) = Failure − Context (0 under the reference code's guard,
    /// see [`Scores::compute`]).
    pub increase: f64,
    /// The lower bound of Increase's confidence interval.
    pub lower_bound: f64,
    /// The half width of that interval (Increase − lower bound).
    pub interval: f64,
    /// log F(P) / log NumF in [0, 1] (1 when F = NumF = 1, 0 when F ≤ 1
    /// otherwise).
    pub recall: f64,
    /// The paper's Importance; 0 where it is undefined.
    pub importance: f64,
    /// The reference code's harmonic mean of the lower bound and recall;
    /// 0 where it is undefined or the lower bound is not positive.
    pub harmonic_lower_bound: f64,
    /// Ochiai: ef / sqrt((ef + nf)(ef + ep)); 0 when a factor is 0.
    pub ochiai: f64,
    /// Tarantula; 0 when P never held in a failing run.
    pub tarantula: f64,
    /// DStar (* = 2): ef² / (ep + nf); `f64::INFINITY`-free: when
    /// ep + nf = 0 it is ef² + 1, above any finite value with ep + nf ≥ 1.
    pub dstar: f64,
}

/// The least number of runs where a predicate held for it to be retained
/// (the reference code's `retain_pred`).
pub const MIN_TRUE_RUNS: u64 = 10;

fn ratio(numerator: f64, denominator: f64) -> f64 {
    if denominator == 0.0 {
        0.0
    } else {
        numerator / denominator
    }
}

impl Scores {
    /// Computes every score of `counts` among `totals` runs, with `z` the
    /// normal quantile of the confidence level.
    ///
    /// Edge cases, each as the reference code or the paper decides:
    /// - never true (S(P) + F(P) = 0): Failure 0, so Increase ≤ 0;
    /// - never observed: Context 0; the predicate is never true either;
    /// - the reference code forces Increase to 0 when S(P) = S(obs) and
    ///   F(obs) = S(obs) (`compute_pred_stat`'s guard); we keep it, since
    ///   it only zeroes predicates true in every observing run of a site
    ///   observed equally often in failing and successful runs;
    /// - F(P) ≤ 1 or NumF ≤ 1: log-recall 0 (Importance and the harmonic
    ///   mean 0), except F = NumF = 1, where recall is 1 (as the reference
    ///   code's corrective ranker clamps it);
    /// - a non-positive Increase or lower bound makes Importance or the
    ///   harmonic mean 0 rather than a negative or infinite mean.
    pub fn compute(counts: Counts, totals: Totals, z: f64) -> Self {
        let Counts {
            f_true,
            s_true,
            f_observed,
            s_observed,
        } = counts;
        let (f, s, of, os) = (
            f_true as f64,
            s_true as f64,
            f_observed as f64,
            s_observed as f64,
        );
        let failure = ratio(f, s + f);
        let context = ratio(of, os + of);
        let increase = if s_true == s_observed && f_observed == s_observed {
            0.0
        } else {
            failure - context
        };
        let variance =
            ratio(failure * (1.0 - failure), s + f) + ratio(context * (1.0 - context), os + of);
        let interval = z * variance.sqrt();
        let lower_bound = increase - interval;
        let recall = if f_true == 1 && totals.failing == 1 {
            1.0
        } else if f_true <= 1 || totals.failing <= 1 {
            0.0
        } else {
            ((f.ln()) / (totals.failing as f64).ln()).clamp(0.0, 1.0)
        };
        let harmonic = |score: f64| {
            if score > 0.0 && recall > 0.0 {
                2.0 / (1.0 / score + 1.0 / recall)
            } else {
                0.0
            }
        };
        let (ef, ep) = (f, s);
        let nf = totals.failing.saturating_sub(f_true) as f64;
        let np = totals.successful.saturating_sub(s_true) as f64;
        let ochiai = ratio(ef, ((ef + nf) * (ef + ep)).sqrt());
        let fail_share = ratio(ef, ef + nf);
        let pass_share = ratio(ep, ep + np);
        let tarantula = ratio(fail_share, fail_share + pass_share);
        let dstar = if ep + nf == 0.0 {
            ef * ef + 1.0
        } else {
            ef * ef / (ep + nf)
        };
        Self {
            failure,
            context,
            increase,
            lower_bound,
            interval,
            recall,
            importance: harmonic(increase),
            harmonic_lower_bound: harmonic(lower_bound),
            ochiai,
            tarantula,
            dstar,
        }
    }

    /// The reference code's pruning rule: lower bound above 0 and true in
    /// at least [`MIN_TRUE_RUNS`] runs.
    pub fn retained(&self, counts: Counts) -> bool {
        self.lower_bound > 0.0 && counts.f_true + counts.s_true >= MIN_TRUE_RUNS
    }

    /// The score `ranking` orders by.
    pub fn score(&self, ranking: Ranking) -> f64 {
        match ranking {
            Ranking::HarmonicLowerBound => self.harmonic_lower_bound,
            Ranking::Importance => self.importance,
            Ranking::Ochiai => self.ochiai,
            Ranking::Tarantula => self.tarantula,
            Ranking::DStar => self.dstar,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const Z95: f64 = 1.959_963_984_540_054;

    fn close(a: f64, b: f64) {
        assert!((a - b).abs() < 1e-9, "{a} != {b}");
    }

    #[test]
    fn z_values_are_the_reference_tables() {
        close(z_of_confidence(95.0).unwrap(), Z95);
        assert!((z_of_confidence(90.0).unwrap() - 1.6449).abs() < 1e-4);
        assert!((z_of_confidence(99.0).unwrap() - 2.5758).abs() < 1e-4);
        assert_eq!(
            z_of_confidence(100.0).unwrap_err().to_string(),
            "confidence 100%: expected a level between 0 and 100, such as 95"
        );
        assert!(z_of_confidence(f64::NAN).is_err());
    }

    #[test]
    fn a_predictive_predicate_by_hand() {
        // F(P)=30, S(P)=10, F(obs)=40, S(obs)=160, NumF=50, NumS=950.
        let counts = Counts {
            f_true: 30,
            s_true: 10,
            f_observed: 40,
            s_observed: 160,
        };
        let totals = Totals {
            failing: 50,
            successful: 950,
        };
        let scores = Scores::compute(counts, totals, Z95);
        close(scores.failure, 0.75);
        close(scores.context, 0.2);
        close(scores.increase, 0.55);
        let se = (0.75f64 * 0.25 / 40.0 + 0.2 * 0.8 / 200.0).sqrt();
        close(scores.interval, Z95 * se);
        close(scores.lower_bound, 0.55 - Z95 * se);
        let recall = 30f64.ln() / 50f64.ln();
        close(scores.recall, recall);
        close(scores.importance, 2.0 / (1.0 / 0.55 + 1.0 / recall));
        close(
            scores.harmonic_lower_bound,
            2.0 / (1.0 / scores.lower_bound + 1.0 / recall),
        );
        // SBFL: ef=30, ep=10, nf=20, np=940.
        close(scores.ochiai, 30.0 / (50.0f64 * 40.0).sqrt());
        close(
            scores.tarantula,
            (30.0 / 50.0) / (30.0 / 50.0 + 10.0 / 950.0),
        );
        close(scores.dstar, 900.0 / 30.0);
        assert!(scores.retained(counts));
    }

    #[test]
    fn no_failing_runs() {
        let counts = Counts {
            f_true: 0,
            s_true: 12,
            f_observed: 0,
            s_observed: 40,
        };
        let scores = Scores::compute(
            counts,
            Totals {
                failing: 0,
                successful: 100,
            },
            Z95,
        );
        close(scores.failure, 0.0);
        close(scores.context, 0.0);
        close(scores.increase, 0.0);
        assert_eq!(
            (
                scores.recall,
                scores.importance,
                scores.harmonic_lower_bound
            ),
            (0.0, 0.0, 0.0)
        );
        assert_eq!(
            (scores.ochiai, scores.tarantula, scores.dstar),
            (0.0, 0.0, 0.0)
        );
        assert!(!scores.retained(counts));
    }

    #[test]
    fn true_in_one_failing_run_only() {
        // F(P) = 1: log 1 = 0, so recall, Importance and the harmonic mean are 0,
        // and fewer than 10 true runs prune it anyway.
        let counts = Counts {
            f_true: 1,
            s_true: 0,
            f_observed: 1,
            s_observed: 50,
        };
        let scores = Scores::compute(
            counts,
            Totals {
                failing: 20,
                successful: 80,
            },
            Z95,
        );
        close(scores.failure, 1.0);
        close(scores.increase, 1.0 - 1.0 / 51.0);
        assert_eq!(
            (
                scores.recall,
                scores.importance,
                scores.harmonic_lower_bound
            ),
            (0.0, 0.0, 0.0)
        );
        assert!(!scores.retained(counts));
    }

    #[test]
    fn a_single_failing_run_among_all() {
        // NumF = 1 and F(P) = 1: log 1 / log 1 is 0/0; recall is 1 as the
        // reference ranker clamps it.
        let counts = Counts {
            f_true: 1,
            s_true: 0,
            f_observed: 1,
            s_observed: 9,
        };
        let scores = Scores::compute(
            counts,
            Totals {
                failing: 1,
                successful: 9,
            },
            Z95,
        );
        close(scores.recall, 1.0);
        close(scores.importance, 2.0 / (1.0 / 0.9 + 1.0));
        // The interval: Failure 1 has no variance; Context 0.1 over 10 runs.
        close(scores.lower_bound, 0.9 - Z95 * (0.1f64 * 0.9 / 10.0).sqrt());
        // DStar with ep + nf = 0: above every finite score.
        close(scores.dstar, 2.0);
    }

    #[test]
    fn never_observed_and_observed_but_never_true() {
        let never = Scores::compute(
            Counts::default(),
            Totals {
                failing: 10,
                successful: 10,
            },
            Z95,
        );
        assert_eq!(never.failure, 0.0);
        assert_eq!(never.context, 0.0);
        assert_eq!(never.lower_bound, 0.0);
        assert!(!never.retained(Counts::default()));
        let counts = Counts {
            f_true: 0,
            s_true: 0,
            f_observed: 8,
            s_observed: 2,
        };
        let false_only = Scores::compute(
            counts,
            Totals {
                failing: 10,
                successful: 10,
            },
            Z95,
        );
        close(false_only.failure, 0.0);
        close(false_only.context, 0.8);
        close(false_only.increase, -0.8);
        assert!(false_only.lower_bound < 0.0);
        assert_eq!(
            (false_only.importance, false_only.harmonic_lower_bound),
            (0.0, 0.0)
        );
        assert!(!false_only.retained(counts));
    }

    #[test]
    fn the_reference_codes_guard_zeroes_increase() {
        // S(P) = S(obs) and F(obs) = S(obs): forced to 0 by compute_pred_stat.
        let counts = Counts {
            f_true: 3,
            s_true: 5,
            f_observed: 5,
            s_observed: 5,
        };
        let scores = Scores::compute(
            counts,
            Totals {
                failing: 5,
                successful: 5,
            },
            Z95,
        );
        assert_eq!(scores.increase, 0.0);
    }

    proptest::proptest! {
        #[test]
        fn scores_are_finite_and_in_range(
            f_observed in 0u64..1000, s_observed in 0u64..1000,
            f_share in 0.0f64..=1.0, s_share in 0.0f64..=1.0,
            extra_f in 0u64..1000, extra_s in 0u64..1000,
        ) {
            let f_true = (f_observed as f64 * f_share) as u64;
            let s_true = (s_observed as f64 * s_share) as u64;
            let counts = Counts { f_true, s_true, f_observed, s_observed };
            let totals = Totals { failing: f_observed + extra_f, successful: s_observed + extra_s };
            let scores = Scores::compute(counts, totals, Z95);
            for value in [scores.failure, scores.context, scores.recall, scores.ochiai, scores.tarantula] {
                proptest::prop_assert!((0.0..=1.0).contains(&value), "{value} in {scores:?}");
            }
            proptest::prop_assert!((-1.0..=1.0).contains(&scores.increase));
            proptest::prop_assert!(scores.lower_bound <= scores.increase);
            proptest::prop_assert!(scores.importance >= 0.0 && scores.importance <= 1.0);
            proptest::prop_assert!(scores.harmonic_lower_bound >= 0.0 && scores.harmonic_lower_bound <= scores.importance + 1e-12);
            proptest::prop_assert!(scores.dstar.is_finite() && scores.dstar >= 0.0);
            // More failing runs where it holds never lowers Ochiai or DStar.
            if f_true < f_observed {
                let more = Scores::compute(Counts { f_true: f_true + 1, ..counts }, totals, Z95);
                proptest::prop_assert!(more.ochiai >= scores.ochiai - 1e-12);
                proptest::prop_assert!(more.dstar >= scores.dstar - 1e-12);
            }
        }
    }
}
