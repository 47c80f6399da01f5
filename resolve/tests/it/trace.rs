//! `resolve-trace` on hand-written reports: the records of every thread in
//! sequence order, with sites and predicates from `.sites` files.

use super::*;

const U: &str = "0123456789abcdef0123456789abcdef";
const F: &str = "fedcba9876543210fedcba9876543210";

/// What `resolve-trace trace.sites < trace.report` prints.
const RESOLVED: &str = "thread\tsequence\ttime\tlocation\tfunction\tpredicate\n\
    4240\t12\t0.000000000\t/src/util.c:1\thelper\thelper() reached\n\
    4242*\t17\t0.000067890\t/src/main.c:12\tmain\targc > 1\n\
    4243\t18\t0.000068400\t/src/util.c:1\thelper\thelper() reached\n\
    4242*\t19\t0.000069140\t/src/main.c:8\tmain\targ < argc\n\
    4243\t20\t0.000070500\t/src/main.c:12\tmain\t!(argc > 1)\n\
    4242*\t22\t0.000109350\t/src/main.c:20\tmain\tp == 0\n";

fn body(records: &str) -> String {
    format!(
        "version\t1\nclock\tCLOCK_MONOTONIC\t1000\ntable\t0\t{U}\tbranches\ntable\t1\t{F}\tfunction-entries\n{records}"
    )
}

#[test]
fn records_of_all_threads_in_sequence_order() {
    let output = tool(
        "resolve-trace",
        &fixtures(),
        &["trace.sites"],
        &fixture("trace.report"),
    );
    assert_success(&output, RESOLVED);
}

#[test]
fn reads_the_output_of_extract_report() {
    let trace = tool(
        "extract-report",
        &fixtures(),
        &["trace"],
        &fixture("trace.report"),
    );
    assert_eq!(trace.status.code(), Some(0));
    let output = tool(
        "resolve-trace",
        &fixtures(),
        &["trace.sites"],
        &trace.stdout,
    );
    assert_success(&output, RESOLVED);
}

#[test]
fn several_traces_follow_one_another_under_one_header() {
    let records = RESOLVED.split_once('\n').unwrap().1;
    let output = tool(
        "resolve-trace",
        &fixtures(),
        &["trace.sites"],
        &fixture("trace.report").repeat(2),
    );
    assert_success(&output, &format!("{RESOLVED}\n{records}"));

    // Bare bodies too. The clock ticks in milliseconds; the thread's later
    // record in the ring is the earlier in sequence and time.
    let trace = body("thread\t9\tlive\t2\t5\t2000\n0\t1\t0\t1\t1500\n1\t0\t0\t0\t-1500\n");
    let output = tool(
        "resolve-trace",
        &fixtures(),
        &["trace.sites"],
        trace.repeat(2).as_bytes(),
    );
    let records = "9\t5\t0.000\t/src/util.c:1\thelper\thelper() reached\n\
                   9\t6\t1.500\t/src/main.c:20\tmain\t!(p == 0)\n";
    assert_success(
        &output,
        &format!("thread\tsequence\ttime\tlocation\tfunction\tpredicate\n{records}\n{records}"),
    );
}

#[test]
fn input_without_a_trace_exits_1() {
    let output = tool(
        "resolve-trace",
        &fixtures(),
        &["trace.sites"],
        &fixture("run.report"),
    );
    assert_failure(
        &output,
        1,
        "resolve-trace: no `<report id=\"trace\">` in the input: the run was not traced (SAMPLER_TRACE)\n",
    );
    let output = tool("resolve-trace", &fixtures(), &["trace.sites"], b"");
    assert_eq!(output.status.code(), Some(1));
}

#[test]
fn a_record_without_a_table_is_named_by_line() {
    let dir = tempfile::tempdir().unwrap();
    let sites = String::from_utf8(fixture("trace.sites")).unwrap();
    let (main_only, _) = sites.split_once("<sites unit=\"fedcba").unwrap();
    std::fs::write(dir.path().join("main.sites"), main_only).unwrap();
    let output = tool(
        "resolve-trace",
        dir.path(),
        &["main.sites"],
        &fixture("trace.report"),
    );
    assert_failure(
        &output,
        2,
        &format!(
            "resolve-trace: error: standard input: line 24: no site table for unit `{F}` scheme `function-entries`\n\
             \n\
             hint: name the binary, library or `.sites` file built from that unit\n"
        ),
    );
}

#[test]
fn a_site_past_the_end_of_its_table_is_named() {
    let trace = body("thread\t9\tlive\t1\t5\t2000\n0\t2\t0\t0\t0\n");
    let output = tool(
        "resolve-trace",
        &fixtures(),
        &["trace.sites"],
        trace.as_bytes(),
    );
    assert_failure(
        &output,
        2,
        &format!(
            "resolve-trace: error: standard input: line 6: the record names site 2 of unit `{U}` scheme `branches`, but the site table from `trace.sites` has 2 sites\n"
        ),
    );
}

#[test]
fn malformed_traces_are_named_by_line() {
    let trace = body("thread\t9\tlive\t2\t5\t2000\n0\t1\t0\t1\n");
    let output = tool(
        "resolve-trace",
        &fixtures(),
        &["trace.sites"],
        trace.as_bytes(),
    );
    assert_failure(
        &output,
        2,
        "resolve-trace: error: standard input: line 6: expected a record `TABLE<TAB>SITE<TAB>SLOT<TAB>SEQUENCE<TAB>TIME` (record 1 of 2 of the thread block at line 5), found \"0\\t1\\t0\\t1\"\n",
    );
    let truncated = "<report id=\"trace\">\nversion\t1\nclock\tCLOCK_MONOTONIC\t1000\nthread\t9\tlive\t1\t0\t0\n</report>\n";
    let output = tool(
        "resolve-trace",
        &fixtures(),
        &["trace.sites"],
        truncated.as_bytes(),
    );
    assert_failure(
        &output,
        2,
        "resolve-trace: error: standard input: line 5: unexpected end of input: the thread block at line 4 announces 1 records, 0 follow\n",
    );
}
