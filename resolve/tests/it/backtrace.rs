//! Crash symbolization on real crashes: C built by gcc, linked with the
//! packaged runtime, run until it dies of SIGSEGV; its report symbolized
//! by the library and by `resolve-backtrace`.
//!
//! How the programs get the runtime: as the runtime's own tests do
//! (`runtime/tests/it/main.rs`), we build the staticlib with cargo into
//! this test's target folder and package it with
//! `scripts/package-runtime.sh`; the C program registers one compilation
//! unit by hand through `runtime/include/sampler.h`, exactly what
//! sampler-cc's generated code does, which starts the runtime and its
//! signal handlers. That is less fragile than building through
//! `sampler-cc`: it needs neither libclang nor sampler-cc's binary (which
//! cargo builds only for sampler-cc's own tests), and instrumentation
//! cannot move the code whose lines we check.

use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use sampler_resolve::{
    DebugFileSet, DebugObject, LoadedModule, RawFrame, SymbolizedFrame, crash_signature,
    parse_backtrace, parse_modules, read_crash_subreports, symbolize,
};

use super::{stderr, stdout, tool};

const SIGSEGV: i32 = 11;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn sources() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/crash")
}

/// The packaged runtime: a folder holding `libsampler_runtime.a` and
/// `libsampler_runtime.so`, built once for all tests.
fn runtime() -> &'static Path {
    static TOOLS: OnceLock<sampler_testkit::Tools> = OnceLock::new();
    TOOLS
        .get_or_init(|| sampler_testkit::Tools::build(&[]))
        .runtime
        .path()
}

/// The line of `file` (in tests/c/crash) holding the comment `/* at: MARK */`.
fn line_of(file: &str, mark: &str) -> u32 {
    let text = std::fs::read_to_string(sources().join(file)).unwrap();
    let comment = format!("/* at: {mark} */");
    let index = text
        .lines()
        .position(|line| line.contains(&comment))
        .unwrap_or_else(|| panic!("no `{comment}` in {file}"));
    u32::try_from(index + 1).unwrap()
}

/// How the program is linked.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Link {
    /// Position-independent, shared runtime (sampler-cc's default).
    Pie,
    /// Position-independent, the runtime's archive linked in.
    PieStaticRuntime,
    /// `-no-pie`: fixed addresses, shared runtime.
    NoPie,
}

/// A scratch folder with `libcrash.so` and `prog` built from tests/c/crash
/// with `-g -O0`.
struct Lab {
    _dir: tempfile::TempDir,
    /// The folder with links resolved, as gcc's DWARF and the loader name it.
    root: PathBuf,
}

impl Lab {
    fn new(link: Link) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        for file in ["prog.c", "lib.c"] {
            std::fs::copy(sources().join(file), root.join(file)).unwrap();
        }
        let lab = Self { _dir: dir, root };
        lab.gcc(&["-fPIC", "-shared", "lib.c", "-o", "libcrash.so"]);
        let include = workspace().join("runtime/include");
        let mut args: Vec<String> = vec![
            format!("-I{}", include.display()),
            "prog.c".into(),
            "-o".into(),
            "prog".into(),
            "-L.".into(),
            "-lcrash".into(),
        ];
        let runtime = runtime().display().to_string();
        match link {
            Link::Pie | Link::NoPie => {
                args.extend([format!("-L{runtime}"), "-lsampler_runtime".into()]);
                args.push(format!("-Wl,-rpath,{}:{runtime}", lab.root.display()));
            }
            Link::PieStaticRuntime => {
                args.push(format!("{runtime}/libsampler_runtime.a"));
                args.extend(["-lgcc_s", "-lpthread", "-ldl", "-lm"].map(String::from));
                args.push(format!("-Wl,-rpath,{}", lab.root.display()));
            }
        }
        args.push(
            if link == Link::NoPie {
                "-no-pie"
            } else {
                "-pie"
            }
            .into(),
        );
        lab.gcc(&args.iter().map(String::as_str).collect::<Vec<_>>());
        lab
    }

    fn path(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }

    fn display(&self, name: &str) -> String {
        self.path(name).display().to_string()
    }

    fn gcc(&self, args: &[&str]) {
        let output = Command::new("gcc")
            .args(["-g", "-O0", "-Wall", "-Wextra", "-Werror"])
            .args(args)
            .current_dir(&self.root)
            .output()
            .expect("cannot run gcc");
        assert!(
            output.status.success(),
            "gcc {} failed:\n{}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr)
        );
    }

    fn run(&self, program: &str, args: &[&str]) {
        let status = Command::new(program)
            .args(args)
            .current_dir(&self.root)
            .status()
            .unwrap_or_else(|e| panic!("cannot run `{program}`: {e}"));
        assert!(status.success(), "`{program} {}` failed", args.join(" "));
    }

    /// Runs `./prog ARG` (argv[0] `argv0` if given) until it dies of
    /// SIGSEGV and returns its report.
    fn crash(&self, arg: Option<&str>, argv0: Option<&str>) -> String {
        let mut command = Command::new("./prog");
        command.args(arg).current_dir(&self.root);
        if let Some(argv0) = argv0 {
            command.arg0(argv0);
        }
        for (name, _) in std::env::vars() {
            if name.starts_with("SAMPLER_") {
                command.env_remove(name);
            }
        }
        let report = self.path("run.report");
        let output = command
            .env("SAMPLER_FILE", &report)
            .env("SAMPLER_SPARSITY", "1")
            .output()
            .unwrap();
        assert_eq!(output.status.signal(), Some(SIGSEGV), "{output:?}");
        std::fs::read_to_string(report).unwrap()
    }
}

/// The backtrace and modules of a report holding one crash.
fn crash_of(report: &str) -> (Vec<RawFrame>, Vec<LoadedModule>) {
    let crashes = read_crash_subreports(report.as_bytes()).unwrap();
    assert_eq!(crashes.len(), 1, "{report}");
    let frames = parse_backtrace(&crashes[0].backtrace).unwrap();
    let modules = parse_modules(crashes[0].modules.as_deref().unwrap()).unwrap();
    (frames, modules)
}

fn symbolize_with(report: &str, files: &[PathBuf]) -> Vec<SymbolizedFrame> {
    let (frames, modules) = crash_of(report);
    symbolize(&frames, &modules, &DebugFileSet::from_paths(files).unwrap())
}

/// What a frame should say, the address aside.
#[derive(Debug, PartialEq, Eq)]
struct Expected {
    module: String,
    function: Option<String>,
    file: Option<String>,
    line: Option<u32>,
    inlined: bool,
}

impl Expected {
    fn of(frame: &SymbolizedFrame) -> Self {
        Self {
            module: frame.module.clone(),
            function: frame.function.clone(),
            file: frame.file.clone(),
            line: frame.line,
            inlined: frame.inlined,
        }
    }
}

/// A frame of the lab's own code: `function` in `module`, at the line of
/// `source` marked `mark`.
fn own(lab: &Lab, module: &str, function: &str, source: &str, mark: &str) -> Expected {
    Expected {
        module: lab.display(module),
        function: Some(function.to_owned()),
        file: Some(lab.display(source)),
        line: Some(line_of(source, mark)),
        inlined: false,
    }
}

fn inlined(mut expected: Expected) -> Expected {
    expected.inlined = true;
    expected
}

/// The frames of a crash in `lib_store` (`prog lib`).
fn in_lib_store(lab: &Lab) -> Vec<Expected> {
    vec![
        own(lab, "libcrash.so", "lib_store", "lib.c", "lib_store"),
        own(
            lab,
            "libcrash.so",
            "lib_helper",
            "lib.c",
            "lib_helper calls lib_store",
        ),
        own(lab, "prog", "helper", "prog.c", "helper calls lib_helper"),
        own(lab, "prog", "main", "prog.c", "main calls helper"),
    ]
}

/// Checks that `frames` start with `expected` and that the rest is the C
/// library's start-up code and the program's `_start`; that the first
/// frame was looked up at its exact address and the others one byte
/// before their return address.
#[track_caller]
fn check(lab: &Lab, report: &str, frames: &[SymbolizedFrame], expected: &[Expected]) {
    let seen: Vec<Expected> = frames.iter().map(Expected::of).collect();
    assert!(seen.len() > expected.len(), "{seen:#?}\n{report}");
    assert_eq!(&seen[..expected.len()], expected, "{report}");
    for frame in &frames[expected.len()..] {
        let libc = frame.module.ends_with("/libc.so.6");
        let start = frame.module == lab.display("prog")
            && frame.function.as_deref() == Some("_start")
            && frame.file.is_none();
        assert!(
            libc || start,
            "{frame:?} after the program's frames\n{report}"
        );
    }
    // No runtime frame, no trampoline: nothing before the faulting frame.
    let (raw, modules) = crash_of(report);
    let faulting = raw
        .iter()
        .position(|frame| frame.address == frames[0].address)
        .unwrap();
    for frame in frames {
        assert!(!frame.module.contains("libsampler_runtime"), "{frame:?}");
        assert!(
            !frame
                .function
                .as_deref()
                .is_some_and(|name| name.contains("sampler_runtime") || name.starts_with("cbi_")),
            "{frame:?}"
        );
        assert!(
            raw[..faulting]
                .iter()
                .all(|dropped| dropped.address != frame.address),
            "{frame:?}"
        );
    }
    // The faulting frame (with what was inlined there) is looked up at its
    // address, the return addresses one byte before.
    let n_exact = frames.iter().position(|frame| !frame.inlined).unwrap() + 1;
    for (index, frame) in frames.iter().enumerate() {
        let load_address = modules
            .iter()
            .find(|module| module.path == frame.module)
            .unwrap()
            .load_address;
        let exact = frame.address - load_address;
        let looked_up = if index < n_exact { exact } else { exact - 1 };
        assert_eq!(frame.module_offset, Some(looked_up), "{frame:?}");
    }
}

mod real_crashes {
    use super::*;

    #[test]
    fn in_a_shared_library_called_from_the_program() {
        let lab = Lab::new(Link::Pie);
        let report = lab.crash(Some("lib"), None);
        let (raw, modules) = crash_of(&report);
        // What glibc prints: the shared runtime's handler frames (no names:
        // its Rust functions are not exported), then the kernel's signal
        // trampoline in libc (`__restore_rt`, a local symbol: `(+0x…)`).
        let n_runtime = raw
            .iter()
            .take_while(|frame| frame.object.ends_with("/libsampler_runtime.so"))
            .count();
        assert!(n_runtime >= 1, "{report}");
        assert!(raw[n_runtime].object.ends_with("/libc.so.6"), "{report}");
        assert_eq!(raw[n_runtime].symbol, None, "{report}");
        assert_eq!(raw[n_runtime + 1].symbol.as_deref(), Some("lib_store"));
        assert_eq!(raw[n_runtime + 1].object, lab.display("libcrash.so"));
        assert!(
            modules
                .iter()
                .any(|module| module.path == lab.display("prog") && module.build_id.is_some()),
            "{report}"
        );

        let frames = symbolize_with(&report, &[lab.path("prog"), lab.path("libcrash.so")]);
        check(&lab, &report, &frames, &in_lib_store(&lab));
        assert_eq!(frames[0].address, raw[n_runtime + 1].address);
        assert_eq!(
            crash_signature(&frames, 5).as_deref(),
            Some("lib_store | lib_helper | helper | main")
        );
        assert_eq!(
            crash_signature(&frames, 2).as_deref(),
            Some("lib_store | lib_helper")
        );
    }

    #[test]
    fn in_the_program() {
        let lab = Lab::new(Link::Pie);
        let report = lab.crash(None, None);
        let frames = symbolize_with(&report, &[lab.path("prog"), lab.path("libcrash.so")]);
        check(
            &lab,
            &report,
            &frames,
            &[
                own(&lab, "prog", "crash_here", "prog.c", "crash_here"),
                own(&lab, "prog", "main", "prog.c", "main calls crash_here"),
            ],
        );
        assert_eq!(
            crash_signature(&frames, 5).as_deref(),
            Some("crash_here | main")
        );
    }

    #[test]
    fn in_an_inlined_function() {
        let lab = Lab::new(Link::Pie);
        let report = lab.crash(Some("inlined"), None);
        let frames = symbolize_with(&report, &[lab.path("prog"), lab.path("libcrash.so")]);
        check(
            &lab,
            &report,
            &frames,
            &[
                inlined(own(&lab, "libcrash.so", "poke", "lib.c", "poke")),
                own(
                    &lab,
                    "libcrash.so",
                    "lib_helper",
                    "lib.c",
                    "lib_helper calls poke",
                ),
                own(&lab, "prog", "helper", "prog.c", "helper calls lib_helper"),
                own(&lab, "prog", "main", "prog.c", "main calls helper"),
            ],
        );
        assert_eq!(frames[0].address, frames[1].address);
        assert_eq!(
            crash_signature(&frames, 3).as_deref(),
            Some("poke | lib_helper | helper")
        );
    }

    #[test]
    fn the_static_runtime_is_recognised_by_the_programs_debug_information() {
        let lab = Lab::new(Link::PieStaticRuntime);
        let report = lab.crash(Some("lib"), None);
        let (raw, _) = crash_of(&report);
        // The runtime's frames are in the program, unnamed by glibc.
        assert!(
            raw[0].object.ends_with("prog") && raw[0].symbol.is_none(),
            "{report}"
        );
        let frames = symbolize_with(&report, &[lab.path("prog"), lab.path("libcrash.so")]);
        check(&lab, &report, &frames, &in_lib_store(&lab));

        // Without the program's file nothing says which frames are the
        // runtime's: all are kept, the first taken as exact.
        let frames = symbolize_with(&report, &[lab.path("libcrash.so")]);
        assert_eq!(frames.len(), raw.len());
        // With the C library, its `rt_sigreturn` code gives the trampoline.
        let libc = modules_path(&report, "/libc.so.6");
        let frames = symbolize_with(&report, &[lab.path("libcrash.so"), libc]);
        assert_eq!(frames[0].function.as_deref(), Some("lib_store"));
        assert_eq!(frames[0].line, Some(line_of("lib.c", "lib_store")));
    }

    #[test]
    fn a_fixed_address_program_under_another_name() {
        let lab = Lab::new(Link::NoPie);
        // argv[0] is what glibc prints for the program: `crasher[0x401136]`
        // matches no module path, so the frame is placed by address.
        let report = lab.crash(Some("lib"), Some("crasher"));
        let (raw, modules) = crash_of(&report);
        assert!(
            raw.iter()
                .any(|frame| frame.object == "crasher" && frame.offset.is_none()),
            "{report}"
        );
        let program = modules
            .iter()
            .find(|module| module.path == lab.display("prog"))
            .unwrap();
        assert_eq!(program.load_address, 0);
        let frames = symbolize_with(&report, &[lab.path("prog"), lab.path("libcrash.so")]);
        check(&lab, &report, &frames, &in_lib_store(&lab));
    }

    #[test]
    fn a_stripped_program_and_its_separate_debug_file() {
        let lab = Lab::new(Link::Pie);
        lab.run("objcopy", &["--only-keep-debug", "prog", "prog.debug"]);
        lab.run("strip", &["prog"]);
        let report = lab.crash(Some("lib"), None);
        let frames = symbolize_with(
            &report,
            &[
                lab.path("prog"),
                lab.path("prog.debug"),
                lab.path("libcrash.so"),
            ],
        );
        check(&lab, &report, &frames, &in_lib_store(&lab));
        // The stripped file alone names nothing of the program.
        let frames = symbolize_with(&report, &[lab.path("prog"), lab.path("libcrash.so")]);
        assert_eq!(frames[2].function, None);
        assert_eq!(frames[2].module, lab.display("prog"));
    }

    #[test]
    fn resolve_backtrace_prints_the_table() {
        let lab = Lab::new(Link::Pie);
        let report = lab.crash(Some("inlined"), None);
        let (raw, _) = crash_of(&report);
        let faulting = raw
            .iter()
            .position(|frame| frame.object.ends_with("/libc.so.6"))
            .unwrap()
            + 1;
        let address = |index: usize| format!("{:#x}", raw[faulting + index].address);
        let output = tool(
            "resolve-backtrace",
            &lab.root,
            &["prog", "libcrash.so"],
            report.as_bytes(),
        );
        assert_eq!(stderr(&output), "");
        assert_eq!(output.status.code(), Some(0));
        let printed = stdout(&output);
        let lib = lab.display("libcrash.so");
        let prog = lab.display("prog");
        let lib_c = lab.display("lib.c");
        let prog_c = lab.display("prog.c");
        let expected = format!(
            "return\tmodule\tfunction\tfile\tline\n\
             {a0}\t{lib}\t(inlined) poke\t{lib_c}\t{poke}\n\
             {a0}\t{lib}\tlib_helper\t{lib_c}\t{calls_poke}\n\
             {a1}\t{prog}\thelper\t{prog_c}\t{calls_lib}\n\
             {a2}\t{prog}\tmain\t{prog_c}\t{calls_helper}\n",
            a0 = address(0),
            a1 = address(1),
            a2 = address(2),
            poke = line_of("lib.c", "poke"),
            calls_poke = line_of("lib.c", "lib_helper calls poke"),
            calls_lib = line_of("prog.c", "helper calls lib_helper"),
            calls_helper = line_of("prog.c", "main calls helper"),
        );
        assert!(printed.starts_with(&expected), "{printed}");
        let rest: Vec<&str> = printed[expected.len()..].lines().collect();
        assert!(!rest.is_empty());
        for line in rest {
            let fields: Vec<&str> = line.split('\t').collect();
            assert_eq!(fields.len(), 5, "{line}");
            assert!(
                fields[1].ends_with("/libc.so.6") || (fields[1] == prog && fields[2] == "_start"),
                "{printed}"
            );
        }

        // The bare body `extract-report main-backtrace` prints: no modules,
        // so frames are placed by the paths and offsets glibc printed.
        let body = tool(
            "extract-report",
            &lab.root,
            &["main-backtrace"],
            report.as_bytes(),
        );
        let output = tool(
            "resolve-backtrace",
            &lab.root,
            &["prog", "libcrash.so"],
            &body.stdout,
        );
        assert_eq!(stderr(&output), "");
        let printed = stdout(&output);
        let expected = expected.replace(&format!("\t{prog}\t"), "\t./prog\t");
        assert!(printed.starts_with(&expected), "{printed}");
    }
}

mod resolve_backtrace {
    use super::*;

    #[test]
    fn a_report_without_a_crash_exits_1() {
        let report = "<report id=\"samples\">\n</report>\n";
        let output = tool("resolve-backtrace", Path::new("."), &[], report.as_bytes());
        assert_eq!(
            stderr(&output),
            "resolve-backtrace: no `<report id=\"main-backtrace\">` in the input: the run did not crash\n"
        );
        assert_eq!(stdout(&output), "");
        assert_eq!(output.status.code(), Some(1));
        let output = tool("resolve-backtrace", Path::new("."), &[], b"");
        assert_eq!(output.status.code(), Some(1));
    }

    #[test]
    fn errors_name_the_report_line_and_the_file() {
        let report = "<report id=\"main-backtrace\">\n\
            ./prog[0x1]\n\
            ./prog(main+0x1)\n\
            </report>\n";
        let output = tool("resolve-backtrace", Path::new("."), &[], report.as_bytes());
        assert_eq!(
            stderr(&output),
            "resolve-backtrace: error: standard input: line 3: expected a frame `OBJECT(SYMBOL+0xOFFSET)[0xADDRESS]`, `OBJECT(+0xOFFSET)[0xADDRESS]` or `OBJECT[0xADDRESS]`, found \"./prog(main+0x1)\"\n"
        );
        assert_eq!(stdout(&output), "");
        assert_eq!(output.status.code(), Some(2));

        let report = "<report id=\"main-backtrace\">\n\
            ./prog[0x1]\n\
            </report>\n\
            <report id=\"modules\">\n\
            0x0\t-\t/prog\n\
            0x0\tXY\t/lib\n\
            </report>\n";
        let output = tool("resolve-backtrace", Path::new("."), &[], report.as_bytes());
        assert_eq!(
            stderr(&output),
            "resolve-backtrace: error: standard input: line 6: the build id \"XY\" is neither `-` nor lowercase hex bytes\n"
        );
        assert_eq!(output.status.code(), Some(2));

        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("notes.txt"), "not ELF").unwrap();
        let output = tool(
            "resolve-backtrace",
            dir.path(),
            &["notes.txt"],
            report.as_bytes(),
        );
        assert!(
            stderr(&output)
                .starts_with("resolve-backtrace: error: `notes.txt`: not a readable ELF file: "),
            "{}",
            stderr(&output)
        );
        assert_eq!(output.status.code(), Some(2));
        let output = tool(
            "resolve-backtrace",
            dir.path(),
            &["missing"],
            report.as_bytes(),
        );
        assert_eq!(
            stderr(&output),
            "resolve-backtrace: error: `missing`: cannot read: No such file or directory (os error 2)\n"
        );
    }

    #[test]
    fn without_files_glibcs_names_and_the_modules() {
        let report = "<report id=\"main-backtrace\">\n\
            /opt/rt/libsampler_runtime.so(+0x2eb83)[0x7f0000042b83]\n\
            /lib/x86_64-linux-gnu/libc.so.6(+0x3c050)[0x7f0000103c050]\n\
            /opt/app/libfoo.so(foo_parse+0x12)[0x7f000020111b]\n\
            ./app(+0x11a0)[0x5600000011a0]\n\
            </report>\n\
            <report id=\"modules\">\n\
            0x560000000000\tab\t/opt/app/app\n\
            0x7f0000200000\t-\t/opt/app/libfoo.so\n\
            0x7f0000100000\t-\t/lib/x86_64-linux-gnu/libc.so.6\n\
            0x7f0000000000\t-\t/opt/rt/libsampler_runtime.so\n\
            </report>\n";
        let output = tool("resolve-backtrace", Path::new("."), &[], report.as_bytes());
        assert_eq!(stderr(&output), "");
        assert_eq!(
            stdout(&output),
            "return\tmodule\tfunction\tfile\tline\n\
             0x7f000020111b\t/opt/app/libfoo.so\tfoo_parse\t??\t0\n\
             0x5600000011a0\t/opt/app/app\t??\t??\t0\n"
        );
        // Two crashes: one header, an empty line between.
        let output = tool(
            "resolve-backtrace",
            Path::new("."),
            &[],
            report.repeat(2).as_bytes(),
        );
        let one = "0x7f000020111b\t/opt/app/libfoo.so\tfoo_parse\t??\t0\n\
                   0x5600000011a0\t/opt/app/app\t??\t??\t0\n";
        assert_eq!(
            stdout(&output),
            format!("return\tmodule\tfunction\tfile\tline\n{one}\n{one}")
        );
    }
}

/// The path of the module whose path ends with `suffix`.
fn modules_path(report: &str, suffix: &str) -> PathBuf {
    let (_, modules) = crash_of(report);
    PathBuf::from(
        &modules
            .iter()
            .find(|module| module.path.ends_with(suffix))
            .unwrap()
            .path,
    )
}

mod properties {
    use proptest::prelude::*;

    use super::*;

    /// `libcrash.so`, built once: a small ELF file with DWARF.
    fn library() -> &'static [u8] {
        static LIBRARY: OnceLock<Vec<u8>> = OnceLock::new();
        LIBRARY.get_or_init(|| {
            let dir = tempfile::tempdir().unwrap();
            let status = Command::new("gcc")
                .args(["-g", "-O1", "-fPIC", "-shared", "-o"])
                .arg(dir.path().join("libcrash.so"))
                .arg(sources().join("lib.c"))
                .status()
                .unwrap();
            assert!(status.success());
            std::fs::read(dir.path().join("libcrash.so")).unwrap()
        })
    }

    const SAMPLE: &str = "/opt/rt/libsampler_runtime.so(+0x2eb83)[0x7f0000042b83]\n\
        /lib/x86_64-linux-gnu/libc.so.6(+0x3c050)[0x7f0000103c050]\n\
        /opt/app/libfoo.so(foo_parse+0x12)[0x7f000020111b]\n\
        app[0x401136]\n";

    const SAMPLE_MODULES: &str = "0x0\tab12\t/opt/app/app\n\
        0x7f0000200000\t-\t/opt/app/libfoo.so\n";

    /// Text made of the characters that matter to the parsers.
    fn frameish() -> impl Strategy<Value = String> {
        proptest::collection::vec(
            prop::sample::select(vec![
                "(",
                ")",
                "[",
                "]",
                "+",
                "-",
                "0x",
                "0",
                "f",
                "F",
                "9",
                "\t",
                "\n",
                "/",
                "a",
                ".",
                "é",
                "ffffffffffffffff",
                "-\t",
                "0x7f\t",
            ]),
            0..40,
        )
        .prop_map(|pieces| pieces.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn parsers_never_panic(text in any::<String>(), shaped in frameish(), cut in any::<prop::sample::Index>()) {
            for text in [&text, &shaped] {
                let _ = parse_backtrace(text);
                let _ = parse_modules(text);
            }
            for sample in [SAMPLE, SAMPLE_MODULES] {
                let mut at = cut.index(sample.len() + 1);
                while !sample.is_char_boundary(at) {
                    at -= 1;
                }
                let _ = parse_backtrace(&sample[..at]);
                let _ = parse_modules(&sample[..at]);
            }
        }

        #[test]
        fn symbolize_never_panics(backtrace in frameish(), modules in frameish()) {
            let frames = parse_backtrace(&backtrace).unwrap_or_default();
            let modules = parse_modules(&modules).unwrap_or_default();
            let mut debug = DebugFileSet::new();
            debug.add("/opt/app/libfoo.so", DebugObject::parse(library().to_vec()).unwrap());
            let frames = symbolize(&frames, &modules, &debug);
            let _ = crash_signature(&frames, 5);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn damaged_elf_files_never_panic(
            edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..16),
            cut in any::<prop::sample::Index>(),
            truncate in any::<bool>(),
        ) {
            let mut bytes = library().to_vec();
            for (at, byte) in &edits {
                let index = at.index(bytes.len());
                bytes[index] = *byte;
            }
            if truncate {
                bytes.truncate(cut.index(bytes.len()));
            }
            if let Ok(object) = DebugObject::parse(bytes) {
                for address in (0..0x2000).step_by(7) {
                    std::hint::black_box(object.lookup(address));
                    std::hint::black_box(object.is_signal_trampoline(address));
                }
            }
        }

        #[test]
        fn random_bytes_are_errors(
            bytes in proptest::collection::vec(any::<u8>(), 0..4096),
            class in 1u8..=2,
            data in 1u8..=2,
        ) {
            prop_assert!(DebugObject::parse(bytes.clone()).is_err());
            // Past the magic number and the ELF identification.
            let mut elf = vec![0x7f, b'E', b'L', b'F', class, data, 1];
            elf.extend(bytes);
            if let Ok(object) = DebugObject::parse(elf) {
                std::hint::black_box(object.lookup(0x1000));
            }
        }

        #[test]
        fn truncated_elf_files_are_errors(cut in any::<prop::sample::Index>()) {
            let bytes = library();
            // Section headers come last: any real truncation loses them.
            let at = cut.index(bytes.len() - 64);
            prop_assert!(DebugObject::parse(bytes[..at].to_vec()).is_err());
        }
    }
}
