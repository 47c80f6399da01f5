//! An instrumented executable with an instrumented shared library and an
//! instrumented plugin loaded with `dlopen`, unloaded and loaded again,
//! with threads running sites in all three (issue 17, item 3): one report
//! holds every unit, the plugin's sections twice (its unload writes them,
//! schema/report-format.md), and `resolve-samples` and the analysis merge
//! them.

use std::collections::HashMap;

use super::*;

const MAIN: &str = r#"#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

int shared_work(int round, int bad);

static int (*plugin_work)(int, int);
static int load;
static int bad;

static int main_work(int round)
{
    if (round % 2 == 0)
        return 1;
    return 0;
}

static void *thread(void *arg)
{
    long total = 0;
    (void)arg;
    for (int round = 0; round < 5; round++)
        total += main_work(round) + shared_work(round, bad) + plugin_work(load, bad);
    return (void *)total;
}

int main(int argc, char **argv)
{
    long total = 0;
    (void)argv;
    bad = argc - 1;
    for (load = 1; load <= 2; load++) {
        void *handle = dlopen("./plugin.so", RTLD_NOW);
        if (!handle) {
            fprintf(stderr, "%s\n", dlerror());
            return 2;
        }
        plugin_work = (int (*)(int, int))dlsym(handle, "plugin_work");
        pthread_t threads[3];
        for (int i = 0; i < 3; i++)
            pthread_create(&threads[i], 0, thread, 0);
        for (int i = 0; i < 3; i++) {
            void *result;
            pthread_join(threads[i], &result);
            total += (long)result;
        }
        if (load == 1)
            dlclose(handle);
    }
    printf("%ld\n", total);
    return bad;
}
"#;

const SHARED: &str = r#"int shared_work(int round, int bad)
{
    if (bad && round == 0)
        return 2;
    return 0;
}
"#;

/// `bad` on line 4 is evaluated only while the plugin is loaded the first
/// time, `bad` on line 6 only the second time.
const PLUGIN: &str = r#"int plugin_work(int load, int bad)
{
    if (load == 1) {
        if (bad)
            return 10;
    } else if (bad) {
        return 20;
    }
    return 0;
}
"#;

/// `sampler-analyze`, built once (its crate is not a dependency).
fn analyze() -> PathBuf {
    static TOOLS: OnceLock<sampler_testkit::Tools> = OnceLock::new();
    TOOLS
        .get_or_init(|| sampler_testkit::Tools::build(&["sampler-analysis"]))
        .bin
        .join("sampler-analyze")
}

/// Builds the three binaries (sampled, every site's event a thread's
/// countdown event) in `lab`.
fn build(lab: &Lab) {
    lab.write("main.c", MAIN);
    lab.write("shared.c", SHARED);
    lab.write("plugin.c", PLUGIN);
    let flags = [
        "-fsampler-strict",
        "-fsampler-scheme=branches",
        "-pthread",
        "-O1",
    ];
    let library = |source: &str, output: &str| {
        let mut args = flags.to_vec();
        args.extend(["-fPIC", "-shared", source, "-o", output]);
        lab.cc(&args);
    };
    library("shared.c", "libshared.so");
    library("plugin.c", "plugin.so");
    let rpath = format!("-Wl,-rpath,{}", lab.root());
    let mut args = flags.to_vec();
    args.extend(["main.c", "-L.", "-lshared", &rpath, "-ldl", "-o", "prog"]);
    lab.cc(&args);
}

/// Runs `prog` (failing with exit status 1 when `bad`) at sparsity 1, so
/// that every event is counted; returns its stdout, exit status and report.
fn run(lab: &Lab, bad: bool) -> (String, i32, String) {
    let report = lab.path("report");
    let output = lab
        .command(lab.path("prog"))
        .args(if bad { &["bad"][..] } else { &[] })
        .env("SAMPLER_FILE", &report)
        .env("SAMPLER_SPARSITY", "1")
        .output()
        .unwrap();
    assert!(output.status.code().is_some(), "{output:?}");
    let text = std::fs::read_to_string(&report).unwrap();
    std::fs::remove_file(&report).unwrap();
    (
        String::from_utf8(output.stdout).unwrap(),
        output.status.code().unwrap(),
        text,
    )
}

/// The unit signature of each binary's one unit, to name them in reports.
fn unit_names(lab: &Lab, binaries: &[&str]) -> HashMap<String, String> {
    let mut names = HashMap::new();
    for binary in binaries {
        let output = lab
            .tool("extract-section")
            .args([".debug_site_info", binary])
            .output()
            .unwrap();
        assert!(output.status.success(), "{output:?}");
        let text = String::from_utf8(output.stdout).unwrap();
        let units: Vec<&str> = text
            .lines()
            .filter_map(|line| line.strip_prefix("<sites unit=\""))
            .map(|rest| &rest[..32])
            .collect();
        assert_eq!(units.len(), 1, "{binary}: {text}");
        names.insert(units[0].to_owned(), (*binary).to_owned());
    }
    names
}

/// Instrumented shared objects reach the countdown as the runtime defines
/// it, initial-exec: a load at a fixed offset from the thread pointer (a
/// `TPOFF64` relocation), not a call to `__tls_get_addr` per access, which
/// `-fPIC`'s default model would make.
#[test]
fn shared_objects_reach_the_countdown_without_tls_get_addr() {
    let lab = Lab::new();
    build(&lab);
    for binary in ["libshared.so", "plugin.so"] {
        let output = lab
            .command("readelf")
            .args(["-W", "--dyn-syms", "--relocs", binary])
            .output()
            .unwrap();
        assert!(output.status.success(), "{output:?}");
        let text = String::from_utf8(output.stdout).unwrap();
        assert!(!text.contains("__tls_get_addr"), "{binary}: {text}");
        assert!(
            text.lines()
                .any(|line| line.contains("R_X86_64_TPOFF64") && line.contains("cbi_countdown")),
            "{binary}: {text}"
        );
    }
}

#[test]
fn plugin_reloaded_under_threads_is_reported_and_merged() {
    let lab = Lab::new();
    build(&lab);
    let binaries = ["prog", "libshared.so", "plugin.so"];
    let names = unit_names(&lab, &binaries);

    // Three threads per load, five rounds each: per thread and load,
    // main_work gives 3, shared_work 2 (bad), plugin_work 5 * 10 on the
    // first load and 5 * 20 on the second: 3 * (55 + 105).
    let (stdout, status, report) = run(&lab, true);
    assert_eq!((stdout.as_str(), status), ("480\n", 1));
    let mut named = report.clone();
    for (unit, name) in &names {
        named = named.replace(unit.as_str(), name);
    }
    // The plugin's unload writes its sections, reset afterwards; at exit
    // each unit's destructor writes its own, and the final block has none
    // left. The plugin's first section has the first load's `bad`, its
    // second the second's.
    assert_eq!(
        named,
        lines(&[
            "<report id=\"samples\">",
            "<samples unit=\"plugin.so\" scheme=\"branches\">",
            "0\t15",
            "0\t15",
            "0\t0",
            "</samples>",
            "</report>",
            "<report id=\"samples\">",
            "<samples unit=\"prog\" scheme=\"branches\">",
            "12\t18",
            "6\t30",
            "1\t2",
            "2\t0",
            "2\t6",
            "2\t6",
            "1\t1",
            "</samples>",
            "</report>",
            "<report id=\"samples\">",
            "<samples unit=\"libshared.so\" scheme=\"branches\">",
            "0\t30",
            "24\t6",
            "</samples>",
            "</report>",
            "<report id=\"samples\">",
            "<samples unit=\"plugin.so\" scheme=\"branches\">",
            "15\t0",
            "0\t0",
            "0\t15",
            "</samples>",
            "</report>",
            "<report id=\"samples\">",
            "</report>",
        ])
    );

    std::fs::write(lab.path("report"), &report).unwrap();
    let merged: Vec<String> = lab
        .resolve("report", &binaries)
        .lines()
        .map(|line| line.split('\t').skip(2).collect::<Vec<_>>().join(" | "))
        .collect();
    assert_eq!(
        merged,
        [
            "branches | LAB/plugin.c | 3 | plugin_work | 1 | load == 1 | 15 | 15",
            "branches | LAB/plugin.c | 4 | plugin_work | 3 | bad | 0 | 15",
            "branches | LAB/plugin.c | 6 | plugin_work | 5 | bad | 0 | 15",
            "branches | LAB/main.c | 13 | main_work | 1 | round % 2 == 0 | 12 | 18",
            "branches | LAB/main.c | 22 | thread | 3 | round < 5 | 6 | 30",
            "branches | LAB/main.c | 32 | main | 4 | load <= 2 | 1 | 2",
            "branches | LAB/main.c | 34 | main | 7 | !handle | 2 | 0",
            "branches | LAB/main.c | 40 | main | 13 | i < 3 | 2 | 6",
            "branches | LAB/main.c | 42 | main | 15 | i < 3 | 2 | 6",
            "branches | LAB/main.c | 47 | main | 20 | load == 1 | 1 | 1",
            "branches | LAB/shared.c | 3 | shared_work | 1 | bad | 0 | 30",
            "branches | LAB/shared.c | 3 | shared_work | 1 | round == 0 | 24 | 6",
        ]
    );

    // Twenty runs as `sampler-run --save` files (report, then outcome),
    // every other one bad (exit status 1). Each `bad` site holds in the
    // ten failing runs and is observed in all twenty; the plugin's two are
    // each in one of its sections only, so the analysis sees both only if
    // it reads every section of the plugin.
    let runs = lab.path("runs");
    std::fs::create_dir(&runs).unwrap();
    for index in 0..20 {
        let bad = index % 2 == 1;
        let (stdout, status, report) = run(&lab, bad);
        assert_eq!(
            (stdout.as_str(), status),
            if bad { ("480\n", 1) } else { ("18\n", 0) }
        );
        let outcome = format!(
            "<report id=\"outcome\">\nreport-id\t0190a4c2-7b1e-7cc0-8d1e-{index:012}\n\
             application-name\tprog\nsparsity\t1\nexit-status\t{status}\nexit-signal\t0\n\
             </report>\n"
        );
        std::fs::write(
            runs.join(format!("run-{index:02}.report")),
            report + &outcome,
        )
        .unwrap();
    }
    let output = lab
        .command(analyze())
        .args(["--runs", "runs", "--fail-on-exit", "--format", "csv"])
        .args(binaries)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let csv = String::from_utf8(output.stdout).unwrap();
    let columns = csv.lines().next().unwrap().split(',');
    let column = |name: &str| columns.clone().position(|c| c == name).unwrap();
    let wanted = [
        "file",
        "line",
        "function",
        "scheme",
        "predicate",
        "f",
        "s",
        "f_observed",
        "s_observed",
    ]
    .map(column);
    let mut ranked: Vec<String> = csv
        .lines()
        .skip(1)
        .map(|line| {
            let fields: Vec<&str> = line.split(',').collect();
            wanted.map(|i| fields[i]).join(" | ")
        })
        .map(|line| lab.stable(&line))
        .collect();
    ranked.sort();
    assert_eq!(
        ranked,
        [
            "LAB/plugin.c | 4 | plugin_work | branches | bad | 10 | 0 | 10 | 10",
            "LAB/plugin.c | 6 | plugin_work | branches | bad | 10 | 0 | 10 | 10",
            "LAB/shared.c | 3 | shared_work | branches | bad | 10 | 0 | 10 | 10",
        ],
        "{csv}"
    );
}

/// An executable whose sites reach the countdown at a constant offset from
/// the thread pointer (local-exec), with an instrumented shared library
/// and a plugin that reach it through the GOT (initial-exec).
const TLS_MAIN: &str = r#"#include <dlfcn.h>
#include <stdio.h>

int *exe_countdown(void);
int *shared_countdown(void);
int shared_step(int i);

int main(int argc, char **argv)
{
    void *plugin = dlopen("./tlsplugin.so", RTLD_NOW);
    if (!plugin) {
        fprintf(stderr, "%s\n", dlerror());
        return 2;
    }
    int *(*plugin_countdown)(void) = (int *(*)(void))dlsym(plugin, "plugin_countdown");
    long total = 0;
    for (int i = 0; i < 20000; i++)
        total += shared_step(i);
    printf("%d %d %ld\n", shared_countdown() == exe_countdown(),
           plugin_countdown() == exe_countdown(), total);
    (void)argv;
    return argc > 5;
}
"#;

const TLS_SHARED: &str = r#"extern __thread int cbi_countdown;
int *shared_countdown(void)
{
    return &cbi_countdown;
}

int shared_step(int i)
{
    if (i % 3 == 0)
        return 1;
    return 0;
}
"#;

/// The executable's countdown, compiled by gcc: declaring it in the
/// instrumented file would change its model there (gcc takes a unit's last
/// declaration's, initial-exec for a plain `extern` of a weak symbol).
const TLS_ADDRESS: &str = r#"extern __thread int cbi_countdown;
int *exe_countdown(void)
{
    return &cbi_countdown;
}
"#;

/// No site: the plugin names the countdown as the dynamic linker binds it.
const TLS_PLUGIN: &str = r#"extern __thread int cbi_countdown;
int *plugin_countdown(void)
{
    return &cbi_countdown;
}
"#;

/// The executable defines the countdown (options::TlsModel): its own code
/// decrements it at a constant offset from the thread pointer (`TPOFF32`,
/// no GOT), and it exports it, so that the shared runtime, an instrumented
/// shared library and a plugin all use the executable's, one countdown per
/// thread. Also with `-fvisibility=hidden` (the definition keeps default
/// visibility) and `-flto` (where a common thread-local became the
/// executable's own). A second countdown would leave the executable's
/// below zero after its first event, every later event of the executable
/// sampled: the counts at sparsity 100 say it is not.
#[test]
fn executables_hold_the_countdown_their_shared_objects_use() {
    let lab = Lab::new();
    lab.write("main.c", TLS_MAIN);
    lab.write("shared.c", TLS_SHARED);
    lab.write("plugin.c", TLS_PLUGIN);
    lab.write("address.c", TLS_ADDRESS);
    lab.gcc(&["-O2", "-c", "address.c"]);
    let flags = ["-fsampler-strict", "-fsampler-scheme=branches", "-O2"];
    let cc = |args: &[&str]| lab.cc(&[&flags[..], args].concat());
    cc(&["-fPIC", "-shared", "shared.c", "-o", "libtls.so"]);
    cc(&["-fPIC", "-shared", "plugin.c", "-o", "tlsplugin.so"]);
    let rpath = format!("-Wl,-rpath,{}", lab.root());
    let readelf = |args: &[&str]| {
        let output = lab.command("readelf").args(args).output().unwrap();
        assert!(output.status.success(), "{output:?}");
        String::from_utf8(output.stdout).unwrap()
    };
    for extra in [&[][..], &["-fvisibility=hidden"], &["-flto"]] {
        cc(&[extra, &["-c", "main.c", "-o", "main.o"]].concat());
        let relocations: Vec<String> = readelf(&["-W", "--relocs", "main.o"])
            .lines()
            .filter(|line| line.contains("cbi_countdown"))
            .map(|line| line.split_whitespace().nth(2).unwrap().to_owned())
            .collect();
        if extra != ["-flto"] {
            assert!(!relocations.is_empty(), "{extra:?}");
            assert!(
                relocations.iter().all(|kind| kind == "R_X86_64_TPOFF32"),
                "{extra:?}: {relocations:?}"
            );
        }
        let link = [
            "main.o",
            "address.o",
            "-L.",
            "-ltls",
            &rpath,
            "-ldl",
            "-o",
            "prog",
        ];
        cc(&[extra, &link].concat());
        let exported: Vec<String> = readelf(&["-W", "--dyn-syms", "prog"])
            .lines()
            .filter(|line| line.ends_with(" cbi_countdown"))
            .map(|line| {
                line.split_whitespace()
                    .skip(3)
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect();
        // TYPE BIND VISIBILITY SECTION NAME: defined in the executable.
        assert_eq!(exported.len(), 1, "{extra:?}: {exported:?}");
        assert!(
            exported[0].starts_with("TLS ") && !exported[0].contains(" UND "),
            "{extra:?}: {exported:?}"
        );

        let stdout = lab.run(
            "prog",
            &[],
            "report",
            &[("SAMPLER_SPARSITY", "100"), ("SAMPLER_SEED", "7")],
        );
        assert_eq!(stdout, "1 1 6667\n", "{extra:?}");
        let resolved = lab.resolve("report", &["prog", "libtls.so"]);
        let observed = |predicate: &str| -> u64 {
            let line = resolved
                .lines()
                .find(|line| line.split('\t').nth(7) == Some(predicate))
                .unwrap_or_else(|| panic!("{predicate}: {resolved}"));
            line.split('\t')
                .skip(8)
                .map(|n| n.parse::<u64>().unwrap())
                .sum()
        };
        // 20,001 and 20,000 events at 1/100: 200 ± 5σ (σ ≈ 14).
        for predicate in ["i < 20000", "i % 3 == 0"] {
            let count = observed(predicate);
            assert!(
                (130..=270).contains(&count),
                "{extra:?} {predicate}: {count}"
            );
        }
    }

    // A version script that hides the executable's definition leaves it a
    // countdown of its own: the runtime says so once, from the unit's
    // constructor, and the counts show why (the executable's loop test
    // counted at nearly every event, as its countdown is never refilled).
    lab.write("hide.map", "{ local: *; };\n");
    cc(&["-c", "main.c", "-o", "main.o"]);
    let hidden = [
        "-Wl,--version-script=hide.map",
        "main.o",
        "address.o",
        "-L.",
    ];
    cc(&[&hidden[..], &["-ltls", &rpath, "-ldl", "-o", "prog"]].concat());
    let output = lab
        .command(lab.path("prog"))
        .env("SAMPLER_FILE", lab.path("report"))
        .env("SAMPLER_SPARSITY", "100")
        .env("SAMPLER_SEED", "7")
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    assert_eq!(String::from_utf8_lossy(&output.stdout), "0 0 6667\n");
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "sampler: warning: instrumented code in this executable decrements a cbi_countdown of \
         its own, not the runtime's: the link hid the executable's definition (a version script \
         or --exclude-libs), so nearly all its events would be counted; export cbi_countdown \
         (-Wl,--export-dynamic-symbol=cbi_countdown) or compile with \
         -fsampler-tls-model=initial-exec\n"
    );
    let resolved = lab.resolve("report", &["prog", "libtls.so"]);
    let counted: u64 = resolved
        .lines()
        .find(|line| line.split('\t').nth(7) == Some("i < 20000"))
        .unwrap()
        .split('\t')
        .skip(8)
        .map(|n| n.parse::<u64>().unwrap())
        .sum();
    assert!(counted >= 20_000, "{resolved}");
}
