//! Per-thread countdowns to the next sampled event.
//!
//! Each thread owns a random stream. A thread's first event starts a fresh
//! countdown sequence, exactly like any later sample, so no event, the
//! first of a thread included, is more likely to be sampled than another:
//! every event is sampled with probability 1/sparsity, independently.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};
use rand_distr::{Distribution, Exp};

use crate::config::Sampling;

/// How a runtime draws countdowns; built once from the configuration.
#[derive(Debug)]
pub(crate) enum Generator {
    Off,
    /// Every event sampled (sparsity 1).
    Always,
    /// Geometric gaps drawn as ⌊X⌋ + 1 with X ~ Exp(λ), λ = −ln(1 − p):
    /// P(⌊X⌋ ≥ k) = e^(−λk) = (1 − p)^k, so ⌊X⌋ + 1 is geometric on
    /// {1, 2, …} with success probability p, exactly. rand_distr's ziggurat
    /// `Exp` costs a few nanoseconds, where its `Geometric` (an exact
    /// rejection sampler) costs 60–140 ns per draw (BENCHMARKS.md).
    Geometric(Exp<f64>),
    Fixed(u32),
    Bank(Box<[i32]>),
}

impl Generator {
    pub(crate) fn new(sampling: Sampling) -> Self {
        match sampling {
            Sampling::Off => Self::Off,
            Sampling::Geometric { sparsity } if sparsity <= 1.0 => Self::Always,
            // Each event is sampled with probability p = 1/sparsity.
            Sampling::Geometric { sparsity } => match Exp::new(-(-1.0 / sparsity).ln_1p()) {
                Ok(exponential) => Self::Geometric(exponential),
                Err(_) => Self::Off,
            },
            Sampling::Fixed { period } => Self::Fixed(period),
            Sampling::Bank(bank) => Self::Bank(bank),
        }
    }
}

/// Bumped in a forked child, so that each thread notices and reseeds.
static FORK_GENERATION: AtomicU32 = AtomicU32::new(0);
/// Numbers threads in the order they start, for reproducible seeds.
static THREAD_SEQUENCE: AtomicU64 = AtomicU64::new(0);

/// Called in the child after `fork`: only atomics, async-signal-safe.
pub(crate) extern "C" fn after_fork_in_child() {
    FORK_GENERATION.fetch_add(1, Ordering::Relaxed);
}

/// One thread's stream.
#[derive(Debug)]
pub(crate) struct ThreadStream {
    rng: SmallRng,
    bank_slot: usize,
    thread_number: u64,
    fork_generation: u32,
}

impl ThreadStream {
    fn start(seed: Option<u64>) -> Self {
        let thread_number = THREAD_SEQUENCE.fetch_add(1, Ordering::Relaxed);
        let fork_generation = FORK_GENERATION.load(Ordering::Relaxed);
        Self {
            rng: seeded(seed, thread_number, fork_generation),
            bank_slot: 0,
            thread_number,
            fork_generation,
        }
    }

    /// Reseeds after a fork, so that parent and child differ.
    fn follow_fork(&mut self, seed: Option<u64>) {
        let generation = FORK_GENERATION.load(Ordering::Relaxed);
        if generation != self.fork_generation {
            self.fork_generation = generation;
            self.rng = seeded(seed, self.thread_number, generation);
        }
    }

    /// The number of events until the next sample, counting it: ≥ 1.
    fn draw(&mut self, generator: &Generator) -> i32 {
        match generator {
            Generator::Off => i32::MAX,
            // Failures before the first success, plus the success.
            Generator::Always => 1,
            // `as` saturates: gaps beyond i32::MAX (p below 1e-9) are capped.
            Generator::Geometric(exponential) => {
                (exponential.sample(&mut self.rng).floor() as i32).saturating_add(1)
            }
            Generator::Fixed(period) => *period as i32,
            Generator::Bank(bank) => {
                let countdown = bank[self.bank_slot];
                self.bank_slot = (self.bank_slot + 1) % bank.len();
                countdown
            }
        }
    }

    /// The countdown of a thread's first event: the one of a sequence
    /// started just before it. Fixed periods and banks start at a random
    /// phase, so that a thread's first event is not favoured either.
    fn first(&mut self, generator: &Generator) -> i32 {
        match generator {
            Generator::Fixed(period) => self.rng.random_range(1..=*period) as i32,
            Generator::Bank(bank) => {
                self.bank_slot = self.rng.random_range(0..bank.len());
                self.draw(generator)
            }
            _ => self.draw(generator),
        }
    }
}

/// A stream from `SAMPLER_SEED` mixed with the thread's number and the
/// fork generation (reproducible, distinct per thread), or from the OS.
fn seeded(seed: Option<u64>, thread_number: u64, fork_generation: u32) -> SmallRng {
    match seed {
        Some(base) => {
            let mixed = base
                ^ thread_number.wrapping_mul(0x9e37_79b9_7f4a_7c15)
                ^ u64::from(fork_generation).wrapping_mul(0xc2b2_ae3d_27d4_eb4f);
            SmallRng::seed_from_u64(mixed)
        }
        None => {
            let mut bytes = [0u8; 8];
            if !crate::sys::os_random(&mut bytes) {
                // No kernel randomness: still distinct per thread and run.
                let fallback = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |elapsed| elapsed.as_nanos() as u64);
                bytes = (fallback ^ thread_number.rotate_left(32) ^ crate::sys::getpid() as u64)
                    .to_ne_bytes();
            }
            SmallRng::seed_from_u64(u64::from_ne_bytes(bytes))
        }
    }
}

thread_local! {
    static STREAM: RefCell<Option<ThreadStream>> = const { RefCell::new(None) };
}

/// The slow path of a site: `countdown` has run out. Returns whether the
/// current event is sampled and stores the countdown of the events that
/// follow.
pub(crate) fn expire(countdown: &mut i32, generator: &Generator, seed: Option<u64>) -> bool {
    if matches!(generator, Generator::Off) {
        *countdown = i32::MAX;
        return false;
    }
    let sampled = STREAM.try_with(|cell| {
        let Ok(mut slot) = cell.try_borrow_mut() else {
            // Re-entered (a sampled signal handler interrupting us): skip.
            return None;
        };
        Some(match slot.as_mut() {
            None => {
                // The thread's first event: start a sequence here.
                let stream = slot.insert(ThreadStream::start(seed));
                crate::crash::prepare_thread();
                let first = stream.first(generator);
                if first == 1 {
                    *countdown = stream.draw(generator);
                    true
                } else {
                    *countdown = first - 1;
                    false
                }
            }
            Some(stream) => {
                stream.follow_fork(seed);
                *countdown = stream.draw(generator);
                true
            }
        })
    });
    match sampled {
        Ok(Some(sampled)) => sampled,
        // Thread exiting, or re-entered: leave this event out and retry
        // at the next one.
        _ => {
            *countdown = 1;
            false
        }
    }
}

/// The cost of one draw, for the benchmark.
#[doc(hidden)]
pub fn bench_draws(sparsity: f64, n_draws: u64) -> u64 {
    let generator = Generator::new(Sampling::Geometric { sparsity });
    let mut stream = ThreadStream::start(Some(1));
    let mut total = 0u64;
    for _ in 0..n_draws {
        total += stream.draw(&generator) as u64;
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng as _;

    #[test]
    fn sparsity_one_samples_every_event() {
        let generator = Generator::new(Sampling::Geometric { sparsity: 1.0 });
        let mut stream = ThreadStream::start(Some(7));
        assert!((0..1000).all(|_| stream.draw(&generator) == 1));
        assert_eq!(stream.first(&generator), 1);
    }

    #[test]
    fn fixed_periods_and_banks_cycle() {
        let mut stream = ThreadStream::start(Some(7));
        assert_eq!(stream.draw(&Generator::Fixed(5)), 5);
        let first = stream.first(&Generator::Fixed(5));
        assert!((1..=5).contains(&first));
        let bank = Generator::Bank(vec![3, 1, 4].into());
        stream.bank_slot = 0;
        let draws: Vec<i32> = (0..5).map(|_| stream.draw(&bank)).collect();
        assert_eq!(draws, [3, 1, 4, 3, 1]);
    }

    #[test]
    fn the_mean_gap_is_the_sparsity() {
        let generator = Generator::new(Sampling::Geometric { sparsity: 100.0 });
        let mut stream = ThreadStream::start(Some(42));
        let n = 200_000;
        let total: u64 = (0..n).map(|_| stream.draw(&generator) as u64).sum();
        let mean = total as f64 / n as f64;
        // Standard deviation of the mean: sqrt((1-p)/p^2 / n) ≈ 0.22.
        assert!((mean - 100.0).abs() < 5.0 * 0.2225, "mean {mean}");
    }

    #[test]
    fn seeded_streams_are_reproducible_and_distinct_per_thread_and_fork() {
        let a: Vec<u64> = (0..4).map(|_| seeded(Some(1), 0, 0).next_u64()).collect();
        let b: Vec<u64> = (0..4).map(|_| seeded(Some(1), 0, 0).next_u64()).collect();
        assert_eq!(a, b);
        assert_ne!(
            seeded(Some(1), 0, 0).next_u64(),
            seeded(Some(1), 1, 0).next_u64()
        );
        assert_ne!(
            seeded(Some(1), 0, 0).next_u64(),
            seeded(Some(1), 0, 1).next_u64()
        );
    }
}
