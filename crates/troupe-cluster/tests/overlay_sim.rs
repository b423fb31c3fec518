//! The peer-to-peer overlay in the simulator: HyParView's views (rules 1-5), Plumtree's tree
//! (rules 2-5), healing around crashes (10% of 64 nodes), reproducibility, and the
//! `overlay-scale` comparison of full mesh, client-server and HyParView.

use troupe_cluster::overlay::hyparview::HyParViewConfig;
use troupe_cluster::overlay::sim::{scale, OverlaySim, OverlaySimConfig};
use troupe_cluster::overlay::OverlayKind;

fn formed(nodes: usize, seed: u64) -> OverlaySim {
    let mut sim = OverlaySim::new(OverlaySimConfig { nodes, seed, ..OverlaySimConfig::default() });
    let t = sim.run_until(60_000, |s| s.now() > nodes as u64 * 10 + 500 && s.connected());
    assert!(t.is_some(), "the overlay forms one connected graph");
    sim
}

#[test]
fn sixty_four_nodes_form_bounded_symmetric_connected_views() {
    let mut sim = formed(64, 1);
    sim.run_until(2_000, |_| false);
    for i in sim.alive() {
        let n = sim.node(i).unwrap();
        assert!(n.hv.active().len() <= 5 && !n.hv.active().is_empty(), "node {i}: {:?}", n.hv.active());
        assert!(n.hv.passive().len() <= 30);
        assert!(!n.hv.active().iter().any(|a| n.hv.passive().contains(a)), "views are disjoint");
        for p in n.hv.active() {
            let j: usize = p[2..].parse().unwrap();
            assert!(
                sim.node(j).unwrap().hv.active().iter().any(|x| *x == format!("p-{i}")),
                "active views are symmetric: {i} -> {j}"
            );
        }
    }
    assert!(sim.connected());
}

#[test]
fn broadcasts_reach_everyone_and_settle_on_a_tree() {
    let mut sim = formed(64, 2);
    let mut last_eager = 0;
    for k in 0..30 {
        let before = sim.traffic.gossip_messages;
        let id = sim.broadcast(k % 64, 100).unwrap();
        sim.run_until(5_000, |s| s.all_delivered(&id)).expect("every node delivers every broadcast");
        sim.run_until(500, |_| false);
        last_eager = sim.traffic.gossip_messages - before;
    }
    // A tree has 63 links; pruning leaves the full payload on (nearly) only those.
    assert!(last_eager <= 63 + 10, "full copies per broadcast once the tree settled: {last_eager}");
}

#[test]
fn killing_a_tenth_of_sixty_four_nodes_is_healed_around() {
    let mut sim = formed(64, 3);
    for k in 0..5 {
        let id = sim.broadcast(k, 10).unwrap();
        sim.run_until(5_000, |s| s.all_delivered(&id)).expect("delivered before the crashes");
    }
    for i in [3, 11, 19, 27, 35, 43] {
        sim.kill(i);
    }
    sim.run_until(3_000, |_| false);
    assert!(sim.connected(), "the live nodes are still one graph");
    for from in [0usize, 9, 50, 63] {
        let id = sim.broadcast(from, 10).unwrap();
        sim.run_until(10_000, |s| s.all_delivered(&id)).expect("every live node receives every broadcast");
    }
}

#[test]
fn the_same_seed_gives_the_same_numbers() {
    let a = scale(OverlayKind::Hyparview, 48, 5, 5_000, 20_000);
    assert_eq!(a, scale(OverlayKind::Hyparview, 48, 5, 5_000, 20_000));
    assert_ne!(a.bytes_total, scale(OverlayKind::Hyparview, 48, 6, 5_000, 20_000).bytes_total);
}

#[test]
fn hyparview_sends_fewer_bytes_than_full_mesh_at_sixty_four_nodes_and_all_converge() {
    let runs: Vec<_> = [OverlayKind::FullMesh, OverlayKind::ClientServer, OverlayKind::Hyparview]
        .into_iter()
        .map(|o| scale(o, 64, 1, 5_000, 60_000))
        .collect();
    for r in &runs {
        assert!(r.convergence_ms.is_some(), "{r:?}");
    }
    assert!(runs[2].bytes_total < runs[0].bytes_total, "{runs:#?}");
}

#[test]
fn bad_overlay_settings_are_refused_with_the_key_and_the_allowed_values() {
    let e = OverlayKind::parse("mesh").unwrap_err();
    assert!(e.contains("full_mesh, client_server, hyparview"), "{e}");
    let e = HyParViewConfig { active_size: 0, ..HyParViewConfig::default() }.validate().unwrap_err();
    assert!(e.contains("active_size"), "{e}");
}
