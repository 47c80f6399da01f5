//! Property tests: every well-formed value survives write → parse unchanged,
//! and no input, however broken, makes a reader panic.

use std::borrow::Cow;

use proptest::prelude::*;
use sampler_formats::{
    AccessKind, Assignment, BoundValue, HostKind, OffsetKind, OperandKind, Report, ReportReader,
    SampleKind, SampleRows, SamplesItem, SamplesSection, Scheme, SchemeName, SectionKey, Site,
    SiteDetails, SiteTableReader, SitesSection, Subreport, TimestampsSection, UnitSignature, When,
    read_site_table,
};

/// Text a site field may hold: anything without tab or newline, not empty.
fn field() -> impl Strategy<Value = String> {
    "[^\t\n]{1,12}"
}

fn key() -> impl Strategy<Value = SectionKey> {
    let scheme = prop_oneof![
        proptest::sample::select(Scheme::ALL.to_vec()).prop_map(SchemeName::from),
        "[a-z][a-z0-9-]{0,10}".prop_map(|name| name.parse::<SchemeName>().unwrap()),
    ];
    (any::<[u8; 16]>(), scheme)
        .prop_map(|(bytes, scheme)| SectionKey::new(UnitSignature::from_bytes(bytes), scheme))
}

fn assignment() -> impl Strategy<Value = Assignment<'static>> {
    (
        field(),
        proptest::sample::select(HostKind::ALL),
        proptest::sample::select(OffsetKind::ALL),
    )
        .prop_map(|(lvalue, host, offset)| Assignment {
            lvalue: lvalue.into(),
            host,
            offset,
        })
}

fn details(scheme: &SchemeName) -> BoxedStrategy<SiteDetails<'static>> {
    use sampler_formats::SiteLayout;
    let Some(layout) = scheme.scheme().map(Scheme::site_layout) else {
        return proptest::collection::vec(field(), 0..4)
            .prop_map(|fields| SiteDetails::Unknown(fields.into_iter().map(Cow::Owned).collect()))
            .boxed();
    };
    match layout {
        SiteLayout::Plain => Just(SiteDetails::Plain).boxed(),
        SiteLayout::Expression => field()
            .prop_map(|text| SiteDetails::Expression(text.into()))
            .boxed(),
        SiteLayout::Access => (field(), proptest::sample::select(AccessKind::ALL))
            .prop_map(|(lvalue, access)| SiteDetails::Access {
                lvalue: lvalue.into(),
                access,
            })
            .boxed(),
        SiteLayout::Assignment => assignment().prop_map(SiteDetails::Assignment).boxed(),
        SiteLayout::Comparison => (
            assignment(),
            field(),
            proptest::sample::select(OperandKind::ALL),
        )
            .prop_map(|(target, other, other_kind)| SiteDetails::Comparison {
                target,
                other: other.into(),
                other_kind,
            })
            .boxed(),
    }
}

fn sites_section() -> impl Strategy<Value = SitesSection> {
    key().prop_flat_map(|key| {
        let site = (
            field(),
            any::<u32>(),
            field(),
            any::<u32>(),
            details(&key.scheme),
        )
            .prop_map(|(file, line, function, node, details)| Site {
                file: file.into(),
                line,
                function: function.into(),
                node,
                details,
            });
        proptest::collection::vec(site, 0..6).prop_map(move |sites| SitesSection {
            key: key.clone(),
            sites,
        })
    })
}

fn bound() -> impl Strategy<Value = BoundValue> {
    prop_oneof![
        (i128::from(i64::MIN)..=i128::from(u64::MAX)).prop_map(BoundValue::Integer),
        any::<u64>().prop_map(BoundValue::Pointer),
    ]
}

fn samples_item() -> impl Strategy<Value = SamplesItem> {
    let samples = key().prop_flat_map(|key| {
        let rows = match key.scheme.sample_kind() {
            Some(SampleKind::Bounds) => proptest::collection::vec((bound(), bound()), 0..5)
                .prop_map(SampleRows::Bounds)
                .boxed(),
            Some(SampleKind::Counters(arity)) => {
                proptest::collection::vec(any::<u64>(), 0..5 * arity)
                    .prop_map(move |mut values| {
                        values.truncate(values.len() / arity * arity);
                        SampleRows::Counters { arity, values }
                    })
                    .boxed()
            }
            None => (1usize..4)
                .prop_flat_map(|arity| {
                    proptest::collection::vec(any::<u64>(), arity..5 * arity).prop_map(
                        move |mut values| {
                            values.truncate(values.len() / arity * arity);
                            SampleRows::Counters { arity, values }
                        },
                    )
                })
                .boxed(),
        };
        rows.prop_map(move |rows| {
            SamplesItem::Samples(SamplesSection {
                key: key.clone(),
                rows,
            })
        })
    });
    let timestamps = (
        key(),
        prop_oneof![Just(When::First), Just(When::Last)],
        proptest::collection::vec(any::<u64>(), 0..5),
    )
        .prop_map(|(key, when, stamps)| {
            SamplesItem::Timestamps(TimestampsSection { key, when, stamps })
        });
    prop_oneof![samples, timestamps]
}

fn subreport() -> impl Strategy<Value = Subreport> {
    prop_oneof![
        proptest::collection::vec(samples_item(), 0..4).prop_map(Subreport::Samples),
        (
            "[a-z][a-z-]{0,12}".prop_filter("not samples", |id| id != "samples"),
            // Any line but the end tag, and nothing that opens a report.
            proptest::collection::vec("[^\n<]{0,20}", 0..5),
        )
            .prop_map(|(id, lines)| Subreport::Other { id, lines }),
    ]
}

/// Empty counter sections of unknown schemes read back with arity 0.
fn normalise(mut report: Report) -> Report {
    for subreport in &mut report.subreports {
        if let Subreport::Samples(items) = subreport {
            for item in items {
                if let SamplesItem::Samples(SamplesSection {
                    rows: SampleRows::Counters { arity, values },
                    key,
                }) = item
                    && values.is_empty()
                    && key.scheme.sample_kind().is_none()
                {
                    *arity = 0;
                }
            }
        }
    }
    report
}

fn drain_report(bytes: &[u8]) {
    let mut reader = ReportReader::new(bytes);
    while let Ok(Some(_)) = reader.next_event() {}
}

fn drain_sites(bytes: &[u8]) {
    let mut reader = SiteTableReader::new(bytes);
    while let Ok(Some(_)) = reader.next_event() {}
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn site_tables_round_trip(sections in proptest::collection::vec(sites_section(), 0..4)) {
        let mut text = Vec::new();
        for section in &sections {
            section.write_to(&mut text).unwrap();
        }
        let parsed = read_site_table(text.as_slice()).unwrap();
        prop_assert_eq!(&parsed, &sections);
        let mut rewritten = Vec::new();
        for section in &parsed {
            section.write_to(&mut rewritten).unwrap();
        }
        prop_assert_eq!(rewritten, text);
    }

    #[test]
    fn reports_round_trip(subreports in proptest::collection::vec(subreport(), 0..4)) {
        let report = normalise(Report { subreports });
        let mut text = Vec::new();
        report.write_to(&mut text).unwrap();
        let parsed = Report::read(text.as_slice()).unwrap();
        prop_assert_eq!(&parsed, &report);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        drain_report(&bytes);
        drain_sites(&bytes);
        let _ = Report::read(bytes.as_slice());
    }

    /// Random bytes rarely get past the first line; damaging a valid
    /// document reaches every state of the readers.
    #[test]
    fn damaged_documents_never_panic(
        subreports in proptest::collection::vec(subreport(), 1..3),
        sections in proptest::collection::vec(sites_section(), 1..3),
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 1..6),
    ) {
        let mut report = Vec::new();
        Report { subreports }.write_to(&mut report).unwrap();
        let mut table = Vec::new();
        for section in &sections {
            section.write_to(&mut table).unwrap();
        }
        for text in [&mut report, &mut table] {
            for (at, byte, how) in &edits {
                if text.is_empty() {
                    break;
                }
                let index = at.index(text.len());
                match how {
                    0 => text[index] = *byte,
                    1 => text.insert(index, *byte),
                    _ => {
                        text.remove(index);
                    }
                }
            }
        }
        drain_report(&report);
        drain_sites(&table);
        let _ = Report::read(report.as_slice());
        let _ = read_site_table(table.as_slice());
    }
}
