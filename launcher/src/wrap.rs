//! `sampler-run install` and `uninstall`: wrapping installed programs, as
//! the original's `install-wrappers` did.
//!
//! `install` moves `DIR/NAME` to `DIR/wrapped/NAME` (a sibling folder, so
//! the move is a rename on one file system) and writes in its place a
//! small `/bin/sh` script with the program's mode and owner that execs
//! `sampler-run --app APP ... --argv0 "$0" -- DIR/wrapped/NAME "$@"`.
//! `$0` is the name the wrapper was run by (a symlink's, or the path the
//! shell found on `$PATH`), so programs that look at their `argv[0]` see
//! what they saw before. The script's second line marks it as ours and its
//! third names the wrapped file, which is all `uninstall` reads.

use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The line that marks a wrapper.
pub const MARKER: &str = "# sampler-run wrapper";

const WRAPPED_PREFIX: &str = "# wrapped: ";

/// What a wrapper passes to `sampler-run`.
#[derive(Debug, Clone)]
pub struct Wrapper {
    /// `sampler-run` itself, by absolute path.
    pub launcher: PathBuf,
    /// The application's name.
    pub app: String,
    /// Its version.
    pub version: String,
    /// Its release.
    pub release: Option<String>,
}

/// Why a program was not wrapped or unwrapped.
#[derive(Debug, thiserror::Error)]
pub enum WrapError {
    /// What went wrong, and where.
    #[error("{path}: {message}")]
    Refused {
        /// The program.
        path: PathBuf,
        /// Why.
        message: String,
    },
}

fn refuse(path: &Path, message: impl Into<String>) -> WrapError {
    WrapError::Refused {
        path: path.to_owned(),
        message: message.into(),
    }
}

/// `text` as one single-quoted shell word.
fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

fn utf8<'a>(path: &'a Path, what: &Path) -> Result<&'a str, WrapError> {
    path.to_str().ok_or_else(|| {
        refuse(
            what,
            "the path is not UTF-8, which a wrapper script cannot hold",
        )
    })
}

/// The wrapped file a wrapper at `path` names, or `None` when `path` is
/// not a wrapper.
pub fn wrapped_of(path: &Path) -> Option<PathBuf> {
    let text = std::fs::read(path).ok()?;
    let text = std::str::from_utf8(text.get(..text.len().min(4096))?).ok()?;
    let mut lines = text.lines().skip(1);
    if lines.next()? != MARKER {
        return None;
    }
    lines
        .next()?
        .strip_prefix(WRAPPED_PREFIX)
        .map(PathBuf::from)
}

/// Wraps the program at `program`; returns where the program now is.
pub fn install(program: &Path, wrapper: &Wrapper) -> Result<PathBuf, WrapError> {
    let io = |error: std::io::Error| refuse(program, error.to_string());
    let metadata = std::fs::symlink_metadata(program).map_err(io)?;
    if metadata.file_type().is_symlink() {
        return Err(refuse(
            program,
            "a symbolic link: wrap the file it points to",
        ));
    }
    if !metadata.is_file() || metadata.permissions().mode() & 0o111 == 0 {
        return Err(refuse(program, "not an executable file"));
    }
    if wrapped_of(program).is_some() {
        return Err(refuse(program, "already wrapped"));
    }
    let program = std::fs::canonicalize(program).map_err(io)?;
    let (Some(dir), Some(name)) = (program.parent(), program.file_name()) else {
        return Err(refuse(&program, "no folder or file name"));
    };
    let wrapped_dir = dir.join("wrapped");
    let wrapped = wrapped_dir.join(name);
    if wrapped.exists() {
        return Err(refuse(
            &program,
            format!("{} exists already", wrapped.display()),
        ));
    }
    let mut script = format!(
        "#!/bin/sh\n{MARKER}\n{WRAPPED_PREFIX}{}\n",
        utf8(&wrapped, &program)?
    );
    script.push_str(&format!(
        "exec {} --app {} --version {}",
        quote(utf8(&wrapper.launcher, &program)?),
        quote(&wrapper.app),
        quote(&wrapper.version)
    ));
    if let Some(release) = &wrapper.release {
        script.push_str(&format!(" --release {}", quote(release)));
    }
    script.push_str(&format!(
        " --argv0 \"$0\" -- {} \"$@\"\n",
        quote(utf8(&wrapped, &program)?)
    ));

    // The new script first, beside the program, with its mode and owner;
    // then the two renames, undone if the second fails.
    let temporary = dir.join(format!(".{}.sampler-wrapper", name.to_string_lossy()));
    let written = (|| -> std::io::Result<()> {
        let mut file = std::fs::File::create(&temporary)?;
        file.write_all(script.as_bytes())?;
        file.sync_all()?;
        std::fs::set_permissions(
            &temporary,
            std::fs::Permissions::from_mode(metadata.mode() & 0o7777),
        )?;
        if metadata.uid() != nix::unistd::geteuid().as_raw()
            || metadata.gid() != nix::unistd::getegid().as_raw()
        {
            std::os::unix::fs::chown(&temporary, Some(metadata.uid()), Some(metadata.gid()))?;
        }
        std::fs::create_dir_all(&wrapped_dir)
    })();
    if let Err(error) = written {
        let _ = std::fs::remove_file(&temporary);
        return Err(refuse(
            &program,
            format!("cannot write the wrapper: {error}"),
        ));
    }
    if let Err(error) = std::fs::rename(&program, &wrapped) {
        let _ = std::fs::remove_file(&temporary);
        return Err(refuse(
            &program,
            format!("cannot move it to {}: {error}", wrapped.display()),
        ));
    }
    if let Err(error) = std::fs::rename(&temporary, &program) {
        let _ = std::fs::rename(&wrapped, &program);
        let _ = std::fs::remove_file(&temporary);
        return Err(refuse(
            &program,
            format!("cannot put the wrapper in its place: {error}"),
        ));
    }
    Ok(wrapped)
}

/// Puts the wrapped program back in place of its wrapper.
pub fn uninstall(program: &Path) -> Result<PathBuf, WrapError> {
    let wrapped =
        wrapped_of(program).ok_or_else(|| refuse(program, "not a sampler-run wrapper"))?;
    if !wrapped.is_file() {
        return Err(refuse(
            program,
            format!("the wrapped program {} is missing", wrapped.display()),
        ));
    }
    std::fs::rename(&wrapped, program).map_err(|error| {
        refuse(
            program,
            format!("cannot move {} back: {error}", wrapped.display()),
        )
    })?;
    if let Some(dir) = wrapped.parent() {
        // Only when empty: other programs may be wrapped there.
        let _ = std::fs::remove_dir(dir);
    }
    Ok(wrapped)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_survive_the_shell() {
        assert_eq!(quote("it's"), "'it'\\''s'");
        assert_eq!(quote("a b"), "'a b'");
    }

    #[test]
    fn install_then_uninstall_restores_the_program() {
        let dir = tempfile::tempdir().unwrap();
        let program = dir.path().join("tool");
        std::fs::write(&program, "#!/bin/sh\necho hi\n").unwrap();
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o750)).unwrap();
        let wrapper = Wrapper {
            launcher: PathBuf::from("/opt/sampler/bin/sampler-run"),
            app: "tool's".into(),
            version: "1.0".into(),
            release: Some("2".into()),
        };
        let wrapped = install(&program, &wrapper).unwrap();
        let dir = std::fs::canonicalize(dir.path()).unwrap();
        assert_eq!(wrapped, dir.join("wrapped/tool"));
        let script = std::fs::read_to_string(&program).unwrap();
        assert_eq!(
            script,
            format!(
                "#!/bin/sh\n# sampler-run wrapper\n# wrapped: {w}\nexec '/opt/sampler/bin/sampler-run' --app 'tool'\\''s' --version '1.0' --release '2' --argv0 \"$0\" -- '{w}' \"$@\"\n",
                w = wrapped.display()
            )
        );
        assert_eq!(
            std::fs::metadata(&program).unwrap().permissions().mode() & 0o7777,
            0o750
        );
        assert_eq!(
            install(&program, &wrapper).unwrap_err().to_string(),
            format!("{}: already wrapped", dir.join("tool").display())
        );
        assert_eq!(uninstall(&program).unwrap(), wrapped);
        assert_eq!(
            std::fs::read_to_string(&program).unwrap(),
            "#!/bin/sh\necho hi\n"
        );
        assert!(!dir.join("wrapped").exists());
        assert_eq!(
            uninstall(&program).unwrap_err().to_string(),
            format!("{}: not a sampler-run wrapper", program.display())
        );
    }
}
