//! The unit of the lab: a [`Workload`] is one benchmark (SCP, chat, ...) packaged as a plug-in.
//! The lab core owns what every workload shares (config layering and validation, seeds, run
//! folders, manifest, event writing and collection, sweep grids, comparisons across runtimes,
//! report assembly, progress, Ctrl-C); a workload owns only what is its own: its keys, its
//! fault schedule, its Troupe system under test, and its statistics, tables and plots.
//!
//! Rules:
//! 1. A workload is registered once, in the registry the binary hands the core
//!    (`registry::Registry`); every command resolves it by name there once (`troupe lab run|sweep|compare|config
//!    <name>`), and its Troupe programs by role (`troupe lab exec <role>`). The core names no
//!    workload.
//! 2. A config is parsed and validated once per run, against [`Spec::schema`], into a
//!    [`Config`] that carries its keys role ([`Config::spec`]); the workload's typed view is
//!    built from that value and never re-parsed.
//! 3. The schedule is a pure function of the config (seed included): [`Faults::schedule`].
//! 4. Everything a run reports is computed from its recorded files (events, schedule,
//!    manifest) by [`Checker::check`], so `troupe lab report DIR` can rebuild it at any time.
//! 5. Every run folder gets `summary.json`: [`RunAnalysis::summary_json`], written by the core.
//! 6. A run whose events are complete is `ok` only when [`RunAnalysis::degradations`] is
//!    empty; otherwise it is `degraded`, and the lines say what it failed to do. A run is never
//!    made to look better by leaving out what did not recover.
//!
//! A workload is composed of six roles, each a small trait (the split Jepsen makes between
//! client, nemesis and checker): [`Spec`] (its name and keys), [`Faults`] (its fault schedule),
//! [`System`] (its Troupe system under test), [`Checker`] (its statistics, typed),
//! [`Reports`] (its tables, plots and pages, every method with a default) and [`Conform`] (its
//! behaviour contract as machine checks, every method with a default: none). Whatever
//! implements all six is a [`Workload`], the object-safe view the core holds.
//!
//! Adding a workload: `docs/adding-a-workload.md`, and `examples/custom-workload`.

use std::any::Any;
use std::fmt::Debug;
use std::path::Path;
use std::time::Duration;

pub use crate::analysis::RunAnalysis;
use crate::config::Config;
pub use crate::config::Spec;
use crate::conform::{Rule, Scenario};
use crate::error::{Error, Result};
use crate::events::Event;
use crate::manifest::Manifest;
use crate::schedule::FaultAction;

/// Role 2: the faults a run injects (the nemesis).
pub trait Faults {
    /// The fault schedule (rule 3); the core merges the `[net_faults]` lines into it
    /// ([`schedule_of`]).
    fn schedule(&self, cfg: &Config) -> Vec<FaultAction>;
}

/// Role 3: the Troupe system under test (the client, in Jepsen's words).
pub trait System {
    /// The `troupe lab exec <role>` programs of its Troupe system under test; the first is
    /// the one `troupe lab run` starts.
    fn roles(&self) -> &'static [&'static str];

    /// Runs one of [`System::roles`] from the environment contract; the process exit code.
    fn exec(&self, role: &str) -> Result<i32>;

    /// How long the system under test is expected to run (set-up, warm-up and window); the
    /// lab adds its slack to this before it treats a run as hung.
    fn expected_duration(&self, cfg: &Config) -> Duration;
}

/// Role 4: what a run's events say (the checker).
pub trait Checker {
    /// The workload's statistics of one run.
    type Analysis: RunAnalysis;

    /// The statistics of a run from its events and schedule (rule 4). `baseline` is the
    /// throughput of the same point without faults when the caller knows it (sweeps).
    fn check(&self, cfg: &Config, events: &[Event], sched: &[FaultAction], baseline: Option<f64>) -> Self::Analysis;
}

/// Role 5: the workload's tables, plots and pages. Every method has a default: the core's
/// generic page of a run ([`crate::report::generic_run_page`]) and its generic grid table of
/// a sweep or comparison ([`crate::report::grid`]).
pub trait Reports: Checker {
    /// Writes the run's CSV tables, plots and `report.html` into `dir`.
    fn run_outputs(&self, dir: &Path, m: &Manifest, cfg: &Config, a: &Self::Analysis) -> Result<()> {
        crate::report::page::generic_run_page(dir, m, cfg, a)
    }

    /// Writes a sweep folder's report (`sweep.csv`, `report.html`); the number of runs.
    fn sweep_report(&self, dir: &Path) -> Result<usize> {
        crate::report::grid::write_sweep(dir)
    }

    /// Writes a comparison folder's report; the side-by-side table as text lines.
    fn compare_report(&self, dir: &Path) -> Result<Vec<String>> {
        crate::report::grid::write_compare(dir)
    }
}

/// Role 6: the workload's behaviour contract as checks of a run's trace (`troupe lab conform`,
/// [`crate::conform`]). Both methods default to none: `conform` refuses a workload without
/// rules, naming it.
pub trait Conform {
    /// One [`Rule`] per checked predicate of the contract, in the contract's order; a contract
    /// rule the trace cannot show is a rule whose check is [`crate::conform::not_observable`].
    fn rules(&self) -> Vec<Rule> {
        Vec::new()
    }

    /// The short configs that exercise the rules; `troupe lab conform` runs each on every
    /// runtime (or the one `--scenario` names).
    fn scenarios(&self) -> Vec<Scenario> {
        Vec::new()
    }
}

/// A benchmark of the lab, as the core holds it: everything that implements the six roles is
/// one (the blanket implementation below); nobody implements it by hand.
pub trait Workload: Spec + Faults + System + Conform + Sync + 'static {
    /// [`Checker::check`], its result boxed.
    fn analyse(
        &self,
        cfg: &Config,
        events: &[Event],
        sched: &[FaultAction],
        baseline: Option<f64>,
    ) -> Box<dyn RunAnalysis>;

    /// [`Reports::run_outputs`] for an analysis this workload made; an error naming the
    /// workload if it is another's.
    fn write_run_outputs(&self, dir: &Path, m: &Manifest, cfg: &Config, a: &dyn RunAnalysis) -> Result<()>;

    /// [`Reports::sweep_report`].
    fn write_sweep_report(&self, dir: &Path) -> Result<usize>;

    /// [`Reports::compare_report`].
    fn write_compare_report(&self, dir: &Path) -> Result<Vec<String>>;
}

impl<T: Spec + Faults + System + Reports + Conform + Sync + 'static> Workload for T {
    fn analyse(
        &self,
        cfg: &Config,
        events: &[Event],
        sched: &[FaultAction],
        baseline: Option<f64>,
    ) -> Box<dyn RunAnalysis> {
        Box::new(self.check(cfg, events, sched, baseline))
    }

    fn write_run_outputs(&self, dir: &Path, m: &Manifest, cfg: &Config, a: &dyn RunAnalysis) -> Result<()> {
        let any: &dyn Any = a;
        let a = any.downcast_ref::<T::Analysis>().ok_or_else(|| not_ours(self.name()))?;
        self.run_outputs(dir, m, cfg, a)
    }

    fn write_sweep_report(&self, dir: &Path) -> Result<usize> {
        self.sweep_report(dir)
    }

    fn write_compare_report(&self, dir: &Path) -> Result<Vec<String>> {
        self.compare_report(dir)
    }
}

fn not_ours(workload: &str) -> Error {
    Error::other(format!("not the analysis of a {workload} run"))
}

/// A workload's own analysis back from the core's boxed one ([`Workload::analyse`]); an error
/// naming the workload if it is another's.
pub fn typed<C: Checker + Spec>(w: &C, a: Box<dyn RunAnalysis>) -> Result<C::Analysis> {
    let any: Box<dyn Any> = a;
    any.downcast::<C::Analysis>().map(|b| *b).map_err(|_| not_ours(w.name()))
}

/// The fault schedule of a run of `w` with `cfg`: the workload's own
/// ([`Faults::schedule`]) with the config's `[net_faults]` lines merged in
/// ([`crate::netfaults::merge`]).
pub fn schedule_of(w: &dyn Workload, cfg: &Config) -> Vec<FaultAction> {
    crate::netfaults::merge(cfg, w.schedule(cfg))
}

impl Debug for dyn Workload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.name())
    }
}
