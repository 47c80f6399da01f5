//! sampler-analyze end to end: a C program with two planted bugs, built
//! with sampler-cc, run many times, uploaded to a real collector on
//! loopback; the analysis reads the collector's SQLite database.

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Command;

use sampler_testkit::Tools;
use serde_json::Value;

fn analyze(tools: &Tools, source: &[&Path], args: &[&str]) -> Value {
    let output = Command::new(tools.bin.join("sampler-analyze"))
        .args(source)
        .args(["--format", "json"])
        .args(args)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

fn chosen(report: &Value) -> Vec<(String, u64, String)> {
    report["elimination"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| {
            let file = entry["file"]
                .as_str()
                .unwrap()
                .rsplit('/')
                .next()
                .unwrap()
                .to_owned();
            (
                file,
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
async fn two_planted_bugs_come_first() {
    let dir = tempfile::tempdir().unwrap();
    let tools = Tools::build(&["sampler-cc", "sampler-launcher", "sampler-analysis"]);
    let sampler_run = tools.bin.join("sampler-run");
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/c/bugs.c");
    std::fs::copy(&source, dir.path().join("bugs.c")).unwrap();
    tools.sampler_cc(
        dir.path(),
        &["-g", "-O1", "-fsampler-strict", "bugs.c", "-o", "bugs"],
    );

    // 800 runs through `sampler-run --save`, inputs from a fixed linear
    // congruential sequence.
    let saved = dir.path().join("saved");
    std::fs::create_dir(&saved).unwrap();
    let mut state: u64 = 12345;
    let mut next = || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) % 100
    };
    let (mut crashes, mut errors) = (0u64, 0u64);
    for _ in 0..800 {
        let (key, mode) = (next(), next());
        let status = Command::new(&sampler_run)
            .arg("--save")
            .arg(&saved)
            .args([
                "--app",
                "bugs",
                "--version",
                "1",
                "--sparsity",
                "1",
                "--",
                "./bugs",
            ])
            .args([key.to_string(), mode.to_string()])
            .current_dir(dir.path())
            .env("SAMPLER_STATE_DIR", dir.path().join("state"))
            .output()
            .unwrap()
            .status;
        crashes += u64::from(status.signal().is_some());
        errors += u64::from(status.code().is_some_and(|code| code != 0));
    }
    // The inputs make both bugs common enough to rank.
    assert!(
        crashes > 100 && errors > 40,
        "{crashes} crashes, {errors} errors"
    );

    // Offline, from the run files and the binary's site tables.
    let bugs = dir.path().join("bugs");
    let offline = analyze(&tools, &[Path::new("--runs"), &saved, &bugs], &[]);
    assert_eq!(offline["runs"]["failing"], crashes);
    assert_eq!(
        chosen(&offline)[0],
        expect(&[("bugs.c", 28, "key > 75")])[0]
    );
    // The ranking says where each predicate stands in the elimination,
    // in JSON and in CSV.
    let first = offline["ranking"]
        .as_array()
        .unwrap()
        .iter()
        .find(|entry| entry["predicate"] == "key > 75" && entry["line"] == 28)
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
        .find(|line| line.contains(",28,main,branches,key > 75,"))
        .unwrap();
    assert_eq!(row.split(',').nth(1), Some("1"), "{row}");
    assert_eq!(
        offline["elimination"][0]["source"],
        "if (key % 10 == 0 || key > 75)"
    );

    // The same runs uploaded to a collector on loopback.
    let data = dir.path().join("data");
    let store = sampler_collector::store::Store::open(
        &sampler_collector::store::DatabaseTarget::SqliteDir(data.clone()),
        4,
    )
    .await
    .unwrap();
    let token =
        sampler_collector::tokens::create(&store, "bugs", sampler_collector::tokens::Scope::Ingest)
            .await
            .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let running = sampler_collector::server::start(
        store,
        sampler_collector::limits::Limits::default(),
        dir.path().join("incoming"),
        listener,
    )
    .await
    .unwrap();
    let url = format!("http://{}", running.address);
    sampler_collector::builds::upload_build(
        &url,
        &token,
        "bugs",
        "1",
        None,
        std::slice::from_ref(&bugs),
    )
    .await
    .unwrap();
    let output = Command::new(&sampler_run)
        .arg("upload")
        .arg(&saved)
        .args(["--app", "bugs", "--server", &url, "--token", &token])
        .env("SAMPLER_STATE_DIR", dir.path().join("state"))
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    running.shutdown().await.unwrap();

    // Failures are deaths by a signal: the crash's condition first, as offline.
    let database = [
        Path::new("--data"),
        &data,
        Path::new("--app"),
        Path::new("bugs"),
    ];
    let report = analyze(&tools, &database, &[]);
    assert_eq!(report["runs"]["failing"], crashes);
    assert_eq!(report["elimination"], offline["elimination"]);
    assert_eq!(report["ranking"], offline["ranking"]);
    // With exit statuses too: each bug's condition, one after the other.
    let report = analyze(&tools, &database, &["--fail-on-exit"]);
    assert_eq!(report["runs"]["failing"], crashes + errors);
    let first_two: Vec<_> = chosen(&report).into_iter().take(2).collect();
    assert_eq!(
        first_two,
        expect(&[("bugs.c", 31, "total < 0"), ("bugs.c", 28, "key > 75")])
    );
    // Only exit status 1 fails (and signals): the same two.
    let report = analyze(&tools, &database, &["--fail-on-status", "1"]);
    let first_two: Vec<_> = chosen(&report).into_iter().take(2).collect();
    assert_eq!(
        first_two,
        expect(&[("bugs.c", 31, "total < 0"), ("bugs.c", 28, "key > 75")])
    );
}
