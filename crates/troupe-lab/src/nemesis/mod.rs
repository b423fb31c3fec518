//! The nemesis (issue "Nothing lost"): scheduled, seeded mixes of faults applied to a run's node
//! processes, for the workloads whose histories a checker reads ([`crate::history`]). The core
//! owns the keys, their validation, the schedule (a pure function of the config, written into
//! `schedule.jsonl` like every fault) and the process half of carrying it out ([`procs`]); the
//! network half is the `[net_faults]` machinery's ([`crate::netfaults`], [`crate::netlayer`]).
//!
//! Rules:
//! 1. Keys (a workload that takes the nemesis lists [`KEYS`] in its schema): `nemesis`, a
//!    comma-separated list of kinds from [`KINDS`] (empty, the default: no nemesis), and
//!    `nemesis_interval_ms`, the time between the starts of two faults. A kind the workload does
//!    not carry out, a repeated or unknown kind, and `clock` are refused naming the key
//!    ([`cross_check`]): `clock` because no runtime here has a clock source the lab can skew
//!    (Troupe reads the OS monotonic clock directly; a skewed clock would have to come from the
//!    runtime, and faking it from outside would be a different fault).
//! 2. Schedule ([`schedule`]): fault k (k = 0, 1, ...) starts at `(k + 1) x interval` from the
//!    window start and lasts half an interval, while it ends no later than one interval before
//!    the window's end, so the last fault is healed before the final reads. The kinds take
//!    turns in the order given; every random choice (which node, which side) comes from one
//!    PRNG seeded by the config's seed, so every runtime in a comparison meets the same faults.
//! 3. Lines: `partition` cuts a side from the other nodes, taking Jepsen's three shapes in
//!    turn: `halves` (a random half of the nodes, rounded down), `majority` (a random minority:
//!    at most (n-1)/2 nodes) and, with 3 nodes or more, `bridge` (one random node stays
//!    connected to everyone; the others split in two halves that cannot reach each other; the
//!    side is the smaller half). For 3 nodes the first two cut one node off, the bridge cuts
//!    two nodes from each other only. The lines are `partition` lines of the network schema
//!    ([`crate::netfaults`] rule 4: one per node of the side, ids `nem-part-K-N`; a bridge's
//!    lines carry `bridge: [node]`), carried out by the run's network layer.
//!    `loss` is a `drop` line (`nem-loss-K`, [`LOSS_PCT`] % of the packets between the nodes)
//!    with a `duration_ms`, removed when it ends. `kill` is a `kill` line (`nem-kill-K`, group =
//!    the node, `restart: true`, `duration_ms` = how long the node stays dead before it is
//!    started again); `pause` a `pause` line (`nem-pause-K`, SIGSTOP, then SIGCONT after
//!    `duration_ms`). The workload's orchestrator carries out kills and pauses ([`procs`]).
//! 4. A network kind (`partition`, `loss`) needs the network-fault machinery: without a
//!    `[net_faults]` section the config gets an empty one (no loss, no delay, no partitions,
//!    the default `network` layer), recorded in the config like a written one; the layer's
//!    refusals then apply as for any network fault.
//! 5. Counted: every line planned and not carried out (no `fault_injected` with its id) is a
//!    degradation of the run ([`missed`]); a fault that was started and never healed (a node
//!    not restarted, a process not continued) is one too, and so is every `nemesis_error` event
//!    ([`procs`] rule 2).

pub mod procs;

use std::collections::BTreeSet;

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::config::{cross, Config, CrossIssue, KeySpec};
use crate::events::Event;
use crate::schedule::FaultAction;

/// The nemesis kinds (rule 1).
pub const KINDS: &[&str] = &["partition", "kill", "pause", "loss", "clock"];
/// The kinds carried out by the network layer (rule 4).
pub const NET_KINDS: &[&str] = &["partition", "loss"];
/// The percentage of packets a `loss` fault drops (rule 3).
pub const LOSS_PCT: f64 = 25.0;

/// The `nemesis` key (rule 1).
pub const NEMESIS: KeySpec = crate::text_key!(
    "nemesis",
    "",
    "faults applied in turn during the run: a comma-separated list of partition, kill, pause, loss \
     (empty: none); see the lab guide, \"Nemesis runs\""
);
/// The `nemesis_interval_ms` key (rule 1).
pub const NEMESIS_INTERVAL_MS: KeySpec = crate::int_key!(
    "nemesis_interval_ms",
    200,
    600_000,
    2_000,
    "time between the starts of two nemesis faults, ms; each lasts half of it"
);
/// Both keys, for a workload's schema.
pub const KEYS: [KeySpec; 2] = [NEMESIS, NEMESIS_INTERVAL_MS];

/// The nemesis of a config: its kinds in order and the interval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Nemesis {
    /// The kinds, in the order given.
    pub kinds: Vec<String>,
    /// Time between two faults' starts, ms.
    pub interval_ms: u64,
}

impl Nemesis {
    /// The nemesis of a validated config (`None` when `nemesis` is empty or the workload has no
    /// such key).
    pub fn of(cfg: &Config) -> Option<Nemesis> {
        let text = match cfg.get(NEMESIS.name) {
            Some(crate::config::Value::Str(s)) => s.clone(),
            _ => return None,
        };
        let kinds = split(&text);
        (!kinds.is_empty()).then(|| Nemesis { kinds, interval_ms: cfg.int(NEMESIS_INTERVAL_MS.name).max(1) as u64 })
    }

    /// Whether a kind the network layer carries out is among the kinds (rule 4).
    pub fn needs_network(&self) -> bool {
        self.kinds.iter().any(|k| NET_KINDS.contains(&k.as_str()))
    }

    /// Whether `kind` is among the kinds.
    pub fn has(&self, kind: &str) -> bool {
        self.kinds.iter().any(|k| k == kind)
    }
}

fn split(text: &str) -> Vec<String> {
    text.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_string).collect()
}

/// Rule 1 for a workload's cross-key rules: the issues of the `nemesis` value, given the kinds
/// the workload carries out.
pub fn cross_check(c: &Config, supported: &[&str]) -> Vec<CrossIssue> {
    let text = c.str(NEMESIS.name).to_string();
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    for k in split(&text) {
        let why = if k == "clock" {
            Some(
                "refused: no runtime here has a clock source the lab can skew (Troupe reads the OS monotonic clock \
                 directly), so a clock fault cannot be applied equally; leave clock out"
                    .to_string(),
            )
        } else if !KINDS.contains(&k.as_str()) {
            Some(format!("unknown kind {k:?}; allowed: partition, kill, pause, loss (comma-separated)"))
        } else if !supported.contains(&k.as_str()) {
            Some(format!(
                "kind {k:?} is not carried out by workload {}; it takes: {}",
                c.workload(),
                supported.join(", ")
            ))
        } else if !seen.insert(k.clone()) {
            Some(format!("kind {k:?} is given twice; give each kind once"))
        } else {
            None
        };
        if let Some(why) = why {
            out.push(cross(&["nemesis"], "nemesis", format!("{text:?}"), why));
        }
    }
    out
}

/// The nemesis lines of a config for `nodes` node processes and a window of `window_ms` (rules
/// 2-3); empty without a nemesis.
///
/// ```
/// use troupe_lab::nemesis::{lines, Nemesis};
/// let n = Nemesis { kinds: vec!["kill".into(), "partition".into()], interval_ms: 1000 };
/// let l = lines(&n, 3, 5_000, 7);
/// assert_eq!(l[0].kind, "kill");
/// assert_eq!((l[0].at_ms, l[0].duration_ms), (1000, Some(500)));
/// assert_eq!(l[1].kind, "partition");
/// assert!(l.iter().all(|a| a.at_ms + a.duration_ms.unwrap() <= 4_000));
/// ```
pub fn lines(n: &Nemesis, nodes: u32, window_ms: u64, seed: u64) -> Vec<FaultAction> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x6e65_6d65_7369_7321);
    let mut out = Vec::new();
    let half = (n.interval_ms / 2).max(1);
    let mut partitions = 0u64;
    for k in 0u64.. {
        let at_ms = (k + 1) * n.interval_ms;
        if n.kinds.is_empty() || nodes == 0 || at_ms + half + n.interval_ms > window_ms {
            break;
        }
        let kind = n.kinds[(k % n.kinds.len() as u64) as usize].as_str();
        let base = FaultAction { at_ms, duration_ms: Some(half), restart: true, ..Default::default() };
        match kind {
            "partition" => {
                let mut all: Vec<u32> = (0..nodes).collect();
                all.shuffle(&mut rng);
                // Shapes in turn: halves, a minority, a bridge (the first node of the shuffle
                // reaches both sides; needs 3 nodes).
                let shape = partitions % if nodes >= 3 { 3 } else { 2 };
                partitions += 1;
                let (bridge, rest) = if shape == 2 { (Some(vec![all[0]]), &all[1..]) } else { (None, &all[..]) };
                let size = match shape {
                    0 => nodes / 2,
                    _ => (rest.len() as u32 - u32::from(shape == 1)) / 2,
                }
                .max(1);
                let mut side: Vec<u32> = rest[..size as usize].to_vec();
                side.sort_unstable();
                for &g in &side {
                    out.push(FaultAction {
                        id: format!("nem-part-{k}-{g}"),
                        kind: "partition".into(),
                        group: g,
                        nodes: Some(side.clone()),
                        bridge: bridge.clone(),
                        ..base.clone()
                    });
                }
            }
            "loss" => out.push(FaultAction {
                id: format!("nem-loss-{k}"),
                kind: "drop".into(),
                drop_pct: Some(LOSS_PCT),
                ..base
            }),
            "kill" | "pause" => out.push(FaultAction {
                id: format!("nem-{kind}-{k}"),
                kind: kind.into(),
                group: rng.gen_range(0..nodes),
                ..base
            }),
            _ => {}
        }
    }
    out
}

/// The nemesis lines of a config (rules 2-3): [`lines`] for the config's nemesis and seed.
pub fn schedule(cfg: &Config, nodes: u32, window_ms: u64) -> Vec<FaultAction> {
    Nemesis::of(cfg).map_or_else(Vec::new, |n| lines(&n, nodes, window_ms, cfg.int("seed").max(0) as u64))
}

/// Whether a schedule line is the nemesis's.
pub fn is_nemesis(a: &FaultAction) -> bool {
    a.id.starts_with("nem-")
}

/// Rule 5: the nemesis lines of `actions` not carried out, and the process faults started and
/// not healed, one line each (each a degradation of the run).
pub fn missed(actions: &[FaultAction], events: &[Event]) -> Vec<String> {
    let injected: BTreeSet<&str> = events.iter().filter(|e| e.ev == "fault_injected").map(|e| e.str("id")).collect();
    let healed: BTreeSet<&str> = events.iter().filter(|e| e.ev == "fault_healed").map(|e| e.str("id")).collect();
    let mut out = Vec::new();
    for a in actions.iter().filter(|a| is_nemesis(a)) {
        if !injected.contains(a.id.as_str()) {
            out.push(format!("nemesis fault {} ({}) was not carried out", a.id, a.kind));
        } else if procs::is_proc_kind(&a.kind) && !healed.contains(a.id.as_str()) {
            out.push(format!("nemesis fault {} ({}) was started and never healed", a.id, a.kind));
        }
    }
    out.extend(events.iter().filter(|e| e.ev == "nemesis_error").map(|e| e.str("message").to_string()));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nem(kinds: &[&str], interval_ms: u64) -> Nemesis {
        Nemesis { kinds: kinds.iter().map(|s| s.to_string()).collect(), interval_ms }
    }

    #[test]
    fn rule2_faults_take_turns_and_end_an_interval_before_the_window() {
        let l = lines(&nem(&["kill", "pause", "loss"], 2000), 3, 20_000, 1);
        let kinds: Vec<&str> = l.iter().map(|a| a.kind.as_str()).collect();
        assert_eq!(kinds, ["kill", "pause", "drop", "kill", "pause", "drop", "kill", "pause"]);
        for (i, a) in l.iter().enumerate() {
            assert_eq!(a.at_ms, (i as u64 + 1) * 2000);
            assert_eq!(a.duration_ms, Some(1000));
            assert!(a.at_ms + 1000 <= 18_000, "{a:?} ends within the last interval");
        }
    }

    #[test]
    fn rule2_the_same_seed_gives_the_same_lines_and_another_seed_others() {
        let n = nem(&["partition", "kill"], 500);
        assert_eq!(lines(&n, 5, 60_000, 3), lines(&n, 5, 60_000, 3));
        assert_ne!(lines(&n, 5, 60_000, 3), lines(&n, 5, 60_000, 4));
    }

    #[test]
    fn rule3_partitions_alternate_halves_and_minorities() {
        let l = lines(&nem(&["partition"], 1000), 7, 10_000, 9);
        let mut sides: std::collections::BTreeMap<u64, Vec<u32>> = std::collections::BTreeMap::new();
        for a in &l {
            let s = a.nodes.clone().unwrap();
            assert!(s.contains(&a.group));
            sides.entry(a.at_ms).or_default().push(a.group);
        }
        assert_eq!(sides.len(), 8);
        let sizes: Vec<usize> = sides.values().map(Vec::len).collect();
        // 7 nodes: halves 3, a minority 3, a bridge's smaller half of 6 is 3.
        assert_eq!(sizes, [3; 8], "{sides:?}");
        let bridges: Vec<&FaultAction> = l.iter().filter(|a| a.bridge.is_some()).collect();
        assert!(!bridges.is_empty(), "every third partition is a bridge");
        for b in bridges {
            let (side, br) = (b.nodes.clone().unwrap(), b.bridge.clone().unwrap());
            assert_eq!(br.len(), 1);
            assert!(!side.contains(&br[0]), "the bridge node is not on the side: {b:?}");
        }
        let l3 = lines(&nem(&["partition"], 1000), 4, 10_000, 9);
        let first: Vec<u32> = l3.iter().filter(|a| a.at_ms == 1000).map(|a| a.group).collect();
        let second: Vec<u32> = l3.iter().filter(|a| a.at_ms == 2000).map(|a| a.group).collect();
        assert_eq!((first.len(), second.len()), (2, 1), "halves of 4, then a minority of 4");
        let l3 = lines(&nem(&["partition"], 1000), 3, 10_000, 9);
        let third: Vec<&FaultAction> = l3.iter().filter(|a| a.at_ms == 3000).collect();
        assert_eq!(third.len(), 1, "a bridge of 3 nodes: one node cut from one other");
        assert_eq!(third[0].bridge.as_ref().map(Vec::len), Some(1));
    }

    #[test]
    fn rule3_ids_and_fields_name_the_kind() {
        let l = lines(&nem(&["loss", "pause"], 1000), 3, 10_000, 1);
        assert_eq!(l[0].id, "nem-loss-0");
        assert_eq!(l[0].drop_pct, Some(LOSS_PCT));
        assert_eq!(l[1].id, "nem-pause-1");
        assert!(l[1].group < 3);
    }

    #[test]
    fn rule5_a_line_not_carried_out_and_a_kill_not_healed_are_counted() {
        let l = lines(&nem(&["kill", "loss"], 1000), 3, 10_000, 1);
        let ev = |ev: &str, id: &str| {
            let line = serde_json::json!({"ts_us": 1, "run": "r", "rt": "troupe", "node": "o", "ev": ev, "id": id,
                                          "target": "node-0", "kind": "kill"});
            crate::events::parse_line(&line.to_string()).unwrap()
        };
        let events = vec![ev("fault_injected", "nem-kill-0"), ev("fault_injected", "nem-loss-1")];
        let m = missed(&l, &events);
        assert!(m.iter().any(|x| x.contains("nem-kill-0") && x.contains("never healed")), "{m:?}");
        assert!(!m.iter().any(|x| x.contains("nem-loss-1")), "{m:?}");
        assert!(m.iter().any(|x| x.contains("nem-kill-2") && x.contains("not carried out")), "{m:?}");
    }
}
