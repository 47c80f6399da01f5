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
use crate::options::{self, ENV_OPTIONS, Options, TlsModel};
use crate::runtime_package;

/// The compiler sampler-cc stands in for; `gcc` unless set. May hold
/// arguments (`SAMPLER_REAL_CC="gcc-12 -m64"`).
pub const ENV_REAL_CC: &str = "SAMPLER_REAL_CC";
/// Folder holding `libsampler_runtime.so` and `libsampler_runtime.a`.
pub const ENV_RUNTIME_DIR: &str = "SAMPLER_RUNTIME_DIR";

/// What names the libclang to load, for clang-sys: a file, or a folder.
const ENV_LIBCLANG_PATH: &str = "LIBCLANG_PATH";

/// The file beside the installed cc1 stage that names the libclang
/// `scripts/install.sh` found (what `--sampler-libclang` printed then).
pub const LIBCLANG_RECORD: &str = "libclang";

/// Prints the path of the libclang compiles load, and exits.
pub const PRINT_LIBCLANG: &str = "--sampler-libclang";

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
    // Objects a shared object (or a relocatable link that may become one)
    // is made of here cannot define and reach the countdown as an
    // executable's do (options::TlsModel).
    let links_shared = command
        .gcc_args
        .iter()
        .any(|arg| arg == "-shared" || arg == "-r");
    if links_shared && command.options.tls_model == TlsModel::Auto {
        command.options.apply("-fsampler-tls-model=initial-exec")?;
    }
    Ok(command)
}

pub fn main(args: Vec<String>) -> ExitCode {
    if args.first().map(String::as_str) == Some(PACKAGE_RUNTIME) {
        return package_runtime(&args[1..]);
    }
    let mut command = match parse_command(&args) {
        Ok(command) => command,
        Err(err) => {
            eprintln!("sampler-cc: error: {err}");
            return ExitCode::from(1);
        }
    };
    let (program, mut real_args) = real_cc();
    let asks = |flag: &str| command.gcc_args.iter().any(|arg| arg == flag);
    if asks("--sampler-help") {
        print!("{}", sampler_help());
        return ExitCode::SUCCESS;
    }
    if asks(PRINT_LIBCLANG) {
        return match libclang_path() {
            Ok(path) => {
                println!("{}", path.display());
                ExitCode::SUCCESS
            }
            Err(err) => {
                eprintln!("sampler-cc: error: {err}");
                ExitCode::from(1)
            }
        };
    }
    // gcc neither compiles nor links with these.
    if asks("--help") {
        real_args.extend(command.gcc_args);
        return help(&program, &real_args);
    }
    if asks("--version") {
        real_args.extend(command.gcc_args);
        return version(&program, &real_args);
    }
    if !command.has_inputs || command.no_compile {
        real_args.extend(command.gcc_args);
        return exec(&program, &real_args, &[]);
    }
    if let Some(reason) = refusal(&real_args, &command) {
        eprintln!("sampler-cc: error: {reason}");
        return ExitCode::from(1);
    }
    if let Err(reason) = command.options.prepare_rates() {
        eprintln!("sampler-cc: error: {reason}");
        return ExitCode::from(1);
    }
    let mut env: Vec<(&str, OsString)> = vec![(ENV_OPTIONS, command.options.to_env().into())];
    match prepare_stage(&program, &real_args) {
        Ok((stub_dir, real_cc1)) => {
            real_args.push(format!("-B{}/", stub_dir.display()));
            real_args.push("-no-integrated-cpp".into());
            env.push((ENV_REAL_CC1, real_cc1.into_os_string()));
            if let Some(libclang) = recorded_libclang(&stub_dir) {
                env.push((ENV_LIBCLANG_PATH, libclang.into_os_string()));
            }
        }
        Err(reason) => {
            if let Some(reason) = clang_refusal(&program, &real_args) {
                eprintln!("sampler-cc: error: {reason}");
                return ExitCode::from(1);
            }
            if command.options.strict {
                eprintln!("sampler-cc: error: {reason}");
                return ExitCode::from(1);
            }
            eprintln!("sampler-cc: warning: compiling without instrumentation: {reason}");
        }
    }
    real_args.extend(command.gcc_args.iter().cloned());
    if !command.no_link {
        match runtime_dir(&program) {
            Ok(Some(dir)) => real_args.extend(runtime_link_args(&dir, &command)),
            Ok(None) => eprintln!(
                "sampler-cc: warning: cannot find the sampler runtime (libsampler_runtime.so); \
                 set {ENV_RUNTIME_DIR} to its folder (sampler-cc --sampler-help says where it looks)"
            ),
            Err(err) => {
                eprintln!("sampler-cc: error: {err}");
                return ExitCode::from(1);
            }
        }
    }
    exec(&program, &real_args, &env)
}

/// Why sampler-cc cannot compile or link this command at all, if it
/// cannot: a 32-bit (or x32) target, for which there is no runtime.
fn refusal(real_args: &[String], command: &GccCommand) -> Option<String> {
    let abi = real_args
        .iter()
        .chain(&command.gcc_args)
        .rfind(|arg| matches!(arg.as_str(), "-m32" | "-mx32" | "-m16" | "-m64"))?;
    (abi != "-m64").then(|| {
        format!(
            "{abi}: sampler-cc cannot instrument {abi} programs: its runtime \
             (libsampler_runtime) is built for x86-64 only, and instrumented code needs it \
             to link; build them with gcc itself"
        )
    })
}

/// Why `program` cannot be the real compiler, when it is clang (whose
/// `-print-prog-name=cc1` names no program): clang compiles C in its own
/// process, so there is no cc1 for sampler-cc to stand in for.
fn clang_refusal(program: &str, real_args: &[String]) -> Option<String> {
    let output = Command::new(program)
        .args(real_args)
        .arg("--version")
        .output()
        .ok()?;
    let version = String::from_utf8_lossy(&output.stdout);
    version.lines().next()?.contains("clang").then(|| {
        format!(
            "the real compiler {program} ({ENV_REAL_CC}) is clang, which compiles C in its \
             own process with no cc1 program for sampler-cc to stand in for: sampler-cc \
             instruments through gcc only; set {ENV_REAL_CC} to a gcc (or unset it for `gcc`)"
        )
    })
}

/// The hidden subcommand `scripts/package-runtime.sh` runs:
/// `sampler-cc --sampler-package-runtime STATICLIB OUTDIR`.
pub const PACKAGE_RUNTIME: &str = "--sampler-package-runtime";

fn package_runtime(args: &[String]) -> ExitCode {
    let [staticlib, out] = args else {
        eprintln!("usage: sampler-cc {PACKAGE_RUNTIME} STATICLIB OUTDIR");
        return ExitCode::from(2);
    };
    let (program, _) = real_cc();
    match runtime_package::package(Path::new(staticlib), Path::new(out), &program) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("sampler-cc: error: {err}");
            ExitCode::from(1)
        }
    }
}

/// `--help`: gcc's help, then sampler-cc's; gcc's exit status.
fn help(program: &str, args: &[String]) -> ExitCode {
    use std::io::Write;
    let status = match Command::new(program).args(args).status() {
        Ok(status) => status,
        Err(err) => {
            eprintln!("sampler-cc: cannot run {program}: {err}");
            return ExitCode::from(1);
        }
    };
    let mut stdout = std::io::stdout().lock();
    let _ = write!(stdout, "\n{}", sampler_help());
    let _ = stdout.flush();
    exit_code(status)
}

/// `--version`: gcc's first line (which configure scripts parse), then
/// `sampler-cc VERSION`, then the rest of gcc's output; gcc's exit status.
fn version(program: &str, args: &[String]) -> ExitCode {
    use std::io::Write;
    let output = match Command::new(program)
        .args(args)
        .stdin(std::process::Stdio::inherit())
        .stderr(std::process::Stdio::inherit())
        .output()
    {
        Ok(output) => output,
        Err(err) => {
            eprintln!("sampler-cc: cannot run {program}: {err}");
            return ExitCode::from(1);
        }
    };
    let stdout = &output.stdout;
    let split = stdout
        .iter()
        .position(|&byte| byte == b'\n')
        .map_or(stdout.len(), |end| end + 1);
    let mut text = stdout[..split].to_vec();
    if !text.is_empty() && !text.ends_with(b"\n") {
        text.push(b'\n');
    }
    text.extend_from_slice(format!("sampler-cc {}\n", env!("CARGO_PKG_VERSION")).as_bytes());
    text.extend_from_slice(&stdout[split..]);
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(&text);
    let _ = out.flush();
    exit_code(output.status)
}

fn exit_code(status: std::process::ExitStatus) -> ExitCode {
    match status.code() {
        Some(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        None => ExitCode::from(1),
    }
}

/// sampler-cc's part of `--help`, alone for `--sampler-help`: its flags and
/// where it looks for what it needs, with the paths for this program.
pub fn sampler_help() -> String {
    let exe_dir = self_exe()
        .ok()
        .and_then(|exe| exe.parent().map(Path::to_path_buf))
        .unwrap_or_else(|| PathBuf::from("DIR"));
    let runtime_env = match std::env::var_os(ENV_RUNTIME_DIR) {
        Some(dir) => format!("now {}", dir.to_string_lossy()),
        None => "unset now".into(),
    };
    let real_cc = match std::env::var(ENV_REAL_CC) {
        Ok(value) => format!("now {value}"),
        Err(_) => "unset now".into(),
    };
    format!(
        "{flags}
Where sampler-cc looks for what it needs (DIR: its own folder, now {dir}):
  The real compiler: ${ENV_REAL_CC} ({real_cc}), a command that may hold
    arguments, else gcc. Its cc1 is the one `gcc -print-prog-name=cc1` names.
  Its cc1 stage (a link to sampler-cc that gcc runs for each C file):
    DIR/../libexec/sampler-cc/cc1 (installed), else a link it makes in
    DIR/sampler-cc-stage/, else in the temporary folder.
  The runtime, when linking (libsampler_runtime.so, or libsampler_runtime.a
  with -static or -fsampler-static-runtime), the first of:
    1. the folder ${ENV_RUNTIME_DIR} names ({runtime_env});
    2. DIR/../lib/sampler, where scripts/install.sh puts it;
    3. DIR, if it holds libsampler_runtime.so;
    4. DIR/{packaged}/, where sampler-cc packages cargo's staticlib
       DIR/libsampler_runtime.a (there after `cargo build`) the first time
       and again whenever cargo rebuilds it, with ld, objcopy and ar
       (binutils) and gcc.
  libclang, when compiling (instrumented programs do not need it): the
    library $LIBCLANG_PATH names (a folder, or the file itself) if set, and
    only there; else the highest version of libclang.so, libclang-*.so,
    libclang.so.* and libclang-*.so.* found in `llvm-config --prefix`'s bin/,
    lib/ and lib64/ (llvm-config from $LLVM_CONFIG_PATH, else $PATH),
    $LD_LIBRARY_PATH, $LIBRARY_PATH, /usr/local/llvm*/lib*, /usr/local/lib*
    and /usr/lib* and their subfolders two deep. libclang 14 or later.
    Installed, the file DIR/../libexec/sampler-cc/{record} names the one
    scripts/install.sh found (what {print} printed then),
    used while $LIBCLANG_PATH is unset and that file exists: no search.
",
        dir = exe_dir.display(),
        flags = options::flags_help(),
        packaged = runtime_package::PACKAGED_DIR,
        record = LIBCLANG_RECORD,
        print = PRINT_LIBCLANG,
    )
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

/// The libclang that `scripts/install.sh` recorded beside the installed
/// stage in `stage_dir`, unless $LIBCLANG_PATH names one or the recorded
/// file is gone. The driver hands it to the stage as $LIBCLANG_PATH,
/// which spares each compile clang-sys's search (about 15,000 `statx`
/// calls and an `llvm-config` run: half of a small file's front end,
/// 37 ms of 74; BENCHMARKS.md, stop 42).
fn recorded_libclang(stage_dir: &Path) -> Option<PathBuf> {
    if std::env::var_os(ENV_LIBCLANG_PATH).is_some() {
        return None;
    }
    let text = std::fs::read_to_string(stage_dir.join(LIBCLANG_RECORD)).ok()?;
    let path = PathBuf::from(text.strip_suffix('\n').unwrap_or(&text));
    let named = path
        .file_name()
        .is_some_and(|name| name.to_string_lossy().starts_with("libclang"));
    (path.is_absolute() && named && path.is_file()).then_some(path)
}

/// The libclang a compile loads: the recorded one, else the one clang-sys
/// finds ($LIBCLANG_PATH, or its search), loaded to be sure it opens.
fn libclang_path() -> Result<PathBuf, String> {
    if let Some(dir) = installed_stage_dir()
        && let Some(path) = recorded_libclang(&dir)
    {
        return Ok(path);
    }
    let library =
        clang_sys::load_manually().map_err(|err| format!("cannot load libclang: {err}"))?;
    Ok(library.path().to_owned())
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

/// DIR/../libexec/sampler-cc, where scripts/install.sh puts the stage, if
/// it holds the stage.
fn installed_stage_dir() -> Option<PathBuf> {
    let exe = self_exe().ok()?;
    let installed = exe.parent()?.join("../libexec/sampler-cc");
    installed.join("cc1").exists().then_some(installed)
}

fn stub_dir() -> Result<PathBuf, String> {
    if let Some(installed) = installed_stage_dir() {
        return Ok(installed);
    }
    let exe = self_exe()?;
    let exe_dir = exe.parent().ok_or("sampler-cc's path has no folder")?;
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

/// Where the runtime is, in this order: `SAMPLER_RUNTIME_DIR`;
/// `../lib/sampler` from this program (installed); this program's folder,
/// when it holds a packaged runtime; `sampler-runtime/` in this program's
/// folder, packaged there from cargo's staticlib beside this program (after
/// `cargo build`), and again when cargo rebuilt it. `Ok(None)`: none of
/// these; `Err`: cargo's staticlib is there but cannot be packaged.
fn runtime_dir(cc: &str) -> Result<Option<PathBuf>, String> {
    let has_runtime = |dir: &Path| dir.join(runtime_package::SHARED).exists();
    if let Some(dir) = std::env::var_os(ENV_RUNTIME_DIR) {
        return Ok(Some(PathBuf::from(dir)));
    }
    let Some(exe_dir) = self_exe()
        .ok()
        .and_then(|exe| exe.parent().map(Path::to_path_buf))
    else {
        return Ok(None);
    };
    if let Some(dir) = [exe_dir.join("../lib/sampler"), exe_dir.clone()]
        .into_iter()
        .find(|dir| has_runtime(dir))
    {
        return Ok(dir.canonicalize().ok());
    }
    let staticlib = exe_dir.join(runtime_package::ARCHIVE);
    if !staticlib.is_file() {
        return Ok(None);
    }
    let out = exe_dir.join(runtime_package::PACKAGED_DIR);
    runtime_package::ensure_packaged(&staticlib, &out, cc)
        .map(|()| Some(out))
        .map_err(|err| format!("{} (from {})", err, staticlib.display()))
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

    /// Files compiled in a command that makes a shared object (or a
    /// relocatable object that may go into one) reach the countdown as
    /// shared objects must; other commands leave it to the cc1 stage,
    /// which reads `-fPIC` (options::TlsModel::resolve); a model given is
    /// kept.
    #[test]
    fn commands_linking_shared_objects_compile_for_initial_exec() {
        for args in [
            &["-shared", "x.c", "-o", "x.so"][..],
            &["-r", "x.c", "-o", "x.o"],
        ] {
            let command = parse(args);
            assert_eq!(command.options.tls_model, TlsModel::InitialExec, "{args:?}");
            assert_eq!(command.options.given, ["-fsampler-tls-model=initial-exec"]);
            assert_eq!(command.gcc_args, args);
        }
        for args in [
            &["x.c", "-o", "x"][..],
            &["-c", "-fPIC", "x.c"],
            &["-rdynamic", "x.c"],
        ] {
            assert_eq!(parse(args).options.tls_model, TlsModel::Auto, "{args:?}");
        }
        let given = parse(&["-fsampler-tls-model=local-exec", "-shared", "x.c"]);
        assert_eq!(given.options.tls_model, TlsModel::LocalExec);
    }
}
