//! Sampling rates learned from an application's runs (issue 19), served by
//! the read API (`GET /api/v1/rates`) and printed by `sampler-collector
//! rates`: a rates file (`schema/rates-format.md`) computed by
//! `sampler_analysis::rates` from one build's runs and site tables, by
//! default the latest build with runs.

use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use sampler_analysis::rates::{self, CollectorRatesError, Computed, RatesRequest, UniformScales};
use serde::Deserialize;

use crate::server::AppState;
use crate::store::Store;
use crate::upload::Refusal;

/// What to compute, as the read API's query string spells it. Every value
/// is taken as text and checked here, so that a bad one is named.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct RatesQuery {
    /// The application (the token's own when absent).
    pub app: Option<String>,
    /// The build (with `release`, default empty); by default the latest
    /// build with runs.
    pub version: Option<String>,
    /// The build's release.
    pub release: Option<String>,
    /// Expected observations per site per run (100).
    pub target: Option<String>,
    /// Bound on the program's expected observations per run (100000).
    pub budget: Option<String>,
    /// The deployment sparsity (the runs' most common).
    pub sparsity: Option<String>,
}

/// A checked [`RatesQuery`].
#[derive(Debug, Clone, PartialEq)]
pub struct RatesSpec {
    /// The build: (version, release).
    pub build: Option<(String, String)>,
    /// Target, budget and sparsity.
    pub request: RatesRequest,
}

impl RatesQuery {
    /// Checks the query; a bad parameter is named in a 400.
    pub fn spec(&self) -> Result<RatesSpec, Refusal> {
        let named = |name: &str, error: String| Refusal::malformed(format!("{name} {error}"));
        let mut request = RatesRequest::default();
        if let Some(text) = &self.target {
            request.target = rates::parse_target(text).map_err(|error| named("target", error))?;
        }
        if let Some(text) = &self.budget {
            request.budget = rates::parse_budget(text).map_err(|error| named("budget", error))?;
        }
        if let Some(text) = &self.sparsity {
            request.sparsity =
                Some(rates::parse_sparsity(text).map_err(|error| named("sparsity", error))?);
        }
        let build = match (&self.version, &self.release) {
            (Some(version), release) => {
                Some((version.clone(), release.clone().unwrap_or_default()))
            }
            (None, Some(_)) => {
                return Err(Refusal::malformed(
                    "release without version: a build is named by its version (and release)",
                ));
            }
            (None, None) => None,
        };
        Ok(RatesSpec { build, request })
    }
}

/// The rates of `application` under `spec`, read and computed on a
/// blocking thread (the runs' counters are walked for seconds on large
/// applications).
pub async fn compute(
    store: &Store,
    application: &str,
    spec: &RatesSpec,
) -> Result<Computed, CollectorRatesError> {
    let (store, application, spec) = (store.clone(), application.to_owned(), spec.clone());
    let handle = tokio::runtime::Handle::current();
    tokio::task::spawn_blocking(move || {
        handle.block_on(rates::from_collector(
            &store,
            &application,
            spec.build
                .as_ref()
                .map(|(version, release)| (version.as_str(), release.as_str())),
            &spec.request,
            &UniformScales,
        ))
    })
    .await
    .map_err(|error| CollectorRatesError::Failed(error.into()))?
}

/// `GET /api/v1/rates?app=&version=&release=&target=&budget=&sparsity=`:
/// the rates file, as text; each warning also in a `Sampler-Warning`
/// header.
pub async fn rates(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(query): Query<RatesQuery>,
) -> Result<Response, Refusal> {
    let grant = crate::api::reader(&state, &headers, query.app.as_deref()).await?;
    let spec = query.spec()?;
    let computed = compute(&state.store, &grant.application, &spec)
        .await
        .map_err(|error| match error {
            CollectorRatesError::NotFound(message) => Refusal {
                status: StatusCode::NOT_FOUND,
                reason: "not_found",
                message,
                retry_after: None,
            },
            CollectorRatesError::Failed(error) => {
                Refusal::unavailable(format!("computing the rates failed: {error:#}"))
            }
        })?;
    let mut response = (
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        computed.rates.to_text(),
    )
        .into_response();
    for warning in &computed.warnings {
        if let Ok(value) = HeaderValue::from_str(warning) {
            response
                .headers_mut()
                .append(HeaderName::from_static("sampler-warning"), value);
        }
    }
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_are_checked_and_named() {
        let spec = RatesQuery {
            target: Some("50".into()),
            budget: Some("1000".into()),
            sparsity: Some("10".into()),
            version: Some("1.2".into()),
            ..RatesQuery::default()
        }
        .spec()
        .unwrap();
        assert_eq!(
            spec,
            RatesSpec {
                build: Some(("1.2".to_owned(), String::new())),
                request: RatesRequest {
                    target: 50.0,
                    budget: 1000.0,
                    sparsity: Some(10),
                },
            }
        );
        assert_eq!(
            RatesQuery::default().spec().unwrap().request,
            RatesRequest::default()
        );
        let bad = |query: RatesQuery| query.spec().unwrap_err().message;
        assert_eq!(
            bad(RatesQuery {
                target: Some("lots".into()),
                ..RatesQuery::default()
            }),
            "target `lots`: expected a number ≥ 0 (observations per site per run)"
        );
        assert_eq!(
            bad(RatesQuery {
                budget: Some("-3".into()),
                ..RatesQuery::default()
            }),
            "budget `-3`: expected a number ≥ 0 (observations per run)"
        );
        assert_eq!(
            bad(RatesQuery {
                sparsity: Some("0".into()),
                ..RatesQuery::default()
            }),
            "sparsity `0`: expected a whole number from 1 to 4294967295"
        );
        assert_eq!(
            bad(RatesQuery {
                release: Some("3".into()),
                ..RatesQuery::default()
            }),
            "release without version: a build is named by its version (and release)"
        );
    }
}
