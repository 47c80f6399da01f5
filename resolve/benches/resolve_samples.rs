//! Benchmark of `resolve-samples` on a synthetic program of 1,000 units ×
//! 1,000 sites (half `branches`, half `returns`).
//!
//! Run with `cargo bench -p sampler-resolve --bench resolve_samples`.
//! It prints, for the same inputs in the same run:
//!
//! 1. in-process throughput of the join (`resolve_samples`) in MB/s of
//!    report text, beside a baseline that only parses the report
//!    (`ReportReader`, no join), and their ratio;
//! 2. the real binary on 1 and on 20 reports piped through it: wall time
//!    and peak resident memory (from `/usr/bin/time`), to show that memory
//!    does not grow with the number of reports.
//!
//! `BENCH_UNITS` and `BENCH_SITES` change the size.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use sampler_formats::ReportReader;
use sampler_resolve::{SiteStore, resolve_samples};

/// A small deterministic generator (xorshift64*), so runs are comparable.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Site tables and one report for them.
fn synthesize(n_units: usize, n_sites: usize) -> (String, String) {
    use std::fmt::Write as _;
    let mut rng = Rng(0x5eed);
    let mut sites = String::new();
    let mut report = String::new();
    for unit in 0..n_units {
        let signature = format!("{:016x}{:016x}", rng.next(), rng.next());
        let (scheme, arity) = if unit.is_multiple_of(2) {
            ("branches", 2)
        } else {
            ("returns", 3)
        };
        writeln!(sites, "<sites unit=\"{signature}\" scheme=\"{scheme}\">").unwrap();
        writeln!(report, "<report id=\"samples\">").unwrap();
        writeln!(report, "<samples unit=\"{signature}\" scheme=\"{scheme}\">").unwrap();
        for site in 0..n_sites {
            let function = site / 20;
            if arity == 2 {
                writeln!(
                    sites,
                    "/home/dev/project/src/module_{unit:04}.c\t{}\tfunction_{function}\t{}\tcount > limit_{site}",
                    10 + site,
                    site % 20
                )
                .unwrap();
            } else {
                writeln!(
                    sites,
                    "/home/dev/project/src/module_{unit:04}.c\t{}\tfunction_{function}\t{}\tcallee_{site}",
                    10 + site,
                    site % 20
                )
                .unwrap();
            }
            let values: Vec<String> = (0..arity)
                .map(|_| {
                    // Mostly small counts, as sparse sampling gives.
                    let draw = rng.next();
                    if draw.is_multiple_of(4) {
                        "0".to_owned()
                    } else {
                        (draw % 5000).to_string()
                    }
                })
                .collect();
            writeln!(report, "{}", values.join("\t")).unwrap();
        }
        writeln!(sites, "</sites>").unwrap();
        writeln!(report, "</samples>\n</report>").unwrap();
    }
    (sites, report)
}

/// Reads `text` `times` times over without holding more than one copy.
struct Repeat<'a> {
    text: &'a [u8],
    position: usize,
    remaining: usize,
}

impl Read for Repeat<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.remaining == 0 {
            return Ok(0);
        }
        let n = buf.len().min(self.text.len() - self.position);
        buf[..n].copy_from_slice(&self.text[self.position..][..n]);
        self.position += n;
        if self.position == self.text.len() {
            self.position = 0;
            self.remaining -= 1;
        }
        Ok(n)
    }
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn time_it(repeats: usize, mut f: impl FnMut()) -> Duration {
    f(); // warm-up
    median(
        (0..repeats)
            .map(|_| {
                let start = Instant::now();
                f();
                start.elapsed()
            })
            .collect(),
    )
}

fn mb_per_s(bytes: usize, time: Duration) -> f64 {
    bytes as f64 / 1e6 / time.as_secs_f64()
}

/// Runs the real binary under `/usr/bin/time` with the report piped `times`
/// times; returns wall time and peak RSS in KiB.
fn run_binary(sites: &std::path::Path, report: &[u8], times: usize) -> Option<(Duration, u64)> {
    let start = Instant::now();
    let mut child = Command::new("/usr/bin/time")
        .args(["-f", "%M"])
        .arg(env!("CARGO_BIN_EXE_resolve-samples"))
        .arg(sites)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .ok()?;
    let mut stdin = child.stdin.take()?;
    let report = report.to_vec();
    let feeder = std::thread::spawn(move || {
        let mut input = BufReader::with_capacity(
            1 << 16,
            Repeat {
                text: &report,
                position: 0,
                remaining: times,
            },
        );
        loop {
            let chunk = input.fill_buf().unwrap();
            if chunk.is_empty() {
                break;
            }
            let n = chunk.len();
            stdin.write_all(chunk).unwrap();
            input.consume(n);
        }
    });
    let mut out = child.stdout.take()?;
    let mut n_out = 0u64;
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = out.read(&mut buf).ok()?;
        if n == 0 {
            break;
        }
        n_out += n as u64;
    }
    let mut err = String::new();
    child.stderr.take()?.read_to_string(&mut err).ok()?;
    let status = child.wait().ok()?;
    feeder.join().ok()?;
    let elapsed = start.elapsed();
    assert!(status.success(), "resolve-samples failed: {err}");
    assert!(n_out > 0);
    let peak_kib = err.trim().lines().last()?.parse().ok()?;
    Some((elapsed, peak_kib))
}

fn main() {
    // `cargo bench` passes `--bench`; a filter argument means another
    // benchmark was asked for.
    if std::env::args().skip(1).any(|a| !a.starts_with("--")) {
        return;
    }
    let n_units = env_usize("BENCH_UNITS", 1000);
    let n_sites = env_usize("BENCH_SITES", 1000);
    let (sites, report) = synthesize(n_units, n_sites);
    println!(
        "resolve-samples: {n_units} units x {n_sites} sites; site tables {:.1} MB, one report {:.1} MB",
        sites.len() as f64 / 1e6,
        report.len() as f64 / 1e6
    );

    let load = time_it(3, || {
        let mut store = SiteStore::new();
        store.load_text("bench.sites", sites.as_bytes()).unwrap();
        assert_eq!(store.n_tables(), n_units);
    });
    let mut store = SiteStore::new();
    store.load_text("bench.sites", sites.as_bytes()).unwrap();

    let parse_only = time_it(5, || {
        let mut reader = ReportReader::new(report.as_bytes());
        let mut n_events = 0usize;
        while let Some(_event) = reader.next_event().unwrap() {
            n_events += 1;
        }
        assert!(n_events > n_units * n_sites);
    });
    let mut output_len = 0;
    let join = time_it(5, || {
        let mut out = Vec::with_capacity(output_len);
        resolve_samples(&store, report.as_bytes(), &mut out).unwrap();
        output_len = out.len();
    });
    println!(
        "  load site tables        {:>8.1} ms  {:>7.1} MB/s",
        load.as_secs_f64() * 1e3,
        mb_per_s(sites.len(), load)
    );
    println!(
        "  parse report (baseline) {:>8.1} ms  {:>7.1} MB/s",
        parse_only.as_secs_f64() * 1e3,
        mb_per_s(report.len(), parse_only)
    );
    println!(
        "  resolve report          {:>8.1} ms  {:>7.1} MB/s  ({:.2}x the baseline time; {:.1} MB written)",
        join.as_secs_f64() * 1e3,
        mb_per_s(report.len(), join),
        join.as_secs_f64() / parse_only.as_secs_f64(),
        output_len as f64 / 1e6
    );

    let dir = std::env::temp_dir().join(format!("resolve-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let sites_path = dir.join("bench.sites");
    std::fs::write(&sites_path, &sites).unwrap();
    let one = run_binary(&sites_path, report.as_bytes(), 1);
    let many = run_binary(&sites_path, report.as_bytes(), 20);
    std::fs::remove_dir_all(&dir).ok();
    match (one, many) {
        (Some((t1, m1)), Some((t20, m20))) => {
            let per_report = (t20.saturating_sub(t1)).as_secs_f64() / 19.0;
            println!(
                "  binary, 1 report        {:>8.1} ms  peak RSS {:>7.1} MiB",
                t1.as_secs_f64() * 1e3,
                m1 as f64 / 1024.0
            );
            println!(
                "  binary, 20 reports      {:>8.1} ms  peak RSS {:>7.1} MiB  ({:.1} MB/s per extra report; RSS ratio {:.3})",
                t20.as_secs_f64() * 1e3,
                m20 as f64 / 1024.0,
                report.len() as f64 / 1e6 / per_report,
                m20 as f64 / m1 as f64
            );
        }
        _ => println!("  binary runs skipped: `/usr/bin/time` is not available"),
    }
}
