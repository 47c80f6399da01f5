//! `resolve-trace`: the records of `trace` subreports in the order they
//! happened across threads, joined with the site tables.
//!
//! Each trace is read whole (its records must be sorted by sequence number
//! before anything is printed; a trace is as large as the runtime's ring
//! buffers, not the run), its records checked against the tables as they
//! come, then printed one per line:
//!
//! ```text
//! thread  sequence  time         location       function  predicate
//! 4242*   17        0.000067890  /src/main.c:12  main      argc > 1
//! ```

use std::io::{BufRead, Write};

use sampler_formats::{ReadError, SchemeName, SectionKey, TraceClock, TraceEvent, TraceReader};

use crate::site_store::{SiteStore, SiteTable};

/// The header line `resolve_trace` prints before the first record.
pub const TRACE_HEADER: &str = "thread\tsequence\ttime\tlocation\tfunction\tpredicate";

/// Why a trace could not be resolved.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TraceError {
    /// The input is not a well-formed report or trace.
    #[error("standard input")]
    Read(#[from] ReadError),
    /// No site table was given for the unit and scheme a record names.
    #[error(
        "standard input: line {line}: no site table for {key}\n\nhint: name the binary, library or `.sites` file built from that unit"
    )]
    NoSiteTable {
        /// The table's unit and scheme.
        key: SectionKey,
        /// The line of the first record naming it.
        line: u64,
    },
    /// A record names a site past the end of its table.
    #[error(
        "standard input: line {line}: the record names site {site} of {key}, but the site table from `{origin}` has {n_sites} sites"
    )]
    NoSuchSite {
        /// The table's unit and scheme.
        key: SectionKey,
        /// The record's line.
        line: u64,
        /// The site the record names.
        site: u32,
        /// Sites in the table.
        n_sites: usize,
        /// Where the table came from.
        origin: String,
    },
    /// Writing the output failed.
    #[error("writing the output")]
    Write(#[from] std::io::Error),
}

/// One record, its table found.
struct Entry {
    block: usize,
    sequence: u64,
    time: u64,
    table: usize,
    site: u32,
    slot: u16,
}

/// The trace being read.
#[derive(Default)]
struct Pending<'s> {
    clock: Option<TraceClock>,
    tables: Vec<(SectionKey, Option<SiteTable<'s>>)>,
    /// Thread id and whether it is the crashing thread, per block.
    blocks: Vec<(u64, bool)>,
    entries: Vec<Entry>,
}

/// Reads whole reports or bare trace bodies from `input` and writes, for
/// each trace, its records sorted by sequence number, one per line:
/// `thread TAB sequence TAB time TAB file:line TAB function TAB predicate`,
/// after [`TRACE_HEADER`] (once) and separated by an empty line from the
/// previous trace. `thread` is the thread id, followed by `*` for the
/// crashing thread; `time` is in seconds since the trace's first record
/// (in sequence order); `predicate` is the text of the counter slot the
/// observation bumped (see [`slot_text`]). Returns the number of traces.
pub fn resolve_trace(
    store: &SiteStore,
    input: impl BufRead,
    mut output: impl Write,
) -> Result<usize, TraceError> {
    let mut reader = TraceReader::new(input);
    let mut pending = Pending::default();
    let mut n_traces = 0;
    while let Some(event) = reader.next_event()? {
        match event {
            TraceEvent::Start => pending = Pending::default(),
            TraceEvent::Clock(clock) => pending.clock = Some(clock),
            TraceEvent::Table(key) => {
                let table = store.get(&key);
                pending.tables.push((key, table));
            }
            TraceEvent::Thread(header) => pending
                .blocks
                .push((header.thread, header.state.is_reporting())),
            TraceEvent::Record(record) => {
                let line = reader.line_number();
                let table = record.table as usize;
                // The parser checked the index against the `table` lines.
                let Some((key, found)) = pending.tables.get(table) else {
                    continue;
                };
                let Some(found) = found else {
                    return Err(TraceError::NoSiteTable {
                        key: key.clone(),
                        line,
                    });
                };
                if record.site as usize >= found.n_sites() {
                    return Err(TraceError::NoSuchSite {
                        key: key.clone(),
                        line,
                        site: record.site,
                        n_sites: found.n_sites(),
                        origin: found.origin().to_owned(),
                    });
                }
                pending.entries.push(Entry {
                    block: pending.blocks.len().saturating_sub(1),
                    sequence: record.sequence,
                    time: record.time,
                    table,
                    site: record.site,
                    slot: record.slot,
                });
            }
            TraceEvent::End => {
                if n_traces == 0 {
                    writeln!(output, "{TRACE_HEADER}")?;
                } else {
                    writeln!(output)?;
                }
                n_traces += 1;
                write_trace(&mut output, &mut std::mem::take(&mut pending))?;
            }
        }
    }
    output.flush()?;
    Ok(n_traces)
}

fn write_trace(output: &mut impl Write, trace: &mut Pending<'_>) -> std::io::Result<()> {
    // Stable: records of equal sequence numbers (which a sane runtime never
    // writes) keep the file's order.
    trace.entries.sort_by_key(|entry| entry.sequence);
    let ticks_per_second = trace.clock.as_ref().map_or(1, |c| c.ticks_per_second);
    let Some(first_time) = trace.entries.first().map(|entry| entry.time) else {
        return Ok(());
    };
    for entry in &trace.entries {
        let (key, table) = &trace.tables[entry.table];
        let Some(table) = table else { continue };
        let (thread, crashing) = trace.blocks[entry.block];
        let fields: Vec<&str> = table.site_text(entry.site as usize).split('\t').collect();
        let field = |index: usize| fields.get(index).copied().unwrap_or("?");
        let function = field(2);
        writeln!(
            output,
            "{thread}{}\t{}\t{}\t{}:{}\t{function}\t{}",
            if crashing { "*" } else { "" },
            entry.sequence,
            seconds(
                i128::from(entry.time) - i128::from(first_time),
                ticks_per_second
            ),
            field(0),
            field(1),
            slot_text(
                &key.scheme,
                entry.slot,
                fields.get(4..).unwrap_or(&[]),
                function
            ),
        )?;
    }
    Ok(())
}

/// `ticks` of a clock of `ticks_per_second` as seconds, with as many
/// decimals as one tick needs (at most 9: nanoseconds), truncated.
pub fn seconds(ticks: i128, ticks_per_second: u64) -> String {
    let frequency = u128::from(ticks_per_second.max(1));
    let decimals = (frequency - 1)
        .checked_ilog10()
        .map_or(0, |log| log + 1)
        .min(9);
    let magnitude = ticks.unsigned_abs();
    let whole = magnitude / frequency;
    let fraction = magnitude % frequency * 10u128.pow(decimals) / frequency;
    let sign = if ticks < 0 { "-" } else { "" };
    if decimals == 0 {
        format!("{sign}{whole}")
    } else {
        format!(
            "{sign}{whole}.{fraction:0width$}",
            width = decimals as usize
        )
    }
}

/// The text of the observation `slot` of a site: the predicate made of
/// that slot alone, as the analysis writes it
/// ([`sampler_formats::predicates::slot_text`]).
pub fn slot_text(scheme: &SchemeName, slot: u16, fields: &[&str], function: &str) -> String {
    sampler_formats::predicates::slot_text(scheme.as_str(), slot, fields, function)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_have_the_clock_s_precision() {
        assert_eq!(seconds(0, 1_000_000_000), "0.000000000");
        assert_eq!(seconds(1_500_000_001, 1_000_000_000), "1.500000001");
        assert_eq!(seconds(-250, 1_000_000_000), "-0.000000250");
        assert_eq!(seconds(1234, 1000), "1.234");
        assert_eq!(seconds(7, 1), "7");
        assert_eq!(seconds(5, 10), "0.5");
        // A 3 GHz counter: nanoseconds, truncated.
        assert_eq!(seconds(3_000_000_005, 3_000_000_000), "1.000000001");
        assert_eq!(seconds(i128::from(u64::MAX), u64::MAX), "1.000000000");
        assert_eq!(seconds(-i128::from(u64::MAX), 7), "-2635249153387078802.1");
    }

    #[test]
    fn each_slot_reads_as_the_analysis_writes_its_predicate() {
        let text = |scheme: &str, slot, fields: &[&str]| {
            slot_text(&scheme.parse().unwrap(), slot, fields, "parse")
        };
        assert_eq!(text("branches", 0, &["len > cap"]), "!(len > cap)");
        assert_eq!(text("branches", 1, &["len > cap"]), "len > cap");
        assert_eq!(text("returns", 0, &["fopen"]), "fopen() < 0");
        assert_eq!(text("returns", 1, &["fopen"]), "fopen() == 0");
        assert_eq!(text("returns", 2, &["fopen"]), "fopen() > 0");
        let pair = ["n", "local", "direct", "limit", "local-init"];
        assert_eq!(text("scalar-pairs", 0, &pair), "n < limit");
        assert_eq!(text("scalar-pairs", 1, &pair), "n == limit");
        assert_eq!(text("scalar-pairs", 2, &pair), "n > limit");
        assert_eq!(
            text("float-kinds", 4, &["x", "local", "direct"]),
            "x is NaN"
        );
        assert_eq!(
            text("g-object-unref", 1, &["obj"]),
            "g_object_unref(obj): ref_count 1"
        );
        assert_eq!(
            text("atoms", 1, &["*p", "write"]),
            "*p (write): last access by another thread"
        );
        assert_eq!(text("function-entries", 0, &[]), "parse() reached");
        assert_eq!(text("bounds", 0, &["n", "local", "direct"]), "n assigned");
        assert_eq!(text("yields", 1, &["x"]), "x slot 1");
        assert_eq!(
            text("path-profiles", 7, &["p1", "extra"]),
            "p1 extra slot 7"
        );
        assert_eq!(text("branches", 1, &[]), "?");
    }
}
