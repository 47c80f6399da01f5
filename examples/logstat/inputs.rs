//! Inputs for `logstat` (examples/logstat/logstat.c): a realistic mix of
//! access logs, some of which trigger its planted bugs.
//!
//! Each log is an hour or a few of a small shop's web site, in the Common or
//! the Combined Log Format: 5 to 100 clients browsing its 80 pages,
//! products and assets (with query strings, redirects, 304s and 404s), and
//! in half the logs a bot probing a few dozen well-known weak spots.
//! - In about one log in six a vulnerability scanner probes hundreds of
//!   distinct paths: more than logstat's table holds, which crashes it
//!   (BUG 1).
//! - In about one log in seven the application fails for a while and
//!   tens of requests end with 500, 502, 503 or 504, which logstat takes
//!   for malformed lines: it exits with status 1 (BUG 2).
//!
//! The two are drawn independently; a log with both crashes. What a run
//! should do is worked out from the log itself, not from the draw.
//!
//! Include it with `#[path = ".../examples/logstat/inputs.rs"] mod inputs;`;
//! it depends only on `rand` 0.10.

use rand::{Rng, RngExt};

/// What a run of `logstat` on an input should do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Expect {
    /// Exit with status 0.
    Success,
    /// Exit with status 1 although the log is fine (BUG 2).
    WrongExit,
    /// Die of SIGSEGV (BUG 1); wins over a wrong exit status.
    Crash,
}

/// One run's command-line arguments (without the program), its standard
/// input and what it should do.
#[derive(Clone, Debug)]
pub struct Input {
    pub args: Vec<String>,
    pub stdin: Vec<u8>,
    pub expect: Expect,
}

/// How many distinct paths (or clients) logstat's tables hold
/// (`TABLE_MAX` in logstat.c).
pub const TABLE_MAX: usize = 128;

/// Probability that a log holds a vulnerability scan (BUG 1).
const SCAN: f64 = 0.17;
/// Probability that a log holds an outage (BUG 2).
const OUTAGE: f64 = 0.14;

/// The site's pages and assets, the most requested first (80 paths).
fn site_paths() -> Vec<String> {
    let mut paths: Vec<String> = [
        "/",
        "/static/css/site.css",
        "/static/js/app.js",
        "/favicon.ico",
        "/static/img/logo.svg",
        "/static/js/vendor.js",
        "/search",
        "/cart",
        "/api/v1/cart",
        "/login",
        "/static/img/hero.jpg",
        "/api/v1/items",
        "/blog/",
        "/about",
        "/checkout",
        "/robots.txt",
        "/api/v1/session",
        "/contact",
        "/pricing",
        "/feed.xml",
        "/sitemap.xml",
        "/logout",
        "/signup",
        "/static/css/print.css",
    ]
    .iter()
    .map(|path| (*path).to_owned())
    .collect();
    for id in 101..=130 {
        paths.push(format!("/products/{id}"));
        if id % 5 == 0 {
            paths.push(format!("/static/img/products/{id}.jpg"));
        }
    }
    for slug in [
        "spring-sale",
        "shipping-times",
        "new-catalogue",
        "care-guide",
        "our-workshop",
        "gift-ideas",
        "returns-policy",
        "behind-the-scenes",
        "customer-stories",
        "sizing-help",
        "winter-collection",
        "meet-the-team",
        "sustainability",
        "faq",
        "press",
        "events",
        "recipes",
        "holiday-hours",
        "repair-service",
        "changelog",
    ] {
        paths.push(format!("/blog/{slug}"));
    }
    paths
}

/// What scanners look for: 20 folders by 21 files.
fn probe_path(index: usize) -> String {
    const FOLDERS: [&str; 20] = [
        "",
        "/admin",
        "/wp-admin",
        "/wp-content/plugins",
        "/backup",
        "/old",
        "/test",
        "/cgi-bin",
        "/phpmyadmin",
        "/.git",
        "/vendor/phpunit",
        "/api",
        "/config",
        "/uploads",
        "/tmp",
        "/dev",
        "/private",
        "/db",
        "/site",
        "/includes",
    ];
    const FILES: [&str; 21] = [
        ".env",
        "config.php",
        "wp-login.php",
        "xmlrpc.php",
        "setup.php",
        "install.php",
        "info.php",
        "phpinfo.php",
        "shell.php",
        "admin.php",
        "login.action",
        "config.json",
        "credentials.json",
        "backup.zip",
        "dump.sql",
        "db.sqlite",
        "HEAD",
        "server-status",
        "web.config",
        "id_rsa",
        "debug.log",
    ];
    let folder = FOLDERS[index / FILES.len() % FOLDERS.len()];
    let file = FILES[index % FILES.len()];
    format!("{folder}/{file}")
}

const BROWSERS: [&str; 8] = [
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) Chrome/122.0 Safari/537.36",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_3) Version/17.3 Safari/605.1.15",
    "Mozilla/5.0 (X11; Linux x86_64; rv:123.0) Gecko/20100101 Firefox/123.0",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_3 like Mac OS X) AppleWebKit/605.1.15 Mobile/15E148",
    "Mozilla/5.0 (Linux; Android 14) Chrome/122.0 Mobile Safari/537.36",
    "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
    "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)",
    "curl/8.5.0",
];

const SCANNERS: [&str; 4] = [
    "python-requests/2.31.0",
    "Mozilla/5.0 zgrab/0.x",
    "Nuclei - Open-source project (github.com/projectdiscovery/nuclei)",
    "Go-http-client/1.1",
];

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// One request, before it is written as a log line.
struct Request {
    client: String,
    agent: &'static str,
    method: &'static str,
    path: String,
    status: u32,
    bytes: Option<u32>,
    referrer: String,
}

/// A client address from the documentation ranges.
fn address(rng: &mut impl Rng) -> String {
    let net = ["192.0.2", "198.51.100", "203.0.113"][rng.random_range(0..3)];
    format!("{net}.{}", rng.random_range(1..255))
}

/// An ordinary request of a site visitor for a page or an asset.
fn visit(rng: &mut impl Rng, site: &[String], clients: &[(String, &'static str)]) -> Request {
    // The most requested paths first: the square skews towards them.
    let u: f64 = rng.random_range(0.0..1.0);
    let path = &site[((u * u) * site.len() as f64) as usize];
    let (client, agent) = clients[rng.random_range(0..clients.len())].clone();
    let asset = path.starts_with("/static/") || path == "/favicon.ico";
    let mut request = Request {
        client,
        agent,
        method: "GET",
        path: path.clone(),
        status: 200,
        bytes: Some(if asset {
            rng.random_range(800..90_000)
        } else {
            rng.random_range(2_000..40_000)
        }),
        referrer: if rng.random_bool(0.4) {
            "-".to_owned()
        } else {
            format!(
                "https://shop.example.com{}",
                site[rng.random_range(0..site.len())]
            )
        },
    };
    // Query strings, which logstat strips from the path.
    if path == "/search" {
        let words = ["mug", "linen+shirt", "gift", "teapot", "sale", "blue"];
        request.path = format!("/search?q={}", words[rng.random_range(0..words.len())]);
    } else if path.starts_with("/products/") && rng.random_bool(0.3) {
        request.path = format!("{path}?ref=home&pos={}", rng.random_range(1..13));
    } else if path.starts_with("/blog/") && rng.random_bool(0.2) {
        request.path = format!("{path}?utm_source=newsletter&utm_medium=email");
    }
    if path == "/login" || (path.starts_with("/api/v1/") && rng.random_bool(0.4)) {
        request.method = "POST";
    } else if rng.random_bool(0.02) {
        request.method = "HEAD";
    }
    match rng.random_range(0..100) {
        _ if asset && rng.random_bool(0.25) => {
            request.status = 304;
            request.bytes = None;
        }
        0..=3 => {
            request.status = 404;
            request.bytes = Some(rng.random_range(300..600));
        }
        4..=6 => {
            request.status = if path == "/checkout" || path == "/login" {
                401
            } else {
                301
            };
            request.bytes = Some(rng.random_range(150..400));
        }
        7..=8 => {
            request.status = 302;
            request.bytes = None;
        }
        9 => {
            request.status = 206;
        }
        _ => {}
    }
    if request.method == "HEAD" {
        request.bytes = Some(0);
    }
    request
}

/// A scanner's request for one of the paths it probes.
fn probe(rng: &mut impl Rng, path: String, client: &str, agent: &'static str) -> Request {
    let (status, bytes) = match rng.random_range(0..100) {
        0..=84 => (404, Some(rng.random_range(300..600))),
        85..=92 => (403, Some(rng.random_range(200..400))),
        93..=96 => (301, Some(rng.random_range(150..300))),
        _ => (400, Some(rng.random_range(150..300))),
    };
    Request {
        client: client.to_owned(),
        agent,
        method: if rng.random_bool(0.1) { "POST" } else { "GET" },
        path,
        status,
        bytes,
        referrer: "-".to_owned(),
    }
}

/// `n` distinct probe paths, from a random start in the scanner's list.
fn probes(
    rng: &mut impl Rng,
    n: usize,
    client: &str,
    agent: &'static str,
    repeat: f64,
) -> Vec<Request> {
    let start = rng.random_range(0..420);
    let mut requests = Vec::new();
    for i in 0..n {
        let path = probe_path(start + i);
        requests.push(probe(rng, path.clone(), client, agent));
        if rng.random_bool(repeat) {
            // Once more, by another method.
            let mut again = probe(rng, path, client, agent);
            if again.method == "GET" {
                again.method = "HEAD";
                again.bytes = Some(0);
            } else {
                again.method = "GET";
            }
            requests.push(again);
        }
    }
    requests
}

/// Inserts `extra` into `requests` at random places of a stretch of the
/// log, keeping the order of each.
fn interleave(rng: &mut impl Rng, requests: Vec<Request>, extra: Vec<Request>) -> Vec<Request> {
    let from = rng.random_range(0..=requests.len());
    let to = rng.random_range(from..=requests.len());
    let mut places: Vec<usize> = extra.iter().map(|_| rng.random_range(from..=to)).collect();
    places.sort_unstable();
    let mut places = places.into_iter().peekable();
    let mut extra = extra.into_iter();
    let mut merged = Vec::new();
    for (i, request) in requests.into_iter().enumerate() {
        while places.next_if(|&place| place == i).is_some() {
            merged.extend(extra.next());
        }
        merged.push(request);
    }
    merged.extend(extra);
    merged
}

/// One run's input: see the module's documentation.
pub fn input(rng: &mut impl Rng) -> Input {
    let site = site_paths();
    let scan = rng.random_bool(SCAN);
    let outage = rng.random_bool(OUTAGE);

    // The visitors of the period: addresses and browsers.
    let n_clients = rng.random_range(5..100);
    let clients: Vec<(String, &'static str)> = (0..n_clients)
        .map(|_| (address(rng), BROWSERS[rng.random_range(0..BROWSERS.len())]))
        .collect();
    let n_visits = if scan {
        rng.random_range(30..160)
    } else {
        rng.random_range(50..280)
    };
    let mut requests: Vec<Request> = (0..n_visits).map(|_| visit(rng, &site, &clients)).collect();

    // The application fails for a while: most requests of a stretch of
    // the log end with a server error.
    if outage {
        let failures = rng.random_range(25..=140).min(n_visits * 2 / 3);
        let length = (failures * 5 / 4).min(n_visits);
        let start = rng.random_range(0..=n_visits - length);
        let mut left = failures;
        for (i, request) in requests[start..start + length].iter_mut().enumerate() {
            // All the rest once only as many requests are left as must fail.
            if left > 0 && (left >= length - i || rng.random_bool(0.8)) {
                request.status = [500, 502, 503, 504][rng.random_range(0..4)];
                request.bytes = Some(rng.random_range(150..600));
                left -= 1;
            }
        }
    }

    // Bots probing for weak spots: a few in many logs, and hundreds of
    // distinct paths in a scan.
    let client = address(rng);
    let agent = SCANNERS[rng.random_range(0..SCANNERS.len())];
    if scan {
        let n = rng.random_range(200..300);
        let extra = probes(rng, n, &client, agent, 0.25);
        requests = interleave(rng, requests, extra);
    } else if rng.random_bool(0.5) {
        let n = rng.random_range(3..40);
        let extra = probes(rng, n, &client, agent, 0.25);
        requests = interleave(rng, requests, extra);
    }

    // What logstat counts: the requests it takes for well-formed.
    let counted = requests.iter().filter(|request| request.status < 500);
    let mut paths = std::collections::HashSet::new();
    let mut addresses = std::collections::HashSet::new();
    for request in counted {
        paths.insert(request.path.split('?').next().unwrap());
        addresses.insert(request.client.as_str());
    }
    let expect = if paths.len() > TABLE_MAX || addresses.len() > TABLE_MAX {
        Expect::Crash
    } else if requests.iter().any(|request| request.status >= 500) {
        Expect::WrongExit
    } else {
        Expect::Success
    };

    // The log lines, up to 40 seconds apart.
    let combined = rng.random_bool(0.5);
    let mut day = rng.random_range(1..=28u32);
    let month = MONTHS[rng.random_range(0..12)];
    let mut second = rng.random_range(0..24 * 3600u32);
    let mut text = String::new();
    if rng.random_bool(0.1) {
        text.push_str("# rotated by logrotate\n");
    }
    for request in &requests {
        second += rng.random_range(0..40);
        if second >= 24 * 3600 {
            second -= 24 * 3600;
            day = day % 28 + 1;
        }
        text.push_str(&format!(
            "{} - - [{day:02}/{month}/2024:{:02}:{:02}:{:02} +0000] \"{} {} HTTP/1.1\" {} {}",
            request.client,
            second / 3600,
            second / 60 % 60,
            second % 60,
            request.method,
            request.path,
            request.status,
            request
                .bytes
                .map_or("-".to_owned(), |bytes| bytes.to_string()),
        ));
        if combined {
            text.push_str(&format!(" \"{}\" \"{}\"", request.referrer, request.agent));
        }
        text.push('\n');
    }

    let mut args = Vec::new();
    if rng.random_bool(0.6) {
        args.push("-n".to_owned());
        args.push(rng.random_range(3..=10).to_string());
    }
    if rng.random_bool(0.1) {
        args.push("-H".to_owned());
    }
    Input {
        args,
        stdin: text.into_bytes(),
        expect,
    }
}
