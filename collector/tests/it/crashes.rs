//! Crashes of a real program: a PIE built with `-g` by sampler-cc and an
//! instrumented shared library, crashed in each; symbolized against the
//! registered build, grouped by place.

use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;

use serde_json::{Value, json};

use crate::{Collector, OriginalUpload};

fn tools() -> &'static sampler_testkit::Tools {
    static TOOLS: OnceLock<sampler_testkit::Tools> = OnceLock::new();
    TOOLS.get_or_init(|| sampler_testkit::Tools::build(&["sampler-cc"]))
}

const LIBRARY: &str = r#"#include <stddef.h>
int lib_store(int *p, int v) {
    *p = v;
    return v;
}
"#;

const PROGRAM: &str = r#"#include <stddef.h>
#include <string.h>
int lib_store(int *p, int v);
__attribute__((noinline)) static int crash_here(int *p) {
    return *p + 1;
}
int main(int argc, char **argv) {
    int x = 0;
    if (argc > 1 && strcmp(argv[1], "lib") == 0)
        return lib_store(NULL, 3);
    if (argc > 1 && strcmp(argv[1], "exe") == 0)
        return crash_here(NULL);
    return lib_store(&x, 1) - 1;
}
"#;

/// Runs `demo ARG` (it crashes) and returns its report split into
/// subreports, same-named ones concatenated, as the original launcher does.
fn crash(dir: &Path, arg: &str) -> Vec<(String, String)> {
    let report = dir.join(format!("{arg}.report"));
    let status = Command::new(dir.join("demo"))
        .arg(arg)
        .current_dir(dir)
        .env("SAMPLER_FILE", &report)
        .env("SAMPLER_SPARSITY", "1")
        .status()
        .unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(11), "demo {arg}: {status:?}");
    sampler_testkit::subreports(&std::fs::read_to_string(report).unwrap())
}

async fn upload(collector: &Collector, parts: &[(String, String)]) -> String {
    let named: Vec<(&str, &[u8])> = parts
        .iter()
        .map(|(name, text)| (name.as_str(), text.as_bytes()))
        .collect();
    let upload = OriginalUpload::new(&named);
    let headers = vec![
        ("Sampler-Application-Version", "2.0".to_owned()),
        ("Sampler-Exit-Signal", "11".to_owned()),
        ("Sampler-Sparsity", "1".to_owned()),
    ];
    let response = collector.send(&upload, &headers).await;
    assert_eq!(response.status(), 200);
    response.text().await.unwrap()
}

/// The frames with a source location: (function, file name, line).
fn own_frames(run: &Value) -> Vec<(String, String, u64)> {
    run["backtrace"]
        .as_array()
        .unwrap_or_else(|| panic!("no backtrace: {run}"))
        .iter()
        .filter(|frame| !frame["file"].is_null())
        .map(|frame| {
            let file = frame["file"].as_str().unwrap();
            (
                frame["function"].as_str().unwrap().to_owned(),
                file.rsplit('/').next().unwrap().to_owned(),
                frame["line"].as_u64().unwrap(),
            )
        })
        .collect()
}

fn frames(list: &[(&str, &str, u64)]) -> Vec<(String, String, u64)> {
    list.iter()
        .map(|(f, file, line)| (f.to_string(), file.to_string(), *line))
        .collect()
}

// Multi-threaded: the test blocks on `build add` while the server answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crashes_are_symbolized_when_their_build_arrives_and_grouped_by_place() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("lib.c"), LIBRARY).unwrap();
    std::fs::write(dir.path().join("main.c"), PROGRAM).unwrap();
    tools().sampler_cc(
        dir.path(),
        &[
            "-g",
            "-O0",
            "-fsampler-strict",
            "-fPIC",
            "-shared",
            "-o",
            "libdemo.so",
            "lib.c",
        ],
    );
    tools().sampler_cc(
        dir.path(),
        &[
            "-g",
            "-O0",
            "-fsampler-strict",
            "-fPIE",
            "-pie",
            "-o",
            "demo",
            "main.c",
            "-L.",
            "-ldemo",
            "-Wl,-rpath,$ORIGIN",
        ],
    );
    let in_library = crash(dir.path(), "lib");
    let in_library_again = crash(dir.path(), "lib");
    let in_program = crash(dir.path(), "exe");
    assert_eq!(
        in_library
            .iter()
            .map(|(name, _)| name.as_str())
            .collect::<Vec<_>>(),
        ["samples", "main-backtrace", "modules"]
    );

    for backend in crate::backends() {
        let collector = Collector::start(backend).await;
        // Before its build is registered: stored, waiting for symbols.
        let first = upload(&collector, &in_library).await;
        let run = collector.get_json(&format!("/api/v1/runs/{first}")).await;
        assert_eq!(run["symbolized"], json!(false));
        assert_eq!(run["backtrace"], json!(null));
        assert_eq!(run["counters"][0]["resolved"], json!(false));
        let groups = collector.get_json("/api/v1/crash-groups").await;
        assert_eq!(groups["crash_groups"], json!([]));
        assert_eq!(groups["awaiting_symbols"], json!(1));

        let output = Command::new(env!("CARGO_BIN_EXE_sampler-collector"))
            .args([
                "build",
                "add",
                "--server",
                &collector.url,
                "--token",
                &collector.ingest,
                "--app",
                "demo",
            ])
            .args(["--version", "2.0", "demo", "libdemo.so"])
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let stdout = String::from_utf8(output.stdout).unwrap();
        assert!(
            stdout.ends_with(
                "registered demo 2.0 : 4 new site tables, 0 source files, 1 waiting crashes symbolized\n"
            ),
            "{stdout}"
        );

        let run = collector.get_json(&format!("/api/v1/runs/{first}")).await;
        assert_eq!(run["symbolized"], json!(true));
        assert_eq!(
            own_frames(&run),
            frames(&[("lib_store", "lib.c", 3), ("main", "main.c", 10)])
        );
        let top = &run["backtrace"][0];
        assert!(
            top["module"].as_str().unwrap().ends_with("/libdemo.so"),
            "{top}"
        );
        assert_eq!(run["counters"][0]["resolved"], json!(true));

        let second = upload(&collector, &in_library_again).await;
        // The crash in the program comes with a trace of its last sampled
        // events (hand-written: the runtime's side is to come), on the
        // unit's `branches` table.
        let unit = in_program[0]
            .1
            .split("<samples unit=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap()
            .to_owned();
        let trace = format!(
            "version\t1\nclock\tCLOCK_MONOTONIC\t1000000000\ntable\t0\t{unit}\tbranches\n\
             thread\t77\tcrashing\t2\t10\t5000\n0\t0\t1\t0\t0\n0\t0\t0\t3\t1500\n\
             thread\t78\tlive\t1\t11\t6000\n0\t0\t1\t0\t0\n"
        );
        let mut traced = in_program.clone();
        traced.push(("trace".to_owned(), trace.clone()));
        let third = upload(&collector, &traced).await;
        let run = collector.get_json(&format!("/api/v1/runs/{third}")).await;
        let threads = run["trace"]["threads"].as_array().unwrap();
        assert_eq!(threads.len(), 2);
        assert_eq!(threads[0]["thread"], json!(77));
        assert_eq!(threads[0]["state"], json!("crashing"));
        let events: Vec<(u64, f64, String, u64, String)> = threads
            .iter()
            .flat_map(|thread| thread["events"].as_array().unwrap())
            .map(|event| {
                (
                    event["sequence"].as_u64().unwrap(),
                    event["seconds_before_last"].as_f64().unwrap(),
                    event["file"]
                        .as_str()
                        .unwrap()
                        .rsplit('/')
                        .next()
                        .unwrap()
                        .to_owned(),
                    event["line"].as_u64().unwrap(),
                    event["predicate"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        assert_eq!(
            events,
            [
                (10, 1.5e-6, "main.c".to_owned(), 9, "argc > 1".to_owned()),
                (13, 0.0, "main.c".to_owned(), 9, "!(argc > 1)".to_owned()),
                (11, 5e-7, "main.c".to_owned(), 9, "argc > 1".to_owned()),
            ]
        );
        // A damaged trace is refused by line.
        let mut damaged = in_program.clone();
        damaged.push(("trace".to_owned(), trace.replace("\t1500\n", "\tsoon\n")));
        let named: Vec<(&str, &[u8])> = damaged
            .iter()
            .map(|(name, text)| (name.as_str(), text.as_bytes()))
            .collect();
        let response = collector
            .send(
                &OriginalUpload::new(&named),
                &[("Sampler-Application-Version", "2.0".to_owned())],
            )
            .await;
        assert_eq!(response.status(), 400);
        let message = response.text().await.unwrap();
        assert!(message.starts_with("part `trace`: line 6"), "{message}");
        let run = collector.get_json(&format!("/api/v1/runs/{third}")).await;
        assert_eq!(
            own_frames(&run),
            frames(&[("crash_here", "main.c", 5), ("main", "main.c", 12)])
        );
        assert!(
            run["backtrace"][0]["module"]
                .as_str()
                .unwrap()
                .ends_with("/demo")
        );

        let groups = collector.get_json("/api/v1/crash-groups?app=demo").await;
        assert_eq!(groups["awaiting_symbols"], json!(0));
        let groups = groups["crash_groups"].as_array().unwrap();
        assert_eq!(groups.len(), 2, "{groups:?}");
        assert_eq!(groups[0]["runs"], json!(2));
        assert_eq!(groups[0]["example_runs"], json!([second, first]));
        assert_eq!(
            groups[0]["builds"],
            json!([{"version": "2.0", "release": "", "runs": 2}])
        );
        assert_eq!(groups[1]["runs"], json!(1));
        assert_eq!(groups[1]["example_runs"], json!([third]));
        let lib_signature = groups[0]["signature"].as_str().unwrap();
        assert!(
            lib_signature.starts_with("lib_store | main"),
            "{lib_signature}"
        );
        let exe_signature = groups[1]["signature"].as_str().unwrap();
        assert!(
            exe_signature.starts_with("crash_here | main"),
            "{exe_signature}"
        );
        let id = groups[1]["id"].as_i64().unwrap();
        let group = collector
            .get_json(&format!("/api/v1/crash-groups/{id}"))
            .await;
        assert_eq!(group["frames"][0]["function"], json!("crash_here"));
        let listed = collector
            .get_json(&format!("/api/v1/runs?crash_group={id}"))
            .await;
        assert_eq!(listed["runs"].as_array().unwrap().len(), 1);
        assert_eq!(listed["runs"][0]["id"], json!(third));
        // The group's page shows the trace next to the frames.
        let page = collector
            .get_text(&format!("/dashboard/crash-groups/{id}"))
            .await;
        assert!(
            page.contains("Last sampled events before the crash"),
            "{page}"
        );
        assert!(
            page.contains(&format!("Run <code>{third}</code>")),
            "{page}"
        );
        assert_eq!(page.matches("<tr class=\"event\">").count(), 3);
        assert!(page.contains("<code>!(argc &#62; 1)</code>"), "{page}");
        assert!(page.contains("-1.5 µs"), "{page}");
    }
}
