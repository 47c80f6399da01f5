//! Hostile uploads never panic the server and never corrupt what it
//! stored: every answer is 200, 400 or 413, and the runs stored are
//! exactly the 200s, each readable back as sent.

use std::sync::OnceLock;

use proptest::prelude::*;

use crate::{Collector, OriginalUpload, UNIT, gzip, samples};

struct Shared {
    runtime: tokio::runtime::Runtime,
    collector: Collector,
}

fn shared() -> &'static Shared {
    static SHARED: OnceLock<Shared> = OnceLock::new();
    SHARED.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let collector = runtime.block_on(Collector::start("sqlite"));
        Shared { runtime, collector }
    })
}

/// Sends a request and checks the answer is one the protocol allows and
/// that exactly the accepted ones were stored, byte for byte.
fn send_and_check(
    headers: Vec<(&'static str, String)>,
    content_type: String,
    body: Vec<u8>,
    parts: &[(String, Vec<u8>)],
) -> u16 {
    // One request at a time: the checks count the runs stored.
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _serial = SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let shared = shared();
    let collector = &shared.collector;
    shared.runtime.block_on(async {
        let before = collector.count_runs().await;
        let response = collector
            .post(
                "/upload",
                Some(&collector.ingest),
                &headers,
                &content_type,
                body,
            )
            .await;
        let status = response.status().as_u16();
        let run_id = response
            .headers()
            .get("sampler-unique-id")
            .map(|v| v.to_str().unwrap().to_owned());
        let message = response.text().await.unwrap();
        assert!(matches!(status, 200 | 400 | 413), "{status}: {message}");
        let after = collector.count_runs().await;
        if status == 200 {
            assert_eq!(after, before + 1);
            let run_id = run_id.expect("a run id");
            for (name, text) in parts {
                let stored = collector
                    .get_text(&format!("/api/v1/runs/{run_id}/subreports/{name}"))
                    .await;
                assert_eq!(stored.as_bytes(), text.as_slice());
            }
        } else {
            assert_eq!(after, before, "a refused upload was stored: {message}");
            assert!(!message.is_empty());
        }
        status
    })
}

fn part_name() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("samples".to_owned()),
        Just("main-backtrace".to_owned()),
        "[a-z_-]{1,8}",
        "\\PC{0,12}",
        Just("../x".to_owned()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn random_bodies_are_refused_cleanly(body in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let upload = OriginalUpload::new(&[]);
        let status = send_and_check(vec![], upload.content_type(), body, &[]);
        prop_assert!(status == 400 || status == 413);
    }

    #[test]
    fn random_parts_are_stored_exactly_or_refused(
        parts in proptest::collection::vec((part_name(), proptest::collection::vec(any::<u8>(), 0..512)), 1..4),
    ) {
        let named: Vec<(&str, &[u8])> = parts.iter().map(|(name, text)| (name.as_str(), text.as_slice())).collect();
        let upload = OriginalUpload::new(&named);
        send_and_check(vec![], upload.content_type(), upload.body, &parts);
    }

    #[test]
    fn damaged_reports_are_refused_by_line(
        n_sites in 1usize..40,
        cut in any::<prop::sample::Index>(),
        junk in "[0-9\t<>/a-z\"= \n]{0,20}",
    ) {
        let text = samples(n_sites);
        let at = cut.index(text.len());
        let damaged = format!("{}{junk}{}", &text[..at], &text[at..]);
        let parts = vec![("samples".to_owned(), damaged.into_bytes())];
        let upload = OriginalUpload::new(&[("samples", &parts[0].1)]);
        send_and_check(vec![], upload.content_type(), upload.body, &parts);
    }

    #[test]
    fn truncated_gzip_is_400(n_sites in 1usize..200, cut in any::<prop::sample::Index>()) {
        let text = samples(n_sites);
        let gz = gzip(text.as_bytes());
        let keep = cut.index(gz.len());
        let boundary = "b0undary";
        let mut body = format!("--{boundary}\r\ncontent-disposition: form-data; name=\"samples\"\r\ncontent-encoding: gzip\r\n\r\n").into_bytes();
        body.extend_from_slice(&gz[..keep]);
        body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
        let status = send_and_check(vec![], format!("multipart/form-data; boundary={boundary}"), body, &[]);
        prop_assert_eq!(status, 400);
    }

    #[test]
    fn hostile_headers_never_store_nonsense(
        status_value in "\\PC{0,6}",
        signal_value in "[0-9]{0,4}",
        sparsity in "-?[0-9]{0,12}",
        version in "\\PC{0,40}",
    ) {
        let text = format!("<samples unit=\"{UNIT}\" scheme=\"returns\">\n0\t1\t0\n</samples>\n");
        let parts = vec![("samples".to_owned(), text.clone().into_bytes())];
        let upload = OriginalUpload::new(&[("samples", text.as_bytes())]);
        let headers = vec![
            ("Sampler-Exit-Status", status_value),
            ("Sampler-Exit-Signal", signal_value),
            ("Sampler-Sparsity", sparsity),
            ("Sampler-Application-Version", version),
        ];
        // reqwest refuses header values it cannot send; those are not requests.
        if headers.iter().all(|(_, value)| reqwest::header::HeaderValue::from_str(value).is_ok()) {
            send_and_check(headers, upload.content_type(), upload.body, &parts);
        }
    }
}

/// GETs `path` (with `cookie` when given, else the read token) and
/// returns the status and body.
fn get(path: &str, cookie: Option<&str>) -> (u16, String) {
    let shared = shared();
    let collector = &shared.collector;
    shared.runtime.block_on(async {
        let mut request = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap()
            .get(format!("{}{path}", collector.url));
        request = match cookie {
            Some(cookie) => request.header("Cookie", format!("sampler_token={cookie}")),
            None => request.bearer_auth(&collector.read),
        };
        let response = request.send().await.unwrap();
        (response.status().as_u16(), response.text().await.unwrap())
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    // Any query string: a ranking, or a 400 or 404 that says why.
    #[test]
    fn ranking_queries_are_answered_or_refused_by_name(
        key in prop::sample::select(vec!["crash_group", "fail_on_exit", "fail_on_status", "rank_by", "confidence", "app", "other"]),
        value in "[ -~]{0,24}",
    ) {
        let query: String = url::form_urlencoded::Serializer::new(String::new())
            .append_pair(key, &value)
            .finish();
        let (status, body) = get(&format!("/api/v1/ranking?{query}"), None);
        prop_assert!([200, 400, 403, 404].contains(&status), "{status} {body}");
        if status != 200 {
            prop_assert!(!body.is_empty());
        }
    }

    // Any cookie: the login form again (never a page, never a 5xx).
    #[test]
    fn dashboard_cookies_are_checked(cookie in "[!#-+.-~]{0,80}") {
        let (status, body) = get("/dashboard", Some(&cookie));
        prop_assert!([303, 401].contains(&status), "{status} {body}");
    }
}
