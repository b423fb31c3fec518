//! Routed connections (`node/relay.rs`): with a router, a node reaches a node it holds no TCP
//! connection to through a neighbour; typed asks, monitors and links work end to end; losing
//! the destination or the relay fires `NoConnection`; no path is a typed error; TLS runs end
//! to end through the relay; the session back takes the path the peer took.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{cfg, wait_event, watch};
use troupe::ExitReason;
use troupe_remote::services::Echo;
use troupe_remote::{Blob, ErrorKind, Node, NodeConfig, NodeEvent, Route, Router};

const T: Duration = Duration::from_secs(10);

/// Everything through `hop`, but `hop` itself; nothing to `none`.
struct Through {
    hop: String,
    none: Option<String>,
}

impl Router for Through {
    fn route(&self, to: &str) -> Route {
        if self.none.as_deref() == Some(to) {
            Route::None
        } else if to == self.hop {
            Route::Direct
        } else {
            Route::Via(self.hop.clone())
        }
    }
}

fn through(hop: &Node) -> Option<Arc<dyn Router>> {
    Some(Arc::new(Through { hop: hop.addr(), none: None }))
}

async fn ask(node: &Node, addr: &str, text: &str) -> Result<Vec<u8>, String> {
    let echo = node.lookup::<Echo>(addr, "echo").await.map_err(|e| e.to_string())?;
    echo.ask(|r| Echo(Blob(text.as_bytes().to_vec()), r), T).await.map(|b| b.0).map_err(|e| e.to_string())
}

/// a - b - c in a line: a and c route through b.
async fn line(a_cfg: NodeConfig, b_cfg: NodeConfig, c_cfg: NodeConfig) -> (Node, Node, Node) {
    let b = Node::start(b_cfg).await.unwrap();
    let a = Node::start(a_cfg).await.unwrap();
    let c = Node::start(c_cfg).await.unwrap();
    troupe_remote::services::start(&c, &["echo".to_owned()]).unwrap();
    troupe_remote::services::start(&a, &["echo".to_owned()]).unwrap();
    a.set_router(through(&b));
    c.set_router(through(&b));
    // The relay knows both ends (`relay.rs` rule 7: it passes tunnels on to known nodes only).
    b.connect(&a.addr()).await.unwrap();
    b.connect(&c.addr()).await.unwrap();
    (a, b, c)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn asks_cross_a_relay_both_ways_and_no_tcp_joins_the_ends() {
    let (a, b, c) = line(cfg("a"), cfg("b"), cfg("c")).await;
    assert_eq!(ask(&a, &c.addr(), "to c").await.unwrap(), b"to c");
    assert_eq!(ask(&c, &a.addr(), "to a").await.unwrap(), b"to a");
    let a_sees_c = a.peers().into_iter().find(|p| p.addr == c.addr()).expect("a has a session with c");
    assert_eq!(a_sees_c.via, Some(b.addr()), "a's connections to c go through b");
    let c_sees_a = c.peers().into_iter().find(|p| p.addr == a.addr()).expect("c has a session with a");
    assert_eq!(c_sees_a.via, Some(b.addr()));
    // Every connection c accepted from a came through b: b relayed, and a opened tunnels.
    assert!(a.stats().tunnels_opened >= 1);
    assert!(b.stats().tunnel_chunks_relayed > 0, "b carried the bytes");
    assert!(a.tunnels_through(&b.addr()) >= 1, "a's session with b carries the tunnels");
    for n in [a, b, c] {
        n.shutdown();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_session_back_goes_through_the_neighbour_the_peer_came_through() {
    // c has no router at all (an overlay whose link states have not reached it yet): its
    // session back to a still takes the path a took, through b (relay.rs rule 6).
    let b = Node::start(cfg("b")).await.unwrap();
    let a = Node::start(cfg("a")).await.unwrap();
    let c = Node::start(cfg("c")).await.unwrap();
    troupe_remote::services::start(&c, &["echo".to_owned()]).unwrap();
    a.set_router(through(&b));
    b.connect(&a.addr()).await.unwrap();
    b.connect(&c.addr()).await.unwrap();
    assert_eq!(ask(&a, &c.addr(), "to c").await.unwrap(), b"to c");
    let c_sees_a = c.peers().into_iter().find(|p| p.addr == a.addr()).expect("c has a session with a");
    assert_eq!(c_sees_a.via, Some(b.addr()), "c answers a through b, not over TCP");
    for n in [a, b, c] {
        n.shutdown();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_destination_or_the_relay_going_fires_noconnection_at_the_far_end() {
    // The destination goes.
    let (a, b, c) = line(cfg("a"), cfg("b"), cfg("c")).await;
    let echo = a.lookup::<Echo>(&c.addr(), "echo").await.unwrap();
    let mut mon = watch(echo.any());
    let _ = echo.ask(|r| Echo(Blob(vec![]), r), T).await.unwrap();
    let mut events = a.subscribe();
    let gone = Instant::now();
    c.shutdown();
    assert_eq!(tokio::time::timeout(T, mon.recv()).await.unwrap().unwrap(), ExitReason::NoConnection);
    wait_event(&mut events, T, |e| matches!(e, NodeEvent::NodeDown { addr, .. } if *addr == c.addr())).await;
    eprintln!("destination gone -> Down through the relay: {:?}", gone.elapsed());
    a.shutdown();
    b.shutdown();

    // The relay goes: the routed session ends too (rule 3 of relay.rs).
    let (a, b, c) = line(cfg("a2"), cfg("b2"), cfg("c2")).await;
    let echo = a.lookup::<Echo>(&c.addr(), "echo").await.unwrap();
    let mut mon = watch(echo.any());
    let _ = echo.ask(|r| Echo(Blob(vec![]), r), T).await.unwrap();
    b.shutdown();
    assert_eq!(tokio::time::timeout(T, mon.recv()).await.unwrap().unwrap(), ExitReason::NoConnection);
    assert!(a.stats().tunnels_broken >= 1, "{:?}", a.stats());
    a.shutdown();
    c.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_route_is_a_typed_error_and_a_relay_without_one_refuses() {
    let b = Node::start(cfg("b")).await.unwrap();
    let a = Node::start(cfg("a")).await.unwrap();
    let c = Node::start(cfg("c")).await.unwrap();
    a.set_router(Some(Arc::new(Through { hop: b.addr(), none: Some(c.addr()) })));
    let e = a.lookup::<Echo>(&c.addr(), "echo").await.unwrap_err();
    assert!(matches!(e.kind, ErrorKind::NoRoute(_)), "{e}");
    // A relay that knows no route to the destination closes the tunnel back with why.
    let d = Node::start(cfg("d")).await.unwrap();
    d.set_router(through(&b));
    b.set_router(Some(Arc::new(Through { hop: a.addr(), none: Some(c.addr()) })));
    let mut b_events = b.subscribe();
    let e = d.lookup::<Echo>(&c.addr(), "echo").await.unwrap_err();
    assert!(!matches!(e.kind, ErrorKind::NoRoute(_)), "d itself had a route: {e}");
    let ev = wait_event(&mut b_events, T, |e| matches!(e, NodeEvent::TunnelRefused { .. })).await;
    let NodeEvent::TunnelRefused { to, origin, reason } = ev else { unreachable!() };
    assert_eq!((to, origin), (c.addr(), d.addr()));
    assert!(reason.contains("no route"), "{reason}");
    assert!(b.stats().tunnels_refused >= 1, "b counted it: {:?}", b.stats());
    for n in [a, b, c, d] {
        n.shutdown();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_runs_end_to_end_through_the_relay() {
    let dir = std::env::temp_dir().join(format!("troupe-routed-tls-{}", std::process::id()));
    let mut certs = troupe_remote::dev_certs(&dir, &["a", "b", "c"], &["127.0.0.1", "localhost"]).unwrap();
    let tls = |name: &str, t| NodeConfig { tls: Some(t), ..cfg(name) };
    let (c_tls, b_tls, a_tls) = (certs.pop().unwrap(), certs.pop().unwrap(), certs.pop().unwrap());
    let (a, b, c) = line(tls("a", a_tls), tls("b", b_tls), tls("c", c_tls)).await;
    assert_eq!(ask(&a, &c.addr(), "secret").await.unwrap(), b"secret");
    assert_eq!(a.peers().into_iter().find(|p| p.addr == c.addr()).unwrap().via, Some(b.addr()));
    assert_eq!(a.stats().tls_failures + c.stats().tls_failures, 0);
    for n in [a, b, c] {
        n.shutdown();
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// relay.rs rule 7: a relay passes a tunnel on only toward a node it knows, never to an address
/// that merely arrived in the request (no dial to a forged destination).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relay_refuses_a_destination_it_does_not_know() {
    let b = Node::start(cfg("b")).await.unwrap();
    let a = Node::start(cfg("a")).await.unwrap();
    // A listener nobody ever connected to: b has never heard of it.
    let stranger = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = stranger.local_addr().unwrap().to_string();
    a.set_router(through(&b));
    let mut b_events = b.subscribe();
    assert!(a.lookup::<Echo>(&addr, "echo").await.is_err(), "no session through b");
    let ev = wait_event(&mut b_events, T, |e| matches!(e, NodeEvent::TunnelRefused { .. })).await;
    let NodeEvent::TunnelRefused { to, reason, .. } = ev else { unreachable!() };
    assert_eq!(to, addr);
    assert!(reason.contains("not a node this one knows"), "{reason}");
    assert!(b.stats().tunnels_refused >= 1, "b counted it: {:?}", b.stats());
    assert_eq!(
        b.stats().peers_known,
        1,
        "the stranger never entered b's peer table (only a did), so b never dialled it"
    );
    drop(stranger);
    a.shutdown();
    b.shutdown();
}
