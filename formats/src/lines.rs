//! Line splitting shared by the parsers: bounded, UTF-8 checked, numbered.

use std::io::{BufRead, Read};

use crate::error::{ReadError, ReadErrorKind};

/// The longest line any parser accepts, without its newline.
///
/// Site lines carry macro-expanded C expressions, which can be long, but
/// nothing the toolchain writes comes near this; the bound keeps a hostile
/// input without newlines from exhausting memory.
pub const MAX_LINE_BYTES: usize = 4 << 20;

/// Reads `\n`-terminated lines into one reused buffer.
#[derive(Debug)]
pub(crate) struct LineReader<R> {
    input: R,
    /// The current line, valid UTF-8, without its newline. Its allocation is
    /// reused for the next line.
    line: String,
    line_number: u64,
}

impl<R: BufRead> LineReader<R> {
    pub(crate) fn new(input: R) -> Self {
        Self {
            input,
            line: String::new(),
            line_number: 0,
        }
    }

    /// The number of the current line (0 before the first).
    pub(crate) fn line_number(&self) -> u64 {
        self.line_number
    }

    /// Moves to the next line; `false` at the end of the input. A last line
    /// without a newline is accepted.
    pub(crate) fn advance(&mut self) -> Result<bool, ReadError> {
        let mut buffer = std::mem::take(&mut self.line).into_bytes();
        buffer.clear();
        let next = self.line_number + 1;
        let limit = MAX_LINE_BYTES as u64 + 1;
        let n_read = (&mut self.input)
            .take(limit)
            .read_until(b'\n', &mut buffer)
            .map_err(|error| ReadError::new(next, ReadErrorKind::Io(error)))?;
        if n_read == 0 {
            return Ok(false);
        }
        self.line_number = next;
        if buffer.last() == Some(&b'\n') {
            buffer.pop();
        } else if buffer.len() > MAX_LINE_BYTES {
            return Err(ReadError::new(
                next,
                ReadErrorKind::LineTooLong(MAX_LINE_BYTES),
            ));
        }
        self.line =
            String::from_utf8(buffer).map_err(|_| ReadError::new(next, ReadErrorKind::NotUtf8))?;
        Ok(true)
    }

    /// The current line, without its newline.
    pub(crate) fn current_line(&self) -> &str {
        &self.line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(input: &[u8]) -> Vec<Result<String, String>> {
        let mut reader = LineReader::new(input);
        let mut out = Vec::new();
        loop {
            match reader.advance() {
                Ok(true) => out.push(Ok(reader.current_line().to_owned())),
                Ok(false) => break,
                Err(error) => {
                    out.push(Err(error.to_string()));
                    break;
                }
            }
        }
        out
    }

    #[test]
    fn splits_and_numbers_lines() {
        assert_eq!(
            lines(b"a\n\nb"),
            vec![Ok("a".into()), Ok("".into()), Ok("b".into())]
        );
        assert_eq!(lines(b""), vec![]);
    }

    #[test]
    fn rejects_invalid_utf8_with_its_line() {
        assert_eq!(
            lines(b"ok\n\xff\n"),
            vec![
                Ok("ok".into()),
                Err("line 2: line is not valid UTF-8".into())
            ]
        );
    }

    #[test]
    fn bounds_line_length() {
        let mut long = vec![b'x'; MAX_LINE_BYTES];
        long.push(b'\n');
        assert_eq!(lines(&long).len(), 1);
        assert!(lines(&long)[0].is_ok());
        let too_long = vec![b'x'; MAX_LINE_BYTES + 1];
        assert_eq!(
            lines(&too_long),
            vec![Err(format!(
                "line 1: line is longer than {MAX_LINE_BYTES} bytes"
            ))]
        );
    }
}
