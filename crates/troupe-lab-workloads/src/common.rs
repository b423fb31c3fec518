//! Pieces the multi-process Troupe programs of several workloads share (chat, iot): what a node
//! process reports in its `run_finished`.

/// What a process reports in its `run_finished`.
#[derive(Default)]
pub(crate) struct Tally {
    pub(crate) errors: u64,
    pub(crate) skipped: u64,
    pub(crate) injected: u64,
    pub(crate) interrupted: bool,
    pub(crate) failed_nodes: Vec<String>,
    /// Frames dropped and delayed by `[net_faults]` on this process's node, when it had any.
    pub(crate) net: Option<(u64, u64)>,
}

impl Tally {
    /// The `run_finished` fields every node process writes, `net_*` only with network faults.
    pub(crate) fn finished_json(&self) -> serde_json::Value {
        let mut v = serde_json::json!({
            "errors": self.errors,
            "skipped_faults": self.skipped,
            "injected": self.injected,
            "interrupted": self.interrupted,
            "failed_nodes": self.failed_nodes,
        });
        if let Some((dropped, delayed)) = self.net {
            v["net_dropped_frames"] = dropped.into();
            v["net_delayed_frames"] = delayed.into();
        }
        v
    }
}
