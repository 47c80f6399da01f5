//! The text of the `main-backtrace` and `modules` subreports.

use std::fmt;

/// One line of a `main-backtrace` subreport, as glibc's
/// `backtrace_symbols_fd` prints it:
///
/// ```text
/// ./prog(crash+0x14)[0x401136]                               object(symbol+offset)[address]
/// /lib/x86_64-linux-gnu/libc.so.6(+0x3c050)[0x7f6c1c23c050]   object(+offset)[address]
/// prog[0x804ff1c]                                             object[address]
/// [0x7f6c1c23c050]                                            [address]
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawFrame {
    /// The absolute address (a return address, except for the faulting
    /// frame).
    pub address: u64,
    /// The object as printed: the loader's name for a shared library, the
    /// program's `argv[0]` for the main program, empty when glibc knew none.
    pub object: String,
    /// The dynamic symbol glibc found for the address, if any.
    pub symbol: Option<String>,
    /// With a symbol, the address minus the symbol's value; without one,
    /// the address minus the object's load address (glibc prints the
    /// parenthesis only when one of the two is known: `object[address]`
    /// means a load address of 0). `None` when glibc printed no offset, or
    /// the (never seen in practice) negative offset `symbol-0x…`.
    pub offset: Option<u64>,
}

/// One line of the `modules` subreport: `load-address TAB build-id TAB path`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadedModule {
    /// What the object's virtual addresses are relative to (`0x0` for a
    /// non-PIE executable).
    pub load_address: u64,
    /// The lowercase hex of the object's `NT_GNU_BUILD_ID` note, if any.
    pub build_id: Option<String>,
    /// The object's path (the main program's from `/proc/self/exe`).
    pub path: String,
}

/// A line of a `main-backtrace` or `modules` subreport that does not have
/// the expected shape. It names the line, counted from 1 in the text given
/// to the parser.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct BacktraceError {
    line: u64,
    message: String,
}

impl BacktraceError {
    fn new(line: u64, message: impl fmt::Display) -> Self {
        Self {
            line,
            message: message.to_string(),
        }
    }

    /// The line (counted from 1) where the error was found.
    pub fn line(&self) -> u64 {
        self.line
    }

    /// What was wrong with it.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The same error with its line counted from `lines` lines earlier:
    /// for a subreport body that starts after line `lines` of a report.
    #[must_use]
    pub fn shifted(self, lines: u64) -> Self {
        Self {
            line: self.line.saturating_add(lines),
            message: self.message,
        }
    }
}

const FRAME_SHAPE: &str = "a frame `OBJECT(SYMBOL+0xOFFSET)[0xADDRESS]`, `OBJECT(+0xOFFSET)[0xADDRESS]` or `OBJECT[0xADDRESS]`";
const MODULE_SHAPE: &str = "a module `0xLOAD-ADDRESS<TAB>BUILD-ID<TAB>PATH`";

/// Parses the body of a `main-backtrace` subreport, one frame per line,
/// outermost caller last.
pub fn parse_backtrace(text: &str) -> Result<Vec<RawFrame>, BacktraceError> {
    lines(text)
        .map(|(number, line)| {
            parse_frame(line).ok_or_else(|| {
                BacktraceError::new(
                    number,
                    format_args!("expected {FRAME_SHAPE}, found {}", quote(line)),
                )
            })
        })
        .collect()
}

/// Parses the body of a `modules` subreport.
pub fn parse_modules(text: &str) -> Result<Vec<LoadedModule>, BacktraceError> {
    lines(text)
        .map(|(number, line)| parse_module(number, line))
        .collect()
}

/// The lines of `text` with their numbers; a final newline ends the last
/// line rather than starting an empty one.
fn lines(text: &str) -> impl Iterator<Item = (u64, &str)> {
    let text = text.strip_suffix('\n').unwrap_or(text);
    let pieces = if text.is_empty() {
        None
    } else {
        Some(text.split('\n'))
    };
    pieces
        .into_iter()
        .flatten()
        .zip(1u64..)
        .map(|(l, n)| (n, l))
}

fn parse_frame(line: &str) -> Option<RawFrame> {
    let inner = line.strip_suffix(']')?;
    let open = inner.rfind('[')?;
    let address = hex_u64(inner[open + 1..].strip_prefix("0x")?)?;
    let rest = &inner[..open];
    // `object(symbol+0xoffset)`: the parenthesis is glibc's only when it
    // holds an offset; otherwise it is part of the object's path.
    if let Some(described) = rest.strip_suffix(')')
        && let Some(paren) = described.rfind('(')
        && let Some((symbol, offset)) = symbol_and_offset(&described[paren + 1..])
    {
        return Some(RawFrame {
            address,
            object: described[..paren].to_owned(),
            symbol: (!symbol.is_empty()).then(|| symbol.to_owned()),
            offset,
        });
    }
    Some(RawFrame {
        address,
        object: rest.to_owned(),
        symbol: None,
        offset: None,
    })
}

/// `symbol+0xhex` or `symbol-0xhex` (symbol possibly empty): the symbol
/// and the offset (`None` when negative).
fn symbol_and_offset(text: &str) -> Option<(&str, Option<u64>)> {
    let sign = text.rfind(['+', '-'])?;
    let value = hex_u64(text[sign + 1..].strip_prefix("0x")?)?;
    let offset = (text.as_bytes()[sign] == b'+').then_some(value);
    Some((&text[..sign], offset))
}

/// 1 to 16 hex digits, either case.
fn hex_u64(digits: &str) -> Option<u64> {
    if digits.is_empty() || digits.len() > 16 || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(digits, 16).ok()
}

fn parse_module(number: u64, line: &str) -> Result<LoadedModule, BacktraceError> {
    let mut fields = line.splitn(3, '\t');
    let (Some(address), Some(build_id), Some(path)) = (fields.next(), fields.next(), fields.next())
    else {
        return Err(BacktraceError::new(
            number,
            format_args!("expected {MODULE_SHAPE}, found {}", quote(line)),
        ));
    };
    let load_address = address
        .strip_prefix("0x")
        .filter(|digits| {
            digits
                .bytes()
                .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        })
        .and_then(hex_u64)
        .ok_or_else(|| {
            BacktraceError::new(
                number,
                format_args!(
                    "the load address {} is not `0x` and 1 to 16 lowercase hex digits",
                    quote_field(address)
                ),
            )
        })?;
    let build_id = match build_id {
        "-" => None,
        id if !id.is_empty()
            && id.len() % 2 == 0
            && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) =>
        {
            Some(id.to_owned())
        }
        other => {
            return Err(BacktraceError::new(
                number,
                format_args!(
                    "the build id {} is neither `-` nor lowercase hex bytes",
                    quote_field(other)
                ),
            ));
        }
    };
    Ok(LoadedModule {
        load_address,
        build_id,
        path: path.to_owned(),
    })
}

/// Quotes a line for an error message, escaping tabs and cutting it short
/// so that one hostile line cannot flood the terminal.
fn quote(text: &str) -> String {
    const LIMIT: usize = 80;
    if text.is_empty() {
        return "an empty line".to_owned();
    }
    match text.char_indices().nth(LIMIT) {
        Some((cut, _)) => format!("{:?}…", &text[..cut]),
        None => format!("{text:?}"),
    }
}

/// [`quote`] for a field, where empty is not a line.
fn quote_field(text: &str) -> String {
    if text.is_empty() {
        "\"\"".to_owned()
    } else {
        quote(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(address: u64, object: &str, symbol: Option<&str>, offset: Option<u64>) -> RawFrame {
        RawFrame {
            address,
            object: object.to_owned(),
            symbol: symbol.map(str::to_owned),
            offset,
        }
    }

    #[test]
    fn every_shape_glibc_prints() {
        let text = "./prog(crash+0x14)[0x401136]\n\
                    /lib/x86_64-linux-gnu/libc.so.6(+0x3c050)[0x7f6c1c23c050]\n\
                    prog[0x804ff1c]\n\
                    [0x7f6c1c23c050]\n\
                    /opt/a (copy)/lib(x)[y].so(f-0x10)[0x20]\n\
                    /opt/odd(name)[0x0]\n\
                    prog(_ZN3foo3barE+0xABC)[0xFFFFFFFFFFFFFFFF]";
        assert_eq!(
            parse_backtrace(text).unwrap(),
            [
                frame(0x401136, "./prog", Some("crash"), Some(0x14)),
                frame(
                    0x7f6c1c23c050,
                    "/lib/x86_64-linux-gnu/libc.so.6",
                    None,
                    Some(0x3c050)
                ),
                frame(0x804ff1c, "prog", None, None),
                frame(0x7f6c1c23c050, "", None, None),
                frame(0x20, "/opt/a (copy)/lib(x)[y].so", Some("f"), None),
                frame(0, "/opt/odd(name)", None, None),
                frame(u64::MAX, "prog", Some("_ZN3foo3barE"), Some(0xabc)),
            ]
        );
        assert_eq!(parse_backtrace("").unwrap(), []);
        assert_eq!(
            parse_backtrace("p[0x1]\n").unwrap(),
            [frame(1, "p", None, None)]
        );
    }

    #[test]
    fn bad_frames_are_named_by_line() {
        let error = parse_backtrace("p[0x1]\np[0x2]\r\n").unwrap_err();
        assert_eq!(
            error.to_string(),
            format!("line 2: expected {FRAME_SHAPE}, found \"p[0x2]\\r\"")
        );
        for bad in [
            "p[0x1]\n\np[0x2]",
            "p[0x1]\np[0x]",
            "p[0x1]\np[1]",
            "p[0x1]\np[0x10000000000000000]",
            "p[0x1]\np[0x+1]",
            "p[0x1]\np(f+0x1)",
        ] {
            let error = parse_backtrace(bad).unwrap_err();
            assert_eq!(error.line(), 2, "{bad:?}");
        }
        assert_eq!(
            parse_backtrace("p[0x1]\n\n").unwrap_err().to_string(),
            format!("line 2: expected {FRAME_SHAPE}, found an empty line")
        );
        let shifted = parse_backtrace("p[0x1]\nq").unwrap_err().shifted(10);
        assert_eq!(shifted.line(), 12);
        assert_eq!(
            shifted.message(),
            format!("expected {FRAME_SHAPE}, found \"q\"")
        );
    }

    #[test]
    fn modules() {
        let text = "0x0\t4f2c\t/usr/local/bin/prog\n\
                    0x7f6c1c200000\t-\t/lib/x86_64-linux-gnu/libc.so.6\n\
                    0x10\t-\t/a\tb\n\
                    0x20\t-\t\n";
        let module = |load_address, build_id: Option<&str>, path: &str| LoadedModule {
            load_address,
            build_id: build_id.map(str::to_owned),
            path: path.to_owned(),
        };
        assert_eq!(
            parse_modules(text).unwrap(),
            [
                module(0, Some("4f2c"), "/usr/local/bin/prog"),
                module(0x7f6c1c200000, None, "/lib/x86_64-linux-gnu/libc.so.6"),
                module(0x10, None, "/a\tb"),
                module(0x20, None, ""),
            ]
        );
    }

    #[test]
    fn bad_modules_are_named_by_line() {
        let check = |text: &str, expected: &str| {
            assert_eq!(parse_modules(text).unwrap_err().to_string(), expected);
        };
        check(
            "0x0\t-\t/a\n0x0\t-",
            &format!("line 2: expected {MODULE_SHAPE}, found \"0x0\\t-\""),
        );
        check(
            "0x0\t-\t/a\n0X0\t-\t/b",
            "line 2: the load address \"0X0\" is not `0x` and 1 to 16 lowercase hex digits",
        );
        check(
            "0xA0\t-\t/b",
            "line 1: the load address \"0xA0\" is not `0x` and 1 to 16 lowercase hex digits",
        );
        check(
            "0x0\tabc\t/b",
            "line 1: the build id \"abc\" is neither `-` nor lowercase hex bytes",
        );
        check(
            "0x0\t\t/b",
            "line 1: the build id \"\" is neither `-` nor lowercase hex bytes",
        );
    }
}
