//! The lab's energy and resource meter: which energy source works on this machine, a sampler
//! that follows the run's process tree (CPU time, resident memory, host busy time, RAPL when
//! present) into `resources.jsonl`, and the energy of an interval computed from those samples.
//!
//! Rules:
//! 1. Sources in order of preference: `rapl` (the kernel's powercap counters, package + DRAM,
//!    [`rapl`]), `perf` (perf's power events), `estimate` (the process tree's CPU time times a
//!    per-core power figure). [`probe`] tries them at run time and takes the first that works;
//!    a counter that opens but reads 0 J over the probe does not count.
//! 2. `perf` reads the kernel's `power` PMU (`energy-pkg`, plus `energy-ram` when listed)
//!    through `perf_event_open` ([`perf`]); it is taken when the powercap counters do not work
//!    (on a machine with a RAPL PMU both come from the same hardware counters).
//! 3. A host-wide source is shared out as Scaphandre does: the run's energy over an interval is
//!    the host's energy times the process tree's share of the host's busy CPU time.
//! 4. The estimate is labelled `estimate` wherever it appears (events, CSV, report, summary);
//!    it is never called a measurement.
//! 5. One run uses one source throughout: a source that fails mid-run fails the repetitions it
//!    no longer covers, with the reason; it is never replaced by another in the same run.
//! 6. The default per-core power figure is [`DEFAULT_WATTS_PER_CORE`] (see its doc for the
//!    source); the energy workload's `watts_per_core` key overrides it.

pub mod charts;
pub mod energy;
pub mod perf;
pub mod procfs;
pub mod prom;
pub mod rapl;
pub mod sampler;
pub mod watch;

use std::path::PathBuf;

use serde::Serialize;

/// Watts per busy core for the estimate: AMD's EPYC 9654 (the Zen 4 server part of the
/// family of the 2-core VM the lab's figures come from) has a 360 W default TDP over 96 cores,
/// 3.75 W per core (AMD's product specifications). A TDP share is a rough upper figure for a
/// core at full load, not a measurement.
pub const DEFAULT_WATTS_PER_CORE: f64 = 3.75;

/// The kernel's perf event sources folder, where a RAPL-capable CPU lists the `power` PMU.
pub const PERF_PMU_ROOT: &str = "/sys/bus/event_source/devices";

/// Where an energy figure comes from (rule 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// The powercap counters.
    Rapl,
    /// perf's power events.
    Perf,
    /// CPU time times a per-core power figure.
    Estimate,
}

impl Source {
    /// The name used in events, CSV, reports and summaries.
    pub fn name(self) -> &'static str {
        match self {
            Source::Rapl => "rapl",
            Source::Perf => "perf",
            Source::Estimate => "estimate",
        }
    }
}

/// What can go wrong with a meter.
#[derive(Debug, Clone, thiserror::Error, PartialEq)]
pub enum MeterError {
    /// A source is not usable on this machine.
    #[error("{which} is not available: {why}")]
    NoSource {
        /// Which source.
        which: &'static str,
        /// Why not.
        why: String,
    },
    /// A counter that was read before cannot be read now (rule 5).
    #[error("the energy counter {path} cannot be read: {cause}; the repetition is failed rather than measured with another source")]
    Counter {
        /// The counter's file.
        path: PathBuf,
        /// What went wrong.
        cause: String,
    },
    /// A source was asked for by name and does not work here.
    #[error("meter source {asked:?} was asked for but does not work on this machine: {why}; use meter=auto to take the best that works")]
    Unavailable {
        /// The source asked for.
        asked: String,
        /// The probe's finding.
        why: String,
    },
}

/// Where to look for the sources (tests point these at fake folders).
#[derive(Debug, Clone)]
pub struct ProbePaths {
    /// The powercap folder ([`rapl::DEFAULT_ROOT`]).
    pub powercap: PathBuf,
    /// The perf PMU folder ([`PERF_PMU_ROOT`]).
    pub perf_pmu: PathBuf,
}

impl Default for ProbePaths {
    /// The real folders, or `TROUPE_POWERCAP_ROOT` for the powercap one.
    fn default() -> ProbePaths {
        ProbePaths {
            powercap: std::env::var_os("TROUPE_POWERCAP_ROOT")
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from(rapl::DEFAULT_ROOT)),
            perf_pmu: PathBuf::from(PERF_PMU_ROOT),
        }
    }
}

/// One source's probe result.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Finding {
    /// The source.
    pub source: Source,
    /// Whether it works.
    pub works: bool,
    /// What the probe found.
    pub detail: String,
}

/// An open host-wide energy counter: the powercap files or perf's power events.
#[derive(Debug)]
pub enum Counter {
    /// The powercap counters ([`rapl`]).
    Rapl(rapl::Powercap),
    /// perf's power events ([`perf`]).
    Perf(perf::PerfEnergy),
}

impl Counter {
    /// Microjoules since the counter was opened (each source's own rules).
    pub fn read_uj(&mut self) -> Result<f64, MeterError> {
        match self {
            Counter::Rapl(pc) => pc.read_uj(),
            Counter::Perf(pe) => pe.read_uj(),
        }
    }
}

/// The outcome of [`probe`]: the chosen source, its open counter when it is host-wide, and
/// what was found about each source.
#[derive(Debug)]
pub struct Probe {
    /// The source the run uses.
    pub source: Source,
    /// The open counter, when `source` is RAPL or perf.
    pub counter: Option<Counter>,
    /// Every source's finding, in order of preference.
    pub findings: Vec<Finding>,
}

/// Rule 1: probes the sources; `wait` runs during each counter's probe (a sleep in the lab).
///
/// ```
/// use troupe_lab::meter::{probe, ProbePaths, Source};
/// let none = ProbePaths { powercap: "/nonexistent".into(), perf_pmu: "/nonexistent".into() };
/// let p = probe(&none, || {});
/// assert_eq!(p.source, Source::Estimate);
/// ```
pub fn probe(paths: &ProbePaths, mut wait: impl FnMut()) -> Probe {
    let mut findings = Vec::new();
    let mut counter = match rapl::probe(&paths.powercap, &mut wait) {
        Ok(pc) => {
            let names: Vec<&str> = pc.domains().iter().map(|d| d.name.as_str()).collect();
            findings.push(Finding {
                source: Source::Rapl,
                works: true,
                detail: format!("powercap domains {}", names.join(", ")),
            });
            Some(Counter::Rapl(pc))
        }
        Err(e) => {
            findings.push(Finding { source: Source::Rapl, works: false, detail: e.to_string() });
            None
        }
    };
    if counter.is_some() {
        findings.push(Finding {
            source: Source::Perf,
            works: false,
            detail: "not probed: the powercap counters work (the same hardware counters)".into(),
        });
    } else {
        match perf::probe(&paths.perf_pmu, &mut wait) {
            Ok(pe) => {
                findings.push(Finding {
                    source: Source::Perf,
                    works: true,
                    detail: format!("power PMU counters {}", pe.names().join(", ")),
                });
                counter = Some(Counter::Perf(pe));
            }
            Err(e) => findings.push(Finding { source: Source::Perf, works: false, detail: e.to_string() }),
        }
    }
    findings.push(Finding {
        source: Source::Estimate,
        works: true,
        detail: "process tree CPU time x watts per core (an estimate, not a measurement)".into(),
    });
    let source = match counter {
        Some(Counter::Rapl(_)) => Source::Rapl,
        Some(Counter::Perf(_)) => Source::Perf,
        None => Source::Estimate,
    };
    Probe { source, counter, findings }
}

/// Applies a requested source (`auto`, `rapl`, `perf`, `estimate`) to a probe: `auto` keeps
/// the best; `estimate` drops the counter; `rapl` or `perf` is refused when it is not the
/// source that works here (the finding says why).
pub fn choose(mut p: Probe, asked: &str) -> Result<Probe, MeterError> {
    let wanted = match asked {
        "estimate" => {
            p.source = Source::Estimate;
            p.counter = None;
            return Ok(p);
        }
        "rapl" => Source::Rapl,
        "perf" => Source::Perf,
        _ => return Ok(p),
    };
    if p.source == wanted {
        return Ok(p);
    }
    let why = p.findings.iter().find(|f| f.source == wanted).map(|f| f.detail.clone()).unwrap_or_default();
    Err(MeterError::Unavailable { asked: asked.into(), why })
}
