//! The replicator's messages between members ([`CrdtMsg`], the message type of the
//! `troupe.crdt` actor every replicating member exports). Payloads travel as bytes so that a
//! receiver decodes them with the key's own type, and can refuse what does not decode
//! (rule 7) instead of failing the whole frame.

use serde::{Deserialize, Serialize};
use troupe::ReplyTo;
use troupe_remote::{Nested, RemoteMessage};

/// The export name of every member's replicator.
pub const REPLICATOR_ACTOR: &str = "troupe.crdt";

/// Node-to-node replication messages.
#[derive(Serialize, Deserialize)]
pub enum CrdtMsg {
    /// Deltas of one key made on `from`, with sequence numbers `first..=last` (rules 2-4).
    Deltas {
        /// The sender's address.
        from: String,
        /// The key.
        key: String,
        /// `tag_hash` of the key's CRDT kind.
        kind: u64,
        /// The first sequence number covered.
        first: u64,
        /// The last sequence number covered.
        last: u64,
        /// Encoded deltas.
        items: Vec<Vec<u8>>,
        /// Where the acknowledgement goes.
        reply: ReplyTo<WireAck>,
    },
    /// A key's full state on `from`, which holds its own deltas up to `seq` (rules 4-5).
    State {
        /// The sender's address.
        from: String,
        /// The key.
        key: String,
        /// `tag_hash` of the key's CRDT kind.
        kind: u64,
        /// The sender's last delta sequence number of the key.
        seq: u64,
        /// The encoded state.
        bytes: Vec<u8>,
        /// Where the acknowledgement goes.
        reply: ReplyTo<WireAck>,
    },
    /// A read at `Majority`/`All`: the receiver answers with what it holds of `key`.
    Read {
        /// The key.
        key: String,
        /// Where the answer goes.
        reply: ReplyTo<ReadReply>,
    },
}

/// The answer to `Deltas` and `State`: `ok` is false when the payload was rejected (rule 7).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireAck {
    /// Whether the payload was merged (or already known).
    pub ok: bool,
}

/// The answer to `Read`: `(kind, is_delta, bytes)` items (one state, or what an untyped key
/// holds, rule 8); empty when the key is unknown there.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadReply {
    /// The items.
    pub items: Vec<(u64, bool, Vec<u8>)>,
}

impl RemoteMessage for WireAck {
    const TAG: &'static str = "troupe.crdt.ack.v1";
}

impl RemoteMessage for ReadReply {
    const TAG: &'static str = "troupe.crdt.read-reply.v1";
}

impl RemoteMessage for CrdtMsg {
    const TAG: &'static str = "troupe.crdt.v1";
    fn nested(n: &mut Nested) {
        n.add::<WireAck>();
        n.add::<ReadReply>();
    }
}
