//! Joins the dynamic sections of reports with the static site tables.
//!
//! Every `<samples>` (or `<timestamps>`) section on the input is matched to
//! the site table with the same unit and scheme, and repeated sections of
//! one key are merged: a plugin loaded and unloaded twice reports twice,
//! and several runs piped together add up. Output waits for the end of the
//! input, since a later section may still add to an earlier one; memory is
//! one accumulator per site of the tables seen, whatever the number of
//! reports.

use std::collections::HashMap;
use std::hash::Hash;
use std::io::{BufRead, Write};

use sampler_formats::{
    BoundValue, ReadError, ReportEvent, ReportReader, SampleKind, SectionKey, When,
    write_counter_row,
};

use crate::site_store::{SiteStore, SiteTable};

/// Why a join failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JoinError {
    /// The input is not a well-formed report.
    #[error("standard input")]
    Read(#[from] ReadError),
    /// No site table was given for a section's unit and scheme.
    #[error(
        "standard input: line {line}: no site table for {key}\n\nhint: name the binary, library or `.sites` file built from that unit"
    )]
    NoSiteTable {
        /// The section's unit and scheme.
        key: SectionKey,
        /// The line of the section's start tag.
        line: u64,
    },
    /// A section has a different number of lines than its site table.
    #[error(
        "standard input: line {line}: the `<{tag}>` section for {key} has {n_rows} lines, but the site table from `{origin}` has {n_sites} sites"
    )]
    RowCountMismatch {
        /// `samples` or `timestamps`.
        tag: &'static str,
        /// The section's unit and scheme.
        key: SectionKey,
        /// The line of the section's end tag.
        line: u64,
        /// Lines in the section.
        n_rows: usize,
        /// Sites in the table.
        n_sites: usize,
        /// Where the table came from.
        origin: String,
    },
    /// Sections of one scheme unknown to this version disagree on how many
    /// counters a site has.
    #[error(
        "standard input: line {line}: {key} has {found} counters per site here but {expected} in an earlier section"
    )]
    ArityMismatch {
        /// The section's unit and scheme.
        key: SectionKey,
        /// The offending line.
        line: u64,
        /// Counters per site in the earlier section.
        expected: usize,
        /// Counters per site here.
        found: usize,
    },
    /// Summing a counter across sections exceeded 2^64 - 1.
    #[error(
        "standard input: line {line}: {key}: the sum of site {site}'s counters exceeds 2^64 - 1"
    )]
    Overflow {
        /// The section's unit and scheme.
        key: SectionKey,
        /// The offending line.
        line: u64,
        /// The site, counted from 0.
        site: usize,
    },
    /// Writing the output failed.
    #[error("writing the output")]
    Write(#[from] std::io::Error),
}

/// One merged (key, table) pair, in order of first appearance.
struct Slot<'s, K, V> {
    key: K,
    section_key: SectionKey,
    table: SiteTable<'s>,
    values: V,
}

/// The bookkeeping common to both joins: finding tables, merging repeated
/// keys, counting rows against sites.
struct Join<'s, K, V> {
    store: &'s SiteStore,
    slots: Vec<Slot<'s, K, V>>,
    index: HashMap<K, usize>,
    open: Option<OpenSection>,
}

struct OpenSection {
    slot: usize,
    n_rows: usize,
}

impl<'s, K: Clone + Eq + Hash, V> Join<'s, K, V> {
    fn new(store: &'s SiteStore) -> Self {
        Self {
            store,
            slots: Vec::new(),
            index: HashMap::new(),
            open: None,
        }
    }

    fn start(
        &mut self,
        key: K,
        section_key: SectionKey,
        line: u64,
        new_values: impl FnOnce(usize) -> V,
    ) -> Result<(), JoinError> {
        let slot = match self.index.get(&key) {
            Some(&slot) => slot,
            None => {
                let Some(table) = self.store.get(&section_key) else {
                    return Err(JoinError::NoSiteTable {
                        key: section_key,
                        line,
                    });
                };
                self.slots.push(Slot {
                    key: key.clone(),
                    section_key,
                    table,
                    values: new_values(table.n_sites()),
                });
                self.index.insert(key, self.slots.len() - 1);
                self.slots.len() - 1
            }
        };
        self.open = Some(OpenSection { slot, n_rows: 0 });
        Ok(())
    }

    /// The open section's slot and the index of the row just read, or
    /// `None` once the rows outnumber the sites (reported at the end tag,
    /// where both counts are known) or outside a joined section.
    fn row(&mut self) -> Option<(&mut Slot<'s, K, V>, usize)> {
        let open = self.open.as_mut()?;
        let row = open.n_rows;
        open.n_rows += 1;
        let slot = &mut self.slots[open.slot];
        (row < slot.table.n_sites()).then_some((slot, row))
    }

    fn end(&mut self, tag: &'static str, line: u64) -> Result<(), JoinError> {
        let Some(open) = self.open.take() else {
            return Ok(());
        };
        let slot = &self.slots[open.slot];
        let n_sites = slot.table.n_sites();
        if open.n_rows != n_sites {
            return Err(JoinError::RowCountMismatch {
                tag,
                key: slot.section_key.clone(),
                line,
                n_rows: open.n_rows,
                n_sites,
                origin: slot.table.origin().to_owned(),
            });
        }
        Ok(())
    }
}

/// Merged values of one samples key.
enum SampleValues {
    /// `arity` sums per site; `arity` is 0 until a row of an unknown
    /// scheme has been seen.
    Counters { arity: usize, sums: Vec<u64> },
    /// Running (min, max) per site; `None` until seen.
    Bounds(Vec<Option<(BoundValue, BoundValue)>>),
}

/// Reads a samples subreport or whole raw reports from `input` and writes
/// one line per site to `output`:
/// `origin TAB unit TAB scheme TAB site fields… TAB values…`, where
/// `origin` is the file the site table came from. Sections of one key are
/// merged: counters summed, `bounds` minima and maxima combined. Keys are
/// written in order of first appearance, sites in table order.
pub fn resolve_samples(
    store: &SiteStore,
    input: impl BufRead,
    output: impl Write,
) -> Result<(), JoinError> {
    resolve_samples_estimated(store, input, output, None)
}

/// [`resolve_samples`], with `estimate: Some(D)` writing each counter as
/// an estimate of the true count of a run (or the runs piped together)
/// sampled at sparsity D: the count divided by its site's observation
/// probability `1 − (1 − 1/D)^scale` (`scale` from the binaries'
/// `.debug_site_scales`, else 1), with one decimal; a site counted on every
/// execution (scale 0) keeps its exact count.
pub fn resolve_samples_estimated(
    store: &SiteStore,
    input: impl BufRead,
    mut output: impl Write,
    estimate: Option<u32>,
) -> Result<(), JoinError> {
    let mut reader = ReportReader::new(input);
    let mut join: Join<'_, SectionKey, SampleValues> = Join::new(store);
    loop {
        // Every event is one line, so this is the line of the next event;
        // asking the reader later would clash with the event's borrow.
        let line = reader.line_number() + 1;
        let Some(event) = reader.next_event()? else {
            break;
        };
        match event {
            ReportEvent::SamplesStart(key) => {
                let kind = key.scheme.sample_kind();
                join.start(key.clone(), key, line, |n_sites| match kind {
                    Some(SampleKind::Bounds) => SampleValues::Bounds(vec![None; n_sites]),
                    Some(SampleKind::Counters(arity)) => SampleValues::Counters {
                        arity,
                        sums: vec![0; arity * n_sites],
                    },
                    None => SampleValues::Counters {
                        arity: 0,
                        sums: Vec::new(),
                    },
                })?;
            }
            ReportEvent::Counters(row) => {
                let Some((slot, site)) = join.row() else {
                    continue;
                };
                let SampleValues::Counters { arity, sums } = &mut slot.values else {
                    continue;
                };
                if *arity == 0 {
                    *arity = row.len();
                    *sums = vec![0; row.len() * slot.table.n_sites()];
                }
                if *arity != row.len() {
                    return Err(JoinError::ArityMismatch {
                        key: slot.section_key.clone(),
                        line,
                        expected: *arity,
                        found: row.len(),
                    });
                }
                let sums = &mut sums[site * row.len()..][..row.len()];
                for (sum, value) in sums.iter_mut().zip(row) {
                    *sum = sum.checked_add(*value).ok_or_else(|| JoinError::Overflow {
                        key: slot.section_key.clone(),
                        line,
                        site,
                    })?;
                }
            }
            ReportEvent::Bounds { min, max } => {
                let Some((slot, site)) = join.row() else {
                    continue;
                };
                if let SampleValues::Bounds(ranges) = &mut slot.values {
                    let merged = match ranges[site] {
                        None => (min, max),
                        // Ties keep the value already held.
                        Some((old_min, old_max)) => (
                            std::cmp::min_by_key(old_min, min, |v| v.numeric()),
                            std::cmp::max_by_key(max, old_max, |v| v.numeric()),
                        ),
                    };
                    ranges[site] = Some(merged);
                }
            }
            ReportEvent::SamplesEnd { .. } => join.end("samples", line)?,
            _ => {}
        }
    }
    for slot in &join.slots {
        let table = slot.table;
        // The same for every site of the table: formatted once, not per line.
        let prefix = format!(
            "{}\t{}\t{}\t",
            table.origin(),
            slot.section_key.unit,
            slot.section_key.scheme
        );
        for site in 0..table.n_sites() {
            output.write_all(prefix.as_bytes())?;
            output.write_all(table.site_text(site).as_bytes())?;
            output.write_all(b"\t")?;
            match &slot.values {
                SampleValues::Counters { arity, sums } => {
                    let row = &sums[site * arity..][..*arity];
                    match estimate {
                        None => write_counter_row(&mut output, row)?,
                        Some(sparsity) => {
                            let probability = sampler_formats::observation_probability(
                                store.scale(&slot.section_key, site as u32),
                                sparsity,
                            );
                            let estimates: Vec<String> = row
                                .iter()
                                .map(|&count| format!("{:.1}", count as f64 / probability))
                                .collect();
                            writeln!(output, "{}", estimates.join("\t"))?;
                        }
                    }
                }
                SampleValues::Bounds(ranges) => {
                    if let Some((min, max)) = ranges[site] {
                        writeln!(output, "{min}\t{max}")?;
                    }
                }
            }
        }
    }
    output.flush()?;
    Ok(())
}

/// Reads `<timestamps>` sections from `input` and writes one line per site
/// to `output`, timestamp first so that `sort -n` gives the order of
/// observation, as the original `resolveTimestamps` did:
/// `timestamp TAB origin TAB unit TAB scheme TAB first|last TAB site fields…`.
/// Repeated sections merge: `first` keeps the earliest non-zero stamp,
/// `last` the latest; 0 means never observed.
pub fn resolve_timestamps(
    store: &SiteStore,
    input: impl BufRead,
    mut output: impl Write,
) -> Result<(), JoinError> {
    let mut reader = ReportReader::new(input);
    let mut join: Join<'_, (SectionKey, When), Vec<u64>> = Join::new(store);
    loop {
        // Every event is one line, so this is the line of the next event;
        // asking the reader later would clash with the event's borrow.
        let line = reader.line_number() + 1;
        let Some(event) = reader.next_event()? else {
            break;
        };
        match event {
            ReportEvent::TimestampsStart { key, when } => {
                join.start((key.clone(), when), key, line, |n_sites| vec![0; n_sites])?;
            }
            ReportEvent::Timestamp(stamp) => {
                let Some((slot, site)) = join.row() else {
                    continue;
                };
                let merged = &mut slot.values[site];
                *merged = match (slot.key.1, *merged, stamp) {
                    (_, 0, new) | (_, new, 0) => new,
                    (When::First, old, new) => old.min(new),
                    (When::Last, old, new) => old.max(new),
                };
            }
            ReportEvent::TimestampsEnd { .. } => join.end("timestamps", line)?,
            _ => {}
        }
    }
    for slot in &join.slots {
        let table = slot.table;
        let middle = format!(
            "\t{}\t{}\t{}\t{}\t",
            table.origin(),
            slot.section_key.unit,
            slot.section_key.scheme,
            slot.key.1
        );
        for (site, stamp) in slot.values.iter().enumerate() {
            write!(output, "{stamp}")?;
            output.write_all(middle.as_bytes())?;
            output.write_all(table.site_text(site).as_bytes())?;
            output.write_all(b"\n")?;
        }
    }
    output.flush()?;
    Ok(())
}
