//! The runtime as instrumented programs use it: C programs in `tests/c`,
//! compiled by gcc against the staticlib (or the shared variant), run with
//! the `SAMPLER_*` environment, their reports read back with
//! `sampler-formats`.

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use sampler_formats::{Report, Subreport};

mod crash;
mod exit;
mod sampling;
mod trace;

const UNIT_11: &str = "11111111111111111111111111111111";
const UNIT_22: &str = "22222222222222222222222222222222";

/// Where cargo put `libsampler_runtime.a`: next to the `deps` folder that
/// holds this test binary.
fn build_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent().unwrap().parent().unwrap().to_path_buf()
}

/// `libsampler_runtime.a`, rebuilt first: `cargo test` builds only the
/// rlib of a crate for its integration tests, so without this the C
/// programs would link a stale staticlib.
fn staticlib() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let build_dir = build_dir();
            let target_dir = build_dir.parent().unwrap();
            let profile = match build_dir.file_name().and_then(|name| name.to_str()) {
                Some("debug") => "dev",
                Some(other) => other,
                None => "dev",
            };
            let status = Command::new(option_env!("CARGO").unwrap_or("cargo"))
                .args([
                    "build",
                    "--quiet",
                    "--lib",
                    "-p",
                    "sampler-runtime",
                    "--profile",
                    profile,
                ])
                .arg("--target-dir")
                .arg(target_dir)
                .current_dir(runtime_dir())
                .status()
                .expect("cannot run cargo to build the staticlib");
            assert!(status.success(), "building libsampler_runtime.a failed");
            build_dir.join("libsampler_runtime.a")
        })
        .clone()
}

/// The packaged runtime (`scripts/package-runtime.sh`): the folder holding
/// `libsampler_runtime.a` and `libsampler_runtime.so` as programs link them.
fn packaged() -> PathBuf {
    static PACKAGED: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    PACKAGED
        .get_or_init(|| {
            let out = tempfile::tempdir().unwrap();
            let script = runtime_dir().join("../scripts/package-runtime.sh");
            let output = Command::new(script)
                .arg(staticlib())
                .arg(out.path())
                .output()
                .expect("cannot run scripts/package-runtime.sh");
            assert!(
                output.status.success(),
                "packaging the runtime failed:\n{}",
                String::from_utf8_lossy(&output.stderr)
            );
            out
        })
        .path()
        .to_path_buf()
}

fn runtime_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

const SYSTEM_LIBS: [&str; 4] = ["-lgcc_s", "-lpthread", "-ldl", "-lm"];

/// A scratch directory with programs built in it.
struct Lab {
    dir: tempfile::TempDir,
}

impl Lab {
    fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn gcc(&self, args: &[&str]) {
        let include = runtime_dir().join("include");
        let tests_c = runtime_dir().join("tests/c");
        let output = Command::new("gcc")
            .args(["-g", "-O1", "-Wall", "-Wextra", "-Werror", "-pthread"])
            .arg(format!("-I{}", include.display()))
            .arg(format!("-I{}", tests_c.display()))
            .args(args)
            .current_dir(self.dir.path())
            .output()
            .expect("cannot run gcc");
        assert!(
            output.status.success(),
            "gcc {} failed:\n{}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr)
        );
    }

    /// `tests/c/SOURCE` built as `name`, linked with the static runtime,
    /// with `extra` flags.
    fn static_program(&self, source: &str, name: &str, extra: &[&str]) -> PathBuf {
        let source = runtime_dir().join("tests/c").join(source);
        let archive = packaged().join("libsampler_runtime.a");
        let mut args = extra.to_vec();
        args.extend([
            source.to_str().unwrap(),
            archive.to_str().unwrap(),
            "-o",
            name,
        ]);
        args.extend(SYSTEM_LIBS);
        self.gcc(&args);
        self.path(name)
    }

    /// `program` linked with the static runtime; `-rdynamic` so that
    /// `backtrace_symbols_fd` can name the test's functions.
    fn program_static(&self) -> PathBuf {
        self.static_program("program.c", "program", &["-rdynamic"])
    }

    /// `stats` (tests/c/stats.c) linked with the static runtime.
    fn stats_static(&self) -> PathBuf {
        self.static_program("stats.c", "stats", &["-O2"])
    }

    /// The shared runtime, copied next to the programs.
    fn shared_runtime(&self) -> PathBuf {
        let copy = self.path("libsampler_runtime.so");
        std::fs::copy(packaged().join("libsampler_runtime.so"), &copy).unwrap();
        copy
    }

    /// `program` and `plugin.so`, both linked with the shared runtime.
    fn program_and_plugin_shared(&self) -> (PathBuf, PathBuf) {
        self.shared_runtime();
        let dir = self.dir.path().display().to_string();
        let rpath = format!("-Wl,-rpath,{dir}");
        let program = runtime_dir().join("tests/c/program.c");
        self.gcc(&[
            program.to_str().unwrap(),
            "-o",
            "program",
            "-L.",
            "-lsampler_runtime",
            &rpath,
            "-ldl",
        ]);
        (self.path("program"), self.plugin(&rpath))
    }

    /// `plugin.so` (tests/c/plugin.c), linked with the shared runtime.
    fn plugin(&self, rpath: &str) -> PathBuf {
        let plugin = runtime_dir().join("tests/c/plugin.c");
        self.gcc(&[
            "-shared",
            "-fPIC",
            plugin.to_str().unwrap(),
            "-o",
            "plugin.so",
            "-L.",
            "-lsampler_runtime",
            rpath,
        ]);
        self.path("plugin.so")
    }

    /// `host` (tests/c/host.c), which does not link the runtime, and
    /// `plugin.so`, linked with the shared runtime: the runtime comes in by
    /// `dlopen`.
    fn host_and_plugin_shared(&self) -> (PathBuf, PathBuf) {
        self.shared_runtime();
        let dir = self.dir.path().display().to_string();
        let host = runtime_dir().join("tests/c/host.c");
        self.gcc(&[host.to_str().unwrap(), "-o", "host", "-ldl"]);
        (self.path("host"), self.plugin(&format!("-Wl,-rpath,{dir}")))
    }

    /// `helpers` (tests/c/helpers.c) linked with the shared runtime.
    fn helpers_shared(&self) -> PathBuf {
        self.shared_runtime();
        let dir = self.dir.path().display().to_string();
        let source = runtime_dir().join("tests/c/helpers.c");
        self.gcc(&[
            source.to_str().unwrap(),
            "-o",
            "helpers",
            "-L.",
            "-lsampler_runtime",
            &format!("-Wl,-rpath,{dir}"),
        ]);
        self.path("helpers")
    }

    /// Runs `program` with only the given `SAMPLER_*` variables.
    fn run(&self, program: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut command = Command::new(program);
        command.args(args).current_dir(self.dir.path());
        for (name, _) in std::env::vars() {
            if name.starts_with("SAMPLER_") {
                command.env_remove(name);
            }
        }
        command.envs(env.iter().copied());
        command.output().unwrap()
    }

    fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.path(name))
            .unwrap_or_else(|e| panic!("cannot read `{name}`: {e}"))
    }
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The report text of the known events of `program.c`, with `extra` false
/// counts at branches site 1 (the sampled site).
/// One `<report id="samples">` block holding `body`.
fn samples_report(body: &str) -> String {
    format!("<report id=\"samples\">\n{body}</report>\n")
}

fn known_samples(unit: &str, extra: u64) -> String {
    format!(
        "<samples unit=\"{unit}\" scheme=\"branches\">\n1\t2\n{extra}\t4\n</samples>\n\
         <timestamps unit=\"{unit}\" scheme=\"branches\" when=\"first\">\n1\n0\n</timestamps>\n\
         <timestamps unit=\"{unit}\" scheme=\"branches\" when=\"last\">\n3\n0\n</timestamps>\n\
         <samples unit=\"{unit}\" scheme=\"returns\">\n0\t3\t1\n</samples>\n\
         <samples unit=\"{unit}\" scheme=\"bounds\">\n-7\t40\n</samples>\n"
    )
}

/// Parses a report with our own reader: the runtime's output must be valid.
fn parse(text: &str) -> Report {
    Report::read(text.as_bytes()).unwrap_or_else(|e| panic!("invalid report: {e}\n{text}"))
}

fn subreport_ids(report: &Report) -> Vec<String> {
    report
        .subreports
        .iter()
        .map(|s| match s {
            Subreport::Samples(_) => "samples".to_owned(),
            Subreport::Other { id, .. } => id.clone(),
        })
        .collect()
}

fn signal_of(output: &Output) -> Option<i32> {
    output.status.signal()
}
