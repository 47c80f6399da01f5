//! `extract-report`: the bodies of the subreports with one id.

use std::io::{BufRead, Write};

use sampler_formats::{ReadError, ReportEvent, ReportReader};

/// Why extraction failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExtractReportError {
    /// The input is not a well-formed report.
    #[error("standard input")]
    Read(#[from] ReadError),
    /// Writing the output failed.
    #[error("writing the output")]
    Write(#[from] std::io::Error),
}

/// Copies to `output` the body of every `<report id="ID">` block of
/// `input`, without the wrapping tags, and returns how many there were.
///
/// The whole input is checked as it goes; a block is written only once its
/// `</report>` has been read, so a truncated report never yields half a
/// block. One block at a time is held in memory.
pub fn extract_reports(
    input: impl BufRead,
    id: &str,
    mut output: impl Write,
) -> Result<usize, ExtractReportError> {
    let mut reader = ReportReader::new(input);
    let mut n_found = 0;
    let mut inside = false;
    let mut body: Vec<u8> = Vec::new();
    while let Some(event) = reader.next_event()? {
        match event {
            ReportEvent::ReportStart { id: found } => inside = found == id,
            ReportEvent::ReportEnd => {
                if inside {
                    output.write_all(&body)?;
                    body.clear();
                    n_found += 1;
                }
                inside = false;
            }
            _ if inside => {
                body.extend_from_slice(reader.current_line().as_bytes());
                body.push(b'\n');
            }
            _ => {}
        }
    }
    output.flush()?;
    Ok(n_found)
}

#[cfg(test)]
mod tests {
    use super::*;

    const REPORT: &str = "<report id=\"samples\">\n\
        <samples unit=\"0123456789abcdef0123456789abcdef\" scheme=\"branches\">\n\
        1\t2\n\
        </samples>\n\
        </report>\n\
        <report id=\"main-backtrace\">\n\
        ./prog[0x401136]\n\
        </report>\n\
        <report id=\"samples\">\n\
        </report>\n\
        <report id=\"samples\">\n\
        <samples unit=\"0123456789abcdef0123456789abcdef\" scheme=\"returns\">\n\
        0\t0\t1\n\
        </samples>\n\
        </report>\n";

    fn extract(input: &str, id: &str) -> (Result<usize, String>, String) {
        let mut out = Vec::new();
        let result = extract_reports(input.as_bytes(), id, &mut out)
            .map_err(|e| format!("{:#}", anyhow::Error::from(e)));
        (result, String::from_utf8(out).unwrap())
    }

    #[test]
    fn concatenates_every_block_with_the_id() {
        assert_eq!(
            extract(REPORT, "samples"),
            (
                Ok(3),
                "<samples unit=\"0123456789abcdef0123456789abcdef\" scheme=\"branches\">\n1\t2\n</samples>\n\
                 <samples unit=\"0123456789abcdef0123456789abcdef\" scheme=\"returns\">\n0\t0\t1\n</samples>\n"
                    .to_owned()
            )
        );
        assert_eq!(
            extract(REPORT, "main-backtrace"),
            (Ok(1), "./prog[0x401136]\n".to_owned())
        );
        assert_eq!(extract(REPORT, "modules"), (Ok(0), String::new()));
    }

    #[test]
    fn a_truncated_block_is_not_written() {
        let truncated = "<report id=\"main-backtrace\">\n./prog[0x401136]\n";
        assert_eq!(
            extract(truncated, "main-backtrace"),
            (
                Err("standard input: line 2: unexpected end of input: `<report>` opened at line 1 is not closed by `</report>`".to_owned()),
                String::new()
            )
        );
    }
}
