//! Tail predicates (`sampler-analyze --last K`): a predicate *held in the
//! last K events* of a run when one of the run's last K sampled
//! observations, in its `trace` subreport (issue 18), bumped one of its
//! slots; its site was *observed* there when any of them named the site.
//! They rank as other predicates, from the runs whose reports carry a
//! trace (the runtime writes one at a crash and at a normal exit when
//! `SAMPLER_TRACE` is set; `sampler-run` sets it).

use std::collections::BTreeMap;

use sampler_formats::{SampleKind, SchemeName, SectionKey, Trace};
use sampler_storage::counters::{Rows, RunSamples, SectionSamples};

use crate::dataset::tail_scheme;

/// The tail samples of a run from its last trace: per (unit, tail
/// scheme), the number of times each slot of each site was bumped among
/// the last `events` observations of every thread together, in the
/// order of their sequence numbers (the observations of one sampled event
/// share theirs and keep their order). Records of schemes without
/// counters, or whose slot is past the scheme's, are left out.
pub fn tail_samples(trace: &Trace, events: u32) -> RunSamples {
    // Blocks in file order, each oldest first: a stable sort by sequence
    // number keeps the order within an event.
    let mut records: Vec<_> = trace
        .threads
        .iter()
        .flat_map(|thread| thread.records.iter())
        .collect();
    records.sort_by_key(|record| record.sequence);
    let start = records.len().saturating_sub(events as usize);
    let mut counts: BTreeMap<(SectionKey, u32), Vec<u64>> = BTreeMap::new();
    let mut arities: BTreeMap<SectionKey, u32> = BTreeMap::new();
    for record in &records[start..] {
        let Some(key) = trace.tables.get(record.table as usize) else {
            continue;
        };
        let Some(SampleKind::Counters(arity)) = key.scheme.sample_kind() else {
            continue;
        };
        let Ok(scheme) = tail_scheme(key.scheme.as_str(), events).parse::<SchemeName>() else {
            continue;
        };
        if usize::from(record.slot) >= arity {
            continue;
        }
        let tail_key = SectionKey {
            unit: key.unit,
            scheme,
        };
        arities.insert(tail_key.clone(), arity as u32);
        counts
            .entry((tail_key, record.site))
            .or_insert_with(|| vec![0; arity])[usize::from(record.slot)] += 1;
    }
    let mut sections: Vec<SectionSamples> = Vec::new();
    for ((key, site), row) in counts {
        if sections.last().is_none_or(|section| section.key != key) {
            sections.push(SectionSamples {
                key: key.clone(),
                n_sites: 0,
                rows: Rows::Counters {
                    arity: arities[&key],
                    rows: Vec::new(),
                },
            });
        }
        let section = sections.last_mut().expect("pushed above");
        section.n_sites = section.n_sites.max(site + 1);
        if let Rows::Counters { rows, .. } = &mut section.rows {
            rows.push((site, row));
        }
    }
    RunSamples { sections }
}

/// [`tail_samples`] of the last trace in `report` (a whole run's report,
/// or a run file), if it has one.
pub fn tail_of_report(
    report: &[u8],
    events: u32,
) -> Result<Option<RunSamples>, sampler_formats::ReadError> {
    let traces = Trace::read_all(report)?;
    Ok(traces.last().map(|trace| tail_samples(trace, events)))
}
