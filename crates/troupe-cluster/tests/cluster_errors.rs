//! The cluster's errors (`error.rs` rules): a failure of the node layer keeps the node's error
//! as its source, down to the `io::Error` (rule 1). Also compile-time checks that the cluster's
//! handles, errors and futures are `Send`.

#![allow(dead_code)]

use std::error::Error as _;
use std::future::Future;
use std::time::Duration;

use troupe_cluster::{Cluster, ClusterConfig, Error, ErrorKind, ServiceKey};

#[test]
fn rule_1_a_status_request_to_a_dead_address_keeps_the_node_error_and_its_io_error() {
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().to_string();
    let e = troupe_cluster::cli::status_main(&free, "secret", Duration::from_secs(10)).unwrap_err();
    assert!(matches!(&e.kind, ErrorKind::Node(what) if what.contains(&free)), "{e:?}");
    assert!(e.to_string().contains("is it running"), "{e}");
    let node = e.source().expect("a source").downcast_ref::<troupe_remote::Error>().expect("the node's error");
    assert!(matches!(node.kind, troupe_remote::ErrorKind::Unreachable(_)), "{node:?}");
    let io = node.source().expect("the node error's source").downcast_ref::<std::io::Error>().expect("io");
    assert_eq!(io.kind(), std::io::ErrorKind::ConnectionRefused);
    let chain = troupe::error_chain(&e);
    assert!(chain.contains("is unreachable") && chain.ends_with(&io.to_string()), "{chain}");
}

#[test]
fn rule_1_a_node_error_converts_with_its_source_kept() {
    let io = std::io::Error::new(std::io::ErrorKind::AddrInUse, "taken");
    let node = troupe_remote::Error::with_source(troupe_remote::ErrorKind::Io("cannot listen".into()), io);
    let e = Error::from(node);
    assert!(matches!(e.kind, ErrorKind::Node(_)));
    assert!(e.source().unwrap().is::<troupe_remote::Error>());
    let actor: troupe::ActorError = e.into();
    assert!(actor.source().unwrap().is::<Error>());
    assert!(troupe::error_chain(&actor).ends_with("cannot listen: taken"), "{}", troupe::error_chain(&actor));
}

fn require_handle<T: Send + Sync + Clone + 'static>() {}
fn require_error<E: std::error::Error + Send + Sync + 'static>() {}
fn require_send_future<F: Future + Send>(_: &F) {}

#[test]
fn cluster_and_its_error_are_send_sync() {
    require_handle::<Cluster>();
    require_handle::<ServiceKey<troupe_remote::services::Echo>>();
    require_error::<Error>();
    require_handle::<ErrorKind>();
}

/// Never called: it only has to compile, which proves each future is `Send`.
async fn cluster_futures_are_send(node: troupe_remote::Node, c: Cluster) {
    require_send_future(&Cluster::start(&node, ClusterConfig::default()));
    require_send_future(&c.leave_and_wait(Duration::from_secs(1)));
    require_send_future(&c.down("127.0.0.1:1"));
    require_send_future(&c.wait_members(2, Duration::from_secs(1)));
}
