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
    /// Atomic counter increments (`-fthreads`, implied by `-pthread`).
    pub threads: bool,
    pub relative_paths: bool,
    pub strict: bool,
    pub filters: Vec<Filter>,
    /// Link the static runtime (`-fsampler-static-runtime`, implied by `-static`).
    pub static_runtime: bool,
    /// Print per-file site counts and timings (`-fsampler-stats`).
    pub stats: bool,
    /// `scalar-pairs` also compares with every integer constant of the
    /// unit (`-fcompare-constants`).
    pub compare_constants: bool,
    /// Assignments to struct fields (`-fassign-into-field`), array
    /// elements (`-fassign-into-index`) and through pointers
    /// (`-fassign-across-pointer`) are sites of the assignment schemes.
    pub assign_into_field: bool,
    pub assign_into_index: bool,
    pub assign_across_pointer: bool,
    /// `-ftimestamp-first` / `-ftimestamp-last`.
    pub timestamp_first: bool,
    pub timestamp_last: bool,
    /// The flags as given, to pass on to the `cc1` stage.
    pub given: Vec<String>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            schemes: Vec::new(),
            sample: true,
            clone_regions: true,
            threads: false,
            relative_paths: false,
            strict: false,
            filters: Vec::new(),
            static_runtime: false,
            stats: false,
            compare_constants: false,
            assign_into_field: false,
            assign_into_index: false,
            assign_across_pointer: false,
            timestamp_first: false,
            timestamp_last: false,
            given: Vec::new(),
        }
    }
}

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
    #[error("{0} needs a value")]
    Empty(String),
    #[error("unknown sampler flag {0}")]
    Unknown(String),
}

impl Options {
    /// Whether `arg` is one of sampler-cc's flags (which gcc must not see).
    pub fn is_sampler_flag(arg: &str) -> bool {
        const EXACT: [&str; 23] = [
            "-fcompare-constants",
            "-fno-compare-constants",
            "-fassign-into-field",
            "-fno-assign-into-field",
            "-fassign-into-index",
            "-fno-assign-into-index",
            "-fassign-across-pointer",
            "-fno-assign-across-pointer",
            "-ftimestamp-first",
            "-fno-timestamp-first",
            "-ftimestamp-last",
            "-fno-timestamp-last",
            "-fsample",
            "-fno-sample",
            "-fclone-regions",
            "-fno-clone-regions",
            "-frelative-paths",
            "-fno-relative-paths",
            "-fthreads",
            "-fno-threads",
            "-fsampler-strict",
            "-fsampler-static-runtime",
            "-fsampler-stats",
        ];
        const PREFIXES: [&str; 7] = [
            "-fsampler-",
            "-finclude-function=",
            "-fexclude-function=",
            "-finclude-file=",
            "-fexclude-file=",
            "-finclude-location=",
            "-fexclude-location=",
        ];
        EXACT.contains(&arg) || PREFIXES.iter().any(|prefix| arg.starts_with(prefix))
    }

    /// Applies one sampler flag.
    pub fn apply(&mut self, arg: &str) -> Result<(), OptionError> {
        self.given.push(arg.to_owned());
        match arg {
            "-fsample" => self.sample = true,
            "-fno-sample" => self.sample = false,
            "-fclone-regions" => self.clone_regions = true,
            "-fno-clone-regions" => self.clone_regions = false,
            "-frelative-paths" => self.relative_paths = true,
            "-fno-relative-paths" => self.relative_paths = false,
            "-fthreads" => self.threads = true,
            "-fno-threads" => self.threads = false,
            "-fsampler-strict" => self.strict = true,
            "-fsampler-static-runtime" => self.static_runtime = true,
            "-fsampler-stats" => self.stats = true,
            "-fcompare-constants" => self.compare_constants = true,
            "-fno-compare-constants" => self.compare_constants = false,
            "-fassign-into-field" => self.assign_into_field = true,
            "-fno-assign-into-field" => self.assign_into_field = false,
            "-fassign-into-index" => self.assign_into_index = true,
            "-fno-assign-into-index" => self.assign_into_index = false,
            "-fassign-across-pointer" => self.assign_across_pointer = true,
            "-fno-assign-across-pointer" => self.assign_across_pointer = false,
            "-ftimestamp-first" => self.timestamp_first = true,
            "-fno-timestamp-first" => self.timestamp_first = false,
            "-ftimestamp-last" => self.timestamp_last = true,
            "-fno-timestamp-last" => self.timestamp_last = false,
            _ => return self.apply_valued(arg),
        }
        Ok(())
    }

    fn apply_valued(&mut self, arg: &str) -> Result<(), OptionError> {
        let (flag, value) = arg
            .split_once('=')
            .ok_or_else(|| OptionError::Unknown(arg.into()))?;
        if value.is_empty() {
            return Err(OptionError::Empty(flag.into()));
        }
        let filter = |include, target| Filter { include, target };
        let location = |flag: &'static str| -> Result<FilterTarget, OptionError> {
            let (file, line) = value
                .rsplit_once(':')
                .ok_or_else(|| OptionError::BadLocation(flag, value.into()))?;
            let line = line
                .parse()
                .map_err(|_| OptionError::BadLocation(flag, value.into()))?;
            Ok(FilterTarget::Location {
                file: file.into(),
                line,
            })
        };
        match flag {
            "-fsampler-scheme" => {
                let available = || names(&SUPPORTED_SCHEMES);
                let scheme = match Scheme::from_name(value) {
                    Some(scheme) if SUPPORTED_SCHEMES.contains(&scheme) => scheme,
                    Some(_) => {
                        return Err(OptionError::UnsupportedScheme(value.into(), available()));
                    }
                    None => return Err(OptionError::UnknownScheme(value.into(), available())),
                };
                if !self.schemes.contains(&scheme) {
                    self.schemes.push(scheme);
                }
            }
            "-finclude-function" => self
                .filters
                .push(filter(true, FilterTarget::Function(value.into()))),
            "-fexclude-function" => self
                .filters
                .push(filter(false, FilterTarget::Function(value.into()))),
            "-finclude-file" => self
                .filters
                .push(filter(true, FilterTarget::File(value.into()))),
            "-fexclude-file" => self
                .filters
                .push(filter(false, FilterTarget::File(value.into()))),
            "-finclude-location" => self
                .filters
                .push(filter(true, location("-finclude-location")?)),
            "-fexclude-location" => self
                .filters
                .push(filter(false, location("-fexclude-location")?)),
            _ => return Err(OptionError::Unknown(arg.into())),
        }
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
    fn round_trip_through_the_environment() {
        let options = parse(&["-fno-sample", "-finclude-file=a.c", "-fsampler-strict"]).unwrap();
        assert_eq!(Options::from_env(&options.to_env()).unwrap(), options);
    }
}
