//! What live overlay nodes send each other ([`OverlayWire`], the message type of the
//! `troupe.overlay` actor every overlay node exports), what the application receives
//! ([`Delivery`]), what it can observe ([`OverlayEvent`], [`OverlayStatus`]).

use serde::{Deserialize, Serialize};
use troupe_remote::RemoteMessage;

use crate::overlay::hyparview::HvMsg;
use crate::overlay::plumtree::{MsgId, PtMsg};

/// The export name of every overlay node's inbox actor.
pub const OVERLAY_ACTOR: &str = "troupe.overlay";

/// Application content travelling in the overlay.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Body {
    /// For the actor registered as `actor` on the node at `to`.
    Unicast {
        /// The destination node's address.
        to: String,
        /// The destination actor's registered name.
        actor: String,
        /// The payload.
        bytes: Vec<u8>,
    },
    /// For every subscriber of `topic` on every node.
    Broadcast {
        /// The topic.
        topic: String,
        /// The payload.
        bytes: Vec<u8>,
    },
}

/// A routed message outside Plumtree: an id (its origin and the origin's sequence number)
/// so that every node handles it once, and a hop count that bounds its travel.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Envelope {
    /// Its id.
    pub id: MsgId,
    /// Hops travelled so far.
    pub hops: u32,
    /// Its content.
    pub body: Body,
}

/// Node-to-node overlay messages; `from` is always the sender's address.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum OverlayWire {
    /// Full mesh: the members the sender knows; static and client-server: "I hold a link to
    /// you" (the receiver counts the sender as a neighbour).
    Hello {
        /// The sender.
        from: String,
        /// Members it knows (full mesh only).
        members: Vec<String>,
        /// Client-server: the sender is a server (a server learns the other servers so).
        server: bool,
    },
    /// HyParView membership.
    Hv {
        /// The sender.
        from: String,
        /// The message.
        msg: HvMsg,
    },
    /// Plumtree broadcast.
    Pt {
        /// The sender.
        from: String,
        /// The message.
        msg: PtMsg,
    },
    /// A routed envelope (every overlay but HyParView's broadcasts).
    Env {
        /// The sender (the previous hop).
        from: String,
        /// The envelope.
        env: Envelope,
    },
    /// A user-defined overlay's own message, from its [`super::PeerService`] on the sender to
    /// the one on the receiver (`service.rs` rule 3).
    Service {
        /// The sender.
        from: String,
        /// What the sender's service said.
        bytes: Vec<u8>,
    },
    /// Nodes' announced neighbours, for the routes of the runtime's own traffic (`links.rs`).
    Links {
        /// The sender.
        from: String,
        /// The states, and the sender's digest when it asks for what it lacks.
        batch: super::links::LinkBatch,
    },
}

impl RemoteMessage for OverlayWire {
    const TAG: &'static str = "troupe.overlay.v1";
}

/// A message the overlay delivers to the application.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Delivery {
    /// The address of the node that sent it.
    pub origin: String,
    /// The topic of a broadcast; `None` for a message sent to one actor.
    pub topic: Option<String>,
    /// The payload.
    pub bytes: Vec<u8>,
    /// Hops it travelled between nodes: 1 straight from its origin (or through the AMQP
    /// broker), more when forwarded; 0 when this node sent it, and for anything that came over
    /// Plumtree (HyParView), whose hops are not counted.
    pub hops: u32,
}

/// Changes of this node's overlay neighbours, and messages it could not route.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "ev", rename_all = "snake_case")]
#[non_exhaustive]
pub enum OverlayEvent {
    /// A node became a neighbour.
    NeighbourUp {
        /// Its address.
        addr: String,
    },
    /// A node stopped being a neighbour (it left, failed, or the overlay dropped it).
    NeighbourDown {
        /// Its address.
        addr: String,
    },
    /// A message for `to` found no next hop here and was not passed on (counted in
    /// [`OverlayStatus::unroutable`]; at its origin the send failed with
    /// [`crate::ErrorKind::NoRoute`] instead).
    Unroutable {
        /// The destination node.
        to: String,
        /// The node that sent the message.
        origin: String,
    },
}

/// A snapshot of one node's overlay.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OverlayStatus {
    /// The overlay's kind (`full_mesh`, ...).
    pub kind: String,
    /// This node's address.
    pub me: String,
    /// The nodes it may hold connections to (sorted).
    pub neighbours: Vec<String>,
    /// The nodes it holds connections to now, as the node layer reports (sorted).
    pub connected: Vec<String>,
    /// The nodes it has sessions with through neighbours, no connection of their own
    /// (`links.rs`; sorted).
    #[serde(default)]
    pub routed: Vec<String>,
    /// Nodes whose announced neighbours this node holds (`links.rs` rule 1; 0 on full mesh
    /// and AMQP, which announce nothing).
    #[serde(default)]
    pub link_states: u64,
    /// Other nodes a path over the announced links reaches now (`links.rs` rule 2).
    #[serde(default)]
    pub reachable: u64,
    /// HyParView's passive view (empty for other kinds).
    pub passive: Vec<String>,
    /// Plumtree's eager peers (empty for other kinds).
    pub eager: Vec<String>,
    /// Messages delivered to the application here.
    pub delivered: u64,
    /// Messages this node passed on for others.
    pub forwarded: u64,
    /// Connections to non-neighbours this node closed.
    pub swept: u64,
    /// Messages for another node that found no next hop here (sends refused with
    /// [`crate::ErrorKind::NoRoute`] included).
    #[serde(default)]
    pub unroutable: u64,
}
