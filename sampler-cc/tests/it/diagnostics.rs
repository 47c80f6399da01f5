//! gcc's diagnostics on shapes of real programs that instrumentation once
//! changed (issue 20): each file compiled by gcc and by sampler-cc with
//! every scheme, sampled (both forms) and not, must give gcc's warnings
//! exactly, which are themselves asserted so the test cannot pass vacuously.

use super::*;

/// The sampling forms every case is compiled with.
const SAMPLINGS: [&str; 3] = ["-fsample", "-fsample-sites", "-fno-sample"];

/// Compiles `file` with gcc and `flags`, asserts its diagnostics are
/// `expected`, then with sampler-cc (every scheme, each sampling form) and
/// asserts the same diagnostics.
fn same_warnings(lab: &Lab, file: &str, flags: &[&str], expected: &[&str]) {
    same_warnings_with(lab, &EVERY_SCHEME, file, flags, expected);
}

/// [`same_warnings`] with sampler-cc's `schemes` (and other flags of its
/// own) in place of every scheme.
fn same_warnings_with(lab: &Lab, schemes: &[&str], file: &str, flags: &[&str], expected: &[&str]) {
    let object = format!("{file}.o");
    let mut args = vec!["-Wall", "-Wextra", "-c", file, "-o", &object];
    args.extend_from_slice(flags);
    let plain = lab.gcc(&args);
    assert_eq!(diagnostics(&plain.stderr), expected, "gcc {flags:?}");
    for sampling in SAMPLINGS {
        let mut ours_args = schemes.to_vec();
        ours_args.push(sampling);
        ours_args.extend_from_slice(&args);
        let ours = lab.cc(&ours_args);
        assert_eq!(
            diagnostics(&ours.stderr),
            expected,
            "{file} with {flags:?} {sampling}:\n{}",
            String::from_utf8_lossy(&ours.stderr)
        );
    }
}

/// What `-fsampler-stats` prints for `file` compiled with `schemes`.
fn stats(lab: &Lab, file: &str, schemes: &[&str]) -> String {
    let schemes: Vec<String> = schemes
        .iter()
        .map(|scheme| format!("-fsampler-scheme={scheme}"))
        .collect();
    let mut args = vec![
        "-fsampler-strict",
        "-fsampler-stats",
        "-c",
        file,
        "-o",
        "stats.o",
    ];
    args.extend(schemes.iter().map(String::as_str));
    String::from_utf8_lossy(&lab.cc(&args).stderr).into_owned()
}

/// A global named like a library function: clang's builtin `exp` must not
/// make the front end reject the function that indexes the array.
#[test]
fn a_global_named_like_a_library_function_is_instrumented() {
    let lab = Lab::new();
    lab.write(
        "exp.c",
        "unsigned char exp[4];\n\
         void fill(int n)\n\
         {\n    int i;\n    for (i = 0; i < n; i++)\n        exp[i & 3] = i;\n}\n",
    );
    for optimise in ["-O0", "-O2"] {
        same_warnings(
            &lab,
            "exp.c",
            &[optimise],
            &[
                "exp.c:1:15: warning: built-in function ‘exp’ declared as non-function \
               [-Wbuiltin-declaration-mismatch]",
            ],
        );
    }
    lab.cc(&[
        "-fsampler-strict",
        "-fsampler-scheme=branches",
        "-fsampler-scheme=scalar-pairs",
        "-fassign-into-index",
        "-c",
        "exp.c",
        "-o",
        "exp.o",
    ]);
    let table = lab.site_table("exp.o");
    assert_eq!(
        table,
        "<sites unit=\"UNIT\" scheme=\"scalar-pairs\">\n\
         LAB/exp.c\t5\tfill\t2\ti\tlocal\tdirect\tn\tlocal-init\n\
         LAB/exp.c\t5\tfill\t2\ti\tlocal\tdirect\t0LL\tconst\n\
         LAB/exp.c\t5\tfill\t2\ti\tlocal\tdirect\tn\tlocal-init\n\
         LAB/exp.c\t5\tfill\t2\ti\tlocal\tdirect\ti\tlocal-init\n\
         LAB/exp.c\t5\tfill\t2\ti\tlocal\tdirect\t0LL\tconst\n\
         LAB/exp.c\t6\tfill\t3\texp[i & 3]\tglobal\tindex\t0ULL\tconst\n\
         </sites>\n\
         <sites unit=\"UNIT\" scheme=\"branches\">\n\
         LAB/exp.c\t5\tfill\t2\ti < n\n\
         </sites>\n"
    );
}

/// A variable only ever assigned keeps gcc's -Wunused-but-set-variable,
/// and one never used at all its -Wunused-variable; both are still sites.
#[test]
fn set_but_unused_variables_keep_their_warnings() {
    let lab = Lab::new();
    lab.write(
        "unused.c",
        "extern char lookup(const char *);\n\
         struct node { struct node *next; };\n\
         void scan(struct node *list)\n\
         {\n\
         \x20   char tmp;\n\
         \x20   struct node *last;\n\
         \x20   tmp = lookup(\"e\");\n\
         \x20   tmp = lookup(\"l\");\n\
         \x20   last = list;\n\
         \x20   int never = lookup(\"n\");\n\
         }\n",
    );
    for optimise in ["-O0", "-O2"] {
        same_warnings(
            &lab,
            "unused.c",
            &[optimise],
            &[
                "unused.c:10:9: warning: unused variable ‘never’ [-Wunused-variable]",
                "unused.c:6:18: warning: variable ‘last’ set but not used [-Wunused-but-set-variable]",
                "unused.c:5:10: warning: variable ‘tmp’ set but not used [-Wunused-but-set-variable]",
            ],
        );
    }
    lab.cc(&[
        "-fsampler-strict",
        "-fsampler-scheme=scalar-pairs",
        "-c",
        "unused.c",
        "-o",
        "unused.o",
    ]);
    assert_eq!(
        lab.site_table("unused.o"),
        "<sites unit=\"UNIT\" scheme=\"scalar-pairs\">\n\
         LAB/unused.c\t7\tscan\t3\ttmp\tlocal\tdirect\t0LL\tconst\n\
         LAB/unused.c\t8\tscan\t4\ttmp\tlocal\tdirect\t0LL\tconst\n\
         LAB/unused.c\t9\tscan\t5\tlast\tlocal\tdirect\tlist\tlocal-init\n\
         LAB/unused.c\t9\tscan\t5\tlast\tlocal\tdirect\t(struct node *)0\tconst\n\
         LAB/unused.c\t10\tscan\t6\tnever\tlocal\tdirect\t0LL\tconst\n\
         </sites>\n"
    );
}

/// A list freed in a loop: comparing the new pointer with the old, freed
/// one must add no -Wuse-after-free (pointers are compared as integers,
/// read through a `volatile` access gcc does not follow), and the program
/// still counts the comparisons.
#[test]
fn comparing_a_freed_pointer_adds_no_use_after_free() {
    let lab = Lab::new();
    lab.write(
        "free.c",
        "#include <stdlib.h>\n\
         struct arg { struct arg *next; };\n\
         int release(struct arg *args)\n\
         {\n\
         \x20   struct arg *temp = args;\n\
         \x20   int n = 0;\n\
         \x20   while (args) {\n\
         \x20       args = args->next;\n\
         \x20       free(temp);\n\
         \x20       temp = args;\n\
         \x20       n++;\n\
         \x20   }\n\
         \x20   return n;\n\
         }\n\
         int main(void)\n\
         {\n\
         \x20   struct arg *list = 0;\n\
         \x20   for (int i = 0; i < 3; i++) {\n\
         \x20       struct arg *head = malloc(sizeof *head);\n\
         \x20       head->next = list;\n\
         \x20       list = head;\n\
         \x20   }\n\
         \x20   return release(list) == 3 ? 0 : 1;\n\
         }\n",
    );
    for optimise in ["-O0", "-O2", "-O3"] {
        same_warnings(&lab, "free.c", &[optimise, "-Wuse-after-free=3"], &[]);
    }
    lab.cc(&[
        "-fsampler-strict",
        "-fsampler-scheme=scalar-pairs",
        "-fno-sample",
        "-O2",
        "free.c",
        "-o",
        "free",
    ]);
    lab.run("free", &[], "free.report", &[]);
    let counts = lab.resolve("free.report", &["free"]);
    // `temp = args` runs three times: equal to `args`, and compared with
    // the freed old `temp` each time (which is larger or smaller depends
    // on malloc).
    let row = |other: &str| -> Vec<u64> {
        let prefix = format!("\t10\trelease\t7\ttemp\tlocal\tdirect\t{other}\tlocal-init\t");
        let line = counts
            .lines()
            .find(|line| line.contains(&prefix))
            .unwrap_or_else(|| panic!("no {other} row in {counts}"));
        line.rsplit('\t')
            .take(3)
            .map(|n| n.parse().unwrap())
            .collect()
    };
    assert_eq!(row("args"), [0, 3, 0]);
    assert_eq!(row("temp").iter().sum::<u64>(), 3);
}

/// A local set on one path only, read later by the user: gcc's "may be
/// used uninitialized" must stay, at every level that gives it, with every
/// scheme. `scalar-pairs` does not compare such a local by default: its
/// read took the local's address, after which gcc no longer saw that the
/// user's own read may be unset (lost at -O1, -O2, -O3 and -Os here).
#[test]
fn a_local_that_may_be_unset_keeps_gcc_s_warning() {
    let lab = Lab::new();
    lab.write(
        "maybe.c",
        "int counter;\n\
         int pick(int c, int d)\n\
         {\n\
         \x20   int maybe;\n\
         \x20   if (c > 2)\n\
         \x20       maybe = c;\n\
         \x20   if (d == 3)\n\
         \x20       return 0;\n\
         \x20   counter += maybe;\n\
         \x20   if (d > 9)\n\
         \x20       counter--;\n\
         \x20   return d;\n\
         }\n",
    );
    let schemes: Vec<&str> = EVERY_SCHEME
        .into_iter()
        .filter(|flag| *flag != "-fcompare-uninitialized")
        .collect();
    for level in ["-O1", "-O2", "-O3", "-Os"] {
        same_warnings_with(
            &lab,
            &schemes,
            "maybe.c",
            &[level],
            &[
                "maybe.c:9:13: warning: \u{2018}maybe\u{2019} may be used uninitialized [-Wmaybe-uninitialized]",
            ],
        );
    }
}

/// Calls to undeclared functions: gcc's "implicit declaration" comes at
/// the first call only, so it must not be in a fast copy (system-header
/// text): regions holding one are not cloned.
#[test]
fn implicit_declarations_are_reported_as_gcc_does() {
    let lab = Lab::new();
    lab.write(
        "implicit.c",
        "int len(const char *s)\n\
         {\n\
         \x20   int n = strlen(s) > 3 ? 1 : 0;\n\
         \x20   while (n < 10 && atoi(s) > n)\n\
         \x20       n++;\n\
         \x20   if (abs(n) > 2)\n\
         \x20       n--;\n\
         \x20   return n + (int)labs(n);\n\
         }\n\
         int first(const char *s)\n\
         {\n\
         \x20   return strlen(s) > 3 ? 1 : 0;\n\
         }\n",
    );
    for optimise in ["-O0", "-O2"] {
        same_warnings(
            &lab,
            "implicit.c",
            &[optimise],
            &[
                "implicit.c:3:13: warning: implicit declaration of function ‘strlen’ \
                 [-Wimplicit-function-declaration]",
                "implicit.c:3:13: warning: incompatible implicit declaration of built-in function \
                 ‘strlen’ [-Wbuiltin-declaration-mismatch]",
                "implicit.c:4:22: warning: implicit declaration of function ‘atoi’ \
                 [-Wimplicit-function-declaration]",
                "implicit.c:6:9: warning: implicit declaration of function ‘abs’ \
                 [-Wimplicit-function-declaration]",
                "implicit.c:8:21: warning: implicit declaration of function ‘labs’ \
                 [-Wimplicit-function-declaration]",
                "implicit.c:8:21: warning: incompatible implicit declaration of built-in function \
                 ‘labs’ [-Wbuiltin-declaration-mismatch]",
                "implicit.c:12:12: warning: incompatible implicit declaration of built-in function \
                 ‘strlen’ [-Wbuiltin-declaration-mismatch]",
            ],
        );
    }
}

/// Found by `scripts/corpus.sh` on zlib and gzip: in a function with
/// weighty calls, a run ending in `break` wrote the countdown back after
/// its copies, dead code that gcc's -Wimplicit-fallthrough took for a
/// statement falling through to the next `case`.
#[test]
fn runs_ending_in_a_jump_add_no_fallthrough() {
    let lab = Lab::new();
    lab.write(
        "cases.c",
        "static int check(int x) { if (x > 3) return 1; return 0; }\n\
         int bound(int wrap, int start)\n\
         {\n\
         \x20   int wraplen;\n\
         \x20   if (check(start))\n\
         \x20       return 0;\n\
         \x20   switch (wrap) {\n\
         \x20   case 0:\n\
         \x20       wraplen = 0;\n\
         \x20       break;\n\
         \x20   case 1:\n\
         \x20       wraplen = 6 + (start ? 4 : 0);\n\
         \x20       break;\n\
         \x20   case 2:\n\
         \x20       wraplen = check(wrap);\n\
         \x20       /* fall through */\n\
         \x20   default:\n\
         \x20       wraplen = 6;\n\
         \x20   }\n\
         \x20   return wraplen;\n\
         }\n",
    );
    for optimise in ["-O0", "-O2"] {
        same_warnings(&lab, "cases.c", &[optimise], &[]);
    }
}

/// `scalar-pairs` compares with globals of external linkage the unit never
/// reads (values.rs), and keeps gcc's -Wunused-variable of a `static` one.
#[test]
fn external_globals_compared_and_unread_statics_warned() {
    let lab = Lab::new();
    lab.write("lib.c", super::values::EXTERNAL_GLOBALS);
    for optimise in ["-O0", "-O2"] {
        same_warnings(
            &lab,
            "lib.c",
            &[optimise],
            &["lib.c:5:12: warning: ‘s_unread’ defined but not used [-Wunused-variable]"],
        );
    }
}

/// Columns: warnings on instrumented lines, after tabs and after runs of
/// spaces that gcc's preprocessor collapses, point where gcc points when
/// it compiles the file itself. (Not inside macro expansions: gcc places
/// those at the macro's definition, which a `.i` no longer knows;
/// ARCHITECTURE.md, "Columns".)
#[test]
fn warnings_keep_their_columns() {
    let lab = Lab::new();
    lab.write(
        "columns.c",
        "int g;\n\
         int f(int a, unsigned b, long w)\n\
         {\n\
         \tint x = 0;      char c;\n\
         \tif (a > 3   &&   b < 2u) x = a + 1;\n\
         \tc   =   x * 1000;\n\
         \tx +=    w;\n\
         \tif (a < b)   return c;\n\
         \tg = (int)w;\n\
         \treturn x + c;\n\
         }\n",
    );
    same_warnings(
        &lab,
        "columns.c",
        &["-O2", "-Wconversion", "-Wsign-compare"],
        &[
            "columns.c:6:17: warning: conversion from ‘int’ to ‘char’ may change value [-Wconversion]",
            "columns.c:7:17: warning: conversion from ‘long int’ to ‘int’ may change value [-Wconversion]",
            "columns.c:8:15: warning: comparison of integer expressions of different signedness: ‘int’ and ‘unsigned int’ [-Wsign-compare]",
        ],
    );
}

/// A local whose address is taken later (zlib's test/example.c: `int
/// err;` then `gzerror(file, &err)`) is a scalar-pairs candidate the data
/// flow does not follow: read plainly before it is set, gcc said "'err' is
/// used uninitialized" with -fno-sample. It is read through a laundered
/// address, so gcc's warnings stay its own; the site stays.
#[test]
fn address_taken_locals_compared_without_uninitialized_warnings() {
    let lab = Lab::new();
    lab.write(
        "taken.c",
        "#include <string.h>\n\
         extern const char *g(int *);\n\
         int f(const char *hello)\n\
         {\n\
         \x20   int err;\n\
         \x20   int len = (int)strlen(hello) + 1;\n\
         \x20   if (len > 3)\n\
         \x20       return *g(&err);\n\
         \x20   return len;\n\
         }\n",
    );
    for level in ["-O0", "-O2"] {
        same_warnings(&lab, "taken.c", &[level], &[]);
    }
    lab.cc(&[
        "-fsampler-strict",
        "-fsampler-scheme=scalar-pairs",
        "-fno-sample",
        "-c",
        "taken.c",
        "-o",
        "taken.o",
    ]);
    let table = lab.site_table("taken.o");
    assert!(
        table.contains("\t6\tf\t2\tlen\tlocal\tdirect\terr\tlocal-init\n"),
        "{table}"
    );
}

/// A pointer to `const` the unit writes and never reads (gnulib's
/// progname.c in sed: `const char *program_name = NULL;` then
/// `program_name = argv0;`): its temporary is declared with the type's
/// spelling, which lost the pointee's `const` ("assignment discards 'const'
/// qualifier from pointer target type").
#[test]
fn pointers_to_const_written_only_keep_their_pointee_qualifiers() {
    let lab = Lab::new();
    lab.write(
        "progname.c",
        "char const *program_name = 0;\n\
         volatile int *const *watched;\n\
         void set_program_name(const char *argv0, volatile int *const *w)\n\
         {\n\
         \x20   program_name = argv0;\n\
         \x20   watched = w;\n\
         }\n",
    );
    for level in ["-O0", "-O2"] {
        same_warnings(&lab, "progname.c", &[level], &[]);
    }
}

/// gcc's `__builtin_add_overflow_p`, which clang lacks, in a static
/// assertion (gnulib's test-intprops.c) and in code: clang's rejection of
/// the assertion must not leave the function uninstrumented (an error under
/// `-fsampler-strict`), the assertion is left as written, and the builtin's
/// call is no call-return site.
#[test]
fn gcc_only_builtins_in_static_assertions_keep_the_function_instrumented() {
    let lab = Lab::new();
    lab.write(
        "overflow.c",
        "#include <stdio.h>\n\
         int sum(int a, int b)\n\
         {\n\
         \x20   _Static_assert(sizeof(int) == 4 ? 1 : 0, \"int\");\n\
         \x20   _Static_assert(__builtin_add_overflow_p(2147483647, 1, (int) 0), \"wraps\");\n\
         \x20   if (__builtin_add_overflow_p(a, b, (int) 0))\n\
         \x20       return -1;\n\
         \x20   return a + b;\n\
         }\n\
         int main(int argc, char **argv)\n\
         {\n\
         \x20   (void) argv;\n\
         \x20   printf(\"%d %d\\n\", sum(argc, 2147483647), sum(argc, 2));\n\
         \x20   return 0;\n\
         }\n",
    );
    same_warnings(&lab, "overflow.c", &["-O2"], &[]);
    let mut args = EVERY_SCHEME.to_vec();
    args.extend(["-fsampler-strict", "-O2", "overflow.c", "-o", "overflow"]);
    lab.cc(&args);
    let output = lab.run(
        "overflow",
        &[],
        "overflow.report",
        &[("SAMPLER_SPARSITY", "1")],
    );
    assert_eq!(output, "-1 3\n");
    let table = lab.site_table("overflow");
    let interesting: Vec<&str> = table
        .lines()
        .filter(|line| line.contains("\tsum\t") || line.contains("\tmain\t"))
        .collect();
    assert_eq!(
        interesting,
        [
            "LAB/overflow.c\t6\tsum\t3\t__builtin_add_overflow_p(a, b, (int) 0)",
            "LAB/overflow.c\t2\tsum\t0",
            "LAB/overflow.c\t10\tmain\t0",
            "LAB/overflow.c\t13\tmain\t2\tprintf",
            "LAB/overflow.c\t13\tmain\t2\tsum",
            "LAB/overflow.c\t13\tmain\t2\tsum",
        ]
    );
}

/// bc's dc.c: a pointer compared with a pointer parameter, in a function
/// gcc inlines whose result is stored in a global. Reading the parameter
/// through its address made gcc warn that the result may point to the
/// parameter (-Wdangling-pointer) three times.
#[test]
fn comparing_with_a_pointer_parameter_adds_no_dangling_pointer() {
    let lab = Lab::new();
    lab.write(
        "base.c",
        "#include <string.h>\n\
         static char *basename_of(char *s, int c)\n\
         {\n\
         \x20   char *p = strrchr(s, c);\n\
         \x20   if (p == NULL)\n\
         \x20       return s;\n\
         \x20   return p + 1;\n\
         }\n\
         const char *progname;\n\
         int main(int argc, char **argv)\n\
         {\n\
         \x20   (void) argc;\n\
         \x20   progname = basename_of(*argv, '/');\n\
         \x20   return strcmp(progname, \"base\") != 0;\n\
         }\n",
    );
    for optimise in ["-O0", "-O2", "-O3"] {
        same_warnings(&lab, "base.c", &[optimise, "-g"], &[]);
    }
    let mut args = EVERY_SCHEME.to_vec();
    args.extend([
        "-fsampler-strict",
        "-fno-sample",
        "-O2",
        "base.c",
        "-o",
        "base",
    ]);
    lab.cc(&args);
    lab.run("base", &[], "base.report", &[]);
    let counts = lab.resolve("base.report", &["base"]);
    // `p` is set once, to one past the path's last '/' in `s`: greater.
    let row = counts
        .lines()
        .find(|line| {
            line.contains("\t4\tbasename_of\t") && line.contains("\tp\tlocal\tdirect\ts\t")
        })
        .unwrap_or_else(|| panic!("no p-s row in {counts}"));
    assert!(row.ends_with("\t0\t0\t1"), "{row}");
}

/// jq's shapes: a case whose block ends in `break` (execute.c), one whose
/// `if` ends in jumps on both branches, and a label reached only from
/// outside the region holding it (oniguruma's regparse.c, jv_dtoa.c): no
/// fall-through, no unused label of the region's fast copy, no
/// maybe-uninitialized countdown; and the program still computes the same.
#[test]
fn blocks_ending_in_jumps_and_labels_reached_from_outside_add_no_warnings() {
    let lab = Lab::new();
    lab.write(
        "vm.c",
        "#include <stdio.h>\n\
         #include <stdlib.h>\n\
         void emit(int v)\n\
         {\n\
         \x20   if (v > 100)\n\
         \x20       puts(\"big\");\n\
         }\n\
         int run(const unsigned char *pc, int n)\n\
         {\n\
         \x20   int acc = 0;\n\
         \x20   for (int i = 0; i < n; i++) {\n\
         \x20       switch (pc[i]) {\n\
         \x20       case 0: {\n\
         \x20           int offset = pc[i] + 1;\n\
         \x20           acc += offset;\n\
         \x20           if (acc > 50)\n\
         \x20               goto end_char;\n\
         \x20           break;\n\
         \x20       }\n\
         \x20       case 1: {\n\
         \x20           int offset = acc * 2;\n\
         \x20           if (offset > 10) {\n\
         \x20               acc -= 3;\n\
         \x20               break;\n\
         \x20           } else {\n\
         \x20               acc += offset;\n\
         \x20               continue;\n\
         \x20           }\n\
         \x20       }\n\
         \x20       case 2:\n\
         \x20           acc++;\n\
         \x20           acc *= 3;\n\
         \x20       end_char:\n\
         \x20           acc--;\n\
         \x20           acc ^= 1;\n\
         \x20           break;\n\
         \x20       default:\n\
         \x20           acc = 0;\n\
         \x20           emit(acc);\n\
         \x20       }\n\
         \x20   }\n\
         \x20   return acc;\n\
         }\n\
         int main(int argc, char **argv)\n\
         {\n\
         \x20   unsigned char code[64];\n\
         \x20   int n = 0;\n\
         \x20   for (int i = 1; i < argc && n < 64; i++)\n\
         \x20       code[n++] = (unsigned char) atoi(argv[i]);\n\
         \x20   printf(\"%d\\n\", run(code, n));\n\
         \x20   return 0;\n\
         }\n",
    );
    for optimise in ["-O0", "-O2"] {
        same_warnings(&lab, "vm.c", &[optimise, "-Wimplicit-fallthrough"], &[]);
    }
    let args = ["0", "1", "2", "1", "2", "2", "0", "1", "2", "3", "2"];
    lab.gcc(&["-O2", "vm.c", "-o", "vm-gcc"]);
    let expected = lab.run("vm-gcc", &args, "unused.report", &[]);
    assert_eq!(expected, "3\n");
    let mut cc = EVERY_SCHEME.to_vec();
    cc.extend(["-fsampler-strict", "-O2", "vm.c", "-o", "vm"]);
    lab.cc(&cc);
    for sparsity in ["1", "3", "1000"] {
        let output = lab.run("vm", &args, "vm.report", &[("SAMPLER_SPARSITY", sparsity)]);
        assert_eq!(output, expected, "sparsity {sparsity}");
    }
}

/// gnulib's FALLTHROUGH is the C23 attribute `[[__fallthrough__]]` with gcc
/// 12 (sed's and grep's quotearg.c): it must stay just before its label, as
/// `__attribute__((fallthrough))` does, with no warning either way.
#[test]
fn c23_fallthrough_attributes_stay_before_their_labels() {
    let lab = Lab::new();
    lab.write(
        "style.c",
        "#include <stdbool.h>\n\
         enum style { c_maybe, c_style, shell, other };\n\
         int helper(int c);\n\
         int quote(enum style style, bool elide, int c)\n\
         {\n\
         \x20   int n = helper(c);\n\
         \x20   switch (style) {\n\
         \x20   case c_maybe:\n\
         \x20       style = c_style;\n\
         \x20       elide = true;\n\
         \x20       [[__fallthrough__]];\n\
         \x20   case c_style:\n\
         \x20       n += c * 2;\n\
         \x20       n -= elide;\n\
         \x20       __attribute__ ((__fallthrough__));\n\
         \x20   case shell:\n\
         \x20       n++;\n\
         \x20       break;\n\
         \x20   default:\n\
         \x20       n = helper(style);\n\
         \x20   }\n\
         \x20   return n;\n\
         }\n",
    );
    for optimise in ["-O0", "-O2"] {
        same_warnings(
            &lab,
            "style.c",
            &[optimise, "-g", "-Wimplicit-fallthrough"],
            &[],
        );
    }
}

/// A label inside a region reached by a `goto` from outside it (jq's
/// jv_dtoa.c `undfl:`): the jump used to enter the slow copy without the
/// region's test, its countdown local unset ("may be used uninitialized",
/// and garbage written back to the countdown) and every site after the
/// label observed on that path whatever the sparsity. Such regions are not
/// cloned: no warning, the program's output, and no observation at all at a
/// sparsity of a billion.
#[test]
fn labels_reached_from_outside_a_region_are_not_entered_unsampled() {
    let lab = Lab::new();
    lab.write(
        "jump.c",
        "#include <stdio.h>\n\
         #include <stdlib.h>\n\
         int calls;\n\
         int weigh(int x) { calls++; return x * 3; }\n\
         int scale(int x, int y)\n\
         {\n\
         \x20   int r = weigh(x);\n\
         \x20   if (y > 5)\n\
         \x20       goto undfl;\n\
         \x20   r = weigh(r + y);\n\
         \x20   if (r > 7) {\n\
         \x20       r -= 2;\n\
         \x20       if (r & 1) {\n\
         \x20undfl:\n\
         \x20           r = 0;\n\
         \x20           goto out;\n\
         \x20       }\n\
         \x20       r *= 2;\n\
         \x20   }\n\
         \x20   r = weigh(r);\n\
         \x20out:\n\
         \x20   return r;\n\
         }\n\
         int main(int argc, char **argv)\n\
         {\n\
         \x20   long total = 0;\n\
         \x20   int n = argc > 1 ? atoi(argv[1]) : 1000;\n\
         \x20   for (int i = 0; i < n; i++)\n\
         \x20       total += scale(i % 7, i % 11);\n\
         \x20   printf(\"%ld %d\\n\", total, calls);\n\
         \x20   return 0;\n\
         }\n",
    );
    for optimise in ["-O0", "-O2"] {
        same_warnings(&lab, "jump.c", &[optimise], &[]);
    }
    lab.gcc(&["-O2", "jump.c", "-o", "jump-gcc"]);
    assert_eq!(
        lab.run("jump-gcc", &[], "unused.report", &[]),
        "53079 1832\n"
    );
    let mut args = EVERY_SCHEME.to_vec();
    args.extend(["-fsampler-strict", "-O2", "jump.c", "-o", "jump"]);
    lab.cc(&args);
    let output = lab.run(
        "jump",
        &[],
        "jump.report",
        &[("SAMPLER_SPARSITY", "1000000000")],
    );
    assert_eq!(output, "53079 1832\n");
    let text = lab.samples("jump.report");
    // Counters of every scheme but `bounds`, whose rows are a minimum and
    // a maximum (never observed: i64::MAX and i64::MIN, checked below).
    let mut observed = 0u64;
    let mut scheme = "";
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("<samples ") {
            scheme = rest.split("scheme=\"").nth(1).unwrap_or_default();
            continue;
        }
        if line.starts_with('<') {
            continue;
        }
        if scheme.starts_with("bounds") {
            assert_eq!(line, "9223372036854775807\t-9223372036854775808", "{text}");
            continue;
        }
        observed += line
            .split('\t')
            .map(|count| count.parse::<u64>().unwrap())
            .sum::<u64>();
    }
    assert!(text.lines().count() > 20, "{text}");
    assert_eq!(observed, 0, "{text}");
}

/// sqlite3's `sqlite3_search_count`: declared `extern` inside one function
/// before its file-scope definition. That block-scope declaration does not
/// make it visible to the functions between the two, which must not read it
/// (`scalar-pairs` and `atoms` did: "undeclared"); after the definition it
/// is a candidate again.
#[test]
fn block_scope_extern_declarations_do_not_make_globals_visible_later() {
    let lab = Lab::new();
    lab.write(
        "search.c",
        "int h(int);\n\
         int f(int a)\n\
         {\n\
         \x20   extern int counter;\n\
         \x20   counter++;\n\
         \x20   return a;\n\
         }\n\
         int g(int x)\n\
         {\n\
         \x20   int rc;\n\
         \x20   rc = h(x);\n\
         \x20   return rc;\n\
         }\n\
         int counter = 0;\n\
         int k(int y)\n\
         {\n\
         \x20   int rc;\n\
         \x20   rc = h(y);\n\
         \x20   return rc;\n\
         }\n",
    );
    for optimise in ["-O0", "-O2"] {
        same_warnings(&lab, "search.c", &[optimise], &[]);
    }
    for scheme in ["-fsampler-scheme=atoms", "-fsampler-scheme=all"] {
        lab.cc(&[
            "-fsampler-strict",
            scheme,
            "-c",
            "search.c",
            "-o",
            "search.o",
        ]);
    }
    lab.cc(&[
        "-fsampler-strict",
        "-fsampler-scheme=scalar-pairs",
        "-c",
        "search.c",
        "-o",
        "search.o",
    ]);
    assert_eq!(
        lab.site_table("search.o"),
        "<sites unit=\"UNIT\" scheme=\"scalar-pairs\">\n\
         LAB/search.c\t5\tf\t2\tcounter\tglobal\tdirect\ta\tlocal-init\n\
         LAB/search.c\t5\tf\t2\tcounter\tglobal\tdirect\t0LL\tconst\n\
         LAB/search.c\t11\tg\t2\trc\tlocal\tdirect\tx\tlocal-init\n\
         LAB/search.c\t11\tg\t2\trc\tlocal\tdirect\t0LL\tconst\n\
         LAB/search.c\t18\tk\t2\trc\tlocal\tdirect\tcounter\tglobal\n\
         LAB/search.c\t18\tk\t2\trc\tlocal\tdirect\ty\tlocal-init\n\
         LAB/search.c\t18\tk\t2\trc\tlocal\tdirect\t0LL\tconst\n\
         </sites>\n"
    );
}

/// Functions whose SLOW copy is outlined (`-fsample-outlined-functions`):
/// the warnings on their parameters, on their body's variables and at
/// their closing brace come once, at the user's lines and columns, from
/// the copy (`F`'s parameter list and brace are system text), in gcc's
/// order: the copy is defined after `F` (declared before it), so
/// warnings on `F`'s own declaration (`-Wmissing-prototypes`) come first.
#[test]
fn outlined_functions_keep_their_warnings() {
    let lab = Lab::new();
    lab.write(
        "outlined.c",
        "extern int g(int);\n\
         int level;\n\
         typedef void nothing;\n\
         int\n\
         pick(int level, int unused_p, int set_p)\n\
         {\n\
         \x20   set_p = 3;\n\
         \x20   int never = g(1);\n\
         \x20   if (level > 2)\n\
         \x20       return g(level);\n\
         }\n\
         static int lonely(int a) { if (a) return g(a); return 0; }\n\
         nothing act(int a) { if (a > 1) g(a); }\n\
         const char *who(int a) { if (a) return __func__; if (a > 1) return \"x\"; return __PRETTY_FUNCTION__; }\n\
         extern void quit(int) __attribute__((__noreturn__));\n\
         void die(int c) __attribute__((__noreturn__));\n\
         void die(int c) { if (c > 1) g(c); if (c) g(0); quit(c); }\n",
    );
    let expected = [
        "outlined.c:5:10: warning: declaration of ‘level’ shadows a global declaration [-Wshadow]",
        "outlined.c:8:9: warning: unused variable ‘never’ [-Wunused-variable]",
        "outlined.c:5:35: warning: parameter ‘set_p’ set but not used [-Wunused-but-set-parameter]",
        "outlined.c:5:21: warning: unused parameter ‘unused_p’ [-Wunused-parameter]",
        "outlined.c:11:1: warning: control reaches end of non-void function [-Wreturn-type]",
        "outlined.c:12:12: warning: ‘lonely’ defined but not used [-Wunused-function]",
    ];
    for optimise in ["-O0", "-O2"] {
        same_warnings(&lab, "outlined.c", &[optimise, "-Wshadow"], &expected);
    }
    // Four functions are outlined; `die`, declared `noreturn`, is not.
    let stats = stats(&lab, "outlined.c", &["branches", "returns"]);
    assert!(
        stats.contains(", 4 outlined functions of which 2 re-entered, "),
        "{stats}"
    );
    // The same warnings, in the same order, with -Wmissing-prototypes:
    // gcc meets `F`'s declaration before its copy's definition.
    let args = [
        "-Wall",
        "-Wextra",
        "-Wmissing-prototypes",
        "-c",
        "outlined.c",
        "-o",
        "p.o",
    ];
    let plain = diagnostics(&lab.gcc(&args).stderr);
    assert_eq!(plain.len(), 8, "{plain:?}");
    let mut ours_args = EVERY_SCHEME.to_vec();
    ours_args.extend_from_slice(&args);
    assert_eq!(diagnostics(&lab.cc(&ours_args).stderr), plain);
}

/// A `struct` first declared in a parameter list is a type of that list
/// alone: a function whose parameters declare one is not outlined (a
/// second list, the copy's, would declare another type, which gcc rejects
/// or warns about), and gcc's one warning stays its own.
#[test]
fn a_tag_declared_in_the_parameters_keeps_its_function_whole() {
    let lab = Lab::new();
    lab.write(
        "tag.c",
        "int g(int);\n\
         int pick(struct node *n, int v)\n\
         {\n\
         \x20   if (v > 2)\n\
         \x20       return g(v) + (n != 0);\n\
         \x20   if (v > 1)\n\
         \x20       return 1;\n\
         \x20   return 0;\n\
         }\n\
         struct known;\n\
         int take(struct known *k, int v) { if (v > 2) return g(v) + (k != 0); if (v > 1) return 1; return 0; }\n",
    );
    let expected = [
        "tag.c:2:17: warning: ‘struct node’ declared inside parameter list will not be visible outside of this definition or declaration",
    ];
    for optimise in ["-O0", "-O2"] {
        same_warnings(&lab, "tag.c", &[optimise], &expected);
    }
    // `take`, whose tag was declared before, is outlined.
    let stats = stats(&lab, "tag.c", &["branches"]);
    assert!(
        stats.contains(", 1 outlined functions of which 1 re-entered, "),
        "{stats}"
    );
}

/// A function declared `static` and defined without the keyword is still
/// static: unused, gcc says so, and its outlined copy must not call it
/// back (that reference would silence the warning).
#[test]
fn a_static_function_defined_without_static_stays_unused() {
    let lab = Lab::new();
    lab.write(
        "late.c",
        "int g(int);\n\
         static int late(int v);\n\
         int late(int v)\n\
         {\n\
         \x20   if (v > 2)\n\
         \x20       return g(v);\n\
         \x20   if (v > 1)\n\
         \x20       return 1;\n\
         \x20   return 0;\n\
         }\n",
    );
    let expected = ["late.c:3:5: warning: ‘late’ defined but not used [-Wunused-function]"];
    for optimise in ["-O0", "-O2"] {
        same_warnings(&lab, "late.c", &[optimise], &expected);
    }
}
