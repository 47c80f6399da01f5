//! The `cc1` stage. gcc, run by the driver with `-B<stub dir>/
//! -no-integrated-cpp`, calls this program as its `cc1` twice per C file:
//!
//! 1. `cc1 -E ... -o X.i`: preprocessing; runs the real cc1 with `-C` added,
//!    so that comments (`/* fall through */`) survive into the `.i`;
//! 2. `cc1 -fpreprocessed X.i ... -o X.s`: instruments `X.i` into an
//!    unnamed temporary file and becomes the real cc1 (`exec`), reading
//!    it as its standard input.
//!
//! gcc keeps doing everything else (`-MD` files, `-save-temps`, `-pipe`,
//! output names). Anything else is passed to the real cc1 untouched.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use crate::frontend::libclang;
use crate::instrument::instrument;
use crate::options::{ENV_OPTIONS, Options};
use crate::preprocessed::main_file;

/// The real cc1, found by the driver.
pub const ENV_REAL_CC1: &str = "SAMPLER_CC_REAL_CC1";

/// cc1 options whose value is the next argument.
const OPTIONS_WITH_VALUE: [&str; 24] = [
    "-o",
    "-dumpbase",
    "-dumpbase-ext",
    "-dumpdir",
    "-auxbase",
    "-auxbase-strip",
    "-imultiarch",
    "-imultilib",
    "-iprefix",
    "-isystem",
    "-isysroot",
    "-include",
    "-imacros",
    "-idirafter",
    "-iquote",
    "-iwithprefix",
    "-iwithprefixbefore",
    "-MF",
    "-MT",
    "-MQ",
    "-MD",
    "-MMD",
    "-aux-info",
    "--param",
];

pub fn main(args: Vec<String>) -> ExitCode {
    let Some(real) = std::env::var_os(ENV_REAL_CC1) else {
        eprintln!("sampler-cc: this is sampler-cc's cc1 stage; run sampler-cc instead");
        return ExitCode::from(1);
    };
    let real = PathBuf::from(real);
    if args.iter().any(|arg| arg == "-E") {
        let mut args = args;
        if !args.iter().any(|arg| arg == "-C" || arg == "-CC") {
            args.push("-C".into());
        }
        return run(&real, &args);
    }
    if !args.iter().any(|arg| arg == "-fpreprocessed") {
        return run(&real, &args);
    }
    let mut options = match Options::from_env(&std::env::var(ENV_OPTIONS).unwrap_or_default()) {
        Ok(options) => options,
        Err(err) => {
            eprintln!("sampler-cc: {err}");
            return ExitCode::from(1);
        }
    };
    let Some(input_index) = input_index(&args) else {
        return run(&real, &args);
    };
    options.tls_model = options.tls_model.resolve(&args);
    let input = PathBuf::from(&args[input_index]);
    match instrument_file(&input, &args, &options) {
        Ok(instrumented) => {
            let mut changed = args.clone();
            changed[input_index] = "-".into();
            if options.sample && options.clone_regions && options.inline_allowance {
                changed.extend(inline_allowance(&args, &real));
            }
            if options.sample && options.clone_regions && options.unhoisted_copies {
                changed.extend(no_code_hoisting(&args, &real));
            }
            exec_reading(&real, &changed, instrumented)
        }
        Err(reason) => {
            let shown = display_name(&input);
            if options.strict {
                // gcc's own errors about the file come first: they are
                // usually why the front end failed too.
                let plain = run(&real, &args);
                if plain != ExitCode::SUCCESS {
                    return plain;
                }
                eprintln!("sampler-cc: error: {shown}: cannot instrument: {reason}");
                return ExitCode::from(1);
            }
            eprintln!("sampler-cc: warning: {shown}: compiled without instrumentation: {reason}");
            run(&real, &args)
        }
    }
}

/// The one input file of a cc1 command.
fn input_index(args: &[String]) -> Option<usize> {
    let mut index = 0;
    let mut found = None;
    while index < args.len() {
        let arg = &args[index];
        if OPTIONS_WITH_VALUE.contains(&arg.as_str()) {
            index += 2;
            continue;
        }
        if !arg.starts_with('-') || arg == "-" {
            if found.is_some() {
                return None;
            }
            found = Some(index);
        }
        index += 1;
    }
    found.filter(|&index| args[index] != "-")
}

/// What gcc's estimate of a sampled function's size grows by for the
/// test and call that sampling adds to it: an outlined function `F` is
/// its plain body plus `if (--cbi_countdown < 0) return F__cbi_slow(ARGS);`
/// (the countdown's load, decrement and store, the branch, the call with
/// two arguments and its return, about 8 of gcc's instructions).
const SAMPLING_WRAPPER_INSNS: u32 = 8;

/// `--param=max-inline-insns-auto=N`, gcc's limit on inlining functions
/// not declared `inline`, raised by [`SAMPLING_WRAPPER_INSNS`] over the
/// default of the command's optimisation level: otherwise a small function
/// that plain gcc inlines (out2Prerelease in sqlite3VdbeExec, 44 calls)
/// is a call once sampled, because of the test and call the sampling adds
/// (the sqlite3 shell: 0.7% fewer instructions with the allowance; plain
/// gcc with the same limit runs 0.4% more, so the gain is not the limit's
/// own; `sqlite3.c` then takes about 12% longer to compile, which is why
/// `-fsample-inline-allowance` is off by default). Nothing when the
/// command sets the limit itself, at `-O0`, `-O1`, `-Os`, `-Oz` and `-Og`
/// (no such inlining, or gcc's size heuristics),
/// or when `real` (the cc1 path, `.../gcc/TARGET/VERSION/cc1`) does not
/// say that gcc is 10 or later, whose defaults (15 at `-O2`, 30 at `-O3`
/// and `-Ofast`) these are.
fn inline_allowance(args: &[String], real: &Path) -> Option<String> {
    const PARAM: &str = "max-inline-insns-auto=";
    let mut level = None;
    for (index, arg) in args.iter().enumerate() {
        let param = arg.strip_prefix("--param=").or_else(|| {
            (arg == "--param")
                .then(|| args.get(index + 1).map(String::as_str))
                .flatten()
        });
        if param.is_some_and(|param| param.starts_with(PARAM)) {
            return None;
        }
        if let Some(o) = arg.strip_prefix("-O") {
            level = Some(o);
        }
    }
    let default = match level? {
        "2" => 15,
        "3" | "fast" => 30,
        _ => return None,
    };
    (gcc_major(real)? >= 10).then(|| format!("--param={PARAM}{}", default + SAMPLING_WRAPPER_INSNS))
}

/// The major version of the gcc whose cc1 is `real`, read off its
/// directory (`.../gcc/TARGET/VERSION/cc1`); `None` when the path does not
/// say.
fn gcc_major(real: &Path) -> Option<u32> {
    let version = real.parent()?.file_name()?.to_str()?;
    version.split('.').next()?.parse().ok()
}

/// `-fno-code-hoisting` for a sampled unit with cloned regions, unless
/// the command says `-fcode-hoisting` or `-fno-code-hoisting` itself, or
/// `real` does not say that gcc is 8 or later ([`gcc_major`]), which has
/// the option. A region's FAST and SLOW copies compute
/// the same expressions (the user's), and gcc's code hoisting (on at
/// `-O2`, `-O3` and `-Os`) moves what both compute above the countdown's
/// test that chooses between them, so that the FAST path keeps the SLOW
/// copy's values alive: in zlib's `compress_block` their registers spill
/// the loop's countdown and pointers (72.3 M instructions against plain
/// gcc's 52.3 M; 59.9 M without code hoisting). Off by default
/// (`-fsample-unhoisted-copies`): the three benchmarks ran 0.2% to 1.5%
/// fewer instructions without code hoisting, but bc and the sqlite3 shell
/// took 1.7% and 2.9% more CPU time (BENCHMARKS.md, stop 40).
fn no_code_hoisting(args: &[String], real: &Path) -> Option<String> {
    if args
        .iter()
        .any(|arg| arg == "-fcode-hoisting" || arg == "-fno-code-hoisting")
    {
        return None;
    }
    (gcc_major(real)? >= 8).then(|| "-fno-code-hoisting".to_owned())
}

/// The name the user knows the file by: the first marker of the `.i`,
/// read from its first line only.
fn display_name(input: &Path) -> String {
    let mut first_line = Vec::new();
    let read = std::fs::File::open(input).and_then(|file| {
        std::io::BufRead::read_until(
            &mut std::io::BufReader::new(std::io::Read::take(file, 64 << 10)),
            b'\n',
            &mut first_line,
        )
    });
    read.ok()
        .and_then(|_| main_file(&first_line))
        .unwrap_or_else(|| input.display().to_string())
}

/// `-fsampler-stats`' qualifiers of a count: " of which 3 counted and 2
/// across calls", the kinds that occur in that order; nothing when none
/// does.
fn of_which(kinds: &[(usize, &str)]) -> String {
    let found: Vec<String> = kinds
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, kind)| format!("{n} {kind}"))
        .collect();
    match found.split_last() {
        None => String::new(),
        Some((last, [])) => format!(" of which {last}"),
        Some((last, rest)) => format!(" of which {} and {last}", rest.join(", ")),
    }
}

/// Instruments `input` into an unnamed temporary file, returned open at
/// its start.
fn instrument_file(
    input: &Path,
    args: &[String],
    options: &Options,
) -> Result<std::fs::File, String> {
    let started = std::time::Instant::now();
    let text =
        std::fs::read(input).map_err(|err| format!("cannot read {}: {err}", input.display()))?;
    // The user's columns, as gcc gives them when it preprocesses itself.
    let text = crate::preprocessed::respace(&text, &mut |file| std::fs::read(file).ok());
    let flags = libclang::type_affecting_flags(args);
    let unit = libclang::analyse(&text, &flags).map_err(|err| err.to_string())?;
    let analysed = started.elapsed();
    let cwd = std::env::current_dir()
        .map_err(|err| format!("cannot read the working directory: {err}"))?;
    let rates = match &options.rates {
        Some(path) => Some(crate::options::read_rates(path)?),
        None => None,
    };
    let instrumented = instrument(&text, &unit, options, rates.as_ref(), &cwd)?;
    if options.stats {
        let counts: Vec<String> = instrumented
            .site_counts
            .iter()
            .map(|(scheme, n)| format!("{} {n}", scheme.name()))
            .collect();
        let regions = &instrumented.regions;
        let fell_back: usize = regions.fell_back.values().sum();
        // "N reason" for each reason, in the order of their names.
        let counted = |reasons: &std::collections::BTreeMap<&str, usize>| -> Vec<String> {
            reasons
                .iter()
                .map(|(reason, n)| format!("{n} {reason}"))
                .collect()
        };
        let reasons = counted(&regions.fell_back);
        // Only where warm functions are made (the default, per region):
        // the line is otherwise as before.
        let warm = if regions.warm_functions + regions.cold_functions.len() > 0 {
            let cold = counted(&regions.cold_functions);
            format!(
                ", {} warm functions{}",
                regions.warm_functions,
                if cold.is_empty() {
                    String::new()
                } else {
                    let n: usize = regions.cold_functions.values().sum();
                    format!(" ({n} not: {})", cold.join(", "))
                }
            )
        } else {
            String::new()
        };
        // `-fsample-counted-plain-loops`: how many counted loops also hold
        // the user's loop.
        let counted = match regions.counted_plain_loops {
            0 => "counted".to_owned(),
            n => format!("counted ({n} with the plain loop)"),
        };
        eprintln!(
            "sampler-cc: {}: {} functions, sites: {}; regions: {} cloned ({} runs{}, {} loops{}, \
             {} expressions, {} sites), {} declaration runs, {} leaf functions, \
             {} outlined functions{}, {fell_back} fell back{}{warm}; \
             front end {:.3} s, instrumentation {:.3} s",
            main_file(&text).unwrap_or_else(|| input.display().to_string()),
            unit.functions.len(),
            counts.join(", "),
            regions.runs + regions.loops + regions.expressions,
            regions.runs,
            of_which(&[
                (regions.runs_across_calls, "across calls"),
                (regions.nested_runs, "nested"),
            ]),
            regions.loops,
            of_which(&[
                (regions.counted_loops, &counted),
                (regions.unrolled_loops, "unrolled"),
                (regions.loops_across_calls, "across calls"),
                (regions.nested_loops, "nested"),
                (regions.warm_loops, "warm"),
            ]),
            regions.expressions,
            regions.cloned_sites,
            regions.declarations,
            regions.leaf_functions,
            regions.outlined_functions,
            of_which(&[(regions.reentered_functions, "re-entered")]),
            if reasons.is_empty() {
                String::new()
            } else {
                format!(" ({})", reasons.join(", "))
            },
            analysed.as_secs_f64(),
            (started.elapsed() - analysed).as_secs_f64(),
        );
    }
    if !instrumented.functions_with_errors.is_empty() {
        let names = instrumented.functions_with_errors.join(", ");
        let first = instrumented.first_error.as_deref().unwrap_or_default();
        if options.strict {
            return Err(format!(
                "the C front end rejected function(s) {names} ({first})"
            ));
        }
        eprintln!(
            "sampler-cc: warning: {}: not instrumented in {names}: the C front end rejected them ({first})",
            main_file(&text).unwrap_or_else(|| input.display().to_string())
        );
    }
    let mut file =
        tempfile::tempfile().map_err(|err| format!("cannot create a temporary file: {err}"))?;
    std::io::Write::write_all(&mut file, &instrumented.text)
        .and_then(|()| std::io::Seek::rewind(&mut file))
        .map_err(|err| format!("cannot write the instrumented file: {err}"))?;
    Ok(file)
}

/// Replaces this process with `program`, which reads `input` (the
/// instrumented text) as its standard input, named `-` in `args`: the
/// front end's memory (libclang's tree and the model, 270 to 360 MB on
/// sqlite3.c) is given back before cc1 starts instead of staying beside
/// it, and no file is left to remove. cc1 names a preprocessed input read
/// from `-` after its first line marker, as it does a named one: the
/// object is byte for byte the same. Returns only when `program` cannot
/// be run.
fn exec_reading(program: &Path, args: &[String], input: std::fs::File) -> ExitCode {
    use std::os::unix::process::CommandExt;
    let err = Command::new(program).args(args).stdin(input).exec();
    eprintln!("sampler-cc: cannot run {}: {err}", program.display());
    ExitCode::from(1)
}

fn run(program: &Path, args: &[String]) -> ExitCode {
    match Command::new(program).args(args).status() {
        Ok(status) => match status.code() {
            Some(code) => ExitCode::from(code.clamp(0, 255) as u8),
            None => {
                eprintln!("sampler-cc: {} died: {status}", program.display());
                ExitCode::from(1)
            }
        },
        Err(err) => {
            eprintln!("sampler-cc: cannot run {}: {err}", program.display());
            ExitCode::from(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn finds_the_input() {
        let args = strings(&[
            "-fpreprocessed",
            "/tmp/cc1.i",
            "-quiet",
            "-dumpbase",
            "x.c",
            "-O2",
            "-o",
            "/tmp/x.s",
        ]);
        assert_eq!(input_index(&args), Some(1));
        assert_eq!(
            input_index(&strings(&["-fpreprocessed", "-", "-o", "x.s"])),
            None
        );
        assert_eq!(input_index(&strings(&["a.i", "b.i"])), None);
    }

    #[test]
    fn the_inlining_limit_grows_by_the_wrapper_at_o2_and_o3_only() {
        let gcc12 = Path::new("/usr/lib/gcc/x86_64-linux-gnu/12/cc1");
        let allowance = |args: &[&str]| inline_allowance(&strings(args), gcc12);
        assert_eq!(
            allowance(&["-quiet", "x.i", "-O2"]).as_deref(),
            Some("--param=max-inline-insns-auto=23")
        );
        assert_eq!(
            allowance(&["-O1", "-O3"]).as_deref(),
            Some("--param=max-inline-insns-auto=38")
        );
        assert_eq!(
            allowance(&["-Ofast"]).as_deref(),
            Some("--param=max-inline-insns-auto=38")
        );
        for args in [
            &["-O2", "-Os"][..],
            &["-O2", "-O0"],
            &["-Og"],
            &["-O"],
            &[],
            &["-O2", "--param=max-inline-insns-auto=40"],
            &["-O3", "--param", "max-inline-insns-auto=40"],
        ] {
            assert_eq!(allowance(args), None, "{args:?}");
        }
        let upstream = Path::new("/opt/gcc/lib/gcc/x86_64-pc-linux-gnu/13.2.0/cc1");
        assert_eq!(
            inline_allowance(&strings(&["-O2"]), upstream).as_deref(),
            Some("--param=max-inline-insns-auto=23")
        );
        for old in ["/usr/lib/gcc/x86_64-linux-gnu/9/cc1", "/usr/local/bin/cc1"] {
            assert_eq!(inline_allowance(&strings(&["-O2"]), Path::new(old)), None);
        }
    }

    #[test]
    fn code_hoisting_is_off_unless_the_command_sets_it_or_gcc_is_older_than_8() {
        let gcc12 = Path::new("/usr/lib/gcc/x86_64-linux-gnu/12/cc1");
        let hoisting = |args: &[&str], real: &Path| no_code_hoisting(&strings(args), real);
        assert_eq!(
            hoisting(&["-quiet", "x.i", "-O2"], gcc12).as_deref(),
            Some("-fno-code-hoisting")
        );
        assert_eq!(
            hoisting(&["-O0"], Path::new("/usr/lib/gcc/x86_64-linux-gnu/8/cc1")).as_deref(),
            Some("-fno-code-hoisting")
        );
        assert_eq!(hoisting(&["-O2", "-fcode-hoisting"], gcc12), None);
        assert_eq!(hoisting(&["-fno-code-hoisting", "-O3"], gcc12), None);
        for old in ["/usr/lib/gcc/x86_64-linux-gnu/7/cc1", "/usr/local/bin/cc1"] {
            assert_eq!(hoisting(&["-O2"], Path::new(old)), None);
        }
    }
}
