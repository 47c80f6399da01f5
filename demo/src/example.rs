//! The example the demo runs: `examples/logstat`, a web-log summarizer
//! with two planted bugs (its README says which), and its input generator.

#[path = "../../examples/logstat/inputs.rs"]
#[allow(dead_code, unreachable_pub)]
mod inputs;

pub(crate) use inputs::{Expect, Input, input};

/// The program's name, also the application's.
pub(crate) const NAME: &str = "logstat";

/// Its source, written into the demo's folder and built there.
pub(crate) const SOURCE: &str = include_str!("../../examples/logstat/logstat.c");
