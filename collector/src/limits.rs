//! Every limit of the server, with its default and its flag.

use std::num::NonZeroU32;

/// Limits on what the server accepts and how much it holds at once.
#[derive(Debug, Clone, clap::Args)]
pub struct Limits {
    /// Largest upload body, as sent (compressed): larger ones get 413.
    #[arg(long, default_value_t = 8 << 20, value_name = "BYTES")]
    pub max_upload_bytes: usize,

    /// Largest report once its parts are decompressed: a larger one (a gzip
    /// bomb, a looping program) is cut off while inflating and gets 413.
    #[arg(long, default_value_t = 64 << 20, value_name = "BYTES")]
    pub max_report_bytes: usize,

    /// Most parts (subreports) in one upload.
    #[arg(long, default_value_t = 64, value_name = "N")]
    pub max_parts: usize,

    /// Largest `build add` request (ELF files with debug information).
    #[arg(long, default_value_t = 2 << 30, value_name = "BYTES")]
    pub max_build_bytes: u64,

    /// Uploads per second allowed to one token, on average: more get 429
    /// with `Retry-After`.
    #[arg(long, default_value = "5000", value_name = "N")]
    pub token_rate: NonZeroU32,

    /// Uploads one token may send in a burst above its rate.
    #[arg(long, default_value = "10000", value_name = "N")]
    pub token_burst: NonZeroU32,

    /// Uploads waiting for the database at most: more get 503 with
    /// `Retry-After`.
    #[arg(long, default_value_t = 4096, value_name = "N")]
    pub queue: usize,

    /// Most runs the writer stores in one transaction.
    #[arg(long, default_value_t = 512, value_name = "N")]
    pub batch: usize,

    /// Seconds a request may take before it is cut off (408).
    #[arg(long, default_value_t = 120, value_name = "SECONDS")]
    pub request_timeout: u64,

    /// Seconds given to in-flight requests after SIGTERM or ^C.
    #[arg(long, default_value_t = 30, value_name = "SECONDS")]
    pub shutdown_grace: u64,

    /// Parsed debug files kept in memory for symbolization.
    #[arg(long, default_value_t = 64, value_name = "N")]
    pub debug_cache: usize,

    /// Database connections.
    #[arg(long, default_value_t = 8, value_name = "N")]
    pub connections: u32,
}

impl Default for Limits {
    fn default() -> Self {
        <Self as clap::FromArgMatches>::from_arg_matches(
            &<Self as clap::Args>::augment_args(clap::Command::new("limits"))
                .get_matches_from(["limits"]),
        )
        .expect("the defaults parse")
    }
}
