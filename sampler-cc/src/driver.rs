//! `sampler-cc` as the user runs it: a drop-in for gcc. It removes its own
//! flags, and runs the real gcc with `-B<stub dir>/ -no-integrated-cpp` so
//! that gcc calls sampler-cc's `cc1` stage ([`crate::cc1`]) for each C file,
//! and with the runtime library added when it links. Everything else in the
//! command reaches gcc unchanged, so gcc alone decides what to do with it.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use crate::cc1::ENV_REAL_CC1;
use crate::options::{ENV_OPTIONS, Options};

/// The compiler sampler-cc stands in for; `gcc` unless set. May hold
/// arguments (`SAMPLER_REAL_CC="gcc-12 -m64"`).
pub const ENV_REAL_CC: &str = "SAMPLER_REAL_CC";
/// Folder holding `libsampler_runtime.so` and `libsampler_runtime.a`.
pub const ENV_RUNTIME_DIR: &str = "SAMPLER_RUNTIME_DIR";

/// gcc options whose value is the next argument (so it is not an input).
const OPTIONS_WITH_VALUE: [&str; 33] = [
    "-o",
    "-x",
    "-I",
    "-D",
    "-U",
    "-include",
    "-imacros",
    "-idirafter",
    "-iprefix",
    "-iwithprefix",
    "-iwithprefixbefore",
    "-isystem",
    "-isysroot",
    "-iquote",
    "-imultilib",
    "-MF",
    "-MT",
    "-MQ",
    "-L",
    "-T",
    "-u",
    "-e",
    "-Xlinker",
    "-Xassembler",
    "-Xpreprocessor",
    "-aux-info",
    "-dumpbase",
    "-dumpbase-ext",
    "-dumpdir",
    "--param",
    "-A",
    "-z",
    "-B",
];

/// What a gcc command line asks for, as far as sampler-cc cares.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct GccCommand {
    pub gcc_args: Vec<String>,
    pub options: Options,
    /// Source, object or library inputs are present.
    pub has_inputs: bool,
    /// Stops before compiling (`-E`, `-M`, `-MM`, `-fsyntax-only`).
    pub no_compile: bool,
    /// Stops before linking (`-c`, `-S`).
    pub no_link: bool,
    pub static_link: bool,
}

/// Splits sampler flags from gcc's and classifies the command.
pub fn parse_command(args: &[String]) -> Result<GccCommand, crate::options::OptionError> {
    let mut command = GccCommand::default();
    let mut explicit_threads = false;
    let mut pthread = false;
    let mut index = 0;
    while index < args.len() {
        let arg = &args[index];
        index += 1;
        if Options::is_sampler_flag(arg) {
            explicit_threads |= arg == "-fthreads" || arg == "-fno-threads";
            command.options.apply(arg)?;
            continue;
        }
        command.gcc_args.push(arg.clone());
        if OPTIONS_WITH_VALUE.contains(&arg.as_str()) {
            if let Some(value) = args.get(index) {
                command.gcc_args.push(value.clone());
                index += 1;
            }
            continue;
        }
        match arg.as_str() {
            "-E" | "-M" | "-MM" | "-fsyntax-only" => command.no_compile = true,
            "-c" | "-S" => command.no_link = true,
            "-static" => command.static_link = true,
            "-pthread" | "-pthreads" => pthread = true,
            "-" => command.has_inputs = true,
            other if other.starts_with('@') => command.has_inputs = true,
            other if other.starts_with("-l") => command.has_inputs = true,
            other if !other.starts_with('-') => command.has_inputs = true,
            _ => {}
        }
    }
    if pthread && !explicit_threads {
        // Applied as a flag so that the cc1 stage sees it too.
        command.options.apply("-fthreads")?;
    }
    if command.static_link {
        command.options.static_runtime = true;
    }
    Ok(command)
}

pub fn main(args: Vec<String>) -> ExitCode {
    let command = match parse_command(&args) {
        Ok(command) => command,
        Err(err) => {
            eprintln!("sampler-cc: error: {err}");
            return ExitCode::from(1);
        }
    };
    let (program, mut real_args) = real_cc();
    if !command.has_inputs || command.no_compile {
        real_args.extend(command.gcc_args);
        return exec(&program, &real_args, &[]);
    }
    let mut env: Vec<(&str, OsString)> = vec![(ENV_OPTIONS, command.options.to_env().into())];
    match prepare_stage(&program, &real_args) {
        Ok((stub_dir, real_cc1)) => {
            real_args.push(format!("-B{}/", stub_dir.display()));
            real_args.push("-no-integrated-cpp".into());
            env.push((ENV_REAL_CC1, real_cc1.into_os_string()));
        }
        Err(reason) => {
            if command.options.strict {
                eprintln!("sampler-cc: error: {reason}");
                return ExitCode::from(1);
            }
            eprintln!("sampler-cc: warning: compiling without instrumentation: {reason}");
        }
    }
    real_args.extend(command.gcc_args.iter().cloned());
    if !command.no_link {
        match runtime_dir() {
            Some(dir) => real_args.extend(runtime_link_args(&dir, &command)),
            None => eprintln!(
                "sampler-cc: warning: cannot find the sampler runtime (libsampler_runtime.so); \
                 set {ENV_RUNTIME_DIR} to its folder"
            ),
        }
    }
    exec(&program, &real_args, &env)
}

/// What links the runtime: the shared library by default, so that every
/// instrumented executable and shared library of a program shares one
/// runtime (one countdown per thread, one report); the archive for
/// `-static` and `-fsampler-static-runtime`.
fn runtime_link_args(dir: &Path, command: &GccCommand) -> Vec<String> {
    let dir_text = dir.display().to_string();
    if command.options.static_runtime {
        let unwinder = if command.static_link {
            "-lgcc_eh"
        } else {
            "-lgcc_s"
        };
        vec![
            format!("{dir_text}/libsampler_runtime.a"),
            unwinder.into(),
            "-lpthread".into(),
            "-ldl".into(),
            "-lm".into(),
        ]
    } else {
        vec![
            format!("{dir_text}/libsampler_runtime.so"),
            format!("-Wl,-rpath,{dir_text}"),
        ]
    }
}

fn real_cc() -> (String, Vec<String>) {
    let configured = std::env::var(ENV_REAL_CC).unwrap_or_default();
    let mut words = configured.split_whitespace().map(str::to_owned);
    let program = words.next().unwrap_or_else(|| "gcc".into());
    (program, words.collect())
}

fn exec(program: &str, args: &[String], env: &[(&str, OsString)]) -> ExitCode {
    let mut command = Command::new(program);
    command.args(args);
    for (key, value) in env {
        command.env(key, value);
    }
    let err = command.exec();
    eprintln!("sampler-cc: cannot run {program}: {err}");
    ExitCode::from(1)
}

fn self_exe() -> Result<PathBuf, String> {
    std::env::current_exe().map_err(|err| format!("cannot find sampler-cc's own path: {err}"))
}

/// The folder with the `cc1` stub (a link to this program), and the real
/// cc1 of `program`.
fn prepare_stage(program: &str, real_args: &[String]) -> Result<(PathBuf, PathBuf), String> {
    let output = Command::new(program)
        .args(real_args)
        .arg("-print-prog-name=cc1")
        .output()
        .map_err(|err| format!("cannot run {program}: {err}"))?;
    let real_cc1 = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
    if !real_cc1.is_absolute() {
        return Err(format!(
            "{program} does not say where its cc1 is (-print-prog-name=cc1)"
        ));
    }
    Ok((stub_dir()?, real_cc1))
}

fn stub_dir() -> Result<PathBuf, String> {
    let exe = self_exe()?;
    let exe_dir = exe.parent().ok_or("sampler-cc's path has no folder")?;
    let installed = exe_dir.join("../libexec/sampler-cc");
    if installed.join("cc1").exists() {
        return Ok(installed);
    }
    // Not `sampler-cc.d`: cargo writes its dependency file under that name.
    let beside = exe_dir.join("sampler-cc-stage");
    let mut last_error = String::new();
    let hash: u64 = exe
        .to_string_lossy()
        .bytes()
        .fold(0xcbf29ce484222325, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x100000001b3)
        });
    for dir in [
        beside,
        std::env::temp_dir().join(format!("sampler-cc-{hash:016x}")),
    ] {
        match ensure_link(&dir, &exe) {
            Ok(()) => return Ok(dir),
            Err(err) => last_error = format!("cannot create {}: {err}", dir.join("cc1").display()),
        }
    }
    Err(last_error)
}

/// Makes `dir/cc1` a link to `exe`, atomically (parallel builds race here).
fn ensure_link(dir: &Path, exe: &Path) -> std::io::Result<()> {
    let link = dir.join("cc1");
    if std::fs::read_link(&link).is_ok_and(|target| target == exe) {
        return Ok(());
    }
    std::fs::create_dir_all(dir)?;
    let temporary = dir.join(format!("cc1.{}", std::process::id()));
    let _ = std::fs::remove_file(&temporary);
    std::os::unix::fs::symlink(exe, &temporary)?;
    std::fs::rename(&temporary, &link)
}

/// `SAMPLER_RUNTIME_DIR`, else `../lib/sampler` from this program, else
/// this program's folder.
fn runtime_dir() -> Option<PathBuf> {
    let has_runtime = |dir: &Path| dir.join("libsampler_runtime.so").exists();
    if let Some(dir) = std::env::var_os(ENV_RUNTIME_DIR) {
        return Some(PathBuf::from(dir));
    }
    let exe = self_exe().ok()?;
    let exe_dir = exe.parent()?;
    [exe_dir.join("../lib/sampler"), exe_dir.to_path_buf()]
        .into_iter()
        .find(|dir| has_runtime(dir))
        .and_then(|dir| dir.canonicalize().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> GccCommand {
        parse_command(&args.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap()
    }

    #[test]
    fn classifies_commands() {
        let compile = parse(&["-c", "-fno-sample", "-o", "x.o", "x.c", "-MD", "-MF", "x.d"]);
        assert_eq!(
            compile.gcc_args,
            ["-c", "-o", "x.o", "x.c", "-MD", "-MF", "x.d"]
        );
        assert!(compile.has_inputs && compile.no_link && !compile.no_compile);
        assert!(!compile.options.sample);

        let probe = parse(&["-o", "out", "--version"]);
        assert!(!probe.has_inputs);
        let preprocess = parse(&["-E", "x.c"]);
        assert!(preprocess.no_compile);
        let link = parse(&["-pthread", "a.o", "-lm", "-static"]);
        assert!(link.has_inputs && !link.no_link && link.static_link);
        assert!(link.options.threads && link.options.static_runtime);
        let explicit = parse(&["-pthread", "-fno-threads", "a.c"]);
        assert!(!explicit.options.threads);
        let include_value = parse(&["-include", "config.h", "-c"]);
        assert!(!include_value.has_inputs);
    }
}
