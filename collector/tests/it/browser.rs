//! Headless Chromium driven through WebDriver (Debian's `chromium` and
//! `chromium-driver`), for the dashboard's tests.
//!
//! When `SAMPLER_TEST_REQUIRE_BROWSER` is set (CI), a missing browser fails
//! the test; otherwise the browser part is skipped with a note.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

/// A chromedriver process and a session in a fresh Chromium profile.
pub(crate) struct Browser {
    pub(crate) client: Client,
    driver: Child,
    _profile: tempfile::TempDir,
}

impl Browser {
    /// Starts one, or `None` (with a note) when Chromium is not installed
    /// and the browser is not required.
    pub(crate) async fn start() -> Option<Self> {
        if !Path::new(CHROMIUM).exists() || !Path::new(CHROMEDRIVER).exists() {
            assert!(
                std::env::var_os("SAMPLER_TEST_REQUIRE_BROWSER").is_none(),
                "SAMPLER_TEST_REQUIRE_BROWSER is set but {CHROMIUM} or {CHROMEDRIVER} is missing \
                 (Debian packages chromium and chromium-driver)"
            );
            eprintln!(
                "note: no {CHROMIUM}/{CHROMEDRIVER}: the browser part of this test is skipped"
            );
            return None;
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let driver = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting chromedriver");
        let profile = tempfile::tempdir().unwrap();
        let mut capabilities = serde_json::Map::new();
        capabilities.insert(
            "goog:chromeOptions".to_owned(),
            serde_json::json!({
                "binary": CHROMIUM,
                // As root in a container, without a GPU and without the
                // network Chromium looks for at every start.
                "args": [
                    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
                    "--no-first-run", "--disable-background-networking",
                    "--disable-component-update", "--disable-sync",
                    "--window-size=1400,2000",
                    format!("--user-data-dir={}", profile.path().display()),
                ],
            }),
        );
        let url = format!("http://127.0.0.1:{port}");
        let started = Instant::now();
        let client = loop {
            match ClientBuilder::rustls()
                .expect("rustls")
                .capabilities(capabilities.clone())
                .connect(&url)
                .await
            {
                Ok(client) => break client,
                Err(error) if started.elapsed() < Duration::from_secs(30) => {
                    let _ = error;
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                Err(error) => panic!("connecting to chromedriver on {url}: {error}"),
            }
        };
        Some(Self {
            client,
            driver,
            _profile: profile,
        })
    }

    /// Signs in on `server`'s login form with `token`, as a user would.
    pub(crate) async fn sign_in(&self, server: &str, token: &str) {
        self.client
            .goto(&format!("{server}/dashboard"))
            .await
            .unwrap();
        // Not signed in: the dashboard sends us to the form.
        assert_eq!(self.client.current_url().await.unwrap().path(), "/login");
        self.client
            .find(Locator::Css("#token"))
            .await
            .unwrap()
            .send_keys(token)
            .await
            .unwrap();
        self.client
            .find(Locator::Css("#sign-in"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        // The dashboard's header, or the form again with its error: the
        // login page also has a heading, so waiting for one would race
        // with the navigation.
        self.client
            .wait()
            .for_element(Locator::Css("header, #login-error"))
            .await
            .unwrap();
        let errors = self.texts("#login-error").await;
        assert!(errors.is_empty(), "signing in failed: {errors:?}");
        assert_eq!(
            self.client.current_url().await.unwrap().path(),
            "/dashboard"
        );
    }

    /// The texts of the elements `css` selects.
    pub(crate) async fn texts(&self, css: &str) -> Vec<String> {
        let mut texts = Vec::new();
        for element in self.client.find_all(Locator::Css(css)).await.unwrap() {
            texts.push(element.text().await.unwrap());
        }
        texts
    }

    /// Writes a screenshot of the page to `target/test-artifacts/NAME.png`
    /// and returns its path.
    pub(crate) async fn screenshot(&self, name: &str) -> PathBuf {
        let png = self.client.screenshot().await.unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        let dir = sampler_testkit::target_bin_dir()
            .parent()
            .unwrap()
            .join("test-artifacts");
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("{name}.png"));
        std::fs::write(&path, png).unwrap();
        eprintln!("screenshot: {}", path.display());
        path
    }

    pub(crate) async fn close(mut self) {
        self.client.clone().close().await.unwrap();
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}
