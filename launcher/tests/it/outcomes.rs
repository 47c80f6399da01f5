//! Each way a program ends: the caller sees what it would see without
//! sampler-run, and the collector stores the run once, with that outcome.

use std::io::BufRead as _;
use std::os::unix::process::ExitStatusExt as _;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::{Value, json};

use crate::{Collector, User, alone, eventually, tools};

/// Waits for exactly one stored run and checks its fields.
fn one_run(collector: &Collector, user: &User, status: i64, signal: i64) -> Value {
    assert!(
        eventually(Duration::from_secs(10), || collector.runs().len() == 1),
        "no run stored; status:\n{}",
        user.status()
    );
    // Nothing else arrives later (a background flush, a retry).
    std::thread::sleep(Duration::from_millis(300));
    let runs = collector.runs();
    assert_eq!(runs.len(), 1, "{runs:?}");
    let run = runs[0].clone();
    assert_eq!(run["exit_status"], json!(status), "{run}");
    assert_eq!(run["exit_signal"], json!(signal), "{run}");
    assert_eq!(run["sparsity"], json!(100));
    assert_eq!(run["version"], json!("2.0"));
    assert_eq!(run["sampler_version"], json!(env!("CARGO_PKG_VERSION")));
    assert_eq!(
        run["executable_path"],
        json!(tools().program.to_str().unwrap())
    );
    assert!(user.spooled().is_empty(), "{:?}", user.spooled());
    // The report arrived whole: samples and the outcome.
    let id = run["id"].as_str().unwrap();
    let outcome = collector.get_text(&format!("/api/v1/runs/{id}/subreports/outcome"));
    assert!(
        outcome.contains(&format!("exit-status\t{status}\nexit-signal\t{signal}\n")),
        "{outcome}"
    );
    assert_eq!(
        outcome
            .lines()
            .find_map(|line| line.strip_prefix("report-id\t")),
        run["report_id"].as_str()
    );
    run
}

fn same(through: ExitStatus, alone: ExitStatus) {
    assert_eq!(
        (through.code(), through.signal(), through.core_dumped()),
        (alone.code(), alone.signal(), false),
        "through sampler-run {through:?}, alone {alone:?}"
    );
}

fn exits(mode: &str, status: i64, signal: i64) -> (Collector, Value) {
    let collector = Collector::start();
    let user = User::consenting();
    user.configure(&collector.config());
    let output = user.run(mode);
    assert!(
        output.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    same(output.status, alone(mode));
    let run = one_run(&collector, &user, status, signal);
    (collector, run)
}

#[test]
fn a_normal_exit() {
    let (_, run) = exits("ok", 0, 0);
    assert_eq!(run["outcome"], json!("success"));
}

#[test]
fn a_non_zero_exit() {
    let (_, run) = exits("exit", 3, 0);
    assert_eq!(run["outcome"], json!("error"));
}

#[test]
fn an_abort() {
    let (_, run) = exits("abort", 0, 6);
    assert_eq!(run["outcome"], json!("crash"));
}

#[test]
fn a_segfault_is_uploaded_with_its_backtrace_and_symbolized_once_the_build_is_added() {
    let (collector, run) = exits("segv", 0, 11);
    assert_eq!(run["outcome"], json!("crash"));
    collector.add_build(&[tools().program.clone()]);
    let id = run["id"].as_str().unwrap();
    let run = collector.get(&format!("/api/v1/runs/{id}"));
    assert_eq!(run["symbolized"], json!(true), "{run}");
    let frames: Vec<(String, String, u64)> = run["backtrace"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|frame| !frame["file"].is_null())
        .map(|frame| {
            (
                frame["function"].as_str().unwrap().to_owned(),
                frame["file"]
                    .as_str()
                    .unwrap()
                    .rsplit('/')
                    .next()
                    .unwrap()
                    .to_owned(),
                frame["line"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        frames,
        [
            ("crash_here".to_owned(), "demo.c".to_owned(), 8),
            ("main".to_owned(), "demo.c".to_owned(), 27)
        ]
    );
    // The flight recorder is on by default: the crashing thread's last
    // sampled observations (at most 64) go with the report.
    let threads = run["trace"]["threads"].as_array().unwrap();
    assert_eq!(threads.len(), 1, "{run}");
    assert_eq!(threads[0]["state"], json!("crashing"));
    assert!(
        threads[0]["events"].as_array().unwrap().len() <= 64,
        "{run}"
    );
}

#[test]
fn a_crash_carries_the_last_observations_the_trace_option_asks_for() {
    let collector = Collector::start();
    let user = User::consenting();
    user.configure(&collector.config());
    let output = user
        .command()
        .args([
            "--app",
            "demo",
            "--version",
            "2.0",
            "--sparsity",
            "1",
            "--trace",
            "3",
            "--",
        ])
        .arg(&tools().program)
        .arg("segv")
        .output()
        .unwrap();
    same(output.status, alone("segv"));
    assert!(
        eventually(Duration::from_secs(10), || collector.runs().len() == 1),
        "no run stored; status:\n{}",
        user.status()
    );
    collector.add_build(&[tools().program.clone()]);
    let id = collector.runs()[0]["id"].as_str().unwrap().to_owned();
    let run = collector.get(&format!("/api/v1/runs/{id}"));
    let threads = run["trace"]["threads"].as_array().unwrap();
    assert_eq!(threads.len(), 1, "{run}");
    assert_eq!(threads[0]["state"], json!("crashing"));
    let events: Vec<(u64, &str)> = threads[0]["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|event| {
            (
                event["line"].as_u64().unwrap(),
                event["predicate"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        events,
        [
            (24, "!(strcmp(mode, \"exit\") == 0)"),
            (26, "strcmp() == 0"),
            (26, "strcmp(mode, \"segv\") == 0"),
        ],
        "{run}"
    );
}

/// Starts `demo MODE` (through sampler-run when `user` is given), waits
/// for its "ready", sends `signal` to the process started, and returns
/// how it ended.
fn signalled(user: Option<&User>, mode: &str, signal: Signal) -> ExitStatus {
    let mut command = match user {
        Some(user) => {
            let mut command = user.command();
            command.args(["--app", "demo", "--version", "2.0", "--"]);
            command.arg(&tools().program);
            command
        }
        None => std::process::Command::new(&tools().program),
    };
    let mut child = command
        .arg(mode)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    // Kept open until the end: the program must not meet a closed pipe.
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    stdout.read_line(&mut line).unwrap();
    assert_eq!(line, "ready\n");
    kill(Pid::from_raw(child.id() as i32), signal).unwrap();
    let output = child.wait_with_output().unwrap();
    drop(stdout);
    assert!(
        output.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    output.status
}

#[test]
fn a_hang_killed_by_sigterm_sent_to_sampler_run() {
    let collector = Collector::start();
    let user = User::consenting();
    user.configure(&collector.config());
    let through = signalled(Some(&user), "hang", Signal::SIGTERM);
    same(through, signalled(None, "hang", Signal::SIGTERM));
    assert_eq!(through.signal(), Some(15));
    let run = one_run(&collector, &user, 0, 15);
    assert_eq!(run["outcome"], json!("crash"));
}

#[test]
fn sigusr1_reaches_the_program() {
    let collector = Collector::start();
    let user = User::consenting();
    user.configure(&collector.config());
    let through = signalled(Some(&user), "usr1", Signal::SIGUSR1);
    same(through, signalled(None, "usr1", Signal::SIGUSR1));
    assert_eq!(through.code(), Some(42));
    one_run(&collector, &user, 42, 0);
}

#[test]
fn a_child_that_outlives_the_program_does_not_hold_sampler_run() {
    let collector = Collector::start();
    let user = User::consenting();
    user.configure(&collector.config());
    tools(); // built before the clock starts
    let started = std::time::Instant::now();
    let output = user.run("daemon");
    let took = started.elapsed();
    let child: i32 = String::from_utf8(output.stdout.clone())
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // The child sleeps 30 s holding the pipe's write end; we started it.
    let _ = kill(Pid::from_raw(child), Signal::SIGKILL);
    assert!(output.status.success(), "{output:?}");
    assert!(took < Duration::from_secs(5), "took {took:?}");
    one_run(&collector, &user, 0, 0);
}
