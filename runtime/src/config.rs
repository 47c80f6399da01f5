//! The runtime's environment contract (`cbi-behaviour.md` Appendix A),
//! parsed without side effects so that it can be unit-tested.

use std::ffi::{OsStr, OsString};

/// Every variable the runtime reads and then removes from the environment,
/// so that child processes neither overwrite the report nor inherit the
/// sampling settings.
pub(crate) const CONSUMED_VARIABLES: [&str; 7] = [
    "SAMPLER_SPARSITY",
    "SAMPLER_SEED",
    "SAMPLER_EVENT_COUNTDOWNS",
    "SAMPLER_RANDOM",
    "SAMPLER_REPORT_FD",
    "SAMPLER_FILE",
    "SAMPLER_TRACE",
];

/// The largest ring `SAMPLER_TRACE` may ask for, in records per thread: a
/// full ring is then about 2.5 MB per thread, and a trace of 8 full rings
/// about 10 MB of text, within the launcher's 16 MiB cap.
pub(crate) const MAX_TRACE: u32 = 65536;

/// How countdowns are drawn.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Sampling {
    /// No sampling: no event is ever sampled.
    Off,
    /// Geometric gaps with this mean (`SAMPLER_SPARSITY`, a real ≥ 1).
    Geometric { sparsity: f64 },
    /// Every `period`-th event (`SAMPLER_RANDOM=fixed`).
    Fixed { period: u32 },
    /// Countdowns read in turn from a bank (`SAMPLER_EVENT_COUNTDOWNS`).
    Bank(Box<[i32]>),
}

/// Where the report goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Destination {
    None,
    Fd(i32),
    File(OsString),
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Config {
    pub(crate) sampling: Sampling,
    /// `SAMPLER_SEED`: the base of every thread's reproducible stream.
    pub(crate) seed: Option<u64>,
    pub(crate) destination: Destination,
    /// `SAMPLER_TRACE`: the sampled observations each thread keeps for the
    /// `trace` subreport; 0 when tracing is off.
    pub(crate) trace: u32,
}

/// Parses the configuration from `lookup` (the environment, in the real
/// runtime) and `read_file` (for countdown banks). Returns the warnings to
/// print: one line per unusable value, each saying what is done instead.
pub(crate) fn parse(
    lookup: impl Fn(&str) -> Option<OsString>,
    read_file: impl Fn(&OsStr) -> std::io::Result<Vec<u8>>,
) -> (Config, Vec<String>) {
    let mut warnings = Vec::new();
    let text = |name: &str| lookup(name).map(|value| value.to_string_lossy().into_owned());

    let seed = text("SAMPLER_SEED").and_then(|value| match parse_u64(&value) {
        Some(seed) => Some(seed),
        None => {
            warnings.push(format!(
                "SAMPLER_SEED=`{value}` is not an unsigned integer; seeding from the system instead"
            ));
            None
        }
    });

    let mode = text("SAMPLER_RANDOM");
    let sparsity_text = text("SAMPLER_SPARSITY");
    let bank_path = lookup("SAMPLER_EVENT_COUNTDOWNS");
    let sampling = match (mode.as_deref(), bank_path) {
        (Some("offline"), None) => {
            warnings.push(
                "SAMPLER_RANDOM=offline needs SAMPLER_EVENT_COUNTDOWNS; sampling is off".to_owned(),
            );
            Sampling::Off
        }
        (None | Some("offline"), Some(path)) => match read_file(&path) {
            Ok(bytes) => match parse_bank(&bytes) {
                Ok(bank) => Sampling::Bank(bank),
                Err(problem) => {
                    warnings.push(format!(
                        "SAMPLER_EVENT_COUNTDOWNS=`{}`: {problem}; sampling is off",
                        path.to_string_lossy()
                    ));
                    Sampling::Off
                }
            },
            Err(error) => {
                warnings.push(format!(
                    "SAMPLER_EVENT_COUNTDOWNS=`{}` cannot be read ({error}); sampling is off",
                    path.to_string_lossy()
                ));
                Sampling::Off
            }
        },
        (Some("fixed"), _) => match sparsity_text.as_deref().map(parse_u64) {
            None => Sampling::Off,
            Some(Some(period)) if (1..=i32::MAX as u64).contains(&period) => Sampling::Fixed {
                period: period as u32,
            },
            Some(_) => {
                warnings.push(format!(
                    "SAMPLER_SPARSITY=`{}` is not a whole number from 1 to {}, as SAMPLER_RANDOM=fixed needs; sampling is off",
                    sparsity_text.unwrap_or_default(),
                    i32::MAX
                ));
                Sampling::Off
            }
        },
        (None | Some("online"), _) => match sparsity_text {
            None => Sampling::Off,
            Some(value) => match value.trim().parse::<f64>() {
                Ok(sparsity) if sparsity.is_finite() && sparsity >= 1.0 => {
                    Sampling::Geometric { sparsity }
                }
                _ => {
                    warnings.push(format!(
                        "SAMPLER_SPARSITY=`{value}` is not a number ≥ 1; sampling is off"
                    ));
                    Sampling::Off
                }
            },
        },
        (Some(other), _) => {
            warnings.push(format!(
                "SAMPLER_RANDOM=`{other}` is not `online`, `offline` or `fixed`; sampling is off"
            ));
            Sampling::Off
        }
    };

    let destination = match (text("SAMPLER_REPORT_FD"), lookup("SAMPLER_FILE")) {
        // A broken SAMPLER_REPORT_FD still wins over SAMPLER_FILE: the caller
        // asked for that descriptor, and writing elsewhere would surprise it.
        (Some(fd), _) => match fd.trim().parse::<i32>() {
            Ok(fd) if fd >= 0 => Destination::Fd(fd),
            _ => {
                warnings.push(format!(
                    "SAMPLER_REPORT_FD=`{fd}` is not a file descriptor; no report will be written"
                ));
                Destination::None
            }
        },
        (None, Some(path)) if !path.is_empty() => Destination::File(path),
        (None, Some(_)) => {
            warnings.push("SAMPLER_FILE is empty; no report will be written".to_owned());
            Destination::None
        }
        (None, None) => Destination::None,
    };

    let trace = match text("SAMPLER_TRACE") {
        None => 0,
        Some(value) => match parse_u64(&value) {
            Some(records) if records <= u64::from(MAX_TRACE) => records as u32,
            _ => {
                warnings.push(format!(
                    "SAMPLER_TRACE=`{value}` is not a whole number from 0 to {MAX_TRACE}; tracing is off"
                ));
                0
            }
        },
    };

    (
        Config {
            sampling,
            seed,
            destination,
            trace,
        },
        warnings,
    )
}

/// Decimal, or hexadecimal with `0x`, as `strtoull(.., 0)` mostly reads.
fn parse_u64(text: &str) -> Option<u64> {
    let text = text.trim();
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

/// A bank is a non-empty sequence of native-endian 32-bit countdowns, each
/// at least 1 (the original wrote 1021 of them; any number is accepted).
fn parse_bank(bytes: &[u8]) -> Result<Box<[i32]>, String> {
    if bytes.is_empty() || !bytes.len().is_multiple_of(4) {
        return Err(format!(
            "holds {} bytes, not a non-empty sequence of 4-byte countdowns",
            bytes.len()
        ));
    }
    let bank: Box<[i32]> = bytes
        .chunks_exact(4)
        .map(|chunk| i32::from_ne_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]))
        .collect();
    match bank.iter().position(|&countdown| countdown < 1) {
        Some(index) => Err(format!(
            "countdown {index} is {}, not at least 1",
            bank[index]
        )),
        None => Ok(bank),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn parse_env(vars: &[(&str, &str)]) -> (Config, Vec<String>) {
        let vars: HashMap<String, OsString> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), OsString::from(v)))
            .collect();
        parse(
            |name| vars.get(name).cloned(),
            |path| {
                if path == "bank" {
                    Ok([3i32, 1, 7].iter().flat_map(|v| v.to_ne_bytes()).collect())
                } else if path == "bad-bank" {
                    Ok([3i32, 0].iter().flat_map(|v| v.to_ne_bytes()).collect())
                } else {
                    Err(std::io::Error::from(std::io::ErrorKind::NotFound))
                }
            },
        )
    }

    #[test]
    fn nothing_set_means_no_sampling_and_no_report() {
        let (config, warnings) = parse_env(&[]);
        assert_eq!(config.sampling, Sampling::Off);
        assert_eq!(config.destination, Destination::None);
        assert_eq!(config.seed, None);
        assert_eq!(config.trace, 0);
        assert!(warnings.is_empty());
    }

    #[test]
    fn trace_sizes_and_their_bound() {
        for (value, records) in [("0", 0), ("16", 16), (" 0x10 ", 16), ("65536", 65536)] {
            let (config, warnings) = parse_env(&[("SAMPLER_TRACE", value)]);
            assert_eq!((config.trace, warnings.len()), (records, 0), "{value}");
        }
        for value in ["65537", "-1", "many", "1.5", ""] {
            let (config, warnings) = parse_env(&[("SAMPLER_TRACE", value)]);
            assert_eq!(config.trace, 0, "{value}");
            assert_eq!(
                warnings,
                [format!(
                    "SAMPLER_TRACE=`{value}` is not a whole number from 0 to 65536; tracing is off"
                )]
            );
        }
    }

    #[test]
    fn sparsity_seed_and_destinations() {
        let (config, warnings) = parse_env(&[
            ("SAMPLER_SPARSITY", "100.5"),
            ("SAMPLER_SEED", "0x2a"),
            ("SAMPLER_FILE", "out.report"),
            ("SAMPLER_REPORT_FD", "5"),
        ]);
        assert!(warnings.is_empty());
        assert_eq!(config.sampling, Sampling::Geometric { sparsity: 100.5 });
        assert_eq!(config.seed, Some(42));
        assert_eq!(config.destination, Destination::Fd(5));
        let (config, _) = parse_env(&[("SAMPLER_FILE", "out.report")]);
        assert_eq!(config.destination, Destination::File("out.report".into()));
    }

    #[test]
    fn fixed_periods_and_banks() {
        let (config, _) = parse_env(&[("SAMPLER_RANDOM", "fixed"), ("SAMPLER_SPARSITY", "7")]);
        assert_eq!(config.sampling, Sampling::Fixed { period: 7 });
        let (config, _) = parse_env(&[("SAMPLER_EVENT_COUNTDOWNS", "bank")]);
        assert_eq!(config.sampling, Sampling::Bank(vec![3, 1, 7].into()));
    }

    #[test]
    fn unusable_values_get_one_clear_line_each() {
        let (config, warnings) = parse_env(&[
            ("SAMPLER_SPARSITY", "0.5"),
            ("SAMPLER_SEED", "-3"),
            ("SAMPLER_REPORT_FD", "three"),
        ]);
        assert_eq!(config.sampling, Sampling::Off);
        assert_eq!(config.destination, Destination::None);
        assert_eq!(
            warnings,
            [
                "SAMPLER_SEED=`-3` is not an unsigned integer; seeding from the system instead",
                "SAMPLER_SPARSITY=`0.5` is not a number ≥ 1; sampling is off",
                "SAMPLER_REPORT_FD=`three` is not a file descriptor; no report will be written",
            ]
        );
        let (_, warnings) = parse_env(&[("SAMPLER_SPARSITY", "NaN")]);
        assert_eq!(
            warnings,
            ["SAMPLER_SPARSITY=`NaN` is not a number ≥ 1; sampling is off"]
        );
        let (_, warnings) = parse_env(&[("SAMPLER_EVENT_COUNTDOWNS", "bad-bank")]);
        assert_eq!(
            warnings,
            [
                "SAMPLER_EVENT_COUNTDOWNS=`bad-bank`: countdown 1 is 0, not at least 1; sampling is off"
            ]
        );
        let (_, warnings) = parse_env(&[("SAMPLER_EVENT_COUNTDOWNS", "missing")]);
        assert_eq!(
            warnings,
            [
                "SAMPLER_EVENT_COUNTDOWNS=`missing` cannot be read (entity not found); sampling is off"
            ]
        );
        let (_, warnings) = parse_env(&[("SAMPLER_RANDOM", "fixed"), ("SAMPLER_SPARSITY", "2.5")]);
        assert_eq!(
            warnings,
            [
                "SAMPLER_SPARSITY=`2.5` is not a whole number from 1 to 2147483647, as SAMPLER_RANDOM=fixed needs; sampling is off"
            ]
        );
    }
}
