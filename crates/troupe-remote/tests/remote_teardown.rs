//! Linear teardown (issue 36; `node/mod.rs` rule 8, `inbound.rs` rule 5): a peer that holds
//! hundreds of thousands of monitors or links on a node's actors costs that node CPU time linear
//! in their number when it leaves, and other peers are served meanwhile; a reused monitor
//! number grows nothing. Each test drives a real `troupe-node` process (or an in-process node
//! where it must look inside an actor) from an authenticated raw peer.
//!
//! `TROUPE_TEARDOWN_N=100000 [TROUPE_TEARDOWN_PEERS=2] TROUPE_NODE_BIN=/path/to/troupe-node
//! [TROUPE_NODE_OLD=1] cargo test -p troupe-remote --test remote_teardown teardown_cpu_report
//! -- --ignored --nocapture` prints the CPU time a build spends on its peers' monitors (how the
//! before/after figures of issue 36 were taken; `TROUPE_NODE_OLD` for a build before it).

mod common;

use std::time::{Duration, Instant};

use common::attacker::{cpu_time, Attacker};
use common::{cfg, NodeProc};
use troupe::{Actor, Ctx};
use troupe_remote::frame::Target;
use troupe_remote::proto::Control;
use troupe_remote::services::Counter;
use troupe_remote::Node;

const T: Duration = Duration::from_secs(60);

fn stat(s: &serde_json::Value, k: &str) -> u64 {
    s[k].as_u64().unwrap_or_else(|| panic!("no counter {k} in {s}"))
}

/// Polls the node's counters (bounded) until `done` holds; returns the last snapshot.
fn wait_stats(node: &mut NodeProc, done: impl Fn(&serde_json::Value) -> bool) -> serde_json::Value {
    wait_stats_for(node, T, done)
}

/// [`wait_stats`] with another limit.
fn wait_stats_for(
    node: &mut NodeProc,
    limit: Duration,
    done: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    let end = Instant::now() + limit;
    loop {
        let s = node.stats();
        if done(&s) || Instant::now() > end {
            return s;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn monitor(mid: u64) -> Control {
    Control::Monitor { mid, target: Target::Name("counter".into()) }
}

/// What a teardown cost the node and its legitimate peers.
struct Teardown {
    /// The node's CPU time from the attackers leaving until every relation was released.
    cpu: Duration,
    /// The slowest answer a legitimate peer got meanwhile.
    slowest_ask: Duration,
    /// Its asks that failed meanwhile.
    failed_asks: u64,
    /// How long a new legitimate peer's handshake took, started as the attackers left.
    handshake: Duration,
}

/// `peers` peers each with `n` monitors on `b`'s counter leave at once, while a legitimate peer
/// keeps asking the counter and another connects; the teardown may take up to `limit`.
async fn monitors_torn_down(b: &mut NodeProc, peers: usize, n: u64, limit: Duration) -> Teardown {
    let mut xs = Vec::new();
    let before = stat(&b.stats(), "frames_in");
    for i in 0..peers {
        let mut x = Attacker::connect(&b.addr, &format!("x{i}")).await;
        assert!(x.send_controls(n, monitor).await, "the node closed a session while it was within budget");
        xs.push(x);
    }
    let total = peers as u64 * n;
    // A build before issue 36 has no `monitors_in`: there, frames handled is the measure.
    let s =
        wait_stats(b, |s| stat(s, "frames_in") >= before + total && s.get("monitors_in").is_none_or(|m| m == total));
    assert!(stat(&s, "frames_in") >= before + total, "{s}");
    // A legitimate peer asks the counter throughout the teardown.
    let a = Node::start(cfg("a")).await.unwrap();
    let counter = a.lookup::<Counter>(&b.addr, "counter").await.unwrap();
    let (stop_tx, mut stop) = tokio::sync::oneshot::channel::<()>();
    let asker = tokio::spawn(async move {
        let (mut slowest, mut failed) = (Duration::ZERO, 0);
        loop {
            let t0 = Instant::now();
            failed += u64::from(counter.ask(Counter::Get, T).await.is_err());
            slowest = slowest.max(t0.elapsed());
            if stop.try_recv().is_ok() {
                return (slowest, failed);
            }
        }
    });
    let cpu0 = cpu_time(b.pid());
    for x in xs {
        x.leave();
    }
    let late = Node::start(cfg("late")).await.unwrap();
    let t0 = Instant::now();
    let connected = late.connect(&b.addr).await;
    let handshake = if connected.is_ok() { t0.elapsed() } else { Duration::MAX };
    let done = |s: &serde_json::Value| {
        stat(s, "nodes_down") >= peers as u64
            && s.get("monitors_in").is_none_or(|m| m == 0)
            && s.get("teardown_pending").is_none_or(|m| m == 0)
    };
    let s = wait_stats_for(b, limit, done);
    let cpu = cpu_time(b.pid()) - cpu0;
    assert!(done(&s), "{s}");
    stop_tx.send(()).unwrap();
    let (slowest_ask, failed_asks) = asker.await.unwrap();
    a.shutdown();
    late.shutdown();
    Teardown { cpu, slowest_ask, failed_asks, handshake }
}

/// Regression (issue 36): monitors on an actor sat in a list scanned on each removal, so two
/// peers that left with 300,000 monitors each on one actor cost their node ~90 s of both cores
/// (release build) and legitimate handshakes timed out. Now: linear, in batches that yield.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tearing_down_2_x_300_000_monitors_on_one_actor_is_linear_and_others_are_served() {
    let mut b = NodeProc::start("b", "services = [\"counter\"]\nmax_monitors_per_peer = 1000000");
    let t = monitors_torn_down(&mut b, 2, 300_000, T).await;
    println!(
        "2 x 300,000 monitors torn down: {:?} of CPU; slowest ask meanwhile {:?}; a handshake meanwhile {:?}",
        t.cpu, t.slowest_ask, t.handshake
    );
    assert_eq!(t.failed_asks, 0, "a legitimate ask failed during the teardown");
    // Generous for a debug build on a loaded 2-core machine (the list took minutes).
    assert!(t.cpu < Duration::from_secs(30), "teardown took {:?} of CPU", t.cpu);
    assert!(t.slowest_ask < Duration::from_secs(10), "a legitimate ask took {:?}", t.slowest_ask);
    assert!(t.handshake < Duration::from_secs(10), "a legitimate handshake took {:?}", t.handshake);
}

/// Regression (issue 36): adding a link scanned the actor's links for a duplicate, so 120,000
/// links from one peer cost 53.6 s of CPU on the way in; and they must go as fast.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adding_and_dropping_100_000_links_to_one_actor_is_linear() {
    let mut b = NodeProc::start("b", "services = [\"counter\"]\nmax_links_per_peer = 1000000");
    let n = 100_000;
    let mut x = Attacker::connect(&b.addr, "x").await;
    let cpu0 = cpu_time(b.pid());
    let link = |i: u64| Control::Link { from: i + 1, to: Target::Name("counter".into()) };
    assert!(x.send_controls(n, link).await);
    let s = wait_stats(&mut b, |s| stat(s, "links") == n);
    let cpu_in = cpu_time(b.pid()) - cpu0;
    assert_eq!(stat(&s, "links"), n, "{s}");
    let cpu0 = cpu_time(b.pid());
    x.leave();
    let s =
        wait_stats(&mut b, |s| stat(s, "nodes_down") >= 1 && stat(s, "links") == 0 && stat(s, "teardown_pending") == 0);
    let cpu_out = cpu_time(b.pid()) - cpu0;
    assert_eq!((stat(&s, "links"), stat(&s, "teardown_pending")), (0, 0), "{s}");
    println!("100,000 links: {cpu_in:?} of CPU to add, {cpu_out:?} to tear down");
    assert!(cpu_in < Duration::from_secs(20), "adding took {cpu_in:?} of CPU");
    assert!(cpu_out < Duration::from_secs(20), "teardown took {cpu_out:?} of CPU");
}

struct Sink;

impl Actor for Sink {
    type Msg = Counter;
    async fn handle(&mut self, _: Counter, _: &mut Ctx<Self>) {}
}

/// Regression (issue 36): a `Monitor` reusing a number overwrote the node's record but left the
/// old monitor on the actor: 10 M frames held 884 MB for good. `inbound.rs` rule 5.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rule_5_a_reused_monitor_number_replaces_the_monitor_on_the_actor() {
    let b = Node::start(cfg("b")).await.unwrap();
    let sink = troupe::spawn(Sink);
    b.export("counter", &sink).unwrap();
    let mut x = Attacker::connect(&b.addr(), "x").await;
    // 20,000 repeats of number 1, then number 2 once: when the node has both, it has handled
    // every frame before (one connection, handled in order).
    assert!(x.send_controls(20_001, |i| monitor(if i < 20_000 { 1 } else { 2 })).await);
    let end = Instant::now() + T;
    while (b.stats().monitors_in < 2 || sink.any().monitor_count() < 2) && Instant::now() < end {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(b.stats().monitors_in, 2);
    assert_eq!(sink.any().monitor_count(), 2, "each repeat left a monitor on the actor");
    // And leaving releases both.
    x.leave();
    let end = Instant::now() + T;
    while sink.any().monitor_count() > 0 && Instant::now() < end {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(sink.any().monitor_count(), 0);
    b.shutdown();
}

/// The figures of issue 36: CPU time a `troupe-node` (`TROUPE_NODE_BIN`, default this build)
/// spends tearing down `TROUPE_TEARDOWN_PEERS` (default 1) peers' `TROUPE_TEARDOWN_N` (default
/// 100,000) monitors each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement, not a check: run with --ignored --nocapture"]
async fn teardown_cpu_report() {
    let n = std::env::var("TROUPE_TEARDOWN_N").map_or(100_000, |v| v.parse().unwrap());
    let peers = std::env::var("TROUPE_TEARDOWN_PEERS").map_or(1, |v| v.parse().unwrap());
    let bin = std::env::var("TROUPE_NODE_BIN").unwrap_or_else(|_| "this build".into());
    // A build before issue 36 (`TROUPE_NODE_OLD=1`) has no budget, and refuses the key.
    let old = std::env::var_os("TROUPE_NODE_OLD").is_some();
    let budget = if old { "" } else { "\nmax_monitors_per_peer = 10000000" };
    let mut b = NodeProc::start("b", &format!("services = [\"counter\"]{budget}"));
    let limit = Duration::from_secs(std::env::var("TROUPE_TEARDOWN_WAIT_S").map_or(900, |v| v.parse().unwrap()));
    let t = monitors_torn_down(&mut b, peers, n, limit).await;
    println!(
        "{peers} x {n} monitors torn down: {:?} of CPU, slowest legitimate ask {:?} ({} failed), a handshake {:?} \
         [{bin}]",
        t.cpu, t.slowest_ask, t.failed_asks, t.handshake
    );
}

/// The figure of issue 36 for rule 5: peak and resident memory of a node (`TROUPE_NODE_BIN`)
/// after `TROUPE_REUSE_N` (default 2,000,000) `Monitor` frames that all reuse number 1.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement, not a check: run with --ignored --nocapture"]
async fn reused_monitor_number_rss_report() {
    let n = std::env::var("TROUPE_REUSE_N").map_or(2_000_000, |v| v.parse().unwrap());
    let bin = std::env::var("TROUPE_NODE_BIN").unwrap_or_else(|_| "this build".into());
    let mut b = NodeProc::start("b", "services = [\"counter\"]");
    let base = b.rss_kib();
    let mut x = Attacker::connect(&b.addr, "x").await;
    let before = stat(&b.stats(), "frames_in");
    assert!(x.send_controls(n, |_| monitor(1)).await);
    let s = wait_stats_for(&mut b, Duration::from_secs(600), |s| stat(s, "frames_in") >= before + n);
    assert!(stat(&s, "frames_in") >= before + n, "{s}");
    println!(
        "{n} Monitor frames reusing one number: RSS {base} -> {} KiB (peak {} KiB) [{bin}]",
        b.rss_kib(),
        b.peak_rss_kib()
    );
    x.leave();
}
