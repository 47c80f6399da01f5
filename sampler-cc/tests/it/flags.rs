//! Other compilers and flags (issue 17, item 5): optimisation, debug
//! information, standards, position-independent, static, LTO and sanitised
//! builds of one program, each run with every event counted and compared
//! with plain gcc's build; C++ in the same build; what is refused.

use super::*;

/// C89 (no `//`, declarations first) that every `-std=` takes.
const PROGRAM: &str = r#"#include <stdio.h>
#include <stdlib.h>

static int counted;

static int classify(int value)
{
    if (value < 0)
        return -1;
    else if (value % 3 == 0)
        return 3;
    return 1;
}

int main(int argc, char **argv)
{
    int i;
    int total = 0;
    (void)argv;
    for (i = 0; i < 10; i++) {
        int kind = classify(i - 2);
        total += kind;
        if (kind == 3)
            counted++;
    }
    printf("%d %d %d\n", total, counted, argc);
    return 0;
}
"#;

/// Each row is one build, compiled and linked in one command.
const BUILDS: [&[&str]; 8] = [
    &["-O0", "-g0", "-std=c89", "-pedantic"],
    &["-O1", "-g1", "-std=c99"],
    &["-O2", "-g3", "-std=c11", "-fPIE", "-pie"],
    &["-O3", "-std=c17", "-fPIC"],
    &["-Os", "-std=c2x"],
    &["-O2", "-flto"],
    &["-O2", "-static"],
    &["-O1", "-g", "-fsanitize=address,undefined"],
];

#[test]
fn optimisation_debug_standard_pic_static_lto_and_sanitizer_builds() {
    let lab = Lab::new();
    lab.write("prog.c", PROGRAM);
    for (index, flags) in BUILDS.iter().enumerate() {
        let plain = format!("plain{index}");
        let ours = format!("ours{index}");
        let mut args = flags.to_vec();
        args.extend(["-Wall", "-Wextra", "prog.c", "-o", &plain]);
        let output = lab.command("gcc").args(&args).output().unwrap();
        assert!(output.status.success(), "gcc {args:?}: {output:?}");
        let mut args = vec![
            "-fsampler-strict",
            "-fno-sample",
            "-fsampler-scheme=branches",
            "-fsampler-scheme=returns",
            "-fsampler-scheme=function-entries",
            "-fsampler-scheme=bounds",
        ];
        args.extend_from_slice(flags);
        args.extend(["-Wall", "-Wextra", "prog.c", "-o", &ours]);
        lab.cc(&args);
        let expected = lab.run(&plain, &[], &format!("{plain}.report"), &[]);
        assert_eq!(expected, "12 3 1\n", "{flags:?}");
        let report = format!("{ours}.report");
        assert_eq!(lab.run(&ours, &[], &report, &[]), expected, "{flags:?}");
        let rows: Vec<String> = lab
            .resolve(&report, &[&ours])
            .lines()
            .map(|line| line.split('\t').skip(2).collect::<Vec<_>>().join(" | "))
            .collect();
        assert_eq!(
            rows,
            [
                "branches | LAB/prog.c | 8 | classify | 1 | value < 0 | 8 | 2",
                "branches | LAB/prog.c | 10 | classify | 3 | value % 3 == 0 | 5 | 3",
                "branches | LAB/prog.c | 20 | main | 4 | i < 10 | 1 | 10",
                "branches | LAB/prog.c | 23 | main | 8 | kind == 3 | 7 | 3",
                "bounds | LAB/prog.c | 18 | main | 2 | total | local | direct | 0 | 0",
                "bounds | LAB/prog.c | 20 | main | 4 | i | local | direct | 0 | 0",
                "bounds | LAB/prog.c | 20 | main | 4 | i | local | direct | 1 | 10",
                "bounds | LAB/prog.c | 21 | main | 6 | kind | local | direct | -1 | 3",
                "bounds | LAB/prog.c | 22 | main | 7 | total | local | direct | -2 | 12",
                "bounds | LAB/prog.c | 24 | main | 9 | counted | global | direct | 1 | 3",
                "function-entries | LAB/prog.c | 6 | classify | 0 | 10",
                "function-entries | LAB/prog.c | 15 | main | 0 | 1",
                "returns | LAB/prog.c | 21 | main | 6 | classify | 2 | 0 | 8",
                "returns | LAB/prog.c | 26 | main | 10 | printf | 0 | 0 | 1",
            ],
            "{flags:?}"
        );
    }
}

/// C and C++ in one command: the C unit is instrumented, the C++ one is
/// gcc's (cc1plus never reaches sampler-cc's stage), byte for byte.
#[test]
fn cxx_in_the_same_build_is_the_cxx_compiler_s() {
    if Command::new("g++").arg("--version").output().is_err() {
        eprintln!("g++ is not installed: skipped");
        return;
    }
    let lab = Lab::new();
    lab.write(
        "helper.cc",
        "#include <string>\n\
         extern \"C\" int helper(int n) { std::string s(n, 'x'); return (int)s.size() * 2; }\n",
    );
    lab.write(
        "mixed.c",
        "#include <stdio.h>\nint helper(int);\n\
         int main(int argc, char **argv)\n{\n    (void)argv;\n    if (argc > 1)\n        return 1;\n\
         \x20   printf(\"%d\\n\", helper(21));\n    return 0;\n}\n",
    );
    lab.cc(&[
        "-fsampler-strict",
        "-fsampler-scheme=branches",
        "-fno-sample",
        "-O2",
        "mixed.c",
        "helper.cc",
        "-lstdc++",
        "-o",
        "mixed",
    ]);
    assert_eq!(lab.run("mixed", &[], "report", &[]), "42\n");
    assert_eq!(
        lab.resolve("report", &["mixed"]),
        "mixed\tUNIT\tbranches\tLAB/mixed.c\t6\tmain\t2\targc > 1\t1\t0\n"
    );
    lab.cc(&["-fsampler-strict", "-O2", "-c", "helper.cc", "-o", "ours.o"]);
    let plain = lab
        .command("gcc")
        .args(["-O2", "-c", "helper.cc", "-o", "gcc.o"])
        .output()
        .unwrap();
    assert!(plain.status.success(), "{plain:?}");
    assert_eq!(
        std::fs::read(lab.path("ours.o")).unwrap(),
        std::fs::read(lab.path("gcc.o")).unwrap()
    );
}

/// What sampler-cc cannot build says why, and builds nothing: 32-bit and
/// x32 targets (the runtime is x86-64's only; the last `-m` flag decides,
/// as for gcc), and clang as the real compiler (no cc1 to stand in for).
#[test]
fn other_abis_and_clang_are_refused_with_the_reason() {
    let lab = Lab::new();
    lab.write("prog.c", PROGRAM);
    let refused = |real_cc: Option<&str>, args: &[&str]| -> String {
        let mut command = lab.command(sampler_cc());
        if let Some(real_cc) = real_cc {
            command.env("SAMPLER_REAL_CC", real_cc);
        }
        let output = command.args(args).output().unwrap();
        assert_eq!(output.status.code(), Some(1), "{args:?}: {output:?}");
        assert!(!lab.path("prog.o").exists(), "{args:?}");
        String::from_utf8(output.stderr).unwrap()
    };
    let abi = |flag: &str| {
        format!(
            "sampler-cc: error: {flag}: sampler-cc cannot instrument {flag} programs: its \
             runtime (libsampler_runtime) is built for x86-64 only, and instrumented code needs \
             it to link; build them with gcc itself\n"
        )
    };
    assert_eq!(refused(None, &["-m32", "-c", "prog.c"]), abi("-m32"));
    assert_eq!(refused(None, &["-m64", "-m32", "prog.c"]), abi("-m32"));
    assert_eq!(refused(Some("gcc -mx32"), &["-c", "prog.c"]), abi("-mx32"));
    lab.cc(&["-fsampler-strict", "-m32", "-m64", "-c", "prog.c"]);
    std::fs::remove_file(lab.path("prog.o")).unwrap();

    if Command::new("clang").arg("--version").output().is_err() {
        eprintln!("clang is not installed: its refusal is not checked");
        return;
    }
    let clang = "sampler-cc: error: the real compiler clang (SAMPLER_REAL_CC) is clang, which \
                 compiles C in its own process with no cc1 program for sampler-cc to stand in \
                 for: sampler-cc instruments through gcc only; set SAMPLER_REAL_CC to a gcc (or \
                 unset it for `gcc`)\n";
    assert_eq!(refused(Some("clang"), &["-c", "prog.c"]), clang);
    assert_eq!(refused(Some("clang"), &["-fno-sample", "prog.c"]), clang);
}
