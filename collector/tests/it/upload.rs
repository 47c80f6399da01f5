//! Uploads: every answer of the protocol, produced by a real request.

use std::num::NonZeroU32;

use sampler_collector::limits::Limits;
use serde_json::json;

use crate::{Collector, OriginalUpload, UNIT, gzip, sampler_headers, samples};

async fn body(response: reqwest::Response) -> (u16, String) {
    (response.status().as_u16(), response.text().await.unwrap())
}

#[tokio::test]
async fn an_original_upload_reads_back_byte_identical() {
    for backend in crate::backends() {
        let collector = Collector::start(backend).await;
        let samples_text = samples(5000);
        let backtrace = "./demo(crash+0x14)[0x401136]\n/lib/x86_64-linux-gnu/libc.so.6(+0x3c050)[0x7f6c1c23c050]\n";
        let response = collector
            .upload(
                &[
                    ("samples", samples_text.as_bytes()),
                    ("main-backtrace", backtrace.as_bytes()),
                ],
                &sampler_headers(0, 11),
            )
            .await;
        assert_eq!(response.status(), 200, "{backend}");
        let unique_id = response.headers()["sampler-unique-id"]
            .to_str()
            .unwrap()
            .to_owned();
        assert_eq!(response.text().await.unwrap(), unique_id);

        let run = collector
            .get_json(&format!("/api/v1/runs/{unique_id}"))
            .await;
        assert_eq!(run["id"], json!(unique_id));
        assert_eq!(run["exit_status"], json!(0));
        assert_eq!(run["exit_signal"], json!(11));
        assert_eq!(run["outcome"], json!("crash"));
        assert_eq!(run["sparsity"], json!(100));
        assert_eq!(run["version"], json!("1.2"));
        assert_eq!(run["release"], json!("3"));
        assert_eq!(run["executable_path"], json!("/usr/bin/demo"));
        assert_eq!(run["sampler_version"], json!("1.6.0"));
        assert_eq!(run["instrumentor_version"], json!("0.1.0"));
        assert_eq!(run["build_distribution"], json!("debian-12-x86_64"));
        assert_eq!(
            run["subreports"],
            json!([{"name": "samples", "size": samples_text.len()}, {"name": "main-backtrace", "size": backtrace.len()}])
        );
        // No build registered: the counters are there, unresolved; the
        // crash waits for its debug files (it has no modules: it is done).
        let counters = &run["counters"][0];
        assert_eq!(counters["unit"], json!(UNIT));
        assert_eq!(counters["scheme"], json!("branches"));
        assert_eq!(counters["sites"], json!(5000));
        assert_eq!(counters["resolved"], json!(false));
        let rows = counters["rows"].as_array().unwrap();
        // Site i is (i % 3, i % 2): zero only when i % 6 == 0.
        assert_eq!(rows.len(), 5000 - 5000usize.div_ceil(6));
        assert_eq!(rows[0], json!({"site": 1, "counters": [1, 1]}));
        assert_eq!(rows[1], json!({"site": 2, "counters": [2, 0]}));

        let stored = collector
            .get_text(&format!("/api/v1/runs/{unique_id}/subreports/samples"))
            .await;
        assert_eq!(stored, samples_text);
        let stored = collector
            .get_text(&format!(
                "/api/v1/runs/{unique_id}/subreports/main-backtrace"
            ))
            .await;
        assert_eq!(stored, backtrace);
        let report = collector
            .get_text(&format!("/api/v1/runs/{unique_id}/report"))
            .await;
        assert_eq!(
            report,
            format!(
                "<report id=\"samples\">\n{samples_text}</report>\n<report id=\"main-backtrace\">\n{backtrace}</report>\n"
            )
        );

        let listed = collector.get_json("/api/v1/runs?app=demo").await;
        assert_eq!(listed["runs"].as_array().unwrap().len(), 1);
        assert_eq!(listed["runs"][0]["id"], json!(unique_id));
        assert_eq!(listed["next_cursor"], json!(null));
        let builds = collector.get_json("/api/v1/builds?app=demo").await;
        assert_eq!(builds["builds"][0]["version"], json!("1.2"));
        assert_eq!(
            builds["builds"][0]["runs"],
            json!({"success": 0, "error": 0, "crash": 1})
        );
        assert_eq!(builds["builds"][0]["registered"], json!(null));
    }
}

#[tokio::test]
async fn the_cgi_path_and_the_same_report_id_twice_store_one_run() {
    for backend in crate::backends() {
        let collector = Collector::start(backend).await;
        let mut headers = sampler_headers(3, 0);
        headers.push((
            "Sampler-Report-Id",
            "5c9a1f0e-2b7d-4e1a-9c3f-0a1b2c3d4e5f".into(),
        ));
        let text = samples(10);
        let upload = OriginalUpload::new(&[("samples", text.as_bytes())]);
        let first = collector
            .post(
                "/cgi-bin/sampler-upload",
                Some(&collector.ingest),
                &headers,
                &upload.content_type(),
                upload.body.clone(),
            )
            .await;
        assert_eq!(first.status(), 200);
        let first_id = first.headers()["sampler-unique-id"]
            .to_str()
            .unwrap()
            .to_owned();
        let second = collector.send(&upload, &headers).await;
        assert_eq!(second.status(), 200);
        assert_eq!(
            second.headers()["sampler-unique-id"].to_str().unwrap(),
            first_id
        );
        assert_eq!(collector.count_runs().await, 1, "{backend}");
        let builds = collector.get_json("/api/v1/builds").await;
        assert_eq!(
            builds["builds"][0]["runs"],
            json!({"success": 0, "error": 1, "crash": 0})
        );
        let run = collector
            .get_json(&format!("/api/v1/runs/{first_id}"))
            .await;
        assert_eq!(
            run["report_id"],
            json!("5c9a1f0e-2b7d-4e1a-9c3f-0a1b2c3d4e5f")
        );
        assert_eq!(run["outcome"], json!("error"));
    }
}

#[tokio::test]
async fn malformed_requests_get_400_naming_what_was_wrong() {
    for backend in crate::backends() {
        let collector = Collector::start(backend).await;
        let text = samples(3);
        let good = OriginalUpload::new(&[("samples", text.as_bytes())]);
        let post = |headers: Vec<(&'static str, String)>, content_type: String, body: Vec<u8>| {
            let collector = &collector;
            async move {
                body_of(
                    collector
                        .post(
                            "/upload",
                            Some(&collector.ingest),
                            &headers,
                            &content_type,
                            body,
                        )
                        .await,
                )
                .await
            }
        };
        async fn body_of(response: reqwest::Response) -> (u16, String) {
            body(response).await
        }

        assert_eq!(
            post(vec![], "text/plain".into(), good.body.clone()).await,
            (
                400,
                "`Content-Type: text/plain`: expected multipart/form-data with a boundary\n".into()
            )
        );
        let (status, message) = post(vec![], good.content_type(), b"--nonsense".to_vec()).await;
        assert_eq!(status, 400);
        assert!(
            message.starts_with("malformed multipart body: "),
            "{message}"
        );
        assert_eq!(
            post(
                vec![("Sampler-Exit-Status", "-1".into())],
                good.content_type(),
                good.body.clone()
            )
            .await,
            (
                400,
                "header `sampler-exit-status`: `-1` is not a whole number from 0 to 255\n".into()
            )
        );
        assert_eq!(
            post(vec![("Sampler-Exit-Status", "1".into()), ("Sampler-Exit-Signal", "11".into())], good.content_type(), good.body.clone()).await,
            (400, "headers `sampler-exit-status` (1) and `sampler-exit-signal` (11): a run ends by one or the other, not both\n".into())
        );
        assert_eq!(
            post(
                vec![("Sampler-Sparsity", "0".into())],
                good.content_type(),
                good.body.clone()
            )
            .await,
            (
                400,
                "header `sampler-sparsity`: `0` is not a whole number from 1 to 4294967295\n"
                    .into()
            )
        );
        assert_eq!(
            post(
                vec![("Sampler-Report-Id", "not-a-uuid".into())],
                good.content_type(),
                good.body.clone()
            )
            .await,
            (
                400,
                "header `sampler-report-id`: `not-a-uuid` is not a UUID\n".into()
            )
        );

        // A part whose gzip stream is cut short.
        let mut upload = OriginalUpload::new(&[("samples", text.as_bytes())]);
        let gz = gzip(text.as_bytes());
        let start = upload.body.windows(gz.len()).position(|w| w == gz).unwrap();
        upload.body.drain(start + gz.len() - 9..start + gz.len());
        let (status, message) = post(vec![], upload.content_type(), upload.body).await;
        assert_eq!(status, 400);
        assert!(
            message.starts_with("part `samples`: truncated or damaged gzip stream"),
            "{message}"
        );

        // Report text that is not a samples subreport.
        let broken = format!("<samples unit=\"{UNIT}\" scheme=\"branches\">\n1\tx\n</samples>\n");
        let upload = OriginalUpload::new(&[("samples", broken.as_bytes())]);
        let (status, message) = post(vec![], upload.content_type(), upload.body).await;
        assert_eq!(status, 400);
        assert_eq!(
            message,
            "part `samples`: line 2: expected 2 unsigned decimal counters separated by tabs, or `</samples>` closing the section opened at line 1, found \"1\\tx\"\n"
        );

        // Hostile part names.
        let upload = OriginalUpload::new(&[("../../etc/passwd", b"x")]);
        assert_eq!(
            post(vec![], upload.content_type(), upload.body).await,
            (
                400,
                "part 1: name `../../etc/passwd` is not 1 to 64 letters, digits, `-` or `_`\n"
                    .into()
            )
        );
        let upload =
            OriginalUpload::new(&[("samples", text.as_bytes()), ("samples", text.as_bytes())]);
        assert_eq!(
            post(vec![], upload.content_type(), upload.body).await,
            (400, "part `samples` appears twice\n".into())
        );
        let upload = OriginalUpload::new(&[("notes", b"\xff\xfe")]);
        assert_eq!(
            post(vec![], upload.content_type(), upload.body).await,
            (400, "part `notes`: not UTF-8 text (byte 0)\n".into())
        );
        let empty = OriginalUpload::new(&[]);
        assert_eq!(
            post(vec![], empty.content_type(), empty.body).await,
            (
                400,
                "the body has no parts: expected one per subreport\n".into()
            )
        );
        assert_eq!(collector.count_runs().await, 0);
    }
}

#[tokio::test]
async fn oversized_uploads_and_gzip_bombs_get_413() {
    for backend in crate::backends() {
        let limits = Limits {
            max_upload_bytes: 64 << 10,
            max_report_bytes: 1 << 20,
            ..Limits::default()
        };
        let collector = Collector::with_limits(backend, limits.clone()).await;
        // 16 MiB of zeros compress to about 16 KiB: under the compressed limit,
        // far over the decompressed one.
        let bomb = vec![0u8; 16 << 20];
        let upload = OriginalUpload::new(&[("samples", &bomb)]);
        assert!(upload.body.len() < 64 << 10);
        let (status, message) = body(collector.send(&upload, &[]).await).await;
        assert_eq!(
            (status, message.as_str()),
            (
                413,
                "part `samples`: the report is over the limit of 1048576 bytes once decompressed\n"
            )
        );

        // Incompressible bytes over the compressed limit.
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let noise: Vec<u8> = (0..100_000)
            .map(|_| {
                // xorshift64: bytes gzip cannot shrink.
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect();
        let upload = OriginalUpload::new(&[("samples", &noise)]);
        let expected = format!(
            "the body's {} bytes are over the limit of 65536 bytes\n",
            upload.body.len()
        );
        let (status, message) = body(collector.send(&upload, &[]).await).await;
        assert_eq!((status, message), (413, expected));
        assert_eq!(collector.count_runs().await, 0);
    }
}

#[tokio::test]
async fn tokens_decide_who_may_upload_and_read() {
    for backend in crate::backends() {
        let limits = Limits {
            token_rate: NonZeroU32::new(1).unwrap(),
            token_burst: NonZeroU32::new(2).unwrap(),
            ..Limits::default()
        };
        let collector = Collector::with_limits(backend, limits.clone()).await;
        let text = samples(3);
        let upload = OriginalUpload::new(&[("samples", text.as_bytes())]);
        let send = |token: Option<String>| {
            let collector = &collector;
            let upload = OriginalUpload {
                boundary: upload.boundary.clone(),
                body: upload.body.clone(),
            };
            async move {
                collector
                    .post(
                        "/upload",
                        token.as_deref(),
                        &[],
                        &upload.content_type(),
                        upload.body,
                    )
                    .await
            }
        };
        let missing = send(None).await;
        assert_eq!(missing.status(), 401);
        assert_eq!(missing.headers()["www-authenticate"], "Bearer");
        let unknown = format!("smp_0123456789abcdef_{}", "0".repeat(48));
        assert_eq!(
            body(send(Some(unknown)).await).await,
            (401, "unknown token\n".into())
        );
        // A known id with a wrong secret is just as unknown.
        let (id, _) = collector.ingest.rsplit_once('_').unwrap();
        assert_eq!(
            body(send(Some(format!("{id}_{}", "f".repeat(48)))).await).await,
            (401, "unknown token\n".into())
        );
        assert_eq!(
            body(send(Some(collector.read.clone())).await).await,
            (
                403,
                "this is a read token; this request needs a ingest token\n".into()
            )
        );
        // Another application's name with this token.
        let headers = vec![("Sampler-Application-Name", "other".to_owned())];
        let response = collector.send(&upload, &headers).await;
        assert_eq!(
            body(response).await,
            (
                403,
                "the token is for application `demo`, not `other`\n".into()
            )
        );
        // The application-name refusal spent one of the burst of two.
        assert_eq!(send(Some(collector.ingest.clone())).await.status(), 200);
        let limited = send(Some(collector.ingest.clone())).await;
        assert_eq!(limited.status(), 429);
        assert_eq!(limited.headers()["retry-after"], "1");
        // Reading needs a read token.
        let response = collector
            .client
            .get(format!("{}/api/v1/runs", collector.url))
            .bearer_auth(&collector.ingest)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 403);
        let response = collector
            .client
            .get(format!("{}/api/v1/runs", collector.url))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 401);
        let response = collector
            .client
            .get(format!("{}/api/v1/runs?app=other", collector.url))
            .bearer_auth(&collector.read)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 403);
        assert_eq!(collector.count_runs().await, 1);

        // A revoked token is refused; `list` shows it revoked, never a secret.
        let spare = sampler_collector::tokens::create(
            &collector.store,
            "demo",
            sampler_collector::tokens::Scope::Ingest,
        )
        .await
        .unwrap();
        assert!(
            sampler_collector::tokens::revoke(&collector.store, &spare)
                .await
                .unwrap()
        );
        assert!(
            !sampler_collector::tokens::revoke(&collector.store, &spare)
                .await
                .unwrap()
        );
        assert_eq!(
            body(send(Some(spare.clone())).await).await,
            (401, "unknown token\n".into())
        );
        let listed = sampler_collector::tokens::list(&collector.store)
            .await
            .unwrap();
        let mut scopes: Vec<(&str, &str, bool)> = listed
            .iter()
            .map(|(_, app, scope, _, revoked)| (app.as_str(), scope.as_str(), *revoked))
            .collect();
        scopes.sort();
        assert_eq!(
            scopes,
            [
                ("demo", "ingest", false),
                ("demo", "ingest", true),
                ("demo", "read", false)
            ]
        );
        let revoked = listed.iter().find(|token| token.4).unwrap();
        assert_eq!(format!("smp_{}_", revoked.0), spare[..21]);
    }
}

#[tokio::test]
async fn a_full_queue_gets_503_and_the_queued_runs_are_stored() {
    use sqlx::Connection;
    let limits = Limits {
        queue: 1,
        batch: 1,
        ..Limits::default()
    };
    let collector = Collector::with_limits("sqlite", limits).await;
    // Hold SQLite's write lock from another connection: the writer waits
    // (busy timeout) with one run, one more fills the queue, the third is
    // refused.
    let path = collector._data.path().join("data").join("collector.sqlite");
    let mut blocker = sqlx::SqliteConnection::connect(&format!("sqlite://{}", path.display()))
        .await
        .unwrap();
    sqlx::query("BEGIN IMMEDIATE")
        .execute(&mut blocker)
        .await
        .unwrap();
    let text = samples(3);
    let upload = OriginalUpload::new(&[("samples", text.as_bytes())]);
    let mut waiting = Vec::new();
    for _ in 0..2 {
        let client = collector.client.clone();
        let request = client
            .post(format!("{}/upload", collector.url))
            .bearer_auth(&collector.ingest)
            .header("Content-Type", upload.content_type())
            .body(upload.body.clone());
        waiting.push(tokio::spawn(request.send()));
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    }
    let refused = collector.send(&upload, &[]).await;
    assert_eq!(refused.status(), 503);
    assert_eq!(refused.headers()["retry-after"], "1");
    assert_eq!(refused.text().await.unwrap(), "the ingest queue is full\n");
    sqlx::query("ROLLBACK").execute(&mut blocker).await.unwrap();
    for request in waiting {
        assert_eq!(request.await.unwrap().unwrap().status(), 200);
    }
    assert_eq!(collector.count_runs().await, 2);
    let metrics = reqwest::get(format!("{}/metrics", collector.url))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains("sampler_collector_uploads_total{result=\"unavailable\"} 1\n"),
        "{metrics}"
    );
    assert!(
        metrics.contains("sampler_collector_uploads_total{result=\"accepted\"} 2\n"),
        "{metrics}"
    );
    assert!(
        metrics.contains("sampler_collector_database_batch_seconds_count 2\n"),
        "{metrics}"
    );
}

#[tokio::test]
async fn shutdown_finishes_in_flight_uploads_and_health_says_so() {
    for backend in crate::backends() {
        let mut collector = Collector::start(backend).await;
        let health = reqwest::get(format!("{}/healthz", collector.url))
            .await
            .unwrap();
        assert_eq!(
            (health.status().as_u16(), health.text().await.unwrap()),
            (200, "ok\n".into())
        );
        let text = samples(2000);
        let mut in_flight = Vec::new();
        for _ in 0..20 {
            let upload = OriginalUpload::new(&[("samples", text.as_bytes())]);
            let request = collector
                .client
                .post(format!("{}/upload", collector.url))
                .bearer_auth(&collector.ingest)
                .header("Content-Type", upload.content_type())
                .body(upload.body);
            in_flight.push(tokio::spawn(request.send()));
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        let url = collector.url.clone();
        collector.stop().await;
        let mut accepted = 0;
        for request in in_flight {
            match request.await.unwrap() {
                Ok(response) if response.status() == 200 => accepted += 1,
                Ok(response) => assert_eq!(response.status(), 503),
                Err(_) => {} // never connected: refused, not lost
            }
        }
        assert_eq!(collector.count_runs().await, accepted);
        assert!(
            reqwest::get(format!("{url}/healthz")).await.is_err(),
            "the server still listens"
        );
    }
}
