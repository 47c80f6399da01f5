//! The schemes that observe data: `scalar-pairs`, `bounds`, `float-kinds`,
//! `atoms`, `g-object-unref`, and site timestamps.

use super::schemes::sites_of;
use super::*;

#[test]
fn scalar_pairs_compare_with_what_is_in_scope_and_initialised() {
    let source = r#"#include <stdio.h>
int limit = 10;
static unsigned ulimit = 3;
volatile int vglobal = 7;
const int cglobal = 4;

static void touch(int *p) { *p = 1; }

int work(int n, const char *s)
{
    int count = 0;
    int later;
    int addr;
    unsigned u = 2;
    char *t = 0;
    volatile int v = 1;
    touch(&addr);
    if (n > 1)
        later = n;
    count = later;
    {
        int count = 5;
        const int c = n;
        count += c;
        u = (unsigned)count;
    }
    t = (char *)s;
    return count + (int)u + (t != 0) + addr + v;
}

int after = 3;

int main(int argc, char **argv)
{
    int r = work(argc + 1, argv[0]);
    printf("%d %d\n", r, limit + cglobal + (int)ulimit + after + vglobal);
    return 0;
}
"#;
    // Locals that may be unset are compared only when asked
    // (`-fcompare-uninitialized`, the original's default).
    let expected = [
        "scalar-pairs | 11 | work | 1 | count | local | direct | limit | global | 1 | 0 | 0",
        "scalar-pairs | 11 | work | 1 | count | local | direct | cglobal | global | 1 | 0 | 0",
        "scalar-pairs | 11 | work | 1 | count | local | direct | n | local-init | 1 | 0 | 0",
        "scalar-pairs | 11 | work | 1 | count | local | direct | 0LL | const | 0 | 1 | 0",
        "scalar-pairs | 14 | work | 4 | u | local | direct | ulimit | global | 1 | 0 | 0",
        "scalar-pairs | 14 | work | 4 | u | local | direct | 0ULL | const | 0 | 0 | 1",
        "scalar-pairs | 15 | work | 5 | t | local | direct | (char *)0 | const | 0 | 1 | 0",
        "scalar-pairs | 19 | work | 9 | later | local | direct | limit | global | 1 | 0 | 0",
        "scalar-pairs | 19 | work | 9 | later | local | direct | cglobal | global | 1 | 0 | 0",
        "scalar-pairs | 19 | work | 9 | later | local | direct | n | local-init | 0 | 1 | 0",
        "scalar-pairs | 19 | work | 9 | later | local | direct | count | local-init | 0 | 0 | 1",
        "scalar-pairs | 19 | work | 9 | later | local | direct | addr | local-init | 0 | 0 | 1",
        "scalar-pairs | 19 | work | 9 | later | local | direct | 0LL | const | 0 | 0 | 1",
        "scalar-pairs | 20 | work | 10 | count | local | direct | limit | global | 1 | 0 | 0",
        "scalar-pairs | 20 | work | 10 | count | local | direct | cglobal | global | 1 | 0 | 0",
        "scalar-pairs | 20 | work | 10 | count | local | direct | n | local-init | 0 | 1 | 0",
        "scalar-pairs | 20 | work | 10 | count | local | direct | count | local-init | 0 | 0 | 1",
        "scalar-pairs | 20 | work | 10 | count | local | direct | later | local-uninit | 0 | 1 | 0",
        "scalar-pairs | 20 | work | 10 | count | local | direct | addr | local-init | 0 | 0 | 1",
        "scalar-pairs | 20 | work | 10 | count | local | direct | 0LL | const | 0 | 0 | 1",
        "scalar-pairs | 22 | work | 12 | count | local | direct | limit | global | 1 | 0 | 0",
        "scalar-pairs | 22 | work | 12 | count | local | direct | cglobal | global | 0 | 0 | 1",
        "scalar-pairs | 22 | work | 12 | count | local | direct | n | local-init | 0 | 0 | 1",
        "scalar-pairs | 22 | work | 12 | count | local | direct | later | local-uninit | 0 | 0 | 1",
        "scalar-pairs | 22 | work | 12 | count | local | direct | addr | local-init | 0 | 0 | 1",
        "scalar-pairs | 22 | work | 12 | count | local | direct | 0LL | const | 0 | 0 | 1",
        "scalar-pairs | 23 | work | 13 | c | local | direct | limit | global | 1 | 0 | 0",
        "scalar-pairs | 23 | work | 13 | c | local | direct | cglobal | global | 1 | 0 | 0",
        "scalar-pairs | 23 | work | 13 | c | local | direct | n | local-init | 0 | 1 | 0",
        "scalar-pairs | 23 | work | 13 | c | local | direct | later | local-uninit | 0 | 1 | 0",
        "scalar-pairs | 23 | work | 13 | c | local | direct | addr | local-init | 0 | 0 | 1",
        "scalar-pairs | 23 | work | 13 | c | local | direct | count | local-init | 1 | 0 | 0",
        "scalar-pairs | 23 | work | 13 | c | local | direct | 0LL | const | 0 | 0 | 1",
        "scalar-pairs | 24 | work | 14 | count | local | direct | limit | global | 1 | 0 | 0",
        "scalar-pairs | 24 | work | 14 | count | local | direct | cglobal | global | 0 | 0 | 1",
        "scalar-pairs | 24 | work | 14 | count | local | direct | n | local-init | 0 | 0 | 1",
        "scalar-pairs | 24 | work | 14 | count | local | direct | later | local-uninit | 0 | 0 | 1",
        "scalar-pairs | 24 | work | 14 | count | local | direct | addr | local-init | 0 | 0 | 1",
        "scalar-pairs | 24 | work | 14 | count | local | direct | count | local-init | 0 | 0 | 1",
        "scalar-pairs | 24 | work | 14 | count | local | direct | c | local-init | 0 | 0 | 1",
        "scalar-pairs | 24 | work | 14 | count | local | direct | 0LL | const | 0 | 0 | 1",
        "scalar-pairs | 25 | work | 15 | u | local | direct | ulimit | global | 0 | 0 | 1",
        "scalar-pairs | 25 | work | 15 | u | local | direct | u | local-init | 0 | 0 | 1",
        "scalar-pairs | 25 | work | 15 | u | local | direct | 0ULL | const | 0 | 0 | 1",
        "scalar-pairs | 27 | work | 16 | t | local | direct | t | local-init | 0 | 0 | 1",
        "scalar-pairs | 27 | work | 16 | t | local | direct | (char *)0 | const | 0 | 0 | 1",
        "scalar-pairs | 35 | main | 1 | r | local | direct | limit | global | 0 | 0 | 1",
        "scalar-pairs | 35 | main | 1 | r | local | direct | cglobal | global | 0 | 0 | 1",
        "scalar-pairs | 35 | main | 1 | r | local | direct | after | global | 0 | 0 | 1",
        "scalar-pairs | 35 | main | 1 | r | local | direct | argc | local-init | 0 | 0 | 1",
        "scalar-pairs | 35 | main | 1 | r | local | direct | 0LL | const | 0 | 0 | 1",
    ];
    assert_eq!(
        sites_of(
            source,
            &["-fsampler-scheme=scalar-pairs", "-fcompare-uninitialized"],
            &[]
        ),
        expected
    );
    let initialised: Vec<&str> = expected
        .into_iter()
        .filter(|site| !site.contains(" | local-uninit | "))
        .collect();
    assert_eq!(
        sites_of(source, &["-fsampler-scheme=scalar-pairs"], &[]),
        initialised
    );
}

#[test]
fn scalar_pairs_widened_to_fields_indices_pointers_and_constants() {
    let source = r#"struct box { int size; int items[4]; };
int main(int argc, char **argv)
{
    struct box b = { 0, { 0 } };
    struct box *p = &b;
    int k = 3;
    (void)argv;
    b.size = k - 1;
    b.items[argc] = 7;
    p->size += 2;
    *(&k) = -1;
    switch (argc) {
    case 1:
        k = 0;
        break;
    default:
        goto out;
    }
out:
    return b.size - 4 + k;
}
"#;
    assert_eq!(
        sites_of(
            source,
            &[
                "-fsampler-scheme=scalar-pairs",
                "-fcompare-constants",
                "-fassign-into-field",
                "-fassign-into-index",
                "-fassign-across-pointer",
            ],
            &[]
        ),
        [
            "scalar-pairs | 5 | main | 2 | p | local | direct | (struct box *)0 | const | 0 | 0 | 1",
            "scalar-pairs | 6 | main | 3 | k | local | direct | argc | local-init | 0 | 0 | 1",
            "scalar-pairs | 6 | main | 3 | k | local | direct | -1LL | const | 0 | 0 | 1",
            "scalar-pairs | 6 | main | 3 | k | local | direct | 0LL | const | 0 | 0 | 1",
            "scalar-pairs | 6 | main | 3 | k | local | direct | 1LL | const | 0 | 0 | 1",
            "scalar-pairs | 6 | main | 3 | k | local | direct | 2LL | const | 0 | 0 | 1",
            "scalar-pairs | 6 | main | 3 | k | local | direct | 3LL | const | 0 | 1 | 0",
            "scalar-pairs | 6 | main | 3 | k | local | direct | 4LL | const | 1 | 0 | 0",
            "scalar-pairs | 6 | main | 3 | k | local | direct | 7LL | const | 1 | 0 | 0",
            "scalar-pairs | 8 | main | 5 | b.size | local | field | argc | local-init | 0 | 0 | 1",
            "scalar-pairs | 8 | main | 5 | b.size | local | field | k | local-init | 1 | 0 | 0",
            "scalar-pairs | 8 | main | 5 | b.size | local | field | -1LL | const | 0 | 0 | 1",
            "scalar-pairs | 8 | main | 5 | b.size | local | field | 0LL | const | 0 | 0 | 1",
            "scalar-pairs | 8 | main | 5 | b.size | local | field | 1LL | const | 0 | 0 | 1",
            "scalar-pairs | 8 | main | 5 | b.size | local | field | 2LL | const | 0 | 1 | 0",
            "scalar-pairs | 8 | main | 5 | b.size | local | field | 3LL | const | 1 | 0 | 0",
            "scalar-pairs | 8 | main | 5 | b.size | local | field | 4LL | const | 1 | 0 | 0",
            "scalar-pairs | 8 | main | 5 | b.size | local | field | 7LL | const | 1 | 0 | 0",
            "scalar-pairs | 9 | main | 6 | b.items[argc] | local | index | argc | local-init | 0 | 0 | 1",
            "scalar-pairs | 9 | main | 6 | b.items[argc] | local | index | k | local-init | 0 | 0 | 1",
            "scalar-pairs | 9 | main | 6 | b.items[argc] | local | index | -1LL | const | 0 | 0 | 1",
            "scalar-pairs | 9 | main | 6 | b.items[argc] | local | index | 0LL | const | 0 | 0 | 1",
            "scalar-pairs | 9 | main | 6 | b.items[argc] | local | index | 1LL | const | 0 | 0 | 1",
            "scalar-pairs | 9 | main | 6 | b.items[argc] | local | index | 2LL | const | 0 | 0 | 1",
            "scalar-pairs | 9 | main | 6 | b.items[argc] | local | index | 3LL | const | 0 | 0 | 1",
            "scalar-pairs | 9 | main | 6 | b.items[argc] | local | index | 4LL | const | 0 | 0 | 1",
            "scalar-pairs | 9 | main | 6 | b.items[argc] | local | index | 7LL | const | 0 | 1 | 0",
            "scalar-pairs | 10 | main | 7 | p->size | mem | field | argc | local-init | 0 | 0 | 1",
            "scalar-pairs | 10 | main | 7 | p->size | mem | field | k | local-init | 0 | 0 | 1",
            "scalar-pairs | 10 | main | 7 | p->size | mem | field | -1LL | const | 0 | 0 | 1",
            "scalar-pairs | 10 | main | 7 | p->size | mem | field | 0LL | const | 0 | 0 | 1",
            "scalar-pairs | 10 | main | 7 | p->size | mem | field | 1LL | const | 0 | 0 | 1",
            "scalar-pairs | 10 | main | 7 | p->size | mem | field | 2LL | const | 0 | 0 | 1",
            "scalar-pairs | 10 | main | 7 | p->size | mem | field | 3LL | const | 0 | 0 | 1",
            "scalar-pairs | 10 | main | 7 | p->size | mem | field | 4LL | const | 0 | 1 | 0",
            "scalar-pairs | 10 | main | 7 | p->size | mem | field | 7LL | const | 1 | 0 | 0",
            "scalar-pairs | 11 | main | 8 | *(&k) | mem | direct | argc | local-init | 1 | 0 | 0",
            "scalar-pairs | 11 | main | 8 | *(&k) | mem | direct | k | local-init | 1 | 0 | 0",
            "scalar-pairs | 11 | main | 8 | *(&k) | mem | direct | -1LL | const | 0 | 1 | 0",
            "scalar-pairs | 11 | main | 8 | *(&k) | mem | direct | 0LL | const | 1 | 0 | 0",
            "scalar-pairs | 11 | main | 8 | *(&k) | mem | direct | 1LL | const | 1 | 0 | 0",
            "scalar-pairs | 11 | main | 8 | *(&k) | mem | direct | 2LL | const | 1 | 0 | 0",
            "scalar-pairs | 11 | main | 8 | *(&k) | mem | direct | 3LL | const | 1 | 0 | 0",
            "scalar-pairs | 11 | main | 8 | *(&k) | mem | direct | 4LL | const | 1 | 0 | 0",
            "scalar-pairs | 11 | main | 8 | *(&k) | mem | direct | 7LL | const | 1 | 0 | 0",
            "scalar-pairs | 14 | main | 12 | k | local | direct | argc | local-init | 1 | 0 | 0",
            "scalar-pairs | 14 | main | 12 | k | local | direct | k | local-init | 0 | 0 | 1",
            "scalar-pairs | 14 | main | 12 | k | local | direct | -1LL | const | 0 | 0 | 1",
            "scalar-pairs | 14 | main | 12 | k | local | direct | 0LL | const | 0 | 1 | 0",
            "scalar-pairs | 14 | main | 12 | k | local | direct | 1LL | const | 1 | 0 | 0",
            "scalar-pairs | 14 | main | 12 | k | local | direct | 2LL | const | 1 | 0 | 0",
            "scalar-pairs | 14 | main | 12 | k | local | direct | 3LL | const | 1 | 0 | 0",
            "scalar-pairs | 14 | main | 12 | k | local | direct | 4LL | const | 1 | 0 | 0",
            "scalar-pairs | 14 | main | 12 | k | local | direct | 7LL | const | 1 | 0 | 0",
        ]
    );
}

#[test]
fn bounds_keep_minimum_and_maximum_under_threads() {
    let source = r#"#include <pthread.h>
#include <stdio.h>
enum level { LOW = -2, HIGH = 5 };
long shared;
unsigned char small;
static void *run(void *arg)
{
    long base = (long)arg;
    for (int i = 0; i < 1000; i++) {
        shared = base * 1000 + i;
        small = (unsigned char)(i % 200);
    }
    return 0;
}
int main(void)
{
    pthread_t threads[4];
    enum level level = LOW;
    const char *name = 0;
    for (long t = 0; t < 4; t++)
        pthread_create(&threads[t], 0, run, (void *)(t - 2));
    for (int t = 0; t < 4; t++)
        pthread_join(threads[t], 0);
    if (shared > 1000000)
        name = "never";
    level = HIGH;
    printf("%d %s\n", level, name ? name : "none");
    return 0;
}
"#;
    assert_eq!(
        sites_of(source, &["-fsampler-scheme=bounds", "-pthread"], &[]),
        [
            "bounds | 8 | run | 1 | base | local | direct | -2 | 1",
            "bounds | 9 | run | 2 | i | local | direct | 0 | 0",
            "bounds | 9 | run | 2 | i | local | direct | 1 | 1000",
            "bounds | 10 | run | 4 | shared | global | direct | -2000 | 1999",
            "bounds | 11 | run | 5 | small | global | direct | 0 | 199",
            "bounds | 18 | main | 2 | level | local | direct | -2 | -2",
            "bounds | 19 | main | 3 | name | local | direct | (nil) | (nil)",
            "bounds | 20 | main | 4 | t | local | direct | 0 | 0",
            "bounds | 20 | main | 4 | t | local | direct | 1 | 4",
            "bounds | 22 | main | 6 | t | local | direct | 0 | 0",
            "bounds | 22 | main | 6 | t | local | direct | 1 | 4",
            "bounds | 25 | main | 9 | name | local | direct | 0xffffffffffffffff | (nil)",
            "bounds | 26 | main | 10 | level | local | direct | 5 | 5",
        ]
    );
}

#[test]
fn float_kinds_classify_in_the_value_s_own_type() {
    let source = r#"#include <float.h>
#include <math.h>
#include <stdio.h>
static double last;
static void classify(double x, float f)
{
    last = x;
    f = f / 2;
    printf("%g %g\n", last, (double)f);
}
int main(void)
{
    double values[] = { -INFINITY, -1.0, -DBL_MIN / 4, -0.0, NAN, 0.0, DBL_MIN / 4, 1.0, INFINITY };
    for (int i = 0; i < 9; i++)
        classify(values[i], FLT_MIN);
    long double wide = LDBL_MAX;
    wide *= 2;
    return wide > 0 ? 0 : 1;
}
"#;
    assert_eq!(
        sites_of(source, &["-fsampler-scheme=float-kinds"], &[]),
        [
            "float-kinds | 5 | classify | 0 | x | local | direct | 1 | 1 | 1 | 1 | 1 | 1 | 1 | 1 | 1",
            "float-kinds | 5 | classify | 0 | f | local | direct | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 9 | 0",
            "float-kinds | 7 | classify | 1 | last | global | direct | 1 | 1 | 1 | 1 | 1 | 1 | 1 | 1 | 1",
            "float-kinds | 8 | classify | 2 | f | local | direct | 0 | 0 | 0 | 0 | 0 | 0 | 9 | 0 | 0",
            "float-kinds | 16 | main | 4 | wide | local | direct | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 1 | 0",
            "float-kinds | 17 | main | 5 | wide | local | direct | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 1",
        ]
    );
}

#[test]
fn atoms_see_which_thread_touched_a_location_last() {
    let source = r#"#include <pthread.h>
int counter;
static __thread int mine;
static void *bump(void *arg)
{
    int *cell = arg;
    counter++;
    *cell = counter;
    mine = 1;
    return 0;
}
int main(void)
{
    int local = 0, cell = 0;
    pthread_t thread;
    counter = 1;
    pthread_create(&thread, 0, bump, &cell);
    pthread_join(thread, 0);
    local = counter + cell + mine;
    return local == 4 ? 0 : 1;
}
"#;
    assert_eq!(
        sites_of(source, &["-fsampler-scheme=atoms", "-pthread"], &[]),
        [
            "atoms | 7 | bump | 2 | counter | read | 0 | 1",
            "atoms | 7 | bump | 2 | counter | write | 1 | 0",
            "atoms | 8 | bump | 3 | *cell | write | 1 | 0",
            "atoms | 8 | bump | 3 | counter | read | 1 | 0",
            "atoms | 16 | main | 3 | counter | write | 1 | 0",
            "atoms | 18 | main | 5 | thread | read | 1 | 0",
            "atoms | 19 | main | 6 | counter | read | 0 | 1",
            "atoms | 19 | main | 6 | cell | read | 0 | 1",
        ]
    );
}

#[test]
fn g_object_unref_classifies_reference_counts() {
    let flags = pkg_config("gobject-2.0");
    let source = r#"#include <glib-object.h>
int main(void)
{
    GObject *object = g_object_new(G_TYPE_OBJECT, NULL);
    GParamSpec *spec = g_param_spec_int("n", "n", "n", 0, 9, 1, G_PARAM_READWRITE);
    g_object_ref(object);
    for (int i = 0; i < 2; i++)
        g_object_unref(object);
    g_object_unref((gpointer)spec);
    g_param_spec_unref(spec);
    return 0;
}
"#;
    let mut all = vec!["-fsampler-scheme=g-object-unref"];
    all.extend(flags.iter().map(String::as_str));
    let in_main: Vec<String> = sites_of(source, &all, &[])
        .into_iter()
        .filter(|site| site.contains(" | main | "))
        .collect();
    assert_eq!(
        in_main,
        [
            "g-object-unref | 8 | main | 5 | object | 0 | 1 | 1 | 0",
            "g-object-unref | 9 | main | 6 | (gpointer)spec | 0 | 0 | 0 | 1",
        ]
    );
}

/// `pkg-config --cflags --libs PACKAGE`, split.
fn pkg_config(package: &str) -> Vec<String> {
    let output = Command::new("pkg-config")
        .args(["--cflags", "--libs", package])
        .output()
        .expect("pkg-config runs (apt-get install pkg-config libglib2.0-dev)");
    assert!(
        output.status.success(),
        "pkg-config {package}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout)
        .unwrap()
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}

#[test]
fn timestamps_order_first_and_last_observations() {
    let lab = Lab::new();
    lab.write(
        "prog.c",
        "static int callee(int x) { return x + 1; }\n\
         int main(void)\n{\n    int s = 0;\n    for (int i = 0; i < 3; i++)\n        s = callee(s);\n    return s - 3;\n}\n",
    );
    lab.cc(&[
        "-fsampler-strict",
        "-fno-sample",
        "-fsampler-scheme=function-entries",
        "-ftimestamp-first",
        "-ftimestamp-last",
        "prog.c",
        "-o",
        "prog",
    ]);
    lab.run("prog", &[], "report", &[]);
    // main is observed first (tick 1); callee's three entries are ticks
    // 2, 3 and 4.
    assert_eq!(
        lab.resolve_with("resolve-timestamps", "report", &["prog"]),
        lines(&[
            "2\tprog\tUNIT\tfunction-entries\tfirst\tLAB/prog.c\t1\tcallee\t0",
            "1\tprog\tUNIT\tfunction-entries\tfirst\tLAB/prog.c\t2\tmain\t0",
            "4\tprog\tUNIT\tfunction-entries\tlast\tLAB/prog.c\t1\tcallee\t0",
            "1\tprog\tUNIT\tfunction-entries\tlast\tLAB/prog.c\t2\tmain\t0",
        ])
    );
}

/// Sampled, an assignment's `scalar-pairs` candidates are one event, one
/// check and one call of a group helper: each site still takes its own
/// first and last timestamps, in the candidates' order.
#[test]
fn candidates_observed_together_keep_a_timestamp_each() {
    let lab = Lab::new();
    lab.write(
        "prog.c",
        "int g = 4;\nint main(void)\n{\n    int x = g + 1;\n    return x - 5;\n}\n",
    );
    lab.cc(&[
        "-fsampler-strict",
        "-fsampler-scheme=scalar-pairs",
        "-ftimestamp-first",
        "-ftimestamp-last",
        "-O2",
        "prog.c",
        "-o",
        "prog",
    ]);
    lab.run("prog", &[], "report", &[("SAMPLER_SPARSITY", "1")]);
    let site = "scalar-pairs\t{when}\tLAB/prog.c\t4\tmain\t1\tx\tlocal\tdirect";
    let line = |tick: u32, when: &str, candidate: &str| {
        format!(
            "{tick}\tprog\tUNIT\t{}\t{candidate}",
            site.replace("{when}", when)
        )
    };
    assert_eq!(
        lab.resolve_with("resolve-timestamps", "report", &["prog"]),
        lines(&[
            &line(1, "first", "g\tglobal"),
            &line(2, "first", "0LL\tconst"),
            &line(1, "last", "g\tglobal"),
            &line(2, "last", "0LL\tconst"),
        ])
    );
}

/// The initialisation analysis follows loops, `switch`, `goto`, `&&` and
/// `?:`, and a declaration in a loop starts uninitialised each time.
#[test]
fn scalar_pairs_follow_the_control_flow() {
    let source = r#"int main(int argc, char **argv)
{
    int a, b, c, d, e;
    (void)argv;
    switch (argc) {
    case 1:
        a = 1;
        break;
    default:
        a = 2;
    }
    if (argc > 5 && (b = argc) > 6)
        c = 0;
again:
    d = a;
    if (d < 2)
        goto again2;
    e = argc ? (c = 1) : 2;
    goto done;
again2:
    a = 3;
    goto again;
done:
    for (int i = 0; i < 2; i++) {
        int fresh;
        if (i)
            fresh = i;
        else
            fresh = 0;
    }
    if (argc > 100)
        return b + c;
    return a + d + e == 7 ? 0 : 1;
}
"#;
    let kinds: Vec<String> = sites_of(
        source,
        &["-fsampler-scheme=scalar-pairs", "-fcompare-uninitialized"],
        &[],
    )
    .into_iter()
    .filter(|site| !site.contains(" | const | "))
    .map(|site| {
        let fields: Vec<&str> = site.split(" | ").collect();
        format!("{} {} {} {}", fields[1], fields[4], fields[7], fields[8])
    })
    .collect();
    assert_eq!(
        kinds,
        [
            "7 a argc local-init",
            "10 a argc local-init",
            "12 b argc local-init",
            "12 b a local-init",
            "13 c argc local-init",
            "13 c a local-init",
            "13 c b local-init",
            "15 d argc local-init",
            "15 d a local-init",
            "15 d b local-uninit",
            "15 d c local-uninit",
            "15 d d local-uninit",
            "18 e argc local-init",
            "18 e a local-init",
            "18 e b local-uninit",
            "18 e c local-uninit",
            "18 e d local-init",
            "18 c argc local-init",
            "18 c a local-init",
            "18 c b local-uninit",
            "18 c c local-uninit",
            "18 c d local-init",
            "21 a argc local-init",
            "21 a a local-init",
            "21 a b local-uninit",
            "21 a c local-uninit",
            "21 a d local-init",
            "24 i argc local-init",
            "24 i a local-init",
            "24 i b local-uninit",
            "24 i c local-uninit",
            "24 i d local-init",
            "24 i e local-init",
            "24 i argc local-init",
            "24 i a local-init",
            "24 i b local-uninit",
            "24 i c local-uninit",
            "24 i d local-init",
            "24 i e local-init",
            "24 i i local-init",
            "27 fresh argc local-init",
            "27 fresh a local-init",
            "27 fresh b local-uninit",
            "27 fresh c local-uninit",
            "27 fresh d local-init",
            "27 fresh e local-init",
            "27 fresh i local-init",
            "29 fresh argc local-init",
            "29 fresh a local-init",
            "29 fresh b local-uninit",
            "29 fresh c local-uninit",
            "29 fresh d local-init",
            "29 fresh e local-init",
            "29 fresh i local-init",
        ]
    );
}

/// Sampled at sparsity 1, every scheme counts exactly what `-fno-sample`
/// counts.
#[test]
fn sampled_at_sparsity_one_counts_every_event() {
    let source = r#"#include <stdio.h>
struct pair { int a; double b; };
int hits;
static int step(struct pair *p, int n)
{
    int total = 0;
    for (int i = 0; i < n; i++) {
        total += i;
        p->a = total;
        p->b = p->b / 2 + i;
        hits++;
    }
    return total;
}
int main(int argc, char **argv)
{
    struct pair pair = { 0, 1.0 };
    int n = step(&pair, argc + 4);
    (void)argv;
    printf("%d %d %g %d\n", n, pair.a, pair.b, hits);
    return 0;
}
"#;
    let lab = Lab::new();
    lab.write("prog.c", source);
    let mut resolved = Vec::new();
    for sampling in ["-fno-sample", "-fsample"] {
        let mut args = EVERY_SCHEME.to_vec();
        args.extend([sampling, "-O2", "-Wall", "-Wextra", "prog.c", "-o", "prog"]);
        lab.cc(&args);
        let output = lab.run("prog", &[], "report", &[("SAMPLER_SPARSITY", "1")]);
        assert_eq!(output, "10 10 6.15625 5\n");
        resolved.push(lab.resolve("report", &["prog"]));
    }
    assert_eq!(resolved[0], resolved[1]);
    assert_eq!(resolved[0].lines().count(), 62, "{}", resolved[0]);
}

/// An increment whose value is assigned (`r = n++`) is two sites of one
/// extent: both counted, the assignment's around the increment's.
#[test]
fn scalar_pairs_of_increments_used_as_values() {
    let source = "#include <stdio.h>
int g;
int f(int n, int y) { int r = n++; int x; x = y++; g = x--; if (r++ > 2) r += y--; return r + x + n + y; }
int main(void) { printf(\"%d %d\\n\", f(3, 4), g); return 0; }
";
    let lab = Lab::new();
    lab.write("inc.c", source);
    let mut resolved = Vec::new();
    for sampling in ["-fno-sample", "-fsample"] {
        lab.cc(&[
            "-fsampler-strict",
            "-fsampler-scheme=scalar-pairs",
            "-fsampler-scheme=branches",
            sampling,
            "-O2",
            "-Wall",
            "inc.c",
            "-o",
            "inc",
        ]);
        let output = lab.run("inc", &[], "report", &[("SAMPLER_SPARSITY", "1")]);
        assert_eq!(output, "20 0\n");
        resolved.push(lab.resolve("report", &["inc"]));
    }
    assert_eq!(resolved[0], resolved[1]);
    let lines: Vec<&str> = resolved[0].lines().collect();
    assert_eq!(lines.len(), 49, "{}", resolved[0]);
    let site = |line: &str| line.split('\t').skip(2).collect::<Vec<_>>().join("\t");
    assert_eq!(
        lines[..8].iter().map(|l| site(l)).collect::<Vec<_>>(),
        [
            "scalar-pairs\tLAB/inc.c\t3\tf\t1\tr\tlocal\tdirect\tg\tglobal\t0\t0\t1",
            "scalar-pairs\tLAB/inc.c\t3\tf\t1\tr\tlocal\tdirect\tn\tlocal-init\t1\t0\t0",
            "scalar-pairs\tLAB/inc.c\t3\tf\t1\tr\tlocal\tdirect\ty\tlocal-init\t1\t0\t0",
            "scalar-pairs\tLAB/inc.c\t3\tf\t1\tr\tlocal\tdirect\t0LL\tconst\t0\t0\t1",
            "scalar-pairs\tLAB/inc.c\t3\tf\t1\tn\tlocal\tdirect\tg\tglobal\t0\t0\t1",
            "scalar-pairs\tLAB/inc.c\t3\tf\t1\tn\tlocal\tdirect\tn\tlocal-init\t0\t0\t1",
            "scalar-pairs\tLAB/inc.c\t3\tf\t1\tn\tlocal\tdirect\ty\tlocal-init\t0\t1\t0",
            "scalar-pairs\tLAB/inc.c\t3\tf\t1\tn\tlocal\tdirect\t0LL\tconst\t0\t0\t1",
        ]
    );
}

/// A unit of a two-unit program whose globals with external linkage are
/// read and written by the other unit (issue 17, item 4).
pub(super) const EXTERNAL_GLOBALS: &str = r#"int g = 5;
int tentative;
extern int declared_only;
extern int elsewhere;
static int s_unread = 2;
static int s_read = 3;
long other_type = 7;
int f(int a)
{
    int x;
    x = a + 1;
    return x + s_read;
}
int late = 1;
"#;

/// CBI's candidate rule: a global with external linkage that the unit
/// defines (`g`, `tentative`) is compared whenever its type is identical,
/// even though the unit never reads it; `static` globals only when read
/// (`s_read`, not `s_unread`, whose -Wunused-variable stays: see
/// diagnostics.rs), `extern` declarations only when read (`declared_only`
/// is defined nowhere: comparing with it would not link), globals declared
/// after the function (`late`) never.
#[test]
fn scalar_pairs_compare_with_external_globals_the_unit_never_reads() {
    let lab = Lab::new();
    lab.write("lib.c", EXTERNAL_GLOBALS);
    lab.write(
        "main.c",
        r#"#include <stdio.h>
extern int g, tentative, late;
int elsewhere = 4;
int f(int);
int main(int argc, char **argv)
{
    (void)argv;
    tentative = argc * 10;
    printf("%d %d\n", f(argc), g + tentative + elsewhere + late);
    return 0;
}
"#,
    );
    lab.cc(&[
        "-fsampler-strict",
        "-fno-sample",
        "-fsampler-scheme=scalar-pairs",
        "-O1",
        "-Wall",
        "-Wextra",
        "lib.c",
        "main.c",
        "-o",
        "prog",
    ]);
    assert_eq!(lab.run("prog", &[], "report", &[]), "5 20\n");
    let rows: Vec<String> = lab
        .resolve("report", &["prog"])
        .lines()
        .map(|line| line.split('\t').skip(2).collect::<Vec<_>>().join(" | "))
        .collect();
    assert_eq!(
        rows,
        [
            "scalar-pairs | LAB/main.c | 8 | main | 2 | tentative | global | direct | g | global | 0 | 0 | 1",
            "scalar-pairs | LAB/main.c | 8 | main | 2 | tentative | global | direct | tentative | global | 0 | 0 | 1",
            "scalar-pairs | LAB/main.c | 8 | main | 2 | tentative | global | direct | late | global | 0 | 0 | 1",
            "scalar-pairs | LAB/main.c | 8 | main | 2 | tentative | global | direct | elsewhere | global | 0 | 0 | 1",
            "scalar-pairs | LAB/main.c | 8 | main | 2 | tentative | global | direct | argc | local-init | 0 | 0 | 1",
            "scalar-pairs | LAB/main.c | 8 | main | 2 | tentative | global | direct | 0LL | const | 0 | 0 | 1",
            "scalar-pairs | LAB/lib.c | 11 | f | 2 | x | local | direct | g | global | 1 | 0 | 0",
            "scalar-pairs | LAB/lib.c | 11 | f | 2 | x | local | direct | tentative | global | 1 | 0 | 0",
            "scalar-pairs | LAB/lib.c | 11 | f | 2 | x | local | direct | s_read | global | 1 | 0 | 0",
            "scalar-pairs | LAB/lib.c | 11 | f | 2 | x | local | direct | a | local-init | 0 | 0 | 1",
            "scalar-pairs | LAB/lib.c | 11 | f | 2 | x | local | direct | 0LL | const | 0 | 0 | 1",
        ]
    );
}
