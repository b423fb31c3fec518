//! The cluster daemon under its supervisor (`daemon.rs` rules 5 and 6), with three in-process
//! members on loopback and a capturing subscriber: a panic in one member's daemon stops its
//! membership, not restarted; its subscribers get `Stopped` naming the failure, an ERROR event
//! says why, its status says stopped, a later command fails with `DaemonFailed`; the others see
//! it become unreachable and down it (keep-majority), and go on as two.

use troupe_test_support::capture;

use std::time::Duration;

use tracing::Level;
use troupe_cluster::{ClusterEvent, Downing, ErrorKind};

mod inproc;
use inproc::LONG;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_daemon_stops_the_membership_says_why_and_the_others_down_it() {
    let cap = capture::install();
    let v = inproc::members("cd", 3, Downing::KeepMajority).await;
    let (crashed, a1) = (v[2].0.addr(), v[0].0.addr());
    let mut mine = v[2].1.subscribe();
    let mut theirs = v[0].1.subscribe();

    v[2].1.debug_crash_daemon();

    // Its subscribers hear that the membership stopped, and why.
    let reason = tokio::time::timeout(LONG, async {
        loop {
            if let ClusterEvent::Stopped { reason } = mine.recv().await.expect("events keep coming") {
                break reason;
            }
        }
    })
    .await
    .expect("Stopped after the crash");
    assert!(reason.contains("the cluster daemon failed") && reason.contains("crash requested"), "{reason}");
    let logged = cap
        .wait_for("cluster daemon failed (cd3)", LONG, |e| {
            e.message().starts_with("cluster daemon failed") && e.get("node") == Some(&crashed)
        })
        .await;
    assert_eq!(logged.level, Level::ERROR);
    assert!(logged.get("reason").is_some_and(|r| r.contains("crash requested")), "{logged:?}");

    // The handle says so: stopped, not up, and commands fail naming the failure.
    let status = v[2].1.status();
    assert!(status.phase.starts_with("stopped: the cluster daemon failed"), "{}", status.phase);
    assert!(!v[2].1.is_up());
    let err = v[2].1.down(&a1).await.expect_err("the daemon is gone");
    assert!(matches!(&err.kind, ErrorKind::DaemonFailed(r) if r.contains("crash requested")), "{err:?}");
    // Not restarted: no new incarnation joins; a leave returns at once (already ended).
    v[2].1.leave_and_wait(Duration::from_secs(1)).await.expect("ended already");

    // The others see it go unreachable, then down it (keep-majority: two of three).
    tokio::time::timeout(LONG, async {
        let mut unreachable = false;
        loop {
            match theirs.recv().await.expect("events keep coming") {
                ClusterEvent::Unreachable { addr, .. } if addr == crashed => unreachable = true,
                ClusterEvent::MemberDowned { addr, .. } if addr == crashed => break,
                _ => {}
            }
        }
        assert!(unreachable, "unreachable before downed");
    })
    .await
    .expect("cd1 sees cd3 unreachable, then downed");
    for (_, c) in &v[..2] {
        c.wait_members(2, LONG).await.expect("the two others go on");
    }
    for (n, _) in v {
        n.shutdown_and_wait().await;
    }
}
