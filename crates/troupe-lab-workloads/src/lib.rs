//! The reliability lab's workloads, each a plug-in of the lab core (`troupe-lab`): one folder
//! per workload implementing the core's roles ([`troupe_lab::workload`]), one line in
//! [`registry`]. The `troupe` binary hands that registry to the core; nothing in the core
//! names a workload.
//!
//! ```
//! let reg = troupe_lab_workloads::registry();
//! assert_eq!(reg.names(), ["scp", "chat", "energy", "iot", "overlay-scale", "latency", "kv", "crdt", "cluster"]);
//! let cfg = reg.builder("chat").unwrap().build().unwrap();
//! assert_eq!(cfg.spec().name(), "chat");
//! ```

pub mod chat;
pub mod cluster;
mod common;
pub mod crdt;
pub mod energy;
mod error;
pub mod iot;
pub mod kv;
pub mod latency;
mod nodeset;
pub mod overlay_scale;
pub mod scp;
pub mod studies;

pub use error::SutError;
use troupe_lab::registry::Registry;

/// Every workload of the lab, in the order `troupe lab` lists them.
pub fn registry() -> Registry {
    Registry::new(vec![
        &scp::Scp,
        &chat::Chat,
        &energy::Energy,
        &iot::Iot,
        &overlay_scale::OverlayScale,
        &latency::Latency,
        &kv::Kv,
        &crdt::Crdt,
        &cluster::ClusterWorkload,
    ])
}
