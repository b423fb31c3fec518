//! A node's lifecycle (`node/lifecycle.rs` rules 1-4), in process on loopback: closing frees
//! the port, dropping the last handle closes the node, a `System` closes the node it was
//! started in, and a name exported for a supervised child follows it across a restart.

mod common;

use std::time::Duration;

use common::{cfg, wait_event};
use troupe::supervisor::{self, ChildSpec, Strategy, SupervisorSpec};
use troupe::{Actor, Ctx, Phase, System};
use troupe_remote::services::Counter;
use troupe_remote::{Node, NodeEvent};

const T: Duration = Duration::from_secs(10);

/// Binds `addr` again, retrying (bounded by `T`) while the closed node's listener is being
/// dropped; panics when the port stays taken.
async fn bind_again(addr: &str, retry: bool) {
    let end = tokio::time::Instant::now() + T;
    loop {
        match tokio::net::TcpListener::bind(addr).await {
            Ok(_) => return,
            Err(e) if retry && tokio::time::Instant::now() < end => {
                let _ = e;
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            Err(e) => panic!("the port of {addr} is still taken: {e}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rule_1_shutdown_and_wait_frees_the_port_and_peers_see_the_node_go_down() {
    let a = Node::start(cfg("a")).await.unwrap();
    let b = Node::start(cfg("b")).await.unwrap();
    let mut events = b.subscribe();
    b.connect(&a.addr()).await.unwrap();
    let addr = a.addr();
    a.shutdown_and_wait().await;
    bind_again(&addr, false).await;
    wait_event(&mut events, T, |e| matches!(e, NodeEvent::NodeDown { addr: x, .. } if *x == addr)).await;
    b.shutdown_and_wait().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rule_2_dropping_the_last_handle_closes_the_node() {
    let a = Node::start(cfg("a")).await.unwrap();
    let b = Node::start(cfg("b")).await.unwrap();
    let mut events = b.subscribe();
    b.connect(&a.addr()).await.unwrap();
    let addr = a.addr();
    let clone = a.clone();
    drop(a);
    assert!(b.is_connected(&addr), "a clone keeps the node open");
    drop(clone);
    wait_event(&mut events, T, |e| matches!(e, NodeEvent::NodeDown { addr: x, .. } if *x == addr)).await;
    bind_again(&addr, true).await;
    b.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rule_3_a_system_closes_the_node_started_in_it_last() {
    let sys = System::new();
    let a = Node::start_in(&sys, cfg("a")).await.unwrap();
    assert_eq!(sys.services(), ["a"]);
    let addr = a.addr();
    drop(a);
    let b = Node::start(cfg("b")).await.unwrap();
    b.connect(&addr).await.expect("the system keeps its node open");
    let report = sys.shutdown().await;
    assert_eq!(report.phase(Phase::CloseNode).unwrap().services, ["a"]);
    assert!(report.timed_out().is_empty(), "{report:?}");
    bind_again(&addr, false).await;
    b.shutdown();
}

/// Counts what it is sent; `Add(u64::MAX)` makes it crash.
struct Tally(u64);

impl Actor for Tally {
    type Msg = Counter;
    async fn handle(&mut self, msg: Counter, _: &mut Ctx<Self>) {
        match msg {
            Counter::Add(u64::MAX) => panic!("asked to crash"),
            Counter::Add(n) => self.0 += n,
            Counter::Get(r) => r.send(self.0),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rule_4_an_exported_child_is_reached_by_name_after_its_restart() {
    let spec = ChildSpec::worker("tally", || Tally(0));
    let child = spec.handle();
    let sup = supervisor::start(SupervisorSpec::new(Strategy::OneForOne).child(spec)).await.unwrap();
    let a = Node::start(cfg("a")).await.unwrap();
    let b = Node::start(cfg("b")).await.unwrap();
    a.export_child("tally", &child).unwrap();
    assert!(a.export("tally", &troupe::spawn(Tally(0))).is_err(), "the name is taken");
    let remote = b.remote_ref::<Counter>(&a.addr(), "tally");
    remote.send(Counter::Add(5)).unwrap();
    assert_eq!(remote.ask(Counter::Get, T).await.unwrap(), 5, "reaches the first incarnation");
    let first = child.current(T).await.unwrap();

    remote.send(Counter::Add(u64::MAX)).unwrap();
    let second = child.current_after(first.id(), T).await.expect("the supervisor restarts the child");
    assert_ne!(second.id(), first.id());
    // The same name, the same remote ref: the new incarnation answers, with its fresh state.
    assert_eq!(remote.ask(Counter::Get, T).await.unwrap(), 0, "reaches the new incarnation");
    remote.send(Counter::Add(2)).unwrap();
    assert_eq!(remote.ask(Counter::Get, T).await.unwrap(), 2, "sends in order, to the new incarnation");
    assert_eq!(second.ask(Counter::Get, T).await.unwrap(), 2, "which is the local one");
    // A lookup finds the current incarnation too.
    let found = b.lookup::<Counter>(&a.addr(), "tally").await.unwrap();
    assert_eq!(found.ask(Counter::Get, T).await.unwrap(), 2);

    assert!(a.unexport("tally"));
    assert!(b.lookup::<Counter>(&a.addr(), "tally").await.is_err(), "unexported");
    sup.stop().await;
    a.shutdown();
    b.shutdown();
}
