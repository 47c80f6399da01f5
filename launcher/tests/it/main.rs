//! `sampler-run` around real instrumented C programs (sampler-cc and the
//! packaged runtime), uploading to a real collector on loopback or to test
//! servers that give fixed answers.

mod delivery;
mod outcomes;
mod responses;
mod wrappers;

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use sampler_collector::limits::Limits;
use sampler_collector::server::{self, Running};
use sampler_collector::store::{DatabaseTarget, Store};
use sampler_collector::tokens::{self, Scope};
use serde_json::Value;

/// sampler-cc, the packaged runtime and the collector's binary, built once.
#[derive(Debug)]
pub struct Tools {
    pub collector: PathBuf,
    /// The test program, built with `-g` by sampler-cc.
    pub program: PathBuf,
    _programs: tempfile::TempDir,
    _kit: sampler_testkit::Tools,
}

const PROGRAM: &str = r#"#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__attribute__((noinline)) static int crash_here(int *p) {
    return *p + 1;
}

static void on_usr1(int signal) {
    (void)signal;
    exit(42); /* the report is written at exit */
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "ok";
    int i, sum = 0;
    for (i = 0; i < 10; i++)
        if (i % 3 == 0)
            sum += i;
    if (strcmp(mode, "ok") == 0)
        return 0;
    if (strcmp(mode, "exit") == 0)
        return 3;
    if (strcmp(mode, "segv") == 0)
        return crash_here(NULL);
    if (strcmp(mode, "abort") == 0)
        abort();
    if (strcmp(mode, "hang") == 0 || strcmp(mode, "usr1") == 0) {
        if (mode[0] == 'u')
            signal(SIGUSR1, on_usr1);
        puts("ready");
        fflush(stdout);
        for (;;)
            pause();
    }
    if (strcmp(mode, "daemon") == 0) {
        pid_t child = fork();
        if (child == 0) {
            close(1); /* keep the report pipe, not the caller's output */
            close(2);
            sleep(30);
            _exit(0);
        }
        printf("%d\n", (int)child);
        fflush(stdout);
        return 0;
    }
    return sum;
}
"#;

pub fn tools() -> &'static Tools {
    static TOOLS: OnceLock<Tools> = OnceLock::new();
    TOOLS.get_or_init(|| {
        let kit = sampler_testkit::Tools::build(&["sampler-cc", "sampler-collector"]);
        let programs = tempfile::tempdir().unwrap();
        std::fs::write(programs.path().join("demo.c"), PROGRAM).unwrap();
        kit.sampler_cc(
            programs.path(),
            &["-g", "-O0", "-fsampler-strict", "-o", "demo", "demo.c"],
        );
        Tools {
            collector: kit.bin.join("sampler-collector"),
            program: programs.path().join("demo"),
            _programs: programs,
            _kit: kit,
        }
    })
}

/// A user of sampler-run: their own state, configuration and system
/// configuration folders.
#[derive(Debug)]
pub struct User {
    pub dir: tempfile::TempDir,
}

impl User {
    /// A user who consented to uploads.
    pub fn consenting() -> Self {
        let user = Self::new();
        let output = user.command().args(["consent", "yes"]).output().unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        user
    }

    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        for sub in ["state", "config/sampler", "etc"] {
            std::fs::create_dir_all(dir.path().join(sub)).unwrap();
        }
        Self { dir }
    }

    pub fn state(&self) -> PathBuf {
        self.dir.path().join("state")
    }

    /// Writes `~/.config/sampler/demo.toml`.
    pub fn configure(&self, text: &str) {
        std::fs::write(self.dir.path().join("config/sampler/demo.toml"), text).unwrap();
    }

    /// `sampler-run` with this user's folders and no stray `SAMPLER_*`.
    pub fn command(&self) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_sampler-run"));
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("SAMPLER_") {
                command.env_remove(name);
            }
        }
        command
            .env("SAMPLER_STATE_DIR", self.state())
            .env("XDG_CONFIG_HOME", self.dir.path().join("config"))
            .env("SAMPLER_SYSTEM_CONFIG_DIR", self.dir.path().join("etc"));
        command
    }

    /// `sampler-run --app demo -- demo MODE` (the app's other settings
    /// come from its configuration file).
    pub fn run(&self, mode: &str) -> Output {
        self.command()
            .args(["--app", "demo", "--version", "2.0", "--"])
            .arg(&tools().program)
            .arg(mode)
            .output()
            .unwrap()
    }

    /// The spooled reports.
    pub fn spooled(&self) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = std::fs::read_dir(self.state().join("spool/demo"))
            .into_iter()
            .flatten()
            .map(|entry| entry.unwrap().path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "report"))
            .collect();
        files.sort();
        files
    }

    pub fn status(&self) -> String {
        let output = self.command().arg("status").output().unwrap();
        assert!(output.status.success());
        String::from_utf8(output.stdout).unwrap()
    }

    pub fn flush(&self) -> Output {
        self.command().arg("flush").output().unwrap()
    }
}

/// The program alone, as the caller would see it.
pub fn alone(mode: &str) -> std::process::ExitStatus {
    Command::new(&tools().program)
        .arg(mode)
        .output()
        .unwrap()
        .status
}

/// Waits until `check` holds, for up to `limit`.
pub fn eventually(limit: Duration, mut check: impl FnMut() -> bool) -> bool {
    let until = Instant::now() + limit;
    loop {
        if check() {
            return true;
        }
        if Instant::now() >= until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A real collector, in process, on loopback.
#[allow(missing_debug_implementations)]
pub struct Collector {
    runtime: tokio::runtime::Runtime,
    running: Option<Running>,
    pub url: String,
    pub ingest: String,
    pub read: String,
    _data: tempfile::TempDir,
}

impl Collector {
    pub fn start() -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let data = tempfile::tempdir().unwrap();
        let (running, ingest, read) = runtime.block_on(async {
            let store = Store::open(&DatabaseTarget::SqliteDir(data.path().join("data")), 4)
                .await
                .unwrap();
            let ingest = tokens::create(&store, "demo", Scope::Ingest).await.unwrap();
            let read = tokens::create(&store, "demo", Scope::Read).await.unwrap();
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let running = server::start(
                store,
                Limits::default(),
                data.path().join("incoming"),
                listener,
            )
            .await
            .unwrap();
            (running, ingest, read)
        });
        Self {
            url: format!("http://{}", running.address),
            running: Some(running),
            runtime,
            ingest,
            read,
            _data: data,
        }
    }

    /// `demo.toml` pointing at this collector.
    pub fn config(&self) -> String {
        format!("server = \"{}\"\ntoken = \"{}\"\n", self.url, self.ingest)
    }

    pub fn get(&self, path: &str) -> Value {
        let response = reqwest::blocking::Client::new()
            .get(format!("{}{path}", self.url))
            .bearer_auth(&self.read)
            .send()
            .unwrap();
        assert_eq!(response.status(), 200, "GET {path}");
        serde_json::from_str(&response.text().unwrap()).unwrap()
    }

    pub fn get_text(&self, path: &str) -> String {
        let response = reqwest::blocking::Client::new()
            .get(format!("{}{path}", self.url))
            .bearer_auth(&self.read)
            .send()
            .unwrap();
        assert_eq!(response.status(), 200, "GET {path}");
        response.text().unwrap()
    }

    /// The stored runs of `demo`, newest first.
    pub fn runs(&self) -> Vec<Value> {
        self.get("/api/v1/runs?app=demo&limit=1000")["runs"]
            .as_array()
            .unwrap()
            .clone()
    }

    pub fn add_build(&self, files: &[PathBuf]) {
        self.runtime
            .block_on(sampler_collector::builds::upload_build(
                &self.url,
                &self.ingest,
                &sampler_collector::builds::BuildUpload {
                    app: "demo",
                    version: "2.0",
                    files,
                    ..Default::default()
                },
            ))
            .unwrap();
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        if let Some(running) = self.running.take() {
            let _ = self.runtime.block_on(running.shutdown());
        }
    }
}

/// One request a test server received: its headers (lower-case names).
#[derive(Debug, Clone)]
pub struct Request {
    pub headers: Vec<(String, String)>,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }
}

/// A test server on loopback that answers request N with `answers[N]` (the
/// last one repeated), or never answers when `answers` is empty.
#[derive(Debug)]
pub struct FixedServer {
    pub url: String,
    pub requests: Arc<Mutex<Vec<Request>>>,
}

impl FixedServer {
    pub fn start(answers: Vec<String>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = requests.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let seen = seen.clone();
                let answers = answers.clone();
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(stream);
                    let mut headers = Vec::new();
                    let mut length = 0usize;
                    loop {
                        let mut line = String::new();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        let line = line.trim_end();
                        if line.is_empty() {
                            break;
                        }
                        if let Some((name, value)) = line.split_once(':') {
                            let name = name.trim().to_ascii_lowercase();
                            if name == "content-length" {
                                length = value.trim().parse().unwrap_or(0);
                            }
                            headers.push((name, value.trim().to_owned()));
                        }
                    }
                    let mut body = vec![0u8; length];
                    if reader.read_exact(&mut body).is_err() {
                        return;
                    }
                    let index = {
                        let mut seen = seen.lock().unwrap();
                        seen.push(Request { headers });
                        seen.len() - 1
                    };
                    let Some(answer) = answers.get(index).or(answers.last()) else {
                        // Never answer: hold the connection open.
                        std::thread::sleep(Duration::from_secs(60));
                        return;
                    };
                    let mut stream = reader.into_inner();
                    let _ = stream.write_all(answer.as_bytes());
                });
            }
        });
        Self { url, requests }
    }

    pub fn count(&self) -> usize {
        self.requests.lock().unwrap().len()
    }
}

/// An HTTP answer with `extra` header lines and `body`.
pub fn answer(status: &str, extra: &[&str], body: &str) -> String {
    let mut text = format!(
        "HTTP/1.1 {status}\r\ncontent-length: {}\r\nconnection: close\r\n",
        body.len()
    );
    for line in extra {
        text.push_str(line);
        text.push_str("\r\n");
    }
    text.push_str("\r\n");
    text.push_str(body);
    text
}

/// A loopback address where nothing listens.
pub fn nothing_listens() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    url
}
