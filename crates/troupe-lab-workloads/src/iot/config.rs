//! The iot workload's keys (workloads.md §3, the iot peer contract in docs/iot.md) with their
//! embedded defaults, ranges and cross-key rules, and the typed view of a validated config.

use troupe_lab::config::{cross, Config, CrossIssue, KeySpec, Schema, SEED, WARMUP};
use troupe_lab::{float_key, int_key};

/// The most kills one schedule may hold (keeps schedules bounded in memory and on disk).
pub const MAX_KILLS: u64 = 2_000_000;

/// The iot schema.
pub static SCHEMA: Schema = Schema { workload: "iot", keys: KEYS, cross_check };

static KEYS: &[KeySpec] = &[
    int_key!("servers", 1, 16, 1, "server OS processes (cluster members; a ring over the live ones owns the devices)"),
    int_key!("device_processes", 1, 32, 3, "device OS processes; device k lives in process k % device_processes"),
    int_key!("devices", 1, 100_000, 300, "devices in all, named device-0 .. device-(devices-1)"),
    int_key!("duration_s", 1, 86_400, 20, "length of the measurement window, s"),
    WARMUP,
    int_key!("report_len", 1, 1_000_000, 1000, "a report is the i64 values 1..=report_len; the owner sums it"),
    int_key!("report_timeout_ms", 1, 600_000, 1000, "a report not received within this is asked for again, ms"),
    int_key!("heartbeat_ms", 10, 60_000, 500, "heartbeat period between a device and its owner (both ways), ms"),
    float_key!("phi_threshold", 1.0, 100.0, 8.0, "phi above which a device or an owner is declared failed"),
    float_key!(
        "drop_probability",
        0.0,
        0.9,
        0.0,
        "probability that a device<->server message is dropped (applied in the device processes)"
    ),
    int_key!("delay_min_ms", 0, 60_000, 0, "smallest delay added to each device<->server message, ms"),
    int_key!("delay_max_ms", 0, 60_000, 0, "largest delay added to each device<->server message, ms (uniform)"),
    int_key!("client_mttf_s", 0, 86_400, 0, "device mean time to failure, s (0: no device kills)"),
    int_key!("server_mttf_s", 0, 86_400, 0, "server mean time to failure, s (0: no server kills)"),
    int_key!("restart_s", 0, 3_600, 5, "a killed device or server starts again this long after, s"),
    SEED,
];

fn cross_check(c: &Config) -> Vec<CrossIssue> {
    let mut out = Vec::new();
    let t = IotConfig::from_config(c);
    if t.delay_min_ms > t.delay_max_ms {
        out.push(cross(
            &["delay_min_ms", "delay_max_ms"],
            "delay_min_ms",
            t.delay_min_ms,
            format!("is above delay_max_ms = {}; set delay_max_ms at least as large", t.delay_max_ms),
        ));
    }
    if t.devices < u64::from(t.device_processes) {
        out.push(cross(
            &["devices", "device_processes"],
            "device_processes",
            t.device_processes,
            format!("is more than devices = {}; every device process needs a device", t.devices),
        ));
    }
    let kills = t.planned_kills_bound();
    if kills > MAX_KILLS {
        out.push(cross(
            &["devices", "servers", "client_mttf_s", "server_mttf_s", "duration_s"],
            "client_mttf_s",
            t.client_mttf_s,
            format!("gives up to {kills} kills in the window; at most {MAX_KILLS} are supported (raise the MTTF)"),
        ));
    }
    out
}

/// A validated iot config, typed.
#[derive(Debug, Clone, PartialEq)]
pub struct IotConfig {
    /// Server processes.
    pub servers: u32,
    /// Device processes.
    pub device_processes: u32,
    /// Devices in all.
    pub devices: u64,
    /// Measurement window, s.
    pub duration_s: u64,
    /// Warm-up, s.
    pub warmup_s: u64,
    /// Values per report.
    pub report_len: u64,
    /// Re-ask after, ms.
    pub report_timeout_ms: u64,
    /// Heartbeat period, ms.
    pub heartbeat_ms: u64,
    /// Phi threshold.
    pub phi_threshold: f64,
    /// Message drop probability.
    pub drop_probability: f64,
    /// Smallest added delay, ms.
    pub delay_min_ms: u64,
    /// Largest added delay, ms.
    pub delay_max_ms: u64,
    /// Device MTTF, s (0: none).
    pub client_mttf_s: u64,
    /// Server MTTF, s (0: none).
    pub server_mttf_s: u64,
    /// Restart delay, s.
    pub restart_s: u64,
    /// PRNG seed.
    pub seed: u64,
}

impl IotConfig {
    /// The typed view of a validated `iot` config.
    pub fn from_config(c: &Config) -> IotConfig {
        IotConfig {
            servers: c.int("servers") as u32,
            device_processes: c.int("device_processes") as u32,
            devices: c.int("devices") as u64,
            duration_s: c.int("duration_s") as u64,
            warmup_s: c.int("warmup_s") as u64,
            report_len: c.int("report_len") as u64,
            report_timeout_ms: c.int("report_timeout_ms") as u64,
            heartbeat_ms: c.int("heartbeat_ms") as u64,
            phi_threshold: c.float("phi_threshold"),
            drop_probability: c.float("drop_probability"),
            delay_min_ms: c.int("delay_min_ms") as u64,
            delay_max_ms: c.int("delay_max_ms") as u64,
            client_mttf_s: c.int("client_mttf_s") as u64,
            server_mttf_s: c.int("server_mttf_s") as u64,
            restart_s: c.int("restart_s") as u64,
            seed: c.int("seed") as u64,
        }
    }

    /// The devices of device process `p`: k with k % device_processes == p.
    pub fn devices_of(&self, p: u32) -> impl Iterator<Item = u64> + '_ {
        (u64::from(p)..self.devices).step_by(self.device_processes as usize)
    }

    /// An upper bound of the kills a schedule can hold (each life is at least a quarter MTTF).
    pub fn planned_kills_bound(&self) -> u64 {
        let window_ms = self.duration_s * 1000;
        let per = |mttf_s: u64| if mttf_s == 0 { 0 } else { window_ms / (mttf_s * 250).max(1) + 1 };
        self.devices * per(self.client_mttf_s) + u64::from(self.servers) * per(self.server_mttf_s)
    }
}
