//! The spool: reports waiting for the collector, one run file each, and
//! what `sampler-run` remembers per application.
//!
//! Layout under the state directory:
//! - `spool/APP/ID.report`: a run file (report + `outcome`), written to a
//!   dot-file and renamed, so it is whole or absent; `ID` is a UUID v7, so
//!   names sort by age. `spool/APP/ID.retry`: its failed attempts and when
//!   the next one is due (exponential backoff with jitter).
//! - `rejected/APP/ID.report` and `ID.reason`: refused with 400 or 413.
//! - `apps/APP.toml`: the collector's sparsity, a 401/403 stop with the
//!   configuration's fingerprint, a `Retry-After` pause and the counters
//!   `sampler-run status` shows; changed under `apps/APP.lock`.
//!
//! Exactly once: a report is sent only by the process holding an exclusive
//! `flock` on its file, which checks after locking that the file is still
//! linked (another process may have sent and removed it meanwhile); it is
//! removed only after the collector's 200. A process that dies between the
//! 200 and the removal leaves it for the next flush, whose upload carries
//! the same `Sampler-Report-Id`, which the collector stores once.

use std::fs::File;
use std::io::Write as _;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::Context as _;
use nix::fcntl::{Flock, FlockArg};
use serde::{Deserialize, Serialize};

use crate::config::{AppConfig, Consent, Dirs, Overrides};
use crate::report::RunFile;
use crate::upload::{self, Answer};

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Writes `bytes` to `path` whole or not at all: a dot-file beside it,
/// flushed to disk, renamed over it.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    write_replacing(path, bytes, true)
}

/// Like `write_atomically`; with `durable` false the file is not flushed
/// to disk (counters and retry times: a crash may lose the last change,
/// never leave half a file), which spares a run two `fsync`s.
pub fn write_replacing(path: &Path, bytes: &[u8], durable: bool) -> anyhow::Result<()> {
    let dir = path
        .parent()
        .filter(|dir| !dir.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let name = path
        .file_name()
        .map_or_else(|| "file".into(), |name| name.to_string_lossy().into_owned());
    let temp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let result = (|| -> std::io::Result<()> {
        let mut file = File::create(&temp)?;
        file.write_all(bytes)?;
        if durable {
            file.sync_all()?;
        }
        std::fs::rename(&temp, path)?;
        // The rename itself is on disk once the directory is.
        if durable {
            File::open(dir)?.sync_all()?;
        }
        Ok(())
    })();
    if let Err(error) = result {
        let _ = std::fs::remove_file(&temp);
        return Err(error).with_context(|| format!("writing {}", path.display()));
    }
    Ok(())
}

/// A name usable as a folder: not empty, no `/`, not starting with `.`.
pub fn valid_app_name(app: &str) -> bool {
    !app.is_empty() && !app.contains('/') && !app.starts_with('.') && !app.contains('\0')
}

/// A report's retry record (`ID.retry`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Retry {
    /// Failed attempts so far.
    pub attempts: u32,
    /// Not before this time (ms since the epoch).
    pub not_before_ms: u64,
    /// Why the last attempt failed.
    pub last_error: String,
}

/// A 401/403 stop.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Stopped {
    /// The configuration's fingerprint when it was refused.
    pub fingerprint: String,
    /// 401 or 403.
    pub status: u16,
    /// The collector's reason.
    pub reason: String,
    /// When (ms since the epoch).
    pub since_ms: u64,
}

/// What is remembered per application (`apps/APP.toml`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct AppState {
    /// The collector's `Sampler-Change-Sparsity`.
    pub sparsity: Option<u32>,
    /// Uploads stopped by a 401/403 until the configuration changes.
    pub stopped: Option<Stopped>,
    /// The collector asked (429/503) to wait until then.
    pub not_before_ms: u64,
    /// Reports the collector acknowledged.
    pub uploaded: u64,
    /// Reports refused with 400/413, moved aside.
    pub rejected: u64,
    /// Reports dropped because the spool was full.
    pub dropped: u64,
    /// Runs that wrote no report (not uploaded).
    pub empty: u64,
    /// Reports truncated at the size cap.
    pub truncated: u64,
    /// The last failure.
    pub last_error: Option<String>,
}

/// The state directory.
#[derive(Debug, Clone)]
pub struct Spool {
    root: PathBuf,
}

/// A report found in the spool.
#[derive(Debug, Clone)]
pub struct Entry {
    /// Its application (folder).
    pub app: String,
    /// `spool/APP/ID.report`.
    pub path: PathBuf,
    /// Its UUID, as its name.
    pub id: String,
    /// Its size.
    pub bytes: u64,
}

impl Entry {
    fn retry_path(&self) -> PathBuf {
        self.path.with_extension("retry")
    }
}

fn read_toml<T: for<'de> Deserialize<'de> + Default>(path: &Path) -> T {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|text| toml::from_str(&text).ok())
        .unwrap_or_default()
}

impl Spool {
    /// The spool under `root`.
    pub fn new(root: PathBuf) -> Self {
        Self { root }
    }

    /// The state directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn app_dir(&self, app: &str) -> PathBuf {
        self.root.join("spool").join(app)
    }

    /// An application's state.
    pub fn app_state(&self, app: &str) -> AppState {
        read_toml(&self.root.join("apps").join(format!("{app}.toml")))
    }

    /// Changes an application's state under its lock.
    pub fn update_app(&self, app: &str, change: impl FnOnce(&mut AppState)) -> anyhow::Result<()> {
        let dir = self.root.join("apps");
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let _lock = lock_exclusive(&dir.join(format!("{app}.lock")))?;
        let mut state = self.app_state(app);
        change(&mut state);
        let text = toml::to_string(&state).context("writing the application's state")?;
        write_replacing(&dir.join(format!("{app}.toml")), text.as_bytes(), false)
    }

    /// Every spooled report, oldest first (`app`: only its own).
    pub fn entries(&self, app: Option<&str>) -> Vec<Entry> {
        let mut entries = Vec::new();
        let apps: Vec<String> = match app {
            Some(app) => vec![app.to_owned()],
            None => std::fs::read_dir(self.root.join("spool"))
                .into_iter()
                .flatten()
                .flatten()
                .filter_map(|entry| entry.file_name().into_string().ok())
                .filter(|name| valid_app_name(name))
                .collect(),
        };
        for app in apps {
            for file in std::fs::read_dir(self.app_dir(&app))
                .into_iter()
                .flatten()
                .flatten()
            {
                let Ok(name) = file.file_name().into_string() else {
                    continue;
                };
                let Some(id) = name.strip_suffix(".report") else {
                    continue;
                };
                if name.starts_with('.') || uuid::Uuid::parse_str(id).is_err() {
                    continue;
                }
                let Ok(metadata) = file.metadata() else {
                    continue;
                };
                entries.push(Entry {
                    app: app.clone(),
                    id: id.to_owned(),
                    path: file.path(),
                    bytes: metadata.len(),
                });
            }
        }
        entries.sort_by(|a, b| a.id.cmp(&b.id));
        entries
    }

    /// Spools a run file, then drops the oldest reports while the spool is
    /// over `config`'s bounds (never the new one, never one being sent).
    ///
    /// The file is whole once this returns (written, then renamed) but not
    /// yet flushed to disk: `sync` does that, within the exit-time bound,
    /// so that a disk busy with other writers cannot hold the exit.
    pub fn add(&self, config: &AppConfig, id: &str, text: &[u8]) -> anyhow::Result<PathBuf> {
        let path = self.app_dir(&config.app).join(format!("{id}.report"));
        write_replacing(&path, text, false)?;
        let _lock = lock_exclusive(&self.root.join("spool.lock"))?;
        let entries = self.entries(None);
        let mut count = entries.len() as u64;
        let mut bytes: u64 = entries.iter().map(|entry| entry.bytes).sum();
        for entry in &entries {
            if count <= config.spool_max_reports && bytes <= config.spool_max_bytes {
                break;
            }
            if entry.path == path {
                continue;
            }
            let Some(_claim) = claim(&entry.path) else {
                continue;
            };
            if std::fs::remove_file(&entry.path).is_ok() {
                let _ = std::fs::remove_file(entry.retry_path());
                count -= 1;
                bytes -= entry.bytes;
                self.update_app(&entry.app, |state| state.dropped += 1)?;
            }
        }
        Ok(path)
    }

    /// Flushes a spooled report and its folder to disk.
    pub fn sync(path: &Path) -> std::io::Result<()> {
        File::open(path)?.sync_all()?;
        match path.parent() {
            Some(dir) => File::open(dir)?.sync_all(),
            None => Ok(()),
        }
    }

    /// Removes every spooled report of `app` (consent withdrawn).
    pub fn purge(&self, app: &str) -> usize {
        let mut removed = 0;
        for entry in self.entries(Some(app)) {
            if let Some(_claim) = claim(&entry.path)
                && std::fs::remove_file(&entry.path).is_ok()
            {
                let _ = std::fs::remove_file(entry.retry_path());
                removed += 1;
            }
        }
        removed
    }
}

/// An exclusive lock on a spooled report that is still in the spool.
#[derive(Debug)]
pub struct Claim {
    lock: Flock<File>,
}

/// Locks `path` without waiting; `None` if another process holds it or it
/// is gone.
pub fn claim(path: &Path) -> Option<Claim> {
    let file = File::open(path).ok()?;
    let lock = Flock::lock(file, FlockArg::LockExclusiveNonblock).ok()?;
    // Sent and removed between our open and our lock?
    let linked = lock.metadata().map(|m| m.nlink() > 0).unwrap_or(false);
    linked.then_some(Claim { lock })
}

/// Locks `path`, waiting up to `wait` for another process to let go.
fn claim_waiting(path: &Path, wait: Duration) -> Option<Claim> {
    let until = Instant::now() + wait;
    loop {
        if let Some(claim) = claim(path) {
            return Some(claim);
        }
        if !path.exists() || Instant::now() >= until {
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

impl Claim {
    fn read(&self) -> std::io::Result<Vec<u8>> {
        use std::io::Read as _;
        let mut file: &File = &self.lock;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        Ok(bytes)
    }
}

/// How a flush goes.
#[derive(Debug, Clone)]
pub struct FlushOptions {
    /// Only the reports whose backoff has passed (runs and the background
    /// process); `sampler-run flush` tries every report now.
    pub due_only: bool,
    /// How long to wait for a report another process holds (the background
    /// process waits for the run that started it to exit).
    pub wait_locked: Duration,
    /// Send this report first.
    pub first: Option<PathBuf>,
    /// Stop starting uploads after this.
    pub deadline: Option<Instant>,
}

/// What a flush did.
#[derive(Debug, Default)]
pub struct FlushSummary {
    /// Reports acknowledged.
    pub sent: u64,
    /// Refused with 400/413 and moved aside.
    pub rejected: u64,
    /// Attempts that failed (they wait for their next turn).
    pub failed: u64,
    /// Reports left waiting (backoff, `Retry-After`, another process).
    pub waiting: u64,
    /// Stopped at the deadline with reports left to try.
    pub unfinished: bool,
    /// One line per application that could not be flushed, or per failure.
    pub notes: Vec<String>,
}

/// The backoff after `attempts` failures: `base` · 2^(attempts − 1), at
/// most six hours, times a random factor from 0.5 to 1.
pub fn backoff(base: Duration, attempts: u32) -> Duration {
    let cap = Duration::from_secs(6 * 3600);
    let exponent = attempts.saturating_sub(1).min(30);
    let full = base.saturating_mul(1u32 << exponent).min(cap);
    let factor = 0.5 + rand::random::<f64>() * 0.5;
    full.mul_f64(factor)
}

/// Whether uploads for `config` are possible now; the reason if not.
pub fn blocked(config: &AppConfig, state: &AppState, dirs: &Dirs) -> Option<String> {
    match Consent::given(&config.app, dirs) {
        Ok(true) => {}
        Ok(false) => return Some("no consent (`sampler-run consent yes`)".into()),
        Err(error) => return Some(format!("consent unknown: {error}")),
    }
    if config.server.is_none() || config.token.is_none() {
        return Some("no server or token configured".into());
    }
    if let Some(stopped) = &state.stopped
        && stopped.fingerprint == config.fingerprint()
    {
        return Some(format!(
            "stopped: the collector answered {} ({}); change the server or token to resume",
            stopped.status, stopped.reason
        ));
    }
    None
}

/// Uploads the spooled reports of `apps` (all when `None`).
pub fn flush(
    spool: &Spool,
    dirs: &Dirs,
    overrides: &Overrides,
    app: Option<&str>,
    options: &FlushOptions,
) -> FlushSummary {
    let mut summary = FlushSummary::default();
    let entries = spool.entries(app);
    let mut apps: Vec<String> = entries.iter().map(|entry| entry.app.clone()).collect();
    apps.sort();
    apps.dedup();
    // The first report's application first.
    if let Some(first) = &options.first
        && let Some(position) = entries.iter().position(|entry| &entry.path == first)
    {
        let first_app = entries[position].app.clone();
        apps.retain(|app| *app != first_app);
        apps.insert(0, first_app);
    }
    for app in apps {
        let mut mine: Vec<&Entry> = entries.iter().filter(|entry| entry.app == app).collect();
        if let Some(first) = &options.first {
            mine.sort_by_key(|entry| &entry.path != first);
        }
        flush_app(spool, dirs, overrides, &app, &mine, options, &mut summary);
    }
    summary
}

fn flush_app(
    spool: &Spool,
    dirs: &Dirs,
    overrides: &Overrides,
    app: &str,
    entries: &[&Entry],
    options: &FlushOptions,
    summary: &mut FlushSummary,
) {
    let config = AppConfig::resolve(app, overrides, dirs);
    for warning in &config.warnings {
        summary.notes.push(format!("{app}: {warning}"));
    }
    let state = spool.app_state(app);
    if let Some(reason) = blocked(&config, &state, dirs) {
        summary.waiting += entries.len() as u64;
        summary
            .notes
            .push(format!("{app}: {} report(s) kept: {reason}", entries.len()));
        return;
    }
    let now = now_ms();
    if state.not_before_ms > now {
        summary.waiting += entries.len() as u64;
        summary.notes.push(format!(
            "{app}: {} report(s) kept: the collector asked to wait {} s more",
            entries.len(),
            (state.not_before_ms - now).div_ceil(1000)
        ));
        return;
    }
    let client = match upload::client(&config) {
        Ok(client) => client,
        Err(error) => {
            summary.notes.push(format!("{app}: {error}"));
            return;
        }
    };
    for (index, entry) in entries.iter().enumerate() {
        if options
            .deadline
            .is_some_and(|deadline| Instant::now() >= deadline)
        {
            summary.waiting += (entries.len() - index) as u64;
            summary.unfinished = true;
            return;
        }
        let is_first = options.first.as_ref() == Some(&entry.path);
        let Some(claim) = claim_waiting(&entry.path, options.wait_locked) else {
            if entry.path.exists() {
                summary.waiting += 1;
            }
            continue;
        };
        let retry: Retry = read_toml(&entry.retry_path());
        if options.due_only && !is_first && retry.not_before_ms > now_ms() {
            summary.waiting += 1;
            continue;
        }
        let run = match claim
            .read()
            .map_err(|e| e.to_string())
            .and_then(|bytes| RunFile::parse(&bytes))
        {
            Ok(run) => run,
            Err(error) => {
                let reason = format!("unreadable run file: {error}");
                set_aside(spool, entry, &reason, summary);
                continue;
            }
        };
        match upload::send(&client, &config, &run) {
            Answer::Stored {
                run_id: _,
                change_sparsity,
            } => {
                // Remove while still holding the lock: no one else sends it.
                let _ = std::fs::remove_file(&entry.path);
                let _ = std::fs::remove_file(entry.retry_path());
                drop(claim);
                summary.sent += 1;
                let _ = spool.update_app(app, |state| {
                    state.uploaded += 1;
                    if let Some(sparsity) = change_sparsity {
                        state.sparsity = Some(sparsity);
                    }
                });
            }
            Answer::Refused { status, reason } => {
                drop(claim);
                set_aside(spool, entry, &format!("HTTP {status}: {reason}"), summary);
            }
            Answer::Unauthorized { status, reason } => {
                drop(claim);
                summary.waiting += (entries.len() - index) as u64;
                summary.notes.push(format!(
                    "{app}: the collector answered {status} ({reason}): uploads stop until the server or token changes"
                ));
                let fingerprint = config.fingerprint();
                let _ = spool.update_app(app, |state| {
                    state.stopped = Some(Stopped {
                        fingerprint,
                        status,
                        reason,
                        since_ms: now_ms(),
                    });
                });
                return;
            }
            Answer::Later {
                status,
                retry_after,
                reason,
            } => {
                let wait = retry_after.unwrap_or_else(|| backoff(config.retry_base, 1));
                let until = now_ms() + wait.as_millis() as u64;
                let error = format!("HTTP {status}: {reason}");
                record_retry(
                    entry,
                    &Retry {
                        attempts: retry.attempts,
                        not_before_ms: until,
                        last_error: error.clone(),
                    },
                );
                drop(claim);
                summary.waiting += (entries.len() - index) as u64;
                summary.notes.push(format!(
                    "{app}: the collector answered {status} ({reason}): waiting {} s",
                    wait.as_secs_f64().ceil()
                ));
                let _ = spool.update_app(app, |state| {
                    state.not_before_ms = until;
                    state.last_error = Some(error);
                });
                return;
            }
            Answer::Failed(error) => {
                let attempts = retry.attempts.saturating_add(1);
                let wait = backoff(config.retry_base, attempts);
                record_retry(
                    entry,
                    &Retry {
                        attempts,
                        not_before_ms: now_ms() + wait.as_millis() as u64,
                        last_error: error.clone(),
                    },
                );
                drop(claim);
                summary.failed += 1;
                summary.waiting += (entries.len() - index) as u64;
                summary.notes.push(format!("{app}: {error}"));
                let _ = spool.update_app(app, |state| state.last_error = Some(error));
                return;
            }
        }
    }
}

fn record_retry(entry: &Entry, retry: &Retry) {
    if let Ok(text) = toml::to_string(retry) {
        let _ = write_replacing(&entry.retry_path(), text.as_bytes(), false);
    }
}

/// Moves a report the collector can never accept to `rejected/`, with the
/// reason beside it.
fn set_aside(spool: &Spool, entry: &Entry, reason: &str, summary: &mut FlushSummary) {
    let dir = spool.root().join("rejected").join(&entry.app);
    let moved = std::fs::create_dir_all(&dir).and_then(|()| {
        std::fs::write(
            dir.join(format!("{}.reason", entry.id)),
            format!("{reason}\n"),
        )?;
        std::fs::rename(&entry.path, dir.join(format!("{}.report", entry.id)))
    });
    let _ = std::fs::remove_file(entry.retry_path());
    summary.rejected += 1;
    summary.notes.push(format!(
        "{}: report {} refused: {reason}",
        entry.app, entry.id
    ));
    if let Err(error) = moved {
        summary.notes.push(format!(
            "{}: cannot move {} to {}: {error}",
            entry.app,
            entry.path.display(),
            dir.display()
        ));
    }
    let _ = spool.update_app(&entry.app, |state| {
        state.rejected += 1;
        state.last_error = Some(reason.to_owned());
    });
}

/// `sampler-run status`: one block per application.
pub fn status(spool: &Spool, dirs: &Dirs, overrides: &Overrides) -> String {
    use std::fmt::Write as _;
    let entries = spool.entries(None);
    let mut apps: Vec<String> = entries.iter().map(|entry| entry.app.clone()).collect();
    for dir in std::fs::read_dir(spool.root().join("apps"))
        .into_iter()
        .flatten()
        .flatten()
    {
        if let Some(app) = dir
            .file_name()
            .to_str()
            .and_then(|name| name.strip_suffix(".toml"))
        {
            apps.push(app.to_owned());
        }
    }
    apps.sort();
    apps.dedup();
    let mut text = String::new();
    let total: u64 = entries.iter().map(|entry| entry.bytes).sum();
    let _ = writeln!(
        text,
        "spool: {} ({} report(s), {} bytes)",
        spool.root().join("spool").display(),
        entries.len(),
        total
    );
    if apps.is_empty() {
        text.push_str("no application has run through sampler-run\n");
    }
    let now = now_ms();
    for app in apps {
        let config = AppConfig::resolve(&app, overrides, dirs);
        let state = spool.app_state(&app);
        let mine: Vec<&Entry> = entries.iter().filter(|entry| entry.app == app).collect();
        let bytes: u64 = mine.iter().map(|entry| entry.bytes).sum();
        let _ = writeln!(text, "\n{app}:");
        let consent = match Consent::given(&app, dirs) {
            Ok(true) => "yes".to_owned(),
            Ok(false) => "no".to_owned(),
            Err(error) => format!("unknown ({error})"),
        };
        let _ = writeln!(text, "  consent: {consent}");
        let _ = writeln!(
            text,
            "  server: {}",
            config
                .upload_url()
                .as_deref()
                .unwrap_or("(none configured)")
        );
        let _ = writeln!(text, "  waiting: {} report(s), {bytes} bytes", mine.len());
        if let Some(next) = mine
            .iter()
            .map(|entry| read_toml::<Retry>(&entry.retry_path()).not_before_ms)
            .max()
            .filter(|&next| next > now)
        {
            let _ = writeln!(text, "  next retry: in {} s", (next - now).div_ceil(1000));
        }
        if state.not_before_ms > now {
            let _ = writeln!(
                text,
                "  paused by the collector: {} s more",
                (state.not_before_ms - now).div_ceil(1000)
            );
        }
        if let Some(stopped) = &state.stopped {
            let current = stopped.fingerprint == config.fingerprint();
            let _ = writeln!(
                text,
                "  {}: the collector answered {} ({})",
                if current {
                    "stopped until the server or token changes"
                } else {
                    "was stopped (configuration changed since)"
                },
                stopped.status,
                stopped.reason
            );
        }
        let _ = writeln!(
            text,
            "  uploaded: {}, refused (400/413): {}, dropped (spool full): {}, empty runs: {}, truncated: {}",
            state.uploaded, state.rejected, state.dropped, state.empty, state.truncated
        );
        if let Some(sparsity) = state.sparsity {
            let _ = writeln!(text, "  sparsity from the collector: {sparsity}");
        }
        if let Some(error) = &state.last_error {
            let _ = writeln!(text, "  last error: {error}");
        }
    }
    text
}

/// An exclusive `flock` on the file at `path` (created if missing), held
/// until the returned value is dropped; waits for other holders.
fn lock_exclusive(path: &Path) -> anyhow::Result<Flock<File>> {
    let file = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .with_context(|| format!("opening {}", path.display()))?;
    Flock::lock(file, FlockArg::LockExclusive)
        .map_err(|(_, errno)| anyhow::anyhow!("locking {}: {errno}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_with_jitter_and_is_capped() {
        let base = Duration::from_secs(10);
        for attempts in 1..=40 {
            let full = base
                .saturating_mul(1u32 << (attempts - 1).min(30))
                .min(Duration::from_secs(6 * 3600));
            let wait = backoff(base, attempts);
            assert!(wait >= full / 2 && wait <= full, "{attempts}: {wait:?}");
        }
    }

    #[test]
    fn a_claimed_report_cannot_be_claimed_again_nor_after_removal() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.report");
        std::fs::write(&path, "x").unwrap();
        let first = claim(&path).unwrap();
        assert!(claim(&path).is_none());
        // Sent and removed by the holder: a late opener finds it gone.
        let late = File::open(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        drop(first);
        let lock = Flock::lock(late, FlockArg::LockExclusiveNonblock).unwrap();
        assert_eq!(lock.metadata().unwrap().nlink(), 0);
        assert!(claim(&path).is_none());
    }

    #[test]
    fn atomic_writes_leave_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/b.toml");
        write_atomically(&path, b"one").unwrap();
        write_atomically(&path, b"two").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        let names: Vec<_> = std::fs::read_dir(dir.path().join("a"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["b.toml"]);
    }
}
