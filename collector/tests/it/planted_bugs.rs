//! The whole loop on a C program with two planted bugs (`c/bugs.c`): built
//! with sampler-cc (sampled, default schemes), run a few thousand times
//! with random inputs through `sampler-run` at sparsity 100, uploaded to a
//! collector on loopback. Each bug's condition must come first: from
//! `sampler-analyze` offline and on the collector's database, from the
//! read API, per crash group, and on the dashboard in headless Chromium.
//! A shuffled labelling of the same runs must retain nothing.

use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};

use fantoccini::Locator;
use rand::{Rng, RngExt, SeedableRng};
use sampler_collector::builds::{BuildUpload, upload_build};
use sampler_collector::limits::Limits;
use sampler_collector::server;
use sampler_collector::store::{DatabaseTarget, Store};
use sampler_collector::tokens::{self, Scope};
use sampler_testkit::Tools;
use serde_json::Value;

use crate::browser::Browser;

const RUNS: usize = 2000;
const SPARSITY: &str = "100";

/// The crash's condition: the list of long words is full
/// (`if (n_long < MAX_LONG)` false).
const CRASH: (&str, u64, &str) = ("bugs.c", 57, "!(n_long < 8)");
/// The wrong exit status's condition, and its equivalent: the value that
/// `strtol` returned, which the condition tests.
const EXIT: [(&str, u64, &str); 2] = [("bugs.c", 49, "value < 0"), ("bugs.c", 47, "strtol() < 0")];

/// Whether the first two predictors are the crash's and the exit status's
/// conditions.
fn both_bugs(report: &Value) {
    let chosen = chosen(report);
    assert!(chosen.len() >= 2, "{chosen:?}");
    assert_eq!(chosen[0], expect(&[CRASH])[0]);
    assert!(expect(&EXIT).contains(&chosen[1]), "{chosen:?}");
}

/// One run's input: 30 lines of about a dozen tokens, each line with up
/// to 8 distinct long words (repeated or not). In a quarter of the runs
/// one line has 20 to 100 distinct long words (the crash); in a fifth,
/// 10 to 60 negative numbers are spread over the lines (exit status 1).
/// A third of the lines hold a dash.
/// Returns the text and whether each bug should show.
fn input(rng: &mut impl Rng) -> (String, bool, bool) {
    let crash = rng.random_bool(0.25);
    let bad_line = rng.random_range(0..30);
    let negative = if rng.random_bool(0.2) {
        rng.random_range(10..=60)
    } else {
        0
    };
    let mut next = || rng.next_u32();
    let word = |next: &mut dyn FnMut() -> u32, len: u32| -> String {
        (0..len)
            .map(|_| char::from(b'a' + (next() % 26) as u8))
            .collect()
    };
    let mut text = String::new();
    for line in 0..30 {
        let distinct = if crash && line == bad_line {
            20 + next() % 81
        } else {
            next() % 9
        };
        let mut tokens = Vec::new();
        for _ in 0..distinct {
            let len = 13 + next() % 8;
            let long = word(&mut next, len);
            for _ in 0..1 + next() % 3 {
                tokens.push(long.clone());
            }
        }
        // This line's share of the negative numbers.
        let share = negative / 30 + u32::from(line < negative % 30);
        for _ in 0..share {
            tokens.push(format!("-{}", 1 + next() % 999));
        }
        // Dashes, which are not negative numbers.
        if next() % 3 == 0 {
            tokens.push("-".to_owned());
        }
        while tokens.len() < 12 {
            if next() % 3 == 0 {
                tokens.push((next() % 1000).to_string());
            } else {
                let len = 3 + next() % 8;
                tokens.push(word(&mut next, len));
            }
        }
        // Interleaved, as real input would be.
        for i in (1..tokens.len()).rev() {
            let j = (next() as usize) % (i + 1);
            tokens.swap(i, j);
        }
        text.push_str(&tokens.join(" "));
        text.push('\n');
    }
    (text, crash, negative > 0)
}

/// A temporary folder holding `bugs.c`, and the tools the tests drive.
fn bugs_lab() -> (tempfile::TempDir, Tools) {
    let dir = tempfile::tempdir().unwrap();
    let tools = Tools::build(&["sampler-cc", "sampler-launcher", "sampler-analysis"]);
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/c/bugs.c");
    std::fs::copy(&source, dir.path().join("bugs.c")).unwrap();
    (dir, tools)
}

/// The runs' inputs, the same at every run of the tests: (index, (text,
/// crash expected, wrong exit status expected)).
fn inputs() -> Vec<(usize, (String, bool, bool))> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(2026);
    (0..RUNS).map(|seed| (seed, input(&mut rng))).collect()
}

/// Runs `./binary` in `dir` once per input through `sampler-run` at
/// SPARSITY, two at a time, each run with its index as its seed; saves
/// each run file as `saved/INDEX.report` and checks that each run did
/// what its input says. Returns (crashed, exited with status 1) per run.
fn run_all(
    sampler_run: &Path,
    dir: &Path,
    binary: &str,
    inputs: &[(usize, (String, bool, bool))],
    saved: &Path,
) -> Vec<(bool, bool)> {
    std::fs::create_dir(saved).unwrap();
    let program = format!("./{binary}");
    let outcomes: Vec<(bool, bool)> = std::thread::scope(|scope| {
        let workers: Vec<_> = inputs
            .chunks(inputs.len().div_ceil(2))
            .enumerate()
            .map(|(worker, chunk)| {
                let program = &program;
                let pending = dir.join(format!("pending-{binary}-{worker}"));
                std::fs::create_dir(&pending).unwrap();
                scope.spawn(move || {
                    chunk
                        .iter()
                        .map(|(seed, (text, crash, error))| {
                            let mut child = Command::new(sampler_run)
                                .arg("--save")
                                .arg(&pending)
                                .args(["--app", "bugs", "--version", "1", "--sparsity", SPARSITY])
                                .args(["--", program.as_str()])
                                .current_dir(dir)
                                .env("SAMPLER_STATE_DIR", dir.join("state"))
                                // Each run its own stream, the same at every
                                // run of the test.
                                .env("SAMPLER_SEED", seed.to_string())
                                .stdin(Stdio::piped())
                                .stdout(Stdio::null())
                                .stderr(Stdio::null())
                                .spawn()
                                .unwrap();
                            child
                                .stdin
                                .take()
                                .unwrap()
                                .write_all(text.as_bytes())
                                .unwrap();
                            let status = child.wait().unwrap();
                            let mut files = std::fs::read_dir(&pending).unwrap();
                            let file = files.next().unwrap().unwrap().path();
                            assert!(files.next().is_none());
                            std::fs::rename(file, saved.join(format!("{seed:05}.report"))).unwrap();
                            // Each run does what its input says.
                            let crashed = status.signal() == Some(11);
                            let failed = status.code() == Some(1);
                            assert_eq!((crashed, failed), (*crash, *error && !*crash), "{status}");
                            (crashed, failed)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|worker| worker.join().unwrap())
            .collect()
    });
    assert_eq!(std::fs::read_dir(saved).unwrap().count(), inputs.len());
    outcomes
}

fn analyze(tools: &Tools, dir: &Path, source: &[&Path], args: &[&str]) -> Value {
    let output = Command::new(tools.bin.join("sampler-analyze"))
        .args(source)
        .args(["--format", "json"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

/// (file name, line, predicate) of each predictor after elimination.
fn chosen(report: &Value) -> Vec<(String, u64, String)> {
    report["elimination"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| {
            let file = entry["file"].as_str().unwrap();
            (
                file.rsplit('/').next().unwrap().to_owned(),
                entry["line"].as_u64().unwrap(),
                entry["predicate"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn expect(list: &[(&str, u64, &str)]) -> Vec<(String, u64, String)> {
    list.iter()
        .map(|(f, l, p)| (f.to_string(), *l, p.to_string()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_planted_bugs_come_first_everywhere() {
    let (dir, tools) = bugs_lab();
    let dir = dir.path();
    let sampler_run = tools.bin.join("sampler-run");
    tools.sampler_cc(
        dir,
        &["-g", "-O1", "-fsampler-strict", "bugs.c", "-o", "bugs"],
    );

    // The runs, two at a time, each saved as a run file named by its
    // index, so that every analysis numbers the runs alike.
    let saved = dir.join("saved");
    let inputs = inputs();
    let outcomes = run_all(&sampler_run, dir, "bugs", &inputs, &saved);
    let crashes = outcomes.iter().filter(|(crash, _)| *crash).count() as u64;
    let errors = outcomes.iter().filter(|(_, error)| *error).count() as u64;

    // Offline, from the run files and the binary's site tables.
    let bugs = dir.join("bugs");
    let offline = analyze(&tools, dir, &[Path::new("--runs"), &saved, &bugs], &[]);
    assert_eq!(offline["runs"]["failing"], crashes);
    assert_eq!(chosen(&offline)[0], expect(&[CRASH])[0]);
    let offline_exit = analyze(
        &tools,
        dir,
        &[Path::new("--runs"), &saved, &bugs],
        &["--fail-on-exit"],
    );
    assert_eq!(offline_exit["runs"]["failing"], crashes + errors);
    both_bugs(&offline_exit);
    assert_eq!(
        offline_exit["elimination"][0]["source"],
        "if (n_long < MAX_LONG)"
    );
    // Each ranked predicate says where it stands in the elimination, in
    // JSON and in CSV.
    let first = offline["ranking"]
        .as_array()
        .unwrap()
        .iter()
        .find(|entry| entry["predicate"] == CRASH.2 && entry["line"] == CRASH.1)
        .unwrap();
    assert_eq!(first["eliminated"], 1);
    let csv = Command::new(tools.bin.join("sampler-analyze"))
        .args([Path::new("--runs"), &saved, &bugs])
        .args(["--format", "csv"])
        .output()
        .unwrap();
    let csv = String::from_utf8(csv.stdout).unwrap();
    let row = csv
        .lines()
        .find(|line| line.contains(&format!(",{},main,branches,{},", CRASH.1, CRASH.2)))
        .unwrap();
    assert_eq!(row.split(',').nth(1), Some("1"), "{row}");

    // The same runs uploaded to a collector on loopback, the build
    // registered with its sources.
    let data = dir.join("data");
    let store = Store::open(&DatabaseTarget::SqliteDir(data.clone()), 4)
        .await
        .unwrap();
    let ingest = tokens::create(&store, "bugs", Scope::Ingest).await.unwrap();
    let read = tokens::create(&store, "bugs", Scope::Read).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let running = server::start(store, Limits::default(), dir.join("incoming"), listener)
        .await
        .unwrap();
    let url = format!("http://{}", running.address);
    let (summary, skipped) = upload_build(
        &url,
        &ingest,
        &BuildUpload {
            app: "bugs",
            version: "1",
            files: std::slice::from_ref(&bugs),
            sources: Some(dir),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert_eq!((summary.sources, skipped.sources.len()), (1, 0));
    let output = Command::new(&sampler_run)
        .arg("upload")
        .arg(&saved)
        .args(["--app", "bugs", "--server", &url, "--token", &ingest])
        .env("SAMPLER_STATE_DIR", dir.join("state"))
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );

    // sampler-analyze on the collector's database: what it said offline.
    let database = [
        Path::new("--data"),
        &data,
        Path::new("--app"),
        Path::new("bugs"),
    ];
    let report = analyze(&tools, dir, &database, &[]);
    assert_eq!(report["runs"]["failing"], crashes);
    assert_eq!(report["elimination"], offline["elimination"]);
    assert_eq!(report["ranking"], offline["ranking"]);
    let report_exit = analyze(&tools, dir, &database, &["--fail-on-exit"]);
    assert_eq!(report_exit["elimination"], offline_exit["elimination"]);
    // The one build alone: the same.
    let build = analyze(
        &tools,
        dir,
        &database,
        &["--fail-on-exit", "--build-version", "1"],
    );
    assert_eq!(build["elimination"], offline_exit["elimination"]);
    // Only exit status 1 fails (and signals): the same.
    let report = analyze(&tools, dir, &database, &["--fail-on-status", "1"]);
    assert_eq!(report["elimination"], offline_exit["elimination"]);
    // Tail predicates (`--last 16`) from the traces the runs carry (at the
    // crash or at exit; sampler-run traces by default): the stored traces
    // give what the run files' do, and every predicate has its twin.
    let offline_last = analyze(
        &tools,
        dir,
        &[Path::new("--runs"), &saved, &bugs],
        &["--fail-on-exit", "--last", "16"],
    );
    let report_last = analyze(&tools, dir, &database, &["--fail-on-exit", "--last", "16"]);
    assert_eq!(
        offline_last["predicates"],
        serde_json::json!(2 * offline_exit["predicates"].as_u64().unwrap())
    );
    assert_eq!(report_last["predicates"], offline_last["predicates"]);
    assert_eq!(report_last["ranking"], offline_last["ranking"]);

    // A labelling that has nothing to do with the runs retains nothing
    // once the false discovery rate is bounded (judged one by one, a few
    // of a hundred predicates pass by luck under any labelling), while
    // the real labels still name both bugs.
    let controlled = analyze(&tools, dir, &database, &["--fail-on-exit", "--fdr", "0.05"]);
    both_bugs(&controlled);
    for seed in ["1", "2", "3", "4", "5"] {
        let shuffled = analyze(
            &tools,
            dir,
            &database,
            &[
                "--fail-on-exit",
                "--fdr",
                "0.05",
                "--shuffle-outcomes",
                seed,
            ],
        );
        assert_eq!(shuffled["runs"]["failing"], crashes + errors);
        assert_eq!(
            shuffled["elimination"],
            Value::Array(Vec::new()),
            "seed {seed}"
        );
        assert_eq!(shuffled["ranking"], Value::Array(Vec::new()), "seed {seed}");
    }

    // The read API: the same analysis, with source lines from the
    // registered sources.
    let client = reqwest::Client::new();
    let get = |path: String| {
        let (client, read, url) = (&client, &read, &url);
        async move {
            let response = client
                .get(format!("{url}{path}"))
                .bearer_auth(read)
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), 200, "{path}");
            response.json::<Value>().await.unwrap()
        }
    };
    let api = get("/api/v1/ranking?fail_on_exit=true".to_owned()).await;
    assert_eq!(api["elimination"], offline_exit["elimination"]);
    assert_eq!(api["ranking"], offline_exit["ranking"]);
    // Built without rates and run at sparsity 100: each execution of a
    // site was observed with probability 1/100.
    assert_eq!(api["elimination"][0]["rate"], serde_json::json!(0.01));

    // One crash group, whose own predictor is the crash's condition.
    let groups = get("/api/v1/crash-groups".to_owned()).await;
    let groups = groups["crash_groups"].as_array().unwrap().clone();
    assert_eq!(groups.len(), 1, "{groups:?}");
    assert_eq!(groups[0]["runs"], crashes);
    let group = groups[0]["id"].as_i64().unwrap();
    let own = get(format!("/api/v1/ranking?crash_group={group}")).await;
    assert_eq!(own["runs"]["failing"], crashes);
    assert_eq!(chosen(&own)[0], expect(&[CRASH])[0]);
    let own_cli = analyze(
        &tools,
        dir,
        &database,
        &["--crash-group", &group.to_string()],
    );
    assert_eq!(own_cli["elimination"], own["elimination"]);

    // The dashboard, in a browser.
    if let Some(browser) = Browser::start().await {
        browser.sign_in(&url, &read).await;
        let predicates = browser.texts("#predictors code.predicate").await;
        assert_eq!(predicates[0], CRASH.2);
        let hit = browser.texts("#predictors pre.source .hit").await;
        let hit: Vec<&str> = hit[0].split_whitespace().collect();
        assert_eq!(hit.join(" "), format!("{} if (n_long < MAX_LONG)", CRASH.1));
        let thermometers = browser
            .client
            .find_all(Locator::Css("#predictors svg.thermometer"))
            .await
            .unwrap();
        assert!(!thermometers.is_empty());
        let rates = browser.texts("#predictors span.rate").await;
        assert_eq!(rates[0], "observed 1 in 100");
        let plotted = browser
            .client
            .find_all(Locator::Css("#runs-plot rect.crash"))
            .await
            .unwrap();
        assert!(!plotted.is_empty());
        browser.screenshot("dashboard").await;

        // Failures with exit statuses: both bugs, one after the other.
        browser
            .client
            .goto(&format!("{url}/dashboard?failure=exit"))
            .await
            .unwrap();
        let predicates = browser.texts("#predictors code.predicate").await;
        assert_eq!(predicates[0], CRASH.2);
        assert_eq!(predicates[1], offline_exit["elimination"][1]["predicate"]);

        // The crash group: its frames and its own predictors.
        browser
            .client
            .find(Locator::Css("#crash-groups a"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        browser
            .client
            .wait()
            .for_element(Locator::Css("#backtrace"))
            .await
            .unwrap();
        let frames = browser.texts("#backtrace tr.frame").await;
        assert!(
            frames
                .iter()
                .any(|frame| frame.contains("main") && frame.contains("bugs.c:")),
            "{frames:?}"
        );
        let predicates = browser.texts("#predictors code.predicate").await;
        assert_eq!(predicates[0], CRASH.2);
        browser.screenshot("crash-group").await;
        browser.close().await;
    }
    running.shutdown().await.unwrap();
}

/// Issue 16: sampling a region's sites together (the default: one random
/// decision per region execution) must not make bug isolation worse than
/// sampling each site on its own (`-fsample-sites`). The same program,
/// built both ways, run with the same inputs and seeds at the same
/// sparsity: the same predictors come first, and they are the two bugs'.
#[test]
fn region_and_per_site_sampling_put_the_same_predictors_first() {
    let (dir, tools) = bugs_lab();
    let dir = dir.path();
    let sampler_run = tools.bin.join("sampler-run");
    let inputs = inputs();
    let mut firsts = Vec::new();
    for (binary, form) in [("bugs", None), ("bugs-sites", Some("-fsample-sites"))] {
        let mut args = vec!["-g", "-O1", "-fsampler-strict"];
        args.extend(form);
        args.extend(["bugs.c", "-o", binary]);
        tools.sampler_cc(dir, &args);
        let saved = dir.join(format!("saved-{binary}"));
        let outcomes = run_all(&sampler_run, dir, binary, &inputs, &saved);
        let failing = outcomes
            .iter()
            .filter(|(crash, error)| *crash || *error)
            .count();
        let report = analyze(
            &tools,
            dir,
            &[Path::new("--runs"), &saved, &dir.join(binary)],
            &["--fail-on-exit"],
        );
        assert_eq!(report["runs"]["failing"], failing as u64);
        both_bugs(&report);
        firsts.push(chosen(&report)[..2].to_vec());
    }
    assert_eq!(firsts[0], firsts[1]);
    // Two forms indeed (`sample_regions_decides_once_per_region_execution`
    // tests what each decides).
    let read = |binary: &str| std::fs::read(dir.join(binary)).unwrap();
    assert_ne!(read("bugs"), read("bugs-sites"));
}
