//! `troupe_cluster::metrics` (feature `metrics`) with three in-process members on loopback:
//! every series of the module docs is published with values that match the cluster, phi
//! appears for monitored members only, and a member that leaves is counted out and its phi
//! series set to 0. Run with `cargo test -p troupe-cluster --features metrics --test cluster_metrics`.

use troupe_test_support::recorder;

use recorder::TestRecorder;
use troupe_cluster::{metrics as cluster_metrics, Cluster, Downing, MemberStatus};
use troupe_remote::Node;

mod inproc;
use inproc::LONG;

async fn three() -> Vec<(Node, Cluster)> {
    inproc::members("cm", 3, Downing::default()).await
}

/// Waits (bounded by `LONG`) for a state the daemon reaches on its own timers.
async fn eventually(what: &str, cond: impl Fn() -> bool) {
    troupe_test_support::wait::until(LONG, cond, || what.to_owned()).await;
}

fn scrape_into(rec: &TestRecorder, c: &Cluster) {
    metrics::with_local_recorder(rec, || cluster_metrics::publish(c));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn publish_reports_the_members_the_detector_and_the_gossip() {
    let v = three().await;
    let (n1, c1) = (&v[0].0, &v[0].1);
    eventually("c1 monitors the other two", || c1.phi().len() == 2).await;
    eventually("c1 ran a gossip round and sent heartbeats", || {
        let s = c1.stats();
        s.gossip_rounds > 0 && s.heartbeats_out > 0
    })
    .await;

    let rec = TestRecorder::default();
    scrape_into(&rec, c1);
    for s in cluster_metrics::STATUSES {
        let want = if s == MemberStatus::Up { 3.0 } else { 0.0 };
        assert_eq!(rec.gauge("troupe_cluster_members", &[("status", s.as_str())]), Some(want), "{s:?}");
    }
    assert_eq!(rec.gauge("troupe_cluster_unreachable", &[]), Some(0.0));
    assert_eq!(rec.gauge("troupe_cluster_self_up", &[]), Some(1.0));
    assert!(c1.is_up());
    assert_eq!(rec.gauge("troupe_cluster_converged", &[]), Some(1.0));
    assert!(rec.counter("troupe_cluster_gossip_rounds_total", &[]).unwrap() > 0);
    assert!(rec.counter("troupe_cluster_gossip_messages_total", &[("direction", "out")]).unwrap() > 0);
    assert!(rec.counter("troupe_cluster_gossip_messages_total", &[("direction", "in")]).unwrap() > 0);
    assert!(rec.counter("troupe_cluster_heartbeats_sent_total", &[]).unwrap() > 0);
    assert_eq!(rec.counter("troupe_cluster_refused_total", &[]), Some(0));
    assert!(rec.counter("troupe_cluster_join_retries_total", &[]).is_some());
    // Exactly one leader among the three, each in its own view.
    let leaders: f64 = v
        .iter()
        .map(|(_, c)| {
            let r = TestRecorder::default();
            scrape_into(&r, c);
            r.gauge("troupe_cluster_is_leader", &[]).unwrap()
        })
        .sum();
    assert_eq!(leaders, 1.0);
    // phi: one series per monitored member, labelled by its name and address, healthy now.
    let phis = rec.series_of("troupe_cluster_phi");
    assert_eq!(phis.len(), 2, "{phis:?}");
    for (addr, name, _) in c1.phi() {
        assert!(name.starts_with("cm") && name != n1.name(), "{name}");
        let phi = rec.gauge("troupe_cluster_phi", &[("member", &name), ("addr", &addr)]).unwrap();
        assert!(phi.is_finite() && (0.0..c1.config().phi_threshold).contains(&phi), "{name}: {phi}");
    }

    // The third member leaves: counted out, and c1's phi series of it (rule 3) goes to 0.
    let (addr3, name3) = (v[2].0.addr(), v[2].0.name().to_owned());
    v[2].1.leave_and_wait(LONG).await.unwrap();
    let r3 = TestRecorder::default();
    scrape_into(&r3, &v[2].1);
    assert_eq!(r3.gauge("troupe_cluster_self_up", &[]), Some(0.0), "a member that left is not up");
    c1.wait_status(|s| s.count(MemberStatus::Up) == 2 && s.members.len() == 2, LONG).await.unwrap();
    eventually("c1 stops monitoring the member that left", || c1.phi().iter().all(|(a, _, _)| *a != addr3)).await;
    scrape_into(&rec, c1);
    assert_eq!(rec.gauge("troupe_cluster_members", &[("status", "up")]), Some(2.0));
    assert_eq!(rec.gauge("troupe_cluster_phi", &[("member", &name3), ("addr", &addr3)]), Some(0.0));
    for (n, _) in &v {
        n.shutdown();
    }
}

#[test]
fn describe_gives_every_series_a_help_text() {
    let rec = TestRecorder::default();
    metrics::with_local_recorder(&rec, cluster_metrics::describe);
    for name in [
        "troupe_cluster_members",
        "troupe_cluster_unreachable",
        "troupe_cluster_self_up",
        "troupe_cluster_is_leader",
        "troupe_cluster_converged",
        "troupe_cluster_gossip_rounds_total",
        "troupe_cluster_gossip_messages_total",
        "troupe_cluster_heartbeats_sent_total",
        "troupe_cluster_refused_total",
        "troupe_cluster_join_retries_total",
        "troupe_cluster_phi",
    ] {
        assert!(rec.described().iter().any(|d| d == name), "{name} has no help text");
    }
}
