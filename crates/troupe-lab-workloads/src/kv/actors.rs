//! The Troupe kv program's messages and actors: the vnode replicas and the control actor of a
//! node process, and the reply sink of a client.
//!
//! Rules:
//! 1. A vnode replica serves `Put` (apply by version, answer `Ack`), `Get` (answer `Value` with
//!    what it holds) and `Echo` (answer with the payload), on the requests channel. With a
//!    `storage_delay_ms`, a `Put` or `Get` first waits that long (the simulated storage of seed
//!    004 §6.2.3), holding the replica: one storage access at a time per partition replica.
//! 2. Anti-entropy, on its own channel: `AeTick` makes a replica send its digest to a peer
//!    replica; a replica receiving `Digest` answers with `Repair` (the entries it holds newer)
//!    and `Pull` (the keys the digest holds newer); `Pull` is answered with `Repair`.
//! 3. Ring gossip, on its own channel: each node's control actor sends `RingGossip` (its ring
//!    epoch and member list) to the other nodes' control actors; receivers count it.
//! 4. A client's reply sink hands every reply to its client task.
//! 5. Recovery (a node process started again after a kill, docs/kv.md "Nemesis runs"): its
//!    replicas start empty and `recovering`; they answer `Put` and `Get` with `Refused` (a
//!    client counts that replica as failed, so a quorum never rests on a replica that lost its
//!    memory) and ask each peer replica for its whole store (`SyncReq`, on every `AeTick` until
//!    answered); a peer that is not recovering itself answers `SyncAll` with every entry; once
//!    every peer has answered, the replica serves. Without this a restarted replica would answer
//!    reads empty and break the quorum intersection (R + W > N) that rules out stale reads.
//! 6. Planted bugs (tests only, `TROUPE_KV_PLANTED_BUG`): `ack_without_store`, a replica acks
//!    a put without storing it, so the history checker must find lost acknowledged writes;
//!    `serve_while_recovering`, a restarted replica serves at once, empty (rule 5 switched off),
//!    which lets a quorum miss an acknowledged write after a kill.
//! 7. `Version` answers with the version a replica holds for a key, not the object, and
//!    without the simulated storage time: the settling phase's reads (`settle.rs`), which are
//!    the lab's bookkeeping after the window, not the clients' operations. (Reading whole
//!    objects there sent every 1 MiB object of every key from every replica each round, which
//!    one connection could not carry within a round's limit.)

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;
use troupe::{Actor, ActorRef, Ctx, ReplyTo};
use troupe_remote::{send_with, Nested, RemoteMessage, SendOptions, SharedBlob};

use super::quorum::{Store, Version};

/// The requests channel (`channels`).
pub(crate) const REQUESTS: &str = "requests";
/// The anti-entropy channel (`channels`).
pub(crate) const ANTI_ENTROPY: &str = "anti_entropy";
/// The ring-gossip channel (`channels`).
pub(crate) const GOSSIP: &str = "gossip";

/// The send options per traffic class: channels, or all on the default connection.
#[derive(Clone, Default)]
pub(crate) struct Lanes {
    pub(crate) channels: bool,
}

impl Lanes {
    pub(crate) fn requests(&self, key: u64) -> SendOptions {
        if self.channels {
            SendOptions::new().channel(REQUESTS).partition_key(key)
        } else {
            SendOptions::new()
        }
    }
    pub(crate) fn ae(&self) -> SendOptions {
        if self.channels {
            SendOptions::new().channel(ANTI_ENTROPY)
        } else {
            SendOptions::new()
        }
    }
    pub(crate) fn gossip(&self) -> SendOptions {
        if self.channels {
            SendOptions::new().channel(GOSSIP)
        } else {
            SendOptions::new()
        }
    }
}

/// What a vnode replica understands (rules 1, 2).
#[derive(Serialize, Deserialize)]
pub(crate) enum VnodeMsg {
    /// Store `value` at `version` if newer.
    Put { req: u64, key: String, version: Version, value: SharedBlob, reply: ActorRef<Reply> },
    /// Answer with the object held for `key`.
    Get { req: u64, key: String, reply: ActorRef<Reply> },
    /// Answer with the version held for `key`, without the object (rule 7).
    Version { req: u64, key: String, reply: ActorRef<Reply> },
    /// Answer with the payload.
    Echo { req: u64, payload: SharedBlob, reply: ActorRef<Reply> },
    /// Send this replica's digest to `peer`.
    AeTick { peer: ActorRef<VnodeMsg> },
    /// A peer's digest.
    Digest { entries: Vec<(String, Version)>, from: ActorRef<VnodeMsg> },
    /// Entries newer than the receiver's.
    Repair { entries: Vec<(String, Version, SharedBlob)> },
    /// Keys a peer wants.
    Pull { keys: Vec<String>, from: ActorRef<VnodeMsg> },
    /// A recovering replica of node `node` asks for every entry (rule 5).
    SyncReq { node: u64, from: ActorRef<VnodeMsg> },
    /// Every entry of the replica of node `node` (rule 5).
    SyncAll { node: u64, entries: Vec<(String, Version, SharedBlob)> },
}

/// A replica's answer to a client (rule 1).
#[derive(Serialize, Deserialize)]
pub(crate) enum Reply {
    /// A put was handled.
    Ack { req: u64 },
    /// What a replica holds for a get.
    Value { req: u64, obj: Option<(Version, SharedBlob)> },
    /// An echo.
    Echo { req: u64, payload: SharedBlob },
    /// The replica is recovering and did nothing (rule 5).
    Refused { req: u64 },
    /// The version a replica holds for a version read (rule 7).
    Version { req: u64, version: Option<Version> },
}

impl Reply {
    pub(crate) fn req(&self) -> u64 {
        match self {
            Reply::Ack { req }
            | Reply::Value { req, .. }
            | Reply::Echo { req, .. }
            | Reply::Refused { req }
            | Reply::Version { req, .. } => *req,
        }
    }
}

/// Ring gossip (rule 3).
#[derive(Serialize, Deserialize)]
pub(crate) struct RingGossip {
    pub(crate) from: u64,
    pub(crate) epoch: u64,
    pub(crate) members: Vec<String>,
}

/// A node's counts, answered to `Stats`.
#[derive(Clone, Default, Serialize, Deserialize)]
pub(crate) struct NodeStats {
    pub(crate) digests_sent: u64,
    pub(crate) repairs_applied: u64,
    pub(crate) gossip_received: u64,
    pub(crate) objects: u64,
}

/// What a node's control actor understands.
#[derive(Serialize, Deserialize)]
pub(crate) enum ControlMsg {
    /// Ring gossip from another node (rule 3).
    Gossip(RingGossip),
    /// The node's counts.
    Stats(ReplyTo<NodeStats>),
}

impl RemoteMessage for VnodeMsg {
    const TAG: &'static str = "troupe.lab.kv.vnode.v1";
    fn nested(n: &mut Nested) {
        n.add::<Reply>();
    }
}
impl RemoteMessage for Reply {
    const TAG: &'static str = "troupe.lab.kv.reply.v1";
}
impl RemoteMessage for ControlMsg {
    const TAG: &'static str = "troupe.lab.kv.control.v1";
    fn nested(n: &mut Nested) {
        n.add::<NodeStats>();
    }
}
impl RemoteMessage for NodeStats {
    const TAG: &'static str = "troupe.lab.kv.stats.v1";
}

/// A node's shared counters.
#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) digests_sent: AtomicU64,
    pub(crate) repairs_applied: AtomicU64,
    pub(crate) gossip_received: AtomicU64,
    pub(crate) objects: AtomicU64,
}

impl Counters {
    pub(crate) fn snapshot(&self) -> NodeStats {
        NodeStats {
            digests_sent: self.digests_sent.load(Ordering::Acquire),
            repairs_applied: self.repairs_applied.load(Ordering::Acquire),
            gossip_received: self.gossip_received.load(Ordering::Acquire),
            objects: self.objects.load(Ordering::Acquire),
        }
    }
}

/// A vnode replica (rules 1, 2, 5, 6).
pub(crate) struct Vnode {
    pub(crate) store: Store,
    pub(crate) lanes: Lanes,
    pub(crate) counters: Arc<Counters>,
    /// This replica's node index.
    pub(crate) node: u64,
    /// While recovering: the peer nodes that have not answered `SyncAll` yet (rule 5).
    pub(crate) recovering: Option<std::collections::BTreeSet<u64>>,
    /// Rule 6.
    pub(crate) planted_bug: bool,
    /// Rule 1: the simulated storage time of a get or put (zero: none).
    pub(crate) storage_delay: std::time::Duration,
}

/// The planted bug's environment variable (rule 6; tests only).
pub(crate) const ENV_PLANTED_BUG: &str = "TROUPE_KV_PLANTED_BUG";

impl Vnode {
    fn put(&mut self, key: &str, version: Version, value: SharedBlob) -> bool {
        let before = self.store.len();
        let applied = self.store.put(key, version, value);
        if self.store.len() > before {
            self.counters.objects.fetch_add(1, Ordering::AcqRel);
        }
        applied
    }

    /// Rule 1: the simulated storage access, in the replica's turn.
    async fn storage(&self) {
        if !self.storage_delay.is_zero() {
            tokio::time::sleep(self.storage_delay).await;
        }
    }

    fn entries(&self, keys: &[String]) -> Vec<(String, Version, SharedBlob)> {
        keys.iter().filter_map(|k| self.store.get(k).map(|(v, b)| (k.clone(), *v, b.clone()))).collect()
    }
}

impl Actor for Vnode {
    type Msg = VnodeMsg;

    async fn handle(&mut self, msg: VnodeMsg, ctx: &mut Ctx<Self>) {
        match msg {
            VnodeMsg::Put { req, reply, .. }
            | VnodeMsg::Get { req, reply, .. }
            | VnodeMsg::Version { req, reply, .. }
                if self.recovering.is_some() =>
            {
                let _ = send_with(&reply, Reply::Refused { req }, &self.lanes.requests(req));
            }
            VnodeMsg::Put { req, key, version, value, reply } => {
                self.storage().await;
                if !self.planted_bug {
                    self.put(&key, version, value);
                }
                let _ = send_with(&reply, Reply::Ack { req }, &self.lanes.requests(req));
            }
            VnodeMsg::Get { req, key, reply } => {
                self.storage().await;
                let obj = self.store.get(&key).map(|(v, b)| (*v, b.clone())); // shared, not copied
                let _ = send_with(&reply, Reply::Value { req, obj }, &self.lanes.requests(req));
            }
            VnodeMsg::Version { req, key, reply } => {
                let version = self.store.get(&key).map(|(v, _)| *v);
                let _ = send_with(&reply, Reply::Version { req, version }, &self.lanes.requests(req));
            }
            VnodeMsg::Echo { req, payload, reply } => {
                let _ = send_with(&reply, Reply::Echo { req, payload }, &self.lanes.requests(req));
            }
            VnodeMsg::AeTick { peer } if self.recovering.is_some() => {
                let _ = send_with(&peer, VnodeMsg::SyncReq { node: self.node, from: ctx.myself() }, &self.lanes.ae());
            }
            VnodeMsg::SyncReq { from, .. } => {
                if self.recovering.is_none() {
                    let keys: Vec<String> = self.store.digest().into_iter().map(|(k, _)| k).collect();
                    let r = VnodeMsg::SyncAll { node: self.node, entries: self.entries(&keys) };
                    let _ = send_with(&from, r, &self.lanes.ae());
                }
            }
            VnodeMsg::SyncAll { node, entries } => {
                for (k, v, b) in entries {
                    if self.put(&k, v, b) {
                        self.counters.repairs_applied.fetch_add(1, Ordering::AcqRel);
                    }
                }
                if let Some(waiting) = self.recovering.as_mut() {
                    waiting.remove(&node);
                    if waiting.is_empty() {
                        self.recovering = None;
                    }
                }
            }
            VnodeMsg::AeTick { peer } => {
                self.counters.digests_sent.fetch_add(1, Ordering::AcqRel);
                let d = VnodeMsg::Digest { entries: self.store.digest(), from: ctx.myself() };
                let _ = send_with(&peer, d, &self.lanes.ae());
            }
            VnodeMsg::Digest { entries, from } => {
                let diff = self.store.compare(&entries);
                if !diff.push.is_empty() {
                    let r = VnodeMsg::Repair { entries: self.entries(&diff.push) };
                    let _ = send_with(&from, r, &self.lanes.ae());
                }
                if !diff.pull.is_empty() {
                    let p = VnodeMsg::Pull { keys: diff.pull, from: ctx.myself() };
                    let _ = send_with(&from, p, &self.lanes.ae());
                }
            }
            VnodeMsg::Repair { entries } => {
                for (k, v, b) in entries {
                    if self.put(&k, v, b) {
                        self.counters.repairs_applied.fetch_add(1, Ordering::AcqRel);
                    }
                }
            }
            VnodeMsg::Pull { keys, from } => {
                let r = VnodeMsg::Repair { entries: self.entries(&keys) };
                let _ = send_with(&from, r, &self.lanes.ae());
            }
        }
    }
}

/// A node's control actor (rule 3).
pub(crate) struct Control {
    pub(crate) counters: Arc<Counters>,
}

impl Actor for Control {
    type Msg = ControlMsg;

    async fn handle(&mut self, msg: ControlMsg, _: &mut Ctx<Self>) {
        match msg {
            ControlMsg::Gossip(_) => {
                self.counters.gossip_received.fetch_add(1, Ordering::AcqRel);
            }
            ControlMsg::Stats(r) => r.send(self.counters.snapshot()),
        }
    }
}

/// A client's reply sink (rule 4).
pub(crate) struct ReplySink {
    pub(crate) tx: mpsc::UnboundedSender<Reply>,
}

impl Actor for ReplySink {
    type Msg = Reply;

    async fn handle(&mut self, msg: Reply, _: &mut Ctx<Self>) {
        let _ = self.tx.send(msg);
    }
}
