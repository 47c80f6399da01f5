//! Sampling rates learned from a training set (issue 19, parts 1 and 4),
//! end to end: a C program (`c/rates.c`) with branch sites executed
//! exactly 1, 10, 1,000 and 1,000,000 times per run, built by sampler-cc,
//! run 200 times at sparsity 100 through `sampler-run --save` (each run
//! its own seed). `sampler-analyze rates --runs` must estimate each site's
//! executions per run within 5 standard deviations of the truth and give
//! it the rate and scale of the rule; the same runs uploaded to a
//! collector must give the same file through `GET /api/v1/rates`,
//! `sampler-collector rates` and `sampler-analyze rates --data/--database`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use sampler_analysis::rates::site_rate;
use sampler_collector::builds::{BuildUpload, upload_build};
use sampler_collector::store::DatabaseTarget;
use sampler_formats::{Rates, RatesSource, SectionKey, observation_probability};
use sampler_testkit::Tools;

use crate::{Collector, backends};

const RUNS: usize = 200;
const SPARSITY: u32 = 100;

/// Each site's predicate and its true executions per run.
const SITES: [(&str, f64); 4] = [
    ("sink == 1", 1.0),
    ("sink == 3", 10.0),
    ("sink == 5", 1000.0),
    ("sink == 7", 1e6),
];

/// The (unit, scheme) and index of each of [`SITES`] in `binary`'s tables.
fn site_keys(binary: &Path) -> Vec<(SectionKey, u32)> {
    let mut sections = Vec::new();
    sampler_extract::for_each_section(binary, ".debug_site_info", &mut |_, contents| {
        if let Ok(sampler_extract::SectionContents::Data(bytes)) = contents {
            sections.extend(sampler_formats::read_site_table(bytes.as_slice()).unwrap());
        }
        Ok::<(), anyhow::Error>(())
    })
    .unwrap();
    SITES
        .iter()
        .map(|(predicate, _)| {
            sections
                .iter()
                .filter(|section| section.key.scheme.as_str() == "branches")
                .find_map(|section| {
                    section
                        .sites
                        .iter()
                        .position(|site| site.to_string().split('\t').nth(4) == Some(*predicate))
                        .map(|index| (section.key.clone(), index as u32))
                })
                .unwrap_or_else(|| panic!("no branch site `{predicate}`"))
        })
        .collect()
}

/// One standard deviation of the estimate of a site executed `n` times
/// per run, from `RUNS` runs at `SPARSITY`: each run's observations are
/// binomial (n, p), their mean divided by p.
fn standard_deviation(n: f64) -> f64 {
    let p = 1.0 / f64::from(SPARSITY);
    (n * (1.0 - p) / (p * RUNS as f64)).sqrt()
}

/// Checks the lines of [`SITES`] in `rates`; returns each site's
/// (estimate, rate, scale).
fn check_sites(rates: &Rates, keys: &[(SectionKey, u32)]) -> Vec<(f64, f64, u32)> {
    assert_eq!(rates.runs, RUNS as u64);
    assert_eq!(rates.sparsity, SPARSITY);
    assert_eq!((rates.target, rates.budget), (100.0, 100_000.0));
    // The file's own sums.
    let expected: f64 = rates
        .sites
        .iter()
        .map(|site| site.executions_per_run * site.rate)
        .sum();
    assert_eq!(rates.expected, expected);
    let uniform: f64 = rates
        .sites
        .iter()
        .map(|site| site.executions_per_run * 0.01)
        .sum();
    assert_eq!(rates.uniform, uniform);
    // No bounds sites (the default schemes have none) and no others but
    // branches and returns.
    assert!(rates.sites.iter().all(|site| {
        ["branches", "returns"].contains(&site.key.scheme.as_str())
            && site.rate == observation_probability(site.scale, SPARSITY)
    }));
    SITES
        .iter()
        .zip(keys)
        .map(|(&(predicate, n), (key, index))| {
            let line = rates.get(key, *index).unwrap();
            let e = line.executions_per_run;
            let sd = standard_deviation(n);
            assert!(
                (e - n).abs() <= 5.0 * sd,
                "`{predicate}`: {e} executions per run estimated, {n} true, sd {sd}"
            );
            // The rule's choice for the estimate.
            assert_eq!(
                (line.rate, line.scale),
                site_rate(e, 100.0, SPARSITY),
                "`{predicate}`"
            );
            // And for the truth where the estimate cannot cross a
            // boundary of the rule.
            let truth = site_rate(n, 100.0, SPARSITY);
            match n as u64 {
                1 | 10 => assert_eq!((line.rate, line.scale), (1.0, 0), "`{predicate}`"),
                1_000_000 => assert_eq!((line.rate, line.scale), (0.01, 1), "`{predicate}`"),
                _ => {
                    // r = 0.1 for the truth: scale round(ln 0.9 / ln 0.99)
                    // = round(10.48) = 10. The estimate's scale is within
                    // those of the 5-sd interval (10.48 is 0.07 sd from
                    // 10.5, so either 10 or 11 may come out).
                    assert_eq!(truth, (observation_probability(10, 100), 10));
                    let (_, low) = site_rate(n + 5.0 * sd, 100.0, SPARSITY);
                    let (_, high) = site_rate(n - 5.0 * sd, 100.0, SPARSITY);
                    assert!(
                        (low..=high).contains(&line.scale),
                        "`{predicate}`: scale {} not in {low}..={high}",
                        line.scale
                    );
                }
            }
            (e, line.rate, line.scale)
        })
        .collect()
}

/// Two files alike but for the order in which their sums were added.
fn same_rates(a: &Rates, b: &Rates) {
    assert_eq!(a.sites.len(), b.sites.len());
    assert_eq!((a.runs, a.sparsity), (b.runs, b.sparsity));
    assert!((a.expected - b.expected).abs() <= 1e-9 * a.expected);
    for (x, y) in a.sites.iter().zip(&b.sites) {
        assert_eq!((&x.key, x.site), (&y.key, y.site));
        assert!(
            (x.executions_per_run - y.executions_per_run).abs() <= 1e-12 * x.executions_per_run,
            "{x:?} {y:?}"
        );
        assert_eq!((x.rate, x.scale), (y.rate, y.scale));
    }
}

/// `sampler-analyze rates ARGS`, read.
fn analyze_rates(tools: &Tools, args: &[&Path]) -> Rates {
    let output = Command::new(tools.bin.join("sampler-analyze"))
        .arg("rates")
        .args(args)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    Rates::read(output.stdout.as_slice()).unwrap()
}

/// The database options of `target` for the command-line tools.
fn database_args(target: &DatabaseTarget) -> Vec<PathBuf> {
    match target {
        DatabaseTarget::SqliteDir(dir) => vec!["--data".into(), dir.clone()],
        DatabaseTarget::Postgres(url) => vec!["--database".into(), url.into()],
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rates_from_a_training_set_offline_and_through_the_collector() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let tools = Tools::build(&["sampler-cc", "sampler-launcher", "sampler-analysis"]);
    let sampler_run = tools.bin.join("sampler-run");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/c/rates.c"),
        dir.join("rates.c"),
    )
    .unwrap();
    tools.sampler_cc(dir, &["-O1", "-fsampler-strict", "rates.c", "-o", "rates"]);
    let binary = dir.join("rates");
    let keys = site_keys(&binary);

    // The training set, two runs at a time.
    let saved = dir.join("saved");
    std::fs::create_dir(&saved).unwrap();
    std::thread::scope(|scope| {
        for worker in 0..2 {
            let (sampler_run, saved) = (&sampler_run, &saved);
            scope.spawn(move || {
                for seed in (worker..RUNS).step_by(2) {
                    let status = Command::new(sampler_run)
                        .arg("--save")
                        .arg(saved)
                        .args(["--app", "demo", "--version", "1"])
                        .args(["--sparsity", &SPARSITY.to_string(), "--", "./rates"])
                        .current_dir(dir)
                        .env("SAMPLER_STATE_DIR", dir.join("state"))
                        .env("SAMPLER_SEED", seed.to_string())
                        .stdin(Stdio::null())
                        .status()
                        .unwrap();
                    assert!(status.success());
                }
            });
        }
    });
    assert_eq!(std::fs::read_dir(&saved).unwrap().count(), RUNS);

    // Offline.
    let offline = analyze_rates(&tools, &[Path::new("--runs"), &saved, &binary]);
    assert_eq!(
        offline.source,
        RatesSource::Runs {
            directory: saved.display().to_string()
        }
    );
    for ((predicate, n), (e, rate, scale)) in SITES.iter().zip(check_sites(&offline, &keys)) {
        eprintln!(
            "`{predicate}`: {n} executions per run, {e:.3} estimated ({:+.2} sd): rate {rate}, scale {scale}",
            (e - n) / standard_deviation(*n)
        );
    }
    // The options reach the file.
    let options = analyze_rates(
        &tools,
        &[
            Path::new("--runs"),
            &saved,
            &binary,
            Path::new("--target"),
            Path::new("10"),
            Path::new("--sparsity"),
            Path::new("1000"),
        ],
    );
    assert_eq!((options.target, options.sparsity), (10.0, 1000));
    let (key, index) = &keys[1];
    // 10 ± 11 executions against a target of 10: whatever the estimate,
    // the rule's choice at sparsity 1000.
    let line = options.get(key, *index).unwrap();
    assert_eq!(
        (line.rate, line.scale),
        site_rate(line.executions_per_run, 10.0, 1000)
    );

    for backend in backends() {
        let collector = Collector::start(backend).await;
        let (summary, _) = upload_build(
            &collector.url,
            &collector.ingest,
            &BuildUpload {
                app: "demo",
                version: "1",
                files: std::slice::from_ref(&binary),
                ..Default::default()
            },
        )
        .await
        .unwrap();
        assert!(summary.new_site_tables >= 1);
        let output = Command::new(&sampler_run)
            .arg("upload")
            .arg(&saved)
            .args(["--app", "demo", "--version", "1"])
            .args(["--server", &collector.url, "--token", &collector.ingest])
            .env("SAMPLER_STATE_DIR", dir.join(format!("state-{backend}")))
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert_eq!(collector.count_runs().await, RUNS as i64);

        // The read API: the latest build's (the only one), the same rates
        // as offline.
        let get = |query: &str| {
            let request = collector
                .client
                .get(format!("{}/api/v1/rates{query}", collector.url))
                .bearer_auth(&collector.read);
            async move { request.send().await.unwrap() }
        };
        let response = get("").await;
        assert_eq!(response.status(), 200, "{backend}");
        assert_eq!(
            response.headers()["content-type"],
            "text/plain; charset=utf-8"
        );
        assert!(response.headers().get("sampler-warning").is_none());
        let text = response.text().await.unwrap();
        let api = Rates::read(text.as_bytes()).unwrap();
        assert_eq!(
            api.source,
            RatesSource::Collector {
                application: "demo".into(),
                version: "1".into(),
                release: String::new()
            }
        );
        check_sites(&api, &keys);
        same_rates(&api, &offline);
        let named = get("?app=demo&version=1&target=100&budget=100000&sparsity=100").await;
        assert_eq!(named.text().await.unwrap(), text);

        // Bad parameters are named; unknown builds are not found.
        for (query, status, message) in [
            ("?target=lots", 400, "target `lots`: expected a number ≥ 0"),
            ("?budget=-1", 400, "budget `-1`: expected a number ≥ 0"),
            ("?sparsity=0", 400, "sparsity `0`: expected a whole number"),
            ("?release=1", 400, "release without version"),
            (
                "?version=9",
                404,
                "no build version `9` release `` of `demo`",
            ),
            ("?app=other", 403, "the token is for application `demo`"),
        ] {
            let response = get(query).await;
            assert_eq!(response.status(), status, "{query}");
            let body = response.text().await.unwrap();
            assert!(body.starts_with(message), "{query}: {body}");
        }
        let anonymous = collector
            .client
            .get(format!("{}/api/v1/rates", collector.url))
            .send()
            .await
            .unwrap();
        assert_eq!(anonymous.status(), 401);

        // A budget between uniform sampling's cost and the target's lowers
        // the target; one below uniform's gives uniform rates.
        let between = (api.uniform + api.expected) / 2.0;
        let response = get(&format!("?budget={between}")).await;
        let warning = response.headers()["sampler-warning"]
            .to_str()
            .unwrap()
            .to_owned();
        assert!(
            warning.starts_with(&format!(
                "the budget of {between} observations per run lowered the target from 100 to "
            )),
            "{warning}"
        );
        let lowered = Rates::read(response.text().await.unwrap().as_bytes()).unwrap();
        assert!(lowered.expected <= between && lowered.expected >= api.uniform);
        let response = get("?budget=5000").await;
        assert!(
            response.headers()["sampler-warning"]
                .to_str()
                .unwrap()
                .contains("below uniform sampling's")
        );
        let uniform = Rates::read(response.text().await.unwrap().as_bytes()).unwrap();
        assert_eq!(uniform.expected, uniform.uniform);
        assert!(uniform.sites.iter().all(|site| {
            (site.executions_per_run > 0.0) == (site.scale == 1)
                && (site.scale == 1 || site.scale == 0)
        }));

        // The command lines say the same.
        let database = database_args(&collector.target);
        let mut args: Vec<&Path> = database.iter().map(PathBuf::as_path).collect();
        args.extend([Path::new("--app"), Path::new("demo")]);
        let analyzed = analyze_rates(&tools, &args);
        same_rates(&analyzed, &api);
        assert_eq!(analyzed.source, api.source);
        let output = Command::new(env!("CARGO_BIN_EXE_sampler-collector"))
            .arg("rates")
            .args(&database)
            .args(["--app", "demo"])
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let printed = Rates::read(output.stdout.as_slice()).unwrap();
        same_rates(&printed, &api);
        assert_eq!(printed.source, api.source);
        let output = Command::new(env!("CARGO_BIN_EXE_sampler-collector"))
            .arg("rates")
            .args(&database)
            .args(["--app", "demo", "--version", "9"])
            .output()
            .unwrap();
        assert!(!output.status.success());
        assert_eq!(
            String::from_utf8_lossy(&output.stderr),
            "sampler-collector: no build version `9` release `` of `demo` in the collector's database\n"
        );

        // A newer build without runs is not the latest with runs.
        upload_build(
            &collector.url,
            &collector.ingest,
            &BuildUpload {
                app: "demo",
                version: "2",
                files: std::slice::from_ref(&binary),
                ..Default::default()
            },
        )
        .await
        .unwrap();
        let still = Rates::read(get("").await.text().await.unwrap().as_bytes()).unwrap();
        assert_eq!(still.source, api.source);
        let none = get("?version=2").await;
        assert_eq!(none.status(), 404);
        assert_eq!(
            none.text().await.unwrap(),
            "build version `2` release `` of `demo` has no runs with a sparsity\n"
        );
    }
}

/// Runs `./binary` `seeds` through `sampler-run --save` into `saved` at
/// [`SPARSITY`], two at a time.
fn save_runs(
    dir: &Path,
    sampler_run: &Path,
    binary: &str,
    version: &str,
    saved: &Path,
    seeds: std::ops::Range<usize>,
) {
    std::fs::create_dir(saved).unwrap();
    let seeds: Vec<usize> = seeds.collect();
    std::thread::scope(|scope| {
        for chunk in seeds.chunks(seeds.len().div_ceil(2)) {
            scope.spawn(move || {
                for seed in chunk {
                    let status = Command::new(sampler_run)
                        .arg("--save")
                        .arg(saved)
                        .args(["--app", "demo", "--version", version])
                        .args(["--sparsity", &SPARSITY.to_string(), "--"])
                        .arg(format!("./{binary}"))
                        .current_dir(dir)
                        .env("SAMPLER_STATE_DIR", dir.join("state"))
                        .env("SAMPLER_SEED", seed.to_string())
                        .stdin(Stdio::null())
                        .status()
                        .unwrap();
                    assert!(status.success());
                }
            });
        }
    });
}

/// The branches counters (false + true) of each site in each run file of
/// `saved`: one vector per run.
fn observations_per_run(saved: &Path, n_sites: usize) -> Vec<Vec<u64>> {
    let mut runs = Vec::new();
    for entry in std::fs::read_dir(saved).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        let mut samples = Vec::new();
        sampler_resolve::extract_reports(bytes.as_slice(), "samples", &mut samples).unwrap();
        let parsed = sampler_storage::counters::RunSamples::parse(&samples).unwrap();
        let mut observed = vec![0u64; n_sites];
        for section in &parsed.sections {
            if section.key.scheme.as_str() != "branches" {
                continue;
            }
            if let sampler_storage::counters::Rows::Counters { rows, .. } = &section.rows {
                for (site, counters) in rows {
                    observed[*site as usize] += counters.iter().sum::<u64>();
                }
            }
        }
        runs.push(observed);
    }
    runs
}

/// Issue 19's exact-rate test, parts 2 and 3: rates learned from 100
/// training runs at sparsity 100 (seeds 1..=100), the program rebuilt
/// with them (`-fsampler-rates`), 200 runs at the same sparsity: each
/// site's observation frequency matches the rate it was built with,
/// q(scale, 100), within 5 standard deviations, and the sites at rate 1
/// are observed in every run, every execution. The binary records the
/// scales (`.debug_site_scales`), so that rates learned again from the
/// rebuilt program's runs, offline and through the collector (which
/// stores the scales at `build add`), estimate each site's executions
/// right.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rates_built_in_are_realized_and_reported() {
    const RATED_RUNS: usize = 200;
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let tools = Tools::build(&["sampler-cc", "sampler-launcher", "sampler-analysis"]);
    let sampler_run = tools.bin.join("sampler-run");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/c/rates.c"),
        dir.join("rates.c"),
    )
    .unwrap();
    tools.sampler_cc(dir, &["-O1", "-fsampler-strict", "rates.c", "-o", "rates"]);
    let training = dir.join("training");
    save_runs(dir, &sampler_run, "rates", "1", &training, 1..101);
    let learned = analyze_rates(
        &tools,
        &[Path::new("--runs"), &training, &dir.join("rates")],
    );
    std::fs::write(dir.join("rates.txt"), learned.to_text()).unwrap();
    tools.sampler_cc(
        dir,
        &[
            "-O1",
            "-fsampler-strict",
            "-fsampler-rates=rates.txt",
            "rates.c",
            "-o",
            "rated",
        ],
    );
    let rated = dir.join("rated");

    // The branch sites in table order, their executions per run, and the
    // scale each asked for.
    let keys = site_keys(&rated);
    let key = keys[0].0.clone();
    let executions: [u64; 7] = [1, 11, 10, 1001, 1000, 1_000_001, 1_000_000];
    let asked: Vec<u32> = (0..7)
        .map(|site| learned.get(&key, site).unwrap().scale)
        .collect();
    assert_eq!((asked[0], asked[1], asked[2]), (0, 0, 0), "{asked:?}");
    assert_eq!((asked[5], asked[6]), (1, 1), "{asked:?}");
    // The site outside loops keeps its scale; each loop iteration is one
    // region of its condition and its `if`, at the smaller scale of the
    // two.
    let mut built = asked.clone();
    for pair in [(1, 2), (3, 4), (5, 6)] {
        let scale = asked[pair.0].min(asked[pair.1]);
        (built[pair.0], built[pair.1]) = (scale, scale);
    }
    let output = Command::new(tools.bin.join("extract-section"))
        .args([Path::new(".debug_site_scales"), &rated])
        .output()
        .unwrap();
    assert!(output.status.success());
    let mut expected = format!("<scales unit=\"{}\" scheme=\"branches\">\n", key.unit);
    for scale in &built {
        expected.push_str(&format!("{scale}\n"));
    }
    expected.push_str(&format!(
        "</scales>\n<scales unit=\"{}\" scheme=\"returns\">\n</scales>\n",
        key.unit
    ));
    assert_eq!(String::from_utf8(output.stdout).unwrap(), expected);

    let rated_runs = dir.join("rated-runs");
    save_runs(
        dir,
        &sampler_run,
        "rated",
        "2",
        &rated_runs,
        1..RATED_RUNS + 1,
    );
    let runs = observations_per_run(&rated_runs, 7);
    assert_eq!(runs.len(), RATED_RUNS);
    for site in 0..7 {
        let q = observation_probability(built[site], SPARSITY);
        let total_executions = (executions[site] * RATED_RUNS as u64) as f64;
        let observed: u64 = runs.iter().map(|run| run[site]).sum();
        let frequency = observed as f64 / total_executions;
        let sd = (q * (1.0 - q) / total_executions).sqrt();
        let asked_rate = learned.get(&key, site as u32).unwrap().rate;
        eprintln!(
            "site {site}: {} executions per run, asked rate {asked_rate} (scale {}), built scale {}, realized rate {q}, observed {frequency} ({observed} of {total_executions}), {:+.2} sd",
            executions[site],
            asked[site],
            built[site],
            if sd > 0.0 { (frequency - q) / sd } else { 0.0 }
        );
        assert!(q >= asked_rate, "site {site}: built below its rate");
        if built[site] == 0 {
            // Every run, every execution.
            assert!(
                runs.iter().all(|run| run[site] == executions[site]),
                "site {site}"
            );
        } else {
            assert!(
                (frequency - q).abs() <= 5.0 * sd,
                "site {site}: observed {frequency}, rate {q}, sd {sd}"
            );
        }
    }

    // Rates learned again from the rated build's runs: each site's
    // executions estimated with its own probability.
    let check = |rates: &Rates| {
        for site in 0..7 {
            let line = rates.get(&key, site as u32).unwrap();
            let n = executions[site] as f64;
            let q = observation_probability(built[site], SPARSITY);
            let sd = (n * (1.0 - q) / (q * RATED_RUNS as f64)).sqrt();
            assert!(
                (line.executions_per_run - n).abs() <= 5.0 * sd.max(1e-9),
                "site {site}: {} estimated, {n} true, sd {sd}",
                line.executions_per_run
            );
        }
    };
    let offline = analyze_rates(&tools, &[Path::new("--runs"), &rated_runs, &rated]);
    check(&offline);
    for backend in backends() {
        let collector = Collector::start(backend).await;
        for (version, binary, saved) in [
            ("1", dir.join("rates"), &training),
            ("2", rated.clone(), &rated_runs),
        ] {
            upload_build(
                &collector.url,
                &collector.ingest,
                &BuildUpload {
                    app: "demo",
                    version,
                    files: std::slice::from_ref(&binary),
                    ..Default::default()
                },
            )
            .await
            .unwrap();
            let output = Command::new(&sampler_run)
                .arg("upload")
                .arg(saved)
                .args(["--app", "demo", "--version", version])
                .args(["--server", &collector.url, "--token", &collector.ingest])
                .env(
                    "SAMPLER_STATE_DIR",
                    dir.join(format!("state-{backend}-{version}")),
                )
                .output()
                .unwrap();
            assert!(
                output.status.success(),
                "{}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        let get = |query: &str| {
            let request = collector
                .client
                .get(format!("{}/api/v1/rates{query}", collector.url))
                .bearer_auth(&collector.read);
            async move { request.send().await.unwrap().text().await.unwrap() }
        };
        // The latest build is the rated one; its scales came with it.
        let api = Rates::read(get("").await.as_bytes()).unwrap();
        assert_eq!(
            api.source,
            RatesSource::Collector {
                application: "demo".into(),
                version: "2".into(),
                release: String::new()
            }
        );
        check(&api);
        same_rates(&api, &offline);
        // The training build has no scales: its own estimates, as offline.
        let first = Rates::read(get("?version=1").await.as_bytes()).unwrap();
        same_rates(&first, &learned);
    }
}
