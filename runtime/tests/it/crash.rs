//! Fatal and terminating signals: the report holds the samples, the
//! crashing thread's backtrace and the loaded modules, and the process
//! still dies by the same signal.

use super::*;

fn build_id_of(program: &Path) -> String {
    let notes = Command::new("readelf")
        .arg("-n")
        .arg(program)
        .output()
        .unwrap();
    stdout(&notes)
        .lines()
        .find_map(|line| line.trim().strip_prefix("Build ID: ").map(str::to_owned))
        .expect("gcc wrote no build id")
}

fn check_crash(mode: &str, signal: i32, function: &str) {
    let lab = Lab::new();
    let program = lab.program_static();
    let output = lab.run(&program, &[mode], &[("SAMPLER_FILE", "run.report")]);
    assert_eq!(
        signal_of(&output),
        Some(signal),
        "{mode}: {:?}",
        output.status
    );
    let text = lab.read("run.report");
    let report = parse(&text);
    assert_eq!(
        subreport_ids(&report),
        ["samples", "main-backtrace", "modules"],
        "{text}"
    );
    assert!(
        text.starts_with(&format!(
            "<report id=\"samples\">\n{}</report>\n<report id=\"main-backtrace\">\n",
            known_samples(UNIT_11, 0)
        )),
        "{text}"
    );
    let Subreport::Other { lines: frames, .. } = &report.subreports[1] else {
        unreachable!()
    };
    assert!(
        frames
            .iter()
            .any(|frame| frame.contains(&format!("({function}+0x"))),
        "no frame in `{function}`:\n{}",
        frames.join("\n")
    );
    assert!(
        frames.iter().all(|frame| frame.ends_with(']')),
        "{frames:?}"
    );
    let Subreport::Other { lines: modules, .. } = &report.subreports[2] else {
        unreachable!()
    };
    let executable = std::fs::canonicalize(&program).unwrap();
    let main_line = format!("\t{}\t{}", build_id_of(&program), executable.display());
    assert!(
        modules
            .iter()
            .any(|line| line.starts_with("0x") && line.ends_with(&main_line)),
        "no `{main_line}` in modules:\n{}",
        modules.join("\n")
    );
    assert!(
        modules.iter().any(|line| line.contains("/libc.so.6")),
        "{modules:?}"
    );
}

#[test]
fn segmentation_fault() {
    check_crash("segv", libc_signal::SIGSEGV, "crash_segv");
}

#[test]
fn abort() {
    check_crash("abort", libc_signal::SIGABRT, "crash_abort");
}

#[test]
fn stack_overflow_reports_from_the_alternate_stack() {
    check_crash("overflow", libc_signal::SIGSEGV, "recurse");
}

#[test]
fn termination_by_a_watchdog() {
    check_crash("term", libc_signal::SIGTERM, "wait_for_watchdog");
}

#[test]
fn no_destination_means_no_handler_and_the_same_death() {
    let lab = Lab::new();
    let program = lab.program_static();
    let output = lab.run(&program, &["segv"], &[]);
    assert_eq!(signal_of(&output), Some(libc_signal::SIGSEGV));
    assert_eq!(stderr(&output), "");
}

/// Signal numbers of Linux on every architecture we build for.
mod libc_signal {
    pub(super) const SIGABRT: i32 = 6;
    pub(super) const SIGSEGV: i32 = 11;
    pub(super) const SIGTERM: i32 = 15;
}
