//! The read API, JSON under `/api/v1/`, for read tokens of the application.

use std::collections::HashMap;
use std::io::Read;

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sqlx::Row;
use sqlx::any::AnyRow;

use crate::counters::{Rows, RunSamples};
use crate::crashes::Frame;
use crate::rankings::{RankingQuery, RankingSpec, RankingView};
use crate::server::AppState;
use crate::store::{Store, opt_text};
use crate::tokens::{Grant, Scope};
use crate::upload::{Refusal, authorize};
use sampler_analysis::collector_db::Selection;

/// A read request's failure.
fn not_found(what: impl Into<String>) -> Refusal {
    Refusal {
        status: StatusCode::NOT_FOUND,
        reason: "not_found",
        message: what.into(),
        retry_after: None,
    }
}

fn database(error: impl std::fmt::Display) -> Refusal {
    Refusal::unavailable(format!("the database failed: {error}"))
}

/// The read token's grant, and the application the query names (which
/// must be the token's own).
pub(crate) async fn reader(
    state: &AppState,
    headers: &HeaderMap,
    app: Option<&str>,
) -> Result<Grant, Refusal> {
    let grant = authorize(state, headers, Scope::Read).await?;
    if let Some(app) = app
        && app != grant.application
    {
        return Err(Refusal {
            status: StatusCode::FORBIDDEN,
            reason: "forbidden",
            message: format!(
                "the token is for application `{}`, not `{app}`",
                grant.application
            ),
            retry_after: None,
        });
    }
    Ok(grant)
}

/// RFC 3339 in UTC, with milliseconds.
pub fn ms_to_rfc3339(ms: i64) -> String {
    jiff::Timestamp::from_millisecond(ms)
        .map_or_else(|_| ms.to_string(), |time| format!("{time:.3}"))
}

/// `GET /api/v1/applications`: the token's application.
pub async fn applications(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> Result<Json<Value>, Refusal> {
    let grant = reader(&state, &headers, None).await?;
    let row = sqlx::query(
        "SELECT a.created_ms, COUNT(b.id), COALESCE(SUM(b.runs_success), 0), COALESCE(SUM(b.runs_error), 0), \
         COALESCE(SUM(b.runs_crash), 0) FROM applications a LEFT JOIN builds b ON b.application_id = a.id \
         WHERE a.id = $1 GROUP BY a.id, a.created_ms",
    )
    .bind(grant.application_id)
    .fetch_one(&state.store.pool)
    .await
    .map_err(database)?;
    let get = |i| row.try_get::<i64, _>(i).map_err(database);
    Ok(Json(json!({ "applications": [{
        "name": grant.application,
        "created": ms_to_rfc3339(get(0)?),
        "builds": get(1)?,
        "runs": { "success": get(2)?, "error": get(3)?, "crash": get(4)? },
    }]})))
}

/// `?app=NAME`
#[derive(Debug, Deserialize)]
pub struct AppQuery {
    app: Option<String>,
}

fn build_json(row: &AnyRow) -> Result<Value, sqlx::Error> {
    let registered: Option<i64> = row.try_get("registered_ms")?;
    let first: Option<i64> = row.try_get("first_run_ms")?;
    let last: Option<i64> = row.try_get("last_run_ms")?;
    Ok(json!({
        "version": row.try_get::<String, _>("version")?,
        "release": row.try_get::<String, _>("release")?,
        "registered": registered.map(ms_to_rfc3339),
        "first_run": first.map(ms_to_rfc3339),
        "last_run": last.map(ms_to_rfc3339),
        "runs": {
            "success": row.try_get::<i64, _>("runs_success")?,
            "error": row.try_get::<i64, _>("runs_error")?,
            "crash": row.try_get::<i64, _>("runs_crash")?,
        },
    }))
}

/// `GET /api/v1/builds?app=NAME`
pub async fn builds(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(query): Query<AppQuery>,
) -> Result<Json<Value>, Refusal> {
    let grant = reader(&state, &headers, query.app.as_deref()).await?;
    let rows = sqlx::query(
        "SELECT version, release, registered_ms, first_run_ms, last_run_ms, runs_success, runs_error, runs_crash \
         FROM builds WHERE application_id = $1 ORDER BY id",
    )
    .bind(grant.application_id)
    .fetch_all(&state.store.pool)
    .await
    .map_err(database)?;
    let builds = rows
        .iter()
        .map(build_json)
        .collect::<Result<Vec<_>, _>>()
        .map_err(database)?;
    Ok(Json(
        json!({ "application": grant.application, "builds": builds }),
    ))
}

/// `GET /api/v1/runs` filters.
#[derive(Debug, Deserialize)]
pub struct RunsQuery {
    app: Option<String>,
    version: Option<String>,
    release: Option<String>,
    outcome: Option<String>,
    /// Received at or after, milliseconds since the epoch.
    since: Option<i64>,
    /// Received before, milliseconds since the epoch.
    until: Option<i64>,
    crash_group: Option<i64>,
    limit: Option<i64>,
    cursor: Option<String>,
}

/// Most runs one page holds.
pub const MAX_PAGE: i64 = 1000;

const RUN_COLUMNS: &str = "r.id, r.run_id, r.report_id, b.version, b.release, r.received_ms, r.sampler_version, \
    r.executable_path, r.instrumentor_version, r.build_distribution, r.sparsity, r.exit_status, r.exit_signal, \
    r.outcome, r.report_bytes, r.symbolized, r.crash_group_id";

fn run_summary(row: &AnyRow) -> Result<Value, sqlx::Error> {
    let received: i64 = row.try_get("received_ms")?;
    let symbolized: Option<i64> = row.try_get("symbolized")?;
    Ok(json!({
        "id": row.try_get::<String, _>("run_id")?,
        "report_id": opt_text(row, "report_id")?,
        "version": row.try_get::<String, _>("version")?,
        "release": row.try_get::<String, _>("release")?,
        "received": ms_to_rfc3339(received),
        "received_ms": received,
        "sampler_version": opt_text(row, "sampler_version")?,
        "executable_path": opt_text(row, "executable_path")?,
        "instrumentor_version": opt_text(row, "instrumentor_version")?,
        "build_distribution": opt_text(row, "build_distribution")?,
        "sparsity": row.try_get::<Option<i64>, _>("sparsity")?,
        "exit_status": row.try_get::<i64, _>("exit_status")?,
        "exit_signal": row.try_get::<i64, _>("exit_signal")?,
        "outcome": row.try_get::<String, _>("outcome")?,
        "report_bytes": row.try_get::<i64, _>("report_bytes")?,
        "symbolized": symbolized.map(|value| value == 1),
        "crash_group": row.try_get::<Option<i64>, _>("crash_group_id")?,
    }))
}

/// `GET /api/v1/runs?app=NAME&version=&release=&outcome=&since=&until=&crash_group=&limit=&cursor=`:
/// newest first; `next_cursor` continues.
pub async fn runs(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(query): Query<RunsQuery>,
) -> Result<Json<Value>, Refusal> {
    let grant = reader(&state, &headers, query.app.as_deref()).await?;
    if let Some(outcome) = &query.outcome
        && !["success", "error", "crash"].contains(&outcome.as_str())
    {
        return Err(Refusal::malformed(format!(
            "outcome `{outcome}`: expected success, error or crash"
        )));
    }
    let limit = query.limit.unwrap_or(100);
    if !(1..=MAX_PAGE).contains(&limit) {
        return Err(Refusal::malformed(format!(
            "limit {limit}: expected 1 to {MAX_PAGE}"
        )));
    }
    let before = match &query.cursor {
        Some(cursor) => cursor
            .parse::<i64>()
            .ok()
            .filter(|id| *id > 0)
            .ok_or_else(|| {
                Refusal::malformed(format!("cursor `{cursor}`: not a cursor this server gave"))
            })?,
        None => i64::MAX,
    };
    // Optional filters are `($n IS NULL OR column = $n)`: one statement
    // for every combination, prepared once by each database.
    let sql = format!(
        "SELECT {RUN_COLUMNS} FROM runs r JOIN builds b ON b.id = r.build_id \
         WHERE r.application_id = $1 AND r.id < $2 \
         AND ($3 IS NULL OR b.version = $3) AND ($4 IS NULL OR b.release = $4) \
         AND ($5 IS NULL OR r.outcome = $5) AND ($6 IS NULL OR r.received_ms >= $6) \
         AND ($7 IS NULL OR r.received_ms < $7) AND ($8 IS NULL OR r.crash_group_id = $8) \
         ORDER BY r.id DESC LIMIT $9"
    );
    let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(grant.application_id)
        .bind(before)
        .bind(&query.version)
        .bind(&query.release)
        .bind(&query.outcome)
        .bind(query.since)
        .bind(query.until)
        .bind(query.crash_group)
        .bind(limit)
        .fetch_all(&state.store.pool)
        .await
        .map_err(database)?;
    let runs = rows
        .iter()
        .map(run_summary)
        .collect::<Result<Vec<_>, _>>()
        .map_err(database)?;
    let next_cursor = if rows.len() as i64 == limit {
        rows.last()
            .map(|row| row.try_get::<i64, _>("id"))
            .transpose()
            .map_err(database)?
            .map(|id| id.to_string())
    } else {
        None
    };
    Ok(Json(
        json!({ "application": grant.application, "runs": runs, "next_cursor": next_cursor }),
    ))
}

async fn run_row(state: &AppState, grant: &Grant, run_id: &str) -> Result<AnyRow, Refusal> {
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT {RUN_COLUMNS}, r.counters, r.backtrace_json FROM runs r JOIN builds b ON b.id = r.build_id \
         WHERE r.run_id = $1 AND r.application_id = $2"
    )))
    .bind(run_id)
    .bind(grant.application_id)
    .fetch_optional(&state.store.pool)
    .await
    .map_err(database)?
    .ok_or_else(|| not_found(format!("no run `{run_id}` in application `{}`", grant.application)))
}

/// The texts of a run's subreports of the given names (all when empty).
pub async fn subreport_texts(
    store: &Store,
    id: i64,
    names: &[&str],
) -> anyhow::Result<HashMap<String, String>> {
    let rows =
        sqlx::query("SELECT name, data_gz FROM run_subreports WHERE run_id = $1 ORDER BY position")
            .bind(id)
            .fetch_all(&store.pool)
            .await?;
    let mut texts = HashMap::new();
    for row in rows {
        let name: String = row.try_get(0)?;
        if names.is_empty() || names.contains(&name.as_str()) {
            let data_gz: Vec<u8> = row.try_get(1)?;
            texts.insert(name, gunzip_text(&data_gz)?);
        }
    }
    Ok(texts)
}

fn gunzip_text(data_gz: &[u8]) -> anyhow::Result<String> {
    let mut text = String::new();
    flate2::read::MultiGzDecoder::new(data_gz).read_to_string(&mut text)?;
    Ok(text)
}

/// The site lines of the registered tables of `keys`, split into fields.
async fn site_tables(
    store: &Store,
    samples: &RunSamples,
) -> Result<HashMap<(String, String), Vec<String>>, sqlx::Error> {
    let mut tables = HashMap::new();
    for section in &samples.sections {
        let unit = section.key.unit.to_string();
        let scheme = section.key.scheme.as_str().to_owned();
        let row =
            sqlx::query("SELECT sites FROM site_tables WHERE unit_signature = $1 AND scheme = $2")
                .bind(&unit)
                .bind(&scheme)
                .fetch_optional(&store.pool)
                .await?;
        if let Some(row) = row {
            let text: String = row.try_get(0)?;
            let lines = text
                .lines()
                .skip(1)
                .filter(|line| *line != "</sites>")
                .map(str::to_owned)
                .collect();
            tables.insert((unit, scheme), lines);
        }
    }
    Ok(tables)
}

/// One site of a resolved section.
#[derive(Debug, Serialize)]
struct ResolvedRow {
    site: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    file: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    line: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    function: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    fields: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    counters: Option<Vec<u64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    min: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max: Option<String>,
}

fn resolve_counters(
    samples: &RunSamples,
    tables: &HashMap<(String, String), Vec<String>>,
) -> Value {
    let sections: Vec<Value> = samples
        .sections
        .iter()
        .map(|section| {
            let unit = section.key.unit.to_string();
            let scheme = section.key.scheme.as_str().to_owned();
            let table = tables
                .get(&(unit.clone(), scheme.clone()))
                .filter(|t| t.len() == section.n_sites as usize);
            let describe = |site: u32| {
                let mut row = ResolvedRow {
                    site,
                    file: None,
                    line: None,
                    function: None,
                    fields: Vec::new(),
                    counters: None,
                    min: None,
                    max: None,
                };
                if let Some(line) = table.and_then(|t| t.get(site as usize)) {
                    let mut fields = line.split('\t');
                    row.file = fields.next().map(str::to_owned);
                    row.line = fields.next().and_then(|l| l.parse().ok());
                    row.function = fields.next().map(str::to_owned);
                    let _statement = fields.next();
                    row.fields = fields.map(str::to_owned).collect();
                }
                row
            };
            let rows: Vec<ResolvedRow> = match &section.rows {
                Rows::Counters { rows, .. } => rows
                    .iter()
                    .map(|(site, counters)| ResolvedRow {
                        counters: Some(counters.clone()),
                        ..describe(*site)
                    })
                    .collect(),
                Rows::Bounds(rows) => rows
                    .iter()
                    .map(|(site, min, max)| ResolvedRow {
                        min: Some(min.to_string()),
                        max: Some(max.to_string()),
                        ..describe(*site)
                    })
                    .collect(),
            };
            json!({
                "unit": unit,
                "scheme": scheme,
                "sites": section.n_sites,
                "resolved": table.is_some(),
                "rows": rows,
            })
        })
        .collect();
    Value::Array(sections)
}

/// `GET /api/v1/runs/{id}`: the run, its non-zero counters resolved
/// against the registered site tables, its symbolized backtrace and the
/// list of its subreports.
pub async fn run(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(run_id): Path<String>,
) -> Result<Json<Value>, Refusal> {
    let grant = reader(&state, &headers, None).await?;
    let row = run_row(&state, &grant, &run_id).await?;
    let mut value = run_summary(&row).map_err(database)?;
    let counters: Vec<u8> = row.try_get("counters").map_err(database)?;
    let samples = RunSamples::decode(&counters).map_err(database)?;
    let tables = site_tables(&state.store, &samples)
        .await
        .map_err(database)?;
    value["counters"] = resolve_counters(&samples, &tables);
    let backtrace: Option<String> = row.try_get("backtrace_json").map_err(database)?;
    value["backtrace"] = match backtrace {
        Some(text) => serde_json::from_str::<Vec<Frame>>(&text)
            .map(|frames| json!(frames))
            .map_err(database)?,
        None => Value::Null,
    };
    let id: i64 = row.try_get("id").map_err(database)?;
    value["trace"] = json!(
        crate::traces::of_run(&state.store, id)
            .await
            .map_err(|error| Refusal::unavailable(format!("{error:#}")))?
    );
    let parts =
        sqlx::query("SELECT name, size FROM run_subreports WHERE run_id = $1 ORDER BY position")
            .bind(id)
            .fetch_all(&state.store.pool)
            .await
            .map_err(database)?;
    value["subreports"] = parts
        .iter()
        .map(|row| {
            Ok(json!({ "name": row.try_get::<String, _>(0)?, "size": row.try_get::<i64, _>(1)? }))
        })
        .collect::<Result<Vec<_>, sqlx::Error>>()
        .map_err(database)?
        .into();
    Ok(Json(value))
}

/// `GET /api/v1/runs/{id}/subreports/{name}`: one subreport's text exactly
/// as uploaded.
pub async fn subreport(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path((run_id, name)): Path<(String, String)>,
) -> Result<Response, Refusal> {
    let grant = reader(&state, &headers, None).await?;
    let row = run_row(&state, &grant, &run_id).await?;
    let id: i64 = row.try_get("id").map_err(database)?;
    let texts = subreport_texts(&state.store, id, &[name.as_str()])
        .await
        .map_err(database)?;
    let text = texts
        .get(&name)
        .ok_or_else(|| not_found(format!("run `{run_id}` has no subreport `{name}`")))?;
    Ok((
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        text.clone(),
    )
        .into_response())
}

/// `GET /api/v1/runs/{id}/report`: the whole report, each subreport in its
/// `<report id="...">` block, as the runtime wrote it.
pub async fn report(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(run_id): Path<String>,
) -> Result<Response, Refusal> {
    let grant = reader(&state, &headers, None).await?;
    let row = run_row(&state, &grant, &run_id).await?;
    let id: i64 = row.try_get("id").map_err(database)?;
    let rows =
        sqlx::query("SELECT name, data_gz FROM run_subreports WHERE run_id = $1 ORDER BY position")
            .bind(id)
            .fetch_all(&state.store.pool)
            .await
            .map_err(database)?;
    let mut out = String::new();
    for row in rows {
        let name: String = row.try_get(0).map_err(database)?;
        let data_gz: Vec<u8> = row.try_get(1).map_err(database)?;
        let text = gunzip_text(&data_gz).map_err(database)?;
        // A samples part already holds its `<report>` lines when the
        // uploader sent the runtime's blocks whole.
        if text.starts_with("<report id=") {
            out.push_str(&text);
        } else {
            out.push_str(&format!("<report id=\"{name}\">\n{text}"));
            if !text.is_empty() && !text.ends_with('\n') {
                out.push('\n');
            }
            out.push_str("</report>\n");
        }
    }
    Ok(([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], out).into_response())
}

async fn group_json(state: &AppState, row: &AnyRow) -> Result<Value, sqlx::Error> {
    let id: i64 = row.try_get("id")?;
    let frames: Vec<Frame> =
        serde_json::from_str(&row.try_get::<String, _>("frames_json")?).unwrap_or_default();
    let builds = sqlx::query(
        "SELECT b.version, b.release, g.runs FROM crash_group_builds g JOIN builds b ON b.id = g.build_id \
         WHERE g.crash_group_id = $1 ORDER BY b.id",
    )
    .bind(id)
    .fetch_all(&state.store.pool)
    .await?
    .iter()
    .map(|row| {
        Ok(json!({
            "version": row.try_get::<String, _>(0)?,
            "release": row.try_get::<String, _>(1)?,
            "runs": row.try_get::<i64, _>(2)?,
        }))
    })
    .collect::<Result<Vec<_>, sqlx::Error>>()?;
    let examples =
        sqlx::query("SELECT run_id FROM runs WHERE crash_group_id = $1 ORDER BY id DESC LIMIT 5")
            .bind(id)
            .fetch_all(&state.store.pool)
            .await?
            .iter()
            .map(|row| row.try_get::<String, _>(0))
            .collect::<Result<Vec<_>, _>>()?;
    Ok(json!({
        "id": id,
        "signature": row.try_get::<String, _>("signature")?,
        "runs": row.try_get::<i64, _>("runs")?,
        "first_seen": ms_to_rfc3339(row.try_get("first_seen_ms")?),
        "last_seen": ms_to_rfc3339(row.try_get("last_seen_ms")?),
        "frames": frames,
        "builds": builds,
        "example_runs": examples,
    }))
}

/// `GET /api/v1/crash-groups?app=NAME`: most runs first.
pub async fn crash_groups(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(query): Query<AppQuery>,
) -> Result<Json<Value>, Refusal> {
    let grant = reader(&state, &headers, query.app.as_deref()).await?;
    let rows =
        sqlx::query("SELECT * FROM crash_groups WHERE application_id = $1 ORDER BY runs DESC, id")
            .bind(grant.application_id)
            .fetch_all(&state.store.pool)
            .await
            .map_err(database)?;
    let mut groups = Vec::with_capacity(rows.len());
    for row in &rows {
        groups.push(group_json(&state, row).await.map_err(database)?);
    }
    let pending: i64 =
        sqlx::query("SELECT COUNT(*) FROM runs WHERE application_id = $1 AND symbolized = 0")
            .bind(grant.application_id)
            .fetch_one(&state.store.pool)
            .await
            .and_then(|row| row.try_get(0))
            .map_err(database)?;
    Ok(Json(
        json!({ "application": grant.application, "crash_groups": groups, "awaiting_symbols": pending }),
    ))
}

/// `GET /api/v1/crash-groups/{id}`
pub async fn crash_group(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<i64>,
) -> Result<Json<Value>, Refusal> {
    let grant = reader(&state, &headers, None).await?;
    let row = crash_group_row(&state, &grant, id).await?;
    Ok(Json(group_json(&state, &row).await.map_err(database)?))
}

/// Crash group `id`, which must be the grant's application's (404).
async fn crash_group_row(state: &AppState, grant: &Grant, id: i64) -> Result<AnyRow, Refusal> {
    sqlx::query("SELECT * FROM crash_groups WHERE id = $1 AND application_id = $2")
        .bind(id)
        .bind(grant.application_id)
        .fetch_optional(&state.store.pool)
        .await
        .map_err(database)?
        .ok_or_else(|| {
            not_found(format!(
                "no crash group {id} in application `{}`",
                grant.application
            ))
        })
}

/// `GET /api/v1/ranking?app=&version=&release=&crash_group=&fail_on_exit=&fail_on_status=&rank_by=&confidence=&fdr=`:
/// the predicates that predict failure, as `sampler-analyze --format json`
/// prints them (the elimination list, then the full ranking), with what
/// was asked.
pub async fn ranking(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(query): Query<RankingQuery>,
) -> Result<Json<Value>, Refusal> {
    let grant = reader(&state, &headers, query.app.as_deref()).await?;
    let spec = query.spec()?;
    let view = ranking_view(&state, &grant, &spec).await?;
    let mut value = serde_json::to_value(&view.report)
        .map_err(|error| Refusal::unavailable(error.to_string()))?;
    value["application"] = json!(grant.application);
    value["build"] = json!(
        spec.build
            .as_ref()
            .map(|(version, release)| json!({ "version": version, "release": release }))
    );
    value["failure"] = json!({
        "crash_group": spec.rule.crash_group,
        "nonzero_exit": spec.rule.nonzero_exit,
        "statuses": spec.rule.statuses,
    });
    value["rank_by"] = json!(spec.ranking.name());
    value["confidence"] = json!(spec.confidence);
    value["fdr"] = json!(spec.fdr);
    Ok(Json(value))
}

/// The ranking under `spec` of the grant's application; a crash group
/// must be the application's.
pub async fn ranking_view(
    state: &AppState,
    grant: &Grant,
    spec: &RankingSpec,
) -> Result<std::sync::Arc<RankingView>, Refusal> {
    if let Some(group) = spec.rule.crash_group {
        crash_group_row(state, grant, group).await?;
    }
    let mut selection = Selection::default();
    if let Some((version, release)) = &spec.build {
        selection.build = Some(
            sampler_analysis::collector_db::build_id(
                &state.store,
                &grant.application,
                version,
                release,
            )
            .await
            .map_err(database)?
            .ok_or_else(|| {
                not_found(format!(
                    "no build version `{version}` release `{release}` in application `{}`",
                    grant.application
                ))
            })?,
        );
    }
    state
        .rankings
        .get(
            &state.store,
            grant.application_id,
            &grant.application,
            spec,
            &selection,
        )
        .await
        .map_err(|error| Refusal::unavailable(format!("the analysis failed: {error:#}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_utc_rfc3339() {
        assert_eq!(ms_to_rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(ms_to_rfc3339(1_795_997_150_123), "2026-11-30T00:05:50.123Z");
        assert_eq!(ms_to_rfc3339(951_782_400_000), "2000-02-29T00:00:00.000Z");
    }
}
