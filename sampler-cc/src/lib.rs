//! `sampler-cc`: a drop-in for gcc that instruments C code for cooperative
//! bug isolation. The same program is the driver the user runs
//! ([`driver`]) and, under the name `cc1`, the compiler stage gcc calls
//! ([`cc1`]). The stage reads gcc's preprocessed file ([`preprocessed`]),
//! builds a model of it with libclang ([`frontend`]), and inserts the
//! schemes' code into it ([`instrument`]).

#![forbid(unsafe_code)]

pub mod cc1;
pub mod dataflow;
pub mod driver;
pub mod frontend;
pub mod instrument;
pub mod options;
pub mod preprocessed;
pub mod runtime_package;
