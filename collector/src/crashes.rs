//! Crashes: symbolizing `main-backtrace` against the registered debug
//! files, and grouping by the signature of the program's own top frames.
//!
//! Symbolization is `sampler_resolve::backtrace` (addr2line on gimli), the
//! same code as the offline `resolve-backtrace`. Debug files come from the
//! `debug_files` table by GNU build id, parsed once and kept in memory (a
//! bounded cache). A crash whose program files have not been registered is
//! stored unsymbolized and ungrouped (`runs.symbolized = 0`); registering
//! its build symbolizes and groups it ([`symbolize_pending`]).

use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::sync::{Arc, Mutex};

use sampler_resolve::backtrace::{
    DebugFiles, DebugObject, SymbolizedFrame, crash_signature, is_system_module, parse_backtrace,
    parse_modules, symbolize,
};
use sqlx::{Any, Row, Transaction};

use crate::ingest::CrashRecord;
use crate::store::{Backend, Store};

/// How many of the program's own frames make a crash's signature.
pub const SIGNATURE_DEPTH: usize = 5;

/// One frame as stored and served (`backtrace_json`, the read API).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Frame {
    /// The address as the backtrace printed it, `0x...`.
    pub address: String,
    /// The object's path.
    pub module: String,
    /// Its GNU build id.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub build_id: Option<String>,
    /// The function, when known.
    pub function: Option<String>,
    /// The source file, when known.
    pub file: Option<String>,
    /// The line, when known.
    pub line: Option<u32>,
    /// Whether the frame was inlined into the next one.
    #[serde(default)]
    pub inlined: bool,
}

impl From<&SymbolizedFrame> for Frame {
    fn from(frame: &SymbolizedFrame) -> Self {
        Self {
            address: format!("{:#x}", frame.address),
            module: frame.module.clone(),
            build_id: frame.build_id.clone(),
            function: frame.function.clone(),
            file: frame.file.clone(),
            line: frame.line,
            inlined: frame.inlined,
        }
    }
}

/// Debug objects by build id, loaded from the database on demand.
#[derive(Debug, Clone)]
pub struct DebugCache {
    loaded: Arc<Mutex<HashMap<String, Arc<DebugObject>>>>,
    capacity: usize,
}

/// What symbolizing one crash gave.
#[derive(Debug, Clone)]
pub enum Symbolized {
    /// Frames and group signature.
    Done(CrashRecord),
    /// Some of the program's own objects have no registered debug file.
    Pending,
}

impl DebugCache {
    /// A cache of at most `capacity` parsed objects.
    pub fn new(capacity: usize) -> Self {
        Self {
            loaded: Arc::default(),
            capacity: capacity.max(1),
        }
    }

    /// Keeps `object`; a full cache starts over (crashes of one release
    /// use few objects, so the working set comes back at once).
    fn insert(&self, build_id: String, object: Arc<DebugObject>) {
        let mut loaded = self.loaded.lock().expect("debug cache poisoned");
        if loaded.len() >= self.capacity {
            loaded.clear();
        }
        loaded.insert(build_id, object);
    }

    /// Drops these objects, so that a file registered again (with debug
    /// information where it had none) is read anew.
    pub fn forget<'a>(&self, build_ids: impl IntoIterator<Item = &'a str>) {
        let mut loaded = self.loaded.lock().expect("debug cache poisoned");
        for build_id in build_ids {
            loaded.remove(build_id);
        }
    }

    /// Which of `build_ids` are in memory or registered in the database.
    async fn registered(
        &self,
        store: &Store,
        build_ids: &[&str],
    ) -> anyhow::Result<HashSet<String>> {
        let mut registered = HashSet::new();
        let mut unknown = Vec::new();
        {
            let loaded = self.loaded.lock().expect("debug cache poisoned");
            for &id in build_ids {
                if loaded.contains_key(id) {
                    registered.insert(id.to_owned());
                } else if !unknown.contains(&id) {
                    unknown.push(id);
                }
            }
        }
        if unknown.is_empty() {
            return Ok(registered);
        }
        let placeholders: Vec<String> = (1..=unknown.len())
            .map(|n| match store.backend {
                Backend::Sqlite => "?".to_owned(),
                Backend::Postgres => format!("${n}"),
            })
            .collect();
        let sql = format!(
            "SELECT gnu_build_id FROM debug_files WHERE gnu_build_id IN ({})",
            placeholders.join(", ")
        );
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
        for id in &unknown {
            query = query.bind(*id);
        }
        for row in query.fetch_all(&store.pool).await? {
            registered.insert(row.try_get::<String, _>(0)?);
        }
        Ok(registered)
    }

    async fn get(&self, store: &Store, build_id: &str) -> anyhow::Result<Option<Arc<DebugObject>>> {
        if let Some(object) = self
            .loaded
            .lock()
            .expect("debug cache poisoned")
            .get(build_id)
        {
            return Ok(Some(object.clone()));
        }
        let row = sqlx::query("SELECT data_gz FROM debug_files WHERE gnu_build_id = $1")
            .bind(build_id)
            .fetch_optional(&store.pool)
            .await?;
        let Some(row) = row else { return Ok(None) };
        let data_gz: Vec<u8> = row.try_get(0)?;
        let object = tokio::task::spawn_blocking(move || -> anyhow::Result<DebugObject> {
            let mut data = Vec::new();
            flate2::read::GzDecoder::new(data_gz.as_slice()).read_to_end(&mut data)?;
            Ok(DebugObject::parse(data)?)
        })
        .await??;
        let object = Arc::new(object);
        self.insert(build_id.to_owned(), object.clone());
        Ok(Some(object))
    }

    /// Symbolizes a crash's backtrace with the registered debug files.
    /// Malformed backtrace or module text is an error naming its line.
    pub async fn symbolize(
        &self,
        store: &Store,
        backtrace: &str,
        modules: Option<&str>,
    ) -> anyhow::Result<Symbolized> {
        let frames = parse_backtrace(backtrace)
            .map_err(|error| anyhow::anyhow!("main-backtrace: {error}"))?;
        let modules = match modules {
            Some(text) => {
                parse_modules(text).map_err(|error| anyhow::anyhow!("modules: {error}"))?
            }
            None => Vec::new(),
        };
        // One query tells which of the crash's objects are registered;
        // only those not in memory are then read.
        let wanted: Vec<&str> = modules
            .iter()
            .filter_map(|module| module.build_id.as_deref())
            .collect();
        let registered = self.registered(store, &wanted).await?;
        let mut found = HashMap::new();
        let mut missing = false;
        for module in &modules {
            let Some(build_id) = &module.build_id else {
                continue;
            };
            if !registered.contains(build_id.as_str()) {
                missing |= !is_system_module(&module.path);
                continue;
            }
            if let Some(object) = self.get(store, build_id).await? {
                found.insert(build_id.clone(), object);
            }
        }
        if missing {
            return Ok(Symbolized::Pending);
        }
        let frames = tokio::task::spawn_blocking(move || {
            let symbolized = symbolize(&frames, &modules, &Found(found));
            let signature = crash_signature(&symbolized, SIGNATURE_DEPTH);
            (symbolized, signature)
        })
        .await?;
        let (symbolized, signature) = frames;
        let frames: Vec<Frame> = symbolized.iter().map(Frame::from).collect();
        Ok(Symbolized::Done(CrashRecord {
            frames_json: serde_json::to_string(&frames)?,
            signature: signature.unwrap_or_else(|| "(no frames)".to_owned()),
        }))
    }
}

struct Found(HashMap<String, Arc<DebugObject>>);

impl DebugFiles for Found {
    fn find(&self, build_id: Option<&str>, _path: &str) -> Option<Arc<DebugObject>> {
        self.0.get(build_id?).cloned()
    }
}

/// The group of `crash` in `application`, counted once more, created when
/// new; returns its id.
pub async fn record_group(
    tx: &mut Transaction<'_, Any>,
    application_id: i64,
    build_id: i64,
    crash: &CrashRecord,
    seen_ms: i64,
) -> Result<i64, sqlx::Error> {
    let id: i64 = sqlx::query(
        "INSERT INTO crash_groups (application_id, signature, frames_json, first_seen_ms, last_seen_ms, runs) \
         VALUES ($1, $2, $3, $4, $4, 1) ON CONFLICT (application_id, signature) DO UPDATE SET \
         runs = crash_groups.runs + 1, \
         first_seen_ms = CASE WHEN excluded.first_seen_ms < crash_groups.first_seen_ms \
             THEN excluded.first_seen_ms ELSE crash_groups.first_seen_ms END, \
         last_seen_ms = CASE WHEN excluded.last_seen_ms > crash_groups.last_seen_ms \
             THEN excluded.last_seen_ms ELSE crash_groups.last_seen_ms END \
         RETURNING id",
    )
    .bind(application_id)
    .bind(&crash.signature)
    .bind(&crash.frames_json)
    .bind(seen_ms)
    .fetch_one(&mut **tx)
    .await?
    .try_get(0)?;
    sqlx::query(
        "INSERT INTO crash_group_builds (crash_group_id, build_id, runs) VALUES ($1, $2, 1) \
         ON CONFLICT (crash_group_id, build_id) DO UPDATE SET runs = crash_group_builds.runs + 1",
    )
    .bind(id)
    .bind(build_id)
    .execute(&mut **tx)
    .await?;
    Ok(id)
}

/// Symbolizes and groups the application's crashes that were waiting for
/// debug files; returns how many were done.
pub async fn symbolize_pending(
    store: &Store,
    cache: &DebugCache,
    application_id: i64,
) -> anyhow::Result<usize> {
    let mut done = 0;
    let mut after = 0i64;
    loop {
        let rows = sqlx::query(
            "SELECT id, build_id, received_ms FROM runs WHERE application_id = $1 AND symbolized = 0 AND id > $2 \
             ORDER BY id LIMIT 200",
        )
        .bind(application_id)
        .bind(after)
        .fetch_all(&store.pool)
        .await?;
        if rows.is_empty() {
            return Ok(done);
        }
        for row in rows {
            let id: i64 = row.try_get(0)?;
            let build_id: i64 = row.try_get(1)?;
            let received_ms: i64 = row.try_get(2)?;
            after = id;
            let parts =
                crate::api::subreport_texts(store, id, &["main-backtrace", "modules"]).await?;
            let Some(backtrace) = parts.get("main-backtrace") else {
                continue;
            };
            let modules = parts.get("modules").map(String::as_str);
            let Symbolized::Done(crash) = cache.symbolize(store, backtrace, modules).await? else {
                continue;
            };
            let mut tx = store.pool.begin().await?;
            // Another server may have done it meanwhile: count it once.
            let claimed = sqlx::query(
                "UPDATE runs SET symbolized = 1, backtrace_json = $1 WHERE id = $2 AND symbolized = 0",
            )
            .bind(&crash.frames_json)
            .bind(id)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            if claimed == 1 {
                let group =
                    record_group(&mut tx, application_id, build_id, &crash, received_ms).await?;
                sqlx::query("UPDATE runs SET crash_group_id = $1 WHERE id = $2")
                    .bind(group)
                    .bind(id)
                    .execute(&mut *tx)
                    .await?;
            }
            tx.commit().await?;
            done += 1;
        }
    }
}
