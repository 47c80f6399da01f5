//! sampler-cc without an install step: run from cargo's target folder, it
//! packages cargo's staticlib beside itself; and what it says about itself
//! (`--help`, `--sampler-help`, `--version`).

use super::*;
use std::time::{Duration, SystemTime};

const PROGRAM: &str = "#include <stdio.h>\nint main(int argc, char **argv) {\n  if (argc > 1)\n    puts(argv[1]);\n  return 0;\n}\n";

/// A folder as `cargo build` leaves `target/release`: sampler-cc and
/// cargo's raw staticlib, nothing packaged.
struct CargoTarget {
    lab: Lab,
}

impl CargoTarget {
    fn new() -> Self {
        let lab = Lab::new();
        std::fs::create_dir(lab.path("release")).unwrap();
        std::fs::copy(sampler_cc(), lab.path("release/sampler-cc")).unwrap();
        std::fs::copy(
            tools().bin.join("libsampler_runtime.a"),
            lab.path("release/libsampler_runtime.a"),
        )
        .unwrap();
        lab.write("p.c", PROGRAM);
        CargoTarget { lab }
    }

    /// sampler-cc from this folder, with no runtime folder named.
    fn cc(&self, args: &[&str]) -> Command {
        let mut command = self.lab.command(self.lab.path("release/sampler-cc"));
        command
            .args(args)
            .env_remove("SAMPLER_RUNTIME_DIR")
            .env_remove("SAMPLER_REAL_CC");
        command
    }

    fn packaged(&self, name: &str) -> PathBuf {
        self.lab.path("release/sampler-runtime").join(name)
    }

    /// Runs `program one` and returns its report's branch counters.
    fn branches(&self, program: &str) -> String {
        let report = format!("{program}.report");
        assert_eq!(self.lab.run(program, &["one"], &report, &[]), "one\n");
        let text = std::fs::read_to_string(self.lab.path(&report)).unwrap();
        let start = text.find("scheme=\"branches\">\n").expect(&text) + 19;
        let end = start + text[start..].find("</samples>").unwrap();
        text[start..end].to_owned()
    }
}

fn modified(path: &Path) -> SystemTime {
    std::fs::metadata(path).unwrap().modified().unwrap()
}

fn succeeded(output: Output) -> Output {
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

#[test]
fn links_from_cargo_s_target_folder_without_an_install() {
    let target = CargoTarget::new();
    let output = succeeded(
        target
            .cc(&["-fsampler-strict", "-fno-sample", "p.c", "-o", "p"])
            .output()
            .unwrap(),
    );
    assert_eq!(String::from_utf8_lossy(&output.stderr), "");
    assert_eq!(target.branches("p"), "0\t1\n");
    // The program links the runtime packaged beside sampler-cc, which
    // exports the C ABI only.
    let runpath = Command::new("readelf")
        .args(["-d", "p"])
        .current_dir(target.lab.path(""))
        .output()
        .unwrap();
    let packaged_dir = target.lab.path("release/sampler-runtime");
    assert!(
        String::from_utf8_lossy(&runpath.stdout).contains(&format!("[{}]", packaged_dir.display())),
        "{runpath:?}"
    );
    let symbols = succeeded(
        Command::new("nm")
            .args(["-D", "--defined-only", "--format=just-symbols"])
            .arg(target.packaged("libsampler_runtime.so"))
            .output()
            .unwrap(),
    );
    let mut exported: Vec<&str> = std::str::from_utf8(&symbols.stdout)
        .unwrap()
        .lines()
        .collect();
    exported.sort_unstable();
    let mut expected = sampler_cc::runtime_package::exported_symbols();
    expected.sort_unstable();
    assert_eq!(exported, expected);
    // Packaged once: the files carry the staticlib's time.
    let staticlib = target.lab.path("release/libsampler_runtime.a");
    for name in ["libsampler_runtime.a", "libsampler_runtime.so"] {
        assert_eq!(modified(&target.packaged(name)), modified(&staticlib));
    }
    // The static runtime too.
    succeeded(
        target
            .cc(&["-fsampler-static-runtime", "-fno-sample", "p.c", "-o", "s"])
            .output()
            .unwrap(),
    );
    assert_eq!(target.branches("s"), "0\t1\n");
}

#[test]
fn parallel_builds_package_safely() {
    let target = CargoTarget::new();
    let compiles: Vec<_> = (0..4)
        .map(|index| {
            target
                .cc(&["-fno-sample", "p.c", "-o", &format!("p{index}")])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for compile in compiles {
        succeeded(compile.wait_with_output().unwrap());
    }
    for index in 0..4 {
        assert_eq!(target.branches(&format!("p{index}")), "0\t1\n");
    }
    // Nothing left over from packaging but the lock file.
    let mut names: Vec<String> = std::fs::read_dir(target.lab.path("release/sampler-runtime"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [".lock", "libsampler_runtime.a", "libsampler_runtime.so"]
    );
}

#[test]
fn a_rebuilt_staticlib_is_packaged_again() {
    let target = CargoTarget::new();
    succeeded(
        target
            .cc(&["-fno-sample", "p.c", "-o", "p"])
            .output()
            .unwrap(),
    );
    let shared = target.packaged("libsampler_runtime.so");
    let first = std::fs::metadata(&shared).unwrap();
    // Compiling again leaves the packaged runtime as it is.
    succeeded(
        target
            .cc(&["-fno-sample", "p.c", "-o", "p"])
            .output()
            .unwrap(),
    );
    let again = std::fs::metadata(&shared).unwrap();
    assert_eq!(
        std::os::unix::fs::MetadataExt::ino(&again),
        std::os::unix::fs::MetadataExt::ino(&first)
    );
    // cargo rebuilds the staticlib: packaged again, by a new file (a
    // running program keeps the old one).
    let staticlib = target.lab.path("release/libsampler_runtime.a");
    let newer = modified(&staticlib) + Duration::from_secs(10);
    std::fs::File::options()
        .write(true)
        .open(&staticlib)
        .unwrap()
        .set_modified(newer)
        .unwrap();
    succeeded(
        target
            .cc(&["-fno-sample", "p.c", "-o", "p"])
            .output()
            .unwrap(),
    );
    let rebuilt = std::fs::metadata(&shared).unwrap();
    assert_ne!(
        std::os::unix::fs::MetadataExt::ino(&rebuilt),
        std::os::unix::fs::MetadataExt::ino(&first)
    );
    assert_eq!(rebuilt.modified().unwrap(), newer);
    assert_eq!(modified(&target.packaged("libsampler_runtime.a")), newer);
    assert_eq!(target.branches("p"), "0\t1\n");
}

#[test]
fn a_packaging_failure_is_named() {
    let target = CargoTarget::new();
    // A staticlib that is not an archive: `ld` refuses it.
    target
        .lab
        .write("release/libsampler_runtime.a", "not an archive\n");
    let output = target.cc(&["p.c", "-o", "p"]).output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.starts_with("sampler-cc: error: packaging the runtime: `ld -r --whole-archive "),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "(from {})",
            target.lab.path("release/libsampler_runtime.a").display()
        )),
        "{stderr}"
    );
    assert!(!target.lab.path("p").exists());
}

/// sampler-cc or gcc with `args`, in a neutral environment.
/// An installed layout (`bin/sampler-cc`, `libexec/sampler-cc/cc1`)
/// whose record of libclang (what scripts/install.sh writes) names the
/// library to load: the driver hands it to the stage, so that a
/// record naming a file that is no libclang fails the compile with that
/// file's name, while $LIBCLANG_PATH wins over it and a record naming a
/// missing file is ignored.
#[test]
fn an_installed_sampler_cc_loads_the_libclang_its_install_recorded() {
    let lab = Lab::new();
    for dir in ["bin", "libexec/sampler-cc", "fake"] {
        std::fs::create_dir_all(lab.path(dir)).unwrap();
    }
    std::fs::copy(sampler_cc(), lab.path("bin/sampler-cc")).unwrap();
    std::os::unix::fs::symlink("../../bin/sampler-cc", lab.path("libexec/sampler-cc/cc1")).unwrap();
    lab.write("p.c", PROGRAM);
    let record = lab.path("libexec/sampler-cc/libclang");
    let run = |args: &[&str], libclang_path: Option<&str>| {
        let mut command = lab.command(lab.path("bin/sampler-cc"));
        command.args(args).env_remove("SAMPLER_REAL_CC");
        match libclang_path {
            Some(path) => command.env("LIBCLANG_PATH", path),
            None => command.env_remove("LIBCLANG_PATH"),
        };
        command.output().unwrap()
    };
    let compile = ["-fsampler-strict", "-O2", "-c", "p.c", "-o", "p.o"];
    // No record: clang-sys's search, which install.sh records.
    let found = succeeded(run(&["--sampler-libclang"], None));
    let found = stdout(&found).trim_end().to_owned();
    let name = Path::new(&found)
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    assert!(
        name.starts_with("libclang") && Path::new(&found).is_file(),
        "{found}"
    );
    std::fs::write(&record, format!("{found}\n")).unwrap();
    succeeded(run(&compile, None));
    assert_eq!(
        stdout(&succeeded(run(&["--sampler-libclang"], None))),
        format!("{found}\n")
    );
    // A record naming a file that cannot be loaded: the stage tries it.
    let fake = lab.path("fake/libclang.so");
    std::fs::write(&fake, "not a library").unwrap();
    std::fs::write(&record, format!("{}\n", fake.display())).unwrap();
    let failed = run(&compile, None);
    let stderr = String::from_utf8_lossy(&failed.stderr);
    assert!(!failed.status.success(), "{stderr}");
    assert!(stderr.contains(&fake.display().to_string()), "{stderr}");
    assert_eq!(
        stdout(&succeeded(run(&["--sampler-libclang"], None))),
        format!("{}\n", fake.display())
    );
    // $LIBCLANG_PATH wins over the record.
    succeeded(run(&compile, Some(&found)));
    // A record naming a missing file, or a file not named libclang*, is
    // not used: the search again.
    std::fs::remove_file(&fake).unwrap();
    succeeded(run(&compile, None));
    std::fs::write(lab.path("fake/other.so"), "not a library").unwrap();
    std::fs::write(
        &record,
        format!("{}\n", lab.path("fake/other.so").display()),
    )
    .unwrap();
    succeeded(run(&compile, None));
}

fn probe(program: impl AsRef<std::ffi::OsStr>, args: &[&str]) -> Output {
    Command::new(program)
        .args(args)
        .env_remove("SAMPLER_REAL_CC")
        .env_remove("SAMPLER_RUNTIME_DIR")
        .output()
        .unwrap()
}

fn stdout(output: &Output) -> &str {
    std::str::from_utf8(&output.stdout).unwrap()
}

/// What `--sampler-help` prints for the sampler-cc under test.
fn expected_sampler_help() -> String {
    let dir = Path::new(sampler_cc())
        .parent()
        .unwrap()
        .display()
        .to_string();
    let mut text = sampler_cc::options::flags_help();
    text.push_str(&format!(
        "\nWhere sampler-cc looks for what it needs (DIR: its own folder, now {dir}):\n"
    ));
    text
}

#[test]
fn help_is_gcc_s_then_sampler_cc_s() {
    let gcc = probe("gcc", &["--help"]);
    let ours = probe(sampler_cc(), &["--help"]);
    assert!(gcc.status.success() && ours.status.success());
    assert_eq!(ours.stderr, gcc.stderr);
    let sampler_help = probe(sampler_cc(), &["--sampler-help"]);
    assert_eq!(
        stdout(&ours),
        format!("{}\n{}", stdout(&gcc), stdout(&sampler_help))
    );
    // Sampler flags are taken out first, as in every command.
    let with_flag = probe(sampler_cc(), &["-fsampler-scheme=returns", "--help"]);
    assert_eq!(with_flag.stdout, ours.stdout);
}

#[test]
fn sampler_help_lists_every_flag_and_where_it_looks() {
    let output = probe(sampler_cc(), &["--sampler-help"]);
    assert!(output.status.success());
    assert_eq!(output.stderr, b"");
    let text = stdout(&output);
    assert!(text.starts_with(&expected_sampler_help()), "{text}");
    for needed in [
        "$SAMPLER_REAL_CC (unset now)",
        "the folder $SAMPLER_RUNTIME_DIR names (unset now);",
        "DIR/../lib/sampler, where scripts/install.sh puts it;",
        "DIR, if it holds libsampler_runtime.so;",
        "DIR/sampler-runtime/, where sampler-cc packages cargo's staticlib",
        "library $LIBCLANG_PATH names (a folder, or the file itself) if set",
    ] {
        assert!(text.contains(needed), "{needed:?} in {text}");
    }
    assert!(!text.contains("Usage: gcc"));
    // Every flag the parser takes is listed, and every flag listed is
    // taken (as the driver sees it: not passed on to gcc).
    // The flags' column: lines that start with a flag, up to the
    // explanation at column 30.
    let listed: Vec<&str> = text
        .split_once("\nWhere")
        .unwrap()
        .0
        .lines()
        .filter(|line| line.starts_with("  -f"))
        .map(|line| match line.get(28..30) {
            Some("  ") => &line[..30],
            _ => line,
        })
        .flat_map(|column| column.split([' ', ',']))
        .filter(|word| !word.is_empty())
        .collect();
    let synopses: Vec<String> = sampler_cc::options::all_flags()
        .map(|flag| flag.synopsis())
        .collect();
    assert_eq!(
        synopses,
        [
            "-fsampler-scheme=NAME",
            "-fassign-into-field",
            "-fno-assign-into-field",
            "-fassign-into-index",
            "-fno-assign-into-index",
            "-fassign-across-pointer",
            "-fno-assign-across-pointer",
            "-fcompare-constants",
            "-fno-compare-constants",
            "-fcompare-uninitialized",
            "-fno-compare-uninitialized",
            "-ftimestamp-first",
            "-fno-timestamp-first",
            "-ftimestamp-last",
            "-fno-timestamp-last",
            "-fsample",
            "-fno-sample",
            "-fclone-regions",
            "-fno-clone-regions",
            "-fsample-regions",
            "-fsample-sites",
            "-fsample-split-loops",
            "-fno-sample-split-loops",
            "-fsample-counted-loops",
            "-fno-sample-counted-loops",
            "-fsample-counted-plain-loops",
            "-fno-sample-counted-plain-loops",
            "-fsample-unrolled-loops",
            "-fno-sample-unrolled-loops",
            "-fsample-across-calls",
            "-fno-sample-across-calls",
            "-fsample-nested-loops",
            "-fno-sample-nested-loops",
            "-fsample-nested-runs",
            "-fno-sample-nested-runs",
            "-fsample-outlined-functions",
            "-fno-sample-outlined-functions",
            "-fsample-inline-allowance",
            "-fno-sample-inline-allowance",
            "-fsample-unhoisted-copies",
            "-fno-sample-unhoisted-copies",
            "-fsample-pair-helpers",
            "-fno-sample-pair-helpers",
            "-fsample-whole-loops",
            "-fno-sample-whole-loops",
            "-fsample-warm-loops",
            "-fno-sample-warm-loops",
            "-fsample-warm-functions",
            "-fno-sample-warm-functions",
            "-fsampler-rates=FILE",
            "-fthreads",
            "-fno-threads",
            "-finclude-function=F",
            "-fexclude-function=F",
            "-finclude-file=FILE",
            "-fexclude-file=FILE",
            "-finclude-location=FILE:LINE",
            "-fexclude-location=FILE:LINE",
            "-frelative-paths",
            "-fno-relative-paths",
            "-fsampler-strict",
            "-fsampler-static-runtime",
            "-fsampler-tls-model=MODEL",
            "-fsampler-stats",
        ]
    );
    for synopsis in &synopses {
        assert!(listed.contains(&synopsis.as_str()), "{synopsis} in {text}");
    }
    for word in listed {
        assert!(
            sampler_cc::options::Options::is_sampler_flag(word),
            "{word}"
        );
        let example = word
            .replace("=NAME", "=branches")
            .replace("=FILE:LINE", "=a.c:3")
            .replace("=MODEL", "=local-exec");
        let mut options = sampler_cc::options::Options::default();
        options.apply(&example).unwrap();
    }
}

#[test]
fn version_adds_sampler_cc_s_after_gcc_s_first_line() {
    let gcc = probe("gcc", &["--version"]);
    let ours = probe(sampler_cc(), &["--version"]);
    assert!(gcc.status.success() && ours.status.success());
    let (first, rest) = stdout(&gcc).split_once('\n').unwrap();
    assert!(first.starts_with("gcc "), "{first}");
    assert_eq!(
        stdout(&ours),
        format!("{first}\nsampler-cc {}\n{rest}", env!("CARGO_PKG_VERSION"))
    );
    assert_eq!(stdout(&ours).lines().nth(1), Some("sampler-cc 0.1.0"));
    let with_flag = probe(sampler_cc(), &["-fno-sample", "--version"]);
    assert_eq!(with_flag.stdout, ours.stdout);
    // What configure scripts also ask is gcc's, unchanged.
    for args in [
        &["-v"][..],
        &["-dumpversion"],
        &["-dumpfullversion"],
        &["-dumpmachine"],
    ] {
        let gcc = probe("gcc", args);
        let ours = probe(sampler_cc(), args);
        assert_eq!(
            (ours.status.code(), &ours.stdout, &ours.stderr),
            (gcc.status.code(), &gcc.stdout, &gcc.stderr),
            "{args:?}"
        );
    }
}

#[test]
fn the_packaging_subcommand_checks_its_arguments() {
    let output = probe(sampler_cc(), &["--sampler-package-runtime", "only-one"]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "usage: sampler-cc --sampler-package-runtime STATICLIB OUTDIR\n"
    );
}
