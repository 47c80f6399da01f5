//! Rates files: every well-formed file survives write → read → write byte
//! for byte, and no input, however broken, makes the reader panic; its
//! errors name a line of the input.

use proptest::prelude::*;
use sampler_formats::{
    MAX_SCALE, Rates, RatesSource, Scheme, SchemeName, SectionKey, SiteRate, UnitSignature,
    observation_probability,
};

fn real() -> impl Strategy<Value = f64> {
    prop_oneof![
        (0u32..100_000).prop_map(f64::from),
        0.0..1e12f64,
        0.0..1e-6f64,
        Just(0.0),
    ]
}

fn source() -> impl Strategy<Value = RatesSource> {
    prop_oneof![
        ("[^\t\n\r]{0,12}", "[^\t\n\r]{0,8}", "[^\t\n\r]{0,8}").prop_map(
            |(application, version, release)| RatesSource::Collector {
                application,
                version,
                release
            }
        ),
        "[^\t\n\r]{0,20}".prop_map(|directory| RatesSource::Runs { directory }),
    ]
}

fn key() -> impl Strategy<Value = SectionKey> {
    let scheme = prop_oneof![
        proptest::sample::select(Scheme::ALL.to_vec()).prop_map(SchemeName::from),
        "[a-z][a-z0-9-]{0,10}".prop_map(|name| name.parse::<SchemeName>().unwrap()),
    ];
    // Few units, so that sites share them.
    (0u8..3, any::<[u8; 16]>(), scheme).prop_map(|(n, mut bytes, scheme)| {
        bytes[0] = n;
        bytes[1..].fill(n);
        SectionKey::new(UnitSignature::from_bytes(bytes), scheme)
    })
}

fn rates() -> impl Strategy<Value = Rates> {
    (
        source(),
        1u32..=u32::MAX,
        (real(), real(), any::<u64>(), real(), real()),
        proptest::collection::vec(
            (
                key(),
                0u32..50,
                real(),
                prop_oneof![Just(0u32), 1u32..=MAX_SCALE],
            ),
            0..20,
        ),
    )
        .prop_map(
            |(source, sparsity, (target, budget, runs, expected, uniform), sites)| {
                let mut sites: Vec<SiteRate> = sites
                    .into_iter()
                    .map(|(key, site, executions_per_run, scale)| {
                        let mut scale = scale;
                        if observation_probability(scale, sparsity) >= 1.0 {
                            scale = 0;
                        }
                        SiteRate {
                            key,
                            site,
                            executions_per_run,
                            rate: observation_probability(scale, sparsity),
                            scale,
                        }
                    })
                    .collect();
                sites.sort_by(|a, b| (&a.key, a.site).cmp(&(&b.key, b.site)));
                sites.dedup_by(|a, b| (&a.key, a.site) == (&b.key, b.site));
                Rates {
                    source,
                    sparsity,
                    target,
                    budget,
                    runs,
                    expected,
                    uniform,
                    sites,
                }
            },
        )
}

/// Reads `bytes`; an error must name a line of the input (or the one
/// after its end).
fn check_read(bytes: &[u8]) {
    if let Err(error) = Rates::read(bytes) {
        let n_lines = bytes.split(|&b| b == b'\n').count() as u64;
        assert!(
            error.line() >= 1 && error.line() <= n_lines + 1,
            "{error} in {n_lines} lines"
        );
        assert!(
            error
                .to_string()
                .starts_with(&format!("line {}: ", error.line()))
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn rates_round_trip(rates in rates()) {
        let text = rates.to_text();
        let read = Rates::read(text.as_bytes()).unwrap();
        prop_assert_eq!(&read, &rates);
        prop_assert_eq!(read.to_text(), text);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        check_read(&bytes);
    }

    /// Damaging a valid file reaches every state of the reader.
    #[test]
    fn damaged_files_never_panic(
        rates in rates(),
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 1..6),
    ) {
        let mut text = rates.to_text().into_bytes();
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
        check_read(&text);
    }
}

/// The example of `schema/rates-format.md` reads and writes back byte for
/// byte, and says what the text around it says.
#[test]
fn schema_example_round_trips() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../schema/rates-format.md");
    let text = std::fs::read_to_string(path).unwrap();
    let start = text.find("```text\n").unwrap() + "```text\n".len();
    let example = &text[start..start + text[start..].find("```").unwrap()];
    let rates = Rates::read(example.as_bytes()).unwrap();
    assert_eq!(rates.to_text(), example);
    assert_eq!(rates.sites.len(), 5);
    assert_eq!(rates.sites[2].scale, 10);
    assert_eq!(rates.sites[2].rate, observation_probability(10, 100));
    assert_eq!(rates.sites[3].rate, 0.01);
    let expected: f64 = rates
        .sites
        .iter()
        .map(|s| s.executions_per_run * s.rate)
        .sum();
    assert_eq!(rates.expected, expected);
}
