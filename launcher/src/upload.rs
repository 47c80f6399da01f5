//! One upload by the collector's protocol (README, "Running the collector";
//! cbi-behaviour.md §6.4), and what its answer means for the report.

use std::time::Duration;

use crate::config::AppConfig;
use crate::report::{RunFile, multipart_body};

/// What became of one upload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// 200: stored durably; the run's id and an optional new sparsity.
    Stored {
        /// `Sampler-Unique-Id`.
        run_id: String,
        /// `Sampler-Change-Sparsity`, when sent and valid.
        change_sparsity: Option<u32>,
    },
    /// 400 or 413: this report can never be accepted; the server's reason.
    Refused {
        /// The status.
        status: u16,
        /// The body of the answer.
        reason: String,
    },
    /// 401 or 403: this configuration is not accepted.
    Unauthorized {
        /// The status.
        status: u16,
        /// The body of the answer.
        reason: String,
    },
    /// 429 or 503: try again after `retry_after` (when given).
    Later {
        /// The status.
        status: u16,
        /// `Retry-After`, in seconds.
        retry_after: Option<Duration>,
        /// The body of the answer.
        reason: String,
    },
    /// No answer, or another status: retry with backoff.
    Failed(String),
}

/// The longest reason kept from an answer's body.
const MAX_REASON: usize = 1000;

fn reason(body: String) -> String {
    let mut text = body.trim().replace(['\n', '\r', '\t'], " ");
    if text.len() > MAX_REASON {
        let mut end = MAX_REASON;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push('…');
    }
    text
}

/// A blocking client with the configuration's time limit.
pub fn client(config: &AppConfig) -> Result<reqwest::blocking::Client, String> {
    reqwest::blocking::Client::builder()
        .timeout(config.upload_timeout)
        .connect_timeout(config.upload_timeout.min(Duration::from_secs(10)))
        .user_agent(concat!("sampler-run/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|error| format!("cannot set up HTTP: {error}"))
}

/// Uploads `run` to the configured collector.
pub fn send(client: &reqwest::blocking::Client, config: &AppConfig, run: &RunFile) -> Answer {
    let (Some(url), Some(token)) = (config.upload_url(), config.token.as_deref()) else {
        return Answer::Failed("no server or token configured".into());
    };
    let outcome = &run.outcome;
    let multipart = multipart_body(run);
    let mut request = client
        .post(&url)
        .bearer_auth(token)
        .header("Content-Type", multipart.content_type)
        .header("Sampler-Version", env!("CARGO_PKG_VERSION"))
        .header("Sampler-Report-Id", &outcome.report_id)
        .header("Sampler-Application-Name", &outcome.application_name)
        .header("Sampler-Application-Version", &outcome.application_version)
        .header("Sampler-Application-Release", &outcome.application_release)
        .header("Sampler-Sparsity", outcome.sparsity.to_string())
        .header("Sampler-Exit-Status", outcome.exit_status.to_string())
        .header("Sampler-Exit-Signal", outcome.exit_signal.to_string())
        .body(multipart.body);
    for (name, value) in [
        ("Sampler-Executable-Path", &outcome.executable_path),
        (
            "Sampler-Instrumentor-Version",
            &outcome.instrumentor_version,
        ),
        ("Sampler-Build-Distribution", &outcome.build_distribution),
    ] {
        if let Some(value) = value {
            request = request.header(name, value);
        }
    }
    let response = match request.send() {
        Ok(response) => response,
        Err(error) => return Answer::Failed(format!("{url}: {}", error_chain(&error))),
    };
    let status = response.status().as_u16();
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|value| value.to_str().ok())
            .map(|value| value.trim().to_owned())
    };
    let unique_id = header("sampler-unique-id");
    let change = header("sampler-change-sparsity")
        .and_then(|value| value.parse::<u32>().ok())
        .filter(|&value| value >= 1);
    let retry_after = header("retry-after")
        .and_then(|value| value.parse::<u64>().ok())
        .map(Duration::from_secs);
    let body = match response.text() {
        Ok(body) => body,
        // A 200 whose body was cut off was still sent after the run was
        // stored; other answers without a body are still answers.
        Err(error) if status != 200 => format!("(no body: {error})"),
        Err(error) => return Answer::Failed(format!("{url}: reading the answer: {error}")),
    };
    match status {
        200 => Answer::Stored {
            run_id: unique_id.unwrap_or_else(|| body.trim().to_owned()),
            change_sparsity: change,
        },
        400 | 413 => Answer::Refused {
            status,
            reason: reason(body),
        },
        401 | 403 => Answer::Unauthorized {
            status,
            reason: reason(body),
        },
        429 | 503 => Answer::Later {
            status,
            retry_after,
            reason: reason(body),
        },
        other => Answer::Failed(format!("{url}: HTTP {other}: {}", reason(body))),
    }
}

/// An error with its causes, as one line.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let line = cause.to_string();
        if !text.contains(&line) {
            text.push_str(": ");
            text.push_str(&line);
        }
        source = cause.source();
    }
    text
}
