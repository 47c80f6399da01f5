//! What each scheme observes, site by site, in small programs run with
//! every event counted (`-fno-sample`).

use super::*;

/// Builds `source` as `prog` with `flags`, runs it with `args`, and
/// returns the resolved sites (without the binary, unit and lab columns).
pub(super) fn sites_of(source: &str, flags: &[&str], args: &[&str]) -> Vec<String> {
    let lab = Lab::new();
    lab.write("prog.c", source);
    let mut all = vec![
        "-fsampler-strict",
        "-fno-sample",
        "-O1",
        "-Wall",
        "-Wextra",
        "prog.c",
        "-o",
        "prog",
    ];
    all.extend_from_slice(flags);
    lab.cc(&all);
    lab.run("prog", args, "report", &[]);
    lab.resolve("report", &["prog"])
        .lines()
        .map(|line| {
            line.split('\t')
                .skip(2)
                .filter(|f| *f != "LAB/prog.c")
                .collect::<Vec<_>>()
                .join(" | ")
        })
        .collect()
}

#[test]
fn branches_observe_each_leaf_of_a_condition() {
    let source = r#"#include <stdlib.h>
int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 0, hits = 0;
    if (!(n > 2 && n < 9) || n == 42)
        hits++;
    while (n-- > 0) {
        if (!n) hits += 2;
        do hits++; while (hits < 0);
    }
    for (;;) { if (hits > 100) break; hits += 50; }
    for (int i = 0; i < (int)sizeof(n > 0 ? 1 : 2); i++) hits++;
    return hits && argc == 2 ? 0 : 1;
}
"#;
    assert_eq!(
        sites_of(source, &["-fsampler-scheme=branches"], &["3"]),
        [
            "branches | 4 | main | 1 | argc > 1 | 0 | 1",
            "branches | 5 | main | 2 | n > 2 | 0 | 1",
            "branches | 5 | main | 2 | n < 9 | 0 | 1",
            "branches | 5 | main | 2 | n == 42 | 1 | 0",
            "branches | 7 | main | 4 | n-- > 0 | 1 | 3",
            "branches | 8 | main | 6 | !n | 2 | 1",
            "branches | 9 | main | 8 | hits < 0 | 3 | 0",
            "branches | 11 | main | 12 | hits > 100 | 2 | 1",
            "branches | 12 | main | 15 | i < (int)sizeof(n > 0 ? 1 : 2) | 1 | 4",
            "branches | 13 | main | 17 | hits | 0 | 1",
            "branches | 13 | main | 17 | argc == 2 | 0 | 1",
        ]
    );
}

#[test]
fn returns_observe_integer_enum_and_pointer_results() {
    let source = r#"#include <stdio.h>
#include <stdlib.h>
#include <string.h>
enum color { RED = -1, GREEN, BLUE };
static enum color pick(int i) { return (enum color)(i - 1); }
static unsigned long count(const char *s) { return strlen(s); }
static double half(int x) { return x / 2.0; }
static void nothing(void) {}
int main(int argc, char **argv)
{
    int (*cmp)(const char *, const char *) = strcmp;
    char *found = strchr(argv[0], '/');
    for (int i = 0; i < 3; i++)
        pick(i);
    count("");
    nothing();
    printf("%d\n", cmp("a", "b") < 0 && half(argc) > 0 && getenv("SAMPLER_NOPE") == NULL && found);
    return sizeof(strlen("x")) == 8 ? 0 : 1;
}
"#;
    assert_eq!(
        sites_of(source, &["-fsampler-scheme=returns"], &[]),
        [
            "returns | 6 | count | 1 | strlen | 0 | 1 | 0",
            "returns | 12 | main | 2 | strchr | 0 | 0 | 1",
            "returns | 14 | main | 4 | pick | 1 | 1 | 1",
            "returns | 15 | main | 5 | count | 0 | 1 | 0",
            "returns | 17 | main | 7 | printf | 0 | 0 | 1",
            "returns | 17 | main | 7 | cmp | 1 | 0 | 0",
            "returns | 17 | main | 7 | getenv | 0 | 1 | 0",
        ]
    );
}

#[test]
fn functions_the_user_did_not_write_or_asked_to_skip_have_no_sites() {
    let source = r#"#include <ctype.h>
#include <stdbool.h>
#include "sys.h"
extern inline __attribute__((gnu_inline)) int twice(int x) { return x > 0 ? 2 * x : 0; }
int twice(int x);
__attribute__((no_instrument_function)) static int quiet(int x) { return x > 1 ? 1 : 0; }
static bool loud(int x) { return x > 1 ? true : false; }
int main(int argc, char **argv)
{
    (void)argv;
    return quiet(argc) + loud(argc) + from_system_header(argc) + isdigit(argc) - 2;
}
int twice(int x) { return x; }
"#;
    let lab = Lab::new();
    lab.write("prog.c", source);
    std::fs::create_dir(lab.path("sys")).unwrap();
    lab.write(
        "sys/sys.h",
        "static inline int from_system_header(int x) { return x > 3 ? 1 : 0; }\n",
    );
    lab.cc(&[
        "-fsampler-strict",
        "-fsampler-scheme=branches",
        "-fsampler-scheme=function-entries",
        "-isystem",
        "sys",
        "-O1",
        "prog.c",
        "-o",
        "prog",
    ]);
    assert_eq!(
        lab.site_table("prog"),
        lines(&[
            "<sites unit=\"UNIT\" scheme=\"branches\">",
            "LAB/prog.c\t7\tloud\t1\tx > 1",
            "</sites>",
            "<sites unit=\"UNIT\" scheme=\"function-entries\">",
            "LAB/prog.c\t7\tloud\t0",
            "LAB/prog.c\t8\tmain\t0",
            "LAB/prog.c\t13\ttwice\t0",
            "</sites>",
        ])
    );
}

#[test]
fn filters_and_relative_paths() {
    let source = "static int a(int x) { return x > 1 ? x : 0; }\nstatic int b(int x) { return x > 2 ? x : 0; }\n\
                  int main(int argc, char **argv) { (void)argv; return a(argc) + b(argc) > 0 ? 0 : 1; }\n";
    let lab = Lab::new();
    lab.write("prog.c", source);
    lab.cc(&[
        "-fsampler-strict",
        "-fsampler-scheme=branches",
        "-frelative-paths",
        "-fexclude-location=prog.c:1",
        "-finclude-function=b",
        "-finclude-file=*/prog.c",
        "-fexclude-function=*",
        "-c",
        "prog.c",
    ]);
    assert_eq!(
        lab.site_table("prog.o"),
        lines(&[
            "<sites unit=\"UNIT\" scheme=\"branches\">",
            "prog.c\t2\tb\t1\tx > 2",
            "prog.c\t3\tmain\t2\ta(argc) + b(argc) > 0",
            "</sites>"
        ])
    );
}
