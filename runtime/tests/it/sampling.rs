//! The countdowns as instrumented code sees them: the number of samples,
//! the distribution of the gaps (across the refills of each thread's
//! batch of gaps drawn in advance: 100,000 samples per thread are some
//! 1,600 refills), a thread's first event, forks.

use super::*;

const SPARSITY: f64 = 100.0;
const EVENTS_PER_THREAD: u64 = 10_000_000;

/// P(gap ≤ g) for a geometric gap on {1, 2, …} with p = 1/sparsity.
fn cdf(gap: u64) -> f64 {
    1.0 - (1.0 - 1.0 / SPARSITY).powf(gap as f64)
}

/// Pearson's statistic over bins of about equal probability.
fn chi_square(histogram: &std::collections::BTreeMap<u64, u64>, n_bins: usize) -> f64 {
    let total: u64 = histogram.values().sum();
    // Upper edges g_k: the smallest gap with cdf ≥ k / n_bins.
    let mut edges = Vec::new();
    let mut gap = 1u64;
    for k in 1..n_bins {
        let target = k as f64 / n_bins as f64;
        while cdf(gap) < target {
            gap += 1;
        }
        edges.push(gap);
    }
    let mut statistic = 0.0;
    let mut lower = 0u64;
    for k in 0..n_bins {
        let upper = edges.get(k).copied();
        let observed: u64 = histogram
            .range(lower + 1..=upper.unwrap_or(u64::MAX))
            .map(|(_, count)| count)
            .sum();
        let probability = upper.map_or(1.0, cdf) - cdf(lower);
        let expected = probability * total as f64;
        statistic += (observed as f64 - expected).powi(2) / expected;
        lower = upper.unwrap_or(u64::MAX);
    }
    statistic
}

#[test]
fn every_thread_samples_one_event_in_sparsity_with_geometric_gaps() {
    let lab = Lab::new();
    let stats = lab.stats_static();
    let n_threads = 4;
    let output = lab.run(
        &stats,
        &[
            "gaps",
            &n_threads.to_string(),
            &EVENTS_PER_THREAD.to_string(),
        ],
        &[("SAMPLER_SPARSITY", "100"), ("SAMPLER_SEED", "20261121")],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    let mut threads: Vec<(u64, std::collections::BTreeMap<u64, u64>)> = Vec::new();
    for line in text.lines() {
        let words: Vec<&str> = line.split(' ').collect();
        match words.as_slice() {
            ["thread", _, "samples", n] => threads.push((n.parse().unwrap(), Default::default())),
            ["gap", gap, "count", n] => {
                let histogram = &mut threads.last_mut().unwrap().1;
                histogram.insert(gap.parse().unwrap(), n.parse().unwrap());
            }
            _ => panic!("unexpected line {line:?}"),
        }
    }
    assert_eq!(threads.len(), n_threads);
    let p = 1.0 / SPARSITY;
    let mean = EVENTS_PER_THREAD as f64 * p;
    let sigma = (EVENTS_PER_THREAD as f64 * p * (1.0 - p)).sqrt();
    for (thread, (n_samples, histogram)) in threads.iter().enumerate() {
        let deviation = (*n_samples as f64 - mean).abs() / sigma;
        assert!(
            deviation < 5.0,
            "thread {thread}: {n_samples} samples, {deviation:.1} standard deviations from {mean}"
        );
        // 20 bins, 19 degrees of freedom: 43.82 is the 0.999 quantile.
        let statistic = chi_square(histogram, 20);
        assert!(
            statistic < 43.82,
            "thread {thread}: chi-square {statistic:.1} with 19 degrees of freedom"
        );
    }
}

#[test]
fn a_threads_first_event_is_sampled_no_more_often_than_others() {
    let lab = Lab::new();
    let stats = lab.stats_static();
    let n_threads = 20_000u64;
    let output = lab.run(
        &stats,
        &["first", &n_threads.to_string()],
        &[("SAMPLER_SPARSITY", "100")],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let sampled: f64 = stdout(&output).trim().parse().unwrap();
    let p = 1.0 / SPARSITY;
    let mean = n_threads as f64 * p;
    let sigma = (n_threads as f64 * p * (1.0 - p)).sqrt();
    assert!(
        (sampled - mean).abs() < 5.0 * sigma,
        "{sampled} of {n_threads} first events sampled; expected {mean} ± {:.0}",
        5.0 * sigma
    );
}

#[test]
fn fixed_periods_banks_and_no_sparsity() {
    let lab = Lab::new();
    let stats = lab.stats_static();
    let count = |env: &[(&str, &str)]| -> u64 {
        let output = lab.run(&stats, &["count", "100000"], env);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        stdout(&output).trim().parse().unwrap()
    };
    assert_eq!(
        count(&[("SAMPLER_RANDOM", "fixed"), ("SAMPLER_SPARSITY", "10")]),
        10_000
    );
    assert_eq!(count(&[("SAMPLER_SPARSITY", "1")]), 100_000);
    assert_eq!(count(&[]), 0);
    let bank: Vec<u8> = [4i32, 4, 4, 4]
        .iter()
        .flat_map(|c| c.to_ne_bytes())
        .collect();
    std::fs::write(lab.path("bank"), bank).unwrap();
    assert_eq!(count(&[("SAMPLER_EVENT_COUNTDOWNS", "bank")]), 25_000);
}

#[test]
fn a_forked_child_draws_its_own_stream() {
    let lab = Lab::new();
    let stats = lab.stats_static();
    let output = lab.run(
        &stats,
        &["fork"],
        &[("SAMPLER_SPARSITY", "10"), ("SAMPLER_SEED", "5")],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    let mut lines: Vec<&str> = text.lines().collect();
    lines.sort();
    assert_eq!(lines.len(), 2, "{text}");
    let parse_line = |line: &str| -> (u64, String) {
        let words: Vec<&str> = line.split(' ').collect();
        (words[1].parse().unwrap(), words[2].to_owned())
    };
    let (child_samples, child_digest) = parse_line(lines[0]);
    let (parent_samples, parent_digest) = parse_line(lines[1]);
    assert!(lines[0].starts_with("child ") && lines[1].starts_with("parent "));
    // Both sample about one event in ten...
    for n in [child_samples, parent_samples] {
        assert!((9_000..11_000).contains(&n), "{text}");
    }
    // ...but not the same events: the child reseeded after the fork.
    assert_ne!(child_digest, parent_digest, "{text}");
}

/// The gaps of `stats forkgaps N`: (parent's, child's).
fn fork_gaps(lab: &Lab, stats: &Path, n: usize, env: &[(&str, &str)]) -> (Vec<u64>, Vec<u64>) {
    let output = lab.run(stats, &["forkgaps", &n.to_string()], env);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    let gaps_of = |who: &str| -> Vec<u64> {
        let line = text
            .lines()
            .find(|line| line.split(' ').next() == Some(who))
            .unwrap_or_else(|| panic!("no {who} line in {text:?}"));
        let gaps: Vec<u64> = line
            .split(' ')
            .skip(1)
            .map(|g| g.parse().unwrap())
            .collect();
        assert_eq!(gaps.len(), n, "{text}");
        gaps
    };
    (gaps_of("parent"), gaps_of("child"))
}

#[test]
fn a_forked_child_does_not_reuse_the_gaps_its_parent_drew_in_advance() {
    let lab = Lab::new();
    let stats = lab.stats_static();
    // Forked right after the first sample, when the batch is all but full.
    let (parent, child) = fork_gaps(
        &lab,
        &stats,
        40,
        &[("SAMPLER_SPARSITY", "10"), ("SAMPLER_SEED", "5")],
    );
    // The countdown under way at the fork is the same in both...
    assert_eq!(parent[0], child[0]);
    // ...then the child draws from its own stream: two independent gaps
    // at sparsity 10 agree with probability 0.1/1.9, so about 2 of 39.
    let agreeing = parent[1..]
        .iter()
        .zip(&child[1..])
        .filter(|(a, b)| a == b)
        .count();
    assert!(
        agreeing < 12,
        "{agreeing} of 39 gaps agree:\n{parent:?}\n{child:?}"
    );
}

#[test]
fn a_forked_child_keeps_the_place_of_a_bank_of_countdowns() {
    let lab = Lab::new();
    let stats = lab.stats_static();
    let bank = [2i32, 3, 5, 7, 11, 13, 17];
    let bytes: Vec<u8> = bank.iter().flat_map(|c| c.to_ne_bytes()).collect();
    std::fs::write(lab.path("bank"), bytes).unwrap();
    let (parent, child) = fork_gaps(
        &lab,
        &stats,
        30,
        &[("SAMPLER_EVENT_COUNTDOWNS", "bank"), ("SAMPLER_SEED", "5")],
    );
    // A bank is not reseeded: the child goes on exactly where its parent
    // was, though the parent had drawn the bank's next values in advance.
    assert_eq!(parent, child);
    let place = |gap: u64| bank.iter().position(|&c| c as u64 == gap).unwrap();
    for pair in parent[1..].windows(2) {
        assert_eq!(
            place(pair[1]),
            (place(pair[0]) + 1) % bank.len(),
            "{parent:?}"
        );
    }
}

#[test]
fn a_runtime_loaded_by_dlopen_samples() {
    let lab = Lab::new();
    let (host, plugin) = lab.host_and_plugin_shared();
    let plugin = plugin.to_str().unwrap();
    let sampled = |sparsity: &str| -> u64 {
        let output = lab.run(
            &host,
            &[plugin, "100000"],
            &[("SAMPLER_SPARSITY", sparsity), ("SAMPLER_SEED", "3")],
        );
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        stdout(&output).trim().parse().unwrap()
    };
    assert_eq!(sampled("1"), 100_000);
    // 10,000 expected, standard deviation 95.
    assert!((9_500..10_500).contains(&sampled("10")));
}
