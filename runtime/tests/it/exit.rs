//! Reports at normal exit, destinations, environment, forks, threads,
//! plugins and interim reports.

use super::*;

#[test]
fn exact_report_at_exit_and_variables_removed() {
    let lab = Lab::new();
    let program = lab.program_static();
    let output = lab.run(
        &program,
        &["exit"],
        &[
            ("SAMPLER_FILE", "run.report"),
            ("SAMPLER_SPARSITY", "1"),
            ("SAMPLER_SEED", "9"),
        ],
    );
    assert_eq!(stderr(&output), "");
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(
        stdout(&output),
        "SAMPLER_FILE=(unset)\nSAMPLER_REPORT_FD=(unset)\nSAMPLER_SPARSITY=(unset)\nSAMPLER_SEED=(unset)\n"
    );
    assert_eq!(
        lab.read("run.report"),
        samples_report(&known_samples(UNIT_11, 10))
    );
}

#[test]
fn without_sparsity_nothing_is_sampled_and_without_destination_nothing_is_written() {
    let lab = Lab::new();
    let program = lab.program_static();
    let output = lab.run(&program, &["exit"], &[("SAMPLER_FILE", "run.report")]);
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(
        lab.read("run.report"),
        samples_report(&known_samples(UNIT_11, 0))
    );
    let output = lab.run(&program, &["exit"], &[("SAMPLER_SPARSITY", "1")]);
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(stderr(&output), "");
    assert_eq!(std::fs::read_dir(lab.dir.path()).unwrap().count(), 2); // program, run.report
}

#[test]
fn report_fd_beats_report_file() {
    let lab = Lab::new();
    let program = lab.program_static();
    let script = format!(
        "SAMPLER_REPORT_FD=3 SAMPLER_FILE=file.report SAMPLER_SPARSITY=1 '{}' exit 3>fd.report",
        program.display()
    );
    let output = Command::new("bash")
        .args(["-c", &script])
        .current_dir(lab.dir.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(!lab.path("file.report").exists());
    assert_eq!(
        lab.read("fd.report"),
        samples_report(&known_samples(UNIT_11, 10))
    );
}

#[test]
fn unusable_values_get_one_line_and_change_nothing_else() {
    let lab = Lab::new();
    let program = lab.program_static();
    let output = lab.run(
        &program,
        &["exit"],
        &[
            ("SAMPLER_FILE", "run.report"),
            ("SAMPLER_SPARSITY", "often"),
        ],
    );
    assert_eq!(
        stderr(&output),
        "sampler: SAMPLER_SPARSITY=`often` is not a number ≥ 1; sampling is off\n"
    );
    assert_eq!(output.status.code(), Some(0));
    assert!(stdout(&output).starts_with("SAMPLER_FILE=(unset)\n"));
    assert_eq!(
        lab.read("run.report"),
        samples_report(&known_samples(UNIT_11, 0))
    );

    let output = lab.run(
        &program,
        &["exit"],
        &[("SAMPLER_FILE", "no/such/dir/run.report")],
    );
    assert_eq!(
        stderr(&output),
        "sampler: cannot create SAMPLER_FILE=`no/such/dir/run.report` (No such file or directory (os error 2)); no report will be written\n"
    );
    assert_eq!(output.status.code(), Some(0));

    let output = lab.run(&program, &["exit"], &[("SAMPLER_REPORT_FD", "77")]);
    assert_eq!(
        stderr(&output),
        "sampler: SAMPLER_REPORT_FD=77 is not an open file descriptor (Bad file descriptor (os error 9)); no report will be written\n"
    );
    assert_eq!(output.status.code(), Some(0));
}

#[test]
fn a_forked_child_writes_nothing() {
    let lab = Lab::new();
    let program = lab.program_static();
    let output = lab.run(&program, &["fork"], &[("SAMPLER_FILE", "run.report")]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    // One block: the parent's, without the child's 100 positive returns.
    assert_eq!(
        lab.read("run.report"),
        samples_report(&known_samples(UNIT_11, 0))
    );
}

#[test]
fn eight_threads_count_exactly() {
    let lab = Lab::new();
    let program = lab.program_static();
    let output = lab.run(
        &program,
        &["threads"],
        &[("SAMPLER_FILE", "run.report"), ("SAMPLER_SPARSITY", "1")],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let expected = known_samples(UNIT_11, 8_000_000).replace("0\t3\t1", "8000000\t3\t1");
    assert_eq!(
        lab.read("run.report"),
        format!("<report id=\"samples\">\n{expected}</report>\n")
    );
}

#[test]
fn interim_reports_split_the_counts_between_them() {
    let lab = Lab::new();
    let program = lab.program_static();
    let output = lab.run(&program, &["interim"], &[("SAMPLER_FILE", "run.report")]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let after = format!(
        "<samples unit=\"{UNIT_11}\" scheme=\"branches\">\n0\t0\n0\t0\n</samples>\n\
         <timestamps unit=\"{UNIT_11}\" scheme=\"branches\" when=\"first\">\n0\n0\n</timestamps>\n\
         <timestamps unit=\"{UNIT_11}\" scheme=\"branches\" when=\"last\">\n0\n0\n</timestamps>\n\
         <samples unit=\"{UNIT_11}\" scheme=\"returns\">\n5\t0\t0\n</samples>\n\
         <samples unit=\"{UNIT_11}\" scheme=\"bounds\">\n9223372036854775807\t-9223372036854775808\n</samples>\n"
    );
    assert_eq!(
        lab.read("run.report"),
        format!(
            "<report id=\"samples\">\n{}</report>\n<report id=\"samples\">\n{after}</report>\n",
            known_samples(UNIT_11, 0)
        )
    );
}

#[test]
fn a_plugin_loaded_twice_reports_twice_through_one_shared_runtime() {
    let lab = Lab::new();
    let (program, plugin) = lab.program_and_plugin_shared();
    let output = lab.run(
        &program,
        &["plugin", plugin.to_str().unwrap()],
        &[("SAMPLER_FILE", "run.report")],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let plugin_block = |true_count: u64| {
        format!(
            "<report id=\"samples\">\n\
             <samples unit=\"{UNIT_22}\" scheme=\"branches\">\n0\t{true_count}\n0\t0\n</samples>\n\
             <timestamps unit=\"{UNIT_22}\" scheme=\"branches\" when=\"first\">\n0\n0\n</timestamps>\n\
             <timestamps unit=\"{UNIT_22}\" scheme=\"branches\" when=\"last\">\n0\n0\n</timestamps>\n\
             <samples unit=\"{UNIT_22}\" scheme=\"returns\">\n0\t0\t0\n</samples>\n\
             <samples unit=\"{UNIT_22}\" scheme=\"bounds\">\n9223372036854775807\t-9223372036854775808\n</samples>\n\
             </report>\n"
        )
    };
    assert_eq!(
        lab.read("run.report"),
        format!(
            "{}{}<report id=\"samples\">\n{}</report>\n",
            plugin_block(1),
            plugin_block(2),
            known_samples(UNIT_11, 0)
        )
    );
}

/// The names of the global symbols `file` defines.
fn defined_globals(file: &Path, dynamic: bool) -> Vec<String> {
    let mut command = Command::new("nm");
    if dynamic {
        command.arg("-D");
    }
    let output = command
        .args(["-g", "--defined-only"])
        .arg(file)
        .output()
        .unwrap();
    let mut names: Vec<String> = stdout(&output)
        .lines()
        .filter_map(|line| line.split_whitespace().nth(2).map(str::to_owned))
        .collect();
    names.sort();
    names
}

#[test]
fn only_the_abi_leaves_the_static_and_the_shared_runtime() {
    let abi = [
        "cbi_atomsObserve",
        "cbi_checkCountdown",
        "cbi_countdown",
        "cbi_gObjectUnrefClassify",
        "cbi_nextTimestamp",
        "cbi_plainCounts",
        "cbi_registerUnit",
        "cbi_reportNow",
        "cbi_sample",
        "cbi_sampledEvents",
        "cbi_traceObserve",
        "cbi_traceObserveValue",
        "cbi_traceRecord",
        "cbi_traceRecordValue",
        "cbi_traceRing",
        "cbi_unregisterUnit",
    ];
    assert_eq!(
        defined_globals(&packaged().join("libsampler_runtime.a"), false),
        abi
    );
    assert_eq!(
        defined_globals(&packaged().join("libsampler_runtime.so"), true),
        abi
    );
}

#[test]
fn mixed_bounds_and_the_scheme_helpers_work_through_the_shared_runtime() {
    let lab = Lab::new();
    let program = lab.helpers_shared();
    let output = lab.run(&program, &[], &[("SAMPLER_FILE", "run.report")]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(
        stdout(&output),
        "main 0\nmain 0\nother 1\nmain 1\nnot shared 0\nclassify 3 3\n"
    );
    let unit = "33333333333333333333333333333333";
    let text = lab.read("run.report");
    assert_eq!(
        text,
        format!(
            "<report id=\"samples\">\n\
             <samples unit=\"{unit}\" scheme=\"bounds\">\n\
             -7\t100\n3\t18446744073709551614\n(nil)\t0x7ffc3a10\n\
             </samples>\n</report>\n\
             <report id=\"samples\">\n\
             <samples unit=\"{unit}\" scheme=\"bounds\">\n\
             9223372036854775807\t-9223372036854775808\n9\t9\n0xffffffffffffffff\t(nil)\n\
             </samples>\n</report>\n"
        )
    );
    parse(&text);
}

/// A unit built for runtime ABI 1 (whose countdown ran out at zero, one
/// event later than ABI 2's) is left out of the report, with one line
/// that says so; the current unit's sites count as usual.
#[test]
fn a_unit_of_another_abi_is_ignored_with_one_line() {
    let lab = Lab::new();
    let program = lab.static_program("old_abi.c", "old_abi", &[]);
    let output = lab.run(
        &program,
        &[],
        &[("SAMPLER_FILE", "run.report"), ("SAMPLER_SPARSITY", "1")],
    );
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(
        stderr(&output),
        "sampler: a unit built for runtime ABI 1 was ignored; this runtime speaks ABI 2\n"
    );
    let report = lab.read("run.report");
    let unit_44 = "4".repeat(32);
    assert!(
        report.contains(&format!(
            "<samples unit=\"{unit_44}\" scheme=\"branches\">\n5\t5\n0\t0\n</samples>\n"
        )),
        "{report}"
    );
    assert!(!report.contains(&"5".repeat(32)), "{report}");
}
