//! The HTTP server: routes, shared state, operations endpoints, graceful
//! shutdown.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::TraceLayer;

use crate::crashes::DebugCache;
use crate::ingest::Ingest;
use crate::limits::Limits;
use crate::metrics::Metrics;
use crate::store::Store;
use crate::tokens::TokenCache;

/// What every handler shares.
#[derive(Clone)]
pub struct AppState {
    /// The database.
    pub store: Store,
    /// Token checks.
    pub tokens: TokenCache,
    /// The writer's queue.
    pub ingest: Ingest,
    /// Metrics.
    pub metrics: Metrics,
    /// The limits in force.
    pub limits: Arc<Limits>,
    /// Uploads per token.
    pub limiter: Arc<DefaultKeyedRateLimiter<String>>,
    /// Parsed debug files.
    pub debug: DebugCache,
    /// Set on SIGTERM: uploads get 503 from then on.
    pub shutting_down: Arc<AtomicBool>,
    /// Where received build files wait while they are read.
    pub scratch: PathBuf,
    /// Reports checked at once (one per core): the uploads beyond wait
    /// here instead of as runnable threads, which would delay the writer,
    /// the one task every upload waits for, on each of its turns.
    pub checks: Arc<tokio::sync::Semaphore>,
    /// The analysis's rankings computed so far.
    pub rankings: crate::rankings::Rankings,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState")
            .field("store", &self.store)
            .finish_non_exhaustive()
    }
}

/// The routes.
pub fn router(state: AppState) -> Router {
    let timeout = Duration::from_secs(state.limits.request_timeout);
    Router::new()
        .route("/upload", post(crate::upload::upload))
        .route("/cgi-bin/sampler-upload", post(crate::upload::upload))
        .route(
            "/api/v1/builds",
            post(crate::builds::add).get(crate::api::builds),
        )
        .route("/api/v1/applications", get(crate::api::applications))
        .route("/api/v1/runs", get(crate::api::runs))
        .route("/api/v1/runs/{id}", get(crate::api::run))
        .route("/api/v1/runs/{id}/report", get(crate::api::report))
        .route(
            "/api/v1/runs/{id}/subreports/{name}",
            get(crate::api::subreport),
        )
        .route("/api/v1/ranking", get(crate::api::ranking))
        .route("/api/v1/rates", get(crate::rates::rates))
        .route("/api/v1/crash-groups", get(crate::api::crash_groups))
        .route("/api/v1/crash-groups/{id}", get(crate::api::crash_group))
        .route("/", get(crate::dashboard::root))
        .route(
            "/login",
            get(crate::dashboard::login_form).post(crate::dashboard::login),
        )
        .route("/logout", post(crate::dashboard::logout))
        .route("/dashboard", get(crate::dashboard::overview))
        .route(
            "/dashboard/crash-groups/{id}",
            get(crate::dashboard::crash_group),
        )
        .route("/healthz", get(healthz))
        .route("/metrics", get(metrics))
        .layer(middleware::from_fn_with_state(state.clone(), measure))
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            timeout,
        ))
        .layer(CatchPanicLayer::new())
        .layer(TraceLayer::new_for_http())
        .with_state(state)
}

async fn measure(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |path| path.as_str().to_owned());
    let started = Instant::now();
    let response = next.run(request).await;
    state
        .metrics
        .request(&route, response.status().as_u16(), started.elapsed());
    response
}

async fn healthz(State(state): State<AppState>) -> Response {
    if state.shutting_down.load(Ordering::Acquire) {
        return (StatusCode::SERVICE_UNAVAILABLE, "shutting down\n").into_response();
    }
    match state.store.ping().await {
        Ok(()) => (StatusCode::OK, "ok\n").into_response(),
        Err(error) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("database: {error}\n"),
        )
            .into_response(),
    }
}

async fn metrics(State(state): State<AppState>) -> Response {
    state.metrics.set_queued(state.ingest.queued());
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        state.metrics.render(),
    )
        .into_response()
}

/// A running server: its address, and how to stop it.
#[derive(Debug)]
pub struct Running {
    /// Where it listens.
    pub address: SocketAddr,
    stop: tokio::sync::watch::Sender<bool>,
    task: tokio::task::JoinHandle<anyhow::Result<()>>,
}

impl Running {
    /// Stops as SIGTERM would: refuse new uploads, finish those in flight,
    /// drain the writer's queue.
    pub async fn shutdown(self) -> anyhow::Result<()> {
        let _ = self.stop.send(true);
        self.task.await?
    }
}

/// Builds the state and starts serving on `listener`; `stop` ends it.
pub async fn start(
    store: Store,
    limits: Limits,
    scratch: PathBuf,
    listener: tokio::net::TcpListener,
) -> anyhow::Result<Running> {
    let address = listener.local_addr()?;
    let metrics = Metrics::new();
    let (ingest, writer) =
        Ingest::start(store.clone(), metrics.clone(), limits.queue, limits.batch);
    let quota = Quota::per_second(limits.token_rate).allow_burst(limits.token_burst);
    let state = AppState {
        store,
        tokens: TokenCache::default(),
        ingest,
        metrics,
        limiter: Arc::new(RateLimiter::keyed(quota)),
        debug: DebugCache::new(limits.debug_cache),
        shutting_down: Arc::default(),
        scratch,
        checks: Arc::new(tokio::sync::Semaphore::new(
            std::thread::available_parallelism().map_or(1, usize::from),
        )),
        limits: Arc::new(limits),
        rankings: crate::rankings::Rankings::default(),
    };
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let shutting_down = state.shutting_down.clone();
    let grace = Duration::from_secs(state.limits.shutdown_grace);
    let app = router(state);
    let task = tokio::spawn(async move {
        let mut on_stop = stopped.clone();
        let signal = async move {
            let _ = on_stop.wait_for(|stop| *stop).await;
            shutting_down.store(true, Ordering::Release);
            tracing::info!("shutting down: finishing requests in flight");
        };
        let serve = axum::serve(listener, app.into_make_service()).with_graceful_shutdown(signal);
        let mut on_stop = stopped;
        let grace_over = async move {
            let _ = on_stop.wait_for(|stop| *stop).await;
            tokio::time::sleep(grace).await;
        };
        tokio::select! {
            result = serve => result?,
            () = grace_over => tracing::warn!(?grace, "requests still in flight after the grace period are dropped"),
        }
        // Whatever is queued is stored before we return.
        writer.finish().await;
        Ok(())
    });
    Ok(Running {
        address,
        stop,
        task,
    })
}
