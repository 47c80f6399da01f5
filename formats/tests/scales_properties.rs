//! `.debug_site_scales`: every well-formed text survives read → write byte
//! for byte, and the reader never panics on any input, damaged or random.

use proptest::prelude::*;
use sampler_formats::{ScalesSection, SchemeName, SectionKey, UnitSignature, read_scales};

fn key() -> impl Strategy<Value = SectionKey> {
    (any::<[u8; 16]>(), "[a-z][a-z0-9-]{0,12}").prop_map(|(bytes, scheme)| {
        let unit: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        SectionKey::new(
            unit.parse::<UnitSignature>().unwrap(),
            scheme.parse::<SchemeName>().unwrap(),
        )
    })
}

fn section() -> impl Strategy<Value = ScalesSection> {
    (
        key(),
        proptest::collection::vec(prop_oneof![Just(0u32), Just(1), any::<u32>()], 0..8),
    )
        .prop_map(|(key, scales)| ScalesSection { key, scales })
}

fn text_of(sections: &[ScalesSection]) -> Vec<u8> {
    let mut text = Vec::new();
    for section in sections {
        section.write_to(&mut text).unwrap();
    }
    text
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn scales_round_trip(sections in proptest::collection::vec(section(), 0..4)) {
        let text = text_of(&sections);
        let parsed = read_scales(text.as_slice()).unwrap();
        prop_assert_eq!(&parsed, &sections);
        prop_assert_eq!(text_of(&parsed), text);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = read_scales(bytes.as_slice());
    }

    /// Damaging a valid text reaches every state of the reader; an error
    /// always names a line of the input.
    #[test]
    fn damaged_scales_never_panic(
        sections in proptest::collection::vec(section(), 1..3),
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 1..6),
    ) {
        let mut text = text_of(&sections);
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
        if let Err(error) = read_scales(text.as_slice()) {
            let lines = text.split(|&b| b == b'\n').count() as u64;
            prop_assert!(error.line() >= 1 && error.line() <= lines, "{error}");
        }
    }
}
