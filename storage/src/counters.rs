//! A run's samples in the compact form the collector stores for analysis.
//!
//! Parsing a report of 5,000 sites costs far more than reading back what
//! it says, and most counters of a sampled run are zero. At ingest the
//! `samples` subreport is reduced to its non-zero rows, merged per
//! (unit, scheme) as `resolve-samples` merges them, and written as one
//! self-describing blob per run, so that the analysis reads 100,000 runs
//! without touching a raw report or a second table:
//!
//! ```text
//! blob     = version:u8(=1) n_sections:varint section*
//! section  = unit:16 bytes  scheme_len:varint scheme:bytes  n_sites:varint  body
//! body     = 0:u8 arity:varint n_rows:varint (site_gap:varint counter:varint{arity})*
//!          | 1:u8 n_rows:varint (site_gap:varint bound bound)*      -- bounds: min, max
//! bound    = 0:u8 value:varint                 -- integer >= 0
//!          | 1:u8 (-1 - value):varint          -- integer < 0
//!          | 2:u8 address:varint               -- pointer
//! ```
//!
//! `site_gap` is the site's index minus the previous stored row's index
//! plus one (the first row's gap is its index), so indices cost one byte
//! in dense stretches. Rows whose counters are all zero, and `bounds` rows
//! never observed (minimum above maximum), are left out. Timestamps stay in
//! the raw report only.

use std::collections::BTreeMap;

use integer_encoding::VarInt;
use sampler_formats::{
    BoundValue, ReadError, ReportEvent, ReportReader, SectionKey, UnitSignature,
};

const VERSION: u8 = 1;
const KIND_COUNTERS: u8 = 0;
const KIND_BOUNDS: u8 = 1;

/// Most sites one section may claim; a report of more is refused, since a
/// stored row index must fit the analysis's 32-bit site numbers.
pub const MAX_SITES_PER_SECTION: usize = 1 << 28;

/// One (unit, scheme)'s samples, merged over every section of the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SectionSamples {
    /// The unit and scheme.
    pub key: SectionKey,
    /// How many sites the section has (rows, zero or not).
    pub n_sites: u32,
    /// The non-zero rows.
    pub rows: Rows,
}

/// The non-zero rows of a section, in site order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rows {
    /// Counter schemes: `(site, counters)`, `arity` counters a row.
    Counters {
        /// Counters per site.
        arity: u32,
        /// Site index and its counters.
        rows: Vec<(u32, Vec<u64>)>,
    },
    /// `bounds`: `(site, min, max)` of observed sites.
    Bounds(Vec<(u32, BoundValue, BoundValue)>),
}

/// A run's samples: every section, ordered by key.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunSamples {
    /// The sections, in (unit, scheme) order.
    pub sections: Vec<SectionSamples>,
}

/// Why a samples subreport was refused.
#[derive(Debug, thiserror::Error)]
pub enum SamplesError {
    /// The text is not a well-formed samples subreport.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// Two sections of one unit and scheme disagree on their shape.
    #[error(
        "line {line}: the section of {key} has {found}, but an earlier one of the same unit and scheme has {expected}"
    )]
    Inconsistent {
        /// The section's key.
        key: SectionKey,
        /// The line of the section's end.
        line: u64,
        /// What this section has.
        found: String,
        /// What the earlier one had.
        expected: String,
    },
    /// The section has more sites than can be stored.
    #[error("line {line}: the section of {key} has more than {MAX_SITES_PER_SECTION} sites")]
    TooManySites {
        /// The section's key.
        key: SectionKey,
        /// The line where the limit was passed.
        line: u64,
    },
    /// A `<report>` other than `samples` inside the samples part.
    #[error("line {line}: a `samples` part holds only `<samples>` and `<timestamps>` sections")]
    NotSamples {
        /// The offending line.
        line: u64,
    },
}

/// Accumulates one key's rows while sections are read.
#[derive(Debug)]
enum Accumulator {
    Counters {
        arity: usize,
        n_sites: usize,
        /// In site order.
        values: Vec<(u32, Vec<u64>)>,
    },
    Bounds {
        n_sites: usize,
        values: BTreeMap<u32, (BoundValue, BoundValue)>,
    },
}

impl RunSamples {
    /// Reads a samples subreport: its sections, with or without the
    /// surrounding `<report id="samples">` lines (several of them are
    /// fine: each unit writes its own).
    pub fn parse(text: &[u8]) -> Result<Self, SamplesError> {
        let mut reader = ReportReader::new(text);
        let mut sections: BTreeMap<SectionKey, Accumulator> = BTreeMap::new();
        let mut open: Option<(SectionKey, usize, bool, Option<usize>)> = None;
        // The open section's non-zero counter rows, in site order, merged
        // into its key's accumulator when it closes; `checked` once the
        // first one was found to agree with the key's earlier sections
        // (the reader holds every row of a section to one arity).
        let mut pending: Vec<(u32, Vec<u64>)> = Vec::new();
        let mut checked = false;
        loop {
            let line = reader.line_number() + 1;
            let Some(event) = reader.next_event()? else {
                break;
            };
            match event {
                ReportEvent::ReportStart { id } if id == sampler_formats::SAMPLES_REPORT_ID => {}
                ReportEvent::ReportEnd => {}
                ReportEvent::ReportStart { .. } | ReportEvent::Line(_) => {
                    return Err(SamplesError::NotSamples { line });
                }
                ReportEvent::SamplesStart(key) => {
                    open = Some((key, 0, false, None));
                    pending.clear();
                    checked = false;
                }
                ReportEvent::Counters(values) => {
                    let (key, row, _, arity) = open.as_mut().expect("the reader opened a section");
                    let site = site_index(key, *row, line)?;
                    *row += 1;
                    *arity = Some(values.len());
                    if values.iter().any(|&v| v != 0) {
                        if !checked {
                            let entry = sections.entry(key.clone()).or_insert_with(|| {
                                Accumulator::Counters {
                                    arity: values.len(),
                                    n_sites: 0,
                                    values: Vec::new(),
                                }
                            });
                            match entry {
                                Accumulator::Counters { arity, .. } if *arity == values.len() => {
                                    checked = true;
                                }
                                other => {
                                    return Err(inconsistent(key, line, other, Some(values.len())));
                                }
                            }
                        }
                        pending.push((site, values.to_vec()));
                    }
                }
                ReportEvent::Bounds { min, max } => {
                    let (key, row, bounds, _) = open.as_mut().expect("the reader opened a section");
                    let site = site_index(key, *row, line)?;
                    *row += 1;
                    *bounds = true;
                    if min.numeric() <= max.numeric() {
                        let entry =
                            sections
                                .entry(key.clone())
                                .or_insert_with(|| Accumulator::Bounds {
                                    n_sites: 0,
                                    values: BTreeMap::new(),
                                });
                        match entry {
                            Accumulator::Bounds { values, .. } => {
                                values
                                    .entry(site)
                                    .and_modify(|(lo, hi)| {
                                        if min.numeric() < lo.numeric() {
                                            *lo = min;
                                        }
                                        if max.numeric() > hi.numeric() {
                                            *hi = max;
                                        }
                                    })
                                    .or_insert((min, max));
                            }
                            other => return Err(inconsistent(key, line, other, None)),
                        }
                    }
                }
                ReportEvent::SamplesEnd { n_rows } => {
                    let (key, _, bounds, arity) = open.take().expect("the reader opened a section");
                    let entry = sections.entry(key.clone()).or_insert_with(|| match arity {
                        Some(arity) if !bounds => Accumulator::Counters {
                            arity,
                            n_sites: n_rows,
                            values: Vec::new(),
                        },
                        _ if bounds => Accumulator::Bounds {
                            n_sites: n_rows,
                            values: BTreeMap::new(),
                        },
                        // An empty section of a counter scheme: its arity
                        // is the scheme's, or unknown (0) for a new one.
                        _ => Accumulator::Counters {
                            arity: match key.scheme.sample_kind() {
                                Some(sampler_formats::SampleKind::Counters(arity)) => arity,
                                _ => 0,
                            },
                            n_sites: n_rows,
                            values: Vec::new(),
                        },
                    });
                    let stored_n_sites = match entry {
                        Accumulator::Counters { n_sites, .. }
                        | Accumulator::Bounds { n_sites, .. } => n_sites,
                    };
                    if *stored_n_sites == 0 {
                        *stored_n_sites = n_rows;
                    } else if n_rows != 0 && *stored_n_sites != n_rows {
                        return Err(SamplesError::Inconsistent {
                            key,
                            line,
                            found: format!("{n_rows} sites"),
                            expected: format!("{stored_n_sites} sites"),
                        });
                    }
                    if let Accumulator::Counters { values, .. } = entry {
                        merge(values, std::mem::take(&mut pending));
                    }
                }
                ReportEvent::TimestampsStart { .. }
                | ReportEvent::Timestamp(_)
                | ReportEvent::TimestampsEnd { .. } => {}
            }
        }
        let sections = sections
            .into_iter()
            .map(|(key, accumulator)| match accumulator {
                Accumulator::Counters {
                    arity,
                    n_sites,
                    values,
                } => SectionSamples {
                    key,
                    n_sites: n_sites as u32,
                    rows: Rows::Counters {
                        arity: arity as u32,
                        rows: values,
                    },
                },
                Accumulator::Bounds { n_sites, values } => SectionSamples {
                    key,
                    n_sites: n_sites as u32,
                    rows: Rows::Bounds(
                        values
                            .into_iter()
                            .map(|(site, (lo, hi))| (site, lo, hi))
                            .collect(),
                    ),
                },
            })
            .collect();
        Ok(Self { sections })
    }

    /// The compact blob (see the module's documentation).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![VERSION];
        put(&mut out, self.sections.len() as u64);
        for section in &self.sections {
            out.extend_from_slice(section.key.unit.as_bytes());
            let scheme = section.key.scheme.as_str().as_bytes();
            put(&mut out, scheme.len() as u64);
            out.extend_from_slice(scheme);
            put(&mut out, u64::from(section.n_sites));
            match &section.rows {
                Rows::Counters { arity, rows } => {
                    out.push(KIND_COUNTERS);
                    put(&mut out, u64::from(*arity));
                    put(&mut out, rows.len() as u64);
                    let mut next = 0;
                    for (site, values) in rows {
                        put(&mut out, u64::from(site - next));
                        next = site + 1;
                        for &value in values {
                            put(&mut out, value);
                        }
                    }
                }
                Rows::Bounds(rows) => {
                    out.push(KIND_BOUNDS);
                    put(&mut out, rows.len() as u64);
                    let mut next = 0;
                    for (site, min, max) in rows {
                        put(&mut out, u64::from(site - next));
                        next = site + 1;
                        put_bound(&mut out, *min);
                        put_bound(&mut out, *max);
                    }
                }
            }
        }
        out
    }

    /// Reads a blob written by [`encode`](Self::encode).
    pub fn decode(blob: &[u8]) -> Result<Self, DecodeError> {
        let mut builder = Builder::default();
        walk(blob, &mut builder)?;
        Ok(Self {
            sections: builder.sections,
        })
    }
}

/// Adds `rows` to `stored`, both in site order, summing (saturated) the
/// counters of a site in both.
fn merge(stored: &mut Vec<(u32, Vec<u64>)>, rows: Vec<(u32, Vec<u64>)>) {
    if stored.is_empty() {
        *stored = rows;
        return;
    }
    if rows.is_empty() {
        return;
    }
    let old = std::mem::take(stored);
    stored.reserve(old.len() + rows.len());
    let (mut old, mut rows) = (old.into_iter().peekable(), rows.into_iter().peekable());
    loop {
        let next = match (old.peek(), rows.peek()) {
            (Some((a, _)), Some((b, _))) if a < b => old.next(),
            (Some((a, _)), Some((b, _))) if a > b => rows.next(),
            (Some(_), Some(_)) => {
                let (site, mut sums) = old.next().expect("peeked");
                let (_, values) = rows.next().expect("peeked");
                for (sum, value) in sums.iter_mut().zip(values) {
                    *sum = sum.saturating_add(value);
                }
                Some((site, sums))
            }
            (Some(_), None) => old.next(),
            (None, Some(_)) => rows.next(),
            (None, None) => break,
        };
        stored.extend(next);
    }
}

/// What [`walk`] reports of a blob, in order: each section's start, then
/// its rows.
pub trait RowVisitor {
    /// A section of `key` with `n_sites` sites; `arity` counters a row, or
    /// `None` for a `bounds` section.
    fn section(&mut self, key: SectionKey, n_sites: u32, arity: Option<u32>);
    /// A non-zero counter row of the current section.
    fn counters(&mut self, site: u32, counters: &[u64]);
    /// An observed `bounds` row of the current section.
    fn bounds(&mut self, site: u32, min: BoundValue, max: BoundValue) {
        let _ = (site, min, max);
    }
}

/// Builds a [`RunSamples`].
#[derive(Default)]
struct Builder {
    sections: Vec<SectionSamples>,
}

impl RowVisitor for Builder {
    fn section(&mut self, key: SectionKey, n_sites: u32, arity: Option<u32>) {
        let rows = match arity {
            Some(arity) => Rows::Counters {
                arity,
                rows: Vec::new(),
            },
            None => Rows::Bounds(Vec::new()),
        };
        self.sections.push(SectionSamples { key, n_sites, rows });
    }

    fn counters(&mut self, site: u32, counters: &[u64]) {
        if let Some(SectionSamples {
            rows: Rows::Counters { rows, .. },
            ..
        }) = self.sections.last_mut()
        {
            rows.push((site, counters.to_vec()));
        }
    }

    fn bounds(&mut self, site: u32, min: BoundValue, max: BoundValue) {
        if let Some(SectionSamples {
            rows: Rows::Bounds(rows),
            ..
        }) = self.sections.last_mut()
        {
            rows.push((site, min, max));
        }
    }
}

/// Walks a blob written by [`RunSamples::encode`] without building it:
/// what the analysis uses to read many runs, one reused buffer for every
/// counter row. A damaged blob is an error naming its byte; rows already
/// reported stay reported.
pub fn walk(blob: &[u8], visitor: &mut impl RowVisitor) -> Result<(), DecodeError> {
    let mut input = Input { bytes: blob, at: 0 };
    let version = input.byte()?;
    if version != VERSION {
        return Err(DecodeError {
            at: 0,
            what: format!("version {version}, expected {VERSION}"),
        });
    }
    let n_sections = input.varint()?;
    let mut values = Vec::new();
    for _ in 0..n_sections {
        let unit: [u8; 16] = input.take(16)?.try_into().expect("16 bytes");
        let scheme_len = input.varint()? as usize;
        let at = input.at;
        let scheme = std::str::from_utf8(input.take(scheme_len)?).map_err(|_| DecodeError {
            at,
            what: "a scheme name that is not UTF-8".into(),
        })?;
        let scheme: sampler_formats::SchemeName =
            scheme
                .parse()
                .map_err(|error: sampler_formats::SchemeNameError| DecodeError {
                    at,
                    what: error.to_string(),
                })?;
        let key = SectionKey::new(UnitSignature::from_bytes(unit), scheme);
        let n_sites = input.small(u64::from(u32::MAX))? as u32;
        let kind_at = input.at;
        match input.byte()? {
            KIND_COUNTERS => {
                let arity = input.small(64)? as u32;
                visitor.section(key, n_sites, Some(arity));
                let n_rows = input.small(u64::from(n_sites))?;
                let mut next: u64 = 0;
                for _ in 0..n_rows {
                    let site = next + input.varint()?;
                    values.clear();
                    for _ in 0..arity {
                        values.push(input.varint()?);
                    }
                    visitor.counters(input.site(site, n_sites)?, &values);
                    next = site + 1;
                }
            }
            KIND_BOUNDS => {
                visitor.section(key, n_sites, None);
                let n_rows = input.small(u64::from(n_sites))?;
                let mut next: u64 = 0;
                for _ in 0..n_rows {
                    let site = next + input.varint()?;
                    let min = input.bound()?;
                    let max = input.bound()?;
                    visitor.bounds(input.site(site, n_sites)?, min, max);
                    next = site + 1;
                }
            }
            kind => {
                return Err(DecodeError {
                    at: kind_at,
                    what: format!("section kind {kind}"),
                });
            }
        }
    }
    if input.at != blob.len() {
        return Err(DecodeError {
            at: input.at,
            what: "bytes after the last section".into(),
        });
    }
    Ok(())
}

fn site_index(key: &SectionKey, row: usize, line: u64) -> Result<u32, SamplesError> {
    if row >= MAX_SITES_PER_SECTION {
        return Err(SamplesError::TooManySites {
            key: key.clone(),
            line,
        });
    }
    Ok(row as u32)
}

fn inconsistent(
    key: &SectionKey,
    line: u64,
    stored: &Accumulator,
    arity: Option<usize>,
) -> SamplesError {
    let describe = |arity: Option<usize>| match arity {
        Some(arity) => format!("{arity} counters per site"),
        None => "bounds".to_owned(),
    };
    let expected = match stored {
        Accumulator::Counters { arity, .. } => describe(Some(*arity)),
        Accumulator::Bounds { .. } => describe(None),
    };
    SamplesError::Inconsistent {
        key: key.clone(),
        line,
        found: describe(arity),
        expected,
    }
}

fn put(out: &mut Vec<u8>, value: u64) {
    let mut buffer = [0u8; 10];
    let n = value.encode_var(&mut buffer);
    out.extend_from_slice(&buffer[..n]);
}

fn put_bound(out: &mut Vec<u8>, value: BoundValue) {
    match value {
        BoundValue::Integer(value) if value >= 0 => {
            out.push(0);
            put(out, value as u64);
        }
        BoundValue::Integer(value) => {
            out.push(1);
            put(out, (-1 - value) as u64);
        }
        BoundValue::Pointer(address) => {
            out.push(2);
            put(out, address);
        }
    }
}

/// A stored blob that cannot be read: where, and what was found.
#[derive(Debug, thiserror::Error)]
#[error("stored counters, byte {at}: {what}")]
pub struct DecodeError {
    at: usize,
    what: String,
}

struct Input<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Input<'_> {
    fn truncated(&self) -> DecodeError {
        DecodeError {
            at: self.at,
            what: "the blob ends early".into(),
        }
    }

    fn byte(&mut self) -> Result<u8, DecodeError> {
        let byte = *self.bytes.get(self.at).ok_or_else(|| self.truncated())?;
        self.at += 1;
        Ok(byte)
    }

    fn take(&mut self, n: usize) -> Result<&[u8], DecodeError> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&end| end <= self.bytes.len())
            .ok_or_else(|| self.truncated())?;
        let slice = &self.bytes[self.at..end];
        self.at = end;
        Ok(slice)
    }

    fn varint(&mut self) -> Result<u64, DecodeError> {
        // Most values (small counters, gaps in dense stretches) are one byte.
        if let Some(&byte) = self.bytes.get(self.at)
            && byte < 0x80
        {
            self.at += 1;
            return Ok(u64::from(byte));
        }
        match u64::decode_var(&self.bytes[self.at..]) {
            Some((value, n)) => {
                self.at += n;
                Ok(value)
            }
            None => Err(DecodeError {
                at: self.at,
                what: "a malformed or truncated number".into(),
            }),
        }
    }

    fn small(&mut self, limit: u64) -> Result<u64, DecodeError> {
        let at = self.at;
        let value = self.varint()?;
        if value > limit {
            return Err(DecodeError {
                at,
                what: format!("{value}, more than {limit}"),
            });
        }
        Ok(value)
    }

    fn site(&self, site: u64, n_sites: u32) -> Result<u32, DecodeError> {
        if site >= u64::from(n_sites) {
            return Err(DecodeError {
                at: self.at,
                what: format!("site {site} of a section of {n_sites}"),
            });
        }
        Ok(site as u32)
    }

    fn bound(&mut self) -> Result<BoundValue, DecodeError> {
        let at = self.at;
        match self.byte()? {
            0 => Ok(BoundValue::Integer(i128::from(self.varint()?))),
            1 => {
                let magnitude = self.varint()?;
                if magnitude > i64::MAX as u64 {
                    return Err(DecodeError {
                        at,
                        what: "a bound below the least 64-bit integer".into(),
                    });
                }
                Ok(BoundValue::Integer(-1 - i128::from(magnitude)))
            }
            2 => Ok(BoundValue::Pointer(self.varint()?)),
            tag => Err(DecodeError {
                at,
                what: format!("bound kind {tag}"),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const UNIT: &str = "0123456789abcdef0123456789abcdef";

    #[test]
    fn keeps_non_zero_rows_merged_per_key() {
        let text = format!(
            "<report id=\"samples\">\n<samples unit=\"{UNIT}\" scheme=\"branches\">\n0\t0\n3\t1\n0\t0\n0\t2\n</samples>\n\
             <samples unit=\"{UNIT}\" scheme=\"bounds\">\n-5\t12\n1\t0\n(nil)\t0x10\n</samples>\n</report>\n\
             <report id=\"samples\">\n<samples unit=\"{UNIT}\" scheme=\"branches\">\n1\t0\n0\t0\n0\t0\n0\t1\n</samples>\n</report>\n"
        );
        let samples = RunSamples::parse(text.as_bytes()).unwrap();
        assert_eq!(samples.sections.len(), 2);
        let bounds = &samples.sections[0];
        assert_eq!(bounds.key.scheme.as_str(), "bounds");
        assert_eq!(bounds.n_sites, 3);
        assert_eq!(
            bounds.rows,
            Rows::Bounds(vec![
                (0, BoundValue::Integer(-5), BoundValue::Integer(12)),
                (2, BoundValue::Pointer(0), BoundValue::Pointer(16)),
            ])
        );
        let branches = &samples.sections[1];
        assert_eq!(branches.n_sites, 4);
        assert_eq!(
            branches.rows,
            Rows::Counters {
                arity: 2,
                rows: vec![(0, vec![1, 0]), (1, vec![3, 1]), (3, vec![0, 3])]
            }
        );
        let blob = samples.encode();
        assert_eq!(RunSamples::decode(&blob).unwrap(), samples);
    }

    #[test]
    fn a_section_of_zeros_keeps_its_size() {
        let text =
            format!("<samples unit=\"{UNIT}\" scheme=\"returns\">\n0\t0\t0\n0\t0\t0\n</samples>\n");
        let samples = RunSamples::parse(text.as_bytes()).unwrap();
        assert_eq!(samples.sections[0].n_sites, 2);
        assert_eq!(
            samples.sections[0].rows,
            Rows::Counters {
                arity: 3,
                rows: vec![]
            }
        );
        assert_eq!(RunSamples::decode(&samples.encode()).unwrap(), samples);
    }

    #[test]
    fn refuses_sections_that_disagree_and_other_subreports() {
        let text = format!(
            "<samples unit=\"{UNIT}\" scheme=\"branches\">\n0\t1\n</samples>\n\
             <samples unit=\"{UNIT}\" scheme=\"branches\">\n0\t1\n0\t1\n</samples>\n"
        );
        let error = RunSamples::parse(text.as_bytes()).unwrap_err().to_string();
        assert_eq!(
            error,
            format!(
                "line 7: the section of unit `{UNIT}` scheme `branches` has 2 sites, but an earlier one of the same unit and scheme has 1 sites"
            )
        );
        let error = RunSamples::parse(b"<report id=\"other\">\nx\n</report>\n")
            .unwrap_err()
            .to_string();
        assert_eq!(
            error,
            "line 1: a `samples` part holds only `<samples>` and `<timestamps>` sections"
        );
    }

    #[test]
    fn decode_names_the_byte_of_a_damaged_blob() {
        let text = format!("<samples unit=\"{UNIT}\" scheme=\"branches\">\n0\t1\n</samples>\n");
        let blob = RunSamples::parse(text.as_bytes()).unwrap().encode();
        for cut in 0..blob.len() {
            assert!(RunSamples::decode(&blob[..cut]).is_err(), "cut at {cut}");
        }
        let mut wrong = blob.clone();
        wrong[0] = 9;
        assert_eq!(
            RunSamples::decode(&wrong).unwrap_err().to_string(),
            "stored counters, byte 0: version 9, expected 1"
        );
    }
}
