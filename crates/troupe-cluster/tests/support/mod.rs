//! Harness for the cluster's multi-process tests: `troupe-cluster-node` OS processes on
//! loopback (or in network namespaces) run through `troupe_cluster::testproc`, and the settings
//! the tests share.
#![allow(dead_code, unreachable_pub, unused_imports)]

use std::time::Duration;

pub use troupe_cluster::testproc::{all_up, count, is_event, NodeProc as Proc};

pub const SECRET: &str = "cluster-test-secret";

static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Held for the whole of a multi-process test: the tests of one file run one at a time, so a
/// loaded 2-core machine runs five node processes, not thirty, and heartbeats are not starved
/// into false unreachable marks.
pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The cluster settings of the tests: 100 ms heartbeats, with an acceptable pause wide enough
/// that a loaded 2-core machine does not cause false unreachable marks.
pub const PROFILE: &str = "heartbeat_interval_ms = 100\nacceptable_pause_ms = 1000\nmin_std_dev_ms = 50\n\
gossip_interval_ms = 200\nstable_after_ms = 1500\nseed_timeout_ms = 1000\njoin_retry_min_ms = 100\njoin_retry_max_ms = 1000\n";

/// Starts a node named `name` with a `[cluster]` section made of `cluster` (TOML lines) and
/// the node-level `extra` lines, using `secret`.
pub fn start(name: &str, extra: &str, cluster: &str, secret: &str) -> Proc {
    start_in(None, name, "127.0.0.1:0", extra, cluster, secret)
}

/// Like `start`, inside network namespace `ns` (through `ip netns exec`), listening on `listen`.
pub fn start_in(ns: Option<&str>, name: &str, listen: &str, extra: &str, cluster: &str, secret: &str) -> Proc {
    let text =
        format!("name = \"{name}\"\nsecret = \"{secret}\"\nlisten = \"{listen}\"\n{extra}\n[cluster]\n{cluster}\n");
    let prefix: Vec<&str> = ns.map(|n| vec!["ip", "netns", "exec", n]).unwrap_or_default();
    Proc::start(env!("CARGO_BIN_EXE_troupe-cluster-node"), &prefix, &text)
}

/// The `[cluster]` lines of a node joining through `seed` (none: it starts the cluster).
pub fn cluster_lines(seed: Option<&str>, more: &str) -> String {
    let seeds = seed.map(|s| format!("seeds = [\"{s}\"]\n")).unwrap_or_default();
    format!("{PROFILE}{seeds}{more}")
}

/// Starts a first node and `n - 1` joining through it.
pub fn cluster(n: usize, more: &str, extra: &str) -> Vec<Proc> {
    let first = start("n1", extra, &cluster_lines(None, more), SECRET);
    let seed = first.addr.clone();
    let mut v = vec![first];
    for i in 2..=n {
        v.push(start(&format!("n{i}"), extra, &cluster_lines(Some(&seed), more), SECRET));
    }
    for p in &mut v {
        p.wait_status("all members up", |s| all_up(s, n), Duration::from_secs(60));
    }
    v
}
