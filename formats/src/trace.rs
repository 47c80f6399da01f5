//! The `trace` subreport: the last sampled observations of each thread
//! (`schema/report-format.md`, "The `trace` subreport").
//!
//! ```text
//! version	1
//! clock	CLOCK_MONOTONIC	1000000000
//! table	0	0123456789abcdef0123456789abcdef	branches
//! thread	4242	crashing	2	17	5000000
//! 0	1	1	0	0
//! 0	0	0	3	1250
//! ```
//!
//! A header (format version, clock, the tables of `unit` and `scheme` that
//! records name by index), then one block per thread: a `thread` line and
//! its records, oldest first. A record is `TABLE SITE SLOT SEQUENCE TIME`,
//! the sequence number relative to the block's first, the time relative to
//! the thread's previous record (the block's first time for its first).
//!
//! [`TraceParser`] checks one line at a time and turns records back into
//! absolute sequence numbers and times; [`TraceReader`] feeds it from whole
//! reports or from a bare body; [`Trace`] holds one trace whole and writes
//! it back byte for byte.

// The examples show the format byte for byte, and its separator is a tab.
#![allow(clippy::tabs_in_doc_comments)]

use std::fmt;
use std::io::{self, BufRead, Write};

use crate::decimal;
use crate::error::{ReadError, ReadErrorKind, quote};
use crate::lines::LineReader;
use crate::report::{ReportEvent, ReportReader, write_report_end, write_report_start};
use crate::scheme::SampleKind;
use crate::sites::parse_key;
use crate::tags::SectionKey;

/// The id of the subreport holding the trace.
pub const TRACE_REPORT_ID: &str = "trace";

/// The version of the trace format this crate reads and writes.
pub const TRACE_VERSION: u32 = 1;

const RECORD_SHAPE: &str = "TABLE<TAB>SITE<TAB>SLOT<TAB>SEQUENCE<TAB>TIME";
const THREAD_SHAPE: &str = "`thread<TAB>TID<TAB>crashing|exiting|live|exited<TAB>RECORDS<TAB>FIRST-SEQUENCE<TAB>FIRST-TIME`";
const TABLE_SHAPE: &str = "`table<TAB>INDEX<TAB><32 hex digits><TAB><scheme>`";
const CLOCK_SHAPE: &str = "`clock<TAB>NAME<TAB>TICKS-PER-SECOND`";

/// The clock of a trace's times.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TraceClock {
    /// What the runtime read, for example `CLOCK_MONOTONIC`: 1 to 64 ASCII
    /// letters, digits, `_`, `-` and `.`.
    pub name: String,
    /// Ticks per second, at least 1: 1000000000 for nanoseconds.
    pub ticks_per_second: u64,
}

impl TraceClock {
    /// The longest clock name accepted.
    pub const MAX_NAME_LEN: usize = 64;

    /// True when `name` may name a clock.
    pub fn is_valid_name(name: &str) -> bool {
        (1..=Self::MAX_NAME_LEN).contains(&name.len())
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
    }
}

/// What became of a thread by the time the trace was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ThreadState {
    /// The thread that received the fatal signal (or that asked for an
    /// interim report); at most one per trace.
    Crashing,
    /// The thread that ended the process normally (`exit`), in the trace
    /// of the final report; at most one per trace, and never with a
    /// crashing one.
    Exiting,
    /// Any other thread still running.
    Live,
    /// A thread that had exited, whose last records were kept.
    Exited,
}

impl ThreadState {
    /// Every state, in the order the format documents them.
    pub const ALL: [Self; 4] = [Self::Crashing, Self::Exiting, Self::Live, Self::Exited];

    /// The keyword of the `thread` line.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Crashing => "crashing",
            Self::Exiting => "exiting",
            Self::Live => "live",
            Self::Exited => "exited",
        }
    }

    fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|state| state.as_str() == text)
    }

    /// Whether the thread wrote the report: crashing or exiting.
    pub const fn is_reporting(self) -> bool {
        matches!(self, Self::Crashing | Self::Exiting)
    }
}

impl fmt::Display for ThreadState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The `thread` line opening a thread's block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ThreadHeader {
    /// The kernel's thread id (`gettid`).
    pub thread: u64,
    /// Crashing, live or exited.
    pub state: ThreadState,
    /// How many record lines follow.
    pub n_records: usize,
    /// What the block's sequence deltas are relative to; the writer uses
    /// the first record's sequence number.
    pub first_sequence: u64,
    /// What the first record's time delta is relative to; the writer uses
    /// the first record's time.
    pub first_time: u64,
}

/// One sampled observation, with its sequence number and time made
/// absolute again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TraceRecord {
    /// The index of the record's (unit, scheme) in the trace's `table`
    /// lines.
    pub table: u32,
    /// The site, counted from 0 in that unit and scheme's site table.
    pub site: u32,
    /// The counter slot the observation bumped (0 for `bounds`).
    pub slot: u16,
    /// The process-wide sequence number: orders records of all threads.
    pub sequence: u64,
    /// When, in ticks of the trace's clock.
    pub time: u64,
}

/// One step of reading a trace; see [`TraceParser::feed`] and
/// [`TraceReader::next_event`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TraceEvent {
    /// `version	1`: a trace begins.
    Start,
    /// The `clock` line.
    Clock(TraceClock),
    /// A `table` line, in index order from 0.
    Table(SectionKey),
    /// A `thread` line.
    Thread(ThreadHeader),
    /// A record of the current thread.
    Record(TraceRecord),
    /// The trace ended, every block complete (only from [`TraceReader`]).
    End,
}

/// Where the parser is in the grammar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    Version,
    Clock,
    /// `table` or `thread` lines.
    Tables,
    /// Records of the open block, or the next `thread` line.
    Threads,
}

#[derive(Debug)]
struct OpenBlock {
    line: u64,
    n_records: usize,
    n_read: usize,
    first_sequence: u64,
    previous_time: u64,
}

/// Checks a trace body line by line, holding nothing per record.
///
/// Feed it the lines of one `trace` subreport's body with their line
/// numbers, then call [`finish`](Self::finish) at its end. It keeps only
/// the slot count of each table, to check records' slots.
#[derive(Debug)]
pub struct TraceParser {
    start_line: u64,
    expect: Expect,
    /// Slots of each table's scheme: `None` for a scheme this version does
    /// not know, 1 for `bounds`.
    arities: Vec<Option<usize>>,
    crashing_line: Option<u64>,
    block: Option<OpenBlock>,
}

impl TraceParser {
    /// A parser of a trace whose body starts at line `start_line`.
    pub fn new(start_line: u64) -> Self {
        Self {
            start_line,
            expect: Expect::Version,
            arities: Vec::new(),
            crashing_line: None,
            block: None,
        }
    }

    /// True when the lines fed so far are a whole trace: the header read
    /// and every block complete.
    pub fn is_complete(&self) -> bool {
        match self.expect {
            Expect::Version | Expect::Clock => false,
            Expect::Tables => true,
            Expect::Threads => self
                .block
                .as_ref()
                .is_none_or(|block| block.n_read == block.n_records),
        }
    }

    /// Checks that the trace is whole at its end, which is at `line`.
    pub fn finish(&self, line: u64) -> Result<(), ReadError> {
        let truncated =
            |message: String| Err(ReadError::new(line, ReadErrorKind::Truncated(message)));
        match (self.expect, &self.block) {
            (Expect::Version, _) => truncated(format!(
                "the trace starting at line {} has no `version` line",
                self.start_line
            )),
            (Expect::Clock, _) => truncated(format!(
                "the trace starting at line {} has no `clock` line",
                self.start_line
            )),
            (Expect::Threads, Some(block)) if block.n_read < block.n_records => truncated(format!(
                "the thread block at line {} announces {} records, {} follow",
                block.line, block.n_records, block.n_read
            )),
            _ => Ok(()),
        }
    }

    /// Reads the body's line `text`, numbered `line`.
    pub fn feed(&mut self, line: u64, text: &str) -> Result<TraceEvent, ReadError> {
        match self.expect {
            Expect::Version => {
                let version = text
                    .strip_prefix("version\t")
                    .and_then(decimal::parse::<u32>)
                    .ok_or_else(|| {
                        ReadError::unexpected(line, "`version<TAB>1` opening the trace", text)
                    })?;
                if version != TRACE_VERSION {
                    return Err(ReadError::invalid(
                        line,
                        format!(
                            "trace format version {version}: this reader knows version {TRACE_VERSION}"
                        ),
                    ));
                }
                self.expect = Expect::Clock;
                Ok(TraceEvent::Start)
            }
            Expect::Clock => {
                let clock = parse_clock(text)
                    .ok_or_else(|| ReadError::unexpected(line, CLOCK_SHAPE, text))?;
                self.expect = Expect::Tables;
                Ok(TraceEvent::Clock(clock))
            }
            Expect::Tables if text.starts_with("table\t") => self.table(line, text),
            Expect::Tables | Expect::Threads => {
                if let Some(block) = &self.block
                    && block.n_read < block.n_records
                {
                    return self.record(line, text);
                }
                if text.starts_with("thread\t") {
                    return self.thread(line, text);
                }
                let expected = match (&self.block, self.expect) {
                    (Some(block), _) => format!(
                        "{THREAD_SHAPE}: the block at line {} has its {} records",
                        block.line, block.n_records
                    ),
                    (None, Expect::Tables) => format!("{TABLE_SHAPE} or {THREAD_SHAPE}"),
                    (None, _) => THREAD_SHAPE.to_owned(),
                };
                Err(ReadError::unexpected(line, expected, text))
            }
        }
    }

    fn table(&mut self, line: u64, text: &str) -> Result<TraceEvent, ReadError> {
        let fields: Vec<&str> = text.split('\t').collect();
        let [_, index, unit, scheme] = fields[..] else {
            return Err(ReadError::unexpected(line, TABLE_SHAPE, text));
        };
        let expected_index = self.arities.len();
        if decimal::parse::<usize>(index) != Some(expected_index) {
            return Err(ReadError::invalid(
                line,
                format!(
                    "table index {}: tables are numbered in order, and this one is {expected_index}",
                    quote(index)
                ),
            ));
        }
        let key = parse_key(unit, scheme, line)?;
        self.arities.push(match key.scheme.sample_kind() {
            Some(SampleKind::Counters(arity)) => Some(arity),
            Some(SampleKind::Bounds) => Some(1),
            None => None,
        });
        Ok(TraceEvent::Table(key))
    }

    fn thread(&mut self, line: u64, text: &str) -> Result<TraceEvent, ReadError> {
        let fields: Vec<&str> = text.split('\t').collect();
        let header = match fields[..] {
            [_, thread, state, n_records, first_sequence, first_time] => (|| {
                Some(ThreadHeader {
                    thread: decimal::parse(thread)?,
                    state: ThreadState::parse(state)?,
                    n_records: decimal::parse(n_records)?,
                    first_sequence: decimal::parse(first_sequence)?,
                    first_time: decimal::parse(first_time)?,
                })
            })(),
            _ => None,
        };
        let Some(header) = header else {
            return Err(ReadError::unexpected(line, THREAD_SHAPE, text));
        };
        if header.state.is_reporting() {
            if let Some(first) = self.crashing_line {
                return Err(ReadError::invalid(
                    line,
                    format!(
                        "a second {} thread: the thread at line {first} already wrote the report",
                        header.state
                    ),
                ));
            }
            self.crashing_line = Some(line);
        }
        self.expect = Expect::Threads;
        self.block = Some(OpenBlock {
            line,
            n_records: header.n_records,
            n_read: 0,
            first_sequence: header.first_sequence,
            previous_time: header.first_time,
        });
        Ok(TraceEvent::Thread(header))
    }

    fn record(&mut self, line: u64, text: &str) -> Result<TraceEvent, ReadError> {
        let Some(block) = &mut self.block else {
            return Err(ReadError::unexpected(line, THREAD_SHAPE, text));
        };
        let mut fields = text.split('\t');
        let mut next = || fields.next();
        let parsed = (|| {
            Some((
                decimal::parse::<u32>(next()?)?,
                decimal::parse::<u32>(next()?)?,
                decimal::parse::<u16>(next()?)?,
                decimal::parse_signed::<i128>(next()?)?,
                decimal::parse_signed::<i128>(next()?)?,
            ))
        })();
        let Some((table, site, slot, sequence_delta, time_delta)) =
            parsed.filter(|_| fields.next().is_none())
        else {
            return Err(ReadError::unexpected(
                line,
                format!(
                    "a record `{RECORD_SHAPE}` (record {} of {} of the thread block at line {})",
                    block.n_read + 1,
                    block.n_records,
                    block.line
                ),
                text,
            ));
        };
        let Some(&arity) = self.arities.get(table as usize) else {
            return Err(ReadError::invalid(
                line,
                format!(
                    "the record names table {table}, but the trace has {} tables",
                    self.arities.len()
                ),
            ));
        };
        if let Some(arity) = arity
            && usize::from(slot) >= arity
        {
            return Err(ReadError::invalid(
                line,
                format!(
                    "the record names slot {slot}, but table {table}'s scheme has {arity} slots"
                ),
            ));
        }
        let absolute = |base: u64, delta: i128, what: &str| {
            u64::try_from(i128::from(base) + delta).map_err(|_| {
                ReadError::invalid(
                    line,
                    format!(
                        "the record's {what} is {base} {delta:+} = {}, outside 0 to 2^64 - 1",
                        i128::from(base) + delta
                    ),
                )
            })
        };
        let sequence = absolute(block.first_sequence, sequence_delta, "sequence")?;
        let time = absolute(block.previous_time, time_delta, "time")?;
        block.previous_time = time;
        block.n_read += 1;
        Ok(TraceEvent::Record(TraceRecord {
            table,
            site,
            slot,
            sequence,
            time,
        }))
    }
}

fn parse_clock(text: &str) -> Option<TraceClock> {
    let (name, ticks) = text.strip_prefix("clock\t")?.split_once('\t')?;
    let ticks_per_second = decimal::parse::<u64>(ticks).filter(|&ticks| ticks > 0)?;
    TraceClock::is_valid_name(name).then(|| TraceClock {
        name: name.to_owned(),
        ticks_per_second,
    })
}

/// Streams the traces of whole reports (every `<report id="trace">`, the
/// other subreports checked and skipped) or of a bare trace body, as
/// `extract-report trace` prints it: input whose first byte is `<` is read
/// as reports. Bodies of several traces may follow one another; each
/// starts with its `version` line.
#[derive(Debug)]
pub struct TraceReader<R> {
    source: Source<R>,
    parser: Option<TraceParser>,
    pending: Option<TraceEvent>,
}

#[derive(Debug)]
enum Source<R> {
    /// Not yet known: decided by the first byte.
    Unknown(Option<R>),
    Reports(ReportReader<R>),
    Body(LineReader<R>),
}

impl<R: BufRead> TraceReader<R> {
    /// A reader of `input`.
    pub fn new(input: R) -> Self {
        Self {
            source: Source::Unknown(Some(input)),
            parser: None,
            pending: None,
        }
    }

    /// The number of the line last read: the line of the event last
    /// returned, but for [`TraceEvent::End`].
    pub fn line_number(&self) -> u64 {
        match &self.source {
            Source::Unknown(_) => 0,
            Source::Reports(reader) => reader.line_number(),
            Source::Body(lines) => lines.line_number(),
        }
    }

    /// The next event, or `None` at the end of well-formed input.
    pub fn next_event(&mut self) -> Result<Option<TraceEvent>, ReadError> {
        if let Some(event) = self.pending.take() {
            return Ok(Some(event));
        }
        if let Source::Unknown(input) = &mut self.source
            && let Some(mut input) = input.take()
        {
            let first = input
                .fill_buf()
                .map_err(|error| ReadError::new(1, ReadErrorKind::Io(error)))?
                .first()
                .copied();
            self.source = if first == Some(b'<') {
                Source::Reports(ReportReader::new(input))
            } else {
                Source::Body(LineReader::new(input))
            };
        }
        match &mut self.source {
            Source::Unknown(_) => Ok(None),
            Source::Reports(reader) => loop {
                let line = reader.line_number() + 1;
                match reader.next_event()? {
                    None => return Ok(None),
                    Some(ReportEvent::ReportStart { id }) => {
                        if id == TRACE_REPORT_ID {
                            self.parser = Some(TraceParser::new(line + 1));
                        }
                    }
                    Some(ReportEvent::ReportEnd) => {
                        if let Some(parser) = self.parser.take() {
                            parser.finish(line)?;
                            return Ok(Some(TraceEvent::End));
                        }
                    }
                    Some(ReportEvent::Line(text)) => {
                        if let Some(parser) = &mut self.parser {
                            return parser.feed(line, text).map(Some);
                        }
                    }
                    Some(_) => {}
                }
            },
            Source::Body(lines) => {
                if !lines.advance()? {
                    return match self.parser.take() {
                        Some(parser) => {
                            parser.finish(lines.line_number())?;
                            Ok(Some(TraceEvent::End))
                        }
                        None => Ok(None),
                    };
                }
                let line = lines.line_number();
                let text = lines.current_line();
                match &mut self.parser {
                    Some(parser) if parser.is_complete() && text.starts_with("version\t") => {
                        let mut next = TraceParser::new(line);
                        let start = next.feed(line, text)?;
                        self.parser = Some(next);
                        self.pending = Some(start);
                        Ok(Some(TraceEvent::End))
                    }
                    Some(parser) => parser.feed(line, text).map(Some),
                    None => self
                        .parser
                        .insert(TraceParser::new(line))
                        .feed(line, text)
                        .map(Some),
                }
            }
        }
    }
}

/// One thread's block, owned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadTrace {
    /// The kernel's thread id.
    pub thread: u64,
    /// Crashing, live or exited.
    pub state: ThreadState,
    /// What sequence deltas are relative to.
    pub first_sequence: u64,
    /// What the first record's time delta is relative to.
    pub first_time: u64,
    /// The records, oldest first.
    pub records: Vec<TraceRecord>,
}

/// A whole trace held in memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trace {
    /// The clock of every time.
    pub clock: TraceClock,
    /// The (unit, scheme) of each table index.
    pub tables: Vec<SectionKey>,
    /// The thread blocks in file order.
    pub threads: Vec<ThreadTrace>,
}

impl Trace {
    /// Every trace of `input`: whole reports or bare bodies, as
    /// [`TraceReader`] reads them.
    pub fn read_all<R: BufRead>(input: R) -> Result<Vec<Self>, ReadError> {
        let mut reader = TraceReader::new(input);
        let mut traces = Vec::new();
        let mut current: Option<Trace> = None;
        while let Some(event) = reader.next_event()? {
            if event == TraceEvent::End {
                traces.extend(current.take());
            } else {
                Self::apply(&mut current, event);
            }
        }
        Ok(traces)
    }

    /// The trace of one subreport's body lines (as [`Subreport::Other`]
    /// holds them), numbered from `first_line`.
    ///
    /// [`Subreport::Other`]: crate::Subreport::Other
    pub fn from_lines<'a>(
        lines: impl IntoIterator<Item = &'a str>,
        first_line: u64,
    ) -> Result<Self, ReadError> {
        let mut parser = TraceParser::new(first_line);
        let mut current = None;
        let mut line = first_line;
        for text in lines {
            Self::apply(&mut current, parser.feed(line, text)?);
            line += 1;
        }
        parser.finish(line)?;
        // Always set: `finish` accepts only a trace whose clock was read.
        current.ok_or_else(|| {
            ReadError::new(line, ReadErrorKind::Truncated("no `clock` line".to_owned()))
        })
    }

    /// Adds what `event` says to the trace being built.
    fn apply(current: &mut Option<Trace>, event: TraceEvent) {
        match event {
            TraceEvent::Start | TraceEvent::End => {}
            TraceEvent::Clock(clock) => {
                *current = Some(Trace {
                    clock,
                    tables: Vec::new(),
                    threads: Vec::new(),
                });
            }
            TraceEvent::Table(key) => {
                if let Some(trace) = current {
                    trace.tables.push(key);
                }
            }
            TraceEvent::Thread(header) => {
                if let Some(trace) = current {
                    trace.threads.push(ThreadTrace {
                        thread: header.thread,
                        state: header.state,
                        first_sequence: header.first_sequence,
                        first_time: header.first_time,
                        records: Vec::with_capacity(header.n_records.min(1 << 16)),
                    });
                }
            }
            TraceEvent::Record(record) => {
                if let Some(thread) = current.as_mut().and_then(|t| t.threads.last_mut()) {
                    thread.records.push(record);
                }
            }
        }
    }

    /// Writes the body: header, then each block with its records as deltas.
    pub fn write_body<W: Write>(&self, out: &mut W) -> io::Result<()> {
        writeln!(out, "version\t{TRACE_VERSION}")?;
        writeln!(
            out,
            "clock\t{}\t{}",
            self.clock.name, self.clock.ticks_per_second
        )?;
        for (index, key) in self.tables.iter().enumerate() {
            writeln!(out, "table\t{index}\t{}\t{}", key.unit, key.scheme)?;
        }
        for thread in &self.threads {
            writeln!(
                out,
                "thread\t{}\t{}\t{}\t{}\t{}",
                thread.thread,
                thread.state,
                thread.records.len(),
                thread.first_sequence,
                thread.first_time
            )?;
            let mut previous_time = thread.first_time;
            for record in &thread.records {
                writeln!(
                    out,
                    "{}\t{}\t{}\t{}\t{}",
                    record.table,
                    record.site,
                    record.slot,
                    i128::from(record.sequence) - i128::from(thread.first_sequence),
                    i128::from(record.time) - i128::from(previous_time),
                )?;
                previous_time = record.time;
            }
        }
        Ok(())
    }

    /// Writes the whole `<report id="trace">` subreport.
    pub fn write_to<W: Write>(&self, out: &mut W) -> io::Result<()> {
        write_report_start(out, TRACE_REPORT_ID)?;
        self.write_body(out)?;
        write_report_end(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const UNIT: &str = "0123456789abcdef0123456789abcdef";

    fn body(rest: &str) -> String {
        format!(
            "version\t1\nclock\tCLOCK_MONOTONIC\t1000000000\ntable\t0\t{UNIT}\tbranches\ntable\t1\t{UNIT}\tbounds\n{rest}"
        )
    }

    fn error_of(text: &str) -> String {
        Trace::read_all(text.as_bytes()).unwrap_err().to_string()
    }

    #[test]
    fn reads_deltas_as_absolute_values_and_writes_them_back() {
        let text = body(
            "thread\t7\tcrashing\t3\t100\t5000\n0\t1\t1\t0\t0\n1\t0\t0\t4\t250\n0\t0\t0\t-1\t-10\nthread\t8\texited\t0\t0\t0\n",
        );
        let traces = Trace::read_all(text.as_bytes()).unwrap();
        assert_eq!(traces.len(), 1);
        let trace = &traces[0];
        assert_eq!(trace.clock.ticks_per_second, 1_000_000_000);
        assert_eq!(trace.tables.len(), 2);
        let records: Vec<(u32, u32, u16, u64, u64)> = trace.threads[0]
            .records
            .iter()
            .map(|r| (r.table, r.site, r.slot, r.sequence, r.time))
            .collect();
        assert_eq!(
            records,
            [
                (0, 1, 1, 100, 5000),
                (1, 0, 0, 104, 5250),
                (0, 0, 0, 99, 5240)
            ]
        );
        assert_eq!(trace.threads[1].state, ThreadState::Exited);
        let mut written = Vec::new();
        trace.write_body(&mut written).unwrap();
        assert_eq!(String::from_utf8(written).unwrap(), text);
    }

    #[test]
    fn reads_traces_inside_reports_and_bodies_one_after_another() {
        let one = body("thread\t7\tlive\t1\t3\t9\n0\t0\t1\t0\t0\n");
        let report = format!(
            "<report id=\"main-backtrace\">\nframe\n</report>\n<report id=\"trace\">\n{one}</report>\n<report id=\"trace\">\n{one}</report>\n"
        );
        assert_eq!(Trace::read_all(report.as_bytes()).unwrap().len(), 2);
        assert_eq!(
            Trace::read_all(format!("{one}{one}").as_bytes())
                .unwrap()
                .len(),
            2
        );
        assert_eq!(Trace::read_all(&b""[..]).unwrap().len(), 0);
        let lines: Vec<&str> = one.lines().collect();
        assert_eq!(Trace::from_lines(lines, 1).unwrap().threads.len(), 1);
        assert_eq!(
            Trace::from_lines(["version\t1"], 10)
                .unwrap_err()
                .to_string(),
            "line 11: unexpected end of input: the trace starting at line 10 has no `clock` line"
        );
    }

    #[test]
    fn errors_name_the_line_and_what_was_expected() {
        assert_eq!(
            error_of("clock\tx\t1\n"),
            "line 1: expected `version<TAB>1` opening the trace, found \"clock\\tx\\t1\""
        );
        assert_eq!(
            error_of("version\t2\n"),
            "line 1: trace format version 2: this reader knows version 1"
        );
        assert_eq!(
            error_of("version\t1\nclock\tCLOCK MONOTONIC\t1\n"),
            "line 2: expected `clock<TAB>NAME<TAB>TICKS-PER-SECOND`, found \"clock\\tCLOCK MONOTONIC\\t1\""
        );
        assert_eq!(
            error_of(&format!(
                "version\t1\nclock\tc\t1\ntable\t1\t{UNIT}\tbranches\n"
            )),
            "line 3: table index \"1\": tables are numbered in order, and this one is 0"
        );
        assert_eq!(
            error_of(&body("thread\t7\tlive\t2\t0\t0\n0\t0\t1\t0\t0\n")),
            "line 6: unexpected end of input: the thread block at line 5 announces 2 records, 1 follow"
        );
        assert_eq!(
            error_of(&body("thread\t7\tlive\t1\t0\t0\n0\t0\t2\t0\t0\n")),
            "line 6: the record names slot 2, but table 0's scheme has 2 slots"
        );
        assert_eq!(
            error_of(&body("thread\t7\tlive\t1\t0\t0\n2\t0\t0\t0\t0\n")),
            "line 6: the record names table 2, but the trace has 2 tables"
        );
        assert_eq!(
            error_of(&body("thread\t7\tlive\t1\t0\t0\n0\t0\t0\t-1\t0\n")),
            "line 6: the record's sequence is 0 -1 = -1, outside 0 to 2^64 - 1"
        );
        assert_eq!(
            error_of(&body("thread\t7\tlive\t1\t0\t0\n0\t0\t0\t-0\t0\n")),
            "line 6: expected a record `TABLE<TAB>SITE<TAB>SLOT<TAB>SEQUENCE<TAB>TIME` (record 1 of 1 of the thread block at line 5), found \"0\\t0\\t0\\t-0\\t0\""
        );
        assert_eq!(
            error_of(&body("thread\t7\tlive\t0\t0\t0\n0\t0\t0\t0\t0\n")),
            "line 6: expected `thread<TAB>TID<TAB>crashing|exiting|live|exited<TAB>RECORDS<TAB>FIRST-SEQUENCE<TAB>FIRST-TIME`: the block at line 5 has its 0 records, found \"0\\t0\\t0\\t0\\t0\""
        );
        assert_eq!(
            error_of(&body(
                "thread\t7\tcrashing\t0\t0\t0\nthread\t8\tcrashing\t0\t0\t0\n"
            )),
            "line 6: a second crashing thread: the thread at line 5 already wrote the report"
        );
        assert_eq!(
            error_of("<report id=\"trace\">\nversion\t1\n</report>\n"),
            "line 3: unexpected end of input: the trace starting at line 2 has no `clock` line"
        );
    }
}
