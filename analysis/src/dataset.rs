//! Runs turned into per-predicate bitmaps, with sites merged across builds.
//!
//! Site tables arrive first (one per unit and scheme); every site line is
//! mapped to a *merged site*, identified by scheme, file, line, function
//! and the scheme's fields, so the same source site in two builds of an
//! application is one site. Runs are then added in order, each numbered;
//! only the non-zero rows of a run's samples are visited.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

use roaring::RoaringBitmap;
use sampler_formats::{SampleKind, SchemeName, SectionKey, SiteTableReader};
use sampler_storage::counters::{DecodeError, RowVisitor, Rows, RunSamples, walk};

use crate::predicates::{PredicateShape, shapes};
use crate::ranking::Observations;

/// A merged site: where it is and what it says.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Site {
    /// The scheme.
    pub scheme: String,
    /// The source file.
    pub file: String,
    /// The line.
    pub line: u32,
    /// The function.
    pub function: String,
    /// The scheme's own fields (predicate text, callee, operands, ...).
    pub fields: Vec<String>,
}

/// One predicate: its site and shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Predicate {
    /// Index into [`Dataset::sites`].
    pub site: usize,
    /// Which slots make it true, and how it is written.
    pub shape: PredicateShape,
}

impl Predicate {
    /// The predicate as C text; a tail predicate (see [`tail_scheme`])
    /// says so after it.
    pub fn text(&self, sites: &[Site]) -> String {
        let site = &sites[self.site];
        let fields: Vec<&str> = site.fields.iter().map(String::as_str).collect();
        let text = self.shape.text.render(&fields, &site.function);
        match split_tail(&site.scheme) {
            (_, Some(events)) => format!("{text} in the last {events} events"),
            (_, None) => text,
        }
    }
}

/// The scheme name of the *tail* predicates of `scheme` over the last
/// `events` sampled observations of a run (`sampler-analyze --last K`,
/// from the runs' `trace` subreports): `branches--last64`. Real scheme
/// names have no double dash.
pub fn tail_scheme(scheme: &str, events: u32) -> String {
    format!("{scheme}{TAIL_SEPARATOR}{events}")
}

const TAIL_SEPARATOR: &str = "--last";

/// A scheme name's base scheme, and its window for a tail scheme.
pub fn split_tail(scheme: &str) -> (&str, Option<u32>) {
    match scheme.split_once(TAIL_SEPARATOR) {
        Some((base, events)) => match events.parse() {
            Ok(events) => (base, Some(events)),
            Err(_) => (scheme, None),
        },
        None => (scheme, None),
    }
}

/// Per (unit, scheme) with a table, the merged site of each row.
type Tables = HashMap<SectionKey, Arc<[u32]>>;

/// Everything the ranking reads.
#[derive(Debug, Default)]
pub struct Dataset {
    /// Merged sites.
    pub sites: Vec<Site>,
    /// Predicates, those of one site contiguous.
    pub predicates: Vec<Predicate>,
    /// Per predicate, where it was observed and held.
    pub observations: Vec<Observations>,
    /// Every run added.
    pub runs: RoaringBitmap,
    /// The runs that failed.
    pub failing: RoaringBitmap,
    /// Sections of runs with no site table (their build not registered).
    pub unresolved_sections: u64,
    site_index: HashMap<Site, usize>,
    site_predicates: Vec<Range<usize>>,
    tables: Arc<Tables>,
    /// Runs added by [`add_batch`](Self::add_batch) where each merged site
    /// was observed, not yet copied to its predicates (by
    /// [`finish`](Self::finish)); `dirty` lists the sites with some.
    site_observed: Vec<RoaringBitmap>,
    dirty: Vec<u32>,
    /// Per merged site, the rows of runs of `pending_block` not yet in
    /// bitmaps: (run, mask of its non-zero slots), in run order;
    /// `pending_sites` lists the sites with some.
    pending: Vec<Vec<(u32, u16)>>,
    pending_sites: Vec<u32>,
    pending_block: Option<u32>,
    /// With `--last K`: each counter table is also the table of its tail
    /// scheme, whose predicates held among a run's last K observations.
    tail: Option<u32>,
    /// Per merged site, the countdown scale it was built with
    /// ([`record_scales`](Self::record_scales); 1 by default).
    site_scales: Vec<u32>,
    /// How many runs were sampled at each sparsity (runs whose sparsity
    /// the loader knows).
    pub sparsities: std::collections::BTreeMap<u32, u64>,
}

/// Rows are turned into bitmaps per block of 2^15 runs (half a roaring
/// container): at most that many runs' rows are held.
const BLOCK_BITS: u32 = 15;

impl Dataset {
    /// An empty dataset.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty dataset whose site tables also make the tail predicates of
    /// the last `events` observations of each run ([`tail_scheme`]).
    pub fn with_tail(events: u32) -> Self {
        Self {
            tail: Some(events),
            ..Self::default()
        }
    }

    /// The window of the tail predicates, if any.
    pub fn tail(&self) -> Option<u32> {
        self.tail
    }

    /// Adds the site tables in `text` (one or more `<sites>` sections).
    pub fn add_site_tables(&mut self, text: &str) -> Result<(), sampler_formats::ReadError> {
        let mut reader = SiteTableReader::new(text.as_bytes());
        while let Some(section) = reader.next_section()? {
            let scheme = section.key.scheme.as_str().to_owned();
            let ids: Arc<[u32]> = section
                .sites
                .iter()
                .map(|site| {
                    let line = site.to_string();
                    self.merged(Site {
                        scheme: scheme.clone(),
                        file: site.file.to_string(),
                        line: site.line,
                        function: site.function.to_string(),
                        fields: line.split('\t').skip(4).map(str::to_owned).collect(),
                    })
                })
                .collect();
            let tail = self.tail.filter(|_| {
                matches!(
                    section.key.scheme.sample_kind(),
                    Some(SampleKind::Counters(_))
                )
            });
            if let Some(events) = tail {
                let tail_ids: Arc<[u32]> = ids
                    .iter()
                    .map(|&id| {
                        let site = Site {
                            scheme: tail_scheme(&scheme, events),
                            ..self.sites[id as usize].clone()
                        };
                        self.merged(site)
                    })
                    .collect();
                if let Ok(tail_name) = tail_scheme(&scheme, events).parse::<SchemeName>() {
                    let key = SectionKey {
                        unit: section.key.unit,
                        scheme: tail_name,
                    };
                    Arc::make_mut(&mut self.tables).insert(key, tail_ids);
                }
            }
            Arc::make_mut(&mut self.tables).insert(section.key, ids);
        }
        Ok(())
    }

    fn merged(&mut self, site: Site) -> u32 {
        if let Some(&id) = self.site_index.get(&site) {
            return id as u32;
        }
        let id = self.sites.len();
        // Unknown schemes have no known arity until a run shows one: they
        // get no predicates.
        let (base, _) = split_tail(&site.scheme);
        let arity = match base
            .parse::<SchemeName>()
            .ok()
            .and_then(|name| name.sample_kind())
        {
            Some(SampleKind::Counters(arity)) => arity,
            _ => 0,
        };
        self.site_scales.push(1);
        let start = self.predicates.len();
        for shape in shapes(base, arity) {
            self.predicates.push(Predicate { site: id, shape });
            self.observations.push(Observations::default());
        }
        self.site_predicates.push(start..self.predicates.len());
        self.site_index.insert(site.clone(), id);
        self.sites.push(site);
        u32::try_from(id).expect("fewer than 2^32 sites")
    }

    /// Records the scales the sites of the tables added so far were built
    /// with (`sampler-cc -fsampler-rates`, `.debug_site_scales`); sites of
    /// units without scales keep 1. A tail table's sites take their base
    /// site's scale.
    pub fn record_scales(&mut self, scales: &sampler_formats::SiteScales) {
        for (key, ids) in self.tables.iter() {
            let (base, _) = split_tail(key.scheme.as_str());
            let Ok(scheme) = base.parse::<SchemeName>() else {
                continue;
            };
            let base_key = SectionKey {
                unit: key.unit,
                scheme,
            };
            for (row, &id) in ids.iter().enumerate() {
                self.site_scales[id as usize] = scales.scale(&base_key, row as u32);
            }
        }
    }

    /// The most common sparsity among the runs, when known.
    pub fn typical_sparsity(&self) -> Option<u32> {
        self.sparsities
            .iter()
            .max_by_key(|&(&sparsity, &runs)| (runs, std::cmp::Reverse(sparsity)))
            .map(|(&sparsity, _)| sparsity)
    }

    /// How likely an execution of merged site `site` was to be observed in
    /// a run at the typical sparsity: `1 − (1 − 1/D)^scale`, 1 for a site
    /// counted on every execution; `None` when no run's sparsity is known.
    pub fn observation_rate(&self, site: usize) -> Option<f64> {
        let sparsity = self.typical_sparsity()?;
        let scale = self.site_scales.get(site).copied().unwrap_or(1);
        Some(sampler_formats::observation_probability(scale, sparsity))
    }

    /// Counts `runs` more runs sampled at `sparsity`.
    pub fn note_sparsity(&mut self, sparsity: u32, runs: u64) {
        *self.sparsities.entry(sparsity).or_default() += runs;
    }

    /// Whether a table for `key` was added.
    pub fn has_table(&self, key: &SectionKey) -> bool {
        self.tables.contains_key(key)
    }

    /// Adds run number `run` (numbers must increase), which failed or not
    /// (`None`: neither, left out of the analysis), from its samples' non-zero
    /// rows. `bounds` sections hold no predicates.
    pub fn add_run(&mut self, run: u32, failed: Option<bool>, samples: &RunSamples) {
        let mut batch = self.batch();
        if batch.start_run(run, failed) {
            batch.add_samples(samples);
        }
        self.add_batch(batch);
        self.finish();
    }

    /// [`add_run`](Self::add_run) from a run's stored compact counters,
    /// without building its samples.
    pub fn add_run_blob(
        &mut self,
        run: u32,
        failed: Option<bool>,
        blob: &[u8],
    ) -> Result<(), DecodeError> {
        let mut batch = self.batch();
        let result = if batch.start_run(run, failed) {
            walk(blob, &mut batch)
        } else {
            Ok(())
        };
        self.add_batch(batch);
        self.finish();
        result
    }

    /// An empty batch of runs, read against the site tables added so far;
    /// it may be filled on another thread, then given to
    /// [`add_batch`](Self::add_batch).
    pub fn batch(&self) -> Batch {
        Batch::new(Arc::clone(&self.tables), self.tail)
    }

    /// Adds the runs of `batch` (their numbers above those of earlier
    /// batches). Where their sites were observed reaches the predicates'
    /// [`observations`](Self::observations) at [`finish`](Self::finish);
    /// where they held, at once.
    pub fn add_batch(&mut self, batch: Batch) {
        for (&sparsity, &runs) in &batch.sparsities {
            self.note_sparsity(sparsity, runs);
        }
        for &(run, failed) in &batch.runs {
            self.runs.insert(run);
            if failed {
                self.failing.insert(run);
            }
        }
        self.unresolved_sections += batch.unresolved_sections;
        // Each row goes to its site's pending rows, merged with the row of
        // the same site in the same run (two units' sites merged into one);
        // they become bitmaps a block of runs at a time.
        if self.pending.len() < self.sites.len() {
            self.pending.resize_with(self.sites.len(), Vec::new);
        }
        let Some((first, last)) = batch.span() else {
            return;
        };
        let block = first >> BLOCK_BITS;
        if block != last >> BLOCK_BITS {
            for entry in &batch.entries {
                let block = entry.run >> BLOCK_BITS;
                if self.pending_block != Some(block) {
                    self.flush();
                    self.pending_block = Some(block);
                }
                self.pend(entry.site as usize, &[(entry.run, entry.mask)]);
            }
            return;
        }
        if self.pending_block != Some(block) {
            self.flush();
            self.pending_block = Some(block);
        }
        let mut batch = batch;
        batch.group();
        for &(site, start, end) in &batch.groups {
            self.pend(site as usize, &batch.grouped[start as usize..end as usize]);
        }
    }

    /// Adds `rows` (in run order, each run once) to the pending rows of `site`.
    fn pend(&mut self, site: usize, rows: &[(u32, u16)]) {
        let pending = &mut self.pending[site];
        let mut rows = rows;
        match (pending.last_mut(), rows.first()) {
            (Some((run, mask)), Some(&(first, more))) if *run == first => {
                *mask |= more;
                rows = &rows[1..];
            }
            (None, Some(_)) => self.pending_sites.push(site as u32),
            _ => {}
        }
        pending.extend_from_slice(rows);
    }

    /// Turns the pending rows into bitmaps: each site's observed runs (in
    /// `site_observed`) and its predicates' held runs. The rows of a site
    /// are set in a bit array spanning them, read by roaring a container
    /// at a time; rows are all in one block, so the new containers are
    /// added whole or merged once with those of the block's other half.
    fn flush(&mut self) {
        if self.site_observed.len() < self.sites.len() {
            self.site_observed
                .resize_with(self.sites.len(), RoaringBitmap::new);
        }
        let mut sites = std::mem::take(&mut self.pending_sites);
        sites.sort_unstable();
        // Two threads, each over half the sites and their predicates.
        let middle = sites.len() / 2;
        let site_split = sites
            .get(middle)
            .map_or(self.sites.len(), |&site| site as usize);
        let predicate_split = self
            .site_predicates
            .get(site_split)
            .map_or(self.predicates.len(), |range| range.start);
        let (pending_low, pending_high) = self.pending.split_at_mut(site_split);
        let (observed_low, observed_high) = self.site_observed.split_at_mut(site_split);
        let (low, high) = self.observations.split_at_mut(predicate_split);
        let shared = Shared {
            site_predicates: &self.site_predicates,
            predicates: &self.predicates,
        };
        let (mut dirty_low, mut dirty_high) = if sites.len() < 64 {
            (
                shared.flush(&sites[..middle], 0, 0, pending_low, observed_low, low),
                shared.flush(
                    &sites[middle..],
                    site_split,
                    predicate_split,
                    pending_high,
                    observed_high,
                    high,
                ),
            )
        } else {
            std::thread::scope(|scope| {
                let low = scope
                    .spawn(|| shared.flush(&sites[..middle], 0, 0, pending_low, observed_low, low));
                let high = shared.flush(
                    &sites[middle..],
                    site_split,
                    predicate_split,
                    pending_high,
                    observed_high,
                    high,
                );
                (low.join().expect("flushing does not panic"), high)
            })
        };
        self.dirty.append(&mut dirty_low);
        self.dirty.append(&mut dirty_high);
        sites.clear();
        self.pending_sites = sites;
        self.pending_block = None;
    }

    /// Copies where each site was observed, since the last call, to its
    /// predicates' [`observations`](Self::observations): needed after
    /// [`add_batch`](Self::add_batch), before the ranking.
    pub fn finish(&mut self) {
        self.flush();
        let mut dirty = std::mem::take(&mut self.dirty);
        dirty.sort_unstable();
        let observations = &mut self.observations[..];
        let site_observed = &mut self.site_observed;
        let site_predicates = &self.site_predicates;
        // Two threads, each over the predicates of half the sites (they
        // are contiguous, in site order).
        let middle = dirty.len() / 2;
        let split = dirty.get(middle).map_or(observations.len(), |&site| {
            site_predicates[site as usize].start
        });
        let (low, high) = observations.split_at_mut(split);
        let site_split = dirty
            .get(middle)
            .map_or(site_observed.len(), |&site| site as usize);
        let (low_sites, high_sites) = site_observed.split_at_mut(site_split);
        let high_offset = low_sites.len();
        let copy = |observations: &mut [Observations],
                    offset: usize,
                    sites: &mut [RoaringBitmap],
                    site_offset: usize,
                    dirty: &[u32]| {
            for &site in dirty {
                let delta = std::mem::take(&mut sites[site as usize - site_offset]);
                let range = site_predicates[site as usize].clone();
                let Some(first) = range.clone().next() else {
                    continue;
                };
                // A site's predicates share one bitmap of where it was
                // observed. The others let go of it first, so that it is
                // changed in place rather than copied.
                let empty = Arc::new(RoaringBitmap::new());
                for predicate in range.clone().skip(1) {
                    observations[predicate - offset].observed = empty.clone();
                }
                let observed = &mut observations[first - offset].observed;
                merge(Arc::make_mut(observed), &delta);
                let shared = observed.clone();
                for predicate in range.skip(1) {
                    observations[predicate - offset].observed = shared.clone();
                }
            }
        };
        if dirty.len() < 64 {
            copy(low, 0, low_sites, 0, &dirty[..middle]);
            copy(high, split, high_sites, high_offset, &dirty[middle..]);
        } else {
            std::thread::scope(|scope| {
                scope.spawn(|| copy(low, 0, low_sites, 0, &dirty[..middle]));
                copy(high, split, high_sites, high_offset, &dirty[middle..]);
            });
        }
        dirty.clear();
        self.dirty = dirty;
    }
}

/// What flushing reads of a dataset.
struct Shared<'a> {
    site_predicates: &'a [Range<usize>],
    predicates: &'a [Predicate],
}

impl Shared<'_> {
    /// Flushes the pending rows of `sites`, given the slices of the
    /// dataset's vectors that start at site `site_offset` and predicate
    /// `predicate_offset`; returns the sites first observed.
    fn flush(
        &self,
        sites: &[u32],
        site_offset: usize,
        predicate_offset: usize,
        pending: &mut [Vec<(u32, u16)>],
        site_observed: &mut [RoaringBitmap],
        observations: &mut [Observations],
    ) -> Vec<u32> {
        let mut dirty = Vec::new();
        // Bit arrays over the span of a site's rows: where it was observed,
        // and where each slot was non-zero; a predicate's is the union of
        // its slots'.
        let mut observed_bits: Vec<u8> = Vec::new();
        let mut slot_bits: Vec<Vec<u8>> = vec![Vec::new(); 16];
        let mut held_bits: Vec<u8> = Vec::new();
        for &site in sites {
            let site = site as usize;
            let rows = &pending[site - site_offset];
            let (Some(&(first, _)), Some(&(last, _))) = (rows.first(), rows.last()) else {
                continue;
            };
            let offset = first & !7;
            let n_bytes = ((last - offset) / 8 + 1) as usize;
            let used = rows.iter().fold(0u16, |used, &(_, mask)| used | mask);
            observed_bits.clear();
            observed_bits.resize(n_bytes, 0);
            for (slot, bits) in slot_bits.iter_mut().enumerate() {
                if used & (1 << slot) != 0 {
                    bits.clear();
                    bits.resize(n_bytes, 0);
                }
            }
            for &(run, mask) in rows {
                let bit = (run - offset) as usize;
                let (byte, value) = (bit / 8, 1u8 << (bit % 8));
                observed_bits[byte] |= value;
                let mut mask = mask;
                while mask != 0 {
                    let slot = mask.trailing_zeros() as usize;
                    slot_bits[slot][byte] |= value;
                    mask &= mask - 1;
                }
            }
            let target = &mut site_observed[site - site_offset];
            if target.is_empty() {
                dirty.push(site as u32);
            }
            *target |= RoaringBitmap::from_lsb0_bytes(offset, &observed_bits);
            for predicate in self.site_predicates[site].clone() {
                let slots = self.predicates[predicate].shape.slots & used;
                if slots == 0 {
                    continue;
                }
                held_bits.clear();
                held_bits.resize(n_bytes, 0);
                for (slot, bits) in slot_bits.iter().enumerate() {
                    if slots & (1 << slot) != 0 {
                        for (held, &bit) in held_bits.iter_mut().zip(bits) {
                            *held |= bit;
                        }
                    }
                }
                observations[predicate - predicate_offset].held |=
                    RoaringBitmap::from_lsb0_bytes(offset, &held_bits);
            }
            pending[site - site_offset].clear();
        }
        dirty
    }
}

/// Adds `values` (increasing) to `bitmap`: appended when above its
/// greatest, inserted otherwise.
fn append(bitmap: &mut RoaringBitmap, values: impl Iterator<Item = u32> + Clone) {
    if bitmap.append(values.clone()).is_err() {
        bitmap.extend(values);
    }
}

/// `target |= delta`, cheaply when `delta` is all above `target`.
fn merge(target: &mut RoaringBitmap, delta: &RoaringBitmap) {
    if target.is_empty() {
        target.clone_from(delta);
    } else if target.max() < delta.min() {
        append(target, delta.iter());
    } else {
        *target |= delta;
    }
}

/// One row of a batch: a run observed a merged site, and which of its
/// slots (bit i: slot i) were non-zero.
#[derive(Debug, Clone, Copy)]
struct Entry {
    site: u32,
    run: u32,
    mask: u16,
}

/// Runs read against a dataset's site tables, not yet added to it (see
/// [`Dataset::batch`]): their outcomes and the rows of their observed
/// sites.
#[derive(Debug)]
pub struct Batch {
    tables: Arc<Tables>,
    /// Runs per sparsity, handed to the dataset with the batch.
    sparsities: std::collections::BTreeMap<u32, u64>,
    /// The dataset's tail window ([`Dataset::with_tail`]).
    tail: Option<u32>,
    runs: Vec<(u32, bool)>,
    entries: Vec<Entry>,
    unresolved_sections: u64,
    run: u32,
    /// The merged sites of the current section's rows, when it has a table.
    table: Option<Arc<[u32]>>,
    /// After [`group`](Self::group): the rows by site, each site's in run
    /// order and each run once, and (site, start, end) of each site's.
    grouped: Vec<(u32, u16)>,
    groups: Vec<(u32, u32, u32)>,
    span: Option<(u32, u32)>,
}

/// Where a batch was, to go back to (see [`Batch::mark`]).
#[derive(Debug, Clone, Copy)]
pub struct Mark {
    runs: usize,
    entries: usize,
    unresolved_sections: u64,
}

impl Batch {
    /// Starts run number `run` (numbers must increase), which failed or
    /// not; `false` (and nothing to add) when it is left out (`None`).
    /// Its rows follow: [`RowVisitor`] calls, or
    /// [`add_samples`](Self::add_samples).
    pub fn start_run(&mut self, run: u32, failed: Option<bool>) -> bool {
        self.table = None;
        let Some(failed) = failed else {
            return false;
        };
        self.runs.push((run, failed));
        self.run = run;
        true
    }

    /// Adds the current run's samples.
    pub fn add_samples(&mut self, samples: &RunSamples) {
        for section in &samples.sections {
            let Rows::Counters { arity, rows } = &section.rows else {
                continue;
            };
            self.section(section.key.clone(), section.n_sites, Some(*arity));
            for (site, counters) in rows {
                self.counters(*site, counters);
            }
        }
    }

    fn new(tables: Arc<Tables>, tail: Option<u32>) -> Self {
        Batch {
            tables,
            sparsities: std::collections::BTreeMap::new(),
            tail,
            runs: Vec::new(),
            entries: Vec::new(),
            unresolved_sections: 0,
            run: 0,
            table: None,
            grouped: Vec::new(),
            groups: Vec::new(),
            span: None,
        }
    }

    /// An empty batch for the same site tables.
    pub fn empty(&self) -> Batch {
        Batch::new(Arc::clone(&self.tables), self.tail)
    }

    /// Counts one run of the batch sampled at `sparsity`.
    pub fn note_sparsity(&mut self, sparsity: u32) {
        *self.sparsities.entry(sparsity).or_default() += 1;
    }

    /// The window of the tail predicates the batch's runs should get
    /// ([`crate::tail::tail_samples`]), if any.
    pub fn tail(&self) -> Option<u32> {
        self.tail
    }

    /// Changes whether the current run failed; `None` leaves it out,
    /// forgetting its rows (added since `mark`, taken before it started).
    pub fn set_outcome(&mut self, mark: Mark, failed: Option<bool>) {
        match failed {
            Some(failed) => {
                if let Some(last) = self.runs.last_mut() {
                    last.1 = failed;
                }
            }
            None => self.rollback(mark),
        }
    }

    /// Groups the rows by site (a counting sort, stable), merging the
    /// rows of one site in one run: what [`Dataset::add_batch`] does
    /// first, which may be done beforehand on the thread that filled the
    /// batch.
    pub fn group(&mut self) {
        if !self.groups.is_empty() || self.entries.is_empty() {
            return;
        }
        let n_sites = self
            .entries
            .iter()
            .map(|e| e.site)
            .max()
            .map_or(0, |m| m as usize + 1);
        let mut starts = vec![0u32; n_sites + 1];
        for entry in &self.entries {
            starts[entry.site as usize + 1] += 1;
        }
        for site in 0..n_sites {
            starts[site + 1] += starts[site];
        }
        let mut ends: Vec<u32> = starts[..n_sites].to_vec();
        let mut grouped = vec![(0u32, 0u16); self.entries.len()];
        for entry in &self.entries {
            let site = entry.site as usize;
            let end = ends[site] as usize;
            if end > starts[site] as usize && grouped[end - 1].0 == entry.run {
                grouped[end - 1].1 |= entry.mask;
            } else {
                grouped[end] = (entry.run, entry.mask);
                ends[site] += 1;
            }
        }
        self.groups = (0..n_sites)
            .filter(|&site| ends[site] > starts[site])
            .map(|site| (site as u32, starts[site], ends[site]))
            .collect();
        self.grouped = grouped;
        self.span = self.span();
        self.entries = Vec::new();
    }

    /// The first and last runs with rows.
    fn span(&self) -> Option<(u32, u32)> {
        match (self.entries.first(), self.entries.last()) {
            (Some(first), Some(last)) => Some((first.run, last.run)),
            _ => self.span,
        }
    }

    /// How many runs were started (and not left out).
    pub fn n_runs(&self) -> usize {
        self.runs.len()
    }

    /// The current state, to [`rollback`](Self::rollback) to.
    pub fn mark(&self) -> Mark {
        Mark {
            runs: self.runs.len(),
            entries: self.entries.len(),
            unresolved_sections: self.unresolved_sections,
        }
    }

    /// Forgets what was added since `mark`.
    pub fn rollback(&mut self, mark: Mark) {
        self.runs.truncate(mark.runs);
        self.entries.truncate(mark.entries);
        self.unresolved_sections = mark.unresolved_sections;
        self.table = None;
    }

    /// Starts a counter section of `key` (of the current run); `false`
    /// when it has no table (its rows are then ignored).
    pub fn counter_section(&mut self, key: &SectionKey) -> bool {
        self.table = self.tables.get(key).cloned();
        if self.table.is_none() {
            self.unresolved_sections += 1;
        }
        self.table.is_some()
    }

    /// Adds a row of the current section whose non-zero slots are `mask`
    /// (not 0: the row has some non-zero counter among its first 16).
    pub fn row_mask(&mut self, site: u32, mask: u16) {
        if let Some(&merged) = self
            .table
            .as_ref()
            .and_then(|table| table.get(site as usize))
        {
            self.entries.push(Entry {
                site: merged,
                run: self.run,
                mask,
            });
        }
    }
}

impl RowVisitor for Batch {
    fn section(&mut self, key: SectionKey, _n_sites: u32, arity: Option<u32>) {
        match arity {
            None => self.table = None,
            Some(_) => {
                self.counter_section(&key);
            }
        }
    }

    fn counters(&mut self, site: u32, counters: &[u64]) {
        let Some(&merged) = self
            .table
            .as_ref()
            .and_then(|table| table.get(site as usize))
        else {
            return;
        };
        let mut mask = 0u16;
        let mut any = false;
        for (slot, &count) in counters.iter().enumerate() {
            if count != 0 {
                any = true;
                if slot < 16 {
                    mask |= 1 << slot;
                }
            }
        }
        if any {
            self.entries.push(Entry {
                site: merged,
                run: self.run,
                mask,
            });
        }
    }
}
