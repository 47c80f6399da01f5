//! Issue 14's benchmark: `sampler-analyze` ranking 100,000 runs × 100,000
//! predicates with elimination, from a collector's SQLite database and
//! from `sampler-run --save` run files (BENCHMARKS.md).
//!
//! ```sh
//! cargo bench -p sampler-analysis --bench ranking                  # 100,000 runs
//! cargo bench -p sampler-analysis --bench ranking -- --runs 10000  # a quick one
//! # options: --runs N  --repeat N (3)  --skip-files  --skip-db
//! ```
//!
//! The data set is generated once into `target/bench-data/` (reused while
//! its parameters match): 8 units of 1,500 `branches`, 750 `returns`, 750
//! `scalar-pairs` and 500 `function-entries` sites (28,000 sites, 100,000
//! predicates); each run observes about 3,000 sites (a tenth of them hot,
//! seen in half the runs, the rest in one run in fifteen); three planted
//! bugs, each a predicate that makes its runs crash (signal 11) four times
//! in five, and 2% of runs crashing at random: about 10% failing runs.
//! It is written as a real collector database (migrations by
//! `Store::open`, rows as the collector writes them, compact counters by
//! `RunSamples::encode`) and as run files with every row of every section,
//! as the runtime writes them, plus a `.sites` file.
//!
//! The release binary is run `--repeat` times on each input (median wall
//! time, peak RSS of the child from `getrusage(RUSAGE_CHILDREN)` in a
//! re-executed copy of this program that runs nothing else); then once
//! in this process through the library, for a breakdown of reading and
//! ranking. Both inputs must give the same JSON.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use sampler_analysis::collector_db::{self, FailureRule};
use sampler_analysis::dataset::Dataset;
use sampler_analysis::ranking::analyse;
use sampler_analysis::run_files;
use sampler_analysis::scores::{Ranking, z_of_confidence};
use sampler_formats::{SchemeName, SectionKey, UnitSignature};
use sampler_storage::counters::{Rows, RunSamples, SectionSamples};
use sampler_storage::store::{DatabaseTarget, Store};

const UNITS: usize = 8;
/// Per unit: (scheme, sites, counters per site).
const SCHEMES: [(&str, usize, usize); 4] = [
    ("branches", 1500, 2),
    ("returns", 750, 3),
    ("scalar-pairs", 750, 3),
    ("function-entries", 500, 1),
];
const APP: &str = "bench";
/// Bumped when the generator changes, so an old cache is not reused.
const VERSION: u32 = 1;

/// splitmix64.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// True with probability `p`.
    fn chance(&mut self, p: f64) -> bool {
        ((self.next() >> 11) as f64 / (1u64 << 53) as f64) < p
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

struct Options {
    runs: usize,
    repeat: usize,
    files: bool,
    db: bool,
}

fn options() -> Options {
    let mut options = Options {
        runs: 100_000,
        repeat: 3,
        files: true,
        db: true,
    };
    if let Ok(runs) = std::env::var("RANKING_BENCH_RUNS") {
        options.runs = runs.parse().expect("RANKING_BENCH_RUNS: a number");
    }
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--runs" => options.runs = args.next().and_then(|n| n.parse().ok()).expect("--runs N"),
            "--repeat" => {
                options.repeat = args
                    .next()
                    .and_then(|n| n.parse().ok())
                    .expect("--repeat N")
            }
            "--skip-files" => options.files = false,
            "--skip-db" => options.db = false,
            "--bench" => {}
            other => panic!("unknown argument `{other}`"),
        }
    }
    options
}

/// One section of the synthetic program.
struct Section {
    key: SectionKey,
    arity: usize,
    n_sites: usize,
    /// The `<sites>` section's text.
    text: String,
}

fn program() -> Vec<Section> {
    let mut sections = Vec::new();
    for unit in 0..UNITS {
        let mut signature = [0u8; 16];
        signature[0] = 0xb0;
        signature[15] = unit as u8;
        let signature = UnitSignature::from_bytes(signature);
        for (scheme, n_sites, arity) in SCHEMES {
            let mut text = format!("<sites unit=\"{signature}\" scheme=\"{scheme}\">\n");
            for site in 0..n_sites {
                let function = format!("f{unit}_{}", site / 20);
                let file = format!("/src/bench/unit{unit}.c");
                let line = 10 + site;
                let node = site % 20;
                let fields = match scheme {
                    "branches" => format!("\tx{site} > {unit}"),
                    "returns" => format!("\tg{site}"),
                    "scalar-pairs" => format!("\ta{site}\tlocal\tdirect\tb{site}\tlocal"),
                    _ => String::new(),
                };
                text.push_str(&format!("{file}\t{line}\t{function}\t{node}{fields}\n"));
            }
            text.push_str("</sites>\n");
            sections.push(Section {
                key: SectionKey::new(signature, scheme.parse::<SchemeName>().unwrap()),
                arity,
                n_sites,
                text,
            });
        }
    }
    // As RunSamples::parse orders them.
    sections.sort_by(|a, b| a.key.cmp(&b.key));
    sections
}

/// The planted bugs: (unit, index in SCHEMES, slot, probability of
/// being triggered); each is site `7 + 13 × unit` of its section.
const BUGS: [(usize, usize, usize, f64); 3] = [(0, 0, 1, 0.04), (3, 1, 0, 0.03), (5, 2, 1, 0.02)];

/// A section's non-zero rows: (site, counters).
type SectionRows = Vec<(u32, Vec<u64>)>;

/// One generated run: each section's non-zero rows, and whether it crashed.
fn generate_run(
    run: usize,
    program: &[Section],
    bug_sites: &[(usize, usize, usize)],
) -> (Vec<SectionRows>, bool) {
    let mut random = Random(0x5eed_0000 ^ (run as u64).wrapping_mul(0x2545_f491_4f6c_dd1d));
    let mut triggered = [false; 3];
    let mut failed = false;
    for (bug, &(_, _, _, p)) in BUGS.iter().enumerate() {
        if random.chance(p) {
            triggered[bug] = true;
            failed |= random.chance(0.8);
        }
    }
    failed |= random.chance(0.02);
    let rows = program
        .iter()
        .enumerate()
        .map(|(index, section)| {
            let mut rows = Vec::new();
            for site in 0..section.n_sites {
                let hot = site % 10 == 0;
                let bug = bug_sites
                    .iter()
                    .position(|&(s, i, _)| s == index && i == site);
                let forced = bug.is_some_and(|bug| triggered[bug]);
                if !forced && !random.chance(if hot { 0.5 } else { 0.065 }) {
                    continue;
                }
                let mut counters = vec![0u64; section.arity];
                let observations = 1 + random.below(3);
                for _ in 0..observations {
                    let mut slot = random.below(section.arity as u64) as usize;
                    if let Some(bug) = bug {
                        let bug_slot = bug_sites[bug].2;
                        if !triggered[bug] && slot == bug_slot {
                            slot = (slot + 1) % section.arity;
                        }
                    }
                    counters[slot] += 1 + random.below(4);
                }
                if let Some(bug) = bug
                    && triggered[bug]
                {
                    counters[bug_sites[bug].2] += 1;
                }
                rows.push((site as u32, counters));
            }
            rows
        })
        .collect();
    (rows, failed)
}

fn report_id(run: usize) -> String {
    format!("01900000-0000-7000-8000-{run:012x}")
}

fn run_file(run: usize, program: &[Section], rows: &[SectionRows], failed: bool) -> Vec<u8> {
    let mut text = Vec::with_capacity(160 << 10);
    let per_unit = SCHEMES.len();
    for unit in program.chunks(per_unit).zip(rows.chunks(per_unit)) {
        text.extend_from_slice(b"<report id=\"samples\">\n");
        for (section, rows) in unit.0.iter().zip(unit.1) {
            writeln!(
                text,
                "<samples unit=\"{}\" scheme=\"{}\">",
                section.key.unit,
                section.key.scheme.as_str()
            )
            .unwrap();
            let mut next = rows.iter().peekable();
            for site in 0..section.n_sites as u32 {
                match next.next_if(|(s, _)| *s == site) {
                    Some((_, counters)) => {
                        for (slot, value) in counters.iter().enumerate() {
                            if slot > 0 {
                                text.push(b'\t');
                            }
                            write!(text, "{value}").unwrap();
                        }
                        text.push(b'\n');
                    }
                    None => {
                        for slot in 0..section.arity {
                            text.extend_from_slice(if slot == 0 { b"0" } else { b"\t0" });
                        }
                        text.push(b'\n');
                    }
                }
            }
            text.extend_from_slice(b"</samples>\n");
        }
        text.extend_from_slice(b"</report>\n");
    }
    let start = 1_718_000_000_000u64 + run as u64 * 1000;
    write!(
        text,
        "<report id=\"outcome\">\nreport-id\t{}\napplication-name\t{APP}\napplication-version\t1.0\n\
         application-release\t1\nexecutable-path\t/usr/bin/{APP}\nsparsity\t100\nexit-status\t0\n\
         exit-signal\t{}\nstart-time-ms\t{start}\nend-time-ms\t{}\nlauncher-version\t0.1.0\n\
         truncated\t0\ndropped-bytes\t0\n</report>\n",
        report_id(run),
        if failed { 11 } else { 0 },
        start + 42
    )
    .unwrap();
    text
}

fn samples(program: &[Section], rows: Vec<SectionRows>) -> RunSamples {
    RunSamples {
        sections: program
            .iter()
            .zip(rows)
            .map(|(section, rows)| SectionSamples {
                key: section.key.clone(),
                n_sites: section.n_sites as u32,
                rows: Rows::Counters {
                    arity: section.arity as u32,
                    rows,
                },
            })
            .collect(),
    }
}

fn dir_size(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| {
            let entry = entry.unwrap();
            let meta = entry.metadata().unwrap();
            if meta.is_dir() {
                dir_size(&entry.path())
            } else {
                meta.len()
            }
        })
        .sum()
}

async fn generate(dir: &Path, n_runs: usize) {
    let _ = std::fs::remove_dir_all(dir);
    let runs_dir = dir.join("runs");
    std::fs::create_dir_all(&runs_dir).unwrap();
    let program = program();
    let tables: String = program.iter().map(|s| s.text.as_str()).collect();
    std::fs::write(dir.join("program.sites"), &tables).unwrap();
    // (section index, site, slot) of each bug.
    let bug_sites: Vec<(usize, usize, usize)> = BUGS
        .iter()
        .map(|&(unit, scheme, slot, _)| {
            let key = &program
                .iter()
                .filter(|s| s.key.scheme.as_str() == SCHEMES[scheme].0)
                .nth(unit)
                .unwrap()
                .key;
            let index = program.iter().position(|s| &s.key == key).unwrap();
            (index, 7 + unit * 13, slot)
        })
        .collect();

    let store = Store::open(&DatabaseTarget::SqliteDir(dir.to_owned()), 2)
        .await
        .unwrap();
    let app = store.ensure_application(APP).await.unwrap();
    sqlx::query(
        "INSERT INTO builds (application_id, version, release, registered_ms) VALUES ($1, '1.0', '1', $2)",
    )
    .bind(app)
    .bind(sampler_storage::store::now_ms())
    .execute(&store.pool)
    .await
    .unwrap();
    let build: i64 = sqlx::Row::get(
        &sqlx::query("SELECT id FROM builds WHERE application_id = $1")
            .bind(app)
            .fetch_one(&store.pool)
            .await
            .unwrap(),
        0,
    );
    for section in &program {
        let id: i64 = sqlx::Row::get(
            &sqlx::query(
                "INSERT INTO site_tables (unit_signature, scheme, n_sites, sites) VALUES ($1, $2, $3, $4) RETURNING id",
            )
            .bind(section.key.unit.to_string())
            .bind(section.key.scheme.as_str())
            .bind(section.n_sites as i64)
            .bind(&section.text)
            .fetch_one(&store.pool)
            .await
            .unwrap(),
            0,
        );
        sqlx::query("INSERT INTO build_site_tables (build_id, site_table_id) VALUES ($1, $2)")
            .bind(build)
            .bind(id)
            .execute(&store.pool)
            .await
            .unwrap();
    }

    let started = Instant::now();
    let mut failing = 0;
    let mut observed = 0usize;
    let mut tx = store.pool.begin().await.unwrap();
    for run in 0..n_runs {
        let (rows, failed) = generate_run(run, &program, &bug_sites);
        failing += usize::from(failed);
        observed += rows.iter().map(Vec::len).sum::<usize>();
        let file = run_file(run, &program, &rows, failed);
        std::fs::write(runs_dir.join(format!("{}.report", report_id(run))), &file).unwrap();
        let blob = samples(&program, rows).encode();
        sqlx::query(
            "INSERT INTO runs (run_id, report_id, application_id, build_id, received_ms, sampler_version, \
             sparsity, exit_status, exit_signal, outcome, counters, report_bytes) \
             VALUES ($1, $2, $3, $4, $5, '0.1.0', 100, 0, $6, $7, $8, $9)",
        )
        .bind(format!("run-{run:08}"))
        .bind(report_id(run))
        .bind(app)
        .bind(build)
        .bind(1_718_000_000_000i64 + run as i64)
        .bind(if failed { 11i64 } else { 0 })
        .bind(if failed { "crash" } else { "success" })
        .bind(blob)
        .bind(file.len() as i64)
        .execute(&mut *tx)
        .await
        .unwrap();
        if run % 5000 == 4999 {
            tx.commit().await.unwrap();
            tx = store.pool.begin().await.unwrap();
            eprintln!(
                "  generated {} of {n_runs} runs ({:.0} s)",
                run + 1,
                started.elapsed().as_secs_f64()
            );
        }
    }
    tx.commit().await.unwrap();
    sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
        .execute(&store.pool)
        .await
        .unwrap();
    store.pool.close().await;
    let summary = format!(
        "version {VERSION}\nruns {n_runs}\nfailing {failing}\nobserved_per_run {:.0}\n",
        observed as f64 / n_runs as f64
    );
    std::fs::write(dir.join("done"), summary).unwrap();
}

/// Runs `command` with stdout to /dev/null; its wall time and peak RSS
/// (KiB), from a re-executed copy of this program.
fn measure(command: &[String]) -> (Duration, u64) {
    let output = Command::new(std::env::current_exe().unwrap())
        .arg("--measure-child")
        .args(command)
        .stderr(Stdio::inherit())
        .output()
        .unwrap();
    assert!(output.status.success(), "{command:?} failed");
    let text = String::from_utf8(output.stdout).unwrap();
    let (wall, rss) = text.trim().split_once(' ').unwrap();
    (
        Duration::from_secs_f64(wall.parse().unwrap()),
        rss.parse().unwrap(),
    )
}

fn measure_child(command: &[String]) -> ! {
    let started = Instant::now();
    let status = Command::new(&command[0])
        .args(&command[1..])
        .stdout(Stdio::null())
        .status()
        .unwrap();
    let wall = started.elapsed();
    let usage =
        nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN).unwrap();
    println!("{} {}", wall.as_secs_f64(), usage.max_rss());
    std::process::exit(if status.success() { 0 } else { 1 });
}

fn median(mut values: Vec<Duration>) -> Duration {
    values.sort();
    values[values.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--measure-child") {
        measure_child(&args[2..]);
    }
    // `cargo bench` passes `--bench`; `cargo test --all-targets` runs this
    // without it, which must not generate gigabytes.
    if !args.iter().any(|arg| arg == "--bench") {
        eprintln!("ranking: run with `cargo bench -p sampler-analysis --bench ranking`");
        return;
    }
    let options = options();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
    let dir = target
        .join("bench-data")
        .join(format!("ranking-v{VERSION}-{}", options.runs));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let expected = format!("version {VERSION}\nruns {}\n", options.runs);
    let fresh =
        std::fs::read_to_string(dir.join("done")).is_ok_and(|done| done.starts_with(&expected));
    if fresh {
        eprintln!("reusing the data set in {}", dir.display());
    } else {
        eprintln!("generating {} runs into {}", options.runs, dir.display());
        runtime.block_on(generate(&dir, options.runs));
    }
    let summary = std::fs::read_to_string(dir.join("done")).unwrap();
    let db_size = std::fs::metadata(dir.join("collector.sqlite"))
        .unwrap()
        .len();
    let files_size = dir_size(&dir.join("runs"));
    println!("data set: {}", summary.replace('\n', "; "));
    println!(
        "  collector.sqlite {:.1} MiB; run files {:.1} MiB ({:.1} KiB each); program.sites {:.1} MiB",
        db_size as f64 / (1 << 20) as f64,
        files_size as f64 / (1 << 20) as f64,
        files_size as f64 / 1024.0 / options.runs as f64,
        std::fs::metadata(dir.join("program.sites")).unwrap().len() as f64 / (1 << 20) as f64,
    );

    eprintln!("building the release sampler-analyze");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let built = Command::new(cargo)
        .args([
            "build",
            "--release",
            "-p",
            "sampler-analysis",
            "--bin",
            "sampler-analyze",
        ])
        .current_dir(&root)
        .status()
        .unwrap();
    assert!(built.success());
    let binary = target.join("release").join("sampler-analyze");
    let binary = binary.to_string_lossy().into_owned();
    let data = dir.to_string_lossy().into_owned();
    let runs = dir.join("runs").to_string_lossy().into_owned();
    let sites = dir.join("program.sites").to_string_lossy().into_owned();

    let mut inputs: Vec<(&str, Vec<String>)> = Vec::new();
    if options.db {
        inputs.push((
            "collector database",
            [&binary, "--data", &data, "--app", APP, "--format", "json"]
                .map(String::from)
                .to_vec(),
        ));
    }
    if options.files {
        inputs.push((
            "run files",
            [&binary, "--runs", &runs, &sites, "--format", "json"]
                .map(String::from)
                .to_vec(),
        ));
    }
    // Same answer from both.
    let outputs: Vec<Vec<u8>> = inputs
        .iter()
        .map(|(_, command)| {
            let output = Command::new(&command[0])
                .args(&command[1..])
                .output()
                .unwrap();
            assert!(
                output.status.success(),
                "{command:?}: {}",
                String::from_utf8_lossy(&output.stderr)
            );
            output.stdout
        })
        .collect();
    if outputs.len() == 2 {
        assert!(
            outputs[0] == outputs[1],
            "the database and the run files rank differently"
        );
        println!(
            "both inputs give the same JSON ({} bytes)",
            outputs[0].len()
        );
    }
    let report: serde_json::Value = serde_json::from_slice(&outputs[0]).unwrap();
    println!(
        "analysis: {} failing, {} successful; {} predicates; {} retained; {} chosen by elimination",
        report["runs"]["failing"],
        report["runs"]["successful"],
        report["predicates"],
        report["ranking"].as_array().map_or(0, Vec::len),
        report["elimination"].as_array().map_or(0, Vec::len),
    );
    for (name, command) in &inputs {
        let mut walls = Vec::new();
        let mut peak = 0;
        for _ in 0..options.repeat {
            let (wall, rss) = measure(command);
            walls.push(wall);
            peak = peak.max(rss);
        }
        let all: Vec<String> = walls
            .iter()
            .map(|w| format!("{:.2}", w.as_secs_f64()))
            .collect();
        println!(
            "{name}: median {:.2} s (runs: {} s), peak RSS {:.0} MiB",
            median(walls).as_secs_f64(),
            all.join(", "),
            peak as f64 / 1024.0
        );
    }

    // Breakdown, in this process through the library.
    let rule = FailureRule::default();
    let z = z_of_confidence(95.0).unwrap();
    let rank = |dataset: &Dataset| {
        let started = Instant::now();
        let analysis = analyse(
            &dataset.observations,
            &dataset.runs,
            &dataset.failing,
            Ranking::HarmonicLowerBound,
            z,
        );
        (
            started.elapsed(),
            analysis.ranking.len(),
            analysis.elimination.len(),
        )
    };
    if options.db {
        let started = Instant::now();
        let dataset = runtime.block_on(async {
            let store = Store::open_read_only(&DatabaseTarget::SqliteDir(dir.clone()))
                .await
                .unwrap();
            collector_db::load(&store, APP, &rule, |_, _| {})
                .await
                .unwrap()
        });
        let read = started.elapsed();
        let (ranking, retained, chosen) = rank(&dataset);
        println!(
            "breakdown, database: reading {:.2} s, ranking and elimination {:.2} s ({retained} retained, {chosen} chosen)",
            read.as_secs_f64(),
            ranking.as_secs_f64()
        );
    }
    if options.files {
        let started = Instant::now();
        let mut dataset = Dataset::new();
        run_files::add_site_file(&mut dataset, &dir.join("program.sites")).unwrap();
        run_files::add_runs(&mut dataset, &dir.join("runs"), &rule, |_, _| {}).unwrap();
        let read = started.elapsed();
        let (ranking, retained, chosen) = rank(&dataset);
        println!(
            "breakdown, run files: reading {:.2} s, ranking and elimination {:.2} s ({retained} retained, {chosen} chosen)",
            read.as_secs_f64(),
            ranking.as_secs_f64()
        );
    }
}
