//! The SCP fault schedule: a pure function of (config, seed) drawing from one seeded ChaCha PRNG, so
//! the same config gives the same `schedule.jsonl` byte for byte and every runtime in a
//! comparison suffers the same faults at the same offsets (events.md, "The fault schedule").
//!
//! Rules (workloads.md §1):
//! 1. Kill rate r (kills/s) = `failure_rate/100 * pairs * 1000/delay_ms` (basis `exchanges`)
//!    or `pairs * failure_rate/100` (basis `pairs`); a window of D s holds N = round(r*D) kills,
//!    all with `at_ms` in `0..D*1000`.
//! 2. uniform: kill i at `floor(i*1000/r)`.
//! 3. burst: kills grouped `burst_size` at a time (the last burst takes the remainder); burst b
//!    at `floor(b*burst_size*1000/r)`, every kill of a burst at the same `at_ms`.
//! 4. random: events of size 1 (probability 1/2) or 2..=`random_burst_max` (uniform), until
//!    N kills (the last clipped), placed at uniformly random times in the window, in time order.
//! 5. progressive: every 5 s from 5000 ms on, round(pairs * failure_rate/100) (at least 1) of
//!    the ORIGINAL pairs, `restart: false`, each pair at most once, until none is left or the
//!    window ends.
//! 6. Targets: the group is taken round-robin over the supervisors in kill order, the slot is
//!    uniformly random in the group (progressive: among the group's still-live slots, skipping
//!    groups with none left). Ids are `f-<index>` in time order.
//! 7. No two kills of one instant hit the same server: when the slot drawn for a kill is already
//!    a target of another kill at the same `at_ms` in the same group, the kill takes the next
//!    slot up (cyclically) that is not, drawing nothing more from the PRNG, so a schedule without
//!    such a clash is what rules 1-6 alone give. Two kills of one server microseconds apart
//!    would be one kill and one no-op on a server already down, and its one restart would leave
//!    the other kill "never restarted" (a false `degraded`). Only when an instant holds more
//!    kills for a group than the group has slots do slots repeat (every slot is taken once
//!    before any is taken twice).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::config::{Pattern, ScpConfig};
use troupe_lab::schedule::FaultAction;

/// The interval between progressive steps, ms (seed 001 §4.1).
pub const PROGRESSIVE_STEP_MS: u64 = 5_000;

/// Computes the SCP fault schedule for a config (rules 1-6).
pub fn scp_schedule(cfg: &ScpConfig) -> Vec<FaultAction> {
    let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed);
    let window_ms = cfg.duration_s * 1000;
    let (times, restart): (Vec<u64>, bool) = match cfg.pattern {
        _ if cfg.is_baseline() => (Vec::new(), true),
        Pattern::None => (Vec::new(), true),
        Pattern::Uniform => {
            let r = cfg.kill_rate();
            let n = total_kills(r, cfg.duration_s);
            ((0..n).map(|i| at(i as f64, r, window_ms)).collect(), true)
        }
        Pattern::Burst => {
            let r = cfg.kill_rate();
            let n = total_kills(r, cfg.duration_s);
            let bs = u64::from(cfg.burst_size);
            ((0..n).map(|i| at((i / bs * bs) as f64, r, window_ms)).collect(), true)
        }
        Pattern::Random => (random_times(cfg, &mut rng, window_ms), true),
        Pattern::Progressive => return progressive(cfg, &mut rng, window_ms),
    };
    let pps = cfg.pairs_per_supervisor();
    let mut taken = InstantTargets::default();
    times
        .into_iter()
        .enumerate()
        .map(|(i, at_ms)| {
            let group = (i as u64 % u64::from(cfg.supervisors)) as u32;
            let drawn = rng.gen_range(0..pps);
            FaultAction {
                at_ms,
                id: format!("f-{i}"),
                kind: "kill".into(),
                group,
                slot: taken.claim(at_ms, group, drawn, pps),
                restart,
                ..FaultAction::default()
            }
        })
        .collect()
}

/// The servers already targeted at the current instant (rule 7); times arrive in order.
#[derive(Default)]
struct InstantTargets {
    at_ms: Option<u64>,
    taken: std::collections::HashMap<u32, Vec<bool>>,
}

impl InstantTargets {
    /// The slot a kill at `at_ms` in `group` hits, given the slot it drew: that slot if no other
    /// kill of this instant hits it, else the next free one up, cyclically.
    fn claim(&mut self, at_ms: u64, group: u32, drawn: u32, pps: u32) -> u32 {
        if self.at_ms != Some(at_ms) {
            self.at_ms = Some(at_ms);
            self.taken.clear();
        }
        let used = self.taken.entry(group).or_insert_with(|| vec![false; pps as usize]);
        if used.iter().all(|&u| u) {
            used.iter_mut().for_each(|u| *u = false);
        }
        let slot = (0..pps).map(|k| (drawn + k) % pps).find(|&s| !used[s as usize]).unwrap_or(drawn);
        used[slot as usize] = true;
        slot
    }
}

fn total_kills(rate: f64, duration_s: u64) -> u64 {
    (rate * duration_s as f64).round() as u64
}

/// Offset of kill index `i` at `rate` kills/s, clamped into the window.
fn at(i: f64, rate: f64, window_ms: u64) -> u64 {
    ((i * 1000.0 / rate).floor() as u64).min(window_ms.saturating_sub(1))
}

fn random_times(cfg: &ScpConfig, rng: &mut ChaCha8Rng, window_ms: u64) -> Vec<u64> {
    let n = total_kills(cfg.kill_rate(), cfg.duration_s);
    let max = u64::from(cfg.random_burst_max);
    let mut sizes = Vec::new();
    let mut total = 0u64;
    while total < n {
        let size = if max < 2 || rng.gen_bool(0.5) { 1 } else { rng.gen_range(2..=max) };
        let size = size.min(n - total);
        sizes.push(size);
        total += size;
    }
    let mut starts: Vec<u64> = sizes.iter().map(|_| rng.gen_range(0..window_ms)).collect();
    starts.sort_unstable();
    starts.iter().zip(&sizes).flat_map(|(&t, &s)| std::iter::repeat_n(t, s as usize)).collect()
}

fn progressive(cfg: &ScpConfig, rng: &mut ChaCha8Rng, window_ms: u64) -> Vec<FaultAction> {
    let per_step = ((f64::from(cfg.pairs) * cfg.failure_rate / 100.0).round() as u64).max(1);
    let pps = cfg.pairs_per_supervisor();
    let mut live: Vec<Vec<u32>> = (0..cfg.supervisors).map(|_| (0..pps).collect()).collect();
    let mut remaining = u64::from(cfg.pairs);
    let mut group_cursor = 0usize;
    let mut out = Vec::new();
    let mut at_ms = PROGRESSIVE_STEP_MS;
    while at_ms < window_ms && remaining > 0 {
        for _ in 0..per_step.min(remaining) {
            while live[group_cursor].is_empty() {
                group_cursor = (group_cursor + 1) % live.len();
            }
            let slots = &mut live[group_cursor];
            let slot = slots.swap_remove(rng.gen_range(0..slots.len()));
            out.push(FaultAction {
                at_ms,
                id: format!("f-{}", out.len()),
                kind: "kill".into(),
                group: group_cursor as u32,
                slot,
                restart: false,
                ..FaultAction::default()
            });
            remaining -= 1;
            group_cursor = (group_cursor + 1) % live.len();
        }
        at_ms += PROGRESSIVE_STEP_MS;
    }
    out
}
