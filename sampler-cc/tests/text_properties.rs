//! The `.i` readers take any bytes without panicking, and site text is
//! always a valid site-table field.

use proptest::prelude::*;
use sampler_cc::preprocessed::{LineMap, MAX_SITE_TEXT, site_text, skip_trivia};

/// Bytes that look like a `.i`: markers, comments, literals, code, junk.
fn preprocessed_like() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        Just(b"# 1 \"a.c\"\n".to_vec()),
        Just(b"# 7 \"/usr/include/x.h\" 1 3 4\n".to_vec()),
        Just(b"# 9 \"b\\\"c\" 2\n".to_vec()),
        Just(b"/* c\n */".to_vec()),
        Just(b"// x\n".to_vec()),
        Just(b"\"s\\\"\t\"".to_vec()),
        Just(b"'\\''".to_vec()),
        Just(b"x && y\n".to_vec()),
        Just(b"#".to_vec()),
        Just(b"/*".to_vec()),
        prop::collection::vec(any::<u8>(), 0..8),
    ];
    prop::collection::vec(piece, 0..24).prop_map(|pieces| pieces.concat())
}

proptest! {
    #[test]
    fn line_maps_never_panic(text in preprocessed_like(), offsets in prop::collection::vec(any::<usize>(), 1..8)) {
        let map = LineMap::new(&text);
        for offset in offsets {
            let offset = offset % (text.len() + 1);
            if map.presumed(offset).is_some() {
                // Positions exist only after a marker line.
                prop_assert!(text[..offset].contains(&b'#'));
            }
        }
        prop_assert!(map.after_first_line(text.len()) <= text.len());
    }

    #[test]
    fn site_text_is_a_field(text in preprocessed_like(), a in any::<usize>(), b in any::<usize>()) {
        let len = text.len();
        let (start, end) = { let (x, y) = (a % (len + 1), b % (len + 1)); (x.min(y), x.max(y)) };
        let field = site_text(&text, start, end);
        prop_assert!(!field.is_empty());
        prop_assert!(!field.contains(['\t', '\n']));
        prop_assert!(field.len() <= MAX_SITE_TEXT + 4);
        prop_assert!(skip_trivia(&text, start) <= len);
    }
}
