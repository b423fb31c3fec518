//! Micro-benchmarks (workloads.md §6) on Troupe and the Rust peers actix, ractor and kameo, and
//! the driver that also runs the peer runtimes' programs under `peers/<runtime>/micro`.
//!
//! This crate exists so that the ten Savina-style benchmarks of the peer-program contract
//! (common brief, "Micro-benchmarks") are measured the same way on every runtime: one
//! unmeasured warm-up iteration, `reps` measured ones, the median reported as one JSON line per
//! metric. [`run`] is what `troupe lab micro` calls.
//!
//! How the pieces fit:
//! - [`bench`](mod@bench): names, default parameters, the result line, shared helpers.
//! - `troupe_rt/`, `actix/`, `ractor/`, `kameo/`: each benchmark written the way that
//!   library's users write actors (actix on its own `System`/`Arbiter`; Troupe, ractor and
//!   kameo on a multi-thread tokio runtime with default settings), one file per family:
//!   `flow` (pingpong, count, threadring), `fj` (fjthrput, fjcreate), `pairs` (chameneos, big),
//!   `tree` (fib, skynet), `memory`; Troupe also `timers`.
//! - `memory`: the `memory` benchmark runs in a fresh child process per runtime (see
//!   [`CHILD_ENV`]), because a resident-set delta measured in a process that already ran other
//!   benchmarks counts their leftovers.
//! - [`timers`]: the `timers` benchmark (Troupe only): arm rate and lateness of `n` actor
//!   timers armed at once, next to tokio's own sleep.
//! - `driver`: runs the selected benchmarks on the selected runtimes, in-process or through the
//!   external peer programs, and prints JSON lines or a table.

use std::collections::BTreeMap;
use std::fmt;
use std::io::Write;

pub mod bench;

/// The `iterations` function of a runtime module running on tokio: runs `count` iterations of
/// a benchmark in one multi-thread tokio runtime and returns their times. Expanded inside each
/// such module (troupe, ractor, kameo), whose `flow`, `fj`, `pairs` and `tree` submodules hold
/// that runtime's benchmarks under the same names.
///
/// The benchmark's driver (the code that spawns the first actors, sends the first messages and
/// awaits the result) runs as a task on the runtime's own workers, as actix's driver runs on
/// its `System`'s one thread: so `--threads N` means the benchmark runs on N threads in all,
/// and no driver sits on a `block_on` thread outside them, paying a cross-thread wake-up for
/// each actor it starts or wakes (docs/lab.md, "Micro-benchmarks", rule 6).
macro_rules! tokio_iterations {
    () => {
        /// Runs `count` iterations of `bench` in one tokio runtime and returns their times.
        pub(crate) fn iterations(
            bench: crate::bench::Bench,
            p: &crate::bench::Params,
            count: usize,
        ) -> Result<Vec<std::time::Duration>, crate::Error> {
            use crate::bench::Bench;
            let rt = crate::util::tokio_runtime()?;
            let p = p.clone();
            let driver = rt.spawn(async move {
                let p = &p;
                let mut times = Vec::with_capacity(count);
                for _ in 0..count {
                    let t = match bench {
                        Bench::PingPong => flow::pingpong(p).await?,
                        Bench::Count => flow::count(p).await?,
                        Bench::ThreadRing => flow::threadring(p).await?,
                        Bench::FjThrput => fj::fjthrput(p).await?,
                        Bench::FjCreate => fj::fjcreate(p).await?,
                        Bench::Chameneos => pairs::chameneos(p).await?,
                        Bench::Big => pairs::big(p).await?,
                        Bench::Fib => tree::fib(p).await?,
                        Bench::Skynet => tree::skynet(p).await?,
                        Bench::Memory => unreachable!("memory is measured by memory::measure"),
                        Bench::Timers => unreachable!("timers is measured by timers::run"),
                    };
                    times.push(t);
                }
                Ok(times)
            });
            rt.block_on(driver).unwrap_or_else(|e| {
                Err(crate::Error::new(
                    crate::ErrorKind::Failed,
                    format!("{bench:?}: the benchmark's driver task failed: {e}"),
                ))
            })
        }
    };
}

mod actix;
mod driver;
mod kameo;
mod memory;
mod ractor;
mod table;
pub mod timers;
mod troupe_rt;
mod util;

pub use bench::{merge_reps, Bench, Params, Record, Spread, SPREAD_FLAG_PCT};
pub use memory::{set_release_hook, CHILD_ENV};
pub use util::set_worker_threads;

/// The versions of the Rust actor libraries measured in this process, and tokio's (from the
/// workspace's Cargo.lock at build time).
pub const LIBRARY_VERSIONS: &str = env!("TROUPE_MICRO_VERSIONS");

/// The runtimes measured inside this process.
pub const IN_PROCESS_RUNTIMES: [&str; 4] = ["troupe", "actix", "ractor", "kameo"];

/// The runtimes measured through their own programs under `peers/<runtime>/micro`.
pub const EXTERNAL_RUNTIMES: [&str; 4] = ["erlang", "akka", "protoactor", "caf"];

/// The runtimes run when [`MicroOptions::runtimes`] is empty.
pub const DEFAULT_RUNTIMES: [&str; 4] = IN_PROCESS_RUNTIMES;

/// The worker threads `runtime` runs its actors on here, and the rule that gives that number:
/// the runtimes are measured with their own defaults, which differ. The core count is the
/// cores this process may run on (`taskset -c 0 troupe lab micro ...` pins every runtime,
/// peers included, to one core; each default then follows, except CAF's, which counts the
/// machine's cores but still runs on the one allowed). `None` for an unknown runtime.
#[must_use]
pub fn threads(runtime: &str) -> Option<(u32, &'static str)> {
    let cores = std::thread::available_parallelism().map_or(1, |n| u32::try_from(n.get()).unwrap_or(u32::MAX));
    let tokio = || match std::env::var("TOKIO_WORKER_THREADS").ok().and_then(|v| v.trim().parse::<u32>().ok()) {
        _ if util::worker_threads().is_some() => (util::worker_threads().unwrap_or(1), "--threads"),
        Some(n) if n > 0 => (n, "TOKIO_WORKER_THREADS"),
        _ => (cores, "tokio default: one worker per core"),
    };
    Some(match runtime {
        "troupe" | "ractor" | "kameo" => tokio(),
        "actix" => (1, "actix System: every actor on one thread"),
        "erlang" => (cores, "erl default: one scheduler per core"),
        "akka" => ((3 * cores).clamp(8, 64), "default dispatcher: fork-join, max(8, 3 x cores)"),
        "protoactor" => (cores, "Go default: GOMAXPROCS = cores"),
        "caf" => {
            // SAFETY: sysconf has no preconditions.
            let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
            (u32::try_from(online).unwrap_or(cores).max(1), "CAF default: one worker per hardware thread")
        }
        _ => return None,
    })
}

/// What `troupe lab micro` was asked to run.
#[derive(Debug, Clone, Default)]
pub struct MicroOptions {
    /// Benchmarks to run by name; `None` runs all.
    pub only: Option<Vec<String>>,
    /// Runtimes to run, e.g. `troupe`, `actix`, `ractor`, `kameo`, `erlang`; empty runs
    /// [`DEFAULT_RUNTIMES`].
    pub runtimes: Vec<String>,
    /// Print one JSON object per line instead of a table.
    pub json: bool,
    /// Measured repetitions per benchmark (after one warm-up); `None` means 3. The `memory`
    /// benchmark always runs once.
    pub reps: Option<u32>,
    /// Parameter overrides by the contract's key names (`n`, `actors`, `depth`, ...); each
    /// benchmark takes the keys it has and ignores the others.
    pub params: BTreeMap<String, u64>,
    /// Arguments the `memory` child process is started with (the same executable, with
    /// [`CHILD_ENV`] set); `None` repeats this process's own arguments, which is right for any
    /// binary whose `main` reaches [`run`] again with the same command line (the `troupe` CLI,
    /// the `micro` example).
    pub child_args: Option<Vec<String>>,
    /// Called just before each repetition of a benchmark (not `memory`) on each runtime; what
    /// it returns is kept in the line's `core_rtt_ns`, one entry per sample. The `troupe` CLI
    /// passes the lab's core-to-core round trip (`troupe_lab::machine::core_round_trip_ns`),
    /// so a repetition run while the machine was in its slow state can be told apart.
    pub rep_probe: Option<fn() -> Option<u32>>,
}

/// What kind of failure an [`Error`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// An unknown benchmark or runtime name, or a bad parameter.
    Usage,
    /// A runtime could not be run: its peer program, its toolchain, or (for Troupe) its
    /// implementation is missing. The results of the other runtimes were still written.
    Missing,
    /// A benchmark ran and failed: a wrong total, a crash, a timeout.
    Failed,
    /// The runtime has no implementation of this benchmark by design (`timers` measures
    /// Troupe's own timer; see [`Bench::runs_on`]). Listed under "not run:", not a failure.
    NotImplemented,
}

/// Why a micro-benchmark run failed.
#[derive(Debug)]
pub struct Error {
    /// What kind of failure this is.
    pub kind: ErrorKind,
    /// What went wrong and what to do about it.
    pub message: String,
}

impl Error {
    pub(crate) fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error { kind, message: message.into() }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

/// Runs the selected micro-benchmarks and writes their results to `out`.
///
/// With [`MicroOptions::json`] `out` gets only the contract's JSON lines; otherwise a table.
/// Progress and notes go to stderr. When a runtime cannot be run (missing peer program or
/// toolchain) the others still run and the error returned at the end names it, with its
/// install command. A benchmark that fails its correctness check makes the run return
/// [`ErrorKind::Failed`] after the other results were written.
///
/// If this process is a `memory` child (env [`CHILD_ENV`] set), it runs only that measurement
/// and writes its JSON lines to `out`, whatever `opts` says.
pub fn run(opts: &MicroOptions, out: &mut dyn Write) -> Result<(), Error> {
    if let Some(spec) = memory::child_request() {
        return memory::child_main(&spec, out);
    }
    driver::run(opts, out)
}

/// Runs one benchmark (not `memory`) on one in-process runtime with the warm-up + `reps` +
/// median rule and returns its result lines. Correctness failures are errors.
pub fn run_in_process(runtime: &str, bench: Bench, params: &Params, reps: u32) -> Result<Vec<Record>, Error> {
    if bench == Bench::Memory {
        return Err(Error::new(
            ErrorKind::Usage,
            "memory runs in a child process: use run() or memory_in_this_process()",
        ));
    }
    let reps = reps.max(1);
    if !bench.runs_on(runtime) && IN_PROCESS_RUNTIMES.contains(&runtime) {
        return Err(not_implemented(runtime, bench));
    }
    if bench == Bench::Timers {
        return timers::run(params, reps);
    }
    let count = reps as usize + 1;
    let times = match runtime {
        "actix" => actix::iterations(bench, params, count)?,
        "ractor" => ractor::iterations(bench, params, count)?,
        "kameo" => kameo::iterations(bench, params, count)?,
        "troupe" => troupe_rt::iterations(bench, params, count)?,
        other => return Err(unknown_runtime(other)),
    };
    Ok(bench::records(runtime, params, reps, &times[1..]))
}

/// Measures `memory` for `runtime` in the current process and returns its result lines
/// (`bytes_per_actor`, `spawn_ms`). The driver calls this in a fresh child process; calling it
/// in a process that already ran other work gives a polluted resident-set delta.
pub fn memory_in_this_process(runtime: &str, n: u64) -> Result<Vec<Record>, Error> {
    memory::measure(runtime, n)
}

/// Renders result lines (from this run or read back from JSON lines, any runtimes mixed) as
/// the driver's table: one row per benchmark and metric, one column per runtime in order of
/// first appearance, and "troupe vs best peer".
pub fn render_table(records: &[Record], out: &mut dyn Write) -> std::io::Result<()> {
    let mut runtimes: Vec<String> = Vec::new();
    for r in records {
        if !runtimes.contains(&r.runtime) {
            runtimes.push(r.runtime.clone());
        }
    }
    let benches: Vec<Bench> = Bench::ALL.into_iter().filter(|b| records.iter().any(|r| r.bench == b.name())).collect();
    let reps = records
        .iter()
        .find(|r| r.bench != "memory")
        .and_then(|r| r.params.get("reps"))
        .map_or(3, |&v| u32::try_from(v).unwrap_or(u32::MAX));
    table::render(records, &runtimes, &benches, reps, &[], out)
}

/// "not implemented for <bench>": what the driver says for a runtime that lacks a benchmark.
pub(crate) fn not_implemented(runtime: &str, bench: Bench) -> Error {
    Error::new(
        ErrorKind::NotImplemented,
        format!("not implemented for {bench} ({bench} measures Troupe's own timer; {runtime} has no equivalent here)"),
    )
}

pub(crate) fn unknown_runtime(name: &str) -> Error {
    let known: Vec<&str> = IN_PROCESS_RUNTIMES.iter().chain(&EXTERNAL_RUNTIMES).copied().collect();
    Error::new(
        ErrorKind::Usage,
        format!("unknown runtime `{name}`{}; known: {}", did_you_mean(name, &known), known.join(", ")),
    )
}

/// ` (did you mean `x`?)` when one of `known` is close to `name` (a typo: Jaro-Winkler
/// similarity of at least 0.8), else empty. For error messages about a mistyped name.
#[must_use]
pub fn did_you_mean(name: &str, known: &[&str]) -> String {
    known
        .iter()
        .map(|k| (strsim::jaro_winkler(name, k), *k))
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, k)| format!(" (did you mean `{k}`?)"))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_typo_gets_a_suggestion_and_a_stranger_none() {
        assert_eq!(did_you_mean("pingpon", &["pingpong", "count"]), " (did you mean `pingpong`?)");
        assert_eq!(did_you_mean("actx", &["troupe", "actix", "kameo"]), " (did you mean `actix`?)");
        assert_eq!(did_you_mean("zzz", &["troupe", "actix"]), "");
        let e = unknown_runtime("kamoe");
        assert!(e.message.starts_with("unknown runtime `kamoe` (did you mean `kameo`?); known: troupe, actix"), "{e}");
    }
}
