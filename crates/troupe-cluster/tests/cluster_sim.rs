//! The membership protocol in the deterministic simulator: joins at scale, reproducibility,
//! crash detection and downing, partitions, pauses, leaving (engine rules 1-8, downing rules).

use troupe_cluster::sim::{addr, Sim, SimConfig};
use troupe_cluster::{ClusterConfig, ClusterEvent, Downing, MemberStatus};

fn fast(downing: Downing) -> ClusterConfig {
    ClusterConfig { downing, ..ClusterConfig::fast() }
}

#[test]
fn a_hundred_nodes_join_through_one_seed_and_converge() {
    let mut sim = Sim::new(SimConfig { nodes: 100, seed: 42, cluster: fast(Downing::Off), ..SimConfig::default() });
    let t = sim.run_until(60_000, Sim::all_up).expect("100 nodes all up everywhere within 60 s of virtual time");
    let up = sim.engine(0).unwrap().gossip().live().filter(|m| m.status == MemberStatus::Up).count();
    assert_eq!(up, 100);
    let mut ages: Vec<u64> = sim.engine(7).unwrap().gossip().live().map(|m| m.up_number).collect();
    ages.sort_unstable();
    ages.dedup();
    assert_eq!(ages.len(), 100, "every member has its own age");
    eprintln!("100 nodes converged at {t} ms virtual, {} messages", sim.delivered);
}

#[test]
fn the_same_seed_gives_the_same_run() {
    let run = |seed| {
        let mut sim = Sim::new(SimConfig {
            nodes: 30,
            seed,
            loss: 0.05,
            cluster: fast(Downing::KeepMajority),
            ..SimConfig::default()
        });
        sim.run_until(30_000, Sim::all_up).expect("converges despite 5% loss");
        sim.kill(3);
        sim.run_until(30_000, |s| s.everyone_sees(3, Some(MemberStatus::Removed), None))
            .expect("the crashed node is removed");
        (sim.digest(), sim.now(), sim.delivered)
    };
    let a = run(9);
    assert_eq!(a, run(9), "same seed, same run");
    assert_ne!(a.0, run(10).0, "another seed, another run");
}

#[test]
fn a_crashed_node_is_unreachable_everywhere_then_downed_and_removed_under_keep_majority() {
    let mut sim =
        Sim::new(SimConfig { nodes: 16, seed: 3, cluster: fast(Downing::KeepMajority), ..SimConfig::default() });
    sim.run_until(30_000, Sim::all_up).expect("converges");
    let t0 = sim.now();
    sim.kill(5);
    let t1 = sim.run_until(10_000, |s| s.everyone_sees(5, None, Some(true))).expect("unreachable everywhere");
    assert!(t1 - t0 < 1_000, "detected by every survivor in {} ms (fast profile)", t1 - t0);
    sim.run_until(10_000, |s| s.everyone_sees(5, Some(MemberStatus::Removed), None)).expect("downed then removed");
    let downs: Vec<_> = sim
        .events
        .iter()
        .filter(|(_, _, e)| matches!(e, ClusterEvent::MemberDowned { .. }))
        .map(|(_, _, e)| e.clone())
        .collect();
    assert!(!downs.is_empty());
    assert!(
        downs.iter().all(|e| matches!(e, ClusterEvent::MemberDowned { addr: a, .. } if *a == addr(5))),
        "only the crashed node is downed: {downs:?}"
    );
}

#[test]
fn a_paused_node_is_unreachable_then_reachable_and_nothing_is_downed_without_a_strategy() {
    let mut sim = Sim::new(SimConfig { nodes: 5, seed: 4, cluster: fast(Downing::Off), ..SimConfig::default() });
    sim.run_until(30_000, Sim::all_up).expect("converges");
    sim.freeze(2, true);
    sim.run_until(10_000, |s| s.everyone_sees(2, None, Some(true))).expect("unreachable");
    let more = sim.now() + 3_000;
    sim.run_until(3_000, |s| s.now() >= more);
    sim.freeze(2, false);
    sim.run_until(10_000, |s| s.everyone_sees(2, Some(MemberStatus::Up), Some(false)))
        .expect("reachable again, still up");
    assert!(!sim.events.iter().any(|(_, _, e)| matches!(e, ClusterEvent::MemberDowned { .. })));
}

#[test]
fn a_partition_three_two_downs_the_minority_under_keep_majority_and_they_rejoin_after_heal() {
    let cluster = ClusterConfig { rejoin_when_downed: true, ..fast(Downing::KeepMajority) };
    let mut sim = Sim::new(SimConfig { nodes: 5, seed: 5, cluster, ..SimConfig::default() });
    sim.run_until(30_000, Sim::all_up).expect("converges");
    sim.partition(&[0, 1, 2], &[3, 4]);
    sim.run_until(20_000, |s| {
        [3, 4].iter().all(|&i| {
            [0, 1, 2]
                .iter()
                .all(|&j| s.engine(j).unwrap().gossip().member(&addr(i)).is_some_and(|m| !m.status.is_live()))
        })
    })
    .expect("the majority downs the minority");
    for j in [0, 1, 2] {
        for k in [0, 1, 2] {
            assert_eq!(
                sim.engine(j).unwrap().gossip().member(&addr(k)).unwrap().status,
                MemberStatus::Up,
                "the majority stays up"
            );
        }
    }
    let downed: std::collections::BTreeSet<String> = sim
        .events
        .iter()
        .filter_map(|(_, _, e)| match e {
            ClusterEvent::MemberDowned { addr, .. } => Some(addr.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(downed, [addr(3), addr(4)].into(), "nothing else is downed");
    sim.run_until(20_000, |s| {
        [3, 4].iter().all(|&i| {
            s.events
                .iter()
                .any(|(_, n, e)| *n == i && matches!(e, ClusterEvent::MemberDowned { addr: a, .. } if *a == addr(i)))
        })
    })
    .expect("each node of the minority downs itself");
    sim.heal();
    if sim.run_until(30_000, Sim::all_up).is_none() {
        for i in 0..5 {
            match sim.engine(i) {
                Some(e) => eprintln!("node {i} stopped={:?}\n{}", e.stopped(), e.status().report()),
                None => eprintln!("node {i} gone"),
            }
        }
        for (t, n, e) in sim.events.iter().rev().take(30) {
            eprintln!("{t} {n} {e:?}");
        }
        panic!("after the heal the two rejoin as new incarnations");
    }
}

#[test]
fn a_member_leaves_gracefully() {
    let mut sim = Sim::new(SimConfig { nodes: 4, seed: 6, cluster: fast(Downing::Off), ..SimConfig::default() });
    sim.run_until(30_000, Sim::all_up).expect("converges");
    sim.leave(2);
    sim.run_until(10_000, |s| s.engine(2).unwrap().stopped().is_some()).expect("the leaver stops");
    assert_eq!(sim.engine(2).unwrap().stopped(), Some("left"));
    sim.run_until(10_000, |s| s.everyone_sees(2, Some(MemberStatus::Removed), None)).expect("removed everywhere");
    let seen: Vec<&str> = sim
        .events
        .iter()
        .filter(|(_, n, _)| *n == 0)
        .filter_map(|(_, _, e)| match e {
            ClusterEvent::MemberLeft { addr: a, .. } if *a == addr(2) => Some("left"),
            ClusterEvent::MemberExited { addr: a, .. } if *a == addr(2) => Some("exited"),
            ClusterEvent::MemberRemoved { addr: a, .. } if *a == addr(2) => Some("removed"),
            _ => None,
        })
        .collect();
    assert_eq!(seen, ["left", "exited", "removed"]);
}

#[test]
fn two_members_claiming_one_name_at_once_are_resolved_by_age_and_the_loser_reports_it() {
    use std::collections::BTreeMap;
    use troupe_cluster::Entry;
    let mut sim = Sim::new(SimConfig { nodes: 3, seed: 8, cluster: fast(Downing::Off), ..SimConfig::default() });
    sim.run_until(30_000, Sim::all_up).expect("converges");
    let entry = |seq| Entry { export: format!("troupe.name.{seq}"), tag: 1, tag_name: "t".into(), seq };
    // The same tick: neither has heard of the other's claim.
    sim.publish(1, BTreeMap::new(), [("boss".to_owned(), entry(1))].into());
    sim.publish(2, BTreeMap::new(), [("boss".to_owned(), entry(1))].into());
    let older = |s: &Sim, a: usize| s.engine(0).unwrap().gossip().member(&addr(a)).unwrap().up_number;
    let (winner, loser) = if older(&sim, 1) < older(&sim, 2) { (1, 2) } else { (2, 1) };
    sim.run_until(10_000, |s| {
        (0..3).all(|i| s.engine(i).unwrap().name_owner("boss").map(|(o, _)| o) == Some(addr(winner)))
            && s.engine(loser).unwrap().own_names().is_empty()
    })
    .expect("every node agrees on the keeper and the loser dropped its claim");
    let conflicts: Vec<_> =
        sim.events.iter().filter(|(_, _, e)| matches!(e, ClusterEvent::NameConflict { .. })).collect();
    assert_eq!(conflicts.len(), 1, "reported once, by the loser: {conflicts:?}");
    assert!(
        matches!(&conflicts[0].2, ClusterEvent::NameConflict { winner: w, loser: l, .. } if *w == addr(winner) && *l == addr(loser))
    );
}
