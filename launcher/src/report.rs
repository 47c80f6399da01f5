//! Reports as `sampler-run` handles them: captured from the program's pipe
//! (`Capture`), kept as one self-contained *run file* (the program's
//! subreports followed by an `outcome` subreport, `schema/report-format.md`),
//! and turned into the collector's multipart body (`multipart_body`).

use std::fmt::Write as _;
use std::io::Write as _;

use flate2::Compression;
use flate2::write::GzEncoder;

/// The id of the subreport `sampler-run` adds.
pub const OUTCOME_ID: &str = "outcome";

/// The longest subreport id the collector accepts.
const MAX_ID: usize = 64;

/// Whether `id` is a subreport name the collector accepts: 1 to 64
/// letters, digits, `-` or `_`.
pub fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_ID
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// The id of a `<report id="ID">` line (without its line end).
fn opening_id(line: &[u8]) -> Option<&str> {
    let rest = line.strip_prefix(b"<report id=\"")?;
    let id = rest.strip_suffix(b"\">")?;
    std::str::from_utf8(id).ok()
}

/// Reads the report stream as it arrives and keeps whole subreports, up to
/// a cap: a subreport that would take the kept text past the cap is dropped
/// whole (later ones that fit are still kept), as are subreports with an id
/// the collector would refuse, text outside any subreport, and a subreport
/// left unfinished when the stream stops.
#[derive(Debug)]
pub struct Capture {
    cap: usize,
    kept: Vec<u8>,
    /// The subreport being read: its bytes so far (while under the cap).
    current: Vec<u8>,
    /// Inside a subreport; `false` when it is being dropped.
    inside: Option<bool>,
    /// The start of the current line, for matching (at most 128 bytes).
    line: Vec<u8>,
    line_long: bool,
    /// Bytes read but not kept.
    pub dropped_bytes: u64,
    /// Subreports dropped because they did not fit under the cap.
    pub over_cap: u64,
}

/// What a capture kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Captured {
    /// Whole subreports, as the program wrote them.
    pub text: Vec<u8>,
    /// Bytes read but not kept (over the cap, malformed, unfinished).
    pub dropped_bytes: u64,
    /// Whether a subreport was dropped because of the cap.
    pub truncated: bool,
}

const LINE_PREFIX: usize = 128;

impl Capture {
    /// A capture keeping at most `cap` bytes of subreports.
    pub fn new(cap: usize) -> Self {
        Self {
            cap,
            kept: Vec::new(),
            current: Vec::new(),
            inside: None,
            line: Vec::new(),
            line_long: false,
            dropped_bytes: 0,
            over_cap: 0,
        }
    }

    /// Takes the next bytes of the stream.
    pub fn feed(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let (chunk, ends_line) = match bytes.iter().position(|&b| b == b'\n') {
                Some(at) => (&bytes[..=at], true),
                None => (bytes, false),
            };
            bytes = &bytes[chunk.len()..];
            let room = LINE_PREFIX.saturating_sub(self.line.len());
            if chunk.len() > room {
                self.line.extend_from_slice(&chunk[..room]);
                self.line_long = true;
            } else {
                self.line.extend_from_slice(chunk);
            }
            self.take(chunk);
            if ends_line {
                self.end_line();
            }
        }
    }

    /// Stores (or drops) part of a line.
    fn take(&mut self, chunk: &[u8]) {
        match self.inside {
            Some(true) if self.current.len() + chunk.len() <= self.cap => {
                self.current.extend_from_slice(chunk);
            }
            Some(true) => {
                // Over the cap while still open: drop it whole.
                self.dropped_bytes += (self.current.len() + chunk.len()) as u64;
                self.current = Vec::new();
                self.inside = Some(false);
                self.over_cap += 1;
            }
            Some(false) | None => {
                // The opening line of a subreport is stored by `end_line`.
                if self.inside.is_some() || self.line_long {
                    self.dropped_bytes += chunk.len() as u64;
                } else {
                    self.current.extend_from_slice(chunk);
                }
            }
        }
    }

    fn end_line(&mut self) {
        let line = std::mem::take(&mut self.line);
        let long = std::mem::replace(&mut self.line_long, false);
        let text = line.strip_suffix(b"\n").unwrap_or(&line);
        match self.inside {
            None => {
                // `current` holds this line (unless it was long).
                match (long, opening_id(text)) {
                    (false, Some(id)) if valid_id(id) => self.inside = Some(true),
                    (false, Some(_)) => {
                        self.dropped_bytes += self.current.len() as u64;
                        self.current.clear();
                        self.inside = Some(false);
                    }
                    _ => {
                        self.dropped_bytes += self.current.len() as u64;
                        self.current.clear();
                    }
                }
            }
            Some(keep) if !long && text == b"</report>" => {
                if keep {
                    if self.kept.len() + self.current.len() <= self.cap {
                        self.kept.append(&mut self.current);
                    } else {
                        self.dropped_bytes += self.current.len() as u64;
                        self.over_cap += 1;
                    }
                }
                self.current.clear();
                self.inside = None;
            }
            Some(_) => {}
        }
    }

    /// Ends the stream: an unfinished subreport or line is dropped.
    pub fn finish(mut self) -> Captured {
        self.dropped_bytes += self.current.len() as u64;
        Captured {
            text: self.kept,
            dropped_bytes: self.dropped_bytes,
            truncated: self.over_cap > 0,
        }
    }
}

/// How a run ended, and what it was: the `outcome` subreport.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Outcome {
    /// The report's UUID (`Sampler-Report-Id`).
    pub report_id: String,
    /// Application name, version and release.
    pub application_name: String,
    /// The application's version.
    pub application_version: String,
    /// The application's release.
    pub application_release: String,
    /// The program's absolute path, when known.
    pub executable_path: Option<String>,
    /// The version of sampler-cc that built it, when known.
    pub instrumentor_version: Option<String>,
    /// The build machine's distribution, when known.
    pub build_distribution: Option<String>,
    /// The sparsity the program ran with.
    pub sparsity: u32,
    /// Exit status (0 when killed by a signal).
    pub exit_status: u8,
    /// The signal that killed it, or 0.
    pub exit_signal: u8,
    /// Start and end, in milliseconds since the Unix epoch.
    pub start_ms: u64,
    /// End, in milliseconds since the Unix epoch.
    pub end_ms: u64,
    /// The version of `sampler-run`.
    pub launcher_version: String,
    /// Whether subreports were dropped because of the size cap.
    pub truncated: bool,
    /// Bytes of the program's report that were not kept.
    pub dropped_bytes: u64,
}

/// A field value as written: one line, no tab.
fn clean(value: &str) -> String {
    value
        .chars()
        .map(|c| {
            if c == '\t' || c == '\n' || c == '\r' {
                ' '
            } else {
                c
            }
        })
        .collect()
}

impl Outcome {
    /// The subreport's text, `<report id="outcome">` lines included.
    pub fn to_text(&self) -> String {
        let mut text = format!("<report id=\"{OUTCOME_ID}\">\n");
        let mut field = |name: &str, value: &str| {
            let _ = writeln!(text, "{name}\t{}", clean(value));
        };
        field("report-id", &self.report_id);
        field("application-name", &self.application_name);
        field("application-version", &self.application_version);
        field("application-release", &self.application_release);
        if let Some(path) = &self.executable_path {
            field("executable-path", path);
        }
        if let Some(version) = &self.instrumentor_version {
            field("instrumentor-version", version);
        }
        if let Some(distribution) = &self.build_distribution {
            field("build-distribution", distribution);
        }
        field("sparsity", &self.sparsity.to_string());
        field("exit-status", &self.exit_status.to_string());
        field("exit-signal", &self.exit_signal.to_string());
        field("start-time-ms", &self.start_ms.to_string());
        field("end-time-ms", &self.end_ms.to_string());
        field("launcher-version", &self.launcher_version);
        field("truncated", if self.truncated { "1" } else { "0" });
        field("dropped-bytes", &self.dropped_bytes.to_string());
        text.push_str("</report>\n");
        text
    }

    /// Reads the body of an `outcome` subreport; `line` is the number of its
    /// first line in the file, for messages.
    pub fn parse(body: &str, first_line: usize) -> Result<Self, String> {
        let mut outcome = Self::default();
        let mut seen = Vec::new();
        for (index, line) in body.lines().enumerate() {
            let at = first_line + index;
            let (name, value) = line
                .split_once('\t')
                .ok_or_else(|| format!("line {at}: expected `NAME<TAB>VALUE`"))?;
            let number = |kind: &str| -> Result<u64, String> {
                value
                    .parse::<u64>()
                    .map_err(|_| format!("line {at}: {name} `{value}` is not {kind}"))
            };
            let byte = || -> Result<u8, String> {
                value
                    .parse::<u8>()
                    .map_err(|_| format!("line {at}: {name} `{value}` is not 0 to 255"))
            };
            match name {
                "report-id" => {
                    let id = uuid::Uuid::parse_str(value)
                        .map_err(|_| format!("line {at}: report-id `{value}` is not a UUID"))?;
                    outcome.report_id = id.hyphenated().to_string();
                }
                "application-name" => outcome.application_name = value.to_owned(),
                "application-version" => outcome.application_version = value.to_owned(),
                "application-release" => outcome.application_release = value.to_owned(),
                "executable-path" => outcome.executable_path = Some(value.to_owned()),
                "instrumentor-version" => outcome.instrumentor_version = Some(value.to_owned()),
                "build-distribution" => outcome.build_distribution = Some(value.to_owned()),
                "sparsity" => {
                    outcome.sparsity = u32::try_from(number("a whole number")?)
                        .ok()
                        .filter(|&s| s >= 1)
                        .ok_or_else(|| {
                            format!("line {at}: sparsity `{value}` is not 1 to 4294967295")
                        })?;
                }
                "exit-status" => outcome.exit_status = byte()?,
                "exit-signal" => outcome.exit_signal = byte()?,
                "start-time-ms" => outcome.start_ms = number("a whole number")?,
                "end-time-ms" => outcome.end_ms = number("a whole number")?,
                "launcher-version" => outcome.launcher_version = value.to_owned(),
                "truncated" => {
                    outcome.truncated = match value {
                        "0" => false,
                        "1" => true,
                        _ => return Err(format!("line {at}: truncated `{value}` is not 0 or 1")),
                    }
                }
                "dropped-bytes" => outcome.dropped_bytes = number("a whole number")?,
                // Fields of later versions are kept by the file, not by us.
                _ => {}
            }
            seen.push(name.to_owned());
        }
        for required in ["report-id", "application-name", "sparsity"] {
            if !seen.iter().any(|name| name == required) {
                return Err(format!("the outcome has no `{required}` line"));
            }
        }
        if outcome.exit_status != 0 && outcome.exit_signal != 0 {
            return Err("the outcome has both an exit status and an exit signal".into());
        }
        Ok(outcome)
    }
}

/// A run file read back: its subreports (same-named ones concatenated, in
/// order of first appearance) and its outcome.
#[derive(Debug, Clone)]
pub struct RunFile {
    /// (id, body) of each subreport but `outcome`.
    pub parts: Vec<(String, String)>,
    /// The `outcome` subreport.
    pub outcome: Outcome,
    /// The `outcome` subreport's text, uploaded as a part of its own.
    pub outcome_body: String,
}

impl RunFile {
    /// The file's text: `report` (whole subreports) then the outcome.
    pub fn compose(report: &[u8], outcome: &Outcome) -> Vec<u8> {
        let mut text = report.to_vec();
        text.extend_from_slice(outcome.to_text().as_bytes());
        text
    }

    /// Reads a run file's text. Errors name the line.
    pub fn parse(text: &[u8]) -> Result<Self, String> {
        let text = std::str::from_utf8(text).map_err(|error| {
            format!(
                "not UTF-8 text (line {})",
                1 + text[..error.valid_up_to()]
                    .iter()
                    .filter(|&&b| b == b'\n')
                    .count()
            )
        })?;
        let mut parts: Vec<(String, String)> = Vec::new();
        let mut outcome: Option<(String, usize)> = None;
        let mut current: Option<(String, String, usize)> = None;
        for (index, line) in text.lines().enumerate() {
            let number = index + 1;
            match &mut current {
                None => {
                    let id = opening_id(line.as_bytes())
                        .filter(|id| valid_id(id))
                        .ok_or_else(|| format!("line {number}: expected `<report id=\"ID\">`"))?;
                    current = Some((id.to_owned(), String::new(), number + 1));
                }
                Some(_) if line == "</report>" => {
                    let (id, body, first) = current.take().expect("inside a subreport");
                    if id == OUTCOME_ID {
                        if outcome.is_some() {
                            return Err(format!("line {number}: a second `outcome` subreport"));
                        }
                        outcome = Some((body, first));
                    } else if let Some((_, existing)) =
                        parts.iter_mut().find(|(name, _)| *name == id)
                    {
                        existing.push_str(&body);
                    } else {
                        parts.push((id, body));
                    }
                }
                Some((_, body, _)) => {
                    body.push_str(line);
                    body.push('\n');
                }
            }
        }
        if let Some((id, _, first)) = current {
            return Err(format!(
                "line {}: subreport `{id}` has no `</report>`",
                first - 1
            ));
        }
        let (outcome_body, first) =
            outcome.ok_or_else(|| "no `outcome` subreport: not a run file".to_owned())?;
        let outcome = Outcome::parse(&outcome_body, first)?;
        Ok(Self {
            parts,
            outcome,
            outcome_body,
        })
    }
}

/// A multipart/form-data body in the original uploader's form: one gzip
/// part per subreport, named by its id.
#[derive(Debug)]
pub struct Multipart {
    /// The `Content-Type` header's value.
    pub content_type: String,
    /// The body.
    pub body: Vec<u8>,
}

/// Builds the upload body of `run`: its subreports and its outcome.
pub fn multipart_body(run: &RunFile) -> Multipart {
    let compressed: Vec<(&str, Vec<u8>)> = run
        .parts
        .iter()
        .map(|(name, body)| (name.as_str(), gzip(body.as_bytes())))
        .chain(std::iter::once((
            OUTCOME_ID,
            gzip(run.outcome_body.as_bytes()),
        )))
        .collect();
    // The original's boundary: 15 `=`, random digits, `==`; chosen again
    // while it occurs in a payload.
    let boundary = loop {
        let digits: u64 = rand::random();
        let boundary = format!("==============={digits:020}==");
        if !compressed
            .iter()
            .any(|(_, data)| contains(data, boundary.as_bytes()))
        {
            break boundary;
        }
    };
    let mut body = Vec::new();
    for (name, data) in &compressed {
        let _ = write!(
            body,
            "--{boundary}\r\ncontent-disposition: form-data; filename=\"{name}\"; name=\"{name}\"\r\ncontent-encoding: gzip\r\n\r\n"
        );
        body.extend_from_slice(data);
        body.extend_from_slice(b"\r\n");
    }
    let _ = write!(body, "--{boundary}--\r\n");
    Multipart {
        content_type: format!("multipart/form-data; boundary=\"{boundary}\""),
        body,
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle)
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = GzEncoder::new(Vec::new(), Compression::default());
    // Writing to a Vec cannot fail.
    let _ = encoder.write_all(bytes);
    encoder.finish().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn capture(cap: usize, chunks: &[&[u8]]) -> Captured {
        let mut capture = Capture::new(cap);
        for chunk in chunks {
            capture.feed(chunk);
        }
        capture.finish()
    }

    const TWO: &[u8] =
        b"<report id=\"samples\">\n1\t2\n</report>\n<report id=\"main-backtrace\">\nx\n</report>\n";

    #[test]
    fn whole_subreports_are_kept_whatever_the_chunks() {
        for split in 0..TWO.len() {
            let (a, b) = TWO.split_at(split);
            let captured = capture(1 << 20, &[a, b]);
            assert_eq!(captured.text, TWO, "split at {split}");
            assert_eq!(captured.dropped_bytes, 0);
            assert!(!captured.truncated);
        }
    }

    #[test]
    fn over_the_cap_a_subreport_is_dropped_whole_and_later_ones_kept() {
        let big = b"<report id=\"samples\">\n0123456789\n0123456789\n</report>\n";
        let small = b"<report id=\"modules\">\nm\n</report>\n";
        let captured = capture(40, &[big, small]);
        assert_eq!(captured.text, small);
        assert_eq!(captured.dropped_bytes, big.len() as u64);
        assert!(captured.truncated);
    }

    #[test]
    fn unfinished_stray_and_badly_named_text_is_dropped() {
        let text = b"noise\n<report id=\"a b\">\nq\n</report>\n<report id=\"samples\">\n1\n</report>\n<report id=\"x\">\nhalf";
        let captured = capture(1 << 20, &[text]);
        assert_eq!(captured.text, b"<report id=\"samples\">\n1\n</report>\n");
        assert_eq!(
            captured.dropped_bytes,
            (text.len() - captured.text.len()) as u64
        );
        assert!(!captured.truncated);
    }

    fn outcome() -> Outcome {
        Outcome {
            report_id: "0190a4c2-7b1e-7cc0-8d1e-3b2f4a5c6d7e".into(),
            application_name: "demo".into(),
            application_version: "1.2".into(),
            application_release: "3".into(),
            executable_path: Some("/usr/bin/demo".into()),
            instrumentor_version: None,
            build_distribution: Some("debian-12-x86_64".into()),
            sparsity: 100,
            exit_status: 0,
            exit_signal: 11,
            start_ms: 1,
            end_ms: 2,
            launcher_version: "0.1.0".into(),
            truncated: true,
            dropped_bytes: 7,
        }
    }

    #[test]
    fn a_run_file_reads_back_with_same_named_subreports_concatenated() {
        let report = b"<report id=\"samples\">\na\n</report>\n<report id=\"samples\">\nb\n</report>\n<report id=\"modules\">\nm\n</report>\n";
        let text = RunFile::compose(report, &outcome());
        let run = RunFile::parse(&text).unwrap();
        assert_eq!(
            run.parts,
            [
                ("samples".to_owned(), "a\nb\n".to_owned()),
                ("modules".to_owned(), "m\n".to_owned())
            ]
        );
        assert_eq!(run.outcome, outcome());
    }

    #[test]
    fn damaged_run_files_are_refused_with_their_line() {
        let error = RunFile::parse(b"<report id=\"samples\">\n1\n").unwrap_err();
        assert_eq!(error, "line 1: subreport `samples` has no `</report>`");
        let error = RunFile::parse(b"<report id=\"samples\">\n</report>\n").unwrap_err();
        assert_eq!(error, "no `outcome` subreport: not a run file");
        let error = RunFile::parse(b"junk\n").unwrap_err();
        assert_eq!(error, "line 1: expected `<report id=\"ID\">`");
        let error =
            RunFile::parse(b"<report id=\"outcome\">\nsparsity\tmany\n</report>\n").unwrap_err();
        assert_eq!(error, "line 2: sparsity `many` is not a whole number");
    }

    #[test]
    fn the_multipart_body_has_one_gzip_part_per_subreport() {
        let text = RunFile::compose(b"<report id=\"samples\">\na\n</report>\n", &outcome());
        let run = RunFile::parse(&text).unwrap();
        let multipart = multipart_body(&run);
        let boundary = multipart
            .content_type
            .strip_prefix("multipart/form-data; boundary=\"")
            .and_then(|rest| rest.strip_suffix('"'))
            .unwrap();
        let body = &multipart.body;
        assert!(body.ends_with(format!("--{boundary}--\r\n").as_bytes()));
        let head = format!(
            "--{boundary}\r\ncontent-disposition: form-data; filename=\"samples\"; name=\"samples\"\r\ncontent-encoding: gzip\r\n\r\n"
        );
        assert!(body.starts_with(head.as_bytes()));
        let mut decoder = flate2::read::GzDecoder::new(&body[head.len()..]);
        let mut samples = String::new();
        std::io::Read::read_to_string(&mut decoder, &mut samples).unwrap();
        assert_eq!(samples, "a\n");
        assert!(contains(body, b"name=\"outcome\""));
    }
}
