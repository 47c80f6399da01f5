//! The text formats of the sampler toolchain, shared by every tool.
//!
//! Two formats carry everything (`schema/site-table.md` and
//! `schema/report-format.md` give their grammar):
//!
//! - **site tables**, the static description of every instrumentation site,
//!   embedded by `sampler-cc` in the `.debug_site_info` section:
//!   [`SiteTableReader`], [`Site`], [`SitesSection`];
//! - **feedback reports**, written by each run of an instrumented program:
//!   [`ReportReader`] streams them, [`Report`] holds a small one whole;
//!   the `trace` subreport (each thread's last sampled observations) has
//!   its own [`TraceReader`] and [`Trace`].
//!
//! A third, **rates files** (`schema/rates-format.md`), carries each site's
//! sampling rate and countdown scale learned from training runs: [`Rates`].
//!
//! Static and dynamic data join on a [`SectionKey`]: a [`UnitSignature`] and
//! a [`SchemeName`]. Row *i* of a `<samples>` section counts site *i* of the
//! `<sites>` section with the same key.
//!
//! Readers take any [`BufRead`](std::io::BufRead), hold one line at a time,
//! never panic, and fail with a [`ReadError`] that names the line and what
//! was expected there. Writers produce exactly the text the readers accept,
//! so a parse followed by a write reproduces well-formed input byte for byte.
//!
//! ```
//! use sampler_formats::{ReportEvent, ReportReader};
//!
//! let report = "<report id=\"samples\">\n\
//!     <samples unit=\"0123456789abcdef0123456789abcdef\" scheme=\"branches\">\n\
//!     0\t1\n\
//!     </samples>\n\
//!     </report>\n";
//! let mut reader = ReportReader::new(report.as_bytes());
//! let mut rows = Vec::new();
//! while let Some(event) = reader.next_event()? {
//!     if let ReportEvent::Counters(row) = event {
//!         rows.push(row.to_vec());
//!     }
//! }
//! assert_eq!(rows, [[0, 1]]);
//! # Ok::<(), sampler_formats::ReadError>(())
//! ```

#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod decimal;
mod error;
mod lines;
pub mod predicates;
mod rates;
mod report;
mod scales;
mod scheme;
mod signature;
mod sites;
mod tags;
mod trace;

pub use error::{ReadError, ReadErrorKind};
pub use lines::MAX_LINE_BYTES;
pub use rates::{
    MAX_SCALE, RATES_VERSION, Rates, RatesSource, SiteRate, observation_probability, scale_for_rate,
};
pub use report::{
    BACKTRACE_REPORT_ID, BoundValue, Report, ReportEvent, ReportReader, SAMPLES_REPORT_ID,
    SampleRows, SamplesItem, SamplesSection, Subreport, TimestampsSection, When, write_counter_row,
    write_report_end, write_report_start,
};
pub use scales::{ScalesSection, SiteScales, read_scales};
pub use scheme::{SampleKind, Scheme, SchemeName, SchemeNameError, SiteLayout};
pub use signature::{SignatureError, UnitSignature};
pub use sites::{
    AccessKind, Assignment, HostKind, OffsetKind, OperandKind, Site, SiteDetails, SiteTableEvent,
    SiteTableReader, SitesSection, parse_site, read_site_table, write_sites_section,
};
pub use tags::SectionKey;
pub use trace::{
    TRACE_REPORT_ID, TRACE_VERSION, ThreadHeader, ThreadState, ThreadTrace, Trace, TraceClock,
    TraceEvent, TraceParser, TraceReader, TraceRecord,
};
