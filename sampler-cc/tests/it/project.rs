//! The multi-file project of `tests/project` built with make.

use super::*;

/// Copies `tests/project` into a new lab and builds it with `make` and
/// sampler-cc, with `flags` in CFLAGS.
fn build_project(flags: &[&str]) -> (Lab, Output) {
    let lab = Lab::new();
    let project = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/project");
    for entry in std::fs::read_dir(project).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), lab.path(entry.file_name().to_str().unwrap())).unwrap();
    }
    let cflags = format!("-g -O2 -Wall -Wextra {}", flags.join(" "));
    let output = lab
        .command("make")
        .arg(format!("CC={}", sampler_cc()))
        .arg(format!("CFLAGS={cflags}"))
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "make failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    (lab, output)
}

const EXPECTED_OUTPUT: &str = "positive 10\nnegative 0\nzero 0\npositive 20\n";

#[test]
fn site_tables_and_counters_of_a_make_build() {
    let (lab, build) = build_project(&[&ALL_SCHEMES[..], &["-fno-sample"]].concat());
    assert_eq!(
        diagnostics(&build.stderr),
        Vec::<String>::new(),
        "no warnings expected"
    );

    assert_eq!(
        lab.site_table("prog"),
        lines(&[
            "<sites unit=\"UNIT\" scheme=\"branches\">",
            "LAB/main.c\t7\tmain\t1\ti < argc",
            "</sites>",
            "<sites unit=\"UNIT\" scheme=\"function-entries\">",
            "LAB/main.c\t5\tmain\t0",
            "</sites>",
            "<sites unit=\"UNIT\" scheme=\"returns\">",
            "LAB/main.c\t8\tmain\t3\tclamp",
            "LAB/main.c\t8\tmain\t3\tatoi",
            "LAB/main.c\t9\tmain\t4\tprintf",
            "LAB/main.c\t9\tmain\t4\tsign_name",
            "LAB/main.c\t9\tmain\t4\tarea",
            "</sites>",
            "<sites unit=\"UNIT\" scheme=\"branches\">",
            "LAB/util.c\t5\tclamp\t1\tvalue < low",
            "LAB/util.c\t7\tclamp\t3\tvalue > high",
            "LAB/util.c\t14\tsign_name\t1\tvalue < 0",
            "LAB/util.c\t14\tsign_name\t1\tvalue == 0",
            "</sites>",
            "<sites unit=\"UNIT\" scheme=\"function-entries\">",
            "LAB/util.c\t3\tclamp\t0",
            "LAB/util.c\t12\tsign_name\t0",
            "</sites>",
            "<sites unit=\"UNIT\" scheme=\"returns\">",
            "</sites>",
        ])
    );
    assert_eq!(
        lab.site_table("libshape.so"),
        lines(&[
            "<sites unit=\"UNIT\" scheme=\"branches\">",
            "LAB/shape.c\t5\tarea\t1\twidth <= 0",
            "LAB/shape.c\t5\tarea\t1\theight <= 0",
            "</sites>",
            "<sites unit=\"UNIT\" scheme=\"function-entries\">",
            "LAB/shape.c\t3\tarea\t0",
            "</sites>",
            "<sites unit=\"UNIT\" scheme=\"returns\">",
            "</sites>",
        ])
    );

    // Inputs 5, -20, 0, 30: clamped to 5, -10, 0, 10.
    assert_eq!(
        lab.run("prog", &["5", "-20", "0", "30"], "report", &[]),
        EXPECTED_OUTPUT
    );
    let mut resolved: Vec<String> = lab
        .resolve("report", &["prog", "libshape.so"])
        .lines()
        .map(str::to_owned)
        .collect();
    resolved.sort();
    assert_eq!(
        resolved,
        [
            "libshape.so\tUNIT\tbranches\tLAB/shape.c\t5\tarea\t1\theight <= 0\t2\t0",
            "libshape.so\tUNIT\tbranches\tLAB/shape.c\t5\tarea\t1\twidth <= 0\t2\t2",
            "libshape.so\tUNIT\tfunction-entries\tLAB/shape.c\t3\tarea\t0\t4",
            "prog\tUNIT\tbranches\tLAB/main.c\t7\tmain\t1\ti < argc\t1\t4",
            "prog\tUNIT\tbranches\tLAB/util.c\t14\tsign_name\t1\tvalue < 0\t3\t1",
            "prog\tUNIT\tbranches\tLAB/util.c\t14\tsign_name\t1\tvalue == 0\t2\t1",
            "prog\tUNIT\tbranches\tLAB/util.c\t5\tclamp\t1\tvalue < low\t3\t1",
            "prog\tUNIT\tbranches\tLAB/util.c\t7\tclamp\t3\tvalue > high\t2\t1",
            "prog\tUNIT\tfunction-entries\tLAB/main.c\t5\tmain\t0\t1",
            "prog\tUNIT\tfunction-entries\tLAB/util.c\t12\tsign_name\t0\t4",
            "prog\tUNIT\tfunction-entries\tLAB/util.c\t3\tclamp\t0\t4",
            "prog\tUNIT\treturns\tLAB/main.c\t8\tmain\t3\tatoi\t1\t1\t2",
            "prog\tUNIT\treturns\tLAB/main.c\t8\tmain\t3\tclamp\t1\t1\t2",
            "prog\tUNIT\treturns\tLAB/main.c\t9\tmain\t4\tarea\t0\t2\t2",
            "prog\tUNIT\treturns\tLAB/main.c\t9\tmain\t4\tprintf\t0\t0\t4",
            "prog\tUNIT\treturns\tLAB/main.c\t9\tmain\t4\tsign_name\t0\t0\t4",
        ]
    );

    // strip removes the tables with the rest of the debug sections.
    let strip = lab
        .command("strip")
        .args(["prog", "-o", "prog.stripped"])
        .status()
        .unwrap();
    assert!(strip.success());
    let missing = lab
        .tool("extract-section")
        .args(["--require", ".debug_site_info", "prog.stripped"])
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(1), "{missing:?}");
    assert_eq!(
        lab.run("prog.stripped", &["7"], "stripped-report", &[]),
        "positive 14\n"
    );
}

/// Sampled builds (the default) count an event only when the countdown
/// fires: every event at sparsity 1, none without a sparsity.
#[test]
fn sampled_build_at_sparsity_one_counts_every_event() {
    let (lab, _) = build_project(&ALL_SCHEMES);
    assert_eq!(
        lab.run(
            "prog",
            &["5", "-20", "0", "30"],
            "all",
            &[("SAMPLER_SPARSITY", "1")]
        ),
        EXPECTED_OUTPUT
    );
    let all = lab.resolve("all", &["prog", "libshape.so"]);
    assert!(
        all.contains("branches\tLAB/util.c\t5\tclamp\t1\tvalue < low\t3\t1\n"),
        "{all}"
    );
    assert!(
        all.contains("returns\tLAB/main.c\t9\tmain\t4\tarea\t0\t2\t2\n"),
        "{all}"
    );
    assert!(
        all.contains("function-entries\tLAB/shape.c\t3\tarea\t0\t4\n"),
        "{all}"
    );

    lab.run("prog", &["5", "-20", "0", "30"], "none", &[]);
    let none = lab.resolve("none", &["prog", "libshape.so"]);
    assert_eq!(none.lines().count(), 16);
    for line in none.lines() {
        let counters: Vec<&str> = line.split('\t').skip(8).collect();
        assert!(counters.iter().all(|&c| c == "0"), "{line}");
    }
}

/// Counters stay exact when threads bump them at once (`-pthread` makes
/// `-fno-sample`'s increments atomic; sampled ones are once a thread
/// exists).
#[test]
fn threads_count_exactly() {
    let lab = Lab::new();
    lab.write(
        "threads.c",
        r#"#include <pthread.h>
#include <stdio.h>
static long odd;
static int go;
static void *work(void *arg)
{
    (void)arg;
    /* All threads start together, so that they do run at once. */
    while (!__atomic_load_n(&go, __ATOMIC_ACQUIRE))
        ;
    for (long i = 0; i < 200000; i++)
        if (i % 2)
            __atomic_fetch_add(&odd, 1, __ATOMIC_RELAXED);
    return NULL;
}
int main(void)
{
    pthread_t threads[4];
    for (int t = 0; t < 4; t++)
        pthread_create(&threads[t], NULL, work, NULL);
    __atomic_store_n(&go, 1, __ATOMIC_RELEASE);
    for (int t = 0; t < 4; t++)
        pthread_join(threads[t], NULL);
    printf("%ld\n", odd);
    return 0;
}
"#,
    );
    // `-fno-sample` counts every event, atomically with `-pthread`.
    // Sampled, built without `-pthread` (glibc needs none): every event
    // observed at sparsity 1, the increments atomic because the process
    // has threads by then (a plain `++` loses some of these 2.4 million).
    let no_env: &[(&str, &str)] = &[];
    for (build, flags, env) in [
        ("threads", &["-fno-sample", "-pthread"][..], no_env),
        ("sampled", &[], &[("SAMPLER_SPARSITY", "1")]),
    ] {
        let common = ["-fsampler-strict", "-fsampler-scheme=branches", "-O2"];
        lab.cc(&[&common[..], flags, &["threads.c", "-o", build]].concat());
        let report = format!("{build}-report");
        assert_eq!(lab.run(build, &[], &report, env), "400000\n", "{build}");
        let resolved = lab.resolve(&report, &[build]);
        assert!(
            resolved.contains("\twork\t4\ti < 200000\t4\t800000\n"),
            "{build}: {resolved}"
        );
        assert!(
            resolved.contains("\twork\t5\ti % 2\t400000\t400000\n"),
            "{build}: {resolved}"
        );
    }
}
