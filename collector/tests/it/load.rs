//! A load generator shared by the kill test (`fault.rs`) and the upload
//! benchmark (`benches/uploads.rs`, which includes this file by path):
//! realistic reports of one instrumented program, sent as the original
//! uploader sends them to a real `sampler-collector serve` process.
//!
//! Nothing here depends on the rest of the test crate, so that the
//! benchmark can include it alone; each includer uses part of it.

#![allow(dead_code)]

use std::fmt::Write as _;
use std::io::{BufRead, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bytes::Bytes;
use flate2::Compression;
use flate2::write::GzEncoder;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

/// The application every generated report belongs to.
pub(crate) const APP: &str = "demo";

/// What the generated reports look like.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Shape {
    /// Sites in the samples subreport, over every unit and scheme.
    pub(crate) sites: usize,
    /// Units (compilation units) they are spread over.
    pub(crate) units: usize,
    /// The share of a run's sites with a non-zero counter.
    pub(crate) reached: f64,
    /// The share of runs that crash (signal 11, with `main-backtrace`
    /// and `modules`).
    pub(crate) crashes: f64,
    /// The share of runs that exit with status 1.
    pub(crate) errors: f64,
}

impl Shape {
    /// A sampled run (sparsity 100) of a mid-sized program: 5,000 sites in
    /// 8 units, about half of them non-zero, one run in ten a crash.
    pub(crate) const REALISTIC: Self = Self {
        sites: 5000,
        units: 8,
        reached: 0.5,
        crashes: 0.1,
        errors: 0.05,
    };
}

/// One subreport as sent.
#[derive(Debug, Clone)]
pub(crate) struct Part {
    /// Its name (`samples`, ...).
    pub(crate) name: &'static str,
    /// Its text.
    pub(crate) text: String,
    /// The gzip stream sent for it.
    pub(crate) gzip: Vec<u8>,
}

/// A report ready to send: its subreports and its gzip multipart body.
#[derive(Debug, Clone)]
pub(crate) struct Prepared {
    /// The subreports in order.
    pub(crate) parts: Vec<Part>,
    /// `Sampler-Exit-Status`.
    pub(crate) exit_status: u8,
    /// `Sampler-Exit-Signal`.
    pub(crate) exit_signal: u8,
    /// The multipart body, gzip parts, as the original writes it.
    pub(crate) body: Bytes,
}

/// The multipart boundary of every body (the original's shape).
const BOUNDARY: &str = "===============8264710315437792106==";

/// `Content-Type` of every body.
pub(crate) fn content_type() -> String {
    format!("multipart/form-data; boundary=\"{BOUNDARY}\"")
}

/// The (unit signature, scheme, arity, sites) of every section.
fn layout(shape: &Shape) -> Vec<(String, &'static str, usize, usize)> {
    // The program is the same for every report: a fixed seed.
    let mut rng = StdRng::seed_from_u64(0x5a3b);
    let schemes = [
        ("branches", 2, 45),
        ("returns", 3, 30),
        ("scalar-pairs", 3, 25),
    ];
    let per_unit = shape.sites / shape.units.max(1);
    let mut sections = Vec::new();
    let mut left = shape.sites;
    for unit in 0..shape.units.max(1) {
        let signature = format!("{:016x}{:016x}", rng.random::<u64>(), rng.random::<u64>());
        let unit_sites = if unit + 1 == shape.units.max(1) {
            left
        } else {
            per_unit
        };
        left -= unit_sites;
        let mut unit_left = unit_sites;
        for (i, (scheme, arity, percent)) in schemes.iter().enumerate() {
            let sites = if i + 1 == schemes.len() {
                unit_left
            } else {
                unit_sites * percent / 100
            };
            unit_left -= sites;
            sections.push((signature.clone(), *scheme, *arity, sites));
        }
    }
    sections
}

/// A count as a sampled run sees one: mostly small.
fn count(rng: &mut StdRng) -> u64 {
    let u: f64 = rng.random();
    1 + (u * u * u * 300.0) as u64
}

/// A samples subreport: zero rows for sites not reached, small counters
/// in one or two of a row's slots for the others.
fn samples(rng: &mut StdRng, shape: &Shape) -> String {
    let mut text = String::with_capacity(shape.sites * 8);
    for (unit, scheme, arity, sites) in layout(shape) {
        writeln!(text, "<samples unit=\"{unit}\" scheme=\"{scheme}\">").unwrap();
        for _ in 0..sites {
            let mut row = [0u64; 3];
            if rng.random_bool(shape.reached) {
                row[rng.random_range(0..arity)] = count(rng);
                if rng.random_bool(0.2) {
                    row[rng.random_range(0..arity)] += count(rng);
                }
            }
            for (i, value) in row[..arity].iter().enumerate() {
                if i > 0 {
                    text.push('\t');
                }
                write!(text, "{value}").unwrap();
            }
            text.push('\n');
        }
        text.push_str("</samples>\n");
    }
    text
}

/// The objects of the crashing program: (load address, build id, path).
const MODULES: [(u64, &str); 10] = [
    (0x55d0_c0a0_0000, "/usr/bin/demo"),
    (0x7f6c_1c40_0000, "/usr/lib/demo/libdemo.so.1"),
    (0x7f6c_1c60_0000, "/usr/lib/demo/libdemo-plugins.so.1"),
    (0x7f6c_1c20_0000, "/lib/x86_64-linux-gnu/libc.so.6"),
    (0x7f6c_1c10_0000, "/lib/x86_64-linux-gnu/libm.so.6"),
    (0x7f6c_1c00_0000, "/lib/x86_64-linux-gnu/libz.so.1"),
    (0x7f6c_1bf0_0000, "/lib/x86_64-linux-gnu/libgcc_s.so.1"),
    (0x7f6c_1be0_0000, "/lib/x86_64-linux-gnu/libstdc++.so.6"),
    (
        0x7f6c_1bd0_0000,
        "/usr/lib/x86_64-linux-gnu/libsampler.so.0",
    ),
    (0x7f6c_1c80_0000, "/lib64/ld-linux-x86-64.so.2"),
];

/// A `modules` subreport: every object's load address, build id, path.
fn modules() -> String {
    let mut text = String::new();
    for (i, (address, path)) in MODULES.iter().enumerate() {
        writeln!(
            text,
            "{address:#x}\t{:040x}\t{path}",
            0xb1d0_0000_u64 + i as u64
        )
        .unwrap();
    }
    text
}

/// A `main-backtrace` of 12 frames as glibc's `backtrace_symbols_fd`
/// prints them, from the signal handler down to `_start`; `place` picks
/// one of a few crash sites.
fn backtrace(rng: &mut StdRng) -> String {
    let place = rng.random_range(0..16u64);
    let (exe, lib, libc) = (MODULES[0].0, MODULES[1].0, MODULES[3].0);
    let frames: [(&str, &str, u64, u64); 12] = [
        (
            "/usr/lib/x86_64-linux-gnu/libsampler.so.0",
            "",
            MODULES[8].0,
            0x2f10,
        ),
        ("/lib/x86_64-linux-gnu/libc.so.6", "", libc, 0x3c050),
        (
            "/usr/lib/demo/libdemo.so.1",
            "lib_store",
            lib,
            0x14 + place * 8,
        ),
        ("/usr/lib/demo/libdemo.so.1", "", lib, 0x1a30 + place * 0x40),
        ("/usr/bin/demo", "", exe, 0x1136 + place * 0x10),
        ("/usr/bin/demo", "", exe, 0x2210),
        ("/usr/bin/demo", "", exe, 0x25c8),
        (
            "/usr/lib/demo/libdemo-plugins.so.1",
            "plugin_run",
            MODULES[2].0,
            0x9c,
        ),
        ("/usr/bin/demo", "", exe, 0x3004),
        ("/lib/x86_64-linux-gnu/libc.so.6", "", libc, 0x2724a),
        (
            "/lib/x86_64-linux-gnu/libc.so.6",
            "__libc_start_main",
            libc,
            0x85,
        ),
        ("/usr/bin/demo", "_start", exe, 0x21),
    ];
    let mut text = String::new();
    for (object, symbol, base, offset) in frames {
        // With a symbol, glibc prints the offset from it; the address is
        // then only somewhere past the object's base.
        let address = base
            + if symbol.is_empty() {
                offset
            } else {
                0x1000 + offset
            };
        writeln!(text, "{object}({symbol}+{offset:#x})[{address:#x}]").unwrap();
    }
    text
}

/// A gzip stream of `bytes`.
pub(crate) fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = GzEncoder::new(Vec::new(), Compression::default());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

/// The multipart body the original uploader writes: one gzip part per
/// subreport, named by its id (as `OriginalUpload` in the tests).
pub(crate) fn multipart(parts: &[Part]) -> Bytes {
    let mut body = Vec::new();
    for Part { name, gzip, .. } in parts {
        write!(
            body,
            "--{BOUNDARY}\r\ncontent-disposition: form-data; filename=\"{name}\", name=\"{name}\"\r\ncontent-encoding: gzip\r\n\r\n"
        )
        .unwrap();
        body.extend_from_slice(gzip);
        body.extend_from_slice(b"\r\n");
    }
    write!(body, "--{BOUNDARY}--\r\n").unwrap();
    body.into()
}

/// `count` distinct reports of `shape`, from `seed`.
pub(crate) fn reports(seed: u64, count: usize, shape: &Shape) -> Vec<Prepared> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..count)
        .map(|_| {
            let roll: f64 = rng.random();
            let crash = roll < shape.crashes;
            let error = !crash && roll < shape.crashes + shape.errors;
            let mut texts = vec![("samples", samples(&mut rng, shape))];
            if crash {
                texts.push(("main-backtrace", backtrace(&mut rng)));
                texts.push(("modules", modules()));
            }
            let parts: Vec<Part> = texts
                .into_iter()
                .map(|(name, text)| Part {
                    name,
                    gzip: gzip(text.as_bytes()),
                    text,
                })
                .collect();
            let body = multipart(&parts);
            Prepared {
                parts,
                exit_status: u8::from(error),
                exit_signal: if crash { 11 } else { 0 },
                body,
            }
        })
        .collect()
}

/// The headers the original launcher sends for a run of application
/// `demo` that exited with `status` or died of `signal`.
pub(crate) fn original_headers(status: u8, signal: u8) -> Vec<(&'static str, String)> {
    vec![
        ("Sampler-Version", "1.6.0".into()),
        ("Sampler-Application-Name", APP.into()),
        ("Sampler-Application-Version", "1.2".into()),
        ("Sampler-Application-Release", "3".into()),
        ("Sampler-Executable-Path", "/usr/bin/demo".into()),
        ("Sampler-Instrumentor-Version", "0.1.0".into()),
        ("Sampler-Build-Distribution", "debian-12-x86_64".into()),
        ("Sampler-Sparsity", "100".into()),
        ("Sampler-Exit-Status", status.to_string()),
        ("Sampler-Exit-Signal", signal.to_string()),
    ]
}

/// The headers the original launcher sends with `report`, and its id.
pub(crate) fn headers(report: &Prepared, report_id: &str) -> Vec<(&'static str, String)> {
    let mut headers = original_headers(report.exit_status, report.exit_signal);
    headers.push(("Sampler-Report-Id", report_id.to_owned()));
    headers
}

/// What the server answered to one upload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Answer {
    /// 200, with its `Sampler-Unique-Id`.
    Stored(String),
    /// Another status, with the body.
    Refused(u16, String),
    /// No answer: the connection failed or closed.
    Lost(String),
}

/// One client: one keep-alive connection.
pub(crate) fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .pool_max_idle_per_host(1)
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap()
}

/// Uploads `report` under `report_id`.
pub(crate) async fn send(
    client: &reqwest::Client,
    url: &str,
    token: &str,
    report: &Prepared,
    report_id: &str,
) -> Answer {
    let mut request = client
        .post(format!("{url}/upload"))
        .bearer_auth(token)
        .header("Content-Type", content_type())
        .body(report.body.clone());
    for (name, value) in headers(report, report_id) {
        request = request.header(name, value);
    }
    let response = match request.send().await {
        Ok(response) => response,
        Err(error) => return Answer::Lost(error.to_string()),
    };
    let status = response.status().as_u16();
    let unique_id = response
        .headers()
        .get("sampler-unique-id")
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    match response.text().await {
        Ok(text) if status == 200 => match unique_id {
            Some(id) if id == text => Answer::Stored(id),
            other => Answer::Refused(status, format!("unique id {other:?}, body {text:?}")),
        },
        Ok(text) => Answer::Refused(status, text),
        Err(error) => Answer::Lost(error.to_string()),
    }
}

/// A `sampler-collector serve` child process, on an ephemeral loopback
/// port, logging JSON lines to a file. Killed when dropped.
#[derive(Debug)]
pub(crate) struct ServerProcess {
    child: Option<Child>,
    /// Its process id.
    pub(crate) pid: u32,
    /// `http://127.0.0.1:PORT`.
    pub(crate) url: String,
    log: PathBuf,
}

impl ServerProcess {
    /// Starts `binary serve ARGS --listen 127.0.0.1:0 --log-json` and
    /// waits until its log says where it serves.
    pub(crate) fn start(binary: &Path, args: &[String], log: &Path) -> Self {
        let file = std::fs::File::create(log).unwrap();
        let mut child = Command::new(binary)
            .arg("serve")
            .args(args)
            .args(["--listen", "127.0.0.1:0", "--log-json"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(file)
            .spawn()
            .unwrap_or_else(|error| panic!("cannot run {}: {error}", binary.display()));
        let started = Instant::now();
        loop {
            if let Some(address) = serving_address(log) {
                return Self {
                    pid: child.id(),
                    child: Some(child),
                    url: format!("http://{address}"),
                    log: log.to_owned(),
                };
            }
            if let Some(status) = child.try_wait().unwrap() {
                panic!(
                    "the server exited ({status}) before serving:\n{}",
                    std::fs::read_to_string(log).unwrap_or_default()
                );
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "the server did not start in 60 s:\n{}",
                std::fs::read_to_string(log).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Kills it with SIGKILL and reaps it.
    pub(crate) fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill().unwrap();
            child.wait().unwrap();
        }
    }

    /// Stops it with SIGTERM (a graceful shutdown) and waits for its exit.
    pub(crate) fn terminate(&mut self) {
        if let Some(mut child) = self.child.take() {
            let status = Command::new("kill")
                .args(["-TERM", &self.pid.to_string()])
                .status()
                .unwrap();
            assert!(status.success(), "kill -TERM {} failed", self.pid);
            let status = child.wait().unwrap();
            assert!(
                status.success(),
                "the server exited with {status}:\n{}",
                std::fs::read_to_string(&self.log).unwrap_or_default()
            );
        }
    }

    /// Its resident memory (`VmRSS`), in KiB.
    pub(crate) fn rss_kib(&self) -> Option<u64> {
        rss_kib(self.pid)
    }

    /// Its CPU time so far, user and system, in clock ticks.
    pub(crate) fn cpu_ticks(&self) -> Option<u64> {
        cpu_ticks(&format!("/proc/{}/stat", self.pid))
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The resident memory (`VmRSS`) of process `pid`, in KiB.
pub(crate) fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

/// User plus system CPU time of the process whose `stat` file is `path`,
/// in clock ticks (fields 14 and 15, counted past the command's `)`).
pub(crate) fn cpu_ticks(path: &str) -> Option<u64> {
    let stat = std::fs::read_to_string(path).ok()?;
    let fields: Vec<&str> = stat[stat.rfind(')')? + 2..].split(' ').collect();
    Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
}

/// The address in the log's `serving` line, once it is there.
fn serving_address(log: &Path) -> Option<String> {
    let file = std::fs::File::open(log).ok()?;
    std::io::BufReader::new(file).lines().find_map(|line| {
        let line: serde_json::Value = serde_json::from_str(&line.ok()?).ok()?;
        let fields = &line["fields"];
        (fields["message"] == "serving").then(|| fields["address"].as_str().map(str::to_owned))?
    })
}

/// Creates a token with `binary token create`; `database` is
/// `--data DIR` or `--database URL`.
pub(crate) fn token(binary: &Path, database: &[String], scope: &str) -> String {
    let output = Command::new(binary)
        .args(["token", "create", "--app", APP, "--scope", scope])
        .args(database)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "token create: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}
