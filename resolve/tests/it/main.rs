//! The report-side tools run as a user runs them: binaries, files, pipes.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

mod backtrace;
mod trace;

const A: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
const B: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(fixtures().join(name)).unwrap()
}

/// Runs one of this crate's tools in `dir` with `stdin` as its input.
fn tool(name: &str, dir: &Path, args: &[&str], stdin: &[u8]) -> Output {
    let program = match name {
        "extract-report" => env!("CARGO_BIN_EXE_extract-report"),
        "resolve-samples" => env!("CARGO_BIN_EXE_resolve-samples"),
        "resolve-timestamps" => env!("CARGO_BIN_EXE_resolve-timestamps"),
        "resolve-backtrace" => env!("CARGO_BIN_EXE_resolve-backtrace"),
        "resolve-trace" => env!("CARGO_BIN_EXE_resolve-trace"),
        other => panic!("no tool {other}"),
    };
    let mut child = Command::new(program)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let stdin = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        // The tool may exit early on bad input; a closed pipe is expected then.
        let _ = input.write_all(&stdin);
    });
    let output = child.wait_with_output().unwrap();
    writer.join().unwrap();
    output
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).unwrap()
}

#[track_caller]
fn assert_success(output: &Output, expected_stdout: &str) {
    assert_eq!(stderr(output), "");
    assert_eq!(stdout(output), expected_stdout);
    assert_eq!(output.status.code(), Some(0));
}

#[track_caller]
fn assert_failure(output: &Output, code: i32, expected_stderr: &str) {
    assert_eq!(stderr(output), expected_stderr);
    assert_eq!(stdout(output), "");
    assert_eq!(output.status.code(), Some(code));
}

fn joined_samples(origin_a: &str, origin_b: &str) -> String {
    format!(
        "{origin_b}\t{B}\tbranches\t/src/b.c\t3\thelper\t1\tn < 0\t3\t4\n\
         {origin_b}\t{B}\tbounds\t/src/b.c\t5\thelper\t3\tn\tlocal\tdirect\t-10\t7\n\
         {origin_a}\t{A}\treturns\t/src/a.c\t12\tmain\t4\tread_config\t0\t2\t5\n\
         {origin_a}\t{A}\tbranches\t/src/a.c\t10\tmain\t2\targc > 1\t3\t1\n\
         {origin_a}\t{A}\tbranches\t/src/a.c\t14\tmain\t7\tp == 0\t0\t4\n"
    )
}

mod resolve_samples {
    use super::*;

    #[test]
    fn merges_repeated_sections_in_order_of_first_appearance() {
        let output = tool(
            "resolve-samples",
            &fixtures(),
            &["two-units.sites"],
            &fixture("run.report"),
        );
        assert_success(
            &output,
            &joined_samples("two-units.sites", "two-units.sites"),
        );
    }

    #[test]
    fn tables_from_several_files_name_their_origin() {
        let output = tool(
            "resolve-samples",
            &fixtures(),
            &["unit-b.sites", "unit-a.sites"],
            &fixture("run.report"),
        );
        assert_success(&output, &joined_samples("unit-a.sites", "unit-b.sites"));
    }

    #[test]
    fn reads_the_output_of_extract_report() {
        let samples = tool(
            "extract-report",
            &fixtures(),
            &["samples"],
            &fixture("run.report"),
        );
        assert_eq!(samples.status.code(), Some(0));
        let output = tool(
            "resolve-samples",
            &fixtures(),
            &["two-units.sites"],
            &samples.stdout,
        );
        assert_success(
            &output,
            &joined_samples("two-units.sites", "two-units.sites"),
        );
    }

    #[test]
    fn several_runs_piped_together_add_up() {
        let twice = fixture("run.report").repeat(2);
        let output = tool("resolve-samples", &fixtures(), &["two-units.sites"], &twice);
        let expected = format!(
            "two-units.sites\t{B}\tbranches\t/src/b.c\t3\thelper\t1\tn < 0\t6\t8\n\
             two-units.sites\t{B}\tbounds\t/src/b.c\t5\thelper\t3\tn\tlocal\tdirect\t-10\t7\n\
             two-units.sites\t{A}\treturns\t/src/a.c\t12\tmain\t4\tread_config\t0\t4\t10\n\
             two-units.sites\t{A}\tbranches\t/src/a.c\t10\tmain\t2\targc > 1\t6\t2\n\
             two-units.sites\t{A}\tbranches\t/src/a.c\t14\tmain\t7\tp == 0\t0\t8\n"
        );
        assert_success(&output, &expected);
    }

    #[test]
    fn a_section_without_a_table_is_named() {
        let output = tool(
            "resolve-samples",
            &fixtures(),
            &["unit-a.sites"],
            &fixture("run.report"),
        );
        assert_failure(
            &output,
            2,
            &format!(
                "resolve-samples: error: standard input: line 2: no site table for unit `{B}` scheme `branches`\n\
                 \n\
                 hint: name the binary, library or `.sites` file built from that unit\n"
            ),
        );
    }

    #[test]
    fn a_line_count_mismatch_names_unit_scheme_and_both_counts() {
        let short = format!("<samples unit=\"{A}\" scheme=\"branches\">\n1\t1\n</samples>\n");
        let output = tool(
            "resolve-samples",
            &fixtures(),
            &["two-units.sites"],
            short.as_bytes(),
        );
        assert_failure(
            &output,
            2,
            &format!(
                "resolve-samples: error: standard input: line 3: the `<samples>` section for unit `{A}` scheme `branches` has 1 lines, but the site table from `two-units.sites` has 2 sites\n"
            ),
        );
        let long =
            format!("<samples unit=\"{B}\" scheme=\"bounds\">\n1\t2\n3\t4\n5\t6\n</samples>\n");
        let output = tool(
            "resolve-samples",
            &fixtures(),
            &["two-units.sites"],
            long.as_bytes(),
        );
        assert_failure(
            &output,
            2,
            &format!(
                "resolve-samples: error: standard input: line 5: the `<samples>` section for unit `{B}` scheme `bounds` has 3 lines, but the site table from `two-units.sites` has 1 sites\n"
            ),
        );
    }

    #[test]
    fn malformed_reports_are_named_by_line() {
        let bad = format!("<samples unit=\"{A}\" scheme=\"returns\">\n1\t2\n</samples>\n");
        let output = tool(
            "resolve-samples",
            &fixtures(),
            &["two-units.sites"],
            bad.as_bytes(),
        );
        assert_failure(
            &output,
            2,
            "resolve-samples: error: standard input: line 2: expected 3 unsigned decimal counters separated by tabs, or `</samples>` closing the section opened at line 1, found \"1\\t2\"\n",
        );
    }

    #[test]
    fn malformed_and_conflicting_tables_are_named() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("bad.sites"),
            format!("<sites unit=\"{A}\" scheme=\"branches\">\na.c\tten\tmain\t2\tx\n</sites>\n"),
        )
        .unwrap();
        let output = tool("resolve-samples", dir.path(), &["bad.sites"], b"");
        assert_failure(
            &output,
            2,
            "resolve-samples: error: `bad.sites`: line 2: field 2 (line) of the site line is \"ten\", not a decimal number below 2^32\n",
        );
        std::fs::write(
            dir.path().join("other-a.sites"),
            format!(
                "<sites unit=\"{A}\" scheme=\"returns\">\n/src/a.c\t12\tmain\t4\tother\n</sites>\n"
            ),
        )
        .unwrap();
        let a_sites = fixtures().join("unit-a.sites");
        let output = tool(
            "resolve-samples",
            dir.path(),
            &[a_sites.to_str().unwrap(), "other-a.sites"],
            b"",
        );
        assert_failure(
            &output,
            2,
            &format!(
                "resolve-samples: error: unit `{A}` scheme `returns`: `{}` and `other-a.sites` hold different site tables (1 and 1 sites) for the same unit signature\n",
                a_sites.display()
            ),
        );
        let output = tool("resolve-samples", dir.path(), &["missing.sites"], b"");
        assert_failure(
            &output,
            2,
            "resolve-samples: error: `missing.sites`: cannot read: No such file or directory (os error 2)\n",
        );
    }

    #[test]
    fn schemes_unknown_to_this_version_are_summed() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("paths.sites"),
            format!(
                "<sites unit=\"{A}\" scheme=\"path-profiles\">\na.c\t1\tf\t0\tp1\textra\n</sites>\n"
            ),
        )
        .unwrap();
        let report = format!(
            "<samples unit=\"{A}\" scheme=\"path-profiles\">\n1\t2\t3\t4\n</samples>\n\
             <samples unit=\"{A}\" scheme=\"path-profiles\">\n10\t20\t30\t40\n</samples>\n"
        );
        let output = tool(
            "resolve-samples",
            dir.path(),
            &["paths.sites"],
            report.as_bytes(),
        );
        assert_success(
            &output,
            &format!("paths.sites\t{A}\tpath-profiles\ta.c\t1\tf\t0\tp1\textra\t11\t22\t33\t44\n"),
        );
        let inconsistent = format!(
            "<samples unit=\"{A}\" scheme=\"path-profiles\">\n1\t2\n</samples>\n\
             <samples unit=\"{A}\" scheme=\"path-profiles\">\n1\t2\t3\n</samples>\n"
        );
        let output = tool(
            "resolve-samples",
            dir.path(),
            &["paths.sites"],
            inconsistent.as_bytes(),
        );
        assert_failure(
            &output,
            2,
            &format!(
                "resolve-samples: error: standard input: line 5: unit `{A}` scheme `path-profiles` has 3 counters per site here but 2 in an earlier section\n"
            ),
        );
    }

    #[test]
    fn counter_overflow_is_an_error_not_a_wrap() {
        let report = format!(
            "<samples unit=\"{A}\" scheme=\"returns\">\n18446744073709551615\t0\t0\n</samples>\n\
             <samples unit=\"{A}\" scheme=\"returns\">\n1\t0\t0\n</samples>\n"
        );
        let output = tool(
            "resolve-samples",
            &fixtures(),
            &["unit-a.sites"],
            report.as_bytes(),
        );
        assert_failure(
            &output,
            2,
            &format!(
                "resolve-samples: error: standard input: line 5: unit `{A}` scheme `returns`: the sum of site 0's counters exceeds 2^64 - 1\n"
            ),
        );
    }

    #[test]
    fn site_tables_embedded_in_binaries_built_by_gcc() {
        let dir = tempfile::tempdir().unwrap();
        let run = |program: &str, args: &[&str]| {
            let status = Command::new(program)
                .args(args)
                .current_dir(dir.path())
                .status()
                .unwrap_or_else(|e| panic!("cannot run `{program}`: {e}"));
            assert!(status.success(), "`{program} {}` failed", args.join(" "));
        };
        std::fs::copy(fixtures().join("unit-a.sites"), dir.path().join("a.sites")).unwrap();
        std::fs::copy(fixtures().join("unit-b.sites"), dir.path().join("b.sites")).unwrap();
        std::fs::write(
            dir.path().join("a.c"),
            "int helper(int);\nint main(void) { return helper(0); }\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("b.c"), "int helper(int n) { return n; }\n").unwrap();
        for unit in ["a", "b"] {
            run("gcc", &["-c", "-fPIC", &format!("{unit}.c")]);
            run(
                "objcopy",
                &[
                    "--add-section",
                    &format!(".debug_site_info={unit}.sites"),
                    &format!("{unit}.o"),
                ],
            );
        }
        run("gcc", &["-shared", "b.o", "-o", "libb.so"]);
        run("gcc", &["a.o", "-L.", "-lb", "-o", "prog"]);
        run("ar", &["rcs", "libboth.a", "b.o", "a.o"]);

        let report = fixture("run.report");
        let output = tool("resolve-samples", dir.path(), &["prog", "libb.so"], &report);
        assert_success(&output, &joined_samples("prog", "libb.so"));
        let output = tool("resolve-samples", dir.path(), &["libboth.a"], &report);
        assert_success(&output, &joined_samples("libboth.a(a.o)", "libboth.a(b.o)"));

        // A binary given twice, or with the table extracted from it, is fine.
        let output = tool(
            "resolve-samples",
            dir.path(),
            &["prog", "libb.so", "a.sites", "prog"],
            &report,
        );
        assert_success(&output, &joined_samples("prog", "libb.so"));

        run("strip", &["prog"]);
        let output = tool("resolve-samples", dir.path(), &["prog"], &report);
        assert_failure(
            &output,
            2,
            "resolve-samples: error: `prog` has no `.debug_site_info` section: was it built by `sampler-cc`?\n",
        );
    }
}

mod resolve_timestamps {
    use super::*;

    #[test]
    fn first_keeps_the_earliest_and_last_the_latest() {
        let output = tool(
            "resolve-timestamps",
            &fixtures(),
            &["two-units.sites"],
            &fixture("run.report"),
        );
        assert_success(
            &output,
            &format!(
                "2\ttwo-units.sites\t{A}\tbranches\tfirst\t/src/a.c\t10\tmain\t2\targc > 1\n\
                 6\ttwo-units.sites\t{A}\tbranches\tfirst\t/src/a.c\t14\tmain\t7\tp == 0\n\
                 9\ttwo-units.sites\t{A}\tbranches\tlast\t/src/a.c\t10\tmain\t2\targc > 1\n\
                 8\ttwo-units.sites\t{A}\tbranches\tlast\t/src/a.c\t14\tmain\t7\tp == 0\n\
                 3\ttwo-units.sites\t{B}\tbranches\tfirst\t/src/b.c\t3\thelper\t1\tn < 0\n"
            ),
        );
    }

    #[test]
    fn a_line_count_mismatch_names_unit_scheme_and_both_counts() {
        let report = format!(
            "<timestamps unit=\"{A}\" scheme=\"returns\" when=\"last\">\n1\n2\n</timestamps>\n"
        );
        let output = tool(
            "resolve-timestamps",
            &fixtures(),
            &["two-units.sites"],
            report.as_bytes(),
        );
        assert_failure(
            &output,
            2,
            &format!(
                "resolve-timestamps: error: standard input: line 4: the `<timestamps>` section for unit `{A}` scheme `returns` has 2 lines, but the site table from `two-units.sites` has 1 sites\n"
            ),
        );
    }
}

mod extract_report {
    use super::*;

    #[test]
    fn prints_every_block_with_the_id() {
        let output = tool(
            "extract-report",
            &fixtures(),
            &["main-backtrace"],
            &fixture("run.report"),
        );
        assert_success(
            &output,
            "./prog(main+0x10)[0x401136]\n/lib/x86_64-linux-gnu/libc.so.6(__libc_start_main+0x85)[0x7f1e2a029d90]\n",
        );
    }

    #[test]
    fn exit_status_says_found_missing_or_broken() {
        let output = tool(
            "extract-report",
            &fixtures(),
            &["modules"],
            &fixture("run.report"),
        );
        assert_failure(
            &output,
            1,
            "extract-report: no `<report id=\"modules\">` in the input\n",
        );
        let output = tool(
            "extract-report",
            &fixtures(),
            &["samples"],
            b"<report id=\"samples\">\n",
        );
        assert_failure(
            &output,
            2,
            "extract-report: error: standard input: line 1: unexpected end of input: `<report>` opened at line 1 is not closed by `</report>`\n",
        );
        let output = tool("extract-report", &fixtures(), &[], b"");
        assert_eq!(output.status.code(), Some(2));
        assert!(stderr(&output).contains("<ID>"), "{}", stderr(&output));
    }
}
