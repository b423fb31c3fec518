//! The `kv` workload's keys (workloads.md §5, seed 004 §6.2) with their quick defaults, ranges
//! and cross-key rules, and the typed view of a validated config.
//!
//! The defaults are a quick run: the quorum store, 1 MiB objects, 8 clients, 5 s, 64 vnodes
//! over 3 node processes, N=3, R=W=2, 4 request connections on their own channel beside the
//! anti-entropy and ring-gossip channels; `troupe lab run kv` takes well under 30 s.

use troupe_lab::config::{Config, CrossIssue, KeyKind, KeySpec, Schema, Value, SEED};
use troupe_lab::error::ConfigIssue;

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
    KeySpec {
        name: "service",
        kind: KeyKind::Choice(SERVICES),
        default: || Value::Str("kv".into()),
        doc: "kv: the quorum key-value store (gets and puts); echo: each request is answered with its payload",
    },
    KeySpec {
        name: "object_bytes",
        kind: KeyKind::Int { min: 1, max: 8_388_608 },
        default: || Value::Int(1_048_576),
        doc: "bytes of each object put (and of each echo request), 1 .. 8 MiB",
    },
    KeySpec {
        name: "concurrency",
        kind: KeyKind::Int { min: 1, max: 256 },
        default: || Value::Int(8),
        doc: "client actors, each with one request outstanding at a time",
    },
    KeySpec {
        name: "duration_s",
        kind: KeyKind::Int { min: 1, max: 120 },
        default: || Value::Int(5),
        doc: "length of the measured window, s",
    },
    KeySpec {
        name: "vnodes",
        kind: KeyKind::Int { min: 3, max: 1024 },
        default: || Value::Int(64),
        doc: "virtual nodes (ring partitions); each has a replica actor on each of its N nodes",
    },
    KeySpec {
        name: "n",
        kind: KeyKind::Int { min: 3, max: 3 },
        default: || Value::Int(3),
        doc: "replicas per key (fixed: 3, one per node process)",
    },
    KeySpec {
        name: "r",
        kind: KeyKind::Int { min: 1, max: 3 },
        default: || Value::Int(2),
        doc: "replies a get waits for (r + w > n)",
    },
    KeySpec {
        name: "w",
        kind: KeyKind::Int { min: 1, max: 3 },
        default: || Value::Int(2),
        doc: "acks a put waits for (r + w > n)",
    },
    KeySpec {
        name: "parallelism",
        kind: KeyKind::Int { min: 1, max: 64 },
        default: || Value::Int(4),
        doc: "connections per node pair for the requests channel (transport channels)",
    },
    KeySpec {
        name: "transport",
        kind: KeyKind::Choice(TRANSPORTS),
        default: || Value::Str("channels".into()),
        doc: "channels: requests, anti-entropy and ring gossip each on their own channel (requests on \
              `parallelism` connections); one_connection: everything on one connection per node pair. \
              Erlang: one_connection only",
    },
    KeySpec {
        name: "keys",
        kind: KeyKind::Int { min: 1, max: 100_000 },
        default: || Value::Int(100),
        doc: "the key space the clients pick keys from uniformly",
    },
    KeySpec {
        name: "read_pct",
        kind: KeyKind::Int { min: 0, max: 100 },
        default: || Value::Int(50),
        doc: "percent of kv operations that are gets (the rest are puts)",
    },
    SEED,
];

fn cross_check(c: &Config) -> Vec<CrossIssue> {
    let k = KvConfig::from_config(c);
    let mut out = Vec::new();
    if k.r + k.w <= k.n {
        out.push((
            vec!["r", "w", "n"],
            ConfigIssue {
                key: "r+w".into(),
                value: format!("{} + {} <= n = {}", k.r, k.w, k.n),
                problem: "a get must see the newest put: r + w must be greater than n".into(),
            },
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
    /// The run's seed.
    pub seed: u64,
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
            keys: c.int("keys").max(1) as u64,
            read_pct: c.int("read_pct").max(0) as u64,
            seed: c.int("seed").max(0) as u64,
        }
    }
}
