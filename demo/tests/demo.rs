//! The README's main job, non-interactively: the demo on the shipped
//! example with fewer runs and a fixed seed names each planted bug first.

use std::process::Command;

use serde_json::Value;

/// BUG 1's condition (examples/logstat/README.md): the table is full.
const CRASH: (u64, &str) = (86, "!(t->n < 128)");
/// BUG 2's condition: a 5xx status taken for a malformed line.
const EXIT: (u64, &str) = (242, "r.status > 499");

#[test]
fn the_demo_names_both_bugs_first() {
    let tools = sampler_testkit::Tools::build(&["sampler-cc", "sampler-launcher"]);
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.json");
    let output = Command::new(env!("CARGO_BIN_EXE_sampler-demo"))
        .args([
            "--no-serve",
            "--runs",
            "1500",
            "--seed",
            "3",
            "--listen",
            "127.0.0.1:0",
        ])
        .arg("--dir")
        .arg(dir.path().join("work"))
        .arg("--report-json")
        .arg(&report)
        .env("SAMPLER_RUNTIME_DIR", tools.runtime.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    let first_two: Vec<(u64, &str)> = report["elimination"]
        .as_array()
        .unwrap()
        .iter()
        .take(2)
        .map(|entry| {
            assert!(entry["file"].as_str().unwrap().ends_with("/logstat.c"));
            (
                entry["line"].as_u64().unwrap(),
                entry["predicate"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(first_two, [CRASH, EXIT], "{stdout}");
    // Every run was stored, each did what its input should, and the
    // output says where to look next.
    assert!(stdout.contains("1500 stored by the collector"), "{stdout}");
    assert!(
        !String::from_utf8_lossy(&output.stderr).contains("did not do what"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains(" 1. logstat.c:86 "), "{stdout}");
    assert!(
        stdout.contains("      | if (t->n < TABLE_MAX) {"),
        "{stdout}"
    );
    assert!(
        stdout.contains("#1 by_hits | print_top | main: "),
        "{stdout}"
    );
    assert!(
        stdout.contains("its first predictor: logstat.c:86 !(t->n < 128)"),
        "{stdout}"
    );
    assert!(stdout.contains("Dashboard: http://127.0.0.1:"), "{stdout}");
}
