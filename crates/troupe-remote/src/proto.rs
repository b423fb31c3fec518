//! The protocol's messages: the handshake bodies and the control messages the runtime sends
//! for itself (monitors, links, exits, kills, heartbeats, acks, name lookups, global names).
//! All are [`crate::codec`] values inside frames of the matching kind ([`crate::frame::kind`]).

use serde::{Deserialize, Serialize};
use troupe::ExitReason;

use crate::frame::Target;

/// The first four bytes of a hello.
pub const MAGIC: [u8; 4] = *b"TRP\x01";
/// The protocol version this build speaks.
pub const VERSION: u16 = 1;

/// Dialler -> acceptor: who I am, which channel lane this connection is, my challenge.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Hello {
    /// [`MAGIC`].
    pub magic: [u8; 4],
    /// The dialler's protocol version.
    pub version: u16,
    /// The dialler's node name.
    pub name: String,
    /// The dialler's listen address (where the acceptor dials back).
    pub listen: String,
    /// A random number fixed for the dialler's lifetime: a restarted node has another.
    pub incarnation: u64,
    /// The channel this connection carries.
    pub channel: String,
    /// Its lane within the channel (0..parallelism).
    pub lane: u16,
    /// The dialler's challenge.
    pub nonce: [u8; 32],
}

/// Acceptor -> dialler: who I am, my challenge, my answer to yours.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Challenge {
    /// The acceptor's protocol version.
    pub version: u16,
    /// The acceptor's node name.
    pub name: String,
    /// The acceptor's listen address.
    pub listen: String,
    /// The acceptor's incarnation.
    pub incarnation: u64,
    /// The acceptor's challenge.
    pub nonce: [u8; 32],
    /// HMAC proving the acceptor knows the secret.
    pub proof: [u8; 32],
}

/// Dialler -> acceptor: the answer to the acceptor's challenge.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Proof {
    /// HMAC proving the dialler knows the secret.
    pub proof: [u8; 32],
}

/// Either side: the handshake is refused.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Refuse {
    /// The refuser's protocol version.
    pub version: u16,
    /// Why.
    pub reason: String,
}

/// Why a data frame was refused by its receiver.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub enum RefuseReason {
    /// No such actor (never existed or dead).
    NoActor,
    /// The actor accepts another type.
    TypeMismatch {
        /// The actor's tag.
        found: String,
    },
    /// The payload did not decode as the actor's message type.
    Undecodable(String),
    /// The actor's mailbox refused it (full).
    Full,
    /// The message is, or carries, a type this node does not know (not registered, or
    /// another version): its tag hash (`types.rs` rule 3). Sent only to a peer whose `Welcome`
    /// advertised [`crate::handshake::Features::typed_refusals`]; others get `Undecodable`.
    UnknownType {
        /// The tag hash of the unknown type.
        tag: u64,
    },
}

/// One global-name entry: `name` is actor `id` on the node at `node`, accepting `tag`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct GlobalEntry {
    /// The name.
    pub name: String,
    /// The owning node's listen address.
    pub node: String,
    /// The actor's number there.
    pub id: u64,
    /// Its message type's tag hash.
    pub tag: u64,
    /// Its message type's tag.
    pub tag_name: String,
}

/// The runtime's own traffic, on the control channel.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub enum Control {
    /// I am alive (sent every heartbeat interval).
    Heartbeat,
    /// Acknowledged delivery: I received these sequence numbers on your lane.
    Ack {
        /// The channel of the lane.
        channel: String,
        /// The lane.
        lane: u16,
        /// The sequence numbers.
        seqs: Vec<u64>,
    },
    /// I refused your data frame to `target`; fail these pending replies.
    Refused {
        /// The target as you addressed it.
        target: Target,
        /// The tag you sent.
        tag: u64,
        /// Pending replies carried by the refused message.
        replies: Vec<u64>,
        /// Why.
        reason: RefuseReason,
    },
    /// Your watcher wants monitor `mid` on my actor `target`.
    Monitor {
        /// The monitor's number on your side.
        mid: u64,
        /// My actor.
        target: Target,
    },
    /// Remove monitor `mid`.
    Demonitor {
        /// The monitor's number on your side.
        mid: u64,
    },
    /// Monitor `mid` fired: my actor `actor` stopped.
    Down {
        /// The monitor's number on your side.
        mid: u64,
        /// My actor.
        actor: u64,
        /// Why it stopped.
        reason: ExitReason,
    },
    /// Your actor `from` links to my actor `to`.
    Link {
        /// Your actor.
        from: u64,
        /// My actor.
        to: Target,
    },
    /// Remove that link.
    Unlink {
        /// Your actor.
        from: u64,
        /// My actor.
        to: Target,
    },
    /// An actor of mine (`from`, as you address it), linked to your `to`, exited.
    Exit {
        /// My actor, as you address it.
        from: Target,
        /// Your actor, as I address it.
        to: Target,
        /// Why.
        reason: ExitReason,
    },
    /// Kill my actor brutally.
    Kill {
        /// Which.
        target: Target,
    },
    /// Stop my actor gracefully.
    Stop {
        /// Which.
        target: Target,
        /// With this reason.
        reason: ExitReason,
    },
    /// Which actor holds `name` on your node?
    Lookup {
        /// Request number.
        req: u64,
        /// The name.
        name: String,
    },
    /// The answer: `(id, tag hash, tag)` or nothing.
    LookupReply {
        /// Request number.
        req: u64,
        /// The actor, if any.
        found: Option<(u64, u64, String)>,
    },
    /// These global names are held on my node (a full set when `full`).
    Globals {
        /// The entries.
        entries: Vec<GlobalEntry>,
        /// True: replace everything you know of my names.
        full: bool,
    },
    /// This global name of mine is released.
    GlobalGone {
        /// The name.
        name: String,
    },
    /// Open routed connection `id` (numbered by its sender) to the node at `to`, for the
    /// connection of channel `channel`, lane `lane` that `origin` dials (`node/relay.rs`).
    TunnelOpen {
        /// The tunnel's number on this leg, chosen by its sender.
        id: u64,
        /// The node the connection is for.
        to: String,
        /// The node that dials it.
        origin: String,
        /// Legs travelled so far (1 on the first).
        hops: u8,
        /// The channel of the routed connection.
        channel: String,
        /// Its lane.
        lane: u16,
    },
    /// Bytes of routed connection `id` on this leg.
    TunnelData {
        /// The tunnel's number on this leg.
        id: u64,
        /// True when the sender is the side that opened the tunnel on this leg.
        from_opener: bool,
        /// The bytes (a byte string: the same bytes on the wire as a `Vec<u8>`, encoded and
        /// decoded in one copy rather than byte by byte).
        bytes: crate::Blob,
    },
    /// Routed connection `id` on this leg is closed.
    TunnelClose {
        /// The tunnel's number on this leg.
        id: u64,
        /// True when the sender is the side that opened the tunnel on this leg.
        from_opener: bool,
        /// Why.
        reason: String,
    },
    /// Monitors `mids` fired: my actor `actor` stopped (`node/downs.rs`). Sent only to a peer
    /// whose session advertised `Features::batched_downs`; last in this enum, so the variants
    /// before it keep their numbers on the wire.
    Downs {
        /// My actor.
        actor: u64,
        /// Why it stopped.
        reason: ExitReason,
        /// The monitors' numbers on your side.
        mids: Vec<u64>,
    },
}
