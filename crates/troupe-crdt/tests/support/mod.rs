//! Harness for the multi-process tests: `troupe-crdt-node` OS processes on loopback, run through
//! `troupe_cluster::testproc` (lines collected, commands answered, every wait bounded), plus
//! what only these tests need: the replicated value's events and SIGKILL.
#![allow(dead_code, unreachable_pub, unused_imports)]

use std::time::Duration;

use serde_json::Value;
pub use troupe_cluster::testproc::{all_up, NodeProc as Proc};

pub const SECRET: &str = "crdt-test-secret";

/// 100 ms heartbeats with a pause wide enough for a loaded 2-core machine; no downing.
pub const PROFILE: &str = "heartbeat_interval_ms = 100\nacceptable_pause_ms = 1000\nmin_std_dev_ms = 50\n\
gossip_interval_ms = 200\nstable_after_ms = 1500\nseed_timeout_ms = 1000\njoin_retry_min_ms = 100\njoin_retry_max_ms = 1000\n";

/// Starts `bin` named `name`, joining through `seed` (none: it starts the cluster).
pub fn start(bin: &str, name: &str, seed: Option<&str>) -> Proc {
    let seeds = seed.map(|s| format!("seeds = [\"{s}\"]\n")).unwrap_or_default();
    let text =
        format!("name = \"{name}\"\nsecret = \"{SECRET}\"\nlisten = \"127.0.0.1:0\"\n[cluster]\n{PROFILE}{seeds}");
    Proc::start(bin, &[], &text)
}

/// What these tests add to a node process.
pub trait CrdtProc {
    /// Waits (bounded) until a `crdt_changed` event for `key` shows `value` (or already did).
    fn wait_value(&mut self, key: &str, value: u64, limit: Duration);
    /// SIGKILLs the node and reaps it.
    fn kill(&mut self);
}

impl CrdtProc for Proc {
    fn wait_value(&mut self, key: &str, value: u64, limit: Duration) {
        let hit = |l: &str| {
            l.strip_prefix("event ")
                .and_then(|j| serde_json::from_str::<Value>(j).ok())
                .is_some_and(|v| v["ev"] == "crdt_changed" && v["key"] == key && v["value"] == value)
        };
        if !self.seen.iter().any(|l| hit(l)) {
            self.wait_line(hit, limit);
        }
    }

    fn kill(&mut self) {
        let _ = self.child.kill(); // SIGKILL
        let _ = self.child.wait();
    }
}

/// Starts `n` nodes of `bin` (the first one the seed) and waits until all see all up.
pub fn cluster(bin: &str, n: usize) -> Vec<Proc> {
    let first = start(bin, "n1", None);
    let seed = first.addr.clone();
    let mut v = vec![first];
    for i in 2..=n {
        v.push(start(bin, &format!("n{i}"), Some(&seed)));
    }
    for p in &mut v {
        p.wait_status("all members up", |s| all_up(s, n), Duration::from_secs(60));
    }
    v
}
