//! The real server killed with SIGKILL while it takes uploads, three
//! times: what it acknowledged is there after a restart, byte for byte,
//! and no run is half-written.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use sampler_collector::store::{DatabaseTarget, Store};
use serde_json::Value;
use sqlx::Row;

use crate::load::{self, Answer, Prepared, ServerProcess, Shape};

/// Concurrent uploaders.
const CONNECTIONS: usize = 4;

/// Distinct reports; each upload sends one under a new report id.
const REPORTS: usize = 24;

/// What was sent, and what became of it.
#[derive(Debug, Default)]
struct Ledger {
    /// report id → the report sent.
    sent: HashMap<String, usize>,
    /// report id → its `Sampler-Unique-Id`, for those answered 200.
    acknowledged: HashMap<String, String>,
    /// Report ids without an answer: in flight at the kill.
    lost: HashSet<String>,
}

impl Ledger {
    fn record(&mut self, report_id: String, report: usize, answer: Answer) {
        self.sent.insert(report_id.clone(), report);
        match answer {
            Answer::Stored(run_id) => {
                self.acknowledged.insert(report_id, run_id);
            }
            Answer::Lost(_) => {
                self.lost.insert(report_id);
            }
            Answer::Refused(status, body) => {
                panic!("upload {report_id} refused with {status}: {body}")
            }
        }
    }
}

/// Uploads from `CONNECTIONS` connections until `stop`; every upload's
/// (report id, report, answer).
async fn upload_until(
    url: &str,
    token: &str,
    reports: &Arc<Vec<Prepared>>,
    stop: &Arc<AtomicBool>,
) -> Vec<(String, usize, Answer)> {
    let next = Arc::new(AtomicUsize::new(0));
    let tasks: Vec<_> = (0..CONNECTIONS)
        .map(|_| {
            let (url, token) = (url.to_owned(), token.to_owned());
            let (reports, stop, next) = (reports.clone(), stop.clone(), next.clone());
            tokio::spawn(async move {
                let client = load::client();
                let mut done = Vec::new();
                while !stop.load(Ordering::Acquire) {
                    let report = next.fetch_add(1, Ordering::Relaxed) % reports.len();
                    let report_id = uuid::Uuid::new_v4().to_string();
                    let answer =
                        load::send(&client, &url, &token, &reports[report], &report_id).await;
                    done.push((report_id, report, answer));
                }
                done
            })
        })
        .collect();
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await.unwrap());
    }
    all
}

/// GET `path` with `token`: status and body.
async fn get(client: &reqwest::Client, url: &str, token: &str, path: &str) -> (u16, String) {
    let response = client
        .get(format!("{url}{path}"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

/// Every run the read API lists: report id → run id.
async fn listed_runs(url: &str, token: &str) -> HashMap<String, String> {
    let client = load::client();
    let mut listed = HashMap::new();
    let mut cursor = String::new();
    loop {
        let path = format!("/api/v1/runs?app={}&limit=1000{cursor}", load::APP);
        let (status, body) = get(&client, url, token, &path).await;
        assert_eq!(status, 200, "{path}: {body}");
        let page: Value = serde_json::from_str(&body).unwrap();
        for run in page["runs"].as_array().unwrap() {
            let report_id = run["report_id"].as_str().unwrap().to_owned();
            let run_id = run["id"].as_str().unwrap().to_owned();
            assert!(listed.insert(report_id, run_id).is_none(), "{run} twice");
        }
        match page["next_cursor"].as_str() {
            Some(next) => cursor = format!("&cursor={next}"),
            None => return listed,
        }
    }
}

/// Checks through the read API that every subreport of run `run_id` is
/// the text sent in `report`.
async fn check_subreports(
    client: &reqwest::Client,
    url: &str,
    token: &str,
    run_id: &str,
    report: &Prepared,
) {
    for part in &report.parts {
        let path = format!("/api/v1/runs/{run_id}/subreports/{}", part.name);
        let (status, body) = get(client, url, token, &path).await;
        assert_eq!(status, 200, "{path}: {body}");
        assert!(body == part.text, "{path}: not the text sent");
    }
}

/// Everything that must hold after a kill and a restart, for every upload
/// so far. Returns the runs stored without an acknowledgement.
async fn check_after_restart(
    data: &Path,
    server: &ServerProcess,
    read: &str,
    reports: &[Prepared],
    ledger: &Ledger,
) -> usize {
    // The database, as the restarted server sees it.
    let store = Store::open(&DatabaseTarget::SqliteDir(data.to_owned()), 2)
        .await
        .unwrap();
    let runs: HashMap<String, String> = sqlx::query("SELECT report_id, run_id FROM runs")
        .fetch_all(&store.pool)
        .await
        .unwrap()
        .iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect();
    let mut parts: HashMap<String, Vec<(String, Vec<u8>)>> = HashMap::new();
    for row in sqlx::query(
        "SELECT r.report_id, s.name, s.data_gz FROM run_subreports s JOIN runs r ON r.id = s.run_id \
         ORDER BY s.run_id, s.position",
    )
    .fetch_all(&store.pool)
    .await
    .unwrap()
    {
        parts
            .entry(row.get(0))
            .or_default()
            .push((row.get(1), row.get(2)));
    }
    let orphans: i64 = sqlx::query(
        "SELECT COUNT(*) FROM run_subreports WHERE run_id NOT IN (SELECT id FROM runs)",
    )
    .fetch_one(&store.pool)
    .await
    .unwrap()
    .get(0);
    let counted: i64 =
        sqlx::query("SELECT COALESCE(SUM(runs_success + runs_error + runs_crash), 0) FROM builds")
            .fetch_one(&store.pool)
            .await
            .unwrap()
            .get(0);
    store.pool.close().await;
    assert_eq!(orphans, 0, "subreports of no run");
    assert_eq!(
        counted,
        runs.len() as i64,
        "the builds' totals count other runs than those stored"
    );

    // Every run is whole: each subreport sent, in order, its gzip stream
    // stored as sent.
    for (report_id, run_id) in &runs {
        let report = *ledger
            .sent
            .get(report_id)
            .unwrap_or_else(|| panic!("run {run_id} is of report {report_id}, never sent"));
        let sent: Vec<(String, Vec<u8>)> = reports[report]
            .parts
            .iter()
            .map(|part| (part.name.to_owned(), part.gzip.clone()))
            .collect();
        assert!(
            parts.get(report_id) == Some(&sent),
            "run {run_id} (report {report_id}) is half-written or not what was sent"
        );
    }
    for (report_id, run_id) in &ledger.acknowledged {
        assert_eq!(
            runs.get(report_id),
            Some(run_id),
            "acknowledged report {report_id} (run {run_id}) is not stored as such"
        );
    }
    // Beyond those, only uploads in flight at a kill may be stored.
    let extra = runs.len() - ledger.acknowledged.len();
    for report_id in runs.keys() {
        assert!(
            ledger.acknowledged.contains_key(report_id) || ledger.lost.contains(report_id),
            "report {report_id} is stored, but it was refused"
        );
    }
    assert!(extra <= ledger.lost.len());

    // The read API serves them all.
    assert!(
        listed_runs(&server.url, read).await == runs,
        "the read API lists other runs than those stored"
    );
    let client = reqwest::Client::new();
    futures_util::stream::iter(&runs)
        .for_each_concurrent(CONNECTIONS, |(report_id, run_id)| {
            check_subreports(
                &client,
                &server.url,
                read,
                run_id,
                &reports[ledger.sent[report_id]],
            )
        })
        .await;
    extra
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_uploads_survive_sigkill_and_no_run_is_half_written() {
    let started = Instant::now();
    let seed = std::env::var("SAMPLER_FAULT_SEED")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or_else(rand::random::<u64>);
    eprintln!("kill test seed {seed} (SAMPLER_FAULT_SEED={seed} repeats it)");
    let mut rng = StdRng::seed_from_u64(seed);
    let binary = Path::new(env!("CARGO_BIN_EXE_sampler-collector"));
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let database = vec!["--data".to_owned(), data.display().to_string()];
    let ingest = load::token(binary, &database, "ingest");
    let read = load::token(binary, &database, "read");
    let shape = Shape {
        sites: 600,
        ..Shape::REALISTIC
    };
    let reports = Arc::new(load::reports(seed, REPORTS, &shape));
    let log = |start: usize| dir.path().join(format!("server-{start}.log"));
    let mut server = ServerProcess::start(binary, &database, &log(0));
    let mut ledger = Ledger::default();

    for cycle in 1..=3 {
        let delay = Duration::from_millis(rng.random_range(300..=1500));
        let stop = Arc::new(AtomicBool::new(false));
        let uploads = tokio::spawn({
            let (url, ingest) = (server.url.clone(), ingest.clone());
            let (reports, stop) = (reports.clone(), stop.clone());
            async move { upload_until(&url, &ingest, &reports, &stop).await }
        });
        tokio::time::sleep(delay).await;
        // No upload starts after this: those without an answer were in
        // flight at the kill, one per connection at most.
        stop.store(true, Ordering::Release);
        server.kill();
        let answers = uploads.await.unwrap();
        let (acknowledged, lost) = (ledger.acknowledged.len(), ledger.lost.len());
        for (report_id, report, answer) in answers {
            ledger.record(report_id, report, answer);
        }
        let acknowledged = ledger.acknowledged.len() - acknowledged;
        let lost = ledger.lost.len() - lost;
        assert!(acknowledged > 0, "cycle {cycle}: nothing was stored");
        assert!(
            lost <= CONNECTIONS,
            "cycle {cycle}: {lost} uploads without an answer"
        );

        server = ServerProcess::start(binary, &database, &log(cycle));
        let extra = check_after_restart(&data, &server, &read, &reports, &ledger).await;
        eprintln!(
            "cycle {cycle}: killed after {delay:?}: {acknowledged} uploads acknowledged, {lost} without an answer; \
             all {} acknowledged so far are stored whole; {extra} stored without an answer, also whole",
            ledger.acknowledged.len()
        );

        // The restarted server takes uploads.
        let report_id = uuid::Uuid::new_v4().to_string();
        let answer = load::send(
            &load::client(),
            &server.url,
            &ingest,
            &reports[0],
            &report_id,
        )
        .await;
        let Answer::Stored(run_id) = &answer else {
            panic!("cycle {cycle}: the restarted server answered {answer:?}");
        };
        check_subreports(&load::client(), &server.url, &read, run_id, &reports[0]).await;
        ledger.record(report_id, 0, answer);
    }
    server.terminate();
    eprintln!("kill test: {:?}", started.elapsed());
}
