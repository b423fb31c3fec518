//! The chat fault schedule: one injector per chat, each making its chat fail every
//! `fault_pause_ms`, drawn from one seeded ChaCha PRNG so the same config gives the same
//! `schedule.jsonl` byte for byte (events.md, "The fault schedule").
//!
//! Rules:
//! 1. `msg_type = none` plans nothing.
//! 2. Chat c's faults are at `phase_c + k * fault_pause_ms` for k = 0, 1, ... while inside the
//!    window `[0, test_duration_secs * 1000)`. With `fault_phase = random`, `phase_c` is drawn
//!    uniformly from `[0, fault_pause_ms)` per chat in chat order (so chats do not all fail at
//!    once); with `aligned`, `phase_c = fault_pause_ms` for every chat (seed 000's injectors all
//!    start with their chats: the first fault one pause after the start). A phase is clipped to
//!    the window.
//! 3. The kind follows `msg_type`: `kill`, `error`, `cpu` (cpu_intensive), `ram`
//!    (ram_intensive); `random` draws `kill` or `error` with probability 1/2 per action, in
//!    time order after all phases are drawn.
//! 4. `group` is the chat index, `slot` is 0 (a chat has one server), `restart` is true.
//! 5. Actions are sorted by (`at_ms`, chat); ids are `f-<index>` in that order.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::config::{ChatConfig, MsgType};
use troupe_lab::schedule::FaultAction;

/// Computes the chat fault schedule for a config (rules 1-5).
pub fn chat_schedule(cfg: &ChatConfig) -> Vec<FaultAction> {
    if cfg.msg_type == MsgType::None {
        return Vec::new();
    }
    let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed);
    let window_ms = cfg.duration_s * 1000;
    let pause = cfg.fault_pause_ms;
    let mut times: Vec<(u64, u32)> = Vec::new();
    for chat in 0..cfg.total_chats() as u32 {
        let phase = if cfg.random_phase { rng.gen_range(0..pause) } else { pause };
        let mut at = phase;
        while at < window_ms {
            times.push((at, chat));
            at += pause;
        }
    }
    times.sort_unstable();
    times
        .into_iter()
        .enumerate()
        .map(|(i, (at_ms, chat))| FaultAction {
            at_ms,
            id: format!("f-{i}"),
            kind: match cfg.msg_type {
                MsgType::Kill => "kill",
                MsgType::Error => "error",
                MsgType::Cpu => "cpu",
                MsgType::Ram => "ram",
                MsgType::Random if rng.gen_bool(0.5) => "kill",
                _ => "error",
            }
            .into(),
            group: chat,
            slot: 0,
            restart: true,
            ..FaultAction::default()
        })
        .collect()
}
