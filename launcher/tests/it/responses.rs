//! The collector's refusals, from a test server that gives them, and the
//! request sampler-run sends.

use std::time::Duration;

use crate::{FixedServer, User, answer};

fn user_for(server: &FixedServer) -> User {
    let user = User::consenting();
    user.configure(&format!(
        "server = \"{}\"\ntoken = \"secret\"\n",
        server.url
    ));
    user
}

fn ok(id: &str, extra: &[&str]) -> String {
    let mut headers = vec![format!("Sampler-Unique-Id: {id}")];
    headers.extend(extra.iter().map(|line| line.to_string()));
    let headers: Vec<&str> = headers.iter().map(String::as_str).collect();
    answer("200 OK", &headers, id)
}

#[test]
fn the_request_carries_the_protocols_headers() {
    let server = FixedServer::start(vec![ok("run-1", &[])]);
    let user = user_for(&server);
    let output = user
        .command()
        .args([
            "--app",
            "demo",
            "--version",
            "2.0",
            "--release",
            "7",
            "--instrumentor-version",
            "0.1.0",
            "--build-distribution",
            "debian-12-x86_64",
            "--sparsity",
            "5",
            "--",
        ])
        .arg(&crate::tools().program)
        .arg("exit")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(3));
    let requests = server.requests.lock().unwrap();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    for (name, value) in [
        ("authorization", "Bearer secret"),
        ("sampler-application-name", "demo"),
        ("sampler-application-version", "2.0"),
        ("sampler-application-release", "7"),
        ("sampler-instrumentor-version", "0.1.0"),
        ("sampler-build-distribution", "debian-12-x86_64"),
        ("sampler-sparsity", "5"),
        ("sampler-exit-status", "3"),
        ("sampler-exit-signal", "0"),
        ("sampler-version", env!("CARGO_PKG_VERSION")),
        (
            "sampler-executable-path",
            crate::tools().program.to_str().unwrap(),
        ),
    ] {
        assert_eq!(request.header(name), Some(value), "{name}");
    }
    let id = request.header("sampler-report-id").unwrap();
    assert_eq!(uuid_version(id), Some(7), "{id}");
    assert!(
        request
            .header("content-type")
            .unwrap()
            .starts_with("multipart/form-data; boundary=\"===============")
    );
    assert!(user.spooled().is_empty());
    assert!(user.status().contains("uploaded: 1,"));
}

fn uuid_version(text: &str) -> Option<u32> {
    let parts: Vec<&str> = text.split('-').collect();
    (parts.len() == 5 && text.len() == 36).then(|| parts[2].chars().next()?.to_digit(16))?
}

fn refused(status: &str) {
    let reason = format!("part `samples`: refused for the test ({status})");
    let server = FixedServer::start(vec![answer(status, &[], &format!("{reason}\n"))]);
    let user = user_for(&server);
    assert!(user.run("ok").status.success());
    assert_eq!(server.count(), 1);
    // Moved aside with the reason, not retried, counted.
    assert!(user.spooled().is_empty());
    let rejected: Vec<_> = std::fs::read_dir(user.state().join("rejected/demo"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    assert_eq!(rejected.len(), 2, "{rejected:?}");
    let reason_file = rejected
        .iter()
        .find(|path| path.extension().is_some_and(|ext| ext == "reason"))
        .unwrap();
    let code = &status[..3];
    assert_eq!(
        std::fs::read_to_string(reason_file).unwrap(),
        format!("HTTP {code}: {reason}\n")
    );
    let output = user.flush();
    assert!(output.status.success());
    assert_eq!(server.count(), 1);
    let status = user.status();
    assert!(status.contains("refused (400/413): 1,"), "{status}");
}

#[test]
fn a_400_is_moved_aside_with_its_reason_and_not_retried() {
    refused("400 Bad Request");
}

#[test]
fn a_413_is_moved_aside_with_its_reason_and_not_retried() {
    refused("413 Payload Too Large");
}

#[test]
fn a_401_stops_uploads_for_the_app_until_the_configuration_changes() {
    let server = FixedServer::start(vec![
        answer(
            "401 Unauthorized",
            &["WWW-Authenticate: Bearer"],
            "unknown token\n",
        ),
        ok("run-1", &[]),
    ]);
    let user = user_for(&server);
    assert!(user.run("ok").status.success());
    assert_eq!(server.count(), 1);
    assert_eq!(user.spooled().len(), 1);
    let status = user.status();
    assert!(
        status.contains(
            "stopped until the server or token changes: the collector answered 401 (unknown token)"
        ),
        "{status}"
    );
    // Stopped: runs are still spooled, nothing is sent.
    assert!(user.run("ok").status.success());
    let output = user.flush();
    assert!(output.status.success());
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("stopped: the collector answered 401")
    );
    assert_eq!(server.count(), 1);
    assert_eq!(user.spooled().len(), 2);
    // A new token: uploads resume.
    user.configure(&format!(
        "server = \"{}\"\ntoken = \"better\"\n",
        server.url
    ));
    let output = user.flush();
    assert!(output.status.success(), "{output:?}");
    assert_eq!(server.count(), 3);
    assert!(user.spooled().is_empty());
    let requests = server.requests.lock().unwrap();
    assert_eq!(requests[2].header("authorization"), Some("Bearer better"));
}

#[test]
fn a_429_pauses_the_app_for_its_retry_after() {
    let server = FixedServer::start(vec![
        answer(
            "429 Too Many Requests",
            &["Retry-After: 120"],
            "over the token's rate\n",
        ),
        ok("run-1", &[]),
    ]);
    let user = user_for(&server);
    assert!(user.run("ok").status.success());
    assert_eq!(server.count(), 1);
    assert_eq!(user.spooled().len(), 1);
    assert!(user.run("ok").status.success());
    let output = user.flush();
    assert!(output.status.success());
    assert_eq!(server.count(), 1, "sent during the pause");
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("the collector asked to wait"),
        "{output:?}"
    );
    let status = user.status();
    assert!(status.contains("paused by the collector: "), "{status}");
    assert_eq!(user.spooled().len(), 2);
}

#[test]
fn a_503_is_retried_after_its_retry_after() {
    let server = FixedServer::start(vec![
        answer(
            "503 Service Unavailable",
            &["Retry-After: 1"],
            "overloaded\n",
        ),
        ok("run-1", &[]),
    ]);
    let user = user_for(&server);
    assert!(user.run("ok").status.success());
    assert_eq!(server.count(), 1);
    let output = user.flush();
    assert_eq!(server.count(), 1, "{output:?}");
    std::thread::sleep(Duration::from_millis(1100));
    let output = user.flush();
    assert!(output.status.success(), "{output:?}");
    assert_eq!(server.count(), 2);
    assert!(user.spooled().is_empty());
}

#[test]
fn the_collectors_sparsity_is_remembered_for_the_app() {
    let server = FixedServer::start(vec![
        ok("run-1", &["Sampler-Change-Sparsity: 1000"]),
        ok("run-2", &[]),
    ]);
    let user = user_for(&server);
    assert!(user.run("ok").status.success());
    assert!(user.run("ok").status.success());
    let requests = server.requests.lock().unwrap();
    assert_eq!(requests[0].header("sampler-sparsity"), Some("100"));
    assert_eq!(requests[1].header("sampler-sparsity"), Some("1000"));
}
