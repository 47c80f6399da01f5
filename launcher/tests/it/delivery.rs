//! Delivery when things go wrong: the collector down, two flushes at once,
//! the collector killed in the middle of an upload, a collector that never
//! answers; `--save` and `upload`; consent; empty reports.

use std::collections::BTreeSet;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::Value;

use crate::{Collector, FixedServer, User, answer, eventually, nothing_listens, tools};

fn report_ids(runs: &[Value]) -> BTreeSet<String> {
    runs.iter()
        .map(|run| run["report_id"].as_str().unwrap().to_owned())
        .collect()
}

fn spooled_ids(user: &User) -> BTreeSet<String> {
    user.spooled()
        .iter()
        .map(|path| path.file_stem().unwrap().to_str().unwrap().to_owned())
        .collect()
}

#[test]
fn collector_down_the_report_waits_and_flush_delivers_it_once() {
    let user = User::consenting();
    user.configure(&format!(
        "server = \"{}\"\ntoken = \"t\"\n",
        nothing_listens()
    ));
    let output = user.run("exit");
    assert_eq!(output.status.code(), Some(3));
    assert!(
        output.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let waiting = spooled_ids(&user);
    assert_eq!(waiting.len(), 1);
    let status = user.status();
    assert!(status.contains("waiting: 1 report(s)"), "{status}");
    assert!(status.contains("next retry: in "), "{status}");
    assert!(status.contains("last error: "), "{status}");

    let collector = Collector::start();
    user.configure(&collector.config());
    let output = user.flush();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "sent 1, refused 0, failed 0, waiting 0\n"
    );
    assert_eq!(report_ids(&collector.runs()), waiting);
    assert!(user.spooled().is_empty());
    // A second flush has nothing to send.
    let output = user.flush();
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "sent 0, refused 0, failed 0, waiting 0\n"
    );
    assert_eq!(collector.runs().len(), 1);
}

#[test]
fn the_next_run_delivers_what_is_due() {
    let user = User::consenting();
    user.configure(&format!(
        "server = \"{}\"\ntoken = \"t\"\nretry_base = 0\n",
        nothing_listens()
    ));
    assert!(user.run("ok").status.success());
    let first = spooled_ids(&user);
    assert_eq!(first.len(), 1);
    let collector = Collector::start();
    user.configure(&format!("{}retry_base = 0\n", collector.config()));
    assert_eq!(user.run("exit").status.code(), Some(3));
    assert!(eventually(Duration::from_secs(10), || collector
        .runs()
        .len()
        == 2));
    std::thread::sleep(Duration::from_millis(300));
    let runs = collector.runs();
    assert_eq!(runs.len(), 2);
    assert!(report_ids(&runs).is_superset(&first));
    assert!(user.spooled().is_empty());
}

#[test]
fn two_flushes_at_once_send_each_report_once() {
    let user = User::consenting();
    user.configure(&format!(
        "server = \"{}\"\ntoken = \"t\"\n",
        nothing_listens()
    ));
    for _ in 0..8 {
        assert!(user.run("ok").status.success());
    }
    let waiting = spooled_ids(&user);
    assert_eq!(waiting.len(), 8);
    let collector = Collector::start();
    user.configure(&collector.config());
    let flushes: Vec<Child> = (0..2)
        .map(|_| {
            user.command()
                .arg("flush")
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut sent = 0;
    for flush in flushes {
        let output = flush.wait_with_output().unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let stdout = String::from_utf8(output.stdout).unwrap();
        sent += stdout
            .strip_prefix("sent ")
            .and_then(|rest| rest.split(',').next())
            .unwrap()
            .parse::<usize>()
            .unwrap();
    }
    assert_eq!(sent, 8);
    let runs = collector.runs();
    assert_eq!(runs.len(), 8);
    assert_eq!(report_ids(&runs), waiting);
    assert!(user.spooled().is_empty());
}

/// The real `sampler-collector serve` as a process, on `port`.
fn serve(data: &Path, port: u16) -> Child {
    let child = Command::new(&tools().collector)
        .args(["serve", "--data"])
        .arg(data)
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    assert!(
        eventually(Duration::from_secs(20), || TcpStream::connect((
            "127.0.0.1",
            port
        ))
        .is_ok()),
        "the collector did not start"
    );
    child
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn token(data: &Path, scope: &str) -> String {
    let output = Command::new(&tools().collector)
        .args(["token", "create", "--data"])
        .arg(data)
        .args(["--app", "demo", "--scope", scope])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cut {
    /// Forward everything.
    None,
    /// Kill the collector with half the body sent.
    MidBody,
    /// Kill the collector once its answer starts (the run is stored), and
    /// give the client no answer.
    BeforeAnswer,
}

/// A proxy in front of the collector process that can SIGKILL it in the
/// middle of an upload.
struct Proxy {
    url: String,
    target: Arc<Mutex<(u16, u32, Cut)>>,
}

impl Proxy {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let target = Arc::new(Mutex::new((0u16, 0u32, Cut::None)));
        let shared = target.clone();
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let (port, pid, cut) = *shared.lock().unwrap();
                let _ = relay(client, port, pid, cut);
            }
        });
        Self { url, target }
    }
}

fn relay(client: TcpStream, port: u16, pid: u32, cut: Cut) -> std::io::Result<()> {
    let mut reader = BufReader::new(client);
    let mut head = String::new();
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Ok(());
        }
        if line.trim_end().is_empty() {
            break;
        }
        let lower = line.to_ascii_lowercase();
        if let Some(value) = lower.strip_prefix("content-length:") {
            length = value.trim().parse().unwrap_or(0);
        }
        if !lower.starts_with("connection:") {
            head.push_str(&line);
        }
    }
    head.push_str("connection: close\r\n\r\n");
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body)?;
    let mut client = reader.into_inner();
    let mut server = TcpStream::connect(("127.0.0.1", port))?;
    server.write_all(head.as_bytes())?;
    let killer = || {
        kill(Pid::from_raw(pid as i32), Signal::SIGKILL).unwrap();
    };
    match cut {
        Cut::MidBody => {
            server.write_all(&body[..length / 2])?;
            std::thread::sleep(Duration::from_millis(100));
            killer();
            Ok(())
        }
        Cut::BeforeAnswer => {
            server.write_all(&body)?;
            let mut first = [0u8; 1];
            server.read_exact(&mut first)?;
            killer();
            Ok(())
        }
        Cut::None => {
            server.write_all(&body)?;
            std::io::copy(&mut server, &mut client)?;
            Ok(())
        }
    }
}

#[test]
fn the_collector_killed_in_the_middle_of_uploads_still_stores_the_run_once() {
    let data = tempfile::tempdir().unwrap();
    let ingest = token(data.path(), "ingest");
    let read = token(data.path(), "read");
    let proxy = Proxy::start();
    let user = User::consenting();
    user.configure(&format!(
        "server = \"{}\"\ntoken = \"{ingest}\"\n",
        proxy.url
    ));

    // Killed while the body arrives: nothing stored, the report waits.
    let port = free_port();
    let mut collector = serve(data.path(), port);
    *proxy.target.lock().unwrap() = (port, collector.id(), Cut::MidBody);
    assert!(user.run("ok").status.success());
    collector.wait().unwrap();
    let waiting = spooled_ids(&user);
    assert_eq!(waiting.len(), 1);

    // Killed after storing, before answering: stored, but the report waits.
    let port = free_port();
    let mut collector = serve(data.path(), port);
    *proxy.target.lock().unwrap() = (port, collector.id(), Cut::BeforeAnswer);
    let output = user.flush();
    assert_eq!(output.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&output.stdout).starts_with("sent 0, refused 0, failed 1"),
        "{output:?}"
    );
    collector.wait().unwrap();
    assert_eq!(spooled_ids(&user), waiting);

    // Back up: the retry is answered with the stored run; still one run.
    let port = free_port();
    let mut collector = serve(data.path(), port);
    *proxy.target.lock().unwrap() = (port, collector.id(), Cut::None);
    let output = user.flush();
    assert!(output.status.success(), "{output:?}");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "sent 1, refused 0, failed 0, waiting 0\n"
    );
    assert!(user.spooled().is_empty());
    let response = reqwest::blocking::Client::new()
        .get(format!("http://127.0.0.1:{port}/api/v1/runs?app=demo"))
        .bearer_auth(&read)
        .send()
        .unwrap();
    let runs: Value = serde_json::from_str(&response.text().unwrap()).unwrap();
    let runs = runs["runs"].as_array().unwrap();
    assert_eq!(report_ids(runs), waiting);
    assert_eq!(runs.len(), 1);
    kill(Pid::from_raw(collector.id() as i32), Signal::SIGTERM).unwrap();
    collector.wait().unwrap();
}

#[test]
fn a_collector_that_never_answers_delays_the_exit_by_the_bound_only() {
    let server = FixedServer::start(Vec::new());
    let user = User::consenting();
    user.configure(&format!(
        "server = \"{}\"\ntoken = \"t\"\nupload_timeout = 2\n",
        server.url
    ));
    tools(); // built before the clock starts
    let started = Instant::now();
    let output = user.run("exit");
    let took = started.elapsed();
    assert_eq!(output.status.code(), Some(3));
    // It waited for the upload for the bound (1 s), then left it to the
    // background process. The margin covers a loaded machine.
    assert!(
        took >= Duration::from_millis(950) && took < Duration::from_millis(2500),
        "took {took:?}"
    );
    assert_eq!(server.count(), 1);

    // Not instrumented: nothing to upload, no wait.
    let started = Instant::now();
    let output = user
        .command()
        .args(["--app", "demo", "--", "true"])
        .output()
        .unwrap();
    let took = started.elapsed();
    assert!(output.status.success());
    assert!(took < Duration::from_millis(500), "took {took:?}");

    // The background process tries again once the run has exited, times
    // out after 2 s, and records the failure; the report waits.
    assert!(
        eventually(Duration::from_secs(10), || user
            .spooled()
            .first()
            .is_some_and(|path| path.with_extension("retry").exists())),
        "no retry recorded"
    );
    assert_eq!(server.count(), 2);
    let retry = std::fs::read_to_string(user.spooled()[0].with_extension("retry")).unwrap();
    assert!(retry.contains("attempts = 1"), "{retry}");
    assert!(user.status().contains("empty runs: 1"));
}

#[test]
fn saved_runs_need_no_consent_and_upload_later_once() {
    let user = User::new();
    let saved = tempfile::tempdir().unwrap();
    for mode in ["ok", "segv"] {
        let output = user
            .command()
            .args(["--app", "demo", "--version", "2.0", "--save"])
            .arg(saved.path())
            .arg("--")
            .arg(&tools().program)
            .arg(mode)
            .output()
            .unwrap();
        assert_eq!(output.status.signal(), crate::alone(mode).signal());
    }
    assert!(user.spooled().is_empty());
    let mut files: Vec<_> = std::fs::read_dir(saved.path())
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    files.sort();
    assert_eq!(files.len(), 2);
    let text = std::fs::read_to_string(&files[1]).unwrap();
    assert!(text.contains("<report id=\"main-backtrace\">"), "{text}");
    assert!(text.ends_with("dropped-bytes\t0\n</report>\n"), "{text}");
    assert!(text.contains("\nexit-signal\t11\n"), "{text}");

    let collector = Collector::start();
    let upload = || {
        user.command()
            .args([
                "upload",
                "--server",
                &collector.url,
                "--token",
                &collector.ingest,
            ])
            .arg(saved.path())
            .output()
            .unwrap()
    };
    let first = upload();
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let runs = collector.runs();
    assert_eq!(runs.len(), 2);
    let signals: BTreeSet<i64> = runs
        .iter()
        .map(|run| run["exit_signal"].as_i64().unwrap())
        .collect();
    assert_eq!(signals, BTreeSet::from([0, 11]));
    // Again: the same runs answer, nothing new is stored.
    let second = upload();
    assert!(second.status.success());
    assert_eq!(first.stdout, second.stdout);
    assert_eq!(collector.runs().len(), 2);
}

use std::os::unix::process::ExitStatusExt as _;

#[test]
fn without_consent_nothing_is_sampled_spooled_or_sent_and_no_removes_the_spool() {
    let server = FixedServer::start(vec![answer("200 OK", &["Sampler-Unique-Id: x"], "x")]);
    let user = User::new();
    user.configure(&format!("server = \"{}\"\ntoken = \"t\"\n", server.url));
    let output = user.run("exit");
    assert_eq!(output.status.code(), Some(3));
    assert!(output.stderr.is_empty());
    assert!(user.spooled().is_empty());
    assert!(!user.state().join("spool").exists());
    assert_eq!(server.count(), 0);

    // Consent, a collector that is down, one report waiting; then no.
    user.configure(&format!(
        "server = \"{}\"\ntoken = \"t\"\n",
        nothing_listens()
    ));
    let output = user
        .command()
        .args(["consent", "yes", "--app", "demo"])
        .output()
        .unwrap();
    assert!(output.status.success());
    assert!(user.run("ok").status.success());
    assert_eq!(user.spooled().len(), 1);
    let output = user
        .command()
        .args(["consent", "no", "--app", "demo"])
        .output()
        .unwrap();
    assert!(output.status.success());
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("removed 1 spooled report(s) of `demo`"),
        "{output:?}"
    );
    assert!(user.spooled().is_empty());
}
