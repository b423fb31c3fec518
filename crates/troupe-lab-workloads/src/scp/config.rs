//! The SCP workload's keys (workloads.md §1) with their embedded defaults and cross-key rules,
//! and the typed view of a validated SCP config that the schedule, the SUB and the statistics use.

use troupe_lab::config::{cross, events_issue, Config, CrossIssue, KeySpec, Schema, Value, EVENTS, SEED, WARMUP};
use troupe_lab::{bool_key, choice_key, float_key, int_key};

/// The failure patterns of workloads.md §1.
pub const PATTERNS: &[&str] = &["none", "uniform", "burst", "random", "progressive"];
/// Where the fault injector runs, on every runtime (docs/scp.md, "Where the injector runs").
pub const INJECTOR_MODES: &[&str] = &["node", "in_process"];
/// How `failure_rate` is read: per exchange stream (Erlang injector) or per pair (Scala injector).
pub const FAILURE_BASES: &[&str] = &["exchanges", "pairs"];

const MAX_PAIRS: i64 = 1 << 20;

/// The SCP schema.
pub static SCHEMA: Schema = Schema { workload: "scp", keys: KEYS, cross_check };

static KEYS: &[KeySpec] = &[
    int_key!("pairs", 1, MAX_PAIRS, 1024, "number of server/client pairs (P)"),
    int_key!(
        "supervisors",
        1,
        MAX_PAIRS,
        32,
        "number of sub-supervisors (S, a divisor of pairs); P/S pairs per supervisor"
    ),
    int_key!("delay_ms", 1, 60_000, 200, "simulated processing time of the client per exchange, in ms"),
    int_key!("payload_bytes", 0, 16 << 20, 500, "bytes carried by each Ping and Pong"),
    choice_key!("pattern", PATTERNS, "random", "failure pattern"),
    float_key!("failure_rate", 0.0, 20.0, 5.0, "percent; kills/s = rate/100 * pairs * 1000/delay_ms (exchanges basis)"),
    choice_key!(
        "failure_basis",
        FAILURE_BASES,
        "exchanges",
        "exchanges (Erlang injector) or pairs (Scala injector: pairs*rate/100 kills/s)"
    ),
    bool_key!("recovery", true, "children transient (restarted when killed) or temporary (never restarted)"),
    int_key!("burst_size", 1, MAX_PAIRS, 25, "kills per burst (burst pattern)"),
    int_key!("random_burst_max", 1, MAX_PAIRS, 10, "largest burst of the random pattern"),
    int_key!("duration_s", 1, 86_400, 60, "length of the measurement window, s"),
    WARMUP,
    choice_key!(
        "injector",
        INJECTOR_MODES,
        "node",
        "where the fault injector runs, on every runtime: its own OS process, a separate node \
         reaching the system over the runtime's distribution (node, as seed 001 ran it), or \
         inside the measured process (in_process)"
    ),
    EVENTS,
    SEED,
];

fn cross_check(c: &Config) -> Vec<CrossIssue> {
    let mut out = Vec::new();
    let pairs = c.int("pairs");
    let sups = c.int("supervisors");
    if sups > pairs || pairs % sups != 0 {
        let problem = format!("must be a divisor of pairs = {pairs} (1..={pairs})");
        out.push(cross(&["pairs", "supervisors"], "supervisors", sups, problem));
    }
    if c.str("pattern") == "progressive" && c.bool("recovery") {
        let problem = "pattern = \"progressive\" kills permanently; set recovery = false";
        out.push(cross(&["pattern", "recovery"], "recovery", "true", problem));
    }
    let in_flight = pairs.saturating_mul(c.int("payload_bytes"));
    if in_flight > (2_i64 << 30) {
        let problem = format!("pairs * payload_bytes = {in_flight} B in flight; allowed at most 2 GiB");
        out.push(cross(&["pairs", "payload_bytes"], "payload_bytes", c.int("payload_bytes"), problem));
    }
    let typed = ScpConfig::from_config(c);
    let kills = typed.kill_rate() * typed.duration_s as f64;
    if kills > MAX_KILLS {
        out.push(cross(
            &["failure_rate", "pairs", "delay_ms", "duration_s", "failure_basis", "pattern"],
            "failure_rate",
            typed.failure_rate,
            format!(
                "gives {kills:.0} kills in the window; at most {MAX_KILLS} are supported \
                 (lower failure_rate, pairs or duration_s)"
            ),
        ));
    }
    out.extend(events_issue(c));
    out
}

/// The most kills one schedule may hold (keeps schedules in memory and on disk bounded).
const MAX_KILLS: f64 = 10_000_000.0;

/// A failure pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Pattern {
    /// No faults.
    None,
    /// Single kills evenly spaced.
    Uniform,
    /// `burst_size` kills at once, bursts spaced to give the rate.
    Burst,
    /// A seeded mix of single kills and bursts, same mean rate.
    Random,
    /// Every 5 s, `failure_rate`% of the original pairs, never restarted.
    Progressive,
}

impl Pattern {
    /// The pattern's config word.
    pub fn as_str(self) -> &'static str {
        match self {
            Pattern::None => "none",
            Pattern::Uniform => "uniform",
            Pattern::Burst => "burst",
            Pattern::Random => "random",
            Pattern::Progressive => "progressive",
        }
    }

    fn parse(s: &str) -> Pattern {
        match s {
            "uniform" => Pattern::Uniform,
            "burst" => Pattern::Burst,
            "random" => Pattern::Random,
            "progressive" => Pattern::Progressive,
            _ => Pattern::None,
        }
    }
}

/// A validated SCP config, typed.
#[derive(Debug, Clone, PartialEq)]
pub struct ScpConfig {
    /// Number of pairs.
    pub pairs: u32,
    /// Number of sub-supervisors.
    pub supervisors: u32,
    /// Client delay per exchange, ms.
    pub delay_ms: u64,
    /// Payload size, bytes.
    pub payload_bytes: usize,
    /// Failure pattern.
    pub pattern: Pattern,
    /// Failure rate, percent.
    pub failure_rate: f64,
    /// `true` for the exchanges basis, `false` for the pairs basis.
    pub basis_exchanges: bool,
    /// Transient (restarted) children when `true`, temporary otherwise.
    pub recovery: bool,
    /// Kills per burst.
    pub burst_size: u32,
    /// Largest random burst.
    pub random_burst_max: u32,
    /// Measurement window, s.
    pub duration_s: u64,
    /// Warm-up, s.
    pub warmup_s: u64,
    /// PRNG seed.
    pub seed: u64,
    /// The injector runs on its own node, a separate OS process (`true`), or inside the
    /// measured process (`false`).
    pub injector_node: bool,
}

impl ScpConfig {
    /// The typed view of a validated `scp` config.
    pub fn from_config(c: &Config) -> ScpConfig {
        ScpConfig {
            pairs: c.int("pairs") as u32,
            supervisors: c.int("supervisors") as u32,
            delay_ms: c.int("delay_ms") as u64,
            payload_bytes: c.int("payload_bytes") as usize,
            pattern: Pattern::parse(c.str("pattern")),
            failure_rate: c.float("failure_rate"),
            basis_exchanges: c.str("failure_basis") == "exchanges",
            recovery: c.bool("recovery"),
            burst_size: c.int("burst_size") as u32,
            random_burst_max: c.int("random_burst_max") as u32,
            duration_s: c.int("duration_s") as u64,
            warmup_s: c.int("warmup_s") as u64,
            seed: c.int("seed") as u64,
            injector_node: c.str("injector") == "node",
        }
    }

    /// Pairs per sub-supervisor (the ratio "1:PPS").
    pub fn pairs_per_supervisor(&self) -> u32 {
        self.pairs / self.supervisors
    }

    /// The theoretical ceiling, exchanges per second: `pairs * 1000 / delay_ms`.
    pub fn ceiling(&self) -> f64 {
        self.pairs as f64 * 1000.0 / self.delay_ms as f64
    }

    /// Whether this run injects no faults (its ratio's baseline).
    pub fn is_baseline(&self) -> bool {
        self.pattern == Pattern::None || self.failure_rate == 0.0
    }

    /// Kills per second for the uniform, burst and random patterns (workloads.md §1).
    pub fn kill_rate(&self) -> f64 {
        if self.is_baseline() {
            0.0
        } else if self.basis_exchanges {
            self.failure_rate / 100.0 * self.ceiling()
        } else {
            self.pairs as f64 * self.failure_rate / 100.0
        }
    }
}

/// Today's word for an `injector` value recorded before the key applied to every runtime:
/// it was Troupe's alone then, `process` (the injector as its own OS process, now `node`) or
/// `thread` (inside the SUB's process, now `in_process`); the peers of such records ran their
/// injector inside the measured process whatever the key said.
pub fn recorded_value(key: &str, value: &Value) -> Option<Value> {
    match (key, value) {
        ("injector", Value::Str(s)) if s == "process" => Some(Value::Str("node".into())),
        ("injector", Value::Str(s)) if s == "thread" => Some(Value::Str("in_process".into())),
        _ => None,
    }
}

/// Canonicalises a config so runs that inject nothing compare equal: `pattern = none` and
/// `failure_rate = 0` both become `pattern = "none", failure_rate = 0`.
pub fn canonical(c: &Config) -> Config {
    let mut c = c.clone();
    if c.str("pattern") == "none" || c.float("failure_rate") == 0.0 {
        c.set_unchecked("pattern", Value::Str("none".into()));
        c.set_unchecked("failure_rate", Value::Float(0.0));
    }
    c
}

/// The same config at 0% failures, canonical: the run a point is normalised against.
pub fn baseline_of(c: &Config) -> Config {
    let mut b = c.clone();
    b.set_unchecked("failure_rate", Value::Float(0.0));
    canonical(&b)
}
