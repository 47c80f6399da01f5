//! The flight recorder: `tests/c/trace.c` observes a known sequence in
//! four threads through `cbi_traceObserve`, then crashes or asks for an
//! interim report; the `trace` subreport holds each thread's last
//! `SAMPLER_TRACE` observations, oldest first, the right thread marked.

use std::collections::HashMap;

use sampler_formats::{ThreadState, Trace};

use super::*;

const WORKERS: u64 = 3;
const EXITED_RECORDS: u64 = 3;
const WORKER_RECORDS: u64 = 12;
const MAIN_RECORDS: u64 = 5;
/// `pattern` of trace.c: (scheme, site, slot) of observation k % 5.
const PATTERN: [(&str, u32, u16); 5] = [
    ("branches", 0, 0),
    ("branches", 1, 1),
    ("returns", 0, 2),
    ("bounds", 0, 0),
    ("branches", 0, 1),
];

impl Lab {
    /// `trace` (tests/c/trace.c) linked with the static runtime.
    fn trace_static(&self) -> PathBuf {
        self.c_static("trace")
    }

    /// `tests/c/NAME.c` linked with the static runtime, as `NAME`.
    fn c_static(&self, name: &str) -> PathBuf {
        let source = runtime_dir().join(format!("tests/c/{name}.c"));
        let archive = packaged().join("libsampler_runtime.a");
        let mut args = vec![
            source.to_str().unwrap().to_owned(),
            archive.to_str().unwrap().to_owned(),
            "-o".to_owned(),
            name.to_owned(),
        ];
        args.extend(SYSTEM_LIBS.iter().map(|s| s.to_string()));
        self.gcc(&args.iter().map(String::as_str).collect::<Vec<_>>());
        self.path(name)
    }
}

/// The tids the program printed: `who index tid` lines.
fn tids(output: &Output) -> HashMap<(String, u64), u64> {
    stdout(output)
        .lines()
        .map(|line| {
            let fields: Vec<&str> = line.split(' ').collect();
            (
                (fields[0].to_owned(), fields[1].parse().unwrap()),
                fields[2].parse().unwrap(),
            )
        })
        .collect()
}

/// (scheme, site, slot, sequence) of observations `ks` of a thread whose
/// observation k has sequence number `sequence(k)`.
fn expected(
    ks: std::ops::Range<u64>,
    sequence: impl Fn(u64) -> u64,
) -> Vec<(String, u32, u16, u64)> {
    ks.map(|k| {
        let (scheme, site, slot) = PATTERN[(k % 5) as usize];
        (scheme.to_owned(), site, slot, sequence(k))
    })
    .collect()
}

/// The clock is the time-stamp counter where the processor says it is
/// invariant (the kernel's `constant_tsc` and `nonstop_tsc` flags), with a
/// plausible measured frequency, else `CLOCK_MONOTONIC` in nanoseconds.
fn check_clock(trace: &Trace, text: &str) {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let flags: Vec<&str> = cpuinfo
        .lines()
        .find(|line| line.starts_with("flags"))
        .map(|line| line.split_whitespace().collect())
        .unwrap_or_default();
    let invariant = cfg!(target_arch = "x86_64")
        && flags.contains(&"constant_tsc")
        && flags.contains(&"nonstop_tsc");
    if invariant {
        assert_eq!(trace.clock.name, "TSC", "{text}");
        assert!(
            (100_000_000..100_000_000_000).contains(&trace.clock.ticks_per_second),
            "{text}"
        );
    } else {
        assert_eq!(trace.clock.name, "CLOCK_MONOTONIC", "{text}");
        assert_eq!(trace.clock.ticks_per_second, 1_000_000_000);
    }
}

/// Checks the one trace of `text`: the last `ring` observations of each
/// thread, main marked crashing.
fn check_trace(text: &str, output: &Output, ring: u64) {
    let traces = Trace::read_all(text.as_bytes()).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(traces.len(), 1, "{text}");
    check_one_trace(&traces[0], text, output, ring, ThreadState::Crashing);
}

/// [`check_trace`] for one of the report's traces, main's block in state
/// `main_state`.
fn check_one_trace(trace: &Trace, text: &str, output: &Output, ring: u64, main_state: ThreadState) {
    check_clock(trace, text);
    let tids = tids(output);
    let last = |n: u64| n.saturating_sub(ring)..n;
    let worker_base = EXITED_RECORDS;
    let main_base = EXITED_RECORDS + WORKERS * WORKER_RECORDS;
    let mut wanted = vec![(
        tids[&("main".to_owned(), 0)],
        main_state,
        expected(last(MAIN_RECORDS), |k| main_base + k),
    )];
    for w in 0..WORKERS {
        wanted.push((
            tids[&("worker".to_owned(), w)],
            ThreadState::Live,
            expected(last(WORKER_RECORDS), |k| worker_base + k * WORKERS + w),
        ));
    }
    wanted.push((
        tids[&("exited".to_owned(), 0)],
        ThreadState::Exited,
        expected(last(EXITED_RECORDS), |k| k),
    ));
    // Crashing first, then the live threads, then the exited one; the
    // runtime does not promise an order among threads of one state.
    let mut found: Vec<_> = trace
        .threads
        .iter()
        .map(|thread| {
            let records: Vec<_> = thread
                .records
                .iter()
                .map(|record| {
                    let key = &trace.tables[record.table as usize];
                    assert_eq!(key.unit.to_string(), "44".repeat(16));
                    (
                        key.scheme.to_string(),
                        record.site,
                        record.slot,
                        record.sequence,
                    )
                })
                .collect();
            // Times never go back within a thread here (no signal
            // handler records).
            assert!(
                thread.records.windows(2).all(|w| w[0].time <= w[1].time),
                "{text}"
            );
            (thread.thread, thread.state, records)
        })
        .collect();
    assert_eq!(found[0], wanted[0], "{text}");
    assert_eq!(found.last(), wanted.last(), "{text}");
    found[1..=WORKERS as usize].sort_by_key(|(tid, ..)| *tid);
    wanted[1..=WORKERS as usize].sort_by_key(|(tid, ..)| *tid);
    assert_eq!(found, wanted, "{text}");
}

#[test]
fn a_crash_writes_each_threads_last_observations_after_the_modules() {
    let lab = Lab::new();
    let program = lab.trace_static();
    let output = lab.run(
        &program,
        &["crash"],
        &[
            ("SAMPLER_FILE", "run.report"),
            ("SAMPLER_SPARSITY", "1"),
            ("SAMPLER_TRACE", "8"),
        ],
    );
    assert_eq!(signal_of(&output), Some(11), "{}", stderr(&output));
    assert_eq!(stderr(&output), "");
    let text = lab.read("run.report");
    let report = parse(&text);
    assert_eq!(
        subreport_ids(&report),
        ["samples", "main-backtrace", "modules", "trace"],
        "{text}"
    );
    check_trace(&text, &output, 8);
}

#[test]
fn a_ring_larger_than_the_sequence_keeps_all_of_it() {
    let lab = Lab::new();
    let program = lab.trace_static();
    let output = lab.run(
        &program,
        &["crash"],
        &[
            ("SAMPLER_FILE", "run.report"),
            ("SAMPLER_SPARSITY", "1"),
            ("SAMPLER_TRACE", "1000"),
        ],
    );
    assert_eq!(signal_of(&output), Some(11), "{}", stderr(&output));
    check_trace(&lab.read("run.report"), &output, 1000);
}

#[test]
fn an_interim_report_writes_the_trace_after_the_samples() {
    let lab = Lab::new();
    let program = lab.trace_static();
    let output = lab.run(
        &program,
        &["interim"],
        &[
            ("SAMPLER_FILE", "run.report"),
            ("SAMPLER_SPARSITY", "1"),
            ("SAMPLER_TRACE", "4"),
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = lab.read("run.report");
    let report = parse(&text);
    // The interim report, then the final samples and trace at exit, where
    // main, which ended the process, is `exiting` (its ring kept its
    // records: nothing was observed after the interim report).
    assert_eq!(
        subreport_ids(&report),
        ["samples", "trace", "samples", "trace"],
        "{text}"
    );
    let traces = Trace::read_all(text.as_bytes()).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(traces.len(), 2, "{text}");
    check_one_trace(&traces[0], &text, &output, 4, ThreadState::Crashing);
    check_one_trace(&traces[1], &text, &output, 4, ThreadState::Exiting);
}

#[test]
fn tracing_off_writes_no_trace() {
    for trace in [None, Some("0")] {
        let lab = Lab::new();
        let program = lab.trace_static();
        let mut env = vec![("SAMPLER_FILE", "run.report"), ("SAMPLER_SPARSITY", "1")];
        env.extend(trace.map(|n| ("SAMPLER_TRACE", n)));
        let output = lab.run(&program, &["crash"], &env);
        assert_eq!(signal_of(&output), Some(11), "{}", stderr(&output));
        let text = lab.read("run.report");
        assert_eq!(
            subreport_ids(&parse(&text)),
            ["samples", "main-backtrace", "modules"],
            "{trace:?}: {text}"
        );
        assert!(!text.contains("<report id=\"trace\">"), "{text}");
    }
}

#[test]
fn a_bad_trace_size_is_said_once_and_tracing_is_off() {
    let lab = Lab::new();
    let program = lab.trace_static();
    let output = lab.run(
        &program,
        &["interim"],
        &[
            ("SAMPLER_FILE", "run.report"),
            ("SAMPLER_SPARSITY", "1"),
            ("SAMPLER_TRACE", "100000"),
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(
        stderr(&output),
        "sampler: SAMPLER_TRACE=`100000` is not a whole number from 0 to 65536; tracing is off\n"
    );
    assert_eq!(
        subreport_ids(&parse(&lab.read("run.report"))),
        ["samples", "samples"]
    );
}

/// `MAIN_RECORDS` of trace_storm.c.
const STORM_MAIN_RECORDS: u32 = 300_000;

/// The records of a storm trace's one thread, checked whole: each is main's
/// (branches, k, k & 1) or the handler's (returns, h, 2), each kind in
/// increasing order of site and of sequence number. (A main record the
/// handler interrupted may carry the handler's sequence number: the
/// observations of one sampled event share theirs, and the handler's
/// event came between.) Returns main's sites and the handler's.
fn storm_records(trace: &Trace, text: &str) -> (Vec<u32>, Vec<u32>) {
    assert_eq!(trace.threads.len(), 1, "{text}");
    let thread = &trace.threads[0];
    assert_eq!(thread.state, ThreadState::Crashing);
    let (mut main, mut handler) = (Vec::new(), Vec::new());
    let (mut main_sequences, mut handler_sequences) = (Vec::new(), Vec::new());
    for record in &thread.records {
        match trace.tables[record.table as usize]
            .scheme
            .to_string()
            .as_str()
        {
            "branches" => {
                assert_eq!(u32::from(record.slot), record.site & 1, "{record:?}");
                main.push(record.site);
                main_sequences.push(record.sequence);
            }
            "returns" => {
                assert_eq!(record.slot, 2, "{record:?}");
                handler.push(record.site);
                handler_sequences.push(record.sequence);
            }
            other => panic!("a record of `{other}`: {record:?}\n{text}"),
        }
    }
    for sites in [&main, &handler] {
        assert!(sites.windows(2).all(|w| w[0] < w[1]), "{sites:?}\n{text}");
    }
    for sequences in [&main_sequences, &handler_sequences] {
        assert!(
            sequences.windows(2).all(|w| w[0] < w[1]),
            "{sequences:?}\n{text}"
        );
    }
    (main, handler)
}

#[test]
fn a_storm_of_signals_that_observe_too_corrupts_no_record() {
    let lab = Lab::new();
    let program = lab.c_static("trace_storm");
    let ring = 256;
    let output = lab.run(
        &program,
        &[],
        &[
            ("SAMPLER_FILE", "run.report"),
            ("SAMPLER_SPARSITY", "1"),
            ("SAMPLER_TRACE", "256"),
        ],
    );
    assert_eq!(signal_of(&output), Some(11), "{}", stderr(&output));
    let handled: u32 = stdout(&output)
        .trim()
        .strip_prefix("handled ")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{}", stdout(&output)));
    assert!(handled > 0);
    let text = lab.read("run.report");
    let report = parse(&text);
    assert_eq!(
        subreport_ids(&report),
        [
            "samples",
            "trace",
            "samples",
            "main-backtrace",
            "modules",
            "trace"
        ],
        "{text}"
    );
    let traces = Trace::read_all(text.as_bytes()).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(traces.len(), 2);
    // The interim report, written while the storm went on: records may be
    // overwritten under the writer, never written torn.
    let (main, _) = storm_records(&traces[0], &text);
    assert!(main.iter().all(|&k| k < STORM_MAIN_RECORDS / 2), "{main:?}");
    // The crash, the timer stopped: exactly the last `ring` records, none
    // lost, main's and the handler's each consecutive.
    assert_eq!(traces[1].threads[0].records.len(), ring, "{text}");
    let (main, handler) = storm_records(&traces[1], &text);
    assert_eq!(main.last(), Some(&(STORM_MAIN_RECORDS - 1)), "{text}");
    for sites in [&main, &handler] {
        assert!(sites.windows(2).all(|w| w[0] + 1 == w[1]), "{sites:?}");
    }
    assert!(handler.last().is_none_or(|&h| h <= handled), "{handler:?}");
}

#[test]
fn exited_threads_leave_their_records_in_a_bounded_pool() {
    let lab = Lab::new();
    let program = lab.trace_static();
    let output = lab.run(
        &program,
        &["many-exited"],
        &[
            ("SAMPLER_FILE", "run.report"),
            ("SAMPLER_SPARSITY", "1"),
            ("SAMPLER_TRACE", "8"),
        ],
    );
    assert_eq!(signal_of(&output), Some(11), "{}", stderr(&output));
    let text = lab.read("run.report");
    let traces = Trace::read_all(text.as_bytes()).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let tids = tids(&output);
    let trace = &traces[0];
    assert_eq!(trace.threads[0].thread, tids[&("main".to_owned(), 0)]);
    assert_eq!(trace.threads[0].state, ThreadState::Crashing);
    assert!(trace.threads[0].records.is_empty());
    // 40 threads ran one after the other; the pool keeps the last 16 (a
    // new thread takes the oldest ring over once 16 wait), each holding
    // its own two records only.
    let mut exited: Vec<(u64, Vec<(u32, u16)>)> = trace.threads[1..]
        .iter()
        .map(|thread| {
            assert_eq!(thread.state, ThreadState::Exited, "{text}");
            let records = thread.records.iter().map(|r| (r.site, r.slot)).collect();
            (thread.thread, records)
        })
        .collect();
    exited.sort();
    let mut wanted: Vec<(u64, Vec<(u32, u16)>)> = (24..40u32)
        .map(|t| {
            (
                tids[&("short".to_owned(), u64::from(t))],
                vec![(t, 0), (t, 0)],
            )
        })
        .collect();
    wanted.sort();
    assert_eq!(exited, wanted, "{text}");
}
