//! What a workload's node process does with the network lines of its schedule: it sets
//! `troupe-remote`'s fault rules on its own node and cuts and heals links at the planned
//! offsets from the window start, and emits `fault_injected` for what it applied.
//!
//! Rules:
//! 1. `drop` and `delay` become one fault rule on every node process of the workload for every
//!    peer and every channel but `control` (the runtime's heartbeats and acknowledgements, as
//!    `troupe-remote`'s fault injection spares them), from the window start plus `at_ms`; each
//!    process emits `fault_injected {id, target: <its node>, kind}` once per line. Decisions
//!    come from a generator seeded by the config's seed and the node index.
//! 2. A partition line for node n with side S, at process `me`: if `me` is n, it cuts its links
//!    to every node not in S whose address it knows and emits `fault_injected {id, target: n,
//!    kind: "partition", duration_ms}`; if `me` is not in S, it cuts its link to n when it knows
//!    n's address (told, or a peer of that name); either way the link is healed `duration_ms` later. A cut drops every frame
//!    to and from the peer at this node (`troupe-remote` fault rule 3), so one side knowing the
//!    other's address is enough to separate them. Links are counted: a link cut by two
//!    partitions heals when both have ended.
//! 3. A process that starts late (a restarted server) applies what is still due: partitions
//!    whose heal time has passed are skipped, those under way are cut at once.
//! 4. The process reports the frames its node dropped and delayed by fault injection
//!    ([`counts`]) in its `run_finished` (`net_dropped_frames`, `net_delayed_frames`); the lab
//!    sums them into `summary.json`.

use std::collections::HashMap;
use std::time::Duration;

use serde_json::json;
use troupe_remote::{FaultConfig, Node};

use super::{DELAY, DROP, PARTITION};
use crate::events::writer::{now_us, Emitter};
use crate::schedule::FaultAction;

/// Who this process is among the workload's node processes.
pub(crate) struct Me {
    /// Its node index (as `Workload::net_nodes` lists it).
    pub(crate) index: u32,
    /// Its node name (the `target` of its events).
    pub(crate) name: String,
    /// The names of the workload's nodes by index (`Workload::net_nodes`).
    pub(crate) nodes: Vec<String>,
    /// Their addresses where this process was told them; the others are looked up by name
    /// among the node's peers when a link is cut.
    pub(crate) addrs: Vec<Option<String>>,
}

impl Me {
    fn addr_of(&self, node: &Node, p: u32) -> Option<String> {
        let p = p as usize;
        self.addrs.get(p).cloned().flatten().or_else(|| node.resolve_node(self.nodes.get(p)?).ok())
    }
}

/// Whether a schedule has network lines (a process without them starts nothing).
pub(crate) fn any(actions: &[FaultAction]) -> bool {
    actions.iter().any(|a| super::is_net_kind(&a.kind))
}

/// The frames `node` dropped and delayed by fault injection, as `run_finished` fields.
pub(crate) fn counts(node: &Node) -> (u64, u64) {
    let s = node.stats();
    (s.fault_dropped, s.fault_delayed)
}

enum Step {
    Rule,
    Cut { peers: Vec<u32>, on: bool },
}

fn instant_of(us: i64) -> tokio::time::Instant {
    let (now, now_i) = (now_us(), tokio::time::Instant::now());
    if us >= now {
        now_i + Duration::from_micros((us - now) as u64)
    } else {
        now_i.checked_sub(Duration::from_micros((now - us) as u64)).unwrap_or(now_i)
    }
}

/// Starts applying the network lines of `actions` on `node` (rules 1-3), timed from the window
/// start `start_us`; `None` when there are none. Abort the task when the process ends.
pub(crate) fn spawn(
    node: &Node,
    actions: &[FaultAction],
    me: Me,
    start_us: i64,
    seed: u64,
    em: &Emitter,
) -> Option<tokio::task::JoinHandle<()>> {
    if !any(actions) {
        return None;
    }
    let start = instant_of(start_us);
    let now = tokio::time::Instant::now();
    let at = |ms: u64| start + Duration::from_millis(ms);
    let mut rule = FaultConfig {
        seed: seed ^ (u64::from(me.index) + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15),
        ..Default::default()
    };
    // (instant, order, step, the line it came from when it is announced)
    let mut steps: Vec<(tokio::time::Instant, u8, Step, Option<FaultAction>)> = Vec::new();
    for a in actions {
        match a.kind.as_str() {
            DROP => {
                rule.drop = a.drop_pct.unwrap_or(0.0) / 100.0;
                steps.push((at(a.at_ms), 2, Step::Rule, Some(a.clone())));
            }
            DELAY => {
                let [lo, hi] = a.delay_ms.unwrap_or([0, 0]);
                (rule.delay_min_us, rule.delay_max_us) = (lo * 1000, hi * 1000);
                steps.push((at(a.at_ms), 2, Step::Rule, Some(a.clone())));
            }
            PARTITION => {
                let side = a.nodes.clone().unwrap_or_else(|| vec![a.group]);
                let end = at(a.at_ms + a.duration_ms.unwrap_or(0));
                // Rule 3: a partition already over is not applied.
                if end <= now {
                    continue;
                }
                let (peers, announce): (Vec<u32>, bool) = if a.group == me.index {
                    ((0..me.nodes.len() as u32).filter(|j| !side.contains(j)).collect(), true)
                } else if !side.contains(&me.index) {
                    (vec![a.group], false)
                } else {
                    continue;
                };
                steps.push((at(a.at_ms), 1, Step::Cut { peers: peers.clone(), on: true }, announce.then(|| a.clone())));
                steps.push((end, 0, Step::Cut { peers, on: false }, None));
            }
            _ => {}
        }
    }
    // Heals before cuts at one instant, so back-to-back partitions of a link leave it cut.
    steps.sort_by_key(|s| (s.0, s.1));
    let (node, em) = (node.clone(), em.clone());
    Some(tokio::spawn(async move {
        let mut cut: HashMap<u32, (u32, String)> = HashMap::new();
        let mut rule_set = false;
        for (when, _, step, line) in steps {
            tokio::time::sleep_until(when).await;
            match step {
                Step::Rule => {
                    if !rule_set {
                        node.set_faults(None, None, rule.clone());
                        rule_set = true;
                    }
                }
                Step::Cut { peers, on } => {
                    for p in peers {
                        if on {
                            if let Some((n, _)) = cut.get_mut(&p) {
                                *n += 1;
                            } else if let Some(addr) = me.addr_of(&node, p) {
                                node.partition(&addr);
                                cut.insert(p, (1, addr));
                            }
                        } else if let Some((n, addr)) = cut.get_mut(&p) {
                            *n -= 1;
                            if *n == 0 {
                                node.heal(addr);
                                cut.remove(&p);
                            }
                        }
                    }
                }
            }
            if let Some(a) = line {
                let mut fields = json!({"id": a.id, "target": me.name, "kind": a.kind});
                if let Some(p) = a.drop_pct {
                    fields["drop_pct"] = json!(p);
                }
                if let Some(d) = a.delay_ms {
                    fields["delay_ms"] = json!(d);
                }
                if let Some(d) = a.duration_ms {
                    fields["duration_ms"] = json!(d);
                }
                em.emit("fault_injected", fields);
            }
        }
    }))
}
