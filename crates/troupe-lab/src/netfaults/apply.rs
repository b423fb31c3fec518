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
//! 2. A partition line for node n with side S (and bridge B, empty but for the nemesis's
//!    bridges), at process `me`: if `me` is n, it cuts its links to every node in neither S
//!    nor B whose address it knows and emits `fault_injected {id, target: n,
//!    kind: "partition", duration_ms}`; if `me` is in neither S nor B, it cuts its link to n when it knows
//!    n's address (told, or a peer of that name); either way the link is healed `duration_ms` later. A cut drops every frame
//!    to and from the peer at this node (`troupe-remote` fault rule 3), so one side knowing the
//!    other's address is enough to separate them. Links are counted: a link cut by two
//!    partitions heals when both have ended.
//! 3. A process that starts late (a restarted server) applies what is still due: partitions
//!    whose heal time has passed are skipped, those under way are cut at once.
//! 5. A `drop` line with a `duration_ms` (the nemesis's `loss`) sets its drop percentage (with
//!    the rule's delay) at `at_ms` and goes back to the rule (or to no rule) when it ends.
//! 4. The process reports the frames its node dropped and delayed by fault injection
//!    (`counts`) in its `run_finished` (`net_dropped_frames`, `net_delayed_frames`); the lab
//!    sums them into `summary.json`.

use std::collections::HashMap;
use std::time::Duration;

use serde_json::json;
use troupe_remote::{FaultConfig, Node};

use super::{DELAY, DROP, PARTITION};
use crate::events::writer::{now_us, Emitter};
use crate::schedule::FaultAction;

/// Who this process is among the workload's node processes.
pub struct Me {
    /// Its node index (as `Spec::net_nodes` lists it).
    pub index: u32,
    /// Its node name (the `target` of its events).
    pub name: String,
    /// The names of the workload's nodes by index (`Spec::net_nodes`).
    pub nodes: Vec<String>,
    /// Their addresses where this process was told them; the others are looked up by name
    /// among the node's peers when a link is cut.
    pub addrs: Vec<Option<String>>,
}

impl Me {
    fn addr_of(&self, node: &Node, p: u32) -> Option<String> {
        let p = p as usize;
        self.addrs.get(p).cloned().flatten().or_else(|| node.resolve_node(self.nodes.get(p)?).ok())
    }
}

/// Whether a schedule has network lines (a process without them starts nothing).
pub fn any(actions: &[FaultAction]) -> bool {
    actions.iter().any(|a| super::is_net_kind(&a.kind))
}

/// The frames `node` dropped and delayed by fault injection, as `run_finished` fields.
pub fn counts(node: &Node) -> (u64, u64) {
    let s = node.stats();
    (s.fault_dropped, s.fault_delayed)
}

/// One thing to do at an offset from the window start.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Set the drop and delay rule (once; both lines share it).
    Rule,
    /// Drop this percentage of frames (a timed loss, rule 5), or go back to the rule's own
    /// (`None`).
    Loss {
        /// The percentage, or `None` for the rule's.
        pct: Option<f64>,
    },
    /// Cut (`on`) or heal the links to these node indices.
    Cut {
        /// The node indices.
        peers: Vec<u32>,
        /// Cut (`true`) or heal.
        on: bool,
    },
}

/// A process's plan: its fault rule and its steps in order, each `(at_ms, step, the line to
/// announce in `fault_injected` when it is done)`.
#[derive(Debug)]
pub struct Plan {
    /// The drop and delay rule.
    pub rule: FaultConfig,
    /// The steps, in order.
    pub steps: Vec<(u64, Step, Option<FaultAction>)>,
}

/// The plan of node `me` of `n_nodes` from the network lines of `actions` (rules 1-3), when
/// `elapsed_ms` have passed since the window start (negative before it).
pub fn plan(actions: &[FaultAction], me: u32, n_nodes: usize, elapsed_ms: i64, seed: u64) -> Plan {
    let mut rule =
        FaultConfig { seed: seed ^ (u64::from(me) + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15), ..Default::default() };
    // (at_ms, order at one instant, step, announced line)
    let mut steps: Vec<(u64, u8, Step, Option<FaultAction>)> = Vec::new();
    for a in actions {
        match a.kind.as_str() {
            // Rule 5: a loss with a duration (a nemesis's) is on for that long only.
            DROP if a.duration_ms.is_some() => {
                let end = a.at_ms + a.duration_ms.unwrap_or(0);
                if i64::try_from(end).unwrap_or(i64::MAX) <= elapsed_ms {
                    continue;
                }
                steps.push((a.at_ms, 2, Step::Loss { pct: Some(a.drop_pct.unwrap_or(0.0)) }, Some(a.clone())));
                steps.push((end, 0, Step::Loss { pct: None }, None));
            }
            DROP => {
                rule.drop = a.drop_pct.unwrap_or(0.0) / 100.0;
                steps.push((a.at_ms, 2, Step::Rule, Some(a.clone())));
            }
            DELAY => {
                let [lo, hi] = a.delay_ms.unwrap_or([0, 0]);
                (rule.delay_min_us, rule.delay_max_us) = (lo * 1000, hi * 1000);
                steps.push((a.at_ms, 2, Step::Rule, Some(a.clone())));
            }
            PARTITION => {
                let side = a.nodes.clone().unwrap_or_else(|| vec![a.group]);
                let end = a.at_ms + a.duration_ms.unwrap_or(0);
                // Rule 3: a partition already over is not applied.
                if i64::try_from(end).unwrap_or(i64::MAX) <= elapsed_ms {
                    continue;
                }
                // A bridge's nodes stay connected to both sides (the nemesis's bridge).
                let bridge = a.bridge.clone().unwrap_or_default();
                let (peers, announce): (Vec<u32>, bool) = if a.group == me {
                    ((0..n_nodes as u32).filter(|j| !side.contains(j) && !bridge.contains(j)).collect(), true)
                } else if !side.contains(&me) && !bridge.contains(&me) {
                    (vec![a.group], false)
                } else {
                    continue;
                };
                steps.push((a.at_ms, 1, Step::Cut { peers: peers.clone(), on: true }, announce.then(|| a.clone())));
                steps.push((end, 0, Step::Cut { peers, on: false }, None));
            }
            _ => {}
        }
    }
    // Heals before cuts at one instant, so back-to-back partitions of a link leave it cut.
    steps.sort_by_key(|s| (s.0, s.1));
    Plan { rule, steps: steps.into_iter().map(|(at, _, step, line)| (at, step, line)).collect() }
}

/// The links a process has cut, counted (rule 2): a link is cut by its first partition and
/// healed by the end of its last.
#[derive(Debug, Default)]
pub struct Links {
    cut: HashMap<u32, (u32, String)>,
}

impl Links {
    /// Counts a cut of the link to `peer`; the address to partition when it is the first
    /// (`addr` is asked only then, and a peer with no known address is not cut).
    pub fn cut(&mut self, peer: u32, addr: impl FnOnce() -> Option<String>) -> Option<String> {
        if let Some((n, _)) = self.cut.get_mut(&peer) {
            *n += 1;
            return None;
        }
        let a = addr()?;
        self.cut.insert(peer, (1, a.clone()));
        Some(a)
    }

    /// Counts the end of a cut of the link to `peer`; the address to heal when it was the last.
    pub fn heal(&mut self, peer: u32) -> Option<String> {
        let (n, _) = self.cut.get_mut(&peer)?;
        *n -= 1;
        if *n > 0 {
            return None;
        }
        self.cut.remove(&peer).map(|(_, a)| a)
    }
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
pub fn spawn(
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
    let plan = plan(actions, me.index, me.nodes.len(), (now_us() - start_us) / 1000, seed);
    let start = instant_of(start_us);
    let (node, em) = (node.clone(), em.clone());
    Some(tokio::spawn(async move {
        let mut links = Links::default();
        let mut rule_set = false;
        for (at_ms, step, line) in plan.steps {
            tokio::time::sleep_until(start + Duration::from_millis(at_ms)).await;
            match step {
                Step::Rule if !rule_set => {
                    node.set_faults(None, None, plan.rule.clone());
                    rule_set = true;
                }
                Step::Rule => {}
                Step::Loss { pct } => {
                    let mut r = plan.rule.clone();
                    if let Some(p) = pct {
                        r.drop = p / 100.0;
                    } else if !rule_set {
                        r = FaultConfig { seed: r.seed, ..Default::default() };
                    }
                    node.set_faults(None, None, r);
                }
                Step::Cut { peers, on: true } => {
                    for p in peers {
                        if let Some(addr) = links.cut(p, || me.addr_of(&node, p)) {
                            node.partition(&addr);
                        }
                    }
                }
                Step::Cut { peers, on: false } => {
                    for p in peers {
                        if let Some(addr) = links.heal(p) {
                            node.heal(&addr);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn part(at_ms: u64, duration_ms: u64, group: u32, side: &[u32]) -> FaultAction {
        FaultAction {
            at_ms,
            id: format!("p-{at_ms}-{group}"),
            kind: PARTITION.into(),
            group,
            duration_ms: Some(duration_ms),
            nodes: Some(side.to_vec()),
            ..Default::default()
        }
    }

    fn cuts(p: &Plan) -> Vec<(u64, Vec<u32>, bool)> {
        p.steps
            .iter()
            .filter_map(|(at, s, _)| match s {
                Step::Cut { peers, on } => Some((*at, peers.clone(), *on)),
                Step::Rule | Step::Loss { .. } => None,
            })
            .collect()
    }

    #[test]
    fn rule1_drop_and_delay_make_one_rule_announced_per_line() {
        let actions = [
            FaultAction { id: "net-drop".into(), kind: DROP.into(), drop_pct: Some(2.5), ..Default::default() },
            FaultAction { id: "net-delay".into(), kind: DELAY.into(), delay_ms: Some([1, 20]), ..Default::default() },
        ];
        let p = plan(&actions, 3, 5, -1000, 7);
        assert_eq!((p.rule.drop, p.rule.delay_min_us, p.rule.delay_max_us), (0.025, 1000, 20_000));
        assert_ne!(p.rule.seed, plan(&actions, 2, 5, -1000, 7).rule.seed, "seeded by the node index too");
        let ids: Vec<&str> = p.steps.iter().filter_map(|s| s.2.as_ref().map(|a| a.id.as_str())).collect();
        assert_eq!(ids, ["net-drop", "net-delay"]);
    }

    #[test]
    fn rule2_the_cut_node_cuts_the_other_side_the_others_cut_it_and_its_side_does_nothing() {
        let actions = [part(100, 50, 1, &[1, 2])];
        let cut_node = plan(&actions, 1, 4, 0, 0);
        assert_eq!(cuts(&cut_node), [(100, vec![0, 3], true), (150, vec![0, 3], false)]);
        assert_eq!(cut_node.steps[0].2.as_ref().map(|a| a.id.as_str()), Some("p-100-1"), "it announces its cut");
        let other = plan(&actions, 3, 4, 0, 0);
        assert_eq!(cuts(&other), [(100, vec![1], true), (150, vec![1], false)]);
        assert!(other.steps.iter().all(|s| s.2.is_none()), "only the cut node announces");
        assert!(plan(&actions, 2, 4, 0, 0).steps.is_empty(), "node 2 is on the cut side with node 1");
    }

    #[test]
    fn rule2_a_bridge_node_keeps_both_links_and_only_the_side_and_the_rest_are_cut() {
        let bridged = FaultAction { bridge: Some(vec![0]), ..part(100, 50, 1, &[1]) };
        let acts = [bridged];
        assert_eq!(cuts(&plan(&acts, 1, 3, -1, 1)), [(100, vec![2], true), (150, vec![2], false)]);
        assert_eq!(cuts(&plan(&acts, 2, 3, -1, 1)), [(100, vec![1], true), (150, vec![1], false)]);
        assert!(cuts(&plan(&acts, 0, 3, -1, 1)).is_empty(), "the bridge cuts nothing");
    }

    #[test]
    fn rule5_a_timed_loss_is_set_at_its_start_and_lifted_at_its_end() {
        let loss = FaultAction {
            at_ms: 200,
            id: "nem-loss-0".into(),
            kind: DROP.into(),
            drop_pct: Some(25.0),
            duration_ms: Some(100),
            ..Default::default()
        };
        let p = plan(&[loss], 0, 3, -1, 1);
        let steps: Vec<(u64, Step)> = p.steps.iter().map(|(at, s, _)| (*at, s.clone())).collect();
        assert_eq!(steps, [(200, Step::Loss { pct: Some(25.0) }), (300, Step::Loss { pct: None })]);
        assert_eq!(p.rule.drop, 0.0, "the standing rule does not drop");
    }

    #[test]
    fn rule2_back_to_back_cuts_heal_before_the_next_cut_and_links_are_counted() {
        let p = plan(&[part(0, 100, 0, &[0]), part(100, 100, 0, &[0])], 1, 2, 0, 0);
        let at_100: Vec<bool> = cuts(&p).iter().filter(|c| c.0 == 100).map(|c| c.2).collect();
        assert_eq!(at_100, [false, true]);
        let mut links = Links::default();
        assert_eq!(links.cut(0, || Some("a".into())), Some("a".into()));
        assert_eq!(links.cut(0, || panic!("asked again")), None);
        assert_eq!(links.heal(0), None, "still cut by the other partition");
        assert_eq!(links.heal(0), Some("a".into()));
        assert_eq!(links.heal(0), None);
        assert_eq!(links.cut(1, || None), None, "no address, no cut");
        assert_eq!(links.heal(1), None);
    }

    #[test]
    fn rule3_a_late_process_skips_partitions_over_and_applies_those_under_way() {
        let actions = [part(0, 1000, 0, &[0]), part(2000, 1000, 0, &[0])];
        let late = plan(&actions, 0, 3, 2500, 0);
        assert_eq!(cuts(&late), [(2000, vec![1, 2], true), (3000, vec![1, 2], false)]);
    }
}
