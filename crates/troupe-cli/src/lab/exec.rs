//! `troupe lab exec ROLE` (hidden): a Troupe program of a workload, or one of its helper roles,
//! started by the lab as a child process (environment contract: TROUPE_CONFIG, TROUPE_SCHEDULE,
//! TROUPE_EVENTS, TROUPE_RUN_ID).

use troupe_lab::registry::Registry;

/// Runs `role` of the workload that has it; its exit code.
pub(super) fn exec(reg: &Registry, role: &str) -> anyhow::Result<i32> {
    Ok(reg.by_role(role)?.exec(role)?)
}
