//! sampler-cc's own command-line flags, which it removes before gcc sees
//! the command. The driver hands them to its `cc1` stage through the
//! environment ([`ENV_OPTIONS`]), where they are parsed again.

use sampler_formats::Scheme;

/// Environment variable carrying the sampler flags to the `cc1` stage, one
/// per line.
pub const ENV_OPTIONS: &str = "SAMPLER_CC_OPTIONS";

/// The schemes sampler-cc instruments, in the order the original ran them
/// (which is the order of a unit's tables).
pub const SUPPORTED_SCHEMES: [Scheme; 8] = [
    Scheme::ScalarPairs,
    Scheme::Atoms,
    Scheme::Branches,
    Scheme::Bounds,
    Scheme::FunctionEntries,
    Scheme::Returns,
    Scheme::FloatKinds,
    Scheme::GObjectUnref,
];

/// Schemes used when no `-fsampler-scheme=` is given.
pub const DEFAULT_SCHEMES: [Scheme; 2] = [Scheme::Branches, Scheme::Returns];

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// In the fixed order of [`SUPPORTED_SCHEMES`], each once.
    pub schemes: Vec<Scheme>,
    /// `-fsample` (default) / `-fno-sample`.
    pub sample: bool,
    /// Sampled code gets fast and slow copies of its regions
    /// (`-fclone-regions`, default); with `-fno-clone-regions` every site
    /// keeps its own countdown check.
    pub clone_regions: bool,
    /// In cloned regions, each execution of a region is one event of the
    /// countdown and its instrumented copy observes all its sites
    /// (`-fsample-regions`, default); with `-fsample-sites` each site's
    /// event is one.
    pub sample_regions: bool,
    /// With `sample_regions`, a small innermost loop without calls is one
    /// region for its whole execution (`-fsample-whole-loops`), instead of
    /// one per iteration (default).
    pub sample_whole_loops: bool,
    /// With `sample_regions`, a small innermost loop without calls runs
    /// per iteration for its first [`WARM_EXECUTIONS`] executions in the
    /// process, then as one event per execution (`-fsample-warm-loops`;
    /// off by default).
    pub sample_warm_loops: bool,
    /// With `sample_regions`, a function runs per region for its first
    /// [`WARM_EXECUTIONS`] calls in the process, then its plain body with
    /// one event per call (`-fsample-warm-functions`, default).
    pub sample_warm_functions: bool,
    /// With `sample_regions`, a loop region's FAST iterations run in a
    /// loop of their own, without the draw's call (`-fsample-split-loops`,
    /// default).
    pub sample_split_loops: bool,
    /// With `sample_split_loops`, a loop that counts a local integer by
    /// one towards a bound bounds its FAST loop by that variable, so that
    /// FAST tests only it (`-fsample-counted-loops`, default).
    pub sample_counted_loops: bool,
    /// With `sample_counted_loops`, a small counted `for` loop that ends
    /// within the countdown takes its events at once and runs as the
    /// user's loop (`-fsample-counted-plain-loops`, default).
    pub sample_counted_plain_loops: bool,
    /// With `sample_split_loops`, a small loop that is not counted runs
    /// its unsampled iterations four to a decrement of the countdown
    /// (`-fsample-unrolled-loops`, default).
    pub sample_unrolled_loops: bool,
    /// With `sample_regions`, a run of statements or an innermost loop's
    /// iteration may hold calls that use the countdown, its event then
    /// taken from the global countdown (`-fsample-across-calls`, default).
    pub sample_across_calls: bool,
    /// With `sample_across_calls`, the iteration of a loop with loops
    /// inside is one region, its inner loops' events its own
    /// (`-fsample-nested-loops`, default).
    pub sample_nested_loops: bool,
    /// With `sample_nested_loops`, a run of statements may hold small
    /// innermost loops, one event for its own sites, the loops'
    /// iterations events of their own (`-fsample-nested-runs`, default).
    pub sample_nested_runs: bool,
    /// With `sample_regions`, a function whose sites all lie in one run
    /// of its whole body keeps its SLOW copy in a function of its own
    /// (`-fsample-outlined-functions`, default).
    pub sample_outlined_functions: bool,
    /// Sampled, gcc's limit on inlining functions not declared `inline`
    /// is raised by what sampling adds to a function's size
    /// (`-fsample-inline-allowance`; off by default: 0.7% fewer
    /// instructions on the sqlite3 shell for 12% more compile time;
    /// cc1.rs).
    pub inline_allowance: bool,
    /// With `clone_regions`, sampled units are compiled with gcc's
    /// `-fno-code-hoisting`, unless the command sets it
    /// (`-fsample-unhoisted-copies`; off by default: fewer instructions,
    /// but not less CPU time; cc1.rs says why).
    pub unhoisted_copies: bool,
    /// Sampled `scalar-pairs` observations call the unit's pair helper,
    /// which compares the two values and counts (`-fsample-pair-helpers`,
    /// default: a quarter less compile time, a few instructions more per
    /// observation).
    pub pair_helpers: bool,
    /// Atomic counter increments (`-fthreads`, implied by `-pthread`).
    pub threads: bool,
    pub relative_paths: bool,
    pub strict: bool,
    pub filters: Vec<Filter>,
    /// Link the static runtime (`-fsampler-static-runtime`, implied by `-static`).
    pub static_runtime: bool,
    /// How instrumented code reaches the thread's countdown
    /// (`-fsampler-tls-model=`).
    pub tls_model: TlsModel,
    /// Print per-file site counts and timings (`-fsampler-stats`).
    pub stats: bool,
    /// `scalar-pairs` also compares with every integer constant of the
    /// unit (`-fcompare-constants`).
    pub compare_constants: bool,
    /// `scalar-pairs` also compares with locals that may be unset at the
    /// assignment, `local-uninit` (`-fcompare-uninitialized`; the
    /// original's default, off here: reading them loses gcc's own
    /// `-Wmaybe-uninitialized` about the user's reads).
    pub compare_uninitialized: bool,
    /// Assignments to struct fields (`-fassign-into-field`), array
    /// elements (`-fassign-into-index`) and through pointers
    /// (`-fassign-across-pointer`) are sites of the assignment schemes.
    pub assign_into_field: bool,
    pub assign_into_index: bool,
    pub assign_across_pointer: bool,
    /// `-ftimestamp-first` / `-ftimestamp-last`.
    pub timestamp_first: bool,
    pub timestamp_last: bool,
    /// `-fsampler-rates=FILE`: each site's countdown scale from a rates
    /// file (`schema/rates-format.md`); the driver makes the path absolute
    /// for the `cc1` stage.
    pub rates: Option<String>,
    /// The flags as given, to pass on to the `cc1` stage.
    pub given: Vec<String>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            schemes: Vec::new(),
            sample: true,
            clone_regions: true,
            sample_regions: true,
            sample_whole_loops: false,
            sample_warm_loops: false,
            sample_warm_functions: true,
            sample_split_loops: true,
            sample_counted_loops: true,
            sample_counted_plain_loops: true,
            sample_unrolled_loops: true,
            sample_across_calls: true,
            sample_nested_loops: true,
            sample_nested_runs: true,
            sample_outlined_functions: true,
            inline_allowance: false,
            unhoisted_copies: false,
            pair_helpers: true,
            threads: false,
            relative_paths: false,
            strict: false,
            filters: Vec::new(),
            static_runtime: false,
            tls_model: TlsModel::Auto,
            stats: false,
            compare_constants: false,
            compare_uninitialized: false,
            assign_into_field: false,
            assign_into_index: false,
            assign_across_pointer: false,
            timestamp_first: false,
            timestamp_last: false,
            rates: None,
            given: Vec::new(),
        }
    }
}

/// How instrumented code reaches the runtime's thread-local countdown
/// (`-fsampler-tls-model=`; ARCHITECTURE.md, "The countdown in the
/// executable").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsModel {
    /// Local-exec unless the unit is compiled for a shared object
    /// ([`TlsModel::resolve`]; the driver sets initial-exec for commands
    /// that link with `-shared` or `-r`).
    Auto,
    /// The unit defines the countdown weakly and reaches it at a constant
    /// offset from the thread pointer: one `sub` on `%fs:OFFSET`. Valid in
    /// executables only, where the linker gives the executable's TLS block
    /// a fixed place; the executable's definition is then the one the
    /// shared runtime and instrumented shared objects use too.
    LocalExec,
    /// The unit reaches the countdown through a GOT entry holding its
    /// offset from the thread pointer, as the runtime defines it: valid in
    /// shared objects too, one register held for the offset per function.
    InitialExec,
}

impl TlsModel {
    const NAMES: [(&'static str, TlsModel); 3] = [
        ("auto", TlsModel::Auto),
        ("local-exec", TlsModel::LocalExec),
        ("initial-exec", TlsModel::InitialExec),
    ];

    /// The model for a unit compiled by a cc1 with `cc1_args`: `Auto`
    /// becomes initial-exec when the last of `-fpic`, `-fPIC`, `-fpie`,
    /// `-fPIE`, `-fno-pic` and `-fno-PIC` is `-fpic` or `-fPIC` (code for a
    /// shared object; `-fno-pie` leaves gcc's `-fpic` as it is), else
    /// local-exec (gcc's default, `-fpie`, or no position independence:
    /// code for an executable).
    pub fn resolve(self, cc1_args: &[String]) -> TlsModel {
        if self != TlsModel::Auto {
            return self;
        }
        let mut shared_code = false;
        for arg in cc1_args {
            match arg.as_str() {
                "-fpic" | "-fPIC" => shared_code = true,
                "-fpie" | "-fPIE" | "-fno-pic" | "-fno-PIC" => shared_code = false,
                _ => {}
            }
        }
        if shared_code {
            TlsModel::InitialExec
        } else {
            TlsModel::LocalExec
        }
    }

    fn parse(value: &str) -> Result<TlsModel, OptionError> {
        Self::NAMES
            .iter()
            .find(|(name, _)| *name == value)
            .map(|&(_, model)| model)
            .ok_or_else(|| OptionError::BadTlsModel(value.into()))
    }
}

/// The executions of a loop (in the process, every thread together) that
/// `-fsample-warm-loops` keeps per iteration before it samples the loop's
/// executions whole: about the usual sparsity, so that a loop executed
/// that often in a run is observed in it with probability at least about
/// 1 − e^(−iterations), as per iteration.
pub const WARM_EXECUTIONS: u32 = 1024;

/// One `-finclude-*` / `-fexclude-*` rule. The first rule that matches a
/// site decides; a site no rule matches is included.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filter {
    pub include: bool,
    pub target: FilterTarget,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FilterTarget {
    Function(String),
    File(String),
    Location { file: String, line: u32 },
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum OptionError {
    #[error("unknown scheme {0:?} in -fsampler-scheme= (known: {1})")]
    UnknownScheme(String, String),
    #[error("scheme {0:?} is not implemented by this sampler-cc yet (available: {1})")]
    UnsupportedScheme(String, String),
    #[error("{0}: expected FILE:LINE with a decimal LINE, found {1:?}")]
    BadLocation(&'static str, String),
    #[error(
        "-fsampler-tls-model={0}: expected auto, local-exec (executables only) or initial-exec"
    )]
    BadTlsModel(String),
    #[error("{0} needs a value")]
    Empty(String),
    #[error("unknown sampler flag {0}")]
    Unknown(String),
}

/// One of sampler-cc's flags: how it is parsed ([`Options::apply`]) and
/// shown (`sampler-cc --sampler-help`), from the one table [`FLAGS`].
#[derive(Debug, Clone, Copy)]
pub enum Flag {
    /// A flag alone (`-fsample`).
    Switch {
        name: &'static str,
        set: fn(&mut Options),
    },
    /// A flag with a value (`-fsampler-scheme=NAME`): `prefix` ends with
    /// `=`, `value` names the value in the help.
    Valued {
        prefix: &'static str,
        value: &'static str,
        set: fn(&mut Options, &str) -> Result<(), OptionError>,
    },
}

impl Flag {
    /// `Some(value)` (empty for a switch) when `arg` is this flag.
    pub fn matches<'a>(&self, arg: &'a str) -> Option<&'a str> {
        match self {
            Flag::Switch { name, .. } => (arg == *name).then_some(""),
            Flag::Valued { prefix, .. } => arg.strip_prefix(prefix),
        }
    }

    /// The flag as the help shows it.
    pub fn synopsis(&self) -> String {
        match self {
            Flag::Switch { name, .. } => (*name).to_owned(),
            Flag::Valued { prefix, value, .. } => format!("{prefix}{value}"),
        }
    }
}

/// Flags that mean one thing, with its explanation; in `meaning`,
/// `{schemes}` and `{default}` stand for the supported and default schemes.
#[derive(Debug)]
pub struct FlagGroup {
    pub flags: &'static [Flag],
    pub meaning: &'static str,
}

const fn switch(name: &'static str, set: fn(&mut Options)) -> Flag {
    Flag::Switch { name, set }
}

const fn valued(
    prefix: &'static str,
    value: &'static str,
    set: fn(&mut Options, &str) -> Result<(), OptionError>,
) -> Flag {
    Flag::Valued { prefix, value, set }
}

/// Every sampler-cc flag: the parser and the help both read this table.
/// Any other `-fsampler-...` is an error rather than a gcc flag.
pub const FLAGS: &[FlagGroup] = &[
    FlagGroup {
        flags: &[valued("-fsampler-scheme=", "NAME", |o, v| o.add_scheme(v))],
        meaning: "instrument this scheme (repeatable): {schemes}, or all of them; default {default}",
    },
    FlagGroup {
        flags: &[
            switch("-fassign-into-field", |o| o.assign_into_field = true),
            switch("-fno-assign-into-field", |o| o.assign_into_field = false),
            switch("-fassign-into-index", |o| o.assign_into_index = true),
            switch("-fno-assign-into-index", |o| o.assign_into_index = false),
            switch("-fassign-across-pointer", |o| {
                o.assign_across_pointer = true
            }),
            switch("-fno-assign-across-pointer", |o| {
                o.assign_across_pointer = false
            }),
        ],
        meaning: "the assignment schemes (scalar-pairs, bounds, float-kinds) also observe \
                  assignments to struct fields, array elements, and memory reached through a \
                  pointer (default: whole named variables only)",
    },
    FlagGroup {
        flags: &[
            switch("-fcompare-constants", |o| o.compare_constants = true),
            switch("-fno-compare-constants", |o| o.compare_constants = false),
        ],
        meaning: "scalar-pairs also compares with every integer literal of the unit's \
                  instrumented functions (default: only 0, or null)",
    },
    FlagGroup {
        flags: &[
            switch("-fcompare-uninitialized", |o| {
                o.compare_uninitialized = true
            }),
            switch("-fno-compare-uninitialized", |o| {
                o.compare_uninitialized = false
            }),
        ],
        meaning: "scalar-pairs also compares with locals that may be unset at the assignment \
                  (kind local-uninit; default: only locals set on every path, since reading \
                  the others can hide gcc's -Wmaybe-uninitialized)",
    },
    FlagGroup {
        flags: &[
            switch("-ftimestamp-first", |o| o.timestamp_first = true),
            switch("-fno-timestamp-first", |o| o.timestamp_first = false),
            switch("-ftimestamp-last", |o| o.timestamp_last = true),
            switch("-fno-timestamp-last", |o| o.timestamp_last = false),
        ],
        meaning: "record the logical time of each site's first / last observation \
                  (<timestamps> sections; read them with resolve-timestamps)",
    },
    FlagGroup {
        flags: &[
            switch("-fsample", |o| o.sample = true),
            switch("-fno-sample", |o| o.sample = false),
        ],
        meaning: "sampled counting through the runtime's countdown (default), or count every \
                  event",
    },
    FlagGroup {
        flags: &[
            switch("-fclone-regions", |o| o.clone_regions = true),
            switch("-fno-clone-regions", |o| o.clone_regions = false),
        ],
        meaning: "sampled builds: fast and slow copies of regions with the countdown in a \
                  local (default), or one countdown check per site (slower; for comparison)",
    },
    FlagGroup {
        flags: &[
            switch("-fsample-regions", |o| o.sample_regions = true),
            switch("-fsample-sites", |o| o.sample_regions = false),
        ],
        meaning: "cloned regions: each execution of a region (a run of statements, one loop \
                  iteration, a condition) is one random decision of the countdown, whose \
                  instrumented copy then observes all its sites (default), or each site's event \
                  is one (as the original; slower); sites outside regions are one decision each",
    },
    FlagGroup {
        flags: &[
            switch("-fsample-split-loops", |o| o.sample_split_loops = true),
            switch("-fno-sample-split-loops", |o| o.sample_split_loops = false),
        ],
        meaning: "with -fsample-regions: a loop region's unsampled iterations run in a loop of \
                  their own, left for the runtime's draw when the countdown runs out (the loop \
                  then holds no call; default), or one loop holds both copies",
    },
    FlagGroup {
        flags: &[
            switch("-fsample-counted-loops", |o| o.sample_counted_loops = true),
            switch("-fno-sample-counted-loops", |o| {
                o.sample_counted_loops = false
            }),
        ],
        meaning: "with -fsample-split-loops: a loop that counts a local integer by one towards \
                  a bound the loop does not change (`for (; i < n; i++)`, `while (n--)`, \
                  `do ... while (--n)`) runs its unsampled iterations up to a limit on that \
                  variable computed once, so that they test nothing else (default), or each \
                  tests the countdown too; the same iterations are sampled either way",
    },
    FlagGroup {
        flags: &[
            switch("-fsample-counted-plain-loops", |o| {
                o.sample_counted_plain_loops = true
            }),
            switch("-fno-sample-counted-plain-loops", |o| {
                o.sample_counted_plain_loops = false
            }),
        ],
        meaning: "with -fsample-counted-loops: a small counted `for` loop (no jump out, no \
                  label, no loop inside) whose iterations left all fall within the countdown \
                  takes their events at once and runs them as the user's own loop, its \
                  condition as written, so that gcc compiles it as the plain loop (default), or \
                  runs them up to a limit computed from the countdown, decrementing it; the \
                  same iterations are sampled either way",
    },
    FlagGroup {
        flags: &[
            switch("-fsample-unrolled-loops", |o| {
                o.sample_unrolled_loops = true
            }),
            switch("-fno-sample-unrolled-loops", |o| {
                o.sample_unrolled_loops = false
            }),
        ],
        meaning: "with -fsample-split-loops: a small loop that is not counted and holds no \
                  jump out of it runs its unsampled iterations four to one decrement of the \
                  countdown, the iterations it did not run given back when it ends (default), \
                  or one decrement per iteration; the same iterations are sampled either way",
    },
    FlagGroup {
        flags: &[
            switch("-fsample-across-calls", |o| o.sample_across_calls = true),
            switch("-fno-sample-across-calls", |o| {
                o.sample_across_calls = false
            }),
        ],
        meaning: "with -fsample-regions: a run of statements may hold calls to functions with \
                  sites, one event for the run's execution taken from the thread's countdown \
                  (default), or such calls end runs, whose events then keep the countdown in a \
                  local",
    },
    FlagGroup {
        flags: &[
            switch("-fsample-nested-loops", |o| o.sample_nested_loops = true),
            switch("-fno-sample-nested-loops", |o| {
                o.sample_nested_loops = false
            }),
        ],
        meaning: "with -fsample-across-calls: the iteration of a loop with loops inside is one \
                  event, the inner loops' iterations events of their own (default), or the \
                  outer loop's condition, step and runs are events each",
    },
    FlagGroup {
        flags: &[
            switch("-fsample-nested-runs", |o| o.sample_nested_runs = true),
            switch("-fno-sample-nested-runs", |o| o.sample_nested_runs = false),
        ],
        meaning: "with -fsample-nested-loops: a run of statements holding small innermost \
                  loops is one event for its own sites, the loops' iterations events of their \
                  own (default), or the loops end runs",
    },
    FlagGroup {
        flags: &[
            switch("-fsample-outlined-functions", |o| {
                o.sample_outlined_functions = true
            }),
            switch("-fno-sample-outlined-functions", |o| {
                o.sample_outlined_functions = false
            }),
        ],
        meaning: "with -fsample-regions: a function whose sites all lie in one run of its \
                  whole body calls its SLOW copy, a function of its own (F__cbi_slow, cold and \
                  never inlined), when its event is sampled, so that F itself is small enough \
                  to inline (default), or holds both copies",
    },
    FlagGroup {
        flags: &[
            switch("-fsample-inline-allowance", |o| o.inline_allowance = true),
            switch("-fno-sample-inline-allowance", |o| {
                o.inline_allowance = false
            }),
        ],
        meaning: "sampled at -O2, -O3 or -Ofast: gcc's limit on inlining functions not \
                  declared inline (--param=max-inline-insns-auto) is raised by the size of the \
                  test and call sampling adds to a function, unless the command sets it \
                  (about 0.7% faster, about 12% longer to compile), or left at gcc's default \
                  (default)",
    },
    FlagGroup {
        flags: &[
            switch("-fsample-unhoisted-copies", |o| o.unhoisted_copies = true),
            switch("-fno-sample-unhoisted-copies", |o| {
                o.unhoisted_copies = false
            }),
        ],
        meaning: "with -fsample-regions: the unit is compiled with gcc's -fno-code-hoisting \
                  (unless the command sets it), so that gcc does not move what a region's FAST \
                  and SLOW copies both compute above the test that chooses between them (fewer \
                  instructions, not less CPU time); or with gcc's code hoisting (default)",
    },
    FlagGroup {
        flags: &[
            switch("-fsample-pair-helpers", |o| o.pair_helpers = true),
            switch("-fno-sample-pair-helpers", |o| o.pair_helpers = false),
        ],
        meaning: "sampled scalar-pairs: each observation is one call of the unit's helper with \
                  the two values, which compares and counts (default; about a quarter less \
                  compile time, a few instructions more per observation); or the comparison \
                  written in place at each candidate",
    },
    FlagGroup {
        flags: &[
            switch("-fsample-whole-loops", |o| o.sample_whole_loops = true),
            switch("-fno-sample-whole-loops", |o| o.sample_whole_loops = false),
        ],
        meaning: "with -fsample-regions: a small innermost loop without calls is one decision \
                  for its whole execution, every iteration observed when it is sampled (its \
                  fast copy is the plain loop), or one per iteration (default: a loop run once \
                  per run with many iterations is then seen in more runs)",
    },
    FlagGroup {
        flags: &[
            switch("-fsample-warm-loops", |o| o.sample_warm_loops = true),
            switch("-fno-sample-warm-loops", |o| o.sample_warm_loops = false),
        ],
        meaning: "with -fsample-regions: a small innermost loop without calls, gotos or \
                  returns runs one decision per iteration for its first 1024 executions in the \
                  process, then one for each whole execution (its fast copy the plain loop), so \
                  that a loop run few times per run keeps being observed in as many runs; or \
                  one per iteration always (default)",
    },
    FlagGroup {
        flags: &[
            switch("-fsample-warm-functions", |o| {
                o.sample_warm_functions = true
            }),
            switch("-fno-sample-warm-functions", |o| {
                o.sample_warm_functions = false
            }),
        ],
        meaning: "with -fsample-regions: a function samples per region for its first 1024 \
                  calls in the process, then runs its plain body with one decision per call, \
                  every site of a sampled call observed (default); or per region always",
    },
    FlagGroup {
        flags: &[valued("-fsampler-rates=", "FILE", |o, v| {
            o.rates = Some(v.into());
            Ok(())
        })],
        meaning: "sample each site at the rate a rates file gives it (sampler-analyze rates, \
                  sampler-collector rates; schema/rates-format.md): its countdown decrement, and \
                  a region's the smallest of its sites'; sites not in the file (changed units) \
                  keep the uniform rate. Not with -fno-sample or -fsample-sites",
    },
    FlagGroup {
        flags: &[
            switch("-fthreads", |o| o.threads = true),
            switch("-fno-threads", |o| o.threads = false),
        ],
        meaning: "atomic counter increments in -fno-sample builds (implied by -pthread; \
                  sampled builds are always atomic)",
    },
    FlagGroup {
        flags: &[
            valued("-finclude-function=", "F", |o, v| {
                o.add_filter(true, FilterTarget::Function(v.into()))
            }),
            valued("-fexclude-function=", "F", |o, v| {
                o.add_filter(false, FilterTarget::Function(v.into()))
            }),
            valued("-finclude-file=", "FILE", |o, v| {
                o.add_filter(true, FilterTarget::File(v.into()))
            }),
            valued("-fexclude-file=", "FILE", |o, v| {
                o.add_filter(false, FilterTarget::File(v.into()))
            }),
            valued("-finclude-location=", "FILE:LINE", |o, v| {
                o.add_filter(true, location("-finclude-location", v)?)
            }),
            valued("-fexclude-location=", "FILE:LINE", |o, v| {
                o.add_filter(false, location("-fexclude-location", v)?)
            }),
        ],
        meaning: "which sites to keep: the first rule that matches a site decides, * matches \
                  any text, and a site no rule matches is kept. Files match as gcc names them \
                  or made absolute. -finclude-function=foo -fexclude-function='*' keeps only \
                  foo",
    },
    FlagGroup {
        flags: &[
            switch("-frelative-paths", |o| o.relative_paths = true),
            switch("-fno-relative-paths", |o| o.relative_paths = false),
        ],
        meaning: "file names in site tables as gcc gives them (default: absolute)",
    },
    FlagGroup {
        flags: &[switch("-fsampler-strict", |o| o.strict = true)],
        meaning: "a file that cannot be instrumented is an error (default: it is compiled as \
                  is, with one warning)",
    },
    FlagGroup {
        flags: &[switch("-fsampler-static-runtime", |o| {
            o.static_runtime = true
        })],
        meaning: "link libsampler_runtime.a instead of the shared runtime (implied by -static)",
    },
    FlagGroup {
        flags: &[valued("-fsampler-tls-model=", "MODEL", |o, v| {
            o.tls_model = TlsModel::parse(v)?;
            Ok(())
        })],
        meaning: "how instrumented code reaches the thread's countdown: local-exec, at a \
                  constant offset from the thread pointer, each file defining it weakly (for \
                  executables only: a shared object with such code does not link); \
                  initial-exec, through the GOT, as the runtime defines it; or auto (default): \
                  initial-exec for files compiled with -fpic or -fPIC or in a command that \
                  links with -shared or -r, else local-exec",
    },
    FlagGroup {
        flags: &[switch("-fsampler-stats", |o| o.stats = true)],
        meaning: "print each file's function and site counts, the regions cloned and those \
                  that fell back, and the instrumenter's time",
    },
];

/// The flags of [`FLAGS`], in order.
pub fn all_flags() -> impl Iterator<Item = &'static Flag> {
    FLAGS.iter().flat_map(|group| group.flags)
}

/// The prefix of flags that are sampler-cc's even when unknown (and then
/// an error rather than a gcc flag).
const RESERVED_PREFIX: &str = "-fsampler-";

fn location(flag: &'static str, value: &str) -> Result<FilterTarget, OptionError> {
    let bad = || OptionError::BadLocation(flag, value.into());
    let (file, line) = value.rsplit_once(':').ok_or_else(bad)?;
    let line = line.parse().map_err(|_| bad())?;
    Ok(FilterTarget::Location {
        file: file.into(),
        line,
    })
}

/// sampler-cc's part of `--help`: its flags, generated from [`FLAGS`].
pub fn flags_help() -> String {
    const WIDTH: usize = 79;
    const COLUMN: usize = 30;
    let mut text =
        String::from("sampler-cc's own flags (it removes them before gcc sees the command):\n");
    for group in FLAGS {
        let meaning = group
            .meaning
            .replace("{schemes}", &names(&SUPPORTED_SCHEMES))
            .replace("{default}", &names(&DEFAULT_SCHEMES).replace(", ", " and "));
        let synopses: Vec<String> = group.flags.iter().map(Flag::synopsis).collect();
        let mut line = String::from(" ");
        for synopsis in &synopses {
            if line.len() > 1 && line.len() + 2 + synopsis.len() > WIDTH {
                text.push_str(&line);
                text.push('\n');
                line = String::from(" ");
            }
            line.push(' ');
            line.push_str(synopsis);
            line.push(',');
        }
        let line = line.trim_end_matches(',').to_owned();
        let mut current = if line.len() + 1 < COLUMN {
            format!("{line:COLUMN$}")
        } else {
            text.push_str(&line);
            text.push('\n');
            " ".repeat(COLUMN)
        };
        for word in meaning.split_whitespace() {
            if current.len() > COLUMN && current.len() + 1 + word.len() > WIDTH {
                text.push_str(&current);
                text.push('\n');
                current = " ".repeat(COLUMN);
            }
            if current.len() > COLUMN {
                current.push(' ');
            }
            current.push_str(word);
        }
        text.push_str(&current);
        text.push('\n');
    }
    text.push_str(&format!(
        "  Any other {RESERVED_PREFIX}... is an error. Every other argument goes to gcc.\n"
    ));
    text
}

impl Options {
    /// Whether `arg` is one of sampler-cc's flags (which gcc must not see).
    pub fn is_sampler_flag(arg: &str) -> bool {
        arg.starts_with(RESERVED_PREFIX) || all_flags().any(|flag| flag.matches(arg).is_some())
    }

    /// Applies one sampler flag.
    pub fn apply(&mut self, arg: &str) -> Result<(), OptionError> {
        self.given.push(arg.to_owned());
        for flag in all_flags() {
            match (flag, flag.matches(arg)) {
                (_, None) => {}
                (Flag::Switch { set, .. }, Some(_)) => {
                    set(self);
                    return Ok(());
                }
                (Flag::Valued { prefix, set, .. }, Some(value)) => {
                    if value.is_empty() {
                        return Err(OptionError::Empty(prefix.trim_end_matches('=').into()));
                    }
                    return set(self, value);
                }
            }
        }
        Err(OptionError::Unknown(arg.into()))
    }

    fn add_scheme(&mut self, value: &str) -> Result<(), OptionError> {
        let available = || names(&SUPPORTED_SCHEMES);
        let chosen: &[Scheme] = match Scheme::from_name(value) {
            _ if value == "all" => &SUPPORTED_SCHEMES,
            Some(scheme) if SUPPORTED_SCHEMES.contains(&scheme) => &[scheme],
            Some(_) => return Err(OptionError::UnsupportedScheme(value.into(), available())),
            None => return Err(OptionError::UnknownScheme(value.into(), available())),
        };
        for &scheme in chosen {
            if !self.schemes.contains(&scheme) {
                self.schemes.push(scheme);
            }
        }
        Ok(())
    }

    fn add_filter(&mut self, include: bool, target: FilterTarget) -> Result<(), OptionError> {
        self.filters.push(Filter { include, target });
        Ok(())
    }

    /// The schemes to instrument, in their fixed order.
    pub fn active_schemes(&self) -> Vec<Scheme> {
        let chosen: &[Scheme] = if self.schemes.is_empty() {
            &DEFAULT_SCHEMES
        } else {
            &self.schemes
        };
        SUPPORTED_SCHEMES
            .iter()
            .filter(|scheme| chosen.contains(scheme))
            .copied()
            .collect()
    }

    /// Whether a site at (file, line) in `function` is instrumented.
    /// `files` are the names the site's file is known by (as gcc wrote it,
    /// and absolute).
    pub fn includes(&self, function: &str, files: &[&str], line: u32) -> bool {
        for rule in &self.filters {
            let matched = match &rule.target {
                FilterTarget::Function(pattern) => wildcard_match(pattern, function),
                FilterTarget::File(pattern) => {
                    files.iter().any(|file| wildcard_match(pattern, file))
                }
                FilterTarget::Location { file, line: wanted } => {
                    *wanted == line && files.iter().any(|name| wildcard_match(file, name))
                }
            };
            if matched {
                return rule.include;
            }
        }
        true
    }

    /// Checks `-fsampler-rates=FILE` against the other flags and reads the
    /// file (an error names it, and the line), then names it by its
    /// absolute path for the `cc1` stage. Rates are refused with
    /// `-fno-sample` (every event is counted: there is nothing to rate) and
    /// with `-fsample-sites` (its fast copies decrement per site, which
    /// scales would have to weigh); `-fno-clone-regions` takes them (every
    /// site keeps its own check, decremented by its scale).
    pub fn prepare_rates(&mut self) -> Result<(), String> {
        let Some(path) = self.rates.clone() else {
            return Ok(());
        };
        if !self.sample {
            return Err(
                "-fsampler-rates cannot be used with -fno-sample, which counts every event".into(),
            );
        }
        if self.clone_regions && !self.sample_regions {
            return Err("-fsampler-rates cannot be used with -fsample-sites (use \
                        -fsample-regions, the default, or -fno-clone-regions)"
                .into());
        }
        read_rates(&path)?;
        let absolute = std::path::absolute(&path)
            .map_err(|err| format!("{path}: {err}"))?
            .to_string_lossy()
            .into_owned();
        let flag = format!("-fsampler-rates={absolute}");
        for given in &mut self.given {
            if given.starts_with("-fsampler-rates=") {
                given.clone_from(&flag);
            }
        }
        self.rates = Some(absolute);
        Ok(())
    }

    /// The flags as the `cc1` stage receives them.
    pub fn to_env(&self) -> String {
        self.given.join("\n")
    }

    pub fn from_env(value: &str) -> Result<Options, OptionError> {
        let mut options = Options::default();
        for arg in value.split('\n').filter(|arg| !arg.is_empty()) {
            options.apply(arg)?;
        }
        Ok(options)
    }
}

/// Reads the rates file at `path`; an error names the file and the line.
pub fn read_rates(path: &str) -> Result<sampler_formats::Rates, String> {
    let file = std::fs::File::open(path).map_err(|err| format!("{path}: {err}"))?;
    sampler_formats::Rates::read(std::io::BufReader::new(file))
        .map_err(|err| format!("{path}: {err}"))
}

fn names(schemes: &[Scheme]) -> String {
    schemes
        .iter()
        .map(|scheme| scheme.name())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Glob matching where `*` stands for any run of characters.
pub fn wildcard_match(pattern: &str, text: &str) -> bool {
    let (pattern, text) = (pattern.as_bytes(), text.as_bytes());
    let (mut p, mut t) = (0, 0);
    let mut backtrack: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() && pattern[p] == b'*' {
            backtrack = Some((p, t));
            p += 1;
        } else if p < pattern.len() && pattern[p] == text[t] {
            p += 1;
            t += 1;
        } else if let Some((star, matched)) = backtrack {
            p = star + 1;
            t = matched + 1;
            backtrack = Some((star, matched + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|&byte| byte == b'*')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Options, OptionError> {
        let mut options = Options::default();
        for arg in args {
            assert!(Options::is_sampler_flag(arg), "{arg}");
            options.apply(arg)?;
        }
        Ok(options)
    }

    #[test]
    fn schemes_keep_their_fixed_order() {
        let options = parse(&[
            "-fsampler-scheme=function-entries",
            "-fsampler-scheme=branches",
            "-fsampler-scheme=branches",
        ])
        .unwrap();
        assert_eq!(
            options.active_schemes(),
            vec![Scheme::Branches, Scheme::FunctionEntries]
        );
        assert_eq!(
            parse(&[]).unwrap().active_schemes(),
            vec![Scheme::Branches, Scheme::Returns]
        );
    }

    #[test]
    fn all_names_every_scheme() {
        let options = parse(&["-fsampler-scheme=returns", "-fsampler-scheme=all"]).unwrap();
        assert_eq!(
            options.active_schemes(),
            vec![
                Scheme::ScalarPairs,
                Scheme::Atoms,
                Scheme::Branches,
                Scheme::Bounds,
                Scheme::FunctionEntries,
                Scheme::Returns,
                Scheme::FloatKinds,
                Scheme::GObjectUnref,
            ]
        );
    }

    #[test]
    fn bad_flags_are_named() {
        assert_eq!(
            parse(&["-fsampler-scheme=brunches"])
                .unwrap_err()
                .to_string(),
            "unknown scheme \"brunches\" in -fsampler-scheme= (known: scalar-pairs, atoms, branches, \
             bounds, function-entries, returns, float-kinds, g-object-unref)"
        );
        assert!(matches!(
            parse(&["-fsampler-scheme=coverage"]),
            Err(OptionError::UnsupportedScheme(..))
        ));
        assert_eq!(
            parse(&["-fexclude-location=a.c:x"]).unwrap_err(),
            OptionError::BadLocation("-fexclude-location", "a.c:x".into())
        );
        assert!(matches!(
            parse(&["-fsampler-bogus"]),
            Err(OptionError::Unknown(_))
        ));
        assert!(!Options::is_sampler_flag("-fsanitize=address"));
        assert!(!Options::is_sampler_flag("-fsampling"));
    }

    #[test]
    fn first_matching_filter_wins() {
        let options = parse(&[
            "-fexclude-location=lib.c:7",
            "-finclude-function=foo",
            "-fexclude-function=*",
        ])
        .unwrap();
        assert!(options.includes("foo", &["lib.c"], 6));
        assert!(!options.includes("foo", &["lib.c"], 7));
        assert!(!options.includes("bar", &["lib.c"], 6));
        let files = parse(&["-fexclude-file=*/gen/*.c"]).unwrap();
        assert!(!files.includes("f", &["gen/x.c", "/src/gen/x.c"], 1));
        assert!(files.includes("f", &["x.c", "/src/x.c"], 1));
    }

    #[test]
    fn wildcards() {
        assert!(wildcard_match("*", ""));
        assert!(wildcard_match("a*c", "abbbc"));
        assert!(wildcard_match("*.c", "dir/x.c"));
        assert!(!wildcard_match("a*c", "abcd"));
        assert!(wildcard_match("a**", "a"));
        assert!(!wildcard_match("x", "xy"));
    }

    #[test]
    fn the_tls_model_follows_the_code_gcc_makes() {
        let resolve = |model: TlsModel, args: &[&str]| {
            model.resolve(&args.iter().map(|a| a.to_string()).collect::<Vec<_>>())
        };
        let local = TlsModel::LocalExec;
        let initial = TlsModel::InitialExec;
        assert_eq!(resolve(TlsModel::Auto, &["-O2", "x.i"]), local);
        assert_eq!(resolve(TlsModel::Auto, &["-fPIC", "-O2"]), initial);
        assert_eq!(resolve(TlsModel::Auto, &["-fpic"]), initial);
        assert_eq!(resolve(TlsModel::Auto, &["-fPIC", "-fPIE"]), local);
        assert_eq!(resolve(TlsModel::Auto, &["-fPIE", "-fpic"]), initial);
        assert_eq!(resolve(TlsModel::Auto, &["-fPIC", "-fno-PIC"]), local);
        assert_eq!(resolve(TlsModel::Auto, &["-fPIC", "-fno-pie"]), initial);
        assert_eq!(resolve(TlsModel::Auto, &["-fno-pie"]), local);
        assert_eq!(resolve(initial, &["-O2"]), initial);
        assert_eq!(resolve(local, &["-fPIC"]), local);

        let given = parse(&["-fsampler-tls-model=initial-exec"]).unwrap();
        assert_eq!(given.tls_model, initial);
        assert_eq!(
            parse(&[
                "-fsampler-tls-model=initial-exec",
                "-fsampler-tls-model=auto"
            ])
            .unwrap()
            .tls_model,
            TlsModel::Auto
        );
        assert_eq!(
            parse(&["-fsampler-tls-model=global-dynamic"]).unwrap_err(),
            OptionError::BadTlsModel("global-dynamic".into())
        );
        assert_eq!(
            OptionError::BadTlsModel("x".into()).to_string(),
            "-fsampler-tls-model=x: expected auto, local-exec (executables only) or initial-exec"
        );
    }

    #[test]
    fn round_trip_through_the_environment() {
        let options = parse(&[
            "-fno-sample",
            "-finclude-file=a.c",
            "-fsampler-strict",
            "-fsampler-tls-model=local-exec",
        ])
        .unwrap();
        assert_eq!(Options::from_env(&options.to_env()).unwrap(), options);
    }
}
