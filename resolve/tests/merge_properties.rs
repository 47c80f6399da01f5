//! The join's merge, checked against a direct computation: whatever the
//! number and order of repeated sections, counters are their sums and
//! bounds the min of minima and max of maxima.

use std::collections::BTreeMap;

use proptest::prelude::*;
use sampler_formats::{
    BoundValue, SampleRows, SamplesSection, Scheme, SectionKey, Site, SiteDetails, SitesSection,
    UnitSignature,
};
use sampler_resolve::{SiteStore, resolve_samples};

const N_SITES: usize = 3;

fn key(unit: u8, scheme: Scheme) -> SectionKey {
    SectionKey::new(UnitSignature::from_bytes([unit; 16]), scheme)
}

fn store() -> SiteStore {
    let mut text = Vec::new();
    for unit in 0..2u8 {
        for scheme in [Scheme::Branches, Scheme::Bounds] {
            let details = match scheme {
                Scheme::Branches => SiteDetails::Expression("x".into()),
                _ => SiteDetails::Assignment(sampler_formats::Assignment {
                    lvalue: "x".into(),
                    host: sampler_formats::HostKind::Local,
                    offset: sampler_formats::OffsetKind::Direct,
                }),
            };
            let sites = (0..N_SITES as u32)
                .map(|node| Site {
                    file: "f.c".into(),
                    line: 1,
                    function: "f".into(),
                    node,
                    details: details.clone(),
                })
                .collect();
            SitesSection {
                key: key(unit, scheme),
                sites,
            }
            .write_to(&mut text)
            .unwrap();
        }
    }
    let mut store = SiteStore::new();
    store.load_text("t.sites", text.as_slice()).unwrap();
    store
}

/// One section: which key, and its rows.
fn section() -> impl Strategy<Value = SamplesSection> {
    let branches = (
        0..2u8,
        proptest::collection::vec(0u64..1 << 40, 2 * N_SITES),
    )
        .prop_map(|(unit, values)| SamplesSection {
            key: key(unit, Scheme::Branches),
            rows: SampleRows::Counters { arity: 2, values },
        });
    let bound = (-1000i128..1000).prop_map(BoundValue::Integer);
    let bounds = (
        0..2u8,
        proptest::collection::vec((bound.clone(), bound), N_SITES),
    )
        .prop_map(|(unit, ranges)| SamplesSection {
            key: key(unit, Scheme::Bounds),
            rows: SampleRows::Bounds(ranges),
        });
    prop_oneof![branches, bounds]
}

/// (unit, scheme, node) → the value columns, as the join prints them.
fn resolved(store: &SiteStore, sections: &[SamplesSection]) -> BTreeMap<String, String> {
    let mut input = Vec::new();
    for section in sections {
        section.write_to(&mut input).unwrap();
    }
    let mut output = Vec::new();
    resolve_samples(store, input.as_slice(), &mut output).unwrap();
    String::from_utf8(output)
        .unwrap()
        .lines()
        .map(|line| {
            let fields: Vec<&str> = line.split('\t').collect();
            let n_static = if fields[2] == "branches" { 5 } else { 7 };
            (
                format!("{} {} {}", fields[1], fields[2], fields[6]),
                fields[3 + n_static..].join(" "),
            )
        })
        .collect()
}

fn expected(sections: &[SamplesSection]) -> BTreeMap<String, String> {
    let mut sums: BTreeMap<String, [u64; 2]> = BTreeMap::new();
    let mut ranges: BTreeMap<String, (i128, i128)> = BTreeMap::new();
    for section in sections {
        match &section.rows {
            SampleRows::Counters { values, .. } => {
                for (site, row) in values.chunks(2).enumerate() {
                    let name = format!("{} branches {site}", section.key.unit);
                    let sum = sums.entry(name).or_default();
                    sum[0] += row[0];
                    sum[1] += row[1];
                }
            }
            SampleRows::Bounds(rows) => {
                for (site, (min, max)) in rows.iter().enumerate() {
                    let name = format!("{} bounds {site}", section.key.unit);
                    let range = ranges.entry(name).or_insert((i128::MAX, i128::MIN));
                    range.0 = range.0.min(min.numeric());
                    range.1 = range.1.max(max.numeric());
                }
            }
        }
    }
    sums.into_iter()
        .map(|(name, [f, t])| (name, format!("{f} {t}")))
        .chain(
            ranges
                .into_iter()
                .map(|(name, (min, max))| (name, format!("{min} {max}"))),
        )
        .collect()
}

proptest! {
    #[test]
    fn merged_values_are_sums_and_extremes_in_any_order(
        sections in proptest::collection::vec(section(), 0..12),
        rotation in any::<prop::sample::Index>(),
    ) {
        let store = store();
        let merged = resolved(&store, &sections);
        prop_assert_eq!(&merged, &expected(&sections));
        let mut reordered = sections.clone();
        reordered.reverse();
        if !reordered.is_empty() {
            let at = rotation.index(reordered.len());
            reordered.rotate_left(at);
        }
        prop_assert_eq!(resolved(&store, &reordered), merged);
    }
}
