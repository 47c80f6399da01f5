//! The crash subreports of a raw report.

use std::io::BufRead;

use sampler_formats::{ReadError, ReportEvent, ReportReader};

/// The id of the backtrace subreport.
pub const BACKTRACE_REPORT_ID: &str = "main-backtrace";
/// The id of the loaded modules subreport.
pub const MODULES_REPORT_ID: &str = "modules";

/// The crash subreports of one crashed run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CrashSubreports {
    /// The body of `<report id="main-backtrace">`, lines ending with LF.
    pub backtrace: String,
    /// The number of the report line that opens it: body line `n` is
    /// report line `backtrace_line + n`.
    pub backtrace_line: u64,
    /// The body of the `<report id="modules">` that follows it, if any.
    pub modules: Option<String>,
    /// The number of the report line that opens the modules subreport.
    pub modules_line: u64,
}

/// Reads a raw report (or several, one after another) and returns each
/// `main-backtrace` subreport with the `modules` subreport written after
/// it, before the next backtrace. Everything else is checked as it goes
/// and dropped, so memory holds only the crash subreports.
pub fn read_crash_subreports(input: impl BufRead) -> Result<Vec<CrashSubreports>, ReadError> {
    enum Inside {
        Backtrace,
        Modules,
        Other,
    }
    let mut reader = ReportReader::new(input);
    let mut crashes: Vec<CrashSubreports> = Vec::new();
    let mut inside = Inside::Other;
    loop {
        let line_number = reader.line_number() + 1;
        let Some(event) = reader.next_event()? else {
            break;
        };
        match event {
            ReportEvent::ReportStart { id } if id == BACKTRACE_REPORT_ID => {
                crashes.push(CrashSubreports {
                    backtrace_line: line_number,
                    ..CrashSubreports::default()
                });
                inside = Inside::Backtrace;
            }
            ReportEvent::ReportStart { id } if id == MODULES_REPORT_ID => {
                inside = match crashes.last_mut() {
                    Some(crash) if crash.modules.is_none() => {
                        crash.modules = Some(String::new());
                        crash.modules_line = line_number;
                        Inside::Modules
                    }
                    _ => Inside::Other,
                };
            }
            ReportEvent::ReportStart { .. } | ReportEvent::ReportEnd => inside = Inside::Other,
            ReportEvent::Line(line) => {
                let body = match (&inside, crashes.last_mut()) {
                    (Inside::Backtrace, Some(crash)) => &mut crash.backtrace,
                    (
                        Inside::Modules,
                        Some(CrashSubreports {
                            modules: Some(modules),
                            ..
                        }),
                    ) => modules,
                    _ => continue,
                };
                body.push_str(line);
                body.push('\n');
            }
            _ => {}
        }
    }
    Ok(crashes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_each_backtrace_with_the_modules_after_it() {
        let report = "<report id=\"samples\">\n\
            <samples unit=\"0123456789abcdef0123456789abcdef\" scheme=\"branches\">\n\
            0\t1\n\
            </samples>\n\
            </report>\n\
            <report id=\"main-backtrace\">\n\
            ./prog[0x1]\n\
            ./prog[0x2]\n\
            </report>\n\
            <report id=\"modules\">\n\
            0x0\t-\t/prog\n\
            </report>\n\
            <report id=\"modules\">\n\
            0x0\t-\t/ignored\n\
            </report>\n\
            <report id=\"main-backtrace\">\n\
            ./prog[0x3]\n\
            </report>\n";
        assert_eq!(
            read_crash_subreports(report.as_bytes()).unwrap(),
            [
                CrashSubreports {
                    backtrace: "./prog[0x1]\n./prog[0x2]\n".to_owned(),
                    backtrace_line: 6,
                    modules: Some("0x0\t-\t/prog\n".to_owned()),
                    modules_line: 10,
                },
                CrashSubreports {
                    backtrace: "./prog[0x3]\n".to_owned(),
                    backtrace_line: 16,
                    modules: None,
                    modules_line: 0,
                },
            ]
        );
        assert_eq!(read_crash_subreports(&b""[..]).unwrap(), []);
        assert_eq!(
            read_crash_subreports(&b"<report id=\"main-backtrace\">\n"[..])
                .unwrap_err()
                .line(),
            1
        );
    }
}
