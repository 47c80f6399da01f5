//! Decimal numbers as the formats write them: ASCII digits only, no sign,
//! no leading zeros. `str::parse` also accepts `+7` and `007`, which the
//! writers would print back as `7`; refusing them keeps every accepted text
//! the one the writer produces.

use std::str::FromStr;

/// True when `digits` is a non-empty run of ASCII digits without a leading
/// zero (other than `0` itself).
pub(crate) fn is_canonical(digits: &str) -> bool {
    !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && !(digits.len() > 1 && digits.starts_with('0'))
}

/// `digits` as a `T`, if canonical and in range.
pub(crate) fn parse<T: FromStr>(digits: &str) -> Option<T> {
    if is_canonical(digits) {
        digits.parse().ok()
    } else {
        None
    }
}

/// `text` as a signed `T`: an optional `-` before canonical digits; `-0`
/// is refused, since `0` is its one spelling.
pub(crate) fn parse_signed<T: FromStr>(text: &str) -> Option<T> {
    let digits = text.strip_prefix('-').unwrap_or(text);
    if is_canonical(digits) && text != "-0" {
        text.parse().ok()
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_have_one_spelling() {
        assert_eq!(parse::<u32>("0"), Some(0));
        assert_eq!(parse::<u32>("4294967295"), Some(u32::MAX));
        assert_eq!(parse::<u64>("18446744073709551615"), Some(u64::MAX));
        for bad in ["", "+1", "01", " 1", "4294967296", "1e3", "-1"] {
            assert_eq!(parse::<u32>(bad), None, "{bad}");
        }
    }

    #[test]
    fn signed_numbers_have_one_spelling() {
        assert_eq!(parse_signed::<i64>("0"), Some(0));
        assert_eq!(parse_signed::<i64>("-12"), Some(-12));
        assert_eq!(parse_signed::<i64>("-9223372036854775808"), Some(i64::MIN));
        for bad in [
            "",
            "-",
            "-0",
            "+1",
            "-01",
            "01",
            "--1",
            "9223372036854775808",
        ] {
            assert_eq!(parse_signed::<i64>(bad), None, "{bad}");
        }
    }
}
