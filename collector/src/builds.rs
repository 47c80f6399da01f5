//! Builds: `POST /api/v1/builds` registers an instrumented build's ELF
//! files (ingest token): their `.debug_site_info` tables, each stored once
//! under its (unit signature, scheme), and the files themselves by GNU
//! build id for symbolization. Crashes that were waiting for these files
//! are symbolized before the answer.

use std::io::Write;
use std::path::{Path, PathBuf};

use axum::Json;
use axum::body::Body;
use axum::extract::State;
use axum::http::HeaderMap;
use flate2::Compression;
use flate2::write::GzEncoder;
use object::{Object, ObjectSection};
use sampler_extract::SectionContents;
use serde::{Deserialize, Serialize};
use sqlx::Row;

use crate::server::AppState;
use crate::store::now_ms;
use crate::tokens::Scope;
use crate::upload::{Refusal, authorize};

/// The section `sampler-cc` writes site tables into.
pub const SITE_SECTION: &str = ".debug_site_info";

/// The section of the scales each site was built with (`sampler-cc
/// -fsampler-rates`; schema/site-table.md, "Scales").
pub const SCALES_SECTION: &str = ".debug_site_scales";

/// One `<sites>` section of a file.
#[derive(Debug)]
struct SiteTable {
    unit: String,
    scheme: String,
    n_sites: i64,
    text: String,
}

/// What was read from one uploaded file.
#[derive(Debug)]
struct ReadFile {
    name: String,
    gnu_build_id: Option<String>,
    has_dwarf: bool,
    tables: Vec<SiteTable>,
    /// `.debug_site_scales` (a build with rates): (unit, scheme, one scale
    /// per line).
    scales: Vec<(String, String, String)>,
    size: i64,
    data_gz: Option<Vec<u8>>,
}

/// The answer of a registration, per file.
#[derive(Debug, Serialize, Deserialize)]
pub struct FileSummary {
    /// The file's name as uploaded.
    pub name: String,
    /// Its GNU build id, lowercase hex.
    pub build_id: Option<String>,
    /// Whether it carries DWARF debug information.
    pub debug_info: bool,
    /// How many site tables it holds.
    pub site_tables: usize,
}

/// The answer of a registration.
#[derive(Debug, Serialize, Deserialize)]
pub struct BuildSummary {
    /// The application.
    pub application: String,
    /// The build's version.
    pub version: String,
    /// The build's release.
    pub release: String,
    /// Each file.
    pub files: Vec<FileSummary>,
    /// Site tables not known before.
    pub new_site_tables: u64,
    /// Crashes of the application symbolized thanks to these files.
    pub symbolized: usize,
    /// Source files registered with the build.
    #[serde(default)]
    pub sources: usize,
}

fn read_file(name: String, path: &Path) -> Result<ReadFile, Refusal> {
    let bad = |what: String| Refusal::malformed(format!("file `{name}`: {what}"));
    let mut tables = Vec::new();
    let mut problem = None;
    sampler_extract::for_each_section(path, SITE_SECTION, &mut |_, contents| -> Result<(), ()> {
        match contents {
            Ok(SectionContents::Data(bytes)) => {
                match sampler_formats::read_site_table(bytes.as_slice()) {
                    Ok(sections) => {
                        for section in sections {
                            let mut text = Vec::new();
                            sampler_formats::write_sites_section(
                                &mut text,
                                &section.key,
                                &section.sites,
                            )
                            .expect("writing to a Vec");
                            tables.push(SiteTable {
                                unit: section.key.unit.to_string(),
                                scheme: section.key.scheme.as_str().to_owned(),
                                n_sites: section.sites.len() as i64,
                                text: String::from_utf8(text).expect("site tables are UTF-8"),
                            });
                        }
                    }
                    Err(error) => problem = Some(format!("section {SITE_SECTION}: {error}")),
                }
            }
            Ok(SectionContents::Missing | SectionContents::Empty) => {}
            Err(error) => problem = Some(format!("{error}")),
        }
        Ok(())
    })
    .ok();
    if let Some(problem) = problem {
        return Err(bad(problem));
    }
    let mut scales = Vec::new();
    sampler_extract::for_each_section(path, SCALES_SECTION, &mut |_, contents| -> Result<(), ()> {
        match contents {
            Ok(SectionContents::Data(bytes)) => {
                let text = String::from_utf8_lossy(&bytes).replace('\0', "");
                match sampler_formats::read_scales(text.as_bytes()) {
                    Ok(sections) => scales.extend(sections.into_iter().map(|section| {
                        let lines: String = section
                            .scales
                            .iter()
                            .map(|scale| format!("{scale}\n"))
                            .collect();
                        (
                            section.key.unit.to_string(),
                            section.key.scheme.as_str().to_owned(),
                            lines,
                        )
                    })),
                    Err(error) => problem = Some(format!("section {SCALES_SECTION}: {error}")),
                }
            }
            Ok(SectionContents::Missing | SectionContents::Empty) => {}
            Err(error) => problem = Some(format!("{error}")),
        }
        Ok(())
    })
    .ok();
    if let Some(problem) = problem {
        return Err(bad(problem));
    }
    let data = std::fs::read(path)
        .map_err(|error| bad(format!("cannot read the received copy: {error}")))?;
    let (gnu_build_id, has_dwarf) = match object::File::parse(data.as_slice()) {
        Ok(file) => (
            file.build_id().ok().flatten().map(hex::encode),
            file.section_by_name(".debug_info")
                .is_some_and(|section| section.size() > 0),
        ),
        // An archive of objects has site tables but no build id.
        Err(_) if !tables.is_empty() => (None, false),
        Err(error) => return Err(bad(format!("not an ELF file: {error}"))),
    };
    if tables.is_empty() && gnu_build_id.is_none() {
        return Err(bad(format!(
            "neither site tables ({SITE_SECTION}) nor a GNU build id: nothing to register"
        )));
    }
    let data_gz = match gnu_build_id {
        Some(_) => {
            let mut encoder = GzEncoder::new(Vec::new(), Compression::fast());
            encoder.write_all(&data).expect("writing to a Vec");
            Some(encoder.finish().expect("writing to a Vec"))
        }
        None => None,
    };
    Ok(ReadFile {
        name,
        gnu_build_id,
        has_dwarf,
        tables,
        scales,
        size: data.len() as i64,
        data_gz,
    })
}

/// Largest source file `build add --sources` registers.
pub const MAX_SOURCE_BYTES: usize = 16 << 20;

/// A source file named by the build's site tables, as the compiler saw
/// its path.
#[derive(Debug)]
struct Source {
    path: String,
    text: Vec<u8>,
}

/// What one registration brought: ELF files on scratch, source texts in
/// memory.
#[derive(Default)]
struct Received {
    files: Vec<ReceivedFile>,
    sources: Vec<Source>,
}

/// A received file, deleted when dropped.
struct ReceivedFile {
    name: String,
    path: PathBuf,
}

impl Drop for ReceivedFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// A `source` part's path: the site tables' spelling, so it is kept whole
/// (not reduced to its last component like a file's name).
fn source_path(part: usize, name: Option<&str>) -> Result<String, Refusal> {
    let bad = |what: &str| Refusal::malformed(format!("part {part} (a source): {what}"));
    let path = name.ok_or_else(|| bad("no file name"))?;
    if path.is_empty() || path.len() > 4096 || path.contains('\0') {
        return Err(bad("a path of 1 to 4096 bytes without NUL expected"));
    }
    Ok(path.to_owned())
}

async fn receive_files(
    state: &AppState,
    headers: &HeaderMap,
    body: Body,
) -> Result<Received, Refusal> {
    let mut multipart = crate::upload::multipart(headers, body, state.limits.max_build_bytes)?;
    let scratch = state.scratch.clone();
    tokio::fs::create_dir_all(&scratch).await.map_err(|error| {
        Refusal::unavailable(format!("cannot create {}: {error}", scratch.display()))
    })?;
    let mut received = Received::default();
    let mut part = 0;
    while let Some(mut field) = multipart
        .next_field()
        .await
        .map_err(crate::upload::multipart_refusal)?
    {
        part += 1;
        if field.name() == Some("source") {
            let path = source_path(part, field.file_name())?;
            let mut text = Vec::new();
            while let Some(chunk) = field
                .chunk()
                .await
                .map_err(crate::upload::multipart_refusal)?
            {
                if text.len() + chunk.len() > MAX_SOURCE_BYTES {
                    return Err(Refusal::too_large(format!(
                        "source `{path}`: larger than {MAX_SOURCE_BYTES} bytes"
                    )));
                }
                text.extend_from_slice(&chunk);
            }
            received.sources.push(Source { path, text });
            continue;
        }
        let name = field
            .file_name()
            .or(field.name())
            .map(|name| name.rsplit('/').next().unwrap_or(name).to_owned())
            .filter(|name| !name.is_empty() && name.len() <= 255)
            .ok_or_else(|| Refusal::malformed(format!("part {part}: no file name")))?;
        let path = scratch.join(format!("upload-{}", uuid::Uuid::new_v4()));
        let file = ReceivedFile { name, path };
        let mut out = tokio::fs::File::create(&file.path).await.map_err(|error| {
            Refusal::unavailable(format!("cannot write {}: {error}", file.path.display()))
        })?;
        while let Some(chunk) = field
            .chunk()
            .await
            .map_err(crate::upload::multipart_refusal)?
        {
            tokio::io::AsyncWriteExt::write_all(&mut out, &chunk)
                .await
                .map_err(|error| {
                    Refusal::unavailable(format!("cannot write {}: {error}", file.path.display()))
                })?;
        }
        // tokio's file hands writes to a blocking thread: without a flush
        // the last one may still be in flight when the file is read back
        // (a build then read as a truncated ELF file, now and then).
        tokio::io::AsyncWriteExt::flush(&mut out)
            .await
            .map_err(|error| {
                Refusal::unavailable(format!("cannot write {}: {error}", file.path.display()))
            })?;
        received.files.push(file);
    }
    if received.files.is_empty() {
        return Err(Refusal::malformed(
            "no files: expected one part per ELF file",
        ));
    }
    Ok(received)
}

/// The handler.
pub async fn add(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<BuildSummary>, Refusal> {
    let grant = authorize(&state, &headers, Scope::Ingest).await?;
    let text = |name: &str| {
        headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .map(str::trim)
    };
    if let Some(app) = text("sampler-application-name")
        && app != grant.application
    {
        return Err(Refusal::malformed(format!(
            "the token is for application `{}`, not `{app}`",
            grant.application
        )));
    }
    let version = text("sampler-application-version")
        .filter(|v| !v.is_empty())
        .ok_or_else(|| {
            Refusal::malformed("no `Sampler-Application-Version` header: a build needs a version")
        })?
        .to_owned();
    let release = text("sampler-application-release")
        .unwrap_or_default()
        .to_owned();
    let Received {
        files: received,
        sources,
    } = receive_files(&state, &headers, body).await?;
    let files = tokio::task::spawn_blocking(move || {
        received
            .iter()
            .map(|file| read_file(file.name.clone(), &file.path))
            .collect::<Result<Vec<_>, _>>()
    })
    .await
    .map_err(|error| Refusal::unavailable(format!("reading the files failed: {error}")))??;

    let database =
        |error: sqlx::Error| Refusal::unavailable(format!("the database failed: {error}"));
    let mut tx = state.store.pool.begin().await.map_err(database)?;
    let build_id = crate::ingest::build_id(&mut tx, grant.application_id, &version, &release)
        .await
        .map_err(database)?;
    sqlx::query("UPDATE builds SET registered_ms = $1 WHERE id = $2")
        .bind(now_ms())
        .bind(build_id)
        .execute(&mut *tx)
        .await
        .map_err(database)?;
    let mut new_site_tables = 0;
    for file in &files {
        for table in &file.tables {
            new_site_tables += sqlx::query(
                "INSERT INTO site_tables (unit_signature, scheme, n_sites, sites) VALUES ($1, $2, $3, $4) \
                 ON CONFLICT (unit_signature, scheme) DO NOTHING",
            )
            .bind(&table.unit)
            .bind(&table.scheme)
            .bind(table.n_sites)
            .bind(&table.text)
            .execute(&mut *tx)
            .await
            .map_err(database)?
            .rows_affected();
            let table_id: i64 =
                sqlx::query("SELECT id FROM site_tables WHERE unit_signature = $1 AND scheme = $2")
                    .bind(&table.unit)
                    .bind(&table.scheme)
                    .fetch_one(&mut *tx)
                    .await
                    .and_then(|row| row.try_get(0))
                    .map_err(database)?;
            sqlx::query(
                "INSERT INTO build_site_tables (build_id, site_table_id) VALUES ($1, $2) ON CONFLICT DO NOTHING",
            )
            .bind(build_id)
            .bind(table_id)
            .execute(&mut *tx)
            .await
            .map_err(database)?;
        }
        for (unit, scheme, scales) in &file.scales {
            sqlx::query(
                "INSERT INTO build_site_scales (build_id, unit_signature, scheme, scales) \
                 VALUES ($1, $2, $3, $4) ON CONFLICT (build_id, unit_signature, scheme) \
                 DO UPDATE SET scales = excluded.scales",
            )
            .bind(build_id)
            .bind(unit)
            .bind(scheme)
            .bind(scales)
            .execute(&mut *tx)
            .await
            .map_err(database)?;
        }
        if let (Some(gnu_build_id), Some(data_gz)) = (&file.gnu_build_id, &file.data_gz) {
            // A file with DWARF replaces a stripped one of the same build id.
            sqlx::query(
                "INSERT INTO debug_files (gnu_build_id, file_name, size, data_gz, has_dwarf, added_ms) \
                 VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (gnu_build_id) DO UPDATE SET \
                 file_name = excluded.file_name, size = excluded.size, data_gz = excluded.data_gz, \
                 has_dwarf = excluded.has_dwarf, added_ms = excluded.added_ms \
                 WHERE debug_files.has_dwarf < excluded.has_dwarf",
            )
            .bind(gnu_build_id)
            .bind(&file.name)
            .bind(file.size)
            .bind(data_gz.as_slice())
            .bind(i64::from(file.has_dwarf))
            .bind(now_ms())
            .execute(&mut *tx)
            .await
            .map_err(database)?;
        }
        sqlx::query(
            "INSERT INTO build_files (build_id, file_name, gnu_build_id, n_site_tables) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (build_id, file_name) DO UPDATE SET gnu_build_id = excluded.gnu_build_id, \
             n_site_tables = excluded.n_site_tables",
        )
        .bind(build_id)
        .bind(&file.name)
        .bind(&file.gnu_build_id)
        .bind(file.tables.len() as i64)
        .execute(&mut *tx)
        .await
        .map_err(database)?;
    }
    for source in &sources {
        let mut encoder = GzEncoder::new(Vec::new(), Compression::default());
        encoder.write_all(&source.text).expect("writing to a Vec");
        let data_gz = encoder.finish().expect("writing to a Vec");
        sqlx::query(
            "INSERT INTO build_sources (build_id, path, size, data_gz) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (build_id, path) DO UPDATE SET size = excluded.size, data_gz = excluded.data_gz",
        )
        .bind(build_id)
        .bind(&source.path)
        .bind(source.text.len() as i64)
        .bind(data_gz.as_slice())
        .execute(&mut *tx)
        .await
        .map_err(database)?;
    }
    tx.commit().await.map_err(database)?;
    state
        .debug
        .forget(files.iter().filter_map(|file| file.gnu_build_id.as_deref()));
    let symbolized =
        crate::crashes::symbolize_pending(&state.store, &state.debug, grant.application_id)
            .await
            .map_err(|error| {
                Refusal::unavailable(format!("symbolizing waiting crashes failed: {error}"))
            })?;
    tracing::info!(application = %grant.application, %version, %release, files = files.len(), new_site_tables, symbolized, "build registered");
    Ok(Json(BuildSummary {
        application: grant.application,
        version,
        release,
        files: files
            .iter()
            .map(|file| FileSummary {
                name: file.name.clone(),
                build_id: file.gnu_build_id.clone(),
                debug_info: file.has_dwarf,
                site_tables: file.tables.len(),
            })
            .collect(),
        new_site_tables,
        symbolized,
        sources: sources.len(),
    }))
}

/// The source files that the site tables of `files` name, in their
/// spelling, each once, sorted.
pub fn named_sources(files: &[PathBuf]) -> anyhow::Result<Vec<String>> {
    let mut paths = std::collections::BTreeSet::new();
    for path in files {
        let mut problem = None;
        sampler_extract::for_each_section(path, SITE_SECTION, &mut |_,
                                                                    contents|
         -> Result<(), ()> {
            match contents {
                Ok(SectionContents::Data(bytes)) => {
                    match sampler_formats::read_site_table(bytes.as_slice()) {
                        Ok(sections) => paths.extend(
                            sections
                                .iter()
                                .flat_map(|section| &section.sites)
                                .map(|site| site.file.clone().into_owned()),
                        ),
                        Err(error) => problem = Some(format!("section {SITE_SECTION}: {error}")),
                    }
                }
                Ok(SectionContents::Missing | SectionContents::Empty) => {}
                Err(error) => problem = Some(error.to_string()),
            }
            Ok(())
        })
        .ok();
        if let Some(problem) = problem {
            anyhow::bail!("{}: {problem}", path.display());
        }
    }
    Ok(paths.into_iter().collect())
}

/// A build to register with `upload_build`.
#[derive(Debug, Clone, Default)]
pub struct BuildUpload<'a> {
    /// The application.
    pub app: &'a str,
    /// The build's version.
    pub version: &'a str,
    /// The build's release.
    pub release: Option<&'a str>,
    /// Its ELF files.
    pub files: &'a [PathBuf],
    /// Register the source files the site tables name too, relative paths
    /// read from this folder.
    pub sources: Option<&'a Path>,
}

/// What `upload_build` could not send.
#[derive(Debug, Default)]
pub struct Skipped {
    /// Source files that could not be read or were too large, with why.
    pub sources: Vec<String>,
}

/// `sampler-collector build add`: uploads a build's files (and sources).
pub async fn upload_build(
    server: &str,
    token: &str,
    build: &BuildUpload<'_>,
) -> anyhow::Result<(BuildSummary, Skipped)> {
    let mut form = reqwest::multipart::Form::new();
    for path in build.files {
        let file = tokio::fs::File::open(path)
            .await
            .map_err(|error| anyhow::anyhow!("{}: {error}", path.display()))?;
        let length = file.metadata().await?.len();
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let part = reqwest::multipart::Part::stream_with_length(reqwest::Body::from(file), length)
            .file_name(name)
            .mime_str("application/octet-stream")?;
        form = form.part("file", part);
    }
    let mut skipped = Skipped::default();
    if let Some(root) = build.sources {
        let files = build.files.to_vec();
        let named = tokio::task::spawn_blocking(move || named_sources(&files)).await??;
        for name in named {
            let path = root.join(&name);
            match tokio::fs::read(&path).await {
                Ok(text) if text.len() <= MAX_SOURCE_BYTES => {
                    let part = reqwest::multipart::Part::bytes(text)
                        .file_name(name)
                        .mime_str("text/plain")?;
                    form = form.part("source", part);
                }
                Ok(text) => skipped.sources.push(format!(
                    "{}: {} bytes, more than {MAX_SOURCE_BYTES}",
                    path.display(),
                    text.len()
                )),
                Err(error) => skipped.sources.push(format!("{}: {error}", path.display())),
            }
        }
    }
    let url = format!("{}/api/v1/builds", server.trim_end_matches('/'));
    let mut request = reqwest::Client::new()
        .post(&url)
        .bearer_auth(token)
        .header("Sampler-Application-Name", build.app)
        .header("Sampler-Application-Version", build.version)
        .multipart(form);
    if let Some(release) = build.release {
        request = request.header("Sampler-Application-Release", release);
    }
    let response = request
        .send()
        .await
        .map_err(|error| anyhow::anyhow!("{url}: {error}"))?;
    let status = response.status();
    if !status.is_success() {
        let body = response.text().await.unwrap_or_default();
        anyhow::bail!("{url}: {status}: {}", body.trim());
    }
    Ok((response.json().await?, skipped))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_with_nothing_to_register_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notes.txt");
        std::fs::write(&path, "hello").unwrap();
        let error = read_file("notes.txt".into(), &path).unwrap_err();
        assert_eq!(error.status, axum::http::StatusCode::BAD_REQUEST);
        assert!(
            error.message.starts_with("file `notes.txt`: "),
            "{}",
            error.message
        );
    }
}
