//! Static site tables: `<sites unit=".." scheme="..">` sections.
//!
//! ```text
//! <sites unit="0123456789abcdef0123456789abcdef" scheme="branches">
//! /src/main.c	12	main	3	argc > 1
//! </sites>
//! ```
//!
//! Each line inside a section is one site: file, line, function, node number,
//! then the scheme's own fields, separated by tabs. Line *i* of the section
//! describes counter row *i* of every `<samples>` section with the same key.

// The example shows the format byte for byte, and its separator is a tab.
#![allow(clippy::tabs_in_doc_comments)]

use std::borrow::Cow;
use std::fmt;
use std::io::{self, BufRead, Write};

use crate::error::{ReadError, ReadErrorKind};
use crate::lines::LineReader;
use crate::scheme::{SchemeName, SiteLayout};
use crate::signature::UnitSignature;
use crate::tags::{SectionKey, looks_like_start_tag, parse_start_tag};

const SITES_END: &str = "</sites>";
const SITES_START_SHAPE: &str = "`<sites unit=\"<32 hex digits>\" scheme=\"<name>\">`";

/// One instrumentation site.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Site<'a> {
    /// Source file, as named by the preprocessor's line markers.
    pub file: Cow<'a, str>,
    /// Source line.
    pub line: u32,
    /// Function containing the site.
    pub function: Cow<'a, str>,
    /// Number of the site's statement, unique within the function.
    pub node: u32,
    /// The scheme's own fields.
    pub details: SiteDetails<'a>,
}

/// The scheme-specific fields of a site (the seed's "Site Details").
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SiteDetails<'a> {
    /// `function-entries`: nothing more.
    Plain,
    /// `branches` (predicate), `returns` (callee), `g-object-unref`
    /// (argument), `coverage` (statement), `fun-reentries` (function),
    /// `yields` (instruction).
    Expression(Cow<'a, str>),
    /// `atoms`, `atoms-rw`, `compare-swap`, `data`: the lvalue accessed.
    Access {
        /// The lvalue that may access shared, mutable memory.
        lvalue: Cow<'a, str>,
        /// Whether it is read or written.
        access: AccessKind,
    },
    /// `bounds`, `float-kinds`: the assigned lvalue.
    Assignment(Assignment<'a>),
    /// `scalar-pairs`: the assigned lvalue and what it is compared with.
    Comparison {
        /// The assigned lvalue.
        target: Assignment<'a>,
        /// The other operand: a variable name or a constant.
        other: Cow<'a, str>,
        /// What kind of operand `other` is.
        other_kind: OperandKind,
    },
    /// A scheme this version does not know: its fields verbatim.
    Unknown(Vec<Cow<'a, str>>),
}

/// The left-hand side of an instrumented assignment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assignment<'a> {
    /// The lvalue as C text.
    pub lvalue: Cow<'a, str>,
    /// Where it lives.
    pub host: HostKind,
    /// How it is reached from its host.
    pub offset: OffsetKind,
}

macro_rules! keyword_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vmeta])* $variant),+
        }

        impl $name {
            /// Every value, in the order the format documents them.
            pub const ALL: &'static [Self] = &[$(Self::$variant),+];

            /// The keyword as written in site tables.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $text),+
                }
            }

            fn parse(text: &str) -> Option<Self> {
                match text {
                    $($text => Some(Self::$variant),)+
                    _ => None,
                }
            }

            fn expected() -> String {
                let words: &[&str] = &[$(concat!("`", $text, "`")),+];
                words.join(" or ")
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

keyword_enum! {
    /// Whether an access reads or writes.
    AccessKind { /** Reads the location. */ Read = "read", /** Writes the location. */ Write = "write" }
}

keyword_enum! {
    /// Where an assigned lvalue lives.
    HostKind {
        /** A named local variable. */ Local = "local",
        /** A named global variable. */ Global = "global",
        /** An indirectly addressed memory location. */ Mem = "mem",
    }
}

keyword_enum! {
    /// How an assigned lvalue is reached from its host.
    OffsetKind {
        /** The host itself. */ Direct = "direct",
        /** A named field of a structure. */ Field = "field",
        /** An element of an array. */ Index = "index",
    }
}

keyword_enum! {
    /// What a `scalar-pairs` site compares the assigned value with.
    OperandKind {
        /** A named local variable. */ Local = "local",
        /** A named global variable. */ Global = "global",
        /** A compile-time constant. */ Const = "const",
        /** A local definitely initialised at the site. */ LocalInit = "local-init",
        /** A local possibly uninitialised at the site. */ LocalUninit = "local-uninit",
    }
}

impl Site<'_> {
    /// A copy that borrows nothing.
    pub fn into_owned(self) -> Site<'static> {
        Site {
            file: Cow::Owned(self.file.into_owned()),
            line: self.line,
            function: Cow::Owned(self.function.into_owned()),
            node: self.node,
            details: self.details.into_owned(),
        }
    }
}

fn owned(text: Cow<'_, str>) -> Cow<'static, str> {
    Cow::Owned(text.into_owned())
}

impl SiteDetails<'_> {
    /// A copy that borrows nothing.
    pub fn into_owned(self) -> SiteDetails<'static> {
        match self {
            Self::Plain => SiteDetails::Plain,
            Self::Expression(text) => SiteDetails::Expression(owned(text)),
            Self::Access { lvalue, access } => SiteDetails::Access {
                lvalue: owned(lvalue),
                access,
            },
            Self::Assignment(target) => SiteDetails::Assignment(target.into_owned()),
            Self::Comparison {
                target,
                other,
                other_kind,
            } => SiteDetails::Comparison {
                target: target.into_owned(),
                other: owned(other),
                other_kind,
            },
            Self::Unknown(fields) => SiteDetails::Unknown(fields.into_iter().map(owned).collect()),
        }
    }
}

impl Assignment<'_> {
    /// A copy that borrows nothing.
    pub fn into_owned(self) -> Assignment<'static> {
        Assignment {
            lvalue: owned(self.lvalue),
            host: self.host,
            offset: self.offset,
        }
    }
}

/// Writes the site line without its newline: exactly the text it was parsed
/// from.
impl fmt::Display for Site<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}\t{}\t{}\t{}",
            self.file, self.line, self.function, self.node
        )?;
        match &self.details {
            SiteDetails::Plain => Ok(()),
            SiteDetails::Expression(text) => write!(f, "\t{text}"),
            SiteDetails::Access { lvalue, access } => write!(f, "\t{lvalue}\t{access}"),
            SiteDetails::Assignment(target) => write!(f, "\t{target}"),
            SiteDetails::Comparison {
                target,
                other,
                other_kind,
            } => write!(f, "\t{target}\t{other}\t{other_kind}"),
            SiteDetails::Unknown(fields) => {
                fields.iter().try_for_each(|field| write!(f, "\t{field}"))
            }
        }
    }
}

impl fmt::Display for Assignment<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}\t{}\t{}", self.lvalue, self.host, self.offset)
    }
}

/// Parses one site line of a section whose scheme is `scheme`.
pub fn parse_site<'a>(line: &'a str, scheme: &SchemeName) -> Result<Site<'a>, String> {
    let layout = scheme.scheme().map(|s| s.site_layout());
    let fields: Vec<&'a str> = line.split('\t').collect();
    let n_expected = layout.map(|l| 4 + l.n_fields());
    let count_ok = match n_expected {
        Some(n) => fields.len() == n,
        None => fields.len() >= 4,
    };
    if !count_ok {
        let wanted = match n_expected {
            Some(n) => format!("{n}"),
            None => "at least 4".to_owned(),
        };
        return Err(format!(
            "expected a `{scheme}` site line of {wanted} tab-separated fields, found {} in {}",
            fields.len(),
            crate::error::quote(line)
        ));
    }
    let text = |index: usize, what: &str| -> Result<Cow<'a, str>, String> {
        let field = fields[index];
        if field.is_empty() {
            Err(format!(
                "field {} ({what}) of the site line is empty",
                index + 1
            ))
        } else {
            Ok(Cow::Borrowed(field))
        }
    };
    let number = |index: usize, what: &str| -> Result<u32, String> {
        crate::decimal::parse::<u32>(fields[index]).ok_or_else(|| {
            format!(
                "field {} ({what}) of the site line is {}, not a decimal number below 2^32",
                index + 1,
                crate::error::quote(fields[index])
            )
        })
    };
    fn keyword<T>(
        fields: &[&str],
        index: usize,
        parse: fn(&str) -> Option<T>,
        expected: fn() -> String,
    ) -> Result<T, String> {
        parse(fields[index]).ok_or_else(|| {
            format!(
                "field {} of the site line is {}, expected {}",
                index + 1,
                crate::error::quote(fields[index]),
                expected()
            )
        })
    }
    let assignment = |start: usize| -> Result<Assignment<'a>, String> {
        Ok(Assignment {
            lvalue: text(start, "assigned lvalue")?,
            host: keyword(&fields, start + 1, HostKind::parse, HostKind::expected)?,
            offset: keyword(&fields, start + 2, OffsetKind::parse, OffsetKind::expected)?,
        })
    };
    let details = match layout {
        None => SiteDetails::Unknown(fields[4..].iter().map(|f| Cow::Borrowed(*f)).collect()),
        Some(SiteLayout::Plain) => SiteDetails::Plain,
        Some(SiteLayout::Expression) => SiteDetails::Expression(text(4, "expression")?),
        Some(SiteLayout::Access) => SiteDetails::Access {
            lvalue: text(4, "accessed lvalue")?,
            access: keyword(&fields, 5, AccessKind::parse, AccessKind::expected)?,
        },
        Some(SiteLayout::Assignment) => SiteDetails::Assignment(assignment(4)?),
        Some(SiteLayout::Comparison) => SiteDetails::Comparison {
            target: assignment(4)?,
            other: text(7, "other operand")?,
            other_kind: keyword(&fields, 8, OperandKind::parse, OperandKind::expected)?,
        },
    };
    Ok(Site {
        file: text(0, "file")?,
        line: number(1, "line")?,
        function: text(2, "function")?,
        node: number(3, "node")?,
        details,
    })
}

/// Parses a `<sites ...>` start tag.
pub(crate) fn parse_sites_start(
    line: &str,
    line_number: u64,
) -> Result<Option<SectionKey>, ReadError> {
    match parse_start_tag(line, "sites", ["unit", "scheme"]) {
        Some([unit, scheme]) => parse_key(unit, scheme, line_number).map(Some),
        None if looks_like_start_tag(line, "sites") => {
            Err(ReadError::unexpected(line_number, SITES_START_SHAPE, line))
        }
        None => Ok(None),
    }
}

pub(crate) fn parse_key(
    unit: &str,
    scheme: &str,
    line_number: u64,
) -> Result<SectionKey, ReadError> {
    let unit: UnitSignature = unit
        .parse()
        .map_err(|error| ReadError::invalid(line_number, error))?;
    let scheme: SchemeName = scheme
        .parse()
        .map_err(|error| ReadError::invalid(line_number, error))?;
    Ok(SectionKey { unit, scheme })
}

/// One step of reading a site table; see [`SiteTableReader::next_event`].
#[derive(Debug)]
pub enum SiteTableEvent<'a> {
    /// `<sites unit=".." scheme="..">`.
    SectionStart(&'a SectionKey),
    /// One site of the open section.
    Site(Site<'a>),
    /// `</sites>`, after `n_sites` sites.
    SectionEnd {
        /// The number of sites in the section just closed.
        n_sites: usize,
    },
}

/// A whole `<sites>` section, owned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SitesSection {
    /// The unit and scheme the section describes.
    pub key: SectionKey,
    /// The sites, in counter-row order.
    pub sites: Vec<Site<'static>>,
}

/// Streams a site table, one line at a time.
///
/// Holds one line in memory, never the table. Every error names its line.
#[derive(Debug)]
pub struct SiteTableReader<R> {
    lines: LineReader<R>,
    open: Option<OpenSection>,
}

#[derive(Debug)]
struct OpenSection {
    key: SectionKey,
    start_line: u64,
    n_sites: usize,
}

impl<R: BufRead> SiteTableReader<R> {
    /// A reader of the site table `input`.
    pub fn new(input: R) -> Self {
        Self {
            lines: LineReader::new(input),
            open: None,
        }
    }

    /// The number of the line last read.
    pub fn line_number(&self) -> u64 {
        self.lines.line_number()
    }

    /// The next event, or `None` at the end of a well-formed table.
    pub fn next_event(&mut self) -> Result<Option<SiteTableEvent<'_>>, ReadError> {
        if !self.lines.advance()? {
            return match &self.open {
                Some(open) => Err(ReadError::new(
                    self.lines.line_number(),
                    ReadErrorKind::Truncated(format!(
                        "`<sites>` section opened at line {} is not closed by `{SITES_END}`",
                        open.start_line
                    )),
                )),
                None => Ok(None),
            };
        }
        let line_number = self.lines.line_number();
        let line = self.lines.current_line();
        match &mut self.open {
            None => match parse_sites_start(line, line_number)? {
                Some(key) => {
                    let open = self.open.insert(OpenSection {
                        key,
                        start_line: line_number,
                        n_sites: 0,
                    });
                    Ok(Some(SiteTableEvent::SectionStart(&open.key)))
                }
                None => Err(ReadError::unexpected(line_number, SITES_START_SHAPE, line)),
            },
            Some(open) if line == SITES_END => {
                let n_sites = open.n_sites;
                self.open = None;
                Ok(Some(SiteTableEvent::SectionEnd { n_sites }))
            }
            Some(open) => {
                if line.starts_with("<sites") {
                    return Err(ReadError::unexpected(
                        line_number,
                        format!(
                            "a site line or `{SITES_END}` closing the section opened at line {}",
                            open.start_line
                        ),
                        line,
                    ));
                }
                let site = parse_site(line, &open.key.scheme)
                    .map_err(|message| ReadError::invalid(line_number, message))?;
                open.n_sites += 1;
                Ok(Some(SiteTableEvent::Site(site)))
            }
        }
    }

    /// The next whole section, or `None` at the end of the table. Called
    /// after [`next_event`](Self::next_event) stopped inside a section, it
    /// returns the rest of that section.
    pub fn next_section(&mut self) -> Result<Option<SitesSection>, ReadError> {
        let mut key = self.open.as_ref().map(|open| open.key.clone());
        let mut sites = Vec::new();
        loop {
            match self.next_event()? {
                None => return Ok(None),
                Some(SiteTableEvent::SectionStart(start)) => key = Some(start.clone()),
                Some(SiteTableEvent::Site(site)) => sites.push(site.into_owned()),
                Some(SiteTableEvent::SectionEnd { .. }) => {
                    // Always set: a section ends only after it started.
                    if let Some(key) = key.take() {
                        return Ok(Some(SitesSection { key, sites }));
                    }
                }
            }
        }
    }
}

/// Writes one `<sites>` section.
pub fn write_sites_section<'s, W: Write>(
    out: &mut W,
    key: &SectionKey,
    sites: impl IntoIterator<Item = &'s Site<'s>>,
) -> io::Result<()> {
    writeln!(
        out,
        "<sites unit=\"{}\" scheme=\"{}\">",
        key.unit, key.scheme
    )?;
    for site in sites {
        writeln!(out, "{site}")?;
    }
    writeln!(out, "{SITES_END}")
}

impl SitesSection {
    /// Writes the section.
    pub fn write_to<W: Write>(&self, out: &mut W) -> io::Result<()> {
        write_sites_section(out, &self.key, &self.sites)
    }
}

/// Reads a whole site table. For large tables prefer [`SiteTableReader`].
pub fn read_site_table<R: BufRead>(input: R) -> Result<Vec<SitesSection>, ReadError> {
    let mut reader = SiteTableReader::new(input);
    let mut sections = Vec::new();
    while let Some(section) = reader.next_section()? {
        sections.push(section);
    }
    Ok(sections)
}

#[cfg(test)]
mod tests {
    use super::*;

    const UNIT: &str = "0123456789abcdef0123456789abcdef";

    fn table(body: &str) -> String {
        format!("<sites unit=\"{UNIT}\" scheme=\"scalar-pairs\">\n{body}</sites>\n")
    }

    fn error_of(text: &str) -> String {
        read_site_table(text.as_bytes()).unwrap_err().to_string()
    }

    #[test]
    fn parses_every_field_of_a_scalar_pairs_site() {
        let text = table("up.c\t8\tmain\t33\targ\tlocal\tdirect\targc\tlocal-init\n");
        let sections = read_site_table(text.as_bytes()).unwrap();
        assert_eq!(sections.len(), 1);
        let site = &sections[0].sites[0];
        assert_eq!(site.file, "up.c");
        assert_eq!(site.line, 8);
        assert_eq!(site.function, "main");
        assert_eq!(site.node, 33);
        assert_eq!(
            site.details,
            SiteDetails::Comparison {
                target: Assignment {
                    lvalue: "arg".into(),
                    host: HostKind::Local,
                    offset: OffsetKind::Direct
                },
                other: "argc".into(),
                other_kind: OperandKind::LocalInit,
            }
        );
        let mut written = Vec::new();
        sections[0].write_to(&mut written).unwrap();
        assert_eq!(String::from_utf8(written).unwrap(), text);
    }

    #[test]
    fn field_count_is_checked_per_scheme() {
        assert_eq!(
            error_of(&table("up.c\t8\tmain\t33\targ\n")),
            "line 2: expected a `scalar-pairs` site line of 9 tab-separated fields, found 5 in \"up.c\\t8\\tmain\\t33\\targ\""
        );
    }

    #[test]
    fn keywords_and_numbers_are_checked() {
        assert_eq!(
            error_of(&table(
                "up.c\t8\tmain\t33\targ\tstack\tdirect\targc\tlocal-init\n"
            )),
            "line 2: field 6 of the site line is \"stack\", expected `local` or `global` or `mem`"
        );
        assert_eq!(
            error_of(&table(
                "up.c\t-8\tmain\t33\targ\tlocal\tdirect\targc\tlocal\n"
            )),
            "line 2: field 2 (line) of the site line is \"-8\", not a decimal number below 2^32"
        );
        assert_eq!(
            error_of(&table("\t8\tmain\t33\targ\tlocal\tdirect\targc\tlocal\n")),
            "line 2: field 1 (file) of the site line is empty"
        );
    }

    #[test]
    fn structure_errors_name_the_line() {
        assert_eq!(
            error_of("hello\n"),
            "line 1: expected `<sites unit=\"<32 hex digits>\" scheme=\"<name>\">`, found \"hello\""
        );
        assert_eq!(
            error_of(&format!("<sites unit=\"{UNIT}\" scheme=\"branches\">\n")),
            "line 1: unexpected end of input: `<sites>` section opened at line 1 is not closed by `</sites>`"
        );
        assert_eq!(
            error_of("<sites unit=\"ABC\" scheme=\"branches\">\n</sites>\n"),
            "line 1: `ABC` is not a unit signature: expected 32 lowercase hexadecimal digits"
        );
        assert_eq!(
            error_of(&format!(
                "<sites unit=\"{UNIT}\" scheme=\"branches\">\n<sites unit=\"{UNIT}\" scheme=\"branches\">\n"
            )),
            format!(
                "line 2: expected a site line or `</sites>` closing the section opened at line 1, found \"<sites unit=\\\"{UNIT}\\\" scheme=\\\"branches\\\">\""
            )
        );
    }

    #[test]
    fn unknown_schemes_keep_their_fields() {
        let text =
            format!("<sites unit=\"{UNIT}\" scheme=\"paths\">\na.c\t1\tf\t0\tx\ty\n</sites>\n");
        let sections = read_site_table(text.as_bytes()).unwrap();
        assert_eq!(
            sections[0].sites[0].details,
            SiteDetails::Unknown(vec!["x".into(), "y".into()])
        );
    }

    #[test]
    fn next_section_completes_a_section_begun_with_next_event() {
        let text = table("a.c\t1\tf\t0\tx\tlocal\tdirect\ty\tconst\n");
        let mut reader = SiteTableReader::new(text.as_bytes());
        assert!(matches!(
            reader.next_event().unwrap(),
            Some(SiteTableEvent::SectionStart(_))
        ));
        let section = reader.next_section().unwrap().unwrap();
        assert_eq!(section.key.unit.to_string(), UNIT);
        assert_eq!(section.sites.len(), 1);
        assert!(reader.next_section().unwrap().is_none());
    }
}
