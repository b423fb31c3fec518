//! The registered workloads (rule 1 of [`crate::workload`]): one folder each, one line in
//! [`ALL`]. Everything else in the lab finds a workload through [`get`] or [`by_role`].

pub mod chat;
mod common;
pub mod energy;
pub mod iot;
pub mod kv;
pub mod latency;
pub mod overlay_scale;
pub mod scp;

use crate::config::Config;
use crate::error::{Error, ErrorKind, Result};
use crate::schedule::FaultAction;
use crate::workload::Workload;

/// Every workload of the lab, in the order `troupe lab` lists them.
pub static ALL: &[&dyn Workload] =
    &[&scp::Scp, &chat::Chat, &energy::Energy, &iot::Iot, &overlay_scale::OverlayScale, &latency::Latency, &kv::Kv];

/// The names of the registered workloads.
pub fn names() -> Vec<&'static str> {
    ALL.iter().map(|w| w.name()).collect()
}

/// The workload called `name`, or an error listing the ones there are.
pub fn get(name: &str) -> Result<&'static dyn Workload> {
    ALL.iter().copied().find(|w| w.name() == name).ok_or_else(|| {
        Error::new(ErrorKind::Unsupported(format!(
            "workload {name:?} is not built in the lab{}; available: {}",
            crate::did_you_mean(name, &names()),
            names().join(", ")
        )))
    })
}

/// The workload that has a Troupe program for `role` (`troupe lab exec <role>`).
pub fn by_role(role: &str) -> Result<&'static dyn Workload> {
    ALL.iter().copied().find(|w| w.roles().contains(&role)).ok_or_else(|| {
        let roles: Vec<&str> = ALL.iter().flat_map(|w| w.roles().iter().copied()).collect();
        Error::new(ErrorKind::Unsupported(format!("no Troupe program {role:?}; programs: {}", roles.join(", "))))
    })
}

/// The fault schedule of a config, from its workload, with its `[net_faults]` lines merged in.
pub fn schedule_for(cfg: &Config) -> Result<Vec<FaultAction>> {
    Ok(crate::netfaults::merge(cfg, get(cfg.workload())?.schedule(cfg)))
}
