//! Where an application's settings come from (options, then `SAMPLER_*`
//! variables, then `~/.config/sampler/APP.toml`, then
//! `/etc/sampler/APP.toml`), the user's consent, and the directories.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

/// The default sparsity, as the original's.
pub const DEFAULT_SPARSITY: u32 = 100;

/// The flight recorder's default: each thread's last 64 sampled
/// observations go with a crash report (about 1.5 KiB of memory per thread,
/// a few hundred bytes of report per thread once compressed).
pub const DEFAULT_TRACE: u32 = 64;

/// The runtime's largest ring (`SAMPLER_TRACE`), in records per thread.
pub const MAX_TRACE: u32 = 65536;

/// Settings given on the command line (each wins over every other source).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct Overrides {
    /// The application's name (default: the program's file name).
    #[arg(long, value_name = "NAME")]
    pub app: Option<String>,
    /// The application's version.
    #[arg(long, value_name = "V")]
    pub version: Option<String>,
    /// The application's release.
    #[arg(long, value_name = "R")]
    pub release: Option<String>,
    /// The collector's base URL, e.g. `https://collector.example.org`.
    #[arg(long, value_name = "URL")]
    pub server: Option<String>,
    /// The collector's ingest token for this application.
    #[arg(long, value_name = "T")]
    pub token: Option<String>,
    /// Sample one event in N on average.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub sparsity: Option<u32>,
    /// Keep each thread's last N sampled observations for the crash report
    /// (the flight recorder; 0 turns it off; default 64).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(0..=MAX_TRACE as i64))]
    pub trace: Option<u32>,
    /// The longest `sampler-run` waits for the upload after the program
    /// exits, in seconds (default 1); a background process finishes it.
    #[arg(long, value_name = "SECONDS")]
    pub exit_bound: Option<f64>,
    /// The version of sampler-cc that built the program (a header).
    #[arg(long, value_name = "V")]
    pub instrumentor_version: Option<String>,
    /// The build machine's distribution, e.g. `debian-12-x86_64` (a header).
    #[arg(long, value_name = "D")]
    pub build_distribution: Option<String>,
    /// Spool, retry and per-application state (default
    /// `$XDG_STATE_HOME/sampler`, or `SAMPLER_STATE_DIR`).
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
}

/// `APP.toml`: every key is optional.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    /// `version`.
    pub version: Option<String>,
    /// `release`.
    pub release: Option<String>,
    /// `server`.
    pub server: Option<String>,
    /// `token`.
    pub token: Option<String>,
    /// `sparsity`.
    pub sparsity: Option<u32>,
    /// `trace`: records per thread in the flight recorder, 0 for none.
    pub trace: Option<u32>,
    /// `exit_bound`, seconds.
    pub exit_bound: Option<f64>,
    /// `instrumentor_version`.
    pub instrumentor_version: Option<String>,
    /// `build_distribution`.
    pub build_distribution: Option<String>,
    /// `max_report_bytes`.
    pub max_report_bytes: Option<u64>,
    /// `spool_max_reports`.
    pub spool_max_reports: Option<u64>,
    /// `spool_max_bytes`.
    pub spool_max_bytes: Option<u64>,
    /// `upload_timeout`, seconds.
    pub upload_timeout: Option<f64>,
    /// `retry_base`, seconds: the first retry's delay, doubled per failure.
    pub retry_base: Option<f64>,
}

impl FileConfig {
    /// Keys set in `other` replace ours.
    fn overlay(&mut self, other: FileConfig) {
        macro_rules! take {
            ($($field:ident),*) => { $( if other.$field.is_some() { self.$field = other.$field; } )* };
        }
        take!(
            version,
            release,
            server,
            token,
            sparsity,
            trace,
            exit_bound,
            instrumentor_version,
            build_distribution,
            max_report_bytes,
            spool_max_reports,
            spool_max_bytes,
            upload_timeout,
            retry_base
        );
    }
}

/// Where configuration lives.
#[derive(Debug, Clone)]
pub struct Dirs {
    /// `/etc/sampler` (or `SAMPLER_SYSTEM_CONFIG_DIR`).
    pub system: PathBuf,
    /// `$XDG_CONFIG_HOME/sampler`, `~/.config/sampler`.
    pub user: Option<PathBuf>,
    /// `$XDG_STATE_HOME/sampler`, or the option or `SAMPLER_STATE_DIR`.
    pub state: Option<PathBuf>,
}

impl Dirs {
    /// The directories, from the environment.
    pub fn find(state_override: Option<&Path>) -> Self {
        use etcetera::BaseStrategy;
        let base = etcetera::choose_base_strategy().ok();
        let system = std::env::var_os("SAMPLER_SYSTEM_CONFIG_DIR")
            .filter(|value| !value.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/etc/sampler"));
        let user = base.as_ref().map(|base| base.config_dir().join("sampler"));
        let state = match state_override {
            Some(dir) => Some(dir.to_path_buf()),
            None => std::env::var_os("SAMPLER_STATE_DIR")
                .filter(|value| !value.is_empty())
                .map(PathBuf::from)
                .or_else(|| {
                    base.as_ref()
                        .and_then(|base| base.state_dir())
                        .map(|dir| dir.join("sampler"))
                }),
        };
        Self {
            system,
            user,
            state,
        }
    }
}

/// An application's settings, resolved.
#[derive(Debug, Clone)]
pub struct AppConfig {
    /// The application's name.
    pub app: String,
    /// Version and release ("" when not given).
    pub version: String,
    /// The release.
    pub release: String,
    /// The collector and token, when configured.
    pub server: Option<String>,
    /// The ingest token.
    pub token: Option<String>,
    /// The sparsity from options, variables or files (the collector's
    /// `Sampler-Change-Sparsity` comes between the variables and the files).
    pub sparsity_explicit: Option<u32>,
    /// The sparsity from the configuration files.
    pub sparsity_file: Option<u32>,
    /// `SAMPLER_TRACE` for the program: records per thread, 0 for none.
    pub trace: u32,
    /// How long the exit waits for the upload.
    pub exit_bound: Duration,
    /// Headers that are sent when known.
    pub instrumentor_version: Option<String>,
    /// The build machine's distribution.
    pub build_distribution: Option<String>,
    /// The report's cap.
    pub max_report_bytes: u64,
    /// The spool's bounds.
    pub spool_max_reports: u64,
    /// The spool's size bound.
    pub spool_max_bytes: u64,
    /// One upload's time limit.
    pub upload_timeout: Duration,
    /// The first retry's delay.
    pub retry_base: Duration,
    /// Problems met on the way (a bad variable or file): said once, never fatal.
    pub warnings: Vec<String>,
}

/// The defaults of the limits.
pub const DEFAULT_MAX_REPORT_BYTES: u64 = 16 << 20;
/// At most this many reports wait in the spool.
pub const DEFAULT_SPOOL_MAX_REPORTS: u64 = 1000;
/// At most this many bytes wait in the spool.
pub const DEFAULT_SPOOL_MAX_BYTES: u64 = 64 << 20;

fn seconds(value: f64, what: &str) -> Result<Duration, String> {
    Duration::try_from_secs_f64(value)
        .map_err(|_| format!("{what} `{value}` is not a number of seconds ≥ 0"))
}

fn env_text(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|value| !value.is_empty())
}

/// Reads one `APP.toml`; a missing file is no error.
fn read_file(path: &Path) -> Result<Option<FileConfig>, String> {
    match std::fs::read_to_string(path) {
        Ok(text) => toml::from_str(&text)
            .map(Some)
            .map_err(|error| format!("{}: {}", path.display(), error.to_string().trim_end())),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(format!("{}: {error}", path.display())),
    }
}

/// A file name for an application: names with `/` or a leading `.` have no
/// configuration file.
fn app_file_name(app: &str) -> Option<String> {
    (!app.is_empty() && !app.contains('/') && !app.starts_with('.') && !app.contains('\0'))
        .then(|| format!("{app}.toml"))
}

impl AppConfig {
    /// Resolves `app`'s settings. Problems are collected in `warnings`.
    pub fn resolve(app: &str, overrides: &Overrides, dirs: &Dirs) -> Self {
        let mut warnings = Vec::new();
        let mut file = FileConfig::default();
        if let Some(name) = app_file_name(app) {
            let mut paths = vec![dirs.system.join(&name)];
            if let Some(user) = &dirs.user {
                paths.push(user.join(&name));
            }
            for path in paths {
                match read_file(&path) {
                    Ok(Some(found)) => file.overlay(found),
                    Ok(None) => {}
                    Err(error) => warnings.push(error),
                }
            }
        }
        let env_sparsity = env_text("SAMPLER_SPARSITY").and_then(|text| {
            match text.parse::<u32>() {
                Ok(value) if value >= 1 => Some(value),
                _ => {
                    warnings.push(format!(
                        "SAMPLER_SPARSITY=`{text}` is not a whole number from 1 to 4294967295; ignored"
                    ));
                    None
                }
            }
        });
        let env_trace = env_text("SAMPLER_TRACE").and_then(|text| match text.parse::<u32>() {
            Ok(value) if value <= MAX_TRACE => Some(value),
            _ => {
                warnings.push(format!(
                    "SAMPLER_TRACE=`{text}` is not a whole number from 0 to {MAX_TRACE}; ignored"
                ));
                None
            }
        });
        let file_trace = match file.trace {
            Some(value) if value > MAX_TRACE => {
                warnings.push(format!(
                    "{app}.toml: trace {value}: expected 0 to {MAX_TRACE}; ignored"
                ));
                None
            }
            other => other,
        };
        let env_bound = env_text("SAMPLER_EXIT_BOUND").and_then(|text| match text.parse::<f64>() {
            Ok(value) => Some(value),
            Err(_) => {
                warnings.push(format!(
                    "SAMPLER_EXIT_BOUND=`{text}` is not a number of seconds; ignored"
                ));
                None
            }
        });
        let pick = |option: &Option<String>, var: &str, file: &Option<String>| {
            option
                .clone()
                .or_else(|| env_text(var))
                .or_else(|| file.clone())
        };
        let mut duration = |value: Option<f64>, what: &str, default: Duration| match value {
            Some(value) => seconds(value, what).unwrap_or_else(|error| {
                warnings.push(error);
                default
            }),
            None => default,
        };
        let exit_bound = duration(
            overrides.exit_bound.or(env_bound).or(file.exit_bound),
            "exit_bound",
            Duration::from_secs(1),
        );
        let upload_timeout = duration(
            file.upload_timeout,
            "upload_timeout",
            Duration::from_secs(30),
        );
        let retry_base = duration(file.retry_base, "retry_base", Duration::from_secs(30));
        let file_sparsity = match file.sparsity {
            Some(0) => {
                warnings.push(format!(
                    "{app}.toml: sparsity 0: expected 1 or more; ignored"
                ));
                None
            }
            other => other,
        };
        Self {
            app: app.to_owned(),
            version: pick(
                &overrides.version,
                "SAMPLER_APPLICATION_VERSION",
                &file.version,
            )
            .unwrap_or_default(),
            release: pick(
                &overrides.release,
                "SAMPLER_APPLICATION_RELEASE",
                &file.release,
            )
            .unwrap_or_default(),
            server: pick(&overrides.server, "SAMPLER_SERVER", &file.server),
            token: pick(&overrides.token, "SAMPLER_TOKEN", &file.token),
            sparsity_explicit: overrides.sparsity.or(env_sparsity),
            sparsity_file: file_sparsity,
            trace: overrides
                .trace
                .or(env_trace)
                .or(file_trace)
                .unwrap_or(DEFAULT_TRACE),
            exit_bound,
            instrumentor_version: pick(
                &overrides.instrumentor_version,
                "SAMPLER_INSTRUMENTOR_VERSION",
                &file.instrumentor_version,
            ),
            build_distribution: pick(
                &overrides.build_distribution,
                "SAMPLER_BUILD_DISTRIBUTION",
                &file.build_distribution,
            ),
            max_report_bytes: file.max_report_bytes.unwrap_or(DEFAULT_MAX_REPORT_BYTES),
            spool_max_reports: file.spool_max_reports.unwrap_or(DEFAULT_SPOOL_MAX_REPORTS),
            spool_max_bytes: file.spool_max_bytes.unwrap_or(DEFAULT_SPOOL_MAX_BYTES),
            upload_timeout,
            retry_base,
            warnings,
        }
    }

    /// A fingerprint of what decides whether the collector accepts us
    /// (server, token): a 401/403 holds until it changes. FNV-1a, stable
    /// across builds.
    pub fn fingerprint(&self) -> String {
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for byte in [
            self.server.as_deref().unwrap_or(""),
            "\0",
            self.token.as_deref().unwrap_or(""),
        ]
        .iter()
        .flat_map(|part| part.bytes())
        {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
        format!("{hash:016x}")
    }

    /// The upload URL: `SERVER/upload`, unless the server names a path.
    pub fn upload_url(&self) -> Option<String> {
        let server = self.server.as_deref()?;
        let trimmed = server.trim_end_matches('/');
        let after_scheme = trimmed.split_once("://").map_or(trimmed, |(_, rest)| rest);
        Some(if after_scheme.contains('/') {
            trimmed.to_owned()
        } else {
            format!("{trimmed}/upload")
        })
    }
}

/// `consent.toml`, in the user's config folder and in `/etc/sampler`.
#[derive(Debug, Clone, Default, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Consent {
    /// For every application without an entry of its own.
    pub default: Option<bool>,
    /// Per application.
    #[serde(default)]
    pub apps: std::collections::BTreeMap<String, bool>,
}

impl Consent {
    fn read(dir: &Path) -> Result<Self, String> {
        let path = dir.join("consent.toml");
        match std::fs::read_to_string(&path) {
            Ok(text) => toml::from_str(&text)
                .map_err(|error| format!("{}: {}", path.display(), error.to_string().trim_end())),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(Self::default()),
            Err(error) => Err(format!("{}: {error}", path.display())),
        }
    }

    /// Whether `app` may upload: the user's answer for it, else the user's
    /// default, else the system's for it, else the system's default, else no.
    pub fn given(app: &str, dirs: &Dirs) -> Result<bool, String> {
        let user = match &dirs.user {
            Some(dir) => Self::read(dir)?,
            None => Self::default(),
        };
        let system = Self::read(&dirs.system)?;
        Ok(user
            .apps
            .get(app)
            .copied()
            .or(user.default)
            .or_else(|| system.apps.get(app).copied())
            .or(system.default)
            .unwrap_or(false))
    }

    /// Records the user's answer, for `app` or as the default.
    pub fn record(dirs: &Dirs, app: Option<&str>, yes: bool) -> anyhow::Result<PathBuf> {
        let dir = dirs
            .user
            .as_ref()
            .ok_or_else(|| anyhow::anyhow!("no home directory: cannot store the answer"))?;
        let mut consent = Self::read(dir).map_err(anyhow::Error::msg)?;
        match app {
            Some(app) => {
                consent.apps.insert(app.to_owned(), yes);
            }
            None => consent.default = Some(yes),
        }
        let path = dir.join("consent.toml");
        let text = toml::to_string(&consent)?;
        crate::spool::write_atomically(&path, text.as_bytes())?;
        Ok(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dirs(root: &Path) -> Dirs {
        Dirs {
            system: root.join("etc"),
            user: Some(root.join("user")),
            state: Some(root.join("state")),
        }
    }

    #[test]
    fn options_win_over_the_user_file_which_wins_over_the_system_file() {
        let root = tempfile::tempdir().unwrap();
        let dirs = dirs(root.path());
        std::fs::create_dir_all(&dirs.system).unwrap();
        std::fs::create_dir_all(dirs.user.as_ref().unwrap()).unwrap();
        std::fs::write(
            dirs.system.join("demo.toml"),
            "server = \"http://system\"\nversion = \"1\"\nrelease = \"r\"\nsparsity = 7\n",
        )
        .unwrap();
        std::fs::write(
            dirs.user.as_ref().unwrap().join("demo.toml"),
            "version = \"2\"\n",
        )
        .unwrap();
        let overrides = Overrides {
            release: Some("opt".into()),
            ..Overrides::default()
        };
        let config = AppConfig::resolve("demo", &overrides, &dirs);
        assert_eq!(config.server.as_deref(), Some("http://system"));
        assert_eq!(config.version, "2");
        assert_eq!(config.release, "opt");
        assert_eq!(config.sparsity_file, Some(7));
        assert!(config.warnings.is_empty(), "{:?}", config.warnings);
        assert_eq!(config.upload_url().as_deref(), Some("http://system/upload"));
    }

    #[test]
    fn the_trace_is_on_by_default_and_set_by_file_or_option() {
        let root = tempfile::tempdir().unwrap();
        let dirs = dirs(root.path());
        std::fs::create_dir_all(&dirs.system).unwrap();
        let resolve = |file: &str, option: Option<u32>| {
            std::fs::write(dirs.system.join("demo.toml"), file).unwrap();
            let overrides = Overrides {
                trace: option,
                ..Overrides::default()
            };
            let config = AppConfig::resolve("demo", &overrides, &dirs);
            (config.trace, config.warnings)
        };
        assert_eq!(resolve("", None), (DEFAULT_TRACE, vec![]));
        assert_eq!(resolve("trace = 8\n", None), (8, vec![]));
        assert_eq!(resolve("trace = 8\n", Some(0)), (0, vec![]));
        assert_eq!(
            resolve("trace = 70000\n", None),
            (
                DEFAULT_TRACE,
                vec!["demo.toml: trace 70000: expected 0 to 65536; ignored".to_owned()]
            )
        );
    }

    #[test]
    fn a_bad_file_is_a_warning_naming_the_file_and_key() {
        let root = tempfile::tempdir().unwrap();
        let dirs = dirs(root.path());
        std::fs::create_dir_all(&dirs.system).unwrap();
        std::fs::write(dirs.system.join("demo.toml"), "servr = \"x\"\n").unwrap();
        let config = AppConfig::resolve("demo", &Overrides::default(), &dirs);
        assert_eq!(config.warnings.len(), 1);
        assert!(
            config.warnings[0]
                .starts_with(&format!("{}: ", dirs.system.join("demo.toml").display()))
                && config.warnings[0].contains("servr"),
            "{:?}",
            config.warnings
        );
    }

    #[test]
    fn consent_is_the_users_then_the_systems_then_no() {
        let root = tempfile::tempdir().unwrap();
        let dirs = dirs(root.path());
        assert!(!Consent::given("demo", &dirs).unwrap());
        std::fs::create_dir_all(&dirs.system).unwrap();
        std::fs::write(dirs.system.join("consent.toml"), "default = true\n").unwrap();
        assert!(Consent::given("demo", &dirs).unwrap());
        Consent::record(&dirs, Some("demo"), false).unwrap();
        assert!(!Consent::given("demo", &dirs).unwrap());
        assert!(Consent::given("other", &dirs).unwrap());
        Consent::record(&dirs, None, false).unwrap();
        assert!(!Consent::given("other", &dirs).unwrap());
    }

    #[test]
    fn the_upload_url_keeps_a_given_path() {
        let mut config =
            AppConfig::resolve("x", &Overrides::default(), &dirs(Path::new("/nonexistent")));
        config.server = Some("https://h.example/cgi-bin/sampler-upload".into());
        assert_eq!(
            config.upload_url().as_deref(),
            Some("https://h.example/cgi-bin/sampler-upload")
        );
        config.server = Some("https://h.example/".into());
        assert_eq!(
            config.upload_url().as_deref(),
            Some("https://h.example/upload")
        );
    }
}
