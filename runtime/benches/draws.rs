//! The cost of drawing the next countdown, in nanoseconds per draw, beside
//! the cost of the raw random generator it draws from (same run); then the
//! cost of `cbi_sample()` as a C program pays it, through the exported
//! entry point of the packaged runtime (`benches/sample.c`, built with gcc
//! against `libsampler_runtime.a` and `libsampler_runtime.so`).
//!
//! Run with `cargo bench -p sampler-runtime --bench draws`.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use sampler_runtime::countdown::bench_draws;

const N_DRAWS: u64 = 20_000_000;
/// Direct calls of `cbi_sample()` per timed run of `sample.c`.
const N_CALLS: &str = "20000000";
/// Events (sites) per timed run of `sample.c`.
const N_EVENTS: &str = "200000000";
const SPARSITIES: [f64; 4] = [1.0, 100.0, 1_000.0, 1_000_000.0];

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
    for sparsity in SPARSITIES {
        let per_draw = median_ns_per_draw(|| bench_draws(sparsity, N_DRAWS));
        println!(
            "  geometric, sparsity {sparsity:>9}      {per_draw:>6.2} ns/draw  ({:.1}x the raw generator; one draw per {sparsity} events on average)",
            per_draw / baseline
        );
    }
    match c_programs() {
        Ok((programs, _scratch)) => {
            println!(
                "\ncbi_sample() from C (benches/sample.c), ns per direct call and ns per event of a \
                 loop of sites, {N_CALLS} calls or {N_EVENTS} events per run, median of 7 runs \
                 (thread CPU time), against the packaged static and shared runtime"
            );
            println!(
                "  {:>9}  {:>12}  {:>12}  {:>13}  {:>13}",
                "sparsity", "call static", "call shared", "event static", "event shared"
            );
            for sparsity in SPARSITIES {
                let [(call_a, event_a), (call_so, event_so)] =
                    programs.each_ref().map(|program| run_c(program, sparsity));
                println!(
                    "  {sparsity:>9}  {call_a:>12.2}  {call_so:>12.2}  {event_a:>13.3}  {event_so:>13.3}"
                );
            }
        }
        Err(problem) => println!("\ncbi_sample() from C: skipped ({problem})"),
    }
}

/// `sample.c` linked with the packaged archive, then with the packaged
/// shared library; and the folder holding them.
fn c_programs() -> Result<([PathBuf; 2], tempfile::TempDir), String> {
    let runtime = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    // This binary is `<target>/<profile>/deps/draws-…`; cargo builds only
    // the rlib for a bench, so build the staticlib there first.
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .ok_or("no target directory")?;
    let target_dir = profile_dir.parent().ok_or("no target directory")?;
    let profile = match profile_dir.file_name().and_then(|name| name.to_str()) {
        Some("debug") => "dev",
        Some(other) => other,
        None => "release",
    };
    run(Command::new(option_env!("CARGO").unwrap_or("cargo"))
        .args(["build", "--quiet", "--lib", "-p", "sampler-runtime"])
        .args(["--profile", profile, "--target-dir"])
        .arg(target_dir)
        .current_dir(&runtime))?;
    let scratch = tempfile::tempdir().map_err(|e| e.to_string())?;
    let dir = scratch.path();
    run(Command::new(runtime.join("../scripts/package-runtime.sh"))
        .arg(profile_dir.join("libsampler_runtime.a"))
        .arg(dir))?;
    let gcc = |args: &[&str]| {
        run(Command::new("gcc")
            .args(["-O2", "-I"])
            .arg(runtime.join("include"))
            .arg(runtime.join("benches/sample.c"))
            .args(args)
            .current_dir(dir))
    };
    gcc(&[
        "libsampler_runtime.a",
        "-lgcc_s",
        "-lpthread",
        "-ldl",
        "-lm",
        "-o",
        "sample-static",
    ])?;
    gcc(&[
        "-L.",
        "-lsampler_runtime",
        &format!("-Wl,-rpath,{}", dir.display()),
        "-o",
        "sample-shared",
    ])?;
    Ok((
        [dir.join("sample-static"), dir.join("sample-shared")],
        scratch,
    ))
}

fn run(command: &mut Command) -> Result<(), String> {
    let output = command
        .output()
        .map_err(|e| format!("cannot run {command:?}: {e}"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{command:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        ))
    }
}

/// ns per direct call and ns per event of `program` at `sparsity`.
fn run_c(program: &Path, sparsity: f64) -> (f64, f64) {
    let mut command = Command::new(program);
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("SAMPLER_") {
            command.env_remove(name);
        }
    }
    let output = command
        .args([N_CALLS, N_EVENTS])
        .env("SAMPLER_SPARSITY", sparsity.to_string())
        .env("SAMPLER_SEED", "1")
        .output()
        .expect("cannot run the C benchmark");
    let text = String::from_utf8_lossy(&output.stdout);
    let value = |key: &str| {
        text.lines()
            .find_map(|line| line.strip_prefix(key)?.trim().parse::<f64>().ok())
            .unwrap_or(f64::NAN)
    };
    (value("call "), value("event "))
}
