//! The micro-benchmarks on Troupe itself. The Troupe core runtime (crate `troupe`) has not
//! landed on this branch yet, so every Troupe benchmark reports "not built yet" as a missing
//! runtime (never a made-up number); the driver goes on with the other runtimes.

use std::time::Duration;

use crate::bench::{Bench, Params};
use crate::memory::Probe;
use crate::{Error, ErrorKind};

fn not_built() -> Error {
    Error::new(
        ErrorKind::Missing,
        "troupe: not built yet (the Troupe core runtime has not landed on this branch; its \
         benchmarks are written once it does)",
    )
}

/// Would run `count` iterations of `bench` on Troupe.
pub(crate) fn iterations(_: Bench, _: &Params, _: usize) -> Result<Vec<Duration>, Error> {
    Err(not_built())
}

/// Would spawn `n` idle Troupe actors for the `memory` benchmark.
pub(crate) fn memory_spawn_idle(_: u64, _: &mut Probe) -> Result<Duration, Error> {
    Err(not_built())
}
