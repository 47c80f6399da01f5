//! The dashboard: server-rendered HTML (askama templates in `templates/`,
//! escaped by default; no script anywhere), behind read tokens.
//!
//! - `GET /login`, `POST /login`: a form that takes a read token and sets
//!   it as a `Secure`, `HttpOnly`, `SameSite=Strict` cookie, so pages are
//!   plain links afterwards; `POST /logout` clears it. The cookie holds the
//!   token itself, checked like a bearer token on every page (with the
//!   token cache's 30 s lifetime), so revoking the token signs its
//!   browsers out with no session table to keep.
//! - `GET /dashboard`: the application's runs over time (an SVG plot), its
//!   predictors after redundancy elimination and the full ranking, each
//!   with the original's bug thermometer (inline SVG) and its source in
//!   context when the build's sources are registered, its crash groups and
//!   builds.
//! - `GET /dashboard/crash-groups/{id}`: one group's symbolized backtrace
//!   and its own predictors (failures are the group's runs).

use askama::Template;
use axum::Form;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum_extra::extract::cookie::{Cookie, CookieJar, SameSite};
use serde::Deserialize;
use sqlx::Row;

use crate::api::{ms_to_rfc3339, ranking_view};
use crate::crashes::Frame;
use crate::rankings::{RankingQuery, RankingView};
use crate::server::AppState;
use crate::tokens::{Grant, Scope};
use crate::upload::Refusal;

/// The cookie that carries the read token.
pub const COOKIE: &str = "sampler_token";

/// Rows of the full ranking shown.
const RANKING_ROWS: usize = 50;

/// Lines of source shown on each side of a predictor's line.
const CONTEXT_LINES: u32 = 2;

/// The longest thermometer, in pixels.
const THERMOMETER_WIDTH: f64 = 160.0;

fn render(page: &impl Template) -> Response {
    match page.render() {
        Ok(html) => Html(html).into_response(),
        Err(error) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("rendering the page failed: {error}"),
        )
            .into_response(),
    }
}

/// A failure shown as a page.
fn problem(refusal: Refusal) -> Response {
    (
        refusal.status,
        Html(format!(
            "<!DOCTYPE html><title>sampler</title><p>{}</p><p><a href=\"/dashboard\">Back</a></p>",
            askama::filters::escape(&refusal.message, askama::filters::Html)
                .map(|escaped| escaped.to_string())
                .unwrap_or_default()
        )),
    )
        .into_response()
}

#[derive(Template)]
#[template(path = "login.html")]
struct LoginPage {
    problem: Option<String>,
}

/// `GET /login`
pub async fn login_form() -> Response {
    render(&LoginPage { problem: None })
}

/// The login form's fields.
#[derive(Debug, Deserialize)]
pub struct LoginForm {
    token: String,
}

/// Checks `token` as a read token.
async fn read_grant(state: &AppState, token: &str) -> Result<Grant, String> {
    let grant = state
        .tokens
        .check(&state.store, Some(&format!("Bearer {}", token.trim())))
        .await
        .map_err(|error| match error {
            crate::tokens::AuthError::Missing => {
                "not a token: tokens look like smp_<id>_<secret>".to_owned()
            }
            crate::tokens::AuthError::Unknown => "unknown or revoked token".to_owned(),
            other => Refusal::from(other).message,
        })?;
    if grant.scope != Scope::Read {
        return Err(format!(
            "this is an {} token; the dashboard needs a read token",
            grant.scope.as_str()
        ));
    }
    Ok(grant)
}

/// `POST /login`
pub async fn login(
    State(state): State<AppState>,
    jar: CookieJar,
    Form(form): Form<LoginForm>,
) -> Response {
    match read_grant(&state, &form.token).await {
        Ok(_) => {
            let cookie = Cookie::build((COOKIE, form.token.trim().to_owned()))
                .path("/")
                .http_only(true)
                .secure(true)
                .same_site(SameSite::Strict)
                .max_age(time::Duration::days(30));
            (jar.add(cookie), Redirect::to("/dashboard")).into_response()
        }
        Err(message) => {
            let mut response = render(&LoginPage {
                problem: Some(message),
            });
            *response.status_mut() = StatusCode::UNAUTHORIZED;
            response
        }
    }
}

/// `POST /logout`
pub async fn logout(jar: CookieJar) -> Response {
    (
        jar.remove(Cookie::build(COOKIE).path("/")),
        Redirect::to("/login"),
    )
        .into_response()
}

/// The reader of a dashboard page: the cookie's token, or a bearer token;
/// without either, the login form.
async fn viewer(state: &AppState, jar: &CookieJar, headers: &HeaderMap) -> Result<Grant, Response> {
    let token = jar
        .get(COOKIE)
        .map(|cookie| cookie.value().to_owned())
        .or_else(|| {
            headers
                .get(header::AUTHORIZATION)
                .and_then(|value| value.to_str().ok())
                .and_then(|value| value.strip_prefix("Bearer "))
                .map(str::to_owned)
        });
    let Some(token) = token else {
        return Err(Redirect::to("/login").into_response());
    };
    read_grant(state, &token).await.map_err(|message| {
        let mut response = render(&LoginPage {
            problem: Some(message),
        });
        *response.status_mut() = StatusCode::UNAUTHORIZED;
        response
    })
}

struct ContextLine {
    number: u32,
    text: String,
    hit: bool,
}

/// The original's bug thermometer (analysis-and-collection.md §A.4), in
/// pixels: its length grows with the log of the runs where the predicate
/// was observed; black is Context, dark red the lower bound of Increase,
/// pink the rest of Increase (the confidence interval's half below it),
/// and white what is left, the successful runs where it held.
struct Thermometer {
    width: f64,
    length: f64,
    context: f64,
    lower_bound: f64,
    lower_bound_x: f64,
    interval: f64,
    interval_x: f64,
    label: String,
}

impl Thermometer {
    fn new(predictor: &sampler_analysis::report::Predictor, most_observed: u64) -> Self {
        let observed = predictor.f_observed + predictor.s_observed;
        let scale = ((1 + observed) as f64).ln() / ((1 + most_observed.max(1)) as f64).ln();
        let length = (THERMOMETER_WIDTH - 1.0) * scale.clamp(0.0, 1.0);
        let context = length * predictor.context.clamp(0.0, 1.0);
        let lower_bound = (length * predictor.lower_bound.max(0.0)).min(length - context);
        let interval = (length * (predictor.increase - predictor.lower_bound.max(0.0)).max(0.0))
            .min(length - context - lower_bound);
        let round = |value: f64| (value * 10.0).round() / 10.0;
        Self {
            width: THERMOMETER_WIDTH,
            length: round(length),
            context: round(context),
            lower_bound: round(lower_bound),
            lower_bound_x: round(0.5 + context),
            interval: round(interval),
            interval_x: round(0.5 + context + lower_bound),
            label: format!(
                "observed in {observed} runs; Context {:.3}, Increase {:.3} (lower bound {:.3}); true in {} failing and {} successful runs",
                predictor.context,
                predictor.increase,
                predictor.lower_bound,
                predictor.f,
                predictor.s
            ),
        }
    }
}

struct PredictorRow {
    predicate: String,
    location: String,
    function: String,
    scheme: String,
    /// How often its site's executions were observed ([`rate_text`]).
    rate: String,
    context: Vec<ContextLine>,
    thermometer: Thermometer,
    score: String,
    increase: String,
    lower_bound: String,
    f: u64,
    s: u64,
    explains: String,
}

struct PredictorTable {
    id: &'static str,
    title: String,
    empty: String,
    with_explains: bool,
    rows: Vec<PredictorRow>,
}

/// An observation probability as people read it: "every execution",
/// "1 in 100" (when the reciprocal is a whole number to 0.1%), else a
/// percentage.
fn rate_text(rate: f64) -> String {
    if rate >= 1.0 {
        return "every execution".to_owned();
    }
    let one_in = 1.0 / rate;
    if rate > 0.0 && one_in >= 2.0 && (one_in - one_in.round()).abs() <= one_in * 0.001 {
        format!("1 in {}", one_in.round())
    } else {
        format!("{:.3}%", rate * 100.0)
    }
}

fn predictor_rows<'a>(
    view: &RankingView,
    predictors: impl Iterator<Item = &'a sampler_analysis::report::Predictor> + Clone,
    rank_by: sampler_analysis::scores::Ranking,
) -> Vec<PredictorRow> {
    let most_observed = predictors
        .clone()
        .map(|p| p.f_observed + p.s_observed)
        .max()
        .unwrap_or(1);
    predictors
        .map(|predictor| {
            let context = view
                .context(&predictor.file, predictor.line, CONTEXT_LINES)
                .map(|lines| {
                    lines
                        .into_iter()
                        .map(|(number, text)| ContextLine {
                            number,
                            text: text.to_owned(),
                            hit: number == predictor.line,
                        })
                        .collect()
                })
                .or_else(|| {
                    predictor.source.as_ref().map(|text| {
                        vec![ContextLine {
                            number: predictor.line,
                            text: text.clone(),
                            hit: true,
                        }]
                    })
                })
                .unwrap_or_default();
            let score = predictor.score(rank_by);
            PredictorRow {
                predicate: predictor.predicate.clone(),
                location: format!("{}:{}", predictor.file, predictor.line),
                function: predictor.function.clone(),
                scheme: predictor.scheme.clone(),
                rate: predictor.rate.map(rate_text).unwrap_or_default(),
                context,
                thermometer: Thermometer::new(predictor, most_observed),
                score: format!("{score:.3}"),
                increase: format!("{:.3}", predictor.increase),
                lower_bound: format!("{:.3}", predictor.lower_bound),
                f: predictor.f,
                s: predictor.s,
                explains: predictor
                    .explains
                    .map_or_else(String::new, |explains| explains.to_string()),
            }
        })
        .collect()
}

fn predictor_tables(
    view: &RankingView,
    rank_by: sampler_analysis::scores::Ranking,
) -> Vec<PredictorTable> {
    let report = &view.report;
    vec![
        PredictorTable {
            id: "predictors",
            title: "Predictors after redundancy elimination".to_owned(),
            empty: if report.runs.failing == 0 {
                "No failing runs: nothing to predict.".to_owned()
            } else {
                "No predicate is retained (lower bound of Increase > 0, true in at least 10 runs)."
                    .to_owned()
            },
            with_explains: true,
            rows: predictor_rows(view, report.elimination.iter(), rank_by),
        },
        PredictorTable {
            id: "ranking",
            title: format!(
                "All retained predicates ({}), best first{}",
                report.ranking.len(),
                if report.ranking.len() > RANKING_ROWS {
                    format!(", top {RANKING_ROWS}")
                } else {
                    String::new()
                }
            ),
            empty: "None.".to_owned(),
            with_explains: false,
            rows: predictor_rows(view, report.ranking.iter().take(RANKING_ROWS), rank_by),
        },
    ]
}

struct Totals {
    success: i64,
    error: i64,
    crash: i64,
}

struct Segment {
    y: f64,
    height: f64,
    class: &'static str,
    count: i64,
}

struct Bar {
    x: f64,
    width: f64,
    segments: Vec<Segment>,
    label: String,
}

/// Runs over time, stacked by outcome.
struct Plot {
    width: f64,
    height: f64,
    bars: Vec<Bar>,
    most: i64,
    first: String,
    last: String,
}

/// Buckets the plot has.
const BUCKETS: i64 = 60;

async fn runs_plot(state: &AppState, application_id: i64) -> Result<Plot, sqlx::Error> {
    let range = sqlx::query(
        "SELECT COALESCE(MIN(received_ms), 0), COALESCE(MAX(received_ms), 0) FROM runs WHERE application_id = $1",
    )
    .bind(application_id)
    .fetch_one(&state.store.pool)
    .await?;
    let (first, last): (i64, i64) = (range.try_get(0)?, range.try_get(1)?);
    let span = (last - first).max(1);
    let bucket_ms = span / BUCKETS + 1;
    let rows = sqlx::query(
        "SELECT (received_ms - $2) / $3, outcome, COUNT(*) FROM runs WHERE application_id = $1 \
         GROUP BY (received_ms - $2) / $3, outcome",
    )
    .bind(application_id)
    .bind(first)
    .bind(bucket_ms)
    .fetch_all(&state.store.pool)
    .await?;
    let mut counts = vec![[0i64; 3]; BUCKETS as usize + 1];
    for row in &rows {
        let bucket: i64 = row.try_get(0)?;
        let outcome: String = row.try_get(1)?;
        let slot = match outcome.as_str() {
            "success" => 0,
            "error" => 1,
            _ => 2,
        };
        if let Some(bucket) = counts.get_mut(bucket as usize) {
            bucket[slot] += row.try_get::<i64, _>(2)?;
        }
    }
    let (width, height) = (900.0, 160.0);
    let most = counts
        .iter()
        .map(|c| c.iter().sum::<i64>())
        .max()
        .unwrap_or(0)
        .max(1);
    let bar_width = width / counts.len() as f64;
    let bars = counts
        .iter()
        .enumerate()
        .filter(|(_, c)| c.iter().sum::<i64>() > 0)
        .map(|(index, c)| {
            let mut y = height;
            let segments = [("success", c[0]), ("error", c[1]), ("crash", c[2])]
                .into_iter()
                .filter(|(_, count)| *count > 0)
                .map(|(class, count)| {
                    let h = height * count as f64 / most as f64;
                    y -= h;
                    Segment {
                        y: (y * 10.0).round() / 10.0,
                        height: (h * 10.0).round() / 10.0,
                        class,
                        count,
                    }
                })
                .collect();
            let start = first + index as i64 * bucket_ms;
            Bar {
                x: (index as f64 * bar_width * 10.0).round() / 10.0,
                width: ((bar_width - 1.0).max(1.0) * 10.0).round() / 10.0,
                segments,
                label: format!(
                    "from {}: {} successful, {} exit status, {} crashed",
                    ms_to_rfc3339(start),
                    c[0],
                    c[1],
                    c[2]
                ),
            }
        })
        .collect();
    Ok(Plot {
        width,
        height,
        bars,
        most,
        first: ms_to_rfc3339(first),
        last: ms_to_rfc3339(last),
    })
}

struct GroupRow {
    id: i64,
    signature: String,
    runs: i64,
    last_seen: String,
}

/// `&version=V&release=R`, encoded.
fn build_query(version: &str, release: &str) -> String {
    let mut query = url::form_urlencoded::Serializer::new(String::new());
    query
        .append_pair("version", version)
        .append_pair("release", release);
    format!("&{}", query.finish())
}

struct BuildRow {
    version: String,
    release: String,
    /// The dashboard's link to this build alone.
    link: String,
    registered: String,
    success: i64,
    error: i64,
    crash: i64,
}

#[derive(Template)]
#[template(path = "dashboard.html")]
struct DashboardPage {
    application: String,
    totals: Totals,
    build_label: Option<String>,
    /// Whether the false discovery rate is bounded (at 5%).
    fdr: bool,
    /// The selected build's version and release, for the form.
    build_version: String,
    build_release: String,
    plot: Plot,
    failure: String,
    failure_choices: Vec<(String, String)>,
    rankings: Vec<String>,
    rank_by: String,
    failing: u64,
    successful: u64,
    predicates: usize,
    elapsed: String,
    unresolved: u64,
    tables: Vec<PredictorTable>,
    groups: Vec<GroupRow>,
    builds: Vec<BuildRow>,
}

/// The dashboard's query string.
#[derive(Debug, Default, Deserialize)]
pub struct DashboardQuery {
    /// `signal` (deaths by a signal, the default) or `exit` (non-zero exit
    /// statuses too).
    failure: Option<String>,
    /// The score that orders predicates.
    rank_by: Option<String>,
    /// Keep only predicates accepted at this false discovery rate.
    fdr: Option<f64>,
    /// Only this build's runs (with `release`).
    version: Option<String>,
    /// The build's release.
    release: Option<String>,
}

fn database(error: sqlx::Error) -> Response {
    problem(Refusal::unavailable(format!(
        "the database failed: {error}"
    )))
}

/// `GET /dashboard`
pub async fn overview(
    State(state): State<AppState>,
    jar: CookieJar,
    headers: HeaderMap,
    Query(query): Query<DashboardQuery>,
) -> Response {
    let grant = match viewer(&state, &jar, &headers).await {
        Ok(grant) => grant,
        Err(response) => return response,
    };
    let failure = match query.failure.as_deref() {
        None | Some("signal") => "signal",
        Some("exit") => "exit",
        Some(other) => {
            return problem(Refusal::malformed(format!(
                "failure `{other}`: expected signal or exit"
            )));
        }
    };
    let ranking_query = RankingQuery {
        fail_on_exit: failure == "exit",
        rank_by: query.rank_by.clone(),
        fdr: query.fdr,
        version: query.version.clone(),
        release: query.release.clone(),
        ..RankingQuery::default()
    };
    let spec = match ranking_query.spec() {
        Ok(spec) => spec,
        Err(refusal) => return problem(refusal),
    };
    let view = match ranking_view(&state, &grant, &spec).await {
        Ok(view) => view,
        Err(refusal) => return problem(refusal),
    };
    match overview_page(&state, &grant, failure, &spec, &view).await {
        Ok(page) => render(&page),
        Err(error) => database(error),
    }
}

async fn overview_page(
    state: &AppState,
    grant: &Grant,
    failure: &str,
    spec: &crate::rankings::RankingSpec,
    view: &RankingView,
) -> Result<DashboardPage, sqlx::Error> {
    let rank_by = spec.ranking;
    let builds: Vec<BuildRow> = sqlx::query(
        "SELECT version, release, registered_ms, runs_success, runs_error, runs_crash FROM builds \
         WHERE application_id = $1 ORDER BY id DESC",
    )
    .bind(grant.application_id)
    .fetch_all(&state.store.pool)
    .await?
    .iter()
    .map(|row| {
        let (version, release): (String, String) = (row.try_get(0)?, row.try_get(1)?);
        Ok(BuildRow {
            link: format!(
                "/dashboard?failure={failure}{}",
                build_query(&version, &release)
            ),
            version,
            release,
            registered: row
                .try_get::<Option<i64>, _>(2)?
                .map_or_else(|| "not registered".to_owned(), ms_to_rfc3339),
            success: row.try_get(3)?,
            error: row.try_get(4)?,
            crash: row.try_get(5)?,
        })
    })
    .collect::<Result<_, sqlx::Error>>()?;
    let groups = sqlx::query(
        "SELECT id, signature, runs, last_seen_ms FROM crash_groups WHERE application_id = $1 \
         ORDER BY runs DESC, id LIMIT 100",
    )
    .bind(grant.application_id)
    .fetch_all(&state.store.pool)
    .await?
    .iter()
    .map(|row| {
        Ok(GroupRow {
            id: row.try_get(0)?,
            signature: row.try_get(1)?,
            runs: row.try_get(2)?,
            last_seen: ms_to_rfc3339(row.try_get(3)?),
        })
    })
    .collect::<Result<_, sqlx::Error>>()?;
    let chosen = |b: &&BuildRow| {
        spec.build
            .as_ref()
            .is_none_or(|(version, release)| b.version == *version && b.release == *release)
    };
    let totals = Totals {
        success: builds.iter().filter(chosen).map(|b| b.success).sum(),
        error: builds.iter().filter(chosen).map(|b| b.error).sum(),
        crash: builds.iter().filter(chosen).map(|b| b.crash).sum(),
    };
    Ok(DashboardPage {
        application: grant.application.clone(),
        totals,
        build_label: spec.build.as_ref().map(|(version, release)| {
            if release.is_empty() {
                version.clone()
            } else {
                format!("{version} (release {release})")
            }
        }),
        fdr: spec.fdr.is_some(),
        build_version: spec.build.as_ref().map(|b| b.0.clone()).unwrap_or_default(),
        build_release: spec.build.as_ref().map(|b| b.1.clone()).unwrap_or_default(),
        plot: runs_plot(state, grant.application_id).await?,
        failure: failure.to_owned(),
        failure_choices: [
            ("signal", "deaths by a signal"),
            ("exit", "deaths by a signal and non-zero exit statuses"),
        ]
        .into_iter()
        .map(|(value, text)| (value.to_owned(), text.to_owned()))
        .collect(),
        rankings: sampler_analysis::scores::Ranking::NAMES
            .iter()
            .map(|(name, _)| (*name).to_owned())
            .collect(),
        rank_by: rank_by.name().to_owned(),
        failing: view.report.runs.failing,
        successful: view.report.runs.successful,
        predicates: view.report.predicates,
        elapsed: format!("{:.2} s", view.elapsed.as_secs_f64()),
        unresolved: view.report.unresolved_sections,
        tables: predictor_tables(view, rank_by),
        groups,
        builds,
    })
}

struct FrameRow {
    function: String,
    location: String,
    module: String,
    address: String,
    inlined: bool,
}

#[derive(Template)]
#[template(path = "crash_group.html")]
struct CrashGroupPage {
    application: String,
    id: i64,
    signature: String,
    runs: i64,
    first_seen: String,
    last_seen: String,
    frames: Vec<FrameRow>,
    tables: Vec<PredictorTable>,
    builds: Vec<(String, String, i64)>,
    /// The last sampled events of the newest run of the group that has a
    /// trace: its id and each thread's events.
    trace: Option<(String, Vec<TraceThread>)>,
}

struct TraceEvent {
    sequence: u64,
    before: String,
    location: String,
    function: String,
    predicate: String,
}

struct TraceThread {
    thread: u64,
    state: String,
    events: Vec<TraceEvent>,
}

/// How long before the trace's last event, in a unit that fits.
fn before_last(seconds: f64) -> String {
    if seconds == 0.0 {
        "0".to_owned()
    } else if seconds < 1e-3 {
        format!("-{:.1} µs", seconds * 1e6)
    } else if seconds < 1.0 {
        format!("-{:.3} ms", seconds * 1e3)
    } else {
        format!("-{seconds:.3} s")
    }
}

/// The trace of the group's newest run that has one, for the page.
async fn group_trace(
    state: &AppState,
    group: i64,
) -> anyhow::Result<Option<(String, Vec<TraceThread>)>> {
    let row = sqlx::query(
        "SELECT r.id, r.run_id FROM runs r JOIN run_subreports s ON s.run_id = r.id \
         WHERE r.crash_group_id = $1 AND s.name = $2 ORDER BY r.id DESC LIMIT 1",
    )
    .bind(group)
    .bind(crate::traces::TRACE_REPORT_ID)
    .fetch_optional(&state.store.pool)
    .await?;
    let Some(row) = row else {
        return Ok(None);
    };
    let (id, run_id): (i64, String) = (row.try_get(0)?, row.try_get(1)?);
    let Some(trace) = crate::traces::of_run(&state.store, id).await? else {
        return Ok(None);
    };
    let threads = trace
        .threads
        .into_iter()
        .map(|thread| TraceThread {
            thread: thread.thread,
            state: thread.state,
            events: thread
                .events
                .into_iter()
                .map(|event| TraceEvent {
                    sequence: event.sequence,
                    before: before_last(event.seconds_before_last),
                    location: match (&event.file, event.line) {
                        (Some(file), Some(line)) => format!("{file}:{line}"),
                        _ => format!("{} site {}", event.scheme, event.site),
                    },
                    function: event.function.unwrap_or_default(),
                    predicate: event
                        .predicate
                        .unwrap_or_else(|| format!("slot {}", event.slot)),
                })
                .collect(),
        })
        .collect();
    Ok(Some((run_id, threads)))
}

/// `GET /dashboard/crash-groups/{id}`
pub async fn crash_group(
    State(state): State<AppState>,
    jar: CookieJar,
    headers: HeaderMap,
    Path(id): Path<i64>,
) -> Response {
    let grant = match viewer(&state, &jar, &headers).await {
        Ok(grant) => grant,
        Err(response) => return response,
    };
    let spec = match (RankingQuery {
        crash_group: Some(id),
        ..RankingQuery::default()
    })
    .spec()
    {
        Ok(spec) => spec,
        Err(refusal) => return problem(refusal),
    };
    // Checks that the group is the application's (404 otherwise).
    let view = match ranking_view(&state, &grant, &spec).await {
        Ok(view) => view,
        Err(refusal) => return problem(refusal),
    };
    match crash_group_page(&state, &grant, id, &view).await {
        Ok(page) => render(&page),
        Err(error) => database(error),
    }
}

async fn crash_group_page(
    state: &AppState,
    grant: &Grant,
    id: i64,
    view: &RankingView,
) -> Result<CrashGroupPage, sqlx::Error> {
    let row = sqlx::query(
        "SELECT signature, runs, first_seen_ms, last_seen_ms, frames_json FROM crash_groups \
         WHERE id = $1 AND application_id = $2",
    )
    .bind(id)
    .bind(grant.application_id)
    .fetch_one(&state.store.pool)
    .await?;
    let frames: Vec<Frame> =
        serde_json::from_str(&row.try_get::<String, _>(4)?).unwrap_or_default();
    let builds = sqlx::query(
        "SELECT b.version, b.release, g.runs FROM crash_group_builds g JOIN builds b ON b.id = g.build_id \
         WHERE g.crash_group_id = $1 ORDER BY b.id DESC",
    )
    .bind(id)
    .fetch_all(&state.store.pool)
    .await?
    .iter()
    .map(|row| Ok((row.try_get(0)?, row.try_get(1)?, row.try_get(2)?)))
    .collect::<Result<_, sqlx::Error>>()?;
    let trace = group_trace(state, id).await.unwrap_or_else(|error| {
        tracing::warn!(%error, group = id, "the crash group's trace could not be shown");
        None
    });
    let mut tables = predictor_tables(view, sampler_analysis::scores::Ranking::default());
    tables[0].title = "This group's predictors after redundancy elimination".to_owned();
    Ok(CrashGroupPage {
        application: grant.application.clone(),
        id,
        signature: row.try_get(0)?,
        runs: row.try_get(1)?,
        first_seen: ms_to_rfc3339(row.try_get(2)?),
        last_seen: ms_to_rfc3339(row.try_get(3)?),
        frames: frames
            .iter()
            .map(|frame| FrameRow {
                function: frame.function.clone().unwrap_or_else(|| "??".to_owned()),
                location: match (&frame.file, frame.line) {
                    (Some(file), Some(line)) => format!("{file}:{line}"),
                    (Some(file), None) => file.clone(),
                    _ => String::new(),
                },
                module: frame.module.clone(),
                address: frame.address.clone(),
                inlined: frame.inlined,
            })
            .collect(),
        tables,
        builds,
        trace,
    })
}

/// `GET /`: the dashboard.
pub async fn root() -> Redirect {
    Redirect::to("/dashboard")
}

#[cfg(test)]
mod tests {
    use super::rate_text;

    #[test]
    fn rates_read_as_people_say_them() {
        assert_eq!(rate_text(1.0), "every execution");
        assert_eq!(rate_text(0.01), "1 in 100");
        assert_eq!(rate_text(0.001), "1 in 1000");
        assert_eq!(rate_text(0.5), "1 in 2");
        assert_eq!(rate_text(0.10466174574128356), "10.466%");
        assert_eq!(rate_text(0.75), "75.000%");
    }
}
