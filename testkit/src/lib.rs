//! What the integration tests of several crates share.
//!
//! Tests that compile C with `sampler-cc` and run it need binaries of
//! other crates, which cargo does not build for them: [`Tools::build`]
//! builds the named packages into the running test's own target folder
//! and profile, then packages the runtime with `scripts/package-runtime.sh`.

#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The workspace's root folder.
pub fn workspace_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("testkit/ is in the workspace")
}

/// Where the running test's profile puts the workspace's binaries
/// (`target/debug` for `cargo test`).
pub fn target_bin_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test's own path");
    // target/PROFILE/deps/TEST
    exe.parent()
        .and_then(Path::parent)
        .expect("a test binary in target/PROFILE/deps")
        .to_path_buf()
}

/// The binaries of the workspace and a packaged runtime.
#[derive(Debug)]
pub struct Tools {
    /// The folder of the binaries (`sampler-cc`, `sampler-run`, ...).
    pub bin: PathBuf,
    /// `libsampler_runtime.a` and `.so`, as `SAMPLER_RUNTIME_DIR` wants them.
    pub runtime: tempfile::TempDir,
}

impl Tools {
    /// Builds `packages` (and `sampler-runtime`) in the test's profile and
    /// target folder, and packages the runtime; panics with the reason.
    pub fn build(packages: &[&str]) -> Self {
        let bin = target_bin_dir();
        let profile = match bin.file_name().and_then(|name| name.to_str()) {
            Some("debug") | None => "dev",
            Some(other) => other,
        };
        let mut command = Command::new(option_env!("CARGO").unwrap_or("cargo"));
        command.args([
            "build",
            "--quiet",
            "--profile",
            profile,
            "-p",
            "sampler-runtime",
        ]);
        for package in packages {
            command.args(["-p", package]);
        }
        let status = command
            .arg("--target-dir")
            .arg(bin.parent().expect("target/PROFILE"))
            .current_dir(workspace_root())
            .status()
            .expect("cannot run cargo");
        assert!(
            status.success(),
            "building {packages:?} and the runtime failed"
        );
        let runtime = tempfile::tempdir().expect("a temporary folder");
        let output = Command::new(workspace_root().join("scripts/package-runtime.sh"))
            .arg(bin.join("libsampler_runtime.a"))
            .arg(runtime.path())
            .output()
            .expect("cannot run scripts/package-runtime.sh");
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        Self { bin, runtime }
    }

    /// `sampler-cc ARGS` in `dir`, with this runtime; panics with its
    /// stderr unless it succeeds.
    pub fn sampler_cc(&self, dir: &Path, args: &[&str]) {
        let output = Command::new(self.bin.join("sampler-cc"))
            .args(args)
            .current_dir(dir)
            .env("SAMPLER_RUNTIME_DIR", self.runtime.path())
            .output()
            .expect("cannot run sampler-cc");
        assert!(
            output.status.success(),
            "sampler-cc {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

/// A report's subreports in order, the bodies of same-named ones
/// concatenated, as the original launcher splits a report for upload.
pub fn subreports(report: &str) -> Vec<(String, String)> {
    let mut parts: Vec<(String, String)> = Vec::new();
    let mut current = None;
    for line in report.lines() {
        if let Some(id) = line
            .strip_prefix("<report id=\"")
            .and_then(|rest| rest.strip_suffix("\">"))
        {
            current = Some(
                parts
                    .iter()
                    .position(|(name, _)| name == id)
                    .unwrap_or_else(|| {
                        parts.push((id.to_owned(), String::new()));
                        parts.len() - 1
                    }),
            );
        } else if line == "</report>" {
            current = None;
        } else if let Some(index) = current {
            parts[index].1.push_str(line);
            parts[index].1.push('\n');
        }
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_named_subreports_are_concatenated() {
        let report = "<report id=\"samples\">\na\n</report>\n<report id=\"main-backtrace\">\nb\n</report>\n<report id=\"samples\">\nc\n</report>\n";
        assert_eq!(
            subreports(report),
            [
                ("samples".to_owned(), "a\nc\n".to_owned()),
                ("main-backtrace".to_owned(), "b\n".to_owned())
            ]
        );
    }
}
