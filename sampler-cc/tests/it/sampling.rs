//! The sampling transform: fast and slow copies of regions change neither
//! what programs do nor the chance of each event to be observed.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::*;

/// C that cloning must copy faithfully: `switch` fall-through, Duff's
/// device, forward and backward `goto`, labels reached from outside a
/// region, `static` locals, VLAs, statement expressions, computed `goto`,
/// `setjmp`/`longjmp`, recursion, callbacks through `qsort`, every loop
/// form with `break` and `continue`, and `return` inside regions.
const TRICKY: &str = r#"#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>

static jmp_buf env;

static int duff(int *to, const int *from, int count)
{
    int n = (count + 3) / 4, sum = 0;
    if (count <= 0)
        return 0;
    switch (count % 4) {
    case 0: do { *to = *from++; sum += *to;
    case 3:      *to = *from++; sum += *to;
    case 2:      *to = *from++; sum += *to;
    case 1:      *to = *from++; sum += *to;
            } while (--n > 0);
    }
    return sum;
}

static int classify(int x)
{
    int r = 0;
    switch (x % 5) {
    case 0: r += 1;
    case 1: r += 2; break;
    case 2: { int t = x * 2; r = t > 10 ? t : -t; } break;
    default: r = x; if (r > 100) break; r++;
    }
    return r;
}

static int gotos(int x)
{
    int acc = 0, i = 0;
    if (x < 0)
        goto negative;
    acc = x * 2;
    if (acc > 50)
        goto done;
    acc += 3;
    if (acc > 40) { acc++; goto skip; }
    acc--;
skip:
    acc += 2;
negative:
    acc -= 1;
again:
    if (i < 3) { acc += i; i++; goto again; }
    if (acc > 30) { int k = acc; back: k -= 9; acc += k > 0; if (k > 20) goto back; }
done:
    return acc;
}

static int counter(int x)
{
    int v = 0;
    if (x > 0) { static int calls; calls++; v = calls % 9 + x; if (v > 5) v -= 2; }
    return v;
}

static int vla(int n)
{
    int a[n];
    int s = 0;
    for (int i = 0; i < n; i++)
        a[i] = i * i;
    for (int i = 0; i < n; i++) {
        if (a[i] % 2)
            s += a[i];
        else
            s -= a[i];
    }
    return s + (int)(sizeof a / sizeof a[0]);
}

static int statement_expressions(int x)
{
    int y = ({ int t = x * 3; if (t > 20) t -= 7; t; });
    int z = ({ int u = 0; for (int k = 0; k < x % 5; k++) u += k; u; });
    return y + z;
}

static int computed(int x)
{
    static void *targets[] = { &&even, &&odd };
    int r = x;
    goto *targets[x & 1];
even:
    r += 10;
    if (r > 15) r--;
    return r;
odd:
    r -= 10;
    if (r < 0) r = -r;
    return r;
}

static int jumped(int x)
{
    volatile int r = x;
    if (setjmp(env) == 0) {
        if (x % 7 == 0)
            longjmp(env, 1);
        r += 1;
    } else {
        r -= 1;
    }
    return r;
}

static int recurse(int n)
{
    if (n <= 1)
        return 1;
    int a = n % 3;
    if (a == 0)
        return recurse(n - 1) + 1;
    return recurse(n - 2) + a;
}

static int compare(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

static int loops(int n)
{
    int s = 0, i = 0, j;
    while (i < n) {
        if (i & 1) {
            i++;
            continue;
        }
        s += i;
        i++;
    }
    do {
        s--;
        j = s & 3;
        if (j == 2)
            continue;
        s -= j;
    } while (s > n);
    for (;;) {
        s++;
        if (s % 11 == 0)
            break;
    }
    for (i = 0, j = n; i < j; i++, j--)
        s += j - i;
    do { s ^= 1; if (s > 1000) break; } while (0);
    for (i = 0; i < n; i++)
        switch (i % 3) {
        case 0: continue;
        case 1: s += 2; break;
        default: if (s > 500) return s;
        }
    return s;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 3000;
    int buffer[64], source[64], sorted[32];
    long sum = 0;
    for (int i = 0; i < 64; i++)
        source[i] = i * 7 % 13;
    for (int r = 0; r < rounds; r++) {
        sum += duff(buffer, source, r % 64);
        sum += classify(r);
        sum += gotos(r % 40 - 5);
        sum += counter(r % 4);
        sum += vla(r % 17 + 1);
        sum += statement_expressions(r);
        sum += computed(r);
        sum += jumped(r);
        sum += recurse(r % 15);
        sum += loops(r % 23);
        for (int i = 0; i < 32; i++)
            sorted[i] = (r * 31 + i * 17) % 101;
        qsort(sorted, 32, sizeof sorted[0], compare);
        sum += sorted[r % 32];
    }
    printf("%ld\n", sum);
    return (int)(sum % 5);
}
"#;

/// The schemes of the overhead targets.
const SCHEMES: [&str; 5] = [
    "-fsampler-strict",
    "-fsampler-scheme=branches",
    "-fsampler-scheme=returns",
    "-fsampler-scheme=scalar-pairs",
    // Locals that may be unset too: their reads must change nothing.
    "-fcompare-uninitialized",
];

/// Runs `program` and returns its stdout and exit status.
fn run_with_status(lab: &Lab, program: &str, report: &str, env: &[(&str, &str)]) -> (String, i32) {
    let output = lab
        .command(lab.path(program))
        .env("SAMPLER_FILE", lab.path(report))
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let status = output.status.code().expect("killed by a signal");
    (String::from_utf8(output.stdout).unwrap(), status)
}

/// `resolve-samples` lines keyed by site (without the binary's name and
/// the unit signature; sites alike are told apart by their rank), with
/// their counters.
fn counters(resolved: &str) -> BTreeMap<String, Vec<u64>> {
    let mut sites = BTreeMap::new();
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for line in resolved.lines() {
        let fields: Vec<&str> = line.split('\t').collect();
        let arity = match fields[2] {
            "branches" => 2,
            _ => 3,
        };
        let (key, values) = fields.split_at(fields.len() - arity);
        let values = values.iter().map(|v| v.parse().unwrap()).collect();
        let key = key[2..].join("\t");
        let rank = seen.entry(key.clone()).or_default();
        *rank += 1;
        sites.insert(format!("{key}\t#{rank}"), values);
    }
    sites
}

/// The builds a sampled form of a program is compared with, `flags`
/// ending in `-o`: plain gcc's (`plain`), whose warnings and output are
/// returned, and sampler-cc's with `schemes` and `-fno-sample` (`exact`),
/// which must keep both, and whose exact counters are returned.
fn reference_builds(
    lab: &Lab,
    flags: &[&str],
    schemes: &[&str],
) -> (Vec<String>, String, BTreeMap<String, Vec<u64>>) {
    let plain = lab.gcc(&[flags, &["plain"]].concat());
    let warnings = diagnostics(&plain.stderr);
    let expected = lab.run("plain", &[], "none", &[]);
    let exact = lab.cc(&[schemes, &["-fno-sample"], flags, &["exact"]].concat());
    assert_eq!(diagnostics(&exact.stderr), warnings);
    assert_eq!(lab.run("exact", &[], "exact.report", &[]), expected);
    let exact = counters(&lab.resolve("exact.report", &["exact"]));
    (warnings, expected, exact)
}

#[test]
fn cloned_regions_keep_the_program_s_behaviour_and_exact_counts() {
    let lab = Lab::new();
    lab.write("tricky.c", TRICKY);
    let plain = lab
        .command("gcc")
        .args(["-O2", "-Wall", "-Wextra", "tricky.c", "-o", "plain"])
        .output()
        .unwrap();
    assert!(plain.status.success(), "{plain:?}");
    let warnings = diagnostics(&plain.stderr);
    assert_eq!(warnings.len(), 4, "{warnings:?}");
    let expected = run_with_status(&lab, "plain", "none", &[]);
    assert_eq!(expected, ("27136781\n".to_owned(), 1));

    let mut args = SCHEMES.to_vec();
    args.extend([
        "-O2",
        "-Wall",
        "-Wextra",
        "-fno-sample",
        "tricky.c",
        "-o",
        "unconditional",
    ]);
    let output = lab.cc(&args);
    assert_eq!(diagnostics(&output.stderr), warnings);
    assert_eq!(
        run_with_status(&lab, "unconditional", "exact", &[]),
        expected
    );
    let exact = counters(&lab.resolve("exact", &["unconditional"]));
    assert_eq!(exact.len(), 370);

    // Per region, `gotos`' backward `goto`s do not keep its runs from
    // being regions (a loop they make is observed whole or not at all in
    // one execution); per site they do.
    let fell_back = "1 case label of an outer switch, 1 computed goto, 1 setjmp, 1 static local";
    let per_site = format!(
        "25 cloned (14 runs, 9 loops, 2 expressions, 221 sites), 9 declaration runs, \
         8 leaf functions, 0 outlined functions, 5 fell back (1 backward goto, {fell_back})"
    );
    // Per region, a function whose sites all lie in one run (two of
    // TRICKY's, six with whole loops) takes its one event per call from the
    // global countdown: it keeps no local from entry to return. Each of
    // them is its whole body, whose SLOW copy is outlined.
    // Per region, an assignment's `scalar-pairs` candidates are one check,
    // so a lone assignment is no region of its own (three runs, an
    // expression and three declaration runs fewer than with a check per
    // candidate).
    let within_calls = format!(
        "20 cloned (10 runs, 9 loops of which 4 counted (4 with the plain loop) and 3 unrolled, \
         1 expressions, 213 sites), 5 declaration runs, 6 leaf functions, 2 outlined functions of which 2 \
         re-entered, 4 fell back \
         ({fell_back})"
    );
    // Runs may hold calls to functions with sites.
    let flat = format!(
        "22 cloned (12 runs of which 2 across calls, 9 loops of which 4 counted (4 with the plain loop) and \
         3 unrolled, 1 expressions, 249 sites), 5 declaration runs, 6 leaf functions, 2 outlined functions \
         of which 2 re-entered, 4 fell back \
         ({fell_back})"
    );
    // And the iteration of `main`'s loop, with loops inside, is one
    // region, whose copies hold its inner loops' regions.
    let linear = format!(
        "22 cloned (11 runs of which 1 across calls, 10 loops of which 4 counted (4 with the plain loop), 3 unrolled, \
         1 across calls and 1 nested, 1 expressions, 256 sites), 5 declaration runs, \
         6 leaf functions, 2 outlined functions of which 2 re-entered, 4 fell back ({fell_back})"
    );
    // And runs hold small innermost loops: `statement_expressions`' two
    // declarations (the second's value holds a loop) and `loops`' body
    // (its declarations and the `do ... while (0)` between its loops)
    // are one event each, their loops' regions in both of their copies.
    let nested_with = |runs: &str, loops: &str, sites: &str, declarations: &str| {
        format!(
            "{runs} runs of which 1 across calls and 2 nested, 11 loops of which \
             {loops}1 across calls and 1 nested, 1 expressions, {sites} sites), {declarations} declaration runs, \
             6 leaf functions, 2 outlined functions of which 2 re-entered, 4 fell back \
             ({fell_back})"
        )
    };
    let nested = |loops: &str| nested_with("24 cloned (12", loops, "286", "3");
    // Compared in place (`-fno-sample-pair-helpers`), each candidate is a
    // check of its own: two lone assignments are runs, two declaration
    // runs are regions.
    let in_place = nested_with(
        "26 cloned (14",
        "4 counted (4 with the plain loop), 4 unrolled, ",
        "294",
        "5",
    );
    // `vla`'s two loops and `main`'s two without calls (not `loops`'
    // last, which a `return` may end); four more small loops without
    // jumps are unrolled (eight when loops are not counted).
    let counted = nested("4 counted (4 with the plain loop), 4 unrolled, ");
    let unrolled = nested("8 unrolled, ");
    let unsplit = nested("");
    // Small loops whole: runs hold them, and a loop with only small loops
    // inside is innermost.
    let whole_loops = "12 cloned (11 runs of which 1 across calls, 1 loops of which 1 across calls, \
                       0 expressions, 326 sites), 2 declaration runs, \
                       2 leaf functions, 6 outlined functions of which 5 re-entered, \
                       3 fell back (1 computed goto, 1 setjmp, 1 static local)";
    // Warm functions (the default): the same regions, in the copy that
    // their first calls, their cold ones and their sampled ones (every
    // region forced) run.
    let warm = |regions: &str, not: &str| format!("{regions}, 5 warm functions ({not})");
    let not = "2 not: 1 main, 1 static local";
    let regions = "-fno-sample-warm-functions";
    for (form, stats) in [
        (&["-fsample-sites"][..], per_site),
        (&[regions], counted.clone()),
        (&[regions, "-fno-sample-across-calls"], within_calls.clone()),
        (&[regions, "-fno-sample-nested-loops"], flat.clone()),
        (&[regions, "-fno-sample-nested-runs"], linear.clone()),
        (&[regions, "-fno-sample-counted-loops"], unrolled.clone()),
        (&[regions, "-fno-sample-split-loops"], unsplit.clone()),
        (&[regions, "-fsample-whole-loops"], whole_loops.to_owned()),
        (&["-fsample-regions"], warm(&counted, not)),
        // `scalar-pairs` compared in place, not by the unit's pair helper.
        (&["-fno-sample-pair-helpers"], warm(&in_place, not)),
        (&["-fno-sample-counted-loops"], warm(&unrolled, not)),
        (&["-fno-sample-split-loops"], warm(&unsplit, not)),
        // Within calls, `recursive` is not one run and so is taken, and
        // left as recursive.
        (
            &["-fno-sample-across-calls"],
            warm(&within_calls, "3 not: 1 main, 1 recursive, 1 static local"),
        ),
    ] {
        sampled_tricky_is_equivalent(&lab, form, &stats, &warnings, &expected, &exact);
    }
}

/// `file:line:column: message` diagnostics as `file:line: message`.
fn without_columns(diagnostics: &[String]) -> Vec<String> {
    diagnostics
        .iter()
        .map(|line| {
            let mut parts = line.splitn(4, ':');
            let (file, number, _column) = (parts.next(), parts.next(), parts.next());
            format!(
                "{}:{}:{}",
                file.unwrap_or_default(),
                number.unwrap_or_default(),
                parts.next().unwrap_or_default()
            )
        })
        .collect()
}

/// Whether the counters of sampling every event equal those of counting
/// every event, except that the `local-uninit` comparisons of one build,
/// with indeterminate values (stack contents that depend on the code of
/// other functions), only have the same number of events.
fn equal_but_indeterminate(
    seen: &BTreeMap<String, Vec<u64>>,
    exact: &BTreeMap<String, Vec<u64>>,
) -> bool {
    let comparable = |site: &str| !site.contains("\tlocal-uninit\t");
    seen.keys().eq(exact.keys())
        && seen.iter().all(|(site, values)| {
            if comparable(site) {
                values == &exact[site]
            } else {
                values.iter().sum::<u64>() == exact[site].iter().sum::<u64>()
            }
        })
}

/// The sampled build of TRICKY in `form` (`-fsample-sites`,
/// `-fsample-regions` or `-fsample-whole-loops`), whose regions
/// `-fsampler-stats` describes as `stats`, against plain gcc's warnings,
/// outputs and exit status and `-fno-sample`'s counters.
fn sampled_tricky_is_equivalent(
    lab: &Lab,
    form: &[&str],
    stats: &str,
    warnings: &[String],
    expected: &(String, i32),
    exact: &BTreeMap<String, Vec<u64>>,
) {
    let mut args = SCHEMES.to_vec();
    args.extend(form);
    args.extend([
        "-O2",
        "-Wall",
        "-Wextra",
        "-fsampler-stats",
        "tricky.c",
        "-o",
        "sampled",
    ]);
    let output = lab.cc(&args);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let found = stderr
        .lines()
        .find_map(|line| line.split_once("; regions: "))
        .map(|(_, rest)| rest.split("; front end").next().unwrap().to_owned());
    assert_eq!(found.as_deref(), Some(stats), "{stderr}");
    let form = form.join(" ");
    if form == "-fsample-sites" {
        // The comparison form's per-site checks end a cloned `case` arm
        // with a statement of its own, where gcc's "may fall through"
        // points (ARCHITECTURE.md, "Columns"): lines and messages only.
        assert_eq!(
            without_columns(&diagnostics(&output.stderr)),
            without_columns(warnings),
            "{form}: {stderr}"
        );
    } else {
        assert_eq!(diagnostics(&output.stderr), warnings, "{form}: {stderr}");
    }

    // Every event observed: the counters are exact.
    let ones = run_with_status(lab, "sampled", "ones", &[("SAMPLER_SPARSITY", "1")]);
    assert_eq!(&ones, expected, "{form}");
    let seen = counters(&lab.resolve("ones", &["sampled"]));
    assert!(equal_but_indeterminate(&seen, exact), "{form}: {seen:?}");

    // Sparse: fast copies run, the program does the same.
    for sparsity in ["10", "1000"] {
        for seed in ["1", "2"] {
            let env = [("SAMPLER_SPARSITY", sparsity), ("SAMPLER_SEED", seed)];
            assert_eq!(
                &run_with_status(lab, "sampled", "sparse", &env),
                expected,
                "{form}: sparsity {sparsity}, seed {seed}"
            );
            let observed = counters(&lab.resolve("sparse", &["sampled"]));
            assert_eq!(
                observed.keys().collect::<Vec<_>>(),
                exact.keys().collect::<Vec<_>>()
            );
            for (site, values) in &observed {
                for (seen, all) in values.iter().zip(&exact[site]) {
                    assert!(seen <= all, "{form}: {site}: {seen} observed of {all}");
                }
            }
        }
    }
}

/// Sites where unbiasedness is easy to get wrong: in loops, after calls
/// that consume the countdown, in recursion, in both arms of branches and
/// in threads.
const SHAPES: &str = r#"#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static int rec(int n)
{
    if (n == 0)
        return 0;
    return rec(n - 1) + (n & 1);
}

/* Loops of every shape, with continue and break, a loop whose condition
 * is a region of its own, declarations a run cannot hold, a statement
 * expression, a return value, and regions after calls that consume the
 * countdown. */
static int shapes(int n, const int *a)
{
    int s = 0, i = 0;
    while (i < n) {
        int v = a[i++];
        if (v & 1)
            continue;
        if (v > 90)
            break;
        s += v;
    }
    s += rec(n & 3);
    i = 0;
    do {
        s ^= a[i];
        if (s > a[i])
            s--;
    } while (++i < n);
    for (i = 0; i < n; i++) {
        if (a[i] == 7)
            break;
        s += a[i] > 50;
    }
    for (i = 0; i < n && s > -1000000; i++)
        for (int j = 0; j < 3; j++)
            s += (a[i] + j) % 3 == 0;
    int d = s > 5 ? a[0] : a[1];
    int e = d > 10 ? d : -d;
    s += ({ int t = e; if (t < 0) t = -t; t; });
    s += rec(e & 1);
    if (s > 100)
        s -= 3;
    if (s & 4)
        s++;
    return s > 1000 ? s - e : s + e;
}

static int data[64];

static void *worker(void *arg)
{
    long n = (long)arg, s = 0;
    for (long i = 0; i < n; i++) {
        if (i % 3 == 0)
            s++;
        else
            s--;
        if (i % 16 == 0)
            s += shapes((int)(i % 37), data);
    }
    return (void *)s;
}

int main(int argc, char **argv)
{
    long s = 0;
    int rounds = argc > 1 ? atoi(argv[1]) : 100000;
    for (int i = 0; i < 64; i++)
        data[i] = i * 37 % 101;
    for (int i = 0; i < rounds; i++) {
        if (i % 4 == 0)
            s += shapes(i % 37, data);
        if (i & 1)
            s += 2;
        else
            s -= 1;
        int q = rec(i % 6);
        if (q > 1)
            s++;
        if (abs(q - 2) < 1)
            s--;
    }
    pthread_t threads[4];
    for (long t = 0; t < 4; t++)
        pthread_create(&threads[t], NULL, worker, (void *)(rounds + t * 1000));
    for (int t = 0; t < 4; t++) {
        void *r;
        pthread_join(threads[t], &r);
        s += (long)r;
    }
    printf("%ld\n", s);
    return 0;
}
"#;

#[test]
fn sampling_is_unbiased_in_loops_calls_recursion_branches_and_threads() {
    let lab = Lab::new();
    lab.write("shapes.c", SHAPES);
    let common = [
        "-fsampler-strict",
        "-fsampler-scheme=branches",
        "-fsampler-scheme=returns",
        "-fsampler-scheme=scalar-pairs",
        "-fcompare-uninitialized",
        "-O2",
        "-pthread",
        "shapes.c",
    ];
    let mut args = common.to_vec();
    args.extend(["-fno-sample", "-o", "exact"]);
    lab.cc(&args);
    let output = lab.run("exact", &[], "exact-report", &[]);
    let exact = counters(&lab.resolve("exact-report", &["exact"]));
    let in_calls = events_per_shapes_call(&lab);
    // All of `shapes`' own events are in those calls.
    let mut own = 0;
    for (site, all) in exact
        .iter()
        .filter(|(site, _)| site.split('\t').nth(3) == Some("shapes"))
    {
        let total = |index: usize| in_calls.total(|n| in_calls.events(site, n, index));
        if site.contains("\tlocal-uninit\t") {
            // An indeterminate value: only the total is the same.
            let sum: f64 = (0..all.len()).map(total).sum();
            assert_eq!(sum, all.iter().sum::<u64>() as f64, "{site}");
        } else {
            for (index, &events) in all.iter().enumerate() {
                assert_eq!(total(index), events as f64, "{site} counter {index}");
            }
        }
        own += all.len();
    }
    assert_eq!(own, 395);

    // The forms of regions apart from warm functions, then the default.
    let regions = "-fno-sample-warm-functions";
    for (build, extra) in [
        ("per-region", &[regions][..]),
        ("uncounted", &[regions, "-fno-sample-counted-loops"]),
        ("unsplit", &[regions, "-fno-sample-split-loops"]),
        ("within-calls", &[regions, "-fno-sample-across-calls"]),
        ("per-site", &["-fsample-sites"]),
        ("unclone", &["-fno-clone-regions"]),
        // Once warm, a sampled call forces every region of its copy.
        ("warm-functions", &[]),
    ] {
        let mut args = common.to_vec();
        args.extend(extra);
        args.extend(["-o", build]);
        lab.cc(&args);
        let runs = 6;
        let mut observed: BTreeMap<String, Vec<u64>> = BTreeMap::new();
        for seed in 1..=runs {
            let seed = seed.to_string();
            let env = [("SAMPLER_SPARSITY", "100"), ("SAMPLER_SEED", seed.as_str())];
            assert_eq!(lab.run(build, &[], "sampled", &env), output);
            for (site, values) in counters(&lab.resolve("sampled", &[build])) {
                let total = observed
                    .entry(site)
                    .or_insert_with(|| vec![0; values.len()]);
                for (sum, value) in total.iter_mut().zip(values) {
                    *sum += value;
                }
            }
        }
        assert_eq!(observed.len(), exact.len());
        // Observed ~ Binomial(events, 1/100), within 5 standard deviations
        // where the normal approximation holds (20 expected or more); the
        // counters with fewer events, whose tails are skewed, are checked
        // together. Warm, a call of `shapes` is observed whole or not at
        // all: a counter is a sum of its events per call, each sum taken
        // with probability 1/100, whose variance p(1 - p)·Σ x² is larger
        // than the binomial's p(1 - p)·Σ x by Σ x² - Σ x (`excess`).
        let warm = build == "warm-functions";
        let within = |seen: f64, events: f64, excess: f64| {
            let excess = if warm { excess } else { 0.0 };
            let (mean, sigma) = (events / 100.0, ((events + excess) * 0.01 * 0.99).sqrt());
            (seen - mean).abs() <= 5.0 * sigma
        };
        let runs_f = runs as f64;
        let (mut checked, mut few_events, mut few_seen) = (0, 0.0, 0.0);
        let mut few_calls = vec![0.0; in_calls.calls.len()];
        for (site, all) in &exact {
            // A pair with a local not yet initialised compares with an
            // indeterminate value, which each build reads differently:
            // only its total is the same (its counters are checked as one).
            let indeterminate = site.contains("\tlocal-uninit\t");
            let counters: Vec<Vec<usize>> = if indeterminate {
                vec![(0..all.len()).collect()]
            } else {
                (0..all.len()).map(|index| vec![index]).collect()
            };
            for indices in counters {
                let index = indices[0];
                let events = (runs * indices.iter().map(|&i| all[i]).sum::<u64>()) as f64;
                let seen = indices.iter().map(|&i| observed[site][i]).sum::<u64>() as f64;
                let per_call = |n: usize| -> f64 {
                    indices.iter().map(|&i| in_calls.events(site, n, i)).sum()
                };
                if events < 2000.0 {
                    few_events += events;
                    few_seen += seen;
                    for (n, sum) in few_calls.iter_mut().enumerate() {
                        *sum += per_call(n);
                    }
                    continue;
                }
                let excess = runs_f * in_calls.excess(per_call);
                assert!(
                    within(seen, events, excess),
                    "{build}: {site} counter {index}: {seen} observed of {events} events"
                );
                if events >= 300_000.0 {
                    checked += 1;
                }
            }
        }
        let few_excess = runs_f * in_calls.excess(|n| few_calls[n]);
        assert!(
            within(few_seen, few_events, few_excess),
            "{build}: {few_seen} observed of {few_events} events on counters with few events"
        );
        // The many-event counters, where a bias would show, are all there.
        assert_eq!(checked, 138, "{build}");
    }
}

/// What one call of SHAPES's `shapes(n, data)` counts, for each `n` it is
/// called with, and how often a run of SHAPES calls it with each.
struct ShapesCalls {
    /// By `n`: the counters of one call (its callees' included).
    events: Vec<BTreeMap<String, Vec<u64>>>,
    /// By `n`: the calls of one run (`main`'s and its four threads').
    calls: Vec<u64>,
}

impl ShapesCalls {
    fn events(&self, site: &str, n: usize, index: usize) -> f64 {
        self.events[n]
            .get(site)
            .map_or(0.0, |values| values[index] as f64)
    }

    /// Σ x over one run's calls, `x(n)` the events of a call with `n`.
    fn total(&self, x: impl Fn(usize) -> f64) -> f64 {
        (self.calls.iter().enumerate())
            .map(|(n, &calls)| calls as f64 * x(n))
            .sum()
    }

    /// Σ x² - Σ x over one run's calls, `x(n)` the events of a call with `n`.
    fn excess(&self, x: impl Fn(usize) -> f64) -> f64 {
        (self.calls.iter().enumerate())
            .map(|(n, &calls)| calls as f64 * (x(n) * x(n) - x(n)))
            .sum()
    }
}

/// Counts each call of `shapes` alone: SHAPES with a `main` that calls
/// it once, built with `-fno-sample` (the sites of SHAPES keep their
/// numbers: they come first in the unit).
fn events_per_shapes_call(lab: &Lab) -> ShapesCalls {
    lab.write(
        "one_call.c",
        "#define main shapes_main\n#include \"shapes.c\"\n#undef main\n\
         int main(int argc, char **argv)\n{\n    (void)argc;\n\
         for (int i = 0; i < 64; i++)\n        data[i] = i * 37 % 101;\n\
         printf(\"%d\\n\", shapes(atoi(argv[1]), data));\n    return 0;\n}\n",
    );
    lab.cc(&[
        "-fsampler-scheme=branches",
        "-fsampler-scheme=returns",
        "-fsampler-scheme=scalar-pairs",
        "-fcompare-uninitialized",
        "-fno-sample",
        "-O2",
        "-pthread",
        "one_call.c",
        "-o",
        "one-call",
    ]);
    let events = (0..37)
        .map(|n| {
            lab.run("one-call", &[&n.to_string()], "one-call-report", &[]);
            counters(&lab.resolve("one-call-report", &["one-call"]))
        })
        .collect();
    // `main` calls it for every fourth of its 100,000 rounds, thread t
    // for every sixteenth of its 100,000 + 1,000·t.
    let mut calls = vec![0; 37];
    (0..100_000).step_by(4).for_each(|i| calls[i % 37] += 1);
    for t in 0..4 {
        (0..100_000 + t * 1000)
            .step_by(16)
            .for_each(|i| calls[i % 37] += 1);
    }
    ShapesCalls { events, calls }
}

/// Four regions of two sites or more: a run in a leaf function,
/// evaluated once per call, the body of an innermost loop (whose
/// initialisation is one event of its own), a run around a call to a
/// function with sites and the iteration of a loop around such a call
/// (both `-fsample-across-calls`).
const PAIRS: &str = r#"#include <stdio.h>
#include <stdlib.h>

static int __attribute__((noinline)) pair(int x)
{
    int r = 0;
    if (x & 1)
        r += 3;
    if (x & 2)
        r += 5;
    return r;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 30000;
    long s = 0;
    for (int i = 0; i < n; i++) {
        if (i % 5 == 0)
            s += 7;
        s += pair(i);
        if (i % 7 == 0)
            s -= 2;
        int k;
        for (k = (i < 0 ? 1 : 0) + (i > n ? 1 : 0); k < 8; k++) {
            if ((i + k) % 3 == 0)
                s++;
            if ((i ^ k) & 4)
                s--;
        }
    }
    for (int j = 0; j < n; j++) {
        if (j % 3 == 1)
            s += 2;
        s += pair(j);
        if (j % 11 == 0)
            s -= 3;
    }
    printf("%ld\n", s);
    return 0;
}
"#;

/// `-fsample-regions` takes one decision per execution of a region: two
/// sites of one region are observed together, always, and each as often
/// as 1/sparsity of its events. `-fsample-sites` (and per-site checks
/// without cloning) decides for each site on its own.
#[test]
fn sample_regions_decides_once_per_region_execution() {
    let lab = Lab::new();
    lab.write("pairs.c", PAIRS);
    let sparsity = 3.0_f64;
    // (first site, second site, events of each, iterations of the loop
    // that holds them, whether a call to a function with sites comes
    // between them).
    let pairs = [
        ("x & 1", "x & 2", 60_000.0, 1.0, false),
        ("(i + k) % 3 == 0", "(i ^ k) & 4", 240_000.0_f64, 8.0, false),
        ("i < 0", "i > n", 30_000.0, 1.0, false),
        ("i % 5 == 0", "i % 7 == 0", 30_000.0, 1.0, true),
        ("j % 3 == 1", "j % 11 == 0", 30_000.0, 1.0, true),
    ];
    for (build, form) in [
        ("regions", "-fsample-regions"),
        ("uncounted", "-fno-sample-counted-loops"),
        ("unsplit", "-fno-sample-split-loops"),
        ("whole", "-fsample-whole-loops"),
        ("within", "-fno-sample-across-calls"),
        ("flat", "-fno-sample-nested-loops"),
        ("sites", "-fsample-sites"),
        ("unclone", "-fno-clone-regions"),
    ] {
        let output = lab.cc(&[
            "-fsampler-strict",
            "-fsampler-stats",
            "-O2",
            form,
            "pairs.c",
            "-o",
            build,
        ]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        let cloned = match form {
            // The inner loop whole, in the iteration of the loop around
            // it and the call (both loops then innermost, but too large
            // together for `main`'s body to be one run around them).
            "-fsample-whole-loops" => {
                Some("3 cloned (1 runs, 2 loops of which 2 across calls, 0 expressions, 15 sites)")
            }
            "-fno-clone-regions" => None,
            // The first loop's iteration (around the call and the inner
            // loop) is one region, whose copies hold the inner loop's.
            "-fsample-regions" => Some(
                "4 cloned (1 runs, 3 loops of which 1 counted (1 with the plain loop), 2 across calls \
                 and 1 nested, 0 expressions, 13 sites)",
            ),
            // Without: a run around the call.
            "-fno-sample-nested-loops" => Some(
                "4 cloned (2 runs of which 1 across calls, 2 loops of which 1 counted (1 with the \
                 plain loop) and 1 across calls, 0 expressions, 12 sites)",
            ),
            // The conditions around the calls are sites of their own.
            "-fno-sample-across-calls" => Some(
                "2 cloned (1 runs, 1 loops of which 1 counted (1 with the plain loop), 0 expressions, \
                 5 sites)",
            ),
            "-fsample-sites" => Some("2 cloned (1 runs, 1 loops, 0 expressions, 5 sites)"),
            _ => Some(
                "4 cloned (1 runs, 3 loops of which 2 across calls and 1 nested, \
                 0 expressions, 13 sites)",
            ),
        };
        if let Some(cloned) = cloned {
            assert!(stderr.contains(cloned), "{stderr}");
        }
        for seed in ["1", "2"] {
            let env = [("SAMPLER_SPARSITY", "3"), ("SAMPLER_SEED", seed)];
            assert_eq!(lab.run(build, &[], "report", &env), "245244\n");
            let observed = counters(&lab.resolve("report", &[build]));
            let total = |condition: &str| -> u64 {
                let wanted = format!("\t{condition}\t");
                let mut rows = observed.iter().filter(|(site, _)| site.contains(&wanted));
                let (_, values) = rows.next().unwrap_or_else(|| panic!("{condition}"));
                assert!(rows.next().is_none(), "{condition}");
                values.iter().sum()
            };
            for (first, second, events, iterations, across_call) in pairs {
                let (a, b) = (total(first), total(second));
                // A whole loop's execution is observed whole, its
                // iterations' events together: the variance of sampling
                // units of `chunk` events each.
                let chunk = if form == "-fsample-whole-loops" {
                    iterations
                } else {
                    1.0
                };
                for seen in [a, b] {
                    let (mean, sigma) = (events / sparsity, (events * chunk * 2.0 / 9.0).sqrt());
                    assert!(
                        (seen as f64 - mean).abs() <= 5.0 * sigma,
                        "{build}, seed {seed}: {seen} observed of {events} events"
                    );
                }
                let together = match form {
                    "-fsample-sites" | "-fno-clone-regions" => false,
                    "-fno-sample-across-calls" => !across_call,
                    _ => true,
                };
                if together {
                    assert_eq!(a, b, "{build}, seed {seed}: {first} and {second}");
                } else {
                    assert_ne!(a, b, "{build}, seed {seed}: {first} and {second}");
                }
            }
        }
    }
}

/// An assignment whose value `scalar-pairs` compares with four others
/// (`g`, `a`, `b` and 0), outside any region: `mix` has no other site.
const ASSIGNMENT: &str = r#"#include <stdio.h>

int g = 7;

__attribute__((__noinline__)) static int mix(int a, int b)
{
    int x = a * 3 - b;
    return x;
}

int main(void)
{
    long s = 0;
    for (int i = 0; i < 60000; i++)
        s += mix(i, i & 5);
    printf("%ld\n", s);
    return 0;
}
"#;

/// Per region, an assignment's `scalar-pairs` candidates are one event:
/// observed together, always, each as often as 1/sparsity of the
/// assignment's executions. So they were before, in a region of their
/// own (`-fno-sample-pair-helpers`: a check per candidate, which makes
/// `mix`'s body a run); `-fsample-sites` observes each on its own, as
/// often.
#[test]
fn an_assignment_s_pairs_are_one_event_per_region() {
    let lab = Lab::new();
    lab.write("assign.c", ASSIGNMENT);
    let sparsity = 3.0_f64;
    let events = 60_000.0_f64;
    // (build, form, observed together, `mix`'s body a run region).
    for (build, form, together, run) in [
        ("regions", "-fsample-regions", true, false),
        ("sites", "-fsample-sites", false, true),
        ("in-place", "-fno-sample-pair-helpers", true, true),
    ] {
        let output = lab.cc(&[
            "-fsampler-strict",
            "-fsampler-scheme=scalar-pairs",
            "-fsampler-stats",
            "-O2",
            form,
            "assign.c",
            "-o",
            build,
        ]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        let runs = if run {
            "cloned (1 runs"
        } else {
            "cloned (0 runs"
        };
        assert!(stderr.contains(runs), "{build}: {stderr}");
        for seed in ["1", "2"] {
            let env = [("SAMPLER_SPARSITY", "3"), ("SAMPLER_SEED", seed)];
            assert_eq!(lab.run(build, &[], "report", &env), "5399760000\n");
            let observed = counters(&lab.resolve("report", &[build]));
            let totals: Vec<(String, u64)> = observed
                .iter()
                .filter(|(site, _)| site.contains("\tmix\t"))
                .map(|(site, values)| {
                    let candidate = site.split('\t').nth(8).unwrap_or_default().to_owned();
                    (candidate, values.iter().sum())
                })
                .collect();
            let names: Vec<&str> = totals.iter().map(|(name, _)| name.as_str()).collect();
            assert_eq!(names, ["0LL", "a", "b", "g"], "{build}: {observed:?}");
            let (mean, sigma) = (events / sparsity, (events * 2.0 / 9.0).sqrt());
            for (candidate, seen) in &totals {
                assert!(
                    (*seen as f64 - mean).abs() <= 5.0 * sigma,
                    "{build}, seed {seed}: {candidate} observed {seen} times of {events}"
                );
            }
            let equal = totals.iter().all(|(_, seen)| *seen == totals[0].1);
            assert_eq!(equal, together, "{build}, seed {seed}: {totals:?}");
        }
    }
}

/// Each of PERIOD's functions runs one site per iteration in a loop whose
/// iterations are a fixed number of events (1 in `leaf`'s, 3 in
/// `calls`'s, 2 in `conditions`'s, per region; per site, 2, 3 and 2), all
/// prime to 7: with `SAMPLER_RANDOM=fixed` and period 7, any 7,000
/// iterations then hold exactly 1,000 sampled events of each such site,
/// whatever the random phase.
const PERIOD: &str = r#"#include <stdio.h>
#include <stdlib.h>

extern void tick(void);
static int v[16];

/* A leaf: one local countdown from entry to return. */
static int leaf(int n)
{
    int s = 0;
    for (int i = 0; i < n; i++)
        if (v[i & 15] > 2)
            s++;
    return s;
}

/* Calls: a declaration run and a run, each loading and storing the
   thread's countdown, and the loop's condition. */
static int calls(int n)
{
    int s = 0;
    for (int i = 0; i < n; i++) {
        int t = v[i & 15] > 3 ? 2 : 1;
        if (v[i & 15] > 5)
            s += t;
        tick();
    }
    return s;
}

/* An `if` whose branch calls: its condition is an expression region. */
static int conditions(int n)
{
    int s = 0;
    for (int i = 0; i < n; i++) {
        if (v[i & 15] > 7)
            tick();
        else
            s++;
    }
    return s;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 0;
    for (int i = 0; i < 16; i++)
        v[i] = i;
    printf("%d %d %d\n", leaf(n), calls(n), conditions(n));
    return 0;
}
"#;

/// The countdown's arithmetic is exact in every form: with a fixed period
/// of 7 each loop site of PERIOD is observed in exactly 1,000 of 7,000
/// iterations, and at period 1 in all of them. A countdown off by one
/// (a local biased one way and stored the other, a test of `<` for `<=`)
/// gives 875 or 1,166.
#[test]
fn a_fixed_period_samples_exactly_one_event_in_each_period() {
    let lab = Lab::new();
    lab.write("period.c", PERIOD);
    lab.write("tick.c", "int ticks;\nvoid tick(void) { ticks++; }\n");
    lab.gcc(&["-O2", "-c", "tick.c", "-o", "tick.o"]);
    // Iterations where `v[i & 15] > k` holds (`v[j]` is `j`).
    let above = |k: u64| (0..7_000u64).filter(|i| i & 15 > k).count() as u64;
    let output = format!("{} {} {}\n", above(2), 2 * above(5), 7_000 - above(7));
    let sites = [2, 3, 5, 7].map(|k| (format!("v[i & 15] > {k}"), above(k)));
    for form in [
        "-fsample-regions",
        "-fno-sample-split-loops",
        "-fsample-sites",
        "-fno-clone-regions",
    ] {
        lab.cc(&[
            "-fsampler-strict",
            "-fsampler-scheme=branches",
            "-O2",
            form,
            "period.c",
            "tick.o",
            "-o",
            "period",
        ]);
        for (period, expected) in [("7", 1_000), ("1", 7_000)] {
            let env = [("SAMPLER_RANDOM", "fixed"), ("SAMPLER_SPARSITY", period)];
            assert_eq!(lab.run("period", &["7000"], "report", &env), output);
            let observed = counters(&lab.resolve("report", &["period"]));
            for (condition, trues) in &sites {
                let wanted = format!("\t{condition}\t");
                let rows: Vec<_> = observed
                    .iter()
                    .filter(|(site, _)| site.contains(&wanted))
                    .collect();
                assert_eq!(rows.len(), 1, "{form}: {condition} in {observed:?}");
                let values = rows[0].1;
                assert_eq!(
                    values.iter().sum::<u64>(),
                    expected,
                    "{form}, period {period}: {condition} {values:?}"
                );
                if period == "1" {
                    assert_eq!(values, &[7_000 - trues, *trues], "{form}: {condition}");
                }
            }
        }
    }
}

/// A program whose first event, the thread's first, is an iteration of a
/// split loop.
const FIRST_IN_LOOP: &str = r#"#include <stdio.h>

static const int v[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};

int main(void)
{
    int s = 0;
    for (int i = 0; i < 7000; i++)
        if (v[i % 13] > 2)
            s++;
    printf("%d\n", s);
    return 0;
}
"#;

/// Split loops take the same events and draws as one loop holding both
/// copies: under one seed both builds sample exactly the same iterations,
/// so every counter agrees. This holds only if a draw that does not
/// sample (the thread's first event, here an iteration of a split loop)
/// gives back the execution it took before its iteration runs FAST. The
/// loop is counted by default (counted.rs): the third build, whose first
/// event is then the head of a counted FAST loop, agrees too.
#[test]
fn split_loops_sample_the_same_executions_as_one_loop() {
    let lab = Lab::new();
    lab.write("first.c", FIRST_IN_LOOP);
    let mut seen = Vec::new();
    for (build, form) in [
        ("split", "-fno-sample-counted-loops"),
        ("unsplit", "-fno-sample-split-loops"),
        ("counted", "-fsample-counted-loops"),
    ] {
        lab.cc(&[
            "-fsampler-strict",
            "-fsampler-scheme=branches",
            "-O2",
            form,
            "first.c",
            "-o",
            build,
        ]);
        let mut runs = Vec::new();
        for seed in 1..=8 {
            let seed = seed.to_string();
            let env = [("SAMPLER_SPARSITY", "5"), ("SAMPLER_SEED", seed.as_str())];
            assert_eq!(lab.run(build, &[], "report", &env), "5383\n");
            runs.push(counters(&lab.resolve("report", &[build])));
        }
        seen.push(runs);
    }
    assert_eq!(seen[0], seen[1]);
    assert_eq!(seen[0], seen[2]);
}

/// Loops of every counted shape (counted.rs), with strict and inclusive
/// bounds, bounds of other types,
/// bounds that are expressions, empty and negative ranges, an unsigned
/// count that wraps, counts that end at the extremes of their types,
/// `continue` in FAST iterations, and `break`, `goto` and `return`
/// (whose loops are split but not counted), a counted loop inside another
/// loop, and loops that must not be counted (the variable or the bound
/// changes in the body, a negative bound, a `char` variable).
const COUNTED: &str = r#"#include <stdio.h>
#include <stdlib.h>
#include <limits.h>

static long up(int n, int k)
{
    long s = 0;
    for (int i = 0; i < n; i++) {
        if (i % k == 0)
            s += i;
        else
            s -= 1;
    }
    return s;
}

static long up_expression(unsigned n, short d)
{
    long s = 0;
    unsigned i;
    for (i = 3; i < n + d; ++i) {
        if (i & 1)
            s++;
        if (i & 2)
            s += 2;
    }
    return s + i;
}

static long down(int n)
{
    long s = 0;
    int c;
    for (c = n; c > 0; c--)
        if (c & 4)
            s += c;
    return s * 10 + c;
}

static long post(int size)
{
    long s = 0;
    while (size-- > 0)
        if (size % 3)
            s += size;
    return s * 10 + size;
}

static unsigned long post_unequal(unsigned count)
{
    unsigned long s = 0;
    while (count--)
        if (count & 8)
            s ^= count;
    return s + count;
}

static long post_bound(long n, int b)
{
    long s = 0;
    while (n-- != b)
        if (n & 1)
            s += n;
    return s * 10 + n;
}

static long pre(unsigned n)
{
    long s = 0;
    do {
        if (n & 2)
            s += n;
    } while (--n);
    return s;
}

static long pre_bound(long n, long b)
{
    long s = 0;
    do {
        if (n & 1)
            s -= n;
        else
            s += 3;
    } while (--n != b);
    return s * 10 + n;
}

static long jumps(int n)
{
    long s = 0;
    for (int i = 0; i < n; i++) {
        if (i == 7777)
            break;
        if (i & 1)
            continue;
        s += i;
    }
    for (int i = 0; i < n; i++) {
        if (i * 3 > 20000)
            goto out;
        s += i & 3 ? 1 : 2;
    }
out:
    for (int i = n; i > 0; --i)
        if (i % 1000 == 999)
            return s + i;
    return s;
}

static long nested(int n)
{
    long s = 0;
    for (int i = 0; i < n; i++) {
        int k = i % 50;
        while (k--)
            if ((i ^ k) & 1)
                s++;
        s += i;
    }
    return s;
}

/* Counts that end at the extremes of their types. */
static long extremes(unsigned top, long long_top, int bottom)
{
    long s = 0;
    for (unsigned i = top - 3000; i < top; i++)
        if (i & 1)
            s++;
    for (long i = long_top - 3000; i < long_top; i++)
        if (i & 2)
            s++;
    for (int c = bottom + 3000; c > bottom; c--)
        if (c & 4)
            s++;
    unsigned long n = 3000;
    while (n-- > 0)
        if (n & 8)
            s++;
    return s;
}

/* Inclusive bounds, up to the extremes of their types. */
static long inclusive(int n, unsigned m, int bottom, long long_top)
{
    long s = 0;
    for (int i = 1; i <= n; i++)
        if (i % 3 == 1)
            s += i;
    for (unsigned j = m; j >= 2; j--)
        if (j & 2)
            s -= j;
    for (int c = bottom + 2000; c >= bottom + 1; --c)
        if (c & 4)
            s++;
    for (long i = long_top - 2000; i <= long_top - 1; ++i)
        if (i & 8)
            s++;
    return s;
}

/* Not counted: the variable changes in the body, or the bound does, or
 * the bound is negative, or the variable is a char. */
static long not_counted(int n)
{
    long s = 0;
    for (int i = 0; i < n; i++)
        if (i % 7 == 0)
            i++;
    for (int i = 0, m = n; i < m; i++)
        if (i % 5 == 0)
            m--;
    while (n-- > -5)
        if (n & 1)
            s++;
    for (unsigned char c = 0; c < 200; c++)
        if (c & 16)
            s += c;
    return s;
}

/* A short counted loop of constant trip count, run once per iteration
 * of the loop around it (zlib's braided CRC): with the user's loop when
 * the countdown covers its iterations; a `continue` of its own. Then a
 * `>=` loop whose body never changes anything. */
static long braid(int n)
{
    long s = 0;
    for (int r = 0; r < n; r++) {
        int k;
        s += r & 7;
        for (k = 1; k < 8; k++) {
            if (k == 3)
                continue;
            s ^= (long)(r >> k) * k;
        }
        for (k = 9; k >= 2; k--)
            if (k > 100)
                s--;
    }
    return s;
}

/* Not counted either (the variable changes in the body, steps of two),
 * but unrolled: `continue`s of their own, the second to a `do`'s
 * condition. */
static long continued(int n)
{
    long s = 0;
    for (int i = 0; i < n; i++) {
        if (i % 3 == 0) {
            i++;
            continue;
        }
        s += i;
    }
    int k = n;
    do {
        if (k & 2)
            continue;
        s ^= k;
    } while ((k -= 2) > 0);
    return s;
}

int main(int argc, char **argv)
{
    int scale = argc > 1 ? atoi(argv[1]) : 1;
    long total = 0;
    for (int r = 0; r < 3 * scale; r++) {
        total += continued(3001 + r) + continued(0) + continued(1) + continued(2);
        total += braid(2000 + r) + braid(0);
        total += up(5000 + r, 3) + up(0, 2) + up(-4, 2);
        total += up_expression(4000, 7) + up_expression(2, -1) + up_expression(0, 0);
        total += down(6000) + down(0) + down(-5);
        total += post(7000) + post(0) + post(-3) + post(1);
        total += (long)post_unequal(3000) + (long)post_unequal(0) % 1000003;
        total += post_bound(9000, 10) + post_bound(10, 10);
        total += pre(8000) + pre(1) + pre_bound(3000, -20) + pre_bound(5, 4);
        total += jumps(10000) + jumps(0) + jumps(300);
        total += nested(400) + not_counted(3000) + extremes(UINT_MAX, LONG_MAX, INT_MIN);
        total += inclusive(5000, 4000, INT_MIN, LONG_MAX) + inclusive(0, 1, 0, 0) + inclusive(1, 2, -5, 7);
        total %= 1000000007;
    }
    printf("%ld\n", total);
    return 0;
}
"#;

/// `-fsample-counted-loops` bounds a split loop's FAST loop by the loop's
/// variable, `-fsample-counted-plain-loops` runs a small counted `for`
/// loop that ends within the countdown as the user's loop with its events
/// taken at once, and `-fsample-unrolled-loops` runs a small one's FAST
/// iterations four to a decrement, giving back the ones it did not run:
/// the same events in the same order as the split loop with a decrement
/// per iteration, so under one seed the four builds sample the same
/// iterations and every counter agrees, at every sparsity (a give-back
/// or a count of events taken at once one event off shifts every later
/// draw); the program's output stays plain gcc's, its counters at
/// sparsity 1 are `-fno-sample`'s, its warnings gcc's. The stats count
/// the loops recognised: the nineteen counted loops of COUNTED (twelve
/// `for` loops small enough for the plain loop), none of `jumps`' three
/// (a `break`, a `goto` and a `return` may end them), `not_counted`'s or
/// `continued`'s.
#[test]
fn counted_and_unrolled_loops_sample_the_same_executions_as_split_loops() {
    let lab = Lab::new();
    lab.write("counted.c", COUNTED);
    let warnings_on = ["-Wall", "-Wextra", "-Wconversion"];
    let mut args = vec!["-O2", "counted.c", "-o", "plain"];
    args.extend(warnings_on);
    let plain = lab.gcc(&args);
    let warnings = diagnostics(&plain.stderr);
    // `up_expression`'s `n + d` is a `short` converted to `unsigned`.
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let expected = lab.run("plain", &[], "none", &[]);
    assert_eq!(expected, "299275357\n");

    let schemes = [
        "-fsampler-strict",
        "-fsampler-stats",
        "-fsampler-scheme=branches",
        "-fsampler-scheme=returns",
        "-fsampler-scheme=scalar-pairs",
        // The forms of loops apart from warm functions.
        "-fno-sample-warm-functions",
        "-O2",
        "counted.c",
    ];
    let build = |name: &str, forms: &[&str]| -> String {
        let mut args = schemes.to_vec();
        args.extend(warnings_on);
        args.extend(forms);
        args.extend(["-o", name]);
        let output = lab.cc(&args);
        assert_eq!(diagnostics(&output.stderr), warnings, "{forms:?}");
        String::from_utf8_lossy(&output.stderr).into_owned()
    };
    build("exact", &["-fno-sample"]);
    assert_eq!(lab.run("exact", &[], "exact-report", &[]), expected);
    let exact = counters(&lab.resolve("exact-report", &["exact"]));
    // `not_counted`'s four loops and `continued`'s two are unrolled;
    // `nested`'s outer loop is one region, whose copies hold its inner
    // loop's, and so is `braid`'s; two runs hold small loops, in every
    // form alike.
    let stats = build("counted", &["-fsample-counted-loops"]);
    assert!(
        stats.contains(
            "(2 runs of which 2 nested, 31 loops of which 19 counted (12 with the plain loop), \
             6 unrolled, 1 across calls and 2 nested, 0 expressions"
        ),
        "{stats}"
    );
    let stats = build("limited", &["-fno-sample-counted-plain-loops"]);
    assert!(
        stats.contains(
            "(2 runs of which 2 nested, 31 loops of which 19 counted, 6 unrolled, \
             1 across calls and 2 nested, 0 expressions"
        ),
        "{stats}"
    );
    // Every loop but `jumps`' three (a `break`, a `goto`, a `return`),
    // `braid`'s outer one (nested) and `main`'s (across calls).
    let stats = build("uncounted", &["-fno-sample-counted-loops"]);
    assert!(
        stats.contains(
            "(2 runs of which 2 nested, 31 loops of which 25 unrolled, 1 across calls and 2 nested, \
             0 expressions"
        ),
        "{stats}"
    );
    let stats = build(
        "per-iteration",
        &["-fno-sample-counted-loops", "-fno-sample-unrolled-loops"],
    );
    assert!(
        stats.contains("(2 runs of which 2 nested, 31 loops of which 1 across calls and 2 nested, 0 expressions"),
        "{stats}"
    );
    for sparsity in ["1", "3", "1000"] {
        for seed in ["1", "2"] {
            let env = [("SAMPLER_SPARSITY", sparsity), ("SAMPLER_SEED", seed)];
            let mut seen = Vec::new();
            for build in ["counted", "limited", "uncounted", "per-iteration"] {
                assert_eq!(lab.run(build, &[], "report", &env), expected);
                seen.push(counters(&lab.resolve("report", &[build])));
            }
            assert_eq!(seen[0].len(), exact.len());
            for (i, other) in seen.iter().enumerate().skip(1) {
                assert_eq!(
                    &seen[0], other,
                    "build {i}, sparsity {sparsity}, seed {seed}"
                );
            }
            if sparsity == "1" {
                assert_eq!(seen[0], exact, "seed {seed}");
            }
        }
    }
}

/// Loops with loops inside: the iteration of each outer loop is one
/// region (`-fsample-nested-loops`), whose copies hold the inner loops'
/// own regions; in a leaf function (one local countdown) and across
/// calls (the global one), with an inner loop that jumps to a label of
/// the outer iteration and returns, and a `continue` of the outer loop.
const NESTED: &str = r#"#include <stdio.h>
#include <stdlib.h>

static int __attribute__((noinline)) weigh(int x)
{
    return x > 3 ? x - 3 : 3 - x;
}

/* A leaf function: the outer iteration is one event for its sites, each
 * inner loop's iteration one of its own, also in the loop that runs
 * once per outer iteration. Its constant table, only read, is defined
 * in each copy. */
static long leaf(int n)
{
    long s = 0;
    for (int i = 0; i < n; i++) {
        static const unsigned char bonus[] = { 7, 1, 2, 3, 4 };
        if (i % 5 == 0)
            s += bonus[i % 5];
        for (int k = 0; k < 1; k++)
            if ((i ^ k) % 3 == 0)
                s++;
        if (i % 7 == 0)
            s -= 2;
        for (int k = 0; k < 6; k++) {
            if ((i + k) % 4 == 0)
                s++;
            if ((i ^ k) & 8)
                s--;
        }
        /* An inner loop with a loop inside, after innermost ones: its
         * own iteration is not nested again. */
        for (int k = 0; k < 2; k++) {
            if ((i ^ k) & 2)
                s--;
            for (int m = 0; m < 2; m++)
                if ((i + k + m) % 9 == 0)
                    s += 3;
        }
    }
    return s;
}

/* Calls: the outer iteration takes its event from the global countdown. */
static long calls(int n)
{
    long s = 0;
    int i = 0;
    while (i < n) {
        int v = weigh(i);
        if (v < 0)
            goto bad;
        if (i % 11 == 0)
            s += 3;
        do {
            if (v % 7 == 0)
                goto next;
            if (v == -13)
                return -13;
            v /= 2;
        } while (v > 1);
        s += v;
    next:
        i++;
        if (i % 100 == 99)
            continue;
        s ^= i;
    }
    return s;
bad:
    return -1;
}

/* A constant table whose element's address is kept: each copy of the
 * iteration would have a table of its own, so the loop is no region. */
static const int *kept;
static long escapes(int n)
{
    long s = 0;
    for (int i = 0; i < n; i++) {
        static const int table[] = { 1, 2, 3 };
        if (i % 3 == 0)
            kept = &table[i % 3];
        for (int k = 0; k < 2; k++)
            if ((i ^ k) & 1)
                s += *kept;
    }
    return s;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 30000;
    printf("%ld %ld %ld\n", leaf(n), calls(n), escapes(n));
    return 0;
}
"#;

/// `-fsample-nested-loops` makes the iteration of a loop with loops
/// inside one event: the sites of one outer iteration are observed
/// together, an inner loop's sites on events of their own (also where
/// the inner loop runs once per outer iteration, the same number of
/// events), each site with probability 1/sparsity (5 standard
/// deviations); `-fno-sample-nested-loops` decides the outer iteration's
/// runs apart. Both keep the program's output and gcc's warnings, and
/// count exactly at sparsity 1.
#[test]
fn nested_loop_iterations_are_one_event_and_their_inner_loops_their_own() {
    let lab = Lab::new();
    lab.write("nested.c", NESTED);
    let warnings_on = ["-Wall", "-Wextra"];
    let plain = lab.gcc(&["-O2", "nested.c", "-o", "plain", "-Wall", "-Wextra"]);
    let warnings = diagnostics(&plain.stderr);
    let expected = lab.run("plain", &[], "none", &[]);
    assert_eq!(expected, "8427 29631 30000\n");
    let build = |name: &str, form: &str| -> String {
        let mut args = vec![
            "-fsampler-strict",
            "-fsampler-stats",
            "-fsampler-scheme=branches",
            "-fsampler-scheme=returns",
            // Regions apart from warm functions.
            "-fno-sample-warm-functions",
            "-O2",
            "nested.c",
            form,
            "-o",
            name,
        ];
        args.extend(warnings_on);
        let output = lab.cc(&args);
        assert_eq!(diagnostics(&output.stderr), warnings, "{form}");
        String::from_utf8_lossy(&output.stderr).into_owned()
    };
    build("exact", "-fno-sample");
    assert_eq!(lab.run("exact", &[], "exact-report", &[]), expected);
    let exact = counters(&lab.resolve("exact-report", &["exact"]));
    // `leaf`'s and `calls`' outer loops, not `escapes`' (its table's
    // element address is kept); the innermost loops (four counted, one
    // inside a loop that is no region).
    let stats = build("nested", "-fsample-nested-loops");
    assert!(
        stats.contains(
            "(1 runs of which 1 across calls, 7 loops of which 4 counted (4 with the plain loop), \
             1 across calls and 2 nested, 0 expressions, 26 sites), 0 declaration runs, 2 leaf functions, 0 outlined functions, \
             1 fell back (1 static local)"
        ),
        "{stats}"
    );
    let stats = build("flat", "-fno-sample-nested-loops");
    assert!(
        stats.contains(
            "(2 runs of which 1 across calls, 5 loops of which 4 counted (4 with the plain loop), \
             0 expressions, 20 sites)"
        ),
        "{stats}"
    );
    for build in ["nested", "flat"] {
        assert_eq!(
            lab.run(build, &[], "report", &[("SAMPLER_SPARSITY", "1")]),
            expected
        );
        assert_eq!(counters(&lab.resolve("report", &[build])), exact, "{build}");
    }
    // (site, site, observed together with nested loops, and without).
    let pairs = [
        ("i % 5 == 0", "i % 7 == 0", true, false),
        ("i % 5 == 0", "(i ^ k) % 3 == 0", false, false),
        ("(i + k) % 4 == 0", "(i ^ k) & 8", true, true),
        ("v < 0", "i % 100 == 99", true, false),
        ("v < 0", "i % 11 == 0", true, true),
        ("v == -13", "v > 1", true, true),
    ];
    observed_together(&lab, &expected, &exact, &pairs);
}

/// Runs the builds `nested` and `flat` of one program at sparsity 3 under
/// two seeds: each site of `pairs` (`(site, site, observed together in
/// `nested`, and in `flat`)`, named by its condition) is observed in a
/// third of its events in `exact` (the `-fno-sample` counters), within 5
/// standard deviations, and the two sites of each pair have equal totals
/// where they are decided together, different ones where apart.
fn observed_together(
    lab: &Lab,
    expected: &str,
    exact: &BTreeMap<String, Vec<u64>>,
    pairs: &[(&str, &str, bool, bool)],
) {
    let events = |condition: &str| -> (String, u64) {
        let wanted = format!("\t{condition}\t");
        let mut rows = exact.iter().filter(|(site, _)| site.contains(&wanted));
        let (site, values) = rows.next().unwrap_or_else(|| panic!("{condition}"));
        assert!(rows.next().is_none(), "{condition}");
        (site.clone(), values.iter().sum())
    };
    for (build, nested) in [("nested", true), ("flat", false)] {
        // Two seeds under which no two counters decided apart happen to
        // be equal (under seed 2, NESTED's `flat` `v < 0` and
        // `i % 100 == 99` both see 9,937 of their 30,000 events).
        for seed in ["1", "3"] {
            let env = [("SAMPLER_SPARSITY", "3"), ("SAMPLER_SEED", seed)];
            assert_eq!(lab.run(build, &[], "report", &env), expected);
            let observed = counters(&lab.resolve("report", &[build]));
            let seen = |condition: &str| -> u64 {
                let (site, events) = events(condition);
                let seen: u64 = observed[&site].iter().sum();
                let (mean, sigma) = (events as f64 / 3.0, (events as f64 * 2.0 / 9.0).sqrt());
                assert!(
                    (seen as f64 - mean).abs() <= 5.0 * sigma,
                    "{build}, seed {seed}: {condition}: {seen} observed of {events} events"
                );
                seen
            };
            for &(first, second, with_nested, without) in pairs {
                let together = if nested { with_nested } else { without };
                let (a, b) = (seen(first), seen(second));
                if together {
                    assert_eq!(a, b, "{build}, seed {seed}: {first} and {second}");
                } else {
                    assert_ne!(a, b, "{build}, seed {seed}: {first} and {second}");
                }
            }
        }
    }
}

/// Runs of statements that hold small innermost loops
/// (`-fsample-nested-runs`): `compare` is shaped like sqlite3's
/// `vdbeSorterCompareInt` (declarations, an `if` whose branch holds a
/// loop, a call after), `leaf` keeps the function's local, `exits` leaves
/// its loop by `return` and by a `goto` to a label after the run, and
/// `declared` holds a run that does not reach the end of its block.
const NESTED_RUNS: &str = r#"#include <stdio.h>
#include <stdlib.h>

static int __attribute__((noinline)) weigh(int x)
{
    return x > 3 ? x - 3 : 3 - x;
}

static int compare(const unsigned char *a, const unsigned char *b, int deep)
{
    const int s1 = a[1] & 7;
    const int s2 = b[1] & 7;
    int res;
    if (s1 == s2) {
        int i;
        res = 0;
        for (i = 0; i < s1; i++) {
            if ((res = a[i] - b[i]) != 0) {
                if (((a[0] ^ b[0]) & 0x80) != 0)
                    res = a[0] & 0x80 ? -1 : 1;
                break;
            }
        }
    } else if (s1 > 5 && s2 > 5) {
        res = s1 - s2;
    } else {
        res = s2 > 5 ? 1 : -1;
    }
    if (res == 0) {
        if (deep > 1)
            res = weigh(a[2] - b[2]);
    } else if (deep & 1) {
        res = -res;
    }
    return res;
}

static long leaf(const unsigned char *v, int n, int key)
{
    long s = 0;
    int i;
    if (key % 3 == 0)
        s = 1;
    for (i = 0; i < n; i++)
        if (v[i] == key)
            break;
    if (i % 2 == 0)
        s += i;
    return s;
}

static long exits(const unsigned char *v, int n, int key)
{
    long s = key % 3 == 1 ? 1 : 0;
    int i = 0;
    if (n > 4)
        s += 2;
    while (i < n) {
        if (v[i] == key + 1)
            return s + i;
        if (v[i] > key + 200)
            goto far;
        i++;
    }
    if (s > 1)
        s -= 1;
far:
    if (s % 2 == 0)
        s += 5;
    return s;
}

static long declared(const unsigned char *v, int n)
{
    long s = v[0] > 100 ? 2 : 1;
    if (n > 3)
        s++;
    for (int k = 0; k < n; k++)
        if (v[k] & 1)
            s += k;
    if (s > 40)
        s /= 2;
    long t = weigh((int)s) > 9 ? s : -s;
    for (int r = 0; r < 3; r++)
        for (int q = 0; q < r; q++)
            t += q;
    if (t < 0)
        t = -t;
    return t;
}

int main(int argc, char **argv)
{
    unsigned char a[16], b[16];
    int n = argc > 1 ? atoi(argv[1]) : 20000;
    long total = 0;
    srand(11);
    for (int k = 0; k < n; k++) {
        for (int j = 0; j < 16; j++) {
            a[j] = (unsigned char)(rand() & 255);
            b[j] = (unsigned char)((j < 2 ? a[j] : rand()) & 255);
        }
        total += compare(a, b, k & 3);
        total += leaf(a, 16, b[5]);
        total += exits(a, 16, b[6]);
        total += declared(b, k % 9);
    }
    printf("%ld\n", total);
    return 0;
}
"#;

/// `-fsample-nested-runs` makes a run that holds small innermost loops
/// one event for its own sites: the sites before and after the loop are
/// observed together, the loop's sites on events of their own, each with
/// probability 1/sparsity (5 standard deviations); with
/// `-fno-sample-nested-runs` the loop ends the run and the sites on its
/// two sides are decided apart. Both keep the program's output at every
/// sparsity and gcc's warnings, count exactly at sparsity 1, and observe
/// nothing when never sampled.
#[test]
fn runs_holding_loops_are_one_event_and_their_loops_their_own() {
    let lab = Lab::new();
    lab.write("runs.c", NESTED_RUNS);
    let flags = ["-O2", "-Wall", "-Wextra", "runs.c", "-o"];
    let schemes = [
        "-fsampler-strict",
        "-fsampler-scheme=branches",
        "-fsampler-scheme=returns",
    ];
    let (warnings, expected, exact) = reference_builds(&lab, &flags, &schemes);
    assert_eq!(expected, "825900\n");
    let build = |name: &str, form: &str| -> String {
        // Regions apart from warm functions, which would observe a whole
        // call together.
        let built = lab.cc(&[
            &schemes[..],
            &["-fsampler-stats", "-fno-sample-warm-functions", form],
            &flags,
            &[name],
        ]
        .concat());
        assert_eq!(diagnostics(&built.stderr), warnings, "{form}");
        String::from_utf8_lossy(&built.stderr).into_owned()
    };
    let stats = build("nested", "-fsample-nested-runs");
    assert!(
        stats.contains(
            "(4 runs of which 1 across calls and 4 nested, 7 loops of which 3 counted (3 with the \
             plain loop), 1 across calls and 1 nested, 0 expressions, 35 sites)"
        ),
        "{stats}"
    );
    let stats = build("flat", "-fno-sample-nested-runs");
    assert!(
        stats.contains(
            "(2 runs of which 1 across calls, 7 loops of which 3 counted (3 with the plain loop), \
             1 across calls and 1 nested, 0 expressions, 28 sites)"
        ),
        "{stats}"
    );
    for build in ["nested", "flat"] {
        for sparsity in ["1", "10", "1000", "1000000000"] {
            let report = format!("{build}-{sparsity}.report");
            let env = [("SAMPLER_SPARSITY", sparsity)];
            assert_eq!(
                lab.run(build, &[], &report, &env),
                expected,
                "{build} {sparsity}"
            );
            let observed = counters(&lab.resolve(&report, &[build]));
            match sparsity {
                "1" => assert_eq!(observed, exact, "{build}"),
                // Never sampled: no jump of a FAST copy lands in a SLOW one.
                "1000000000" => {
                    assert_eq!(observed.len(), exact.len());
                    assert!(observed.values().flatten().all(|&n| n == 0), "{observed:?}");
                }
                _ => {}
            }
        }
    }
    // (site, site, observed together with nested runs, and without).
    let pairs = [
        ("s1 == s2", "res == 0", true, false),
        ("s1 == s2", "i < s1", false, false),
        ("key % 3 == 0", "i % 2 == 0", true, false),
        ("key % 3 == 0", "v[i] == key", false, false),
        ("n > 3", "s > 40", true, false),
        ("v[0] > 100", "n > 3", false, false),
    ];
    observed_together(&lab, &expected, &exact, &pairs);
}

/// Inner loops whose iterations hold named labels, as `sqlite3VdbeExec`'s
/// dispatch loop has (`seekscan_search_fail:` in a `while (1)` of one of
/// its cases): the outer iteration is still one nested region. Each of the
/// four copies of such a label (FAST and SLOW of the inner region, in FAST
/// and SLOW of the outer one) has a name of its own, and each `goto`
/// reaches the copy it is in, as does the `goto` out of an inner region to
/// a label of the outer iteration.
const LABELLED: &str = r#"#include <stdio.h>
#include <stdlib.h>

static long scan(const int *v, int n, int rounds)
{
    long found = 0;
    for (int r = 0; r < rounds; r++) {
        int i = 0;
        if (r % 3 == 0)
            found++;
        while (1) {
            if (v[i] > r % 50) {
            hit:
                found += i;
                break;
            }
            if (++i >= n) {
                if (r & 1)
                    goto hit;
                if (r % 7 == 0)
                    goto skip;
                break;
            }
        }
        if (found % 5 == 0)
            found += 2;
    skip:
        found ^= r;
    }
    return found;
}

int main(int argc, char **argv)
{
    int v[40];
    int rounds = argc > 1 ? atoi(argv[1]) : 5000;
    for (int i = 0; i < 40; i++)
        v[i] = (i * 37) % 61;
    printf("%ld\n", scan(v, 40, rounds));
    return 0;
}
"#;

/// See [`LABELLED`]: the program's output at every sparsity, exact counts
/// at sparsity 1, none never sampled, and gcc's warnings, with the outer
/// loop one nested region (nothing falls back).
#[test]
fn inner_loops_with_labels_stay_in_their_nested_region() {
    let lab = Lab::new();
    lab.write("labelled.c", LABELLED);
    let flags = ["-O2", "-Wall", "-Wextra", "labelled.c", "-o"];
    let schemes = ["-fsampler-strict", "-fsampler-scheme=branches"];
    let (warnings, expected, exact) = reference_builds(&lab, &flags, &schemes);
    assert_eq!(expected, "4155\n");
    let built = lab.cc(&[&schemes[..], &["-fsampler-stats"], &flags, &["nested"]].concat());
    assert_eq!(diagnostics(&built.stderr), warnings);
    let stats = String::from_utf8_lossy(&built.stderr);
    assert!(
        stats.contains(
            "(0 runs, 3 loops of which 1 counted (1 with the plain loop) and 1 nested, \
             0 expressions, 8 sites)"
        ) && stats.contains(", 0 fell back"),
        "{stats}"
    );
    for sparsity in ["1", "10", "1000", "1000000000"] {
        let report = format!("nested-{sparsity}.report");
        let env = [("SAMPLER_SPARSITY", sparsity)];
        assert_eq!(
            lab.run("nested", &[], &report, &env),
            expected,
            "{sparsity}"
        );
        let observed = counters(&lab.resolve(&report, &["nested"]));
        match sparsity {
            "1" => assert_eq!(observed, exact),
            // Never sampled: no jump of a FAST copy lands in a SLOW one.
            "1000000000" => {
                assert_eq!(observed.len(), exact.len());
                assert!(observed.values().flatten().all(|&n| n == 0), "{observed:?}");
            }
            _ => {}
        }
    }
}

/// The counters of `resolve-samples` output as (scheme, site index,
/// counters), sites in table order (one unit).
fn indexed(resolved: &str) -> Vec<(String, usize, Vec<u64>)> {
    let mut next: BTreeMap<String, usize> = BTreeMap::new();
    resolved
        .lines()
        .map(|line| {
            let fields: Vec<&str> = line.split('\t').collect();
            let arity = if fields[2] == "branches" { 2 } else { 3 };
            let index = next.entry(fields[2].to_owned()).or_default();
            *index += 1;
            let values = fields[fields.len() - arity..]
                .iter()
                .map(|v| v.parse().unwrap())
                .collect();
            (fields[2].to_owned(), *index - 1, values)
        })
        .collect()
}

/// `-fsampler-rates` (issue 19): TRICKY with a hand-written rates file
/// giving its sites scales 0, 1, 2, 7, 50 and 1000 in turn does what plain
/// gcc's build does at every sparsity, in each form that takes rates;
/// counts are exact at sparsity 1, sites at rate 1 (scale 0) are counted
/// on every execution at any sparsity, and `.debug_site_scales` says the
/// scale each site was built with: its own outside regions, its region's
/// (the smallest of the region's sites') inside.
#[test]
fn sampling_rates_keep_the_program_s_behaviour_and_exact_counts() {
    use sampler_formats::{Rates, RatesSource, SiteRate, observation_probability};
    const SCALES: [u32; 6] = [0, 1, 2, 7, 50, 1000];

    let lab = Lab::new();
    lab.write("tricky.c", TRICKY);
    let plain = lab
        .command("gcc")
        .args(["-O2", "-Wall", "-Wextra", "tricky.c", "-o", "plain"])
        .output()
        .unwrap();
    assert!(plain.status.success(), "{plain:?}");
    let warnings = diagnostics(&plain.stderr);
    let expected = run_with_status(&lab, "plain", "none", &[]);
    let mut args = SCHEMES.to_vec();
    args.extend(["-O2", "-Wall", "-Wextra", "tricky.c"]);
    lab.cc(&[&args[..], &["-fno-sample", "-o", "unconditional"]].concat());
    assert_eq!(
        run_with_status(&lab, "unconditional", "exact", &[]),
        expected
    );
    let exact = indexed(&lab.resolve("exact", &["unconditional"]));
    let exact_by_key = counters(&lab.resolve("exact", &["unconditional"]));

    // The rates file: every site of the unit's tables, scales in turn.
    let info = lab
        .tool("extract-section")
        .args([".debug_site_info", "unconditional"])
        .output()
        .unwrap();
    let tables = sampler_formats::read_site_table(info.stdout.as_slice()).unwrap();
    let mut sites = Vec::new();
    let mut asked: BTreeMap<(String, usize), u32> = BTreeMap::new();
    for table in &tables {
        for site in 0..table.sites.len() {
            let scale = SCALES[site % SCALES.len()];
            asked.insert((table.key.scheme.to_string(), site), scale);
            sites.push(SiteRate {
                key: table.key.clone(),
                site: site as u32,
                executions_per_run: 0.0,
                rate: observation_probability(scale, 100),
                scale,
            });
        }
    }
    sites.sort_by(|a, b| (&a.key, a.site).cmp(&(&b.key, b.site)));
    let rates = Rates {
        source: RatesSource::Runs {
            directory: "by hand".into(),
        },
        sparsity: 100,
        target: 100.0,
        budget: 100_000.0,
        runs: 1,
        expected: 0.0,
        uniform: 0.0,
        sites,
    };
    lab.write("rates.txt", &rates.to_text());

    for form in [
        "-fsample-regions",
        "-fno-sample-split-loops",
        "-fsample-whole-loops",
        "-fno-clone-regions",
    ] {
        let output = lab.cc(&[
            &args[..],
            &[form, "-fsampler-rates=rates.txt", "-o", "rated"],
        ]
        .concat());
        let output = String::from_utf8_lossy(&output.stderr);
        assert_eq!(diagnostics(output.as_bytes()), warnings, "{form}: {output}");

        // The scales built: the asked ones outside regions, the smallest
        // of a region's inside (never more than asked, 0 where asked 0).
        let section = lab
            .tool("extract-section")
            .args([".debug_site_scales", "rated"])
            .output()
            .unwrap();
        assert!(section.status.success(), "{section:?}");
        let text = String::from_utf8(section.stdout).unwrap();
        let mut built: BTreeMap<(String, usize), u32> = BTreeMap::new();
        let mut expected_text = String::new();
        for table in &tables {
            let _ = writeln!(
                expected_text,
                "<scales unit=\"{}\" scheme=\"{}\">",
                table.key.unit, table.key.scheme
            );
            for site in 0..table.sites.len() {
                let _ = writeln!(
                    expected_text,
                    "{}",
                    asked[&(table.key.scheme.to_string(), site)]
                );
            }
            expected_text.push_str("</scales>\n");
        }
        let mut scheme = String::new();
        let mut site = 0;
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("<scales unit=\"") {
                scheme = rest.split('"').nth(2).unwrap().to_owned();
                site = 0;
            } else if line != "</scales>" {
                built.insert((scheme.clone(), site), line.parse().unwrap());
                site += 1;
            }
        }
        assert_eq!(built.len(), asked.len(), "{form}: {text}");
        if form == "-fno-clone-regions" {
            // No regions: every site as asked, exactly.
            assert_eq!(text, expected_text);
        } else {
            assert_ne!(text, expected_text, "{form}: regions lower scales");
            for (key, scale) in &built {
                let wanted = asked[key];
                assert!(
                    *scale <= wanted && (wanted != 0 || *scale == 0),
                    "{form}: {key:?} built at {scale}, asked {wanted}"
                );
            }
        }

        // Every event observed at sparsity 1.
        let ones = run_with_status(&lab, "rated", "ones", &[("SAMPLER_SPARSITY", "1")]);
        assert_eq!(ones, expected, "{form}");
        let seen = counters(&lab.resolve("ones", &["rated"]));
        assert!(
            equal_but_indeterminate(&seen, &exact_by_key),
            "{form}: {seen:?}"
        );

        for sparsity in ["3", "100", "1000"] {
            for seed in ["1", "2"] {
                let env = [("SAMPLER_SPARSITY", sparsity), ("SAMPLER_SEED", seed)];
                assert_eq!(
                    run_with_status(&lab, "rated", "sparse", &env),
                    expected,
                    "{form}: sparsity {sparsity}, seed {seed}"
                );
                let observed = indexed(&lab.resolve("sparse", &["rated"]));
                assert_eq!(observed.len(), exact.len());
                for ((scheme, site, values), (_, _, all)) in observed.iter().zip(&exact) {
                    let key = (scheme.clone(), *site);
                    let (seen, total) = (values.iter().sum::<u64>(), all.iter().sum::<u64>());
                    if built[&key] == 0 {
                        assert_eq!(seen, total, "{form}: {key:?} at rate 1");
                    } else {
                        assert!(seen <= total, "{form}: {key:?}: {seen} of {total}");
                    }
                }
            }
        }
    }

    // Refused, with the reason.
    for (flags, message) in [
        (
            &["-fno-sample"][..],
            "sampler-cc: error: -fsampler-rates cannot be used with -fno-sample, which counts every event\n",
        ),
        (
            &["-fsample-sites"][..],
            "sampler-cc: error: -fsampler-rates cannot be used with -fsample-sites (use -fsample-regions, the default, or -fno-clone-regions)\n",
        ),
    ] {
        let output = lab
            .command(sampler_cc())
            .args(["-c", "tricky.c", "-fsampler-rates=rates.txt"])
            .args(flags)
            .output()
            .unwrap();
        assert!(!output.status.success());
        assert_eq!(String::from_utf8_lossy(&output.stderr), message);
    }
    lab.write(
        "bad.txt",
        "sampler-rates\t1\nsource\truns\tx\nsparsity\tmany\n",
    );
    for (file, message) in [
        ("bad.txt", "sampler-cc: error: bad.txt: line 3: "),
        (
            "missing.txt",
            "sampler-cc: error: missing.txt: No such file",
        ),
    ] {
        let output = lab
            .command(sampler_cc())
            .args(["-c", "tricky.c", &format!("-fsampler-rates={file}")])
            .output()
            .unwrap();
        assert!(!output.status.success());
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.starts_with(message), "{stderr}");
    }
}

/// `resolve-samples --estimate D`: each counter divided by its site's
/// observation probability at sparsity D, the scale read from the binary's
/// `.debug_site_scales`: a site built at rate 1 (scale 0) keeps its exact
/// count, the others are scaled up.
#[test]
fn resolve_samples_estimates_true_counts_from_the_built_scales() {
    use sampler_formats::{Rates, RatesSource, SiteRate, observation_probability};
    let lab = Lab::new();
    lab.write(
        "two.c",
        "#include <stdio.h>\n\
         static int __attribute__((noinline)) once(int n) { if (n > 1000) return 1; return 0; }\n\
         int main(void)\n\
         {\n\
         \x20   long s = 0;\n\
         \x20   for (int i = 0; i < 100000; i++)\n\
         \x20       s += i % 7;\n\
         \x20   printf(\"%ld %d\\n\", s, once((int)s));\n\
         \x20   return 0;\n\
         }\n",
    );
    let common = [
        "-fsampler-strict",
        "-fsampler-scheme=branches",
        "-fno-clone-regions",
        "-O2",
        "two.c",
    ];
    lab.cc(&[&common[..], &["-o", "plain-sampled"]].concat());
    // `once`'s condition (site 0) at rate 1, the loop's (site 1) at 1/D.
    let info = lab
        .tool("extract-section")
        .args([".debug_site_info", "plain-sampled"])
        .output()
        .unwrap();
    let tables = sampler_formats::read_site_table(info.stdout.as_slice()).unwrap();
    assert_eq!(tables.len(), 1);
    let key = tables[0].key.clone();
    assert_eq!(tables[0].sites.len(), 2);
    let sites = [(0u32, 0u32), (1, 1)]
        .map(|(site, scale)| SiteRate {
            key: key.clone(),
            site,
            executions_per_run: 0.0,
            rate: observation_probability(scale, 1000),
            scale,
        })
        .to_vec();
    let rates = Rates {
        source: RatesSource::Runs {
            directory: "by hand".into(),
        },
        sparsity: 1000,
        target: 100.0,
        budget: 100_000.0,
        runs: 1,
        expected: 0.0,
        uniform: 0.0,
        sites,
    };
    lab.write("rates.txt", &rates.to_text());
    lab.cc(&[&common[..], &["-fsampler-rates=rates.txt", "-o", "rated"]].concat());
    let env = [("SAMPLER_SPARSITY", "1000"), ("SAMPLER_SEED", "3")];
    assert_eq!(lab.run("rated", &[], "rated.report", &env), "299995 1\n");
    let samples = lab
        .tool("extract-report")
        .arg("samples")
        .stdin(std::fs::File::open(lab.path("rated.report")).unwrap())
        .output()
        .unwrap();
    let estimate = |args: &[&str]| -> Vec<Vec<String>> {
        let mut resolve = lab
            .tool("resolve-samples")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        std::io::Write::write_all(resolve.stdin.as_mut().unwrap(), &samples.stdout).unwrap();
        let output = resolve.wait_with_output().unwrap();
        assert!(output.status.success(), "{output:?}");
        String::from_utf8(output.stdout)
            .unwrap()
            .lines()
            // The two counters (false, true) end each line.
            .map(|line| {
                let fields: Vec<&str> = line.split('\t').collect();
                fields[fields.len() - 2..]
                    .iter()
                    .map(|f| (*f).to_owned())
                    .collect()
            })
            .collect()
    };
    let counted = estimate(&["rated"]);
    let estimated = estimate(&["--estimate", "1000", "rated"]);
    // Site 0, at rate 1: counted exactly once (true), estimated the same.
    assert_eq!(counted[0], ["0", "1"]);
    assert_eq!(estimated[0], ["0.0", "1.0"]);
    // Site 1, the loop's condition at 1/1000: each count times 1000.
    let times_1000: Vec<String> = counted[1]
        .iter()
        .map(|count| format!("{:.1}", count.parse::<f64>().unwrap() * 1000.0))
        .collect();
    assert_eq!(estimated[1], times_1000);
    // 100,000 true evaluations: about 100 observed (within 5 sd).
    let true_count: f64 = counted[1][1].parse().unwrap();
    assert!((true_count - 100.0).abs() <= 5.0 * 10.0, "{counted:?}");
}

/// A loop whose iterations hold weighty calls (a region across calls, on
/// the global countdown) and a run after it.
const ACROSS: &str = r#"extern int work(int);
int total;
int across(int n)
{
    int s = 0;
    for (int i = 0; i < n; i++) {
        if (i % 3 == 0)
            s += work(i);
        else
            s -= work(-i);
    }
    if (s > 100)
        total++;
    return s;
}
"#;

/// The global countdown's test is one `sub` on the thread-local in memory
/// and a branch on its sign (runtime ABI 2: the countdown runs out when it
/// goes negative). A test against zero after the decrement (ABI 1's
/// `--cbi_countdown <= 0`) costs a load, a `sub`, a store and a `test`
/// before the branch, which this test tells apart.
#[test]
fn the_global_countdown_is_decremented_in_memory() {
    let lab = Lab::new();
    lab.write("across.c", ACROSS);
    for pic in ["-fno-pic", "-fPIC"] {
        lab.cc(&[
            "-fsampler-strict",
            ALL_SCHEMES[0],
            ALL_SCHEMES[1],
            // The per-region form's test (a warm function's is its dispatch).
            "-fno-sample-warm-functions",
            "-O2",
            pic,
            "-S",
            "across.c",
            "-o",
            "across.s",
        ]);
        let assembly = std::fs::read_to_string(lab.path("across.s")).unwrap();
        let body: Vec<&str> = assembly
            .lines()
            .skip_while(|line| *line != "across:")
            .take_while(|line| !line.contains(".size\tacross"))
            .map(str::trim)
            .collect();
        let thread_local: Vec<&str> = body
            .iter()
            .copied()
            .filter(|line| line.contains("%fs:"))
            .collect();
        // The loop's iteration and the run after it: two events, each a
        // `subl` in memory followed by `js`, and no other access.
        assert_eq!(thread_local.len(), 2, "{pic}: {body:#?}");
        for line in &thread_local {
            assert!(line.starts_with("subl\t$1, %fs:"), "{pic}: {body:#?}");
        }
        for (i, line) in body.iter().enumerate() {
            if line.contains("%fs:") {
                assert!(body[i + 1].starts_with("js\t"), "{pic}: {body:#?}");
            }
        }
    }
}

/// Functions whose sites all lie in one run of their whole body: `store`
/// (two branches), called from a loop, which a null `slot` crashes, and
/// `where`, which names itself.
const OUTLINED: &str = r#"#include <stdio.h>
#include <stdlib.h>

static int total;
const char *where(int v);

void store(int *slot /* (NULL: it's the crash), */, int value)
{
    if (value > 2)
        *slot = value;
    else if (value > 0)
        total += value;
}

int main(int argc, char **argv)
{
    int cells[4] = {0};
    int n = argc > 1 ? atoi(argv[1]) : 3;
    for (int i = 0; i < n; i++)
        store(i < 3 ? &cells[i] : NULL, i);
    printf("%d %d %s %s\n", total, cells[2], where(2), where(1));
    return 0;
}

const char *where(int v)
{
    if (v > 1)
        return __func__;
    if (v > 0)
        return __PRETTY_FUNCTION__;
    return "nowhere";
}
"#;

/// `-fsample-outlined-functions`: `store`'s SLOW copy is the function
/// `store__cbi_slow` (not with `-fno-sample-outlined-functions`); every
/// call observes at sparsity 1, exactly as `-fno-sample` counts; the copy
/// of `where` names `where` (`__func__`, `__PRETTY_FUNCTION__`); and a
/// crash in the SLOW copy resolves to the same frames as a crash in FAST
/// (`store`, then `main`). The comment in `store`'s parameter list, with
/// its parenthesis, comma and apostrophe, does not keep it in one piece.
#[test]
fn a_function_that_is_one_run_keeps_its_slow_copy_out_of_line() {
    let lab = Lab::new();
    lab.write("outlined.c", OUTLINED);
    let build = |output: &str, form: &str| {
        lab.cc(&[
            "-fsampler-strict",
            "-fsampler-scheme=branches",
            "-O2",
            "-g",
            form,
            "outlined.c",
            "-o",
            output,
        ]);
    };
    build("outlined", "-fsample-outlined-functions");
    build("inline", "-fno-sample-outlined-functions");
    build("exact", "-fno-sample");
    assert_eq!(
        slow_copies(&lab, "outlined"),
        ["store__cbi_slow", "where__cbi_slow"]
    );
    assert!(slow_copies(&lab, "inline").is_empty());

    let sparsity_1 = [("SAMPLER_SPARSITY", "1")];
    assert_eq!(
        lab.run("outlined", &[], "outlined.report", &sparsity_1),
        "3 0 where where\n"
    );
    assert_eq!(
        lab.run("exact", &[], "exact.report", &[]),
        "3 0 where where\n"
    );
    let observed = counters(&lab.resolve("outlined.report", &["outlined"]));
    let exact = counters(&lab.resolve("exact.report", &["exact"]));
    assert_eq!(observed, exact);
    // `value > 2` false three times, `value > 0` false once and true twice.
    let store = |line: u32, predicate: &str| {
        exact[&format!(
            "branches\tLAB/outlined.c\t{line}\tstore\t{}\t{predicate}\t#1",
            line - 8
        )]
            .clone()
    };
    assert_eq!(store(9, "value > 2"), [3, 0]);
    assert_eq!(store(11, "value > 0"), [1, 2]);

    // Sampled (sparsity 1) the crash is in `store__cbi_slow`; never
    // sampled, in `store`'s FAST copy, which gcc may inline into `main`.
    for sparsity in ["1", "1000000000"] {
        assert_eq!(
            crash_frames(&lab, "outlined", &["4"], sparsity),
            ["store outlined.c:10", "main outlined.c:20"],
            "sparsity {sparsity}"
        );
    }
}

/// The outlined SLOW copies (`F__cbi_slow`) among `program`'s symbols.
fn slow_copies(lab: &Lab, program: &str) -> Vec<String> {
    lab.symbols(program)
        .into_iter()
        .map(|(_, name)| name)
        .filter(|name| name.contains("__cbi_slow"))
        .collect()
}

/// The first two frames, as `function file:line`, of the backtrace that
/// `program args` reports when it dies of SIGSEGV at `sparsity`.
fn crash_frames(lab: &Lab, program: &str, args: &[&str], sparsity: &str) -> Vec<String> {
    let (_, resolved) = lab.crash_resolved(
        program,
        args,
        &[("SAMPLER_SPARSITY", sparsity)],
        &format!("{program}-crash-{sparsity}.report"),
        "resolve-backtrace",
    );
    resolved
        .lines()
        .skip(1)
        .take(2)
        .map(|line| {
            let fields: Vec<&str> = line.split('\t').collect();
            let function = fields[2].trim_start_matches("(inlined) ");
            let file = fields[3].rsplit('/').next().unwrap();
            format!("{function} {file}:{}", fields[4])
        })
        .collect()
}

/// `add` is outlined, and its first call is the thread's first event,
/// whose draw (never sampled) declines: `add__cbi_slow` gives the event
/// back and calls `add` again, which runs FAST. `unused` is never called,
/// so its copy does not call it (gcc still says it is unused).
const REENTERED: &str = r#"#include <stdio.h>

static int total;

static int add(int *slot, int value)
{
    if (value > 2)
        *slot += value;
    else if (value > 0)
        total += value;
    return *slot + total;
}

static void unused(int *slot, int value)
{
    if (value > 2)
        *slot = value;
    else if (value > 0)
        total += value;
}

int main(int argc, char **argv)
{
    int cell = 1;
    int *slots[2] = { &cell, (int *)0 };
    int sum = add(slots[argc - 1], 3);
    sum += add(&cell, 1);
    printf("%d %d %d\n", sum, cell, total);
    return 0;
}
"#;

/// A declined draw in an outlined function's SLOW copy calls the function
/// again, which takes the same event back: outputs are gcc's at each
/// sparsity, counters at sparsity 1 those of `-fno-sample`, a crash in
/// the FAST code it runs is in `add` called from `main` (at `-O1`, without
/// tail calls, through a frame of the copy between two of `add`), and
/// gcc's warnings stay its own (`unused` is still unused).
#[test]
fn a_declined_draw_in_an_outlined_copy_runs_the_functions_fast_code() {
    let lab = Lab::new();
    lab.write("reentered.c", REENTERED);
    let flags = ["-Wall", "-Wextra", "-g", "reentered.c", "-o"];
    let plain = lab.gcc(&[&["-O2"][..], &flags, &["plain"]].concat());
    let expected = diagnostics(&plain.stderr);
    assert_eq!(
        expected,
        [
            "reentered.c:22:27: warning: unused parameter ‘argv’ [-Wunused-parameter]",
            "reentered.c:14:13: warning: ‘unused’ defined but not used [-Wunused-function]",
        ]
    );
    assert_eq!(lab.run("plain", &[], "plain.report", &[]), "9 4 1\n");
    let scheme = "-fsampler-scheme=branches";
    let exact = lab.cc(&[&[scheme, "-fno-sample", "-O2"][..], &flags, &["exact"]].concat());
    assert_eq!(diagnostics(&exact.stderr), expected);
    lab.run("exact", &[], "exact.report", &[]);
    let exact = counters(&lab.resolve("exact.report", &["exact"]));
    assert_eq!(exact.len(), 4, "{exact:?}");
    for level in ["-O1", "-O2"] {
        let program = format!("sampled{level}");
        let ours = lab.cc(&[&[scheme, level][..], &flags, &[&program]].concat());
        assert_eq!(diagnostics(&ours.stderr), expected, "{level}");
        assert_eq!(slow_copies(&lab, &program), ["add__cbi_slow"], "{level}");
        for sparsity in ["1", "10", "1000000000"] {
            let report = format!("{program}-{sparsity}.report");
            let env = [("SAMPLER_SPARSITY", sparsity)];
            assert_eq!(lab.run(&program, &[], &report, &env), "9 4 1\n");
            if sparsity == "1" {
                assert_eq!(counters(&lab.resolve(&report, &[&program])), exact);
            }
        }
        assert_eq!(
            crash_frames(&lab, &program, &["x"], "1000000000"),
            ["add reentered.c:8", "main reentered.c:26"],
            "{level}"
        );
    }
}

const INLINED: &str = r#"#include <stdio.h>
#include <stdlib.h>

struct cell { int flags; long value; };

static struct cell *prepare(struct cell *cells, int at)
{
    struct cell *out = &cells[at];
    if (out->flags & 4)
        out->value = 0;
    out->flags = 1;
    return out;
}

long run(struct cell *cells, int n)
{
    long total = 0;
    for (int i = 0; i < n; i++)
        total += prepare(cells, i)->value;
    return total + prepare(cells, 1)->value * 2;
}

int main(int argc, char **argv)
{
    struct cell cells[8] = {{4, 7}, {0, 3}};
    int n = argc > 1 ? atoi(argv[1]) : 2;
    printf("%ld\n", run(cells, n < 8 ? n : 8));
    return 0;
}
"#;

/// `-fsample-inline-allowance`: plain `gcc -O2` inlines `prepare` into
/// `run`; sampled, its test and call make it too big for gcc's
/// `max-inline-insns-auto` unless the limit grows by their size, as it
/// does with the flag (off by default). A limit the command sets is left
/// alone. The programs print what plain gcc's does.
#[test]
fn the_inlining_limit_allows_for_the_sampling_wrapper() {
    let lab = Lab::new();
    lab.write("inlined.c", INLINED);
    let out_of_line = |program: &str| -> bool {
        lab.symbols(program)
            .iter()
            .any(|(kind, name)| kind == "t" && name == "prepare")
    };
    lab.gcc(&["-O2", "inlined.c", "-o", "plain"]);
    assert!(!out_of_line("plain"));
    let plain = lab.command(lab.path("plain")).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&plain.stdout), "9\n");
    for (program, flags, called) in [
        ("allowed", &["-fsample-inline-allowance"][..], false),
        ("default", &[][..], true),
        ("limited", &["-fno-sample-inline-allowance"][..], true),
        (
            "user",
            &[
                "-fsample-inline-allowance",
                "--param=max-inline-insns-auto=15",
            ][..],
            true,
        ),
        (
            "user-o3",
            &[
                "-fsample-inline-allowance",
                "-O3",
                "--param",
                "max-inline-insns-auto=15",
            ][..],
            true,
        ),
    ] {
        let mut args = vec!["-fsampler-strict", "-fsampler-scheme=branches", "-O2"];
        args.extend(flags);
        args.extend(["inlined.c", "-o", program]);
        lab.cc(&args);
        assert_eq!(out_of_line(program), called, "{program}");
        for sparsity in ["1", "1000"] {
            assert_eq!(
                lab.run(program, &[], "report", &[("SAMPLER_SPARSITY", sparsity)]),
                "9\n",
                "{program}"
            );
        }
    }
}

/// The counters of the one site of `counts` whose predicate is
/// `predicate`.
fn site_of(counts: &BTreeMap<String, Vec<u64>>, predicate: &str) -> Vec<u64> {
    let found: Vec<&Vec<u64>> = counts
        .iter()
        .filter(|(key, _)| key.contains(&format!("\t{predicate}\t")))
        .map(|(_, values)| values)
        .collect();
    assert_eq!(found.len(), 1, "{predicate}: {counts:?}");
    found[0].clone()
}

/// Runs each of `programs` at `sparsity` under seed 5, checks that it
/// prints `expected`, and returns their counters.
fn seeded_runs(
    lab: &Lab,
    programs: &[&str],
    sparsity: &str,
    expected: &str,
) -> Vec<BTreeMap<String, Vec<u64>>> {
    let env = [("SAMPLER_SPARSITY", sparsity), ("SAMPLER_SEED", "5")];
    programs
        .iter()
        .map(|&program| {
            let report = format!("{program}-{sparsity}.report");
            assert_eq!(
                lab.run(program, &[], &report, &env),
                expected,
                "{program} {sparsity}"
            );
            counters(&lab.resolve(&report, &[program]))
        })
        .collect()
}

/// A loop `-fsample-warm-loops` samples whole once warm: innermost, no
/// call, `goto` or `return`. Its test `a[i] > phase` is false in every
/// iteration of the first 1024 executions and true in every iteration of
/// the 2000 after them.
const WARM: &str = r#"#include <stdio.h>

static int phase;

static int scan(const int *a, int n)
{
    int hits = 0;
    for (int i = 0; i < n; i++)
        if (a[i] > phase)
            hits++;
    return hits;
}

int main(int argc, char **argv)
{
    int a[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    long total = 0;
    (void)argv;
    for (int r = 0; r < 3024; r++) {
        phase = r < 1024 ? 100 : argc - 1;
        total += scan(a, 8);
    }
    printf("%ld\n", total);
    return 0;
}
"#;

/// `-fsample-warm-loops`: a small loop runs per iteration for its first
/// 1024 executions, exactly as without the flag (the same seed samples
/// the same events there), then one decision per execution, every
/// iteration of a sampled execution observed: `a[i] > phase`, true only
/// after the warm-up, is observed true a multiple of 8 times (the loop's
/// 8 iterations), where per iteration it is not. Outputs are plain gcc's,
/// counts at sparsity 1 `-fno-sample`'s, gcc's warnings its own.
#[test]
fn warm_loops_run_whole_after_their_first_executions() {
    let lab = Lab::new();
    lab.write("warm.c", WARM);
    let flags = ["-O2", "-Wall", "-Wextra", "warm.c", "-o"];
    let schemes = ["-fsampler-strict", "-fsampler-scheme=branches"];
    let (warnings, expected, exact) = reference_builds(&lab, &flags, &schemes);
    assert_eq!(expected, "16000\n");
    // Warm loops apart from warm functions.
    let schemes = [&schemes[..], &["-fno-sample-warm-functions"]].concat();
    let per_iteration = lab.cc(&[&schemes[..], &flags, &["iterations"]].concat());
    assert_eq!(diagnostics(&per_iteration.stderr), warnings);
    let built = lab.cc(&[
        &schemes[..],
        &["-fsample-warm-loops", "-fsampler-stats"],
        &flags,
        &["warm"],
    ]
    .concat());
    assert_eq!(diagnostics(&built.stderr), warnings);
    let stats = String::from_utf8_lossy(&built.stderr);
    assert!(
        stats.contains(
            "2 loops of which 1 counted (1 with the plain loop), 1 across calls and 1 warm, \
             0 expressions, 4 sites)"
        ),
        "{stats}"
    );
    for sparsity in ["1", "10", "1000000000"] {
        let observed = seeded_runs(&lab, &["warm", "iterations"], sparsity, &expected);
        let [warm, iterations] = &observed[..] else {
            unreachable!()
        };
        let [whole_false, whole_true] = site_of(warm, "a[i] > phase")[..] else {
            unreachable!()
        };
        let [each_false, each_true] = site_of(iterations, "a[i] > phase")[..] else {
            unreachable!()
        };
        match sparsity {
            "1" => {
                assert_eq!(warm, &exact);
                assert_eq!((whole_false, whole_true), (8192, 16000));
            }
            "10" => {
                // The warm-up is the per-iteration form, event for event.
                assert_eq!(whole_false, each_false);
                assert!((700..=940).contains(&whole_false), "{whole_false}");
                // After it, whole executions: 2,000 at 1/10, 8 each:
                // 1,600 ± 5σ (σ = 8·√180 ≈ 107).
                assert_eq!(whole_true % 8, 0, "{whole_true}");
                assert!((1063..=2137).contains(&whole_true), "{whole_true}");
                assert_ne!(each_true % 8, 0, "{each_true}");
            }
            _ => {
                assert!(warm.values().flatten().all(|&n| n == 0), "{warm:?}");
            }
        }
    }
}

/// Functions `-fsample-warm-functions` runs plain once warm: a leaf with
/// a counted loop (`scan`), a `void` function with calls, `__func__` and a
/// constant static table (`note`, which calls another warm function), a
/// loop left by a `goto` with a label and two `return`s (`find`), a K&R
/// definition (`twice`); and one it leaves (`depth`, recursive).
/// Every function is called 3024 times; the tests are false in every
/// call before the 1024th and true after it.
const WARM_FUNCTIONS: &str = r#"#include <stdio.h>

static int phase;
static long total;

static int scan(const int *a, int n)
{
    int hits = 0;
    for (int i = 0; i < n; i++)
        if (a[i] > phase)
            hits++;
    return hits;
}

static int twice(n)
    int n;
{
    int s = 0;
    for (int k = 0; k < 2; k++)
        s += n > 2 ? n : 0;
    return s;
}

static void note(int hits)
{
    static const int bonus[2] = {3, 5};
    if (hits > 4)
        total += hits + bonus[hits & 1];
    else
        total += 1;
    for (int k = 0; k < hits; k += 4)
        total += k + twice(k);
    if (__func__[0] != 'n')
        puts(__func__);
}

static int find(const int *a, int n, int key)
{
    int i = 0;
    while (i < n) {
        if (a[i] == key)
            goto found;
        i++;
    }
    return -1;
found:
    return i;
}

static int depth(int n)
{
    int d = 0;
    for (int k = 0; k < 2; k++)
        d += k;
    return n > 0 ? d + depth(n - 1) : d;
}

int main(int argc, char **argv)
{
    int a[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    (void)argv;
    for (int r = 0; r < 3024; r++) {
        phase = r < 1024 ? 100 : argc - 1;
        note(scan(a, 8));
        total += find(a, 8, r < 1024 ? 100 : 5) + depth(r & 1) + twice(r & 3);
    }
    printf("%ld\n", total);
    return 0;
}
"#;

/// `-fsample-warm-functions` (the default): each function samples per
/// region for its first 1024 calls, exactly as without the flag (the
/// same seed samples the same events there), then one decision per call,
/// every site of a
/// sampled call observed: `a[i] > phase`, true only after the warm-up, is
/// observed true a multiple of 8 times (the loop's 8 iterations), where
/// per region it is not; each test keeps 1/sparsity within 5σ. Outputs
/// are plain gcc's, counts at sparsity 1 `-fno-sample`'s, gcc's warnings
/// its own, and `depth` (recursive) is left per region.
#[test]
fn warm_functions_run_plain_after_their_first_calls() {
    let lab = Lab::new();
    lab.write("warmf.c", WARM_FUNCTIONS);
    let flags = [
        "-O2",
        "-Wall",
        "-Wextra",
        "-Wold-style-definition",
        "-Wstrict-prototypes",
        "warmf.c",
        "-o",
    ];
    let schemes = [
        "-fsampler-strict",
        "-fsampler-scheme=branches",
        "-fsampler-scheme=returns",
        "-fsampler-scheme=scalar-pairs",
    ];
    let (warnings, expected, exact) = reference_builds(&lab, &flags, &schemes);
    // gcc's words on the K&R definition, which its copies must not lose.
    assert_eq!(
        warnings,
        [
            "warmf.c:15:12: warning: function declaration isn’t a prototype [-Wstrict-prototypes]",
            "warmf.c:15:12: warning: old-style function definition [-Wold-style-definition]",
        ]
    );
    assert_eq!(expected, "63072\n");
    let per_region = lab.cc(&[
        &schemes[..],
        &["-fno-sample-warm-functions"],
        &flags,
        &["regions"],
    ]
    .concat());
    assert_eq!(diagnostics(&per_region.stderr), warnings);
    // The default.
    let built = lab.cc(&[&schemes[..], &["-fsampler-stats"], &flags, &["warm"]].concat());
    assert_eq!(diagnostics(&built.stderr), warnings);
    let stats = String::from_utf8_lossy(&built.stderr);
    assert!(
        stats.contains("4 warm functions (2 not: 1 main, 1 recursive)"),
        "{stats}"
    );
    for sparsity in ["1", "10", "1000000000"] {
        let observed = seeded_runs(&lab, &["warm", "regions"], sparsity, &expected);
        let [warm, regions] = &observed[..] else {
            unreachable!()
        };
        let scan = site_of(warm, "a[i] > phase");
        let per_region = site_of(regions, "a[i] > phase");
        match sparsity {
            "1" => {
                assert_eq!(warm, &exact);
                assert_eq!(scan, [8192, 16000]);
            }
            "10" => {
                // The warm-up is the per-region form, event for event:
                // 8,192 events at 1/10, 819 ± 5σ (σ = √(8192·0.09) ≈ 27.2).
                assert_eq!(scan[0], per_region[0]);
                assert!((684..=955).contains(&scan[0]), "{scan:?}");
                // After it, whole calls: 2,000 at 1/10, 8 each: 1,600 ±
                // 5σ (σ = 8·√180 ≈ 107).
                assert_eq!(scan[1] % 8, 0, "{scan:?}");
                assert!((1063..=2137).contains(&scan[1]), "{scan:?}");
                assert_ne!(per_region[1] % 8, 0, "{per_region:?}");
                // One observation per call: 2,000 after the warm-up at
                // 1/10, 200 ± 5σ (σ = √180 ≈ 13.4), and 1,024 before it.
                let [before, after] = site_of(warm, "hits > 4")[..] else {
                    unreachable!()
                };
                assert!((133..=267).contains(&after), "{after}");
                assert!((35..=170).contains(&before), "{before}");
                // `a[i] == key` is true once per call after the warm-up.
                let [_, found] = site_of(warm, "a[i] == key")[..] else {
                    unreachable!()
                };
                assert!((133..=267).contains(&found), "{found}");
            }
            _ => {
                assert!(warm.values().flatten().all(|&n| n == 0), "{warm:?}");
            }
        }
    }
}

/// A function whose site's code begins on `__func__` (the condition
/// `__func__ == name`), which a warm copy would rename at the same offset,
/// and any function under a rates file keep per-region sampling with
/// `-fsample-warm-functions`; the others are warm. Both builds compile
/// (under `-fsampler-strict`) and print plain gcc's output.
const WARM_FUNCTIONS_LEFT: &str = r#"#include <stdio.h>

static int named(const char *name)
{
    int n = 0;
    for (int k = 0; k < 3; k++)
        if (__func__ == name)
            n += k;
    return n;
}

static int plain(int v)
{
    int n = 0;
    for (int k = 0; k < 3; k++)
        n += k < v;
    return n;
}

int main(int argc, char **argv)
{
    (void)argv;
    printf("%d\n", named("named") + plain(argc));
    return 0;
}
"#;

#[test]
fn warm_functions_leave_sites_on_func_and_rates_alone() {
    let lab = Lab::new();
    lab.write("left.c", WARM_FUNCTIONS_LEFT);
    let flags = ["-O2", "left.c", "-o"];
    let plain = lab.gcc(&[&flags[..], &["plain"]].concat());
    assert!(plain.status.success());
    let expected = lab.run("plain", &[], "none", &[]);
    assert_eq!(expected, "1\n");
    let schemes = [
        "-fsampler-strict",
        "-fsampler-scheme=branches",
        "-fsample-warm-functions",
        "-fsampler-stats",
    ];
    let built = lab.cc(&[&schemes[..], &flags, &["warm"]].concat());
    let stats = String::from_utf8_lossy(&built.stderr);
    assert!(
        stats.contains(", 1 warm functions (1 not: 1 a site at __func__);"),
        "{stats}"
    );
    assert_eq!(lab.run("warm", &[], "warm.report", &[]), expected);
    // No site listed: every site at scale 1, as without the file.
    lab.write(
        "left.rates",
        "sampler-rates\t1\nsource\truns\truns\nsparsity\t100\ntarget\t100\n\
         budget\t100000\nruns\t1\nexpected\t0\t0\n",
    );
    let rated = lab.cc(&[
        &schemes[..],
        &["-fsampler-rates=left.rates"],
        &flags,
        &["rated"],
    ]
    .concat());
    let stats = String::from_utf8_lossy(&rated.stderr);
    assert!(!stats.contains("warm functions"), "{stats}");
    assert_eq!(lab.run("rated", &[], "rated.report", &[]), expected);
}
