//! Feedback reports: `<report id="..">` subreports, and inside the
//! `samples` subreport, `<samples>` and `<timestamps>` sections.
//!
//! ```text
//! <report id="samples">
//! <samples unit="0123456789abcdef0123456789abcdef" scheme="branches">
//! 0	1
//! 3	0
//! </samples>
//! <timestamps unit="0123456789abcdef0123456789abcdef" scheme="branches" when="first">
//! 1
//! 0
//! </timestamps>
//! </report>
//! <report id="main-backtrace">
//! ./prog(crash+0x14)[0x401136]
//! </report>
//! ```
//!
//! [`ReportReader`] also accepts `<samples>` and `<timestamps>` sections at
//! the top level, outside any `<report>`: that is the body of a samples
//! subreport, as `extract-report samples` prints it.

// The examples show the format byte for byte, and its separator is a tab.
#![allow(clippy::tabs_in_doc_comments)]

use std::fmt;
use std::io::{self, BufRead, Write};

use crate::decimal;
use crate::error::{ReadError, ReadErrorKind};
use crate::lines::LineReader;
use crate::scheme::SampleKind;
use crate::sites::parse_key;
use crate::tags::{SectionKey, looks_like_start_tag, parse_start_tag};

/// The id of the subreport holding counters.
pub const SAMPLES_REPORT_ID: &str = "samples";
/// The id of the subreport holding the crashing thread's stack.
pub const BACKTRACE_REPORT_ID: &str = "main-backtrace";

const REPORT_END: &str = "</report>";
const SAMPLES_END: &str = "</samples>";
const TIMESTAMPS_END: &str = "</timestamps>";
const REPORT_START_SHAPE: &str = "`<report id=\"<id>\">`";
const SAMPLES_START_SHAPE: &str = "`<samples unit=\"<32 hex digits>\" scheme=\"<name>\">`";
const TIMESTAMPS_START_SHAPE: &str =
    "`<timestamps unit=\"<32 hex digits>\" scheme=\"<name>\" when=\"first|last\">`";

/// Which observation a `<timestamps>` section records for each site.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum When {
    /// The logical time of the site's first sampled observation.
    First,
    /// The logical time of the site's last sampled observation.
    Last,
}

impl When {
    /// The attribute value.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::First => "first",
            Self::Last => "last",
        }
    }

    fn parse(text: &str) -> Option<Self> {
        match text {
            "first" => Some(Self::First),
            "last" => Some(Self::Last),
            _ => None,
        }
    }
}

impl fmt::Display for When {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One end of a `bounds` site's range.
///
/// The original runtime printed each bound with the C type's own format:
/// signed or unsigned decimal for integers, `%p` for pointers. Both
/// spellings are kept so that a merged value prints as it came.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BoundValue {
    /// An integer of any C integer type, from `i64::MIN` to `u64::MAX`.
    Integer(i128),
    /// A pointer, printed `0x…` in lowercase hex, or `(nil)` when null as
    /// glibc prints it.
    Pointer(u64),
}

impl BoundValue {
    /// The value as a number, for comparisons.
    pub fn numeric(self) -> i128 {
        match self {
            Self::Integer(value) => value,
            Self::Pointer(address) => i128::from(address),
        }
    }

    /// Parses one spelling the runtime writes.
    pub fn parse(text: &str) -> Option<Self> {
        if text == "(nil)" {
            return Some(Self::Pointer(0));
        }
        if let Some(hex) = text.strip_prefix("0x") {
            let canonical = !hex.is_empty()
                && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
                && !hex.starts_with('0');
            // `0x0` is what `(nil)` prints as; accept only the glibc form.
            return match u64::from_str_radix(hex, 16) {
                Ok(address) if canonical && address != 0 => Some(Self::Pointer(address)),
                _ => None,
            };
        }
        let digits = text.strip_prefix('-').unwrap_or(text);
        if !decimal::is_canonical(digits) || text == "-0" {
            return None;
        }
        let value: i128 = text.parse().ok()?;
        (i128::from(i64::MIN)..=i128::from(u64::MAX))
            .contains(&value)
            .then_some(Self::Integer(value))
    }
}

impl fmt::Display for BoundValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Integer(value) => write!(f, "{value}"),
            Self::Pointer(0) => f.write_str("(nil)"),
            Self::Pointer(address) => write!(f, "{address:#x}"),
        }
    }
}

/// One step of reading a report; see [`ReportReader::next_event`].
#[derive(Debug, PartialEq, Eq)]
pub enum ReportEvent<'a> {
    /// `<report id="..">`.
    ReportStart {
        /// The subreport's id.
        id: &'a str,
    },
    /// `</report>`.
    ReportEnd,
    /// `<samples unit=".." scheme="..">`.
    SamplesStart(SectionKey),
    /// One site's counters, in a counter scheme's section.
    Counters(&'a [u64]),
    /// One site's range, in a `bounds` section.
    Bounds {
        /// The least value seen.
        min: BoundValue,
        /// The greatest value seen.
        max: BoundValue,
    },
    /// `</samples>`, after `n_rows` site lines.
    SamplesEnd {
        /// The number of site lines in the section just closed.
        n_rows: usize,
    },
    /// `<timestamps unit=".." scheme=".." when="..">`.
    TimestampsStart {
        /// The unit and scheme.
        key: SectionKey,
        /// Which observation the section records.
        when: When,
    },
    /// One site's logical timestamp (0: never observed).
    Timestamp(u64),
    /// `</timestamps>`, after `n_rows` site lines.
    TimestampsEnd {
        /// The number of site lines in the section just closed.
        n_rows: usize,
    },
    /// A line of a subreport other than `samples`, verbatim.
    Line(&'a str),
}

/// Streams a feedback report, one line at a time, checking its structure
/// and every value as it goes. Every error names its line.
#[derive(Debug)]
pub struct ReportReader<R> {
    lines: LineReader<R>,
    subreport: Option<OpenSubreport>,
    section: Option<OpenSection>,
    values: Vec<u64>,
}

#[derive(Debug)]
struct OpenSubreport {
    start_line: u64,
    holds_samples: bool,
}

#[derive(Debug)]
struct OpenSection {
    start_line: u64,
    n_rows: usize,
    rows: RowKind,
}

#[derive(Debug, Clone, Copy)]
enum RowKind {
    Counters { arity: Option<usize> },
    Bounds,
    Timestamps,
}

impl OpenSection {
    fn new(rows: RowKind, start_line: u64) -> Self {
        Self {
            start_line,
            n_rows: 0,
            rows,
        }
    }
}

impl RowKind {
    fn end_tag(self) -> &'static str {
        match self {
            Self::Timestamps => TIMESTAMPS_END,
            Self::Counters { .. } | Self::Bounds => SAMPLES_END,
        }
    }
}

impl<R: BufRead> ReportReader<R> {
    /// A reader of the report `input`.
    pub fn new(input: R) -> Self {
        Self {
            lines: LineReader::new(input),
            subreport: None,
            section: None,
            values: Vec::new(),
        }
    }

    /// The number of the line last read.
    pub fn line_number(&self) -> u64 {
        self.lines.line_number()
    }

    /// The text of the line last read, without its newline.
    pub fn current_line(&self) -> &str {
        self.lines.current_line()
    }

    /// The next event, or `None` at the end of a well-formed report.
    pub fn next_event(&mut self) -> Result<Option<ReportEvent<'_>>, ReadError> {
        if !self.lines.advance()? {
            return self.end_of_input();
        }
        let line_number = self.lines.line_number();
        let line = self.lines.current_line();
        if let Some(section) = &mut self.section {
            let rows = section.rows;
            if line == rows.end_tag() {
                let n_rows = section.n_rows;
                self.section = None;
                return Ok(Some(match rows {
                    RowKind::Timestamps => ReportEvent::TimestampsEnd { n_rows },
                    _ => ReportEvent::SamplesEnd { n_rows },
                }));
            }
            section.n_rows += 1;
            let start_line = section.start_line;
            return match rows {
                RowKind::Timestamps => match decimal::parse::<u64>(line) {
                    Some(stamp) => Ok(Some(ReportEvent::Timestamp(stamp))),
                    None => Err(ReadError::unexpected(
                        line_number,
                        format!(
                            "an unsigned decimal timestamp or `{TIMESTAMPS_END}` closing the section opened at line {start_line}"
                        ),
                        line,
                    )),
                },
                RowKind::Bounds => {
                    let bounds = line.split_once('\t').and_then(|(min, max)| {
                        Some((BoundValue::parse(min)?, BoundValue::parse(max)?))
                    });
                    match bounds {
                        Some((min, max)) => Ok(Some(ReportEvent::Bounds { min, max })),
                        None => Err(ReadError::unexpected(
                            line_number,
                            format!(
                                "a minimum and a maximum separated by a tab, or `{SAMPLES_END}` closing the section opened at line {start_line}"
                            ),
                            line,
                        )),
                    }
                }
                RowKind::Counters { arity } => {
                    self.values.clear();
                    let mut well_formed = true;
                    for field in line.split('\t') {
                        match decimal::parse::<u64>(field) {
                            Some(value) => self.values.push(value),
                            None => {
                                well_formed = false;
                                break;
                            }
                        }
                    }
                    let n_values = self.values.len();
                    let arity_ok = arity.is_none_or(|arity| arity == n_values);
                    if well_formed && arity_ok {
                        if let Some(section) = &mut self.section {
                            section.rows = RowKind::Counters {
                                arity: Some(n_values),
                            };
                        }
                        Ok(Some(ReportEvent::Counters(&self.values)))
                    } else {
                        let shape = match arity {
                            Some(1) => "1 unsigned decimal counter".to_owned(),
                            Some(arity) => {
                                format!("{arity} unsigned decimal counters separated by tabs")
                            }
                            None => "unsigned decimal counters separated by tabs".to_owned(),
                        };
                        Err(ReadError::unexpected(
                            line_number,
                            format!(
                                "{shape}, or `{SAMPLES_END}` closing the section opened at line {start_line}"
                            ),
                            line,
                        ))
                    }
                }
            };
        }
        match &self.subreport {
            Some(open) if !open.holds_samples => {
                if line == REPORT_END {
                    self.subreport = None;
                    Ok(Some(ReportEvent::ReportEnd))
                } else if looks_like_start_tag(line, "report") {
                    Err(ReadError::unexpected(
                        line_number,
                        format!(
                            "`{REPORT_END}` closing the subreport opened at line {}",
                            open.start_line
                        ),
                        line,
                    ))
                } else {
                    Ok(Some(ReportEvent::Line(line)))
                }
            }
            Some(_) if line == REPORT_END => {
                self.subreport = None;
                Ok(Some(ReportEvent::ReportEnd))
            }
            inside => {
                let inside_samples = inside.is_some();
                if let Some([unit, scheme]) = parse_start_tag(line, "samples", ["unit", "scheme"]) {
                    let key = parse_key(unit, scheme, line_number)?;
                    let rows = match key.scheme.sample_kind() {
                        Some(SampleKind::Bounds) => RowKind::Bounds,
                        Some(SampleKind::Counters(arity)) => {
                            RowKind::Counters { arity: Some(arity) }
                        }
                        None => RowKind::Counters { arity: None },
                    };
                    self.section = Some(OpenSection::new(rows, line_number));
                    return Ok(Some(ReportEvent::SamplesStart(key)));
                }
                if let Some([unit, scheme, when]) =
                    parse_start_tag(line, "timestamps", ["unit", "scheme", "when"])
                {
                    let key = parse_key(unit, scheme, line_number)?;
                    let when = When::parse(when).ok_or_else(|| {
                        ReadError::invalid(
                            line_number,
                            format!("`when=\"{when}\"` in a `<timestamps>` tag: expected `first` or `last`"),
                        )
                    })?;
                    self.section = Some(OpenSection::new(RowKind::Timestamps, line_number));
                    return Ok(Some(ReportEvent::TimestampsStart { key, when }));
                }
                if !inside_samples && let Some([id]) = parse_start_tag(line, "report", ["id"]) {
                    if id.is_empty() || id.contains(['<', '>']) {
                        return Err(ReadError::invalid(
                            line_number,
                            format!(
                                "`{}` is not a subreport id: expected a non-empty name without `<`, `>` or `\"`",
                                id
                            ),
                        ));
                    }
                    self.subreport = Some(OpenSubreport {
                        start_line: line_number,
                        holds_samples: id == SAMPLES_REPORT_ID,
                    });
                    return Ok(Some(ReportEvent::ReportStart { id }));
                }
                let expected = if looks_like_start_tag(line, "samples") {
                    SAMPLES_START_SHAPE.to_owned()
                } else if looks_like_start_tag(line, "timestamps") {
                    TIMESTAMPS_START_SHAPE.to_owned()
                } else if inside_samples {
                    format!("{SAMPLES_START_SHAPE}, {TIMESTAMPS_START_SHAPE} or `{REPORT_END}`")
                } else {
                    format!(
                        "{REPORT_START_SHAPE}, {SAMPLES_START_SHAPE} or {TIMESTAMPS_START_SHAPE}"
                    )
                };
                Err(ReadError::unexpected(line_number, expected, line))
            }
        }
    }

    fn end_of_input(&self) -> Result<Option<ReportEvent<'static>>, ReadError> {
        let unclosed = if let Some(section) = &self.section {
            let (name, end) = match section.rows {
                RowKind::Timestamps => ("timestamps", TIMESTAMPS_END),
                _ => ("samples", SAMPLES_END),
            };
            format!(
                "`<{name}>` section opened at line {} is not closed by `{end}`",
                section.start_line
            )
        } else if let Some(subreport) = &self.subreport {
            format!(
                "`<report>` opened at line {} is not closed by `{REPORT_END}`",
                subreport.start_line
            )
        } else {
            return Ok(None);
        };
        Err(ReadError::new(
            self.lines.line_number(),
            ReadErrorKind::Truncated(unclosed),
        ))
    }
}

/// The lines of one `<samples>` section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SampleRows {
    /// Counter tuples, `arity` values per site, flattened.
    Counters {
        /// Values per site.
        arity: usize,
        /// `arity × n_sites` values, site after site.
        values: Vec<u64>,
    },
    /// `bounds` ranges, one per site.
    Bounds(Vec<(BoundValue, BoundValue)>),
}

impl SampleRows {
    /// The number of sites.
    pub fn n_sites(&self) -> usize {
        match self {
            Self::Counters { arity: 0, .. } => 0,
            Self::Counters { arity, values } => values.len() / arity,
            Self::Bounds(ranges) => ranges.len(),
        }
    }
}

/// A whole `<samples>` section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SamplesSection {
    /// The unit and scheme.
    pub key: SectionKey,
    /// One row per site.
    pub rows: SampleRows,
}

/// A whole `<timestamps>` section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimestampsSection {
    /// The unit and scheme.
    pub key: SectionKey,
    /// Which observation is recorded.
    pub when: When,
    /// One logical time per site; 0 when never observed.
    pub stamps: Vec<u64>,
}

/// A section of the `samples` subreport.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SamplesItem {
    /// Counters or ranges.
    Samples(SamplesSection),
    /// Logical timestamps.
    Timestamps(TimestampsSection),
}

/// One `<report id="..">` block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Subreport {
    /// `<report id="samples">`.
    Samples(Vec<SamplesItem>),
    /// Any other subreport: its lines verbatim.
    Other {
        /// The id, for example `main-backtrace`.
        id: String,
        /// The body, one entry per line.
        lines: Vec<String>,
    },
}

/// A whole feedback report held in memory. Tools that can stream use
/// [`ReportReader`] instead.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// The subreports in file order.
    pub subreports: Vec<Subreport>,
}

impl Report {
    /// Reads a whole raw report: a sequence of `<report>` blocks.
    pub fn read<R: BufRead>(input: R) -> Result<Self, ReadError> {
        let mut reader = ReportReader::new(input);
        let mut report = Report::default();
        let mut items: Vec<SamplesItem> = Vec::new();
        let mut lines: Vec<String> = Vec::new();
        let mut other_id: Option<String> = None;
        while let Some(event) = reader.next_event()? {
            match event {
                ReportEvent::ReportStart { id } => {
                    other_id = (id != SAMPLES_REPORT_ID).then(|| id.to_owned());
                }
                ReportEvent::ReportEnd => report.subreports.push(match other_id.take() {
                    Some(id) => Subreport::Other {
                        id,
                        lines: std::mem::take(&mut lines),
                    },
                    None => Subreport::Samples(std::mem::take(&mut items)),
                }),
                ReportEvent::SamplesStart(key) => {
                    if reader.subreport.is_none() {
                        return Err(bare_section(&reader));
                    }
                    let rows = match key.scheme.sample_kind() {
                        Some(SampleKind::Bounds) => SampleRows::Bounds(Vec::new()),
                        Some(SampleKind::Counters(arity)) => SampleRows::Counters {
                            arity,
                            values: Vec::new(),
                        },
                        None => SampleRows::Counters {
                            arity: 0,
                            values: Vec::new(),
                        },
                    };
                    items.push(SamplesItem::Samples(SamplesSection { key, rows }));
                }
                ReportEvent::TimestampsStart { key, when } => {
                    if reader.subreport.is_none() {
                        return Err(bare_section(&reader));
                    }
                    items.push(SamplesItem::Timestamps(TimestampsSection {
                        key,
                        when,
                        stamps: Vec::new(),
                    }));
                }
                ReportEvent::Counters(row) => {
                    if let Some(SamplesItem::Samples(SamplesSection {
                        rows: SampleRows::Counters { arity, values },
                        ..
                    })) = items.last_mut()
                    {
                        *arity = row.len();
                        values.extend_from_slice(row);
                    }
                }
                ReportEvent::Bounds { min, max } => {
                    if let Some(SamplesItem::Samples(SamplesSection {
                        rows: SampleRows::Bounds(ranges),
                        ..
                    })) = items.last_mut()
                    {
                        ranges.push((min, max));
                    }
                }
                ReportEvent::Timestamp(stamp) => {
                    if let Some(SamplesItem::Timestamps(section)) = items.last_mut() {
                        section.stamps.push(stamp);
                    }
                }
                ReportEvent::SamplesEnd { .. } | ReportEvent::TimestampsEnd { .. } => {}
                ReportEvent::Line(line) => lines.push(line.to_owned()),
            }
        }
        Ok(report)
    }

    /// Writes the report in the exact text format.
    pub fn write_to<W: Write>(&self, out: &mut W) -> io::Result<()> {
        for subreport in &self.subreports {
            match subreport {
                Subreport::Samples(items) => {
                    write_report_start(out, SAMPLES_REPORT_ID)?;
                    for item in items {
                        match item {
                            SamplesItem::Samples(section) => section.write_to(out)?,
                            SamplesItem::Timestamps(section) => section.write_to(out)?,
                        }
                    }
                }
                Subreport::Other { id, lines } => {
                    write_report_start(out, id)?;
                    for line in lines {
                        writeln!(out, "{line}")?;
                    }
                }
            }
            write_report_end(out)?;
        }
        Ok(())
    }
}

fn bare_section<R: BufRead>(reader: &ReportReader<R>) -> ReadError {
    ReadError::unexpected(
        reader.lines.line_number(),
        format!("{REPORT_START_SHAPE} around the section"),
        reader.lines.current_line(),
    )
}

/// Writes `<report id="ID">`.
pub fn write_report_start<W: Write>(out: &mut W, id: &str) -> io::Result<()> {
    writeln!(out, "<report id=\"{id}\">")
}

/// Writes `</report>`.
pub fn write_report_end<W: Write>(out: &mut W) -> io::Result<()> {
    writeln!(out, "{REPORT_END}")
}

impl SamplesSection {
    /// Writes the section.
    pub fn write_to<W: Write>(&self, out: &mut W) -> io::Result<()> {
        writeln!(
            out,
            "<samples unit=\"{}\" scheme=\"{}\">",
            self.key.unit, self.key.scheme
        )?;
        match &self.rows {
            SampleRows::Counters { arity, values } if *arity > 0 => {
                for row in values.chunks_exact(*arity) {
                    write_counter_row(out, row)?;
                }
            }
            SampleRows::Counters { .. } => {}
            SampleRows::Bounds(ranges) => {
                for (min, max) in ranges {
                    writeln!(out, "{min}\t{max}")?;
                }
            }
        }
        writeln!(out, "{SAMPLES_END}")
    }
}

/// Writes one site's counters, tab-separated, with its newline.
pub fn write_counter_row<W: Write>(out: &mut W, row: &[u64]) -> io::Result<()> {
    let mut first = true;
    for value in row {
        if !first {
            out.write_all(b"\t")?;
        }
        first = false;
        write!(out, "{value}")?;
    }
    out.write_all(b"\n")
}

impl TimestampsSection {
    /// Writes the section.
    pub fn write_to<W: Write>(&self, out: &mut W) -> io::Result<()> {
        writeln!(
            out,
            "<timestamps unit=\"{}\" scheme=\"{}\" when=\"{}\">",
            self.key.unit, self.key.scheme, self.when
        )?;
        for stamp in &self.stamps {
            writeln!(out, "{stamp}")?;
        }
        writeln!(out, "{TIMESTAMPS_END}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheme::Scheme;

    const UNIT: &str = "0123456789abcdef0123456789abcdef";

    fn error_of(text: &str) -> String {
        let mut reader = ReportReader::new(text.as_bytes());
        loop {
            match reader.next_event() {
                Ok(Some(_)) => {}
                Ok(None) => panic!("no error in {text:?}"),
                Err(error) => return error.to_string(),
            }
        }
    }

    fn sample_report() -> String {
        format!(
            "<report id=\"samples\">\n\
             <samples unit=\"{UNIT}\" scheme=\"branches\">\n0\t1\n3\t0\n</samples>\n\
             <samples unit=\"{UNIT}\" scheme=\"bounds\">\n-5\t18446744073709551615\n(nil)\t0x7ffc1a\n</samples>\n\
             <timestamps unit=\"{UNIT}\" scheme=\"branches\" when=\"first\">\n1\n0\n</timestamps>\n\
             </report>\n\
             <report id=\"main-backtrace\">\n./prog(crash+0x14)[0x401136]\n\n</report>\n"
        )
    }

    #[test]
    fn reads_and_writes_a_whole_report_exactly() {
        let text = sample_report();
        let report = Report::read(text.as_bytes()).unwrap();
        let unit = UNIT.parse().unwrap();
        assert_eq!(
            report.subreports[0],
            Subreport::Samples(vec![
                SamplesItem::Samples(SamplesSection {
                    key: SectionKey::new(unit, Scheme::Branches),
                    rows: SampleRows::Counters {
                        arity: 2,
                        values: vec![0, 1, 3, 0]
                    },
                }),
                SamplesItem::Samples(SamplesSection {
                    key: SectionKey::new(unit, Scheme::Bounds),
                    rows: SampleRows::Bounds(vec![
                        (
                            BoundValue::Integer(-5),
                            BoundValue::Integer(u64::MAX.into())
                        ),
                        (BoundValue::Pointer(0), BoundValue::Pointer(0x7ffc1a)),
                    ]),
                }),
                SamplesItem::Timestamps(TimestampsSection {
                    key: SectionKey::new(unit, Scheme::Branches),
                    when: When::First,
                    stamps: vec![1, 0],
                }),
            ])
        );
        assert_eq!(
            report.subreports[1],
            Subreport::Other {
                id: "main-backtrace".into(),
                lines: vec!["./prog(crash+0x14)[0x401136]".into(), String::new()],
            }
        );
        let mut written = Vec::new();
        report.write_to(&mut written).unwrap();
        assert_eq!(String::from_utf8(written).unwrap(), text);
    }

    #[test]
    fn bare_sections_are_a_samples_body() {
        let text = format!("<samples unit=\"{UNIT}\" scheme=\"returns\">\n1\t0\t2\n</samples>\n");
        let mut reader = ReportReader::new(text.as_bytes());
        let mut events = Vec::new();
        while let Some(event) = reader.next_event().unwrap() {
            events.push(format!("{event:?}"));
        }
        assert_eq!(
            events,
            [
                format!(
                    "SamplesStart(SectionKey {{ unit: UnitSignature({UNIT}), scheme: SchemeName(returns) }})"
                ),
                "Counters([1, 0, 2])".to_owned(),
                "SamplesEnd { n_rows: 1 }".to_owned(),
            ]
        );
        assert_eq!(
            Report::read(text.as_bytes()).unwrap_err().to_string(),
            format!(
                "line 1: expected `<report id=\"<id>\">` around the section, found \"<samples unit=\\\"{UNIT}\\\" scheme=\\\"returns\\\">\""
            )
        );
    }

    #[test]
    fn counter_arity_is_checked() {
        assert_eq!(
            error_of(&format!(
                "<samples unit=\"{UNIT}\" scheme=\"branches\">\n1\t2\t3\n"
            )),
            "line 2: expected 2 unsigned decimal counters separated by tabs, or `</samples>` closing the section opened at line 1, found \"1\\t2\\t3\""
        );
        assert_eq!(
            error_of(&format!(
                "<samples unit=\"{UNIT}\" scheme=\"new-scheme\">\n1\t2\n1\n"
            )),
            "line 3: expected 2 unsigned decimal counters separated by tabs, or `</samples>` closing the section opened at line 1, found \"1\""
        );
        assert_eq!(
            error_of(&format!(
                "<samples unit=\"{UNIT}\" scheme=\"function-entries\">\n-1\n"
            )),
            "line 2: expected 1 unsigned decimal counter, or `</samples>` closing the section opened at line 1, found \"-1\""
        );
    }

    #[test]
    fn structure_errors_name_the_line() {
        assert_eq!(
            error_of("<report id=\"main-backtrace\">\nframe\n"),
            "line 2: unexpected end of input: `<report>` opened at line 1 is not closed by `</report>`"
        );
        assert_eq!(
            error_of("<report id=\"a\">\n<report id=\"b\">\n"),
            "line 2: expected `</report>` closing the subreport opened at line 1, found \"<report id=\\\"b\\\">\""
        );
        assert_eq!(
            error_of("garbage\n"),
            "line 1: expected `<report id=\"<id>\">`, `<samples unit=\"<32 hex digits>\" scheme=\"<name>\">` or `<timestamps unit=\"<32 hex digits>\" scheme=\"<name>\" when=\"first|last\">`, found \"garbage\""
        );
        assert_eq!(
            error_of("<report id=\"samples\">\nframe\n"),
            "line 2: expected `<samples unit=\"<32 hex digits>\" scheme=\"<name>\">`, `<timestamps unit=\"<32 hex digits>\" scheme=\"<name>\" when=\"first|last\">` or `</report>`, found \"frame\""
        );
        assert_eq!(
            error_of(&format!(
                "<timestamps unit=\"{UNIT}\" scheme=\"x\" when=\"middle\">\n"
            )),
            "line 1: `when=\"middle\"` in a `<timestamps>` tag: expected `first` or `last`"
        );
        assert_eq!(
            error_of(&format!("<samples unit=\"{UNIT}\" scheme=\"x\">\n1\n")),
            "line 2: unexpected end of input: `<samples>` section opened at line 1 is not closed by `</samples>`"
        );
        assert_eq!(
            error_of("<samples unit=\"x\">\n"),
            "line 1: expected `<samples unit=\"<32 hex digits>\" scheme=\"<name>\">`, found \"<samples unit=\\\"x\\\">\""
        );
        assert_eq!(
            error_of("<report id=\"\">\n"),
            "line 1: `` is not a subreport id: expected a non-empty name without `<`, `>` or `\"`"
        );
    }

    #[test]
    fn bound_values_have_one_spelling_each() {
        for (text, value) in [
            ("0", BoundValue::Integer(0)),
            ("-9223372036854775808", BoundValue::Integer(i64::MIN.into())),
            ("18446744073709551615", BoundValue::Integer(u64::MAX.into())),
            ("(nil)", BoundValue::Pointer(0)),
            ("0xdeadbeef", BoundValue::Pointer(0xdead_beef)),
        ] {
            assert_eq!(BoundValue::parse(text), Some(value), "{text}");
            assert_eq!(value.to_string(), text);
        }
        for bad in [
            "",
            "-",
            "-0",
            "01",
            "0x",
            "0x0",
            "0x0f",
            "0xABC",
            "18446744073709551616",
            "-9223372036854775809",
            "+1",
        ] {
            assert_eq!(BoundValue::parse(bad), None, "{bad}");
        }
    }
}
