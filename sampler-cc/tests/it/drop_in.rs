//! sampler-cc behaves as gcc does for everything but the instrumentation.

use super::*;

const HELLO: &str = "#include <stdio.h>\n/* a comment */\n#define TWICE(x) ((x) * 2)\nint twice(int x) { return TWICE(x); }\n";
const MAIN: &str = "#include <stdio.h>\nint twice(int);\nint main(void) { printf(\"%d\\n\", twice(21)); return 0; }\n";

#[test]
fn preprocessing_and_dependencies_are_gcc_s() {
    let lab = Lab::new();
    lab.write("hello.c", HELLO);
    let ours = lab.cc(&["-fsampler-strict", "-E", "hello.c"]);
    assert_eq!(ours.stdout, lab.gcc(&["-E", "hello.c"]).stdout);
    let ours = lab.cc(&["-fsampler-strict", "-M", "hello.c"]);
    assert_eq!(ours.stdout, lab.gcc(&["-M", "hello.c"]).stdout);

    lab.cc(&[
        "-fsampler-strict",
        "-c",
        "-MD",
        "-MF",
        "ours.d",
        "-MT",
        "target",
        "hello.c",
        "-o",
        "ours.o",
    ]);
    lab.gcc(&[
        "-c", "-MD", "-MF", "gcc.d", "-MT", "target", "hello.c", "-o", "gcc.o",
    ]);
    assert_eq!(
        std::fs::read(lab.path("ours.d")).unwrap(),
        std::fs::read(lab.path("gcc.d")).unwrap()
    );
}

#[test]
fn compile_and_link_forms() {
    let lab = Lab::new();
    lab.write("hello.c", HELLO);
    lab.write("main.c", MAIN);
    // Several sources, compiled and linked in one command, through a pipe.
    lab.cc(&[
        ALL_SCHEMES[0],
        ALL_SCHEMES[1],
        "-pipe",
        "-O2",
        "hello.c",
        "main.c",
        "-o",
        "both",
    ]);
    assert_eq!(lab.run("both", &[], "report", &[]), "42\n");
    assert_eq!(lab.site_table("both").matches("<sites ").count(), 2);

    // -save-temps keeps gcc's intermediate files; -S writes assembly that
    // carries the site table.
    lab.cc(&["-fsampler-strict", "-save-temps", "-c", "hello.c"]);
    for kept in ["hello.i", "hello.s", "hello.o"] {
        assert!(lab.path(kept).exists(), "{kept} missing");
    }
    lab.cc(&["-fsampler-strict", "-S", "main.c", "-o", "main.s"]);
    let assembly = std::fs::read_to_string(lab.path("main.s")).unwrap();
    assert!(assembly.contains(".pushsection .debug_site_info,\"\",%progbits"));
    lab.cc(&["-fsampler-strict", "-c", "main.s", "-o", "from-asm.o"]);
    lab.cc(&["hello.o", "from-asm.o", "-o", "linked"]);
    assert_eq!(lab.run("linked", &[], "report2", &[]), "42\n");

    // Standard input, with the language given.
    let mut child = lab
        .command(sampler_cc())
        .args([
            "-fsampler-strict",
            "-fsampler-scheme=function-entries",
            "-x",
            "c",
            "-c",
            "-",
            "-o",
            "stdin.o",
        ])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), HELLO.as_bytes()).unwrap();
    drop(child.stdin.take());
    assert!(child.wait().unwrap().success());
    assert!(
        lab.site_table("stdin.o")
            .contains("\n<stdin>\t4\ttwice\t0\n")
    );

    // Probes pass straight through (`--version` adds a line: install.rs).
    let version = lab.cc(&["-dumpfullversion"]);
    assert_eq!(version.stdout, lab.gcc(&["-dumpfullversion"]).stdout);
}

#[test]
fn cxx_inputs_are_left_to_gcc() {
    let lab = Lab::new();
    lab.write(
        "x.cc",
        "#include <cstdio>\nint main() { if (std::puts(\"c++\") > 0) return 0; return 1; }\n",
    );
    if Command::new("g++").arg("--version").output().is_err() {
        eprintln!("g++ is not installed: skipped");
        return;
    }
    lab.cc(&["-fsampler-strict", "-c", "x.cc", "-o", "x.o"]);
    let table = lab
        .tool("extract-section")
        .args([".debug_site_info", "x.o"])
        .output()
        .unwrap();
    assert!(
        table.stdout.is_empty(),
        "C++ is not instrumented: {table:?}"
    );
}

#[test]
fn warnings_are_gcc_s() {
    let lab = Lab::new();
    lab.write(
        "warn.c",
        r#"#include <ctype.h>
#include <errno.h>
#include <string.h>
struct s { int (*fn)(int); unsigned u; char tag; unsigned bits : 3; };
static unsigned get(void) { return 3u; }
static char *name(void) { return "x"; }
int counter;
double ratio;
volatile int flag;
__inline__ int twice(int x) { int y = x * 2; y += flag; return y; }
int use(struct s *p, int c, int unused)
{
    int r = 0;
    int k;
    int maybe;
    unsigned char small = 3;
    k = c;
    if (c > 2)
        maybe = c;
    small += c;
    p->tag = c;
    p->tag++;
    p->bits = 9;
    counter += maybe;
    flag = twice(c);
    ratio = ratio * 2 + c;
    long wide = c;
    int unread;
    unread = c;
    unread++;
    k = wide;
    switch (k) {
    case 1:
        r = 1;
        /* fall through */
    case 2:
        r += p->fn(c) ? 1 : 0;
        break;
    }
    if (isdigit(c) && errno == EINTR) r++;
    if (get() >= 0) r++;
    if (name()) r += strlen(name());
    if (p->u < 0) r--;
    while (1) { if (r > 3) break; r++; }
    return r;
}
int options(int c, int level)
{
    void *none = 0;
    char *text = 0;
    level = use(0, c, 0);
    switch (c) {
    case 'a' + 100:
        c -= 100;
        level += c;
        __attribute__((__fallthrough__));
    case 'a':
        level = c - 'a';
        break;
    case 'b': {
        level += 2;
        if (level > 9) break;
        level--;
        __attribute__((__fallthrough__));
    }
    case 'c':
        level++;
    }
    if (c == 'z') { int *slot = 0; level += slot == 0; level *= 2; }
    return level + (none == text);
}
"#,
    );
    for flags in [
        &["-std=gnu11", "-O2"][..],
        &["-std=c89", "-pedantic", "-Wdeclaration-after-statement"][..],
        &[
            "-std=c11",
            "-Wshadow",
            "-Wconversion",
            "-Wimplicit-fallthrough",
        ][..],
    ] {
        let mut args = vec!["-Wall", "-Wextra", "-c", "warn.c", "-o", "warn.o"];
        args.extend_from_slice(flags);
        let plain = lab.gcc(&args);
        let expected = diagnostics(&plain.stderr);
        assert!(expected.len() >= 3, "{expected:?}");
        for sampling in ["-fsample", "-fno-sample", "-fsample-sites"] {
            let mut ours_args = EVERY_SCHEME.to_vec();
            ours_args.push(sampling);
            ours_args.extend_from_slice(&args);
            let ours = lab.cc(&ours_args);
            assert_eq!(
                diagnostics(&ours.stderr),
                expected,
                "with {flags:?} {sampling}"
            );
        }
    }
}

/// A function clang cannot parse (a gcc nested function) stays as it is;
/// the rest of the file is instrumented; -fsampler-strict makes it an error.
#[test]
fn fails_open_visibly() {
    let lab = Lab::new();
    lab.write(
        "nested.c",
        "#include <stdio.h>\nint outer(int x) { int inner(int y) { return y + 1; } return inner(x); }\n\
         int main(int argc, char **argv) { (void)argv; printf(\"%d\\n\", outer(argc)); if (argc > 5) return 1; return 0; }\n",
    );
    let output = lab.cc(&["-fsampler-scheme=branches", "nested.c", "-o", "nested"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("sampler-cc: warning: nested.c: not instrumented in outer: "),
        "{stderr}"
    );
    assert_eq!(lab.run("nested", &[], "report", &[]), "2\n");
    assert_eq!(
        lab.site_table("nested"),
        lines(&[
            "<sites unit=\"UNIT\" scheme=\"branches\">",
            "LAB/nested.c\t3\tmain\t3\targc > 5",
            "</sites>"
        ])
    );

    let strict = lab
        .command(sampler_cc())
        .args(["-fsampler-strict", "-c", "nested.c"])
        .output()
        .unwrap();
    assert_eq!(strict.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&strict.stderr);
    assert!(stderr.contains("sampler-cc: error: nested.c: cannot instrument: the C front end rejected function(s) outer"), "{stderr}");

    // When gcc rejects the file, its own errors are what the user sees.
    lab.write("broken.c", "int f(void) { return undeclared; }\n");
    let broken = lab
        .command(sampler_cc())
        .args(["-fsampler-strict", "-c", "broken.c"])
        .output()
        .unwrap();
    assert!(!broken.status.success());
    let stderr = String::from_utf8_lossy(&broken.stderr);
    assert!(
        stderr.contains("error: 'undeclared' undeclared")
            || stderr.contains("error: ‘undeclared’ undeclared"),
        "{stderr}"
    );
    assert!(!stderr.contains("sampler-cc"), "{stderr}");
}

#[test]
fn unknown_flags_are_named() {
    let lab = Lab::new();
    let output = lab
        .command(sampler_cc())
        .args(["-fsampler-scheme=bogus", "-c", "x.c"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "sampler-cc: error: unknown scheme \"bogus\" in -fsampler-scheme= (known: scalar-pairs, atoms, branches, bounds, function-entries, returns, float-kinds, g-object-unref)\n"
    );
}

/// Without libclang the file is compiled as is, and the warning says what
/// to install.
#[test]
fn missing_libclang_is_named() {
    let lab = Lab::new();
    lab.write("hello.c", HELLO);
    std::fs::create_dir(lab.path("no-libclang")).unwrap();
    let output = lab
        .command(sampler_cc())
        .env("LIBCLANG_PATH", lab.path("no-libclang"))
        .args(["-c", "hello.c", "-o", "hello.o"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with(
            "sampler-cc: warning: hello.c: compiled without instrumentation: cannot load libclang ("
        ),
        "{stderr}"
    );
    assert!(stderr.contains("apt-get install libclang1-14"), "{stderr}");
    assert!(
        lab.tool("extract-section")
            .args([".debug_site_info", "hello.o"])
            .output()
            .unwrap()
            .stdout
            .is_empty()
    );
}

/// The real compiler is the one `SAMPLER_REAL_CC` names, arguments included.
#[test]
fn real_compiler_can_be_chosen() {
    let lab = Lab::new();
    lab.write("hello.c", HELLO);
    lab.write(
        "logging-gcc",
        "#!/bin/sh\necho \"$@\" >> \"$(dirname \"$0\")/calls\"\nexec gcc \"$@\"\n",
    );
    let script = lab.path("logging-gcc");
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let output = lab
        .command(sampler_cc())
        .env(
            "SAMPLER_REAL_CC",
            format!("{} -DFROM_REAL_CC", script.display()),
        )
        .args(["-fsampler-strict", "-c", "hello.c", "-o", "hello.o"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let calls = std::fs::read_to_string(lab.path("calls")).unwrap();
    // Once to find cc1, once to compile.
    assert_eq!(calls.lines().count(), 2, "{calls}");
    assert!(
        calls
            .lines()
            .all(|call| call.starts_with("-DFROM_REAL_CC ")),
        "{calls}"
    );
    assert!(
        calls.contains("-no-integrated-cpp -c hello.c -o hello.o"),
        "{calls}"
    );
}

/// gnulib writes C23 attributes, which gcc takes in every C mode.
#[test]
fn c23_attributes_are_understood() {
    let lab = Lab::new();
    lab.write(
        "attr.c",
        "int f([[maybe_unused]] int x, int y) { if (y > 2) return 1; return 0; }\n",
    );
    lab.cc(&[
        "-fsampler-strict",
        "-fsampler-scheme=branches",
        "-c",
        "attr.c",
    ]);
    assert_eq!(
        lab.site_table("attr.o"),
        lines(&[
            "<sites unit=\"UNIT\" scheme=\"branches\">",
            "LAB/attr.c\t1\tf\t1\ty > 2",
            "</sites>"
        ])
    );
}

#[test]
fn stats_and_the_static_runtime() {
    let lab = Lab::new();
    lab.write("hello.c", HELLO);
    lab.write("main.c", MAIN);
    let output = lab.cc(&[
        "-fsampler-strict",
        "-fsampler-stats",
        "-fsampler-static-runtime",
        "-fsampler-scheme=returns",
        "-fsampler-scheme=function-entries",
        "hello.c",
        "main.c",
        "-o",
        "static-runtime",
    ]);
    let stats: Vec<String> = String::from_utf8_lossy(&output.stderr)
        .lines()
        .map(|line| line.split("; front end ").next().unwrap().to_owned())
        .collect();
    assert_eq!(
        stats,
        [
            "sampler-cc: hello.c: 1 functions, sites: function-entries 1, returns 0; \
             regions: 0 cloned (0 runs, 0 loops, 0 expressions, 0 sites), 0 declaration runs, 0 leaf functions, 0 outlined functions, 0 fell back",
            "sampler-cc: main.c: 1 functions, sites: function-entries 1, returns 2; \
             regions: 1 cloned (1 runs of which 1 across calls, 0 loops, 0 expressions, 2 sites), 0 declaration runs, 0 leaf functions, 0 outlined functions, 0 fell back",
        ]
    );
    let dynamic = lab
        .command("readelf")
        .args(["-d", "static-runtime"])
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&dynamic.stdout).contains("libsampler_runtime"));
    assert_eq!(
        lab.run(
            "static-runtime",
            &[],
            "report",
            &[("SAMPLER_SPARSITY", "1")]
        ),
        "42\n"
    );
    let resolved = lab.resolve("report", &["static-runtime"]);
    assert!(
        resolved.contains("\tfunction-entries\tLAB/hello.c\t4\ttwice\t0\t1\n"),
        "{resolved}"
    );
    assert!(
        resolved.contains("\treturns\tLAB/main.c\t3\tmain\t1\ttwice\t0\t0\t1\n"),
        "{resolved}"
    );
}

/// The stage hands the instrumented text to the real cc1 as its standard
/// input and becomes it: the object names the user's file as gcc's does
/// (cc1 takes a preprocessed input's name from its first line marker,
/// not from `-`), `-save-temps` keeps gcc's own files, and nothing is
/// left in the temporary folder.
#[test]
fn the_instrumented_text_reaches_cc1_without_a_file_left_behind() {
    let lab = Lab::new();
    lab.write("hello.c", HELLO);
    let scratch = lab.path("scratch");
    std::fs::create_dir(&scratch).unwrap();
    let compile = |args: &[&str]| {
        let output = lab
            .command(sampler_cc())
            .args(args)
            .env("TMPDIR", &scratch)
            .output()
            .unwrap();
        assert!(output.status.success(), "{args:?}: {output:?}");
    };
    compile(&[
        "-fsampler-strict",
        "-g",
        "-O2",
        "-c",
        "hello.c",
        "-o",
        "hello.o",
    ]);
    assert_eq!(std::fs::read_dir(&scratch).unwrap().count(), 0);
    lab.gcc(&["-g", "-O2", "-c", "hello.c", "-o", "plain.o"]);
    let unit_names = |object: &str| -> Vec<String> {
        let dump = lab
            .command("readelf")
            .args(["--debug-dump=info", object])
            .output()
            .unwrap();
        String::from_utf8_lossy(&dump.stdout)
            .lines()
            .filter(|line| line.contains("DW_AT_name") && line.ends_with(".c"))
            .map(|line| line.rsplit(' ').next().unwrap().to_owned())
            .collect()
    };
    assert_eq!(unit_names("hello.o"), ["hello.c"]);
    assert_eq!(unit_names("hello.o"), unit_names("plain.o"));
    compile(&[
        "-fsampler-strict",
        "-save-temps",
        "-c",
        "hello.c",
        "-o",
        "saved.o",
    ]);
    // gcc names them after the output, as it does itself.
    assert!(lab.path("saved.i").exists() && lab.path("saved.s").exists());
    assert_eq!(std::fs::read_dir(&scratch).unwrap().count(), 0);
}
