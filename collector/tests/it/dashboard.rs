//! The dashboard and the ranking API over synthetic runs whose site table
//! holds markup: signing in, the cookie, escaping, in plain HTTP and in
//! headless Chromium.

use fantoccini::Locator;
use reqwest::StatusCode;
use reqwest::header::{COOKIE, LOCATION, SET_COOKIE};

use crate::browser::Browser;
use crate::{Collector, UNIT, backends, sampler_headers};

const PREDICATE: &str = r#"name == "<script>alert(1)</script>""#;
const FILE: &str = "/src/<b>bold</b>.c";

/// 30 runs crash where site 0's condition held, 30 succeed where it did
/// not; site 1 held in every run. The build's site table names them.
async fn planted(collector: &Collector) {
    for run in 0..60 {
        let crash = run % 2 == 0;
        let samples = format!(
            "<samples unit=\"{UNIT}\" scheme=\"branches\">\n{}\n1\t1\n</samples>\n",
            if crash { "0\t3" } else { "3\t0" }
        );
        let response = collector
            .upload(
                &[("samples", samples.as_bytes())],
                &sampler_headers(0, if crash { 11 } else { 0 }),
            )
            .await;
        assert_eq!(response.status(), 200);
    }
    let sites = format!(
        "<sites unit=\"{UNIT}\" scheme=\"branches\">\n{FILE}\t7\tmain\t1\t{PREDICATE}\n{FILE}\t9\tmain\t2\targc > 0\n</sites>\n"
    );
    let pool = &collector.store.pool;
    sqlx::query(
        "INSERT INTO site_tables (unit_signature, scheme, n_sites, sites) VALUES ($1, 'branches', 2, $2)",
    )
    .bind(UNIT)
    .bind(&sites)
    .execute(pool)
    .await
    .unwrap();
    sqlx::query(
        "INSERT INTO build_site_tables (build_id, site_table_id) SELECT b.id, s.id FROM builds b, site_tables s",
    )
    .execute(pool)
    .await
    .unwrap();
}

fn no_redirects() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

#[tokio::test]
async fn the_ranking_api_serves_the_analysis() {
    for backend in backends() {
        ranking_api(backend).await;
    }
}

async fn ranking_api(backend: &str) {
    let mut collector = Collector::start(backend).await;
    planted(&collector).await;
    let ranking = collector.get_json("/api/v1/ranking").await;
    assert_eq!(ranking["application"], "demo");
    assert_eq!(ranking["runs"]["failing"], 30);
    assert_eq!(ranking["runs"]["successful"], 30);
    assert_eq!(ranking["predicates"], 4);
    assert_eq!(ranking["rank_by"], "harmonic");
    assert_eq!(ranking["confidence"], 95.0);
    let chosen = ranking["elimination"].as_array().unwrap();
    assert_eq!(chosen.len(), 1);
    assert_eq!(chosen[0]["predicate"], PREDICATE);
    assert_eq!(chosen[0]["file"], FILE);
    assert_eq!(chosen[0]["line"], 7);
    assert_eq!(chosen[0]["f"], 30);
    assert_eq!(chosen[0]["s"], 0);
    assert_eq!(chosen[0]["context"], 0.5);
    assert_eq!(chosen[0]["increase"], 0.5);
    assert_eq!(chosen[0]["explains"], 30);
    assert_eq!(chosen[0]["failing_left"], 0);
    assert_eq!(ranking["ranking"].as_array().unwrap().len(), 1);
    assert_eq!(ranking["ranking"][0]["eliminated"], 1);

    // Other orderings and rules, and their mistakes named.
    let ochiai = collector
        .get_json("/api/v1/ranking?rank_by=ochiai&fail_on_exit=true&confidence=99")
        .await;
    assert_eq!(ochiai["rank_by"], "ochiai");
    assert_eq!(ochiai["confidence"], 99.0);
    assert_eq!(ochiai["failure"]["nonzero_exit"], true);
    assert_eq!(ochiai["elimination"][0]["predicate"], PREDICATE);
    for (query, status, message) in [
        (
            "rank_by=best",
            400,
            "rank_by `best`: expected one of harmonic, importance, ochiai, tarantula, dstar",
        ),
        (
            "fail_on_status=x",
            400,
            "fail_on_status `x`: expected exit statuses separated by commas",
        ),
        (
            "crash_group=99",
            404,
            "no crash group 99 in application `demo`",
        ),
        (
            "app=other",
            403,
            "the token is for application `demo`, not `other`",
        ),
    ] {
        let response = collector
            .client
            .get(format!("{}/api/v1/ranking?{query}", collector.url))
            .bearer_auth(&collector.read)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), status, "{query}");
        let body = response.text().await.unwrap();
        assert!(body.contains(message), "{query}: {body}");
    }
    // An ingest token does not read.
    let response = collector
        .client
        .get(format!("{}/api/v1/ranking", collector.url))
        .bearer_auth(&collector.ingest)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::FORBIDDEN);

    // A new run makes the kept ranking stale.
    let samples =
        format!("<samples unit=\"{UNIT}\" scheme=\"branches\">\n0\t1\n1\t1\n</samples>\n");
    let response = collector
        .upload(&[("samples", samples.as_bytes())], &sampler_headers(0, 11))
        .await;
    assert_eq!(response.status(), 200);
    let ranking = collector.get_json("/api/v1/ranking").await;
    assert_eq!(ranking["runs"]["failing"], 31);
    assert_eq!(ranking["elimination"][0]["f"], 31);
    assert_eq!(ranking["build"], serde_json::Value::Null);

    // Runs of another build: in the application's ranking, not in the
    // first build's.
    let mut headers = sampler_headers(0, 0);
    for (name, value) in &mut headers {
        if *name == "Sampler-Application-Version" {
            *value = "2.0".to_owned();
        }
    }
    for _ in 0..5 {
        let response = collector
            .upload(&[("samples", samples.as_bytes())], &headers)
            .await;
        assert_eq!(response.status(), 200);
    }
    let all = collector.get_json("/api/v1/ranking").await;
    assert_eq!(all["runs"]["successful"], 35);
    let first = collector
        .get_json("/api/v1/ranking?version=1.2&release=3")
        .await;
    assert_eq!(first["runs"]["failing"], 31);
    assert_eq!(first["runs"]["successful"], 30);
    assert_eq!(first["build"]["version"], "1.2");
    assert_eq!(first["build"]["release"], "3");
    let second = collector
        .get_json("/api/v1/ranking?version=2.0&release=3")
        .await;
    assert_eq!(second["runs"]["failing"], 0);
    assert_eq!(second["runs"]["successful"], 5);
    // Its runs' sections have no site table of their build.
    assert_eq!(second["unresolved_sections"], 5);
    let response = collector
        .client
        .get(format!("{}/api/v1/ranking?version=9", collector.url))
        .bearer_auth(&collector.read)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    assert_eq!(
        response.text().await.unwrap().trim(),
        "no build version `9` release `` in application `demo`"
    );
    collector.stop().await;
}

#[tokio::test]
async fn the_dashboard_signs_in_with_a_read_token_and_shows_markup_as_text() {
    for backend in backends() {
        dashboard(backend).await;
    }
}

async fn dashboard(backend: &str) {
    let mut collector = Collector::start(backend).await;
    planted(&collector).await;
    let client = no_redirects();
    let url = &collector.url;

    // Not signed in: to the form.
    let response = client.get(format!("{url}/dashboard")).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    assert_eq!(response.headers()[LOCATION], "/login");
    let form = client.get(format!("{url}/login")).send().await.unwrap();
    assert_eq!(form.status(), 200);
    let form = form.text().await.unwrap();
    assert!(form.contains(r#"<form method="post" action="/login">"#));

    // Wrong tokens are refused with the reason, and set no cookie.
    for (token, message) in [
        (
            collector.ingest.as_str(),
            "this is an ingest token; the dashboard needs a read token",
        ),
        (
            "smp_nothing_here",
            "not a token: tokens look like smp_&#60;id&#62;_&#60;secret&#62;",
        ),
        (
            "smp_0123456789abcdef_0123456789abcdef0123456789abcdef0123456789abcdef",
            "unknown or revoked token",
        ),
    ] {
        let response = client
            .post(format!("{url}/login"))
            .form(&[("token", token)])
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
        assert!(response.headers().get(SET_COOKIE).is_none());
        let body = response.text().await.unwrap();
        assert!(body.contains(message), "{body}");
    }

    // A read token: a secure, HTTP-only, same-site cookie.
    let response = client
        .post(format!("{url}/login"))
        .form(&[("token", collector.read.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    assert_eq!(response.headers()[LOCATION], "/dashboard");
    let cookie = response.headers()[SET_COOKIE].to_str().unwrap().to_owned();
    let attributes: Vec<&str> = cookie.split("; ").collect();
    assert_eq!(attributes[0], format!("sampler_token={}", collector.read));
    for attribute in [
        "HttpOnly",
        "Secure",
        "SameSite=Strict",
        "Path=/",
        "Max-Age=2592000",
    ] {
        assert!(attributes.contains(&attribute), "{cookie}");
    }

    let page = client
        .get(format!("{url}/dashboard"))
        .header(COOKIE, attributes[0])
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
    let page = page.text().await.unwrap();
    // Markup from site tables is text, and the page has no script at all.
    assert!(
        page.contains("name == &#34;&#60;script&#62;alert(1)&#60;/script&#62;&#34;"),
        "{page}"
    );
    assert!(page.contains("/src/&#60;b&#62;bold&#60;/b&#62;.c:7"));
    assert!(!page.to_lowercase().contains("<script"));
    assert!(!page.contains("<b>bold"));
    assert_eq!(page.matches("<svg class=\"thermometer\"").count(), 2);
    assert!(page.contains("30 failing and 30 successful runs analysed, 4 predicates"));
    assert!(
        page.contains(
            r#"<a href="/dashboard?failure=signal&#38;version=1.2&#38;release=3">1.2</a>"#
        ),
        "{page}"
    );
    let build = client
        .get(format!("{url}/dashboard?version=1.2&release=3"))
        .header(COOKIE, attributes[0])
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(build.contains("build 1.2 (release 3) only"), "{build}");
    let controlled = client
        .get(format!("{url}/dashboard?fdr=0.05"))
        .header(COOKIE, attributes[0])
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        controlled.contains(r#"name="fdr" value="0.05" checked"#),
        "{controlled}"
    );
    assert_eq!(controlled.matches("<tr class=\"predictor").count(), 2);

    let response = client
        .post(format!("{url}/logout"))
        .header(COOKIE, attributes[0])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    let cleared = response.headers()[SET_COOKIE].to_str().unwrap();
    assert!(cleared.starts_with("sampler_token=;"), "{cleared}");
    assert!(cleared.contains("Max-Age=0"), "{cleared}");

    // The same in a real browser, signing in through the form.
    if let Some(browser) = Browser::start().await {
        eprintln!("browser on {backend}");
        browser.sign_in(url, &collector.read).await;
        assert_eq!(
            browser.texts("#predictors code.predicate").await,
            [PREDICATE]
        );
        assert_eq!(
            browser.texts("#predictors td code").await[1],
            format!("{FILE}:7")
        );
        let scripts = browser
            .client
            .execute("return document.scripts.length", Vec::new())
            .await
            .unwrap();
        assert_eq!(scripts, 0);
        // The cookie is out of scripts' reach.
        let cookies = browser
            .client
            .execute("return document.cookie", Vec::new())
            .await
            .unwrap();
        assert_eq!(cookies, "");
        let thermometers = browser
            .client
            .find_all(Locator::Css("#predictors svg.thermometer rect.context"))
            .await
            .unwrap();
        assert_eq!(thermometers.len(), 1);
        browser
            .screenshot(&format!("dashboard-markup-{backend}"))
            .await;
        browser.close().await;
    }
    collector.stop().await;
}
