//! gcc's preprocessed file (`.i`): where each byte came from, according to
//! gcc's line markers, and the source text of expressions as site tables
//! print it.
//!
//! A line marker is `# LINE "FILE" FLAGS`, flags 1 (entering an include),
//! 2 (returning), 3 (system header), 4 (extern "C"). gcc also writes them in
//! the middle of expressions when it expands a macro from a system header, so
//! expression text must skip them.

use std::borrow::Cow;

/// The source position gcc's markers give for a byte of the `.i`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Presumed<'a> {
    pub file: &'a str,
    pub line: u32,
    /// Inside a system header (marker flag 3).
    pub system: bool,
}

#[derive(Debug)]
struct Marker {
    /// Offset of the first byte of the line after the marker.
    start: usize,
    /// The line number of that line.
    line: u32,
    file: usize,
    system: bool,
}

/// Offset to (file, line, system) lookups over one `.i`.
#[derive(Debug)]
pub struct LineMap {
    files: Vec<String>,
    markers: Vec<Marker>,
    /// Offsets of every `\n`, to count lines between a marker and a byte.
    newlines: Vec<usize>,
}

impl LineMap {
    pub fn new(text: &[u8]) -> Self {
        let mut map = LineMap {
            files: Vec::new(),
            markers: Vec::new(),
            newlines: Vec::new(),
        };
        let mut line_start = 0;
        for (offset, &byte) in text.iter().enumerate() {
            if byte != b'\n' {
                continue;
            }
            map.newlines.push(offset);
            map.scan_marker(&text[line_start..offset], offset + 1);
            line_start = offset + 1;
        }
        if line_start < text.len() {
            map.scan_marker(&text[line_start..], text.len());
        }
        map
    }

    fn scan_marker(&mut self, line: &[u8], next_line: usize) {
        let Some((number, file, flags)) = parse_marker(line) else {
            return;
        };
        let file = match self.files.iter().position(|known| *known == file) {
            Some(index) => index,
            None => {
                self.files.push(file.into_owned());
                self.files.len() - 1
            }
        };
        self.markers.push(Marker {
            start: next_line,
            line: number,
            file,
            system: flags.contains(&3),
        });
    }

    /// Where the byte at `offset` comes from; `None` before the first marker.
    pub fn presumed(&self, offset: usize) -> Option<Presumed<'_>> {
        let index = self
            .markers
            .partition_point(|marker| marker.start <= offset)
            .checked_sub(1)?;
        let marker = &self.markers[index];
        let lines_between = self.newlines.partition_point(|&nl| nl < offset)
            - self.newlines.partition_point(|&nl| nl < marker.start);
        Some(Presumed {
            file: &self.files[marker.file],
            line: marker.line.saturating_add(lines_between as u32),
            system: marker.system,
        })
    }

    /// Offset of the first byte of the line holding `offset`.
    pub fn line_start(&self, offset: usize) -> usize {
        let index = self.newlines.partition_point(|&nl| nl < offset);
        index.checked_sub(1).map_or(0, |i| self.newlines[i] + 1)
    }

    /// The marker lines inside `from..to`: the offset of each one's `\n`
    /// and whether it enters system-header text.
    pub fn markers_between(&self, from: usize, to: usize) -> Vec<(usize, bool)> {
        let first = self.markers.partition_point(|m| m.start <= from);
        self.markers[first..]
            .iter()
            .take_while(|m| m.start <= to)
            .map(|m| (m.start - 1, m.system))
            .collect()
    }

    /// A marker line (with its `\n`) that makes the next line the one
    /// holding `offset`, as system-header text when `system`.
    pub fn marker_for(&self, offset: usize, system: bool) -> Option<String> {
        let presumed = self.presumed(offset)?;
        Some(format!(
            "# {} \"{}\"{}\n",
            presumed.line,
            presumed.file.replace('\\', "\\\\").replace('"', "\\\""),
            if system { " 3" } else { "" }
        ))
    }

    /// Offset of the end of the first line (just after its `\n`), where the
    /// instrumenter's prelude goes: gcc takes the main file's name from the
    /// first marker, so that one must stay first.
    pub fn after_first_line(&self, len: usize) -> usize {
        self.newlines.first().map_or(len, |nl| nl + 1)
    }
}

/// The main file of a `.i`: the name in its first line's marker.
pub fn main_file(text: &[u8]) -> Option<String> {
    let first_line = text.split(|&byte| byte == b'\n').next()?;
    parse_marker(first_line).map(|(_, file, _)| file.into_owned())
}

/// `# 12 "dir/file.c" 1 3` → (12, "dir/file.c", [1, 3]). Also `#line`.
fn parse_marker(line: &[u8]) -> Option<(u32, Cow<'_, str>, Vec<u8>)> {
    let rest = line.strip_prefix(b"#")?;
    let rest = rest.strip_prefix(b"line").unwrap_or(rest);
    let rest = trim_start(rest);
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 {
        return None;
    }
    let number: u32 = std::str::from_utf8(&rest[..digits]).ok()?.parse().ok()?;
    let rest = trim_start(&rest[digits..]);
    let rest = rest.strip_prefix(b"\"")?;
    let (file, after) = unescape_c_string(rest)?;
    let flags = after
        .split(|b| b.is_ascii_whitespace())
        .filter(|word| !word.is_empty())
        .filter_map(|word| std::str::from_utf8(word).ok()?.parse().ok())
        .collect();
    Some((number, file, flags))
}

fn trim_start(bytes: &[u8]) -> &[u8] {
    let skip = bytes
        .iter()
        .take_while(|b| **b == b' ' || **b == b'\t')
        .count();
    &bytes[skip..]
}

/// Reads a C string body up to its closing quote (gcc escapes `\`, `"` and
/// unprintable bytes as octal in marker file names).
fn unescape_c_string(bytes: &[u8]) -> Option<(Cow<'_, str>, &[u8])> {
    let mut out = Vec::new();
    let mut index = 0;
    while index < bytes.len() {
        match bytes[index] {
            b'"' => {
                let text = match String::from_utf8(out) {
                    Ok(text) => Cow::Owned(text),
                    Err(err) => Cow::Owned(String::from_utf8_lossy(err.as_bytes()).into_owned()),
                };
                return Some((text, &bytes[index + 1..]));
            }
            b'\\' if index + 1 < bytes.len() => {
                let next = bytes[index + 1];
                if (b'0'..=b'7').contains(&next) {
                    let digits = bytes[index + 1..]
                        .iter()
                        .take(3)
                        .take_while(|b| (b'0'..=b'7').contains(b));
                    let count = digits.clone().count();
                    let value = digits.fold(0u32, |acc, digit| acc * 8 + u32::from(digit - b'0'));
                    out.push(value as u8);
                    index += 1 + count;
                } else {
                    out.push(match next {
                        b'n' => b'\n',
                        b't' => b'\t',
                        other => other,
                    });
                    index += 2;
                }
            }
            byte => {
                out.push(byte);
                index += 1;
            }
        }
    }
    None
}

/// The longest site text kept; longer expressions end in ` ...`.
pub const MAX_SITE_TEXT: usize = 1000;

/// The expression text of `text[start..end]` as site tables print it:
/// comments and marker lines removed, every run of white space made one
/// space, at most [`MAX_SITE_TEXT`] bytes.
pub fn site_text(text: &[u8], start: usize, end: usize) -> String {
    let bytes = &text[start..end.min(text.len())];
    let mut out: Vec<u8> = Vec::with_capacity(bytes.len().min(MAX_SITE_TEXT));
    let mut pending_space = false;
    let mut at_line_start = start == 0 || text[start - 1] == b'\n';
    let mut index = 0;
    let push = |out: &mut Vec<u8>, byte: u8, pending: &mut bool| {
        if *pending && !out.is_empty() {
            out.push(b' ');
        }
        *pending = false;
        out.push(byte);
    };
    while index < bytes.len() && out.len() <= MAX_SITE_TEXT {
        let byte = bytes[index];
        match byte {
            b'\n' => {
                pending_space = true;
                at_line_start = true;
                index += 1;
                continue;
            }
            b' ' | b'\t' | b'\r' | b'\x0b' | b'\x0c' => {
                pending_space = true;
                index += 1;
                continue;
            }
            b'#' if at_line_start => {
                // A line marker or a pragma: the whole line goes.
                while index < bytes.len() && bytes[index] != b'\n' {
                    index += 1;
                }
                continue;
            }
            b'/' if bytes.get(index + 1) == Some(&b'*') => {
                let close = bytes[index + 2..].windows(2).position(|w| w == b"*/");
                index = close.map_or(bytes.len(), |at| index + 2 + at + 2);
                pending_space = true;
                continue;
            }
            b'/' if bytes.get(index + 1) == Some(&b'/') => {
                while index < bytes.len() && bytes[index] != b'\n' {
                    index += 1;
                }
                pending_space = true;
                continue;
            }
            b'"' | b'\'' => {
                // Literals are copied as they are, white space included.
                let quote = byte;
                push(&mut out, byte, &mut pending_space);
                index += 1;
                while index < bytes.len() {
                    let inner = bytes[index];
                    out.push(if inner == b'\t' || inner == b'\n' {
                        b' '
                    } else {
                        inner
                    });
                    index += 1;
                    if inner == b'\\' && index < bytes.len() {
                        out.push(bytes[index]);
                        index += 1;
                    } else if inner == quote {
                        break;
                    }
                }
            }
            _ => {
                push(&mut out, byte, &mut pending_space);
                index += 1;
            }
        }
        at_line_start = false;
    }
    let mut text = String::from_utf8_lossy(&out).into_owned();
    if text.len() > MAX_SITE_TEXT {
        let mut cut = MAX_SITE_TEXT;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push_str(" ...");
    }
    if text.is_empty() {
        text.push('?');
    }
    text
}

/// Skips white space, comments and marker lines forward from `offset`;
/// returns the offset of the next token.
pub fn skip_trivia(text: &[u8], mut offset: usize) -> usize {
    loop {
        match text.get(offset) {
            Some(b' ' | b'\t' | b'\r' | b'\n' | b'\x0b' | b'\x0c') => offset += 1,
            Some(b'/') if text.get(offset + 1) == Some(&b'*') => {
                offset = text[offset + 2..]
                    .windows(2)
                    .position(|w| w == b"*/")
                    .map_or(text.len(), |at| offset + 2 + at + 2);
            }
            Some(b'/') if text.get(offset + 1) == Some(&b'/') => {
                while offset < text.len() && text[offset] != b'\n' {
                    offset += 1;
                }
            }
            Some(b'#') if offset == 0 || text[offset - 1] == b'\n' => {
                while offset < text.len() && text[offset] != b'\n' {
                    offset += 1;
                }
            }
            _ => return offset,
        }
    }
}

/// The end of the identifier, keyword or number starting at `start`.
pub fn identifier_end(text: &[u8], start: usize) -> usize {
    let mut end = start;
    while end < text.len() && (text[end] == b'_' || text[end].is_ascii_alphanumeric()) {
        end += 1;
    }
    end
}

/// The tokens of `text[start..end]` as extents, outside comments (the `.i`
/// keeps them: `-C`) and line markers: identifiers and keywords, numbers
/// (`1e10`, `0x1f`, `10u`: no identifier inside), string and character
/// literals whole, and every other byte on its own: a comma, bracket,
/// semicolon or apostrophe in a comment or a literal is not one of the
/// text's.
pub fn tokens(text: &[u8], start: usize, end: usize) -> impl Iterator<Item = (usize, usize)> + '_ {
    let mut at = start;
    std::iter::from_fn(move || {
        at = skip_trivia(text, at).min(end);
        let &byte = text[..end].get(at)?;
        let token_start = at;
        if byte == b'"' || byte == b'\'' {
            at += 1;
            while at < end && text[at] != byte {
                at += if text[at] == b'\\' { 2 } else { 1 };
            }
            at = (at + 1).min(end);
        } else if byte == b'_' || byte.is_ascii_alphanumeric() {
            at = identifier_end(text, at).min(end);
        } else {
            at += 1;
        }
        Some((token_start, at))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "# 0 \"main.c\"\n# 1 \"/usr/include/stdio.h\" 1 3 4\nint printf();\n\
                          # 3 \"main.c\" 2\nint main(void)\n{\n  return x ==\n# 5 \"main.c\" 3 4\n (0)\n# 5 \"main.c\"\n ;\n}\n";

    #[test]
    fn presumed_positions_follow_markers() {
        let text = SAMPLE.as_bytes();
        let map = LineMap::new(text);
        let at = |needle: &str| map.presumed(SAMPLE.find(needle).unwrap()).unwrap();
        assert_eq!(
            at("int printf"),
            Presumed {
                file: "/usr/include/stdio.h",
                line: 1,
                system: true
            }
        );
        assert_eq!(
            at("int main"),
            Presumed {
                file: "main.c",
                line: 3,
                system: false
            }
        );
        assert_eq!(
            at("return"),
            Presumed {
                file: "main.c",
                line: 5,
                system: false
            }
        );
        assert_eq!(
            at("(0)"),
            Presumed {
                file: "main.c",
                line: 5,
                system: true
            }
        );
        assert_eq!(map.presumed(3), None);
        assert_eq!(map.after_first_line(text.len()), 13);
        assert_eq!(main_file(text).as_deref(), Some("main.c"));
        assert_eq!(main_file(b"int x;\n"), None);
    }

    #[test]
    fn markers_with_escapes() {
        let (line, file, flags) = parse_marker(br#"# 7 "a\\b\"c\303\251.c" 2 3"#).unwrap();
        assert_eq!(
            (line, file.as_ref(), flags),
            (7, "a\\b\"c\u{e9}.c", vec![2, 3])
        );
        assert!(parse_marker(b"#pragma once").is_none());
        assert!(parse_marker(b"# \"x\"").is_none());
    }

    #[test]
    fn site_text_drops_markers_comments_and_white_space() {
        let text = SAMPLE.as_bytes();
        let start = SAMPLE.find("x ==").unwrap();
        let end = SAMPLE.find("(0)").unwrap() + 3;
        assert_eq!(site_text(text, start, end), "x == (0)");
        let code = b"a /* one\n two */ &&\t\"b  c\"  // tail\n || 'd'";
        assert_eq!(site_text(code, 0, code.len()), "a && \"b  c\" || 'd'");
        let long = "a".repeat(3000);
        let cut = site_text(long.as_bytes(), 0, 3000);
        assert_eq!(cut.len(), MAX_SITE_TEXT + 4);
        assert!(cut.ends_with(" ..."));
    }

    #[test]
    fn trivia_is_skipped() {
        let code = b"x  /* c */\n# 4 \"f.c\"\n  // d\n && y";
        assert_eq!(skip_trivia(code, 1), code.len() - 4);
    }
}

/// `text` with each line of the user's own files (not system headers)
/// spaced as in its source file, when the two differ only in the length
/// of their runs of whitespace. gcc's preprocessor writes one space for
/// each run between tokens (`case 3:      x` becomes `case 3: x`), and
/// cc1 counts columns in the `.i`: respaced, gcc's diagnostics carry the
/// columns they have when gcc preprocesses internally. Lines that a macro
/// expanded, that continue with a backslash, or whose source cannot be
/// read stay as they are. `read` returns a file's bytes (named as the
/// markers name it).
pub fn respace(text: &[u8], read: &mut dyn FnMut(&str) -> Option<Vec<u8>>) -> Vec<u8> {
    let map = LineMap::new(text);
    let mut sources: std::collections::HashMap<String, Option<Vec<Vec<u8>>>> =
        std::collections::HashMap::new();
    let mut out = Vec::with_capacity(text.len() + text.len() / 16);
    let mut start = 0;
    while start < text.len() {
        let end = text[start..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(text.len(), |i| start + i);
        let line = &text[start..end];
        let replacement = (!line.starts_with(b"#") && !line.is_empty())
            .then(|| map.presumed(start))
            .flatten()
            .filter(|p| !p.system && !p.file.starts_with('<'))
            .and_then(|p| {
                let lines = sources
                    .entry(p.file.to_owned())
                    .or_insert_with(|| read(p.file).map(|bytes| split_lines(&bytes)));
                let source = lines.as_ref()?.get(p.line.checked_sub(1)? as usize)?;
                (source.as_slice() != line
                    && !source.ends_with(b"\\")
                    && collapsed(source) == collapsed(line))
                .then(|| source.clone())
            });
        out.extend_from_slice(replacement.as_deref().unwrap_or(line));
        if end < text.len() {
            out.push(b'\n');
        }
        start = end + 1;
    }
    out
}

/// A file's lines, without their `\n` (or `\r\n`).
fn split_lines(bytes: &[u8]) -> Vec<Vec<u8>> {
    bytes
        .split(|&b| b == b'\n')
        .map(|line| line.strip_suffix(b"\r").unwrap_or(line).to_vec())
        .collect()
}

/// A line with every run of blanks one space, and none at either end.
fn collapsed(line: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(line.len());
    for word in line
        .split(|b| matches!(b, b' ' | b'\t' | b'\x0b' | b'\x0c' | b'\r'))
        .filter(|w| !w.is_empty())
    {
        if !out.is_empty() {
            out.push(b' ');
        }
        out.extend_from_slice(word);
    }
    out
}

#[cfg(test)]
mod respace_tests {
    use super::respace;

    #[test]
    fn lines_get_their_source_spacing_back_when_only_blanks_differ() {
        let text = b"# 1 \"a.c\"\nint  x;\ncase 3: y = 1;\nint z = M;\n# 1 \"/usr/include/s.h\" 1 3\nint   s;\n";
        let source = b"int  x;\ncase 3:      y = 1;\nint z = M ;\n";
        let header = b"int s;\n";
        let out = respace(text, &mut |file| match file {
            "a.c" => Some(source.to_vec()),
            "/usr/include/s.h" => Some(header.to_vec()),
            _ => None,
        });
        // Line 2 takes the source's spacing; line 3 (a macro expanded:
        // `M` against its expansion in real life, here a token that
        // differs) and the system header's line stay as they are.
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "# 1 \"a.c\"\nint  x;\ncase 3:      y = 1;\nint z = M;\n# 1 \"/usr/include/s.h\" 1 3\nint   s;\n"
        );
    }

    #[test]
    fn unreadable_sources_and_continued_lines_stay() {
        let text = b"# 1 \"b.c\"\nint x = 1 + \\\n2;\n";
        let out = respace(text, &mut |_| None);
        assert_eq!(out, text);
        let out = respace(b"# 1 \"c.c\"\nint  x = 1;\n", &mut |_| {
            Some(b"int  x = 1; \\\n".to_vec())
        });
        assert_eq!(out, b"# 1 \"c.c\"\nint  x = 1;\n");
    }
}
