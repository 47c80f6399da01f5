//! sampler-cc as users run it: real C built by gcc through sampler-cc (with
//! make, static and shared libraries), run, and its reports joined with the
//! embedded site tables by the offline tools.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

mod diagnostics;
mod drop_in;
mod flags;
mod install;
mod plugins;
mod project;
mod sampling;
mod schemes;
mod trace;
mod values;

/// Every scheme sampler-cc implements, strict as every test is.
const ALL_SCHEMES: [&str; 4] = [
    "-fsampler-strict",
    "-fsampler-scheme=branches",
    "-fsampler-scheme=returns",
    "-fsampler-scheme=function-entries",
];

/// All eight schemes, with the flags that widen the assignment schemes.
const EVERY_SCHEME: [&str; 14] = [
    "-fsampler-strict",
    "-fsampler-scheme=scalar-pairs",
    "-fsampler-scheme=atoms",
    "-fsampler-scheme=branches",
    "-fsampler-scheme=bounds",
    "-fsampler-scheme=function-entries",
    "-fsampler-scheme=returns",
    "-fsampler-scheme=float-kinds",
    "-fsampler-scheme=g-object-unref",
    "-fcompare-constants",
    "-fcompare-uninitialized",
    "-fassign-into-field",
    "-fassign-into-index",
    "-fassign-across-pointer",
];

/// The tools the tests drive, built once: the packaged runtime and the
/// offline tools (which live in other crates, so cargo does not build them
/// for this crate's tests).
fn tools() -> &'static sampler_testkit::Tools {
    static TOOLS: OnceLock<sampler_testkit::Tools> = OnceLock::new();
    TOOLS.get_or_init(|| sampler_testkit::Tools::build(&["sampler-extract", "sampler-resolve"]))
}

fn sampler_cc() -> &'static str {
    env!("CARGO_BIN_EXE_sampler-cc")
}

/// A scratch folder where programs are built and run.
struct Lab {
    dir: tempfile::TempDir,
}

impl Lab {
    fn new() -> Self {
        tools();
        Lab {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn root(&self) -> String {
        self.dir.path().display().to_string()
    }

    fn write(&self, name: &str, text: &str) {
        std::fs::write(self.path(name), text).unwrap();
    }

    /// A command run in the lab with the runtime's folder known.
    fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut command = Command::new(program);
        command
            .current_dir(self.dir.path())
            .env("SAMPLER_RUNTIME_DIR", tools().runtime.path())
            .env_remove("SAMPLER_FILE")
            .env_remove("SAMPLER_SPARSITY")
            .env_remove("SAMPLER_REPORT_FD");
        command
    }

    fn tool(&self, name: &str) -> Command {
        self.command(tools().bin.join(name))
    }

    /// Plain gcc with `args`; panics unless it succeeds.
    fn gcc(&self, args: &[&str]) -> Output {
        let output = self.command("gcc").args(args).output().unwrap();
        assert!(output.status.success(), "gcc {args:?}: {output:?}");
        output
    }

    /// The symbols `nm` lists in `program`, as (type letter, name): `t`
    /// for a local function.
    fn symbols(&self, program: &str) -> Vec<(String, String)> {
        let output = self.command("nm").arg(self.path(program)).output().unwrap();
        assert!(output.status.success(), "nm {program}: {output:?}");
        String::from_utf8(output.stdout)
            .unwrap()
            .lines()
            .filter_map(|line| {
                // `ADDRESS TYPE NAME`, or `TYPE NAME` when undefined.
                let fields: Vec<&str> = line.split_whitespace().collect();
                match fields.as_slice() {
                    [.., kind, name] => Some((kind.to_string(), name.to_string())),
                    _ => None,
                }
            })
            .collect()
    }

    /// sampler-cc with `args`; panics with its stderr unless it succeeds.
    fn cc(&self, args: &[&str]) -> Output {
        let output = self.command(sampler_cc()).args(args).output().unwrap();
        assert!(
            output.status.success(),
            "sampler-cc {} failed:\n{}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr)
        );
        output
    }

    /// Runs `program args` with `env` until it dies of SIGSEGV, its
    /// report written to `report`, then reads that report with the
    /// resolver `tool` (`resolve-trace`, `resolve-backtrace`); returns
    /// the program's and the resolver's standard output.
    fn crash_resolved(
        &self,
        program: &str,
        args: &[&str],
        env: &[(&str, &str)],
        report: &str,
        tool: &str,
    ) -> (String, String) {
        use std::os::unix::process::ExitStatusExt;
        let report = self.path(report);
        let output = self
            .command(self.path(program))
            .args(args)
            .env("SAMPLER_FILE", &report)
            .envs(env.iter().copied())
            .output()
            .unwrap();
        assert_eq!(output.status.signal(), Some(11), "{program}: {output:?}");
        let resolved = self
            .tool(tool)
            .arg(self.path(program))
            .stdin(std::fs::File::open(&report).unwrap())
            .output()
            .unwrap();
        assert!(resolved.status.success(), "{tool}: {resolved:?}");
        (
            String::from_utf8(output.stdout).unwrap(),
            String::from_utf8(resolved.stdout).unwrap(),
        )
    }

    /// Runs `program args` with its report written to `report`.
    fn run(&self, program: &str, args: &[&str], report: &str, env: &[(&str, &str)]) -> String {
        let output = self
            .command(self.path(program))
            .args(args)
            .env("SAMPLER_FILE", self.path(report))
            .envs(env.iter().copied())
            .output()
            .unwrap();
        assert!(output.status.success(), "{program} failed: {output:?}");
        String::from_utf8(output.stdout).unwrap()
    }

    /// `extract-report samples < report | resolve-samples binaries...`,
    /// with unit signatures and the lab's path made stable.
    fn resolve(&self, report: &str, binaries: &[&str]) -> String {
        self.resolve_with("resolve-samples", report, binaries)
    }

    /// [`Self::resolve`] through `tool` (`resolve-samples` or
    /// `resolve-timestamps`).
    fn resolve_with(&self, tool: &str, report: &str, binaries: &[&str]) -> String {
        let samples = self.samples(report);
        let mut resolve = self
            .tool(tool)
            .args(binaries)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::io::Write::write_all(resolve.stdin.as_mut().unwrap(), samples.as_bytes()).unwrap();
        let resolved = resolve.wait_with_output().unwrap();
        assert!(resolved.status.success(), "{tool}: {resolved:?}");
        self.stable(&String::from_utf8(resolved.stdout).unwrap())
    }

    /// `extract-report samples < report`: the report's counters.
    fn samples(&self, report: &str) -> String {
        let samples = self
            .tool("extract-report")
            .arg("samples")
            .stdin(std::fs::File::open(self.path(report)).unwrap())
            .output()
            .unwrap();
        assert!(samples.status.success(), "extract-report: {samples:?}");
        String::from_utf8(samples.stdout).unwrap()
    }

    /// `text` with 32-digit signatures as `UNIT` and the lab's path as `LAB`.
    fn stable(&self, text: &str) -> String {
        let text = text.replace(&self.root(), "LAB");
        let mut out = String::with_capacity(text.len());
        let mut run = String::new();
        for ch in text.chars().chain(std::iter::once('\n')) {
            if ch.is_ascii_hexdigit() && !ch.is_ascii_uppercase() {
                run.push(ch);
                continue;
            }
            out.push_str(if run.len() == 32 { "UNIT" } else { &run });
            run.clear();
            out.push(ch);
        }
        out.pop();
        out
    }

    /// The `.debug_site_info` of `file`, made stable.
    fn site_table(&self, file: &str) -> String {
        let output = self
            .tool("extract-section")
            .args([".debug_site_info", file])
            .output()
            .unwrap();
        assert!(output.status.success(), "extract-section: {output:?}");
        self.stable(&String::from_utf8(output.stdout).unwrap())
    }
}

/// `lines` as one text, each ending in a newline.
fn lines(lines: &[&str]) -> String {
    lines.iter().map(|line| format!("{line}\n")).collect()
}

/// Diagnostics as `file:line:column: message`: sampler-cc keeps the
/// user's columns (ARCHITECTURE.md, "Columns").
fn diagnostics(stderr: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(stderr)
        .lines()
        .filter(|line| line.contains(": warning: ") || line.contains(": error: "))
        .map(str::to_owned)
        .collect()
}
