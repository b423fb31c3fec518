//! The cluster's structured `tracing` events with in-process members on loopback and a
//! capturing subscriber: a membership change names the member and both statuses; a
//! partition raises the observer's reachability change and the member-unreachable event;
//! with keep-majority, both sides log their downing decision naming the members.

use troupe_test_support::capture;

use tracing::Level;
use troupe_cluster::Downing;

mod inproc;
use inproc::LONG;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn membership_reachability_and_downing_events_carry_their_fields() {
    let cap = capture::install();
    let v = inproc::members("ce", 3, Downing::KeepMajority).await;
    let addr = |i: usize| v[i].0.addr();
    let (a1, a2, a3) = (addr(0), addr(1), addr(2));

    // The first member saw the second go from joining to up.
    let up = cap
        .wait_for("member status changed (ce2 up, seen by ce1)", LONG, |e| {
            e.message() == "member status changed"
                && e.get("node") == Some(&a1)
                && e.get("member") == Some(&a2)
                && e.get("to") == Some("up")
        })
        .await;
    assert_eq!(up.level, Level::INFO);
    assert!(up.target.starts_with("troupe_cluster"), "{}", up.target);
    assert_eq!(up.get("member_name"), Some("ce2"));
    assert_eq!(up.get("from"), Some("joining"));
    let leader =
        cap.wait_for("leader changed", LONG, |e| e.message() == "leader changed" && e.get("node") == Some(&a1)).await;
    assert_eq!(leader.get("from"), Some("none"));
    assert!([&a1, &a2, &a3].iter().any(|a| leader.get("to") == Some(a.as_str())), "{leader:?}");

    // Cut the third member off: each side's detector fires on the other.
    v[2].0.partition(&a1);
    v[2].0.partition(&a2);
    let verdict = cap
        .wait_for("reachability changed (someone judges ce3 unreachable)", LONG, |e| {
            e.message() == "reachability changed"
                && e.get("subject") == Some(&a3)
                && e.get("reachable") == Some("false")
        })
        .await;
    assert_eq!(verdict.level, Level::WARN);
    let observer = verdict.get("observer").unwrap().to_owned();
    assert!(observer == a1 || observer == a2, "{verdict:?}");
    let phi: f64 = verdict.get("phi").unwrap().parse().unwrap();
    let threshold: f64 = verdict.get("threshold").unwrap().parse().unwrap();
    assert!(phi >= threshold, "{verdict:?}");
    let unreachable = cap
        .wait_for("member unreachable (ce3, seen by the majority)", LONG, |e| {
            e.message() == "member unreachable" && e.get("member") == Some(&a3) && e.get("node") != Some(&a3)
        })
        .await;
    assert_eq!(unreachable.level, Level::WARN);
    assert_eq!(unreachable.get("member_name"), Some("ce3"));
    assert!(unreachable.get("observers").unwrap().split(',').any(|o| o == a1 || o == a2), "{unreachable:?}");

    // keep-majority: the two survive and their leader downs ce3; ce3, alone, downs itself.
    let kept = cap
        .wait_for("downing decision (surviving side)", LONG, |e| {
            e.message().starts_with("downing decision") && e.get("side") == Some("surviving")
        })
        .await;
    assert_eq!(kept.level, Level::WARN);
    assert_eq!(kept.get("strategy"), Some("keep-majority"));
    assert_eq!(kept.get("downed"), Some(a3.as_str()));
    let mut kept_side: Vec<&str> = kept.get("kept").unwrap().split(',').collect();
    kept_side.sort_unstable();
    let mut want = vec![a1.as_str(), a2.as_str()];
    want.sort_unstable();
    assert_eq!(kept_side, want);
    let lost = cap
        .wait_for("downing decision (losing side)", LONG, |e| {
            e.message().starts_with("downing decision") && e.get("side") == Some("losing")
        })
        .await;
    assert_eq!(lost.get("node"), Some(a3.as_str()));
    assert_eq!(lost.get("downed"), Some(a3.as_str()));
    for (n, _) in &v {
        n.shutdown();
    }
}
