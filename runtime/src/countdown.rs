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
            Generator::Geometric(exponential) => geometric(exponential, &mut self.rng),
            Generator::Fixed(period) => *period as i32,
            Generator::Bank(bank) => {
                let countdown = bank[self.bank_slot];
                self.bank_slot = (self.bank_slot + 1) % bank.len();
                countdown
            }
        }
    }

    /// Fills `gaps` with the next draws, the first at the end (the end of
    /// the batch is used first, see `tls.c`): the same values in the same
    /// order as drawing them one at a time.
    fn fill(&mut self, generator: &Generator, gaps: &mut [i32]) {
        match generator {
            // Without a `match` per draw.
            Generator::Always => gaps.fill(1),
            Generator::Fixed(period) => gaps.fill(*period as i32),
            Generator::Geometric(exponential) => {
                // A local copy of the generator can stay in registers.
                let mut rng = self.rng.clone();
                for gap in gaps.iter_mut().rev() {
                    *gap = geometric(exponential, &mut rng);
                }
                self.rng = rng;
            }
            _ => {
                for gap in gaps.iter_mut().rev() {
                    *gap = self.draw(generator);
                }
            }
        }
    }

    /// Takes back the last `n` draws, which were never used: a forked
    /// child forgets the gaps its parent drew in advance. Only a bank has
    /// a position to go back to; a random stream is reseeded after a fork,
    /// and a fixed period has none.
    fn give_back(&mut self, generator: &Generator, n: usize) {
        if let Generator::Bank(bank) = generator {
            let len = bank.len();
            self.bank_slot = (self.bank_slot + len - n % len) % len;
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

/// A geometric gap: ⌊X⌋ + 1 with X ~ Exp(λ). X ≥ 0, so the conversion,
/// which truncates, is ⌊X⌋ (where `f64::floor` is a call into
/// compiler-builtins' software floor on baseline x86-64, which has no
/// `roundsd`). `as` saturates: gaps beyond i32::MAX (p below 1e-9) are
/// capped.
#[inline(always)]
fn geometric(exponential: &Exp<f64>, rng: &mut SmallRng) -> i32 {
    (exponential.sample(rng) as i32).saturating_add(1)
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

/// What the slow path of a site decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Expiry {
    /// Whether the current event is sampled.
    pub(crate) sampled: bool,
    /// The countdown of the events that follow.
    pub(crate) countdown: i32,
    /// How many gaps were drawn in advance: `gaps[..n_gaps]`, the next one
    /// to use last.
    pub(crate) n_gaps: usize,
}

impl Expiry {
    /// Nothing sampled, nothing drawn, and no need to ask again for
    /// 2³¹ − 1 events.
    pub(crate) const OFF: Self = Self {
        sampled: false,
        countdown: i32::MAX,
        n_gaps: 0,
    };
}

/// The slow path of a site: the thread's countdown has run out and it has
/// no gap drawn in advance left. Decides whether the current event is
/// sampled and which countdown follows, and draws the next `gaps.len()`
/// gaps in advance, all from the thread's stream in the order of use.
///
/// `events` is how many events the site or region that ran the countdown
/// out stands for (its *scale*, `-fsampler-rates`: the countdown went from
/// 0 to `-events` at a thread's first event). It matters only for that
/// first event, which starts the thread's stream: the execution is sampled
/// when the first gap falls within its `events` events, with probability
/// `1 − (1 − 1/D)^events` as for any other execution of that scale, and
/// otherwise leaves the gap minus its events. Later, the countdown running
/// out means the gap ended within the execution, however far below 1 it
/// went.
pub(crate) fn expire(
    gaps: &mut [i32],
    generator: &Generator,
    seed: Option<u64>,
    events: i32,
) -> Expiry {
    let events = events.max(1);
    if matches!(generator, Generator::Off) {
        return Expiry::OFF;
    }
    let expiry = STREAM.try_with(|cell| {
        let Ok(mut slot) = cell.try_borrow_mut() else {
            // Re-entered (a sampled signal handler interrupting us): skip.
            return None;
        };
        let (sampled, countdown, stream) = match slot.as_mut() {
            None => {
                // The thread's first event: start a sequence here.
                let stream = slot.insert(ThreadStream::start(seed));
                crate::crash::prepare_thread();
                crate::trace::prepare_thread();
                let first = stream.first(generator);
                if first <= events {
                    (true, stream.draw(generator), stream)
                } else {
                    (false, first - events, stream)
                }
            }
            Some(stream) => {
                stream.follow_fork(seed);
                (true, stream.draw(generator), stream)
            }
        };
        stream.fill(generator, gaps);
        Some(Expiry {
            sampled,
            countdown,
            n_gaps: gaps.len(),
        })
    });
    match expiry {
        Ok(Some(expiry)) => expiry,
        // Thread exiting, or re-entered: leave this event out and retry
        // at the next one.
        _ => Expiry {
            sampled: false,
            countdown: 1,
            n_gaps: 0,
        },
    }
}

/// Called in the child after `fork` (by the one thread there is, the one
/// that forked): bumps the generation, so that each stream reseeds, and
/// forgets the gaps drawn in advance from the parent's stream. Touches
/// atomics and thread-locals only: async-signal-safe.
pub(crate) extern "C" fn after_fork_in_child() {
    FORK_GENERATION.fetch_add(1, Ordering::Relaxed);
    let forgotten = crate::abi::forget_gaps();
    if forgotten == 0 {
        return;
    }
    let Some(runtime) = crate::RUNTIME.get() else {
        return;
    };
    let _ = STREAM.try_with(|cell| {
        if let Ok(mut slot) = cell.try_borrow_mut()
            && let Some(stream) = slot.as_mut()
        {
            stream.give_back(&runtime.generator, forgotten);
        }
    });
}

/// The cost of one draw, for the benchmark: draws made as the runtime
/// makes them, a batch of 62 at a time (`CBI__BATCH` in `tls.c`).
#[doc(hidden)]
pub fn bench_draws(sparsity: f64, n_draws: u64) -> u64 {
    let generator = Generator::new(Sampling::Geometric { sparsity });
    let mut stream = ThreadStream::start(Some(1));
    let mut gaps = [0i32; 62];
    let mut total = 0u64;
    for _ in 0..n_draws / gaps.len() as u64 {
        stream.fill(&generator, &mut gaps);
        total += std::hint::black_box(&gaps)
            .iter()
            .map(|&gap| gap as u64)
            .sum::<u64>();
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

    /// What `tls.c` does with `expire`: pops the batch, refills it when
    /// empty. The countdowns a thread uses must be those of one draw at a
    /// time from the same stream, across refills.
    fn countdowns_through_the_batch(generator: &Generator, n: usize) -> (Expiry, Vec<i32>, u64) {
        let mut gaps = [0i32; 5];
        let first = expire(&mut gaps, generator, Some(99), 1);
        let mut left = first.n_gaps;
        let mut countdowns = vec![first.countdown];
        while countdowns.len() < n {
            if left == 0 {
                let expiry = expire(&mut gaps, generator, Some(99), 1);
                assert!(expiry.sampled);
                assert_eq!(expiry.n_gaps, gaps.len());
                countdowns.push(expiry.countdown);
                left = expiry.n_gaps;
            } else {
                left -= 1;
                countdowns.push(gaps[left]);
            }
        }
        let thread_number = STREAM.with(|cell| cell.borrow().as_ref().unwrap().thread_number);
        (first, countdowns, thread_number)
    }

    #[test]
    fn a_threads_first_execution_of_scale_s_is_sampled_when_its_gap_falls_within_s() {
        // A fixed period of 4 starts each thread at a random phase 1..=4:
        // an execution standing for 4 events is always sampled; one
        // standing for 3 leaves the gap minus 3 when it is not.
        let generator = Generator::Fixed(4);
        for (events, always) in [(4, true), (3, false)] {
            let mut sampled = 0;
            for _ in 0..200 {
                let expiry = std::thread::scope(|scope| {
                    scope
                        .spawn(|| expire(&mut [0i32; 2], &generator, None, events))
                        .join()
                        .unwrap()
                });
                if expiry.sampled {
                    sampled += 1;
                    assert_eq!(expiry.countdown, 4);
                } else {
                    assert_eq!((events, expiry.countdown), (3, 1));
                }
            }
            if always {
                assert_eq!(sampled, 200);
            } else {
                // 3/4 of the threads: far from 0 and 200.
                assert!((100..200).contains(&sampled), "{sampled}");
            }
        }
    }

    #[test]
    fn the_batch_hands_out_the_draws_of_one_at_a_time() {
        for generator in [
            Generator::new(Sampling::Geometric { sparsity: 10.0 }),
            Generator::Fixed(4),
            Generator::Bank(vec![3, 1, 4, 1, 5, 9, 2].into()),
        ] {
            // A new thread: its first event starts its stream.
            let (first, countdowns, thread_number) = std::thread::scope(|scope| {
                scope
                    .spawn(|| countdowns_through_the_batch(&generator, 100))
                    .join()
                    .unwrap()
            });
            let mut reference = ThreadStream {
                rng: seeded(Some(99), thread_number, 0),
                bank_slot: 0,
                thread_number,
                fork_generation: 0,
            };
            let phase = reference.first(&generator);
            assert_eq!(first.sampled, phase == 1);
            let mut expected = vec![if phase == 1 {
                reference.draw(&generator)
            } else {
                phase - 1
            }];
            expected.extend((1..100).map(|_| reference.draw(&generator)));
            assert_eq!(countdowns, expected, "{generator:?}");
        }
    }

    #[test]
    fn a_bank_of_countdowns_takes_back_what_a_fork_forgot() {
        let bank = Generator::Bank(vec![1, 2, 3].into());
        let mut stream = ThreadStream::start(Some(7));
        let mut gaps = [0i32; 5];
        stream.fill(&bank, &mut gaps);
        assert_eq!(gaps, [2, 1, 3, 2, 1]);
        // Two used (1, 2), three forgotten (3, 1, 2): the next is 3.
        stream.give_back(&bank, 3);
        assert_eq!(stream.draw(&bank), 3);
        // A random stream has nothing to take back.
        let geometric = Generator::new(Sampling::Geometric { sparsity: 10.0 });
        stream.give_back(&geometric, 2);
        assert_eq!(stream.draw(&bank), 1);
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
