//! User-defined overlays on in-process nodes on loopback: a toy [`PeerService`] with a routing
//! table taken from its section (neighbours: `peers`; anything else through the first
//! contact, if any) is selected by name through an [`OverlayRegistry`]; a send with no route
//! fails with the typed error at its origin and is counted, logged and published as an event
//! on a node in between; an unknown kind or a factory's refusal stops the start. Rule numbers
//! are those of `overlay/live/mod.rs` (L), `service.rs` (S), `registry.rs` (G) and
//! `driver/mod.rs` (D).

use std::collections::BTreeSet;
use std::time::Duration;

use tokio::sync::broadcast;
use troupe_cluster::overlay::live::{
    addr_of, Outbox, Overlay, OverlayConfig, OverlayEvent, OverlayRegistry, PeerService, ServiceContext,
};
use troupe_cluster::{Error, ErrorKind};
use troupe_remote::{Node, NodeConfig};

const LONG: Duration = Duration::from_secs(30);

/// Neighbours: its `peers`; a message for anyone else goes to its gateway (first contact).
struct Table {
    peers: BTreeSet<String>,
    gateway: Option<String>,
}

impl PeerService for Table {
    fn join(&mut self, seeds: &[String], _out: &mut Outbox) {
        self.gateway = seeds.first().map(|s| addr_of(s).to_owned());
    }
    fn neighbours(&self) -> BTreeSet<String> {
        self.peers.clone()
    }
    fn next_hop(&self, to: &str) -> Option<String> {
        if self.peers.contains(to) {
            Some(to.to_owned())
        } else {
            self.gateway.clone()
        }
    }
}

fn table(ctx: &ServiceContext<'_>) -> Result<Box<dyn PeerService>, Error> {
    let peers = ctx.config.peers.iter().map(|p| addr_of(p).to_owned()).collect();
    Ok(Box::new(Table { peers, gateway: None }))
}

fn registry() -> OverlayRegistry {
    let mut r = OverlayRegistry::new();
    r.register("table", table).unwrap();
    r.register("refuses", |ctx: &ServiceContext<'_>| {
        Err(ErrorKind::Config(format!("[overlay] the refusing overlay will not run on {}", ctx.name)).into())
    })
    .unwrap();
    r
}

async fn node(name: &str) -> Node {
    Node::start(NodeConfig::new(name, "overlay-service-test")).await.unwrap()
}

fn section(text: &str, overlays: &OverlayRegistry) -> OverlayConfig {
    let t: toml::Table = toml::from_str(text).unwrap();
    OverlayConfig::from_table_with(&t, overlays).unwrap()
}

/// Waits (bounded) for the first event `pred` accepts.
async fn wait_event(rx: &mut broadcast::Receiver<OverlayEvent>, pred: impl Fn(&OverlayEvent) -> bool) -> OverlayEvent {
    tokio::time::timeout(LONG, async {
        loop {
            match rx.recv().await {
                Ok(ev) if pred(&ev) => return ev,
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(broadcast::error::RecvError::Closed) => panic!("the overlay stopped"),
            }
        }
    })
    .await
    .expect("the event within the limit")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rule_l5_no_route_fails_the_send_at_its_origin_and_is_counted_and_published_in_between() {
    let r = registry();
    let (a, b) = (node("a").await, node("b").await);
    let c = "127.0.0.1:9"; // in nobody's table
                           // a: neighbour b, everything else through b; b: neighbour a, no gateway.
    let cfg_a = section(&format!("kind = \"table\"\npeers = [\"b@{0}\"]\ncontacts = [\"b@{0}\"]", b.addr()), &r);
    let cfg_b = section(&format!("kind = \"table\"\npeers = [\"a@{}\"]", a.addr()), &r);
    let oa = Overlay::start_with(&a, cfg_a, &r).await.unwrap();
    let ob = Overlay::start_with(&b, cfg_b, &r).await.unwrap();
    assert_eq!(oa.kind_name(), "table");
    assert_eq!(oa.status().await.unwrap().kind, "table");
    // S rule 4: the service's neighbours are the overlay's.
    assert_eq!(oa.neighbours().await.unwrap(), vec![b.addr()]);
    let mut inbox_b = ob.register("inbox");
    let mut events_b = ob.events();

    // A routed message arrives (one hop to a neighbour).
    oa.send(&format!("b@{}", b.addr()), "inbox", b"hi b".to_vec()).unwrap();
    let d = tokio::time::timeout(LONG, inbox_b.recv()).await.expect("delivered in time").expect("open");
    assert_eq!((d.origin.as_str(), d.bytes.as_slice(), d.hops), (a.addr().as_str(), &b"hi b"[..], 1));

    // At the origin: b knows no path to c, so the send fails with the typed error, counted.
    let e = ob.send(c, "inbox", b"lost?".to_vec()).unwrap_err();
    assert_eq!(e.kind(), &ErrorKind::NoRoute { to: c.into(), overlay: "table".into() });
    assert!(e.to_string().contains("no route to 127.0.0.1:9 in the \"table\" overlay"), "{e}");
    assert_eq!(ob.status().await.unwrap().unroutable, 1);

    // In between: a has a route (its gateway b), b has none: counted there and published.
    oa.send(c, "inbox", b"via b".to_vec()).unwrap();
    let ev = wait_event(&mut events_b, |e| matches!(e, OverlayEvent::Unroutable { .. })).await;
    assert_eq!(ev, OverlayEvent::Unroutable { to: c.into(), origin: a.addr() });
    assert_eq!(ob.status().await.unwrap().unroutable, 2);
    assert_eq!(oa.status().await.unwrap().unroutable, 0, "a had a route: its send was no failure");
    oa.stop_and_wait(LONG).await;
    ob.stop_and_wait(LONG).await;
}

#[tokio::test]
async fn rule_g1_an_unknown_kind_is_refused_at_start_and_a_factory_can_refuse_the_start() {
    let r = registry();
    let n = node("n").await;
    let cfg = OverlayConfig { kind: "tabel".into(), ..OverlayConfig::default() };
    let e = Overlay::start_with(&n, cfg.clone(), &r).await.err().expect("unknown kind refused").to_string();
    assert!(
        e.contains("[overlay] kind = \"tabel\" does not exist")
            && e.contains("built in: full_mesh, static, client_server, hyparview, amqp")
            && e.contains("registered: refuses, table"),
        "{e}"
    );
    let e = Overlay::start(&n, OverlayConfig { kind: "table".into(), ..cfg }).await.err().expect("not built in");
    assert!(e.to_string().contains("registered: none"), "{e}");
    let cfg = section("kind = \"refuses\"", &r);
    let e = Overlay::start_with(&n, cfg, &r).await.err().expect("the factory refused");
    assert!(e.to_string().contains("the refusing overlay will not run on n"), "{e}");
}

#[tokio::test]
async fn built_in_kinds_start_through_the_same_registry() {
    let r = registry();
    let n = node("solo").await;
    let o = Overlay::start_with(&n, section("kind = \"static\"", &r), &r).await.unwrap();
    assert_eq!(o.kind_name(), "static");
    assert_eq!(o.status().await.unwrap().kind, "static");
    // D rule 13: a static node with no link has no route for a unicast: counted at its origin.
    let mut events = o.events();
    o.send("127.0.0.1:9", "inbox", b"x".to_vec()).unwrap();
    let ev = wait_event(&mut events, |e| matches!(e, OverlayEvent::Unroutable { .. })).await;
    assert_eq!(ev, OverlayEvent::Unroutable { to: "127.0.0.1:9".into(), origin: n.addr() });
    assert_eq!(o.status().await.unwrap().unroutable, 1);
}
