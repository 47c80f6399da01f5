//! The flight recorder through sampler-cc: a sampled build hands every
//! observation to `cbi_traceObserve`, so a crash's `trace` subreport holds
//! each thread's last `SAMPLER_TRACE` observations of the user's own sites.

use std::collections::BTreeMap;
use std::os::unix::process::ExitStatusExt;

use super::*;

/// A worker observes a known sequence of branches and stays alive; the
/// main thread observes one branch before it and four after, then crashes.
const PROGRAM: &str = r#"#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

static sem_t ready;

static int odd(int i) { return i & 1; }

static void *worker(void *argument)
{
    int n = *(int *)argument, odds = 0;
    printf("worker %ld\n", (long)syscall(SYS_gettid));
    fflush(stdout);
    for (int i = 0; i < n; i++)
        if (odd(i))
            odds++;
    sem_post(&ready);
    for (;;)
        pause();
    return NULL;
}

int main(int argc, char **argv)
{
    pthread_t thread;
    int n = 3;
    (void)argv;
    printf("main %ld\n", (long)syscall(SYS_gettid));
    fflush(stdout);
    if (argc > 1)
        n = 4;
    sem_init(&ready, 0, 0);
    pthread_create(&thread, NULL, worker, &n);
    sem_wait(&ready);
    for (int j = 0; j < 2; j++)
        n += j;
    if (argc < 2)
        raise(SIGSEGV);
    return 0;
}
"#;

/// Runs `program` of `lab` at sparsity 1, keeping `records` observations a
/// thread (`SAMPLER_TRACE`), until it crashes (SIGSEGV); returns its
/// standard output and `resolve-trace`'s reading of its report.
fn crash_traced(lab: &Lab, program: &str, records: &str) -> (String, String) {
    lab.crash_resolved(
        program,
        &[],
        &[("SAMPLER_SPARSITY", "1"), ("SAMPLER_TRACE", records)],
        &format!("{program}.report"),
        "resolve-trace",
    )
}

#[test]
fn a_sampled_build_traces_the_last_observations_of_every_thread() {
    let lab = Lab::new();
    lab.write("threads.c", PROGRAM);
    // The observations of one sampled event share its sequence number: per
    // region execution (a loop iteration of the worker) by default, per
    // site with -fsample-sites. `main`'s `argc` tests are one run around
    // its loop (-fsample-nested-runs): the second, observed after the
    // loop's events, carries the latest one's number, as numbers give the
    // order of observations; with -fno-sample-nested-runs it is an event
    // of its own.
    for (form, flags, sequences) in [
        ("regions", &[][..], [0, 2, 2, 3, 3, 4, 5, 6, 7, 7]),
        (
            "linear",
            &["-fno-sample-nested-runs"][..],
            [0, 2, 2, 3, 3, 4, 5, 6, 7, 8],
        ),
        (
            "sites",
            &["-fsample-sites"][..],
            [0, 3, 4, 5, 6, 7, 8, 9, 10, 11],
        ),
    ] {
        let program = format!("threads-{form}");
        let mut args = vec![
            "-fsampler-strict",
            "-fsampler-scheme=branches",
            "-O2",
            "-pthread",
            "threads.c",
            "-o",
            &program,
        ];
        args.extend_from_slice(flags);
        lab.cc(&args);
        let (stdout, resolved) = crash_traced(&lab, &program, "5");
        let tids: BTreeMap<String, String> = stdout
            .lines()
            .map(|line| {
                let (who, tid) = line.split_once(' ').unwrap();
                (tid.to_owned(), who.to_owned())
            })
            .collect();
        // Threads by name, times left out: they differ from run to run.
        let records: Vec<String> = resolved
            .lines()
            .map(|line| {
                let fields: Vec<&str> = line.split('\t').collect();
                let (tid, crashing) = match fields[0].strip_suffix('*') {
                    Some(tid) => (tid, "*"),
                    None => (fields[0], ""),
                };
                let who = tids.get(tid).map_or(tid, String::as_str);
                let location = fields[3].replace(&lab.root(), "LAB");
                format!(
                    "{who}{crashing}\t{}\t{location}\t{}\t{}",
                    fields[1], fields[4], fields[5]
                )
            })
            .collect();
        let events = [
            ("main*", 33, "main", "!(argc > 1)"),
            ("worker", 17, "worker", "i < n"),
            ("worker", 18, "worker", "odd(i)"),
            ("worker", 17, "worker", "i < n"),
            ("worker", 18, "worker", "!(odd(i))"),
            ("worker", 17, "worker", "!(i < n)"),
            ("main*", 38, "main", "j < 2"),
            ("main*", 38, "main", "j < 2"),
            ("main*", 38, "main", "!(j < 2)"),
            ("main*", 40, "main", "argc < 2"),
        ];
        let mut wanted = vec!["thread\tsequence\tlocation\tfunction\tpredicate".to_owned()];
        wanted.extend(events.iter().zip(sequences).map(
            |((thread, line, function, predicate), sequence)| {
                format!("{thread}\t{sequence}\tLAB/threads.c:{line}\t{function}\t{predicate}")
            },
        ));
        assert_eq!(records, wanted, "{program}");
    }
}

#[test]
fn without_sampling_nothing_is_traced() {
    // -fno-sample counts every event and never calls the recorder: asked
    // for, the crash report's trace has the crashing thread and no record.
    let lab = Lab::new();
    lab.write("threads.c", PROGRAM);
    lab.cc(&[
        "-fsampler-strict",
        "-fsampler-scheme=branches",
        "-fno-sample",
        "-pthread",
        "threads.c",
        "-o",
        "threads",
    ]);
    let output = lab
        .command(lab.path("threads"))
        .env("SAMPLER_FILE", lab.path("threads.report"))
        .env("SAMPLER_TRACE", "5")
        .output()
        .unwrap();
    assert_eq!(output.status.signal(), Some(11));
    let report = std::fs::read_to_string(lab.path("threads.report")).unwrap();
    let trace = report.split_once("<report id=\"trace\">\n").unwrap().1;
    // The clock line depends on the processor (tested in the runtime).
    let (head, rest) = trace.split_once("\nclock\t").unwrap();
    let trace = format!("{head}\n{}", rest.split_once('\n').unwrap().1);
    let tid = String::from_utf8(output.stdout).unwrap();
    let tid = tid.lines().find_map(|l| l.strip_prefix("main ")).unwrap();
    assert_eq!(
        lab.stable(&trace),
        format!(
            "version\t1\ntable\t0\tUNIT\tbranches\n\
             thread\t{tid}\tcrashing\t0\t0\t0\n</report>\n"
        )
    );
}

/// Three schemes, one of three counters a site and one of bounds rows:
/// the count helper (`P_count_slowly`) and the bounds sites pass the
/// address of the value they updated, from which the runtime finds each
/// traced observation's table, site and slot, and with tracing on every
/// observation takes that path, one thread or not (`cbi_plainCounts`).
#[test]
fn traced_observations_name_their_site_and_slot_in_every_scheme() {
    let lab = Lab::new();
    lab.write(
        "pairs.c",
        r#"#include <signal.h>

int main(int argc, char **argv)
{
    int small = argc - 1;
    int large = argc + 1;
    (void)argv;
    if (large > small)
        small = large + 1;
    raise(SIGSEGV);
    return small;
}
"#,
    );
    lab.cc(&[
        "-fsampler-strict",
        "-fsampler-scheme=branches",
        "-fsampler-scheme=scalar-pairs",
        "-fsampler-scheme=bounds",
        "-O2",
        "pairs.c",
        "-o",
        "pairs",
    ]);
    let (_, resolved) = crash_traced(&lab, "pairs", "64");
    // Sequence, line, function and predicate of each record.
    let records: Vec<String> = resolved
        .lines()
        .skip(1)
        .map(|line| {
            let fields: Vec<&str> = line.split('\t').collect();
            let line = fields[3].rsplit_once(':').unwrap().1;
            format!("{}\t{line}\t{}\t{}", fields[1], fields[4], fields[5])
        })
        .collect();
    // `main` is one run: one event, every observation numbered 0. With
    // argc 1: small = 0, large = 2, then small = 3.
    assert_eq!(
        records,
        [
            "0\t5\tmain\tsmall < argc",
            "0\t5\tmain\tsmall == 0LL",
            "0\t5\tmain\tsmall assigned",
            "0\t6\tmain\tlarge > argc",
            "0\t6\tmain\tlarge > small",
            "0\t6\tmain\tlarge > 0LL",
            "0\t6\tmain\tlarge assigned",
            "0\t8\tmain\tlarge > small",
            "0\t9\tmain\tsmall > argc",
            "0\t9\tmain\tsmall > small",
            "0\t9\tmain\tsmall > large",
            "0\t9\tmain\tsmall > 0LL",
            "0\t9\tmain\tsmall assigned",
        ]
    );
}
