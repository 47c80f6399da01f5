//! The runtime as programs link it, made from the staticlib cargo builds
//! (`target/release/libsampler_runtime.a`):
//! - `libsampler_runtime.a`: one prelinked object whose only global symbols
//!   are the C ABI of `runtime/exports.map`;
//! - `libsampler_runtime.so`: the shared variant, exporting the same.
//!
//! A Rust staticlib also carries the Rust standard library's and
//! compiler-builtins' global symbols (`__rust_alloc`, `__muldc3`, ...),
//! which would clash with another Rust library or shadow libgcc in the
//! program; `ld -r` then `objcopy --keep-global-symbols` makes them local.
//!
//! This is the one implementation: `scripts/package-runtime.sh` runs it
//! (`sampler-cc --sampler-package-runtime STATICLIB OUTDIR`), and the
//! driver runs it ([`ensure_packaged`]) when it finds cargo's staticlib
//! beside itself and no packaged runtime.
//!
//! Every file appears by `rename` from a temporary folder in the output
//! folder, so that a linker (or a running program) never sees a half-written
//! runtime, and parallel builds (`make -j`) may package at the same time.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::SystemTime;

/// The version script of the shared runtime, which also names the symbols
/// the archive keeps global. Embedded: no source tree is needed at run time.
pub const EXPORTS_MAP: &str = include_str!("../../runtime/exports.map");
/// The archive's name, for cargo's staticlib and for the packaged one.
pub const ARCHIVE: &str = "libsampler_runtime.a";
/// The shared runtime's name.
pub const SHARED: &str = "libsampler_runtime.so";
/// The folder, beside a cargo-built sampler-cc, where it packages the
/// staticlib it finds there.
pub const PACKAGED_DIR: &str = "sampler-runtime";

#[derive(Debug, thiserror::Error)]
pub enum PackageError {
    #[error(
        "cannot run {tool}, which packaging the runtime needs: {source}; install {package} (Debian/Ubuntu: apt-get install {package})"
    )]
    MissingTool {
        tool: String,
        package: &'static str,
        source: std::io::Error,
    },
    #[error("packaging the runtime: `{command}` failed ({status}):\n{stderr}")]
    Failed {
        command: String,
        status: std::process::ExitStatus,
        stderr: String,
    },
    #[error("packaging the runtime: {0}: {1}")]
    Io(String, std::io::Error),
}

fn io_error(what: impl std::fmt::Display) -> impl FnOnce(std::io::Error) -> PackageError {
    let what = what.to_string();
    move |err| PackageError::Io(what, err)
}

/// The symbols the runtime exports: the names of [`EXPORTS_MAP`]'s
/// `global:` part (one per line, as in every version script we write).
pub fn exported_symbols() -> Vec<&'static str> {
    let mut global = false;
    let mut names = Vec::new();
    for line in EXPORTS_MAP.lines().map(str::trim) {
        match line {
            "global:" => global = true,
            "local:" => global = false,
            _ if line.starts_with("/*") => {}
            _ => {
                if let Some(name) = line.strip_suffix(';').filter(|_| global) {
                    names.push(name.trim());
                }
            }
        }
    }
    names
}

/// Packages `staticlib` into `out` (created if needed), replacing what is
/// there. `cc` links the shared runtime (gcc).
pub fn package(staticlib: &Path, out: &Path, cc: &str) -> Result<(), PackageError> {
    package_stamped(staticlib, out, cc, None)
}

/// Whether `out` holds a runtime packaged from this `staticlib` by
/// [`ensure_packaged`] (whose files carry the staticlib's time).
pub fn is_current(staticlib: &Path, out: &Path) -> bool {
    let modified = |path: &Path| std::fs::metadata(path).and_then(|m| m.modified()).ok();
    let Some(source) = modified(staticlib) else {
        return false;
    };
    [ARCHIVE, SHARED]
        .iter()
        .all(|name| modified(&out.join(name)) == Some(source))
}

/// Makes `out` hold the runtime packaged from `staticlib`, unless it
/// already does: packaged by an earlier call from the same staticlib (its
/// files carry the staticlib's modification time, so a staticlib cargo
/// rebuilt since is packaged again). Concurrent callers wait for each other
/// on `out/.lock`; readers that do not lock still only ever see whole files.
pub fn ensure_packaged(staticlib: &Path, out: &Path, cc: &str) -> Result<(), PackageError> {
    if is_current(staticlib, out) {
        return Ok(());
    }
    std::fs::create_dir_all(out).map_err(io_error(format!("cannot create {}", out.display())))?;
    let lock_path = out.join(".lock");
    let lock = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(io_error(format!("cannot open {}", lock_path.display())))?;
    // Without locks (some network file systems) the temporary folder and
    // the renames keep concurrent packaging correct, only wasteful.
    let _ = lock.lock();
    if is_current(staticlib, out) {
        return Ok(());
    }
    let stamp = std::fs::metadata(staticlib)
        .and_then(|m| m.modified())
        .map_err(io_error(format!("cannot read {}", staticlib.display())))?;
    package_stamped(staticlib, out, cc, Some(stamp))
}

fn package_stamped(
    staticlib: &Path,
    out: &Path,
    cc: &str,
    stamp: Option<SystemTime>,
) -> Result<(), PackageError> {
    if !staticlib.is_file() {
        return Err(PackageError::Io(
            format!("cannot read {}", staticlib.display()),
            std::io::ErrorKind::NotFound.into(),
        ));
    }
    std::fs::create_dir_all(out).map_err(io_error(format!("cannot create {}", out.display())))?;
    let work = tempfile::Builder::new()
        .prefix(".packaging-")
        .tempdir_in(out)
        .map_err(io_error(format!(
            "cannot create a temporary folder in {}",
            out.display()
        )))?;
    let path = |name: &str| -> PathBuf { work.path().join(name) };
    let write = |name: &str, text: &str| {
        std::fs::write(path(name), text).map_err(io_error(format!("cannot write {name}")))
    };
    write("keep", &(exported_symbols().join("\n") + "\n"))?;
    write("exports.map", EXPORTS_MAP)?;

    run(Command::new("ld")
        .args(["-r", "--whole-archive"])
        .arg(staticlib)
        .arg("-o")
        .arg(path("prelinked.o")))?;
    // The embedded LLVM bitcode is of no use to gcc and upsets binutils
    // plugins.
    run(Command::new("objcopy")
        .arg(format!("--keep-global-symbols={}", path("keep").display()))
        .args(["--remove-section=.llvmbc", "--remove-section=.llvmcmd"])
        .arg(path("prelinked.o"))
        .arg(path("sampler_runtime.o")))?;
    run(Command::new("ar")
        .arg("rcsD")
        .arg(path(ARCHIVE))
        .arg(path("sampler_runtime.o")))?;
    run(Command::new(cc)
        .arg("-shared")
        .arg("-o")
        .arg(path(SHARED))
        .arg(path("sampler_runtime.o"))
        .arg(format!("-Wl,-soname,{SHARED}"))
        .arg(format!(
            "-Wl,--version-script={}",
            path("exports.map").display()
        ))
        .args(["-lgcc_s", "-lpthread", "-ldl", "-lm"]))?;

    // The shared runtime last: `is_current` needs both, so a packaging cut
    // short between the two renames is done again.
    for name in [ARCHIVE, SHARED] {
        if let Some(stamp) = stamp {
            File::options()
                .write(true)
                .open(path(name))
                .and_then(|file| file.set_modified(stamp))
                .map_err(io_error(format!("cannot set the time of {name}")))?;
        }
        let target = out.join(name);
        std::fs::rename(path(name), &target)
            .map_err(io_error(format!("cannot create {}", target.display())))?;
    }
    Ok(())
}

/// Runs a packaging step; its stderr goes into the error.
fn run(command: &mut Command) -> Result<(), PackageError> {
    let tool = command.get_program().to_string_lossy().into_owned();
    let text = std::iter::once(tool.clone())
        .chain(
            command
                .get_args()
                .map(|arg| arg.to_string_lossy().into_owned()),
        )
        .collect::<Vec<_>>()
        .join(" ");
    let output = command.output().map_err(|source| {
        let package = match tool.as_str() {
            "ld" | "objcopy" | "ar" => "binutils",
            _ => "gcc",
        };
        PackageError::MissingTool {
            tool: tool.clone(),
            package,
            source,
        }
    })?;
    if output.status.success() {
        Ok(())
    } else {
        Err(PackageError::Failed {
            command: text,
            status: output.status,
            stderr: String::from_utf8_lossy(&output.stderr)
                .trim_end()
                .to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exports_are_the_c_abi() {
        assert_eq!(
            exported_symbols(),
            [
                "cbi_countdown",
                "cbi_sample",
                "cbi_checkCountdown",
                "cbi_registerUnit",
                "cbi_unregisterUnit",
                "cbi_reportNow",
                "cbi_nextTimestamp",
                "cbi_gObjectUnrefClassify",
                "cbi_atomsObserve",
                "cbi_traceObserve",
                "cbi_traceObserveValue",
                "cbi_traceRing",
                "cbi_sampledEvents",
                "cbi_traceRecord",
                "cbi_traceRecordValue",
                "cbi_plainCounts",
            ]
        );
    }

    #[test]
    fn a_missing_tool_is_named() {
        let err = run(&mut Command::new("ld-that-does-not-exist")).unwrap_err();
        assert!(matches!(err, PackageError::MissingTool { .. }), "{err}");
        let err = run(Command::new("ar").arg("--no-such-option")).unwrap_err();
        assert!(
            err.to_string().contains("`ar --no-such-option` failed"),
            "{err}"
        );
    }
}
