//! The messages of the chat system. They are the same in one process and across nodes: every
//! one is a [`RemoteMessage`], so a ref to a chat, a client or discovery can travel inside a
//! message and be used wherever it lands (location transparency).
//!
//! Rules:
//! 1. A client resolves its chat by asking discovery (`Lookup`); the answer comes back as a
//!    message (`Found`), never as a blocking ask, so a client stays responsive to `Down`.
//! 2. Every lookup and join carries the client's attempt number; answers to an older attempt
//!    are ignored (they belong to a chat incarnation the client has given up on).
//! 3. A chat answers `Join` with `Joined` once the client is a member; from then on every
//!    `Post` it receives goes to every member as `Broadcast` (the poster included).
//! 4. A chat sends `Register` to discovery as the first thing it does and does not wait for the
//!    answer: a client can only learn of the chat from discovery, so no `Join` can reach a chat
//!    discovery has not recorded ("registered before it takes clients" holds by construction),
//!    and the supervisor restarting thousands of chats a second never waits on a round trip.

use serde::{Deserialize, Serialize};
use troupe::{ActorRef, ReplyTo};
use troupe_remote::{Nested, RemoteMessage};

/// The global name discovery is registered under.
pub(crate) const DISCOVERY: &str = "chat-discovery";
/// The name the orchestrator exports its coordinator under (distributed mode).
pub(crate) const COORDINATOR: &str = "chat-coordinator";

/// What discovery understands.
#[derive(Serialize, Deserialize)]
pub(crate) enum DiscoveryMsg {
    /// A (re)started chat registers its topic before it takes clients; discovery answers the
    /// chat with [`ChatMsg::Registered`] once recorded (rule 4).
    Register { topic: String, chat: ActorRef<ChatMsg> },
    /// A client asks for its chat (rule 1); answered with [`ClientMsg::Found`].
    Lookup { topic: String, attempt: u32, reply: ActorRef<ClientMsg> },
    /// Discovery's own timer (`lookup = "park"`): the lookups of holding number `holding` for
    /// `topic`, if still held, are answered "not registered".
    Expire { topic: String, holding: u64 },
    /// The injector asks for a chat (an ask: the injector waits for nothing else).
    Find { topic: String, reply: ReplyTo<FoundChat> },
}

/// The answer to [`DiscoveryMsg::Find`].
#[derive(Serialize, Deserialize)]
pub(crate) struct FoundChat(pub(crate) Option<ActorRef<ChatMsg>>);

/// What a chat understands.
#[derive(Serialize, Deserialize)]
pub(crate) enum ChatMsg {
    /// Discovery recorded this chat (rule 4).
    Registered,
    /// A client joins (rule 3).
    Join { client: ActorRef<ClientMsg>, attempt: u32 },
    /// A chat message from client `from`, broadcast to every member.
    Post { from: u64, text: String },
    /// The `error` fault: the chat crashes on it.
    Poison,
    /// The `cpu_intensive` / `ram_intensive` faults: compute or allocate inside the handler.
    Stress { cpu_ms: u64, ram_mb: u64 },
}

/// What a client understands.
#[derive(Clone, Serialize, Deserialize)]
pub(crate) enum ClientMsg {
    /// Discovery's answer to a lookup.
    Found { attempt: u32, chat: Option<ActorRef<ChatMsg>> },
    /// The chat took the client in.
    Joined { attempt: u32 },
    /// A chat message from a member.
    Broadcast { from: u64, text: String },
    /// Time to send a chat message (the client's own interval timer).
    Tick,
    /// Time to try again (the client's own retry timer).
    Retry { attempt: u32 },
}

/// What the orchestrator's coordinator understands (distributed mode).
#[derive(Serialize, Deserialize)]
pub(crate) enum CoordMsg {
    /// A node process finished its set-up; answered with the window start (microseconds since
    /// the Unix epoch) once every node has. `addr` is its node's address (cluster membership:
    /// the orchestrator hands the server nodes' addresses to the client groups).
    Ready { node: String, addr: String, reply: ReplyTo<i64> },
}

impl RemoteMessage for DiscoveryMsg {
    const TAG: &'static str = "troupe.lab.chat.discovery.v1";
    fn nested(n: &mut Nested) {
        n.add::<ChatMsg>();
        n.add::<ClientMsg>();
        n.add::<FoundChat>();
    }
}

impl RemoteMessage for FoundChat {
    const TAG: &'static str = "troupe.lab.chat.found.v1";
    fn nested(n: &mut Nested) {
        n.add::<ChatMsg>();
    }
}

impl RemoteMessage for ChatMsg {
    const TAG: &'static str = "troupe.lab.chat.chat.v1";
    fn nested(n: &mut Nested) {
        n.add::<ClientMsg>();
    }
}

impl RemoteMessage for ClientMsg {
    const TAG: &'static str = "troupe.lab.chat.client.v1";
    fn nested(n: &mut Nested) {
        n.add::<ChatMsg>();
    }
}

impl RemoteMessage for CoordMsg {
    const TAG: &'static str = "troupe.lab.chat.coordinator.v1";
    fn nested(n: &mut Nested) {
        n.add::<i64>();
    }
}
