//! The `latency` workload's keys (workloads.md §5, seed 004 §6.1) with their quick defaults,
//! ranges and cross-key rules, and the typed view of a validated config.
//!
//! The defaults are a quick run: 8 actor pairs, 512 KiB payloads, 1,000 messages, 1 ms RTT
//! through the lab's relay, one connection, no overlay (full mesh); `troupe lab run latency`
//! takes a few seconds.

use troupe_lab::config::{cross, Config, CrossIssue, KeySpec, Schema, SEED};
use troupe_lab::{choice_key, int_key};

/// The transports: Troupe's options; Distributed Erlang has only the first.
pub const TRANSPORTS: &[&str] = &["one_connection", "parallel_random", "parallel_affinity", "channels_gossip"];

/// The one transport Distributed Erlang has: one connection per node pair.
pub const ERLANG_TRANSPORT: &str = "one_connection";

/// Bytes of one background gossip message (`channels_gossip`).
pub const GOSSIP_BYTES: usize = 64 * 1024;
/// How often each node sends one gossip message to the other (`channels_gossip`), ms.
pub const GOSSIP_EVERY_MS: u64 = 10;

/// The latency schema.
pub static SCHEMA: Schema = Schema { workload: "latency", keys: KEYS, cross_check };

static KEYS: &[KeySpec] = &[
    int_key!(
        "pairs",
        1,
        128,
        8,
        "actor pairs: each actor on node A sends to its partner on node B and waits for the ack"
    ),
    int_key!("payload_bytes", 524_288, 8_388_608, 524_288, "bytes of payload in each message (512 KiB .. 8 MiB)"),
    int_key!(
        "messages",
        10,
        1_000_000,
        1_000,
        "messages in the experiment, over all pairs (each pair sends its share in turn)"
    ),
    int_key!(
        "rtt_ms",
        0,
        200,
        1,
        "simulated round-trip time, injected by the lab's relay between the nodes (rtt/2 each way), ms"
    ),
    choice_key!(
        "transport",
        TRANSPORTS,
        "one_connection",
        "one_connection; parallel_random (parallelism connections, random pick); \
         parallel_affinity (parallelism connections, picked by actor pair); channels_gossip \
         (data on its own affinitised channel, background gossip on another). Erlang: \
         one_connection only"
    ),
    int_key!(
        "parallelism",
        1,
        64,
        4,
        "connections per node pair for the data (parallel_random, parallel_affinity, channels_gossip)"
    ),
    choice_key!("overlay", troupe_lab::overlay_net::OVERLAYS, "full_mesh", troupe_lab::overlay_net::HELP),
    SEED,
];

fn cross_check(c: &Config) -> Vec<CrossIssue> {
    let t = LatencyConfig::from_config(c);
    let mut out = Vec::new();
    if t.messages < t.pairs {
        out.push(cross(
            &["messages", "pairs"],
            "messages+pairs",
            format!("{} < {}", t.messages, t.pairs),
            "every pair sends at least one message: messages must be >= pairs",
        ));
    }
    out
}

/// A validated latency config.
#[derive(Debug, Clone, PartialEq)]
pub struct LatencyConfig {
    /// Actor pairs.
    pub pairs: u64,
    /// Payload bytes per message.
    pub payload_bytes: u64,
    /// Messages in all.
    pub messages: u64,
    /// Simulated round-trip time, ms.
    pub rtt_ms: u64,
    /// One of [`TRANSPORTS`].
    pub transport: String,
    /// Data connections for the parallel transports.
    pub parallelism: u64,
    /// One of [`troupe_lab::overlay_net::OVERLAYS`]: with any but `full_mesh`, a hub process
    /// joins the run and node A's traffic to node B rides the overlay.
    pub overlay: String,
}

impl LatencyConfig {
    /// The typed view of a validated config.
    pub fn from_config(c: &Config) -> LatencyConfig {
        LatencyConfig {
            pairs: c.int("pairs").max(1) as u64,
            payload_bytes: c.int("payload_bytes").max(1) as u64,
            messages: c.int("messages").max(1) as u64,
            rtt_ms: c.int("rtt_ms").max(0) as u64,
            transport: c.str("transport").to_string(),
            parallelism: c.int("parallelism").max(1) as u64,
            overlay: c.str("overlay").to_string(),
        }
    }

    /// How many messages pair `i` sends: an even share, the first `messages % pairs` one more.
    pub fn share(&self, pair: u64) -> u64 {
        self.messages / self.pairs + u64::from(pair < self.messages % self.pairs)
    }

    /// Data connections per node pair this transport uses.
    pub fn data_connections(&self) -> u64 {
        if self.transport == "one_connection" {
            1
        } else {
            self.parallelism
        }
    }
}
