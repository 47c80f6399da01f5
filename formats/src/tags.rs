//! The XML-like start and end tags that frame sections and subreports.
//!
//! The format is written by machines, so a tag has exactly one spelling:
//! attributes in a fixed order, one space before each, values in double
//! quotes. Anything else is not a tag.

use std::fmt;

use crate::scheme::SchemeName;
use crate::signature::UnitSignature;

/// The join key of static and dynamic data: a unit and a scheme.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SectionKey {
    /// The compilation unit.
    pub unit: UnitSignature,
    /// The instrumentation scheme.
    pub scheme: SchemeName,
}

impl SectionKey {
    /// The key of `unit` and `scheme`.
    pub fn new(unit: UnitSignature, scheme: impl Into<SchemeName>) -> Self {
        Self {
            unit,
            scheme: scheme.into(),
        }
    }
}

impl fmt::Display for SectionKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unit `{}` scheme `{}`", self.unit, self.scheme)
    }
}

/// Splits `<NAME a1="v1" a2="v2">` into its attribute values, or `None`
/// when `line` is not exactly that tag. Values may not contain `"`.
pub(crate) fn parse_start_tag<'a, const N: usize>(
    line: &'a str,
    name: &str,
    attributes: [&str; N],
) -> Option<[&'a str; N]> {
    let mut rest = line.strip_prefix('<')?.strip_prefix(name)?;
    let mut values = [""; N];
    for (value, attribute) in values.iter_mut().zip(attributes) {
        rest = rest
            .strip_prefix(' ')?
            .strip_prefix(attribute)?
            .strip_prefix("=\"")?;
        let end = rest.find('"')?;
        *value = &rest[..end];
        rest = &rest[end + 1..];
    }
    (rest == ">").then_some(values)
}

/// True when `line` opens a tag called `name`, well formed or not: used to
/// give a precise message for a malformed tag instead of a generic one.
pub(crate) fn looks_like_start_tag(line: &str, name: &str) -> bool {
    line.strip_prefix('<')
        .and_then(|rest| rest.strip_prefix(name))
        .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '>']))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_exact_tags_only() {
        assert_eq!(
            parse_start_tag(r#"<x a="1" b="">"#, "x", ["a", "b"]),
            Some(["1", ""])
        );
        for bad in [
            r#"<x a="1" b="2"> "#,
            r#"<x  a="1" b="2">"#,
            r#"<x b="2" a="1">"#,
            r#"<x a="1">"#,
            r#"<x a="1" b="2""#,
            r#"<xa="1" b="2">"#,
            r#"<x a='1' b="2">"#,
        ] {
            assert_eq!(parse_start_tag(bad, "x", ["a", "b"]), None, "{bad}");
        }
    }

    #[test]
    fn recognises_malformed_tags_by_name() {
        assert!(looks_like_start_tag("<samples unit=x>", "samples"));
        assert!(looks_like_start_tag("<samples>", "samples"));
        assert!(!looks_like_start_tag("<samplesx>", "samples"));
        assert!(!looks_like_start_tag("samples", "samples"));
    }
}
