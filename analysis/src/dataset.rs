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

use crate::predicates::{PredicateShape, holds, shapes};
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
    /// The predicate as C text.
    pub fn text(&self, sites: &[Site]) -> String {
        let site = &sites[self.site];
        let fields: Vec<&str> = site.fields.iter().map(String::as_str).collect();
        self.shape.text.render(&fields, &site.function)
    }
}

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
    tables: HashMap<SectionKey, Arc<[usize]>>,
}

impl Dataset {
    /// An empty dataset.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the site tables in `text` (one or more `<sites>` sections).
    pub fn add_site_tables(&mut self, text: &str) -> Result<(), sampler_formats::ReadError> {
        let mut reader = SiteTableReader::new(text.as_bytes());
        while let Some(section) = reader.next_section()? {
            let scheme = section.key.scheme.as_str().to_owned();
            let ids = section
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
            self.tables.insert(section.key, ids);
        }
        Ok(())
    }

    fn merged(&mut self, site: Site) -> usize {
        if let Some(&id) = self.site_index.get(&site) {
            return id;
        }
        let id = self.sites.len();
        // Unknown schemes have no known arity until a run shows one: they
        // get no predicates.
        let arity = match site
            .scheme
            .parse::<SchemeName>()
            .ok()
            .and_then(|name| name.sample_kind())
        {
            Some(SampleKind::Counters(arity)) => arity,
            _ => 0,
        };
        let start = self.predicates.len();
        for shape in shapes(&site.scheme, arity) {
            self.predicates.push(Predicate { site: id, shape });
            self.observations.push(Observations::default());
        }
        self.site_predicates.push(start..self.predicates.len());
        self.site_index.insert(site.clone(), id);
        self.sites.push(site);
        id
    }

    /// Whether a table for `key` was added.
    pub fn has_table(&self, key: &SectionKey) -> bool {
        self.tables.contains_key(key)
    }

    /// Adds run number `run` (numbers must increase), which failed or not
    /// (`None`: neither, left out of the analysis), from its samples' non-zero
    /// rows. `bounds` sections hold no predicates.
    pub fn add_run(&mut self, run: u32, failed: Option<bool>, samples: &RunSamples) {
        let Some(mut adder) = self.run_adder(run, failed) else {
            return;
        };
        for section in &samples.sections {
            let Rows::Counters { arity, rows } = &section.rows else {
                continue;
            };
            adder.section(section.key.clone(), section.n_sites, Some(*arity));
            for (site, counters) in rows {
                adder.counters(*site, counters);
            }
        }
    }

    /// [`add_run`](Self::add_run) from a run's stored compact counters,
    /// without building its samples.
    pub fn add_run_blob(
        &mut self,
        run: u32,
        failed: Option<bool>,
        blob: &[u8],
    ) -> Result<(), DecodeError> {
        match self.run_adder(run, failed) {
            Some(mut adder) => walk(blob, &mut adder),
            None => Ok(()),
        }
    }

    fn run_adder(&mut self, run: u32, failed: Option<bool>) -> Option<RunAdder<'_>> {
        let failed = failed?;
        self.runs.insert(run);
        if failed {
            self.failing.insert(run);
        }
        Some(RunAdder {
            dataset: self,
            run,
            table: None,
        })
    }
}

/// Adds one run's rows, section by section.
struct RunAdder<'d> {
    dataset: &'d mut Dataset,
    run: u32,
    /// The merged sites of the current section's rows, when it has a table.
    table: Option<Arc<[usize]>>,
}

impl RowVisitor for RunAdder<'_> {
    fn section(&mut self, key: SectionKey, _n_sites: u32, arity: Option<u32>) {
        self.table = match (arity, self.dataset.tables.get(&key)) {
            (None, _) => None,
            (Some(_), Some(table)) => Some(table.clone()),
            (Some(_), None) => {
                self.dataset.unresolved_sections += 1;
                None
            }
        };
    }

    fn counters(&mut self, site: u32, counters: &[u64]) {
        let Some(&merged) = self
            .table
            .as_ref()
            .and_then(|table| table.get(site as usize))
        else {
            return;
        };
        if counters.iter().all(|&count| count == 0) {
            return;
        }
        let dataset = &mut *self.dataset;
        for predicate in dataset.site_predicates[merged].clone() {
            let observations = &mut dataset.observations[predicate];
            observations.observed.insert(self.run);
            if holds(dataset.predicates[predicate].shape.slots, counters) {
                observations.held.insert(self.run);
            }
        }
    }
}
