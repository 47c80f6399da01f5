//! `.debug_site_scales` (`schema/site-table.md`, "Scales"): the countdown
//! scale each site of a unit was built with by `sampler-cc
//! -fsampler-rates` (issue 19), in a companion section so that
//! `.debug_site_info` keeps the original's grammar. A site of scale `s` is
//! observed on each execution with probability
//! [`observation_probability`](crate::observation_probability)`(s, D)`.

use std::collections::BTreeMap;
use std::io::{self, BufRead, Write};

use crate::error::{ReadError, ReadErrorKind};
use crate::lines::LineReader;
use crate::sites::parse_key;
use crate::tags::{SectionKey, looks_like_start_tag, parse_start_tag};

const SCALES_END: &str = "</scales>";
const SCALES_START_SHAPE: &str = r#"`<scales unit="SIGNATURE" scheme="SCHEME">`"#;

/// One `<scales>` section: the scale of each site of one (unit, scheme)'s
/// site table, in site order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScalesSection {
    /// The unit and scheme.
    pub key: SectionKey,
    /// Site `i`'s scale; 0 means counted on every execution.
    pub scales: Vec<u32>,
}

impl ScalesSection {
    /// Writes the section.
    pub fn write_to<W: Write>(&self, out: &mut W) -> io::Result<()> {
        writeln!(
            out,
            "<scales unit=\"{}\" scheme=\"{}\">",
            self.key.unit, self.key.scheme
        )?;
        for scale in &self.scales {
            writeln!(out, "{scale}")?;
        }
        writeln!(out, "{SCALES_END}")
    }
}

/// Reads `.debug_site_scales` text, one line at a time (one line and the
/// section being read in memory); an error names the line. NUL padding
/// must have been removed, as for site tables.
pub fn read_scales<R: BufRead>(input: R) -> Result<Vec<ScalesSection>, ReadError> {
    let mut lines = LineReader::new(input);
    let mut sections = Vec::new();
    let mut open: Option<(ScalesSection, u64)> = None;
    while lines.advance()? {
        let number = lines.line_number();
        let line = lines.current_line();
        match &mut open {
            None => match parse_start_tag(line, "scales", ["unit", "scheme"]) {
                Some([unit, scheme]) => {
                    let key = parse_key(unit, scheme, number)?;
                    open = Some((
                        ScalesSection {
                            key,
                            scales: Vec::new(),
                        },
                        number,
                    ));
                }
                None => {
                    return Err(ReadError::unexpected(number, SCALES_START_SHAPE, line));
                }
            },
            Some(_) if line == SCALES_END => {
                if let Some((section, _)) = open.take() {
                    sections.push(section);
                }
            }
            Some((section, start)) => match crate::decimal::parse::<u32>(line) {
                Some(scale) => section.scales.push(scale),
                None if looks_like_start_tag(line, "scales") => {
                    return Err(ReadError::unexpected(
                        number,
                        format!(
                            "a scale or `{SCALES_END}` closing the section opened at line {start}"
                        ),
                        line,
                    ));
                }
                None => {
                    return Err(ReadError::unexpected(
                        number,
                        "a scale: a whole number from 0 to 4294967295 without sign or leading zeros",
                        line,
                    ));
                }
            },
        }
    }
    match open {
        Some((_, start)) => Err(ReadError::new(
            lines.line_number(),
            ReadErrorKind::Truncated(format!(
                "`<scales>` section opened at line {start} is not closed by `{SCALES_END}`"
            )),
        )),
        None => Ok(sections),
    }
}

/// The scales of several binaries' sections, by (unit, scheme): the scale
/// of a site is 1 when its unit has no section (built without rates).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SiteScales {
    sections: BTreeMap<SectionKey, Vec<u32>>,
}

impl SiteScales {
    /// No scales: every site at 1.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a section; a second copy of one (unit, scheme) replaces the
    /// first (the copies of one build are identical).
    pub fn add(&mut self, section: ScalesSection) {
        self.sections.insert(section.key, section.scales);
    }

    /// Adds the sections of `.debug_site_scales` text.
    pub fn add_text(&mut self, text: &str) -> Result<(), ReadError> {
        for section in read_scales(text.as_bytes())? {
            self.add(section);
        }
        Ok(())
    }

    /// Whether no section was added.
    pub fn is_empty(&self) -> bool {
        self.sections.is_empty()
    }

    /// The scale of site `site` of `key`: 1 when unknown.
    pub fn scale(&self, key: &SectionKey, site: u32) -> u32 {
        self.sections
            .get(key)
            .and_then(|scales| scales.get(site as usize))
            .copied()
            .unwrap_or(1)
    }

    /// The sections, in (unit, scheme) order.
    pub fn sections(&self) -> impl Iterator<Item = (&SectionKey, &[u32])> {
        self.sections
            .iter()
            .map(|(key, scales)| (key, scales.as_slice()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const UNIT: &str = "0123456789abcdef0123456789abcdef";

    fn error_of(text: &str) -> String {
        read_scales(text.as_bytes()).unwrap_err().to_string()
    }

    #[test]
    fn reads_the_schema_example_and_writes_it_back() {
        let text = format!(
            "<scales unit=\"{UNIT}\" scheme=\"branches\">\n0\n10\n1\n</scales>\n\
             <scales unit=\"{UNIT}\" scheme=\"returns\">\n</scales>\n"
        );
        let sections = read_scales(text.as_bytes()).unwrap();
        assert_eq!(sections.len(), 2);
        assert_eq!(sections[0].scales, [0, 10, 1]);
        assert!(sections[1].scales.is_empty());
        let mut out = Vec::new();
        for section in &sections {
            section.write_to(&mut out).unwrap();
        }
        assert_eq!(String::from_utf8(out).unwrap(), text);
        let mut scales = SiteScales::new();
        scales.add_text(&text).unwrap();
        assert_eq!(scales.scale(&sections[0].key, 1), 10);
        assert_eq!(scales.scale(&sections[0].key, 0), 0);
        // Beyond the section, or another unit: 1.
        assert_eq!(scales.scale(&sections[0].key, 3), 1);
        assert_eq!(scales.scale(&sections[1].key, 0), 1);
    }

    #[test]
    fn errors_name_the_line() {
        let start = format!("<scales unit=\"{UNIT}\" scheme=\"branches\">\n");
        assert_eq!(
            error_of(&format!("{start}1\n01\n</scales>\n")),
            "line 3: expected a scale: a whole number from 0 to 4294967295 without sign or leading zeros, found \"01\""
        );
        assert_eq!(
            error_of(&format!("{start}4294967296\n</scales>\n")),
            "line 2: expected a scale: a whole number from 0 to 4294967295 without sign or leading zeros, found \"4294967296\""
        );
        assert_eq!(
            error_of(&format!("{start}1\n{start}")),
            format!(
                "line 3: expected a scale or `</scales>` closing the section opened at line 1, found {:?}",
                start.trim_end()
            )
        );
        assert_eq!(
            error_of(&format!("{start}1\n")),
            "line 2: unexpected end of input: `<scales>` section opened at line 1 is not closed by `</scales>`"
        );
        assert!(error_of("<scales unit=\"xyz\" scheme=\"branches\">\n").starts_with("line 1: "));
        assert!(error_of("7\n").starts_with("line 1: expected `<scales unit="));
    }
}
