//! Micro-benchmarks (workloads.md §6) on Troupe and the Rust peers actix, ractor and kameo,
//! and the peer runtimes' programs under `peers/<runtime>/micro`.
//!
//! Under construction: the interface below is what the CLI calls; no benchmark is built yet.

use std::fmt;
use std::io::Write;

/// What `troupe lab micro` was asked to run.
#[derive(Debug, Clone, Default)]
pub struct MicroOptions {
    /// Benchmarks to run by name; `None` runs all.
    pub only: Option<Vec<String>>,
    /// Runtimes to run, e.g. `troupe`, `actix`, `ractor`, `kameo`, `erlang`.
    pub runtimes: Vec<String>,
    /// Print one JSON object per line instead of a table.
    pub json: bool,
}

/// Why a micro-benchmark run failed.
#[derive(Debug)]
pub struct Error {
    /// What went wrong and what to do about it.
    pub message: String,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

/// Runs the selected micro-benchmarks and writes their results to `out`.
pub fn run(opts: &MicroOptions, out: &mut dyn Write) -> Result<(), Error> {
    let _ = (opts, out);
    Err(Error {
        message: "the micro-benchmarks are not built yet".into(),
    })
}
