//! Property tests of the `trace` subreport: every well-formed trace
//! survives write → parse unchanged, whether read from a report, from a
//! bare body or from a subreport's lines, and no input makes the reader
//! panic.

use proptest::prelude::*;
use sampler_formats::{
    Report, SampleKind, Scheme, SchemeName, SectionKey, Subreport, ThreadState, ThreadTrace, Trace,
    TraceClock, TraceReader, TraceRecord, UnitSignature,
};

fn key() -> impl Strategy<Value = SectionKey> {
    let scheme = prop_oneof![
        proptest::sample::select(Scheme::ALL.to_vec()).prop_map(SchemeName::from),
        "[a-z][a-z0-9-]{0,10}".prop_map(|name| name.parse::<SchemeName>().unwrap()),
    ];
    (any::<[u8; 16]>(), scheme)
        .prop_map(|(bytes, scheme)| SectionKey::new(UnitSignature::from_bytes(bytes), scheme))
}

/// A record whose table and slot exist in `tables`.
fn record(tables: Vec<SectionKey>) -> impl Strategy<Value = TraceRecord> {
    (0..tables.len() as u32).prop_flat_map(move |table| {
        let slot = match tables[table as usize].scheme.sample_kind() {
            Some(SampleKind::Counters(arity)) => (0..arity as u16).boxed(),
            Some(SampleKind::Bounds) => Just(0).boxed(),
            None => any::<u16>().boxed(),
        };
        (any::<u32>(), slot, any::<u64>(), any::<u64>()).prop_map(
            move |(site, slot, sequence, time)| TraceRecord {
                table,
                site,
                slot,
                sequence,
                time,
            },
        )
    })
}

fn thread(tables: Vec<SectionKey>) -> impl Strategy<Value = ThreadTrace> {
    let n_max = if tables.is_empty() { 0 } else { 6 };
    (
        any::<u64>(),
        proptest::sample::select(ThreadState::ALL.to_vec()),
        any::<u64>(),
        any::<u64>(),
        proptest::collection::vec(record(tables), 0..=n_max),
    )
        .prop_map(
            |(thread, state, first_sequence, first_time, records)| ThreadTrace {
                thread,
                state,
                first_sequence,
                first_time,
                records,
            },
        )
}

fn trace() -> impl Strategy<Value = Trace> {
    let clock =
        ("[A-Za-z0-9_.-]{1,16}", 1..=u64::MAX).prop_map(|(name, ticks_per_second)| TraceClock {
            name,
            ticks_per_second,
        });
    (clock, proptest::collection::vec(key(), 0..4)).prop_flat_map(|(clock, tables)| {
        proptest::collection::vec(thread(tables.clone()), 0..4).prop_map(move |mut threads| {
            // At most one thread that wrote the report.
            let mut seen_crashing = false;
            for thread in &mut threads {
                if thread.state.is_reporting() {
                    if seen_crashing {
                        thread.state = ThreadState::Live;
                    }
                    seen_crashing = true;
                }
            }
            Trace {
                clock: clock.clone(),
                tables: tables.clone(),
                threads,
            }
        })
    })
}

fn drain(bytes: &[u8]) {
    let mut reader = TraceReader::new(bytes);
    while let Ok(Some(_)) = reader.next_event() {}
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn traces_round_trip(traces in proptest::collection::vec(trace(), 1..3)) {
        // Bare bodies, one after another.
        let mut body = Vec::new();
        for trace in &traces {
            trace.write_body(&mut body).unwrap();
        }
        let parsed = Trace::read_all(body.as_slice()).unwrap();
        prop_assert_eq!(&parsed, &traces);
        let mut rewritten = Vec::new();
        for trace in &parsed {
            trace.write_body(&mut rewritten).unwrap();
        }
        prop_assert_eq!(&rewritten, &body);

        // Subreports among others in a whole report.
        let mut report = b"<report id=\"main-backtrace\">\n./prog[0x401136]\n</report>\n".to_vec();
        for trace in &traces {
            trace.write_to(&mut report).unwrap();
        }
        prop_assert_eq!(&Trace::read_all(report.as_slice()).unwrap(), &traces);

        // The lines `Report` keeps of each trace subreport.
        let whole = Report::read(report.as_slice()).unwrap();
        let from_lines: Vec<Trace> = whole
            .subreports
            .iter()
            .filter_map(|subreport| match subreport {
                Subreport::Other { id, lines } if id == "trace" => {
                    Some(Trace::from_lines(lines.iter().map(String::as_str), 1).unwrap())
                }
                _ => None,
            })
            .collect();
        prop_assert_eq!(&from_lines, &traces);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        drain(&bytes);
        let mut in_report = b"<report id=\"trace\">\n".to_vec();
        in_report.extend_from_slice(&bytes);
        drain(&in_report);
        let mut after_header = b"version\t1\nclock\tc\t1\n".to_vec();
        after_header.extend_from_slice(&bytes);
        drain(&after_header);
    }

    /// Random bytes rarely get past the header; damaging a valid trace
    /// reaches every state of the parser.
    #[test]
    fn damaged_traces_never_panic(
        trace in trace(),
        in_report in any::<bool>(),
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 1..6),
    ) {
        let mut text = Vec::new();
        if in_report {
            trace.write_to(&mut text).unwrap();
        } else {
            trace.write_body(&mut text).unwrap();
        }
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
        drain(&text);
        let _ = Trace::read_all(text.as_slice());
        if let Ok(text) = std::str::from_utf8(&text) {
            let _ = Trace::from_lines(text.lines(), 1);
        }
    }
}
