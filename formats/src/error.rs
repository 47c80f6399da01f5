//! The one error type of every parser in this crate.

use std::borrow::Cow;
use std::fmt;
use std::io;

/// An error while reading a site table or a feedback report.
///
/// It always names the line (counted from 1) where the input stopped making
/// sense, and says what was expected there.
#[derive(Debug, thiserror::Error)]
#[error("line {line}: {kind}")]
pub struct ReadError {
    line: u64,
    kind: ReadErrorKind,
}

/// What went wrong; see [`ReadError`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadErrorKind {
    /// The line does not have the shape the grammar allows here.
    #[error("expected {expected}, found {found}")]
    Unexpected {
        /// What the grammar allows at this point.
        expected: Cow<'static, str>,
        /// The offending line, quoted and shortened.
        found: String,
    },
    /// The line has the right shape but a field holds a bad value.
    #[error("{0}")]
    InvalidValue(String),
    /// The input ended inside a section or a subreport.
    #[error("unexpected end of input: {0}")]
    Truncated(String),
    /// The line is not valid UTF-8.
    #[error("line is not valid UTF-8")]
    NotUtf8,
    /// The line exceeds [`MAX_LINE_BYTES`](crate::MAX_LINE_BYTES).
    #[error("line is longer than {0} bytes")]
    LineTooLong(usize),
    /// Reading the input failed.
    #[error("read failed: {0}")]
    Io(#[source] io::Error),
}

impl ReadError {
    pub(crate) fn new(line: u64, kind: ReadErrorKind) -> Self {
        Self { line, kind }
    }

    pub(crate) fn unexpected(
        line: u64,
        expected: impl Into<Cow<'static, str>>,
        found: &str,
    ) -> Self {
        Self::new(
            line,
            ReadErrorKind::Unexpected {
                expected: expected.into(),
                found: quote(found),
            },
        )
    }

    pub(crate) fn invalid(line: u64, message: impl fmt::Display) -> Self {
        Self::new(line, ReadErrorKind::InvalidValue(message.to_string()))
    }

    /// The line (counted from 1) where the error was found.
    pub fn line(&self) -> u64 {
        self.line
    }

    /// What went wrong.
    pub fn kind(&self) -> &ReadErrorKind {
        &self.kind
    }
}

/// Quotes a line for an error message, escaping tabs and cutting it short so
/// that one hostile line cannot flood the terminal.
pub(crate) fn quote(text: &str) -> String {
    const LIMIT: usize = 80;
    if text.is_empty() {
        return "an empty line".to_owned();
    }
    match text.char_indices().nth(LIMIT) {
        Some((cut, _)) => format!("{:?}…", &text[..cut]),
        None => format!("{text:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quote_escapes_and_shortens() {
        assert_eq!(quote(""), "an empty line");
        assert_eq!(quote("1\t2"), "\"1\\t2\"");
        let long = "x".repeat(100);
        assert_eq!(quote(&long), format!("\"{}\"…", "x".repeat(80)));
    }

    #[test]
    fn display_names_line_and_expectation() {
        let error = ReadError::unexpected(7, "`</sites>`", "oops");
        assert_eq!(
            error.to_string(),
            "line 7: expected `</sites>`, found \"oops\""
        );
        assert_eq!(error.line(), 7);
    }
}
