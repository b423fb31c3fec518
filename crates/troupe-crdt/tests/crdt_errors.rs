//! The replicator's errors (`error.rs` rules): a node-layer refusal keeps the node's error as
//! its source (rule 1). Also compile-time checks that the replicator's handles, errors and
//! futures are `Send`.

#![allow(dead_code)]

use std::error::Error as _;
use std::future::Future;
use std::time::Duration;

use troupe_cluster::{Cluster, ClusterConfig};
use troupe_crdt::{Consistency, Error, ErrorKind, GCounter, Key, Replicator, ReplicatorConfig};
use troupe_remote::{Node, NodeConfig};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rule_1_a_second_replicator_on_one_node_is_refused_with_the_node_error_as_source() {
    let node = Node::start(NodeConfig::new("solo", "crdt-errors")).await.unwrap();
    let cluster = Cluster::start(&node, ClusterConfig::default()).await.unwrap();
    let _first = Replicator::start(&cluster, ReplicatorConfig::default()).unwrap();
    let Err(e) = Replicator::start(&cluster, ReplicatorConfig::default()) else {
        panic!("a second replicator started")
    };
    assert!(matches!(&e.kind, ErrorKind::Node(what) if what.contains("cannot export")), "{e:?}");
    let cause = e.source().expect("a source").downcast_ref::<troupe_remote::Error>().expect("the node's error");
    assert!(matches!(cause.kind, troupe_remote::ErrorKind::NameTaken(_)), "{cause:?}");
    assert!(troupe::error_chain(&e).contains("already registered"), "{}", troupe::error_chain(&e));
    node.shutdown();
}

fn require_handle<T: Send + Sync + Clone + 'static>() {}
fn require_error<E: std::error::Error + Send + Sync + 'static>() {}
fn require_send_future<F: Future + Send>(_: &F) {}

#[test]
fn the_replicator_and_its_error_are_send_sync() {
    require_handle::<Replicator>();
    require_handle::<Key<GCounter>>();
    require_error::<Error>();
    require_handle::<ErrorKind>();
}

/// Never called: it only has to compile, which proves each future is `Send`.
async fn replicator_futures_are_send(r: Replicator, key: Key<GCounter>) {
    let t = Duration::from_secs(1);
    require_send_future(&r.get(&key, Consistency::Local, t));
    require_send_future(&r.update(&key, Consistency::Local, t, |c: &mut GCounter, me: &str| c.increment(me, 1)));
}
