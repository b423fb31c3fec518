//! Troupe clusters: gossip membership with seed nodes, a phi-accrual failure detector,
//! cluster events, downing strategies (split brain resolution), a public consistent-hash
//! ring, a cluster-wide receptionist and globally unique names.
//!
//! Layers, bottom up:
//! - [`PhiDetector`] (`phi.rs`) and [`HashRing`] (`ring.rs`): self-contained, public.
//! - [`Gossip`] (`gossip.rs`): the replicated state and its convergence rules.
//! - [`Engine`] (`engine/`): the membership protocol as a state machine without I/O; the
//!   deterministic simulator [`sim`] runs hundreds of engines in one process from a seed.
//! - [`Cluster`] (`daemon.rs`): an engine driven over a `troupe_remote::Node`, with events,
//!   the receptionist and global names (`receptionist.rs`).
//! - `lifecycle.rs`: a [`Cluster`] as a `troupe::Service` of a `troupe::System`, left
//!   gracefully when the system shuts down ([`Cluster::start_in`]).
//! - [`cli`]: `troupe node` with a `[cluster]` section and `troupe cluster status`.
//! - [`testproc`]: a harness for tests that run cluster nodes as OS processes.
//!
//! Observing: membership, reachability, leader and downing changes are structured `tracing`
//! events under the `troupe_cluster` target (`engine/events.rs`, `engine/detect.rs`,
//! `engine/downing.rs`); with the feature `metrics`, the `metrics` module publishes a member's
//! view through the `metrics` facade at scrape time.

#[cfg(feature = "bench")]
pub mod bench;
#[cfg(feature = "cli")]
pub mod cli;
mod config;
mod daemon;
pub mod devices;
mod engine;
mod error;
mod gossip;
mod lifecycle;
mod member;
#[cfg(feature = "metrics")]
pub mod metrics;
#[cfg(feature = "observe")]
pub mod observe;
pub mod overlay;
mod phi;
mod receptionist;
mod ring;
#[cfg(feature = "sim")]
pub mod sim;
mod status;
#[cfg(feature = "testproc")]
pub mod testproc;
mod wire;

pub use config::{ClusterConfig, Downing, PROTOCOL_VERSION};

pub use daemon::Cluster;
pub use engine::{Engine, EngineStats, Out};
pub use error::{Error, ErrorKind};
pub use gossip::{Entry, Gossip, Owned, Reach};
pub use member::{Member, MemberStatus, NodeId};
pub use phi::{phi, PhiDetector};
pub use receptionist::{Listing, ServiceKey};

pub use ring::{stable_hash, HashRing};
pub use status::{MemberRow, Status};
pub use wire::{ClusterEvent, ClusterMsg, Wire, CLUSTER_ACTOR};
