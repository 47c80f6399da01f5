//! The collector over real HTTP on loopback, against a real SQLite file,
//! and against a real PostgreSQL when `SAMPLER_TEST_POSTGRES_URL` names a
//! server where the tests may create databases (README, "Testing").

mod browser;
mod crashes;
mod dashboard;
mod fault;
mod load;
mod planted_bugs;
mod properties;
mod rates;
mod upload;

use std::io::Write;

use flate2::Compression;
use flate2::write::GzEncoder;
use sampler_collector::limits::Limits;
use sampler_collector::server::{self, Running};
use sampler_collector::store::{DatabaseTarget, Store};
use sampler_collector::tokens::{self, Scope};

/// A collector serving on an ephemeral loopback port, with tokens of one
/// application.
#[allow(missing_debug_implementations)]
pub struct Collector {
    pub running: Option<Running>,
    pub store: Store,
    /// Where its database is.
    pub target: DatabaseTarget,
    pub url: String,
    pub ingest: String,
    pub read: String,
    pub client: reqwest::Client,
    _data: tempfile::TempDir,
}

/// Which databases the storage tests run against: SQLite always, and
/// PostgreSQL when configured (required when `SAMPLER_TEST_REQUIRE_POSTGRES`
/// is set, as CI does).
pub fn backends() -> Vec<&'static str> {
    let postgres = std::env::var("SAMPLER_TEST_POSTGRES_URL").is_ok();
    if std::env::var_os("SAMPLER_TEST_REQUIRE_POSTGRES").is_some() {
        assert!(
            postgres,
            "SAMPLER_TEST_REQUIRE_POSTGRES is set but SAMPLER_TEST_POSTGRES_URL is not"
        );
    }
    if postgres {
        vec!["sqlite", "postgres"]
    } else {
        vec!["sqlite"]
    }
}

/// A fresh PostgreSQL database for one test, on the configured server.
async fn fresh_postgres() -> String {
    use sqlx::Executor;
    let base = std::env::var("SAMPLER_TEST_POSTGRES_URL").expect("SAMPLER_TEST_POSTGRES_URL");
    let name = format!("sampler_test_{}", uuid::Uuid::new_v4().simple());
    let mut admin = <sqlx::PgConnection as sqlx::Connection>::connect(&base)
        .await
        .expect("connecting to PostgreSQL");
    admin
        .execute(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .await
        .expect("creating a database");
    let (prefix, _) = base.rsplit_once('/').expect("a URL with a database name");
    format!("{prefix}/{name}")
}

impl Collector {
    pub async fn start(backend: &str) -> Self {
        Self::with_limits(backend, Limits::default()).await
    }

    pub async fn with_limits(backend: &str, limits: Limits) -> Self {
        let data = tempfile::tempdir().unwrap();
        let target = match backend {
            "sqlite" => DatabaseTarget::SqliteDir(data.path().join("data")),
            "postgres" => DatabaseTarget::Postgres(fresh_postgres().await),
            other => panic!("unknown backend {other}"),
        };
        let store = Store::open(&target, limits.connections).await.unwrap();
        let ingest = tokens::create(&store, "demo", Scope::Ingest).await.unwrap();
        let read = tokens::create(&store, "demo", Scope::Read).await.unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let running = server::start(
            store.clone(),
            limits,
            data.path().join("incoming"),
            listener,
        )
        .await
        .unwrap();
        let url = format!("http://{}", running.address);
        Self {
            running: Some(running),
            store,
            target,
            url,
            ingest,
            read,
            client: reqwest::Client::new(),
            _data: data,
        }
    }

    pub async fn stop(&mut self) {
        if let Some(running) = self.running.take() {
            running.shutdown().await.unwrap();
        }
    }

    /// GET `path` with the read token, as JSON.
    pub async fn get_json(&self, path: &str) -> serde_json::Value {
        let response = self
            .client
            .get(format!("{}{path}", self.url))
            .bearer_auth(&self.read)
            .send()
            .await
            .unwrap();
        assert_eq!(
            response.status(),
            200,
            "GET {path}: {}",
            response.text().await.unwrap()
        );
        response.json().await.unwrap()
    }

    /// GET `path` with the read token, as text.
    pub async fn get_text(&self, path: &str) -> String {
        let response = self
            .client
            .get(format!("{}{path}", self.url))
            .bearer_auth(&self.read)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "GET {path}");
        response.text().await.unwrap()
    }

    /// How many runs are stored.
    pub async fn count_runs(&self) -> i64 {
        use sqlx::Row;
        sqlx::query("SELECT COUNT(*) FROM runs")
            .fetch_one(&self.store.pool)
            .await
            .unwrap()
            .get(0)
    }
}

/// A multipart body written as the original uploader writes it
/// (cbi-behaviour.md §6.4), independently of the server's parser.
#[derive(Debug, Clone)]
pub struct OriginalUpload {
    pub boundary: String,
    pub body: Vec<u8>,
}

pub fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = GzEncoder::new(Vec::new(), Compression::best());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

impl OriginalUpload {
    /// One gzip part per subreport, named by its id.
    pub fn new(parts: &[(&str, &[u8])]) -> Self {
        let boundary = "===============8264710315437792106==".to_owned();
        let mut body = Vec::new();
        for (name, text) in parts {
            write!(
                body,
                "--{boundary}\r\ncontent-disposition: form-data; filename=\"{name}\", name=\"{name}\"\r\ncontent-encoding: gzip\r\n\r\n"
            )
            .unwrap();
            body.extend_from_slice(&gzip(text));
            body.extend_from_slice(b"\r\n");
        }
        write!(body, "--{boundary}--\r\n").unwrap();
        Self { boundary, body }
    }

    pub fn content_type(&self) -> String {
        format!("multipart/form-data; boundary=\"{}\"", self.boundary)
    }
}

/// The headers the original launcher sends, for a run that exited with
/// `status` or died of `signal`.
pub fn sampler_headers(status: u8, signal: u8) -> Vec<(&'static str, String)> {
    load::original_headers(status, signal)
}

impl Collector {
    /// POSTs `upload` to `path` with `token` and `headers`.
    pub async fn post(
        &self,
        path: &str,
        token: Option<&str>,
        headers: &[(&str, String)],
        content_type: &str,
        body: Vec<u8>,
    ) -> reqwest::Response {
        let mut request = self
            .client
            .post(format!("{}{path}", self.url))
            .header("Content-Type", content_type)
            .body(body);
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        request.send().await.unwrap()
    }

    /// POSTs `upload` to `/upload` with the ingest token and `headers`.
    pub async fn send(
        &self,
        upload: &OriginalUpload,
        headers: &[(&str, String)],
    ) -> reqwest::Response {
        self.post(
            "/upload",
            Some(&self.ingest),
            headers,
            &upload.content_type(),
            upload.body.clone(),
        )
        .await
    }

    /// Uploads `parts` as the original would, with the ingest token.
    pub async fn upload(
        &self,
        parts: &[(&str, &[u8])],
        headers: &[(&str, String)],
    ) -> reqwest::Response {
        let upload = OriginalUpload::new(parts);
        self.post(
            "/upload",
            Some(&self.ingest),
            headers,
            &upload.content_type(),
            upload.body,
        )
        .await
    }
}

pub const UNIT: &str = "0123456789abcdef0123456789abcdef";

/// A samples subreport of `n_sites` branch sites, site i counted (i % 3, i % 2).
pub fn samples(n_sites: usize) -> String {
    let mut text = format!("<samples unit=\"{UNIT}\" scheme=\"branches\">\n");
    for site in 0..n_sites {
        text.push_str(&format!("{}\t{}\n", site % 3, site % 2));
    }
    text.push_str("</samples>\n");
    text
}
