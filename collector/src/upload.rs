//! `POST /upload` (and the original's `/cgi-bin/sampler-upload`): the CBI
//! upload protocol (cbi-behaviour.md §6.4) plus a bearer token and an
//! optional `Sampler-Report-Id`.
//!
//! The body is read as a stream: multer enforces the compressed size, each
//! gzip part is inflated chunk by chunk into a buffer that refuses to grow
//! past what is left of the decompressed budget, so a gzip bomb costs at
//! most `--max-report-bytes` of memory before it is refused with 413.

use std::io::Write;
use std::sync::atomic::Ordering;

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use flate2::Compression;
use flate2::write::{GzEncoder, MultiGzDecoder};

use crate::counters::RunSamples;
use crate::crashes::Symbolized;
use crate::ingest::{IngestError, NewRun, Outcome, StoredSubreport};
use crate::server::AppState;
use crate::store::now_ms;
use crate::tokens::{AuthError, Grant, Scope};

/// A refused request: status, the metric's reason label, the message.
#[derive(Debug)]
pub struct Refusal {
    /// The HTTP status.
    pub status: StatusCode,
    /// A short label for metrics (`malformed`, `too_large`, ...).
    pub reason: &'static str,
    /// What was wrong, for the client.
    pub message: String,
    /// Seconds after which a retry may succeed.
    pub retry_after: Option<u64>,
}

impl Refusal {
    /// 400: the request is malformed; a retry cannot succeed.
    pub fn malformed(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::BAD_REQUEST,
            reason: "malformed",
            message: message.into(),
            retry_after: None,
        }
    }

    /// 413: over a size limit.
    pub fn too_large(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::PAYLOAD_TOO_LARGE,
            reason: "too_large",
            message: message.into(),
            retry_after: None,
        }
    }

    /// 503: overloaded or the database is unavailable.
    pub fn unavailable(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::SERVICE_UNAVAILABLE,
            reason: "unavailable",
            message: message.into(),
            retry_after: Some(1),
        }
    }
}

impl From<AuthError> for Refusal {
    fn from(error: AuthError) -> Self {
        match error {
            AuthError::Database(_) => Self::unavailable(error.to_string()),
            AuthError::Missing | AuthError::Unknown => Self {
                status: StatusCode::UNAUTHORIZED,
                reason: "unauthorized",
                message: error.to_string(),
                retry_after: None,
            },
        }
    }
}

impl From<IngestError> for Refusal {
    fn from(error: IngestError) -> Self {
        Self::unavailable(error.to_string())
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        let mut response = (self.status, format!("{}\n", self.message)).into_response();
        if let Some(seconds) = self.retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        if self.status == StatusCode::UNAUTHORIZED {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}

/// Checks the bearer token and its scope, and the token's rate.
pub async fn authorize(
    state: &AppState,
    headers: &HeaderMap,
    scope: Scope,
) -> Result<Grant, Refusal> {
    let authorization = headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok());
    let grant = state.tokens.check(&state.store, authorization).await?;
    if grant.scope != scope {
        return Err(Refusal {
            status: StatusCode::FORBIDDEN,
            reason: "forbidden",
            message: format!(
                "this is a {} token; this request needs a {} token",
                grant.scope.as_str(),
                scope.as_str()
            ),
            retry_after: None,
        });
    }
    if scope == Scope::Ingest
        && let Err(not_until) = state.limiter.check_key(&grant.token_id)
    {
        let wait = not_until.wait_time_from(governor::clock::Clock::now(
            &governor::clock::DefaultClock::default(),
        ));
        return Err(Refusal {
            status: StatusCode::TOO_MANY_REQUESTS,
            reason: "rate_limited",
            message: format!(
                "over the token's rate of {} uploads per second",
                state.limits.token_rate
            ),
            retry_after: Some(wait.as_secs() + 1),
        });
    }
    Ok(grant)
}

/// The handler.
pub async fn upload(State(state): State<AppState>, headers: HeaderMap, body: Body) -> Response {
    let result = receive(&state, &headers, body).await;
    state.metrics.set_queued(state.ingest.queued());
    match result {
        Ok((run_id, duplicate)) => {
            state
                .metrics
                .upload(if duplicate { "duplicate" } else { "accepted" });
            let mut response = (StatusCode::OK, run_id.clone()).into_response();
            response.headers_mut().insert(
                "sampler-unique-id",
                HeaderValue::from_str(&run_id).expect("a UUID is a header value"),
            );
            response
        }
        Err(refusal) => {
            state.metrics.upload(refusal.reason);
            tracing::info!(status = refusal.status.as_u16(), reason = refusal.reason, message = %refusal.message, "upload refused");
            refusal.into_response()
        }
    }
}

async fn receive(
    state: &AppState,
    headers: &HeaderMap,
    body: Body,
) -> Result<(String, bool), Refusal> {
    if state.shutting_down.load(Ordering::Acquire) {
        return Err(IngestError::ShuttingDown.into());
    }
    let grant = authorize(state, headers, Scope::Ingest).await?;
    let fields = UploadHeaders::parse(headers, &grant)?;
    if let Some(length) = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok())
        && length > state.limits.max_upload_bytes as u64
    {
        return Err(Refusal::too_large(format!(
            "the body's {length} bytes are over the limit of {} bytes",
            state.limits.max_upload_bytes
        )));
    }
    let parts = read_parts(state, headers, body).await?;
    let run = {
        let _turn = state
            .checks
            .acquire()
            .await
            .map_err(|_| Refusal::from(IngestError::ShuttingDown))?;
        tokio::task::spawn_blocking(move || check_report(fields, parts))
            .await
            .map_err(|error| Refusal::unavailable(format!("the report check failed: {error}")))??
    };
    let run = symbolize(state, run).await?;
    let stored = state.ingest.store(run).await?;
    Ok((stored.run_id, stored.duplicate))
}

/// The `Sampler-*` headers, checked.
#[derive(Debug, Clone)]
pub struct UploadHeaders {
    report_id: Option<String>,
    application_id: i64,
    version: String,
    release: String,
    sampler_version: Option<String>,
    executable_path: Option<String>,
    instrumentor_version: Option<String>,
    build_distribution: Option<String>,
    sparsity: Option<i64>,
    exit_status: i64,
    exit_signal: i64,
}

/// The longest header value taken into the database.
const MAX_HEADER_VALUE: usize = 4096;

fn text_header(headers: &HeaderMap, name: &str) -> Result<Option<String>, Refusal> {
    let Some(value) = headers.get(name) else {
        return Ok(None);
    };
    let text = value
        .to_str()
        .map_err(|_| Refusal::malformed(format!("header `{name}`: not visible ASCII text")))?
        .trim();
    if text.len() > MAX_HEADER_VALUE {
        return Err(Refusal::malformed(format!(
            "header `{name}`: longer than {MAX_HEADER_VALUE} bytes"
        )));
    }
    Ok(Some(text.to_owned()))
}

fn number_header(
    headers: &HeaderMap,
    name: &str,
    range: std::ops::RangeInclusive<i64>,
) -> Result<Option<i64>, Refusal> {
    let Some(text) = text_header(headers, name)? else {
        return Ok(None);
    };
    match text.parse::<i64>() {
        Ok(value) if range.contains(&value) => Ok(Some(value)),
        _ => Err(Refusal::malformed(format!(
            "header `{name}`: `{text}` is not a whole number from {} to {}",
            range.start(),
            range.end()
        ))),
    }
}

impl UploadHeaders {
    fn parse(headers: &HeaderMap, grant: &Grant) -> Result<Self, Refusal> {
        if let Some(name) = text_header(headers, "sampler-application-name")?
            && name != grant.application
        {
            return Err(Refusal {
                status: StatusCode::FORBIDDEN,
                reason: "forbidden",
                message: format!(
                    "the token is for application `{}`, not `{name}`",
                    grant.application
                ),
                retry_after: None,
            });
        }
        let report_id = match text_header(headers, "sampler-report-id")? {
            Some(text) => Some(
                uuid::Uuid::parse_str(&text)
                    .map_err(|_| {
                        Refusal::malformed(format!(
                            "header `sampler-report-id`: `{text}` is not a UUID"
                        ))
                    })?
                    .hyphenated()
                    .to_string(),
            ),
            None => None,
        };
        let exit_status = number_header(headers, "sampler-exit-status", 0..=255)?.unwrap_or(0);
        let exit_signal = number_header(headers, "sampler-exit-signal", 0..=255)?.unwrap_or(0);
        if exit_status != 0 && exit_signal != 0 {
            return Err(Refusal::malformed(format!(
                "headers `sampler-exit-status` ({exit_status}) and `sampler-exit-signal` ({exit_signal}): a run ends by one or the other, not both"
            )));
        }
        Ok(Self {
            report_id,
            application_id: grant.application_id,
            version: text_header(headers, "sampler-application-version")?.unwrap_or_default(),
            release: text_header(headers, "sampler-application-release")?.unwrap_or_default(),
            sampler_version: text_header(headers, "sampler-version")?,
            executable_path: text_header(headers, "sampler-executable-path")?,
            instrumentor_version: text_header(headers, "sampler-instrumentor-version")?,
            build_distribution: text_header(headers, "sampler-build-distribution")?,
            sparsity: number_header(headers, "sampler-sparsity", 1..=i64::from(u32::MAX))?,
            exit_status,
            exit_signal,
        })
    }
}

/// One part of the body: its name, text and the gzip bytes to store.
#[derive(Debug)]
pub struct Part {
    name: String,
    text: Vec<u8>,
    data_gz: Vec<u8>,
}

/// A writer that refuses to hold more than `limit` bytes.
struct Capped {
    bytes: Vec<u8>,
    limit: usize,
    exceeded: bool,
}

impl Write for Capped {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        if self.bytes.len() + data.len() > self.limit {
            self.exceeded = true;
            return Err(std::io::Error::other("over the decompressed size limit"));
        }
        self.bytes.extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Whether a part name is one the original server accepts.
fn valid_part_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// 413 for a body over its limit, 400 for anything else multer refuses.
pub fn multipart_refusal(error: multer::Error) -> Refusal {
    match error {
        multer::Error::StreamSizeExceeded { limit }
        | multer::Error::FieldSizeExceeded { limit, .. } => {
            Refusal::too_large(format!("the body is over the limit of {limit} bytes"))
        }
        other => Refusal::malformed(format!("malformed multipart body: {other}")),
    }
}

/// The multipart reader of a request's body, refusing more than `limit`
/// bytes as sent.
pub fn multipart(
    headers: &HeaderMap,
    body: Body,
    limit: u64,
) -> Result<multer::Multipart<'static>, Refusal> {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .ok_or_else(|| {
            Refusal::malformed("no `Content-Type` header: expected multipart/form-data")
        })?;
    let boundary = multer::parse_boundary(content_type).map_err(|_| {
        Refusal::malformed(format!(
            "`Content-Type: {content_type}`: expected multipart/form-data with a boundary"
        ))
    })?;
    let constraints =
        multer::Constraints::new().size_limit(multer::SizeLimit::new().whole_stream(limit));
    Ok(multer::Multipart::with_constraints(
        body.into_data_stream(),
        boundary,
        constraints,
    ))
}

async fn read_parts(
    state: &AppState,
    headers: &HeaderMap,
    body: Body,
) -> Result<Vec<Part>, Refusal> {
    let limits = &state.limits;
    let mut multipart = multipart(headers, body, limits.max_upload_bytes as u64)?;
    let mut parts: Vec<Part> = Vec::new();
    let mut budget = limits.max_report_bytes;
    while let Some(mut field) = multipart.next_field().await.map_err(multipart_refusal)? {
        let name = field.name().unwrap_or_default().to_owned();
        if !valid_part_name(&name) {
            return Err(Refusal::malformed(format!(
                "part {}: name `{}` is not 1 to 64 letters, digits, `-` or `_`",
                parts.len() + 1,
                name.escape_debug()
            )));
        }
        if parts.iter().any(|part| part.name == name) {
            return Err(Refusal::malformed(format!("part `{name}` appears twice")));
        }
        if parts.len() == limits.max_parts {
            return Err(Refusal::too_large(format!(
                "more than {} parts",
                limits.max_parts
            )));
        }
        let gzip = match field
            .headers()
            .get(header::CONTENT_ENCODING)
            .and_then(|v| v.to_str().ok())
        {
            None | Some("identity") => false,
            Some(encoding) if encoding.eq_ignore_ascii_case("gzip") => true,
            Some(other) => {
                return Err(Refusal::malformed(format!(
                    "part `{name}`: content-encoding `{other}`: expected gzip or none"
                )));
            }
        };
        let capped = Capped {
            bytes: Vec::new(),
            limit: budget,
            exceeded: false,
        };
        let over = || {
            Refusal::too_large(format!(
                "part `{name}`: the report is over the limit of {} bytes once decompressed",
                limits.max_report_bytes
            ))
        };
        let (text, data_gz) = if gzip {
            let mut raw = Vec::new();
            let mut decoder = MultiGzDecoder::new(capped);
            while let Some(chunk) = field.chunk().await.map_err(multipart_refusal)? {
                raw.extend_from_slice(&chunk);
                if let Err(error) = decoder.write_all(&chunk) {
                    return Err(if decoder.get_ref().exceeded {
                        over()
                    } else {
                        Refusal::malformed(format!("part `{name}`: not a gzip stream: {error}"))
                    });
                }
            }
            match decoder.finish() {
                Ok(capped) => (capped.bytes, raw),
                Err(error) => {
                    return Err(Refusal::malformed(format!(
                        "part `{name}`: truncated or damaged gzip stream: {error}"
                    )));
                }
            }
        } else {
            let mut capped = capped;
            while let Some(chunk) = field.chunk().await.map_err(multipart_refusal)? {
                if capped.write_all(&chunk).is_err() {
                    return Err(over());
                }
            }
            let mut encoder = GzEncoder::new(Vec::new(), Compression::fast());
            encoder.write_all(&capped.bytes).expect("writing to a Vec");
            let data_gz = encoder.finish().expect("writing to a Vec");
            (capped.bytes, data_gz)
        };
        budget -= text.len();
        parts.push(Part {
            name,
            text,
            data_gz,
        });
    }
    if parts.is_empty() {
        return Err(Refusal::malformed(
            "the body has no parts: expected one per subreport",
        ));
    }
    Ok(parts)
}

/// Checks every part's text and reduces the samples to their compact form.
fn check_report(fields: UploadHeaders, parts: Vec<Part>) -> Result<(NewRun, Vec<Part>), Refusal> {
    for part in &parts {
        if let Err(error) = std::str::from_utf8(&part.text) {
            return Err(Refusal::malformed(format!(
                "part `{}`: not UTF-8 text (byte {})",
                part.name,
                error.valid_up_to()
            )));
        }
    }
    if let Some(part) = parts
        .iter()
        .find(|part| part.name == crate::traces::TRACE_REPORT_ID)
    {
        crate::traces::check(&part.text).map_err(Refusal::malformed)?;
    }
    let samples = match parts
        .iter()
        .find(|part| part.name == sampler_formats::SAMPLES_REPORT_ID)
    {
        Some(part) => RunSamples::parse(&part.text)
            .map_err(|error| Refusal::malformed(format!("part `samples`: {error}")))?,
        None => RunSamples::default(),
    };
    let sections = samples
        .sections
        .iter()
        .map(|section| {
            (
                section.key.unit.to_string(),
                section.key.scheme.as_str().to_owned(),
            )
        })
        .collect();
    let run = NewRun {
        report_id: fields.report_id,
        application_id: fields.application_id,
        version: fields.version,
        release: fields.release,
        sampler_version: fields.sampler_version,
        executable_path: fields.executable_path,
        instrumentor_version: fields.instrumentor_version,
        build_distribution: fields.build_distribution,
        sparsity: fields.sparsity,
        exit_status: fields.exit_status,
        exit_signal: fields.exit_signal,
        counters: samples.encode(),
        sections,
        subreports: Vec::new(),
        report_bytes: parts.iter().map(|part| part.text.len() as i64).sum(),
        crash: None,
        symbolize_later: false,
        received_ms: now_ms(),
    };
    Ok((run, parts))
}

async fn symbolize(
    state: &AppState,
    (mut run, parts): (NewRun, Vec<Part>),
) -> Result<NewRun, Refusal> {
    let text = |name: &str| {
        parts
            .iter()
            .find(|part| part.name == name)
            .map(|part| std::str::from_utf8(&part.text).expect("checked as UTF-8"))
    };
    if run.outcome() == Outcome::Crash
        && let Some(backtrace) = text(sampler_formats::BACKTRACE_REPORT_ID)
    {
        match state
            .debug
            .symbolize(&state.store, backtrace, text("modules"))
            .await
        {
            Ok(Symbolized::Done(crash)) => run.crash = Some(crash),
            Ok(Symbolized::Pending) => run.symbolize_later = true,
            Err(error) if error.is::<sqlx::Error>() => {
                return Err(Refusal::unavailable(error.to_string()));
            }
            Err(error) => return Err(Refusal::malformed(error.to_string())),
        }
    }
    run.subreports = parts
        .into_iter()
        .map(|part| StoredSubreport {
            size: part.text.len() as i64,
            name: part.name,
            data_gz: part.data_gz,
        })
        .collect();
    Ok(run)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn part_names_are_the_originals() {
        assert!(valid_part_name("samples"));
        assert!(valid_part_name("main-backtrace"));
        assert!(valid_part_name("a_b-9"));
        assert!(!valid_part_name(""));
        assert!(!valid_part_name("../etc/passwd"));
        assert!(!valid_part_name("a b"));
        assert!(!valid_part_name(&"x".repeat(65)));
    }

    #[test]
    fn capped_refuses_past_its_limit() {
        let mut capped = Capped {
            bytes: Vec::new(),
            limit: 4,
            exceeded: false,
        };
        capped.write_all(b"abcd").unwrap();
        assert!(capped.write_all(b"e").is_err());
        assert!(capped.exceeded);
        assert_eq!(capped.bytes, b"abcd");
    }
}
