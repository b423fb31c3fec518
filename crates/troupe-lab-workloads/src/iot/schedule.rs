//! The iot fault schedule (the iot peer contract, "Schedule"): device and server lifetimes
//! drawn from one seeded ChaCha PRNG, so the same config gives the same `schedule.jsonl` byte
//! for byte and every runtime gets the same kills.
//!
//! Rules:
//! 1. With `client_mttf_s = 0` no device is killed; with `server_mttf_s = 0` no server is.
//! 2. Each target lives a time drawn uniformly from `[0.25, 1.75] x MTTF` (whole ms, rounded),
//!    counted from the window start, is killed, restarts `restart_s` later, lives again, and so
//!    on; kills at or after the window's end are not planned.
//! 3. Draw order: devices 0..devices, each to the end of the window, then servers 0..servers.
//! 4. A device kill is `kind: "kill"`, `group: k`; a server kill is `kind: "node_kill"`,
//!    `group: s`; `slot` is 0 and `restart` true.
//! 5. Actions are sorted by (`at_ms`, kind, group); ids are `f-<index>` in that order.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::config::IotConfig;
use troupe_lab::schedule::FaultAction;

/// Kind of a device kill.
pub const KILL: &str = "kill";
/// Kind of a server kill.
pub const NODE_KILL: &str = "node_kill";

fn lives(rng: &mut ChaCha8Rng, mttf_s: u64, restart_ms: u64, window_ms: u64, out: &mut Vec<u64>) {
    if mttf_s == 0 {
        return;
    }
    let mttf_ms = (mttf_s * 1000) as f64;
    let mut born = 0u64;
    loop {
        let life = (rng.gen_range(0.25..=1.75) * mttf_ms).round() as u64;
        let at = born + life.max(1);
        if at >= window_ms {
            return;
        }
        out.push(at);
        born = at + restart_ms;
    }
}

/// Computes the iot schedule for a config (rules 1-5).
pub fn iot_schedule(cfg: &IotConfig) -> Vec<FaultAction> {
    let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed);
    let window_ms = cfg.duration_s * 1000;
    let restart_ms = cfg.restart_s * 1000;
    let mut all: Vec<(u64, &'static str, u32)> = Vec::new();
    let mut at = Vec::new();
    for k in 0..cfg.devices {
        at.clear();
        lives(&mut rng, cfg.client_mttf_s, restart_ms, window_ms, &mut at);
        all.extend(at.iter().map(|&t| (t, KILL, k as u32)));
    }
    for s in 0..cfg.servers {
        at.clear();
        lives(&mut rng, cfg.server_mttf_s, restart_ms, window_ms, &mut at);
        all.extend(at.iter().map(|&t| (t, NODE_KILL, s)));
    }
    all.sort_unstable();
    all.into_iter()
        .enumerate()
        .map(|(i, (at_ms, kind, group))| FaultAction {
            at_ms,
            id: format!("f-{i}"),
            kind: kind.into(),
            group,
            slot: 0,
            restart: true,
            ..FaultAction::default()
        })
        .collect()
}
