//! The chat workload's keys (workloads.md §2, seed 000 table 4.1) with their embedded defaults,
//! ranges and cross-key rules, and the typed view of a validated chat config.

use troupe_lab::config::{cross, events_issue, Config, CrossIssue, KeySpec, Schema, EVENTS, SEED, WARMUP};
use troupe_lab::{choice_key, int_key};

/// What a run measures (seed 000 §4.2.1).
pub const TEST_TYPES: &[&str] = &["throughput", "reconnection_time", "detection_time"];
/// How the injector makes a chat fail.
pub const MSG_TYPES: &[&str] = &["error", "kill", "cpu_intensive", "ram_intensive", "random", "none"];
/// One process, or discovery, server groups and client groups as separate OS processes.
pub const DEPLOYMENTS: &[&str] = &["distributed", "single"];
/// When each chat's injector first fires: a seeded phase in `[0, fault_pause_ms)` per chat, or
/// every chat at `fault_pause_ms` (all at once).
pub const FAULT_PHASES: &[&str] = &["random", "aligned"];
/// What discovery does with a lookup for a topic that has no live chat (docs/chat.md,
/// "Behaviour contract"): answer "not registered" at once (the client retries after
/// `retry_delay_ms`), or hold it until the chat registers again.
pub const LOOKUPS: &[&str] = &["retry", "park"];

const MAX_CLIENTS: i64 = 1_000_000;
/// The most fault actions one schedule may hold (keeps schedules bounded in memory and on disk).
const MAX_FAULTS: i64 = 2_000_000;

/// The chat schema.
pub static SCHEMA: Schema = Schema { workload: "chat", keys: KEYS, cross_check };

static KEYS: &[KeySpec] = &[
    choice_key!(
        "test_type",
        TEST_TYPES,
        "throughput",
        "throughput (messages received by clients per second), reconnection_time or detection_time \
         (clients send no chat messages in the last two)"
    ),
    int_key!(
        "num_supervisor",
        1,
        10_000,
        1,
        "one_for_one supervisors; each is a server group (its own OS process when distributed)"
    ),
    int_key!("chats_per_sup", 1, 100_000, 256, "chats owned by each supervisor"),
    int_key!("clients_per_server", 1, MAX_CLIENTS, 5, "clients of each chat"),
    int_key!("fault_pause_ms", 1, 3_600_000, 5000, "each chat's injector makes it fail every fault_pause_ms"),
    choice_key!(
        "msg_type",
        MSG_TYPES,
        "error",
        "error (poison message, the chat crashes), kill (brutal), cpu_intensive / ram_intensive \
         (the chat computes stress_ms / touches stress_mb in its handler; no crash), random \
         (seeded mix of error and kill), none"
    ),
    int_key!("test_duration_secs", 1, 86_400, 60, "length of the measurement window, s"),
    WARMUP,
    int_key!(
        "send_interval_ms",
        1,
        3_600_000,
        200,
        "each client sends one chat message every send_interval_ms (throughput test)"
    ),
    int_key!(
        "retry_delay_ms",
        1,
        60_000,
        10,
        "fixed delay between a client's attempts to re-resolve and rejoin its chat (no backoff)"
    ),
    int_key!("retry_max", 1, 100_000, 500, "attempts before a client gives up on its chat (counted as an error)"),
    choice_key!(
        "lookup",
        LOOKUPS,
        "retry",
        "a lookup for a chat that is restarting: retry (discovery answers \"not registered\" at once and the \
         client retries after retry_delay_ms, as in seed 000) or park (discovery holds it and answers when the \
         chat registers again, or \"not registered\" after retry_delay_ms)"
    ),
    int_key!("stress_ms", 1, 60_000, 100, "cpu_intensive: how long the chat computes inside its handler, ms"),
    int_key!("stress_mb", 1, 4_096, 64, "ram_intensive: how much the chat allocates and touches, then frees, MiB"),
    choice_key!(
        "deployment",
        DEPLOYMENTS,
        "distributed",
        "distributed: discovery, each server group and each client group is its own OS process \
         (a node on loopback); single: one process, for quick runs"
    ),
    int_key!(
        "clients_per_process",
        1,
        MAX_CLIENTS,
        10_000,
        "distributed: the most clients one client-group process holds"
    ),
    choice_key!(
        "fault_phase",
        FAULT_PHASES,
        "random",
        "random: each chat's first fault at a seeded offset in [0, fault_pause_ms); aligned: \
         every chat fails at the same instants"
    ),
    EVENTS,
    SEED,
];

fn cross_check(c: &Config) -> Vec<CrossIssue> {
    let mut out = Vec::new();
    let typed = ChatConfig::from_config(c);
    let clients = typed.total_clients();
    if clients > MAX_CLIENTS as u64 {
        out.push(cross(
            &["num_supervisor", "chats_per_sup", "clients_per_server"],
            "clients_per_server",
            typed.clients_per_server,
            format!(
                "num_supervisor x chats_per_sup x clients_per_server = {clients} clients; at most {MAX_CLIENTS} \
                 are supported"
            ),
        ));
    }
    let faults = typed.planned_faults();
    if faults > MAX_FAULTS as u64 {
        out.push(cross(
            &["num_supervisor", "chats_per_sup", "fault_pause_ms", "test_duration_secs", "msg_type"],
            "fault_pause_ms",
            typed.fault_pause_ms,
            format!("gives {faults} faults in the window; at most {MAX_FAULTS} are supported (raise fault_pause_ms)"),
        ));
    }
    out.extend(events_issue(c));
    out
}

/// How the injector makes a chat fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MsgType {
    /// A poison message: the chat's handler panics.
    Error,
    /// A brutal kill.
    Kill,
    /// A long computation inside the chat's handler.
    Cpu,
    /// A large allocation inside the chat's handler.
    Ram,
    /// A seeded mix of error and kill.
    Random,
    /// No faults.
    None,
}

impl MsgType {
    fn parse(s: &str) -> MsgType {
        match s {
            "error" => MsgType::Error,
            "kill" => MsgType::Kill,
            "cpu_intensive" => MsgType::Cpu,
            "ram_intensive" => MsgType::Ram,
            "random" => MsgType::Random,
            _ => MsgType::None,
        }
    }

    /// Whether a fault of this type takes the chat down (and so is detected and reconnected).
    pub fn crashes(self) -> bool {
        matches!(self, MsgType::Error | MsgType::Kill | MsgType::Random)
    }
}

/// What discovery does with a lookup for a topic with no live chat.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup {
    /// Answer "not registered" at once; the client retries after `retry_delay_ms`.
    Retry,
    /// Hold the lookup until the chat registers again, at most `retry_delay_ms`.
    Park,
}

impl Lookup {
    /// The key's word.
    pub fn word(self) -> &'static str {
        match self {
            Lookup::Retry => "retry",
            Lookup::Park => "park",
        }
    }
}

/// What a run measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TestType {
    /// Messages received by clients per second.
    Throughput,
    /// Time from a client's detection of a failure to its rejoin.
    Reconnection,
    /// Time from the injected fault to each client's detection.
    Detection,
}

/// A validated chat config, typed.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatConfig {
    /// What the run measures.
    pub test_type: TestType,
    /// Supervisors (server groups).
    pub num_supervisor: u32,
    /// Chats per supervisor.
    pub chats_per_sup: u32,
    /// Clients per chat.
    pub clients_per_server: u32,
    /// Pause between two faults of one chat, ms.
    pub fault_pause_ms: u64,
    /// How chats fail.
    pub msg_type: MsgType,
    /// The `msg_type` word as configured.
    pub msg_type_word: String,
    /// Measurement window, s.
    pub duration_s: u64,
    /// Warm-up, s.
    pub warmup_s: u64,
    /// Client send interval, ms.
    pub send_interval_ms: u64,
    /// Delay between rejoin attempts, ms.
    pub retry_delay_ms: u64,
    /// Rejoin attempts before giving up.
    pub retry_max: u32,
    /// What discovery does with a lookup for a restarting chat.
    pub lookup: Lookup,
    /// cpu_intensive computation, ms.
    pub stress_ms: u64,
    /// ram_intensive allocation, MiB.
    pub stress_mb: u64,
    /// Separate OS processes (`true`) or one.
    pub distributed: bool,
    /// Clients per client-group process.
    pub clients_per_process: u32,
    /// Per-chat seeded phase (`true`) or aligned faults.
    pub random_phase: bool,
    /// `file` or an `amqp://` URL.
    pub events: String,
    /// PRNG seed.
    pub seed: u64,
}

impl ChatConfig {
    /// The typed view of a validated `chat` config.
    pub fn from_config(c: &Config) -> ChatConfig {
        ChatConfig {
            test_type: match c.str("test_type") {
                "reconnection_time" => TestType::Reconnection,
                "detection_time" => TestType::Detection,
                _ => TestType::Throughput,
            },
            num_supervisor: c.int("num_supervisor") as u32,
            chats_per_sup: c.int("chats_per_sup") as u32,
            clients_per_server: c.int("clients_per_server") as u32,
            fault_pause_ms: c.int("fault_pause_ms") as u64,
            msg_type: MsgType::parse(c.str("msg_type")),
            msg_type_word: c.str("msg_type").to_string(),
            duration_s: c.int("test_duration_secs") as u64,
            warmup_s: c.int("warmup_s") as u64,
            send_interval_ms: c.int("send_interval_ms") as u64,
            retry_delay_ms: c.int("retry_delay_ms") as u64,
            retry_max: c.int("retry_max") as u32,
            lookup: if c.str("lookup") == "park" { Lookup::Park } else { Lookup::Retry },
            stress_ms: c.int("stress_ms") as u64,
            stress_mb: c.int("stress_mb") as u64,
            distributed: c.str("deployment") == "distributed",
            clients_per_process: c.int("clients_per_process") as u32,
            random_phase: c.str("fault_phase") == "random",
            events: c.str("events").to_string(),
            seed: c.int("seed") as u64,
        }
    }

    /// Chats in the system.
    pub fn total_chats(&self) -> u64 {
        u64::from(self.num_supervisor) * u64::from(self.chats_per_sup)
    }

    /// Clients in the system.
    pub fn total_clients(&self) -> u64 {
        self.total_chats() * u64::from(self.clients_per_server)
    }

    /// Whether clients send chat messages (throughput test only, seed 000 §4.2.1).
    pub fn clients_send(&self) -> bool {
        self.test_type == TestType::Throughput
    }

    /// Faults the schedule holds (an upper bound before phases are drawn).
    pub fn planned_faults(&self) -> u64 {
        if self.msg_type == MsgType::None {
            return 0;
        }
        self.total_chats() * (self.duration_s * 1000).div_ceil(self.fault_pause_ms)
    }

    /// The theoretical ceiling, messages received by clients per second:
    /// chats x clients x clients x 1000 / send_interval_ms (0 when clients do not send).
    pub fn ceiling(&self) -> f64 {
        if !self.clients_send() {
            return 0.0;
        }
        let per_chat = f64::from(self.clients_per_server) * f64::from(self.clients_per_server);
        self.total_chats() as f64 * per_chat * 1000.0 / self.send_interval_ms as f64
    }

    /// The client-group processes of the distributed mode: (first client index, count) each.
    pub fn client_groups(&self) -> Vec<(u64, u64)> {
        let total = self.total_clients();
        let per = u64::from(self.clients_per_process.max(1));
        (0..total.div_ceil(per)).map(|g| (g * per, per.min(total - g * per))).collect()
    }
}
