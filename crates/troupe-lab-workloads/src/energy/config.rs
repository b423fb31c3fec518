//! The energy workload's keys (workloads.md §4, seed 002 ch. 3-5) with their embedded quick
//! defaults, ranges and cross-key rules, and the typed view of a validated config.
//!
//! The defaults are a quick run: seed 002's smallest ping_pong point (50 clients x 50,000 round
//! trips), 5 repetitions; a `troupe lab compare energy --runtimes troupe,erlang,caf` finishes
//! in about a minute on a 2-core VM. The seed's sweeps are given in docs/energy.md.

use troupe_lab::config::{cross, events_issue, Config, CrossIssue, KeySpec, Schema, EVENTS, SEED};
use troupe_lab::{choice_key, float_key, int_key};

/// The four programs.
pub const WORKLOADS: &[&str] = &["prime", "ping_pong", "ping_pong_lb", "ping_pong_lb_prime"];
/// One OS process, or the servers (and the load balancer) in another.
pub const MODES: &[&str] = &["native", "distributed"];
/// Which meter source to use: the best that works, or one by name.
pub const METERS: &[&str] = &["auto", "rapl", "perf", "estimate"];

/// The most round trips one repetition may ask for (clients x msgs).
pub const MAX_ROUND_TRIPS: i64 = 1_000_000_000;

/// The energy schema.
pub static SCHEMA: Schema = Schema { workload: "energy", keys: KEYS, cross_check };

static KEYS: &[KeySpec] = &[
    choice_key!(
        "workload",
        WORKLOADS,
        "ping_pong",
        "prime (count primes <= range in one actor), ping_pong (one server), ping_pong_lb \
         (servers behind a round-robin load balancer), ping_pong_lb_prime (each pong carries \
         the count of primes <= range)"
    ),
    choice_key!(
        "mode",
        MODES,
        "native",
        "native (one OS process) or distributed (servers and load balancer, or the prime \
         actor, in a second OS process)"
    ),
    int_key!("clients", 1, 100_000, 50, "client actors (ping workloads)"),
    int_key!("msgs", 1, 100_000_000, 50_000, "round trips per client (ping workloads)"),
    int_key!("servers", 1, 10_000, 2, "server actors behind the load balancer (lb workloads)"),
    int_key!("range", 2, 1_000_000_000, 100_000, "count the primes <= range (prime; ping_pong_lb_prime per request)"),
    int_key!("reps", 1, 1_000, 5, "repetitions inside one run (one row of energy.csv each)"),
    SEED,
    int_key!("sample_ms", 5, 10_000, 50, "the lab's sampling interval (process tree CPU, RSS, RAPL counters), ms"),
    choice_key!(
        "meter",
        METERS,
        "auto",
        "auto (RAPL when it works here, else perf's power events, else the estimate), rapl or \
         perf (refused where that source does not work), estimate (CPU time x watts_per_core, \
         always labelled estimate)"
    ),
    float_key!(
        "watts_per_core",
        0.01,
        1_000.0,
        troupe_lab::meter::DEFAULT_WATTS_PER_CORE,
        "the estimate's power per busy core, W (default: AMD EPYC 9654, 360 W TDP / 96 cores)"
    ),
    EVENTS,
];

fn cross_check(c: &Config) -> Vec<CrossIssue> {
    let mut out = Vec::new();
    let t = EnergyConfig::from_config(c);
    if t.is_ping() && t.round_trips() > MAX_ROUND_TRIPS as u64 {
        out.push(cross(
            &["clients", "msgs"],
            "clients+msgs",
            format!("{} x {}", t.clients, t.msgs),
            format!("{} round trips per repetition; at most {MAX_ROUND_TRIPS}", t.round_trips()),
        ));
    }
    out.extend(events_issue(c));
    out
}

/// A validated energy config.
#[derive(Debug, Clone, PartialEq)]
pub struct EnergyConfig {
    /// `prime`, `ping_pong`, `ping_pong_lb` or `ping_pong_lb_prime`.
    pub workload: String,
    /// Servers in another OS process.
    pub distributed: bool,
    /// Client actors.
    pub clients: u64,
    /// Round trips per client.
    pub msgs: u64,
    /// Servers behind the load balancer.
    pub servers: u64,
    /// Primes up to this.
    pub range: u64,
    /// Repetitions.
    pub reps: u64,
}

impl EnergyConfig {
    /// The typed view of a validated config.
    pub fn from_config(c: &Config) -> EnergyConfig {
        EnergyConfig {
            workload: c.str("workload").to_string(),
            distributed: c.str("mode") == "distributed",
            clients: c.int("clients").max(1) as u64,
            msgs: c.int("msgs").max(1) as u64,
            servers: c.int("servers").max(1) as u64,
            range: c.int("range").max(2) as u64,
            reps: c.int("reps").max(1) as u64,
        }
    }

    /// A ping workload (not `prime`).
    pub fn is_ping(&self) -> bool {
        self.workload != "prime"
    }

    /// Round trips per repetition.
    pub fn round_trips(&self) -> u64 {
        self.clients.saturating_mul(self.msgs)
    }

    /// The seed's `Parameter` column: the program's arguments separated by spaces
    /// (`range`; `clients msgs`; `servers clients msgs`; `servers clients msgs range`).
    pub fn parameter(&self) -> String {
        match self.workload.as_str() {
            "prime" => self.range.to_string(),
            "ping_pong" => format!("{} {}", self.clients, self.msgs),
            "ping_pong_lb" => format!("{} {} {}", self.servers, self.clients, self.msgs),
            _ => format!("{} {} {} {}", self.servers, self.clients, self.msgs, self.range),
        }
    }

    /// The result every repetition must report: pongs received, or the prime count.
    pub fn expected_result(&self) -> u64 {
        if self.is_ping() {
            self.round_trips()
        } else {
            crate::energy::primes::count_sieve(self.range)
        }
    }
}
