//! The cost of drawing the next countdown, in nanoseconds per draw, beside
//! the cost of the raw random generator it draws from (same run).
//!
//! Run with `cargo bench -p sampler-runtime --bench draws`.

use std::hint::black_box;
use std::time::Instant;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use sampler_runtime::countdown::bench_draws;

const N_DRAWS: u64 = 20_000_000;

fn median_ns_per_draw(mut run: impl FnMut() -> u64) -> f64 {
    run(); // warm-up
    let mut samples: Vec<f64> = (0..7)
        .map(|_| {
            let start = Instant::now();
            black_box(run());
            start.elapsed().as_nanos() as f64 / N_DRAWS as f64
        })
        .collect();
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn main() {
    if std::env::args().skip(1).any(|a| !a.starts_with("--")) {
        return;
    }
    let baseline = median_ns_per_draw(|| {
        let mut rng = SmallRng::seed_from_u64(1);
        (0..N_DRAWS).fold(0u64, |sum, _| sum.wrapping_add(rng.next_u64()))
    });
    println!("countdown draws, {N_DRAWS} per run, median of 7 runs");
    println!("  raw generator (SmallRng::next_u64)  {baseline:>6.2} ns/draw");
    for sparsity in [1.0, 100.0, 1_000.0, 1_000_000.0] {
        let per_draw = median_ns_per_draw(|| bench_draws(sparsity, N_DRAWS));
        println!(
            "  geometric, sparsity {sparsity:>9}      {per_draw:>6.2} ns/draw  ({:.1}x the raw generator; one draw per {sparsity} events on average)",
            per_draw / baseline
        );
    }
}
