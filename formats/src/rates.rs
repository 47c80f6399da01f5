//! Rates files (`schema/rates-format.md`): the sampling rate and the
//! countdown scale chosen for each site from a training set of runs, which
//! `sampler-analyze rates` and the collector write and `sampler-cc` reads.
//!
//! A site whose countdown decrement is its *scale* `s ≥ 1` is observed on
//! each execution with probability `1 − (1 − 1/D)^s` under the runtime's
//! geometric countdown of mean `D` (its sparsity);
//! [`observation_probability`] computes it, [`scale_for_rate`] the scale
//! that comes nearest to a wanted rate. Scale 0 means counted on every
//! execution (rate 1).

use std::fmt;
use std::io::{self, BufRead, Write};

use crate::error::ReadError;
use crate::lines::LineReader;
use crate::scheme::SchemeName;
use crate::signature::UnitSignature;
use crate::tags::SectionKey;

/// The version of the format this crate reads and writes.
pub const RATES_VERSION: u32 = 1;

/// The greatest scale a site may have (2^24); a rate that would need more
/// is given scale 0 (rate 1) instead.
pub const MAX_SCALE: u32 = 1 << 24;

/// The probability that one execution of a site (or region) of `scale` is
/// observed at `sparsity`: `1 − (1 − 1/sparsity)^scale`, 1 for scale 0,
/// exactly `1/sparsity` for scale 1. `sparsity` is at least 1 (0 is read
/// as 1).
pub fn observation_probability(scale: u32, sparsity: u32) -> f64 {
    let sparsity = f64::from(sparsity.max(1));
    match scale {
        0 => 1.0,
        1 => 1.0 / sparsity,
        // 1 − exp(s·ln(1 − 1/D)), without the cancellation of computing
        // the power and subtracting it.
        _ => -(f64::from(scale) * (-1.0 / sparsity).ln_1p()).exp_m1(),
    }
}

/// The scale whose [`observation_probability`] at `sparsity` comes nearest
/// to `rate`: 0 for a rate of 1 or more (or not a number), else
/// `round(ln(1 − rate) / ln(1 − 1/sparsity))` held to at least 1 (a rate
/// at or below `1/sparsity` is scale 1), and 0 when that is above
/// [`MAX_SCALE`] or observes every execution anyway.
pub fn scale_for_rate(rate: f64, sparsity: u32) -> u32 {
    if rate.is_nan() || rate >= 1.0 || sparsity <= 1 {
        return 0;
    }
    let sparsity_f = f64::from(sparsity);
    let exact = (-rate).ln_1p() / (-1.0 / sparsity_f).ln_1p();
    let rounded = exact.round();
    let scale = if rounded > f64::from(MAX_SCALE) {
        return 0;
    } else if rounded < 1.0 {
        1
    } else {
        rounded as u32
    };
    if observation_probability(scale, sparsity) >= 1.0 {
        0
    } else {
        scale
    }
}

/// What a rates file was computed from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RatesSource {
    /// The runs of one build of an application in a collector's database.
    Collector {
        /// The application's name.
        application: String,
        /// The build's version.
        version: String,
        /// The build's release (may be empty).
        release: String,
    },
    /// Run files of `sampler-run --save` in a directory.
    Runs {
        /// The directory, as given.
        directory: String,
    },
}

/// One site's line.
#[derive(Debug, Clone, PartialEq)]
pub struct SiteRate {
    /// The site's compilation unit and scheme.
    pub key: SectionKey,
    /// The site's index in its (unit, scheme) site table.
    pub site: u32,
    /// Estimated executions per run in the training set.
    pub executions_per_run: f64,
    /// The probability with which each execution is observed at the file's
    /// sparsity: [`observation_probability`] of `scale`.
    pub rate: f64,
    /// The countdown decrement that gives `rate`; 0: every execution.
    pub scale: u32,
}

/// A whole rates file.
#[derive(Debug, Clone, PartialEq)]
pub struct Rates {
    /// What the rates were computed from.
    pub source: RatesSource,
    /// The deployment sparsity the scales are for (1 or more).
    pub sparsity: u32,
    /// The expected observations per site per run asked for.
    pub target: f64,
    /// The bound asked for on the whole program's expected observations
    /// per run.
    pub budget: f64,
    /// Training runs used.
    pub runs: u64,
    /// Expected observations per run with these rates.
    pub expected: f64,
    /// Expected observations per run with uniform sampling at `sparsity`.
    pub uniform: f64,
    /// The sites, ordered by unit, scheme and site index, each once.
    pub sites: Vec<SiteRate>,
}

/// A number as the format writes it (the shortest decimal that reads back
/// as the same `f64`, without exponent), if `text` is
/// exactly that spelling.
fn parse_real(text: &str) -> Option<f64> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return None;
    }
    let value: f64 = text.parse().ok()?;
    (value.is_finite() && RealText(value).to_string() == text).then_some(value)
}

/// A finite non-negative number: the shortest decimal that reads back as
/// the same double, without exponent (Rust's `Display` of `f64`).
struct RealText(f64);

impl fmt::Display for RealText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Replaces tabs and line ends, which a field cannot hold, by spaces.
fn one_field(text: &str) -> String {
    text.replace(['\t', '\n', '\r'], " ")
}

impl RatesSource {
    fn write_to(&self, out: &mut impl Write) -> io::Result<()> {
        match self {
            RatesSource::Collector {
                application,
                version,
                release,
            } => writeln!(
                out,
                "source\tcollector\t{}\t{}\t{}",
                one_field(application),
                one_field(version),
                one_field(release)
            ),
            RatesSource::Runs { directory } => {
                writeln!(out, "source\truns\t{}", one_field(directory))
            }
        }
    }
}

impl Rates {
    /// Writes the file: exactly the text [`Rates::read`] accepts when the
    /// values are well formed (finite and non-negative numbers, sites in
    /// order, rates in (0, 1], rate 1 exactly at scale 0). Tabs and line
    /// ends in the source's fields are written as spaces.
    pub fn write_to(&self, out: &mut impl Write) -> io::Result<()> {
        writeln!(out, "sampler-rates\t{RATES_VERSION}")?;
        self.source.write_to(out)?;
        writeln!(out, "sparsity\t{}", self.sparsity)?;
        writeln!(out, "target\t{}", RealText(self.target))?;
        writeln!(out, "budget\t{}", RealText(self.budget))?;
        writeln!(out, "runs\t{}", self.runs)?;
        writeln!(
            out,
            "expected\t{}\t{}",
            RealText(self.expected),
            RealText(self.uniform)
        )?;
        for site in &self.sites {
            writeln!(
                out,
                "site\t{}\t{}\t{}\t{}\t{}\t{}",
                site.key.unit,
                site.key.scheme,
                site.site,
                RealText(site.executions_per_run),
                RealText(site.rate),
                site.scale
            )?;
        }
        Ok(())
    }

    /// The file as text.
    pub fn to_text(&self) -> String {
        let mut out = Vec::new();
        self.write_to(&mut out).expect("writing to memory");
        String::from_utf8(out).expect("the writer writes UTF-8")
    }

    /// Reads a whole rates file, one line at a time; an error names the
    /// line and what was expected there.
    pub fn read(input: impl BufRead) -> Result<Self, ReadError> {
        let mut lines = LineReader::new(input);
        let mut header = |name: &'static str, n_fields: usize| -> Result<Vec<String>, ReadError> {
            if !lines.advance()? {
                return Err(ReadError::new(
                    lines.line_number() + 1,
                    crate::error::ReadErrorKind::Truncated(format!("expected the `{name}` line")),
                ));
            }
            let line = lines.current_line();
            let number = lines.line_number();
            let mut fields = line.split('\t');
            if fields.next() != Some(name) {
                return Err(ReadError::unexpected(
                    number,
                    format!("the `{name}` line"),
                    line,
                ));
            }
            let fields: Vec<String> = fields.map(str::to_owned).collect();
            if n_fields != 0 && fields.len() != n_fields {
                return Err(ReadError::unexpected(
                    number,
                    format!(
                        "`{name}` and {n_fields} tab-separated field{}",
                        if n_fields == 1 { "" } else { "s" }
                    ),
                    line,
                ));
            }
            Ok(fields)
        };
        let version = header("sampler-rates", 1)?;
        if version[0] != RATES_VERSION.to_string() {
            return Err(ReadError::invalid(
                1,
                format!(
                    "rates format version `{}`: this reader knows version {RATES_VERSION}",
                    version[0]
                ),
            ));
        }
        let source = header("source", 0)?;
        let source = match source.iter().map(String::as_str).collect::<Vec<_>>()[..] {
            ["collector", application, version, release] => RatesSource::Collector {
                application: application.to_owned(),
                version: version.to_owned(),
                release: release.to_owned(),
            },
            ["runs", directory] => RatesSource::Runs {
                directory: directory.to_owned(),
            },
            _ => {
                return Err(ReadError::invalid(
                    2,
                    "`source`: expected `collector`, application, version and release, or `runs` and a directory",
                ));
            }
        };
        let sparsity = header("sparsity", 1)?;
        let sparsity = crate::decimal::parse::<u32>(&sparsity[0])
            .filter(|&d| d >= 1)
            .ok_or_else(|| {
                ReadError::invalid(
                    3,
                    format!(
                        "sparsity `{}`: expected a whole number from 1 to {}",
                        sparsity[0],
                        u32::MAX
                    ),
                )
            })?;
        let real = |line: u64, what: &str, text: &str| {
            parse_real(text).ok_or_else(|| {
                ReadError::invalid(
                    line,
                    format!(
                        "{what} `{text}`: expected a number ≥ 0 in its shortest decimal spelling"
                    ),
                )
            })
        };
        let target = header("target", 1)?;
        let target = real(4, "target", &target[0])?;
        let budget = header("budget", 1)?;
        let budget = real(5, "budget", &budget[0])?;
        let runs = header("runs", 1)?;
        let runs = crate::decimal::parse::<u64>(&runs[0]).ok_or_else(|| {
            ReadError::invalid(6, format!("runs `{}`: expected a whole number", runs[0]))
        })?;
        let expected = header("expected", 2)?;
        let uniform = real(7, "uniform expectation", &expected[1])?;
        let expected = real(7, "expectation", &expected[0])?;
        let mut sites: Vec<SiteRate> = Vec::new();
        while lines.advance()? {
            let number = lines.line_number();
            let line = lines.current_line();
            let fields: Vec<&str> = line.split('\t').collect();
            let ["site", unit, scheme, site, executions, rate, scale] = fields[..] else {
                return Err(ReadError::unexpected(
                    number,
                    "`site`, unit, scheme, site, executions per run, rate and scale, tab-separated",
                    line,
                ));
            };
            let unit: UnitSignature = unit
                .parse()
                .map_err(|error| ReadError::invalid(number, error))?;
            let scheme: SchemeName = scheme
                .parse()
                .map_err(|error| ReadError::invalid(number, error))?;
            let site = crate::decimal::parse::<u32>(site).ok_or_else(|| {
                ReadError::invalid(
                    number,
                    format!("site `{site}`: expected a whole number below 2^32"),
                )
            })?;
            let executions_per_run = real(number, "executions per run", executions)?;
            let rate = real(number, "rate", rate)?;
            if !(rate > 0.0 && rate <= 1.0) {
                return Err(ReadError::invalid(
                    number,
                    format!("rate `{rate}`: expected a probability above 0, at most 1"),
                ));
            }
            let scale_text = scale;
            let scale = crate::decimal::parse::<u32>(scale)
                .filter(|&s| s <= MAX_SCALE)
                .ok_or_else(|| {
                    ReadError::invalid(
                        number,
                        format!(
                            "scale `{scale_text}`: expected a whole number from 0 to {MAX_SCALE}"
                        ),
                    )
                })?;
            if (scale == 0) != (rate == 1.0) {
                return Err(ReadError::invalid(
                    number,
                    format!("rate {rate} with scale {scale}: scale 0, and only it, has rate 1"),
                ));
            }
            let key = SectionKey::new(unit, scheme);
            if let Some(last) = sites.last()
                && (&last.key, last.site) >= (&key, site)
            {
                return Err(ReadError::invalid(
                    number,
                    format!(
                        "site {site} of {key} comes after site {} of {}: sites are ordered by unit, scheme and site, each once",
                        last.site, last.key
                    ),
                ));
            }
            sites.push(SiteRate {
                key,
                site,
                executions_per_run,
                rate,
                scale,
            });
        }
        Ok(Rates {
            source,
            sparsity,
            target,
            budget,
            runs,
            expected,
            uniform,
            sites,
        })
    }

    /// The line of site `site` of `key`, if the file has one.
    pub fn get(&self, key: &SectionKey, site: u32) -> Option<&SiteRate> {
        self.sites
            .binary_search_by(|line| (&line.key, line.site).cmp(&(key, site)))
            .ok()
            .map(|index| &self.sites[index])
    }

    /// The lines of the sites of `key` (a unit and scheme), in site order:
    /// empty when the file has none.
    pub fn section(&self, key: &SectionKey) -> &[SiteRate] {
        let start = self.sites.partition_point(|line| &line.key < key);
        let end = self.sites.partition_point(|line| &line.key <= key);
        &self.sites[start..end]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probabilities_of_scales() {
        assert_eq!(observation_probability(0, 100), 1.0);
        assert_eq!(observation_probability(1, 100), 0.01);
        assert_eq!(observation_probability(1, 1), 1.0);
        assert_eq!(observation_probability(7, 1), 1.0);
        // 1 − 0.99^10 = 0.0956179249911955...
        assert!((observation_probability(10, 100) - 0.095_617_924_991_195_5).abs() < 1e-16);
        assert!((observation_probability(2, 2) - 0.75).abs() < 1e-16);
    }

    #[test]
    fn scales_of_rates() {
        assert_eq!(scale_for_rate(1.0, 100), 0);
        assert_eq!(scale_for_rate(1.5, 100), 0);
        assert_eq!(scale_for_rate(f64::NAN, 100), 0);
        assert_eq!(scale_for_rate(0.5, 1), 0);
        // round(ln 0.9 / ln 0.99) = round(10.483) = 10.
        assert_eq!(scale_for_rate(0.1, 100), 10);
        assert_eq!(scale_for_rate(0.01, 100), 1);
        assert_eq!(scale_for_rate(0.001, 100), 1);
        assert_eq!(scale_for_rate(0.0, 100), 1);
        // ln 0.5 / ln 0.5 = 1, ln 0.25 / ln 0.5 = 2.
        assert_eq!(scale_for_rate(0.75, 2), 2);
        // At sparsity 10^9, rate 0.5 needs about 6.9 · 10^8 > 2^24: rate 1.
        assert_eq!(scale_for_rate(0.5, 1_000_000_000), 0);
        // Just under the cap.
        let d = 1_000_000_000;
        let at_cap = observation_probability(MAX_SCALE, d);
        assert_eq!(scale_for_rate(at_cap, d), MAX_SCALE);
    }

    fn example() -> Rates {
        let unit: UnitSignature = "0123456789abcdef0123456789abcdef".parse().unwrap();
        let site = |scheme: &str, site, executions_per_run, scale| SiteRate {
            key: SectionKey::new(unit, scheme.parse::<SchemeName>().unwrap()),
            site,
            executions_per_run,
            rate: observation_probability(scale, 100),
            scale,
        };
        Rates {
            source: RatesSource::Collector {
                application: "demo".into(),
                version: "1.0".into(),
                release: String::new(),
            },
            sparsity: 100,
            target: 100.0,
            budget: 100_000.0,
            runs: 200,
            expected: 125.5,
            uniform: 10.11,
            sites: vec![
                site("branches", 0, 1.0, 0),
                site("branches", 1, 1000.0, 10),
                site("branches", 2, 0.0, 0),
                site("returns", 0, 1e6, 1),
            ],
        }
    }

    #[test]
    fn writes_and_reads_back() {
        let rates = example();
        let text = rates.to_text();
        assert_eq!(
            text,
            "sampler-rates\t1\nsource\tcollector\tdemo\t1.0\t\nsparsity\t100\ntarget\t100\nbudget\t100000\nruns\t200\nexpected\t125.5\t10.11\n\
             site\t0123456789abcdef0123456789abcdef\tbranches\t0\t1\t1\t0\n\
             site\t0123456789abcdef0123456789abcdef\tbranches\t1\t1000\t0.09561792499119552\t10\n\
             site\t0123456789abcdef0123456789abcdef\tbranches\t2\t0\t1\t0\n\
             site\t0123456789abcdef0123456789abcdef\treturns\t0\t1000000\t0.01\t1\n"
        );
        let read = Rates::read(text.as_bytes()).unwrap();
        assert_eq!(read, rates);
        let key = &rates.sites[1].key;
        assert_eq!(read.get(key, 1).unwrap().scale, 10);
        assert!(read.get(key, 3).is_none());
        assert_eq!(read.section(key).len(), 3);
        assert_eq!(read.section(&rates.sites[3].key).len(), 1);
    }

    #[test]
    fn errors_name_the_line() {
        let text = example().to_text();
        let error = |text: &str| Rates::read(text.as_bytes()).unwrap_err().to_string();
        assert_eq!(
            error(&text.replace("target\t100", "target\t100.0")),
            "line 4: target `100.0`: expected a number ≥ 0 in its shortest decimal spelling"
        );
        assert_eq!(
            error(&text.replace("sampler-rates\t1", "sampler-rates\t2")),
            "line 1: rates format version `2`: this reader knows version 1"
        );
        assert_eq!(
            error(&text.replace("\t10\n", "\t0\n")),
            "line 9: rate 0.09561792499119552 with scale 0: scale 0, and only it, has rate 1"
        );
        let swapped = text.replace("branches\t2\t", "branches\t0\t");
        assert!(
            error(&swapped).starts_with("line 10: site 0 of unit `0123456789abcdef0123456789abcdef` scheme `branches` comes after site 1"),
            "{}",
            error(&swapped)
        );
        assert_eq!(
            error("sampler-rates\t1\nsource\truns\t/tmp\n"),
            "line 3: unexpected end of input: expected the `sparsity` line"
        );
        assert_eq!(
            error(&text.replace("runs\t200", "run\t200")),
            "line 6: expected the `runs` line, found \"run\\t200\""
        );
        assert!(error(&format!("{text}site\tx\n")).starts_with("line 12: expected `site`"));
    }

    #[test]
    fn source_fields_lose_their_tabs() {
        let mut rates = example();
        rates.source = RatesSource::Runs {
            directory: "a\tb\nc".into(),
        };
        let read = Rates::read(rates.to_text().as_bytes()).unwrap();
        assert_eq!(
            read.source,
            RatesSource::Runs {
                directory: "a b c".into()
            }
        );
    }
}
