//! Overlays on real nodes: one application API ([`Overlay`]) whatever the overlay, chosen by
//! the `[overlay]` section ([`OverlayConfig`]): full mesh (the default), static,
//! client-server, HyParView membership with Plumtree broadcast, publish-subscribe through
//! an AMQP broker ([`amqp`]) (seed 004 §3), or a user-defined overlay: a [`PeerService`]
//! registered by name in an [`OverlayRegistry`] (`service.rs`, `registry.rs`). The
//! protocols are the state machines of `overlay/hyparview.rs` and `overlay/plumtree.rs`
//! (the simulator runs the same ones); `driver/mod.rs` drives them over a
//! `troupe_remote::Node`, `route.rs` says where a routed message goes next.
//!
//! Rules of the service:
//! 1. Application code is the same for every overlay: [`Overlay::send`] to an actor name on a
//!    node, [`Overlay::broadcast`] on a topic, [`Overlay::register`] and
//!    [`Overlay::subscribe`] to receive, [`Overlay::neighbours`] to look.
//! 2. A message is delivered straight when its destination is a neighbour and forwarded hop
//!    by hop otherwise (through a server for client-server, over the static links, over
//!    Plumtree's tree for HyParView); each node delivers it at most once.
//! 3. A node holds connections only to its neighbours (plus short-lived ones the protocols
//!    need, closed after a grace period; `driver/mod.rs` rule 4).
//! 4. Bad configuration is refused at start, naming the key and the allowed values.
//! 5. A message that cannot be routed is never dropped silently: at its origin the send
//!    fails with [`ErrorKind::NoRoute`] when the overlay knows no next hop (a user-defined
//!    overlay's [`PeerService::next_hop`] says `None`); wherever the routing finds no next
//!    hop later (on the driver's task, or on a node in between) it is counted
//!    ([`OverlayStatus::unroutable`]), logged, and published as [`OverlayEvent::Unroutable`].
//! 6. The runtime's own traffic rides the overlay too: on every overlay but full mesh and
//!    AMQP the overlay installs a router on its node (`links.rs`), so a typed
//!    `ActorRef::send`, an ask, a remote monitor or a link to an actor on a node that is not
//!    a neighbour goes through neighbours (`troupe_remote`'s routed connections), with the
//!    guarantees of one connection while its route holds: order per sender and receiver,
//!    `NoConnection` to monitors and links when the destination, or a node on the route,
//!    goes (at-most-once, as any lost connection; the next send takes the route known then).
//!
//! ```no_run
//! # async fn demo(node: troupe_remote::Node) -> Result<(), troupe_cluster::Error> {
//! use troupe_cluster::overlay::live::{Overlay, OverlayConfig};
//! let t: toml::Table = toml::from_str("kind = \"hyparview\"\ncontacts = [\"127.0.0.1:7001\"]").unwrap();
//! let overlay = Overlay::start(&node, OverlayConfig::from_table(&t)?).await?;
//! let mut news = overlay.subscribe("news");
//! overlay.broadcast("news", b"hello".to_vec())?;
//! let got = news.recv().await.expect("delivered here too");
//! assert_eq!(got.bytes, b"hello");
//! overlay.send("127.0.0.1:7003", "inbox", b"just for you".to_vec())?;
//! # Ok(()) }
//! ```

#[cfg(feature = "amqp")]
pub mod amqp;
#[cfg(feature = "cli")]
pub mod cli;
mod config;
pub mod counter;
mod driver;
pub mod links;
mod registry;
pub mod route;
mod service;
mod wire;

pub use config::{addr_of, LiveKind, OverlayConfig};
pub use registry::{OverlayFactory, OverlayRegistry};
pub use service::{Outbox, PeerService, ServiceContext};
pub use wire::{Body, Delivery, Envelope, OverlayEvent, OverlayStatus, OverlayWire, OVERLAY_ACTOR};

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Mutex, RwLock};

use serde::Serialize;
use tokio::sync::{broadcast, mpsc, oneshot};
use troupe::{Actor, Ctx};
use troupe_remote::Node;

use crate::error::{Error, ErrorKind};
use driver::{Driver, Input};
use registry::Resolved;

/// What the handles and the driver of one overlay share: its kind's name, a user-defined
/// overlay's service (rule 5: `send` asks it for a route), the `unroutable` counter.
pub(crate) struct Shared {
    pub(crate) name: String,
    pub(crate) service: Option<Mutex<Box<dyn PeerService>>>,
    pub(crate) unroutable: AtomicU64,
}

struct Inbox(mpsc::UnboundedSender<Input>);

impl Actor for Inbox {
    type Msg = OverlayWire;
    async fn handle(&mut self, msg: OverlayWire, _: &mut Ctx<Self>) {
        let _ = self.0.send(Input::Wire(msg));
    }
}

/// A running overlay on one node. Cheap to clone; [`Overlay::stop`] ends it.
#[derive(Clone)]
pub struct Overlay {
    tx: mpsc::UnboundedSender<Input>,
    events: broadcast::Sender<OverlayEvent>,
    kind: LiveKind,
    me: String,
    shared: Arc<Shared>,
}

impl Overlay {
    /// Validates `cfg`, exports this node's `troupe.overlay` actor and starts the overlay
    /// (dialling its kept links, joining through its contacts). Built-in kinds only:
    /// [`Overlay::start_with`] runs registered ones too.
    pub async fn start(node: &Node, cfg: OverlayConfig) -> Result<Overlay, Error> {
        Self::start_with(node, cfg, &OverlayRegistry::new()).await
    }

    /// [`Overlay::start`] with the kinds `overlays` knows: a registered kind's factory makes
    /// this node's [`PeerService`] (its error refuses the start), which then joins through
    /// the section's `contacts`.
    ///
    /// ```no_run
    /// # use std::collections::BTreeSet;
    /// # use troupe_cluster::overlay::live::{Outbox, PeerService};
    /// # struct Ring;
    /// # impl PeerService for Ring {
    /// #     fn join(&mut self, _: &[String], _: &mut Outbox) {}
    /// #     fn neighbours(&self) -> BTreeSet<String> { BTreeSet::new() }
    /// #     fn next_hop(&self, _: &str) -> Option<String> { None }
    /// # }
    /// # async fn demo(node: troupe_remote::Node) -> Result<(), troupe_cluster::Error> {
    /// use troupe_cluster::overlay::live::{Overlay, OverlayConfig, OverlayRegistry};
    /// let mut overlays = OverlayRegistry::new();
    /// overlays.register("ring", |_ctx| Ok(Box::new(Ring) as Box<dyn PeerService>))?;
    /// let t: toml::Table = toml::from_str("kind = \"ring\"\ncontacts = [\"n1@127.0.0.1:7001\"]").unwrap();
    /// let cfg = OverlayConfig::from_table_with(&t, &overlays)?;
    /// let overlay = Overlay::start_with(&node, cfg, &overlays).await?;
    /// assert_eq!(overlay.kind_name(), "ring");
    /// # Ok(()) }
    /// ```
    pub async fn start_with(node: &Node, cfg: OverlayConfig, overlays: &OverlayRegistry) -> Result<Overlay, Error> {
        cfg.validate_with(overlays)?;
        let me = node.addr();
        // The dispatch point: built-in and registered kinds resolve in one place.
        let (kind, service) = match overlays.resolve(&cfg.kind)? {
            Resolved::BuiltIn(k) => (k, None),
            Resolved::Registered(factory) => {
                let ctx = ServiceContext { me: &me, name: node.name(), config: &cfg };
                (LiveKind::Registered, Some(Mutex::new(factory(&ctx)?)))
            }
        };
        let shared = Arc::new(Shared { name: cfg.kind.clone(), service, unroutable: AtomicU64::new(0) });
        let (tx, rx) = mpsc::unbounded_channel();
        let events = broadcast::channel(1024).0;
        #[cfg(feature = "amqp")]
        if kind == LiveKind::Amqp {
            let link = amqp::connect(&cfg.amqp_url, &me).await?;
            tokio::spawn(amqp::run(node.clone(), link, rx));
            return Ok(Overlay { tx, events, kind, me, shared });
        }
        let inbox = troupe::spawn(Inbox(tx.clone()));
        node.export(OVERLAY_ACTOR, &inbox)?;
        // `links.rs`: the runtime's own traffic to non-neighbours goes through neighbours.
        let table = Arc::new(RwLock::new(links::LinkTable::new(&me, kind, cfg.routing)));
        if table.read().active() {
            node.set_router(Some(Arc::new(links::OverlayRouter { table: table.clone(), shared: shared.clone() })));
        }
        let driver = Driver::new(node, cfg, kind, events.clone(), tx.clone(), shared.clone(), table);
        tokio::spawn(driver.run(rx));
        Ok(Overlay { tx, events, kind, me, shared })
    }

    fn input(&self, i: Input) -> Result<(), Error> {
        self.tx.send(i).map_err(|_| Error::from(ErrorKind::Stopped))
    }

    /// The overlay's kind ([`LiveKind::Registered`] for a user-defined one).
    #[must_use]
    pub fn kind(&self) -> LiveKind {
        self.kind
    }

    /// The overlay's kind as `[overlay] kind` names it (`"full_mesh"`, a registered name, ...).
    #[must_use]
    pub fn kind_name(&self) -> &str {
        &self.shared.name
    }

    /// Sends `bytes` to the actor registered as `actor` on the node at `to` (`host:port` or
    /// `name@host:port`), straight or forwarded (rule 2). Fails with [`ErrorKind::NoRoute`]
    /// when the overlay knows no next hop toward `to` (rule 5), [`ErrorKind::Stopped`] after
    /// [`Overlay::stop`].
    ///
    /// ```no_run
    /// # fn demo(overlay: troupe_cluster::overlay::live::Overlay) {
    /// use troupe_cluster::ErrorKind;
    /// match overlay.send("127.0.0.1:9", "inbox", b"hi".to_vec()) {
    ///     Err(e) if matches!(e.kind(), ErrorKind::NoRoute { .. }) => eprintln!("{e}"),
    ///     other => other.expect("sent or refused with no route"),
    /// }
    /// # }
    /// ```
    pub fn send(&self, to: &str, actor: &str, bytes: Vec<u8>) -> Result<(), Error> {
        let to = addr_of(to);
        if let Some(service) = &self.shared.service {
            if to != self.me && service.lock().next_hop(to).is_none() {
                self.shared.unroutable.fetch_add(1, Ordering::Relaxed);
                tracing::debug!("overlay {:?}: no route to {to}; the send fails", self.shared.name);
                return Err(ErrorKind::NoRoute { to: to.to_owned(), overlay: self.shared.name.clone() }.into());
            }
        }
        self.input(Input::Send { to: to.to_owned(), actor: actor.to_owned(), bytes })
    }

    /// [`Overlay::send`] of a typed message, encoded as JSON.
    pub fn send_msg<T: Serialize>(&self, to: &str, actor: &str, msg: &T) -> Result<(), Error> {
        let bytes = serde_json::to_vec(msg).map_err(|e| Error::with_source(ErrorKind::Encode, e))?;
        self.send(to, actor, bytes)
    }

    /// Broadcasts `bytes` to every subscriber of `topic` on every node (this one included).
    pub fn broadcast(&self, topic: &str, bytes: Vec<u8>) -> Result<(), Error> {
        self.input(Input::Broadcast { topic: topic.to_owned(), bytes })
    }

    /// Receives the broadcasts on `topic` from the moment the overlay takes the request. On
    /// the AMQP overlay the broker routes the topic to this node only once it has bound it, a
    /// round trip later: a broadcast sent in between does not reach this subscriber. Use
    /// [`Overlay::subscribed`] to wait until the subscription is in force.
    #[must_use]
    pub fn subscribe(&self, topic: &str) -> mpsc::UnboundedReceiver<Delivery> {
        let (tx, rx) = mpsc::unbounded_channel();
        let _ = self.input(Input::Subscribe { topic: topic.to_owned(), tx, ack: None });
        rx
    }

    /// As [`Overlay::subscribe`], returning once the subscription is in force: every
    /// broadcast on `topic` sent after this returns reaches the receiver (on the AMQP overlay,
    /// once the broker confirmed the binding). Fails when the overlay has stopped, when the
    /// broker refused the binding (the error says why), or after 5 s without an answer.
    pub async fn subscribed(&self, topic: &str) -> Result<mpsc::UnboundedReceiver<Delivery>, Error> {
        let (tx, rx) = mpsc::unbounded_channel();
        let (ack, done) = oneshot::channel();
        self.input(Input::Subscribe { topic: topic.to_owned(), tx, ack: Some(ack) })?;
        match tokio::time::timeout(Duration::from_secs(5), done).await {
            Err(_) => Err(Error::from(ErrorKind::Timeout(format!("overlay subscription to {topic:?} (5 s)")))),
            Ok(Err(_)) => Err(Error::from(ErrorKind::Stopped)),
            Ok(Ok(Err(why))) => Err(Error::from(ErrorKind::Node(format!("overlay subscription to {topic:?}: {why}")))),
            Ok(Ok(Ok(()))) => Ok(rx),
        }
    }

    /// Receives the messages sent to `actor` on this node (a later registration of the same
    /// name replaces this one).
    #[must_use]
    pub fn register(&self, actor: &str) -> mpsc::UnboundedReceiver<Delivery> {
        let (tx, rx) = mpsc::unbounded_channel();
        let _ = self.input(Input::Register { actor: actor.to_owned(), tx });
        rx
    }

    /// A snapshot of this node's overlay.
    pub async fn status(&self) -> Result<OverlayStatus, Error> {
        let (tx, rx) = oneshot::channel();
        self.input(Input::Status(tx))?;
        tokio::time::timeout(Duration::from_secs(5), rx)
            .await
            .map_err(|_| Error::from(ErrorKind::Timeout("overlay status".into())))?
            .map_err(|_| Error::from(ErrorKind::Stopped))
    }

    /// This node's neighbours now (rule 2 of `driver/mod.rs`).
    pub async fn neighbours(&self) -> Result<Vec<String>, Error> {
        Ok(self.status().await?.neighbours)
    }

    /// Neighbour changes from now on.
    #[must_use]
    pub fn events(&self) -> broadcast::Receiver<OverlayEvent> {
        self.events.subscribe()
    }

    /// Stops the overlay (its actor is unexported; connections stay to the node layer). A
    /// HyParView node first tells its active neighbours it leaves.
    pub fn stop(&self) {
        let _ = self.tx.send(Input::Stop(None));
    }

    /// [`Overlay::stop`], waiting (at most `limit`) until the overlay has stopped and its
    /// goodbyes are handed to the node layer.
    pub async fn stop_and_wait(&self, limit: Duration) {
        let (tx, rx) = oneshot::channel();
        if self.tx.send(Input::Stop(Some(tx))).is_ok() {
            let _ = tokio::time::timeout(limit, rx).await;
        }
    }
}
