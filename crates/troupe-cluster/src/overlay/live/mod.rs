//! Overlays on real nodes: one application API ([`Overlay`]) whatever the overlay, chosen by
//! the `[overlay]` section ([`OverlayConfig`]): full mesh (the default), static,
//! client-server, HyParView membership with Plumtree broadcast, or publish-subscribe through
//! an AMQP broker ([`amqp`]) (seed 004 §3). The
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
mod driver;
pub mod route;
mod wire;

pub use config::{addr_of, LiveKind, OverlayConfig};
pub use wire::{Body, Delivery, Envelope, OverlayEvent, OverlayStatus, OverlayWire, OVERLAY_ACTOR};

use std::time::Duration;

use serde::Serialize;
use tokio::sync::{broadcast, mpsc, oneshot};
use troupe::{Actor, Ctx};
use troupe_remote::Node;

use crate::error::{Error, ErrorKind};
use driver::{Driver, Input};

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
}

impl Overlay {
    /// Validates `cfg`, exports this node's `troupe.overlay` actor and starts the overlay
    /// (dialling its kept links, joining through its contacts).
    pub async fn start(node: &Node, cfg: OverlayConfig) -> Result<Overlay, Error> {
        cfg.validate()?;
        let kind = cfg.kind()?;
        let (tx, rx) = mpsc::unbounded_channel();
        let events = broadcast::channel(1024).0;
        #[cfg(feature = "amqp")]
        if kind == LiveKind::Amqp {
            let link = amqp::connect(&cfg.amqp_url, &node.addr()).await?;
            tokio::spawn(amqp::run(node.clone(), link, rx));
            return Ok(Overlay { tx, events, kind });
        }
        let inbox = troupe::spawn(Inbox(tx.clone()));
        node.export(OVERLAY_ACTOR, &inbox)?;
        let driver = Driver::new(node, cfg, kind, events.clone(), tx.clone());
        tokio::spawn(driver.run(rx));
        Ok(Overlay { tx, events, kind })
    }

    fn input(&self, i: Input) -> Result<(), Error> {
        self.tx.send(i).map_err(|_| Error::from(ErrorKind::Stopped))
    }

    /// The overlay's kind.
    #[must_use]
    pub fn kind(&self) -> LiveKind {
        self.kind
    }

    /// Sends `bytes` to the actor registered as `actor` on the node at `to` (`host:port` or
    /// `name@host:port`), straight or forwarded (rule 2).
    pub fn send(&self, to: &str, actor: &str, bytes: Vec<u8>) -> Result<(), Error> {
        self.input(Input::Send { to: addr_of(to).to_owned(), actor: actor.to_owned(), bytes })
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

    /// Receives the broadcasts on `topic` from now on.
    #[must_use]
    pub fn subscribe(&self, topic: &str) -> mpsc::UnboundedReceiver<Delivery> {
        let (tx, rx) = mpsc::unbounded_channel();
        let _ = self.input(Input::Subscribe { topic: topic.to_owned(), tx });
        rx
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
