//! The `kv` workload's keys (workloads.md §5, seed 004 §6.2) with their quick defaults, ranges
//! and cross-key rules, and the typed view of a validated config.
//!
//! The defaults are a quick run: the quorum store, 1 MiB objects, 8 clients, 5 s, 64 vnodes
//! over 3 node processes, N=3, R=W=2, 4 request connections on their own channel beside the
//! anti-entropy and ring-gossip channels; `troupe lab run kv` takes well under 30 s.

use troupe_lab::config::{cross, Config, CrossIssue, KeySpec, Schema, SEED};
use troupe_lab::{choice_key, int_key};

/// The services: the quorum store and a plain echo.
pub const SERVICES: &[&str] = &["kv", "echo"];
/// The transports: Troupe's options; Distributed Erlang has only `one_connection`.
pub const TRANSPORTS: &[&str] = &["channels", "one_connection"];
/// The one transport Distributed Erlang has.
pub const ERLANG_TRANSPORT: &str = "one_connection";
/// Node processes holding the store.
pub const NODES: usize = 3;

/// The kv schema.
pub static SCHEMA: Schema = Schema { workload: "kv", keys: KEYS, cross_check };

static KEYS: &[KeySpec] = &[
    choice_key!(
        "service",
        SERVICES,
        "kv",
        "kv: the quorum key-value store (gets and puts); echo: each request is answered with its payload"
    ),
    int_key!(
        "object_bytes",
        1,
        8_388_608,
        1_048_576,
        "bytes of each object put (and of each echo request), 1 .. 8 MiB"
    ),
    int_key!("concurrency", 1, 256, 8, "client actors, each with one request outstanding at a time"),
    int_key!("duration_s", 1, 3_600, 5, "length of the measured window, s (nemesis runs: minutes)"),
    int_key!("vnodes", 3, 1024, 64, "virtual nodes (ring partitions); each has a replica actor on each of its N nodes"),
    int_key!("n", 3, 3, 3, "replicas per key (fixed: 3, one per node process)"),
    int_key!("r", 1, 3, 2, "replies a get waits for (r + w > n)"),
    int_key!("w", 1, 3, 2, "acks a put waits for (r + w > n)"),
    int_key!("parallelism", 1, 64, 4, "connections per node pair for the requests channel (transport channels)"),
    choice_key!(
        "transport",
        TRANSPORTS,
        "channels",
        "channels: requests, anti-entropy and ring gossip each on their own channel (requests on \
         `parallelism` connections); one_connection: everything on one connection per node pair. \
         Erlang: one_connection only"
    ),
    int_key!("keys", 1, 100_000, 100, "the key space the clients pick keys from uniformly"),
    int_key!("read_pct", 0, 100, 50, "percent of kv operations that are gets (the rest are puts)"),
    int_key!(
        "storage_delay_ms",
        0,
        1_000,
        0,
        "simulated storage time of each get and put in its vnode replica, ms; a replica serves one \
         at a time, so it bounds each partition at 1000/delay operations/s (seed 004 §6.2.3: 1 ms)"
    ),
    choice_key!("overlay", troupe_lab::overlay_net::OVERLAYS, "full_mesh", troupe_lab::overlay_net::HELP),
    SEED,
    troupe_lab::nemesis::NEMESIS,
    troupe_lab::nemesis::NEMESIS_INTERVAL_MS,
];

/// The nemesis kinds the kv program carries out (docs/kv.md "Nemesis runs").
pub const NEMESIS_KINDS: &[&str] = &["partition", "kill", "pause", "loss"];

fn cross_check(c: &Config) -> Vec<CrossIssue> {
    let k = KvConfig::from_config(c);
    let mut out = troupe_lab::nemesis::cross_check(c, NEMESIS_KINDS);
    if k.nemesis.is_some() && k.service != "kv" {
        out.push(cross(
            &["nemesis", "service"],
            "nemesis",
            format!("{:?} with service {}", c.str("nemesis"), k.service),
            "a nemesis run checks the store's history: use service = \"kv\"",
        ));
    }
    if k.overlay != troupe_lab::overlay_net::FULL_MESH && (k.nemesis.is_some() || c.net_faults().is_some()) {
        out.push(cross(
            &["overlay", "nemesis"],
            "overlay",
            format!("{} with faults", k.overlay),
            "faults are wired into the full mesh only: run an overlay without nemesis and [net_faults]",
        ));
    }
    if k.r + k.w <= k.n {
        out.push(cross(
            &["r", "w", "n"],
            "r+w",
            format!("{} + {} <= n = {}", k.r, k.w, k.n),
            "a get must see the newest put: r + w must be greater than n",
        ));
    }
    out
}

/// A validated kv config.
#[derive(Debug, Clone, PartialEq)]
pub struct KvConfig {
    /// One of [`SERVICES`].
    pub service: String,
    /// Bytes per object.
    pub object_bytes: u64,
    /// Client actors.
    pub concurrency: u64,
    /// Measured window, s.
    pub duration_s: u64,
    /// Ring partitions.
    pub vnodes: u64,
    /// Replicas per key.
    pub n: u64,
    /// Get quorum.
    pub r: u64,
    /// Put quorum.
    pub w: u64,
    /// Request connections per node pair (`channels`).
    pub parallelism: u64,
    /// One of [`TRANSPORTS`].
    pub transport: String,
    /// Key space.
    pub keys: u64,
    /// Percent gets.
    pub read_pct: u64,
    /// Simulated storage time per get and put in a replica, ms (0: none).
    pub storage_delay_ms: u64,
    /// The run's seed.
    pub seed: u64,
    /// The nemesis, when the run has one.
    pub nemesis: Option<troupe_lab::nemesis::Nemesis>,
    /// One of [`troupe_lab::overlay_net::OVERLAYS`]: with any but `full_mesh`, the processes
    /// join that overlay with node 0 as its hub, and the traffic rides it (docs/kv.md).
    pub overlay: String,
}

impl KvConfig {
    /// The typed view of a validated config.
    pub fn from_config(c: &Config) -> KvConfig {
        KvConfig {
            service: c.str("service").to_string(),
            object_bytes: c.int("object_bytes").max(1) as u64,
            concurrency: c.int("concurrency").max(1) as u64,
            duration_s: c.int("duration_s").max(1) as u64,
            vnodes: c.int("vnodes").max(1) as u64,
            n: c.int("n").max(1) as u64,
            r: c.int("r").max(1) as u64,
            w: c.int("w").max(1) as u64,
            parallelism: c.int("parallelism").max(1) as u64,
            transport: c.str("transport").to_string(),
            storage_delay_ms: c.int("storage_delay_ms").max(0) as u64,
            keys: c.int("keys").max(1) as u64,
            read_pct: c.int("read_pct").max(0) as u64,
            seed: c.int("seed").max(0) as u64,
            nemesis: troupe_lab::nemesis::Nemesis::of(c),
            overlay: c.str("overlay").to_string(),
        }
    }

    /// Whether refs between processes name their actors (node.rs rule 6): a killed node's
    /// replacement has other actor ids.
    pub fn by_name(&self) -> bool {
        self.nemesis.as_ref().is_some_and(|n| n.has("kill"))
    }
}
