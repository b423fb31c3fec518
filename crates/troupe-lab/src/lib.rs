//! The reliability lab: workload configs, fault schedules, the event writer and collector,
//! running Troupe and peer runtimes as child processes, statistics and reports, sweeps,
//! comparisons of runtimes side by side, studies reproduced as data ([`study`]). It names no workload: a workload is a plug-in
//! ([`workload`]) the program hands the core in a [`registry::Registry`] (the `troupe` binary
//! registers the crate `troupe-lab-workloads`); [`testkit::Noop`] is the core's own, for tests.
//!
//! The lab measures every runtime the same way: each run's system under test is a child
//! process given `TROUPE_CONFIG`, `TROUPE_SCHEDULE`, `TROUPE_EVENTS` and `TROUPE_RUN_ID`
//! (`common.md`, the peer-program contract), and everything reported is computed from the
//! events it wrote (`events.md`). It is also given `TROUPE_OBSERVE_LISTEN`, where a program that
//! serves its own Prometheus metrics puts them for the meter to read ([`meter::prom`]).

pub mod analysis;
pub mod child;
pub mod compare;
pub mod config;
pub mod conform;
pub mod error;
pub mod events;
pub mod folders;
pub mod history;
pub mod machine;
pub mod manifest;
pub mod meter;
pub mod nemesis;
pub mod netfaults;
pub mod netlayer;
pub mod nodes;
pub mod overlay_net;
pub mod peer;
pub mod registry;
pub mod relay;
pub mod report;
pub mod root;
pub mod run;
pub mod run_folder;
pub mod schedule;
pub mod stats;
pub mod study;
pub mod subprocess;
pub mod sweep;
pub mod testkit;
pub mod watch;
pub mod workload;

pub use error::{did_you_mean, Error, ErrorKind, Result};
